// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit syscalls: `perf trace -s` of a .dat or perf.data holding
 * raw_syscalls events; the work is tk_syscalls_run()'s. This file parses
 * the command line: -i FILE or FILE, then ours (--json, --percentiles,
 * --hist, --compare A B). perf prints its summary on stderr; we print it
 * on stdout, where a summary belongs.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>

#include "cli.h"

const char cmd_syscalls_usage[] =
	"usage: tracekit syscalls [options] [FILE]\n"
	"       tracekit syscalls --compare [--json] A B\n"
	"\n"
	"Per thread and syscall: calls, errors, total, min, avg and max duration\n"
	"and their relative standard deviation, from the raw_syscalls events of a\n"
	"perf.data ('perf trace record') or a .dat ('tracekit record -e\n"
	"raw_syscalls'), printed as 'perf trace -s' prints them.\n"
	"With --compare, two traces side by side: per syscall over all threads,\n"
	"calls and total time in each and the change.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE        the trace (default: FILE, else perf.data)\n"
	"      --json              print JSON instead of perf's table\n"
	"      --percentiles       add p50, p90, p99, p99.9 and max of the durations\n"
	"                          after each syscall's line\n"
	"      --hist              add a log2 histogram of the durations\n"
	"      --compare           compare two traces A and B\n"
	"  -h, --help              show this help\n";

int cmd_syscalls(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PCT, OPT_HIST, OPT_COMPARE };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"json", no_argument, NULL, OPT_JSON},
		{"percentiles", no_argument, NULL, OPT_PCT},
		{"hist", no_argument, NULL, OPT_HIST},
		{"compare", no_argument, NULL, OPT_COMPARE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_syscalls_opts opts = {.fd = STDOUT_FILENO};
	const char *input = NULL;
	bool compare = false;
	int c, r;

	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case OPT_JSON:
			opts.flags |= TK_SYSCALLS_JSON;
			break;
		case OPT_PCT:
			opts.flags |= TK_SYSCALLS_PERCENTILES;
			break;
		case OPT_HIST:
			opts.flags |= TK_SYSCALLS_HIST;
			break;
		case OPT_COMPARE:
			compare = true;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_syscalls_usage);
		}
	}
	if (compare) {
		if (input || optind + 2 != argc)
			return cli_usage_error("--compare takes two files, A and B");
		if (opts.flags & (TK_SYSCALLS_PERCENTILES | TK_SYSCALLS_HIST))
			return cli_usage_error("--compare takes --json only");
		r = tk_syscalls_compare_run(argv[optind], argv[optind + 1], &opts);
		return r < 0 ? cli_lib_error(argv[optind]) : CLI_OK;
	}
	if (!cli_single_input(argc, argv, &input, "perf.data"))
		return CLI_USAGE;
	r = tk_syscalls_run(input, &opts);
	if (r < 0)
		return cli_lib_error(input);
	return CLI_OK;
}
