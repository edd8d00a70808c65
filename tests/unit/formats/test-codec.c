// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the compress module: round trips for every codec, the bound, and
 * every way a block can be corrupt (bad bytes, truncation, trailing data,
 * wrong expected size), plus interoperability with the codecs' own one-shot
 * APIs and the content-size-less zstd frames trace-cmd writes; gzip framing
 * of whole files (the build-id cache's probes.gz).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include <tracekit/codec.h>

#include "tk-test.h"

static const enum tk_compression kinds[] = {TK_COMPRESS_NONE, TK_COMPRESS_ZSTD, TK_COMPRESS_ZLIB};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	return tk_test_xorshift(&rng_state);
}

static uint8_t *random_data(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng();
	return p;
}

/* Text-like data: a few repeating words, like trace event payloads. */
static uint8_t *compressible_data(size_t n)
{
	static const char *words[] = {"sched_switch ", "prev_comm=", "swapper/0 ",
				      "pid=1234 ",     "\0\0\0\0",   "R+ ==> "};
	uint8_t *p = malloc(n ? n : 1);
	size_t i = 0;

	assert_non_null(p);
	while (i < n) {
		const char *w = words[rng() % 6];
		size_t l = strlen(w) ? strlen(w) : 4;

		for (size_t j = 0; j < l && i < n; j++)
			p[i++] = (uint8_t)w[j];
	}
	return p;
}

/* Compress into a buffer of exactly tk_codec_bound() bytes; returns the block. */
static uint8_t *compress_block(struct tk_codec *c, const uint8_t *src, size_t n, size_t *out_size)
{
	uint64_t bound = tk_codec_bound(c, n);
	uint8_t *dst;
	int64_t r;

	assert_true(bound >= n);
	dst = malloc(bound ? bound : 1);
	assert_non_null(dst);
	r = tk_codec_compress(c, dst, bound, src, n);
	if (r < 0)
		fail_msg("compress %zu bytes: %s", n, tk_errmsg());
	assert_true((uint64_t)r <= bound);
	*out_size = (size_t)r;
	return dst;
}

static void round_trip(enum tk_compression kind, int level, const uint8_t *src, size_t n)
{
	struct tk_codec *c = tk_codec_new(kind, level);
	uint8_t *block, *out;
	size_t csize;
	int64_t r;

	assert_non_null(c);
	assert_int_equal(tk_codec_kind(c), kind);
	block = compress_block(c, src, n, &csize);
	/* Exactly n bytes, so ASan catches any write past the capacity. */
	out = malloc(n ? n : 1);
	assert_non_null(out);
	r = tk_codec_decompress(c, out, n, block, csize);
	if (r < 0)
		fail_msg("%s: decompress %zu bytes: %s", tk_codec_name(kind), n, tk_errmsg());
	assert_int_equal(r, n);
	assert_memory_equal(out, src, n);
	/* A second round through the same handle reuses its contexts. */
	r = tk_codec_decompress(c, out, n, block, csize);
	assert_int_equal(r, n);
	free(out);
	free(block);
	tk_codec_free(c);
}

static void test_names(void **state)
{
	enum tk_compression k;

	(void)state;
	for (size_t i = 0; i < NKINDS; i++) {
		assert_int_equal(tk_codec_from_name(tk_codec_name(kinds[i]), &k), 0);
		assert_int_equal(k, kinds[i]);
	}
	assert_string_equal(tk_codec_name(TK_COMPRESS_ZSTD), "zstd");
	assert_string_equal(tk_codec_name((enum tk_compression)42), "unknown");
	assert_string_equal(tk_codec_version(TK_COMPRESS_NONE), "");
	assert_string_equal(tk_codec_version(TK_COMPRESS_ZSTD), ZSTD_versionString());
	assert_string_equal(tk_codec_version(TK_COMPRESS_ZLIB), zlibVersion());

	assert_errno(tk_codec_from_name("lz4", &k), ENOTSUP);
	assert_non_null(strstr(tk_errmsg(), "lz4"));
	assert_errno(tk_codec_from_name("ZSTD", &k), ENOTSUP);
	assert_errno(tk_codec_from_name("", &k), ENOTSUP);
}

