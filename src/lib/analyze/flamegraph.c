// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * flamegraph: folded stacks and an interactive SVG flame graph of a
 * perf.data's callchains (or of off-CPU time from sched_switch).
 *
 * Stacks. Each sample's callchain (samples.c: perf's order, names and
 * build-id rules) becomes a sequence of names, outermost first, behind
 * the thread's name: what `perf script | stackcollapse-perf.pl` makes of
 * it. A frame is named by its symbol; without one by its dso's file name
 * (perf script prints "[unknown] (/path/dso)", which stackcollapse turns
 * into "dso"), or "unknown" without a map; then stackcollapse's default
 * tidying: ';' becomes ':', quotes go, and "(...)" to the end of a name is
 * cut (unless the name holds ".(...)." or starts "(anonymous namespace)").
 * Spaces in a thread's name become '_'. Like stackcollapse, only the
 * event of the first sample counts (a file of several events mixes
 * units). A sample without a callchain counts as its own ip.
 *
 * Names are interned (one id per distinct string), so a stack is a short
 * array of ids in one hash table and equal texts add up even when they
 * came from different addresses (two unnamed places of one dso). Memory
 * is per distinct stack, not per sample.
 *
 * Folded output: "name;name;... COUNT", sorted bytewise, as stackcollapse
 * prints it. The SVG is drawn from the same sorted list, as
 * flamegraph.pl draws it: neighbours that share a prefix share its
 * frames, each frame's width its stacks' total; frames under 0.1 px are
 * left out. The page is self-contained: inline style and script, no
 * network. Script: hovering shows a frame's name, count and share in the
 * bottom line (and <title> gives a tooltip); clicking zooms (the frame
 * takes the full width, its ancestors stay, other frames hide); "Search"
 * (or Ctrl-F) takes a regular expression and paints matching frames
 * magenta with the matched share; "Reset Zoom" undoes. The URL fragment
 * "#search=RE&zoom=NAME" does the same on load, which is how the
 * browser test drives it (chromium --dump-dom).
 *
 * A .dat has no callchains; its kernel stack traces (ftrace's
 * kernel_stack records after each event, trace-cmd record -T) are the
 * stacks instead: one per record, the task first (saved command lines),
 * then the callers from the outermost in, named from the file's kallsyms.
 *
 * Off-CPU (TK_FLAMEGRAPH_OFF_CPU): from sched:sched_switch samples, a
 * task switched out at t0 with the sample's callchain (perf record -e
 * sched:sched_switch -g: the stack that blocked) and switched in at t1
 * adds t1 - t0 (in microseconds at output) to that stack. A .dat has no
 * callchains: its stacks are the task's name alone (from the saved
 * command lines).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/analyze.h>
#include <tracekit/dat.h>
#include <tracekit/event.h>
#include <tracekit/filekind.h>
#include <tracekit/outbuf.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "analyze-util.h"
#include "dat-read-internal.h"
#include "feed.h"
#include "samples.h"
#include "internal/array.h"
#include "internal/error.h"

/* Interned names. */
struct names {
	char **v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

struct stack {
	uint32_t off, len; /* ids[off .. off + len) */
	uint64_t weight;
	const char *text; /* joined, at output */
};

struct fg {
	const struct tk_flamegraph_opts *o;
	struct tk_samples *s;
	struct names names;
	int64_t *frame_name; /* samples frame id -> name id, -1 unknown yet */
	size_t nframe_name;
	uint32_t *ids;
	size_t nids, idcap;
	struct stack *st;
	size_t nst, stcap;
	uint32_t *slots;
	size_t nslots;
	uint32_t *seq;
	size_t seqcap;
	bool have_evsel;
	size_t evsel;
	/* off-CPU */
	struct tk_event_set *set;
	int switch_id;
	const struct tk_event_field *prev_pid, *next_pid;
	struct pending *pend;
	size_t npend, pendcap;
	uint32_t *pend_slots;
	size_t pend_nslots;
	struct tk_outbuf out;
};

/* A task switched out: since when, and on which stack. */
struct pending {
	int32_t tid;
	int32_t name; /* .dat: name id of its saved command line, -1 none */
	bool out;
	uint64_t since;
	uint32_t stack;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h ^ (h >> 29);
}

static int64_t name_add(struct names *t, const char *s, size_t n)
{
	size_t j;
	char **v, *copy;

	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 1024;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < t->n; i++) {
			j = hash_bytes(t->v[i], strlen(t->v[i])) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(t->slots);
		t->slots = sl;
		t->nslots = ns;
	}
	j = hash_bytes(s, n) & (t->nslots - 1);
	while (t->slots[j]) {
		const char *o = t->v[t->slots[j] - 1];

		if (!strncmp(o, s, n) && o[n] == '\0')
			return t->slots[j] - 1;
		j = (j + 1) & (t->nslots - 1);
	}
	v = tk_array_grow(t->v, &t->cap, t->n, sizeof(*v), 256);
	if (!v)
		return -ENOMEM;
	t->v = v;
	copy = strndup(s, n);
	if (!copy)
		return -ENOMEM;
	t->v[t->n] = copy;
	t->slots[j] = (uint32_t)t->n + 1;
	return (int64_t)t->n++;
}

