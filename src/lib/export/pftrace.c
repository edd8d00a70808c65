// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * pftrace: a trace as Perfetto's protobuf Trace, written in one pass.
 *
 * The file is a Trace message: field 1 (packet) repeated, each a
 * TracePacket. We write by hand (pftrace-proto.h): no .proto files are
 * compiled into the tree, each message is written once straight into the
 * output chunk as its fields are read (no object tree, no second copy),
 * and a record costs a few varints. The field numbers come from Perfetto's
 * protos (protos/perfetto/trace/...); pftrace-internal.h names them.
 *
 * Packets, in the order a piece holds them:
 *   ClockSnapshot   BOOTTIME and the file's clock at the first record's
 *                   time: the records keep the time `tracekit report`
 *                   shows, which Perfetto takes as BOOTTIME (a .dat holds
 *                   no pair of clocks to place them better; the snapshot
 *                   says which clock they were read from), and REALTIME
 *                   when the file knows the time of day
 *   SystemInfo      utsname from the .dat's UNAME option or perf's
 *                   HOSTNAME/OSRELEASE/ARCH, the CPU count
 *   ProcessTree     every thread known so far (saved cmdlines; perf's
 *                   COMM and FORK records, each also a ProcessTree of its
 *                   one thread at its time)
 *   FtraceEventBundle, per CPU, the CPU's records in time order: one
 *                   FtraceEvent (timestamp 1, pid 2, the event) each, but
 *                   sched_switch and sched_waking in the bundle's
 *                   CompactSched arrays (delta times, comms interned per
 *                   bundle). Typed messages for the events listed in
 *                   typed[] below; every other event self-described
 *                   (describe(): its fields as a message of its own under
 *                   an FtraceEvent field from 65536, its descriptor once
 *                   per bundle; pointers as fixed64), or as
 *                   GenericFtraceEvent (named fields)
 *                   past 31 fields, so nothing recorded is dropped. A page
 *                   flagged with lost events closes its CPU's bundle and
 *                   flags the next one lost_events (a bundle holds
 *                   contiguous data only).
 *   PerfSample      and its InternedData (pftrace-perf.c).
 *   FtraceStats     at the end, the kernel's per-CPU counters (CPUSTAT).
 *
 * Unless a level is asked for, zstd runs at level -70 (7-byte matches,
 * a 1 KiB table) with its literals Huffman-coded (zstd_init()): on the
 * 3 M-event bench file 1.47x the zstd .dat (stop 21), where level 1 made
 * 0.93x at 2/3 of the speed; zlib runs at level 1. See bench/README.md.
 *
 * Memory: one open bundle per CPU, closed at BUNDLE_MAX bytes or when its
 * comm table fills; closed bundles go to the chunk, which is written (or
 * compressed and written as one TracePacket compressed_packets, deflate,
 * or zstd_compressed_packets) at CHUNK_MAX bytes: Perfetto wants each
 * compressed packet under 512 KiB. Nothing grows with the events. Bundles
 * of 128 KiB: each repeats its descriptors and comm table, which at 32 KiB
 * made 2% of the bytes; a chunk then holds at most 256 + 128 KiB and a
 * record, under that limit even where nothing compresses.
 *
 * Split (--split-size): before each record the writer checks that the
 * piece's bytes plus the worst case of everything still open (chunk and
 * bundles at their codec bound, plus one record) stay under the size;
 * when they would not, every bundle is closed into this piece, the chunk
 * written, and the next piece opened and given its own head. Pieces so
 * hold consecutive time ranges and each opens alone in Perfetto.
 *
 * Event formats are parsed when an event id is first met (a kernel has
 * ~2000 formats and a trace uses a few); the ids are found by scanning
 * the formats' "ID:" lines once. What a record of the id becomes is
 * worked out then too: the field offsets, the key bytes, and the size a
 * record needs to hold every numeric field. A record that has it (all
 * of them, in a file of our byte order) is written by put_fast(): one
 * bounds check, each number one 8-byte load ending at the field's end
 * (fields start after the 8 common bytes, so the load stays inside the
 * record) and a shift, through a local cursor; the rest by put_slow(),
 * field by field with their bounds. Both write the same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* for ZSTD_c_literalCompressionMode, set through the stable setParameter() */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <tracekit/codec.h>
#include <tracekit/dat.h>
#include <tracekit/event.h>
#include <tracekit/pftrace.h>
#include <tracekit/tracedata.h>

#include "pftrace-internal.h"
#include "pftrace-proto.h"
#include "page-internal.h"
#include "internal/error.h"
#include "internal/fsutil.h"
#include "internal/merge-heap.h"

#define CHUNK_MAX      (256u << 10)
#define BUNDLE_MAX     (128u << 10)
#define RECORD_MARGIN  (64u << 10)
#define NINTERN	       128 /* comms per bundle */
#define MAX_CPUS       4096
#define NDESC	       32    /* self-described event kinds per bundle */
#define FIRST_FIELD_ID 65536 /* FtraceEvent's range for self-described events */
#define LAST_FIELD_ID  131072

/* ------------------------------------------------------------- events */

/* FtraceEvent's fields */
enum { FE_TIMESTAMP = 1, FE_PID = 2, FE_GENERIC = 327 };
/* FtraceEventBundle's */
enum { FB_CPU = 1, FB_EVENT = 2, FB_LOST = 3, FB_COMPACT = 4, FB_DESCRIPTOR = 11 };
/* GenericFtraceEvent's */
enum { GE_NAME = 1, GE_FIELD = 2, GF_NAME = 1, GF_STR = 3, GF_INT = 4, GF_UINT = 5 };

enum ev_kind { EV_GENERIC, EV_TYPED, EV_SWITCH, EV_WAKING };

#define TYPED_FIELDS 7

struct typed {
	const char *system, *name;
	uint16_t num; /* FtraceEvent's oneof field */
	struct {
		const char *name;
		uint8_t num;
	} f[TYPED_FIELDS];
};

/*
 * The events Perfetto has typed messages for that Linux tracing commonly
 * records; a field the proto has no number for (sched_process_exit's
 * group_dead) is not carried. Field names are the kernel's.
 */
static const struct typed typed[] = {
	{"sched",
	 "sched_switch",
	 4,
	 {{"prev_comm", 1},
	  {"prev_pid", 2},
	  {"prev_prio", 3},
	  {"prev_state", 4},
	  {"next_comm", 5},
	  {"next_pid", 6},
	  {"next_prio", 7}}},
	{"sched",
	 "sched_waking",
	 20,
	 {{"comm", 1}, {"pid", 2}, {"prio", 3}, {"success", 4}, {"target_cpu", 5}}},
	{"sched",
	 "sched_wakeup",
	 17,
	 {{"comm", 1}, {"pid", 2}, {"prio", 3}, {"success", 4}, {"target_cpu", 5}}},
	{"sched",
	 "sched_wakeup_new",
	 114,
	 {{"comm", 1}, {"pid", 2}, {"prio", 3}, {"success", 4}, {"target_cpu", 5}}},
	{"sched",
	 "sched_process_fork",
	 239,
	 {{"parent_comm", 1}, {"parent_pid", 2}, {"child_comm", 3}, {"child_pid", 4}}},
	{"sched", "sched_process_exit", 238, {{"comm", 1}, {"pid", 2}, {"tgid", 3}, {"prio", 4}}},
	{"sched", "sched_process_free", 240, {{"comm", 1}, {"pid", 2}, {"prio", 3}}},
	{"sched", "sched_process_exec", 237, {{"filename", 1}, {"pid", 2}, {"old_pid", 3}}},
	{"sched", "sched_process_wait", 242, {{"comm", 1}, {"pid", 2}, {"prio", 3}}},
	{"task",
	 "task_newtask",
	 235,
	 {{"pid", 1}, {"comm", 2}, {"clone_flags", 3}, {"oom_score_adj", 4}}},
	{"task",
	 "task_rename",
	 236,
	 {{"pid", 1}, {"oldcomm", 2}, {"newcomm", 3}, {"oom_score_adj", 4}}},
	{"irq", "irq_handler_entry", 36, {{"irq", 1}, {"name", 2}}},
	{"irq", "irq_handler_exit", 37, {{"irq", 1}, {"ret", 2}}},
	{"irq", "softirq_entry", 24, {{"vec", 1}}},
	{"irq", "softirq_exit", 25, {{"vec", 1}}},
	{"irq", "softirq_raise", 26, {{"vec", 1}}},
	{"raw_syscalls", "sys_enter", 329, {{"id", 1}, {"args", 2}}},
	{"raw_syscalls", "sys_exit", 330, {{"id", 1}, {"ret", 2}}},
	{"power", "cpu_frequency", 11, {{"state", 1}, {"cpu_id", 2}}},
	{"power", "cpu_idle", 13, {{"state", 1}, {"cpu_id", 2}}},
	/* Perfetto makes its per-process memory counters of this one. */
	{"kmem", "rss_stat", 313, {{"member", 1}, {"size", 2}, {"curr", 3}, {"mm_id", 4}}},
	{"ftrace", "print", 3, {{"ip", 1}, {"buf", 2}}},
};

/* What one event id becomes; built when the id is first met. */
struct pft_ev {
	const struct tk_event *ev; /* NULL: no format (the record goes out generic, unnamed) */
	enum ev_kind kind;
	uint16_t num;	  /* EV_TYPED: the oneof field */
	uint8_t nfields;  /* fields[] entries */
	uint8_t nums[32]; /* EV_TYPED: proto field of fields[i] */
	const struct tk_event_field *fields[32];
	struct pft_fld fld[32];		   /* how fields[i] reads */
	const struct tk_event_field **all; /* EV_GENERIC: every non-common field */
	struct pft_fld *all_fld;	   /* how all[i] reads */
	uint32_t *all_len;		   /* strlen() of each one's name */
	size_t nall;
	uint32_t name_len; /* of the event's name */
	uint32_t field_id; /* EV_GENERIC: its FtraceEvent field when self-described, or 0 */
	uint8_t *desc;	   /* its GenericEventDescriptor message body */
	size_t desc_len;
	uint64_t
		in_bundle[8]; /* bundle_describes(): a bundle (by serial, per cpu & 7) holding it */
	bool fast;	      /* a record of @need bytes or more goes through put_fast() */
	uint32_t need;
	uint32_t room; /* bytes a record's frame and fields take, strings and arrays aside */
	uint8_t mkey[4], mkey_len; /* the key of its message in FtraceEvent */
};

