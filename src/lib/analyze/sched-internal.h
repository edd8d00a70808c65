/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * sched-internal: the lines of `perf sched latency`'s table as data, for
 * the analyses that compare two captures (latcompare.c). Private to the
 * library.
 */
#ifndef TRACEKIT_ANALYZE_SCHED_INTERNAL_H
#define TRACEKIT_ANALYZE_SCHED_INTERNAL_H

#include <tracekit/analyze.h>

struct tk_lat_row {
	char comm[16];
	int32_t tid;	 /* -1 for a line of merged threads */
	uint32_t merged; /* threads in the line */
	uint64_t runtime, switches, avg, max;
};

struct tk_lat_rows {
	struct tk_lat_row *v;
	size_t n, cap;
};

/* Append a line; 0 or -ENOMEM (tk_errmsg() set). */
int lat_rows_add(struct tk_lat_rows *rows, const char *comm, int32_t tid, uint32_t merged,
		 uint64_t runtime, uint64_t switches, uint64_t avg, uint64_t max);

/* tk_sched_latency_run()'s table into @rows instead of text (sort and merge as opts say). */
int tk_sched_latency_rows(const char *path, const struct tk_sched_opts *opts,
			  struct tk_lat_rows *rows);

#endif
