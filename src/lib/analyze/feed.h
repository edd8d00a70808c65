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

/* An analysis names at most this many fields per event. */
#define TK_FEED_MAX_FIELDS 4
#define TK_FEED_COMM_LEN   16

enum tk_feed_kind {
	TK_FEED_EVENT = 0, /* a tracepoint record of one of the wanted events */
	TK_FEED_COMM = 1,  /* a thread's name: tid, comm; val[0] the tid of its
			      sample_id_all trailer (0 when it has none) */
	TK_FEED_FORK = 2,  /* pid/tid: the child; val[0] ppid, val[1] ptid */
	TK_FEED_EXIT = 3,  /* pid/tid: the thread that ended */
};

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
	int32_t pid, tid;	     /* the sample's (perf.data) or common_pid (.dat) */
	uint16_t kind;		     /* enum tk_feed_kind */
	uint16_t want;		     /* TK_FEED_EVENT: index into the wants */
	uint32_t seq;		     /* arrival order, the tie-break of equal times */
	char comm[TK_FEED_COMM_LEN]; /* TK_FEED_COMM: NUL-padded */
};

/* Flags of tk_feed_run(). */
enum {
	TK_FEED_SIDEBAND = 1 << 0, /* deliver COMM, FORK and EXIT as well */
};

struct tk_feed_stats {
	uint64_t nr_records;	 /* records read (perf: every kind) */
	uint64_t nr_lost;	 /* events the recorder lost (perf LOST records) */
	uint64_t nr_lost_chunks; /* LOST records */
	uint32_t present;	 /* bit i: want i exists in the file */
	uint32_t missing;	 /* bit i: want i lacks one of its fields */
	bool perfdata;		 /* the input was a perf.data */
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
