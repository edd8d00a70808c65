// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * samples: a perf.data's samples as perf report sees them, for the
 * profile (profile.c) and the flame graph (flamegraph.c).
 *
 * Order. perf report delivers records through its ordered-events queue:
 * timed records (samples, and side-band records through their
 * sample_id_all trailer) wait until a FINISHED_ROUND releases those at or
 * before the highest time seen when the previous round ended, sorted by
 * time with ties in arrival order; the end of the file releases the rest;
 * records without a time (the COMM and MMAP records perf synthesizes from
 * /proc) go out at once. The same here, so that a sample is named by the
 * COMM and resolved through the MMAP that perf applied before it. Queued
 * records are copied into one of two arenas: the records a flush leaves
 * are moved to the other, so an arena holds about one round.
 *
 * Threads and maps. A thread's name is the last COMM of its tid; a fork
 * copies the parent's name and, for a new process, its maps; pid 0 is
 * "swapper", an unknown thread ":TID". Names are interned (an id per
 * distinct string) so an analysis keys on a number.
 *
 * Aggregation. Profiles repeat themselves: millions of samples, a few
 * thousand distinct stacks. With opts.aggregate a sample is first keyed
 * by its raw words (event, thread and name, cpu, cpumode, the generation
 * of its process's maps and of the kernel's, ip, callchain): a key met
 * before only adds its period and count; a new one is resolved then, with
 * the maps of that moment, and kept. The distinct samples go to the
 * analysis at the end, in the order each was first met, so an entry is
 * first made by the same sample as in a pass over every one. Resolving
 * and the analysis's own work then cost per distinct stack; per sample
 * remain the read, the ordering queue and one hash of the raw words.
 *
 * Frames. An ip resolves as perf's thread__find_symbol() does, with the
 * rules of perfdata-report.c (perf script's columns): kernel ips through
 * kallsyms (only with the kernel's MMAP record in the file; module ips
 * as "[module]", named from the module's .ko of the recorded build id when
 * one is here: perfdata-maps.c), user ips through the process's MMAP/MMAP2 maps and the
 * mapped file's symbols, each file taken only at the build id the file
 * recorded for it (the symbolizer's rule; otherwise no symbol). The
 * result is interned as a frame (short dso name, symbol, address) and
 * remembered in a direct-mapped cache keyed by the maps' generation and
 * the ip, so a profile of millions of samples resolves each distinct ip
 * about once. A callchain's PERF_CONTEXT markers switch between kernel and
 * user; one perf does not know drops the chain (as perf does); at most
 * max_stack entries are kept. A callchain ip no map holds takes the level
 * of the frame outside it (the sample's own for the outermost), which is
 * what perf's reuse of one addr_location, walking the chain in caller
 * order for the children, gives its [k]/[.] column.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tracekit/cache.h>
#include <tracekit/elf.h>
#include <tracekit/perfdata.h>
#include <tracekit/symbolizer.h>

#include "symbolizer-internal.h"

#include "samples.h"
#include "formats/perfdata-evname.h"
#include "formats/perfdata-maps.h"
#include "internal/array.h"
#include "internal/error.h"
#include "internal/idtable.h"

#define CONTEXT_MAX	  ((uint64_t)-4095)
#define CONTEXT_KERNEL	  ((uint64_t)-128)
#define CONTEXT_USER	  ((uint64_t)-512)
#define CONTEXT_HV	  ((uint64_t)-32)
#define MISC_CPUMODE_MASK 7
#define MISC_KERNEL	  1
#define CACHE_BITS	  16

struct map {
	uint64_t start, end, pgoff;
	char *path;
	const char *dso; /* interned short name */
	char bid[TK_BUILD_ID_HEX_MAX];
	bool identity; /* anonymous memory: looked up as is */
};

struct proc {
	int32_t pid; /* -1: free */
	struct map *maps;
	size_t nmaps;
	uint64_t gen;
};

struct thread {
	int32_t tid;  /* -1: free */
	int64_t comm; /* interned id, -1: none */
};

/* Interned strings: an open-addressed set of ids into @strs. */
struct strset {
	char **strs;
	size_t n, cap;
	uint32_t *slots; /* id + 1; 0 empty */
	size_t nslots;
};

struct frameset {
	struct tk_samples_frame *v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

struct cache_ent {
	uint64_t ip, gen;
	uint32_t frame;
	bool used;
};

struct qent {
	uint64_t time;
	uint64_t off; /* in the arena */
	uint32_t seq;
	struct tk_perf_record rec; /* data re-pointed when delivered */
};

struct arena {
	uint8_t *buf;
	size_t len, cap;
};

struct tk_samples {
	struct tk_samples_opts opts;
	struct tk_perfdata *pd;
	struct tk_cache *cache;
	struct tk_symbolizer *sym;
	tk_samples_fn fn;
	void *ctx;

	struct tk_idtable threads; /* struct thread by tid */
	struct tk_idtable procs;   /* struct proc by pid */
	struct tk_perf_kmods kmods;
	bool kernel_mapped, kernel_loaded;
	uint64_t kernel_start; /* the kernel map's first address: below it, no map */
	uint64_t gens;
	char (*bids)[TK_BUILD_ID_HEX_MAX];
	size_t nbids;

	struct strset comms, dsos;
	struct frameset frames;
	struct cache_ent *fcache;
	uint32_t *chain;
	uint8_t *chain_mode;
	size_t chain_cap;

	struct qent *q, *q2;
	size_t qlen, qcap, q2cap;
	struct arena arenas[2];
	int cur;
	uint32_t seq;
	uint64_t max_ts, next_flush;
	size_t time_off, time_off_evsels; /* sample_time_offset() */

	char **evnames;
	size_t nevsels;
	uint64_t lost;

	/* aggregate mode: distinct samples, keyed by their raw words */
	struct agg *agg;
	size_t nagg, aggcap;
	uint64_t *keys; /* the keys' words */
	size_t nkeys, keycap;
	uint32_t *aframes; /* the resolved chains */
	size_t naframes, aframecap;
	uint32_t *aslots;
	size_t naslots;
	uint64_t *key; /* scratch */
	size_t key_cap;
};

/* A distinct sample (aggregate mode). */
struct agg {
	uint64_t key_off, frames_off;
	uint32_t key_len, nchain;
	uint64_t period, count;
	struct tk_samples_sample s; /* chain pointer filled at delivery */
};

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return h;
}

/* ------------------------------------------------------------ interning */

static int64_t strset_add(struct strset *set, const char *s, size_t n)
{
	size_t j;
	char *copy, **strs;

	if ((set->n + 1) * 2 > set->nslots) {
		size_t ns = set->nslots ? set->nslots * 2 : 256;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < set->n; i++) {
			j = hash_bytes(set->strs[i], strlen(set->strs[i])) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(set->slots);
		set->slots = sl;
		set->nslots = ns;
	}
	j = hash_bytes(s, n) & (set->nslots - 1);
	while (set->slots[j]) {
		const char *o = set->strs[set->slots[j] - 1];

		if (!strncmp(o, s, n) && o[n] == '\0')
			return set->slots[j] - 1;
		j = (j + 1) & (set->nslots - 1);
	}
	strs = tk_array_grow(set->strs, &set->cap, set->n, sizeof(*strs), 64);
	if (!strs)
		return -ENOMEM;
	set->strs = strs;
	copy = strndup(s, n);
	if (!copy)
		return -ENOMEM;
	set->strs[set->n] = copy;
	set->slots[j] = (uint32_t)set->n + 1;
	return (int64_t)set->n++;
}

static void strset_release(struct strset *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->strs[i]);
	free(set->strs);
	free(set->slots);
}

static uint64_t frame_hash(const struct tk_samples_frame *f)
{
	return hash64((uint64_t)(uintptr_t)f->dso * 31 + (uint64_t)(uintptr_t)f->sym * 7 +
		      (f->sym ? 0 : f->addr ^ (f->ip << 7)) + (uint64_t)f->level);
}

static bool frame_eq(const struct tk_samples_frame *a, const struct tk_samples_frame *b)
{
	return a->dso == b->dso && a->sym == b->sym && a->level == b->level &&
	       (a->sym || (a->addr == b->addr && a->ip == b->ip));
}

static int64_t frame_add(struct frameset *set, const struct tk_samples_frame *f)
{
	struct tk_samples_frame *v;
	size_t j;

	if ((set->n + 1) * 2 > set->nslots) {
		size_t ns = set->nslots ? set->nslots * 2 : 4096;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < set->n; i++) {
			j = frame_hash(&set->v[i]) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(set->slots);
		set->slots = sl;
		set->nslots = ns;
	}
	j = frame_hash(f) & (set->nslots - 1);
	while (set->slots[j]) {
		if (frame_eq(&set->v[set->slots[j] - 1], f))
			return set->slots[j] - 1;
		j = (j + 1) & (set->nslots - 1);
	}
	v = tk_array_grow(set->v, &set->cap, set->n, sizeof(*v), 1024);
	if (!v)
		return -ENOMEM;
	set->v = v;
	set->v[set->n] = *f;
	set->slots[j] = (uint32_t)set->n + 1;
	return (int64_t)set->n++;
}

/* ------------------------------------------------------------ threads */

static struct thread *thread_get(struct tk_samples *s, int32_t tid, bool create)
{
	struct thread *t;
	bool added;

	if (!create)
		return tk_idtable_find(&s->threads, sizeof(*t), tid);
	t = tk_idtable_get(&s->threads, sizeof(*t), tid, 1024, &added);
	if (added)
		t->comm = -1;
	return t;
}

int64_t tk_samples_intern_comm(struct tk_samples *s, const char *name, size_t len)
{
	return strset_add(&s->comms, name, strnlen(name, len));
}

static int64_t thread_comm(struct tk_samples *s, int32_t tid)
{
	struct thread *t = thread_get(s, tid, false);
	char buf[24];

	if (t && t->comm >= 0)
		return t->comm;
	if (tid == 0)
		return strset_add(&s->comms, "swapper", 7);
	snprintf(buf, sizeof(buf), ":%" PRId32, tid);
	return strset_add(&s->comms, buf, strlen(buf));
}

/* ------------------------------------------------------------ maps */

static struct proc *proc_get(struct tk_samples *s, int32_t pid, bool create)
{
	struct proc *p;
	bool added;

	if (!create)
		return tk_idtable_find(&s->procs, sizeof(*p), pid);
	p = tk_idtable_get(&s->procs, sizeof(*p), pid, 256, &added);
	if (added)
		p->gen = ++s->gens;
	return p;
}

/* perf's short dso name: the file name, or the whole name of "[x]" and "//anon". */
static const char *short_dso(struct tk_samples *s, const char *path)
{
	const char *base = strrchr(path, '/');
	int64_t id;

	if (path[0] == '[' || !base || !strncmp(path, "//", 2))
		base = path;
	else
		base++;
	id = strset_add(&s->dsos, base, strlen(base));
	return id < 0 ? NULL : s->dsos.strs[id];
}

/*
 * Add a map to @p: a new map hides what it overlaps, and only that (the
 * parts of an older map before and after it stay), as a new mmap() does.
 */
static int proc_add_map(struct tk_samples *s, struct proc *p, uint64_t start, uint64_t len,
			uint64_t pgoff, const char *path, const char *dso, const char *bid,
			bool identity)
{
	uint64_t end = start + len;
	struct map *m;

	if (!len || end < start)
		return 0;
	p->gen = ++s->gens;
	m = realloc(p->maps, (p->nmaps + 3) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	p->maps = m;
	for (size_t i = 0; i < p->nmaps;) {
		struct map *o = &p->maps[i];

		if (o->end <= start || end <= o->start) {
			i++;
			continue;
		}
		if (o->start < start && o->end > end) {
			struct map *after = &p->maps[p->nmaps];

			*after = *o;
			after->path = strdup(o->path);
			if (!after->path)
				return -ENOMEM;
			after->pgoff += end - o->start;
			after->start = end;
			o->end = start;
			p->nmaps++;
			break;
		}
		if (o->start < start) {
			o->end = start;
			i++;
		} else if (o->end > end) {
			o->pgoff += end - o->start;
			o->start = end;
			i++;
		} else {
			free(o->path);
			*o = p->maps[--p->nmaps];
		}
	}
	m = &p->maps[p->nmaps];
	m->path = strdup(path);
	if (!m->path)
		return -ENOMEM;
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->dso = dso;
	snprintf(m->bid, sizeof(m->bid), "%s", bid ? bid : "");
	m->identity = identity;
	p->nmaps++;
	return 0;
}

static int proc_clone(struct tk_samples *s, int32_t ppid, int32_t pid)
{
	struct proc *parent = proc_get(s, ppid, false), *child;
	int ret = 0;

	if (!parent || !parent->nmaps)
		return 0;
	child = proc_get(s, pid, true);
	parent = proc_get(s, ppid, false);
	if (!child || !parent)
		return -ENOMEM;
	for (size_t i = 0; i < parent->nmaps && !ret; i++) {
		const struct map *m = &parent->maps[i];

		ret = proc_add_map(s, child, m->start, m->end - m->start, m->pgoff, m->path, m->dso,
				   m->bid, m->identity);
	}
	return ret;
}

static void proc_release(struct proc *p)
{
	for (size_t i = 0; i < p->nmaps; i++)
		free(p->maps[i].path);
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

/* The build id the file's BUILD_ID feature records for @path, as hex, or "". */
static const char *recorded_build_id(struct tk_samples *s, const char *path)
{
	size_t n = tk_perfdata_build_id_count(s->pd);

	if (n != s->nbids) {
		char(*t)[TK_BUILD_ID_HEX_MAX] = realloc(s->bids, (n ? n : 1) * sizeof(*t));

		if (!t)
			return "";
		s->bids = t;
		for (size_t i = 0; i < n; i++) {
			const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(s->pd, i);

			if (tk_elf_build_id_hex(b->id, b->size, t[i], sizeof(t[i])) <= 0)
				t[i][0] = '\0';
		}
		s->nbids = n;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(s->pd, i);

		if (b->filename && !strcmp(b->filename, path))
			return s->bids[i];
	}
	return "";
}

/* ------------------------------------------------------------ frames */

/* A dso's place in the order dsos were first named (its interning order). */
static uint32_t dso_rank(const struct tk_samples *s, const char *dso)
{
	size_t j = hash_bytes(dso, strlen(dso)) & (s->dsos.nslots - 1);

	while (s->dsos.slots[j]) {
		if (s->dsos.strs[s->dsos.slots[j] - 1] == dso)
			return s->dsos.slots[j] - 1;
		j = (j + 1) & (s->dsos.nslots - 1);
	}
	return UINT32_MAX;
}

/*
 * Resolve @ip of process @pid (@kernel: a kernel address) to a frame
 * id; @level is used when no map holds the ip. Return: id or -ENOMEM.
 */
static int64_t resolve(struct tk_samples *s, int32_t pid, uint64_t ip, bool kernel, char level)
{
	struct tk_samples_frame f = {.ip = ip, .addr = ip, .level = level};
	struct tk_symbol_info info;
	struct proc *p = kernel ? NULL : proc_get(s, pid, false);
	/* A kernel ip's frame changes with the module maps and once kallsyms is loaded. */
	uint64_t gen = kernel ? s->kmods.gen << 1 | (uint64_t)s->kernel_loaded : p ? p->gen : 0;
	uint64_t key =
		hash64(ip ^ (gen << 1) ^ (uint64_t)kernel ^ ((uint64_t)(uint8_t)level << 56));
	struct cache_ent *c = &s->fcache[key & ((1u << CACHE_BITS) - 1)];
	int64_t id;

	if (c->used && c->ip == ip && c->gen == (gen << 9 | (uint64_t)kernel << 8 | (uint8_t)level))
		return c->frame;
	if (kernel) {
		const char *kbid = recorded_build_id(s, "[kernel.kallsyms]");
		bool outside;
		struct tk_perf_kmod *km = tk_perf_kmods_find(&s->kmods, ip, &outside);
		const char *mod = NULL;

		if (km) {
			mod = short_dso(s, km->name);
			if (!mod)
				return -ENOMEM;
			/*
			 * From its .ko when one of its build id is here, else from
			 * kallsyms once the kernel's are loaded; perf shows an
			 * unnamed address within the module, at the offset it
			 * looked up.
			 */
			if (tk_perf_kmod_symbol(s->sym, km, ip, kbid[0] ? kbid : NULL,
						s->kernel_loaded, &info) >= 0 &&
			    info.symbol) {
				f.sym = info.symbol;
				f.start = ip - info.offset;
			}
			f.addr = info.file_offset;
		}
		/* No kernel map in the file, or an ip below it: perf has no map for it. */
		outside |= !mod && (!s->kernel_mapped || ip < s->kernel_start);
		if (s->sym && !outside && !mod &&
		    tk_symbolizer_lookup_file(s->sym, "[kernel.kallsyms]", kbid[0] ? kbid : NULL,
					      ip, &info) == 0) {
			f.sym = info.symbol;
			f.start = ip - info.offset;
			s->kernel_loaded = true;
			/* perf report shows an unnamed address as a vmlinux's file offset. */
			if (!mod)
				f.addr = info.file_offset;
		}
		if (!outside) {
			f.dso = mod ? mod : short_dso(s, "[kernel.kallsyms]");
			f.level = 'k';
		}
	} else {
		for (size_t i = 0; p && i < p->nmaps; i++) {
			const struct map *m = &p->maps[i];

			if (ip < m->start || ip >= m->end)
				continue;
			f.dso = m->dso;
			f.level = '.';
			if (!m->identity)
				f.addr = ip - m->start + m->pgoff;
			if (s->sym && (m->path[0] == '/' || !strcmp(m->path, "[vdso]")) &&
			    tk_symbolizer_lookup_file(s->sym, m->path, m->bid, f.addr, &info) ==
				    0 &&
			    info.symbol) {
				f.sym = info.symbol;
				f.start = f.addr - info.offset;
			}
			break;
		}
	}
	/* A symbol's frame is one whatever the ip in it; an address is its own frame. */
	if (f.sym)
		f.addr = f.ip = 0;
	if (f.dso)
		f.dso_rank = dso_rank(s, f.dso);
	id = frame_add(&s->frames, &f);
	if (id < 0)
		return id;
	c->used = true;
	c->ip = ip;
	c->gen = gen << 9 | (uint64_t)kernel << 8 | (uint8_t)level;
	c->frame = (uint32_t)id;
	return id;
}

/* ------------------------------------------------------------ side-band */

static int on_mmap(struct tk_samples *s, const struct tk_perf_record *rec)
{
	const uint8_t *d = rec->data;
	size_t name_off = rec->type == TK_PERF_RECORD_MMAP ? 40 : 72;
	uint64_t start, len, pgoff;
	uint32_t pid;
	struct proc *p;
	bool identity;
	char *path;
	int ret;

	if (rec->size <= name_off)
		return 0;
	memcpy(&pid, d + 8, 4);
	memcpy(&start, d + 16, 8);
	memcpy(&len, d + 24, 8);
	memcpy(&pgoff, d + 32, 8);
	if ((int32_t)pid < 0) {
		if (rec->size - name_off >= 17 &&
		    !strncmp((const char *)d + name_off, "[kernel.kallsyms]", 17)) {
			s->kernel_mapped = true;
			s->kernel_start = start;
			/* Where a --vmlinux's symbols move to (KASLR). */
			tk_symbolizer_set_kernel_text(s->sym, pgoff);
		}
		/* A module's: its addresses belong to "[name]" (as perf report names it). */
		return tk_perf_kmods_add(&s->kmods, s->pd, (const char *)d + name_off,
					 rec->size - name_off, start, len);
	}
	path = strndup((const char *)d + name_off, rec->size - name_off);
	if (!path)
		return -ENOMEM;
	ret = tk_perf_map_path(rec, (int32_t)pid, &path, &identity);
	p = proc_get(s, (int32_t)pid, true);
	if (!p)
		ret = -ENOMEM;
	if (ret == 0)
		ret = proc_add_map(s, p, start, len, pgoff, path, short_dso(s, path),
				   recorded_build_id(s, path), identity);
	free(path);
	return ret;
}

static int on_fork(struct tk_samples *s, const struct tk_perf_record *rec)
{
	struct tk_perf_task t;
	struct thread *th;
	int64_t comm = -1;

	if (tk_perfdata_parse_task(rec, &t))
		return 0;
	th = thread_get(s, (int32_t)t.ptid, false);
	if (th && th->comm >= 0)
		comm = th->comm;
	else if (t.ptid == 0)
		comm = strset_add(&s->comms, "swapper", 7);
	th = thread_get(s, (int32_t)t.tid, true);
	if (!th || comm == -ENOMEM)
		return -ENOMEM;
	th->comm = comm;
	if (t.pid != t.ppid)
		return proc_clone(s, (int32_t)t.ppid, (int32_t)t.pid);
	return 0;
}

/* Resolve @ps's ip and callchain into @out (its chain in s->chain). */
static int resolve_sample(struct tk_samples *s, const struct tk_perf_sample *ps, bool kernel,
			  struct tk_samples_sample *out)
{
	char level = kernel ? 'k' : '.';
	int64_t id = resolve(s, (int32_t)ps->pid, ps->ip, kernel, level);

	if (id < 0)
		return (int)id;
	out->ip = (uint32_t)id;
	if (out->has_chain && !s->opts.ip_only) {
		uint64_t end = 0, kept = 0;
		bool ok = true, k = kernel, hv = false;
		char lvl = level;

		for (; end < ps->callchain_nr && kept < s->opts.max_stack; end++) {
			uint64_t ip = tk_perf_load_u64(ps->callchain, end);

			if (ip < CONTEXT_MAX)
				kept++;
			else if (ip != CONTEXT_KERNEL && ip != CONTEXT_USER && ip != CONTEXT_HV)
				ok = false;
		}
		if (ok && kept > s->chain_cap) {
			uint32_t *c = realloc(s->chain, kept * sizeof(*c));
			uint8_t *m = realloc(s->chain_mode, kept);

			if (c)
				s->chain = c;
			if (m)
				s->chain_mode = m;
			if (!c || !m)
				return -ENOMEM;
			s->chain_cap = kept;
		}
		/* The mode of each entry first (0 user, 1 kernel, 2 hypervisor)... */
		for (uint64_t i = 0; ok && i < end; i++) {
			uint64_t ip = tk_perf_load_u64(ps->callchain, i);

			if (ip >= CONTEXT_MAX) {
				k = ip == CONTEXT_KERNEL;
				hv = ip == CONTEXT_HV;
				continue;
			}
			s->chain_mode[out->nchain] = hv ? 2 : k;
			s->chain[out->nchain++] = (uint32_t)i;
		}
		/*
		 * ...then the frames from the outermost in: perf walks them in
		 * caller order for the children, and an ip without a map keeps
		 * the level of the frame walked before it.
		 */
		for (uint32_t n = out->nchain; n-- > 0;) {
			uint64_t ip = tk_perf_load_u64(ps->callchain, s->chain[n]);

			if (s->chain_mode[n] == 2) {
				struct tk_samples_frame f = {.ip = ip, .addr = ip, .level = lvl};

				id = frame_add(&s->frames, &f);
			} else {
				id = resolve(s, (int32_t)ps->pid, ip, s->chain_mode[n], lvl);
			}
			if (id < 0)
				return (int)id;
			lvl = s->frames.v[id].level;
			s->chain[n] = (uint32_t)id;
		}
		out->chain = s->chain;
	}
	return 0;
}

static uint64_t words_hash(const uint64_t *w, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h;
}

/*
 * The key of a sample in aggregate mode: what its resolution and its
 * entries depend on. The maps enter through their generation (a new map
 * gives a new key), the kernel's through the module maps' and whether
 * kallsyms was loaded yet (perf's module quirk, see resolve()).
 */
static size_t agg_key(struct tk_samples *s, const struct tk_perf_sample *ps,
		      const struct tk_samples_sample *out, uint16_t misc)
{
	const struct proc *p = proc_get(s, (int32_t)ps->pid, false);
	size_t n = 7, chain = out->has_chain && !s->opts.ip_only ? ps->callchain_nr : 0;

	if (s->key_cap < n + chain) {
		uint64_t *k = realloc(s->key, (n + chain) * sizeof(*k));

		if (!k)
			return 0;
		s->key = k;
		s->key_cap = n + chain;
	}
	s->key[0] = (uint64_t)out->evsel << 32 | out->comm;
	s->key[1] = (uint64_t)ps->pid << 32 | ps->tid;
	s->key[2] = (uint64_t)(uint32_t)out->cpu << 32 | misc | (uint64_t)out->has_chain << 16 |
		    (uint64_t)s->kernel_loaded << 17;
	s->key[3] = p ? p->gen : 0;
	s->key[4] = s->kmods.gen;
	s->key[5] = ps->ip;
	s->key[6] = chain;
	for (size_t i = 0; i < chain; i++)
		s->key[n + i] = tk_perf_load_u64(ps->callchain, i);
	return n + chain;
}

static int agg_add(struct tk_samples *s, const struct tk_perf_sample *ps,
		   struct tk_samples_sample *out, bool kernel, uint16_t misc)
{
	size_t n = agg_key(s, ps, out, misc), j;
	struct agg *a;
	int ret;

	if (!n)
		return -ENOMEM;
	if ((s->nagg + 1) * 2 > s->naslots) {
		size_t ns = s->naslots ? s->naslots * 2 : 4096;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < s->nagg; i++) {
			j = words_hash(s->keys + s->agg[i].key_off, s->agg[i].key_len) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(s->aslots);
		s->aslots = sl;
		s->naslots = ns;
	}
	j = words_hash(s->key, n) & (s->naslots - 1);
	while (s->aslots[j]) {
		a = &s->agg[s->aslots[j] - 1];
		if (a->key_len == n && !memcmp(s->keys + a->key_off, s->key, n * sizeof(*s->key))) {
			a->period += out->period;
			a->count++;
			return 0;
		}
		j = (j + 1) & (s->naslots - 1);
	}
	/* First of its kind: resolved now, with the maps as they are at this sample. */
	ret = resolve_sample(s, ps, kernel, out);
	if (ret)
		return ret;
	while (s->nkeys + n > s->keycap || s->naframes + out->nchain > s->aframecap) {
		if (s->nkeys + n > s->keycap) {
			size_t cap = s->keycap ? s->keycap * 2 : 65536;
			uint64_t *v = realloc(s->keys, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->keys = v;
			s->keycap = cap;
		}
		if (s->naframes + out->nchain > s->aframecap) {
			size_t cap = s->aframecap ? s->aframecap * 2 : 65536;
			uint32_t *v = realloc(s->aframes, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->aframes = v;
			s->aframecap = cap;
		}
	}
	a = tk_array_grow(s->agg, &s->aggcap, s->nagg, sizeof(*a), 1024);
	if (!a)
		return -ENOMEM;
	s->agg = a;
	a = &s->agg[s->nagg];
	memcpy(s->keys + s->nkeys, s->key, n * sizeof(*s->key));
	if (out->nchain)
		memcpy(s->aframes + s->naframes, out->chain, out->nchain * sizeof(*out->chain));
	a->key_off = s->nkeys;
	a->key_len = (uint32_t)n;
	a->frames_off = s->naframes;
	a->nchain = out->nchain;
	a->period = out->period;
	a->count = 1;
	a->s = *out;
	a->s.chain = NULL;
	a->s.raw = NULL;
	a->s.raw_size = 0;
	a->s.time = 0;
	s->nkeys += n;
	s->naframes += out->nchain;
	s->aslots[j] = (uint32_t)++s->nagg;
	return 0;
}

static int agg_deliver(struct tk_samples *s)
{
	for (size_t i = 0; i < s->nagg; i++) {
		struct tk_samples_sample out = s->agg[i].s;
		int ret;

		out.period = s->agg[i].period;
		out.count = s->agg[i].count;
		out.chain = s->agg[i].nchain ? s->aframes + s->agg[i].frames_off : NULL;
		out.nchain = s->agg[i].nchain;
		ret = s->fn(s->ctx, &out);
		if (ret)
			return ret;
	}
	return 0;
}

static int on_sample(struct tk_samples *s, const struct tk_perf_record *rec)
{
	struct tk_samples_sample out;
	struct tk_perf_sample ps;
	const struct tk_perfdata_evsel *es;
	bool kernel = (rec->misc & MISC_CPUMODE_MASK) == MISC_KERNEL;
	int64_t id;
	int ret;

	if (tk_perfdata_parse_sample(s->pd, rec, &ps) || ps.attr_index < 0)
		return 0;
	es = tk_perfdata_evsel_get(s->pd, (size_t)ps.attr_index);
	memset(&out, 0, sizeof(out));
	out.evsel = (size_t)ps.attr_index;
	out.pid = ps.pid;
	out.tid = ps.tid;
	out.cpu = (ps.fields & TK_PERF_SAMPLE_CPU) ? (int32_t)ps.cpu : -1;
	out.time = ps.time;
	out.period = ps.period;
	out.count = 1;
	out.raw = ps.raw;
	out.raw_size = ps.raw_size;
	if (!(ps.fields & TK_PERF_SAMPLE_PERIOD))
		out.period = es && !(es->attr.flags & (1u << 10)) ? es->attr.sample_period : 1;
	id = thread_comm(s, (int32_t)ps.tid);
	if (id < 0)
		return (int)id;
	out.comm = (uint32_t)id;
	if (s->opts.no_symbols)
		return s->fn(s->ctx, &out);
	out.has_chain = ps.fields & TK_PERF_SAMPLE_CALLCHAIN;
	if (s->opts.aggregate)
		return agg_add(s, &ps, &out, kernel, rec->misc & MISC_CPUMODE_MASK);
	ret = resolve_sample(s, &ps, kernel, &out);
	if (ret)
		return ret;
	return s->fn(s->ctx, &out);
}

static int deliver(struct tk_samples *s, const struct tk_perf_record *rec)
{
	struct tk_perf_comm c;
	struct thread *t;
	int64_t id;

	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE:
		return on_sample(s, rec);
	case TK_PERF_RECORD_COMM:
		if (tk_perfdata_parse_comm(rec, &c))
			return 0;
		id = strset_add(&s->comms, c.comm, strnlen(c.comm, c.len));
		t = thread_get(s, (int32_t)c.tid, true);
		if (id < 0 || !t)
			return -ENOMEM;
		t->comm = id;
		return 0;
	case TK_PERF_RECORD_FORK:
		return on_fork(s, rec);
	case TK_PERF_RECORD_MMAP:
	case TK_PERF_RECORD_MMAP2:
		return s->opts.no_symbols ? 0 : on_mmap(s, rec);
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

/* Deliver the queued records at or before @limit (all with @all), oldest first. */
static int flush_queue(struct tk_samples *s, uint64_t limit, bool all)
{
	struct arena *a = &s->arenas[s->cur], *b = &s->arenas[!s->cur];
	bool sorted = true;
	size_t n = 0, kept = 0;
	int ret = 0;

	for (size_t i = 1; i < s->qlen && sorted; i++)
		sorted = qent_cmp(&s->q[i - 1], &s->q[i]) <= 0;
	if (!sorted)
		qsort(s->q, s->qlen, sizeof(*s->q), qent_cmp);
	for (; n < s->qlen && (all || s->q[n].time <= limit); n++) {
		s->q[n].rec.data = a->buf + s->q[n].off;
		ret = deliver(s, &s->q[n].rec);
		if (ret)
			return ret;
	}
	/* The records left move to the other arena, which then becomes the current one. */
	b->len = 0;
	for (size_t i = n; i < s->qlen; i++) {
		struct qent *e = &s->q[i];

		if (b->len + e->rec.size > b->cap) {
			size_t cap = b->cap ? b->cap : 1 << 20;
			uint8_t *nb;

			while (cap < b->len + e->rec.size)
				cap *= 2;
			nb = realloc(b->buf, cap);
			if (!nb)
				return -ENOMEM;
			b->buf = nb;
			b->cap = cap;
		}
		memcpy(b->buf + b->len, a->buf + e->off, e->rec.size);
		e->off = b->len;
		b->len += e->rec.size;
		s->q[kept++] = *e;
	}
	s->qlen = kept;
	a->len = 0;
	s->cur = !s->cur;
	return 0;
}

static int enqueue(struct tk_samples *s, const struct tk_perf_record *rec, uint64_t time)
{
	struct arena *a = &s->arenas[s->cur];
	struct qent *q;

	q = tk_array_grow(s->q, &s->qcap, s->qlen, sizeof(*q), 8192);
	if (!q)
		return -ENOMEM;
	s->q = q;
	if (a->len + rec->size > a->cap) {
		size_t cap = a->cap ? a->cap : 1 << 20;
		uint8_t *nb;

		while (cap < a->len + rec->size)
			cap *= 2;
		nb = realloc(a->buf, cap);
		if (!nb)
			return -ENOMEM;
		a->buf = nb;
		a->cap = cap;
	}
	memcpy(a->buf + a->len, rec->data, rec->size);
	q = &s->q[s->qlen++];
	q->time = time;
	q->off = a->len;
	q->seq = s->seq++;
	q->rec = *rec;
	a->len += rec->size;
	if (time > s->max_ts)
		s->max_ts = time;
	return 0;
}

/*
 * Where every event's samples hold their time, when that is one offset
 * (the fields before TIME are alike in all events): a sample's time is
 * then one load, not a decode (a sample is decoded once, when delivered).
 * 0: decode to find it.
 */
static size_t sample_time_offset(struct tk_samples *s)
{
	const uint64_t before = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
				TK_PERF_SAMPLE_TIME;
	size_t n = tk_perfdata_evsel_count(s->pd);
	uint64_t st0;

	if (n == s->time_off_evsels)
		return s->time_off;
	s->time_off_evsels = n;
	s->time_off = 0;
	if (!n)
		return 0;
	st0 = tk_perfdata_evsel_get(s->pd, 0)->attr.sample_type & before;
	for (size_t i = 1; i < n; i++)
		if ((tk_perfdata_evsel_get(s->pd, i)->attr.sample_type & before) != st0)
			return 0;
	if (!(st0 & TK_PERF_SAMPLE_TIME))
		return 0;
	s->time_off = 8 + 8 * (size_t)__builtin_popcountll(st0 & (TK_PERF_SAMPLE_IDENTIFIER |
								  TK_PERF_SAMPLE_IP |
								  TK_PERF_SAMPLE_TID));
	return s->time_off;
}

static int process(struct tk_samples *s, const struct tk_perf_record *rec)
{
	struct tk_perf_sample ps;
	uint64_t time = 0;
	size_t off;
	int ret;

	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE:
		off = sample_time_offset(s);
		if (off && rec->size >= off + 8) {
			memcpy(&time, (const uint8_t *)rec->data + off, 8);
			if (!time)
				return deliver(s, rec);
			return enqueue(s, rec, time);
		}
		/* fall through */
	case TK_PERF_RECORD_COMM:
	case TK_PERF_RECORD_FORK:
	case TK_PERF_RECORD_EXIT:
	case TK_PERF_RECORD_MMAP:
	case TK_PERF_RECORD_MMAP2:
		if (tk_perfdata_parse_sample(s->pd, rec, &ps) == 0)
			time = ps.time;
		if (!time)
			return deliver(s, rec);
		return enqueue(s, rec, time);
	case TK_PERF_RECORD_LOST:
		if (rec->size >= 24)
			s->lost += tk_perf_load_u64(rec->data, 2);
		return 0;
	case TK_PERF_RECORD_FINISHED_ROUND:
		ret = flush_queue(s, s->next_flush, false);
		s->next_flush = s->max_ts;
		return ret;
	default:
		return 0;
	}
}

static uint64_t read_max_stack(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");
	unsigned long long v = 0;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 127;
}

/* ------------------------------------------------------------ event names */

/*
 * The name perf gives an event: EVENT_DESC's, else the hardware or
 * software event's with the modifiers its attr implies (":u", ":ppH"...),
 * as perf report and script print it (perfdata-evname.c).
 */
static char *event_name(const struct tk_perfdata_evsel *e)
{
	char buf[128];

	return strdup(tk_perfdata_evsel_display_name(e, buf, sizeof(buf)));
}

/* ------------------------------------------------------------ API */

struct tk_samples *tk_samples_new(const struct tk_samples_opts *opts)
{
	struct tk_samples *s = calloc(1, sizeof(*s));

	if (!s)
		return tk_fail_null(ENOMEM, "out of memory");
	if (opts)
		s->opts = *opts;
	if (!s->opts.max_stack)
		s->opts.max_stack = read_max_stack();
	/* perf makes the kernel's dso before any other: it ranks first. */
	if (strset_add(&s->dsos, "[kernel.kallsyms]", 17) < 0) {
		tk_samples_free(s);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	s->fcache = calloc((size_t)1 << CACHE_BITS, sizeof(*s->fcache));
	if (!s->fcache) {
		free(s);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	if (!s->opts.no_symbols) {
		/* Symbols through perf's build-id cache when it exists; a report does not make one.
		 */
		s->cache = tk_cache_open_existing(NULL);
		s->sym = tk_symbolizer_new(s->cache);
		if (s->sym && (tk_symbolizer_set_symfs(s->sym, s->opts.symfs) < 0 ||
			       tk_symbolizer_set_kallsyms(s->sym, s->opts.kallsyms) < 0 ||
			       tk_symbolizer_set_vmlinux(s->sym, s->opts.vmlinux) < 0)) {
			tk_samples_free(s);
			return tk_fail_null(ENOMEM, "out of memory");
		}
	}
	return s;
}

void tk_samples_free(struct tk_samples *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->procs.cap; i++) {
		struct proc *p = tk_idtable_at(&s->procs, sizeof(*p), i);

		if (p->pid >= 0)
			proc_release(p);
	}
	tk_perf_kmods_release(&s->kmods);
	free(s->procs.slots);
	free(s->threads.slots);
	free(s->bids);
	strset_release(&s->comms);
	strset_release(&s->dsos);
	free(s->frames.v);
	free(s->frames.slots);
	free(s->fcache);
	free(s->chain);
	free(s->chain_mode);
	free(s->agg);
	free(s->keys);
	free(s->aframes);
	free(s->aslots);
	free(s->key);
	free(s->q);
	free(s->arenas[0].buf);
	free(s->arenas[1].buf);
	for (size_t i = 0; i < s->nevsels; i++)
		free(s->evnames[i]);
	free(s->evnames);
	tk_symbolizer_free(s->sym);
	tk_cache_close(s->cache);
	free(s);
}

int tk_samples_read(struct tk_samples *s, const char *path, tk_samples_fn fn, void *ctx)
{
	struct tk_perf_record rec;
	int ret;

	s->pd = tk_perfdata_open(path);
	if (!s->pd)
		return -errno;
	s->fn = fn;
	s->ctx = ctx;
	s->nevsels = tk_perfdata_evsel_count(s->pd);
	s->evnames = calloc(s->nevsels ? s->nevsels : 1, sizeof(*s->evnames));
	if (!s->evnames) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->nevsels; i++) {
		const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(s->pd, i);

		s->evnames[i] = e ? event_name(e) : strdup("unknown");
		if (!s->evnames[i]) {
			ret = tk_fail(ENOMEM, "out of memory");
			goto out;
		}
	}
	while ((ret = tk_perfdata_next(s->pd, &rec)) > 0) {
		ret = process(s, &rec);
		if (ret)
			break;
	}
	if (ret == 0)
		ret = flush_queue(s, 0, true);
	if (ret == 0 && s->opts.aggregate)
		ret = agg_deliver(s);
	if (ret == -ENOMEM)
		tk_fail(ENOMEM, "out of memory");
out:
	tk_perfdata_close(s->pd);
	s->pd = NULL;
	return ret;
}

int64_t tk_samples_thread_comm(struct tk_samples *s, int32_t tid)
{
	return thread_comm(s, tid);
}

const struct tk_samples_frame *tk_samples_frame(const struct tk_samples *s, uint32_t id)
{
	return &s->frames.v[id];
}

const char *tk_samples_comm(const struct tk_samples *s, uint32_t id)
{
	return s->comms.strs[id];
}

size_t tk_samples_evsel_count(const struct tk_samples *s)
{
	return s->nevsels;
}

const char *tk_samples_evsel_name(const struct tk_samples *s, size_t i)
{
	return i < s->nevsels ? s->evnames[i] : "unknown";
}

uint64_t tk_samples_lost(const struct tk_samples *s)
{
	return s->lost;
}
