// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit: main(), the global options and the command table.
 *
 * The layout follows git and trace-cmd: "tracekit CMD [options] [args]",
 * one table row per command with its entry point and a one-line summary,
 * one file per command (cmd-<name>.c). Global options come before the
 * command name and are only the informational ones (--help, --version);
 * everything else belongs to a command, so "tracekit dump --help" and
 * "tracekit help dump" print the same text.
 *
 * Messages: every line this program prints to stderr starts with
 * "tracekit <cmd>: " so that a user running tracekit from a script can tell
 * which step failed. Library warnings are routed through the same prefix
 * with tk_log_set_handler(). Exit status: 0 success, 1 failure, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/version.h>

#include "cli.h"

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage;
};

static const struct cli_command commands[] = {
	{"dump", cmd_dump, "show the structure of a .dat (checking every page) or perf.data",
	 cmd_dump_usage},
	{"convert", cmd_convert,
	 "rewrite a .dat as another version or codec; .dat <-> perf.data; Perfetto",
	 cmd_convert_usage},
	{"report", cmd_report, "print a .dat as trace-cmd report does, a perf.data as perf script",
	 cmd_report_usage},
	{"sched", cmd_sched, "scheduler latency and CPU map of a .dat or perf.data, as perf sched",
	 cmd_sched_usage},
	{"irq", cmd_irq, "hard irq and softirq time by vector", cmd_irq_usage},
	{"syscalls", cmd_syscalls, "per-syscall counts and durations, as perf trace -s",
	 cmd_syscalls_usage},
	{"profile", cmd_profile, "where a perf.data's samples went, as perf report",
	 cmd_profile_usage},
	{"flamegraph", cmd_flamegraph, "folded stacks or an interactive SVG flame graph",
	 cmd_flamegraph_usage},
	{"record", cmd_record, "record events into a .dat, or with --perf into a perf.data",
	 cmd_record_usage},
	{"list", cmd_list, "list the events, clocks and tracers the kernel offers", cmd_list_usage},
	{"start", cmd_start,
	 "start a flight recorder: an overwrite buffer in tracekit's own instance",
	 cmd_start_usage},
	{"extract", cmd_extract, "write what the flight recorder's buffer holds as a .dat",
	 cmd_extract_usage},
	{"stop", cmd_stop, "stop the flight recorder (its buffer stays)", cmd_stop_usage},
	{"restart", cmd_restart, "turn the stopped flight recorder on again", cmd_restart_usage},
	{"show", cmd_show, "print the flight recorder's buffer as the kernel's text",
	 cmd_show_usage},
	{"stat", cmd_stat, "show how the flight recorder is set up, as trace-cmd stat",
	 cmd_stat_usage},
	{"reset", cmd_reset, "remove the flight recorder, and what dead recorders left",
	 cmd_reset_usage},
	{"recover", cmd_recover, "write the .dat of a killed recording", cmd_recover_usage},
	{"cache", cmd_cache, "manage the build-id and probe cache shared with perf (~/.debug)",
	 cmd_cache_usage},
	{"check", cmd_check, "verify that every part of a .dat decodes; list what is damaged",
	 cmd_check_usage},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

const char *cli_cmd_name;

static void vprint_prefixed(const char *extra, const char *fmt, va_list ap)
{
	/*
	 * Build the whole line first so that concurrent writers (tests run
	 * several tracekit processes into one log) never interleave halves.
	 */
	char buf[2048];
	int saved_errno = errno;
	int n;

	if (cli_cmd_name)
		n = snprintf(buf, sizeof(buf), "tracekit %s: %s", cli_cmd_name, extra);
	else
		n = snprintf(buf, sizeof(buf), "tracekit: %s", extra);
	if (n < 0)
		return;
	/* Whatever stdout already holds belongs before the message. */
	fflush(stdout);
	errno = saved_errno; /* for a %m in fmt */
	if ((size_t)n < sizeof(buf))
		vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	fprintf(stderr, "%s\n", buf);
}

int cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_prefixed("", fmt, ap);
	va_end(ap);
	return CLI_FAIL;
}

int cli_lib_error(const char *path)
{
	const char *msg = tk_errmsg();

	if (!msg[0])
		msg = "unknown error";
	if (path && !strstr(msg, path))
		return cli_error("%s: %s", path, msg);
	return cli_error("%s", msg);
}

int cli_dat_damage(const struct tk_dat *dat, const char *path, int status)
{
	size_t n = tk_dat_damage_count(dat);

	for (size_t i = 0; i < n; i++) {
		struct tk_dat_damage dm;
		char lost[48];

		if (tk_dat_damage_get(dat, i, &dm) < 0)
			break;
		if (dm.events_lost >= 0)
			snprintf(lost, sizeof(lost), "%" PRId64 " events lost", dm.events_lost);
		else
			snprintf(lost, sizeof(lost), "events lost unknown");
		cli_error("%s: offset 0x%" PRIx64 ": %s (skipped %" PRIu64 " bytes, %s)", path,
			  dm.offset, dm.what, dm.skipped, lost);
	}
	return n ? CLI_FAIL : status;
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_prefixed("", fmt, ap);
	va_end(ap);
	if (cli_cmd_name)
		fprintf(stderr, "try 'tracekit %s --help' for usage\n", cli_cmd_name);
	else
		fprintf(stderr, "try 'tracekit --help' for usage\n");
	return CLI_USAGE;
}

