// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * compress: one interface over zstd, zlib and "none".
 *
 * Block formats (what trace-cmd 3.1.6 reads and writes in .dat v7 files):
 *
 *   zstd  one zstd frame. trace-cmd creates frames with the content-size
 *         flag off, so the frame header need not say how large the output
 *         is; the caller always knows it (the .dat chunk header stores it)
 *         and passes it as the capacity.
 *   zlib  one zlib-wrapped deflate stream (RFC 1950: 2-byte header, deflate
 *         data, adler32), as compress2() writes it. Not raw deflate, not gzip.
 *   none  the bytes themselves.
 *
 * Invariants:
 *   - A block decompresses to exactly dst_cap bytes. Fewer bytes, more bytes,
 *     a second frame or any trailing byte after the stream is corrupt input
 *     (-EBADMSG): in a .dat file the expected size is stored beside every
 *     block, so a mismatch always means a damaged file, and catching it here
 *     means no caller can silently use a half-filled buffer. The one
 *     exception is tk_codec_decompress_upto() (codec-internal.h), for the
 *     .dat reader's salvage mode, which accepts a whole block that is
 *     shorter than its damaged stated size.
 *   - Nothing is ever written past dst_cap. zlib's one-shot uncompress()
 *     takes its capacity as an in/out uLongf and reports a too-small buffer
 *     only as Z_BUF_ERROR, which it also uses for truncated input; the stream
 *     API lets us tell the two apart, so the inflate path is written with it.
 *   - Codec contexts live in the handle and are created on first use, so a
 *     reader that only decompresses never pays for a compression context
 *     (a zstd CCtx at level 3 is ~1.3 MB) and the per-block path of the .dat
 *     reader and writer allocates nothing after the first block.
 *   - zlib counts bytes in 32-bit uInt; blocks larger than 4 GiB are fed to
 *     it in pieces, so sizes are uint64_t throughout (trace-cmd's int sizes
 *     broke past 2 GB).
 *
 * gzip (RFC 1952) is zlib's deflate with a different wrapper: a 10-byte
 * header (1f 8b, method 8, flags, mtime, xfl, os), the deflate data, then
 * CRC-32 and the input size mod 2^32, little-endian. A file may hold
 * several such members back to back, and "gzip -d" inflates them all, so
 * tk_codec_gzip_decompress() does too. It serves whole files (the probe caches
 * of the build-id cache), where nothing stores the inflated size: unlike
 * a block, the output grows as it comes, up to a limit the caller sets,
 * so a small bomb cannot take all memory. We write no name and a zero
 * mtime (zlib's default header) so that equal text gives equal files.
 */
#include <tracekit/codec.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "codec-internal.h"
#include "internal/error.h"

#define ZSTD_DEFAULT_LEVEL 3
/* trace-cmd compresses with zlib's best ratio. */
#define ZLIB_DEFAULT_LEVEL 9

struct tk_codec {
	enum tk_compression kind;
	int level;
	ZSTD_CCtx *zstd_c;
	ZSTD_DCtx *zstd_d;
	z_stream deflate;
	z_stream inflate;
	bool deflate_ready;
	bool inflate_ready;
};

TK_API int tk_codec_from_name(const char *name, enum tk_compression *out)
{
	if (!name)
		return tk_fail(EINVAL, "no compression name given");
	if (!strcmp(name, "none"))
		*out = TK_COMPRESS_NONE;
	else if (!strcmp(name, "zstd"))
		*out = TK_COMPRESS_ZSTD;
	else if (!strcmp(name, "zlib"))
		*out = TK_COMPRESS_ZLIB;
	else
		return tk_fail(ENOTSUP, "unknown compression '%.64s' (known: none, zstd, zlib)",
			       name);
	return 0;
}

TK_API const char *tk_codec_name(enum tk_compression kind)
{
	switch (kind) {
	case TK_COMPRESS_NONE:
		return "none";
	case TK_COMPRESS_ZSTD:
		return "zstd";
	case TK_COMPRESS_ZLIB:
		return "zlib";
	}
	return "unknown";
}

TK_API const char *tk_codec_version(enum tk_compression kind)
{
	switch (kind) {
	case TK_COMPRESS_NONE:
		return "";
	case TK_COMPRESS_ZSTD:
		return ZSTD_versionString();
	case TK_COMPRESS_ZLIB:
		return zlibVersion();
	}
	return "";
}

TK_API struct tk_codec *tk_codec_new(enum tk_compression kind, int level)
{
	struct tk_codec *c;

	switch (kind) {
	case TK_COMPRESS_NONE:
		break;
	case TK_COMPRESS_ZSTD:
		if (level == 0)
			level = ZSTD_DEFAULT_LEVEL;
		if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
			return tk_fail_null(EINVAL, "zstd level %d out of range %d..%d", level,
					    ZSTD_minCLevel(), ZSTD_maxCLevel());
		break;
	case TK_COMPRESS_ZLIB:
		if (level == 0)
			level = ZLIB_DEFAULT_LEVEL;
		if (level < 1 || level > 9)
			return tk_fail_null(EINVAL, "zlib level %d out of range 1..9", level);
		break;
	default:
		return tk_fail_null(ENOTSUP, "unknown compression kind %d", (int)kind);
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		return tk_fail_null(ENOMEM, "out of memory allocating a %s codec",
				    tk_codec_name(kind));
	c->kind = kind;
	c->level = level;
	return c;
}

TK_API void tk_codec_free(struct tk_codec *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->zstd_c);
	ZSTD_freeDCtx(c->zstd_d);
	if (c->deflate_ready)
		deflateEnd(&c->deflate);
	if (c->inflate_ready)
		inflateEnd(&c->inflate);
	free(c);
}

TK_API enum tk_compression tk_codec_kind(const struct tk_codec *c)
{
	return c->kind;
}

TK_API uint64_t tk_codec_bound(const struct tk_codec *c, uint64_t src_size)
{
	switch (c->kind) {
	case TK_COMPRESS_ZSTD: {
		size_t b = ZSTD_compressBound(src_size);

		/* Past zstd's maximum input the bound is an error code. */
		return ZSTD_isError(b) ? UINT64_MAX : b;
	}
	case TK_COMPRESS_ZLIB:
		/*
		 * compressBound() covers one deflate stream of stored blocks
		 * plus the zlib wrapper; feeding the input in pieces does not
		 * change the block structure deflate chooses.
		 */
		return compressBound(src_size);
	case TK_COMPRESS_NONE:
	default:
		return src_size;
	}
}

/* Move up to UINT_MAX more bytes of a large buffer into a zlib window. */
static void zlib_feed(Bytef **next, uInt *avail, const uint8_t **pos, uint64_t *left)
{
	uInt n;

	if (*avail != 0 || *left == 0)
		return;
	n = *left > UINT_MAX ? UINT_MAX : (uInt)*left;
	*next = (Bytef *)*pos;
	*avail = n;
	*pos += n;
	*left -= n;
}

static int64_t zstd_compress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
			     uint64_t src_size)
{
	size_t r;

	if (!c->zstd_c) {
		c->zstd_c = ZSTD_createCCtx();
		if (!c->zstd_c)
			return tk_fail(ENOMEM,
				       "zstd: out of memory creating a compression context");
	}
	r = ZSTD_compressCCtx(c->zstd_c, dst, dst_cap, src, src_size, c->level);
	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
			return tk_fail(ENOSPC,
				       "zstd: %" PRIu64 " bytes do not fit in %" PRIu64
				       " bytes of output",
				       src_size, dst_cap);
		if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
			return tk_fail(ENOMEM, "zstd: out of memory compressing");
		return tk_fail(EIO, "zstd: compression failed: %s", ZSTD_getErrorName(r));
	}
	return (int64_t)r;
}

