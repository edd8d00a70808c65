/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tracefs: the kernel's tracing file system, seen through one buffer
 * instance (or the top-level buffer).
 *
 * A struct tk_tracefs names one instance directory. Every call that writes
 * a control file turns a kernel refusal into one tk_errmsg() line that
 * names the file, the errno and what to do ("/sys/kernel/tracing/
 * current_tracer: Operation not permitted (EPERM): function tracing is
 * locked down on this kernel (lockdown or a hypervisor policy); record
 * events with -e instead").
 *
 * Paths given to the *_file() calls are relative to the instance directory
 * ("trace_clock", "events/sched/enable") unless they start with '/'.
 */
#ifndef TRACEKIT_TRACEFS_H
#define TRACEKIT_TRACEFS_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_tracefs;

/**
 * tk_tracefs_root() - where tracefs is mounted, mounting it when absent
 *
 * Looks at /sys/kernel/tracing, then /sys/kernel/debug/tracing; when
 * neither holds tracefs, mounts it at /sys/kernel/tracing (or, when that
 * directory does not exist, at /sys/kernel/debug/tracing).
 * Context: blocking; the result is cached for the process.
 * Return: borrowed path valid for the process lifetime, or NULL with errno
 * set (ENOENT, EPERM ...) and tk_errmsg() saying what to do.
 */
TK_API const char *tk_tracefs_root(void);

/** Flags for tk_tracefs_open(). */
enum tk_tracefs_flags {
	TK_TRACEFS_CREATE = 1 << 0, /* create the instance; fail with EEXIST if present */
};

/**
 * tk_tracefs_open() - open an instance
 * @instance: name under instances/, or NULL for the top-level buffer
 * @flags:    TK_TRACEFS_CREATE to create it (then tk_tracefs_remove()
 *            deletes it again)
 * Return: handle for tk_tracefs_close(), or NULL with errno set (ENOENT,
 * EEXIST, EINVAL for a name with '/', EPERM ...).
 */
TK_API struct tk_tracefs *tk_tracefs_open(const char *instance, unsigned int flags);

/** tk_tracefs_close() - free the handle; the instance stays. NULL is accepted. */
TK_API void tk_tracefs_close(struct tk_tracefs *tfs);

/**
 * tk_tracefs_remove() - delete the instance (rmdir), then free the handle
 *
 * Events are disabled first so that the kernel lets the directory go.
 * The top-level buffer is never removed (tracing is just switched off).
 * Return: 0 or a negative errno (-EBUSY while a reader holds a file open);
 * the handle is freed in every case.
 */
TK_API int tk_tracefs_remove(struct tk_tracefs *tfs);

/**
 * tk_tracefs_remove_instance() - rmdir instances/@name, whoever made it
 * Return: 0, -ENOENT, -EBUSY, -EPERM ...
 */
TK_API int tk_tracefs_remove_instance(const char *name);

/** Name of the instance ("" for the top-level buffer); borrowed until close. */
TK_API const char *tk_tracefs_name(const struct tk_tracefs *tfs);

/** Absolute directory of the instance; borrowed until close. */
TK_API const char *tk_tracefs_dir(const struct tk_tracefs *tfs);

/**
 * tk_tracefs_read_file() - read a whole file (tracefs files have no size)
 * @tfs:  the instance; may be NULL when @path is absolute
 * @path: relative to the instance, or absolute ("/proc/kallsyms")
 * @data: receives a malloc'ed, NUL-terminated copy (freed by the caller)
 * @len:  receives the length without the NUL
 * Return: 0 or a negative errno with the file named in tk_errmsg().
 */
TK_API int tk_tracefs_read_file(const struct tk_tracefs *tfs, const char *path, char **data,
				size_t *len);

/**
 * tk_tracefs_read_top_file() - same, relative to the tracefs root
 * (saved_cmdlines, printk_formats and available_events live there only).
 */
TK_API int tk_tracefs_read_top_file(const char *path, char **data, size_t *len);

/**
 * tk_tracefs_write_file() - write @text to a control file in one write()
 * Return: 0 or a negative errno; the message names the file, the errno and
 * what to do about it.
 */
TK_API int tk_tracefs_write_file(const struct tk_tracefs *tfs, const char *path, const char *text);

/** Called for each event an enable request matched. */
typedef void (*tk_tracefs_event_fn)(const char *system, const char *event, void *ctx);

/**
 * tk_tracefs_enable_events() - enable the events matching @spec
 * @spec:   "SYSTEM", "SYSTEM:EVENT" or "EVENT", each part a shell glob
 *          ("sched:sched_wak*", "*:*irq*"); a bare word matches systems
 *          first, then event names in any system, as trace-cmd does
 * @filter: optional filter expression written to each matched event's
 *          filter file, or NULL
 * @fn, @ctx: optional, called per matched event (also for ftrace's own
 *          events, which have no enable switch and are always recorded)
 * Return: the number of events matched (> 0), -ENOENT when nothing
 * matched, or the first write error (message names the file).
 */
TK_API int tk_tracefs_enable_events(struct tk_tracefs *tfs, const char *spec, const char *filter,
				    tk_tracefs_event_fn fn, void *ctx);

/** tk_tracefs_disable_all_events() - write 0 to events/enable. */
TK_API int tk_tracefs_disable_all_events(struct tk_tracefs *tfs);

/**
 * tk_tracefs_set_clock() - select the trace clock
 * Return: 0, -EINVAL with the list of available clocks when unknown.
 */
TK_API int tk_tracefs_set_clock(struct tk_tracefs *tfs, const char *clock);

/**
 * tk_tracefs_get_clock() - the clock in use (the word in brackets of trace_clock)
 * @buf, @cap: output, NUL-terminated
 * Return: 0 or a negative errno.
 */
TK_API int tk_tracefs_get_clock(const struct tk_tracefs *tfs, char *buf, size_t cap);

/** tk_tracefs_set_buffer_kb() - per-CPU buffer size (buffer_size_kb). */
TK_API int tk_tracefs_set_buffer_kb(struct tk_tracefs *tfs, uint32_t kb);

/** tk_tracefs_set_tracing_on() - write tracing_on. */
TK_API int tk_tracefs_set_tracing_on(struct tk_tracefs *tfs, bool on);

/**
 * tk_tracefs_get_tracing_on() - read tracing_on
 * Return: 0 (off), 1 (on) or a negative errno.
 */
TK_API int tk_tracefs_get_tracing_on(const struct tk_tracefs *tfs);

/**
 * tk_tracefs_set_tracer() - select the tracer (current_tracer)
 * @tracer: a name from the instance's available_tracers ("nop",
 *          "function", "function_graph", ...)
 *
 * For the function tracers only, /proc/sys/kernel/ftrace_enabled is set
 * to 1 when it reads 0; no other tracer touches it.
 * Context: blocking.
 * Return: 0; -ENOENT when the instance does not offer @tracer (the message
 * lists those it does, and says when only the top-level buffer has it);
 * -EINVAL for a malformed name; -EPERM when the kernel refuses (function
 * tracing locked down: the message names current_tracer or ftrace_enabled
 * and says to record events instead); other write errors.
 */
TK_API int tk_tracefs_set_tracer(struct tk_tracefs *tfs, const char *tracer);

/**
 * tk_tracefs_set_event_pids() - limit events to these processes
 * @pids, @count: written to set_event_pid (count 0 clears it)
 * @follow_fork:  sets options/event-fork so that children are added
 *                (written also when clearing the list)
 * Return: 0 or a negative errno.
 */
TK_API int tk_tracefs_set_event_pids(struct tk_tracefs *tfs, const int *pids, size_t count,
				     bool follow_fork);

/**
 * tk_tracefs_cpu_count() - number of per_cpu/cpuN directories (possible CPUs)
 * Return: > 0, or a negative errno.
 */
TK_API int tk_tracefs_cpu_count(const struct tk_tracefs *tfs);

/** Counters from per_cpu/cpuN/stats (fields absent from the kernel's text stay 0). */
struct tk_tracefs_cpu_stats {
	uint64_t entries;
	uint64_t overrun;
	uint64_t commit_overrun;
	uint64_t bytes;
	uint64_t dropped_events;
	uint64_t read_events;
};

/**
 * tk_tracefs_cpu_stats() - read and parse per_cpu/cpu@cpu/stats
 * @stats: receives the counters
 * @text:  optional; receives the malloc'ed raw text (caller frees)
 * Return: 0 or a negative errno.
 */
TK_API int tk_tracefs_cpu_stats(const struct tk_tracefs *tfs, uint32_t cpu,
				struct tk_tracefs_cpu_stats *stats, char **text);

/**
 * tk_tracefs_open_pipe_raw() - open per_cpu/cpu@cpu/trace_pipe_raw
 * @nonblock: O_NONBLOCK
 * Return: a descriptor the caller closes, or a negative errno.
 */
TK_API int tk_tracefs_open_pipe_raw(const struct tk_tracefs *tfs, uint32_t cpu, bool nonblock);

/* ------------------------------------------------------ dynamic probes */

/** Longest group or event name the kernel takes (MAX_EVENT_NAME_LEN - 1). */
#define TK_TRACEFS_PROBE_NAME_MAX 63

/** Group of a probe whose definition names none. */
#define TK_TRACEFS_PROBE_GROUP "tracekit"

/**
 * struct tk_tracefs_probe - a dynamic probe definition, parsed
 * @uprobe:   the target is PATH:OFFSET (it holds a '/' and a ':'): the
 *            definition goes to uprobe_events; otherwise to kprobe_events
 * @retprobe: a return probe ('r', or a uprobe target with %return)
 * @file:     "uprobe_events" or "kprobe_events" (static string)
 * @group:    the group (events/@group/), TK_TRACEFS_PROBE_GROUP by default
 * @event:    the event name, given or derived from the target
 * @text:     the definition written to @file, with group and event always
 *            spelled out ("p:tracekit/prog_0x1139 /bin/prog:0x1139 x=%di");
 *            malloc'ed, freed by tk_tracefs_probe_release()
 */
struct tk_tracefs_probe {
	bool uprobe;
	bool retprobe;
	const char *file;
	char group[TK_TRACEFS_PROBE_NAME_MAX + 1];
	char event[TK_TRACEFS_PROBE_NAME_MAX + 1];
	char *text;
};

/**
 * tk_tracefs_probe_parse() - parse a tracefs dynamic-event definition
 * @def:   "p[:[GROUP/][EVENT]] SYMBOL[+OFF] [ARGS]" (kprobe),
 *         "r[MAXACTIVE][:[GROUP/][EVENT]] SYMBOL[+OFF] [ARGS]" (kretprobe),
 *         "p[:[GROUP/][EVENT]] PATH:OFFSET[%return][(REF_CTR_OFFSET)] [ARGS]"
 *         or "r[:[GROUP/][EVENT]] PATH:OFFSET [ARGS]" (uprobes)
 * @probe: receives the result; release it with tk_tracefs_probe_release()
 *
 * Only the head is checked here (kind, names, target); the arguments are
 * the kernel's to parse and go through unchanged. A missing event name is
 * derived from the target: the symbol, or the basename of PATH, then the
 * offset, every character outside [A-Za-z0-9_] turned into '_', with
 * "__return" appended for a return probe and "p_" prepended to a name
 * that would start with a digit ("do_sys_openat2", "vfs_read_16",
 * "prog_0x1139__return"); cut to TK_TRACEFS_PROBE_NAME_MAX.
 * Context: pure; touches no file.
 * Return: 0; -EINVAL for a malformed definition (message says which part);
 * -ENOMEM. On failure @probe holds nothing to release.
 */
TK_API int tk_tracefs_probe_parse(const char *def, struct tk_tracefs_probe *probe);

/**
 * tk_tracefs_probe_rename() - give a parsed probe another event name
 * @probe: from tk_tracefs_probe_parse()
 * @event: the new name (letters, digits and '_', at most
 *         TK_TRACEFS_PROBE_NAME_MAX); the group stays
 *
 * Rewrites @probe->text and @probe->event, e.g. to number a second probe of
 * one name as perf does ("EVENT_1").
 * Context: pure; touches no file.
 * Return: 0; -EINVAL for a bad name; -ENOMEM (@probe is then unchanged).
 */
TK_API int tk_tracefs_probe_rename(struct tk_tracefs_probe *probe, const char *event);

/** tk_tracefs_probe_release() - free what parsing allocated; NULL is accepted. */
TK_API void tk_tracefs_probe_release(struct tk_tracefs_probe *probe);

/**
 * tk_tracefs_probe_add() - create the probe in the kernel
 *
 * Appends @probe->text to the tracefs root's @probe->file (O_APPEND: the
 * probes of other users stay). The event then exists in every instance as
 * events/GROUP/EVENT, disabled. Remove it with tk_tracefs_probe_remove().
 * Context: blocking.
 * Return: 0; -EEXIST when an event of that name exists already (ours is
 * not created, theirs is untouched); -ENOENT when the file is absent (kernel
 * built without that probe type) or the target was not found; -EPERM /
 * -EACCES when the kernel refuses dynamic probes (lockdown); -EINVAL with
 * the kernel's own reason from error_log. The message names the file, the
 * errno and what to do.
 */
TK_API int tk_tracefs_probe_add(const struct tk_tracefs_probe *probe);

/**
 * tk_tracefs_probe_remove() - delete the probe ("-:GROUP/EVENT")
 *
 * The kernel refuses while the event is enabled in any instance: disable
 * it (or remove the instance) first.
 * Context: blocking.
 * Return: 0; -ENOENT when no such probe exists; -EBUSY while enabled or in
 * use; other write errors. The message names the file.
 */
TK_API int tk_tracefs_probe_remove(const struct tk_tracefs_probe *probe);

/**
 * tk_tracefs_instances_reap() - remove the instances of recorders that are gone
 * @report:  called per instance removed (or, with @dry_run, that would be)
 *           with its name and the dead pid; may be NULL
 *
 * "tracekit record" names its instance tracekit-PID. An instance is removed
 * (tracing off, events disabled, rmdir) only when no process PID exists
 * (kill(pid, 0) fails with ESRCH), so a recording in progress is never
 * touched; other instances are left alone.
 * Context: blocking.
 * Return: the number removed, or a negative errno (the first failure; the
 * others are still tried).
 */
TK_API int tk_tracefs_instances_reap(void (*report)(const char *name, long pid, void *ctx),
				     void *ctx, bool dry_run);

/*
 * The probe ledger. A recorder killed with SIGKILL cannot remove its
 * probes, and their names do not say whose they are (users name them). So
 * a recorder notes each probe it created in a ledger file of its own,
 * TK_TRACEFS_LEDGER_DIR/probes-PID-N ($TRACEKIT_RUN_DIR overrides the
 * directory), and drops the file once it removed them; `tracekit reset`
 * removes the probes of the ledgers whose process is gone.
 */
#define TK_TRACEFS_LEDGER_DIR "/run/tracekit"

struct tk_tracefs_ledger;

/**
 * tk_tracefs_ledger_new() - a ledger for this process's next probes
 * Context: nothing is written before the first note.
 * Return: the ledger, or NULL with errno ENOMEM.
 */
TK_API struct tk_tracefs_ledger *tk_tracefs_ledger_new(void);

/**
 * tk_tracefs_ledger_note() - note that @probe was created (one line, appended)
 * Return: 0, or a negative errno with the message set (the directory or
 * file cannot be written); the probe itself is not touched.
 */
TK_API int tk_tracefs_ledger_note(struct tk_tracefs_ledger *ledger,
				  const struct tk_tracefs_probe *probe);

/** tk_tracefs_ledger_free() - delete the ledger file (when @drop) and free; NULL is accepted. */
TK_API void tk_tracefs_ledger_free(struct tk_tracefs_ledger *ledger, bool drop);

/**
 * tk_tracefs_ledger_reap() - remove the probes noted by processes that are gone
 * @report:  called per probe removed (or found gone already: @gone) with
 *           "uprobe_events GROUP/EVENT" and the dead pid; may be NULL
 * @dry_run: only report what would be removed
 *
 * A ledger whose process exists (kill(pid, 0) other than ESRCH) is left
 * alone. A ledger whose probes are all removed, or were gone already, is
 * deleted; one with a probe the kernel refuses to delete (EBUSY: enabled
 * in an instance; remove the instance first) is kept for a later reset.
 * Context: blocking.
 * Return: the number of probes removed, or a negative errno (the first
 * failure; the others are still tried).
 */
TK_API int tk_tracefs_ledger_reap(void (*report)(const char *probe, long pid, bool gone, void *ctx),
				  void *ctx, bool dry_run);

/** What tk_tracefs_list() lists. */
enum tk_tracefs_list_kind {
	TK_TRACEFS_LIST_SYSTEMS, /* event systems, once each, in available_events order */
	TK_TRACEFS_LIST_EVENTS,	 /* "system:event", as available_events lists them */
	TK_TRACEFS_LIST_CLOCKS,	 /* trace_clock's words, the one in use in brackets */
	TK_TRACEFS_LIST_TRACERS, /* available_tracers' words */
};

/**
 * tk_tracefs_list() - what the kernel offers, from the top level's files
 * @names, @count: receive a malloc'ed array of malloc'ed strings; free it
 *                 with tk_tracefs_list_free()
 * Context: blocking file I/O.
 * Return: 0, or a negative errno (no tracefs, unreadable file, ENOMEM).
 */
TK_API int tk_tracefs_list(enum tk_tracefs_list_kind kind, char ***names, size_t *count);

/** tk_tracefs_list_free() - free what tk_tracefs_list() returned; NULL is accepted. */
TK_API void tk_tracefs_list_free(char **names, size_t count);

#ifdef __cplusplus
}
#endif
#endif
