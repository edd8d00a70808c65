// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of dat-guest.c: the TIME_SHIFT and GUEST options and the guest time
 * correction. The correction is checked against numbers worked out by hand
 * from trace-cmd 3.4's rules (one sample: offset only; two or more: the pair
 * around the time, stepped or interpolated and rounded to nearest, scaled
 * with fraction bits); the parsers against hand-made payloads (with and
 * without the fraction arrays, out of order, big-endian) and every
 * truncation of them, which must be -EBADMSG or a result, never a crash
 * (ASan in make check). The committed pair (tests/data/guest/) is opened
 * whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/common.h>
#include <tracekit/dat.h>

#include "dat-guest.h"
#include "tk-test.h"

static const struct tk_dat_time_shift *shift_of(struct tk_dat_time_shift *ts,
						struct tk_dat_time_shift_cpu *cpu,
						const struct tk_dat_time_sample *s, uint32_t n,
						uint32_t flags)
{
	cpu->count = n;
	cpu->samples = s;
	memset(ts, 0, sizeof(*ts));
	ts->flags = flags;
	ts->cpu_count = 1;
	ts->cpus = cpu;
	return ts;
}

static void one_sample_adds_its_offset_only(void **state)
{
	/* trace-cmd's one-sample path ignores scaling and fraction. */
	const struct tk_dat_time_sample s[] = {{100, -40, 3, 1}};
	struct tk_dat_time_shift ts;
	struct tk_dat_time_shift_cpu c;

	(void)state;
	shift_of(&ts, &c, s, 1, TK_DAT_TSYNC_INTERPOLATE);
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 1000), 960);
	/* Past the CPUs, and with no samples, the time stays. */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 1, 1000), 1000);
	c.count = 0;
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 1000), 1000);
	assert_int_equal(tk_dat_time_shift_apply(NULL, 0, 1000), 1000);
}

static void two_samples_step_or_interpolate(void **state)
{
	const struct tk_dat_time_sample s[] = {{0, 0, 1, 0}, {1000, 3, 1, 0}};
	struct tk_dat_time_shift ts;
	struct tk_dat_time_shift_cpu c;

	(void)state;
	shift_of(&ts, &c, s, 2, TK_DAT_TSYNC_INTERPOLATE);
	/* (500 * 3 + 1000 / 2) / 1000 = 2, rounded to nearest. */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 500), 502);
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 100), 100); /* (300 + 500) / 1000 = 0 */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 167), 168); /* (501 + 500) / 1000 = 1 */
	/* Past the last sample the line goes on. */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 3000), 3009);
	ts.flags = 0;
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 500), 500);
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 3000), 3000);
}

static void many_samples_pick_the_pair_around(void **state)
{
	const struct tk_dat_time_sample s[] = {
		{1000, 10, 1, 0}, {2000, 20, 1, 0}, {3000, -50, 1, 0}, {4000, 70, 1, 0}};
	struct tk_dat_time_shift ts;
	struct tk_dat_time_shift_cpu c;

	(void)state;
	shift_of(&ts, &c, s, 4, 0);
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 10), 20);	    /* before: first */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 1999), 2009);	    /* [1000, 2000) */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 2000), 2020);	    /* exact */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 2500), 2520);	    /* [2000, 3000) */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 3500), 3450);	    /* negative */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 4000), 4000 - 50); /* last pair */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 9000), 9000 - 50);
	ts.flags = TK_DAT_TSYNC_INTERPOLATE;
	/* 2500: 20 + (500 * -70 + 500) / 1000 = 20 - 34 = -14 (C division truncates). */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 2500), 2486);
	/* 3500: -50 + (500 * 120 + 500) / 1000 = 10. */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 3500), 3510);
	/* 5000: the last pair's line, -50 + (2000 * 120 + 500) / 1000 = 190. */
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 5000), 5190);
}

static void scaling_with_fraction_bits(void **state)
{
	/* x1.25: (t * 5) >> 2, then the offset. */
	const struct tk_dat_time_sample s[] = {{0, -100, 5, 2}, {1u << 30, 0, 5, 2}};
	struct tk_dat_time_shift ts;
	struct tk_dat_time_shift_cpu c;

	(void)state;
	shift_of(&ts, &c, s, 2, 0);
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 4000), 4900);
	assert_int_equal(tk_dat_time_shift_apply(&ts, 0, 3), 3 - 100);
}

/* A little- or big-endian writer of payloads. */
struct buf {
	uint8_t b[1024];
	size_t n;
	bool big;
};

static void put(struct buf *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		int shift = b->big ? 8 * (bytes - 1 - i) : 8 * i;

		b->b[b->n++] = (uint8_t)(v >> shift);
	}
}

