/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * symbolizer: addresses and uprobe sites to symbol names, through the
 * build-id cache (cache.h) when one is given, else through the files on
 * this machine. Files travel between machines, so a DSO is named from a
 * file whose build id is the recorded one whenever the id is known.
 */
#ifndef TRACEKIT_SYMBOLIZER_H
#define TRACEKIT_SYMBOLIZER_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_cache;

/*
 * A symbolizer holds the address maps of
 * one process (what perf's MMAP2 records say) and loads each DSO's sorted
 * symbol table once, from the cache by build id when it can (so a binary
 * rebuilt since the recording still resolves), else from the path when
 * the file there has the DSO's build id. A DSO whose build id no file
 * here has is left without symbols (its addresses print as perf's
 * [unknown]); a DSO without a build id takes the file at its path, as perf
 * does. The kernel ("[kernel.kallsyms]") is named from /proc/kallsyms only
 * when the running kernel's build id is the DSO's (or it has none), else
 * from the cache's [kernel.kallsyms]/ID/kallsyms.
 *
 * Symbols come from where perf takes them: the binary's .symtab, else the
 * .symtab of a separate debug file with the same build id (the cache
 * entry's "debug", then $TRACEKIT_DEBUG_DIR or /usr/lib/debug
 * .build-id/xx/rest.debug), else the binary's .dynsym. At one address the
 * symbol perf would keep is kept (glibc's brk shows as __brk).
 */
struct tk_symbolizer;

/** tk_symbolizer_new() - @cache may be NULL (paths only). NULL with errno on failure. */
TK_API struct tk_symbolizer *tk_symbolizer_new(struct tk_cache *cache);

/** tk_symbolizer_free() - NULL is accepted. */
TK_API void tk_symbolizer_free(struct tk_symbolizer *sym);

/**
 * tk_symbolizer_set_symfs() - look for binaries below a directory (perf's --symfs)
 * @dir: binaries are read as DIR/PATH (still only when their build id
 *       matches), and the build-id cache is DIR/.debug instead of the
 *       cache given to tk_symbolizer_new() (perf's buildid dir under
 *       --symfs); the kernel is then named from
 *       tk_symbolizer_set_kallsyms()'s file alone (perf tries no kallsyms
 *       of this machine or the cache then).
 *       NULL or "" undoes it.
 * Context: call before the first lookup (symbols already loaded stay).
 * Return: 0 or -ENOMEM.
 */
TK_API int tk_symbolizer_set_symfs(struct tk_symbolizer *sym, const char *dir);

/**
 * tk_symbolizer_set_kallsyms() - name kernel addresses from this kallsyms file
 * @path: a file in /proc/kallsyms's format, used whatever build id the
 *        kernel DSO has (as perf trusts --kallsyms); NULL or "" undoes it
 * Context: call before the first lookup (symbols already loaded stay).
 * Return: 0 or -ENOMEM.
 */
TK_API int tk_symbolizer_set_kallsyms(struct tk_symbolizer *sym, const char *path);

/**
 * tk_symbolizer_set_vmlinux() - name kernel addresses from this ELF (perf's --vmlinux)
 * @path: an uncompressed vmlinux (or any ELF with the kernel's .symtab);
 *        used instead of every kallsyms (tk_symbolizer_set_kallsyms()'s
 *        too), and only when its build id is the one recorded for the
 *        kernel (or none was recorded): otherwise kernel addresses stay
 *        unnamed and one warning says why. Its symbols move by the
 *        recording's _text minus its own _text (a KASLR kernel), as
 *        perf's do. NULL or "" undoes it.
 * Context: call before the first lookup (symbols already loaded stay).
 * Return: 0 or -ENOMEM.
 */
TK_API int tk_symbolizer_set_vmlinux(struct tk_symbolizer *sym, const char *path);

/**
 * tk_symbolizer_add_map() - a mapping of a file into the address space
 * @start, @len, @pgoff: as in /proc/PID/maps and PERF_RECORD_MMAP2
 * @path: the file; "[kernel.kallsyms]" maps the kernel (kallsyms by build id)
 * @build_id: hex, or NULL to use the file's current id
 * Return: 0 or a negative errno (-EINVAL for an empty or wrapping range).
 */
TK_API int tk_symbolizer_add_map(struct tk_symbolizer *sym, uint64_t start, uint64_t len,
				 uint64_t pgoff, const char *path, const char *build_id);

/** What an address resolved to; strings borrowed until tk_symbolizer_free(). */
struct tk_symbol_info {
	const char *dso;      /* the file's path */
	const char *symbol;   /* NULL when no symbol covers the address */
	uint64_t offset;      /* from the symbol's start */
	uint64_t file_offset; /* of the address in the file */
};

/**
 * tk_symbolizer_lookup() - resolve a process address
 * Context: loads a DSO's symbols on first use (blocking), then a binary search.
 * Return: 0 (symbol may be NULL), -ENOENT when no map holds @addr.
 */
TK_API int tk_symbolizer_lookup(struct tk_symbolizer *sym, uint64_t addr,
				struct tk_symbol_info *info);

/**
 * tk_symbolizer_lookup_file() - resolve a file offset in a DSO (a uprobe's PATH:OFFSET)
 *
 * A kernel module (a relocatable .ko) takes the offset of an address in
 * its map (the address minus the map's start), as perf places a module:
 * its .text's symbols only.
 * Return: 0, -ENOENT when the file cannot be read or has no segment there.
 */
TK_API int tk_symbolizer_lookup_file(struct tk_symbolizer *sym, const char *path,
				     const char *build_id, uint64_t offset,
				     struct tk_symbol_info *info);

/**
 * tk_symbolizer_add_pid() - add the file mappings of a live process
 * @pid: read /proc/PID/maps; anonymous, [special] and deleted mappings
 *       are skipped, each file's current build id is used
 * Context: blocking; reads every mapped file's build id.
 * Return: number of mappings added, -ENOENT when the process is gone,
 * -EBADMSG for a maps line that does not parse.
 */
TK_API int tk_symbolizer_add_pid(struct tk_symbolizer *sym, int pid);

/**
 * tk_symbolizer_lookup_uprobe() - resolve the place a uprobe event probes
 * @group, @event: the tracefs event (a .dat event's system and name),
 *        e.g. "sdt_tkdemo", "start" or "probe_app", "work"
 * @ip:   the event's __probe_ip (runtime address), or 0; when an event has
 *        several sites (an SDT name used twice) it picks the site whose
 *        link-time address equals @ip or differs from it by whole pages
 *        (a mapping's load bias), else the first
 *
 * An event named EVENT_N (tracefs's name for the Nth further place of one
 * SDT name) is looked up as EVENT when EVENT_N itself is unknown.
 * Needs no process maps, so it works on a .dat long after the process
 * exited: the definition "PATH:OFFSET" comes from the cache's probes
 * files (valid entries first, then stale ones, whose build id still finds
 * the old binary in the cache), else from the live uprobe_events. Results
 * (and misses) are remembered per event.
 * Return: 0 (info->symbol may be NULL), -ENOENT when the event is unknown
 * or its binary unreadable, -EINVAL for an empty name.
 */
TK_API int tk_symbolizer_lookup_uprobe(struct tk_symbolizer *sym, const char *group,
				       const char *event, uint64_t ip, struct tk_symbol_info *info);

#ifdef __cplusplus
}
#endif
#endif
