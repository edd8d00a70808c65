// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the analysis feed and of sched latency on a perf.data made
 * here: hand-written sched formats, samples written out of time order
 * inside a round (the feed must deliver them sorted, ties in arrival
 * order, and hold back what a round may still reorder), COMM side-band,
 * and the latency table perf sched latency would print for them. A larger
 * file checks that the feed's second thread (two CPUs allowed) hands an
 * analysis exactly what one thread does, stops included, and so does the
 * walk over both CPUs (a helper walking chunks ahead).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "analyze/feed.h"
#include "analyze/sched-fixture.h"
#include "internal/error.h"
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

/*
 * 40 k samples on 4 CPUs in rounds of ~600, each round's CPUs written one
 * after the other (runs) and with the round's last times held back to the
 * next, COMMs without time between rounds and with a time (queued) among
 * the samples, FORKs and EXITs: many batches of the second thread, flushes
 * between them, records that wait a round.
 */
/*
 * A sched_switch whose prev_prio and the low half of prev_state hold a
 * FINISHED_ROUND's 8 bytes (68, 0, 0, 0, 0, 0, 8, 0) 8-byte aligned in the
 * file: raw starts 52 bytes into the record, prev_prio at raw + 28.
 */
static void add_switch_false_round(struct tk_perfdata_writer *w, uint64_t t, uint32_t cpu,
				   int32_t prev, int32_t next)
{
	add_switch_prio(w, t, cpu, prev, TK_PERF_RECORD_FINISHED_ROUND, 0x80000, next);
}

static void big_fixture_write_with(const char *path, bool false_rounds)
{
	struct tk_tracedata *td;
	struct tk_perfdata_writer *w = sched_fixture_open(path, &td);
	uint64_t t = 1000;

	for (int round = 0; round < 64; round++) {
		char name[16];

		snprintf(name, sizeof(name), "task-%d", round);
		assert_true(tk_perfdata_writer_add_comm(w, 100 + (uint32_t)round,
							100 + (uint32_t)round, name, false,
							NULL) > 0);
		for (uint32_t cpu = 0; cpu < 4; cpu++) {
			uint64_t ct = t + cpu;

			for (int i = 0; i < 160; i++, ct += 7) {
				int32_t prev = 100 + (round * 7 + i) % 90,
					next = 100 + (i * 13) % 90;

				if (i % 3 == 0)
					add_wakeup(w, ct, cpu, next);
				else if (false_rounds && i % 40 == 1)
					add_switch_false_round(w, ct, cpu, prev, next);
				else
					add_switch(w, ct, cpu, prev, i % 5 == 0 ? 0 : 1, next);
				if (i == 80 && cpu == 2) {
					struct tk_perf_sample id = {
						.pid = 5, .tid = 5, .time = ct, .cpu = cpu};

					assert_true(tk_perfdata_writer_add_comm(w, 5, 5, "renamed",
										true, &id) > 0);
					assert_true(tk_perfdata_writer_add_fork(w, 6, 5, 6, 5, ct,
										&id) > 0);
					assert_true(tk_perfdata_writer_add_exit(w, 6, 5, 6, 5,
										ct + 1, &id) > 0);
				}
			}
		}
		assert_true(tk_perfdata_writer_add_round(w) >= 0);
		t += 160 * 7 - 200; /* the next round starts before this one ended */
	}
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	tk_tracedata_free(td);
}

static void big_fixture_write(const char *path)
{
	big_fixture_write_with(path, false);
}

struct digest {
	uint64_t n, h;
	uint64_t stop_at; /* 0: never */
	int stop_ret;
};

static int digest_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct digest *d = ctx;
	uint64_t v[12] = {r->time,
			  r->val[0],
			  r->val[1],
			  r->val[2],
			  r->val[3],
			  r->cpu,
			  (uint64_t)(uint32_t)r->pid,
			  (uint64_t)(uint32_t)r->tid,
			  r->kind,
			  r->want,
			  r->seq,
			  r->event != NULL};
	uint64_t c[2];

	memcpy(c, r->comm, sizeof(c));
	for (size_t i = 0; i < 12; i++)
		d->h = (d->h ^ v[i]) * 0x100000001b3ull;
	d->h = (d->h ^ c[0] ^ (c[1] << 1)) * 0x100000001b3ull;
	assert_null(r->raw);
	assert_int_equal(r->raw_size, 0);
	d->n++;
	if (d->stop_at && d->n == d->stop_at) {
		if (d->stop_ret < 0)
			return tk_fail(-d->stop_ret, "stopped at record %" PRIu64, d->n);
		return d->stop_ret;
	}
	return 0;
}