/* Two CPUs: CPU 0 with samples stored out of order and one time twice. */
static void time_shift_payload(struct buf *b, bool fractions)
{
	static const int64_t t0[] = {3000, 1000, 2000, 1000}, o0[] = {30, 10, 20, 99};
	static const int64_t t1[] = {500, 700}, o1[] = {-5, -7};

	put(b, 0x1122334455667788ull, 8);
	put(b, 1, 4);
	put(b, 2, 4);
	put(b, 4, 4);
	for (int i = 0; i < 4; i++)
		put(b, (uint64_t)t0[i], 8);
	for (int i = 0; i < 4; i++)
		put(b, (uint64_t)o0[i], 8);
	for (int i = 0; i < 4; i++)
		put(b, 1, 8);
	put(b, 2, 4);
	for (int i = 0; i < 2; i++)
		put(b, (uint64_t)t1[i], 8);
	for (int i = 0; i < 2; i++)
		put(b, (uint64_t)o1[i], 8);
	for (int i = 0; i < 2; i++)
		put(b, 4, 8);
	if (!fractions)
		return;
	for (int i = 0; i < 4; i++)
		put(b, 0, 8);
	for (int i = 0; i < 2; i++)
		put(b, 1, 8);
}

static void check_parsed(const struct tk_dat_time_shift *ts, bool fractions)
{
	assert_int_equal(ts->peer_trace_id, 0x1122334455667788ull);
	assert_int_equal(ts->flags, 1);
	assert_int_equal(ts->cpu_count, 2);
	assert_int_equal(ts->has_fraction, fractions);
	/* Sorted, the second 1000 dropped (the first stored is kept). */
	assert_int_equal(ts->cpus[0].count, 3);
	assert_int_equal(ts->cpus[0].samples[0].time, 1000);
	assert_int_equal(ts->cpus[0].samples[0].offset, 10);
	assert_int_equal(ts->cpus[0].samples[2].time, 3000);
	assert_int_equal(ts->cpus[1].count, 2);
	assert_int_equal(ts->cpus[1].samples[1].offset, -7);
	assert_int_equal(ts->cpus[1].samples[1].scaling, 4);
	assert_int_equal(ts->cpus[1].samples[1].fraction, fractions ? 1 : 0);
	/* CPU 1: (600 * 4) >> 1 = 1200, offset -5 + (100 * -2 + 100) / 200 = -5. */
	assert_int_equal(tk_dat_time_shift_apply(ts, 1, 600), fractions ? 1195 : 2395);
}

static void time_shift_parses(void **state)
{
	struct tk_dat_time_shift *ts;
	char why[128];
	uint64_t at;

	(void)state;
	for (int big = 0; big < 2; big++) {
		for (int frac = 0; frac < 2; frac++) {
			struct buf b = {.big = big};

			time_shift_payload(&b, frac);
			assert_int_equal(tk_dat_time_shift_parse(b.b, (uint32_t)b.n, big, 100, &ts,
								 why, sizeof(why), &at),
					 0);
			check_parsed(ts, frac);
			free(ts);
		}
	}
}

static void time_shift_cut_anywhere(void **state)
{
	struct buf b = {0};
	struct tk_dat_time_shift *ts;
	char why[128];
	uint64_t at;

	(void)state;
	time_shift_payload(&b, true);
	for (size_t n = 0; n < b.n; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		int ret;

		memcpy(copy, b.b, n);
		ret = tk_dat_time_shift_parse(copy, (uint32_t)n, false, 0x1000, &ts, why,
					      sizeof(why), &at);
		/* Only the end of the CPU arrays (no fractions) is a whole option. */
		if (n == b.n - 6 * 8) {
			assert_int_equal(ret, 0);
			free(ts);
		} else {
			assert_int_equal(ret, -EBADMSG);
			assert_null(ts);
			assert_true(at >= 0x1000 && at <= 0x1000 + n);
			assert_true(why[0] != '\0');
		}
		free(copy);
	}
	/* A count far past the option allocates nothing big and fails. */
	b.n = 0;
	put(&b, 1, 8);
	put(&b, 0, 4);
	put(&b, 0xffffffffu, 4);
	assert_int_equal(
		tk_dat_time_shift_parse(b.b, (uint32_t)b.n, false, 0, &ts, why, sizeof(why), &at),
		-EBADMSG);
	assert_int_equal(at, 12);
	put(&b, 0xffffffffu, 4);
	b.b[12] = 1, b.b[13] = b.b[14] = b.b[15] = 0;
	assert_int_equal(
		tk_dat_time_shift_parse(b.b, (uint32_t)b.n, false, 0, &ts, why, sizeof(why), &at),
		-EBADMSG);
	assert_int_equal(at, 16);
}

