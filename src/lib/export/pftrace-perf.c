// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * pftrace-perf: a perf.data into the Perfetto writer session (pftrace.c).
 *
 * Records are taken in file order; Perfetto sorts what it reads, and each
 * CPU's records are in time order in a perf.data already (one ring per
 * CPU), which is what the per-CPU bundles need. The side-band records
 * (FORK, COMM, MMAP) come from rings of their own, so a sample can precede
 * in the file the FORK that gave its process its parent: unwinding it then
 * sees no inherited maps, where tracekit report, which orders by time,
 * sees the parent's (perf's rule for where an exec'd process finds a
 * binary's unwind table: unwind_file_low()).
 *   SAMPLE of a tracepoint  its raw payload is an ftrace record: it goes to
 *                           its CPU's bundle like a .dat record, so a
 *                           `perf sched record` file gets CPU tracks
 *   other SAMPLE            a PerfSample packet (cpu, pid, tid, cpu_mode,
 *                           counts, see below) whose callstack_iid names
 *                           an interned callstack: the callchain, then
 *                           for --call-graph dwarf the user frames
 *                           unwound from the recorded registers and stack
 *                           (unwind.c, as tracekit report prints them)
 *   COMM, FORK              the thread's name, process and parent: one
 *                           small ProcessTree packet each, at its time
 *   MMAP, MMAP2             the mappings frames point into
 *   LOST                    lost_events on the next bundle of its CPU
 *
 * PerfSample rather than StreamingProfilePacket: it is what Perfetto's own
 * perf profiler (traced_perf) writes, ui.perfetto.dev draws it as per-thread
 * sample marks and a flame graph of any selected range, and it carries the
 * CPU, the mode and the period; the streaming packet has none of those.
 *
 * Counts: PerfSample's timebase_count and follower_counts, which
 * trace_processor imports into its counter table on perf_cpu_counter
 * tracks (one per CPU and event, named from the sequence's
 * TracePacketDefaults.perf_sample_defaults), the very tracks it makes when
 * it reads a perf.data itself, and ties to the sample (counter_set_id).
 * TrackEvent counter tracks would be a second, unrelated set of tracks
 * with no CPU and no tie to the samples. Perfetto's counts are what the
 * counter read since it was enabled, not differences: an event counts its
 * samples' periods summed per CPU, or, with PERF_SAMPLE_READ (perf record
 * -s, {a,b}:S), the values read: its own as timebase_count, its read
 * group's other members' as follower_counts.
 *
 * Sequences: trace_processor takes one timebase per packet sequence (a
 * perf session of its own), so each sampled event writes on a sequence of
 * its own, PFT_SEQ_PERF + its evsel index: several -e without a group
 * each get their counter tracks, as in the tables (tables.c). A defaults
 * packet naming the event (timebase) and its group's members (followers)
 * opens the sequence, and each piece of a split.
 *
 * Interning (InternedData, which Perfetto scopes to a sequence: each
 * event's tables are its own, and a stack two events meet is interned on
 * both sequences): a mapping is interned the first time a frame lands in
 * it (path string, build id as its raw bytes
 * from perf's HEADER_BUILD_ID, start, end, file offset), a frame per
 * (mapping, offset in the mapping's file), a callstack per distinct list of
 * frames, root first as Perfetto wants it (perf's callchains are leaf
 * first). New entries ride in the packet of the sample that first needs
 * them. The tables hold distinct stacks, not samples, and are cleared at
 * every piece of a split (the sequence's defaults packet says so with
 * SEQ_INCREMENTAL_STATE_CLEARED), so each piece opens alone.
 *
 * With tk_pftrace_opts.symbolize, a frame is named (InternedData
 * function_names) the first time it is met, from the file or kallsyms
 * with the build id perf recorded (a kernel module's from its .ko of that
 * build id, else kallsyms), as perf report names it; a frame of a
 * binary not here stays unnamed for Perfetto's own symbolizer (by build
 * id, `traceconv symbolize`). Names are per distinct frame, not per sample.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/cache.h>
#include <tracekit/elf.h>
#include <tracekit/perfdata.h>
#include <tracekit/symbolizer.h>
#include <tracekit/tracedata.h>

#include "perf-read.h"
#include "perfdata-evname.h"
#include "perfdata-fixed.h"
#include "pftrace-internal.h"
#include "pftrace-proto.h"
#include "symbolizer-internal.h"
#include "unwind-internal.h"
#include "internal/error.h"

/* InternedData's fields */
enum {
	ID_FUNCTION_NAMES = 5,
	ID_FRAMES = 6,
	ID_CALLSTACKS = 7,
	ID_BUILD_IDS = 16,
	ID_MAPPING_PATHS = 17,
	ID_MAPPINGS = 19,
};
/* PerfSample's */
enum {
	PS_CPU = 1,
	PS_PID = 2,
	PS_TID = 3,
	PS_CALLSTACK = 4,
	PS_MODE = 5,
	PS_COUNT = 6,
	PS_FOLLOWER_COUNTS = 7
};
/*
 * TracePacket.trace_packet_defaults, its perf_sample_defaults, their
 * timebase and followers, and the name of each (PerfEvents.Timebase,
 * FollowerEvent).
 */
enum {
	PF_PKT_DEFAULTS = 59,
	DEF_PERF_SAMPLE = 12,
	PSD_TIMEBASE = 1,
	PSD_FOLLOWERS = 4,
	TIMEBASE_NAME = 10,
	FOLLOWER_NAME = 4
};
/* The values of one group read carried (perf's groups are far smaller). */
#define READ_MAX 64

#define PERF_CONTEXT_MAX    ((uint64_t)-4095)
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_CONTEXT_USER   ((uint64_t)-512)
#define MAX_STACK	    256
#define UNWIND_FRAMES	    127 /* perf script's --max-stack default, as report */
#define DWARF_FIELDS                                                                               \
	(TK_PERF_SAMPLE_CALLCHAIN | TK_PERF_SAMPLE_REGS_USER | TK_PERF_SAMPLE_STACK_USER)

struct map {
	int32_t pid; /* -1: the kernel's */
	uint64_t start, end, pgoff;
	char *path;
	uint8_t bid[20]; /* MMAP2's own build id, when it carries one */
	uint8_t bid_size;
};

/* One process's mappings: indexes into perf.maps, oldest first. */
struct pidmap {
	int32_t pid;
	bool used;
	uint32_t n, cap;
	uint32_t *idx;
};

/* Open-addressing table of 64-bit hashes to iids, with the key bytes kept. */
struct itab {
	uint64_t *hash;
	uint64_t *iid;
	size_t cap, n;
};

/*
 * One packet sequence: the samples of one event (its timebase), with the
 * interned data they refer to, which is the sequence's own.
 */
struct pseq {
	struct itab frames, stacks, names;
	uint64_t next_iid;
	uint64_t unknown_iid; /* the empty mapping of addresses in no mapping */
	uint64_t *map_iid;    /* by index into perf.maps; 0: not interned in this piece */
	size_t nmap_iid;
	bool used;	      /* a sample of the event was met */
	bool cleared;	      /* the next sample packet clears the sequence's state */
	uint32_t nfollow;     /* the members of its read group besides itself */
	int follow[READ_MAX]; /* their evsels (-1: an id of no event) */
	uint64_t *sums;	      /* the event's periods so far, per CPU */
	size_t nsums;
};

struct perf {
	struct pft_session *s;
	struct tk_perfdata *pd;
	struct map *maps;
	size_t nmaps, cap_maps;
	size_t last_map;
	struct pidmap *pm; /* by pid, open addressing */
	size_t pm_cap, pm_n;
	struct tk_symbolizer *sym; /* NULL: frames go without names */
	struct tk_cache *cache;	   /* perf's build-id cache, when it exists */
	/* --call-graph dwarf: the unwinder, made at the first such sample */
	struct tk_unwind *unwind;
	struct tk_symbolizer *usym; /* the unwinder's, when frames go without names */
	bool unwind_failed;
	int32_t unwind_pid;	   /* the process being unwound */
	struct tk_unwind_map umap; /* the map unwind_find_map() found */
	char ubid[TK_BUILD_ID_HEX_MAX];
	struct pseq *seqs; /* by evsel index */
	size_t nseqs;
	struct pseq *q; /* the sequence of the sample being written */
	/* tracepoint samples read at fixed offsets (fixed_view()), for fx_n events */
	struct tk_perf_fixed *fx;
	bool *fx_tp;
	size_t fx_n;
	struct tk_bytebuf idata;
	uint64_t stack[MAX_STACK];
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static void itab_release(struct itab *t)
{
	free(t->hash);
	free(t->iid);
	memset(t, 0, sizeof(*t));
}

/*
 * The iid of @h, or 0 after adding it with @iid. Keys are 64-bit hashes of
 * the frame or stack: a collision (2^-64 per pair) would merge two stacks.
 */
static int itab_get(struct itab *t, uint64_t h, uint64_t iid, uint64_t *out)
{
	if (!h)
		h = 1;
	if (t->n * 2 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		uint64_t *nh = calloc(cap, sizeof(*nh)), *ni = calloc(cap, sizeof(*ni));

		if (!nh || !ni) {
			free(nh);
			free(ni);
			return tk_fail(ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < t->cap; i++) {
			size_t j;

			if (!t->hash[i])
				continue;
			for (j = t->hash[i] & (cap - 1); nh[j]; j = (j + 1) & (cap - 1))
				;
			nh[j] = t->hash[i];
			ni[j] = t->iid[i];
		}
		free(t->hash);
		free(t->iid);
		t->hash = nh;
		t->iid = ni;
		t->cap = cap;
	}
	for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		if (t->hash[j] == h) {
			*out = t->iid[j];
			return 0;
		}
		if (!t->hash[j]) {
			t->hash[j] = h;
			t->iid[j] = iid;
			t->n++;
			*out = 0;
			return 0;
		}
	}
}

/* Forget what @q interned: a new piece, or the end. */
static void pseq_clear(struct pseq *q)
{
	if (q->map_iid)
		memset(q->map_iid, 0, q->nmap_iid * sizeof(*q->map_iid));
	itab_release(&q->frames);
	itab_release(&q->stacks);
	itab_release(&q->names);
	q->next_iid = 1;
	q->unknown_iid = 0;
	q->cleared = true;
}

static void on_piece(struct pft_session *s)
{
	struct perf *p = s->perf;

	for (size_t i = 0; i < p->nseqs; i++)
		pseq_clear(&p->seqs[i]);
}

/* The sequence of evsel @idx, made when first asked for; NULL on ENOMEM. */
static struct pseq *pseq_get(struct perf *p, uint32_t idx)
{
	if (idx >= p->nseqs) {
		size_t n = idx + 1u > p->nseqs * 2 ? idx + 1u : p->nseqs * 2;
		struct pseq *t = realloc(p->seqs, n * sizeof(*t));

		if (!t)
			return NULL;
		memset(t + p->nseqs, 0, (n - p->nseqs) * sizeof(*t));
		for (size_t i = p->nseqs; i < n; i++) {
			t[i].next_iid = 1;
			t[i].cleared = true;
		}
		p->seqs = t;
		p->nseqs = n;
	}
	return &p->seqs[idx];
}

static size_t pid_slot(int32_t pid, size_t cap)
{
	return ((uint32_t)pid * 2654435761u) & (cap - 1);
}

static struct pidmap *pidmap_get(struct perf *p, int32_t pid, bool add)
{
	size_t k;

	if (p->pm_cap) {
		for (k = pid_slot(pid, p->pm_cap); p->pm[k].used; k = (k + 1) & (p->pm_cap - 1))
			if (p->pm[k].pid == pid)
				return &p->pm[k];
	}
	if (!add)
		return NULL;
	if ((p->pm_n + 1) * 2 > p->pm_cap) {
		size_t cap = p->pm_cap ? p->pm_cap * 2 : 256;
		struct pidmap *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t i = 0; i < p->pm_cap; i++) {
			if (!p->pm[i].used)
				continue;
			for (k = pid_slot(p->pm[i].pid, cap); n[k].used; k = (k + 1) & (cap - 1))
				;
			n[k] = p->pm[i];
		}
		free(p->pm);
		p->pm = n;
		p->pm_cap = cap;
	}
	for (k = pid_slot(pid, p->pm_cap); p->pm[k].used; k = (k + 1) & (p->pm_cap - 1))
		;
	p->pm[k].used = true;
	p->pm[k].pid = pid;
	p->pm_n++;
	return &p->pm[k];
}

static int map_add(struct perf *p, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		   const char *path, size_t plen, const uint8_t *bid, uint8_t bid_size)
{
	struct pidmap *pm = pidmap_get(p, pid, true);
	struct map *m;

	if (!pm)
		return tk_fail(ENOMEM, "out of memory");
	if (pm->n == pm->cap) {
		uint32_t cap = pm->cap ? pm->cap * 2 : 16;
		uint32_t *n = realloc(pm->idx, cap * sizeof(*n));

		if (!n)
			return tk_fail(ENOMEM, "out of memory");
		pm->idx = n;
		pm->cap = cap;
	}
	if (p->nmaps == p->cap_maps) {
		size_t cap = p->cap_maps ? p->cap_maps * 2 : 256;
		struct map *n = realloc(p->maps, cap * sizeof(*n));

		if (!n)
			return tk_fail(ENOMEM, "out of memory");
		p->maps = n;
		p->cap_maps = cap;
	}
	m = &p->maps[p->nmaps];
	m->path = strndup(path, plen);
	if (!m->path)
		return tk_fail(ENOMEM, "out of memory");
	m->pid = pid;
	m->start = start;
	m->end = start + len;
	m->pgoff = pgoff;
	m->bid_size = bid_size <= 20 ? bid_size : 20;
	if (m->bid_size)
		memcpy(m->bid, bid, m->bid_size);
	pm->idx[pm->n++] = (uint32_t)p->nmaps;
	p->nmaps++;
	return 0;
}

/* The newest mapping of @pid holding @addr (a later mmap over a range wins). */
static struct map *map_find(struct perf *p, int32_t pid, uint64_t addr)
{
	struct map *m = p->nmaps ? &p->maps[p->last_map] : NULL;
	const struct pidmap *pm;

	if (m && m->pid == pid && addr >= m->start && addr < m->end)
		return m;
	pm = pidmap_get(p, pid, false);
	for (uint32_t i = pm ? pm->n : 0; i-- > 0;) {
		m = &p->maps[pm->idx[i]];
		if (addr >= m->start && addr < m->end) {
			p->last_map = pm->idx[i];
			return m;
		}
	}
	return NULL;
}

/* A thread's own maps, else its process's, its parent's, else the kernel's. */
static struct map *map_lookup(struct perf *p, int32_t pid, uint64_t addr, bool kernel)
{
	struct map *m = NULL;

	if (!kernel) {
		const struct pft_thread *t;

		m = map_find(p, pid, addr);
		for (int depth = 0; !m && depth < 8; depth++) {
			t = pft_thread_get(p->s, pid);
			if (!t || !t->ppid || t->ppid == pid)
				break;
			pid = t->ppid;
			m = map_find(p, pid, addr);
		}
	}
	return m ? m : map_find(p, -1, addr);
}

static void put_istr(struct tk_bytebuf *b, uint32_t field, uint64_t iid, const void *str, size_t n)
{
	size_t m = pb_begin(b, field);

	pb_uint(b, 1, iid);
	pb_bytes(b, 2, str, n);
	pb_end(b, m);
}

/* The build id perf recorded for @path, or NULL. */
static const struct tk_perfdata_build_id *build_id_of(struct perf *p, const char *path)
{
	for (size_t i = 0; i < tk_perfdata_build_id_count(p->pd); i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(p->pd, i);

		if (b && b->filename && !strcmp(b->filename, path))
			return b;
	}
	return NULL;
}

/* Mapping: iid 1, build_id 2, start_offset 3, start 4, end 5, path_string_ids 7 */
static uint64_t map_intern(struct perf *p, struct map *m)
{
	const struct tk_perfdata_build_id *bid;
	struct pseq *q = p->q;
	size_t i = (size_t)(m - p->maps), e;
	uint64_t path_iid, bid_iid = 0;

	if (i >= q->nmap_iid) {
		size_t n = p->cap_maps > i ? p->cap_maps : i + 1;
		uint64_t *t = realloc(q->map_iid, n * sizeof(*t));

		if (!t)
			return 0;
		memset(t + q->nmap_iid, 0, (n - q->nmap_iid) * sizeof(*t));
		q->map_iid = t;
		q->nmap_iid = n;
	}
	if (q->map_iid[i])
		return q->map_iid[i];
	path_iid = q->next_iid++;
	put_istr(&p->idata, ID_MAPPING_PATHS, path_iid, m->path, strlen(m->path));
	bid = m->bid_size ? NULL : build_id_of(p, m->path);
	if (m->bid_size || (bid && bid->size)) {
		bid_iid = q->next_iid++;
		put_istr(&p->idata, ID_BUILD_IDS, bid_iid, m->bid_size ? m->bid : bid->id,
			 m->bid_size ? m->bid_size : bid->size);
	}
	q->map_iid[i] = q->next_iid++;
	e = pb_begin(&p->idata, ID_MAPPINGS);
	pb_uint(&p->idata, 1, q->map_iid[i]);
	if (bid_iid)
		pb_uint(&p->idata, 2, bid_iid);
	pb_uint(&p->idata, 3, m->pgoff);
	pb_uint(&p->idata, 4, m->start);
	pb_uint(&p->idata, 5, m->end);
	pb_uint(&p->idata, 7, path_iid);
	pb_end(&p->idata, e);
	return q->map_iid[i];
}

/*
 * Addresses in no known mapping go to one empty mapping named [unknown]
 * (Perfetto keeps frames of an empty range as they are), so that no frame
 * refers to mapping 0, which Perfetto rejects.
 */
static uint64_t unknown_intern(struct perf *p)
{
	uint64_t path_iid;
	size_t e;

	struct pseq *q = p->q;

	if (q->unknown_iid)
		return q->unknown_iid;
	path_iid = q->next_iid++;
	put_istr(&p->idata, ID_MAPPING_PATHS, path_iid, "[unknown]", 9);
	q->unknown_iid = q->next_iid++;
	e = pb_begin(&p->idata, ID_MAPPINGS);
	pb_uint(&p->idata, 1, q->unknown_iid);
	pb_uint(&p->idata, 7, path_iid);
	pb_end(&p->idata, e);
	return q->unknown_iid;
}

/*
 * The function a frame is in, by the build id perf recorded: the kernel's
 * (and its modules') from kallsyms, a file's from its symbol table, when a
 * file with that build id is on this machine (as perf report names them).
 * Return: the interned name's iid, 0 when unnamed.
 */
static uint64_t name_intern(struct perf *p, const struct map *m, uint64_t ip, uint64_t rel)
{
	const struct tk_perfdata_build_id *b;
	struct tk_symbol_info info;
	char hex[TK_BUILD_ID_HEX_MAX] = "";
	const char *path = m->path;
	uint64_t h = 0x6e616d65ull, iid;
	int r;

	bool kmod = m->pid == -1 && path[0] == '/';

	if (m->pid == -1 && !kmod) {
		path = "[kernel.kallsyms]";
		rel = ip;
	} else if (path[0] != '/' && strcmp(path, "[vdso]")) {
		return 0;
	}
	b = m->bid_size ? NULL : build_id_of(p, path);
	if (m->bid_size)
		tk_elf_build_id_hex(m->bid, m->bid_size, hex, sizeof(hex));
	else if (b && b->size)
		tk_elf_build_id_hex(b->id, b->size, hex, sizeof(hex));
	/* A kernel module: its .ko of the recorded build id, else kallsyms (perfdata-maps.c). */
	r = kmod ? tk_symbolizer_lookup_kmodule(p->sym, path, hex[0] ? hex : NULL, rel, &info) : 0;
	if (kmod && r == 0) {
		b = build_id_of(p, "[kernel.kallsyms]");
		hex[0] = '\0';
		if (b && b->size)
			tk_elf_build_id_hex(b->id, b->size, hex, sizeof(hex));
		path = "[kernel.kallsyms]";
		rel = ip;
	}
	if (r < 0 ||
	    (r == 0 && tk_symbolizer_lookup_file(p->sym, path, hex[0] ? hex : NULL, rel, &info)) ||
	    !info.symbol)
		return 0;
	for (const char *c = info.symbol; *c; c++)
		h = mix(h, (uint8_t)*c);
	r = itab_get(&p->q->names, h, p->q->next_iid, &iid);
	if (r || iid)
		return r ? 0 : iid;
	iid = p->q->next_iid++;
	put_istr(&p->idata, ID_FUNCTION_NAMES, iid, info.symbol, strlen(info.symbol));
	return iid;
}

/* Frame: iid 1, function_name_id 2, mapping_id 3, rel_pc 4 */
static int frame_intern(struct perf *p, int32_t pid, uint64_t ip, bool kernel, uint64_t *out)
{
	struct map *m = map_lookup(p, pid, ip, kernel);
	uint64_t mapping = m ? map_intern(p, m) : unknown_intern(p);
	uint64_t rel = m ? ip - m->start + m->pgoff : ip;
	uint64_t h = mix(mix(0x6672616d65ull, mapping), rel), iid;
	size_t e;
	int r;

	if (!mapping)
		return tk_fail(ENOMEM, "out of memory");
	r = itab_get(&p->q->frames, h, p->q->next_iid, &iid);
	if (r)
		return r;
	if (iid) {
		*out = iid;
		return 0;
	}
	*out = p->q->next_iid++;
	{
		uint64_t name = m && p->sym ? name_intern(p, m, ip, rel) : 0;

		e = pb_begin(&p->idata, ID_FRAMES);
		pb_uint(&p->idata, 1, *out);
		if (name)
			pb_uint(&p->idata, 2, name);
	}
	pb_uint(&p->idata, 3, mapping);
	pb_uint(&p->idata, 4, rel);
	pb_end(&p->idata, e);
	return 0;
}

/* @m's build id as unwind_find_map() gives it to the unwinder, into @hex. */
static void map_build_id_hex(struct perf *p, const struct map *m, char *hex, size_t cap)
{
	const struct tk_perfdata_build_id *b = m->bid_size ? NULL : build_id_of(p, m->path);

	hex[0] = '\0';
	if (m->bid_size)
		tk_elf_build_id_hex(m->bid, m->bid_size, hex, cap);
	else if (b && b->size)
		tk_elf_build_id_hex(b->id, b->size, hex, cap);
}

/* A user map of the process being unwound holding @addr (tk_unwind_find_map_fn). */
static const struct tk_unwind_map *unwind_find_map(void *ctx, uint64_t addr)
{
	struct perf *p = ctx;
	struct map *m = map_find(p, p->unwind_pid, addr);
	int32_t pid = p->unwind_pid;

	/* A thread's maps are its process's, else its parent's (as map_lookup()). */
	for (int depth = 0; !m && depth < 8; depth++) {
		const struct pft_thread *t = pft_thread_get(p->s, pid);

		if (!t || !t->ppid || t->ppid == pid)
			break;
		pid = t->ppid;
		m = map_find(p, pid, addr);
	}
	if (!m)
		return NULL;
	map_build_id_hex(p, m, p->ubid, sizeof(p->ubid));
	p->umap.start = m->start;
	p->umap.end = m->end;
	p->umap.pgoff = m->pgoff;
	p->umap.path = m->path;
	p->umap.build_id = p->ubid;
	p->umap.anon = m->path[0] != '/' && strcmp(m->path, "[vdso]");
	return &p->umap;
}

/*
 * The lowest address of @m that no map of @pidmaps[0..@nearer) nor a map
 * of @own added after it (index above @at) covers, or @m->end: where perf's
 * copy of @m starts once newer maps have cut the overlapped part away.
 */
static uint64_t map_visible_low(struct perf *p, const struct map *m,
				const struct pidmap *const *pidmaps, int nearer,
				const struct pidmap *own, uint32_t at)
{
	uint64_t low = m->start;
	bool moved = true;

	while (moved && low < m->end) {
		moved = false;
		for (int d = 0; d <= nearer && !moved; d++) {
			const struct pidmap *pm = d < nearer ? pidmaps[d] : own;

			for (uint32_t i = d < nearer ? 0 : at + 1; pm && i < pm->n; i++) {
				const struct map *o = &p->maps[pm->idx[i]];

				if (o->start <= low && low < o->end) {
					low = o->end;
					moved = true;
					break;
				}
			}
		}
	}
	return low;
}

/*
 * The lowest start of the unwound process's maps of a file
 * (tk_unwind_file_low_fn): its own maps and those it inherited (its
 * parent's, as unwind_find_map() reads them), each from where the maps
 * added later leave it, as perf's map tree splits an overlapped map. A
 * process that exec'd keeps the maps of the program before until then.
 */
static uint64_t unwind_file_low(void *ctx, const char *path, const char *bid)
{
	struct perf *p = ctx;
	const struct pidmap *chain[9];
	char hex[TK_BUILD_ID_HEX_MAX];
	int32_t pid = p->unwind_pid;
	uint64_t low = 0;
	int depth = 0;

	for (; depth < 9; depth++) {
		const struct pft_thread *t = pft_thread_get(p->s, pid);

		chain[depth] = pidmap_get(p, pid, false);
		if (!t || !t->ppid || t->ppid == pid)
			break;
		pid = t->ppid;
	}
	for (int d = 0; d <= depth && d < 9; d++)
		for (uint32_t i = 0; chain[d] && i < chain[d]->n; i++) {
			const struct map *m = &p->maps[chain[d]->idx[i]];
			uint64_t start;

			if (strcmp(m->path, path) || (low && m->start >= low))
				continue;
			map_build_id_hex(p, m, hex, sizeof(hex));
			if (strcmp(hex, bid))
				continue;
			start = map_visible_low(p, m, chain, d, chain[d], i);
			if (start < m->end && (!low || start < low))
				low = start;
		}
	return low;
}

/*
 * A number that changes whenever a map is added to @pid or to the
 * processes whose maps it uses (unwind_find_map()): the count of them all,
 * as maps are only ever added. The unwinder keeps a process's binaries
 * loaded while it stays.
 */
static uint64_t maps_gen(struct perf *p, int32_t pid)
{
	uint64_t gen = 0;

	for (int depth = 0; depth < 9; depth++) {
		const struct pidmap *pm = pidmap_get(p, pid, false);
		const struct pft_thread *t = pft_thread_get(p->s, pid);

		gen += pm ? pm->n : 0;
		if (!t || !t->ppid || t->ppid == pid)
			break;
		pid = t->ppid;
	}
	return gen;
}

/*
 * The user frames of a --call-graph dwarf sample into @ips (innermost
 * first, at most @max), unwound from its registers and stack copy by the
 * call frame information of the binaries (unwind.c), the frames `tracekit
 * report` and perf script print after the kernel's callchain.
 * Return: their number, 0 when the sample has none or the binaries are
 * not here, or -ENOMEM.
 */
static int unwind_user(struct perf *p, const struct tk_perf_sample *sm, uint64_t *ips, size_t max)
{
	const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(p->pd, (size_t)sm->attr_index);
	struct tk_unwind_sample us;

	if (!e || (e->attr.sample_type & DWARF_FIELDS) != DWARF_FIELDS || !sm->regs_user ||
	    !sm->stack_user || !max || p->unwind_failed)
		return 0;
	if (!p->unwind) {
		/* Without names asked for, the unwinder still finds the binaries. */
		if (!p->sym && !p->usym) {
			if (!p->cache)
				p->cache = tk_cache_open_existing(NULL);
			p->usym = tk_symbolizer_new(p->cache);
		}
		p->unwind = tk_unwind_new(p->sym ? p->sym : p->usym);
		if (!p->unwind) {
			p->unwind_failed = true;
			return -errno; /* tk_unwind_new() said why (libdw missing, memory) */
		}
	}
	memset(&us, 0, sizeof(us));
	us.pid = (int32_t)sm->pid;
	us.tid = (int32_t)sm->tid;
	us.maps_gen = maps_gen(p, (int32_t)sm->pid);
	us.regs_abi = sm->regs_user_abi;
	us.regs_mask = e->attr.sample_regs_user;
	us.regs_nr = sm->regs_user_nr;
	us.regs = sm->regs_user;
	us.stack_size = sm->stack_user_dyn_size < sm->stack_user_size ? sm->stack_user_dyn_size
								      : sm->stack_user_size;
	us.stack = sm->stack_user;
	if (!us.stack_size)
		return 0;
	us.file_low = unwind_file_low;
	p->unwind_pid = (int32_t)sm->pid;
	return tk_unwind_sample(p->unwind, &us, unwind_find_map, p, ips, max);
}

/*
 * The callstack of a sample, root first: perf's callchain, then the user
 * frames unwound from a --call-graph dwarf sample's stack; or the ip alone.
 */
static int stack_intern(struct perf *p, const struct tk_perf_sample *sm, bool kernel_ip,
			uint64_t *out)
{
	uint64_t h = 0x737461636bull, iid, ips[UNWIND_FRAMES];
	size_t n = 0, e;
	bool kernel = kernel_ip, chain = sm->callchain && sm->callchain_nr;
	int r, nu;

	if (chain) {
		for (uint64_t i = 0; i < sm->callchain_nr && n < MAX_STACK; i++) {
			uint64_t ip = tk_perf_load_u64(sm->callchain, i);

			if (ip >= PERF_CONTEXT_MAX) {
				kernel = ip == PERF_CONTEXT_KERNEL;
				if (ip != PERF_CONTEXT_KERNEL && ip != PERF_CONTEXT_USER)
					kernel = false;
				continue;
			}
			r = frame_intern(p, (int32_t)sm->pid, ip, kernel, &p->stack[n]);
			if (r)
				return r;
			n++;
		}
	}
	nu = unwind_user(p, sm, ips, MAX_STACK - n < UNWIND_FRAMES ? MAX_STACK - n : UNWIND_FRAMES);
	if (nu < 0)
		return nu;
	for (int i = 0; i < nu; i++) {
		r = frame_intern(p, (int32_t)sm->pid, ips[i], false, &p->stack[n]);
		if (r)
			return r;
		n++;
	}
	/* A callchain of context marks alone stays empty, as perf script prints it. */
	if (!chain && !nu) {
		r = frame_intern(p, (int32_t)sm->pid, sm->ip, kernel, &p->stack[n]);
		if (r)
			return r;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		h = mix(h, p->stack[i]);
	r = itab_get(&p->q->stacks, mix(h, n), p->q->next_iid, &iid);
	if (r)
		return r;
	if (iid) {
		*out = iid;
		return 0;
	}
	*out = p->q->next_iid++;
	e = pb_begin(&p->idata, ID_CALLSTACKS);
	pb_uint(&p->idata, 1, *out);
	for (size_t i = n; i-- > 0;)
		pb_uint(&p->idata, 2, p->stack[i]);
	pb_end(&p->idata, e);
	return 0;
}

static const char *evsel_name(const struct perf *p, int idx, char *buf, size_t size)
{
	const struct tk_perfdata_evsel *e =
		idx >= 0 ? tk_perfdata_evsel_get(p->pd, (size_t)idx) : NULL;

	if (e)
		return tk_perfdata_evsel_display_name(e, buf, size);
	snprintf(buf, size, "event%d", idx);
	return buf;
}

/*
 * The packet that names the counters of sequence @q (of evsel @idx), after
 * its state was cleared: the event as timebase, the members of its read
 * group as followers.
 */
static int put_defaults(struct perf *p, const struct pseq *q, int idx, uint64_t ts)
{
	struct pft_session *s = p->s;
	size_t pkt = pft_packet_begin(s), d, psd, m;
	char buf[64];

	pb_uint(&s->chunk, PF_PKT_TIMESTAMP, ts);
	d = pb_begin(&s->chunk, PF_PKT_DEFAULTS);
	psd = pb_begin(&s->chunk, DEF_PERF_SAMPLE);
	m = pb_begin(&s->chunk, PSD_TIMEBASE);
	pb_str(&s->chunk, TIMEBASE_NAME, evsel_name(p, idx, buf, sizeof(buf)));
	pb_end(&s->chunk, m);
	for (uint32_t i = 0; i < q->nfollow; i++) {
		m = pb_begin(&s->chunk, PSD_FOLLOWERS);
		pb_str(&s->chunk, FOLLOWER_NAME, evsel_name(p, q->follow[i], buf, sizeof(buf)));
		pb_end(&s->chunk, m);
	}
	pb_end(&s->chunk, psd);
	pb_end(&s->chunk, d);
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_ID, PFT_SEQ_PERF + (uint32_t)idx);
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_CLEARED);
	return pft_packet_end(s, pkt);
}

