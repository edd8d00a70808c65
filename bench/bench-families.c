// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-families: `tracekit report` against `trace-cmd report` and
 * `perf script` on real recordings of each event family.
 *
 * bench-report times a generated file of sched, irq and timer events.
 * Real traces are dominated by other families (a syscalls recording ran
 * 17x trace-cmd where bench-report's file ran 30x), so this bench records
 * one file per family on this machine, with a fixed workload of its own
 * (the bench runs itself as the recorded command, `--load FAMILY N`):
 *
 *   family         recorded with        workload
 *   sched          -e sched             two threads ping-pong over pipes
 *   syscalls       -e syscalls          openat / write / read / close on a tmpfs file
 *   raw_syscalls   -e raw_syscalls      getppid and write
 *   irq-timer      -e irq -e timer      10 us nanosleeps and loopback UDP (softirqs)
 *   block          -e block -e writeback -e filemap
 *                                       4 KiB writes and fdatasync() on a disk file
 *   kmem           -e kmem              anonymous mmap / touch / munmap, small files
 *   net            -e net -e skb        loopback UDP send / receive
 *   workqueue      -e workqueue         writes to a pseudo-terminal (flush_to_ldisc)
 *   power          -e power             short sleeps: CPUs go idle and back
 *   marker         (trace_marker)       writes to the instance's trace_marker
 *   mixed          -e sched -e irq -e timer -e syscalls
 *                                       ping-pong threads that also sleep and write
 *
 * Each is recorded with `tracekit record` (v7 zstd, the default), then
 * rewritten uncompressed with `tracekit convert --compression none`, so
 * both files hold the same events. With perf installed, the same
 * workload is recorded by `perf record -e 'FAMILY:*' -a` (marker aside:
 * perf cannot record ftrace's print) and timed against `perf script`.
 * Recording touches the kernel's global tracing state: each recording
 * holds an exclusive flock() on /tmp/tracefs.lock, as the tests do.
 *
 * The timing: --reps interleaved pairs (tracekit, then the other tool),
 * stdout on /dev/null, peak RSS from wait4(); a line gives both medians,
 * the median of the pairs' ratios with their spread, and whether the two
 * texts were identical on a first run kept in files (trace-cmd's text is
 * the oracle: "differs" means a bug here, or a known trace-cmd quirk).
 *
 * Usage: bench-families --tracekit PATH [--family NAME] [--events N]
 * [--reps N] [--keep DIR [--reuse]] [--no-perf] [--quick] [--threads]; --reuse
 * times the files an earlier --keep DIR run left instead of recording them
 * again; --threads adds, per .dat file, tracekit's default thread count
 * against -j 1, as the machine is and pinned to one CPU (taskset -c 0);
 * --base PATH adds, per .dat file, another build of tracekit (main's, say)
 * against this one, both with their default threads; --jobs N (stop 21)
 * adds, per .dat file, tracekit -j N against -j 1 whatever the machine's
 * load (the gain of N printers where the default would pick fewer), and
 * with --base also this build's -j N against the base's.
 * Every line ends with the load average when it was printed. --events is the rough
 * count of workload steps to aim ~1 M events (the default); --quick
 * records ~20 k and runs each tool once, and exits 1 unless every text is
 * the other tool's byte for byte (make check runs it on one family,
 * with --no-lock: make check runs under the lock). Without root or
 * tracefs it prints "SKIP: reason" and exits 77.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* One family: what is recorded, and how many workload steps make ~1 M events. */
struct family {
	const char *name;
	const char *events[5]; /* -e arguments for tracekit record, NULL-ended */
	const char *perf;      /* perf record -e argument, NULL: no perf.data */
	double steps_per_mevent;
	/*
	 * Only the workload's own events (-F, perf without -a): the machine
	 * is shared, and other tasks' syscalls would swamp the count. Events
	 * of interrupts and kernel threads need the whole system.
	 */
	bool follow;
};

static const struct family families[] = {
	{"sched", {"sched", NULL}, "sched:*", 110000, false},
	{"syscalls", {"syscalls", NULL}, "syscalls:*", 125000, true},
	{"raw_syscalls", {"raw_syscalls", NULL}, "raw_syscalls:*", 250000, true},
	{"irq-timer", {"irq", "timer", NULL}, "irq:*,timer:*", 90000, false},
	{"block",
	 {"block", "writeback", "filemap", NULL},
	 "block:*,writeback:*,filemap:*",
	 20000,
	 false},
	{"kmem", {"kmem", NULL}, "kmem:*", 25000, false},
	{"net", {"net", "skb", NULL}, "net:*,skb:*", 90000, false},
	{"workqueue", {"workqueue", NULL}, "workqueue:*", 200000, false},
	{"power", {"power", NULL}, "power:*", 250000, false},
	{"marker", {NULL}, NULL, 1000000, false},
	{"mixed",
	 {"sched", "irq", "timer", "syscalls", NULL},
	 "sched:*,irq:*,timer:*,syscalls:*",
	 40000,
	 false},
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

/* ------------------------------------------------------------ workloads */

static int pipes[2][2];

static void *pong(void *arg)
{
	long n = (long)arg;
	char c;

	for (long i = 0; i < n; i++) {
		if (read(pipes[0][0], &c, 1) != 1 || write(pipes[1][1], &c, 1) != 1)
			break;
	}
	return NULL;
}

/* Ping-pong between two threads: a switch and a wakeup each way. */
static void load_sched(long n, bool extra)
{
	pthread_t t;
	char c = 'x';
	struct timespec ts = {0, 10000};
	int fd = extra ? open("/dev/shm/bench-families.tmp", O_RDWR | O_CREAT | O_TRUNC, 0600) : -1;

	if (pipe(pipes[0]) || pipe(pipes[1]) || pthread_create(&t, NULL, pong, (void *)n))
		exit(1);
	for (long i = 0; i < n; i++) {
		if (write(pipes[0][1], &c, 1) != 1 || read(pipes[1][0], &c, 1) != 1)
			break;
		if (extra && fd >= 0 && write(fd, "0123456789abcdef", 16) < 0)
			break;
		if (extra && i % 8 == 0)
			nanosleep(&ts, NULL);
	}
	pthread_join(t, NULL);
	if (fd >= 0) {
		close(fd);
		unlink("/dev/shm/bench-families.tmp");
	}
}

static void load_syscalls(long n)
{
	const char *path = "/dev/shm/bench-families.tmp";
	char buf[64] = "tracekit bench line\n";

	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDWR | O_CREAT, 0600);

		if (fd < 0 || write(fd, buf, sizeof(buf)) < 0 || pread(fd, buf, 16, 0) < 0)
			exit(1);
		close(fd);
	}
	unlink(path);
}

static void load_raw_syscalls(long n)
{
	int fd = open("/dev/null", O_WRONLY);

	for (long i = 0; i < n; i++) {
		getppid();
		if (write(fd, "x", 1) < 0)
			exit(1);
	}
	close(fd);
}

static int udp_pair(int *rx)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int tx = socket(AF_INET, SOCK_DGRAM, 0);

	*rx = socket(AF_INET, SOCK_DGRAM, 0);
	if (tx < 0 || *rx < 0 || bind(*rx, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(*rx, (struct sockaddr *)&a, &len) ||
	    connect(tx, (struct sockaddr *)&a, sizeof(a)))
		exit(1);
	return tx;
}

static void load_net(long n, bool sleep)
{
	int rx, tx = udp_pair(&rx);
	char buf[256] = {0};
	struct timespec ts = {0, 10000};

	for (long i = 0; i < n; i++) {
		if (send(tx, buf, 200, 0) < 0 || recv(rx, buf, sizeof(buf), 0) < 0)
			exit(1);
		if (sleep)
			nanosleep(&ts, NULL);
	}
	close(tx);
	close(rx);
}

static void load_block(long n)
{
	char path[] = "/tmp/bench-families-XXXXXX";
	static char buf[4096];
	int fd = mkstemp(path);

	if (fd < 0)
		exit(1);
	memset(buf, 'b', sizeof(buf));
	for (long i = 0; i < n; i++) {
		if (pwrite(fd, buf, sizeof(buf), (off_t)(i % 256) * 4096) < 0)
			exit(1);
		if (i % 4 == 3)
			fdatasync(fd);
	}
	close(fd);
	unlink(path);
}

static void load_kmem(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);

		if (p == MAP_FAILED)
			exit(1);
		for (int k = 0; k < 16; k++)
			p[k * 4096] = 1;
		munmap(p, 65536);
	}
}

