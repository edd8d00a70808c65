// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * sched: `perf sched latency` (perf 6.1), from the feed.
 *
 * The model is perf's, kept to what the table needs. Each thread has a
 * "last atom": the state it was left in at its last switch-out and the
 * times of that switch-out and of its wake-up. perf keeps every atom of
 * every thread (its memory grows with the trace: ~100 MB for 2.6 M
 * events); only the last one is ever read, so that is all we keep.
 *
 *   sched_switch on CPU c at t: the previous task gets a new atom, in
 *     state "waiting for CPU" (wake-up time t) when prev_state was 0
 *     (perf reads "RSDTtZXxKWP"[prev_state] and only 'R' counts as
 *     runnable; a preempted task, prev_state TASK_REPORT_MAX on recent
 *     kernels, so does not count), else "sleeping". The next task,
 *     when seen for the first time, gets a "waiting" atom at t; if its
 *     last atom is waiting and t is not before its wake-up, the delay
 *     t - wake-up is counted (a switch), summed, and kept as the maximum
 *     with its start and end when strictly larger.
 *   sched_wakeup / sched_wakeup_new (not sched_waking, which perf sched
 *     record takes on recent kernels: perf's latency ignores it): a
 *     sleeping last atom becomes waiting at t (all CPUs); an atom switched
 *     out after t counts as an unordered timestamp. With -C, any state.
 *   sched_stat_runtime: runtime added to the thread.
 *   sched_migrate_task, only with -C: the last atom's times all become t.
 *   A switch whose prev_pid is not the CPU's current task counts as a
 *   "context switch bug".
 *
 * Threads are perf's: keyed by tid, named by the last COMM (a forked
 * thread by its parent's name, pid 0 "swapper", others ":TID"); a FORK of
 * a tid that already exists starts a new thread, and the old one keeps its
 * numbers. The table merges threads by name (unless per-pid), prints them
 * sorted by the keys (descending, ties in perf's insertion order: names in
 * descending strcmp order, or tids descending per-pid), leaves out
 * "swapper" and threads without a switch.
 *
 * Percentiles and the log2 histogram are ours (not perf's text): they
 * need every delay, kept per thread only when asked for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>
#include <tracekit/outbuf.h>

#include "analyze-util.h"
#include "feed.h"
#include "sched-internal.h"
#include "internal/array.h"
#include "internal/error.h"

enum { SLEEPING = 0, WAIT_CPU, SCHED_IN, IGNORE };

enum { W_SWITCH, W_RUNTIME, W_WAKEUP, W_WAKEUP_NEW, W_MIGRATE };

static const struct tk_feed_want wants[] = {
	[W_SWITCH] = {"sched", "sched_switch", {"prev_pid", "prev_state", "next_pid"}},
	[W_RUNTIME] = {"sched", "sched_stat_runtime", {"pid", "runtime"}},
	[W_WAKEUP] = {"sched", "sched_wakeup", {"pid"}},
	[W_WAKEUP_NEW] = {"sched", "sched_wakeup_new", {"pid"}},
	[W_MIGRATE] = {"sched", "sched_migrate_task", {"pid"}},
};

struct task {
	int32_t tid;
	bool comm_set;
	bool comm_changed; /* map: a COMM named it since its last "=>" */
	char shortname[3]; /* map: "A0", ". " for swapper */
	bool has_atoms;	   /* perf created its work_atoms */
	bool has_atom;	   /* its list has an atom */
	uint8_t state;
	char comm[TK_FEED_COMM_LEN];
	uint64_t sched_out, wake_up;
	uint64_t total_lat, nb_atoms, total_runtime, max_lat, max_start, max_end;
	uint32_t num_merged;
	uint64_t *delays; /* with percentiles or hist */
	size_t ndelays, delay_cap;
	struct task *merged_next; /* merge chain for delays */
};

#define MAX_CPUS    4096
#define DIRECT_TIDS 65536

struct sched {
	const struct tk_sched_opts *o;
	struct task **tasks; /* every thread object, in creation order */
	size_t ntasks, task_cap;
	int32_t *slot_tid; /* open-addressing map tid -> current thread */
	uint32_t *slot_idx;
	size_t nslots, nused;
	/*
	 * The same for tids below DIRECT_TIDS, indexed (NULL: none yet; the
	 * table itself NULL when it could not be had): two lookups a switch
	 * were a third of the analysis's instructions.
	 */
	struct task **direct;
	uint64_t cpu_last_switched[MAX_CPUS];
	int64_t curr_pid[MAX_CPUS];
	uint64_t nr_timestamps, nr_unordered, nr_switch_bugs;
	bool keep_delays;
	int error;
	/* tk_sched_latency_rows(): the table's lines, not its text */
	struct tk_lat_rows *rows;
	/* map */
	bool map;
	struct tk_outbuf *out;
	struct task *curr[MAX_CPUS];
	int max_cpu;
	char next1, next2;
};

static size_t slot_of(const struct sched *s, int32_t tid)
{
	return tk_an_slot_of(s->slot_tid, s->nslots, tid);
}

static int grow_map(struct sched *s)
{
	return tk_an_slots_grow(&s->slot_tid, &s->slot_idx, &s->nslots);
}

/* A new thread object for @tid, replacing the current one in the map. */
static struct task *new_task(struct sched *s, int32_t tid)
{
	struct task *t, **v;
	size_t h;

	if ((s->nused + 1) * 2 > s->nslots && grow_map(s))
		return NULL;
	v = tk_array_grow(s->tasks, &s->task_cap, s->ntasks, sizeof(*v), 256);
	if (!v)
		return NULL;
	s->tasks = v;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	if (tid == 0) {
		memcpy(t->comm, "swapper", 8);
		t->comm_set = true;
	} else {
		snprintf(t->comm, sizeof(t->comm), ":%d", tid);
	}
	h = slot_of(s, tid);
	if (s->slot_tid[h] == INT32_MIN)
		s->nused++;
	/* Had with the first thread or never: it must hold every thread of a small tid. */
	if (!s->ntasks)
		s->direct = calloc(DIRECT_TIDS, sizeof(*s->direct));
	s->slot_tid[h] = tid;
	s->slot_idx[h] = (uint32_t)s->ntasks;
	s->tasks[s->ntasks++] = t;
	if (s->direct && (uint32_t)tid < DIRECT_TIDS)
		s->direct[tid] = t;
	return t;
}

static struct task *findnew_slow(struct sched *s, int32_t tid)
{
	if (s->nslots) {
		size_t h = slot_of(s, tid);

		if (s->slot_tid[h] == tid)
			return s->tasks[s->slot_idx[h]];
	}
	return new_task(s, tid);
}

/* The thread of @tid, made when new: inline for the small tids of the direct table. */
static inline struct task *findnew(struct sched *s, int32_t tid)
{
	struct task *t;

	if (s->direct && (uint32_t)tid < DIRECT_TIDS && (t = s->direct[tid]))
		return t;
	return findnew_slow(s, tid);
}

static void sched_out_atom(struct task *t, bool runnable, uint64_t ts)
{
	t->has_atom = true;
	t->sched_out = ts;
	t->wake_up = 0;
	t->state = SLEEPING;
	if (runnable) {
		t->state = WAIT_CPU;
		t->wake_up = ts;
	}
}

static int keep_delay(struct sched *s, struct task *t, uint64_t d)
{
	if (t->ndelays == t->delay_cap) {
		size_t cap = t->delay_cap ? t->delay_cap * 2 : 16;
		uint64_t *v = realloc(t->delays, cap * sizeof(*v));

		if (!v)
			return tk_fail(ENOMEM, "out of memory");
		t->delays = v;
		t->delay_cap = cap;
	}
	t->delays[t->ndelays++] = d;
	(void)s;
	return 0;
}

static int sched_in(struct sched *s, struct task *t, uint64_t ts)
{
	uint64_t d;

	if (!t->has_atom || t->state != WAIT_CPU)
		return 0;
	if (ts < t->wake_up) {
		t->state = IGNORE;
		return 0;
	}
	t->state = SCHED_IN;
	d = ts - t->wake_up;
	t->total_lat += d;
	if (d > t->max_lat) {
		t->max_lat = d;
		t->max_start = t->wake_up;
		t->max_end = ts;
	}
	t->nb_atoms++;
	return s->keep_delays ? keep_delay(s, t, d) : 0;
}

/* perf creates a task's work atoms on the first event that needs them, as if it had just left a
 * CPU. */
static void first_atom(struct task *t, bool runnable, uint64_t ts)
{
	if (!t->has_atoms) {
		t->has_atoms = true;
		sched_out_atom(t, runnable, ts);
	}
}

static int on_switch(struct sched *s, const struct tk_feed_rec *r)
{
	int32_t prev = (int32_t)r->val[0], next = (int32_t)r->val[2];
	uint32_t cpu = r->cpu;
	struct task *out, *in;

	if (cpu >= MAX_CPUS)
		return tk_fail(EBADMSG, "sched_switch on cpu %" PRIu32 ": more than %d CPUs", cpu,
			       MAX_CPUS);
	if (s->curr_pid[cpu] != -1 && s->curr_pid[cpu] != prev)
		s->nr_switch_bugs++;
	s->curr_pid[cpu] = next;
	s->cpu_last_switched[cpu] = r->time;
	out = findnew(s, prev);
	in = findnew(s, next);
	if (!out || !in)
		return tk_fail(ENOMEM, "out of memory");
	out->has_atoms = true;
	sched_out_atom(out, r->val[1] == 0, r->time);
	first_atom(in, true, r->time);
	return sched_in(s, in, r->time);
}

static int on_runtime(struct sched *s, const struct tk_feed_rec *r)
{
	struct task *t = findnew(s, (int32_t)r->val[0]);

	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	first_atom(t, true, r->time);
	t->total_runtime += r->val[1];
	return 0;
}

static int on_wakeup(struct sched *s, const struct tk_feed_rec *r)
{
	struct task *t = findnew(s, (int32_t)r->val[0]);

	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	first_atom(t, false, r->time);
	if (s->o->cpu == -1 && t->state != SLEEPING)
		return 0;
	s->nr_timestamps++;
	if (t->sched_out > r->time) {
		s->nr_unordered++;
		return 0;
	}
	t->state = WAIT_CPU;
	t->wake_up = r->time;
	return 0;
}

static int on_migrate(struct sched *s, const struct tk_feed_rec *r)
{
	struct task *t;

	if (s->o->cpu == -1)
		return 0;
	t = findnew(s, (int32_t)r->val[0]);
	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	first_atom(t, true, r->time);
	t->sched_out = t->wake_up = r->time;
	s->nr_timestamps++;
	return 0;
}

static void usec_str(char *buf, size_t len, uint64_t ts);

/*
 * perf sched map: one line per switch. A column per CPU up to the highest
 * seen or the analysing host's configured CPUs (perf counts this machine's,
 * not the traced one's, and leaves out the column of a CPU above them the
 * first time it shows); '*' marks the switching CPU; each thread gets a
 * two-character name (A0..Z0, A1.., swapper "."), announced with "=>" when
 * first switched in or after a COMM.
 */
static int map_switch(struct sched *s, const struct tk_feed_rec *r)
{
	int cpu = (int)r->cpu, cpus_nr;
	struct task *in;
	bool fresh = false;
	char ts[32];

	if (r->cpu >= MAX_CPUS)
		return tk_fail(EBADMSG, "sched_switch on cpu %" PRIu32 ": more than %d CPUs",
			       r->cpu, MAX_CPUS);
	if (cpu > s->max_cpu)
		s->max_cpu = cpu;
	cpus_nr = s->max_cpu;
	in = findnew(s, (int32_t)r->val[2]);
	if (!in)
		return tk_fail(ENOMEM, "out of memory");
	s->curr[cpu] = in;
	tk_outbuf_write(s->out, "  ", 2);
	if (!in->shortname[0]) {
		if (!strcmp(in->comm, "swapper")) {
			in->shortname[0] = '.';
			in->shortname[1] = ' ';
		} else {
			in->shortname[0] = s->next1;
			in->shortname[1] = s->next2;
			if (s->next1 < 'Z') {
				s->next1++;
			} else {
				s->next1 = 'A';
				s->next2 = s->next2 < '9' ? (char)(s->next2 + 1) : '0';
			}
		}
		fresh = true;
	}
	for (int i = 0; i < cpus_nr && i < MAX_CPUS; i++) {
		tk_outbuf_write(s->out, i == cpu ? "*" : " ", 1);
		if (s->curr[i])
			tk_an_printf(s->out, "%2s ", s->curr[i]->shortname);
		else
			tk_outbuf_write(s->out, "   ", 3);
	}
	usec_str(ts, sizeof(ts), r->time);
	tk_an_printf(s->out, "  %12s secs ", ts);
	if (fresh || in->comm_changed) {
		tk_an_printf(s->out, "%s => %s:%" PRId32, in->shortname, in->comm, in->tid);
		in->comm_changed = false;
	}
	tk_outbuf_write(s->out, "\n", 1);
	return s->out->error;
}

static int on_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct sched *s = ctx;
	struct task *t, *parent;

	switch (r->kind) {
	case TK_FEED_COMM:
		t = findnew(s, r->tid);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		memcpy(t->comm, r->comm, sizeof(t->comm));
		t->comm[sizeof(t->comm) - 1] = 0;
		t->comm_set = true;
		/* perf marks the thread of the record's trailer, not the one renamed. */
		t = findnew(s, (int32_t)r->val[0]);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		t->comm_changed = true;
		return 0;
	case TK_FEED_FORK:
		parent = findnew(s, (int32_t)r->val[1]);
		if (!parent)
			return tk_fail(ENOMEM, "out of memory");
		/* perf drops a thread of the same tid and starts a new one. */
		t = new_task(s, r->tid);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		if (parent->comm_set) {
			memcpy(t->comm, parent->comm, sizeof(t->comm));
			t->comm_set = true;
		}
		return 0;
	case TK_FEED_EXIT:
		return 0;
	}
	if (s->map) {
		if (r->want != W_SWITCH)
			return 0;
		if (r->cpu < MAX_CPUS && s->curr_pid[r->cpu] != -1 &&
		    s->curr_pid[r->cpu] != (int32_t)r->val[0])
			s->nr_switch_bugs++;
		if (r->cpu < MAX_CPUS)
			s->curr_pid[r->cpu] = (int32_t)r->val[2];
		return map_switch(s, r);
	}
	switch (r->want) {
	case W_SWITCH:
		return on_switch(s, r);
	case W_RUNTIME:
		return on_runtime(s, r);
	case W_WAKEUP:
	case W_WAKEUP_NEW:
		return on_wakeup(s, r);
	case W_MIGRATE:
		return on_migrate(s, r);
	}
	return 0;
}

/* ---------------------------------------------------------------- output */

typedef int (*key_cmp)(const struct task *l, const struct task *r);

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int pid_cmp(const struct task *l, const struct task *r)
{
	return l->tid < r->tid ? -1 : l->tid > r->tid;
}

static int avg_cmp(const struct task *l, const struct task *r)
{
	if (!l->nb_atoms)
		return -1;
	if (!r->nb_atoms)
		return 1;
	return cmp_u64(l->total_lat / l->nb_atoms, r->total_lat / r->nb_atoms);
}

static int max_cmp(const struct task *l, const struct task *r)
{
	return cmp_u64(l->max_lat, r->max_lat);
}

static int switch_cmp(const struct task *l, const struct task *r)
{
	return cmp_u64(l->nb_atoms, r->nb_atoms);
}

static int runtime_cmp(const struct task *l, const struct task *r)
{
	return cmp_u64(l->total_runtime, r->total_runtime);
}

struct keys {
	key_cmp k[16];
	int n;
};

static int parse_sort(const char *spec, struct keys *keys)
{
	static const struct {
		const char *name;
		key_cmp fn;
	} table[] = {{"pid", pid_cmp},
		     {"avg", avg_cmp},
		     {"max", max_cmp},
		     {"switch", switch_cmp},
		     {"runtime", runtime_cmp}};
	char buf[256];
	char *save = NULL, *tok;

	if (strlen(spec) >= sizeof(buf))
		return tk_fail(EINVAL, "sort keys too long: %s", spec);
	strcpy(buf, spec);
	keys->n = 0;
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		size_t i;

		for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if (!strcmp(tok, table[i].name))
				break;
		if (i == sizeof(table) / sizeof(table[0]))
			return tk_fail(EINVAL,
				       "unknown sort key '%s' (pid, avg, max, switch, runtime)",
				       tok);
		if (keys->n < 16)
			keys->k[keys->n++] = table[i].fn;
	}
	return 0;
}

