// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-pftrace: `tracekit convert FILE -o OUT.pftrace` on bench-report's
 * 3 M-event .dat, per codec, with the figures issue 19 asks for.
 *
 * The file is bench-report's (real formats from the sample .dat; sched,
 * irq, softirq, hrtimer, timer and print records on two CPUs; v7
 * uncompressed): bench-pftrace runs `bench-report --events N --keep FILE`
 * to write it, and once more for a tenth of it. `tracekit convert
 * --compression zstd` makes the zstd .dat the sizes are compared with.
 * Then, for each codec of the export (none, zstd, the default, and zlib),
 * --reps runs of the conversion, each reaped with wait4() for its CPU time
 * (user + system) and peak RSS. Each line gives the median wall time, the
 * events per second of wall time and per CPU second (the export runs on
 * one thread, so that is per core), the output's size against the zstd
 * .dat's, and the peak RSS. The last line compares the peak RSS of the
 * default export of the tenth and of the whole file: memory is per CPU
 * and per thread, so it should not grow with the input.
 *
 * --baseline PATH: another tracekit (a build of main, say) converts the
 * same file with the default codec in turns with ours, --reps rounds, and
 * the line gives both CPU medians and their ratio: a change's effect
 * measured in the same minutes, which a shared machine needs.
 *
 * --perf-data FILE: the same for a perf.data (perf sched record's, say):
 * its ftrace events and samples are counted by one export in this process
 * (tk_pftrace_write_perf() into /dev/null), then tracekit converts it
 * --reps times (in turns with --baseline when given).
 *
 * --quick (what make check runs): 20 k events, one run per codec, and
 * the tracekit exit status checked: the benchmark cannot rot.
 */
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <tracekit/perfdata.h>
#include <tracekit/pftrace.h>

#include "harness.h"

static void usage(void)
{
	fputs("usage: bench-pftrace [--quick] [--events N] [--reps N] [--tracekit PATH] "
	      "[--bench-report PATH] [--keep DIR] [--baseline PATH] [--perf-data FILE]\n",
	      stderr);
	exit(2);
}

struct cpu_run {
	double wall, cpu;
	long maxrss_kb;
	int status;
};

/* run_tool() in this bench's terms. */
static struct cpu_run run_cpu(char *const argv[])
{
	struct run r = run_tool(argv, NULL);

	return (struct cpu_run){.wall = r.seconds,
				.cpu = r.cpu_seconds,
				.maxrss_kb = r.maxrss_kb,
				.status = r.status};
}

static uint64_t file_size(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		die(path);
	return (uint64_t)sb.st_size;
}

static void make_file(const char *bench_report, uint64_t events, const char *path)
{
	char nbuf[32];

	snprintf(nbuf, sizeof(nbuf), "%" PRIu64, events);
	char *argv[] = {(char *)bench_report, "--events",  nbuf,	 "--keep",    (char *)path,
			"--no-trace-cmd",     "--no-perf", "--tracekit", "/bin/true", NULL};
	struct run r = run_tool(argv, NULL);

	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
		errno = 0;
		die("bench-report failed to write the file");
	}
	settle_file(path);
}

/* Median of @n runs of converting @in to @out with @codec. */
static struct cpu_run convert(const char *tracekit, const char *in, const char *out,
			      const char *codec, unsigned int reps)
{
	char *argv[] = {(char *)tracekit, "convert",	   "-q",	  (char *)in, "-o",
			(char *)out,	  "--compression", (char *)codec, NULL};
	double wall[16], cpu[16];
	struct cpu_run m = {0};

	for (unsigned int i = 0; i < reps; i++) {
		struct cpu_run r = run_cpu(argv);

		if (!WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
			errno = 0;
			fprintf(stderr, "bench-pftrace: %s convert %s --compression %s failed\n",
				tracekit, in, codec);
			exit(1);
		}
		wall[i] = r.wall;
		cpu[i] = r.cpu;
		if (r.maxrss_kb > m.maxrss_kb)
			m.maxrss_kb = r.maxrss_kb;
	}
	qsort(wall, reps, sizeof(double), cmp_double);
	qsort(cpu, reps, sizeof(double), cmp_double);
	m.wall = wall[reps / 2];
	m.cpu = cpu[reps / 2];
	return m;
}

/*
 * The default export of @in by @tracekit, and by @baseline in turns when
 * given: one line with events per CPU second of each and their ratio.
 */
