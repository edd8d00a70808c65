// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the page module: header_page parsing and writing, decoding of
 * real kernel pages (bytes captured on the reference machine and pages read
 * live from a private tracefs instance), the writer's encoding rules, round
 * trips over every record type in both byte orders and long sizes, and
 * corrupt pages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/page.h>
#include <tracekit/tracefs.h>

#include "internal/bytes.h"
#include "page-internal.h"

#include "tk-test.h"

#define TRACEFS "/sys/kernel/tracing"

static const char kernel_header_page[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
					 "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
					 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
					 "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
	return tk_test_xorshift(&rng_state);
}

static uint32_t align4(uint32_t n)
{
	return (n + 3) & ~3U;
}

/* Payload bytes a record of n bytes is stored with (kernel rules). */
static uint32_t stored_size(uint32_t n)
{
	return align4(n) == 8 ? 12 : align4(n);
}

/* ---- header_page ---- */

static void test_format_parse_kernel(void **state)
{
	static const char spaces[] = "field: u64 timestamp;     offset:0;   size:8;    signed:0;\n"
				     "field: local_t commit;    offset:8;   size:4;    signed:1;\n"
				     "field: int overwrite;     offset:8;   size:1;    signed:1;\n"
				     "field: char data;         offset:12;  size:4084; signed:0;\n";
	static const char no_overwrite[] = "field: u64 timestamp; offset:0; size:8;\n"
					   "field: local_t commit; offset:8; size:8;\n"
					   "field: char data[]; offset:16; size:65520;\n";
	struct tk_page_format f;

	(void)state;
	assert_int_equal(
		tk_page_format_parse(&f, kernel_header_page, strlen(kernel_header_page), false), 0);
	assert_int_equal(f.page_size, 4096);
	assert_int_equal(f.data_offset, 16);
	assert_int_equal(f.long_size, 8);
	assert_false(f.big_endian);

	/* A .dat copy may include the NUL; it ends the text. */
	assert_int_equal(
		tk_page_format_parse(&f, kernel_header_page, sizeof(kernel_header_page), true), 0);
	assert_int_equal(f.page_size, 4096);
	assert_true(f.big_endian);

	assert_int_equal(tk_page_format_parse(&f, spaces, strlen(spaces), false), 0);
	assert_int_equal(f.page_size, 4096);
	assert_int_equal(f.data_offset, 12);
	assert_int_equal(f.long_size, 4);

	assert_int_equal(tk_page_format_parse(&f, no_overwrite, strlen(no_overwrite), false), 0);
	assert_int_equal(f.page_size, 65536);
	assert_int_equal(f.long_size, 8);
}

static void test_format_parse_errors(void **state)
{
	static const char *const bad[] = {
		"",
		"garbage without fields",
		/* no commit */
		"field: u64 timestamp; offset:0; size:8;\nfield: char data; offset:16; "
		"size:4080;\n",
		/* no data */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:8;\n",
		/* no timestamp */
		"field: local_t commit; offset:8; size:8;\nfield: char data; offset:16; "
		"size:4080;\n",
		/* commit of 2 bytes */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:2;\n"
		"field: char data; offset:10; size:4086;\n",
		/* data offset not 8 + long */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:8;\n"
		"field: char data; offset:12; size:4084;\n",
		/* timestamp of 4 bytes */
		"field: u64 timestamp; offset:0; size:4;\nfield: local_t commit; offset:8; "
		"size:8;\n"
		"field: char data; offset:16; size:4080;\n",
		/* page too small */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:8;\n"
		"field: char data; offset:16; size:8;\n",
		/* page absurdly large */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:8;\n"
		"field: char data; offset:16; size:4294967296;\n",
		/* overflowing number */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:8;\n"
		"field: char data; offset:16; size:99999999999999999999999;\n",
		/* non-numeric value */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:x8;\n"
		"field: char data; offset:16; size:4080;\n",
		/* missing size */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8;\n"
		"field: char data; offset:16; size:4080;\n",
		/* field twice */
		"field: u64 timestamp; offset:0; size:8;\nfield: local_t commit; offset:8; "
		"size:8;\n"
		"field: char data; offset:16; size:4080;\nfield: char data; offset:16; "
		"size:4080;\n",
		/* no ';' after the declaration */
		"field: u64 timestamp",
	};
	struct tk_page_format f;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = tk_page_format_parse(&f, bad[i], strlen(bad[i]), false);

		if (r != -EINVAL)
			fail_msg("case %zu: returned %d: %s", i, r, tk_errmsg());
		assert_true(strstr(tk_errmsg(), "header_page") != NULL);
	}
	/* The length bounds the text even without a NUL. */
	assert_errno(tk_page_format_parse(&f, kernel_header_page, 60, false), EINVAL);
}

