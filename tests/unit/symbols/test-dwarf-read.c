// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dwarf-read: inline names from hand-made DWARF sections. Two units: a
 * DWARF 4 one (strp and string names, a subprogram skipped by its
 * DW_AT_sibling, an inlined subroutine under it through its abstract
 * origin, a lexical block and an inlined subroutine with .debug_ranges
 * lists (one with a base address selection), a reference into the other
 * unit (DW_FORM_ref_addr), two subprograms with one range (the last one
 * names it), a subprogram whose abstract origin is itself) and a DWARF 5
 * one (strx1 through DW_AT_str_offsets_base, addrx1 through
 * DW_AT_addr_base, a DW_FORM_rnglistx list through DW_AT_rnglists_base,
 * line_strp, implicit_const and data16 values, a linkage name). Each
 * address gets libdw's answer: the names innermost first, 0 in a unit
 * without a function there (gaps between units belong to the unit
 * before, as in libdwfl), -ENOENT outside every unit. Bad bytes (every
 * truncation of every section, a sibling leading backward, an unknown
 * form, an aranges set of another version) give -EINVAL naming the
 * section and offset, or -EOPNOTSUPP, never a crash (the ASan build
 * checks) or a hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/common.h>

#include "dwarf-read.h"

struct buf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct buf *b, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		b->b[b->n++] = i < 8 ? (uint8_t)(v >> (8 * i)) : 0;
}

static void uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		b->b[b->n++] = c | (v ? 0x80 : 0);
	} while (v);
}

static void str(struct buf *b, const char *s)
{
	memcpy(b->b + b->n, s, strlen(s) + 1);
	b->n += strlen(s) + 1;
}

static void patch(struct buf *b, size_t at, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		b->b[at + i] = (uint8_t)(v >> (8 * i));
}

/* Abbreviation codes of unit A (table at 0) and B (its own table). */
enum { A_CU = 1, A_SUB, A_INL, A_ABS, A_BLOCK, A_INL_FAR, A_BASE, A_ALIAS, A_SELF };
enum { B_CU = 1, B_SUB, B_INL, B_ABS };

struct sections {
	struct buf info, abbrev, str, line_str, str_off, addr, ranges, rnglists, aranges;
	struct tk_dwr_sect s[TK_DWR_NSECT];
};

static void abbrev_entry(struct buf *ab, int code, int tag, int children, const int *pairs)
{
	uleb(ab, (uint64_t)code);
	uleb(ab, (uint64_t)tag);
	put(ab, (uint64_t)children, 1);
	for (; pairs[0] || pairs[1]; pairs += 2) {
		uleb(ab, (uint64_t)pairs[0]);
		uleb(ab, (uint64_t)pairs[1]);
		if (pairs[1] == 0x21) /* implicit_const: its value */
			uleb(ab, 7);
	}
	put(ab, 0, 2);
}

