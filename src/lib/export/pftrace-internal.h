/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * pftrace-internal: the writer session both inputs share (pftrace.c holds
 * the design notes; pftrace-perf.c reads perf.data into it).
 */
#ifndef TRACEKIT_EXPORT_PFTRACE_INTERNAL_H
#define TRACEKIT_EXPORT_PFTRACE_INTERNAL_H

#include <tracekit/event.h>
#include <tracekit/pftrace.h>

#include "internal/bytebuf.h"

struct tk_tracedata;
struct pft_cpu;
struct pft_ev;

/* TracePacket and friends: the field numbers of Perfetto's protos we write. */
enum {
	PF_TRACE_PACKET = 1,
	PF_PKT_FTRACE_EVENTS = 1,
	PF_PKT_FTRACE_STATS = 34,
	PF_PKT_PROCESS_TREE = 2,
	PF_PKT_CLOCK_SNAPSHOT = 6,
	PF_PKT_TIMESTAMP = 8,
	PF_PKT_SEQUENCE_ID = 10,
	PF_PKT_INTERNED_DATA = 12,
	PF_PKT_SEQUENCE_FLAGS = 13,
	PF_PKT_SYSTEM_INFO = 45,
	PF_PKT_COMPRESSED = 50,
	PF_PKT_PERF_SAMPLE = 66,
	PF_PKT_ZSTD_COMPRESSED = 133,
	PF_SEQ_CLEARED = 1, /* SequenceFlags */
	PF_SEQ_NEEDS = 2,
};

/* The packet sequences: ftrace bundles, perf samples with their interned data. */
enum { PFT_SEQ_FTRACE = 1, PFT_SEQ_PERF = 2 };

/* One known thread, for the ProcessTree packets. */
struct pft_thread {
	int32_t tid, tgid, ppid; /* tgid, ppid: 0 when unknown */
	char comm[16];
};

/*
 * How a record's field is read, worked out once per event: numbers
 * straight from the payload (the hot path: a call into the event set per
 * field was a fifth of the export), char[N] strings copied in place when
 * the record holds them (FK_CHARS, put_fast() only), the rest through
 * put_value().
 */
enum fld_kind { FK_UNSIGNED, FK_SIGNED, FK_FIXED, FK_OTHER, FK_CHARS };

struct pft_fld {
	uint32_t off;
	uint8_t size;
	uint8_t kind;
	/*
	 * The in-place read of a record that holds every such field
	 * (fld_fast()): the 8 bytes ending at the field's end, shifted down
	 * by @sh and sign-extended by @sm (the sign bit of a signed field
	 * under 8 bytes, else 0); @key: the field's key bytes, @klen of them.
	 */
	uint8_t sh, klen;
	uint8_t key[2];
	uint32_t end8; /* off + size - 8 */
	uint64_t sm;
};

struct pft_session {
	const char *name; /* output name, for messages */
	int fd;
	struct tk_pftrace_opts opts;
	struct tk_pftrace_stats *st;
	struct tk_codec *codec;	 /* zlib */
	struct ZSTD_CCtx_s *zc;	 /* zstd: our own context, for the fast default */
	struct tk_bytebuf chunk; /* framed TracePackets not yet written */
	uint8_t *cbuf;		 /* compressed chunk */
	size_t cbuf_cap;
	uint64_t piece_bytes; /* written to the current piece */
	uint64_t open_bytes;  /* in open bundles */
	unsigned int piece;
	bool own_fd; /* fd came from next_piece: closed by the caller, not us */

	/* ftrace events */
	struct tk_event_set *set;
	const struct tk_tracedata *td;
	struct pft_ev **evs; /* by event id, lazily */
	size_t nevs;
	int32_t *fmt_of_id; /* event id -> tracedata format index, -1 */
	size_t nfmt_ids;
	uint8_t long_size;
	uint32_t next_field_id; /* of the self-described events, from 65536 */
	uint64_t bundles;	/* bundles opened: each one's serial */
	bool swap;		/* the records' byte order is not ours */
	uint8_t common;		/* common_check(): 0 not yet, 1 read in place, 2 by calls */
	bool type_u16;		/* common_type: an unsigned short in our byte order */
	struct pft_fld type_fld, pid_fld;
	struct pft_cpu **cpus; /* by CPU id */
	size_t ncpus;

	/* threads */
	struct pft_thread *threads;
	size_t nthreads, cap_threads;
	uint32_t *thread_hash; /* open addressing: index + 1 into threads[], 2 x cap_threads */
	bool threads_dirty;    /* names changed since the last ProcessTree */

	/* the file's facts, for every piece's head */
	const char *uname;
	const char *hostname, *release, *version, *machine; /* perf.data's */
	const char *clock;				    /* trace clock name, or NULL */
	uint32_t clock_id; /* Perfetto's builtin id of the trace clock, 0: from @clock */
	bool has_realtime; /* wall-clock time = trace time + realtime_offset */
	int64_t realtime_offset;
	uint64_t first_ts;
	uint32_t ncpus_file;

	/* perf.data's piece head: clear the interned state (pftrace-perf.c) */
	void (*on_piece)(struct pft_session *s);
	void *perf;
};

int pft_session_init(struct pft_session *s, int fd, const char *name,
		     const struct tk_pftrace_opts *opts, struct tk_pftrace_stats *st);
/* Flush every bundle and the chunk; 0 or a negative errno. */
int pft_session_finish(struct pft_session *s);
void pft_session_release(struct pft_session *s);

/* Set up event decoding from a tracing metadata model (NULL: no ftrace events). */
int pft_session_set_tracedata(struct pft_session *s, const struct tk_tracedata *td);

/* The piece head (clocks, system info, threads); called once the facts are known. */
int pft_session_begin(struct pft_session *s);

/* Before a record of time @ts: start a new piece when the current one is full. */
int pft_session_check_split(struct pft_session *s);

/* One ftrace record (a tracepoint payload) of @cpu at @ts. */
int pft_ftrace_record(struct pft_session *s, uint32_t cpu, uint64_t ts, const void *data,
		      uint32_t size);
/* The next record of @cpu follows lost events: close its bundle, flag the next. */
int pft_ftrace_lost(struct pft_session *s, uint32_t cpu);

/* Threads */
int pft_thread_set(struct pft_session *s, int32_t tid, int32_t tgid, int32_t ppid, const char *comm,
		   size_t len);
/* A ProcessTree packet of one thread, at @ts (0: none). */
int pft_thread_emit(struct pft_session *s, int32_t tid, uint64_t ts);
const struct pft_thread *pft_thread_get(struct pft_session *s, int32_t tid);
/* A ProcessTree packet of the threads changed since the last, at @ts (0: none). */
int pft_threads_emit(struct pft_session *s, uint64_t ts, bool all);

/* A framed TracePacket: begin, put fields into s->chunk, end. */
size_t pft_packet_begin(struct pft_session *s);
int pft_packet_end(struct pft_session *s, size_t start);

#endif
