// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * feed: the one pass every analysis rides on.
 *
 * An analysis (sched latency today; syscalls, profile, flamegraph and
 * report --profile next) says which tracepoints it needs and which of their
 * fields, and whether it wants the thread side-band (COMM, FORK, EXIT).
 * The feed opens the file, builds one event set from its tracing metadata
 * (the tk_tracedata model both containers share; only the wanted events'
 * formats are parsed), resolves each wanted
 * event to its id and each wanted field to its format entry once, then
 * reads the records in time order and hands the analysis a small fixed
 * record with the numbers already read. Nothing is formatted as text and
 * no other field is touched: that is what keeps an analysis at the
 * decoder's speed (tens of millions of records a second) rather than the
 * printer's.
 *
 * Order and the two containers:
 *   .dat: tk_dat_merge merges every CPU of every buffer by time, ties in
 *   buffer then CPU order (trace-cmd's). The saved command lines are handed
 *   out first as COMM records at time 0, in file order (a later line for a
 *   pid wins), which is exactly what `tracekit convert --to perf` writes,
 *   so an analysis names threads alike on a .dat and on its conversion.
 *   perf.data: perf's ordered-events rule, as perf sched applies it.
 *   Timed records (samples, and side-band records through their
 *   sample_id_all trailer) are queued; a FINISHED_ROUND delivers, sorted by
 *   time with ties in arrival order, those at or before the highest time
 *   seen when the previous round ended; the end of the file delivers the
 *   rest. Records without a time (perf's synthesized COMMs) go out at once.
 *   The queue holds decoded tk_feed_recs (72 bytes), not raw records, so a
 *   round of 4096 samples costs ~300 KB whatever the payload size.
 *
 * What lands here next (the plan of src/lib/analyze/):
 *   syscalls.c   perf trace -s: raw_syscalls:sys_enter/exit (id, ret) or
 *                syscalls:sys_enter_NAME/exit_NAME; per thread and id.
 *   profile.c    perf report --stdio: needs samples with ip and callchain;
 *                the feed grows a TK_FEED_SAMPLE kind carrying ip, period
 *                and a borrowed callchain, plus MMAP/MMAP2 side-band for
 *                the symbolizer (src/lib/symbols).
 *   flamegraph.c folded stacks from the same samples, and off-CPU time
 *                from sched_switch (the fields sched.c already reads).
 *   report --profile / -w: trace-cmd's task profile and wakeup latency,
 *                from sched, irq and syscall events of a .dat.
 *   Each is one .c with a tk_<analysis>_run() in include/tracekit/analyze.h,
 *   keeping per-task or per-symbol state only, so memory stays flat.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/dat.h>
#include <tracekit/event.h>
#include <tracekit/filekind.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "feed.h"
#include "perfdata-fixed.h"
#include "internal/error.h"

/* A wanted event resolved against the file's formats. */
struct bound {
	const struct tk_event_field *fields[TK_FEED_MAX_FIELDS];
};

struct feed {
	const struct tk_feed_want *wants;
	size_t nwants;
	unsigned int flags;
	tk_feed_fn fn;
	void *ctx;
	struct tk_feed_stats *st;
	struct tk_event_set *set;
	struct bound bound[32];
	int16_t *by_id; /* event id -> want index, -1 */
	size_t nids;
	uint32_t seq;
	/* perf.data ordered queue */
	struct tk_feed_rec *q;
	size_t qlen, qcap;
	uint64_t max_ts, next_flush;
	struct tk_perf_fixed *fixed; /* NULL: every sample through tk_perfdata_parse_sample */
};

/* The "name: X" of a format text, compared with @name. */
static bool format_named(const struct tk_text *t, const char *name)
{
	size_t n = strlen(name);

	if (t->len < 6 + n || memcmp(t->data, "name: ", 6) || memcmp(t->data + 6, name, n))
		return false;
	return t->len == 6 + n || t->data[6 + n] == '\n' || t->data[6 + n] == '\r';
}

static bool format_wanted(const struct feed *f, const char *system, const struct tk_text *t)
{
	for (size_t w = 0; w < f->nwants; w++)
		if (!strcmp(f->wants[w].system, system) && format_named(t, f->wants[w].name))
			return true;
	return false;
}

/*
 * Only the wanted events' formats are parsed: a kernel has ~2000, and
 * parsing them all cost more than a small file's whole pass (and some
 * leak inside libtraceevent).
 */
static struct tk_event_set *set_from_tracedata(const struct feed *f, const struct tk_tracedata *td)
{
	struct tk_event_set *set;
	struct tk_text text;
	const char *system;
	bool big;
	uint8_t lsize;
	uint32_t psize;

	tk_tracedata_layout(td, &big, &lsize, &psize);
	set = tk_event_set_new(lsize == 4 ? 4 : 8, big, psize ? psize : 4096);
	if (!set)
		return NULL;
	if (tk_tracedata_header_page(td, &text) == 0 && text.len)
		tk_event_set_add_header_page(set, text.data, text.len);
	for (size_t i = 0; tk_tracedata_format(td, i, &system, &text) == 0; i++) {
		if (!format_wanted(f, system, &text))
			continue;
		/* A format that does not parse leaves its event unknown, as in perf. */
		if (tk_event_set_add_format(set, system, text.data, text.len) == -ENOMEM) {
			tk_event_set_free(set);
			errno = ENOMEM;
			return NULL;
		}
	}
	return set;
}

/* Resolve the wants: event ids and field entries, once per file. */
static int bind_wants(struct feed *f)
{
	int maxid = -1;

	for (size_t w = 0; w < f->nwants; w++) {
		const struct tk_event *ev =
			tk_event_find_by_name(f->set, f->wants[w].system, f->wants[w].name);

		if (ev && tk_event_id(ev) > maxid)
			maxid = tk_event_id(ev);
	}
	f->nids = (size_t)(maxid + 1);
	f->by_id = malloc((f->nids ? f->nids : 1) * sizeof(*f->by_id));
	if (!f->by_id)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < f->nids; i++)
		f->by_id[i] = -1;
	for (size_t w = 0; w < f->nwants; w++) {
		const struct tk_event *ev =
			tk_event_find_by_name(f->set, f->wants[w].system, f->wants[w].name);

		if (!ev)
			continue;
		f->st->present |= 1u << w;
		f->by_id[tk_event_id(ev)] = (int16_t)w;
		for (int k = 0; k < TK_FEED_MAX_FIELDS && f->wants[w].fields[k]; k++) {
			f->bound[w].fields[k] = tk_event_field_find(ev, f->wants[w].fields[k]);
			if (!f->bound[w].fields[k])
				f->st->missing |= 1u << w;
		}
	}
	return 0;
}

/* Fill @r from a tracepoint payload; false when it is not wanted. */
static bool decode(struct feed *f, const void *data, uint32_t size, struct tk_feed_rec *r)
{
	int id = tk_event_record_type(f->set, data, size);
	const struct bound *b;

	if (id < 0 || (size_t)id >= f->nids || f->by_id[id] < 0)
		return false;
	r->kind = TK_FEED_EVENT;
	r->want = (uint16_t)f->by_id[id];
	b = &f->bound[r->want];
	for (int k = 0; k < TK_FEED_MAX_FIELDS; k++) {
		r->val[k] = 0;
		/* A record too short for a field reads it as 0: analyses count, not crash. */
		if (b->fields[k])
			tk_event_field_read(f->set, b->fields[k], data, size, &r->val[k]);
	}
	return true;
}

static int deliver(struct feed *f, struct tk_feed_rec *r)
{
	return f->fn(f->ctx, r);
}

/* ------------------------------------------------------------------ .dat */

static int dat_cmdlines(struct feed *f, const struct tk_tracedata *td)
{
	struct tk_text t;
	uint64_t i = 0;

	if (tk_tracedata_cmdlines(td, &t) || !t.len)
		return 0;
	while (i < t.len) {
		uint64_t end = i;
		struct tk_feed_rec r = {.kind = TK_FEED_COMM};
		char *endp;
		char num[24];
		size_t n;
		long pid;
		int ret;

		while (end < t.len && t.data[end] != '\n')
			end++;
		n = end - i < sizeof(num) - 1 ? (size_t)(end - i) : sizeof(num) - 1;
		memcpy(num, t.data + i, n);
		num[n] = 0;
		pid = strtol(num, &endp, 10);
		if (endp != num && *endp == ' ' && pid > 0 && pid <= INT32_MAX) {
			const char *name = t.data + i + (size_t)(endp - num) + 1;
			size_t len = (size_t)(t.data + end - name);

			if (len > TK_FEED_COMM_LEN - 1)
				len = TK_FEED_COMM_LEN - 1;
			r.pid = r.tid = (int32_t)pid;
			r.val[0] = (uint64_t)pid;
			memcpy(r.comm, name, len);
			r.seq = f->seq++;
			ret = deliver(f, &r);
			if (ret)
				return ret;
		}
		i = end + 1;
	}
	return 0;
}

static int run_dat(struct feed *f, const char *path)
{
	struct tk_dat *dat = tk_dat_open(path);
	struct tk_dat_merge *m = NULL;
	struct tk_dat_merge_record mr;
	const struct tk_tracedata *td;
	int ret;

	if (!dat)
		return -errno;
	td = tk_dat_get_tracedata(dat);
	f->set = set_from_tracedata(f, td);
	if (!f->set) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	ret = bind_wants(f);
	if (ret)
		goto out;
	if (f->flags & TK_FEED_SIDEBAND) {
		ret = dat_cmdlines(f, td);
		if (ret)
			goto out;
	}
	m = tk_dat_merge_new(dat, NULL, 0);
	if (!m) {
		ret = -errno;
		goto out;
	}
	while ((ret = tk_dat_merge_next(m, &mr)) > 0) {
		struct tk_feed_rec r;

		f->st->nr_records++;
		if (!decode(f, mr.rec.data, mr.rec.size, &r))
			continue;
		r.time = mr.ts;
		r.cpu = mr.cpu;
		r.pid = r.tid = tk_event_record_pid(f->set, mr.rec.data, mr.rec.size);
		r.seq = f->seq++;
		ret = deliver(f, &r);
		if (ret)
			break;
	}
out:
	tk_dat_merge_free(m);
	tk_dat_close(dat);
	return ret;
}

/* ------------------------------------------------------------- perf.data */

static int rec_cmp(const void *a, const void *b)
{
	const struct tk_feed_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Deliver the queued records at or before @limit, oldest first. The queue
 * is nearly always in order already (one CPU's records, or CPUs drained in
 * turn make a few runs): a pass that finds it sorted skips the sort, and
 * the records left for the next round move once, not per delivery.
 */
static int flush_queue(struct feed *f, uint64_t limit, bool all)
{
	size_t n = 0;
	bool sorted = true;
	int ret = 0;

	if (!f->qlen)
		return 0;
	for (size_t i = 1; i < f->qlen && sorted; i++)
		sorted = rec_cmp(&f->q[i - 1], &f->q[i]) <= 0;
	if (!sorted)
		qsort(f->q, f->qlen, sizeof(*f->q), rec_cmp);
	while (n < f->qlen && (all || f->q[n].time <= limit)) {
		ret = deliver(f, &f->q[n]);
		n++;
		if (ret)
			break;
	}
	if (n < f->qlen)
		memmove(f->q, f->q + n, (f->qlen - n) * sizeof(*f->q));
	f->qlen -= n;
	return ret;
}

static int queue(struct feed *f, const struct tk_feed_rec *r)
{
	if (!r->time)
		return deliver(f, (struct tk_feed_rec *)r);
	if (f->qlen == f->qcap) {
		size_t cap = f->qcap ? f->qcap * 2 : 8192;
		struct tk_feed_rec *q = realloc(f->q, cap * sizeof(*q));

		if (!q)
			return tk_fail(ENOMEM, "out of memory");
		f->q = q;
		f->qcap = cap;
	}
	f->q[f->qlen++] = *r;
	if (r->time > f->max_ts)
		f->max_ts = r->time;
	return 0;
}

static int perf_record(struct feed *f, struct tk_perfdata *pd, const struct tk_perf_record *rec)
{
	struct tk_feed_rec r;
	struct tk_perf_sample s;

	memset(&r, 0, sizeof(r));
	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE: {
		struct tk_perf_fixed_sample fs;

		if (f->fixed && tk_perf_fixed_read(f->fixed, rec, &fs) == 0) {
			if (!fs.raw || !decode(f, fs.raw, fs.raw_size, &r))
				return 0;
			r.time = fs.time;
			r.cpu = fs.cpu;
			r.pid = (int32_t)fs.pid;
			r.tid = (int32_t)fs.tid;
			break;
		}
		if (tk_perfdata_parse_sample(pd, rec, &s) || !s.raw)
			return 0;
		if (!decode(f, s.raw, s.raw_size, &r))
			return 0;
		r.time = s.time;
		r.cpu = s.cpu;
		r.pid = (int32_t)s.pid;
		r.tid = (int32_t)s.tid;
		break;
	}
	case TK_PERF_RECORD_COMM: {
		struct tk_perf_comm c;

		if (!(f->flags & TK_FEED_SIDEBAND) || tk_perfdata_parse_comm(rec, &c))
			return 0;
		r.kind = TK_FEED_COMM;
		r.pid = (int32_t)c.pid;
		r.tid = (int32_t)c.tid;
		memcpy(r.comm, c.comm,
		       strnlen(c.comm,
			       c.len < TK_FEED_COMM_LEN - 1 ? c.len : TK_FEED_COMM_LEN - 1));
		if (tk_perfdata_parse_sample(pd, rec, &s) == 0) {
			r.time = s.time;
			r.val[0] = s.tid;
		}
		break;
	}
	case TK_PERF_RECORD_FORK:
	case TK_PERF_RECORD_EXIT: {
		struct tk_perf_task t;

		if (!(f->flags & TK_FEED_SIDEBAND) || tk_perfdata_parse_task(rec, &t))
			return 0;
		r.kind = rec->type == TK_PERF_RECORD_FORK ? TK_FEED_FORK : TK_FEED_EXIT;
		r.pid = (int32_t)t.pid;
		r.tid = (int32_t)t.tid;
		r.val[0] = t.ppid;
		r.val[1] = t.ptid;
		r.time = t.time;
		if (tk_perfdata_parse_sample(pd, rec, &s) == 0 && s.time)
			r.time = s.time;
		break;
	}
	case TK_PERF_RECORD_LOST:
		f->st->nr_lost_chunks++;
		if (rec->size >= 24)
			f->st->nr_lost += tk_perf_load_u64(rec->data, 2);
		return 0;
	case TK_PERF_RECORD_FINISHED_ROUND: {
		int ret = flush_queue(f, f->next_flush, false);

		f->next_flush = f->max_ts;
		return ret;
	}
	default:
		return 0;
	}
	r.seq = f->seq++;
	return queue(f, &r);
}

static int run_perf(struct feed *f, const char *path)
{
	struct tk_perfdata *pd = tk_perfdata_open(path);
	const struct tk_tracedata *td;
	struct tk_perf_record rec;
	int ret;

	if (!pd)
		return -errno;
	f->st->perfdata = true;
	td = tk_perfdata_get_tracedata(pd);
	if (!td) {
		ret = tk_fail(ENOENT, "%s: no tracing data: not a recording of tracepoints", path);
		goto out;
	}
	f->set = set_from_tracedata(f, td);
	if (!f->set) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	ret = bind_wants(f);
	if (ret)
		goto out;
	/* Fixed offsets when the layout allows (not in pipe mode: events arrive late). */
	if (!tk_perfdata_get_info(pd)->pipe)
		f->fixed = tk_perf_fixed_new(pd);
	while ((ret = tk_perfdata_next(pd, &rec)) > 0) {
		f->st->nr_records++;
		ret = perf_record(f, pd, &rec);
		if (ret)
			break;
	}
	if (ret == 0)
		ret = flush_queue(f, 0, true);
out:
	free(f->q);
	tk_perf_fixed_free(f->fixed);
	tk_perfdata_close(pd);
	return ret;
}

int tk_feed_run(const char *path, const struct tk_feed_want *wants, size_t nwants,
		unsigned int flags, tk_feed_fn fn, void *ctx, struct tk_feed_stats *stats)
{
	struct feed f = {.wants = wants, .nwants = nwants, .flags = flags, .fn = fn, .ctx = ctx};
	struct tk_feed_stats local;
	enum tk_filekind kind;
	int ret;

	if (nwants > 32)
		return tk_fail(EINVAL, "feed: %zu events asked for, at most 32", nwants);
	f.st = stats ? stats : &local;
	memset(f.st, 0, sizeof(*f.st));
	errno = 0;
	kind = tk_filekind_of(path);
	if (kind == TK_FILE_DAT)
		ret = run_dat(&f, path);
	else if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE)
		ret = run_perf(&f, path);
	else if (errno && errno != EINVAL && kind == TK_FILE_OTHER)
		ret = tk_fail(errno, "%s: %s", path, strerror(errno));
	else
		ret = tk_fail(EBADMSG, "%s: neither a trace-cmd .dat nor a perf.data", path);
	tk_event_set_free(f.set);
	free(f.by_id);
	return ret;
}

struct tk_event_set *tk_feed_event_set(const struct tk_tracedata *td,
				       const struct tk_feed_want *wants, size_t nwants)
{
	struct feed f = {.wants = wants, .nwants = nwants};

	return set_from_tracedata(&f, td);
}