static void build(struct sections *S)
{
	struct buf *in = &S->info, *ab = &S->abbrev;
	size_t a_len, abs_inl, abs_unused, sib_at, self_at, far_ref_at, b_off, b_len, b_far;
	size_t b_abbrev, str_outer, str_far, str_main;

	memset(S, 0, sizeof(*S));
	/* .debug_str: "outer" for unit A (strp); B's names through str_offsets. */
	put(&S->str, 0, 1);
	str_outer = S->str.n;
	str(&S->str, "outer");
	str_far = S->str.n;
	str(&S->str, "far_fn");
	str_main = S->str.n;
	str(&S->str, "b_main");
	str(&S->line_str, "_Z6b_mainv");

	/* Unit A's abbreviations. */
	abbrev_entry(ab, A_CU, 0x11, 1, (const int[]){0x03, 0x08, 0x11, 0x01, 0x12, 0x06, 0, 0});
	abbrev_entry(ab, A_SUB, 0x2e, 1,
		     (const int[]){0x01, 0x13, 0x03, 0x0e, 0x11, 0x01, 0x12, 0x06, 0, 0});
	abbrev_entry(ab, A_INL, 0x1d, 1, (const int[]){0x31, 0x13, 0x11, 0x01, 0x12, 0x06, 0, 0});
	abbrev_entry(ab, A_ABS, 0x2e, 0, (const int[]){0x03, 0x08, 0x20, 0x0b, 0, 0});
	abbrev_entry(ab, A_BLOCK, 0x0b, 1, (const int[]){0x55, 0x17, 0, 0});
	abbrev_entry(ab, A_INL_FAR, 0x1d, 0, (const int[]){0x31, 0x10, 0x55, 0x17, 0, 0});
	abbrev_entry(ab, A_BASE, 0x24, 0, (const int[]){0x03, 0x08, 0x0b, 0x0b, 0, 0});
	abbrev_entry(ab, A_ALIAS, 0x2e, 0, (const int[]){0x03, 0x08, 0x11, 0x01, 0x12, 0x01, 0, 0});
	abbrev_entry(ab, A_SELF, 0x2e, 0, (const int[]){0x31, 0x13, 0x11, 0x01, 0x12, 0x06, 0, 0});
	put(ab, 0, 1);
	b_abbrev = ab->n;
	abbrev_entry(
		ab, B_CU, 0x11, 1,
		(const int[]){0x03, 0x25, 0x72, 0x17, 0x73, 0x17, 0x74, 0x17, 0x11, 0x29, 0, 0});
	abbrev_entry(ab, B_SUB, 0x2e, 1,
		     (const int[]){0x03, 0x25, 0x11, 0x29, 0x12, 0x06, 0x6e, 0x1f, 0, 0});
	abbrev_entry(ab, B_INL, 0x1d, 0, (const int[]){0x31, 0x13, 0x55, 0x23, 0x58, 0x21, 0, 0});
	abbrev_entry(ab, B_ABS, 0x2e, 0, (const int[]){0x03, 0x25, 0x1c, 0x1e, 0, 0});
	put(ab, 0, 1);

	/* .debug_ranges: the block [0x1020, 0x1030) from the unit's base 0x1000; the far
	 * inlined subroutine [0x1024, 0x1028) after a base address selection. */
	put(&S->ranges, 0x20, 8);
	put(&S->ranges, 0x30, 8);
	put(&S->ranges, 0, 16);
	put(&S->ranges, ~0ull, 8);
	put(&S->ranges, 0x1020, 8);
	put(&S->ranges, 4, 8);
	put(&S->ranges, 8, 8);
	put(&S->ranges, 0, 16);

	/* Unit A: DWARF 4, 32-bit, at 0. */
	put(in, 0, 4);
	put(in, 4, 2);
	put(in, 0, 4);
	put(in, 8, 1);
	put(in, A_CU, 1);
	str(in, "a.c");
	put(in, 0x1000, 8);
	put(in, 0x300, 4);
	put(in, A_BASE, 1);
	str(in, "int");
	put(in, 4, 1);
	abs_inl = in->n;
	put(in, A_ABS, 1);
	str(in, "inl_fn");
	put(in, 3, 1);
	abs_unused = in->n;
	put(in, A_ABS, 1);
	str(in, "unused");
	put(in, 3, 1);
	(void)abs_unused;
	put(in, A_SUB, 1);
	sib_at = in->n;
	put(in, 0, 4);
	put(in, str_outer, 4);
	put(in, 0x1000, 8);
	put(in, 0x100, 4);
	put(in, A_INL, 1);
	put(in, abs_inl, 4);
	put(in, 0x1010, 8);
	put(in, 0x40, 4);
	put(in, A_BLOCK, 1);
	put(in, 0, 4); /* the first list of .debug_ranges */
	put(in, A_INL_FAR, 1);
	far_ref_at = in->n;
	put(in, 0, 4);
	put(in, 32, 4); /* the second list */
	put(in, 0, 1);	/* the block's children end */
	put(in, 0, 1);	/* the inlined subroutine's */
	put(in, 0, 1);	/* the subprogram's */
	patch(in, sib_at, in->n, 4);
	put(in, A_ALIAS, 1);
	str(in, "alias1");
	put(in, 0x1100, 8);
	put(in, 0x1180, 8);
	put(in, A_ALIAS, 1);
	str(in, "alias2");
	put(in, 0x1100, 8);
	put(in, 0x1180, 8);
	self_at = in->n;
	put(in, A_SELF, 1);
	put(in, self_at, 4);
	put(in, 0x1200, 8);
	put(in, 0x10, 4);
	put(in, 0, 1);
	a_len = in->n - 4;
	patch(in, 0, a_len, 4);

	/* Unit B: DWARF 5, 32-bit. */
	b_off = in->n;
	put(in, 0, 4);
	put(in, 5, 2);
	put(in, 0x01, 1);
	put(in, 8, 1);
	put(in, b_abbrev, 4);
	put(in, B_CU, 1);
	put(in, 0, 1);	/* name: strx1 0 ("b.c" is not kept: index 0 is far_fn) */
	put(in, 8, 4);	/* str_offsets_base: past the table's header */
	put(in, 8, 4);	/* addr_base */
	put(in, 12, 4); /* rnglists_base */
	put(in, 0, 1);	/* low_pc: addrx1 0 */
	b_far = in->n - b_off;
	put(in, B_ABS, 1);
	put(in, 0, 1);
	put(in, 0x1122334455667788ull, 8);
	put(in, 0x99aabbccddeeff00ull, 8);
	put(in, B_SUB, 1);
	put(in, 1, 1);
	put(in, 0, 1);
	put(in, 0x100, 4);
	put(in, 0, 4); /* linkage_name: line_strp 0 */
	put(in, B_INL, 1);
	put(in, b_far, 4);
	put(in, 0, 1); /* rnglistx 0 */
	put(in, 0, 1);
	put(in, 0, 1);
	b_len = in->n - b_off - 4;
	patch(in, b_off, b_len, 4);
	patch(in, far_ref_at, b_off + b_far, 4);

	/* B's tables: a header-sized gap, then the entries. */
	put(&S->str_off, 0, 8);
	put(&S->str_off, str_far, 4);
	put(&S->str_off, str_main, 4);
	put(&S->addr, 0, 8);
	put(&S->addr, 0x2000, 8);
	put(&S->rnglists, 0, 12);
	put(&S->rnglists, 4, 4); /* list 0, relative to the base */
	put(&S->rnglists, 1, 1); /* DW_RLE_base_addressx 0 */
	put(&S->rnglists, 0, 1);
	put(&S->rnglists, 4, 1); /* DW_RLE_offset_pair 0x10 0x20 */
	put(&S->rnglists, 0x10, 1);
	put(&S->rnglists, 0x20, 1);
	put(&S->rnglists, 7, 1); /* DW_RLE_start_length 0x2080 8 */
	put(&S->rnglists, 0x2080, 8);
	put(&S->rnglists, 8, 1);
	put(&S->rnglists, 0, 1);

	/* .debug_aranges: A [0x1000, 0x1300), B [0x2000, 0x2100). */
	for (int u = 0; u < 2; u++) {
		size_t set = S->aranges.n;

		put(&S->aranges, 44, 4);
		put(&S->aranges, 2, 2);
		put(&S->aranges, u ? b_off : 0, 4);
		put(&S->aranges, 8, 1);
		put(&S->aranges, 0, 1);
		put(&S->aranges, 0, 4);
		put(&S->aranges, u ? 0x2000 : 0x1000, 8);
		put(&S->aranges, u ? 0x100 : 0x300, 8);
		put(&S->aranges, 0, 16);
		assert_int_equal(S->aranges.n - set, 48);
	}

	S->s[TK_DWR_INFO] = (struct tk_dwr_sect){S->info.b, S->info.n};
	S->s[TK_DWR_ABBREV] = (struct tk_dwr_sect){S->abbrev.b, S->abbrev.n};
	S->s[TK_DWR_STR] = (struct tk_dwr_sect){S->str.b, S->str.n};
	S->s[TK_DWR_LINE_STR] = (struct tk_dwr_sect){S->line_str.b, S->line_str.n};
	S->s[TK_DWR_STR_OFFSETS] = (struct tk_dwr_sect){S->str_off.b, S->str_off.n};
	S->s[TK_DWR_ADDR] = (struct tk_dwr_sect){S->addr.b, S->addr.n};
	S->s[TK_DWR_RANGES] = (struct tk_dwr_sect){S->ranges.b, S->ranges.n};
	S->s[TK_DWR_RNGLISTS] = (struct tk_dwr_sect){S->rnglists.b, S->rnglists.n};
	S->s[TK_DWR_ARANGES] = (struct tk_dwr_sect){S->aranges.b, S->aranges.n};
}

