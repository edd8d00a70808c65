// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dwarf-walk: the children of a compile unit's DIE, read from the bytes of
 * .debug_info and .debug_abbrev.
 *
 * The inline names of a frame start from an index of the unit's top-level
 * functions by address (unwind.c's cu_index_build()), built once per unit
 * from every child of the unit's DIE: libc's units have thousands of them,
 * types and declarations mostly, and libdw's dwarf_siblingof(),
 * dwarf_tag() and dwarf_hasattr() cost ~300, ~200 and ~100 instructions a
 * child (its abbreviation hash, its attribute decoding). This walk reads
 * the unit's abbreviation table once into an array by code, then per child
 * its code, the fixed sizes of its attributes, and its DW_AT_sibling to
 * skip its subtree. A child's range is read here when it is a plain
 * low_pc/high_pc pair at fixed places (a function's usual form); only the
 * other children with an address range are handed to libdw
 * (dwarf_offdie(), dwarf_ranges(), ~600 instructions each).
 *
 * Layout read (DWARF 2-5, little-endian, as the machine's own binaries):
 *   unit header: unit_length u32 (0xffffffff: then u64, 64-bit offsets;
 *     0xfffffff0-0xfffffffe reserved), version u16 (2-5); version 5:
 *     unit_type u8 (DW_UT_compile or DW_UT_partial only here),
 *     address_size u8, debug_abbrev_offset (offset size); versions 2-4:
 *     debug_abbrev_offset (offset size), address_size u8. The unit's DIE
 *     follows, then its children, each a DIE and its own children, ended
 *     by a 0 code.
 *   DIE: abbreviation code (ULEB128; 0 ends a list of siblings), then one
 *     value per attribute of the abbreviation, each in its form.
 *   abbreviation table (at debug_abbrev_offset): entries of code (ULEB128,
 *     0 ends the table), tag (ULEB128), children u8 (DW_CHILDREN_yes 1),
 *     then (attribute ULEB128, form ULEB128 [, DW_FORM_implicit_const's
 *     value SLEB128]) pairs ended by (0, 0).
 *   Form sizes: addr the address size; data1/ref1/flag/strx1/addrx1 1,
 *     data2/ref2/strx2/addrx2 2, strx3/addrx3 3, data4/ref4/strx4/addrx4/
 *     ref_sup4 4, data8/ref8/ref_sig8/ref_sup8 8, data16 16; strp,
 *     sec_offset, line_strp, strp_sup, GNU_ref_alt, GNU_strp_alt the offset
 *     size; ref_addr the address size in version 2, else the offset size;
 *     udata, sdata, ref_udata, strx, addrx, loclistx, rnglistx,
 *     GNU_addr_index, GNU_str_index a LEB128; string up to its NUL;
 *     block1/block2/block4/block/exprloc a length (u8/u16/u32/ULEB128)
 *     and that many bytes; flag_present and implicit_const nothing;
 *     indirect a ULEB128 form, then a value of that form.
 *   DW_AT_sibling (a ref1/2/4/8/udata, relative to the unit header's
 *     first byte) is where the DIE's next sibling starts; libdw's
 *     dwarf_siblingof() follows it the same way (and fails on other forms).
 *
 * Anything else (other unit types, unknown forms, a sibling that does not
 * lead forward inside the unit, an abbreviation code past MAX_CODE or not
 * in the table) ends the walk with -EINVAL and the offset, and the caller
 * walks the unit with libdw instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-walk.h"
#include "error.h"

/* Abbreviation codes above this are refused: compilers number them from 1. */
#define MAX_CODE (1u << 16)

enum {
	AT_sibling = 0x01,
	AT_low_pc = 0x11,
	AT_high_pc = 0x12,
	AT_ranges = 0x55,
	CHILDREN_yes = 1,
	UT_compile = 0x01,
	UT_partial = 0x03,
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

/* How an attribute's value is skipped. */
enum skip {
	SKIP_FIXED,   /* @size bytes */
	SKIP_LEB,     /* a LEB128 */
	SKIP_STRING,  /* up to a NUL */
	SKIP_BLOCK1,  /* u8 length, then the bytes */
	SKIP_BLOCK2,  /* u16 */
	SKIP_BLOCK4,  /* u32 */
	SKIP_BLOCK,   /* ULEB128 */
	SKIP_INDIRECT /* a ULEB128 form, then its value */
};

struct spec {
	uint8_t skip; /* enum skip */
	uint8_t size; /* SKIP_FIXED */
	bool sibling; /* DW_AT_sibling: its value is read */
	uint16_t form;
};

struct abbrev {
	uint32_t tag; /* 0: no such code */
	bool children, ranges;
	uint32_t first, n; /* its specs in the walk's array */
	/*
	 * When every value has a fixed size (most DIEs): their total, and
	 * where the DW_AT_sibling value lies among them (-1: none), so the DIE
	 * is skipped in one step. fixed < 0: read value by value.
	 */
	int32_t fixed, sib_at;
	uint8_t sib_size;
	/*
	 * Its DW_AT_low_pc (DW_FORM_addr) and DW_AT_high_pc (addr, or
	 * data1-8: an offset from low_pc) at fixed places from the DIE's
	 * first value, and no DW_AT_ranges: then the walk reads the range
	 * (pc). @prefix: the size of the fixed values so far while reading
	 * the table (-1 past a variable one).
	 */
	bool pc, hi_addr, pc_bad;
	uint8_t hi_size;
	int32_t lo_at, hi_at, prefix;
};

/* No DW_AT_sibling read. */
#define NO_SIB UINT64_MAX

struct walk {
	const uint8_t *info;
	uint64_t unit_off, unit_end; /* the unit's bytes in @info */
	uint8_t addr_size, off_size;
	uint16_t version;
	struct abbrev *abbrevs; /* by code, up to @ncodes */
	uint32_t ncodes;
	struct spec *specs;
	uint32_t nspecs, spec_cap;
};

static int bad_info(uint64_t off, const char *why)
{
	return tk_fail_at(EINVAL, ".debug_info", off, "%s", why);
}

static int bad_abbrev(uint64_t off, const char *why)
{
	return tk_fail_at(EINVAL, ".debug_abbrev", off, "%s", why);
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

/*
 * A LEB128 at *@pos below @end into @v (its low 64 bits); false past @end.
 * Codes, attributes and forms are nearly all one byte: that case inline.
 */
static inline bool leb(const uint8_t *p, uint64_t *pos, uint64_t end, uint64_t *v, bool sign)
{
	if (*pos < end && !(p[*pos] & 0x80) && !sign) {
		*v = p[(*pos)++];
		return true;
	}
	return leb_long(p, pos, end, v, sign);
}

static uint64_t load_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* How @form is skipped in @w's unit; false: a form this walk does not know. */
static bool form_skip(const struct walk *w, uint64_t form, struct spec *s)
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
	s->skip = SKIP_FIXED;
	s->size = 0;
	switch (form) {
	case FORM_addr:
		s->size = w->addr_size;
		return true;
	case FORM_strp:
	case FORM_sec_offset:
	case FORM_line_strp:
	case FORM_strp_sup:
	case FORM_GNU_ref_alt:
	case FORM_GNU_strp_alt:
		s->size = w->off_size;
		return true;
	case FORM_ref_addr:
		s->size = w->version == 2 ? w->addr_size : w->off_size;
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
		s->skip = SKIP_LEB;
		return true;
	case FORM_string:
		s->skip = SKIP_STRING;
		return true;
	case FORM_block1:
		s->skip = SKIP_BLOCK1;
		return true;
	case FORM_block2:
		s->skip = SKIP_BLOCK2;
		return true;
	case FORM_block4:
		s->skip = SKIP_BLOCK4;
		return true;
	case FORM_block:
	case FORM_exprloc:
		s->skip = SKIP_BLOCK;
		return true;
	case FORM_indirect:
		s->skip = SKIP_INDIRECT;
		return true;
	default:
		if (form < sizeof(fixed) && fixed[form]) {
			s->size = fixed[form];
			return true;
		}
		return false;
	}
}

/*
 * Note where @s, the next value of @a, lies for the pc range (struct
 * abbrev); a second low_pc or high_pc, a DW_AT_ranges, or a form other
 * than those read leaves the range to libdw.
 */
static void pc_spec(struct abbrev *a, uint64_t attr, const struct spec *s)
{
	if (attr == AT_low_pc) {
		if (a->lo_at >= 0 || s->form != FORM_addr || a->prefix < 0)
			a->pc_bad = true;
		a->lo_at = a->prefix;
	} else if (attr == AT_high_pc) {
		if (a->hi_at >= 0 || a->prefix < 0 ||
		    (s->form != FORM_addr && s->form != FORM_data1 && s->form != FORM_data2 &&
		     s->form != FORM_data4 && s->form != FORM_data8))
			a->pc_bad = true;
		a->hi_at = a->prefix;
		a->hi_addr = s->form == FORM_addr;
		a->hi_size = s->size;
	} else if (attr == AT_ranges) {
		a->pc_bad = true;
	}
	if (a->prefix >= 0 && s->skip == SKIP_FIXED)
		a->prefix += s->size;
	else
		a->prefix = -1;
}

/* Read the abbreviation table at @off of @ab into @w. */
static int abbrevs_read(struct walk *w, const uint8_t *ab, uint64_t size, uint64_t off)
{
	uint64_t pos = off, code, tag, attr, form, v;
	uint32_t cap = 0;

	if (off >= size)
		return bad_abbrev(off, "unit's abbreviation table lies past the section");
	for (;;) {
		uint64_t at = pos;
		struct abbrev *a;

		if (!leb(ab, &pos, size, &code, false))
			return bad_abbrev(at, "abbreviation code runs past the section");
		if (!code)
			return 0;
		if (code >= MAX_CODE)
			return bad_abbrev(at, "abbreviation code too large");
		if (code >= cap) {
			uint32_t ncap = cap ? cap : 64;
			struct abbrev *na;

			while (ncap <= code)
				ncap *= 2;
			na = realloc(w->abbrevs, ncap * sizeof(*na));
			if (!na)
				return -ENOMEM;
			memset(na + cap, 0, (ncap - cap) * sizeof(*na));
			w->abbrevs = na;
			cap = ncap;
		}
		a = &w->abbrevs[code];
		if (a->tag)
			return bad_abbrev(at, "abbreviation code defined twice");
		if (!leb(ab, &pos, size, &tag, false) || pos >= size)
			return bad_abbrev(at, "abbreviation runs past the section");
		if (!tag || tag > UINT32_MAX)
			return bad_abbrev(at, "abbreviation has a bad tag");
		a->tag = (uint32_t)tag;
		a->children = ab[pos++] == CHILDREN_yes;
		a->first = w->nspecs;
		a->sib_at = a->lo_at = a->hi_at = -1;
		for (;;) {
			struct spec *s;

			if (!leb(ab, &pos, size, &attr, false) ||
			    !leb(ab, &pos, size, &form, false))
				return bad_abbrev(at,
						  "abbreviation's attributes run past the section");
			if (!attr && !form)
				break;
			if (form == FORM_implicit_const && !leb(ab, &pos, size, &v, true))
				return bad_abbrev(at, "implicit constant runs past the section");
			if (w->nspecs == w->spec_cap) {
				uint32_t ncap = w->spec_cap ? 2 * w->spec_cap : 256;
				struct spec *ns = realloc(w->specs, ncap * sizeof(*ns));

				if (!ns)
					return -ENOMEM;
				w->specs = ns;
				w->spec_cap = ncap;
			}
			s = &w->specs[w->nspecs];
			if (!form_skip(w, form, s))
				return bad_abbrev(at, "attribute of an unknown form");
			s->sibling = attr == AT_sibling;
			if (attr == AT_low_pc || attr == AT_ranges)
				a->ranges = true;
			pc_spec(a, attr, s);
			if (a->fixed >= 0 && s->skip == SKIP_FIXED &&
			    (!s->sibling || s->form == FORM_ref1 || s->form == FORM_ref2 ||
			     s->form == FORM_ref4 || s->form == FORM_ref8)) {
				if (s->sibling && a->sib_at < 0) {
					a->sib_at = a->fixed;
					a->sib_size = s->size;
				}
				a->fixed += s->size;
			} else {
				a->fixed = -1;
			}
			w->nspecs++;
			a->n++;
		}
		a->pc = !a->pc_bad && a->lo_at >= 0 && a->hi_at >= 0;
		if (code >= w->ncodes)
			w->ncodes = (uint32_t)code + 1;
	}
}

/*
 * Skip one value of @s at *@pos; the first DW_AT_sibling's target
 * (section offset) into *@sib. Return: 0, or -EINVAL.
 */
static int value_skip(const struct walk *w, const struct spec *s, uint64_t *pos, uint64_t *sib)
{
	const uint8_t *p = w->info;
	uint64_t at = *pos, end = w->unit_end, n = 0;
	struct spec ind;

	switch (s->skip) {
	case SKIP_FIXED:
		if (end - *pos < s->size)
			return bad_info(at, "attribute runs past the unit");
		if (s->sibling && *sib == NO_SIB) {
			/* libdw's dwarf_siblingof() fails on a ref_addr too. */
			if (s->form != FORM_ref1 && s->form != FORM_ref2 && s->form != FORM_ref4 &&
			    s->form != FORM_ref8)
				return bad_info(at, "DW_AT_sibling is not a unit reference");
			*sib = w->unit_off + load_le(p + *pos, s->size);
		}
		*pos += s->size;
		return 0;
	case SKIP_LEB:
		if (!leb(p, pos, end, &n, false))
			return bad_info(at, "attribute runs past the unit");
		if (s->sibling && *sib == NO_SIB) {
			if (s->form != FORM_ref_udata)
				return bad_info(at, "DW_AT_sibling is not a reference");
			*sib = w->unit_off + n;
		}
		return 0;
	case SKIP_STRING: {
		const uint8_t *nul = memchr(p + *pos, 0, end - *pos);

		if (!nul)
			return bad_info(at, "string runs past the unit");
		*pos = (uint64_t)(nul - p) + 1;
		break;
	}
	case SKIP_BLOCK1:
	case SKIP_BLOCK2:
	case SKIP_BLOCK4: {
		unsigned len = s->skip == SKIP_BLOCK1 ? 1 : s->skip == SKIP_BLOCK2 ? 2 : 4;

		if (end - *pos < len)
			return bad_info(at, "block runs past the unit");
		n = load_le(p + *pos, len);
		*pos += len;
		goto block;
	}
	case SKIP_BLOCK:
		if (!leb(p, pos, end, &n, false))
			return bad_info(at, "block runs past the unit");
	block:
		if (end - *pos < n)
			return bad_info(at, "block runs past the unit");
		*pos += n;
		break;
	case SKIP_INDIRECT:
		if (!leb(p, pos, end, &n, false))
			return bad_info(at, "indirect form runs past the unit");
		if (n == FORM_indirect || n == FORM_implicit_const || !form_skip(w, n, &ind))
			return bad_info(at, "indirect attribute of an unknown form");
		ind.sibling = s->sibling;
		return value_skip(w, &ind, pos, sib);
	}
	if (s->sibling && *sib == NO_SIB)
		return bad_info(at, "DW_AT_sibling is not a unit reference");
	return 0;
}

/*
 * Read the DIE at *@pos (its code already read: @a) up to its end; its
 * first DW_AT_sibling, as libdw takes it, into *@sib (NO_SIB: none).
 * Return: 0 or -EINVAL.
 */
static inline int die_skip(const struct walk *w, const struct abbrev *a, uint64_t *pos,
			   uint64_t *sib)
{
	*sib = NO_SIB;
	if (a->fixed >= 0) {
		if (w->unit_end - *pos < (uint32_t)a->fixed)
			return bad_info(*pos, "DIE runs past the unit");
		if (a->sib_at >= 0)
			*sib = w->unit_off + load_le(w->info + *pos + a->sib_at, a->sib_size);
		*pos += (uint32_t)a->fixed;
		return 0;
	}
	for (uint32_t i = 0; i < a->n; i++) {
		const struct spec *s = &w->specs[a->first + i];

		/* The common case, inline: a fixed size that is no sibling. */
		if (s->skip == SKIP_FIXED && !s->sibling) {
			if (w->unit_end - *pos < s->size)
				return bad_info(*pos, "attribute runs past the unit");
			*pos += s->size;
		} else if (value_skip(w, s, pos, sib) < 0) {
			return -EINVAL;
		}
	}
	return 0;
}

/* The abbreviation of the code at *@pos (NULL: a 0 code); -EINVAL through @err. */
static const struct abbrev *die_code(const struct walk *w, uint64_t *pos, int *err)
{
	uint64_t at = *pos, code;

	*err = 0;
	if (!leb(w->info, pos, w->unit_end, &code, false)) {
		*err = bad_info(at, "DIE runs past the unit");
		return NULL;
	}
	if (!code)
		return NULL;
	if (code >= w->ncodes || !w->abbrevs[code].tag) {
		*err = bad_info(at, "DIE of an abbreviation code the table lacks");
		return NULL;
	}
	return &w->abbrevs[code];
}

/* Skip the children of a DIE, from *@pos (after its attributes) past their ending 0. */
static int subtree_skip(const struct walk *w, uint64_t *pos)
{
	uint64_t depth = 1, sib;
	int err;

	while (depth) {
		const struct abbrev *a = die_code(w, pos, &err);

		if (err)
			return err;
		if (!a) {
			depth--;
			continue;
		}
		if (die_skip(w, a, pos, &sib) < 0)
			return -EINVAL;
		if (a->children)
			depth++;
	}
	return 0;
}

static int walk_children(struct walk *w, uint64_t pos,
			 int (*fn)(void *ctx, const struct tk_dwarf_top *top), void *ctx)
{
	for (;;) {
		struct tk_dwarf_top top = {.off = pos};
		const struct abbrev *a;
		uint64_t sib, vals;
		int err, r;

		/* A list of children ends with a 0 code, inside the unit. */
		a = die_code(w, &pos, &err);
		if (err)
			return err;
		if (!a)
			return 0;
		vals = pos;
		if (die_skip(w, a, &pos, &sib) < 0)
			return -EINVAL;
		top.tag = a->tag;
		top.ranges = a->ranges;
		if (a->pc) {
			/* Both lie inside the DIE, which die_skip() found inside the unit. */
			uint64_t hi = load_le(w->info + vals + a->hi_at, a->hi_size);

			top.pc = true;
			top.lo = load_le(w->info + vals + a->lo_at, w->addr_size);
			top.hi = a->hi_addr ? hi : top.lo + hi;
		}
		r = fn(ctx, &top);
		if (r)
			return r;
		if (!a->children)
			continue;
		if (sib == NO_SIB) {
			if (subtree_skip(w, &pos) < 0)
				return -EINVAL;
		} else if (sib < pos || sib > w->unit_end) {
			return bad_info(top.off,
					"DW_AT_sibling does not lead forward inside the unit");
		} else {
			pos = sib;
		}
	}
	return 0;
}

int tk_dwarf_top_walk(const uint8_t *info, size_t info_size, uint64_t unit_off,
		      const uint8_t *abbrev, size_t abbrev_size,
		      int (*fn)(void *ctx, const struct tk_dwarf_top *top), void *ctx)
{
	struct walk w = {.info = info, .unit_off = unit_off};
	uint64_t pos = unit_off, len, abbrev_off, sib;
	const struct abbrev *a;
	int err;

	if (unit_off > info_size || info_size - unit_off < 4)
		return bad_info(unit_off, "unit header runs past the section");
	len = load_le(info + pos, 4);
	pos += 4;
	w.off_size = 4;
	if (len == 0xffffffffu) {
		if (info_size - pos < 8)
			return bad_info(unit_off, "unit header runs past the section");
		len = load_le(info + pos, 8);
		pos += 8;
		w.off_size = 8;
	} else if (len >= 0xfffffff0u) {
		return bad_info(unit_off, "unit length is a reserved value");
	}
	if (len > info_size - pos)
		return bad_info(unit_off, "unit runs past the section");
	w.unit_end = pos + len;
	if (w.unit_end - pos < 2)
		return bad_info(unit_off, "unit header runs past the unit");
	w.version = (uint16_t)load_le(info + pos, 2);
	pos += 2;
	if (w.version < 2 || w.version > 5)
		return bad_info(unit_off, "unit of an unknown DWARF version");
	if (w.version == 5) {
		if (w.unit_end - pos < 2u + w.off_size)
			return bad_info(unit_off, "unit header runs past the unit");
		if (info[pos] != UT_compile && info[pos] != UT_partial)
			return bad_info(unit_off, "unit is not a compile or partial unit");
		w.addr_size = info[pos + 1];
		abbrev_off = load_le(info + pos + 2, w.off_size);
		pos += 2u + w.off_size;
	} else {
		if (w.unit_end - pos < 1u + w.off_size)
			return bad_info(unit_off, "unit header runs past the unit");
		abbrev_off = load_le(info + pos, w.off_size);
		w.addr_size = info[pos + w.off_size];
		pos += 1u + w.off_size;
	}
	if (w.addr_size != 4 && w.addr_size != 8)
		return bad_info(unit_off, "unit has an address size other than 4 or 8");
	err = abbrevs_read(&w, abbrev, abbrev_size, abbrev_off);
	if (!err) {
		/* The unit's own DIE, then its children. */
		a = die_code(&w, &pos, &err);
		if (!err && a) {
			err = die_skip(&w, a, &pos, &sib);
			if (!err && a->children)
				err = walk_children(&w, pos, fn, ctx);
		}
	}
	free(w.abbrevs);
	free(w.specs);
	return err;
}
