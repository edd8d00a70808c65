// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dwarf-walk: the children of a compile unit's DIE from hand-made
 * .debug_info and .debug_abbrev bytes. Units of DWARF 5 (32-bit), DWARF 4
 * (64-bit) and DWARF 3, with a subprogram skipped by its DW_AT_sibling, a
 * lexical block skipped DIE by DIE, fixed, string, block and LEB128
 * values: every child handed out with its offset, tag and whether it has
 * an address range, and the subprogram's low_pc/high_pc pair read. Bad
 * bytes (each truncation of the unit or of the table, a sibling that
 * leads backward or out of the unit, an unknown form, codes the table
 * lacks or defines twice, headers this walk does not read) fail with
 * EINVAL and a message naming the section and offset, and nothing reads
 * outside the buffers (the ASan build checks).
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

#include "dwarf-walk.h"

/* Abbreviation codes of the table below. */
enum { A_CU = 1, A_SUB, A_BASE, A_VAR, A_PARM, A_BLOCK, A_IMPORT };

/*
 * code, tag, children, then (attribute, form) pairs, (0, 0); then 0.
 * compile_unit: name string, language data1; subprogram: sibling ref4,
 * low_pc addr, high_pc data4; base_type: name strp, byte_size data1;
 * variable: location exprloc, decl_file udata; formal_parameter: name
 * string, artificial flag_present; lexical_block: ranges sec_offset (no
 * sibling); imported_unit: import ref_addr.
 */
/* clang-format off */
static const uint8_t abbrev[] = {
	A_CU,	 0x11, 1, 0x03, 0x08, 0x13, 0x0b, 0, 0,
	A_SUB,	 0x2e, 1, 0x01, 0x13, 0x11, 0x01, 0x12, 0x06, 0, 0,
	A_BASE,	 0x24, 0, 0x03, 0x0e, 0x0b, 0x0b, 0, 0,
	A_VAR,	 0x34, 0, 0x02, 0x18, 0x3a, 0x0f, 0, 0,
	A_PARM,	 0x05, 0, 0x03, 0x08, 0x34, 0x19, 0, 0,
	A_BLOCK, 0x0b, 1, 0x55, 0x17, 0, 0,
	A_IMPORT, 0x3d, 0, 0x18, 0x10, 0, 0,
	0,
};
/* clang-format on */

struct unit {
	uint8_t b[256];
	size_t n;
	int off_size, version;
	size_t len_at; /* where unit_length's value is */
};

static void put(struct unit *u, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		u->b[u->n++] = (uint8_t)(v >> (8 * i));
}

struct expect {
	uint64_t off;
	uint32_t tag;
	bool ranges;
};

/* The unit of the test, with the children it should give in @e (5 of them). */
static void build(struct unit *u, int version, int off_size, struct expect *e)
{
	size_t sib_at;

	memset(u, 0, sizeof(*u));
	u->version = version;
	u->off_size = off_size;
	if (off_size == 8)
		put(u, 0xffffffffu, 4);
	u->len_at = u->n;
	put(u, 0, off_size);
	put(u, (uint64_t)version, 2);
	if (version == 5) {
		put(u, 0x01, 1); /* DW_UT_compile */
		put(u, 8, 1);
		put(u, 0, off_size);
	} else {
		put(u, 0, off_size);
		put(u, 8, 1);
	}
	put(u, A_CU, 1);
	memcpy(u->b + u->n, "a.c", 4);
	u->n += 4;
	put(u, 0x1d, 1);

	e[0] = (struct expect){u->n, 0x2e, true};
	put(u, A_SUB, 1);
	sib_at = u->n;
	put(u, 0, 4);
	put(u, 0x401000, 8);
	put(u, 0x40, 4);
	put(u, A_PARM, 1);
	memcpy(u->b + u->n, "x", 2);
	u->n += 2;
	put(u, 0, 1);
	u->b[sib_at] = (uint8_t)u->n; /* unit-relative: the unit starts at 0 */

	e[1] = (struct expect){u->n, 0x24, false};
	put(u, A_BASE, 1);
	put(u, 0x1234, off_size);
	put(u, 4, 1);

	e[2] = (struct expect){u->n, 0x0b, true};
	put(u, A_BLOCK, 1);
	put(u, 0x10, off_size);
	put(u, A_PARM, 1);
	memcpy(u->b + u->n, "y", 2);
	u->n += 2;
	put(u, A_VAR, 1); /* a grandchild with a block and a LEB128 */
	put(u, 2, 1);
	put(u, 0x91, 1);
	put(u, 0x70, 1);
	put(u, 0x81, 1);
	put(u, 0x01, 1);
	put(u, 0, 1);

	e[3] = (struct expect){u->n, 0x34, false};
	put(u, A_VAR, 1);
	put(u, 1, 1);
	put(u, 0x9c, 1);
	put(u, 3, 1);

	e[4] = (struct expect){u->n, 0x3d, false};
	put(u, A_IMPORT, 1);
	put(u, 0x200, off_size);
	put(u, 0, 1); /* the unit DIE's children end */
	/* unit_length: the bytes after it */
	for (int i = 0; i < off_size; i++)
		u->b[u->len_at + i] = (uint8_t)((u->n - u->len_at - off_size) >> (8 * i));
}

