// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for dwarf-read: the inline names of addresses read from a
 * debug file's DWARF sections (the debug files of the binaries a profile
 * names, so untrusted).
 *
 * Input: nine u16 sizes (little-endian), one per section in the order of
 * enum tk_dwr_sect_id (.debug_info, abbrev, str, line_str, str_offsets,
 * addr, ranges, rnglists, aranges), each cut to what is left, then the
 * sections' bytes in that order; each is copied to its own allocation so
 * that ASan sees a read past any of them. The corpus holds the sections of
 * small gcc and clang executables (DWARF 2, 4, 5, 64-bit DWARF), made by
 * objcopy --dump-section. The addresses asked: every address-size word of
 * .debug_aranges past its first header (the ranges' starts and lengths),
 * each, one past it and one before it, twice (the second from the caches).
 *
 * Oracle: no crash, no hang, no sanitizer report; tk_dwr_new() and
 * tk_dwr_inlines() return what their header allows, an EINVAL failure
 * names a .debug_ section and an offset; every name given is a string
 * inside one of the sections; an address answered twice gets the same
 * names.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/common.h>

#include "dwarf-read.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NAMES 64
#define MAX_ASKS  64

static void check_msg(int err)
{
	const char *m = tk_errmsg();

	if (err == -EINVAL && (!strstr(m, ".debug_") || !strstr(m, "offset 0x")))
		abort();
}

static bool inside(const struct tk_dwr_sect *s, const char *name)
{
	for (int k = 0; k < TK_DWR_NSECT; k++)
		if (s[k].p && (const uint8_t *)name >= s[k].p &&
		    (const uint8_t *)name < s[k].p + s[k].size &&
		    memchr(name, 0, (size_t)(s[k].p + s[k].size - (const uint8_t *)name)))
			return true;
	return false;
}

static void ask(struct tk_dwr *r, const struct tk_dwr_sect *s, uint64_t pc)
{
	const char *a[MAX_NAMES], *b[MAX_NAMES];
	int n = tk_dwr_inlines(r, pc, a, MAX_NAMES), m;

	if (n < 0) {
		if (n != -ENOENT && n != -EINVAL && n != -EOPNOTSUPP && n != -ENOMEM)
			abort();
		check_msg(n);
		return;
	}
	if (n > MAX_NAMES)
		abort();
	for (int i = 0; i < n; i++) {
		if (a[i] && !inside(s, a[i]))
			abort();
		sink += a[i] ? strlen(a[i]) : 0;
	}
	m = tk_dwr_inlines(r, pc, b, MAX_NAMES);
	if (m != n)
		abort();
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_dwr_sect s[TK_DWR_NSECT] = {{0}};
	uint8_t *copy[TK_DWR_NSECT] = {0};
	size_t pos = 2 * TK_DWR_NSECT;
	struct tk_dwr *r;

	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	if (size < pos)
		return 0;
	for (int k = 0; k < TK_DWR_NSECT; k++) {
		size_t n = (size_t)data[2 * k] | (size_t)data[2 * k + 1] << 8;

		if (n > size - pos)
			n = size - pos;
		if (!n)
			continue;
		copy[k] = malloc(n);
		if (!copy[k])
			goto out;
		memcpy(copy[k], data + pos, n);
		s[k].p = copy[k];
		s[k].size = n;
		pos += n;
	}
	r = tk_dwr_new(s);
	if (!r) {
		if (errno != ENOENT && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOMEM)
			abort();
		check_msg(-errno);
		goto out;
	}
	if (s[TK_DWR_ARANGES].size > 16) {
		const uint8_t *p = s[TK_DWR_ARANGES].p;
		int asks = 0;

		for (uint64_t at = 16; at + 8 <= s[TK_DWR_ARANGES].size && asks < MAX_ASKS;
		     at += 8, asks++) {
			uint64_t pc = 0;

			memcpy(&pc, p + at, 8);
			ask(r, s, pc);
			ask(r, s, pc + 1);
			ask(r, s, pc - 1);
			ask(r, s, pc & 0xffffffffu);
		}
	}
	tk_dwr_free(r);
out:
	for (int k = 0; k < TK_DWR_NSECT; k++)
		free(copy[k]);
	return 0;
}
