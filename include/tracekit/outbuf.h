/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * outbuf: text written to a descriptor in big blocks, or kept in memory.
 * The report and the event printers append to one; nothing is written
 * per line.
 */
#ifndef TRACEKIT_OUTBUF_H
#define TRACEKIT_OUTBUF_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tk_outbuf - an output buffer written to a descriptor in big blocks
 *
 * Public so that it can live on the stack. tk_outbuf_init() allocates
 * @cap bytes; text is appended by the printers and written to @fd when the
 * buffer fills; tk_outbuf_flush() writes the rest. A write error is kept in
 * @error (negative errno) and later output is dropped.
 */
struct tk_outbuf {
	char *buf;
	size_t len;
	size_t cap;
	int fd;
	int error;
};

/** tk_outbuf_init() - allocate @cap bytes (0: 1 MiB). Return: 0 or -ENOMEM.
 * A negative @fd keeps the text in memory: flushing grows the buffer. */
TK_API int tk_outbuf_init(struct tk_outbuf *out, int fd, size_t cap);
/** tk_outbuf_flush() - write what is buffered. Return: 0 or the first write error. */
TK_API int tk_outbuf_flush(struct tk_outbuf *out);
/** tk_outbuf_release() - free the buffer (does not flush). */
TK_API void tk_outbuf_release(struct tk_outbuf *out);
/** tk_outbuf_write() - append @len bytes. */
TK_API void tk_outbuf_write(struct tk_outbuf *out, const void *data, size_t len);
/**
 * tk_outbuf_json_str() - append @len bytes of @s as a quoted JSON string
 *
 * Quotes and backslashes are escaped, control bytes and DEL written as
 * \u00XX; valid UTF-8 passes through and any other byte (a comm or field
 * holding Latin-1 or binary) becomes \u00XX, so the output is always valid
 * JSON in valid UTF-8 whatever the trace held.
 */
TK_API void tk_outbuf_json_str(struct tk_outbuf *out, const char *s, size_t len);

#ifdef __cplusplus
}
#endif
#endif