static void test_new_errors(void **state)
{
	(void)state;
	errno = 0;
	assert_null(tk_codec_new((enum tk_compression)7, 0));
	assert_int_equal(errno, ENOTSUP);
	errno = 0;
	assert_null(tk_codec_new(TK_COMPRESS_ZLIB, 10));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(tk_codec_new(TK_COMPRESS_ZSTD, 1000));
	assert_int_equal(errno, EINVAL);
	tk_codec_free(NULL);
}

static void test_round_trips(void **state)
{
	static const size_t sizes[] = {0, 1, 3, 4096, 65536 + 17, 1 << 20};

	(void)state;
	for (size_t k = 0; k < NKINDS; k++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			uint8_t *r = random_data(sizes[s]);
			uint8_t *t = compressible_data(sizes[s]);

			round_trip(kinds[k], 0, r, sizes[s]);
			round_trip(kinds[k], 0, t, sizes[s]);
			free(r);
			free(t);
		}
	}
}

static void test_levels(void **state)
{
	uint8_t *t = compressible_data(200000);
	size_t s_default, s_fast, s_explicit;
	struct tk_codec *c;
	uint8_t *b;

	(void)state;
	round_trip(TK_COMPRESS_ZSTD, 1, t, 200000);
	round_trip(TK_COMPRESS_ZSTD, 19, t, 200000);
	round_trip(TK_COMPRESS_ZSTD, -5, t, 200000);
	round_trip(TK_COMPRESS_ZLIB, 1, t, 200000);

	/* Level 0 is zlib's 9 (trace-cmd's choice): same bytes as compress2(9). */
	c = tk_codec_new(TK_COMPRESS_ZLIB, 0);
	b = compress_block(c, t, 200000, &s_default);
	{
		uLongf n = compressBound(200000);
		uint8_t *ref = malloc(n);

		assert_int_equal(compress2(ref, &n, t, 200000, 9), Z_OK);
		assert_int_equal(n, s_default);
		assert_memory_equal(ref, b, n);
		free(ref);
	}
	free(b);
	tk_codec_free(c);

	/* Level 0 is zstd's 3. */
	c = tk_codec_new(TK_COMPRESS_ZSTD, 0);
	b = compress_block(c, t, 200000, &s_default);
	free(b);
	tk_codec_free(c);
	c = tk_codec_new(TK_COMPRESS_ZSTD, 3);
	b = compress_block(c, t, 200000, &s_explicit);
	free(b);
	tk_codec_free(c);
	c = tk_codec_new(TK_COMPRESS_ZSTD, -50);
	b = compress_block(c, t, 200000, &s_fast);
	free(b);
	tk_codec_free(c);
	assert_int_equal(s_default, s_explicit);
	assert_true(s_fast > s_default);
	assert_true(s_default < 200000 / 4);
	free(t);
}

static void test_compress_enospc(void **state)
{
	uint8_t *r = random_data(5000);

	(void)state;
	for (size_t k = 0; k < NKINDS; k++) {
		struct tk_codec *c = tk_codec_new(kinds[k], 0);
		uint8_t *dst = malloc(4000);

		/* Random data does not shrink: 4000 bytes cannot hold it. */
		assert_errno(tk_codec_compress(c, dst, 4000, r, 5000), ENOSPC);
		assert_errno(tk_codec_compress(c, dst, 0, r, 5000), ENOSPC);
		/* The handle still works after a failure. */
		free(dst);
		tk_codec_free(c);
		round_trip(kinds[k], 0, r, 5000);
	}
	free(r);
}

