// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of tk_cores_allowed() (internal/handoff.c), the default thread
 * count of both reports: never more than asked, never fewer than one,
 * never more than the CPUs the affinity mask allows (a taskset to one CPU
 * gives one thread), and one for one asked; without a cgroup quota, as
 * many as asked up to the CPUs allowed.
 *
 * The job ring's take-back: a job logged for a worker that never takes it
 * (a worker with no CPU) is printed by the merge itself when the merge
 * would wait for it, in job order, and the run ends.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tk-test.h"
#include "handoff.h"

/* Whether a cgroup CPU quota applies (cpu.max or cfs_quota_us other than unlimited). */
static bool have_quota(void)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");

	if (f) {
		bool limited = fgets(buf, sizeof(buf), f) && strncmp(buf, "max", 3) != 0;

		fclose(f);
		return limited;
	}
	f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] && buf[0] != '-';
}

static void test_bounds(void **state)
{
	cpu_set_t set;
	unsigned int cpus;
	bool quota = have_quota();

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	cpus = (unsigned int)CPU_COUNT(&set);
	assert_int_equal(tk_cores_allowed(0), 1);
	assert_int_equal(tk_cores_allowed(1), 1);
	for (unsigned int want = 2; want <= 8; want++) {
		unsigned int n = tk_cores_allowed(want);

		assert_true(n >= 1);
		assert_true(n <= want);
		assert_true(n <= cpus);
		/* The load is not read: without a quota, the CPUs allowed decide alone. */
		if (!quota)
			assert_int_equal(n, want < cpus ? want : cpus);
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
	assert_int_equal(tk_cores_allowed(4), 1);
	assert_int_equal(tk_cores_allowed(2), 1);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

struct taken {
	size_t calls;
	size_t slots[8];
};

/* The merge's printing of a logged job: its slot number as the text. */
static int print_slot(void *arg, size_t slot, struct tk_outbuf *text)
{
	struct taken *t = arg;
	char line[32];
	int n = snprintf(line, sizeof(line), "job in slot %zu\n", slot);

	if (t->calls < 8)
		t->slots[t->calls] = slot;
	t->calls++;
	tk_outbuf_write(text, line, (size_t)n);
	return 0;
}

/*
 * A worker says it is ready and never takes a job: the merge logs two jobs
 * for it, prints a third inline, and at the end takes the two logged ones
 * back (without take-back, tk_jobs_finish() would wait forever).
 */
static void test_take_back(void **state)
{
	struct tk_jobs q;
	struct tk_outbuf out;
	struct taken t = {0};
	int fds[2];
	char buf[256];
	ssize_t n;
	size_t slot;
	bool inl;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(tk_outbuf_init(&out, fds[1], 4096), 0);
	assert_int_equal(tk_jobs_init(&q, 4, 4096), 0);
	q.take_back = print_slot;
	q.take_back_arg = &t;
	tk_jobs_ready(&q);
	for (int k = 0; k < 2; k++) {
		slot = tk_jobs_start(&q, &out, 2, false, &inl);
		assert_false(inl); /* fewer than 2 waiting: logged */
		tk_jobs_hand(&q, slot, false, &out);
	}
	slot = tk_jobs_start(&q, &out, 2, false, &inl);
	assert_true(inl); /* 2 waiting for the one worker: printed inline */
	tk_outbuf_write(&q.text[slot]->out, "inline job\n", 11);
	tk_jobs_hand(&q, slot, true, &out);
	assert_int_equal(t.calls, 0); /* nothing waited yet */
	tk_jobs_finish(&q, &out);
	assert_int_equal(t.calls, 2);
	assert_int_equal(t.slots[0], 0);
	assert_int_equal(t.slots[1], 1);
	assert_int_equal(tk_outbuf_flush(&out), 0);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_string_equal(buf, "job in slot 0\njob in slot 1\ninline job\n");
	close(fds[0]);
	tk_outbuf_release(&out);
	tk_jobs_destroy(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_one_cpu),
		cmocka_unit_test(test_take_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
