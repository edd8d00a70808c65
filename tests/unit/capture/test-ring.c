// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the user-space ring buffer: encoding (checked by decoding with
 * the page module), loss accounting in both modes, nesting through a
 * signal handler, concurrent readers, control operations, and a .dat built
 * from ring pages that trace-cmd report prints.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <tracekit/dat.h>
#include <tracekit/page.h>
#include <tracekit/ring.h>
#include <tracekit/tracedata.h>

#include "internal/bytes.h"
#include "tk-test-texts.h"

struct ev {
	uint64_t seq;
	uint32_t tag;
	uint32_t pad;
};

/* Payloads are 4-byte aligned, as in the kernel: copy before use. */
static uint64_t seq_of(const struct tk_page_record *rec)
{
	struct ev e;

	memcpy(&e, rec->data, sizeof(e));
	return e.seq;
}

/* A test clock the test advances by hand. */
static uint64_t fake_now;
static uint64_t fake_step = 10;

static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	fake_now += fake_step;
	return fake_now;
}

static struct tk_ring *new_ring(uint64_t size, enum tk_ring_mode mode, enum tk_ring_clock clock,
				uint32_t nbuf)
{
	struct tk_ring_opts o = {.size = size, .mode = mode, .clock = clock, .nr_buffers = nbuf};
	struct tk_ring *r;

	if (clock == TK_RING_CLOCK_CUSTOM)
		o.clock_fn = fake_clock;
	r = tk_ring_new(&o);
	assert_non_null(r);
	return r;
}

static void write_seq(struct tk_ring *r, uint64_t from, uint64_t n, uint32_t tag)
{
	for (uint64_t i = from; i < from + n; i++) {
		struct ev e = {.seq = i, .tag = tag};

		assert_int_equal(tk_ring_write(r, &e, sizeof(e)), 0);
	}
}

/* Drain one buffer with read_page, decoding every page with the page module. */
struct drained {
	uint64_t n, lost, pages, first, last;
	bool missed_flag;
	uint64_t last_ts;
};

static void drain_pages(struct tk_ring *r, int cpu, struct drained *d, bool check_seq)
{
	struct tk_page_format fmt;
	uint8_t *page;
	int ret;

	tk_ring_page_format(r, &fmt);
	page = malloc(fmt.page_size);
	assert_non_null(page);
	while ((ret = tk_ring_read_page(r, cpu, page, fmt.page_size, false)) > 0) {
		struct tk_page_iter it;
		struct tk_page_header h;
		struct tk_page_record rec;

		assert_int_equal(tk_page_iter_init(&it, &fmt, page, fmt.page_size, &h), 0);
		assert_int_equal(h.data_size, (uint32_t)ret);
		if (h.missed_events) {
			d->missed_flag = true;
			if (h.missed_stored)
				d->lost += h.missed_count;
		}
		d->pages++;
		while ((ret = tk_page_iter_next(&it, &rec)) == 1) {
			struct ev e;

			assert_true(rec.size >= sizeof(e));
			memcpy(&e, rec.data, sizeof(e));
			if (d->n == 0)
				d->first = e.seq;
			else if (check_seq)
				assert_int_equal(e.seq, d->last + 1);
			assert_true(rec.timestamp >= d->last_ts);
			d->last_ts = rec.timestamp;
			d->last = e.seq;
			d->n++;
		}
		assert_int_equal(ret, 0);
	}
	assert_int_equal(ret, 0);
	free(page);
}

static void test_basic_consume(void **state)
{
	struct tk_ring *r =
		new_ring(64 << 10, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_MONOTONIC, 2);
	struct tk_page_record rec;
	uint64_t lost = 99, prev = 0;
	int cpu;

	(void)state;
	assert_true(tk_ring_empty(r));
	write_seq(r, 0, 1000, 1);
	cpu = tk_ring_this_cpu(r);
	assert_true(cpu >= 0 && cpu < 2);
	assert_false(tk_ring_empty_cpu(r, cpu));
	assert_int_equal(tk_ring_entries_cpu(r, cpu), 1000);
	assert_int_equal(tk_ring_peek(r, cpu, &rec, &lost), 1);
	assert_int_equal(lost, 0);
	for (uint64_t i = 0; i < 1000; i++) {
		struct ev e;

		assert_int_equal(tk_ring_consume(r, cpu, &rec, &lost), 1);
		assert_int_equal(rec.size, 16);
		memcpy(&e, rec.data, sizeof(e));
		assert_int_equal(e.seq, i);
		assert_true(rec.timestamp >= prev);
		prev = rec.timestamp;
	}
	assert_int_equal(tk_ring_consume(r, cpu, &rec, &lost), 0);
	assert_true(tk_ring_empty(r));
	assert_int_equal(tk_ring_entries(r), 0);
	/* More events after a drain of a partly written page. */
	write_seq(r, 1000, 10, 1);
	assert_int_equal(tk_ring_consume(r, cpu, &rec, NULL), 1);
	assert_int_equal(seq_of(&rec), 1000);
	assert_int_equal(tk_ring_consume(r, 99, &rec, NULL), -EINVAL);
	tk_ring_free(r);
}