/* CompactSched's packed arrays and their field numbers. */
enum {
	CS_SW_TS,
	CS_SW_STATE,
	CS_SW_PID,
	CS_SW_PRIO,
	CS_SW_COMM,
	CS_WK_TS,
	CS_WK_PID,
	CS_WK_CPU,
	CS_WK_PRIO,
	CS_WK_COMM,
	CS_WK_FLAGS,
	CS_N
};
static const uint8_t cs_num[CS_N] = {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12};

struct pft_cpu {
	uint32_t cpu;
	struct tk_bytebuf ev;	    /* FtraceEvent messages, each framed as field 2 */
	struct tk_bytebuf cs[CS_N]; /* packed varints */
	uint64_t last_sw, last_wk;
	uint32_t nsw, nwk, nev;
	bool lost;
	uint32_t nintern;
	char intern[NINTERN][16];
	uint8_t hash[256]; /* index + 1 into intern[], open addressing */
	uint64_t bytes;	   /* counted in s->open_bytes (with --split-size) */
	uint32_t ndesc;	   /* self-described events this bundle uses */
	const struct pft_ev *desc[NDESC];
	uint64_t serial; /* of the open bundle, unique in the session */
	uint64_t cs_len; /* bytes in cs[] */
	size_t cs_room;	 /* compact records cs[] has room for (cs_room()) */
	uint64_t fixed;	 /* the bundle's comm table and descriptors, as cpu_bytes() counts them */
};

/* ------------------------------------------------------------ output */

static int write_piece(struct pft_session *s, const void *data, size_t len)
{
	int r = tk_write_all(s->fd, data, len);

	if (r < 0)
		return tk_fail(-r, "%s: write: %s", s->name, strerror(-r));
	s->piece_bytes += len;
	s->st->bytes += len;
	return 0;
}

/* Write the chunk: as it is, or as one TracePacket of compressed packets. */
static int flush_chunk(struct pft_session *s)
{
	uint8_t head[16];
	size_t hl = 0;
	uint64_t bound;
	int64_t n;
	int r;

	if ((r = tk_bytebuf_error(&s->chunk)) < 0)
		return r;
	if (!s->chunk.len)
		return 0;
	if (!s->codec && !s->zc) {
		r = write_piece(s, s->chunk.data, s->chunk.len);
		tk_bytebuf_reset(&s->chunk);
		return r;
	}
	bound = s->zc ? ZSTD_compressBound(s->chunk.len) : tk_codec_bound(s->codec, s->chunk.len);
	if (bound > s->cbuf_cap) {
		uint8_t *p = realloc(s->cbuf, bound);

		if (!p)
			return tk_fail(ENOMEM, "out of memory");
		s->cbuf = p;
		s->cbuf_cap = bound;
	}
	if (s->zc) {
		size_t z = ZSTD_compress2(s->zc, s->cbuf, s->cbuf_cap, s->chunk.data, s->chunk.len);

		if (ZSTD_isError(z))
			return tk_fail(EIO, "%s: zstd: %s", s->name, ZSTD_getErrorName(z));
		n = (int64_t)z;
	} else {
		n = tk_codec_compress(s->codec, s->cbuf, s->cbuf_cap, s->chunk.data, s->chunk.len);
		if (n < 0)
			return (int)n;
	}
	/* Trace.packet { compressed_packets: bytes } */
	{
		uint32_t field = s->zc ? PF_PKT_ZSTD_COMPRESSED : PF_PKT_COMPRESSED;
		size_t inner = pb_varint_size((uint64_t)field << 3) + pb_varint_size((uint64_t)n) +
			       (size_t)n;

		hl += pb_put_varint_at(head + hl, PF_TRACE_PACKET << 3 | PB_LEN);
		hl += pb_put_varint_at(head + hl, inner);
		hl += pb_put_varint_at(head + hl, (uint64_t)field << 3 | PB_LEN);
		hl += pb_put_varint_at(head + hl, (uint64_t)n);
	}
	r = write_piece(s, head, hl);
	if (!r)
		r = write_piece(s, s->cbuf, (size_t)n);
	tk_bytebuf_reset(&s->chunk);
	return r;
}

size_t pft_packet_begin(struct pft_session *s)
{
	return pb_begin_long(&s->chunk, PF_TRACE_PACKET);
}

int pft_packet_end(struct pft_session *s, size_t start)
{
	pb_end_long(&s->chunk, start);
	s->st->packets++;
	if (s->chunk.len >= CHUNK_MAX)
		return flush_chunk(s);
	return tk_bytebuf_error(&s->chunk);
}

/* --------------------------------------------------------------- bundles */

static void cpu_reset(struct pft_session *s, struct pft_cpu *c)
{
	tk_bytebuf_reset(&c->ev);
	for (int i = 0; i < CS_N; i++)
		tk_bytebuf_reset(&c->cs[i]);
	c->nsw = c->nwk = c->nev = 0;
	c->last_sw = c->last_wk = 0;
	c->nintern = 0;
	c->ndesc = 0;
	c->cs_len = c->fixed = 0;
	c->cs_room = 0;
	c->serial = ++s->bundles;
	memset(c->hash, 0, sizeof(c->hash));
}

static int bundle_flush(struct pft_session *s, struct pft_cpu *c)
{
	size_t pkt, b;
	int r;

	s->open_bytes -= c->bytes;
	c->bytes = 0;
	if (!c->nev && !c->nsw && !c->nwk)
		return 0;
	pkt = pft_packet_begin(s);
	b = pb_begin_long(&s->chunk, PF_PKT_FTRACE_EVENTS);
	pb_uint(&s->chunk, FB_CPU, c->cpu);
	tk_bytebuf_put(&s->chunk, c->ev.data, c->ev.len);
	for (uint32_t i = 0; i < c->ndesc; i++)
		pb_bytes(&s->chunk, FB_DESCRIPTOR, c->desc[i]->desc, c->desc[i]->desc_len);
	if (c->lost) {
		pb_uint(&s->chunk, FB_LOST, 1);
		s->st->lost++;
		c->lost = false;
	}
	if (c->nsw || c->nwk) {
		size_t cs = pb_begin_long(&s->chunk, FB_COMPACT);

		for (uint32_t i = 0; i < c->nintern; i++)
			pb_bytes(&s->chunk, 5, c->intern[i], strnlen(c->intern[i], 16));
		for (int i = 0; i < CS_N; i++)
			if (c->cs[i].len)
				pb_bytes(&s->chunk, cs_num[i], c->cs[i].data, c->cs[i].len);
		pb_end_long(&s->chunk, cs);
	}
	pb_end_long(&s->chunk, b);
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_ID, PFT_SEQ_FTRACE);
	r = tk_bytebuf_error(&c->ev);
	for (int i = 0; i < CS_N && !r; i++)
		r = tk_bytebuf_error(&c->cs[i]);
	cpu_reset(s, c);
	if (r)
		return r;
	return pft_packet_end(s, pkt);
}

static struct pft_cpu *cpu_get(struct pft_session *s, uint32_t cpu)
{
	struct pft_cpu *c;

	if (cpu >= MAX_CPUS) {
		tk_fail(EBADMSG, "%s: CPU %u beyond the %u this export handles", s->name, cpu,
			MAX_CPUS);
		return NULL;
	}
	if (cpu >= s->ncpus) {
		size_t n = cpu + 1 > s->ncpus * 2 ? cpu + 1 : s->ncpus * 2;
		struct pft_cpu **p = realloc(s->cpus, n * sizeof(*p));

		if (!p)
			return tk_fail_null(ENOMEM, "out of memory");
		memset(p + s->ncpus, 0, (n - s->ncpus) * sizeof(*p));
		s->cpus = p;
		s->ncpus = n;
	}
	c = s->cpus[cpu];
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return tk_fail_null(ENOMEM, "out of memory");
		c->cpu = cpu;
		tk_bytebuf_init(&c->ev, false);
		for (int i = 0; i < CS_N; i++)
			tk_bytebuf_init(&c->cs[i], false);
		c->serial = ++s->bundles;
		s->cpus[cpu] = c;
		s->st->cpus++;
	}
	return c;
}

static int flush_all(struct pft_session *s)
{
	for (size_t i = 0; i < s->ncpus; i++) {
		int r = s->cpus[i] ? bundle_flush(s, s->cpus[i]) : 0;

		if (r)
			return r;
	}
	return flush_chunk(s);
}

/*
 * Index of the comm @k in the bundle's table, adding it; -1 when the
 * table is full. The key is the comm's 16 bytes, zero after its end, as
 * two words: one multiply to hash, two compares to match.
 */
