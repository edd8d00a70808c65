// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the analysis feed and of sched latency on a perf.data made
 * here: hand-written sched formats, samples written out of time order
 * inside a round (the feed must deliver them sorted, ties in arrival
 * order, and hold back what a round may still reorder), COMM side-band,
 * and the latency table perf sched latency would print for them.
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
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "analyze/feed.h"
#include "analyze/sched-fixture.h"
#include "tk-tmpdir.h"

struct seen {
	uint64_t times[16];
	int kinds[16];
	uint64_t vals[16][TK_FEED_MAX_FIELDS];
	int n;
};

static int collect(void *ctx, const struct tk_feed_rec *r)
{
	struct seen *s = ctx;

	if (s->n < 16) {
		s->times[s->n] = r->time;
		s->kinds[s->n] = r->kind;
		memcpy(s->vals[s->n], r->val, sizeof(r->val));
		s->n++;
	}
	return 0;
}

static void test_feed_orders_and_reads(void **state)
{
	static const struct tk_feed_want w[] = {
		{"sched", "sched_switch", {"prev_pid", "prev_state", "next_pid"}},
		{"sched", "sched_wakeup", {"pid", "no_such_field"}},
		{"sched", "sched_migrate_task", {"pid"}},
	};
	char path[512];
	struct seen s = {0};
	struct tk_feed_stats st;

	(void)state;
	snprintf(path, sizeof(path), "%s/feed.data", tmpdir);
	sched_fixture_write(path);
	assert_int_equal(tk_feed_run(path, w, 3, TK_FEED_SIDEBAND, collect, &s, &st), 0);
	assert_true(st.perfdata);
	assert_int_equal(st.present, 3); /* no migrate_task format */
	assert_int_equal(st.missing, 2); /* sched_wakeup has no no_such_field */
	assert_int_equal(s.n, 7);	 /* 2 COMMs and 5 samples */
	assert_int_equal(s.kinds[0], TK_FEED_COMM);
	assert_int_equal(s.kinds[1], TK_FEED_COMM);
	assert_int_equal(s.times[2], 1000);
	assert_int_equal(s.times[3], 1500);
	assert_int_equal(s.times[4], 2000);
	assert_int_equal(s.times[5], 2200);
	assert_int_equal(s.times[6], 4000);
	assert_int_equal(s.vals[2][0], 100);
	assert_int_equal(s.vals[2][1], 1);
	assert_int_equal(s.vals[2][2], 0);
	assert_int_equal(s.vals[3][0], 100);
	assert_int_equal(s.vals[3][1], 0);
}

static void test_sched_latency_table(void **state)
{
	char path[512], out[512], text[4096];
	struct tk_sched_opts o = {.cpu = -1};
	ssize_t n;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/feed.data", tmpdir);
	snprintf(out, sizeof(out), "%s/lat.txt", tmpdir);
	sched_fixture_write(path);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	o.fd = fd;
	assert_int_equal(tk_sched_latency_run(path, &o), 0);
	n = pread(fd, text, sizeof(text) - 1, 0);
	assert_true(n > 0);
	text[n] = 0;
	assert_non_null(strstr(text, "  worker:100            |      0.000 ms |        1 | avg:   "
				     "0.003 ms | max:   0.003 ms | max start:     0.000001 s | "
				     "max end:     0.000004 s\n"));
	assert_non_null(strstr(text, "  other:200             |      0.000 ms |        1 | avg:   "
				     "0.000 ms | max:   0.000 ms | max start:     0.000002 s | "
				     "max end:     0.000002 s\n"));
	/* 300, first seen switched in, counts one switch of no delay. */
	assert_non_null(strstr(text, "  :300:300              |"));
	/* worker (avg 2500) sorts before other (avg 200). */
	assert_true(strstr(text, "worker:100") < strstr(text, "other:200"));
	assert_non_null(strstr(text, "  TOTAL:                |      0.000 ms |        3 |\n"));
	o.sort = "bogus";
	assert_int_equal(tk_sched_latency_run(path, &o), -EINVAL);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feed_orders_and_reads),
		cmocka_unit_test(test_sched_latency_table),
	};

	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
