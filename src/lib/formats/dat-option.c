// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dat-option: one .dat option's payload as a line of "key=value" text, for
 * tools that show a file's structure (tracekit dump).
 *
 * Payloads by id (numbers in the file's byte order):
 *   DONE            v6: none (the end of an options block); v7: u64 offset
 *                   of the next OPTIONS section, 0 for none
 *   DATE, TRACECLOCK, UNAME, VERSION, OFFSET, HOOK
 *                   text, NUL and newline terminated
 *   CPUSTAT         a CPU's stats text; its first line names the CPU
 *   CPUCOUNT        u32
 *   TRACEID         u64
 *   TSC2NSEC        u32 mult, u32 shift, u64 offset
 *   TIME_SHIFT      u64 host trace id, u32 flags, u32 CPU count, then the
 *                   per-CPU samples (dat-guest.c): shown as the head and
 *                   the sample count
 *   GUEST           name, u64 trace id, u32 vCPU count, {u32 vcpu, u32 pid}
 *   BUFFER          v6: u64 flyrecord offset, name; v7: u64 section offset,
 *                   name, clock, u32 page size, u32 CPU count (+ CPU table)
 *   BUFFER_TEXT     u64 section offset, name, clock
 *   16..21          u64 offset of the metadata section of the same id
 * The payloads are untrusted like the rest of the file: every read goes
 * through the bounded cursor, and a payload too short for its id reads
 * "(malformed)". Strings are quoted with control and non-ASCII bytes
 * escaped, so that a hostile file cannot forge output lines.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tracekit/dat.h>

#include "internal/bytes.h"

/* Text built into the caller's buffer; len counts what would be written. */
struct text {
	char *buf;
	size_t cap, len;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	size_t room = t->len < t->cap ? t->cap - t->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
}

/* @s (at most @len bytes, up to a NUL) in double quotes, cut at @max bytes with "...". */
static void put_quoted(struct text *t, const char *s, size_t len, size_t max)
{
	put(t, "\"");
	for (size_t i = 0; i < len && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == max) {
			put(t, "...");
			break;
		}
		if (ch == '"' || ch == '\\')
			put(t, "\\%c", ch);
		else if (ch == '\n')
			put(t, "\\n");
		else if (ch == '\t')
			put(t, "\\t");
		else if (ch < 0x20 || ch >= 0x7f)
			put(t, "\\x%02x", ch);
		else
			put(t, "%c", ch);
	}
	put(t, "\"");
}

/* Length of a text value without its trailing newlines, blanks and NUL. */
static size_t trimmed_len(const char *s, size_t len)
{
	const char *nul = memchr(s, 0, len);

	if (nul)
		len = (size_t)(nul - s);
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	return len;
}

static size_t line_len(const char *s, size_t len)
{
	const char *nl = memchr(s, '\n', len);

	return nl ? (size_t)(nl - s) : len;
}

static bool is_metadata_id(uint16_t id)
{
	return id >= TK_DAT_SECTION_HEADER_INFO && id <= TK_DAT_SECTION_CMDLINES;
}

