// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the Perfetto writer: the protobuf encoder of pftrace-proto.h
 * byte for byte (varints at every length boundary, negative values,
 * nested messages whose length needs one, two or three bytes, the padded
 * four-byte length), then tk_pftrace_write_dat() on the sample .dat read
 * back with a small wire-format walker: every top-level field a packet,
 * the events all there plain, deflated and zstd-compressed, and a split
 * handing out pieces through the callback. Options it refuses, too.
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
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <tracekit/dat.h>
#include <tracekit/pftrace.h>

#include "pftrace-proto.h"
#include "tk-test.h"

/* ------------------------------------------------------------ walker */

struct pb_field {
	uint32_t num;
	unsigned int wire;
	uint64_t v;
	const uint8_t *p; /* PB_LEN: the bytes */
	size_t len;
};

static bool rd_varint(const uint8_t *b, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 70; s += 7) {
		if (*i >= n)
			return false;
		*v |= (uint64_t)(b[*i] & 0x7f) << s;
		if (!(b[(*i)++] & 0x80))
			return true;
	}
	return false;
}

/* The next field of a message; false at the end. Fails the test on bad bytes. */
static bool next_field(const uint8_t *b, size_t n, size_t *i, struct pb_field *f)
{
	uint64_t key;

	if (*i >= n)
		return false;
	assert_true(rd_varint(b, n, i, &key));
	f->num = (uint32_t)(key >> 3);
	f->wire = key & 7;
	if (f->wire == PB_VARINT) {
		assert_true(rd_varint(b, n, i, &f->v));
	} else {
		assert_int_equal(f->wire, PB_LEN);
		assert_true(rd_varint(b, n, i, &f->v));
		assert_true(f->v <= n - *i);
		f->p = b + *i;
		f->len = (size_t)f->v;
		*i += f->len;
	}
	return true;
}

/* ----------------------------------------------------------- encoder */

static void test_varints(void **state)
{
	static const struct {
		uint64_t v;
		size_t n;
		uint8_t b[10];
	} cases[] = {
		{0, 1, {0}},
		{1, 1, {1}},
		{127, 1, {0x7f}},
		{128, 2, {0x80, 1}},
		{300, 2, {0xac, 2}},
		{16383, 2, {0xff, 0x7f}},
		{16384, 3, {0x80, 0x80, 1}},
		{UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}},
	};
	struct tk_bytebuf b;

	(void)state;
	tk_bytebuf_init(&b, false);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		tk_bytebuf_reset(&b);
		pb_varint(&b, cases[k].v);
		assert_int_equal(b.len, cases[k].n);
		assert_int_equal(pb_varint_size(cases[k].v), cases[k].n);
		assert_memory_equal(b.data, cases[k].b, cases[k].n);
	}
	/* int32 -1 is the 10-byte varint of the sign-extended value. */
	tk_bytebuf_reset(&b);
	pb_int(&b, 2, -1);
	assert_int_equal(b.len, 11);
	assert_int_equal(b.data[0], 2 << 3 | PB_VARINT);
	assert_int_equal(b.data[10], 1);
	/* A key of a field number past 15 takes two bytes: 66 (perf_sample). */
	tk_bytebuf_reset(&b);
	pb_key(&b, 66, PB_LEN);
	assert_int_equal(b.len, 2);
	assert_int_equal(b.data[0], 0x92);
	assert_int_equal(b.data[1], 0x04);
	assert_int_equal(tk_bytebuf_error(&b), 0);
	tk_bytebuf_release(&b);
}

