// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the analyses added after sched latency, on the small
 * perf.data of sched-fixture.h (task 100 sleeps at 1000 on cpu 0, is
 * woken at 1500 and runs at 4000; task 200 is preempted at 2000 on cpu 1
 * and back at 2200): the lines sched timehist prints for it, its summary,
 * sched balance's queue on cpu 0, latency --compare of the file with
 * itself, the syscall name tables, and the wake-up hook's pending table
 * under many insertions and removals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>
#include <tracekit/event.h>
#include <tracekit/outbuf.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "analyze/syscall-names.h"
#include "analyze/sched-fixture.h"
#include "tk-tmpdir.h"

/* Run @fn into a file and return its text (static buffer). */
static const char *capture(const char *name, int (*fn)(const char *path, int fd, void *o), void *o,
			   const char *path, int *ret)
{
	static char text[16384];
	char out[512];
	ssize_t n;
	int fd;

	snprintf(out, sizeof(out), "%s/%s", tmpdir, name);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	*ret = fn(path, fd, o);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	return text;
}

static int run_timehist(const char *path, int fd, void *o)
{
	struct tk_timehist_opts *opts = o;

	opts->fd = fd;
	return tk_sched_timehist_run(path, opts);
}

static int run_balance(const char *path, int fd, void *o)
{
	struct tk_balance_opts *opts = o;

	opts->fd = fd;
	return tk_sched_balance_run(path, opts);
}

static int run_compare(const char *path, int fd, void *o)
{
	struct tk_sched_opts *opts = o;

	opts->fd = fd;
	return tk_sched_latency_compare_run(path, path, opts);
}

static void test_timehist_lines(void **state)
{
	struct tk_timehist_opts o = {.flags = TK_TIMEHIST_SUMMARY};
	char path[512];
	const char *t;
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s/th.data", tmpdir);
	sched_fixture_write(path);
	t = capture("th.txt", run_timehist, &o, path, &ret);
	assert_int_equal(ret, 0);
	/* The header is perf's, for a task column of 30. */
	assert_non_null(strstr(t,
			       "           time    cpu  task name                       wait time  "
			       "sch delay   run time\n"));
	/* 100 leaves cpu 0 first: no earlier switch there, so all is 0. */
	assert_non_null(strstr(t, "       0.000001 [0000]  worker[100]                         "
				  "0.000      0.000      0.000 \n"));
	/* The idle task leaves cpu 0 at 4000 after running 3 us since 1000. */
	assert_non_null(strstr(t, "       0.000004 [0000]  <idle>                              "
				  "0.000      0.000      0.003 \n"));
	/* 300 is named :300 (no COMM) and ran 200 ns on cpu 1. */
	assert_non_null(strstr(t, "[0001]  :300[300]  "));
	/* The summary: 4 switches of 3 tasks and the idle one, over 3 us on 4 CPUs. */
	assert_non_null(strstr(t, "\nRuntime summary\n"));
	assert_non_null(strstr(t, "Total number of context switches: 4\n"));
	assert_non_null(strstr(t, "    Total scheduling time (msec):  0.003  (x 4)\n"));
	o.flags = TK_TIMEHIST_JSON | TK_TIMEHIST_PERCENTILES;
	t = capture("th.json", run_timehist, &o, path, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "\"run_ns\": 3000"));
	assert_non_null(strstr(t, "\"distributions\""));
}

static void test_balance_and_compare(void **state)
{
	struct tk_balance_opts b = {.flags = TK_BALANCE_JSON, .interval_ns = 1000};
	struct tk_sched_opts c = {.cpu = -1};
	char path[512];
	const char *t;
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s/bal.data", tmpdir);
	sched_fixture_write(path);
	t = capture("bal.json", run_balance, &b, path, &ret);
	assert_int_equal(ret, 0);
	/* Windows of 1 us from 1000 to 4000; 200 waits on cpu 1 from 2000 to 2200. */
	assert_non_null(strstr(t, "\"interval_ns\": 1000"));
	assert_non_null(strstr(t, "{\"start_ns\": 2000, \"cpus\": [{\"rq\": 1.000, "));
	assert_null(strstr(t, "\"rq\": -"));
	t = capture("cmp.txt", run_compare, &c, path, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "  worker:100            |        1 |        1 |"));
	assert_null(strstr(t, "new"));
	assert_null(strstr(t, "gone"));
}

