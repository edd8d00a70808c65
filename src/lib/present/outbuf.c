// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * outbuf: the output buffer every printer appends to (outbuf.h).
 *
 * Text goes out in blocks of the buffer's size (1 MiB by default): a
 * report writes a few hundred times a second, not once per line. A write
 * error is kept and later text dropped, so the printers need no error path
 * of their own; the caller reads it once at the end. A buffer without a
 * descriptor (fd < 0) keeps all its text, doubling when full, for callers
 * that want the text itself (tests, the fuzz targets).
 *
 * JSON strings of every --json output go through tk_outbuf_json_str(), so
 * that a comm or field holding arbitrary bytes gives valid JSON everywhere
 * in the same way.
 */
#include <tracekit/outbuf.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/error.h"

int tk_outbuf_init(struct tk_outbuf *out, int fd, size_t cap)
{
	if (!cap)
		cap = 1 << 20;
	if (cap < 4096)
		cap = 4096;
	memset(out, 0, sizeof(*out));
	out->buf = malloc(cap);
	if (!out->buf)
		return tk_fail(ENOMEM, "cannot allocate an output buffer of %zu bytes", cap);
	out->cap = cap;
	out->fd = fd;
	return 0;
}

int tk_outbuf_flush(struct tk_outbuf *out)
{
	size_t done = 0;

	/* A memory buffer keeps its text: flushing makes room by growing. */
	if (out->fd < 0) {
		char *b = out->cap <= SIZE_MAX / 2 ? realloc(out->buf, out->cap * 2) : NULL;

		if (b) {
			out->buf = b;
			out->cap *= 2;
			return out->error;
		}
		if (!out->error)
			out->error = tk_fail(ENOMEM, "cannot grow an output buffer of %zu bytes",
					     out->cap);
		out->len = 0;
		return out->error;
	}

	while (done < out->len && !out->error) {
		ssize_t n = write(out->fd, out->buf + done, out->len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			out->error = -errno;
			tk_fail(errno, "cannot write output: %s", strerror(errno));
			break;
		}
		done += (size_t)n;
	}
	out->len = 0;
	return out->error;
}

void tk_outbuf_release(struct tk_outbuf *out)
{
	if (!out)
		return;
	free(out->buf);
	out->buf = NULL;
	out->len = out->cap = 0;
}

void tk_outbuf_write(struct tk_outbuf *out, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		size_t room = out->cap - out->len;
		size_t n = len < room ? len : room;

		memcpy(out->buf + out->len, p, n);
		out->len += n;
		p += n;
		len -= n;
		if (out->len == out->cap)
			tk_outbuf_flush(out);
	}
}

/* Length of the valid UTF-8 sequence at @p (at most @n bytes), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t need;
	uint32_t cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		need = 2, cp = p[0] & 0x1fu;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		need = 3, cp = p[0] & 0x0fu;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		need = 4, cp = p[0] & 0x07u;
	else
		return 0;
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
	if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need;
}

void tk_outbuf_json_str(struct tk_outbuf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t plain = 0;

	tk_outbuf_write(out, "\"", 1);
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
		size_t u;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (u = utf8_len(p + i, len - i))) {
			i += u;
			continue;
		}
		/* Write the run of plain bytes before this one in one piece. */
		tk_outbuf_write(out, p + plain, i - plain);
		if (c == '"' || c == '\\') {
			char pair[2] = {'\\', (char)c};

			tk_outbuf_write(out, pair, 2);
		} else {
			tk_outbuf_write(out, esc, sizeof(esc));
		}
		plain = ++i;
	}
	tk_outbuf_write(out, p + plain, len - plain);
	tk_outbuf_write(out, "\"", 1);
}