static int64_t zstd_decompress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
			       uint64_t src_size, bool exact)
{
	size_t frame, r;

	if (!c->zstd_d) {
		c->zstd_d = ZSTD_createDCtx();
		if (!c->zstd_d)
			return tk_fail(ENOMEM,
				       "zstd: out of memory creating a decompression context");
	}
	/*
	 * ZSTD_decompressDCtx() would go on to decode a second concatenated
	 * frame; a block is exactly one frame, so measure it first.
	 */
	frame = ZSTD_findFrameCompressedSize(src, src_size);
	if (ZSTD_isError(frame))
		return tk_fail(EBADMSG, "zstd: corrupt block of %" PRIu64 " bytes: %s", src_size,
			       ZSTD_getErrorName(frame));
	if (frame != src_size)
		return tk_fail(EBADMSG, "zstd: %" PRIu64 " trailing bytes after a %zu-byte frame",
			       src_size - frame, frame);
	r = ZSTD_decompressDCtx(c->zstd_d, dst, dst_cap, src, src_size);
	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
			return tk_fail(ENOMEM, "zstd: out of memory decompressing");
		if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
			return tk_fail(EBADMSG,
				       "zstd: block decompresses to more than the expected"
				       " %" PRIu64 " bytes",
				       dst_cap);
		return tk_fail(EBADMSG, "zstd: corrupt block: %s", ZSTD_getErrorName(r));
	}
	if (r != dst_cap && exact)
		return tk_fail(EBADMSG, "zstd: block decompresses to %zu bytes, expected %" PRIu64,
			       r, dst_cap);
	return (int64_t)r;
}