static void load_workqueue(long n)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), s;
	char buf[64];

	if (m < 0 || grantpt(m) || unlockpt(m))
		exit(1);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	if (s < 0)
		exit(1);
	for (long i = 0; i < n; i++) {
		if (write(m, "x\n", 2) < 0 || read(s, buf, sizeof(buf)) < 0)
			exit(1);
	}
	close(s);
	close(m);
}

static void load_power(long n)
{
	struct timespec ts = {0, 20000};

	for (long i = 0; i < n; i++)
		nanosleep(&ts, NULL);
}

static void load_marker(long n)
{
	const char *dir = getenv("TRACEKIT_INSTANCE");
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/trace_marker", dir ? dir : "/sys/kernel/tracing");
	fd = open(path, O_WRONLY);
	if (fd < 0)
		exit(1);
	for (long i = 0; i < n; i++) {
		char line[64];
		int len = snprintf(line, sizeof(line), "bench marker %ld step\n", i);

		if (write(fd, line, (size_t)len) < 0)
			exit(1);
	}
	close(fd);
}

static int run_load(const char *name, long n)
{
	if (!strcmp(name, "sched"))
		load_sched(n, false);
	else if (!strcmp(name, "syscalls"))
		load_syscalls(n);
	else if (!strcmp(name, "raw_syscalls"))
		load_raw_syscalls(n);
	else if (!strcmp(name, "irq-timer"))
		load_net(n, true);
	else if (!strcmp(name, "block"))
		load_block(n);
	else if (!strcmp(name, "kmem"))
		load_kmem(n);
	else if (!strcmp(name, "net"))
		load_net(n, false);
	else if (!strcmp(name, "workqueue"))
		load_workqueue(n);
	else if (!strcmp(name, "power"))
		load_power(n);
	else if (!strcmp(name, "marker"))
		load_marker(n);
	else if (!strcmp(name, "mixed"))
		load_sched(n, true);
	else
		return 2;
	return 0;
}

