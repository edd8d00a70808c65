// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * wakeup: `trace-cmd report -w` (trace-cmd 3.1.6), as a line hook of the
 * report printer.
 *
 * trace-cmd times, for every printed sched_switch, the wake-up latency of
 * the task switched in: from its last sched_wakeup or sched_wakeup_new
 * (one with a "success" field of 0 does not count; a second wake-up
 * before the switch replaces the first) to the switch, appended to the
 * line as " Latency: U.UUU usecs". At the end: the average, largest and
 * smallest latency and when the largest and smallest ended, then the same
 * for real-time tasks (next_prio below 100) when there were some. Only
 * printed records count (trace-cmd runs this after its filters).
 * Pending wake-ups are keyed as trace-cmd keys them: by its 32-bit hash of
 * the pid.
 *
 * Ours: the latencies kept for --percentiles and --hist (p50..max and a
 * log2 histogram after trace-cmd's summary).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/analyze.h>
#include <tracekit/event.h>
#include <tracekit/outbuf.h>

#include "analyze-util.h"
#include "internal/error.h"

struct pending {
	uint32_t key;
	bool used;
	uint64_t start;
};

struct tk_wakeup {
	unsigned int flags;
	const struct tk_event_set *set; /* the set the ids below belong to */
	uint8_t seen[65536 / 8];	/* event ids already looked at */
	int wakeup_id, wakeup_new_id, switch_id;
	const struct tk_event_field *wk_pid, *wk_success, *wn_pid, *wn_success, *sw_pid, *sw_prio;
	struct pending *tab;
	size_t ntab, cap; /* open addressing, cap a power of two */
	uint64_t total, count, max, max_time, min, min_time;
	uint64_t rt_total, rt_count, rt_max, rt_max_time, rt_min, rt_min_time;
	uint64_t *lat;
	size_t nlat, latcap;
	int error;
};

static unsigned int trace_hash(unsigned int val)
{
	/* trace-cmd's hash: wake-ups of pids with the same hash are one. */
	unsigned int hash = 12546869, tmp;

	hash += (val & 0xffff);
	tmp = (val >> 16) ^ hash;
	hash = (hash << 16) ^ tmp;
	hash += hash >> 11;
	hash ^= hash << 3;
	hash += hash >> 5;
	hash ^= hash << 4;
	hash += hash >> 17;
	hash ^= hash << 25;
	hash += hash >> 6;
	return hash;
}

struct tk_wakeup *tk_wakeup_new(unsigned int flags)
{
	struct tk_wakeup *w = calloc(1, sizeof(*w));

	if (!w)
		return tk_fail_null(ENOMEM, "out of memory");
	w->flags = flags;
	w->min = w->rt_min = UINT64_MAX;
	w->wakeup_id = w->wakeup_new_id = w->switch_id = -1;
	return w;
}

void tk_wakeup_free(struct tk_wakeup *w)
{
	if (!w)
		return;
	free(w->tab);
	free(w->lat);
	free(w);
}

/*
 * The report loads event formats as records need them, so events are
 * recognised by name as they are printed: a file without sched_wakeup
 * never has a pending wake-up, which is what trace-cmd's "no -w without
 * sched_wakeup and sched_switch" amounts to.
 */
static void learn(struct tk_wakeup *w, const struct tk_event *ev)
{
	const char *sys = tk_event_system(ev), *name = tk_event_name(ev);
	int id = tk_event_id(ev);

	if (!sys || !name || strcmp(sys, "sched"))
		return;
	if (!strcmp(name, "sched_wakeup")) {
		w->wakeup_id = id;
		w->wk_pid = tk_event_field_find(ev, "pid");
		w->wk_success = tk_event_field_find(ev, "success");
	} else if (!strcmp(name, "sched_wakeup_new")) {
		w->wakeup_new_id = id;
		w->wn_pid = tk_event_field_find(ev, "pid");
		w->wn_success = tk_event_field_find(ev, "success");
	} else if (!strcmp(name, "sched_switch")) {
		w->switch_id = id;
		w->sw_pid = tk_event_field_find(ev, "next_pid");
		w->sw_prio = tk_event_field_find(ev, "next_prio");
	}
}

/* libtraceevent's tep_read_number_field(): unsigned, 1/2/4/8 bytes. */
static bool read_num(const struct tk_event_set *set, const struct tk_event_field *f,
		     const void *data, uint32_t size, uint64_t *v)
{
	uint64_t x;

	if (!f || tk_event_field_read(set, f, data, size, &x))
		return false;
	if (f->size < 8)
		x &= (1ull << (f->size * 8)) - 1;
	*v = x;
	return true;
}

static struct pending *slot(struct tk_wakeup *w, uint32_t key, bool create)
{
	size_t h;

	if (create && (w->ntab + 1) * 2 > w->cap) {
		size_t n = w->cap ? w->cap * 2 : 1024;
		struct pending *t = calloc(n, sizeof(*t));

		if (!t) {
			w->error = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < w->cap; i++) {
			if (!w->tab[i].used)
				continue;
			h = (w->tab[i].key * 2654435761u) & (n - 1);
			while (t[h].used)
				h = (h + 1) & (n - 1);
			t[h] = w->tab[i];
		}
		free(w->tab);
		w->tab = t;
		w->cap = n;
	}
	if (!w->cap)
		return NULL;
	h = (key * 2654435761u) & (w->cap - 1);
	while (w->tab[h].used) {
		if (w->tab[h].key == key)
			return &w->tab[h];
		h = (h + 1) & (w->cap - 1);
	}
	if (!create)
		return NULL;
	w->tab[h].used = true;
	w->tab[h].key = key;
	w->ntab++;
	return &w->tab[h];
}

/* Remove @p, keeping the probe chains whole (backward-shift deletion). */
static void unslot(struct tk_wakeup *w, struct pending *p)
{
	size_t i = (size_t)(p - w->tab), j = i;

	w->tab[i].used = false;
	w->ntab--;
	for (;;) {
		size_t k;

		j = (j + 1) & (w->cap - 1);
		if (!w->tab[j].used)
			return;
		k = (w->tab[j].key * 2654435761u) & (w->cap - 1);
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		w->tab[i] = w->tab[j];
		w->tab[j].used = false;
		i = j;
	}
}

void tk_wakeup_line(void *ctx, const struct tk_event_set *set, const struct tk_event *ev,
		    const void *data, uint32_t size, uint64_t ts, struct tk_outbuf *out)
{
	struct tk_wakeup *w = ctx;
	uint64_t v, prio, cal;
	struct pending *p;
	char buf[64];
	int id, n;
	bool rt;

	if (!ev)
		return;
	if (set != w->set) {
		w->set = set;
		w->wakeup_id = w->wakeup_new_id = w->switch_id = -1;
		memset(w->seen, 0, sizeof(w->seen));
	}
	id = tk_event_id(ev);
	if (id >= 0 && id < (int)(sizeof(w->seen) * 8) && !(w->seen[id / 8] & (1u << (id % 8)))) {
		w->seen[id / 8] |= (uint8_t)(1u << (id % 8));
		learn(w, ev);
	}
	if (id == w->wakeup_id || id == w->wakeup_new_id) {
		bool isnew = id != w->wakeup_id;

		if (read_num(set, isnew ? w->wn_success : w->wk_success, data, size, &v) && !v)
			return;
		if (!read_num(set, isnew ? w->wn_pid : w->wk_pid, data, size, &v))
			return;
		p = slot(w, trace_hash((unsigned int)v), true);
		if (p)
			p->start = ts;
		return;
	}
	if (id != w->switch_id)
		return;
	if (!read_num(set, w->sw_prio, data, size, &prio) ||
	    !read_num(set, w->sw_pid, data, size, &v))
		return;
	rt = prio <= 99;
	p = slot(w, trace_hash((unsigned int)v), false);
	if (!p)
		return;
	cal = ts - p->start;
	if (cal > w->max) {
		w->max = cal;
		w->max_time = ts;
	}
	if (cal < w->min) {
		w->min = cal;
		w->min_time = ts;
	}
	if (rt) {
		if (cal > w->rt_max) {
			w->rt_max = cal;
			w->rt_max_time = ts;
		}
		if (cal < w->rt_min) {
			w->rt_min = cal;
			w->rt_min_time = ts;
		}
		w->rt_total += cal;
		w->rt_count++;
	}
	/* " Latency: %llu.%03llu usecs" without snprintf (a fifth of report -w's time). */
	{
		char *e = buf + sizeof(buf) - 10, *b;
		uint64_t us = cal / 1000;
		unsigned int frac = (unsigned int)(cal % 1000);

		memcpy(e, ".", 1);
		e[1] = (char)('0' + frac / 100);
		e[2] = (char)('0' + frac / 10 % 10);
		e[3] = (char)('0' + frac % 10);
		memcpy(e + 4, " usecs", 6);
		b = e;
		do {
			*--b = (char)('0' + us % 10);
			us /= 10;
		} while (us);
		b -= 10;
		memcpy(b, " Latency: ", 10);
		n = (int)(buf + sizeof(buf) - b);
		tk_outbuf_write(out, b, (size_t)n);
	}
	w->total += cal;
	w->count++;
	unslot(w, p);
	if (w->flags & (TK_WAKEUP_PERCENTILES | TK_WAKEUP_HIST)) {
		if (w->nlat == w->latcap) {
			size_t cap = w->latcap ? w->latcap * 2 : 4096;
			uint64_t *l = realloc(w->lat, cap * sizeof(*l));

			if (!l) {
				w->error = -ENOMEM;
				return;
			}
			w->lat = l;
			w->latcap = cap;
		}
		w->lat[w->nlat++] = cal;
	}
}

static void timings(struct tk_outbuf *out, uint64_t total, uint64_t count, uint64_t max,
		    uint64_t max_time, uint64_t min, uint64_t min_time)
{
	total /= count;
	tk_an_printf(out, "\nAverage wakeup latency: %" PRIu64 ".%03" PRIu64 " usecs\n",
		     total / 1000, total % 1000);
	tk_an_printf(out, "Maximum Latency: %" PRIu64 ".%03" PRIu64 " usecs at ", max / 1000,
		     max % 1000);
	/* trace-cmd rounds the sub-second part only, as it prints it. */
	tk_an_printf(out, "timestamp: %" PRIu64 ".%06" PRIu64 "\n", max_time / 1000000000u,
		     ((max_time + 500) % 1000000000u) / 1000);
	tk_an_printf(out, "Minimum Latency: %" PRIu64 ".%03" PRIu64 " usecs at ", min / 1000,
		     min % 1000);
	tk_an_printf(out, "timestamp: %" PRIu64 ".%06" PRIu64 "\n\n", min_time / 1000000000u,
		     ((min_time + 500) % 1000000000u) / 1000);
}

static void json_timings(struct tk_outbuf *out, const char *name, uint64_t total, uint64_t count,
			 uint64_t max, uint64_t max_time, uint64_t min, uint64_t min_time)
{
	tk_an_printf(out,
		     "  \"%s\": {\"count\": %" PRIu64 ", \"avg_ns\": %" PRIu64
		     ", \"max_ns\": %" PRIu64 ", \"max_ts_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64
		     ", \"min_ts_ns\": %" PRIu64 "}",
		     name, count, count ? total / count : 0, max, max_time, count ? min : 0,
		     min_time);
}

/* The summary as one JSON document (report -w --json: no event lines). */
static int finish_json(struct tk_wakeup *w, int fd)
{
	struct tk_outbuf out;
	int ret = 0, fr;

	if (tk_outbuf_init(&out, fd, 0))
		return tk_fail(ENOMEM, "out of memory");
	tk_an_printf(&out, "{\n");
	json_timings(&out, "all", w->total, w->count, w->max, w->max_time, w->min, w->min_time);
	tk_an_printf(&out, ",\n");
	json_timings(&out, "rt", w->rt_total, w->rt_count, w->rt_max, w->rt_max_time, w->rt_min,
		     w->rt_min_time);
	if (w->nlat) {
		size_t n = w->nlat;

		qsort(w->lat, n, sizeof(*w->lat), tk_an_u64_cmp);
		if (w->flags & TK_WAKEUP_PERCENTILES)
			tk_an_printf(&out,
				     ",\n  \"percentiles_ns\": {\"p50\": %" PRIu64
				     ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
				     ", \"p99.9\": %" PRIu64 ", \"max\": %" PRIu64 "}",
				     tk_an_percentile(w->lat, n, 50),
				     tk_an_percentile(w->lat, n, 90),
				     tk_an_percentile(w->lat, n, 99),
				     tk_an_percentile(w->lat, n, 99.9), w->lat[n - 1]);
		if (w->flags & TK_WAKEUP_HIST) {
			uint64_t hist[65] = {0};
			bool any = false;

			tk_an_log2_hist(w->lat, n, hist);
			tk_an_printf(&out, ",\n  \"log2_hist\": [");
			for (int b = 0; b < 65; b++) {
				if (!hist[b])
					continue;
				tk_an_printf(
					&out, "%s{\"lo_ns\": %" PRIu64 ", \"count\": %" PRIu64 "}",
					any ? ", " : "", b ? (uint64_t)1 << (b - 1) : 0, hist[b]);
				any = true;
			}
			tk_an_printf(&out, "]");
		}
	}
	tk_an_printf(&out, "\n}\n");
	fr = tk_outbuf_flush(&out);
	if (fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
	return ret;
}

int tk_wakeup_finish(struct tk_wakeup *w, int fd)
{
	struct tk_outbuf out;
	int ret = 0, fr;

	if (w->error)
		return tk_fail(-w->error, "out of memory");
	if (w->flags & TK_WAKEUP_JSON)
		return finish_json(w, fd);
	if (!w->count)
		return 0;
	if (tk_outbuf_init(&out, fd, 0))
		return tk_fail(ENOMEM, "out of memory");
	timings(&out, w->total, w->count, w->max, w->max_time, w->min, w->min_time);
	if (w->rt_count) {
		tk_an_printf(&out, "RT task timings:\n");
		timings(&out, w->rt_total, w->rt_count, w->rt_max, w->rt_max_time, w->rt_min,
			w->rt_min_time);
	}
	if (w->nlat) {
		uint64_t hist[65] = {0};
		size_t n = w->nlat;

		qsort(w->lat, n, sizeof(*w->lat), tk_an_u64_cmp);
		if (w->flags & TK_WAKEUP_PERCENTILES)
			tk_an_printf(&out,
				     "Wakeup latency usecs: p50 %.3f | p90 %.3f | p99 %.3f | p99.9 "
				     "%.3f | max %.3f\n",
				     tk_an_percentile(w->lat, n, 50) / 1e3,
				     tk_an_percentile(w->lat, n, 90) / 1e3,
				     tk_an_percentile(w->lat, n, 99) / 1e3,
				     tk_an_percentile(w->lat, n, 99.9) / 1e3, w->lat[n - 1] / 1e3);
		if (w->flags & TK_WAKEUP_HIST) {
			tk_an_log2_hist(w->lat, n, hist);
			tk_an_printf(&out, "Wakeup latency histogram:\n");
			tk_an_print_log2_hist(&out, hist, "  ", 10);
		}
	}
	fr = tk_outbuf_flush(&out);
	if (fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
	return ret;
}
