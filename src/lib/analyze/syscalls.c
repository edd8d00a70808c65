// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * syscalls: `perf trace -s` (perf 6.1), from the feed.
 *
 * Per thread and syscall: calls, errors, total, min, avg, max and the
 * relative standard deviation of the durations, from raw_syscalls:sys_enter
 * (id) and raw_syscalls:sys_exit (id, ret). The rules are perf's:
 *
 *   sys_enter  the thread's entry time becomes t (it is never cleared);
 *   sys_exit   a call of that id is counted with duration t - entry time
 *              when there was an entry before t, else 0 (a call that was
 *              already in the kernel when recording began, execve's exit
 *              in a new image); ret < 0 counts an error.
 *   Every enter and exit counts as an event of its thread and of the file
 *   (the percentage); an id the architecture's table has no name for is
 *   counted in the file's events only, as perf does.
 *
 * Threads are perf's machine threads: keyed by tid, renamed by COMM, a FORK
 * of an existing tid starting a new one (the old one's numbers leave the
 * summary). The summary walks threads as perf 6.1 does: in buckets of tid
 * modulo 256, each bucket's threads by ascending event count (ties by tid);
 * within a thread the syscalls by descending total time (ties by number).
 * Names come from our own tables generated from the kernel's uapi headers
 * (syscall-names.h), for the file's architecture (x86_64 by default).
 *
 * Memory: per thread a small vector of the syscalls it made (a thread
 * makes a few dozen), plus every duration with --percentiles or --hist.
 *
 * Ours: --percentiles, --hist (per thread and syscall, after its line),
 * --json, and tk_syscalls_compare_run(): two files side by side, per
 * syscall over all threads, with the change.
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
#include "syscall-names.h"
#include "internal/array.h"
#include "internal/error.h"

enum { W_ENTER, W_EXIT };

static const struct tk_feed_want wants[] = {
	[W_ENTER] = {"raw_syscalls", "sys_enter", {"id"}},
	[W_EXIT] = {"raw_syscalls", "sys_exit", {"id", "ret"}},
};

struct sc {
	int64_t id;
	uint64_t failures;
	struct tk_an_stats st;
	uint64_t *durs; /* with percentiles or hist */
	size_t ndurs, cap;
};

struct thread {
	int32_t tid, pid;
	bool traced; /* perf's thread_trace exists: listed */
	bool dead;
	char comm[TK_FEED_COMM_LEN];
	uint64_t nr_events, entry_time;
	struct sc *scs;
	size_t nscs, sccap;
	size_t last; /* index of the last syscall looked up */
};

struct sys {
	unsigned int flags;
	struct tk_feed_stats *st;
	const struct tk_syscall_table *table;
	bool table_set;
	struct thread **threads;
	size_t nthreads, cap;
	int32_t *slot_tid;
	uint32_t *slot_idx;
	size_t nslots, nused;
	uint64_t nr_events;
	bool keep;
};

/* ---------------------------------------------------------------- threads */

static size_t slot_of(const struct sys *s, int32_t tid)
{
	return tk_an_slot_of(s->slot_tid, s->nslots, tid);
}

static int grow_slots(struct sys *s)
{
	return tk_an_slots_grow(&s->slot_tid, &s->slot_idx, &s->nslots);
}

static struct thread *thread_new(struct sys *s, int32_t pid, int32_t tid)
{
	struct thread *t, **v;
	size_t i;

	if ((s->nused + 1) * 2 > s->nslots && grow_slots(s))
		return NULL;
	v = tk_array_grow(s->threads, &s->cap, s->nthreads, sizeof(*v), 256);
	if (!v)
		return NULL;
	s->threads = v;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->pid = pid;
	snprintf(t->comm, sizeof(t->comm), ":%d", tid);
	if (tid == 0 && pid == 0)
		memcpy(t->comm, "swapper", 8);
	i = slot_of(s, tid);
	if (s->slot_tid[i] == INT32_MIN)
		s->nused++;
	else
		s->threads[s->slot_idx[i]]->dead = true;
	s->slot_tid[i] = tid;
	s->slot_idx[i] = (uint32_t)s->nthreads;
	s->threads[s->nthreads++] = t;
	return t;
}

static struct thread *findnew(struct sys *s, int32_t pid, int32_t tid)
{
	if (s->nslots) {
		size_t i = slot_of(s, tid);

		if (s->slot_tid[i] == tid)
			return s->threads[s->slot_idx[i]];
	}
	return thread_new(s, pid, tid);
}