/*
 * The counts of sample @sm (of sequence @q) into @tb (its event's) and
 * @fol (its read group's other members'). The first sample of an event
 * fixes the followers: the members its read carries besides itself, in
 * their order.
 */
static int sample_counts(struct perf *p, struct pseq *q, const struct tk_perf_sample *sm,
			 uint64_t *tb, uint64_t *fol, uint32_t *nfol)
{
	const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(p->pd, (size_t)sm->attr_index);
	struct tk_read_value rv[READ_MAX];
	uint32_t n = 0, own = 0;
	bool ids;

	*nfol = 0;
	if (!e)
		return 0;
	ids = e->attr.read_format & TK_PERF_READ_ID;
	if (sm->read)
		n = tk_perf_read_values(e->attr.read_format, sm->read, sm->read_size, rv, READ_MAX);
	/* The sample's own value: the one of its id (a group read holds the leader's first). */
	for (uint32_t i = 0; ids && i < n; i++) {
		if (tk_perfdata_evsel_of_id(p->pd, rv[i].id) == sm->attr_index) {
			own = i;
			break;
		}
	}
	if (!q->used) {
		q->used = true;
		for (uint32_t i = 0; i < n; i++) {
			int m = ids ? tk_perfdata_evsel_of_id(p->pd, rv[i].id) : -1;

			if (i != own)
				q->follow[q->nfollow++] = m < 0 ? -1 : m;
		}
	}
	if (n) {
		*tb = rv[own].value;
		for (uint32_t i = 0; i < n && *nfol < q->nfollow; i++)
			if (i != own)
				fol[(*nfol)++] = rv[i].value;
		return 1;
	}
	if (sm->cpu >= q->nsums) {
		size_t k = sm->cpu + 1u > q->nsums * 2 ? sm->cpu + 1u : q->nsums * 2;
		uint64_t *t;

		if (sm->cpu >= 65536)
			return 0;
		t = realloc(q->sums, k * sizeof(*t));
		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		memset(t + q->nsums, 0, (k - q->nsums) * sizeof(*t));
		q->sums = t;
		q->nsums = k;
	}
	q->sums[sm->cpu] += sm->period;
	*tb = q->sums[sm->cpu];
	return 1;
}

