/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * analyze: answers computed from a trace (.dat or perf.data) in one pass,
 * printed as the tools users know print them.
 *
 * Today: `perf sched latency` and `perf sched map` (perf 6.1).
 * Each analysis reads only the events and fields it needs, in time order,
 * and keeps per-task state only.
 */
#ifndef TRACEKIT_ANALYZE_H
#define TRACEKIT_ANALYZE_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of struct tk_sched_opts. */
enum {
	TK_SCHED_JSON = 1 << 0,	       /* one JSON document instead of perf's text */
	TK_SCHED_PER_PID = 1 << 1,     /* one line per thread (perf sched latency -p) */
	TK_SCHED_PERCENTILES = 1 << 2, /* add p50/p90/p99/p99.9/max of the delays per task */
	TK_SCHED_HIST = 1 << 3,	       /* add a log2 histogram of the delays per task */
};

/**
 * struct tk_sched_opts - what tk_sched_latency_run() prints, and where
 * @fd:    where the text goes
 * @sort:  perf's sort keys, comma or space separated, from "pid", "avg",
 *         "max", "switch", "runtime"; NULL: "avg, max, switch, runtime"
 * @cpu:   perf's -C: the CPU whose migrations count, or -1
 * @flags: TK_SCHED_*
 */
struct tk_sched_opts {
	int fd;
	const char *sort;
	int cpu;
	unsigned int flags;
};

/**
 * tk_sched_latency_run() - `perf sched latency` of a .dat or perf.data
 * @path: the file; its kind is read from its first bytes
 * @opts: as above
 *
 * Per task (threads of one command merged, as perf does, unless
 * TK_SCHED_PER_PID): run time from sched_stat_runtime, the number of times
 * it was switched in after waiting to run, the average and largest
 * scheduling delay (wake-up or preemption to switch-in) and when the
 * largest began and ended; then perf's TOTAL and INFO lines. A .dat's
 * threads are named from its saved command lines, as `tracekit convert
 * --to perf` names them, so the text equals perf's on the converted file.
 * Context: blocking I/O; memory is per task (plus every delay with
 * TK_SCHED_PERCENTILES).
 * Return: 0; -EINVAL for an unknown sort key; -ENOENT when the file has no
 * sched:sched_switch; read errors, -EBADMSG, -ENOMEM, write errors; each
 * with tk_errmsg() naming the file.
 */
TK_API int tk_sched_latency_run(const char *path, const struct tk_sched_opts *opts);

/**
 * tk_sched_map_run() - `perf sched map` of a .dat or perf.data
 * @path: the file
 * @opts: @fd only (sort, cpu and flags are ignored)
 *
 * One line per sched_switch, in time order: a column per CPU with the
 * two-character name of the task it runs ('*' on the switching CPU), the
 * time, and "NAME => comm:tid" when a task first runs or was renamed. As
 * perf does, the columns are the analysing machine's configured CPUs (or
 * up to the highest CPU seen, without it).
 * Context: blocking I/O; memory is per task.
 * Return: 0, or as tk_sched_latency_run().
 */
TK_API int tk_sched_map_run(const char *path, const struct tk_sched_opts *opts);

/**
 * tk_sched_latency_compare_run() - two captures' `perf sched latency` side by side
 * @a, @b: the files
 * @opts: as for tk_sched_latency_run() (sort, -p, -C; TK_SCHED_JSON)
 *
 * Per task (matched by name, and tid with TK_SCHED_PER_PID; A's order,
 * then B's new tasks): switches, average and largest scheduling delay in
 * A and in B, and the change of the average ("+12.5%", "new", "gone").
 * Context: blocking I/O; memory is both tables.
 * Return: 0, or as tk_sched_latency_run() for either file.
 */
TK_API int tk_sched_latency_compare_run(const char *a, const char *b,
					const struct tk_sched_opts *opts);

