/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tracekit perfrecord: record tracepoints through perf_event_open into a
 * perf.data file (written with the perfdata writer), system-wide on every
 * online CPU, for a duration or around a command.
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

/** One -e argument: "SYSTEM:EVENT" or "SYSTEM" (globs allowed in both parts). */
struct tk_perfrecord_event {
	const char *spec;
	const char *filter;          /* tracepoint filter (PERF_EVENT_IOC_SET_FILTER) or NULL */
};

/** What tk_perfrecord_run() records; zero-initialise. */
struct tk_perfrecord_opts {
	const char *output;                        /* perf.data path */
	const struct tk_perfrecord_event *events;
	size_t nr_events;
	double duration;                           /* seconds; 0: until the command exits
						      or a signal */
	char *const *command;                      /* NULL-terminated argv, or NULL */
	uint32_t mmap_pages;                       /* data pages per CPU ring (power of 2);
						      0: 64 */
	int argc;                                  /* command line for the CMDLINE feature */
	const char *const *argv;
};

/** What tk_perfrecord_run() did. */
struct tk_perfrecord_stats {
	uint32_t nr_cpus;            /* CPUs recorded */
	uint32_t nr_tracepoints;     /* tracepoints after glob expansion */
	uint64_t samples;            /* SAMPLE records written */
	uint64_t records;            /* all records from the rings */
	uint64_t lost;               /* samples the kernel dropped (PERF_RECORD_LOST sums) */
	uint64_t lost_records;       /* PERF_RECORD_LOST records */
	uint64_t bytes;              /* data section size */
	bool child_exited;           /* the command ran and exited */
	int child_status;            /* its wait status */
	int stop_signal;             /* SIGINT/SIGTERM/SIGHUP that ended the recording, or 0 */
};

/**
 * tk_perfrecord_run() - record tracepoints into a perf.data file
 * @opts:  what to record and where
 * @stats: receives the counters (also on failure, as far as it got); may be NULL
 *
 * Opens one tracepoint event per online CPU per event (sample_period 1,
 * IDENTIFIER|TID|TIME|CPU|PERIOD|RAW) plus a dummy event per CPU that
 * carries COMM/FORK/EXIT, one ring of @mmap_pages per CPU shared by that
 * CPU's events. The file gets COMM records for every task alive at the
 * start, the ring contents with a FINISHED_ROUND after each drain pass,
 * TRACING_DATA and the host features. The command is forked first, held
 * until the events are enabled, then exec'ed; recording stops when it
 * exits, after @duration, or on SIGINT/SIGTERM/SIGHUP.
 *
 * Context: blocking; for its duration SIGINT, SIGTERM, SIGHUP and SIGCHLD
 * are blocked in the calling thread and taken through a signalfd (the
 * previous mask is restored). Reaps the command's child process. Needs
 * CAP_PERFMON (or root) and tracefs.
 * Return: 0, or a negative errno with tk_errmsg() set: -ENOENT (no
 * tracepoint matches a spec), -EINVAL (bad options), -EACCES/-EPERM
 * (perf_event_open refused), exec errors of the command, I/O errors.
 */
TK_API int tk_perfrecord_run(const struct tk_perfrecord_opts *opts,
			     struct tk_perfrecord_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