/* 16-byte payloads are 20-byte records: 204 fill a 4080-byte page exactly. */
static void test_page_layout(void **state)
{
	struct tk_ring *r = new_ring(16 << 10, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_page_format fmt;
	uint8_t page[4096];
	int cpu;

	(void)state;
	fake_now = 1000;
	fake_step = 10;
	write_seq(r, 0, 204 + 5, 0);
	cpu = tk_ring_this_cpu(r);
	tk_ring_page_format(r, &fmt);
	assert_int_equal(fmt.page_size, 4096);
	assert_int_equal(fmt.data_offset, 8 + sizeof(long));
	assert_int_equal(tk_ring_read_page(r, cpu, page, sizeof(page), true), 4080);
	/* First record: type_len 4, delta 0; the page carries its time. */
	assert_int_equal(tk_load_u32(page + 16, false), 4);
	assert_int_equal(tk_load_u64(page, false), 1010);
	/* Second: delta 10. */
	assert_int_equal(tk_load_u32(page + 36, false), 4 | (10 << 5));
	/* The second page is not finished: a full-only read finds nothing. */
	assert_int_equal(tk_ring_read_page(r, cpu, page, sizeof(page), true), 0);
	assert_int_equal(tk_ring_read_page(r, cpu, page, sizeof(page), false), 100);
	assert_int_equal(tk_ring_read_page(r, cpu, page, 100, false), -EINVAL);
	tk_ring_free(r);
}

static void test_overwrite_exact(void **state)
{
	struct tk_ring *r = new_ring(4 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring_stats st;
	struct drained d = {0};
	const uint64_t total = 10000;

	(void)state;
	write_seq(r, 0, total, 0);
	assert_int_equal(tk_ring_stats_cpu(r, 0, &st), 0);
	assert_int_equal(st.committed, total);
	assert_int_equal(st.dropped, 0);
	/* 4 pages; the tail page holds total % 204 events, 3 full ones before it. */
	assert_int_equal(st.entries, 3 * 204 + total % 204);
	assert_int_equal(st.overrun, total - st.entries);
	assert_int_equal(tk_ring_overruns(r), st.overrun);
	/* consume() reports the exact loss before the first event it returns. */
	struct tk_page_record rec;
	uint64_t lost = 0, n = 0;

	assert_int_equal(tk_ring_consume(r, 0, &rec, &lost), 1);
	assert_int_equal(lost, st.overrun);
	assert_int_equal(seq_of(&rec), total - st.entries);
	n = 1;
	while (tk_ring_consume(r, 0, &rec, &lost) == 1) {
		assert_int_equal(lost, 0);
		assert_int_equal(seq_of(&rec), total - st.entries + n);
		n++;
	}
	assert_int_equal(n, st.entries);
	assert_int_equal(tk_ring_entries(r), 0);

	/*
	 * read_page(): 28-byte records leave 20 bytes free in a page, so the
	 * count is stored after the data (bit 30), as trace-cmd expects.
	 */
	assert_int_equal(tk_ring_reset(r), 0);
	for (uint64_t i = 0; i < total; i++) {
		uint64_t e[3] = {i, 0, 0};

		assert_int_equal(tk_ring_write(r, e, sizeof(e)), 0);
	}
	assert_int_equal(tk_ring_stats_cpu(r, 0, &st), 0);
	assert_int_equal(st.entries, 3 * 145 + total % 145);
	assert_int_equal(st.overrun, total - st.entries);
	drain_pages(r, 0, &d, true);
	assert_int_equal(d.n, st.entries);
	assert_int_equal(d.last, total - 1);
	assert_int_equal(d.first, total - st.entries);
	assert_true(d.missed_flag);
	assert_int_equal(d.lost, st.overrun);
	assert_int_equal(tk_ring_entries(r), 0);

	/* Overrun while a page is half consumed counts only its unread events. */
	assert_int_equal(tk_ring_reset(r), 0);
	write_seq(r, 0, 300, 0);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 1);
	}
	write_seq(r, 300, 2000, 0);
	assert_int_equal(tk_ring_stats_cpu(r, 0, &st), 0);
	assert_int_equal(st.committed, 2300);
	assert_int_equal(st.read, 50);
	assert_int_equal(st.committed, st.read + st.entries + st.overrun);
	tk_ring_free(r);
}

