/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * analyze-util: what the analyses of src/lib/analyze/ share beside the
 * feed: formatted output, the percentiles and log2 histograms of
 * --percentiles/--hist, and the tid -> index map the per-thread tables
 * use. Private to the library.
 */
#ifndef TRACEKIT_ANALYZE_UTIL_H
#define TRACEKIT_ANALYZE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tracekit/outbuf.h>

/*
 * May this process run on two CPUs or more (taskset and cpusets
 * respected)? The analyses then decode a compressed .dat's chunks ahead
 * on a second thread (tk_dat_merge_new_ahead()).
 */
bool tk_an_spare_cpu(void);

/*
 * Should the feed's analysis thread run (the walk on the calling thread,
 * the queue and the analysis on a second)? Only when TK_FEED_THREADS=2 is
 * in the environment and tk_an_spare_cpu() allows two CPUs: measured on
 * two vCPUs, that hand-over cost more than the second CPU saved. Without
 * TK_FEED_THREADS the feed splits the walk instead (feed.c, "Both CPUs
 * walk"); TK_FEED_THREADS=1 keeps one thread.
 */
bool tk_an_idle_cpu(void);

/*
 * Should the feed walk a perf.data with both CPUs (feed.c, "Both CPUs
 * walk")? Only when TK_FEED_THREADS=split asks for it and two CPUs are
 * allowed: on two vCPUs it measured slower than one thread.
 */
bool tk_an_split_walk(void);

/*
 * Should a helper thread map a perf.data in ahead of the feed's walk
 * (feed.c, "Mapping in ahead")? When TK_FEED_THREADS is unset, two CPUs
 * are allowed and the last minute's load average leaves 1.5 CPUs idle;
 * with TK_FEED_THREADS=ahead whenever two CPUs are allowed.
 */
bool tk_an_map_ahead(void);

/* printf into @out (a line is at most 511 bytes: longer text is cut). */
void tk_an_printf(struct tk_outbuf *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A NUL-terminated string (NULL: empty) as a quoted JSON string. */
static inline void tk_an_json_str(struct tk_outbuf *out, const char *s)
{
	tk_outbuf_json_str(out, s ? s : "", s ? strlen(s) : 0);
}

/*
 * Running count, mean, min and max of a series, and its sum of squared
 * deviations (Welford's update: no sum of squares to overflow or cancel),
 * as perf keeps them for trace -s and sched timehist -s.
 */
struct tk_an_stats {
	double n, mean, m2;
	uint64_t min, max;
};

static inline void tk_an_stats_init(struct tk_an_stats *st)
{
	*st = (struct tk_an_stats){.min = UINT64_MAX};
}

static inline void tk_an_stats_add(struct tk_an_stats *st, uint64_t v)
{
	double delta;

	st->n++;
	delta = (double)v - st->mean;
	st->mean += delta / st->n;
	st->m2 += delta * ((double)v - st->mean);
	if (v > st->max)
		st->max = v;
	if (v < st->min)
		st->min = v;
}

/*
 * The standard deviation of the mean in percent of the mean, perf's
 * "stddev" / "%stddev" columns (0 below two values or for a zero mean).
 */
double tk_an_stats_rel_stddev(const struct tk_an_stats *st);

/* qsort() comparator of uint64_t, ascending. */
int tk_an_u64_cmp(const void *a, const void *b);

/*
 * The @p-th percentile (0 < p <= 100) of @n sorted values by the nearest
 * rank (the smallest value with at least p% of them at or below it).
 */
uint64_t tk_an_percentile(const uint64_t *sorted, size_t n, double p);

/* @hist[b] counts the values of bit length b (0 for 0): a log2 histogram. */
void tk_an_log2_hist(const uint64_t *v, size_t n, uint64_t hist[65]);

/*
 * A log2 histogram (tk_an_log2_hist()) as bars of '#', 40 for the fullest
 * bucket, one line per non-empty bucket: @indent, then the bucket's low
 * bound right-aligned in @width columns, " - ", its high bound, the count.
 */
void tk_an_print_log2_hist(struct tk_outbuf *out, const uint64_t hist[65], const char *indent,
			   int width);

/*
 * An open-addressing map from tid to an index: @tid slots hold INT32_MIN
 * when empty, @n is a power of two (0 before the first grow).
 * tk_an_slot_of() is @tid's slot or the empty one it would take;
 * tk_an_slots_grow() doubles the table (1024 at first). Return: 0, -ENOMEM.
 */
size_t tk_an_slot_of(const int32_t *slot_tid, size_t n, int32_t tid);
int tk_an_slots_grow(int32_t **slot_tid, uint32_t **slot_idx, size_t *n);

#endif
