// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perf-mem: a memory sample's data source as perf script (Debian's perf
 * 6.1.187) prints it, for files from `perf mem record`, numatop and other
 * PMU memory profilers.
 *
 * PERF_SAMPLE_DATA_SRC is the kernel's union perf_mem_data_src: op (bits
 * 0-4), lvl (5-18), snoop (19-23), lock (24-25), dtlb (26-32), lvl_num
 * (33-36), remote (37), snoopx (38-39), blk (40-42), hops (43-45). perf
 * prints six parts, each a list of the names of its set bits joined by
 * " or ", and some quirks this keeps because users diff the text:
 *   - LVL: "Remote " when remote is set; then the hop distance when hops is
 *     set, else the names of the lvl bits; then, when lvl_num is set, its
 *     name (or "L<n>"), after " or " only if lvl bits were named; "N/A"
 *     when nothing was; then " hit" and/or " miss" from lvl's HIT and MISS
 *     bits. Hop values 5-7 have no name: perf reads past its table and
 *     prints "(null)" (glibc's text for a NULL %s), and so does this.
 *   - OP and LCK are one name each (the lowest set bit wins, in perf's
 *     order N/A, then the rest; no bit: "No").
 *   - BLK names start with a space, so the text reads "|BLK  N/A".
 * The caller prints "%16lx %s" of value and text cut to 99 characters, as
 * perf's 100-byte buffer cuts it; the cut lands inside this text only for
 * data sources no processor writes.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "perf-mem.h"

struct text {
	char *p;
	size_t len, cap;
};

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (t->len + 1 >= t->cap)
		return;
	if (n > t->cap - 1 - t->len)
		n = t->cap - 1 - t->len;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

/* The names of @bits' set bits (bit i: names[i]) joined by " or "; how many. */
static int put_bits(struct text *t, uint64_t bits, const char *const *names, size_t n, int printed)
{
	for (size_t i = 0; bits && i < n; i++, bits >>= 1) {
		if (!(bits & 1))
			continue;
		if (printed++)
			put(t, " or ");
		put(t, names[i]);
	}
	return printed;
}

static const char *const lvl_names[] = {
	"N/A",
	"HIT",
	"MISS",
	"L1",
	"LFB/MAB",
	"L2",
	"L3",
	"Local RAM",
	"Remote RAM (1 hop)",
	"Remote RAM (2 hops)",
	"Remote Cache (1 hop)",
	"Remote Cache (2 hops)",
	"I/O",
	"Uncached",
};

/* lvl_num values with a name; the others print as "L<n>". */
static const char *const lvlnum_names[16] = {
	[0x9] = "CXL", [0xa] = "I/O",  [0xb] = "Any cache", [0xc] = "LFB/MAB",
	[0xd] = "RAM", [0xe] = "PMEM", [0xf] = "N/A",
};

static const char *const hop_names[8] = {
	"N/A",	  "core, same node", "node, same socket", "socket, same board", "board", "(null)",
	"(null)", "(null)",
};

static const char *const snoop_names[] = {"N/A", "None", "Hit", "Miss", "HitM"};
static const char *const snoopx_names[] = {"Fwd", "Peer"};
static const char *const tlb_names[] = {"N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"};

#define HIT_BIT	 0x2
#define MISS_BIT 0x4

static void put_op(struct text *t, uint64_t op)
{
	static const char *const names[] = {"N/A", "LOAD", "STORE", "PFETCH", "EXEC"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (op & (1u << i)) {
			put(t, names[i]);
			return;
		}
	}
	put(t, "No");
}

static void put_lvl(struct text *t, uint64_t lvl, unsigned int lvl_num, bool remote,
		    unsigned int hops)
{
	size_t start = t->len;
	int printed = 0;

	if (remote)
		put(t, "Remote ");
	if (hops) {
		put(t, hop_names[hops & 7]);
		put(t, " ");
	} else {
		printed = put_bits(t, lvl & ~(uint64_t)(HIT_BIT | MISS_BIT), lvl_names,
				   sizeof(lvl_names) / sizeof(lvl_names[0]), 0);
	}
	if (lvl_num) {
		char name[8];

		if (printed++)
			put(t, " or ");
		if (lvlnum_names[lvl_num & 15]) {
			put(t, lvlnum_names[lvl_num & 15]);
		} else {
			snprintf(name, sizeof(name), "L%u", lvl_num);
			put(t, name);
		}
	}
	if (t->len == start)
		put(t, "N/A");
	if (lvl & HIT_BIT)
		put(t, " hit");
	if (lvl & MISS_BIT)
		put(t, " miss");
}

size_t tk_perf_mem_describe(uint64_t data_src, char *out, size_t cap)
{
	struct text t = {out, 0, cap};
	uint64_t op = data_src & 0x1f, lvl = data_src >> 5 & 0x3fff;
	uint64_t snoop = data_src >> 19 & 0x1f, lock = data_src >> 24 & 0x3;
	uint64_t dtlb = data_src >> 26 & 0x7f, blk = data_src >> 40 & 0x7;
	unsigned int lvl_num = data_src >> 33 & 0xf, hops = data_src >> 43 & 0x7;
	bool remote = data_src >> 37 & 1;
	uint64_t snoopx = data_src >> 38 & 0x3;
	int printed;

	if (!cap)
		return 0;
	out[0] = '\0';
	put(&t, "|OP ");
	put_op(&t, op);
	put(&t, "|LVL ");
	put_lvl(&t, lvl, lvl_num, remote, hops);
	put(&t, "|SNP ");
	printed = put_bits(&t, snoop, snoop_names, 5, 0);
	printed = put_bits(&t, snoopx, snoopx_names, 2, printed);
	if (!printed)
		put(&t, "N/A");
	put(&t, "|TLB ");
	if (!put_bits(&t, dtlb & ~(uint64_t)(HIT_BIT | MISS_BIT), tlb_names, 7, 0))
		put(&t, "N/A");
	if (dtlb & HIT_BIT)
		put(&t, " hit");
	if (dtlb & MISS_BIT)
		put(&t, " miss");
	put(&t, "|LCK ");
	put(&t, lock & 1 ? "N/A" : lock & 2 ? "Yes" : "No");
	put(&t, "|BLK ");
	if (!blk || (blk & 1)) {
		put(&t, " N/A");
	} else {
		if (blk & 2)
			put(&t, " Data");
		if (blk & 4)
			put(&t, " Addr");
	}
	return t.len;
}

void tk_perf_page_size_name(uint64_t size, char out[16])
{
	static const char units[] = "BKMG";
	unsigned int i = 0;

	if (!size) {
		strcpy(out, "N/A");
		return;
	}
	/* perf divides while the quotient is above 1: 1024 stays "1024B". */
	while (size / 1024 > 1 && i < 3) {
		size /= 1024;
		i++;
	}
	snprintf(out, 16, "%llu%c", (unsigned long long)size, units[i]);
}
