/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the symbolizer (symbolizer.c) shares with the DWARF unwinder
 * (unwind.c): which file on this machine holds a mapped binary of a given
 * build id, so that the unwinder reads call frame information and inline
 * scopes from exactly the file the symbols come from. Private to the
 * library.
 */
#ifndef TRACEKIT_SYMBOLIZER_INTERNAL_H
#define TRACEKIT_SYMBOLIZER_INTERNAL_H

#include <tracekit/symbolizer.h>

/*
 * The file to read the binary mapped from @path from: the cache entry of
 * @build_id (hex, or NULL when none was recorded), else the path (below
 * --symfs) when that file has the build id; the path as it is when no id
 * is given. Malloc'ed, or NULL when no file here has that build id (or on
 * ENOMEM). The kernel and JIT maps have no such file.
 */
char *tk_symbolizer_binary_file(struct tk_symbolizer *sym, const char *path, const char *build_id);

/*
 * A separate debug file of @build_id (the cache entry's "debug", then the
 * debug root's .build-id/xx/rest.debug) whose own build id is that one;
 * malloc'ed, or NULL.
 */
char *tk_symbolizer_debug_file(struct tk_symbolizer *sym, const char *build_id);

/*
 * The file to read @build_id's separate DWARF from: the debug file
 * tk_symbolizer_debug_file() finds, or in its place its inflated copy in
 * the local build-id cache when its sections are compressed
 * (debug-inflate.c), made on first use. NULL when there is no debug file.
 */
char *tk_symbolizer_dwarf_file(struct tk_symbolizer *sym, const char *build_id);

/*
 * The kallsyms file that names the kernel of @build_id (hex, or NULL when
 * the file recorded none), by the rule kernel addresses follow: the
 * caller's --kallsyms, this machine's /proc/kallsyms when its kernel is
 * that one, else the cache's copy. Malloc'ed, or NULL when no kallsyms
 * here is that kernel's (or on ENOMEM).
 */
char *tk_symbolizer_kernel_file(struct tk_symbolizer *sym, const char *build_id);

/*
 * The text of that kallsyms (malloc'ed in *@text, *@len bytes), or, with a
 * vmlinux set (tk_symbolizer_set_vmlinux()) whose build id is @build_id's,
 * its functions in kallsyms's format at their relocated addresses: what a
 * tracepoint's %ps arguments are named from, as perf names them from its
 * kernel map. Return: 0, -ENOENT (none here is that kernel's), -ENOMEM or
 * a read error.
 */
int tk_symbolizer_kernel_text(struct tk_symbolizer *sym, const char *build_id, char **text,
			      size_t *len);

/*
 * The recording's _text (the pgoff of its [kernel.kallsyms]_text MMAP
 * record), which a vmlinux's symbols are relocated to; the first nonzero
 * value is kept. @sym may be NULL.
 */
void tk_symbolizer_set_kernel_text(struct tk_symbolizer *sym, uint64_t text);

/*
 * Name @offset (an address's offset in a kernel module's map) from the
 * module's .ko recorded as @path with @build_id (hex, or NULL: the file at
 * the path as it is), found as a binary is (tk_symbolizer_binary_file()).
 * @info gets the symbol, or NULL, and in file_offset the key it was looked
 * up at (perf report's address of an unnamed ip). Return: 1 when such a
 * .ko was found and read, else 0 (@info->file_offset is then @offset), or
 * -ENOMEM.
 */
int tk_symbolizer_lookup_kmodule(struct tk_symbolizer *sym, const char *path, const char *build_id,
				 uint64_t offset, struct tk_symbol_info *info);

/*
 * For a frame at @offset of the binary @path (@build_id hex, or NULL),
 * the name addr2line -f gives it from the same table when that is not the
 * symbol tk_symbolizer_lookup_file() names (tk_elf_symtab_a2l_alias()),
 * else NULL. Borrowed until tk_symbolizer_free().
 */
const char *tk_symbolizer_a2l_alias(struct tk_symbolizer *sym, const char *path,
				    const char *build_id, uint64_t offset);

#endif
