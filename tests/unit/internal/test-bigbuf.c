// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of internal/bigbuf.h's tk_big_grow(): the bytes kept come through
 * a grow whichever way it goes (malloc()ed to malloc()ed, malloc()ed to
 * mapped, mapped to mapped, where the pages move), the new buffer can be
 * written to its end, and several grows in a row (the perf.data report's
 * queue doubling) keep every byte.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tk-test.h"
#include "bigbuf.h"

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

static void check(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != (uint8_t)((i * 2654435761u) >> 13 ^ seed))
			fail_msg("byte %zu of %zu changed", i, n);
	}
}

static void grow_keeps(size_t from, size_t keep, size_t to)
{
	uint8_t *p = tk_big_alloc(from), *q;

	assert_non_null(p);
	fill(p, keep, (uint32_t)from);
	q = tk_big_grow(p, keep, to);
	assert_non_null(q);
	check(q, keep, (uint32_t)from);
	/* The rest is there to write, up to the last byte. */
	memset(q + keep, 0xa5, to - keep);
	assert_int_equal(q[to - 1], 0xa5);
	tk_big_free(q);
}

static void test_grow_each_kind(void **state)
{
	(void)state;
	grow_keeps(4096, 4096, 8192);		    /* malloc() to malloc() */
	grow_keeps(512 << 10, 500 << 10, 4u << 20); /* malloc() to a mapping */
	grow_keeps(2u << 20, 2u << 20, 4u << 20);   /* mapped: a whole huge page and more */
	grow_keeps(3u << 20, 3000000, 7u << 20);    /* mapped: part of a huge page */
	grow_keeps(4u << 20, 0, 8u << 20);	    /* nothing kept */
}

static void test_grow_doubling(void **state)
{
	size_t cap = 4096, used = 0;
	uint8_t *p = tk_big_alloc(cap);

	(void)state;
	assert_non_null(p);
	while (cap < (32u << 20)) {
		fill(p + used, cap - used, 7);
		/* fill() is by index from its start: check each part as it was written. */
		used = cap;
		p = tk_big_grow(p, used, cap * 2);
		assert_non_null(p);
		cap *= 2;
	}
	{
		size_t part = 4096;

		check(p, part, 7);
		for (size_t at = part; at < used; at *= 2)
			check(p + at, at, 7);
	}
	tk_big_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_each_kind),
		cmocka_unit_test(test_grow_doubling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
