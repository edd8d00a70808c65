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
 * The big workload's input is that program's profile. "long" is the
 * small program run as long as for the big workload's input (3 000
 * rounds), sampled at 10 kHz with perf's default 8 kB stack copies:
 * 25-35 k samples, ~250 MB, so that the cost per sample shows beside the
 * fixed costs (loading binaries, DWARF, kallsyms) that dominate 2 k
 * samples. (tracekit itself cannot be the long workload's program: its
 * report now runs ~0.1 s whatever its input, and a shell loop of runs
 * adds exec'd children, whose stacks perf 6.1 unwinds differently from
 * tracekit, on libdwfl as on the rule stepper: not yet reproduced.)
 * "inline" is where inline frames are the work: a program generated here
 * (write_inline_src()) of INLINE_KERNELS functions, each a nest of
 * always_inline functions around a loop, built -O2 -g, sampled at 10 kHz
 * with dwarf,4096: ~25 k samples at ~6 500 distinct addresses, each
 * three to five inline frames deep, so that perf script's addr2line
 * answers thousands of queries (perf runs one addr2line -i -f per binary
 * and asks it once per distinct address).
 *
 * It records with Debian's perf (perf record -N -e cpu-clock),
 * exits 1 unless tracekit report prints exactly what perf script prints,
 * then times in interleaved pairs (harness.h's run_pairs_with() over
 * run_all(), which counts the CPU time of the tools' children too):
 *
 *   tracekit report FILE              vs perf script -i FILE
 *   tracekit report --no-inline FILE  vs perf script --no-inline -i FILE
 *
 * and, but for --quick, the same on two --time windows, texts checked
 * identical first: the first sample alone (the window is a microsecond:
 * maybe a few), the fixed cost of reading the file and loading what one
 * sample needs; and the first quarter of the samples. The marginal cost
 * per sample is (full - quarter) / (samples - quarter's samples): the
 * DWARF and kallsyms loaded on first use are in both runs. The untimed
 * checks leave the inflated copy of libc's debug file in tracekit's
 * build-id cache (~/.debug/.tk-inflated, debug-inflate.c): every timed
 * report is a second report, as every timed perf script is.
 *
 * Each line gives the median wall and CPU (user + system, reaped children
 * included: perf's addr2line) time of each, samples per CPU second, the
 * ratios perf / tracekit (wall: median, min-max over the pairs; CPU:
 * median), tracekit's and perf's peak RSS and the 1-minute load average. Needs root, perf and cc
 * (big: meson and ninja too): otherwise "SKIP: reason", exit 77. --quick: the small workload, a
 * short profile, one pair each, no windows; --rounds N more pairs; --keep FILE keeps the profile
 * and, for the small, long and inline workloads, the temporary directory of the program it
 * profiled (its path is printed: a kept profile of a deleted program names none of its symbols,
 * which made such a profile useless for callgrind runs); big's program stays in build/bench.
 */
#include <errno.h>
#include <stdbool.h>
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

/*
 * The inline workload's program: INLINE_KERNELS functions work<k>(), each
 * inlining stage<k>(), which inlines step<k>() twice, whose loop inlines
 * round<k>() twice, each inlining mix<k>() three times: five frames at
 * most samples, ~40 distinct addresses per kernel's loop (6 500 in all on
 * 25 k samples). Constants differ per kernel so that no two bodies fold
 * into one. main() runs each in turn, argv[1] times.
 */
#define INLINE_KERNELS 160
#define INLINE_ROUNDS  2500
#define STR_(x)	       #x
#define STR(x)	       STR_(x)

static int write_inline_src(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs("#include <stdlib.h>\nvolatile unsigned long sink;\n"
	      "#define AI static inline __attribute__((always_inline))\n",
	      f);
	for (int k = 0; k < INLINE_KERNELS; k++)
		fprintf(f,
			"AI unsigned long mix%d(unsigned long x) { return (x * %uul) ^ (x >> %d); "
			"}\n"
			"AI unsigned long round%d(unsigned long x, unsigned long i)\n"
			"{ x = mix%d(x + i); x = mix%d(x ^ (i << %d)); return mix%d(x + %dul); }\n"
			"AI unsigned long step%d(unsigned long x, unsigned long n)\n"
			"{ for (unsigned long i = 0; i < n; i++) { x = round%d(x, i); "
			"x = round%d(x ^ %dul, i + 1); } return x; }\n"
			"AI unsigned long stage%d(unsigned long x, unsigned long n)\n"
			"{ return step%d(x, n) + step%d(x ^ %dul, n / %d); }\n"
			"__attribute__((noinline)) unsigned long work%d(unsigned long x, unsigned "
			"long n)\n{ return stage%d(x, n) ^ (x >> %d); }\n",
			k, 2654435761u + 2u * (unsigned)k, 3 + k % 29, k, k, k, 1 + k % 7, k,
			977 + k, k, k, k, 7 + k, k, k, k, k + 7, 2 + k % 3, k, k, k % 13 + 1);
	fputs("int main(int argc, char **argv)\n{\n"
	      "\tunsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 0) : 10;\n"
	      "\tfor (unsigned long r = 0; r < rounds; r++) {\n",
	      f);
	for (int k = 0; k < INLINE_KERNELS; k++)
		fprintf(f, "\t\tsink += work%d(sink + r, 500);\n", k);
	fputs("\t}\n\treturn 0;\n}\n", f);
	return fclose(f);
}

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
	double load[1] = {0};

	getloadavg(load, 1);
	if (!p->rounds) {
		printf("%-26s perf failed: not timed\n", what);
		return;
	}
	printf("%-26s tracekit %.3f s wall, %.3f s CPU (%.0f samples/CPU s)  perf %.3f s wall, "
	       "%.3f s CPU (%.0f samples/CPU s)  perf/tracekit wall %.1fx (%.1f-%.1f), CPU "
	       "%.1fx; peak RSS tracekit %ld MB, perf %ld MB; load %.2f\n",
	       what, p->ours, p->ours_cpu, (double)samples / p->ours_cpu, p->theirs, p->theirs_cpu,
	       (double)samples / p->theirs_cpu, p->ratio, p->ratio_lo, p->ratio_hi, p->cpu_ratio,
	       p->ours_rss_kb / 1024, p->theirs_rss_kb / 1024, load[0]);
}

/*
 * The cost per sample after the fixed costs: the CPU time of the last
 * three quarters of the samples (@full minus @head: lazily loaded DWARF
 * and kallsyms are in both), per sample, as a rate; and the fixed cost,
 * the one-sample run @one.
 */
static void print_marginal(const char *what, const struct pairs *full, const struct pairs *head,
			   const struct pairs *one, long samples, long head_samples)
{
	double tk = full->ours_cpu - head->ours_cpu, pf = full->theirs_cpu - head->theirs_cpu;
	long n = samples - head_samples;

	if (!full->rounds || !head->rounds || n <= 0 || tk <= 0 || pf <= 0) {
		printf("%-26s not measurable (CPU times %.3f / %.3f s)\n", what, tk, pf);
		return;
	}
	printf("%-26s tracekit fixed %.3f s CPU, %.0f samples/CPU s after it (%.2f us each)  "
	       "perf fixed %.3f s CPU, %.0f samples/CPU s after it  perf/tracekit %.1fx\n",
	       what, one->ours_cpu, (double)n / tk, tk * 1e6 / (double)n, one->theirs_cpu,
	       (double)n / pf, pf / tk);
}

/*
 * A --time window (perf's START,STOP, microseconds) from the first sample
 * of perf script's text @path to the sample of index @last (its time plus
 * 1 us: times print rounded down to the microsecond).
 */
static bool sample_window(const char *path, long last, char *out, size_t size)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	unsigned long long sec0 = 0, usec0 = 0;
	long k = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *tok, *save = NULL;

		if (line[0] == '\t' || line[0] == '\n')
			continue;
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			size_t len = strlen(tok);
			unsigned long long sec, usec;

			if (len < 3 || tok[len - 1] != ':' || !strchr(tok, '.') ||
			    sscanf(tok, "%llu.%6llu:", &sec, &usec) != 2)
				continue;
			if (!k) {
				sec0 = sec;
				usec0 = usec;
			}
			if (k == last) {
				snprintf(out, size, "%llu.%06llu,%llu.%06llu", sec0, usec0,
					 sec + (usec + 1) / 1000000, (usec + 1) % 1000000);
				found = true;
			}
			break;
		}
		k++;
	}
	fclose(f);
	return found;
}

