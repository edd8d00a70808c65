// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit sched: scheduler analyses of a .dat or perf.data, printed as
 * `perf sched` (perf 6.1) prints them.
 *
 * "latency", "map" and "timehist"; the work is tk_sched_latency_run()'s,
 * tk_sched_map_run()'s and tk_sched_timehist_run()'s. This file parses the
 * command line, perf's options first (latency: -i, -s, -p, -C; timehist:
 * -s, -S, -w, -M, -V, --state, -p, -t, -C), then ours (--json,
 * --percentiles, --hist). timehist's -s is perf's "summary only", not a
 * sort key, as in perf.
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
	"       tracekit sched latency --compare [options] A B\n"
	"       tracekit sched map [-i FILE | FILE]\n"
	"       tracekit sched timehist [options] [FILE]\n"
	"       tracekit sched balance [--interval MS] [--json] [FILE]\n"
	"\n"
	"Scheduling latency per task of a .dat or perf.data holding sched events\n"
	"(perf sched record, or tracekit record -e sched), printed as 'perf sched\n"
	"latency' prints it: run time, switches, average and maximum delay between\n"
	"a task becoming runnable and running, and when the largest delay began and\n"
	"ended. Threads of one command are merged unless -p is given.\n"
	"'map' prints one line per context switch with what each CPU runs, as\n"
	"'perf sched map' does. 'timehist' prints one line per context switch for\n"
	"the task leaving the CPU: wait time, scheduling delay and run time, as\n"
	"'perf sched timehist' does. 'balance' shows per-CPU run-queue length and\n"
	"busy time per window, and their imbalance (ours).\n"
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
	"      --compare           two traces A and B side by side per task: switches,\n"
	"                          average and largest delay, change of the average\n"
	"  -h, --help              show this help\n"
	"\n"
	"timehist options:\n"
	"  -i, --input FILE        the trace (default: FILE, else perf.data)\n"
	"  -s, --summary           the per-thread runtime summary only\n"
	"  -S, --with-summary      the events, then the summary\n"
	"  -w, --wakeups           add a line per wake-up\n"
	"  -M, --migrations        add a line per migration (and count them)\n"
	"  -V, --cpu-visual        add a column per CPU\n"
	"      --state             add the state the task left in; the summary\n"
	"                          splits the wait into sleep, iowait and preempt\n"
	"  -p, --pid PID[,PID...]  only threads of these processes\n"
	"  -t, --tid TID[,TID...]  only these threads\n"
	"  -C, --cpu CPUS          only switches on these CPUs (0,2-3)\n"
	"      --json              print JSON instead of perf's text\n"
	"      --percentiles       add p50, p90, p99, p99.9 and max of wait, delay\n"
	"                          and run time over all lines\n"
	"      --hist              add log2 histograms of the same\n"
	"\n"
	"balance options:\n"
	"  -i, --input FILE        the trace (default: FILE, else perf.data)\n"
	"      --interval MS       the window (default 100)\n"
	"      --json              print JSON instead of the table\n";

/* "1,2,5" into @v (at most @cap); false on a bad list. */
static bool parse_ids(const char *s, int32_t *v, size_t cap, size_t *n)
{
	char *end;

	*n = 0;
	while (*s) {
		long x;

		errno = 0;
		x = strtol(s, &end, 10);
		if (errno || end == s || x < 0 || x > INT32_MAX || *n == cap ||
		    (*end && *end != ','))
			return false;
		v[(*n)++] = (int32_t)x;
		s = *end ? end + 1 : end;
	}
	return *n > 0;
}

/* "0,2-3" into @cpus[0..cap); false on a bad list. */
static bool parse_cpus(const char *s, bool *cpus, size_t cap, size_t *ncpus)
{
	char *end;

	*ncpus = 0;
	while (*s) {
		long a, b;

		errno = 0;
		a = b = strtol(s, &end, 10);
		if (errno || end == s || a < 0)
			return false;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (errno || end == s || b < a)
				return false;
		}
		if ((size_t)b >= cap || (*end && *end != ','))
			return false;
		for (long c = a; c <= b; c++)
			cpus[c] = true;
		if ((size_t)b + 1 > *ncpus)
			*ncpus = (size_t)b + 1;
		s = *end ? end + 1 : end;
	}
	return *ncpus > 0;
}

static int cmd_sched_balance(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_INTERVAL };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"interval", required_argument, NULL, OPT_INTERVAL},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_balance_opts opts = {.fd = STDOUT_FILENO};
	const char *input = NULL;
	char *end;
	double ms;
	int c;

	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case OPT_INTERVAL:
			errno = 0;
			ms = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(ms >= 0.001) || ms > 3.6e6)
				return cli_usage_error("bad interval '%s' (ms)", optarg);
			opts.interval_ns = (uint64_t)(ms * 1e6);
			break;
		case OPT_JSON:
			opts.flags |= TK_BALANCE_JSON;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_sched_usage);
		}
	}
	if (!cli_single_input(argc, argv, &input, "perf.data"))
		return CLI_USAGE;
	if (tk_sched_balance_run(input, &opts) < 0)
		return cli_lib_error(input);
	return CLI_OK;
}

