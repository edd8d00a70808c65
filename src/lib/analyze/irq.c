// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * irq: hard and soft interrupt durations by vector, from the irq events of a
 * .dat or perf.data (what neither perf nor trace-cmd prints as one table).
 *
 * Per CPU, in time order:
 *   irq_handler_entry (irq) to irq_handler_exit of the same irq: one
 *     handler run of that irq (a nested entry replaces the pending one:
 *     handlers do not nest on Linux);
 *   softirq_entry (vec) to softirq_exit of the same vec: one softirq run;
 *   softirq_raise (vec) to the next softirq_entry of that vec on the same
 *     CPU: its raise-to-run latency (a second raise before the run keeps the
 *     first, which is when the wait began).
 * An exit without its entry (the entry before the trace began) is not
 * counted. Per vector: count, total, average, smallest and largest time;
 * with --percentiles p50/p90/p99/p99.9 and with --hist a log2 histogram
 * (both keep every duration). Handler names are not read (the feed reads
 * numbers); irqs are shown by number, softirqs by the kernel's names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/analyze.h>
#include <tracekit/outbuf.h>

#include "analyze-util.h"
#include "feed.h"
#include "internal/error.h"

enum { W_IRQ_ENTRY, W_IRQ_EXIT, W_SOFT_ENTRY, W_SOFT_EXIT, W_SOFT_RAISE };

static const struct tk_feed_want wants[] = {
	[W_IRQ_ENTRY] = {"irq", "irq_handler_entry", {"irq"}},
	[W_IRQ_EXIT] = {"irq", "irq_handler_exit", {"irq"}},
	[W_SOFT_ENTRY] = {"irq", "softirq_entry", {"vec"}},
	[W_SOFT_EXIT] = {"irq", "softirq_exit", {"vec"}},
	[W_SOFT_RAISE] = {"irq", "softirq_raise", {"vec"}},
};

#define NR_SOFTIRQ 10
#define MAX_CPUS   4096

static const char *const softirq_names[NR_SOFTIRQ] = {"HI",	 "TIMER",    "NET_TX",	"NET_RX",
						      "BLOCK",	 "IRQ_POLL", "TASKLET", "SCHED",
						      "HRTIMER", "RCU"};

enum { K_HARD, K_SOFT, K_RAISE, K_N };

struct vec {
	int kind;
	int64_t nr;
	uint64_t count, total, min, max;
	uint64_t *d;
	size_t nd, cap;
};

struct cpu {
	bool in_irq, in_soft;
	int64_t irq, soft;
	uint64_t irq_ts, soft_ts;
	uint64_t raised[NR_SOFTIRQ]; /* raise time + 1, 0: none pending */
};

struct irqs {
	const struct tk_irq_opts *o;
	struct cpu *cpus;
	struct vec *v;
	size_t nv, cap;
	bool keep;
};

static struct vec *vec_of(struct irqs *s, int kind, int64_t nr)
{
	for (size_t i = 0; i < s->nv; i++)
		if (s->v[i].kind == kind && s->v[i].nr == nr)
			return &s->v[i];
	if (s->nv == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct vec *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	memset(&s->v[s->nv], 0, sizeof(s->v[s->nv]));
	s->v[s->nv].kind = kind;
	s->v[s->nv].nr = nr;
	s->v[s->nv].min = UINT64_MAX;
	return &s->v[s->nv++];
}

static int add(struct irqs *s, int kind, int64_t nr, uint64_t d)
{
	struct vec *v = vec_of(s, kind, nr);

	if (!v)
		return tk_fail(ENOMEM, "out of memory");
	v->count++;
	v->total += d;
	if (d < v->min)
		v->min = d;
	if (d > v->max)
		v->max = d;
	if (s->keep) {
		if (v->nd == v->cap) {
			size_t cap = v->cap ? v->cap * 2 : 64;
			uint64_t *n = realloc(v->d, cap * sizeof(*n));

			if (!n)
				return tk_fail(ENOMEM, "out of memory");
			v->d = n;
			v->cap = cap;
		}
		v->d[v->nd++] = d;
	}
	return 0;
}

static int on_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct irqs *s = ctx;
	struct cpu *c;
	int64_t nr = (int64_t)(int32_t)r->val[0];

