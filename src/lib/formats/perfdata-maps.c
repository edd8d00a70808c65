// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-maps: how perf names the maps of a perf.data file's MMAP and
 * MMAP2 records, for perf script's text (present/perfdata-report.c) and
 * the sample analyses (analyze/samples.c), which must name a frame alike.
 *
 * A user map is the file the record names, except that anonymous memory,
 * the heap and the stack are no file (their ips are shown as they are) and
 * executable anonymous memory is JIT code, whose symbols a JIT writes to
 * /tmp/perf-PID.map: perf names such a map so. An MMAP record has no prot
 * field: it maps code unless its misc flags it as data.
 *
 * A kernel MMAP record (pid -1) is the kernel's text ("[kernel.kallsyms]_text",
 * named through kallsyms by the callers) or one per loaded module, whose
 * addresses print with the dso "[name]": perf's kmod_path__parse_name()
 * gives the file name without ".ko..." in brackets with '-' as '_'; a name
 * already in brackets stays as it is.
 */
#include "perfdata-maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MISC_MMAP_DATA (1u << 13) /* an MMAP record of data, not code */

int tk_perf_map_path(const struct tk_perf_record *rec, int32_t pid, char **path, bool *identity)
{
	const uint8_t *d = rec->data;
	const char *f = *path;
	uint32_t prot = PROT_EXEC, flags = 0;
	bool anon, no_dso;
	char *jit;

	if (rec->type == TK_PERF_RECORD_MMAP2 && rec->size >= 72) {
		memcpy(&prot, d + 64, 4);
		memcpy(&flags, d + 68, 4);
	} else if (rec->misc & MISC_MMAP_DATA) {
		prot = 0;
	}
	anon = !strcmp(f, "//anon") || !strncmp(f, "/dev/zero", 9) ||
	       !strncmp(f, "/anon_hugepage", 14) || (flags & MAP_HUGETLB);
	no_dso = !strncmp(f, "[stack", 6) || !strncmp(f, "/SYSV", 5) || !strcmp(f, "[heap]");
	*identity = anon || no_dso;
	if (!*identity || !(prot & PROT_EXEC))
		return 0;
	if (asprintf(&jit, "/tmp/perf-%" PRId32 ".map", pid) < 0)
		return -ENOMEM;
	free(*path);
	*path = jit;
	return 0;
}

int tk_perf_map_module_name(const char *name, size_t max, char **module)
{
	size_t n = strnlen(name, max);
	const char *base, *ko;
	char *copy, *mod;

	*module = NULL;
	if ((n >= 17 && !strncmp(name, "[kernel.kallsyms]", 17)) ||
	    (n >= 22 && !strncmp(name, "[guest.kernel.kallsyms", 22)) || n == 0 ||
	    (name[0] != '/' && name[0] != '['))
		return 0;
	/* The record's bytes need not end in a NUL within @max. */
	copy = strndup(name, n);
	if (!copy)
		return -ENOMEM;
	base = strrchr(copy, '/');
	base = base ? base + 1 : copy;
	ko = strstr(base, ".ko");
	if (copy[0] == '[' || !ko || (ko[3] && ko[3] != '.')) {
		mod = copy;
		copy = NULL;
	} else if (asprintf(&mod, "[%.*s]", (int)(ko - base), base) < 0) {
		mod = NULL;
	}
	free(copy);
	if (!mod)
		return -ENOMEM;
	for (char *c = mod; name[0] != '[' && *c; c++)
		if (*c == '-')
			*c = '_';
	*module = mod;
	return 0;
}
