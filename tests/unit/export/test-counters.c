// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of what the exports' counters stand on: perf-read.h's reading of
 * a PERF_SAMPLE_READ block in each read_format layout (worked by hand
 * from perf_event.h's description), the feed handing a sample's READ
 * block after its callchain (a real perf record -s file, through the
 * ordered queue and its arena), and the Parquet writer's DOUBLE column
 * (statistics compared as numbers, not as bits).
 * tests/cli/test-export-counters.sh checks the tables and the .pftrace
 * against tracekit report, perf script and DuckDB.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tk-test.h"
#include "feed.h"
#include "parquet-internal.h"
#include "perf-read.h"

/* ----------------------------------------------------------- perf-read */

static void test_read_group(void **state)
{
	/* nr, time_enabled, time_running, then value, id, lost per member */
	const uint64_t blk[] = {2, 1000, 900, 111, 7, 0, 222, 8, 0};
	uint64_t rf = TK_PERF_READ_GROUP | TK_PERF_READ_ID | TK_PERF_READ_LOST |
		      TK_PERF_READ_TOTAL_TIME_ENABLED | TK_PERF_READ_TOTAL_TIME_RUNNING;
	struct tk_read_value v[4];

	(void)state;
	assert_int_equal(tk_perf_read_values(rf, blk, sizeof(blk), v, 4), 2);
	assert_int_equal(v[0].value, 111);
	assert_int_equal(v[0].id, 7);
	assert_int_equal(v[1].value, 222);
	assert_int_equal(v[1].id, 8);
	/* At most @max; a block cut short gives its whole values only. */
	assert_int_equal(tk_perf_read_values(rf, blk, sizeof(blk), v, 1), 1);
	assert_int_equal(tk_perf_read_values(rf, blk, 7 * 8, v, 4), 1);
	assert_int_equal(tk_perf_read_values(rf, blk, 0, v, 4), 0);
	/* Without ID and LOST: value after value. */
	{
		const uint64_t b2[] = {3, 5, 6, 7};

		assert_int_equal(tk_perf_read_values(TK_PERF_READ_GROUP, b2, sizeof(b2), v, 4), 3);
		assert_int_equal(v[2].value, 7);
		assert_int_equal(v[2].id, 0);
	}
	/* A member count past the block stops at its end. */
	{
		const uint64_t b3[] = {1000000, 5, 9};

		assert_int_equal(tk_perf_read_values(TK_PERF_READ_GROUP | TK_PERF_READ_ID, b3,
						     sizeof(b3), v, 4),
				 1);
		assert_int_equal(v[0].id, 9);
	}
}

static void test_read_alone(void **state)
{
	/* Alone: value, time_enabled, time_running, id */
	const uint64_t blk[] = {42, 1000, 900, 77};
	uint64_t rf =
		TK_PERF_READ_ID | TK_PERF_READ_TOTAL_TIME_ENABLED | TK_PERF_READ_TOTAL_TIME_RUNNING;
	struct tk_read_value v[2];

	(void)state;
	assert_int_equal(tk_perf_read_values(rf, blk, sizeof(blk), v, 2), 1);
	assert_int_equal(v[0].value, 42);
	assert_int_equal(v[0].id, 77);
	assert_int_equal(tk_perf_read_values(rf, blk, 3 * 8, v, 2), 0);
	assert_int_equal(tk_perf_read_values(0, blk, 8, v, 2), 1);
	assert_int_equal(v[0].value, 42);
}

/* ---------------------------------------------------------------- feed */

struct seen {
	unsigned int samples, with_read, bad;
	uint64_t last_leader;
};

static int on_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct seen *s = ctx;
	const uint8_t *rd;

	if (r->kind != TK_FEED_SAMPLE)
		return 0;
	s->samples++;
	if (!r->read_size)
		return 0;
	s->with_read++;
	/* {task-clock,page-faults}:S with GROUP|ID|TOTAL_TIMEs|LOST: 3 + 2 * 3 words */
	rd = (const uint8_t *)r->raw + r->raw_size;
	if (r->read_size != 9 * 8 || tk_perf_load_u64(rd, 0) != 2)
		s->bad++;
	s->last_leader = tk_perf_load_u64(rd, 3);
	return 0;
}