/* Flags of struct tk_timehist_opts. */
enum {
	TK_TIMEHIST_SUMMARY = 1 << 0,	   /* -S: the events, then the runtime summary */
	TK_TIMEHIST_SUMMARY_ONLY = 1 << 1, /* -s: the summary only */
	TK_TIMEHIST_WAKEUPS = 1 << 2,	   /* -w: a line per wake-up */
	TK_TIMEHIST_MIGRATIONS = 1 << 3,   /* -M: a line per migration, counted in the summary */
	TK_TIMEHIST_CPU_VISUAL = 1 << 4,   /* -V: a column per CPU */
	TK_TIMEHIST_STATE = 1 << 5,	   /* --state: the state left in; wait-time summary */
	TK_TIMEHIST_JSON = 1 << 6,	   /* one JSON document instead of perf's text */
	TK_TIMEHIST_PERCENTILES = 1 << 7,  /* p50..max of wait, delay and run over all lines */
	TK_TIMEHIST_HIST = 1 << 8,	   /* log2 histograms of the same */
};

/**
 * struct tk_timehist_opts - what tk_sched_timehist_run() prints, and where
 * @fd:    where the text goes
 * @flags: TK_TIMEHIST_*
 * @pids, @npids: perf's -p: only threads of these processes (none: all)
 * @tids, @ntids: perf's -t: only these threads
 * @cpus, @ncpus: perf's -C: cpus[i] true for a CPU to show (NULL: all)
 */
struct tk_timehist_opts {
	int fd;
	unsigned int flags;
	const int32_t *pids;
	size_t npids;
	const int32_t *tids;
	size_t ntids;
	const bool *cpus;
	size_t ncpus;
};

/**
 * tk_sched_timehist_run() - `perf sched timehist` of a .dat or perf.data
 * @path: the file
 * @opts: as above
 *
 * One line per sched_switch for the task leaving the CPU: time, CPU, task,
 * wait time (off the CPU before its last run), scheduling delay (wake-up
 * to that run) and run time, as perf 6.1 prints them; with the flags,
 * wake-up and migration lines, a CPU column map, the state left in, and
 * the per-thread summary with perf's idle and total lines. A .dat prints
 * what perf prints on its `tracekit convert --to perf` conversion.
 * Context: blocking I/O; memory is per thread (plus three numbers per line
 * with TK_TIMEHIST_PERCENTILES or TK_TIMEHIST_HIST).
 * Return: 0; -ENOENT when the file has no sched:sched_switch; read errors,
 * -EBADMSG, -ENOMEM, write errors; each with tk_errmsg() naming the file.
 */
TK_API int tk_sched_timehist_run(const char *path, const struct tk_timehist_opts *opts);

/* Flags of struct tk_syscalls_opts. */
enum {
	TK_SYSCALLS_JSON = 1 << 0,	  /* one JSON document instead of perf's text */
	TK_SYSCALLS_PERCENTILES = 1 << 1, /* p50..max of the durations per thread and syscall */
	TK_SYSCALLS_HIST = 1 << 2,	  /* a log2 histogram of the same */
};

/**
 * struct tk_syscalls_opts - what tk_syscalls_run() prints, and where
 * @fd:    where the text goes
 * @flags: TK_SYSCALLS_*
 */
struct tk_syscalls_opts {
	int fd;
	unsigned int flags;
};

/**
 * tk_syscalls_run() - `perf trace -s` of a .dat or perf.data
 * @path: the file, holding raw_syscalls:sys_enter and sys_exit
 * @opts: as above
 *
 * Per thread (perf 6.1's order) the number of events and their share, then
 * per syscall the calls, errors (negative returns), total, smallest,
 * average and largest duration in ms and the relative standard deviation,
 * as perf trace -s prints them (perf prints them on stderr; this writes
 * @opts->fd). Names come from tables generated from the kernel's uapi
 * headers for the file's architecture (x86_64, i386).
 * Context: blocking I/O; memory is per thread and syscall (plus every
 * duration with TK_SYSCALLS_PERCENTILES or TK_SYSCALLS_HIST).
 * Return: 0; -ENOENT when the file has no raw_syscalls:sys_exit; read
 * errors, -EBADMSG, -ENOMEM, write errors; each with tk_errmsg() set.
 */
TK_API int tk_syscalls_run(const char *path, const struct tk_syscalls_opts *opts);

