// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the symbolizer: symbolization through the cache (also
 * after the binary changed on disk), separate debug files for stripped
 * binaries with perf's choice among aliases, process maps from
 * /proc/PID/maps, the uprobe lookup report uses for .dat events, symbols
 * only from files of the recorded build id (binaries, --symfs, the
 * kernel's kallsyms sources), JIT perf-PID.map files, and addr2line's
 * name among aliases where perf's inline mode prints it.
 * Without cc or <sys/sdt.h>: skip (77).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/cache.h>
#include <tracekit/elf.h>
#include <tracekit/symbolizer.h>

#include "sdt-fixture.h"
#include "symbolizer-internal.h"
#include "tk-test.h"

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

static const char alias_src[] =
	"static int __attribute__((noinline, used)) __mywork(int x) { return x * 3 + 1; }\n"
	"int mywork(int x) __attribute__((weak, alias(\"__mywork\")));\n"
	"int main(int argc, char **argv) { (void)argv; return mywork(argc) == 12345; }\n";

static void test_debuginfo(void **state)
{
	char full[200], strip[200], dbgroot[200], cmd[1400], bid[TK_BUILD_ID_HEX_MAX];
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	uint64_t vaddr, off;
	struct tk_elf *elf;
	struct tk_cache *c;
	uint8_t id[TK_BUILD_ID_MAX];
	int idn;

	(void)state;
	fresh_cache();
	snprintf(full, sizeof(full), "%s/alias", tmpdir);
	snprintf(strip, sizeof(strip), "%s/alias-stripped", tmpdir);
	snprintf(dbgroot, sizeof(dbgroot), "%s/debugroot", tmpdir);
	snprintf(cmd, sizeof(cmd), "%s/alias.c", tmpdir);
	put(cmd, alias_src, strlen(alias_src));
	snprintf(cmd, sizeof(cmd), "cc -O1 -o %s %s/alias.c && cp %s %s && strip --strip-all %s",
		 full, tmpdir, full, strip, strip);
	assert_int_equal(system(cmd), 0);

	/* The link-time address of the alias pair, from the unstripped binary. */
	elf = tk_elf_open(full);
	assert_non_null(elf);
	vaddr = symbol_value(elf, TK_ELF_SYMTAB, "mywork");
	assert_int_not_equal(vaddr, 0);
	assert_int_equal(tk_elf_vaddr_to_offset(elf, vaddr, &off), 0);
	idn = tk_elf_build_id(elf, id, sizeof(id));
	assert_true(idn > 0);
	tk_elf_build_id_hex(id, (size_t)idn, bid, sizeof(bid));
	tk_elf_close(elf);

	/* Stripped, no debug file: no .symtab, nothing covers the function. */
	setenv("TRACEKIT_DEBUG_DIR", dbgroot, 1);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	tk_symbolizer_lookup_file(s, strip, NULL, off, &info);
	assert_null(info.symbol);
	tk_symbolizer_free(s);

	/* Install the debug file under the build id: perf's choice, the LOCAL __mywork. */
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/.build-id/%.2s && objcopy --only-keep-debug %s "
		 "%s/.build-id/%.2s/%s.debug",
		 dbgroot, bid, full, dbgroot, bid, bid + 2);
	assert_int_equal(system(cmd), 0);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_lookup_file(s, strip, NULL, off + 1, &info), 0);
	assert_non_null(info.symbol);
	assert_string_equal(info.symbol, "__mywork");
	assert_int_equal(info.offset, 1);
	/*
	 * Another binary at the path: not it. The debug file of the recorded
	 * id alone has no file offsets to place the address by (its segments
	 * are empty): no name rather than a misplaced one.
	 */
	assert_int_equal(tk_symbolizer_lookup_file(s, bin2, bid, off + 1, &info), 0);
	assert_null(info.symbol);
	assert_string_equal(info.dso, bin2);
	tk_symbolizer_free(s);

	/* Cached: the entry's "debug" serves when the debug root is gone. */
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, strip, NULL), 0);
	snprintf(cmd, sizeof(cmd), "%s%s/%s/debug", cdir, strip, bid);
	assert_int_equal(access(cmd, R_OK), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dbgroot);
	assert_int_equal(system(cmd), 0);
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_add_map(s, 0x7f0000000000, 0x100000, 0, strip, bid), 0);
	assert_int_equal(tk_symbolizer_lookup(s, 0x7f0000000000 + off, &info), 0);
	assert_string_equal(info.symbol, "__mywork");
	tk_symbolizer_free(s);
	tk_cache_close(c);
	unsetenv("TRACEKIT_DEBUG_DIR");

	/* glibc: perf reports brk as __brk (LOCAL beats WEAK) when libc's debug file is installed.
	 */
	elf = tk_elf_open("/lib/x86_64-linux-gnu/libc.so.6");
	if (elf) {
		idn = tk_elf_build_id(elf, id, sizeof(id));
		tk_elf_build_id_hex(id, (size_t)idn, bid, sizeof(bid));
		vaddr = symbol_value(elf, TK_ELF_DYNSYM, "brk");
		snprintf(cmd, sizeof(cmd), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
		if (vaddr && access(cmd, R_OK) == 0 &&
		    tk_elf_vaddr_to_offset(elf, vaddr, &off) == 0) {
			s = tk_symbolizer_new(NULL);
			assert_non_null(s);
			assert_int_equal(
				tk_symbolizer_lookup_file(s, "/lib/x86_64-linux-gnu/libc.so.6",
							  NULL, off, &info),
				0);
			assert_string_equal(info.symbol, "__brk");
			tk_symbolizer_free(s);
		}
		tk_elf_close(elf);
	}
}