static void test_producer_consumer_exact(void **state)
{
	struct tk_ring *r = new_ring(4 * 4096, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring_stats st;
	struct drained d = {0};
	uint64_t ok = 0, drop = 0;

	(void)state;
	for (uint64_t i = 0; i < 5000; i++) {
		struct ev e = {.seq = i};
		int ret = tk_ring_write(r, &e, sizeof(e));

		if (ret == 0)
			ok++;
		else {
			assert_int_equal(ret, -ENOSPC);
			drop++;
		}
	}
	/* All 4 pages fill: the oldest are kept, the newest dropped. */
	assert_int_equal(ok, 4 * 204);
	assert_int_equal(tk_ring_stats_cpu(r, 0, &st), 0);
	assert_int_equal(st.dropped, drop);
	assert_int_equal(st.overrun, 0);
	drain_pages(r, 0, &d, true);
	assert_int_equal(d.n, ok);
	assert_int_equal(d.first, 0);
	assert_false(d.missed_flag);
	/* After a drain, room again. */
	write_seq(r, 0, 10, 0);
	tk_ring_free(r);
}

/* Gaps of 2^27 and more become time extends; the decoder gets the exact times. */
static void test_time_extend(void **state)
{
	struct tk_ring *r = new_ring(64 << 10, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_CUSTOM, 1);
	static const uint64_t gaps[] = {1, (1 << 27) - 1, 1 << 27, (1 << 27) + 1, 5, 1ULL << 40, 0,
					3, 1ULL << 33};
	uint64_t want[sizeof(gaps) / sizeof(gaps[0])];
	struct tk_page_format fmt;
	uint8_t page[4096];
	int extends = 0;

	(void)state;
	fake_now = 77;
	tk_ring_page_format(r, &fmt);
	for (size_t i = 0; i < sizeof(gaps) / sizeof(gaps[0]); i++) {
		struct ev e = {.seq = i};

		fake_step = gaps[i];
		assert_int_equal(tk_ring_write(r, &e, sizeof(e)), 0);
		want[i] = fake_now;
	}
	assert_true(tk_ring_read_page(r, 0, page, sizeof(page), false) > 0);
	struct tk_page_iter it;
	struct tk_page_record rec;
	size_t n = 0;

	assert_int_equal(tk_page_iter_init(&it, &fmt, page, sizeof(page), NULL), 0);
	while (tk_page_iter_next(&it, &rec) == 1) {
		assert_int_equal(rec.timestamp, want[n]);
		n++;
	}
	assert_int_equal(n, sizeof(gaps) / sizeof(gaps[0]));
	for (uint32_t off = 16; off < 16 + it.size;) {
		uint32_t w = tk_load_u32(page + off, false), t = w & 31;

		if (t == 30)
			extends++;
		off += t == 30 ? 8 : 4 + t * 4;
	}
	assert_int_equal(extends, 4);
	tk_ring_free(r);
}

static void test_large_events(void **state)
{
	struct tk_ring *r = new_ring(1 << 20, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_CUSTOM, 1);
	uint32_t max = tk_ring_max_payload(r);
	uint8_t buf[4096];
	unsigned int seed = 7;
	uint32_t sizes[200];

	(void)state;
	assert_int_equal(max, 4080 - 16);
	assert_int_equal(tk_ring_write(r, buf, 0), -E2BIG);
	assert_int_equal(tk_ring_write(r, buf, max + 1), -E2BIG);
	for (int i = 0; i < 200; i++) {
		uint32_t n = i == 0   ? max
			     : i == 1 ? 1
			     : i == 2 ? 112
			     : i == 3 ? 113
				      : 1 + (uint32_t)(rand_r(&seed) % max);

		sizes[i] = n;
		for (uint32_t j = 0; j < n; j++)
			buf[j] = (uint8_t)(i * 31 + j);
		assert_int_equal(tk_ring_write(r, buf, n), 0);
	}
	for (int i = 0; i < 200; i++) {
		struct tk_page_record rec;
		uint32_t n = sizes[i], n4 = (n + 3) & ~3U;

		assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 1);
		assert_int_equal(rec.size, n4 == 8 ? 12 : n4);
		for (uint32_t j = 0; j < n; j++)
			assert_int_equal(((const uint8_t *)rec.data)[j], (uint8_t)(i * 31 + j));
		for (uint32_t j = n; j < rec.size; j++)
			assert_int_equal(((const uint8_t *)rec.data)[j], 0);
	}
	tk_ring_free(r);
}

static void test_discard_and_nesting(void **state)
{
	struct tk_ring *r = new_ring(64 << 10, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring_event *a, *b;
	struct tk_page_record rec;
	struct ev e = {0};

	(void)state;
	fake_now = 1000;
	fake_step = 10;
	write_seq(r, 0, 1, 0);
	/* Last event: space taken back. */
	a = tk_ring_lock_reserve(r, 16);
	assert_non_null(a);
	tk_ring_discard_commit(r, a);
	/* Nested reservation (as a signal handler would): outer discarded in the middle. */
	a = tk_ring_lock_reserve(r, 16);
	assert_non_null(a);
	b = tk_ring_lock_reserve(r, 16);
	assert_non_null(b);
	e.seq = 2;
	memcpy(tk_ring_event_data(b), &e, sizeof(e));
	tk_ring_unlock_commit(r, b);
	tk_ring_discard_commit(r, a);
	/* Nested, both committed: the inner one comes first in the buffer. */
	a = tk_ring_lock_reserve(r, 16);
	b = tk_ring_lock_reserve(r, 16);
	e.seq = 3;
	memcpy(tk_ring_event_data(a), &e, sizeof(e));
	e.seq = 4;
	memcpy(tk_ring_event_data(b), &e, sizeof(e));
	/* Not visible before the outermost commit. */
	tk_ring_unlock_commit(r, b);
	assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 1);
	assert_int_equal(seq_of(&rec), 0);
	assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 1);
	assert_int_equal(seq_of(&rec), 2);
	assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 0);
	tk_ring_unlock_commit(r, a);
	uint64_t seen[2], ts[2];

	for (int i = 0; i < 2; i++) {
		assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 1);
		seen[i] = seq_of(&rec);
		ts[i] = rec.timestamp;
	}
	assert_int_equal(seen[0], 3);
	assert_int_equal(seen[1], 4);
	assert_true(ts[1] >= ts[0]);
	assert_int_equal(tk_ring_entries(r), 0);
	struct tk_ring_stats st;

	tk_ring_stats_cpu(r, 0, &st);
	assert_int_equal(st.committed, 4);
	/* Nesting limit. */
	struct tk_ring_event *evs[TK_RING_MAX_NEST];

	for (int i = 0; i < TK_RING_MAX_NEST; i++)
		assert_non_null(evs[i] = tk_ring_lock_reserve(r, 8));
	assert_null(tk_ring_lock_reserve(r, 8));
	for (int i = TK_RING_MAX_NEST - 1; i >= 0; i--)
		tk_ring_unlock_commit(r, evs[i]);
	tk_ring_stats_cpu(r, 0, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.entries, TK_RING_MAX_NEST);
	tk_ring_free(r);
}

