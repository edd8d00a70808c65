// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-analyze: tracekit's analyses beside the commands they replace, in
 * the same run: `sched timehist` (perf sched timehist), `sched latency`
 * (perf sched latency), `report --profile`
 * and `report -w` (trace-cmd's), `syscalls` (perf trace -s).
 *
 * The scheduler file is bench-perf's (sched_switch and sched_wakeup samples
 * with the running kernel's formats, 3 M by default): bench-analyze runs
 * `bench-perf --quick --events N --keep FILE`, converts it to a .dat with
 * `tracekit convert` for the trace-cmd pair, and times interleaved pairs
 * of each command (stdout to /dev/null), reporting the medians, the ratio
 * and each one's peak RSS. The syscalls pair needs a `perf trace record`
 * file: --syscalls FILE, else one is recorded around `perf bench sched
 * messaging` under /tmp/tracefs.lock (root and perf needed; otherwise the
 * pair is skipped and says so; --no-record skips it, as the smoke test
 * does, which may run under that lock already). --quick (20 k samples, one pair each) exits
 * 1 unless each pair printed the same text (the profile compared as
 * sorted lines: trace-cmd orders ties by heap address). Without perf or
 * tracefs access it prints "SKIP: reason" and exits 77. Each pair's line
 * gives wall and CPU time (user + system, from wait4) of both sides and
 * the median ratio of each: on a VM shared with other work the CPU time is
 * the steadier one. --only NAME runs one pair: timehist, timehist-s,
 * latency, profile, wakeup, syscalls, bounds.
 *
 * --feed-threads N sets TK_FEED_THREADS=N for tracekit (1: one thread;
 * ahead: a helper maps the perf.data in ahead of the walk, whatever the
 * load, src/lib/analyze/feed.c, "Mapping in ahead"; split: the walk
 * shared by both CPUs, "Both CPUs walk"; 2: the walk and the analysis on
 * two threads; unset: ahead when the load leaves 1.5 CPUs idle).
 * --one-cpu runs tracekit under `taskset -c 0` (the other tool as it is):
 * the analyses over perf.data run the walk and the analysis on two threads
 * when two CPUs are allowed (src/lib/analyze/feed.c, "Two CPUs"), and this
 * shows what one CPU gives. "bounds" says what no analysis of the file can
 * beat: `cat FILE >/dev/null` and a bare walk of the mapped perf.data (every
 * page touched, record headers followed, nothing decoded; bench-analyze
 * --walk FILE, in a child like the rest) and the same on both CPUs (--walk2
 * FILE: the data section split at a FINISHED_ROUND past its middle), each
 * paired with the perf command as if it were tracekit's, so the ratio
 * printed is the ceiling.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static void usage(void)
{
	fputs("usage: bench-analyze [--quick] [--events N] [--reps N] [--tracekit PATH] "
	      "[--bench-perf PATH] [--keep DIR] [--syscalls FILE] [--no-record] [--only NAME] "
	      "[--one-cpu] [--feed-threads N]\n       bench-analyze --walk PERF.DATA\n"
	      "       bench-analyze --walk2 PERF.DATA\n",
	      stderr);
	exit(2);
}

/*
 * @path mapped whole; *@off and *@size its perf_file_header's data
 * section (magic, size, attr_size, attrs {offset, size}, data {offset,
 * size}), checked to lie inside the file; *@maplen the mapping's length
 * (the descriptor is closed). Dies on any failure.
 */
static const uint8_t *map_data_section(const char *path, size_t *maplen, uint64_t *off,
				       uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	struct stat sb;
	const uint8_t *base;

	if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_size < 64)
		die(path);
	base = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED)
		die("mmap");
	memcpy(off, base + 40, 8);
	memcpy(size, base + 48, 8);
	if (*off > (uint64_t)sb.st_size || *size > (uint64_t)sb.st_size - *off) {
		errno = 0;
		die("not a perf.data file");
	}
	close(fd);
	*maplen = (size_t)sb.st_size;
	return base;
}