static int64_t zlib_compress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
			     uint64_t src_size)
{
	const uint8_t *in = src, *out = dst;
	uint64_t in_left = src_size, out_left = dst_cap;
	z_stream *s = &c->deflate;
	int r;

	if (!c->deflate_ready) {
		memset(s, 0, sizeof(*s));
		r = deflateInit(s, c->level);
		if (r == Z_MEM_ERROR)
			return tk_fail(ENOMEM, "zlib: out of memory creating a compression stream");
		if (r != Z_OK)
			return tk_fail(EIO, "zlib: deflateInit failed: %d", r);
		c->deflate_ready = true;
	} else if (deflateReset(s) != Z_OK) {
		return tk_fail(EIO, "zlib: deflateReset failed");
	}
	s->avail_in = 0;
	s->avail_out = 0;
	/* deflate rejects a NULL output pointer even with no room. */
	if (!dst_cap)
		return tk_fail(ENOSPC, "zlib: no output space for %" PRIu64 " bytes", src_size);

	for (;;) {
		zlib_feed(&s->next_in, &s->avail_in, &in, &in_left);
		zlib_feed(&s->next_out, &s->avail_out, &out, &out_left);
		r = deflate(s, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			break;
		if (r != Z_OK && r != Z_BUF_ERROR)
			return tk_fail(EIO, "zlib: deflate failed: %d", r);
		if (s->avail_out == 0 && out_left == 0)
			return tk_fail(ENOSPC,
				       "zlib: %" PRIu64 " bytes do not fit in %" PRIu64
				       " bytes of output",
				       src_size, dst_cap);
	}
	return (int64_t)(dst_cap - out_left - s->avail_out);
}

static int64_t zlib_decompress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
			       uint64_t src_size, bool exact)
{
	const uint8_t *in = src, *out = dst;
	uint64_t in_left = src_size, out_left = dst_cap, produced;
	z_stream *s = &c->inflate;
	uint8_t dummy;
	int r;

	if (!c->inflate_ready) {
		memset(s, 0, sizeof(*s));
		r = inflateInit(s);
		if (r == Z_MEM_ERROR)
			return tk_fail(ENOMEM,
				       "zlib: out of memory creating a decompression stream");
		if (r != Z_OK)
			return tk_fail(EIO, "zlib: inflateInit failed: %d", r);
		c->inflate_ready = true;
	} else if (inflateReset(s) != Z_OK) {
		return tk_fail(EIO, "zlib: inflateReset failed");
	}
	s->avail_in = 0;
	s->avail_out = 0;
	/*
	 * inflate() refuses NULL buffers even when their size is 0; give it a
	 * real (empty) window so a zero-sized block still reaches the checks.
	 */
	s->next_in = &dummy;
	s->next_out = &dummy;

	for (;;) {
		zlib_feed(&s->next_in, &s->avail_in, &in, &in_left);
		zlib_feed(&s->next_out, &s->avail_out, &out, &out_left);
		r = inflate(s, Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			break;
		if (r == Z_MEM_ERROR)
			return tk_fail(ENOMEM, "zlib: out of memory decompressing");
		if (r == Z_DATA_ERROR || r == Z_NEED_DICT)
			return tk_fail(EBADMSG, "zlib: corrupt block: %s",
				       s->msg ? s->msg : "needs a preset dictionary");
		if (r != Z_OK && r != Z_BUF_ERROR)
			return tk_fail(EBADMSG, "zlib: inflate failed: %d", r);
		/* Z_BUF_ERROR or Z_OK that stopped for lack of room or input. */
		if (s->avail_out == 0 && out_left == 0)
			return tk_fail(EBADMSG,
				       "zlib: block decompresses to more than the expected"
				       " %" PRIu64 " bytes",
				       dst_cap);
		if (s->avail_in == 0 && in_left == 0)
			return tk_fail(EBADMSG,
				       "zlib: truncated block: %" PRIu64
				       " bytes end before the end of the stream",
				       src_size);
	}
	if (s->avail_in != 0 || in_left != 0)
		return tk_fail(EBADMSG, "zlib: %" PRIu64 " trailing bytes after the stream",
			       (uint64_t)s->avail_in + in_left);
	produced = dst_cap - out_left - s->avail_out;
	if (produced != dst_cap && exact)
		return tk_fail(EBADMSG,
			       "zlib: block decompresses to %" PRIu64 " bytes, expected %" PRIu64,
			       produced, dst_cap);
	return (int64_t)produced;
}

TK_API int64_t tk_codec_compress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
				 uint64_t src_size)
{
	if (src_size > INT64_MAX)
		return tk_fail(EINVAL, "block of %" PRIu64 " bytes is too large", src_size);
	switch (c->kind) {
	case TK_COMPRESS_ZSTD:
		return zstd_compress(c, dst, dst_cap, src, src_size);
	case TK_COMPRESS_ZLIB:
		return zlib_compress(c, dst, dst_cap, src, src_size);
	case TK_COMPRESS_NONE:
	default:
		if (src_size > dst_cap)
			return tk_fail(ENOSPC,
				       "%" PRIu64 " bytes do not fit in %" PRIu64
				       " bytes of output",
				       src_size, dst_cap);
		if (src_size)
			memcpy(dst, src, src_size);
		return (int64_t)src_size;
	}
}

