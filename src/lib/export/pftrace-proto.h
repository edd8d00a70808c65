/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * pftrace-proto: the protobuf wire format, written by hand into a tk_bytebuf.
 *
 * Only what a writer needs: varints (wire type 0), length-delimited fields
 * (wire type 2) and nested messages. A field is a varint key
 * (field_number << 3 | wire_type) followed by its value; a length-delimited
 * value is a varint byte count followed by the bytes. Negative int32/int64
 * values are the 10-byte varint of the sign-extended 64-bit value, as the
 * protobuf encoding defines them; sint fields (zigzag) are not used by the
 * messages we write.
 *
 * A nested message's length is known only at its end. pb_begin() leaves
 * one byte for it, the common case (most event messages are under 128
 * bytes); pb_end() writes the length there, moving the body up by the
 * extra bytes a longer length needs. pb_begin_long() leaves four bytes and
 * pb_end_long() writes a padded four-byte varint (0x80-continued, which
 * every protobuf parser reads, and which Perfetto's own writer emits), so
 * a message of up to 256 MiB (a bundle, a packet) is never moved.
 *
 * Errors are the buffer's sticky -ENOMEM: a writer puts a whole message
 * and asks tk_bytebuf_error() once.
 */
#ifndef TRACEKIT_EXPORT_PFTRACE_PROTO_H
#define TRACEKIT_EXPORT_PFTRACE_PROTO_H

#include <stdint.h>
#include <string.h>

#include "internal/bytebuf.h"

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

/* Bytes of the varint of @v (1..10). */
static inline size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline size_t pb_put_varint_at(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/*
 * @v's low @size (4 or 8) bytes, little-endian: one store (the byte loop it
 * replaced was 3% of a .dat's export, bench/README.md bench-pftrace).
 */
static inline void pb_put_fixed_at(uint8_t *p, uint64_t v, unsigned int size)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (size == 8) {
		__builtin_memcpy(p, &v, 8);
	} else {
		uint32_t x = (uint32_t)v;

		__builtin_memcpy(p, &x, 4);
	}
#else
	for (unsigned int i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
#endif
}

/* Room for @n more bytes: a compare, and a call only when the buffer grows. */
static inline int pb_room(struct tk_bytebuf *b, size_t n)
{
	if (__builtin_expect(b->cap - b->len >= n && !b->err, 1))
		return 0;
	return tk_bytebuf_reserve(b, n);
}

static inline void pb_varint(struct tk_bytebuf *b, uint64_t v)
{
	if (pb_room(b, 10))
		return;
	b->len += pb_put_varint_at(b->data + b->len, v);
}

static inline void pb_key(struct tk_bytebuf *b, uint32_t field, unsigned int wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field: unsigned, or a signed value already sign-extended to 64 bits. */
static inline void pb_uint(struct tk_bytebuf *b, uint32_t field, uint64_t v)
{
	if (pb_room(b, 15))
		return;
	b->len += pb_put_varint_at(b->data + b->len, (uint64_t)field << 3 | PB_VARINT);
	b->len += pb_put_varint_at(b->data + b->len, v);
}

/*
 * The same without the room check, for a caller that made room for the
 * whole message first (pb_room(): at most 15 bytes a field, 6 a begin).
 */
static inline void pb_uint_nc(struct tk_bytebuf *b, uint32_t field, uint64_t v)
{
	b->len += pb_put_varint_at(b->data + b->len, (uint64_t)field << 3 | PB_VARINT);
	b->len += pb_put_varint_at(b->data + b->len, v);
}

static inline void pb_fixed_nc(struct tk_bytebuf *b, uint32_t field, uint64_t v, unsigned int size)
{
	uint8_t *p;

	b->len += pb_put_varint_at(b->data + b->len,
				   (uint64_t)field << 3 | (size == 8 ? PB_I64 : PB_I32));
	p = b->data + b->len;
	pb_put_fixed_at(p, v, size);
	b->len += size;
}

static inline size_t pb_begin_nc(struct tk_bytebuf *b, uint32_t field)
{
	b->len += pb_put_varint_at(b->data + b->len, (uint64_t)field << 3 | PB_LEN);
	b->data[b->len++] = 0;
	return b->len;
}

/* A fixed64 (@size 8) or fixed32 (@size 4) field, little-endian. */
static inline void pb_fixed(struct tk_bytebuf *b, uint32_t field, uint64_t v, unsigned int size)
{
	uint8_t *p;

	if (pb_room(b, 13))
		return;
	b->len += pb_put_varint_at(b->data + b->len,
				   (uint64_t)field << 3 | (size == 8 ? PB_I64 : PB_I32));
	p = b->data + b->len;
	pb_put_fixed_at(p, v, size);
	b->len += size;
}

static inline void pb_int(struct tk_bytebuf *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

static inline void pb_bytes(struct tk_bytebuf *b, uint32_t field, const void *data, size_t len)
{
	if (pb_room(b, 15 + len))
		return;
	b->len += pb_put_varint_at(b->data + b->len, (uint64_t)field << 3 | PB_LEN);
	b->len += pb_put_varint_at(b->data + b->len, len);
	if (len) /* an empty field may come with no pointer */
		memcpy(b->data + b->len, data, len);
	b->len += len;
}

static inline void pb_str(struct tk_bytebuf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Open a nested message: returns where its body starts, for pb_end(). */
static inline size_t pb_begin(struct tk_bytebuf *b, uint32_t field)
{
	if (pb_room(b, 6))
		return b->len;
	b->len += pb_put_varint_at(b->data + b->len, (uint64_t)field << 3 | PB_LEN);
	b->data[b->len++] = 0;
	return b->len;
}

static inline void pb_end(struct tk_bytebuf *b, size_t start)
{
	size_t len, extra;

	if (b->err)
		return;
	len = b->len - start;
	if (len < 0x80) {
		b->data[start - 1] = (uint8_t)len;
		return;
	}
	extra = pb_varint_size(len) - 1;
	if (pb_room(b, extra))
		return;
	memmove(b->data + start + extra, b->data + start, len);
	pb_put_varint_at(b->data + start - 1, len);
	b->len += extra;
}

/* The padded four-byte form of the length, for messages that may be long. */
static inline size_t pb_begin_long(struct tk_bytebuf *b, uint32_t field)
{
	if (pb_room(b, 9))
		return b->len;
	b->len += pb_put_varint_at(b->data + b->len, (uint64_t)field << 3 | PB_LEN);
	memset(b->data + b->len, 0, 4);
	b->len += 4;
	return b->len;
}

static inline void pb_end_long(struct tk_bytebuf *b, size_t start)
{
	size_t len;
	uint8_t *p;

	if (b->err)
		return;
	len = b->len - start;
	p = b->data + start - 4;
	p[0] = (uint8_t)(len | 0x80);
	p[1] = (uint8_t)(len >> 7 | 0x80);
	p[2] = (uint8_t)(len >> 14 | 0x80);
	p[3] = (uint8_t)(len >> 21 & 0x7f);
}

#endif
