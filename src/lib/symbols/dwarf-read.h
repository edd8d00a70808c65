/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * dwarf-read: the inline names of an address, read from a debug file's
 * DWARF sections without libdw (dwarf-read.c says how and why).
 */
#ifndef TRACEKIT_DWARF_READ_H
#define TRACEKIT_DWARF_READ_H

#include <stddef.h>
#include <stdint.h>

/* The sections the reader reads; a missing one is {NULL, 0}. */
enum tk_dwr_sect_id {
	TK_DWR_INFO,
	TK_DWR_ABBREV,
	TK_DWR_STR,
	TK_DWR_LINE_STR,
	TK_DWR_STR_OFFSETS,
	TK_DWR_ADDR,
	TK_DWR_RANGES,
	TK_DWR_RNGLISTS,
	TK_DWR_ARANGES,
	TK_DWR_NSECT,
};

struct tk_dwr_sect {
	const uint8_t *p;
	uint64_t size;
};

struct tk_dwr;

/* The section names, as in the ELF file, indexed by enum tk_dwr_sect_id. */
extern const char *const tk_dwr_sect_names[TK_DWR_NSECT];

/*
 * tk_dwr_new() - a reader of the DWARF in @sect
 * @sect: the sections, borrowed: they must stay mapped until tk_dwr_free()
 *
 * Reads .debug_aranges whole (the unit of each address range). A file
 * without .debug_aranges or .debug_info, or whose .debug_aranges this
 * reader does not accept, gives NULL: ask libdw instead.
 *
 * Return: the reader, or NULL with errno (EINVAL with tk_errmsg() naming
 * the section and offset, ENOENT, ENOMEM).
 */
struct tk_dwr *tk_dwr_new(const struct tk_dwr_sect sect[TK_DWR_NSECT]);

/* tk_dwr_free() - free @r and everything it kept; NULL is accepted. */
void tk_dwr_free(struct tk_dwr *r);

/*
 * tk_dwr_inlines() - the names of the functions whose code holds @pc
 * @r: the reader
 * @pc: an address in the debug file's own terms
 * @names: up to @max names, innermost first: the innermost function's,
 *	then each enclosing inlined subroutine's up to the subprogram that
 *	holds them (NULL for a function without a name); borrowed from the
 *	sections, valid while they are
 * @max: the room in @names (at least 1)
 *
 * The answer is libdw's (dwfl_module_addrdie(), then the unit's tree as
 * unwind.c walks it) for every address this reader answers at all.
 *
 * Return: the number of names (> 0); 0 when a compile unit holds @pc but
 * none of its functions does; -ENOENT when no unit holds it; any other
 * negative errno (-EOPNOTSUPP: forms or layouts the reader leaves to
 * libdw; -EINVAL: bad bytes, with the section and offset in tk_errmsg();
 * -ENOMEM) when libdw must answer instead.
 */
int tk_dwr_inlines(struct tk_dwr *r, uint64_t pc, const char **names, int max);

#endif