struct got {
	struct tk_dwarf_top t[16];
	int n, stop_at, stop_with;
};

static int collect(void *ctx, const struct tk_dwarf_top *top)
{
	struct got *g = ctx;

	if (g->n < 16)
		g->t[g->n] = *top;
	g->n++;
	return g->n == g->stop_at ? g->stop_with : 0;
}

static void check_unit(int version, int off_size)
{
	struct unit u;
	struct expect e[5];
	struct got g = {0};

	build(&u, version, off_size, e);
	assert_int_equal(tk_dwarf_top_walk(u.b, u.n, 0, abbrev, sizeof(abbrev), collect, &g), 0);
	assert_int_equal(g.n, 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(g.t[i].off, e[i].off);
		assert_int_equal(g.t[i].tag, e[i].tag);
		assert_int_equal(g.t[i].ranges, e[i].ranges);
		/* Only the subprogram's pc pair is read here, not the block's ranges. */
		assert_int_equal(g.t[i].pc, i == 0);
	}
	assert_int_equal(g.t[0].lo, 0x401000);
	assert_int_equal(g.t[0].hi, 0x401040);
}

static void test_v5_32bit(void **state)
{
	(void)state;
	check_unit(5, 4);
}

static void test_v4_64bit(void **state)
{
	(void)state;
	check_unit(4, 8);
	check_unit(3, 4);
}

/* A second unit after the first is found by its offset. */
static void test_second_unit(void **state)
{
	struct unit u;
	struct expect e[5];
	struct got g = {0};
	uint8_t two[512];

	(void)state;
	build(&u, 5, 4, e);
	memcpy(two, u.b, u.n);
	/* Unit-relative references stay right: the second copy is its own unit. */
	memcpy(two + u.n, u.b, u.n);
	assert_int_equal(tk_dwarf_top_walk(two, 2 * u.n, u.n, abbrev, sizeof(abbrev), collect, &g),
			 0);
	assert_int_equal(g.n, 5);
	assert_int_equal(g.t[0].off, u.n + e[0].off);
}

static void test_callback_stops(void **state)
{
	struct unit u;
	struct expect e[5];
	struct got g = {.stop_at = 2, .stop_with = 7};

	(void)state;
	build(&u, 5, 4, e);
	assert_int_equal(tk_dwarf_top_walk(u.b, u.n, 0, abbrev, sizeof(abbrev), collect, &g), 7);
	assert_int_equal(g.n, 2);
}

static void expect_einval(const uint8_t *info, size_t n, uint64_t unit_off, const uint8_t *ab,
			  size_t abn, const char *section)
{
	struct got g = {0};

	assert_int_equal(tk_dwarf_top_walk(info, n, unit_off, ab, abn, collect, &g), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), section));
	assert_non_null(strstr(tk_errmsg(), "offset 0x"));
}

