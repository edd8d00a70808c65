// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of internal/idtable.h, the pid/tid tables of the perf.data report
 * and the samples reader: an entry added once is found again through every
 * doubling, new entries are zeroed but for their id, negative ids are never
 * stored, and the table stays at most half full.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tk-test.h"
#include "idtable.h"

struct entry {
	int32_t id;
	uint32_t value;
	char name[20];
};

static void test_add_find_grow(void **state)
{
	struct tk_idtable t = {0};
	struct entry *e;
	bool added;

	(void)state;
	assert_null(tk_idtable_find(&t, sizeof(*e), 1));
	/* Ids that collide in the low bits and ids spread wide, through 6 doublings. */
	for (int32_t id = 0; id < 1000; id++) {
		int32_t key = id % 2 ? id * 4096 : id;

		e = tk_idtable_get(&t, sizeof(*e), key, 16, &added);
		assert_non_null(e);
		assert_true(added);
		assert_int_equal(e->id, key);
		assert_int_equal(e->value, 0);
		assert_int_equal(e->name[0], 0);
		e->value = (uint32_t)key ^ 0x5a5a;
		assert_true(t.n * 2 <= t.cap);
	}
	assert_int_equal(t.n, 1000);
	assert_int_equal(t.cap, 2048);
	for (int32_t id = 0; id < 1000; id++) {
		int32_t key = id % 2 ? id * 4096 : id;

		e = tk_idtable_find(&t, sizeof(*e), key);
		assert_non_null(e);
		assert_int_equal(e->value, (uint32_t)key ^ 0x5a5a);
		assert_ptr_equal(tk_idtable_get(&t, sizeof(*e), key, 16, &added), e);
		assert_false(added);
	}
	assert_null(tk_idtable_find(&t, sizeof(*e), 4096 * 2));
	assert_int_equal(t.n, 1000);
	free(t.slots);
}

static void test_negative_ids(void **state)
{
	struct tk_idtable t = {0};
	bool added = true;

	(void)state;
	assert_null(tk_idtable_get(&t, sizeof(struct entry), -1, 16, &added));
	assert_false(added);
	assert_int_equal(t.cap, 0);
	assert_non_null(tk_idtable_get(&t, sizeof(struct entry), 7, 16, NULL));
	assert_null(tk_idtable_find(&t, sizeof(struct entry), -1));
	assert_null(tk_idtable_find(&t, sizeof(struct entry), INT32_MIN));
	free(t.slots);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_find_grow),
		cmocka_unit_test(test_negative_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
