// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the perf.data reader on damaged input (issue 21): hand-built
 * streams with one damage each (a zeroed header, a type no perf writes, a
 * size too small or too large, a stream cut short, a run of garbage, a
 * COMPRESSED record zstd refuses) read in salvage mode, where every sample
 * outside the damage must come out and the damage be listed once with
 * its offset and size, and in strict mode, where the first damage is an
 * error. File-mode damage (attr ids, feature table, a truncated file) uses
 * the writer's files. tk_perfdata_check() is checked on the same inputs.
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
#include <unistd.h>

#include <tracekit/perfdata.h>

#include "bytes.h"
#include "perfdata-internal.h"
#include "tk-tmpdir.h"

#define NSAMPLES 10
#define S0	 160 /* offset of the first sample: 16 header + 144 HEADER_ATTR */
#define SSIZE	 56

static int warnings;

static void quiet(enum tk_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	(*(int *)ctx)++;
}

static struct tk_perf_attr sw_attr(void)
{
	struct tk_perf_attr a;

	memset(&a, 0, sizeof(a));
	a.type = 1;
	a.sample_period = 1;
	a.sample_type = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
			TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD;
	a.flags = TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL;
	return a;
}

/* A SAMPLE for sw_attr(): id, ip, pid/tid, time, cpu, period (56 bytes). */
static size_t make_sample(uint8_t *b, uint64_t id, uint64_t ip, uint64_t time)
{
	const uint64_t q[] = {9 | (uint64_t)SSIZE << 48, id, ip, 42 | 42ull << 32, time, 1, 1};

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		tk_store_u64(b + 8 * i, q[i], false);
	return SSIZE;
}

/* A pipe-mode stream: header, HEADER_ATTR (id 7), NSAMPLES samples at S0 + 56 i. */
static size_t build_pipe(uint8_t *buf)
{
	struct tk_perf_attr a = sw_attr();
	size_t len;

	tk_store_u64(buf, TK_PERF_MAGIC, false);
	tk_store_u64(buf + 8, 16, false);
	tk_store_u32(buf + 16, TK_PERF_RECORD_HEADER_ATTR, false);
	tk_store_u16(buf + 22, 8 + 128 + 8, false);
	tk_perfdata_attr_encode(&a, buf + 24);
	tk_store_u64(buf + 152, 7, false);
	len = S0;
	for (int i = 0; i < NSAMPLES; i++)
		len += make_sample(buf + len, 7, 0x1000 + (uint64_t)i, 1000 + (uint64_t)i);
	return len;
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static char *path_of(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

/*
 * Read @path to the end: the samples that decode, their ips' bit set in
 * *ips (sample i has ip 0x1000 + i), and the final tk_perfdata_next() value.
 */
static int read_all(struct tk_perfdata *pd, int *samples, uint64_t *ips)
{
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	int r;

	*samples = 0;
	*ips = 0;
	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		if (rec.type != TK_PERF_RECORD_SAMPLE)
			continue;
		assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &s), 0);
		assert_true(s.ip >= 0x1000 && s.ip < 0x1000 + NSAMPLES);
		*ips |= 1ull << (s.ip - 0x1000);
		(*samples)++;
	}
	return r;
}

/*
 * Salvage @buf (@len bytes) and expect every sample but those in @lost_mask,
 * and one damaged region at @off of @skipped bytes; then strict must fail
 * when @strict_fails (where the reader failed before salvage existed: other
 * damage it read past, as strict still does).
 */
