// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the cache module on a temporary cache directory: the perf
 * layout of an added binary, its probes file, queries, resolution of
 * record's "%PROVIDER/EVENT" specs, removal, LRU eviction, gc (also on two
 * caches from two threads at once), gzip probe files, --kcore with a
 * made-up ELF core, kernel probes, and a broken .symtab (cached with a
 * warning; the symbolizer falls back to .dynsym). The symbolizer's own
 * tests are in test-symbolizer.c.
 * The perf oracle (perf reading our cache and the other way round) is in
 * tests/integration/test-cache.sh. Without cc or <sys/sdt.h>: skip (77).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/cache.h>

#include "sdt-fixture.h"
#include "tk-test.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);

	assert_non_null(f);
	assert_non_null(buf);
	assert_true(fread(buf, 1, 65535, f) > 0 || feof(f));
	fclose(f);
	return buf;
}

static void test_add_layout(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], path[600], target[600], want[600];
	struct tk_cache *c;
	struct stat st, st2;
	ssize_t n;
	char *probes;

	(void)state;
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, bin, bid), 1);
	assert_int_equal(strlen(bid), 40);

	/* elf is a hard link of the binary. */
	snprintf(path, sizeof(path), "%s%s/%s/elf", cdir, bin, bid);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(stat(bin, &st2), 0);
	assert_int_equal(st.st_ino, st2.st_ino);

	/* The relative .build-id link. */
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", cdir, bid, bid + 2);
	n = readlink(path, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	snprintf(want, sizeof(want), "../..%s/%s", bin, bid);
	assert_string_equal(target, want);

	snprintf(path, sizeof(path), "%s%s/%s/probes", cdir, bin, bid);
	probes = slurp(path);
	assert_non_null(strstr(probes, "%sdt_tkdemo:start=start\np:sdt_tkdemo/start "));
	assert_non_null(strstr(probes, "arg1=%di:s32 arg2=%si:s64\n"));
	assert_non_null(strchr(probes, '('));
	free(probes);

	/* User probes survive a re-add; a bad spec is refused. */
	assert_int_equal(tk_cache_add_probe(c, bin, "myret=work%return $retval"), 0);
	assert_int_equal(tk_cache_add_probe(c, bin, "nosuchfunc"), -ENOENT);
	assert_int_equal(tk_cache_add_probe(c, bin, "wo-rk"), -EINVAL);
	assert_int_equal(tk_cache_add(c, bin, NULL), 1);
	probes = slurp(path);
	assert_non_null(strstr(probes, "#probe_sdtdemo:myret=work%return $retval\n"
				       "r:probe_sdtdemo/myret__return "));
	free(probes);
	tk_cache_close(c);
}

static int count_probe(const struct tk_cache_probe *p, void *ctx)
{
	(void)p;
	(*(int *)ctx)++;
	return 0;
}

/* A fresh cache holding bin and bin2; their build ids go to @bid and @bid2 (either may be NULL). */
static struct tk_cache *cache_with_bins(char *bid, char *bid2)
{
	struct tk_cache *c;

	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, bin, bid), 1);
	assert_int_equal(tk_cache_add(c, bin2, bid2), 1);
	return c;
}

static void test_query_resolve(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], q[200];
	struct tk_cache_uprobe *u;
	struct tk_cache *c;
	size_t n;
	int cnt = 0;

	(void)state;
	c = cache_with_bins(bid, NULL);
	assert_int_equal(tk_cache_add_probe(c, bin, "work"), 0);

	assert_int_equal(tk_cache_query(c, NULL, false, count_probe, &cnt), 3);
	assert_int_equal(tk_cache_query(c, "%tkdemo:start", false, NULL, NULL), 2);
	assert_int_equal(tk_cache_query(c, "sdt_tkdemo:start@sdtdemo", false, NULL, NULL), 1);
	assert_int_equal(tk_cache_query(c, "start@other", false, NULL, NULL), 1);
	snprintf(q, sizeof(q), "start#%.10s", bid);
	assert_int_equal(tk_cache_query(c, q, false, NULL, NULL), 1);
	assert_int_equal(tk_cache_query(c, "probe_sdtdemo:*", false, NULL, NULL), 1);
	assert_int_equal(tk_cache_query(c, "nothing", false, NULL, NULL), 0);
	assert_int_equal(tk_cache_query(c, "x#XYZ", false, NULL, NULL), -EINVAL);

	/* record -e %tkdemo/start: one uprobe line per binary, with the refctr. */
	snprintf(q, sizeof(q), "%%tkdemo/start@%s", bin);
	assert_int_equal(tk_cache_resolve(c, q, &u, &n), 1);
	assert_string_equal(u[0].group, "sdt_tkdemo");
	assert_string_equal(u[0].event, "start");
	assert_string_equal(u[0].path, bin);
	assert_string_equal(u[0].build_id, bid);
	assert_int_not_equal(u[0].ref_ctr, 0);
	assert_int_not_equal(u[0].offset, 0);
	assert_true(strncmp(u[0].def, "p:sdt_tkdemo/start ", 19) == 0);
	tk_cache_uprobes_free(u, n);
	assert_int_equal(tk_cache_resolve(c, "sdt_tkdemo:start", &u, &n), 2);
	tk_cache_uprobes_free(u, n);
	assert_int_equal(tk_cache_resolve(c, "%probe_sdtdemo/work", &u, &n), 1);
	assert_int_equal(u[0].ref_ctr, 0);
	tk_cache_uprobes_free(u, n);
	assert_int_equal(tk_cache_resolve(c, "%tkdemo/nothere", &u, &n), -ENOENT);
	assert_non_null(strstr(tk_errmsg(), "no such probe"));
	assert_int_equal(tk_cache_resolve(c, "sched:sched_switch", &u, &n), -EINVAL);

	/* --probe-del by unnamed spec, then by group:event. */
	assert_int_equal(tk_cache_probe_del(c, "work"), 1);
	assert_int_equal(tk_cache_probe_del(c, "tkdemo:start@other"), 1);
	assert_int_equal(tk_cache_query(c, NULL, false, NULL, NULL), 1);
	tk_cache_close(c);
}

