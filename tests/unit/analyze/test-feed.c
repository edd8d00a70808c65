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
#include "tk-tmpdir.h"

static const char switch_fmt[] =
	"name: sched_switch\nID: 316\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_pid=%d next_pid=%d\", REC->prev_pid, REC->next_pid\n";

static const char wakeup_fmt[] =
	"name: sched_wakeup\nID: 318\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"pid=%d\", REC->pid\n";

#define ST                                                                                         \
	(TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |                    \
	 TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD | TK_PERF_SAMPLE_RAW)

static void add_switch(struct tk_perfdata_writer *w, uint64_t t, uint32_t cpu, int32_t prev,
		       int64_t state, int32_t next)
{
	uint8_t raw[64] = {0};
	uint16_t type = 316;
	struct tk_perf_sample s = {.pid = (uint32_t)prev,
				   .tid = (uint32_t)prev,
				   .time = t,
				   .cpu = cpu,
				   .period = 1,
				   .raw = raw,
				   .raw_size = 64};

	memcpy(raw, &type, 2);
	memcpy(raw + 4, &prev, 4);
	memcpy(raw + 24, &prev, 4);
	memcpy(raw + 32, &state, 8);
	memcpy(raw + 56, &next, 4);
	assert_true(tk_perfdata_writer_add_sample(w, 0, &s) > 0);
}

static void add_wakeup(struct tk_perfdata_writer *w, uint64_t t, uint32_t cpu, int32_t pid)
{
	uint8_t raw[36] = {0};
	uint16_t type = 318;
	struct tk_perf_sample s = {.time = t, .cpu = cpu, .period = 1, .raw = raw, .raw_size = 36};

	memcpy(raw, &type, 2);
	memcpy(raw + 24, &pid, 4);
	assert_true(tk_perfdata_writer_add_sample(w, 1, &s) > 0);
}

/*
 * Task 100 ("worker") sleeps at 1000 on cpu 0, is woken at 1500, runs at
 * 4000 (delay 2500); task 200 ("other") is switched out runnable at 2000
 * on cpu 1 and back in at 2200 (delay 200). The cpu 1 samples are written
 * before the cpu 0 ones of the same round.
 */
static void write_file(const char *path)
{
	struct tk_perfdata_writer *w = tk_perfdata_writer_open(path);
	struct tk_tracedata *td = tk_tracedata_new();
	struct tk_perf_attr a;
	uint64_t id0 = 7, id1 = 8;

	assert_non_null(w);
	assert_non_null(td);
	assert_int_equal(tk_tracedata_set_layout(td, false, 8, 4096), 0);
	assert_int_equal(tk_tracedata_add_format(td, "sched", switch_fmt, strlen(switch_fmt)), 0);
	assert_int_equal(tk_tracedata_add_format(td, "sched", wakeup_fmt, strlen(wakeup_fmt)), 0);
	assert_int_equal(tk_perfdata_writer_set_tracedata(w, td), 0);
	tk_perfdata_attr_tracepoint(&a, 316, ST);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "sched:sched_switch"), 0);
	tk_perfdata_attr_tracepoint(&a, 318, ST);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "sched:sched_wakeup"), 1);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, &id0, 1), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 1, &id1, 1), 0);
	assert_true(tk_perfdata_writer_add_comm(w, 100, 100, "worker", false, NULL) > 0);
	assert_true(tk_perfdata_writer_add_comm(w, 200, 200, "other", false, NULL) > 0);
	add_switch(w, 2000, 1, 200, 0, 300);
	add_switch(w, 2200, 1, 300, 1, 200);
	add_switch(w, 1000, 0, 100, 1, 0);
	add_wakeup(w, 1500, 0, 100);
	assert_true(tk_perfdata_writer_add_round(w) >= 0);
	add_switch(w, 4000, 0, 0, 0, 100);
	assert_true(tk_perfdata_writer_add_round(w) >= 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	tk_tracedata_free(td);
}

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
	write_file(path);
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
	write_file(path);
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