static void test_format_init_and_text(void **state)
{
	struct tk_page_format f, g;
	char buf[512], small[20];
	size_t n;

	(void)state;
	assert_errno(tk_page_format_init(&f, 4096, 2, false), EINVAL);
	assert_errno(tk_page_format_init(&f, 4096, 0, false), EINVAL);
	assert_errno(tk_page_format_init(&f, 16, 8, false), EINVAL);
	assert_errno(tk_page_format_init(&f, (1U << 24) + 4, 8, false), EINVAL);

	assert_int_equal(tk_page_format_init(&f, 4096, 8, false), 0);
	n = tk_page_format_header_text(&f, buf, sizeof(buf));
	assert_int_equal(n, strlen(kernel_header_page));
	assert_string_equal(buf, kernel_header_page);

	/* Too small a buffer: truncated, NUL-terminated, full length returned. */
	assert_int_equal(tk_page_format_header_text(&f, small, sizeof(small)), n);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(tk_page_format_header_text(&f, NULL, 0), n);

	for (int l = 4; l <= 8; l += 4) {
		for (uint32_t ps = 64; ps <= 1U << 20; ps <<= 2) {
			assert_int_equal(tk_page_format_init(&f, ps, (uint8_t)l, true), 0);
			tk_page_format_header_text(&f, buf, sizeof(buf));
			assert_int_equal(tk_page_format_parse(&g, buf, strlen(buf), true), 0);
			assert_int_equal(f.page_size, g.page_size);
			assert_int_equal(f.data_offset, g.data_offset);
			assert_int_equal(f.long_size, g.long_size);
			assert_int_equal(f.big_endian, g.big_endian);
		}
	}

	/* Our text for the live kernel's layout is the kernel's text. */
	{
		FILE *fp = fopen(TRACEFS "/events/header_page", "r");

		if (fp) {
			char live[1024];
			size_t m = fread(live, 1, sizeof(live) - 1, fp);

			fclose(fp);
			live[m] = 0;
			assert_int_equal(tk_page_format_parse(&g, live, m, false), 0);
			tk_page_format_header_text(&g, buf, sizeof(buf));
			assert_string_equal(buf, live);
		}
	}
}

/* ---- decoding real kernel bytes ---- */

/*
 * A page read from trace_pipe_raw of a private instance on the reference
 * machine after writing "hello" and "world, this is a longer marker string"
 * to trace_marker (x86_64: LE, 8-byte long). Data part only up to the end
 * of the commit; the rest of the page is zeros.
 */
static const char real_page_hex[] =
	"bb03d070980100005800000000000000060000000500000143170000da874981ffffffff"
	"68656c6c6f0a00006ee712000500000143170000da874981ffffffff776f726c642c2074"
	"6869732069732061206c6f6e676572206d61726b657220737472696e670a0000";

static uint8_t *hex_page(const char *hex, uint32_t page_size)
{
	uint8_t *p = calloc(1, page_size);
	size_t n = strlen(hex) / 2;

	assert_non_null(p);
	assert_true(n <= page_size);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		p[i] = (uint8_t)v;
	}
	return p;
}

static void test_decode_real_page(void **state)
{
	struct tk_page_format f;
	struct tk_page_header h;
	struct tk_page_iter it;
	struct tk_page_record r;
	uint8_t *page = hex_page(real_page_hex, 4096);

	(void)state;
	assert_int_equal(
		tk_page_format_parse(&f, kernel_header_page, strlen(kernel_header_page), false), 0);
	assert_int_equal(tk_page_iter_init(&it, &f, page, 4096, &h), 0);
	assert_int_equal(h.timestamp, 0x19870d003bbULL);
	assert_int_equal(h.data_size, 0x58);
	assert_false(h.missed_events);
	assert_false(h.missed_stored);

	assert_int_equal(tk_page_iter_next(&it, &r), 1);
	assert_int_equal(r.timestamp, 0x19870d003bbULL);
	assert_int_equal(r.size, 24);
	assert_int_equal(r.offset, 16);
	assert_int_equal(tk_load_u16(r.data, false), 5); /* ftrace print */
	assert_memory_equal((const uint8_t *)r.data + 16, "hello\n", 6);

	assert_int_equal(tk_page_iter_next(&it, &r), 1);
	assert_int_equal(r.timestamp, 0x19870d003bbULL + 38715);
	assert_int_equal(r.size, 56);
	assert_int_equal(r.offset, 16 + 28);
	assert_memory_equal((const uint8_t *)r.data + 16, "world, this is a longer marker string\n",
			    38);

	assert_int_equal(tk_page_iter_next(&it, &r), 0);
	assert_int_equal(tk_page_iter_next(&it, &r), 0);
	free(page);
}

