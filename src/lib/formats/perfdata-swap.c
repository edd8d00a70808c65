// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-swap: a file-mode perf.data of the other byte order (a big-endian
 * s390x or ppc64 recording read on x86, or the reverse) turned into a copy
 * in this machine's order, which the reader then opens as if it had been
 * recorded here. Every reader of perf.data (report, dump, convert, the
 * analyses, the exports) gets native records this way without knowing.
 *
 * What is swapped (the byte layouts are those of shared/specs/perfdata.md;
 * perf's own reader does the same in header.c, session.c and evsel.c):
 *   - the header's u64s (the magic then reads "PERFILE2") and the feature
 *     bitmap as 4 x u64;
 *   - each attr field by its width; the flag bitfield at +40 keeps its
 *     bytes in place with the bits of each byte reversed, because a
 *     big-endian compiler allocates bitfields from the most significant
 *     bit; the attr's id section and id array;
 *   - each record by its type: u32 pairs (pid/tid, cpu/res) stay two u32s,
 *     strings and byte arrays stay; a SAMPLE's fields as its attr's
 *     sample_type selects them (the attr is found by the id, as the reader
 *     finds it); the sample_id_all trailer of the other kernel records;
 *   - each feature section by its layout.
 * What is not: TRACING_DATA and the RAW payloads of tracepoint samples. The
 * blob says which order its numbers and the payloads are in, and the event
 * decoder reads them in that order (as libtraceevent does for perf). BPF
 * program info and BTF are not swappable (perf refuses them too): a file
 * with programs in them reads as if it had none, with a warning.
 * Pipe mode saved to a file (perf record -o - > FILE) is swapped the same
 * way, its metadata records too: HEADER_ATTR (attr, then its ids),
 * HEADER_FEATURE (u64 id, then the payload as in a file's feature
 * section), HEADER_BUILD_ID, and HEADER_TRACING_DATA's u32 size (its blob,
 * after the record, stays as it is). A stream that cannot be read twice
 * (a real pipe) is refused by the reader before this is called.
 * Refused with a one-line error (never decoded wrong): samples with
 * BRANCH_STACK or AUX, COMPRESSED records and CPU maps as bitmasks; these need layouts no
 * file of the test corpus holds (tests/data/perf/make-bigendian.py makes the
 * corpus's big-endian files and refuses the same things).
 * Damage: at a record whose size does not fit, swapping goes on from the
 * next 8-aligned offset where three plausible headers follow one another
 * (the reader's own resync test); the bytes skipped stay in the file's
 * order, where the reader's salvage lists them as damage and resyncs to the
 * swapped records after them, so the policy of issue 21 applies to the
 * other order as to ours. Every field is swapped only inside the record or
 * section that holds it.
 *
 * Cost: the whole file is copied once into an anonymous memory file
 * (memfd) and swapped there in one pass before the reader starts: memory of
 * the file's size and about 1 ns per byte on top of reading, paid only by
 * files of the other order. The reader's own path (mmap, in-place records)
 * is then the same as for a native file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bytes.h"
#include "error.h"
#include "fsutil.h"
#include "perfdata-internal.h"

struct swap_id {
	uint64_t id;
	size_t attr;
};

struct swap_attr {
	uint32_t type;
	uint64_t sample_type, read_format, regs_user, regs_intr;
	bool sample_id_all;
};

struct swapper {
	uint8_t *p;
	uint64_t size;
	uint64_t lim; /* fields are swapped only below this offset */
	bool big;     /* the file's order */
	bool bad;     /* a field did not fit below lim */
	const char *name;
	struct swap_attr *attrs;
	size_t nr_attrs;
	struct swap_id *ids;
	size_t nr_ids;
	uint32_t nr_cpus; /* NRCPUS' avail count, for CPU_TOPOLOGY */
};

/* A u64 already swapped to host order. */
static uint64_t host_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static bool fits(const struct swapper *s, uint64_t off, uint64_t n)
{
	return off <= s->lim && n <= s->lim - off;
}

/* A value of @n bytes at @off in the file's order, 0 (and bad) if outside. */
static uint64_t get(struct swapper *s, uint64_t off, unsigned n)
{
	if (!fits(s, off, n)) {
		s->bad = true;
		return 0;
	}
	switch (n) {
	case 1:
		return s->p[off];
	case 2:
		return tk_load_u16(s->p + off, s->big);
	case 4:
		return tk_load_u32(s->p + off, s->big);
	default:
		return tk_load_u64(s->p + off, s->big);
	}
}

static void rev(struct swapper *s, uint64_t off, unsigned n)
{
	if (!fits(s, off, n)) {
		s->bad = true;
		return;
	}
	for (unsigned i = 0; i < n / 2; i++) {
		uint8_t t = s->p[off + i];

		s->p[off + i] = s->p[off + n - 1 - i];
		s->p[off + n - 1 - i] = t;
	}
}

/* Swap @count fields of @n bytes from @off; returns the offset after them. */
static uint64_t rev_many(struct swapper *s, uint64_t off, unsigned n, uint64_t count)
{
	if (count > s->lim / n || !fits(s, off, count * n)) {
		s->bad = true;
		return s->lim;
	}
	for (uint64_t i = 0; i < count; i++)
		rev(s, off + i * n, n);
	return off + count * n;
}

/* ---------------------------------------------------------------- attrs */

static uint64_t swap_attr(struct swapper *s, uint64_t off, struct swap_attr *a)
{
	/* perf_event_attr fields after the first 40 bytes, by offset and width. */
	static const uint8_t fields[][2] = {
		{0, 4},	  {4, 4},   {8, 8},   {16, 8},	{24, 8},  {32, 8},  {48, 4},  {52, 4},
		{56, 8},  {64, 8},  {72, 8},  {80, 8},	{88, 4},  {92, 4},  {96, 8},  {104, 4},
		{108, 2}, {110, 2}, {112, 4}, {116, 4}, {120, 8}, {128, 8}, {136, 8}, {144, 8},
	};
	uint64_t size = get(s, off + 4, 4);

	if (size == 0)
		size = 64;
	if (a) {
		memset(a, 0, sizeof(*a));
		a->type = (uint32_t)get(s, off, 4);
		a->sample_type = get(s, off + 24, 8);
		a->read_format = get(s, off + 32, 8);
		a->sample_id_all =
			fits(s, off + 40, 8) && (s->p[off + 42] & (s->big ? 0x20 : 0x04));
		if (size >= 88)
			a->regs_user = get(s, off + 80, 8);
		if (size >= 104)
			a->regs_intr = get(s, off + 96, 8);
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i][0] + fields[i][1] <= size)
			rev(s, off + fields[i][0], fields[i][1]);
	for (unsigned i = 0; i < 8 && fits(s, off + 40, 8); i++) {
		uint8_t b = s->p[off + 40 + i], r = 0;

		for (unsigned k = 0; k < 8; k++)
			r |= (uint8_t)(((b >> k) & 1) << (7 - k));
		s->p[off + 40 + i] = r;
	}
	return size;
}

static int cmp_id(const void *a, const void *b)
{
	const struct swap_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Take the attr at @a (swapped already into *@at) with @n ids at @ioff (swapped). */
static int add_attr(struct swapper *s, const struct swap_attr *at, uint64_t ioff, uint64_t n)
{
	struct swap_attr *na = realloc(s->attrs, (s->nr_attrs + 1) * sizeof(*na));
	struct swap_id *ni;

	if (!na)
		return tk_fail(ENOMEM, "out of memory");
	s->attrs = na;
	na[s->nr_attrs] = *at;
	ni = realloc(s->ids, (s->nr_ids + n + 1) * sizeof(*ni));
	if (!ni)
		return tk_fail(ENOMEM, "out of memory");
	s->ids = ni;
	for (uint64_t k = 0; k < n; k++) {
		s->ids[s->nr_ids].id = host_u64(s->p + ioff + 8 * k);
		s->ids[s->nr_ids++].attr = s->nr_attrs;
	}
	s->nr_attrs++;
	if (s->nr_ids)
		qsort(s->ids, s->nr_ids, sizeof(*s->ids), cmp_id);
	return 0;
}

static int swap_attrs(struct swapper *s, uint64_t attr_size, uint64_t aoff, uint64_t asize)
{
	size_t n = attr_size ? (size_t)(asize / attr_size) : 0;

	s->lim = s->size;
	if (attr_size < 16 || !fits(s, aoff, asize))
		return 0; /* the reader says what is wrong with them */
	for (size_t i = 0; i < n; i++) {
		uint64_t a = aoff + i * attr_size, size, ioff = 0, isz = 0;
		struct swap_attr at;
		int r;

		s->lim = a + attr_size;
		size = swap_attr(s, a, &at);
		if (fits(s, a + size, 16)) {
			rev_many(s, a + size, 8, 2);
			ioff = host_u64(s->p + a + size);
			isz = host_u64(s->p + a + size + 8);
		}
		s->lim = s->size;
		if (!fits(s, ioff, isz))
			ioff = isz = 0;
		rev_many(s, ioff, 8, isz / 8);
		r = add_attr(s, &at, ioff, isz / 8);
		if (r < 0)
			return r;
	}
	s->bad = false;
	return 0;
}

static const struct swap_attr *attr_by_id(const struct swapper *s, uint64_t id)
{
	struct swap_id key = {.id = id};
	const struct swap_id *hit =
		s->nr_ids ? bsearch(&key, s->ids, s->nr_ids, sizeof(key), cmp_id) : NULL;

	return hit ? &s->attrs[hit->attr] : NULL;
}

/* --------------------------------------------------------------- records */

static uint64_t rev_pairs_or_u64(struct swapper *s, uint64_t p, uint64_t bit)
{
	if (bit == TK_PERF_SAMPLE_TID || bit == TK_PERF_SAMPLE_CPU)
		rev_many(s, p, 4, 2);
	else
		rev(s, p, 8);
	return p + 8;
}

static uint64_t read_block_words(struct swapper *s, uint64_t p, uint64_t rf)
{
	unsigned per = 1 + !!(rf & TK_PERF_READ_ID) + !!(rf & TK_PERF_READ_LOST);
	unsigned head =
		!!(rf & TK_PERF_READ_TOTAL_TIME_ENABLED) + !!(rf & TK_PERF_READ_TOTAL_TIME_RUNNING);
	uint64_t nr;

	if (!(rf & TK_PERF_READ_GROUP))
		return per + head;
	nr = get(s, p, 8);
	if (nr > s->lim / 8)
		return s->lim;
	return 1 + head + nr * per;
}

static int swap_sample(struct swapper *s, uint64_t rec, uint64_t end)
{
	static const uint64_t first[] = {
		TK_PERF_SAMPLE_IDENTIFIER, TK_PERF_SAMPLE_IP,	TK_PERF_SAMPLE_TID,
		TK_PERF_SAMPLE_TIME,	   TK_PERF_SAMPLE_ADDR, TK_PERF_SAMPLE_ID,
		TK_PERF_SAMPLE_STREAM_ID,  TK_PERF_SAMPLE_CPU,	TK_PERF_SAMPLE_PERIOD,
	};
	static const uint64_t last[] = {
		TK_PERF_SAMPLE_PHYS_ADDR,
		TK_PERF_SAMPLE_CGROUP,
		TK_PERF_SAMPLE_DATA_PAGE_SIZE,
		TK_PERF_SAMPLE_CODE_PAGE_SIZE,
	};
	const struct swap_attr *a = s->attrs;
	uint64_t p = rec + 8, st;
	size_t idoff;

	if (!a)
		return 0; /* no attr yet (a pipe): the reader reports the record */
	if (s->nr_attrs > 1) {
		if (!tk_perf_id_offset(TK_PERF_RECORD_SAMPLE, a->sample_type, end - rec, &idoff))
			return 0;
		a = attr_by_id(s, get(s, rec + idoff, 8));
		/* An unknown id: the reader reports the sample; its fields stay. */
		if (!a)
			return 0;
	}
	st = a->sample_type;
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
		if (st & first[i])
			p = rev_pairs_or_u64(s, p, first[i]);
	if (st & TK_PERF_SAMPLE_READ)
		p = rev_many(s, p, 8, read_block_words(s, p, a->read_format));
	if (st & TK_PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr = get(s, p, 8);

		p = rev_many(s, p, 8, nr + 1 > nr ? nr + 1 : 0);
	}
	if (st & TK_PERF_SAMPLE_RAW) {
		/* The payload stays: TRACING_DATA says its order. */
		uint64_t n = get(s, p, 4);

		rev(s, p, 4);
		p += 4 + n;
	}
	if (st & TK_PERF_SAMPLE_REGS_USER) {
		uint64_t abi = get(s, p, 8);

		p = rev_many(s, p, 8, 1);
		if (abi)
			p = rev_many(s, p, 8, (uint64_t)__builtin_popcountll(a->regs_user));
	}
	if (st & TK_PERF_SAMPLE_STACK_USER) {
		uint64_t n = get(s, p, 8);

		p = rev_many(s, p, 8, 1);
		/* dyn_size follows the stack bytes, which stay as they are. */
		if (n && fits(s, p, n))
			p = rev_many(s, p + n, 8, 1);
		else if (n)
			s->bad = true;
	}
	if (st & (TK_PERF_SAMPLE_WEIGHT | TK_PERF_SAMPLE_WEIGHT_STRUCT))
		p = rev_many(s, p, 8, 1);
	if (st & TK_PERF_SAMPLE_DATA_SRC)
		p = rev_many(s, p, 8, 1);
	if (st & TK_PERF_SAMPLE_TRANSACTION)
		p = rev_many(s, p, 8, 1);
	if (st & TK_PERF_SAMPLE_REGS_INTR) {
		uint64_t abi = get(s, p, 8);

		p = rev_many(s, p, 8, 1);
		if (abi)
			p = rev_many(s, p, 8, (uint64_t)__builtin_popcountll(a->regs_intr));
	}
	for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++)
		if (st & last[i])
			p = rev_many(s, p, 8, 1);
	return 0;
}

/* Swap the sample_id_all trailer; returns where it starts (the body's end). */
static uint64_t swap_trailer(struct swapper *s, uint64_t rec, uint64_t end)
{
	static const uint64_t order[] = {
		TK_PERF_SAMPLE_TID,	  TK_PERF_SAMPLE_TIME, TK_PERF_SAMPLE_ID,
		TK_PERF_SAMPLE_STREAM_ID, TK_PERF_SAMPLE_CPU,  TK_PERF_SAMPLE_IDENTIFIER,
	};
	const struct swap_attr *a = s->attrs;
	uint64_t st, p;

	if (!a)
		return end;
	if (s->nr_attrs > 1 && (a->sample_type & TK_PERF_SAMPLE_IDENTIFIER) && a->sample_id_all &&
	    end - rec >= 16) {
		const struct swap_attr *b = attr_by_id(s, get(s, end - 8, 8));

		if (b)
			a = b;
	}
	if (!a->sample_id_all)
		return end;
	st = a->sample_type;
	p = end - 8 * (uint64_t)__builtin_popcountll(st & TK_PERF_TRAILER_BITS);
	if (p < rec + 8 || p > end) {
		s->bad = true;
		return end;
	}
	for (size_t i = 0, q = p; i < sizeof(order) / sizeof(order[0]); i++)
		if (st & order[i])
			q = rev_pairs_or_u64(s, q, order[i]);
	return p;
}

static int unsupported(struct swapper *s, uint64_t off, const char *what)
{
	return tk_fail_at(ENOTSUP, s->name, off,
			  "%s in a perf.data of the other byte order (%s-endian): not supported "
			  "yet",
			  what, s->big ? "big" : "little");
}

static int swap_cpu_map(struct swapper *s, uint64_t p, uint64_t rec)
{
	uint64_t type = get(s, p, 2);

	rev(s, p, 2);
	if (type == 0)
		rev_many(s, p + 2, 2, get(s, p + 2, 2) + 1);
	else if (type == 2)
		rev_many(s, p + 4, 2, 2);
	else
		return unsupported(s, rec, "a CPU_MAP record as a bitmask");
	return 0;
}

static void swap_feature(struct swapper *s, uint64_t bit, uint64_t off, uint64_t end);

/* A pipe's HEADER_ATTR: the attr, then its ids to the end of the record. */
static int swap_header_attr(struct swapper *s, uint64_t b, uint64_t end)
{
	struct swap_attr at;
	uint64_t size = swap_attr(s, b, &at), n;

	if (s->bad || size > end - b)
		return 0; /* the reader says what is wrong with it */
	n = (end - b - size) / 8;
	rev_many(s, b + size, 8, n);
	if (at.sample_type & TK_PERF_SAMPLE_BRANCH_STACK)
		return unsupported(s, b - 8, "sampling BRANCH_STACK");
	if (at.sample_type & TK_PERF_SAMPLE_AUX)
		return unsupported(s, b - 8, "sampling AUX");
	return add_attr(s, &at, b + size, n);
}

static int swap_record(struct swapper *s, uint64_t rec, uint32_t type, uint16_t misc, uint64_t end)
{
	uint64_t b = rec + 8, tend;

	if (type == TK_PERF_RECORD_SAMPLE)
		return swap_sample(s, rec, end);
	if (tk_perf_has_trailer(type)) {
		tend = swap_trailer(s, rec, end);
		switch (type) {
		case TK_PERF_RECORD_MMAP:
		case TK_PERF_RECORD_MMAP2:
			rev_many(s, b, 4, 2);
			rev_many(s, b + 8, 8, 3);
			if (type == TK_PERF_RECORD_MMAP2) {
				if (misc & 0x4000) {
					rev(s, b + 34, 2);
				} else {
					rev_many(s, b + 32, 4, 2);
					rev_many(s, b + 40, 8, 2);
				}
				rev_many(s, b + 56, 4, 2);
			}
			break;
		case TK_PERF_RECORD_COMM:
		case TK_PERF_RECORD_ITRACE_START:
		case TK_PERF_RECORD_SWITCH_CPU_WIDE:
			rev_many(s, b, 4, 2);
			break;
		case TK_PERF_RECORD_EXIT:
		case TK_PERF_RECORD_FORK:
			rev_many(s, b, 4, 4);
			rev(s, b + 16, 8);
			break;
		case TK_PERF_RECORD_READ:
			rev_many(s, b, 4, 2);
			if (tend >= b + 8)
				rev_many(s, b + 8, 8, (tend - b - 8) / 8);
			break;
		case TK_PERF_RECORD_NAMESPACES: {
			uint64_t nr;

			rev_many(s, b, 4, 2);
			nr = get(s, b + 8, 8);
			rev_many(s, b + 8, 8, nr < s->lim / 16 ? 1 + 2 * nr : UINT64_MAX / 16);
			break;
		}
		case TK_PERF_RECORD_KSYMBOL:
			rev(s, b, 8);
			rev(s, b + 8, 4);
			rev_many(s, b + 12, 2, 2);
			break;
		case TK_PERF_RECORD_BPF_EVENT:
			rev_many(s, b, 2, 2);
			rev(s, b + 4, 4);
			break;
		case TK_PERF_RECORD_CGROUP:
			rev(s, b, 8);
			break;
		case TK_PERF_RECORD_TEXT_POKE:
			rev(s, b, 8);
			rev_many(s, b + 8, 2, 2);
			break;
		case TK_PERF_RECORD_SWITCH:
			break;
		default: /* LOST, (UN)THROTTLE, AUX, LOST_SAMPLES, AUX_OUTPUT_HW_ID: u64s */
			if (tend >= b)
				rev_many(s, b, 8, (tend - b) / 8);
			break;
		}
		return 0;
	}
	switch (type) {
	case TK_PERF_RECORD_FINISHED_ROUND:
	case TK_PERF_RECORD_FINISHED_INIT:
		break;
	case TK_PERF_RECORD_ID_INDEX:
	case TK_PERF_RECORD_STAT_CONFIG:
	case TK_PERF_RECORD_STAT_ROUND:
	case TK_PERF_RECORD_AUXTRACE_INFO:
		if (type == TK_PERF_RECORD_AUXTRACE_INFO) { /* u32 type, u32 reserved, u64s */
			rev_many(s, b, 4, 2);
			b += 8;
		}
		if (end >= b)
			rev_many(s, b, 8, (end - b) / 8);
		break;
	case TK_PERF_RECORD_THREAD_MAP: {
		uint64_t nr = get(s, b, 8);

		rev(s, b, 8);
		for (uint64_t k = 0; k < nr && !s->bad; k++)
			rev(s, b + 8 + 24 * k, 8);
		break;
	}
	case TK_PERF_RECORD_CPU_MAP:
		return swap_cpu_map(s, b, rec);
	case TK_PERF_RECORD_STAT:
		rev(s, b, 8);
		rev_many(s, b + 8, 4, 2);
		rev_many(s, b + 16, 8, 3);
		break;
	case TK_PERF_RECORD_EVENT_UPDATE: {
		uint64_t kind = get(s, b, 8);

		rev_many(s, b, 8, 2);
		if (kind == 1)
			rev(s, b + 16, 8);
		else if (kind == 3)
			return swap_cpu_map(s, b + 16, rec);
		break;
	}
	case TK_PERF_RECORD_TIME_CONV: {
		uint64_t n = (end - b) / 8;

		rev_many(s, b, 8, n < 5 ? n : 5);
		break;
	}
	case TK_PERF_RECORD_HEADER_ATTR:
		return swap_header_attr(s, b, end);
	case TK_PERF_RECORD_HEADER_FEATURE: {
		uint64_t id = get(s, b, 8);

		rev(s, b, 8);
		if (!s->bad)
			swap_feature(s, id, b + 8, end);
		break;
	}
	case TK_PERF_RECORD_HEADER_BUILD_ID: /* s32 pid; u8 id[20], size, pad; u16 pad */
		rev(s, b, 4);
		rev(s, b + 26, 2);
		break;
	case TK_PERF_RECORD_AUXTRACE_ERROR:
		rev_many(s, b, 4, 6);
		rev_many(s, b + 24, 8, 2);
		if (end - b >= 112)
			rev_many(s, b + 104, 4, 2);
		break;
	default:
		/* Pipe-mode and compressed records: not in a file's data section as perf writes it.
		 */
		if (type >= 64 && type <= 83) {
			char what[64];

			snprintf(what, sizeof(what), "a %s record",
				 tk_perfdata_record_name(type) ? tk_perfdata_record_name(type)
							       : "user");
			return unsupported(s, rec, what);
		}
		/* Unknown: the reader reports the damage. */
		break;
	}
	return 0;
}

static int check_attrs(struct swapper *s, uint64_t aoff)
{
	for (size_t i = 0; i < s->nr_attrs; i++) {
		if (s->attrs[i].sample_type & TK_PERF_SAMPLE_BRANCH_STACK)
			return unsupported(s, aoff, "sampling BRANCH_STACK");
		if (s->attrs[i].sample_type & TK_PERF_SAMPLE_AUX)
			return unsupported(s, aoff, "sampling AUX");
	}
	return 0;
}

/* A header of the file's order perf could have written at @q (as the reader's resync judges). */
static bool plausible(struct swapper *s, uint64_t q, uint64_t dend, uint64_t *size)
{
	uint64_t type = get(s, q, 4), misc = get(s, q + 4, 2);

	*size = get(s, q + 6, 2);
	return !s->bad && ((type >= 1 && type <= 21) || (type >= 64 && type <= 82)) &&
	       !(misc & 0x7f8) && *size >= 8 && *size % 8 == 0 && *size <= dend - q;
}

/*
 * After a record whose size does not fit: the next 8-aligned offset from
 * which three headers in a row (or fewer ending at @dend) are plausible,
 * or @dend. The bytes between stay in the file's order: the reader lists
 * them as damage and finds the swapped records after them.
 */
static uint64_t resync(struct swapper *s, uint64_t p, uint64_t doff, uint64_t dend)
{
	for (uint64_t q = p + 8 - (p - doff) % 8; q + 8 <= dend; q += 8) {
		uint64_t r = q, size;
		unsigned k = 0;

		while (k < 3 && r + 8 <= dend && plausible(s, r, dend, &size)) {
			r += size;
			k++;
		}
		s->bad = false;
		if (k == 3 || (k > 0 && r == dend))
			return q;
	}
	return dend;
}

static int swap_records(struct swapper *s, uint64_t doff, uint64_t dend)
{
	uint64_t p = doff;

	while (p < dend && dend - p >= 8) {
		uint32_t type;
		uint16_t misc;
		uint64_t size;
		int r;

		s->lim = dend;
		type = (uint32_t)get(s, p, 4);
		misc = (uint16_t)get(s, p + 4, 2);
		size = get(s, p + 6, 2);
		if (size < 8 || size > dend - p) {
			p = resync(s, p, doff, dend);
			continue;
		}
		rev(s, p, 4);
		rev_many(s, p + 4, 2, 2);
		if (type == TK_PERF_RECORD_HEADER_TRACING_DATA && size >= 12) {
			/* u32 size; the blob follows the record, padded to 8, as it is. */
			uint64_t n = (get(s, p + 8, 4) + 7) & ~7ull;

			s->lim = p + size;
			rev(s, p + 8, 4);
			if (n > dend - p - size)
				break;
			p += size + n;
			continue;
		}
		if (type == TK_PERF_RECORD_AUXTRACE) {
			uint64_t n = get(s, p + 8, 8);

			s->lim = p + size;
			rev_many(s, p + 8, 8, 3);
			rev_many(s, p + 32, 4, 4);
			if (n > dend - p - size)
				break;
			p += size + n;
			continue;
		}
		s->lim = p + size;
		r = swap_record(s, p, type, misc, p + size);
		if (r < 0)
			return r;
		s->bad = false;
		p += size;
	}
	return 0;
}

/* --------------------------------------------------------------- features */

static uint64_t swap_str(struct swapper *s, uint64_t p)
{
	uint64_t n = get(s, p, 4);

	rev(s, p, 4);
	if (n > s->lim - (p + 4 < s->lim ? p + 4 : s->lim)) {
		s->bad = true;
		return s->lim;
	}
	return p + 4 + n;
}

static uint64_t swap_strs(struct swapper *s, uint64_t p, uint64_t n)
{
	for (uint64_t i = 0; i < n && !s->bad; i++)
		p = swap_str(s, p);
	return p;
}

static uint64_t swap_str_list(struct swapper *s, uint64_t p)
{
	uint64_t n = get(s, p, 4);

	rev(s, p, 4);
	return swap_strs(s, p + 4, n);
}

static void swap_feature(struct swapper *s, uint64_t bit, uint64_t off, uint64_t end)
{
	uint32_t nr_cpus = s->nr_cpus;
	uint64_t p = off, nr;

	s->lim = end;
	switch (bit) {
	case TK_PERF_FEAT_TRACING_DATA:
		break; /* self-describing: its header says its byte order */
	case TK_PERF_FEAT_BUILD_ID:
		while (p + 8 <= end && !s->bad) {
			uint64_t rs = get(s, p + 6, 2);

			if (rs < 36 || rs > end - p)
				break;
			rev(s, p, 4);
			rev_many(s, p + 4, 2, 2);
			rev(s, p + 8, 4);
			rev(s, p + 34, 2);
			p += rs;
		}
		break;
	case TK_PERF_FEAT_HOSTNAME:
	case TK_PERF_FEAT_OSRELEASE:
	case TK_PERF_FEAT_VERSION:
	case TK_PERF_FEAT_ARCH:
	case TK_PERF_FEAT_CPUDESC:
	case TK_PERF_FEAT_CPUID:
		swap_str(s, p);
		break;
	case TK_PERF_FEAT_NRCPUS:
		s->nr_cpus = (uint32_t)get(s, p, 4);
		rev_many(s, p, 4, 2);
		break;
	case TK_PERF_FEAT_TOTAL_MEM:
	case TK_PERF_FEAT_AUXTRACE:
	case TK_PERF_FEAT_SAMPLE_TIME:
	case TK_PERF_FEAT_MEM_TOPOLOGY:
	case TK_PERF_FEAT_CLOCKID:
	case TK_PERF_FEAT_DIR_FORMAT:
		rev_many(s, p, 8, (end - p) / 8);
		break;
	case TK_PERF_FEAT_CMDLINE:
		swap_str_list(s, p);
		break;
	case TK_PERF_FEAT_EVENT_DESC: {
		uint64_t asz = get(s, p + 4, 4);

		nr = get(s, p, 4);
		rev_many(s, p, 4, 2);
		p += 8;
		for (uint64_t i = 0; i < nr && !s->bad && asz; i++) {
			uint64_t nids;

			if (!fits(s, p, asz)) {
				s->bad = true;
				break;
			}
			s->lim = p + asz;
			swap_attr(s, p, NULL);
			s->lim = end;
			p += asz;
			nids = get(s, p, 4);
			rev(s, p, 4);
			p = swap_str(s, p + 4);
			p = rev_many(s, p, 8, nids);
		}
		break;
	}
	case TK_PERF_FEAT_CPU_TOPOLOGY:
		p = swap_str_list(s, p);
		p = swap_str_list(s, p);
		if (p < end && !s->bad)
			p = rev_many(s, p, 4, 2 * (uint64_t)nr_cpus);
		if (p < end && !s->bad) {
			p = swap_str_list(s, p);
			if (p < end && !s->bad)
				rev_many(s, p, 4, (end - p) / 4);
		}
		break;
	case TK_PERF_FEAT_NUMA_TOPOLOGY:
		nr = get(s, p, 4);
		rev(s, p, 4);
		p += 4;
		for (uint64_t i = 0; i < nr && !s->bad; i++) {
			rev(s, p, 4);
			rev_many(s, p + 4, 8, 2);
			p = swap_str(s, p + 20);
		}
		break;
	case TK_PERF_FEAT_PMU_MAPPINGS:
		nr = get(s, p, 4);
		rev(s, p, 4);
		p += 4;
		for (uint64_t i = 0; i < nr && !s->bad; i++) {
			rev(s, p, 4);
			p = swap_str(s, p + 4);
		}
		break;
	case TK_PERF_FEAT_GROUP_DESC:
		nr = get(s, p, 4);
		rev(s, p, 4);
		p += 4;
		for (uint64_t i = 0; i < nr && !s->bad; i++) {
			p = swap_str(s, p);
			p = rev_many(s, p, 4, 2);
		}
		break;
	case TK_PERF_FEAT_CACHE:
		nr = get(s, p + 4, 4);
		p = rev_many(s, p, 4, 2);
		for (uint64_t i = 0; i < nr && !s->bad; i++) {
			p = rev_many(s, p, 4, 4);
			p = swap_strs(s, p, 3);
		}
		break;
	case TK_PERF_FEAT_BPF_PROG_INFO:
	case TK_PERF_FEAT_BPF_BTF:
		/* Not swappable (perf refuses them too): read as empty. */
		if (get(s, p, 4) != 0 && fits(s, p, 4)) {
			tk_warn("%s: offset 0x%" PRIx64
				": BPF %s of another byte order is not read",
				s->name, p, bit == TK_PERF_FEAT_BPF_BTF ? "BTF" : "program info");
			memset(s->p + p, 0, 4);
		}
		break;
	case TK_PERF_FEAT_COMPRESSED:
		rev_many(s, p, 4, 5);
		break;
	case TK_PERF_FEAT_CPU_PMU_CAPS:
	case TK_PERF_FEAT_HYBRID_TOPOLOGY:
		nr = get(s, p, 4);
		rev(s, p, 4);
		swap_strs(s, p + 4, nr < UINT64_MAX / 2 ? 2 * nr : nr);
		break;
	case TK_PERF_FEAT_CLOCK_DATA:
		rev_many(s, p, 4, 2);
		rev_many(s, p + 8, 8, 2);
		break;
	case TK_PERF_FEAT_PMU_CAPS:
		nr = get(s, p, 4);
		rev(s, p, 4);
		p += 4;
		for (uint64_t i = 0; i < nr && !s->bad; i++) {
			uint64_t caps = get(s, p, 4);

			rev(s, p, 4);
			p = swap_strs(s, p + 4, caps < UINT64_MAX / 4 ? 2 * caps + 1 : caps);
		}
		break;
	default: /* BRANCH_STACK, STAT: empty; 32 ends a pipe's; past it: unknown */
		break;
	}
	s->bad = false;
}

static void swap_features(struct swapper *s, const uint64_t bitmap[4], uint64_t toff)
{
	unsigned bits[256], n = 0;
	uint32_t nr_cpus = 0;

	for (unsigned b = 0; b < 256; b++)
		if (bitmap[b / 64] >> (b % 64) & 1)
			bits[n++] = b;
	s->lim = s->size;
	if (!fits(s, toff, 16 * (uint64_t)n))
		return; /* the reader warns: the table is past the end */
	rev_many(s, toff, 8, 2 * (uint64_t)n);
	/* NRCPUS first: CPU_TOPOLOGY's per-CPU ids are its count long. */
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = host_u64(s->p + toff + 16 * i);
		uint64_t sz = host_u64(s->p + toff + 16 * i + 8);

		if (bits[i] == TK_PERF_FEAT_NRCPUS && fits(s, off, sz) && sz >= 4)
			nr_cpus = tk_load_u32(s->p + off, s->big);
	}
	s->nr_cpus = nr_cpus;
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = host_u64(s->p + toff + 16 * i);
		uint64_t sz = host_u64(s->p + toff + 16 * i + 8);

		s->lim = s->size;
		if (fits(s, off, sz))
			swap_feature(s, bits[i], off, off + sz);
	}
}

