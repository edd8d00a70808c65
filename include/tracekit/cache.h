/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The build-id cache shared with perf: binaries and kallsyms by build id,
 * their probe caches (SDT and user probes, as uprobe_events lines), queries
 * over them, and a size limit with least-recently-used eviction. Address
 * symbolization through the cached files is symbolizer.h's (included here).
 *
 * The directory layout and the probes file are perf 6.1's, byte for byte:
 *
 *	DIR/<abs path without '/'>/<build id>/{elf,debug,probes}
 *	DIR/[kernel.kallsyms]/<build id>/{kallsyms,probes}
 *	DIR/[kernel.kcore]/<build id>/<YYYYmmddHHMMSShh>/{kcore,kallsyms,modules}
 *	DIR/.build-id/<2 hex>/<rest> -> ../../<path>/<build id>
 *
 * Separate debug files are looked up in $TRACEKIT_DEBUG_DIR (default
 * /usr/lib/debug) as .build-id/<2 hex>/<rest>.debug, as perf does in
 * /usr/lib/debug.
 *
 * so perf buildid-cache --list, perf probe --cache --list and perf report
 * use what tracekit caches, and the other way round.
 */
#ifndef TRACEKIT_CACHE_H
#define TRACEKIT_CACHE_H

#include <tracekit/common.h>
#include <tracekit/elf.h>
#include <tracekit/symbolizer.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_cache;

/**
 * tk_cache_open() - open (and create) a cache directory
 * @dir: the directory, or NULL for $TRACEKIT_CACHE_DIR, then $HOME/.debug
 * Context: blocking; a handle is for one thread. Several processes may
 * use one directory: every file is replaced by rename() or link().
 * Return: handle for tk_cache_close(), or NULL with errno set and
 * tk_errmsg() naming the directory.
 */
TK_API struct tk_cache *tk_cache_open(const char *dir);

/**
 * tk_cache_open_existing() - open a cache directory only if it exists
 * @dir: as for tk_cache_open()
 *
 * For readers (reports symbolizing through the cache), which must not
 * create ~/.debug as a side effect.
 * Return: the handle, or NULL with errno ENOENT when there is no such
 * directory (or as tk_cache_open()).
 */
TK_API struct tk_cache *tk_cache_open_existing(const char *dir);

/** tk_cache_close() - NULL is accepted. */
TK_API void tk_cache_close(struct tk_cache *cache);

/** The cache directory; borrowed until close. */
TK_API const char *tk_cache_dir(const struct tk_cache *cache);

/**
 * tk_cache_set_gzip() - write probe caches gzip-compressed from now on
 * @on: true: each entry's probes go to "probes.gz" and "probes" is left
 *      empty; false (the default): plain "probes", as perf writes it
 *
 * perf 6.1 cannot read gzip, so compressed entries are invisible to perf
 * probe --cache (it sees an empty cache, not an error). tracekit reads
 * both forms, and a gzip "probes" too, whatever this setting.
 */
TK_API void tk_cache_set_gzip(struct tk_cache *cache, bool on);

/**
 * tk_cache_add() - cache an ELF file and its SDT probes (perf buildid-cache --add)
 * @path: the file; its absolute, symlink-free path names the entry
 * @bid:  optional, receives the build id as hex (TK_BUILD_ID_HEX_MAX bytes)
 *
 * Hard-links the file as "elf" (copies it across file systems), links
 * /usr/lib/debug/.build-id/xx/rest.debug as "debug" when present, makes
 * the .build-id link and rewrites "probes" with one "%sdt_PROVIDER:NAME"
 * entry per SDT name, keeping the user probes already cached there.
 * A file whose symbol table is unreadable is cached all the same (its
 * build id and SDT notes are sound), with a warning naming file and offset.
 * Return: number of SDT entries written (>= 0), -ENOENT when the file has
 * no build id, -EBADMSG for a malformed or truncated ELF, or an I/O errno;
 * tk_errmsg() names the file.
 */
TK_API int tk_cache_add(struct tk_cache *cache, const char *path, char *bid);

/**
 * tk_cache_add_probe() - cache a user probe on a binary (perf probe --cache -x PATH SPEC)
 * @path: the binary (added to the cache first when it is not there)
 * @spec: "[[GROUP:]EVENT=]FUNC[+OFFSET][%return] [ARG ...]"; FUNC is a
 *        symbol of .symtab/.dynsym; ARGs are uprobe_events fetch args
 *        ("x=%di:s32", "$retval"). Default group: probe_<basename>.
 * Return: 0, -ENOENT for an unknown function, -EINVAL for a bad spec.
 */
TK_API int tk_cache_add_probe(struct tk_cache *cache, const char *path, const char *spec);

/**
 * tk_cache_add_kernel() - cache /proc/kallsyms under the running kernel's build id
 * @bid: optional, receives the kernel build id as hex
 * Return: 0 or a negative errno.
 */
