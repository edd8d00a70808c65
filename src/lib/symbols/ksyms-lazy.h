/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * ksyms-lazy: kernel addresses named from a kallsyms text without building
 * the symbol table of the whole kernel: a table of the symbols at and
 * after the address, made per symbol asked for. Private to the library:
 * the symbolizer's kernel DSO is its one user.
 */
#ifndef TRACEKIT_KSYMS_LAZY_H
#define TRACEKIT_KSYMS_LAZY_H

#include <stddef.h>
#include <stdint.h>

struct tk_ksyms_lazy;

/*
 * tk_ksyms_lazy_new() - index @text (@len bytes of kallsyms, malloc'ed),
 * which it takes over on success; @name names it in messages. NULL with
 * errno when it cannot (EBADMSG: a line tk_elf_symtab_new_kallsyms()
 * rejects; ENOTSUP: symbol ranges that would overlap; ENOMEM): the caller
 * keeps @text and builds the whole table.
 */
struct tk_ksyms_lazy *tk_ksyms_lazy_new(char *text, size_t len, const char *name);

/* tk_ksyms_lazy_free() - NULL is accepted. */
void tk_ksyms_lazy_free(struct tk_ksyms_lazy *k);

/*
 * tk_ksyms_lazy_lookup() - what tk_elf_symtab_lookup() gives for @addr on
 * the table tk_elf_symtab_new_kallsyms() makes of the whole text: the
 * symbol's name (borrowed until tk_ksyms_lazy_free()) and @addr's offset
 * in it, or NULL.
 */
const char *tk_ksyms_lazy_lookup(struct tk_ksyms_lazy *k, uint64_t addr, uint64_t *offset);

/*
 * tk_ksyms_lazy_last() - the highest address of the lines indexed (those
 * the table would hold), 0 when none.
 */
uint64_t tk_ksyms_lazy_last(const struct tk_ksyms_lazy *k);

/*
 * tk_ksyms_lazy_lines() - the index entries of the lines that lie in the
 * first @text_len bytes of the text, in lookup order, into *@lines
 * (malloc'ed, tk_ksyms_lazy_line_size() bytes each; the caller frees it):
 * the index tk_ksyms_lazy_new() makes of that part alone. Their count (0
 * with *@lines NULL: ENOMEM).
 */
size_t tk_ksyms_lazy_lines(const struct tk_ksyms_lazy *k, size_t text_len, void **lines);

/* tk_ksyms_lazy_line_size() - the bytes of one entry of tk_ksyms_lazy_lines(). */
size_t tk_ksyms_lazy_line_size(void);

/*
 * tk_ksyms_lazy_adopt() - tk_ksyms_lazy_new() of @text without parsing it:
 * from the @n entries tk_ksyms_lazy_lines() gave for it. With @map, @text
 * and @lines lie in that mapping of @map_len bytes, which it takes over
 * (tk_ksyms_lazy_free() unmaps it); without, it takes over @text and
 * @lines (malloc'ed). NULL with errno EBADMSG when an entry is not a whole
 * line of @text in order, ENOTSUP or ENOMEM as tk_ksyms_lazy_new(): the
 * caller keeps them.
 */
struct tk_ksyms_lazy *tk_ksyms_lazy_adopt(const char *text, size_t len, const void *lines, size_t n,
					  const char *name, void *map, size_t map_len);

#endif
