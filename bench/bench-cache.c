// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-cache: the build-id cache against perf, in the same run.
 *
 * Case 1 adds the first N ELF files of /usr/bin (N = 50, or 5 with
 * --quick) to a fresh temporary cache, with tracekit's library and with
 * "perf buildid-cache --add" (one perf process for the whole list, its
 * fastest form), each in its own directory, several rounds; median and
 * spread of the wall time are printed. Case 2 measures symbol lookups per
 * second through tk_elf_symtab_lookup() on the largest of those binaries'
 * symbol tables, at random addresses inside its text.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/cache.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *name, double *v, int n, const char *unit, double scale)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	printf("%-34s median %10.2f %s  (min %.2f, max %.2f, %d runs)\n", name, v[n / 2] * scale,
	       unit, v[0] * scale, v[n - 1] * scale, n);
}

static bool is_elf_with_id(const char *path)
{
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf = tk_elf_open(path);
	bool ok;

	if (!elf)
		return false;
	ok = tk_elf_build_id(elf, id, sizeof(id)) >= 16;
	tk_elf_close(elf);
	return ok;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	size_t want = quick ? 5 : 50, n = 0;
	int rounds = quick ? 1 : 5;
	char *files[64], *list = NULL, tmp[] = "/tmp/tk-bench-cache-XXXXXX", cmd[8192];
	double tk[8], pf[8], lk[8];
	struct dirent **de;
	int nde, have_perf = system("perf version >/dev/null 2>&1") == 0;
	size_t biggest = 0, best_count = 0, listlen = 0;

	if (!mkdtemp(tmp))
		return 1;
	nde = scandir("/usr/bin", &de, NULL, alphasort);
	for (int i = 0; i < nde; i++) {
		char p[512];
		struct stat st;

		snprintf(p, sizeof(p), "/usr/bin/%s", de[i]->d_name);
		if (n < want && lstat(p, &st) == 0 && S_ISREG(st.st_mode) && is_elf_with_id(p))
			files[n++] = strdup(p);
		free(de[i]);
	}
	free(de);
	if (!n) {
		printf("skip: no ELF files in /usr/bin\n");
		return 77;
	}
	for (size_t i = 0; i < n; i++)
		listlen += strlen(files[i]) + 1;
	list = calloc(1, listlen + 1);
	for (size_t i = 0; i < n; i++) {
		strcat(list, files[i]);
		if (i + 1 < n)
			strcat(list, ",");
	}
	printf("bench-cache: %zu ELF files from /usr/bin, %d rounds\n", n, rounds);
	for (int r = 0; r < rounds; r++) {
		char d[128];
		double t0;
		struct tk_cache *c;

		snprintf(d, sizeof(d), "%s/tk%d", tmp, r);
		t0 = now();
		c = tk_cache_open(d);
		if (!c)
			return 1;
		for (size_t i = 0; i < n; i++)
			if (tk_cache_add(c, files[i], NULL) < 0)
				fprintf(stderr, "bench-cache: %s\n", tk_errmsg());
		tk_cache_close(c);
		tk[r] = now() - t0;
		if (have_perf) {
			snprintf(cmd, sizeof(cmd),
				 "perf --buildid-dir %s/perf%d buildid-cache --add %s "
				 ">/dev/null 2>&1",
				 tmp, r, list);
			t0 = now();
			if (system(cmd))
				fprintf(stderr, "bench-cache: perf buildid-cache failed\n");
			pf[r] = now() - t0;
		}
	}
	report("add: tracekit cache --add", tk, rounds, "ms", 1e3);
	if (have_perf)
		report("add: perf buildid-cache --add", pf, rounds, "ms", 1e3);
	else
		printf("add: perf buildid-cache --add       skipped (perf not installed)\n");

	/* Lookups on the biggest symbol table among the files. */
	for (size_t i = 0; i < n; i++) {
		struct tk_elf *elf = tk_elf_open(files[i]);
		struct tk_elf_symtab *st = elf ? tk_elf_symtab_new_elf(elf) : NULL;

		if (st && tk_elf_symtab_count(st) > best_count) {
			best_count = tk_elf_symtab_count(st);
			biggest = i;
		}
		tk_elf_symtab_free(st);
		tk_elf_close(elf);
	}
	if (best_count) {
		struct tk_elf *elf = tk_elf_open(files[biggest]);
		struct tk_elf_symtab *st = tk_elf_symtab_new_elf(elf);
		uint64_t lo = UINT64_MAX, hi = 0, found = 0, iters = quick ? 100000 : 10000000;
		const struct tk_elf_symbol *syms;
		size_t ns;

		tk_elf_symbols(elf, TK_ELF_ANY, &syms, &ns);
		for (size_t i = 0; i < ns; i++)
			if (syms[i].type == 2 && syms[i].value) {
				lo = syms[i].value < lo ? syms[i].value : lo;
				hi = syms[i].value > hi ? syms[i].value : hi;
			}
		for (int r = 0; r < rounds; r++) {
			uint64_t x = 88172645463325252ull;
			double t0 = now();

			for (uint64_t i = 0; i < iters; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				found += tk_elf_symtab_lookup(st, lo + x % (hi - lo + 1), NULL,
							      NULL) != NULL;
			}
			lk[r] = (double)iters / (now() - t0);
		}
		printf("lookups in %s (%zu symbols), %" PRIu64 " hits:\n", files[biggest],
		       tk_elf_symtab_count(st), found);
		report("symbol lookups", lk, rounds, "M/s", 1e-6);
		tk_elf_symtab_free(st);
		tk_elf_close(elf);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		return 1;
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(list);
	return 0;
}
