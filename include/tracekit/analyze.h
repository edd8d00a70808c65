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
 */
struct tk_profile_opts {
	int fd;
	const char *sort;
	double percent_limit;
	unsigned int flags;
	const char *symfs;
	const char *kallsyms;
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
