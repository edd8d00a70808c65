// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * The job ring of the report threads (handoff.h): what report.c (.dat) and
 * perfdata-report.c (perf.data) share of handing jobs to workers and
 * writing their texts out in order.
 */
#include "handoff.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "error.h"

/* The first number in file @path (the second into *@second), or -1. */
static long long read_number(const char *path, long long *second)
{
	char buf[64];
	long long a = -1, b = -1;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%lld %lld", &a, &b) < 1)
		return -1;
	if (second)
		*second = b;
	return a;
}

/*
 * The CPUs a cgroup quota grants (a container's --cpus), rounded up, or 0
 * without one: cgroup v2's cpu.max ("max 100000" or "QUOTA PERIOD"), else
 * v1's cfs_quota_us (-1: none) over cfs_period_us, where a container sees
 * its own cgroup at the root of the hierarchy.
 */
static unsigned int quota_cpus(void)
{
	long long quota, period = -1;

	quota = read_number("/sys/fs/cgroup/cpu.max", &period);
	if (quota < 0) {
		quota = read_number("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", NULL);
		period = quota > 0 ? read_number("/sys/fs/cgroup/cpu/cpu.cfs_period_us", NULL) : -1;
	}
	if (quota <= 0 || period <= 0)
		return 0;
	return (unsigned int)((quota + period - 1) / period);
}

unsigned int tk_cores_allowed(unsigned int want)
{
	unsigned int cpus = 1, quota;
	cpu_set_t set;

	if (want < 2)
		return want ? want : 1;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1)
		cpus = (unsigned int)CPU_COUNT(&set);
	quota = quota_cpus();
	if (quota && quota < cpus)
		cpus = quota;
	return want < cpus ? want : cpus;
}

enum { JOB_FREE, JOB_FILLING, JOB_READY, JOB_BUSY, JOB_DONE };

int tk_jobs_init(struct tk_jobs *q, size_t n, size_t text_cap)
{
	memset(q, 0, sizeof(*q));
	q->n = n;
	q->state = calloc(n, sizeof(*q->state));
	q->text = calloc(n, sizeof(*q->text));
	q->queue = calloc(n, sizeof(*q->queue));
	q->mine = tk_text_slots_new(n, text_cap);
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->done, NULL);
	return q->state && q->text && q->queue && q->mine ? 0 : -ENOMEM;
}

void tk_jobs_destroy(struct tk_jobs *q)
{
	tk_text_slots_free(q->mine, q->n);
	free(q->state);
	free(q->text);
	free(q->queue);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->done);
	pthread_mutex_destroy(&q->lock);
}

/* Write @n bytes to @o's descriptor after what it holds. */
static void write_through(struct tk_outbuf *o, const char *p, size_t n)
{
	if (tk_outbuf_flush(o))
		return;
	while (n && !o->error) {
		ssize_t k = write(o->fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			o->error = -errno;
			tk_fail(errno, "cannot write output: %s", strerror(errno));
			break;
		}
		p += k;
		n -= (size_t)k;
	}
}

/* Job @slot's text is complete (@err: its printer's error). q->lock held. */
static void job_finish(struct tk_jobs *q, size_t slot, int err)
{
	if (err && !q->text[slot]->out.error)
		q->text[slot]->out.error = err;
	if (q->text[slot]->out.error && !q->error[0])
		snprintf(q->error, sizeof(q->error), "%s", tk_errmsg());
	q->state[slot] = JOB_DONE;
}

/*
 * The merge would wait for the job next in order, which a worker prints
 * or has not taken yet: it takes the oldest logged job back and prints it
 * itself when the ring lets it (q->take_back). A worker that finds no CPU
 * (a busy machine) then holds up at most the job it has started, never the
 * ones queued behind it, and on a quiet one the merge prints rather than
 * sleeps and wakes again. Called and returns with q->lock held. Return:
 * whether it printed a job.
 */
static bool take_back(struct tk_jobs *q)
{
	size_t slot;
	int err;

	if (!q->take_back || q->head == q->tail)
		return false;
	slot = q->queue[q->head % q->n] % q->n;
	__atomic_store_n(&q->head, q->head + 1, __ATOMIC_RELAXED);
	q->state[slot] = JOB_BUSY;
	q->text[slot] = tk_text_lend(q->mine, q->n);
	pthread_mutex_unlock(&q->lock);
	err = q->take_back(q->take_back_arg, slot, &q->text[slot]->out);
	pthread_mutex_lock(&q->lock);
	job_finish(q, slot, err);
	return true;
}

