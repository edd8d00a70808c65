// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit irq: hard irq and softirq time by vector of a .dat or perf.data
 * holding irq events; the work is tk_irq_run()'s. This file parses the
 * command line: -i FILE or FILE, --json, --percentiles, --hist.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>

#include "cli.h"

const char cmd_irq_usage[] =
	"usage: tracekit irq [options] [FILE]\n"
	"\n"
	"Interrupt time by vector, from the irq events of a .dat ('tracekit record\n"
	"-e irq') or perf.data ('perf record -e irq:*'): hard irq handler runs by\n"
	"irq number, softirq runs by vector (TIMER, NET_RX, ...) and softirq\n"
	"raise-to-run latency, each with count, total, average, min and max time.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE        the trace (default: FILE, else trace.dat)\n"
	"      --json              print JSON instead of the tables\n"
	"      --percentiles       add p50, p90, p99 and p99.9 columns\n"
	"      --hist              add a log2 histogram under each vector\n"
	"  -h, --help              show this help\n";

int cmd_irq(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PCT, OPT_HIST };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"json", no_argument, NULL, OPT_JSON},
		{"percentiles", no_argument, NULL, OPT_PCT},
		{"hist", no_argument, NULL, OPT_HIST},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_irq_opts opts = {.fd = STDOUT_FILENO};
	const char *input = NULL;
	int c;

	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case OPT_JSON:
			opts.flags |= TK_IRQ_JSON;
			break;
		case OPT_PCT:
			opts.flags |= TK_IRQ_PERCENTILES;
			break;
		case OPT_HIST:
			opts.flags |= TK_IRQ_HIST;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_irq_usage);
		}
	}
	if (!cli_single_input(argc, argv, &input, "trace.dat"))
		return CLI_USAGE;
	if (tk_irq_run(input, &opts) < 0)
		return cli_lib_error(input);
	return CLI_OK;
}