/*
 * Two pairs of global function aliases at one address each, in a shared
 * object without debug info; the linker orders each table by its own
 * hash, so which name comes first differs between the pairs and tables.
 */
static const char a2l_src[] = "int __attribute__((noinline)) alias_b(int x) { return x * 3 + 1; }\n"
			      "int alias_long_a(int x) __attribute__((alias(\"alias_b\")));\n"
			      "int __attribute__((noinline)) tkz(int x) { return x * 5 + 2; }\n"
			      "int tkaaaaa(int x) __attribute__((alias(\"tkz\")));\n";

/* addr2line's name for @vaddr of @path (the oracle of perf's inline mode). */
static void a2l_oracle(const char *path, uint64_t vaddr, char *name, size_t size)
{
	char cmd[600];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "addr2line -f -e %s 0x%llx", path, (unsigned long long)vaddr);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(name, (int)size, f));
	name[strcspn(name, "\n")] = '\0';
	pclose(f);
}

/*
 * perf's inline mode prints addr2line's name for a frame without DWARF
 * when it is not perf's own pick among aliases: tk_symbolizer_a2l_alias()
 * must give exactly addr2line's answer, from .symtab and, stripped, from
 * .dynsym, and NULL where the two agree.
 */
static void test_a2l_alias(void **state)
{
	static const char *const funcs[] = {"alias_b", "tkz"};
	char lib[200], strip[200], cmd[800], want[200];
	const char *const files[] = {lib, strip};
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	int disagree = 0;

	(void)state;
	snprintf(lib, sizeof(lib), "%s/liba2l.so", tmpdir);
	snprintf(strip, sizeof(strip), "%s/liba2l-stripped.so", tmpdir);
	snprintf(cmd, sizeof(cmd), "%s/a2l.c", tmpdir);
	put(cmd, a2l_src, strlen(a2l_src));
	snprintf(cmd, sizeof(cmd),
		 "cc -O1 -shared -fPIC -o %s %s/a2l.c && strip --strip-all -o %s %s", lib, tmpdir,
		 strip, lib);
	assert_int_equal(system(cmd), 0);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	for (size_t f = 0; f < 2; f++) {
		for (size_t k = 0; k < 2; k++) {
			struct tk_elf *elf = tk_elf_open(lib);
			uint64_t vaddr, off;
			const char *alias;

			assert_non_null(elf);
			vaddr = symbol_value(elf, TK_ELF_SYMTAB, funcs[k]);
			assert_int_equal(tk_elf_vaddr_to_offset(elf, vaddr, &off), 0);
			tk_elf_close(elf);
			a2l_oracle(files[f], vaddr + 2, want, sizeof(want));
			assert_int_equal(
				tk_symbolizer_lookup_file(s, files[f], NULL, off + 2, &info), 0);
			assert_non_null(info.symbol);
			/* perf's pick: the longer name. */
			assert_string_equal(info.symbol, k ? "tkaaaaa" : "alias_long_a");
			alias = tk_symbolizer_a2l_alias(s, files[f], NULL, off + 2);
			if (strcmp(want, info.symbol)) {
				assert_non_null(alias);
				assert_string_equal(alias, want);
				disagree++;
			} else {
				assert_null(alias);
			}
		}
	}
	/* The case the function is for occurs at least once. */
	assert_true(disagree > 0);
	tk_symbolizer_free(s);
}

