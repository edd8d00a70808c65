// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * The thread-local error message and the warning log.
 *
 * The library reports failures as negative errno values; the text that
 * tells a user what went wrong (file, offset, what was expected) lives in a
 * per-thread buffer so that concurrent readers never see each other's
 * messages and no allocation is needed on the error path.
 */
#include "error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define TK_ERRMSG_MAX 512

static _Thread_local char last_error[TK_ERRMSG_MAX];

static tk_log_fn log_handler;
static void *log_ctx;
static enum tk_log_level log_max_level = TK_LOG_WARN;

TK_API const char *tk_errmsg(void)
{
	return last_error;
}

static int set_error(int err, const char *prefix, const char *fmt, va_list ap)
{
	char msg[TK_ERRMSG_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(last_error, sizeof(last_error), "%s%s", prefix, msg);
	return err > 0 ? -err : (err == 0 ? -EINVAL : err);
}

int tk_fail(int err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = set_error(err, "", fmt, ap);
	va_end(ap);
	return ret;
}

void *tk_fail_null(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(err, "", fmt, ap);
	va_end(ap);
	errno = err;
	return NULL;
}

int tk_fail_at(int err, const char *name, uint64_t offset, const char *fmt, ...)
{
	char prefix[256];
	va_list ap;
	int ret;

	snprintf(prefix, sizeof(prefix), "%s: offset 0x%" PRIx64 ": ", name ? name : "(input)",
		 offset);
	va_start(ap, fmt);
	ret = set_error(err, prefix, fmt, ap);
	va_end(ap);
	return ret;
}

int tk_fail_prefix(int err, const char *prefix)
{
	char old[TK_ERRMSG_MAX];

	memcpy(old, last_error, sizeof(old));
	snprintf(last_error, sizeof(last_error), "%s: %s", prefix, old);
	return err > 0 ? -err : err;
}

TK_API void tk_log_set_handler(tk_log_fn fn, void *ctx, enum tk_log_level max_level)
{
	log_handler = fn;
	log_ctx = ctx;
	log_max_level = max_level;
}

void tk_log(enum tk_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char msg[TK_ERRMSG_MAX];
	va_list ap;

	if (level > log_max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_handler) {
		log_handler(level, msg, log_ctx);
		return;
	}
	fprintf(stderr, "tracekit: %s: %s\n", names[level], msg);
}