static int run_digest_stats(const char *path, struct digest *d, struct tk_feed_stats *st)
{
	static const struct tk_feed_want w[] = {
		{"sched", "sched_switch", {"prev_pid", "prev_state", "next_pid"}},
		{"sched", "sched_wakeup", {"pid"}},
	};

	d->n = 0;
	d->h = 0xcbf29ce484222325ull;
	return tk_feed_run(path, w, 2, TK_FEED_SIDEBAND, digest_rec, d, st);
}

static int run_digest(const char *path, struct digest *d)
{
	return run_digest_stats(path, d, NULL);
}

static void test_feed_two_threads_same(void **state)
{
	char path[512], msg2[256];
	struct digest one = {0}, two = {0};
	cpu_set_t all, cpu0;

	(void)state;
	snprintf(path, sizeof(path), "%s/big.data", tmpdir);
	big_fixture_write(path);
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	if (CPU_COUNT(&all) < 2)
		print_message("one CPU only: the second thread is not exercised\n");
	/* Two CPUs (when the machine has them) against one, for every stop. */
	for (int k = 0; k < 4; k++) {
		static const uint64_t at[] = {0, 1, 20000, 30000};
		static const int ret[] = {0, 3, 9, -ENOMEM};
		int r1, r2;

		two.stop_at = one.stop_at = at[k];
		two.stop_ret = one.stop_ret = ret[k];
		setenv("TK_FEED_THREADS", "2", 1); /* whatever the machine's load */
		r2 = run_digest(path, &two);
		unsetenv("TK_FEED_THREADS");
		snprintf(msg2, sizeof(msg2), "%s", tk_errmsg());
		CPU_ZERO(&cpu0);
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (CPU_ISSET(c, &all)) {
				CPU_SET(c, &cpu0);
				break;
			}
		}
		assert_int_equal(sched_setaffinity(0, sizeof(cpu0), &cpu0), 0);
		r1 = run_digest(path, &one);
		assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
		assert_int_equal(r2, ret[k]);
		assert_int_equal(r1, r2);
		assert_int_equal(one.n, two.n);
		assert_true(one.h == two.h);
		if (!at[k])
			assert_true(one.n > 40000); /* every sample, COMM, FORK and EXIT */
		else
			assert_int_equal(one.n, at[k]);
		if (ret[k] < 0)
			assert_string_equal(msg2, "stopped at record 30000");
	}
}

/* @path's text of each sched analysis into @text (NUL-terminated); @tag names the files. */
static void sched_texts(const char *path, const char *tag, char *text, size_t cap)
{
	static const unsigned int th_flags[] = {0, TK_TIMEHIST_SUMMARY_ONLY,
						TK_TIMEHIST_SUMMARY | TK_TIMEHIST_WAKEUPS,
						TK_TIMEHIST_STATE | TK_TIMEHIST_CPU_VISUAL};
	char out[512];
	size_t len = 0;
	int fd;

	snprintf(out, sizeof(out), "%s/%s.txt", tmpdir, tag);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	{
		struct tk_sched_opts o = {.fd = fd, .cpu = -1};

		assert_int_equal(tk_sched_latency_run(path, &o), 0);
		o.sort = "max,pid";
		o.flags = TK_SCHED_PER_PID;
		assert_int_equal(tk_sched_latency_run(path, &o), 0);
		o.flags = 0;
		o.sort = NULL;
		assert_int_equal(tk_sched_map_run(path, &o), 0);
	}
	for (size_t i = 0; i < sizeof(th_flags) / sizeof(th_flags[0]); i++) {
		struct tk_timehist_opts o = {.fd = fd, .flags = th_flags[i]};

		assert_int_equal(tk_sched_timehist_run(path, &o), 0);
	}
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	for (ssize_t n; (n = read(fd, text + len, cap - 1 - len)) > 0;)
		len += (size_t)n;
	text[len] = 0;
	assert_true(len > 0 && len < cap - 1);
	close(fd);
}

/*
 * Both CPUs walking the file (the helper walks chunks ahead, the calling
 * thread queues its tuples) against one thread: every record the same,
 * stops and errors too, for chunk sizes from many rounds a chunk to many
 * chunks a round, and on a file whose payloads hold a FINISHED_ROUND's
 * bytes where the helper looks for one (its guess then wrong, the chunk
 * walked again). Then the text of every sched analysis, both ways.
 */
