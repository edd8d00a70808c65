/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perfdata-fixed: the sample fields a tracepoint analysis reads (time, cpu,
 * pid/tid, RAW payload) at offsets fixed per event, for the files where
 * they are fixed. perfdata-fixed.c holds the notes.
 */
#ifndef TRACEKIT_PERFDATA_FIXED_H
#define TRACEKIT_PERFDATA_FIXED_H

#include <tracekit/perfdata.h>

struct tk_perf_fixed;

/* The fields read from a SAMPLE record; @raw points into the record. */
struct tk_perf_fixed_sample {
	size_t attr_index;
	uint64_t time;
	uint32_t pid, tid, cpu;
	uint32_t raw_size;
	const void *raw;
};

/*
 * tk_perf_fixed_new() - the fixed offsets of every event of @pd, or NULL
 * (errno ENOTSUP) when some event's layout is not fixed up to RAW or the
 * events cannot be told apart by a leading IDENTIFIER; ENOMEM.
 */
struct tk_perf_fixed *tk_perf_fixed_new(const struct tk_perfdata *pd);
void tk_perf_fixed_free(struct tk_perf_fixed *fx);

/*
 * tk_perf_fixed_read() - read a SAMPLE record
 * Return: 0; -ENOENT for an id of no event; -EBADMSG when the record is too
 * short for its fields or its RAW size (the caller may then ask
 * tk_perfdata_parse_sample(), which names the offset).
 */
int tk_perf_fixed_read(const struct tk_perf_fixed *fx, const struct tk_perf_record *rec,
		       struct tk_perf_fixed_sample *out);

#endif