static void test_lookup_uprobe(void **state)
{
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	struct tk_cache *c;
	int n;

	(void)state;
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, bin, NULL), 1);
	assert_int_equal(tk_cache_add_probe(c, bin, "work+4"), 0);
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	/* A .dat uprobe event: group and event name only, no process maps. */
	assert_int_equal(tk_symbolizer_lookup_uprobe(s, "sdt_tkdemo", "start", 0, &info), 0);
	assert_string_equal(info.symbol, "work");
	assert_string_equal(info.dso, bin);
	assert_int_equal(tk_symbolizer_lookup_uprobe(s, "probe_sdtdemo", "work", 0x1234, &info), 0);
	assert_string_equal(info.symbol, "work");
	assert_int_equal(info.offset, 4);
	/* EVENT_1 (a second place of an SDT name) resolves through EVENT's places in the cache. */
	assert_int_equal(tk_symbolizer_lookup_uprobe(s, "sdt_tkdemo", "start_1", 0, &info), 0);
	assert_string_equal(info.symbol, "work");
	assert_int_equal(tk_symbolizer_lookup_uprobe(s, "nogroup", "noevent_1", 0, &info), -ENOENT);
	assert_int_equal(tk_symbolizer_lookup_uprobe(s, "nogroup", "noevent", 0, &info), -ENOENT);
	assert_int_equal(tk_symbolizer_lookup_uprobe(s, "", "x", 0, &info), -EINVAL);
	/* Our own process: main() of this test binary resolves through /proc/self/maps. */
	n = tk_symbolizer_add_pid(s, getpid());
	assert_true(n > 0);
	assert_int_equal(tk_symbolizer_lookup(s, (uint64_t)(uintptr_t)&test_lookup_uprobe, &info),
			 0);
	assert_non_null(info.symbol);
	assert_string_equal(info.symbol, "test_lookup_uprobe");
	assert_int_equal(tk_symbolizer_add_pid(s, 999999999), -ENOENT);
	tk_symbolizer_free(s);
	tk_cache_close(c);
}

/* @path's build id as hex into @hex. */
static void file_bid(const char *path, char *hex)
{
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf = tk_elf_open(path);
	int n;

	assert_non_null(elf);
	n = tk_elf_build_id(elf, id, sizeof(id));
	assert_true(n > 0);
	assert_true(tk_elf_build_id_hex(id, (size_t)n, hex, TK_BUILD_ID_HEX_MAX) > 0);
	tk_elf_close(elf);
}

/*
 * A binary is named only from a file of its build id: the path when its
 * id matches (or the DSO has none, as perf), else nothing; --symfs moves
 * the path. Pairs of (path, id) are DSOs of their own.
 */