static void expect_salvage(const char *name, const uint8_t *buf, size_t len, uint64_t lost_mask,
			   uint64_t off, uint64_t skipped, bool strict_fails)
{
	TK_OPTS(tk_perfdata_open_opts, strict, .strict = true);
	const struct tk_perfdata_damage *d;
	struct tk_perfdata_check_result res = {.sz = sizeof(res)};
	struct tk_perfdata *pd;
	uint64_t ips, all = (1ull << NSAMPLES) - 1;
	int n;

	write_file(path_of(name), buf, len);
	pd = tk_perfdata_open_opts(path_of(name), NULL);
	assert_non_null(pd);
	assert_int_equal(read_all(pd, &n, &ips), 0);
	assert_int_equal(ips, all & ~lost_mask);
	assert_int_equal(n, NSAMPLES - __builtin_popcountll(lost_mask));
	assert_int_equal(tk_perfdata_damage_count(pd), 1);
	d = tk_perfdata_damage_get(pd, 0);
	assert_non_null(d);
	assert_int_equal(d->offset, off);
	assert_int_equal(d->skipped, skipped);
	assert_true(d->what[0] != '\0');
	assert_null(tk_perfdata_damage_get(pd, 1));
	tk_perfdata_close(pd);

	/* The same through tk_perfdata_check(). */
	assert_int_equal(tk_perfdata_check(path_of(name), NULL, &res), 1);
	assert_int_equal(res.samples, (uint64_t)n);
	assert_int_equal(res.samples_bad, 0);
	assert_int_equal(res.nr_damage, 1);
	assert_int_equal(res.damage[0].offset, off);
	free(res.damage);

	/* Strict: the error at the first damage that was always an error. */
	if (!strict_fails)
		return;
	pd = tk_perfdata_open_opts(path_of(name), &strict);
	if (pd) {
		assert_true(read_all(pd, &n, &ips) < 0);
		tk_perfdata_close(pd);
	}
	assert_true(tk_perfdata_check(path_of(name), &strict, &res) < 0);
	assert_null(res.damage);
}

static void test_intact(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf);
	struct tk_perfdata_check_result res = {.sz = sizeof(res)};
	struct tk_perfdata *pd;
	uint64_t ips;
	int n;

	(void)state;
	write_file(path_of("intact.data"), buf, len);
	pd = tk_perfdata_open_opts(path_of("intact.data"), NULL);
	assert_non_null(pd);
	assert_int_equal(read_all(pd, &n, &ips), 0);
	assert_int_equal(n, NSAMPLES);
	assert_int_equal(tk_perfdata_damage_count(pd), 0);
	tk_perfdata_close(pd);
	assert_int_equal(tk_perfdata_check(path_of("intact.data"), NULL, &res), 0);
	assert_int_equal(res.records, NSAMPLES + 1);
	assert_int_equal(res.samples, NSAMPLES);
	assert_int_equal(res.nr_damage, 0);
	assert_non_null(res.damage);
	free(res.damage);
}

static void test_zeroed_header(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf);

	(void)state;
	memset(buf + S0 + 3 * SSIZE, 0, 8);
	expect_salvage("zero.data", buf, len, 1u << 3, S0 + 3 * SSIZE, SSIZE, true);
}

static void test_bad_type(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf);

	(void)state;
	tk_store_u32(buf + S0 + 4 * SSIZE, 0x12345, false);
	expect_salvage("type.data", buf, len, 1u << 4, S0 + 4 * SSIZE, SSIZE, false);
}

static void test_small_size(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf);

	(void)state;
	tk_store_u16(buf + S0 + 5 * SSIZE + 6, 4, false);
	expect_salvage("small.data", buf, len, 1u << 5, S0 + 5 * SSIZE, SSIZE, true);
}

/* A size that steps over two whole samples: plausible to the walk, not to the fields. */
static void test_long_size(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf);

	(void)state;
	tk_store_u16(buf + S0 + 2 * SSIZE + 6, 3 * SSIZE, false);
	expect_salvage("long.data", buf, len, 1u << 2, S0 + 2 * SSIZE, SSIZE, false);
}

/* Past the end of the stream: the last sample is lost, not the stream. */
static void test_cut_short(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf);

	(void)state;
	expect_salvage("cut.data", buf, len - 20, 1u << 9, S0 + 9 * SSIZE, SSIZE - 20, false);
}

/* 64 KiB of noise between two samples: one region, found without rescanning. */
static void test_garbage_run(void **state)
{
	static uint8_t buf[1 << 17];
	size_t len = build_pipe(buf), at = S0 + 6 * SSIZE, n = 65536;
	uint32_t x = 2463534242u;

	(void)state;
	memmove(buf + at + n, buf + at, len - at);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[at + i] = (uint8_t)x;
	}
	expect_salvage("noise.data", buf, len + n, 0, at, n, false);
}

/* A COMPRESSED record whose payload is no zstd frame loses only itself. */
static void test_bad_compressed(void **state)
{
	static uint8_t buf[4096];
	size_t len = build_pipe(buf), at = S0 + 7 * SSIZE;

	(void)state;
	memmove(buf + at + 32, buf + at, len - at);
	memset(buf + at, 0xa5, 32);
	tk_store_u32(buf + at, TK_PERF_RECORD_COMPRESSED, false);
	tk_store_u16(buf + at + 4, 0, false);
	tk_store_u16(buf + at + 6, 32, false);
	expect_salvage("zstd.data", buf, len + 32, 0, at, 32, true);
}

