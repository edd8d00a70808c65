// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * timehist: `perf sched timehist` (perf 6.1), from the feed.
 *
 * One line per sched_switch, for the task leaving the CPU: how long it
 * had been off the CPU before it last ran (wait time), how long it waited
 * between its wake-up and that run (scheduling delay), and how long it ran.
 * The numbers are perf's:
 *
 *   tprev    the previous sched_switch on this CPU (when this task got it)
 *   run      t - tprev (0 when this CPU had no earlier switch)
 *   delay    tprev - wake-up, when a wake-up was seen since the task last
 *            left a CPU and is not after tprev
 *   wait     tprev - the task's last switch-out, when there was one and
 *            it is not after tprev; split by the state it left in (0
 *            preempted, 2 iowait, else sleep) for --state's summary
 *
 * A wake-up (sched_waking when the file has it, else sched_wakeup, and
 * sched_wakeup_new) sets the woken thread's wake-up time unless one is
 * already pending; a switch-out clears it. The task leaving is the
 * sample's thread, except that prev_pid 0 means the CPU's idle task, one
 * "<idle>" per CPU.
 *
 * Threads are perf's machine threads, only what the text needs: keyed by
 * tid, with the pid they were created with (a thread first met as a
 * wake-up's target is created with pid 0 and keeps it, so perf prints it
 * without "[tid]"), the parent's tid from FORK, and the last COMM's name.
 * A FORK of a tid that exists drops the old thread (it leaves the summary),
 * as does a FORK whose parent was created with another pid. The summary
 * walks threads as perf's table does: by tid modulo 256, then by tid.
 *
 * The task-name column starts 30 wide and widens, for the rest of the
 * output, when a longer "comm[tid/pid]" is printed (perf's comm_width).
 *
 * Not reproduced: call chains (perf sched record takes none), --time,
 * -I, -n (needs next_comm), perf's "lost N events" lines.
 *
 * Ours: --percentiles and --hist summarise the wait, delay and run times
 * of every printed line; --json prints the same numbers as one document.
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
#include "internal/array.h"
#include "internal/error.h"

enum { W_SWITCH, W_WAKEUP, W_WAKING, W_WAKEUP_NEW, W_MIGRATE, W_RUNTIME };

static const struct tk_feed_want wants[] = {
	[W_SWITCH] = {"sched", "sched_switch", {"prev_pid", "prev_state", "next_pid"}},
	[W_WAKEUP] = {"sched", "sched_wakeup", {"pid"}},
	[W_WAKING] = {"sched", "sched_waking", {"pid"}},
	[W_WAKEUP_NEW] = {"sched", "sched_wakeup_new", {"pid"}},
	[W_MIGRATE] = {"sched", "sched_migrate_task", {"pid", "orig_cpu", "dest_cpu"}},
	[W_RUNTIME] = {"sched", "sched_stat_runtime", {NULL}},
};

/* perf's running statistics (Welford), in doubles as perf keeps them. */
struct thread {
	int32_t tid, pid, ppid;
	bool comm_set;
	bool dead;   /* dropped from perf's table by a FORK */
	bool exited; /* an EXIT was seen: listed under "Terminated tasks" */
	char comm[TK_FEED_COMM_LEN];
	uint8_t cslen; /* the "comm[tid/pid]" text in cs, 0: to be made */
	char cs[48];
	uint64_t last_time, ready_to_run;
	int64_t last_state;
	uint64_t dt_run, dt_delay, dt_sleep, dt_iowait, dt_preempt;
	struct tk_an_stats run;
	uint64_t total_run, total_sleep, total_iowait, total_preempt, total_delay;
	uint64_t migrations;
};

#define MAX_CPUS 4096

struct th {
	const struct tk_timehist_opts *o;
	struct tk_feed_stats *st;
	struct tk_outbuf *out;
	struct thread **threads; /* every object, in creation order */
	size_t nthreads, cap;
	int32_t *slot_tid; /* open addressing: tid -> index of the live thread */
	uint32_t *slot_idx;
	size_t nslots, nused;
	struct thread **direct; /* tids below DIRECT_TIDS: their live thread, indexed */
	struct thread *idle[MAX_CPUS];
	uint64_t last_switch[MAX_CPUS];
	uint32_t idle_max; /* perf's idle_max_cpu */
	uint32_t max_cpu;
	int comm_width;
	uint64_t skipped;
	uint64_t hist_start, hist_end;
	bool first_json;
	bool started;
	/* --percentiles / --hist: every printed wait, delay and run */
	uint64_t *lat[3];
	size_t nlat, latcap;
};

/* ---------------------------------------------------------------- threads */

/* Tids below this find their live thread by index (th.direct). */
#define DIRECT_TIDS 65536

static size_t slot_of(const struct th *h, int32_t tid)
{
	return tk_an_slot_of(h->slot_tid, h->nslots, tid);
}

static int grow_slots(struct th *h)
{
	return tk_an_slots_grow(&h->slot_tid, &h->slot_idx, &h->nslots);
}

static struct thread *thread_alloc(int32_t pid, int32_t tid)
{
	struct thread *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	t->pid = pid;
	t->ppid = -1;
	t->last_state = -1;
	tk_an_stats_init(&t->run);
	snprintf(t->comm, sizeof(t->comm), ":%d", tid);
	return t;
}

/* A new live thread for @tid; an older one of that tid leaves the table. */
static struct thread *thread_new(struct th *h, int32_t pid, int32_t tid)
{
	struct thread *t, **v;
	size_t i;

	if ((h->nused + 1) * 2 > h->nslots && grow_slots(h))
		return NULL;
	v = tk_array_grow(h->threads, &h->cap, h->nthreads, sizeof(*v), 256);
	if (!v)
		return NULL;
	h->threads = v;
	t = thread_alloc(pid, tid);
	if (!t)
		return NULL;
	i = slot_of(h, tid);
	if (h->slot_tid[i] == INT32_MIN)
		h->nused++;
	else
		h->threads[h->slot_idx[i]]->dead = true;
	/* Had with the first thread or never: it must hold every thread of a small tid. */
	if (!h->nthreads)
		h->direct = calloc(DIRECT_TIDS, sizeof(*h->direct));
	h->slot_tid[i] = tid;
	h->slot_idx[i] = (uint32_t)h->nthreads;
	h->threads[h->nthreads++] = t;
	if (h->direct && (uint32_t)tid < DIRECT_TIDS)
		h->direct[tid] = t;
	return t;
}

static struct thread *thread_find(struct th *h, int32_t tid)
{
	size_t i;

	if (h->direct && (uint32_t)tid < DIRECT_TIDS)
		return h->direct[tid];
	if (!h->nslots)
		return NULL;
	i = slot_of(h, tid);
	return h->slot_tid[i] == tid ? h->threads[h->slot_idx[i]] : NULL;
}

/* perf's machine__findnew_thread(pid, tid): a found thread keeps its pid unless it was -1. */
static struct thread *findnew(struct th *h, int32_t pid, int32_t tid)
{
	struct thread *t = thread_find(h, tid);

	if (t) {
		if (t->pid == -1 && pid != -1) {
			t->pid = pid;
			t->cslen = 0;
		}
		return t;
	}
	t = thread_new(h, pid, tid);
	if (t && tid == 0 && pid == 0) {
		/* perf's machine names its idle thread. */
		memcpy(t->comm, "swapper", 8);
		t->comm_set = true;
	}
	return t;
}

static struct thread *idle_thread(struct th *h, uint32_t cpu)
{
	if (!h->idle[cpu]) {
		struct thread *t = thread_alloc(0, 0);

		if (!t)
			return NULL;
		memcpy(t->comm, "<idle>", 7);
		t->comm_set = true;
		h->idle[cpu] = t;
	}
	if (cpu >= h->idle_max) {
		uint32_t n = 1;

		while (n < cpu + 1)
			n <<= 1;
		h->idle_max = n;
	}
	return h->idle[cpu];
}

/* "comm", "comm[tid]" or "comm[tid/pid]"; widens the column as perf does. */
static const char *commstr(struct th *h, const struct thread *t, char *buf, size_t len)
{
	int n;

	if (t->pid == 0)
		n = snprintf(buf, len, "%s", t->comm);
	else if (t->tid != t->pid)
		n = snprintf(buf, len, "%s[%d/%d]", t->comm, t->tid, t->pid);
	else
		n = snprintf(buf, len, "%s[%d]", t->comm, t->tid);
	if (n > (int)len - 1)
		n = (int)len - 1;
	if (n > h->comm_width)
		h->comm_width = n;
	return buf;
}

static bool in_list(const int32_t *v, size_t n, int32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool filtered(const struct th *h, const struct thread *t)
{
	if (h->o->npids && !in_list(h->o->pids, h->o->npids, t->pid))
		return true;
	if (h->o->ntids && !in_list(h->o->tids, h->o->ntids, t->tid))
		return true;
	return false;
}

static bool cpu_shown(const struct th *h, uint32_t cpu)
{
	if (!h->o->cpus)
		return true;
	return cpu < h->o->ncpus && h->o->cpus[cpu];
}

/* ---------------------------------------------------------------- output */

static void time_str(char *buf, size_t len, uint64_t ts)
{
	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, ts / 1000000000u, ts / 1000u % 1000000u);
}

/* perf's print_sched_time: msec.usec, then a space. */
static void sched_time(struct tk_outbuf *out, uint64_t ns, int width)
{
	tk_an_printf(out, "%*" PRIu64 ".%03" PRIu64 " ", width, ns / 1000000u,
		     ns % 1000000u / 1000u);
}

static char state_char(const struct thread *t, int64_t state)
{
	static const char chars[] = "RSDTtZXxKWP";
	unsigned int bit = state ? (unsigned int)__builtin_ffsll(state) : 0;

	if (t->tid == 0)
		return 'I';
	return bit < sizeof(chars) - 1 ? chars[bit] : '?';
}

static const char dots[] = "-------------------------------------------------------------------"
			   "-------------------------------------------------------------------";

static void header(struct th *h)
{
	struct tk_outbuf *out = h->out;
	uint32_t ncpus = h->max_cpu + 1, i;
	unsigned int f = h->o->flags;

	tk_an_printf(out, "%15s %6s ", "time", "cpu");
	if (f & TK_TIMEHIST_CPU_VISUAL) {
		tk_an_printf(out, " ");
		for (i = 0; i < ncpus; ++i)
			tk_an_printf(out, "%x", i % 16);
		tk_an_printf(out, " ");
	}
	tk_an_printf(out, " %-*s  %9s  %9s  %9s", h->comm_width, "task name", "wait time",
		     "sch delay", "run time");
	if (f & TK_TIMEHIST_STATE)
		tk_an_printf(out, "  %s", "state");
	tk_an_printf(out, "\n%15s %-6s ", "", "");
	if (f & TK_TIMEHIST_CPU_VISUAL)
		tk_an_printf(out, " %*s ", (int)ncpus, "");
	tk_an_printf(out, " %-*s  %9s  %9s  %9s", h->comm_width, "[tid/pid]", "(msec)", "(msec)",
		     "(msec)");
	if (f & TK_TIMEHIST_STATE)
		tk_an_printf(out, "  %5s", "");
	tk_an_printf(out, "\n%.15s %.6s ", dots, dots);
	if (f & TK_TIMEHIST_CPU_VISUAL)
		tk_an_printf(out, " %.*s ", (int)ncpus, dots);
	tk_an_printf(out, " %.*s  %.9s  %.9s  %.9s", h->comm_width, dots, dots, dots, dots);
	if (f & TK_TIMEHIST_STATE)
		tk_an_printf(out, "  %.5s", dots);
	tk_an_printf(out, "\n");
}

static void json_sep(struct th *h)
{
	tk_an_printf(h->out, "%s\n    ", h->first_json ? "" : ",");
	h->first_json = false;
}

static int keep_lat(struct th *h, const struct thread *t)
{
	if (h->nlat == h->latcap) {
		size_t cap = h->latcap ? h->latcap * 2 : 4096;

		for (int k = 0; k < 3; k++) {
			uint64_t *v = realloc(h->lat[k], cap * sizeof(*v));

			if (!v)
				return tk_fail(ENOMEM, "out of memory");
			h->lat[k] = v;
		}
		h->latcap = cap;
	}
	h->lat[0][h->nlat] = t->dt_sleep + t->dt_iowait + t->dt_preempt;
	h->lat[1][h->nlat] = t->dt_delay;
	h->lat[2][h->nlat] = t->dt_run;
	h->nlat++;
	return 0;
}

/* Decimal digits of @v at @p; returns how many. */
/* "00" to "99": two digits per division (half the divisions of one at a time). */
static const char dig2[201] =
	"0001020304050607080910111213141516171819202122232425262728293031323334"
	"3536373839404142434445464748495051525354555657585960616263646566676869"
	"707172737475767778798081828384858687888990919293949596979899";

/* The decimal digits of @v, written backwards to end just before @e; returns their start. */
static inline char *dec_back(char *e, uint64_t v)
{
	while (v >= 100) {
		uint64_t q = v / 100;

		e -= 2;
		memcpy(e, dig2 + 2 * (v - q * 100), 2);
		v = q;
	}
	if (v >= 10) {
		e -= 2;
		memcpy(e, dig2 + 2 * v, 2);
	} else {
		*--e = (char)('0' + v);
	}
	return e;
}

/* @v right-aligned in @width (at most 20), padded with @pad. */
static size_t put_dec_w(char *p, uint64_t v, size_t width, char pad)
{
	char tmp[24], *s = dec_back(tmp + sizeof(tmp), v);
	size_t n = (size_t)(tmp + sizeof(tmp) - s), k = n < width ? width - n : 0;

	memset(p, pad, k);
	memcpy(p + k, s, n);
	return n + k;
}

/* print_sched_time(): "%*lu.%03lu " of msecs and usecs. */
static inline __attribute__((always_inline)) size_t put_msec(char *p, uint64_t ns, size_t width)
{
	uint64_t ms = ns / 1000000u;
	uint32_t us = (uint32_t)(ns % 1000000u / 1000u);
	size_t n;

	if (ms < 10 && width) {
		/* Most intervals are under 10 ms: one digit behind the padding. */
		memset(p, ' ', width - 1);
		p[width - 1] = (char)('0' + ms);
		n = width;
	} else {
		n = put_dec_w(p, ms, width, ' ');
	}
	p[n] = '.';
	p[n + 1] = (char)('0' + us / 100);
	memcpy(p + n + 2, dig2 + 2 * (us % 100), 2);
	p[n + 4] = ' ';
	return n + 5;
}

/* The longest line fast_line() makes (the task-name column stops at 200). */
#define FAST_LINE_MAX 512

/*
 * The switch line without printf (most of the command's time on big
 * files went to vsnprintf): the same bytes as the slow path below.
 */
static int fast_line(struct th *h, const struct tk_feed_rec *r, struct thread *t, uint64_t ts,
		     int64_t state, uint64_t wait)
{
	struct tk_outbuf *out = h->out;
	unsigned int f = h->o->flags;
	char local[FAST_LINE_MAX], tmp[48];
	/* Straight into the output buffer when the longest line fits (no copy). */
	bool direct = out->cap - out->len >= FAST_LINE_MAX;
	char *buf = direct ? out->buf + out->len : local, *p = buf;
	size_t n;

	if (!t->cslen) {
		char cs[64];

		commstr(h, t, cs, sizeof(cs));
		n = strnlen(cs, sizeof(t->cs) - 1);
		memcpy(t->cs, cs, n);
		t->cslen = (uint8_t)(n ? n : 1);
		if (!n)
			t->cs[0] = 0;
	}
	/* "%15s [%04u] ": seconds, then the microseconds as three digit pairs. */
	{
		uint32_t us = (uint32_t)(ts / 1000u % 1000000u);
		char *e = tmp + sizeof(tmp), *b;

		/* Spaces first: the usual 15 columns then copy at a fixed size. */
		memset(tmp, ' ', sizeof(tmp));
		e -= 7;
		e[0] = '.';
		memcpy(e + 1, dig2 + 2 * (us / 10000), 2);
		memcpy(e + 3, dig2 + 2 * (us / 100 % 100), 2);
		memcpy(e + 5, dig2 + 2 * (us % 100), 2);
		b = dec_back(e, ts / 1000000000u);
		n = (size_t)(tmp + sizeof(tmp) - b);
		if (n <= 15) {
			memcpy(p, tmp + sizeof(tmp) - 15, 15);
			p += 15;
		} else {
			memcpy(p, b, n);
			p += n;
		}
	}
	*p++ = ' ';
	*p++ = '[';
	/* "%04u": the CPU is below MAX_CPUS (on_rec()), four digits. */
	p[0] = (char)('0' + r->cpu / 1000u);
	p[1] = (char)('0' + r->cpu / 100u % 10u);
	memcpy(p + 2, dig2 + 2 * (r->cpu % 100u), 2);
	p += 4;
	*p++ = ']';
	*p++ = ' ';
	/* " %-*s " */
	*p++ = ' ';
	/* Whole-array copies of fixed size (no libc call); p then moves by the text's length. */
	n = t->cs[0] ? t->cslen : 0;
	memcpy(p, t->cs, sizeof(t->cs));
	p += n;
	if (n < (size_t)h->comm_width) {
		size_t pad = (size_t)h->comm_width - n;
		size_t room = (size_t)(buf + 200 - p);

		if (pad > room)
			pad = room;
		if (pad <= 48)
			memset(p, ' ', 48);
		else
			memset(p, ' ', pad);
		p += pad;
	}
	*p++ = ' ';
	p += put_msec(p, wait, 6);
	p += put_msec(p, t->dt_delay, 6);
	p += put_msec(p, t->dt_run, 6);
	if (f & TK_TIMEHIST_STATE) {
		memcpy(p, "      ", 5);
		p += 5;
		*p++ = state_char(t, state);
		*p++ = ' ';
	}
	if (f & TK_TIMEHIST_WAKEUPS) {
		*p++ = ' ';
		*p++ = ' ';
		for (int k = 0; k < h->comm_width && p < buf + 480; k++)
			*p++ = ' ';
	}
	*p++ = '\n';
	if (direct)
		out->len += (size_t)(p - buf);
	else
		tk_outbuf_write(out, buf, (size_t)(p - buf));
	return out->error;
}

static int print_switch(struct th *h, const struct tk_feed_rec *r, struct thread *t, uint64_t ts,
			int64_t state)
{
	struct tk_outbuf *out = h->out;
	unsigned int f = h->o->flags;
	char tstr[32], cs[64];
	uint64_t wait = t->dt_sleep + t->dt_iowait + t->dt_preempt;

	if (!cpu_shown(h, r->cpu))
		return 0;
	if (f & (TK_TIMEHIST_PERCENTILES | TK_TIMEHIST_HIST)) {
		int ret = keep_lat(h, t);

		if (ret)
			return ret;
	}
	if (f & TK_TIMEHIST_SUMMARY_ONLY)
		return 0;
	if (!(f & (TK_TIMEHIST_CPU_VISUAL | TK_TIMEHIST_JSON)))
		return fast_line(h, r, t, ts, state, wait);
	commstr(h, t, cs, sizeof(cs));
	if (f & TK_TIMEHIST_JSON) {
		json_sep(h);
		tk_an_printf(out,
			     "{\"type\": \"switch\", \"time_ns\": %" PRIu64 ", \"cpu\": %" PRIu32
			     ", \"comm\": ",
			     ts, r->cpu);
		tk_an_json_str(out, t->comm);
		tk_an_printf(out,
			     ", \"tid\": %d, \"pid\": %d, \"wait_ns\": %" PRIu64
			     ", \"delay_ns\": %" PRIu64 ", \"run_ns\": %" PRIu64
			     ", \"state\": \"%c\"}",
			     t->tid, t->pid, wait, t->dt_delay, t->dt_run, state_char(t, state));
		return out->error;
	}
	time_str(tstr, sizeof(tstr), ts);
	tk_an_printf(out, "%15s [%04" PRIu32 "] ", tstr, r->cpu);
	if (f & TK_TIMEHIST_CPU_VISUAL) {
		tk_an_printf(out, " ");
		for (uint32_t i = 0; i < h->max_cpu + 1; ++i)
			tk_an_printf(out, "%c", i == r->cpu ? (t->tid == 0 ? 'i' : 's') : ' ');
		tk_an_printf(out, " ");
	}
	tk_an_printf(out, " %-*s ", h->comm_width, cs);
	sched_time(out, wait, 6);
	sched_time(out, t->dt_delay, 6);
	sched_time(out, t->dt_run, 6);
	if (f & TK_TIMEHIST_STATE)
		tk_an_printf(out, " %5c ", state_char(t, state));
	if (f & TK_TIMEHIST_WAKEUPS)
		tk_an_printf(out, "  %-*s", h->comm_width, "");
	tk_an_printf(out, "\n");
	return out->error;
}

/* ---------------------------------------------------------------- events */

static void update_runtime(struct thread *t, uint64_t ts, uint64_t tprev)
{
	t->dt_delay = t->dt_sleep = t->dt_iowait = t->dt_preempt = t->dt_run = 0;
	if (tprev) {
		t->dt_run = ts - tprev;
		if (t->ready_to_run && t->ready_to_run <= tprev)
			t->dt_delay = tprev - t->ready_to_run;
		if (t->last_time && t->last_time <= tprev) {
			uint64_t w = tprev - t->last_time;

			if (t->last_state == 0)
				t->dt_preempt = w;
			else if (t->last_state == 2)
				t->dt_iowait = w;
			else
				t->dt_sleep = w;
		}
	}
	tk_an_stats_add(&t->run, t->dt_run);
	t->total_run += t->dt_run;
	t->total_delay += t->dt_delay;
	t->total_sleep += t->dt_sleep;
	t->total_iowait += t->dt_iowait;
	t->total_preempt += t->dt_preempt;
}

static int on_switch(struct th *h, const struct tk_feed_rec *r)
{
	int64_t state = (int64_t)r->val[1];
	struct thread *t;
	uint64_t tprev;
	int ret = 0;

	if ((int32_t)r->val[0] == 0)
		t = idle_thread(h, r->cpu);
	else
		t = findnew(h, r->pid, r->tid ? r->tid : r->pid);
	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	if (filtered(h, t)) {
		h->skipped++;
		t = NULL;
	} else {
		tprev = h->last_switch[r->cpu];
		if (cpu_shown(h, r->cpu))
			update_runtime(t, r->time, tprev);
		ret = print_switch(h, r, t, r->time, state);
	}
	if (!h->hist_start)
		h->hist_start = r->time;
	h->hist_end = r->time;
	if (t) {
		t->last_time = r->time;
		t->last_state = (int32_t)state;
		t->ready_to_run = 0;
	}
	h->last_switch[r->cpu] = r->time;
	return ret;
}

static int print_side(struct th *h, const struct tk_feed_rec *r, struct thread *target,
		      const char *what, char visual)
{
	struct tk_outbuf *out = h->out;
	struct thread *t = findnew(h, r->pid, r->tid);
	char tstr[32], cs[64], cs2[64];

	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	if (filtered(h, t) && filtered(h, target)) {
		h->skipped += 2;
		return 0;
	}
	if (filtered(h, t) || filtered(h, target))
		h->skipped++;
	commstr(h, t, cs, sizeof(cs));
	commstr(h, target, cs2, sizeof(cs2));
	if (h->o->flags & TK_TIMEHIST_JSON) {
		json_sep(h);
		tk_an_printf(out,
			     "{\"type\": \"%s\", \"time_ns\": %" PRIu64 ", \"cpu\": %" PRIu32
			     ", \"comm\": ",
			     what, r->time, r->cpu);
		tk_an_json_str(out, t->comm);
		tk_an_printf(out, ", \"tid\": %d, \"pid\": %d, \"target_comm\": ", t->tid, t->pid);
		tk_an_json_str(out, target->comm);
		tk_an_printf(out, ", \"target_tid\": %d, \"target_pid\": %d", target->tid,
			     target->pid);
		if (visual == 'm')
			tk_an_printf(out, ", \"orig_cpu\": %" PRIu64 ", \"dest_cpu\": %" PRIu64,
				     r->val[1], r->val[2]);
		tk_an_printf(out, "}");
		return out->error;
	}
	time_str(tstr, sizeof(tstr), r->time);
	tk_an_printf(out, "%15s [%04" PRIu32 "] ", tstr, r->cpu);
	if (h->o->flags & TK_TIMEHIST_CPU_VISUAL) {
		if (visual == 'm') {
			tk_an_printf(out, "  ");
			for (uint32_t i = 0; i < h->max_cpu + 1; ++i)
				tk_an_printf(out, "%c", i == r->cpu ? 'm' : ' ');
			tk_an_printf(out, "  ");
		} else {
			tk_an_printf(out, " %*s ", (int)(h->max_cpu + 1), "");
		}
	}
	tk_an_printf(out, " %-*s ", h->comm_width, cs);
	tk_an_printf(out, "  %9s  %9s  %9s ", "", "", "");
	if (visual == 'm')
		tk_an_printf(out, "migrated: %s cpu %" PRIu64 " => %" PRIu64 "\n", cs2, r->val[1],
			     r->val[2]);
	else
		tk_an_printf(out, "awakened: %s\n", cs2);
	return out->error;
}

static int on_wakeup(struct th *h, const struct tk_feed_rec *r)
{
	struct thread *t;

	/* perf takes sched_waking when the file has it, and then ignores sched_wakeup. */
	if (r->want == W_WAKEUP && (h->st->present & (1u << W_WAKING)))
		return 0;
	t = findnew(h, 0, (int32_t)r->val[0]);
	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	if (!t->ready_to_run)
		t->ready_to_run = r->time;
	if ((h->o->flags & TK_TIMEHIST_WAKEUPS) && !(h->o->flags & TK_TIMEHIST_SUMMARY_ONLY))
		return print_side(h, r, t, "wakeup", 'w');
	return 0;
}

static int on_migrate(struct th *h, const struct tk_feed_rec *r)
{
	struct thread *t;

	if (!(h->o->flags & TK_TIMEHIST_MIGRATIONS))
		return 0;
	t = findnew(h, 0, (int32_t)r->val[0]);
	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	t->migrations++;
	if (h->o->flags & TK_TIMEHIST_SUMMARY_ONLY)
		return 0;
	return print_side(h, r, t, "migration", 'm');
}

static int on_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct th *h = ctx;
	struct thread *t, *parent;

	switch (r->kind) {
	case TK_FEED_COMM:
		t = findnew(h, r->pid, r->tid);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		memcpy(t->comm, r->comm, sizeof(t->comm));
		t->comm[sizeof(t->comm) - 1] = 0;
		t->comm_set = true;
		t->cslen = 0;
		return 0;
	case TK_FEED_FORK:
		parent = findnew(h, (int32_t)r->val[0], (int32_t)r->val[1]);
		if (!parent)
			return tk_fail(ENOMEM, "out of memory");
		/* A parent met under another pid is a stale thread: perf starts afresh. */
		if (parent->pid != (int32_t)r->val[0]) {
			parent = thread_new(h, (int32_t)r->val[0], (int32_t)r->val[1]);
			if (!parent)
				return tk_fail(ENOMEM, "out of memory");
		}
		t = thread_new(h, r->pid, r->tid);
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		if (parent->comm_set) {
			memcpy(t->comm, parent->comm, sizeof(t->comm));
			t->comm_set = true;
		}
		t->ppid = parent->tid;
		return 0;
	case TK_FEED_EXIT:
		t = thread_find(h, r->tid);
		if (t)
			t->exited = true;
		return 0;
	}
	if (r->cpu >= MAX_CPUS)
		return tk_fail(EBADMSG, "sched event on cpu %" PRIu32 ": more than %d CPUs", r->cpu,
			       MAX_CPUS);
	if (r->cpu > h->max_cpu)
		h->max_cpu = r->cpu;
	switch (r->want) {
	case W_SWITCH:
		return on_switch(h, r);
	case W_WAKEUP:
	case W_WAKING:
	case W_WAKEUP_NEW:
		return on_wakeup(h, r);
	case W_MIGRATE:
		return on_migrate(h, r);
	}
	return 0;
}

