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

/*
 * available_events lists SYSTEM:EVENT lines, not grouped by system on every
 * kernel (6.18 interleaves syscalls with others): each system is printed
 * once, where it first appears.
 */
static int print_systems(const char *text)
{
	struct {
		const char *name;
		size_t len;
	} *seen = NULL;
	size_t nseen = 0, cap = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchrnul(p, '\n');
		const char *colon = memchr(p, ':', (size_t)(nl - p));
		size_t i, n = colon ? (size_t)(colon - p) : 0;

		for (i = 0; colon && i < nseen; i++) {
			if (seen[i].len == n && !memcmp(seen[i].name, p, n))
				break;
		}
		if (colon && i == nseen) {
			if (nseen == cap) {
				size_t c = cap ? cap * 2 : 64;
				void *t = realloc(seen, c * sizeof(*seen));

				if (!t) {
					free(seen);
					return cli_error("out of memory");
				}
				seen = t;
				cap = c;
			}
			seen[nseen].name = p;
			seen[nseen++].len = n;
			printf("%.*s\n", (int)n, p);
		}
		p = *nl ? nl + 1 : nl;
	}
	free(seen);
	return CLI_OK;
}

static int show(const char *file, const char *title, bool with_title, int what)
{
	char *text;
	size_t len;
	int ret = CLI_OK;

	if (tk_tracefs_read_top_file(file, &text, &len) < 0)
		return cli_lib_error(NULL);
	if (with_title)
		printf("%s:\n", title);
	if (what == 's') {
		ret = print_systems(text);
	} else if (what == 'e') {
		fputs(text, stdout);
	} else {
		/* One word per line: clocks and tracers come space-separated. */
		for (char *tok = strtok(text, " \n"); tok; tok = strtok(NULL, " \n"))
			printf("%s\n", tok);
	}
	free(text);
	return ret;
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
		r = show("available_events", "systems", titles, 's');
	if (r == CLI_OK && ev)
		r = show("available_events", "events", titles, 'e');
	if (r == CLI_OK && clk)
		r = show("trace_clock", "clocks", titles, 'c');
	if (r == CLI_OK && tr)
		r = show("available_tracers", "tracers", titles, 't');
	return cli_finish_stdout(r);
}
