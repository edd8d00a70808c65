// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the Parquet writer's encoders (export/parquet-thrift.c) and of
 * the files it writes (export/parquet.c): Thrift compact bytes against the
 * protocol's rules worked by hand, the RLE / bit-packing hybrid through a
 * decoder written here from the format's description, and whole files
 * walked back through a compact-protocol reader that pulls out the row
 * counts, the statistics and the page headers. tests/cli/test-parquet.sh
 * has DuckDB read the same files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "tk-test.h"
#include "parquet-internal.h"

/* ------------------------------------------------------ thrift bytes */

static void test_thrift_fields(void **state)
{
	struct tk_bytebuf b;
	struct tk_thrift t;

	(void)state;
	tk_bytebuf_init(&b, false);
	tk_thrift_init(&t, &b);
	tk_thrift_i32(&t, 1, 1);	/* delta 1, i32: 0x15; zigzag(1) = 2 */
	tk_thrift_i64(&t, 2, -1);	/* delta 1, i64: 0x16; zigzag(-1) = 1 */
	tk_thrift_i32(&t, 20, 300);	/* delta 18 > 15: 0x05, zigzag(20) = 40, 600: d8 04 */
	tk_thrift_bool(&t, 21, true);	/* 0x11 */
	tk_thrift_bool(&t, 22, false);	/* 0x12 */
	tk_thrift_string(&t, 23, "ab"); /* 0x18 2 'a' 'b' */
	tk_thrift_struct_begin(&t, 24); /* 0x1c */
	tk_thrift_i32(&t, 3, 0);	/* ids restart in the struct: 0x35 0 */
	tk_thrift_struct_end(&t);	/* 0 */
	tk_thrift_i32(&t, 25, 0);	/* delta from 24: 0x15 0 */
	assert_int_equal(tk_bytebuf_error(&b), 0);
	assert_int_equal(b.len, 20);
	assert_memory_equal(b.data,
			    "\x15\x02\x16\x01\x05\x28\xd8\x04\x11\x12\x18\x02"
			    "ab\x1c\x35\x00\x00\x15\x00",
			    20);
	tk_bytebuf_release(&b);
}

static void test_thrift_lists(void **state)
{
	struct tk_bytebuf b;
	struct tk_thrift t;

	(void)state;
	tk_bytebuf_init(&b, false);
	tk_thrift_init(&t, &b);
	tk_thrift_list_begin(&t, 1, TK_THRIFT_I32, 2);	   /* 0x19, then 0x25 */
	tk_thrift_elem_i32(&t, 8);			   /* 16 */
	tk_thrift_elem_i32(&t, -2);			   /* 3 */
	tk_thrift_list_begin(&t, 2, TK_THRIFT_STRUCT, 20); /* 0x19, 0xfc, 20 */
	assert_memory_equal(b.data, "\x19\x25\x10\x03\x19\xfc\x14", 7);
	assert_int_equal(b.len, 7);
	tk_bytebuf_reset(&b);
	tk_thrift_varint(&b, 0);
	tk_thrift_varint(&b, 127);
	tk_thrift_varint(&b, 128);
	tk_thrift_varint(&b, UINT64_MAX);
	assert_int_equal(b.len, 1 + 1 + 2 + 10);
	assert_memory_equal(b.data, "\x00\x7f\x80\x01\xff", 5);
	assert_int_equal(b.data[13], 0x01);
	tk_bytebuf_release(&b);
}

/* ---------------------------------------------------------- hybrid */

static uint64_t get_uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t c = *(*p)++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
		shift += 7;
	}
	return v;
}

/* Decode the hybrid as the format describes it; returns the count decoded. */
static size_t hybrid_decode(const uint8_t *p, size_t len, int width, uint32_t *out, size_t max)
{
	const uint8_t *end = p + len;
	size_t n = 0;

	while (p < end && n < max) {
		uint64_t h = get_uleb(&p, end);

		if (h & 1) {
			size_t count = (size_t)(h >> 1) * 8;
			uint64_t acc = 0;
			int bits = 0;

			for (size_t i = 0; i < count; i++) {
				while (bits < width) {
					assert_true(p < end);
					acc |= (uint64_t)*p++ << bits;
					bits += 8;
				}
				if (n < max)
					out[n++] = (uint32_t)(acc & ((1ull << width) - 1));
				acc >>= width;
				bits -= width;
			}
		} else {
			size_t count = (size_t)(h >> 1);
			uint32_t v = 0;

			for (int i = 0; i < (width + 7) / 8; i++)
				v |= (uint32_t)*p++ << (8 * i);
			assert_true(count >= 8);
			for (size_t i = 0; i < count && n < max; i++)
				out[n++] = v;
		}
	}
	return n;
}

