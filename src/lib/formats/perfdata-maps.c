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
 *
 * Kernel modules (tk_perf_kmods_*). perf record writes a module's map from
 * /proc/modules: its start is where the module's .text was loaded, its
 * name the .ko's path under /lib/modules. perf 6.1 makes the module a dso
 * of its own (machine__addnew_module_map()) and reads its symbols from a
 * .ko of the recorded build id only, as it does for binaries: the
 * build-id cache's .build-id/xx/rest/elf, else the recorded path below
 * --symfs when that file has the id (never /usr/lib/debug: that is for
 * user binaries). A module without a recorded build id takes the file at
 * the path as it is. The BUILD_ID entry that names the module (misc
 * kernel, same module name) also names the dso: perf script then prints
 * its path where it prints "[name]" otherwise; perf report prints
 * "[name]" either way.
 *
 * Which addresses a .ko names: a relocatable file's symbols are relative
 * to their sections, and perf knows where only .text was loaded (the map's
 * start): it keys a symbol by value + its section's file offset, and sets
 * the map's pgoff to .text's file offset, so an ip is looked up at ip -
 * start + that offset. Symbols of the module's other sections (.init.text,
 * .exit.text, .text.unlikely) go to maps perf places at 0, which no kernel
 * address reaches: their addresses print [unknown] with the module's dso,
 * and so do they here (elf.c's tk_elf_symtab_new_kmodule() keeps .text's
 * symbols only). perf reads /sys/module/NAME/sections only for s390's
 * .text, and only on the running machine: a file from elsewhere is placed
 * by its MMAP record alone, as here. perf report shows an unnamed module
 * address as that looked-up offset (the .ko's file offset), or as ip -
 * start when no .ko was found.
 *
 * Without its .ko, perf names a module's addresses from kallsyms once the
 * kernel's symbols are loaded: it splits the kallsyms symbols tagged with
 * the module's name into the module's dso, placed relative to the map.
 * A module whose dso was loaded before (an address of it looked up first,
 * no .ko found) loses the first of them: perf 6.1's split checks a dso's
 * loaded flag only when it switches to the module, and drops the symbol
 * at hand. A kallsyms symbol that starts below the module's map is
 * another dso's and names nothing in it. With its .ko,
 * the .ko's symbols are used: perf drops the kallsyms ones when the .ko
 * comes second; when it comes first, perf 6.1 adds a kallsyms's symbols
 * of the module to the same table at ip - start + pgoff, where the same
 * functions sit at the same keys, so names differ only for functions of
 * the module's other sections that a kallsyms lists (not followed).
 */
#include "perfdata-maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "symbolizer-internal.h"

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

/*
 * The build id the file records for module @mod ("[name]"): a kernel-space
 * BUILD_ID entry whose file name is that module's; NULL when none. perf
 * finds the module's dso by that short name, so the entry's own file name
 * is the dso's.
 */
static const struct tk_perfdata_build_id *kmod_build_id(const struct tk_perfdata *pd,
							const char *mod)
{
	size_t n = pd ? tk_perfdata_build_id_count(pd) : 0;

	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(pd, i);
		unsigned int mode = b->misc & 7;
		char *other = NULL;
		bool same;

		/* PERF_RECORD_MISC_KERNEL (1) and GUEST_KERNEL (4): perf's kernel dsos. */
		if (!b->filename || (mode != 1 && mode != 4) ||
		    tk_perf_map_module_name(b->filename, strlen(b->filename), &other) < 0)
			continue;
		same = other && !strcmp(other, mod);
		free(other);
		if (same)
			return b;
	}
	return NULL;
}

static void kmod_free(struct tk_perf_kmod *m)
{
	free(m->name);
	free(m->path);
}