static int64_t decompress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
			  uint64_t src_size, bool exact)
{
	if (dst_cap > INT64_MAX)
		return tk_fail(EINVAL, "output of %" PRIu64 " bytes is too large", dst_cap);
	switch (c->kind) {
	case TK_COMPRESS_ZSTD:
		return zstd_decompress(c, dst, dst_cap, src, src_size, exact);
	case TK_COMPRESS_ZLIB:
		return zlib_decompress(c, dst, dst_cap, src, src_size, exact);
	case TK_COMPRESS_NONE:
	default:
		if (src_size > dst_cap || (exact && src_size != dst_cap))
			return tk_fail(EBADMSG,
				       "uncompressed block of %" PRIu64 " bytes, expected %" PRIu64,
				       src_size, dst_cap);
		if (src_size)
			memcpy(dst, src, src_size);
		return (int64_t)src_size;
	}
}

TK_API int64_t tk_codec_decompress(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
				   uint64_t src_size)
{
	return decompress(c, dst, dst_cap, src, src_size, true);
}

int64_t tk_codec_decompress_upto(struct tk_codec *c, void *dst, uint64_t dst_cap, const void *src,
				 uint64_t src_size)
{
	return decompress(c, dst, dst_cap, src, src_size, false);
}

/* ---- gzip framing, for whole files ---- */