/* Return: true when the payload was long enough for its id. */
static bool describe(struct text *t, const struct tk_dat_info *info, const struct tk_dat_option *o)
{
	struct tk_cursor c;
	const char *s, *name, *clock;
	size_t n, nn, cn;
	uint64_t v64;
	uint32_t v32, a, b;

	tk_cursor_init(&c, o->data, o->size, 0, info->big_endian);
	switch (o->id) {
	case TK_DAT_OPTION_DONE:
		if (o->size == 0) {
			put(t, " end");
			return true;
		}
		if (!tk_cursor_u64(&c, &v64))
			return false;
		if (v64)
			put(t, " next=0x%" PRIx64, v64);
		else
			put(t, " next=none");
		return true;
	case TK_DAT_OPTION_DATE:
	case TK_DAT_OPTION_TRACECLOCK:
	case TK_DAT_OPTION_UNAME:
	case TK_DAT_OPTION_VERSION:
	case TK_DAT_OPTION_OFFSET:
	case TK_DAT_OPTION_HOOK:
		if (o->size == 0)
			return false;
		put(t, " value=");
		put_quoted(t, o->data, trimmed_len(o->data, o->size), 256);
		return true;
	case TK_DAT_OPTION_CPUSTAT:
		if (o->size == 0)
			return false;
		s = o->data;
		n = trimmed_len(s, o->size);
		while (n > 0 && s[0] == '\n') {
			s++;
			n--;
		}
		put(t, " first_line=");
		put_quoted(t, s, line_len(s, n), 128);
		return true;
	case TK_DAT_OPTION_CPUCOUNT:
		if (!tk_cursor_u32(&c, &v32))
			return false;
		put(t, " cpus=%u", v32);
		return true;
	case TK_DAT_OPTION_TRACEID:
		if (!tk_cursor_u64(&c, &v64))
			return false;
		put(t, " id=0x%016" PRIx64, v64);
		return true;
	case TK_DAT_OPTION_TSC2NSEC:
		if (!tk_cursor_u32(&c, &a) || !tk_cursor_u32(&c, &b) || !tk_cursor_u64(&c, &v64))
			return false;
		put(t, " mult=%u shift=%u offset=%" PRIu64, a, b, v64);
		return true;
	case TK_DAT_OPTION_TIME_SHIFT: {
		uint64_t samples = 0;

		if (!tk_cursor_u64(&c, &v64) || !tk_cursor_u32(&c, &a) || !tk_cursor_u32(&c, &b))
			return false;
		put(t, " host_trace_id=0x%016" PRIx64 " flags=0x%x%s cpus=%u", v64, a,
		    a & TK_DAT_TSYNC_INTERPOLATE ? "(interpolate)" : "", b);
		for (uint32_t i = 0; i < b; i++) {
			const uint8_t *skip;

			if (!tk_cursor_u32(&c, &v32) ||
			    !tk_cursor_bytes(&c, (uint64_t)v32 * 24, &skip))
				return false;
			samples += v32;
		}
		put(t, " samples=%" PRIu64 " fraction_bits=%s", samples,
		    tk_cursor_left(&c) ? "yes" : "no");
		return true;
	}
	case TK_DAT_OPTION_GUEST:
		if (!tk_cursor_cstr(&c, &name, &nn) || !tk_cursor_u64(&c, &v64) ||
		    !tk_cursor_u32(&c, &v32))
			return false;
		put(t, " name=");
		put_quoted(t, name, nn, 128);
		put(t, " trace_id=0x%016" PRIx64 " vcpus=%u", v64, v32);
		for (uint32_t i = 0; i < v32 && i < 64; i++) {
			if (!tk_cursor_u32(&c, &a) || !tk_cursor_u32(&c, &b))
				return false;
			put(t, "%s%u:%d", i ? "," : " pids=", a, (int32_t)b);
		}
		if (v32 > 64)
			put(t, ",...");
		return true;
	case TK_DAT_OPTION_BUFFER:
		if (!tk_cursor_u64(&c, &v64) || !tk_cursor_cstr(&c, &name, &nn))
			return false;
		if (info->version < 7) {
			put(t, " flyrecord=0x%" PRIx64 " name=", v64);
			put_quoted(t, name, nn, 128);
			return true;
		}
		if (!tk_cursor_cstr(&c, &clock, &cn) || !tk_cursor_u32(&c, &a) ||
		    !tk_cursor_u32(&c, &b))
			return false;
		put(t, " section=0x%" PRIx64 " name=", v64);
		put_quoted(t, name, nn, 128);
		put(t, " clock=");
		put_quoted(t, clock, cn, 64);
		put(t, " page_size=%u cpus=%u", a, b);
		return true;
	case TK_DAT_OPTION_BUFFER_TEXT:
		if (!tk_cursor_u64(&c, &v64) || !tk_cursor_cstr(&c, &name, &nn) ||
		    !tk_cursor_cstr(&c, &clock, &cn))
			return false;
		put(t, " section=0x%" PRIx64 " name=", v64);
		put_quoted(t, name, nn, 128);
		put(t, " clock=");
		put_quoted(t, clock, cn, 64);
		return true;
	default:
		if (is_metadata_id(o->id)) {
			if (!tk_cursor_u64(&c, &v64))
				return false;
			put(t, " section=0x%" PRIx64, v64);
		}
		return true;
	}
}

size_t tk_dat_option_describe(const struct tk_dat *dat, const struct tk_dat_option *o, char *buf,
			      size_t cap)
{
	struct text t = {.buf = buf, .cap = cap};

	if (cap)
		buf[0] = '\0';
	if (!describe(&t, tk_dat_get_info(dat), o))
		put(&t, " (malformed)");
	return t.len;
}