static int cmd_sched_timehist(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PCT, OPT_HIST, OPT_STATE };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"summary", no_argument, NULL, 's'},
		{"with-summary", no_argument, NULL, 'S'},
		{"wakeups", no_argument, NULL, 'w'},
		{"migrations", no_argument, NULL, 'M'},
		{"cpu-visual", no_argument, NULL, 'V'},
		{"state", no_argument, NULL, OPT_STATE},
		{"pid", required_argument, NULL, 'p'},
		{"tid", required_argument, NULL, 't'},
		{"cpu", required_argument, NULL, 'C'},
		{"json", no_argument, NULL, OPT_JSON},
		{"percentiles", no_argument, NULL, OPT_PCT},
		{"hist", no_argument, NULL, OPT_HIST},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static int32_t pids[256], tids[256];
	static bool cpus[4096];
	struct tk_timehist_opts opts = {.fd = STDOUT_FILENO};
	const char *input = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, ":i:sSwMVp:t:C:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 's':
			opts.flags |= TK_TIMEHIST_SUMMARY_ONLY;
			break;
		case 'S':
			opts.flags |= TK_TIMEHIST_SUMMARY;
			break;
		case 'w':
			opts.flags |= TK_TIMEHIST_WAKEUPS;
			break;
		case 'M':
			opts.flags |= TK_TIMEHIST_MIGRATIONS;
			break;
		case 'V':
			opts.flags |= TK_TIMEHIST_CPU_VISUAL;
			break;
		case OPT_STATE:
			opts.flags |= TK_TIMEHIST_STATE;
			break;
		case 'p':
			if (!parse_ids(optarg, pids, 256, &opts.npids))
				return cli_usage_error("bad pid list '%s'", optarg);
			opts.pids = pids;
			break;
		case 't':
			if (!parse_ids(optarg, tids, 256, &opts.ntids))
				return cli_usage_error("bad tid list '%s'", optarg);
			opts.tids = tids;
			break;
		case 'C':
			if (!parse_cpus(optarg, cpus, 4096, &opts.ncpus))
				return cli_usage_error("bad CPU list '%s'", optarg);
			opts.cpus = cpus;
			break;
		case OPT_JSON:
			opts.flags |= TK_TIMEHIST_JSON;
			break;
		case OPT_PCT:
			opts.flags |= TK_TIMEHIST_PERCENTILES;
			break;
		case OPT_HIST:
			opts.flags |= TK_TIMEHIST_HIST;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_sched_usage);
		}
	}
	if (!cli_single_input(argc, argv, &input, "perf.data"))
		return CLI_USAGE;
	if ((opts.flags & TK_TIMEHIST_SUMMARY_ONLY) && (opts.flags & TK_TIMEHIST_WAKEUPS))
		return cli_usage_error("-s and -w are mutually exclusive");
	r = tk_sched_timehist_run(input, &opts);
	if (r < 0)
		return cli_lib_error(input);
	return CLI_OK;
}

int cmd_sched(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PCT, OPT_HIST, OPT_COMPARE };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"compare", no_argument, NULL, OPT_COMPARE},
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
	bool map = false, compare = false;
	int c, r;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		if (argc >= 2)
			return cli_help_or_bad_option('h', argv, cmd_sched_usage);
		return cli_usage_error("which analysis? 'latency'");
	}
	if (!strcmp(argv[1], "timehist"))
		return cmd_sched_timehist(argc - 1, argv + 1);
	if (!strcmp(argv[1], "balance"))
		return cmd_sched_balance(argc - 1, argv + 1);
	if (!strcmp(argv[1], "map")) {
		map = true;
	} else if (strncmp(argv[1], "lat", 3) || strncmp(argv[1], "latency", strlen(argv[1]))) {
		return cli_usage_error(
			"unknown sched analysis '%s' (latency, map, timehist, balance)", argv[1]);
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
		case OPT_COMPARE:
			compare = true;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_sched_usage);
		}
	}
	if (compare) {
		if (map || input || optind + 2 != argc)
			return cli_usage_error("latency --compare takes two files, A and B");
		if (opts.flags & (TK_SCHED_PERCENTILES | TK_SCHED_HIST))
			return cli_usage_error("--compare does not take --percentiles or --hist");
		r = tk_sched_latency_compare_run(argv[optind], argv[optind + 1], &opts);
		if (r == -EINVAL && strstr(tk_errmsg(), "sort key"))
			return cli_usage_error("%s", tk_errmsg());
		return r < 0 ? cli_lib_error(argv[optind]) : CLI_OK;
	}
	if (!cli_single_input(argc, argv, &input, "perf.data"))
		return CLI_USAGE;
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
