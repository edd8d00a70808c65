/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * merge-heap: the k-way merge by timestamp that every reader of per-CPU
 * streams shares (report, perf.data report, convert).
 *
 * A stream embeds struct tk_merge_key as its FIRST member and the heap holds
 * pointers to those keys, so a key pointer is also the stream pointer and
 * taking the top costs no index scaling. Keys order by (ts, order): order is
 * the stream's rank (buffer index, then CPU index), so ties resolve as
 * trace-cmd's linear scan with "<" resolves them.
 *
 * After the top stream advanced, tk_merge_heap_fix_top() restores the heap.
 * Runs of records from one CPU are common, so it moves nothing while the top
 * still precedes its children, and with two streams left a reorder is one
 * swap made by masks from a single compare: which CPU holds the next record
 * changes at random, a branch on it would be mispredicted half the time.
 *
 * Header-only: the calls sit in the hottest loops and must inline.
 */
#ifndef TRACEKIT_INTERNAL_MERGE_HEAP_H
#define TRACEKIT_INTERNAL_MERGE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_merge_key {
	uint64_t ts;
	uint32_t order;
};

/* Without a branch, for the reason above. */
static inline bool tk_merge_before(const struct tk_merge_key *x, const struct tk_merge_key *y)
{
	return (x->ts < y->ts) | ((x->ts == y->ts) & (x->order < y->order));
}

static inline void tk_merge_swap(struct tk_merge_key **heap, size_t i, size_t j)
{
	struct tk_merge_key *t = heap[i];

	heap[i] = heap[j];
	heap[j] = t;
}

static inline void tk_merge_heap_down(struct tk_merge_key **heap, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && tk_merge_before(heap[l], heap[m]))
			m = l;
		if (l + 1 < n && tk_merge_before(heap[l + 1], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		tk_merge_swap(heap, i, m);
		i = m;
	}
}

/* Add heap[n - 1], the stream just appended. */
static inline void tk_merge_heap_up(struct tk_merge_key **heap, size_t n)
{
	size_t i = n - 1;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!tk_merge_before(heap[i], heap[p]))
			return;
		tk_merge_swap(heap, i, p);
		i = p;
	}
}

/* The sift of tk_merge_heap_fix_top() when the top must move: a call, to keep the loops small. */
static __attribute__((noinline, unused)) void tk_merge_heap_sift_top(struct tk_merge_key **heap,
								     size_t n)
{
	tk_merge_heap_down(heap, n, 0);
}

/*
 * The top stream's key grew (it moved to its next record): restore the order. Always inlined:
 * as a call it cost the merge a third of its own instructions (the call, six of them, for a
 * test or a swap of ten).
 */
static inline __attribute__((always_inline)) void tk_merge_heap_fix_top(struct tk_merge_key **heap,
									size_t n)
{
	struct tk_merge_key *s = heap[0];

	if (n == 2) {
		struct tk_merge_key *o = heap[1];
#if defined(__SIZEOF_INT128__)
		/*
		 * (ts, order) as one 128-bit number: a compare and a borrow,
		 * where tk_merge_before()'s "|" of two compares became two
		 * branches. The swap is a mask, for the same reason.
		 */
		unsigned __int128 ko = (unsigned __int128)o->ts << 64 | o->order;
		unsigned __int128 ks = (unsigned __int128)s->ts << 64 | s->order;
		uintptr_t m = ((uintptr_t)s ^ (uintptr_t)o) & ((uintptr_t)0 - (uintptr_t)(ko < ks));
		uintptr_t top = (uintptr_t)s ^ m, next = (uintptr_t)o ^ m;

		/* Two scalar stores: GCC's vector form of the pair took five instructions more. */
		__asm__("" : "+r"(top), "+r"(next));
		heap[0] = (struct tk_merge_key *)top;
		heap[1] = (struct tk_merge_key *)next;
#else
		bool swap = tk_merge_before(o, s);

		heap[0] = swap ? o : s;
		heap[1] = swap ? s : o;
#endif
	} else if (n > 2 && (tk_merge_before(heap[1], s) || tk_merge_before(heap[2], s))) {
		tk_merge_heap_sift_top(heap, n);
	}
}

/* The top stream ended: drop it. Return: the new count. */
static inline size_t tk_merge_heap_pop(struct tk_merge_key **heap, size_t n)
{
	heap[0] = heap[--n];
	tk_merge_heap_down(heap, n, 0);
	return n;
}

#endif