/* stackcollapse-perf's tidying of a function name (its default --tidy-generic). */
static int64_t name_tidy(struct names *t, const char *raw, bool is_sym)
{
	char buf[1024];
	size_t n = 0;
	const char *cut = NULL;

	if (is_sym && !strstr(raw, ".(") && strchr(raw, '(')) {
		const char *par = strchr(raw, '(');

		/* "(anonymous namespace)" stays; any other "(" ends the name. */
		while (par && !strncmp(par, "(anonymous namespace)", 21))
			par = strchr(par + 21, '(');
		cut = par;
	} else if (is_sym && strstr(raw, ".(")) {
		const char *a = strstr(raw, ".(");
		const char *b = strstr(a + 2, ").");

		if (!b)
			cut = strchr(raw, '(');
	}
	for (const char *c = raw; *c && c != cut && n < sizeof(buf) - 1; c++) {
		if (*c == '"' || *c == '\'')
			continue;
		buf[n++] = *c == ';' ? ':' : *c;
	}
	return name_add(t, buf, n);
}

/* The name id of a samples frame: symbol, else the dso's file name, else "unknown". */
static int64_t frame_name(struct fg *g, uint32_t frame)
{
	const struct tk_samples_frame *f;
	int64_t id;

	if (frame >= g->nframe_name) {
		size_t n = g->nframe_name ? g->nframe_name : 4096;
		int64_t *v;

		while (n <= frame)
			n *= 2;
		v = realloc(g->frame_name, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = g->nframe_name; i < n; i++)
			v[i] = -1;
		g->frame_name = v;
		g->nframe_name = n;
	}
	if (g->frame_name[frame] >= 0)
		return g->frame_name[frame];
	f = tk_samples_frame(g->s, frame);
	if (f->sym) {
		id = name_tidy(&g->names, f->sym, true);
	} else if (f->dso) {
		const char *base = strrchr(f->dso, '/');

		id = name_tidy(&g->names, base ? base + 1 : f->dso, false);
	} else {
		id = name_add(&g->names, "unknown", 7);
	}
	if (id >= 0)
		g->frame_name[frame] = id;
	return id;
}

static int64_t comm_name(struct fg *g, const char *comm)
{
	char buf[64];
	size_t n = 0;

	for (; *comm && n < sizeof(buf) - 1; comm++)
		buf[n++] = *comm == ' ' ? '_' : *comm;
	return name_add(&g->names, buf, n);
}

static uint64_t seq_hash(const uint32_t *seq, size_t n)
{
	return hash_bytes(seq, n * sizeof(*seq));
}

