// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-fixed: a fixed-offset view of tracepoint samples.
 *
 * A SAMPLE record's fields follow its event's sample_type in a set order
 * (perf_event.h): IDENTIFIER, IP, TID (pid, tid), TIME, ADDR, ID,
 * STREAM_ID, CPU (cpu, res), PERIOD, READ, CALLCHAIN, RAW (u32 size, then
 * the payload), then the rest. When an event has neither READ nor
 * CALLCHAIN, every field up to RAW sits at an offset that depends on the
 * sample_type alone: computed once per event here, then each record costs
 * a few loads and one bounds check. That is what perf sched record and
 * tracekit convert write, and what the analyses read by the million;
 * tk_perfdata_parse_sample() stays the general decoder (and the one whose
 * messages name offsets), used for every other layout and for records
 * this view refuses.
 *
 * Which event a record belongs to: the only event, or, when every event's
 * sample_type starts with IDENTIFIER, the event whose kernel ids hold the
 * record's first u64 (a small sorted table, searched by bisection).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata-fixed.h"

struct layout {
	int32_t tid, time, cpu, raw; /* byte offsets after the 8-byte header; -1: absent */
	int32_t end;		     /* where the fixed fields end (RAW's size word) */
};

struct idmap {
	uint64_t id;
	size_t attr;
};

struct tk_perf_fixed {
	size_t nevsel;
	struct layout *lay;
	struct idmap *ids;
	size_t nids;
};

static int idmap_cmp(const void *a, const void *b)
{
	const struct idmap *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

struct tk_perf_fixed *tk_perf_fixed_new(const struct tk_perfdata *pd)
{
	size_t n = tk_perfdata_evsel_count(pd), nids = 0;
	struct tk_perf_fixed *fx;
	bool all_identifier = true;

	if (!n) {
		errno = ENOTSUP;
		return NULL;
	}
	fx = calloc(1, sizeof(*fx));
	if (!fx || !(fx->lay = calloc(n, sizeof(*fx->lay)))) {
		free(fx);
		errno = ENOMEM;
		return NULL;
	}
	fx->nevsel = n;
	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_evsel *ev = tk_perfdata_evsel_get(pd, i);
		uint64_t st = ev->attr.sample_type;
		int32_t off = 0;
		struct layout *l = &fx->lay[i];

		/* Only RAW may follow the fixed part: READ and CALLCHAIN vary in size. */
		if (st & (TK_PERF_SAMPLE_READ | TK_PERF_SAMPLE_CALLCHAIN)) {
			tk_perf_fixed_free(fx);
			errno = ENOTSUP;
			return NULL;
		}
		if (!(st & TK_PERF_SAMPLE_IDENTIFIER))
			all_identifier = false;
		l->tid = l->time = l->cpu = l->raw = -1;
		if (st & TK_PERF_SAMPLE_IDENTIFIER)
			off += 8;
		if (st & TK_PERF_SAMPLE_IP)
			off += 8;
		if (st & TK_PERF_SAMPLE_TID) {
			l->tid = off;
			off += 8;
		}
		if (st & TK_PERF_SAMPLE_TIME) {
			l->time = off;
			off += 8;
		}
		if (st & TK_PERF_SAMPLE_ADDR)
			off += 8;
		if (st & TK_PERF_SAMPLE_ID)
			off += 8;
		if (st & TK_PERF_SAMPLE_STREAM_ID)
			off += 8;
		if (st & TK_PERF_SAMPLE_CPU) {
			l->cpu = off;
			off += 8;
		}
		if (st & TK_PERF_SAMPLE_PERIOD)
			off += 8;
		l->end = off;
		if (st & TK_PERF_SAMPLE_RAW)
			l->raw = off;
		nids += ev->nr_ids;
	}
	if (n > 1) {
		size_t k = 0;

		if (!all_identifier) {
			tk_perf_fixed_free(fx);
			errno = ENOTSUP;
			return NULL;
		}
		fx->ids = malloc((nids ? nids : 1) * sizeof(*fx->ids));
		if (!fx->ids) {
			tk_perf_fixed_free(fx);
			errno = ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < n; i++) {
			const struct tk_perfdata_evsel *ev = tk_perfdata_evsel_get(pd, i);

			for (uint64_t j = 0; j < ev->nr_ids; j++)
				fx->ids[k++] = (struct idmap){ev->ids[j], i};
		}
		fx->nids = k;
		qsort(fx->ids, k, sizeof(*fx->ids), idmap_cmp);
	}
	return fx;
}

void tk_perf_fixed_free(struct tk_perf_fixed *fx)
{
	if (!fx)
		return;
	free(fx->lay);
	free(fx->ids);
	free(fx);
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int tk_perf_fixed_read(const struct tk_perf_fixed *fx, const struct tk_perf_record *rec,
		       struct tk_perf_fixed_sample *out)
{
	const uint8_t *body = (const uint8_t *)rec->data + 8;
	size_t len = rec->size >= 8 ? rec->size - 8u : 0, a = 0;
	const struct layout *l;

	if (fx->nevsel > 1) {
		size_t lo = 0, hi = fx->nids;
		uint64_t id;

		if (len < 8)
			return -EBADMSG;
		id = ld64(body);
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (fx->ids[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == fx->nids || fx->ids[lo].id != id)
			return -ENOENT;
		a = fx->ids[lo].attr;
	}
	l = &fx->lay[a];
	out->attr_index = a;
	out->pid = out->tid = out->cpu = 0;
	out->time = 0;
	out->raw = NULL;
	out->raw_size = 0;
	if ((size_t)l->end + (l->raw >= 0 ? 4 : 0) > len)
		return -EBADMSG;
	if (l->tid >= 0) {
		out->pid = ld32(body + l->tid);
		out->tid = ld32(body + l->tid + 4);
	}
	if (l->time >= 0)
		out->time = ld64(body + l->time);
	if (l->cpu >= 0)
		out->cpu = ld32(body + l->cpu);
	if (l->raw >= 0) {
		uint32_t sz = ld32(body + l->raw);

		if ((size_t)l->raw + 4 + sz > len)
			return -EBADMSG;
		out->raw_size = sz;
		out->raw = body + l->raw + 4;
	}
	return 0;
}