/* The record examples of spec section 6.3, and its missed-events page. */
static void test_decode_spec_examples(void **state)
{
	struct tk_page_format f;
	struct tk_page_header h;
	struct tk_page_iter it;
	struct tk_page_record r;
	uint8_t *page = calloc(1, 4096), *d = page + 16;
	static const uint8_t extend[8] = {0x1e, 0x2b, 0xb7, 0x32, 0x01, 0x00, 0x00, 0x00};
	static const uint8_t small[4] = {0x07, 0x00, 0x00, 0x00};
	static const uint8_t big[8] = {0xe0, 0x1e, 0x11, 0x00, 0xb4, 0x00, 0x00, 0x00};
	const uint64_t base = 1000000;

	(void)state;
	assert_int_equal(tk_page_format_init(&f, 4096, 8, false), 0);
	tk_store_u64(page, base, false);
	memcpy(d, extend, 8);
	memcpy(d + 8, small, 4);
	memset(d + 12, 'a', 28);
	memcpy(d + 40, big, 8);
	memset(d + 48, 'b', 176);
	tk_store_u64(page + 8, 48 + 176, false);

	assert_int_equal(tk_page_iter_init(&it, &f, page, 4096, NULL), 0);
	assert_int_equal(tk_page_iter_next(&it, &r), 1);
	assert_int_equal(r.timestamp, base + 160807256);
	assert_int_equal(r.size, 28);
	assert_int_equal(r.offset, 16 + 8);
	assert_int_equal(tk_page_iter_next(&it, &r), 1);
	assert_int_equal(r.timestamp, base + 160807256 + 35063);
	assert_int_equal(r.size, 176);
	assert_ptr_equal(r.data, d + 48);
	assert_int_equal(tk_page_iter_next(&it, &r), 0);

	/* commit 0xffffffffc0000f40: 3904 bytes, both flags, count 256 after the data. */
	memset(page, 0, 4096);
	tk_store_u64(page + 8, 0xffffffffc0000f40ULL, false);
	tk_store_u64(page + 16 + 3904, 256, false);
	/* Null padding (29, delta 0) at the start: a valid page with no records. */
	tk_store_u32(page + 16, 29, false);
	assert_int_equal(tk_page_iter_init(&it, &f, page, 4096, &h), 0);
	assert_int_equal(h.data_size, 3904);
	assert_true(h.missed_events);
	assert_true(h.missed_stored);
	assert_int_equal(h.missed_count, 256);
	assert_int_equal(tk_page_iter_next(&it, &r), 0);
	assert_true(it.done);

	/* Bit 31 alone: events lost, count unknown. */
	tk_store_u64(page + 8, 0xffffffff80000f40ULL, false);
	assert_int_equal(tk_page_read_header(&f, page, 4096, &h), 0);
	assert_true(h.missed_events);
	assert_false(h.missed_stored);
	assert_int_equal(h.missed_count, 0);
	free(page);
}

/* ---- encoding ---- */

static uint32_t raw_word(const struct tk_page_writer *w, uint32_t pos)
{
	return tk_load_u32(w->page + w->fmt.data_offset + pos, w->fmt.big_endian);
}

static uint32_t word_type(const struct tk_page_format *f, uint32_t w)
{
	return f->big_endian ? w >> 27 : w & 31;
}

static uint32_t word_delta(const struct tk_page_format *f, uint32_t w)
{
	return f->big_endian ? w & 0x7ffffff : w >> 5;
}

static void test_encoding_rules(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		struct tk_page_format f;
		struct tk_page_writer w;
		uint8_t *page = malloc(4096), payload[200];
		uint32_t word;

		memset(payload, 0x77, sizeof(payload));
		assert_int_equal(tk_page_format_init(&f, 4096, v & 1 ? 8 : 4, v & 2), 0);
		assert_int_equal(tk_page_writer_init(&w, &f, page, 5000), 0);

		/* 8-byte payload: record grown from 12 to 16, type_len 3. */
		assert_int_equal(tk_page_writer_add(&w, 5010, payload, 8), 0);
		assert_int_equal(w.pos, 16);
		word = raw_word(&w, 0);
		assert_int_equal(word_type(&f, word), 3);
		assert_int_equal(word_delta(&f, word), 10);
		/* 5..7 bytes round to 8 and grow the same way. */
		assert_int_equal(tk_page_writer_add(&w, 5010, payload, 5), 0);
		assert_int_equal(w.pos, 32);
		assert_int_equal(word_type(&f, raw_word(&w, 16)), 3);
		/* 1 byte: type_len 1, 8-byte record. */
		assert_int_equal(tk_page_writer_add(&w, 5011, payload, 1), 0);
		assert_int_equal(w.pos, 40);
		assert_int_equal(word_type(&f, raw_word(&w, 32)), 1);
		/* 112 bytes: last inline size, type_len 28. */
		assert_int_equal(tk_page_writer_add(&w, 5012, payload, 112), 0);
		assert_int_equal(w.pos, 40 + 116);
		assert_int_equal(word_type(&f, raw_word(&w, 40)), 28);
		/* 113 bytes: type_len 0, array[0] = 4 + 116. */
		assert_int_equal(tk_page_writer_add(&w, 5013, payload, 113), 0);
		assert_int_equal(w.pos, 156 + 124);
		assert_int_equal(word_type(&f, raw_word(&w, 156)), 0);
		assert_int_equal(raw_word(&w, 160), 120);
		/* Gap of exactly 2^27: time extend (delta 0, array 1), data delta 0. */
		assert_int_equal(tk_page_writer_add(&w, 5013 + (1ULL << 27), payload, 4), 0);
		assert_int_equal(w.pos, 280 + 8 + 8);
		word = raw_word(&w, 280);
		assert_int_equal(word_type(&f, word), 30);
		assert_int_equal(word_delta(&f, word), 0);
		assert_int_equal(raw_word(&w, 284), 1);
		word = raw_word(&w, 288);
		assert_int_equal(word_type(&f, word), 1);
		assert_int_equal(word_delta(&f, word), 0);
		/* Gap of 2^27 - 1 still fits the header. */
		assert_int_equal(tk_page_writer_add(&w, 5013 + (2ULL << 27) - 1, payload, 4), 0);
		word = raw_word(&w, 296);
		assert_int_equal(word_type(&f, word), 1);
		assert_int_equal(word_delta(&f, word), (1U << 27) - 1);

		/* Writer argument errors. */
		assert_errno(tk_page_writer_add(&w, 0, payload, 4), EINVAL);
		assert_errno(tk_page_writer_add(&w, 1ULL << 62, payload, 0), EINVAL);
		assert_errno(tk_page_writer_add(&w, 1ULL << 62, payload, 4), EINVAL);
		assert_errno(tk_page_writer_add_discarded(&w, 1ULL << 40, 0), EINVAL);

		assert_int_equal(tk_page_writer_finish(&w), 304);
		assert_int_equal(tk_load_u64(page, f.big_endian), 5000);
		assert_int_equal(f.long_size == 8 ? tk_load_u64(page + 8, f.big_endian)
						  : tk_load_u32(page + 8, f.big_endian),
				 304);
		free(page);
	}
}