static int keys_cmp(const struct keys *keys, const struct task *l, const struct task *r)
{
	for (int i = 0; i < keys->n; i++) {
		int c = keys->k[i](l, r);

		if (c)
			return c;
	}
	return 0;
}

/* Stable merge sort, larger first (perf's tree puts larger keys left). */
static void sort_tasks(struct task **v, struct task **tmp, size_t n, const struct keys *keys)
{
	size_t mid, i, j, k;

	if (n < 2)
		return;
	mid = n / 2;
	sort_tasks(v, tmp, mid, keys);
	sort_tasks(v + mid, tmp, n - mid, keys);
	for (i = 0, j = mid, k = 0; i < mid || j < n;) {
		if (j == n || (i < mid && keys_cmp(keys, v[j], v[i]) <= 0))
			tmp[k++] = v[i++];
		else
			tmp[k++] = v[j++];
	}
	memcpy(v, tmp, n * sizeof(*v));
}

static int tid_desc(const void *a, const void *b)
{
	const struct task *x = *(struct task *const *)a, *y = *(struct task *const *)b;

	if (x->tid != y->tid)
		return x->tid > y->tid ? -1 : 1;
	/* Same tid: perf orders its thread objects by address; newer first. */
	return x > y ? -1 : x < y;
}

/* Stable merge sort by name, descending: the order of perf's merge tree. */
static void sort_by_name(struct task **v, struct task **tmp, size_t n)
{
	size_t mid, i, j, k;

	if (n < 2)
		return;
	mid = n / 2;
	sort_by_name(v, tmp, mid);
	sort_by_name(v + mid, tmp, n - mid);
	for (i = 0, j = mid, k = 0; i < mid || j < n;) {
		if (j == n || (i < mid && strcmp(v[i]->comm, v[j]->comm) >= 0))
			tmp[k++] = v[i++];
		else
			tmp[k++] = v[j++];
	}
	memcpy(v, tmp, n * sizeof(*v));
}

