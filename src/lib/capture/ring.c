// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * ring: the kernel's ring buffer, in user space.
 *
 * Pages. Every buffer is an array of N sub-buffers ("pages") of
 * page_size bytes in the kernel format (include/tracekit/page.h):
 * u64 timestamp | long commit | data. Pages are numbered by a 64-bit
 * sequence number s that only grows; page s lives in slot s % N, and the
 * writer always moves from slot i to slot i + 1 (mod N). Inside a ring
 * page the commit word is not maintained: readers learn the data size from
 * the buffer's commit position (below) and write a real commit word into
 * the page they hand out.
 *
 * Events are written exactly as the kernel writes them: a 32-bit header of
 * type_len:5 | time_delta:27, inline lengths up to 112 bytes, a length word
 * beyond, 12-byte records grown to 16, a time extend (type 30) when the
 * delta needs more than 27 bits, and an absolute stamp (type 31) when the
 * writer cannot know its predecessor's time (see nesting). The first event
 * of a page has delta 0 and sets the page timestamp. No padding is written
 * at the end of a page: the data size stops before the unused tail.
 *
 * Slot descriptor word (64 bits, changed by the writer and its signal
 * handlers only, with single-instruction read-modify-writes):
 *
 *   bits 0-19   write: bytes reserved in the page (can exceed the data
 *               capacity by the reservations that did not fit)
 *   bits 20-38  entries: events reserved on the page and not given back
 *   bit  39     retired: the tail has left the page
 *   bits 40-63  low 24 bits of the page's sequence number
 *
 * Reserving is one xadd on this word that adds the record bytes and one
 * entry at once (no lock prefix on x86-64: a signal is delivered between
 * instructions, so the add is atomic against our own handlers, and no other
 * thread writes it). A reservation that does not fit, and a discard, give
 * the entry back with another xadd. So entries count events at
 * reservation; readers only ever use the entries of pages the commit has
 * passed, where every reservation is committed or given back. The writer
 * that makes `write` cross the capacity ("the straddler") records the
 * page's data size in `end`. Page sizes are limited to 64 KiB so that the
 * overshoot of at most TK_RING_MAX_NEST reservations never carries into
 * `entries`.
 *
 * committed (events ever committed) is not counted per event: when the
 * tail leaves a page, the writer sets `retired` with a cmpxchg and adds the
 * page's entries to cb->committed, exactly once even if handlers race to
 * move the same tail; stats add the entries of the current tail page. A
 * give-back that finds `retired` set where its own add did not takes the
 * event out of cb->committed too.
 *
 * Shared words, read by reader threads:
 *
 *   commit_pos  (seq << 20 | bytes): everything before it is committed;
 *               stored with release by the outermost writer only
 *   head        (seq << 20 | k): the oldest unread page and how many of
 *               its events were consumed; the reader advances it, the
 *               writer pushes it in overwrite mode; both with cmpxchg
 *   pin         seq + 1 of the page a reader is copying, or 0
 *
 * Invariants: head <= commit page <= tail page; tail - head <= N - 1 (the
 * writer pushes or drops before it would reuse the head slot); tail -
 * commit <= N - 1 (a nested storm that would lap the commit is dropped and
 * counted as commit_overrun); the writer never writes into a pinned slot
 * (it drops the event instead, counted in dropped); a reader's copy is
 * valid only if its cmpxchg on head succeeds afterwards.
 *
 * Nesting (a thread and its signal handlers, like the kernel's interrupt
 * levels). `nest` is the kernel's committing; only the outermost writer
 * publishes commit_pos. The kernel also counts `commits` to learn whether
 * a handler committed after the outermost writer read the tail; here the
 * writer instead re-reads the slot word after nest = 0 and compares it
 * with what its own xadd left: a handler that reserved, moved the tail or
 * retired the page changed it, and the writer publishes again. One plain
 * load replaces a read-modify-write per event. Timestamps
 * use the kernel's before/write stamps: a writer reads the page's write
 * index A and both stamps, reads the clock, stores before = now and then
 * reserves. If the xadd returned A and before == write on entry, nothing
 * came in between and delta = now - write_stamp. If the xadd returned more
 * than A, a handler wrote in between and this event takes delta 0 (the
 * handler's time; 8 reserved bytes become a zero time extend) and poisons
 * write_stamp. If the stamps differed on entry, the writer interrupted
 * another one between its clock read and its stamp update and cannot know
 * its predecessor's time, so it writes an absolute stamp (type 31). Times
 * never go backwards and every delta is exact for the page decoder.
 *
 * Readers copy pages out (read_page, consume) under the per-buffer mutex:
 * pin the slot, re-check head, copy, cmpxchg head forward. Copying instead
 * of the kernel's page swap keeps the writer free of reader pages and costs
 * ~0.1 us per 4 KiB page (drain runs far above 1 GB/s: bench-ring).
 *
 * Control (resize, reset, swap): raise record_disabled, then
 * membarrier(PRIVATE_EXPEDITED) so that every writer either has published
 * nest > 0 (we wait for it to leave, see quiesce()) or will see the
 * disable; writers pay only a compiler barrier for it. A refused
 * outermost writer does not publish (the control call may be changing
 * the buffer), so the control call publishes for it (settle_commit()).
 * Buffer descriptors never move: swap_cpu exchanges contents, so a
 * writer's buffer pointer stays valid and its own across a swap. Under ThreadSanitizer the writer
 * uses real fences and lock-prefixed atomics so that the tool can follow the synchronisation.
 *
 * Why per-thread buffers, rdtsc and no atomics: a per-CPU buffer shared
 * by threads needs an atomic read-modify-write per event (a locked xadd or
 * cmpxchg costs as much as the rest of the write), and rdtsc is the
 * cheapest clock that orders events (CLOCK_MONOTONIC through the vDSO
 * costs about twice as much). The write path (tk_ring_write) is one TLS
 * load, the nest count, one gate word ("disabled or not TSC"), one rdtsc
 * (no lfence, see tsc_read), one non-locked xadd that reserves and counts
 * the entry, header and payload stores (a copy specialised for 16-byte
 * payloads), the commit store and one re-check load; no call: page ends,
 * time extends, nested writers and races leave through cold tail calls.
 * The buffer is found as ring->cbs + index (descriptors are 1 KiB and never
 * move). What each of these choices measured, and what was tried and
 * dropped, is in bench/README.md ("bench-ring").
 */
#include <tracekit/ring.h>

#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal/error.h"

#define OFF_BITS    20
#define OFF_MASK    ((1ULL << OFF_BITS) - 1)
#define ENT_SHIFT   20
#define ENT_ONE	    (1ULL << ENT_SHIFT)
#define ENT_MASK    ((1ULL << 19) - 1)
#define RETIRED	    (1ULL << 39)
#define SEQ_SHIFT   40
#define SEQ_MASK    ((1ULL << 24) - 1)
#define HEAD_K_MASK ((1ULL << 20) - 1)

#define TYPE_PADDING	 29
#define TYPE_TIME_EXTEND 30
#define TYPE_TIME_STAMP	 31
#define DELTA_MASK	 ((1U << 27) - 1)
/*
 * A poisoned write stamp: bit 63 makes now - stamp exceed 27 bits for any
 * clock value below 2^63, so the fast path needs no separate check.
 */
#define STAMP_INVALID (1ULL << 63)

#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif

/* ------------------------------------------------------------ local ops */

/*
 * Read-modify-writes that are atomic against the calling thread's signal
 * handlers but not against other CPUs: the kernel's local_t. Only the
 * buffer's writer (and its handlers) modify these words; readers load them.
 */
#if defined(__x86_64__) && !defined(RING_TSAN)
static inline uint64_t local_xadd(uint64_t *p, uint64_t v)
{
	__asm__ volatile("xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;
}

static inline bool local_cmpxchg(uint64_t *p, uint64_t old, uint64_t new)
{
	bool ok;

	__asm__ volatile("cmpxchgq %3, %1"
			 : "+a"(old), "+m"(*p), "=@ccz"(ok)
			 : "r"(new)
			 : "memory");
	return ok;
}

static inline void writer_fence(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
#else
static inline uint64_t local_xadd(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline bool local_cmpxchg(uint64_t *p, uint64_t old, uint64_t new)
{
	return __atomic_compare_exchange_n(p, &old, new, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

#if defined(RING_TSAN)
/* GCC refuses fences under TSan; a locked RMW is a full barrier on x86. */
static __thread uint64_t fence_word;

static inline void writer_fence(void)
{
	__atomic_fetch_add(&fence_word, 0, __ATOMIC_SEQ_CST);
}
#else
static inline void writer_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif
#endif

#define RD(x)	 __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WR(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
/* Leaving an event: a plain store on x86-64, and what control calls acquire. */
#define WR_REL(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define barrier()    __atomic_signal_fence(__ATOMIC_SEQ_CST)

static inline void local_inc(uint64_t *p)
{
	local_xadd(p, 1);
}

/* ------------------------------------------------------------ structures */

struct rb_slot {
	uint64_t word; /* write | entries | seq24, see the notes */
	uint64_t seq;  /* full sequence number of the page in this slot */
	uint64_t end;  /* data bytes, set by the straddler */
	uint8_t *mem;  /* page_size bytes */
};

struct tk_ring_event {
	struct rb_slot *slot;
	uint64_t wexp; /* slot word right after the reservation */
	uint8_t *rec;  /* first record written for this event (extend or data) */
	uint8_t *payload;
	uint32_t start; /* offset of rec in the page data */
	uint32_t total; /* bytes reserved */
	uint32_t delta; /* the data record's delta */
	uint32_t level;
};

/* What the writer's fast path read before it handed over to the general path. */
struct first_read {
	struct rb_slot *tp;
	uint64_t a, b, wts, ts;
	uint64_t wadd; /* the xadd's result when a handler raced us, else UINT64_MAX */
};

struct cpu_buffer {
	/* writer side, touched by the buffer's thread and its signal handlers */
	struct rb_slot *tail;
	uint64_t nest;
	uint64_t before_stamp;
	uint64_t write_stamp;
	struct rb_slot *slots;
	uint32_t nr_slots;
	uint32_t cap; /* data bytes per page */
	uint64_t record_disabled;
	struct tk_ring *ring; /* fixed: swap_cpu exchanges contents, not buffers */
	uint64_t gen;	      /* contents generation: iterators restart when it moves */
	uint64_t committed, overrun, commit_overrun, dropped;
	struct tk_ring_event ev[TK_RING_MAX_NEST];
	struct first_read fr0; /* level 0 only: hand-over from tk_ring_write's fast path */

	/* shared with readers */
	uint64_t commit_pos __attribute__((aligned(64)));
	uint64_t head __attribute__((aligned(64)));
	uint64_t pin;
	uint64_t read;

	/* reader side, under lock */
	pthread_mutex_t lock __attribute__((aligned(64)));
	uint64_t r_seq, r_off, r_ts, r_last_overrun;
	uint8_t *rpage;		 /* consume(): private copy of one page */
	struct tk_page_iter rit; /* position in rpage */
	struct tk_page_iter rit_before;
	struct tk_page_record rrec;
	bool r_valid, r_peeked;
	uint64_t r_lost;
	uint8_t *mem;
	size_t mem_len;
	/* A power-of-two size makes ring->cbs + index one shift in the fast path. */
} __attribute__((aligned(1024)));

/*
 * The ring's gate word: the record_disable counter in the low bits and a
 * flag for clocks the fast path of tk_ring_write() does not read, so that
 * the fast path tests one word for both.
 */
#define GATE_DISABLED_MASK ((1ULL << 40) - 1)
#define GATE_SLOW_CLOCK	   (1ULL << 40)

struct tk_ring {
	uint64_t id;
	uint64_t gate;		/* record_disabled | GATE_SLOW_CLOCK */
	struct cpu_buffer *cbs; /* nr_cpus buffers, never moved until free */
	int nr_cpus;
	enum tk_ring_mode mode;
	enum tk_ring_layout layout;
	enum tk_ring_clock clock;
	uint64_t (*clock_fn)(void *ctx);
	void *clock_ctx;
	uint32_t page_size, hdr, cap, max_payload;
	struct tk_page_format fmt;
	pid_t *owners;
	uint32_t nr_inited; /* buffers to release in tk_ring_free() */
	uint64_t no_buffer;
	uint32_t tsc_mult, tsc_shift;
};

/* ------------------------------------------------------------ clocks */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * rdtsc without a fence. The writer needs its stamps ordered only against
 * its own earlier stamps and against its signal handlers: a signal enters
 * and leaves through the kernel, which serialises, and a stamp read out of
 * order with the previous one (or on a CPU whose TSC lags after a
 * migration) only yields a clamped delta of 0, never time going backwards.
 * lfence+rdtsc cost 27-30 ns here against 17-22 for rdtsc.
 */
static inline uint64_t tsc_read(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return 0; /* never called: TK_RING_CLOCK_TSC is refused elsewhere */
#endif
}

static inline uint64_t ring_clock(const struct tk_ring *ring)
{
#if defined(__x86_64__)
	if (__builtin_expect(ring->clock == TK_RING_CLOCK_TSC, 1))
		return tsc_read();
#endif
	if (ring->clock == TK_RING_CLOCK_CUSTOM)
		return ring->clock_fn(ring->clock_ctx);
	return mono_ns();
}

static bool have_invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned int a = 0x80000000, b, c, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
	if (a < 0x80000007)
		return false;
	a = 0x80000007;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d) : "c"(0));
	return d & (1U << 8);
#else
	return false;
#endif
}

static uint32_t g_tsc_mult, g_tsc_shift;
static pthread_once_t g_tsc_once = PTHREAD_ONCE_INIT;

/*
 * ns = tsc * mult >> shift. Calibrated once against CLOCK_MONOTONIC over
 * 5 ms, which is within ~0.1% on the reference VM (TSC 2.000 GHz).
 */
static void calibrate_tsc(void)
{
#if defined(__x86_64__)
	uint64_t n0 = mono_ns(), t0 = __builtin_ia32_rdtsc(), n1, t1;

	do {
		n1 = mono_ns();
	} while (n1 - n0 < 5000000);
	t1 = __builtin_ia32_rdtsc();
	g_tsc_shift = 24;
	g_tsc_mult = (uint32_t)(((n1 - n0) << 24) / (t1 - t0 ? t1 - t0 : 1));
#endif
}

TK_API uint64_t tk_ring_time_stamp(const struct tk_ring *ring)
{
	return ring_clock(ring);
}

TK_API void tk_ring_normalize_time_stamp(const struct tk_ring *ring, int cpu, uint64_t *ts)
{
	(void)cpu;
	if (ring->clock == TK_RING_CLOCK_TSC)
		*ts = (uint64_t)(((unsigned __int128)*ts * ring->tsc_mult) >> ring->tsc_shift);
}

TK_API const char *tk_ring_clock_name(const struct tk_ring *ring)
{
	switch (ring->clock) {
	case TK_RING_CLOCK_TSC:
		return "x86-tsc";
	case TK_RING_CLOCK_MONOTONIC:
		return "mono";
	default:
		return "counter";
	}
}

/* ------------------------------------------------------------ records */

static inline uint32_t rec_header(uint32_t type, uint32_t delta)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (type << 27) | (delta & DELTA_MASK);
#else
	return type | (delta << 5);
#endif
}

static inline void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Record bytes for a payload of n bytes (kernel rb_calculate_event_length). */
static inline uint32_t record_length(uint32_t n)
{
	uint32_t n4 = (n + 3) & ~3U;

	if (n4 <= 112)
		return n4 == 8 ? 16 : 4 + n4;
	return 8 + n4;
}

/* Write a data record header at p; returns the payload pointer. */
static inline uint8_t *put_data(uint8_t *p, uint32_t rec, uint32_t delta)
{
	uint32_t n4 = rec - 4;

	if (n4 <= 112) {
		put32(p, rec_header(n4 / 4, delta));
		put32(p + rec - 4, 0);
		return p + 4;
	}
	put32(p, rec_header(0, delta));
	put32(p + 4, rec - 4);
	put32(p + rec - 4, 0);
	return p + 8;
}

static inline void put_extend(uint8_t *p, uint32_t type, uint64_t v)
{
	put32(p, rec_header(type, (uint32_t)(v & DELTA_MASK)));
	put32(p + 4, (uint32_t)(v >> 27));
}

/* ------------------------------------------------------------ buffer slots */

static uint64_t g_ring_id;

/*
 * The calling thread's buffer in a PER_THREAD ring: ring id << 20 | index,
 * one initial-exec TLS word (ids start at 1, so its initial 0 matches no
 * ring). It caches the index, not the buffer pointer: a
 * {ring, buffer} pair would take two words, and a signal handler writing to
 * another ring could change them between our two loads (a single-word entry
 * is replaced atomically against handlers). Buffers never move (swap_cpu
 * exchanges their contents), so the buffer is ring->cbs + index, with no
 * pointer to chase, and ring ids are never reused, so a stale entry left
 * by a freed ring can only fail the id comparison: nothing to invalidate.
 */
static __thread uint64_t tls_slot __attribute__((tls_model("initial-exec")));

static bool owner_alive(pid_t tid)
{
	return syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH;
}

static int claim_slot(struct tk_ring *ring)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int saved = errno, i, found = -1;

	for (i = 0; i < ring->nr_cpus && found < 0; i++)
		if (__atomic_load_n(&ring->owners[i], __ATOMIC_ACQUIRE) == tid)
			found = i;
	/*
	 * A signal handler of this thread can claim a buffer while we are
	 * between these loops (its write is this thread's first): a
	 * compare-exchange that fails on our own tid has found our buffer.
	 */
	for (i = 0; i < ring->nr_cpus && found < 0; i++) {
		pid_t old = 0;

		if (__atomic_compare_exchange_n(&ring->owners[i], &old, tid, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
		    old == tid)
			found = i;
	}
	/* Take over the buffer of a thread that has exited. */
	for (i = 0; i < ring->nr_cpus && found < 0; i++) {
		pid_t old = __atomic_load_n(&ring->owners[i], __ATOMIC_ACQUIRE);

		if (old == tid ||
		    (!owner_alive(old) &&
		     __atomic_compare_exchange_n(&ring->owners[i], &old, tid, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) ||
		    old == tid)
			found = i;
	}
	errno = saved;
	if (found >= 0)
		tls_slot = (ring->id << 20) | (uint64_t)found;
	return found;
}

/* Everything but a PER_THREAD ring whose buffer this thread already has. */
static int __attribute__((noinline, cold)) this_slot_slow(struct tk_ring *ring)
{
	if (ring->layout == TK_RING_PER_CPU) {
		int cpu = sched_getcpu();

		return cpu >= 0 && cpu < ring->nr_cpus ? cpu : -1;
	}
	return claim_slot(ring);
}

static inline __attribute__((always_inline)) int this_slot(struct tk_ring *ring)
{
	uint64_t v = tls_slot;

	/* PER_CPU rings never enter tls_slot, so they always take the slow path. */
	if (__builtin_expect((v >> 20) == ring->id, 1))
		return (int)(v & 0xfffff);
	return this_slot_slow(ring);
}

TK_API int tk_ring_this_cpu(struct tk_ring *ring)
{
	int s = this_slot(ring);

	return s < 0 ? -EAGAIN : s;
}

/* ------------------------------------------------------------ writer */

static inline struct rb_slot *next_slot(const struct cpu_buffer *cb, struct rb_slot *s)
{
	return s + 1 == cb->slots + cb->nr_slots ? cb->slots : s + 1;
}

/*
 * Publish the commit position as the outermost writer; nest is 1 on entry.
 * Loops while a signal handler reserved between our read of the tail and
 * our nest = 0: the handler ran nested and left the publishing to us. Such
 * a handler always changes the tail or the tail page's write offset (a
 * handler that reserved and took its space back left nothing to publish).
 */
static void __attribute__((noinline, cold)) publish_commit(struct cpu_buffer *cb)
{
	for (;;) {
		struct rb_slot *tp = RD(cb->tail);
		uint64_t w = RD(tp->word) & OFF_MASK, off = w;

		if (off > cb->cap)
			off = RD(tp->end);
		barrier();
		__atomic_store_n(&cb->commit_pos, (RD(tp->seq) << OFF_BITS) | off,
				 __ATOMIC_RELEASE);
		barrier();
		WR_REL(cb->nest, 0);
		barrier();
		if (RD(cb->tail) == tp && (RD(tp->word) & OFF_MASK) == w)
			return;
		WR(cb->nest, 1);
		barrier();
	}
}

/* Leave nesting level @level (nest is level + 1 on entry). */
static inline void end_nest(struct cpu_buffer *cb, uint64_t level)
{
	if (level) {
		barrier();
		WR_REL(cb->nest, level);
		return;
	}
	publish_commit(cb);
}

/*
 * Commit an event that ends at @end in slot @s. Entries were counted when
 * the event was reserved, so only the outermost writer has work: publish
 * its own end, drop nest, then check that the slot word is still what our
 * reservation left (@wexp). Any handler that reserved, moved the tail or
 * retired the page since changed it; then publish the tail instead.
 */
static inline __attribute__((always_inline)) void
commit_event(struct cpu_buffer *cb, struct rb_slot *s, uint64_t level, uint64_t end, uint64_t wexp)
{
	if (level) {
		barrier();
		WR_REL(cb->nest, level);
		return;
	}
	barrier();
	__atomic_store_n(&cb->commit_pos, (RD(s->seq) << OFF_BITS) | end, __ATOMIC_RELEASE);
	barrier();
	WR_REL(cb->nest, 0);
	barrier();
	if (__builtin_expect(RD(s->word) == wexp, 1))
		return;
	WR(cb->nest, 1);
	barrier();
	publish_commit(cb);
}

/*
 * Give back the entry a reservation that did not fit added to slot @s.
 * @wadd is the word the reservation's xadd returned: if the page was
 * retired after that add, the retirement counted our entry in committed.
 */
static void unreserve(struct cpu_buffer *cb, struct rb_slot *s, uint64_t wadd)
{
	uint64_t old = local_xadd(&s->word, -ENT_ONE);

	if (!(wadd & RETIRED) && (old & RETIRED))
		local_xadd(&cb->committed, (uint64_t)-1);
}

/*
 * Mark the page the tail leaves as retired and move its entries into the
 * committed count, once (nested writers may race to move the same tail).
 */
static void retire(struct cpu_buffer *cb, struct rb_slot *tp)
{
	for (;;) {
		uint64_t w = RD(tp->word);

		if (w & RETIRED)
			return;
		if (local_cmpxchg(&tp->word, w, w | RETIRED)) {
			local_xadd(&cb->committed, (w >> ENT_SHIFT) & ENT_MASK);
			return;
		}
	}
}

enum { MOVE_OK = 0, MOVE_DROP = -1, MOVE_COMMIT_OVERRUN = -2 };

/*
 * Move the tail from tp to the next slot, pushing (overwrite) or refusing
 * (producer/consumer) when that slot still holds the unread head page.
 */
static int __attribute__((noinline, cold)) move_tail(struct cpu_buffer *cb, struct rb_slot *tp)
{
	struct rb_slot *next = next_slot(cb, tp);
	uint64_t nseq = RD(tp->seq) + 1, n = cb->nr_slots;

	if (RD(cb->tail) != tp)
		return MOVE_OK; /* a nested writer moved it already */
	if (nseq - (RD(cb->commit_pos) >> OFF_BITS) >= n)
		return MOVE_COMMIT_OVERRUN;
	if (nseq >= n) {
		uint64_t q = nseq - n;

		if (__atomic_load_n(&cb->pin, __ATOMIC_ACQUIRE) == q + 1)
			return MOVE_DROP;
		for (;;) {
			uint64_t hw = __atomic_load_n(&cb->head, __ATOMIC_ACQUIRE);

			if ((hw >> OFF_BITS) > q)
				break;
			if (cb->ring->mode == TK_RING_PRODUCER_CONSUMER)
				return MOVE_DROP;
			if (__atomic_compare_exchange_n(&cb->head, &hw, (q + 1) << OFF_BITS, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
				uint64_t ent = (RD(next->word) >> ENT_SHIFT) & ENT_MASK;
				uint64_t k = hw & HEAD_K_MASK;

				local_xadd(&cb->overrun, ent > k ? ent - k : 0);
				break;
			}
		}
		/* Dekker with the reader: head cmpxchg above, then the pin. */
		if (__atomic_load_n(&cb->pin, __ATOMIC_SEQ_CST) == q + 1)
			return MOVE_DROP;
	}
	WR(next->seq, nseq);
	uint64_t old = RD(next->word);

	if ((old >> SEQ_SHIFT) != (nseq & SEQ_MASK))
		local_cmpxchg(&next->word, old, (nseq & SEQ_MASK) << SEQ_SHIFT);
	barrier();
	retire(cb, tp);
	barrier();
	local_cmpxchg((uint64_t *)&cb->tail, (uint64_t)(uintptr_t)tp, (uint64_t)(uintptr_t)next);
	return MOVE_OK;
}

enum { RES_OK = 0, RES_DISABLED, RES_TOOBIG, RES_DROP };

/* A reservation: where the event went. */
struct resv {
	int why; /* RES_OK or why not */
	struct rb_slot *slot;
	uint8_t *rec; /* first record written for this event (extend or data) */
	uint8_t *payload;
	uint32_t start; /* offset of rec in the page data */
	uint32_t total; /* bytes reserved */
	uint32_t delta; /* the data record's delta */
	uint64_t wexp;	/* slot word right after our reservation */
};

static inline void resv_set(struct resv *rv, struct rb_slot *tp, uint8_t *p, uint64_t wadd,
			    uint32_t total)
{
	rv->why = RES_OK;
	rv->slot = tp;
	rv->rec = p;
	rv->start = (uint32_t)(wadd & OFF_MASK);
	rv->total = total;
	rv->wexp = wadd + total + ENT_ONE;
}

/*
 * The general reservation: first event of a page, page switches, time
 * extends and absolute stamps, and everything after a signal handler came
 * in between. @f, when set, holds what the fast path read before it gave
 * up (the clock included, so the clock is read once per event).
 */
static struct resv __attribute__((noinline, cold))
reserve_slow(struct tk_ring *ring, struct cpu_buffer *cb, uint32_t len, const struct first_read *f)
{
	const uint32_t rec = record_length(len), cap = cb->cap, hdr = ring->hdr;
	struct resv res = {.why = RES_DROP}, *rv = &res;

	for (;;) {
		struct rb_slot *tp = f ? f->tp : RD(cb->tail);
		uint64_t a = f ? f->a : RD(tp->word) & OFF_MASK;
		int r;

		if (a < cap) {
			uint64_t b = f ? f->b : RD(cb->before_stamp);
			uint64_t wts = f ? f->wts : RD(cb->write_stamp);
			uint64_t ts = f ? f->ts : ring_clock(ring);
			uint64_t delta = ts > wts ? ts - wts : 0;
			uint32_t extra = 0;
			bool abs = b != wts || (wts & STAMP_INVALID);

			f = NULL;
			WR(cb->before_stamp, ts);
			barrier();
			/* The first event of a page needs no stamp: the page has one. */
			if ((abs || delta > DELTA_MASK) && a != 0)
				extra = 8;
			uint32_t total = rec + extra;
			uint64_t wadd = local_xadd(&tp->word, total + ENT_ONE);
			uint64_t c = wadd & OFF_MASK;

			barrier();
			if (c + total <= cap) {
				uint8_t *p = tp->mem + hdr + c;

				resv_set(rv, tp, p, wadd, total);
				if (c == 0) {
					/* First event of the page: the page takes its time. */
					memcpy(tp->mem, &ts, 8);
				}
				if (extra) {
					if (c == a && c != 0 && abs)
						put_extend(p, TYPE_TIME_STAMP, ts);
					else if (c == a && c != 0)
						put_extend(p, TYPE_TIME_EXTEND, delta);
					else
						put_extend(p, TYPE_TIME_EXTEND, 0);
					p += 8;
				}
				if (c == a && c != 0 && extra == 0) {
					rv->delta = (uint32_t)delta;
					rv->payload = put_data(p, rec, (uint32_t)delta);
				} else {
					rv->delta = 0;
					rv->payload = put_data(p, rec, 0);
				}
				barrier();
				/*
				 * A handler wrote between our clock read and our
				 * reservation: we took its time (delta 0), so the
				 * next writer must not trust write_stamp.
				 */
				WR(cb->write_stamp, c == a ? ts : STAMP_INVALID);
				return res;
			}
			if (c <= cap)
				WR(tp->end, c);
			unreserve(cb, tp, wadd);
			WR(cb->before_stamp, b);
			barrier();
		} else if (a == cap) {
			/* The page ended exactly: nobody straddles it. */
			WR(tp->end, a);
		}
		f = NULL;
		r = move_tail(cb, tp);
		if (r != MOVE_OK) {
			local_inc(r == MOVE_DROP ? &cb->dropped : &cb->commit_overrun);
			return res;
		}
	}
}

/*
 * Our fast-path reservation (xadd returned @wadd) landed behind events a
 * signal handler wrote after our clock read. Like the kernel, take the
 * handler's time (delta 0) if it fits; else we straddle the page end.
 */
static struct resv __attribute__((noinline, cold))
reserve_raced(struct tk_ring *ring, struct cpu_buffer *cb, struct rb_slot *tp, uint64_t wadd,
	      uint32_t len, uint64_t b)
{
	const uint32_t rec = record_length(len);
	uint64_t c = wadd & OFF_MASK;
	struct resv res = {.why = RES_DROP};

	if (c + rec <= cb->cap) {
		uint8_t *p = tp->mem + ring->hdr + c;

		resv_set(&res, tp, p, wadd, rec);
		res.delta = 0;
		res.payload = put_data(p, rec, 0);
		barrier();
		WR(cb->write_stamp, STAMP_INVALID);
		return res;
	}
	if (c <= cb->cap)
		WR(tp->end, c);
	unreserve(cb, tp, wadd);
	WR(cb->before_stamp, b);
	barrier();
	int r = move_tail(cb, tp);

	if (r != MOVE_OK) {
		local_inc(r == MOVE_DROP ? &cb->dropped : &cb->commit_overrun);
		return res;
	}
	return reserve_slow(ring, cb, len, NULL);
}

/*
 * Reserve @len payload bytes in @cb (nest already raised, checks done).
 * The fast path is the steady state of a page: the previous event's stamp
 * is valid, the delta fits in 27 bits, the page has room and is not empty.
 * Then one clock read, one single-instruction xadd on the slot word (room
 * and entry count at once) and the header store are all it takes.
 */
static inline __attribute__((always_inline)) struct resv
reserve(struct tk_ring *ring, struct cpu_buffer *cb, uint32_t len)
{
	const uint32_t rec = record_length(len);
	struct rb_slot *tp = RD(cb->tail);
	uint64_t a = RD(tp->word) & OFF_MASK;
	uint64_t b = RD(cb->before_stamp), wts = RD(cb->write_stamp);

	if (__builtin_expect(b == wts && a != 0 && a + rec <= cb->cap, 1)) {
		uint64_t ts = ring_clock(ring);
		uint64_t delta = ts - wts; /* wraps when ts < wts: the slow path clamps it */

		if (__builtin_expect(delta <= DELTA_MASK, 1)) {
			WR(cb->before_stamp, ts);
			barrier();
			uint64_t wadd = local_xadd(&tp->word, rec + ENT_ONE);

			barrier();
			if (__builtin_expect((wadd & OFF_MASK) == a, 1)) {
				uint8_t *p = tp->mem + ring->hdr + a;
				struct resv rv;

				resv_set(&rv, tp, p, wadd, rec);
				rv.delta = (uint32_t)delta;
				rv.payload = put_data(p, rec, (uint32_t)delta);
				barrier();
				WR(cb->write_stamp, ts);
				return rv;
			}
			return reserve_raced(ring, cb, tp, wadd, len, b);
		}
		const struct first_read f = {tp, a, b, wts, ts, UINT64_MAX};

		return reserve_slow(ring, cb, len, &f);
	}
	return reserve_slow(ring, cb, len, NULL);
}

/* Why enter() refused, with nest restored. */
static int __attribute__((noinline, cold))
enter_refused(struct tk_ring *ring, struct cpu_buffer *cb, uint64_t level, uint32_t len)
{
	int why;

	if (level >= TK_RING_MAX_NEST) {
		local_inc(&cb->dropped);
		why = RES_DROP;
	} else if (len - 1 >= ring->max_payload) {
		why = RES_TOOBIG;
	} else {
		/* Disabled when enter_ok() looked, maybe not any more (a swap ended). */
		why = RES_DISABLED;
	}
	/*
	 * The outermost writer does not publish here: a control call may be
	 * changing the buffer right now (it saw nest 0 before our nest = 1).
	 * An event a handler slipped in before the disable is published by
	 * the next commit or by the control call (settle_commit()).
	 */
	barrier();
	WR_REL(cb->nest, level);
	return -why;
}

static inline __attribute__((always_inline)) bool
enter_ok(struct tk_ring *ring, struct cpu_buffer *cb, uint64_t level, uint32_t len)
{
	/*
	 * Orders nest before the disable checks; only a compiler barrier
	 * here, a control call's membarrier makes it a full fence.
	 */
	writer_fence();
	return !(level >= TK_RING_MAX_NEST ||
		 ((__atomic_load_n(&ring->gate, __ATOMIC_ACQUIRE) & GATE_DISABLED_MASK) |
		  __atomic_load_n(&cb->record_disabled, __ATOMIC_ACQUIRE)) ||
		 len - 1 >= ring->max_payload);
}

/* Raise nest and check. Returns the level, or -RES_* with nest restored. */
static inline __attribute__((always_inline)) int64_t enter(struct tk_ring *ring,
							   struct cpu_buffer *cb, uint32_t len)
{
	uint64_t level = RD(cb->nest);

	WR(cb->nest, level + 1);
	if (__builtin_expect(!enter_ok(ring, cb, level, len), 0))
		return enter_refused(ring, cb, level, len);
	return (int64_t)level;
}

static void __attribute__((noinline, cold)) no_buffer(struct tk_ring *ring)
{
	__atomic_add_fetch(&ring->no_buffer, 1, __ATOMIC_RELAXED);
}

static inline struct cpu_buffer *slot_buffer(struct tk_ring *ring, int s)
{
	return &ring->cbs[s];
}

TK_API struct tk_ring_event *tk_ring_lock_reserve(struct tk_ring *ring, uint32_t len)
{
	int s = this_slot(ring);
	struct cpu_buffer *cb;
	struct resv rv;
	int64_t level;

	if (__builtin_expect(s < 0, 0)) {
		no_buffer(ring);
		return NULL;
	}
	cb = slot_buffer(ring, s);
	level = enter(ring, cb, len);
	if (__builtin_expect(level < 0, 0))
		return NULL;
	rv = reserve(ring, cb, len);
	if (__builtin_expect(rv.why != RES_OK, 0)) {
		end_nest(cb, (uint64_t)level);
		return NULL;
	}
	struct tk_ring_event *ev = &cb->ev[level];

	ev->slot = rv.slot;
	ev->rec = rv.rec;
	ev->payload = rv.payload;
	ev->start = rv.start;
	ev->total = rv.total;
	ev->delta = rv.delta;
	ev->wexp = rv.wexp;
	ev->level = (uint32_t)level;
	return ev;
}

TK_API void *tk_ring_event_data(struct tk_ring_event *event)
{
	return event->payload;
}

static inline struct cpu_buffer *event_buffer(struct tk_ring_event *ev)
{
	/* ev is cb->ev[level]: recover the buffer without a TLS lookup. */
	return (struct cpu_buffer *)((char *)(ev - ev->level) - offsetof(struct cpu_buffer, ev));
}

TK_API int tk_ring_unlock_commit(struct tk_ring *ring, struct tk_ring_event *ev)
{
	(void)ring;
	commit_event(event_buffer(ev), ev->slot, ev->level, ev->start + ev->total, ev->wexp);
	return 0;
}

TK_API void tk_ring_discard_commit(struct tk_ring *ring, struct tk_ring_event *ev)
{
	struct cpu_buffer *cb = event_buffer(ev);
	struct rb_slot *s = ev->slot;
	uint64_t w = RD(s->word);
	uint8_t *p = ev->rec;
	uint32_t left = ev->total;

	(void)ring;
	/*
	 * Take the space back only while the page is still the tail: a page
	 * that ended exactly at our event has its end recorded already.
	 */
	if (!(w & RETIRED) && RD(cb->tail) == s && (w & OFF_MASK) == ev->start + ev->total &&
	    local_cmpxchg(&s->word, w, w - ev->total - ENT_ONE)) {
		/* Space taken back; the next event must not use our stamp. */
		WR(cb->write_stamp, STAMP_INVALID);
	} else {
		/*
		 * Keep a time extend or stamp (it carries time) and turn the
		 * data record into padding with a non-zero delta: delta 0
		 * would mean "end of page". Like the kernel, a zero delta
		 * becomes 1. A discarded event is not an entry: give the
		 * count back (to committed if the page was retired since).
		 */
		uint32_t t = (get32(p) & 0x1f);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		t = get32(p) >> 27;
#endif
		if (t == TYPE_TIME_EXTEND || t == TYPE_TIME_STAMP) {
			p += 8;
			left -= 8;
		}
		put32(p, rec_header(TYPE_PADDING, ev->delta ? ev->delta : 1));
		put32(p + 4, left - 4);
		unreserve(cb, s, ev->wexp - ev->total - ENT_ONE);
	}
	end_nest(cb, ev->level);
}

static int __attribute__((noinline, cold)) write_error(int why)
{
	switch (why) {
	case RES_DISABLED:
		return -EBUSY;
	case RES_TOOBIG:
		return -E2BIG;
	default:
		return -ENOSPC;
	}
}

/*
 * Copy 1..112 bytes without a call into libc: whole or overlapping 16-,
 * 8- and 4-byte moves, never reading past @len.
 */
static inline __attribute__((always_inline)) void copy_small(uint8_t *dst, const void *src,
							     uint32_t len)
{
	const uint8_t *s = src;

	if (__builtin_expect(len == 16, 1)) {
		__builtin_memcpy(dst, s, 16);
	} else if (len >= 16) {
		for (uint32_t i = 0; i + 16 < len; i += 16) {
			__builtin_memcpy(dst + i, s + i, 16);
			barrier(); /* keep it a loop of moves, not a memcpy call */
		}
		__builtin_memcpy(dst + len - 16, s + len - 16, 16);
	} else if (len >= 8) {
		__builtin_memcpy(dst, s, 8);
		__builtin_memcpy(dst + len - 8, s + len - 8, 8);
	} else if (len >= 4) {
		__builtin_memcpy(dst, s, 4);
		__builtin_memcpy(dst + len - 4, s + len - 4, 4);
	} else {
		for (uint32_t i = 0; i < len; i++)
			dst[i] = s[i];
	}
}

/*
 * tk_ring_write() for everything the fast path below does not take: no
 * buffer yet, nested writers (signal handlers), refusals, other clocks,
 * page ends, time extends, races with a handler. @cb is NULL when nest is
 * not raised yet; else nest is 1 and @f says what was read already.
 */
static int __attribute__((noinline))
write_general(struct tk_ring *ring, struct cpu_buffer *cb, const void *data, uint32_t len,
	      const struct first_read *f)
{
	struct resv rv;
	int64_t level = 0;

	if (!cb) {
		int s = this_slot(ring);

		if (s < 0) {
			no_buffer(ring);
			return -EAGAIN;
		}
		cb = slot_buffer(ring, s);
		level = enter(ring, cb, len);
		if (level < 0)
			return write_error((int)-level);
		rv = reserve(ring, cb, len);
	} else if (!enter_ok(ring, cb, 0, len)) {
		return write_error(-enter_refused(ring, cb, 0, len));
	} else if (f && f->wadd != UINT64_MAX) {
		rv = reserve_raced(ring, cb, f->tp, f->wadd, len, f->b);
	} else if (f) {
		rv = reserve_slow(ring, cb, len, f);
	} else {
		rv = reserve(ring, cb, len);
	}
	if (rv.why != RES_OK) {
		end_nest(cb, (uint64_t)level);
		return write_error(rv.why);
	}
	if (len <= 112)
		copy_small(rv.payload, data, len);
	else
		memcpy(rv.payload, data, len);
	commit_event(cb, rv.slot, (uint64_t)level, rv.start + rv.total, rv.wexp);
	return 0;
}

static int __attribute__((noinline, cold))
write_resume(struct tk_ring *ring, struct cpu_buffer *cb, const void *data, uint32_t len)
{
	return write_general(ring, cb, data, len, &cb->fr0);
}

static int __attribute__((noinline, cold)) write_publish(struct cpu_buffer *cb)
{
	WR(cb->nest, 1);
	barrier();
	publish_commit(cb);
	return 0;
}

/* Page header bytes: u64 timestamp and a host long commit word. */
#define RING_HDR (8 + sizeof(long))

/*
 * The measured path (bench/bench-ring.c): the outermost writer of a TSC
 * ring, in the steady state of a page, payload up to 112 bytes (the
 * inline-length records). TLS slot, nest, one gate word, one clock read,
 * one xadd that reserves and counts, the header and payload stores, the
 * commit. Everything else leaves through a tail call.
 *
 * before_stamp != write_stamp must be tested even at nest 0: a handler
 * that came in between an outer writer's reservation and its write_stamp
 * store leaves write_stamp older than the last event, and another handler
 * can run as the outermost writer after the outer one dropped nest and
 * before it noticed (ThreadSanitizer, which delivers signals inside its
 * atomic calls, found that window).
 */
static inline __attribute__((always_inline)) int write_fast(struct tk_ring *ring, const void *data,
							    uint32_t len)
{
	uint64_t v = tls_slot;

	if (__builtin_expect((v >> 20) != ring->id || len - 1 >= 112, 0))
		return write_general(ring, NULL, data, len, NULL);
	struct cpu_buffer *cb = &ring->cbs[v & 0xfffff];

	if (__builtin_expect(RD(cb->nest) != 0, 0))
		return write_general(ring, NULL, data, len, NULL);
	WR(cb->nest, 1);
	writer_fence();
	/*
	 * One test for "disabled" and "not a TSC ring"; the payload limit is
	 * at least 224 bytes (256-byte pages), so 112 needs no check.
	 */
	if (__builtin_expect((__atomic_load_n(&ring->gate, __ATOMIC_ACQUIRE) |
			      __atomic_load_n(&cb->record_disabled, __ATOMIC_ACQUIRE)) != 0,
			     0))
		return write_general(ring, cb, data, len, NULL);

	const uint32_t rec = record_length(len);
	struct rb_slot *tp = RD(cb->tail);
	uint64_t a = RD(tp->word) & OFF_MASK;

	/* Room left, and not the first event of the page (a - 1 wraps). */
	if (__builtin_expect(a - 1 >= (uint64_t)(cb->cap - rec), 0))
		return write_general(ring, cb, data, len, NULL);

	uint64_t b = RD(cb->before_stamp), wts = RD(cb->write_stamp);
	uint64_t ts = tsc_read();
	uint64_t delta = ts - wts;

	/* One test: stamps equal and the delta fits in 27 bits. */
	if (__builtin_expect(((b ^ wts) | (delta >> 27)) != 0, 0)) {
		cb->fr0 = (struct first_read){tp, a, b, wts, ts, UINT64_MAX};
		return write_resume(ring, cb, data, len);
	}
	WR(cb->before_stamp, ts);
	barrier();
	uint64_t wadd = local_xadd(&tp->word, rec + ENT_ONE);

	barrier();
	if (__builtin_expect((wadd & OFF_MASK) != a, 0)) {
		cb->fr0 = (struct first_read){tp, a, b, wts, ts, wadd};
		return write_resume(ring, cb, data, len);
	}
	uint8_t *p = tp->mem + RING_HDR + a;

	put32(p, rec_header((rec - 4) / 4, (uint32_t)delta));
	/* Zero the padding of a payload that is not a multiple of 4 (or was grown). */
	if (len + 4 != rec)
		put32(p + rec - 4, 0);
	copy_small(p + 4, data, len);
	barrier();
	WR(cb->write_stamp, ts);
	barrier();
	__atomic_store_n(&cb->commit_pos, (RD(tp->seq) << OFF_BITS) | (a + rec), __ATOMIC_RELEASE);
	barrier();
	WR_REL(cb->nest, 0);
	barrier();
	if (__builtin_expect(RD(tp->word) != wadd + rec + ENT_ONE, 0))
		return write_publish(cb);
	return 0;
}

/*
 * Two payloads of 8 bytes, the common case, get a copy of the fast path
 * with the record length and the copy folded to constants: fewer live
 * registers, no callee-saved ones to push.
 */
static int __attribute__((noinline)) write_any(struct tk_ring *ring, const void *data, uint32_t len)
{
	return write_fast(ring, data, len);
}

TK_API int tk_ring_write(struct tk_ring *ring, const void *data, uint32_t len)
{
	if (__builtin_expect(len != 16, 0))
		return write_any(ring, data, len);
	return write_fast(ring, data, 16);
}

TK_API uint32_t tk_ring_max_payload(const struct tk_ring *ring)
{
	return ring->max_payload;
}

/* ------------------------------------------------------------ allocation */

static uint32_t pages_for(const struct tk_ring *ring, uint64_t size)
{
	uint64_t n = (size + ring->page_size - 1) / ring->page_size;

	/* Slot words keep 24 bits of the page number: stay well below that. */
	if (n >= (1U << 23))
		return 0;
	return n < 2 ? 2 : (uint32_t)n;
}

static void init_slots(struct cpu_buffer *cb, uint64_t base_seq)
{
	for (uint32_t i = 0; i < cb->nr_slots; i++) {
		cb->slots[i].word = SEQ_MASK << SEQ_SHIFT; /* matches no live page yet */
		cb->slots[i].seq = UINT64_MAX;
		cb->slots[i].end = 0;
	}
	struct rb_slot *t = &cb->slots[base_seq % cb->nr_slots];

	t->seq = base_seq;
	t->word = (base_seq & SEQ_MASK) << SEQ_SHIFT;
	cb->tail = t;
	cb->commit_pos = base_seq << OFF_BITS;
	cb->head = base_seq << OFF_BITS;
	cb->before_stamp = cb->write_stamp = 0;
}

static int map_slots(struct tk_ring *ring, uint32_t n, uint8_t **mem, size_t *len,
		     struct rb_slot **slots)
{
	uint64_t bytes = (uint64_t)n * ring->page_size;
	void *m;

	if (bytes > SIZE_MAX / 2)
		return -ENOMEM;
	*slots = calloc(n, sizeof(**slots));
	if (!*slots)
		return -ENOMEM;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED) {
		free(*slots);
		*slots = NULL;
		return -ENOMEM;
	}
	*mem = m;
	*len = bytes;
	for (uint32_t i = 0; i < n; i++)
		(*slots)[i].mem = *mem + (size_t)i * ring->page_size;
	return 0;
}

/* Free what a buffer owns (the descriptor is part of ring->cbs). */
static void release_buffer(struct cpu_buffer *cb)
{
	if (cb->mem)
		munmap(cb->mem, cb->mem_len);
	free(cb->slots);
	free(cb->rpage);
	pthread_mutex_destroy(&cb->lock);
}

/* The descriptor is zeroed; its lock is initialised even on failure. */
static int init_buffer(struct tk_ring *ring, struct cpu_buffer *cb, uint32_t n)
{
	pthread_mutex_init(&cb->lock, NULL);
	cb->ring = ring;
	cb->cap = ring->cap;
	cb->nr_slots = n;
	cb->rpage = calloc(1, ring->page_size);
	if (!cb->rpage || map_slots(ring, n, &cb->mem, &cb->mem_len, &cb->slots))
		return -ENOMEM;
	init_slots(cb, 0);
	return 0;
}

TK_API struct tk_ring *tk_ring_new(const struct tk_ring_opts *user)
{
	struct tk_ring_opts o = {0};
	struct tk_ring *ring;
	uint32_t n;

	if (user)
		o = *user;
	if (!o.page_size)
		o.page_size = 4096;
	if (!o.size)
		o.size = 1 << 20;
	if (o.page_size < 256 || o.page_size > 65536 || (o.page_size & (o.page_size - 1)) ||
	    o.mode > TK_RING_PRODUCER_CONSUMER || o.layout > TK_RING_PER_CPU ||
	    o.clock > TK_RING_CLOCK_CUSTOM || (o.clock == TK_RING_CLOCK_CUSTOM && !o.clock_fn) ||
	    o.size > (1ULL << 40) || o.nr_buffers > 65536)
		return tk_fail_null(EINVAL, "ring: bad options");
	if (o.clock == TK_RING_CLOCK_DEFAULT)
		o.clock = have_invariant_tsc() ? TK_RING_CLOCK_TSC : TK_RING_CLOCK_MONOTONIC;
#if !defined(__x86_64__)
	if (o.clock == TK_RING_CLOCK_TSC)
		return tk_fail_null(ENOTSUP, "ring: no TSC on this architecture");
#endif
	if (!o.nr_buffers) {
		long c = sysconf(_SC_NPROCESSORS_CONF);

		o.nr_buffers = o.layout == TK_RING_PER_CPU ? (uint32_t)(c > 0 ? c : 1) : 64;
	}
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		goto nomem;
	ring->id = __atomic_add_fetch(&g_ring_id, 1, __ATOMIC_RELAXED);
	ring->mode = o.mode;
	ring->layout = o.layout;
	ring->clock = o.clock;
	ring->gate = o.clock == TK_RING_CLOCK_TSC ? 0 : GATE_SLOW_CLOCK;
	ring->clock_fn = o.clock_fn;
	ring->clock_ctx = o.clock_ctx;
	ring->page_size = o.page_size;
	if (tk_page_format_init(&ring->fmt, o.page_size, sizeof(long),
				__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)) {
		free(ring);
		errno = EINVAL;
		return NULL;
	}
	ring->hdr = ring->fmt.data_offset;
	ring->cap = o.page_size - ring->hdr;
	/* Room for a time extend and a length word, as the kernel's BUF_MAX_DATA_SIZE. */
	ring->max_payload = ring->cap - 16;
	if (ring->clock == TK_RING_CLOCK_TSC) {
		pthread_once(&g_tsc_once, calibrate_tsc);
		ring->tsc_mult = g_tsc_mult;
		ring->tsc_shift = g_tsc_shift;
	}
	ring->nr_cpus = (int)o.nr_buffers;
	ring->owners = calloc(o.nr_buffers, sizeof(*ring->owners));
	if (!ring->owners || posix_memalign((void **)&ring->cbs, _Alignof(struct cpu_buffer),
					    o.nr_buffers * sizeof(*ring->cbs))) {
		ring->cbs = NULL;
		goto nomem;
	}
	memset(ring->cbs, 0, o.nr_buffers * sizeof(*ring->cbs));
	n = pages_for(ring, o.size);
	if (!n) {
		tk_ring_free(ring);
		return tk_fail_null(EINVAL, "ring: size %llu needs too many pages",
				    (unsigned long long)o.size);
	}
	for (uint32_t i = 0; i < o.nr_buffers; i++) {
		ring->nr_inited = i + 1;
		if (init_buffer(ring, &ring->cbs[i], n))
			goto nomem;
	}
	/* Lets control calls use the cheap expedited membarrier. */
	syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
	return ring;
nomem:
	tk_ring_free(ring);
	return tk_fail_null(ENOMEM, "ring: out of memory");
}

TK_API void tk_ring_free(struct tk_ring *ring)
{
	if (!ring)
		return;
	for (uint32_t i = 0; ring->cbs && i < ring->nr_inited; i++)
		release_buffer(&ring->cbs[i]);
	free(ring->cbs);
	free(ring->owners);
	free(ring);
}

TK_API int tk_ring_cpus(const struct tk_ring *ring)
{
	return ring->nr_cpus;
}

TK_API void tk_ring_page_format(const struct tk_ring *ring, struct tk_page_format *fmt)
{
	*fmt = ring->fmt;
}

static struct cpu_buffer *get_cb(struct tk_ring *ring, int cpu)
{
	if (cpu < 0 || cpu >= ring->nr_cpus)
		return NULL;
	return &ring->cbs[cpu];
}

TK_API int64_t tk_ring_size(const struct tk_ring *ring, int cpu)
{
	struct cpu_buffer *cb = get_cb((struct tk_ring *)ring, cpu);

	if (!cb)
		return -EINVAL;
	return (int64_t)cb->nr_slots * ring->page_size;
}

/* ------------------------------------------------------------ control */

static void membarrier_all(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

/* True when the calling thread is @cb's writer (PER_THREAD rings only). */
static bool own_buffer(const struct cpu_buffer *cb)
{
	const struct tk_ring *ring = cb->ring;

	return tls_slot == ((ring->id << 20) | (uint64_t)(cb - ring->cbs));
}

/* How long a control call waits for a writer to leave its event. */
#define QUIESCE_WAIT_NS 1000000000ULL

/*
 * Stop the writers of @n buffers and wait until none is inside an event.
 * After the disable and the membarrier every writer has either published
 * nest > 0, which we wait on, or will see the disable and refuse its
 * event; a writer that loaded its buffer before the disable therefore
 * cannot touch the buffer's contents once we saw nest == 0 (the race of
 * the first swap_cpu, which only refused a writer it saw mid-event).
 * Writers never block inside an event, so the wait is as short as their
 * scheduling allows; it gives up after QUIESCE_WAIT_NS (a writer stopped
 * in a debugger, or a PER_CPU caller holding an event) and at once when
 * the caller itself holds an event on one of the buffers.
 */
static int quiesce(struct cpu_buffer **cbs, int n)
{
	uint64_t t0 = 0;

	for (int i = 0; i < n; i++)
		__atomic_add_fetch(&cbs[i]->record_disabled, 1, __ATOMIC_SEQ_CST);
	membarrier_all();
	for (int i = 0, spins = 0; i < n; i++) {
		if (!__atomic_load_n(&cbs[i]->nest, __ATOMIC_SEQ_CST))
			continue;
		if (own_buffer(cbs[i]))
			goto busy;
		if (++spins < 100) {
			sched_yield();
		} else {
			struct timespec nap = {0, 50000};

			if (!t0)
				t0 = mono_ns();
			else if (mono_ns() - t0 > QUIESCE_WAIT_NS)
				goto busy;
			nanosleep(&nap, NULL);
		}
		i--; /* look at this buffer again */
	}
	return 0;
busy:
	for (int j = 0; j < n; j++)
		__atomic_sub_fetch(&cbs[j]->record_disabled, 1, __ATOMIC_RELEASE);
	return -EBUSY;
}

/*
 * Publish everything reserved in a quiesced buffer: the events of a
 * handler that came in just before a refused outermost writer saw the
 * disable (enter_refused() leaves them to us).
 */
static void settle_commit(struct cpu_buffer *cb)
{
	struct rb_slot *tp = RD(cb->tail);
	uint64_t off = RD(tp->word) & OFF_MASK;

	if (off > cb->cap)
		off = RD(tp->end);
	__atomic_store_n(&cb->commit_pos, (RD(tp->seq) << OFF_BITS) | off, __ATOMIC_RELEASE);
}

static void unquiesce(struct cpu_buffer **cbs, int n)
{
	for (int i = 0; i < n; i++)
		__atomic_sub_fetch(&cbs[i]->record_disabled, 1, __ATOMIC_RELEASE);
}

static void reset_reader(struct cpu_buffer *cb)
{
	cb->r_valid = cb->r_peeked = false;
	cb->r_lost = 0;
	cb->r_seq = UINT64_MAX;
	cb->r_off = 0;
}

TK_API int tk_ring_reset_cpu(struct tk_ring *ring, int cpu)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);
	int r;

	if (!cb)
		return tk_fail(EINVAL, "ring: no buffer %d", cpu);
	r = quiesce(&cb, 1);
	if (r)
		return tk_fail(EBUSY, "ring: buffer %d: a writer is inside an event", cpu);
	pthread_mutex_lock(&cb->lock);
	init_slots(cb, (RD(cb->tail)->seq) + 1);
	cb->committed = cb->overrun = cb->commit_overrun = cb->dropped = 0;
	cb->read = 0;
	cb->r_last_overrun = 0;
	reset_reader(cb);
	pthread_mutex_unlock(&cb->lock);
	unquiesce(&cb, 1);
	return 0;
}

TK_API int tk_ring_reset(struct tk_ring *ring)
{
	int ret = 0;

	for (int i = 0; i < ring->nr_cpus; i++) {
		int r = tk_ring_reset_cpu(ring, i);

		if (r && !ret)
			ret = r;
	}
	return ret;
}

static int resize_one(struct tk_ring *ring, struct cpu_buffer *cb, uint32_t n)
{
	struct rb_slot *slots;
	uint8_t *mem;
	size_t len;
	int r;

	if (n == cb->nr_slots)
		return 0;
	r = map_slots(ring, n, &mem, &len, &slots);
	if (r)
		return tk_fail(ENOMEM, "ring: out of memory");
	r = quiesce(&cb, 1);
	if (r) {
		munmap(mem, len);
		free(slots);
		return tk_fail(EBUSY, "ring: a writer is inside an event");
	}
	pthread_mutex_lock(&cb->lock);
	settle_commit(cb);
	uint64_t tseq = cb->tail->seq, hw = cb->head, hs = hw >> OFF_BITS;
	uint64_t first = hs;

	/* Pages that do not fit any more are lost like overwritten ones. */
	if (tseq - hs >= n)
		first = tseq - n + 1;
	for (uint64_t s = hs; s < first; s++) {
		struct rb_slot *o = &cb->slots[s % cb->nr_slots];
		uint64_t ent = (o->word >> ENT_SHIFT) & ENT_MASK;
		uint64_t k = s == hs ? (hw & HEAD_K_MASK) : 0;

		cb->overrun += ent > k ? ent - k : 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		slots[i].word = SEQ_MASK << SEQ_SHIFT;
		slots[i].seq = UINT64_MAX;
	}
	for (uint64_t s = first; s <= tseq; s++) {
		struct rb_slot *o = &cb->slots[s % cb->nr_slots], *d = &slots[s % n];

		memcpy(d->mem, o->mem, ring->page_size);
		d->word = o->word;
		d->seq = o->seq;
		d->end = o->end;
	}
	if (first != hs)
		cb->head = first << OFF_BITS;
	munmap(cb->mem, cb->mem_len);
	free(cb->slots);
	cb->mem = mem;
	cb->mem_len = len;
	cb->slots = slots;
	cb->nr_slots = n;
	cb->tail = &slots[tseq % n];
	pthread_mutex_unlock(&cb->lock);
	unquiesce(&cb, 1);
	return 0;
}

TK_API int tk_ring_resize(struct tk_ring *ring, uint64_t size, int cpu)
{
	uint32_t n;
	int r;

	if (size > (1ULL << 40) || (cpu != TK_RING_ALL_CPUS && !get_cb(ring, cpu)))
		return tk_fail(EINVAL, "ring: bad resize arguments");
	n = pages_for(ring, size);
	if (!n)
		return tk_fail(EINVAL, "ring: size %llu needs too many pages",
			       (unsigned long long)size);
	for (int i = 0; i < ring->nr_cpus; i++) {
		if (cpu != TK_RING_ALL_CPUS && i != cpu)
			continue;
		r = resize_one(ring, &ring->cbs[i], n);
		if (r)
			return r;
	}
	return 0;
}

/*
 * Exchange everything but the identity of two quiesced buffers (both
 * reader locks held): the pages, the writer's position and stamps, the
 * counters and the consume() state. The descriptors stay where they are,
 * in their ring and with their writer thread, so a writer that still
 * holds a pointer to its buffer writes to the right ring.
 */
#define SWAP_WORD(x, y, f)                                                                         \
	do {                                                                                       \
		__typeof__((x)->f) t_ = RD((x)->f);                                                \
		WR((x)->f, RD((y)->f));                                                            \
		WR((y)->f, t_);                                                                    \
	} while (0)
#define SWAP_PLAIN(x, y, f)                                                                        \
	do {                                                                                       \
		__typeof__((x)->f) t_ = (x)->f;                                                    \
		(x)->f = (y)->f;                                                                   \
		(y)->f = t_;                                                                       \
	} while (0)

static void swap_contents(struct cpu_buffer *x, struct cpu_buffer *y)
{
	SWAP_WORD(x, y, tail);
	SWAP_WORD(x, y, before_stamp);
	SWAP_WORD(x, y, write_stamp);
	SWAP_WORD(x, y, slots);
	SWAP_WORD(x, y, nr_slots);
	SWAP_WORD(x, y, committed);
	SWAP_WORD(x, y, overrun);
	SWAP_WORD(x, y, commit_overrun);
	SWAP_WORD(x, y, dropped);
	SWAP_WORD(x, y, commit_pos);
	SWAP_WORD(x, y, head);
	SWAP_WORD(x, y, read);
	SWAP_WORD(x, y, mem);
	SWAP_WORD(x, y, mem_len);
	SWAP_PLAIN(x, y, r_seq);
	SWAP_PLAIN(x, y, r_off);
	SWAP_PLAIN(x, y, r_ts);
	SWAP_PLAIN(x, y, r_last_overrun);
	SWAP_PLAIN(x, y, rpage);
	SWAP_PLAIN(x, y, rit);
	SWAP_PLAIN(x, y, rit_before);
	SWAP_PLAIN(x, y, rrec);
	SWAP_PLAIN(x, y, r_valid);
	SWAP_PLAIN(x, y, r_peeked);
	SWAP_PLAIN(x, y, r_lost);
	__atomic_add_fetch(&x->gen, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&y->gen, 1, __ATOMIC_RELEASE);
}

TK_API int tk_ring_swap_cpu(struct tk_ring *a, struct tk_ring *b, int cpu)
{
	struct cpu_buffer *cbs[2];
	int r;

	if (cpu < 0 || cpu >= a->nr_cpus || cpu >= b->nr_cpus || a == b)
		return tk_fail(EINVAL, "ring: bad swap arguments");
	cbs[0] = get_cb(a, cpu);
	cbs[1] = get_cb(b, cpu);
	if (a->page_size != b->page_size || a->clock != b->clock ||
	    cbs[0]->nr_slots != cbs[1]->nr_slots || a->nr_cpus != b->nr_cpus)
		return tk_fail(EINVAL, "ring: swap between rings of different geometry or clock");
	if ((RD(a->gate) & GATE_DISABLED_MASK) || (RD(b->gate) & GATE_DISABLED_MASK) ||
	    RD(cbs[0]->record_disabled) || RD(cbs[1]->record_disabled))
		return tk_fail(EAGAIN, "ring: swap while recording is disabled");
	r = quiesce(cbs, 2);
	if (r)
		return tk_fail(EBUSY, "ring: swap: a writer stayed inside an event");
	/* Lock order by address so that two swaps cannot deadlock. */
	struct cpu_buffer *l1 = cbs[0] < cbs[1] ? cbs[0] : cbs[1];
	struct cpu_buffer *l2 = cbs[0] < cbs[1] ? cbs[1] : cbs[0];

	pthread_mutex_lock(&l1->lock);
	pthread_mutex_lock(&l2->lock);
	settle_commit(cbs[0]);
	settle_commit(cbs[1]);
	swap_contents(cbs[0], cbs[1]);
	pthread_mutex_unlock(&l2->lock);
	pthread_mutex_unlock(&l1->lock);
	unquiesce(cbs, 2);
	return 0;
}

TK_API void tk_ring_record_disable(struct tk_ring *ring)
{
	__atomic_add_fetch(&ring->gate, 1, __ATOMIC_SEQ_CST);
}

TK_API void tk_ring_record_enable(struct tk_ring *ring)
{
	__atomic_sub_fetch(&ring->gate, 1, __ATOMIC_RELEASE);
}

TK_API void tk_ring_record_disable_cpu(struct tk_ring *ring, int cpu)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);

	if (cb)
		__atomic_add_fetch(&cb->record_disabled, 1, __ATOMIC_SEQ_CST);
}

