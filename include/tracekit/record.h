/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * record: capture kernel events from a tracefs instance into a .dat file.
 *
 * Life of a recording:
 *   tk_record_new()      create (or open) the instance, set clock, buffer
 *                        size, events and filters; tracing stays off
 *   tk_record_set_pids() optional: limit events to processes
 *   tk_record_start()    one capture thread per CPU, then tracing on
 *   tk_record_stop()     tracing off, every CPU drained, threads joined
 *   tk_record_finish()   assemble the .dat (metadata, options, pages)
 *   tk_record_free()     remove the instance and the spool files
 * Side files beside the output, all removed once the output is complete:
 *   <output>.tkmeta     written by tk_record_start() before the capture: a
 *                       .dat without data holding the metadata and options
 *   <output>.tkreserve  disk space set aside so that a full disk can still
 *                       be turned into a complete file
 *   <output>.cpuN       per-CPU spool: ring-buffer pages exactly as the
 *                       kernel handed them over
 *   <output>.tkpart     the output being assembled; renamed at the end
 * So what reached the disk before a crash stays readable through
 * tk_record_recover().
 */
#ifndef TRACEKIT_RECORD_H
#define TRACEKIT_RECORD_H

#include <tracekit/common.h>
#include <tracekit/codec.h>
#include <tracekit/tracefs.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One -e request, with its optional filter. */
struct tk_record_event {
	const char *spec;   /* "SYSTEM", "SYSTEM:EVENT", globs allowed */
	const char *filter; /* NULL: none */
};

/** How pages leave the kernel; the design notes of record.c say why splice is the default. */
enum tk_record_capture {
	TK_RECORD_CAPTURE_SPLICE = 0, /* splice() trace_pipe_raw -> pipe -> spool */
	TK_RECORD_CAPTURE_MMAP = 1,   /* mmap'ed sub-buffers (kernel >= 6.10), copied */
};

struct tk_record_opts {
	size_t sz;		/* sizeof(struct tk_record_opts): declare it with TK_OPTS() */
	const char *output;	/* .dat path; required */
	const char *instance;	/* NULL: "tracekit-<pid>", created and removed */
	bool top;		/* record the top-level buffer instead */
	bool existing_instance; /* @instance exists already: use it, never remove it */
	const struct tk_record_event *events;
	size_t event_count;
	uint32_t buffer_kb; /* per CPU; 0: a created instance gets tk_record_buffer_kb()'s
			     * default, a shared buffer keeps its size */
	const char *clock;  /* NULL: leave the kernel's */
	int file_version;   /* 6 or 7; 0 means 7 */
	enum tk_compression compression;
	const char *tracer_version; /* VERSION option text; NULL: "tracekit" */
	enum tk_record_capture capture;
	const char *tracer; /* current_tracer ("function", "nop" ...); NULL: leave it */
	/*
	 * Dynamic probes (tk_tracefs_probe_parse() syntax): each is created
	 * before tracing starts, enabled in the recorded buffer, and removed
	 * by tk_record_free() (and on every failure of tk_record_new()); a
	 * probe whose name exists already is refused, theirs untouched.
	 */
	const char *const *probes;
	size_t probe_count;
	/*
	 * Take what an existing buffer holds now instead of recording from
	 * now on (tk_flight_extract(), "tracekit extract"): needs @top or
	 * @instance with @existing_instance; @events, @buffer_kb, @clock,
	 * @tracer and @probes must be unset, since the buffer's own set-up is
	 * what the file describes (the formats of every system with an
	 * enabled event). tk_record_new() turns tracing off so that the file
	 * ends at that instant, tk_record_start() leaves it off, and
	 * tk_record_free() puts back only tracing_on: the buffer's events,
	 * filters and tracer stay as they were.
	 */
	bool extract;
};

/** Per-CPU results, filled by tk_record_stop() and tk_record_finish(). */
struct tk_record_cpu_stats {
	uint32_t cpu;
	uint64_t pages;		/* pages captured */
	uint64_t events;	/* data records in them (counted at finish) */
	uint64_t missed_pages;	/* pages flagged with lost events before them */
	uint64_t missed_events; /* stored lost-event counts, summed */
	uint64_t entries, overrun, commit_overrun, dropped_events; /* per_cpu/cpuN/stats */
};

struct tk_record;

/**
 * tk_record_new() - prepare a recording
 * Context: blocking; installs nothing process-wide (no signal handlers).
 * Return: handle, or NULL with errno set and tk_errmsg() naming the file
 * the kernel refused and what to do. Nothing is left behind on failure.
 */
TK_API struct tk_record *tk_record_new(const struct tk_record_opts *opts);

/** The tracefs handle (instance) being recorded; borrowed until free. */
TK_API struct tk_tracefs *tk_record_tracefs(struct tk_record *rec);

/**
 * tk_record_set_pids() - record only events of these processes (and, with
 * @follow_fork, of their children); before tk_record_start().
 * Return: 0, -ESRCH for a pid with no process (nothing would be recorded),
 * or what tracefs gave.
 */
TK_API int tk_record_set_pids(struct tk_record *rec, const int *pids, size_t count,
			      bool follow_fork);