static int put_sample(struct perf *p, const struct tk_perf_record *rec,
		      const struct tk_perf_sample *sm)
{
	struct pft_session *s = p->s;
	unsigned int mode = rec->misc & 7;
	uint64_t stack = 0, tb = 0, fol[READ_MAX];
	uint32_t nfol = 0, idx = sm->attr_index > 0 ? (uint32_t)sm->attr_index : 0;
	struct pseq *q = pseq_get(p, idx);
	size_t pkt, m;
	int r, counts;

	if (!q)
		return tk_fail(ENOMEM, "out of memory");
	p->q = q;
	tk_bytebuf_reset(&p->idata);
	r = stack_intern(p, sm, mode == 1 || mode == 3 || mode == 4, &stack);
	if (!r)
		r = tk_bytebuf_error(&p->idata);
	if (r)
		return r;
	counts = sample_counts(p, q, sm, &tb, fol, &nfol);
	if (counts < 0)
		return counts;
	if (q->cleared && (r = put_defaults(p, q, (int)idx, sm->time)))
		return r;
	pkt = pft_packet_begin(s);
	pb_uint(&s->chunk, PF_PKT_TIMESTAMP, sm->time);
	m = pb_begin(&s->chunk, PF_PKT_PERF_SAMPLE);
	pb_uint(&s->chunk, PS_CPU, sm->cpu);
	pb_uint(&s->chunk, PS_PID, sm->pid);
	pb_uint(&s->chunk, PS_TID, sm->tid);
	pb_uint(&s->chunk, PS_CALLSTACK, stack);
	pb_uint(&s->chunk, PS_MODE, mode <= 5 ? mode : 0);
	if (counts) {
		pb_uint(&s->chunk, PS_COUNT, tb);
		for (uint32_t i = 0; i < nfol; i++)
			pb_uint(&s->chunk, PS_FOLLOWER_COUNTS, fol[i]);
	}
	pb_end(&s->chunk, m);
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_ID, PFT_SEQ_PERF + idx);
	/* The defaults packet cleared the state: this one continues it. */
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_NEEDS);
	q->cleared = false;
	if (p->idata.len)
		pb_bytes(&s->chunk, PF_PKT_INTERNED_DATA, p->idata.data, p->idata.len);
	s->st->samples++;
	return pft_packet_end(s, pkt);
}

