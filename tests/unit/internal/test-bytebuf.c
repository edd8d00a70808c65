// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the growable byte buffer (internal/bytebuf.c): numbers in both
 * byte orders, reserve and patch, growth across many puts, steal, and the
 * checked size arithmetic: a put whose size would wrap fails with -ENOMEM,
 * stays failed, and leaves the bytes already there intact. (Failing
 * allocations are covered by test-oom's tracedata loop.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tk-test.h"
#include "bytebuf.h"

static void test_orders(void **state)
{
	struct tk_bytebuf le, be;

	(void)state;
	tk_bytebuf_init(&le, false);
	tk_bytebuf_init(&be, true);
	tk_bytebuf_put_u8(&le, 0xab);
	tk_bytebuf_put_u16(&le, 0x0102);
	tk_bytebuf_put_u32(&le, 0x03040506);
	tk_bytebuf_put_u64(&le, 0x0708090a0b0c0d0eull);
	tk_bytebuf_put_u8(&be, 0xab);
	tk_bytebuf_put_u16(&be, 0x0102);
	tk_bytebuf_put_u32(&be, 0x03040506);
	tk_bytebuf_put_u64(&be, 0x0708090a0b0c0d0eull);
	assert_int_equal(tk_bytebuf_error(&le), 0);
	assert_int_equal(le.len, 15);
	assert_memory_equal(le.data, "\xab\x02\x01\x06\x05\x04\x03\x0e\x0d\x0c\x0b\x0a\x09\x08\x07",
			    15);
	assert_memory_equal(be.data, "\xab\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e",
			    15);
	tk_bytebuf_release(&le);
	tk_bytebuf_release(&be);
	tk_bytebuf_release(NULL);
}

static void test_patch_and_grow(void **state)
{
	struct tk_bytebuf b;
	size_t at, n;
	uint8_t *p;

	(void)state;
	tk_bytebuf_init(&b, false);
	at = tk_bytebuf_skip(&b, 4);
	tk_bytebuf_put_cstr(&b, "ab");
	tk_bytebuf_patch_u32(&b, at, 3);
	assert_memory_equal(b.data, "\3\0\0\0ab\0", 7);
	/* Out of range patches are ignored (they happen only after an error). */
	tk_bytebuf_patch_u32(&b, 5, 0xffffffff);
	tk_bytebuf_patch_u64(&b, SIZE_MAX - 2, 1);
	assert_memory_equal(b.data, "\3\0\0\0ab\0", 7);
	/* Many small puts grow the buffer without losing a byte. */
	for (uint32_t i = 0; i < 100000; i++)
		tk_bytebuf_put_u32(&b, i);
	assert_int_equal(tk_bytebuf_error(&b), 0);
	assert_int_equal(b.len, 7 + 400000);
	for (uint32_t i = 0; i < 100000; i += 997) {
		uint32_t v;

		memcpy(&v, b.data + 7 + 4 * i, 4);
		assert_int_equal(v, i);
	}
	tk_bytebuf_reset(&b);
	assert_int_equal(b.len, 0);
	tk_bytebuf_put_zeros(&b, 3);
	p = tk_bytebuf_steal(&b, &n);
	assert_non_null(p);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "\0\0\0", 3);
	assert_null(b.data);
	free(p);
	/* An empty buffer steals as a real (1-byte) allocation. */
	p = tk_bytebuf_steal(&b, &n);
	assert_non_null(p);
	assert_int_equal(n, 0);
	free(p);
}

static void test_overflow(void **state)
{
	struct tk_bytebuf b;
	size_t len;

	(void)state;
	tk_bytebuf_init(&b, false);
	tk_bytebuf_put(&b, "abc", 3);
	/* A size that cannot be added to the length fails before allocating. */
	assert_int_equal(tk_bytebuf_reserve(&b, SIZE_MAX - 1), -ENOMEM);
	tk_bytebuf_put(&b, "d", 1);
	tk_bytebuf_put_u64(&b, 1);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "abc", 3);
	assert_errno(tk_bytebuf_error(&b), ENOMEM);
	assert_true(strstr(tk_errmsg(), "memory") != NULL);
	assert_null(tk_bytebuf_steal(&b, &len));
	assert_null(b.data);
	/* The same with a length already near the top. */
	tk_bytebuf_init(&b, false);
	b.len = SIZE_MAX - 2;
	tk_bytebuf_put_u32(&b, 1);
	assert_int_equal(b.err, -ENOMEM);
	b.len = 0;
	tk_bytebuf_reset(&b);
	tk_bytebuf_put_u32(&b, 7);
	assert_int_equal(tk_bytebuf_error(&b), 0);
	tk_bytebuf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orders),
		cmocka_unit_test(test_patch_and_grow),
		cmocka_unit_test(test_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