static void usec_str(char *buf, size_t len, uint64_t ts)
{
	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, ts / 1000000000u, ts / 1000u % 1000000u);
}

/* The delays of a merged line, sorted; NULL when none. */
static uint64_t *line_delays(struct task *t, size_t *n)
{
	size_t total = 0, k = 0;
	uint64_t *v;

	for (struct task *m = t; m; m = m->merged_next)
		total += m->ndelays;
	*n = total;
	if (!total)
		return NULL;
	v = malloc(total * sizeof(*v));
	if (!v)
		return NULL;
	for (struct task *m = t; m; m = m->merged_next) {
		if (m->ndelays)
			memcpy(v + k, m->delays, m->ndelays * sizeof(*v));
		k += m->ndelays;
	}
	qsort(v, total, sizeof(*v), tk_an_u64_cmp);
	return v;
}

/* Nearest-rank percentile: the smallest delay with at least p% at or below it. */
static void print_extra_text(struct tk_outbuf *out, struct task *t, unsigned int flags)
{
	size_t n;
	uint64_t *v = line_delays(t, &n);

	if (!v)
		return;
	if (flags & TK_SCHED_PERCENTILES) {
		tk_an_printf(
			out,
			"%26s delay ms: p50 %.3f | p90 %.3f | p99 %.3f | p99.9 %.3f | max %.3f\n",
			"", tk_an_percentile(v, n, 50) / 1e6, tk_an_percentile(v, n, 90) / 1e6,
			tk_an_percentile(v, n, 99) / 1e6, tk_an_percentile(v, n, 99.9) / 1e6,
			v[n - 1] / 1e6);
	}
	if (flags & TK_SCHED_HIST) {
		uint64_t hist[65];

		tk_an_log2_hist(v, n, hist);
		tk_an_print_log2_hist(out, hist, "                           ", 10);
	}
	free(v);
}