static inline int intern_key(struct pft_cpu *c, uint64_t k0, uint64_t k1)
{
	uint64_t e[2];
	uint32_t h;

	h = (uint32_t)(((k0 ^ k1 * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull) >> 56);
	for (uint32_t i = h;; i = (i + 1) & 255) {
		if (!c->hash[i]) {
			if (c->nintern == NINTERN)
				return -1;
			e[0] = k0;
			e[1] = k1;
			memcpy(c->intern[c->nintern], e, 16);
			c->hash[i] = (uint8_t)++c->nintern;
			c->fixed += 18;
			return c->nintern - 1;
		}
		memcpy(e, c->intern[c->hash[i] - 1], 16);
		if (e[0] == k0 && e[1] == k1)
			return c->hash[i] - 1;
	}
}

/* ---------------------------------------------------------- event table */

/* Scan the formats' "ID: N" lines once: id -> format index. */
static int index_formats(struct pft_session *s)
{
	const char *system;
	struct tk_text t;
	size_t n = tk_tracedata_format_count(s->td);

	for (size_t i = 0; i < n; i++) {
		const char *p, *end;
		long id;

		if (tk_tracedata_format(s->td, i, &system, &t) < 0)
			continue;
		end = t.data + t.len;
		p = memmem(t.data, t.len, "\nID: ", 5);
		if (!p || end - p < 6)
			continue;
		id = 0;
		for (p += 5; p < end && *p >= '0' && *p <= '9' && id < 65536; p++)
			id = id * 10 + (*p - '0');
		if (id <= 0 || id >= 65536)
			continue;
		if ((size_t)id >= s->nfmt_ids) {
			size_t m =
				(size_t)id + 1 > s->nfmt_ids * 2 ? (size_t)id + 1 : s->nfmt_ids * 2;
			int32_t *q = realloc(s->fmt_of_id, m * sizeof(*q));

			if (!q)
				return tk_fail(ENOMEM, "out of memory");
			for (size_t k = s->nfmt_ids; k < m; k++)
				q[k] = -1;
			s->fmt_of_id = q;
			s->nfmt_ids = m;
		}
		s->fmt_of_id[id] = (int32_t)i;
	}
	return 0;
}

static bool numeric(const struct tk_event_field *f)
{
	return !f->is_array && !f->is_dynamic &&
	       (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
}

/*
 * A pointer ("void *", "struct hrtimer *"): a kernel address is a 10-byte
 * varint (5 on 32-bit), so a self-described event carries it as fixed64
 * (fixed32): 2 bytes less per pointer, and no varint loop.
 */
static bool pointer(const struct tk_event_field *f)
{
	return numeric(f) && (f->size == 8 || f->size == 4) && f->type && strchr(f->type, '*');
}

static struct pft_fld fld_of(const struct tk_event_field *f, bool fixed)
{
	struct pft_fld d = {.kind = FK_OTHER};

	if (f && !f->is_string && numeric(f)) {
		d.off = f->offset;
		d.size = (uint8_t)f->size;
		d.kind = fixed && pointer(f) ? FK_FIXED : f->is_signed ? FK_SIGNED : FK_UNSIGNED;
		d.sh = (uint8_t)(64 - 8 * d.size);
		d.end8 = d.off + d.size - 8; /* used only when off + size >= 8 */
		d.sm = d.kind == FK_SIGNED && d.size < 8 ? 1ull << (8 * d.size - 1) : 0;
	}
	return d;
}

/*
 * Whether the records of @e can go through put_fast() (and the compact
 * ones read their numbers by fld_fast()): the records in our byte order,
 * common_pid read in place, and every numeric field of @fl (@n, with the
 * field numbers @nums, or 1..n when NULL) ending 8 bytes or more into the
 * record, so that the 8-byte load ending at its end stays inside. @e->need
 * is then the size a record needs for all of them, checked once a record.
 */
static void ev_fast(const struct pft_session *s, struct pft_ev *e, struct pft_fld *fl,
		    const struct tk_event_field *const *fields, size_t n, const uint8_t *nums,
		    uint32_t msg_num)
{
	uint32_t pid_end = s->pid_fld.off + s->pid_fld.size;

	e->fast = !s->swap && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && s->common == 1 &&
		  s->pid_fld.kind != FK_OTHER && pid_end >= 8 && msg_num < (1u << 21);
	e->need = pid_end;
	e->room = 32 + 15 * (uint32_t)n;
	e->mkey_len = (uint8_t)pb_put_varint_at(e->mkey, (uint64_t)msg_num << 3 | PB_LEN);
	for (size_t i = 0; i < n && e->fast; i++) {
		struct pft_fld *f = &fl[i];
		const struct tk_event_field *t = fields[i];
		uint32_t num = nums ? nums[i] : (uint32_t)i + 1;
		unsigned int wire = f->kind != FK_FIXED ? PB_VARINT
				    : f->size == 8	? PB_I64
							: PB_I32;

		if (num >= (1u << 11)) {
			e->fast = false;
			break;
		}
		if (f->kind == FK_OTHER) {
			/* A char[N] (a comm): its text copied in place, the room counting all N. */
			if (!t || !t->is_string || !t->is_array || t->is_dynamic || !t->size ||
			    t->size > 64)
				continue;
			f->kind = FK_CHARS;
			f->off = t->offset;
			f->size = (uint8_t)t->size;
			wire = PB_LEN;
			e->room += f->size;
		} else if (f->off + f->size < 8) {
			e->fast = false;
			break;
		}
		f->klen = (uint8_t)pb_put_varint_at(f->key, num << 3 | wire);
		if (f->off + f->size > e->need)
			e->need = f->off + f->size;
	}
}

/* The compact encoding needs these fields, numeric (the comms as strings). */
static bool compact_ok(const struct pft_ev *e, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct tk_event_field *f = tk_event_field_find(e->ev, names[i]);

		if (!f || (strstr(names[i], "comm") ? !f->is_string : !numeric(f)))
			return false;
	}
	return true;
}

static const char *const sw_fields[] = {"prev_state", "next_pid", "next_prio", "next_comm"};
static const char *const wk_fields[] = {"pid", "target_cpu", "prio", "comm"};

/*
 * The descriptor of a self-described event (Perfetto v50+): the event's
 * fields become fields 1..31 of a message of its own, written in
 * FtraceEvent under a field number of 65536 and up, and each bundle that
 * holds such events carries their GenericEventDescriptor: field_id 1,
 * event_descriptor 2 (a DescriptorProto: name 1, field 2 {name 1,
 * number 3, label 4, type 5}), group_name 3. The field names are then
 * written once per bundle instead of once per record.
 */
static int describe(struct pft_session *s, struct pft_ev *e)
{
	struct tk_bytebuf d, m;
	size_t f;

	tk_bytebuf_init(&d, false);
	tk_bytebuf_init(&m, false);
	pb_bytes(&d, 1, tk_event_name(e->ev), e->name_len);
	for (size_t i = 0; i < e->nall; i++) {
		const struct tk_event_field *fl = e->all[i];
		/*
		 * TYPE_STRING 9 for strings and the hex of arrays, FIXED64 6 /
		 * FIXED32 7 for pointers, INT64 3, UINT64 4
		 */
		unsigned int type = fl->is_string || !numeric(fl) ? 9
				    : pointer(fl)		  ? (fl->size == 8 ? 6 : 7)
				    : fl->is_signed		  ? 3
								  : 4;

		f = pb_begin(&d, 2);
		pb_bytes(&d, 1, fl->name, e->all_len[i]);
		pb_uint(&d, 3, i + 1);
		pb_uint(&d, 4, 1);
		pb_uint(&d, 5, type);
		pb_end(&d, f);
	}
	if (tk_bytebuf_error(&d) < 0) {
		tk_bytebuf_release(&d);
		return -ENOMEM;
	}
	e->field_id = s->next_field_id ? s->next_field_id : FIRST_FIELD_ID;
	s->next_field_id = e->field_id + 1;
	pb_uint(&m, 1, e->field_id);
	pb_bytes(&m, 2, d.data, d.len);
	pb_str(&m, 3, tk_event_system(e->ev));
	if (tk_bytebuf_error(&d) < 0 || tk_bytebuf_error(&m) < 0) {
		tk_bytebuf_release(&d);
		tk_bytebuf_release(&m);
		return -ENOMEM;
	}
	tk_bytebuf_release(&d);
	e->desc = tk_bytebuf_steal(&m, &e->desc_len);
	return e->desc ? 0 : -ENOMEM;
}

static struct pft_ev *ev_build(struct pft_session *s, int id)
{
	struct pft_ev *e = calloc(1, sizeof(*e));
	const struct tk_event *ev = NULL;

	if (!e)
		return tk_fail_null(ENOMEM, "out of memory");
	ev = tk_event_find(s->set, id);
	if (!ev && (size_t)id < s->nfmt_ids && s->fmt_of_id[id] >= 0) {
		const char *system;
		struct tk_text t;

		if (tk_tracedata_format(s->td, (size_t)s->fmt_of_id[id], &system, &t) == 0 &&
		    tk_event_set_add_format(s->set, system, t.data, t.len) == -ENOMEM) {
			free(e);
			return tk_fail_null(ENOMEM, "out of memory");
		}
		ev = tk_event_find(s->set, id);
	}
	e->ev = ev;
	e->kind = EV_GENERIC;
	e->room = 32;
	if (!ev)
		return e;
	for (size_t t = 0; t < sizeof(typed) / sizeof(typed[0]); t++) {
		if (strcmp(typed[t].name, tk_event_name(ev)) ||
		    strcmp(typed[t].system, tk_event_system(ev)))
			continue;
		e->kind = EV_TYPED;
		e->num = typed[t].num;
		for (int k = 0; k < TYPED_FIELDS && typed[t].f[k].name; k++) {
			const struct tk_event_field *f =
				tk_event_field_find(ev, typed[t].f[k].name);

			if (!f)
				continue;
			e->fields[e->nfields] = f;
			e->nums[e->nfields++] = typed[t].f[k].num;
		}
		if (e->num == 4 && compact_ok(e, sw_fields, 4)) {
			e->kind = EV_SWITCH;
			for (int k = 0; k < 4; k++)
				e->fields[k] = tk_event_field_find(ev, sw_fields[k]);
		} else if (e->num == 20 && compact_ok(e, wk_fields, 4)) {
			e->kind = EV_WAKING;
			for (int k = 0; k < 4; k++)
				e->fields[k] = tk_event_field_find(ev, wk_fields[k]);
			e->fields[4] = tk_event_field_find(ev, "common_flags");
			if (e->fields[4] && !numeric(e->fields[4]))
				e->fields[4] = NULL;
		}
		for (int k = 0; k < 32; k++)
			e->fld[k] = fld_of(e->fields[k], false);
		ev_fast(s, e, e->fld, e->fields,
			e->kind == EV_TYPED    ? e->nfields
			: e->kind == EV_SWITCH ? 3
					       : 5,
			e->nums, e->num);
		return e;
	}
	e->name_len = (uint32_t)strlen(tk_event_name(ev));
	e->all = calloc(tk_event_field_count(ev) + 1, sizeof(*e->all));
	e->all_len = calloc(tk_event_field_count(ev) + 1, sizeof(*e->all_len));
	e->all_fld = calloc(tk_event_field_count(ev) + 1, sizeof(*e->all_fld));
	if (!e->all || !e->all_len || !e->all_fld)
		goto nomem;
	for (size_t i = 0; i < tk_event_field_count(ev); i++) {
		const struct tk_event_field *f = tk_event_field_get(ev, i);

		if (!f->is_common) {
			e->all_len[e->nall] = (uint32_t)strlen(f->name);
			e->all_fld[e->nall] = fld_of(f, true);
			e->all[e->nall++] = f;
		}
	}
	if (e->nall < 32 && s->next_field_id <= LAST_FIELD_ID && describe(s, e) < 0)
		goto nomem;
	if (e->field_id)
		ev_fast(s, e, e->all_fld, e->all, e->nall, NULL, e->field_id);
	else
		e->room = 32 + 15 * (uint32_t)e->nall;
	return e;
nomem:
	free(e->all);
	free(e->all_len);
	free(e->all_fld);
	free(e);
	return tk_fail_null(ENOMEM, "out of memory");
}

static struct pft_ev *ev_get(struct pft_session *s, int id)
{
	if ((size_t)id >= s->nevs) {
		size_t n = (size_t)id + 1 > s->nevs * 2 ? (size_t)id + 1 : s->nevs * 2;
		struct pft_ev **p = realloc(s->evs, n * sizeof(*p));

		if (!p)
			return tk_fail_null(ENOMEM, "out of memory");
		memset(p + s->nevs, 0, (n - s->nevs) * sizeof(*p));
		s->evs = p;
		s->nevs = n;
	}
	if (!s->evs[id])
		s->evs[id] = ev_build(s, id);
	return s->evs[id];
}

/* ------------------------------------------------------------ encoding */

static uint64_t field_u64(struct pft_session *s, const struct tk_event_field *f, const void *data,
			  uint32_t size)
{
	uint64_t v = 0;

	if (f)
		tk_event_field_read(s->set, f, data, size, &v);
	return v;
}

/*
 * A numeric field as tk_event_field_read() gives it (sign-extended; 0 when
 * the record is too short), without the call.
 */
static inline uint64_t fld_u64(const struct pft_session *s, struct pft_fld f, const void *data,
			       uint32_t size)
{
	const uint8_t *p = (const uint8_t *)data + f.off;
	uint64_t v;

	if ((uint64_t)f.off + f.size > size)
		return 0;
	switch (f.size) {
	case 1:
		v = p[0];
		break;
	case 2: {
		uint16_t x;

		memcpy(&x, p, 2);
		v = s->swap ? __builtin_bswap16(x) : x;
		break;
	}
	case 4: {
		uint32_t x;

		memcpy(&x, p, 4);
		v = s->swap ? __builtin_bswap32(x) : x;
		break;
	}
	default:
		memcpy(&v, p, 8);
		return s->swap ? __builtin_bswap64(v) : v;
	}
	if (f.kind == FK_SIGNED) {
		unsigned int shift = 64 - f.size * 8u;

		v = (uint64_t)((int64_t)(v << shift) >> shift);
	}
	return v;
}

/*
 * fld_u64() for a record that holds the field 8 bytes or more from its
 * start, in our byte order (ev_fast() says when): one load and no branch.
 */
static inline uint64_t fld_fast(const struct pft_fld *f, const void *data)
{
	uint64_t x;

	memcpy(&x, (const uint8_t *)data + f->end8, 8);
	x >>= f->sh;
	return (x ^ f->sm) - f->sm;
}

/* A string field's text, cut at its NUL; "" when it does not read. */
static void field_str(struct pft_session *s, const struct tk_event_field *f, const void *data,
		      uint32_t size, const char **str, uint32_t *len)
{
	*str = "";
	*len = 0;
	if (tk_event_field_string(s->set, f, data, size, str, len) < 0) {
		/* A flexible "char buf[]" (print) runs to the end of the record. */
		if (f->is_array && !f->size && f->offset < size) {
			*str = (const char *)data + f->offset;
			*len = (uint32_t)strnlen(*str, size - f->offset);
		} else {
			*str = "";
			*len = 0;
		}
	}
}

/* A value of a field as the proto carries it: string, varint, or array of varints. */
static void put_field(struct pft_session *s, struct tk_bytebuf *b, uint32_t num,
		      const struct tk_event_field *f, const void *data, uint32_t size)
{
	if (f->is_string) {
		const char *str;
		uint32_t len;

		field_str(s, f, data, size, &str, &len);
		pb_bytes(b, num, str, len);
	} else if (numeric(f)) {
		pb_uint(b, num, field_u64(s, f, data, size));
	} else if (f->is_array && s->long_size && f->size % s->long_size == 0 &&
		   (uint64_t)f->offset + f->size <= size) {
		/* sys_enter's args: one repeated varint per long */
		for (uint32_t off = 0; off < f->size; off += s->long_size) {
			uint64_t v = 0;

			if (s->long_size == 8) {
				memcpy(&v, (const char *)data + f->offset + off, 8);
			} else {
				uint32_t w;

				memcpy(&w, (const char *)data + f->offset + off, 4);
				v = w;
			}
			pb_uint(b, num, v);
		}
	}
}

static const char hexd[] = "0123456789abcdef";

/* GenericFtraceEvent.Field for one field of any kind. */
/*
 * A field's value: strings (and the hex of anything else) as field
 * @str_num, numbers as @int_num or @uint_num by their signedness.
 */
static void put_value(struct pft_session *s, struct tk_bytebuf *b, const struct tk_event_field *f,
		      uint32_t str_num, uint32_t int_num, uint32_t uint_num, const void *data,
		      uint32_t size)
{
	if (f->is_string) {
		const char *str;
		uint32_t len;

		field_str(s, f, data, size, &str, &len);
		pb_bytes(b, str_num, str, len);
	} else if (numeric(f)) {
		uint64_t v = field_u64(s, f, data, size);

		pb_uint(b, f->is_signed ? int_num : uint_num, v);
	} else {
		/* Arrays and odd sizes: the bytes in hex, "0x" first. */
		uint32_t off = f->offset, len = f->size;
		char tmp[2 + 2 * 64];
		size_t n = 0;

		if (f->is_dynamic) {
			uint64_t loc = 0;
			struct tk_event_field w = *f;

			w.is_dynamic = false;
			w.is_array = false;
			w.size = 4;
			tk_event_field_read(s->set, &w, data, size, &loc);
			off = (uint32_t)(loc & 0xffff) + (f->is_relative ? f->offset + 4 : 0);
			len = (uint32_t)(loc >> 16);
		}
		if ((uint64_t)off + len > size)
			len = off < size ? size - off : 0;
		if (len > 64)
			len = 64;
		tmp[n++] = '0';
		tmp[n++] = 'x';
		for (uint32_t i = 0; i < len; i++) {
			uint8_t c = ((const uint8_t *)data)[off + i];

			tmp[n++] = hexd[c >> 4];
			tmp[n++] = hexd[c & 15];
		}
		pb_bytes(b, str_num, tmp, n);
	}
}

/* GenericFtraceEvent.Field: name, and the value by its kind. */
static void put_generic_field(struct pft_session *s, struct tk_bytebuf *b,
			      const struct tk_event_field *f, uint32_t name_len, const void *data,
			      uint32_t size)
{
	size_t fs = pb_begin(b, GE_FIELD);

	pb_bytes(b, GF_NAME, f->name, name_len);
	put_value(s, b, f, GF_STR, GF_INT, GF_UINT, data, size);
	pb_end(b, fs);
}

/*
 * Whether @c's bundle carries @e's descriptor, adding it; false when the
 * list is full. @e remembers the bundle it was last added to per cpu & 7,
 * so the list is searched only when CPUs share a slot.
 */
static bool bundle_describes(struct pft_cpu *c, struct pft_ev *e)
{
	uint64_t *mark = &e->in_bundle[c->cpu & 7];

	if (*mark == c->serial)
		return true;
	for (uint32_t i = 0; i < c->ndesc; i++)
		if (c->desc[i] == e) {
			*mark = c->serial;
			return true;
		}
	if (c->ndesc == NDESC)
		return false;
	c->desc[c->ndesc++] = e;
	c->fixed += e->desc_len + 4;
	*mark = c->serial;
	return true;
}

/* A comm: a char[16] read in place, as tk_event_field_string() reads it. */
static inline void comm_of(struct pft_session *s, const struct tk_event_field *f, const void *data,
			   uint32_t size, const char **str, uint32_t *len)
{
	if (f->is_array && !f->is_dynamic && f->size && (uint64_t)f->offset + f->size <= size) {
		*str = (const char *)data + f->offset;
		*len = (uint32_t)strnlen(*str, f->size);
	} else {
		field_str(s, f, data, size, str, len);
	}
}

/*
 * The high bit of each zero byte of @w (on a little-endian load): the
 * lowest one flagged is exact, as borrows only run upward.
 */
static inline uint64_t zero_bytes(uint64_t w)
{
	return (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
}

/* The bytes of a word before its first zero byte (@z = zero_bytes()), as a mask; all when none. */
static inline uint64_t before_nul(uint64_t z)
{
	return ((z & -z) >> 7) - 1;
}

/* strnlen() of a char[16] loaded as two words. */
static inline uint32_t nul_index(const uint64_t w[2])
{
	uint64_t z0 = zero_bytes(w[0]), z1 = zero_bytes(w[1]);

	if (z0)
		return (uint32_t)__builtin_ctzll(z0) / 8;
	return z1 ? 8 + (uint32_t)__builtin_ctzll(z1) / 8 : 16;
}

/*
 * The intern key of a comm field: a char[16] taken as two words straight
 * from the record and cut at its NUL (no strnlen, no copy); other layouts
 * and big-endian hosts go through comm_of().
 */
static inline __attribute__((always_inline)) int intern_comm(struct pft_session *s,
							     struct pft_cpu *c,
							     const struct tk_event_field *f,
							     const void *data, uint32_t size)
{
	uint64_t k[2] = {0, 0};

	if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && f->is_array && !f->is_dynamic &&
	    f->size == 16 && (uint64_t)f->offset + 16 <= size) {
		uint64_t z0, z1;

		/* Without a branch on where the NUL is: comms vary record by record. */
		memcpy(k, (const char *)data + f->offset, 16);
		z0 = zero_bytes(k[0]);
		z1 = zero_bytes(k[1]);
		k[0] &= before_nul(z0);
		k[1] &= before_nul(z1) & -(uint64_t)(z0 == 0);
	} else {
		const char *comm;
		uint32_t len;

		comm_of(s, f, data, size, &comm, &len);
		memcpy(k, comm, len > 16 ? 16 : len);
	}
	return intern_key(c, k[0], k[1]);
}

/*
 * Room for one more compact record in every CompactSched array: a count
 * of records they all have room for, made CS_BATCH at a time, so that a
 * record costs one check instead of one per array.
 */
#define CS_BATCH 64

static int cs_refill(struct pft_cpu *c)
{
	size_t room = SIZE_MAX;

	for (int i = 0; i < CS_N; i++) {
		struct tk_bytebuf *b = &c->cs[i];

		if (tk_bytebuf_reserve(b, 10 * CS_BATCH) < 0)
			return tk_fail(ENOMEM, "out of memory");
		if ((b->cap - b->len) / 10 < room)
			room = (b->cap - b->len) / 10;
	}
	c->cs_room = room - 1;
	return 0;
}

static inline int cs_room(struct pft_cpu *c)
{
	if (__builtin_expect(c->cs_room > 0, 1)) {
		c->cs_room--;
		return 0;
	}
	return cs_refill(c);
}

/* One value onto a CompactSched array (cs_room() made room): its bytes. */
static inline size_t cs_put(struct pft_cpu *c, int i, uint64_t v)
{
	struct tk_bytebuf *b = &c->cs[i];
	size_t n = pb_put_varint_at(b->data + b->len, v);

	b->len += n;
	return n;
}

/* Field @k of a compact event: in place when the record holds all of them. */
static inline uint64_t cs_field(const struct pft_session *s, const struct pft_ev *e, int k,
				const void *data, uint32_t size, bool fast)
{
	return fast ? fld_fast(&e->fld[k], data) : fld_u64(s, e->fld[k], data, size);
}

/*
 * A sched_switch into the bundle's CompactSched: 1 when the comm table is
 * full (the caller starts a new bundle), else 0 or a negative errno. The
 * fields are read before anything is written, so that no store into the
 * arrays makes the compiler read the event's layout again.
 */
static int put_switch(struct pft_session *s, struct pft_cpu *c, const struct pft_ev *e, uint64_t ts,
		      const void *data, uint32_t size)
{
	const bool fast = e->fast && size >= e->need;
	uint64_t state = cs_field(s, e, 0, data, size, fast);
	uint64_t pid = cs_field(s, e, 1, data, size, fast);
	uint64_t prio = cs_field(s, e, 2, data, size, fast);
	int idx = intern_comm(s, c, e->fields[3], data, size);
	size_t n;

	if (idx < 0)
		return 1;
	if (cs_room(c))
		return -ENOMEM;
	n = cs_put(c, CS_SW_TS, ts - c->last_sw);
	n += cs_put(c, CS_SW_STATE, state);
	n += cs_put(c, CS_SW_PID, pid);
	n += cs_put(c, CS_SW_PRIO, prio);
	n += cs_put(c, CS_SW_COMM, (uint64_t)idx);
	c->cs_len += n;
	c->last_sw = ts;
	c->nsw++;
	return 0;
}

/* A sched_waking, as put_switch() does. */
static int put_waking(struct pft_session *s, struct pft_cpu *c, const struct pft_ev *e, uint64_t ts,
		      const void *data, uint32_t size)
{
	const bool fast = e->fast && size >= e->need;
	uint64_t pid = cs_field(s, e, 0, data, size, fast);
	uint64_t cpu = cs_field(s, e, 1, data, size, fast);
	uint64_t prio = cs_field(s, e, 2, data, size, fast);
	uint64_t flags = e->fields[4] ? cs_field(s, e, 4, data, size, fast) : 0;
	int idx = intern_comm(s, c, e->fields[3], data, size);
	size_t n;

	if (idx < 0)
		return 1;
	if (cs_room(c))
		return -ENOMEM;
	n = cs_put(c, CS_WK_TS, ts - c->last_wk);
	n += cs_put(c, CS_WK_PID, pid);
	n += cs_put(c, CS_WK_CPU, cpu);
	n += cs_put(c, CS_WK_PRIO, prio);
	n += cs_put(c, CS_WK_COMM, (uint64_t)idx);
	n += cs_put(c, CS_WK_FLAGS, flags);
	c->cs_len += n;
	c->last_wk = ts;
	c->nwk++;
	return 0;
}

/*
 * A record's time as a varint: nanoseconds since boot take 6 bytes or more
 * from 34 s of uptime on, so the first five are written without the
 * loop's test each (the bytes are pb_put_varint_at()'s).
 */
static inline size_t put_time(uint8_t *p, uint64_t ts)
{
	if (__builtin_expect(ts >> 35 == 0, 0))
		return pb_put_varint_at(p, ts);
	p[0] = (uint8_t)(ts | 0x80);
	p[1] = (uint8_t)(ts >> 7 | 0x80);
	p[2] = (uint8_t)(ts >> 14 | 0x80);
	p[3] = (uint8_t)(ts >> 21 | 0x80);
	p[4] = (uint8_t)(ts >> 28 | 0x80);
	return 5 + pb_put_varint_at(p + 5, ts >> 35);
}

/*
 * A typed or self-described record whose numeric fields all lie inside it
 * (ev_fast()), with room made for its numbers: written through a local
 * cursor, the keys copied as worked out per event and every number read by
 * fld_fast(). The buffer's length is stored only around the other fields
 * (strings, arrays), which put_field() and put_value() write as the slow
 * path does: the bytes are the same.
 */
static int put_fast(struct pft_session *s, struct pft_cpu *c, const struct pft_ev *e, uint64_t ts,
		    const uint8_t *data, uint32_t size)
{
	struct tk_bytebuf *b = &c->ev;
	const bool typed_ev = e->kind == EV_TYPED;
	const struct pft_fld *fl = typed_ev ? e->fld : e->all_fld;
	const size_t nf = typed_ev ? e->nfields : e->nall;
	uint8_t *p = b->data + b->len;
	size_t fe, msg;

	*p++ = FB_EVENT << 3 | PB_LEN;
	*p++ = 0;
	fe = (size_t)(p - b->data);
	*p++ = FE_TIMESTAMP << 3 | PB_VARINT;
	p += put_time(p, ts);
	*p++ = FE_PID << 3 | PB_VARINT;
	p += pb_put_varint_at(p, (uint32_t)fld_fast(&s->pid_fld, data));
	memcpy(p, e->mkey, 4);
	p += e->mkey_len;
	*p++ = 0;
	msg = (size_t)(p - b->data);
	for (size_t i = 0; i < nf; i++) {
		const struct pft_fld *f = &fl[i];

		/* Numbers first: most fields are. */
		if (__builtin_expect(f->kind <= FK_SIGNED, 1)) {
			memcpy(p, f->key, 2);
			p += f->klen;
			p += pb_put_varint_at(p, fld_fast(f, data));
			continue;
		}
		if (f->kind == FK_OTHER) {
			b->len = (size_t)(p - b->data);
			if (typed_ev)
				put_field(s, b, e->nums[i], e->fields[i], data, size);
			else
				put_value(s, b, e->all[i], (uint32_t)i + 1, (uint32_t)i + 1,
					  (uint32_t)i + 1, data, size);
			if (pb_room(b, e->room))
				return tk_fail(ENOMEM, "out of memory");
			p = b->data + b->len;
			continue;
		}
		memcpy(p, f->key, 2);
		p += f->klen;
		if (f->kind == FK_CHARS) {
			/* As tk_event_field_string() reads it: up to the NUL or the end. */
			const uint8_t *q = data + f->off;
			uint32_t len;

			if (f->size == 16) {
				uint64_t w[2];

				memcpy(w, q, 16);
				memcpy(p + 1, w, 16);
				len = nul_index(w);
			} else {
				len = (uint32_t)strnlen((const char *)q, f->size);
				memcpy(p + 1, q, f->size);
			}
			*p = (uint8_t)len;
			p += 1 + len;
		} else {
			uint64_t v = fld_fast(f, data);

			memcpy(p, &v, 8); /* FK_FIXED, little-endian: ev_fast() allows no other */
			p += f->size;
		}
	}
	b->len = (size_t)(p - b->data);
	if (__builtin_expect(b->len - fe < 0x80, 1)) {
		/* Both lengths fit their one reserved byte (the message's is the shorter). */
		b->data[msg - 1] = (uint8_t)(b->len - msg);
		b->data[fe - 1] = (uint8_t)(b->len - fe);
		return 0;
	}
	pb_end(b, msg);
	pb_end(b, fe);
	return 0;
}

/* The open bundle's size: its events, arrays, comm table and descriptors. */
static inline uint64_t cpu_bytes(const struct pft_cpu *c)
{
	return c->ev.len + c->cs_len + c->fixed;
}

/* Any other record, field by field through the bounds-checked reads. */
static int put_slow(struct pft_session *s, struct pft_cpu *c, const struct pft_ev *e, int id,
		    uint64_t ts, const void *data, uint32_t size)
{
	size_t n = e->kind == EV_TYPED ? e->nfields : e->nall, fe, msg;

	fe = pb_begin_nc(&c->ev, FB_EVENT);
	pb_uint_nc(&c->ev, FE_TIMESTAMP, ts);
	pb_uint_nc(&c->ev, FE_PID,
		   (uint32_t)(s->common != 1 ? tk_event_record_pid(s->set, data, size)
			      : (uint64_t)s->pid_fld.off + s->pid_fld.size > size
				      ? -1
				      : (int)fld_u64(s, s->pid_fld, data, size)));
	if (e->kind == EV_TYPED) {
		msg = pb_begin_nc(&c->ev, e->num);
		for (uint8_t i = 0; i < e->nfields; i++) {
			if (e->fld[i].kind <= FK_SIGNED) {
				pb_uint_nc(&c->ev, e->nums[i], fld_u64(s, e->fld[i], data, size));
				continue;
			}
			put_field(s, &c->ev, e->nums[i], e->fields[i], data, size);
			if (pb_room(&c->ev, 15 * n))
				return tk_fail(ENOMEM, "out of memory");
		}
		pb_end(&c->ev, msg);
	} else if (e->field_id) {
		msg = pb_begin_nc(&c->ev, e->field_id);
		for (size_t i = 0; i < e->nall; i++) {
			struct pft_fld f = e->all_fld[i];

			if (f.kind == FK_FIXED) {
				pb_fixed_nc(&c->ev, (uint32_t)i + 1, fld_u64(s, f, data, size),
					    f.size);
			} else if (f.kind <= FK_SIGNED) {
				pb_uint_nc(&c->ev, (uint32_t)i + 1, fld_u64(s, f, data, size));
			} else {
				put_value(s, &c->ev, e->all[i], (uint32_t)i + 1, (uint32_t)i + 1,
					  (uint32_t)i + 1, data, size);
				if (pb_room(&c->ev, 15 * n))
					return tk_fail(ENOMEM, "out of memory");
			}
		}
		pb_end(&c->ev, msg);
	} else {
		msg = pb_begin(&c->ev, FE_GENERIC);
		if (e->ev) {
			pb_bytes(&c->ev, GE_NAME, tk_event_name(e->ev), e->name_len);
		} else {
			char name[24];

			pb_bytes(&c->ev, GE_NAME, name,
				 (size_t)snprintf(name, sizeof(name), "event_%d", id));
		}
		for (size_t i = 0; i < e->nall; i++)
			put_generic_field(s, &c->ev, e->all[i], e->all_len[i], data, size);
		pb_end(&c->ev, msg);
	}
	pb_end(&c->ev, fe);
	return 0;
}

int pft_ftrace_lost(struct pft_session *s, uint32_t cpu)
{
	struct pft_cpu *c = cpu_get(s, cpu);
	int r;

	if (!c)
		return -errno;
	r = bundle_flush(s, c);
	c->lost = true;
	return r;
}

/*
 * common_type and common_pid read in place, at the offsets of the first
 * format's common fields: taken once the first whole record reads the
 * same both ways (else the event set's calls stay).
 */
static void common_check(struct pft_session *s, const void *data, uint32_t size, int id)
{
	const struct tk_event *ev = tk_event_set_count(s->set) ? tk_event_set_get(s->set, 0) : NULL;
	const struct tk_event_field *t = ev ? tk_event_field_find(ev, "common_type") : NULL;
	const struct tk_event_field *p = ev ? tk_event_field_find(ev, "common_pid") : NULL;

	if (id < 0)
		return; /* too short to tell */
	s->common = 2;
	if (!t || !p || !numeric(t) || !numeric(p) || t->size > 4 || p->size > 4)
		return;
	s->type_fld = fld_of(t, false);
	s->pid_fld = fld_of(p, false);
	if ((int)fld_u64(s, s->type_fld, data, size) == id &&
	    (int)fld_u64(s, s->pid_fld, data, size) == tk_event_record_pid(s->set, data, size))
		s->common = 1;
	s->type_u16 = s->common == 1 && !s->swap && s->type_fld.size == 2 &&
		      s->type_fld.kind == FK_UNSIGNED;
}

int pft_ftrace_record(struct pft_session *s, uint32_t cpu, uint64_t ts, const void *data,
		      uint32_t size)
{
	struct pft_cpu *c = cpu < s->ncpus && s->cpus[cpu] ? s->cpus[cpu] : cpu_get(s, cpu);
	struct pft_ev *e;
	int id, r;

	if (!c)
		return -errno;
	if (s->common == 1 && s->type_u16) {
		uint16_t x;

		/* The usual layout: an unsigned short in our byte order. */
		if (s->type_fld.off + 2u > size) {
			id = -1;
		} else {
			memcpy(&x, (const uint8_t *)data + s->type_fld.off, 2);
			id = x;
		}
	} else if (s->common == 1) {
		id = (uint64_t)s->type_fld.off + s->type_fld.size > size
			     ? -1
			     : (int)fld_u64(s, s->type_fld, data, size);
	} else {
		id = tk_event_record_type(s->set, data, size);
	}
	if (!s->common)
		common_check(s, data, size, id);
	if (id < 0)
		return 0; /* shorter than its common fields: nothing to say about it */
	e = ev_get(s, id);
	if (!e)
		return -errno;
	s->st->events++;
	if (e->kind == EV_SWITCH || e->kind == EV_WAKING) {
		r = e->kind == EV_SWITCH ? put_switch(s, c, e, ts, data, size)
					 : put_waking(s, c, e, ts, data, size);
		if (r > 0) { /* the comm table is full: a new bundle */
			r = bundle_flush(s, c);
			if (!r)
				r = e->kind == EV_SWITCH ? put_switch(s, c, e, ts, data, size)
							 : put_waking(s, c, e, ts, data, size);
		}
		if (r)
			return r;
		s->st->compact++;
	} else {
		if (e->kind == EV_GENERIC && e->field_id && !bundle_describes(c, e)) {
			/* Too many kinds for one bundle: this record starts the next. */
			r = bundle_flush(s, c);
			if (r)
				return r;
			bundle_describes(c, e);
		}
		/*
		 * Room for the event's frame, time, pid and every numeric field
		 * at once: the writes below check nothing (a string or array
		 * field checks its own, and the room is made again after it).
		 */
		if (pb_room(&c->ev, e->room))
			return tk_fail(ENOMEM, "out of memory");
		r = e->fast && size >= e->need ? put_fast(s, c, e, ts, data, size)
					       : put_slow(s, c, e, id, ts, data, size);
		if (r)
			return r;
		if (e->kind != EV_TYPED)
			s->st->generic++;
		c->nev++;
	}
	{
		uint64_t now = cpu_bytes(c);

		/* What is open counts only for --split-size's check. */
		if (s->opts.split_size) {
			s->open_bytes += now - c->bytes;
			c->bytes = now;
		}
		if (now >= BUNDLE_MAX)
			return bundle_flush(s, c);
	}
	return 0;
}

/* ------------------------------------------------------------- threads */

static size_t tid_slot(int32_t tid, size_t cap)
{
	return ((uint32_t)tid * 2654435761u) & (cap - 1);
}

/* The thread @tid (adding it when @add), through a hash of twice the array's capacity. */
static struct pft_thread *thread_find(struct pft_session *s, int32_t tid, bool add)
{
	size_t hcap = s->cap_threads * 2, k;

	if (hcap) {
		for (k = tid_slot(tid, hcap); s->thread_hash[k]; k = (k + 1) & (hcap - 1))
			if (s->threads[s->thread_hash[k] - 1].tid == tid)
				return &s->threads[s->thread_hash[k] - 1];
	}
	if (!add)
		return NULL;
	if (s->nthreads == s->cap_threads) {
		size_t n = s->cap_threads ? s->cap_threads * 2 : 256;
		struct pft_thread *p = realloc(s->threads, n * sizeof(*p));
		uint32_t *h = calloc(n * 2, sizeof(*h));

		if (!p || !h) {
			if (p)
				s->threads = p;
			free(h);
			return NULL;
		}
		s->threads = p;
		s->cap_threads = n;
		free(s->thread_hash);
		s->thread_hash = h;
		hcap = n * 2;
		for (size_t i = 0; i < s->nthreads; i++) {
			for (k = tid_slot(p[i].tid, hcap); h[k]; k = (k + 1) & (hcap - 1))
				;
			h[k] = (uint32_t)i + 1;
		}
	}
	for (k = tid_slot(tid, hcap); s->thread_hash[k]; k = (k + 1) & (hcap - 1))
		;
	s->thread_hash[k] = (uint32_t)s->nthreads + 1;
	memset(&s->threads[s->nthreads], 0, sizeof(s->threads[0]));
	s->threads[s->nthreads].tid = tid;
	return &s->threads[s->nthreads++];
}

int pft_thread_set(struct pft_session *s, int32_t tid, int32_t tgid, int32_t ppid, const char *comm,
		   size_t len)
{
	struct pft_thread *t = thread_find(s, tid, true);

	if (!t)
		return tk_fail(ENOMEM, "out of memory");
	if (tgid)
		t->tgid = tgid;
	if (ppid)
		t->ppid = ppid;
	if (comm) {
		if (len > 15)
			len = 15;
		memset(t->comm, 0, sizeof(t->comm));
		memcpy(t->comm, comm, len);
	}
	s->threads_dirty = true;
	return 0;
}

static void put_thread(struct tk_bytebuf *b, const struct pft_thread *t)
{
	size_t m;

	if (t->tgid && t->tgid == t->tid) {
		m = pb_begin(b, 1);
		pb_uint(b, 1, (uint64_t)t->tid);
		if (t->ppid)
			pb_uint(b, 2, (uint64_t)t->ppid);
		if (t->comm[0]) {
			pb_str(b, 3, t->comm);
			pb_uint(b, 9, 1);
		}
		pb_end(b, m);
	}
	m = pb_begin(b, 2);
	pb_uint(b, 1, (uint64_t)t->tid);
	if (t->comm[0])
		pb_str(b, 2, t->comm);
	if (t->tgid)
		pb_uint(b, 3, (uint64_t)t->tgid);
	pb_end(b, m);
}

int pft_thread_emit(struct pft_session *s, int32_t tid, uint64_t ts)
{
	const struct pft_thread *t = thread_find(s, tid, false);
	size_t pkt, tree;

	if (!t)
		return 0;
	pkt = pft_packet_begin(s);
	if (ts)
		pb_uint(&s->chunk, PF_PKT_TIMESTAMP, ts);
	tree = pb_begin(&s->chunk, PF_PKT_PROCESS_TREE);
	put_thread(&s->chunk, t);
	pb_end(&s->chunk, tree);
	return pft_packet_end(s, pkt);
}

const struct pft_thread *pft_thread_get(struct pft_session *s, int32_t tid)
{
	return thread_find(s, tid, false);
}

/* ProcessTree: processes 1 {pid 1, ppid 2, cmdline 3, cmdline_is_comm 9}, threads 2 {tid 1, name 2,
 * tgid 3}. */
int pft_threads_emit(struct pft_session *s, uint64_t ts, bool all)
{
	size_t pkt, tree;

	if (!s->nthreads || (!all && !s->threads_dirty))
		return 0;
	pkt = pft_packet_begin(s);
	if (ts)
		pb_uint(&s->chunk, PF_PKT_TIMESTAMP, ts);
	tree = pb_begin_long(&s->chunk, PF_PKT_PROCESS_TREE);
	for (size_t i = 0; i < s->nthreads; i++)
		put_thread(&s->chunk, &s->threads[i]);
	pb_end_long(&s->chunk, tree);
	s->threads_dirty = false;
	return pft_packet_end(s, pkt);
}

/* -------------------------------------------------------------- head */

/* The builtin clock a trace clock reads, or 0 when Perfetto has none for it. */
static uint32_t builtin_clock(const char *clock)
{
	if (!clock)
		return 0;
	if (!strcmp(clock, "mono"))
		return 3;
	if (!strcmp(clock, "mono_raw"))
		return 5;
	if (!strcmp(clock, "boot"))
		return 6;
	if (!strcmp(clock, "x86-tsc"))
		return 9;
	if (!strcmp(clock, "perf"))
		return 10;
	return 0;
}

static void put_clock(struct tk_bytebuf *b, uint32_t id, uint64_t ts)
{
	size_t m = pb_begin(b, 1);

	pb_uint(b, 1, id);
	pb_uint(b, 2, ts);
	pb_end(b, m);
}

/* Up to the next space of @p (or the end), as a string field. */
static const char *put_word(struct tk_bytebuf *b, uint32_t field, const char *p)
{
	const char *e = strchr(p, ' ');
	size_t n = e ? (size_t)(e - p) : strlen(p);

	pb_bytes(b, field, p, n);
	return e ? e + 1 : p + n;
}

static int put_head(struct pft_session *s)
{
	size_t pkt, m, u;
	uint32_t id = s->clock_id ? s->clock_id : builtin_clock(s->clock);
	int r;

	/*
	 * ClockSnapshot: clocks 1 {clock_id 1, timestamp 2}, primary_trace_clock 2.
	 * The wall-clock time when the file knows it (a .dat's DATE option,
	 * perf's CLOCK_DATA), so that Perfetto can show it.
	 */
	pkt = pft_packet_begin(s);
	m = pb_begin(&s->chunk, PF_PKT_CLOCK_SNAPSHOT);
	put_clock(&s->chunk, 6, s->first_ts);
	if (id && id != 6 && id != 1)
		put_clock(&s->chunk, id, s->first_ts);
	if (s->has_realtime && (int64_t)s->first_ts + s->realtime_offset > 0)
		put_clock(&s->chunk, 1, (uint64_t)((int64_t)s->first_ts + s->realtime_offset));
	pb_uint(&s->chunk, 2, 6);
	pb_end(&s->chunk, m);
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_ID, PFT_SEQ_FTRACE);
	r = pft_packet_end(s, pkt);
	if (r)
		return r;

	/* SystemInfo: utsname 1 {sysname 1, version 2, release 3, machine 4}, num_cpus 8 */
	pkt = pft_packet_begin(s);
	m = pb_begin(&s->chunk, PF_PKT_SYSTEM_INFO);
	if (s->uname && *s->uname) {
		/* "sysname nodename release version... machine", as uname -a */
		const char *p = s->uname, *last = strrchr(p, ' ');
		const char *node, *rel, *ver;

		u = pb_begin(&s->chunk, 1);
		node = put_word(&s->chunk, 1, p);
		rel = strchr(node, ' ');
		if (rel && last && last > rel) {
			ver = put_word(&s->chunk, 3, rel + 1);
			if (last > ver)
				pb_bytes(&s->chunk, 2, ver, (size_t)(last - ver));
			pb_str(&s->chunk, 4, last + 1);
		}
		pb_end(&s->chunk, u);
		if (rel)
			pb_bytes(&s->chunk, 17, node, (size_t)(rel - node));
	} else if (s->release || s->machine || s->hostname) {
		u = pb_begin(&s->chunk, 1);
		pb_str(&s->chunk, 1, "Linux");
		if (s->version)
			pb_str(&s->chunk, 2, s->version);
		if (s->release)
			pb_str(&s->chunk, 3, s->release);
		if (s->machine)
			pb_str(&s->chunk, 4, s->machine);
		pb_end(&s->chunk, u);
		if (s->hostname)
			pb_str(&s->chunk, 17, s->hostname);
	}
	if (s->ncpus_file)
		pb_uint(&s->chunk, 8, s->ncpus_file);
	pb_end(&s->chunk, m);
	r = pft_packet_end(s, pkt);
	if (r)
		return r;
	if (s->on_piece)
		s->on_piece(s);
	return pft_threads_emit(s, 0, true);
}

