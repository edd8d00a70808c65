// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tables: one trace as the tables Perfetto's trace processor defines,
 * computed in one pass of the feed (src/lib/analyze/feed.c) and written
 * row by row to a sink: the Parquet writer (parquet.c, a directory of
 * files per table) or SQLite (sqlite.c, one database).
 *
 * The tables, with Perfetto's names and columns where it has them
 * (the tables' .py files under src/trace_processor/tables/ of its source); every table ends with
 * trace_id, host and boot_id so the tables of many machines' traces can be
 * queried together:
 *   sched_slice   ts, dur, cpu, utid, tid, end_state, priority
 *                 A slice opens when sched_switch puts next_pid on a CPU
 *                 (priority: next_prio) and closes at that CPU's next
 *                 switch (end_state: the prev_state letters, "R+" for a
 *                 preempted task, as Perfetto prints them). The slice
 *                 running when the trace ends has dur -1 (Perfetto's "did
 *                 not end"); a CPU's first switch closes nothing, as the
 *                 slice it ends began before the trace.
 *   thread_state  ts, dur, cpu, utid, tid, state
 *                 Per thread, from the switches and wake-ups: "Running"
 *                 (cpu set) between switch-in and switch-out, then the
 *                 prev_state letters until sched_waking / sched_wakeup /
 *                 sched_wakeup_new makes it "R", until the next switch-in.
 *                 cpu is -1 when not running; the open state at the end
 *                 has dur -1.
 *   thread        utid, tid, name, upid      one row per thread seen
 *   process       upid, pid, name            perf.data's processes (a .dat
 *                 carries no thread-group ids: its threads have upid -1)
 *   ftrace_event  ts, cpu, utid, tid, name, arg_set_id   every tracepoint
 *                 record of the file (a perf.data's tracepoint samples
 *                 too), named by its event ("unknown" when the file has no
 *                 format for its id; arg_set_id -1 then)
 *   args          arg_set_id, key, int_value, string_value, value_type
 *                 one row per field of an ftrace_event but the common_
 *                 ones, read from the record's payload (the feed's
 *                 TK_FEED_PAYLOAD): "int", "string", or "bytes" (other
 *                 arrays, in hex). Perfetto's args has these columns and
 *                 more; every column here is required, so the value column
 *                 not used holds 0 or "".
 *   perf_sample   ts, cpu, utid, tid, callsite_id   perf.data samples of
 *                 other events; callsite_id names the stack in the
 *                 stack_profile tables (tables-stack.c), -1 when none
 *   counter       id, ts, track_id, value (a double)   one value of a
 *                 counter track at a time, made as Perfetto's importers
 *                 make them:
 *                 - power:cpu_idle: track "cpuidle" (type cpu_idle) of the
 *                   event's cpu_id, value its state (4294967295: leaving
 *                   idle, as the kernel's u32 -1 reads);
 *                 - power:cpu_frequency: "cpufreq" (cpu_frequency) of
 *                   cpu_id, value its state (kHz);
 *                 - perf.data samples of counting events (not tracepoints):
 *                   a track per (event, CPU of the sample) named as the
 *                   event, type perf_cpu_counter (perf_global_counter, one
 *                   per event, when samples carry no CPU, as in perf
 *                   record -s); the value is the running
 *                   sum of the samples' periods, or, for a sample with
 *                   PERF_SAMPLE_READ values (perf record -s, {a,b}:S
 *                   groups), each value read (a counter's count so far)
 *                   on the track of the event its id names. perf script
 *                   prints the difference of two such reads of one id as
 *                   the period; the value here is the count itself.
 *                 - kmem:rss_stat: "mem.rss.file", "mem.rss.anon",
 *                   "mem.swap", "mem.rss.shmem", "mem.unreclaimable" by
 *                   its member, type process_memory_thread_fallback (the
 *                   track Perfetto makes when it knows no process: a .dat
 *                   has none), of the thread whose mm it is, value its size
 *                   in bytes (on_rss_stat()).
 *   counter_track id, name, type, unit        every counter track
 *   cpu_counter_track id, name, type, unit, cpu   the tracks of one CPU
 *                 (all of the above but rss_stat's and perf_global_counter),
 *                 as Perfetto's view of that name
 *   thread_counter_track id, name, type, unit, utid   the tracks of one
 *                 thread (rss_stat's)
 *                 Perfetto's unit is mostly empty; so it is here. A track
 *                 row goes out when its first value does.
 *
 * Each CPU's idle task (tid 0) is a thread of its own, "swapper/N", as in
 * Perfetto: tid 0 runs on every CPU at once, and one thread could not be
 * Running on two.
 * utid and upid number threads and processes in order of appearance
 * within one trace (a .dat's saved command lines come first): they
 * join tables of the same trace_id, never across traces.
 *
 * Memory is per thread (a slot of ~64 bytes in an open-addressing table),
 * not per record: rows leave as they are made, and thread and process rows
 * go out at the end, when every name is known.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/event.h>
#include <tracekit/perfdata.h>

#include "feed.h"
#include "perf-read.h"
#include "perfdata-evname.h"
#include "tables-internal.h"
#include "tables-stack.h"
#include "internal/error.h"

#define IDENT_COLS                                                                                 \
	{"trace_id", TK_PARQUET_STRING}, {"host", TK_PARQUET_STRING},                              \
	{                                                                                          \
		"boot_id", TK_PARQUET_STRING                                                       \
	}

static const struct tk_parquet_col sched_slice_cols[] = {
	{"ts", TK_PARQUET_INT64},	{"dur", TK_PARQUET_INT64},
	{"cpu", TK_PARQUET_INT32},	{"utid", TK_PARQUET_INT64},
	{"tid", TK_PARQUET_INT64},	{"end_state", TK_PARQUET_STRING},
	{"priority", TK_PARQUET_INT32}, IDENT_COLS,
};
static const struct tk_parquet_col thread_state_cols[] = {
	{"ts", TK_PARQUET_INT64},
	{"dur", TK_PARQUET_INT64},
	{"cpu", TK_PARQUET_INT32},
	{"utid", TK_PARQUET_INT64},
	{"tid", TK_PARQUET_INT64},
	{"state", TK_PARQUET_STRING},
	IDENT_COLS,
};
static const struct tk_parquet_col thread_cols[] = {
	{"utid", TK_PARQUET_INT64},
	{"tid", TK_PARQUET_INT64},
	{"name", TK_PARQUET_STRING},
	{"upid", TK_PARQUET_INT64},
	IDENT_COLS,
};
static const struct tk_parquet_col process_cols[] = {
	{"upid", TK_PARQUET_INT64},
	{"pid", TK_PARQUET_INT64},
	{"name", TK_PARQUET_STRING},
	IDENT_COLS,
};
static const struct tk_parquet_col ftrace_event_cols[] = {
	{"ts", TK_PARQUET_INT64},
	{"cpu", TK_PARQUET_INT32},
	{"utid", TK_PARQUET_INT64},
	{"tid", TK_PARQUET_INT64},
	{"name", TK_PARQUET_STRING},
	{"arg_set_id", TK_PARQUET_INT64},
	IDENT_COLS,
};
static const struct tk_parquet_col args_cols[] = {
	{"arg_set_id", TK_PARQUET_INT64},  {"key", TK_PARQUET_STRING},
	{"int_value", TK_PARQUET_INT64},   {"string_value", TK_PARQUET_STRING},
	{"value_type", TK_PARQUET_STRING}, IDENT_COLS,
};
static const struct tk_parquet_col perf_sample_cols[] = {
	{"ts", TK_PARQUET_INT64},  {"cpu", TK_PARQUET_INT32},	      {"utid", TK_PARQUET_INT64},
	{"tid", TK_PARQUET_INT64}, {"callsite_id", TK_PARQUET_INT64}, IDENT_COLS,
};

static const struct tk_parquet_col counter_cols[] = {
	{"id", TK_PARQUET_INT64},
	{"ts", TK_PARQUET_INT64},
	{"track_id", TK_PARQUET_INT64},
	{"value", TK_PARQUET_DOUBLE},
	IDENT_COLS,
};
static const struct tk_parquet_col counter_track_cols[] = {
	{"id", TK_PARQUET_INT64},
	{"name", TK_PARQUET_STRING},
	{"type", TK_PARQUET_STRING},
	{"unit", TK_PARQUET_STRING},
	IDENT_COLS,
};
static const struct tk_parquet_col cpu_counter_track_cols[] = {
	{"id", TK_PARQUET_INT64},    {"name", TK_PARQUET_STRING}, {"type", TK_PARQUET_STRING},
	{"unit", TK_PARQUET_STRING}, {"cpu", TK_PARQUET_INT32},	  IDENT_COLS,
};

static const struct tk_parquet_col thread_counter_track_cols[] = {
	{"id", TK_PARQUET_INT64},    {"name", TK_PARQUET_STRING}, {"type", TK_PARQUET_STRING},
	{"unit", TK_PARQUET_STRING}, {"utid", TK_PARQUET_INT64},  IDENT_COLS,
};

static const struct tk_parquet_col mapping_cols[] = {
	{"id", TK_PARQUET_INT64},
	{"build_id", TK_PARQUET_STRING},
	{"exact_offset", TK_PARQUET_INT64},
	{"start", TK_PARQUET_INT64},
	{"end", TK_PARQUET_INT64},
	{"name", TK_PARQUET_STRING},
	IDENT_COLS,
};
static const struct tk_parquet_col frame_cols[] = {
	{"id", TK_PARQUET_INT64},
	{"name", TK_PARQUET_STRING},
	{"mapping", TK_PARQUET_INT64},
	{"rel_pc", TK_PARQUET_INT64},
	IDENT_COLS,
};
static const struct tk_parquet_col callsite_cols[] = {
	{"id", TK_PARQUET_INT64},
	{"depth", TK_PARQUET_INT32},
	{"parent_id", TK_PARQUET_INT64},
	{"frame_id", TK_PARQUET_INT64},
	IDENT_COLS,
};

#define DEF(name, cols)                                                                            \
	{                                                                                          \
		name, cols, sizeof(cols) / sizeof(cols[0])                                         \
	}

const struct tk_table_def tk_table_defs[TK_TABLE_COUNT] = {
	[TK_TABLE_SCHED_SLICE] = DEF("sched_slice", sched_slice_cols),
	[TK_TABLE_THREAD_STATE] = DEF("thread_state", thread_state_cols),
	[TK_TABLE_THREAD] = DEF("thread", thread_cols),
	[TK_TABLE_PROCESS] = DEF("process", process_cols),
	[TK_TABLE_FTRACE_EVENT] = DEF("ftrace_event", ftrace_event_cols),
	[TK_TABLE_PERF_SAMPLE] = DEF("perf_sample", perf_sample_cols),
	[TK_TABLE_ARGS] = DEF("args", args_cols),
	[TK_TABLE_STACK_MAPPING] = DEF("stack_profile_mapping", mapping_cols),
	[TK_TABLE_STACK_FRAME] = DEF("stack_profile_frame", frame_cols),
	[TK_TABLE_STACK_CALLSITE] = DEF("stack_profile_callsite", callsite_cols),
	[TK_TABLE_COUNTER] = DEF("counter", counter_cols),
	[TK_TABLE_COUNTER_TRACK] = DEF("counter_track", counter_track_cols),
	[TK_TABLE_CPU_COUNTER_TRACK] = DEF("cpu_counter_track", cpu_counter_track_cols),
	[TK_TABLE_THREAD_COUNTER_TRACK] = DEF("thread_counter_track", thread_counter_track_cols),
};

enum { W_SWITCH, W_WAKING, W_WAKEUP, W_WAKEUP_NEW, W_CPU_IDLE, W_CPU_FREQ, W_RSS_STAT };

static const struct tk_feed_want wants[] = {
	[W_SWITCH] = {"sched", "sched_switch", {"prev_pid", "prev_state", "next_pid", "next_prio"}},
	[W_WAKING] = {"sched", "sched_waking", {"pid"}},
	[W_WAKEUP] = {"sched", "sched_wakeup", {"pid"}},
	[W_WAKEUP_NEW] = {"sched", "sched_wakeup_new", {"pid"}},
	[W_CPU_IDLE] = {"power", "cpu_idle", {"state", "cpu_id"}},
	[W_CPU_FREQ] = {"power", "cpu_frequency", {"state", "cpu_id"}},
	[W_RSS_STAT] = {"kmem", "rss_stat", {"mm_id", "curr", "member", "size"}},
};

/* The kinds of counter track, in the high byte of a track's key. */
enum { CT_CPU_IDLE = 1, CT_CPU_FREQ = 2, CT_PERF = 3, CT_PERF_GLOBAL = 4, CT_RSS = 5 };

/* rss_stat's member (the kernel's MM_* counter) as Perfetto names its track. */
static const char *const rss_names[] = {"mem.rss.file",	 "mem.rss.anon",      "mem.swap",
					"mem.rss.shmem", "mem.unreclaimable", "mem.unknown"};

/* Which thread an mm_id was last seen with, when its rss_stat was current. */
struct mm_slot {
	uint32_t mm_id;
	int32_t tid;
	bool used;
};

struct ctrack {
	uint64_t key; /* kind << 56 | event index or member << 32 | cpu or utid; 0: free */
	int64_t id;
	double sum; /* CT_PERF without READ values: the periods so far */
};

#define NO_CPU	  UINT32_MAX
#define STATE_LEN 20 /* "S|D|T|t|X|Z|P|I+" and its NUL: 17 */
#define MAX_CPUS  4096
#define NOT_ENDED (-1)

struct thread {
	int32_t tid; /* the key; slots with utid < 0 are free */
	int32_t pid; /* thread group, -1 unknown */
	int64_t utid;
	uint64_t state_ts; /* start of the open thread_state */
	uint32_t cpu;	   /* NO_CPU unless running */
	bool has_state;
	const char *state; /* interned: one of tables.states, or a literal */
	char comm[TK_FEED_COMM_LEN];
};

struct cpu_slice {
	bool open;
	uint64_t ts;
	int32_t tid;
	int32_t prio;
	int64_t utid;
};

struct tables {
	const struct tk_table_sink *sink;
	const struct tk_table_ident *ident;
	const struct tk_feed_stats *st;
	uint64_t *rows;
	struct thread *threads; /* open addressing on tid */
	size_t nslots, nthreads;
	int64_t next_utid;
	struct cpu_slice *cpus;
	uint32_t ncpus;
	struct tk_parquet_val v[16];
	struct tk_parquet_val av[16]; /* an args row, made while v holds its event's */
	int64_t next_arg_set;
	struct tk_stack *stack;
	struct tk_parquet_val sv[16]; /* a stack_profile row, made inside a sample's */
	struct tk_parquet_val cv[8];  /* a counter or counter track row */
	struct ctrack *ctracks;	      /* open addressing on key */
	size_t nctslots, nctracks;
	struct mm_slot *mms; /* open addressing on mm_id */
	size_t nmmslots, nmms;
	int64_t next_counter;
	char evname[64];
	char hex[2048];
	struct tk_parquet_val identv[TK_TABLE_IDENT_COLS];
	/*
	 * Every prev_state text (low 9 bits), made once: the writers take a
	 * string at the address of the previous row's as the same string.
	 */
	char states[512][STATE_LEN];
};

/* The ident cells, once the feed has read the file's host. */
static void ident_vals(struct tables *t)
{
	const char *host = t->ident->host ? t->ident->host : t->st->host;
	const char *boot = t->ident->boot_id ? t->ident->boot_id : "";
	struct tk_parquet_val *v = t->identv;

	v[0].s = t->ident->trace_id;
	v[0].len = (uint32_t)strlen(v[0].s);
	v[1].s = host;
	v[1].len = (uint32_t)strlen(host);
	v[2].s = boot;
	v[2].len = (uint32_t)strlen(boot);
}

static int emit(struct tables *t, enum tk_table_id table, struct tk_parquet_val *v)
{
	const struct tk_table_def *d = &tk_table_defs[table];

	if (!t->identv[0].s)
		ident_vals(t);
	memcpy(v + d->ncols - TK_TABLE_IDENT_COLS, t->identv, sizeof(t->identv));
	if (t->rows)
		t->rows[table]++;
	return t->sink->row(t->sink->ctx, table, v);
}

/* A string that stays unchanged at its address for the whole run. */
static void set_str(struct tk_parquet_val *v, const char *s)
{
	v->s = s;
	v->len = (uint32_t)strlen(s);
	v->transient = false;
}

/*
 * The bytes of an array field that is not a string (fixed, or __data_loc /
 * __rel_loc: a 32-bit word of offset | length << 16); false when they lie
 * outside the record.
 */
static bool field_bytes(const struct tk_event_set *set, const struct tk_event_field *fl,
			const struct tk_feed_rec *r, const uint8_t **p, uint32_t *len)
{
	uint64_t word, off, n;

	if (!fl->is_dynamic) {
		off = fl->offset;
		n = fl->size;
	} else {
		if (tk_event_field_read(set, fl, r->raw, r->raw_size, &word))
			return false;
		off = (word & 0xffff) + (fl->is_relative ? (uint64_t)fl->offset + fl->size : 0);
		n = (word >> 16) & 0xffff;
	}
	if (off + n > r->raw_size)
		return false;
	*p = (const uint8_t *)r->raw + off;
	*len = (uint32_t)n;
	return true;
}

/*
 * One args row per field of the record that is not a common field:
 * numbers as int_value (value_type "int"), strings as string_value
 * ("string"), other arrays as their bytes in hex ("bytes"). The rows share
 * the event's arg_set_id.
 */
static int emit_args(struct tables *t, const struct tk_feed_rec *r, int64_t set_id)
{
	size_t n = tk_event_field_count(r->event);
	struct tk_parquet_val *v = t->av;
	int ret;

	for (size_t i = 0; i < n; i++) {
		const struct tk_event_field *fl = tk_event_field_get(r->event, i);
		const char *s;
		uint32_t len;
		uint64_t num;

		if (fl->is_common)
			continue;
		v[0].i = set_id;
		/* the Parquet writer groups a row group's args by event */
		v[0].group = (uint16_t)tk_event_id(r->event);
		set_str(&v[1], fl->name);
		if (fl->is_string) {
			if (tk_event_field_string(t->st->set, fl, r->raw, r->raw_size, &s, &len))
				continue;
			v[2].i = 0;
			v[3].s = s;
			v[3].len = len;
			v[3].transient = true;
			set_str(&v[4], "string");
		} else if (fl->is_array || fl->is_dynamic) {
			const uint8_t *p;
			uint32_t k;

			if (!field_bytes(t->st->set, fl, r, &p, &len))
				continue;
			/* Two hex digits a byte; longer arrays are cut (a row stays small). */
			for (k = 0; k < len && k < sizeof(t->hex) / 2; k++) {
				t->hex[2 * k] = "0123456789abcdef"[p[k] >> 4];
				t->hex[2 * k + 1] = "0123456789abcdef"[p[k] & 15];
			}
			v[2].i = 0;
			v[3].s = t->hex;
			v[3].len = 2 * k;
			v[3].transient = true;
			set_str(&v[4], "bytes");
		} else {
			if (tk_event_field_read(t->st->set, fl, r->raw, r->raw_size, &num))
				continue;
			v[2].i = (int64_t)num;
			set_str(&v[3], "");
			set_str(&v[4], "int");
		}
		ret = emit(t, TK_TABLE_ARGS, v);
		if (ret)
			return ret;
	}
	return 0;
}

static uint32_t tid_hash(int32_t tid)
{
	return (uint32_t)tid * 2654435761u;
}

static int grow_threads(struct tables *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 1024;
	struct thread *s = malloc(n * sizeof(*s));

	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		s[i].utid = -1;
	for (size_t i = 0; i < t->nslots; i++) {
		size_t h;

		if (t->threads[i].utid < 0)
			continue;
		h = tid_hash(t->threads[i].tid) & (n - 1);
		while (s[h].utid >= 0)
			h = (h + 1) & (n - 1);
		s[h] = t->threads[i];
	}
	free(t->threads);
	t->threads = s;
	t->nslots = n;
	return 0;
}

/* The thread @tid, created on first sight; NULL when out of memory. */
static struct thread *thread_get(struct tables *t, int32_t tid)
{
	size_t h;

	if ((t->nthreads + 1) * 2 > t->nslots && grow_threads(t))
		return NULL;
	h = tid_hash(tid) & (t->nslots - 1);
	while (t->threads[h].utid >= 0) {
		if (t->threads[h].tid == tid)
			return &t->threads[h];
		h = (h + 1) & (t->nslots - 1);
	}
	memset(&t->threads[h], 0, sizeof(t->threads[h]));
	t->threads[h].tid = tid;
	t->threads[h].pid = -1;
	t->threads[h].utid = t->next_utid++;
	t->threads[h].cpu = NO_CPU;
	t->nthreads++;
	return &t->threads[h];
}

/*
 * Each CPU's idle task (tid 0 on every CPU at once) is a thread of its own,
 * "swapper/N", as in Perfetto: one thread_state per CPU's idle time. Its key
 * in the table is IDLE_KEY + cpu, below every real tid.
 */
#define IDLE_KEY INT32_MIN

static int32_t thread_tid(const struct thread *th)
{
	return th->tid < IDLE_KEY + MAX_CPUS ? 0 : th->tid;
}

/* The thread of @tid as seen on @cpu: the CPU's idle thread for tid 0. */
static struct thread *thread_on(struct tables *t, int32_t tid, uint32_t cpu)
{
	struct thread *th;

	if (tid != 0 || cpu >= MAX_CPUS)
		return thread_get(t, tid);
	th = thread_get(t, IDLE_KEY + (int32_t)cpu);
	if (th && !th->comm[0])
		snprintf(th->comm, sizeof(th->comm), "swapper/%u", cpu);
	return th;
}

static struct cpu_slice *cpu_get(struct tables *t, uint32_t cpu)
{
	if (cpu >= MAX_CPUS)
		return NULL;
	if (cpu >= t->ncpus) {
		uint32_t n = cpu + 1 > t->ncpus * 2 ? cpu + 1 : t->ncpus * 2;
		struct cpu_slice *c = realloc(t->cpus, n * sizeof(*c));

		if (!c)
			return NULL;
		memset(c + t->ncpus, 0, (n - t->ncpus) * sizeof(*c));
		t->cpus = c;
		t->ncpus = n;
	}
	return &t->cpus[cpu];
}

/* prev_state as the kernel prints it: the letters of the low bits, "+" when preempted. */
static void state_text(unsigned int v, char *out)
{
	static const char letters[] = "SDTtXZPI";
	size_t n = 0;

	for (int i = 0; letters[i]; i++) {
		if (!(v & (1u << i)))
			continue;
		if (n)
			out[n++] = '|';
		out[n++] = letters[i];
	}
	if (!n)
		out[n++] = 'R';
	if (v & 0x100)
		out[n++] = '+';
	out[n] = 0;
}

/* Close @th's open thread_state at @ts and open @state. */
static int thread_state_to(struct tables *t, struct thread *th, uint64_t ts, const char *state,
			   uint32_t cpu)
{
	if (th->has_state) {
		struct tk_parquet_val *v = t->v;

		v[0].i = (int64_t)th->state_ts;
		v[1].i = (int64_t)(ts - th->state_ts);
		v[2].i = th->cpu == NO_CPU ? -1 : (int64_t)th->cpu;
		v[3].i = th->utid;
		v[4].i = thread_tid(th);
		set_str(&v[5], th->state);
		v[0].group = (uint16_t)th->utid; /* grouped by thread in Parquet */
		int ret = emit(t, TK_TABLE_THREAD_STATE, v);

		if (ret)
			return ret;
	}
	th->has_state = true;
	th->state_ts = ts;
	th->cpu = cpu;
	th->state = state;
	return 0;
}

static int slice_out(struct tables *t, const struct cpu_slice *s, uint32_t cpu, int64_t dur,
		     const char *end_state)
{
	struct tk_parquet_val *v = t->v;

	v[0].i = (int64_t)s->ts;
	v[1].i = dur;
	v[2].i = cpu;
	v[3].i = s->utid;
	v[4].i = s->tid;
	set_str(&v[5], end_state);
	v[6].i = s->prio;
	return emit(t, TK_TABLE_SCHED_SLICE, v);
}

static int on_switch(struct tables *t, const struct tk_feed_rec *r)
{
	int32_t prev = (int32_t)r->val[0], next = (int32_t)r->val[2];
	struct cpu_slice *s = cpu_get(t, r->cpu);
	const char *state = t->states[r->val[1] & 511];
	struct thread *pt, *nt;
	int ret;

	if (!s)
		return r->cpu >= MAX_CPUS ? 0 : tk_fail(ENOMEM, "out of memory");
	if (s->open) {
		ret = slice_out(t, s, r->cpu, (int64_t)(r->time - s->ts), state);
		if (ret)
			return ret;
	}
	pt = thread_on(t, prev, r->cpu);
	if (!pt)
		return tk_fail(ENOMEM, "out of memory");
	ret = thread_state_to(t, pt, r->time, state, NO_CPU);
	if (ret)
		return ret;
	nt = thread_on(t, next, r->cpu);
	if (!nt)
		return tk_fail(ENOMEM, "out of memory");
	ret = thread_state_to(t, nt, r->time, "Running", r->cpu);
	if (ret)
		return ret;
	s->open = true;
	s->ts = r->time;
	s->tid = next;
	s->utid = nt->utid;
	s->prio = (int32_t)r->val[3];
	return 0;
}

static int on_wakeup(struct tables *t, const struct tk_feed_rec *r)
{
	struct thread *th;

	/* The idle tasks are never woken. */
	if (!r->val[0])
		return 0;
	th = thread_get(t, (int32_t)r->val[0]);
	if (!th)
		return tk_fail(ENOMEM, "out of memory");
	/* A running or already runnable thread stays as it is. */
	if (th->cpu != NO_CPU || (th->has_state && !strcmp(th->state, "R")))
		return 0;
	return thread_state_to(t, th, r->time, "R", NO_CPU);
}

static uint64_t ct_hash(uint64_t key)
{
	return (key * 0x9e3779b97f4a7c15ull) >> 20;
}

static int grow_ctracks(struct tables *t)
{
	size_t n = t->nctslots ? t->nctslots * 2 : 64;
	struct ctrack *s = calloc(n, sizeof(*s));

	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < t->nctslots; i++) {
		size_t h;

		if (!t->ctracks[i].key)
			continue;
		h = ct_hash(t->ctracks[i].key) & (n - 1);
		while (s[h].key)
			h = (h + 1) & (n - 1);
		s[h] = t->ctracks[i];
	}
	free(t->ctracks);
	t->ctracks = s;
	t->nctslots = n;
	return 0;
}

/* A perf.data event's name, as perf script prints it; else by its index. */
static const char *perf_event_name(struct tables *t, uint32_t idx)
{
	const struct tk_perfdata_evsel *e = t->st->pd && idx < tk_perfdata_evsel_count(t->st->pd)
						    ? tk_perfdata_evsel_get(t->st->pd, idx)
						    : NULL;

	if (e)
		return tk_perfdata_evsel_display_name(e, t->evname, sizeof(t->evname));
	snprintf(t->evname, sizeof(t->evname), "event%u", idx);
	return t->evname;
}

/*
 * The counter track of @kind, @idx (a perf.data event's index, an
 * rss_stat member) and @dim (its CPU, or for CT_RSS its thread's utid),
 * made on first use, when its counter_track row and its cpu_counter_track
 * or thread_counter_track row go out. NULL when out of memory or a sink
 * failed (*ret set).
 */
static struct ctrack *ctrack_get(struct tables *t, unsigned int kind, uint32_t idx, uint32_t dim,
				 int *ret)
{
	uint64_t key = (uint64_t)kind << 56 | (uint64_t)(idx & 0xffffff) << 32 | dim;
	struct tk_parquet_val *v = t->cv;
	struct ctrack *c;
	const char *name, *type;
	size_t h;

	if ((t->nctracks + 1) * 2 > t->nctslots && (*ret = grow_ctracks(t)))
		return NULL;
	h = ct_hash(key) & (t->nctslots - 1);
	while (t->ctracks[h].key) {
		if (t->ctracks[h].key == key)
			return &t->ctracks[h];
		h = (h + 1) & (t->nctslots - 1);
	}
	c = &t->ctracks[h];
	c->key = key;
	c->id = (int64_t)t->nctracks++;
	c->sum = 0;
	/* Perfetto's names and types (its tracks_common.h blueprints). */
	if (kind == CT_CPU_IDLE) {
		name = "cpuidle";
		type = "cpu_idle";
	} else if (kind == CT_CPU_FREQ) {
		name = "cpufreq";
		type = "cpu_frequency";
	} else if (kind == CT_RSS) {
		/* Perfetto's track when it knows the thread but not its process. */
		name = rss_names[idx];
		type = "process_memory_thread_fallback";
	} else {
		name = perf_event_name(t, idx);
		type = kind == CT_PERF ? "perf_cpu_counter" : "perf_global_counter";
	}
	v[0].i = c->id;
	v[1].s = name;
	v[1].len = (uint32_t)strlen(name);
	v[1].transient = true;
	set_str(&v[2], type);
	set_str(&v[3], "");
	*ret = emit(t, TK_TABLE_COUNTER_TRACK, v);
	if (*ret)
		return NULL;
	if (kind == CT_PERF_GLOBAL)
		return c;
	v[4].i = dim;
	*ret = emit(t, kind == CT_RSS ? TK_TABLE_THREAD_COUNTER_TRACK : TK_TABLE_CPU_COUNTER_TRACK,
		    v);
	return *ret ? NULL : c;
}

static int counter_out(struct tables *t, const struct ctrack *c, uint64_t ts, double value)
{
	struct tk_parquet_val *v = t->cv;

	v[0].i = t->next_counter++;
	v[1].i = (int64_t)ts;
	v[2].i = c->id;
	v[3].d = value;
	return emit(t, TK_TABLE_COUNTER, v);
}

/* cpu_idle and cpu_frequency: the state on the track of the event's cpu_id. */
static int on_cpu_state(struct tables *t, const struct tk_feed_rec *r, unsigned int kind)
{
	struct ctrack *c;
	int ret = 0;

	c = ctrack_get(t, kind, 0, (uint32_t)r->val[1], &ret);
	if (!c)
		return ret;
	return counter_out(t, c, r->time, (double)(uint32_t)r->val[0]);
}

/* The slot of @mm_id; NULL when out of memory. */
static struct mm_slot *mm_get(struct tables *t, uint32_t mm_id)
{
	size_t h;

	if ((t->nmms + 1) * 2 > t->nmmslots) {
		size_t n = t->nmmslots ? t->nmmslots * 2 : 256;
		struct mm_slot *s = calloc(n, sizeof(*s));

		if (!s)
			return NULL;
		for (size_t i = 0; i < t->nmmslots; i++) {
			if (!t->mms[i].used)
				continue;
			h = (t->mms[i].mm_id * 2654435761u) & (n - 1);
			while (s[h].used)
				h = (h + 1) & (n - 1);
			s[h] = t->mms[i];
		}
		free(t->mms);
		t->mms = s;
		t->nmmslots = n;
	}
	h = (mm_id * 2654435761u) & (t->nmmslots - 1);
	while (t->mms[h].used && t->mms[h].mm_id != mm_id)
		h = (h + 1) & (t->nmmslots - 1);
	if (!t->mms[h].used) {
		t->mms[h].used = true;
		t->mms[h].mm_id = mm_id;
		t->mms[h].tid = -1;
		t->nmms++;
	}
	return &t->mms[h];
}

/*
 * kmem:rss_stat as Perfetto's rss_stat tracker reads it: the size (bytes)
 * of one of the mm's counters, on the track of the thread whose mm it is:
 * the event's own thread when curr is set (and the mm_id is then known to
 * be that thread's), else the thread last seen with that mm_id; an mm_id
 * never seen current, or a negative size, makes no value.
 */
static int on_rss_stat(struct tables *t, const struct tk_feed_rec *r)
{
	struct mm_slot *mm = mm_get(t, (uint32_t)r->val[0]);
	uint32_t member = (uint32_t)r->val[2];
	int64_t size = (int64_t)r->val[3];
	struct thread *th;
	struct ctrack *c;
	int ret = 0;

	if (!mm)
		return tk_fail(ENOMEM, "out of memory");
	if (r->val[1])
		mm->tid = r->tid;
	if (mm->tid < 0 || size < 0)
		return 0;
	th = thread_get(t, mm->tid);
	if (!th)
		return tk_fail(ENOMEM, "out of memory");
	if (member > 5)
		member = 5;
	c = ctrack_get(t, CT_RSS, member, (uint32_t)th->utid, &ret);
	if (!c)
		return ret;
	return counter_out(t, c, r->time, (double)size);
}

/* The values of one group read taken (perf's groups are far smaller). */
#define READ_MAX 64

/*
 * A perf.data sample of a counting event: its PERF_SAMPLE_READ values when
 * it has them (perf-read.h), each on the track of the event its id names
 * (the sample's own without PERF_FORMAT_ID); else its period added to its
 * event's track.
 */
static int on_sample_counter(struct tables *t, const struct tk_feed_rec *r)
{
	uint32_t idx = (uint32_t)r->val[2];
	const struct tk_perfdata_evsel *e = t->st->pd && idx < tk_perfdata_evsel_count(t->st->pd)
						    ? tk_perfdata_evsel_get(t->st->pd, idx)
						    : NULL;
	/* Samples without a CPU count on one track per event, as Perfetto's. */
	unsigned int kind =
		e && !(e->attr.sample_type & TK_PERF_SAMPLE_CPU) ? CT_PERF_GLOBAL : CT_PERF;
	uint32_t cpu = kind == CT_PERF ? r->cpu : 0;
	struct ctrack *c;
	int ret = 0;

	if (r->read_size && e) {
		struct tk_read_value rv[READ_MAX];
		uint32_t n = tk_perf_read_values(e->attr.read_format,
						 (const uint8_t *)r->raw + r->raw_size,
						 r->read_size, rv, READ_MAX);

		for (uint32_t i = 0; i < n; i++) {
			uint32_t member = idx;

			if (e->attr.read_format & TK_PERF_READ_ID) {
				int m = tk_perfdata_evsel_of_id(t->st->pd, rv[i].id);

				if (m < 0)
					continue;
				member = (uint32_t)m;
			}
			c = ctrack_get(t, kind, member, cpu, &ret);
			if (!c)
				return ret;
			ret = counter_out(t, c, r->time, (double)rv[i].value);
			if (ret)
				return ret;
		}
		return 0;
	}
	c = ctrack_get(t, kind, idx, cpu, &ret);
	if (!c)
		return ret;
	c->sum += (double)r->val[1];
	return counter_out(t, c, r->time, c->sum);
}

static int on_record(void *ctx, const struct tk_feed_rec *r)
{
	struct tables *t = ctx;
	struct tk_parquet_val *v = t->v;
	struct thread *th;
	int ret;

	switch (r->kind) {
	case TK_FEED_COMM:
		th = thread_get(t, r->tid);
		if (!th)
			return tk_fail(ENOMEM, "out of memory");
		memcpy(th->comm, r->comm, sizeof(th->comm));
		if (t->st->perfdata)
			th->pid = r->pid;
		return 0;
	case TK_FEED_FORK:
		th = thread_get(t, r->tid);
		if (!th)
			return tk_fail(ENOMEM, "out of memory");
		th->pid = r->pid;
		/* A forked thread carries its parent's name until its COMM. */
		if (!th->comm[0]) {
			struct thread *parent = thread_get(t, (int32_t)r->val[1]);

			if (!parent)
				return tk_fail(ENOMEM, "out of memory");
			memcpy(th->comm, parent->comm, sizeof(th->comm));
		}
		return 0;
	case TK_FEED_EXIT:
		return 0;
	case TK_FEED_DAMAGE:
		return t->sink->damage(t->sink->ctx, r->val[0], r->what, r->val[1],
				       r->val[2] == UINT64_MAX ? -1 : (int64_t)r->val[2]);
	case TK_FEED_SAMPLE: {
		int64_t cs;

		th = thread_on(t, r->tid, r->cpu);
		if (!th)
			return tk_fail(ENOMEM, "out of memory");
		if (th->pid < 0)
			th->pid = r->pid;
		cs = tk_stack_sample(t->stack, r->pid, r->val[0], r->raw, r->raw_size);
		if (cs < -1)
			return (int)cs;
		v[0].i = (int64_t)r->time;
		v[1].i = r->cpu;
		v[2].i = th->utid;
		v[3].i = r->tid;
		v[4].i = cs;
		ret = emit(t, TK_TABLE_PERF_SAMPLE, v);
		return ret ? ret : on_sample_counter(t, r);
	}
	case TK_FEED_MMAP:
		return tk_stack_mmap(t->stack, r->pid, r->val[0], r->val[1], r->val[2], r->raw,
				     r->raw_size);
	case TK_FEED_BUILD_ID:
		return tk_stack_build_id(t->stack, r->raw, r->raw_size);
	default:
		break;
	}
	/* A tracepoint record: first its ftrace_event row, then what it means. */
	th = thread_on(t, r->tid, r->cpu);
	if (!th)
		return tk_fail(ENOMEM, "out of memory");
	if (t->st->perfdata && th->pid < 0)
		th->pid = r->pid;
	v[0].i = (int64_t)r->time;
	v[1].i = r->cpu;
	v[2].i = th->utid;
	v[3].i = r->tid;
	set_str(&v[4], r->event ? tk_event_name(r->event) : "unknown");
	v[5].i = r->event && r->raw ? t->next_arg_set++ : -1;
	ret = emit(t, TK_TABLE_FTRACE_EVENT, v);
	if (!ret && v[5].i >= 0)
		ret = emit_args(t, r, v[5].i);
	if (ret)
		return ret;
	switch (r->want) {
	case W_SWITCH:
		return on_switch(t, r);
	case W_WAKING:
	case W_WAKEUP:
	case W_WAKEUP_NEW:
		return on_wakeup(t, r);
	case W_CPU_IDLE:
		return on_cpu_state(t, r, CT_CPU_IDLE);
	case W_CPU_FREQ:
		return on_cpu_state(t, r, CT_CPU_FREQ);
	case W_RSS_STAT:
		return on_rss_stat(t, r);
	default:
		return 0;
	}
}

static int stack_mapping(void *ctx, int64_t id, const char *build_id, uint64_t exact_offset,
			 uint64_t start, uint64_t end, const char *name)
{
	struct tables *t = ctx;
	struct tk_parquet_val *v = t->sv;

	v[0].i = id;
	set_str(&v[1], build_id);
	v[2].i = (int64_t)exact_offset;
	v[3].i = (int64_t)start;
	v[4].i = (int64_t)end;
	set_str(&v[5], name);
	return emit(t, TK_TABLE_STACK_MAPPING, v);
}

static int stack_frame(void *ctx, int64_t id, int64_t mapping, uint64_t rel_pc)
{
	struct tables *t = ctx;
	struct tk_parquet_val *v = t->sv;

	v[0].i = id;
	set_str(&v[1], "");
	v[2].i = mapping;
	v[3].i = (int64_t)rel_pc;
	return emit(t, TK_TABLE_STACK_FRAME, v);
}

static int stack_callsite(void *ctx, int64_t id, uint32_t depth, int64_t parent_id,
			  int64_t frame_id)
{
	struct tables *t = ctx;
	struct tk_parquet_val *v = t->sv;

	v[0].i = id;
	v[1].i = depth;
	v[2].i = parent_id;
	v[3].i = frame_id;
	return emit(t, TK_TABLE_STACK_CALLSITE, v);
}

/* The open slices and states at the end of the trace: dur -1, as Perfetto has them. */
static int finish_open(struct tables *t)
{
	int ret;

	for (uint32_t c = 0; c < t->ncpus; c++) {
		if (!t->cpus[c].open)
			continue;
		ret = slice_out(t, &t->cpus[c], c, NOT_ENDED, "");
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < t->nslots; i++) {
		const struct thread *th = &t->threads[i];
		struct tk_parquet_val *v = t->v;

		if (th->utid < 0 || !th->has_state)
			continue;
		v[0].i = (int64_t)th->state_ts;
		v[1].i = NOT_ENDED;
		v[2].i = th->cpu == NO_CPU ? -1 : (int64_t)th->cpu;
		v[3].i = th->utid;
		v[4].i = thread_tid(th);
		set_str(&v[5], th->state);
		v[0].group = (uint16_t)th->utid; /* grouped by thread in Parquet */
		ret = emit(t, TK_TABLE_THREAD_STATE, v);
		if (ret)
			return ret;
	}
	return 0;
}

static int cmp_utid(const void *a, const void *b)
{
	const struct thread *x = *(const struct thread *const *)a;
	const struct thread *y = *(const struct thread *const *)b;

	return (x->utid > y->utid) - (x->utid < y->utid);
}

struct proc {
	int32_t pid;
	bool has_main;
	int64_t first_utid, upid;
	const char *name;
};

static int cmp_proc_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->first_utid > y->first_utid) - (x->first_utid < y->first_utid);
}

static int cmp_proc_utid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->first_utid > y->first_utid) - (x->first_utid < y->first_utid);
}

