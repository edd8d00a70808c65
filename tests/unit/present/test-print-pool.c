// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the print pool (src/lib/present/print-pool.c) with a toy
 * engine: the merge numbers its records and either prints them (inline
 * jobs) or logs their numbers for the workers, which print the same text.
 * Whatever the split, the output must be every line once, in order; a
 * worker's failure must reach the output's error; every worker's state is
 * freed. On one CPU, where a worker can only take turns with the merge,
 * a pool that may retire its workers (the default's) retires them within a few periods and the
 * merge prints every later job itself, the order still whole. Under ThreadSanitizer (make check's
 * build-tsan builds only what its Makefile names): ninja -C build-tsan tests/test-print-pool &&
 * setarch -R build-tsan/tests/test-print-pool
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "print-pool.h"
#include "internal/error.h"

#define LOG_MAX 64

struct toy_job {
	uint32_t vals[LOG_MAX];
	uint32_t n;
};

struct toy {
	struct tk_print_pool *pp;
	struct toy_job *jobs;
	struct toy_job *cur;
	bool cur_inline;
	struct tk_outbuf *o; /* where the merge prints */
	uint32_t fail_at;    /* a worker fails on this line (UINT32_MAX: never) */
	int states, freed;   /* worker states made and freed */
	int replayed;	     /* jobs the workers printed */
	bool memo_ok;	     /* every worker had a memo of its own */
};

struct toy_worker {
	struct tk_ksym_memo *memo;
};

static void put_line(struct tk_outbuf *o, uint32_t v)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "line %u\n", v);

	tk_outbuf_write(o, line, (size_t)n);
}

static void toy_begin(void *engine, size_t slot, bool printed_inline, struct tk_outbuf *merge_out)
{
	struct toy *t = engine;

	t->cur = &t->jobs[slot];
	t->cur->n = 0;
	t->cur_inline = printed_inline;
	t->o = merge_out;
}

static bool toy_end(void *engine, size_t slot, struct tk_outbuf *merge_out)
{
	struct toy *t = engine;

	assert_ptr_equal(merge_out, t->o);
	return t->jobs[slot].n != 0;
}

static void *toy_worker_new(void *engine, struct tk_print_worker *w)
{
	struct toy *t = engine;
	struct toy_worker *tw = calloc(1, sizeof(*tw));

	if (!tw)
		return NULL;
	tw->memo = w->memo;
	__atomic_fetch_add(&t->states, 1, __ATOMIC_RELAXED);
	return tw;
}

static int toy_replay(void *engine, struct tk_print_worker *w, size_t slot, struct tk_outbuf *text)
{
	struct toy *t = engine;
	const struct toy_job *j = &t->jobs[slot];
	struct toy_worker *tw = w->state;

	if (!tw->memo || tw->memo == t->pp->main_memo)
		__atomic_store_n(&t->memo_ok, false, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->replayed, 1, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < j->n; i++) {
		if (j->vals[i] == t->fail_at)
			return tk_fail(EIO, "toy: line %u failed", j->vals[i]);
		put_line(text, j->vals[i]);
	}
	return 0;
}

static void toy_worker_free(void *engine, void *state)
{
	struct toy *t = engine;

	t->freed++;
	free(state);
}

static const struct tk_print_ops toy_ops = {
	.job_begin = toy_begin,
	.job_end = toy_end,
	.worker_new = toy_worker_new,
	.replay = toy_replay,
	.worker_free = toy_worker_free,
};

/*
 * The merge of @n records on a pool of @workers. Every @force_every-th
 * record (0: none) cannot be logged and forces its job inline, as a
 * perf.data line the log cannot carry does. Return: the output's error.
 */
static int run_toy(unsigned int workers, uint32_t n, uint32_t force_every, uint32_t fail_at,
		   char **text, size_t *len, struct toy *t)
{
	int fd = memfd_create("print-pool", 0);
	struct tk_outbuf out;
	int err;
	off_t size;

	assert_true(fd >= 0);
	assert_int_equal(tk_outbuf_init(&out, fd, 4096), 0);
	memset(t, 0, sizeof(*t));
	t->fail_at = fail_at;
	t->memo_ok = true;
	t->pp = tk_print_pool_new(&toy_ops, t, workers, 2 * workers + 3, 2, 1024, &out);
	assert_non_null(t->pp);
	t->jobs = calloc(t->pp->q.n, sizeof(*t->jobs));
	assert_non_null(t->jobs);
	assert_int_equal(tk_print_pool_start(t->pp), workers);
	/* Every worker ready, so that jobs are logged (until then the merge prints them). */
	while (__atomic_load_n(&t->pp->q.ready, __ATOMIC_RELAXED) < workers)
		sched_yield();
	for (uint32_t i = 0; i < n; i++) {
		if (force_every && i % force_every == force_every - 1 && !t->cur_inline)
			tk_print_pool_dispatch(t->pp, true, false);
		if (t->cur_inline)
			put_line(t->o, i);
		t->cur->vals[t->cur->n++] = i;
		if (t->cur->n == LOG_MAX ||
		    (t->cur_inline && !(t->cur->n % 8) && tk_print_pool_starving(t->pp)))
			tk_print_pool_dispatch(t->pp, false, false);
	}
	tk_print_pool_finish(t->pp);
	tk_print_pool_free(t->pp);
	free(t->jobs);
	err = out.error;
	tk_outbuf_flush(&out);
	tk_outbuf_release(&out);
	size = lseek(fd, 0, SEEK_END);
	assert_true(size >= 0);
	*text = malloc((size_t)size + 1);
	assert_non_null(*text);
	assert_int_equal(pread(fd, *text, (size_t)size, 0), size);
	(*text)[size] = '\0';
	*len = (size_t)size;
	close(fd);
	return err;
}