/**
 * tk_syscalls_compare_run() - two traces' syscalls side by side
 * @a, @b: the files (each as tk_syscalls_run() reads them)
 * @opts: @fd, and TK_SYSCALLS_JSON (the other flags are ignored)
 *
 * Per syscall over all threads: calls, errors and total time in A and in
 * B, and the change of the total ("+12.5%", "new", "gone"), largest first.
 * Context: blocking I/O; memory is per thread and syscall of both files.
 * Return: 0, or as tk_syscalls_run() for either file.
 */
TK_API int tk_syscalls_compare_run(const char *a, const char *b,
				   const struct tk_syscalls_opts *opts);

/* Flags of struct tk_taskprofile_opts. */
enum {
	TK_TASKPROFILE_JSON = 1 << 0, /* one JSON document instead of trace-cmd's text */
};

/**
 * struct tk_taskprofile_opts - what tk_taskprofile_run() prints, and where
 * @fd:    where the text goes
 * @flags: TK_TASKPROFILE_*
 */
struct tk_taskprofile_opts {
	int fd;
	unsigned int flags;
};

/**
 * tk_taskprofile_run() - `trace-cmd report --profile` of a .dat
 * @path: the .dat
 * @opts: as above
 *
 * trace-cmd 3.1.6's task profile: "cpus=N", then per task ("task:
 * comm-pid") its events with their counts and, for the paired ones
 * (sched_switch out to in or to wake-up, sched_wakeup to switch in,
 * sys_enter to sys_exit, irq and softirq entry to exit, softirq raise to
 * entry), the total, average, largest and smallest time in ns and when
 * the largest and smallest ended. Tasks come in trace-cmd's order; events
 * within a task too, except that ties trace-cmd breaks by heap addresses
 * are broken by value. Function-graph timings and stack traces (trace-cmd
 * record --profile's function tracing) are not profiled.
 * Context: blocking I/O; memory is per task and event (plus the starts
 * still waiting for their ends).
 * Return: 0; read errors, -EBADMSG, -ENOMEM, write errors, with
 * tk_errmsg() naming the file.
 */
TK_API int tk_taskprofile_run(const char *path, const struct tk_taskprofile_opts *opts);

struct tk_event_set;
struct tk_event;
struct tk_outbuf;

/* Flags of tk_wakeup_new(). */
enum {
	TK_WAKEUP_PERCENTILES = 1 << 0, /* after the summary: p50..max of the latencies */
	TK_WAKEUP_HIST = 1 << 1,	/* after the summary: their log2 histogram */
	TK_WAKEUP_JSON = 1 << 2,	/* tk_wakeup_finish() prints the summary as JSON */
};

/**
 * tk_wakeup_new() - `trace-cmd report -w` wake-up latency, as a report line hook
 * @flags: TK_WAKEUP_*
 *
 * Give tk_wakeup_line() and the handle to tk_report_run() as its
 * line_hook and line_hook_ctx: each printed sched_switch that switches in
 * a task with a pending wake-up gets trace-cmd 3.1.6's " Latency: U.UUU
 * usecs". tk_wakeup_finish() then prints trace-cmd's summary.
 * Return: the handle (free with tk_wakeup_free()), or NULL with errno
 * ENOMEM.
 */
TK_API struct tk_wakeup *tk_wakeup_new(unsigned int flags);

/**
 * tk_wakeup_line() - the line hook (struct tk_report_opts.line_hook)
 * @ctx: the tk_wakeup handle
 * @set, @ev, @data, @size, @ts: the printed record
 * @out: the line being printed; the latency is appended to it
 * Context: called by the report, in time order, on one thread.
 */
TK_API void tk_wakeup_line(void *ctx, const struct tk_event_set *set, const struct tk_event *ev,
			   const void *data, uint32_t size, uint64_t ts, struct tk_outbuf *out);

/**
 * tk_wakeup_finish() - print the summary to @fd
 * @w: the handle, after the report ran
 * @fd: where
 *
 * "Average wakeup latency", "Maximum Latency" and "Minimum Latency" (and
 * the same after "RT task timings:" for tasks of priority below 100), as
 * trace-cmd prints them after the events; nothing when no latency was
 * measured. With the flags, our percentiles and histogram follow.
 * Return: 0, -ENOMEM (a latency could not be kept), or a write error.
 */
