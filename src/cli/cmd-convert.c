// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit convert: rewrite a .dat file as another version or compression.
 *
 * What is copied, and how:
 *   - metadata sections 16..21: the uncompressed bodies, byte for byte
 *     (tk_dat_metadata -> tk_dat_writer_add_metadata), only those present;
 *   - options: every option in file order except those the writer makes
 *     itself (DONE, BUFFER, STRINGS, 16..22, BUFFER_TEXT), and except a v6
 *     CPUCOUNT that directly follows a BUFFER option: that one belongs to
 *     the instance, and the writer emits the instance's CPU count itself;
 *   - buffers: top first, CPU by CPU in increasing CPU id, pages streamed
 *     from the per-CPU reader into the writer. The reader hands out one page
 *     at a time; pages are gathered into ~1 MiB batches so that the writer
 *     sees few large writes (the compressor still cuts them into chunks of
 *     its own size). Memory stays bounded by one batch plus the reader's
 *     and writer's own chunk buffers, whatever the file size;
 *   - latency (text) buffers through tk_dat_latency_text.
 * A v6 file must know its instance names before any data, so they are
 * declared first. Its per-CPU table has max(CPU count, highest id + 1)
 * entries: v7 lists only CPUs that had data, v6 needs the full table.
 *
 * Safety: the output is written to OUT.tmp.XXXXXX beside OUT and renamed
 * over OUT only after the writer finished and the data reached the disk,
 * so OUT is either the old file or the complete new one. The temporary
 * file is removed on every failure path and on SIGINT/SIGTERM/SIGHUP.
 * Converting a file onto itself is refused: the rename would replace the
 * input while the reader still streams pages from it, and a failure would
 * leave the user with neither file.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/dat.h>
#include <tracekit/page.h>
#include <tracekit/perfdata.h>

#include "cli.h"

const char cmd_convert_usage[] =
	"usage: tracekit convert [options] IN -o OUT\n"
	"\n"
	"Rewrite the trace-cmd .dat file IN as OUT, changing the file version or\n"
	"the compression. Metadata, options and every CPU page are copied\n"
	"unchanged; OUT appears only when it is complete. A perf.data IN becomes\n"
	"a .dat OUT (tracepoint samples only); a .dat IN becomes perf.data with\n"
	"--to perf or an OUT named *.data.\n"
	"\n"
	"options:\n"
	"  -i, --input IN          file to read (same as the IN argument)\n"
	"  -o, --output OUT        file to write (required)\n"
	"      --file-version 6|7  version of OUT (default 7)\n"
	"      --compression zstd|zlib|none\n"
	"                          codec of OUT (default zstd for v7, none for v6;\n"
	"                          v6 cannot be compressed)\n"
	"      --to perf|dat       output format (default: perf for OUT named *.data)\n"
	"  -q, --quiet             do not print the summary line\n"
	"  -h, --help              show this help\n";

/* Pages are handed to the writer in batches of about this many bytes. */
#define BATCH_BYTES (1u << 20)

/* Inputs larger than this get a progress line when stderr is a terminal. */
#define PROGRESS_MIN_BYTES (256ull << 20)

/*
 * The temporary file to remove if a signal ends the process. Only unlink()
 * and raise() run in the handler, both async-signal-safe.
 */
static char *volatile cleanup_path;

static void cleanup_on_signal(int sig)
{
	char *p = cleanup_path;

	if (p)
		unlink(p);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_cleanup(char *path)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;

	cleanup_path = path;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = path ? cleanup_on_signal : SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

struct convert {
	const char *in, *out;
	struct tk_dat *dat;
	const struct tk_dat_info *info;
	struct tk_dat_writer *w;
	int version;
	enum tk_compression compression;

	uint64_t pages;
	uint64_t buffers;

	/* progress: bytes of input CPU data done out of the total */
	bool progress;
	uint64_t total_bytes, done_bytes;
	struct timespec last_progress;
};

static double now_seconds(struct timespec *ts)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	if (ts)
		*ts = t;
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void show_progress(struct convert *cv, uint64_t extra)
{
	struct timespec t;
	uint64_t done = cv->done_bytes + extra;
	double pct;

	clock_gettime(CLOCK_MONOTONIC, &t);
	if (t.tv_sec - cv->last_progress.tv_sec < 1 ||
	    (t.tv_sec - cv->last_progress.tv_sec == 1 && t.tv_nsec < cv->last_progress.tv_nsec))
		return;
	cv->last_progress = t;
	pct = cv->total_bytes ? 100.0 * (double)done / (double)cv->total_bytes : 0.0;
	if (pct > 100.0)
		pct = 100.0;
	fprintf(stderr, "\rtracekit convert: %5.1f%% %" PRIu64 " pages\033[K", pct, cv->pages);
}

static int copy_metadata(struct convert *cv)
{
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES; id++) {
		const void *body;
		uint64_t len;
		int r;

		r = tk_dat_metadata(cv->dat, id, &body, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return cli_lib_error(cv->in);
		if (tk_dat_writer_add_metadata(cv->w, id, body, len) < 0)
			return cli_lib_error(cv->out);
	}
	return CLI_OK;
}

static bool writer_makes_option(uint16_t id)
{
	return id == TK_DAT_OPTION_DONE || id == TK_DAT_OPTION_BUFFER ||
	       id == TK_DAT_SECTION_STRINGS ||
	       (id >= TK_DAT_SECTION_HEADER_INFO && id <= TK_DAT_OPTION_BUFFER_TEXT);
}

static bool has_latency_text(const struct tk_dat *dat)
{
	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++) {
		if (tk_dat_buffer_get(dat, b)->latency_text)
			return true;
	}
	return false;
}

static int copy_options(struct convert *cv)
{
	size_t n = tk_dat_option_count(cv->dat);
	uint16_t prev = TK_DAT_OPTION_DONE;
	/*
	 * A v6 reader that sees TRACECLOCK reads a clock blob after the data
	 * tag, and in a latency file that is the text itself; the writer
	 * refuses the combination, so the option is dropped, loudly.
	 */
	bool drop_clock = cv->version == 6 && has_latency_text(cv->dat);

	for (size_t i = 0; i < n; i++) {
		const struct tk_dat_option *o = tk_dat_option_get(cv->dat, i);
		bool skip = writer_makes_option(o->id);

		if (o->id == TK_DAT_OPTION_CPUCOUNT && prev == TK_DAT_OPTION_BUFFER)
			skip = true;
		prev = o->id;
		if (o->id == TK_DAT_OPTION_TRACECLOCK && drop_clock) {
			fprintf(stderr,
				"tracekit convert: warning: TRACECLOCK option dropped: a v6 "
				"latency file cannot carry it\n");
			skip = true;
		}
		if (skip)
			continue;
		if (tk_dat_writer_add_option(cv->w, o->id, o->data, o->size) < 0)
			return cli_lib_error(cv->out);
	}
	return CLI_OK;
}

static const char *buffer_clock(const struct convert *cv, const struct tk_dat_buffer *buf)
{
	if (buf->clock && buf->clock[0])
		return buf->clock;
	if (cv->info->clock && cv->info->clock[0])
		return cv->info->clock;
	return "local";
}

static int copy_text_buffer(struct convert *cv, size_t b, const struct tk_dat_buffer *buf)
{
	struct tk_dat_text text;
	int r;

	if (tk_dat_latency_text(cv->dat, b, &text) < 0)
		return cli_lib_error(cv->in);
	r = tk_dat_writer_add_latency_text(cv->w, buf->name, buffer_clock(cv, buf), text.data,
					   text.len);
	free((void *)text.data);
	return r < 0 ? cli_lib_error(cv->out) : CLI_OK;
}