/* ------------------------------------------------------------ the bench */

static const char *tracekit = "tracekit";
static char self[4096];
static int lock_fd = -1;
static bool no_lock;

/*
 * The tests' lock on the kernel's tracing state, held while recording
 * (--no-lock: the caller holds it, as make check's smoke test runs under
 * `flock /tmp/tracefs.lock make check`; taking it again would wait for ever).
 */
static void lock_tracefs(bool on)
{
	if (no_lock)
		return;
	if (lock_fd < 0)
		lock_fd = open("/tmp/tracefs.lock", O_RDWR | O_CREAT, 0666);
	if (lock_fd >= 0 && flock(lock_fd, on ? LOCK_EX : LOCK_UN))
		die("flock /tmp/tracefs.lock");
}

static bool run_ok(char *const argv[], const char *out)
{
	struct run r = run_tool(argv, out);

	return WIFEXITED(r.status) && !WEXITSTATUS(r.status);
}

static bool have(const char *tool, const char *arg)
{
	char *const argv[] = {(char *)tool, (char *)arg, NULL};
	struct run r = run_tool(argv, NULL);

	/* trace-cmd exits 255 even for "version": only a failed exec (127) counts. */
	return WIFEXITED(r.status) && WEXITSTATUS(r.status) != 127;
}

/* Lines in a file: the events of a report (one per line). */
static uint64_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	uint64_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static bool record_dat(const struct family *fam, long steps, const char *out)
{
	char nbuf[32];
	char *argv[32];
	int a = 0;
	bool ok;

	snprintf(nbuf, sizeof(nbuf), "%ld", steps);
	argv[a++] = (char *)tracekit;
	argv[a++] = "record";
	argv[a++] = "-q";
	for (int i = 0; fam->events[i]; i++) {
		argv[a++] = "-e";
		argv[a++] = (char *)fam->events[i];
	}
	if (!fam->events[0]) {
		/* trace_marker only: an event that never fires keeps the rest out. */
		argv[a++] = "-e";
		argv[a++] = "ftrace:print";
	}
	if (fam->follow)
		argv[a++] = "-F";
	argv[a++] = "-b";
	argv[a++] = "32768";
	argv[a++] = "-o";
	argv[a++] = (char *)out;
	argv[a++] = "--";
	argv[a++] = self;
	argv[a++] = "--load";
	argv[a++] = (char *)fam->name;
	argv[a++] = nbuf;
	argv[a] = NULL;
	lock_tracefs(true);
	ok = run_ok(argv, NULL);
	if (!ok) {
		/* Without -q support or with a bad event: once more, plainly. */
		memmove(&argv[2], &argv[3], (size_t)(a - 2) * sizeof(argv[0]));
		ok = run_ok(argv, NULL);
	}
	lock_tracefs(false);
	return ok;
}