static const char *thread_name(const struct thread *th)
{
	if (!th->comm[0] && thread_tid(th) == 0)
		return "swapper";
	return th->comm;
}

/*
 * thread and process rows. Processes are numbered in order of their first
 * thread's utid and named by their main thread (tid == pid) when it was
 * seen, else by their first thread.
 */
static int finish_threads(struct tables *t)
{
	size_t cap = t->nthreads ? t->nthreads : 1;
	struct thread **order = malloc(cap * sizeof(*order));
	struct proc *procs = malloc(cap * sizeof(*procs));
	struct tk_parquet_val *v = t->v;
	size_t n = 0, np = 0, nd = 0;
	int ret = 0;

	if (!order || !procs) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < t->nslots; i++)
		if (t->threads[i].utid >= 0)
			order[n++] = &t->threads[i];
	qsort(order, n, sizeof(*order), cmp_utid);
	for (size_t i = 0; i < n; i++) {
		if (order[i]->pid < 0)
			continue;
		procs[np++] = (struct proc){.pid = order[i]->pid,
					    .has_main = order[i]->tid == order[i]->pid,
					    .first_utid = order[i]->utid,
					    .name = thread_name(order[i])};
	}
	qsort(procs, np, sizeof(*procs), cmp_proc_pid);
	for (size_t i = 0; i < np; i++) {
		if (nd && procs[nd - 1].pid == procs[i].pid) {
			if (procs[i].has_main && !procs[nd - 1].has_main) {
				procs[nd - 1].name = procs[i].name;
				procs[nd - 1].has_main = true;
			}
			continue;
		}
		procs[nd++] = procs[i];
	}
	qsort(procs, nd, sizeof(*procs), cmp_proc_utid);
	for (size_t i = 0; i < nd && !ret; i++) {
		procs[i].upid = (int64_t)i;
		v[0].i = (int64_t)i;
		v[1].i = procs[i].pid;
		set_str(&v[2], procs[i].name);
		ret = emit(t, TK_TABLE_PROCESS, v);
	}
	qsort(procs, nd, sizeof(*procs), cmp_proc_pid);
	for (size_t i = 0; i < n && !ret; i++) {
		const struct thread *th = order[i];
		struct proc key = {.pid = th->pid};
		const struct proc *p = NULL;
		size_t lo = 0, hi = nd;

		/* The deduplicated procs are sorted by pid alone now. */
		while (th->pid >= 0 && lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (procs[mid].pid == key.pid) {
				p = &procs[mid];
				break;
			}
			if (procs[mid].pid < key.pid)
				lo = mid + 1;
			else
				hi = mid;
		}
		v[0].i = th->utid;
		v[1].i = thread_tid(th);
		set_str(&v[2], thread_name(th));
		v[3].i = p ? p->upid : -1;
		ret = emit(t, TK_TABLE_THREAD, v);
	}
