/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perfdata-maps: the names perf gives the maps of MMAP/MMAP2 records, shared
 * by every reader that symbolizes samples (perf script's text, the sample
 * analyses). perfdata-maps.c holds the notes.
 */
#ifndef TRACEKIT_PERFDATA_MAPS_H
#define TRACEKIT_PERFDATA_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracekit/elf.h>
#include <tracekit/perfdata.h>
#include <tracekit/symbolizer.h>

/*
 * tk_perf_map_path() - the name perf gives the map of the MMAP/MMAP2 record
 * @rec of process @pid: @*path (malloc'ed file name from the record) may be
 * replaced by the JIT map file's name. @*identity: the map's ips are shown
 * and looked up as they are (anonymous memory, the heap, the stack).
 * Returns 0 or -ENOMEM.
 */
int tk_perf_map_path(const struct tk_perf_record *rec, int32_t pid, char **path, bool *identity);

/*
 * tk_perf_map_module_name() - the dso name perf gives a kernel MMAP record
 * (pid -1) named @name (at most @max bytes, not necessarily terminated):
 * @*module is "[name]" malloc'ed for a module, NULL for the kernel's own
 * text or a name that is no module. Returns 0 or -ENOMEM.
 */
int tk_perf_map_module_name(const char *name, size_t max, char **module);

/* A kernel module's map, as perf 6.1 makes one from a kernel MMAP record. */
struct tk_perf_kmod {
	uint64_t start, end, pgoff; /* pgoff: what a later map cut off its front */
	char *name;		    /* "[usbnet]": perf report's dso */
	char *path;		    /* the .ko: the BUILD_ID entry's file name, else the record's */
	const char *shown; /* perf script's dso: path with a recorded build id, else name */
	char bid[TK_BUILD_ID_HEX_MAX]; /* the recorded build id (hex), or "" */
	bool seen;		       /* an address in it was looked up */
	bool early;		       /* the first one before the kernel's symbols loaded */
};

/* The kernel module maps of one perf.data file (zero-initialized). */
struct tk_perf_kmods {
	struct tk_perf_kmod *v;
	size_t n;
	uint64_t gen; /* a new value whenever the maps change */
};

/*
 * tk_perf_kmods_add() - the map of a kernel MMAP record (pid -1) named
 * @name (at most @max bytes, not necessarily terminated) at @start, @len
 * bytes, when the name is a module's (tk_perf_map_module_name()); its
 * build id is the one @pd's BUILD_ID feature records, for a kernel-space
 * entry of the same module name. A new map hides what it overlaps.
 * Returns 0 (also for a name that is no module) or -ENOMEM.
 */
int tk_perf_kmods_add(struct tk_perf_kmods *km, const struct tk_perfdata *pd, const char *name,
		      size_t max, uint64_t start, uint64_t len);

/* tk_perf_kmods_release() - free the maps; @km is empty again. */
void tk_perf_kmods_release(struct tk_perf_kmods *km);

/*
 * tk_perf_kmods_find() - the module map holding @ip, or NULL; @*outside
 * tells an ip in the modules' area (from the lowest module up) that no
 * module holds: perf finds no map for it. Borrowed until the next add or
 * the release.
 */
struct tk_perf_kmod *tk_perf_kmods_find(struct tk_perf_kmods *km, uint64_t ip, bool *outside);

/*
 * tk_perf_kmod_symbol() - name @ip of module map @m as perf 6.1 does: from
 * the module's .ko, found by the symbolizer's rules for the recorded build
 * id (the cache, then the path below --symfs; without a recorded id, the
 * path as it is); else from the kernel's kallsyms (of build id @kbid, or
 * NULL), and only when @kernel_loaded (perf has loaded the kernel's
 * symbols, which it splits among the modules). A module first looked up
 * before that loses its lowest kallsyms symbol (perf 6.1 discards the
 * first symbol of an already loaded module when it splits them), and a
 * kallsyms symbol that starts below the module's map is not the module's.
 * @info: the symbol (NULL for none) and, in file_offset, the address perf
 * report shows for an unnamed ip (the .ko's file offset when the .ko was
 * found, else the offset in the map).
 * Return: 1 when the module's .ko was found, 0 when not, -ENOMEM.
 */
int tk_perf_kmod_symbol(struct tk_symbolizer *sym, struct tk_perf_kmod *m, uint64_t ip,
			const char *kbid, bool kernel_loaded, struct tk_symbol_info *info);

#endif