static bool record_perf(const struct family *fam, long steps, const char *out)
{
	char nbuf[32];
	char *argv[] = {"perf",	  "record",	     "-q", "-a",	"-m", "4096",
			"-e",	  (char *)fam->perf, "-o", (char *)out, "--", self,
			"--load", (char *)fam->name, nbuf, NULL};
	bool ok;

	snprintf(nbuf, sizeof(nbuf), "%ld", steps);
	lock_tracefs(true);
	ok = run_ok(argv, NULL);
	lock_tracefs(false);
	return ok;
}

/* One run: wall and CPU seconds (all threads, user + system), peak RSS. */
struct timed {
	double wall, cpu;
	long rss_kb;
	bool ok;
};

static struct timed run_timed(char *const argv[])
{
	struct run r = run_tool(argv, NULL);

	/* tracekit exits 1 when a recording lost events (it printed them all). */
	return (struct timed){.wall = r.seconds,
			      .cpu = r.cpu_seconds,
			      .rss_kb = r.maxrss_kb,
			      .ok = WIFEXITED(r.status) && WEXITSTATUS(r.status) <= 1};
}

/* The 1-minute load average, printed beside every figure: six helpers share two cores. */
static double load_avg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/*
 * Time @ours against @theirs; false when the two texts differ. Wall
 * clock ratios are the median of interleaved pairs; CPU time (what the
 * tools cost, whatever else the machine runs: this 2-vCPU VM is shared)
 * is summed over each tool's threads, so tracekit's second thread counts
 * against it.
 */
static bool compare(const char *what, const char *file, const char *path, char *const ours[],
		    char *const theirs[], const char *tool, int reps, const char *dir)
{
	char out_a[4200], out_b[4200];
	double wo[32], wt[32], wq[32], co[32], ct[32], cq[32];
	long rss_o = 0, rss_t = 0;
	struct run a;
	uint64_t events;
	bool same;
	struct stat st;

	/* Named by this process: two benches may share a --keep DIR. */
	snprintf(out_a, sizeof(out_a), "%s/tracekit-%d.txt", dir, (int)getpid());
	snprintf(out_b, sizeof(out_b), "%s/other-%d.txt", dir, (int)getpid());
	a = run_tool(ours, out_a);
	run_tool(theirs, out_b);
	/* tracekit exits 1 on a damaged file (it prints what it can): still timed. */
	if (!WIFEXITED(a.status) || WEXITSTATUS(a.status) > 1) {
		printf("%-13s %-5s tracekit report failed (status %d)\n", what, file, a.status);
		return false;
	}
	events = count_lines(out_a);
	same = files_equal(out_a, out_b);
	unlink(out_a);
	unlink(out_b);
	if (reps > 32)
		reps = 32;
	for (int i = 0; i < reps; i++) {
		struct timed x = run_timed(ours), y = run_timed(theirs);

		if (!x.ok || !y.ok) {
			printf("%-13s %-5s %8" PRIu64 " lines  %s failed\n", what, file, events,
			       x.ok ? tool : "tracekit report");
			return false;
		}
		wo[i] = x.wall;
		wt[i] = y.wall;
		wq[i] = y.wall / x.wall;
		co[i] = x.cpu;
		ct[i] = y.cpu;
		cq[i] = y.cpu / (x.cpu > 1e-4 ? x.cpu : 1e-4);
		rss_o = x.rss_kb > rss_o ? x.rss_kb : rss_o;
		rss_t = y.rss_kb > rss_t ? y.rss_kb : rss_t;
	}
	if (stat(path, &st) < 0)
		st.st_size = 0;
	{
		double q = median(wq, reps), lo = wq[0], hi = wq[reps - 1];

		printf("%-13s %-5s %8" PRIu64 " lines %6.1f MB  tracekit %.3f s (cpu %.3f) %3ld MB"
		       "  %s %.3f s (cpu %.3f) %3ld MB  wall %5.2fx (%.2f-%.2f)  cpu %5.2fx  text "
		       "%s  load %.1f\n",
		       what, file, events, (double)st.st_size / 1e6, median(wo, reps),
		       median(co, reps), rss_o / 1024, tool, median(wt, reps), median(ct, reps),
		       rss_t / 1024, q, lo, hi, median(cq, reps), same ? "identical" : "differs",
		       load_avg());
	}
	fflush(stdout);
	return same;
}