TK_API void tk_ring_record_enable_cpu(struct tk_ring *ring, int cpu)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);

	if (cb)
		__atomic_sub_fetch(&cb->record_disabled, 1, __ATOMIC_RELEASE);
}

TK_API bool tk_ring_record_is_on(const struct tk_ring *ring)
{
	return (RD(ring->gate) & GATE_DISABLED_MASK) == 0;
}

/* ------------------------------------------------------------ readers */

static void put_commit(const struct tk_ring *ring, uint8_t *page, uint32_t size, uint64_t lost)
{
	uint32_t c = size;
	uint32_t room = ring->cap - size;

	if (lost) {
		c |= 1U << 31;
		if (room >= sizeof(long)) {
			c |= 1U << 30;
			if (sizeof(long) == 8) {
				uint64_t v = lost;

				memcpy(page + ring->hdr + size, &v, 8);
			} else {
				uint32_t v = lost > UINT32_MAX ? UINT32_MAX : (uint32_t)lost;

				memcpy(page + ring->hdr + size, &v, 4);
			}
		}
	}
	if (sizeof(long) == 8) {
		/* The kernel adds bit 31 as a negative int: sign-extend. */
		uint64_t v = (uint64_t)(int64_t)(int32_t)c;

		memcpy(page + 8, &v, 8);
	} else {
		memcpy(page + 8, &c, 4);
	}
}

