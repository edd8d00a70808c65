// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * balance: per-CPU run-queue balance over time, from the sched events of a
 * .dat or perf.data (what perf sched and trace-cmd do not show).
 *
 * The run queue of a CPU is counted as the tasks waiting on it to run (the
 * running task not included), kept from the events:
 *   a wake-up (sched_waking when the file has it, else sched_wakeup, and
 *     sched_wakeup_new) of a task neither waiting nor running puts it on
 *     its target_cpu;
 *   a sched_switch on CPU c puts the task leaving on c when it left
 *     runnable (preempted: prev_state with no state bit below
 *     TASK_REPORT_MAX, i.e. prev_state & 0xff == 0), and takes the task
 *     coming in off the CPU it waited on;
 *   sched_migrate_task moves a waiting task to dest_cpu.
 * Each CPU's queue length is integrated over time and, from sched_switch,
 * the time it ran a task other than its idle task (pid 0). Time is cut in
 * windows of --interval (default 100 ms) from the first event; per window
 * and CPU: the average queue length and the busy share. The imbalance of a
 * window is the largest average queue minus the smallest; the summary gives
 * its mean over the windows and the worst window. A task already waiting
 * when the trace began is not seen until it runs: queues start empty.
 * Memory: per task a byte of state, per window a pair of numbers per CPU.
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

enum { W_SWITCH, W_WAKEUP, W_WAKING, W_WAKEUP_NEW, W_MIGRATE };

static const struct tk_feed_want wants[] = {
	[W_SWITCH] = {"sched", "sched_switch", {"prev_pid", "prev_state", "next_pid"}},
	[W_WAKEUP] = {"sched", "sched_wakeup", {"pid", "target_cpu"}},
	[W_WAKING] = {"sched", "sched_waking", {"pid", "target_cpu"}},
	[W_WAKEUP_NEW] = {"sched", "sched_wakeup_new", {"pid", "target_cpu"}},
	[W_MIGRATE] = {"sched", "sched_migrate_task", {"pid", "dest_cpu"}},
};

#define MAX_CPUS 1024

struct cpu {
	int64_t q;     /* tasks waiting */
	uint64_t last; /* time of the last change of q or of the running task */
	bool busy;     /* runs a task other than idle */
	bool seen;
};

struct win {
	double q;      /* integral of the queue length, ns */
	uint64_t busy; /* ns */
};

struct bal {
	const struct tk_balance_opts *o;
	struct tk_feed_stats *st;
	uint64_t interval, t0, tend;
	bool started;
	uint32_t ncpus;
	struct cpu cpus[MAX_CPUS];
	struct win *w; /* nwin windows of stride entries, one per CPU */
	size_t nwin, wcap, stride;
	int16_t *waiting;    /* by pid: CPU + 1, 0 not waiting */
	uint8_t *is_running; /* by pid: on a CPU now */
	size_t nwaiting;
	uint64_t running[MAX_CPUS]; /* pid + 1 each CPU runs, 0 unknown */
};

static int ensure_win(struct bal *b, size_t idx)
{
	if (idx < b->nwin)
		return 0;
	if (idx >= b->wcap) {
		size_t cap = b->wcap ? b->wcap * 2 : 64;
		struct win *w;

		while (cap <= idx)
			cap *= 2;
		w = realloc(b->w, cap * b->stride * sizeof(*w));
		if (!w)
			return tk_fail(ENOMEM, "out of memory");
		b->w = w;
		b->wcap = cap;
	}
	memset(b->w + b->nwin * b->stride, 0, (idx + 1 - b->nwin) * b->stride * sizeof(*b->w));
	b->nwin = idx + 1;
	return 0;
}

/* Account CPU @c's queue and busy time from its last change up to @t. */
static int advance(struct bal *b, uint32_t c, uint64_t t)
{
	struct cpu *cp = &b->cpus[c];
	uint64_t from = cp->last;

	if (c >= b->stride) {
		/* A CPU above the file's count: widen every window. */
		size_t stride = b->stride;
		struct win *w;

		while (stride <= c)
			stride *= 2;
		w = calloc(b->wcap ? b->wcap : 1, stride * sizeof(*w));
		if (!w)
			return tk_fail(ENOMEM, "out of memory");
		for (size_t i = 0; i < b->nwin; i++)
			memcpy(w + i * stride, b->w + i * b->stride, b->stride * sizeof(*w));
		free(b->w);
		b->w = w;
		b->stride = stride;
	}
	if (!cp->seen) {
		cp->seen = true;
		cp->last = t;
		if (c + 1 > b->ncpus)
			b->ncpus = c + 1;
		return 0;
	}
	while (from < t) {
		size_t idx = (size_t)((from - b->t0) / b->interval);
		uint64_t wend = b->t0 + (idx + 1) * b->interval, to = t < wend ? t : wend;
		int ret = ensure_win(b, idx);

		if (ret)
			return ret;
		b->w[idx * b->stride + c].q += (double)cp->q * (double)(to - from);
		if (cp->busy)
			b->w[idx * b->stride + c].busy += to - from;
		from = to;
	}
	cp->last = t;
	return 0;
}