static void print_json_task(struct tk_outbuf *out, struct task *t, bool first, unsigned int flags)
{
	tk_an_printf(out, "%s\n    {\"comm\": ", first ? "" : ",");
	tk_an_json_str(out, t->comm);
	if (t->num_merged > 1)
		tk_an_printf(out, ", \"threads\": %" PRIu32, t->num_merged);
	else
		tk_an_printf(out, ", \"tid\": %" PRId32, t->tid);
	tk_an_printf(out,
		     ", \"runtime_ns\": %" PRIu64 ", \"switches\": %" PRIu64
		     ", \"avg_delay_ns\": %" PRIu64 ", \"max_delay_ns\": %" PRIu64
		     ", \"max_delay_start_ns\": %" PRIu64 ", \"max_delay_end_ns\": %" PRIu64,
		     t->total_runtime, t->nb_atoms, t->total_lat / t->nb_atoms, t->max_lat,
		     t->max_start, t->max_end);
	if (flags & (TK_SCHED_PERCENTILES | TK_SCHED_HIST)) {
		size_t n;
		uint64_t *v = line_delays(t, &n);

		if (v && (flags & TK_SCHED_PERCENTILES))
			tk_an_printf(out,
				     ", \"delay_percentiles_ns\": {\"p50\": %" PRIu64
				     ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
				     ", \"p99.9\": %" PRIu64 ", \"max\": %" PRIu64 "}",
				     tk_an_percentile(v, n, 50), tk_an_percentile(v, n, 90),
				     tk_an_percentile(v, n, 99), tk_an_percentile(v, n, 99.9),
				     v[n - 1]);
		if (v && (flags & TK_SCHED_HIST)) {
			uint64_t hist[65];
			bool any = false;

			tk_an_log2_hist(v, n, hist);
			tk_an_printf(out, ", \"delay_log2_hist\": [");
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
		free(v);
	}
	tk_an_printf(out, "}");
}

static int print_table(struct sched *s, const struct tk_feed_stats *st, struct tk_outbuf *out)
{
	const struct tk_sched_opts *o = s->o;
	struct task **v = NULL, **tmp = NULL;
	size_t n = 0, m = 0;
	uint64_t all_runtime = 0, all_count = 0;
	struct keys keys;
	bool json = o->flags & TK_SCHED_JSON, first = true;
	int ret;

	ret = parse_sort(o->sort ? o->sort : "avg, max, switch, runtime", &keys);
	if (ret)
		return ret;
	v = malloc((s->ntasks + 1) * sizeof(*v));
	tmp = malloc((s->ntasks + 1) * sizeof(*tmp));
	if (!v || !tmp) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i]->has_atoms)
			v[n++] = s->tasks[i];
	/* perf's first tree: tids descending. */
	qsort(v, n, sizeof(*v), tid_desc);
	if (!(o->flags & TK_SCHED_PER_PID)) {
		/*
		 * Merge by name: the first thread met (highest tid) keeps the
		 * line; a larger maximum of a later one replaces its maximum.
		 * Sorting the tid-ordered list by name, stably, puts each name's
		 * threads together in that order.
		 */
		for (size_t i = 0; i < n; i++)
			tmp[i] = v[i];
		sort_by_name(tmp, v, n);
		m = 0;
		for (size_t i = 0; i < n;) {
			struct task *head = tmp[i], *tail = head;
			size_t j = i + 1;

			head->num_merged = 1;
			while (j < n && !strcmp(tmp[j]->comm, head->comm)) {
				struct task *d = tmp[j++];

				head->num_merged++;
				head->total_runtime += d->total_runtime;
				head->nb_atoms += d->nb_atoms;
				head->total_lat += d->total_lat;
				if (head->max_lat < d->max_lat) {
					head->max_lat = d->max_lat;
					head->max_start = d->max_start;
					head->max_end = d->max_end;
				}
				tail->merged_next = d;
				tail = d;
			}
			v[m++] = head;
			i = j;
		}
		n = m;
	}
	sort_tasks(v, tmp, n, &keys);

	if (s->rows) {
		/* Only the lines, in the table's order (tk_sched_latency_rows()). */
	} else if (json) {
		tk_an_printf(out, "{\n  \"tasks\": [");
	} else {
		tk_an_printf(out,
			     "\n ---------------------------------------------------------------"
			     "--------------------------------------------------------------------"
			     "--------\n");
		tk_an_printf(out,
			     "  Task                  |   Runtime ms  | Switches | Avg delay ms    "
			     "| Max delay ms    | Max delay start           | Max delay end      "
			     "    |\n");
		tk_an_printf(out,
			     " ---------------------------------------------------------------"
			     "--------------------------------------------------------------------"
			     "--------\n");
	}
	for (size_t i = 0; i < n; i++) {
		struct task *t = v[i];
		char name[64], st1[32], st2[32];
		int len;

		if (!t->nb_atoms || !strcmp(t->comm, "swapper"))
			continue;
		all_runtime += t->total_runtime;
		all_count += t->nb_atoms;
		if (s->rows) {
			ret = lat_rows_add(s->rows, t->comm, t->num_merged > 1 ? -1 : t->tid,
					   t->num_merged, t->total_runtime, t->nb_atoms,
					   t->total_lat / t->nb_atoms, t->max_lat);
			if (ret)
				goto out;
			continue;
		}
		if (json) {
			print_json_task(out, t, first, o->flags);
			first = false;
			continue;
		}
		if (t->num_merged > 1)
			len = snprintf(name, sizeof(name), "  %s:(%" PRIu32 ") ", t->comm,
				       t->num_merged);
		else
			len = snprintf(name, sizeof(name), "  %s:%" PRId32 " ", t->comm, t->tid);
		tk_an_printf(out, "%s%*s", name, len < 24 ? 24 - len : 0, "");
		usec_str(st1, sizeof(st1), t->max_start);
		usec_str(st2, sizeof(st2), t->max_end);
		tk_an_printf(out,
			     "|%11.3f ms |%9" PRIu64 " | avg:%8.3f ms | max:%8.3f ms | max start: "
			     "%12s s | max end: %12s s\n",
			     (double)t->total_runtime / 1e6, t->nb_atoms,
			     (double)(t->total_lat / t->nb_atoms) / 1e6, (double)t->max_lat / 1e6,
			     st1, st2);
		if (o->flags & (TK_SCHED_PERCENTILES | TK_SCHED_HIST))
			print_extra_text(out, t, o->flags);
	}
	if (s->rows)
		goto out;
	if (json) {
		tk_an_printf(out,
			     "\n  ],\n  \"total\": {\"runtime_ns\": %" PRIu64
			     ", \"switches\": %" PRIu64 "},\n  \"unordered_timestamps\": %" PRIu64
			     ", \"timestamps\": %" PRIu64 ", \"lost_events\": %" PRIu64
			     ", \"context_switch_bugs\": %" PRIu64 "\n}\n",
			     all_runtime, all_count, s->nr_unordered, s->nr_timestamps, st->nr_lost,
			     s->nr_switch_bugs);
		goto out;
	}
	tk_an_printf(out, " -----------------------------------------------------------------------"
			  "------------------------------------------\n");
	tk_an_printf(out, "  TOTAL:                |%11.3f ms |%9" PRIu64 " |\n",
		     (double)all_runtime / 1e6, all_count);
	tk_an_printf(out, " ---------------------------------------------------\n");
	if (s->nr_unordered && s->nr_timestamps)
		tk_an_printf(out,
			     "  INFO: %.3f%% unordered timestamps (%" PRIu64 " out of %" PRIu64
			     ")\n",
			     (double)s->nr_unordered / (double)s->nr_timestamps * 100.0,
			     s->nr_unordered, s->nr_timestamps);
	if (st->nr_lost && st->nr_records)
		tk_an_printf(out,
			     "  INFO: %.3f%% lost events (%" PRIu64 " out of %" PRIu64
			     ", in %" PRIu64 " chunks)\n",
			     (double)st->nr_lost / (double)st->nr_records * 100.0, st->nr_lost,
			     st->nr_records, st->nr_lost_chunks);
	if (s->nr_switch_bugs && s->nr_timestamps) {
		tk_an_printf(out,
			     "  INFO: %.3f%% context switch bugs (%" PRIu64 " out of %" PRIu64 ")",
			     (double)s->nr_switch_bugs / (double)s->nr_timestamps * 100.0,
			     s->nr_switch_bugs, s->nr_timestamps);
		if (st->nr_lost)
			tk_an_printf(out, " (due to lost events?)");
		tk_an_printf(out, "\n");
	}
	tk_an_printf(out, "\n");
