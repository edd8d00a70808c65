// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-sched: `tracekit sched latency` against `perf sched latency` on one
 * perf.data, in the same run.
 *
 * The file is bench-perf's (sched_switch and sched_wakeup samples with the
 * running kernel's formats, 2 M by default): bench-sched runs
 * `bench-perf --quick --events N --keep FILE` to write it, then times
 * interleaved pairs of both commands with stdout to /dev/null and reports
 * the medians, the ratio and each one's peak RSS. --quick (what make check
 * runs) uses 20 k samples, one pair, and exits 1 unless both texts are
 * identical byte for byte. Without perf or tracefs access it prints
 * "SKIP: reason" and exits 77.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include "harness.h"

static void usage(void)
{
	fputs("usage: bench-sched [--quick] [--events N] [--reps N] [--tracekit PATH] "
	      "[--bench-perf PATH] [--keep FILE]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *bench_perf = BENCH_PERF, *keep = NULL;
	uint64_t events = 2000000;
	unsigned int reps = 5;
	bool quick = false;
	char dir[] = "/tmp/bench-sched-XXXXXX";
	char file[96], out_tk[96], out_perf[96], nbuf[32];
	struct stat sb;

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
		} else {
			usage();
		}
	}
	if (!events || !reps || reps > 16)
		usage();
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(file, sizeof(file), "%s/perf.data", dir);
	snprintf(out_tk, sizeof(out_tk), "%s/tk.txt", dir);
	snprintf(out_perf, sizeof(out_perf), "%s/perf.txt", dir);
	snprintf(nbuf, sizeof(nbuf), "%" PRIu64, events);
	if (keep)
		snprintf(file, sizeof(file), "%s", keep);

	/* bench-perf writes the file (and checks its own report once, --quick). */
	char *gen_argv[] = {(char *)bench_perf, "--quick",	  "--events", nbuf, "--keep", file,
			    "--tracekit",	(char *)tracekit, NULL};
	struct run g = run_tool(gen_argv, NULL);

	if (WIFEXITED(g.status) && WEXITSTATUS(g.status) == 77) {
		printf("SKIP: bench-perf cannot write the file (no tracefs access or no perf)\n");
		rmdir(dir);
		return 77;
	}
	if (!WIFEXITED(g.status) || WEXITSTATUS(g.status) || stat(file, &sb) < 0) {
		errno = 0;
		die("bench-perf failed to write the file");
	}
	settle_file(file);
	printf("file: %" PRIu64 " samples (sched_switch/sched_wakeup), %.1f MB\n", events,
	       (double)sb.st_size / 1e6);

	char *tk_argv[] = {(char *)tracekit, "sched", "latency", "-i", file, NULL};
	char *perf_argv[] = {"perf", "sched", "latency", "-i", file, NULL};
	int rc = 0;

	if (quick) {
		struct run tk = run_tool(tk_argv, out_tk), pf;

		if (!WIFEXITED(tk.status) || WEXITSTATUS(tk.status)) {
			errno = 0;
			die("tracekit sched latency failed");
		}
		pf = run_tool(perf_argv, out_perf);
		if (!WIFEXITED(pf.status) || WEXITSTATUS(pf.status)) {
			errno = 0;
			die("perf sched latency failed");
		}
		printf("tracekit sched latency: %8.3f s, perf sched latency %8.3f s\n", tk.seconds,
		       pf.seconds);
		if (files_equal(out_tk, out_perf)) {
			printf("outputs identical\n");
		} else {
			printf("outputs DIFFER: %s %s\n", out_tk, out_perf);
			rc = 1;
		}
	} else {
		struct pairs p = run_pairs(tk_argv, perf_argv, (int)reps);

		if (!p.rounds) {
			errno = 0;
			die("perf sched latency failed");
		}
		printf("tracekit sched latency: %8.3f s  %12.0f events/s  peak RSS %6ld MB  "
		       "(median "
		       "of %d)\n",
		       p.ours, (double)events / p.ours, p.ours_rss_kb / 1024, p.rounds);
		printf("perf sched latency:     %8.3f s  %12.0f events/s  peak RSS %6ld MB  "
		       "(median "
		       "of %d)\n",
		       p.theirs, (double)events / p.theirs, p.theirs_rss_kb / 1024, p.rounds);
		printf("ratio: tracekit sched latency is %.1fx perf sched latency (median of %d "
		       "interleaved pairs, %.1f-%.1f)\n",
		       p.ratio, p.rounds, p.ratio_lo, p.ratio_hi);
	}
	if (!rc) {
		unlink(out_tk);
		unlink(out_perf);
		if (!keep)
			unlink(file);
		rmdir(dir);
	}
	return rc;
}
