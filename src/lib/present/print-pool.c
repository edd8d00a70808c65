// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * print-pool: the printer threads both reports share (print-pool.h).
 *
 * Jobs are numbered in the order the merge fills them; job k sits in slot
 * k % n of the ring of internal/handoff.h, which keeps the slots' states,
 * the queue of logged jobs and the texts, and writes the texts to the
 * output in job order. This file adds the threads around it:
 *
 *   - a worker allocates its memory on its own thread (its text buffers,
 *     its kallsyms memo, the engine's state), so the pages are first
 *     touched on the core that uses them, while the merge already prints
 *     inline; the ring logs no job before some worker is ready, so a
 *     worker that runs out of memory only costs speed;
 *   - each printer, the merge included, has its own memo of symbol
 *     lookups, which the engine hands to tk_event_run_shared();
 *   - the merge prints a job inline when every ready worker has `depth`
 *     logged jobs waiting, so it never idles while they are behind;
 *   - an engine's job_end() says whether a job holds anything: an empty
 *     one goes on (or, at the end, is dropped) rather than taking a slot;
 *   - workers that get no CPU of their own are retired: a worker that
 *     takes turns with the merge on one CPU (a busy machine, or a session
 *     whose autogroup gets one CPU's share) makes the run cost 25-35% more
 *     CPU than one thread for no gain, so when the process gets less than
 *     1.2 CPUs' worth of time in POOL_STRIKES periods of ~3 ms in a row
 *     after the first (two threads on two free CPUs run at 1.4-1.9), the
 *     merge prints every later job itself; what the workers hold or have
 *     queued still goes out in order (the ring's take-back). The workers' start
 *     is cheap (~0.1 ms), so the default starts them and lets this decide
 *     (the engine sets may_retire; -j N keeps the N threads asked for).
 *
 * Out of memory or threads never fails a run: the pool is not made, or
 * runs with the workers that did start, and the merge prints the rest.
 */
#include "print-pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *worker_main(void *arg)
{
	struct tk_print_worker *w = arg;
	struct tk_print_pool *p = w->pool;
	size_t slot;

	w->memo = tk_line_calloc(TK_KSYM_MEMO, sizeof(*w->memo));
	w->texts = tk_text_slots_new(p->q.n, p->text_cap);
	if (!w->memo || !w->texts)
		return NULL;
	w->state = p->ops->worker_new(p->engine, w);
	if (!w->state)
		return NULL;
	tk_jobs_ready(&p->q);
	while (tk_jobs_take(&p->q, w->texts, &slot))
		tk_jobs_done(&p->q, slot,
			     p->ops->replay(p->engine, w, slot, &p->q.text[slot]->out));
	return NULL;
}

struct tk_print_pool *tk_print_pool_new(const struct tk_print_ops *ops, void *engine,
					unsigned int workers, size_t slots, size_t depth,
					size_t text_cap, struct tk_outbuf *out)
{
	struct tk_print_pool *p;
	bool ok;

	if (!workers)
		return NULL;
	if (workers > TK_PRINT_POOL_MAX_WORKERS)
		workers = TK_PRINT_POOL_MAX_WORKERS;
	p = tk_line_calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ops = ops;
	p->engine = engine;
	p->out = out;
	p->depth = depth;
	p->text_cap = text_cap;
	p->nworkers = workers;
	pthread_mutex_init(&p->slow_lock, NULL);
	ok = !tk_jobs_init(&p->q, slots, text_cap);
	p->workers = tk_line_calloc(workers, sizeof(*p->workers));
	p->main_memo = tk_line_calloc(TK_KSYM_MEMO, sizeof(*p->main_memo));
	ok = ok && p->workers && p->main_memo && !tk_outbuf_init(&p->scratch, -1, 4096);
	if (!ok) {
		tk_print_pool_free(p);
		return NULL;
	}
	return p;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Whether the workers are to be retired (see the notes above): once a
 * POOL_PERIOD has passed, the CPU time the process got in it against the
 * wall time; POOL_STRIKES periods in a row under 1.2 CPUs' worth
 * (POOL_SHARE_MIN_5THS fifths) retire them for the rest of the run. The
 * first period is not judged: a worker's first pages and caches fault in
 * then (on a VM where a fault costs 11 us, for milliseconds), while the
 * merge prints alone. The process clock is a system call (~0.3 us), read
 * once a period; the wall clock is the vDSO's, read once a job.
 */
#define POOL_PERIOD	    (3u * 1000 * 1000)
#define POOL_STRIKES	    2u
#define POOL_SHARE_MIN_5THS 6u
static bool pool_retire(struct tk_print_pool *p)
{
	uint64_t wall, cpu;

	if (!p->may_retire)
		return false;
	wall = clock_ns(CLOCK_MONOTONIC);
	if (p->retired || wall - p->period_wall < POOL_PERIOD)
		return p->retired;
	cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (p->periods++ >= 2 &&
	    (cpu - p->period_cpu) * 5 < (wall - p->period_wall) * POOL_SHARE_MIN_5THS)
		p->strikes++;
	else
		p->strikes = 0;
	p->retired = p->strikes >= POOL_STRIKES;
	p->period_wall = wall;
	p->period_cpu = cpu;
	return p->retired;
}

/* Start job number q.filled: inline when @force or the workers have enough waiting. */
static void pool_begin(struct tk_print_pool *p, bool force)
{
	force = pool_retire(p) || force;
	p->cur_slot = tk_jobs_start(&p->q, p->out, p->depth, force, &p->cur_inline);
	p->ops->job_begin(p->engine, p->cur_slot, p->cur_inline, tk_print_pool_merge_out(p));
}

size_t tk_print_pool_start(struct tk_print_pool *p)
{
	for (size_t i = 0; i < p->nworkers; i++) {
		struct tk_print_worker *w = &p->workers[i];

		w->pool = p;
		w->started = pthread_create(&w->thread, NULL, worker_main, w) == 0;
		if (w->started)
			p->nstarted++;
	}
	if (p->nstarted)
		pool_begin(p, false);
	return p->nstarted;
}

void tk_print_pool_dispatch(struct tk_print_pool *p, bool force, bool last)
{
	size_t slot = p->cur_slot;

	if (!p->ops->job_end(p->engine, slot, tk_print_pool_merge_out(p))) {
		if (last) {
			tk_jobs_drop(&p->q, slot);
		} else if (force && !p->cur_inline) {
			/* Nothing logged yet: the same job goes on, printed by the merge. */
			tk_jobs_make_inline(&p->q, slot);
			p->cur_inline = true;
			p->ops->job_begin(p->engine, slot, true, tk_print_pool_merge_out(p));
		}
		return;
	}
	tk_jobs_hand(&p->q, slot, p->cur_inline, p->out);
	if (!last)
		pool_begin(p, force);
}

void tk_print_pool_finish(struct tk_print_pool *p)
{
	tk_print_pool_dispatch(p, false, true);
	tk_jobs_finish(&p->q, p->out);
	for (size_t i = 0; i < p->nworkers; i++) {
		if (p->workers[i].started)
			pthread_join(p->workers[i].thread, NULL);
	}
}

void tk_print_pool_free(struct tk_print_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; p->workers && i < p->nworkers; i++) {
		struct tk_print_worker *w = &p->workers[i];

		if (w->state)
			p->ops->worker_free(p->engine, w->state);
		free(w->memo);
		tk_text_slots_free(w->texts, p->q.n);
	}
	tk_outbuf_release(&p->scratch);
	free(p->workers);
	free(p->main_memo);
	tk_jobs_destroy(&p->q);
	pthread_mutex_destroy(&p->slow_lock);
	free(p);
}