static int entry_cb(const struct tk_cache_entry *e, void *ctx)
{
	(*(int *)ctx) += e->valid ? 1 : 100;
	return 0;
}

static void test_remove_evict_gc(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], bid2[TK_BUILD_ID_HEX_MAX], path[600];
	struct tk_cache_stats st;
	struct tk_cache *c;
	int cnt = 0;

	(void)state;
	c = cache_with_bins(bid, bid2);
	assert_int_equal(tk_cache_for_each(c, false, entry_cb, &cnt), 2);
	assert_int_equal(cnt, 2);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.sdt_probes, 2);
	assert_true(st.bytes > 10000);

	/* Make bin the least recently used (its stamp), then evict down to one entry. */
	snprintf(path, sizeof(path), "%s%s/%s/.tk-use", cdir, bin, bid);
	{
		const struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};

		assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	}
	snprintf(path, sizeof(path), "%s%s/%s", cdir, bin, bid);
	assert_int_equal(tk_cache_evict(c, st.bytes - 1), 1);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 1);

	/* Remove by build-id prefix; the empty directories go too. */
	assert_int_equal(tk_cache_remove(c, bid2 + 0), 1);
	assert_int_equal(tk_cache_remove(c, bid2), -ENOENT);
	assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 0);

	/* gc: a dangling link and an entry without its elf. */
	assert_int_equal(tk_cache_add(c, bin, NULL), 1);
	snprintf(path, sizeof(path), "%s%s/%s/elf", cdir, bin, bid);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/.build-id/ab", cdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/ab/cdef0123456789abcdef0123456789abcdef01",
		 cdir);
	assert_int_equal(symlink("../../nowhere/abcdef0123456789abcdef0123456789abcdef01", path),
			 0);
	assert_true(tk_cache_gc(c) >= 2);
	assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 0);
	assert_int_equal(access(path, F_OK), -1);
	tk_cache_close(c);
}

/* Three binaries with distinct build ids: paths and ids, sorted by descending build id. */
static char lru_bin[3][160], lru_bid[3][TK_BUILD_ID_HEX_MAX];

static void lru_setup(void)
{
	static const char *const names[] = {"t1", "a1", "f1"};
	static bool built;

	/* The binaries outlive fresh_cache(): built once for every LRU test. */
	if (built)
		return;
	built = true;
	for (int i = 0; i < 3; i++) {
		char extra[120];
		struct tk_elf *elf;
		uint8_t id[TK_BUILD_ID_MAX];
		int n;

		snprintf(lru_bin[i], sizeof(lru_bin[i]), "%s/%s", tmpdir, names[i]);
		/* Different code, not only different symbols: ld hashes the code into the id. */
		snprintf(extra, sizeof(extra), "int tkx(void); int tkx(void) { return %d; }\n",
			 1000 + i);
		assert_int_equal(sdt_build(lru_bin[i], extra), 0);
		elf = tk_elf_open(lru_bin[i]);
		assert_non_null(elf);
		n = tk_elf_build_id(elf, id, sizeof(id));
		assert_true(n > 0);
		tk_elf_build_id_hex(id, (size_t)n, lru_bid[i], sizeof(lru_bid[i]));
		tk_elf_close(elf);
	}
	for (int i = 0; i < 3; i++)
		for (int k = i + 1; k < 3; k++) {
			assert_int_not_equal(strcmp(lru_bid[i], lru_bid[k]), 0);
			if (strcmp(lru_bid[i], lru_bid[k]) < 0) {
				char t[160];

				memcpy(t, lru_bin[i], sizeof(t));
				memcpy(lru_bin[i], lru_bin[k], sizeof(t));
				memcpy(lru_bin[k], t, sizeof(t));
				memcpy(t, lru_bid[i], TK_BUILD_ID_HEX_MAX);
				memcpy(lru_bid[i], lru_bid[k], TK_BUILD_ID_HEX_MAX);
				memcpy(lru_bid[k], t, TK_BUILD_ID_HEX_MAX);
			}
		}
}

