/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * dwarf-walk: the top-level DIEs of one compile unit, read from the
 * section bytes (dwarf-walk.c).
 */
#ifndef TRACEKIT_DWARF_WALK_H
#define TRACEKIT_DWARF_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One child of a compile unit's DIE. */
struct tk_dwarf_top {
	uint64_t off; /* its offset in .debug_info */
	uint32_t tag;
	bool ranges; /* its abbreviation has DW_AT_low_pc or DW_AT_ranges */
	/*
	 * pc: its one range is [lo, hi), from a DW_AT_low_pc of DW_FORM_addr
	 * and a DW_AT_high_pc of DW_FORM_addr or an offset (data1-8) from it,
	 * as libdw's dwarf_ranges() gives it; false: ask libdw when @ranges.
	 */
	bool pc;
	uint64_t lo, hi;
};

/**
 * tk_dwarf_top_walk() - call @fn for each child of a compile unit's DIE
 * @info:        .debug_info, @info_size bytes
 * @unit_off:    the unit header's offset in @info
 * @abbrev:      .debug_abbrev, @abbrev_size bytes
 * @fn:          called for each child in DIE order; a nonzero return ends
 *               the walk and is returned
 * @ctx:         passed to @fn
 *
 * Reads the unit header (DWARF 2 to 5, 32- or 64-bit; of DWARF 5 compile
 * and partial units only), the unit's abbreviation table and the DIEs, and
 * skips each child's subtree by its DW_AT_sibling when it has one, else
 * DIE by DIE. Every read is bounded by the unit and the sections.
 * Context: any thread; nothing is kept.
 * Return: 0 when every child was handed out, @fn's nonzero value, -ENOMEM,
 * or -EINVAL for bytes it cannot read (tk_errmsg(): ".debug_info: offset
 * 0xOFF: why" or ".debug_abbrev: ..."), including forms it does not know
 * and DW_AT_sibling values that do not lead forward inside the unit; then
 * @fn may have seen the children before that point.
 */
int tk_dwarf_top_walk(const uint8_t *info, size_t info_size, uint64_t unit_off,
		      const uint8_t *abbrev, size_t abbrev_size,
		      int (*fn)(void *ctx, const struct tk_dwarf_top *top), void *ctx);

#endif