/**
 * tk_record_start() - write the side files, start the capture threads,
 * then tracing
 *
 * The threads inherit the caller's signal mask: block the signals the
 * caller wants to handle before calling.
 * Return: 0 or a negative errno.
 */
TK_API int tk_record_start(struct tk_record *rec);

/**
 * tk_record_error() - the first capture thread failure so far (e.g.
 * -ENOSPC writing a spool file), 0 when none. Safe to poll from the thread
 * that owns @rec while recording; the message comes with tk_record_stop().
 */
TK_API int tk_record_error(const struct tk_record *rec);

/**
 * tk_record_stop() - switch tracing off, drain every CPU, join the threads,
 * read the per-CPU stats
 * Return: 0, or the first capture error (message set).
 */
TK_API int tk_record_stop(struct tk_record *rec);

/**
 * tk_record_finish() - write the .dat file from the spool files
 *
 * Also after a failed stop: whatever reached the spool files is written.
 * Return: 0 or a negative errno (message names the file).
 */
TK_API int tk_record_finish(struct tk_record *rec);

/**
 * tk_record_discard() - the recording is worthless (its command never ran):
 * tk_record_free() removes every side file, captured pages included,
 * instead of keeping them for tk_record_recover().
 */
TK_API void tk_record_discard(struct tk_record *rec);

/** Per-CPU results; @count receives the number of entries. Borrowed until free. */
TK_API const struct tk_record_cpu_stats *tk_record_cpu_stats(const struct tk_record *rec,
							     uint32_t *count);

/**
 * tk_record_buffer_kb() - the ring buffer size per CPU being recorded
 * @rec: the recording
 *
 * What the kernel reported after tk_record_new() set it up: opts->buffer_kb,
 * or for a buffer tk_record_new() created without one, the size it chose
 * (16 MiB per CPU, at most 1/256 of the memory over all CPUs, never below
 * the kernel's default); a shared buffer's own size otherwise.
 * Context: any time after tk_record_new(); reads no file.
 * Return: KiB per CPU, or 0 when the kernel's file could not be read.
 */
TK_API uint32_t tk_record_buffer_kb(const struct tk_record *rec);

/**
 * tk_record_suggest_buffer_kb() - a buffer size that would have avoided
 * the losses of one CPU
 * @rec: after tk_record_finish() (the advice uses the pages and events it
 *       counted; after tk_record_stop() only, it assumes 64-byte events)
 * @cpu: CPU number
 *
 * A heuristic: each page flagged with lost events before it is one time the
 * capture fell a buffer behind; the size suggested is the current one plus
 * four times the average bytes lost per such time, at least four times the
 * current, rounded up to a power of two.
 * Context: reads no file.
 * Return: KiB per CPU to pass as opts->buffer_kb ("-b"), or 0 when @cpu lost
 * nothing (or the current size is unknown).
 */
TK_API uint32_t tk_record_suggest_buffer_kb(const struct tk_record *rec, uint32_t cpu);

/** Output format of tk_record_recover(); a NULL opts means v7, zstd. */
struct tk_record_recover_opts {
	size_t sz;	  /* sizeof(struct tk_record_recover_opts): declare it with TK_OPTS() */
	int file_version; /* 6 or 7; 0 means 7 */
	enum tk_compression compression;
};

/**
 * tk_record_recover() - write the .dat of a recording whose recorder died
 * @output: the output path the recorder was given
 * @opts:   version and codec of the file written; NULL: v7, zstd
 * @stats, @count: receive per-CPU pages, events and missed counts of what
 *          was recovered (malloc'ed, the caller frees *@stats); the kernel's
 *          per-CPU stats fields stay 0: the recorder never read them
 *
 * Reads "<output>.tkmeta" (written before the capture began) and the
 * whole pages of every "<output>.cpuN", writes "<output>.tkpart", renames
 * it to @output, then removes the side files. Nothing is removed on
 * failure. A recording still in progress (its .tkmeta is locked) is refused.
 * Context: blocking I/O; reads saved_cmdlines from tracefs when it can.
 * Return: 0 when the file was written; 1 when @output was already complete
 * (the recorder died while removing its side files, which are now gone);
 * -ENOENT nothing to recover; -ENODATA the recorder died before capturing
 * (its empty side files were removed); -EBUSY recording in progress;
 * -EBADMSG corrupt metadata; I/O errors. The message names the file.
 */
TK_API int tk_record_recover(const char *output, const struct tk_record_recover_opts *opts,
			     struct tk_record_cpu_stats **stats, uint32_t *count);

/**
 * tk_record_free() - stop if needed, remove the side files (unless
 * captured pages did not reach a finished output: those stay for
 * tk_record_recover(), with a warning), the instance it created, then the
 * dynamic probes it created (opts->probes), free.
 * A buffer it did not create (the top level, an existing instance) is put
 * back: events off, set_event_pid cleared if it was set, current_tracer
 * "nop" if a tracer was set, tracing_on as it was found.
 * NULL is accepted.
 */
TK_API void tk_record_free(struct tk_record *rec);

#ifdef __cplusplus
}
#endif
#endif