static void test_feed_read_block(void **state)
{
	const char *src = getenv("TK_SOURCE_DIR");
	static const struct tk_feed_want none[] = {{"none", "none", {NULL}}};
	struct tk_feed_stats st;
	struct seen s = {0};
	char *p = NULL;

	(void)state;
	assert_true(asprintf(&p, "%s/tests/data/counters/group-s.data", src ? src : ".") > 0);
	memset(&st, 0, sizeof(st));
	assert_int_equal(tk_feed_run(p, none, 1,
				     TK_FEED_SIDEBAND | TK_FEED_ALL_EVENTS | TK_FEED_PAYLOAD,
				     on_rec, &s, &st),
			 0);
	/* perf script -D: 31 samples, each with its group's values. */
	assert_int_equal(s.samples, 31);
	assert_int_equal(s.with_read, 31);
	assert_int_equal(s.bad, 0);
	assert_true(s.last_leader > 0);
	/* Without TK_FEED_PAYLOAD no payload is handed out. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(
		tk_feed_run(p, none, 1, TK_FEED_SIDEBAND | TK_FEED_ALL_EVENTS, on_rec, &s, &st), 0);
	assert_int_equal(s.samples, 31);
	assert_int_equal(s.with_read, 0);
	free(p);
}

/* -------------------------------------------------------- parquet DOUBLE */

static void test_parquet_double(void **state)
{
	static const struct tk_parquet_col cols[] = {{"value", TK_PARQUET_DOUBLE}};
	const double vals[] = {-2.0, 3.25, -8.0, 3.25, 0.5};
	struct tk_parquet_writer *w;
	struct tk_parquet_val v[1];
	uint64_t size = 0;
	uint8_t *file, lo[8], hi[8];
	uint32_t flen;
	double d;
	int fd = memfd_create("test-counters", MFD_CLOEXEC);
	bool has_lo = false, has_hi = false;

	(void)state;
	assert_true(fd >= 0);
	w = tk_parquet_writer_new(fd, "t.parquet", cols, 1, 1000, 1);
	assert_non_null(w);
	memset(v, 0, sizeof(v));
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		v[0].d = vals[i];
		assert_int_equal(tk_parquet_writer_add(w, v), 0);
	}
	assert_int_equal(tk_parquet_writer_finish(w, &size), 0);
	tk_parquet_writer_free(w);
	file = malloc(size);
	assert_int_equal(pread(fd, file, size, 0), (ssize_t)size);
	assert_memory_equal(file + size - 4, "PAR1", 4);
	memcpy(&flen, file + size - 8, 4);
	assert_true(flen < size);
	/*
	 * The footer's statistics are -8.0 and 3.25: as bits (signed 64-bit
	 * integers), -2.0 would be the least of the negatives.
	 */
	d = -8.0;
	memcpy(lo, &d, 8);
	d = 3.25;
	memcpy(hi, &d, 8);
	for (uint32_t i = 0; i + 8 <= flen; i++) {
		has_lo |= !memcmp(file + size - 8 - flen + i, lo, 8);
		has_hi |= !memcmp(file + size - 8 - flen + i, hi, 8);
	}
	assert_true(has_lo);
	assert_true(has_hi);
	d = -2.0;
	memcpy(lo, &d, 8);
	for (uint32_t i = 0; i + 8 <= flen; i++)
		assert_memory_not_equal(file + size - 8 - flen + i, lo, 8);
	free(file);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_group),
		cmocka_unit_test(test_read_alone),
		cmocka_unit_test(test_feed_read_block),
		cmocka_unit_test(test_parquet_double),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
