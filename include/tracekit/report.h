/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * report: a .dat file as text, the way `trace-cmd report` prints it.
 *
 * tk_report_run() opens one per-CPU reader for every CPU of every buffer,
 * merges them by timestamp (ties go to the earlier buffer, then the lower
 * CPU, as trace-cmd does), and prints each record through the event
 * module into one large output buffer. Memory is bounded by the metadata
 * and one page (or compressed chunk) per CPU, whatever the file size.
 */
#ifndef TRACEKIT_REPORT_H
#define TRACEKIT_REPORT_H

#include <tracekit/common.h>
#include <tracekit/dat.h>

struct tk_event_set;
struct tk_event;
struct tk_outbuf;

#ifdef __cplusplus
extern "C" {
#endif

enum {
	TK_REPORT_NSEC = 1 << 0,      /* -t: nanosecond timestamps */
	TK_REPORT_RAW = 1 << 1,	      /* -R: raw field=value text */
	TK_REPORT_LATENCY = 1 << 2,   /* -l: latency columns */
	TK_REPORT_STAT = 1 << 3,      /* --stat: counts instead of events */
	TK_REPORT_JSON = 1 << 4,      /* --json: one object per event */
	TK_REPORT_SLOW = 1 << 5,      /* print every event with libtraceevent (tests) */
	TK_REPORT_FALLBACKS = 1 << 6, /* log, per event, records libtraceevent printed */
	TK_REPORT_HEADER = 1 << 7,    /* "# events lost" / "# file is incomplete" header lines */
	TK_REPORT_SYMBOLS = 1 << 8,   /* probe events: the probed place as " <sym+0xoff (dso)>" */
	TK_REPORT_TS_DIFF = 1 << 9, /* --ts-diff: "(+N)" since the previous line, after the time */
	/* --first-event / --last-event: per CPU of the top buffer, that event's time, no events */
	TK_REPORT_FIRST_EVENT = 1 << 10,
	TK_REPORT_LAST_EVENT = 1 << 11,
	TK_REPORT_CPUS = 1 << 12, /* --cpus: the CPUs of the top buffer with records, no events */
	/* -I / -S: hide records in hard / soft irq context (their common_flags say so) */
	TK_REPORT_NO_HARDIRQ = 1 << 13,
	TK_REPORT_NO_SOFTIRQ = 1 << 14,
	/* -N: no libtraceevent plugins; every event printed by libtraceevent from its format */
	TK_REPORT_NO_PLUGINS = 1 << 15,
	/* trace-cmd's time options: --raw-ts (the ring buffer's counts, no conversion, no
	 * offsets), --nodate (the DATE option left out), --align-ts (times from the first event
	 * of the top buffer), --ts-check (warn when a CPU's time goes backwards) */
	TK_REPORT_RAW_TS = 1 << 16,
	TK_REPORT_NODATE = 1 << 17,
	TK_REPORT_ALIGN_TS = 1 << 18,
	TK_REPORT_TS_CHECK = 1 << 19,
	/*
	 * The caller exits right after the run (the tracekit command does,
	 * unless built for leak checking): the event set the run made
	 * (formats, compiled printers, libtraceevent's handle: ~3 M
	 * instructions to free) is left to the exit. Output, threads and
	 * readers end as always. A library user that goes on leaves it unset.
	 */
	TK_REPORT_EXITING = 1 << 20,
};

/** What to print; zero-initialise and set what is wanted. */
struct tk_report_opts {
	size_t sz;		 /* sizeof(struct tk_report_opts): declare it with TK_OPTS() */
	int fd;			 /* output descriptor */
	unsigned int flags;	 /* TK_REPORT_* */
	const uint8_t *cpu_mask; /* bitmap of CPUs to show; NULL: all */
	uint32_t cpu_mask_bits;
	const char *const *events; /* "name", "system", "system:name"; globs; NULL: all */
	size_t nevents;
	/*
	 * Only events of these pids (NULL: all), as trace-cmd's --pid: the
	 * record's common_pid, or its "pid" or "next_pid" field, is one of
	 * them. Like trace-cmd, an event shown by -F is shown whatever its
	 * pid and one of these pids is shown whatever -F says (the two add).
	 */
	const int *pids;
	size_t npids;
	const char *const *comms; /* only these command names (globs) */
	size_t ncomms;
	bool has_start, has_end;
	uint64_t start_ns, end_ns; /* shown time window, inclusive start, exclusive end */
	/*
	 * Threads that print lines (1: the calling thread alone; 0: one per
	 * online CPU up to 4 when the CPU data is uncompressed and 4 MiB or
	 * more, else 1). The text is the same either way; --stat, --json, -l,
	 * -R, --slow, --fallbacks, --sym and compressed data always print in
	 * one thread (report.c).
	 */
	unsigned int threads;
	/* TK_REPORT_SYMBOLS: the build-id cache; NULL: $TRACEKIT_CACHE_DIR, then ~/.debug. */
	const char *cache_dir;
	/*
	 * trace-cmd's "-v -F SPEC": records these specs (the syntax of
	 * @events) match are not shown, whatever else selects them.
	 */
	const char *const *neg_events;
	size_t nneg_events;
	/*
	 * trace-cmd's -O: libtraceevent plugin options, "[PLUGIN:]OPTION[=VALUE]"
	 * ("function:parent=0"). They are set process-wide before the plugins
	 * load (libtraceevent keeps them globally), each must name an option a
	 * loaded plugin has (else -EINVAL), and every event is then printed by
	 * libtraceevent, where the options act.
	 */
	const char *const *plugin_options;
	size_t nplugin_options;
	/*
	 * Called for every printed line of a single .dat, in time order, after
	 * the line's text and before its newline, with the record and the
	 * file's event set; it may append text to @out (report -w's latency,
	 * tk_wakeup_line()). A run with a hook prints in one thread.
	 */
	void (*line_hook)(void *ctx, const struct tk_event_set *set, const struct tk_event *ev,
			  const void *data, uint32_t size, uint64_t ts, struct tk_outbuf *out);
	void *line_hook_ctx;
	/*
	 * trace-cmd's -r and -n: events whose name or system matches one of
	 * these (a basic regex, anchored, case ignored) print as raw
	 * "field=value" text (@raw_events) or from their print format without
	 * a plugin's handler (@nohandle_events). Either makes libtraceevent
	 * print every event, in one thread.
	 */
	const char *const *raw_events;
	size_t nraw_events;
	const char *const *nohandle_events;
	size_t nnohandle_events;
	/*
	 * trace-cmd's --ts-offset (nanoseconds added to every shown time) and
	 * --ts2secs (the counts' frequency: counts times 1e9 / HZ, in double
	 * precision as trace-cmd computes it, replace the file's conversion);
	 * 0: none. A run with these, or with the time flags above, seeks
	 * --start by reading from the beginning.
	 */
	int64_t ts_offset;
	uint64_t ts2secs_hz;
	/*
	 * trace-cmd's --kallsyms FILE: the functions of this kallsyms text
	 * file join the file's own (read first, so at an address both name,
	 * the file's name wins, as in trace-cmd). The whole file is read,
	 * also from /proc (trace-cmd reads as many bytes as stat() tells:
	 * none from /proc/kallsyms). NULL: the file's alone.
	 */
	const char *kallsyms;
};

/** What a run saw. */
struct tk_report_stats {
	uint64_t events;      /* records read */
	uint64_t printed;     /* records that passed the filters */
	uint64_t lost_events; /* drops counted in the pages' headers */
	uint64_t drop_marks;  /* pages flagged with drops of unknown count */
	uint64_t kernel_lost; /* CPUSTAT: overrun + commit overrun + dropped events */
	uint64_t unrecorded;  /* CPUSTAT: entries left in the kernel buffer */
	uint32_t incomplete;  /* CPUs whose data ended early (the run fails) */
};

/**
 * tk_report_run() - print @dat
 * @stats: optional, receives the counts (also when the run fails part way)
 *
 * Writes the header ("cpus=N") and one line per record to opts->fd. Lost
 * events are reported in the text where trace-cmd reports them ("CPU:N [N
 * EVENTS DROPPED]"), so the default text stays trace-cmd's, and through
 * the log (warning level): the kernel's counts from the CPUSTAT options
 * (overrun, commit overrun, dropped events; entries left unread, which
 * make the file incomplete) before the first record, the counts the pages
 * carry per CPU at the end.
 *
 * With TK_REPORT_HEADER, the header also has, after "cpus=N", one line
 * per CPU that lost events ("# events lost: cpu C: N (kernel: ...;
 * pages: ...)") and one per CPU whose data is incomplete ("# file is
 * incomplete: ..."); to know them up front every page header is read
 * once before the records (compressed data is decompressed twice).
 * TK_REPORT_JSON has no header and ignores it.
 *
 * TK_REPORT_FIRST_EVENT and TK_REPORT_LAST_EVENT print, instead of the
 * events, trace-cmd's "List of CPUs in FILE with data:" and one line per
 * CPU of the top buffer that has records, with the time of its first
 * and/or last record ("  C\tFirst event: T\tLast event: T"); the filters
 * and the time window do not apply. TK_REPORT_CPUS alone prints that list
 * without the times (trace-cmd's --cpus).
 *
 * When one CPU's data ends early (truncated or corrupt chunk, bad page
 * header, a record past its page), that CPU stops, the others are printed
 * to their end, and the run returns -EBADMSG: "file is incomplete: buffer
 * B cpu C: read X of Y bytes of its data: <the error>". That is for a
 * strict @dat; one opened to salvage (tk_dat_open_with()) passes over its
 * damage, which tk_dat_damage_get() lists after the run.
 * Context: blocking I/O.
 * Return: 0, or a negative errno (-EBADMSG for corrupt or incomplete data,
 * write errors, -ENOMEM) with tk_errmsg() explaining.
 */
TK_API int tk_report_run(struct tk_dat *dat, const struct tk_report_opts *opts,
			 struct tk_report_stats *stats);

/**
 * tk_report_run_files() - print several files merged by time
 * @dats:  the open files
 * @names: their paths; each line is prefixed with the base name
 * @n:     how many
 * @opts:  as for tk_report_run(), without TK_REPORT_STAT, JSON, HEADER,
 *         FIRST_EVENT, LAST_EVENT, SYMBOLS and FALLBACKS; printed in one thread
 * @stats: optional, the sums over the files
 *
 * What trace-cmd report -i A -i B prints: each file's "NAME: cpus=N",
 * then the records of all files in time order (ties go to the earlier
 * file), each line after its file's base name right-aligned to the
 * longest and ": ". Each file's times are its own shown times (its clock,
 * offsets and TSC conversion). A file with buffer instances is refused.
 * Context: blocking I/O.
 * Return: 0, or as tk_report_run(); -EINVAL for an option above or a file
 * with instances.
 */
TK_API int tk_report_run_files(struct tk_dat *const *dats, const char *const *names, size_t n,
			       const struct tk_report_opts *opts, struct tk_report_stats *stats);

/**
 * struct tk_report_file_filter - one file's own -F lists
 * @events, @nevents, @neg_events, @nneg_events: as in struct tk_report_opts
 * @ts_offset, @ts2secs_hz: the file's own time options (trace-cmd's
 *	--ts-offset and --ts2secs after its -i)
 */
struct tk_report_file_filter {
	const char *const *events;
	size_t nevents;
	const char *const *neg_events;
	size_t nneg_events;
	int64_t ts_offset;   /* this file's --ts-offset, added to @opts' */
	uint64_t ts2secs_hz; /* this file's --ts2secs; 0: @opts' */
};

/**
 * tk_report_run_files_filtered() - tk_report_run_files() with a filter per file
 * @filters: @n entries, the i-th replacing @opts' event lists for @dats[i];
 *           NULL: @opts' lists for every file
 *
 * trace-cmd report -i A -F X -i B -F Y filters A with X and B with Y (3.1.6
 * gives the -F before the first input to the first file as well).
 * Return: as tk_report_run_files().
 */
TK_API int tk_report_run_files_filtered(struct tk_dat *const *dats, const char *const *names,
					size_t n, const struct tk_report_opts *opts,
					const struct tk_report_file_filter *filters,
					struct tk_report_stats *stats);

/* ------------------------------------------------- listings (report-info.c) */

struct tk_tracedata;

/** What trace-cmd report lists instead of the events (tk_report_list_dat()). */
enum tk_report_list {
	TK_REPORT_LIST_ENDIAN = 1, /* -e: "file is E endian and host is E endian" */
	TK_REPORT_LIST_PRINTK,	   /* -P: the printk formats, "%016llx TEXT", by address */
	TK_REPORT_LIST_FUNCS,	   /* -f: the kallsyms functions, "%016llx NAME[ [MODULE]]" */
	TK_REPORT_LIST_EVENTS,	   /* -E: the event formats stored, "system:name", sorted */
	TK_REPORT_LIST_UNAME,	   /* --uname: "cpus=N", the recorded uname and version */
	TK_REPORT_LIST_VERSION,	   /* --version: "cpus=N", the recording tool's version */
	/* -p: "file page size is N, and host page size is N" */
	TK_REPORT_LIST_PAGE_SIZE,
};

/**
 * tk_report_list_dat() - print one of trace-cmd report's listings of @dat
 * @what: the listing
 * @fd:   where to write it
 *
 * The text is trace-cmd report 3.1.6's (with libtraceevent 1.7.1) for the
 * same option, byte for byte: printk formats and functions as
 * libtraceevent keeps them (quotes and a final "\n" of a format cut;
 * absolute and '$' symbols left out; ties of one address in reverse file
 * order), events sorted by system, name and id. A part the file lacks
 * lists nothing; --uname and --version say " ... was not recorded in this
 * file" as trace-cmd does.
 * Context: blocking I/O; -E parses every event format (~0.1 s for a whole
 * kernel's).
 * Return: 0, -EINVAL (an unknown @what), -ENOMEM, or a write error, with
 * tk_errmsg() explaining.
 */
TK_API int tk_report_list_dat(struct tk_dat *dat, enum tk_report_list what, int fd);

/**
 * tk_report_list_tracedata() - the same from tracing metadata alone
 * @td: e.g. a perf.data file's TRACING_DATA (tk_perfdata_get_tracedata())
 *
 * TK_REPORT_LIST_ENDIAN, _PRINTK, _FUNCS and _EVENTS only: the others need
 * a .dat file's options.
 * Context: as tk_report_list_dat().
 * Return: 0, -EINVAL (a NULL @td, a listing it cannot give), -ENOMEM, or a
 * write error.
 */
TK_API int tk_report_list_tracedata(const struct tk_tracedata *td, enum tk_report_list what,
				    int fd);

/**
 * tk_report_list_formats() - print event format texts, as trace-cmd report
 * --events and --event REGEX print them
 * @td:    the tracing metadata (tk_dat_get_tracedata(), or a perf.data's
 *         TRACING_DATA)
 * @regex: NULL for every event (--events), else trace-cmd's
 *         [SYSTEM:]EVENT: POSIX basic regular expressions, case ignored,
 *         matched anywhere in the name; without a colon the one regex
 *         takes every event of a system it matches, or the events it
 *         matches by name
 * @fd:    where to write
 *
 * For each system in file order that has a matching event, "\nsystem: S\n",
 * then each matching event's format text as stored, then a newline. The
 * ftrace formats are not printed, as trace-cmd 3.1.6 prints none of them
 * from a v6 file. (On a v7 file trace-cmd 3.1.6 and 3.4 print nothing at
 * all; this prints what they print from a v6 file of the same formats.)
 * Context: no I/O but @fd.
 * Return: 0 (also when nothing matches), -EINVAL (NULL @td, a regex that
 * does not compile, with tk_errmsg()), -ENOMEM, or a write error.
 */
TK_API int tk_report_list_formats(const struct tk_tracedata *td, const char *regex, int fd);

/**
 * tk_report_check_formats() - do all event formats of @td parse?
 * @failed: optional, receives how many do not
 *
 * trace-cmd report --check-events: every format is parsed as the report
 * parses it; a second format with an id already taken is not a failure.
 * Context: no I/O; ~0.1 s for a whole kernel's formats.
 * Return: 0 when all parse, 1 when some do not, -EINVAL (NULL @td) or
 * -ENOMEM.
 */
TK_API int tk_report_check_formats(const struct tk_tracedata *td, size_t *failed);

/**
 * tk_report_filter_test() - trace-cmd report -T: the filters as libtraceevent reads them
 * @opts: the filters of a report: @events, @neg_events and @pids
 * @fd:   where to write
 *
 * For each -F string, then each -v -F string, then the string trace-cmd
 * makes of the pids, one " 'EVENT: FILTER'" line per event it names, in
 * trace-cmd 3.1.6's order and text (libtraceevent's
 * tep_filter_make_string()). Nothing else is printed.
 * Context: blocking I/O; parses every event format.
 * Return: 0, -EINVAL for a filter that does not parse (tk_errmsg() names
 * it) or with @comms set, -ENOMEM, or a write error.
 */
TK_API int tk_report_filter_test(struct tk_dat *dat, const struct tk_report_opts *opts, int fd);

#ifdef __cplusplus
}
#endif
#endif
