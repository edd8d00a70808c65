// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * parquet: a Parquet file writer for flat tables of 64/32-bit integers and
 * strings, in our own C: Debian 12 packages neither Arrow's C++/GLib
 * libraries nor parquet-cpp, and what tracekit's tables need is a small
 * part of the format.
 *
 * The file (all numbers little-endian):
 *   "PAR1"
 *   row group 0: column chunk 0, column chunk 1, ...   (schema order)
 *   row group 1: ...
 *   FileMetaData (Thrift compact, parquet-thrift.c)
 *   u32 length of FileMetaData, "PAR1"
 *
 * A column chunk is a sequence of pages, each a PageHeader (Thrift
 * compact) followed by its body compressed with zstd as one frame:
 *   INT64/INT32/DOUBLE columns: while a row group has at most INT_DICT_MAX
 *     distinct values (a tid, a cpu, a field's few values), a dictionary
 *     page of them (PLAIN) and RLE_DICTIONARY data pages as for strings;
 *     past that, data pages (v1) of up to PAGE_ROWS values, PLAIN (8 or
 *     4 bytes each; a DOUBLE is its IEEE 754 bits, dictionary keyed by
 *     them, never DELTA). Every column is REQUIRED: no definition or
 *     repetition levels precede the values.
 *   strings (BYTE_ARRAY, UTF8): a dictionary page first (PLAIN: u32 length
 *     then the bytes, per distinct string of the row group, in order of
 *     first appearance), then data pages RLE_DICTIONARY: one byte of bit
 *     width, then the indices in the RLE / bit-packing hybrid.
 * Each chunk's metadata carries min_value/max_value statistics (signed
 * integers, doubles compared as numbers; strings compared bytewise, as TYPE_ORDER in column_orders
 * tells readers), so engines skip row groups on ts, cpu or name filters.
 *
 * Memory: one row group of values per column (8 bytes an integer cell, 4
 * bytes a string cell plus its row group's distinct strings), released
 * when the row group is written; the footer keeps ~100 bytes per column
 * per row group. The writer never seeks: offsets are counted as written,
 * so @fd may be a pipe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include <tracekit/version.h>

#include "parquet-internal.h"
#include "internal/error.h"

#define PAGE_ROWS (64u * 1024)
/*
 * Distinct values an integer column's row group may have and still be
 * dictionary-encoded. On bench-report's file the dictionary made tid, utid,
 * cpu and most args values 3-10x smaller after zstd; a column of
 * timestamps gives up after this many lookups.
 */
#define INT_DICT_MAX 4096u

/* Parquet's enums, as the format's thrift file numbers them. */
enum {
	PQ_TYPE_INT32 = 1,
	PQ_TYPE_INT64 = 2,
	PQ_TYPE_DOUBLE = 5,
	PQ_TYPE_BYTE_ARRAY = 6,
	PQ_ENC_PLAIN = 0,
	PQ_ENC_RLE = 3,
	PQ_ENC_DELTA_BINARY_PACKED = 5,
	PQ_ENC_RLE_DICTIONARY = 8,
	PQ_CODEC_ZSTD = 6,
	PQ_PAGE_DATA = 0,
	PQ_PAGE_DICTIONARY = 2,
	PQ_REQUIRED = 0,
	PQ_CONVERTED_UTF8 = 0,
};

/* What the footer needs of one written column chunk. */
struct chunk_meta {
	uint64_t first_offset; /* dictionary page if any, else the first data page */
	uint64_t data_offset;
	uint64_t uncompressed, compressed; /* pages with their headers */
	uint64_t nvalues;
	uint8_t min[8], max[8]; /* integer statistics */
	char *smin, *smax;	/* string statistics (malloc'd) */
	uint32_t sminlen, smaxlen;
	bool dict;  /* a dictionary page first */
	bool delta; /* some data page is DELTA_BINARY_PACKED */
};

struct column {
	struct tk_parquet_col def;
	int64_t *ivals; /* integers of the open row group */
	/* their dictionary while it stays small: values, index per row */
	int64_t *ivdict;
	uint32_t *iidx;
	bool idict_off; /* this row group has too many distinct values */
	uint32_t *idx;	/* strings: dictionary index per row */
	int64_t imin, imax;
	double fmin, fmax; /* DOUBLE: the statistics, compared as numbers */
	/* the open row group's dictionary */
	struct tk_bytebuf dbytes; /* the strings, back to back */
	uint32_t *doff, *dlen;
	uint32_t dcount, dcap;
	uint32_t *slots; /* open addressing: index + 1, 0 free */
	uint32_t nslots;
	uint32_t dmin, dmax; /* indices of the least and greatest strings */
	/* The previous row's string: the same pointer and length is the same string. */
	const char *last_s;
	uint32_t last_len, last_idx;
};

struct rowgroup {
	uint64_t rows, bytes;
	struct chunk_meta *chunks;
};

struct tk_parquet_writer {
	int fd;
	const char *name;
	struct column *cols;
	size_t ncols;
	uint64_t rg_rows; /* capacity of a row group */
	uint64_t n;	  /* rows in the open row group */
	uint64_t total_rows;
	uint64_t offset; /* bytes written so far */
	struct rowgroup *rgs;
	size_t nrgs, rgcap;
	ZSTD_CCtx *zc;
	int level;
	struct tk_bytebuf page, packed, hdr;
	void *zbuf;
	size_t zcap;
	bool failed;
	/* tk_parquet_writer_cluster(): rows regrouped by their group */
	bool cluster;
	uint16_t *group;  /* per row of the open row group */
	uint32_t *perm;	  /* row group row -> written row */
	uint32_t *bucket; /* per group: its next written row */
	void *scratch;	  /* one column's cells while permuted */
};

static int write_all(struct tk_parquet_writer *w, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len) {
		ssize_t r = write(w->fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return tk_fail(errno, "%s: write: %s", w->name, strerror(errno));
		p += r;
		len -= (size_t)r;
		w->offset += (uint64_t)r;
	}
	return 0;
}

struct tk_parquet_writer *tk_parquet_writer_new(int fd, const char *name,
						const struct tk_parquet_col *cols, size_t ncols,
						uint64_t row_group_rows, int zstd_level)
{
	struct tk_parquet_writer *w = calloc(1, sizeof(*w));

	if (!w)
		goto nomem;
	w->fd = fd;
	w->name = name;
	w->ncols = ncols;
	w->rg_rows = row_group_rows ? row_group_rows : 1;
	w->level = zstd_level;
	tk_bytebuf_init(&w->page, false);
	tk_bytebuf_init(&w->packed, false);
	tk_bytebuf_init(&w->hdr, false);
	w->cols = calloc(ncols, sizeof(*w->cols));
	w->zc = ZSTD_createCCtx();
	if (!w->cols || !w->zc)
		goto nomem;
	for (size_t c = 0; c < ncols; c++) {
		w->cols[c].def = cols[c];
		tk_bytebuf_init(&w->cols[c].dbytes, false);
	}
	if (write_all(w, "PAR1", 4)) {
		tk_parquet_writer_free(w);
		return NULL;
	}
	return w;
nomem:
	tk_parquet_writer_free(w);
	tk_fail(ENOMEM, "out of memory");
	errno = ENOMEM;
	return NULL;
}

static uint32_t hash_bytes(const char *s, uint32_t len)
{
	uint32_t h = 2166136261u;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static int str_cmp(const char *a, uint32_t alen, const char *b, uint32_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	return r ? r : (alen > blen) - (alen < blen);
}

static const char *dict_str(const struct column *col, uint32_t i)
{
	/* A dictionary of empty strings has no bytes at all. */
	return col->dbytes.data ? (const char *)col->dbytes.data + col->doff[i] : "";
}

static int dict_grow_slots(struct column *col)
{
	uint32_t n = col->nslots ? col->nslots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < col->dcount; i++) {
		uint32_t h = hash_bytes(dict_str(col, i), col->dlen[i]) & (n - 1);

		while (s[h])
			h = (h + 1) & (n - 1);
		s[h] = i + 1;
	}
	free(col->slots);
	col->slots = s;
	col->nslots = n;
	return 0;
}

/* The dictionary index of @s, added when new; negative errno on failure. */
static int64_t dict_index(struct column *col, const char *s, uint32_t len)
{
	uint32_t h, i;

	/* Kept under half full so probes stay short. */
	if ((col->dcount + 1) * 2 > col->nslots && dict_grow_slots(col))
		return -ENOMEM;
	h = hash_bytes(s, len) & (col->nslots - 1);
	while ((i = col->slots[h])) {
		if (col->dlen[i - 1] == len && !memcmp(dict_str(col, i - 1), s, len))
			return i - 1;
		h = (h + 1) & (col->nslots - 1);
	}
	if (col->dcount == col->dcap) {
		uint32_t cap = col->dcap ? col->dcap * 2 : 256;
		uint32_t *off = realloc(col->doff, cap * sizeof(*off));

		if (!off)
			return -ENOMEM;
		col->doff = off;
		off = realloc(col->dlen, cap * sizeof(*off));
		if (!off)
			return -ENOMEM;
		col->dlen = off;
		col->dcap = cap;
	}
	if (col->dbytes.len + len > UINT32_MAX)
		return -E2BIG;
	i = col->dcount;
	col->doff[i] = (uint32_t)col->dbytes.len;
	col->dlen[i] = len;
	tk_bytebuf_put(&col->dbytes, s, len);
	if (tk_bytebuf_error(&col->dbytes))
		return -ENOMEM;
	col->slots[h] = i + 1;
	col->dcount++;
	if (i == 0) {
		col->dmin = col->dmax = 0;
	} else {
		if (str_cmp(s, len, dict_str(col, col->dmin), col->dlen[col->dmin]) < 0)
			col->dmin = i;
		if (str_cmp(s, len, dict_str(col, col->dmax), col->dlen[col->dmax]) > 0)
			col->dmax = i;
	}
	return i;
}

static int alloc_rowgroup_buffers(struct tk_parquet_writer *w)
{
	if (w->cluster && !w->perm) {
		w->group = malloc(w->rg_rows * sizeof(*w->group));
		w->perm = malloc(w->rg_rows * sizeof(*w->perm));
		w->scratch = malloc(w->rg_rows * sizeof(int64_t));
		w->bucket = calloc(UINT16_MAX + 1, sizeof(*w->bucket));
		if (!w->group || !w->perm || !w->scratch || !w->bucket)
			return tk_fail(ENOMEM, "out of memory");
	}
	for (size_t c = 0; c < w->ncols; c++) {
		struct column *col = &w->cols[c];

		if (col->def.type == TK_PARQUET_STRING && !col->idx)
			col->idx = malloc(w->rg_rows * sizeof(*col->idx));
		else if (col->def.type != TK_PARQUET_STRING && !col->ivals) {
			col->ivals = malloc(w->rg_rows * sizeof(*col->ivals));
			col->iidx = malloc(w->rg_rows * sizeof(*col->iidx));
			col->ivdict = malloc(INT_DICT_MAX * sizeof(*col->ivdict));
			col->slots = calloc(INT_DICT_MAX * 2, sizeof(*col->slots));
			col->nslots = INT_DICT_MAX * 2;
			if (!col->iidx || !col->ivdict || !col->slots)
				return tk_fail(ENOMEM, "out of memory");
		}
		if (!col->idx && !col->ivals)
			return tk_fail(ENOMEM, "out of memory");
	}
	return 0;
}

/* Compress @w->page and write header + body; counts into @m. */
static int put_page(struct tk_parquet_writer *w, struct chunk_meta *m, int page_type,
		    uint32_t nvalues, int encoding)
{
	size_t bound = ZSTD_compressBound(w->page.len);
	struct tk_thrift t;
	size_t zlen;
	int ret;

	if (tk_bytebuf_error(&w->page))
		return tk_fail(ENOMEM, "out of memory");
	if (w->page.len > INT32_MAX)
		return tk_fail(E2BIG, "%s: a page of %zu bytes is too large", w->name, w->page.len);
	if (bound > w->zcap) {
		void *z = realloc(w->zbuf, bound);

		if (!z)
			return tk_fail(ENOMEM, "out of memory");
		w->zbuf = z;
		w->zcap = bound;
	}
	zlen = ZSTD_compressCCtx(w->zc, w->zbuf, w->zcap, w->page.data, w->page.len, w->level);
	if (ZSTD_isError(zlen))
		return tk_fail(EIO, "%s: zstd: %s", w->name, ZSTD_getErrorName(zlen));
	tk_bytebuf_reset(&w->hdr);
	tk_thrift_init(&t, &w->hdr);
	tk_thrift_i32(&t, 1, page_type);
	tk_thrift_i32(&t, 2, (int32_t)w->page.len);
	tk_thrift_i32(&t, 3, (int32_t)zlen);
	if (page_type == PQ_PAGE_DATA) {
		tk_thrift_struct_begin(&t, 5);
		tk_thrift_i32(&t, 1, (int32_t)nvalues);
		tk_thrift_i32(&t, 2, encoding);
		tk_thrift_i32(&t, 3, PQ_ENC_RLE);
		tk_thrift_i32(&t, 4, PQ_ENC_RLE);
		tk_thrift_struct_end(&t);
	} else {
		tk_thrift_struct_begin(&t, 7);
		tk_thrift_i32(&t, 1, (int32_t)nvalues);
		tk_thrift_i32(&t, 2, PQ_ENC_PLAIN);
		tk_thrift_struct_end(&t);
	}
	tk_bytebuf_put_u8(&w->hdr, 0); /* PageHeader's stop */
	if (tk_bytebuf_error(&w->hdr))
		return tk_fail(ENOMEM, "out of memory");
	m->uncompressed += w->hdr.len + w->page.len;
	m->compressed += w->hdr.len + zlen;
	ret = write_all(w, w->hdr.data, w->hdr.len);
	if (!ret)
		ret = write_all(w, w->zbuf, zlen);
	return ret;
}

static int bit_width_of(uint32_t n)
{
	int b = 1;

	while (b < 32 && (1ull << b) < n)
		b++;
	return b;
}

static int write_string_chunk(struct tk_parquet_writer *w, struct column *col, struct chunk_meta *m)
{
	int width = bit_width_of(col->dcount);
	int ret;

	tk_bytebuf_reset(&w->page);
	for (uint32_t i = 0; i < col->dcount; i++) {
		tk_bytebuf_put_u32(&w->page, col->dlen[i]);
		tk_bytebuf_put(&w->page, dict_str(col, i), col->dlen[i]);
	}
	m->dict = true;
	m->first_offset = w->offset;
	ret = put_page(w, m, PQ_PAGE_DICTIONARY, col->dcount, PQ_ENC_PLAIN);
	m->data_offset = w->offset;
	for (uint64_t at = 0; !ret && at < w->n; at += PAGE_ROWS) {
		size_t n = w->n - at < PAGE_ROWS ? (size_t)(w->n - at) : PAGE_ROWS;

		tk_bytebuf_reset(&w->page);
		tk_bytebuf_put_u8(&w->page, (uint8_t)width);
		tk_parquet_rle_hybrid(&w->page, col->idx + at, n, width);
		ret = put_page(w, m, PQ_PAGE_DATA, (uint32_t)n, PQ_ENC_RLE_DICTIONARY);
	}
	if (ret)
		return ret;
	m->smin = malloc(col->dlen[col->dmin] + 1);
	m->smax = malloc(col->dlen[col->dmax] + 1);
	if (!m->smin || !m->smax)
		return tk_fail(ENOMEM, "out of memory");
	memcpy(m->smin, dict_str(col, col->dmin), col->dlen[col->dmin]);
	memcpy(m->smax, dict_str(col, col->dmax), col->dlen[col->dmax]);
	m->sminlen = col->dlen[col->dmin];
	m->smaxlen = col->dlen[col->dmax];
	/* The next row group starts a new dictionary. */
	col->dcount = 0;
	tk_bytebuf_reset(&col->dbytes);
	memset(col->slots, 0, col->nslots * sizeof(*col->slots));
	return 0;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The dictionary index of @v, added when new; false when the dictionary is full. */
static bool int_dict_index(struct column *col, int64_t v, uint32_t *out)
{
	uint32_t h = (uint32_t)(((uint64_t)v * 0x9e3779b97f4a7c15ull) >> 40) & (col->nslots - 1);
	uint32_t i;

	while ((i = col->slots[h])) {
		if (col->ivdict[i - 1] == v) {
			*out = i - 1;
			return true;
		}
		h = (h + 1) & (col->nslots - 1);
	}
	if (col->dcount == INT_DICT_MAX)
		return false;
	col->ivdict[col->dcount] = v;
	col->slots[h] = ++col->dcount;
	*out = col->dcount - 1;
	return true;
}

static void int_dict_reset(struct column *col)
{
	if (col->dcount)
		memset(col->slots, 0, col->nslots * sizeof(*col->slots));
	col->dcount = 0;
	col->idict_off = false;
}

static int write_int_chunk(struct tk_parquet_writer *w, struct column *col, struct chunk_meta *m)
{
	bool i32 = col->def.type == TK_PARQUET_INT32;
	int ret = 0;

	if (col->def.type == TK_PARQUET_DOUBLE) {
		uint64_t lo, hi;

		memcpy(&lo, &col->fmin, 8);
		memcpy(&hi, &col->fmax, 8);
		put_le(m->min, lo, 8);
		put_le(m->max, hi, 8);
	} else {
		put_le(m->min, (uint64_t)col->imin, i32 ? 4 : 8);
		put_le(m->max, (uint64_t)col->imax, i32 ? 4 : 8);
	}
	if (!col->idict_off) {
		int width = bit_width_of(col->dcount);

		tk_bytebuf_reset(&w->page);
		for (uint32_t i = 0; i < col->dcount; i++) {
			if (i32)
				tk_bytebuf_put_u32(&w->page, (uint32_t)col->ivdict[i]);
			else
				tk_bytebuf_put_u64(&w->page, (uint64_t)col->ivdict[i]);
		}
		m->dict = true;
		m->first_offset = w->offset;
		ret = put_page(w, m, PQ_PAGE_DICTIONARY, col->dcount, PQ_ENC_PLAIN);
		m->data_offset = w->offset;
		for (uint64_t at = 0; !ret && at < w->n; at += PAGE_ROWS) {
			size_t n = w->n - at < PAGE_ROWS ? (size_t)(w->n - at) : PAGE_ROWS;

			tk_bytebuf_reset(&w->page);
			tk_bytebuf_put_u8(&w->page, (uint8_t)width);
			tk_parquet_rle_hybrid(&w->page, col->iidx + at, n, width);
			ret = put_page(w, m, PQ_PAGE_DATA, (uint32_t)n, PQ_ENC_RLE_DICTIONARY);
		}
		int_dict_reset(col);
		return ret;
	}
	int_dict_reset(col);
	m->first_offset = m->data_offset = w->offset;
	for (uint64_t at = 0; !ret && at < w->n; at += PAGE_ROWS) {
		size_t n = w->n - at < PAGE_ROWS ? (size_t)(w->n - at) : PAGE_ROWS;

		tk_bytebuf_reset(&w->page);
		/*
		 * DELTA for values that count up (times, ids): at most 2 bytes a
		 * value. Random values (a field's pointers) pack worse than zstd
		 * squeezes their PLAIN bytes: measured 20 MB PLAIN against 37 MB
		 * DELTA for bench-report's 11 M args values.
		 */
		if (col->def.type == TK_PARQUET_INT64) {
			tk_parquet_delta(&w->page, col->ivals + at, n);
			if (tk_bytebuf_error(&w->page))
				return tk_fail(ENOMEM, "out of memory");
			if (w->page.len <= n * 2) {
				m->delta = true;
				ret = put_page(w, m, PQ_PAGE_DATA, (uint32_t)n,
					       PQ_ENC_DELTA_BINARY_PACKED);
				continue;
			}
			tk_bytebuf_reset(&w->page);
		}
		if (tk_bytebuf_reserve(&w->page, n * 8))
			return tk_fail(ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++) {
			uint64_t v = (uint64_t)col->ivals[at + i];

			put_le(w->page.data + w->page.len, v, i32 ? 4 : 8);
			w->page.len += i32 ? 4 : 8;
		}
		ret = put_page(w, m, PQ_PAGE_DATA, (uint32_t)n, PQ_ENC_PLAIN);
	}
	return ret;
}

/*
 * Regroup the open row group's rows by their group, rows of one group
 * keeping their order: a counting sort, then every column permuted. Rows
 * of a table have no order a query may rely on; what this buys is that
 * like cells sit together (args grouped by event: each field's values at
 * the same stride, the keys a repeating pattern, the arg_set_ids runs),
 * which zstd and the encodings then squeeze (bench/README.md, stop 17).
 */
static int cluster_rows(struct tk_parquet_writer *w)
{
	uint64_t n = w->n;

	for (uint64_t i = 0; i < n; i++)
		w->bucket[w->group[i]]++;
	for (uint32_t k = 0, at = 0; k <= UINT16_MAX; k++) {
		uint32_t c = w->bucket[k];

		w->bucket[k] = at;
		at += c;
	}
	for (uint64_t i = 0; i < n; i++)
		w->perm[i] = w->bucket[w->group[i]]++;
	memset(w->bucket, 0, (UINT16_MAX + 1) * sizeof(*w->bucket));
	for (size_t c = 0; c < w->ncols; c++) {
		struct column *col = &w->cols[c];

		if (col->def.type == TK_PARQUET_STRING) {
			uint32_t *t = w->scratch;

			for (uint64_t i = 0; i < n; i++)
				t[w->perm[i]] = col->idx[i];
			memcpy(col->idx, t, n * sizeof(*t));
		} else {
			int64_t *t = w->scratch;

			for (uint64_t i = 0; i < n; i++)
				t[w->perm[i]] = col->ivals[i];
			memcpy(col->ivals, t, n * sizeof(*t));
			if (!col->idict_off) {
				uint32_t *u = w->scratch;

				for (uint64_t i = 0; i < n; i++)
					u[w->perm[i]] = col->iidx[i];
				memcpy(col->iidx, u, n * sizeof(*u));
			}
		}
	}
	return 0;
}

void tk_parquet_writer_cluster(struct tk_parquet_writer *w)
{
	w->cluster = true;
}

static int flush_rowgroup(struct tk_parquet_writer *w)
{
	struct rowgroup *rg;
	int ret = 0;

	if (!w->n)
		return 0;
	if (w->nrgs == w->rgcap) {
		size_t cap = w->rgcap ? w->rgcap * 2 : 8;
		struct rowgroup *r = realloc(w->rgs, cap * sizeof(*r));

		if (!r)
			return tk_fail(ENOMEM, "out of memory");
		w->rgs = r;
		w->rgcap = cap;
	}
	rg = &w->rgs[w->nrgs];
	rg->rows = w->n;
	rg->bytes = 0;
	rg->chunks = calloc(w->ncols, sizeof(*rg->chunks));
	if (!rg->chunks)
		return tk_fail(ENOMEM, "out of memory");
	w->nrgs++;
	if (w->cluster && (ret = cluster_rows(w)))
		return ret;
	for (size_t c = 0; c < w->ncols && !ret; c++) {
		struct column *col = &w->cols[c];
		struct chunk_meta *m = &rg->chunks[c];

		m->nvalues = w->n;
		if (col->def.type == TK_PARQUET_STRING)
			ret = write_string_chunk(w, col, m);
		else
			ret = write_int_chunk(w, col, m);
		rg->bytes += m->uncompressed;
	}
	w->n = 0;
	return ret;
}

int tk_parquet_writer_add(struct tk_parquet_writer *w, const struct tk_parquet_val *vals)
{
	int ret;

	if (w->failed)
		return -EIO;
	if (!w->n && (ret = alloc_rowgroup_buffers(w)))
		goto fail;
	if (w->cluster)
		w->group[w->n] = vals[0].group;
	for (size_t c = 0; c < w->ncols; c++) {
		struct column *col = &w->cols[c];

		if (col->def.type == TK_PARQUET_STRING) {
			const char *str = vals[c].s ? vals[c].s : "";
			int64_t i;

			/*
			 * Most cells repeat the row before's string (the trace id, an
			 * event's name from its format): by pointer, skipping the hash
			 * and the compare that were 40% of an export's time.
			 */
			if (w->n && str == col->last_s && vals[c].len == col->last_len &&
			    !vals[c].transient) {
				col->idx[w->n] = col->last_idx;
				continue;
			}
			i = dict_index(col, str, vals[c].len);

			if (i < 0) {
				ret = tk_fail((int)-i, "%s: column %s: %s", w->name, col->def.name,
					      strerror((int)-i));
				goto fail;
			}
			col->idx[w->n] = (uint32_t)i;
			col->last_s = str;
			col->last_len = vals[c].len;
			col->last_idx = (uint32_t)i;
		} else if (col->def.type == TK_PARQUET_DOUBLE) {
			double d = vals[c].d;
			int64_t v;

			memcpy(&v, &d, 8);
			col->ivals[w->n] = v;
			if (!col->idict_off && !int_dict_index(col, v, &col->iidx[w->n]))
				col->idict_off = true;
			if (!w->n || d < col->fmin)
				col->fmin = d;
			if (!w->n || d > col->fmax)
				col->fmax = d;
		} else {
			int64_t v = vals[c].i;

			if (col->def.type == TK_PARQUET_INT32)
				v = (int32_t)v;
			col->ivals[w->n] = v;
			if (!col->idict_off && !int_dict_index(col, v, &col->iidx[w->n]))
				col->idict_off = true;
			if (!w->n || v < col->imin)
				col->imin = v;
			if (!w->n || v > col->imax)
				col->imax = v;
		}
	}
	w->n++;
	w->total_rows++;
	if (w->n == w->rg_rows && (ret = flush_rowgroup(w)))
		goto fail;
	return 0;
fail:
	w->failed = true;
	return ret;
}

uint64_t tk_parquet_writer_rows(const struct tk_parquet_writer *w)
{
	return w->total_rows;
}

static int parquet_type(enum tk_parquet_type t)
{
	return t == TK_PARQUET_STRING	? PQ_TYPE_BYTE_ARRAY
	       : t == TK_PARQUET_INT32	? PQ_TYPE_INT32
	       : t == TK_PARQUET_DOUBLE ? PQ_TYPE_DOUBLE
					: PQ_TYPE_INT64;
}

static void put_footer(struct tk_parquet_writer *w, struct tk_bytebuf *b)
{
	struct tk_thrift t;

	tk_thrift_init(&t, b);
	tk_thrift_i32(&t, 1, 1); /* version */
	tk_thrift_list_begin(&t, 2, TK_THRIFT_STRUCT, (uint32_t)w->ncols + 1);
	tk_thrift_elem_struct_begin(&t);
	tk_thrift_string(&t, 4, "schema");
	tk_thrift_i32(&t, 5, (int32_t)w->ncols);
	tk_thrift_struct_end(&t);
	for (size_t c = 0; c < w->ncols; c++) {
		const struct column *col = &w->cols[c];

		tk_thrift_elem_struct_begin(&t);
		tk_thrift_i32(&t, 1, parquet_type(col->def.type));
		tk_thrift_i32(&t, 3, PQ_REQUIRED);
		tk_thrift_string(&t, 4, col->def.name);
		if (col->def.type == TK_PARQUET_STRING) {
			tk_thrift_i32(&t, 6, PQ_CONVERTED_UTF8);
			tk_thrift_struct_begin(&t, 10); /* logicalType: STRING */
			tk_thrift_struct_begin(&t, 1);
			tk_thrift_struct_end(&t);
			tk_thrift_struct_end(&t);
		}
		tk_thrift_struct_end(&t);
	}
	tk_thrift_i64(&t, 3, (int64_t)w->total_rows);
	tk_thrift_list_begin(&t, 4, TK_THRIFT_STRUCT, (uint32_t)w->nrgs);
	for (size_t r = 0; r < w->nrgs; r++) {
		const struct rowgroup *rg = &w->rgs[r];

		tk_thrift_elem_struct_begin(&t);
		tk_thrift_list_begin(&t, 1, TK_THRIFT_STRUCT, (uint32_t)w->ncols);
		for (size_t c = 0; c < w->ncols; c++) {
			const struct column *col = &w->cols[c];
			const struct chunk_meta *m = &rg->chunks[c];
			bool str = col->def.type == TK_PARQUET_STRING;
			int ilen = col->def.type == TK_PARQUET_INT32 ? 4 : 8;

			tk_thrift_elem_struct_begin(&t); /* ColumnChunk */
			tk_thrift_i64(&t, 2, (int64_t)m->first_offset);
			tk_thrift_struct_begin(&t, 3); /* ColumnMetaData */
			tk_thrift_i32(&t, 1, parquet_type(col->def.type));
			tk_thrift_list_begin(&t, 2, TK_THRIFT_I32, 2u + m->dict + m->delta);
			tk_thrift_elem_i32(&t, PQ_ENC_PLAIN);
			tk_thrift_elem_i32(&t, PQ_ENC_RLE);
			if (m->dict)
				tk_thrift_elem_i32(&t, PQ_ENC_RLE_DICTIONARY);
			if (m->delta)
				tk_thrift_elem_i32(&t, PQ_ENC_DELTA_BINARY_PACKED);
			tk_thrift_list_begin(&t, 3, TK_THRIFT_BINARY, 1);
			tk_thrift_elem_string(&t, col->def.name);
			tk_thrift_i32(&t, 4, PQ_CODEC_ZSTD);
			tk_thrift_i64(&t, 5, (int64_t)m->nvalues);
			tk_thrift_i64(&t, 6, (int64_t)m->uncompressed);
			tk_thrift_i64(&t, 7, (int64_t)m->compressed);
			tk_thrift_i64(&t, 9, (int64_t)m->data_offset);
			if (m->dict)
				tk_thrift_i64(&t, 11, (int64_t)m->first_offset);
			tk_thrift_struct_begin(&t, 12); /* Statistics */
			tk_thrift_i64(&t, 3, 0);	/* null_count */
			if (str) {
				tk_thrift_binary(&t, 5, m->smax, m->smaxlen);
				tk_thrift_binary(&t, 6, m->smin, m->sminlen);
			} else {
				tk_thrift_binary(&t, 5, m->max, (size_t)ilen);
				tk_thrift_binary(&t, 6, m->min, (size_t)ilen);
			}
			tk_thrift_struct_end(&t);
			tk_thrift_struct_end(&t); /* ColumnMetaData */
			tk_thrift_struct_end(&t); /* ColumnChunk */
		}
		tk_thrift_i64(&t, 2, (int64_t)rg->bytes);
		tk_thrift_i64(&t, 3, (int64_t)rg->rows);
		tk_thrift_struct_end(&t);
	}
	tk_thrift_string(&t, 6, TK_VERSION_TEXT);
	tk_thrift_list_begin(&t, 7, TK_THRIFT_STRUCT, (uint32_t)w->ncols);
	for (size_t c = 0; c < w->ncols; c++) {
		tk_thrift_elem_struct_begin(&t); /* ColumnOrder */
		tk_thrift_struct_begin(&t, 1);	 /* TYPE_ORDER */
		tk_thrift_struct_end(&t);
		tk_thrift_struct_end(&t);
	}
	tk_bytebuf_put_u8(b, 0); /* FileMetaData's stop */
}

int tk_parquet_writer_finish(struct tk_parquet_writer *w, uint64_t *size)
{
	struct tk_bytebuf b;
	uint8_t tail[8];
	int ret;

	if (w->failed)
		return -EIO;
	ret = flush_rowgroup(w);
	if (ret) {
		w->failed = true;
		return ret;
	}
	tk_bytebuf_init(&b, false);
	put_footer(w, &b);
	if (tk_bytebuf_error(&b) || b.len > UINT32_MAX) {
		tk_bytebuf_release(&b);
		return tk_fail(ENOMEM, "out of memory");
	}
	put_le(tail, b.len, 4);
	memcpy(tail + 4, "PAR1", 4);
	ret = write_all(w, b.data, b.len);
	if (!ret)
		ret = write_all(w, tail, sizeof(tail));
	tk_bytebuf_release(&b);
	if (ret)
		w->failed = true;
	else if (size)
		*size = w->offset;
	return ret;
}

void tk_parquet_writer_free(struct tk_parquet_writer *w)
{
	if (!w)
		return;
	free(w->group);
	free(w->perm);
	free(w->bucket);
	free(w->scratch);
	for (size_t c = 0; w->cols && c < w->ncols; c++) {
		struct column *col = &w->cols[c];

		free(col->ivals);
		free(col->iidx);
		free(col->ivdict);
		free(col->idx);
		tk_bytebuf_release(&col->dbytes);
		free(col->doff);
		free(col->dlen);
		free(col->slots);
	}
	for (size_t r = 0; r < w->nrgs; r++) {
		for (size_t c = 0; c < w->ncols; c++) {
			free(w->rgs[r].chunks[c].smin);
			free(w->rgs[r].chunks[c].smax);
		}
		free(w->rgs[r].chunks);
	}
	free(w->rgs);
	free(w->cols);
	ZSTD_freeCCtx(w->zc);
	tk_bytebuf_release(&w->page);
	tk_bytebuf_release(&w->packed);
	tk_bytebuf_release(&w->hdr);
	free(w->zbuf);
	free(w);
}