/* A fresh cache holding the three binaries, added in @order (oldest first). */
static struct tk_cache *lru_cache(const int order[3])
{
	struct tk_cache *c;

	fresh_cache();
	lru_setup();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tk_cache_add(c, lru_bin[order[i]], NULL), 1);
	return c;
}

static bool lru_cached(int i)
{
	char path[600];

	snprintf(path, sizeof(path), "%s%s/%s", cdir, lru_bin[i], lru_bid[i]);
	return access(path, F_OK) == 0;
}

/* Evict exactly one entry: the limit is the total less one byte. */
static void evict_one(struct tk_cache *c)
{
	struct tk_cache_stats st;

	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(tk_cache_evict(c, st.bytes - 1), 1);
}

/*
 * Least-recently-used order survives readers: entries added oldest first
 * in descending build-id order (so that a fallback to build-id order
 * would evict the newest), then read every way a user or perf reads the
 * cache, are evicted in the order they were added.
 */
static void test_lru_order(void **state)
{
	static const int order[3] = {0, 1, 2};
	char path[600];
	struct tk_cache *c;

	(void)state;
	c = lru_cache(order);
	/* Statistics, listings, a query that finds nothing, a plain readdir of each entry. */
	for (int round = 0; round < 2; round++) {
		struct tk_cache_stats st;

		assert_int_equal(tk_cache_stats(c, &st), 0);
		assert_int_equal(st.entries, 3);
		assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 3);
		assert_int_equal(tk_cache_query(c, NULL, true, NULL, NULL), 3);
		assert_int_equal(tk_cache_query(c, "nothing", true, NULL, NULL), 0);
		for (int i = 0; i < 3; i++) {
			char cmd[700];

			snprintf(cmd, sizeof(cmd), "ls -la %s%s/%s >/dev/null", cdir, lru_bin[i],
				 lru_bid[i]);
			assert_int_equal(system(cmd), 0);
		}
	}
	evict_one(c);
	assert_false(lru_cached(0));
	assert_true(lru_cached(1));
	assert_true(lru_cached(2));
	evict_one(c);
	assert_false(lru_cached(1));
	assert_true(lru_cached(2));
	/* The stamp is perf-invisible and not counted in the size. */
	snprintf(path, sizeof(path), "%s%s/%s/.tk-use", cdir, lru_bin[2], lru_bid[2]);
	assert_int_equal(access(path, F_OK), 0);
	tk_cache_close(c);
}

/*
 * A query marks only the entries whose probes matched: the oldest entry,
 * first in build-id order, is looked up; the two after it in build-id
 * order stay as old as they were.
 */
static void test_lru_query(void **state)
{
	static const int order[3] = {2, 0, 1}; /* smallest id oldest, then largest, then middle */
	struct tk_cache *c;
	char q[300];

	(void)state;
	c = lru_cache(order);
	snprintf(q, sizeof(q), "%%tkdemo:start@%s", lru_bin[order[0]]);
	assert_int_equal(tk_cache_query(c, q, false, NULL, NULL), 1);
	evict_one(c);
	assert_false(lru_cached(order[1]));
	assert_true(lru_cached(order[0]));
	assert_true(lru_cached(order[2]));
	evict_one(c);
	assert_false(lru_cached(order[2]));
	assert_true(lru_cached(order[0]));
	tk_cache_close(c);
}