int cli_bad_option(int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (c == ':')
		return cli_usage_error("option '%s' needs a value", arg);
	/*
	 * A short option inside a cluster ("-qx") leaves optind on the
	 * cluster, so name the letter itself; long options are named as typed.
	 */
	if (optopt > 0 && optopt < 128 && strncmp(arg, "--", 2) != 0)
		return cli_usage_error("unknown option '-%c'", optopt);
	return cli_usage_error("unknown option '%s'", arg);
}

int cli_help_or_bad_option(int c, char **argv, const char *usage)
{
	if (c == 'h') {
		fputs(usage, stdout);
		return cli_finish_stdout(CLI_OK);
	}
	return cli_bad_option(c, argv);
}

bool cli_single_input(int argc, char **argv, const char **input, const char *fallback)
{
	if (optind < argc) {
		if (*input || optind + 1 < argc) {
			cli_usage_error("one input file only");
			return false;
		}
		*input = argv[optind];
	}
	if (!*input)
		*input = fallback;
	return true;
}

char *cli_buffer_label(const char *name, char *out, size_t cap)
{
	size_t n = 0;

	if (!name || !name[0]) {
		snprintf(out, cap, "(top)");
		return out;
	}
	if (cap < 4) {
		if (cap)
			out[0] = '\0';
		return out;
	}
	out[n++] = '"';
	for (size_t i = 0; name[i] && i < 64 && n + 2 < cap; i++) {
		unsigned char ch = (unsigned char)name[i];

		out[n++] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
	}
	out[n++] = '"';
	out[n] = '\0';
	return out;
}

int cli_parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > UINT32_MAX || s[0] == '-')
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int cli_parse_file_version(const char *arg, int *version)
{
	if (strcmp(arg, "6") && strcmp(arg, "7"))
		return cli_usage_error("file version must be 6 or 7, not '%s'", arg);
	*version = arg[0] - '0';
	return CLI_OK;
}

int cli_cpu_error(const char *path, const char *buffer_name, uint32_t cpu)
{
	const char *msg = tk_errmsg();
	const char *sep = strstr(msg, path) ? "" : ": ";
	char label[80], cpu_word[24];

	cli_buffer_label(buffer_name, label, sizeof(label));
	snprintf(cpu_word, sizeof(cpu_word), "CPU %u", cpu);
	if (strstr(msg, cpu_word)) {
		/* The reader named the CPU; only an instance needs naming too. */
		if (buffer_name && buffer_name[0])
			return cli_error("%s%s%s (buffer %s)", sep[0] ? path : "", sep, msg, label);
		return cli_error("%s%s%s", sep[0] ? path : "", sep, msg);
	}
	return cli_error("%s%s%s (buffer %s, cpu %u)", sep[0] ? path : "", sep, msg, label, cpu);
}

int cli_finish_stdout(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (status == CLI_OK)
			status = cli_error("cannot write standard output: %m");
	}
	return status;
}

bool cli_logged;

static void log_handler(enum tk_log_level level, const char *msg, void *ctx)
{
	const char *cmd = ctx;
	const char *what;

	cli_logged = true;
	switch (level) {
	case TK_LOG_ERROR:
		what = "error";
		break;
	case TK_LOG_WARN:
		what = "warning";
		break;
	case TK_LOG_INFO:
		what = "info";
		break;
	default:
		what = "debug";
		break;
	}
	fprintf(stderr, "tracekit %s: %s: %s\n", cmd, what, msg);
}

static void print_commands(FILE *out)
{
	fprintf(out, "usage: tracekit [--version] [--help] <command> [<args>]\n\n"
		     "commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "   %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'tracekit help <command>' or 'tracekit <command> --help' shows a "
		     "command's options.\n");
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	}
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	const struct cli_command *cmd;

	if (argc < 2) {
		print_commands(stdout);
		return cli_finish_stdout(CLI_OK);
	}
	if (argc > 2)
		return cli_usage_error("help takes one command name");
	cmd = find_command(argv[1]);
	if (!cmd)
		return cli_usage_error("'%s' is not a tracekit command", argv[1]);
	fputs(cmd->usage, stdout);
	return cli_finish_stdout(CLI_OK);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const struct cli_command *cmd;
	int c;

	cli_unwind_heap_init(argc, argv);
	/* "+" stops at the command name: its options are the command's. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_commands(stdout);
			return cli_finish_stdout(CLI_OK);
		case 'V':
			printf("%s\n", TK_VERSION_TEXT);
			return cli_finish_stdout(CLI_OK);
		default:
			return cli_bad_option(c, argv);
		}
	}
	if (optind >= argc) {
		print_commands(stderr);
		return CLI_USAGE;
	}

	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help"))
		return cmd_help(argc, argv);

	cmd = find_command(argv[0]);
	if (!cmd)
		return cli_usage_error("'%s' is not a tracekit command", argv[0]);

	cli_cmd_name = cmd->name;
	tk_log_set_handler(log_handler, (void *)cmd->name, TK_LOG_WARN);
	/* glibc: optind 0 reinitialises getopt for the command's own parse. */
	optind = 0;
	return cmd->fn(argc, argv);
}
