/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * flight: the flight-recorder workflow of trace-cmd (start, extract, stop,
 * show, stat, reset) on a tracefs buffer that records with no process of
 * ours attached.
 *
 *   tk_flight_start()    set up a buffer in overwrite mode and turn tracing
 *                        on; the caller may exit, the kernel keeps the last
 *                        buffer_size_kb per CPU
 *   tk_flight_extract()  write what the buffer holds now as a .dat
 *   tk_flight_stop()     tracing_on 0, the buffer and its set-up stay
 *   tk_flight_restart()  tracing_on 1 again
 *   tk_flight_show()     copy the buffer's "trace" text to a descriptor
 *   tk_flight_stat()     describe the buffer as "trace-cmd stat" does
 *   tk_flight_reset()    remove the instance (or put the top buffer back)
 *
 * A buffer is named by @instance: NULL means TK_FLIGHT_INSTANCE, tracekit's
 * own instance, so that another user's tracing (the top buffer, their
 * instances) is never touched; @top selects the top-level buffer instead,
 * as trace-cmd does by default (then @instance must be NULL).
 */
#ifndef TRACEKIT_FLIGHT_H
#define TRACEKIT_FLIGHT_H

#include <tracekit/common.h>
#include <tracekit/codec.h>
#include <tracekit/record.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The instance the flight recorder uses unless told otherwise. */
#define TK_FLIGHT_INSTANCE "tracekit"

struct tk_flight_opts {
	size_t sz;	      /* sizeof(struct tk_flight_opts): declare it with TK_OPTS() */
	const char *instance; /* NULL: TK_FLIGHT_INSTANCE; created, must not exist */
	bool top;	      /* the top-level buffer instead (events there are replaced) */
	const struct tk_record_event *events; /* -e requests, with their filters */
	size_t event_count;
	const char *tracer; /* current_tracer; NULL: leave it (nop) */
	uint32_t buffer_kb; /* per CPU; 0: the kernel's */
	const char *clock;  /* NULL: the kernel's */
	const int *pids;    /* set_event_pid; every pid must exist */
	size_t pid_count;
	bool follow_fork; /* options/event-fork: children of @pids too */
};

/**
 * tk_flight_start() - set up a buffer in overwrite mode and start tracing
 * @opts: what to trace; at least one event or a tracer
 *
 * Creates the instance (or, with @top, turns tracing off and disables every
 * event of the top buffer first), sets clock, buffer size, tracer, events
 * with their filters and pids, makes sure options/overwrite is 1 (the
 * newest events overwrite the oldest), then writes tracing_on 1. Nothing of
 * this process stays attached: the caller may exit.
 * Context: blocking.
 * Return: 0; -EEXIST when the instance exists already (a flight recorder
 * runs, or the name is someone else's); -EINVAL for nothing to trace or
 * @top with @instance; -ESRCH for a pid with no process; tracefs errors.
 * On failure a created instance is removed again (the top buffer is left
 * with tracing off). The message names the file the kernel refused.
 */
TK_API int tk_flight_start(const struct tk_flight_opts *opts);

/** Output of tk_flight_extract(). */
struct tk_flight_extract_opts {
	size_t sz;	      /* sizeof(struct tk_flight_extract_opts): declare it with TK_OPTS() */
	const char *instance; /* NULL: TK_FLIGHT_INSTANCE */
	bool top;	      /* the top-level buffer instead */
	const char *output;   /* .dat path; required */
	int file_version;     /* 6 or 7; 0 means 7 */
	enum tk_compression compression;
};

/**
 * tk_flight_extract() - write what the buffer holds now as a .dat
 * @opts:         which buffer, and the file to write
 * @stats, @count: optional (both or neither): receive the per-CPU pages,
 *                events and loss counters of the file (malloc'ed, the
 *                caller frees *@stats)
 *
 * Tracing is turned off while the per-CPU buffers are read, so that the
 * file ends at one instant, and turned back on afterwards when it was on:
 * the flight recorder goes on. Reading trace_pipe_raw consumes the pages:
 * a second extract holds only what came after the first. The file carries
 * the metadata tracekit record writes: the formats of every system with an
 * enabled event and of ftrace's own events, kallsyms, printk formats,
 * saved_cmdlines, per-CPU stats.
 * Context: blocking; starts and joins one thread per CPU.
 * Return: 0; -ENOENT when the buffer does not exist (nothing started);
 * -EINVAL for bad options; tracefs and I/O errors (message names the file).
 */
TK_API int tk_flight_extract(const struct tk_flight_extract_opts *opts,
			     struct tk_record_cpu_stats **stats, uint32_t *count);

/**
 * tk_flight_stop() - write tracing_on 0; the buffer, its events and data stay
 * Return: 0; -ENOENT when the buffer does not exist; write errors.
 */
TK_API int tk_flight_stop(const char *instance, bool top);

/**
 * tk_flight_restart() - write tracing_on 1 again after tk_flight_stop()
 * Return: 0; -ENOENT when the buffer does not exist; write errors.
 */
TK_API int tk_flight_restart(const char *instance, bool top);

/**
 * tk_flight_show() - copy the buffer's "trace" file (the kernel's text
 * rendering, non-consuming) to @fd
 * @cpu: -1 for all CPUs, else only per_cpu/cpu@cpu/trace
 * Context: blocking; @fd stays open.
 * Return: 0; -ENOENT when the buffer (or CPU) does not exist; read and
 * write errors (-EPIPE when @fd's reader went away).
 */
TK_API int tk_flight_show(const char *instance, bool top, int cpu, int fd);

/**
 * tk_flight_stat() - describe the buffer as "trace-cmd stat" does
 * @text: receives malloc'ed text (the caller frees): "Instance: NAME"
 *        (not for the top buffer), the tracer when not nop, the enabled
 *        events (all, none, or by system and event), event filters, buffer
 *        size per CPU and in total, the clock when not "local", the pid
 *        filter, and "Tracing is enabled" or "disabled"; each section
 *        after an empty line, in trace-cmd's words
 * Context: blocking; reads only.
 * Return: 0; -ENOENT when the buffer does not exist; read errors; -ENOMEM.
 */
TK_API int tk_flight_stat(const char *instance, bool top, char **text);

/**
 * tk_flight_reset() - undo tk_flight_start()
 *
 * An instance is removed (tracing off, events off, rmdir), its data with
 * it. The top buffer is put back as the kernel boots it, as "trace-cmd
 * reset" does: events off, set_event_pid cleared, current_tracer nop,
 * tracing_on 1; buffer size and clock stay.
 * Context: blocking.
 * Return: 0; -ENOENT when the instance does not exist; -EBUSY while a
 * reader holds one of its files open; other tracefs errors.
 */
TK_API int tk_flight_reset(const char *instance, bool top);

#ifdef __cplusplus
}
#endif
#endif