/*
 * --walk: the least any analysis of a perf.data does. The file mapped read
 * only, each record's 8-byte header read and the next one found from its
 * size; pages dropped behind as the feed drops them (RSS flat). Prints the
 * records seen so the work cannot be optimised away.
 */
static int bare_walk(const char *path)
{
	uint64_t off, size, pos, end, dropped = 0, n = 0, types = 0;
	size_t maplen;
	const uint8_t *base = map_data_section(path, &maplen, &off, &size);

	pos = off;
	end = off + size;
	while (end - pos >= 8) {
		uint32_t type;
		uint16_t sz;

		memcpy(&type, base + pos, 4);
		memcpy(&sz, base + pos + 6, 2);
		if (sz < 8 || sz > end - pos)
			break;
		types += type;
		n++;
		pos += sz;
		if (pos - dropped >= (8u << 20)) {
			uint64_t to = (pos - (4u << 20)) & ~(uint64_t)0xfffff;

			madvise((void *)(base + dropped), to - dropped, MADV_DONTNEED);
			dropped = to;
		}
	}
	printf("%" PRIu64 " records (type sum %" PRIu64 ")\n", n, types);
	munmap((void *)base, maplen);
	return 0;
}

/*
 * --walk2: the same bare walk on both CPUs, as the feed splits it: a
 * second thread starts just after the first FINISHED_ROUND's 8 bytes at
 * or past the data section's middle (8-byte steps), the first walks up to
 * there and must land on it (else it walks on alone: the guess was a
 * payload). Each drops its pages behind. The least an analysis walking
 * with both CPUs can take.
 */
struct half {
	const uint8_t *base;
	uint64_t from, to, n, types;
};

static void *walk_half(void *arg)
{
	struct half *h = arg;
	uint64_t pos = h->from, dropped = h->from & ~(uint64_t)0xfff;

	while (pos < h->to && h->to - pos >= 8) {
		uint32_t type;
		uint16_t sz;

		memcpy(&type, h->base + pos, 4);
		memcpy(&sz, h->base + pos + 6, 2);
		if (sz < 8)
			break;
		h->types += type;
		h->n++;
		pos += sz;
		if (pos - dropped >= (8u << 20)) {
			uint64_t to = (pos - (4u << 20)) & ~(uint64_t)0xfffff;

			madvise((void *)(h->base + dropped), to - dropped, MADV_DONTNEED);
			dropped = to;
		}
	}
	h->to = pos;
	return NULL;
}

static int bare_walk2(const char *path)
{
	static const uint8_t fr[8] = {68, 0, 0, 0, 0, 0, 8, 0};
	uint64_t off, size, mid, end;
	size_t maplen;
	const uint8_t *base = map_data_section(path, &maplen, &off, &size);
	struct half a, b;
	pthread_t t;

	end = off + size;
	for (mid = off + size / 2 / 8 * 8; mid + 8 <= end && memcmp(base + mid, fr, 8); mid += 8)
		;
	mid = mid + 8 <= end ? mid + 8 : end;
	a = (struct half){base, off, mid, 0, 0};
	b = (struct half){base, mid, end, 0, 0};
	if (pthread_create(&t, NULL, walk_half, &b))
		die("pthread_create");
	walk_half(&a);
	pthread_join(t, NULL);
	if (a.to != mid) {
		/* The guess was inside a record: the first thread walks the rest. */
		a.from = a.to;
		a.to = end;
		b.n = b.types = 0;
		walk_half(&a);
	}
	printf("%" PRIu64 " records (type sum %" PRIu64 ")\n", a.n + b.n, a.types + b.types);
	munmap((void *)base, maplen);
	return 0;
}

/* @argv behind `taskset -c 0` with --one-cpu; static storage, one per call site. */
static char **one_cpu(char **argv, bool one, char **buf, size_t cap)
{
	size_t n = 0;

	if (!one)
		return argv;
	buf[n++] = "taskset";
	buf[n++] = "-c";
	buf[n++] = "0";
	for (size_t i = 0; argv[i] && n + 1 < cap; i++)
		buf[n++] = argv[i];
	buf[n] = NULL;
	return buf;
}

