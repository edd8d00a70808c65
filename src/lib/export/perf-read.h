/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perf-read: the values of a perf.data sample's PERF_SAMPLE_READ block, for
 * the exports' counters (tables.c's counter table, pftrace-perf.c's
 * PerfSample counts), so both read the one layout alike.
 *
 * The block, u64s laid out by the event's read_format:
 *   alone (no PERF_FORMAT_GROUP): value, [time_enabled], [time_running],
 *     [id], [lost]
 *   a group: nr, [time_enabled], [time_running], then nr times
 *     value, [id], [lost]    (the leader first, then its members in order)
 * The times say how long the counters ran; a counter's value is its count
 * since it was enabled (not a difference since the last sample).
 */
#ifndef TRACEKIT_EXPORT_PERF_READ_H
#define TRACEKIT_EXPORT_PERF_READ_H

#include <stdbool.h>
#include <stdint.h>

#include <tracekit/perfdata.h>

#include "perfdata-internal.h"

struct tk_read_value {
	uint64_t value;
	uint64_t id; /* 0 without PERF_FORMAT_ID */
};

/*
 * Up to @max values of the READ block @rd of @size bytes into @out; a
 * block cut short yields the values that are whole.
 * Return: the number of values.
 */
static inline uint32_t tk_perf_read_values(uint64_t read_format, const void *rd, uint64_t size,
					   struct tk_read_value *out, uint32_t max)
{
	uint64_t words = size / 8, nr = 1, pos = 0;
	bool group = read_format & TK_PERF_READ_GROUP, has_id = read_format & TK_PERF_READ_ID;
	uint64_t times = !!(read_format & TK_PERF_READ_TOTAL_TIME_ENABLED) +
			 !!(read_format & TK_PERF_READ_TOTAL_TIME_RUNNING);
	uint64_t stride = 1 + has_id + !!(read_format & TK_PERF_READ_LOST);
	uint32_t n = 0;

	if (group) {
		if (!words)
			return 0;
		nr = tk_perf_load_u64(rd, 0);
		pos = 1 + times;
	}
	for (uint64_t i = 0; i < nr && n < max; i++) {
		uint64_t at = pos + i * stride, idpos = at + 1 + (group ? 0 : times);

		if (at >= words || (has_id && idpos >= words))
			break;
		out[n].value = tk_perf_load_u64(rd, at);
		out[n].id = has_id ? tk_perf_load_u64(rd, idpos) : 0;
		n++;
	}
	return n;
}

#endif
