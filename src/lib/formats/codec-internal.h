/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * codec-internal: what the codec offers the library beyond codec.h.
 */
#ifndef TRACEKIT_CODEC_INTERNAL_H
#define TRACEKIT_CODEC_INTERNAL_H

#include <tracekit/codec.h>

/*
 * tk_codec_decompress() that accepts a block decoding to fewer than
 * @dst_cap bytes (still one whole, valid block with nothing after it): for
 * salvaging a .dat whose stated sizes are damaged. Return: bytes written,
 * or a negative errno as tk_codec_decompress().
 */
int64_t tk_codec_decompress_upto(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
				 uint64_t src_size);

#endif