struct expect {
	uint64_t ts;
	uint32_t size; /* payload size given to the writer */
	uint8_t fill;
};

/*
 * Write a page with every data size from 1 to 130 bytes (every type_len
 * 1..28 and type 0), random gaps of every magnitude (so time extends appear),
 * discarded records and absolute stamps; decode it and compare.
 */
/*
 * tk_page_iter_fill() in batches of every size gives what
 * tk_page_iter_next() gives, record for record.
 */
static void check_fill(const struct tk_page_format *f, const uint8_t *page, uint32_t page_size,
		       size_t n)
{
	struct tk_page_record *want = calloc(n + 1, sizeof(*want)), batch[9];
	struct tk_page_iter it;
	size_t got = 0;
	int ret;

	assert_non_null(want);
	assert_int_equal(tk_page_iter_init(&it, f, page, page_size, NULL), 0);
	/* A page that decodes to its end is intact, from its start and from any record. */
	assert_true(tk_page_iter_intact(&it));
	while (got <= n && tk_page_iter_next(&it, &want[got]) == 1) {
		assert_true(tk_page_iter_intact(&it));
		got++;
	}
	assert_int_equal(got, n);
	for (uint32_t cap = 1; cap <= 9; cap += 4) {
		got = 0;
		assert_int_equal(tk_page_iter_init(&it, f, page, page_size, NULL), 0);
		while ((ret = tk_page_iter_fill(&it, batch, cap)) > 0) {
			assert_true((uint32_t)ret <= cap);
			for (int i = 0; i < ret; i++, got++) {
				assert_true(got < n);
				assert_int_equal(batch[i].timestamp, want[got].timestamp);
				assert_ptr_equal(batch[i].data, want[got].data);
				assert_int_equal(batch[i].size, want[got].size);
				assert_int_equal(batch[i].offset, want[got].offset);
			}
		}
		assert_int_equal(ret, 0);
		assert_int_equal(got, n);
		assert_true(it.done);
		assert_int_equal(tk_page_iter_fill(&it, batch, cap), 0);
	}
	free(want);
}

static void round_trip(uint8_t long_size, bool big, uint32_t page_size)
{
	struct tk_page_format f;
	struct tk_page_writer w;
	struct tk_page_iter it;
	struct tk_page_record r;
	struct tk_page_header h;
	struct expect *exp = calloc(4096, sizeof(*exp));
	uint8_t *page = malloc(page_size), payload[300];
	uint64_t ts = 1ULL << 50;
	size_t n = 0, got = 0;
	uint32_t size = 1;

	assert_int_equal(tk_page_format_init(&f, page_size, long_size, big), 0);
	assert_int_equal(tk_page_writer_init(&w, &f, page, ts), 0);
	for (;;) {
		uint64_t gap;
		int ret;

		switch (rng() % 6) {
		case 0:
			gap = 0;
			break;
		case 1:
			gap = rng() % 1000;
			break;
		case 2:
			gap = (1ULL << 27) - 1 + rng() % 3;
			break;
		case 3:
			gap = rng() % (1ULL << 40);
			break;
		case 4:
			gap = rng() % (1ULL << 27);
			break;
		default:
			gap = 1;
			break;
		}
		ts += gap;
		if (rng() % 17 == 0) {
			/* Discarded records are skipped but their delta counts. */
			ret = tk_page_writer_add_discarded(&w, ts, 1 + rng() % 200);
			if (ret == -ENOSPC)
				break;
			assert_int_equal(ret, 0);
			ts = w.last_ts;
			continue;
		}
		if (rng() % 19 == 0) {
			ts += rng() % (1ULL << 45);
			ret = tk_page_writer_add_absolute(&w, ts);
			if (ret == -ENOSPC)
				break;
			assert_int_equal(ret, 0);
			continue;
		}
		memset(payload, (int)(n & 0xff), size);
		ret = tk_page_writer_add(&w, ts, payload, size);
		if (ret == -ENOSPC)
			break;
		assert_int_equal(ret, 0);
		exp[n].ts = ts;
		exp[n].size = size;
		exp[n].fill = (uint8_t)(n & 0xff);
		n++;
		size = size % 130 + 1;
	}
	assert_true(n > 0);
	tk_page_writer_finish(&w);

	assert_int_equal(tk_page_iter_init(&it, &f, page, page_size, &h), 0);
	assert_int_equal(h.timestamp, 1ULL << 50);
	assert_int_equal(h.data_size, w.pos);
	assert_false(h.missed_events);
	while (tk_page_iter_next(&it, &r) == 1) {
		uint32_t st = stored_size(exp[got].size);
		const uint8_t *p = r.data;

		assert_true(got < n);
		assert_int_equal(r.timestamp, exp[got].ts);
		assert_int_equal(r.size, st);
		for (uint32_t i = 0; i < st; i++)
			assert_int_equal(p[i], i < exp[got].size ? exp[got].fill : 0);
		got++;
	}
	assert_int_equal(got, n);
	assert_true(it.done);
	check_fill(&f, page, page_size, n);
	free(page);
	free(exp);
}