/*
 * Copy the unread part of the head page into @out and take it from the
 * ring. Returns the data bytes, 0 when nothing is there; *nev receives the
 * number of events and *lost the events overwritten since the last take.
 */
static int take_page(struct tk_ring *ring, struct cpu_buffer *cb, uint8_t *out, bool full_only,
		     uint64_t *nev, uint64_t *lost)
{
	for (;;) {
		uint64_t cp = __atomic_load_n(&cb->commit_pos, __ATOMIC_ACQUIRE);
		uint64_t hw = __atomic_load_n(&cb->head, __ATOMIC_ACQUIRE);
		uint64_t cseq = cp >> OFF_BITS, hs = hw >> OFF_BITS, k = hw & HEAD_K_MASK;
		struct rb_slot *s = &cb->slots[hs % cb->nr_slots];
		uint64_t end, ov = RD(cb->overrun);
		bool full = hs < cseq;

		if (cb->r_seq != hs) {
			cb->r_seq = hs;
			cb->r_off = 0;
		}
		end = full ? __atomic_load_n(&s->end, __ATOMIC_RELAXED) : (cp & OFF_MASK);
		if (end > cb->cap)
			end = cb->cap; /* cannot happen; never copy past the page */
		if (cb->r_off >= end) {
			if (!full)
				return 0;
			/* Fully read page still at head (it ended empty): step over it. */
			__atomic_compare_exchange_n(&cb->head, &hw, (hs + 1) << OFF_BITS, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			continue;
		}
		if (full_only && !full)
			return 0;
		__atomic_store_n(&cb->pin, hs + 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&cb->head, __ATOMIC_SEQ_CST) != hw) {
			__atomic_store_n(&cb->pin, 0, __ATOMIC_RELEASE);
			continue;
		}
		uint64_t ts;
		uint32_t size = (uint32_t)(end - cb->r_off);

		if (cb->r_off)
			ts = cb->r_ts;
		else
			memcpy(&ts, s->mem, 8);
		memcpy(out, &ts, 8);
		memcpy(out + ring->hdr, s->mem + ring->hdr + cb->r_off, size);

		/* Count the events and find the running time at the end. */
		struct tk_page_iter it;
		struct tk_page_record rec;
		uint64_t m = 0;

		put_commit(ring, out, size, 0);
		if (tk_page_iter_init(&it, &ring->fmt, out, ring->page_size, NULL) == 0)
			while (tk_page_iter_next(&it, &rec) == 1)
				m++;
		uint64_t nhw = full ? (hs + 1) << OFF_BITS : (hs << OFF_BITS) | (k + m);

		if (!__atomic_compare_exchange_n(&cb->head, &hw, nhw, false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST)) {
			/* The writer overwrote the page meanwhile; it counted the loss. */
			__atomic_store_n(&cb->pin, 0, __ATOMIC_RELEASE);
			continue;
		}
		__atomic_store_n(&cb->pin, 0, __ATOMIC_RELEASE);
		if (full) {
			cb->r_seq = hs + 1;
			cb->r_off = 0;
		} else {
			cb->r_off = end;
			cb->r_ts = it.timestamp;
		}
		*lost = ov - cb->r_last_overrun;
		cb->r_last_overrun = ov;
		put_commit(ring, out, size, *lost);
		memset(out + ring->hdr + size +
			       (*lost && ring->cap - size >= sizeof(long) ? sizeof(long) : 0),
		       0,
		       ring->cap - size -
			       (*lost && ring->cap - size >= sizeof(long) ? sizeof(long) : 0));
		*nev = m;
		return (int)size;
	}
}