/* Run perf script and tracekit report with @extra options; exit 1 unless the texts match. */
static long check_same(const char *tracekit, const char *data, const char *a, const char *b,
		       const char *time_arg)
{
	char *const ps[] = {"perf", "script", "-i", (char *)data, NULL};
	char *const psw[] = {"perf", "script",	   "--time", (char *)time_arg,
			     "-i",   (char *)data, NULL};
	char *const tk[] = {(char *)tracekit, "report", (char *)data, NULL};
	char *const tkw[] = {(char *)tracekit, "report",     "--time",
			     (char *)time_arg, (char *)data, NULL};
	struct run rp = run_tool(time_arg ? psw : ps, a), rt = run_tool(time_arg ? tkw : tk, b);
	long samples;

	/*
	 * Reap the addr2line perf left: else the first timed run's wait
	 * (run_all()) would, and charge its CPU time to whichever tool that is.
	 */
	while (wait(NULL) > 0)
		;

	if (!WIFEXITED(rt.status) || WEXITSTATUS(rt.status)) {
		errno = 0;
		die("tracekit report");
	}
	samples = count_samples(a);
	if (!WIFEXITED(rp.status) || WEXITSTATUS(rp.status) || samples <= 0) {
		errno = 0;
		die("perf script");
	}
	if (!files_equal(a, b)) {
		fprintf(stderr, "bench-dwarf: tracekit report and perf script differ (%s, %s)\n", a,
			b);
		exit(1);
	}
	return samples;
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
	     rounds_arg[32], small[128], big_prog[4200], freq[16];
	int rounds = 5;
	bool quick = false, big, lng, inl;
	long samples, win_samples = 0, head_samples = 0;
	char window[64] = "", head[64] = "";
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
			 (!strcmp(argv[i + 1], "big") || !strcmp(argv[i + 1], "small") ||
			  !strcmp(argv[i + 1], "long") || !strcmp(argv[i + 1], "inline")))
			workload = argv[++i];
		else {
			fprintf(stderr,
				"usage: bench-dwarf [--quick] [--workload big|long|small|inline] "
				"[--tracekit PATH] [--rounds N] [--keep FILE]\n");
			return 2;
		}
	}
	if (quick) {
		rounds = 1;
		workload = "small";
	}
	lng = !strcmp(workload, "long");
	big = !strcmp(workload, "big");
	inl = !strcmp(workload, "inline");
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
	snprintf(rounds_arg, sizeof(rounds_arg), "%d",
		 quick	      ? 30
		 : inl	      ? INLINE_ROUNDS
		 : big || lng ? 3000
			      : 600);
	snprintf(freq, sizeof(freq), "%d", lng || inl ? 10000 : 4000);
	if (inl) {
		if (write_inline_src(src))
			die(src);
	} else {
		f = fopen(src, "w");
		if (!f || fputs(prog_src, f) < 0 || fclose(f))
			die(src);
	}
	{
		char *const cc[] = {"cc", "-O2", "-g", "-fomit-frame-pointer",
				    "-o", prog,	 src,  NULL};
		char *const rec[] = {"perf",
				     "record",
				     "-q",
				     "-N",
				     "-e",
				     "cpu-clock",
				     "-F",
				     freq,
				     "--call-graph",
				     lng ? "dwarf" : "dwarf,4096",
				     "-o",
				     big ? small : data,
				     prog,
				     rounds_arg,
				     NULL};

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
	settle_file(data);
	samples = check_same(tracekit, data, a, b, NULL);
	if (!quick) {
		/* The fixed cost: one sample. The marginal: the rest after the first quarter. */
		if (!sample_window(a, 0, window, sizeof(window)) ||
		    !sample_window(a, samples / 4, head, sizeof(head))) {
			errno = 0;
			die("no sample time in perf script's text");
		}
		win_samples = check_same(tracekit, data, a, b, window);
		head_samples = check_same(tracekit, data, a, b, head);
	}
	{
		struct stat st;

		printf("profile (%s%s): %ld samples, %.0f MB, --call-graph %s; texts identical%s%s "
		       "(%ld samples), %s (%ld)\n",
		       big   ? "tracekit -O2 -g reporting a DWARF profile"
		       : inl ? "generated program, " STR(
				       INLINE_KERNELS) " functions of inlined chains"
			     : "small program",
		       lng ? ", 3 000 rounds at 10 kHz" : "", samples,
		       stat(data, &st) ? 0.0 : (double)st.st_size / 1e6,
		       big || lng ? "dwarf (8192)" : "dwarf,4096", quick ? "" : ", also on --time ",
		       quick ? "" : window, quick ? samples : win_samples, head, head_samples);
	}
	{
		char *const tk[] = {(char *)tracekit, "report", data, NULL};
		char *const ps[] = {"perf", "script", "-i", data, NULL};
		char *const tkn[] = {(char *)tracekit, "report", "--no-inline", data, NULL};
		char *const psn[] = {"perf", "script", "--no-inline", "-i", data, NULL};
		char *const tkw[] = {(char *)tracekit, "report", "--time", window, data, NULL};
		char *const psw[] = {"perf", "script", "--time", window, "-i", data, NULL};
		char *const tknw[] = {(char *)tracekit, "report", "--no-inline", "--time",
				      window,		data,	  NULL};
		char *const psnw[] = {"perf", "script", "--no-inline", "--time",
				      window, "-i",	data,	       NULL};
		char *const tkh[] = {(char *)tracekit, "report", "--time", head, data, NULL};
		char *const psh[] = {"perf", "script", "--time", head, "-i", data, NULL};
		char *const tknh[] = {
			(char *)tracekit, "report", "--no-inline", "--time", head, data, NULL};
		char *const psnh[] = {"perf", "script", "--no-inline", "--time",
				      head,   "-i",	data,	       NULL};
		struct pairs p, pn, pw, pnw, ph, pnh;

		p = run_pairs_with(tk, ps, rounds, run_all);
		print_pair("report vs perf script", &p, samples);
		pn = run_pairs_with(tkn, psn, rounds, run_all);
		print_pair("--no-inline, both", &pn, samples);
		if (!quick) {
			pw = run_pairs_with(tkw, psw, rounds, run_all);
			print_pair("one sample (fixed cost)", &pw, win_samples);
			pnw = run_pairs_with(tknw, psnw, rounds, run_all);
			print_pair("one sample, --no-inline", &pnw, win_samples);
			ph = run_pairs_with(tkh, psh, rounds, run_all);
			print_pair("first quarter", &ph, head_samples);
			pnh = run_pairs_with(tknh, psnh, rounds, run_all);
			print_pair("first quarter, --no-inline", &pnh, head_samples);
			print_marginal("marginal", &p, &ph, &pw, samples, head_samples);
			print_marginal("marginal, --no-inline", &pn, &pnh, &pnw, samples,
				       head_samples);
		}
	}
	if (keep) {
		char *const mv[] = {"cp", data, (char *)keep, NULL};

		run_quiet(mv);
		if (!big) {
			printf("kept %s and the profiled program in %s\n", keep, dir);
			return 0;
		}
	}
	{
		char *const rm[] = {"rm", "-rf", dir, NULL};

		run_quiet(rm);
	}
	return 0;
}
