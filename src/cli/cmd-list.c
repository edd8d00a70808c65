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

const char cmd_list_usage[] =
	"usage: tracekit list [options]\n"
	"\n"
	"List what the kernel can record. Without options, everything.\n"
	"\n"
	"options:\n"
	"  -s, --systems    event systems\n"
	"  -e, --events     events, as SYSTEM:EVENT\n"
	"  -C, --clocks     trace clocks (the current one in brackets)\n"
	"  -t, --tracers    tracers\n"
	"  -h, --help       show this help\n";

static int print_systems(const char *text)
{
	char *last = NULL;
	size_t last_len = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchrnul(p, '\n');
		const char *colon = memchr(p, ':', (size_t)(nl - p));

		if (colon) {
			size_t n = (size_t)(colon - p);

			if (!last || n != last_len || memcmp(last, p, n)) {
				printf("%.*s\n", (int)n, p);
				last = (char *)p;
				last_len = n;
			}
		}
		p = *nl ? nl + 1 : nl;
	}
	return CLI_OK;
}

static int show(const char *file, const char *title, bool with_title, int what)
{
	char *text;
	size_t len;

	if (tk_tracefs_read_top_file(file, &text, &len) < 0)
		return cli_lib_error(NULL);
	if (with_title)
		printf("%s:\n", title);
	if (what == 's') {
		print_systems(text);
	} else if (what == 'e') {
		fputs(text, stdout);
	} else {
		/* One word per line: clocks and tracers come space-separated. */
		for (char *tok = strtok(text, " \n"); tok; tok = strtok(NULL, " \n"))
			printf("%s\n", tok);
	}
	free(text);
	return CLI_OK;
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"systems", no_argument, NULL, 's'},
		{"events", no_argument, NULL, 'e'},
		{"clocks", no_argument, NULL, 'C'},
		{"tracers", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
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
		case 'h':
			fputs(cmd_list_usage, stdout);
			return cli_finish_stdout(CLI_OK);
		default:
			return cli_bad_option(c, argv);
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
		r = show("available_events", "systems", titles, 's');
	if (r == CLI_OK && ev)
		r = show("available_events", "events", titles, 'e');
	if (r == CLI_OK && clk)
		r = show("trace_clock", "clocks", titles, 'c');
	if (r == CLI_OK && tr)
		r = show("available_tracers", "tracers", titles, 't');
	return cli_finish_stdout(r);
}
