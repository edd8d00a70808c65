/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Memory that one thread writes and another reads, as the report threads
 * hand jobs over (present/print-pool.c, and the job logs of report.c and
 * perfdata-report.c). On the reference VM a
 * cache line that the other core holds costs a transfer, and a store into
 * a line the other core read last time costs one more: logging a line for
 * a worker into a reused slot cost more than printing the line. So:
 *
 *   - each thread's data sits on cache lines of its own (tk_line_calloc);
 *   - the logs the merge writes for workers are written with non-temporal
 *     stores (tk_store_past_cache), which do not fetch the line first;
 *     tk_stores_done() before the lock that hands the job over;
 *   - a job's text goes into a buffer of the thread that prints it
 *     (struct tk_text_slot), never into one the other core wrote last.
 */
#ifndef TRACEKIT_INTERNAL_HANDOFF_H
#define TRACEKIT_INTERNAL_HANDOFF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/event.h>

#define TK_LINE 128 /* two 64-byte lines: the adjacent-line prefetcher pairs them */

/* Zeroed memory for @n structures of @size on lines of their own; free(). */
static inline void *tk_line_calloc(size_t n, size_t size)
{
	void *p = NULL;
	size_t bytes;

	if (!n || n > (SIZE_MAX - (TK_LINE - 1)) / size)
		return NULL;
	bytes = (n * size + TK_LINE - 1) & ~(size_t)(TK_LINE - 1);
	if (posix_memalign(&p, TK_LINE, bytes))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

/*
 * @n structures of @size on lines of their own, not zeroed: for logs that
 * are written before they are read (zeroing faulted in every page of
 * them at start-up, ~11 us a page on the reference VM); free().
 */
static inline void *tk_line_alloc(size_t n, size_t size)
{
	void *p = NULL;

	if (!n || n > (SIZE_MAX - (TK_LINE - 1)) / size ||
	    posix_memalign(&p, TK_LINE, (n * size + TK_LINE - 1) & ~(size_t)(TK_LINE - 1)))
		return NULL;
	return p;
}

/* One 8-byte word at @dst (8-aligned), past this core's cache. */
static inline void tk_store_word_past_cache(uint64_t *dst, uint64_t v)
{
#if defined(__x86_64__)
	__builtin_ia32_movnti64((long long *)dst, (long long)v);
#else
	*dst = v;
#endif
}

/* @n bytes (a multiple of 8; @dst 8-aligned), past this core's cache. */
static inline void tk_store_past_cache(void *dst, const void *src, size_t n)
{
	uint64_t *d = dst;

	for (size_t i = 0; i < n / 8; i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)src + 8 * i, 8);
		tk_store_word_past_cache(d + i, v);
	}
}

/* Order the stores above before the hand-over (the lock orders them too). */
static inline void tk_stores_done(void)
{
#if defined(__x86_64__)
	__builtin_ia32_sfence();
#endif
}

/* A thread's text buffer (memory, fd -1), lent to one job at a time. */
struct tk_text_slot {
	struct tk_outbuf out;
	bool busy; /* lent to a job whose text is not written out yet */
} __attribute__((aligned(TK_LINE)));

/*
 * A slot of @slots (@n) that no job holds, emptied. A thread has as many
 * as there are job slots, so one is always free. Under the pool's lock.
 */
static inline struct tk_text_slot *tk_text_lend(struct tk_text_slot *slots, size_t n)
{
	size_t i = 0;

	while (i + 1 < n && slots[i].busy)
		i++;
	slots[i].busy = true;
	slots[i].out.len = 0;
	slots[i].out.error = 0;
	return &slots[i];
}

/* @n slots whose buffers are only address space until printed into; NULL on ENOMEM. */
static inline struct tk_text_slot *tk_text_slots_new(size_t n, size_t cap)
{
	struct tk_text_slot *s = tk_line_calloc(n, sizeof(*s));

	for (size_t i = 0; s && i < n; i++) {
		if (tk_outbuf_init(&s[i].out, -1, cap)) {
			for (size_t k = 0; k < i; k++)
				tk_outbuf_release(&s[k].out);
			free(s);
			return NULL;
		}
	}
	return s;
}

static inline void tk_text_slots_free(struct tk_text_slot *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		tk_outbuf_release(&s[i].out);
	free(s);
}

/*
 * Printers for a report of @bytes of data: @asked (-j) when set, else one
 * per online CPU up to 4 from 128 MiB on, else 1. A second thread has
 * costs of its own that only a long run pays back: its start, the pages of
 * its logs and texts, and every record carried to another CPU's cache. On
 * the 2-vCPU VMs here (a page fault 11 us, a cache line between the vCPUs
 * ~0.5 us) two threads printed the 40-55 MB family files 4-40% slower than
 * one and kmem's 291 MB 16% faster (bench/README.md, stop 23). The .dat
 * report starts a decoder thread from a smaller size where decoding weighs
 * (report.c's report_threads()).
 */
