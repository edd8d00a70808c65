/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tracedata internals shared by the .dat and perf.data readers and writers,
 * the recorder and the gatherer. Never installed.
 */
#ifndef TRACEKIT_TRACEDATA_INTERNAL_H
#define TRACEKIT_TRACEDATA_INTERNAL_H

#include <tracekit/tracedata.h>

#include "bytebuf.h"

struct td_system {
	const char *name;
	struct tk_text *formats;
	size_t count, cap;
};

struct tk_tracedata {
	unsigned int parts; /* enum tk_tracedata_part */
	bool big_endian;
	uint8_t long_size;
	uint32_t page_size;
	const char *version; /* perf's TRACING_DATA version ("0.6") */

	struct tk_text header_page, header_event, kallsyms, printk, cmdlines;
	struct tk_text *ftrace;
	size_t nftrace, ftrace_cap;
	struct td_system *systems;
	size_t nsystems, systems_cap;

	void **owned; /* copies and adopted buffers, freed with the tracedata */
	size_t nowned, owned_cap;
};

/* The single texts, for tk_tracedata_take_text(). */
enum td_text {
	TD_HEADER_PAGE,
	TD_HEADER_EVENT,
	TD_KALLSYMS,
	TD_PRINTK,
	TD_CMDLINES,
};

/*
 * Adopt @data (malloc'ed, @len bytes) as a text without copying it: the
 * tracedata frees it. On failure @data is freed too. Return: 0, -ENOMEM.
 */
int tk_tracedata_take_text(struct tk_tracedata *td, enum td_text which, char *data, uint64_t len);
/* Same for a format; @system NULL means the ftrace formats. */
int tk_tracedata_take_format(struct tk_tracedata *td, const char *system, char *data, uint64_t len);

/*
 * The decoders without a message for malformed input: they return
 * -EBADMSG with *@bad_at (@base + the offset in the body) and *@what
 * ("truncated header_page", ...) for the caller to name its file, or
 * -ENOMEM with tk_errmsg() set. The part decoded is left empty on failure.
 */
int tk_tracedata_parse_dat(struct tk_tracedata *td, uint16_t id, const void *body, uint64_t len,
			   bool big_endian, uint64_t base, uint64_t *bad_at, const char **what);
int tk_tracedata_parse_perf(struct tk_tracedata *td, const void *blob, uint64_t len,
			    uint64_t *bad_at, const char **what);

/*
 * The encoders, appending to @b (numbers in @b's byte order). Return: 0,
 * -EINVAL with a message (a text too long for its u32 size), or -ENOMEM
 * (tk_bytebuf_error()).
 */
int tk_tracedata_put_dat_section(const struct tk_tracedata *td, uint16_t id, struct tk_bytebuf *b);
int tk_tracedata_put_perf(const struct tk_tracedata *td, struct tk_bytebuf *b);

#endif
