/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Probe caches (probecache.c), private to the library: a probes file held
 * as entries, each a marker line and its uprobe_events definitions, and
 * the calls that load, change and store it. See probecache.c's notes for
 * the format. Functions return 0 or a negative errno with tk_errmsg() set.
 */
#ifndef TRACEKIT_PROBECACHE_INTERNAL_H
#define TRACEKIT_PROBECACHE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <tracekit/elf.h>

/* One entry: its marker line and the definitions that follow it. */
struct tk_pentry {
	char *marker; /* whole line with its '%' (SDT) or '#' (user probe) */
	char **defs;
	size_t ndefs;
};

/* A probes file, entries in file order. */
struct tk_pfile {
	struct tk_pentry *v;
	size_t n;
};

/* Free the entries; @pf is empty after, and may be used again. */
void tk_pfile_release(struct tk_pfile *pf);

/*
 * Parse the probes of an entry: "@path" (perf's, plain; gzip accepted too)
 * and "@path.gz" (ours when compression is on). A missing file is empty.
 * On failure @pf is empty.
 */
int tk_pfile_load(const char *path, struct tk_pfile *pf);

/* Write @pf as "@path", or with @gz as "@path.gz" and an empty "@path". */
int tk_pfile_store(const char *path, const struct tk_pfile *pf, bool gz);

/* Remove entry @i, its marker and definitions freed. */
void tk_pfile_remove_at(struct tk_pfile *pf, size_t i);

/*
 * Add the entry @marker with @defs (copied), replacing an entry with that
 * marker or whose first definition names the same GROUP/EVENT.
 */
int tk_pfile_replace(struct tk_pfile *pf, const char *marker, char *const *defs, size_t ndefs);

/* Drop the definitions on @path; entries left without one go. Returns whether it changed. */
bool tk_pfile_drop_path(struct tk_pfile *pf, const char *path);

/* Add @src's entries to @dst: new markers whole, known ones by their missing lines. */
int tk_pfile_merge(struct tk_pfile *dst, const struct tk_pfile *src);

/*
 * Put the SDT notes of @elf (the binary at @path) into the probes file
 * @probes, keeping the lines of other paths. Returns the number of SDT
 * entries written.
 */
int tk_pfile_write_sdt(const char *probes, const char *path, struct tk_elf *elf, bool gz);

/* "p:GROUP/EVENT rest" -> group and event (malloc'ed); false when malformed. */
bool tk_probe_def_name(const char *def, char **group, char **event);

/* A name tracefs accepts for a group or event: [A-Za-z0-9_]+. */
bool tk_probe_name_ok(const char *s);

#endif