/* ------------------------------------------------------------------ file */

static int swap_file(struct swapper *s)
{
	uint64_t hsize, attr_size, aoff, asize, doff, dsize, bitmap[4] = {0, 0, 0, 0};
	int r;

	s->lim = s->size;
	hsize = get(s, 8, 8);
	if (hsize == 16) {
		/* A pipe's stream saved to a file: the metadata comes in records. */
		rev_many(s, 0, 8, 2);
		return swap_records(s, 16, s->size);
	}
	/* As the reader refuses a version 1 header size perf never wrote. */
	if (hsize != TK_PERF_HEADER_SIZE && hsize != 72)
		return tk_fail_at(ENOTSUP, s->name, 8,
				  "perf.data in %s-endian byte order with header size %" PRIu64
				  ": not 104, 72 or 16 (pipe), which perf wrote",
				  s->big ? "big" : "little", hsize);
	if (s->size < hsize)
		return tk_fail_at(EBADMSG, s->name, 0, "file is shorter than its header");
	attr_size = get(s, 16, 8);
	aoff = get(s, 24, 8);
	asize = get(s, 32, 8);
	doff = get(s, 40, 8);
	dsize = get(s, 48, 8);
	for (unsigned i = 0; hsize == TK_PERF_HEADER_SIZE && i < 4; i++)
		bitmap[i] = get(s, 72 + 8 * i, 8);
	rev_many(s, 0, 8, hsize / 8);
	r = swap_attrs(s, attr_size, aoff, asize);
	if (r == 0)
		r = check_attrs(s, aoff);
	if (r < 0)
		return r;
	if (s->nr_attrs == 0)
		return 0; /* the reader says the file has no events */
	/* A killed recorder leaves data.size 0: the records run to the end, no features. */
	if (dsize == 0 || doff > s->size || dsize > s->size - doff) {
		if (doff < s->size)
			return swap_records(s, doff, s->size);
		return 0;
	}
	r = swap_records(s, doff, doff + dsize);
	if (r < 0)
		return r;
	swap_features(s, bitmap, doff + dsize);
	return 0;
}

