/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the build-id cache (cache.c) shares with the other files of the
 * symbols folder: kcore.c adds kcore copies to a cache, symbolizer.c reads
 * entries by build id and marks them used. Private to the library.
 */
#ifndef TRACEKIT_CACHE_INTERNAL_H
#define TRACEKIT_CACHE_INTERNAL_H

#include <stdbool.h>

#include <tracekit/cache.h>
#include <tracekit/elf.h>

/* Root of the distribution's debug files: $TRACEKIT_DEBUG_DIR, else /usr/lib/debug. */
const char *tk_cache_debug_root(void);

/*
 * Record a use of the entry in @dir (its ".tk-use" stamp gets the time
 * now). Best effort: a read-only cache still serves lookups.
 */
void tk_cache_touch_use(const char *dir);

/* The running kernel's build id in hex into @hex (TK_BUILD_ID_HEX_MAX bytes); > 0 on success. */
int tk_cache_running_kernel_bid(char *hex);

/* The running kernel's build id, read once per handle; NULL when unavailable. */
const char *tk_cache_kernel_bid(struct tk_cache *c);

/* The build id of the ELF file @path in hex into @hex (TK_BUILD_ID_HEX_MAX bytes). */
int tk_cache_file_build_id(const char *path, char *hex);

/*
 * Whether @elf has a symbol table of @kind that is there but unreadable
 * (outside the file, bad names); tk_errmsg() then says how.
 */
bool tk_cache_table_broken(struct tk_elf *elf, enum tk_elf_symtab_kind kind);

#endif
