// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit convert --to parquet|sqlite: the table exports (tables.h).
 * cmd-convert.c hands the command line here when --to names one of them;
 * the options differ from the file conversions' (many inputs, a directory
 * or a database as OUT), so they are parsed apart.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tracekit/tables.h>

#include "cli.h"

const char cmd_convert_tables_usage[] =
	"usage: tracekit convert --to parquet [options] IN... -o DIR\n"
	"       tracekit convert --to sqlite [options] IN... -o DB\n"
	"\n"
	"Write each .dat or perf.data IN as tables with Perfetto's names and\n"
	"columns (sched_slice, thread_state, thread, process, ftrace_event and\n"
	"its args, perf_sample and its stacks' stack_profile_mapping, _frame and\n"
	"_callsite, counter with counter_track, cpu_ and thread_counter_track),\n"
	"every row tagged with trace_id, host and boot_id:\n"
	"Parquet files DIR/TABLE/TRACEID-NNNN.parquet (DuckDB, Spark, Trino),\n"
	"or one SQLite database DB. docs/fleet.md has the queries.\n"
	"\n"
	"options:\n"
	"  -o, --output DIR|DB     where to write (required)\n"
	"      --to parquet|sqlite the output format\n"
	"      --trace-id ID       the trace id of the rows (one input only;\n"
	"                          default: IN's file name without extension)\n"
	"      --host NAME         the host column (default: the file's own\n"
	"                          uname / hostname, else empty)\n"
	"      --boot-id ID        the boot_id column (default: empty)\n"
	"      --row-group-rows N  Parquet rows per row group (default 131072)\n"
	"      --file-rows N       Parquet rows per file (default: no limit)\n"
	"  -j, --jobs N            Parquet: inputs converted at once (default:\n"
	"                          one per CPU)\n"
	"  -q, --quiet             do not print the summary line\n"
	"      --strict            fail at the first damage in an input instead of\n"
	"                          writing what can be read (each damaged region is\n"
	"                          otherwise one warning line on stderr, and the exit\n"
	"                          status is 1)\n"
	"  -h, --help              show this help\n";

/* One warning line per damaged region, as the other commands print them. */
static void print_damage(void *ctx, const char *input, uint64_t offset, const char *what,
			 uint64_t skipped, int64_t lost)
{
	char n[48];

	(void)ctx;
	if (lost >= 0)
		snprintf(n, sizeof(n), "%" PRId64 " events lost", lost);
	else
		snprintf(n, sizeof(n), "events lost unknown");
	cli_error("%s: offset 0x%" PRIx64 ": %s (skipped %" PRIu64 " bytes, %s)", input, offset,
		  what, skipped, n);
}

static int parse_rows(const char *arg, const char *opt, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || !v || arg[0] == '-')
		return cli_usage_error("%s takes a positive number, not '%s'", opt, arg);
	*out = v;
	return CLI_OK;
}

int cmd_convert_tables(int argc, char **argv)
{
	enum {
		OPT_TO = 256,
		OPT_TRACE_ID,
		OPT_HOST,
		OPT_BOOT_ID,
		OPT_RG_ROWS,
		OPT_FILE_ROWS,
		OPT_STRICT
	};
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"to", required_argument, NULL, OPT_TO},
		{"trace-id", required_argument, NULL, OPT_TRACE_ID},
		{"host", required_argument, NULL, OPT_HOST},
		{"boot-id", required_argument, NULL, OPT_BOOT_ID},
		{"row-group-rows", required_argument, NULL, OPT_RG_ROWS},
		{"file-rows", required_argument, NULL, OPT_FILE_ROWS},
		{"jobs", required_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	TK_OPTS(tk_tables_opts, opts, .damage = print_damage);
	struct tk_tables_stats st;
	const char *out = NULL, *to = NULL, *trace_id = NULL;
	const char *ids[1];
	struct timespec t0, t1;
	bool quiet = false;
	uint64_t jobs = 0, total = 0;
	int c, ret;

	while ((c = getopt_long(argc, argv, ":o:j:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (out)
				return cli_usage_error("more than one output");
			out = optarg;
			break;
		case OPT_TO:
			if (strcmp(optarg, "parquet") && strcmp(optarg, "sqlite"))
				return cli_usage_error(
					"--to takes parquet or sqlite here, not '%s'", optarg);
			to = optarg;
			break;
		case OPT_TRACE_ID:
			trace_id = optarg;
			break;
		case OPT_HOST:
			opts.host = optarg;
			break;
		case OPT_BOOT_ID:
			opts.boot_id = optarg;
			break;
		case OPT_RG_ROWS:
			if (parse_rows(optarg, "--row-group-rows", &opts.row_group_rows))
				return CLI_USAGE;
			break;
		case OPT_FILE_ROWS:
			if (parse_rows(optarg, "--file-rows", &opts.file_rows))
				return CLI_USAGE;
			break;
		case 'j':
			if (parse_rows(optarg, "--jobs", &jobs) || jobs > 256)
				return jobs > 256 ? cli_usage_error("--jobs takes at most 256")
						  : CLI_USAGE;
			opts.threads = (unsigned int)jobs;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_STRICT:
			opts.strict = true;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_convert_tables_usage);
		}
	}
	if (!to)
		return cli_usage_error("--to parquet or --to sqlite is required here");
	if (optind >= argc)
		return cli_usage_error("no input file");
	if (!out)
		return cli_usage_error("no output (-o %s)", strcmp(to, "parquet") ? "DB" : "DIR");
	if (trace_id && argc - optind > 1)
		return cli_usage_error("--trace-id names one input's trace; with many inputs "
				       "each takes its file name");
	ids[0] = trace_id;
	if (trace_id)
		opts.trace_ids = ids;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!strcmp(to, "parquet"))
		ret = tk_tables_write_parquet((const char *const *)argv + optind,
					      (size_t)(argc - optind), out, &opts, &st);
	else
		ret = tk_tables_write_sqlite((const char *const *)argv + optind,
					     (size_t)(argc - optind), out, &opts, &st);
	if (ret < 0)
		return cli_lib_error(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int t = 0; t < TK_TABLES_COUNT; t++)
		total += st.rows[t];
	if (!quiet) {
		fprintf(stderr, "tracekit convert: %d inputs -> %s: %" PRIu64 " rows",
			argc - optind, out, total);
		if (!strcmp(to, "parquet"))
			fprintf(stderr, " in %" PRIu64 " files", st.files);
		fprintf(stderr, ", %.2f MB in %.2f s\n", (double)st.bytes / 1e6,
			(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	return st.damaged ? CLI_FAIL : CLI_OK;
}