static int count_entries(const char *dir)
{
	char cmd[400];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "find %s -mindepth 1 ! -name .tk-use | wc -l", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

static char *link_target(const char *bid)
{
	static char target[600];
	char path[600];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", cdir, bid, bid + 2);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return NULL;
	target[n] = '\0';
	return target;
}

/*
 * One build id at two paths, as perf 6.1 caches it: the link stays on the
 * first path, the second gets its directory with its elf (no probes: its
 * probes go through the link), and removing either path leaves nothing
 * that no link reaches.
 */
static void test_same_bid_two_paths(void **state)
{
	char a[200], b[200], adir[600], bdir[600], want[600], cmd[700], bid[TK_BUILD_ID_HEX_MAX];
	struct tk_cache_stats st;
	struct tk_cache *c;
	char *probes;

	(void)state;
	fresh_cache();
	snprintf(a, sizeof(a), "%s/twinA", tmpdir);
	snprintf(b, sizeof(b), "%s/twinB", tmpdir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && cp %s %s", bin, a, bin, b);
	assert_int_equal(system(cmd), 0);
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, a, bid), 1);
	assert_int_equal(tk_cache_add(c, b, NULL), 1);
	snprintf(adir, sizeof(adir), "%s%s/%s", cdir, a, bid);
	snprintf(bdir, sizeof(bdir), "%s%s/%s", cdir, b, bid);
	snprintf(want, sizeof(want), "../..%s/%s", a, bid);
	assert_string_equal(link_target(bid), want);
	snprintf(cmd, sizeof(cmd), "%s/elf", bdir);
	assert_int_equal(access(cmd, F_OK), 0);
	snprintf(cmd, sizeof(cmd), "%s/probes", bdir);
	assert_int_equal(access(cmd, F_OK), -1);
	snprintf(cmd, sizeof(cmd), "%s/probes", adir);
	probes = slurp(cmd);
	/* One entry, both paths' lines, sorted as perf's string list keeps them. */
	assert_non_null(strstr(probes, "%sdt_tkdemo:start=start\np:sdt_tkdemo/start "));
	assert_true(strstr(probes, a) && strstr(probes, b));
	assert_true(strstr(probes, a) < strstr(probes, b));
	free(probes);
	assert_int_equal(tk_cache_for_each(c, false, NULL, NULL), 1);
	assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 2);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 2);

	/* Removing the second path: the first stays listed, counted and clean of its lines. */
	assert_int_equal(tk_cache_remove(c, b), 1);
	assert_int_equal(access(bdir, F_OK), -1);
	assert_string_equal(link_target(bid), want);
	assert_int_equal(tk_cache_for_each(c, false, NULL, NULL), 1);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 1);
	assert_true(st.bytes > 10000);
	snprintf(cmd, sizeof(cmd), "%s/probes", adir);
	probes = slurp(cmd);
	assert_null(strstr(probes, b));
	assert_non_null(strstr(probes, a));
	free(probes);
	assert_int_equal(tk_cache_gc(c), 0);

	/* Removing the linked path: the link moves to the other one, with its probes. */
	assert_int_equal(tk_cache_add(c, b, NULL), 1);
	assert_int_equal(tk_cache_remove(c, a), 1);
	assert_int_equal(access(adir, F_OK), -1);
	snprintf(want, sizeof(want), "../..%s/%s", b, bid);
	assert_string_equal(link_target(bid), want);
	snprintf(cmd, sizeof(cmd), "%s/probes", bdir);
	probes = slurp(cmd);
	assert_non_null(strstr(probes, "%sdt_tkdemo:start=start\np:sdt_tkdemo/start "));
	assert_non_null(strstr(probes, b));
	assert_null(strstr(probes, a));
	free(probes);
	{
		struct tk_cache_uprobe *u;
		size_t n;

		assert_int_equal(tk_cache_resolve(c, "%tkdemo/start", &u, &n), 1);
		assert_string_equal(u[0].path, b);
		tk_cache_uprobes_free(u, n);
	}
	assert_int_equal(tk_cache_remove(c, b), 1);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(count_entries(cdir), 0);

	/* By build id: every path of it. */
	assert_int_equal(tk_cache_add(c, a, NULL), 1);
	assert_int_equal(tk_cache_add(c, b, NULL), 1);
	assert_int_equal(tk_cache_remove(c, bid), 2);
	assert_int_equal(count_entries(cdir), 0);

	/*
	 * perf --remove of the linked path (link and directory go, the other
	 * path stays unlinked): counted by stats, removed by gc.
	 */
	assert_int_equal(tk_cache_add(c, a, NULL), 1);
	assert_int_equal(tk_cache_add(c, b, NULL), 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s && rm %s/.build-id/%.2s/%s", adir, cdir, bid,
		 bid + 2);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tk_cache_for_each(c, false, NULL, NULL), 0);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 1);
	assert_true(st.bytes > 10000);
	assert_true(tk_cache_gc(c) >= 1);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(count_entries(cdir), 0);
	tk_cache_close(c);
}

static void test_gzip_probes(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], path[600], gz[600];
	struct tk_cache_uprobe *u;
	struct tk_cache *c;
	struct stat st;
	size_t n;
	char *text;
	FILE *f;

	(void)state;
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	tk_cache_set_gzip(c, true);
	assert_int_equal(tk_cache_add(c, bin, bid), 1);
	assert_int_equal(tk_cache_add_probe(c, bin, "work"), 0);
	snprintf(path, sizeof(path), "%s%s/%s/probes", cdir, bin, bid);
	snprintf(gz, sizeof(gz), "%s.gz", path);
	/* perf's file stays, empty; the entries are in probes.gz. */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	text = slurp(gz);
	assert_int_equal((unsigned char)text[0], 0x1f);
	assert_int_equal((unsigned char)text[1], 0x8b);
	free(text);
	assert_int_equal(tk_cache_query(c, NULL, false, NULL, NULL), 2);
	assert_int_equal(tk_cache_resolve(c, "%tkdemo/start", &u, &n), 1);
	assert_int_not_equal(u[0].ref_ctr, 0);
	tk_cache_uprobes_free(u, n);

	/* Back to plain: everything moves to probes, probes.gz goes. */
	tk_cache_set_gzip(c, false);
	assert_int_equal(tk_cache_add_probe(c, bin, "other=work%return"), 0);
	assert_int_equal(access(gz, F_OK), -1);
	text = slurp(path);
	assert_non_null(strstr(text, "%sdt_tkdemo:start=start\n"));
	assert_non_null(strstr(text, "#work\n"));
	assert_non_null(strstr(text, "#probe_sdtdemo:other=work%return\n"));
	free(text);

	/* A gzip "probes" (not ours, but gzip) is read too; corrupt gzip is an error. */
	assert_int_equal(system("true"), 0);
	{
		char cmd[1400];

		snprintf(cmd, sizeof(cmd), "gzip -c %s > %s.tmp && mv %s.tmp %s", path, path, path,
			 path);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(tk_cache_query(c, NULL, false, NULL, NULL), 3);
	f = fopen(gz, "w");
	assert_non_null(f);
	fputs("\x1f\x8b\x08\x00garbage", f);
	fclose(f);
	assert_int_equal(tk_cache_query(c, NULL, false, NULL, NULL), -EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "probes.gz"));
	tk_cache_close(c);
}

