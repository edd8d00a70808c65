// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * parquet-thrift: the two bit-level encodings a Parquet file is made of
 * besides its values, written by hand (Debian 12 packages no Thrift C
 * runtime that speaks the compact protocol, nor any Parquet library).
 *
 * Thrift compact protocol (Parquet's footer and page headers):
 *   integers   i16/i32/i64 as zigzag, then ULEB128 (7 bits a byte, low
 *              first, high bit = more follows); list sizes and binary
 *              lengths are plain ULEB128.
 *   field      one byte: (id delta << 4) | type when the id is 1..15
 *              above the previous field of the same struct, else the
 *              type byte followed by the id as a zigzag i16. A bool
 *              field's value is its type: 1 true, 2 false.
 *   struct     its fields, then a 0 byte (stop). Each struct starts
 *              counting ids from 0 again: the encoder keeps a stack.
 *   list       one byte (n << 4) | elem type when n < 15, else
 *              0xf0 | elem type then n; the elements follow without
 *              field headers (a struct element is its fields and a stop).
 *   binary     length, then the bytes.
 *
 * RLE / bit-packing hybrid (dictionary indices in data pages):
 *   a run's header is a ULEB128: (count << 1) for an RLE run, followed by
 *   the value in ceil(width / 8) little-endian bytes; (groups << 1) | 1
 *   for a bit-packed run of groups * 8 values, packed from the least
 *   significant bit of each byte. Runs of at least 8 equal values become
 *   RLE runs, the rest are bit-packed; a page's last group is padded with
 *   zeros (the page header says how many values count).
 *
 * DELTA_BINARY_PACKED (integer columns that are not dictionary-encoded,
 * when it is smaller than PLAIN: timestamps, ids that count up):
 *   header    ULEB128 block size (128), miniblocks per block (4), value
 *             count, then the first value as a zigzag ULEB128
 *   block     the least of its (up to 128) deltas as a zigzag ULEB128, one
 *             byte of bit width per miniblock, then each miniblock that
 *             holds deltas: its 32 deltas less the least, bit-packed LSB
 *             first at its width (the last padded with zeros; unused
 *             miniblocks have width 0 and no bytes). Deltas wrap as
 *             unsigned 64-bit numbers.
 */
#include <string.h>

#include "parquet-internal.h"

void tk_thrift_init(struct tk_thrift *t, struct tk_bytebuf *out)
{
	t->out = out;
	t->depth = 0;
	t->last[0] = 0;
}

void tk_thrift_varint(struct tk_bytebuf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		tmp[n++] = v ? byte | 0x80 : byte;
	} while (v);
	tk_bytebuf_put(b, tmp, n);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void field(struct tk_thrift *t, int16_t id, enum tk_thrift_type type)
{
	int16_t delta = (int16_t)(id - t->last[t->depth]);

	if (delta > 0 && delta <= 15) {
		tk_bytebuf_put_u8(t->out, (uint8_t)(delta << 4 | type));
	} else {
		tk_bytebuf_put_u8(t->out, (uint8_t)type);
		tk_thrift_varint(t->out, zigzag(id));
	}
	t->last[t->depth] = id;
}

void tk_thrift_i32(struct tk_thrift *t, int16_t id, int32_t v)
{
	field(t, id, TK_THRIFT_I32);
	tk_thrift_varint(t->out, zigzag(v));
}

void tk_thrift_i64(struct tk_thrift *t, int16_t id, int64_t v)
{
	field(t, id, TK_THRIFT_I64);
	tk_thrift_varint(t->out, zigzag(v));
}

void tk_thrift_bool(struct tk_thrift *t, int16_t id, bool v)
{
	field(t, id, v ? TK_THRIFT_TRUE : TK_THRIFT_FALSE);
}

void tk_thrift_binary(struct tk_thrift *t, int16_t id, const void *data, size_t len)
{
	field(t, id, TK_THRIFT_BINARY);
	tk_thrift_varint(t->out, len);
	tk_bytebuf_put(t->out, data, len);
}

void tk_thrift_string(struct tk_thrift *t, int16_t id, const char *s)
{
	tk_thrift_binary(t, id, s, strlen(s));
}

static void push(struct tk_thrift *t)
{
	/* The writer's structs nest four deep at most; the bound is a guard. */
	if (t->depth + 1 < TK_THRIFT_MAX_DEPTH)
		t->depth++;
	t->last[t->depth] = 0;
}

void tk_thrift_struct_begin(struct tk_thrift *t, int16_t id)
{
	field(t, id, TK_THRIFT_STRUCT);
	push(t);
}

void tk_thrift_elem_struct_begin(struct tk_thrift *t)
{
	push(t);
}

void tk_thrift_struct_end(struct tk_thrift *t)
{
	tk_bytebuf_put_u8(t->out, 0);
	if (t->depth > 0)
		t->depth--;
}

void tk_thrift_list_begin(struct tk_thrift *t, int16_t id, enum tk_thrift_type elem, uint32_t n)
{
	field(t, id, TK_THRIFT_LIST);
	if (n < 15) {
		tk_bytebuf_put_u8(t->out, (uint8_t)(n << 4 | elem));
	} else {
		tk_bytebuf_put_u8(t->out, (uint8_t)(0xf0 | elem));
		tk_thrift_varint(t->out, n);
	}
}

void tk_thrift_elem_i32(struct tk_thrift *t, int32_t v)
{
	tk_thrift_varint(t->out, zigzag(v));
}

void tk_thrift_elem_string(struct tk_thrift *t, const char *s)
{
	size_t len = strlen(s);

	tk_thrift_varint(t->out, len);
	tk_bytebuf_put(t->out, s, len);
}

/* ------------------------------------------------------------ hybrid */

static void put_rle(struct tk_bytebuf *out, uint32_t v, size_t count, int bit_width)
{
	tk_thrift_varint(out, (uint64_t)count << 1);
	for (int i = 0; i < (bit_width + 7) / 8; i++)
		tk_bytebuf_put_u8(out, (uint8_t)(v >> (8 * i)));
}

/* Bit-pack @n values (@n a multiple of 8, or the page's last values). */
static void put_packed(struct tk_bytebuf *out, const uint32_t *vals, size_t n, int bit_width)
{
	size_t groups = (n + 7) / 8;
	uint64_t acc = 0;
	int bits = 0;

	tk_thrift_varint(out, (uint64_t)groups << 1 | 1);
	if (tk_bytebuf_reserve(out, groups * (size_t)bit_width))
		return;
	for (size_t i = 0; i < groups * 8; i++) {
		acc |= (uint64_t)(i < n ? vals[i] : 0) << bits;
		bits += bit_width;
		while (bits >= 8) {
			out->data[out->len++] = (uint8_t)acc;
			acc >>= 8;
			bits -= 8;
		}
	}
	/* groups * 8 * width bits are a whole number of bytes: nothing is left. */
}

void tk_parquet_rle_hybrid(struct tk_bytebuf *out, const uint32_t *vals, size_t n, int bit_width)
{
	size_t pending = 0; /* start of the values not yet written */
	size_t i = 0;

	while (i < n) {
		size_t run = 1;

		while (i + run < n && vals[i + run] == vals[i])
			run++;
		/*
		 * A bit-packed run holds whole groups of 8: the values waiting
		 * before this run are topped up from it to a multiple of 8, and
		 * only what is left of it (if still 8 or more) becomes RLE.
		 */
		if (run >= 8) {
			size_t fill = (8 - (i - pending) % 8) % 8;

			if (run - fill >= 8) {
				i += fill;
				run -= fill;
				if (i > pending)
					put_packed(out, vals + pending, i - pending, bit_width);
				put_rle(out, vals[i], run, bit_width);
				i += run;
				pending = i;
				continue;
			}
		}
		i += run;
	}
	if (n > pending)
		put_packed(out, vals + pending, n - pending, bit_width);
}

/* ------------------------------------------------------------- delta */

struct bitw {
	struct tk_bytebuf *out;
	uint8_t cur;
	int nbits;
};

static void put_bits(struct bitw *b, uint64_t v, int width)
{
	while (width > 0) {
		int k = 8 - b->nbits < width ? 8 - b->nbits : width;

		b->cur |= (uint8_t)((v & ((1u << k) - 1)) << b->nbits);
		b->nbits += k;
		v >>= k;
		width -= k;
		if (b->nbits == 8) {
			tk_bytebuf_put_u8(b->out, b->cur);
			b->cur = 0;
			b->nbits = 0;
		}
	}
}

static int width_of(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

void tk_parquet_delta(struct tk_bytebuf *out, const int64_t *vals, size_t n)
{
	tk_thrift_varint(out, DELTA_BLOCK);
	tk_thrift_varint(out, DELTA_MINIBLOCKS);
	tk_thrift_varint(out, n);
	tk_thrift_varint(out, n ? zigzag(vals[0]) : 0);
	/* n - 1 deltas, a block of DELTA_BLOCK at a time. */
	for (size_t at = 1; at < n; at += DELTA_BLOCK) {
		size_t cnt = n - at < DELTA_BLOCK ? n - at : DELTA_BLOCK;
		size_t per = DELTA_BLOCK / DELTA_MINIBLOCKS;
		uint64_t d[DELTA_BLOCK];
		int64_t min = INT64_MAX;
		uint8_t widths[DELTA_MINIBLOCKS] = {0};
		struct bitw b = {.out = out};

		for (size_t i = 0; i < cnt; i++) {
			d[i] = (uint64_t)vals[at + i] - (uint64_t)vals[at + i - 1];
			if ((int64_t)d[i] < min)
				min = (int64_t)d[i];
		}
		for (size_t i = 0; i < cnt; i++)
			d[i] -= (uint64_t)min;
		for (size_t m = 0; m * per < cnt; m++) {
			uint64_t all = 0;

			for (size_t i = m * per; i < cnt && i < (m + 1) * per; i++)
				all |= d[i];
			widths[m] = (uint8_t)width_of(all);
		}
		tk_thrift_varint(out, zigzag(min));
		tk_bytebuf_put(out, widths, sizeof(widths));
		/* Only the miniblocks that hold values; the last one padded with zeros. */
		for (size_t m = 0; m * per < cnt; m++)
			for (size_t i = m * per; i < (m + 1) * per; i++)
				put_bits(&b, i < cnt ? d[i] : 0, widths[m]);
	}
}