/*
 * The fixed-offset view of the samples (perfdata-fixed.c), for files whose
 * events all have their fields up to RAW at fixed offsets (perf sched
 * record, perf trace record, tracekit convert; a side-band event beside
 * them too): a tracepoint's sample with RAW and nothing after it then has
 * its time, CPU and payload read from those offsets, the bytes
 * tk_perfdata_parse_sample() would decode, without decoding the rest or
 * searching the reader's id map; fx_tp[] says which events those are.
 * Remade when the events change (a pipe's HEADER_ATTR records); NULL for
 * any other file, and with TK_PFTRACE_NO_FIXED in the environment.
 */
static const struct tk_perf_fixed *fixed_build(struct perf *p, size_t n)
{
	static const uint64_t upto_raw = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP |
					 TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |
					 TK_PERF_SAMPLE_ADDR | TK_PERF_SAMPLE_ID |
					 TK_PERF_SAMPLE_STREAM_ID | TK_PERF_SAMPLE_CPU |
					 TK_PERF_SAMPLE_PERIOD | TK_PERF_SAMPLE_RAW;
	bool any = false;
	bool *tp;

	tk_perf_fixed_free(p->fx);
	p->fx = NULL;
	p->fx_n = n;
	tp = realloc(p->fx_tp, (n ? n : 1) * sizeof(*tp));
	if (!tp)
		return NULL; /* the general way needs no memory of this */
	p->fx_tp = tp;
	/* TK_PFTRACE_NO_FIXED: every sample the general way (tests compare both). */
	if (getenv("TK_PFTRACE_NO_FIXED"))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_evsel *ev = tk_perfdata_evsel_get(p->pd, i);
		uint64_t t = ev ? ev->attr.sample_type : 0;

		tp[i] = ev && ev->attr.type == 2 && !(t & ~upto_raw) && (t & TK_PERF_SAMPLE_RAW);
		any |= tp[i];
	}
	p->fx = any ? tk_perf_fixed_new(p->pd) : NULL;
	return p->fx;
}

