/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Endian-aware loads and stores, and a bounds-checked cursor over a byte
 * buffer. Every length that comes from a file is checked by the cursor
 * before it is used, so a parser written with it cannot read past its input.
 */
#ifndef TRACEKIT_INTERNAL_BYTES_H
#define TRACEKIT_INTERNAL_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t tk_load_u16(const void *p, bool big)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return big ? __builtin_bswap16(v) : v;
}

static inline uint32_t tk_load_u32(const void *p, bool big)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return big ? __builtin_bswap32(v) : v;
}

static inline uint64_t tk_load_u64(const void *p, bool big)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return big ? __builtin_bswap64(v) : v;
}

static inline void tk_store_u16(void *p, uint16_t v, bool big)
{
	if (big)
		v = __builtin_bswap16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void tk_store_u32(void *p, uint32_t v, bool big)
{
	if (big)
		v = __builtin_bswap32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void tk_store_u64(void *p, uint64_t v, bool big)
{
	if (big)
		v = __builtin_bswap64(v);
	memcpy(p, &v, sizeof(v));
}

/*
 * A read cursor. base_offset is the file offset of data[0], so errors can
 * name the absolute offset of the byte that was bad.
 */
struct tk_cursor {
	const uint8_t *data;
	size_t len;
	size_t pos;
	uint64_t base_offset;
	bool big;
};

static inline void tk_cursor_init(struct tk_cursor *c, const void *data, size_t len,
				  uint64_t base_offset, bool big)
{
	c->data = data;
	c->len = len;
	c->pos = 0;
	c->base_offset = base_offset;
	c->big = big;
}

static inline size_t tk_cursor_left(const struct tk_cursor *c)
{
	return c->len - c->pos;
}

static inline uint64_t tk_cursor_offset(const struct tk_cursor *c)
{
	return c->base_offset + c->pos;
}

static inline bool tk_cursor_u16(struct tk_cursor *c, uint16_t *v)
{
	if (tk_cursor_left(c) < 2)
		return false;
	*v = tk_load_u16(c->data + c->pos, c->big);
	c->pos += 2;
	return true;
}

static inline bool tk_cursor_u32(struct tk_cursor *c, uint32_t *v)
{
	if (tk_cursor_left(c) < 4)
		return false;
	*v = tk_load_u32(c->data + c->pos, c->big);
	c->pos += 4;
	return true;
}

static inline bool tk_cursor_u64(struct tk_cursor *c, uint64_t *v)
{
	if (tk_cursor_left(c) < 8)
		return false;
	*v = tk_load_u64(c->data + c->pos, c->big);
	c->pos += 8;
	return true;
}

/* Borrow n bytes; false when fewer are left. */
static inline bool tk_cursor_bytes(struct tk_cursor *c, uint64_t n, const uint8_t **out)
{
	if (n > tk_cursor_left(c))
		return false;
	*out = c->data + c->pos;
	c->pos += n;
	return true;
}

/* Borrow a NUL-terminated string (the NUL is consumed); false without one. */
static inline bool tk_cursor_cstr(struct tk_cursor *c, const char **out, size_t *len)
{
	const uint8_t *start = c->data + c->pos;
	const uint8_t *nul = memchr(start, 0, tk_cursor_left(c));

	if (!nul)
		return false;
	*out = (const char *)start;
	if (len)
		*len = (size_t)(nul - start);
	c->pos += (size_t)(nul - start) + 1;
	return true;
}

#endif
