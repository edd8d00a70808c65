// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit start, extract, stop, restart, show, stat: trace-cmd's flight-recorder
 * workflow, one entry point per command.
 *
 * "tracekit start" leaves a buffer recording in overwrite mode with no
 * process attached; "extract" writes what it holds as a .dat; "stop" turns
 * it off and "restart" on again; "show" and "stat" look at it; "tracekit reset" removes it. The
 * work is the library's (flight.h); this file parses options and prints.
 *
 * The buffer is tracekit's own instance ("tracekit") unless -B names
 * another or --top asks for the top-level buffer, where trace-cmd works by
 * default: a recorder left running for hours must not take over the buffer
 * other users and tools share. flight.c's design notes say what extract
 * does differently from trace-cmd's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/flight.h>
#include <tracekit/version.h>

#include "cli.h"

#define BUFFER_HELP                                                                                \
	"  -B, --instance NAME     the instance to use (default: tracekit)\n"                      \
	"      --top               the top-level buffer instead, as trace-cmd does\n"

const char cmd_start_usage[] =
	"usage: tracekit start [options]\n"
	"\n"
	"Start a flight recorder: set up tracekit's own tracefs instance (tracekit)\n"
	"in overwrite mode, turn tracing on and exit. The kernel keeps the newest\n"
	"events, --buffer-size KiB per CPU, until 'tracekit extract' writes them to a\n"
	"file. 'tracekit stop' turns it off, 'tracekit reset' removes it. Other\n"
	"users' tracing (the top buffer, their instances) is not touched.\n"
	"\n"
	"options:\n"
	"  -e, --event SYSTEM[:EVENT]  events to trace; globs allowed (repeatable)\n"
	"  -f, --filter EXPR       filter for the events of the preceding -e\n"
	"  -p, --plugin TRACER     tracer to run (see 'tracekit list --tracers')\n"
	"  -b, --buffer-size KB    ring buffer size per CPU, in KiB\n"
	"  -C, --clock CLOCK       trace clock (see 'tracekit list --clocks')\n"
	"  -P, --pid PID           trace only events of this process (repeatable)\n"
	"  -c, --children          with -P, also trace the processes' new children\n" BUFFER_HELP
	"                          (its events are replaced by these)\n"
	"  -h, --help              show this help\n";

const char cmd_extract_usage[] =
	"usage: tracekit extract [options]\n"
	"\n"
	"Write what the flight recorder's buffer holds now as a trace-cmd .dat file.\n"
	"Tracing is off while the buffer is read, then on again if it was: the\n"
	"recorder goes on. Reading consumes the events: a second extract holds only\n"
	"newer ones.\n"
	"\n"
	"options:\n"
	"  -o, --output FILE       output file (default trace.dat)\n" BUFFER_HELP
	"      --compression zstd|zlib|none\n"
	"                          codec (default zstd; v6 is never compressed)\n"
	"      --file-version 6|7  .dat version (default 7)\n"
	"  -q, --quiet             no summary\n"
	"  -h, --help              show this help\n";

const char cmd_stop_usage[] = "usage: tracekit stop [options]\n"
			      "\n"
			      "Stop the flight recorder (tracing_on 0). The buffer, its events\n"
			      "and its set-up stay, for 'tracekit extract' or 'tracekit show'.\n"
			      "\n"
			      "options:\n" BUFFER_HELP "  -h, --help              show this help\n";

const char cmd_restart_usage[] =
	"usage: tracekit restart [options]\n"
	"\n"
	"Turn the flight recorder on again after 'tracekit stop'\n"
	"(tracing_on 1), with the set-up it had.\n"
	"\n"
	"options:\n" BUFFER_HELP "  -h, --help              show this help\n";

const char cmd_show_usage[] =
	"usage: tracekit show [options]\n"
	"\n"
	"Print the flight recorder's buffer as text: the kernel's trace file, as\n"
	"'trace-cmd show' prints it. Nothing is consumed.\n"
	"\n"
	"options:\n" BUFFER_HELP "  -c, --cpu CPU           only this CPU's events\n"
	"  -h, --help              show this help\n";

const char cmd_stat_usage[] =
	"usage: tracekit stat [options]\n"
	"\n"
	"Show how the flight recorder's buffer is set up, as 'trace-cmd stat' does:\n"
	"tracer, enabled events, filters, buffer size, clock, pid filter and whether\n"
	"tracing is on.\n"
	"\n"
	"options:\n" BUFFER_HELP "  -h, --help              show this help\n";