int pft_session_begin(struct pft_session *s)
{
	return put_head(s);
}

int pft_session_check_split(struct pft_session *s)
{
	uint64_t pending;
	int fd, r;

	if (!s->opts.split_size)
		return 0;
	pending = s->chunk.len + s->open_bytes;
	pending += pending / 64 + 1024 + RECORD_MARGIN;
	if (s->piece_bytes + pending <= s->opts.split_size)
		return 0;
	r = flush_all(s);
	if (r)
		return r;
	fd = s->opts.next_piece(s->opts.piece_ctx, s->piece + 1);
	if (fd < 0)
		return fd;
	s->fd = fd;
	s->piece++;
	s->st->pieces++;
	s->piece_bytes = 0;
	return put_head(s);
}

/* ------------------------------------------------------------- session */

/*
 * zstd. The default is fast matching (a negative level, long matches
 * only, a small table) with Huffman-coded literals, which negative levels
 * otherwise leave raw: on bench-report's file the varints' high bytes,
 * the tags and the names are what compresses, matches add little, and
 * this takes 40% of level 1's compression time for 1.65x its size
 * (bench/README.md, stop 17). Level -70 rather than -30 since the bigger
 * bundles of stop 21 made the stream 1.8% smaller: about the size of
 * before (1.47x the zstd .dat, was 1.46x) for half the match finder's
 * time.
 * A level asked for is zstd's own.
 */
