// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit profile: the sample profile of a perf.data, printed as
 * `perf report --stdio` (perf 6.1) prints it.
 *
 * The work is tk_profile_run()'s. This file parses perf report's options
 * (-i, -s/--sort, --percent-limit, -g, --children/--no-children, --symfs,
 * --kallsyms) and ours (--json). As in perf, children are on by default
 * when the file's samples carry callchains, and so is the callchain graph
 * (callers first with children).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>

#include "cli.h"

const char cmd_profile_usage[] =
	"usage: tracekit profile [options] [FILE]\n"
	"\n"
	"Where the samples of a perf.data went, printed as 'perf report --stdio'\n"
	"prints it: the sample periods summed per command, shared object and\n"
	"symbol (or the --sort keys), as percentages of each event's total.\n"
	"Symbols come from the binaries (or the build-id cache) whose build id the\n"
	"file recorded; others show as addresses. With callchains (perf record -g),\n"
	"each entry is followed by its call graph, and the children column credits\n"
	"every caller, as perf does.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE        the perf.data (default: FILE, else perf.data)\n"
	"  -s, --sort KEYS         group by keys, from comm, pid, dso, sym, cpu\n"
	"                          (default: comm,dso,sym)\n"
	"      --percent-limit PCT hide entries below PCT percent\n"
	"      --children          add the callers' totals (default with callchains)\n"
	"      --no-children       only the sampled functions' own periods\n"
	"  -g, --call-graph SPEC   none (no graph), or graph with caller / callee order\n"
	"                          (default with callchains: graph,0.5,caller with\n"
	"                          children, graph,0.5,callee without)\n"
	"      --stdio             accepted for perf's command lines\n"
	"      --symfs DIR         look for binaries below DIR\n"
	"      --kallsyms FILE     name kernel addresses from FILE\n"
	"      --vmlinux FILE      name kernel addresses from the ELF FILE, only when\n"
	"                          its build id is the recorded kernel's (perf's -k)\n"
	"      --json              print JSON instead of perf's table\n"
	"  -h, --help              show this help\n";

/*
 * perf's -g: comma-separated, from none, graph, caller, callee, function
 * and a minimum percentage (which perf's --percent-limit overrides; only
 * 0.5 is taken). The other modes (flat, fractal, folded) are not drawn.
 * @*graph: -1 none, else TK_PROFILE_GRAPH with CALLER or CALLEE.
 */
static int parse_graph(const char *spec, int *graph)
{
	char buf[128], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", spec);
	*graph = TK_PROFILE_GRAPH;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "none"))
			*graph = -1;
		else if (!strcmp(tok, "graph") || !strcmp(tok, "function") || !strcmp(tok, "0.5"))
			continue;
		else if (!strcmp(tok, "caller") && *graph > 0)
			*graph = TK_PROFILE_GRAPH | TK_PROFILE_CALLER;
		else if (!strcmp(tok, "callee") && *graph > 0)
			*graph = TK_PROFILE_GRAPH | TK_PROFILE_CALLEE;
		else
			return cli_usage_error(
				"-g %s: '%s' is not drawn (none, graph, caller, callee)", spec,
				tok);
	}
	return 0;
}

int cmd_profile(int argc, char **argv)
{
	enum {
		OPT_JSON = 256,
		OPT_PCT,
		OPT_CHILDREN,
		OPT_NO_CHILDREN,
		OPT_STDIO,
		OPT_SYMFS,
		OPT_KALLSYMS,
		OPT_VMLINUX
	};
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"sort", required_argument, NULL, 's'},
		{"percent-limit", required_argument, NULL, OPT_PCT},
		{"children", no_argument, NULL, OPT_CHILDREN},
		{"no-children", no_argument, NULL, OPT_NO_CHILDREN},
		{"call-graph", required_argument, NULL, 'g'},
		{"stdio", no_argument, NULL, OPT_STDIO},
		{"symfs", required_argument, NULL, OPT_SYMFS},
		{"kallsyms", required_argument, NULL, OPT_KALLSYMS},
		{"vmlinux", required_argument, NULL, OPT_VMLINUX},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_profile_opts opts = {.fd = STDOUT_FILENO};
	const char *input = NULL;
	int children = -1, graph = 0, chains;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, ":i:s:g:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 's':
			opts.sort = optarg;
			break;
		case OPT_PCT:
			errno = 0;
			opts.percent_limit = strtod(optarg, &end);
			if (errno || end == optarg || (*end && strcmp(end, "%")) ||
			    opts.percent_limit < 0)
				return cli_usage_error("bad percent limit '%s'", optarg);
			break;
		case OPT_CHILDREN:
			children = 1;
			break;
		case OPT_NO_CHILDREN:
			children = 0;
			break;
		case 'g':
			r = parse_graph(optarg, &graph);
			if (r)
				return r;
			break;
		case OPT_STDIO:
			break;
		case OPT_SYMFS:
			opts.symfs = optarg;
			break;
		case OPT_KALLSYMS:
			opts.kallsyms = optarg;
			break;
		case OPT_VMLINUX:
			opts.vmlinux = optarg;
			break;
		case OPT_JSON:
			opts.flags |= TK_PROFILE_JSON;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_profile_usage);
		}
	}
	if (!cli_single_input(argc, argv, &input, "perf.data"))
		return CLI_USAGE;
	chains = tk_profile_has_callchains(input);
	if (chains < 0)
		return cli_lib_error(input);
	if (children < 0)
		children = chains == 1;
	if (children)
		opts.flags |= TK_PROFILE_CHILDREN;
	/* perf's default: a graph when the samples have callchains. */
	if (graph > 0)
		opts.flags |= (unsigned int)graph;
	else if (graph == 0 && chains == 1)
		opts.flags |= TK_PROFILE_GRAPH;
	else if (graph == 0 && chains == 2 && !children)
		opts.flags |= TK_PROFILE_GRAPH | TK_PROFILE_CALLER;
	r = tk_profile_run(input, &opts);
	if (r < 0) {
		if (r == -EINVAL && strstr(tk_errmsg(), "sort key"))
			return cli_usage_error("%s", tk_errmsg());
		return cli_lib_error(input);
	}
	return CLI_OK;
}
