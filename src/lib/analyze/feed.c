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
 *   buffer then CPU order (trace-cmd's). Compressed CPU data is decoded
 *   ahead on a second thread when the process may use two CPUs (the
 *   merge's decode ahead: the decoder stops itself when it does not help),
 *   since decoding is most of an analysis's time on a zstd file. The saved command lines are handed
 *   out first as COMM records at time 0, in file order (a later line for a
 *   pid wins), which is exactly what `tracekit convert --to perf` writes,
 *   so an analysis names threads alike on a .dat and on its conversion.
 *   perf.data: perf's ordered-events rule, as perf sched applies it.
 *   Timed records (samples, and side-band records through their
 *   sample_id_all trailer) are queued; a FINISHED_ROUND delivers, sorted by
 *   time with ties in arrival order, those at or before the highest time
 *   seen when the previous round ended; the end of the file delivers the
 *   rest. Records without a time (perf's synthesized COMMs) go out at once.
 *   The queue holds decoded tk_feed_recs (88 bytes), not raw records, so a
 *   round of 4096 samples costs ~360 KB whatever the payload size. A round
 *   is a few runs in time order (one per CPU buffer drained): a flush
 *   merges the runs from their heads as it delivers, and what waits for the
 *   next round closes up at the end of the queue, not moved each round.
 *   The records come from a read-only mapping of the file where they can
 *   (see "Reading perf.data in place" below), else from tk_perfdata_next().
 *
 * Per record: one type lookup, then, for a want whose fields are all
 * numbers ending at byte 8 or later in a host-order file, one bounds check
 * for all of them; any other want reads field by field as
 * tk_event_field_read() does; the record's type (common_type) is read in
 * place too, from where the set reads it. On the 3 M-sample bench file
 * sched latency costs ~450 instructions a record on one thread, the feed
 * ~300 of them (stops 17 and 19 in bench/README.md).
 *
 * Two CPUs (perf.data of 16 MB or more, when two are allowed and the
 * load leaves them nearly idle, tk_an_map_ahead()): a helper thread maps the file
 * in ahead of the walk, which stays on the calling thread with everything
 * after it ("Mapping in ahead" above split_run()). Two ways of handing
 * work to the second CPU measured slower than one thread on two vCPUs and
 * run only when asked for, for the records that carry no borrowed
 * pointers: TK_FEED_THREADS=split, a helper walking chunks of the file
 * and handing their records over as 64-byte tuples ("Both CPUs walk"
 * above split_run()); TK_FEED_THREADS=2, the ordering queue and the
 * analysis on a second thread ("Two CPUs" above run_perf()). Each
 * delivers what one thread does, in the same order.
 *
 * Everything (TK_FEED_ALL_EVENTS, for the table export of src/lib/export/):
 *   every format is parsed and every tracepoint record delivered, named by
 *   its tk_event; perf.data's other samples come as TK_FEED_SAMPLE, and a
 *   perf.data without tracing data is read for its samples and side-band.
 *   With TK_FEED_PAYLOAD a sample carries its callchain and, right after
 *   it, its PERF_SAMPLE_READ block (the counter values of perf record -s
 *   and of :S groups, for the export's counter table); only such samples
 *   are copied to make the two one payload.
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
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/dat.h>
#include <tracekit/event.h>
#include <tracekit/filekind.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "feed.h"
#include "analyze-util.h"
#include "dat-read-internal.h"
#include "perfdata-fixed.h"
#include "perfdata-internal.h"
#include "internal/bytebuf.h"
#include "internal/error.h"

/* What TK_FEED_MMAP and TK_FEED_BUILD_ID records need. */
#define MMAP_FLAGS (TK_FEED_ALL_EVENTS | TK_FEED_SIDEBAND | TK_FEED_PAYLOAD)

/* A wanted event resolved against the file's formats. */
struct bound {
	const struct tk_event_field *fields[TK_FEED_MAX_FIELDS];
	/* The same, for the inline reader of host-order files: size 0 when absent. */
	uint32_t off[TK_FEED_MAX_FIELDS];
	uint8_t size[TK_FEED_MAX_FIELDS];
	bool sign[TK_FEED_MAX_FIELDS];
	const struct tk_event *event;
	/*
	 * The one-check path: every named field is a number of 1, 2, 4 or 8
	 * bytes ending at 8 or later, in a host-order file. A record of @end
	 * bytes or more then has them all: each is the top bytes of the u64
	 * that ends where the field ends, shifted down by @shift.
	 */
	bool fast;
	uint8_t nfast;			   /* fields named (the rest read 0) */
	uint32_t end;			   /* the largest offset + size */
	uint32_t last[TK_FEED_MAX_FIELDS]; /* offset + size - 8 */
	uint8_t shift[TK_FEED_MAX_FIELDS]; /* 64 - 8 * size */
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
	size_t q0, qlen, qcap; /* the queued records are q[q0 .. qlen) */
	/*
	 * TK_FEED_PAYLOAD: the queued records' payloads, back to back; a
	 * queued record's raw holds its offset here until it is delivered.
	 */
	struct tk_bytebuf arena, arena2;
	/* A sample's callchain and READ block made contiguous (TK_FEED_SAMPLE). */
	struct tk_bytebuf readbuf;
	uint64_t max_ts, next_flush;
	struct tk_perf_fixed *fixed; /* NULL: every sample through tk_perfdata_parse_sample */
	bool host_order;	     /* the file's byte order is the host's: fields read inline */
	int32_t type_off;  /* common_type, 2 host-order bytes, read here; -1: by the set */
	struct pipe *pipe; /* the analysis runs on a second thread (NULL: here) */
};

/*
 * A perf.data's data section read in place through a read-only mapping
 * (see "Reading perf.data in place" above run_perf()).
 */
struct perfmap {
	const uint8_t *base;	/* the file from offset 0: the reader's mapping */
	uint64_t pos, end;	/* file offsets of the next record and of the end */
	uint64_t dropped;	/* page-aligned: the mapping below is dropped from RSS */
	uint64_t drop_at;	/* drop more once the walk is here */
	uint64_t drop_every;	/* bytes the walk goes between drops */
	uint64_t populated;	/* page-aligned: mapped in ahead up to here (0: not tried) */
	int32_t tid, time, cpu; /* sample field offsets after the header; -1: absent */
	uint32_t before;	/* sample bytes before RAW's size word */
	uint32_t trailer;	/* a side-band record's sample_id_all trailer bytes */
	int32_t id;		/* where a sample's event id is; -1: one event only */
	uint64_t *ids;		/* every event id of the file, sorted */
	size_t nids;
	uint64_t last_id;    /* the id found last (ids repeat in runs) */
	uint64_t idhash[64]; /* the first ids, by hash: the common case without a search */
	uint8_t idbits;	     /* log2 of the slots used of idhash; 0: unused */
	uint64_t *scratch;   /* 64 KiB: an unaligned side-band record, copied */
	uint64_t ahead;	     /* bytes mapped in ahead at a time */
	/*
	 * Split walk (see "Both CPUs walk" above split_run()): the walk stops
	 * after the first FINISHED_ROUND at or past @round_limit, setting
	 * @chunk_end and @last_round (that record's offset).
	 */
	uint64_t round_limit, last_round;
	bool chunk_end;
	uint64_t *ahead_pos; /* a helper maps in ahead of this (atomic; NULL: none) */
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
	if (f->flags & TK_FEED_ALL_EVENTS)
		return true;
	for (size_t w = 0; w < f->nwants; w++)
		if (!strcmp(f->wants[w].system, system) && format_named(t, f->wants[w].name))
			return true;
	return false;
}

/*
 * libtraceevent's format parser keeps its tokenizer's input in static
 * variables (event-parse.c: input_buf, input_buf_ptr): feeds running in
 * several threads at once (the table export's, one per input) parse one
 * set at a time.
 */
static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Only the wanted events' formats are parsed: a kernel has ~2000, and
 * parsing them all cost more than a small file's whole pass (and some
 * leak inside libtraceevent).
 */
static struct tk_event_set *parse_set(struct feed *f, const struct tk_tracedata *td)
{
	struct tk_event_set *set;
	struct tk_text text;
	const char *system;
	bool big;
	uint8_t lsize;
	uint32_t psize;

	tk_tracedata_layout(td, &big, &lsize, &psize);
	f->host_order = big == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
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

static struct tk_event_set *set_from_tracedata(struct feed *f, const struct tk_tracedata *td)
{
	struct tk_event_set *set;
	int err;

	pthread_mutex_lock(&parse_lock);
	set = parse_set(f, td);
	err = errno;
	pthread_mutex_unlock(&parse_lock);
	errno = err;
	return set;
}

/* Field @k of @b for the one-check path, or the path off for @b. */
static void bind_fast(struct bound *b, int k, const struct tk_event_field *fl)
{
	uint32_t sz = fl ? fl->size : 0;

	if (!fl || (sz != 1 && sz != 2 && sz != 4 && sz != 8) || fl->offset + sz < 8 ||
	    fl->offset > UINT32_MAX - 8 || b->nfast != k) {
		b->fast = false;
		return;
	}
	b->last[k] = fl->offset + sz - 8;
	b->shift[k] = (uint8_t)(64 - 8 * sz);
	if (fl->offset + sz > b->end)
		b->end = fl->offset + sz;
	b->nfast = (uint8_t)(k + 1);
}

/*
 * common_type read in place. The set reads every record's type at one
 * offset and size (tk_event_record_type()), which it keeps to itself; a
 * probe record of the bytes 1, 2, 3, ... gives it away: two bytes at
 * offset o in host order read as (o + 1) | (o + 2) << 8, and a record of
 * o + 1 bytes is then too short. Any other answer leaves the set to read
 * it (the call was 5% of sched latency's instructions per record).
 */
static void bind_type(struct feed *f)
{
	uint8_t probe[64];
	int v, lo;

	f->type_off = -1;
	for (size_t i = 0; i < sizeof(probe); i++)
		probe[i] = (uint8_t)(i + 1);
	v = tk_event_record_type(f->set, probe, sizeof(probe));
	lo = v & 0xff;
	if (v <= 0 || v >> 8 != lo + 1 || lo > 62 ||
	    tk_event_record_type(f->set, probe, (uint32_t)lo) != -EBADMSG)
		return;
	f->type_off = lo - 1;
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
		f->bound[w].event = ev;
		f->bound[w].fast = f->host_order;
		for (int k = 0; k < TK_FEED_MAX_FIELDS && f->wants[w].fields[k]; k++) {
			const struct tk_event_field *fl =
				tk_event_field_find(ev, f->wants[w].fields[k]);

			f->bound[w].fields[k] = fl;
			if (!fl)
				f->st->missing |= 1u << w;
			else if (fl->size == 1 || fl->size == 2 || fl->size == 4 || fl->size == 8) {
				f->bound[w].off[k] = fl->offset;
				f->bound[w].size[k] = (uint8_t)fl->size;
				f->bound[w].sign[k] = fl->is_signed;
			}
			bind_fast(&f->bound[w], k, fl);
		}
	}
	bind_type(f);
	return 0;
}

/* Fill @r from a tracepoint payload; false when it is not wanted. */
static inline __attribute__((always_inline)) bool decode(struct feed *f, const void *data,
							 uint32_t size, struct tk_feed_rec *r)
{
	const struct bound *b;
	int id;

	if (f->type_off >= 0) {
		uint16_t t;

		if ((uint32_t)f->type_off + 2 > size)
			return false;
		memcpy(&t, (const uint8_t *)data + f->type_off, 2);
		id = t;
	} else {
		id = tk_event_record_type(f->set, data, size);
	}

	if (id < 0 || (size_t)id >= f->nids || f->by_id[id] < 0) {
		if (!(f->flags & TK_FEED_ALL_EVENTS) || id < 0)
			return false;
		r->kind = TK_FEED_EVENT;
		r->want = TK_FEED_NOT_WANTED;
		r->event = tk_event_find(f->set, id);
		memset(r->val, 0, sizeof(r->val));
		return true;
	}
	r->kind = TK_FEED_EVENT;
	r->want = (uint16_t)f->by_id[id];
	b = &f->bound[r->want];
	r->event = b->event;
	if (b->fast && size >= b->end) {
		/* One bounds check for all fields: what nearly every record takes. */
		const uint8_t *d = data;
		int k = 0;

		for (; k < b->nfast; k++) {
			uint64_t x;

			memcpy(&x, d + b->last[k], 8);
			r->val[k] = b->sign[k] ? (uint64_t)((int64_t)x >> b->shift[k])
					       : x >> b->shift[k];
		}
		for (; k < TK_FEED_MAX_FIELDS; k++)
			r->val[k] = 0;
		return true;
	}
	for (int k = 0; k < TK_FEED_MAX_FIELDS; k++) {
		const uint8_t *p = (const uint8_t *)data + b->off[k];
		uint64_t v = 0;

		r->val[k] = 0;
		/* A record too short for a field reads it as 0: analyses count, not crash. */
		if (!b->fields[k])
			continue;
		if (!f->host_order || !b->size[k] || (uint64_t)b->off[k] + b->size[k] > size) {
			tk_event_field_read(f->set, b->fields[k], data, size, &r->val[k]);
			continue;
		}
		/* tk_event_field_read()'s result, without the call (most of a record's cost). */
		switch (b->size[k]) {
		case 1:
			v = b->sign[k] ? (uint64_t)(int64_t)(int8_t)*p : *p;
			break;
		case 2: {
			uint16_t x;

			memcpy(&x, p, 2);
			v = b->sign[k] ? (uint64_t)(int64_t)(int16_t)x : x;
			break;
		}
		case 4: {
			uint32_t x;

			memcpy(&x, p, 4);
			v = b->sign[k] ? (uint64_t)(int64_t)(int32_t)x : x;
			break;
		}
		default:
			memcpy(&v, p, 8);
			break;
		}
		r->val[k] = v;
	}
	return true;
}

/*
 * The ordering queue and the analysis on a second thread (perf.data; see
 * "Two CPUs" above run_perf()). The walk's thread reads and decodes the
 * records and packs each into a 64-byte tuple (struct pipe_rec: one cache
 * line, where a tk_feed_rec takes 88 bytes), in batches; a round's end
 * (a flush of the queue) travels as a tuple of its own. The other thread
 * takes the batches in order and does what the walk's thread did with
 * each: queue the record (or deliver it at once when it has no time) and
 * flush at each round's end, through the same queue code, so the analysis
 * sees what it saw on one thread. What the tuple leaves out is known on
 * the other side: the format (the want's), the payload pointers (none
 * without TK_FEED_PAYLOAD); a COMM's name rides in val[1..2], which a COMM
 * leaves 0. PIPE_SLOTS batches of PIPE_BATCH tuples are 512 KiB: a few in
 * flight absorb the unevenness of the rounds, and each hand-over (a lock,
 * at most a wake-up) is paid once per 2048 records.
 */
#define PIPE_BATCH 2048
#define PIPE_SLOTS 4
#define PIPE_FLUSH 0xffff /* pipe_rec.kind of a flush: time the limit, val[0] "all" */

struct pipe_rec {
	uint64_t time;
	uint64_t val[TK_FEED_MAX_FIELDS];
	uint32_t cpu;
	int32_t pid, tid;
	uint16_t kind, want;
	uint32_t seq;
	uint32_t pad;
};

struct pipe_batch {
	size_t n;
	struct pipe_rec rec[PIPE_BATCH];
};

struct pipe {
	pthread_mutex_t lock;
	pthread_cond_t filled, freed;
	pthread_t thread;
	/* The analysis thread's queue: fn, ctx, flags and the queue fields. */
	struct feed *q;
	const struct bound *bound; /* the want's format, for TK_FEED_EVENT */
	uint64_t head, tail;	   /* batches handed over / taken back, under the lock */
	bool done;		   /* the walk ended: what is handed over is all */
	int quit;		   /* the analysis's non-zero return, once (atomic) */
	char msg[512];		   /* its tk_errmsg() then, for the walk's thread */
	struct pipe_batch *b;
	struct pipe_batch *fill; /* the walk's batch, b[head % PIPE_SLOTS] */
	struct tk_feed_rec slot; /* the walk's queue_slot() */
};

_Static_assert(sizeof(struct pipe_rec) == 64, "a tuple is one cache line");
_Static_assert(TK_FEED_COMM_LEN <= 2 * sizeof(uint64_t), "a COMM's name fits val[1..2]");

static inline void pipe_pack(struct pipe_rec *t, const struct tk_feed_rec *r)
{
	t->time = r->time;
	memcpy(t->val, r->val, sizeof(t->val));
	if (r->kind == TK_FEED_COMM)
		memcpy(&t->val[1], r->comm, TK_FEED_COMM_LEN);
	t->cpu = r->cpu;
	t->pid = r->pid;
	t->tid = r->tid;
	t->kind = r->kind;
	t->want = r->want;
	t->seq = r->seq;
}

static inline void pipe_unpack(const struct pipe *p, struct tk_feed_rec *r,
			       const struct pipe_rec *t)
{
	r->time = t->time;
	memcpy(r->val, t->val, sizeof(r->val));
	memset(r->comm, 0, sizeof(r->comm));
	if (t->kind == TK_FEED_COMM) {
		memcpy(r->comm, &t->val[1], TK_FEED_COMM_LEN);
		r->val[1] = r->val[2] = 0;
	}
	r->cpu = t->cpu;
	r->pid = t->pid;
	r->tid = t->tid;
	r->kind = t->kind;
	r->want = t->want;
	r->seq = t->seq;
	r->event = t->kind == TK_FEED_EVENT ? p->bound[t->want].event : NULL;
	r->what = NULL;
	r->raw = NULL;
	r->raw_size = 0;
	r->read_size = 0;
}

static int flush_queue(struct feed *f, uint64_t limit, bool all);
static struct tk_feed_rec *queue_slot(struct feed *f);
static int queue_commit(struct feed *f, struct tk_feed_rec *r);

/* The analysis thread: one batch, as the walk's thread would have handled it. */
static int pipe_batch_run(struct pipe *p, const struct pipe_batch *b)
{
	int ret = 0;

	for (size_t i = 0; i < b->n && !ret; i++) {
		const struct pipe_rec *t = &b->rec[i];
		struct tk_feed_rec *r;

		if (t->kind == PIPE_FLUSH) {
			ret = flush_queue(p->q, t->time, t->val[0]);
			continue;
		}
		r = queue_slot(p->q);
		if (!r)
			return -ENOMEM;
		pipe_unpack(p, r, t);
		ret = queue_commit(p->q, r);
	}
	return ret;
}

static void *pipe_main(void *arg)
{
	struct pipe *p = arg;
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pipe_batch *b;

		while (p->tail == p->head && !p->done)
			pthread_cond_wait(&p->filled, &p->lock);
		if (p->tail == p->head)
			break;
		b = &p->b[p->tail % PIPE_SLOTS];
		pthread_mutex_unlock(&p->lock);
		if (!ret) {
			ret = pipe_batch_run(p, b);
			if (ret) {
				snprintf(p->msg, sizeof(p->msg), "%s", tk_errmsg());
				__atomic_store_n(&p->quit, ret, __ATOMIC_RELEASE);
			}
		}
		pthread_mutex_lock(&p->lock);
		p->tail++;
		pthread_cond_signal(&p->freed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void pipe_free(struct pipe *p)
{
	pthread_cond_destroy(&p->freed);
	pthread_cond_destroy(&p->filled);
	pthread_mutex_destroy(&p->lock);
	if (p->q)
		free(p->q->q);
	free(p->q);
	free(p->b);
	free(p);
}

/* NULL when the analysis is best run on the walk's thread (or on ENOMEM). */
static struct pipe *pipe_start(const struct feed *f)
{
	struct pipe *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->freed, NULL);
	p->b = malloc(PIPE_SLOTS * sizeof(*p->b));
	p->q = calloc(1, sizeof(*p->q));
	if (!p->b || !p->q) {
		pipe_free(p);
		return NULL;
	}
	p->q->fn = f->fn;
	p->q->ctx = f->ctx;
	p->q->flags = f->flags;
	p->q->st = f->st;
	p->q->type_off = -1;
	p->bound = f->bound;
	p->fill = &p->b[0];
	p->fill->n = 0;
	if (pthread_create(&p->thread, NULL, pipe_main, p)) {
		pipe_free(p);
		return NULL;
	}
	return p;
}

/* Hand the walk's batch over and take the next slot, waiting while all are full. */
static void pipe_hand(struct pipe *p)
{
	pthread_mutex_lock(&p->lock);
	p->head++;
	pthread_cond_signal(&p->filled);
	while (p->head - p->tail == PIPE_SLOTS)
		pthread_cond_wait(&p->freed, &p->lock);
	pthread_mutex_unlock(&p->lock);
	p->fill = &p->b[p->head % PIPE_SLOTS];
	p->fill->n = 0;
}

/* The walk's thread: one tuple more; the analysis's non-zero return once it has one. */
static inline int pipe_put(struct pipe *p, const struct tk_feed_rec *r, uint16_t kind)
{
	struct pipe_rec *t = &p->fill->rec[p->fill->n++];

	pipe_pack(t, r);
	t->kind = kind;
	if (p->fill->n == PIPE_BATCH) {
		int quit = __atomic_load_n(&p->quit, __ATOMIC_RELAXED);

		if (quit)
			return quit;
		pipe_hand(p);
	}
	return 0;
}

/*
 * Hand over what is left, wait for the analysis thread to finish it and
 * end it. Return: @ret, or the analysis's non-zero return, which wins: it
 * came from an earlier record than anything the walk met since (the walk
 * ran ahead), and a single thread would have stopped there.
 */
static int pipe_finish(struct pipe *p, int ret)
{
	int quit;

	if (p->fill->n && !__atomic_load_n(&p->quit, __ATOMIC_RELAXED))
		pipe_hand(p);
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	quit = __atomic_load_n(&p->quit, __ATOMIC_ACQUIRE);
	if (quit) {
		ret = quit;
		if (quit < 0)
			tk_fail(-quit, "%s", p->msg);
	}
	pipe_free(p);
	return ret;
}

static int deliver(struct feed *f, struct tk_feed_rec *r)
{
	/* On the walk's thread only a record without a time comes here (queue()). */
	if (f->pipe)
		return pipe_put(f->pipe, r, r->kind);
	return f->fn(f->ctx, r);
}

/* ------------------------------------------------------------------ .dat */

/* trace-cmd's UNAME option is "sysname nodename release version machine". */
static void host_from_uname(struct feed *f, const char *uname)
{
	const char *p = uname ? strchr(uname, ' ') : NULL;
	size_t n = 0;

	if (!p)
		return;
	p++;
	while (p[n] && p[n] != ' ' && n < sizeof(f->st->host) - 1)
		n++;
	memcpy(f->st->host, p, n);
	f->st->host[n] = 0;
}

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

/* The damaged regions of a salvaged .dat, as TK_FEED_DAMAGE records. */
static int dat_damage(struct feed *f, const struct tk_dat *dat)
{
	for (size_t i = 0; i < tk_dat_damage_count(dat); i++) {
		struct tk_feed_rec r = {.kind = TK_FEED_DAMAGE};
		struct tk_dat_damage d;
		int ret;

		if (tk_dat_damage_get(dat, i, &d) < 0)
			break;
		r.val[0] = d.offset;
		r.val[1] = d.skipped;
		r.val[2] = d.events_lost < 0 ? UINT64_MAX : (uint64_t)d.events_lost;
		r.what = d.what;
		r.seq = f->seq++;
		ret = deliver(f, &r);
		if (ret)
			return ret;
	}
	return 0;
}

static int run_dat(struct feed *f, const char *path)
{
	TK_OPTS(tk_dat_open_opts, oopts, .strict = !(f->flags & TK_FEED_SALVAGE));
	struct tk_dat *dat =
		f->flags & TK_FEED_SALVAGE ? tk_dat_open_with(path, &oopts) : tk_dat_open(path);
	struct tk_dat_merge *m = NULL;
	struct tk_dat_merge_record mr;
	const struct tk_tracedata *td;
	int ret;

	if (!dat)
		return -errno;
	td = tk_dat_get_tracedata(dat);
	f->st->nr_cpus_online = tk_dat_get_info(dat)->cpu_count;
	if (tk_dat_get_info(dat)->uname) {
		/* UNAME is "sysname nodename release version machine": the machine is last. */
		const char *u = tk_dat_get_info(dat)->uname, *sp = strrchr(u, ' ');

		snprintf(f->st->arch, sizeof(f->st->arch), "%s", sp ? sp + 1 : u);
	}
	host_from_uname(f, tk_dat_get_info(dat)->uname);
	f->set = set_from_tracedata(f, td);
	f->st->set = f->set;
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
	m = tk_dat_merge_new_ahead(dat, NULL, 0, tk_an_spare_cpu());
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
		r.raw = mr.rec.data;
		r.raw_size = mr.rec.size;
		r.read_size = 0;
		r.pid = r.tid = tk_event_record_pid(f->set, mr.rec.data, mr.rec.size);
		r.seq = f->seq++;
		ret = deliver(f, &r);
		if (ret)
			break;
	}
	if (ret == 0 && (f->flags & TK_FEED_SALVAGE))
		ret = dat_damage(f, dat);
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
 * A round holds a few sorted runs (perf drains each CPU's buffer in turn),
 * so merging the runs pairwise (a natural merge sort) costs n log(runs)
 * where qsort cost n log n: a third of `syscalls` went to the sort. Returns
 * nonzero when out of memory (the caller sorts in place instead).
 */
static int merge_runs(struct tk_feed_rec *q, size_t n)
{
	struct tk_feed_rec *a = q, *b;
	size_t runs = 1;

	for (size_t i = 1; i < n; i++)
		runs += rec_cmp(&a[i - 1], &a[i]) > 0;
	if (runs > 64)
		return 1;
	b = malloc(n * sizeof(*b));
	if (!b)
		return 1;
	while (runs > 1) {
		size_t i = 0, o = 0;

		runs = 0;
		while (i < n) {
			size_t m = i + 1, e;

			while (m < n && rec_cmp(&a[m - 1], &a[m]) <= 0)
				m++;
			e = m;
			if (e < n)
				while (++e < n && rec_cmp(&a[e - 1], &a[e]) <= 0)
					;
			/* Merge [i, m) and [m, e); the left wins ties: stable. */
			for (size_t x = i, y = m; x < m || y < e;) {
				if (y == e || (x < m && rec_cmp(&a[x], &a[y]) <= 0))
					b[o++] = a[x++];
				else
					b[o++] = a[y++];
			}
			runs++;
			i = e;
		}
		struct tk_feed_rec *t = a;

		a = b;
		b = t;
	}
	if (a != q) {
		memcpy(q, a, n * sizeof(*a));
		free(a);
	} else {
		free(b);
	}
	return 0;
}

/*
 * After a round: the payloads of the records still queued move to the front
 * of a fresh arena (usually a few; the rest were delivered), so the arena
 * holds one round's payloads, not the file's.
 */
static int compact_arena(struct feed *f)
{
	struct tk_bytebuf t;

	tk_bytebuf_reset(&f->arena2);
	for (size_t i = f->q0; i < f->qlen; i++) {
		size_t off = f->arena2.len;

		if (!f->q[i].raw_size && !f->q[i].read_size)
			continue;
		tk_bytebuf_put(&f->arena2, f->arena.data + (uintptr_t)f->q[i].raw,
			       (size_t)f->q[i].raw_size + f->q[i].read_size);
		f->q[i].raw = (const void *)(uintptr_t)off;
	}
	if (tk_bytebuf_error(&f->arena2))
		return tk_fail(ENOMEM, "out of memory");
	t = f->arena;
	f->arena = f->arena2;
	f->arena2 = t;
	return 0;
}

/* Runs a k-way merge takes; a queue of more runs is sorted instead. */
#define MERGE_MAX_RUNS 16

static inline bool rec_before(const struct tk_feed_rec *x, const struct tk_feed_rec *y)
{
	return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static int deliver_queued(struct feed *f, struct tk_feed_rec *r)
{
	if (r->raw_size || r->read_size)
		r->raw = f->arena.data + (uintptr_t)r->raw;
	return deliver(f, r);
}

/*
 * Deliver the queued records at or before @limit (all of them with @all),
 * oldest first, ties in arrival order. The queue is a few runs in time
 * order (perf drains each CPU's buffer in turn): the runs are merged as
 * they are delivered, each record handed out where it lies, and only what
 * stays for the next round moves, to the front. Delivering by (time, seq)
 * from the heads of the runs gives exactly the order of sorting the whole
 * queue, whatever order the leftovers are then kept in (each flush orders
 * them again). A queue of many runs is sorted first, as one run.
 */
static int flush_queue(struct feed *f, uint64_t limit, bool all)
{
	size_t start[MERGE_MAX_RUNS + 1], head[MERGE_MAX_RUNS], nruns = 1, e;
	struct tk_feed_rec *q = f->q + f->q0;
	size_t qn = f->qlen - f->q0;
	int ret = 0;

	if (f->pipe) {
		struct tk_feed_rec mark = {.time = limit, .val = {all}};

		return pipe_put(f->pipe, &mark, PIPE_FLUSH);
	}
	if (!qn)
		return 0;
	start[0] = 0;
	for (size_t i = 1; i < qn; i++) {
		if (!rec_before(&q[i], &q[i - 1]))
			continue;
		if (nruns == MERGE_MAX_RUNS) {
			if (merge_runs(q, qn))
				qsort(q, qn, sizeof(*q), rec_cmp);
			nruns = 1;
			break;
		}
		start[nruns++] = i;
	}
	start[nruns] = qn;
	for (size_t k = 0; k < nruns; k++)
		head[k] = start[k];
	if (nruns == 1) {
		size_t n = 0;

		while (n < qn && (all || q[n].time <= limit)) {
			ret = deliver_queued(f, &q[n]);
			n++;
			if (ret)
				break;
		}
		head[0] = n;
	} else {
		for (;;) {
			size_t best = MERGE_MAX_RUNS;

			for (size_t k = 0; k < nruns; k++)
				if (head[k] < start[k + 1] &&
				    (best == MERGE_MAX_RUNS ||
				     rec_before(&q[head[k]], &q[head[best]])))
					best = k;
			if (best == MERGE_MAX_RUNS || (!all && q[head[best]].time > limit))
				break;
			ret = deliver_queued(f, &q[head[best]++]);
			if (ret)
				break;
		}
	}
	/*
	 * What is left of each run closes up towards the end of the queue (the
	 * last run's rest stays where it is; memmove never moves backwards
	 * here), and the queue then starts after the delivered records.
	 */
	e = qn;
	for (size_t k = nruns; k-- > 0;) {
		size_t n = start[k + 1] - head[k];

		if (n && e - n != head[k])
			memmove(q + e - n, q + head[k], n * sizeof(*q));
		e -= n;
	}
	f->q0 += e;
	if (f->q0 == f->qlen)
		f->q0 = f->qlen = 0;
	if ((f->flags & TK_FEED_PAYLOAD) && !ret)
		ret = compact_arena(f);
	return ret;
}

#define QUEUE_ROOMY (8u << 20)

/* Room for one more queued record; NULL when out of memory (tk_errmsg() set). */
static struct tk_feed_rec *queue_slot(struct feed *f)
{
	bool moved = false;

	if (f->pipe)
		return &f->pipe->slot;

	if (f->qlen == f->qcap && f->q0) {
		/*
		 * The delivered records before q0 make room. When the queue is
		 * still more than a quarter full it also grows (half, past
		 * QUEUE_ROOMY bytes): a record then moves at most once for
		 * every three (one) queued. perf's rounds leave about a
		 * round's records waiting, so this matters.
		 */
		memmove(f->q, f->q + f->q0, (f->qlen - f->q0) * sizeof(*f->q));
		f->qlen -= f->q0;
		f->q0 = 0;
		moved = true;
	}
	if (f->qlen == f->qcap ||
	    (moved && f->qlen > f->qcap / (f->qcap * sizeof(*f->q) < QUEUE_ROOMY ? 4 : 2))) {
		size_t cap = f->qcap ? f->qcap * 2 : 8192;
		struct tk_feed_rec *q = realloc(f->q, cap * sizeof(*q));

		if (!q) {
			tk_fail(ENOMEM, "out of memory");
			return NULL;
		}
		f->q = q;
		f->qcap = cap;
	}
	return &f->q[f->qlen];
}

/*
 * Queue the record built in queue_slot()'s slot @r, or deliver it at once
 * when it has no time (perf's synthesized records).
 */
static int queue_commit(struct feed *f, struct tk_feed_rec *r)
{
	if (!r->time)
		return deliver(f, r);
	if (f->pipe) {
		if (r->time > f->max_ts)
			f->max_ts = r->time;
		return pipe_put(f->pipe, r, r->kind);
	}
	if (r->raw_size || r->read_size) {
		size_t off = f->arena.len;

		/* A sample's READ block follows its callchain (perf_read_block()). */
		tk_bytebuf_put(&f->arena, r->raw, (size_t)r->raw_size + r->read_size);
		if (tk_bytebuf_error(&f->arena))
			return tk_fail(ENOMEM, "out of memory");
		r->raw = (const void *)(uintptr_t)off;
	}
	f->qlen++;
	if (r->time > f->max_ts)
		f->max_ts = r->time;
	return 0;
}

static int queue(struct feed *f, struct tk_feed_rec *r)
{
	struct tk_feed_rec *slot;

	if (!r->time)
		return deliver(f, r);
	slot = queue_slot(f);
	if (!slot)
		return -ENOMEM;
	*slot = *r;
	return queue_commit(f, slot);
}

/*
 * A sample's PERF_SAMPLE_READ values go to the analysis right after its
 * callchain, in one buffer (the record has them apart: READ comes before
 * CALLCHAIN), so a queued record keeps one payload in the arena and the
 * callchain's readers see raw and raw_size as before. Only samples that
 * carry READ values (perf record -s, event groups with :S) are copied.
 */
static int perf_read_block(struct feed *f, const struct tk_perf_sample *s, struct tk_feed_rec *r)
{
	if (s->read_size >= (1u << 20))
		return 0;
	tk_bytebuf_reset(&f->readbuf);
	if (r->raw_size)
		tk_bytebuf_put(&f->readbuf, r->raw, r->raw_size);
	tk_bytebuf_put(&f->readbuf, s->read, (size_t)s->read_size);
	if (tk_bytebuf_error(&f->readbuf))
		return -ENOMEM;
	r->raw = f->readbuf.data;
	r->read_size = (uint32_t)s->read_size;
	return 0;
}

static int perf_record(struct feed *f, struct tk_perfdata *pd, const struct tk_perf_record *rec)
{
	struct tk_feed_rec r;
	struct tk_perf_sample s;
	/* An MMAP's build id and name: r.raw points here until queue() copied it. */
	uint8_t blob[21 + 4096];

	memset(&r, 0, sizeof(r));
	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE: {
		struct tk_perf_fixed_sample fs;
		bool all = f->flags & TK_FEED_ALL_EVENTS;

		if (f->fixed && tk_perf_fixed_read(f->fixed, rec, &fs) == 0) {
			if (fs.raw && decode(f, fs.raw, fs.raw_size, &r)) {
				if (f->flags & TK_FEED_PAYLOAD) {
					r.raw = fs.raw;
					r.raw_size = fs.raw_size;
				}
				r.time = fs.time;
				r.cpu = fs.cpu;
				r.pid = (int32_t)fs.pid;
				r.tid = (int32_t)fs.tid;
				break;
			}
			/* Not a tracepoint: only ALL_EVENTS reads it (below, in full). */
			if (!all)
				return 0;
		}
		if (tk_perfdata_parse_sample(pd, rec, &s))
			return 0;
		if (s.raw && decode(f, s.raw, s.raw_size, &r)) {
			if (f->flags & TK_FEED_PAYLOAD) {
				r.raw = s.raw;
				r.raw_size = s.raw_size;
			}
			r.time = s.time;
			r.cpu = s.cpu;
			r.pid = (int32_t)s.pid;
			r.tid = (int32_t)s.tid;
			break;
		}
		/*
		 * A sample of any other event; its RAW payload, when it has one
		 * (perf record -R), is not a tracepoint the file describes.
		 */
		if (!all)
			return 0;
		r.kind = TK_FEED_SAMPLE;
		if ((f->flags & TK_FEED_PAYLOAD) && s.callchain_nr && s.callchain_nr < (1u << 20)) {
			r.raw = s.callchain;
			r.raw_size = (uint32_t)(s.callchain_nr * 8);
		}
		if ((f->flags & TK_FEED_PAYLOAD) && s.read_size && perf_read_block(f, &s, &r))
			return tk_fail(ENOMEM, "out of memory");
		r.val[0] = s.ip;
		r.val[1] = s.period;
		r.val[2] = (uint64_t)s.attr_index;
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
	case TK_PERF_RECORD_MMAP:
	case TK_PERF_RECORD_MMAP2: {
		uint32_t name_off = rec->type == TK_PERF_RECORD_MMAP ? 40 : 72;
		const uint8_t *d = rec->data;
		size_t n = 0;
		uint32_t pid, tid;

		if ((f->flags & MMAP_FLAGS) != MMAP_FLAGS || rec->size <= name_off)
			return 0;
		memcpy(&pid, d + 8, 4);
		memcpy(&tid, d + 12, 4);
		memcpy(&r.val[0], d + 16, 8);
		memcpy(&r.val[1], d + 24, 8);
		memcpy(&r.val[2], d + 32, 8);
		memset(blob, 0, 21);
		/* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID: u8 size, 3 pad, 20 id bytes. */
		if (rec->type == TK_PERF_RECORD_MMAP2 && (rec->misc & (1u << 14)) && d[40] <= 20) {
			blob[0] = d[40];
			memcpy(blob + 1, d + 44, 20);
		}
		while (name_off + n < rec->size && d[name_off + n] && n < 4096)
			n++;
		memcpy(blob + 21, d + name_off, n);
		r.kind = TK_FEED_MMAP;
		r.pid = (int32_t)pid;
		r.tid = (int32_t)tid;
		r.raw = blob;
		r.raw_size = (uint32_t)(21 + n);
		if (tk_perfdata_parse_sample(pd, rec, &s) == 0)
			r.time = s.time;
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

/* The BUILD_ID feature's entries, as TK_FEED_BUILD_ID records at time 0. */
static int perf_build_ids(struct feed *f, const struct tk_perfdata *pd)
{
	for (size_t i = 0; i < tk_perfdata_build_id_count(pd); i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(pd, i);
		struct tk_feed_rec r = {.kind = TK_FEED_BUILD_ID};
		uint8_t blob[21 + 4096];
		size_t n = b->filename ? strnlen(b->filename, 4096) : 0;
		int ret;

		blob[0] = b->size <= 20 ? b->size : 20;
		memcpy(blob + 1, b->id, 20);
		if (n)
			memcpy(blob + 21, b->filename, n);
		r.pid = r.tid = b->pid;
		r.raw = blob;
		r.raw_size = (uint32_t)(21 + n);
		r.seq = f->seq++;
		ret = deliver(f, &r);
		if (ret)
			return ret;
	}
	return 0;
}

/* The damaged regions of a perf.data, as TK_FEED_DAMAGE records. */
static int perf_damage(struct feed *f, const struct tk_perfdata *pd)
{
	for (size_t i = 0; i < tk_perfdata_damage_count(pd); i++) {
		const struct tk_perfdata_damage *d = tk_perfdata_damage_get(pd, i);
		struct tk_feed_rec r = {.kind = TK_FEED_DAMAGE};
		int ret;

		r.val[0] = d->offset;
		r.val[1] = d->skipped;
		r.val[2] = d->lost_known ? d->lost : UINT64_MAX;
		r.what = d->what;
		r.seq = f->seq++;
		ret = deliver(f, &r);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Reading perf.data in place. tk_perfdata_next() copies every record out of
 * a pread() block (a fifth of an analysis's time went to the kernel's copy);
 * a read-only mapping of the file hands the records out where they lie.
 * The reader also judges damage (salvage, resync, records too long for
 * their fields), and that judgement must not change: the mapped walk
 * therefore takes only records it can prove the reader would take as they
 * are (a known type that carries no metadata, a size inside the data
 * section, a sample exactly as long as its fields, a side-band record whose
 * spare bytes cannot start a record), and stops at the first other one.
 * From there the reader goes on: it has read no record yet, so it reads
 * from the first, skips the records before that offset (the mapped walk
 * took them all, so the reader meets no damage there) and hands out the
 * rest as before, damage, warnings and errors included. The mapping is
 * the reader's own (tk_perfdata_mapping(): the file as it was at open), so
 * a file the reader does not map is read by the reader alone; a file in
 * the other byte order, a pipe, a repaired data size or COMPRESSED records
 * are not walked either. A file cut short while it is mapped would raise
 * SIGBUS: the files read here are finished recordings. Only files whose events share one sample
 * layout with RAW and no READ or CALLCHAIN (what perf sched record, perf trace record and tracekit
 * convert write) are walked so; the rest go through the reader. The mapping's pages are dropped
 * behind the walk every few MB, so peak RSS does not grow with the file (the data stays in the page
 * cache).
 */
#define MAP_DROP (4u << 20)
/* A helper maps in ahead (see "Mapping in ahead"): steps, distance, least data. */
#define MAP_AHEAD_STEP (1u << 20)
#define MAP_AHEAD_MAX  (6u << 20)
#define MAP_AHEAD_MIN  (16u << 20) /* smaller data sections: one thread */
/*
 * The walk touches each record first where its fields are read: asking for
 * the bytes 2 KiB ahead hides part of that wait (sched timehist -s, CPU
 * time 196-200 -> 163-168 ms with the change below; 256 B to 4 KiB ahead
 * measured alike).
 */
#define PREFETCH_AHEAD 2048

/*
 * The header of the record at @p, @left bytes before the data's end: its
 * type and size. False when it is cut short or its size is below a header
 * or past the end (the walks stop there). Prefetches what comes ahead.
 */
static inline __attribute__((always_inline)) bool rec_head(const uint8_t *p, uint64_t left,
							   uint32_t *type, uint32_t *size)
{
	uint16_t sz16;

	if (left < 8)
		return false;
	if (left > PREFETCH_AHEAD)
		__builtin_prefetch(p + PREFETCH_AHEAD);
	memcpy(type, p, 4);
	memcpy(&sz16, p + 6, 2);
	*size = sz16;
	return *size >= 8 && *size <= left;
}

static const uint64_t map_fixed_bits =
	TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |
	TK_PERF_SAMPLE_ADDR | TK_PERF_SAMPLE_ID | TK_PERF_SAMPLE_STREAM_ID | TK_PERF_SAMPLE_CPU |
	TK_PERF_SAMPLE_PERIOD;

static inline size_t id_hash(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 58);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void perfmap_close(struct perfmap *m)
{
	free(m->ids);
	free(m->scratch);
	memset(m, 0, sizeof(*m));
}

/*
 * Walk @pd's data section through the reader's own mapping of the file
 * (tk_perfdata_mapping()); false when the file does not qualify or the
 * reader has no mapping (a pipe, TK_PERFDATA_NO_MMAP, no address space).
 */
static bool perfmap_open(struct perfmap *m, const struct tk_perfdata *pd)
{
	const struct tk_perfdata_info *in = tk_perfdata_get_info(pd);
	size_t nev = tk_perfdata_evsel_count(pd);
	const struct tk_perf_attr *a0;
	const uint8_t *base;
	uint64_t st, bit, len;
	uint32_t off = 0;

	memset(m, 0, sizeof(*m));
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ || in->pipe || in->data_size_repaired ||
	    in->data_end < in->data_offset || !nev || in->nr_compressed)
		return false;
	a0 = &tk_perfdata_evsel_get(pd, 0)->attr;
	st = a0->sample_type;
	if (!(st & TK_PERF_SAMPLE_RAW) || (st & ~(map_fixed_bits | TK_PERF_SAMPLE_RAW)))
		return false;
	for (size_t i = 1; i < nev; i++)
		if (tk_perfdata_evsel_get(pd, i)->attr.sample_type != st)
			return false;
	if (nev > 1 && !(st & (TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_ID)))
		return false;
	/* The fields up to RAW, one u64 each, in perf_event.h's order. */
	m->tid = m->time = m->cpu = m->id = -1;
	for (bit = 1; bit < TK_PERF_SAMPLE_RAW; bit <<= 1) {
		uint64_t b = bit;

		if (!(st & b))
			continue;
		if (b == TK_PERF_SAMPLE_TID)
			m->tid = (int32_t)off;
		else if (b == TK_PERF_SAMPLE_TIME)
			m->time = (int32_t)off;
		else if (b == TK_PERF_SAMPLE_CPU)
			m->cpu = (int32_t)off;
		else if (b == TK_PERF_SAMPLE_ID && !(st & TK_PERF_SAMPLE_IDENTIFIER))
			m->id = (int32_t)off;
		off += 8;
	}
	if (st & TK_PERF_SAMPLE_IDENTIFIER) {
		/* IDENTIFIER (bit 16) comes first of all. */
		m->tid += m->tid >= 0 ? 8 : 0;
		m->time += m->time >= 0 ? 8 : 0;
		m->cpu += m->cpu >= 0 ? 8 : 0;
		m->id = 0;
		off += 8;
	}
	if (nev == 1)
		m->id = -1;
	m->before = off;
	if (a0->flags & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL)
		m->trailer = 8u * (uint32_t)__builtin_popcountll(
					  st & (TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |
						TK_PERF_SAMPLE_ID | TK_PERF_SAMPLE_STREAM_ID |
						TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_IDENTIFIER));
	if (m->id >= 0) {
		for (size_t i = 0; i < nev; i++)
			m->nids += tk_perfdata_evsel_get(pd, i)->nr_ids;
		m->ids = malloc((m->nids ? m->nids : 1) * sizeof(*m->ids));
		if (!m->ids)
			return false;
		m->nids = 0;
		for (size_t i = 0; i < nev; i++) {
			const struct tk_perfdata_evsel *ev = tk_perfdata_evsel_get(pd, i);

			memcpy(m->ids + m->nids, ev->ids, ev->nr_ids * sizeof(*m->ids));
			m->nids += ev->nr_ids;
		}
		qsort(m->ids, m->nids, sizeof(*m->ids), u64_cmp);
		m->last_id = m->nids ? m->ids[0] : 0;
		/*
		 * Up to 16 ids also sit in a table of 64 by hash (linear
		 * probing, at most a quarter full); a miss there searches.
		 */
		if (m->nids && m->nids <= 16) {
			m->idbits = 6;
			for (size_t i = 0; i < 64; i++)
				m->idhash[i] = m->ids[0];
			for (size_t i = 0; i < m->nids; i++) {
				size_t h = id_hash(m->ids[i]);

				while (m->idhash[h] != m->ids[0])
					h = (h + 1) & 63;
				m->idhash[h] = m->ids[i];
			}
		}
	}
	m->scratch = malloc(1u << 16);
	base = tk_perfdata_mapping(pd, &len);
	if (!m->scratch || !base || len < in->data_end || in->data_end < 8)
		goto fail;
	/* The magic as this host stores it: a file of the other byte order is the reader's. */
	if (memcmp(base, "PERFILE2", 8))
		goto fail;
	m->base = base;
	m->pos = in->data_offset;
	m->end = in->data_end;
	m->dropped = 0;
	m->drop_every = 2 * (uint64_t)MAP_DROP;
	m->drop_at = m->drop_every;
	m->ahead = MAP_DROP;
	m->round_limit = UINT64_MAX;
	return true;
fail:
	perfmap_close(m);
	return false;
}

static bool perfmap_known_id(struct perfmap *m, uint64_t id)
{
	size_t lo = 0, hi = m->nids;

	if (id == m->last_id && m->nids)
		return true;
	if (m->idbits) {
		/* Empty slots hold ids[0], which the first compare answers. */
		for (size_t h = id_hash(id);; h = (h + 1) & 63) {
			if (m->idhash[h] == id)
				return true;
			if (m->idhash[h] == m->ids[0])
				break;
		}
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nids && m->ids[lo] == id) {
		m->last_id = id;
		return true;
	}
	return false;
}

/*
 * Whether the reader might call this side-band record too long: it has 8
 * bytes to spare after its fields and they could start a record (the
 * reader's sideband_too_long() then asks more; such a record is left to it).
 */
static bool perfmap_spare(const struct perfmap *m, const uint8_t *p, uint32_t type, uint32_t size)
{
	uint32_t want = (uint32_t)tk_perfdata_sideband_fields(p, type, size), t;
	uint16_t sz;

	if (!want)
		return false;
	want += m->trailer;
	if (want + 8 > size)
		return false;
	/* The reader looks for records in the rest: the first needs a known type and a size. */
	memcpy(&t, p + want, 4);
	memcpy(&sz, p + want + 6, 2);
	return ((t >= 1 && t <= 21) || (t >= 64 && t <= 83)) && sz >= 8;
}

/* The record types the reader hands out as they are, metadata and compression aside. */
static bool perfmap_plain_type(uint32_t t)
{
	return (t >= 1 && t <= 21) || t == TK_PERF_RECORD_HEADER_EVENT_TYPE ||
	       t == TK_PERF_RECORD_FINISHED_ROUND || t == TK_PERF_RECORD_ID_INDEX ||
	       t == TK_PERF_RECORD_THREAD_MAP || t == TK_PERF_RECORD_CPU_MAP ||
	       t == TK_PERF_RECORD_TIME_CONV || t == TK_PERF_RECORD_FINISHED_INIT;
}

/*
 * Map in m->ahead bytes from @pos in one call (MADV_POPULATE_READ, Linux
 * 5.14) instead of a page fault per 64 KiB of fault-around: 3-5 % of the
 * CPU time of sched latency and timehist -s. Where the kernel refuses, the
 * faults do it as before.
 */
static void perfmap_populate(struct perfmap *m, uint64_t pos)
{
	uint64_t from = pos & ~(uint64_t)0xfff, len = m->ahead;

	if (m->ahead_pos) {
		/* The helper maps in (see "Mapping in ahead"): tell it where the walk is. */
		__atomic_store_n(m->ahead_pos, pos, __ATOMIC_RELAXED);
		m->populated = pos + MAP_AHEAD_STEP;
		return;
	}

	if (from + len > m->end)
		len = ((m->end + 0xfff) & ~(uint64_t)0xfff) - from;
	if (len && madvise((void *)(m->base + from), len, MADV_POPULATE_READ) == 0)
		m->populated = from + len;
	else
		m->populated = UINT64_MAX;
}

/* Drop the mapping well behind @pos from RSS (the pages come back from the page cache). */
static void perfmap_drop(struct perfmap *m, uint64_t pos)
{
	uint64_t to = (pos - MAP_DROP) & ~(uint64_t)0xfffff;

	if (pos < MAP_DROP || to <= m->dropped)
		return;
	madvise((void *)(m->base + m->dropped), to - m->dropped, MADV_DONTNEED);
	m->dropped = to;
	m->drop_at = to + m->drop_every;
}

/*
 * Walk the mapping from m->pos. Returns 0, or @fn's value / an error; on 0,
 * m->pos below m->end is the record left to the reader.
 */
/*
 * Whether @p (@size bytes) is a SAMPLE of @m's fixed layout, its raw
 * payload filling it exactly; the payload's size into *@raw_size.
 */
static inline bool perfmap_sample_raw(const struct perfmap *m, const uint8_t *p, uint32_t size,
				      uint32_t *raw_size)
{
	if (size < 8 + m->before + 4)
		return false;
	memcpy(raw_size, p + 8 + m->before, 4);
	return (uint64_t)8 + m->before + 4 + *raw_size == size;
}

/* A SAMPLE's time, CPU, pid and tid at @m's offsets (0 where it has none). */
static inline void perfmap_sample_ids(const struct perfmap *m, const uint8_t *p, uint64_t *time,
				      uint32_t *cpu, int32_t *pid, int32_t *tid)
{
	*time = 0;
	*cpu = 0;
	*pid = *tid = 0;
	if (m->time >= 0)
		memcpy(time, p + 8 + m->time, 8);
	if (m->cpu >= 0)
		memcpy(cpu, p + 8 + m->cpu, 4);
	if (m->tid >= 0) {
		memcpy(pid, p + 8 + m->tid, 4);
		memcpy(tid, p + 8 + m->tid + 4, 4);
	}
}

static int perfmap_walk(struct feed *f, struct tk_perfdata *pd, struct perfmap *m)
{
	const uint8_t *base = m->base;
	uint64_t pos = m->pos, end = m->end;
	bool all = f->flags & TK_FEED_ALL_EVENTS;
	int ret = 0;

	while (pos < end) {
		const uint8_t *p = base + pos;
		struct tk_perf_record rec;
		uint32_t type, size;

		if (!rec_head(p, end - pos, &type, &size))
			break;
		if (type == TK_PERF_RECORD_SAMPLE) {
			struct tk_feed_rec *r;
			uint32_t raw_size;
			uint64_t id;

			if (!perfmap_sample_raw(m, p, size, &raw_size))
				break;
			f->st->nr_records++;
			if (m->id >= 0) {
				memcpy(&id, p + 8 + m->id, 8);
				if (!perfmap_known_id(m, id))
					goto general;
			}
			r = queue_slot(f);
			if (!r) {
				ret = -ENOMEM;
				break;
			}
			if (!raw_size || !decode(f, p + 8 + m->before + 4, raw_size, r)) {
				if (all)
					goto general;
				pos += size;
				goto next;
			}
			/* Field by field: a memset of the slot compiled to a slow rep stos. */
			perfmap_sample_ids(m, p, &r->time, &r->cpu, &r->pid, &r->tid);
			memset(r->comm, 0, sizeof(r->comm));
			r->what = NULL;
			r->raw = NULL;
			r->raw_size = 0;
			r->read_size = 0;
			if (f->flags & TK_FEED_PAYLOAD) {
				r->raw = p + 8 + m->before + 4;
				r->raw_size = raw_size;
			}
			r->seq = f->seq++;
			ret = queue_commit(f, r);
			pos += size;
			if (ret)
				break;
			goto next;
		} else if (!perfmap_plain_type(type) || perfmap_spare(m, p, type, size)) {
			break;
		}
		f->st->nr_records++;
	general:
		memset(&rec, 0, sizeof(rec));
		rec.type = type;
		memcpy(&rec.misc, p + 4, 2);
		rec.size = (uint16_t)size;
		rec.offset = pos;
		rec.data = p;
		if ((uintptr_t)p % 8) {
			/* The reader hands records out 8-byte aligned; so does the walk. */
			memcpy(m->scratch, p, size);
			rec.data = m->scratch;
		}
		ret = perf_record(f, pd, &rec);
		pos += size;
		if (ret)
			break;
		if (type == TK_PERF_RECORD_FINISHED_ROUND && rec.offset >= m->round_limit) {
			m->last_round = rec.offset;
			m->chunk_end = true;
			break;
		}
	next:
		/* The next bytes mapped in ahead, those well behind dropped. */
		if (pos >= m->populated && m->populated != UINT64_MAX)
			perfmap_populate(m, pos);
		if (pos >= m->drop_at)
			perfmap_drop(m, pos);
	}
	m->pos = pos;
	return ret;
}

/*
 * Both CPUs walk. Reading the mapped file bounds sched latency and
 * timehist -s (a bare walk of the 328 MB bench file, every record header
 * followed and nothing decoded, is two thirds of latency's time on one
 * thread), so the walk itself is shared: the data section is cut into
 * chunks of SPLIT_CHUNK bytes, and a helper thread walks chunks ahead of
 * the calling thread, decoding their samples into 64-byte tuples (struct
 * pipe_rec), while the calling thread walks the others itself and, chunk
 * by chunk in file order, queues the helper's tuples as if it had read
 * them: the ordering queue and the analysis stay on one thread and see
 * every record in the order one thread gives them, so the text is the
 * same byte for byte.
 *
 * Where a chunk starts. A record boundary is only known by walking from an
 * earlier one, so chunk k is defined by rounds: it runs from just after
 * the first FINISHED_ROUND at or past its nominal start (data offset +
 * k * SPLIT_CHUNK) to the end of the first FINISHED_ROUND at or past the
 * next chunk's nominal start. The helper guesses that first FINISHED_ROUND
 * by its 8 bytes (type 68, misc 0, size 8) at 8-byte steps from the
 * nominal start; a payload may hold the same bytes, so the guess is only
 * a guess. The calling thread knows the true start (the end of the chunk
 * before, walked from a known boundary) and uses the helper's tuples only
 * when the two agree; otherwise it walks the chunk itself. A chunk with no
 * FINISHED_ROUND in its first SPLIT_CHUNK bytes is never started at (the
 * chunk before runs on), so the helper's work there is unused.
 *
 * What the helper takes: samples the one-thread walk takes as they are
 * (a known id, a length that fits its fields) and FINISHED_ROUNDs; at any
 * other record (side-band, damage, an unknown id), or with its tuple
 * buffer full, it stops, and the calling thread walks the rest of that
 * chunk with the one-thread code (which may hand the file to the reader,
 * ending the split). Nothing the helper does is seen unless its start
 * agrees, so damage and errors are met exactly as on one thread.
 *
 * Who does what. Each chunk has a slot (SPLIT_SLOTS, reused round robin)
 * whose state word holds the chunk number and FREE, BUSY (the helper's),
 * DONE, or TAKEN (the calling thread's). The helper claims chunks
 * SPLIT_LEAD or more ahead of the calling thread's chunk and at most
 * SPLIT_SLOTS ahead; the calling thread takes any chunk the helper has not
 * claimed, consumes a DONE one, and on a BUSY one waits while the helper
 * makes progress, taking the chunk over if it stalls (descheduled) for
 * SPLIT_STALL_NS. So the calling thread never waits long for a helper that
 * does not run.
 *
 * Only with TK_FEED_THREADS=split (tk_an_split_walk()): on the two vCPUs
 * it was slower than one thread even with both CPUs to itself. The tuples
 * are 192 MB of the 3 M-record bench file crossing from one CPU to the
 * other, and the calling thread took 100-230 ms to queue them, more than
 * one thread takes to walk the 328 MB file; streaming them past the
 * helper's cache changed nothing (bench/README.md, bench-analyze, stop 20).
 */
#define SPLIT_CHUNK	 (2u << 20)
#define SPLIT_SLOTS	 4
#define SPLIT_LEAD	 2
#define SPLIT_STALL_NS	 200000
#define SPLIT_MIN_CHUNKS 8 /* smaller data sections stay on one thread */
#define SPLIT_SYNC_NS	 10000000000ull

enum { SLOT_FREE, SLOT_BUSY, SLOT_DONE, SLOT_TAKEN };

#define SLOT_WORD(k, st) ((uint64_t)(k) << 2 | (st))
#define SLOT_CHUNK(v)	 ((v) >> 2)
#define SLOT_STATE(v)	 ((unsigned int)((v)&3))

struct split_slot {
	uint64_t state;	   /* SLOT_WORD(chunk, state), atomic */
	uint64_t progress; /* the helper's last position: it runs (atomic, relaxed) */
	/* Written by the helper before DONE: */
	uint64_t start;	     /* just after the FINISHED_ROUND it started at */
	uint64_t stop;	     /* where it stopped: the chunk's end or a record it left */
	uint64_t last_round; /* the offset of the FINISHED_ROUND that ended the chunk */
	bool complete;	     /* it reached the chunk's end (or the data's) */
	uint64_t nrec;	     /* records it read */
	size_t n, cap;
	struct pipe_rec *rec;
};

struct split {
	struct feed *f;
	struct perfmap m; /* the helper's copy: its own last_id */
	uint64_t data_off, chunk, nchunks;
	uint64_t a_chunk;  /* the calling thread's chunk (atomic) */
	uint64_t stall_ns; /* SPLIT_STALL_NS, or TK_FEED_STALL_NS (tests: 0 takes over at once) */
	/*
	 * Tests (TK_FEED_SPLIT_SYNC=1): the helper walks every chunk from the
	 * second on and the calling thread waits for it (up to SPLIT_SYNC_NS),
	 * so which chunks the helper walks does not depend on the scheduler.
	 */
	bool sync;
	int quit; /* atomic */
	pthread_t thread;
	struct split_slot slot[SPLIT_SLOTS];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The helper: chunk @k into @s; the calling thread reads it once DONE. */
static void split_chunk(struct split *sp, struct split_slot *s, uint64_t k)
{
	const struct perfmap *m = &sp->m;
	const uint8_t *base = m->base;
	uint64_t nom = sp->data_off + k * sp->chunk, next = nom + sp->chunk, end = m->end;
	uint64_t pos, scan_end = next < end ? next : end;
	struct feed *f = sp->f;
	bool all = f->flags & TK_FEED_ALL_EVENTS;

	s->n = 0;
	s->nrec = 0;
	s->complete = false;
	s->start = s->stop = UINT64_MAX;
	if (scan_end > nom) {
		uint64_t from = nom & ~(uint64_t)0xfff, to = (next + 0xfff) & ~(uint64_t)0xfff;

		if (to > ((end + 0xfff) & ~(uint64_t)0xfff))
			to = (end + 0xfff) & ~(uint64_t)0xfff;
		madvise((void *)(base + from), to - from, MADV_POPULATE_READ);
	}
	__atomic_store_n(&s->progress, 1, __ATOMIC_RELAXED);
	/* The first FINISHED_ROUND's 8 bytes, at 8-byte steps from the data offset. */
	for (pos = nom; pos + 8 <= scan_end; pos += 8) {
		static const uint8_t fr[8] = {TK_PERF_RECORD_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0};

		if (!memcmp(base + pos, fr, 8))
			break;
	}
	__atomic_store_n(&s->progress, pos, __ATOMIC_RELAXED);
	if (pos + 8 > scan_end)
		return;
	pos += 8;
	s->start = pos;
	while (pos < end) {
		const uint8_t *p = base + pos;
		uint32_t type, size, raw_size;
		struct tk_feed_rec r;
		struct pipe_rec *t;
		uint64_t id;

		if (s->n == s->cap || !rec_head(p, end - pos, &type, &size))
			break;
		if (type == TK_PERF_RECORD_FINISHED_ROUND && size == 8) {
			t = &s->rec[s->n++];
			t->kind = PIPE_FLUSH;
			s->nrec++;
			if (pos >= next) {
				s->last_round = pos;
				s->complete = true;
				pos += 8;
				break;
			}
			pos += 8;
			continue;
		}
		if (type != TK_PERF_RECORD_SAMPLE) {
			/*
			 * A record perf_record() ignores under the split's flags
			 * (no ALL_EVENTS, no PAYLOAD): counted, nothing else.
			 */
			if (!perfmap_plain_type(type) || perfmap_spare(m, p, type, size) ||
			    type == TK_PERF_RECORD_LOST || type == TK_PERF_RECORD_FINISHED_ROUND ||
			    ((f->flags & TK_FEED_SIDEBAND) &&
			     (type == TK_PERF_RECORD_COMM || type == TK_PERF_RECORD_FORK ||
			      type == TK_PERF_RECORD_EXIT)))
				break;
			s->nrec++;
			pos += size;
			continue;
		}
		if (!perfmap_sample_raw(m, p, size, &raw_size))
			break;
		if (m->id >= 0) {
			memcpy(&id, p + 8 + m->id, 8);
			if (!perfmap_known_id(&sp->m, id))
				break;
		}
		if (!raw_size || !decode(f, p + 8 + m->before + 4, raw_size, &r)) {
			if (all)
				break;
			s->nrec++;
			pos += size;
			continue;
		}
		s->nrec++;
		t = &s->rec[s->n++];
		perfmap_sample_ids(m, p, &t->time, &t->cpu, &t->pid, &t->tid);
		memcpy(t->val, r.val, sizeof(t->val));
		t->kind = r.kind;
		t->want = r.want;
		pos += size;
		if (!(s->n & 255))
			__atomic_store_n(&s->progress, pos, __ATOMIC_RELAXED);
	}
	if (pos >= end)
		s->complete = true;
	s->stop = pos;
}

static void *split_main(void *arg)
{
	struct split *sp = arg;
	uint64_t next = 1; /* chunk 0 is the calling thread's */
	unsigned int idle = 0;

	while (!__atomic_load_n(&sp->quit, __ATOMIC_ACQUIRE)) {
		uint64_t a = __atomic_load_n(&sp->a_chunk, __ATOMIC_ACQUIRE);
		uint64_t lead = sp->sync ? 0 : SPLIT_LEAD;
		uint64_t j = next > a + lead ? next : a + lead;
		struct split_slot *s;
		uint64_t v;

		/*
		 * The helper drops the mapping behind the calling thread (which
		 * walks at or past its chunk's nominal start): a drop flushes the
		 * TLB of both CPUs, and the calling thread is the one to spare.
		 */
		if (sp->data_off + a * sp->chunk >= sp->m.drop_at)
			perfmap_drop(&sp->m, sp->data_off + a * sp->chunk);
		if (j >= sp->nchunks)
			break;
		s = &sp->slot[j % SPLIT_SLOTS];
		v = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (j >= a + SPLIT_SLOTS || (SLOT_STATE(v) != SLOT_FREE && SLOT_CHUNK(v) >= a)) {
			/* Far enough ahead: wait for the calling thread, briefly spinning. */
			if (++idle < 256) {
				cpu_relax();
			} else {
				struct timespec ts = {0, 20000};

				nanosleep(&ts, NULL);
			}
			continue;
		}
		idle = 0;
		if (!__atomic_compare_exchange_n(&s->state, &v, SLOT_WORD(j, SLOT_BUSY), false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		__atomic_store_n(&s->progress, 0, __ATOMIC_RELAXED);
		split_chunk(sp, s, j);
		v = SLOT_WORD(j, SLOT_BUSY);
		/* Fails when the calling thread took the chunk over: then it is unused. */
		__atomic_compare_exchange_n(&s->state, &v, SLOT_WORD(j, SLOT_DONE), false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		next = j + 1;
	}
	return NULL;
}

/*
 * Chunk bytes: SPLIT_CHUNK, or TK_FEED_CHUNK from the environment (tests
 * cut their small files into many chunks).
 */
static uint64_t split_chunk_size(void)
{
	const char *env = getenv("TK_FEED_CHUNK");
	unsigned long long v;

	if (!env || !*env)
		return SPLIT_CHUNK;
	v = strtoull(env, NULL, 0);
	return v >= 64 && v <= (1ull << 30) ? (uint64_t)v & ~(uint64_t)7 : SPLIT_CHUNK;
}

/* NULL: stay on one thread (a small file, tk_an_split_walk() says no, no memory). */
static struct split *split_start(struct feed *f, const struct perfmap *m)
{
	uint64_t chunk = split_chunk_size(), size = m->end - m->pos;
	struct split *sp;
	const char *env;

	if (f->pipe || (f->flags & ~(unsigned int)TK_FEED_SIDEBAND) ||
	    size / chunk < SPLIT_MIN_CHUNKS || !tk_an_split_walk())
		return NULL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return NULL;
	sp->f = f;
	sp->m = *m;
	sp->data_off = m->pos;
	sp->chunk = chunk;
	sp->nchunks = (size + chunk - 1) / chunk;
	env = getenv("TK_FEED_STALL_NS");
	sp->stall_ns = env && *env ? strtoull(env, NULL, 0) : SPLIT_STALL_NS;
	env = getenv("TK_FEED_SPLIT_SYNC");
	sp->sync = env && !strcmp(env, "1");
	if (sp->sync)
		sp->stall_ns = SPLIT_SYNC_NS;
	for (int i = 0; i < SPLIT_SLOTS; i++) {
		struct split_slot *s = &sp->slot[i];

		/* A tuple per 64 bytes of file: more than any sched file needs. */
		s->cap = (size_t)(chunk / 64 + 16);
		s->rec = malloc(s->cap * sizeof(*s->rec));
		if (!s->rec)
			goto fail;
	}
	if (pthread_create(&sp->thread, NULL, split_main, sp))
		goto fail;
	return sp;
fail:
	for (int i = 0; i < SPLIT_SLOTS; i++)
		free(sp->slot[i].rec);
	free(sp);
	return NULL;
}

/* End the helper; @m drops behind its walk again from where the helper left off. */
static void split_stop(struct split *sp, struct perfmap *m)
{
	__atomic_store_n(&sp->quit, 1, __ATOMIC_RELEASE);
	pthread_join(sp->thread, NULL);
	if (sp->m.dropped > m->dropped)
		m->dropped = sp->m.dropped;
	m->drop_every = 2 * (uint64_t)MAP_DROP;
	m->drop_at = m->dropped + m->drop_every;
	for (int i = 0; i < SPLIT_SLOTS; i++)
		free(sp->slot[i].rec);
	free(sp);
}

/*
 * Room for @n more queued records at f->q[f->qlen], as @n calls of
 * queue_slot() would make it (the delivered records make room first; the
 * queue grows when still more than a quarter full). -ENOMEM when out of memory.
 */
static int queue_reserve(struct feed *f, size_t n)
{
	size_t cap;
	struct tk_feed_rec *q;

	if (f->qcap - f->qlen >= n)
		return 0;
	if (f->q0) {
		memmove(f->q, f->q + f->q0, (f->qlen - f->q0) * sizeof(*f->q));
		f->qlen -= f->q0;
		f->q0 = 0;
		if (f->qcap - f->qlen >= n &&
		    f->qlen <= f->qcap / (f->qcap * sizeof(*f->q) < QUEUE_ROOMY ? 4 : 2))
			return 0;
	}
	cap = f->qcap ? f->qcap * 2 : 8192;
	while (cap - f->qlen < n)
		cap *= 2;
	q = realloc(f->q, cap * sizeof(*q));
	if (!q)
		return tk_fail(ENOMEM, "out of memory");
	f->q = q;
	f->qcap = cap;
	return 0;
}

/*
 * The helper's tuples of one chunk, queued as the walk would have queued
 * them: each stretch between two round ends written straight into the
 * queue after one reservation.
 */
static int split_consume(struct feed *f, const struct split_slot *s)
{
	const struct pipe_rec *t = s->rec, *end = s->rec + s->n;
	int ret = 0;

	while (t < end && !ret) {
		const struct pipe_rec *e = t;
		struct tk_feed_rec *r;

		if (t->kind == PIPE_FLUSH) {
			ret = flush_queue(f, f->next_flush, false);
			f->next_flush = f->max_ts;
			t++;
			continue;
		}
		while (e < end && e->kind != PIPE_FLUSH)
			e++;
		ret = queue_reserve(f, (size_t)(e - t));
		if (ret)
			break;
		for (; t < e; t++) {
			r = &f->q[f->qlen];
			r->time = t->time;
			memcpy(r->val, t->val, sizeof(r->val));
			r->cpu = t->cpu;
			r->pid = t->pid;
			r->tid = t->tid;
			r->kind = t->kind;
			r->want = t->want;
			r->seq = f->seq++;
			memset(r->comm, 0, sizeof(r->comm));
			r->event = f->bound[t->want].event;
			r->what = NULL;
			r->raw = NULL;
			r->raw_size = 0;
			r->read_size = 0;
			if (!r->time) {
				/* perf's records without a time go out at once (queue_commit()). */
				ret = deliver(f, r);
				if (ret)
					break;
				continue;
			}
			f->qlen++;
			if (r->time > f->max_ts)
				f->max_ts = r->time;
		}
	}
	f->st->nr_records += s->nrec;
	return ret;
}

/*
 * Chunk @k's slot, for the calling thread: true when the helper's tuples
 * are there to use (DONE); false when the chunk is the calling thread's to
 * walk (the helper never claimed it, or stalled and it was taken over).
 */
static bool split_take(struct split *sp, uint64_t k)
{
	struct split_slot *s = &sp->slot[k % SPLIT_SLOTS];
	uint64_t seen = UINT64_MAX, since = 0, sync_from = sp->sync && k ? now_ns() : 0;

	for (unsigned int spins = 0;; spins++) {
		uint64_t v = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (SLOT_CHUNK(v) == k && SLOT_STATE(v) == SLOT_DONE)
			return true;
		if (sync_from && SLOT_CHUNK(v) != k && now_ns() - sync_from < SPLIT_SYNC_NS) {
			sched_yield(); /* the helper will claim it: let it run */
			continue;
		}
		if (SLOT_CHUNK(v) == k && SLOT_STATE(v) == SLOT_BUSY && sp->stall_ns &&
		    (spins & 63)) {
			if (sp->sync)
				sched_yield();
			else
				cpu_relax();
			continue;
		}
		if (SLOT_CHUNK(v) == k && SLOT_STATE(v) == SLOT_BUSY && sp->stall_ns) {
			/* Wait while the helper makes progress; take over when it stalls. */
			uint64_t p = __atomic_load_n(&s->progress, __ATOMIC_RELAXED), t = now_ns();

			if (p != seen || !since) {
				seen = p;
				since = t;
				continue;
			}
			if (t - since < sp->stall_ns)
				continue;
		}
		if (__atomic_compare_exchange_n(&s->state, &v, SLOT_WORD(k, SLOT_TAKEN), false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return false;
	}
}

/*
 * Mapping in ahead. What a second CPU does pay for on this walk is the
 * kernel's part: filling the page tables of the mapping (MADV_POPULATE_READ,
 * a fifth of a sched analysis's time on one thread). A helper thread does
 * it MAP_AHEAD_STEP at a time, up to MAP_AHEAD_MAX past where the walk says
 * it is, and sleeps when that far ahead; the walk itself (and everything
 * after it) stays on the calling thread, so nothing is handed over and the
 * calling thread never waits: where the helper has not been yet, the page
 * faults map the file in as on one thread. sched latency on the 3 M-sample
 * file, real-time priority on both vCPUs: 0.155-0.168 s on one thread,
 * 0.139-0.141 s with the helper (bench/README.md, bench-analyze, stop 20);
 * reading every cache line ahead as well cost CPU and gained nothing.
 */

struct mapahead {
	const uint8_t *base;
	uint64_t end;
	uint64_t pos;  /* where the walk is (atomic) */
	uint64_t quit; /* atomic */
	pthread_t thread;
};

static void *mapahead_main(void *arg)
{
	struct mapahead *a = arg;
	uint64_t next = 0, pend = (a->end + 0xfff) & ~(uint64_t)0xfff;

	while (!__atomic_load_n(&a->quit, __ATOMIC_RELAXED)) {
		uint64_t pos = __atomic_load_n(&a->pos, __ATOMIC_RELAXED), to;

		if (next < pos)
			next = pos & ~(uint64_t)0xfff;
		if (next >= pend)
			break;
		if (next >= pos + MAP_AHEAD_MAX) {
			/*
			 * The walk takes ~0.5 ms a MB: a nap of that keeps the
			 * helper ahead with a few hundred wake-ups a file (at 20
			 * us they cost more CPU than the mapping they spared).
			 */
			struct timespec ts = {0, 500000};

			nanosleep(&ts, NULL);
			continue;
		}
		to = next + MAP_AHEAD_STEP < pend ? next + MAP_AHEAD_STEP : pend;
		if (madvise((void *)(a->base + next), to - next, MADV_POPULATE_READ))
			break; /* an old kernel: the walk's faults do it */
		next = to;
	}
	return NULL;
}

/* Whether to map in ahead: a data section of MAP_AHEAD_MIN or more (any with
 * TK_FEED_THREADS=ahead). */
static bool map_ahead_wanted(const struct perfmap *m)
{
	const char *env = getenv("TK_FEED_THREADS");

	if (!tk_an_map_ahead())
		return false;
	return m->end - m->pos >= MAP_AHEAD_MIN || (env && !strcmp(env, "ahead"));
}

/* perfmap_walk() with a helper mapping in ahead; without one when it cannot start. */
static int mapahead_walk(struct feed *f, struct tk_perfdata *pd, struct perfmap *m)
{
	struct mapahead a = {.base = m->base, .end = m->end, .pos = m->pos};
	int ret;

	if (pthread_create(&a.thread, NULL, mapahead_main, &a))
		return perfmap_walk(f, pd, m);
	m->ahead_pos = &a.pos;
	m->populated = m->pos; /* the first call tells the helper */
	ret = perfmap_walk(f, pd, m);
	__atomic_store_n(&a.quit, 1, __ATOMIC_RELAXED);
	pthread_join(a.thread, NULL);
	m->ahead_pos = NULL;
	return ret;
}

/*
 * The walk of run_perf() over both CPUs when split_start() allows it, else
 * perfmap_walk(). Returns and leaves m->pos as perfmap_walk() does.
 */
static int split_run(struct feed *f, struct tk_perfdata *pd, struct perfmap *m)
{
	struct split *sp = split_start(f, m);
	uint64_t k = 0;
	int ret = 0;

	if (!sp)
		return map_ahead_wanted(m) ? mapahead_walk(f, pd, m) : perfmap_walk(f, pd, m);
	m->ahead = sp->chunk;
	/*
	 * The helper drops (see split_main()); this thread only when the
	 * helper does not run and it walks on alone, so RSS stays flat.
	 */
	m->drop_every = 6 * (uint64_t)MAP_DROP;
	m->drop_at = m->dropped + m->drop_every;
	for (;;) {
		const struct split_slot *s = &sp->slot[k % SPLIT_SLOTS];

		/* The helper reads this before reusing any slot of an older chunk. */
		__atomic_store_n(&sp->a_chunk, k, __ATOMIC_RELEASE);
		bool done = split_take(sp, k);

		if (done && s->start != m->pos)
			f->st->nr_split_wrong++;
		if (done && s->start == m->pos) {
			f->st->nr_split_used++;
			ret = split_consume(f, s);
			m->pos = s->stop;
			if (ret)
				break;
			if (s->complete) {
				if (m->pos >= m->end)
					break;
				k = (s->last_round - sp->data_off) / sp->chunk;
				continue;
			}
		}
		/* Chunk k (or the rest the helper left of it) on this thread. */
		m->round_limit = sp->data_off + (k + 1) * sp->chunk;
		m->chunk_end = false;
		ret = perfmap_walk(f, pd, m);
		if (ret || !m->chunk_end)
			break;
		k = (m->last_round - sp->data_off) / sp->chunk;
	}
	split_stop(sp, m);
	m->round_limit = UINT64_MAX;
	m->chunk_end = false;
	m->ahead = MAP_DROP;
	return ret;
}

/*
 * Two CPUs. Over a perf.data the walk (the mapping's page faults, the
 * record checks, field reads and the ordering queue) and the analysis (its
 * state machine, and timehist's 1.5 M lines of text) each take a good part
 * of the time, one after the other on one thread. When the process may use
 * two CPUs and TK_FEED_THREADS=2 asks for it (tk_an_idle_cpu(): on two
 * vCPUs the second thread made each analysis slower, loaded or quiet) and the records carry nothing
 * that lives only during the callback (no TK_FEED_PAYLOAD, no TK_FEED_ALL_EVENTS and its
 * callchains, no TK_FEED_SALVAGE and its damage texts), the analysis runs on a second thread
 * instead: delivered records are copied, in order, into batches the analysis thread takes in turn
 * (struct pipe). The analysis sees the same records in the same order, so its text is the same byte
 * for byte; with one CPU allowed (taskset -c 0) nothing changes.
 */
static int run_perf(struct feed *f, const char *path)
{
	TK_OPTS(tk_perfdata_open_opts, oopts, .strict = !(f->flags & TK_FEED_SALVAGE));
	struct tk_perfdata *pd = f->flags & TK_FEED_SALVAGE ? tk_perfdata_open_opts(path, &oopts)
							    : tk_perfdata_open(path);
	const struct tk_tracedata *td;
	struct tk_perf_record rec;
	struct perfmap m;
	bool walked = false;
	int ret;

	if (!pd)
		return -errno;
	f->st->perfdata = true;
	f->st->pd = pd;
	if (tk_perfdata_get_host(pd) && tk_perfdata_get_host(pd)->has_nrcpus)
		f->st->nr_cpus_online = tk_perfdata_get_host(pd)->nr_cpus_online;
	if (tk_perfdata_get_host(pd) && tk_perfdata_get_host(pd)->arch)
		snprintf(f->st->arch, sizeof(f->st->arch), "%s", tk_perfdata_get_host(pd)->arch);
	if (tk_perfdata_get_host(pd) && tk_perfdata_get_host(pd)->hostname)
		snprintf(f->st->host, sizeof(f->st->host), "%s",
			 tk_perfdata_get_host(pd)->hostname);
	td = tk_perfdata_get_tracedata(pd);
	if (!td && (f->flags & TK_FEED_ALL_EVENTS)) {
		/* Samples and side-band only: an empty event set decodes nothing. */
		f->set = tk_event_set_new(8, false, 4096);
	} else if (!td) {
		ret = tk_fail(ENOENT, "%s: no tracing data: not a recording of tracepoints", path);
		goto out;
	} else {
		f->set = set_from_tracedata(f, td);
	}
	f->st->set = f->set;
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
	if ((f->flags & MMAP_FLAGS) == MMAP_FLAGS)
		ret = perf_build_ids(f, pd);
	if (ret)
		goto out;
	if (!(f->flags & ~(unsigned int)TK_FEED_SIDEBAND) && tk_an_idle_cpu())
		f->pipe = pipe_start(f);
	if (ret == 0 && perfmap_open(&m, pd)) {
		uint64_t at;
		bool left;

		ret = split_run(f, pd, &m);
		at = m.pos;
		left = m.pos < m.end;
		perfmap_close(&m);
		if (ret)
			goto out;
		walked = true;
		if (left) {
			/*
			 * The reader takes over at the record the walk left: it
			 * has read no record yet, so it reads the file from its
			 * first record and skips those the walk took (a second
			 * open would repeat the warnings of the first).
			 */
			while ((ret = tk_perfdata_next(pd, &rec)) > 0 && rec.offset < at)
				;
			if (ret > 0) {
				f->st->nr_records++;
				ret = perf_record(f, pd, &rec);
				walked = ret != 0;
			}
		}
	}
	while (!walked && (ret = tk_perfdata_next(pd, &rec)) > 0) {
		f->st->nr_records++;
		ret = perf_record(f, pd, &rec);
		if (ret)
			break;
	}
	if (ret == 0)
		ret = flush_queue(f, 0, true);
	if (ret == 0 && (f->flags & TK_FEED_SALVAGE))
		ret = perf_damage(f, pd);
out:
	if (f->pipe)
		ret = pipe_finish(f->pipe, ret);
	f->pipe = NULL;
	free(f->q);
	tk_bytebuf_release(&f->arena);
	tk_bytebuf_release(&f->arena2);
	tk_bytebuf_release(&f->readbuf);
	tk_perf_fixed_free(f->fixed);
	f->st->pd = NULL; /* closed now */
	tk_perfdata_close(pd);
	return ret;
}

int tk_feed_run(const char *path, const struct tk_feed_want *wants, size_t nwants,
		unsigned int flags, tk_feed_fn fn, void *ctx, struct tk_feed_stats *stats)
{
	struct feed f = {.wants = wants,
			 .nwants = nwants,
			 .flags = flags,
			 .fn = fn,
			 .ctx = ctx,
			 .type_off = -1};
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