#define TK_REPORT_THREADS_MIN_BYTES (128u << 20)
static inline unsigned int tk_report_threads(unsigned int asked, uint64_t bytes)
{
	long n;

	if (asked)
		return asked;
	if (bytes < TK_REPORT_THREADS_MIN_BYTES)
		return 1;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 2 ? 1 : n > 4 ? 4 : (unsigned int)n;
}

/*
 * Of @want threads, how many this process may run at once: no more than
 * the CPUs sched_getaffinity() leaves it (taskset, cpusets) and a cgroup
 * CPU quota grants (a container's --cpus). At least 1; @want when nothing
 * can be read. -j N callers skip this: they asked for N.
 *
 * The machine's load is not read here: a look at /proc/loadavg's
 * runnable count cannot tell a task passing by (a kernel worker, a shell
 * between two commands) from one that holds a CPU, nor a loop in another
 * autogroup (which takes no share from this session's threads) from one
 * in this. Whether a second thread gets a CPU is judged while it runs
 * (print-pool.c's retirement of the workers, dat-read.c's decoder stop).
 */
unsigned int tk_cores_allowed(unsigned int want);

/*
 * The ring of jobs of the print pool (present/print-pool.c), which both
 * reports share (handoff.c). The merge thread fills
 * job number k in slot k % n, then either prints it itself (inline) or
 * logs it for the workers; workers take logged jobs oldest first; the
 * merge writes the texts out in job order, and a slot is free again once
 * its text is written. What a job holds (its log) is the caller's, in
 * arrays indexed by slot; the ring keeps the states, the order and the
 * texts. One lock guards it; the merge takes it once or twice a job.
 */
struct tk_jobs {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	size_t n;		    /* slots */
	int *state;		    /* per slot */
	struct tk_text_slot **text; /* per slot: the text its printer lent it */
	struct tk_text_slot *mine;  /* n: the merge thread's own, for the jobs it prints */
	uint64_t *queue;	    /* logged job numbers, oldest at head */
	uint64_t filled, written, head, tail;
	size_t ready; /* workers taking jobs */
	bool stop;
	/*
	 * Optional: the merge prints logged job @slot into @text itself (the
	 * engine's printing of a log, with the merge's printer), rather than
	 * wait for a worker that may have no CPU (write_done()). Return: 0 or
	 * a negative errno, as a worker's.
	 */
	int (*take_back)(void *arg, size_t slot, struct tk_outbuf *text);
	void *take_back_arg;
	char error[512]; /* the first worker failure, reported with its text */
} __attribute__((aligned(TK_LINE)));

/*
 * Zero the ring and size it for @n slots, with the merge's texts of @text_cap
 * bytes to start with. Return: 0 or -ENOMEM (then tk_jobs_destroy() it).
 */
int tk_jobs_init(struct tk_jobs *q, size_t n, size_t text_cap);
void tk_jobs_destroy(struct tk_jobs *q);

/*
 * Merge: start job number q->filled, waiting for its slot to be written out
 * (writing done jobs to @out meanwhile). It is printed inline, into a text
 * lent from q->mine, when @force, when no worker is ready yet, or when the
 * workers already have @depth jobs each waiting; *@printed_inline says
 * which. Return: the slot.
 */
size_t tk_jobs_start(struct tk_jobs *q, struct tk_outbuf *out, size_t depth, bool force,
		     bool *printed_inline);
/* Merge: the job in @slot, still empty, is printed inline after all. */
void tk_jobs_make_inline(struct tk_jobs *q, size_t slot);
/*
 * Merge: hand the filled job in @slot over (a logged one to the workers;
 * an inline one is done), then write the done jobs next in order to @out.
 */
void tk_jobs_hand(struct tk_jobs *q, size_t slot, bool printed_inline, struct tk_outbuf *out);
/*
 * Merge, while it prints a job inline: whether a worker is ready and no
 * logged job waits, i.e. the workers are about to idle. Then the job is
 * best handed over as it is (tk_jobs_hand()), short, and the next one
 * logged: an inline job runs to its end otherwise, however long the
 * workers wait. Without the lock: a stale answer costs a little balance.
 */
static inline bool tk_jobs_starving(const struct tk_jobs *q)
{
	return __atomic_load_n(&q->ready, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&q->head, __ATOMIC_RELAXED) == q->tail;
}

/* Merge: forget the empty job in @slot (the run ended with it). */
void tk_jobs_drop(struct tk_jobs *q, size_t slot);
/* Merge: write every job handed over, then let the workers return. */
void tk_jobs_finish(struct tk_jobs *q, struct tk_outbuf *out);

/* Worker: from now on this thread takes jobs (no job is logged before one does). */
void tk_jobs_ready(struct tk_jobs *q);
/* Worker: the slot of the oldest logged job, its text lent from @mine; false once finished. */
bool tk_jobs_take(struct tk_jobs *q, struct tk_text_slot *mine, size_t *slot);
/* Worker: the job in @slot is printed (@err: a failure, its message in tk_errmsg()). */
void tk_jobs_done(struct tk_jobs *q, size_t slot, int err);

#endif
