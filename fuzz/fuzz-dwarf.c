// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for dwarf-walk: the top-level DIEs of a compile unit read
 * from .debug_info and .debug_abbrev bytes (the debug files of the
 * binaries a profile names, so untrusted).
 *
 * Input: byte 0, the unit's offset in .debug_info; bytes 1-2, the size of
 * .debug_abbrev (little-endian, cut to what is left); then .debug_abbrev,
 * then .debug_info, each copied to its own allocation so that ASan sees
 * a read past either. The unit is walked, then again with a callback that
 * stops at the second child.
 *
 * Oracle: no crash, no sanitizer report; the walk returns 0, -EINVAL
 * with a message naming a section and an offset, or the callback's
 * value; each child handed out lies inside .debug_info past the unit's
 * start, in increasing order.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/common.h>

#include "dwarf-walk.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	uint64_t unit_off, info_size, last;
	int n, stop_at;
};

static int child(void *ctx, const struct tk_dwarf_top *top)
{
	struct seen *s = ctx;

	if (top->off < s->unit_off || top->off >= s->info_size || (s->n && top->off <= s->last))
		abort();
	s->last = top->off;
	sink += top->tag + top->ranges + top->lo + top->hi;
	return ++s->n == s->stop_at ? 5 : 0;
}

static void walk(const uint8_t *info, size_t info_size, uint64_t unit_off, const uint8_t *ab,
		 size_t ab_size, int stop_at)
{
	struct seen s = {.unit_off = unit_off, .info_size = info_size, .stop_at = stop_at};
	int r = tk_dwarf_top_walk(info, info_size, unit_off, ab, ab_size, child, &s);

	if (r == -EINVAL) {
		const char *m = tk_errmsg();

		if (!strstr(m, ".debug_") || !strstr(m, "offset 0x"))
			abort();
	} else if (r != 0 && r != -ENOMEM && !(r == 5 && s.n == stop_at)) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ab_size, info_size;
	uint8_t *ab, *info;
	uint64_t unit_off;

	if (size < 3)
		return 0;
	unit_off = data[0];
	ab_size = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	if (ab_size > size)
		ab_size = size;
	info_size = size - ab_size;
	ab = malloc(ab_size ? ab_size : 1);
	info = malloc(info_size ? info_size : 1);
	if (ab && info) {
		memcpy(ab, data, ab_size);
		memcpy(info, data + ab_size, info_size);
		walk(info, info_size, unit_off, ab, ab_size, 0);
		walk(info, info_size, unit_off, ab, ab_size, 2);
	}
	free(ab);
	free(info);
	return 0;
}
