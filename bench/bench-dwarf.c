// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-dwarf: tracekit report against perf script on one --call-graph
 * dwarf profile, in one run.
 *
 * It builds a small C program (-O2 -g, no frame pointers: only its CFI
 * unwinds it; an inlined function, a qsort callback into libc, getppid
 * calls for kernel frames), records it with Debian's perf
 * (perf record -e cpu-clock -F 4000 --call-graph dwarf,4096, a few
 * thousand samples), checks that tracekit report prints what perf script
 * prints, then times in interleaved pairs (harness.h's run_pairs()):
 *
 *   tracekit report FILE              vs perf script -i FILE
 *   tracekit report --no-inline FILE  vs perf script --no-inline -i FILE
 *
 * Each line gives the median wall time of each, samples/s, and the ratio
 * perf / tracekit (median, min-max over the pairs). Needs root, perf and
 * cc: otherwise "SKIP: reason", exit 77. --quick: a short profile, one
 * pair each, for make check; --rounds N more pairs; --keep FILE keeps the
 * profile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		printf("%-34s perf failed: not timed\n", what);
		return;
	}
	printf("%-34s tracekit %.3f s (%.0f samples/s)  perf %.3f s (%.0f samples/s)  "
	       "perf/tracekit %.1fx (%.1f-%.1f)\n",
	       what, p->ours, (double)samples / p->ours, p->theirs, (double)samples / p->theirs,
	       p->ratio, p->ratio_lo, p->ratio_hi);
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *keep = NULL;
	char dir[] = "/tmp/tk-bench-dwarf.XXXXXX", src[128], prog[128], data[128], a[128], b[128],
	     rounds_arg[32];
	int rounds = 5;
	bool quick = false;
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
		else {
			fprintf(stderr, "usage: bench-dwarf [--quick] [--tracekit PATH] "
					"[--rounds N] [--keep FILE]\n");
			return 2;
		}
	}
	if (quick)
		rounds = 1;
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
	snprintf(rounds_arg, sizeof(rounds_arg), "%d", quick ? 30 : 600);
	f = fopen(src, "w");
	if (!f || fputs(prog_src, f) < 0 || fclose(f))
		die(src);
	{
		char *const cc[] = {"cc", "-O2", "-g", "-fomit-frame-pointer",
				    "-o", prog,	 src,  NULL};
		char *const rec[] = {"perf",	  "record", "-q",   "-N",	    "-e",
				     "cpu-clock", "-F",	    "4000", "--call-graph", "dwarf,4096",
				     "-o",	  data,	    prog,   rounds_arg,	    NULL};

		if (run_quiet(cc))
			die("cc");
		if (run_quiet(rec)) {
			errno = 0;
			die("perf record --call-graph dwarf");
		}
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
		printf("profile: %ld samples, --call-graph dwarf,4096; texts %s\n", samples,
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

		p = run_pairs(tk, ps, rounds);
		print_pair("report vs perf script", &p, samples);
		p = run_pairs(tkn, psn, rounds);
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