static inline const struct tk_perf_fixed *fixed_view(struct perf *p)
{
	size_t n = tk_perfdata_evsel_count(p->pd);

	return __builtin_expect(n == p->fx_n, 1) ? p->fx : fixed_build(p, n);
}

static int perf_record(struct perf *p, const struct tk_perf_record *rec)
{
	struct pft_session *s = p->s;
	struct tk_perf_sample sm;

	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE: {
		const struct tk_perf_fixed *fx = fixed_view(p);
		const struct tk_perfdata_evsel *ev;
		struct tk_perf_fixed_sample fs;

		/* A record the view refuses goes the general way, as before. */
		if (fx && s->set && tk_perf_fixed_read(fx, rec, &fs) == 0 &&
		    p->fx_tp[fs.attr_index])
			return pft_ftrace_record(s, fs.cpu, fs.time, fs.raw, fs.raw_size);

		if (tk_perfdata_parse_sample(p->pd, rec, &sm))
			return 0;
		ev = tk_perfdata_evsel_get(p->pd, (size_t)sm.attr_index);
		if (ev && ev->attr.type == 2) {
			if (!sm.raw || !s->set) {
				s->st->skipped++;
				return 0;
			}
			return pft_ftrace_record(s, sm.cpu, sm.time, sm.raw, sm.raw_size);
		}
		return put_sample(p, rec, &sm);
	}
	case TK_PERF_RECORD_COMM: {
		struct tk_perf_comm c;
		uint64_t ts = 0;
		int r;

		if (tk_perfdata_parse_comm(rec, &c))
			return 0;
		if (tk_perfdata_parse_sample(p->pd, rec, &sm) == 0)
			ts = sm.time;
		r = pft_thread_set(s, (int32_t)c.tid, (int32_t)c.pid, 0, c.comm,
				   strnlen(c.comm, c.len));
		return r ? r : pft_thread_emit(s, (int32_t)c.tid, ts);
	}
	case TK_PERF_RECORD_FORK: {
		struct tk_perf_task t;
		const struct pft_thread *parent;
		char comm[16] = "";
		int r;

		if (tk_perfdata_parse_task(rec, &t))
			return 0;
		/*
		 * A new thread takes its parent's name until it execs (copied
		 * first: adding the thread may move the table).
		 */
		parent = pft_thread_get(s, (int32_t)t.ptid);
		if (parent && !pft_thread_get(s, (int32_t)t.tid))
			memcpy(comm, parent->comm, sizeof(comm));
		r = pft_thread_set(s, (int32_t)t.tid, (int32_t)t.pid,
				   t.pid == t.tid ? (int32_t)t.ppid : 0, comm[0] ? comm : NULL,
				   strnlen(comm, 16));
		return r ? r : pft_thread_emit(s, (int32_t)t.tid, t.time);
	}
	case TK_PERF_RECORD_MMAP:
	case TK_PERF_RECORD_MMAP2: {
		/*
		 * MMAP: pid, tid, start, len, pgoff, filename. MMAP2 puts 32
		 * bytes before the filename: maj, min, ino, ino_generation
		 * (or, with PERF_RECORD_MISC_MMAP_BUILD_ID, the build id's
		 * size byte, 3 reserved, 20 id bytes), prot, flags.
		 */
		const uint8_t *d = (const uint8_t *)rec->data + 8;
		size_t head = rec->type == TK_PERF_RECORD_MMAP ? 32 : 64, left;
		bool has_bid = rec->type == TK_PERF_RECORD_MMAP2 && (rec->misc & (1u << 14));
		uint32_t pid;
		uint64_t start, len, pgoff;

		if (rec->size < 8 + head + 1)
			return 0;
		memcpy(&pid, d, 4);
		memcpy(&start, d + 8, 8);
		memcpy(&len, d + 16, 8);
		memcpy(&pgoff, d + 24, 8);
		left = rec->size - 8 - head;
		return map_add(p, (rec->misc & 7) == 1 ? -1 : (int32_t)pid, start, len, pgoff,
			       (const char *)d + head, strnlen((const char *)d + head, left),
			       has_bid ? d + 36 : NULL, has_bid ? d[32] : 0);
	}
	case TK_PERF_RECORD_LOST:
		if (tk_perfdata_parse_sample(p->pd, rec, &sm) == 0 &&
		    (sm.fields & (1u << 7)) /* PERF_SAMPLE_CPU */)
			return pft_ftrace_lost(s, sm.cpu);
		return 0;
	default:
		return 0;
	}
}