#define ZSTD_FAST_LEVEL (-70)

static int zstd_init(struct pft_session *s)
{
	int level = s->opts.level ? s->opts.level : ZSTD_FAST_LEVEL;

	if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
		return tk_fail(EINVAL, "%s: zstd has no level %d", s->name, level);
	s->zc = ZSTD_createCCtx();
	if (!s->zc)
		return tk_fail(ENOMEM, "out of memory");
	if (ZSTD_isError(ZSTD_CCtx_setParameter(s->zc, ZSTD_c_compressionLevel, level)))
		return tk_fail(EINVAL, "%s: zstd has no level %d", s->name, level);
	/*
	 * An older libzstd without the parameter writes the literals raw:
	 * larger, as valid. Matches of 7 bytes or more, looked up in a 1 KiB
	 * table: as small as -70's defaults, 10% faster (bench/README.md).
	 */
	if (!s->opts.level) {
		ZSTD_CCtx_setParameter(s->zc, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
		ZSTD_CCtx_setParameter(s->zc, ZSTD_c_minMatch, 7);
		ZSTD_CCtx_setParameter(s->zc, ZSTD_c_hashLog, 10);
	}
	return 0;
}

int pft_session_init(struct pft_session *s, int fd, const char *name,
		     const struct tk_pftrace_opts *opts, struct tk_pftrace_stats *st)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->name = name ? name : "output";
	s->st = st;
	memset(st, 0, sizeof(*st));
	st->pieces = 1;
	s->piece = 1;
	tk_bytebuf_init(&s->chunk, false);
	if (opts) {
		size_t n = opts->sz < sizeof(s->opts) ? opts->sz : sizeof(s->opts);

		memcpy(&s->opts, opts, n);
	}
	if (s->opts.split_size && (s->opts.split_size < (1u << 20) || !s->opts.next_piece))
		return tk_fail(EINVAL,
			       "%s: a split size is at least 1 MiB and needs a piece callback",
			       s->name);
	if (s->opts.compression == TK_COMPRESS_ZSTD)
		return zstd_init(s);
	if (s->opts.compression != TK_COMPRESS_NONE) {
		s->codec = tk_codec_new(s->opts.compression, s->opts.level ? s->opts.level : 1);
		if (!s->codec)
			return errno == ENOMEM
				       ? tk_fail(ENOMEM, "out of memory")
				       : tk_fail(errno, "%s: cannot compress with %s: %s", s->name,
						 tk_codec_name(s->opts.compression), tk_errmsg());
	}
	return 0;
}