static bool sorted_equal(const char *a, const char *b)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cmp -s <(sort '%s') <(sort '%s')", a, b);
	char *argv[] = {"bash", "-c", cmd, NULL};
	struct run r = run_tool(argv, NULL);

	return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
}

static int pair(const char *name, char **ours, char **theirs, bool quick, int reps, uint64_t events,
		const char *dir, bool stderr_theirs, bool sorted)
{
	char out_tk[160], out_th[160];

	if (quick) {
		snprintf(out_tk, sizeof(out_tk), "%s/%s.tk.txt", dir, name);
		snprintf(out_th, sizeof(out_th), "%s/%s.theirs.txt", dir, name);
		struct run tk = run_tool(ours, out_tk), th;

		if (!WIFEXITED(tk.status) || WEXITSTATUS(tk.status)) {
			printf("%s: tracekit failed\n", name);
			return 1;
		}
		if (stderr_theirs) {
			/* perf trace prints its summary on stderr. */
			char cmd[1024];
			size_t n = 0;

			for (int i = 0; theirs[i]; i++)
				n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "'%s' ", theirs[i]);
			snprintf(cmd + n, sizeof(cmd) - n, "2>'%s' >/dev/null", out_th);
			char *argv[] = {"bash", "-c", cmd, NULL};

			th = run_tool(argv, NULL);
		} else {
			th = run_tool(theirs, out_th);
		}
		if (!WIFEXITED(th.status) || WEXITSTATUS(th.status)) {
			printf("%s: %s failed\n", name, theirs[0]);
			return 1;
		}
		bool same = sorted ? sorted_equal(out_tk, out_th) : files_equal(out_tk, out_th);

		printf("%-22s tracekit %8.3f s, %s %8.3f s, outputs %s\n", name, tk.seconds,
		       theirs[0], th.seconds, same ? "identical" : "DIFFER");
		if (same) {
			unlink(out_tk);
			unlink(out_th);
		}
		return same ? 0 : 1;
	}
	struct pairs p = run_pairs(ours, theirs, reps);

	if (!p.rounds) {
		printf("%s: %s failed\n", name, theirs[0]);
		return 1;
	}
	printf("%-22s tracekit %7.3f s (cpu %6.3f) %10.0f ev/s %5ld MB | %-10s %7.3f s (cpu %6.3f) "
	       "%6ld MB | %5.1fx (%.1f-%.1f, %d pairs), cpu %5.1fx\n",
	       name, p.ours, p.ours_cpu, (double)events / p.ours, p.ours_rss_kb / 1024, theirs[0],
	       p.theirs, p.theirs_cpu, p.theirs_rss_kb / 1024, p.ratio, p.ratio_lo, p.ratio_hi,
	       p.rounds, p.cpu_ratio);
	return 0;
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *bench_perf = BENCH_PERF, *keep = NULL, *sysfile = NULL,
		   *only = NULL;
	uint64_t events = 3000000;
	unsigned int reps = 3;
	bool quick = false, record = true, one = false;
	char tmpdir[] = "/tmp/bench-analyze-XXXXXX";
	char file[160], dat[160], sys[160], nbuf[32];
	const char *dir;
	struct stat sb;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
			events = 20000;
			reps = 1;
		} else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
			events = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--tracekit") && i + 1 < argc) {
			tracekit = argv[++i];
		} else if (!strcmp(argv[i], "--bench-perf") && i + 1 < argc) {
			bench_perf = argv[++i];
		} else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
			keep = argv[++i];
		} else if (!strcmp(argv[i], "--syscalls") && i + 1 < argc) {
			sysfile = argv[++i];
		} else if (!strcmp(argv[i], "--no-record")) {
			record = false;
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--one-cpu")) {
			one = true;
		} else if (!strcmp(argv[i], "--feed-threads") && i + 1 < argc) {
			setenv("TK_FEED_THREADS", argv[++i], 1);
		} else if (!strcmp(argv[i], "--walk") && i + 1 < argc) {
			return bare_walk(argv[i + 1]);
		} else if (!strcmp(argv[i], "--walk2") && i + 1 < argc) {
			return bare_walk2(argv[i + 1]);
		} else {
			usage();
		}
	}
	if (!events || !reps || reps > 16)
		usage();
	if (keep) {
		mkdir(keep, 0755);
		dir = keep;
	} else {
		if (!mkdtemp(tmpdir))
			die("mkdtemp");
		dir = tmpdir;
	}
	snprintf(file, sizeof(file), "%s/sched.data", dir);
	snprintf(dat, sizeof(dat), "%s/sched.dat", dir);
	snprintf(sys, sizeof(sys), "%s/syscalls.data", dir);
	snprintf(nbuf, sizeof(nbuf), "%" PRIu64, events);

	if (stat(file, &sb) < 0 || !keep) {
		char *gen_argv[] = {
			(char *)bench_perf, "--quick",	      "--events", nbuf, "--keep", file,
			"--tracekit",	    (char *)tracekit, NULL};
		struct run g = run_tool(gen_argv, NULL);

		if (WIFEXITED(g.status) && WEXITSTATUS(g.status) == 77) {
			printf("SKIP: bench-perf cannot write the file (no tracefs access or no "
			       "perf)\n");
			return 77;
		}
		if (!WIFEXITED(g.status) || WEXITSTATUS(g.status) || stat(file, &sb) < 0) {
			errno = 0;
			die("bench-perf failed to write the file");
		}
		char *conv_argv[] = {(char *)tracekit, "convert", "-o", dat, file, NULL};
		struct run c = run_tool(conv_argv, NULL);

		if (!WIFEXITED(c.status) || WEXITSTATUS(c.status)) {
			errno = 0;
			die("tracekit convert failed");
		}
	}
	settle_file(file);
	settle_file(dat);
	stat(file, &sb);
	printf("file: %" PRIu64 " samples (sched_switch/sched_wakeup), perf.data %.1f MB", events,
	       (double)sb.st_size / 1e6);
	stat(dat, &sb);
	printf(", .dat %.1f MB\n", (double)sb.st_size / 1e6);

	char *th_tk[] = {(char *)tracekit, "sched", "timehist", "-i", file, NULL};
	char *th_pf[] = {"perf", "sched", "timehist", "-i", file, NULL};
	char *thS_tk[] = {(char *)tracekit, "sched", "timehist", "-s", "-i", file, NULL};
	char *thS_pf[] = {"perf", "sched", "timehist", "-s", "-i", file, NULL};
	char *lat_tk[] = {(char *)tracekit, "sched", "latency", "-i", file, NULL};
	char *lat_pf[] = {"perf", "sched", "latency", "-i", file, NULL};
	char *pr_tk[] = {(char *)tracekit, "report", "--profile", dat, NULL};
	char *pr_tc[] = {"trace-cmd", "report", "--profile", "-i", dat, NULL};
	char *w_tk[] = {(char *)tracekit, "report", "-w", dat, NULL};
	char *w_tc[] = {"trace-cmd", "report", "-w", "-i", dat, NULL};

	char *cat_argv[] = {"bash", "-c", "cat \"$0\" >/dev/null", file, NULL};
	char *walk_argv[] = {argv[0], "--walk", file, NULL};
	char *walk2_argv[] = {argv[0], "--walk2", file, NULL};
	char *b1[16], *b2[16], *b3[16], *b4[16], *b5[16];

	if (!only || !strcmp(only, "timehist"))
		rc |= pair("sched timehist", one_cpu(th_tk, one, b1, 16), th_pf, quick, (int)reps,
			   events, dir, false, false);
	if (!only || !strcmp(only, "timehist-s"))
		rc |= pair("sched timehist -s", one_cpu(thS_tk, one, b2, 16), thS_pf, quick,
			   (int)reps, events, dir, false, false);
	if (!only || !strcmp(only, "latency"))
		rc |= pair("sched latency", one_cpu(lat_tk, one, b3, 16), lat_pf, quick, (int)reps,
			   events, dir, false, false);
	if (!only || !strcmp(only, "profile"))
		rc |= pair("report --profile", one_cpu(pr_tk, one, b4, 16), pr_tc, quick, (int)reps,
			   events, dir, false, true);
	if (!only || !strcmp(only, "wakeup"))
		rc |= pair("report -w", one_cpu(w_tk, one, b5, 16), w_tc, quick, (int)reps, events,
			   dir, false, false);
	if (!quick && (!only || !strcmp(only, "bounds"))) {
		/* The ceilings: the least work in place of tracekit, against each perf command. */
		rc |= pair("bound: cat", cat_argv, lat_pf, false, (int)reps, events, dir, false,
			   false);
		rc |= pair("bound: bare walk", walk_argv, lat_pf, false, (int)reps, events, dir,
			   false, false);
		rc |= pair("bound: bare walk", walk_argv, thS_pf, false, (int)reps, events, dir,
			   false, false);
		rc |= pair("bound: walk, 2 CPUs", walk2_argv, lat_pf, false, (int)reps, events, dir,
			   false, false);
		rc |= pair("bound: walk, 2 CPUs", walk2_argv, thS_pf, false, (int)reps, events, dir,
			   false, false);
	}

	if (!only || !strcmp(only, "syscalls")) {
		if (!sysfile && !record) {
			printf("syscalls: skipped (--no-record and no --syscalls FILE)\n");
		} else if (!sysfile) {
			char cmd[512];

			snprintf(cmd, sizeof(cmd),
				 "flock /tmp/tracefs.lock perf trace record -o '%s' -- perf bench "
				 "sched messaging -g 2 -l %d >/dev/null 2>&1",
				 sys, quick ? 10 : 600);
			char *rec_argv[] = {"bash", "-c", cmd, NULL};
			struct run r = run_tool(rec_argv, NULL);

			if (WIFEXITED(r.status) && !WEXITSTATUS(r.status))
				sysfile = sys;
			else
				printf("syscalls: skipped (perf trace record failed: needs root "
				       "and "
				       "tracefs)\n");
		}
		if (sysfile) {
			char *sy_tk[] = {(char *)tracekit, "syscalls", (char *)sysfile, NULL};
			char *sy_pf[] = {"perf", "trace", "-s", "-i", (char *)sysfile, NULL};
			char cnt[64] = "0";
			uint64_t n = 0;
			char cmdn[512];

			/* The pair's event count: perf trace -s's "N events" of each thread. */
			snprintf(cmdn, sizeof(cmdn),
				 "%s syscalls --json '%s' | python3 -c 'import json,sys; "
				 "print(json.load(sys.stdin)[\"events\"])' > '%s/n.txt'",
				 tracekit, sysfile, dir);
			char *n_argv[] = {"bash", "-c", cmdn, NULL};

			run_tool(n_argv, NULL);
			snprintf(cmdn, sizeof(cmdn), "%s/n.txt", dir);
			FILE *fn = fopen(cmdn, "r");

			if (fn) {
				if (fgets(cnt, sizeof(cnt), fn))
					n = strtoull(cnt, NULL, 10);
				fclose(fn);
				unlink(cmdn);
			}
			stat(sysfile, &sb);
			printf("syscalls file: %" PRIu64 " events, %.1f MB\n", n,
			       (double)sb.st_size / 1e6);
			rc |= pair("syscalls", sy_tk, sy_pf, quick, (int)reps, n ? n : 1, dir, true,
				   false);
		}
	}
	if (!rc && !keep) {
		unlink(file);
		unlink(dat);
		unlink(sys);
		rmdir(dir);
	}
	return rc;
}