int tk_pftrace_write_perf(struct tk_perfdata *pd, int fd, const char *name,
			  const struct tk_pftrace_opts *opts, struct tk_pftrace_stats *st)
{
	struct tk_pftrace_stats local;
	struct pft_session s;
	struct perf p = {.s = &s, .pd = pd};
	const struct tk_perfdata_host *host = tk_perfdata_get_host(pd);
	const struct tk_tracedata *td = tk_perfdata_get_tracedata(pd);
	struct tk_perf_record rec;
	int r;

	tk_bytebuf_init(&p.idata, false);
	r = pft_session_init(&s, fd, name, opts, st ? st : &local);
	if (r)
		goto out;
	s.perf = &p;
	s.on_piece = on_piece;
	if (s.opts.symbolize) {
		/* Through perf's build-id cache when it exists, as report and profile. */
		p.cache = tk_cache_open_existing(NULL);
		p.sym = tk_symbolizer_new(p.cache);
		if (!p.sym) {
			r = tk_fail(ENOMEM, "out of memory");
			goto out;
		}
	}
	if (td) {
		r = pft_session_set_tracedata(&s, td);
		if (r)
			goto out;
	}
	if (host) {
		s.hostname = host->hostname;
		s.release = host->osrelease;
		s.version = host->version;
		s.machine = host->arch;
		if (host->has_nrcpus)
			s.ncpus_file = host->nr_cpus_avail;
		if (host->has_sample_time)
			s.first_ts = host->sample_time_first;
	}
	s.clock = "perf";
	if (host && host->has_clock_data) {
		/*
		 * perf record -k CLOCK: the samples' clock and one reading of
		 * it beside the time of day. Linux clock ids to Perfetto's:
		 * REALTIME 0, MONOTONIC 1, MONOTONIC_RAW 4, BOOTTIME 7.
		 */
		static const uint32_t builtin[8] = {1, 3, 0, 0, 5, 0, 0, 6};

		if (host->clock_data_clockid < 8 && builtin[host->clock_data_clockid])
			s.clock_id = builtin[host->clock_data_clockid];
		s.has_realtime = true;
		s.realtime_offset = (int64_t)(host->clock_tod_ns - host->clock_clockid_ns);
	}
	r = pft_session_begin(&s);
	while (!r && (r = tk_perfdata_next(pd, &rec)) > 0) {
		r = s.opts.split_size ? pft_session_check_split(&s) : 0;
		if (!r)
			r = perf_record(&p, &rec);
	}
	if (!r)
		r = pft_session_finish(&s);
out:
	tk_perf_fixed_free(p.fx);
	free(p.fx_tp);
	for (size_t i = 0; i < p.nmaps; i++)
		free(p.maps[i].path);
	free(p.maps);
	for (size_t i = 0; i < p.pm_cap; i++)
		free(p.pm[i].idx);
	free(p.pm);
	for (size_t i = 0; i < p.nseqs; i++) {
		pseq_clear(&p.seqs[i]);
		free(p.seqs[i].map_iid);
		free(p.seqs[i].sums);
	}
	free(p.seqs);
	tk_unwind_free(p.unwind);
	tk_symbolizer_free(p.usym);
	tk_symbolizer_free(p.sym);
	tk_cache_close(p.cache);
	tk_bytebuf_release(&p.idata);
	pft_session_release(&s);
	return r;
}