/* Stream one CPU's pages into the writer, batch by batch. */
static int copy_cpu(struct convert *cv, size_t b, size_t ci, const struct tk_dat_buffer *buf,
		    uint8_t *batch, size_t batch_cap)
{
	uint32_t page_size = buf->page_format.page_size;
	const struct tk_dat_cpu_data *cpu = &buf->cpus[ci];
	struct tk_dat_cpu_reader *reader;
	uint64_t stream_size;
	size_t used = 0;
	const void *page;
	uint64_t off = 0;
	int r;

	if (tk_dat_writer_begin_cpu(cv->w, cpu->cpu) < 0)
		return cli_lib_error(cv->out);
	reader = tk_dat_cpu_reader_new(cv->dat, b, ci);
	if (!reader)
		return cli_cpu_error(cv->in, buf->name, cpu->cpu);
	stream_size = tk_dat_cpu_reader_size(reader);

	while ((r = tk_dat_cpu_reader_next_page(reader, &page, &off)) > 0) {
		memcpy(batch + used, page, page_size);
		used += page_size;
		cv->pages++;
		if (used + page_size > batch_cap) {
			if (tk_dat_writer_write_pages(cv->w, batch, used) < 0) {
				r = cli_lib_error(cv->out);
				goto out;
			}
			used = 0;
			if (cv->progress && stream_size)
				show_progress(cv, (uint64_t)((double)cpu->size * (double)off /
							     (double)stream_size));
		}
	}
	if (r < 0) {
		r = cli_cpu_error(cv->in, buf->name, cpu->cpu);
		goto out;
	}
	if (used && tk_dat_writer_write_pages(cv->w, batch, used) < 0) {
		r = cli_lib_error(cv->out);
		goto out;
	}
	r = tk_dat_writer_end_cpu(cv->w) < 0 ? cli_lib_error(cv->out) : CLI_OK;
	cv->done_bytes += cpu->size;
out:
	tk_dat_cpu_reader_free(reader);
	return r;
}

static int compare_cpu_index(const void *a, const void *b, void *arg)
{
	const struct tk_dat_cpu_data *cpus = arg;
	uint32_t x = cpus[*(const size_t *)a].cpu, y = cpus[*(const size_t *)b].cpu;

	return x < y ? -1 : x > y;
}

static int copy_page_buffer(struct convert *cv, size_t b, const struct tk_dat_buffer *buf)
{
	uint32_t page_size = buf->page_format.page_size;
	uint32_t table = cv->info->cpu_count;
	size_t *order = NULL, batch_cap;
	uint8_t *batch = NULL;
	char label[80];
	int r = CLI_OK;

	if (page_size == 0)
		return cli_error("%s: buffer %s has page size 0", cv->in,
				 cli_buffer_label(buf->name, label, sizeof(label)));
	batch_cap = BATCH_BYTES / page_size * page_size;
	if (batch_cap == 0)
		batch_cap = page_size;
	batch = malloc(batch_cap);
	order = calloc(buf->cpu_count ? buf->cpu_count : 1, sizeof(*order));
	if (!batch || !order) {
		r = cli_error("out of memory");
		goto out;
	}

	/* The writer wants CPUs in increasing order; the file may list them in any. */
	for (size_t i = 0; i < buf->cpu_count; i++) {
		order[i] = i;
		if (buf->cpus[i].cpu >= table) {
			if (buf->cpus[i].cpu == UINT32_MAX) {
				r = cli_error("%s: buffer %s: cpu id %u is out of range", cv->in,
					      cli_buffer_label(buf->name, label, sizeof(label)),
					      buf->cpus[i].cpu);
				goto out;
			}
			table = buf->cpus[i].cpu + 1;
		}
	}
	qsort_r(order, buf->cpu_count, sizeof(*order), compare_cpu_index, (void *)buf->cpus);

	if (tk_dat_writer_begin_buffer(cv->w, buf->name, buffer_clock(cv, buf), page_size, table) <
	    0) {
		r = cli_lib_error(cv->out);
		goto out;
	}
	for (size_t i = 0; i < buf->cpu_count && r == CLI_OK; i++)
		r = copy_cpu(cv, b, order[i], buf, batch, batch_cap);
	if (r == CLI_OK && tk_dat_writer_end_buffer(cv->w) < 0)
		r = cli_lib_error(cv->out);
out:
	free(order);
	free(batch);
	return r;
}

static int copy_buffers(struct convert *cv)
{
	size_t n = tk_dat_buffer_count(cv->dat);
	int r;

	/* v6 writes the instance names into its options, before any data. */
	if (cv->version == 6) {
		for (size_t b = 0; b < n; b++) {
			const struct tk_dat_buffer *buf = tk_dat_buffer_get(cv->dat, b);

			if (buf->latency_text || !buf->name[0])
				continue;
			if (tk_dat_writer_declare_buffer(cv->w, buf->name) < 0)
				return cli_lib_error(cv->out);
		}
	}

	for (size_t b = 0; b < n; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(cv->dat, b);

		if (buf->latency_text)
			r = copy_text_buffer(cv, b, buf);
		else
			r = copy_page_buffer(cv, b, buf);
		if (r != CLI_OK)
			return r;
		cv->buffers++;
	}
	return CLI_OK;
}

static int convert_into(struct convert *cv, int fd)
{
	struct tk_dat_writer_opts opts = {
		.version = cv->version,
		.compression = cv->compression,
		.big_endian = cv->info->big_endian,
		.long_size = cv->info->long_size,
		.page_size = cv->info->page_size,
	};
	int r;

	cv->w = tk_dat_writer_open_fd(fd, cv->out, &opts);
	if (!cv->w)
		return cli_lib_error(cv->out);
	r = copy_metadata(cv);
	if (r == CLI_OK)
		r = copy_options(cv);
	if (r == CLI_OK)
		r = copy_buffers(cv);
	if (r == CLI_OK && tk_dat_writer_finish(cv->w) < 0)
		r = cli_lib_error(cv->out);
	tk_dat_writer_free(cv->w);
	cv->w = NULL;
	if (cv->progress)
		fputs("\r\033[K", stderr);
	return r;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return true;
	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * Every direction writes OUT the same way: under "<OUT>.tmp.XXXXXX" beside
 * it, renamed into place only once complete and on disk, so a failed or
 * interrupted convert never leaves a partial OUT nor replaces a good one;
 * a signal removes the temporary file.
 */
struct temp_output {
	char *path;
	int fd;
};

static int output_begin(const struct convert *cv, struct temp_output *t)
{
	struct stat st;
	mode_t mask;

	t->path = NULL;
	t->fd = -1;
	if (same_file(cv->in, cv->out))
		return cli_error("%s: input and output are the same file", cv->out);
	if (stat(cv->out, &st) == 0 && S_ISDIR(st.st_mode))
		return cli_error("%s: is a directory", cv->out);
	if (asprintf(&t->path, "%s.tmp.XXXXXX", cv->out) < 0) {
		t->path = NULL;
		return cli_error("out of memory");
	}
	/* Signals are caught from before the file exists until it is renamed. */
	install_cleanup(t->path);
	t->fd = mkstemp(t->path);
	if (t->fd < 0) {
		install_cleanup(NULL);
		free(t->path);
		t->path = NULL;
		return cli_error("%s: cannot create a temporary file beside it: %m", cv->out);
	}
	/* mkstemp creates 0600; a converted trace gets the usual 0666 & ~umask. */
	mask = umask(0);
	umask(mask);
	if (fchmod(t->fd, 0666 & ~mask) < 0)
		return cli_error("%s: %m", t->path);
	return CLI_OK;
}

/* Whatever output_begin() left: the temporary file goes unless it was renamed. */
static void output_end(struct temp_output *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->path)
		unlink(t->path);
	install_cleanup(NULL);
	free(t->path);
	t->path = NULL;
	t->fd = -1;
}

/* Sync, close and rename into place; @size receives the file's size. */
static int output_commit(const struct convert *cv, struct temp_output *t, uint64_t *size)
{
	struct stat st;
	int fd = t->fd;

	t->fd = -1;
	if (fstat(fd, &st) < 0 || fsync(fd) < 0) {
		close(fd);
		return cli_error("%s: %m", t->path);
	}
	if (close(fd) < 0)
		return cli_error("%s: %m", t->path);
	if (rename(t->path, cv->out) < 0)
		return cli_error("cannot rename %s to %s: %m", t->path, cv->out);
	free(t->path);
	t->path = NULL;
	*size = (uint64_t)st.st_size;
	return CLI_OK;
}

static void print_summary(const struct convert *cv, uint64_t out_size, double seconds)
{
	fprintf(stderr,
		"tracekit convert: %s (v%d, %s) -> %s (v%d, %s): %" PRIu64 " pages, %" PRIu64
		" buffers, %.2f MB -> %.2f MB in %.2f s\n",
		cv->in, cv->info->version, tk_compression_name(cv->info->compression), cv->out,
		cv->version, tk_compression_name(cv->compression), cv->pages, cv->buffers,
		(double)cv->info->file_size / 1e6, (double)out_size / 1e6, seconds);
}

