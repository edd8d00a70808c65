/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * feed: one pass over a .dat or a perf.data in time order, handing an
 * analysis the records it asked for with the fields it named already read.
 * Private to the library (analyses live in src/lib/analyze/); feed.c holds
 * the design notes.
 */
#ifndef TRACEKIT_ANALYZE_FEED_H
#define TRACEKIT_ANALYZE_FEED_H

#include <tracekit/common.h>

struct tk_perfdata;

/* An analysis names at most this many fields per event. */
#define TK_FEED_MAX_FIELDS 4
#define TK_FEED_COMM_LEN   16

enum tk_feed_kind {
	TK_FEED_EVENT = 0,  /* a tracepoint record of one of the wanted events */
	TK_FEED_COMM = 1,   /* a thread's name: tid, comm; val[0] the tid of its
			       sample_id_all trailer (0 when it has none) */
	TK_FEED_FORK = 2,   /* pid/tid: the child; val[0] ppid, val[1] ptid */
	TK_FEED_EXIT = 3,   /* pid/tid: the thread that ended */
	TK_FEED_SAMPLE = 4, /* TK_FEED_ALL_EVENTS, perf.data: a sample without a
			       tracepoint payload; val[0] ip, val[1] period,
			       val[2] the event's attr index; with
			       TK_FEED_PAYLOAD its PERF_SAMPLE_READ block
			       follows the callchain (read_size) */
	TK_FEED_DAMAGE = 5, /* TK_FEED_SALVAGE: a damaged region, after the records;
			       val[0] offset, val[1] bytes skipped, val[2] events
			       lost (UINT64_MAX: unknown), what: the text */
	/*
	 * With TK_FEED_ALL_EVENTS, TK_FEED_SIDEBAND and TK_FEED_PAYLOAD,
	 * perf.data only: an MMAP / MMAP2 (pid, tid; val[0] start, val[1]
	 * length, val[2] file offset) and a BUILD_ID feature entry (pid). Both
	 * carry in raw: one byte of build id size, 20 bytes of id, then the
	 * file name (raw_size - 21 bytes, no NUL). A BUILD_ID comes at time 0,
	 * before any record.
	 */
	TK_FEED_MMAP = 6,
	TK_FEED_BUILD_ID = 7,
};

/* tk_feed_rec.want of an event no want named (TK_FEED_ALL_EVENTS). */
#define TK_FEED_NOT_WANTED 0xffff

/*
 * One wanted event: "sched" and "sched_switch", and the fields to read
 * (NULL-terminated when fewer than TK_FEED_MAX_FIELDS). A field the file's
 * format lacks reads as 0 and its bit in tk_feed_stats.missing is set.
 */
struct tk_feed_want {
	const char *system;
	const char *name;
	const char *fields[TK_FEED_MAX_FIELDS];
};

/* A record as the analysis sees it; valid during the callback only. */
struct tk_feed_rec {
	uint64_t time; /* ns, the time perf / trace-cmd show */
	uint64_t val[TK_FEED_MAX_FIELDS];
	uint32_t cpu;
	int32_t pid, tid;	      /* the sample's (perf.data) or common_pid (.dat) */
	uint16_t kind;		      /* enum tk_feed_kind */
	uint16_t want;		      /* TK_FEED_EVENT: index into the wants */
	uint32_t seq;		      /* arrival order, the tie-break of equal times */
	char comm[TK_FEED_COMM_LEN];  /* TK_FEED_COMM: NUL-padded */
	const struct tk_event *event; /* TK_FEED_EVENT: its format (NULL when the
					 file has none for its id); lives until
					 tk_feed_run() returns */
	const char *what;	      /* TK_FEED_DAMAGE: during the callback only */
	const void *raw;	      /* TK_FEED_PAYLOAD, TK_FEED_EVENT: the record's
					 payload (raw_size bytes), during the callback;
					 TK_FEED_SAMPLE: its callchain (u64s), if any;
					 TK_FEED_MMAP, TK_FEED_BUILD_ID: see there */
	uint32_t raw_size;
	/*
	 * TK_FEED_SAMPLE with TK_FEED_PAYLOAD: the sample's PERF_SAMPLE_READ
	 * block, read_size bytes (u64s as the attr's read_format lays them
	 * out, tk_perf_load_u64()), at raw + raw_size; 0 when it has none.
	 */
	uint32_t read_size;
};