static void st16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}
static void st32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static void st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/*
 * A made-up x86-64 kcore: kernel text at 0xffffffff81000000 (4 pages),
 * a direct-map segment that must not be copied, and the module area at
 * 0xffffffffc0000000 (2 pages); each page filled with its own byte.
 */
static void make_kcore(const char *root, uint16_t etype)
{
	static const struct {
		uint64_t vaddr, off, len;
	} segs[] = {
		{0xffffffff81000000ull, 0x1000, 0x4000},
		{0xffff888000000000ull, 0x5000, 0x3000},
		{0xffffffffc0000000ull, 0x8000, 0x2000},
	};
	uint8_t *img = calloc(1, 0xa000);
	char path[400];
	static const char ks[] = "ffffffff81000000 T _stext\n"
				 "ffffffff81000000 T _text\n"
				 "ffffffff81001000 T vfs_read\n"
				 "ffffffff81002fff T _etext\n"
				 "ffff888000000100 D some_data\n"
				 "ffffffffc0000100 t mod_fn\t[mymod]\n";
	static const char mods[] = "mymod 16384 0 - Live 0xffffffffc0000000\n";
	static const uint8_t notes[] = {4,   0,	  0,   0, 20,	0,    0,    0,	  3,  0,  0,  0,
					'G', 'N', 'U', 0, 0xde, 0xad, 0xbe, 0xef, 1,  2,  3,  4,
					5,   6,	  7,   8, 9,	10,   11,   12,	  13, 14, 15, 16};

	assert_non_null(img);
	memcpy(img,
	       "\x7f"
	       "ELF\x02\x01\x01",
	       7);
	st16(img + 16, etype);
	st16(img + 18, 62);
	st32(img + 20, 1);
	st64(img + 32, 64);
	st16(img + 52, 64);
	st16(img + 54, 56);
	st16(img + 56, 3);
	for (int i = 0; i < 3; i++) {
		uint8_t *ph = img + 64 + 56 * i;

		st32(ph, 1);
		st32(ph + 4, 7);
		st64(ph + 8, segs[i].off);
		st64(ph + 16, segs[i].vaddr);
		st64(ph + 32, segs[i].len);
		st64(ph + 40, segs[i].len);
		for (uint64_t k = 0; k < segs[i].len; k++)
			img[segs[i].off + k] = (uint8_t)(0x10 * (i + 1) + (k >> 12));
	}
	snprintf(path, sizeof(path), "mkdir -p %s/proc %s/sys/kernel", root, root);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/proc/kcore", root);
	put(path, img, 0xa000);
	snprintf(path, sizeof(path), "%s/proc/kallsyms", root);
	put(path, ks, strlen(ks));
	snprintf(path, sizeof(path), "%s/proc/modules", root);
	put(path, mods, strlen(mods));
	snprintf(path, sizeof(path), "%s/sys/kernel/notes", root);
	put(path, notes, sizeof(notes));
	free(img);
}

/* A fresh cache and a fake root ROOT holding ROOT/proc/kcore (ET_CORE) with its kallsyms. */
static struct tk_cache *cache_with_kcore(char *root, size_t rlen, char *kc, size_t klen)
{
	struct tk_cache *c;

	fresh_cache();
	snprintf(root, rlen, "%s/root", tmpdir);
	make_kcore(root, 4 /* ET_CORE */);
	snprintf(kc, klen, "%s/proc/kcore", root);
	c = tk_cache_open(cdir);
	assert_non_null(c);
	return c;
}