/* Every corruption of a block is reported, never a crash or overflow. */
static void check_corrupt(enum tk_compression kind)
{
	struct tk_codec *c = tk_codec_new(kind, 0);
	uint8_t *t = compressible_data(10000);
	uint8_t *out = malloc(10000);
	uint8_t *big = malloc(20000);
	uint8_t *block, *bad;
	size_t n;

	block = compress_block(c, t, 10000, &n);
	bad = malloc(n + 16);

	/* Truncated by one byte and by half. */
	assert_errno(tk_codec_decompress(c, out, 10000, block, n - 1), EBADMSG);
	assert_errno(tk_codec_decompress(c, out, 10000, block, n / 2), EBADMSG);
	assert_errno(tk_codec_decompress(c, out, 10000, block, 0), EBADMSG);

	/* Trailing garbage, including a second copy of the block. */
	memcpy(bad, block, n);
	memcpy(bad + n, "garbage!", 8);
	assert_errno(tk_codec_decompress(c, out, 10000, bad, n + 8), EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "trailing"));
	bad[n] = 0;
	assert_errno(tk_codec_decompress(c, out, 10000, bad, n + 1), EBADMSG);

	/* Too small an output buffer: exact-size malloc lets ASan see overruns. */
	{
		uint8_t *small = malloc(9999);

		assert_errno(tk_codec_decompress(c, small, 9999, block, n), EBADMSG);
		assert_errno(tk_codec_decompress(c, small, 1, block, n), EBADMSG);
		free(small);
	}
	/* More room than the block fills: the expected size is wrong. */
	assert_errno(tk_codec_decompress(c, big, 20000, block, n), EBADMSG);

	/* Flipped first byte breaks the magic / zlib header. */
	memcpy(bad, block, n);
	bad[0] ^= 0xff;
	assert_errno(tk_codec_decompress(c, out, 10000, bad, n), EBADMSG);

	/*
	 * Flip each byte in turn. zlib's adler32 catches every flip; zstd
	 * frames carry no checksum by default, so a flip inside literals may
	 * decode to other bytes of the right size, but it must never crash
	 * or claim another size.
	 */
	for (size_t i = 0; i < n; i++) {
		int64_t r;

		memcpy(bad, block, n);
		bad[i] ^= 0x5a;
		r = tk_codec_decompress(c, out, 10000, bad, n);
		if (kind == TK_COMPRESS_ZLIB)
			assert_errno(r, EBADMSG);
		else
			assert_true(r == 10000 || r == -EBADMSG);
	}
	/* After all these errors the handle still decodes a good block. */
	assert_int_equal(tk_codec_decompress(c, out, 10000, block, n), 10000);
	assert_memory_equal(out, t, 10000);

	free(bad);
	free(block);
	free(big);
	free(out);
	free(t);
	tk_codec_free(c);
}

static void test_corrupt_zstd(void **state)
{
	(void)state;
	check_corrupt(TK_COMPRESS_ZSTD);
}

static void test_corrupt_zlib(void **state)
{
	(void)state;
	check_corrupt(TK_COMPRESS_ZLIB);
}

static void test_none_sizes(void **state)
{
	struct tk_codec *c = tk_codec_new(TK_COMPRESS_NONE, 0);
	uint8_t src[100], dst[100];

	(void)state;
	memset(src, 0xab, sizeof(src));
	assert_int_equal(tk_codec_bound(c, 100), 100);
	assert_int_equal(tk_codec_compress(c, dst, 100, src, 100), 100);
	assert_errno(tk_codec_compress(c, dst, 99, src, 100), ENOSPC);
	assert_errno(tk_codec_decompress(c, dst, 99, src, 100), EBADMSG);
	assert_errno(tk_codec_decompress(c, dst, 100, src, 99), EBADMSG);
	assert_int_equal(tk_codec_decompress(c, dst, 100, src, 100), 100);
	assert_memory_equal(dst, src, 100);
	tk_codec_free(c);
}