/* Every shorter unit (its length set to match) fails; the bytes are copied to their own
 * buffer so that ASan sees any read past them. */
static void test_truncated(void **state)
{
	struct unit u;
	struct expect e[5];

	(void)state;
	for (int v = 4; v <= 5; v++) {
		build(&u, v, v == 5 ? 4 : 8, e);
		for (size_t n = 0; n < u.n; n++) {
			uint8_t *b = malloc(n ? n : 1);

			memcpy(b, u.b, n);
			if (n >= u.len_at + u.off_size)
				for (int i = 0; i < u.off_size; i++)
					b[u.len_at + i] =
						(uint8_t)((n - u.len_at - u.off_size) >> (8 * i));
			expect_einval(b, n, 0, abbrev, sizeof(abbrev), ".debug_info");
			free(b);
		}
		/* The unit as it is, in a section that ends early. */
		expect_einval(u.b, u.n - 1, 0, abbrev, sizeof(abbrev), ".debug_info");
		expect_einval(u.b, u.n, u.n, abbrev, sizeof(abbrev), ".debug_info");
	}
}

/* An abbreviation table cut anywhere fails, naming .debug_abbrev or .debug_info. */
static void test_truncated_abbrev(void **state)
{
	struct unit u;
	struct expect e[5];
	struct got g = {0};

	(void)state;
	build(&u, 5, 4, e);
	for (size_t n = 0; n < sizeof(abbrev) - 1; n++) {
		uint8_t *ab = malloc(n ? n : 1);

		memcpy(ab, abbrev, n);
		assert_int_equal(tk_dwarf_top_walk(u.b, u.n, 0, ab, n, collect, &g), -EINVAL);
		assert_non_null(strstr(tk_errmsg(), ".debug_"));
		free(ab);
	}
}

static void test_bad_sibling(void **state)
{
	struct unit u;
	struct expect e[5];
	size_t sib_at;

	(void)state;
	build(&u, 5, 4, e);
	sib_at = e[0].off + 1;
	u.b[sib_at] = 2; /* backward */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
	u.b[sib_at] = 0xf0; /* past the unit */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
}

static void test_bad_header_and_codes(void **state)
{
	struct unit u;
	struct expect e[5];
	uint8_t ab[sizeof(abbrev)];

	(void)state;
	build(&u, 5, 4, e);
	u.b[4] = 6; /* version 6 */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
	build(&u, 5, 4, e);
	u.b[6] = 0x02; /* a type unit */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
	build(&u, 5, 4, e);
	u.b[7] = 3; /* address size */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
	build(&u, 5, 4, e);
	u.b[8] = 0x40; /* abbreviation table past the section */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_abbrev");
	build(&u, 5, 4, e);
	u.b[0] = 0xf5, u.b[1] = u.b[2] = u.b[3] = 0xff; /* a reserved length */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
	build(&u, 5, 4, e);
	u.b[e[1].off] = 9; /* a code the table lacks */
	expect_einval(u.b, u.n, 0, abbrev, sizeof(abbrev), ".debug_info");
	/* An unknown form in the table. */
	memcpy(ab, abbrev, sizeof(ab));
	build(&u, 5, 4, e);
	ab[4] = 0x7f;
	expect_einval(u.b, u.n, 0, ab, sizeof(ab), ".debug_abbrev");
	/* A code defined twice. */
	memcpy(ab, abbrev, sizeof(ab));
	ab[9] = A_CU;
	expect_einval(u.b, u.n, 0, ab, sizeof(ab), ".debug_abbrev");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v5_32bit),    cmocka_unit_test(test_v4_64bit),
		cmocka_unit_test(test_second_unit), cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_truncated),   cmocka_unit_test(test_truncated_abbrev),
		cmocka_unit_test(test_bad_sibling), cmocka_unit_test(test_bad_header_and_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
