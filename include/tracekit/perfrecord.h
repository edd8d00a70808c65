/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tracekit perfrecord: record tracepoints, software and hardware events
 * through perf_event_open into a perf.data file (written with the perfdata
 * writer), system-wide on every online CPU or following a command and its
 * children, for a duration or around the command.
 */
#ifndef TRACEKIT_PERFRECORD_H
#define TRACEKIT_PERFRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * One -e argument: a software or hardware event as perf names it
 * ("cpu-clock", "task-clock", "page-faults", "context-switches", "cycles",
 * "instructions"..., optionally with a ":u" or ":k" modifier), sampled by
 * frequency or period; or a tracepoint "SYSTEM:EVENT" or "SYSTEM" (globs
 * allowed in both parts), sampled at every hit.
 */
struct tk_perfrecord_event {
	const char *spec;
	const char *filter; /* tracepoint filter (PERF_EVENT_IOC_SET_FILTER) or NULL;
			       -EINVAL for a software or hardware event */
	uint32_t group;	    /* 0: alone. Events with the same non-zero
			       group open as one perf group ({a,b}): the
			       first listed leads, the others count only
			       while it is scheduled */
};

/** How samples carry callchains (perf record --call-graph). */
enum tk_perfrecord_callgraph {
	TK_PERFRECORD_CALLGRAPH_NONE = 0, /* none (unless @callchain) */
	TK_PERFRECORD_CALLGRAPH_FP,	  /* the kernel walks frame pointers */
	TK_PERFRECORD_CALLGRAPH_DWARF,	  /* user registers and a copy of the user
					     stack, unwound by the reader */
	TK_PERFRECORD_CALLGRAPH_LBR,	  /* the CPU's last branch records
					     (hardware events on Intel only) */
};

/**
 * tk_perfrecord_parse_events() - split one perf -e argument into events
 * @arg:    what follows -e: a comma list of event specs, where "{a,b,...}"
 *          is a group, optionally followed by ":MODIFIERS" that apply to
 *          every member ("{cycles,instructions}:u")
 * @events: array to append to (*events NULL and *nr 0 the first time);
 *          grown with realloc
 * @nr:     its length, updated
 *
 * Each spec is copied; events of a group get a group number one above
 * the highest already in @events. Names and modifiers are checked later,
 * by tk_perfrecord_run() (u, k and p, pp, ppp as perf takes them).
 *
 * Context: any thread.
 * Return: 0, or -EINVAL (an empty element, braces that do not pair, a group
 * inside a group) or -ENOMEM with tk_errmsg() set; on failure @events and
 * @nr are as they were. Free with tk_perfrecord_events_free().
 */
TK_API int tk_perfrecord_parse_events(const char *arg, struct tk_perfrecord_event **events,
				      size_t *nr);

/**
 * tk_perfrecord_events_free() - free what tk_perfrecord_parse_events() made
 * @events: the array, or NULL
 * @nr:     its length
 *
 * Frees every spec and the array; the filters are the caller's.
 *
 * Context: any thread.
 */
TK_API void tk_perfrecord_events_free(struct tk_perfrecord_event *events, size_t nr);

/** The largest user stack dump (a record's size is 16 bits). */
#define TK_PERFRECORD_MAX_STACK 65528u
/** tk_perfrecord_opts.freq: kernel.perf_event_max_sample_rate (perf's -F max). */
#define TK_PERFRECORD_FREQ_MAX UINT64_MAX

/**
 * tk_perfrecord_parse_callgraph() - read a perf --call-graph value
 * @arg:        "fp", "dwarf", "dwarf,SIZE" or "lbr"
 * @mode:       receives the mode
 * @stack_size: receives SIZE rounded up to a multiple of 8, 0 when not given
 *
 * Context: any thread.
 * Return: 0, or -EINVAL with tk_errmsg() set (another mode, a size of 0 or
 * above TK_PERFRECORD_MAX_STACK).
 */
TK_API int tk_perfrecord_parse_callgraph(const char *arg, enum tk_perfrecord_callgraph *mode,
					 uint32_t *stack_size);

/**
 * tk_perfrecord_parse_list() - read a list such as perf's -C 0-3,6 or -p 12,34
 * @arg: comma-separated numbers and ranges LO-HI (non-negative, LO <= HI)
 * @out: receives a malloc'ed array of the numbers in order; the caller frees
 * @nr:  receives its length (at least 1)
 *
 * Context: any thread.
 * Return: 0, or -EINVAL (not such a list, more than 65536 numbers in all) or
 * -ENOMEM with tk_errmsg() set; @out is untouched then.
 */
TK_API int tk_perfrecord_parse_list(const char *arg, int32_t **out, size_t *nr);

