/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What elf.c gives the symbolizer beyond the public ELF API: the symbol
 * table of a kernel module (a relocatable .ko), which only a kernel
 * module map of a perf.data file can use. Private to the library.
 */
#ifndef TRACEKIT_ELF_INTERNAL_H
#define TRACEKIT_ELF_INTERNAL_H

#include <tracekit/elf.h>

/*
 * The functions, objects and labels of @elf's sections named ".text" (a
 * relocatable file: each symbol's value is relative to its section),
 * keyed by file offset (value + the section's sh_offset), as perf 6.1's
 * dso__load_sym() loads a module: the rest of a module (.init.text,
 * .exit.text, .text.unlikely...) goes to maps of its own that no kernel
 * address reaches. *@text_off receives the sh_offset of the first of those
 * symbols' sections: perf adds it to an address's offset in the module map
 * (it sets the map's pgoff to it), so that offset + *@text_off is the key
 * to look up. Names are not demangled (perf's default for kernel symbols).
 * Return: table for tk_elf_symtab_free(), or NULL with errno (ENOENT: no
 * .symtab, or not a relocatable file; EBADMSG; ENOMEM).
 */
struct tk_elf_symtab *tk_elf_symtab_new_kmodule(struct tk_elf *elf, uint64_t *text_off);

/*
 * The name addr2line -f gives @addr from the table @st was built from,
 * when that differs from tk_elf_symtab_lookup()'s: an alias at the same
 * address and size that binutils prefers (see symtab_fixup()). perf's
 * inline mode prints it for a frame in a binary without DWARF. Return:
 * borrowed name, or NULL when addr2line names the looked-up symbol.
 */
const char *tk_elf_symtab_a2l_alias(const struct tk_elf_symtab *st, uint64_t addr);

#endif
