/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The fixture test-cache.c and test-symbolizer.c share: a temporary
 * directory holding a cache directory and two small binaries built from C
 * with cc, one with a USDT probe (tkdemo:start, with a semaphore) and one
 * without. Both binaries have the same code but for the second's extra
 * function, so their build ids differ. Include after <cmocka.h>; the test
 * runs sdt_setup and tk_tmpdir_teardown as its group setup and teardown.
 */
#ifndef TRACEKIT_SDT_FIXTURE_H
#define TRACEKIT_SDT_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/elf.h>

#include "tk-test.h"
#include "tk-tmpdir.h"

/* The cache in tmpdir, and the binaries with and without the probe. */
static char cdir[300], bin[300], bin2[300];

static const char sdt_src[] =
	"#define _SDT_HAS_SEMAPHORES 1\n"
	"#include <sys/sdt.h>\n"
	"unsigned short tkdemo_start_semaphore __attribute__((section(\".probes\")));\n"
	"int work(int x, long y);\n"
	"int work(int x, long y) { STAP_PROBE2(tkdemo, start, x, y); return x + (int)y; }\n"
	"int main(int argc, char **argv) { (void)argv; return work(argc, 3) == 12345; }\n";

/* Build @out from the probe source plus @extra C text; 0, or -1 when cc fails. */
static inline int sdt_build(const char *out, const char *extra)
{
	char cmd[600];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/src.c", tmpdir);
	f = fopen(cmd, "w");
	if (!f)
		return -1;
	fprintf(f, "%s%s", sdt_src, extra);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -o %s %s/src.c 2>/dev/null", out, tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Make tmpdir and build both binaries in it (the group setup). */
static inline int sdt_setup(void **state)
{
	(void)state;
	if (tk_tmpdir_make())
		return -1;
	snprintf(cdir, sizeof(cdir), "%s/cache", tmpdir);
	snprintf(bin, sizeof(bin), "%s/sdtdemo", tmpdir);
	snprintf(bin2, sizeof(bin2), "%s/other", tmpdir);
	if (sdt_build(bin, "") ||
	    sdt_build(bin2, "int other(void); int other(void) { return 7; }\n"))
		return -1;
	return 0;
}

/* Start the next test with no cache directory at all. */
static inline void fresh_cache(void)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", cdir);
	assert_int_equal(system(cmd), 0);
}

/* The value of the last symbol named NAME in ELF's table KIND, 0 when there is none. */
static inline uint64_t symbol_value(struct tk_elf *elf, enum tk_elf_symtab_kind kind,
				    const char *name)
{
	const struct tk_elf_symbol *syms;
	uint64_t value = 0;
	size_t n;

	assert_int_equal(tk_elf_symbols(elf, kind, &syms, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(syms[i].name, name))
			value = syms[i].value;
	return value;
}

/* Write @len bytes of @data to @path. */
static inline void put(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

#endif