enum { OPT_TOP = 256, OPT_COMPRESSION, OPT_FILE_VERSION };

/*
 * Options of stop, restart and stat: -B, --top, -h. Returns -1 with the buffer
 * chosen, or the exit code to end with (a usage error, or --help printed).
 */
static int parse_buffer_only(int argc, char **argv, const char *usage, const char **instance,
			     bool *top)
{
	static const struct option longopts[] = {
		{"instance", required_argument, NULL, 'B'},
		{"top", no_argument, NULL, OPT_TOP},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, ":B:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'B':
			*instance = optarg;
			break;
		case OPT_TOP:
			*top = true;
			break;
		default:
			return cli_help_or_bad_option(c, argv, usage);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (*top && *instance)
		return cli_usage_error("--top and -B exclude each other");
	return -1;
}

int cmd_start(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"event", required_argument, NULL, 'e'},
		{"filter", required_argument, NULL, 'f'},
		{"plugin", required_argument, NULL, 'p'},
		{"buffer-size", required_argument, NULL, 'b'},
		{"clock", required_argument, NULL, 'C'},
		{"pid", required_argument, NULL, 'P'},
		{"children", no_argument, NULL, 'c'},
		{"instance", required_argument, NULL, 'B'},
		{"top", no_argument, NULL, OPT_TOP},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	TK_OPTS(tk_flight_opts, opts);
	struct tk_record_event *events = calloc((size_t)argc + 1, sizeof(*events));
	int *pids = calloc((size_t)argc + 1, sizeof(*pids));
	size_t nevents = 0, npids = 0;
	uint32_t v = 0;
	int c, r = CLI_OK;

	if (!events || !pids) {
		free(events);
		free(pids);
		return cli_error("out of memory");
	}
	while (r == CLI_OK &&
	       (c = getopt_long(argc, argv, ":e:f:p:b:C:P:cB:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			events[nevents++].spec = optarg;
			break;
		case 'f':
			if (!nevents)
				r = cli_usage_error("-f applies to the events of a preceding -e");
			else
				events[nevents - 1].filter = optarg;
			break;
		case 'p':
			opts.tracer = optarg;
			break;
		case 'b':
			if (cli_parse_u32(optarg, &v) < 0)
				r = cli_usage_error("buffer size must be a positive number of KiB, "
						    "not '%s'",
						    optarg);
			opts.buffer_kb = v;
			break;
		case 'C':
			opts.clock = optarg;
			break;
		case 'P':
			if (cli_parse_u32(optarg, &v) < 0 || v > INT32_MAX)
				r = cli_usage_error("invalid pid '%s'", optarg);
			pids[npids++] = (int)v;
			break;
		case 'c':
			opts.follow_fork = true;
			break;
		case 'B':
			opts.instance = optarg;
			break;
		case OPT_TOP:
			opts.top = true;
			break;
		default:
			/* --help ends the command too, with status 0. */
			free(events);
			free(pids);
			return cli_help_or_bad_option(c, argv, cmd_start_usage);
		}
	}
	if (r == CLI_OK && optind < argc)
		r = cli_usage_error("start takes no command ('%s'): it leaves the buffer "
				    "recording; use 'tracekit record' to trace a command",
				    argv[optind]);
	if (r == CLI_OK && opts.top && opts.instance)
		r = cli_usage_error("--top and -B exclude each other");
	if (r == CLI_OK && !nevents && !opts.tracer)
		r = cli_usage_error("nothing to trace: give events (-e) or a tracer (-p)");
	if (r == CLI_OK && opts.follow_fork && !npids)
		r = cli_usage_error("-c follows the children of -P processes: give -P");
	if (r == CLI_OK) {
		opts.events = events;
		opts.event_count = nevents;
		opts.pids = pids;
		opts.pid_count = npids;
		if (tk_flight_start(&opts) < 0)
			r = cli_lib_error(NULL);
	}
	free(events);
	free(pids);
	return r;
}

int cmd_extract(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"instance", required_argument, NULL, 'B'},
		{"top", no_argument, NULL, OPT_TOP},
		{"compression", required_argument, NULL, OPT_COMPRESSION},
		{"file-version", required_argument, NULL, OPT_FILE_VERSION},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	TK_OPTS(tk_flight_extract_opts, opts, .output = "trace.dat", .file_version = 7);
	struct tk_record_cpu_stats *st = NULL;
	uint64_t events = 0, pages = 0, overwritten = 0, lost = 0;
	const char *codec = NULL;
	bool quiet = false;
	uint32_t n = 0;
	int c;

	while ((c = getopt_long(argc, argv, ":o:B:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			opts.output = optarg;
			break;
		case 'B':
			opts.instance = optarg;
			break;
		case OPT_TOP:
			opts.top = true;
			break;
		case OPT_COMPRESSION:
			codec = optarg;
			break;
		case OPT_FILE_VERSION:
			if (cli_parse_file_version(optarg, &opts.file_version))
				return CLI_USAGE;
			break;
		case 'q':
			quiet = true;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_extract_usage);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (opts.top && opts.instance)
		return cli_usage_error("--top and -B exclude each other");
	if (!codec)
		opts.compression = opts.file_version == 6 ? TK_COMPRESS_NONE : TK_COMPRESS_ZSTD;
	else if (tk_codec_from_name(codec, &opts.compression) < 0)
		return cli_usage_error("unknown compression '%s' (zstd, zlib or none)", codec);
	if (opts.file_version == 6 && opts.compression != TK_COMPRESS_NONE)
		return cli_usage_error(
			"file version 6 cannot be compressed (use --compression none "
			"or --file-version 7)");
	if (tk_flight_extract(&opts, &st, &n) < 0)
		return cli_lib_error(NULL);
	for (uint32_t i = 0; i < n; i++) {
		events += st[i].events;
		pages += st[i].pages;
		overwritten += st[i].overrun;
		lost += st[i].commit_overrun + st[i].dropped_events;
	}
	free(st);
	/*
	 * Overwritten events are what a flight recorder is for (the oldest make
	 * room), so they are counted, not warned about; events the kernel
	 * dropped for other reasons are losses.
	 */
	if (!quiet)
		fprintf(stderr,
			"tracekit extract: %s (v%d, %s): %" PRIu64 " events, %" PRIu64
			" pages from %u CPUs; %" PRIu64 " older events were overwritten\n",
			opts.output, opts.file_version, tk_codec_name(opts.compression), events,
			pages, n, overwritten);
	if (lost)
		fprintf(stderr, "tracekit extract: warning: %" PRIu64 " events were lost\n", lost);
	return CLI_OK;
}

/* stop and restart: a buffer's options, then one library call. */
static int buffer_command(int argc, char **argv, const char *usage,
			  int (*act)(const char *instance, bool top))
{
	const char *instance = NULL;
	bool top = false;
	int r = parse_buffer_only(argc, argv, usage, &instance, &top);

	if (r >= 0)
		return r;
	if (act(instance, top) < 0)
		return cli_lib_error(NULL);
	return CLI_OK;
}

int cmd_stop(int argc, char **argv)
{
	return buffer_command(argc, argv, cmd_stop_usage, tk_flight_stop);
}

int cmd_restart(int argc, char **argv)
{
	return buffer_command(argc, argv, cmd_restart_usage, tk_flight_restart);
}

int cmd_show(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"instance", required_argument, NULL, 'B'},
		{"top", no_argument, NULL, OPT_TOP},
		{"cpu", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *instance = NULL;
	bool top = false;
	int c, cpu = -1;
	uint32_t v;

	while ((c = getopt_long(argc, argv, ":B:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'B':
			instance = optarg;
			break;
		case OPT_TOP:
			top = true;
			break;
		case 'c':
			/* parse_u32 refuses 0, which is a CPU. */
			if (!strcmp(optarg, "0"))
				v = 0;
			else if (cli_parse_u32(optarg, &v) < 0 || v > INT32_MAX)
				return cli_usage_error("invalid CPU '%s'", optarg);
			cpu = (int)v;
			break;
		default:
			return cli_help_or_bad_option(c, argv, cmd_show_usage);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (top && instance)
		return cli_usage_error("--top and -B exclude each other");
	fflush(stdout);
	if (tk_flight_show(instance, top, cpu, STDOUT_FILENO) < 0)
		return cli_lib_error(NULL);
	return CLI_OK;
}

int cmd_stat(int argc, char **argv)
{
	const char *instance = NULL;
	bool top = false;
	char *text;
	int r = parse_buffer_only(argc, argv, cmd_stat_usage, &instance, &top);

	if (r >= 0)
		return r;
	if (tk_flight_stat(instance, top, &text) < 0)
		return cli_lib_error(NULL);
	fputs(text, stdout);
	free(text);
	return cli_finish_stdout(CLI_OK);
}