/* Flags of tk_feed_run(). */
enum {
	TK_FEED_SIDEBAND = 1 << 0, /* deliver COMM, FORK and EXIT as well */
	/*
	 * Every tracepoint record, wanted or not (want TK_FEED_NOT_WANTED),
	 * and perf.data's other samples as TK_FEED_SAMPLE; a perf.data
	 * without tracing data is then read too. Every format is parsed.
	 */
	TK_FEED_ALL_EVENTS = 1 << 1,
	/*
	 * Read a damaged file as far as it goes (the readers' salvage modes)
	 * and deliver each damaged region as TK_FEED_DAMAGE after the last
	 * record; without it the first damage is the run's error.
	 */
	TK_FEED_SALVAGE = 1 << 2,
	/*
	 * Hand each tracepoint record's payload to the analysis (raw,
	 * raw_size), for reading fields no want named. perf.data's records
	 * wait for their round in the queue: their payloads are copied there.
	 */
	TK_FEED_PAYLOAD = 1 << 3,
};

struct tk_feed_stats {
	uint64_t nr_records;	 /* records read (perf: every kind) */
	uint64_t nr_lost;	 /* events the recorder lost (perf LOST records) */
	uint64_t nr_lost_chunks; /* LOST records */
	uint32_t present;	 /* bit i: want i exists in the file */
	uint32_t missing;	 /* bit i: want i lacks one of its fields */
	bool perfdata;		 /* the input was a perf.data */
	uint32_t nr_cpus_online; /* perf.data NRCPUS online, .dat CPU count; 0 unknown */
	char arch[32];		 /* perf.data ARCH, .dat UNAME's machine; "" unknown */
	/* The recording machine's name (.dat UNAME, perf.data HEADER_HOSTNAME),
	   "" when absent; set before the first record is delivered. */
	char host[65];
	/* The file's event formats (tk_event_field_read() of a payload), set
	   before the first record; valid until tk_feed_run() returns. */
	const struct tk_event_set *set;
	/* A perf.data's handle (its events' attrs and names, the ids of
	   PERF_SAMPLE_READ values), NULL for a .dat; set before the first
	   record, valid until tk_feed_run() returns. */
	const struct tk_perfdata *pd;
	/* Both CPUs walking a perf.data (feed.c, "Both CPUs walk"): chunks whose
	   helper tuples were used, and chunks it did whose guessed start was
	   wrong (a payload holding a FINISHED_ROUND's bytes), walked again. */
	uint64_t nr_split_used, nr_split_wrong;
};

typedef int (*tk_feed_fn)(void *ctx, const struct tk_feed_rec *rec);

/*
 * tk_feed_run() - read @path (.dat or perf.data) and call @fn for every
 * wanted record, oldest first
 * @wants, @nwants: the events (at most 32)
 * @fn: a non-zero return stops the pass and is returned
 * Return: 0, @fn's value, or a negative errno with tk_errmsg() set.
 */
int tk_feed_run(const char *path, const struct tk_feed_want *wants, size_t nwants,
		unsigned int flags, tk_feed_fn fn, void *ctx, struct tk_feed_stats *stats);

/*
 * tk_feed_event_set() - the event set of @td's formats of @wants only, for
 * an analysis that reads tracepoint payloads itself (flamegraph.c's
 * off-CPU pass, whose samples come with callchains).
 * Return: the set (tk_event_set_free()), or NULL with errno ENOMEM.
 */
struct tk_tracedata;
struct tk_event_set *tk_feed_event_set(const struct tk_tracedata *td,
				       const struct tk_feed_want *wants, size_t nwants);

#endif