int pft_session_set_tracedata(struct pft_session *s, const struct tk_tracedata *td)
{
	struct tk_text text;
	bool big;
	uint8_t lsize;
	uint32_t psize;

	s->td = td;
	tk_tracedata_layout(td, &big, &lsize, &psize);
	s->long_size = lsize == 4 ? 4 : 8;
	s->set = tk_event_set_new(s->long_size, big, psize ? psize : 4096);
	s->swap = big != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	if (!s->set)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_tracedata_header_page(td, &text) == 0 && text.len)
		tk_event_set_add_header_page(s->set, text.data, text.len);
	/* The common fields' layout (common_type's offset) comes with a first format. */
	for (size_t i = 0; i < tk_tracedata_format_count(td) && !tk_event_set_count(s->set); i++) {
		const char *system;

		if (tk_tracedata_format(td, i, &system, &text) == 0 &&
		    tk_event_set_add_format(s->set, system, text.data, text.len) == -ENOMEM)
			return tk_fail(ENOMEM, "out of memory");
	}
	return index_formats(s);
}

int pft_session_finish(struct pft_session *s)
{
	int r = pft_threads_emit(s, 0, false);

	return r ? r : flush_all(s);
}

void pft_session_release(struct pft_session *s)
{
	for (size_t i = 0; i < s->ncpus; i++) {
		struct pft_cpu *c = s->cpus[i];

		if (!c)
			continue;
		tk_bytebuf_release(&c->ev);
		for (int k = 0; k < CS_N; k++)
			tk_bytebuf_release(&c->cs[k]);
		free(c);
	}
	free(s->cpus);
	for (size_t i = 0; i < s->nevs; i++) {
		if (s->evs[i]) {
			free(s->evs[i]->all);
			free(s->evs[i]->all_len);
			free(s->evs[i]->all_fld);
			free(s->evs[i]->desc);
		}
		free(s->evs[i]);
	}
	free(s->evs);
	free(s->fmt_of_id);
	free(s->threads);
	free(s->thread_hash);
	free(s->cbuf);
	tk_bytebuf_release(&s->chunk);
	tk_codec_free(s->codec);
	ZSTD_freeCCtx(s->zc);
	tk_event_set_free(s->set);
}

