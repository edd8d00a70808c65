// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bigbuf: large buffers on transparent huge pages (see bigbuf.h).
 *
 * Every buffer starts with a 64-byte header holding how it was made, so
 * that tk_big_free() needs only the pointer: the mapping's base and length
 * for mapped ones (the data then starts 64 bytes into the first huge page),
 * zero for malloc()ed ones. A mapped buffer that grows (tk_big_grow())
 * hands its huge pages to the larger mapping with mremap() instead of
 * copying them, so a queue that doubles its array is not copied and
 * faulted in again at each doubling.
 */
#include "bigbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_SIZE   (2u << 20)
#define MAP_MIN	    (1u << 20)
#define HEADER_SIZE 64u

struct header {
	void *base; /* the mapping, or NULL for malloc() */
	size_t len; /* the mapping's length */
};

void *tk_big_alloc(size_t len)
{
	struct header *h;
	uint8_t *base, *start;
	size_t want, map_len;

	if (len > SIZE_MAX - 2 * HUGE_SIZE - HEADER_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	if (len + HEADER_SIZE < MAP_MIN) {
		h = malloc(len + HEADER_SIZE);
		if (!h)
			return NULL;
		h->base = NULL;
		h->len = 0;
		return (uint8_t *)h + HEADER_SIZE;
	}
	want = (len + HEADER_SIZE + HUGE_SIZE - 1) & ~(size_t)(HUGE_SIZE - 1);
	/* One huge page more than needed, so that an aligned start fits. */
	map_len = want + HUGE_SIZE;
	base = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	start = (uint8_t *)(((uintptr_t)base + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
	/* Advice only: without THP the buffer still works, with 4 KiB pages. */
	madvise(start, want, MADV_HUGEPAGE);
	h = (struct header *)start;
	h->base = base;
	h->len = map_len;
	return start + HEADER_SIZE;
}

void *tk_big_zalloc(size_t len)
{
	uint8_t *p = tk_big_alloc(len);
	struct header *h;

	if (!p)
		return NULL;
	/* A mapping is zero until written; only a malloc()ed buffer needs clearing. */
	h = (struct header *)(p - HEADER_SIZE);
	if (!h->base)
		memset(p, 0, len);
	return p;
}

/*
 * The huge pages holding the header and @keep bytes move to the new
 * mapping's aligned start with MREMAP_FIXED, which replaces the fresh
 * pages there: both starts are 2 MiB-aligned, so the kernel moves whole
 * huge pages as they are. The new header, overwritten by the move, is
 * written again.
 */
void *tk_big_grow(void *p, size_t keep, size_t new_len)
{
	struct header *h = (struct header *)((uint8_t *)p - HEADER_SIZE), oh = *h, nh;
	size_t move;
	uint8_t *np = tk_big_alloc(new_len);
	void *to;

	if (!np)
		return NULL;
	to = np - HEADER_SIZE;
	nh = *(struct header *)to;
	/*
	 * Whole huge pages (the old mapping holds them: its length past the
	 * start is a multiple of them), so that the new mapping splits where
	 * a huge page may still start; a split inside one left its rest to
	 * 4 KiB faults, ~500 more a move.
	 */
	move = (HEADER_SIZE + keep + HUGE_SIZE - 1) & ~(size_t)(HUGE_SIZE - 1);
	if (!oh.base || !nh.base || !keep ||
	    mremap(h, move, move, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED)
		memcpy(np, p, keep);
	else
		*(struct header *)to = nh;
	/* The old header may have moved: freed from the copy (a hole munmap() takes whole). */
	if (oh.base)
		munmap(oh.base, oh.len);
	else
		free(h);
	return np;
}

void tk_big_free(void *p)
{
	struct header *h;

	if (!p)
		return;
	h = (struct header *)((uint8_t *)p - HEADER_SIZE);
	if (h->base)
		munmap(h->base, h->len);
	else
		free(h);
}
