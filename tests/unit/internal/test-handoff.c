// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of tk_cores_free() (internal/handoff.c), the default thread count
 * of both reports: never more than asked, never fewer than one, never more
 * than the CPUs the affinity mask allows (a taskset to one CPU gives one
 * thread, whatever the machine's load), and one for one asked. The load
 * part (/proc/loadavg's runnable count) changes from run to run, so only
 * its bounds are checked here; bench-families --threads times its effect.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sched.h>

#include "tk-test.h"
#include "handoff.h"

static void test_bounds(void **state)
{
	cpu_set_t set;
	unsigned int cpus;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	cpus = (unsigned int)CPU_COUNT(&set);
	assert_int_equal(tk_cores_free(0), 1);
	assert_int_equal(tk_cores_free(1), 1);
	for (unsigned int want = 2; want <= 8; want++) {
		unsigned int n = tk_cores_free(want);

		assert_true(n >= 1);
		assert_true(n <= want);
		assert_true(n <= cpus);
	}
}

/* One CPU allowed: one thread, as taskset -c 0 gives report. */
static void test_one_cpu(void **state)
{
	cpu_set_t saved, one;
	int cpu = -1;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
		if (CPU_ISSET(i, &saved))
			cpu = i;
	assert_true(cpu >= 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(tk_cores_free(4), 1);
	assert_int_equal(tk_cores_free(2), 1);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_one_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
