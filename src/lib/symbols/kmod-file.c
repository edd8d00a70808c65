// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * kmod-file: compressed kernel modules.
 *
 * Distributions ship modules compressed (Fedora and openSUSE .ko.xz, some
 * .ko.gz; Arch and recent Ubuntu .ko.zst), and a perf.data then names the
 * module by that path. perf 6.1 reads a module whose recorded name ends in
 * ".ko.gz" or ".ko.xz" by decompressing it, choosing the codec by that
 * name and not by the file's contents: a file found for it (at the path,
 * below --symfs, or the build-id cache's "elf", which `perf buildid-cache
 * --add` fills with the compressed bytes) is inflated when it starts with
 * that codec's magic and read as it is otherwise, so gzip data under a
 * ".ko.xz" name names nothing. ".ko.zst" is not among perf's codecs (6.1
 * to 6.17): such a module's addresses are [unknown] there, and here.
 *
 * The image is inflated into memory, capped at TK_KMOD_MAX_IMAGE (a
 * stream that claims more is refused rather than exhausting memory), and
 * parsed by tk_elf_open_mem(); the build id is checked on the image, so
 * the rule that names only come from the recorded build id holds for a
 * compressed module as for any other file. Every byte is untrusted: a
 * damaged stream is one error naming the file and the offset where the
 * codec stopped.
 */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "error.h"
#include "fsutil.h"
#include "kmod-file.h"

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !memcmp(s + n - t, tail, t);
}

enum tk_kmod_comp tk_kmod_compression(const char *name)
{
	if (ends_with(name, ".ko.gz"))
		return TK_KMOD_GZ;
	if (ends_with(name, ".ko.xz"))
		return TK_KMOD_XZ;
	return TK_KMOD_PLAIN;
}

/* Whether @data starts with @comp's magic (gzip: 1f 8b; xz: fd "7zXZ" 00). */
static bool has_magic(const uint8_t *data, size_t len, enum tk_kmod_comp comp)
{
	static const uint8_t gz[] = {0x1f, 0x8b}, xz[] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

	if (comp == TK_KMOD_GZ)
		return len >= sizeof(gz) && !memcmp(data, gz, sizeof(gz));
	if (comp == TK_KMOD_XZ)
		return len >= sizeof(xz) && !memcmp(data, xz, sizeof(xz));
	return false;
}

/* Grow *@buf (capacity *@cap) for more output; false with the error set at the cap. */
static bool grow(uint8_t **buf, size_t *cap, const char *name)
{
	size_t want = *cap ? *cap * 2 : 1u << 20;
	uint8_t *nb;

	if (*cap >= TK_KMOD_MAX_IMAGE) {
		tk_fail(EFBIG, "%s: decompresses to more than %u MiB: not a kernel module", name,
			TK_KMOD_MAX_IMAGE >> 20);
		return false;
	}
	if (want > TK_KMOD_MAX_IMAGE)
		want = TK_KMOD_MAX_IMAGE;
	nb = realloc(*buf, want);
	if (!nb) {
		tk_fail(ENOMEM, "out of memory");
		return false;
	}
	*buf = nb;
	*cap = want;
	return true;
}

static int inflate_gz(const uint8_t *data, size_t len, const char *name, uint8_t **out,
		      size_t *out_len)
{
	z_stream z = {0};
	uint8_t *buf = NULL;
	size_t cap = 0;
	int zr, r = 0;

	/* 16 + MAX_WBITS: a gzip header and trailer around the deflate data. */
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return tk_fail(ENOMEM, "out of memory");
	z.next_in = (Bytef *)data;
	/* One module is far below 4 GiB; a larger input is cut to uInt and fails as cut short. */
	z.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
	do {
		if (z.total_out == cap) {
			if (!grow(&buf, &cap, name)) {
				r = -errno;
				break;
			}
		}
		z.next_out = buf + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			break;
		if (zr == Z_OK)
			continue;
		if (zr == Z_BUF_ERROR && z.avail_out)
			r = tk_fail_at(EBADMSG, name, z.total_in, "gzip stream cut short");
		else if (zr == Z_MEM_ERROR)
			r = tk_fail(ENOMEM, "out of memory");
		else if (zr != Z_BUF_ERROR)
			r = tk_fail_at(EBADMSG, name, z.total_in, "damaged gzip stream (%s)",
				       z.msg ? z.msg : "zlib error");
	} while (r == 0);
	if (r == 0) {
		*out = buf;
		*out_len = z.total_out;
	} else {
		free(buf);
	}
	inflateEnd(&z);
	return r;
}

static int inflate_xz(const uint8_t *data, size_t len, const char *name, uint8_t **out,
		      size_t *out_len)
{
	lzma_stream x = LZMA_STREAM_INIT;
	uint8_t *buf = NULL;
	size_t cap = 0;
	lzma_ret xr;
	int r = 0;

	/* The decoder's own memory is capped too: xz's -9 needs 65 MiB. */
	if (lzma_stream_decoder(&x, 256u << 20, LZMA_CONCATENATED) != LZMA_OK)
		return tk_fail(ENOMEM, "out of memory");
	x.next_in = data;
	x.avail_in = len;
	do {
		if (x.total_out == cap) {
			if (!grow(&buf, &cap, name)) {
				r = -errno;
				break;
			}
		}
		x.next_out = buf + x.total_out;
		x.avail_out = cap - (size_t)x.total_out;
		xr = lzma_code(&x, x.avail_in ? LZMA_RUN : LZMA_FINISH);
		if (xr == LZMA_STREAM_END)
			break;
		if (xr == LZMA_OK)
			continue;
		if (xr == LZMA_MEM_ERROR || xr == LZMA_MEMLIMIT_ERROR)
			r = tk_fail(ENOMEM, "%s: xz stream needs too much memory", name);
		else if (xr == LZMA_BUF_ERROR)
			r = tk_fail_at(EBADMSG, name, x.total_in, "xz stream cut short");
		else
			r = tk_fail_at(EBADMSG, name, x.total_in, "damaged xz stream (code %d)",
				       (int)xr);
	} while (r == 0);
	if (r == 0) {
		*out = buf;
		*out_len = (size_t)x.total_out;
	} else {
		free(buf);
	}
	lzma_end(&x);
	return r;
}

int tk_kmod_inflate(const void *data, size_t len, enum tk_kmod_comp comp, const char *name,
		    void **out, size_t *out_len)
{
	uint8_t *o = NULL;
	int r;

	if (comp == TK_KMOD_GZ)
		r = inflate_gz(data, len, name, &o, out_len);
	else if (comp == TK_KMOD_XZ)
		r = inflate_xz(data, len, name, &o, out_len);
	else
		return tk_fail(EINVAL, "%s: not a compressed module", name);
	if (r == 0)
		*out = o;
	return r;
}

struct tk_elf *tk_kmod_elf_open(const char *path, enum tk_kmod_comp comp)
{
	uint8_t head[8];
	struct tk_elf *elf;
	size_t len, image_len;
	void *image;
	char *bytes;
	ssize_t n;
	int fd, r;

	if (comp == TK_KMOD_PLAIN)
		return tk_elf_open(path);
	/* Peek first: an uncompressed file under a compressed name is read as it is. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		tk_fail_errno(errno, path);
		return NULL;
	}
	n = read(fd, head, sizeof(head));
	close(fd);
	if (n < 0 || !has_magic(head, (size_t)n, comp))
		return tk_elf_open(path);
	r = tk_read_file(path, &bytes, &len);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	r = tk_kmod_inflate(bytes, len, comp, path, &image, &image_len);
	free(bytes);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	elf = tk_elf_open_mem(image, image_len, path);
	free(image);
	return elf;
}

int tk_kmod_file_build_id(const char *path, enum tk_kmod_comp comp, char *hex)
{
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf = tk_kmod_elf_open(path, comp);
	int n;

	if (!elf)
		return -errno;
	n = tk_elf_build_id(elf, id, sizeof(id));
	tk_elf_close(elf);
	if (n < 0)
		return n;
	return tk_elf_build_id_hex(id, (size_t)n, hex, TK_BUILD_ID_HEX_MAX);
}
