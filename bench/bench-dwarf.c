// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-dwarf: tracekit report against perf script on one --call-graph
 * dwarf profile, in one run.
 *
 * Two workloads. "big" (the default, what make bench runs) profiles a
 * real-sized -O2 -g program: tracekit itself, built debugoptimized from
 * SOURCE_ROOT into a meson build directory beside this binary
 * (bench/dwarf-workload, reused by later runs), reporting a DWARF profile
 * with inline frames: hundreds of functions, deep stacks through libdw and
 * libc (whose detached, compressed DWARF libc6-dbg provides), recorded
 * with perf's default --call-graph dwarf (8 kB stack copies) at -F 10000
 * (2-3 k samples, the size of the profile). "small"
 * (--quick, make check's) profiles a small C program (-O2 -g, no frame
 * pointers: only its CFI unwinds it; an inlined function, a qsort
 * callback into libc, getppid calls for kernel frames) with dwarf,4096.
 * The big workload's input is that program's profile.
 *
 * It records with Debian's perf (perf record -N -e cpu-clock),
 * exits 1 unless tracekit report prints exactly what perf script prints,
 * then times in interleaved pairs (harness.h's run_pairs_with() over
 * run_all(), which counts the CPU time of the tools' children too):
 *
 *   tracekit report FILE              vs perf script -i FILE
 *   tracekit report --no-inline FILE  vs perf script --no-inline -i FILE
 *
 * Each line gives the median wall and CPU (user + system, reaped children
 * included: perf's addr2line) time of each, samples per CPU second, the
 * ratios perf / tracekit (wall: median, min-max over the pairs; CPU:
 * median) and tracekit's peak RSS. Needs root, perf and cc (big: meson
 * and ninja too): otherwise "SKIP: reason", exit 77. --quick: the small
 * workload, a short profile, one pair each; --rounds N more pairs; --keep
 * FILE keeps the profile (its binaries stay only for big).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char prog_src[] =
	"#include <stdlib.h>\n"
	"#include <unistd.h>\n"
	"volatile unsigned long sink;\n"
	"static int cmp(const void *a, const void *b)\n"
	"{\n"
	"	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;\n"
	"	return (x > y) - (x < y);\n"
	"}\n"
	"__attribute__((noinline)) static unsigned long leaf(unsigned long n)\n"
	"{\n"
	"	unsigned long s = 0;\n"
	"	for (unsigned long i = 0; i < n; i++)\n"
	"		s += i * i ^ (s >> 3);\n"
	"	return s;\n"
	"}\n"
	"static inline unsigned long middle(unsigned long n) { return leaf(n) + leaf(n / 2); }\n"
	"__attribute__((noinline)) unsigned long outer(unsigned long n)\n"
	"{\n"
	"	unsigned long s = 0;\n"
	"	for (unsigned k = 0; k < 4; k++)\n"
	"		s += middle(n + k + (sink & 1));\n"
	"	return s;\n"
	"}\n"
	"__attribute__((noinline)) void sorter(unsigned *v, size_t n)\n"
	"{\n"
	"	for (size_t i = 0; i < n; i++)\n"
	"		v[i] = (unsigned)(i * 2654435761u);\n"
	"	qsort(v, n, sizeof(*v), cmp);\n"
	"}\n"
	"__attribute__((noinline)) void sys(void)\n"
	"{\n"
	"	for (int i = 0; i < 200; i++)\n"
	"		sink += (unsigned long)getppid();\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 0) : 100;\n"
	"	unsigned *v = malloc(20000 * sizeof(*v));\n"
	"	for (unsigned long i = 0; i < rounds && v; i++) {\n"
	"		sink += outer(100000 + i);\n"
	"		sorter(v, 20000);\n"
	"		sys();\n"
	"	}\n"
	"	free(v);\n"
	"	return 0;\n"
	"}\n";

static int run_quiet(char *const argv[])
{
	struct run r = run_tool(argv, NULL);

	return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 1;
}

/* Samples in a perf script text: the lines that start a sample (not indented). */
static long count_samples(const char *path)
{
	char line[4096];
	long n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\t' && line[0] != '\n')
			n++;
	fclose(f);
	return n;
}

static void print_pair(const char *what, const struct pairs *p, long samples)
{
	if (!p->rounds) {
		printf("%-26s perf failed: not timed\n", what);
		return;
	}
	printf("%-26s tracekit %.3f s wall, %.3f s CPU (%.0f samples/CPU s)  perf %.3f s wall, "
	       "%.3f s CPU (%.0f samples/CPU s)  perf/tracekit wall %.1fx (%.1f-%.1f), CPU "
	       "%.1fx; tracekit peak RSS %ld MB\n",
	       what, p->ours, p->ours_cpu, (double)samples / p->ours_cpu, p->theirs, p->theirs_cpu,
	       (double)samples / p->theirs_cpu, p->ratio, p->ratio_lo, p->ratio_hi, p->cpu_ratio,
	       p->ours_rss_kb / 1024);
}

/* User + system seconds of the reaped children so far. */
static double children_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/*
 * run_tool(), with the CPU time of everything the tool started: perf
 * script runs addr2line for inline frames and exits without waiting for
 * it, so the tool's own rusage leaves that out (0.12 s of 0.49 s here).
 * As the children's subreaper (main()) this waits for the orphans too.
 */
static struct run run_all(char *const argv[])
{
	double cpu0 = children_cpu();
	struct run r = run_tool(argv, NULL);

	while (wait(NULL) > 0)
		;
	r.cpu_seconds = children_cpu() - cpu0;
	return r;
}

/*
 * The big workload's program: tracekit built debugoptimized (-O2 -g) from
 * SOURCE_ROOT in bench/dwarf-workload beside this binary; its path in
 * @out. 77 when meson or ninja is missing, 1 when the build fails.
 */
static int build_workload(char *out, size_t size)
{
	char self[4096], dir[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	struct stat st;

	if (n <= 0)
		return 1;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return 1;
	*slash = 0;
	snprintf(dir, sizeof(dir), "%s/dwarf-workload", self);
	snprintf(out, size, "%s/src/cli/tracekit", dir);
	{
		char *const mprobe[] = {"meson", "--version", NULL};
		char *const nprobe[] = {"ninja", "--version", NULL};

		if (run_quiet(mprobe) || run_quiet(nprobe))
			return 77;
	}
	snprintf(self, sizeof(self), "%s/build.ninja", dir);
	if (stat(self, &st)) {
		char *const setup[] = {
			"meson", "setup", dir, SOURCE_ROOT, "--buildtype=debugoptimized", NULL};

		if (run_quiet(setup))
			return 1;
	}
	{
		char *const build[] = {"ninja", "-C", dir, "src/cli/tracekit", NULL};

		return run_quiet(build) ? 1 : 0;
	}
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *keep = NULL, *workload = "big";
	char dir[] = "/tmp/tk-bench-dwarf.XXXXXX", src[128], prog[128], data[128], a[128], b[128],
	     rounds_arg[32], small[128], big_prog[4200];
	int rounds = 5;
	bool quick = false, big;
	long samples;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--tracekit") && i + 1 < argc)
			tracekit = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--workload") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "big") || !strcmp(argv[i + 1], "small")))
			workload = argv[++i];
		else {
			fprintf(stderr, "usage: bench-dwarf [--quick] [--workload big|small] "
					"[--tracekit PATH] [--rounds N] [--keep FILE]\n");
			return 2;
		}
	}
	if (quick) {
		rounds = 1;
		workload = "small";
	}
	big = !strcmp(workload, "big");
	/* perf's orphaned addr2line comes to us: its CPU time is perf's (run_all()). */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (geteuid()) {
		printf("SKIP: perf record needs root here\n");
		return 77;
	}
	{
		char *const probe[] = {"perf", "--version", NULL};
		char *const ccprobe[] = {"cc", "--version", NULL};

		if (run_quiet(probe)) {
			printf("SKIP: perf is not installed\n");
			return 77;
		}
		if (run_quiet(ccprobe)) {
			printf("SKIP: no C compiler for the profiled program\n");
			return 77;
		}
	}
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(src, sizeof(src), "%s/prog.c", dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(data, sizeof(data), "%s/dwarf.data", dir);
	snprintf(a, sizeof(a), "%s/perf.txt", dir);
	snprintf(b, sizeof(b), "%s/tracekit.txt", dir);
	snprintf(small, sizeof(small), "%s/small.data", dir);
	snprintf(rounds_arg, sizeof(rounds_arg), "%d", quick ? 30 : big ? 3000 : 600);
	f = fopen(src, "w");
	if (!f || fputs(prog_src, f) < 0 || fclose(f))
		die(src);
	{
		char *const cc[] = {"cc", "-O2", "-g", "-fomit-frame-pointer",
				    "-o", prog,	 src,  NULL};
		char *const rec[] = {"perf",	     "record",	   "-q", "-N",
				     "-e",	     "cpu-clock",  "-F", "4000",
				     "--call-graph", "dwarf,4096", "-o", big ? small : data,
				     prog,	     rounds_arg,   NULL};

		if (run_quiet(cc))
			die("cc");
		if (run_quiet(rec)) {
			errno = 0;
			die("perf record --call-graph dwarf");
		}
	}
	if (big) {
		char *const rec[] = {"perf",   "record", "-q",		 "-N",	  "-e", "cpu-clock",
				     "-F",     "10000",	 "--call-graph", "dwarf", "-o", data,
				     big_prog, "report", small,		 NULL};
		int ret = build_workload(big_prog, sizeof(big_prog));

		if (ret == 77) {
			printf("SKIP: meson and ninja build the big workload (or use --workload "
			       "small)\n");
			return 77;
		}
		if (ret) {
			errno = 0;
			die("building the big workload (tracekit -O2 -g) from " SOURCE_ROOT);
		}
		if (run_quiet(rec)) {
			errno = 0;
			die("perf record --call-graph dwarf of tracekit report");
		}
		unlink(small);
	}
	{
		char *const ps[] = {"perf", "script", "-i", data, NULL};
		char *const tk[] = {(char *)tracekit, "report", data, NULL};
		struct run rp = run_tool(ps, a), rt = run_tool(tk, b);

		if (!WIFEXITED(rt.status) || WEXITSTATUS(rt.status)) {
			errno = 0;
			die("tracekit report");
		}
		samples = count_samples(a);
		if (!WIFEXITED(rp.status) || WEXITSTATUS(rp.status) || samples <= 0) {
			errno = 0;
			die("perf script");
		}
		printf("profile (%s): %ld samples, --call-graph %s; texts %s\n",
		       big ? "big: tracekit -O2 -g reporting a DWARF profile" : "small program",
		       samples, big ? "dwarf (8192)" : "dwarf,4096",
		       files_equal(a, b) ? "identical" : "DIFFER");
		if (!files_equal(a, b)) {
			fprintf(stderr,
				"bench-dwarf: tracekit report and perf script differ (%s, %s)\n", a,
				b);
			return 1;
		}
	}
	{
		char *const tk[] = {(char *)tracekit, "report", data, NULL};
		char *const ps[] = {"perf", "script", "-i", data, NULL};
		char *const tkn[] = {(char *)tracekit, "report", "--no-inline", data, NULL};
		char *const psn[] = {"perf", "script", "--no-inline", "-i", data, NULL};
		struct pairs p;

		p = run_pairs_with(tk, ps, rounds, run_all);
		print_pair("report vs perf script", &p, samples);
		p = run_pairs_with(tkn, psn, rounds, run_all);
		print_pair("--no-inline, both", &p, samples);
	}
	if (keep) {
		char *const mv[] = {"cp", data, (char *)keep, NULL};

		run_quiet(mv);
	}
	{
		char *const rm[] = {"rm", "-rf", dir, NULL};

		run_quiet(rm);
	}
	return 0;
}
