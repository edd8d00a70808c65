// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the cache module on a temporary cache directory: the perf
 * layout of an added binary, its probes file, queries, resolution of
 * record's "%PROVIDER/EVENT" specs, removal, LRU eviction, gc, and
 * symbolization through the cache (also after the binary changed on disk).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/cache.h>

static char tmpdir[128], cdir[160], bin[160], bin2[160];

static const char src[] =
	"#define _SDT_HAS_SEMAPHORES 1\n"
	"#include <sys/sdt.h>\n"
	"unsigned short tkdemo_start_semaphore __attribute__((section(\".probes\")));\n"
	"int work(int x, long y);\n"
	"int work(int x, long y) { STAP_PROBE2(tkdemo, start, x, y); return x + (int)y; }\n"
	"int main(int argc, char **argv) { (void)argv; return work(argc, 3) == 12345; }\n";

static int build(const char *out, const char *extra)
{
	char cmd[600];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/src.c", tmpdir);
	f = fopen(cmd, "w");
	if (!f)
		return -1;
	fprintf(f, "%s%s", src, extra);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -o %s %s/src.c 2>/dev/null", out, tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tk-test-cache-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(cdir, sizeof(cdir), "%s/cache", tmpdir);
	snprintf(bin, sizeof(bin), "%s/sdtdemo", tmpdir);
	snprintf(bin2, sizeof(bin2), "%s/other", tmpdir);
	if (build(bin, "") || build(bin2, "int other(void); int other(void) { return 7; }\n"))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void fresh_cache(void)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", cdir);
	assert_int_equal(system(cmd), 0);
}

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

static void test_query_resolve(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], q[200];
	struct tk_cache_uprobe *u;
	struct tk_cache *c;
	size_t n;
	int cnt = 0;

	(void)state;
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, bin, bid), 1);
	assert_int_equal(tk_cache_add(c, bin2, NULL), 1);
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
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, bin, bid), 1);
	assert_int_equal(tk_cache_add(c, bin2, bid2), 1);
	assert_int_equal(tk_cache_for_each(c, false, entry_cb, &cnt), 2);
	assert_int_equal(cnt, 2);
	assert_int_equal(tk_cache_stats(c, &st), 0);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.sdt_probes, 2);
	assert_true(st.bytes > 10000);

	/* Make bin the least recently used, then evict down to one entry. */
	snprintf(path, sizeof(path), "%s%s/%s", cdir, bin, bid);
	{
		const struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};

		assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	}
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
	snprintf(path, sizeof(path), "%s/.build-id/ab/cdef0123456789abcdef0123456789abcdef01", cdir);
	assert_int_equal(symlink("../../nowhere/abcdef0123456789abcdef0123456789abcdef01", path), 0);
	assert_true(tk_cache_gc(c) >= 2);
	assert_int_equal(tk_cache_for_each(c, true, NULL, NULL), 0);
	assert_int_equal(access(path, F_OK), -1);
	tk_cache_close(c);
}

static void test_symbolize(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], cmd[600], copy[200];
	struct tk_cache_uprobe *u;
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	struct tk_cache *c;
	size_t n;

	(void)state;
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	/* Cache a copy, then replace the copy by another binary. */
	snprintf(copy, sizeof(copy), "%s/victim", tmpdir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", bin, copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tk_cache_add(c, copy, bid), 1);
	assert_int_equal(tk_cache_resolve(c, "%tkdemo/start", &u, &n), 1);
	uint64_t off = u[0].offset;

	tk_cache_uprobes_free(u, n);
	snprintf(cmd, sizeof(cmd), "rm -f %s && cp %s %s", copy, bin2, copy);
	assert_int_equal(system(cmd), 0);

	s = tk_symbolizer_new(c);
	assert_non_null(s);
	/* The uprobe's PATH:OFFSET resolves through the cached build id. */
	assert_int_equal(tk_symbolizer_lookup_file(s, copy, bid, off, &info), 0);
	assert_non_null(info.symbol);
	assert_string_equal(info.symbol, "work");
	/* A process map: text mapped at 0x555555554000 from offset 0. */
	assert_int_equal(tk_symbolizer_add_map(s, 0x555555554000, 0x10000, 0, copy, bid), 0);
	assert_int_equal(tk_symbolizer_lookup(s, 0x555555554000 + off, &info), 0);
	assert_string_equal(info.symbol, "work");
	assert_string_equal(info.dso, copy);
	assert_int_equal(info.file_offset, off);
	assert_int_equal(tk_symbolizer_lookup(s, 0x1000, &info), -ENOENT);
	assert_int_equal(tk_symbolizer_add_map(s, 1, 0, 0, copy, bid), -EINVAL);
	tk_symbolizer_free(s);
	tk_cache_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_layout),
		cmocka_unit_test(test_query_resolve),
		cmocka_unit_test(test_remove_evict_gc),
		cmocka_unit_test(test_symbolize),
	};

	if (system("command -v cc >/dev/null && (test -e /usr/include/x86_64-linux-gnu/sys/sdt.h"
		   " || test -e /usr/include/sys/sdt.h)")) {
		printf("skip: needs cc and <sys/sdt.h> (systemtap-sdt-dev)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
