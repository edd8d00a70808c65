// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * taskprofile: `trace-cmd report --profile` (trace-cmd 3.1.6) of a .dat.
 *
 * A task-based profile: per task (common_pid), per "event" (an event and a
 * value), how many times it happened and, for the events that start and end
 * something, the total, average, largest and smallest time between start and
 * end and when the largest and smallest ended. The pairs are trace-cmd's:
 *
 *   sched_switch   out (prev_pid; value prev_state & 1023) to the next
 *                  switch in, or to the wake-up of a task that slept:
 *                  "sched_switch:S" is time asleep, ":R" time preempted
 *   sched_wakeup   of a sleeping task to its switch in: "sched_wakeup:0xPID"
 *   sys_enter      to sys_exit of the same id on the same task: "sys_enter:ID"
 *   irq_handler_entry to _exit (irq), softirq_entry to _exit (vec),
 *   softirq_raise  to softirq_entry of the same vec on the same task
 *   every other event is counted per task and value, the value being its
 *   first field read as a number when 1, 2, 4 or 8 bytes ("name:0xVAL")
 *
 * Every record of the top buffer is read in time order; a start waits on
 * its task until an end with the same match value takes it (the newest
 * such start, as trace-cmd's hash chains give it). A task is named by the
 * first sched_switch or sched_wakeup that names it (cleared by
 * sched_process_exec), else by the saved command lines.
 *
 * Order, as trace-cmd prints it: tasks by pid; within a task
 * sched_switch lines first (by state), then the wake-up, then by event id,
 * larger total first. trace-cmd breaks the remaining ties (same event, same
 * total: the counted-only lines) by a hash of its heap addresses, which no
 * other program can reproduce; we order them by value. Function-graph
 * entries pair with their exits by function ("func: name()"), function
 * events are counted by ip. Where the kernel lost events, the starts that
 * may have lost their ends are dropped, as trace-cmd drops them. Not
 * reproduced: kernel_stack call chains, -G (global irq events), user hooks, and what
 * trace-cmd prints for a file with sched_switch but no sched_wakeup (it
 * reads uninitialised pids there).
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
#include <tracekit/outbuf.h>
#include <tracekit/tracedata.h>

#include "analyze-util.h"
#include "dat-read-internal.h"
#include "event-internal.h"
#include "internal/error.h"

enum kind {
	K_UNDEF = 0,
	K_SWITCH,
	K_WAKEUP,
	K_EXEC,
	K_SYSCALL,
	K_IRQ,
	K_SOFTIRQ,
	K_SOFTIRQ_RAISE,
	K_FUNC, /* funcgraph_entry/exit (paired by func), ftrace:function (counted by ip) */
	K_SKIP, /* kernel_stack: stack traces are not profiled here */
};

/* What trace-cmd's event_data holds for one event id. */
struct edata {
	const struct tk_event *ev;
	enum kind kind;
	int id;
	int start;    /* index of the start event this one ends, or -1 */
	int end;      /* index of the end event this one starts, or -1 */
	bool migrate; /* its pairs may span CPUs */
	const struct tk_event_field *start_match, *end_match, *data;
};

struct ehash {
	int ed; /* index into the edata table; -1 empty slot */
	uint64_t search, val;
	uint64_t count, total, max, ts_max, min, ts_min;
};

struct start {
	int ed;
	uint32_t cpu;
	uint64_t search, val, ts;
	uint32_t next; /* index of the next older start with the same key, or UINT32_MAX */
};

struct task {
	int pid;
	bool sleeping;
	bool has_comm;
	char comm[17];
	struct ehash *ev;
	size_t nev, evcap; /* open addressing, evcap a power of two */
	struct start *st;
	size_t nst, stcap;
	uint32_t *free_st; /* freed start slots, reused */
	size_t nfree, freecap;
	struct sthead {
		int ed;
		uint64_t search;
		uint32_t head;
	} * heads;
	size_t nheads, headcap; /* open addressing */
	/*
	 * The entry last found of each event (by its index's low bits), tried
	 * before the tables: a task's records repeat the same few keys (its
	 * pid as the search value), so a hash and probe are mostly skipped.
	 * Entries never leave the tables; a table that grows forgets its hints.
	 */
	struct sthead *head_hint[4];
	struct ehash *ev_hint[4];
};

struct prof {
	struct tk_event_set *set;
	struct edata *eds;
	int *by_id; /* event id -> id when the file has its format, else -1 */
	/* The formats, parsed when a record of theirs appears (libtraceevent leaks on some). */
	struct fmtref {
		const char *system;
		struct tk_text text;
		int id;
		bool loaded;
	} * fmts;
	size_t nfmts;
	int *fmt_of; /* event id -> index in fmts */
	size_t nids;
	int ed_switch, ed_wakeup;
	const struct tk_event_field *f_prev_pid, *f_prev_state, *f_next_pid, *f_prev_comm,
		*f_next_comm, *f_wk_pid, *f_wk_success, *f_wk_comm;
	struct task **tasks; /* creation order */
	size_t ntasks, taskcap;
	int32_t *slot_pid;
	uint32_t *slot_idx;
	size_t nslots;
	struct task *last;
	/*
	 * pid -> task for pids below DIRECT_PIDS (nearly all: the kernel's
	 * default pid_max is 32768 on small machines), a direct index instead
	 * of the hash; only the entries of pids seen are ever touched.
	 */
	struct task **direct;
};

#define DIRECT_PIDS 65536

/* libtraceevent's tep_read_number_field(): unsigned, 1/2/4/8 bytes, else untouched. */
static bool read_num(const struct prof *p, const struct tk_event_field *f, const void *data,
		     uint32_t size, uint64_t *v)
{
	uint64_t x;

	if (!f || (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
		return false;
	if (tk_event_field_read(p->set, f, data, size, &x))
		return false;
	if (f->size < 8)
		x &= (1ull << (f->size * 8)) - 1;
	*v = x;
	return true;
}

/* ---------------------------------------------------------------- tasks */

static __attribute__((noinline)) struct task *find_task_slow(struct prof *p, int pid)
{
	struct task *t;
	size_t h;

	if (p->nslots) {
		h = ((uint32_t)pid * 2654435761u) & (p->nslots - 1);
		while (p->slot_pid[h] != INT32_MIN) {
			if (p->slot_pid[h] == pid)
				return p->last = p->tasks[p->slot_idx[h]];
			h = (h + 1) & (p->nslots - 1);
		}
	}
	if ((p->ntasks + 1) * 2 > p->nslots) {
		size_t n = p->nslots ? p->nslots * 2 : 1024;
		int32_t *sp = malloc(n * sizeof(*sp));
		uint32_t *si = malloc(n * sizeof(*si));

		if (!sp || !si) {
			free(sp);
			free(si);
			return NULL;
		}
		for (size_t i = 0; i < n; i++)
			sp[i] = INT32_MIN;
		for (size_t i = 0; i < p->ntasks; i++) {
			size_t j = ((uint32_t)p->tasks[i]->pid * 2654435761u) & (n - 1);

			while (sp[j] != INT32_MIN)
				j = (j + 1) & (n - 1);
			sp[j] = p->tasks[i]->pid;
			si[j] = (uint32_t)i;
		}
		free(p->slot_pid);
		free(p->slot_idx);
		p->slot_pid = sp;
		p->slot_idx = si;
		p->nslots = n;
	}
	if (p->ntasks == p->taskcap) {
		size_t cap = p->taskcap ? p->taskcap * 2 : 256;
		struct task **v = realloc(p->tasks, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->tasks = v;
		p->taskcap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	h = ((uint32_t)pid * 2654435761u) & (p->nslots - 1);
	while (p->slot_pid[h] != INT32_MIN)
		h = (h + 1) & (p->nslots - 1);
	p->slot_pid[h] = pid;
	p->slot_idx[h] = (uint32_t)p->ntasks;
	p->tasks[p->ntasks++] = t;
	if ((uint32_t)pid < DIRECT_PIDS) {
		if (!p->direct)
			p->direct = calloc(DIRECT_PIDS, sizeof(*p->direct));
		if (p->direct) /* else the hash alone finds it */
			p->direct[pid] = t;
	}
	return p->last = t;
}

/* Three calls a record: the common cases inline, the rest (and creation) out of line. */
static inline struct task *find_task(struct prof *p, int pid)
{
	if (p->last && p->last->pid == pid)
		return p->last;
	if ((uint32_t)pid < DIRECT_PIDS && p->direct && p->direct[pid])
		return p->last = p->direct[pid];
	return find_task_slow(p, pid);
}

static void set_comm(struct prof *p, struct task *t, const struct tk_event_field *f,
		     const void *data, uint32_t size)
{
	const char *s;
	uint32_t len;

	if (t->has_comm || !f)
		return;
	t->has_comm = true;
	memset(t->comm, 0, sizeof(t->comm));
	/* trace-cmd copies the field's bytes (16 for char comm[16]) and prints up to a NUL. */
	if (f->offset + f->size <= size && !f->is_dynamic) {
		memcpy(t->comm, (const char *)data + f->offset, f->size < 16 ? f->size : 16);
	} else if (tk_event_field_string(p->set, f, data, size, &s, &len) == 0) {
		memcpy(t->comm, s, len < 16 ? len : 16);
	}
}

static size_t mix(int ed, uint64_t a, uint64_t b)
{
	uint64_t x = (uint64_t)(uint32_t)ed * 0x9e3779b97f4a7c15ull ^ a * 0xc2b2ae3d27d4eb4full ^
		     b * 0x165667b19e3779f9ull;

	return (size_t)(x ^ (x >> 29));
}

static struct ehash *find_ehash(struct task *t, int ed, uint64_t search, uint64_t val)
{
	size_t h;

	if ((t->nev + 1) * 2 > t->evcap) {
		size_t n = t->evcap ? t->evcap * 2 : 8;
		struct ehash *v = malloc(n * sizeof(*v));

		if (!v)
			return NULL;
		for (size_t i = 0; i < n; i++)
			v[i].ed = -1;
		for (size_t i = 0; i < t->evcap; i++) {
			if (t->ev[i].ed < 0)
				continue;
			h = mix(t->ev[i].ed, t->ev[i].search, t->ev[i].val) & (n - 1);
			while (v[h].ed >= 0)
				h = (h + 1) & (n - 1);
			v[h] = t->ev[i];
		}
		free(t->ev);
		t->ev = v;
		t->evcap = n;
		memset(t->ev_hint, 0, sizeof(t->ev_hint));
	} else {
		struct ehash *e = t->ev_hint[ed & 3];

		if (e && e->ed == ed && e->search == search && e->val == val)
			return e;
	}
	h = mix(ed, search, val) & (t->evcap - 1);
	while (t->ev[h].ed >= 0) {
		if (t->ev[h].ed == ed && t->ev[h].search == search && t->ev[h].val == val)
			return t->ev_hint[ed & 3] = &t->ev[h];
		h = (h + 1) & (t->evcap - 1);
	}
	memset(&t->ev[h], 0, sizeof(t->ev[h]));
	t->ev[h].ed = ed;
	t->ev[h].search = search;
	t->ev[h].val = val;
	t->nev++;
	return t->ev_hint[ed & 3] = &t->ev[h];
}

/* The chain head of (ed, search) starts; created when @create. */
static struct sthead *find_head(struct task *t, int ed, uint64_t search, bool create)
{
	struct sthead *hint = t->head_hint[ed & 3];
	size_t h;

	if (hint && hint->ed == ed && hint->search == search)
		return hint;

	if (create && (t->nheads + 1) * 2 > t->headcap) {
		size_t n = t->headcap ? t->headcap * 2 : 8;
		struct sthead *v = malloc(n * sizeof(*v));

		if (!v)
			return NULL;
		for (size_t i = 0; i < n; i++)
			v[i].ed = -1;
		for (size_t i = 0; i < t->headcap; i++) {
			if (t->heads[i].ed < 0)
				continue;
			h = mix(t->heads[i].ed, t->heads[i].search, 0) & (n - 1);
			while (v[h].ed >= 0)
				h = (h + 1) & (n - 1);
			v[h] = t->heads[i];
		}
		free(t->heads);
		t->heads = v;
		t->headcap = n;
		memset(t->head_hint, 0, sizeof(t->head_hint));
	}
	if (!t->headcap)
		return NULL;
	h = mix(ed, search, 0) & (t->headcap - 1);
	while (t->heads[h].ed >= 0) {
		if (t->heads[h].ed == ed && t->heads[h].search == search)
			return t->head_hint[ed & 3] = &t->heads[h];
		h = (h + 1) & (t->headcap - 1);
	}
	if (!create)
		return NULL;
	t->heads[h].ed = ed;
	t->heads[h].search = search;
	t->heads[h].head = UINT32_MAX;
	t->nheads++;
	return t->head_hint[ed & 3] = &t->heads[h];
}

static uint32_t cur_cpu; /* the CPU of the record being read (add_start's) */

static int add_start(struct task *t, int ed, uint64_t search, uint64_t val, uint64_t ts)
{
	struct sthead *hd = find_head(t, ed, search, true);
	uint32_t i;

	if (!hd)
		return -ENOMEM;
	if (t->nfree) {
		i = t->free_st[--t->nfree];
	} else {
		if (t->nst == t->stcap) {
			size_t cap = t->stcap ? t->stcap * 2 : 8;
			struct start *v = realloc(t->st, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			t->st = v;
			t->stcap = cap;
		}
		i = (uint32_t)t->nst++;
	}
	t->st[i].ed = ed;
	t->st[i].search = search;
	t->st[i].val = val;
	t->st[i].ts = ts;
	t->st[i].cpu = cur_cpu;
	t->st[i].next = hd->head;
	hd->head = i;
	return 0;
}

/* trace-cmd's find_and_update_start(): the newest start of (ed, search) ends at @ts. */
static int end_start(struct task *t, int ed, uint64_t search, uint64_t ts)
{
	struct sthead *hd;
	struct start *s;
	struct ehash *e;
	uint64_t delta;
	uint32_t i;

	if (ed < 0)
		return 0;
	hd = find_head(t, ed, search, false);
	if (!hd || hd->head == UINT32_MAX)
		return 0;
	i = hd->head;
	s = &t->st[i];
	delta = ts > s->ts ? ts - s->ts : 0;
	e = find_ehash(t, ed, s->search, s->val);
	if (!e)
		return -ENOMEM;
	e->count++;
	e->total += delta;
	if (delta > e->max) {
		e->max = delta;
		e->ts_max = ts;
	}
	if (e->count == 1 || delta < e->min) {
		e->min = delta;
		e->ts_min = ts;
	}
	hd->head = s->next;
	if (t->nfree == t->freecap) {
		size_t cap = t->freecap ? t->freecap * 2 : 8;
		uint32_t *v = realloc(t->free_st, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->free_st = v;
		t->freecap = cap;
	}
	t->free_st[t->nfree++] = i;
	return 0;
}

/*
 * Events were lost before this record: trace-cmd drops every start that
 * may span CPUs (switch, wake-up, syscall, function graph) and those of
 * this CPU (irq, softirq), since their ends may be among the lost.
 */
static int drop_starts(struct prof *p, uint32_t cpu)
{
	for (size_t i = 0; i < p->ntasks; i++) {
		struct task *t = p->tasks[i];

		for (size_t h = 0; h < t->headcap; h++) {
			uint32_t *link;

			if (t->heads[h].ed < 0)
				continue;
			link = &t->heads[h].head;
			while (*link != UINT32_MAX) {
				struct start *st = &t->st[*link];

				if (!p->eds[st->ed].migrate && st->cpu != cpu) {
					link = &st->next;
					continue;
				}
				if (t->nfree == t->freecap) {
					size_t cap = t->freecap ? t->freecap * 2 : 8;
					uint32_t *v = realloc(t->free_st, cap * sizeof(*v));

					if (!v)
						return -ENOMEM;
					t->free_st = v;
					t->freecap = cap;
				}
				t->free_st[t->nfree++] = *link;
				*link = st->next;
			}
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- events */

static int on_switch(struct prof *p, const void *data, uint32_t size, uint64_t ts)
{
	uint64_t prev = 0, state = 0, next = 0;
	struct task *t;
	int ret;

	read_num(p, p->f_prev_pid, data, size, &prev);
	read_num(p, p->f_prev_state, data, size, &state);
	read_num(p, p->f_next_pid, data, size, &next);
	state &= 1023;
	t = find_task(p, (int)prev);
	if (!t)
		return -ENOMEM;
	set_comm(p, t, p->f_prev_comm, data, size);
	t->sleeping = state != 0;
	ret = add_start(t, p->ed_switch, prev, state, ts);
	if (ret)
		return ret;
	t = find_task(p, (int)next);
	if (!t)
		return -ENOMEM;
	set_comm(p, t, p->f_next_comm, data, size);
	ret = end_start(t, p->ed_wakeup, next, ts);
	if (ret)
		return ret;
	return end_start(t, p->ed_switch, next, ts);
}

static int on_wakeup(struct prof *p, int pid, const void *data, uint32_t size, uint64_t ts)
{
	uint64_t v = 0, success;
	struct task *t;
	int ret;

	if (!find_task(p, pid))
		return -ENOMEM;
	if (read_num(p, p->f_wk_success, data, size, &success) && !success)
		return 0;
	read_num(p, p->f_wk_pid, data, size, &v);
	t = find_task(p, (int)v);
	if (!t)
		return -ENOMEM;
	set_comm(p, t, p->f_wk_comm, data, size);
	if (!t->sleeping)
		return 0;
	t->sleeping = false;
	ret = end_start(t, p->ed_switch, v, ts);
	if (ret)
		return ret;
	return add_start(t, p->ed_wakeup, v, v, ts);
}

static int on_event(struct prof *p, int e, int pid, const void *data, uint32_t size, uint64_t ts)
{
	const struct edata *ed = &p->eds[e];
	struct task *t = NULL;
	struct ehash *h;
	uint64_t v = 0;
	int ret;

	if (ed->start >= 0) {
		t = find_task(p, pid);
		if (!t)
			return -ENOMEM;
		read_num(p, ed->start_match, data, size, &v);
		ret = end_start(t, ed->start, v, ts);
		if (ret)
			return ret;
	}
	if (ed->end >= 0) {
		t = find_task(p, pid);
		if (!t)
			return -ENOMEM;
		v = 0;
		read_num(p, ed->end_match, data, size, &v);
		return add_start(t, e, v, v, ts);
	}
	if (t)
		return 0;
	t = find_task(p, pid);
	if (!t)
		return -ENOMEM;
	read_num(p, ed->data, data, size, &v);
	h = find_ehash(t, e, v, v);
	if (!h)
		return -ENOMEM;
	h->count++;
	return 0;
}

/* ---------------------------------------------------------------- setup */

/* The value of "KEY: value" at a line start of a format text, or NULL. */
static const char *format_line(const struct tk_text *t, const char *key, size_t *len)
{
	size_t kl = strlen(key);

	for (uint64_t i = 0; i + kl <= t->len; i++) {
		if ((i == 0 || t->data[i - 1] == '\n') && !memcmp(t->data + i, key, kl)) {
			uint64_t e = i + kl;

			while (e < t->len && t->data[e] != '\n' && t->data[e] != '\r')
				e++;
			*len = (size_t)(e - i - kl);
			return t->data + i + kl;
		}
	}
	return NULL;
}

/* Parse the format of event @id into the set (once); false when it does not parse. */
static bool load_ed(struct prof *p, int id)
{
	struct edata *ed = &p->eds[id];
	struct fmtref *f = &p->fmts[p->fmt_of[id]];
	const struct tk_event *ev;

	if (f->loaded)
		return ed->ev != NULL;
	f->loaded = true;
	if (tk_event_set_add_format(p->set, f->system, f->text.data, f->text.len) < 0)
		return false;
	ev = tk_event_find(p->set, id);
	if (!ev)
		return false;
	ed->ev = ev;
	/* An event trace-cmd does not know is counted by its first field's value. */
	if (ed->kind == K_UNDEF) {
		for (size_t k = 0; k < tk_event_field_count(ev); k++) {
			const struct tk_event_field *fl = tk_event_field_get(ev, k);

			if (!fl->is_common) {
				ed->data = fl;
				break;
			}
		}
	}
	return true;
}

static int find_ed(struct prof *p, const char *system, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < p->nfmts; i++) {
		size_t len;
		const char *n = format_line(&p->fmts[i].text, "name: ", &len);

		if (n && len == nl && !memcmp(n, name, nl) && !strcmp(p->fmts[i].system, system) &&
		    p->fmts[i].id >= 0)
			return load_ed(p, p->fmts[i].id) ? p->fmts[i].id : -1;
	}
	return -1;
}

static void mate(struct prof *p, int start, const char *end_match, int end, const char *start_match,
		 bool migrate)
{
	if (start < 0 || end < 0)
		return;
	p->eds[start].migrate = p->eds[end].migrate = migrate;
	p->eds[start].end = end;
	p->eds[end].start = start;
	p->eds[start].end_match = tk_event_field_find(p->eds[start].ev, end_match);
	p->eds[end].start_match = tk_event_field_find(p->eds[end].ev, start_match);
}

static int setup(struct prof *p, struct tk_dat *dat)
{
	const struct tk_tracedata *td = tk_dat_get_tracedata(dat);
	const struct tk_dat_info *info = tk_dat_get_info(dat);
	struct tk_text text;
	struct tk_dat_text kt;
	const char *system;
	int maxid = -1, e;
	bool big;
	uint8_t lsize;
	uint32_t psize;

	tk_tracedata_layout(td, &big, &lsize, &psize);
	p->set = tk_event_set_new(lsize == 4 ? 4 : 8, big, psize ? psize : info->page_size);
	if (!p->set)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_tracedata_header_page(td, &text) == 0 && text.len)
		tk_event_set_add_header_page(p->set, text.data, text.len);
	if (tk_tracedata_cmdlines(td, &text) == 0 && text.len &&
	    tk_event_set_add_cmdlines(p->set, text.data, text.len) == -ENOMEM)
		return tk_fail(ENOMEM, "out of memory");
	p->nfmts = tk_tracedata_format_count(td);
	p->fmts = calloc(p->nfmts + 1, sizeof(*p->fmts));
	if (!p->fmts)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nfmts && tk_tracedata_format(td, i, &system, &text) == 0; i++) {
		size_t len;
		const char *v = format_line(&text, "ID: ", &len);
		long id = -1;

		if (v && len && len < 12) {
			char num[16];

			memcpy(num, v, len);
			num[len] = 0;
			id = strtol(num, NULL, 10);
		}
		p->fmts[i].system = system;
		p->fmts[i].text = text;
		p->fmts[i].id = id >= 0 && id < 65536 ? (int)id : -1;
		if (p->fmts[i].id > maxid)
			maxid = p->fmts[i].id;
	}
	p->nids = (size_t)(maxid + 1);
	p->eds = calloc(p->nids + 1, sizeof(*p->eds));
	p->by_id = malloc((p->nids + 1) * sizeof(*p->by_id));
	p->fmt_of = malloc((p->nids + 1) * sizeof(*p->fmt_of));
	if (!p->eds || !p->by_id || !p->fmt_of)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nids; i++) {
		p->by_id[i] = -1;
		p->eds[i].id = (int)i;
		p->eds[i].start = p->eds[i].end = -1;
	}
	/* A later format of the same id wins, as in the event set. */
	for (size_t i = 0; i < p->nfmts; i++) {
		if (p->fmts[i].id < 0)
			continue;
		p->by_id[p->fmts[i].id] = p->fmts[i].id;
		p->fmt_of[p->fmts[i].id] = (int)i;
	}
	static const struct {
		const char *system, *name;
		enum kind kind;
	} known[] = {
		{"irq", "irq_handler_entry", K_IRQ},	   {"irq", "irq_handler_exit", K_IRQ},
		{"irq", "softirq_entry", K_SOFTIRQ},	   {"irq", "softirq_exit", K_SOFTIRQ},
		{"irq", "softirq_raise", K_SOFTIRQ_RAISE}, {"sched", "sched_wakeup", K_WAKEUP},
		{"sched", "sched_switch", K_SWITCH},	   {"raw_syscalls", "sys_enter", K_SYSCALL},
		{"raw_syscalls", "sys_exit", K_SYSCALL},   {"sched", "sched_process_exec", K_EXEC},
		{"ftrace", "kernel_stack", K_SKIP},	   {"ftrace", "funcgraph_entry", K_FUNC},
		{"ftrace", "funcgraph_exit", K_FUNC},	   {"ftrace", "function", K_FUNC},
	};
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
		e = find_ed(p, known[k].system, known[k].name);
		if (e >= 0) {
			p->eds[e].kind = known[k].kind;
			p->eds[e].data = NULL;
		}
	}
	p->ed_switch = find_ed(p, "sched", "sched_switch");
	p->ed_wakeup = find_ed(p, "sched", "sched_wakeup");
	if (p->ed_switch >= 0)
		p->eds[p->ed_switch].migrate = true;
	if (p->ed_wakeup >= 0)
		p->eds[p->ed_wakeup].migrate = true;
	e = find_ed(p, "sched", "sched_process_exec");
	if (e >= 0)
		p->eds[e].data = tk_event_field_find(p->eds[e].ev, "old_pid");
	e = find_ed(p, "ftrace", "function");
	if (e >= 0)
		p->eds[e].data = tk_event_field_find(p->eds[e].ev, "ip");
	if (p->ed_switch >= 0) {
		const struct tk_event *ev = p->eds[p->ed_switch].ev;

		p->f_prev_pid = tk_event_field_find(ev, "prev_pid");
		p->f_prev_state = tk_event_field_find(ev, "prev_state");
		p->f_next_pid = tk_event_field_find(ev, "next_pid");
		p->f_prev_comm = tk_event_field_find(ev, "prev_comm");
		p->f_next_comm = tk_event_field_find(ev, "next_comm");
	}
	if (p->ed_wakeup >= 0) {
		const struct tk_event *ev = p->eds[p->ed_wakeup].ev;

		p->f_wk_pid = tk_event_field_find(ev, "pid");
		p->f_wk_success = tk_event_field_find(ev, "success");
		p->f_wk_comm = tk_event_field_find(ev, "comm");
	}
	/*
	 * Without sched_wakeup trace-cmd leaves the switch's pid fields unset
	 * and reads garbage; we read them, and only the wake-up pairing is lost.
	 */
	mate(p, find_ed(p, "irq", "irq_handler_entry"), "irq",
	     find_ed(p, "irq", "irq_handler_exit"), "irq", false);
	mate(p, find_ed(p, "irq", "softirq_entry"), "vec", find_ed(p, "irq", "softirq_exit"), "vec",
	     false);
	mate(p, find_ed(p, "irq", "softirq_raise"), "vec", find_ed(p, "irq", "softirq_entry"),
	     "vec", false);
	mate(p, find_ed(p, "raw_syscalls", "sys_enter"), "id",
	     find_ed(p, "raw_syscalls", "sys_exit"), "id", true);
	mate(p, find_ed(p, "ftrace", "funcgraph_entry"), "func",
	     find_ed(p, "ftrace", "funcgraph_exit"), "func", true);
	if (tk_dat_kallsyms(dat, &kt) == 0 && kt.len &&
	    tk_event_set_add_kallsyms(p->set, kt.data, kt.len) == -ENOMEM)
		return tk_fail(ENOMEM, "out of memory");
	return 0;
}

/* ---------------------------------------------------------------- output */

static const struct prof *sort_prof;

static int ev_cmp(const void *a, const void *b)
{
	const struct ehash *x = *(const struct ehash *const *)a,
			   *y = *(const struct ehash *const *)b;
	const struct edata *ex = &sort_prof->eds[x->ed], *ey = &sort_prof->eds[y->ed];

	/* trace-cmd's compare_events(): switches first by state, then the wake-up, then by id. */
	if (ex->kind == K_SWITCH || ey->kind == K_SWITCH) {
		if (ex->kind != ey->kind)
			return ex->kind == K_SWITCH ? -1 : 1;
		return x->val < y->val ? -1 : x->val > y->val;
	}
	if (ex->kind == K_WAKEUP || ey->kind == K_WAKEUP) {
		if (ex->kind != ey->kind)
			return ex->kind == K_WAKEUP ? -1 : 1;
	} else {
		if (ex->id != ey->id)
			return ex->id < ey->id ? -1 : 1;
		if (x->total != y->total)
			return x->total > y->total ? -1 : 1;
	}
	/* Our tie order (trace-cmd's follows heap addresses): by value. */
	if (x->val != y->val)
		return x->val < y->val ? -1 : 1;
	return x->search < y->search ? -1 : x->search > y->search;
}

static int task_cmp(const void *a, const void *b)
{
	const struct task *x = *(const struct task *const *)a, *y = *(const struct task *const *)b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const char *const softirqs[] = {"HI",	       "TIMER",	  "NET_TX", "NET_RX",  "BLOCK",
				       "BLOCK_IOPOLL", "TASKLET", "SCHED",  "HRTIMER", "RCU"};

static void event_name(struct prof *p, const struct ehash *e, char *buf, size_t len)
{
	const struct edata *ed = &p->eds[e->ed];
	const char *name = tk_event_name(ed->ev);

	switch (ed->kind) {
	case K_SWITCH: {
		static const char states[] = "RSDTtXZxKWP";
		size_t n = (size_t)snprintf(buf, len, "%s:", name);
		int v = (int)e->val;

		if (!v) {
			snprintf(buf + n, len - n, "R");
			break;
		}
		for (int i = 0; v && i < (int)sizeof(states) - 1 && n + 1 < len; i++, v >>= 1)
			if (v & 1)
				buf[n++] = states[i + 1];
		buf[n] = 0;
		break;
	}
	case K_SYSCALL:
		snprintf(buf, len, "%s:%d", name, (int)e->val);
		break;
	case K_FUNC: {
		const struct tk_ksym *k = tk_event_ksym_find(p->set, NULL, e->val);

		if (k)
			snprintf(buf, len, "func: %.*s()", (int)k->name_len,
				 p->set->ksym_text + k->name_off);
		else
			snprintf(buf, len, "func: 0x%" PRIx64, e->val);
		break;
	}
	case K_SOFTIRQ:
	case K_SOFTIRQ_RAISE:
		if ((int)e->val >= 0 && (int)e->val < 10)
			snprintf(buf, len, "%s:%s", name, softirqs[(int)e->val]);
		else
			snprintf(buf, len, "%s:%d", name, (int)e->val);
		break;
	default:
		snprintf(buf, len, "%s:0x%" PRIx64, name, e->val);
		break;
	}
}

static int print_profile(struct prof *p, uint32_t cpus, struct tk_outbuf *out, bool json)
{
	struct task **v = malloc((p->ntasks + 1) * sizeof(*v));
	bool first = true;

	if (!v)
		return tk_fail(ENOMEM, "out of memory");
	memcpy(v, p->tasks, p->ntasks * sizeof(*v));
	qsort(v, p->ntasks, sizeof(*v), task_cmp);
	if (json)
		tk_an_printf(out, "{\n  \"cpus\": %" PRIu32 ",\n  \"tasks\": [", cpus);
	else
		tk_an_printf(out, "cpus=%" PRIu32 "\n", cpus);
	sort_prof = p;
	for (size_t i = 0; i < p->ntasks; i++) {
		struct task *t = v[i];
		const char *comm = t->has_comm ? t->comm : tk_event_comm(p->set, t->pid);
		struct ehash **e = malloc((t->nev + 1) * sizeof(*e));
		size_t n = 0;

		if (!e) {
			free(v);
			return tk_fail(ENOMEM, "out of memory");
		}
		for (size_t k = 0; k < t->evcap; k++)
			if (t->ev[k].ed >= 0)
				e[n++] = &t->ev[k];
		qsort(e, n, sizeof(*e), ev_cmp);
		if (json) {
			tk_an_printf(out, "%s\n    {\"comm\": ", first ? "" : ",");
			tk_an_json_str(out, comm);
			tk_an_printf(out, ", \"pid\": %d, \"events\": [", t->pid);
			first = false;
		} else {
			tk_an_printf(out, "\ntask: %s-%d\n", comm, t->pid);
		}
		for (size_t k = 0; k < n; k++) {
			char name[128];

			event_name(p, e[k], name, sizeof(name));
			if (json) {
				tk_an_printf(out, "%s\n      {\"event\": ", k ? "," : "");
				tk_an_json_str(out, name);
				tk_an_printf(out, ", \"count\": %" PRIu64, e[k]->count);
				if (e[k]->total)
					tk_an_printf(
						out,
						", \"total_ns\": %" PRIu64 ", \"avg_ns\": %" PRIu64
						", \"max_ns\": %" PRIu64 ", \"max_ts_ns\": %" PRIu64
						", \"min_ns\": %" PRIu64
						", \"min_ts_ns\": %" PRIu64,
						e[k]->total, e[k]->total / e[k]->count, e[k]->max,
						e[k]->ts_max, e[k]->min, e[k]->ts_min);
				tk_an_printf(out, "}");
				continue;
			}
			tk_an_printf(out, "  Event: %s (%" PRIu64 ")", name, e[k]->count);
			if (e[k]->total)
				tk_an_printf(out,
					     " Total: %" PRIu64 " Avg: %" PRIu64 " Max: %" PRIu64
					     "(ts:%" PRIu64 ".%06" PRIu64 ") Min:%" PRIu64
					     "(ts:%" PRIu64 ".%06" PRIu64 ")",
					     e[k]->total, e[k]->total / e[k]->count, e[k]->max,
					     e[k]->ts_max / 1000000000u,
					     (e[k]->ts_max % 1000000000u + 500) / 1000, e[k]->min,
					     e[k]->ts_min / 1000000000u,
					     (e[k]->ts_min % 1000000000u + 500) / 1000);
			tk_an_printf(out, "\n");
		}
		if (json)
			tk_an_printf(out, "\n    ]}");
		free(e);
	}
	if (json)
		tk_an_printf(out, "\n  ]\n}\n");
	free(v);
	return out->error;
}

static void prof_free(struct prof *p)
{
	for (size_t i = 0; i < p->ntasks; i++) {
		free(p->tasks[i]->ev);
		free(p->tasks[i]->st);
		free(p->tasks[i]->free_st);
		free(p->tasks[i]->heads);
		free(p->tasks[i]);
	}
	free(p->tasks);
	free(p->slot_pid);
	free(p->slot_idx);
	free(p->direct);
	free(p->eds);
	free(p->by_id);
	free(p->fmts);
	free(p->fmt_of);
	tk_event_set_free(p->set);
}

int tk_taskprofile_run(const char *path, const struct tk_taskprofile_opts *opts)
{
	struct prof p;
	struct tk_dat *dat;
	struct tk_dat_merge *m = NULL;
	struct tk_dat_merge_record mr;
	struct tk_outbuf out;
	size_t top = 0;
	int ret, fr;

	memset(&p, 0, sizeof(p));
	dat = tk_dat_open(path);
	if (!dat)
		return -errno;
	ret = setup(&p, dat);
	if (!ret) {
		/* trace-cmd report profiles the top buffer's records. */
		m = tk_dat_merge_new_ahead(dat, &top, 1, tk_an_spare_cpu());
		if (!m)
			ret = -errno;
	}
	while (!ret && (ret = tk_dat_merge_next(m, &mr)) > 0) {
		const void *data = mr.rec.data;
		uint32_t size = mr.rec.size;
		int id = tk_event_record_type(p.set, data, size), e, pid;

		ret = 0;
		cur_cpu = mr.cpu;
		if (mr.missed && (ret = drop_starts(&p, mr.cpu)) != 0)
			break;
		if (id < 0 || (size_t)id >= p.nids || (e = p.by_id[id]) < 0)
			continue;
		if (!p.eds[e].ev && !load_ed(&p, e)) {
			p.by_id[e] = -1;
			continue;
		}
		pid = tk_event_record_pid(p.set, data, size);
		if (!find_task(&p, pid)) {
			ret = -ENOMEM;
			break;
		}
		switch (p.eds[e].kind) {
		case K_SWITCH:
			ret = on_switch(&p, data, size, mr.ts);
			break;
		case K_WAKEUP:
			ret = on_wakeup(&p, pid, data, size, mr.ts);
			break;
		case K_EXEC: {
			uint64_t v;
			struct task *t;

			if (read_num(&p, p.eds[e].data, data, size, &v))
				pid = (int)v;
			t = find_task(&p, pid);
			if (!t)
				ret = -ENOMEM;
			else
				t->has_comm = false;
			break;
		}
		case K_SKIP:
			break;
		default:
			ret = on_event(&p, e, pid, data, size, mr.ts);
			break;
		}
		if (ret == -ENOMEM)
			ret = tk_fail(ENOMEM, "out of memory");
	}
	if (ret == 0) {
		if (tk_outbuf_init(&out, opts->fd, 0)) {
			ret = tk_fail(ENOMEM, "out of memory");
		} else {
			ret = print_profile(&p, tk_dat_get_info(dat)->cpu_count, &out,
					    opts->flags & TK_TASKPROFILE_JSON);
			fr = tk_outbuf_flush(&out);
			if (!ret && fr)
				ret = tk_fail(-fr, "write: %s", strerror(-fr));
			tk_outbuf_release(&out);
		}
	}
	tk_dat_merge_free(m);
	prof_free(&p);
	tk_dat_close(dat);
	return ret;
}