/* Hand out what is left of the consume() copy as a page of its own. */
static int leftover_page(struct tk_ring *ring, struct cpu_buffer *cb, uint8_t *out)
{
	struct tk_page_iter *it = cb->r_peeked ? &cb->rit_before : &cb->rit;
	uint32_t size = it->size - it->pos;
	uint64_t n = 0;
	struct tk_page_iter cnt = *it;
	struct tk_page_record rec;

	while (tk_page_iter_next(&cnt, &rec) == 1)
		n++;
	memcpy(out, &it->timestamp, 8);
	memcpy(out + ring->hdr, it->data + it->pos, size);
	memset(out + ring->hdr + size, 0, ring->cap - size);
	put_commit(ring, out, size, cb->r_lost);
	cb->r_valid = cb->r_peeked = false;
	cb->r_lost = 0;
	__atomic_add_fetch(&cb->read, n, __ATOMIC_RELAXED);
	return (int)size;
}

TK_API int tk_ring_read_page(struct tk_ring *ring, int cpu, void *page, size_t len, bool full)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);
	uint64_t nev = 0, lost = 0;
	int r;

	if (!cb || !page || len < ring->page_size)
		return tk_fail(EINVAL, "ring: bad read_page arguments");
	pthread_mutex_lock(&cb->lock);
	if (cb->r_valid && (cb->r_peeked ? cb->rit_before.pos : cb->rit.pos) < cb->rit.size) {
		r = leftover_page(ring, cb, page);
	} else {
		cb->r_valid = false;
		r = take_page(ring, cb, page, full, &nev, &lost);
		if (r > 0)
			__atomic_add_fetch(&cb->read, nev, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&cb->lock);
	return r;
}