out:
	free(v);
	free(tmp);
	return ret;
}

static int latency_run(const char *path, const struct tk_sched_opts *opts,
		       struct tk_lat_rows *rows);

int tk_sched_latency_run(const char *path, const struct tk_sched_opts *opts)
{
	return latency_run(path, opts, NULL);
}

int tk_sched_latency_rows(const char *path, const struct tk_sched_opts *opts,
			  struct tk_lat_rows *rows)
{
	return latency_run(path, opts, rows);
}

static int latency_run(const char *path, const struct tk_sched_opts *opts, struct tk_lat_rows *rows)
{
	struct sched *s;
	struct tk_feed_stats st;
	struct tk_outbuf out;
	struct keys keys;
	int ret;

	ret = parse_sort(opts->sort ? opts->sort : "avg, max, switch, runtime", &keys);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	s->o = opts;
	s->rows = rows;
	s->keep_delays = opts->flags & (TK_SCHED_PERCENTILES | TK_SCHED_HIST);
	for (size_t i = 0; i < MAX_CPUS; i++)
		s->curr_pid[i] = -1;
	ret = tk_feed_run(path, wants, sizeof(wants) / sizeof(wants[0]), TK_FEED_SIDEBAND, on_rec,
			  s, &st);
	if (ret == 0 && !(st.present & (1u << W_SWITCH)))
		ret = tk_fail(ENOENT,
			      "%s: no sched:sched_switch events (record with 'perf sched "
			      "record' or 'tracekit record -e sched')",
			      path);
	if (ret == 0) {
		ret = tk_outbuf_init(&out, opts->fd, 0);
		if (ret == 0) {
			ret = print_table(s, &st, &out);
			int fr = tk_outbuf_flush(&out);

			if (!ret && fr)
				ret = tk_fail(-fr, "write: %s", strerror(-fr));
			tk_outbuf_release(&out);
		} else {
			ret = tk_fail(ENOMEM, "out of memory");
		}
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		free(s->tasks[i]->delays);
		free(s->tasks[i]);
	}
	free(s->tasks);
	free(s->slot_tid);
	free(s->slot_idx);
	free(s->direct);
	free(s);
	return ret;
}

