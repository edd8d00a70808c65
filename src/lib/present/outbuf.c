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
