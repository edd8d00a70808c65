// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * alloc-fail: the wrappers behind alloc-fail.h.
 *
 * The linker's --wrap turns every reference to malloc in the wrapped
 * objects into one to __wrap_malloc, and __real_malloc into the real one;
 * references from shared libraries (libc itself, libzstd, zlib, cmocka)
 * are untouched. So this file sees exactly the allocations tracekit's own
 * code asks for, which are the ones whose failure paths it has to get
 * right.
 *
 * Live allocations are kept in an open-addressed set of pointers rather
 * than a bare counter: free() is also called on memory the wrappers never
 * saw (glibc hands out memory of its own, e.g. through vasprintf below),
 * and a counter would drift on those. The set has 2^18 slots; the tests
 * hold a few hundred pointers at most, and the table is rebuilt when
 * deleted slots pile up so probing stays short.
 *
 * Single-threaded by design: the OOM tests run one operation at a time.
 */
#include "alloc-fail.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
ZSTD_CCtx *__real_ZSTD_createCCtx(void);
ZSTD_DCtx *__real_ZSTD_createDCtx(void);
size_t __real_ZSTD_freeCCtx(ZSTD_CCtx *c);
size_t __real_ZSTD_freeDCtx(ZSTD_DCtx *c);
int __real_deflateInit_(z_streamp s, int level, const char *version, int stream_size);
int __real_inflateInit_(z_streamp s, const char *version, int stream_size);
int __real_deflateEnd(z_streamp s);
int __real_inflateEnd(z_streamp s);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_asprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ZSTD_CCtx *__wrap_ZSTD_createCCtx(void);
ZSTD_DCtx *__wrap_ZSTD_createDCtx(void);
size_t __wrap_ZSTD_freeCCtx(ZSTD_CCtx *c);
size_t __wrap_ZSTD_freeDCtx(ZSTD_DCtx *c);
int __wrap_deflateInit_(z_streamp s, int level, const char *version, int stream_size);
int __wrap_inflateInit_(z_streamp s, const char *version, int stream_size);
int __wrap_deflateEnd(z_streamp s);
int __wrap_inflateEnd(z_streamp s);

/* ------------------------------------------------------------ injection */

static bool armed, sticky_mode, fired;
static unsigned long fail_at, calls;
static const void *fired_site;

void alloc_fail_arm(unsigned long n, bool sticky)
{
	armed = n != 0;
	sticky_mode = sticky;
	fail_at = n;
	fired = false;
	fired_site = NULL;
	calls = 0;
}

void alloc_fail_disarm(void)
{
	armed = false;
}

bool alloc_fail_fired(void)
{
	return fired;
}

unsigned long alloc_fail_calls(void)
{
	return calls;
}

const void *alloc_fail_site(void)
{
	return fired_site;
}

static bool fail_here(const void *site)
{
	if (!armed)
		return false;
	calls++;
	if (calls == fail_at || (sticky_mode && calls > fail_at)) {
		if (!fired)
			fired_site = site;
		fired = true;
		return true;
	}
	return false;
}

/* The caller of the wrapper is the allocation site a failure report names. */
#define should_fail() fail_here(__builtin_return_address(0))

/* ------------------------------------------------------- the live set */

#define SET_BITS   18
#define SET_SIZE   (1u << SET_BITS)
#define SLOT_EMPTY ((uintptr_t)0)
#define SLOT_GONE  ((uintptr_t)1)

static uintptr_t set_a[SET_SIZE], set_b[SET_SIZE];
static uintptr_t *set = set_a;
static size_t set_live, set_gone;

static size_t slot_of(uintptr_t key)
{
	/* Fibonacci hashing: malloc'ed addresses share their low bits. */
	return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - SET_BITS));
}

static void set_rebuild(void)
{
	uintptr_t *fresh = set == set_a ? set_b : set_a;

	memset(fresh, 0, sizeof(set_a));
	for (size_t i = 0; i < SET_SIZE; i++) {
		size_t j;

		if (set[i] == SLOT_EMPTY || set[i] == SLOT_GONE)
			continue;
		for (j = slot_of(set[i]); fresh[j] != SLOT_EMPTY; j = (j + 1) & (SET_SIZE - 1))
			;
		fresh[j] = set[i];
	}
	set = fresh;
	set_gone = 0;
}

