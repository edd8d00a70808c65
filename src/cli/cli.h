/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the tracekit subcommands share: the command entry points, their
 * usage texts and the helpers that print messages in the one format every
 * command uses ("tracekit <cmd>: <message>", lowercase, no final period).
 *
 * Exit codes are the same everywhere: CLI_OK on success, CLI_FAIL when the
 * work failed (bad input, I/O error), CLI_USAGE when the command line was
 * wrong. Commands return one of them from their entry point; nothing below
 * main() calls exit().
 *
 * This header is private to src/cli. The CLI sees only include/tracekit.
 */
#ifndef TRACEKIT_CLI_H
#define TRACEKIT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <tracekit/tracekit.h>

enum {
	CLI_OK = 0,
	CLI_FAIL = 1,
	CLI_USAGE = 2,
};

/* Entry points: argv[0] is the command name; the return value is the exit code. */
int cmd_dump(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_convert_tables(int argc, char **argv); /* --to parquet|sqlite (convert-tables.c) */
int cmd_report(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_restart(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_sched(int argc, char **argv);
int cmd_syscalls(int argc, char **argv);
int cmd_irq(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);

/* Usage texts printed by "tracekit CMD --help" and "tracekit help CMD". */
extern const char cmd_dump_usage[];
extern const char cmd_convert_usage[];
extern const char cmd_convert_tables_usage[];
extern const char cmd_report_usage[];
extern const char cmd_record_usage[];
extern const char cmd_list_usage[];
extern const char cmd_reset_usage[];
extern const char cmd_recover_usage[];
extern const char cmd_cache_usage[];
extern const char cmd_start_usage[];
extern const char cmd_extract_usage[];
extern const char cmd_stop_usage[];
extern const char cmd_restart_usage[];
extern const char cmd_show_usage[];
extern const char cmd_stat_usage[];
extern const char cmd_check_usage[];
extern const char cmd_sched_usage[];
extern const char cmd_syscalls_usage[];
extern const char cmd_irq_usage[];
extern const char cmd_profile_usage[];
extern const char cmd_flamegraph_usage[];

/* Name of the running command ("dump"); set by main() before dispatch. */
extern const char *cli_cmd_name;

/* A library message has been printed (main()'s log handler). */
extern bool cli_logged;

/*
 * The damaged regions a salvaging .dat reader recorded (tk_dat_damage_*),
 * one stderr line each: "tracekit <cmd>: FILE: offset 0xOFF: WHAT (skipped
 * N bytes, M events lost)" ("events lost unknown" when the count is not
 * known). Returns CLI_FAIL when there was any, else @status.
 */
int cli_dat_damage(const struct tk_dat *dat, const char *path, int status);

/* Print "tracekit <cmd>: <message>" to stderr; returns CLI_FAIL. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Print the last library failure (tk_errmsg()) as an error. The library's
 * input errors already name the file; when the message does not contain
 * @path, it is prefixed with "@path: " so that the user always learns
 * which file failed. @path may be NULL. Returns CLI_FAIL.
 */
int cli_lib_error(const char *path);

/*
 * Print a usage error and a hint at "tracekit <cmd> --help" to stderr;
 * returns CLI_USAGE.
 */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Report an option getopt_long() rejected: @c is what it returned ('?' or
 * ':', with opterr = 0 and an optstring starting with ':'). Names the
 * option as the user typed it. Returns CLI_USAGE.
 */
int cli_bad_option(int c, char **argv);

/*
 * The last cases of a command's option switch: for 'h' print @usage to
 * stdout and return cli_finish_stdout(CLI_OK); for anything else return
 * cli_bad_option(@c, @argv).
 */
int cli_help_or_bad_option(int c, char **argv, const char *usage);

/*
 * The one input file of an analysis command, after its options: a lone
 * operand (when no -i gave one) or @fallback (perf's perf.data, trace-cmd's
 * trace.dat) into @*input. Prints a usage error and returns false when
 * there are two.
 */
bool cli_single_input(int argc, char **argv, const char **input, const char *fallback);

/*
 * Label a buffer for a message: "(top)" for the top buffer, else its name in
 * double quotes, cut to 64 bytes, with control and non-ASCII bytes shown as
 * '?' (the name comes from the file, and a message must stay one plain line).
 * Returns @out.
 */
char *cli_buffer_label(const char *name, char *out, size_t cap);

/*
 * A failure while reading one CPU's data (bad chunk, page header out of
 * bounds): print the library's message (which names the file and offset)
 * with the buffer and CPU added unless it already names them. Returns
 * CLI_FAIL.
 */
int cli_cpu_error(const char *path, const char *buffer_name, uint32_t cpu);

/* A positive number that fits in 32 bits, as the user typed it: 0, or -1 for anything else. */
int cli_parse_u32(const char *s, uint32_t *out);

/*
 * --file-version's argument into @*version (6 or 7); anything else is a
 * usage error (printed). Returns CLI_OK or CLI_USAGE.
 */
int cli_parse_file_version(const char *arg, int *version);

/* Flush stdout and report a write error (full disk, closed pipe) as a failure. */
int cli_finish_stdout(int status);

struct tk_perfdata;

/*
 * Print one warning line per damaged region a perf.data reader met
 * (perfdata-damage.c). Returns CLI_FAIL when there was one, else CLI_OK.
 */
int cli_perf_damage(const char *path, const struct tk_perfdata *pd);

/*
 * Keep a copy of main()'s @argv for cli_unwind_heap() and, in a process it started,
 * put GLIBC_TUNABLES back as the user had it (unwind-heap.c). Call first.
 */
void cli_unwind_heap_init(int argc, char **argv);

/*
 * When @pd (opened from @path) holds --call-graph dwarf samples, run this
 * command again with malloc's heap on huge pages (unwind-heap.c); returns
 * when it does not. Call before anything is printed, and only when the
 * frames get inline names (their DWARF is what fills the heap).
 */
void cli_unwind_heap(const char *path, const struct tk_perfdata *pd);

#endif