/* ----------------------------------------------------------------- .dat */

#define BATCH 512

/* One CPU of one buffer: its current page's records, decoded in one pass. */
struct dstream {
	struct tk_merge_key key; /* first: the heap holds pointers to it */
	struct tk_dat_cpu_reader *rd;
	const struct tk_dat_buffer *buf;
	uint32_t cpu;
	struct tk_page_iter it;
	struct tk_page_record recs[BATCH];
	uint32_t nrecs, irec;
	bool lost;	 /* the page just opened lost events before it */
	bool scaled;	 /* TSC2NSEC: tk_dat_timestamp() per record */
	uint64_t ts_add; /* otherwise tk_dat_timestamp(0), added (it wraps alike) */
};

static int dstream_refill(struct tk_dat *dat, struct dstream *d)
{
	for (;;) {
		int n = tk_page_iter_fill(&d->it, d->recs, BATCH);
		struct tk_page_header hdr;
		const void *page;
		uint64_t off;

		if (n > 0) {
			/* The shown time: without TSC2NSEC a sum, one addend for all. */
			if (d->scaled) {
				for (int i = 0; i < n; i++)
					d->recs[i].timestamp =
						tk_dat_timestamp(dat, d->recs[i].timestamp);
			} else {
				for (int i = 0; i < n; i++)
					d->recs[i].timestamp += d->ts_add;
			}
			d->nrecs = (uint32_t)n;
			d->irec = 0;
			d->key.ts = d->recs[0].timestamp;
			return 1;
		}
		if (n < 0)
			return tk_fail_at(EBADMSG, tk_dat_get_info(dat)->path, 0,
					  "CPU %u: record runs past the page data", d->cpu);
		n = tk_dat_cpu_reader_next_page(d->rd, &page, &off);
		if (n <= 0)
			return n;
		if (tk_page_iter_init(&d->it, &d->buf->page_format, page,
				      d->buf->page_format.page_size, &hdr) < 0)
			return tk_fail_at(EBADMSG, tk_dat_get_info(dat)->path, 0,
					  "CPU %u: bad page header at %llu of its data", d->cpu,
					  (unsigned long long)off);
		if (hdr.missed_events)
			d->lost = true;
	}
}