static void test_build_id_mismatch(void **state)
{
	char bid[TK_BUILD_ID_HEX_MAX], bid2[TK_BUILD_ID_HEX_MAX], sfs[200], cmd[600];
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	struct tk_elf *elf;
	uint64_t work;

	(void)state;
	file_bid(bin, bid);
	file_bid(bin2, bid2);
	elf = tk_elf_open(bin);
	assert_non_null(elf);
	/* In a PIE the text's file offset is its address. */
	work = symbol_value(elf, TK_ELF_SYMTAB, "work");
	tk_elf_close(elf);
	assert_true(work > 0);

	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_lookup_file(s, bin, bid, work, &info), 0);
	assert_string_equal(info.symbol, "work");
	/* Recorded with another build id (bin2's): the file at the path is not that binary. */
	assert_int_equal(tk_symbolizer_lookup_file(s, bin, bid2, work, &info), -ENOENT);
	assert_null(info.symbol);
	assert_string_equal(info.dso, bin);
	/* And a map of it names nothing either, though the address is mapped. */
	assert_int_equal(tk_symbolizer_add_map(s, 0x400000, 0x10000, 0, bin, bid2), 0);
	assert_int_equal(tk_symbolizer_lookup(s, 0x400000 + work, &info), 0);
	assert_null(info.symbol);
	/* No recorded build id: the path as it is, as perf does. */
	assert_int_equal(tk_symbolizer_lookup_file(s, bin, "", work, &info), 0);
	assert_string_equal(info.symbol, "work");
	tk_symbolizer_free(s);

	/* --symfs: the binary below DIR, still only of the recorded id. */
	snprintf(sfs, sizeof(sfs), "%s/symfs", tmpdir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/gone && cp %s %s/gone/sdtdemo", sfs, bin, sfs);
	assert_int_equal(system(cmd), 0);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_set_symfs(s, sfs), 0);
	assert_int_equal(tk_symbolizer_lookup_file(s, "/gone/sdtdemo", bid, work, &info), 0);
	assert_string_equal(info.symbol, "work");
	assert_string_equal(info.dso, "/gone/sdtdemo");
	assert_int_equal(tk_symbolizer_lookup_file(s, "/gone/sdtdemo", bid2, work, &info), -ENOENT);
	/* The path outside DIR is not looked at. */
	assert_int_equal(tk_symbolizer_lookup_file(s, bin, bid, work, &info), -ENOENT);
	tk_symbolizer_free(s);
}

/*
 * The kernel: a given kallsyms is trusted; else this machine's only for
 * its own build id; else the cache's [kernel.kallsyms]/ID/kallsyms; else
 * nothing.
 */
static void test_kernel_sources(void **state)
{
	static const char other[] = "0123456789abcdef0123456789abcdef01234567";
	static const char text[] = "ffffffff81000000 T fake_entry\n"
				   "ffffffff81000100 t fake_helper\n"
				   "ffffffff81000200 T fake_end\n";
	const uint64_t addr = 0xffffffff81000110ull;
	char path[300], cmd[600];
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	struct tk_cache *c;

	(void)state;
	fresh_cache();
	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	put(path, text, sizeof(text) - 1);

	/* Another kernel's id, no cache: [unknown], never this machine's names. */
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_lookup_file(s, "[kernel.kallsyms]", other, addr, &info),
			 -ENOENT);
	assert_null(info.symbol);
	tk_symbolizer_free(s);

	/* --kallsyms: used whatever the id. */
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_set_kallsyms(s, path), 0);
	assert_int_equal(tk_symbolizer_lookup_file(s, "[kernel.kallsyms]", other, addr, &info), 0);
	assert_string_equal(info.symbol, "fake_helper");
	assert_int_equal(info.offset, 0x10);
	tk_symbolizer_free(s);

	/* The cache's kallsyms of that id. */
	c = tk_cache_open(cdir);
	assert_non_null(c);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/[kernel.kallsyms]/%s' && cp %s '%s/[kernel.kallsyms]/%s/'", cdir,
		 other, path, cdir, other);
	assert_int_equal(system(cmd), 0);
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_lookup_file(s, "[kernel.kallsyms]", other, addr, &info), 0);
	assert_string_equal(info.symbol, "fake_helper");
	tk_symbolizer_free(s);
	tk_cache_close(c);
}

/* A JIT's /tmp/perf-PID.map: "START SIZE NAME" lines, process addresses, sizes kept. */
static void test_perf_map(void **state)
{
	static const char text[] = "1000 10 jit_one\n"
				   "1020 8 jit two\n"
				   "zz\n"
				   "\n";
	char path[100];
	struct tk_symbol_info info;
	struct tk_symbolizer *s;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/perf-tktest%d.map", (int)getpid());
	put(path, text, sizeof(text) - 1);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_add_map(s, 0x1000, 0x1000, 0, path, NULL), 0);
	assert_int_equal(tk_symbolizer_lookup(s, 0x1008, &info), 0);
	assert_string_equal(info.symbol, "jit_one");
	assert_int_equal(info.offset, 8);
	assert_string_equal(info.dso, path);
	assert_int_equal(tk_symbolizer_lookup(s, 0x1024, &info), 0);
	assert_string_equal(info.symbol, "jit two");
	/* Past a symbol's size: none. */
	assert_int_equal(tk_symbolizer_lookup(s, 0x1018, &info), 0);
	assert_null(info.symbol);
	tk_symbolizer_free(s);
	unlink(path);
}