TK_API int tk_wakeup_finish(struct tk_wakeup *w, int fd);

/** tk_wakeup_free() - free the handle; NULL is ignored. */
TK_API void tk_wakeup_free(struct tk_wakeup *w);

/* Flags of struct tk_irq_opts. */
enum {
	TK_IRQ_JSON = 1 << 0,	     /* one JSON document instead of the tables */
	TK_IRQ_PERCENTILES = 1 << 1, /* p50, p90, p99, p99.9 columns per vector */
	TK_IRQ_HIST = 1 << 2,	     /* a log2 histogram under each vector */
};

/**
 * struct tk_irq_opts - what tk_irq_run() prints, and where
 * @fd:    where the text goes
 * @flags: TK_IRQ_*
 */
struct tk_irq_opts {
	int fd;
	unsigned int flags;
};

/**
 * tk_irq_run() - interrupt time by vector of a .dat or perf.data
 * @path: the file, holding irq:irq_handler_entry/exit and/or
 *        irq:softirq_entry/exit (and softirq_raise)
 * @opts: as above
 *
 * Three tables: hard irq handler runs by irq number, softirq runs by vector
 * (TIMER, NET_RX, ...), and softirq raise-to-run latency by vector, each
 * with count, total, average, smallest and largest time (entry and exit
 * paired per CPU), largest total first.
 * Context: blocking I/O; memory per vector (plus every duration with
 * TK_IRQ_PERCENTILES or TK_IRQ_HIST).
 * Return: 0; -ENOENT when the file has no irq entry events; read errors,
 * -EBADMSG, -ENOMEM, write errors; each with tk_errmsg() set.
 */
TK_API int tk_irq_run(const char *path, const struct tk_irq_opts *opts);

/* Flags of struct tk_balance_opts. */
enum {
	TK_BALANCE_JSON = 1 << 0, /* one JSON document instead of the table */
};

/**
 * struct tk_balance_opts - what tk_sched_balance_run() prints, and where
 * @fd:          where the text goes
 * @flags:       TK_BALANCE_*
 * @interval_ns: the window (0: 100 ms)
 */
struct tk_balance_opts {
	int fd;
	unsigned int flags;
	uint64_t interval_ns;
};

/**
 * tk_sched_balance_run() - per-CPU run-queue balance over time
 * @path: a .dat or perf.data with sched_switch and wake-up events
 * @opts: as above
 *
 * Per window of @opts->interval_ns and CPU: the average number of tasks
 * waiting to run on it (from wake-ups to their target CPU, preemptions,
 * migrations and switch-ins) and the share of time it ran a task; per
 * window the imbalance (largest average queue minus smallest), and the
 * mean and worst imbalance.
 * Context: blocking I/O; memory per task and per window.
 * Return: 0; -ENOENT without sched_switch; read errors, -EBADMSG, -ENOMEM,
 * write errors; each with tk_errmsg() set.
 */
TK_API int tk_sched_balance_run(const char *path, const struct tk_balance_opts *opts);
/* Flags of struct tk_profile_opts. */
enum {
	TK_PROFILE_JSON = 1 << 0,     /* one JSON document instead of perf's text */
	TK_PROFILE_CHILDREN = 1 << 1, /* add the children column (perf's --children) */
	TK_PROFILE_GRAPH = 1 << 2,    /* draw each entry's callchain graph (perf's -g graph) */
	TK_PROFILE_CALLER = 1 << 3,   /* graph from callers to callees (perf's -g caller) */
	TK_PROFILE_CALLEE = 1 << 4,   /* graph from the sampled function out (-g callee) */
};

/**
 * struct tk_profile_opts - what tk_profile_run() prints, and where
 * @fd:            where the text goes
 * @sort:          perf's --sort keys, comma separated, from "comm", "pid",
 *                 "dso", "sym", "cpu"; NULL: "comm,dso,sym"
 * @percent_limit: entries below this percentage are not printed (perf's
 *                 --percent-limit; of the children total with children);
 *                 also the graph's threshold (else 0.5%)
 * @flags:         TK_PROFILE_*
 * @symfs:         perf's --symfs, or NULL
 * @kallsyms:      perf's --kallsyms, or NULL
 * @vmlinux:       perf's --vmlinux (used only when its build id is the
 *                 recorded kernel's), or NULL
 */