/* The writer's file with @n samples; returns its data offset. */
static uint64_t write_writer_file(const char *path, int n)
{
	struct tk_perfdata_writer *w = tk_perfdata_writer_open(path);
	struct tk_perf_attr a = sw_attr();
	uint64_t id = 7, off;
	uint8_t rec[64];
	struct tk_perfdata *pd;

	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, &id, 1), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(tk_perfdata_writer_write(w, rec,
							  make_sample(rec, 7, 0x1000 + (uint64_t)i,
								      1000 + (uint64_t)i)),
				 0);
	assert_int_equal(tk_perfdata_writer_set_host(w, 1, (const char *const[]){"x"}), 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	off = tk_perfdata_get_info(pd)->data_offset;
	tk_perfdata_close(pd);
	return off;
}

static void patch(const char *path, uint64_t off, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* A file cut inside its data: the samples before the cut, the cut listed. */
static void test_truncated_file(void **state)
{
	char *path = path_of("trunc.data");
	uint64_t data = write_writer_file(path, NSAMPLES), ips;
	struct tk_perfdata *pd;
	int n;

	(void)state;
	assert_int_equal(truncate(path, (off_t)(data + 6 * SSIZE + 10)), 0);
	pd = tk_perfdata_open_opts(path, NULL);
	assert_non_null(pd);
	assert_int_equal(read_all(pd, &n, &ips), 0);
	assert_int_equal(n, 6);
	assert_true(tk_perfdata_damage_count(pd) >= 1);
	tk_perfdata_close(pd);
}

/* Attr ids outside the file: the attr stays, its samples name no event. */
static void test_attr_ids_outside(void **state)
{
	TK_OPTS(tk_perfdata_open_opts, strict, .strict = true);
	char *path = path_of("ids.data");
	uint64_t big = 1ull << 40;
	struct tk_perfdata *pd;
	uint64_t attrs;

	(void)state;
	write_writer_file(path, NSAMPLES);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	attrs = tk_perfdata_get_info(pd)->attrs_offset;
	tk_perfdata_close(pd);
	patch(path, attrs + 128, &big, 8);
	assert_null(tk_perfdata_open_opts(path, &strict));
	pd = tk_perfdata_open_opts(path, NULL);
	assert_non_null(pd);
	assert_int_equal(tk_perfdata_evsel_count(pd), 1);
	assert_int_equal(tk_perfdata_evsel_get(pd, 0)->nr_ids, 0);
	assert_int_equal(tk_perfdata_damage_count(pd), 1);
	assert_int_equal(tk_perfdata_damage_get(pd, 0)->offset, attrs + 128);
	tk_perfdata_close(pd);
}

/* A feature table past the end of the file: features ignored, records read. */
static void test_feature_table_outside(void **state)
{
	TK_OPTS(tk_perfdata_open_opts, strict, .strict = true);
	char *path = path_of("feat.data");
	uint64_t bits = ~0ull, ips;
	struct tk_perfdata *pd;
	int n;

	(void)state;
	write_writer_file(path, NSAMPLES);
	for (int i = 1; i < 4; i++)
		patch(path, 72 + 8 * (uint64_t)i, &bits, 8);
	assert_null(tk_perfdata_open_opts(path, &strict));
	pd = tk_perfdata_open_opts(path, NULL);
	assert_non_null(pd);
	assert_int_equal(tk_perfdata_damage_count(pd), 1);
	assert_int_equal(read_all(pd, &n, &ips), 0);
	assert_int_equal(n, NSAMPLES);
	tk_perfdata_close(pd);
}

static int setup(void **state)
{
	(void)state;
	if (tk_tmpdir_make())
		return -1;
	tk_log_set_handler(quiet, &warnings, TK_LOG_WARN);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intact),
		cmocka_unit_test(test_zeroed_header),
		cmocka_unit_test(test_bad_type),
		cmocka_unit_test(test_small_size),
		cmocka_unit_test(test_long_size),
		cmocka_unit_test(test_cut_short),
		cmocka_unit_test(test_garbage_run),
		cmocka_unit_test(test_bad_compressed),
		cmocka_unit_test(test_truncated_file),
		cmocka_unit_test(test_attr_ids_outside),
		cmocka_unit_test(test_feature_table_outside),
	};

	return cmocka_run_group_tests(tests, setup, tk_tmpdir_teardown);
}
