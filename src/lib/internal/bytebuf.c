// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bytebuf: one growable byte buffer with checked growth (see bytebuf.h).
 *
 * Growth doubles the capacity from 256 bytes, so n puts cost O(n) copies.
 * Every size sum is checked before it is made: len + n must not wrap, and
 * doubling stops at SIZE_MAX / 2, after which the capacity is the exact
 * need. A failure only sets the sticky error; the bytes already in the
 * buffer stay valid and owned by it, so the builder's cleanup is the same
 * on every path (tk_bytebuf_release()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytebuf.h"
#include "bytes.h"
#include "error.h"

void tk_bytebuf_init(struct tk_bytebuf *b, bool big)
{
	memset(b, 0, sizeof(*b));
	b->big = big;
}

void tk_bytebuf_release(struct tk_bytebuf *b)
{
	if (!b)
		return;
	free(b->data);
	tk_bytebuf_init(b, b->big);
}

void tk_bytebuf_reset(struct tk_bytebuf *b)
{
	b->len = 0;
	b->err = 0;
}

int tk_bytebuf_reserve(struct tk_bytebuf *b, size_t n)
{
	size_t need, cap;
	uint8_t *p;

	if (b->err)
		return b->err;
	if (n > SIZE_MAX - b->len)
		return b->err = -ENOMEM;
	need = b->len + n;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return b->err = -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

void tk_bytebuf_put(struct tk_bytebuf *b, const void *data, size_t n)
{
	if (tk_bytebuf_reserve(b, n) < 0)
		return;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
}

void tk_bytebuf_put_zeros(struct tk_bytebuf *b, size_t n)
{
	if (tk_bytebuf_reserve(b, n) < 0)
		return;
	if (n)
		memset(b->data + b->len, 0, n);
	b->len += n;
}

void tk_bytebuf_put_u8(struct tk_bytebuf *b, uint8_t v)
{
	tk_bytebuf_put(b, &v, 1);
}

void tk_bytebuf_put_u16(struct tk_bytebuf *b, uint16_t v)
{
	uint8_t x[2];

	tk_store_u16(x, v, b->big);
	tk_bytebuf_put(b, x, sizeof(x));
}

void tk_bytebuf_put_u32(struct tk_bytebuf *b, uint32_t v)
{
	uint8_t x[4];

	tk_store_u32(x, v, b->big);
	tk_bytebuf_put(b, x, sizeof(x));
}

void tk_bytebuf_put_u64(struct tk_bytebuf *b, uint64_t v)
{
	uint8_t x[8];

	tk_store_u64(x, v, b->big);
	tk_bytebuf_put(b, x, sizeof(x));
}

void tk_bytebuf_put_cstr(struct tk_bytebuf *b, const char *s)
{
	tk_bytebuf_put(b, s, strlen(s) + 1);
}

size_t tk_bytebuf_skip(struct tk_bytebuf *b, size_t n)
{
	size_t at = b->len;

	tk_bytebuf_put_zeros(b, n);
	return at;
}

void tk_bytebuf_patch_u32(struct tk_bytebuf *b, size_t at, uint32_t v)
{
	if (at <= b->len && b->len - at >= 4)
		tk_store_u32(b->data + at, v, b->big);
}

void tk_bytebuf_patch_u64(struct tk_bytebuf *b, size_t at, uint64_t v)
{
	if (at <= b->len && b->len - at >= 8)
		tk_store_u64(b->data + at, v, b->big);
}

int tk_bytebuf_error(const struct tk_bytebuf *b)
{
	if (b->err)
		return tk_fail(-b->err, "out of memory building a %zu-byte payload", b->len);
	return 0;
}

void *tk_bytebuf_steal(struct tk_bytebuf *b, size_t *len)
{
	void *p;

	if (tk_bytebuf_error(b) < 0 || tk_bytebuf_reserve(b, 1) < 0) {
		tk_bytebuf_error(b);
		tk_bytebuf_release(b);
		return NULL;
	}
	p = b->data;
	*len = b->len;
	tk_bytebuf_init(b, b->big);
	return p;
}