/* Add @w to the stack @seq (name ids, thread first); its index in *@idx. */
static int stack_add(struct fg *g, const uint32_t *seq, size_t n, uint64_t w, uint32_t *idx)
{
	size_t j;

	if ((g->nst + 1) * 2 > g->nslots) {
		size_t ns = g->nslots ? g->nslots * 2 : 4096;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t i = 0; i < g->nst; i++) {
			j = seq_hash(g->ids + g->st[i].off, g->st[i].len) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(g->slots);
		g->slots = sl;
		g->nslots = ns;
	}
	j = seq_hash(seq, n) & (g->nslots - 1);
	while (g->slots[j]) {
		struct stack *s = &g->st[g->slots[j] - 1];

		if (s->len == n && !memcmp(g->ids + s->off, seq, n * sizeof(*seq))) {
			s->weight += w;
			*idx = g->slots[j] - 1;
			return 0;
		}
		j = (j + 1) & (g->nslots - 1);
	}
	while (g->nids + n > g->idcap) {
		size_t cap = g->idcap ? g->idcap * 2 : 65536;
		uint32_t *v = realloc(g->ids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->ids = v;
		g->idcap = cap;
	}
	{
		struct stack *v = tk_array_grow(g->st, &g->stcap, g->nst, sizeof(*v), 1024);

		if (!v)
			return -ENOMEM;
		g->st = v;
	}
	memcpy(g->ids + g->nids, seq, n * sizeof(*seq));
	g->st[g->nst] = (struct stack){.off = (uint32_t)g->nids, .len = (uint32_t)n, .weight = w};
	g->nids += n;
	g->slots[j] = (uint32_t)g->nst + 1;
	*idx = (uint32_t)g->nst++;
	return 0;
}

/* The name sequence of a sample: thread, then its frames outermost first. */
static int sample_seq(struct fg *g, const struct tk_samples_sample *s, size_t *n)
{
	size_t need = (s->has_chain ? s->nchain : 1) + 1;
	int64_t id;

	if (need > g->seqcap) {
		uint32_t *v = realloc(g->seq, need * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->seq = v;
		g->seqcap = need;
	}
	id = comm_name(g, tk_samples_comm(g->s, s->comm));
	if (id < 0)
		return (int)id;
	g->seq[0] = (uint32_t)id;
	*n = 1;
	if (!s->has_chain) {
		id = frame_name(g, s->ip);
		if (id < 0)
			return (int)id;
		g->seq[(*n)++] = (uint32_t)id;
		return 0;
	}
	for (uint32_t i = s->nchain; i-- > 0;) {
		id = frame_name(g, s->chain[i]);
		if (id < 0)
			return (int)id;
		g->seq[(*n)++] = (uint32_t)id;
	}
	return 0;
}

static int on_sample(void *ctx, const struct tk_samples_sample *s)
{
	struct fg *g = ctx;
	uint32_t idx;
	size_t n;
	int ret;

	if (!g->have_evsel) {
		g->have_evsel = true;
		g->evsel = s->evsel;
	}
	if (s->evsel != g->evsel)
		return 0;
	ret = sample_seq(g, s, &n);
	if (ret)
		return ret;
	return stack_add(g, g->seq, n, s->count, &idx);
}

/* ------------------------------------------------------------ off-CPU */

static struct pending *pending_get(struct fg *g, int32_t tid)
{
	size_t j;

	if ((g->npend + 1) * 2 > g->pend_nslots) {
		size_t ns = g->pend_nslots ? g->pend_nslots * 2 : 1024;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return NULL;
		for (size_t i = 0; i < g->npend; i++) {
			j = hash_bytes(&g->pend[i].tid, 4) & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = (uint32_t)i + 1;
		}
		free(g->pend_slots);
		g->pend_slots = sl;
		g->pend_nslots = ns;
	}
	j = hash_bytes(&tid, 4) & (g->pend_nslots - 1);
	while (g->pend_slots[j]) {
		if (g->pend[g->pend_slots[j] - 1].tid == tid)
			return &g->pend[g->pend_slots[j] - 1];
		j = (j + 1) & (g->pend_nslots - 1);
	}
	{
		struct pending *v = tk_array_grow(g->pend, &g->pendcap, g->npend, sizeof(*v), 256);

		if (!v)
			return NULL;
		g->pend = v;
	}
	g->pend[g->npend] = (struct pending){.tid = tid, .name = -1};
	g->pend_slots[j] = (uint32_t)g->npend + 1;
	return &g->pend[g->npend++];
}

/* A task switched in at @t ends its time off the CPU. */
static int switch_in(struct fg *g, int32_t tid, uint64_t t)
{
	struct pending *p = pending_get(g, tid);

	if (!p)
		return -ENOMEM;
	if (p->out && t > p->since)
		g->st[p->stack].weight += t - p->since;
	p->out = false;
	return 0;
}

static int switch_out(struct fg *g, int32_t tid, uint64_t t, const uint32_t *seq, size_t n)
{
	struct pending *p;
	uint32_t idx;
	int ret = stack_add(g, seq, n, 0, &idx);

	if (ret)
		return ret;
	p = pending_get(g, tid);
	if (!p)
		return -ENOMEM;
	p->out = true;
	p->since = t;
	p->stack = idx;
	return 0;
}

static int on_switch_sample(void *ctx, const struct tk_samples_sample *s)
{
	struct fg *g = ctx;
	uint64_t prev = 0, next = 0;
	size_t n;
	int ret;

	if (!s->raw || tk_event_record_type(g->set, s->raw, s->raw_size) != g->switch_id)
		return 0;
	tk_event_field_read(g->set, g->prev_pid, s->raw, s->raw_size, &prev);
	tk_event_field_read(g->set, g->next_pid, s->raw, s->raw_size, &next);
	ret = switch_in(g, (int32_t)next, s->time);
	if (ret || !(int32_t)prev)
		return ret;
	ret = sample_seq(g, s, &n);
	if (ret)
		return ret;
	return switch_out(g, (int32_t)prev, s->time, g->seq, n);
}

static const struct tk_feed_want switch_want[] = {
	{"sched", "sched_switch", {"prev_pid", "next_pid", "prev_comm", NULL}},
};

static int offcpu_perf(struct fg *g, const char *path)
{
	struct tk_perfdata *pd = tk_perfdata_open(path);
	const struct tk_tracedata *td;
	const struct tk_event *ev;

	if (!pd)
		return -errno;
	td = tk_perfdata_get_tracedata(pd);
	if (td)
		g->set = tk_feed_event_set(td, switch_want, 1);
	tk_perfdata_close(pd);
	if (!td)
		return tk_fail(ENOENT,
			       "%s: no sched:sched_switch events (perf record -e "
			       "sched:sched_switch -g)",
			       path);
	if (!g->set)
		return tk_fail(ENOMEM, "out of memory");
	ev = tk_event_find_by_name(g->set, "sched", "sched_switch");
	if (ev) {
		g->switch_id = tk_event_id(ev);
		g->prev_pid = tk_event_field_find(ev, "prev_pid");
		g->next_pid = tk_event_field_find(ev, "next_pid");
	}
	if (!ev || !g->prev_pid || !g->next_pid)
		return tk_fail(ENOENT,
			       "%s: no sched:sched_switch events with prev_pid and next_pid", path);
	return tk_samples_read(g->s, path, on_switch_sample, g);
}

/* A .dat: the feed's sched_switch records, named from the saved command lines. */
static int on_switch_rec(void *ctx, const struct tk_feed_rec *r)
{
	struct fg *g = ctx;
	uint32_t seq[1];
	int64_t id;
	int ret;

	if (r->kind == TK_FEED_COMM) {
		struct pending *p = pending_get(g, r->tid);

		if (!p)
			return -ENOMEM;
		id = comm_name(g, r->comm);
		if (id < 0)
			return (int)id;
		p->name = (int32_t)id;
		return 0;
	}
	if (r->kind != TK_FEED_EVENT)
		return 0;
	ret = switch_in(g, (int32_t)r->val[1], r->time);
	if (ret || !(int32_t)r->val[0])
		return ret;
	{
		struct pending *p = pending_get(g, (int32_t)r->val[0]);
		char name[24];

		if (!p)
			return -ENOMEM;
		if (p->name >= 0) {
			id = p->name;
		} else {
			/* A pid without a saved command line is named as trace-cmd names it. */
			snprintf(name, sizeof(name), "<...>-%" PRId32, (int32_t)r->val[0]);
			id = name_add(&g->names, name, strlen(name));
		}
	}
	if (id < 0)
		return (int)id;
	seq[0] = (uint32_t)id;
	return switch_out(g, (int32_t)r->val[0], r->time, seq, 1);
}

static int offcpu_dat(struct fg *g, const char *path)
{
	static const struct tk_feed_want want[] = {
		{"sched", "sched_switch", {"prev_pid", "next_pid", NULL, NULL}},
	};
	struct tk_feed_stats st;
	int ret = tk_feed_run(path, want, 1, TK_FEED_SIDEBAND, on_switch_rec, g, &st);

	if (ret == 0 && !(st.present & 1))
		return tk_fail(ENOENT, "%s: no sched:sched_switch events", path);
	return ret;
}

/* ------------------------------------------------------------ .dat stack traces */

struct ksym {
	uint64_t addr;
	const char *name; /* into the kallsyms text, ended by its length */
	uint32_t len;
	uint32_t line; /* aliases at one address keep their file order */
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* The symbols of a kallsyms text ("ADDR TYPE NAME [module]" lines), sorted by address. */
static int ksyms_load(const char *t, uint64_t len, struct ksym **out, size_t *n)
{
	struct ksym *v = NULL;
	size_t cap = 0;
	uint64_t i = 0;

	*n = 0;
	while (i < len) {
		uint64_t end = i, addr = 0;
		const char *p = t + i, *name;
		size_t nl;

		while (end < len && t[end] != '\n')
			end++;
		while (p < t + end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
			addr = addr * 16 + (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
			p++;
		}
		/* " T name" */
		if (p + 3 < t + end && p[0] == ' ' && p[2] == ' ') {
			name = p + 3;
			nl = strcspn(name, " \t\n");
			if (name + nl > t + end)
				nl = (size_t)(t + end - name);
			v = tk_array_grow(v, &cap, *n, sizeof(*v), 4096);
			if (!v)
				return -ENOMEM;
			v[*n].addr = addr;
			v[*n].name = name;
			v[*n].len = (uint32_t)nl;
			v[*n].line = (uint32_t)*n;
			(*n)++;
		}
		i = end + 1;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), ksym_cmp);
	*out = v;
	return 0;
}

static const struct ksym *ksym_find(const struct ksym *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	/* the last symbol at or below @addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* Of aliases, the first in the file: the name trace-cmd (libtraceevent) prints. */
	lo--;
	while (lo && v[lo - 1].addr == v[lo].addr)
		lo--;
	return &v[lo];
}

static const struct tk_feed_want stack_want[] = {
	{"ftrace", "kernel_stack", {"size", "caller", NULL, NULL}},
};

/* Name the pids of a .dat from its saved command lines ("PID COMM" lines). */
static int dat_names(struct fg *g, const char *t, uint64_t len)
{
	uint64_t i = 0;

	while (i < len) {
		uint64_t end = i;
		char *endp;
		long pid;

		while (end < len && t[end] != '\n')
			end++;
		pid = strtol(t + i, &endp, 10);
		if (endp > t + i && endp < t + end && *endp == ' ' && pid > 0) {
			struct pending *p = pending_get(g, (int32_t)pid);
			char comm[64];
			size_t n = (size_t)(t + end - endp - 1);
			int64_t id;

			if (!p)
				return -ENOMEM;
			if (n >= sizeof(comm))
				n = sizeof(comm) - 1;
			memcpy(comm, endp + 1, n);
			comm[n] = '\0';
			id = comm_name(g, comm);
			if (id < 0)
				return (int)id;
			p->name = (int32_t)id;
		}
		i = end + 1;
	}
	return 0;
}

/*
 * A .dat's kernel stack traces (ftrace's kernel_stack records: trace-cmd
 * record -T, or the stacktrace option), one stack per record: the task
 * (common_pid, named by the saved command lines) then the callers from
 * the outermost in, named from the file's kallsyms.
 */
static int dat_stacks(struct fg *g, const char *path)
{
	struct tk_dat *dat = tk_dat_open(path);
	struct tk_dat_merge *m = NULL;
	struct tk_dat_merge_record mr;
	struct tk_dat_text text;
	const struct tk_event *ev;
	const struct tk_event_field *size_f, *caller_f;
	struct ksym *ks = NULL;
	size_t nks = 0;
	uint8_t lsize = 8;
	bool big = false;
	int id, ret;

	if (!dat)
		return -errno;
	tk_tracedata_layout(tk_dat_get_tracedata(dat), &big, &lsize, NULL);
	g->set = tk_feed_event_set(tk_dat_get_tracedata(dat), stack_want, 1);
	if (!g->set) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	ev = tk_event_find_by_name(g->set, "ftrace", "kernel_stack");
	size_f = ev ? tk_event_field_find(ev, "size") : NULL;
	caller_f = ev ? tk_event_field_find(ev, "caller") : NULL;
	if (!size_f || !caller_f || big || lsize != 8) {
		ret = tk_fail(ENOENT,
			      "%s: no kernel stack traces (record with trace-cmd record -T, or use "
			      "--off-cpu)",
			      path);
		goto out;
	}
	id = tk_event_id(ev);
	if (tk_dat_kallsyms(dat, &text) == 0) {
		ret = ksyms_load(text.data, text.len, &ks, &nks);
		if (ret)
			goto out;
	}
	if (tk_dat_cmdlines(dat, &text) == 0) {
		ret = dat_names(g, text.data, text.len);
		if (ret)
			goto out;
	}
	m = tk_dat_merge_new_ahead(dat, NULL, 0, tk_an_spare_cpu());
	if (!m) {
		ret = -errno;
		goto out;
	}
	while ((ret = tk_dat_merge_next(m, &mr)) > 0) {
		const uint8_t *d = mr.rec.data;
		uint64_t n = 0;
		size_t k = 0;
		int pid;
		int64_t nid;
		struct pending *p;

		if (tk_event_record_type(g->set, d, mr.rec.size) != id)
			continue;
		tk_event_field_read(g->set, size_f, d, mr.rec.size, &n);
		/* A damaged size (or a cut record) gives the entries the record holds. */
		if (mr.rec.size < caller_f->offset)
			n = 0;
		else if (n > (mr.rec.size - caller_f->offset) / 8)
			n = (mr.rec.size - caller_f->offset) / 8;
		if (g->seqcap < n + 1) {
			uint32_t *v = realloc(g->seq, (n + 1) * sizeof(*v));

			if (!v) {
				ret = -ENOMEM;
				break;
			}
			g->seq = v;
			g->seqcap = n + 1;
		}
		pid = tk_event_record_pid(g->set, d, mr.rec.size);
		p = pending_get(g, pid);
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		if (p->name >= 0) {
			nid = p->name;
		} else {
			char name[24];

			snprintf(name, sizeof(name), pid ? "<...>-%d" : "<idle>", pid);
			nid = name_add(&g->names, name, strlen(name));
		}
		if (nid < 0) {
			ret = (int)nid;
			break;
		}
		g->seq[k++] = (uint32_t)nid;
		for (uint64_t i = n; i-- > 0;) {
			uint64_t addr;
			const struct ksym *sym;
			char hex[24];

			memcpy(&addr, d + caller_f->offset + i * 8, 8);
			if (!addr || addr == UINT64_MAX)
				continue;
			sym = ksym_find(ks, nks, addr);
			if (sym) {
				nid = name_add(&g->names, sym->name, sym->len);
			} else {
				snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
				nid = name_add(&g->names, hex, strlen(hex));
			}
			if (nid < 0)
				break;
			g->seq[k++] = (uint32_t)nid;
		}
		if (nid < 0) {
			ret = (int)nid;
			break;
		}
		{
			uint32_t idx;

			ret = stack_add(g, g->seq, k, 1, &idx);
			if (ret)
				break;
		}
	}
	if (ret == 0 && !g->nst)
		ret = tk_fail(ENOENT,
			      "%s: no kernel stack traces (record with trace-cmd record -T, or use "
			      "--off-cpu)",
			      path);
out:
	free(ks);
	tk_dat_merge_free(m);
	tk_dat_close(dat);
	return ret;
}

/* ------------------------------------------------------------ output */

static void put(struct fg *g, const char *s)
{
	tk_outbuf_write(&g->out, s, strlen(s));
}

static void putf(struct fg *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct fg *g, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		tk_outbuf_write(&g->out, buf,
				(size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* XML text: the five characters that must be escaped. */
static void put_xml(struct fg *g, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max; i++) {
		switch (s[i]) {
		case '<':
			put(g, "&lt;");
			break;
		case '>':
			put(g, "&gt;");
			break;
		case '&':
			put(g, "&amp;");
			break;
		case '"':
			put(g, "&quot;");
			break;
		case '\'':
			put(g, "&apos;");
			break;
		default:
			tk_outbuf_write(&g->out, s + i, 1);
		}
	}
}

static int text_cmp(const void *a, const void *b)
{
	const struct stack *x = a, *y = b;

	return strcmp(x->text, y->text);
}

/* Join each stack's names with ';' and sort the stacks by that text. */
static int stacks_text(struct fg *g)
{
	for (size_t i = 0; i < g->nst; i++) {
		struct stack *s = &g->st[i];
		size_t len = 0;
		char *t;

		for (uint32_t k = 0; k < s->len; k++)
			len += strlen(g->names.v[g->ids[s->off + k]]) + 1;
		t = malloc(len + 1);
		if (!t)
			return -ENOMEM;
		len = 0;
		for (uint32_t k = 0; k < s->len; k++) {
			const char *nm = g->names.v[g->ids[s->off + k]];
			size_t n = strlen(nm);

			if (k)
				t[len++] = ';';
			memcpy(t + len, nm, n);
			len += n;
		}
		t[len] = '\0';
		s->text = t;
	}
	qsort(g->st, g->nst, sizeof(*g->st), text_cmp);
	return 0;
}

static uint64_t shown_weight(const struct fg *g, uint64_t w)
{
	/* Off-CPU time is summed in ns and shown in us, as offcputime shows it. */
	return (g->o->flags & TK_FLAMEGRAPH_OFF_CPU) ? w / 1000 : w;
}

static void print_folded(struct fg *g)
{
	for (size_t i = 0; i < g->nst; i++) {
		uint64_t w = shown_weight(g, g->st[i].weight);

		if (!w)
			continue;
		put(g, g->st[i].text);
		putf(g, " %" PRIu64 "\n", w);
	}
}

#define FRAME_H	  16
#define PAD_X	  10
#define PAD_TOP	  48
#define PAD_BOT	  34
#define MIN_PX	  0.1
#define FONT_W	  7.0 /* px per character of the 12 px font, for cutting names */
#define MAX_DEPTH 4096

static const char svg_style[] = "<style type=\"text/css\">\n"
				"text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"
				"#title{font-size:17px;text-anchor:middle}\n"
				"#details,#matched,#search,#reset{font-size:12px}\n"
				"#search,#reset{cursor:pointer}\n"
				"#search:hover,#reset:hover{opacity:0.6}\n"
				"g.f{cursor:pointer}\n"
				"g.f:hover rect{stroke:#000;stroke-width:0.5}\n"
				"g.f text{pointer-events:none}\n"
				".hide{display:none}\n"
				"</style>\n";

/*
 * The page's script. Each frame's <g> carries its name (data-n), count
 * (data-c), depth (data-d) and original place as fractions of the width
 * (data-x, data-w); zoom and search recompute from those.
 */
static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"(function(){\n"
	"var "
	"svg=document.documentElement,W=+svg.getAttribute('data-pw'),X0=+svg.getAttribute('data-px'"
	");\n"
	"var total=+svg.getAttribute('data-total'),unit=svg.getAttribute('data-unit');\n"
	"var frames=Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"var "
	"details=document.getElementById('details'),matched=document.getElementById('matched');\n"
	"var reset=document.getElementById('reset'),current=null,re=null;\n"
	"function pct(c){return (100*c/total).toFixed(2)+'%';}\n"
	"function fit(g,w){var t=g.querySelector('text'),n=g.getAttribute('data-n');\n"
	" var k=Math.floor((w-6)/7);t.textContent=k<3?'':(n.length<=k?n:n.slice(0,k-2)+'..');}\n"
	"function place(g,x,w){var r=g.querySelector('rect'),t=g.querySelector('text');\n"
	" r.setAttribute('x',(X0+x).toFixed(2));r.setAttribute('width',w.toFixed(2));\n"
	" t.setAttribute('x',(X0+x+3).toFixed(2));fit(g,w);g.classList.remove('hide');}\n"
	"function zoom(g){current=g;var fx=+g.getAttribute('data-x'),fw=+g.getAttribute('data-w'),"
	"fd=+g.getAttribute('data-d');\n"
	" frames.forEach(function(f){var x=+f.getAttribute('data-x'),w=+f.getAttribute('data-w'),"
	"d=+f.getAttribute('data-d');\n"
	"  if(d<fd){if(x<=fx+1e-12&&x+w>=fx+fw-1e-12)place(f,0,W);else f.classList.add('hide');}\n"
	"  else if(x>=fx-1e-12&&x+w<=fx+fw+1e-12)place(f,(x-fx)/fw*W,w/fw*W);\n"
	"  else f.classList.add('hide');});\n"
	" reset.classList.remove('hide');}\n"
	"function "
	"unzoom(){current=null;frames.forEach(function(f){place(f,+f.getAttribute('data-x')*W,"
	"+f.getAttribute('data-w')*W);});reset.classList.add('hide');}\n"
	"function search(s){re=s?new RegExp(s):null;var m=0,spans=[];\n"
	" frames.forEach(function(f){var r=f.querySelector('rect');\n"
	"  if(!r.hasAttribute('data-fill'))r.setAttribute('data-fill',r.getAttribute('fill'));\n"
	"  if(re&&re.test(f.getAttribute('data-n'))){r.setAttribute('fill','rgb(230,0,230)');\n"
	"   spans.push([+f.getAttribute('data-x'),+f.getAttribute('data-w')]);}\n"
	"  else r.setAttribute('fill',r.getAttribute('data-fill'));});\n"
	" spans.sort(function(a,b){return a[0]-b[0]||b[1]-a[1];});var end=-1;\n"
	" spans.forEach(function(s){if(s[0]>=end-1e-12){m+=s[1];end=s[0]+s[1];}"
	"else if(s[0]+s[1]>end){m+=s[0]+s[1]-end;end=s[0]+s[1];}});\n"
	" matched.textContent=re?'Matched: '+(100*m).toFixed(2)+'%':'';\n"
	" svg.setAttribute('data-matched',re?(100*m).toFixed(4):'');}\n"
	"frames.forEach(function(f){\n"
	" f.addEventListener('click',function(e){zoom(f);e.stopPropagation();});\n"
	" f.addEventListener('mouseover',function(){var c=+f.getAttribute('data-c');\n"
	"  details.textContent=f.getAttribute('data-n')+' ('+c+' '+unit+', '+pct(c)+')';});\n"
	" f.addEventListener('mouseout',function(){details.textContent=' ';});});\n"
	"reset.addEventListener('click',unzoom);\n"
	"document.getElementById('search').addEventListener('click',function(){\n"
	" if(re){search('');return;}var s=prompt('Search for (regular "
	"expression):','');if(s)search(s);});\n"
	"window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key==='f'){\n"
	" e.preventDefault();var s=prompt('Search for (regular "
	"expression):','');if(s)search(s);}});\n"
	"var h=location.hash.slice(1).split('&');\n"
	"h.forEach(function(kv){var i=kv.indexOf('=');if(i<0)return;var k=kv.slice(0,i),"
	"v=decodeURIComponent(kv.slice(i+1));\n"
	" if(k==='search')search(v);\n"
	" if(k==='zoom'){for(var "
	"j=0;j<frames.length;j++)if(frames[j].getAttribute('data-n')===v){\n"
	"  frames[j].dispatchEvent(new MouseEvent('click',{bubbles:true}));break;}}});\n"
	"svg.setAttribute('data-ready','1');\n"
	"})();\n"
	"]]></script>\n";

/* A frame's colour: a warm hue from its name, so a function keeps its colour. */
static void frame_fill(const char *name, char *buf, size_t n)
{
	uint64_t h = hash_bytes(name, strlen(name));
	unsigned int r = 205 + (unsigned int)(h % 50), gr = (unsigned int)((h >> 8) % 230),
		     b = (unsigned int)((h >> 16) % 55);

	snprintf(buf, n, "rgb(%u,%u,%u)", r, gr, b);
}

static void svg_frame(struct fg *g, const char *name, uint64_t w, uint64_t x, uint64_t total,
		      unsigned int depth, unsigned int maxdepth, double pw)
{
	double fx = (double)x / (double)total, fw = (double)w / (double)total;
	double px = fx * pw, wpx = fw * pw;
	double y = PAD_TOP + (double)(maxdepth - depth) * FRAME_H;
	char fill[32];
	size_t chars = wpx > 6 ? (size_t)((wpx - 6) / FONT_W) : 0;
	size_t len = strlen(name);

	if (wpx < MIN_PX)
		return;
	frame_fill(name, fill, sizeof(fill));
	put(g, "<g class=\"f\" data-n=\"");
	put_xml(g, name, SIZE_MAX);
	putf(g, "\" data-c=\"%" PRIu64 "\" data-d=\"%u\" data-x=\"%.12f\" data-w=\"%.12f\">",
	     shown_weight(g, w), depth, fx, fw);
	put(g, "<title>");
	put_xml(g, name, SIZE_MAX);
	putf(g, " (%" PRIu64 " %s, %.2f%%)</title>", shown_weight(g, w),
	     (g->o->flags & TK_FLAMEGRAPH_OFF_CPU) ? "us" : "samples", 100.0 * fw);
	putf(g, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
	     PAD_X + px, y, wpx, FRAME_H - 1, fill);
	putf(g, "<text x=\"%.2f\" y=\"%.1f\">", PAD_X + px + 3, y + FRAME_H - 4.5);
	if (chars >= 3) {
		if (len <= chars) {
			put_xml(g, name, SIZE_MAX);
		} else {
			put_xml(g, name, chars - 2);
			put(g, "..");
		}
	}
	put(g, "</text></g>\n");
}

static int print_svg(struct fg *g)
{
	unsigned int width = g->o->width ? g->o->width : 1200;
	double pw = (double)width - 2 * PAD_X;
	uint64_t total = 0, x = 0;
	unsigned int maxdepth = 0;
	const char *title = g->o->title;
	/* The open frames: name id and where each began. */
	uint32_t *open_id;
	uint64_t *open_x;
	size_t nopen = 0;
	const struct stack *prev = NULL;
	unsigned int height;

	if (!title)
		title = (g->o->flags & TK_FLAMEGRAPH_OFF_CPU) ? "Off-CPU Time Flame Graph"
							      : "Flame Graph";
	for (size_t i = 0; i < g->nst; i++) {
		uint64_t w = shown_weight(g, g->st[i].weight);

		total += w;
		if (w && g->st[i].len > maxdepth)
			maxdepth = g->st[i].len;
	}
	if (maxdepth > MAX_DEPTH - 1)
		maxdepth = MAX_DEPTH - 1;
	open_id = malloc((maxdepth + 1) * sizeof(*open_id));
	open_x = malloc((maxdepth + 1) * sizeof(*open_x));
	if (!open_id || !open_x) {
		free(open_id);
		free(open_x);
		return -ENOMEM;
	}
	height = PAD_TOP + (maxdepth + 1) * FRAME_H + PAD_BOT;
	putf(g,
	     "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	     "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
	     "xmlns=\"http://www.w3.org/2000/svg\" data-pw=\"%.2f\" data-px=\"%d\" "
	     "data-total=\"%" PRIu64 "\" data-unit=\"%s\">\n",
	     width, height, width, height, pw, PAD_X, total,
	     (g->o->flags & TK_FLAMEGRAPH_OFF_CPU) ? "us" : "samples");
	put(g, svg_style);
	putf(g, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f0\"/>\n", width,
	     height);
	putf(g, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	put_xml(g, title, SIZE_MAX);
	put(g, "</text>\n");
	putf(g, "<text id=\"reset\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", PAD_X);
	putf(g, "<text id=\"search\" x=\"%u\" y=\"24\" text-anchor=\"end\">Search</text>\n",
	     width - PAD_X);
	putf(g, "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"></text>\n",
	     width - PAD_X, height - 12);
	putf(g, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", PAD_X, height - 12);
	if (total) {
		/* The root: every stack. */
		svg_frame(g, "all", total, 0, total, 0, maxdepth, pw);
		for (size_t i = 0; i < g->nst; i++) {
			const struct stack *s = &g->st[i];
			uint64_t w = shown_weight(g, s->weight);
			size_t common = 0, len = s->len < maxdepth ? s->len : maxdepth;

			if (!w)
				continue;
			while (prev && common < nopen && common < len &&
			       g->ids[prev->off + common] == g->ids[s->off + common])
				common++;
			while (nopen > common) {
				nopen--;
				svg_frame(g, g->names.v[open_id[nopen]], x - open_x[nopen],
					  open_x[nopen], total, (unsigned int)nopen + 1, maxdepth,
					  pw);
			}
			for (; nopen < len; nopen++) {
				open_id[nopen] = g->ids[s->off + nopen];
				open_x[nopen] = x;
			}
			x += w;
			prev = s;
		}
		while (nopen > 0) {
			nopen--;
			svg_frame(g, g->names.v[open_id[nopen]], x - open_x[nopen], open_x[nopen],
				  total, (unsigned int)nopen + 1, maxdepth, pw);
		}
	}
	put(g, svg_script);
	put(g, "</svg>\n");
	free(open_id);
	free(open_x);
	return 0;
}

int tk_flamegraph_run(const char *path, const struct tk_flamegraph_opts *opts)
{
	struct tk_samples_opts so = {0};
	struct fg g;
	bool dat;
	int ret;

	if (!opts)
		return tk_fail(EINVAL, "no flamegraph options");
	memset(&g, 0, sizeof(g));
	g.o = opts;
	dat = tk_filekind_of(path) == TK_FILE_DAT;
	so.no_symbols = dat;
	/* Stacks add up: each distinct one is resolved once (off-CPU needs every switch). */
	so.aggregate = !(opts->flags & TK_FLAMEGRAPH_OFF_CPU);
	g.s = tk_samples_new(&so);
	if (!g.s)
		return -errno;
	ret = tk_outbuf_init(&g.out, opts->fd, 0);
	if (ret) {
		tk_samples_free(g.s);
		return ret;
	}
	if (opts->flags & TK_FLAMEGRAPH_OFF_CPU)
		ret = dat ? offcpu_dat(&g, path) : offcpu_perf(&g, path);
	else if (dat)
		ret = dat_stacks(&g, path);
	else
		ret = tk_samples_read(g.s, path, on_sample, &g);
	if (ret == 0 && !g.nst)
		ret = tk_fail(ENOENT, "%s: no samples to draw", path);
	if (ret == 0)
		ret = stacks_text(&g);
	if (ret == 0) {
		if (opts->flags & TK_FLAMEGRAPH_FOLDED)
			print_folded(&g);
		else
			ret = print_svg(&g);
		tk_outbuf_flush(&g.out);
		if (!ret)
			ret = g.out.error;
	}
	if (ret == -ENOMEM)
		tk_fail(ENOMEM, "out of memory");
	tk_outbuf_release(&g.out);
	for (size_t i = 0; i < g.nst; i++)
		free((char *)g.st[i].text);
	free(g.st);
	free(g.ids);
	free(g.slots);
	free(g.seq);
	free(g.frame_name);
	free(g.pend);
	free(g.pend_slots);
	for (size_t i = 0; i < g.names.n; i++)
		free(g.names.v[i]);
	free(g.names.v);
	free(g.names.slots);
	tk_event_set_free(g.set);
	tk_samples_free(g.s);
	return ret;
}