/** What tk_perfrecord_run() records; zero-initialise. */
struct tk_perfrecord_opts {
	size_t sz;	    /* sizeof(struct tk_perfrecord_opts): declare it with TK_OPTS() */
	const char *output; /* perf.data path */
	const struct tk_perfrecord_event *events;
	size_t nr_events;
	double duration;			/* seconds; 0: until the command exits
						   or a signal */
	char *const *command;			/* NULL-terminated argv, or NULL */
	uint32_t mmap_pages;			/* data pages per CPU ring (power of 2);
						   0: 64 */
	int argc;				/* command line for the CMDLINE feature */
	const char *const *argv;		/* (argv[0] is replaced by the executable
						   path); NULL: this process's own */
	uint64_t freq;				/* samples/s of software and hardware
						   events; 0: 4000 (unless @period) */
	uint64_t period;			/* sample every @period events instead
						   (all events, tracepoints too); 0: off */
	bool callchain;				/* PERF_SAMPLE_CALLCHAIN on every event */
	bool system_wide;			/* every task on every CPU; implied
						   without @command. Otherwise only the
						   command and its descendants (events
						   inherit, enabled at its exec) */
	bool append;				/* add a recording to @output, a
						   finished perf.data
						   (tk_perfdata_writer_open_append()) */
	bool use_clockid;			/* sample times from @clockid
						   (attr.use_clockid), with the
						   CLOCKID and CLOCK_DATA features;
						   otherwise the kernel's perf clock */
	int32_t clockid;			/* CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW
						   (any event), CLOCK_REALTIME,
						   CLOCK_BOOTTIME, CLOCK_TAI (software
						   events only: not NMI-safe) */
	enum tk_perfrecord_callgraph callgraph; /* FP also when @callchain */
	uint32_t stack_size;			/* DWARF: user stack bytes per
						   sample (multiple of 8, at
						   most 65528); 0: 8192 */
	const int32_t *cpus;			/* record on these CPUs only (each must be
						   online); NULL: every online CPU */
	size_t nr_cpus;
	const int32_t *pids; /* follow these existing processes (all
				their threads, and children they fork)
				instead of a command or the whole system,
				until they have all exited */
	size_t nr_pids;
	const int32_t *tids; /* idem, these threads only */
	size_t nr_tids;
};

/** What tk_perfrecord_run() did. */
struct tk_perfrecord_stats {
	uint32_t nr_cpus;	 /* CPUs recorded */
	uint32_t nr_tracepoints; /* tracepoints after glob expansion */
	uint32_t nr_counters;	 /* software and hardware events */
	uint32_t nr_build_ids;	 /* BUILD_ID entries of the DSOs samples hit */
	uint64_t samples;	 /* SAMPLE records written */
	uint64_t records;	 /* all records from the rings */
	uint64_t lost;		 /* samples the kernel dropped (PERF_RECORD_LOST sums) */
	uint64_t lost_records;	 /* PERF_RECORD_LOST records */
	uint64_t bytes;		 /* data section size */
	bool child_exited;	 /* the command ran and exited */
	int child_status;	 /* its wait status */
	bool child_failed;	 /* it exited non-zero or died of a signal the
				    recorder did not send (tk_command_failed()) */
	char child_outcome[96];	 /* tk_command_describe(): "exited with status 3" */
	int stop_signal;	 /* SIGINT/SIGTERM/SIGHUP that ended the recording, or 0 */
	uint32_t nr_fallbacks;	 /* cycles events recorded as cpu-clock
				    (no hardware PMU), as perf falls back */
};

/**
 * tk_perfrecord_run() - record events into a perf.data file
 * @opts:  what to record and where
 * @stats: receives the counters (also on failure, as far as it got); may be NULL
 *
 * Opens every event once per online CPU, or per CPU of @cpus, and per
 * thread of @pids/@tids when given (tracepoints: sample_period 1,
 * IDENTIFIER|IP|TID|TIME|CPU|PERIOD|RAW; software and hardware events:
 * IDENTIFIER|IP|TID|TIME|CPU|PERIOD, by frequency or period; what
 * @callgraph asks for added; events of one group under their leader, and
 * GROUP_DESC; a cycles event without a PMU falls back to cpu-clock with a
 * warning through the log handler) plus a dummy event per CPU that carries COMM
 * (with exec), MMAP2, FORK and EXIT, one ring of @mmap_pages per CPU
 * shared by that CPU's events. System-wide, the file gets a COMM for every
 * thread alive at the start and an MMAP2 for every executable mapping of
 * every process; following a command, a COMM for the command. Both get the
 * kernel's MMAP ("[kernel.kallsyms]_text") as perf writes it. Then the ring
 * contents with a FINISHED_ROUND after each drain pass. TRACING_DATA (when
 * tracepoints are recorded), the host features, CMDLINE and, with
 * @use_clockid, CLOCKID and CLOCK_DATA (the clock's resolution and a pair
 * of CLOCK_REALTIME and @clockid readings taken as recording starts, from
 * which perf converts sample times to wall-clock time) are written before
 * the data, and what was drained is committed about every 100 ms,
 * so that a recorder killed at any moment (SIGKILL) leaves a file perf and
 * tracekit read up to the last commit. At the end come BUILD_ID for the
 * kernel, [vdso] and every file that a sample's ip hit, and SAMPLE_TIME.
 * The command is forked first, held until the events are open (and, system
 * wide, enabled), then exec'ed; recording stops when it exits, after
 * @duration, or on SIGINT/SIGTERM/SIGHUP.
 *
 * Context: blocking; for its duration SIGINT, SIGTERM, SIGHUP and SIGCHLD
 * are blocked in the calling thread and taken through a signalfd (the
 * previous mask is restored). Reaps the command's child process. Needs
 * CAP_PERFMON (or root) and tracefs.
 * Return: 0, or a negative errno with tk_errmsg() set: -ENOENT (no
 * tracepoint matches a spec; a hardware event this machine lacks),
 * -EOPNOTSUPP (idem, other kernels), -EINVAL (bad options, a filter on a
 * non-tracepoint, --freq above kernel.perf_event_max_sample_rate, a
 * clock the kernel refuses for an event, an append whose events do not
 * match the file's: the file is then left untouched), -EACCES/-EPERM
 * (perf_event_open refused), exec errors of the command, I/O errors.
 */
TK_API int tk_perfrecord_run(const struct tk_perfrecord_opts *opts,
			     struct tk_perfrecord_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