static void test_round_trips(void **state)
{
	(void)state;
	for (int i = 0; i < 8; i++) {
		round_trip(4, false, 4096);
		round_trip(8, false, 4096);
		round_trip(4, true, 4096);
		round_trip(8, true, 4096);
	}
	round_trip(8, false, 65536);
	round_trip(4, true, 32768);
	round_trip(8, true, 64);
}

static void test_absolute_stamp(void **state)
{
	(void)state;
	for (int v = 0; v < 2; v++) {
		struct tk_page_format f;
		struct tk_page_writer w;
		struct tk_page_iter it;
		struct tk_page_record r;
		uint8_t page[256];
		/* Top 5 bits set in the base: they survive the 59-bit stamp. */
		const uint64_t base = (0x1fULL << 59) | 12345;
		const uint64_t abs = (0x1fULL << 59) | 0x123456789abcdULL;

		assert_int_equal(tk_page_format_init(&f, sizeof(page), 8, v), 0);
		assert_int_equal(tk_page_writer_init(&w, &f, page, base), 0);
		assert_int_equal(tk_page_writer_add_absolute(&w, abs), 0);
		assert_int_equal(word_type(&f, raw_word(&w, 0)), 31);
		assert_int_equal(tk_page_writer_add(&w, abs + 7, "abcd", 4), 0);
		tk_page_writer_finish(&w);
		assert_int_equal(tk_page_iter_init(&it, &f, page, sizeof(page), NULL), 0);
		assert_int_equal(tk_page_iter_next(&it, &r), 1);
		assert_int_equal(r.timestamp, abs + 7);
		assert_memory_equal(r.data, "abcd", 4);
		assert_int_equal(tk_page_iter_next(&it, &r), 0);
	}
}

static void test_discarded(void **state)
{
	struct tk_page_format f;
	struct tk_page_writer w;
	struct tk_page_iter it;
	struct tk_page_record r;
	uint8_t page[512];
	uint32_t word;

	(void)state;
	assert_int_equal(tk_page_format_init(&f, sizeof(page), 8, false), 0);
	assert_int_equal(tk_page_writer_init(&w, &f, page, 100), 0);
	assert_int_equal(tk_page_writer_add_discarded(&w, 150, 20), 0);
	/* Padding of a 20-byte payload: 24-byte record, array[0] = 20. */
	word = raw_word(&w, 0);
	assert_int_equal(word_type(&f, word), 29);
	assert_int_equal(word_delta(&f, word), 50);
	assert_int_equal(raw_word(&w, 4), 20);
	assert_int_equal(w.pos, 24);
	/* A zero delta is written as 1, as the kernel does. */
	assert_int_equal(tk_page_writer_add_discarded(&w, 150, 200), 0);
	word = raw_word(&w, 24);
	assert_int_equal(word_delta(&f, word), 1);
	assert_int_equal(raw_word(&w, 28), 204);
	assert_int_equal(w.pos, 24 + 208);
	assert_int_equal(tk_page_writer_add(&w, 160, "xyzw", 4), 0);
	tk_page_writer_finish(&w);

	assert_int_equal(tk_page_iter_init(&it, &f, page, sizeof(page), NULL), 0);
	assert_int_equal(tk_page_iter_next(&it, &r), 1);
	assert_int_equal(r.timestamp, 160);
	assert_int_equal(r.offset, 16 + 232);
	assert_int_equal(tk_page_iter_next(&it, &r), 0);
}