/*
 * A kernel module: its .ko (tests/data/perf/usbdemo.ko, .text at file
 * offset 0x64) found by build id in the cache, or at the recorded path
 * below --symfs when it has that id, or as it is without one; an offset
 * in the module map plus .text's file offset is the key, as in perf. A
 * file of another build id, or no .ko, names nothing (return 0).
 */
static void test_kmodule(void **state)
{
	static const char mod[] = "/lib/modules/6.1.0-27-amd64/kernel/drivers/usbdemo.ko";
	static const char bid[] = "5eb1d0c0ffee0000000000000000000000000001";
	static const char bid2[] = "5eb1d0c0ffee0000000000000000000000000002";
	char ko[400], other[400], sfs[200], cmd[1200];
	const char *src = getenv("TK_SOURCE_DIR");
	struct tk_symbol_info info;
	struct tk_symbolizer *s;
	struct tk_cache *c;

	(void)state;
	snprintf(ko, sizeof(ko), "%s/tests/data/perf/usbdemo.ko", src ? src : ".");
	snprintf(other, sizeof(other), "%s/tests/data/perf/usbdemo-other.ko", src ? src : ".");
	fresh_cache();
	c = tk_cache_open(cdir);
	assert_non_null(c);
	assert_int_equal(tk_cache_add(c, ko, NULL), 0);
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, bid, 0x3, &info), 1);
	assert_string_equal(info.symbol, "demo_helper");
	assert_int_equal(info.offset, 3);
	assert_int_equal(info.file_offset, 0x67);
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, bid, 0x63, &info), 1);
	assert_string_equal(info.symbol, "demo_poll");
	assert_int_equal(info.offset, 0x19);
	/* Past .text (demo_init's .init.text is not placed): the module, no symbol. */
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, bid, 0x66, &info), 1);
	assert_null(info.symbol);
	assert_int_equal(info.file_offset, 0xca);
	/* Another build id: not in the cache, nor at the path. */
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, bid2, 0x3, &info), 0);
	assert_null(info.symbol);
	assert_int_equal(info.file_offset, 0x3);
	/* A binary is no module. */
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, bin, NULL, 0x3, &info), 0);
	tk_symbolizer_free(s);

	/* --symfs: the recorded path below DIR, of the recorded id; DIR/.debug is the cache. */
	snprintf(sfs, sizeof(sfs), "%s/kmodfs", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/lib/modules/6.1.0-27-amd64/kernel/drivers && cp %s %s%s", sfs, other,
		 sfs, mod);
	assert_int_equal(system(cmd), 0);
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_set_symfs(s, sfs), 0);
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, bid, 0x3, &info), 0);
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, bid2, 0xa, &info), 1);
	assert_string_equal(info.symbol, "demo_other");
	tk_symbolizer_free(s);
	/* No recorded build id: the file at the path as it is, as perf does. */
	s = tk_symbolizer_new(c);
	assert_non_null(s);
	assert_int_equal(tk_symbolizer_set_symfs(s, sfs), 0);
	assert_int_equal(tk_symbolizer_lookup_kmodule(s, mod, NULL, 0xa, &info), 1);
	assert_string_equal(info.symbol, "demo_other");
	tk_symbolizer_free(s);
	tk_cache_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbolize),      cmocka_unit_test(test_debuginfo),
		cmocka_unit_test(test_lookup_uprobe),  cmocka_unit_test(test_build_id_mismatch),
		cmocka_unit_test(test_kernel_sources), cmocka_unit_test(test_perf_map),
		cmocka_unit_test(test_kmodule),	       cmocka_unit_test(test_a2l_alias),
	};

	if (system("command -v cc >/dev/null && (test -e /usr/include/x86_64-linux-gnu/sys/sdt.h"
		   " || test -e /usr/include/sys/sdt.h)")) {
		printf("skip: needs cc and <sys/sdt.h> (systemtap-sdt-dev)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, sdt_setup, tk_tmpdir_teardown);
}
