// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * analyze-util: the helpers every analysis had a copy of (analyze-util.h).
 * Percentiles are nearest-rank, so every reported value is one that was
 * measured; histograms are by bit length, the buckets perf and bpftrace
 * users read ("[2^k, 2^(k+1))").
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze-util.h"

bool tk_an_spare_cpu(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) >= 2;
}

bool tk_an_idle_cpu(void)
{
	const char *env = getenv("TK_FEED_THREADS");

	/*
	 * Only when asked for: on the 2-vCPU reference machine with nothing
	 * else running, the hand-over cost more than the second CPU saved
	 * (sched latency 0.14 s of wall on one thread, 0.17-0.18 s on two;
	 * bench/README.md, bench-analyze, stop 19).
	 */
	return env && !strcmp(env, "2") && tk_an_spare_cpu();
}

bool tk_an_split_walk(void)
{
	const char *env = getenv("TK_FEED_THREADS");

	/*
	 * Only when asked for: on the two vCPUs the split was slower than one
	 * thread even with both to itself (sched latency 0.21-0.25 s against
	 * 0.16 s at real-time priority): handing 64 bytes a record to the
	 * other CPU cost more than the walk it spared.
	 */
	return env && !strcmp(env, "split") && tk_an_spare_cpu();
}

bool tk_an_map_ahead(void)
{
	const char *env = getenv("TK_FEED_THREADS");
	cpu_set_t set;
	double load;

	if (env && !strcmp(env, "ahead"))
		return tk_an_spare_cpu();
	if ((env && *env) || sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		return false;
	/*
	 * A CPU to spare, nearly always: the helper gained 9-12 % when it had
	 * the second vCPU to itself, and lost up to 14 % at load 2 (its
	 * wake-ups then wait behind others' work). The last minute's load
	 * average must leave a CPU and a half idle.
	 */
	return getloadavg(&load, 1) == 1 && load < (double)CPU_COUNT(&set) - 1.5;
}

void tk_an_printf(struct tk_outbuf *out, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		tk_outbuf_write(out, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

int tk_an_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t tk_an_percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)((p / 100.0) * (double)n + 0.999999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

void tk_an_log2_hist(const uint64_t *v, size_t n, uint64_t hist[65])
{
	memset(hist, 0, 65 * sizeof(hist[0]));
	for (size_t i = 0; i < n; i++)
		hist[v[i] ? 64 - __builtin_clzll(v[i]) : 0]++;
}

double tk_an_stats_rel_stddev(const struct tk_an_stats *st)
{
	double var, x, nx;

	if (st->n < 2 || !st->mean)
		return 0.0;
	/*
	 * sqrt of the variance of the mean by Newton's method from above
	 * (monotone, stops when it no longer falls: within an ulp of the true
	 * root): the library does not link libm for one column of two decimals.
	 */
	var = st->m2 / (st->n - 1) / st->n;
	if (!(var > 0))
		return 0.0;
	x = var > 1 ? var : 1;
	for (int i = 0; i < 2000; i++) {
		nx = 0.5 * (x + var / x);
		if (!(nx < x))
			break;
		x = nx;
	}
	return 100.0 * x / st->mean;
}

void tk_an_print_log2_hist(struct tk_outbuf *out, const uint64_t hist[65], const char *indent,
			   int width)
{
	uint64_t most = 0;

	for (int b = 0; b < 65; b++)
		most = hist[b] > most ? hist[b] : most;
	for (int b = 0; b < 65; b++) {
		char bar[41];
		int w;

		if (!hist[b])
			continue;
		w = (int)(hist[b] * 40 / most);
		memset(bar, '#', (size_t)w);
		bar[w] = 0;
		if (b == 0)
			tk_an_printf(out, "%s%*s   %-10s ns %9" PRIu64 " |%s\n", indent, width, "0",
				     "", hist[b], bar);
		else
			tk_an_printf(out, "%s%*" PRIu64 " - %-10" PRIu64 " ns %9" PRIu64 " |%s\n",
				     indent, width, (uint64_t)1 << (b - 1), ((uint64_t)1 << b) - 1,
				     hist[b], bar);
	}
}

size_t tk_an_slot_of(const int32_t *slot_tid, size_t n, int32_t tid)
{
	size_t i = ((uint32_t)tid * 2654435761u) & (n - 1);

	while (slot_tid[i] != tid && slot_tid[i] != INT32_MIN)
		i = (i + 1) & (n - 1);
	return i;
}

int tk_an_slots_grow(int32_t **slot_tid, uint32_t **slot_idx, size_t *n)
{
	size_t nn = *n ? *n * 2 : 1024, on = *n;
	int32_t *t = malloc(nn * sizeof(*t)), *ot = *slot_tid;
	uint32_t *ix = malloc(nn * sizeof(*ix)), *oi = *slot_idx;

	if (!t || !ix) {
		free(t);
		free(ix);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nn; i++)
		t[i] = INT32_MIN;
	for (size_t i = 0; i < on; i++) {
		if (ot[i] != INT32_MIN) {
			size_t j = tk_an_slot_of(t, nn, ot[i]);

			t[j] = ot[i];
			ix[j] = oi[i];
		}
	}
	free(ot);
	free(oi);
	*slot_tid = t;
	*slot_idx = ix;
	*n = nn;
	return 0;
}