/*
 * Write the done jobs that are next in order to @out; sleep while fewer
 * than @until are written. Called and returns with q->lock held.
 */
static void write_done(struct tk_jobs *q, struct tk_outbuf *out, uint64_t until)
{
	while (q->written < q->filled) {
		size_t slot = q->written % q->n;
		struct tk_text_slot *t = q->text[slot];

		if (q->state[slot] != JOB_DONE) {
			if (q->written >= until)
				return;
			if (!take_back(q))
				pthread_cond_wait(&q->done, &q->lock);
			continue;
		}
		pthread_mutex_unlock(&q->lock);
		if (t->out.error && !out->error) {
			out->error = t->out.error;
			if (q->error[0])
				tk_fail(-t->out.error, "%s", q->error);
		}
		write_through(out, t->out.buf, t->out.len);
		pthread_mutex_lock(&q->lock);
		t->busy = false;
		q->text[slot] = NULL;
		q->state[slot] = JOB_FREE;
		q->written++;
	}
}

size_t tk_jobs_start(struct tk_jobs *q, struct tk_outbuf *out, size_t depth, bool force,
		     bool *printed_inline)
{
	size_t slot;

	pthread_mutex_lock(&q->lock);
	if (q->filled - q->written >= q->n)
		write_done(q, out, q->filled - q->n + 1);
	slot = q->filled % q->n;
	q->state[slot] = JOB_FILLING;
	*printed_inline = force || q->tail - q->head >= depth * q->ready;
	q->text[slot] = *printed_inline ? tk_text_lend(q->mine, q->n) : NULL;
	pthread_mutex_unlock(&q->lock);
	return slot;
}

void tk_jobs_make_inline(struct tk_jobs *q, size_t slot)
{
	pthread_mutex_lock(&q->lock);
	q->text[slot] = tk_text_lend(q->mine, q->n);
	pthread_mutex_unlock(&q->lock);
}

void tk_jobs_hand(struct tk_jobs *q, size_t slot, bool printed_inline, struct tk_outbuf *out)
{
	/* The log's non-temporal stores before the lock hands it over. */
	tk_stores_done();
	pthread_mutex_lock(&q->lock);
	if (printed_inline) {
		q->state[slot] = JOB_DONE;
	} else {
		q->state[slot] = JOB_READY;
		q->queue[q->tail++ % q->n] = q->filled;
		pthread_cond_signal(&q->work);
	}
	q->filled++;
	write_done(q, out, 0);
	pthread_mutex_unlock(&q->lock);
}

void tk_jobs_drop(struct tk_jobs *q, size_t slot)
{
	pthread_mutex_lock(&q->lock);
	if (q->text[slot])
		q->text[slot]->busy = false;
	q->text[slot] = NULL;
	q->state[slot] = JOB_FREE;
	pthread_mutex_unlock(&q->lock);
}

void tk_jobs_finish(struct tk_jobs *q, struct tk_outbuf *out)
{
	pthread_mutex_lock(&q->lock);
	write_done(q, out, q->filled);
	q->stop = true;
	pthread_cond_broadcast(&q->work);
	pthread_mutex_unlock(&q->lock);
}

void tk_jobs_ready(struct tk_jobs *q)
{
	pthread_mutex_lock(&q->lock);
	/* Atomic: tk_jobs_starving() reads it without the lock. */
	__atomic_store_n(&q->ready, q->ready + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&q->lock);
}

bool tk_jobs_take(struct tk_jobs *q, struct tk_text_slot *mine, size_t *slot)
{
	pthread_mutex_lock(&q->lock);
	while (!q->stop && q->head == q->tail)
		pthread_cond_wait(&q->work, &q->lock);
	if (q->head == q->tail) {
		pthread_mutex_unlock(&q->lock);
		return false;
	}
	*slot = q->queue[q->head % q->n] % q->n;
	__atomic_store_n(&q->head, q->head + 1, __ATOMIC_RELAXED);
	q->state[*slot] = JOB_BUSY;
	q->text[*slot] = tk_text_lend(mine, q->n);
	pthread_mutex_unlock(&q->lock);
	return true;
}

void tk_jobs_done(struct tk_jobs *q, size_t slot, int err)
{
	pthread_mutex_lock(&q->lock);
	job_finish(q, slot, err);
	pthread_cond_broadcast(&q->done);
	pthread_mutex_unlock(&q->lock);
}