static int run(struct convert *cv, bool quiet)
{
	double start = now_seconds(NULL);
	struct temp_output t;
	uint64_t size;
	int r;

	r = output_begin(cv, &t);
	if (r != CLI_OK)
		goto out;
	cv->dat = tk_dat_open(cv->in);
	if (!cv->dat) {
		r = cli_lib_error(cv->in);
		goto out;
	}
	cv->info = tk_dat_get_info(cv->dat);
	if (cv->info->file_size > PROGRESS_MIN_BYTES && isatty(STDERR_FILENO)) {
		cv->progress = true;
		now_seconds(&cv->last_progress);
		for (size_t b = 0; b < tk_dat_buffer_count(cv->dat); b++) {
			const struct tk_dat_buffer *buf = tk_dat_buffer_get(cv->dat, b);

			for (uint32_t i = 0; i < buf->cpu_count; i++)
				cv->total_bytes += buf->cpus[i].size;
		}
	}
	r = convert_into(cv, t.fd);
	if (r == CLI_OK)
		r = output_commit(cv, &t, &size);
	if (r == CLI_OK && !quiet)
		print_summary(cv, size, now_seconds(NULL) - start);
out:
	output_end(&t);
	tk_dat_close(cv->dat);
	return r;
}

/* ------------------------------------------------------------------------
 * .dat -> perf.data, for tracepoint events.
 *
 * Every event id met in the top buffer's pages becomes one tracepoint attr
 * (config = the id, sample_type IDENTIFIER|TID|TIME|CPU|PERIOD|RAW, one
 * made-up kernel id each); TRACING_DATA is the .dat's metadata laid out as
 * perf's "0.6" blob; each ftrace record becomes a SAMPLE whose RAW payload
 * is the record's payload, zero padded so the sample stays 8-byte sized.
 * The CPUs are merged by time, so the file needs no reordering; a
 * FINISHED_ROUND every few thousand samples keeps perf's queue short.
 * The saved command lines become COMM records at time 0, which perf applies
 * before any sample, so perf script names the threads as trace-cmd does
 * for pids that were saved. Two passes over the pages: the first finds the
 * event ids (attrs must precede the data), the second writes the samples.
 */
#define PERF_SAMPLE_BITS                                                                           \
	(TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |                    \
	 TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD | TK_PERF_SAMPLE_RAW)
#define PERF_ID_BASE 1000u
#define ROUND_EVERY  4096u

struct dsrc {
	struct tk_dat_cpu_reader *rd;
	struct tk_page_iter it;
	struct tk_page_record rec;
	uint64_t time;
	uint32_t cpu;
	bool in_page, done;
};

struct blob {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void blob_put(struct blob *b, const void *data, size_t len)
{
	if (b->failed)
		return;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		uint8_t *n;

		while (cap < b->len + len)
			cap *= 2;
		n = realloc(b->p, cap);
		if (!n) {
			b->failed = true;
			return;
		}
		b->p = n;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void blob_u32(struct blob *b, uint32_t v)
{
	blob_put(b, &v, 4);
}

static void blob_u64(struct blob *b, uint64_t v)
{
	blob_put(b, &v, 8);
}

/* The value after "@key" at a line start of a format text, copied into @out. */
static bool format_value(const char *text, size_t len, const char *key, char *out, size_t cap);

/* Whether format @t is of an event the converted file uses (@used by id). */
static bool format_used(const struct tk_dat_text *t, const int *used)
{
	char buf[32];
	unsigned long id;

	if (!format_value(t->data, t->len, "ID:", buf, sizeof(buf)))
		return false;
	id = strtoul(buf, NULL, 10);
	return id < 65536 && used[id] >= 0;
}

/*
 * perf's TRACING_DATA ("0.6") from the .dat's parsed metadata, with the
 * formats of the events in @used only, as perf record writes it. Copying
 * every format of the .dat made perf script print parse errors such as
 * "expected type 4 but read 5": perf 6.1 parses formats with its own older
 * copy of libtraceevent, which fails on some formats newer kernels have
 * (ftrace's, kvm's) that trace-cmd's libtraceevent 1.7 reads.
 */
static int tracing_blob(struct tk_dat *dat, struct blob *b, const int *used)
{
	const struct tk_dat_info *info = tk_dat_get_info(dat);
	struct tk_dat_text t;
	uint32_t n;
	size_t at;
	uint8_t u8;

	blob_put(b, "\x17\x08\x44tracing0.6", 14);
	u8 = info->big_endian;
	blob_put(b, &u8, 1);
	blob_put(b, &info->long_size, 1);
	blob_u32(b, info->page_size);
	if (tk_dat_header_page(dat, &t))
		t.len = 0;
	blob_put(b, "header_page", 12);
	blob_u64(b, t.len);
	blob_put(b, t.data, t.len);
	if (tk_dat_header_event(dat, &t))
		t.len = 0;
	blob_put(b, "header_event", 13);
	blob_u64(b, t.len);
	blob_put(b, t.data, t.len);
	at = b->len;
	n = 0;
	blob_u32(b, 0);
	for (size_t i = 0; i < tk_dat_ftrace_format_count(dat); i++) {
		if (tk_dat_ftrace_format(dat, i, &t) || !format_used(&t, used))
			continue;
		blob_u64(b, t.len);
		blob_put(b, t.data, t.len);
		n++;
	}
	if (!b->failed)
		memcpy(b->p + at, &n, 4);
	{
		size_t sys_at = b->len;
		uint32_t nsys = 0;

		blob_u32(b, 0);
		for (size_t s = 0; s < tk_dat_system_count(dat); s++) {
			const char *name = tk_dat_system_name(dat, s);
			bool any = false;

			for (size_t i = 0; i < tk_dat_system_format_count(dat, s) && !any; i++)
				any = !tk_dat_system_format(dat, s, i, &t) && format_used(&t, used);
			if (!any)
				continue;
			blob_put(b, name, strlen(name) + 1);
			at = b->len;
			n = 0;
			blob_u32(b, 0);
			for (size_t i = 0; i < tk_dat_system_format_count(dat, s); i++) {
				if (tk_dat_system_format(dat, s, i, &t) || !format_used(&t, used))
					continue;
				blob_u64(b, t.len);
				blob_put(b, t.data, t.len);
				n++;
			}
			if (!b->failed)
				memcpy(b->p + at, &n, 4);
			nsys++;
		}
		if (!b->failed)
			memcpy(b->p + sys_at, &nsys, 4);
	}
	if (tk_dat_kallsyms(dat, &t))
		t.len = 0;
	blob_u32(b, (uint32_t)t.len);
	blob_put(b, t.data, t.len);
	if (tk_dat_printk(dat, &t))
		t.len = 0;
	blob_u32(b, (uint32_t)t.len);
	blob_put(b, t.data, t.len);
	if (tk_dat_cmdlines(dat, &t))
		t.len = 0;
	blob_u64(b, t.len);
	blob_put(b, t.data, t.len);
	return b->failed ? -ENOMEM : 0;
}

/* The value after "@key" at a line start of a format text, copied into @out. */
static bool format_value(const char *text, size_t len, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i + klen <= len; i++) {
		size_t n = 0;

		if ((i && text[i - 1] != '\n') || memcmp(text + i, key, klen))
			continue;
		for (i += klen; i < len && text[i] == ' '; i++)
			;
		while (i < len && text[i] != '\n' && n + 1 < cap)
			out[n++] = text[i++];
		out[n] = 0;
		return n > 0;
	}
	return false;
}

/* "system:name" of event @id from the .dat formats, or false. */
static bool dat_event_name(struct tk_dat *dat, uint32_t id, char *out, size_t cap)
{
	char buf[64], name[128];
	struct tk_dat_text t;

	for (size_t s = 0; s < tk_dat_system_count(dat); s++) {
		for (size_t i = 0; i < tk_dat_system_format_count(dat, s); i++) {
			if (tk_dat_system_format(dat, s, i, &t) ||
			    !format_value(t.data, t.len, "ID:", buf, sizeof(buf)) ||
			    strtoul(buf, NULL, 10) != id ||
			    !format_value(t.data, t.len, "name:", name, sizeof(name)))
				continue;
			snprintf(out, cap, "%s:%s", tk_dat_system_name(dat, s), name);
			return true;
		}
	}
	return false;
}

static int dsrc_next(const struct tk_dat *dat, const struct tk_dat_buffer *buf, struct dsrc *s)
{
	for (;;) {
		struct tk_page_header h;
		const void *page;
		int r;

		if (!s->in_page) {
			r = tk_dat_cpu_reader_next_page(s->rd, &page, NULL);
			if (r <= 0) {
				s->done = true;
				return r;
			}
			r = tk_page_iter_init(&s->it, &buf->page_format, page,
					      buf->page_format.page_size, &h);
			if (r < 0)
				return r;
			s->in_page = true;
		}
		r = tk_page_iter_next(&s->it, &s->rec);
		if (r == 1) {
			s->time = tk_dat_timestamp(dat, s->rec.timestamp);
			return 1;
		}
		if (r < 0)
			return r;
		s->in_page = false;
	}
}

static void dsrcs_free(struct dsrc *src, size_t n)
{
	for (size_t i = 0; src && i < n; i++)
		tk_dat_cpu_reader_free(src[i].rd);
	free(src);
}

/* Readers for every CPU of the top buffer, each at its first record. */
static struct dsrc *dsrcs_open(struct tk_dat *dat, const struct tk_dat_buffer *buf)
{
	struct dsrc *src = calloc(buf->cpu_count ? buf->cpu_count : 1, sizeof(*src));