/* ---------------------------------------------------------------- summary */

static int bucket_cmp(const void *a, const void *b)
{
	const struct thread *x = *(struct thread *const *)a, *y = *(struct thread *const *)b;
	uint32_t bx = (uint32_t)x->tid % 256, by = (uint32_t)y->tid % 256;

	if (bx != by)
		return bx < by ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void summary_line(struct th *h, const struct thread *t)
{
	struct tk_outbuf *out = h->out;
	char cs[64];

	commstr(h, t, cs, sizeof(cs));
	if (h->o->flags & TK_TIMEHIST_JSON) {
		json_sep(h);
		tk_an_printf(out, "{\"comm\": ");
		tk_an_json_str(out, t->comm);
		tk_an_printf(out,
			     ", \"tid\": %d, \"pid\": %d, \"ppid\": %d, \"exited\": %s, "
			     "\"switches\": %" PRIu64 ", \"run_ns\": %" PRIu64
			     ", \"min_run_ns\": %" PRIu64 ", \"avg_run_ns\": %" PRIu64
			     ", \"max_run_ns\": %" PRIu64
			     ", \"stddev_pct\": %.2f, \"migrations\": %" PRIu64
			     ", \"sleep_ns\": %" PRIu64 ", \"iowait_ns\": %" PRIu64
			     ", \"preempt_ns\": %" PRIu64 ", \"delay_ns\": %" PRIu64 "}",
			     t->tid, t->pid, t->ppid, t->exited ? "true" : "false",
			     (uint64_t)t->run.n, t->total_run, t->run.min, (uint64_t)t->run.mean,
			     t->run.max, (float)tk_an_stats_rel_stddev(&t->run), t->migrations,
			     t->total_sleep, t->total_iowait, t->total_preempt, t->total_delay);
		return;
	}
	tk_an_printf(out, "%*s   %5d  %9" PRIu64 " ", h->comm_width, cs, t->ppid,
		     (uint64_t)t->run.n);
	sched_time(out, t->total_run, 8);
	if (h->o->flags & TK_TIMEHIST_STATE) {
		sched_time(out, t->total_sleep, 6);
		tk_an_printf(out, " ");
		sched_time(out, t->total_iowait, 6);
		tk_an_printf(out, " ");
		sched_time(out, t->total_preempt, 6);
		tk_an_printf(out, " ");
		sched_time(out, t->total_delay, 6);
		tk_an_printf(out, "\n");
		return;
	}
	sched_time(out, t->run.min, 6);
	tk_an_printf(out, " ");
	sched_time(out, (uint64_t)t->run.mean, 6);
	tk_an_printf(out, " ");
	sched_time(out, t->run.max, 6);
	tk_an_printf(out, "  %5.2f   %5" PRIu64 "\n", (float)tk_an_stats_rel_stddev(&t->run),
		     t->migrations);
}

static int summary(struct th *h)
{
	struct tk_outbuf *out = h->out;
	bool json = h->o->flags & TK_TIMEHIST_JSON, state = h->o->flags & TK_TIMEHIST_STATE;
	uint64_t tasks = 0, live = 0, scheds = 0, run = 0, hist = h->hist_end - h->hist_start;
	struct thread **v;
	size_t n = 0;

	v = malloc((h->nthreads + 1) * sizeof(*v));
	if (!v)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < h->nthreads; i++)
		if (!h->threads[i]->dead)
			v[n++] = h->threads[i];
	qsort(v, n, sizeof(*v), bucket_cmp);
	if (json) {
		tk_an_printf(out, "\n  ],\n  \"summary\": [");
		h->first_json = true;
	} else {
		tk_an_printf(out, "\n%s summary\n", state ? "Wait-time" : "Runtime");
		tk_an_printf(out, "%*s  parent   sched-in  ", h->comm_width, "comm");
		if (state)
			tk_an_printf(
				out,
				"   run-time      sleep      iowait     preempt       delay\n");
		else
			tk_an_printf(out, "   run-time    min-run     avg-run     max-run  stddev  "
					  "migrations\n");
		tk_an_printf(out, "%*s            (count)  ", h->comm_width, "");
		tk_an_printf(out, "     (msec)     (msec)      (msec)      (msec)       %s\n",
			     state ? "(msec)" : "%");
		tk_an_printf(out, "%.117s\n", dots);
	}
	/* Live threads first, then those that exited, each in perf's table order. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			struct thread *t = v[i];

			if (t->exited != (pass == 1) || filtered(h, t) || !t->run.n)
				continue;
			tasks++;
			scheds += (uint64_t)t->run.n;
			run += t->total_run;
			summary_line(h, t);
		}
		if (pass == 0 && !json) {
			if (!tasks)
				tk_an_printf(out, "<no still running tasks>\n");
			tk_an_printf(out, "\nTerminated tasks:\n");
			live = tasks;
		}
	}
	if (!json && tasks == live)
		tk_an_printf(out, "<no terminated tasks>\n");
	free(v);
	if (json) {
		tk_an_printf(out, "\n  ],\n  \"idle\": [");
		h->first_json = true;
	}
	/* perf leaves out the idle figures when a filter skipped samples. */
	if (h->skipped)
		goto totals;
	if (!json)
		tk_an_printf(out, "\nIdle stats:\n");
	for (uint32_t i = 0; i < h->idle_max && i < MAX_CPUS; ++i) {
		struct thread *t = h->idle[i];

		if (!cpu_shown(h, i) || !t)
			continue;
		if (t->run.n)
			scheds += (uint64_t)t->run.n;
		if (json) {
			json_sep(h);
			tk_an_printf(out, "{\"cpu\": %" PRIu32 ", \"idle_ns\": %" PRIu64 "}", i,
				     t->total_run);
		} else if (t->run.n) {
			tk_an_printf(out, "    CPU %2" PRIu32 " idle for ", i);
			sched_time(out, t->total_run, 6);
			tk_an_printf(out, " msec  (%6.2f%%)\n",
				     100.0 * (double)t->total_run / (double)hist);
		} else {
			tk_an_printf(out, "    CPU %2" PRIu32 " idle entire time window\n", i);
		}
	}
totals:
	if (json) {
		tk_an_printf(out,
			     "\n  ],\n  \"tasks\": %" PRIu64 ", \"switches\": %" PRIu64
			     ", \"run_ns\": %" PRIu64 ", \"span_ns\": %" PRIu64
			     ", \"cpus\": %" PRIu32,
			     tasks, scheds, run, hist, h->max_cpu);
		return 0;
	}
	if (h->skipped)
		return 0;
	tk_an_printf(out,
		     "\n    Total number of unique tasks: %" PRIu64
		     "\nTotal number of context switches: %" PRIu64 "\n",
		     tasks, scheds);
	tk_an_printf(out, "           Total run time (msec): ");
	sched_time(out, run, 2);
	tk_an_printf(out, "\n    Total scheduling time (msec): ");
	sched_time(out, hist, 2);
	tk_an_printf(out, " (x %" PRIu32 ")\n", h->max_cpu);
	return 0;
}