	if (r->kind != TK_FEED_EVENT)
		return 0;
	if (r->cpu >= MAX_CPUS)
		return tk_fail(EBADMSG, "irq event on cpu %" PRIu32 ": more than %d CPUs", r->cpu,
			       MAX_CPUS);
	c = &s->cpus[r->cpu];
	switch (r->want) {
	case W_IRQ_ENTRY:
		c->in_irq = true;
		c->irq = nr;
		c->irq_ts = r->time;
		return 0;
	case W_IRQ_EXIT:
		if (!c->in_irq || c->irq != nr || r->time < c->irq_ts)
			return 0;
		c->in_irq = false;
		return add(s, K_HARD, nr, r->time - c->irq_ts);
	case W_SOFT_RAISE:
		if (nr >= 0 && nr < NR_SOFTIRQ && !c->raised[nr])
			c->raised[nr] = r->time + 1;
		return 0;
	case W_SOFT_ENTRY:
		c->in_soft = true;
		c->soft = nr;
		c->soft_ts = r->time;
		if (nr >= 0 && nr < NR_SOFTIRQ && c->raised[nr]) {
			uint64_t t0 = c->raised[nr] - 1;

			c->raised[nr] = 0;
			if (r->time >= t0)
				return add(s, K_RAISE, nr, r->time - t0);
		}
		return 0;
	case W_SOFT_EXIT:
		if (!c->in_soft || c->soft != nr || r->time < c->soft_ts)
			return 0;
		c->in_soft = false;
		return add(s, K_SOFT, nr, r->time - c->soft_ts);
	}
	return 0;
}