struct tk_profile_opts {
	int fd;
	const char *sort;
	double percent_limit;
	unsigned int flags;
	const char *symfs;
	const char *kallsyms;
	const char *vmlinux;
};

/**
 * tk_profile_run() - `perf report --stdio` of a perf.data
 * @path: the perf.data
 * @opts: as above
 *
 * Per event with samples: perf's header lines, then the sample periods
 * summed per value of the sort keys, as percentages of the event's total,
 * sorted and laid out as perf 6.1 prints them (without its closing random
 * tip). Symbols and dsos come from the symbolizer under the build-id
 * rules (a file whose build id differs from the recorded one gives no
 * symbol: perf's address form). With TK_PROFILE_CHILDREN every function
 * of a sample's callchain is credited its period once ("Children").
 * With TK_PROFILE_GRAPH each entry is followed by perf's callchain graph
 * (graph mode, absolute percentages; callers first by default with
 * children, else the sampled function first).
 * Context: blocking I/O; memory is per distinct entry and symbol table.
 * Return: 0; -EINVAL for an unknown sort key; -ENOENT for a .dat; read
 * errors, -EBADMSG, -ENOMEM, write errors; each with tk_errmsg() set.
 */
TK_API int tk_profile_run(const char *path, const struct tk_profile_opts *opts);

/**
 * tk_profile_has_callchains() - whether an event of a perf.data records callchains
 * @path: the file (a .dat gives 0)
 *
 * perf report turns children and graphs on by default exactly then. A
 * pipe-mode file gives 2: perf decides before its events arrive, and then
 * draws caller-ordered graphs without children.
 * Return: 1, 0, 2, or a negative errno with tk_errmsg() set.
 */
TK_API int tk_profile_has_callchains(const char *path);

/* Flags of struct tk_flamegraph_opts. */
enum {
	TK_FLAMEGRAPH_FOLDED = 1 << 0,	/* folded stacks (stackcollapse) instead of SVG */
	TK_FLAMEGRAPH_OFF_CPU = 1 << 1, /* off-CPU time from sched_switch instead of samples */
};

/**
 * struct tk_flamegraph_opts - what tk_flamegraph_run() writes, and where
 * @fd:     where the output goes
 * @flags:  TK_FLAMEGRAPH_*
 * @title:  the SVG's title; NULL: "Flame Graph" ("Off-CPU Time Flame Graph")
 * @width:  the SVG's width in pixels; 0: 1200
 */
struct tk_flamegraph_opts {
	int fd;
	unsigned int flags;
	const char *title;
	unsigned int width;
};

/**
 * tk_flamegraph_run() - a flame graph of a perf.data's or a .dat's stacks
 * @path: the file; its kind is read from its first bytes
 * @opts: as above
 *
 * Stacks: a perf.data's sample callchains (symbols as tk_profile_run()
 * names them), or a .dat's kernel stack traces (ftrace's kernel_stack
 * records, trace-cmd record -T: one stack per record, under its task's
 * saved command line, names from the file's kallsyms); each weighted by
 * its sample count. With TK_FLAMEGRAPH_OFF_CPU the
 * weight is instead the time, in microseconds, each task spent switched
 * out (sched:sched_switch to its next switch-in), with the stack of the
 * switch-out where the file records one. Folded output is
 * stackcollapse-perf's: "comm;outermost;...;innermost COUNT", sorted; the
 * SVG is self-contained (inline script and style: search, click to zoom,
 * tooltips).
 * Context: blocking I/O; memory is per distinct stack.
 * Return: 0; -ENOENT when the file has nothing to draw; read errors,
 * -EBADMSG, -ENOMEM, write errors; each with tk_errmsg() set.
 */
TK_API int tk_flamegraph_run(const char *path, const struct tk_flamegraph_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