/* ---------------------------------------------------------------- events */

static const char *sc_name(const struct sys *s, int64_t id)
{
	if (!s->table || id < 0 || (uint64_t)id >= s->table->count)
		return NULL;
	return s->table->names[id];
}

static void pick_table(struct sys *s)
{
	const char *arch = s->st->arch[0] ? s->st->arch : "x86_64";

	s->table_set = true;
	/* perf names i686 and friends i386, as the kernel's tables do. */
	if (arch[0] == 'i' && arch[2] == '8' && arch[3] == '6' && !arch[4])
		arch = "i386";
	for (const struct tk_syscall_table *t = tk_syscall_tables; t->arch; t++)
		if (!strcmp(t->arch, arch))
			s->table = t;
}

static struct sc *sc_of(struct thread *t, int64_t id)
{
	size_t lo = 0, hi = t->nscs;

	if (t->last < t->nscs && t->scs[t->last].id == id)
		return &t->scs[t->last];
	/* Kept sorted by id, as perf's intlist is: that is the tie order. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->scs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->nscs || t->scs[lo].id != id) {
		if (t->nscs == t->sccap) {
			size_t cap = t->sccap ? t->sccap * 2 : 8;
			struct sc *v = realloc(t->scs, cap * sizeof(*v));

			if (!v)
				return NULL;
			t->scs = v;
			t->sccap = cap;
		}
		memmove(t->scs + lo + 1, t->scs + lo, (t->nscs - lo) * sizeof(*t->scs));
		memset(&t->scs[lo], 0, sizeof(t->scs[lo]));
		t->scs[lo].id = id;
		t->scs[lo].st.min = UINT64_MAX;
		t->nscs++;
	}
	t->last = lo;
	return &t->scs[lo];
}

static int on_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct sys *s = ctx;
	struct thread *t;
	struct sc *c;
	uint64_t d = 0;

	switch (r->kind) {
	case TK_FEED_COMM:
		t = findnew(s, r->pid, r->tid);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		memcpy(t->comm, r->comm, sizeof(t->comm));
		t->comm[sizeof(t->comm) - 1] = 0;
		return 0;
	case TK_FEED_FORK: {
		struct thread *parent = findnew(s, (int32_t)r->val[0], (int32_t)r->val[1]);

		if (!parent)
			return tk_fail(ENOMEM, "out of memory");
		if (parent->pid != (int32_t)r->val[0]) {
			parent = thread_new(s, (int32_t)r->val[0], (int32_t)r->val[1]);
			if (!parent)
				return tk_fail(ENOMEM, "out of memory");
		}
		t = thread_new(s, r->pid, r->tid);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		memcpy(t->comm, parent->comm, sizeof(t->comm));
		return 0;
	}
	case TK_FEED_EXIT:
		return 0;
	}
	if (!s->table_set)
		pick_table(s);
	s->nr_events++;
	if (!sc_name(s, (int64_t)r->val[0]))
		return 0;
	t = findnew(s, r->pid, r->tid);
	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	t->traced = true;
	t->nr_events++;
	if (r->want == W_ENTER) {
		t->entry_time = r->time;
		return 0;
	}
	c = sc_of(t, (int64_t)r->val[0]);
	if (!c)
		return tk_fail(ENOMEM, "out of memory");
	if (t->entry_time && r->time > t->entry_time)
		d = r->time - t->entry_time;
	tk_an_stats_add(&c->st, d);
	if ((int64_t)r->val[1] < 0)
		c->failures++;
	if (s->keep) {
		if (c->ndurs == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 16;
			uint64_t *v = realloc(c->durs, cap * sizeof(*v));

			if (!v)
				return tk_fail(ENOMEM, "out of memory");
			c->durs = v;
			c->cap = cap;
		}
		c->durs[c->ndurs++] = d;
	}
	return 0;
}

/* ---------------------------------------------------------------- output */

static double sc_msecs(const struct sc *c)
{
	return (double)(uint64_t)c->st.n * (c->st.mean / 1e6);
}

/* Syscalls by descending total, ties in id order (the vector's): stable. */
static void sort_scs(struct sc **v, struct sc **tmp, size_t n)
{
	size_t mid, i, j, k;

	if (n < 2)
		return;
	mid = n / 2;
	sort_scs(v, tmp, mid);
	sort_scs(v + mid, tmp, n - mid);
	for (i = 0, j = mid, k = 0; i < mid || j < n;) {
		if (j == n || (i < mid && !(sc_msecs(v[j]) > sc_msecs(v[i]))))
			tmp[k++] = v[i++];
		else
			tmp[k++] = v[j++];
	}
	memcpy(v, tmp, n * sizeof(*v));
}

static int thread_order(const void *a, const void *b)
{
	const struct thread *x = *(struct thread *const *)a, *y = *(struct thread *const *)b;
	uint32_t bx = (uint32_t)x->tid % 256, by = (uint32_t)y->tid % 256;

	if (bx != by)
		return bx < by ? -1 : 1;
	if (x->nr_events != y->nr_events)
		return x->nr_events < y->nr_events ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void print_sc_extra(struct tk_outbuf *out, struct sc *c, unsigned int flags, bool json)
{
	uint64_t hist[65];
	size_t n = c->ndurs;

	if (!n)
		return;
	qsort(c->durs, n, sizeof(*c->durs), tk_an_u64_cmp);
	tk_an_log2_hist(c->durs, n, hist);
	if (json) {
		bool any = false;

		if (flags & TK_SYSCALLS_PERCENTILES)
			tk_an_printf(out,
				     ", \"percentiles_ns\": {\"p50\": %" PRIu64
				     ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
				     ", \"p99.9\": %" PRIu64 ", \"max\": %" PRIu64 "}",
				     tk_an_percentile(c->durs, n, 50),
				     tk_an_percentile(c->durs, n, 90),
				     tk_an_percentile(c->durs, n, 99),
				     tk_an_percentile(c->durs, n, 99.9), c->durs[n - 1]);
		if (flags & TK_SYSCALLS_HIST) {
			tk_an_printf(out, ", \"log2_hist\": [");
			for (int b = 0; b < 65; b++) {
				if (!hist[b])
					continue;
				tk_an_printf(
					out, "%s{\"lo_ns\": %" PRIu64 ", \"count\": %" PRIu64 "}",
					any ? ", " : "", b ? (uint64_t)1 << (b - 1) : 0, hist[b]);
				any = true;
			}
			tk_an_printf(out, "]");
		}
		return;
	}
	if (flags & TK_SYSCALLS_PERCENTILES)
		tk_an_printf(out,
			     "%19s ms: p50 %.3f | p90 %.3f | p99 %.3f | p99.9 %.3f | max %.3f\n",
			     "", tk_an_percentile(c->durs, n, 50) / 1e6,
			     tk_an_percentile(c->durs, n, 90) / 1e6,
			     tk_an_percentile(c->durs, n, 99) / 1e6,
			     tk_an_percentile(c->durs, n, 99.9) / 1e6, c->durs[n - 1] / 1e6);
	if (flags & TK_SYSCALLS_HIST)
		tk_an_print_log2_hist(out, hist, "                   ", 10);
}

static int print_summary(struct sys *s, struct tk_outbuf *out)
{
	bool json = s->flags & TK_SYSCALLS_JSON, first = true;
	struct thread **v = malloc((s->nthreads + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i]->traced && !s->threads[i]->dead)
			v[n++] = s->threads[i];
	qsort(v, n, sizeof(*v), thread_order);
	if (json)
		tk_an_printf(out, "{\n  \"events\": %" PRIu64 ",\n  \"threads\": [", s->nr_events);
	else
		tk_an_printf(out, "\n Summary of events:\n\n");
	for (size_t i = 0; i < n; i++) {
		struct thread *t = v[i];
		double ratio = (double)t->nr_events / (double)s->nr_events * 100.0;
		struct sc **order = malloc((t->nscs + 1) * 2 * sizeof(*order));

		if (!order) {
			free(v);
			return tk_fail(ENOMEM, "out of memory");
		}
		for (size_t k = 0; k < t->nscs; k++)
			order[k] = &t->scs[k];
		sort_scs(order, order + t->nscs + 1, t->nscs);
		if (json) {
			tk_an_printf(out, "%s\n    {\"comm\": ", first ? "" : ",");
			tk_an_json_str(out, t->comm);
			tk_an_printf(out,
				     ", \"tid\": %d, \"events\": %" PRIu64
				     ", \"events_pct\": %.1f, \"syscalls\": [",
				     t->tid, t->nr_events, ratio);
			first = false;
		} else {
			tk_an_printf(out, " %s (%d), %" PRIu64 " events, %.1f%%\n", t->comm, t->tid,
				     t->nr_events, ratio);
			tk_an_printf(out,
				     "\n   syscall            calls  errors  total       min       "
				     "avg       max       stddev\n");
			tk_an_printf(out,
				     "                                     (msec)    (msec)    "
				     "(msec)    (msec)        (%%)\n");
			tk_an_printf(out, "   --------------- --------  ------ -------- --------- "
					  "--------- ---------     ------\n");
		}
		for (size_t k = 0; k < t->nscs; k++) {
			struct sc *c = order[k];
			const char *name = sc_name(s, c->id);
			double min = (double)c->st.min / 1e6, max = (double)c->st.max / 1e6;

			if (json) {
				tk_an_printf(out, "%s\n      {\"name\": ", k ? "," : "");
				tk_an_json_str(out, name);
				tk_an_printf(out,
					     ", \"id\": %" PRId64 ", \"calls\": %" PRIu64
					     ", \"errors\": %" PRIu64 ", \"total_ns\": %.0f"
					     ", \"min_ns\": %" PRIu64 ", \"avg_ns\": %.0f"
					     ", \"max_ns\": %" PRIu64 ", \"stddev_pct\": %.2f",
					     c->id, (uint64_t)c->st.n, c->failures,
					     c->st.n * c->st.mean, c->st.min, c->st.mean, c->st.max,
					     tk_an_stats_rel_stddev(&c->st));
				print_sc_extra(out, c, s->flags, true);
				tk_an_printf(out, "}");
				continue;
			}
			tk_an_printf(out, "   %-15s", name);
			tk_an_printf(out, " %8" PRIu64 " %6" PRIu64 " %9.3f %9.3f %9.3f",
				     (uint64_t)c->st.n, c->failures, sc_msecs(c), min,
				     c->st.mean / 1e6);
			tk_an_printf(out, " %9.3f %9.2f%%\n", max, tk_an_stats_rel_stddev(&c->st));
			print_sc_extra(out, c, s->flags, false);
		}
		free(order);
		tk_an_printf(out, json ? "\n    ]}" : "\n\n");
	}
	if (json)
		tk_an_printf(out, "\n  ]\n}\n");
	free(v);
	return 0;
}

static void sys_free(struct sys *s)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		for (size_t k = 0; k < s->threads[i]->nscs; k++)
			free(s->threads[i]->scs[k].durs);
		free(s->threads[i]->scs);
		free(s->threads[i]);
	}
	free(s->threads);
	free(s->slot_tid);
	free(s->slot_idx);
	free(s);
}

