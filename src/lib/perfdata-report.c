// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-report: print the samples of a perf.data file as `perf script`
 * (perf 6.1) prints them by default.
 *
 * What perf script does, and so what this does:
 *
 *   Order. perf queues every kernel record that carries a timestamp
 *   (samples, and side-band records through their sample_id_all trailer)
 *   and delivers them sorted by time, ties in arrival order. A
 *   FINISHED_ROUND record flushes the queued records whose time is at most
 *   the highest time seen before the previous round, then remembers the
 *   highest time seen so far; the end of the file flushes everything.
 *   Records without a timestamp (time 0, e.g. the COMM and MMAP records
 *   perf synthesizes from /proc) are delivered at once. A late record is
 *   still queued and so comes out after later ones, as in perf.
 *
 *   Names. A thread's name is the last COMM delivered for its tid; a
 *   forked thread takes its parent's name when the parent has one; pid 0
 *   is "swapper"; any other unknown thread prints as ":TID".
 *
 *   Line. Tracepoint samples: "%16s %5d [%03d] %12s: %*s: TEXT\n" with
 *   comm, tid, cpu, time in seconds with microseconds, the event name
 *   right-aligned to the longest name of the file, and the tracepoint's
 *   text from its TRACING_DATA format. Other samples: comm ("%s " instead
 *   of "%16s " when the event has callchains), tid, cpu, time, period
 *   ("%10lu "), event name, then " %16lx sym+0xoff (dso)" for the ip, or a
 *   newline and one "\t%16lx sym+0xoff (dso)\n" line per callchain entry.
 *   A field whose sample_type bit is missing (CPU when not -a) is left out.
 *
 * Memory: one round of records (copied into an arena) plus the thread and
 * map tables. Symbols: kernel ips through kallsyms, user ips through the
 * process's MMAP/MMAP2 maps and the mapped file's ELF symbols (through the
 * cache module's symbolizer, which loads each file once).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/cache.h>
#include <tracekit/event.h>
#include <tracekit/perfdata.h>

#include "perfdata-internal.h"
#include "internal/error.h"

#define CONTEXT_MAX ((uint64_t)-4095)      /* PERF_CONTEXT_* markers are above this */
#define CONTEXT_KERNEL ((uint64_t)-128)
#define CONTEXT_USER ((uint64_t)-512)
#define MISC_CPUMODE_MASK 7
#define MISC_KERNEL 1
#define MISC_GUEST_KERNEL 4

enum {
	F_COMM = 1 << 0,
	F_TID = 1 << 1,
	F_CPU = 1 << 2,
	F_TIME = 1 << 3,
	F_PERIOD = 1 << 4,
	F_EVNAME = 1 << 5,
	F_TRACE = 1 << 6,
	F_IP = 1 << 7,
};

struct rep_evsel {
	bool ready;
	char *name;
	const struct tk_event *ev;
	unsigned int fields;
	bool callchain;
};

struct thread {
	int32_t tid;            /* -1: free slot */
	bool comm_set;
	char comm[24];
};

struct map {
	uint64_t start, end, pgoff;
	char *path;
};

struct proc {
	int32_t pid;            /* -1: free slot */
	struct map *maps;
	size_t nmaps;
};

struct qent {
	uint64_t time, seq, off;
	uint32_t size;
	uint32_t type;
	uint16_t misc;
	uint64_t file_offset;
	bool compressed;
};

struct rep {
	struct tk_perfdata *pd;
	const struct tk_perfdata_report_opts *opts;
	struct tk_outbuf out;
	struct tk_event_set *set;
	bool set_tried;
	struct rep_evsel *evs;
	size_t nevs;
	int name_width;

	struct thread *threads;
	size_t thread_cap, nthreads;
	struct proc *procs;
	size_t proc_cap, nprocs;

	struct tk_symbolizer *sym;

	uint8_t *arena;
	uint64_t arena_len, arena_cap;
	struct qent *q;
	size_t qlen, qcap;
	uint64_t seq, max_ts, next_flush;
	uint64_t printed;
};

/* ------------------------------------------------------------ threads */

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static int threads_grow(struct rep *r)
{
	size_t cap = r->thread_cap ? r->thread_cap * 2 : 1024;
	struct thread *t = malloc(cap * sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		t[i].tid = -1;
	for (size_t i = 0; i < r->thread_cap; i++) {
		size_t j;

		if (r->threads[i].tid < 0)
			continue;
		j = hash32((uint32_t)r->threads[i].tid) & (cap - 1);
		while (t[j].tid >= 0)
			j = (j + 1) & (cap - 1);
		t[j] = r->threads[i];
	}
	free(r->threads);
	r->threads = t;
	r->thread_cap = cap;
	return 0;
}

/* The thread of @tid, created (unnamed) when new; NULL on ENOMEM or tid < 0. */
static struct thread *thread_get(struct rep *r, int32_t tid, bool create)
{
	size_t j;

	if (tid < 0 || (!r->thread_cap && !create))
		return NULL;
	if (!r->thread_cap && threads_grow(r))
		return NULL;
	j = hash32((uint32_t)tid) & (r->thread_cap - 1);
	while (r->threads[j].tid >= 0) {
		if (r->threads[j].tid == tid)
			return &r->threads[j];
		j = (j + 1) & (r->thread_cap - 1);
	}
	if (!create)
		return NULL;
	if ((r->nthreads + 1) * 2 > r->thread_cap) {
		if (threads_grow(r))
			return NULL;
		return thread_get(r, tid, true);
	}
	r->threads[j].tid = tid;
	r->threads[j].comm_set = false;
	r->threads[j].comm[0] = 0;
	r->nthreads++;
	return &r->threads[j];
}

static void thread_set_comm(struct thread *t, const char *comm, size_t max)
{
	size_t n = strnlen(comm, max);

	if (n >= sizeof(t->comm))
		n = sizeof(t->comm) - 1;
	memcpy(t->comm, comm, n);
	t->comm[n] = 0;
	t->comm_set = true;
}

static const char *thread_comm(struct rep *r, int32_t tid, char *buf, size_t len)
{
	struct thread *t = thread_get(r, tid, false);

	if (t && t->comm_set)
		return t->comm;
	if (tid == 0)
		return "swapper";
	snprintf(buf, len, ":%" PRId32, tid);
	return buf;
}

/* ------------------------------------------------------------ maps */

static struct proc *proc_get(struct rep *r, int32_t pid, bool create)
{
	size_t j;

	if (pid < 0)
		return NULL;
	if (!r->proc_cap || (create && (r->nprocs + 1) * 2 > r->proc_cap)) {
		size_t cap = r->proc_cap ? r->proc_cap * 2 : 256;
		struct proc *p;

		if (!create && !r->proc_cap)
			return NULL;
		p = malloc(cap * sizeof(*p));
		if (!p)
			return NULL;
		for (size_t i = 0; i < cap; i++)
			p[i].pid = -1;
		for (size_t i = 0; i < r->proc_cap; i++) {
			if (r->procs[i].pid < 0)
				continue;
			j = hash32((uint32_t)r->procs[i].pid) & (cap - 1);
			while (p[j].pid >= 0)
				j = (j + 1) & (cap - 1);
			p[j] = r->procs[i];
		}
		free(r->procs);
		r->procs = p;
		r->proc_cap = cap;
	}
	j = hash32((uint32_t)pid) & (r->proc_cap - 1);
	while (r->procs[j].pid >= 0) {
		if (r->procs[j].pid == pid)
			return &r->procs[j];
		j = (j + 1) & (r->proc_cap - 1);
	}
	if (!create)
		return NULL;
	r->procs[j].pid = pid;
	r->procs[j].maps = NULL;
	r->procs[j].nmaps = 0;
	r->nprocs++;
	return &r->procs[j];
}

static int proc_add_map(struct proc *p, uint64_t start, uint64_t len, uint64_t pgoff,
			const char *path, size_t pathmax)
{
	struct map *m;
	size_t n = strnlen(path, pathmax);

	if (!len || start + len < start)
		return 0;
	/* A new map hides what it overlaps, as a new mmap() does. */
	for (size_t i = 0; i < p->nmaps;) {
		if (p->maps[i].start < start + len && start < p->maps[i].end) {
			free(p->maps[i].path);
			p->maps[i] = p->maps[--p->nmaps];
		} else {
			i++;
		}
	}
	m = realloc(p->maps, (p->nmaps + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	p->maps = m;
	m = &p->maps[p->nmaps];
	m->path = strndup(path, n);
	if (!m->path)
		return -ENOMEM;
	m->start = start;
	m->end = start + len;
	m->pgoff = pgoff;
	p->nmaps++;
	return 0;
}

static int proc_clone(struct rep *r, int32_t ppid, int32_t pid)
{
	struct proc *parent = proc_get(r, ppid, false), *child;
	int ret = 0;

	if (!parent || !parent->nmaps)
		return 0;
	child = proc_get(r, pid, true);
	/* The table may have moved: look the parent up again. */
	parent = proc_get(r, ppid, false);
	if (!child || !parent)
		return -ENOMEM;
	for (size_t i = 0; i < parent->nmaps && !ret; i++)
		ret = proc_add_map(child, parent->maps[i].start,
				   parent->maps[i].end - parent->maps[i].start, parent->maps[i].pgoff,
				   parent->maps[i].path, SIZE_MAX);
	return ret;
}

/* ------------------------------------------------------------ output */

/* Room for one field; longer texts go through tk_outbuf_write(). */
static char *room(struct tk_outbuf *out, size_t n)
{
	if (out->cap - out->len < n)
		tk_outbuf_flush(out);
	return out->buf + out->len;
}

static void put_str(struct tk_outbuf *out, const char *s)
{
	tk_outbuf_write(out, s, strlen(s));
}

/* @s right-aligned in @width columns, then @tail. */
static void put_padded(struct tk_outbuf *out, const char *s, int width, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	char *p;

	if (n + t + (size_t)(width > 0 ? width : 0) + 1 > 4096) {
		put_str(out, s);
		put_str(out, tail);
		return;
	}
	p = room(out, (size_t)width + n + t + 1);
	for (int i = (int)n; i < width; i++)
		*p++ = ' ';
	memcpy(p, s, n);
	p += n;
	memcpy(p, tail, t);
	p += t;
	out->len = (size_t)(p - out->buf);
}

/* Decimal digits of @v, right-aligned in @width (space padded), or zero padded. */
static void put_u64(struct tk_outbuf *out, uint64_t v, int width, bool zero)
{
	char tmp[24];
	int n = 0;
	char *p;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	p = room(out, 48);
	for (int i = n; i < width; i++)
		*p++ = zero ? '0' : ' ';
	while (n)
		*p++ = tmp[--n];
	out->len = (size_t)(p - out->buf);
}

static void put_char(struct tk_outbuf *out, char c)
{
	*room(out, 1) = c;
	out->len++;
}

static void put_time(struct rep *r, uint64_t t)
{
	char buf[48];
	int n;

	if (r->opts->flags & TK_PERFDATA_REPORT_NSEC)
		n = snprintf(buf, sizeof(buf), "%" PRIu64 ".%09" PRIu64, (uint64_t)(t / 1000000000u),
			     (uint64_t)(t % 1000000000u));
	else
		n = snprintf(buf, sizeof(buf), "%" PRIu64 ".%06" PRIu64, (uint64_t)(t / 1000000000u),
			     (uint64_t)(t % 1000000000u / 1000u));
	(void)n;
	put_padded(&r->out, buf, 12, ": ");
}

/*
 * "@prefix%16lx sym+0xoff (dso)" of @ip, as perf's sample__fprintf_sym()
 * writes it; callchain entries (@relative) show a user ip as its offset in
 * the mapped file.
 */
static void put_sym(struct rep *r, int32_t pid, uint64_t ip, bool kernel, const char *prefix,
		    bool relative)
{
	uint64_t shown = ip;
	struct tk_symbol_info info;
	const char *dso = NULL, *symbol = NULL;
	uint64_t off = 0;
	char buf[64];

	if (kernel) {
		if (r->sym && tk_symbolizer_lookup_file(r->sym, "[kernel.kallsyms]", NULL, ip,
							&info) == 0) {
			symbol = info.symbol;
			off = info.offset;
		}
		dso = "[kernel.kallsyms]";
	} else {
		struct proc *p = proc_get(r, pid, false);

		for (size_t i = 0; p && i < p->nmaps; i++) {
			const struct map *m = &p->maps[i];

			if (ip < m->start || ip >= m->end)
				continue;
			dso = m->path;
			if (relative)
				shown = ip - m->start + m->pgoff;
			if (r->sym && m->path[0] == '/' &&
			    tk_symbolizer_lookup_file(r->sym, m->path, "", ip - m->start + m->pgoff,
						      &info) == 0) {
				symbol = info.symbol;
				off = info.offset;
			}
			break;
		}
	}
	snprintf(buf, sizeof(buf), "%s%16" PRIx64 " ", prefix, shown);
	put_str(&r->out, buf);
	if (symbol) {
		put_str(&r->out, symbol);
		snprintf(buf, sizeof(buf), "+0x%" PRIx64, off);
		put_str(&r->out, buf);
	} else {
		put_str(&r->out, "[unknown]");
	}
	put_str(&r->out, " (");
	put_str(&r->out, dso ? dso : "[unknown]");
	put_char(&r->out, ')');
}

/* ------------------------------------------------------------ events */

static const char *const sw_names[] = {
	"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
	"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
	"bpf-output", "cgroup-switches",
};
static const char *const hw_names[] = {
	"cycles", "instructions", "cache-references", "cache-misses", "branches",
	"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
	"ref-cycles",
};

/* The event set from TRACING_DATA; built once, when a tracepoint first needs it. */
static int load_tracing(struct rep *r)
{
	struct tk_perfdata_tracing t;
	const char *system;
	struct tk_perfdata_text text;
	int ret;

	if (r->set_tried)
		return r->set ? 0 : -ENOENT;
	r->set_tried = true;
	if (tk_perfdata_tracing(r->pd, &t, NULL, NULL))
		return -ENOENT;
	r->set = tk_event_set_new(t.long_size, t.big_endian, t.page_size);
	if (!r->set)
		return -errno;
	if (t.header_page.len)
		tk_event_set_add_header_page(r->set, t.header_page.data, t.header_page.len);
	for (uint32_t i = 0; tk_perfdata_tracing_format(r->pd, i, &system, &text) == 0; i++) {
		ret = tk_event_set_add_format(r->set, system, text.data, text.len);
		if (ret == -ENOMEM)
			return ret;
		/* A format that does not parse leaves its event without text, as in perf. */
	}
	if (t.kallsyms.len && tk_event_set_add_kallsyms(r->set, t.kallsyms.data, t.kallsyms.len))
		return -ENOMEM;
	if (t.printk.len && tk_event_set_add_printk(r->set, t.printk.data, t.printk.len))
		return -ENOMEM;
	return 0;
}

static int evsel_prepare(struct rep *r, size_t index, struct rep_evsel *e)
{
	const struct tk_perfdata_evsel *es = tk_perfdata_evsel_get(r->pd, index);
	const struct tk_perf_attr *a = &es->attr;
	uint64_t st = a->sample_type;
	const char *name = es->name;
	char buf[128];

	e->ready = true;
	if (a->type == 2) {
		e->fields = F_COMM | F_TID | F_CPU | F_TIME | F_EVNAME | F_TRACE;
		if (load_tracing(r) == -ENOMEM)
			return -ENOMEM;
		if (r->set)
			e->ev = tk_event_find(r->set, (int)a->config);
		if (!name && e->ev) {
			snprintf(buf, sizeof(buf), "%s:%s", tk_event_system(e->ev),
				 tk_event_name(e->ev));
			name = buf;
		}
	} else {
		e->fields = F_COMM | F_TID | F_CPU | F_TIME | F_EVNAME | F_IP | F_PERIOD;
		if (!name && a->type == 1 && a->config < sizeof(sw_names) / sizeof(sw_names[0]))
			name = sw_names[a->config];
		if (!name && a->type == 0 && a->config < sizeof(hw_names) / sizeof(hw_names[0]))
			name = hw_names[a->config];
	}
	if (!name) {
		snprintf(buf, sizeof(buf), "unknown-%" PRIu32 ":%" PRIu64, a->type, a->config);
		name = buf;
	}
	/* perf drops a default field the samples cannot fill. */
	if (!(st & TK_PERF_SAMPLE_TID))
		e->fields &= ~(unsigned int)(F_TID | F_COMM);
	if (!(st & TK_PERF_SAMPLE_CPU))
		e->fields &= ~(unsigned int)F_CPU;
	if (!(st & TK_PERF_SAMPLE_TIME))
		e->fields &= ~(unsigned int)F_TIME;
	/* PERIOD stays: without the bit perf shows the attr's fixed period. */
	if (!(st & TK_PERF_SAMPLE_IP))
		e->fields &= ~(unsigned int)F_IP;
	e->callchain = st & TK_PERF_SAMPLE_CALLCHAIN;
	e->name = strdup(name);
	return e->name ? 0 : -ENOMEM;
}

static int ensure_evsels(struct rep *r)
{
	size_t n = tk_perfdata_evsel_count(r->pd);

	if (n > r->nevs) {
		struct rep_evsel *e = realloc(r->evs, n * sizeof(*e));

		if (!e)
			return -ENOMEM;
		memset(e + r->nevs, 0, (n - r->nevs) * sizeof(*e));
		r->evs = e;
		r->nevs = n;
	}
	return 0;
}

static int print_sample(struct rep *r, const struct tk_perf_record *rec)
{
	struct tk_perf_sample s;
	struct rep_evsel *e;
	char cbuf[24];
	int ret;

	ret = tk_perfdata_parse_sample(r->pd, rec, &s);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (ensure_evsels(r))
		return -ENOMEM;
	if ((size_t)s.attr_index >= r->nevs)
		return 0;
	e = &r->evs[s.attr_index];
	if (!e->ready && (ret = evsel_prepare(r, (size_t)s.attr_index, e)))
		return ret;
	if (!r->name_width) {
		/* perf script sizes the name column once, by every event of the file. */
		for (size_t i = 0; i < r->nevs; i++) {
			int len;

			if (!r->evs[i].ready && (ret = evsel_prepare(r, i, &r->evs[i])))
				return ret;
			len = (int)strlen(r->evs[i].name);
			if (len > r->name_width)
				r->name_width = len;
		}
	}

	if (e->fields & F_COMM) {
		const char *comm = thread_comm(r, (int32_t)s.tid, cbuf, sizeof(cbuf));

		if ((e->fields & F_IP) && e->callchain)
			put_padded(&r->out, comm, 0, " ");
		else
			put_padded(&r->out, comm, 16, " ");
	}
	if (e->fields & F_TID) {
		if ((int32_t)s.tid < 0) {
			snprintf(cbuf, sizeof(cbuf), "%" PRId32, (int32_t)s.tid);
			put_padded(&r->out, cbuf, 5, " ");
		} else {
			put_u64(&r->out, s.tid, 5, false);
			put_char(&r->out, ' ');
		}
	}
	if (e->fields & F_CPU) {
		put_char(&r->out, '[');
		put_u64(&r->out, s.cpu, 3, true);
		put_str(&r->out, "] ");
	}
	if (e->fields & F_TIME)
		put_time(r, s.time);
	if (e->fields & F_PERIOD) {
		const struct tk_perfdata_evsel *es = tk_perfdata_evsel_get(r->pd,
									   (size_t)s.attr_index);

		put_u64(&r->out,
			(s.fields & TK_PERF_SAMPLE_PERIOD) ? s.period : es->attr.sample_period, 10,
			false);
		put_char(&r->out, ' ');
	}
	if (e->fields & F_EVNAME)
		put_padded(&r->out, e->name, r->name_width, ": ");
	if ((e->fields & F_TRACE) && s.raw && e->ev)
		tk_event_print_info(r->set, e->ev, s.raw, s.raw_size, (int)s.cpu, 0, &r->out);
	if (e->fields & F_IP) {
		bool kernel = (rec->misc & MISC_CPUMODE_MASK) == MISC_KERNEL ||
			      (rec->misc & MISC_CPUMODE_MASK) == MISC_GUEST_KERNEL;

		if (e->callchain && s.callchain_nr) {
			put_char(&r->out, '\n');
			for (uint64_t i = 0; i < s.callchain_nr; i++) {
				uint64_t ip = tk_perf_load_u64(s.callchain, i);

				if (ip >= CONTEXT_MAX) {
					kernel = ip == CONTEXT_KERNEL;
					continue;
				}
				put_sym(r, (int32_t)s.pid, ip, kernel, "\t", true);
				put_char(&r->out, '\n');
			}
		} else {
			put_sym(r, (int32_t)s.pid, s.ip, kernel, " ", false);
		}
	}
	put_char(&r->out, '\n');
	r->printed++;
	return r->out.error;
}

/* Side-band records: names and maps. */
static int deliver(struct rep *r, const struct tk_perf_record *rec)
{
	const uint8_t *d = rec->data;
	uint32_t pid, tid, ppid, ptid;
	struct thread *t;

	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE:
		return print_sample(r, rec);
	case TK_PERF_RECORD_COMM:
		if (rec->size < 16)
			return 0;
		memcpy(&tid, d + 12, 4);
		t = thread_get(r, (int32_t)tid, true);
		if (!t)
			return -ENOMEM;
		thread_set_comm(t, (const char *)d + 16, rec->size - 16u);
		return 0;
	case TK_PERF_RECORD_FORK: {
		char comm[24];
		bool has = false;

		if (rec->size < 24)
			return 0;
		memcpy(&pid, d + 8, 4);
		memcpy(&ppid, d + 12, 4);
		memcpy(&tid, d + 16, 4);
		memcpy(&ptid, d + 20, 4);
		t = thread_get(r, (int32_t)ptid, false);
		if (t && t->comm_set) {
			memcpy(comm, t->comm, sizeof(comm));
			has = true;
		} else if (ptid == 0) {
			strcpy(comm, "swapper");
			has = true;
		}
		t = thread_get(r, (int32_t)tid, true);
		if (!t)
			return -ENOMEM;
		t->comm_set = false;
		if (has)
			thread_set_comm(t, comm, sizeof(comm));
		if (pid != ppid)
			return proc_clone(r, (int32_t)ppid, (int32_t)pid);
		return 0;
	}
	case TK_PERF_RECORD_MMAP:
	case TK_PERF_RECORD_MMAP2: {
		uint64_t start, len, pgoff;
		size_t name_off = rec->type == TK_PERF_RECORD_MMAP ? 40 : 72;
		struct proc *p;

		if (rec->size <= name_off)
			return 0;
		memcpy(&pid, d + 8, 4);
		memcpy(&start, d + 16, 8);
		memcpy(&len, d + 24, 8);
		memcpy(&pgoff, d + 32, 8);
		if ((int32_t)pid < 0)
			return 0;       /* kernel maps: kallsyms covers them */
		p = proc_get(r, (int32_t)pid, true);
		if (!p)
			return -ENOMEM;
		return proc_add_map(p, start, len, pgoff, (const char *)d + name_off,
				    rec->size - name_off);
	}
	default:
		return 0;
	}
}

/* ------------------------------------------------------------ ordering */

static int qent_cmp(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int deliver_queued(struct rep *r, const struct qent *q)
{
	struct tk_perf_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.type = q->type;
	rec.misc = q->misc;
	rec.size = (uint16_t)q->size;
	rec.offset = q->file_offset;
	rec.compressed = q->compressed;
	rec.data = r->arena + q->off;
	return deliver(r, &rec);
}

/* Deliver queued records up to @limit (all when @all), in time order. */
static int flush_queue(struct rep *r, uint64_t limit, bool all)
{
	size_t i, keep = 0;
	uint64_t new_len = 0;
	int ret = 0;

	if (!r->qlen)
		return 0;
	qsort(r->q, r->qlen, sizeof(*r->q), qent_cmp);
	for (i = 0; i < r->qlen; i++) {
		if (!all && r->q[i].time > limit)
			break;
		ret = deliver_queued(r, &r->q[i]);
		if (ret)
			return ret;
	}
	/*
	 * What stays moves to a fresh arena: sorted by time, the entries no
	 * longer follow their arena order, so moving them in place could
	 * overwrite one not yet moved.
	 */
	if (i < r->qlen) {
		uint8_t *a = malloc(r->arena_cap);
		if (!a)
			return -ENOMEM;
		for (; i < r->qlen; i++) {
			struct qent e = r->q[i];

			memcpy(a + new_len, r->arena + e.off, e.size);
			e.off = new_len;
			new_len += (e.size + 7u) & ~7u;
			r->q[keep++] = e;
		}
		free(r->arena);
		r->arena = a;
	}
	r->qlen = keep;
	r->arena_len = new_len;
	return ret;
}

static int enqueue(struct rep *r, const struct tk_perf_record *rec, uint64_t time)
{
	uint64_t need = ((uint64_t)rec->size + 7u) & ~7ull;
	struct qent *e;

	if (r->arena_len + need > r->arena_cap) {
		uint64_t cap = r->arena_cap ? r->arena_cap : 1 << 20;
		uint8_t *a;

		while (cap < r->arena_len + need)
			cap *= 2;
		a = realloc(r->arena, cap);
		if (!a)
			return -ENOMEM;
		r->arena = a;
		r->arena_cap = cap;
	}
	if (r->qlen == r->qcap) {
		size_t cap = r->qcap ? r->qcap * 2 : 4096;
		struct qent *q = realloc(r->q, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		r->q = q;
		r->qcap = cap;
	}
	memcpy(r->arena + r->arena_len, rec->data, rec->size);
	e = &r->q[r->qlen++];
	e->time = time;
	e->seq = r->seq++;
	e->off = r->arena_len;
	e->size = rec->size;
	e->type = rec->type;
	e->misc = rec->misc;
	e->file_offset = rec->offset;
	e->compressed = rec->compressed;
	r->arena_len += need;
	if (time > r->max_ts)
		r->max_ts = time;
	return 0;
}

static int process(struct rep *r, const struct tk_perf_record *rec)
{
	struct tk_perf_sample s;
	int ret;

	if (rec->type == TK_PERF_RECORD_FINISHED_ROUND) {
		ret = flush_queue(r, r->next_flush, false);
		r->next_flush = r->max_ts;
		return ret;
	}
	if (rec->type >= 64)
		return 0;
	ret = tk_perfdata_parse_sample(r->pd, rec, &s);
	if (ret == 0 && (s.fields & TK_PERF_SAMPLE_TIME) && s.time && s.time != UINT64_MAX)
		return enqueue(r, rec, s.time);
	if (ret && ret != -ENOENT && rec->type == TK_PERF_RECORD_SAMPLE)
		return ret;
	return deliver(r, rec);
}

static void rep_release(struct rep *r)
{
	for (size_t i = 0; i < r->nevs; i++)
		free(r->evs[i].name);
	free(r->evs);
	for (size_t i = 0; i < r->proc_cap; i++) {
		if (r->procs[i].pid < 0)
			continue;
		for (size_t j = 0; j < r->procs[i].nmaps; j++)
			free(r->procs[i].maps[j].path);
		free(r->procs[i].maps);
	}
	free(r->procs);
	free(r->threads);
	free(r->arena);
	free(r->q);
	tk_symbolizer_free(r->sym);
	tk_event_set_free(r->set);
	tk_outbuf_release(&r->out);
}

TK_API int tk_perfdata_report_run(struct tk_perfdata *pd,
				  const struct tk_perfdata_report_opts *opts, uint64_t *printed)
{
	struct tk_perf_record rec;
	struct rep r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.pd = pd;
	r.opts = opts;
	ret = tk_outbuf_init(&r.out, opts->fd, 0);
	if (ret)
		return ret;
	/* Without a symbolizer ips still print, as [unknown]. */
	r.sym = tk_symbolizer_new(NULL);
	while ((ret = tk_perfdata_next(pd, &rec)) == 1) {
		ret = process(&r, &rec);
		if (ret)
			break;
	}
	if (ret == 0)
		ret = flush_queue(&r, 0, true);
	if (ret == -ENOMEM)
		tk_fail(ENOMEM, "out of memory");
	tk_outbuf_flush(&r.out);
	if (!ret && r.out.error)
		ret = r.out.error;
	if (printed)
		*printed = r.printed;
	rep_release(&r);
	return ret < 0 ? ret : 0;
}