static int reader_next(struct tk_ring *ring, struct cpu_buffer *cb, struct tk_page_record *rec,
		       uint64_t *lost, bool advance)
{
	for (;;) {
		if (cb->r_valid) {
			if (!cb->r_peeked) {
				cb->rit_before = cb->rit;
				if (tk_page_iter_next(&cb->rit, &cb->rrec) != 1) {
					cb->r_valid = false;
					continue;
				}
				cb->r_peeked = true;
			}
			*rec = cb->rrec;
			if (lost)
				*lost = cb->r_lost;
			if (advance) {
				cb->r_peeked = false;
				cb->r_lost = 0;
				__atomic_add_fetch(&cb->read, 1, __ATOMIC_RELAXED);
			}
			return 1;
		}
		uint64_t nev, l;
		int r = take_page(ring, cb, cb->rpage, false, &nev, &l);

		if (r <= 0)
			return 0;
		cb->r_lost += l;
		if (tk_page_iter_init(&cb->rit, &ring->fmt, cb->rpage, ring->page_size, NULL))
			return 0;
		cb->r_valid = true;
		cb->r_peeked = false;
	}
}

TK_API int tk_ring_peek(struct tk_ring *ring, int cpu, struct tk_page_record *rec, uint64_t *lost)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);
	int r;

	if (!cb)
		return tk_fail(EINVAL, "ring: no buffer %d", cpu);
	pthread_mutex_lock(&cb->lock);
	r = reader_next(ring, cb, rec, lost, false);
	pthread_mutex_unlock(&cb->lock);
	return r;
}