static int sys_read(const char *path, unsigned int flags, struct sys **out,
		    struct tk_feed_stats *st)
{
	struct sys *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	s->flags = flags;
	s->st = st;
	s->keep = flags & (TK_SYSCALLS_PERCENTILES | TK_SYSCALLS_HIST);
	ret = tk_feed_run(path, wants, sizeof(wants) / sizeof(wants[0]), TK_FEED_SIDEBAND, on_rec,
			  s, st);
	if (ret == 0 && !(st->present & (1u << W_EXIT)))
		ret = tk_fail(ENOENT,
			      "%s: no raw_syscalls:sys_exit events (record with 'perf trace "
			      "record' or 'tracekit record -e raw_syscalls')",
			      path);
	if (ret) {
		sys_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

int tk_syscalls_run(const char *path, const struct tk_syscalls_opts *opts)
{
	struct tk_feed_stats st;
	struct tk_outbuf out;
	struct sys *s = NULL;
	int ret, fr;

	ret = sys_read(path, opts->flags, &s, &st);
	if (ret)
		return ret;
	if (tk_outbuf_init(&out, opts->fd, 0)) {
		sys_free(s);
		return tk_fail(ENOMEM, "out of memory");
	}
	ret = print_summary(s, &out);
	fr = tk_outbuf_flush(&out);
	if (!ret && fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
	sys_free(s);
	return ret;
}

/* ---------------------------------------------------------------- compare */

struct agg {
	int64_t id;
	uint64_t calls[2], errors[2];
	double total[2]; /* ns */
};

static int agg_add(struct agg **v, size_t *n, size_t *cap, const struct sc *c, int side)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*v)[i].id == c->id)
			break;
	if (i == *n) {
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			struct agg *nv = realloc(*v, nc * sizeof(*nv));

			if (!nv)
				return tk_fail(ENOMEM, "out of memory");
			*v = nv;
			*cap = nc;
		}
		memset(&(*v)[i], 0, sizeof((*v)[i]));
		(*v)[i].id = c->id;
		(*n)++;
	}
	(*v)[i].calls[side] += (uint64_t)c->st.n;
	(*v)[i].errors[side] += c->failures;
	(*v)[i].total[side] += c->st.n * c->st.mean;
	return 0;
}