struct want {
	uint64_t pc;
	int n;
	const char *names[4];
};

static const struct want wants[] = {
	{0x0fff, -ENOENT, {0}},
	{0x1000, 1, {"outer"}},
	{0x1015, 2, {"inl_fn", "outer"}},
	{0x1025, 3, {"far_fn", "inl_fn", "outer"}},
	{0x102c, 2, {"inl_fn", "outer"}},
	{0x1060, 1, {"outer"}},
	{0x1110, 1, {"alias2"}},
	{0x1205, 1, {NULL}},
	{0x1250, 0, {0}},
	{0x1800, 0, {0}}, /* a gap: unit A's, as libdwfl has it */
	{0x2000, 1, {"_Z6b_mainv"}},
	{0x2015, 2, {"far_fn", "_Z6b_mainv"}},
	{0x2084, 2, {"far_fn", "_Z6b_mainv"}},
	{0x2050, 1, {"_Z6b_mainv"}},
	{0x2100, 0, {0}}, /* the very last range's end still counts (libdwfl) */
	{0x2101, -ENOENT, {0}},
};

static void check_all(struct tk_dwr *r)
{
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const char *names[8];
		int n = tk_dwr_inlines(r, wants[i].pc, names, 8);

		if (n != wants[i].n)
			fail_msg("pc %#lx: %d names, want %d (%s)", (unsigned long)wants[i].pc, n,
				 wants[i].n, tk_errmsg());
		for (int k = 0; k < n; k++) {
			if (!wants[i].names[k])
				assert_null(names[k]);
			else if (!names[k] || strcmp(names[k], wants[i].names[k]))
				fail_msg("pc %#lx: name %d %s, want %s", (unsigned long)wants[i].pc,
					 k, names[k] ? names[k] : "NULL", wants[i].names[k]);
		}
	}
}