static void test_kcore(void **state)
{
	char root[300], kc[400], bid[TK_BUILD_ID_HEX_MAX], cmd[800], *probes;
	const char *want = "deadbeef0102030405060708090a0b0c0d0e0f10";
	struct tk_elf_segment seg[4];
	struct tk_elf *elf;
	struct tk_cache *c;
	FILE *p;

	(void)state;
	c = cache_with_kcore(root, sizeof(root), kc, sizeof(kc));
	assert_int_equal(tk_cache_add_kcore(c, kc, false, bid), 1);
	assert_string_equal(bid, want);
	/* The same kcore again: nothing to do, unless forced. */
	assert_int_equal(tk_cache_add_kcore(c, kc, false, NULL), 0);

	snprintf(cmd, sizeof(cmd), "ls -d %s/'[kernel.kcore]'/%s/* | head -1", cdir, want);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(cmd, sizeof(cmd), p));
	pclose(p);
	cmd[strcspn(cmd, "\n")] = '\0';
	/* YYYYmmddHHMMSShh */
	assert_int_equal(strlen(strrchr(cmd, '/') + 1), 16);
	strcat(cmd, "/kcore");
	elf = tk_elf_open(cmd);
	assert_non_null(elf);
	/* Kernel text _stext.._etext (3 pages) and the modules (2 pages) only. */
	assert_int_equal(tk_elf_segments(elf, seg, 4), 2);
	assert_int_equal(seg[0].vaddr, 0xffffffff81000000ull);
	assert_int_equal(seg[0].filesz, 0x3000);
	assert_int_equal(seg[1].vaddr, 0xffffffffc0000000ull);
	assert_int_equal(seg[1].filesz, 0x2000);
	tk_elf_close(elf);
	{
		FILE *f = fopen(cmd, "r");
		uint8_t b[2];

		assert_non_null(f);
		assert_int_equal(fseek(f, (long)(seg[0].offset + 0x2000), SEEK_SET), 0);
		assert_int_equal(fread(b, 1, 1, f), 1);
		assert_int_equal(fseek(f, (long)(seg[1].offset + 0x1000), SEEK_SET), 0);
		assert_int_equal(fread(b + 1, 1, 1, f), 1);
		fclose(f);
		assert_int_equal(b[0], 0x12);
		assert_int_equal(b[1], 0x31);
	}

	/* A kernel probe for that kernel, relative to _text. */
	snprintf(cmd, sizeof(cmd), "%s/proc/kallsyms", root);
	assert_int_equal(tk_cache_add_kernel_probe(c, cmd, bid, "vfs_read+8"), 0);
	assert_int_equal(tk_cache_add_kernel_probe(c, cmd, bid, "nosuch"), -ENOENT);
	snprintf(cmd, sizeof(cmd), "%s/[kernel.kallsyms]/%s/probes", cdir, want);
	probes = slurp(cmd);
	assert_string_equal(probes, "#vfs_read+8\np:probe/vfs_read _text+4104\n");
	free(probes);
	assert_int_equal(tk_cache_query(c, "probe:vfs_read", true, NULL, NULL), 1);

	/* Not a kcore: wrong name, not ELF, not a core, bad headers. */
	assert_int_equal(tk_cache_add_kcore(c, bin, false, NULL), -EINVAL);
	snprintf(cmd, sizeof(cmd), "cp %s %s/proc/kcore", bin, root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tk_cache_add_kcore(c, kc, false, NULL), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "ET_CORE"));
	put(kc, "hello", 5);
	assert_int_equal(tk_cache_add_kcore(c, kc, false, NULL), -ENOEXEC);
	make_kcore(root, 4);
	snprintf(cmd, sizeof(cmd), "truncate -s 200 %s", kc);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tk_cache_add_kcore(c, kc, true, NULL), -EBADMSG);
	assert_non_null(strstr(tk_errmsg(), kc));
	tk_cache_close(c);
}

/* kcore copies count in --stats, age like other entries, and are evicted and collected. */
static void test_kcore_stats_evict(void **state)
{
	char root[300], kc[400], cmd[900], kdir[400];
	struct tk_cache_stats st, st2;
	struct tk_cache *c;
	FILE *p;
	unsigned long long du = 0;

	(void)state;
	c = cache_with_kcore(root, sizeof(root), kc, sizeof(kc));
	assert_int_equal(tk_cache_add_kcore(c, kc, false, NULL), 1);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.kernel, 1);
	/* Its size is that of the copy: kcore, kallsyms and modules. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s/'[kernel.kcore]'/*/* && cat kcore kallsyms modules "
		 "| wc -c",
		 cdir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%llu", &du), 1);
	pclose(p);
	assert_int_equal(st.bytes, du);
	assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 1);

	/* Added before a binary, so evicted before it. */
	assert_int_equal(tk_cache_add(c, bin, NULL), 1);
	assert_int_equal(tk_cache_stats(c, &st2), 0);
	assert_int_equal(st2.entries, 2);
	assert_int_equal(tk_cache_evict(c, st2.bytes - 1), 1);
	snprintf(kdir, sizeof(kdir), "%s/[kernel.kcore]", cdir);
	assert_int_equal(access(kdir, F_OK), -1);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.kernel, 0);
	assert_int_equal(st.bytes, st2.bytes - du);

	/* A copy that lost its kcore file is debris for gc. */
	assert_int_equal(tk_cache_add_kcore(c, kc, false, NULL), 1);
	snprintf(cmd, sizeof(cmd), "rm -f %s/'[kernel.kcore]'/*/*/kcore", cdir);
	assert_int_equal(system(cmd), 0);
	assert_true(tk_cache_gc(c) >= 1);
	assert_int_equal(access(kdir, F_OK), -1);
	assert_int_equal(tk_cache_evict(c, 0), 1);
	assert_int_equal(count_entries(cdir), 0);
	tk_cache_close(c);
}