static void test_missed(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		uint8_t long_size = v & 1 ? 8 : 4;
		bool big = v & 2;
		struct tk_page_format f;
		struct tk_page_writer w;
		struct tk_page_header h;
		struct tk_page_iter it;
		struct tk_page_record r;
		uint8_t *page = malloc(4096), payload[64] = {0};
		uint64_t commit;
		int ret, n = 0;

		assert_int_equal(tk_page_format_init(&f, 4096, long_size, big), 0);

		/* Stored count: the commit word is sign-extended on 64-bit longs. */
		assert_int_equal(tk_page_writer_init(&w, &f, page, 77), 0);
		tk_page_writer_set_missed(&w, true, 256);
		/* Fill the page: the count's room stays reserved. */
		while ((ret = tk_page_writer_add(&w, 77, payload, 60)) == 0)
			n++;
		assert_errno(ret, ENOSPC);
		assert_true(w.pos + long_size <= 4096 - f.data_offset);
		/* Top up with the smallest records: still short of the count. */
		while (tk_page_writer_add(&w, 77, payload, 4) == 0)
			n++;
		assert_true(w.pos + long_size <= 4096 - f.data_offset);
		assert_true(w.pos + long_size + 8 > 4096 - f.data_offset);
		tk_page_writer_finish(&w);
		if (long_size == 8) {
			commit = tk_load_u64(page + 8, big);
			assert_int_equal(commit, 0xffffffffc0000000ULL | w.pos);
			assert_int_equal(tk_load_u64(page + f.data_offset + w.pos, big), 256);
		} else {
			commit = tk_load_u32(page + 8, big);
			assert_int_equal(commit, 0xc0000000U | w.pos);
			assert_int_equal(tk_load_u32(page + f.data_offset + w.pos, big), 256);
		}
		assert_int_equal(tk_page_iter_init(&it, &f, page, 4096, &h), 0);
		assert_true(h.missed_events);
		assert_true(h.missed_stored);
		assert_int_equal(h.missed_count, 256);
		assert_int_equal(h.data_size, w.pos);
		while (tk_page_iter_next(&it, &r) == 1)
			n--;
		assert_int_equal(n, 0);

		/* Missed without a count. */
		assert_int_equal(tk_page_writer_init(&w, &f, page, 77), 0);
		tk_page_writer_set_missed(&w, false, 999);
		assert_int_equal(tk_page_writer_add(&w, 78, payload, 8), 0);
		tk_page_writer_finish(&w);
		if (long_size == 8)
			assert_int_equal(tk_load_u64(page + 8, big), 0xffffffff80000010ULL);
		else
			assert_int_equal(tk_load_u32(page + 8, big), 0x80000010U);
		assert_int_equal(tk_page_read_header(&f, page, 4096, &h), 0);
		assert_true(h.missed_events);
		assert_false(h.missed_stored);
		assert_int_equal(h.data_size, 16);
		/* Nothing is stored after the data. */
		assert_int_equal(tk_load_u32(page + f.data_offset + 16, big), 0);

		/* A count that does not fit a 32-bit long saturates. */
		assert_int_equal(tk_page_writer_init(&w, &f, page, 77), 0);
		tk_page_writer_set_missed(&w, true, 1ULL << 40);
		tk_page_writer_finish(&w);
		assert_int_equal(tk_page_read_header(&f, page, 4096, &h), 0);
		assert_int_equal(h.missed_count, long_size == 8 ? 1ULL << 40 : UINT32_MAX);
		free(page);
	}
}

static void test_page_full(void **state)
{
	struct tk_page_format f;
	struct tk_page_writer w, saved;
	uint8_t page[64], copy[64], payload[64];

	(void)state;
	memset(payload, 0x3c, sizeof(payload));
	assert_int_equal(tk_page_format_init(&f, sizeof(page), 8, true), 0);
	assert_int_equal(tk_page_writer_init(&w, &f, page, 1), 0);
	/* 48 data bytes: a 40-byte record leaves 8. */
	assert_int_equal(tk_page_writer_add(&w, 2, payload, 36), 0);
	memcpy(copy, page, sizeof(page));
	saved = w;
	assert_errno(tk_page_writer_add(&w, 3, payload, 8), ENOSPC);
	/* Room for the record but not for the time extend it needs. */
	assert_errno(tk_page_writer_add(&w, 3ULL << 30, payload, 4), ENOSPC);
	assert_errno(tk_page_writer_add_discarded(&w, 3, 8), ENOSPC);
	assert_errno(tk_page_writer_add(&w, 3, payload, 64), ENOSPC);
	assert_memory_equal(page, copy, sizeof(page));
	assert_int_equal(w.pos, saved.pos);
	assert_int_equal(w.last_ts, saved.last_ts);
	assert_int_equal(tk_page_writer_add(&w, 3, payload, 4), 0);
	assert_errno(tk_page_writer_add_absolute(&w, 9), ENOSPC);
	assert_int_equal(w.pos, 48);
	/* Writer format errors. */
	f.long_size = 3;
	assert_errno(tk_page_writer_init(&w, &f, page, 1), EINVAL);
}

/* ---- corrupt pages ---- */

static uint8_t *le_page(uint32_t commit)
{
	uint8_t *p = calloc(1, 256);

	assert_non_null(p);
	tk_store_u64(p, 1000, false);
	tk_store_u64(p + 8, commit, false);
	return p;
}