static int set_waiting(struct bal *b, uint64_t pid, int cpu, uint64_t t)
{
	int old;
	int ret;

	if (pid >= (1u << 22))
		return 0;
	if (pid >= b->nwaiting) {
		size_t n = b->nwaiting ? b->nwaiting : 4096;
		int16_t *v;

		while (n <= pid)
			n *= 2;
		uint8_t *rn;

		v = realloc(b->waiting, n * sizeof(*v));
		if (!v)
			return tk_fail(ENOMEM, "out of memory");
		memset(v + b->nwaiting, 0, (n - b->nwaiting) * sizeof(*v));
		b->waiting = v;
		rn = realloc(b->is_running, n);
		if (!rn)
			return tk_fail(ENOMEM, "out of memory");
		memset(rn + b->nwaiting, 0, n - b->nwaiting);
		b->is_running = rn;
		b->nwaiting = n;
	}
	old = b->waiting[pid] - 1;
	if (old == cpu)
		return 0;
	if (old >= 0) {
		ret = advance(b, (uint32_t)old, t);
		if (ret)
			return ret;
		b->cpus[old].q--;
	}
	if (cpu >= 0) {
		ret = advance(b, (uint32_t)cpu, t);
		if (ret)
			return ret;
		b->cpus[cpu].q++;
	}
	b->waiting[pid] = (int16_t)(cpu + 1);
	return 0;
}

static int on_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct bal *b = ctx;
	int ret;

	if (r->kind != TK_FEED_EVENT)
		return 0;
	if (r->cpu >= MAX_CPUS)
		return tk_fail(EBADMSG, "sched event on cpu %" PRIu32 ": more than %d CPUs", r->cpu,
			       MAX_CPUS);
	if (!b->started) {
		b->started = true;
		b->t0 = r->time;
		b->stride = b->st->nr_cpus_online ? b->st->nr_cpus_online : 8;
	}
	if (r->time < b->t0)
		return 0;
	b->tend = r->time;
	switch (r->want) {
	case W_SWITCH: {
		struct cpu *cp = &b->cpus[r->cpu];

		ret = advance(b, r->cpu, r->time);
		if (ret)
			return ret;
		cp->busy = r->val[2] != 0;
		/* The task leaving waits here if it was preempted, else nowhere. */
		ret = set_waiting(b, r->val[0], r->val[0] && !(r->val[1] & 0xff) ? (int)r->cpu : -1,
				  r->time);
		if (ret)
			return ret;
		if (b->running[r->cpu] && b->running[r->cpu] - 1 < b->nwaiting)
			b->is_running[b->running[r->cpu] - 1] = 0;
		b->running[r->cpu] = r->val[2] + 1;
		ret = set_waiting(b, r->val[2], -1, r->time);
		if (!ret && r->val[2] < b->nwaiting)
			b->is_running[r->val[2]] = 1;
		return ret;
	}
	case W_WAKEUP:
		/* sched_waking, when the file has it, is the wake-up (as perf takes it). */
		if (b->st->present & (1u << W_WAKING))
			return 0;
		/* fall through */
	case W_WAKING:
	case W_WAKEUP_NEW:
		if (r->val[1] >= MAX_CPUS || !r->val[0])
			return 0;
		/* Waking a task that waits already, or runs (the waker itself), queues nothing. */
		if (r->val[0] < b->nwaiting && (b->waiting[r->val[0]] || b->is_running[r->val[0]]))
			return 0;
		return set_waiting(b, r->val[0], (int)r->val[1], r->time);
	case W_MIGRATE:
		if (r->val[1] >= MAX_CPUS || r->val[0] >= b->nwaiting || !b->waiting[r->val[0]])
			return 0;
		return set_waiting(b, r->val[0], (int)r->val[1], r->time);
	}
	return 0;
}