TK_API int tk_ring_consume(struct tk_ring *ring, int cpu, struct tk_page_record *rec,
			   uint64_t *lost)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);
	int r;

	if (!cb)
		return tk_fail(EINVAL, "ring: no buffer %d", cpu);
	pthread_mutex_lock(&cb->lock);
	r = reader_next(ring, cb, rec, lost, true);
	pthread_mutex_unlock(&cb->lock);
	return r;
}

TK_API bool tk_ring_empty_cpu(struct tk_ring *ring, int cpu)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);
	bool empty;

	if (!cb)
		return true;
	pthread_mutex_lock(&cb->lock);
	if (cb->r_valid && (cb->r_peeked || cb->rit.pos < cb->rit.size)) {
		empty = false;
	} else {
		uint64_t cp = __atomic_load_n(&cb->commit_pos, __ATOMIC_ACQUIRE);
		uint64_t hs = __atomic_load_n(&cb->head, __ATOMIC_ACQUIRE) >> OFF_BITS;
		uint64_t off = cb->r_seq == hs ? cb->r_off : 0;

		empty = hs == (cp >> OFF_BITS) && off >= (cp & OFF_MASK);
	}
	pthread_mutex_unlock(&cb->lock);
	return empty;
}

TK_API bool tk_ring_empty(struct tk_ring *ring)
{
	for (int i = 0; i < ring->nr_cpus; i++)
		if (!tk_ring_empty_cpu(ring, i))
			return false;
	return true;
}