static void test_feed_split_same(void **state)
{
	static const char *chunks[] = {"262144", "65536", "16384", "4096"};
	static const char *stalls[] = {"", "0"};
	char path[2][512], *one_text, *two_text;
	cpu_set_t all;
	bool two_cpus;

	(void)state;
	snprintf(path[0], sizeof(path[0]), "%s/split.data", tmpdir);
	snprintf(path[1], sizeof(path[1]), "%s/split-false.data", tmpdir);
	big_fixture_write_with(path[0], false);
	big_fixture_write_with(path[1], true);
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	two_cpus = CPU_COUNT(&all) >= 2;
	if (!two_cpus)
		print_message("one CPU only: the split walk is not exercised\n");
	for (int p = 0; p < 2; p++) {
		uint64_t used = 0, wrong = 0;

		for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
			for (int k = 0; k < 4; k++) {
				static const uint64_t at[] = {0, 1, 20000, 30000};
				static const int ret[] = {0, 3, 9, -ENOMEM};
				struct digest one = {.stop_at = at[k], .stop_ret = ret[k]};
				struct digest two = one;
				struct tk_feed_stats st1, st2;
				char msg1[256];
				int r1, r2;

				setenv("TK_FEED_THREADS", "1", 1);
				r1 = run_digest_stats(path[p], &one, &st1);
				snprintf(msg1, sizeof(msg1), "%s", tk_errmsg());
				setenv("TK_FEED_THREADS", "split", 1); /* whatever the load */
				setenv("TK_FEED_CHUNK", chunks[c], 1);
				/*
				 * The second size also takes busy chunks over at once;
				 * the others have the helper walk every chunk it can,
				 * whatever the scheduler does on a loaded machine (else
				 * it may never run and nothing here would be split).
				 */
				setenv("TK_FEED_STALL_NS", stalls[c == 1], 1);
				setenv("TK_FEED_SPLIT_SYNC", c == 1 ? "0" : "1", 1);
				r2 = run_digest_stats(path[p], &two, &st2);
				unsetenv("TK_FEED_CHUNK");
				unsetenv("TK_FEED_STALL_NS");
				unsetenv("TK_FEED_SPLIT_SYNC");
				unsetenv("TK_FEED_THREADS");
				assert_int_equal(r1, ret[k]);
				assert_int_equal(r1, r2);
				assert_int_equal(one.n, two.n);
				assert_true(one.h == two.h);
				assert_int_equal(st1.nr_split_used, 0);
				if (ret[k] < 0)
					assert_string_equal(tk_errmsg(), msg1);
				if (!at[k]) {
					assert_int_equal(st1.nr_records, st2.nr_records);
					assert_true(one.n > 40000);
				}
				used += st2.nr_split_used;
				wrong += st2.nr_split_wrong;
				/* The walk with a helper mapping in ahead, too. */
				two = (struct digest){.stop_at = at[k], .stop_ret = ret[k]};
				setenv("TK_FEED_THREADS", "ahead", 1);
				r2 = run_digest_stats(path[p], &two, &st2);
				unsetenv("TK_FEED_THREADS");
				assert_int_equal(r1, r2);
				assert_int_equal(one.n, two.n);
				assert_true(one.h == two.h);
			}
		}
		if (two_cpus) {
			assert_true(used > 0);
			if (p == 1)
				assert_true(wrong > 0);
		}
	}
	one_text = malloc(1u << 24);
	two_text = malloc(1u << 24);
	assert_non_null(one_text);
	assert_non_null(two_text);
	for (int p = 0; p < 2; p++) {
		setenv("TK_FEED_THREADS", "1", 1);
		sched_texts(path[p], "one", one_text, 1u << 24);
		setenv("TK_FEED_THREADS", "split", 1);
		setenv("TK_FEED_CHUNK", "8192", 1);
		sched_texts(path[p], "two", two_text, 1u << 24);
		unsetenv("TK_FEED_CHUNK");
		unsetenv("TK_FEED_THREADS");
		assert_string_equal(one_text, two_text);
	}
	free(one_text);
	free(two_text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feed_orders_and_reads),
		cmocka_unit_test(test_sched_latency_table),
		cmocka_unit_test(test_feed_two_threads_same),
		cmocka_unit_test(test_feed_split_same),
	};

	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