static void test_names(void **state)
{
	struct sections *S = malloc(sizeof(*S));
	struct tk_dwr *r;

	(void)state;
	build(S);
	r = tk_dwr_new(S->s);
	assert_non_null(r);
	check_all(r);
	check_all(r); /* again, from the caches */
	tk_dwr_free(r);
	free(S);
}

static void test_max_names(void **state)
{
	struct sections *S = malloc(sizeof(*S));
	const char *names[2];
	struct tk_dwr *r;

	(void)state;
	build(S);
	r = tk_dwr_new(S->s);
	assert_non_null(r);
	assert_int_equal(tk_dwr_inlines(r, 0x1025, names, 2), 2);
	assert_string_equal(names[0], "far_fn");
	assert_string_equal(names[1], "inl_fn");
	tk_dwr_free(r);
	free(S);
}

/* Any answer the header allows; a message naming the section and offset for -EINVAL. */
static void allowed(int n)
{
	if (n == -EINVAL) {
		const char *m = tk_errmsg();

		if (!strstr(m, ".debug_") || !strstr(m, "offset 0x"))
			fail_msg("EINVAL without a section and offset: %s", m);
	} else if (n < 0 && n != -ENOENT && n != -EOPNOTSUPP) {
		fail_msg("unexpected %d (%s)", n, tk_errmsg());
	}
}

