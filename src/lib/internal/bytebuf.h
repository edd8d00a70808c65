/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * bytebuf: the library's one growable byte buffer, for building file
 * payloads (metadata sections, feature sections, TRACING_DATA).
 *
 * Errors are sticky: a put that cannot grow the buffer (size arithmetic
 * that would overflow, or realloc failing) records -ENOMEM, drops that and
 * every later put, and leaves the bytes already there intact. A builder
 * therefore puts a whole payload without checking each call and asks
 * tk_bytebuf_error() once at the end. Numbers are stored in the byte order
 * chosen at init, so one builder serves little- and big-endian files.
 */
#ifndef TRACEKIT_INTERNAL_BYTEBUF_H
#define TRACEKIT_INTERNAL_BYTEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_bytebuf {
	uint8_t *data;
	size_t len, cap;
	bool big; /* numbers are stored big-endian */
	int err;  /* 0 or -ENOMEM, sticky */
};

/* True when this machine stores numbers big-endian (the "host order" of perf.data). */
#define TK_HOST_BIG_ENDIAN (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)

/* An empty buffer; allocates nothing until the first put. */
void tk_bytebuf_init(struct tk_bytebuf *b, bool big);
/* Free the bytes and return to the empty state (the byte order is kept). NULL is accepted. */
void tk_bytebuf_release(struct tk_bytebuf *b);
/* Forget the bytes (and a sticky error) but keep the memory for reuse. */
void tk_bytebuf_reset(struct tk_bytebuf *b);

/* Make room for @n more bytes; 0 or the sticky -ENOMEM. */
int tk_bytebuf_reserve(struct tk_bytebuf *b, size_t n);

void tk_bytebuf_put(struct tk_bytebuf *b, const void *data, size_t n);
void tk_bytebuf_put_zeros(struct tk_bytebuf *b, size_t n);
void tk_bytebuf_put_u8(struct tk_bytebuf *b, uint8_t v);
void tk_bytebuf_put_u16(struct tk_bytebuf *b, uint16_t v);
void tk_bytebuf_put_u32(struct tk_bytebuf *b, uint32_t v);
void tk_bytebuf_put_u64(struct tk_bytebuf *b, uint64_t v);
/* @s with its terminating NUL. */
void tk_bytebuf_put_cstr(struct tk_bytebuf *b, const char *s);

/*
 * Put @n zero bytes to be filled in later (a count known only after what
 * follows). Return: their offset, for tk_bytebuf_patch_*(); after an error
 * the offset is meaningless but patching it is harmless.
 */
size_t tk_bytebuf_skip(struct tk_bytebuf *b, size_t n);
/* Overwrite bytes put earlier; ignored when they lie outside the buffer (after an error). */
void tk_bytebuf_patch_u32(struct tk_bytebuf *b, size_t at, uint32_t v);
void tk_bytebuf_patch_u64(struct tk_bytebuf *b, size_t at, uint64_t v);

/* 0, or -ENOMEM with tk_errmsg() set, when any put failed. */
int tk_bytebuf_error(const struct tk_bytebuf *b);

/*
 * Hand the bytes to the caller (who frees them with free()) and return to
 * the empty state. An empty buffer yields a 1-byte allocation, never NULL,
 * unless allocation fails. Return: the bytes, or NULL with -ENOMEM recorded
 * (the buffer is released).
 */
void *tk_bytebuf_steal(struct tk_bytebuf *b, size_t *len);

#endif