/* Without ROOT/sys/kernel/notes the build id comes from the kcore's VMCOREINFO note. */
static void test_kcore_vmcoreinfo(void **state)
{
	static const char info[] =
		"OSRELEASE=6.1.0\nBUILD-ID=0123456789abcdef0123456789abcdef01234567\n"
		"PAGESIZE=4096\n";
	char root[300], kc[400], path[500], bid[TK_BUILD_ID_HEX_MAX];
	uint8_t img[0xa000], *ph, *note;
	struct tk_cache *c;
	uint32_t namesz = 11, descsz = sizeof(info) - 1;
	FILE *f;

	(void)state;
	c = cache_with_kcore(root, sizeof(root), kc, sizeof(kc));
	snprintf(path, sizeof(path), "%s/sys/kernel/notes", root);
	assert_int_equal(unlink(path), 0);
	assert_errno(tk_cache_add_kcore(c, kc, false, NULL), ENOENT);
	assert_non_null(strstr(tk_errmsg(), "VMCOREINFO"));

	/* A fourth program header, PT_NOTE, for a note at 0x200 (before the first segment). */
	f = fopen(kc, "r");
	assert_non_null(f);
	assert_int_equal(fread(img, 1, sizeof(img), f), sizeof(img));
	fclose(f);
	st16(img + 56, 4);
	ph = img + 64 + 3 * 56;
	note = img + 0x200;
	memset(ph, 0, 56);
	st32(ph, 4 /* PT_NOTE */);
	st64(ph + 8, 0x200);
	st64(ph + 32, 12 + 12 + ((descsz + 3) & ~3u));
	memcpy(note, &namesz, 4);
	memcpy(note + 4, &descsz, 4);
	memset(note + 8, 0, 4);
	memcpy(note + 12, "VMCOREINFO\0\0", 12);
	memcpy(note + 24, info, descsz);
	put(kc, img, sizeof(img));
	assert_int_equal(tk_cache_add_kcore(c, kc, false, bid), 1);
	assert_string_equal(bid, "0123456789abcdef0123456789abcdef01234567");
	tk_cache_close(c);
}

static char logged[2048];

static void capture_log(enum tk_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)ctx;
	snprintf(logged + strlen(logged), sizeof(logged) - strlen(logged), "%s\n", msg);
}

/*
 * A .symtab whose size runs past the file: the build id and the probes
 * are sound, so --add caches the file and warns (naming file and offset);
 * the symbolizer warns and takes the .dynsym.
 */
static void test_broken_symtab(void **state)
{
	char rdyn[200], cmd[600], want[400];
	uint64_t work, off, symoff = 0, huge = 0x7fffffffffffull, shoff;
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	struct tk_elf *elf;
	struct tk_cache *c;
	uint16_t shnum;
	uint8_t hdr[64];
	FILE *f;

	(void)state;
	fresh_cache();
	snprintf(rdyn, sizeof(rdyn), "%s/broken", tmpdir);
	snprintf(cmd, sizeof(cmd), "cc -O1 -rdynamic -o %s %s/src.c", rdyn, tmpdir);
	assert_int_equal(system(cmd), 0);
	elf = tk_elf_open(rdyn);
	assert_non_null(elf);
	work = symbol_value(elf, TK_ELF_SYMTAB, "work");
	assert_int_equal(tk_elf_vaddr_to_offset(elf, work, &off), 0);
	tk_elf_close(elf);

	/* Give .symtab an absurd size, in place. */
	f = fopen(rdyn, "r+b");
	assert_non_null(f);
	assert_int_equal(fread(hdr, 1, 64, f), 64);
	memcpy(&shoff, hdr + 0x28, 8);
	memcpy(&shnum, hdr + 0x3c, 2);
	for (uint16_t i = 0; i < shnum; i++) {
		uint8_t sh[64];
		uint32_t type;

		assert_int_equal(fseek(f, (long)(shoff + 64u * i), SEEK_SET), 0);
		assert_int_equal(fread(sh, 1, 64, f), 64);
		memcpy(&type, sh + 4, 4);
		if (type != 2 /* SHT_SYMTAB */)
			continue;
		memcpy(&symoff, sh + 24, 8);
		assert_int_equal(fseek(f, (long)(shoff + 64u * i + 32), SEEK_SET), 0);
		assert_int_equal(fwrite(&huge, 1, 8, f), 8);
	}
	fclose(f);
	assert_int_not_equal(symoff, 0);

	logged[0] = '\0';
	tk_log_set_handler(capture_log, NULL, TK_LOG_WARN);
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, rdyn, NULL), 1);
	snprintf(want, sizeof(want),
		 "%s: offset 0x%" PRIx64 ": symbol table of %" PRIu64
		 " bytes exceeds the file size",
		 rdyn, symoff, huge);
	assert_non_null(strstr(logged, want));
	assert_non_null(strstr(logged, "cached for its build id and probes"));
	assert_int_equal(tk_cache_for_each(c, false, NULL, NULL), 1);

	logged[0] = '\0';
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_lookup_file(s, rdyn, NULL, off + 2, &info), 0);
	assert_non_null(info.symbol);
	assert_string_equal(info.symbol, "work");
	assert_int_equal(info.offset, 2);
	/* It read the cached copy (the entry's elf), and says so. */
	snprintf(want, sizeof(want),
		 "/elf: offset 0x%" PRIx64 ": symbol table of %" PRIu64
		 " bytes exceeds the file size",
		 symoff, huge);
	assert_non_null(strstr(logged, want));
	assert_non_null(strstr(logged, "symbols from its .dynsym instead"));
	tk_symbolizer_free(s);
	tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
	tk_cache_close(c);
}

