// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of perfdata-evname.c: the name of an event whose perf.data does not
 * hold it. The expected strings are what perf script 6.1 printed for files
 * recorded with these events and their EVENT_DESC stripped
 * (tests/data/perf/no-desc-mod-*.data: "task-clock:k", "cpu-clock:uH" for
 * -e cpu-clock:u, "cpu-clock:ppH"), with the attr flags of those files,
 * and perf's rules for the rest: the contexts counted when one is
 * excluded, a p per precise level, then H and G where the guest default
 * is departed from.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <tracekit/perfdata.h>

#include "perfdata-evname.h"

#define EX_USER	  (1ull << 4)
#define EX_KERNEL (1ull << 5)
#define EX_HV	  (1ull << 6)
#define PRECISE1  (1ull << 15)
#define EX_HOST	  (1ull << 19)
#define EX_GUEST  (1ull << 20)

static const char *name_of(uint32_t type, uint64_t config, uint64_t flags, char *buf, size_t n)
{
	struct tk_perfdata_evsel e;

	memset(&e, 0, sizeof(e));
	e.attr.type = type;
	e.attr.config = config;
	e.attr.flags = flags;
	return tk_perfdata_evsel_display_name(&e, buf, n);
}

static void the_file_name_wins(void **state)
{
	struct tk_perfdata_evsel e;
	char buf[64];

	(void)state;
	memset(&e, 0, sizeof(e));
	e.attr.type = 1;
	e.name = "cpu-clock:u";
	assert_ptr_equal(tk_perfdata_evsel_display_name(&e, buf, sizeof(buf)), e.name);
}

static void software_and_hardware_with_modifiers(void **state)
{
	char b[64];

	(void)state;
	/* the flags of each as perf 6.1 wrote them (the golden perf.data files) */
	/* -e task-clock: the guest excluded, perf's default: the plain name */
	assert_string_equal(name_of(1, 1, EX_GUEST, b, sizeof(b)), "task-clock");
	assert_string_equal(name_of(0, 0, EX_GUEST, b, sizeof(b)), "cycles");
	/* -e task-clock:k: user and hv excluded, the guest counted (its default then) */
	assert_string_equal(name_of(1, 1, EX_USER | EX_HV, b, sizeof(b)), "task-clock:k");
	/* -e cpu-clock:u: the guest excluded, against that default, so H */
	assert_string_equal(name_of(1, 0, EX_KERNEL | EX_HV | EX_GUEST, b, sizeof(b)),
			    "cpu-clock:uH");
	/* -e cpu-clock:pp */
	assert_string_equal(name_of(1, 0, 2 * PRECISE1 | EX_GUEST, b, sizeof(b)), "cpu-clock:ppH");
	/* nothing excluded: the guest counted, against the plain default */
	assert_string_equal(name_of(1, 2, 0, b, sizeof(b)), "page-faults:HG");
	/* the host excluded: G alone */
	assert_string_equal(name_of(0, 1, EX_HOST, b, sizeof(b)), "instructions:G");
}

static void unknown_configs(void **state)
{
	char b[64];

	(void)state;
	assert_string_equal(name_of(1, 99, 0, b, sizeof(b)), "unknown-1:99");
	assert_string_equal(name_of(4, 0x1cd, 0, b, sizeof(b)), "unknown-4:461");
	assert_string_equal(name_of(2, 317, 0, b, sizeof(b)), "unknown-2:317");
	/* a short buffer cuts the name, never overruns */
	assert_string_equal(name_of(0, 9, 0, b, 4), "ref");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_file_name_wins),
		cmocka_unit_test(software_and_hardware_with_modifiers),
		cmocka_unit_test(unknown_configs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