static void check_lines(const char *text, size_t len, uint32_t n)
{
	size_t pos = 0;

	for (uint32_t i = 0; i < n; i++) {
		char want[32];
		int k = snprintf(want, sizeof(want), "line %u\n", i);

		assert_true(pos + (size_t)k <= len);
		if (memcmp(text + pos, want, (size_t)k))
			fail_msg("line %u: got \"%.*s\"", i, k, text + pos);
		pos += (size_t)k;
	}
	assert_int_equal(pos, len);
}

/* @text holds the first lines in order, whole, and fewer than @n. */
static void check_prefix(const char *text, size_t len, uint32_t n)
{
	size_t pos = 0;
	uint32_t i = 0;

	while (pos < len) {
		char want[32];
		int k = snprintf(want, sizeof(want), "line %u\n", i);

		assert_true(pos + (size_t)k <= len);
		if (memcmp(text + pos, want, (size_t)k))
			fail_msg("line %u: got \"%.*s\"", i, k, text + pos);
		pos += (size_t)k;
		i++;
	}
	assert_true(i <= n);
}

/* Every line once and in order, whoever printed it; every worker state freed. */
static void test_order(void **state)
{
	(void)state;
	for (unsigned int workers = 1; workers <= 3; workers++) {
		for (int round = 0; round < 3; round++) {
			struct toy t;
			char *text;
			size_t len;

			assert_int_equal(run_toy(workers, 50000, 0, UINT32_MAX, &text, &len, &t),
					 0);
			check_lines(text, len, 50000);
			assert_int_equal(t.freed, t.states);
			assert_int_equal(t.states, workers);
			assert_true(t.replayed > 0);
			assert_true(t.memo_ok);
			free(text);
		}
	}
}

/* Lines that cannot be logged force their jobs inline; the order still holds. */
static void test_forced_inline(void **state)
{
	struct toy t;
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(run_toy(2, 20000, 37, UINT32_MAX, &text, &len, &t), 0);
	check_lines(text, len, 20000);
	free(text);
	/* No record at all: the one empty job is dropped, nothing is written. */
	assert_int_equal(run_toy(2, 0, 0, UINT32_MAX, &text, &len, &t), 0);
	assert_int_equal(len, 0);
	free(text);
}

/*
 * A worker's failure fails the output with its message, unless the merge
 * printed that line itself (then there is nothing to fail): either way the
 * lines before it are all there, in order.
 */
static void test_worker_failure(void **state)
{
	struct toy t;
	char *text;
	size_t len;
	int err;

	(void)state;
	err = run_toy(2, 20000, 0, 10000, &text, &len, &t);
	if (err) {
		assert_int_equal(err, -EIO);
		assert_non_null(strstr(tk_errmsg(), "toy: line 10000 failed"));
		check_prefix(text, len, 10000);
	} else {
		check_lines(text, len, 20000);
	}
	free(text);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Pinned to one CPU (the workers inherit it), the process never gets more
 * than one CPU's worth of time: the pool must retire its workers, and
 * from then on every job is printed inline. The merge feeds records until
 * then (at most 5 s: a pool that never retires fails the test).
 */
static void test_retired_on_one_cpu(void **state)
{
	cpu_set_t saved, one;
	int fd = memfd_create("print-pool", 0), cpu = -1;
	struct tk_outbuf out;
	struct toy t;
	uint32_t n = 0, after = 0;
	int64_t until;
	off_t size;
	char *text;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
		if (CPU_ISSET(i, &saved))
			cpu = i;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_true(fd >= 0);
	assert_int_equal(tk_outbuf_init(&out, fd, 4096), 0);
	memset(&t, 0, sizeof(t));
	t.fail_at = UINT32_MAX;
	t.memo_ok = true;
	t.pp = tk_print_pool_new(&toy_ops, &t, 1, 5, 2, 1024, &out);
	assert_non_null(t.pp);
	t.pp->may_retire = true; /* as the reports' default thread count sets it */
	t.jobs = calloc(t.pp->q.n, sizeof(*t.jobs));
	assert_non_null(t.jobs);
	assert_int_equal(tk_print_pool_start(t.pp), 1);
	until = now_ns() + 5000000000;
	while (after < 1000 && now_ns() < until) {
		if (t.cur_inline)
			put_line(t.o, n);
		t.cur->vals[t.cur->n++] = n++;
		if (t.cur->n == LOG_MAX) {
			tk_print_pool_dispatch(t.pp, false, false);
			if (t.pp->retired) {
				/* Retired: the merge prints every job from here on. */
				assert_true(t.cur_inline);
				after++;
			}
		}
	}
	assert_true(t.pp->retired);
	tk_print_pool_finish(t.pp);
	tk_print_pool_free(t.pp);
	free(t.jobs);
	assert_int_equal(out.error, 0);
	tk_outbuf_flush(&out);
	tk_outbuf_release(&out);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
	size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0);
	text = malloc((size_t)size);
	assert_non_null(text);
	assert_int_equal(pread(fd, text, (size_t)size, 0), size);
	check_lines(text, (size_t)size, n);
	free(text);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_forced_inline),
		cmocka_unit_test(test_worker_failure),
		cmocka_unit_test(test_retired_on_one_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
