/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The small sched perf.data the analysis unit tests read, written through
 * the library's own perf.data writer: sched_switch (id 316) and
 * sched_wakeup (id 318) samples with this kernel's field layout. Include
 * after <cmocka.h>, <string.h>, <tracekit/perfdata.h> and
 * <tracekit/tracedata.h>.
 */
#ifndef TRACEKIT_SCHED_FIXTURE_H
#define TRACEKIT_SCHED_FIXTURE_H

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

/* A sched_switch sample whose prev_prio is @prio (add_switch(): 0). */
static inline void add_switch_prio(struct tk_perfdata_writer *w, uint64_t t, uint32_t cpu,
				   int32_t prev, int32_t prio, int64_t state, int32_t next)
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
	memcpy(raw + 28, &prio, 4);
	memcpy(raw + 32, &state, 8);
	memcpy(raw + 56, &next, 4);
	assert_true(tk_perfdata_writer_add_sample(w, 0, &s) > 0);
}

static inline void add_switch(struct tk_perfdata_writer *w, uint64_t t, uint32_t cpu, int32_t prev,
			      int64_t state, int32_t next)
{
	add_switch_prio(w, t, cpu, prev, 0, state, next);
}

static inline void add_wakeup(struct tk_perfdata_writer *w, uint64_t t, uint32_t cpu, int32_t pid)
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
/*
 * A perf.data writer at @path with the sched_switch (id 7) and
 * sched_wakeup (id 8) attrs and their formats, ready for records; *@td
 * receives the TRACING_DATA for the caller to free after closing.
 */
static inline struct tk_perfdata_writer *sched_fixture_open(const char *path,
							    struct tk_tracedata **td_out)
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
	*td_out = td;
	return w;
}

static inline void sched_fixture_write(const char *path)
{
	struct tk_tracedata *td;
	struct tk_perfdata_writer *w = sched_fixture_open(path, &td);

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

#endif
