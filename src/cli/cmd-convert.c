// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit convert: options, the output file's safe creation and the
 * summary line; the conversion itself is the library's (convert.h).
 *
 * Safety (tk_output_*, output.h): OUT is written to a temporary file
 * beside it (beside a symlink's target) and renamed over it only after the
 * library finished and the data reached the disk, so OUT is either the old
 * file or the complete new one; a character device is written through, a
 * FIFO refused by the writers (both formats go back to fill in offsets).
 * The temporary file is removed on every failure path and on
 * SIGINT/SIGTERM/SIGHUP. Converting a file onto itself is refused: the
 * rename would replace the input while the reader still streams pages
 * from it, and a failure would leave the user with neither file.
 *
 * A damaged .dat is read in salvage mode: OUT gets what could be read
 * (never a page that does not decode), each damaged region is one stderr
 * line and the exit status is 1. --strict makes the first damage the
 * error, and OUT is not written.
 *
 * A Perfetto OUT (--to perfetto, or OUT named *.pftrace) is the library's
 * tk_pftrace_write_*() of either input; with --split-size the pieces are
 * OUT-0001.pftrace, OUT-0002.pftrace, ... (the number before the last
 * extension), each written as OUT is: a temporary file renamed into place
 * once complete.
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

#include <tracekit/convert.h>
#include <tracekit/output.h>
#include <tracekit/filekind.h>
#include <tracekit/pftrace.h>

#include "cli.h"

const char cmd_convert_usage[] =
	"usage: tracekit convert [options] IN -o OUT\n"
	"\n"
	"Rewrite the trace-cmd .dat file IN as OUT, changing the file version or\n"
	"the compression. Metadata, options and every CPU page are copied\n"
	"unchanged; OUT appears only when it is complete. A perf.data IN becomes\n"
	"a .dat OUT (tracepoint samples only); a .dat IN becomes perf.data with\n"
	"--to perf or an OUT named *.data. Either becomes a Perfetto trace (for\n"
	"ui.perfetto.dev and trace_processor) with --to perfetto or an OUT named\n"
	"*.pftrace.\n"
	"\n"
	"options:\n"
	"  -i, --input IN          file to read (same as the IN argument)\n"
	"  -o, --output OUT        file to write (required)\n"
	"      --file-version 6|7  version of OUT (default 7)\n"
	"      --compression zstd|zlib|none\n"
	"                          codec of OUT (default zstd for v7, none for v6;\n"
	"                          v6 cannot be compressed). trace-cmd reads v7 from\n"
	"                          3.0 on, each codec only if built with it: Debian\n"
	"                          12's 3.1.6 has zstd but no zlib\n"
	"      --to perf|dat|perfetto\n"
	"                          output format (default: perf for OUT named *.data,\n"
	"                          perfetto for OUT named *.pftrace, else dat)\n"
	"      --to parquet|sqlite tables of many inputs: see --to parquet --help\n"
	"      --split-size SIZE   perfetto: cut OUT by time into pieces of at most\n"
	"                          SIZE bytes (K, M, G suffixes; at least 1M), named\n"
	"                          OUT-0001.pftrace, OUT-0002.pftrace, ...\n"
	"                          perfetto: --compression zstd (the default:\n"
	"                          zstd_compressed_packets, Perfetto from mid-2026,\n"
	"                          as ui.perfetto.dev), zlib (deflated packets, every\n"
	"                          Perfetto since 2019) or none\n"
	"  -q, --quiet             do not print the summary line\n"
	"      --strict            fail at the first damage in IN instead of writing\n"
	"                          what can be read (each damaged region is otherwise\n"
	"                          one warning line on stderr, and the exit status is 1)\n"
	"  -h, --help              show this help\n";

/* Inputs larger than this get a progress line when stderr is a terminal. */
#define PROGRESS_MIN_BYTES (256ull << 20)

/*
 * The temporary file to remove if a signal ends the process. Only unlink()
 * and raise() run in the handler, both async-signal-safe.
 */
static const char *volatile cleanup_path;

static void cleanup_on_signal(int sig)
{
	const char *p = cleanup_path;

	if (p)
		unlink(p);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_cleanup(const char *path)
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
	struct tk_convert_opts opts;
	struct tk_convert_stats st;
	struct timespec last_progress;
	/* the .dat input's facts, for the summary line */
	int in_version;
	enum tk_compression in_compression;
	uint64_t in_size;
	bool strict;  /* --strict: for the .dat reader's and the perf.data reader's opts */
	bool damaged; /* salvage found damage: OUT is written, the exit status is 1 */
};

static double now_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* At most once a second: the share of the input done and the pages copied. */
static void show_progress(const struct tk_convert_stats *st, void *ctx)
{
	struct convert *cv = ctx;
	struct timespec t;
	double pct;

	clock_gettime(CLOCK_MONOTONIC, &t);
	if (t.tv_sec - cv->last_progress.tv_sec < 1 ||
	    (t.tv_sec - cv->last_progress.tv_sec == 1 && t.tv_nsec < cv->last_progress.tv_nsec))
		return;
	cv->last_progress = t;
	pct = st->bytes_total ? 100.0 * (double)st->bytes_done / (double)st->bytes_total : 0.0;
	if (pct > 100.0)
		pct = 100.0;
	fprintf(stderr, "\rtracekit convert: %5.1f%% %" PRIu64 " pages\033[K", pct, st->pages);
}

enum direction { DAT_TO_DAT, DAT_TO_PERF, PERF_TO_DAT };

/* Convert into the temporary file; the library's message names the file at fault. */
static int convert_into(struct convert *cv, enum direction dir, int fd)
{
	struct tk_perfdata *pd = NULL;
	struct tk_dat *dat = NULL;
	int r;

	if (dir == PERF_TO_DAT) {
		TK_OPTS(tk_perfdata_open_opts, oopts, .strict = cv->strict);

		pd = tk_perfdata_open_opts(cv->in, &oopts);
		if (!pd)
			return cli_lib_error(cv->in);
		r = tk_convert_perf_to_dat(pd, fd, cv->out, &cv->opts, &cv->st);
		cv->damaged = cli_perf_damage(cv->in, pd) != CLI_OK;
		tk_perfdata_close(pd);
		return r < 0 ? cli_lib_error(NULL) : CLI_OK;
	}
	TK_OPTS(tk_dat_open_opts, dopts, .strict = cv->strict);
	dat = tk_dat_open_with(cv->in, &dopts);
	if (!dat)
		return cli_lib_error(cv->in);
	if (dir == DAT_TO_PERF) {
		r = tk_convert_dat_to_perf(dat, fd, cv->out, &cv->opts, &cv->st);
	} else {
		const struct tk_dat_info *info = tk_dat_get_info(dat);
		bool progress = info->file_size > PROGRESS_MIN_BYTES && isatty(STDERR_FILENO);

		cv->in_version = info->version;
		cv->in_compression = info->compression;
		cv->in_size = info->file_size;
		if (progress) {
			cv->opts.progress = show_progress;
			cv->opts.progress_ctx = cv;
			clock_gettime(CLOCK_MONOTONIC, &cv->last_progress);
		}
		r = tk_convert_dat_to_dat(dat, fd, cv->out, &cv->opts, &cv->st);
		if (progress)
			fputs("\r\033[K", stderr);
	}
	r = r < 0 ? cli_lib_error(NULL) : CLI_OK;
	if (r == CLI_OK && cli_dat_damage(dat, cv->in, CLI_OK) != CLI_OK)
		cv->damaged = true;
	tk_dat_close(dat);
	return r;
}

static void print_summary(const struct convert *cv, enum direction dir, uint64_t out_size,
			  double seconds)
{
	const struct tk_convert_stats *st = &cv->st;

	if (dir == DAT_TO_DAT)
		fprintf(stderr,
			"tracekit convert: %s (v%d, %s) -> %s (v%d, %s): %" PRIu64
			" pages, %" PRIu64 " buffers, %.2f MB -> %.2f MB in %.2f s\n",
			cv->in, cv->in_version, tk_codec_name(cv->in_compression), cv->out,
			cv->opts.version, tk_codec_name(cv->opts.compression), st->pages,
			st->buffers, (double)cv->in_size / 1e6, (double)out_size / 1e6, seconds);
	else if (dir == DAT_TO_PERF)
		fprintf(stderr,
			"tracekit convert: %s -> %s: %" PRIu64 " samples of %" PRIu64 " events, "
			"%.2f MB\n",
			cv->in, cv->out, st->samples, st->events, (double)out_size / 1e6);
	else
		fprintf(stderr,
			"tracekit convert: %s -> %s: %" PRIu64 " samples on %" PRIu64 " CPUs, "
			"%.2f MB\n",
			cv->in, cv->out, st->samples, st->cpus, (double)out_size / 1e6);
}

static int run(struct convert *cv, enum direction dir, bool quiet)
{
	double start = now_seconds();
	struct tk_output *out;
	uint64_t size = 0;
	int r;

	out = tk_output_open(cv->out, cv->in);
	if (!out)
		return cli_lib_error(NULL);
	/* Signals are caught from before the conversion starts until the rename. */
	install_cleanup(tk_output_temp_path(out));
	r = convert_into(cv, dir, tk_output_fd(out));
	if (r == CLI_OK && tk_output_finish(out, &size) < 0)
		r = cli_lib_error(NULL);
	tk_output_close(out);
	install_cleanup(NULL);
	if (r != CLI_OK)
		return r;
	if (cv->st.skipped_other)
		fprintf(stderr,
			"tracekit convert: %s: %" PRIu64 " samples of non-tracepoint "
			"events skipped\n",
			cv->in, cv->st.skipped_other);
	if (cv->st.skipped_bad)
		fprintf(stderr,
			"tracekit convert: %s: %" PRIu64 " tracepoint samples without a "
			"usable raw payload skipped\n",
			cv->in, cv->st.skipped_bad);
	if (!quiet)
		print_summary(cv, dir, size, now_seconds() - start);
	return cv->damaged ? CLI_FAIL : CLI_OK;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10, end++;
		break;
	case 'm':
	case 'M':
		shift = 20, end++;
		break;
	case 'g':
	case 'G':
		shift = 30, end++;
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* The pieces of a split Perfetto output: OUT-0001.pftrace, ... */
struct pieces {
	const char *out, *in;
	struct tk_output *cur;
	char **done; /* pieces renamed into place, removed if a later one fails */
	unsigned int ndone;
	uint64_t bytes;
};

static char *piece_name(const char *out, unsigned int index)
{
	const char *slash = strrchr(out, '/'), *dot = strrchr(out, '.');
	size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - out) : strlen(out);
	char *name = NULL;

	if (asprintf(&name, "%.*s-%04u%s", (int)stem, out, index, out + stem) < 0)
		return NULL;
	return name;
}

static int piece_finish(struct pieces *p)
{
	uint64_t size = 0;
	char **done;
	int r;

	if (!p->cur)
		return 0;
	r = tk_output_finish(p->cur, &size);
	done = realloc(p->done, (p->ndone + 1) * sizeof(*done));
	if (r == 0 && done) {
		p->done = done;
		p->done[p->ndone] = strdup(tk_output_target(p->cur));
		if (p->done[p->ndone])
			p->ndone++;
	} else if (done) {
		p->done = done;
	}
	p->bytes += size;
	tk_output_close(p->cur);
	p->cur = NULL;
	install_cleanup(NULL);
	return r;
}

static int piece_open(struct pieces *p, unsigned int index)
{
	char *name = piece_name(p->out, index);

	if (!name)
		return -ENOMEM;
	p->cur = tk_output_open(name, p->in);
	free(name);
	if (!p->cur)
		return -errno;
	install_cleanup(tk_output_temp_path(p->cur));
	return tk_output_fd(p->cur);
}

/* tk_pftrace_piece_fn: the previous piece is complete, open the next. */
static int next_piece(void *ctx, unsigned int index)
{
	struct pieces *p = ctx;
	int r = piece_finish(p);

	return r < 0 ? r : piece_open(p, index);
}

static int run_pftrace(struct convert *cv, struct tk_pftrace_opts *po, bool quiet)
{
	enum tk_filekind kind = tk_filekind_of(cv->in);
	bool perf = kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE;
	struct pieces pc = {.out = cv->out, .in = cv->in};
	struct tk_pftrace_stats st;
	struct tk_perfdata *pd = NULL;
	struct tk_dat *dat = NULL;
	double start = now_seconds();
	int fd, r;

	if (perf) {
		TK_OPTS(tk_perfdata_open_opts, oopts, .strict = cv->strict);

		pd = tk_perfdata_open_opts(cv->in, &oopts);
		if (!pd)
			return cli_lib_error(cv->in);
	} else {
		TK_OPTS(tk_dat_open_opts, dopts, .strict = cv->strict);

		dat = tk_dat_open_with(cv->in, &dopts);
		if (!dat)
			return cli_lib_error(cv->in);
	}
	if (po->split_size) {
		po->next_piece = next_piece;
		po->piece_ctx = &pc;
		fd = piece_open(&pc, 1);
	} else {
		pc.cur = tk_output_open(cv->out, cv->in);
		fd = pc.cur ? tk_output_fd(pc.cur) : -errno;
		if (pc.cur)
			install_cleanup(tk_output_temp_path(pc.cur));
	}
	if (fd < 0) {
		r = cli_lib_error(NULL);
		goto out;
	}
	r = perf ? tk_pftrace_write_perf(pd, fd, cv->out, po, &st)
		 : tk_pftrace_write_dat(dat, fd, cv->out, po, &st);
	r = r < 0 ? cli_lib_error(NULL) : CLI_OK;
	if (r == CLI_OK)
		cv->damaged = perf ? cli_perf_damage(cv->in, pd) != CLI_OK
				   : cli_dat_damage(dat, cv->in, CLI_OK) != CLI_OK;
	if (r == CLI_OK && piece_finish(&pc) < 0)
		r = cli_lib_error(NULL);
out:
	tk_output_close(pc.cur);
	install_cleanup(NULL);
	for (unsigned int i = 0; i < pc.ndone; i++) {
		if (r != CLI_OK)
			unlink(pc.done[i]);
		free(pc.done[i]);
	}
	free(pc.done);
	tk_perfdata_close(pd);
	tk_dat_close(dat);
	if (r != CLI_OK)
		return r;
	if (st.skipped)
		fprintf(stderr,
			"tracekit convert: %s: %" PRIu64 " tracepoint samples without a usable raw "
			"payload skipped\n",
			cv->in, st.skipped);
	if (!quiet)
		fprintf(stderr,
			"tracekit convert: %s -> %s: %" PRIu64 " events on %u CPUs, %" PRIu64
			" samples, %u piece%s, %.2f MB in %.2f s\n",
			cv->in, cv->out, st.events, st.cpus, st.samples, st.pieces,
			st.pieces == 1 ? "" : "s", (double)pc.bytes / 1e6, now_seconds() - start);
	return cv->damaged ? CLI_FAIL : CLI_OK;
}

int cmd_convert(int argc, char **argv)
{
	enum { OPT_FILE_VERSION = 256, OPT_COMPRESSION, OPT_TO, OPT_STRICT, OPT_SPLIT };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"output", required_argument, NULL, 'o'},
		{"file-version", required_argument, NULL, OPT_FILE_VERSION},
		{"compression", required_argument, NULL, OPT_COMPRESSION},
		{"quiet", no_argument, NULL, 'q'},
		{"to", required_argument, NULL, OPT_TO},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"split-size", required_argument, NULL, OPT_SPLIT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct convert cv = {.opts = {.sz = sizeof(cv.opts), .version = 7}};
	const char *codec = NULL, *to = NULL;
	enum tk_filekind kind;
	enum direction dir;
	bool quiet = false;
	uint64_t split = 0;
	int c;

	/* The table exports take other options and many inputs (convert-tables.c). */
	for (int i = 1; i < argc; i++)
		if ((!strcmp(argv[i], "--to") && i + 1 < argc &&
		     (!strcmp(argv[i + 1], "parquet") || !strcmp(argv[i + 1], "sqlite"))) ||
		    !strcmp(argv[i], "--to=parquet") || !strcmp(argv[i], "--to=sqlite"))
			return cmd_convert_tables(argc, argv);
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
			if (cli_parse_file_version(optarg, &cv.opts.version))
				return CLI_USAGE;
			break;
		case OPT_COMPRESSION:
			codec = optarg;
			break;
		case OPT_TO:
			if (strcmp(optarg, "perf") && strcmp(optarg, "dat") &&
			    strcmp(optarg, "perfetto"))
				return cli_usage_error("--to takes perf, dat or perfetto, not '%s'",
						       optarg);
			to = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_STRICT:
			cv.strict = true;
			break;
		case OPT_SPLIT:
			if (parse_size(optarg, &split) || split < (1u << 20))
				return cli_usage_error(
					"--split-size takes a size of at least 1M, not '%s'",
					optarg);
			break;
		default: /* -h, or an option getopt rejected */
			return cli_help_or_bad_option(c, argv, cmd_convert_usage);
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
	if (to ? !strcmp(to, "perfetto") : ends_with(cv.out, ".pftrace")) {
		TK_OPTS(tk_pftrace_opts, po, .compression = TK_COMPRESS_ZSTD, .split_size = split,
			.symbolize = true);

		if (cv.opts.version != 7)
			return cli_usage_error("--file-version is for .dat output");
		if (codec && tk_codec_from_name(codec, &po.compression) < 0)
			return cli_usage_error("unknown compression '%s' (zstd, zlib or none)",
					       codec);
		if (split) {
			struct stat sb;

			/* The pieces are named after OUT: it must be a file's name. */
			if (!strcmp(cv.out, "-") ||
			    (stat(cv.out, &sb) == 0 && !S_ISREG(sb.st_mode)))
				return cli_usage_error("--split-size names the pieces after OUT, "
						       "which must be a regular file's name");
		}
		return run_pftrace(&cv, &po, quiet);
	}
	if (split)
		return cli_usage_error("--split-size is for Perfetto output");
	kind = tk_filekind_of(cv.in);
	if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE) {
		if (to && !strcmp(to, "perf"))
			return cli_usage_error("%s is already a perf.data file", cv.in);
		dir = PERF_TO_DAT;
	} else if (to ? !strcmp(to, "perf") : ends_with(cv.out, ".data")) {
		return run(&cv, DAT_TO_PERF, quiet);
	} else {
		dir = DAT_TO_DAT;
	}
	if (!codec) {
		cv.opts.compression = cv.opts.version == 6 ? TK_COMPRESS_NONE : TK_COMPRESS_ZSTD;
	} else if (tk_codec_from_name(codec, &cv.opts.compression) < 0) {
		return cli_usage_error("unknown compression '%s' (zstd, zlib or none)", codec);
	}
	if (cv.opts.version == 6 && cv.opts.compression != TK_COMPRESS_NONE)
		return cli_usage_error("file version 6 cannot be compressed (use --compression "
				       "none or --file-version 7)");
	return run(&cv, dir, quiet);
}