out:
	free(order);
	free(procs);
	return ret;
}

int tk_tables_run(const char *path, const struct tk_table_ident *ident,
		  const struct tk_table_sink *sink, uint64_t *rows)
{
	struct tk_feed_stats st;
	struct tables *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	t->sink = sink;
	t->ident = ident;
	t->st = &st;
	t->rows = rows;
	for (unsigned int v = 0; v < 512; v++)
		state_text(v, t->states[v]);
	t->stack = tk_stack_new(&(struct tk_stack_sink){.mapping = stack_mapping,
							.frame = stack_frame,
							.callsite = stack_callsite,
							.ctx = t});
	if (!t->stack) {
		free(t);
		return -ENOMEM;
	}

	if (rows)
		memset(rows, 0, TK_TABLE_COUNT * sizeof(*rows));
	memset(&st, 0, sizeof(st));
	ret = tk_feed_run(path, wants, sizeof(wants) / sizeof(wants[0]),
			  TK_FEED_SIDEBAND | TK_FEED_ALL_EVENTS | TK_FEED_PAYLOAD |
				  (sink->damage ? TK_FEED_SALVAGE : 0),
			  on_record, t, &st);
	if (!ret)
		ret = finish_open(t);
	if (!ret)
		ret = finish_threads(t);
	free(t->threads);
	free(t->cpus);
	free(t->ctracks);
	free(t->mms);
	tk_stack_free(t->stack);
	free(t);
	return ret;
}