int tk_perf_kmods_add(struct tk_perf_kmods *km, const struct tk_perfdata *pd, const char *name,
		      size_t max, uint64_t start, uint64_t len)
{
	static uint64_t gens;
	const struct tk_perfdata_build_id *b;
	struct tk_perf_kmod *v, *m;
	uint64_t end = start + len;
	char *mod;
	int ret = tk_perf_map_module_name(name, max, &mod);

	if (ret < 0 || !mod)
		return ret;
	if (!len || end < start) {
		free(mod);
		return 0;
	}
	/* Each overlap leaves at most two pieces: room for two more maps than now. */
	v = realloc(km->v, (km->n + 3) * sizeof(*v));
	if (!v) {
		free(mod);
		return -ENOMEM;
	}
	km->v = v;
	km->gen = __atomic_add_fetch(&gens, 1, __ATOMIC_RELAXED);
	/* A new map hides what it overlaps, and only that (perf's maps__fixup_overlappings()). */
	for (size_t i = 0; i < km->n;) {
		struct tk_perf_kmod *o = &km->v[i];

		if (o->end <= start || end <= o->start) {
			i++;
		} else if (o->start < start && o->end > end) {
			struct tk_perf_kmod *after = &km->v[km->n];

			*after = *o;
			after->name = strdup(o->name);
			after->path = strdup(o->path);
			if (!after->name || !after->path) {
				kmod_free(after);
				free(mod);
				return -ENOMEM;
			}
			after->shown = o->shown == o->path ? after->path : after->name;
			after->pgoff += end - o->start;
			after->start = end;
			o->end = start;
			km->n++;
			break;
		} else if (o->start < start) {
			o->end = start;
			i++;
		} else if (o->end > end) {
			o->pgoff += end - o->start;
			o->start = end;
			i++;
		} else {
			kmod_free(o);
			*o = km->v[--km->n];
		}
	}
	m = &km->v[km->n];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->name = mod;
	b = kmod_build_id(pd, mod);
	m->path = b ? strdup(b->filename) : strndup(name, max);
	if (!m->path) {
		free(mod);
		return -ENOMEM;
	}
	m->shown = m->name;
	if (b && tk_elf_build_id_hex(b->id, b->size, m->bid, sizeof(m->bid)) > 0)
		m->shown = m->path;
	else
		m->bid[0] = '\0';
	km->n++;
	return 0;
}

void tk_perf_kmods_release(struct tk_perf_kmods *km)
{
	for (size_t i = 0; i < km->n; i++)
		kmod_free(&km->v[i]);
	free(km->v);
	memset(km, 0, sizeof(*km));
}

struct tk_perf_kmod *tk_perf_kmods_find(struct tk_perf_kmods *km, uint64_t ip, bool *outside)
{
	*outside = false;
	for (size_t i = 0; i < km->n; i++) {
		if (ip >= km->v[i].start && ip < km->v[i].end)
			return &km->v[i];
		if (ip >= km->v[i].start)
			*outside = true;
	}
	return NULL;
}

int tk_perf_kmod_symbol(struct tk_symbolizer *sym, struct tk_perf_kmod *m, uint64_t ip,
			const char *kbid, bool kernel_loaded, struct tk_symbol_info *info)
{
	uint64_t off = ip - m->start + m->pgoff, base = m->start - m->pgoff, start;
	struct tk_symbol_info prev;
	int r;

	memset(info, 0, sizeof(*info));
	info->file_offset = off;
	if (!m->seen)
		m->early = !kernel_loaded;
	m->seen = true;
	if (!sym)
		return 0;
	if (m->path[0] == '/') {
		r = tk_symbolizer_lookup_kmodule(sym, m->path, m->bid[0] ? m->bid : NULL, off,
						 info);
		if (r != 0)
			return r;
	}
	/* No .ko: the module's share of the kernel's kallsyms, once perf has loaded it. */
	if (!kernel_loaded ||
	    tk_symbolizer_lookup_file(sym, "[kernel.kallsyms]", kbid, ip, info) < 0 ||
	    !info->symbol || (start = ip - info->offset) < base ||
	    (m->early &&
	     (start == 0 ||
	      tk_symbolizer_lookup_file(sym, "[kernel.kallsyms]", kbid, start - 1, &prev) < 0 ||
	      !prev.symbol || start - 1 - prev.offset < base))) {
		info->symbol = NULL;
		info->offset = 0;
	}
	info->file_offset = off;
	return 0;
}