/* A nested message of @len bytes of body, after and before other fields. */
static void nested_of(size_t len)
{
	struct tk_bytebuf b;
	struct pb_field f;
	size_t start, i = 0;
	uint8_t *body = malloc(len + 1);

	assert_non_null(body);
	for (size_t k = 0; k < len; k++)
		body[k] = (uint8_t)(k * 7 + 1);
	tk_bytebuf_init(&b, false);
	pb_uint(&b, 1, 42);
	start = pb_begin(&b, 2);
	tk_bytebuf_put(&b, body, len);
	pb_end(&b, start);
	pb_str(&b, 3, "after");
	assert_int_equal(tk_bytebuf_error(&b), 0);
	assert_int_equal(b.len, 2 + 1 + pb_varint_size(len) + len + 2 + 5);

	assert_true(next_field(b.data, b.len, &i, &f));
	assert_int_equal(f.num, 1);
	assert_int_equal(f.v, 42);
	assert_true(next_field(b.data, b.len, &i, &f));
	assert_int_equal(f.num, 2);
	assert_int_equal(f.len, len);
	assert_memory_equal(f.p, body, len);
	assert_true(next_field(b.data, b.len, &i, &f));
	assert_int_equal(f.num, 3);
	assert_int_equal(f.len, 5);
	assert_memory_equal(f.p, "after", 5);
	assert_false(next_field(b.data, b.len, &i, &f));
	tk_bytebuf_release(&b);
	free(body);
}

static void test_nested(void **state)
{
	static const size_t lens[] = {0, 1, 127, 128, 129, 16383, 16384, 100000};

	(void)state;
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
		nested_of(lens[k]);
}

static void test_nested_long(void **state)
{
	static const size_t lens[] = {0, 5, 200, 70000};
	struct tk_bytebuf b;
	struct pb_field f;

	(void)state;
	tk_bytebuf_init(&b, false);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t start, i = 0, inner;

		tk_bytebuf_reset(&b);
		start = pb_begin_long(&b, 1);
		/* A short message inside the long one moves nothing of its parent. */
		inner = pb_begin(&b, 4);
		pb_uint(&b, 1, 7);
		pb_end(&b, inner);
		tk_bytebuf_put_zeros(&b, lens[k]);
		pb_end_long(&b, start);
		assert_int_equal(tk_bytebuf_error(&b), 0);
		/* Key, four length bytes (0x80-continued), body. */
		assert_int_equal(b.len, 1 + 4 + 4 + lens[k]);
		assert_true(b.data[1] & 0x80);
		assert_true(b.data[3] & 0x80);
		assert_false(b.data[4] & 0x80);
		assert_true(next_field(b.data, b.len, &i, &f));
		assert_int_equal(f.num, 1);
		assert_int_equal(f.len, 4 + lens[k]);
		assert_int_equal(f.p[0], 4 << 3 | PB_LEN);
		assert_int_equal(f.p[1], 2);
		assert_false(next_field(b.data, b.len, &i, &f));
	}
	tk_bytebuf_release(&b);
}

/* ------------------------------------------------------------- writer */

static char *sample_path(void)
{
	const char *src = getenv("TK_SOURCE_DIR");
	char *p = NULL;

	assert_true(asprintf(&p, "%s/tests/data/sample-v7-zstd.dat", src ? src : ".") > 0);
	return p;
}

static uint8_t *read_fd(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc((size_t)n + 1);

	assert_true(n >= 0);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)n, 0), n);
	*len = (size_t)n;
	return b;
}

struct counts {
	uint64_t packets, bundles, events, compact, compressed;
};

static void count_trace(const uint8_t *b, size_t n, struct counts *c);

static void count_packet(const uint8_t *p, size_t n, struct counts *c)
{
	struct pb_field f, g, h;
	size_t i = 0;

	c->packets++;
	while (next_field(p, n, &i, &f)) {
		if (f.num == 50 || f.num == 133) {
			/* A compressed run of packets: open it up and count those. */
			size_t cap = 4u << 20, out = cap;
			uint8_t *u = malloc(cap);

			assert_non_null(u);
			if (f.num == 50) {
				uLongf dl = cap;

				assert_int_equal(uncompress(u, &dl, f.p, f.len), Z_OK);
				out = dl;
			} else {
				out = ZSTD_decompress(u, cap, f.p, f.len);
				assert_false(ZSTD_isError(out));
			}
			c->compressed++;
			c->packets--;
			count_trace(u, out, c);
			free(u);
		} else if (f.num == 1) {
			size_t j = 0;

			c->bundles++;
			while (next_field(f.p, f.len, &j, &g)) {
				if (g.num == 2)
					c->events++;
				if (g.num == 4) {
					size_t k = 0;

					/* switch_timestamp (1) and waking_timestamp (7): one varint
					 * each */
					while (next_field(g.p, g.len, &k, &h)) {
						size_t q = 0;
						uint64_t v;

						if (h.num != 1 && h.num != 7)
							continue;
						while (q < h.len) {
							assert_true(rd_varint(h.p, h.len, &q, &v));
							c->compact++;
						}
					}
				}
			}
		}
	}
}