TK_API int tk_cache_add_kernel(struct tk_cache *cache, char *bid);

/**
 * tk_cache_add_kcore() - cache a kcore with its kallsyms and modules (perf buildid-cache --kcore)
 * @path:  a file named "kcore" (e.g. /proc/kcore) in a directory that also
 *         holds "kallsyms" and "modules" (the matching /proc files)
 * @force: copy even when an identical kcore (same modules file, same
 *         _stext) is already cached
 * @bid:   optional, receives the kernel build id as hex
 *
 * The build id is read, as perf does, from DIR/../sys/kernel/notes (so
 * /proc/kcore takes /sys/kernel/notes), else from the BUILD-ID line of a
 * VMCOREINFO note in the kcore. Only the kernel text (_stext to _etext) and
 * the module area are copied, into a compact ELF core whose PT_LOAD
 * headers keep their addresses, at
 * DIR/[kernel.kcore]/BUILDID/YYYYmmddHHMMSShh/{kcore,kallsyms,modules}
 * (mode 0400, like perf's). No .build-id link is made (perf makes none);
 * the copy still counts in tk_cache_stats() (as a kernel entry), ages and
 * is evicted like any entry, and tk_cache_gc() removes one without its
 * kcore file.
 * Return: 1 when copied, 0 when an identical copy is cached already,
 * -EINVAL for a file not named kcore, -ENOEXEC / -EBADMSG for a file that
 * is not an ELF core or is corrupt (message names file and offset), -ENOENT
 * for a missing kallsyms/modules or no build id, -EAGAIN when kallsyms
 * changed during the copy, or an I/O errno.
 */
TK_API int tk_cache_add_kcore(struct tk_cache *cache, const char *path, bool force, char *bid);

/**
 * tk_cache_add_kernel_probe() - cache a kernel probe (perf probe --cache SPEC)
 * @kallsyms: the kernel's kallsyms file, or NULL for /proc/kallsyms
 * @bid:      hex build id of that kernel, or NULL for the running one
 * @spec:     "[[GROUP:]EVENT=]FUNC[+OFFSET][%return] [ARG ...]"
 *
 * Caches @kallsyms as [kernel.kallsyms]/BUILDID/kallsyms when it is not
 * there, with its .build-id link, and writes "#SPEC" followed by
 * "p:GROUP/EVENT _text+OFFSET ARGS" (decimal offset from _text, so the
 * line survives KASLR; "r:" and EVENT__return for %return) to its probes
 * file. Default group: "probe". tk_cache_resolve() does not return kernel
 * probes (they need kprobe_events).
 * Return: 0, -ENOENT for an unknown function or no _text, -EINVAL for a
 * bad spec, -EBADMSG for a malformed kallsyms.
 */
TK_API int tk_cache_add_kernel_probe(struct tk_cache *cache, const char *kallsyms, const char *bid,
				     const char *spec);

/**
 * tk_cache_remove() - remove the entry of a file's current build id, or of a build id
 * @what: a path, or a build id of 16 to 40 hex digits (a prefix of at
 *        least 8 digits is accepted when it is unique)
 *
 * A path removes its own entry; other paths cached with the same build id
 * stay, and when the removed entry held the .build-id link, the link moves
 * to one of them. A build id, or a file cached only under other paths,
 * removes every entry of that id.
 * Return: number of entries removed (>= 1), -ENOENT when not cached,
 * -EINVAL for an ambiguous prefix.
 */
TK_API int tk_cache_remove(struct tk_cache *cache, const char *what);

/** One cache entry, as listings and callbacks see it; borrowed during the callback. */
struct tk_cache_entry {
	const char *build_id; /* hex */
	const char *path;     /* original path ("/usr/bin/ls", "[kernel.kallsyms]") */
	const char *dir;      /* absolute entry directory */
	bool valid;	      /* the path still has this build id (perf lists only these) */
	uint64_t bytes;	      /* apparent size of the entry's files */
	int64_t last_use;     /* seconds since the epoch of the last add or lookup
			       * (the mtime of the entry's ".tk-use" stamp, else of
			       * its directory); listings and stats leave it alone */
};

typedef int (*tk_cache_entry_fn)(const struct tk_cache_entry *entry, void *ctx);

/**
 * tk_cache_for_each() - call @fn for each entry, in build-id order
 * @all: include stale entries (the file changed or is gone), [vdso], and
 *       the entry directories no .build-id link reaches (a second path
 *       with the same build id, which perf does not link either)
 * Return: number of entries visited, or the first negative @fn result.
 */
TK_API int tk_cache_for_each(struct tk_cache *cache, bool all, tk_cache_entry_fn fn, void *ctx);

