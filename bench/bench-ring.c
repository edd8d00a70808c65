// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-ring: cost of writing an event into tracekit's user-space ring
 * buffer, beside LTTng-UST writing the same payload, and how fast a
 * consumer drains the ring.
 *
 * What is measured (16-byte payload, two u64, like the LTTng-UST tracepoint
 * of shared/specs/ringbuf.md section 3.4):
 *   - tk-1t-tsc / tk-1t-mono: ns per tk_ring_write() in a hot loop, one
 *     thread, overwrite mode, 1 MiB per buffer (no consumer: the writer
 *     laps the buffer, so page moves and overwrites are included), with the
 *     TSC clock and with CLOCK_MONOTONIC (LTTng's clock);
 *   - tk-2t-tsc: the same with two writer threads, each in its own buffer;
 *     per-thread ns/event, and the aggregate throughput as a multiple of
 *     one thread's (per round, then the median);
 *   - lttng-1t / lttng-2t: lttng_ust_tracepoint() of the same payload into
 *     an LTTng-UST 2.13 snapshot session with an overwrite channel of the
 *     same bytes per CPU (4 x 256 KiB), per spec section 4.4; the bench
 *     starts lttng-sessiond if none runs and stops it (by its PID) at the
 *     end, and destroys its session. The provider (bench-ring-tp.c) is a
 *     shared module the bench dlopen()s only for these cases, so --quick
 *     and builds without liblttng-ust need nothing of LTTng;
 *   - rdtsc: the clock read alone, the floor of a TSC-stamped event;
 *   - drain: a consumer calling tk_ring_read_page() over a full 64 MiB
 *     producer/consumer buffer, GB/s of page bytes handed out.
 * Fairness: the writers are two threads created once and pinned to CPUs 0
 * and 1 (one thread uses CPU 0); their state sits on separate cache lines;
 * the main thread sleeps in a barrier while they run. Each case runs a
 * warm-up and then R rounds (default 21) of N events (default 2 M); the
 * order of the cases rotates every round so host frequency drift hits them
 * alike. One line per case: median, p10-p90 and min-max over the rounds;
 * ratios are taken per round, then the median.
 *
 * Figures, reference VM (2 vCPUs, Sapphire Rapids, KVM, gcc 12 -O3
 * release build, host drift up to ~1.5x), one run:
 *   tk-1t-tsc    37.49 ns/event  p10-p90 30.85-45.07  min-max 28.88-50.68
 *   tk-1t-mono   62.24           p10-p90 52.62-65.79  min-max 45.06-72.42
 *   tk-2t-tsc    39.56 per thread, p10-p90 33.80-59.14
 *   tk-2t-scale  1.94x one thread, p10-p90 1.40-2.18
 *   drain        2.03 GB/s, p10-p90 1.80-2.29 (101 M events/s)
 *   lttng-1t     205.66 ns/event, p10-p90 160.71-228.50
 *   lttng-2t     199.08 per thread, p10-p90 184.55-367.86
 *   lttng/tk     5.41x (1 thread), 5.46x (2 threads)
 *   rdtsc        23.57 ns alone (min 19.27): the host was slow that run
 * So: drain, scaling and the 5x-vs-LTTng goals are met; 25 ns/event with
 * one thread is not (the write is ~10-14 ns above the clock read).
 *
 * --quick: 200 k events, 3 rounds, 8 MiB drain, no LTTng; checks that the
 * counters add up (everything drained decodes), exit 1 otherwise. The
 * bench-ring-smoke test runs it so the benchmark cannot rot.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/page.h>
#include <tracekit/ring.h>

#ifdef HAVE_LTTNG_UST
#include <dlfcn.h>
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#include "bench-ring-tp.h"
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum kind { K_TK, K_LTTNG, K_RDTSC };

/* One per writer thread, each on its own cache lines. */
struct worker {
	pthread_t thread;
	int cpu;
	/* set by main before a round */
	enum kind kind;
	struct tk_ring *ring;
	uint64_t n;
	bool active;
	/* results */
	double ns;
	uint64_t errors;
	bool quit;
} __attribute__((aligned(128)));

static struct worker workers[2];
static pthread_barrier_t start_b, end_b;

static void pin(int cpu)
{
	cpu_set_t set;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	CPU_SET(ncpu > 1 ? cpu : 0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void run_tk(struct worker *w)
{
	uint64_t payload[2] = { 0, 42 }, errors = 0, t0;
	struct tk_ring *ring = w->ring;
	uint64_t n = w->n;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		payload[0] = i;
		if (__builtin_expect(tk_ring_write(ring, payload, sizeof(payload)) != 0, 0))
			errors++;
	}
	w->ns = (double)(now_ns() - t0) / (double)n;
	w->errors += errors;
}

static void run_lttng(struct worker *w)
{
#ifdef HAVE_LTTNG_UST
	uint64_t n = w->n, t0 = now_ns();

	for (uint64_t i = 0; i < n; i++)
		lttng_ust_tracepoint(tk_bench, ev16, i, 42);
	w->ns = (double)(now_ns() - t0) / (double)n;
#else
	w->ns = 0;
#endif
}

/* The clock read alone: the floor of a TSC-stamped event. */
static void run_rdtsc(struct worker *w)
{
	uint64_t n = w->n, t0 = now_ns(), sum = 0;

	for (uint64_t i = 0; i < n; i++) {
#if defined(__x86_64__)
		sum += __builtin_ia32_rdtsc();
#else
		sum += i;
#endif
		__asm__ volatile("" : : "r"(sum));
	}
	w->ns = (double)(now_ns() - t0) / (double)n;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin(w->cpu);
	for (;;) {
		pthread_barrier_wait(&start_b);
		if (w->quit)
			break;
		if (w->active) {
			if (w->kind == K_TK)
				run_tk(w);
			else if (w->kind == K_RDTSC)
				run_rdtsc(w);
			else
				run_lttng(w);
		}
		pthread_barrier_wait(&end_b);
	}
	return NULL;
}

/* ns/event per thread, averaged over the active threads. */
static double run_round(enum kind kind, struct tk_ring *ring, int threads, uint64_t n)
{
	double sum = 0;

	for (int i = 0; i < 2; i++) {
		workers[i].kind = kind;
		workers[i].ring = ring;
		workers[i].n = n;
		workers[i].active = i < threads;
	}
	pthread_barrier_wait(&start_b);
	pthread_barrier_wait(&end_b);
	for (int i = 0; i < threads; i++)
		sum += workers[i].ns;
	return sum / threads;
}

static struct tk_ring *make(enum tk_ring_clock clock, enum tk_ring_mode mode, uint64_t size)
{
	struct tk_ring_opts o = { .size = size, .clock = clock, .mode = mode, .nr_buffers = 4 };
	struct tk_ring *r = tk_ring_new(&o);

	if (!r) {
		fprintf(stderr, "bench-ring: %s\n", tk_errmsg());
		exit(1);
	}
	return r;
}

/* GB/s of pages drained from a full producer/consumer buffer. */
static double run_drain(uint64_t size, uint64_t *events, int *errors)
{
	struct tk_ring *r = make(TK_RING_CLOCK_DEFAULT, TK_RING_PRODUCER_CONSUMER, size);
	struct tk_page_format fmt;
	uint64_t payload[2] = { 0, 7 }, bytes = 0, t0, dt;
	uint8_t *page;
	int cpu = tk_ring_this_cpu(r), got;

	tk_ring_page_format(r, &fmt);
	page = malloc(fmt.page_size);
	while (tk_ring_write(r, payload, sizeof(payload)) == 0)
		payload[0]++;
	t0 = now_ns();
	while ((got = tk_ring_read_page(r, cpu, page, fmt.page_size, false)) > 0)
		bytes += fmt.page_size;
	dt = now_ns() - t0;
	/* Outside the timed loop: everything written was drained. */
	struct tk_ring_stats st;

	tk_ring_stats_cpu(r, cpu, &st);
	if (st.read != payload[0] || st.entries != 0 || st.committed != payload[0])
		(*errors)++;
	*events = st.read;
	free(page);
	tk_ring_free(r);
	return (double)bytes / (double)dt;
}

/* ------------------------------------------------------------ LTTng-UST */

#ifdef HAVE_LTTNG_UST
static pid_t started_sessiond;
static bool session_up;

static int sh(const char *cmd)
{
	int r = system(cmd);

	return r == -1 ? -1 : WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static pid_t sessiond_pid(void)
{
	char path[256];
	FILE *f;
	long pid = 0;

	if (getuid() == 0)
		snprintf(path, sizeof(path), "/var/run/lttng/lttng-sessiond.pid");
	else
		snprintf(path, sizeof(path), "%s/.lttng/lttng-sessiond.pid",
			 getenv("HOME") ? getenv("HOME") : "/tmp");
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid > 0 && kill((pid_t)pid, 0) == 0 ? (pid_t)pid : 0;
}

/*
 * Start a session daemon if none runs, then a snapshot session with an
 * overwrite channel, and load the provider (the app registers with the
 * daemon while dlopen() runs, and gets the enabled event). Returns NULL on
 * success, else why the enabled baseline cannot be measured.
 */
static const char *lttng_setup(void)
{
	if (!sessiond_pid()) {
		if (sh("lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1") != 0)
			return "lttng-sessiond would not start";
		started_sessiond = sessiond_pid();
		if (!started_sessiond)
			return "lttng-sessiond started but its PID file is missing";
	}
	sh("lttng destroy tkbench >/dev/null 2>&1");
	if (sh("lttng create tkbench --snapshot >/dev/null 2>&1") ||
	    sh("lttng enable-channel -u -s tkbench --overwrite --subbuf-size=256K "
	       "--num-subbuf=4 ch >/dev/null 2>&1") ||
	    sh("lttng enable-event -u -s tkbench -c ch tk_bench:ev16 >/dev/null 2>&1") ||
	    sh("lttng start tkbench >/dev/null 2>&1"))
		return "the lttng session could not be set up";
	session_up = true;
	if (!dlopen(TP_PROVIDER, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "bench-ring: %s\n", dlerror());
		return "the tracepoint provider did not load";
	}
	if (!lttng_ust_tracepoint_enabled(tk_bench, ev16))
		return "the tracepoint is not enabled after registration";
	return NULL;
}

static void lttng_teardown(void)
{
	if (session_up) {
		sh("lttng stop tkbench >/dev/null 2>&1");
		sh("lttng destroy tkbench >/dev/null 2>&1");
	}
	if (started_sessiond) {
		kill(started_sessiond, SIGTERM);
		for (int i = 0; i < 100 && kill(started_sessiond, 0) == 0; i++)
			usleep(50000);
	}
}
#endif

/* ------------------------------------------------------------ main */

enum { TK1, TK1MONO, TK2, DRAIN, LT1, LT2, RDTSC, NCASE };
static const char *const names[NCASE] = { "tk-1t-tsc", "tk-1t-mono", "tk-2t-tsc", "drain",
					   "lttng-1t",  "lttng-2t",   "rdtsc" };

static void print_case(const char *name, double *v, int n, const char *unit)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	printf("%-11s median %8.2f %s  p10-p90 %.2f-%.2f  min-max %.2f-%.2f\n", name, v[n / 2],
	       unit, v[n / 10], v[n - 1 - n / 10], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
	uint64_t n = 2000000, drain_size = 64 << 20, drained = 0;
	int rounds = 21, errors = 0;
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	bool lttng = false;
	const char *no_lttng = "not built (liblttng-ust-dev not found at configure time)";

	if (quick) {
		n = 200000;
		rounds = 3;
		drain_size = 8 << 20;
		no_lttng = "skipped in --quick mode";
	}
#ifdef HAVE_LTTNG_UST
	if (!quick) {
		no_lttng = lttng_setup();
		lttng = !no_lttng;
	}
#endif
	double *res[NCASE], *scale = calloc((size_t)rounds, sizeof(double));
	double *ratio1 = calloc((size_t)rounds, sizeof(double));
	double *ratio2 = calloc((size_t)rounds, sizeof(double));

	for (int c = 0; c < NCASE; c++)
		res[c] = calloc((size_t)rounds, sizeof(double));
	struct tk_ring *tsc = make(TK_RING_CLOCK_DEFAULT, TK_RING_OVERWRITE, 1 << 20);
	struct tk_ring *mono = make(TK_RING_CLOCK_MONOTONIC, TK_RING_OVERWRITE, 1 << 20);

	pthread_barrier_init(&start_b, NULL, 3);
	pthread_barrier_init(&end_b, NULL, 3);
	for (int i = 0; i < 2; i++) {
		workers[i].cpu = i;
		pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
	}
	printf("bench-ring: %" PRIu64 " events x %d rounds, 16-byte payload, clock %s, "
	       "%ld CPUs\n", n, rounds, tk_ring_clock_name(tsc), sysconf(_SC_NPROCESSORS_ONLN));
	/* Warm-up: claim buffers, fault pages in, register with LTTng. */
	run_round(K_TK, tsc, 2, n / 4);
	run_round(K_TK, mono, 1, n / 4);
	if (lttng)
		run_round(K_LTTNG, NULL, 2, n / 4);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < NCASE; k++) {
			int c = (k + r) % NCASE;

			switch (c) {
			case TK1:
				res[c][r] = run_round(K_TK, tsc, 1, n);
				break;
			case TK1MONO:
				res[c][r] = run_round(K_TK, mono, 1, n);
				break;
			case TK2:
				res[c][r] = run_round(K_TK, tsc, 2, n);
				break;
			case DRAIN:
				res[c][r] = run_drain(drain_size, &drained, &errors);
				break;
			case LT1:
				res[c][r] = lttng ? run_round(K_LTTNG, NULL, 1, n) : 0;
				break;
			case LT2:
				res[c][r] = lttng ? run_round(K_LTTNG, NULL, 2, n) : 0;
				break;
			case RDTSC:
				res[c][r] = run_round(K_RDTSC, NULL, 1, n);
				break;
			}
		}
		scale[r] = 2.0 * res[TK1][r] / res[TK2][r];
		ratio1[r] = lttng ? res[LT1][r] / res[TK1][r] : 0;
		ratio2[r] = lttng ? res[LT2][r] / res[TK2][r] : 0;
	}
	for (int i = 0; i < 2; i++) {
		workers[i].quit = true;
		errors += (int)workers[i].errors;
	}
	pthread_barrier_wait(&start_b);
	for (int i = 0; i < 2; i++)
		pthread_join(workers[i].thread, NULL);

	for (int c = 0; c < NCASE; c++) {
		if ((c == LT1 || c == LT2) && !lttng)
			continue;
		print_case(names[c], res[c], rounds, c == DRAIN ? "GB/s    " : "ns/event");
	}
	print_case("tk-2t-scale", scale, rounds, "x 1t    ");
	printf("drain       %" PRIu64 " events per pass (%.0f M events/s at the median)\n",
	       drained, res[DRAIN][rounds / 2] * 1e9 / ((double)drain_size / (double)drained) / 1e6);
	if (lttng) {
		print_case("lttng/tk-1t", ratio1, rounds, "x       ");
		print_case("lttng/tk-2t", ratio2, rounds, "x       ");
	} else {
		printf("lttng-ust: enabled baseline NOT measured: %s\n", no_lttng);
	}
#ifdef HAVE_LTTNG_UST
	lttng_teardown();
#endif
	tk_ring_free(tsc);
	tk_ring_free(mono);
	for (int c = 0; c < NCASE; c++)
		free(res[c]);
	free(scale);
	free(ratio1);
	free(ratio2);
	if (errors) {
		fprintf(stderr, "bench-ring: %d consistency errors\n", errors);
		return 1;
	}
	return 0;
}
