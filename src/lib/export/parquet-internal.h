/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * parquet: our own Parquet file writer (parquet.c holds the design notes)
 * and the Thrift compact protocol encoder its metadata needs
 * (parquet-thrift.c). Private to the library; unit tests include it.
 */
#ifndef TRACEKIT_EXPORT_PARQUET_INTERNAL_H
#define TRACEKIT_EXPORT_PARQUET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/bytebuf.h"

/* ----------------------------------------------------- Thrift compact */

/* The compact protocol's type nibbles (field headers and list headers). */
enum tk_thrift_type {
	TK_THRIFT_TRUE = 1, /* a bool field carries its value in its type */
	TK_THRIFT_FALSE = 2,
	TK_THRIFT_BYTE = 3,
	TK_THRIFT_I16 = 4,
	TK_THRIFT_I32 = 5,
	TK_THRIFT_I64 = 6,
	TK_THRIFT_DOUBLE = 7,
	TK_THRIFT_BINARY = 8,
	TK_THRIFT_LIST = 9,
	TK_THRIFT_SET = 10,
	TK_THRIFT_MAP = 11,
	TK_THRIFT_STRUCT = 12,
};

#define TK_THRIFT_MAX_DEPTH 16

/*
 * An encoder appending to @out. Field ids are written as deltas from the
 * previous field of the same struct, so the encoder keeps the last id per
 * open struct. Fields must be written in increasing id order.
 */
struct tk_thrift {
	struct tk_bytebuf *out;
	int16_t last[TK_THRIFT_MAX_DEPTH];
	int depth;
};

void tk_thrift_init(struct tk_thrift *t, struct tk_bytebuf *out);
void tk_thrift_varint(struct tk_bytebuf *b, uint64_t v);
void tk_thrift_i32(struct tk_thrift *t, int16_t id, int32_t v);
void tk_thrift_i64(struct tk_thrift *t, int16_t id, int64_t v);
void tk_thrift_bool(struct tk_thrift *t, int16_t id, bool v);
void tk_thrift_binary(struct tk_thrift *t, int16_t id, const void *data, size_t len);
void tk_thrift_string(struct tk_thrift *t, int16_t id, const char *s);
/* A struct field; its members follow, then tk_thrift_struct_end(). */
void tk_thrift_struct_begin(struct tk_thrift *t, int16_t id);
void tk_thrift_struct_end(struct tk_thrift *t);
/* A list field of @n elements of @elem type; the elements follow. */
void tk_thrift_list_begin(struct tk_thrift *t, int16_t id, enum tk_thrift_type elem, uint32_t n);
void tk_thrift_elem_i32(struct tk_thrift *t, int32_t v);
void tk_thrift_elem_string(struct tk_thrift *t, const char *s);
/* A struct element of a list; its members follow, then tk_thrift_struct_end(). */
void tk_thrift_elem_struct_begin(struct tk_thrift *t);

/* ------------------------------------------------- RLE / bit-packing */

/*
 * Append @n values of @bit_width bits (1..32) in the RLE / bit-packing
 * hybrid: runs of 8 or more equal values as RLE runs, the rest bit-packed
 * in groups of 8 (the last group padded with zeros).
 */
void tk_parquet_rle_hybrid(struct tk_bytebuf *out, const uint32_t *vals, size_t n, int bit_width);

/*
 * Append @n (at least 1) values in DELTA_BINARY_PACKED: a header (block
 * size, miniblocks per block, count, first value), then per block of
 * DELTA_BLOCK deltas their minimum and, per miniblock, the deltas less
 * that minimum bit-packed at the miniblock's width.
 */
#define DELTA_BLOCK	 128
#define DELTA_MINIBLOCKS 4
void tk_parquet_delta(struct tk_bytebuf *out, const int64_t *vals, size_t n);

/* --------------------------------------------------------- the writer */

enum tk_parquet_type {
	TK_PARQUET_INT64 = 0,
	TK_PARQUET_INT32 = 1,
	TK_PARQUET_STRING = 2, /* BYTE_ARRAY, UTF8, dictionary-encoded */
	TK_PARQUET_DOUBLE = 3, /* a counter's value, as Perfetto's counter.value */
};

struct tk_parquet_col {
	const char *name;
	enum tk_parquet_type type;
};

/*
 * One cell: @i for the integer types, @d for doubles, @s/@len for strings (copied). A
 * string at the same address and of the same length as the previous row's
 * in its column is taken to be the same string without a look: a caller
 * that rewrites a buffer between rows must pass it at another address.
 */
struct tk_parquet_val {
	union {
		int64_t i;
		double d;
	};
	const char *s;
	uint32_t len;
	bool transient; /* @s may change at the same address: never matched by address */
	uint16_t group; /* in a row's first cell: its group (tk_parquet_writer_cluster) */
};

struct tk_parquet_writer;

/*
 * Start a Parquet file at @fd (the caller's; not closed). Rows are buffered
 * per column and written as a row group every @row_group_rows rows.
 * @name is for messages. NULL with errno set on failure.
 */
struct tk_parquet_writer *tk_parquet_writer_new(int fd, const char *name,
						const struct tk_parquet_col *cols, size_t ncols,
						uint64_t row_group_rows, int zstd_level);
/*
 * Write each row group's rows regrouped by the group of their first cell
 * (tk_parquet_val.group; rows of one group together, groups in increasing
 * order, within a group as added). Called before the first row.
 */
void tk_parquet_writer_cluster(struct tk_parquet_writer *w);
/* Add one row of ncols values. */
int tk_parquet_writer_add(struct tk_parquet_writer *w, const struct tk_parquet_val *vals);
/* Write the last row group and the footer; @size gets the file's length. */
int tk_parquet_writer_finish(struct tk_parquet_writer *w, uint64_t *size);
uint64_t tk_parquet_writer_rows(const struct tk_parquet_writer *w);
void tk_parquet_writer_free(struct tk_parquet_writer *w);

#endif
