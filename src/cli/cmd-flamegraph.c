// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit flamegraph: folded stacks (stackcollapse-perf's format) or a
 * self-contained interactive SVG flame graph of a perf.data's callchains
 * or a .dat's kernel stack traces, or of off-CPU time from sched_switch.
 *
 * The work is tk_flamegraph_run()'s; this file parses -i/FILE, -o,
 * --folded, --off-cpu, --title and --width, and writes to -o's file
 * (made anew) or stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>

#include "cli.h"

const char cmd_flamegraph_usage[] =
	"usage: tracekit flamegraph [options] [FILE]\n"
	"\n"
	"A flame graph of the callchains of a perf.data (perf record -g), or of the\n"
	"kernel stack traces of a .dat (trace-cmd record -T): an SVG\n"
	"page with no outside parts (hover for a frame's count, click to zoom,\n"
	"Search or Ctrl-F to highlight by regular expression), or with --folded\n"
	"the stacks as 'perf script | stackcollapse-perf.pl' prints them:\n"
	"\"comm;outermost;...;innermost COUNT\".\n"
	"\n"
	"options:\n"
	"  -i, --input FILE        the perf.data or .dat (default: FILE, else perf.data)\n"
	"  -o, --output OUT        write to OUT instead of stdout\n"
	"      --folded            print folded stacks instead of the SVG\n"
	"      --off-cpu           weigh by time switched out (microseconds) from\n"
	"                          sched:sched_switch (perf record -e sched:sched_switch -g;\n"
	"                          a .dat gives per-task totals without stacks)\n"
	"      --title TEXT        the SVG's title\n"
	"      --width PX          the SVG's width (default 1200)\n"
	"  -h, --help              show this help\n";

int cmd_flamegraph(int argc, char **argv)
{
	enum { OPT_FOLDED = 256, OPT_OFFCPU, OPT_TITLE, OPT_WIDTH };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"output", required_argument, NULL, 'o'},
		{"folded", no_argument, NULL, OPT_FOLDED},
		{"off-cpu", no_argument, NULL, OPT_OFFCPU},
		{"title", required_argument, NULL, OPT_TITLE},
		{"width", required_argument, NULL, OPT_WIDTH},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_flamegraph_opts opts = {.fd = STDOUT_FILENO};
	const char *input = NULL, *output = NULL;
	unsigned long w;
	char *end;
	int c, r, fd = -1;

	while ((c = getopt_long(argc, argv, ":i:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_FOLDED:
			opts.flags |= TK_FLAMEGRAPH_FOLDED;
			break;
		case OPT_OFFCPU:
			opts.flags |= TK_FLAMEGRAPH_OFF_CPU;
			break;
		case OPT_TITLE:
			opts.title = optarg;
			break;
		case OPT_WIDTH:
			errno = 0;
			w = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || w < 100 || w > 100000)
				return cli_usage_error("bad width '%s' (100 to 100000)", optarg);
			opts.width = (unsigned int)w;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_flamegraph_usage);
		}
	}
	if (!cli_single_input(argc, argv, &input, "perf.data"))
		return CLI_USAGE;
	if (output) {
		fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return cli_error("%s: %s", output, strerror(errno));
		opts.fd = fd;
	}
	r = tk_flamegraph_run(input, &opts);
	if (fd >= 0 && close(fd) && r == 0)
		return cli_error("%s: %s", output, strerror(errno));
	if (r < 0) {
		if (output)
			unlink(output);
		return cli_lib_error(input);
	}
	return CLI_OK;
}