static void usage(void)
{
	fputs("usage: bench-families --tracekit PATH [--family NAME] [--events N] [--reps N]\n"
	      "                      [--keep DIR [--reuse]] [--no-perf] [--no-dat] [--no-lock]\n"
	      "                      [--quick] [--threads] [--base PATH] [--jobs N]\n"
	      "       bench-families --load FAMILY STEPS   (the recorded workload)\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *only = NULL, *keep = NULL, *base = NULL, *jobs = NULL;
	double mevents = 1.0;
	int reps = 3;
	bool quick = false, no_perf = false, no_dat = false, perf_ok, tc_ok, same = true;
	bool reuse = false, threads = false;
	char tmp[] = "/tmp/bench-families-XXXXXX";
	const char *dir;

	if (argc == 4 && !strcmp(argv[1], "--load"))
		return run_load(argv[2], atol(argv[3]));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tracekit") && i + 1 < argc)
			tracekit = argv[++i];
		else if (!strcmp(argv[i], "--family") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--events") && i + 1 < argc)
			mevents = atof(argv[++i]) / 1e6;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--no-perf"))
			no_perf = true;
		else if (!strcmp(argv[i], "--no-dat"))
			no_dat = true;
		else if (!strcmp(argv[i], "--no-lock"))
			no_lock = true;
		else if (!strcmp(argv[i], "--reuse"))
			reuse = true;
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--threads"))
			threads = true;
		else if (!strcmp(argv[i], "--base") && i + 1 < argc)
			base = argv[++i];
		else if (!strcmp(argv[i], "--jobs") && i + 1 < argc && atoi(argv[i + 1]) > 0)
			jobs = argv[++i];
		else
			usage();
	}
	if (quick) {
		mevents = 0.02;
		reps = 1;
	}
	if (reps < 1)
		reps = 1;
	if (geteuid() != 0 || access("/sys/kernel/tracing/events", R_OK)) {
		printf("SKIP: recording needs root and tracefs\n");
		return 77;
	}
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0)
		die("/proc/self/exe");
	tc_ok = have("trace-cmd", "version");
	perf_ok = !no_perf && have("perf", "--version");
	if (keep) {
		mkdir(keep, 0755);
		dir = keep;
	} else {
		dir = mkdtemp(tmp);
		if (!dir)
			die("mkdtemp");
	}
	printf("family        file     lines    size    tracekit report (median wall, its cpu, "
	       "peak RSS)   other tool   ratio of walls (pairs), of cpu   text\n");
	for (size_t f = 0; f < NFAMILIES; f++) {
		const struct family *fam = &families[f];
		long steps = (long)(fam->steps_per_mevent * mevents);
		char zst[4200], none[4200], pd[4200];

		if (only && strcmp(only, fam->name))
			continue;
		if (steps < 100)
			steps = 100;
		snprintf(zst, sizeof(zst), "%s/%s-zstd.dat", dir, fam->name);
		snprintf(none, sizeof(none), "%s/%s-none.dat", dir, fam->name);
		snprintf(pd, sizeof(pd), "%s/%s.data", dir, fam->name);
		if (!no_dat) {
			char *conv[] = {(char *)tracekit, "convert", "-q", zst, "-o", none,
					"--compression",  "none",    NULL};
			char *tk_z[] = {(char *)tracekit, "report", "-i", zst, NULL};
			char *tk_n[] = {(char *)tracekit, "report", "-i", none, NULL};
			char *tc_z[] = {"trace-cmd", "report", "-i", zst, NULL};
			char *tc_n[] = {"trace-cmd", "report", "-i", none, NULL};

			if (reuse && !access(zst, R_OK) && !access(none, R_OK)) {
				/* --reuse: the files of an earlier --keep run. */
			} else if (!record_dat(fam, steps, zst)) {
				printf("%-13s tracekit record failed\n", fam->name);
				continue;
			} else if (!run_ok(conv, NULL)) {
				die("tracekit convert");
			}
			if (tc_ok) {
				same &= compare(fam->name, "zstd", zst, tk_z, tc_z, "trace-cmd",
						reps, dir);
				same &= compare(fam->name, "none", none, tk_n, tc_n, "trace-cmd",
						reps, dir);
			} else {
				printf("%-13s trace-cmd is not installed: nothing to compare "
				       "with\n",
				       fam->name);
			}
			if (threads) {
				/*
				 * --threads: the default thread count against -j 1, on
				 * the machine as it is and on one CPU (taskset -c 0:
				 * report then runs one thread), so a ratio below 1
				 * says the second thread cost time.
				 */
				const char *paths[2] = {zst, none}, *labels[2] = {"zstd", "none"};

				for (int k = 0; k < 2; k++) {
					char *def[] = {(char *)tracekit, "report", "-i",
						       (char *)paths[k], NULL};
					char *one[] = {(char *)tracekit, "report", "-j", "1", "-i",
						       (char *)paths[k], NULL};
					char *pin[] = {"taskset",	 "-c",	   "0",
						       (char *)tracekit, "report", "-i",
						       (char *)paths[k], NULL};
					char *pin1[] = {
						"taskset", "-c", "0",  (char *)tracekit, "report",
						"-j",	   "1",	 "-i", (char *)paths[k], NULL};
					char label[16];

					same &= compare(fam->name, labels[k], paths[k], def, one,
							"tracekit -j 1", reps, dir);
					snprintf(label, sizeof(label), "%s@0", labels[k]);
					same &= compare(fam->name, label, paths[k], pin, pin1,
							"tracekit -j 1", reps, dir);
				}
			}
			if (base) {
				/*
				 * --base: another build (main's, say) on the same files,
				 * both with their default threads, in interleaved pairs:
				 * a ratio above 1 says this build is the faster.
				 */
				const char *bpaths[2] = {zst, none}, *blabels[2] = {"zstd", "none"};

				for (int k = 0; k < 2; k++) {
					char *ours[] = {(char *)tracekit, "report", "-i",
							(char *)bpaths[k], NULL};
					char *theirs[] = {(char *)base, "report", "-i",
							  (char *)bpaths[k], NULL};

					same &= compare(fam->name, blabels[k], bpaths[k], ours,
							theirs, "tracekit --base", reps, dir);
				}
			}
			if (jobs) {
				/*
				 * --jobs N (stop 21): -j N against -j 1, and against the
				 * base build's -j N, whatever the load: a ratio above 1
				 * says this build's N printers are the faster.
				 */
				const char *jpaths[2] = {zst, none}, *jlabels[2] = {"zstd", "none"};

				for (int k = 0; k < 2; k++) {
					char *ours[] = {(char *)tracekit,
							"report",
							"-j",
							(char *)jobs,
							"-i",
							(char *)jpaths[k],
							NULL};
					char *one[] = {(char *)tracekit,  "report", "-j", "1", "-i",
						       (char *)jpaths[k], NULL};
					char *theirs[] = {(char *)base, "report", "-j",
							  (char *)jobs, "-i",	  (char *)jpaths[k],
							  NULL};
					char label[24];

					snprintf(label, sizeof(label), "%s-j%s", jlabels[k], jobs);
					same &= compare(fam->name, label, jpaths[k], ours, one,
							"tracekit -j 1", reps, dir);
					if (base)
						same &= compare(fam->name, label, jpaths[k], ours,
								theirs, "tracekit --base -j N",
								reps, dir);
				}
			}
			if (!keep) {
				unlink(zst);
				unlink(none);
			}
		}
		if (perf_ok && fam->perf) {
			char *tk_p[] = {(char *)tracekit, "report", "-i", pd, NULL};
			char *ps[] = {"perf", "script", "-i", pd, NULL};

			if (!(reuse && !access(pd, R_OK)) && !record_perf(fam, steps, pd)) {
				printf("%-13s perf record failed\n", fam->name);
				continue;
			}
			same &= compare(fam->name, "perf", pd, tk_p, ps, "perf script", reps, dir);
			if (!keep)
				unlink(pd);
		}
	}
	if (!keep)
		rmdir(dir);
	/* --quick is the smoke test: its texts must be the other tools' byte for byte. */
	return quick && !same ? 1 : 0;
}