static void test_syscall_names(void **state)
{
	const struct tk_syscall_table *x86 = NULL;

	(void)state;
	for (const struct tk_syscall_table *t = tk_syscall_tables; t->arch; t++)
		if (!strcmp(t->arch, "x86_64"))
			x86 = t;
	assert_non_null(x86);
	if (!x86->count)
		skip(); /* built without the uapi headers */
	assert_true(x86->count > 300);
	assert_string_equal(x86->names[0], "read");
	assert_string_equal(x86->names[1], "write");
	assert_string_equal(x86->names[59], "execve");
}

/* The wake-up hook's table: wake-ups and switch-ins of many pids, in a scrambled order. */
static void test_wakeup_table(void **state)
{
	char out[512];
	struct tk_wakeup *w = tk_wakeup_new(TK_WAKEUP_PERCENTILES);
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	const struct tk_event *sw, *wk;
	struct tk_outbuf ob;
	uint8_t rec_sw[64] = {0}, rec_wk[36] = {0};
	char text[512];
	ssize_t n;
	int fd;

	(void)state;
	assert_non_null(w);
	assert_non_null(set);
	assert_int_equal(tk_event_set_add_format(set, "sched", switch_fmt, strlen(switch_fmt)),
			 316);
	assert_int_equal(tk_event_set_add_format(set, "sched", wakeup_fmt, strlen(wakeup_fmt)),
			 318);
	sw = tk_event_find_by_name(set, "sched", "sched_switch");
	wk = tk_event_find_by_name(set, "sched", "sched_wakeup");
	assert_non_null(sw);
	assert_non_null(wk);
	snprintf(out, sizeof(out), "%s/wk.txt", tmpdir);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tk_outbuf_init(&ob, fd, 0), 0);
	/* 5000 pids woken at 10*i, switched in (prio 120) in another order, 100 ns later each. */
	for (int32_t i = 1; i <= 5000; i++) {
		uint16_t type = 318;

		memcpy(rec_wk, &type, 2);
		memcpy(rec_wk + 24, &i, 4);
		tk_wakeup_line(w, set, wk, rec_wk, sizeof(rec_wk), (uint64_t)i * 10, &ob);
	}
	for (int32_t k = 0; k < 5000; k++) {
		int32_t pid = (int32_t)((k * 2654435761u) % 5000) + 1, prio = 120;
		uint16_t type = 316;

		memcpy(rec_sw, &type, 2);
		memcpy(rec_sw + 56, &pid, 4);
		memcpy(rec_sw + 60, &prio, 4);
		tk_wakeup_line(w, set, sw, rec_sw, sizeof(rec_sw), (uint64_t)pid * 10 + 100, &ob);
	}
	assert_int_equal(tk_outbuf_flush(&ob), 0);
	tk_outbuf_release(&ob);
	/* Every switch found its wake-up: 5000 latencies of 0.100 us. */
	n = pread(fd, text, 21, 0);
	assert_int_equal(n, 21);
	text[n] = 0;
	assert_string_equal(text, " Latency: 0.100 usecs");
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(tk_wakeup_finish(w, fd), 0);
	n = pread(fd, text, sizeof(text) - 1, 0);
	assert_true(n > 0);
	text[n] = 0;
	assert_non_null(strstr(text, "Average wakeup latency: 0.100 usecs\n"));
	assert_non_null(strstr(text, "Maximum Latency: 0.100 usecs"));
	assert_non_null(strstr(text, "p50 0.100 |"));
	close(fd);
	tk_wakeup_free(w);
	tk_event_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timehist_lines),
		cmocka_unit_test(test_balance_and_compare),
		cmocka_unit_test(test_syscall_names),
		cmocka_unit_test(test_wakeup_table),
	};

	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
