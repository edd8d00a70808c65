/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * LTTng-UST tracepoint provider for bench-ring: one event with the same
 * 16-byte payload (two u64) that bench-ring writes into tracekit's ring,
 * and one with a u64 and a string (the string events' case).
 * Built only when liblttng-ust is found (bench/meson.build).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER tk_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "bench-ring-tp.h"

#if !defined(BENCH_RING_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_RING_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(tk_bench, ev16, LTTNG_UST_TP_ARGS(uint64_t, seq, uint64_t, val),
			   LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, seq, seq)
						       lttng_ust_field_integer(uint64_t, val, val)))

/* A string event: a u64 and a 24-byte string (23 characters and the NUL), as ae-str writes. */
LTTNG_UST_TRACEPOINT_EVENT(tk_bench, evstr, LTTNG_UST_TP_ARGS(uint64_t, seq, const char *, msg),
			   LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, seq, seq)
						       lttng_ust_field_string(msg, msg)))

#endif /* BENCH_RING_TP_H */

#include <lttng/tracepoint-event.h>