int tk_sched_map_run(const char *path, const struct tk_sched_opts *opts)
{
	struct sched *s;
	struct tk_feed_stats st;
	struct tk_outbuf out;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int ret, fr;

	s = calloc(1, sizeof(*s));
	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_outbuf_init(&out, opts->fd, 0)) {
		free(s);
		return tk_fail(ENOMEM, "out of memory");
	}
	s->o = opts;
	s->map = true;
	s->out = &out;
	s->next1 = 'A';
	s->next2 = '0';
	s->max_cpu = ncpu > 0 && ncpu < MAX_CPUS ? (int)ncpu : 1;
	for (size_t i = 0; i < MAX_CPUS; i++)
		s->curr_pid[i] = -1;
	ret = tk_feed_run(path, wants, 1, TK_FEED_SIDEBAND, on_rec, s, &st);
	if (ret == 0 && !(st.present & (1u << W_SWITCH)))
		ret = tk_fail(ENOENT,
			      "%s: no sched:sched_switch events (record with 'perf sched "
			      "record' or 'tracekit record -e sched')",
			      path);
	if (ret == 0 && st.nr_lost && st.nr_records)
		tk_an_printf(&out,
			     "  INFO: %.3f%% lost events (%" PRIu64 " out of %" PRIu64
			     ", in %" PRIu64 " chunks)\n",
			     (double)st.nr_lost / (double)st.nr_records * 100.0, st.nr_lost,
			     st.nr_records, st.nr_lost_chunks);
	fr = tk_outbuf_flush(&out);
	if (!ret && fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
	for (size_t i = 0; i < s->ntasks; i++) {
		free(s->tasks[i]->delays);
		free(s->tasks[i]);
	}
	free(s->tasks);
	free(s->slot_tid);
	free(s->slot_idx);
	free(s->direct);
	free(s);
	return ret;
}
