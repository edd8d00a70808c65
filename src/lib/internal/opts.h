/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * opts: reading a caller's options struct that may be older or newer than
 * this library (common.h's TK_OPTS(), libbpf's scheme). Every public
 * options struct starts with size_t sz, the size the caller compiled with:
 * fields past it read as zero (an older caller), and fields past what this
 * library knows must be zero (a newer caller asking for something this
 * library cannot do is refused, not ignored).
 */
#ifndef TRACEKIT_INTERNAL_OPTS_H
#define TRACEKIT_INTERNAL_OPTS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "error.h"

/*
 * Copy @src (NULL allowed) into @dst of @dst_size bytes, zeroing what the
 * caller did not know; dst's sz becomes @dst_size.
 * Return: 0; 1 when @src is NULL (@dst all defaults); -EINVAL when sz is
 * not set; -E2BIG when a field this library does not know is set. @type
 * names the struct in the message.
 */
static inline int tk_opts_copy(void *dst, size_t dst_size, const void *src, const char *type)
{
	size_t sz;

	memset(dst, 0, dst_size);
	memcpy(dst, &dst_size, sizeof(dst_size));
	if (!src)
		return 1;
	memcpy(&sz, src, sizeof(sz));
	if (sz < sizeof(size_t))
		return tk_fail(EINVAL, "struct %s: sz is %zu: declare it with TK_OPTS()", type, sz);
	for (size_t i = dst_size; i < sz; i++) {
		if (((const uint8_t *)src)[i])
			return tk_fail(E2BIG,
				       "struct %s: a field past the %zu bytes this library knows "
				       "is set",
				       type, dst_size);
	}
	memcpy((uint8_t *)dst + sizeof(sz), (const uint8_t *)src + sizeof(sz),
	       (sz < dst_size ? sz : dst_size) - sizeof(sz));
	return 0;
}

#endif
