/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Error and log helpers private to the library. Every failing path goes
 * through tk_fail() so that tk_errmsg() always explains the last error.
 */
#ifndef TRACEKIT_INTERNAL_ERROR_H
#define TRACEKIT_INTERNAL_ERROR_H

#include <tracekit/common.h>

/*
 * Record "msg" as this thread's last error and return -err, so callers can
 * write "return tk_fail(EINVAL, "...", ...);". err is a positive errno.
 */
int tk_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The same for constructors, which return NULL and set errno: records the
 * message, sets errno to @err and returns NULL, so a constructor can write
 * "return tk_fail_null(ENOMEM, "out of memory");".
 */
void *tk_fail_null(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Same, for input errors: the message becomes "NAME: offset 0xOFF: msg".
 */
int tk_fail_at(int err, const char *name, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Prefix the current message with "prefix: ", keeping the errno. */
int tk_fail_prefix(int err, const char *prefix);

void tk_log(enum tk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define tk_warn(...) tk_log(TK_LOG_WARN, __VA_ARGS__)

#endif