static void guest_parses_and_refuses(void **state)
{
	struct tk_dat_guest g;
	struct buf b = {0};
	void *mem;
	char why[128];
	uint64_t at;

	(void)state;
	memcpy(b.b, "vm1", 4);
	b.n = 4;
	put(&b, 0xabcdull, 8);
	put(&b, 3, 4);
	put(&b, 2, 4), put(&b, 302, 4);
	put(&b, 0, 4), put(&b, 300, 4);
	/* vCPU 1 not listed */
	put(&b, 0, 4), put(&b, 0, 4); /* a fourth pair past the count is ignored */
	b.n -= 8;
	put(&b, 0xffffffffu, 4);
	b.n -= 4;
	assert_int_equal(
		tk_dat_guest_parse(b.b, (uint32_t)b.n, false, &g, 0, &mem, why, sizeof(why), &at),
		-EBADMSG);
	assert_null(mem);
	/* Three vCPUs need three pairs: give it the third. */
	put(&b, 1, 4), put(&b, (uint32_t)-1, 4);
	assert_int_equal(
		tk_dat_guest_parse(b.b, (uint32_t)b.n, false, &g, 0, &mem, why, sizeof(why), &at),
		0);
	assert_string_equal(g.name, "vm1");
	assert_int_equal(g.trace_id, 0xabcd);
	assert_int_equal(g.vcpu_count, 3);
	assert_int_equal(g.vcpu_pids[0], 300);
	assert_int_equal(g.vcpu_pids[1], -1);
	assert_int_equal(g.vcpu_pids[2], 302);
	free(mem);
	/* A vCPU id at the count. */
	b.b[4 + 8 + 4 + 16] = 3;
	assert_int_equal(tk_dat_guest_parse(b.b, (uint32_t)b.n, false, &g, 0x40, &mem, why,
					    sizeof(why), &at),
			 -EBADMSG);
	assert_int_equal(at, 0x40 + 4 + 8 + 4 + 16);
	/* Every cut fails cleanly. */
	for (size_t n = 0; n < b.n; n++)
		assert_int_equal(tk_dat_guest_parse(b.b, (uint32_t)n, false, &g, 0, &mem, why,
						    sizeof(why), &at),
				 -EBADMSG);
}

static void the_committed_pair_opens(void **state)
{
	const char *src = getenv("TK_SOURCE_DIR");
	char path[4096];
	struct tk_dat *dat;
	const struct tk_dat_info *info;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/guest/guest-zstd.dat", src ? src : ".");
	dat = tk_dat_open(path);
	assert_non_null(dat);
	info = tk_dat_get_info(dat);
	assert_non_null(info->time_shift);
	assert_int_equal(info->time_shift->cpu_count, 2);
	assert_int_equal(info->time_shift->flags, 0);
	assert_int_equal(info->time_shift->cpus[1].count, 3);
	assert_int_equal(info->time_shift->cpus[1].samples[0].fraction, 2);
	assert_true(info->time_shift->cpus[1].samples[0].time <
		    info->time_shift->cpus[1].samples[1].time);
	assert_int_equal(info->nguests, 0);
	/* CPU 1's correction is its own: the same raw time lands elsewhere on CPU 0. */
	assert_true(tk_dat_host_time(dat, 0, 1645440000000ull) !=
		    tk_dat_host_time(dat, 1, 1645440000000ull));
	tk_dat_close(dat);

	snprintf(path, sizeof(path), "%s/tests/data/guest/host-none.dat", src ? src : ".");
	dat = tk_dat_open(path);
	assert_non_null(dat);
	info = tk_dat_get_info(dat);
	assert_null(info->time_shift);
	assert_int_equal(info->nguests, 1);
	assert_string_equal(info->guests[0].name, "tkguest");
	assert_int_equal(info->guests[0].trace_id, 0x6775657374c0ffeeull);
	assert_int_equal(info->guests[0].vcpu_pids[1], 4243);
	assert_int_equal(tk_dat_host_time(dat, 0, 12345), 12345);
	tk_dat_close(dat);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_sample_adds_its_offset_only),
		cmocka_unit_test(two_samples_step_or_interpolate),
		cmocka_unit_test(many_samples_pick_the_pair_around),
		cmocka_unit_test(scaling_with_fraction_bits),
		cmocka_unit_test(time_shift_parses),
		cmocka_unit_test(time_shift_cut_anywhere),
		cmocka_unit_test(guest_parses_and_refuses),
		cmocka_unit_test(the_committed_pair_opens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