static void count_trace(const uint8_t *b, size_t n, struct counts *c)
{
	struct pb_field f;
	size_t i = 0;

	while (next_field(b, n, &i, &f)) {
		assert_int_equal(f.num, 1);
		assert_int_equal(f.wire, PB_LEN);
		count_packet(f.p, f.len, c);
	}
}

static void write_and_count(enum tk_compression codec, struct counts *c,
			    struct tk_pftrace_stats *st)
{
	char *path = sample_path();
	struct tk_dat *dat = tk_dat_open(path);
	TK_OPTS(tk_pftrace_opts, opts, .compression = codec);
	int fd = memfd_create("pftrace", 0);
	size_t len;
	uint8_t *b;

	assert_non_null(dat);
	assert_true(fd >= 0);
	assert_int_equal(tk_pftrace_write_dat(dat, fd, "mem", &opts, st), 0);
	b = read_fd(fd, &len);
	assert_int_equal(len, st->bytes);
	memset(c, 0, sizeof(*c));
	count_trace(b, len, c);
	free(b);
	close(fd);
	tk_dat_close(dat);
	free(path);
}

static void test_write_dat(void **state)
{
	static const enum tk_compression codecs[] = {TK_COMPRESS_NONE, TK_COMPRESS_ZLIB,
						     TK_COMPRESS_ZSTD};
	struct tk_pftrace_stats st;
	struct counts c;

	(void)state;
	for (size_t k = 0; k < 3; k++) {
		write_and_count(codecs[k], &c, &st);
		/* The sample has 1748 records on 2 CPUs (tracekit report). */
		assert_int_equal(st.events, 1748);
		assert_int_equal(st.cpus, 2);
		assert_int_equal(st.pieces, 1);
		assert_int_equal(c.events + c.compact, 1748);
		assert_int_equal(c.compact, st.compact);
		assert_true(c.compact > 0);
		assert_int_equal(c.packets, st.packets);
		assert_int_equal(c.compressed > 0, codecs[k] != TK_COMPRESS_NONE);
	}
}

static int piece_calls;

static int next_piece(void *ctx, unsigned int index)
{
	(void)ctx;
	(void)index;
	piece_calls++;
	return -ENOSPC;
}

static void test_bad_opts(void **state)
{
	char *path = sample_path();
	struct tk_dat *dat = tk_dat_open(path);
	struct tk_pftrace_stats st;
	int fd = memfd_create("pftrace", 0);

	(void)state;
	assert_non_null(dat);
	{
		TK_OPTS(tk_pftrace_opts, opts, .split_size = 4096, .next_piece = next_piece);

		assert_errno(tk_pftrace_write_dat(dat, fd, "mem", &opts, &st), EINVAL);
	}
	{
		TK_OPTS(tk_pftrace_opts, opts, .split_size = 8u << 20);

		assert_errno(tk_pftrace_write_dat(dat, fd, "mem", &opts, &st), EINVAL);
	}
	/* A small file never reaches a split of 1 MiB: no piece is asked for. */
	{
		TK_OPTS(tk_pftrace_opts, opts, .split_size = 1u << 20, .next_piece = next_piece);

		piece_calls = 0;
		assert_int_equal(tk_pftrace_write_dat(dat, fd, "mem", &opts, &st), 0);
		assert_int_equal(piece_calls, 0);
		assert_int_equal(st.pieces, 1);
	}
	close(fd);
	tk_dat_close(dat);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varints),	    cmocka_unit_test(test_nested),
		cmocka_unit_test(test_nested_long), cmocka_unit_test(test_write_dat),
		cmocka_unit_test(test_bad_opts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