static void test_disable_enable(void **state)
{
	struct tk_ring *r = new_ring(16 << 10, TK_RING_OVERWRITE, TK_RING_CLOCK_MONOTONIC, 2);
	struct ev e = {0};
	int cpu;

	(void)state;
	assert_true(tk_ring_record_is_on(r));
	tk_ring_record_disable(r);
	assert_false(tk_ring_record_is_on(r));
	assert_int_equal(tk_ring_write(r, &e, sizeof(e)), -EBUSY);
	tk_ring_record_enable(r);
	assert_int_equal(tk_ring_write(r, &e, sizeof(e)), 0);
	cpu = tk_ring_this_cpu(r);
	tk_ring_record_disable_cpu(r, cpu);
	assert_int_equal(tk_ring_write(r, &e, sizeof(e)), -EBUSY);
	tk_ring_record_enable_cpu(r, cpu);
	assert_int_equal(tk_ring_write(r, &e, sizeof(e)), 0);
	assert_int_equal(tk_ring_entries(r), 2);
	assert_true(tk_ring_time_stamp(r) > 0);
	tk_ring_free(r);
}

static void test_resize(void **state)
{
	struct tk_ring *r = new_ring(4 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring_stats st;
	struct drained d = {0};

	(void)state;
	assert_int_equal(tk_ring_size(r, 0), 4 * 4096);
	write_seq(r, 0, 500, 0);
	/* Growing keeps everything. */
	assert_int_equal(tk_ring_resize(r, 16 * 4096, TK_RING_ALL_CPUS), 0);
	assert_int_equal(tk_ring_size(r, 0), 16 * 4096);
	write_seq(r, 500, 2000, 0);
	tk_ring_stats_cpu(r, 0, &st);
	assert_int_equal(st.overrun, 0);
	/* Shrinking keeps the newest pages and counts the rest as overrun. */
	assert_int_equal(tk_ring_resize(r, 3 * 4096, 0), 0);
	tk_ring_stats_cpu(r, 0, &st);
	assert_int_equal(st.entries, 2 * 204 + 2500 % 204);
	assert_int_equal(st.overrun, 2500 - st.entries);
	drain_pages(r, 0, &d, true);
	assert_int_equal(d.n, st.entries);
	assert_int_equal(d.last, 2499);
	/* Full pages have no room for the count: only bit 31 says it. */
	assert_true(d.missed_flag);
	/* And it still works as a ring. */
	write_seq(r, 0, 3000, 0);
	tk_ring_stats_cpu(r, 0, &st);
	assert_int_equal(st.committed, st.read + st.entries + st.overrun);
	assert_int_equal(tk_ring_resize(r, 4096, 5), -EINVAL);
	tk_ring_free(r);
}

static void test_swap_cpu(void **state)
{
	struct tk_ring *a = new_ring(4 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring *b = new_ring(4 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring *c = new_ring(8 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_page_record rec;

	(void)state;
	write_seq(a, 0, 100, 0);
	assert_int_equal(tk_ring_swap_cpu(a, b, 0), 0);
	assert_true(tk_ring_empty(a));
	assert_int_equal(tk_ring_entries(b), 100);
	/* The writer now writes into the buffer a got from b. */
	write_seq(a, 100, 5, 0);
	assert_int_equal(tk_ring_consume(a, 0, &rec, NULL), 1);
	assert_int_equal(seq_of(&rec), 100);
	assert_int_equal(tk_ring_consume(b, 0, &rec, NULL), 1);
	assert_int_equal(seq_of(&rec), 0);
	assert_int_equal(tk_ring_swap_cpu(a, c, 0), -EINVAL);
	tk_ring_record_disable(b);
	assert_int_equal(tk_ring_swap_cpu(a, b, 0), -EAGAIN);
	tk_ring_record_enable(b);
	/* A writer inside an event blocks swap, reset and resize. */
	struct tk_ring_event *ev = tk_ring_lock_reserve(a, 16);

	assert_non_null(ev);
	assert_int_equal(tk_ring_swap_cpu(a, b, 0), -EBUSY);
	assert_int_equal(tk_ring_reset_cpu(a, 0), -EBUSY);
	assert_int_equal(tk_ring_resize(a, 8 * 4096, 0), -EBUSY);
	tk_ring_discard_commit(a, ev);
	assert_int_equal(tk_ring_reset_cpu(a, 0), 0);
	assert_true(tk_ring_empty(a));
	tk_ring_free(a);
	tk_ring_free(b);
	tk_ring_free(c);
}

static void test_iterator(void **state)
{
	struct tk_ring *r = new_ring(8 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring_iter *it;
	struct tk_page_record rec;
	uint64_t n = 0;

	(void)state;
	write_seq(r, 0, 500, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tk_ring_consume(r, 0, &rec, NULL), 1);
	it = tk_ring_read_start(r, 0);
	assert_non_null(it);
	/* The consume() copy holds events 10..203; the iterator shows the ring. */
	assert_int_equal(tk_ring_iter_peek(it, &rec), 1);
	assert_int_equal(seq_of(&rec), 204);
	while (tk_ring_iter_read(it, &rec) == 1) {
		assert_int_equal(seq_of(&rec), 204 + n);
		n++;
	}
	assert_int_equal(n, 296);
	assert_true(tk_ring_iter_empty(it));
	write_seq(r, 500, 3, 0);
	assert_false(tk_ring_iter_empty(it));
	assert_int_equal(tk_ring_iter_read(it, &rec), 1);
	assert_int_equal(seq_of(&rec), 500);
	/* Overwrite under the iterator: it skips to the oldest page and says so. */
	write_seq(r, 503, 5000, 0);
	assert_int_equal(tk_ring_iter_read(it, &rec), 1);
	assert_true(tk_ring_iter_dropped(it));
	assert_true(seq_of(&rec) > 503);
	tk_ring_iter_reset(it);
	assert_int_equal(tk_ring_iter_peek(it, &rec), 1);
	tk_ring_read_finish(it);
	tk_ring_read_finish(NULL);
	tk_ring_free(r);
}

/* ------------------------------------------------- threads */

struct mt {
	struct tk_ring *ring;
	uint64_t count;
	uint64_t ok, dropped;
	int cpu;
	volatile int stop;
};

static void *writer_thread(void *arg)
{
	struct mt *m = arg;

	m->cpu = tk_ring_this_cpu(m->ring);
	for (uint64_t i = 0; i < m->count; i++) {
		struct ev e = {.seq = i, .tag = (uint32_t)m->cpu};
		int r = tk_ring_write(m->ring, &e, sizeof(e));

		if (r == 0)
			m->ok++;
		else if (r == -ENOSPC)
			m->dropped++;
		else
			fail_msg("write: %d", r);
	}
	return NULL;
}

struct reader {
	struct tk_ring *ring;
	volatile int stop;
	uint64_t got[4], lost[4], last[4];
	bool seen[4];
	bool strict; /* producer/consumer: seqs are contiguous except after drops */
};

static void check_event(struct reader *rd, int cpu, const struct tk_page_record *rec)
{
	struct ev e;

	memcpy(&e, rec->data, sizeof(e));
	assert_int_equal(e.tag, (uint32_t)cpu);
	if (rd->seen[cpu])
		assert_true(e.seq > rd->last[cpu]);
	rd->seen[cpu] = true;
	rd->last[cpu] = e.seq;
	rd->got[cpu]++;
}

static void *reader_thread(void *arg)
{
	struct reader *rd = arg;
	struct tk_page_format fmt;
	uint8_t *page;
	unsigned int turn = 0;

	tk_ring_page_format(rd->ring, &fmt);
	page = malloc(fmt.page_size);
	for (;;) {
		int stop = __atomic_load_n(&rd->stop, __ATOMIC_ACQUIRE);
		bool any = false;

		for (int cpu = 0; cpu < tk_ring_cpus(rd->ring); cpu++) {
			struct tk_page_record rec;
			uint64_t lost = 0;

			/* Alternate event and page consumption, as the kernel's benchmark. */
			if (turn++ & 1) {
				int n = tk_ring_read_page(rd->ring, cpu, page, fmt.page_size,
							  false);
				struct tk_page_iter it;
				struct tk_page_header h;

				if (n <= 0)
					continue;
				any = true;
				assert_int_equal(
					tk_page_iter_init(&it, &fmt, page, fmt.page_size, &h), 0);
				if (h.missed_stored)
					rd->lost[cpu] += h.missed_count;
				while (tk_page_iter_next(&it, &rec) == 1)
					check_event(rd, cpu, &rec);
			} else {
				for (int i = 0; i < 300; i++) {
					if (tk_ring_consume(rd->ring, cpu, &rec, &lost) != 1)
						break;
					any = true;
					rd->lost[cpu] += lost;
					check_event(rd, cpu, &rec);
				}
			}
		}
		if (stop && !any)
			break;
	}
	free(page);
	return NULL;
}

static void run_mt(enum tk_ring_mode mode, uint64_t size, uint64_t count)
{
	struct tk_ring *r = new_ring(size, mode, TK_RING_CLOCK_DEFAULT, 2);
	struct mt m[2] = {{.ring = r, .count = count}, {.ring = r, .count = count}};
	struct reader rd = {.ring = r};
	pthread_t w[2], rt;

	assert_int_equal(pthread_create(&rt, NULL, reader_thread, &rd), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i], NULL, writer_thread, &m[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&rd.stop, 1, __ATOMIC_RELEASE);
	pthread_join(rt, NULL);
	for (int i = 0; i < 2; i++) {
		struct tk_ring_stats st;
		int cpu = m[i].cpu;

		assert_int_equal(tk_ring_stats_cpu(r, cpu, &st), 0);
		/* written == read + still buffered + overrun + dropped */
		assert_int_equal(st.committed, m[i].ok);
		assert_int_equal(st.dropped + st.commit_overrun, m[i].dropped);
		assert_int_equal(st.entries, 0);
		assert_int_equal(rd.got[cpu], st.read);
		assert_int_equal(count, rd.got[cpu] + st.overrun + st.dropped + st.commit_overrun);
		/* Every overwritten event was reported to the reader. */
		assert_true(rd.lost[cpu] <= st.overrun);
		if (mode == TK_RING_PRODUCER_CONSUMER)
			assert_int_equal(st.overrun, 0);
	}
	tk_ring_free(r);
}

static void test_mt_overwrite(void **state)
{
	(void)state;
	run_mt(TK_RING_OVERWRITE, 8 * 4096, 200000);
}

static void test_mt_producer_consumer(void **state)
{
	(void)state;
	run_mt(TK_RING_PRODUCER_CONSUMER, 64 * 4096, 200000);
}

/* Iterators stay consistent while a writer runs. */
static void test_mt_iterator(void **state)
{
	struct tk_ring *r = new_ring(1 << 20, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_DEFAULT, 1);
	struct mt m = {.ring = r, .count = 40000};
	pthread_t w;
	struct tk_ring_iter *it;
	uint64_t next = 0;
	int rounds = 0;

	(void)state;
	it = tk_ring_read_start(r, 0);
	assert_non_null(it);
	assert_int_equal(pthread_create(&w, NULL, writer_thread, &m), 0);
	while (next < m.count && rounds < 10000000) {
		struct tk_page_record rec;

		rounds++;
		if (tk_ring_iter_read(it, &rec) != 1)
			continue;
		assert_int_equal(seq_of(&rec), next);
		next++;
	}
	pthread_join(w, NULL);
	assert_int_equal(next, m.count);
	assert_false(tk_ring_iter_dropped(it));
	tk_ring_read_finish(it);
	tk_ring_free(r);
}

/* ------------------------------------------------- swap_cpu under a running writer */

struct swap_writer {
	struct tk_ring *ring;
	uint64_t written, refused;
	int cpu;
	int ready, stop;
};

static void *swap_writer_main(void *arg)
{
	struct swap_writer *w = arg;
	struct ev e = {.tag = 7};

	__atomic_store_n(&w->cpu, tk_ring_this_cpu(w->ring), __ATOMIC_RELEASE);
	__atomic_store_n(&w->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		int r = tk_ring_write(w->ring, &e, sizeof(e));

		if (r == 0)
			e.seq = ++w->written;
		else if (r == -EBUSY) /* the swap's short disable window */
			w->refused++;
		else
			fail_msg("write: %d", r);
	}
	return NULL;
}

/* Drain one buffer: sequence numbers only grow; returns the events read. */
static uint64_t drain_seq(struct tk_ring *r, int cpu)
{
	struct tk_page_record rec;
	uint64_t n = 0, last = 0, lost = 0;
	bool first = true;

	while (tk_ring_consume(r, cpu, &rec, &lost) == 1) {
		struct ev e;

		memcpy(&e, rec.data, sizeof(e));
		assert_int_equal(e.tag, 7);
		if (!first)
			assert_true(e.seq > last);
		first = false;
		last = e.seq;
		n++;
	}
	return n;
}

/*
 * swap_cpu waits for a writer inside an event instead of failing, and a
 * writer that loaded its buffer before the swap never writes into the
 * buffer given away: every event ends in exactly one of the two rings, in
 * order, and the counters of both add up to what the writer wrote.
 */
static void test_swap_cpu_concurrent(void **state)
{
	struct tk_ring *a = new_ring(64 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_DEFAULT, 2);
	struct tk_ring *b = new_ring(64 * 4096, TK_RING_OVERWRITE, TK_RING_CLOCK_DEFAULT, 2);
	struct swap_writer w = {.ring = a};
	struct tk_ring_stats sa, sb;
	pthread_t t;
	int swaps = 0;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, swap_writer_main, &w), 0);
	while (!__atomic_load_n(&w.ready, __ATOMIC_ACQUIRE))
		sched_yield();
	assert_true(w.cpu >= 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(tk_ring_swap_cpu(a, b, w.cpu), 0);
		swaps++;
		if (i % 16 == 0)
			usleep(200);
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_int_equal(tk_ring_stats_cpu(a, w.cpu, &sa), 0);
	assert_int_equal(tk_ring_stats_cpu(b, w.cpu, &sb), 0);
	assert_int_equal(sa.committed + sb.committed, w.written);
	uint64_t ra = drain_seq(a, w.cpu), rb = drain_seq(b, w.cpu);

	if (ra + sa.overrun != sa.committed || rb + sb.overrun != sb.committed)
		print_message("a: read %llu entries %llu overrun %llu committed %llu dropped %llu "
			      "co %llu; b: read %llu entries %llu overrun %llu committed %llu\n",
			      (unsigned long long)ra, (unsigned long long)sa.entries,
			      (unsigned long long)sa.overrun, (unsigned long long)sa.committed,
			      (unsigned long long)sa.dropped, (unsigned long long)sa.commit_overrun,
			      (unsigned long long)rb, (unsigned long long)sb.entries,
			      (unsigned long long)sb.overrun, (unsigned long long)sb.committed);
	assert_int_equal(ra + sa.overrun, sa.committed);
	assert_int_equal(rb + sb.overrun, sb.committed);
	print_message("swap under a writer: %d swaps, %llu events, %llu refused while swapping\n",
		      swaps, (unsigned long long)w.written, (unsigned long long)w.refused);
	assert_true(w.written > 0);
	tk_ring_free(a);
	tk_ring_free(b);
}

/* ------------------------------------------------- signal nesting */

static struct tk_ring *sig_ring;
static uint64_t sig_seq;
static volatile sig_atomic_t sig_fail;

static void on_alarm(int sig)
{
	struct ev e = {.seq = sig_seq, .tag = 2};
	int saved = errno;

	(void)sig;
	/* Half of the handlers use reserve/commit, half write. */
	if (sig_seq & 1) {
		struct tk_ring_event *ev = tk_ring_lock_reserve(sig_ring, sizeof(e));

		if (!ev)
			sig_fail = 1;
		else {
			memcpy(tk_ring_event_data(ev), &e, sizeof(e));
			tk_ring_unlock_commit(sig_ring, ev);
		}
	} else if (tk_ring_write(sig_ring, &e, sizeof(e))) {
		sig_fail = 1;
	}
	sig_seq++;
	errno = saved;
}

static void test_signal_nesting(void **state)
{
	struct sigaction sa = {.sa_handler = on_alarm};
	struct itimerval itv = {.it_interval = {0, 20}, .it_value = {0, 20}};
	struct itimerval off = {0};
	struct timespec t0, t1;
	uint64_t main_n = 0, sig_n = 0, sig_next = 0, main_next = 0, prev_ts = 0;
	struct tk_page_record rec;
	int cpu;

	(void)state;
	sig_ring = new_ring(32 << 20, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_DEFAULT, 1);
	sig_seq = 0;
	sig_fail = 0;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &itv, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++, main_n++) {
			struct ev e = {.seq = main_n, .tag = 1};

			if (main_n & 1) {
				assert_int_equal(tk_ring_write(sig_ring, &e, sizeof(e)), 0);
			} else {
				struct tk_ring_event *ev = tk_ring_lock_reserve(sig_ring, 16);

				assert_non_null(ev);
				memcpy(tk_ring_event_data(ev), &e, sizeof(e));
				tk_ring_unlock_commit(sig_ring, ev);
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 400000000L &&
		 main_n < 1000000);
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	assert_int_equal(sig_fail, 0);
	cpu = tk_ring_this_cpu(sig_ring);
	while (tk_ring_consume(sig_ring, cpu, &rec, NULL) == 1) {
		struct ev e;

		memcpy(&e, rec.data, sizeof(e));
		assert_true(rec.timestamp >= prev_ts);
		prev_ts = rec.timestamp;
		if (e.tag == 1)
			assert_int_equal(e.seq, main_next++);
		else if (e.tag == 2)
			assert_int_equal(e.seq, sig_next++);
		else
			fail_msg("corrupt event tag %u", e.tag);
	}
	assert_int_equal(main_next, main_n);
	assert_int_equal(sig_next, sig_seq);
	sig_n = sig_seq;
	print_message("signal nesting: %llu main events, %llu from the handler\n",
		      (unsigned long long)main_n, (unsigned long long)sig_n);
	assert_true(sig_n > 0);
	tk_ring_free(sig_ring);
}

/* ------------------------------------------------- .dat and trace-cmd report */

#define SAMPLE_ID 9999
static const char sample_format[] = "name: sample\n"
				    "ID: 9999\n"
				    "format:\n" TK_TEST_COMMON_FIELDS "\n"
				    "\tfield:u64 seq;\toffset:8;\tsize:8;\tsigned:0;\n"
				    "\tfield:char msg[16];\toffset:16;\tsize:16;\tsigned:0;\n"
				    "\n"
				    "print fmt: \"seq=%llu msg=%s\", REC->seq, REC->msg\n";

struct sample {
	uint16_t common_type;
	uint8_t common_flags, common_preempt_count;
	int32_t common_pid;
	uint64_t seq;
	char msg[16];
};

static bool in_path(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

#define SAMPLE_EVENTS 500

static void test_dat_trace_cmd_report(void **state)
{
	struct tk_ring *r =
		new_ring(64 << 10, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_MONOTONIC, 1);
	struct tk_dat_writer_opts o = {.sz = sizeof(struct tk_dat_writer_opts), .version = 7};
	struct tk_page_format fmt;
	struct tk_tracedata *td;
	char hp[1024], path[] = "/tmp/tk-ring-XXXXXX", cmd[1400], out[600];
	static const char cmdlines[] = "4242 tk-ring-test\n";
	static const char clock[] = "local global counter [mono]\n";
	struct tk_dat_writer *w;
	size_t hp_len;
	uint8_t *page;
	int fd, n, pages = 0;

	(void)state;
	for (int i = 0; i < SAMPLE_EVENTS; i++) {
		struct sample s = {
			.common_type = SAMPLE_ID, .common_pid = 4242, .seq = (uint64_t)i};

		snprintf(s.msg, sizeof(s.msg), "tk-ring-%04u", (unsigned int)i % 10000);
		assert_int_equal(tk_ring_write(r, &s, sizeof(s)), 0);
	}
	if (!in_path("trace-cmd")) {
		print_message("SKIP: trace-cmd not in PATH\n");
		tk_ring_free(r);
		skip();
	}
	tk_ring_page_format(r, &fmt);
	hp_len = tk_page_format_header_text(&fmt, hp, sizeof(hp));
	assert_true(hp_len < sizeof(hp));
	/* The metadata trace-cmd needs: headers, the sample event's format, the comm. */
	td = tk_tracedata_new();
	assert_non_null(td);
	assert_int_equal(tk_tracedata_set_header_page(td, hp, hp_len), 0);
	assert_int_equal(tk_tracedata_set_header_event(td, tk_test_header_event,
						       strlen(tk_test_header_event)),
			 0);
	assert_int_equal(
		tk_tracedata_add_format(td, "tracekit_user", sample_format, strlen(sample_format)),
		0);
	assert_int_equal(tk_tracedata_set_cmdlines(td, cmdlines, strlen(cmdlines)), 0);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	o.page_size = fmt.page_size;
	w = tk_dat_writer_open(path, &o);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_tracedata(w, td), 0);
	assert_int_equal(
		tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, clock, sizeof(clock)), 0);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "mono", fmt.page_size, 1), 0);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 0), 0);
	page = malloc(fmt.page_size);
	while ((n = tk_ring_read_page(r, 0, page, fmt.page_size, false)) > 0) {
		assert_int_equal(tk_dat_writer_write_pages(w, page, fmt.page_size), 0);
		pages++;
	}
	assert_true(pages >= 3);
	assert_int_equal(tk_dat_writer_end_cpu(w), 0);
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);

	snprintf(out, sizeof(out), "%s.report", path);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i '%s' >'%s' 2>&1", path, out);
	int status = system(cmd);
	char *text = slurp(out);

	assert_non_null(text);
	if (status != 0)
		fail_msg("trace-cmd report failed (%d):\n%s", status, text);
	int count = 0;

	for (char *p = text; (p = strstr(p, "sample:")); p++)
		count++;
	if (count != SAMPLE_EVENTS)
		fail_msg("%d sample events reported, want %d:\n%.2000s", count, SAMPLE_EVENTS,
			 text);
	for (int i = 0; i < SAMPLE_EVENTS; i += 97) {
		char want[64];

		snprintf(want, sizeof(want), "seq=%d msg=tk-ring-%04d", i, i);
		if (!strstr(text, want))
			fail_msg("'%s' missing from trace-cmd report:\n%.2000s", want, text);
	}
	if (!strstr(text, "tk-ring-test-4242"))
		fail_msg("comm-pid missing from trace-cmd report:\n%.2000s", text);
	free(text);
	free(page);
	unlink(out);
	unlink(path);
	tk_tracedata_free(td);
	tk_ring_free(r);
}

