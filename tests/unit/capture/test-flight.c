// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the flight-recorder module against the live kernel.
 *
 * Every test that touches tracefs works in a private instance
 * ("tk-unit-fl-<pid>-<n>", under the tk-unit- prefix the integration
 * tests know to ignore), never the default "tracekit" instance or the top
 * buffer: unit tests run in parallel with each other and with other
 * programs that use tracefs. The default instance and the trace-cmd oracle
 * are tests/integration/test-flight.sh's.
 *
 * Option checks run everywhere; the rest needs root and tracefs and prints
 * "SKIP: reason" without them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/dat.h>
#include <tracekit/flight.h>
#include <tracekit/tracefs.h>

#include "tk-test.h"

#define assert_ok(ret)                                                                             \
	do {                                                                                       \
		long long r_ = (ret);                                                              \
		if (r_ < 0)                                                                        \
			fail_msg("%s failed: %lld: %s", #ret, r_, tk_errmsg());                    \
	} while (0)

#define assert_has(haystack, needle)                                                               \
	do {                                                                                       \
		if (!strstr((haystack), (needle)))                                                 \
			fail_msg("'%s' not found in '%s'", (needle), (haystack));                  \
	} while (0)

static int serial;

static void need_tracefs(void)
{
	if (geteuid() != 0) {
		printf("SKIP: flight tests need root\n");
		skip();
	}
	if (!tk_tracefs_root()) {
		printf("SKIP: no tracefs: %s\n", tk_errmsg());
		skip();
	}
}

static void fresh_name(char *name, size_t cap)
{
	need_tracefs();
	snprintf(name, cap, "tk-unit-fl-%d-%d", (int)getpid(), ++serial);
}

/* The text of instances/@name/@rel, without its final newline. */
static char *read_inst(const char *name, const char *rel)
{
	struct tk_tracefs *tfs = tk_tracefs_open(name, 0);
	char *text;
	size_t len;

	if (!tfs)
		fail_msg("open %s: %s", name, tk_errmsg());
	if (tk_tracefs_read_file(tfs, rel, &text, &len) < 0)
		fail_msg("read %s/%s: %s", name, rel, tk_errmsg());
	tk_tracefs_close(tfs);
	if (len && text[len - 1] == '\n')
		text[len - 1] = '\0';
	return text;
}

static bool instance_exists(const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/instances/%s", tk_tracefs_root(), name);
	return stat(path, &st) == 0;
}

static void test_bad_options(void **state)
{
	struct tk_record_event ev = {.spec = "sched"};
	TK_OPTS(tk_flight_opts, both, .instance = "x", .top = true, .events = &ev,
		.event_count = 1);
	TK_OPTS(tk_flight_opts, nothing, .instance = "x");
	TK_OPTS(tk_flight_extract_opts, no_output, .instance = "x");
	char *text = (char *)1;

	(void)state;
	assert_errno(tk_flight_start(&both), EINVAL);
	assert_errno(tk_flight_start(&nothing), EINVAL);
	assert_errno(tk_flight_start(NULL), EINVAL);
	assert_errno(tk_flight_extract(&no_output, NULL, NULL), EINVAL);
	assert_errno(tk_flight_stop("x", true), EINVAL);
	assert_errno(tk_flight_stat("x", true, &text), EINVAL);
	assert_null(text);
	assert_errno(tk_flight_reset("x", true), EINVAL);
}

/* Every command on a buffer that was never started: -ENOENT naming it, nothing made. */
static void test_never_started(void **state)
{
	char name[64], path[] = "/tmp/tk-unit-flight-XXXXXX", out[600];
	TK_OPTS(tk_flight_extract_opts, xo, .instance = name, .output = out);
	char *text;

	(void)state;
	fresh_name(name, sizeof(name));
	assert_non_null(mkdtemp(path));
	snprintf(out, sizeof(out), "%s/none.dat", path);
	assert_errno(tk_flight_extract(&xo, NULL, NULL), ENOENT);
	assert_has(tk_errmsg(), name);
	assert_int_equal(access(out, F_OK), -1);
	assert_errno(tk_flight_stop(name, false), ENOENT);
	assert_errno(tk_flight_restart(name, false), ENOENT);
	assert_errno(tk_flight_show(name, false, -1, STDOUT_FILENO), ENOENT);
	assert_errno(tk_flight_stat(name, false, &text), ENOENT);
	assert_errno(tk_flight_reset(name, false), ENOENT);
	assert_false(instance_exists(name));
	rmdir(path);
}

/* A refused event takes the instance start made with it. */
static void test_start_failure_cleans_up(void **state)
{
	struct tk_record_event ev = {.spec = "no_such_system_tk:nothing"};
	char name[64];
	TK_OPTS(tk_flight_opts, o, .instance = name, .events = &ev, .event_count = 1);

	(void)state;
	fresh_name(name, sizeof(name));
	assert_true(tk_flight_start(&o) < 0);
	assert_false(instance_exists(name));
}

static void test_round_trip(void **state)
{
	struct tk_record_event ev = {.spec = "sched:sched_switch", .filter = "prev_pid != 0"};
	char name[64], dir[] = "/tmp/tk-unit-flight-XXXXXX", out[600], show[600];
	int self = (int)getpid();
	TK_OPTS(tk_flight_opts, o, .instance = name, .events = &ev, .event_count = 1,
		.buffer_kb = 64, .pids = &self, .pid_count = 1, .follow_fork = true);
	TK_OPTS(tk_flight_extract_opts, xo, .instance = name, .output = out);
	struct tk_record_cpu_stats *st = NULL;
	struct tk_tracefs *tfs;
	struct tk_dat *dat;
	char *text, *shown;
	uint32_t n = 0;
	size_t len;
	int fd;

	(void)state;
	fresh_name(name, sizeof(name));
	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/flight.dat", dir);
	snprintf(show, sizeof(show), "%s/show.txt", dir);

	assert_ok(tk_flight_start(&o));
	text = read_inst(name, "tracing_on");
	assert_string_equal(text, "1");
	free(text);
	text = read_inst(name, "options/overwrite");
	assert_string_equal(text, "1");
	free(text);
	/* A second start on the same name is refused, the first untouched. */
	assert_errno(tk_flight_start(&o), EEXIST);
	assert_true(instance_exists(name));

	assert_ok(tk_flight_stat(name, false, &text));
	assert_has(text, "Instance: ");
	assert_has(text, name);
	assert_has(text, "\nEvents:\n Individual events:\n    sched\n        sched_switch\n");
	assert_has(text, "\nFilters:\n  sched:sched_switch \"prev_pid != 0\"\n");
	assert_has(text, "\nBuffer size in kilobytes (per cpu):\n");
	assert_has(text, "\nFiltered event PIDs:\n");
	assert_has(text, "\nTracing is enabled\n");
	free(text);

	tfs = tk_tracefs_open(name, 0);
	assert_non_null(tfs);
	assert_ok(tk_tracefs_write_file(tfs, "trace_marker", "tk-unit-flight-mark"));
	tk_tracefs_close(tfs);

	/* show: the kernel's text, read without consuming. */
	fd = open(show, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_ok(tk_flight_show(name, false, -1, fd));
	close(fd);
	assert_ok(tk_tracefs_read_file(NULL, show, &shown, &len));
	assert_has(shown, "tk-unit-flight-mark");
	free(shown);
	assert_errno(tk_flight_show(name, false, 99999, STDOUT_FILENO), ENOENT);

	assert_ok(tk_flight_extract(&xo, &st, &n));
	assert_true(n >= 1);
	{
		uint64_t events = 0;

		for (uint32_t i = 0; i < n; i++)
			events += st[i].events;
		assert_true(events >= 1);
	}
	free(st);
	dat = tk_dat_open(out);
	if (!dat)
		fail_msg("open %s: %s", out, tk_errmsg());
	assert_int_equal(tk_dat_get_info(dat)->version, 7);
	tk_dat_close(dat);
	/* A running recorder goes on after an extract. */
	text = read_inst(name, "tracing_on");
	assert_string_equal(text, "1");
	free(text);

	assert_ok(tk_flight_stop(name, false));
	text = read_inst(name, "tracing_on");
	assert_string_equal(text, "0");
	free(text);
	assert_ok(tk_flight_stat(name, false, &text));
	assert_has(text, "\nTracing is disabled\n");
	free(text);
	/* A stopped one stays stopped. */
	unlink(out);
	assert_ok(tk_flight_extract(&xo, NULL, NULL));
	text = read_inst(name, "tracing_on");
	assert_string_equal(text, "0");
	free(text);
	assert_ok(tk_flight_restart(name, false));
	text = read_inst(name, "tracing_on");
	assert_string_equal(text, "1");
	free(text);

	assert_ok(tk_flight_reset(name, false));
	assert_false(instance_exists(name));
	assert_errno(tk_flight_reset(name, false), ENOENT);
	unlink(out);
	unlink(show);
	rmdir(dir);
}

/* Remove whatever a failed test left. */
static int remove_leftover(void **state)
{
	char name[64];

	(void)state;
	if (!serial || geteuid() != 0)
		return 0;
	snprintf(name, sizeof(name), "tk-unit-fl-%d-%d", (int)getpid(), serial);
	if (instance_exists(name))
		tk_flight_reset(name, false);
	return 0;
}

#define TEST(fn) cmocka_unit_test_teardown(fn, remove_leftover)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_bad_options),
		TEST(test_never_started),
		TEST(test_start_failure_cleans_up),
		TEST(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