/* ------------------------------------------------------- percentiles, hist */

static void print_dists(struct th *h)
{
	static const char *const names[3] = {"wait time", "sch delay", "run time"};
	static const char *const keys[3] = {"wait", "delay", "run"};
	struct tk_outbuf *out = h->out;
	unsigned int f = h->o->flags;
	bool json = f & TK_TIMEHIST_JSON;
	size_t n = h->nlat;

	if (json)
		tk_an_printf(out, ",\n  \"distributions\": {");
	else
		tk_an_printf(out, "\nDistributions over %zu switches\n", n);
	for (int k = 0; k < 3; k++) {
		uint64_t *v = h->lat[k], hist[65] = {0};

		if (n)
			qsort(v, n, sizeof(*v), tk_an_u64_cmp);
		for (size_t i = 0; i < n; i++)
			hist[v[i] ? 64 - __builtin_clzll(v[i]) : 0]++;
		if (json) {
			bool any = false;

			tk_an_printf(out, "%s\n    \"%s\": {\"count\": %zu", k ? "," : "", keys[k],
				     n);
			if (n && (f & TK_TIMEHIST_PERCENTILES))
				tk_an_printf(out,
					     ", \"percentiles_ns\": {\"p50\": %" PRIu64
					     ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
					     ", \"p99.9\": %" PRIu64 ", \"max\": %" PRIu64 "}",
					     tk_an_percentile(v, n, 50), tk_an_percentile(v, n, 90),
					     tk_an_percentile(v, n, 99),
					     tk_an_percentile(v, n, 99.9), v[n - 1]);
			if (f & TK_TIMEHIST_HIST) {
				tk_an_printf(out, ", \"log2_hist\": [");
				for (int b = 0; b < 65; b++) {
					if (!hist[b])
						continue;
					tk_an_printf(out,
						     "%s{\"lo_ns\": %" PRIu64
						     ", \"count\": %" PRIu64 "}",
						     any ? ", " : "",
						     b ? (uint64_t)1 << (b - 1) : 0, hist[b]);
					any = true;
				}
				tk_an_printf(out, "]");
			}
			tk_an_printf(out, "}");
			continue;
		}
		if (!n)
			continue;
		if (f & TK_TIMEHIST_PERCENTILES)
			tk_an_printf(out,
				     "  %-9s ms: p50 %.3f | p90 %.3f | p99 %.3f | p99.9 %.3f | max "
				     "%.3f\n",
				     names[k], tk_an_percentile(v, n, 50) / 1e6,
				     tk_an_percentile(v, n, 90) / 1e6,
				     tk_an_percentile(v, n, 99) / 1e6,
				     tk_an_percentile(v, n, 99.9) / 1e6, v[n - 1] / 1e6);
		if (!(f & TK_TIMEHIST_HIST))
			continue;
		if (!(f & TK_TIMEHIST_PERCENTILES))
			tk_an_printf(out, "  %s:\n", names[k]);
		tk_an_print_log2_hist(out, hist, "    ", 10);
	}
	if (json)
		tk_an_printf(out, "\n  }");
}