static void expect_bad_record(uint8_t *page, uint32_t bad_offset)
{
	struct tk_page_format f;
	struct tk_page_iter it;
	struct tk_page_record r = {0};
	int ret;

	assert_int_equal(tk_page_format_init(&f, 256, 8, false), 0);
	assert_int_equal(tk_page_iter_init(&it, &f, page, 256, NULL), 0);
	assert_false(tk_page_iter_intact(&it));
	while ((ret = tk_page_iter_next(&it, &r)) == 1)
		assert_false(tk_page_iter_intact(&it));
	assert_errno(ret, EBADMSG);
	assert_int_equal(r.offset, bad_offset);
	/* The iterator stays on the bad record. */
	r.offset = 0;
	assert_errno(tk_page_iter_next(&it, &r), EBADMSG);
	assert_int_equal(r.offset, bad_offset);

	/* In batches: the good records first, then the same error, again and again. */
	for (uint32_t cap = 1; cap <= 64; cap *= 4) {
		struct tk_page_record batch[64];
		int good = 0, fill;

		assert_int_equal(tk_page_iter_init(&it, &f, page, 256, NULL), 0);
		while ((ret = tk_page_iter_next(&it, &r)) == 1)
			good++;
		assert_int_equal(tk_page_iter_init(&it, &f, page, 256, NULL), 0);
		while ((fill = tk_page_iter_fill(&it, batch, cap)) > 0)
			good -= fill;
		assert_int_equal(good, 0);
		assert_errno(fill, EBADMSG);
		assert_int_equal(batch[0].offset, bad_offset);
		batch[0].offset = 0;
		assert_errno(tk_page_iter_fill(&it, batch, cap), EBADMSG);
		assert_int_equal(batch[0].offset, bad_offset);
	}
	free(page);
}

static void test_corrupt(void **state)
{
	struct tk_page_format f;
	struct tk_page_header h;
	struct tk_page_iter it;
	uint8_t *p;

	(void)state;
	assert_int_equal(tk_page_format_init(&f, 256, 8, false), 0);

	/* Commit larger than the page. */
	p = le_page(241);
	assert_errno(tk_page_read_header(&f, p, 256, &h), EBADMSG);
	assert_errno(tk_page_iter_init(&it, &f, p, 256, NULL), EBADMSG);
	/* Stored count that does not fit after the data. */
	tk_store_u64(p + 8, 0xffffffffc0000000ULL | 236, false);
	assert_errno(tk_page_read_header(&f, p, 256, &h), EBADMSG);
	tk_store_u64(p + 8, 0xffffffffc0000000ULL | 232, false);
	assert_int_equal(tk_page_read_header(&f, p, 256, &h), 0);
	/* Shorter buffer than the page size. */
	assert_errno(tk_page_read_header(&f, p, 255, &h), EBADMSG);
	free(p);

	/* Data record running past the data: type_len 28 with 8 bytes left. */
	p = le_page(16);
	tk_store_u32(p + 16, 1, false);	 /* 8-byte record */
	tk_store_u32(p + 24, 28, false); /* 116-byte record */
	expect_bad_record(p, 24);

	/* Type 0 with array[0] < 4. */
	for (uint32_t a = 0; a < 4; a++) {
		p = le_page(64);
		tk_store_u32(p + 16, 0, false);
		tk_store_u32(p + 20, a, false);
		expect_bad_record(p, 16);
	}
	/* Type 0 past the data, and with a huge length that would wrap. */
	p = le_page(64);
	tk_store_u32(p + 20, 64, false);
	expect_bad_record(p, 16);
	p = le_page(64);
	tk_store_u32(p + 20, 0xfffffffc, false);
	expect_bad_record(p, 16);
	/* Type 0 whose length word is cut off. */
	p = le_page(12);
	tk_store_u32(p + 16, 1, false);
	tk_store_u32(p + 24, 0, false);
	expect_bad_record(p, 24);
	p = le_page(12);
	tk_store_u32(p + 16, 1, false);
	tk_store_u32(p + 24, 30, false); /* time extend with no array word */
	expect_bad_record(p, 24);
	/* Discarded padding past the data, and with a tiny length. */
	p = le_page(32);
	tk_store_u32(p + 16, 29 | (5 << 5), false);
	tk_store_u32(p + 20, 100, false);
	expect_bad_record(p, 16);
	p = le_page(32);
	tk_store_u32(p + 16, 29 | (5 << 5), false);
	tk_store_u32(p + 20, 2, false);
	expect_bad_record(p, 16);
	/* A data size that is not a multiple of 4 leaves stray bytes. */
	p = le_page(10);
	tk_store_u32(p + 16, 1, false);
	expect_bad_record(p, 24);
	/* Big-endian words decode with type_len in the top bits. */
	{
		uint8_t *b = calloc(1, 256);
		struct tk_page_record r;

		assert_int_equal(tk_page_format_init(&f, 256, 4, true), 0);
		tk_store_u32(b + 8, 8, true);
		tk_store_u32(b + 12, (2U << 27) | 5, true); /* type_len 2 needs 12 bytes */
		assert_int_equal(tk_page_iter_init(&it, &f, b, 256, NULL), 0);
		assert_errno(tk_page_iter_next(&it, &r), EBADMSG);
		assert_int_equal(r.offset, 12);
		tk_store_u32(b + 8, 12, true);
		assert_int_equal(tk_page_iter_init(&it, &f, b, 256, NULL), 0);
		assert_int_equal(tk_page_iter_next(&it, &r), 1);
		assert_int_equal(r.timestamp, 5);
		assert_int_equal(r.size, 8);
		free(b);
	}
}