static void put_dat_facts(struct pft_session *s, struct tk_dat *dat)
{
	const struct tk_dat_info *info = tk_dat_get_info(dat);

	s->uname = info->uname;
	s->clock = info->clock;
	/*
	 * trace-cmd record --date: the times (as report shows them, as we
	 * write them) are already shifted to the time of day.
	 */
	s->has_realtime = info->has_date;
	s->realtime_offset = 0;
	s->ncpus_file = info->cpu_count;
}

/* The number after "KEY:" on a line of a per_cpu/cpuN/stats text, or 0. */
static uint64_t stat_u64(const char *t, size_t n, const char *key, double *dbl)
{
	size_t k = strlen(key);

	for (size_t pos = 0; pos < n;) {
		size_t end = pos;

		while (end < n && t[end] != '\n' && t[end] != '\0')
			end++;
		if (end - pos > k + 1 && !memcmp(t + pos, key, k) && t[pos + k] == ':') {
			char num[32];
			size_t i = pos + k + 1, m = 0;

			while (i < end && t[i] == ' ')
				i++;
			while (i < end && m < sizeof(num) - 1)
				num[m++] = t[i++];
			num[m] = 0;
			if (dbl)
				*dbl = strtod(num, NULL);
			return strtoull(num, NULL, 10);
		}
		pos = end + 1;
	}
	return 0;
}

/*
 * FtraceStats (phase END_OF_TRACE 2, cpu_stats 2) of the top buffer's
 * CPUSTAT options, the kernel's per_cpu/cpuN/stats when the recording
 * stopped: FtraceCpuStats {cpu 1, entries 2, overrun 3, commit_overrun 4,
 * bytes_read 5, oldest_event_ts 6, now_ts 7 (seconds, doubles),
 * dropped_events 8, read_events 9}. Perfetto counts the losses from them.
 * An instance's options follow a "\nBuffer: NAME" one and are left out
 * (Perfetto's stats are per CPU).
 */
static int put_ftrace_stats(struct pft_session *s, struct tk_dat *dat)
{
	size_t pkt = 0, st = 0;
	bool top = true, any = false;

	for (size_t i = 0; i < tk_dat_option_count(dat); i++) {
		const struct tk_dat_option *o = tk_dat_option_get(dat, i);
		const char *t = o->data;
		size_t n = o->size, k;
		uint64_t cpu = 0;
		double oldest = 0, now = 0;
		uint64_t bits;
		size_t m;

		if (o->id != TK_DAT_OPTION_CPUSTAT || !t)
			continue;
		if (n > 9 && !memcmp(t, "\nBuffer: ", 9))
			top = false;
		if (!top || n < 6 || memcmp(t, "CPU: ", 5))
			continue;
		for (k = 5; k < n && t[k] >= '0' && t[k] <= '9' && cpu < 1u << 30; k++)
			cpu = cpu * 10 + (uint64_t)(t[k] - '0');
		if (!any) {
			pkt = pft_packet_begin(s);
			st = pb_begin_long(&s->chunk, PF_PKT_FTRACE_STATS);
			pb_uint(&s->chunk, 1, 2);
			any = true;
		}
		m = pb_begin(&s->chunk, 2);
		pb_uint(&s->chunk, 1, cpu);
		pb_uint(&s->chunk, 2, stat_u64(t + k, n - k, "entries", NULL));
		pb_uint(&s->chunk, 3, stat_u64(t + k, n - k, "overrun", NULL));
		pb_uint(&s->chunk, 4, stat_u64(t + k, n - k, "commit overrun", NULL));
		pb_uint(&s->chunk, 5, stat_u64(t + k, n - k, "bytes", NULL));
		stat_u64(t + k, n - k, "oldest event ts", &oldest);
		stat_u64(t + k, n - k, "now ts", &now);
		/* fixed64 fields: the doubles' bits, little-endian (the chunk's order) */
		memcpy(&bits, &oldest, 8);
		pb_key(&s->chunk, 6, PB_I64);
		tk_bytebuf_put_u64(&s->chunk, bits);
		memcpy(&bits, &now, 8);
		pb_key(&s->chunk, 7, PB_I64);
		tk_bytebuf_put_u64(&s->chunk, bits);
		pb_uint(&s->chunk, 8, stat_u64(t + k, n - k, "dropped events", NULL));
		pb_uint(&s->chunk, 9, stat_u64(t + k, n - k, "read events", NULL));
		pb_end(&s->chunk, m);
	}
	if (!any)
		return 0;
	pb_end_long(&s->chunk, st);
	pb_uint(&s->chunk, PF_PKT_SEQUENCE_ID, PFT_SEQ_FTRACE);
	return pft_packet_end(s, pkt);
}

/* The saved command lines ("PID COMM" lines) as threads. */
static int dat_threads(struct pft_session *s, const struct tk_tracedata *td)
{
	struct tk_text t;
	uint64_t i = 0;

	if (tk_tracedata_cmdlines(td, &t) || !t.len)
		return 0;
	while (i < t.len) {
		uint64_t end = i;
		long pid = 0;
		uint64_t p = i;

		while (end < t.len && t.data[end] != '\n')
			end++;
		while (p < end && t.data[p] >= '0' && t.data[p] <= '9' && pid < INT32_MAX / 10)
			pid = pid * 10 + (t.data[p++] - '0');
		if (p > i && p < end && t.data[p] == ' ' && pid > 0) {
			int r = pft_thread_set(s, (int32_t)pid, 0, 0, t.data + p + 1, end - p - 1);

			if (r)
				return r;
		}
		i = end + 1;
	}
	return 0;
}

int tk_pftrace_write_dat(struct tk_dat *dat, int fd, const char *name,
			 const struct tk_pftrace_opts *opts, struct tk_pftrace_stats *st)
{
	struct tk_pftrace_stats local;
	struct pft_session s;
	struct dstream *ds = NULL;
	struct tk_merge_key **heap = NULL;
	size_t nds = 0, nheap = 0, total = 0;
	int r;

	r = pft_session_init(&s, fd, name, opts, st ? st : &local);
	if (r)
		goto out;
	r = pft_session_set_tracedata(&s, tk_dat_get_tracedata(dat));
	if (r)
		goto out;
	put_dat_facts(&s, dat);
	r = dat_threads(&s, s.td);
	if (r)
		goto out;
	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++)
		total += tk_dat_buffer_get(dat, b)->cpu_count;
	ds = calloc(total ? total : 1, sizeof(*ds));
	heap = calloc(total ? total : 1, sizeof(*heap));
	if (!ds || !heap) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		if (buf->latency_text)
			continue;
		for (size_t c = 0; c < buf->cpu_count; c++) {
			struct dstream *d = &ds[nds];

			d->buf = buf;
			d->cpu = buf->cpus[c].cpu;
			d->scaled = tk_dat_get_info(dat)->has_tsc2nsec;
			d->ts_add = tk_dat_timestamp(dat, 0);
			d->key.order = (uint32_t)nds;
			d->rd = tk_dat_cpu_reader_new(dat, b, c);
			if (!d->rd) {
				r = -errno;
				goto out;
			}
			nds++;
			d->it.done = true;
			r = dstream_refill(dat, d);
			if (r < 0)
				goto out;
			if (r > 0) {
				heap[nheap++] = &d->key;
				tk_merge_heap_up(heap, nheap);
			}
		}
	}
	s.first_ts = nheap ? heap[0]->ts : 0;
	r = pft_session_begin(&s);
	while (!r && nheap) {
		struct dstream *d = (struct dstream *)heap[0];
		const struct tk_page_record *rec = &d->recs[d->irec++];

		r = s.opts.split_size ? pft_session_check_split(&s) : 0;
		if (!r && d->lost) {
			r = pft_ftrace_lost(&s, d->cpu);
			d->lost = false;
		}
		if (!r)
			r = pft_ftrace_record(&s, d->cpu, rec->timestamp, rec->data, rec->size);
		if (r)
			break;
		if (d->irec < d->nrecs) {
			d->key.ts = d->recs[d->irec].timestamp;
			tk_merge_heap_fix_top(heap, nheap);
			continue;
		}
		r = dstream_refill(dat, d);
		if (r < 0)
			break;
		if (r)
			tk_merge_heap_fix_top(heap, nheap);
		else
			nheap = tk_merge_heap_pop(heap, nheap);
		r = 0;
	}
	if (!r)
		r = put_ftrace_stats(&s, dat);
	if (!r)
		r = pft_session_finish(&s);
out:
	for (size_t i = 0; i < nds; i++)
		tk_dat_cpu_reader_free(ds[i].rd);
	free(ds);
	free(heap);
	pft_session_release(&s);
	return r;
}
