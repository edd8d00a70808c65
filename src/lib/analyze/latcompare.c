// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * latcompare: `sched latency --compare A B`, two captures side by side.
 *
 * Each file's table is computed as tk_sched_latency_run() computes it
 * (same sort keys, merging and -C), as lines of data
 * (tk_sched_latency_rows()); a task of A is matched with B's line of the
 * same name (and tid with -p). The lines come in A's order, then B's
 * tasks A lacks in B's order, each with the switches, average and largest
 * scheduling delay of both and the change of the average delay ("+12.5%",
 * "new" when only B has the task, "gone" when only A has it). Memory: the
 * two tables.
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
#include "sched-internal.h"
#include "internal/error.h"

int lat_rows_add(struct tk_lat_rows *rows, const char *comm, int32_t tid, uint32_t merged,
		 uint64_t runtime, uint64_t switches, uint64_t avg, uint64_t max)
{
	struct tk_lat_row *r;

	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? rows->cap * 2 : 64;
		struct tk_lat_row *v = realloc(rows->v, cap * sizeof(*v));

		if (!v)
			return tk_fail(ENOMEM, "out of memory");
		rows->v = v;
		rows->cap = cap;
	}
	r = &rows->v[rows->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	r->tid = tid;
	r->merged = merged;
	r->runtime = runtime;
	r->switches = switches;
	r->avg = avg;
	r->max = max;
	return 0;
}

static bool same_task(const struct tk_lat_row *a, const struct tk_lat_row *b)
{
	return !strcmp(a->comm, b->comm) && a->tid == b->tid;
}

static void change(char *buf, size_t len, const struct tk_lat_row *a, const struct tk_lat_row *b)
{
	if (!a)
		snprintf(buf, len, "new");
	else if (!b)
		snprintf(buf, len, "gone");
	else if (!a->avg)
		snprintf(buf, len, b->avg ? "+inf" : "=");
	else
		snprintf(buf, len, "%+.1f%%",
			 ((double)b->avg - (double)a->avg) / (double)a->avg * 100);
}

static void line(struct tk_outbuf *out, const struct tk_lat_row *a, const struct tk_lat_row *b,
		 bool json, bool first)
{
	const struct tk_lat_row *r = a ? a : b;
	char name[64], ch[32];
	int len;

	change(ch, sizeof(ch), a, b);
	if (json) {
		tk_an_printf(out, "%s\n    {\"comm\": ", first ? "" : ",");
		tk_an_json_str(out, r->comm);
		if (r->tid >= 0)
			tk_an_printf(out, ", \"tid\": %" PRId32, r->tid);
		tk_an_printf(
			out,
			", \"switches\": [%" PRIu64 ", %" PRIu64 "], \"avg_delay_ns\": [%" PRIu64
			", %" PRIu64 "], \"max_delay_ns\": [%" PRIu64 ", %" PRIu64
			"], \"runtime_ns\": [%" PRIu64 ", %" PRIu64 "], \"change\": \"%s\"}",
			a ? a->switches : 0, b ? b->switches : 0, a ? a->avg : 0, b ? b->avg : 0,
			a ? a->max : 0, b ? b->max : 0, a ? a->runtime : 0, b ? b->runtime : 0, ch);
		return;
	}
	if (r->tid < 0)
		len = snprintf(name, sizeof(name), "  %s:(%" PRIu32 ") ", r->comm, r->merged);
	else
		len = snprintf(name, sizeof(name), "  %s:%" PRId32 " ", r->comm, r->tid);
	tk_an_printf(out, "%s%*s", name, len < 24 ? 24 - len : 0, "");
	tk_an_printf(out, "|%9" PRIu64 " |%9" PRIu64 " |%10.3f |%10.3f |%10.3f |%10.3f | %9s\n",
		     a ? a->switches : 0, b ? b->switches : 0, a ? a->avg / 1e6 : 0.0,
		     b ? b->avg / 1e6 : 0.0, a ? a->max / 1e6 : 0.0, b ? b->max / 1e6 : 0.0, ch);
}

int tk_sched_latency_compare_run(const char *a, const char *b, const struct tk_sched_opts *opts)
{
	struct tk_lat_rows ra = {0}, rb = {0};
	struct tk_outbuf out;
	bool json = opts->flags & TK_SCHED_JSON, first = true;
	bool *used = NULL;
	int ret, fr;

	ret = tk_sched_latency_rows(a, opts, &ra);
	if (!ret)
		ret = tk_sched_latency_rows(b, opts, &rb);
	if (!ret) {
		used = calloc(rb.n + 1, sizeof(*used));
		if (!used)
			ret = tk_fail(ENOMEM, "out of memory");
	}
	if (ret)
		goto out;
	if (tk_outbuf_init(&out, opts->fd, 0)) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (json) {
		tk_an_printf(&out, "{\n  \"a\": ");
		tk_an_json_str(&out, a);
		tk_an_printf(&out, ",\n  \"b\": ");
		tk_an_json_str(&out, b);
		tk_an_printf(&out, ",\n  \"tasks\": [");
	} else {
		tk_an_printf(&out, "\n A: %s\n B: %s\n\n", a, b);
		tk_an_printf(&out,
			     "  Task                  | Switch A | Switch B | Avg ms A  | Avg ms B "
			     " | Max ms A  | Max ms B  | avg change\n");
		tk_an_printf(&out,
			     " -------------------------------------------------------------------"
			     "-----------------------------------------\n");
	}
	for (size_t i = 0; i < ra.n; i++) {
		const struct tk_lat_row *m = NULL;

		for (size_t j = 0; j < rb.n; j++) {
			if (!used[j] && same_task(&ra.v[i], &rb.v[j])) {
				m = &rb.v[j];
				used[j] = true;
				break;
			}
		}
		line(&out, &ra.v[i], m, json, first);
		first = false;
	}
	for (size_t j = 0; j < rb.n; j++) {
		if (used[j])
			continue;
		line(&out, NULL, &rb.v[j], json, first);
		first = false;
	}
	tk_an_printf(&out, json ? "\n  ]\n}\n" : "\n");
	fr = tk_outbuf_flush(&out);
	if (fr)
		ret = tk_fail(-fr, "write: %s", strerror(-fr));
	tk_outbuf_release(&out);
out:
	free(used);
	free(ra.v);
	free(rb.v);
	return ret;
}
