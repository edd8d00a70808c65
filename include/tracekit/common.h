/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Things every tracekit module shares: the export macro, the thread-local
 * error message and the warning log.
 */
#ifndef TRACEKIT_COMMON_H
#define TRACEKIT_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TK_API
#define TK_API __attribute__((visibility("default")))
#endif

/*
 * Options structs grow without breaking programs built against an older
 * tracekit (libbpf's scheme): each starts with size_t sz, the size of the
 * struct the program was compiled with. Declare one with
 *   TK_OPTS(tk_report_opts, opts, .cpu_mask = mask, .cpu_mask_bits = 64);
 * A function given sz 0 fails with EINVAL; one given a field it does not
 * know set (a newer program) fails with E2BIG.
 */
#define TK_OPTS(TYPE, NAME, ...) struct TYPE NAME = {.sz = sizeof(struct TYPE), __VA_ARGS__}

/**
 * tk_errmsg() - describe the calling thread's last failure
 *
 * Every tracekit call that fails (negative errno or NULL with errno set)
 * leaves a one-line message here. Input errors name the file and the
 * offset: "trace.dat: offset 0x1f40: section 17 size 9999999 exceeds file
 * size 81920".
 *
 * Context: any thread; the string is thread-local.
 * Return: borrowed string, valid until the next failing tracekit call in
 * this thread. Never NULL ("" when nothing failed yet).
 */
TK_API const char *tk_errmsg(void);

/**
 * struct tk_text - a piece of text (or bytes) held elsewhere
 * @data: first byte; not NUL-terminated
 * @len:  bytes at @data
 *
 * Who owns @data, and for how long it lives, is said by the call that
 * hands the text out.
 */
struct tk_text {
	const char *data;
	uint64_t len;
};

/** Severity of a message passed to the log handler. */
enum tk_log_level {
	TK_LOG_ERROR,
	TK_LOG_WARN,
	TK_LOG_INFO,
	TK_LOG_DEBUG,
};

typedef void (*tk_log_fn)(enum tk_log_level level, const char *msg, void *ctx);

/**
 * tk_log_set_handler() - route library warnings
 * @fn:  handler, or NULL to restore the default (stderr, "tracekit: warning: ...")
 * @ctx: passed back to @fn
 * @max_level: messages above this level are dropped (default TK_LOG_WARN)
 *
 * The library never prints on its own; warnings such as "unknown option 23
 * skipped" go through this handler.
 *
 * Context: process-wide setting; call before other threads use the library.
 */
TK_API void tk_log_set_handler(tk_log_fn fn, void *ctx, enum tk_log_level max_level);

#ifdef __cplusplus
}
#endif
#endif