static void ask_all(const struct tk_dwr_sect *s)
{
	struct tk_dwr *r = tk_dwr_new(s);

	if (!r) {
		allowed(-errno);
		return;
	}
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const char *names[8];

		allowed(tk_dwr_inlines(r, wants[i].pc, names, 8));
	}
	tk_dwr_free(r);
}

/* Every section cut at every length, each copy its own allocation (ASan sees a read past). */
static void test_truncated(void **state)
{
	struct sections *S = malloc(sizeof(*S));

	(void)state;
	build(S);
	for (int k = 0; k < TK_DWR_NSECT; k++) {
		for (uint64_t len = 0; len < S->s[k].size; len++) {
			struct tk_dwr_sect s[TK_DWR_NSECT];
			uint8_t *cut = malloc(len ? len : 1);

			memcpy(s, S->s, sizeof(s));
			memcpy(cut, S->s[k].p, len);
			s[k].p = len ? cut : NULL;
			s[k].size = len;
			ask_all(s);
			free(cut);
		}
	}
	free(S);
}

/* Every byte of .debug_info and .debug_abbrev set to a few values in turn. */
static void test_corrupted(void **state)
{
	static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
	struct sections *S = malloc(sizeof(*S));

	(void)state;
	build(S);
	for (int k = TK_DWR_INFO; k <= TK_DWR_ABBREV; k++) {
		struct buf *b = k == TK_DWR_INFO ? &S->info : &S->abbrev;

		for (size_t i = 0; i < b->n; i++) {
			uint8_t keep = b->b[i];

			for (size_t v = 0; v < sizeof(vals); v++) {
				b->b[i] = vals[v];
				ask_all(S->s);
			}
			b->b[i] = keep;
		}
	}
	free(S);
}

static void test_bad_aranges(void **state)
{
	struct sections *S = malloc(sizeof(*S));

	(void)state;
	build(S);
	S->aranges.b[4] = 3; /* version 3 */
	assert_null(tk_dwr_new(S->s));
	assert_int_equal(errno, EOPNOTSUPP);
	S->aranges.b[4] = 2;
	S->aranges.b[0] = 40; /* the set ends before its (0, 0) pair */
	assert_null(tk_dwr_new(S->s));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(tk_errmsg(), ".debug_aranges: offset 0x0"));
	S->s[TK_DWR_ARANGES] = (struct tk_dwr_sect){NULL, 0};
	assert_null(tk_dwr_new(S->s));
	assert_int_equal(errno, ENOENT);
	free(S);
}

static void test_bad_sibling(void **state)
{
	struct sections *S = malloc(sizeof(*S));
	const char *names[8];
	struct tk_dwr *r;

	(void)state;
	build(S);
	/* The subprogram's DW_AT_sibling (right after its code) leads back to itself. */
	for (size_t i = 11; i + 9 < S->info.n; i++) {
		if (S->info.b[i] == A_SUB && S->info.b[i + 5] == 1 /* strp "outer" */) {
			patch(&S->info, i + 1, i, 4);
			break;
		}
	}
	r = tk_dwr_new(S->s);
	assert_non_null(r);
	assert_int_equal(tk_dwr_inlines(r, 0x1110, names, 8), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), ".debug_info: offset 0x"));
	tk_dwr_free(r);
	free(S);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),	    cmocka_unit_test(test_max_names),
		cmocka_unit_test(test_truncated),   cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_bad_aranges), cmocka_unit_test(test_bad_sibling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
