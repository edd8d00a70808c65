/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Buffers of megabytes (a kernel's kallsyms, event formats, symbol
 * tables) that the library fills once and reads. Page faults, not the
 * copying, were most of a small report's start-up on the reference VM
 * (a fault costs ~5 us there; a 5 MB buffer is 1300 of them): a buffer
 * of 1 MiB or more is mapped 2 MiB-aligned and offered to transparent
 * huge pages (MADV_HUGEPAGE), so it faults in a handful of 2 MiB pages
 * where THP is in "madvise" or "always" mode. Smaller ones use malloc(),
 * which keeps them inside the out-of-memory tests' reach.
 */
#ifndef TRACEKIT_INTERNAL_BIGBUF_H
#define TRACEKIT_INTERNAL_BIGBUF_H

#include <stddef.h>

/* @len bytes (not zeroed), or NULL with errno ENOMEM. Free with tk_big_free(). */
void *tk_big_alloc(size_t len);
/* tk_big_alloc() of @len bytes that read as zero (a fresh mapping already does). */
void *tk_big_zalloc(size_t len);
/* NULL is accepted. */
void tk_big_free(void *p);
/*
 * A buffer of @new_len bytes (more than the @keep < @new_len of @p it
 * holds) that starts with @p's first @keep bytes; @p is freed. Between
 * two mapped buffers the pages move (mremap(), no copy and no faulting
 * them in again). NULL with errno ENOMEM leaves @p as it was.
 */
void *tk_big_grow(void *p, size_t keep, size_t new_len);

#endif