/* Two caches collected at once, one per thread (tk_cache_gc() keeps no global state). */
#define GC_CHAINS 40
#define GC_DEPTH  3
#define GC_ROUNDS 25

struct gc_job {
	char dir[200];
	int wrong; /* rounds whose count was not this cache's own debris */
	int last;
};

/* GC_CHAINS chains of GC_DEPTH empty directories each, as removals leave them. */
static int make_debris(const char *dir)
{
	char path[400];

	for (int i = 0; i < GC_CHAINS; i++) {
		int n = snprintf(path, sizeof(path), "%s/d%d", dir, i);

		for (int d = 0; d < GC_DEPTH; d++) {
			if (mkdir(path, 0755) < 0)
				return -1;
			n += snprintf(path + n, sizeof(path) - (size_t)n, "/e%d", d);
		}
	}
	return 0;
}

static void *gc_thread(void *arg)
{
	struct gc_job *j = arg;
	struct tk_cache *c = tk_cache_open(j->dir);

	if (!c) {
		j->wrong = GC_ROUNDS;
		return NULL;
	}
	for (int i = 0; i < GC_ROUNDS; i++) {
		if (make_debris(j->dir) < 0) {
			j->wrong++;
			continue;
		}
		j->last = tk_cache_gc(c);
		if (j->last != GC_CHAINS * GC_DEPTH)
			j->wrong++;
	}
	tk_cache_close(c);
	return NULL;
}

static void test_gc_two_threads(void **state)
{
	struct gc_job jobs[2];
	pthread_t t[2];

	(void)state;
	fresh_cache();
	for (int i = 0; i < 2; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		snprintf(jobs[i].dir, sizeof(jobs[i].dir), "%s/gc%d", cdir, i);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, gc_thread, &jobs[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(jobs[i].wrong, 0);
		assert_int_equal(jobs[i].last, GC_CHAINS * GC_DEPTH);
		/* Only the root stays. */
		assert_int_equal(count_entries(jobs[i].dir), 0);
	}
}

/* A reader's open: an absent directory is ENOENT and stays absent; an existing one opens. */
static void test_open_existing(void **state)
{
	struct tk_cache *c;
	struct stat st;

	(void)state;
	fresh_cache();
	errno = 0;
	assert_null(tk_cache_open_existing(cdir));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(stat(cdir, &st), -1);
	c = tk_cache_open(cdir);
	assert_non_null(c);
	tk_cache_close(c);
	c = tk_cache_open_existing(cdir);
	assert_non_null(c);
	tk_cache_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_layout),	  cmocka_unit_test(test_query_resolve),
		cmocka_unit_test(test_remove_evict_gc),	  cmocka_unit_test(test_lru_order),
		cmocka_unit_test(test_lru_query),	  cmocka_unit_test(test_same_bid_two_paths),
		cmocka_unit_test(test_gzip_probes),	  cmocka_unit_test(test_kcore),
		cmocka_unit_test(test_kcore_stats_evict), cmocka_unit_test(test_broken_symtab),
		cmocka_unit_test(test_open_existing),	  cmocka_unit_test(test_gc_two_threads),
		cmocka_unit_test(test_kcore_vmcoreinfo),
	};

	if (system("command -v cc >/dev/null && (test -e /usr/include/x86_64-linux-gnu/sys/sdt.h"
		   " || test -e /usr/include/sys/sdt.h)")) {
		printf("skip: needs cc and <sys/sdt.h> (systemtap-sdt-dev)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, sdt_setup, tk_tmpdir_teardown);
}