/*
 * perf sizes the CPU columns and the idle table from the file's online CPU
 * count (4 when unknown) and prints the header before reading any event.
 * The feed has read that count when it hands out the first record.
 */
static int start(struct th *h)
{
	h->started = true;
	h->max_cpu = h->st->nr_cpus_online ? h->st->nr_cpus_online : 4;
	if (h->max_cpu >= MAX_CPUS)
		h->max_cpu = MAX_CPUS - 1;
	for (uint32_t i = 0; i < h->max_cpu; i++)
		if (!idle_thread(h, i))
			return tk_fail(ENOMEM, "out of memory");
	h->idle_max = h->max_cpu;
	if (h->o->flags & TK_TIMEHIST_JSON)
		tk_an_printf(h->out, "{\n  \"events\": [");
	else if (!(h->o->flags & TK_TIMEHIST_SUMMARY_ONLY))
		header(h);
	return h->out->error;
}

static int on_rec_first(void *ctx, const struct tk_feed_rec *r)
{
	struct th *h = ctx;

	if (!h->started) {
		int ret = start(h);

		if (ret)
			return ret;
	}
	return on_rec(h, r);
}

int tk_sched_timehist_run(const char *path, const struct tk_timehist_opts *opts)
{
	struct tk_feed_stats st;
	struct tk_outbuf out;
	unsigned int f = opts->flags;
	struct th *h;
	int ret, fr;

	h = calloc(1, sizeof(*h));
	if (!h)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_outbuf_init(&out, opts->fd, 0)) {
		free(h);
		return tk_fail(ENOMEM, "out of memory");
	}
	h->o = opts;
	h->st = &st;
	h->out = &out;
	h->comm_width = 30;
	h->first_json = true;
	ret = tk_feed_run(path, wants, sizeof(wants) / sizeof(wants[0]), TK_FEED_SIDEBAND,
			  on_rec_first, h, &st);
	if (ret == 0 && !(st.present & (1u << W_SWITCH)))
		ret = tk_fail(ENOENT,
			      "%s: no sched:sched_switch events (record with 'perf sched "
			      "record' or 'tracekit record -e sched')",
			      path);
	if (ret == 0 && !h->started)
		ret = start(h);
	if (ret == 0) {
		if (f & TK_TIMEHIST_JSON) {
			if (f & (TK_TIMEHIST_SUMMARY | TK_TIMEHIST_SUMMARY_ONLY))
				ret = summary(h);
			else
				tk_an_printf(&out, "\n  ]");
			if (ret == 0 && (f & (TK_TIMEHIST_PERCENTILES | TK_TIMEHIST_HIST)))
				print_dists(h);
			tk_an_printf(&out, "\n}\n");
		} else {
			if (f & (TK_TIMEHIST_SUMMARY | TK_TIMEHIST_SUMMARY_ONLY))
				ret = summary(h);
			if (ret == 0 && (f & (TK_TIMEHIST_PERCENTILES | TK_TIMEHIST_HIST)))
				print_dists(h);
		}
	}
	fr = tk_outbuf_flush(&out);
	if (!ret && fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
	for (size_t i = 0; i < h->nthreads; i++)
		free(h->threads[i]);
	for (size_t i = 0; i < MAX_CPUS; i++)
		free(h->idle[i]);
	for (int k = 0; k < 3; k++)
		free(h->lat[k]);
	free(h->threads);
	free(h->slot_tid);
	free(h->slot_idx);
	free(h->direct);
	free(h);
	return ret;
}