/* ---- live kernel ---- */

static char instance[128];
/* Closed by the teardown too: an open trace_pipe_raw makes rmdir fail. */
static int live_fd = -1;

static int live_setup(void **state)
{
	(void)state;
	instance[0] = 0;
	if (geteuid() != 0 || access(TRACEFS "/instances", W_OK) != 0)
		return 0;
	snprintf(instance, sizeof(instance), TRACEFS "/instances/tk-test-page-%d", (int)getpid());
	if (mkdir(instance, 0755) < 0) {
		fprintf(stderr, "mkdir %s: %s\n", instance, strerror(errno));
		instance[0] = 0;
		return -1;
	}
	return 0;
}

static int live_teardown(void **state)
{
	(void)state;
	if (live_fd >= 0)
		close(live_fd);
	live_fd = -1;
	if (instance[0] && rmdir(instance) < 0) {
		fprintf(stderr, "rmdir %s: %s\n", instance, strerror(errno));
		return -1;
	}
	instance[0] = 0;
	return 0;
}

static size_t read_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, cap - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = 0;
	return (size_t)n;
}

static void test_live_kernel(void **state)
{
	static const char *const msgs[] = {
		"tk-page-live-one", "tk-page-live-two",
		"tk-page-live-three: a marker long enough for a type_len 0 record, which needs "
		"more than one hundred and twelve bytes of payload in the ring buffer"};
	bool found[3] = {false, false, false};
	struct tk_page_format f;
	char path[256], text[1024];
	unsigned print_id = 0;
	uint8_t *page;
	size_t n;
	long ncpu;
	int records = 0;

	(void)state;
	if (geteuid() != 0) {
		printf("SKIP: live page test needs root\n");
		skip();
	}
	if (!instance[0]) {
		printf("SKIP: tracefs instances not available at " TRACEFS "\n");
		skip();
	}

	snprintf(path, sizeof(path), "%s/events/header_page", instance);
	n = read_text(path, text, sizeof(text));
	assert_int_equal(tk_page_format_parse(&f, text, n, false), 0);
	read_text(TRACEFS "/events/ftrace/print/format", text, sizeof(text));
	assert_non_null(strstr(text, "ID: "));
	print_id = (unsigned)atoi(strstr(text, "ID: ") + 4);
	assert_true(print_id > 0);

	snprintf(path, sizeof(path), "%s/trace_marker", instance);
	live_fd = open(path, O_WRONLY);
	assert_true(live_fd >= 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(write(live_fd, msgs[i], strlen(msgs[i])),
				 (ssize_t)strlen(msgs[i]));
	close(live_fd);
	live_fd = -1;

	page = malloc(f.page_size);
	assert_non_null(page);
	ncpu = sysconf(_SC_NPROCESSORS_CONF);
	for (long cpu = 0; cpu < ncpu; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%ld/trace_pipe_raw", instance, cpu);
		live_fd = open(path, O_RDONLY | O_NONBLOCK);
		if (live_fd < 0)
			continue;
		for (;;) {
			struct tk_page_iter it;
			struct tk_page_record r;
			uint64_t last = 0;
			ssize_t got = read(live_fd, page, f.page_size);
			int ret;

			if (got < 0 && errno != EAGAIN)
				fail_msg("read %s: %s", path, strerror(errno));
			if (got <= 0)
				break;
			assert_int_equal(got, f.page_size);
			assert_int_equal(tk_page_iter_init(&it, &f, page, f.page_size, NULL), 0);
			while ((ret = tk_page_iter_next(&it, &r)) == 1) {
				const char *s = (const char *)r.data + 16;

				records++;
				assert_true(r.timestamp >= last);
				last = r.timestamp;
				if (tk_load_u16(r.data, false) != print_id || r.size <= 16)
					continue;
				for (int i = 0; i < 3; i++) {
					size_t l = strlen(msgs[i]);

					if (r.size - 16 >= l && !memcmp(s, msgs[i], l))
						found[i] = true;
				}
			}
			if (ret < 0)
				fail_msg("cpu%ld: %s", cpu, tk_errmsg());
		}
		close(live_fd);
		live_fd = -1;
	}
	free(page);
	assert_true(records >= 3);
	for (int i = 0; i < 3; i++)
		if (!found[i])
			fail_msg("marker '%s' not found in %d records", msgs[i], records);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse_kernel),
		cmocka_unit_test(test_format_parse_errors),
		cmocka_unit_test(test_format_init_and_text),
		cmocka_unit_test(test_decode_real_page),
		cmocka_unit_test(test_decode_spec_examples),
		cmocka_unit_test(test_encoding_rules),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_absolute_stamp),
		cmocka_unit_test(test_discarded),
		cmocka_unit_test(test_missed),
		cmocka_unit_test(test_page_full),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test_setup_teardown(test_live_kernel, live_setup, live_teardown),
	};

	/* A fresh machine may not have tracefs mounted yet: mount it as record does. */
	if (geteuid() == 0)
		tk_tracefs_root();

	return cmocka_run_group_tests(tests, NULL, NULL);
}
