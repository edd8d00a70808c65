// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dwarf-read: the inline names of an address, from the bytes of a debug
 * file's DWARF sections.
 *
 * unwind.c names a frame's inline chain as addr2line does: the compile
 * unit holding the address, then that unit's DIE tree down to the
 * innermost function or inlined subroutine covering it, then the names of
 * that DIE and of each enclosing inlined subroutine up to the subprogram.
 * Asked through libdw, the first step alone (dwfl_module_addrdie() ->
 * dwarf_getaranges()) interns every unit of the file in order: libc's
 * addresses need units near the end of its ~2 000, ~10 M instructions and
 * hundreds of page faults per run, and each DIE after that costs libdw's
 * abbreviation hash and attribute decoding (~200-600 instructions). This
 * reader touches only the units an address needs: .debug_aranges whole
 * (small), then per unit its header, its abbreviation table (an array by
 * code) and its DIEs, skipping the values of attributes it does not read
 * by their form's size.
 *
 * It answers as libdw does, or not at all (unwind.c then asks libdw):
 *   - The unit: libdwfl sorts the address ranges of .debug_aranges by
 *     start and takes the last one starting at or below the address, gaps
 *     included, up to the end of the very last range (its addrarange());
 *     two ranges starting at one address in different units: not answered.
 *   - The tree, as unwind.c's inl_scan_indexed(): the first child of the
 *     unit's DIE (in DIE order) whose ranges cover the address, then at
 *     each level the first child covering it. A unit importing another
 *     (DW_TAG_imported_unit) is not answered.
 *   - A DIE's ranges (libdw's dwarf_ranges()): its own DW_AT_low_pc and
 *     DW_AT_high_pc (an address, or a constant added to low_pc), else its
 *     DW_AT_ranges: in .debug_ranges for DWARF 2-4 (pairs added to the
 *     base address: the unit DIE's low_pc, else its entry_pc, else 0;
 *     an all-ones start selects a new base; 0, 0 ends), in .debug_rnglists
 *     for DWARF 5 (DW_RLE_* entries; DW_FORM_rnglistx through the unit's
 *     DW_AT_rnglists_base). Only the DIE's own attributes count, as in
 *     libdw's dwarf_lowpc()/dwarf_highpc() for all but split units.
 *   - A name (dwarf_attr_integrate()): the DIE's DW_AT_linkage_name, else
 *     DW_AT_MIPS_linkage_name, else DW_AT_name, each looked for on the DIE,
 *     then on the DIE its DW_AT_abstract_origin (else DW_AT_specification)
 *     refers to, 16 steps at most, so a cycle ends; a reference may lead
 *     into another unit (DW_FORM_ref_addr). Strings: DW_FORM_string, strp,
 *     line_strp, strx* through DW_AT_str_offsets_base; addresses:
 *     DW_FORM_addr, addrx* through DW_AT_addr_base.
 *   - The innermost name is the last of the subprogram siblings with the
 *     same low_pc/high_pc (an assembly unit's aliases), as inner_name().
 *   Split DWARF, type units, supplementary and alternate files, and any
 *   form without a value this reader can read are not answered.
 *
 * Layout read (little-endian, as the machine's own binaries):
 *   .debug_aranges: sets of unit_length u32 (0xffffffff: u64 follows,
 *     64-bit offsets), version u16 (2), debug_info_offset (offset size),
 *     address_size u8 (4 or 8), segment_size u8 (0), padding to a multiple
 *     of twice the address size from the set's start, then (address,
 *     length) pairs; a (0, 0) pair at the set's end ends it (one elsewhere
 *     is skipped, as libdw does).
 *   unit header (.debug_info): unit_length as above, version u16 (2-5);
 *     version 5: unit_type u8 (DW_UT_compile or DW_UT_partial here),
 *     address_size u8, debug_abbrev_offset; versions 2-4:
 *     debug_abbrev_offset, address_size u8. The unit's DIE follows.
 *   DIE: abbreviation code (ULEB128; 0 ends a list of siblings), then one
 *     value per attribute of the abbreviation, each in its form; then its
 *     children if the abbreviation says so, ended by a 0 code.
 *     DW_AT_sibling (a unit reference) is where the next sibling starts.
 *   abbreviation table (.debug_abbrev at debug_abbrev_offset): code
 *     (ULEB128, 0 ends), tag (ULEB128), children u8, then (attribute,
 *     form [, DW_FORM_implicit_const's SLEB128 value]) ULEB128 pairs ended
 *     by (0, 0).
 *   Form sizes: addr the address size; data1/ref1/flag/strx1/addrx1 1,
 *     data2/ref2/strx2/addrx2 2, strx3/addrx3 3, data4/ref4/strx4/addrx4/
 *     ref_sup4 4, data8/ref8/ref_sig8/ref_sup8 8, data16 16; strp,
 *     sec_offset, line_strp, strp_sup, GNU_ref_alt, GNU_strp_alt the offset
 *     size; ref_addr the address size in version 2, else the offset size;
 *     udata, sdata, ref_udata, strx, addrx, loclistx, rnglistx,
 *     GNU_addr_index, GNU_str_index a LEB128; string up to its NUL;
 *     block1/2/4/block/exprloc a length (u8/u16/u32/ULEB128) then the
 *     bytes; flag_present and implicit_const nothing; indirect a ULEB128
 *     form, then a value of that form.
 *   .debug_str_offsets: offset-size entries from the unit's base;
 *   .debug_addr: address-size entries from the unit's base;
 *   .debug_rnglists: DW_RLE_rnglistx offsets (offset size) from the
 *     unit's base, relative to it.
 *
 * Every read is bounded by its section (a DIE's by its unit); bad bytes
 * give -EINVAL and a message naming the section and offset. Per unit the
 * header, abbreviations and an index of its top-level functions' ranges
 * are kept; per DIE on an address's path its tag, its children's ranges
 * and its names, so that a second address under it costs range compares.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "dwarf-read.h"
#include "error.h"

const char *const tk_dwr_sect_names[TK_DWR_NSECT] = {
	[TK_DWR_INFO] = ".debug_info",
	[TK_DWR_ABBREV] = ".debug_abbrev",
	[TK_DWR_STR] = ".debug_str",
	[TK_DWR_LINE_STR] = ".debug_line_str",
	[TK_DWR_STR_OFFSETS] = ".debug_str_offsets",
	[TK_DWR_ADDR] = ".debug_addr",
	[TK_DWR_RANGES] = ".debug_ranges",
	[TK_DWR_RNGLISTS] = ".debug_rnglists",
	[TK_DWR_ARANGES] = ".debug_aranges",
};

/* Abbreviation codes above this are refused: compilers number them from 1. */
#define MAX_CODE (1u << 16)
/* dwarf_attr_integrate()'s bound on abstract origin / specification steps. */
#define ORIGIN_STEPS 16
/* The deepest DIE path walked below a unit's child (unwind.c's bound). */
#define PATH_MAX_DEPTH 128
#define NO_SIB	       UINT64_MAX

enum {
	TAG_inlined_subroutine = 0x1d,
	TAG_compile_unit = 0x11,
	TAG_subprogram = 0x2e,
	TAG_imported_unit = 0x3d,
	TAG_partial_unit = 0x3c,
	UT_compile = 0x01,
	UT_partial = 0x03,
};

enum {
	AT_sibling = 0x01,
	AT_name = 0x03,
	AT_low_pc = 0x11,
	AT_high_pc = 0x12,
	AT_abstract_origin = 0x31,
	AT_specification = 0x47,
	AT_entry_pc = 0x52,
	AT_ranges = 0x55,
	AT_linkage_name = 0x6e,
	AT_str_offsets_base = 0x72,
	AT_addr_base = 0x73,
	AT_rnglists_base = 0x74,
	AT_dwo_name = 0x76,
	AT_MIPS_linkage_name = 0x2007,
	AT_GNU_dwo_name = 0x2130,
	AT_GNU_ranges_base = 0x2132,
	AT_GNU_addr_base = 0x2133,
};

enum {
	FORM_addr = 0x01,
	FORM_block2 = 0x03,
	FORM_block4 = 0x04,
	FORM_data2 = 0x05,
	FORM_data4 = 0x06,
	FORM_data8 = 0x07,
	FORM_string = 0x08,
	FORM_block = 0x09,
	FORM_block1 = 0x0a,
	FORM_data1 = 0x0b,
	FORM_flag = 0x0c,
	FORM_sdata = 0x0d,
	FORM_strp = 0x0e,
	FORM_udata = 0x0f,
	FORM_ref_addr = 0x10,
	FORM_ref1 = 0x11,
	FORM_ref2 = 0x12,
	FORM_ref4 = 0x13,
	FORM_ref8 = 0x14,
	FORM_ref_udata = 0x15,
	FORM_indirect = 0x16,
	FORM_sec_offset = 0x17,
	FORM_exprloc = 0x18,
	FORM_flag_present = 0x19,
	FORM_strx = 0x1a,
	FORM_addrx = 0x1b,
	FORM_ref_sup4 = 0x1c,
	FORM_strp_sup = 0x1d,
	FORM_data16 = 0x1e,
	FORM_line_strp = 0x1f,
	FORM_ref_sig8 = 0x20,
	FORM_implicit_const = 0x21,
	FORM_loclistx = 0x22,
	FORM_rnglistx = 0x23,
	FORM_ref_sup8 = 0x24,
	FORM_strx1 = 0x25,
	FORM_strx2 = 0x26,
	FORM_strx3 = 0x27,
	FORM_strx4 = 0x28,
	FORM_addrx1 = 0x29,
	FORM_addrx2 = 0x2a,
	FORM_addrx3 = 0x2b,
	FORM_addrx4 = 0x2c,
	FORM_GNU_addr_index = 0x1f01,
	FORM_GNU_str_index = 0x1f02,
	FORM_GNU_ref_alt = 0x1f20,
	FORM_GNU_strp_alt = 0x1f21,
};

/* The attributes a DIE read keeps (struct die's slots). */
enum {
	S_NAME,
	S_LINKAGE,
	S_MIPS,
	S_LOW,
	S_HIGH,
	S_RANGES,
	S_ORIGIN,
	S_SPEC,
	S_ENTRY,
	S_STR_BASE,
	S_ADDR_BASE,
	S_RNG_BASE,
	S_SPLIT, /* any attribute of split DWARF */
	S_SIBLING,
	NSLOTS,
	S_NONE = 0xff,
};

struct spec {
	uint16_t form;
	uint8_t slot; /* S_*, S_NONE: skipped */
	uint8_t size; /* a fixed-size form's size; 0 otherwise or for no bytes */
	bool fixed;   /* the value has a fixed size (size, maybe 0) */
	int64_t implicit;
};

struct abbrev {
	uint32_t tag; /* 0: no such code */
	bool children;
	bool plain; /* no value kept but maybe DW_AT_sibling: skipped in one step when fixed */
	bool pc;    /* a DW_AT_low_pc, high_pc or ranges: what a walk past it reads */
	uint32_t first, n;
	int32_t fixed; /* every value of a fixed size: their total; -1 otherwise */
	int32_t sib_at;
	uint8_t sib_size;
};

struct val {
	bool set;
	uint16_t form;
	uint64_t v;
	const char *str; /* DW_FORM_string */
};

struct die {
	uint64_t off, end, sib; /* end: past its values; sib: DW_AT_sibling's target or NO_SIB */
	const struct abbrev *a; /* NULL: a 0 code */
	struct val s[NSLOTS];
};

/* A child's range within a unit's index (first child in DIE order wins). */
struct top {
	uint64_t lo, hi, hi_max; /* hi_max: the largest hi of this and every earlier range */
	uint64_t die;
	uint32_t order;
};

struct unit {
	uint64_t off, end, die_off; /* header, end, its DIE (all .debug_info offsets) */
	uint16_t version;
	uint8_t addr_size, off_size;
	int err; /* < 0: the unit cannot be read (kept: asked again, the same answer) */
	struct abbrev *abbrevs;
	uint32_t ncodes;
	struct spec *specs;
	uint32_t nspecs;
	size_t spec_cap;
	uint64_t base; /* for range lists */
	uint64_t str_base, addr_base, rng_base;
	bool has_str_base, has_addr_base, has_rng_base;
	bool indexed, imports;
	int index_err;
	struct top *top;
	size_t ntop;
};

struct kid {
	uint64_t lo, hi, off;
};

/* A DIE an address's path went through. */
struct node {
	uint64_t off; /* 0: empty slot (no DIE lies at offset 0) */
	struct unit *u;
	uint32_t tag;
	uint8_t named; /* 1: name is set, 2: inner is */
	const char *name, *inner;
	uint32_t nkids;
	struct kid *kids;
};

struct arange {
	uint64_t addr, len, cu;
};

struct tk_dwr {
	struct tk_dwr_sect s[TK_DWR_NSECT];
	struct arange *ar;
	size_t nar;
	size_t last_run;     /* the first range of the last run of one unit */
	struct unit **units; /* sorted by offset */
	size_t nunits, unit_cap;
	struct node *nodes; /* open addressing by DIE offset */
	size_t nnodes, node_cap;
};

static int bad(enum tk_dwr_sect_id id, uint64_t off, const char *why)
{
	return tk_fail_at(EINVAL, tk_dwr_sect_names[id], off, "%s", why);
}

static int unsupported(enum tk_dwr_sect_id id, uint64_t off, const char *why)
{
	return tk_fail_at(EOPNOTSUPP, tk_dwr_sect_names[id], off, "%s", why);
}

static uint64_t load_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* leb() past its first byte. */
static bool __attribute__((noinline))
leb_long(const uint8_t *p, uint64_t *pos, uint64_t end, uint64_t *v, bool sign)
{
	uint64_t r = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= end)
			return false;
		b = p[(*pos)++];
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		r |= ~0ull << shift;
	*v = r;
	return true;
}

/* A LEB128 at *@pos below @end into @v (its low 64 bits); false past @end. */
static inline bool leb(const uint8_t *p, uint64_t *pos, uint64_t end, uint64_t *v, bool sign)
{
	if (*pos < end && !(p[*pos] & 0x80) && !sign) {
		*v = p[(*pos)++];
		return true;
	}
	return leb_long(p, pos, end, v, sign);
}

/* ------------------------------------------------------------ aranges */

static int arange_cmp(const void *a, const void *b)
{
	const struct arange *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

static int aranges_read(struct tk_dwr *r)
{
	const uint8_t *p = r->s[TK_DWR_ARANGES].p;
	uint64_t size = r->s[TK_DWR_ARANGES].size, pos = 0;
	size_t cap = 0;
	struct arange *na;

	while (pos < size) {
		uint64_t set = pos, len, cu, end, as;
		unsigned off_size = 4;
		bool ended = false;

		if (size - pos < 4)
			return bad(TK_DWR_ARANGES, set, "set header runs past the section");
		len = load_le(p + pos, 4);
		pos += 4;
		if (len == 0xffffffffu) {
			if (size - pos < 8)
				return bad(TK_DWR_ARANGES, set, "set header runs past the section");
			len = load_le(p + pos, 8);
			pos += 8;
			off_size = 8;
		} else if (len >= 0xfffffff0u) {
			return bad(TK_DWR_ARANGES, set, "set length is a reserved value");
		}
		if (len > size - pos)
			return bad(TK_DWR_ARANGES, set, "set runs past the section");
		end = pos + len;
		if (end - pos < 2u + off_size + 2u)
			return bad(TK_DWR_ARANGES, set, "set header runs past the set");
		if (load_le(p + pos, 2) != 2)
			return unsupported(TK_DWR_ARANGES, set, "set of a version other than 2");
		cu = load_le(p + pos + 2, off_size);
		as = p[pos + 2 + off_size];
		if ((as != 4 && as != 8) || p[pos + 3 + off_size])
			return unsupported(
				TK_DWR_ARANGES, set,
				"set of an address size other than 4 or 8, or segmented");
		if (cu >= r->s[TK_DWR_INFO].size)
			return bad(TK_DWR_ARANGES, set, "set's unit lies past .debug_info");
		pos += 4u + off_size;
		pos += (2 * as - (pos - set) % (2 * as)) % (2 * as);
		while (pos <= end && end - pos >= 2 * as) {
			uint64_t a = load_le(p + pos, (unsigned)as);
			uint64_t l = load_le(p + pos + as, (unsigned)as);

			pos += 2 * as;
			if (!a && !l) {
				if (pos == end) {
					ended = true;
					break;
				}
				continue;
			}
			na = tk_array_grow(r->ar, &cap, r->nar, sizeof(*na), 1024);
			if (!na)
				return -ENOMEM;
			r->ar = na;
			r->ar[r->nar++] = (struct arange){a, l, cu};
		}
		if (!ended)
			return bad(TK_DWR_ARANGES, set,
				   "set does not end with a zero pair at its end");
		pos = end;
	}
	if (!r->nar)
		return tk_fail(ENOENT, ".debug_aranges: no address ranges");
	/* Sets are mostly in address order already: sort only when not. */
	for (size_t i = 1; i < r->nar; i++) {
		if (arange_cmp(&r->ar[i - 1], &r->ar[i]) > 0) {
			qsort(r->ar, r->nar, sizeof(*r->ar), arange_cmp);
			break;
		}
	}
	r->last_run = r->nar - 1;
	while (r->last_run && r->ar[r->last_run - 1].cu == r->ar[r->nar - 1].cu)
		r->last_run--;
	return 0;
}

/*
 * The unit offset libdwfl gives @pc (its addrarange()): -ENOENT outside,
 * -EOPNOTSUPP where its choice depends on how its sort ordered ties.
 */
static int64_t pc_unit(const struct tk_dwr *r, uint64_t pc)
{
	size_t lo = 0, hi = r->nar, i;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->ar[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	i = lo - 1;
	/* Ranges starting at one address sort by unit here; libdw's qsort() leaves them as found.
	 */
	for (size_t j = i; j-- > 0 && r->ar[j].addr == r->ar[i].addr;)
		if (r->ar[j].cu != r->ar[i].cu)
			return -EOPNOTSUPP;
	if (i >= r->last_run && pc - r->ar[r->nar - 1].addr > r->ar[r->nar - 1].len)
		return pc < r->ar[r->nar - 1].addr ? (int64_t)r->ar[i].cu : -ENOENT;
	return (int64_t)r->ar[i].cu;
}

/* ------------------------------------------------------------ units */

static bool form_spec(const struct unit *u, uint64_t form, struct spec *s)
{
	static const uint8_t fixed[] = {
		[FORM_data1] = 1,   [FORM_ref1] = 1,  [FORM_flag] = 1,	   [FORM_strx1] = 1,
		[FORM_addrx1] = 1,  [FORM_data2] = 2, [FORM_ref2] = 2,	   [FORM_strx2] = 2,
		[FORM_addrx2] = 2,  [FORM_strx3] = 3, [FORM_addrx3] = 3,   [FORM_data4] = 4,
		[FORM_ref4] = 4,    [FORM_strx4] = 4, [FORM_addrx4] = 4,   [FORM_ref_sup4] = 4,
		[FORM_data8] = 8,   [FORM_ref8] = 8,  [FORM_ref_sig8] = 8, [FORM_ref_sup8] = 8,
		[FORM_data16] = 16,
	};

	s->form = (uint16_t)form;
	s->fixed = true;
	s->size = 0;
	switch (form) {
	case FORM_addr:
		s->size = u->addr_size;
		return true;
	case FORM_strp:
	case FORM_sec_offset:
	case FORM_line_strp:
	case FORM_strp_sup:
	case FORM_GNU_ref_alt:
	case FORM_GNU_strp_alt:
		s->size = u->off_size;
		return true;
	case FORM_ref_addr:
		s->size = u->version == 2 ? u->addr_size : u->off_size;
		return true;
	case FORM_flag_present:
	case FORM_implicit_const:
		return true;
	case FORM_udata:
	case FORM_sdata:
	case FORM_ref_udata:
	case FORM_strx:
	case FORM_addrx:
	case FORM_loclistx:
	case FORM_rnglistx:
	case FORM_GNU_addr_index:
	case FORM_GNU_str_index:
	case FORM_string:
	case FORM_block1:
	case FORM_block2:
	case FORM_block4:
	case FORM_block:
	case FORM_exprloc:
	case FORM_indirect:
		s->fixed = false;
		return true;
	default:
		if (form < sizeof(fixed) && fixed[form]) {
			s->size = fixed[form];
			return true;
		}
		return false;
	}
}

static uint8_t attr_slot(uint64_t attr)
{
	switch (attr) {
	case AT_name:
		return S_NAME;
	case AT_linkage_name:
		return S_LINKAGE;
	case AT_MIPS_linkage_name:
		return S_MIPS;
	case AT_low_pc:
		return S_LOW;
	case AT_high_pc:
		return S_HIGH;
	case AT_ranges:
		return S_RANGES;
	case AT_abstract_origin:
		return S_ORIGIN;
	case AT_specification:
		return S_SPEC;
	case AT_entry_pc:
		return S_ENTRY;
	case AT_str_offsets_base:
		return S_STR_BASE;
	case AT_addr_base:
		return S_ADDR_BASE;
	case AT_rnglists_base:
		return S_RNG_BASE;
	case AT_dwo_name:
	case AT_GNU_dwo_name:
	case AT_GNU_ranges_base:
	case AT_GNU_addr_base:
		return S_SPLIT;
	case AT_sibling:
		return S_SIBLING;
	default:
		return S_NONE;
	}
}

/* Read the abbreviation table at @off into @u. */
static int abbrevs_read(const struct tk_dwr *r, struct unit *u, uint64_t off)
{
	const uint8_t *ab = r->s[TK_DWR_ABBREV].p;
	uint64_t size = r->s[TK_DWR_ABBREV].size, pos = off, code, tag, attr, form, v;
	uint32_t cap = 0;

	if (off >= size)
		return bad(TK_DWR_ABBREV, off, "unit's abbreviation table lies past the section");
	for (;;) {
		uint64_t at = pos;
		struct abbrev *a;

		if (!leb(ab, &pos, size, &code, false))
			return bad(TK_DWR_ABBREV, at, "abbreviation code runs past the section");
		if (!code)
			return 0;
		if (code >= MAX_CODE)
			return bad(TK_DWR_ABBREV, at, "abbreviation code too large");
		if (code >= cap) {
			uint32_t ncap = cap ? cap : 64;
			struct abbrev *na;

			while (ncap <= code)
				ncap *= 2;
			na = realloc(u->abbrevs, ncap * sizeof(*na));
			if (!na)
				return -ENOMEM;
			memset(na + cap, 0, (ncap - cap) * sizeof(*na));
			u->abbrevs = na;
			cap = ncap;
		}
		a = &u->abbrevs[code];
		if (a->tag)
			return bad(TK_DWR_ABBREV, at, "abbreviation code defined twice");
		if (!leb(ab, &pos, size, &tag, false) || pos >= size)
			return bad(TK_DWR_ABBREV, at, "abbreviation runs past the section");
		if (!tag || tag > UINT32_MAX)
			return bad(TK_DWR_ABBREV, at, "abbreviation has a bad tag");
		a->tag = (uint32_t)tag;
		a->children = ab[pos++] == 1;
		a->first = u->nspecs;
		a->plain = true;
		a->sib_at = -1;
		for (;;) {
			struct spec *s, *ns;

			if (!leb(ab, &pos, size, &attr, false) ||
			    !leb(ab, &pos, size, &form, false))
				return bad(TK_DWR_ABBREV, at,
					   "abbreviation's attributes run past the section");
			if (!attr && !form)
				break;
			if (u->nspecs == UINT32_MAX)
				return -ENOMEM;
			ns = tk_array_grow(u->specs, &u->spec_cap, u->nspecs, sizeof(*ns), 256);
			if (!ns)
				return -ENOMEM;
			u->specs = ns;
			s = &u->specs[u->nspecs];
			s->implicit = 0;
			if (form == FORM_implicit_const) {
				if (!leb(ab, &pos, size, &v, true))
					return bad(TK_DWR_ABBREV, at,
						   "implicit constant runs past the section");
				s->implicit = (int64_t)v;
			}
			if (!form_spec(u, form, s))
				return bad(TK_DWR_ABBREV, at, "attribute of an unknown form");
			s->slot = attr_slot(attr);
			if (s->slot != S_NONE && s->slot != S_SIBLING)
				a->plain = false;
			if (s->slot == S_LOW || s->slot == S_HIGH || s->slot == S_RANGES)
				a->pc = true;
			if (a->fixed >= 0 && s->fixed &&
			    (s->slot != S_SIBLING || s->form == FORM_ref1 || s->form == FORM_ref2 ||
			     s->form == FORM_ref4 || s->form == FORM_ref8)) {
				if (s->slot == S_SIBLING && a->sib_at < 0) {
					a->sib_at = a->fixed;
					a->sib_size = s->size;
				}
				a->fixed += s->size;
			} else {
				a->fixed = -1;
			}
			u->nspecs++;
			a->n++;
		}
		if (code >= u->ncodes)
			u->ncodes = (uint32_t)code + 1;
	}
}

/*
 * Read one value of @s at *@pos into @v. Return: 0, -EINVAL (bytes past
 * the unit), -EOPNOTSUPP (an indirect form this reader does not know).
 */
static int value_read(const struct tk_dwr *r, const struct unit *u, const struct spec *s,
		      uint64_t *pos, struct val *v)
{
	const uint8_t *p = r->s[TK_DWR_INFO].p;
	uint64_t at = *pos, end = u->end, n = 0;
	struct spec ind;

	v->set = true;
	v->form = s->form;
	v->v = 0;
	if (s->fixed) {
		if (end - *pos < s->size)
			return bad(TK_DWR_INFO, at, "attribute runs past the unit");
		v->v = s->form == FORM_implicit_const ? (uint64_t)s->implicit
		       : s->form == FORM_flag_present ? 1
		       : s->size <= 8		      ? load_le(p + *pos, s->size)
						      : 0;
		*pos += s->size;
		return 0;
	}
	switch (s->form) {
	case FORM_string: {
		const uint8_t *nul = memchr(p + *pos, 0, end - *pos);

		if (!nul)
			return bad(TK_DWR_INFO, at, "string runs past the unit");
		v->str = (const char *)p + *pos;
		*pos = (uint64_t)(nul - p) + 1;
		return 0;
	}
	case FORM_block1:
	case FORM_block2:
	case FORM_block4: {
		unsigned len = s->form == FORM_block1 ? 1 : s->form == FORM_block2 ? 2 : 4;

		if (end - *pos < len)
			return bad(TK_DWR_INFO, at, "block runs past the unit");
		n = load_le(p + *pos, len);
		*pos += len;
		break;
	}
	case FORM_block:
	case FORM_exprloc:
		if (!leb(p, pos, end, &n, false))
			return bad(TK_DWR_INFO, at, "block runs past the unit");
		break;
	case FORM_indirect:
		if (!leb(p, pos, end, &n, false))
			return bad(TK_DWR_INFO, at, "indirect form runs past the unit");
		if (n == FORM_indirect || n == FORM_implicit_const || !form_spec(u, n, &ind))
			return unsupported(TK_DWR_INFO, at,
					   "indirect attribute of an unknown form");
		ind.slot = s->slot;
		ind.implicit = 0;
		return value_read(r, u, &ind, pos, v);
	default: /* the LEB128 forms */
		if (!leb(p, pos, end, &v->v, s->form == FORM_sdata))
			return bad(TK_DWR_INFO, at, "attribute runs past the unit");
		return 0;
	}
	if (end - *pos < n)
		return bad(TK_DWR_INFO, at, "block runs past the unit");
	*pos += n;
	return 0;
}

/* The end (and sibling) of @d, of fixed-size values from @pos: the DIE skipped in one step. */
static inline int die_end_fixed(const uint8_t *p, const struct unit *u, const struct abbrev *a,
				uint64_t off, uint64_t pos, struct die *d)
{
	if (u->end - pos < (uint32_t)a->fixed)
		return bad(TK_DWR_INFO, off, "DIE runs past the unit");
	if (a->sib_at >= 0)
		d->sib = u->off + load_le(p + pos + a->sib_at, a->sib_size);
	d->end = pos + (uint32_t)a->fixed;
	return 0;
}

/* DW_AT_sibling's target @v: libdw's dwarf_siblingof() follows unit references only. */
static int sibling_set(const struct unit *u, const struct val *v, uint64_t off, struct die *d)
{
	if (v->form != FORM_ref1 && v->form != FORM_ref2 && v->form != FORM_ref4 &&
	    v->form != FORM_ref8 && v->form != FORM_ref_udata)
		return unsupported(TK_DWR_INFO, off, "DW_AT_sibling is not a unit reference");
	d->sib = u->off + v->v;
	return 0;
}

/*
 * Read the DIE at @off of @u into @d: its abbreviation (NULL for a 0
 * code), the values this reader keeps (the first of each attribute, as
 * libdw's dwarf_attr() finds it), DW_AT_sibling's target and its end.
 * @walk: only on the way past it: a DIE without an address range
 * (!d->a->pc, nine tenths of a unit's top level: types, declarations,
 * variables) keeps no value, and one of fixed-size values is skipped in
 * one step.
 */
static int die_read_mode(const struct tk_dwr *r, const struct unit *u, uint64_t off, struct die *d,
			 bool walk)
{
	const uint8_t *p = r->s[TK_DWR_INFO].p;
	uint64_t pos = off, code;
	const struct abbrev *a;

	d->off = d->end = off;
	d->sib = NO_SIB;
	d->a = NULL;
	if (off < u->die_off || off >= u->end)
		return bad(TK_DWR_INFO, off, "DIE offset lies outside its unit");
	if (!leb(p, &pos, u->end, &code, false))
		return bad(TK_DWR_INFO, off, "DIE runs past the unit");
	if (!code) {
		d->end = pos;
		return 0;
	}
	if (code >= u->ncodes || !u->abbrevs[code].tag)
		return bad(TK_DWR_INFO, off, "DIE of an abbreviation code the table lacks");
	d->a = a = &u->abbrevs[code];
	if (walk && !a->pc) {
		if (a->fixed >= 0) {
			return die_end_fixed(p, u, a, off, pos, d);
		}
		for (uint32_t i = 0; i < a->n; i++) {
			const struct spec *s = &u->specs[a->first + i];
			struct val v;
			int err;

			if (s->fixed && s->slot != S_SIBLING) {
				if (u->end - pos < s->size)
					return bad(TK_DWR_INFO, pos,
						   "attribute runs past the unit");
				pos += s->size;
				continue;
			}
			err = value_read(r, u, s, &pos, &v);
			if (err)
				return err;
			if (s->slot == S_SIBLING && d->sib == NO_SIB &&
			    (err = sibling_set(u, &v, off, d)))
				return err;
		}
		d->end = pos;
		return 0;
	}
	for (int i = 0; i < NSLOTS; i++)
		d->s[i].set = false;
	if (a->plain && a->fixed >= 0)
		return die_end_fixed(p, u, a, off, pos, d);
	for (uint32_t i = 0; i < a->n; i++) {
		const struct spec *s = &u->specs[a->first + i];
		struct val v;
		int err;

		if (s->slot == S_NONE && s->fixed) {
			if (u->end - pos < s->size)
				return bad(TK_DWR_INFO, pos, "attribute runs past the unit");
			pos += s->size;
			continue;
		}
		v.str = NULL;
		err = value_read(r, u, s, &pos, &v);
		if (err)
			return err;
		if (s->slot == S_NONE || d->s[s->slot].set)
			continue;
		d->s[s->slot] = v;
		if (s->slot == S_SIBLING && (err = sibling_set(u, &v, off, d)))
			return err;
	}
	d->end = pos;
	return 0;
}

static int die_read(const struct tk_dwr *r, const struct unit *u, uint64_t off, struct die *d)
{
	return die_read_mode(r, u, off, d, false);
}

/* die_read() on the way past the DIE: d->s[] is read only when d->a->pc. */
static int die_walk(const struct tk_dwr *r, const struct unit *u, uint64_t off, struct die *d)
{
	return die_read_mode(r, u, off, d, true);
}

/* Skip the children of a DIE, from @pos (after its values) past their ending 0 into *@next. */
static int subtree_skip(const struct tk_dwr *r, const struct unit *u, uint64_t pos, uint64_t *next)
{
	uint64_t depth = 1;
	struct die d;

	while (depth) {
		int err = die_walk(r, u, pos, &d);

		if (err)
			return err;
		pos = d.end;
		if (!d.a) {
			depth--;
		} else if (d.a->children) {
			if (d.sib != NO_SIB && d.sib > pos && d.sib <= u->end)
				pos = d.sib;
			else
				depth++;
		}
	}
	*next = pos;
	return 0;
}

/* Where @d's next sibling starts, into *@next. */
static int sibling_pos(const struct tk_dwr *r, const struct unit *u, const struct die *d,
		       uint64_t *next)
{
	if (!d->a->children) {
		*next = d->end;
		return 0;
	}
	if (d->sib != NO_SIB) {
		if (d->sib <= d->off || d->sib > u->end)
			return bad(TK_DWR_INFO, d->off,
				   "DW_AT_sibling does not lead forward inside the unit");
		*next = d->sib;
		return 0;
	}
	return subtree_skip(r, u, d->end, next);
}

/* @v as an address (libdw's dwarf_formaddr()); -EOPNOTSUPP for other forms. */
static int val_addr(const struct tk_dwr *r, const struct unit *u, const struct val *v,
		    uint64_t *addr)
{
	uint64_t off;

	switch (v->form) {
	case FORM_addr:
		*addr = v->v;
		return 0;
	case FORM_addrx:
	case FORM_addrx1:
	case FORM_addrx2:
	case FORM_addrx3:
	case FORM_addrx4:
		if (!u->has_addr_base)
			return unsupported(TK_DWR_INFO, u->off, "address index without a base");
		off = u->addr_base + v->v * u->addr_size;
		if (v->v > r->s[TK_DWR_ADDR].size / u->addr_size || off < u->addr_base ||
		    off > r->s[TK_DWR_ADDR].size || r->s[TK_DWR_ADDR].size - off < u->addr_size)
			return bad(TK_DWR_ADDR, off, "address index lies past the section");
		*addr = load_le(r->s[TK_DWR_ADDR].p + off, u->addr_size);
		return 0;
	default:
		return unsupported(TK_DWR_INFO, u->off, "address of a form this reader leaves");
	}
}

/* A NUL-terminated string at @off of section @id. */
static int sect_str(const struct tk_dwr *r, enum tk_dwr_sect_id id, uint64_t off, const char **s)
{
	const struct tk_dwr_sect *sec = &r->s[id];

	if (off >= sec->size || !memchr(sec->p + off, 0, sec->size - off))
		return bad(id, off, "string runs past the section");
	*s = (const char *)sec->p + off;
	return 0;
}

/* @v as a string (libdw's dwarf_formstring()): NULL for a form that is no string. */
static int val_str(const struct tk_dwr *r, const struct unit *u, const struct val *v,
		   const char **s)
{
	uint64_t off;

	*s = NULL;
	switch (v->form) {
	case FORM_string:
		*s = v->str;
		return 0;
	case FORM_strp:
		return sect_str(r, TK_DWR_STR, v->v, s);
	case FORM_line_strp:
		return sect_str(r, TK_DWR_LINE_STR, v->v, s);
	case FORM_strx:
	case FORM_strx1:
	case FORM_strx2:
	case FORM_strx3:
	case FORM_strx4:
		if (!u->has_str_base)
			return unsupported(TK_DWR_INFO, u->off, "string index without a base");
		off = u->str_base + v->v * u->off_size;
		if (v->v > r->s[TK_DWR_STR_OFFSETS].size / u->off_size || off < u->str_base ||
		    off > r->s[TK_DWR_STR_OFFSETS].size ||
		    r->s[TK_DWR_STR_OFFSETS].size - off < u->off_size)
			return bad(TK_DWR_STR_OFFSETS, off, "string index lies past the section");
		return sect_str(r, TK_DWR_STR,
				load_le(r->s[TK_DWR_STR_OFFSETS].p + off, u->off_size), s);
	case FORM_GNU_str_index:
	case FORM_GNU_strp_alt:
	case FORM_strp_sup:
		return unsupported(TK_DWR_INFO, u->off, "string of a form this reader leaves");
	default:
		return 0;
	}
}

static void unit_free(struct unit *u)
{
	if (!u)
		return;
	free(u->abbrevs);
	free(u->specs);
	free(u->top);
	free(u);
}

/* Read @u's header at u->off, its abbreviations and its DIE's bases. */
static int unit_load(const struct tk_dwr *r, struct unit *u)
{
	const uint8_t *info = r->s[TK_DWR_INFO].p;
	uint64_t size = r->s[TK_DWR_INFO].size, pos = u->off, len, abbrev_off;
	struct die d;
	int err;

	if (u->off > size || size - u->off < 4)
		return bad(TK_DWR_INFO, u->off, "unit header runs past the section");
	len = load_le(info + pos, 4);
	pos += 4;
	u->off_size = 4;
	if (len == 0xffffffffu) {
		if (size - pos < 8)
			return bad(TK_DWR_INFO, u->off, "unit header runs past the section");
		len = load_le(info + pos, 8);
		pos += 8;
		u->off_size = 8;
	} else if (len >= 0xfffffff0u) {
		return bad(TK_DWR_INFO, u->off, "unit length is a reserved value");
	}
	if (len > size - pos)
		return bad(TK_DWR_INFO, u->off, "unit runs past the section");
	u->end = pos + len;
	if (u->end - pos < 2)
		return bad(TK_DWR_INFO, u->off, "unit header runs past the unit");
	u->version = (uint16_t)load_le(info + pos, 2);
	pos += 2;
	if (u->version < 2 || u->version > 5)
		return unsupported(TK_DWR_INFO, u->off, "unit of an unknown DWARF version");
	if (u->version == 5) {
		if (u->end - pos < 2u + u->off_size)
			return bad(TK_DWR_INFO, u->off, "unit header runs past the unit");
		if (info[pos] != UT_compile && info[pos] != UT_partial)
			return unsupported(TK_DWR_INFO, u->off,
					   "unit is not a compile or partial unit");
		u->addr_size = info[pos + 1];
		abbrev_off = load_le(info + pos + 2, u->off_size);
		pos += 2u + u->off_size;
	} else {
		if (u->end - pos < 1u + u->off_size)
			return bad(TK_DWR_INFO, u->off, "unit header runs past the unit");
		abbrev_off = load_le(info + pos, u->off_size);
		u->addr_size = info[pos + u->off_size];
		pos += 1u + u->off_size;
	}
	if (u->addr_size != 4 && u->addr_size != 8)
		return unsupported(TK_DWR_INFO, u->off,
				   "unit has an address size other than 4 or 8");
	u->die_off = pos;
	err = abbrevs_read(r, u, abbrev_off);
	if (err)
		return err;
	err = die_read(r, u, u->die_off, &d);
	if (err)
		return err;
	if (!d.a || (d.a->tag != TAG_compile_unit && d.a->tag != TAG_partial_unit))
		return unsupported(TK_DWR_INFO, u->die_off, "unit's DIE is no compile unit");
	if (d.s[S_SPLIT].set)
		return unsupported(TK_DWR_INFO, u->die_off, "unit of split DWARF");
	/* The bases first: the unit's own low_pc may be an address index. */
	u->has_str_base = d.s[S_STR_BASE].set;
	u->str_base = d.s[S_STR_BASE].v;
	u->has_addr_base = d.s[S_ADDR_BASE].set;
	u->addr_base = d.s[S_ADDR_BASE].v;
	u->has_rng_base = d.s[S_RNG_BASE].set;
	u->rng_base = d.s[S_RNG_BASE].v;
	u->base = 0;
	if (!(d.s[S_LOW].set && !val_addr(r, u, &d.s[S_LOW], &u->base)) &&
	    !(d.s[S_ENTRY].set && !val_addr(r, u, &d.s[S_ENTRY], &u->base)))
		u->base = 0;
	return 0;
}

/* The unit whose header is at @off, read on first use; NULL with *@err. */
static struct unit *unit_at(struct tk_dwr *r, uint64_t off, int *err)
{
	size_t lo = 0, hi = r->nunits;
	struct unit *u, **nu;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->units[mid]->off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nunits && r->units[lo]->off == off) {
		u = r->units[lo];
		*err = u->err;
		return u->err ? NULL : u;
	}
	nu = tk_array_grow(r->units, &r->unit_cap, r->nunits, sizeof(*nu), 64);
	if (!nu) {
		*err = -ENOMEM;
		return NULL;
	}
	r->units = nu;
	u = calloc(1, sizeof(*u));
	if (!u) {
		*err = -ENOMEM;
		return NULL;
	}
	u->off = off;
	u->err = unit_load(r, u);
	if (u->err == -ENOMEM) {
		/* Not kept: it may be read when memory is back. */
		unit_free(u);
		*err = -ENOMEM;
		return NULL;
	}
	memmove(r->units + lo + 1, r->units + lo, (r->nunits - lo) * sizeof(*r->units));
	r->units[lo] = u;
	r->nunits++;
	*err = u->err;
	return u->err ? NULL : u;
}

/* The unit that holds .debug_info offset @off (a DW_FORM_ref_addr's target). */
static struct unit *unit_holding(struct tk_dwr *r, uint64_t off, int *err)
{
	const uint8_t *info = r->s[TK_DWR_INFO].p;
	uint64_t size = r->s[TK_DWR_INFO].size, pos = 0;
	size_t lo = 0, hi = r->nunits;

	/* From the last unit read that starts at or below @off, unit by unit. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->units[mid]->off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct unit *u = r->units[lo - 1];

		if (!u->err && off < u->end)
			return unit_at(r, u->off, err);
		if (!u->err)
			pos = u->end;
	}
	while (pos < size) {
		uint64_t len, next;

		if (size - pos < 4)
			break;
		len = load_le(info + pos, 4);
		next = pos + 4;
		if (len == 0xffffffffu) {
			if (size - next < 8)
				break;
			len = load_le(info + next, 8);
			next += 8;
		} else if (len >= 0xfffffff0u) {
			break;
		}
		if (len > size - next)
			break;
		next += len;
		if (off < next)
			return unit_at(r, pos, err);
		pos = next;
	}
	*err = bad(TK_DWR_INFO, off, "reference leads to no unit");
	return NULL;
}

/* The DIE @v (a reference in @u) refers to, and its unit. */
static int ref_die(struct tk_dwr *r, struct unit *u, const struct val *v, struct unit **tu,
		   struct die *d)
{
	uint64_t off;
	int err;

	switch (v->form) {
	case FORM_ref1:
	case FORM_ref2:
	case FORM_ref4:
	case FORM_ref8:
	case FORM_ref_udata:
		if (v->v >= u->end - u->off)
			return bad(TK_DWR_INFO, u->off, "reference lies past its unit");
		off = u->off + v->v;
		*tu = u;
		break;
	case FORM_ref_addr:
		off = v->v;
		*tu = unit_holding(r, off, &err);
		if (!*tu)
			return err;
		break;
	default:
		return unsupported(TK_DWR_INFO, u->off, "reference of a form this reader leaves");
	}
	err = die_read(r, *tu, off, d);
	if (!err && !d->a)
		err = bad(TK_DWR_INFO, off, "reference to a 0 code");
	return err;
}

/*
 * The first value of slot @slot on @d, else on the DIEs its
 * DW_AT_abstract_origin (else DW_AT_specification) leads to, ORIGIN_STEPS
 * steps at most (libdw's dwarf_attr_integrate()). 1: found, into @v and
 * the unit it is in; 0: not found.
 */
static int attr_integrate(struct tk_dwr *r, struct unit *u, const struct die *d, int slot,
			  struct val *v, struct unit **vu)
{
	struct die cur = *d;

	for (int step = 0;; step++) {
		const struct val *ref;
		struct unit *nu = NULL;
		int err;

		if (cur.s[slot].set) {
			*v = cur.s[slot];
			*vu = u;
			return 1;
		}
		ref = cur.s[S_ORIGIN].set ? &cur.s[S_ORIGIN]
		      : cur.s[S_SPEC].set ? &cur.s[S_SPEC]
					  : NULL;
		if (!ref || step == ORIGIN_STEPS)
			return 0;
		err = ref_die(r, u, ref, &nu, &cur);
		if (err)
			return err;
		u = nu;
	}
}

/* A function's name as addr2line prints it (unwind.c's die_name_read()). */
static int die_name(struct tk_dwr *r, struct unit *u, const struct die *d, const char **name)
{
	static const int slots[] = {S_LINKAGE, S_MIPS, S_NAME};

	*name = NULL;
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		struct val v;
		struct unit *vu;
		int err = attr_integrate(r, u, d, slots[i], &v, &vu);

		if (err < 0)
			return err;
		if (err) {
			err = val_str(r, vu, &v, name);
			if (err < 0)
				return err;
			if (*name)
				return 0;
		}
	}
	return 0;
}

/* @d's own low_pc/high_pc pair (dwarf_lowpc()/dwarf_highpc()); 1: read, 0: none. */
static int die_pc_pair(const struct tk_dwr *r, const struct unit *u, const struct die *d,
		       uint64_t *lo, uint64_t *hi)
{
	const struct val *h = &d->s[S_HIGH];
	int err;

	if (!d->s[S_LOW].set || !h->set)
		return 0;
	err = val_addr(r, u, &d->s[S_LOW], lo);
	if (err)
		return err;
	switch (h->form) {
	case FORM_data1:
	case FORM_data2:
	case FORM_data4:
	case FORM_data8:
	case FORM_udata:
	case FORM_sdata:
	case FORM_implicit_const:
		*hi = *lo + h->v;
		return 1;
	default:
		err = val_addr(r, u, h, hi);
		return err ? err : 1;
	}
}

typedef int (*range_fn)(void *ctx, uint64_t lo, uint64_t hi);

/* .debug_ranges' list at @off (DWARF 2-4). */
static int ranges_list(const struct tk_dwr *r, const struct unit *u, uint64_t off, range_fn fn,
		       void *ctx)
{
	const struct tk_dwr_sect *s = &r->s[TK_DWR_RANGES];
	uint64_t base = u->base, pos = off, sel = u->addr_size == 8 ? ~0ull : 0xffffffffull;
	unsigned as = u->addr_size;

	for (;;) {
		uint64_t b, e;
		int err;

		if (pos > s->size || s->size - pos < 2u * as)
			return bad(TK_DWR_RANGES, pos, "range list runs past the section");
		b = load_le(s->p + pos, as);
		e = load_le(s->p + pos + as, as);
		pos += 2u * as;
		if (!b && !e)
			return 0;
		if (b == sel) {
			base = e;
			continue;
		}
		err = fn(ctx, base + b, base + e);
		if (err)
			return err;
	}
}

/* .debug_rnglists' list at @off (DWARF 5). */
static int rnglists_list(const struct tk_dwr *r, const struct unit *u, uint64_t off, range_fn fn,
			 void *ctx)
{
	const struct tk_dwr_sect *s = &r->s[TK_DWR_RNGLISTS];
	uint64_t base = u->base, pos = off;
	unsigned as = u->addr_size;

	if (off >= s->size)
		return bad(TK_DWR_RNGLISTS, off, "range list lies past the section");
	for (;;) {
		uint64_t at = pos, a = 0, b = 0, lo = 0, hi = 0;
		struct val v = {.set = true, .form = FORM_addrx};
		int kind, err = 0;

		if (pos >= s->size)
			return bad(TK_DWR_RNGLISTS, at, "range list runs past the section");
		kind = s->p[pos++];
		switch (kind) {
		case 0: /* DW_RLE_end_of_list */
			return 0;
		case 1: /* DW_RLE_base_addressx */
		case 2: /* DW_RLE_startx_endx */
		case 3: /* DW_RLE_startx_length */
		case 4: /* DW_RLE_offset_pair */
			if (!leb(s->p, &pos, s->size, &a, false) ||
			    (kind != 1 && !leb(s->p, &pos, s->size, &b, false)))
				return bad(TK_DWR_RNGLISTS, at, "range list runs past the section");
			break;
		case 5: /* DW_RLE_base_address */
		case 6: /* DW_RLE_start_end */
		case 7: /* DW_RLE_start_length */
			if (s->size - pos < as)
				return bad(TK_DWR_RNGLISTS, at, "range list runs past the section");
			a = load_le(s->p + pos, as);
			pos += as;
			if (kind == 6) {
				if (s->size - pos < as)
					return bad(TK_DWR_RNGLISTS, at,
						   "range list runs past the section");
				b = load_le(s->p + pos, as);
				pos += as;
			} else if (kind == 7 && !leb(s->p, &pos, s->size, &b, false)) {
				return bad(TK_DWR_RNGLISTS, at, "range list runs past the section");
			}
			break;
		default:
			return bad(TK_DWR_RNGLISTS, at, "range list entry of an unknown kind");
		}
		switch (kind) {
		case 1:
			v.v = a;
			err = val_addr(r, u, &v, &base);
			if (err)
				return err;
			continue;
		case 5:
			base = a;
			continue;
		case 2:
		case 3:
			v.v = a;
			err = val_addr(r, u, &v, &lo);
			if (err)
				return err;
			hi = lo + b;
			if (kind == 2) {
				v.v = b;
				err = val_addr(r, u, &v, &hi);
			}
			break;
		case 4:
			lo = base + a;
			hi = base + b;
			break;
		case 6:
			lo = a;
			hi = b;
			break;
		default:
			lo = a;
			hi = a + b;
			break;
		}
		if (!err)
			err = fn(ctx, lo, hi);
		if (err)
			return err;
	}
}

/* Every range of @d (libdw's dwarf_ranges()) to @fn, in list order. */
static int die_ranges(const struct tk_dwr *r, const struct unit *u, const struct die *d,
		      range_fn fn, void *ctx)
{
	const struct val *rv = &d->s[S_RANGES];
	uint64_t lo = 0, hi = 0, off;
	int err = die_pc_pair(r, u, d, &lo, &hi);

	if (err < 0)
		return err;
	if (err)
		return fn(ctx, lo, hi);
	if (!rv->set)
		return 0;
	if (rv->form == FORM_rnglistx) {
		const struct tk_dwr_sect *s = &r->s[TK_DWR_RNGLISTS];
		uint64_t at;

		if (!u->has_rng_base)
			return unsupported(TK_DWR_INFO, d->off, "range list index without a base");
		at = u->rng_base + rv->v * u->off_size;
		if (rv->v > s->size / u->off_size || at < u->rng_base || at > s->size ||
		    s->size - at < u->off_size)
			return bad(TK_DWR_RNGLISTS, at, "range list index lies past the section");
		off = u->rng_base + load_le(s->p + at, u->off_size);
		if (off < u->rng_base)
			return bad(TK_DWR_RNGLISTS, at, "range list offset overflows");
	} else if (rv->form == FORM_sec_offset ||
		   (u->version < 4 && (rv->form == FORM_data4 || rv->form == FORM_data8))) {
		off = rv->v;
	} else {
		return unsupported(TK_DWR_INFO, d->off, "DW_AT_ranges of an unexpected form");
	}
	if (u->version < 5)
		return ranges_list(r, u, off, fn, ctx);
	return rnglists_list(r, u, off, fn, ctx);
}

/* ------------------------------------------------------------ unit index */

struct top_add {
	struct unit *u;
	size_t cap;
	uint64_t die;
	uint32_t order;
};

static int top_add(void *ctx, uint64_t lo, uint64_t hi)
{
	struct top_add *t = ctx;
	struct unit *u = t->u;

	struct top *nt = tk_array_grow(u->top, &t->cap, u->ntop, sizeof(*nt), 64);

	if (!nt)
		return -ENOMEM;
	u->top = nt;
	u->top[u->ntop++] = (struct top){.lo = lo, .hi = hi, .die = t->die, .order = t->order};
	return 0;
}

static int top_cmp(const void *a, const void *b)
{
	const struct top *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Index the ranges of @u's top-level DIEs (unwind.c's cu_index_build()). */
static int unit_index(const struct tk_dwr *r, struct unit *u)
{
	struct top_add t = {.u = u};
	uint64_t pos;
	struct die d;
	int err = die_read(r, u, u->die_off, &d);

	if (err)
		return err;
	if (!d.a->children)
		return 0;
	pos = d.end;
	for (;;) {
		err = die_walk(r, u, pos, &d);
		if (err)
			return err;
		if (!d.a)
			break;
		if (d.a->tag == TAG_imported_unit)
			u->imports = true;
		if (d.a->pc && (d.s[S_LOW].set || d.s[S_RANGES].set)) {
			t.die = d.off;
			err = die_ranges(r, u, &d, top_add, &t);
			if (err)
				return err;
		}
		t.order++;
		err = sibling_pos(r, u, &d, &pos);
		if (err)
			return err;
	}
	if (u->ntop)
		qsort(u->top, u->ntop, sizeof(*u->top), top_cmp);
	for (size_t i = 0; i < u->ntop; i++)
		u->top[i].hi_max = i && u->top[i - 1].hi_max > u->top[i].hi ? u->top[i - 1].hi_max
									    : u->top[i].hi;
	return 0;
}

/* ------------------------------------------------------------ DIE nodes */

static uint64_t node_hash(uint64_t off, size_t cap)
{
	return (off * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

struct kid_add {
	struct node *n;
	size_t cap;
	uint64_t off;
};

static int kid_add(void *ctx, uint64_t lo, uint64_t hi)
{
	struct kid_add *k = ctx;
	struct node *n = k->n;

	struct kid *nk;

	if (n->nkids == UINT32_MAX)
		return -ENOMEM;
	nk = tk_array_grow(n->kids, &k->cap, n->nkids, sizeof(*nk), 8);
	if (!nk)
		return -ENOMEM;
	n->kids = nk;
	n->kids[n->nkids++] = (struct kid){lo, hi, k->off};
	return 0;
}

/* Read @n's tag and its children's ranges (unwind.c's die_node_fill()). */
static int node_fill(const struct tk_dwr *r, struct node *n)
{
	struct kid_add k = {.n = n};
	struct unit *u = n->u;
	uint64_t pos;
	struct die d;
	int err = die_read(r, u, n->off, &d);

	if (err)
		return err;
	if (!d.a)
		return bad(TK_DWR_INFO, n->off, "DIE of a 0 code on an address's path");
	n->tag = d.a->tag;
	if (!d.a->children)
		return 0;
	pos = d.end;
	for (;;) {
		err = die_walk(r, u, pos, &d);
		if (err)
			return err;
		if (!d.a)
			return 0;
		if (d.a->pc && (d.s[S_LOW].set || d.s[S_RANGES].set)) {
			k.off = d.off;
			err = die_ranges(r, u, &d, kid_add, &k);
			if (err)
				return err;
		}
		err = sibling_pos(r, u, &d, &pos);
		if (err)
			return err;
	}
}

/* The node of the DIE at @off in @u, read on first use; NULL with *@err. */
static struct node *node_get(struct tk_dwr *r, struct unit *u, uint64_t off, int *err)
{
	size_t j;

	if ((r->nnodes + 1) * 2 > r->node_cap) {
		size_t cap = r->node_cap ? 2 * r->node_cap : 1024;
		struct node *t = calloc(cap, sizeof(*t));

		if (!t) {
			*err = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < r->node_cap; i++) {
			if (!r->nodes[i].off)
				continue;
			j = node_hash(r->nodes[i].off, cap);
			while (t[j].off)
				j = (j + 1) & (cap - 1);
			t[j] = r->nodes[i];
		}
		free(r->nodes);
		r->nodes = t;
		r->node_cap = cap;
	}
	j = node_hash(off, r->node_cap);
	while (r->nodes[j].off) {
		if (r->nodes[j].off == off)
			return &r->nodes[j];
		j = (j + 1) & (r->node_cap - 1);
	}
	r->nodes[j].off = off;
	r->nodes[j].u = u;
	*err = node_fill(r, &r->nodes[j]);
	if (*err) {
		/* Not kept: the slot is freed again (nothing probes past it yet). */
		free(r->nodes[j].kids);
		memset(&r->nodes[j], 0, sizeof(r->nodes[j]));
		return NULL;
	}
	r->nnodes++;
	return &r->nodes[j];
}

/*
 * The name addr2line gives the innermost function @n: of the subprogram
 * siblings with its low_pc/high_pc, the last one's (unwind.c's
 * inner_name()).
 */
static int inner_name(struct tk_dwr *r, struct node *n, const char **name)
{
	struct unit *u = n->u;
	uint64_t lo = 0, hi = 0, lo2 = 0, hi2 = 0, pos = 0;
	struct die d, next;
	int err = die_read(r, u, n->off, &d);

	if (!err)
		err = die_name(r, u, &d, name);
	if (err)
		return err;
	err = die_pc_pair(r, u, &d, &lo, &hi);
	if (err <= 0)
		return err;
	err = sibling_pos(r, u, &d, &pos);
	while (!err) {
		const char *nm;

		err = die_read(r, u, pos, &next);
		if (err || !next.a || next.a->tag != TAG_subprogram)
			break;
		err = die_pc_pair(r, u, &next, &lo2, &hi2);
		if (err <= 0 || lo2 != lo || hi2 != hi)
			break;
		err = die_name(r, u, &next, &nm);
		if (err)
			break;
		if (nm)
			*name = nm;
		err = sibling_pos(r, u, &next, &pos);
	}
	return err < 0 ? err : 0;
}

/* @n's name as an outer function (@inner false) or the innermost one. */
static int node_name(struct tk_dwr *r, struct node *n, bool inner, const char **name)
{
	int err = 0;

	if (!(n->named & (inner ? 2 : 1))) {
		if (inner) {
			err = inner_name(r, n, &n->inner);
		} else {
			struct die d;

			err = die_read(r, n->u, n->off, &d);
			if (!err)
				err = die_name(r, n->u, &d, &n->name);
		}
		if (err)
			return err;
		n->named |= inner ? 2 : 1;
	}
	*name = inner ? n->inner : n->name;
	return 0;
}

/* ------------------------------------------------------------ the API */

struct tk_dwr *tk_dwr_new(const struct tk_dwr_sect sect[TK_DWR_NSECT])
{
	struct tk_dwr *r;
	int err;

	if (!sect[TK_DWR_INFO].p || !sect[TK_DWR_ABBREV].p || !sect[TK_DWR_ARANGES].p)
		return tk_fail_null(ENOENT, "no .debug_info, .debug_abbrev or .debug_aranges");
	r = calloc(1, sizeof(*r));
	if (!r)
		return tk_fail_null(ENOMEM, "out of memory");
	memcpy(r->s, sect, sizeof(r->s));
	err = aranges_read(r);
	if (err) {
		tk_dwr_free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

void tk_dwr_free(struct tk_dwr *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nunits; i++)
		unit_free(r->units[i]);
	for (size_t i = 0; i < r->node_cap; i++)
		free(r->nodes[i].kids);
	free(r->units);
	free(r->nodes);
	free(r->ar);
	free(r);
}

int tk_dwr_inlines(struct tk_dwr *r, uint64_t pc, const char **names, int max)
{
	uint64_t path[PATH_MAX_DEPTH];
	uint32_t tags[PATH_MAX_DEPTH];
	const struct top *best = NULL;
	int64_t cu = pc_unit(r, pc);
	struct unit *u;
	struct node *n;
	size_t lo = 0, hi;
	int depth = 0, k, count = 0, err;

	if (cu < 0)
		return (int)cu;
	u = unit_at(r, (uint64_t)cu, &err);
	if (!u)
		return err;
	if (!u->indexed) {
		u->index_err = unit_index(r, u);
		if (u->index_err == -ENOMEM) {
			free(u->top);
			u->top = NULL;
			u->ntop = 0;
			return -ENOMEM;
		}
		u->indexed = true;
	}
	if (u->index_err)
		return u->index_err;
	if (u->imports)
		return -EOPNOTSUPP;
	/* The last range starting at or below @pc, then back while one may still cover it. */
	hi = u->ntop;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (u->top[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && u->top[i].hi_max > pc;)
		if (pc < u->top[i].hi && (!best || u->top[i].order < best->order))
			best = &u->top[i];
	if (!best)
		return 0;
	n = node_get(r, u, best->die, &err);
	if (!n)
		return err;
	path[0] = n->off;
	tags[0] = n->tag;
	while (depth + 1 < PATH_MAX_DEPTH) {
		const struct kid *kid = NULL;

		for (uint32_t i = 0; i < n->nkids && !kid; i++)
			if (pc >= n->kids[i].lo && pc < n->kids[i].hi)
				kid = &n->kids[i];
		if (!kid)
			break;
		n = node_get(r, u, kid->off, &err);
		if (!n)
			return err;
		path[++depth] = n->off;
		tags[depth] = n->tag;
	}
	for (k = depth; k >= 0; k--)
		if (tags[k] == TAG_subprogram || tags[k] == TAG_inlined_subroutine)
			break;
	if (k < 0)
		return 0;
	for (; k >= 0 && count < max; k--) {
		if (tags[k] != TAG_subprogram && tags[k] != TAG_inlined_subroutine)
			continue;
		n = node_get(r, u, path[k], &err);
		if (!n)
			return err;
		err = node_name(r, n, !count, &names[count]);
		if (err)
			return err;
		count++;
		if (tags[k] == TAG_subprogram)
			break;
	}
	return count;
}