/* trace-cmd writes zstd frames with the content-size flag off. */
static void test_zstd_no_content_size(void **state)
{
	uint8_t *t = compressible_data(50000);
	size_t cap = ZSTD_compressBound(50000), n;
	uint8_t *frame = malloc(cap), *out = malloc(50000), *small = malloc(49999);
	uint8_t *big = malloc(60000);
	ZSTD_CCtx *z = ZSTD_createCCtx();
	struct tk_codec *c = tk_codec_new(TK_COMPRESS_ZSTD, 0);

	(void)state;
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, 0)));
	n = ZSTD_compress2(z, frame, cap, t, 50000);
	assert_false(ZSTD_isError(n));
	assert_true(ZSTD_getFrameContentSize(frame, n) == ZSTD_CONTENTSIZE_UNKNOWN);

	assert_int_equal(tk_codec_decompress(c, out, 50000, frame, n), 50000);
	assert_memory_equal(out, t, 50000);
	assert_errno(tk_codec_decompress(c, small, 49999, frame, n), EBADMSG);
	assert_errno(tk_codec_decompress(c, big, 60000, frame, n), EBADMSG);
	assert_errno(tk_codec_decompress(c, out, 50000, frame, n - 3), EBADMSG);

	/* And our frames decode with zstd's own one-shot API. */
	{
		size_t m;
		uint8_t *mine = compress_block(c, t, 50000, &m);

		assert_int_equal(ZSTD_decompress(out, 50000, mine, m), 50000);
		assert_memory_equal(out, t, 50000);
		free(mine);
	}
	ZSTD_freeCCtx(z);
	tk_codec_free(c);
	free(big);
	free(small);
	free(out);
	free(frame);
	free(t);
}

/* Blocks made by zlib's compress2() decode, and ours decode with uncompress(). */
static void test_zlib_interop(void **state)
{
	uint8_t *t = compressible_data(30000);
	uLongf n = compressBound(30000), back = 30000;
	uint8_t *ref = malloc(n), *out = malloc(30000), *mine;
	struct tk_codec *c = tk_codec_new(TK_COMPRESS_ZLIB, 6);
	size_t m;

	(void)state;
	assert_int_equal(compress2(ref, &n, t, 30000, 1), Z_OK);
	assert_int_equal(tk_codec_decompress(c, out, 30000, ref, n), 30000);
	assert_memory_equal(out, t, 30000);

	mine = compress_block(c, t, 30000, &m);
	memset(out, 0, 30000);
	assert_int_equal(uncompress(out, &back, mine, m), Z_OK);
	assert_int_equal(back, 30000);
	assert_memory_equal(out, t, 30000);

	/* Raw deflate and gzip wrappers are not what a .dat holds. */
	{
		z_stream s;
		uint8_t gz[40000];

		memset(&s, 0, sizeof(s));
		assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY),
				 Z_OK);
		s.next_in = t;
		s.avail_in = 30000;
		s.next_out = gz;
		s.avail_out = sizeof(gz);
		assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
		assert_errno(tk_codec_decompress(c, out, 30000, gz, s.total_out), EBADMSG);
		deflateEnd(&s);
	}
	free(mine);
	free(ref);
	free(out);
	free(t);
	tk_codec_free(c);
}

/* Inflate @src with zlib's own gzip reader: what "gzip -d" would give. */
static uint8_t *zlib_gunzip(const void *src, uint64_t len, uint64_t want)
{
	uint8_t *out = malloc(want + 1);
	z_stream s = {0};

	assert_non_null(out);
	assert_int_equal(inflateInit2(&s, 16 + MAX_WBITS), Z_OK);
	s.next_in = (Bytef *)src;
	s.avail_in = (uInt)len;
	s.next_out = out;
	s.avail_out = (uInt)want + 1;
	assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
	assert_int_equal(s.total_out, want);
	inflateEnd(&s);
	return out;
}