TK_API int tk_ring_stats_cpu(struct tk_ring *ring, int cpu, struct tk_ring_stats *st)
{
	struct cpu_buffer *cb = get_cb(ring, cpu);

	if (!cb)
		return tk_fail(EINVAL, "ring: no buffer %d", cpu);
	memset(st, 0, sizeof(*st));
	/* The lock keeps resize and swap from changing the pages under us. */
	pthread_mutex_lock(&cb->lock);
	st->read = __atomic_load_n(&cb->read, __ATOMIC_ACQUIRE);
	/* Retired pages were added up as the tail left them; add the tail page. */
	struct rb_slot *tp = RD(cb->tail);
	uint64_t tw = RD(tp->word);

	st->committed = RD(cb->committed) + (tw & RETIRED ? 0 : (tw >> ENT_SHIFT) & ENT_MASK);
	st->overrun = RD(cb->overrun);
	st->commit_overrun = RD(cb->commit_overrun);
	st->dropped = RD(cb->dropped);
	st->entries = st->committed - st->overrun - st->read;
	if (st->overrun + st->read > st->committed)
		st->entries = 0;
	uint64_t cp = __atomic_load_n(&cb->commit_pos, __ATOMIC_ACQUIRE);
	uint64_t hs = __atomic_load_n(&cb->head, __ATOMIC_ACQUIRE) >> OFF_BITS;

	st->bytes = ((cp >> OFF_BITS) - hs) * ring->cap + (cp & OFF_MASK);
	pthread_mutex_unlock(&cb->lock);
	return 0;
}