static int agg_cmp(const void *a, const void *b)
{
	const struct agg *x = a, *y = b;
	double mx = x->total[0] > x->total[1] ? x->total[0] : x->total[1];
	double my = y->total[0] > y->total[1] ? y->total[0] : y->total[1];

	if (mx != my)
		return mx > my ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void change_str(char *buf, size_t len, double a, double b)
{
	if (a == 0 && b == 0)
		snprintf(buf, len, "=");
	else if (a == 0)
		snprintf(buf, len, "new");
	else if (b == 0)
		snprintf(buf, len, "gone");
	else
		snprintf(buf, len, "%+.1f%%", (b - a) / a * 100.0);
}

int tk_syscalls_compare_run(const char *a, const char *b, const struct tk_syscalls_opts *opts)
{
	const char *paths[2] = {a, b};
	struct tk_feed_stats st[2];
	struct sys *s[2] = {NULL, NULL};
	struct agg *v = NULL;
	size_t n = 0, cap = 0;
	struct tk_outbuf out;
	bool json = opts->flags & TK_SYSCALLS_JSON;
	int ret = 0, fr;

	for (int k = 0; k < 2 && !ret; k++) {
		ret = sys_read(paths[k], 0, &s[k], &st[k]);
		for (size_t i = 0; !ret && i < s[k]->nthreads; i++)
			for (size_t j = 0;
			     !ret && !s[k]->threads[i]->dead && j < s[k]->threads[i]->nscs; j++)
				ret = agg_add(&v, &n, &cap, &s[k]->threads[i]->scs[j], k);
	}
	if (ret)
		goto out;
	if (n)
		qsort(v, n, sizeof(*v), agg_cmp);
	if (tk_outbuf_init(&out, opts->fd, 0)) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (json) {
		tk_an_printf(&out, "{\n  \"a\": ");
		tk_an_json_str(&out, a);
		tk_an_printf(&out, ",\n  \"b\": ");
		tk_an_json_str(&out, b);
		tk_an_printf(&out, ",\n  \"syscalls\": [");
	} else {
		tk_an_printf(&out, "\n A: %s\n B: %s\n\n", a, b);
		tk_an_printf(&out,
			     "   syscall          calls A   calls B  errors A  errors B    total A "
			     "   total B     change\n");
		tk_an_printf(&out,
			     "                                                             (msec)"
			     "     (msec)\n");
		tk_an_printf(
			&out,
			"   --------------- --------- --------- --------- --------- ---------- "
			"---------- ----------\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct agg *g = &v[i];
		const char *name = sc_name(s[0], g->id);
		char ch[32];

		if (!name)
			name = sc_name(s[1], g->id);
		change_str(ch, sizeof(ch), g->total[0], g->total[1]);
		if (json) {
			tk_an_printf(&out, "%s\n    {\"name\": ", i ? "," : "");
			tk_an_json_str(&out, name ? name : "?");
			tk_an_printf(&out,
				     ", \"id\": %" PRId64 ", \"calls\": [%" PRIu64 ", %" PRIu64
				     "], \"errors\": [%" PRIu64 ", %" PRIu64
				     "], \"total_ns\": [%.0f, %.0f], \"change\": \"%s\"}",
				     g->id, g->calls[0], g->calls[1], g->errors[0], g->errors[1],
				     g->total[0], g->total[1], ch);
			continue;
		}
		tk_an_printf(&out,
			     "   %-15s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
			     " %10.3f %10.3f %10s\n",
			     name ? name : "?", g->calls[0], g->calls[1], g->errors[0],
			     g->errors[1], g->total[0] / 1e6, g->total[1] / 1e6, ch);
	}
	tk_an_printf(&out, json ? "\n  ]\n}\n" : "\n");
	fr = tk_outbuf_flush(&out);
	if (!ret && fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
out:
	free(v);
	for (int k = 0; k < 2; k++)
		if (s[k])
			sys_free(s[k]);
	return ret;
}