static void test_hybrid_bytes(void **state)
{
	uint32_t ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	uint32_t three[3] = {1, 2, 3};
	struct tk_bytebuf b;

	(void)state;
	tk_bytebuf_init(&b, false);
	tk_parquet_rle_hybrid(&b, ten, 10, 1); /* one RLE run: (10 << 1), value 1 */
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.data, "\x14\x01", 2);
	tk_bytebuf_reset(&b);
	/* one bit-packed group: header 3; 1 | 2 << 2 | 3 << 4 = 0x39, then padding */
	tk_parquet_rle_hybrid(&b, three, 3, 2);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "\x03\x39\x00", 3);
	tk_bytebuf_release(&b);
}

static void test_hybrid_round_trip(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint32_t *vals = malloc(5000 * sizeof(*vals));
	uint32_t *back = malloc(5008 * sizeof(*back));
	struct tk_bytebuf b;

	(void)state;
	assert_non_null(vals);
	assert_non_null(back);
	tk_bytebuf_init(&b, false);
	for (int width = 1; width <= 32; width++) {
		for (int shape = 0; shape < 3; shape++) {
			size_t n = 1 + tk_test_xorshift(&seed) % 5000;
			uint64_t mask = width == 32 ? UINT32_MAX : (1ull << width) - 1;

			/* random values; long runs; runs that start off a group boundary */
			for (size_t i = 0; i < n; i++) {
				uint64_t r = tk_test_xorshift(&seed);

				if (shape == 0)
					vals[i] = (uint32_t)(r & mask);
				else if (shape == 1)
					vals[i] = (uint32_t)((i / 37) & mask);
				else
					vals[i] = i % 13 < 3 ? (uint32_t)(r & mask) : 1;
			}
			tk_bytebuf_reset(&b);
			tk_parquet_rle_hybrid(&b, vals, n, width);
			assert_int_equal(tk_bytebuf_error(&b), 0);
			assert_int_equal(hybrid_decode(b.data, b.len, width, back, n), n);
			assert_memory_equal(vals, back, n * sizeof(*vals));
		}
	}
	tk_bytebuf_release(&b);
	free(vals);
	free(back);
}

