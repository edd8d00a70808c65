// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * profile: `perf report --stdio` (perf 6.1) of a perf.data's samples.
 *
 * The samples come from samples.c in perf's order, each with its thread's
 * name and its ip and callchain as interned frames. Per event, a hash
 * table keyed by the sort keys (comm, pid, cpu, dso, sym; any order)
 * sums the periods: "self" is the period of the samples whose own ip is
 * the entry's; with children (perf's default when the samples have
 * callchains) every entry of a sample's callchain also gets the sample's
 * period in its "children" total, once per sample however often it
 * recurs (perf's he_cache). Memory is one entry per distinct key.
 *
 * Text, as perf's hists__fprintf() writes it:
 *   - "# To display the perf.data header info...", "#", then
 *     "#\n# Total Lost Samples: N\n#\n" once; per event with samples
 *     "# Samples: N[KMG] of event 'NAME'" (the count divided by 1000 while
 *     above 1000, the unit letter or a space), "# Event count (approx.):
 *     TOTAL", "#"; the column titles and dots; "#"; one line per entry;
 *     two newlines. perf then prints a random tip ("# (Tip: ...)"), which
 *     is not reproduced.
 *   - Columns are two spaces apart; percentages "%7.2f%%" of the event's
 *     total period; comm, dso and "Pid:Command" ("%7d:%-*s") are padded to
 *     their width, the symbol ("[k] name", or "[.] 0x%016lx" of the
 *     address in the file when no symbol covers it) only when a column
 *     follows. A column's width is the longest of its title and its values
 *     over all entries, also those --percent-limit hides; a "Pid:Command"
 *     and "Command" value is as long as the thread's last name (perf's
 *     thread__comm_len()); an unresolved symbol makes the dso column at
 *     least 16 wide.
 *   - Order: children, then self period, descending; ties by each sort key
 *     in turn: names ascending (entries without a dso or symbol after),
 *     pid and cpu ascending. With graphs and children, perf first puts a
 *     caller above its callee at equal children totals (entries of one
 *     thread, by the longest chain each holds). Since these comparisons
 *     are not an order, the entries take it from the same three red-black
 *     tree insertions perf makes (perf_order() below).
 *
 * Graphs (perf's default "graph,0.5,caller" with children, callee order
 * without): each shown entry is followed by its callchain tree, as perf's
 * callchain__fprintf_graph() draws it: a single branch holding all of the
 * entry prints bare after "---"; otherwise each branch, largest first
 * (ties in perf's children-tree order: dso, then symbol start, both
 * descending), opens with "--P%--" (P of the event's total) and runs down
 * its frames while no chain ends or forks; "|" columns link the siblings
 * still to come; branches under 0.5% (or --percent-limit) are left out;
 * a blank line ends the graph.
 *
 * Limits: with sort keys without dso, perf's entries_in tree, searched
 * with a comparison that is not an order, can miss an existing entry and
 * make a second one (an address seen in two dsos); the entries then
 * differ from perf's there. PERF_SAMPLE_READ groups, "Trace output" for
 * tracepoint-only files and -g callee with children are not perf's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/analyze.h>
#include <tracekit/filekind.h>
#include <tracekit/outbuf.h>
#include <tracekit/perfdata.h>

#include "analyze-util.h"
#include "samples.h"
#include "internal/array.h"
#include "internal/error.h"

enum key { K_COMM, K_PID, K_DSO, K_SYM, K_CPU };

static const struct {
	const char *name;
	const char *title;
} key_info[] = {
	[K_COMM] = {"comm", "Command"},	    [K_PID] = {"pid", "    Pid:Command"},
	[K_DSO] = {"dso", "Shared Object"}, [K_SYM] = {"sym", "Symbol"},
	[K_CPU] = {"cpu", "CPU"},
};

#define MAX_KEYS 8

/* An entry's key: the fields of the unused sort keys stay zero. */
struct hkey {
	const char *dso;
	const char *sym;
	uint64_t addr;
	int32_t tid;
	int32_t cpu;
	uint32_t comm;
	uint32_t pad;
};

struct hent {
	struct hkey k;
	uint64_t self, acc, nr;
	uint32_t shown_comm; /* the comm shown: sample time (comm key) */
	int32_t thread;	     /* the first sample's tid: its last name sets the width */
	char level;
	bool unresolved;
	uint32_t tree;	    /* root of its callchain trie (graph mode), 0: none */
	uint32_t frame;	    /* the frame that made it (its dso and symbol start) */
	uint32_t max_depth; /* the longest chain appended to it (graph mode) */
};

struct hists {
	struct hent *v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
	uint64_t nr_samples, total;
};

/*
 * Graph mode. The samples are first summed per distinct (event, thread,
 * cpu, ip, callchain): far fewer than samples, and the tallies add up the
 * same. Then each such stack is appended, with its summed period, to the
 * callchain trie of every entry it credits (perf's callchain_append()), a
 * trie node per frame. perf keeps a radix tree (runs of frames per node);
 * the same runs come out of the trie: a node continues its parent's run
 * when the parent has no chain ending at it and no other child.
 */
struct ustack {
	uint32_t off, len; /* ids: evsel, comm, tid, cpu, ip, chain... */
	uint64_t period, nr;
};

struct ustacks {
	uint32_t *ids;
	size_t nids, idcap;
	struct ustack *v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

struct tnode {
	uint32_t frame;	      /* a frame id (samples.c) of the place */
	uint32_t parent;      /* 0: a root */
	uint32_t first, next; /* children list */
	uint32_t nchildren;
	uint64_t cumul, hit; /* periods through or ending at it; ending at it */
};

struct trie {
	struct tnode *v; /* v[0] unused */
	size_t n, cap;
	uint32_t *slots; /* (parent, place) -> node */
	size_t nslots;
};

#define US_HEAD 5 /* evsel, comm, tid, cpu, ip */

/* A tid's last name, for perf's thread__comm_len() and the Pid:Command column. */
struct tcomm {
	int32_t tid;
	uint32_t comm;
};

struct prof {
	const struct tk_profile_opts *o;
	struct tk_samples *s;
	enum key keys[MAX_KEYS];
	size_t nkeys;
	unsigned int used; /* bit per enum key */
	bool children;
	struct hists *h;
	size_t nh;
	struct tcomm *tc;
	size_t ntc, tccap;
	size_t *seen; /* entry indexes of the current sample (children) */
	size_t seen_cap;
	struct tk_outbuf out;
	/* graph mode */
	bool graph, caller;
	struct ustacks us;
	struct trie t;
	uint32_t *order;
	size_t order_cap;
	/* perf_order() */
	struct hists *cur_h;
	struct tk_samples_frame *sym_frame;
};

static void put(struct prof *p, const char *s)
{
	tk_outbuf_write(&p->out, s, strlen(s));
}

static void putf(struct prof *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct prof *p, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(buf)) {
		tk_outbuf_write(&p->out, buf, (size_t)n);
		return;
	}
	{
		char *big = malloc((size_t)n + 1);

		if (!big)
			return;
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		tk_outbuf_write(&p->out, big, (size_t)n);
		free(big);
	}
}

static uint64_t hkey_hash(const struct hkey *k)
{
	uint64_t h = (uint64_t)(uintptr_t)k->dso * 0x9e3779b97f4a7c15ULL;

	h ^= (uint64_t)(uintptr_t)k->sym * 0xc2b2ae3d27d4eb4fULL;
	h ^= k->addr * 0x165667b19e3779f9ULL;
	h ^= ((uint64_t)(uint32_t)k->tid << 32 | (uint32_t)k->cpu) * 0x27d4eb2f165667c5ULL;
	h ^= (uint64_t)k->comm * 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

static int hists_find(struct hists *h, const struct hkey *k, size_t *idx, bool *created)
{
	size_t j;

	*created = false;
	if ((h->n + 1) * 2 > h->nslots) {
		size_t ns = h->nslots ? h->nslots * 2 : 1024;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < h->n; i++) {
			j = hkey_hash(&h->v[i].k) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(h->slots);
		h->slots = sl;
		h->nslots = ns;
	}
	j = hkey_hash(k) & (h->nslots - 1);
	while (h->slots[j]) {
		if (!memcmp(&h->v[h->slots[j] - 1].k, k, sizeof(*k))) {
			*idx = h->slots[j] - 1;
			return 0;
		}
		j = (j + 1) & (h->nslots - 1);
	}
	{
		struct hent *v = tk_array_grow(h->v, &h->cap, h->n, sizeof(*v), 256);

		if (!v)
			return -ENOMEM;
		h->v = v;
	}
	memset(&h->v[h->n], 0, sizeof(h->v[h->n]));
	h->v[h->n].k = *k;
	h->slots[j] = (uint32_t)h->n + 1;
	*idx = h->n++;
	*created = true;
	return 0;
}

/*
 * The key of frame @f of sample @s. Without a symbol, perf keys the
 * sample's own ip by its address in the file but a callchain entry
 * (@chain) by the ip itself.
 */
static void make_key(const struct prof *p, const struct tk_samples_sample *s,
		     const struct tk_samples_frame *f, bool chain, struct hkey *k)
{
	memset(k, 0, sizeof(*k));
	if (p->used & (1u << K_COMM))
		k->comm = s->comm;
	if (p->used & (1u << K_PID))
		k->tid = (int32_t)s->tid;
	if (p->used & (1u << K_CPU))
		k->cpu = s->cpu;
	if (p->used & (1u << K_DSO))
		k->dso = f->dso;
	if (p->used & (1u << K_SYM)) {
		k->sym = f->sym;
		if (!f->sym)
			k->addr = chain ? f->ip : f->addr;
	}
}

static int remember_stack(struct prof *p, const struct tk_samples_sample *s);

static int add_entry(struct prof *p, struct hists *h, const struct tk_samples_sample *s,
		     uint32_t frame, bool self, size_t *idx)
{
	const struct tk_samples_frame *f = tk_samples_frame(p->s, frame);
	struct hkey k;
	bool created;
	struct hent *e;
	int ret;

	make_key(p, s, f, false, &k);
	ret = hists_find(h, &k, idx, &created);
	if (ret)
		return ret;
	e = &h->v[*idx];
	if (created) {
		e->shown_comm = s->comm;
		e->thread = (int32_t)s->tid;
		e->level = f->level;
		e->unresolved = !f->sym;
		e->frame = frame;
	}
	if (self) {
		e->self += s->period;
		e->nr += s->count;
	}
	if (p->children)
		e->acc += s->period;
	return 0;
}

static int on_sample(void *ctx, const struct tk_samples_sample *s)
{
	struct prof *p = ctx;
	struct hists *h;
	size_t idx, nseen = 0;
	int ret;

	if (s->evsel >= p->nh) {
		struct hists *nh = realloc(p->h, (s->evsel + 1) * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		memset(nh + p->nh, 0, (s->evsel + 1 - p->nh) * sizeof(*nh));
		p->h = nh;
		p->nh = s->evsel + 1;
	}
	h = &p->h[s->evsel];
	h->nr_samples += s->count;
	h->total += s->period;
	if (p->graph && s->has_chain) {
		ret = remember_stack(p, s);
		if (ret)
			return ret;
	}
	ret = add_entry(p, h, s, s->ip, true, &idx);
	if (ret || !p->children)
		return ret;
	if (p->seen_cap < s->nchain + 1) {
		size_t *n = realloc(p->seen, (s->nchain + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->seen = n;
		p->seen_cap = s->nchain + 1;
	}
	p->seen[nseen++] = idx;
	/* perf walks the chain in its graph order (callers first by default with children). */
	for (uint32_t n = 0; n < s->nchain; n++) {
		uint32_t i = p->caller ? s->nchain - 1 - n : n;
		const struct tk_samples_frame *f = tk_samples_frame(p->s, s->chain[i]);
		struct hkey k;
		bool created, dup = false;

		make_key(p, s, f, true, &k);
		ret = hists_find(h, &k, &idx, &created);
		if (ret)
			return ret;
		for (size_t j = 0; j < nseen && !dup; j++)
			dup = p->seen[j] == idx;
		if (dup)
			continue;
		if (created) {
			h->v[idx].shown_comm = s->comm;
			h->v[idx].thread = (int32_t)s->tid;
			h->v[idx].level = f->level;
			h->v[idx].unresolved = !f->sym;
			h->v[idx].frame = s->chain[i];
		}
		h->v[idx].acc += s->period;
		p->seen[nseen++] = idx;
	}
	return 0;
}

/* ------------------------------------------------------------ graph */

static uint64_t ids_hash(const uint32_t *v, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ v[i]) * 1099511628211ULL;
	return h ^ (h >> 29);
}

static int ustack_add(struct ustacks *u, const uint32_t *seq, size_t n, uint64_t period)
{
	size_t j;

	if ((u->n + 1) * 2 > u->nslots) {
		size_t ns = u->nslots ? u->nslots * 2 : 4096;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < u->n; i++) {
			j = ids_hash(u->ids + u->v[i].off, u->v[i].len) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(u->slots);
		u->slots = sl;
		u->nslots = ns;
	}
	j = ids_hash(seq, n) & (u->nslots - 1);
	while (u->slots[j]) {
		struct ustack *e = &u->v[u->slots[j] - 1];

		if (e->len == n && !memcmp(u->ids + e->off, seq, n * sizeof(*seq))) {
			e->period += period;
			e->nr++;
			return 0;
		}
		j = (j + 1) & (u->nslots - 1);
	}
	while (u->nids + n > u->idcap) {
		size_t cap = u->idcap ? u->idcap * 2 : 65536;
		uint32_t *v = realloc(u->ids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		u->ids = v;
		u->idcap = cap;
	}
	{
		struct ustack *v = tk_array_grow(u->v, &u->cap, u->n, sizeof(*v), 1024);

		if (!v)
			return -ENOMEM;
		u->v = v;
	}
	memcpy(u->ids + u->nids, seq, n * sizeof(*seq));
	u->v[u->n] = (struct ustack){
		.off = (uint32_t)u->nids, .len = (uint32_t)n, .period = period, .nr = 1};
	u->nids += n;
	u->slots[j] = (uint32_t)u->n + 1;
	u->n++;
	return 0;
}

static int remember_stack(struct prof *p, const struct tk_samples_sample *s)
{
	size_t n = US_HEAD + s->nchain;
	int ret;

	if (p->order_cap < n) {
		uint32_t *v = realloc(p->order, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->order = v;
		p->order_cap = n;
	}
	p->order[0] = (uint32_t)s->evsel;
	p->order[1] = s->comm;
	p->order[2] = s->tid;
	p->order[3] = (uint32_t)s->cpu;
	p->order[4] = s->ip;
	if (s->nchain)
		memcpy(p->order + US_HEAD, s->chain, s->nchain * sizeof(*s->chain));
	ret = ustack_add(&p->us, p->order, n, s->period);
	return ret;
}

/* Two frames are one place of a callchain: same symbol, or same dso and ip (perf's CCKEY_FUNCTION).
 */
static bool same_place(const struct prof *p, uint32_t a, uint32_t b)
{
	const struct tk_samples_frame *x = tk_samples_frame(p->s, a),
				      *y = tk_samples_frame(p->s, b);

	if (a == b)
		return true;
	if (x->sym || y->sym)
		return x->sym == y->sym && x->dso == y->dso;
	return x->dso == y->dso && x->ip == y->ip;
}

static uint64_t place_hash(const struct prof *p, uint32_t parent, uint32_t frame)
{
	const struct tk_samples_frame *f = tk_samples_frame(p->s, frame);
	uint64_t h = (uint64_t)parent * 0x9e3779b97f4a7c15ULL;

	h ^= (uint64_t)(uintptr_t)f->dso * 0xc2b2ae3d27d4eb4fULL;
	h ^= f->sym ? (uint64_t)(uintptr_t)f->sym * 0x165667b19e3779f9ULL : f->ip * 31;
	return h ^ (h >> 31);
}

static int64_t trie_child(struct prof *p, uint32_t parent, uint32_t frame)
{
	struct trie *t = &p->t;
	size_t j;

	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 8192;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 1; i < t->n; i++) {
			if (!t->v[i].parent)
				continue; /* a root: no place */
			j = place_hash(p, t->v[i].parent, t->v[i].frame) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i;
		}
		free(t->slots);
		t->slots = sl;
		t->nslots = ns;
	}
	j = place_hash(p, parent, frame) & (t->nslots - 1);
	while (t->slots[j]) {
		struct tnode *nd = &t->v[t->slots[j]];

		if (nd->parent == parent && same_place(p, nd->frame, frame))
			return t->slots[j];
		j = (j + 1) & (t->nslots - 1);
	}
	{
		struct tnode *v = tk_array_grow(t->v, &t->cap, t->n, sizeof(*v), 4096);

		if (!v)
			return -ENOMEM;
		t->v = v;
	}
	t->v[t->n] = (struct tnode){.frame = frame, .parent = parent};
	if (parent) {
		t->v[t->n].next = t->v[parent].first;
		t->v[parent].first = (uint32_t)t->n;
		t->v[parent].nchildren++;
	}
	t->slots[j] = (uint32_t)t->n;
	return (int64_t)t->n++;
}

/* Append @frames (in the printed order) with @period to the trie of entry @e. */
static int trie_append(struct prof *p, struct hent *e, const uint32_t *frames, size_t n,
		       uint64_t period)
{
	uint32_t node;

	if (!p->t.n)
		p->t.n = 1; /* node 0 means none */
	if (!e->tree) {
		struct tnode *v = tk_array_grow(p->t.v, &p->t.cap, p->t.n, sizeof(*v), 4096);

		if (!v)
			return -ENOMEM;
		p->t.v = v;
		p->t.v[p->t.n] = (struct tnode){.frame = UINT32_MAX};
		e->tree = (uint32_t)p->t.n++;
	}
	node = e->tree;
	p->t.v[node].cumul += period;
	for (size_t i = 0; i < n; i++) {
		int64_t c = trie_child(p, node, frames[i]);

		if (c < 0)
			return (int)c;
		node = (uint32_t)c;
		p->t.v[node].cumul += period;
	}
	p->t.v[node].hit += period;
	return 0;
}

static bool shown(const struct prof *p, const struct hists *h, const struct hent *e);

static int build_graphs(struct prof *p)
{
	uint32_t *seq = NULL;
	size_t seqcap = 0, *seen = NULL;
	int ret = 0;

	for (size_t i = 0; i < p->us.n && !ret; i++) {
		const struct ustack *u = &p->us.v[i];
		const uint32_t *id = p->us.ids + u->off;
		size_t nchain = u->len - US_HEAD, nseen = 0, idx;
		struct tk_samples_sample s = {
			.evsel = id[0],
			.comm = id[1],
			.tid = id[2],
			.cpu = (int32_t)id[3],
			.ip = id[4],
			.period = u->period,
		};
		struct hists *h = &p->h[s.evsel];
		struct hkey k;
		bool created;

		if (seqcap < nchain + 1) {
			uint32_t *v = realloc(seq, (nchain + 1) * sizeof(*v));
			size_t *w = realloc(seen, (nchain + 1) * sizeof(*w));

			if (v)
				seq = v;
			if (w)
				seen = w;
			if (!v || !w) {
				ret = -ENOMEM;
				break;
			}
			seqcap = nchain + 1;
		}
		/* The chain in the printed order: callers first, or the sampled function first. */
		for (size_t j = 0; j < nchain; j++)
			seq[j] = p->caller ? id[US_HEAD + nchain - 1 - j] : id[US_HEAD + j];
		/* The sample's own entry gets the whole chain. */
		make_key(p, &s, tk_samples_frame(p->s, s.ip), false, &k);
		ret = hists_find(h, &k, &idx, &created);
		if (ret)
			break;
		seen[nseen++] = idx;
		if (shown(p, h, &h->v[idx]))
			ret = trie_append(p, &h->v[idx], seq, nchain, u->period);
		if (nchain > h->v[idx].max_depth)
			h->v[idx].max_depth = (uint32_t)nchain;
		if (!p->children)
			continue;
		/* Each other entry of the chain: the chain from it on, at its first place. */
		for (size_t j = 0; j < nchain && !ret; j++) {
			bool dup = false;

			make_key(p, &s, tk_samples_frame(p->s, seq[j]), true, &k);
			ret = hists_find(h, &k, &idx, &created);
			for (size_t q = 0; q < nseen && !dup; q++)
				dup = seen[q] == idx;
			if (ret || dup)
				continue;
			seen[nseen++] = idx;
			if (shown(p, h, &h->v[idx]))
				ret = trie_append(p, &h->v[idx], seq + j, nchain - j, u->period);
			if (nchain - j > h->v[idx].max_depth)
				h->v[idx].max_depth = (uint32_t)(nchain - j);
		}
	}
	free(seq);
	free(seen);
	return ret;
}

/*
 * perf's order of siblings: larger total first; ties in its children
 * tree's order, which is descending by dso (object order, those without
 * a map last), then by symbol start (or ip without a symbol).
 */
static int child_cmp(const void *x, const void *y, void *ctx)
{
	const struct prof *p = ctx;
	const struct tnode *a = &p->t.v[*(const uint32_t *)x], *b = &p->t.v[*(const uint32_t *)y];
	const struct tk_samples_frame *fa = tk_samples_frame(p->s, a->frame);
	const struct tk_samples_frame *fb = tk_samples_frame(p->s, b->frame);
	uint64_t ka, kb;

	if (a->cumul != b->cumul)
		return a->cumul > b->cumul ? -1 : 1;
	if ((fa->dso != NULL) != (fb->dso != NULL))
		return fa->dso ? -1 : 1;
	if (fa->dso_rank != fb->dso_rank)
		return fa->dso_rank > fb->dso_rank ? -1 : 1;
	ka = fa->sym && fb->sym ? fa->start : fa->ip;
	kb = fa->sym && fb->sym ? fb->start : fb->ip;
	return ka > kb ? -1 : ka < kb;
}

/* The children of @node above @min, in print order; *@n of them. NULL on ENOMEM. */
static uint32_t *sorted_children(struct prof *p, uint32_t node, uint64_t min, size_t *n)
{
	uint32_t *v = malloc((p->t.v[node].nchildren + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (uint32_t c = p->t.v[node].first; c; c = p->t.v[c].next)
		if (p->t.v[c].cumul >= min)
			v[(*n)++] = c;
	qsort_r(v, *n, sizeof(*v), child_cmp, p);
	return v;
}

/* The last node of the run that starts at @node (perf's callchain_node). */
static uint32_t run_end(const struct prof *p, uint32_t node)
{
	while (!p->t.v[node].hit && p->t.v[node].nchildren == 1)
		node = p->t.v[node].first;
	return node;
}

static void put_frame_name(struct prof *p, uint32_t frame)
{
	const struct tk_samples_frame *f = tk_samples_frame(p->s, frame);

	if (f->sym)
		put(p, f->sym);
	else
		putf(p, "%#" PRIx64, f->ip);
}

static void put_margin(struct prof *p, int left)
{
	putf(p, "            %*s", left, "");
}

static int graph_level(struct prof *p, uint32_t parent, uint64_t total, uint64_t min, int depth,
		       int mask, int left)
{
	size_t n;
	uint32_t *kids = sorted_children(p, parent, min, &n);
	int new_mask = mask, ret = 0;

	if (!kids)
		return -ENOMEM;
	for (size_t i = 0; i < n && !ret; i++) {
		uint32_t end = run_end(p, kids[i]), nd = kids[i];
		bool first = true;

		if (i + 1 == n)
			new_mask &= ~(1 << (depth - 1));
		/* the separator line keeps the pipes of the older mask */
		put_margin(p, left);
		for (int d = 0; d < depth; d++)
			put(p, (mask & (1 << d)) ? "|          " : "           ");
		put(p, "\n");
		for (;;) {
			put_margin(p, left);
			for (int d = 0; d < depth; d++) {
				put(p, (new_mask & (1 << d)) ? "|" : " ");
				if (first && d == depth - 1)
					putf(p, "--%.2f%%--",
					     total ? p->t.v[kids[i]].cumul * 100.0 / (double)total
						   : 0.0);
				else
					put(p, "          ");
			}
			put_frame_name(p, p->t.v[nd].frame);
			put(p, "\n");
			first = false;
			if (nd == end)
				break;
			nd = p->t.v[nd].first;
		}
		if (depth < 30)
			ret = graph_level(p, end, total, min, depth + 1, new_mask | (1 << depth),
					  left);
	}
	free(kids);
	return ret;
}

/* perf's callchain__fprintf_graph() of entry @e: the graph and a blank line, or nothing. */
static int print_graph(struct prof *p, const struct hists *h, const struct hent *e)
{
	double minp = p->o->percent_limit > 0 ? p->o->percent_limit : 0.5;
	uint64_t min = (uint64_t)((double)h->total * (minp / 100));
	uint64_t parent = p->children ? e->acc : e->self;
	uint32_t root = e->tree, *kids;
	bool printed = false;
	size_t n;
	int left = 0, ret;

	if (!root)
		return 0;
	kids = sorted_children(p, root, min, &n);
	if (!kids)
		return -ENOMEM;
	/* One branch holding all of the entry: its run is printed bare, after "---". */
	if (n == 1 && p->t.v[kids[0]].cumul == parent) {
		uint32_t nd = kids[0], end = run_end(p, nd);
		/* With a sort starting at sym, the first frame is the entry itself. */
		bool skip = p->o->sort && !strncmp(p->o->sort, "sym", 3);

		for (;;) {
			if (skip) {
				skip = false;
			} else {
				put_margin(p, left);
				if (!printed) {
					put(p, "|\n");
					put_margin(p, left);
					put(p, "---");
					left += 3;
					printed = true;
				}
				put_frame_name(p, p->t.v[nd].frame);
				put(p, "\n");
			}
			if (nd == end)
				break;
			nd = p->t.v[nd].first;
		}
		root = end;
		free(kids);
		kids = sorted_children(p, root, min, &n);
		if (!kids)
			return -ENOMEM;
	}
	free(kids);
	ret = graph_level(p, root, h->total, min, 1, 1, left);
	if (ret)
		return ret;
	if (printed || n)
		put(p, "\n");
	return 0;
}

/* ------------------------------------------------------------ sort keys */

static int parse_keys(struct prof *p, const char *spec)
{
	const char *c = spec && *spec ? spec : "comm,dso,sym";

	while (*c) {
		size_t n = strcspn(c, ", ");
		size_t k;

		if (!n) {
			c++;
			continue;
		}
		for (k = 0; k < sizeof(key_info) / sizeof(key_info[0]); k++)
			if (strlen(key_info[k].name) == n && !strncmp(c, key_info[k].name, n))
				break;
		/* perf takes "symbol" for sym too */
		if (k == sizeof(key_info) / sizeof(key_info[0]) && n == 6 &&
		    !strncmp(c, "symbol", 6))
			k = K_SYM;
		if (k == sizeof(key_info) / sizeof(key_info[0]))
			return tk_fail(EINVAL, "unknown sort key '%.*s' (comm, pid, dso, sym, cpu)",
				       (int)n, c);
		if (!(p->used & (1u << k))) {
			if (p->nkeys == MAX_KEYS)
				return tk_fail(EINVAL, "too many sort keys");
			p->keys[p->nkeys++] = (enum key)k;
			p->used |= 1u << k;
		}
		c += n;
	}
	if (!p->nkeys)
		return tk_fail(EINVAL, "no sort key");
	return 0;
}

/* ------------------------------------------------------------ perf's order */

/*
 * perf orders the entries by inserting them into red-black trees three
 * times: into hists->entries_in as samples create them (hist_entry__cmp),
 * from there into the collapsed tree (the same comparisons), and from
 * there into the output tree (hist_entry__sort: totals, then the sort
 * keys). Its comparisons are not an order (an entry without a symbol is
 * compared by address with another without one, but by dso and presence
 * with one that has a symbol; at equal children totals two entries of one
 * thread compare by chain depth, two of different threads are equal), so
 * where an entry lands depends on the path down the tree. The same trees,
 * with the same insertion and rebalancing (the classic red-black insert,
 * as the kernel's rbtree does it), put the entries in perf's order.
 */
struct rbt {
	uint32_t *l, *r, *up; /* node i+1 is entry i; 0 is nil */
	bool *red;
	uint32_t root;
};

static void rb_rotate(struct rbt *t, uint32_t x, bool left)
{
	uint32_t *a = left ? t->l : t->r, *b = left ? t->r : t->l;
	uint32_t y = b[x];

	b[x] = a[y];
	if (a[y])
		t->up[a[y]] = x;
	t->up[y] = t->up[x];
	if (!t->up[x])
		t->root = y;
	else if (x == t->l[t->up[x]])
		t->l[t->up[x]] = y;
	else
		t->r[t->up[x]] = y;
	a[y] = x;
	t->up[x] = y;
}

static void rb_fix(struct rbt *t, uint32_t z)
{
	while (t->up[z] && t->red[t->up[z]]) {
		uint32_t pz = t->up[z], g = t->up[pz];
		bool pleft = pz == t->l[g];
		uint32_t u = pleft ? t->r[g] : t->l[g];

		if (u && t->red[u]) {
			t->red[pz] = t->red[u] = false;
			t->red[g] = true;
			z = g;
			continue;
		}
		if (z == (pleft ? t->r[pz] : t->l[pz])) {
			z = pz;
			rb_rotate(t, z, pleft);
			pz = t->up[z];
			g = t->up[pz];
		}
		t->red[pz] = false;
		t->red[g] = true;
		rb_rotate(t, g, !pleft);
	}
	t->red[t->root] = false;
}

static int64_t cmp_null(const void *l, const void *r)
{
	if (!l && !r)
		return 0;
	return !l ? -1 : 1;
}

/* _sort__dso_cmp(map_l, map_r) on the dsos' short names */
static int64_t dso_cmp(const char *l, const char *r)
{
	if (!l || !r)
		return cmp_null(r, l);
	return strcmp(l, r);
}

/* hist_entry__cmp(@x, @y): the sort keys' se_cmp, as perf 6.1 has them. */
static int64_t perf_cmp(const struct prof *p, const struct hent *x, const struct hent *y)
{
	int64_t c = 0;

	for (size_t i = 0; i < p->nkeys && !c; i++) {
		switch (p->keys[i]) {
		case K_COMM:
			c = strcmp(tk_samples_comm(p->s, y->k.comm),
				   tk_samples_comm(p->s, x->k.comm));
			break;
		case K_PID:
			c = (int64_t)y->k.tid - x->k.tid;
			break;
		case K_CPU:
			c = (int64_t)y->k.cpu - x->k.cpu;
			break;
		case K_DSO:
			c = dso_cmp(y->k.dso, x->k.dso);
			break;
		case K_SYM: {
			const struct tk_samples_frame *fx = &p->sym_frame[x - p->cur_h->v];
			const struct tk_samples_frame *fy = &p->sym_frame[y - p->cur_h->v];

			if (!x->k.sym && !y->k.sym) {
				c = (int64_t)(y->k.addr - x->k.addr);
				break;
			}
			/* perf compares the dsos here whatever the keys */
			c = dso_cmp(y->k.dso ? y->k.dso : fy->dso, x->k.dso ? x->k.dso : fx->dso);
			if (c)
				break;
			if (!x->k.sym || !y->k.sym)
				c = cmp_null(x->k.sym, y->k.sym);
			else if (x->k.sym != y->k.sym)
				c = (int64_t)(fy->start - fx->start);
			break;
		}
		}
	}
	return c;
}

/* hist_entry__sort(@a, @b): > 0 puts @a (the new entry) before @b. */
static int64_t perf_sort(const struct prof *p, const struct hent *a, const struct hent *b)
{
	if (p->children) {
		if (a->acc != b->acc)
			return a->acc > b->acc ? 1 : -1;
		if (p->graph && a->thread == b->thread && a->max_depth != b->max_depth) {
			int64_t d = (int64_t)b->max_depth - a->max_depth;

			return p->caller ? -d : d;
		}
	}
	if (a->self != b->self)
		return a->self > b->self ? 1 : -1;
	for (size_t i = 0; i < p->nkeys; i++) {
		int64_t c = 0;

		switch (p->keys[i]) {
		case K_COMM:
			c = strcmp(tk_samples_comm(p->s, b->k.comm),
				   tk_samples_comm(p->s, a->k.comm));
			break;
		case K_PID:
			c = (int64_t)b->k.tid - a->k.tid;
			break;
		case K_CPU:
			c = (int64_t)b->k.cpu - a->k.cpu;
			break;
		case K_DSO:
			c = dso_cmp(b->k.dso, a->k.dso);
			break;
		case K_SYM:
			if (!a->k.sym || !b->k.sym)
				c = cmp_null(a->k.sym, b->k.sym);
			else
				c = strcmp(b->k.sym, a->k.sym);
			break;
		}
		if (c)
			return c;
	}
	return 0;
}

/* Insert @n entries in the order @in into a fresh tree; their in-order into @out. */
static void rb_pass(struct prof *p, struct rbt *t, const uint32_t *in, uint32_t *out, size_t n,
		    bool output)
{
	const struct hent *v = p->cur_h->v;
	size_t k = 0;
	uint32_t x;

	memset(t->l, 0, (n + 1) * sizeof(*t->l));
	memset(t->r, 0, (n + 1) * sizeof(*t->r));
	memset(t->up, 0, (n + 1) * sizeof(*t->up));
	t->root = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t z = in[i] + 1, y = 0;
		bool left = false;

		x = t->root;
		while (x) {
			y = x;
			left = output ? perf_sort(p, &v[z - 1], &v[x - 1]) > 0
				      : perf_cmp(p, &v[x - 1], &v[z - 1]) < 0;
			x = left ? t->l[x] : t->r[x];
		}
		t->up[z] = y;
		t->red[z] = true;
		if (!y)
			t->root = z;
		else if (left)
			t->l[y] = z;
		else
			t->r[y] = z;
		rb_fix(t, z);
	}
	/* in-order walk without a stack: down left, then successor by parent links */
	x = t->root;
	while (x && t->l[x])
		x = t->l[x];
	while (x) {
		out[k++] = x - 1;
		if (t->r[x]) {
			x = t->r[x];
			while (t->l[x])
				x = t->l[x];
		} else {
			while (t->up[x] && x == t->r[t->up[x]])
				x = t->up[x];
			x = t->up[x];
		}
	}
}

/* Reorder @h's entries as perf prints them. */
static int perf_order(struct prof *p, struct hists *h)
{
	size_t n = h->n;
	struct rbt t = {0};
	uint32_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
	struct hent *sorted = malloc((n + 1) * sizeof(*sorted));
	int ret = -ENOMEM;

	t.l = calloc(n + 1, sizeof(*t.l));
	t.r = calloc(n + 1, sizeof(*t.r));
	t.up = calloc(n + 1, sizeof(*t.up));
	t.red = calloc(n + 1, sizeof(*t.red));
	p->sym_frame = calloc(n + 1, sizeof(*p->sym_frame));
	if (!a || !b || !sorted || !t.l || !t.r || !t.up || !t.red || !p->sym_frame)
		goto out;
	p->cur_h = h;
	for (size_t i = 0; i < n; i++) {
		a[i] = (uint32_t)i;
		p->sym_frame[i] = *tk_samples_frame(p->s, h->v[i].frame);
	}
	rb_pass(p, &t, a, b, n, false); /* entries_in, in creation order */
	rb_pass(p, &t, b, a, n, false); /* the collapsed tree */
	rb_pass(p, &t, a, b, n, true);	/* the output tree */
	for (size_t i = 0; i < n; i++)
		sorted[i] = h->v[b[i]];
	memcpy(h->v, sorted, n * sizeof(*sorted));
	ret = 0;
out:
	free(a);
	free(b);
	free(sorted);
	free(t.l);
	free(t.r);
	free(t.up);
	free(t.red);
	free(p->sym_frame);
	p->sym_frame = NULL;
	p->cur_h = NULL;
	return ret;
}

/* ------------------------------------------------------------ output */

static int32_t tid_comm(const struct prof *p, int32_t tid);

static int tcomm_cmp(const void *a, const void *b)
{
	const struct tcomm *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int32_t tid_comm(const struct prof *p, int32_t tid)
{
	struct tcomm key = {.tid = tid}, *f;

	f = p->ntc ? bsearch(&key, p->tc, p->ntc, sizeof(*p->tc), tcomm_cmp) : NULL;
	return f ? (int32_t)f->comm : -1;
}

/* The name a thread's entry shows: its last (perf's thread__comm_str()). */
static const char *thread_name(const struct prof *p, const struct hent *e)
{
	int32_t c = tid_comm(p, e->thread);

	return tk_samples_comm(p->s, c >= 0 ? (uint32_t)c : e->shown_comm);
}

static void column_widths(const struct prof *p, const struct hists *h, int *w)
{
	for (size_t i = 0; i < p->nkeys; i++)
		w[i] = (int)strlen(key_info[p->keys[i]].title);
	for (size_t e = 0; e < h->n; e++) {
		const struct hent *en = &h->v[e];

		for (size_t i = 0; i < p->nkeys; i++) {
			int len = 0;

			switch (p->keys[i]) {
			case K_COMM:
				len = (int)strlen(thread_name(p, en));
				break;
			case K_PID:
				len = (int)strlen(thread_name(p, en)) + 8;
				break;
			case K_CPU:
				len = 3;
				break;
			case K_DSO:
				len = en->k.dso ? (int)strlen(en->k.dso) : 0;
				if (en->unresolved && (p->used & (1u << K_SYM)) && len < 16)
					len = 16;
				break;
			case K_SYM:
				len = en->k.sym ? (int)strlen(en->k.sym) + 4 : 16 + 4 + 2;
				break;
			}
			if (len > w[i])
				w[i] = len;
		}
	}
	/* An unresolved symbol widens the dso column to 16 even when no entry has that dso. */
	for (size_t e = 0; e < h->n; e++) {
		if (!h->v[e].unresolved || !(p->used & (1u << K_SYM)))
			continue;
		for (size_t i = 0; i < p->nkeys; i++)
			if (p->keys[i] == K_DSO && w[i] < 16)
				w[i] = 16;
		break;
	}
}

static void print_entry(struct prof *p, const struct hists *h, const struct hent *e, const int *w)
{
	char buf[64];

	if (p->children)
		putf(p, "  %7.2f%%", h->total ? 100.0 * (double)e->acc / (double)h->total : 0.0);
	putf(p, "  %7.2f%%", h->total ? 100.0 * (double)e->self / (double)h->total : 0.0);
	for (size_t i = 0; i < p->nkeys; i++) {
		bool last = i + 1 == p->nkeys;

		put(p, "  ");
		switch (p->keys[i]) {
		case K_COMM:
			putf(p, "%-*.*s", w[i], w[i], tk_samples_comm(p->s, e->k.comm));
			break;
		case K_PID:
			putf(p, "%7d:%-*.*s", e->k.tid, w[i] - 8, w[i] - 8, thread_name(p, e));
			break;
		case K_CPU:
			putf(p, "%*.*d", w[i], 3, e->k.cpu);
			break;
		case K_DSO:
			putf(p, "%-*.*s", w[i], w[i], e->k.dso ? e->k.dso : "[unknown]");
			break;
		case K_SYM: {
			int n;

			if (e->k.sym)
				n = snprintf(buf, sizeof(buf), "[%c] ", e->level);
			else
				n = snprintf(buf, sizeof(buf), "[%c] %-#.*" PRIx64, e->level, 16,
					     e->k.addr);
			put(p, buf);
			if (e->k.sym) {
				put(p, e->k.sym);
				n += (int)strlen(e->k.sym);
			}
			if (!last && n < w[i])
				putf(p, "%*s", w[i] - n, "");
			break;
		}
		}
	}
	put(p, "\n");
}

static bool shown(const struct prof *p, const struct hists *h, const struct hent *e)
{
	double v = (double)(p->children ? e->acc : e->self);
	float pct = h->total ? (float)(v * 100.0 / (double)h->total) : 0.0f;

	return pct >= (float)p->o->percent_limit;
}

static void print_json(struct prof *p)
{
	bool first_ev = true;

	putf(p, "{\"lost_samples\":%" PRIu64 ",\"children\":%s,\"sort\":[", tk_samples_lost(p->s),
	     p->children ? "true" : "false");
	for (size_t i = 0; i < p->nkeys; i++)
		putf(p, "%s\"%s\"", i ? "," : "", key_info[p->keys[i]].name);
	put(p, "],\"events\":[");
	for (size_t ev = 0; ev < p->nh; ev++) {
		const struct hists *h = &p->h[ev];
		bool first = true;

		if (!h->nr_samples)
			continue;
		putf(p, "%s{\"name\":", first_ev ? "" : ",");
		first_ev = false;
		tk_an_json_str(&p->out, tk_samples_evsel_name(p->s, ev));
		putf(p, ",\"samples\":%" PRIu64 ",\"event_count\":%" PRIu64 ",\"entries\":[",
		     h->nr_samples, h->total);
		for (size_t i = 0; i < h->n; i++) {
			const struct hent *e = &h->v[i];

			if (!shown(p, h, e))
				continue;
			putf(p, "%s{", first ? "" : ",");
			first = false;
			if (p->children)
				putf(p, "\"children\":%.4f,\"children_period\":%" PRIu64 ",",
				     100.0 * (double)e->acc / (double)h->total, e->acc);
			putf(p, "\"overhead\":%.4f,\"period\":%" PRIu64 ",\"samples\":%" PRIu64,
			     100.0 * (double)e->self / (double)h->total, e->self, e->nr);
			for (size_t k = 0; k < p->nkeys; k++) {
				switch (p->keys[k]) {
				case K_COMM:
					put(p, ",\"comm\":");
					tk_an_json_str(&p->out, tk_samples_comm(p->s, e->k.comm));
					break;
				case K_PID:
					putf(p, ",\"pid\":%d,\"thread_comm\":", e->k.tid);
					tk_an_json_str(&p->out, thread_name(p, e));
					break;
				case K_CPU:
					putf(p, ",\"cpu\":%d", e->k.cpu);
					break;
				case K_DSO:
					put(p, ",\"dso\":");
					if (e->k.dso)
						tk_an_json_str(&p->out, e->k.dso);
					else
						put(p, "null");
					break;
				case K_SYM:
					putf(p, ",\"kernel\":%s,\"symbol\":",
					     e->level == 'k' ? "true" : "false");
					if (e->k.sym)
						tk_an_json_str(&p->out, e->k.sym);
					else
						putf(p, "null,\"address\":\"0x%" PRIx64 "\"",
						     e->k.addr);
					break;
				}
			}
			put(p, "}");
		}
		put(p, "]}");
	}
	put(p, "]}\n");
}

static int print_text(struct prof *p)
{
	put(p, "# To display the perf.data header info, please use --header/--header-only "
	       "options.\n#\n");
	putf(p, "#\n# Total Lost Samples: %" PRIu64 "\n#\n", tk_samples_lost(p->s));
	for (size_t ev = 0; ev < p->nh; ev++) {
		const struct hists *h = &p->h[ev];
		uint64_t n = h->nr_samples;
		char unit = ' ';
		int w[MAX_KEYS];

		if (!n)
			continue;
		/* perf's convert_unit() */
		if (n > 1000) {
			n /= 1000;
			unit = 'K';
		}
		if (n > 1000) {
			n /= 1000;
			unit = 'M';
		}
		if (n > 1000) {
			n /= 1000;
			unit = 'G';
		}
		putf(p, "# Samples: %" PRIu64 "%c of event '%s'\n", n, unit,
		     tk_samples_evsel_name(p->s, ev));
		putf(p, "# Event count (approx.): %" PRIu64 "\n#\n", h->total);
		column_widths(p, h, w);
		put(p, p->children ? "# Children      Self" : "# Overhead");
		for (size_t i = 0; i < p->nkeys; i++)
			putf(p, "  %-*s", w[i], key_info[p->keys[i]].title);
		put(p, p->children ? "\n# ........  ........" : "\n# ........");
		for (size_t i = 0; i < p->nkeys; i++) {
			put(p, "  ");
			for (int d = 0; d < w[i]; d++)
				put(p, ".");
		}
		put(p, "\n#\n");
		for (size_t i = 0; i < h->n; i++) {
			if (!shown(p, h, &h->v[i]))
				continue;
			print_entry(p, h, &h->v[i], w);
			if (p->graph) {
				int ret = print_graph(p, h, &h->v[i]);

				if (ret)
					return ret;
			}
		}
		put(p, "\n\n");
	}
	return 0;
}

static int tc_collect(struct prof *p)
{
	/* The last name of every thread that has an entry. */
	for (size_t ev = 0; ev < p->nh; ev++) {
		for (size_t i = 0; i < p->h[ev].n; i++) {
			struct tcomm *t = tk_array_grow(p->tc, &p->tccap, p->ntc, sizeof(*t), 256);

			if (!t)
				return -ENOMEM;
			p->tc = t;
			p->tc[p->ntc].tid = p->h[ev].v[i].thread;
			p->tc[p->ntc].comm = 0;
			p->ntc++;
		}
	}
	if (p->ntc)
		qsort(p->tc, p->ntc, sizeof(*p->tc), tcomm_cmp);
	{
		size_t k = 0;

		for (size_t i = 0; i < p->ntc; i++)
			if (!k || p->tc[k - 1].tid != p->tc[i].tid)
				p->tc[k++] = p->tc[i];
		p->ntc = k;
	}
	for (size_t i = 0; i < p->ntc; i++) {
		int64_t c = tk_samples_thread_comm(p->s, p->tc[i].tid);

		if (c < 0)
			return (int)c;
		p->tc[i].comm = (uint32_t)c;
	}
	return 0;
}

int tk_profile_run(const char *path, const struct tk_profile_opts *opts)
{
	struct tk_samples_opts so = {0};
	struct prof p;
	int ret;

	if (!opts)
		return tk_fail(EINVAL, "no profile options");
	memset(&p, 0, sizeof(p));
	p.o = opts;
	ret = parse_keys(&p, opts->sort);
	if (ret)
		return ret;
	if (tk_filekind_of(path) == TK_FILE_DAT)
		return tk_fail(ENOENT,
			       "%s: a trace-cmd .dat holds no samples: profile reads a perf.data "
			       "(flamegraph reads a .dat's stack traces)",
			       path);
	so.symfs = opts->symfs;
	so.kallsyms = opts->kallsyms;
	so.vmlinux = opts->vmlinux;
	so.aggregate = true;
	/* Without children or graphs only the sampled ips matter, as perf reads them then. */
	so.ip_only = !(opts->flags & TK_PROFILE_CHILDREN) &&
		     (!(opts->flags & TK_PROFILE_GRAPH) || (opts->flags & TK_PROFILE_JSON));
	p.s = tk_samples_new(&so);
	if (!p.s)
		return -errno;
	ret = tk_outbuf_init(&p.out, opts->fd, 0);
	if (ret) {
		tk_samples_free(p.s);
		return ret;
	}
	p.children = opts->flags & TK_PROFILE_CHILDREN;
	p.graph = (opts->flags & TK_PROFILE_GRAPH) && !(opts->flags & TK_PROFILE_JSON);
	/* perf's default order: callers with children, the sampled function first without. */
	p.caller = opts->flags & TK_PROFILE_CALLER   ? true
		   : opts->flags & TK_PROFILE_CALLEE ? false
						     : p.children;
	ret = tk_samples_read(p.s, path, on_sample, &p);
	if (ret == 0)
		ret = tc_collect(&p);
	if (ret == 0) {
		if (p.graph)
			ret = build_graphs(&p);
	}
	if (ret == 0) {
		for (size_t ev = 0; ev < p.nh && !ret; ev++)
			ret = perf_order(&p, &p.h[ev]);
	}
	if (ret == 0) {
		if (opts->flags & TK_PROFILE_JSON)
			print_json(&p);
		else
			ret = print_text(&p);
		tk_outbuf_flush(&p.out);
		if (!ret)
			ret = p.out.error;
	}
	if (ret == -ENOMEM)
		tk_fail(ENOMEM, "out of memory");
	tk_outbuf_release(&p.out);
	for (size_t ev = 0; ev < p.nh; ev++) {
		free(p.h[ev].v);
		free(p.h[ev].slots);
	}
	free(p.h);
	free(p.tc);
	free(p.seen);
	free(p.order);
	free(p.us.ids);
	free(p.us.v);
	free(p.us.slots);
	free(p.t.v);
	free(p.t.slots);
	tk_samples_free(p.s);
	return ret;
}

int tk_profile_has_callchains(const char *path)
{
	/* perf turns children on by default when an event records callchains. */
	struct tk_perfdata *pd;
	int ret = 0;

	if (tk_filekind_of(path) == TK_FILE_DAT)
		return 0;
	pd = tk_perfdata_open(path);
	if (!pd)
		return -errno;
	/* perf reading a pipe decides before the events arrive (see analyze.h). */
	if (tk_perfdata_get_info(pd)->pipe)
		ret = 2;
	for (size_t i = 0; !ret && i < tk_perfdata_evsel_count(pd); i++)
		if (tk_perfdata_evsel_get(pd, i)->attr.sample_type & TK_PERF_SAMPLE_CALLCHAIN)
			ret = 1;
	tk_perfdata_close(pd);
	return ret;
}
