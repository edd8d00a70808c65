/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * compress: zstd, zlib and "none" behind one interface.
 *
 * A codec handle keeps its compression and decompression contexts so that
 * the per-chunk path of the .dat reader and writer allocates nothing.
 * Blocks are self-contained: a zstd frame (the content size is not relied
 * on, the caller passes the expected size as capacity, because trace-cmd
 * writes frames without it) or a zlib-wrapped deflate stream (compress2).
 *
 * Whole files in gzip framing (RFC 1952), whose inflated size nothing
 * stores, have their own two calls: tk_codec_gzip_compress() and
 * tk_codec_gzip_decompress(), which grow the output as it comes.
 */
#ifndef TRACEKIT_COMPRESS_H
#define TRACEKIT_COMPRESS_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tk_compression {
	TK_COMPRESS_NONE = 0,
	TK_COMPRESS_ZSTD = 1,
	TK_COMPRESS_ZLIB = 2,
};

struct tk_codec;

/**
 * tk_codec_from_name() - parse "none", "zstd" or "zlib"
 * @name: the name as written in a .dat header or on a command line
 * @out:  receives the kind
 *
 * Return: 0, or -ENOTSUP for an unknown name (message names it).
 */
TK_API int tk_codec_from_name(const char *name, enum tk_compression *out);

/**
 * tk_codec_name() - "none", "zstd" or "zlib"
 * Return: static string; "unknown" for an out-of-range value.
 */
TK_API const char *tk_codec_name(enum tk_compression kind);

/**
 * tk_codec_version() - version string of the linked codec library
 *
 * What a .dat v7 header stores after the codec name: "" for none,
 * ZSTD_versionString() for zstd, zlibVersion() for zlib.
 * Return: static string.
 */
TK_API const char *tk_codec_version(enum tk_compression kind);

/**
 * tk_codec_new() - create a codec handle
 * @kind:  which codec
 * @level: compression level; 0 picks the codec's default (zstd 3, zlib 9
 *         as trace-cmd uses)
 *
 * Context: the handle is used by one thread at a time.
 * Return: handle to free with tk_codec_free(), or NULL with errno set
 * (ENOMEM, ENOTSUP, EINVAL for a level the codec does not have).
 */
TK_API struct tk_codec *tk_codec_new(enum tk_compression kind, int level);

/** tk_codec_free() - free a codec handle; NULL is accepted. */
TK_API void tk_codec_free(struct tk_codec *codec);

/** tk_codec_kind() - the kind a handle was created with. */
TK_API enum tk_compression tk_codec_kind(const struct tk_codec *codec);

/**
 * tk_codec_bound() - worst-case compressed size of @src_size bytes
 * Return: a capacity that tk_codec_compress() never exceeds.
 */
TK_API uint64_t tk_codec_bound(const struct tk_codec *codec, uint64_t src_size);

/**
 * tk_codec_compress() - compress one block
 * @dst, @dst_cap: output buffer (tk_codec_bound() bytes are always enough)
 * @src, @src_size: input
 *
 * "none" copies.
 * Return: compressed size (>= 0), or -ENOSPC when @dst_cap is too small,
 * -EIO on a codec failure, -ENOMEM.
 */
TK_API int64_t tk_codec_compress(struct tk_codec *codec, void *dst, uint64_t dst_cap,
				 const void *src, uint64_t src_size);

/**
 * tk_codec_decompress() - decompress one block
 * @dst, @dst_cap: output buffer; the expected uncompressed size
 * @src, @src_size: one complete compressed block
 *
 * The block must decode to exactly @dst_cap bytes (the .dat format always
 * stores the uncompressed size): corrupt input, trailing garbage, and
 * output shorter or longer than @dst_cap are errors; nothing is written
 * past @dst_cap.
 * Return: uncompressed size (== @dst_cap), or -EBADMSG for corrupt data or
 * a size mismatch
 * (tk_errmsg() says which), -ENOMEM.
 */
TK_API int64_t tk_codec_decompress(struct tk_codec *codec, void *dst, uint64_t dst_cap,
				   const void *src, uint64_t src_size);

/**
 * tk_codec_gzip_detect() - whether @data starts with the gzip magic (1f 8b)
 * @data, @len: the first bytes of a file (fewer than 2 are never gzip)
 *
 * Context: any thread.
 * Return: true for gzip data.
 */
TK_API bool tk_codec_gzip_detect(const void *data, uint64_t len);

/**
 * tk_codec_gzip_compress() - compress a buffer into one gzip member (RFC 1952)
 * @src, @src_size: input
 * @level: zlib level 1-9; 0 picks 9 (best ratio)
 * @dst: receives a malloc'ed buffer, for the caller to free()
 * @dst_size: receives its size
 *
 * The header has no file name and no time stamp, so equal input gives
 * equal output. Inputs beyond 4 GiB are fed to zlib in pieces.
 * Context: any thread; allocates.
 * Return: 0, -EINVAL for a bad level, -EIO on a zlib failure, -ENOMEM;
 * tk_errmsg() says which. On failure *@dst is NULL.
 */
TK_API int tk_codec_gzip_compress(const void *src, uint64_t src_size, int level, void **dst,
				  uint64_t *dst_size);

/**
 * tk_codec_gzip_decompress() - inflate gzip data: one member or several concatenated
 * @src, @src_size: the whole gzip image
 * @max_size: the largest inflated size accepted
 * @name: what the data is called in messages (a file name); NULL for "gzip data"
 * @dst: receives a malloc'ed buffer with a NUL after its @dst_size bytes,
 *       for the caller to free()
 * @dst_size: receives the inflated size
 *
 * Concatenated members are inflated one after another, as gzip -d does.
 * Context: any thread; allocates.
 * Return: 0; -EBADMSG for corrupt or truncated data (the message names
 * @name and the offset of the input where decoding failed); -EFBIG when
 * the output would exceed @max_size; -ENOMEM. On failure *@dst is NULL.
 */
TK_API int tk_codec_gzip_decompress(const void *src, uint64_t src_size, uint64_t max_size,
				    const char *name, void **dst, uint64_t *dst_size);

#ifdef __cplusplus
}
#endif
#endif