/** One entry of a probes file; borrowed during the callback. */
struct tk_cache_probe {
	const struct tk_cache_entry *entry;
	const char *spec;  /* marker line without '%'/'#': "sdt_tkdemo:start=start" */
	bool sdt;	   /* '%' (SDT) entry rather than a '#' user probe */
	const char *group; /* from the first definition: "sdt_tkdemo" */
	const char *event; /* "start" */
	const char *const
		*defs; /* uprobe_events lines ("p:sdt_tkdemo/start /bin:0x1129(0x3012) ...") */
	size_t ndefs;
};

typedef int (*tk_cache_probe_fn)(const struct tk_cache_probe *probe, void *ctx);

/**
 * tk_cache_query() - the cached probes matching a query (the RFC's --query)
 * @query: "[%][GROUP:|GROUP/]EVENT[@PATH][#BUILDID]"; GROUP and EVENT are
 *         globs, GROUP "P" also matches "sdt_P", EVENT also matches the raw
 *         spec of an unnamed user probe; PATH matches the whole path or
 *         its basename (glob); BUILDID is a hex prefix. NULL or "" matches all.
 * @all:   also search stale entries
 *
 * The entries where probes matched count as used for tk_cache_evict();
 * a NULL or empty @query is a listing and marks nothing.
 * Return: number of matching probes, -EINVAL for a bad query, or the
 * first negative @fn result.
 */
TK_API int tk_cache_query(struct tk_cache *cache, const char *query, bool all, tk_cache_probe_fn fn,
			  void *ctx);

/**
 * tk_cache_probe_del() - delete the probes matching @query from their probes files
 * Return: number of probes deleted (0 when none matched).
 */
TK_API int tk_cache_probe_del(struct tk_cache *cache, const char *query);

/** A uprobe to create, resolved from the cache. */
struct tk_cache_uprobe {
	char *group;	  /* "sdt_tkdemo" */
	char *event;	  /* "start" */
	char *def;	  /* the whole uprobe_events line */
	char *path;	  /* the binary */
	uint64_t offset;  /* file offset of the probe */
	uint64_t ref_ctr; /* file offset of the SDT semaphore, 0 when none */
	char build_id[TK_BUILD_ID_HEX_MAX];
};

/**
 * tk_cache_resolve() - turn a record event spec into uprobe_events lines
 * @spec: "%PROVIDER/EVENT", "%PROVIDER:EVENT", "sdt_PROVIDER:EVENT",
 *        "%GROUP/EVENT" (user probes), each optionally "@PATH" / "#BUILDID"
 *        as in tk_cache_query(); only valid entries (the file on disk has
 *        the cached build id) are used
 * @out:   receives a malloc'ed array for tk_cache_uprobes_free()
 * @count: its length; one element per definition line (an SDT name used
 *         at several places gives several lines under one event name,
 *         which the kernel appends to one event)
 * Write each def to uprobe_events (O_APPEND); remove with "-:GROUP/EVENT".
 * Return: @count (> 0), -ENOENT when nothing matched (message says so),
 * -EINVAL for a spec that is not a cache reference.
 */
TK_API int tk_cache_resolve(struct tk_cache *cache, const char *spec, struct tk_cache_uprobe **out,
			    size_t *count);

/** tk_cache_uprobes_free() - free what tk_cache_resolve() returned. NULL is accepted. */
TK_API void tk_cache_uprobes_free(struct tk_cache_uprobe *probes, size_t count);

/** Totals of a cache (tracekit cache --stats). */
struct tk_cache_stats {
	uint64_t entries;
	uint64_t valid;
	uint64_t stale;
	uint64_t kernel;
	uint64_t bytes;
	uint64_t sdt_probes;
	uint64_t user_probes;
	int64_t oldest_use;
	int64_t newest_use;
};

/**
 * tk_cache_stats() - count the cache: every entry on disk, linked or not
 * (what tk_cache_evict() and tk_cache_gc() act on); probes of the linked
 * entries. Reading is no use of an entry.
 * Return: 0 or a negative errno.
 */
TK_API int tk_cache_stats(struct tk_cache *cache, struct tk_cache_stats *stats);

/**
 * tk_cache_evict() - remove least-recently-used entries until the cache holds <= @max_bytes
 *
 * An entry is used when it is added, when the symbolizer reads symbols
 * through it and when a query matches its probes; reading the cache
 * (listings, tk_cache_stats(), other tools) is not a use.
 * Return: number of entries removed.
 */
TK_API int tk_cache_evict(struct tk_cache *cache, uint64_t max_bytes);

/**
 * tk_cache_gc() - remove debris: dangling .build-id links, entry
 * directories without a file, entry directories of a build id that has
 * no link at all (perf buildid-cache --remove of the linked path leaves
 * the other paths so), empty directories left by removals (perf
 * buildid-cache --remove/--purge leave them)
 * Return: number of things removed.
 */
TK_API int tk_cache_gc(struct tk_cache *cache);

#ifdef __cplusplus
}
#endif
#endif
