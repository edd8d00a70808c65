/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the benchmarks share: the clock, failing loudly, sorting samples for
 * medians, and running the other tool of a side-by-side comparison with
 * its wall time and peak RSS. Header-only so each benchmark stays one file.
 */
#ifndef TRACEKIT_BENCH_HARNESS_H
#define TRACEKIT_BENCH_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/common.h>

/* Print "<benchmark>: what: <library or errno message>" and exit 1. */
static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
		tk_errmsg()[0] ? tk_errmsg() : strerror(errno));
	exit(1);
}

/* CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort comparator for doubles, for medians and spreads. */
static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct run {
	double seconds;
	double cpu_seconds; /* the child's user + system time: steadier on a shared VM */
	long maxrss_kb;
	int status;
};

/* Run argv with stdout on @out (NULL: /dev/null), stderr on /dev/null; wall, CPU, peak RSS. */
static inline struct run run_tool(char *const argv[], const char *out)
{
	struct run r = {0};
	struct rusage ru;
	double t0 = now_s();
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int null = open("/dev/null", O_WRONLY);

		if (fd < 0 || null < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &r.status, 0, &ru) < 0)
		die("wait4");
	r.seconds = now_s() - t0;
	r.cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
			(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	r.maxrss_kb = ru.ru_maxrss;
	return r;
}

/* Whether two files hold the same bytes (false when either is missing). */
static inline bool files_equal(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool eq = fa && fb;
	int ca, cb;

	while (eq) {
		ca = getc(fa);
		cb = getc(fb);
		if (ca != cb)
			eq = false;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return eq;
}

/*
 * Write @path's pages back before timing reads of it: a file of 200 MB
 * just written is still being written back, and the first timed runs then
 * compete with that I/O (0.28 s instead of 0.20 s for one report here).
 */
static inline void settle_file(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fsync(fd) < 0)
		die(path);
	close(fd);
}

/* What run_pairs() measured. */
struct pairs {
	double ours, theirs;		  /* median seconds */
	double ratio, ratio_lo, ratio_hi; /* theirs / ours per round: median, min, max */
	double ours_cpu, theirs_cpu;	  /* median CPU seconds (user + system) */
	double cpu_ratio;		  /* theirs / ours CPU time per round: median */
	long ours_rss_kb, theirs_rss_kb;
	int rounds;
};

/* How run_pairs_with() runs one command: run_tool() or a bench's own. */
typedef struct run (*run_fn)(char *const argv[]);

static inline struct run run_plain(char *const argv[])
{
	return run_tool(argv, NULL);
}

/*
 * Run @ours then @theirs through @run, @rounds times in turn, stdout to
 * /dev/null. On a shared VM the speed of both drifts together (trace-cmd
 * report took 4.7 s and 6.3 s on one file an hour apart), so the ratio of
 * each round's pair is steadier than a ratio of medians taken minutes
 * apart. Exits (die) when @ours fails; @theirs failing returns rounds = 0.
 */
static inline struct pairs run_pairs_with(char *const ours[], char *const theirs[], int rounds,
					  run_fn run)
{
	double o[32], t[32], q[32], oc[32], tc[32], qc[32];
	struct pairs p = {0};

	if (rounds > 32)
		rounds = 32;
	for (int i = 0; i < rounds; i++) {
		struct run a = run(ours), b;

		if (!WIFEXITED(a.status) || WEXITSTATUS(a.status)) {
			errno = 0;
			die(ours[0]);
		}
		b = run(theirs);
		if (!WIFEXITED(b.status) || WEXITSTATUS(b.status))
			return p;
		o[i] = a.seconds;
		t[i] = b.seconds;
		q[i] = b.seconds / a.seconds;
		oc[i] = a.cpu_seconds;
		tc[i] = b.cpu_seconds;
		qc[i] = oc[i] > 0 ? tc[i] / oc[i] : 0;
		if (a.maxrss_kb > p.ours_rss_kb)
			p.ours_rss_kb = a.maxrss_kb;
		if (b.maxrss_kb > p.theirs_rss_kb)
			p.theirs_rss_kb = b.maxrss_kb;
	}
	qsort(o, (size_t)rounds, sizeof(o[0]), cmp_double);
	qsort(t, (size_t)rounds, sizeof(t[0]), cmp_double);
	qsort(q, (size_t)rounds, sizeof(q[0]), cmp_double);
	qsort(oc, (size_t)rounds, sizeof(oc[0]), cmp_double);
	qsort(tc, (size_t)rounds, sizeof(tc[0]), cmp_double);
	qsort(qc, (size_t)rounds, sizeof(qc[0]), cmp_double);
	p.ours = o[rounds / 2];
	p.ours_cpu = oc[rounds / 2];
	p.theirs_cpu = tc[rounds / 2];
	p.cpu_ratio = qc[rounds / 2];
	p.theirs = t[rounds / 2];
	p.ratio = q[rounds / 2];
	p.ratio_lo = q[0];
	p.ratio_hi = q[rounds - 1];
	p.rounds = rounds;
	return p;
}

/* run_pairs_with() through run_tool(). */
static inline struct pairs run_pairs(char *const ours[], char *const theirs[], int rounds)
{
	return run_pairs_with(ours, theirs, rounds, run_plain);
}

#endif