static int64_t zz(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Decode DELTA_BINARY_PACKED as the format describes it; returns the count. */
static size_t delta_decode(const uint8_t *p, size_t len, int64_t *out, size_t max)
{
	const uint8_t *end = p + len;
	uint64_t block = get_uleb(&p, end), minis = get_uleb(&p, end);
	uint64_t total = get_uleb(&p, end);
	uint64_t per = block / minis;
	int64_t last = zz(get_uleb(&p, end));
	size_t n = 0;

	if (total && n < max)
		out[n++] = last;
	while (n < total && n < max) {
		int64_t min = zz(get_uleb(&p, end));
		const uint8_t *widths = p;

		p += minis;
		for (uint64_t m = 0; m < minis && n < total; m++) {
			uint64_t acc_bits = 0;

			for (uint64_t i = 0; i < per; i++) {
				uint64_t d = 0;

				for (int b = 0; b < widths[m]; b++, acc_bits++)
					d |= (uint64_t)((p[acc_bits / 8] >> (acc_bits % 8)) & 1)
					     << b;
				if (n < total && n < max) {
					last = (int64_t)((uint64_t)last + d + (uint64_t)min);
					out[n++] = last;
				}
			}
			p += per * widths[m] / 8;
		}
	}
	return n;
}

static void test_delta_round_trip(void **state)
{
	uint64_t seed = 0x2545f4914f6cdd1dull;
	int64_t *vals = malloc(3000 * sizeof(*vals));
	int64_t *back = malloc(3000 * sizeof(*back));
	struct tk_bytebuf b;

	(void)state;
	assert_non_null(vals);
	assert_non_null(back);
	tk_bytebuf_init(&b, false);
	for (int shape = 0; shape < 5; shape++) {
		for (size_t n = 1; n < 3000; n += 1 + n / 3) {
			for (size_t i = 0; i < n; i++) {
				uint64_t r = tk_test_xorshift(&seed);

				/* times, a constant, extremes, random 64-bit, counting down */
				vals[i] = shape == 0   ? (int64_t)(1000000 + i * 300 + r % 200)
					  : shape == 1 ? 42
					  : shape == 2 ? (i % 2 ? INT64_MAX : INT64_MIN)
					  : shape == 3 ? (int64_t)r
						       : -(int64_t)i;
			}
			tk_bytebuf_reset(&b);
			tk_parquet_delta(&b, vals, n);
			assert_int_equal(tk_bytebuf_error(&b), 0);
			assert_int_equal(delta_decode(b.data, b.len, back, n), n);
			assert_memory_equal(vals, back, n * sizeof(*vals));
		}
	}
	/* 129 counting values: a header, then one block of min delta 1 and width 0 */
	for (int i = 0; i < 129; i++)
		vals[i] = 5 + i;
	tk_bytebuf_reset(&b);
	tk_parquet_delta(&b, vals, 129);
	assert_int_equal(b.len, 4 + 2 + 1 + 4);
	assert_memory_equal(b.data, "\x80\x01\x04\x81\x01\x0a\x02\x00\x00\x00\x00", 11);
	tk_bytebuf_release(&b);
	free(vals);
	free(back);
}

/* ------------------------------------------------- compact reader */

struct rd {
	const uint8_t *p, *end;
};

/* What the walk collects from a FileMetaData and the pages it points at. */
struct seen {
	int64_t num_rows;
	int64_t rg_rows[16];
	int nrg;
	int nschema;
	int64_t data_page_offset[16][8]; /* [row group][column] */
	int64_t dict_offset[16][8];
	uint8_t min[16][8][16], max[16][8][16];
	size_t minlen[16][8], maxlen[16][8];
	int ncols;
};

static void skip_value(struct rd *r, int type);

static void skip_struct(struct rd *r)
{
	for (;;) {
		uint8_t h = *r->p++;
		int type = h & 0x0f;

		if (!h)
			return;
		if (!(h >> 4))
			get_uleb(&r->p, r->end);
		skip_value(r, type);
	}
}

static void skip_value(struct rd *r, int type)
{
	switch (type) {
	case TK_THRIFT_TRUE:
	case TK_THRIFT_FALSE:
		break;
	case TK_THRIFT_BYTE:
		r->p++;
		break;
	case TK_THRIFT_I16:
	case TK_THRIFT_I32:
	case TK_THRIFT_I64:
		get_uleb(&r->p, r->end);
		break;
	case TK_THRIFT_BINARY:
		r->p += get_uleb(&r->p, r->end);
		break;
	case TK_THRIFT_LIST: {
		uint8_t h = *r->p++;
		uint64_t n = h >> 4;

		if (n == 15)
			n = get_uleb(&r->p, r->end);
		for (uint64_t i = 0; i < n; i++)
			skip_value(r, h & 0x0f);
		break;
	}
	case TK_THRIFT_STRUCT:
		skip_struct(r);
		break;
	default:
		fail_msg("thrift type %d", type);
	}
}

/* Walk the fields of a struct, calling @fn for each (it must consume the value). */
typedef void (*field_fn)(struct rd *r, int id, int type, void *ctx);

static void walk(struct rd *r, field_fn fn, void *ctx)
{
	int id = 0;

	for (;;) {
		uint8_t h = *r->p++;
		int type = h & 0x0f;

		if (!h)
			return;
		id = h >> 4 ? id + (h >> 4) : (int)zz(get_uleb(&r->p, r->end));
		fn(r, id, type, ctx);
	}
}

static uint64_t list_header(struct rd *r)
{
	uint8_t h = *r->p++;
	uint64_t n = h >> 4;

	return n == 15 ? get_uleb(&r->p, r->end) : n;
}

struct colctx {
	struct seen *s;
	int rg, col;
};

static void stats_field(struct rd *r, int id, int type, void *ctx)
{
	struct colctx *c = ctx;
	size_t len;

	if ((id == 5 || id == 6) && type == TK_THRIFT_BINARY) {
		len = (size_t)get_uleb(&r->p, r->end);
		assert_true(len <= 16);
		memcpy(id == 5 ? c->s->max[c->rg][c->col] : c->s->min[c->rg][c->col], r->p, len);
		*(id == 5 ? &c->s->maxlen[c->rg][c->col] : &c->s->minlen[c->rg][c->col]) = len;
		r->p += len;
		return;
	}
	skip_value(r, type);
}

static void meta_field(struct rd *r, int id, int type, void *ctx)
{
	struct colctx *c = ctx;

	if (id == 9)
		c->s->data_page_offset[c->rg][c->col] = zz(get_uleb(&r->p, r->end));
	else if (id == 11)
		c->s->dict_offset[c->rg][c->col] = zz(get_uleb(&r->p, r->end));
	else if (id == 12)
		walk(r, stats_field, ctx);
	else
		skip_value(r, type);
}

static void chunk_field(struct rd *r, int id, int type, void *ctx)
{
	if (id == 3)
		walk(r, meta_field, ctx);
	else
		skip_value(r, type);
}

static void rg_field(struct rd *r, int id, int type, void *ctx)
{
	struct colctx *c = ctx;

	if (id == 1) {
		uint64_t n = list_header(r);

		c->s->ncols = (int)n;
		for (c->col = 0; c->col < (int)n; c->col++)
			walk(r, chunk_field, ctx);
	} else if (id == 3) {
		c->s->rg_rows[c->rg] = zz(get_uleb(&r->p, r->end));
	} else {
		skip_value(r, type);
	}
}

static void file_field(struct rd *r, int id, int type, void *ctx)
{
	struct seen *s = ctx;

	if (id == 2) {
		s->nschema = (int)list_header(r);
		for (int i = 0; i < s->nschema; i++)
			skip_struct(r);
	} else if (id == 3) {
		s->num_rows = zz(get_uleb(&r->p, r->end));
	} else if (id == 4) {
		struct colctx c = {.s = s};

		s->nrg = (int)list_header(r);
		assert_true(s->nrg <= 16);
		for (c.rg = 0; c.rg < s->nrg; c.rg++)
			walk(r, rg_field, &c);
	} else {
		skip_value(r, type);
	}
}

/* The file's bytes; its footer walked into @s. */
static uint8_t *read_back(int fd, size_t *len, struct seen *s)
{
	off_t size = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc((size_t)size);
	uint32_t flen;
	struct rd r;

	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
	assert_memory_equal(buf, "PAR1", 4);
	assert_memory_equal(buf + size - 4, "PAR1", 4);
	memcpy(&flen, buf + size - 8, 4);
	assert_true(flen < (uint64_t)size);
	r.p = buf + size - 8 - flen;
	r.end = buf + size - 8;
	memset(s, 0, sizeof(*s));
	walk(&r, file_field, s);
	assert_ptr_equal(r.p, r.end);
	*len = (size_t)size;
	return buf;
}

struct page {
	int type;
	int32_t usize, csize, nvalues, encoding;
};

static void dph_field(struct rd *r, int id, int type, void *ctx)
{
	struct page *pg = ctx;

	if (id == 1)
		pg->nvalues = (int32_t)zz(get_uleb(&r->p, r->end));
	else if (id == 2 && type == TK_THRIFT_I32)
		pg->encoding = (int32_t)zz(get_uleb(&r->p, r->end));
	else
		skip_value(r, type);
}

static void page_field(struct rd *r, int id, int type, void *ctx)
{
	struct page *pg = ctx;

	if (id <= 3)
		(&pg->type)[id - 1] = (int32_t)zz(get_uleb(&r->p, r->end));
	else if (id == 5 || id == 7)
		walk(r, dph_field, ctx);
	else
		skip_value(r, type);
}

/* The page at @off: its header into @pg, its body decompressed into @out. */
static size_t read_page(const uint8_t *file, size_t len, int64_t off, struct page *pg, void *out,
			size_t cap)
{
	struct rd r = {file + off, file + len};
	size_t n;

	memset(pg, 0, sizeof(*pg));
	walk(&r, page_field, pg);
	n = ZSTD_decompress(out, cap, r.p, (size_t)pg->csize);
	assert_false(ZSTD_isError(n));
	assert_int_equal(n, pg->usize);
	return n;
}

static void test_writer_file(void **state)
{
	static const struct tk_parquet_col cols[] = {
		{"ts", TK_PARQUET_INT64},
		{"cpu", TK_PARQUET_INT32},
		{"name", TK_PARQUET_STRING},
	};
	static const char *const names[] = {"sched_switch", "irq", "sched_waking"};
	char dir[] = "/tmp/tk-parquet-XXXXXX";
	char path[64];
	struct tk_parquet_writer *w;
	struct seen s;
	struct page pg;
	uint8_t body[4096];
	uint8_t *file;
	uint64_t size = 0;
	size_t len, n;
	int64_t v;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.parquet", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	w = tk_parquet_writer_new(fd, path, cols, 3, 4, 1);
	assert_non_null(w);
	for (int i = 0; i < 10; i++) {
		struct tk_parquet_val vals[3] = {
			{.i = 1000 + i}, {.i = i % 2 ? -1 : 3}, {.s = names[i % 3]}};

		vals[2].len = (uint32_t)strlen(names[i % 3]);
		assert_int_equal(tk_parquet_writer_add(w, vals), 0);
	}
	assert_int_equal(tk_parquet_writer_rows(w), 10);
	assert_int_equal(tk_parquet_writer_finish(w, &size), 0);
	tk_parquet_writer_free(w);
	file = read_back(fd, &len, &s);
	assert_int_equal(size, len);
	assert_int_equal(s.num_rows, 10);
	assert_int_equal(s.nschema, 4); /* the root and 3 columns */
	assert_int_equal(s.nrg, 3);	/* 4 + 4 + 2 rows */
	assert_int_equal(s.rg_rows[0], 4);
	assert_int_equal(s.rg_rows[2], 2);
	assert_int_equal(s.ncols, 3);
	/* statistics of row group 1 (rows 4..7): ts 1004..1007, cpu -1..3, names bytewise */
	memcpy(&v, s.min[1][0], 8);
	assert_int_equal(v, 1004);
	memcpy(&v, s.max[1][0], 8);
	assert_int_equal(v, 1007);
	assert_int_equal(s.minlen[1][1], 4);
	assert_memory_equal(s.min[1][1], "\xff\xff\xff\xff", 4);
	assert_memory_equal(s.max[1][1], "\x03\x00\x00\x00", 4);
	assert_int_equal(s.minlen[1][2], 3);
	assert_memory_equal(s.min[1][2], "irq", 3);
	assert_int_equal(s.maxlen[1][2], 12);
	assert_memory_equal(s.max[1][2], "sched_waking", 12);
	/* row group 0's ts: 4 distinct values, a dictionary of them, then indices 0..3 */
	n = read_page(file, len, s.dict_offset[0][0], &pg, body, sizeof(body));
	assert_int_equal(pg.type, 2);
	assert_int_equal(pg.nvalues, 4);
	assert_int_equal(n, 32);
	memcpy(&v, body + 24, 8);
	assert_int_equal(v, 1003);
	n = read_page(file, len, s.data_page_offset[0][0], &pg, body, sizeof(body));
	assert_int_equal(pg.type, 0);
	assert_int_equal(pg.encoding, 8);
	{
		uint32_t idx[4];

		assert_int_equal(body[0], 2);
		assert_int_equal(hybrid_decode(body + 1, n - 1, 2, idx, 4), 4);
		for (uint32_t i = 0; i < 4; i++)
			assert_int_equal(idx[i], i);
	}
	/* its name column: a dictionary of first appearances, then the indices */
	n = read_page(file, len, s.dict_offset[0][2], &pg, body, sizeof(body));
	assert_int_equal(pg.type, 2);
	assert_int_equal(pg.nvalues, 3);
	assert_int_equal(n, 3 * 4 + 12 + 3 + 12);
	assert_memory_equal(body, "\x0c\x00\x00\x00sched_switch\x03\x00\x00\x00irq", 19);
	n = read_page(file, len, s.data_page_offset[0][2], &pg, body, sizeof(body));
	assert_int_equal(pg.type, 0);
	assert_int_equal(pg.encoding, 8);
	assert_int_equal(pg.nvalues, 4);
	{
		uint32_t idx[4];

		assert_int_equal(body[0], 2); /* 3 entries need 2 bits */
		assert_int_equal(hybrid_decode(body + 1, n - 1, 2, idx, 4), 4);
		assert_int_equal(idx[0], 0);
		assert_int_equal(idx[1], 1);
		assert_int_equal(idx[2], 2);
		assert_int_equal(idx[3], 0);
	}
	free(file);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* Past the dictionary's limit a row group's integers go PLAIN or DELTA, per page. */
static void test_writer_plain_fallback(void **state)
{
	static const struct tk_parquet_col cols[] = {{"ts", TK_PARQUET_INT64},
						     {"v", TK_PARQUET_INT64}};
	char dir[] = "/tmp/tk-parquet-XXXXXX";
	char path[64];
	struct tk_parquet_writer *w;
	uint64_t seed = 7;
	struct seen s;
	struct page pg;
	static uint8_t body[1 << 20];
	uint8_t *file;
	size_t len, n;
	int64_t ts[5000], back[5000];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.parquet", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	w = tk_parquet_writer_new(fd, path, cols, 2, 5000, 1);
	assert_non_null(w);
	for (int i = 0; i < 5000; i++) {
		struct tk_parquet_val vals[2] = {{.i = 1000 * i + 7}, {.i = 0}};

		vals[1].i = (int64_t)tk_test_xorshift(&seed);
		ts[i] = vals[0].i;
		assert_int_equal(tk_parquet_writer_add(w, vals), 0);
	}
	assert_int_equal(tk_parquet_writer_finish(w, NULL), 0);
	tk_parquet_writer_free(w);
	file = read_back(fd, &len, &s);
	assert_int_equal(s.nrg, 1);
	assert_int_equal(s.dict_offset[0][0], 0); /* no dictionary */
	n = read_page(file, len, s.data_page_offset[0][0], &pg, body, sizeof(body));
	assert_int_equal(pg.encoding, 5); /* times count up: DELTA_BINARY_PACKED */
	assert_int_equal(delta_decode(body, n, back, 5000), 5000);
	assert_memory_equal(ts, back, sizeof(ts));
	n = read_page(file, len, s.data_page_offset[0][1], &pg, body, sizeof(body));
	assert_int_equal(pg.encoding, 0); /* random values: PLAIN */
	assert_int_equal(n, 5000 * 8);
	free(file);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/*
 * A clustering writer writes each row group's rows by group (ascending),
 * in the order added within a group; every column moves with its row.
 */
static void test_writer_cluster(void **state)
{
	/* more distinct ids a row group than a dictionary takes: PLAIN or DELTA */
	enum { RG = 5000 };
	static const struct tk_parquet_col cols[] = {{"id", TK_PARQUET_INT64},
						     {"v", TK_PARQUET_INT64}};
	char dir[] = "/tmp/tk-parquet-XXXXXX";
	char path[64];
	struct tk_parquet_writer *w;
	uint64_t seed = 11;
	struct seen s;
	struct page pg;
	static uint8_t body[1 << 20];
	uint8_t *file;
	size_t len, n;
	int64_t ids[2][RG], vs[2][RG], back[RG];
	uint16_t grp[2 * RG];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.parquet", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	w = tk_parquet_writer_new(fd, path, cols, 2, RG, 1);
	assert_non_null(w);
	tk_parquet_writer_cluster(w);
	for (int i = 0; i < 2 * RG; i++) {
		/* v random: PLAIN, so the page shows the order as is */
		struct tk_parquet_val vals[2] = {{.i = i}, {.i = 0}};

		vals[1].i = (int64_t)tk_test_xorshift(&seed);
		grp[i] = (uint16_t)(vals[1].i & 3 ? 60000 + (i % 3) : 5);
		vals[0].group = grp[i];
		ids[i / RG][i % RG] = vals[0].i;
		vs[i / RG][i % RG] = vals[1].i;
		assert_int_equal(tk_parquet_writer_add(w, vals), 0);
	}
	assert_int_equal(tk_parquet_writer_finish(w, NULL), 0);
	tk_parquet_writer_free(w);
	/* The expected order: per row group, a stable sort by group. */
	for (int rg = 0; rg < 2; rg++) {
		int64_t want_id[RG], want_v[RG];
		size_t k = 0;

		for (uint32_t g = 0; g <= UINT16_MAX; g++)
			for (int i = 0; i < RG; i++)
				if (grp[rg * RG + i] == g) {
					want_id[k] = ids[rg][i];
					want_v[k++] = vs[rg][i];
				}
		assert_int_equal(k, RG);
		memcpy(ids[rg], want_id, sizeof(want_id));
		memcpy(vs[rg], want_v, sizeof(want_v));
	}
	file = read_back(fd, &len, &s);
	assert_int_equal(s.nrg, 2);
	for (int rg = 0; rg < 2; rg++) {
		n = read_page(file, len, s.data_page_offset[rg][1], &pg, body, sizeof(body));
		assert_int_equal(pg.encoding, 0);
		assert_int_equal(n, RG * 8);
		for (int i = 0; i < RG; i++)
			memcpy(&back[i], body + 8 * i, 8);
		assert_memory_equal(vs[rg], back, sizeof(back));
		/* ids within a group count up; DELTA or PLAIN, both decode */
		n = read_page(file, len, s.data_page_offset[rg][0], &pg, body, sizeof(body));
		if (pg.encoding == 5) {
			assert_int_equal(delta_decode(body, n, back, RG), RG);
		} else {
			assert_int_equal(pg.encoding, 0);
			for (int i = 0; i < RG; i++)
				memcpy(&back[i], body + 8 * i, 8);
		}
		assert_memory_equal(ids[rg], back, sizeof(back));
	}
	free(file);
	close(fd);
	unlink(path);
	rmdir(dir);
}

static void test_writer_empty(void **state)
{
	static const struct tk_parquet_col cols[] = {{"x", TK_PARQUET_STRING}};
	char dir[] = "/tmp/tk-parquet-XXXXXX";
	char path[64];
	struct tk_parquet_writer *w;
	struct seen s;
	uint8_t *file;
	size_t len;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/e.parquet", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	w = tk_parquet_writer_new(fd, path, cols, 1, 100, 1);
	assert_non_null(w);
	assert_int_equal(tk_parquet_writer_finish(w, NULL), 0);
	tk_parquet_writer_free(w);
	file = read_back(fd, &len, &s);
	assert_int_equal(s.num_rows, 0);
	assert_int_equal(s.nrg, 0);
	assert_int_equal(s.nschema, 2);
	free(file);
	close(fd);
	unlink(path);
	rmdir(dir);
}

static void test_writer_write_error(void **state)
{
	static const struct tk_parquet_col cols[] = {{"x", TK_PARQUET_INT64}};
	struct tk_parquet_writer *w;
	int fds[2];

	(void)state;
	/* A pipe whose reader is gone: the first write fails with EPIPE. */
	assert_int_equal(pipe(fds), 0);
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	w = tk_parquet_writer_new(fds[1], "pipe", cols, 1, 1, 1);
	assert_null(w);
	assert_int_equal(errno, EPIPE);
	assert_non_null(strstr(tk_errmsg(), "pipe: write"));
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thrift_fields),
		cmocka_unit_test(test_thrift_lists),
		cmocka_unit_test(test_hybrid_bytes),
		cmocka_unit_test(test_hybrid_round_trip),
		cmocka_unit_test(test_delta_round_trip),
		cmocka_unit_test(test_writer_file),
		cmocka_unit_test(test_writer_plain_fallback),
		cmocka_unit_test(test_writer_cluster),
		cmocka_unit_test(test_writer_empty),
		cmocka_unit_test(test_writer_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