/*
 * gzip framing for whole files: round trips (empty, text, incompressible
 * data that forces the output to grow), zlib's own reader agrees, several
 * members concatenated, the output limit, and corrupt or truncated data
 * reported with the name and an offset.
 */
static void test_gzip(void **state)
{
	static const char text[] = "%sdt_tkdemo:start=start\np:sdt_tkdemo/start /bin/x:0x1129\n";
	const size_t sizes[] = {0, sizeof(text) - 1, 300000};
	void *gz, *plain;
	uint64_t gzlen, plen;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *in = i == 1 ? (uint8_t *)strdup(text) : random_data(sizes[i]), *ref;

		assert_int_equal(tk_codec_gzip_compress(in, sizes[i], 0, &gz, &gzlen), 0);
		assert_true(tk_codec_gzip_detect(gz, gzlen));
		ref = zlib_gunzip(gz, gzlen, sizes[i]);
		assert_memory_equal(ref, in, sizes[i]);
		free(ref);
		assert_int_equal(
			tk_codec_gzip_decompress(gz, gzlen, 1 << 20, "f.gz", &plain, &plen), 0);
		assert_int_equal(plen, sizes[i]);
		assert_memory_equal(plain, in, sizes[i]);
		assert_int_equal(((char *)plain)[plen], '\0');
		free(plain);
		/* A limit below the inflated size. */
		if (sizes[i] > 1000) {
			assert_errno(
				tk_codec_gzip_decompress(gz, gzlen, 1000, "f.gz", &plain, &plen),
				EFBIG);
			assert_null(plain);
			assert_non_null(strstr(tk_errmsg(), "f.gz"));
		}
		free(gz);
		free(in);
	}
	assert_false(tk_codec_gzip_detect("\x1f", 1));
	assert_false(tk_codec_gzip_detect("ab", 2));
	assert_errno(tk_codec_gzip_compress(text, 4, 10, &gz, &gzlen), EINVAL);

	/* Two members back to back inflate to both texts, as gzip -d does. */
	{
		void *a, *b;
		uint64_t al, bl;
		uint8_t *both;

		assert_int_equal(tk_codec_gzip_compress("one\n", 4, 1, &a, &al), 0);
		assert_int_equal(tk_codec_gzip_compress("two\n", 4, 9, &b, &bl), 0);
		both = malloc(al + bl);
		assert_non_null(both);
		memcpy(both, a, al);
		memcpy(both + al, b, bl);
		assert_int_equal(tk_codec_gzip_decompress(both, al + bl, 100, NULL, &plain, &plen),
				 0);
		assert_int_equal(plen, 8);
		assert_string_equal(plain, "one\ntwo\n");
		free(plain);
		/* Cut inside the second member: truncated, past the first member's end. */
		assert_errno(
			tk_codec_gzip_decompress(both, al + bl - 3, 100, "two.gz", &plain, &plen),
			EBADMSG);
		assert_null(plain);
		assert_non_null(strstr(tk_errmsg(), "two.gz"));
		assert_non_null(strstr(tk_errmsg(), "truncated"));
		free(both);
		free(a);
		free(b);
	}
	/* A gzip header followed by garbage, and an empty input. */
	assert_errno(tk_codec_gzip_decompress("\x1f\x8b\x08\x00garbage", 11, 100, "bad.gz", &plain,
					      &plen),
		     EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "bad.gz: offset 0x"));
	assert_errno(tk_codec_gzip_decompress("", 0, 100, "empty.gz", &plain, &plen), EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_new_errors),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_compress_enospc),
		cmocka_unit_test(test_corrupt_zstd),
		cmocka_unit_test(test_corrupt_zlib),
		cmocka_unit_test(test_none_sizes),
		cmocka_unit_test(test_zstd_no_content_size),
		cmocka_unit_test(test_zlib_interop),
		cmocka_unit_test(test_gzip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
