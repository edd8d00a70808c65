/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * ring: a user-space port of the kernel's "unified trace buffer".
 *
 * A ring holds several buffers ("CPUs" in the kernel's vocabulary). Each
 * buffer is a ring of sub-buffers (pages) in the kernel's page format, so
 * the pages that tk_ring_read_page() hands out decode with tk_page_iter_*()
 * and can go unchanged into a .dat file.
 *
 * Concurrency model (measured; see the design notes in src/lib/capture/ring.c):
 *
 *  - One writer per buffer. In TK_RING_PER_THREAD layout (the default) a
 *    thread claims a buffer of its own on its first write and keeps it in
 *    thread-local storage; the write path has no lock-prefixed atomics, no
 *    lock, no system call and no allocation. In TK_RING_PER_CPU layout the
 *    buffer is the one of sched_getcpu(), and the CALLER guarantees that at
 *    most one thread writes from each CPU at a time (threads pinned one per
 *    CPU, as DPDK lcores are); restartable sequences are not used.
 *  - A writer's signal handlers may write too: they nest on the writer like
 *    interrupts on a kernel CPU (up to TK_RING_MAX_NEST levels) and finish
 *    before the interrupted writer resumes. Their events are ordered by
 *    reservation, and timestamps never go backwards within a buffer.
 *  - Readers (peek, consume, iterators, read_page, empty) of one buffer are
 *    serialised by a per-buffer mutex and run on any thread, concurrently
 *    with the writer. They must not run in a signal handler.
 *  - Control calls (resize, reset, swap_cpu) disable the affected buffers
 *    and wait (up to 1 s) for a writer inside an event to leave it; events
 *    written meanwhile are refused, uncounted, as the kernel does. They
 *    return -EBUSY if the wait times out or the calling thread itself holds
 *    an event on the buffer.
 *
 * Clock: TSC by default on x86-64 with an invariant TSC (17-22 ns to read on
 * the reference VM against 33-37 ns for clock_gettime), else
 * CLOCK_MONOTONIC. tk_ring_normalize_time_stamp() converts to ns.
 */
#ifndef TRACEKIT_RING_H
#define TRACEKIT_RING_H

#include <tracekit/common.h>
#include <tracekit/page.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Signal-handler nesting levels per buffer (the outermost writer is one). */
#define TK_RING_MAX_NEST 8
/* "All buffers" for tk_ring_resize(). */
#define TK_RING_ALL_CPUS (-1)

struct tk_ring;
struct tk_ring_iter;

/** What happens when a writer needs a page that has not been read yet. */
enum tk_ring_mode {
	TK_RING_OVERWRITE = 0,	       /* flight recorder: drop the oldest whole page */
	TK_RING_PRODUCER_CONSUMER = 1, /* drop the newest event */
};

/** Which buffer a writer uses. */
enum tk_ring_layout {
	TK_RING_PER_THREAD = 0, /* one buffer per writing thread (claimed on first write) */
	TK_RING_PER_CPU = 1,	/* buffer sched_getcpu(); one writer per CPU, caller's duty */
};

enum tk_ring_clock {
	TK_RING_CLOCK_DEFAULT = 0,   /* TSC when invariant on x86-64, else MONOTONIC */
	TK_RING_CLOCK_TSC = 1,	     /* rdtsc; -ENOTSUP elsewhere */
	TK_RING_CLOCK_MONOTONIC = 2, /* clock_gettime(CLOCK_MONOTONIC), ns */
	TK_RING_CLOCK_CUSTOM = 3,    /* opts->clock_fn */
};

struct tk_ring_opts {
	uint64_t size;	     /* bytes per buffer; 0 means 1 MiB. Rounded up to whole
				pages, at least 2 pages */
	uint32_t page_size;  /* sub-buffer size, power of two 256..65536; 0 means 4096 */
	uint32_t nr_buffers; /* PER_THREAD: most writer threads (0 means 64);
				PER_CPU: 0 means the configured CPUs */
	enum tk_ring_mode mode;
	enum tk_ring_layout layout;
	enum tk_ring_clock clock;
	/* CUSTOM clock: must be monotonic, below 2^59, async-signal-safe */
	uint64_t (*clock_fn)(void *ctx);
	void *clock_ctx;
};

/**
 * tk_ring_new() - allocate a ring
 * @opts: options; NULL means all defaults
 *
 * Page memory is mapped at once (MAP_NORESERVE), so buffers no thread ever
 * claims cost address space only.
 * Context: any thread; blocking (mmap). Not from signal handlers.
 * Return: the ring for tk_ring_free(), or NULL with errno EINVAL (bad
 * option), ENOTSUP (TSC asked for where there is none) or ENOMEM.
 */
TK_API struct tk_ring *tk_ring_new(const struct tk_ring_opts *opts);

/**
 * tk_ring_free() - free a ring; NULL is accepted
 * Context: no writer, reader or iterator may use the ring any more (join
 * writer threads first). Not from signal handlers.
 */
TK_API void tk_ring_free(struct tk_ring *ring);

/**
 * tk_ring_resize() - change the size of one buffer or of all
 * @size: new bytes per buffer (rounded as in tk_ring_new)
 * @cpu:  a buffer index or TK_RING_ALL_CPUS
 *
 * Keeps the newest pages that fit; unread events of pages that do not fit
 * are counted as overruns.
 * Context: any thread but a signal handler; blocking: waits for the
 * buffers' writers to leave their events (see the top of this header).
 * Return: 0, -EINVAL, -ENOMEM, -EBUSY (a writer stayed inside an event).
 */
TK_API int tk_ring_resize(struct tk_ring *ring, uint64_t size, int cpu);

/** Handle of a reserved event, valid until its commit or discard. */
struct tk_ring_event;

/**
 * tk_ring_lock_reserve() - reserve room for an event in the caller's buffer
 * @len: payload bytes, 1 .. tk_ring_max_payload()
 *
 * Takes the timestamp. Must be followed by tk_ring_unlock_commit() or
 * tk_ring_discard_commit() in the same context (same thread, same signal
 * handler invocation).
 * Context: writer fast path: lock-free, allocation-free, async-signal-safe;
 * does not touch errno. The first call of a thread in PER_THREAD layout
 * claims a buffer (one gettid() system call).
 * Return: the event, or NULL when recording is disabled, @len is out of
 * range, the event is dropped (the counters say which), or no buffer is
 * free for this thread. Use tk_ring_write() to learn why.
 */
TK_API struct tk_ring_event *tk_ring_lock_reserve(struct tk_ring *ring, uint32_t len);

/** tk_ring_event_data() - payload of a reserved event (4-byte aligned). */
TK_API void *tk_ring_event_data(struct tk_ring_event *event);

/**
 * tk_ring_unlock_commit() - publish a reserved event
 * Context: as tk_ring_lock_reserve(); readers see the event once the
 * outermost writer of the buffer commits.
 * Return: 0.
 */
TK_API int tk_ring_unlock_commit(struct tk_ring *ring, struct tk_ring_event *event);

/**
 * tk_ring_discard_commit() - cancel a reserved event
 *
 * Takes its space back when it is still the last event of its page, else
 * leaves a discarded record (padding with a delta) that readers skip. The
 * event is not counted in the entries.
 * Context: as tk_ring_lock_reserve().
 */
TK_API void tk_ring_discard_commit(struct tk_ring *ring, struct tk_ring_event *event);

/**
 * tk_ring_write() - reserve, copy @len bytes of @data, commit
 * Context: as tk_ring_lock_reserve().
 * Return: 0; -EBUSY (recording disabled), -E2BIG (@len is 0 or too large),
 * -ENOSPC (dropped: producer/consumer buffer full, a reader holds the page,
 * the nesting limit, or the writer lapped its own uncommitted data),
 * -EAGAIN (no free buffer for this thread).
 */
TK_API int tk_ring_write(struct tk_ring *ring, const void *data, uint32_t len);

/** tk_ring_max_payload() - largest payload an event may have. */
TK_API uint32_t tk_ring_max_payload(const struct tk_ring *ring);

/**
 * tk_ring_peek() - the next event of a buffer, without consuming it
 * @rec:  receives the event; @rec->data is valid until the next reader
 *        call on this buffer
 * @lost: optional; events lost (overwritten) just before this one
 *
 * Context: any thread but a signal handler; takes the buffer's reader lock.
 * Return: 1 with @rec filled, 0 when empty, -EINVAL for a bad @cpu.
 */
TK_API int tk_ring_peek(struct tk_ring *ring, int cpu, struct tk_page_record *rec, uint64_t *lost);

/**
 * tk_ring_consume() - the next event of a buffer, consuming it
 * Same as tk_ring_peek(), but the event is removed; @lost is reported once.
 */
TK_API int tk_ring_consume(struct tk_ring *ring, int cpu, struct tk_page_record *rec,
			   uint64_t *lost);

/**
 * tk_ring_read_page() - consume a whole page, as the kernel's read_page
 * @page, @len: output, at least the ring's page size; filled with a page in
 *              the kernel format (rest zeroed)
 * @full:       only hand out a page the writer has finished with
 *
 * A finished page is copied whole; otherwise the events committed so far
 * are copied and the page timestamp is the reader's running time. When
 * events were overwritten since the last page, commit bit 31 is set, and
 * when a long fits after the data the count is stored there with bit 30.
 * Context: as tk_ring_peek().
 * Return: data bytes (> 0), 0 when there is nothing (or no full page with
 * @full), -EINVAL for a bad @cpu or a short @len.
 */
TK_API int tk_ring_read_page(struct tk_ring *ring, int cpu, void *page, size_t len, bool full);

/** tk_ring_page_format() - layout of the ring's pages (host order, host long). */
TK_API void tk_ring_page_format(const struct tk_ring *ring, struct tk_page_format *fmt);

/**
 * tk_ring_read_start() - start a non-consuming iterator over one buffer
 *
 * The iterator walks the events not yet consumed, oldest first, while the
 * writer goes on; events committed after the start are seen too. When the
 * writer overwrites pages ahead of it, it skips to the oldest page left
 * and tk_ring_iter_dropped() says so.
 * Context: any thread but a signal handler. One thread at a time per
 * iterator; each call takes the buffer's reader lock.
 * Return: the iterator for tk_ring_read_finish(), or NULL with errno
 * (EINVAL, ENOMEM).
 */
TK_API struct tk_ring_iter *tk_ring_read_start(struct tk_ring *ring, int cpu);

/** tk_ring_read_finish() - free an iterator; NULL is accepted. */
TK_API void tk_ring_read_finish(struct tk_ring_iter *iter);

/**
 * tk_ring_iter_peek() / tk_ring_iter_read() - the iterator's next event,
 * without / with advancing past it
 * Return: 1 with @rec filled (data valid until the next call on @iter), 0
 * at the end (a later call may find newer events).
 */
TK_API int tk_ring_iter_peek(struct tk_ring_iter *iter, struct tk_page_record *rec);
TK_API int tk_ring_iter_read(struct tk_ring_iter *iter, struct tk_page_record *rec);

/** tk_ring_iter_reset() - go back to the oldest unconsumed event. */
TK_API void tk_ring_iter_reset(struct tk_ring_iter *iter);

/** tk_ring_iter_empty() - true when the iterator has nothing more to read now. */
TK_API bool tk_ring_iter_empty(struct tk_ring_iter *iter);

/** tk_ring_iter_dropped() - true when pages were overwritten under the iterator. */
TK_API bool tk_ring_iter_dropped(const struct tk_ring_iter *iter);

/** tk_ring_cpus() - number of buffers. Context: any thread. */
TK_API int tk_ring_cpus(const struct tk_ring *ring);

/**
 * tk_ring_this_cpu() - the buffer the calling thread writes to, claiming
 * one in PER_THREAD layout
 * Context: as tk_ring_lock_reserve().
 * Return: the index, or -EAGAIN when none is free.
 */
TK_API int tk_ring_this_cpu(struct tk_ring *ring);

/** tk_ring_size() - bytes of one buffer (pages x page size), -EINVAL for a bad @cpu. */
TK_API int64_t tk_ring_size(const struct tk_ring *ring, int cpu);

/**
 * tk_ring_reset() / tk_ring_reset_cpu() - throw away all events and zero
 * the counters
 * Context: as tk_ring_resize().
 * Return: 0, -EINVAL, -EBUSY (a writer stayed inside an event; nothing
 * changed for that buffer).
 */
TK_API int tk_ring_reset(struct tk_ring *ring);
TK_API int tk_ring_reset_cpu(struct tk_ring *ring, int cpu);

/**
 * tk_ring_swap_cpu() - exchange buffer @cpu of two rings (snapshots)
 *
 * Exchanges the contents (pages, counters, unread state); each writer
 * thread keeps writing to its own ring, now into the other contents.
 * Iterators open on either buffer start over on the new contents and
 * report tk_ring_iter_dropped().
 * Context: as tk_ring_resize(), for both rings.
 * Return: 0; -EINVAL when the rings differ in page size, pages, clock or
 * buffer count; -EAGAIN when recording is disabled on either side; -EBUSY
 * when a writer stayed inside an event.
 */
TK_API int tk_ring_swap_cpu(struct tk_ring *a, struct tk_ring *b, int cpu);

/**
 * tk_ring_empty() / tk_ring_empty_cpu() - true when no committed event is
 * left to consume
 * Context: as tk_ring_peek().
 */
TK_API bool tk_ring_empty(struct tk_ring *ring);
TK_API bool tk_ring_empty_cpu(struct tk_ring *ring, int cpu);

/**
 * tk_ring_record_disable() and friends - stop and restart recording, for
 * the whole ring or one buffer. Disables nest (a counter, as the kernel's);
 * writers that see it refuse events without counting them.
 * Context: any thread, async-signal-safe. A writer already inside reserve
 * may still commit one event.
 */
TK_API void tk_ring_record_disable(struct tk_ring *ring);
TK_API void tk_ring_record_enable(struct tk_ring *ring);
TK_API void tk_ring_record_disable_cpu(struct tk_ring *ring, int cpu);
TK_API void tk_ring_record_enable_cpu(struct tk_ring *ring, int cpu);
TK_API bool tk_ring_record_is_on(const struct tk_ring *ring);

/** Counters of one buffer (the kernel's per_cpu stats). */
struct tk_ring_stats {
	uint64_t entries;	 /* events committed and not yet consumed or overwritten */
	uint64_t committed;	 /* events ever committed */
	uint64_t overrun;	 /* events lost to overwrite */
	uint64_t commit_overrun; /* events dropped because the writer lapped its own commit */
	uint64_t dropped;	 /* newest events dropped (buffer full, page held by a
				    reader, nesting limit) */
	uint64_t read;		 /* events consumed */
	uint64_t bytes;		 /* data bytes of unread pages (approximate while writing) */
};

/**
 * tk_ring_stats_cpu() - counters of one buffer
 * Context: any thread but a signal handler. The counters are read one by
 * one while writers run; they are exact once writers are quiet.
 * Return: 0, -EINVAL.
 */
TK_API int tk_ring_stats_cpu(struct tk_ring *ring, int cpu, struct tk_ring_stats *stats);

/** Shortcuts: entries and overruns of one buffer or of all. */
TK_API uint64_t tk_ring_entries(struct tk_ring *ring);
TK_API uint64_t tk_ring_entries_cpu(struct tk_ring *ring, int cpu);
TK_API uint64_t tk_ring_overruns(struct tk_ring *ring);
TK_API uint64_t tk_ring_overrun_cpu(struct tk_ring *ring, int cpu);

/**
 * tk_ring_time_stamp() - the ring's clock now, in its raw units
 * Context: any thread, async-signal-safe.
 */
TK_API uint64_t tk_ring_time_stamp(const struct tk_ring *ring);

/**
 * tk_ring_normalize_time_stamp() - convert a raw timestamp to ns
 * @cpu: buffer (kept for the kernel's signature; all buffers share a clock)
 * @ts:  in: raw, out: ns (TSC: scaled by the calibrated frequency; other
 *       clocks: unchanged)
 * Context: any thread, async-signal-safe.
 */
TK_API void tk_ring_normalize_time_stamp(const struct tk_ring *ring, int cpu, uint64_t *ts);

/** tk_ring_clock_name() - trace_clock name for a .dat: "x86-tsc", "mono" or "counter". */
TK_API const char *tk_ring_clock_name(const struct tk_ring *ring);

#ifdef __cplusplus
}
#endif
#endif