int tk_perfdata_swap_to_host(int fd, const char *name, uint64_t size, int *out)
{
	struct swapper s = {
		.size = size, .big = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, .name = name};
	int mfd, r;
	int64_t n;

	mfd = memfd_create("tracekit-perfdata-swapped", MFD_CLOEXEC);
	if (mfd < 0)
		return tk_fail(errno, "%s: memfd_create: %s", name, strerror(errno));
	if (size == 0 || ftruncate(mfd, (off_t)size) < 0) {
		r = tk_fail(size ? errno : EBADMSG, "%s: cannot copy into memory: %s", name,
			    size ? strerror(errno) : "empty file");
		close(mfd);
		return r;
	}
	s.p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (s.p == MAP_FAILED) {
		r = tk_fail(errno, "%s: mmap of %" PRIu64 " bytes: %s", name, size,
			    strerror(errno));
		close(mfd);
		return r;
	}
	n = tk_pread_full(fd, s.p, size, 0);
	if (n < 0)
		r = tk_fail((int)-n, "%s: %s", name, strerror((int)-n));
	else if ((uint64_t)n < size)
		r = tk_fail_at(EBADMSG, name, (uint64_t)n, "unexpected end of file");
	else
		r = swap_file(&s);
	munmap(s.p, size);
	free(s.attrs);
	free(s.ids);
	if (r < 0) {
		close(mfd);
		return r;
	}
	*out = mfd;
	return 0;
}
