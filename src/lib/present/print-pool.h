/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * print-pool: the printer threads of both reports (report.c for .dat,
 * perfdata-report.c for perf.data). Internal to the library.
 *
 * One thread, the merge, reads and orders the records and decides each
 * line; the text is printed in jobs, either by the merge itself as it goes
 * (inline) or by workers from a log the merge writes. The pool owns what
 * both reports do alike: the workers and their start-up on their own
 * cores, the ring of job slots (internal/handoff.h) that hands logs over
 * and writes the texts out in job order, the choice between inline and
 * logged jobs, the starvation check, each printer's kallsyms memo, the
 * lock around libtraceevent, and the teardown. An engine supplies only
 * what differs, through struct tk_print_ops: what a job's log holds (its
 * own arrays, indexed by slot), and how a worker replays a log into text.
 *
 * The calls on the merge's side take no lock but the ring's, once or
 * twice a job; nothing here runs per record.
 */
#ifndef TRACEKIT_PRESENT_PRINT_POOL_H
#define TRACEKIT_PRESENT_PRINT_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracekit/event.h>

#include "event-internal.h"
#include "internal/handoff.h"

struct tk_print_pool;

/* One worker thread. Its fields are the pool's; @state is the engine's. */
struct tk_print_worker {
	struct tk_print_pool *pool;
	void *state;		    /* from ops->worker_new(), on this worker's thread */
	struct tk_ksym_memo *memo;  /* this printer's symbol lookups (TK_KSYM_MEMO) */
	struct tk_text_slot *texts; /* one per job slot: the texts it prints into */
	pthread_t thread;
	bool started;
} __attribute__((aligned(TK_LINE)));

/* What an engine does differently; @engine is the pointer given to tk_print_pool_new(). */
struct tk_print_ops {
	/*
	 * Merge: job @slot starts. The merge prints into @merge_out from now on:
	 * the job's text when @printed_inline, else a scratch buffer whose text
	 * is dropped (the engine logs the job instead).
	 */
	void (*job_begin)(void *engine, size_t slot, bool printed_inline,
			  struct tk_outbuf *merge_out);
	/*
	 * Merge: the job in @slot is complete, or the run ends; @merge_out as
	 * job_begin() gave it. Return: whether the job holds anything.
	 */
	bool (*job_end)(void *engine, size_t slot, struct tk_outbuf *merge_out);
	/*
	 * Worker @w, on its own thread before it takes a job: its state (memory
	 * first touched on its core); w->memo is set. NULL when out of memory:
	 * this worker takes no job, the others and the merge print them.
	 */
	void *(*worker_new)(void *engine, struct tk_print_worker *w);
	/*
	 * Worker: print the job logged in @slot into @text. Return: 0 or a
	 * negative errno with its message in tk_errmsg() (the run fails with it).
	 */
	int (*replay)(void *engine, struct tk_print_worker *w, size_t slot, struct tk_outbuf *text);
	/* Free what worker_new() returned, once the thread has ended. */
	void (*worker_free)(void *engine, void *state);
};

struct tk_print_pool {
	struct tk_jobs q; /* first: its lock and counters have lines of their own */
	const struct tk_print_ops *ops;
	void *engine;
	struct tk_outbuf *out; /* where the texts go, in job order */
	size_t depth;	       /* logged jobs waiting per worker before the merge prints inline */
	size_t text_cap;       /* each text's first size */
	size_t cur_slot;       /* the job being filled */
	bool cur_inline;       /* ... is printed by the merge as it goes */
	struct tk_outbuf scratch;
	struct tk_ksym_memo *main_memo; /* the merge's memo of symbol lookups */
	pthread_mutex_t slow_lock;	/* serialises libtraceevent among the printers */
	struct tk_print_worker *workers;
	size_t nworkers, nstarted;
	/* The merge's look at the CPU the run gets (pool_begin()): ns at the period's start. */
	uint64_t period_wall, period_cpu;
	unsigned int periods, strikes;
	bool may_retire; /* the engine's: the count was the default's, not -j N (asked for) */
	bool retired;	 /* the workers got no CPU of their own: the merge prints every job */
} __attribute__((aligned(TK_LINE)));

#define TK_PRINT_POOL_MAX_WORKERS 15

/*
 * A pool of @workers threads (at most TK_PRINT_POOL_MAX_WORKERS), not
 * started: the ring has @slots job slots (pool->q.n), for which the engine
 * now makes its logs; texts start at @text_cap bytes and go out to @out.
 * The merge prints a job inline when every worker has @depth logged jobs
 * waiting. Return: the pool, or NULL when out of memory.
 */
struct tk_print_pool *tk_print_pool_new(const struct tk_print_ops *ops, void *engine,
					unsigned int workers, size_t slots, size_t depth,
					size_t text_cap, struct tk_outbuf *out);
/*
 * Start the workers and the first job (ops->job_begin()). Return: the
 * number of workers started; with none, the caller frees the pool and
 * prints alone.
 */
size_t tk_print_pool_start(struct tk_print_pool *p);

/* Merge: where it prints the job being filled (see ops->job_begin()). */
static inline struct tk_outbuf *tk_print_pool_merge_out(struct tk_print_pool *p)
{
	return p->cur_inline ? &p->q.text[p->cur_slot]->out : &p->scratch;
}

/*
 * Merge: end the job being filled (ops->job_end()) and hand it over, then
 * (unless @last) start the next, inline when @force. A job that holds
 * nothing goes on instead, inline from now on when @force; when @last it
 * is dropped.
 */
void tk_print_pool_dispatch(struct tk_print_pool *p, bool force, bool last);

/*
 * Merge, while it prints a job inline: whether the workers are about to
 * idle (see tk_jobs_starving()); then the job is best dispatched short.
 */
static inline bool tk_print_pool_starving(const struct tk_print_pool *p)
{
	return !p->retired && tk_jobs_starving(&p->q);
}

/* Merge: end the last job, write every text out in order and join the workers. */
void tk_print_pool_finish(struct tk_print_pool *p);

/* Free the pool (finished, or never started); NULL is accepted. */
void tk_print_pool_free(struct tk_print_pool *p);

#endif
