// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit list: what this kernel can record.
 *
 * Prints the event systems and events (available_events), the trace clocks
 * (trace_clock, the one in use in brackets) and the tracers
 * (available_tracers). Everything comes from the tracefs root, which is
 * mounted when absent; nothing is changed.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/tracefs.h>

#include "cli.h"

const char cmd_list_usage[] = "usage: tracekit list [options]\n"
			      "\n"
			      "List what the kernel can record. Without options, everything.\n"
			      "\n"
			      "options:\n"
			      "  -s, --systems    event systems\n"
			      "  -e, --events     events, as SYSTEM:EVENT\n"
			      "  -C, --clocks     trace clocks (the current one in brackets)\n"
			      "  -t, --tracers    tracers\n"
			      "  -h, --help       show this help\n";

static int show(enum tk_tracefs_list_kind kind, const char *title, bool with_title)
{
	char **names;
	size_t n;

	if (tk_tracefs_list(kind, &names, &n) < 0)
		return cli_lib_error(NULL);
	if (with_title)
		printf("%s:\n", title);
	for (size_t i = 0; i < n; i++)
		printf("%s\n", names[i]);
	tk_tracefs_list_free(names, n);
	return CLI_OK;
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"systems", no_argument, NULL, 's'}, {"events", no_argument, NULL, 'e'},
		{"clocks", no_argument, NULL, 'C'},  {"tracers", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},    {NULL, 0, NULL, 0},
	};
	bool sys = false, ev = false, clk = false, tr = false, titles;
	int c, r = CLI_OK;

	while ((c = getopt_long(argc, argv, ":seCth", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sys = true;
			break;
		case 'e':
			ev = true;
			break;
		case 'C':
			clk = true;
			break;
		case 't':
			tr = true;
			break;
		default: /* -h, or an option getopt rejected */
			return cli_help_or_bad_option(c, argv, cmd_list_usage);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (!sys && !ev && !clk && !tr)
		sys = ev = clk = tr = true;
	titles = (sys + ev + clk + tr) > 1;
	if (!tk_tracefs_root())
		return cli_lib_error(NULL);
	if (r == CLI_OK && sys)
		r = show(TK_TRACEFS_LIST_SYSTEMS, "systems", titles);
	if (r == CLI_OK && ev)
		r = show(TK_TRACEFS_LIST_EVENTS, "events", titles);
	if (r == CLI_OK && clk)
		r = show(TK_TRACEFS_LIST_CLOCKS, "clocks", titles);
	if (r == CLI_OK && tr)
		r = show(TK_TRACEFS_LIST_TRACERS, "tracers", titles);
	return cli_finish_stdout(r);
}
