/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * alloc-fail: a fault-injecting allocator for the out-of-memory tests.
 *
 * A test binary linked with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,
 *   --wrap=strdup,--wrap=strndup,--wrap=asprintf,
 *   --wrap=ZSTD_createCCtx,--wrap=ZSTD_createDCtx,--wrap=ZSTD_freeCCtx,
 *   --wrap=ZSTD_freeDCtx,--wrap=deflateInit_,--wrap=inflateInit_,
 *   --wrap=deflateEnd,--wrap=inflateEnd
 * routes every such call made by its own objects and by the static
 * libtracekit.a through alloc-fail.c. The codec entry points are wrapped
 * because creating a zstd context or a zlib stream is an allocation the
 * library must survive as well; the allocations libzstd and zlib make
 * inside themselves are not seen (they live in shared libraries).
 *
 * Armed at N, the Nth counted call from then on fails the way the real
 * one would on exhausted memory (NULL and errno ENOMEM, -1 for asprintf,
 * Z_MEM_ERROR for the zlib initialisers). Every allocation that succeeds
 * is remembered until it is freed, so a test can check that an operation
 * gave back everything it took, whether or not the injection fired.
 */
#ifndef TK_TEST_ALLOC_FAIL_H
#define TK_TEST_ALLOC_FAIL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Fail the @n-th counted call from now (1 = the next one); the ones after
 * it succeed again unless @sticky, in which case every call from the @n-th
 * on fails. @n == 0 disarms.
 */
void alloc_fail_arm(unsigned long n, bool sticky);
void alloc_fail_disarm(void);

/* Whether an armed failure has been injected since the last arm. */
bool alloc_fail_fired(void);

/* Counted calls since the last arm (how many points the operation has). */
unsigned long alloc_fail_calls(void);

/*
 * Return address of the first failed call since the last arm (inside the
 * code that allocated; addr2line -e test-oom turns it into a line), or NULL.
 */
const void *alloc_fail_site(void);

/* Allocations made through the wrappers and not yet freed. */
size_t alloc_fail_live(void);

#endif
