/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the file-format fuzz targets share: a log handler that swallows
 * warnings (they are still formatted, so their code is fuzzed too), a
 * sink the walkers add to so the compiler keeps every read, and the input
 * as a memfd, since the readers take a file.
 */
#ifndef TRACEKIT_FUZZ_H
#define TRACEKIT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tracekit/common.h>

static inline void quiet(enum tk_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	(void)ctx;
}

static volatile uint64_t sink;

/* Quiet the log, and return a memfd named @name holding the @size input bytes, or -1. */
static inline int fuzz_input(const char *name, const uint8_t *data, size_t size)
{
	int fd;

	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	return fd;
}

#endif