static int vec_cmp(const void *a, const void *b)
{
	const struct vec *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	/* Largest total first: where the interrupt time went. */
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static void vec_name(const struct vec *v, char *buf, size_t len)
{
	if (v->kind == K_HARD)
		snprintf(buf, len, "irq %" PRId64, v->nr);
	else if (v->nr >= 0 && v->nr < NR_SOFTIRQ)
		snprintf(buf, len, "%s", softirq_names[v->nr]);
	else
		snprintf(buf, len, "vec %" PRId64, v->nr);
}

static void print(struct irqs *s, struct tk_outbuf *out, const struct tk_feed_stats *st)
{
	static const char *const titles[K_N] = {"Hard irq handlers", "Softirq runs",
						"Softirq raise to run (latency)"};
	static const char *const keys[K_N] = {"hardirq", "softirq", "softirq_raise"};
	unsigned int f = s->o->flags;
	bool json = f & TK_IRQ_JSON, first = true;

	qsort(s->v, s->nv, sizeof(*s->v), vec_cmp);
	if (json)
		tk_an_printf(out, "{\n  \"vectors\": [");
	for (int k = 0; k < K_N; k++) {
		bool head = false;

		for (size_t i = 0; i < s->nv; i++) {
			struct vec *v = &s->v[i];
			char name[32];

			if (v->kind != k)
				continue;
			vec_name(v, name, sizeof(name));
			if (v->nd)
				qsort(v->d, v->nd, sizeof(*v->d), tk_an_u64_cmp);
			if (json) {
				tk_an_printf(out,
					     "%s\n    {\"kind\": \"%s\", \"vector\": %" PRId64
					     ", \"name\": \"%s\", \"count\": %" PRIu64
					     ", \"total_ns\": %" PRIu64 ", \"avg_ns\": %" PRIu64
					     ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64,
					     first ? "" : ",", keys[k], v->nr, name, v->count,
					     v->total, v->total / v->count, v->min, v->max);
				first = false;
				if (v->nd && (f & TK_IRQ_PERCENTILES))
					tk_an_printf(out,
						     ", \"percentiles_ns\": {\"p50\": %" PRIu64
						     ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
						     ", \"p99.9\": %" PRIu64 "}",
						     tk_an_percentile(v->d, v->nd, 50),
						     tk_an_percentile(v->d, v->nd, 90),
						     tk_an_percentile(v->d, v->nd, 99),
						     tk_an_percentile(v->d, v->nd, 99.9));
				if (v->nd && (f & TK_IRQ_HIST)) {
					uint64_t hist[65] = {0};
					bool any = false;

					tk_an_log2_hist(v->d, v->nd, hist);
					tk_an_printf(out, ", \"log2_hist\": [");
					for (int b = 0; b < 65; b++) {
						if (!hist[b])
							continue;
						tk_an_printf(out,
							     "%s{\"lo_ns\": %" PRIu64
							     ", \"count\": %" PRIu64 "}",
							     any ? ", " : "",
							     b ? (uint64_t)1 << (b - 1) : 0,
							     hist[b]);
						any = true;
					}
					tk_an_printf(out, "]");
				}
				tk_an_printf(out, "}");
				continue;
			}
			if (!head) {
				tk_an_printf(out, "\n%s\n", titles[k]);
				tk_an_printf(out, "  %-10s %10s %12s %10s %10s %10s", "vector",
					     "count", "total ms", "avg us", "min us", "max us");
				if (f & TK_IRQ_PERCENTILES)
					tk_an_printf(out, " %10s %10s %10s %10s", "p50 us",
						     "p90 us", "p99 us", "p99.9 us");
				tk_an_printf(out, "\n");
				head = true;
			}
			tk_an_printf(out, "  %-10s %10" PRIu64 " %12.3f %10.3f %10.3f %10.3f", name,
				     v->count, v->total / 1e6, (double)v->total / v->count / 1e3,
				     v->min / 1e3, v->max / 1e3);
			if ((f & TK_IRQ_PERCENTILES) && v->nd)
				tk_an_printf(out, " %10.3f %10.3f %10.3f %10.3f",
					     tk_an_percentile(v->d, v->nd, 50) / 1e3,
					     tk_an_percentile(v->d, v->nd, 90) / 1e3,
					     tk_an_percentile(v->d, v->nd, 99) / 1e3,
					     tk_an_percentile(v->d, v->nd, 99.9) / 1e3);
			tk_an_printf(out, "\n");
			if ((f & TK_IRQ_HIST) && v->nd) {
				uint64_t hist[65] = {0};

				tk_an_log2_hist(v->d, v->nd, hist);
				tk_an_print_log2_hist(out, hist, "", 14);
			}
		}
	}
	if (json) {
		tk_an_printf(out, "\n  ],\n  \"lost_events\": %" PRIu64 "\n}\n", st->nr_lost);
		return;
	}
	if (!s->nv)
		tk_an_printf(out, "no interrupt ran from entry to exit in the trace\n");
	if (st->nr_lost)
		tk_an_printf(out, "\n  INFO: %" PRIu64 " events lost: some runs are missing\n",
			     st->nr_lost);
}

int tk_irq_run(const char *path, const struct tk_irq_opts *opts)
{
	struct tk_feed_stats st;
	struct tk_outbuf out;
	struct irqs s;
	int ret, fr;

	memset(&s, 0, sizeof(s));
	s.o = opts;
	s.keep = opts->flags & (TK_IRQ_PERCENTILES | TK_IRQ_HIST);
	s.cpus = calloc(MAX_CPUS, sizeof(*s.cpus));
	if (!s.cpus)
		return tk_fail(ENOMEM, "out of memory");
	ret = tk_feed_run(path, wants, sizeof(wants) / sizeof(wants[0]), 0, on_rec, &s, &st);
	if (ret == 0 && !(st.present & ((1u << W_IRQ_ENTRY) | (1u << W_SOFT_ENTRY))))
		ret = tk_fail(ENOENT,
			      "%s: no irq:irq_handler_entry or irq:softirq_entry events (record "
			      "with 'tracekit record -e irq' or 'perf record -e irq:*')",
			      path);
	if (ret == 0) {
		if (tk_outbuf_init(&out, opts->fd, 0)) {
			ret = tk_fail(ENOMEM, "out of memory");
		} else {
			print(&s, &out, &st);
			fr = tk_outbuf_flush(&out);
			if (fr)
				ret = tk_fail(-fr, "write: %s", strerror(-fr));
			tk_outbuf_release(&out);
		}
	}
	for (size_t i = 0; i < s.nv; i++)
		free(s.v[i].d);
	free(s.v);
	free(s.cpus);
	return ret;
}