/*
 * A page filled exactly by an outer event, a nested event that moves the
 * tail (retiring the page), then the outer event discarded: its space
 * cannot be taken back any more, so it becomes padding, and the entry and
 * committed counts (kept at reservation and at retirement) stay exact.
 */
static void test_discard_after_retire(void **state)
{
	struct tk_ring *r = new_ring(64 << 10, TK_RING_PRODUCER_CONSUMER, TK_RING_CLOCK_CUSTOM, 1);
	struct tk_ring_event *outer, *inner;
	struct tk_ring_stats st;
	struct drained d = {0};
	struct ev e = {.seq = 203, .tag = 0};
	int cpu;

	(void)state;
	fake_now = 1000;
	fake_step = 10;
	write_seq(r, 0, 203, 0);
	outer = tk_ring_lock_reserve(r, 16); /* record 204 ends the page exactly */
	assert_non_null(outer);
	inner = tk_ring_lock_reserve(r, 16); /* lands on the next page */
	assert_non_null(inner);
	memcpy(tk_ring_event_data(inner), &e, sizeof(e));
	tk_ring_unlock_commit(r, inner);
	tk_ring_discard_commit(r, outer);
	write_seq(r, 204, 10, 0);
	cpu = tk_ring_this_cpu(r);
	assert_int_equal(tk_ring_stats_cpu(r, cpu, &st), 0);
	assert_int_equal(st.committed, 214);
	assert_int_equal(st.entries, 214);
	drain_pages(r, cpu, &d, true);
	assert_int_equal(d.n, 214);
	assert_int_equal(d.first, 0);
	assert_int_equal(d.last, 213);
	assert_int_equal(tk_ring_stats_cpu(r, cpu, &st), 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.read, 214);
	tk_ring_free(r);
}

static void test_bad_options(void **state)
{
	struct tk_ring_opts o = {.page_size = 1000};

	(void)state;
	assert_null(tk_ring_new(&o));
	assert_int_equal(errno, EINVAL);
	o.page_size = 4096;
	o.clock = TK_RING_CLOCK_CUSTOM;
	assert_null(tk_ring_new(&o));
	tk_ring_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_consume),
		cmocka_unit_test(test_page_layout),
		cmocka_unit_test(test_overwrite_exact),
		cmocka_unit_test(test_producer_consumer_exact),
		cmocka_unit_test(test_time_extend),
		cmocka_unit_test(test_large_events),
		cmocka_unit_test(test_discard_and_nesting),
		cmocka_unit_test(test_disable_enable),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_swap_cpu),
		cmocka_unit_test(test_swap_cpu_concurrent),
		cmocka_unit_test(test_iterator),
		cmocka_unit_test(test_mt_overwrite),
		cmocka_unit_test(test_mt_producer_consumer),
		cmocka_unit_test(test_mt_iterator),
		cmocka_unit_test(test_signal_nesting),
		cmocka_unit_test(test_dat_trace_cmd_report),
		cmocka_unit_test(test_discard_after_retire),
		cmocka_unit_test(test_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