TK_API uint64_t tk_ring_entries_cpu(struct tk_ring *ring, int cpu)
{
	struct tk_ring_stats st;

	return tk_ring_stats_cpu(ring, cpu, &st) ? 0 : st.entries;
}

TK_API uint64_t tk_ring_overrun_cpu(struct tk_ring *ring, int cpu)
{
	struct tk_ring_stats st;

	return tk_ring_stats_cpu(ring, cpu, &st) ? 0 : st.overrun;
}

TK_API uint64_t tk_ring_entries(struct tk_ring *ring)
{
	uint64_t n = 0;

	for (int i = 0; i < ring->nr_cpus; i++)
		n += tk_ring_entries_cpu(ring, i);
	return n;
}

TK_API uint64_t tk_ring_overruns(struct tk_ring *ring)
{
	uint64_t n = 0;

	for (int i = 0; i < ring->nr_cpus; i++)
		n += tk_ring_overrun_cpu(ring, i);
	return n;
}

/* ------------------------------------------------------------ iterators */

struct tk_ring_iter {
	struct tk_ring *ring;
	int cpu;
	uint64_t seq;  /* page being walked */
	uint64_t done; /* events of that page already returned */
	uint64_t gen;  /* the buffer's contents generation at the last reset */
	bool loaded, peeked, missed;
	uint8_t *page;
	struct tk_page_iter it;
	struct tk_page_record rec;
};

TK_API struct tk_ring_iter *tk_ring_read_start(struct tk_ring *ring, int cpu)
{
	struct tk_ring_iter *iter;

	if (!get_cb(ring, cpu))
		return tk_fail_null(EINVAL, "ring: no buffer %d", cpu);
	iter = calloc(1, sizeof(*iter));
	if (iter)
		iter->page = malloc(ring->page_size);
	if (!iter || !iter->page) {
		if (iter)
			free(iter);
		return tk_fail_null(ENOMEM, "ring: out of memory");
	}
	iter->ring = ring;
	iter->cpu = cpu;
	tk_ring_iter_reset(iter);
	return iter;
}

TK_API void tk_ring_read_finish(struct tk_ring_iter *iter)
{
	if (!iter)
		return;
	free(iter->page);
	free(iter);
}

TK_API void tk_ring_iter_reset(struct tk_ring_iter *iter)
{
	struct cpu_buffer *cb = get_cb(iter->ring, iter->cpu);

	pthread_mutex_lock(&cb->lock);
	iter->seq = __atomic_load_n(&cb->head, __ATOMIC_ACQUIRE) >> OFF_BITS;
	iter->gen = __atomic_load_n(&cb->gen, __ATOMIC_ACQUIRE);
	iter->done = 0;
	iter->loaded = iter->peeked = iter->missed = false;
	pthread_mutex_unlock(&cb->lock);
}

/*
 * Copy page iter->seq (under the pin protocol) and skip the events already
 * returned or consumed. Returns true when a page with events is loaded.
 */
static bool iter_load(struct tk_ring_iter *iter, struct cpu_buffer *cb)
{
	struct tk_ring *ring = iter->ring;

	for (;;) {
		uint64_t cp = __atomic_load_n(&cb->commit_pos, __ATOMIC_ACQUIRE);
		uint64_t hw = __atomic_load_n(&cb->head, __ATOMIC_SEQ_CST);
		uint64_t cseq = cp >> OFF_BITS, hs = hw >> OFF_BITS;

		if (iter->seq < hs) {
			iter->missed = true;
			iter->seq = hs;
			iter->done = 0;
		}
		if (iter->seq > cseq)
			return false;
		struct rb_slot *s = &cb->slots[iter->seq % cb->nr_slots];
		uint64_t end = iter->seq < cseq ? __atomic_load_n(&s->end, __ATOMIC_RELAXED)
						: (cp & OFF_MASK);

		if (end > cb->cap)
			end = cb->cap;
		if (!end) {
			/* Nothing committed there yet: its timestamp may be in flight. */
			if (iter->seq == cseq)
				return false;
			iter->seq++;
			iter->done = 0;
			continue;
		}
		__atomic_store_n(&cb->pin, iter->seq + 1, __ATOMIC_SEQ_CST);
		if ((__atomic_load_n(&cb->head, __ATOMIC_SEQ_CST) >> OFF_BITS) > iter->seq) {
			__atomic_store_n(&cb->pin, 0, __ATOMIC_RELEASE);
			continue;
		}
		memcpy(iter->page, s->mem, 8);
		memcpy(iter->page + ring->hdr, s->mem + ring->hdr, end);
		__atomic_store_n(&cb->pin, 0, __ATOMIC_RELEASE);
		put_commit(ring, iter->page, (uint32_t)end, 0);
		if (tk_page_iter_init(&iter->it, &ring->fmt, iter->page, ring->page_size, NULL))
			return false;

		/* Events of the head page already consumed are not shown. */
		uint64_t hk = iter->seq == hs ? (hw & HEAD_K_MASK) : 0;
		uint64_t skip = iter->done > hk ? iter->done : hk, n = 0;
		struct tk_page_record rec;
		int r = 1;

		while (n < skip && (r = tk_page_iter_next(&iter->it, &rec)) == 1)
			n++;
		iter->done = n;
		if (r == 1) {
			struct tk_page_iter save = iter->it;

			if (tk_page_iter_next(&iter->it, &iter->rec) == 1) {
				iter->loaded = iter->peeked = true;
				return true;
			}
			iter->it = save;
		}
		if (iter->seq == cseq)
			return false;
		iter->seq++;
		iter->done = 0;
	}
}

static int iter_next(struct tk_ring_iter *iter, struct tk_page_record *rec, bool advance)
{
	struct cpu_buffer *cb = get_cb(iter->ring, iter->cpu);
	int ret = 0;

	pthread_mutex_lock(&cb->lock);
	/* swap_cpu() gave the buffer other contents: start over on them. */
	if (__atomic_load_n(&cb->gen, __ATOMIC_ACQUIRE) != iter->gen) {
		iter->gen = __atomic_load_n(&cb->gen, __ATOMIC_ACQUIRE);
		iter->seq = __atomic_load_n(&cb->head, __ATOMIC_ACQUIRE) >> OFF_BITS;
		iter->done = 0;
		iter->loaded = iter->peeked = false;
		iter->missed = true;
	}
	/* The copy is consistent but the writer went past it: skip, as the kernel. */
	if (iter->loaded &&
	    (__atomic_load_n(&cb->head, __ATOMIC_ACQUIRE) >> OFF_BITS) > iter->seq) {
		iter->loaded = iter->peeked = false;
		iter->missed = true;
	}
	if (!iter->peeked && iter->loaded) {
		if (tk_page_iter_next(&iter->it, &iter->rec) == 1)
			iter->peeked = true;
		else
			iter->loaded = false;
	}
	if (!iter->peeked)
		iter_load(iter, cb);
	if (iter->peeked) {
		if (rec)
			*rec = iter->rec;
		if (advance) {
			iter->peeked = false;
			iter->done++;
		}
		ret = 1;
	}
	pthread_mutex_unlock(&cb->lock);
	return ret;
}

TK_API int tk_ring_iter_peek(struct tk_ring_iter *iter, struct tk_page_record *rec)
{
	return iter_next(iter, rec, false);
}

TK_API int tk_ring_iter_read(struct tk_ring_iter *iter, struct tk_page_record *rec)
{
	return iter_next(iter, rec, true);
}

TK_API bool tk_ring_iter_empty(struct tk_ring_iter *iter)
{
	return iter_next(iter, NULL, false) == 0;
}

TK_API bool tk_ring_iter_dropped(const struct tk_ring_iter *iter)
{
	return iter->missed;
}
