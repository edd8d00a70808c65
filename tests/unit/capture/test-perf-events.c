// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests for perf-events.c: perf record's -e lists and groups, the
 * --call-graph values and the number lists of -C, -p and -t, as perf
 * spells them. No perf_event_open: the parsers only cut text.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tracekit/perfrecord.h>

#include "tk-test.h"

static void test_lists(void **state)
{
	struct tk_perfrecord_event *ev = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tk_perfrecord_parse_events("page-faults,task-clock", &ev, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ev[0].spec, "page-faults");
	assert_string_equal(ev[1].spec, "task-clock");
	assert_int_equal(ev[0].group, 0);
	assert_int_equal(ev[1].group, 0);
	/* A second -e appends; tracepoints and globs pass through whole. */
	assert_int_equal(tk_perfrecord_parse_events("sched:sched_switch,irq:*", &ev, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(ev[2].spec, "sched:sched_switch");
	assert_string_equal(ev[3].spec, "irq:*");
	tk_perfrecord_events_free(ev, n);
}

static void test_groups(void **state)
{
	struct tk_perfrecord_event *ev = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tk_perfrecord_parse_events("{cycles,instructions},cpu-clock", &ev, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ev[0].spec, "cycles");
	assert_string_equal(ev[1].spec, "instructions");
	assert_int_equal(ev[0].group, 1);
	assert_int_equal(ev[1].group, 1);
	assert_int_equal(ev[2].group, 0);
	/* The group's modifiers go to every member; a member's own ones are kept. */
	assert_int_equal(tk_perfrecord_parse_events("{cpu-clock:k,sched:sched_switch}:u", &ev, &n),
			 0);
	assert_int_equal(n, 5);
	assert_string_equal(ev[3].spec, "cpu-clock:ku");
	assert_string_equal(ev[4].spec, "sched:sched_switch:u");
	assert_int_equal(ev[3].group, 2);
	assert_int_equal(ev[4].group, 2);
	tk_perfrecord_events_free(ev, n);
}

static void test_bad_lists(void **state)
{
	static const char *const bad[] = {
		"",	   ",cpu-clock", "cpu-clock,", "a,,b", "{a,b", "a,b}",
		"{a,{b}}", "{a}x",	 "{a}:",       "{a,}", "{}",
	};
	struct tk_perfrecord_event *ev = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tk_perfrecord_parse_events("cpu-clock", &ev, &n), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_errno(tk_perfrecord_parse_events(bad[i], &ev, &n), EINVAL);
		/* A refused list leaves what was there. */
		assert_int_equal(n, 1);
		assert_string_equal(ev[0].spec, "cpu-clock");
	}
	tk_perfrecord_events_free(ev, n);
	tk_perfrecord_events_free(NULL, 0);
}

static void test_callgraph(void **state)
{
	enum tk_perfrecord_callgraph m;
	uint32_t size;

	(void)state;
	assert_int_equal(tk_perfrecord_parse_callgraph("fp", &m, &size), 0);
	assert_int_equal(m, TK_PERFRECORD_CALLGRAPH_FP);
	assert_int_equal(tk_perfrecord_parse_callgraph("lbr", &m, &size), 0);
	assert_int_equal(m, TK_PERFRECORD_CALLGRAPH_LBR);
	assert_int_equal(tk_perfrecord_parse_callgraph("dwarf", &m, &size), 0);
	assert_int_equal(m, TK_PERFRECORD_CALLGRAPH_DWARF);
	assert_int_equal(size, 0);
	/* perf rounds the dump size up to whole words. */
	assert_int_equal(tk_perfrecord_parse_callgraph("dwarf,4093", &m, &size), 0);
	assert_int_equal(size, 4096);
	assert_int_equal(tk_perfrecord_parse_callgraph("dwarf,65528", &m, &size), 0);
	assert_int_equal(size, 65528);
	assert_errno(tk_perfrecord_parse_callgraph("dwarf,65536", &m, &size), EINVAL);
	assert_errno(tk_perfrecord_parse_callgraph("dwarf,0", &m, &size), EINVAL);
	assert_errno(tk_perfrecord_parse_callgraph("dwarf,", &m, &size), EINVAL);
	assert_errno(tk_perfrecord_parse_callgraph("fp,8", &m, &size), EINVAL);
	assert_errno(tk_perfrecord_parse_callgraph("frame", &m, &size), EINVAL);
}

static void test_number_lists(void **state)
{
	static const char *const bad[] = {"", "x", "1,", ",1", "3-1", "-1", "1--2", "1,,2",
					  "0-70000",
					  /* 65536 numbers in all at the most, however split */
					  "0-65535,7", "0-40000,0-40000"};
	int32_t *v = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tk_perfrecord_parse_list("0-2,5", &v, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[2], 2);
	assert_int_equal(v[3], 5);
	free(v);
	assert_int_equal(tk_perfrecord_parse_list("1234", &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0], 1234);
	free(v);
	assert_int_equal(tk_perfrecord_parse_list("7,0-32767,0-32766", &v, &n), 0);
	assert_int_equal(n, 65536);
	assert_int_equal(v[0], 7);
	assert_int_equal(v[32768], 32767);
	assert_int_equal(v[65535], 32766);
	free(v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_errno(tk_perfrecord_parse_list(bad[i], &v, &n), EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists),	     cmocka_unit_test(test_groups),
		cmocka_unit_test(test_bad_lists),    cmocka_unit_test(test_callgraph),
		cmocka_unit_test(test_number_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