	if (!src)
		return NULL;
	for (uint32_t i = 0; i < buf->cpu_count; i++) {
		src[i].cpu = buf->cpus[i].cpu;
		src[i].rd = tk_dat_cpu_reader_new(dat, 0, i);
		if (!src[i].rd || dsrc_next(dat, buf, &src[i]) < 0) {
			dsrcs_free(src, buf->cpu_count);
			return NULL;
		}
	}
	return src;
}

/* The source with the oldest record (lowest CPU on ties), or NULL at the end. */
static struct dsrc *dsrcs_min(struct dsrc *src, uint32_t n)
{
	struct dsrc *best = NULL;

	for (uint32_t i = 0; i < n; i++)
		if (!src[i].done && (!best || src[i].time < best->time))
			best = &src[i];
	return best;
}

static int write_comms(struct tk_perfdata_writer *w, struct tk_dat *dat)
{
	struct tk_dat_text t;
	uint8_t rec[96];
	size_t i = 0;

	if (tk_dat_cmdlines(dat, &t))
		return 0;
	while (i < t.len) {
		size_t end = i, n;
		char line[64];
		char *sp, *endp;
		long pid;

		while (end < t.len && t.data[end] != '\n')
			end++;
		n = end - i < sizeof(line) - 1 ? end - i : sizeof(line) - 1;
		memcpy(line, t.data + i, n);
		line[n] = 0;
		i = end + 1;
		pid = strtol(line, &endp, 10);
		sp = endp;
		if (endp == line || *sp != ' ' || pid <= 0 || pid > INT32_MAX)
			continue;
		sp++;
		/* header, pid, tid, comm[16], trailer: pid/tid, time, cpu, identifier */
		memset(rec, 0, sizeof(rec));
		uint32_t u = TK_PERF_RECORD_COMM;
		uint16_t size = 8 + 8 + 16 + 32;

		memcpy(rec, &u, 4);
		memcpy(rec + 6, &size, 2);
		u = (uint32_t)pid;
		memcpy(rec + 8, &u, 4);
		memcpy(rec + 12, &u, 4);
		strncpy((char *)rec + 16, sp, 15);
		memcpy(rec + 32, &u, 4);
		memcpy(rec + 36, &u, 4);
		u = PERF_ID_BASE;
		memcpy(rec + 56, &u, 4);
		int r = tk_perfdata_writer_write(w, rec, size);

		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The trace clocks that are clock_gettime() clocks (tracefs "mono" reads
 * CLOCK_MONOTONIC ...): both directions of a conversion map them. "local",
 * "global", "perf", "x86-tsc" and counters are none.
 */
static const struct {
	const char *name;
	int32_t id;
} trace_clocks[] = {
	{"mono", CLOCK_MONOTONIC},
	{"mono_raw", CLOCK_MONOTONIC_RAW},
	{"boot", CLOCK_BOOTTIME},
	{"tai", CLOCK_TAI},
};

/* The clockid of the trace clock of @buf, or -1 when it is none. */
static int32_t dat_clockid(const struct tk_dat *dat, const struct tk_dat_buffer *buf)
{
	const char *name = buf->clock && buf->clock[0] ? buf->clock : tk_dat_get_info(dat)->clock;

	for (size_t i = 0; name && i < sizeof(trace_clocks) / sizeof(trace_clocks[0]); i++)
		if (!strcmp(name, trace_clocks[i].name))
			return trace_clocks[i].id;
	return -1;
}

/* CLOCKID (the clock's resolution) for a file whose times come from @clockid. */
static int set_clockid_feature(struct tk_perfdata_writer *w, int32_t clockid)
{
	struct timespec res;
	uint64_t ns;

	if (clock_getres(clockid, &res) < 0)
		return 0; /* a clock this machine lacks: the attrs still say which */
	ns = (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec;
	return tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_CLOCKID, &ns, sizeof(ns));
}

static int dat_to_perf(const struct convert *cv, bool quiet)
{
	const char *in = cv->in, *out = cv->out;
	struct temp_output t;
	uint64_t out_size;
	static int attr_of[65536];
	struct tk_perfdata_writer *w = NULL;
	struct tk_dat *dat;
	const struct tk_dat_buffer *buf;
	struct dsrc *src = NULL, *s;
	struct blob b = {0};
	uint8_t rec[65536];
	uint64_t samples = 0;
	int nattrs = 0, r = 0;
	int32_t clockid;

	dat = tk_dat_open(in);
	if (!dat)
		return cli_lib_error(in);
	buf = tk_dat_buffer_count(dat) ? tk_dat_buffer_get(dat, 0) : NULL;
	if (!buf || buf->latency_text) {
		tk_dat_close(dat);
		return cli_error("%s: no per-CPU event data to convert", in);
	}
	/*
	 * Times on a clock_gettime() clock are declared as perf -k declares
	 * them (use_clockid, CLOCKID). Not CLOCK_DATA: its reference pair must
	 * be read while recording, and a .dat does not carry one.
	 */
	clockid = dat_clockid(dat, buf);
	for (size_t i = 0; i < 65536; i++)
		attr_of[i] = -1;
	r = output_begin(cv, &t);
	if (r != CLI_OK)
		goto done;
	w = tk_perfdata_writer_open_fd(t.fd, out);
	if (!w) {
		r = cli_lib_error(out);
		goto done;
	}
	/* Pass 1: which events occur, in order of first appearance. */
	src = dsrcs_open(dat, buf);
	if (!src)
		goto lib_err_in;
	while ((s = dsrcs_min(src, buf->cpu_count))) {
		uint16_t id;

		if (s->rec.size >= 2) {
			memcpy(&id, s->rec.data, 2);
			if (attr_of[id] < 0) {
				struct tk_perf_attr a = {0};
				uint64_t kid = PERF_ID_BASE + (uint64_t)nattrs;
				char name[256];

				a.type = 2;
				a.config = id;
				a.sample_period = 1;
				a.sample_type = PERF_SAMPLE_BITS;
				a.flags = TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL;
				if (clockid >= 0) {
					a.flags |= TK_PERF_ATTR_FLAG_USE_CLOCKID;
					a.clockid = clockid;
				}
				if (!dat_event_name(dat, id, name, sizeof(name)))
					snprintf(name, sizeof(name), "unknown:%u", id);
				attr_of[id] = tk_perfdata_writer_add_attr(w, &a, name);
				if (attr_of[id] < 0 ||
				    tk_perfdata_writer_add_ids(w, (size_t)attr_of[id], &kid, 1) < 0)
					goto lib_err_out;
				nattrs++;
			}
		}
		if (dsrc_next(dat, buf, s) < 0)
			goto lib_err_in;
	}
	dsrcs_free(src, buf->cpu_count);
	src = NULL;
	if (!nattrs) {
		r = cli_error("%s: no events to convert", in);
		goto done;
	}
	if (tracing_blob(dat, &b, attr_of) < 0 ||
	    tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_TRACING_DATA, b.p, b.len) < 0 ||
	    tk_perfdata_writer_set_host(w, 0, NULL) < 0 ||
	    (clockid >= 0 && set_clockid_feature(w, clockid) < 0) || write_comms(w, dat) < 0)
		goto lib_err_out;

	/* Pass 2: the samples, oldest first across CPUs. */
	src = dsrcs_open(dat, buf);
	if (!src)
		goto lib_err_in;
	while ((s = dsrcs_min(src, buf->cpu_count))) {
		uint32_t size = s->rec.size, raw = ((size + 4 + 7) & ~7u) - 4;
		uint64_t q[6];
		uint16_t id;
		int32_t pid = -1;
		uint32_t total = 48 + 4 + raw;

		if (size >= 2 && total <= 65535) {
			memcpy(&id, s->rec.data, 2);
			if (size >= 8)
				memcpy(&pid, (const uint8_t *)s->rec.data + 4, 4);
			q[0] = TK_PERF_RECORD_SAMPLE | (uint64_t)total << 48;
			q[1] = PERF_ID_BASE + (uint64_t)attr_of[id];
			q[2] = (uint32_t)pid | (uint64_t)(uint32_t)pid << 32;
			q[3] = s->time;
			q[4] = s->cpu;
			q[5] = 1;
			memcpy(rec, q, 48);
			memcpy(rec + 48, &raw, 4);
			memcpy(rec + 52, s->rec.data, size);
			memset(rec + 52 + size, 0, raw - size);
			if (tk_perfdata_writer_write(w, rec, total) < 0)
				goto lib_err_out;
			if (++samples % ROUND_EVERY == 0) {
				const uint64_t round = TK_PERF_RECORD_FINISHED_ROUND | 8ull << 48;

				if (tk_perfdata_writer_write(w, &round, 8) < 0)
					goto lib_err_out;
			}
		}
		if (dsrc_next(dat, buf, s) < 0)
			goto lib_err_in;
	}
	if (tk_perfdata_writer_finish(w) < 0)
		goto lib_err_out;
	r = output_commit(cv, &t, &out_size);
	if (r != CLI_OK)
		goto done;
	if (!quiet)
		fprintf(stderr,
			"tracekit convert: %s -> %s: %" PRIu64 " samples of %d events, "
			"%.2f MB\n",
			in, out, samples, nattrs, (double)out_size / 1e6);
	r = CLI_OK;
	goto done;
lib_err_in:
	r = cli_lib_error(in);
	goto done;
lib_err_out:
	r = cli_lib_error(out);
done:
	dsrcs_free(src, buf ? buf->cpu_count : 0);
	free(b.p);
	tk_perfdata_writer_close(w);
	output_end(&t);
	tk_dat_close(dat);
	return r;
}

/* ------------------------------------------------------------------------
 * perf.data -> .dat, for tracepoint samples.
 *
 * The metadata comes from the TRACING_DATA feature (perf's "0.6" blob
 * holds the same header page, formats, kallsyms, printk formats and saved
 * command lines as a .dat preamble), laid out as the .dat's sections 16..21.
 * Each tracepoint sample's RAW payload is an ftrace record's payload as the
 * kernel wrote it (common_type first), so it goes into a ring-buffer page
 * unchanged; the sample's CPU picks the page stream and its time the
 * record's timestamp. Samples are collected per CPU and sorted by time
 * (stable: a CPU's samples are nearly always in order already, one run per
 * round at worst), then packed into pages with the page encoder. Memory
 * holds the raw payloads of the whole file: the pages of a CPU must be
 * written in time order, and perf.data interleaves CPUs in rounds.
 *
 * Command names: perf names a thread by the last COMM record before each
 * sample (a forked thread by its parent's name until then); a .dat has one
 * name per pid (saved_cmdlines). The saved command lines of the blob are
 * kept, and each thread the records name gets the name perf showed at its
 * last sample (its last COMM name when it had no sample). A thread renamed
 * between its samples (exec) so shows its final name throughout. perf
 * applies COMM and FORK records in time order, not file order (each CPU's
 * ring is drained in turn, so a child's FORK can precede its parent's in
 * the file): they are collected with their times and replayed sorted,
 * together with one mark per thread at its last sample. Samples of other
 * events (cpu-clock, ...) have no ftrace payload and are skipped with a
 * count. A sample of an exiting task carries pid -1 in perf (and perf
 * script shows ":-1"), but its payload's common_pid is the real one, which
 * the .dat keeps.
 */
struct praw {
	uint64_t time;
	uint64_t off; /* into the CPU's byte store */
	uint32_t size;
};

struct pcpu {
	uint32_t cpu;
	uint8_t *bytes;
	uint64_t len, cap;
	struct praw *ents, *tmp;
	size_t n, cap_ents;
	bool unsorted;
};

struct pcomm {
	int32_t pid;
	uint32_t seq; /* later wins among equal pids */
	char comm[17];
};

/* A thread's name as perf would show it: now, and at its last sample. */
struct pthread {
	int32_t tid; /* 0: free slot */
	bool has_cur, has_sampled, has_sample;
	uint64_t last_sample; /* time of its last sample, when has_sample */
	char cur[17], sampled[17];
};

/* A COMM or FORK record, or a thread's last-sample mark, to replay in time order. */
enum { SB_COMM, SB_FORK, SB_MARK };
struct psband {
	uint64_t time;
	uint32_t seq; /* file order breaks ties, as in perf's queue */
	uint8_t kind;
	int32_t tid, ptid;
	char comm[17];
};

struct p2d {
	const char *in, *out;
	struct pthread *threads;
	size_t thread_cap, nthreads;
	struct tk_perfdata *pd;
	struct pcpu *cpus;
	size_t ncpus;
	struct pcomm *comms;
	size_t ncomms, comm_cap;
	struct psband *sband;
	size_t nsband, sband_cap;
	uint64_t samples, skipped_other, skipped_bad, skipped_big;
	bool oom; /* an allocation here failed (not a library error) */
};

static struct pcpu *p2d_cpu(struct p2d *c, uint32_t cpu)
{
	struct pcpu *n;

	for (size_t i = 0; i < c->ncpus; i++)
		if (c->cpus[i].cpu == cpu)
			return &c->cpus[i];
	n = realloc(c->cpus, (c->ncpus + 1) * sizeof(*n));
	if (!n)
		return NULL;
	c->cpus = n;
	n = &c->cpus[c->ncpus++];
	memset(n, 0, sizeof(*n));
	n->cpu = cpu;
	return n;
}

static int p2d_add(struct pcpu *p, uint64_t time, const void *raw, uint32_t size)
{
	if (p->len + size > p->cap) {
		uint64_t cap = p->cap ? p->cap : 1 << 20;
		uint8_t *b;

		while (cap < p->len + size)
			cap *= 2;
		b = realloc(p->bytes, cap);
		if (!b)
			return -ENOMEM;
		p->bytes = b;
		p->cap = cap;
	}
	if (p->n == p->cap_ents) {
		size_t cap = p->cap_ents ? p->cap_ents * 2 : 4096;
		struct praw *e = realloc(p->ents, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		p->ents = e;
		p->cap_ents = cap;
	}
	if (p->n && time < p->ents[p->n - 1].time)
		p->unsorted = true;
	memcpy(p->bytes + p->len, raw, size);
	p->ents[p->n++] = (struct praw){.time = time, .off = p->len, .size = size};
	p->len += size;
	return 0;
}

/* Stable merge sort by time (bottom-up; runs of equal times keep file order). */
static int p2d_sort(struct pcpu *p)
{
	struct praw *a = p->ents, *b;

	if (!p->unsorted)
		return 0;
	b = malloc(p->n * sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t w = 1; w < p->n; w *= 2) {
		for (size_t lo = 0; lo < p->n; lo += 2 * w) {
			size_t mid = lo + w < p->n ? lo + w : p->n;
			size_t hi = lo + 2 * w < p->n ? lo + 2 * w : p->n;
			size_t x = lo, y = mid, o = lo;

			while (x < mid && y < hi)
				b[o++] = a[y].time < a[x].time ? a[y++] : a[x++];
			while (x < mid)
				b[o++] = a[x++];
			while (y < hi)
				b[o++] = a[y++];
		}
		struct praw *t = a;

		a = b;
		b = t;
	}
	p->ents = a;
	free(b);
	return 0;
}

static int p2d_comm(struct p2d *c, int32_t pid, const char *comm, size_t max)
{
	struct pcomm *e;
	size_t n = strnlen(comm, max);

	if (pid <= 0)
		return 0;
	if (c->ncomms == c->comm_cap) {
		size_t cap = c->comm_cap ? c->comm_cap * 2 : 256;
		struct pcomm *t = realloc(c->comms, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		c->comms = t;
		c->comm_cap = cap;
	}
	e = &c->comms[c->ncomms];
	e->pid = pid;
	e->seq = (uint32_t)c->ncomms++;
	if (n > 16)
		n = 16;
	memcpy(e->comm, comm, n);
	e->comm[n] = 0;
	/* A name with a newline would split its cmdlines line. */
	for (size_t i = 0; i < n; i++)
		if (e->comm[i] == '\n')
			e->comm[i] = ' ';
	return 0;
}

static struct pthread *p2d_thread(struct p2d *c, int32_t tid)
{
	size_t j;

	if (tid <= 0)
		return NULL;
	/* Found threads never move: only an insertion grows the table. */
	if (c->thread_cap) {
		j = ((uint32_t)tid * 2654435761u) & (c->thread_cap - 1);
		while (c->threads[j].tid && c->threads[j].tid != tid)
			j = (j + 1) & (c->thread_cap - 1);
		if (c->threads[j].tid)
			return &c->threads[j];
	}
	if ((c->nthreads + 1) * 2 > c->thread_cap) {
		size_t cap = c->thread_cap ? c->thread_cap * 2 : 1024;
		struct pthread *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < c->thread_cap; i++) {
			if (!c->threads[i].tid)
				continue;
			j = ((uint32_t)c->threads[i].tid * 2654435761u) & (cap - 1);
			while (t[j].tid)
				j = (j + 1) & (cap - 1);
			t[j] = c->threads[i];
		}
		free(c->threads);
		c->threads = t;
		c->thread_cap = cap;
	}
	j = ((uint32_t)tid * 2654435761u) & (c->thread_cap - 1);
	while (c->threads[j].tid && c->threads[j].tid != tid)
		j = (j + 1) & (c->thread_cap - 1);
	if (!c->threads[j].tid) {
		c->threads[j].tid = tid;
		c->nthreads++;
	}
	return &c->threads[j];
}

static void name_copy(char *dst, const char *src, size_t max)
{
	size_t n = strnlen(src, max);

	if (n > 16)
		n = 16;
	memcpy(dst, src, n);
	dst[n] = 0;
}

static int pcomm_cmp(const void *a, const void *b)
{
	const struct pcomm *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct psband *p2d_sband(struct p2d *c, uint8_t kind, uint64_t time)
{
	struct psband *e;

	if (c->nsband == c->sband_cap) {
		size_t cap = c->sband_cap ? c->sband_cap * 2 : 1024;

		e = realloc(c->sband, cap * sizeof(*e));
		if (!e)
			return NULL;
		c->sband = e;
		c->sband_cap = cap;
	}
	e = &c->sband[c->nsband];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->time = time;
	e->seq = (uint32_t)c->nsband++;
	return e;
}

static int psband_cmp(const void *a, const void *b)
{
	const struct psband *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The time of a side-band record: its sample_id_all trailer's, or 0 (applied first). */
static uint64_t sband_time(const struct p2d *c, const struct tk_perf_record *rec)
{
	struct tk_perf_sample s;

	return tk_perfdata_parse_sample(c->pd, rec, &s) == 0 ? s.time : 0;
}

/* Read every record: samples into the CPU stores, COMM and FORK records into the side band. */
static int p2d_collect(struct p2d *c)
{
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	struct psband *e;
	int r;

	while ((r = tk_perfdata_next(c->pd, &rec)) == 1) {
		if (rec.type == TK_PERF_RECORD_COMM) {
			uint32_t tid;

			if (rec.size < 17)
				continue;
			memcpy(&tid, (const uint8_t *)rec.data + 12, 4);
			if ((int32_t)tid <= 0)
				continue;
			e = p2d_sband(c, SB_COMM, sband_time(c, &rec));
			if (!e)
				goto oom;
			e->tid = (int32_t)tid;
			name_copy(e->comm, (const char *)rec.data + 16, rec.size - 16u);
			continue;
		}
		if (rec.type == TK_PERF_RECORD_FORK && rec.size >= 32) {
			/* pid, ppid, tid, ptid, time */
			uint32_t tid, ptid;
			uint64_t time;

			memcpy(&tid, (const uint8_t *)rec.data + 16, 4);
			memcpy(&ptid, (const uint8_t *)rec.data + 20, 4);
			memcpy(&time, (const uint8_t *)rec.data + 24, 8);
			e = p2d_sband(c, SB_FORK, time);
			if (!e)
				goto oom;
			e->tid = (int32_t)tid;
			e->ptid = (int32_t)ptid;
			continue;
		}
		if (rec.type != TK_PERF_RECORD_SAMPLE)
			continue;
		r = tk_perfdata_parse_sample(c->pd, &rec, &s);
		if (r == -ENOENT) {
			c->skipped_other++;
			continue;
		}
		if (r < 0)
			return r;
		if (tk_perfdata_evsel_get(c->pd, (size_t)s.attr_index)->attr.type != 2) {
			c->skipped_other++;
			continue;
		}
		if (!s.raw || s.raw_size < 8) {
			c->skipped_bad++;
			continue;
		}
		struct pcpu *p = p2d_cpu(c, s.cpu);
		struct pthread *th = (int32_t)s.tid > 0 ? p2d_thread(c, (int32_t)s.tid) : NULL;

		if (!p || ((int32_t)s.tid > 0 && !th) || p2d_add(p, s.time, s.raw, s.raw_size))
			goto oom;
		if (th && (!th->has_sample || s.time >= th->last_sample)) {
			th->last_sample = s.time;
			th->has_sample = true;
		}
		c->samples++;
	}
	return r;
oom:
	c->oom = true;
	return -ENOMEM;
}

/*
 * Replay the side band in time order: each thread's name now (cur) and at
 * its last sample (sampled), as perf would have shown them.
 */
static int p2d_names(struct p2d *c)
{
	for (size_t i = 0; i < c->thread_cap; i++) {
		const struct pthread *th = &c->threads[i];
		struct psband *e;

		if (!th->tid || !th->has_sample)
			continue;
		e = p2d_sband(c, SB_MARK, th->last_sample);
		if (!e)
			return -ENOMEM;
		e->tid = th->tid;
		/* After every side-band record of the same time, like a sample queued last. */
		e->seq = UINT32_MAX;
	}
	qsort(c->sband, c->nsband, sizeof(*c->sband), psband_cmp);
	for (size_t i = 0; i < c->nsband; i++) {
		const struct psband *e = &c->sband[i];
		struct pthread *th, *parent;

		if (e->tid <= 0)
			continue;
		th = p2d_thread(c, e->tid);
		if (!th)
			return -ENOMEM;
		switch (e->kind) {
		case SB_COMM:
			memcpy(th->cur, e->comm, sizeof(th->cur));
			th->has_cur = true;
			break;
		case SB_FORK:
			/* A new thread shows its parent's name until its own COMM. */
			parent = e->ptid > 0 ? p2d_thread(c, e->ptid) : NULL;
			if (e->ptid > 0 && !parent)
				return -ENOMEM;
			th = p2d_thread(c, e->tid); /* found above: the table did not move */
			th->has_cur = parent && parent->has_cur;
			if (th->has_cur)
				memcpy(th->cur, parent->cur, sizeof(th->cur));
			break;
		case SB_MARK:
			if (th->has_cur) {
				memcpy(th->sampled, th->cur, sizeof(th->sampled));
				th->has_sampled = true;
			}
			break;
		}
	}
	return 0;
}

/* Section 21: the blob's saved command lines, each COMM record's last name overriding. */
static int p2d_cmdlines(struct p2d *c, const struct tk_perfdata_tracing *t, struct blob *b)
{
	const char *s = t->cmdlines.data;
	uint64_t len = t->cmdlines.len;
	size_t ncomm = c->ncomms;

	for (uint64_t i = 0; i < len;) {
		uint64_t end = i;
		char line[64], *sp;
		long pid;
		size_t n;

		while (end < len && s[end] != '\n')
			end++;
		n = end - i < sizeof(line) - 1 ? (size_t)(end - i) : sizeof(line) - 1;
		memcpy(line, s + i, n);
		line[n] = 0;
		i = end + 1;
		pid = strtol(line, &sp, 10);
		if (sp == line || *sp != ' ' || pid <= 0 || pid > INT32_MAX)
			continue;
		if (p2d_comm(c, (int32_t)pid, sp + 1, strlen(sp + 1)))
			return -ENOMEM;
		/* Saved lines sort before every COMM record's name of the same pid. */
		c->comms[c->ncomms - 1].seq = 0;
	}
	(void)ncomm;
	/*
	 * Then each thread's name at its last sample (what perf showed for
	 * it last), else its last name.
	 */
	for (size_t i = 0; i < c->thread_cap; i++) {
		const struct pthread *th = &c->threads[i];

		if (!th->tid || (!th->has_sampled && !th->has_cur))
			continue;
		if (p2d_comm(c, th->tid, th->has_sampled ? th->sampled : th->cur, 17))
			return -ENOMEM;
	}
	qsort(c->comms, c->ncomms, sizeof(*c->comms), pcomm_cmp);
	blob_u64(b, 0);
	for (size_t i = 0; i < c->ncomms; i++) {
		char line[48];
		int n;

		if (i + 1 < c->ncomms && c->comms[i + 1].pid == c->comms[i].pid)
			continue;
		n = snprintf(line, sizeof(line), "%" PRId32 " %s\n", c->comms[i].pid,
			     c->comms[i].comm);
		blob_put(b, line, (size_t)n);
	}
	if (b->failed)
		return -ENOMEM;
	{
		uint64_t body = b->len - 8;

		memcpy(b->p, &body, 8);
	}
	return 0;
}

static bool text_is(const struct tk_perfdata_text *t, const char *s)
{
	return t->len == strlen(s) && !memcmp(t->data, s, t->len);
}

/* Sections 16..21 from the TRACING_DATA blob. */
static int p2d_metadata(struct p2d *c, struct tk_dat_writer *w, const struct tk_perfdata_tracing *t)
{
	struct blob b = {0};
	uint32_t count = 0, u;
	const char *system;
	struct tk_perfdata_text text;
	int r = 0;

	(void)text_is;
	blob_put(&b, "header_page", 12);
	blob_u64(&b, t->header_page.len);
	blob_put(&b, t->header_page.data, t->header_page.len);
	blob_put(&b, "header_event", 13);
	blob_u64(&b, t->header_event.len);
	blob_put(&b, t->header_event.data, t->header_event.len);
	if (b.failed || tk_dat_writer_add_metadata(w, TK_DAT_SECTION_HEADER_INFO, b.p, b.len) < 0)
		goto fail;

	/* 17: the ftrace system's formats. */
	b.len = 0;
	blob_u32(&b, 0);
	for (uint32_t i = 0; tk_perfdata_tracing_format(c->pd, i, &system, &text) == 0; i++) {
		if (strcmp(system, "ftrace"))
			continue;
		blob_u64(&b, text.len);
		blob_put(&b, text.data, text.len);
		count++;
	}
	if (b.failed)
		goto fail;
	memcpy(b.p, &count, 4);
	if (tk_dat_writer_add_metadata(w, TK_DAT_SECTION_FTRACE_EVENTS, b.p, b.len) < 0)
		goto fail;

	/* 18: the other systems, each run of formats of one system as a group. */
	b.len = 0;
	blob_u32(&b, 0);
	count = 0;
	for (uint32_t i = 0; tk_perfdata_tracing_format(c->pd, i, &system, &text) == 0;) {
		size_t count_at;
		uint32_t n = 0;
		const char *sys = system;

		if (!strcmp(sys, "ftrace")) {
			i++;
			continue;
		}
		blob_put(&b, sys, strlen(sys) + 1);
		count_at = b.len;
		blob_u32(&b, 0);
		while (tk_perfdata_tracing_format(c->pd, i, &system, &text) == 0 &&
		       !strcmp(system, sys)) {
			blob_u64(&b, text.len);
			blob_put(&b, text.data, text.len);
			n++;
			i++;
		}
		if (b.failed)
			goto fail;
		memcpy(b.p + count_at, &n, 4);
		count++;
	}
	if (b.failed)
		goto fail;
	memcpy(b.p, &count, 4);
	if (tk_dat_writer_add_metadata(w, TK_DAT_SECTION_EVENT_FORMATS, b.p, b.len) < 0)
		goto fail;

	b.len = 0;
	u = (uint32_t)t->kallsyms.len;
	blob_u32(&b, u);
	blob_put(&b, t->kallsyms.data, u);
	if (b.failed || tk_dat_writer_add_metadata(w, TK_DAT_SECTION_KALLSYMS, b.p, b.len) < 0)
		goto fail;
	b.len = 0;
	u = (uint32_t)t->printk.len;
	blob_u32(&b, u);
	blob_put(&b, t->printk.data, u);
	if (b.failed || tk_dat_writer_add_metadata(w, TK_DAT_SECTION_PRINTK, b.p, b.len) < 0)
		goto fail;
	b.len = 0;
	if (p2d_cmdlines(c, t, &b) < 0 ||
	    tk_dat_writer_add_metadata(w, TK_DAT_SECTION_CMDLINES, b.p, b.len) < 0)
		goto fail;
	free(b.p);
	return 0;
fail:
	if (b.failed)
		c->oom = true;
	r = -1;
	free(b.p);
	return r;
}

static int pcpu_cmp(const void *a, const void *b)
{
	const struct pcpu *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* One CPU's records packed into pages, written in batches. */
static int p2d_write_cpu(struct p2d *c, struct tk_dat_writer *w, const struct tk_page_format *fmt,
			 struct pcpu *p)
{
	const uint32_t batch_pages =
		BATCH_BYTES / fmt->page_size ? BATCH_BYTES / fmt->page_size : 1;
	uint8_t *pages = malloc((size_t)batch_pages * fmt->page_size);
	struct tk_page_writer pw;
	uint32_t npages = 0;
	bool open = false;
	int r = 0;

	if (!pages || p2d_sort(p) < 0) {
		free(pages);
		c->oom = true;
		return -ENOMEM;
	}
	if (tk_dat_writer_begin_cpu(w, p->cpu) < 0)
		goto fail;
	for (size_t i = 0; i < p->n; i++) {
		const struct praw *e = &p->ents[i];

		if (open) {
			r = tk_page_writer_add(&pw, e->time, p->bytes + e->off, e->size);
			if (r == 0)
				continue;
			if (r != -ENOSPC)
				goto fail;
			tk_page_writer_finish(&pw);
			open = false;
			if (++npages == batch_pages) {
				if (tk_dat_writer_write_pages(
					    w, pages, (uint64_t)npages * fmt->page_size) < 0)
					goto fail;
				npages = 0;
			}
		}
		if (tk_page_writer_init(&pw, fmt, pages + (size_t)npages * fmt->page_size, e->time))
			goto fail;
		open = true;
		r = tk_page_writer_add(&pw, e->time, p->bytes + e->off, e->size);
		if (r == -ENOSPC) {
			/* Larger than a page's data area: no ring buffer could hold it. */
			c->skipped_big++;
			open = false;
			continue;
		}
		if (r < 0)
			goto fail;
	}
	if (open) {
		tk_page_writer_finish(&pw);
		npages++;
	}
	if (npages && tk_dat_writer_write_pages(w, pages, (uint64_t)npages * fmt->page_size) < 0)
		goto fail;
	if (tk_dat_writer_end_cpu(w) < 0)
		goto fail;
	free(pages);
	return 0;
fail:
	free(pages);
	return -1;
}

/* The trace clock name trace-cmd knows for the file's clock. */
static const char *p2d_clock(struct tk_perfdata *pd)
{
	const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, 0);

	for (size_t i = 0; e && (e->attr.flags & TK_PERF_ATTR_FLAG_USE_CLOCKID) &&
			   i < sizeof(trace_clocks) / sizeof(trace_clocks[0]);
	     i++)
		if (e->attr.clockid == trace_clocks[i].id)
			return trace_clocks[i].name;
	/* perf's default clock is the kernel's local_clock(), trace clock "perf". */
	return "perf";
}

static int perf_into_dat(struct p2d *c, struct convert *cv, int fd)
{
	struct tk_perfdata_tracing t;
	struct tk_dat_writer_opts opts = {0};
	struct tk_page_format fmt;
	struct tk_dat_writer *w;
	const struct tk_perfdata_host *host = tk_perfdata_get_host(c->pd);
	uint32_t ncpu = 0;
	int r;

	if (tk_perfdata_tracing(c->pd, &t, NULL, NULL) < 0)
		return cli_error(
			"%s: no TRACING_DATA: the file has no tracepoint events to convert", c->in);
	if (tk_page_format_parse(&fmt, t.header_page.data, t.header_page.len, t.big_endian) < 0)
		return cli_lib_error(c->in);
	if (p2d_collect(c) < 0)
		return c->oom ? cli_error("out of memory") : cli_lib_error(c->in);
	if (p2d_names(c) < 0)
		return cli_error("out of memory");
	if (!c->samples)
		return cli_error("%s: no tracepoint samples to convert", c->in);
	qsort(c->cpus, c->ncpus, sizeof(*c->cpus), pcpu_cmp);
	ncpu = c->cpus[c->ncpus - 1].cpu + 1;
	if (host->has_nrcpus && host->nr_cpus_avail > ncpu)
		ncpu = host->nr_cpus_avail;

	opts.version = cv->version;
	opts.compression = cv->compression;
	opts.big_endian = t.big_endian;
	opts.long_size = t.long_size;
	opts.page_size = fmt.page_size;
	w = tk_dat_writer_open_fd(fd, c->out, &opts);
	if (!w)
		return cli_lib_error(c->out);
	r = p2d_metadata(c, w, &t);
	if (r == 0 && host->osrelease) {
		char uname[512];
		int n = snprintf(uname, sizeof(uname), "Linux %s %s %s",
				 host->hostname ? host->hostname : "", host->osrelease,
				 host->arch ? host->arch : "");

		if (n > 0 && (size_t)n < sizeof(uname))
			r = tk_dat_writer_add_option(w, TK_DAT_OPTION_UNAME, uname,
						     (uint32_t)n + 1);
	}
	if (r == 0)
		r = tk_dat_writer_begin_buffer(w, "", p2d_clock(c->pd), fmt.page_size, ncpu);
	for (size_t i = 0; r == 0 && i < c->ncpus; i++) {
		r = p2d_write_cpu(c, w, &fmt, &c->cpus[i]);
		cv->pages++;
	}
	if (r == 0)
		r = tk_dat_writer_end_buffer(w);
	if (r == 0)
		r = tk_dat_writer_finish(w);
	tk_dat_writer_free(w);
	if (r < 0)
		return c->oom ? cli_error("out of memory") : cli_lib_error(c->out);
	return CLI_OK;
}

static int perf_to_dat(struct convert *cv, bool quiet)
{
	struct p2d c = {.in = cv->in, .out = cv->out};
	struct temp_output t;
	uint64_t size;
	int r;

	r = output_begin(cv, &t);
	if (r != CLI_OK)
		goto out;
	c.pd = tk_perfdata_open(cv->in);
	if (!c.pd) {
		r = cli_lib_error(cv->in);
		goto out;
	}
	r = perf_into_dat(&c, cv, t.fd);
	if (r == CLI_OK)
		r = output_commit(cv, &t, &size);
	if (r != CLI_OK)
		goto out;
	if (c.skipped_other)
		fprintf(stderr,
			"tracekit convert: %s: %" PRIu64 " samples of non-tracepoint "
			"events skipped\n",
			cv->in, c.skipped_other);
	if (c.skipped_bad || c.skipped_big)
		fprintf(stderr,
			"tracekit convert: %s: %" PRIu64 " tracepoint samples without a "
			"usable raw payload skipped\n",
			cv->in, c.skipped_bad + c.skipped_big);
	if (!quiet)
		fprintf(stderr,
			"tracekit convert: %s -> %s: %" PRIu64 " samples on %zu CPUs, "
			"%.2f MB\n",
			cv->in, cv->out, c.samples - c.skipped_big, c.ncpus, (double)size / 1e6);
out:
	output_end(&t);
	for (size_t i = 0; i < c.ncpus; i++) {
		free(c.cpus[i].bytes);
		free(c.cpus[i].ents);
	}
	free(c.cpus);
	free(c.comms);
	free(c.threads);
	free(c.sband);
	tk_perfdata_close(c.pd);
	return r;
}

/* Whether @path starts with perf.data's magic. */
static bool is_perf_data(const char *path)
{
	char magic[8];
	FILE *f = fopen(path, "rb");
	bool yes;

	if (!f)
		return false;
	yes = fread(magic, 1, 8, f) == 8 && !memcmp(magic, "PERFILE2", 8);
	fclose(f);
	return yes;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

int cmd_convert(int argc, char **argv)
{
	enum { OPT_FILE_VERSION = 256, OPT_COMPRESSION, OPT_TO };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"output", required_argument, NULL, 'o'},
		{"file-version", required_argument, NULL, OPT_FILE_VERSION},
		{"compression", required_argument, NULL, OPT_COMPRESSION},
		{"quiet", no_argument, NULL, 'q'},
		{"to", required_argument, NULL, OPT_TO},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct convert cv = {.version = 7};
	const char *codec = NULL, *to = NULL;
	bool quiet = false;
	int c;

	while ((c = getopt_long(argc, argv, ":i:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (cv.in)
				return cli_usage_error("more than one input file");
			cv.in = optarg;
			break;
		case 'o':
			if (cv.out)
				return cli_usage_error("more than one output file");
			cv.out = optarg;
			break;
		case OPT_FILE_VERSION:
			if (!strcmp(optarg, "6"))
				cv.version = 6;
			else if (!strcmp(optarg, "7"))
				cv.version = 7;
			else
				return cli_usage_error("file version must be 6 or 7, not '%s'",
						       optarg);
			break;
		case OPT_COMPRESSION:
			codec = optarg;
			break;
		case OPT_TO:
			if (strcmp(optarg, "perf") && strcmp(optarg, "dat"))
				return cli_usage_error("--to takes perf or dat, not '%s'", optarg);
			to = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(cmd_convert_usage, stdout);
			return cli_finish_stdout(CLI_OK);
		default:
			return cli_bad_option(c, argv);
		}
	}
	for (; optind < argc; optind++) {
		if (cv.in)
			return cli_usage_error("more than one input file");
		cv.in = argv[optind];
	}
	if (!cv.in)
		return cli_usage_error("no input file");
	if (!cv.out)
		return cli_usage_error("no output file (-o OUT)");
	if (is_perf_data(cv.in)) {
		if (to && !strcmp(to, "perf"))
			return cli_usage_error("%s is already a perf.data file", cv.in);
		if (!codec)
			cv.compression = cv.version == 6 ? TK_COMPRESS_NONE : TK_COMPRESS_ZSTD;
		else if (tk_compression_from_name(codec, &cv.compression) < 0)
			return cli_usage_error("unknown compression '%s' (zstd, zlib or none)",
					       codec);
		if (cv.version == 6 && cv.compression != TK_COMPRESS_NONE)
			return cli_usage_error(
				"file version 6 cannot be compressed (use --compression "
				"none or --file-version 7)");
		return perf_to_dat(&cv, quiet);
	}
	if (to ? !strcmp(to, "perf") : ends_with(cv.out, ".data"))
		return dat_to_perf(&cv, quiet);

	if (!codec) {
		cv.compression = cv.version == 6 ? TK_COMPRESS_NONE : TK_COMPRESS_ZSTD;
	} else if (tk_compression_from_name(codec, &cv.compression) < 0) {
		return cli_usage_error("unknown compression '%s' (zstd, zlib or none)", codec);
	}
	if (cv.version == 6 && cv.compression != TK_COMPRESS_NONE)
		return cli_usage_error("file version 6 cannot be compressed (use --compression "
				       "none or --file-version 7)");

	return run(&cv, quiet);
}
