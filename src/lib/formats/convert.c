// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * convert: .dat -> .dat (version, codec), .dat -> perf.data and
 * perf.data -> .dat, writing to a descriptor the caller opened.
 *
 * .dat -> .dat copies, in this order:
 *   - metadata sections 16..21: the uncompressed bodies, byte for byte
 *     (tk_dat_metadata -> tk_dat_writer_add_metadata), only those present;
 *   - options: every option in file order except those the writer makes
 *     itself (DONE, BUFFER, STRINGS, 16..22, BUFFER_TEXT), and except a v6
 *     CPUCOUNT that directly follows a BUFFER option: that one belongs to
 *     the instance, and the writer emits the instance's CPU count itself;
 *   - buffers: top first, CPU by CPU in increasing CPU id, pages streamed
 *     from the per-CPU reader into the writer. The reader hands out runs of
 *     checked pages that lie together in one of its blocks (a decoded
 *     chunk, a read of raw data: tk_dat_cpu_reader_next_run()), and the
 *     writer takes them where they lie when it copies anyway (into the
 *     chunks it compresses, or its I/O thread's slots); an uncompressed
 *     output written in this thread gets them gathered in ~1 MiB batches,
 *     since a write() per 40 KiB chunk costs more system time than the
 *     copy. The writer compresses on one thread per CPU it may use (opts
 *     compress_threads) while this thread reads on: v6 -> v7 zstd of
 *     bench-report's 3 M-event file runs at about twice trace-cmd
 *     convert's speed. An uncompressed output of uncompressed input gets
 *     the writer's I/O thread; of compressed input none (see below).
 *     The writer starts the write-back as the data goes out (opts
 *     write_behind) and the caller's tk_output syncs the file behind it
 *     (output.c's notes), so the final fsync() finds little left (1-15 ms
 *     for 125 MB, against 65-115 ms with the write-back alone);
 *   - compressed input with a second CPU, the leapfrog: a CPU's chunks are
 *     read 8 at a time (LEAP_AHEAD) through a reader whose chunks the
 *     prefetch's thread decodes ahead (dat-read.c), then that reader's
 *     window is moved past the next 4 (tk_dat_cpu_reader_seek_ahead()),
 *     which this thread decodes itself through a second reader (a copy of
 *     the first, tk_dat_cpu_reader_dup(): the chunk headers are walked
 *     once), and so on: both CPUs decode, where with the prefetch alone
 *     this thread waited for the decoder at ~85% of the chunks. Both readers are used
 *     by this thread in stream order, so checks, salvage and the damage
 *     list are one reader's; a reader that skips damaged data past the
 *     end of its stretch reads the rest alone. The output is the one
 *     reader's byte for byte (tests/cli/test-convert-leapfrog.sh).
 *     Memory stays bounded by one batch plus the readers' and writer's
 *     own chunk buffers (4 per compressor thread), whatever the file size;
 *   - latency (text) buffers through tk_dat_latency_text.
 * A v6 file must know its instance names before any data, so they are
 * declared first. Its per-CPU table has max(CPU count, highest id + 1)
 * entries: v7 lists only CPUs that had data, v6 needs the full table, one
 * size for all buffers. v6 also needs a top buffer before any instance:
 * a file whose events are all in instances gets an empty one (a table of
 * empty CPUs), which is what trace-cmd convert 3.1.6 writes for it.
 *
 * .dat -> perf.data, for tracepoint events: every event id met in the
 * pages of any buffer becomes one tracepoint attr (config = the id,
 * sample_type IDENTIFIER|TID|TIME|CPU|PERIOD|RAW, one made-up kernel id
 * each); TRACING_DATA is the .dat's metadata laid out as perf's "0.6" blob;
 * each ftrace record becomes a SAMPLE whose RAW payload is the record's
 * payload. All CPUs of all buffers are merged by time (tk_dat_merge), so the
 * file needs no reordering; a FINISHED_ROUND every few thousand samples
 * keeps perf's queue short. The saved command lines become COMM records at
 * time 0, which perf applies before any sample, so perf script names the
 * threads as trace-cmd does for pids that were saved. Two passes over the
 * pages: the first finds the event ids (attrs must precede the data), the
 * second writes the samples.
 *
 * perf.data -> .dat, for tracepoint samples: the metadata comes from the
 * TRACING_DATA feature (perf's "0.6" blob holds the same header page,
 * formats, kallsyms, printk formats and saved command lines as a .dat
 * preamble), laid out as the .dat's sections 16..21. Each tracepoint
 * sample's RAW payload is an ftrace record's payload as the kernel wrote it
 * (common_type first), so it goes into a ring-buffer page unchanged; the
 * sample's CPU picks the page stream and its time the record's timestamp.
 * Samples are collected per CPU and sorted by time (stable: a CPU's samples
 * are nearly always in order already, one run per round at worst), then
 * packed into pages with the page encoder. Memory holds the raw payloads of
 * the whole file: the pages of a CPU must be written in time order, and
 * perf.data interleaves CPUs in rounds.
 *
 * Command names (perf -> dat): perf names a thread by the last COMM record
 * before each sample (a forked thread by its parent's name until then); a
 * .dat has one name per pid (saved_cmdlines). The saved command lines of
 * the blob are kept, and each thread the records name gets the name perf
 * showed at its last sample (its last COMM name when it had no sample). A
 * thread renamed between its samples (exec) so shows its final name
 * throughout. perf applies COMM and FORK records in time order, not file
 * order (each CPU's ring is drained in turn, so a child's FORK can precede
 * its parent's in the file): they are collected with their times and
 * replayed sorted, together with one mark per thread at its last sample.
 * Samples of other events (cpu-clock, ...) have no ftrace payload and are
 * skipped with a count. A sample of an exiting task carries pid -1 in perf
 * (and perf script shows ":-1"), but its payload's common_pid is the real
 * one, which the .dat keeps.
 *
 * Errors: every message names the file it is about (the input's name from
 * its reader, the output's from the caller), so a caller prints it as is.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/convert.h>
#include <tracekit/host.h>
#include <tracekit/tracedata.h>
#include <tracekit/page.h>

#include "dat-read-internal.h"
#include "perfdata-internal.h"
#include "internal/array.h"
#include "internal/bytebuf.h"
#include "internal/error.h"
#include "internal/opts.h"

/* Pages are handed to the writer in batches of about this many bytes. */
#define BATCH_BYTES (1u << 20)

/*
 * The writer compresses chunks on every online CPU while this thread reads
 * and decodes the next ones (the file is the same byte for byte).
 */
static uint32_t compress_threads(void)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	/* The CPUs this process may use (taskset, cpusets), when it says. */
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < n)
		n = CPU_COUNT(&set);
	return n > 1 ? (uint32_t)n : 0;
}

/* The caller's options, with the fields past its struct's size read as zero. */
/* The caller's options (NULL: defaults); Return: 0, or -EINVAL/-E2BIG (message set). */
static int read_opts(const struct tk_convert_opts *opts, struct tk_convert_opts *o)
{
	int r = tk_opts_copy(o, sizeof(*o), opts, "tk_convert_opts");

	return r < 0 ? r : 0;
}

/*
 * Make the last error name @name (the file it is about) unless it does
 * already, or is a bare "out of memory". Return: @r.
 */
static int named(int r, const char *name)
{
	const char *msg = tk_errmsg();

	if (r >= 0)
		r = -EIO;
	if (!msg[0])
		return tk_fail(-r, "%s: unknown error", name);
	if (!strstr(msg, name) && strcmp(msg, "out of memory"))
		tk_fail_prefix(-r, name);
	return r;
}

/* A failure reading one CPU: the buffer and CPU are named unless the reader did. */
static int cpu_failed(int r, const char *in, const char *buffer_name, uint32_t cpu)
{
	char msg[512], word[24];

	named(r, in);
	snprintf(msg, sizeof(msg), "%s", tk_errmsg());
	snprintf(word, sizeof(word), "CPU %u", cpu);
	if (strstr(msg, word)) {
		if (buffer_name && buffer_name[0])
			return tk_fail(-r, "%s (buffer \"%s\")", msg, buffer_name);
		return r;
	}
	if (buffer_name && buffer_name[0])
		return tk_fail(-r, "%s (buffer \"%s\", cpu %u)", msg, buffer_name, cpu);
	return tk_fail(-r, "%s (buffer (top), cpu %u)", msg, cpu);
}

static int oom(void)
{
	return tk_fail(ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------------
 * .dat -> .dat
 */
struct convert {
	const char *in, *out;
	struct tk_dat *dat;
	const struct tk_dat_info *info;
	struct tk_dat_writer *w;
	struct tk_convert_opts opts;
	struct tk_convert_stats *st;
	uint32_t v6_table; /* v6: the one CPU table size of every buffer */
};

static void progress(struct convert *cv, uint64_t extra)
{
	uint64_t done = cv->st->bytes_done;

	if (!cv->opts.progress)
		return;
	cv->st->bytes_done += extra;
	cv->opts.progress(cv->st, cv->opts.progress_ctx);
	cv->st->bytes_done = done;
}

/*
 * The writer's threads: compressors for a compressed output; for an
 * uncompressed one, an I/O thread when the input is uncompressed too (it
 * writes while this thread reads), none when the input is compressed:
 * the decoder thread is then the slower one, this thread waits for it
 * anyway, and writing here straight from the decoded chunk saves a copy
 * and a hand-over per chunk (bench/README.md, stop 22).
 */
static uint32_t writer_threads(const struct convert *cv)
{
	if (cv->opts.compression == TK_COMPRESS_NONE && cv->info->compression != TK_COMPRESS_NONE)
		return 0;
	return compress_threads();
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
			return named(r, cv->in);
		r = tk_dat_writer_add_metadata(cv->w, id, body, len);
		if (r < 0)
			return named(r, cv->out);
	}
	return 0;
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
	bool drop_clock = cv->opts.version == 6 && has_latency_text(cv->dat);

	for (size_t i = 0; i < n; i++) {
		const struct tk_dat_option *o = tk_dat_option_get(cv->dat, i);
		bool skip = writer_makes_option(o->id);
		int r;

		if (o->id == TK_DAT_OPTION_CPUCOUNT && prev == TK_DAT_OPTION_BUFFER)
			skip = true;
		prev = o->id;
		if (o->id == TK_DAT_OPTION_TRACECLOCK && drop_clock) {
			tk_warn("TRACECLOCK option dropped: a v6 latency file cannot carry it");
			skip = true;
		}
		if (skip)
			continue;
		r = tk_dat_writer_add_option(cv->w, o->id, o->data, o->size);
		if (r < 0)
			return named(r, cv->out);
	}
	return 0;
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

	r = tk_dat_latency_text(cv->dat, b, &text);
	if (r < 0)
		return named(r, cv->in);
	r = tk_dat_writer_add_latency_text(cv->w, buf->name, buffer_clock(cv, buf), text.data,
					   text.len);
	free((void *)text.data);
	return r < 0 ? named(r, cv->out) : 0;
}

/*
 * Leapfrog over a compressed CPU stream: LEAP_AHEAD chunks read through
 * the reader whose chunks the prefetch's thread decodes, then LEAP_HERE
 * chunks through a second reader that decodes them in this thread while
 * that thread decodes the next LEAP_AHEAD (a lane's window holds 8).
 */
#define LEAP_AHEAD 8u
#define LEAP_HERE  4u

/* One CPU's copy: where it is, what it reads with. */
struct cpu_copy {
	struct convert *cv;
	const struct tk_dat_cpu_data *cpu;
	uint32_t page_size;
	uint64_t stream_size;
	uint64_t next;	     /* stream offset after the last run written */
	uint64_t unreported; /* bytes written since the last progress call */
	bool skipped;	     /* a run began past @next (skipped damage), or off the grid */
	bool write_failed;   /* the error is the writer's (named after the output) */
	uint8_t *batch;	     /* see put_pages(); NULL: runs go to the writer as they are */
	uint64_t batch_cap, batch_used;
};

/* The pages gathered in the batch to the writer. */
static int flush_batch(struct cpu_copy *cc)
{
	int r = cc->batch_used ? tk_dat_writer_write_pages(cc->cv->w, cc->batch, cc->batch_used)
			       : 0;

	cc->batch_used = 0;
	return r;
}

/*
 * A run of pages to the writer. An uncompressed output written in this
 * thread gets them in ~1 MiB batches: a write() per 40 KiB chunk cost
 * more system time (ext4's per-call work) than the copy into the batch
 * costs. A compressed output (whose writer cuts its own chunks) or one
 * with an I/O thread (which copies into its slots) takes them as they lie.
 */
static int put_pages(struct cpu_copy *cc, const void *pages, uint64_t len)
{
	int r;

	if (cc->batch_used + len > cc->batch_cap || !cc->batch) {
		r = flush_batch(cc);
		if (r < 0)
			return r;
	}
	if (!cc->batch || len >= cc->batch_cap)
		return tk_dat_writer_write_pages(cc->cv->w, pages, len);
	/*
	 * Page by page: glibc copies 4 KiB with rep movsb, but a run of 40-256
	 * KiB with its vector loop, which took ten times the instructions
	 * (callgrind) for no less time.
	 */
	for (uint64_t at = 0; at < len; at += cc->page_size)
		memcpy(cc->batch + cc->batch_used + at, (const uint8_t *)pages + at, cc->page_size);
	cc->batch_used += len;
	return 0;
}

/*
 * Write @reader's runs of pages until the stream offset @end, from where
 * the reader holds them (no copy). Return: 1 at @end, 0 at the stream's
 * end, or an error (message set, named).
 */
static int copy_runs(struct cpu_copy *cc, struct tk_dat_cpu_reader *reader, uint64_t end)
{
	struct convert *cv = cc->cv;
	uint64_t len, off;
	const void *pages;
	int r;

	while (cc->next < end) {
		r = tk_dat_cpu_reader_next_run(reader, &pages, &len, &off);
		if (r <= 0)
			return r;
		if (off != cc->next)
			cc->skipped = true;
		cv->st->pages += len / cc->page_size;
		r = put_pages(cc, pages, len);
		if (r < 0) {
			cc->write_failed = true;
			return named(r, cv->out);
		}
		cc->next = off + len;
		cc->unreported += len;
		if (cc->unreported >= BATCH_BYTES && cc->stream_size) {
			cc->unreported = 0;
			progress(cv, (uint64_t)((double)cc->cpu->size * (double)cc->next /
						(double)cc->stream_size));
		}
	}
	return 1;
}

/*
 * The leapfrog (LEAP_AHEAD): @ahead's chunks come decoded from the
 * prefetch's thread, @here's are decoded in this one meanwhile. Both
 * readers are used by this thread in stream order, so checks, salvage
 * and damage records come in the order one reader gives them. A reader
 * that skips damaged data may step over the end of its stretch: the
 * rest is then read by that reader alone, in order.
 */
static int copy_leapfrog(struct cpu_copy *cc, struct tk_dat_cpu_reader *ahead,
			 struct tk_dat_cpu_reader *here)
{
	size_t nchunks = tk_dat_cpu_reader_chunk_count(ahead), k = 0;
	struct tk_dat_cpu_reader *last = ahead;
	int r = 1;

	while (k < nchunks && r > 0 && !cc->skipped) {
		size_t mid = k + LEAP_AHEAD, stop = mid + LEAP_HERE;
		uint64_t mid_off = tk_dat_cpu_reader_chunk_offset(ahead, mid);
		uint64_t stop_off = tk_dat_cpu_reader_chunk_offset(ahead, stop);

		last = ahead;
		r = copy_runs(cc, ahead, mid_off);
		if (r <= 0 || cc->skipped || mid >= nchunks)
			break;
		/*
		 * Only where a stretch ends on a page, at the chunk's start, in
		 * the data: a damaged directory (chunks of part pages) is read
		 * by one reader, as the seeks would not meet its page grid.
		 */
		if (cc->next != mid_off || mid_off % cc->page_size || mid_off >= cc->stream_size ||
		    (stop < nchunks && (stop_off % cc->page_size || stop_off >= cc->stream_size))) {
			cc->skipped = true;
			break;
		}
		/* The decoder goes on past this thread's stretch while it decodes that. */
		if (stop < nchunks) {
			r = tk_dat_cpu_reader_seek_ahead(ahead, stop_off);
			if (r < 0)
				break;
		}
		last = here;
		r = tk_dat_cpu_reader_seek(here, cc->next);
		if (r == 0)
			r = copy_runs(cc, here, stop_off);
		if (r > 0 && stop < nchunks && cc->next != stop_off)
			cc->skipped = true;
		k = stop;
	}
	if (r > 0 && cc->skipped) /* the rest in order, by the reader that read last */
		r = copy_runs(cc, last, UINT64_MAX);
	return r;
}

/*
 * Stream one CPU's pages into the writer. Compressed input with a second
 * CPU: chunks are decoded ahead on a thread of their own (dat-read.c's
 * prefetch) and, leapfrogging, in this thread too, while this thread
 * checks pages and the writer writes or compresses them. Failing to set
 * that up only costs speed.
 */
static int copy_cpu(struct convert *cv, size_t b, size_t ci, const struct tk_dat_buffer *buf)
{
	struct cpu_copy cc = {
		.cv = cv, .cpu = &buf->cpus[ci], .page_size = buf->page_format.page_size};
	struct tk_dat_cpu_reader *reader, *here = NULL;
	struct tk_dat_prefetch *pf = NULL;
	int r;

	r = tk_dat_writer_begin_cpu(cv->w, cc.cpu->cpu);
	if (r < 0)
		return named(r, cv->out);
	reader = tk_dat_cpu_reader_new(cv->dat, b, ci);
	if (!reader)
		return cpu_failed(-errno, cv->in, buf->name, cc.cpu->cpu);
	cc.stream_size = tk_dat_cpu_reader_size(reader);
	if (buf->compressed && compress_threads() > 1 &&
	    tk_dat_cpu_reader_chunk_count(reader) > LEAP_AHEAD) {
		pf = tk_dat_prefetch_new(cv->dat, 1);
		here = pf ? tk_dat_cpu_reader_dup(reader) : NULL;
		if (!here ||
		    (tk_dat_prefetch_attach(pf, reader) < 0 || tk_dat_prefetch_start(pf) < 0)) {
			tk_dat_cpu_reader_free(reader);
			tk_dat_cpu_reader_free(here);
			tk_dat_prefetch_free(pf);
			pf = NULL;
			here = NULL;
			reader = tk_dat_cpu_reader_new(cv->dat, b, ci);
			if (!reader)
				return cpu_failed(-errno, cv->in, buf->name, cc.cpu->cpu);
		}
	}
	if (cv->opts.compression == TK_COMPRESS_NONE && writer_threads(cv) <= 1) {
		cc.batch_cap = BATCH_BYTES - BATCH_BYTES % cc.page_size;
		cc.batch = cc.batch_cap ? malloc(cc.batch_cap) : NULL;
		if (cc.batch_cap && !cc.batch) {
			r = oom();
			goto out;
		}
	}
	r = here ? copy_leapfrog(&cc, reader, here) : copy_runs(&cc, reader, UINT64_MAX);
	if (r >= 0 && (r = flush_batch(&cc)) < 0) {
		cc.write_failed = true;
		r = named(r, cv->out);
	}
	if (r < 0) {
		if (!cc.write_failed)
			r = cpu_failed(r, cv->in, buf->name, cc.cpu->cpu);
		goto out;
	}
	r = tk_dat_writer_end_cpu(cv->w);
	if (r < 0)
		r = named(r, cv->out);
	cv->st->bytes_done += cc.cpu->size;
out:
	free(cc.batch);
	tk_dat_cpu_reader_free(here);
	tk_dat_cpu_reader_free(reader);
	tk_dat_prefetch_free(pf);
	return r;
}

static int compare_cpu_index(const void *a, const void *b, void *arg)
{
	const struct tk_dat_cpu_data *cpus = arg;
	uint32_t x = cpus[*(const size_t *)a].cpu, y = cpus[*(const size_t *)b].cpu;

	return x < y ? -1 : x > y;
}

/* The CPU table size a buffer needs: the file's CPU count or its highest id + 1. */
static int buffer_table(const struct convert *cv, const struct tk_dat_buffer *buf, uint32_t *table)
{
	*table = cv->info->cpu_count;
	for (size_t i = 0; i < buf->cpu_count; i++) {
		if (buf->cpus[i].cpu < *table)
			continue;
		if (buf->cpus[i].cpu == UINT32_MAX) {
			if (buf->name[0])
				return tk_fail(EBADMSG,
					       "%s: buffer \"%s\": cpu id %u is out of range",
					       cv->in, buf->name, buf->cpus[i].cpu);
			return tk_fail(EBADMSG, "%s: buffer (top): cpu id %u is out of range",
				       cv->in, buf->cpus[i].cpu);
		}
		*table = buf->cpus[i].cpu + 1;
	}
	return 0;
}

static int copy_page_buffer(struct convert *cv, size_t b, const struct tk_dat_buffer *buf)
{
	uint32_t page_size = buf->page_format.page_size;
	size_t *order = NULL;
	uint32_t table;
	int r;

	if (page_size == 0) {
		if (buf->name[0])
			return tk_fail(EBADMSG, "%s: buffer \"%s\" has page size 0", cv->in,
				       buf->name);
		return tk_fail(EBADMSG, "%s: buffer (top) has page size 0", cv->in);
	}
	r = buffer_table(cv, buf, &table);
	if (r < 0)
		return r;
	if (cv->opts.version == 6)
		table = cv->v6_table;
	order = calloc(buf->cpu_count ? buf->cpu_count : 1, sizeof(*order));
	if (!order) {
		r = oom();
		goto out;
	}

	/* The writer wants CPUs in increasing order; the file may list them in any. */
	for (size_t i = 0; i < buf->cpu_count; i++)
		order[i] = i;
	qsort_r(order, buf->cpu_count, sizeof(*order), compare_cpu_index, (void *)buf->cpus);

	r = tk_dat_writer_begin_buffer(cv->w, buf->name, buffer_clock(cv, buf), page_size, table);
	if (r < 0) {
		r = named(r, cv->out);
		goto out;
	}
	for (size_t i = 0; i < buf->cpu_count && r == 0; i++)
		r = copy_cpu(cv, b, order[i], buf);
	if (r == 0) {
		r = tk_dat_writer_end_buffer(cv->w);
		if (r < 0)
			r = named(r, cv->out);
	}
out:
	free(order);
	return r;
}

/*
 * v6 only: declare the instances (their names go into the options, before
 * any data), size the one CPU table, and write an empty top buffer when the
 * file has none, as trace-cmd does.
 */
static int v6_prepare(struct convert *cv)
{
	size_t n = tk_dat_buffer_count(cv->dat);
	const struct tk_dat_buffer *first = NULL;
	bool have_top = false;
	int r;

	cv->v6_table = cv->info->cpu_count;
	for (size_t b = 0; b < n; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(cv->dat, b);
		uint32_t table;

		if (buf->latency_text)
			continue;
		r = buffer_table(cv, buf, &table);
		if (r < 0)
			return r;
		if (table > cv->v6_table)
			cv->v6_table = table;
		if (!first)
			first = buf;
		if (!buf->name[0]) {
			have_top = true;
			continue;
		}
		r = tk_dat_writer_declare_buffer(cv->w, buf->name);
		if (r < 0)
			return named(r, cv->out);
	}
	if (have_top || (!first && n))
		return 0;
	/*
	 * No page buffer, or only instances: v6 still needs the top table. A
	 * file without any buffer (a salvaged one that lost its BUFFER
	 * options) gets an empty one as wide as its CPU count says, so the
	 * count and the table agree.
	 */
	r = tk_dat_writer_begin_buffer(cv->w, "", first ? buffer_clock(cv, first) : "local",
				       cv->info->page_size, cv->v6_table);
	if (r == 0)
		r = tk_dat_writer_end_buffer(cv->w);
	return r < 0 ? named(r, cv->out) : 0;
}

static int copy_buffers(struct convert *cv)
{
	size_t n = tk_dat_buffer_count(cv->dat);
	int r;

	if (cv->opts.version == 6) {
		r = v6_prepare(cv);
		if (r < 0)
			return r;
	}
	for (size_t b = 0; b < n; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(cv->dat, b);

		if (buf->latency_text)
			r = copy_text_buffer(cv, b, buf);
		else
			r = copy_page_buffer(cv, b, buf);
		if (r < 0)
			return r;
		cv->st->buffers++;
	}
	return 0;
}

int tk_convert_dat_to_dat(struct tk_dat *in, int fd, const char *name,
			  const struct tk_convert_opts *opts, struct tk_convert_stats *stats)
{
	struct tk_convert_stats own = {0};
	struct convert cv = {
		.in = tk_dat_get_info(in)->path,
		.out = name,
		.dat = in,
		.info = tk_dat_get_info(in),
		.st = stats ? stats : &own,
	};
	struct tk_dat_writer_opts wo;
	int r;

	r = read_opts(opts, &cv.opts);
	if (r < 0)
		return r;
	wo = (struct tk_dat_writer_opts){
		.sz = sizeof(wo),
		.version = cv.opts.version ? cv.opts.version : 7,
		.compression = cv.opts.compression,
		.compression_level = cv.opts.compression_level,
		.big_endian = cv.info->big_endian,
		.long_size = cv.info->long_size,
		.page_size = cv.info->page_size,
		.write_behind = true,
		.compress_threads = writer_threads(&cv),
	};
	cv.opts.version = wo.version;
	memset(cv.st, 0, sizeof(*cv.st));
	for (size_t b = 0; b < tk_dat_buffer_count(in); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(in, b);

		for (uint32_t i = 0; i < buf->cpu_count; i++)
			cv.st->bytes_total += buf->cpus[i].size;
	}
	cv.w = tk_dat_writer_open_fd(fd, name, &wo);
	if (!cv.w)
		return named(-errno, name);
	r = copy_metadata(&cv);
	if (r == 0)
		r = copy_options(&cv);
	if (r == 0)
		r = copy_buffers(&cv);
	if (r == 0) {
		r = tk_dat_writer_finish(cv.w);
		if (r < 0)
			r = named(r, name);
	}
	tk_dat_writer_close(cv.w);
	return r;
}

/* ------------------------------------------------------------------------
 * perf.data -> .dat: what is collected from the records
 */
struct praw {
	uint64_t time;
	uint64_t off; /* into the CPU's byte store */
	uint32_t size;
};

struct pcpu {
	uint32_t cpu;
	struct tk_bytebuf raw; /* the records' bytes, in file order */
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
	struct praw *e = tk_array_grow(p->ents, &p->cap_ents, p->n, sizeof(*e), 4096);

	if (!e)
		return -ENOMEM;
	p->ents = e;
	if (tk_bytebuf_reserve(&p->raw, size) < 0)
		return -ENOMEM;
	if (p->n && time < p->ents[p->n - 1].time)
		p->unsorted = true;
	p->ents[p->n++] = (struct praw){.time = time, .off = p->raw.len, .size = size};
	tk_bytebuf_put(&p->raw, raw, size);
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
	e = tk_array_grow(c->comms, &c->comm_cap, c->ncomms, sizeof(*e), 256);
	if (!e)
		return -ENOMEM;
	c->comms = e;
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

	e = tk_array_grow(c->sband, &c->sband_cap, c->nsband, sizeof(*e), 1024);
	if (!e)
		return NULL;
	c->sband = e;
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
		struct tk_perf_comm comm;
		struct tk_perf_task task;

		if (rec.type == TK_PERF_RECORD_COMM) {
			if (tk_perfdata_parse_comm(&rec, &comm) < 0 || (int32_t)comm.tid <= 0)
				continue;
			e = p2d_sband(c, SB_COMM, sband_time(c, &rec));
			if (!e)
				goto oom;
			e->tid = (int32_t)comm.tid;
			name_copy(e->comm, comm.comm, comm.len);
			continue;
		}
		if (rec.type == TK_PERF_RECORD_FORK && tk_perfdata_parse_task(&rec, &task) == 0) {
			e = p2d_sband(c, SB_FORK, task.time);
			if (!e)
				goto oom;
			e->tid = (int32_t)task.tid;
			e->ptid = (int32_t)task.ptid;
			continue;
		}
		if (rec.type != TK_PERF_RECORD_SAMPLE)
			continue;
		r = tk_perfdata_parse_sample(c->pd, &rec, &s);
		if (r == -ENOENT) {
			c->skipped_other++;
			continue;
		}
		if (r == -EBADMSG) {
			/* Too short for its fields: one sample lost, listed as damage. */
			r = tk_perfdata_note_damage(c->pd, rec.offset, rec.size, 1, tk_errmsg());
			if (r < 0)
				return r;
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
	if (c->nsband > 1) /* qsort() of a NULL array is undefined, even of none */
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

/* ========================================================================
 * The tracing metadata. Both containers hold the same texts (tracedata.h):
 * a conversion copies the input's tracedata into a new one, with the
 * formats of the events it converts (.dat -> perf.data) or with the command
 * lines the COMM records imply (perf.data -> .dat), and the writer encodes
 * it in its own container's layout.
 * ========================================================================
 */
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

/* Whether format @t is of an event the converted file uses (@used by id). */
static bool format_used(const struct tk_text *t, const int *used)
{
	char buf[32];
	unsigned long id;

	if (!format_value(t->data, t->len, "ID:", buf, sizeof(buf)))
		return false;
	id = strtoul(buf, NULL, 10);
	return id < 65536 && used[id] >= 0;
}

/*
 * A copy of @src in its layout; with @used, the formats of used events
 * only, as perf record writes TRACING_DATA. Copying every format of a .dat
 * made perf script print parse errors such as "expected type 4 but read
 * 5": perf 6.1 parses formats with its own older copy of libtraceevent,
 * which fails on some formats newer kernels have (ftrace's, kvm's).
 * Return: the copy, or NULL (out of memory).
 */
static struct tk_tracedata *copy_tracedata(const struct tk_tracedata *src, const int *used)
{
	struct tk_tracedata *td = tk_tracedata_new();
	uint32_t page_size;
	uint8_t long_size;
	struct tk_text t;
	bool big;
	int r = 0;

	if (!td)
		return NULL;
	tk_tracedata_layout(src, &big, &long_size, &page_size);
	r = tk_tracedata_set_layout(td, big, long_size, page_size);
	if (!r && !tk_tracedata_header_page(src, &t))
		r = tk_tracedata_set_header_page(td, t.data, t.len);
	if (!r && !tk_tracedata_header_event(src, &t))
		r = tk_tracedata_set_header_event(td, t.data, t.len);
	for (size_t i = 0; !r && i < tk_tracedata_ftrace_count(src); i++) {
		if (!tk_tracedata_ftrace_format(src, i, &t) && (!used || format_used(&t, used)))
			r = tk_tracedata_add_ftrace_format(td, t.data, t.len);
	}
	for (size_t s = 0; !r && s < tk_tracedata_system_count(src); s++) {
		const char *name = tk_tracedata_system_name(src, s);

		for (size_t i = 0; !r && i < tk_tracedata_system_format_count(src, s); i++) {
			if (!tk_tracedata_system_format(src, s, i, &t) &&
			    (!used || format_used(&t, used)))
				r = tk_tracedata_add_format(td, name, t.data, t.len);
		}
	}
	if (!r && !tk_tracedata_kallsyms(src, &t))
		r = tk_tracedata_set_kallsyms(td, t.data, t.len);
	if (!r && !tk_tracedata_printk(src, &t))
		r = tk_tracedata_set_printk(td, t.data, t.len);
	if (!r && !tk_tracedata_cmdlines(src, &t))
		r = tk_tracedata_set_cmdlines(td, t.data, t.len);
	if (r) {
		tk_tracedata_free(td);
		return NULL;
	}
	return td;
}

/*
 * The .dat's command lines: the blob's saved lines, then each thread's
 * name at its last sample (what perf showed for it last), else its last
 * name; one line per pid, the last name winning.
 */
static int p2d_cmdlines(struct p2d *c, struct tk_tracedata *td)
{
	struct tk_bytebuf b;
	struct tk_text t;
	const char *s;
	uint64_t len;
	int r;

	if (tk_tracedata_cmdlines(td, &t))
		t.len = 0;
	s = t.data;
	len = t.len;
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
	for (size_t i = 0; i < c->thread_cap; i++) {
		const struct pthread *th = &c->threads[i];

		if (!th->tid || (!th->has_sampled && !th->has_cur))
			continue;
		if (p2d_comm(c, th->tid, th->has_sampled ? th->sampled : th->cur, 17))
			return -ENOMEM;
	}
	if (c->ncomms > 1) /* qsort() of a NULL array is undefined, even of none */
		qsort(c->comms, c->ncomms, sizeof(*c->comms), pcomm_cmp);
	tk_bytebuf_init(&b, false);
	for (size_t i = 0; i < c->ncomms; i++) {
		char line[48];
		int n;

		if (i + 1 < c->ncomms && c->comms[i + 1].pid == c->comms[i].pid)
			continue;
		n = snprintf(line, sizeof(line), "%" PRId32 " %s\n", c->comms[i].pid,
			     c->comms[i].comm);
		tk_bytebuf_put(&b, line, (size_t)n);
	}
	r = tk_bytebuf_error(&b);
	if (!r)
		r = tk_tracedata_set_cmdlines(td, b.data, b.len);
	tk_bytebuf_release(&b);
	return r;
}

/* Sections 16..21 from the perf.data's TRACING_DATA, with the merged command lines. */
static int p2d_metadata(struct p2d *c, struct tk_dat_writer *w)
{
	struct tk_tracedata *td = copy_tracedata(tk_perfdata_get_tracedata(c->pd), NULL);
	int r;

	if (!td) {
		c->oom = true;
		return -ENOMEM;
	}
	r = p2d_cmdlines(c, td);
	if (r == -ENOMEM)
		c->oom = true;
	if (!r)
		r = tk_dat_writer_add_tracedata(w, td);
	tk_tracedata_free(td);
	return r;
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

/* ------------------------------------------------------------------------
 * .dat -> perf.data
 */
#define PERF_SAMPLE_BITS                                                                           \
	(TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |                    \
	 TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD | TK_PERF_SAMPLE_RAW)
#define PERF_ID_BASE 1000u
#define ROUND_EVERY  4096u

/* The saved command lines as COMM records at time 0. */
static int write_comms(struct tk_perfdata_writer *w, struct tk_dat *dat)
{
	struct tk_dat_text t;
	size_t i = 0;

	if (tk_dat_cmdlines(dat, &t))
		return 0;
	while (i < t.len) {
		size_t end = i, n;
		char line[64];
		char *sp, *endp;
		long pid;
		int r;

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
		struct tk_perf_sample id = {.pid = (uint32_t)pid, .tid = (uint32_t)pid};

		r = tk_perfdata_writer_add_comm(w, (uint32_t)pid, (uint32_t)pid, sp + 1, false,
						&id);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The buffer whose clock the samples' times are on: the first with CPU data. */
static const struct tk_dat_buffer *clock_buffer(const struct tk_dat *dat)
{
	const struct tk_dat_buffer *first = NULL;

	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		if (buf->latency_text)
			continue;
		if (buf->cpu_count)
			return buf;
		if (!first)
			first = buf;
	}
	return first;
}

/* Pass 1: one tracepoint attr per event id met, in order of first appearance. */
static int d2p_attrs(struct tk_dat *dat, struct tk_perfdata_writer *w, const char *out,
		     int *attr_of, int32_t clockid, uint64_t *nattrs)
{
	struct tk_dat_merge *m = tk_dat_merge_new(dat, NULL, 0);
	struct tk_dat_merge_record mr;
	int r;

	if (!m)
		return named(-errno, tk_dat_get_info(dat)->path);
	while ((r = tk_dat_merge_next(m, &mr)) == 1) {
		struct tk_perf_attr a;
		uint64_t kid = PERF_ID_BASE + *nattrs;
		char name[256];
		uint16_t id;

		if (mr.rec.size < 2)
			continue;
		memcpy(&id, mr.rec.data, 2);
		if (attr_of[id] >= 0)
			continue;
		tk_perfdata_attr_tracepoint(&a, id, PERF_SAMPLE_BITS);
		if (clockid >= 0) {
			a.flags |= TK_PERF_ATTR_FLAG_USE_CLOCKID;
			a.clockid = clockid;
		}
		if (!dat_event_name(dat, id, name, sizeof(name)))
			snprintf(name, sizeof(name), "unknown:%u", id);
		r = tk_perfdata_writer_add_attr(w, &a, name);
		if (r >= 0) {
			attr_of[id] = r;
			r = tk_perfdata_writer_add_ids(w, (size_t)r, &kid, 1);
		}
		if (r < 0) {
			r = named(r, out);
			break;
		}
		(*nattrs)++;
	}
	if (r < 0 && !strstr(tk_errmsg(), out))
		r = named(r, tk_dat_get_info(dat)->path);
	tk_dat_merge_free(m);
	return r;
}

/* Pass 2: the samples, oldest first across CPUs and buffers. */
static int d2p_samples(struct tk_dat *dat, struct tk_perfdata_writer *w, const char *out,
		       const int *attr_of, struct tk_convert_stats *st,
		       const struct tk_convert_opts *opts)
{
	struct tk_dat_merge *m = tk_dat_merge_new(dat, NULL, 0);
	struct tk_dat_merge_record mr;
	int r;

	if (!m)
		return named(-errno, tk_dat_get_info(dat)->path);
	while ((r = tk_dat_merge_next(m, &mr)) == 1) {
		struct tk_perf_sample s = {0};
		int32_t pid = -1;
		uint16_t id;

		if (mr.rec.size < 2)
			continue;
		memcpy(&id, mr.rec.data, 2);
		if (mr.rec.size >= 8)
			memcpy(&pid, (const uint8_t *)mr.rec.data + 4, 4);
		s.pid = s.tid = (uint32_t)pid;
		s.time = mr.ts;
		s.cpu = mr.cpu;
		s.period = 1;
		s.raw = mr.rec.data;
		s.raw_size = mr.rec.size;
		r = tk_perfdata_writer_add_sample(w, (size_t)attr_of[id], &s);
		if (r == -E2BIG)
			continue; /* no perf record can hold it */
		if (r < 0) {
			r = named(r, out);
			break;
		}
		if (++st->samples % ROUND_EVERY == 0) {
			r = tk_perfdata_writer_add_round(w);
			if (r < 0) {
				r = named(r, out);
				break;
			}
			if (opts->progress)
				opts->progress(st, opts->progress_ctx);
		}
	}
	if (r < 0 && !strstr(tk_errmsg(), out))
		r = named(r, tk_dat_get_info(dat)->path);
	tk_dat_merge_free(m);
	return r;
}

/*
 * HOSTNAME, OSRELEASE, VERSION, ARCH and NRCPUS of the machine the .dat was
 * recorded on, from its UNAME option ("sysname nodename release version
 * machine", the version holding spaces) and CPU count; never this
 * machine's, which did not record it. CMDLINE is what made the file: this
 * process's command line, as perf stores its own for a file it writes.
 */
static int set_recorded_host(struct tk_perfdata_writer *w, const struct tk_dat *in)
{
	const struct tk_dat_info *info = tk_dat_get_info(in);
	struct tk_host *me = tk_host_new();
	struct tk_host h = {0};
	char *u = info->uname ? strdup(info->uname) : NULL;
	int r;

	if (u) {
		char *f[4], *save = NULL, *last = strrchr(u, ' ');

		f[0] = strtok_r(u, " ", &save);
		f[1] = f[0] ? strtok_r(NULL, " ", &save) : NULL;
		f[2] = f[1] ? strtok_r(NULL, " ", &save) : NULL;
		f[3] = f[2] ? save : NULL;
		if (f[2] && last && last + 1 > f[2] + strlen(f[2])) {
			h.sysname = f[0];
			h.hostname = f[1];
			h.osrelease = f[2];
			h.arch = last + 1;
			*last = '\0';
			h.version = f[3] && f[3] < last ? f[3] : NULL;
		}
	}
	h.nr_cpus_avail = h.nr_cpus_online = info->cpu_count;
	if (me) {
		h.exe = me->exe;
		h.argc = me->argc;
		h.argv = me->argv;
	}
	r = tk_perfdata_writer_set_host_facts(w, &h);
	tk_host_free(me);
	free(u);
	return r;
}

int tk_convert_dat_to_perf(struct tk_dat *in, int fd, const char *name,
			   const struct tk_convert_opts *opts, struct tk_convert_stats *stats)
{
	struct tk_convert_opts o;
	struct tk_convert_stats own = {0}, *st = stats ? stats : &own;
	const char *path = tk_dat_get_info(in)->path;
	const struct tk_dat_buffer *buf = clock_buffer(in);
	struct tk_perfdata_writer *w = NULL;
	struct tk_tracedata *td = NULL;
	int *attr_of = NULL;
	int32_t clockid;
	int r;

	r = read_opts(opts, &o);
	if (r < 0)
		return r;
	memset(st, 0, sizeof(*st));
	if (!buf)
		return tk_fail(ENOENT, "%s: no per-CPU event data to convert", path);
	for (size_t i = 0; i < tk_dat_buffer_count(in); i++) {
		const struct tk_dat_buffer *bb = tk_dat_buffer_get(in, i);

		for (uint32_t c = 0; !bb->latency_text && c < bb->cpu_count; c++)
			st->bytes_total += bb->cpus[c].size;
	}
	/*
	 * Times on a clock_gettime() clock are declared as perf -k declares
	 * them (use_clockid, CLOCKID). Not CLOCK_DATA: its reference pair must
	 * be read while recording, and a .dat does not carry one.
	 */
	clockid = dat_clockid(in, buf);
	attr_of = malloc(65536 * sizeof(*attr_of));
	if (!attr_of)
		return oom();
	for (size_t i = 0; i < 65536; i++)
		attr_of[i] = -1;
	w = tk_perfdata_writer_open_fd(fd, name);
	if (!w) {
		r = named(-errno, name);
		goto out;
	}
	r = d2p_attrs(in, w, name, attr_of, clockid, &st->events);
	if (r < 0)
		goto out;
	if (!st->events) {
		r = tk_fail(ENOENT, "%s: no events to convert", path);
		goto out;
	}
	td = copy_tracedata(tk_dat_get_tracedata(in), attr_of);
	if (!td) {
		r = oom();
		goto out;
	}
	r = tk_perfdata_writer_set_tracedata(w, td);
	if (r == 0)
		r = set_recorded_host(w, in);
	if (r == 0 && clockid >= 0)
		r = set_clockid_feature(w, clockid);
	if (r == 0)
		r = write_comms(w, in);
	if (r < 0) {
		r = named(r, name);
		goto out;
	}
	r = d2p_samples(in, w, name, attr_of, st, &o);
	if (r < 0)
		goto out;
	st->bytes_done = st->bytes_total;
	r = tk_perfdata_writer_finish(w);
	if (r < 0)
		r = named(r, name);
out:
	tk_tracedata_free(td);
	free(attr_of);
	tk_perfdata_writer_close(w);
	return r;
}

/* ------------------------------------------------------------------------
 * perf.data -> .dat: writing
 */
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
	r = tk_dat_writer_begin_cpu(w, p->cpu);
	if (r < 0)
		goto fail;
	for (size_t i = 0; i < p->n; i++) {
		const struct praw *e = &p->ents[i];

		if (open) {
			r = tk_page_writer_add(&pw, e->time, p->raw.data + e->off, e->size);
			if (r == 0)
				continue;
			if (r != -ENOSPC)
				goto fail;
			tk_page_writer_finish(&pw);
			open = false;
			if (++npages == batch_pages) {
				r = tk_dat_writer_write_pages(w, pages,
							      (uint64_t)npages * fmt->page_size);
				if (r < 0)
					goto fail;
				npages = 0;
			}
		}
		r = tk_page_writer_init(&pw, fmt, pages + (size_t)npages * fmt->page_size, e->time);
		if (r < 0)
			goto fail;
		open = true;
		r = tk_page_writer_add(&pw, e->time, p->raw.data + e->off, e->size);
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
	if (npages) {
		r = tk_dat_writer_write_pages(w, pages, (uint64_t)npages * fmt->page_size);
		if (r < 0)
			goto fail;
	}
	r = tk_dat_writer_end_cpu(w);
	if (r < 0)
		goto fail;
	free(pages);
	return 0;
fail:
	free(pages);
	return r < 0 ? r : -EIO;
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

static int perf_into_dat(struct p2d *c, int fd, const struct tk_convert_opts *o,
			 struct tk_convert_stats *st)
{
	struct tk_perfdata_tracing t;
	struct tk_dat_writer_opts opts = {.sz = sizeof(struct tk_dat_writer_opts)};
	struct tk_page_format fmt;
	struct tk_dat_writer *w;
	const struct tk_perfdata_host *host = tk_perfdata_get_host(c->pd);
	uint32_t ncpu = 0;
	int r;

	if (tk_perfdata_tracing(c->pd, &t, NULL, NULL) < 0)
		return tk_fail(ENOENT,
			       "%s: no TRACING_DATA: the file has no tracepoint events to convert",
			       c->in);
	r = tk_page_format_parse(&fmt, t.header_page.data, t.header_page.len, t.big_endian);
	if (r < 0)
		return named(r, c->in);
	r = p2d_collect(c);
	if (r < 0)
		return c->oom ? oom() : named(r, c->in);
	if (p2d_names(c) < 0)
		return oom();
	if (!c->samples)
		return tk_fail(ENOENT, "%s: no tracepoint samples to convert", c->in);
	qsort(c->cpus, c->ncpus, sizeof(*c->cpus), pcpu_cmp);
	ncpu = c->cpus[c->ncpus - 1].cpu + 1;
	if (host->has_nrcpus && host->nr_cpus_avail > ncpu)
		ncpu = host->nr_cpus_avail;

	opts.version = o->version ? o->version : 7;
	opts.compression = o->compression;
	opts.compression_level = o->compression_level;
	opts.big_endian = t.big_endian;
	opts.long_size = t.long_size;
	opts.page_size = fmt.page_size;
	opts.write_behind = true;
	w = tk_dat_writer_open_fd(fd, c->out, &opts);
	if (!w)
		return named(-errno, c->out);
	r = p2d_metadata(c, w);
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
		st->pages++;
		if (o->progress)
			o->progress(st, o->progress_ctx);
	}
	if (r == 0)
		r = tk_dat_writer_end_buffer(w);
	if (r == 0)
		r = tk_dat_writer_finish(w);
	tk_dat_writer_close(w);
	if (r < 0)
		return c->oom ? oom() : named(r, c->out);
	return 0;
}

int tk_convert_perf_to_dat(struct tk_perfdata *in, int fd, const char *name,
			   const struct tk_convert_opts *opts, struct tk_convert_stats *stats)
{
	struct tk_convert_opts o;
	struct tk_convert_stats own = {0}, *st = stats ? stats : &own;
	struct p2d c = {.in = tk_perfdata_get_info(in)->path, .out = name, .pd = in};
	int r;

	r = read_opts(opts, &o);
	if (r < 0)
		return r;
	memset(st, 0, sizeof(*st));
	r = perf_into_dat(&c, fd, &o, st);
	st->samples = c.samples - c.skipped_big;
	st->cpus = c.ncpus;
	st->skipped_other = c.skipped_other;
	st->skipped_bad = c.skipped_bad + c.skipped_big;
	for (size_t i = 0; i < c.ncpus; i++) {
		tk_bytebuf_release(&c.cpus[i].raw);
		free(c.cpus[i].ents);
	}
	free(c.cpus);
	free(c.comms);
	free(c.threads);
	free(c.sband);
	return r;
}