static void track(const void *p)
{
	uintptr_t key = (uintptr_t)p;
	size_t i;

	if (!p)
		return;
	if (set_live + set_gone + 1 > SET_SIZE / 2) {
		set_rebuild();
		if (set_live + 1 > SET_SIZE / 2) {
			/* A test that holds 131072 blocks is not one of ours. */
			fputs("alloc-fail: live set full\n", stderr);
			abort();
		}
	}
	for (i = slot_of(key); set[i] != SLOT_EMPTY && set[i] != SLOT_GONE;
	     i = (i + 1) & (SET_SIZE - 1))
		;
	if (set[i] == SLOT_GONE)
		set_gone--;
	set[i] = key;
	set_live++;
}

static void untrack(const void *p)
{
	uintptr_t key = (uintptr_t)p;

	if (!p)
		return;
	for (size_t i = slot_of(key); set[i] != SLOT_EMPTY; i = (i + 1) & (SET_SIZE - 1)) {
		if (set[i] == key) {
			set[i] = SLOT_GONE;
			set_live--;
			set_gone++;
			return;
		}
	}
}

size_t alloc_fail_live(void)
{
	return set_live;
}

/* ------------------------------------------------------------ wrappers */

void *__wrap_malloc(size_t size)
{
	void *p;

	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_malloc(size);
	track(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
	void *p;

	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_calloc(n, size);
	track(p);
	return p;
}

void *__wrap_realloc(void *p, size_t size)
{
	void *q;

	/* A failed realloc leaves the old block alone, as the real one does. */
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	q = __real_realloc(p, size);
	if (q || size == 0)
		untrack(p);
	track(q);
	return q;
}

void __wrap_free(void *p)
{
	untrack(p);
	__real_free(p);
}

char *__wrap_strdup(const char *s)
{
	char *p;

	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_strdup(s);
	track(p);
	return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
	char *p;

	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_strndup(s, n);
	track(p);
	return p;
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (should_fail()) {
		errno = ENOMEM;
		return -1;
	}
	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n >= 0)
		track(*out);
	return n;
}

ZSTD_CCtx *__wrap_ZSTD_createCCtx(void)
{
	ZSTD_CCtx *c;

	if (should_fail())
		return NULL;
	c = __real_ZSTD_createCCtx();
	track(c);
	return c;
}

ZSTD_DCtx *__wrap_ZSTD_createDCtx(void)
{
	ZSTD_DCtx *c;

	if (should_fail())
		return NULL;
	c = __real_ZSTD_createDCtx();
	track(c);
	return c;
}

size_t __wrap_ZSTD_freeCCtx(ZSTD_CCtx *c)
{
	untrack(c);
	return __real_ZSTD_freeCCtx(c);
}

size_t __wrap_ZSTD_freeDCtx(ZSTD_DCtx *c)
{
	untrack(c);
	return __real_ZSTD_freeDCtx(c);
}

/*
 * A zlib stream is remembered by its internal state, which End frees. The
 * zlib wrappers are visible: libelf (linked once the symbolizer is) calls
 * zlib too, and the linker binds a shared library's reference to a
 * wrapped symbol only to a wrapper it can see.
 */
#pragma GCC visibility push(default)
int __wrap_deflateInit_(z_streamp s, int level, const char *version, int stream_size)
{
	int r;

	if (should_fail())
		return Z_MEM_ERROR;
	r = __real_deflateInit_(s, level, version, stream_size);
	if (r == Z_OK)
		track(s->state);
	return r;
}

int __wrap_inflateInit_(z_streamp s, const char *version, int stream_size)
{
	int r;

	if (should_fail())
		return Z_MEM_ERROR;
	r = __real_inflateInit_(s, version, stream_size);
	if (r == Z_OK)
		track(s->state);
	return r;
}

int __wrap_deflateEnd(z_streamp s)
{
	untrack(s->state);
	return __real_deflateEnd(s);
}

int __wrap_inflateEnd(z_streamp s)
{
	untrack(s->state);
	return __real_inflateEnd(s);
}
#pragma GCC visibility pop
