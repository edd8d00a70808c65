// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit sched: scheduler analyses of a .dat or perf.data, printed as
 * `perf sched` (perf 6.1) prints them.
 *
 * "latency" and "map"; the work is tk_sched_latency_run()'s and
 * tk_sched_map_run()'s. This
 * file parses the command line, perf's options first (-i, -s, -p, -C), then
 * ours (--json, --percentiles, --hist).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>

#include "cli.h"

const char cmd_sched_usage[] =
	"usage: tracekit sched latency [options] [FILE]\n"
	"       tracekit sched map [-i FILE | FILE]\n"
	"\n"
	"Scheduling latency per task of a .dat or perf.data holding sched events\n"
	"(perf sched record, or tracekit record -e sched), printed as 'perf sched\n"
	"latency' prints it: run time, switches, average and maximum delay between\n"
	"a task becoming runnable and running, and when the largest delay began and\n"
	"ended. Threads of one command are merged unless -p is given.\n"
	"'map' prints one line per context switch with what each CPU runs, as\n"
	"'perf sched map' does.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE        the trace (default: FILE, else perf.data)\n"
	"  -s, --sort KEYS         sort by keys, from pid, avg, max, switch, runtime\n"
	"                          (default: avg,max,switch,runtime)\n"
	"  -p, --pids              one line per thread instead of per command\n"
	"  -C, --CPU CPU           count migrations to and wake-ups on CPU (perf's -C)\n"
	"      --json              print JSON instead of perf's table\n"
	"      --percentiles       add p50, p90, p99, p99.9 and max of the delays per task\n"
	"      --hist              add a log2 histogram of the delays per task\n"
	"  -h, --help              show this help\n";

int cmd_sched(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PCT, OPT_HIST };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"sort", required_argument, NULL, 's'},
		{"pids", no_argument, NULL, 'p'},
		{"CPU", required_argument, NULL, 'C'},
		{"json", no_argument, NULL, OPT_JSON},
		{"percentiles", no_argument, NULL, OPT_PCT},
		{"hist", no_argument, NULL, OPT_HIST},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_sched_opts opts = {.fd = STDOUT_FILENO, .cpu = -1};
	const char *input = NULL;
	char *end;
	bool map = false;
	int c, r;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		if (argc >= 2)
			return cli_help_or_bad_option('h', argv, cmd_sched_usage);
		return cli_usage_error("which analysis? 'latency'");
	}
	if (!strcmp(argv[1], "map")) {
		map = true;
	} else if (strncmp(argv[1], "lat", 3) || strncmp(argv[1], "latency", strlen(argv[1]))) {
		return cli_usage_error("unknown sched analysis '%s' (latency, map)", argv[1]);
	}
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, ":i:s:pC:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 's':
			opts.sort = optarg;
			break;
		case 'p':
			opts.flags |= TK_SCHED_PER_PID;
			break;
		case 'C':
			errno = 0;
			opts.cpu = (int)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || opts.cpu < 0)
				return cli_usage_error("bad CPU '%s'", optarg);
			break;
		case OPT_JSON:
			opts.flags |= TK_SCHED_JSON;
			break;
		case OPT_PCT:
			opts.flags |= TK_SCHED_PERCENTILES;
			break;
		case OPT_HIST:
			opts.flags |= TK_SCHED_HIST;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_sched_usage);
		}
	}
	if (optind < argc) {
		if (input || optind + 1 < argc)
			return cli_usage_error("one input file only");
		input = argv[optind];
	}
	if (!input)
		input = "perf.data";
	if (map && (opts.sort || opts.flags || opts.cpu != -1))
		return cli_usage_error("map takes only -i FILE or FILE");
	r = map ? tk_sched_map_run(input, &opts) : tk_sched_latency_run(input, &opts);
	if (r < 0) {
		if (r == -EINVAL && strstr(tk_errmsg(), "sort key"))
			return cli_usage_error("%s", tk_errmsg());
		return cli_lib_error(input);
	}
	return CLI_OK;
}