static void print(struct bal *b, struct tk_outbuf *out)
{
	bool json = b->o->flags & TK_BALANCE_JSON;
	double sum_imb = 0, worst = -1;
	size_t worst_at = 0;

	if (json)
		tk_an_printf(out,
			     "{\n  \"interval_ns\": %" PRIu64 ", \"cpus\": %" PRIu32
			     ", \"start_ns\": %" PRIu64 ",\n  \"windows\": [",
			     b->interval, b->ncpus, b->t0);
	else {
		tk_an_printf(out, "\nRun-queue balance: %zu windows of %.3f ms, %" PRIu32 " CPUs\n",
			     b->nwin, b->interval / 1e6, b->ncpus);
		tk_an_printf(out, "  (per CPU: average tasks waiting to run / busy %%)\n\n");
		tk_an_printf(out, "  %14s ", "start s");
		for (uint32_t c = 0; c < b->ncpus; c++)
			tk_an_printf(out, "  %5s%-6" PRIu32 "      ", "cpu", c);
		tk_an_printf(out, "  imbalance\n");
	}
	for (size_t i = 0; i < b->nwin; i++) {
		uint64_t ws = b->t0 + i * b->interval, we = ws + b->interval;
		double len = (double)((we < b->tend ? we : b->tend) - ws), qmin = 0, qmax = 0;

		if (len <= 0)
			len = 1;
		if (json)
			tk_an_printf(out, "%s\n    {\"start_ns\": %" PRIu64 ", \"cpus\": [",
				     i ? "," : "", ws);
		else
			tk_an_printf(out, "  %7" PRIu64 ".%06" PRIu64 " ", ws / 1000000000u,
				     ws / 1000u % 1000000u);
		for (uint32_t c = 0; c < b->ncpus; c++) {
			const struct win *w = &b->w[i * b->stride + c];
			double q = w->q / len, busy = 100.0 * (double)w->busy / len;

			if (c == 0 || q < qmin)
				qmin = q;
			if (c == 0 || q > qmax)
				qmax = q;
			if (json)
				tk_an_printf(out, "%s{\"rq\": %.3f, \"busy_pct\": %.1f}",
					     c ? ", " : "", q, busy);
			else
				tk_an_printf(out, "  %7.2f /%5.1f%% ", q, busy);
		}
		sum_imb += qmax - qmin;
		if (qmax - qmin > worst) {
			worst = qmax - qmin;
			worst_at = i;
		}
		if (json)
			tk_an_printf(out, "], \"imbalance\": %.3f}", qmax - qmin);
		else
			tk_an_printf(out, "  %9.2f\n", qmax - qmin);
	}
	if (json) {
		tk_an_printf(out, "\n  ],\n  \"mean_imbalance\": %.3f, \"worst_window\": %zu\n}\n",
			     b->nwin ? sum_imb / (double)b->nwin : 0.0, worst_at);
		return;
	}
	if (b->nwin) {
		uint64_t ws = b->t0 + worst_at * b->interval;

		tk_an_printf(out,
			     "\n  mean imbalance %.2f tasks; worst %.2f in the window at %" PRIu64
			     ".%06" PRIu64 " s\n",
			     sum_imb / (double)b->nwin, worst, ws / 1000000000u,
			     ws / 1000u % 1000000u);
	}
}

int tk_sched_balance_run(const char *path, const struct tk_balance_opts *opts)
{
	struct tk_feed_stats st;
	struct tk_outbuf out;
	struct bal *b;
	int ret, fr;

	b = calloc(1, sizeof(*b));
	if (!b)
		return tk_fail(ENOMEM, "out of memory");
	b->o = opts;
	b->st = &st;
	b->interval = opts->interval_ns ? opts->interval_ns : 100000000u;
	ret = tk_feed_run(path, wants, sizeof(wants) / sizeof(wants[0]), 0, on_rec, b, &st);
	if (ret == 0 && !(st.present & (1u << W_SWITCH)))
		ret = tk_fail(ENOENT,
			      "%s: no sched:sched_switch events (record with 'perf sched "
			      "record' or 'tracekit record -e sched')",
			      path);
	/* Close every CPU's last stretch at the end of the trace. */
	for (uint32_t c = 0; ret == 0 && c < b->ncpus; c++)
		if (b->cpus[c].seen)
			ret = advance(b, c, b->tend);
	if (ret == 0) {
		if (tk_outbuf_init(&out, opts->fd, 0)) {
			ret = tk_fail(ENOMEM, "out of memory");
		} else {
			print(b, &out);
			fr = tk_outbuf_flush(&out);
			if (fr)
				ret = tk_fail(-fr, "write: %s", strerror(-fr));
			tk_outbuf_release(&out);
		}
	}
	free(b->w);
	free(b->waiting);
	free(b->is_running);
	free(b);
	return ret;
}