static void versus(const char *what, const char *tracekit, const char *baseline, const char *in,
		   const char *out, uint64_t events, unsigned int reps)
{
	char *ours[] = {(char *)tracekit, "convert", "-q", (char *)in, "-o", (char *)out, NULL};
	char *theirs[] = {(char *)baseline, "convert", "-q", (char *)in, "-o", (char *)out, NULL};
	struct pairs p;

	if (!baseline) {
		struct cpu_run m = convert(tracekit, in, out, "zstd", reps);

		printf("%s: %7.3f s  %6.2f M events/s per core (%.3f s CPU, %" PRIu64
		       " events, median of %u)\n",
		       what, m.wall, (double)events / m.cpu / 1e6, m.cpu, events, reps);
		return;
	}
	p = run_pairs(ours, theirs, (int)reps);
	if (!p.rounds) {
		errno = 0;
		die("the baseline tracekit failed");
	}
	printf("%s: %6.2f M events/s per core (%.3f s CPU) against the baseline's %6.2f (%.3f s "
	       "CPU): %.3fx its CPU time (median of %d rounds in turn)\n",
	       what, (double)events / p.ours_cpu / 1e6, p.ours_cpu,
	       (double)events / p.theirs_cpu / 1e6, p.theirs_cpu, 1 / p.cpu_ratio, p.rounds);
}

/* A perf.data's ftrace events and samples, as the export counts them. */
static uint64_t perf_events(const char *path)
{
	struct tk_pftrace_stats st;
	struct tk_perfdata *pd = tk_perfdata_open(path);
	int fd = open("/dev/null", O_WRONLY);

	if (!pd || fd < 0 || tk_pftrace_write_perf(pd, fd, "/dev/null", NULL, &st) < 0)
		die(path);
	close(fd);
	tk_perfdata_close(pd);
	return st.events + st.samples;
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *bench_report = BENCH_REPORT, *keep = NULL;
	const char *baseline = NULL, *perf_data = NULL;
	static const char *const codecs[] = {"none", "zstd", "zlib"};
	uint64_t events = 3000000, zsize;
	unsigned int reps = 5;
	char dir[] = "/tmp/bench-pftrace-XXXXXX";
	char file[4200], small[4200], zdat[4200], out[4200];
	struct cpu_run whole = {0}, tenth;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			events = 20000;
			reps = 1;
		} else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
			events = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--tracekit") && i + 1 < argc) {
			tracekit = argv[++i];
		} else if (!strcmp(argv[i], "--bench-report") && i + 1 < argc) {
			bench_report = argv[++i];
		} else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
			keep = argv[++i];
		} else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
			baseline = argv[++i];
		} else if (!strcmp(argv[i], "--perf-data") && i + 1 < argc) {
			perf_data = argv[++i];
		} else {
			usage();
		}
	}
	if (events < 10 || !reps || reps > 16)
		usage();
	if (keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			die(dir);
	} else if (!mkdtemp(dir)) {
		die("mkdtemp");
	}
	snprintf(file, sizeof(file), "%s/bench.dat", dir);
	snprintf(small, sizeof(small), "%s/tenth.dat", dir);
	snprintf(zdat, sizeof(zdat), "%s/bench-zstd.dat", dir);
	snprintf(out, sizeof(out), "%s/out.pftrace", dir);

	make_file(bench_report, events, file);
	make_file(bench_report, events / 10, small);
	{
		char *zargv[] = {(char *)tracekit, "convert", "-q", file, "-o", zdat,
				 "--compression",  "zstd",    NULL};
		struct run r = run_tool(zargv, NULL);

		if (!WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
			errno = 0;
			die("tracekit convert --compression zstd failed");
		}
	}
	zsize = file_size(zdat);
	printf("file: %" PRIu64 " events, %.1f MB v7 uncompressed, %.1f MB v7 zstd\n", events,
	       (double)file_size(file) / 1e6, (double)zsize / 1e6);

	for (size_t k = 0; k < sizeof(codecs) / sizeof(codecs[0]); k++) {
		struct cpu_run m = convert(tracekit, file, out, codecs[k], reps);
		uint64_t size = file_size(out);

		printf("convert -> .pftrace (%-4s): %7.3f s  %6.2f M events/s  %6.2f M events/s "
		       "per core (%.3f s CPU)  %7.1f MB = %.2fx the zstd .dat  peak RSS %5.1f MB "
		       "(median of %u)\n",
		       codecs[k], m.wall, (double)events / m.wall / 1e6,
		       (double)events / m.cpu / 1e6, m.cpu, (double)size / 1e6,
		       (double)size / (double)zsize, (double)m.maxrss_kb / 1024, reps);
		if (!strcmp(codecs[k], "zstd"))
			whole = m;
	}
	if (baseline)
		versus("default (zstd) export", tracekit, baseline, file, out, events, reps);
	if (perf_data)
		versus("perf.data -> .pftrace (zstd)", tracekit, baseline, perf_data, out,
		       perf_events(perf_data), reps);
	tenth = convert(tracekit, small, out, "zstd", reps);
	printf("memory: peak RSS %.1f MB at %" PRIu64 " events, %.1f MB at %" PRIu64
	       " (10x the input: %.2fx the memory)\n",
	       (double)tenth.maxrss_kb / 1024, events / 10, (double)whole.maxrss_kb / 1024, events,
	       (double)whole.maxrss_kb / (double)(tenth.maxrss_kb ? tenth.maxrss_kb : 1));
	if (!keep) {
		unlink(file);
		unlink(small);
		unlink(zdat);
		unlink(out);
		rmdir(dir);
	}
	return 0;
}