TK_API bool tk_codec_gzip_detect(const void *data, uint64_t len)
{
	const uint8_t *p = data;

	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

TK_API int tk_codec_gzip_compress(const void *src, uint64_t src_size, int level, void **dst,
				  uint64_t *dst_size)
{
	const uint8_t *pos = src;
	uint64_t left = src_size, cap;
	z_stream zs = {0};
	uint8_t *buf;
	int zr;

	*dst = NULL;
	*dst_size = 0;
	if (level < 0 || level > 9)
		return tk_fail(EINVAL, "gzip: level %d is not 1-9", level);
	/* windowBits 16 + 15: deflate with the gzip wrapper instead of zlib's. */
	if (deflateInit2(&zs, level ? level : Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return tk_fail(ENOMEM, "gzip: cannot start zlib");
	/* deflateBound() counts the zlib wrapper, not gzip's 18 bytes; room for both. */
	cap = (src_size > UINT_MAX ? src_size + src_size / 1000 + 4096
				   : (uint64_t)deflateBound(&zs, (uLong)src_size)) +
	      32;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return tk_fail(ENOMEM, "gzip: out of memory");
	}
	do {
		uint64_t out = zs.total_out;

		zlib_feed(&zs.next_in, &zs.avail_in, &pos, &left);
		zs.next_out = buf + out;
		zs.avail_out = cap - out > UINT_MAX ? UINT_MAX : (uInt)(cap - out);
		zr = deflate(&zs, left ? Z_NO_FLUSH : Z_FINISH);
	} while (zr == Z_OK);
	if (zr != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return tk_fail(EIO, "gzip: deflate failed (%d)", zr);
	}
	*dst_size = zs.total_out;
	deflateEnd(&zs);
	*dst = buf;
	return 0;
}

TK_API int tk_codec_gzip_decompress(const void *src, uint64_t src_size, uint64_t max_size,
				    const char *name, void **dst, uint64_t *dst_size)
{
	uint64_t cap, n = 0, consumed = 0, left = src_size;
	const uint8_t *pos = src;
	z_stream zs = {0};
	uint8_t *buf;
	int zr = Z_OK;

	*dst = NULL;
	*dst_size = 0;
	if (!name)
		name = "gzip data";
	/* A first guess from the input; realloc() doubles it up to @max_size. */
	cap = src_size < (UINT64_MAX - 256) / 4 ? src_size * 4 + 256 : UINT64_MAX;
	if (cap > max_size)
		cap = max_size;
	if (cap > SIZE_MAX - 1) {
		/* The limit is the caller's; the address space is ours. */
		cap = SIZE_MAX / 2;
		max_size = cap;
	}
	buf = malloc(cap + 1);
	if (!buf)
		return tk_fail(ENOMEM, "%s: out of memory", name);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return tk_fail(ENOMEM, "%s: cannot start zlib", name);
	}
	for (;;) {
		uInt before;

		zlib_feed(&zs.next_in, &zs.avail_in, &pos, &left);
		if (n == cap) {
			uint8_t *nb;

			if (cap >= max_size) {
				inflateEnd(&zs);
				free(buf);
				return tk_fail_at(EFBIG, name, consumed + zs.total_in,
						  "gzip data inflates beyond %" PRIu64 " bytes",
						  max_size);
			}
			cap = cap > max_size / 2 ? max_size : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				inflateEnd(&zs);
				free(buf);
				return tk_fail(ENOMEM, "%s: out of memory", name);
			}
			buf = nb;
		}
		zs.next_out = buf + n;
		zs.avail_out = cap - n > UINT_MAX ? UINT_MAX : (uInt)(cap - n);
		before = zs.avail_out;
		zr = inflate(&zs, Z_NO_FLUSH);
		n += before - zs.avail_out;
		if (zr == Z_STREAM_END) {
			if (!zs.avail_in && !left)
				break;
			/* Another member follows. */
			consumed += zs.total_in;
			zr = inflateReset(&zs);
			if (zr != Z_OK)
				break;
			continue;
		}
		/*
		 * There is always room to write, so Z_BUF_ERROR means no progress
		 * is possible: the input ends inside a member.
		 */
		if (zr != Z_OK)
			break;
	}
	if (zr != Z_STREAM_END) {
		uint64_t at = consumed + zs.total_in;

		inflateEnd(&zs);
		free(buf);
		return tk_fail_at(EBADMSG, name, at, "corrupt or truncated gzip data");
	}
	inflateEnd(&zs);
	buf[n] = '\0';
	*dst = buf;
	*dst_size = n;
	return 0;
}
