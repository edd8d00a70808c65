// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-read: read a perf.data file (perf 6.1, file and pipe mode).
 *
 * Byte layout read (facts in shared/specs/perfdata.md; all numbers in host
 * order: a file of the other order is read from a copy that
 * perfdata-swap.c swapped to ours, a pipe of it is refused):
 *
 * File mode:
 *   0   u64 magic "PERFILE2" | u64 size (104, or 72: no bitmap) | u64 attr_size
 *       (version 1, magic "PERFFILE": the same layout, attr_size 80..120)
 *   24  {u64 offset, u64 size} attrs | data | event_types (ignored)
 *   72  u64 adds_features[4]: bit n set = feature n present
 *   attrs: size/attr_size entries of {perf_event_attr (attr_size-16 bytes),
 *          {u64 offset, u64 size} of the entry's u64 id array}
 *   data:  records {u32 type, u16 misc, u16 size, payload} back to back,
 *          not always 8-aligned (COMPRESSED, HEADER_FEATURE)
 *   data.offset + data.size: popcount(bitmap) x {u64 offset, u64 size}, one
 *          per set bit in bit order, pointing at the feature payloads
 * Pipe mode:
 *   0   u64 magic | u64 size = 16; then records only. Metadata travels as
 *       HEADER_ATTR (attr + ids), HEADER_FEATURE (u64 id + payload; id 32
 *       ends the list), HEADER_TRACING_DATA (u32 size; blob after the
 *       record, padded to 8) and HEADER_BUILD_ID records.
 *
 * Two record types carry bytes after header.size: HEADER_TRACING_DATA (66)
 * and AUXTRACE (71, u64 size at +8). COMPRESSED (81) records are chunks of
 * one zstd stream that spans them all; each chunk decompresses to records.
 * COMPRESSED2 (83, perf 6.16) carries the same chunks as {u64 data_size,
 * data, zero padding to 8 bytes}.
 *
 * Invariants:
 *   - Every offset and size from the file is checked against the file size
 *     (or the record that holds it) before use; sizes are uint64_t and sums
 *     are checked for overflow.
 *   - A regular file in file mode is read in place: map_data() maps it
 *     read-only (MAP_PRIVATE, its size at open) and the mapping is the
 *     window, so a record handed out is the file's bytes, where they stay
 *     until close (tk_perfdata_mapping(): the report queues them without a
 *     copy). Nothing past the size fstat() gave at open is touched; a file
 *     truncated while it is read is out of scope (its pages would raise
 *     SIGBUS, as they would for perf, which maps it too). The resident part
 *     slides with the reader (map_slide()): a few MB ahead, populated in
 *     one call per MiB, and nothing more than MAP_LAG below the oldest
 *     record the caller still holds (tk_perfdata_keep_from()).
 *   - A caller that holds records past the next call (the report's
 *     ordered queue, on one thread) may trade the mapping for a kept
 *     window (tk_perfdata_read_kept()): pread() copies, 256 KiB at a
 *     time, into one buffer on huge pages that keeps every byte from the
 *     caller's keep offset on (kept_room(): the bytes below it go by
 *     memmove() once they are as many as the kept ones and 4 MiB, or the
 *     buffer is full, and a buffer more than half kept grows to twice
 *     what it keeps), found at tk_perfdata_kept_base() + file offset. On the
 *     2-vCPU VM bench/README.md measures on, the first user-space touch
 *     of each 4 KiB page of a file mapping costs ~2.5 us even after
 *     MADV_POPULATE_READ (sched.data's 22.5 k pages: ~60 ms of CPU, a
 *     third of its report), where pread() into pages that stay mapped
 *     reads the file in ~23 ms.
 *   - Pipes, files mmap() refuses, files of user stack samples (whose
 *     pages cost more to touch than to copy: map_data()) and
 *     TK_PERFDATA_NO_MMAP in the environment (which tests use to compare
 *     both paths) stream through
 *     one read window grown only to the largest record (64 KiB) or a
 *     tracing-data blob. Either way memory holds one decompressed chunk and
 *     one aligned copy of a record: the data section is never loaded whole.
 *   - Records handed out are 8-byte aligned (copied when the file puts them
 *     at an odd offset), so callers may read them with aligned loads.
 *   - The common record, a whole aligned SAMPLE in the window, is handed
 *     out by tk_perfdata_next() itself with next_raw()'s checks for it
 *     (the exact-size test that catches a damaged size, the time kept for
 *     resync()); everything else goes through next_raw(). In a mapped
 *     file tk_perfdata_next_samples() hands out a run of them at once,
 *     each as its offset, size and the event its id names (found once,
 *     for the time kept, and given to the caller, who would look it up
 *     again) when the sample is known to decode whole: its size is the
 *     one its fixed fields give, or the damage test decoded it (a sample
 *     with a callchain or a stack: one decode, which also answers for
 *     every shorter length, sample_decode()).
 *   - Metadata objects (evsels, features, build ids) are allocated one by
 *     one and never moved, so pointers handed out stay valid until close
 *     even while pipe mode adds more.
 *
 * Why pipe mode peeks: a pipe cannot be rewound, but callers want the attrs
 * before the first sample. tk_perfdata_open() reads the leading metadata
 * records into a queue (they are small: attrs, features, one tracing blob),
 * parses them, and tk_perfdata_next() hands the queued records out first.
 *
 * Features: every payload of a known bit is loaded whole (at most 1 GiB)
 * and kept until close; the decoded values in struct tk_perfdata_host point
 * into it (strings) or into arrays allocated per feature. Every count is
 * checked against the bytes left before anything is allocated for it, with
 * the smallest size an entry can have (a string takes at least 5 bytes), so
 * a hostile count cannot allocate more than a few times the payload. A
 * payload that does not fit its layout leaves its host fields unset and is
 * warned about with the offset of the part that did not fit and why; only a
 * malformed TRACING_DATA with tracepoint attrs is an error. Two features
 * depend on earlier ones, as in perf: CPU_TOPOLOGY's per-CPU ids are
 * NRCPUS' avail count long, and BPF functions are named from the BTF of
 * BPF_BTF, which follows BPF_PROG_INFO (names are resolved after either).
 *
 * TRACING_DATA is decoded by the tracedata codec (tracedata.c), the one
 * the .dat reader uses for its metadata sections: the texts point into the
 * kept blob, and tk_perfdata_get_tracedata() hands the model out.
 *
 * A killed recorder leaves data.size 0 (perf writes it at exit) or a size
 * past EOF. perf 6.1 then misreads the data as the feature table; we warn,
 * ignore the feature bits (there is no table) and read records to the last
 * complete one.
 *
 * Salvage (issue 21; tk_perfdata_open_opts() without .strict). Damage is
 * listed as regions {offset, what, bytes skipped, records lost if known}
 * instead of failing; a region that starts where the last one ended
 * extends it. What counts as damage:
 *   - header: a data size past EOF (file cut short: features lost, records
 *     read to the last whole one). Size 0 stays the killed recorder above.
 *   - attrs: ids outside the file (the attr keeps no ids), a size unlike
 *     attr_size, sample_id_all unlike attr 0's. Only a header whose attrs
 *     cannot be placed at all stays fatal: no sample could be decoded.
 *   - features: a table past EOF (all ignored), an entry outside the file,
 *     a malformed TRACING_DATA of a tracepoint file (samples then print
 *     unnamed). A payload that does not parse stays a warning: it loses
 *     no record.
 *   - records: a size below 8, a type perf 6.1 never writes (not 1..21 or
 *     64..82), a TRACING_DATA/AUXTRACE header too short for its fields, a
 *     record running past the data, and a SAMPLE whose fields decode from
 *     8 bytes fewer than its size (the kernel sizes samples exactly, padded
 *     to 8; such a size is otherwise plausible and could step over whole
 *     records unseen). A COMPRESSED record zstd refuses, or whose output
 *     does not split into records, loses its own output only: the decoder
 *     restarts at the next frame (perf ends a frame at every flush).
 * Resync: from the byte after a damaged record's offset, every offset is a
 * candidate (records after a COMPRESSED one need not be 8-aligned, and a
 * damaged size misaligns the walk), and the first where three headers in
 * a row are plausible (or fewer that end exactly at the end of the data)
 * ends the region. Plausible: a known type, misc bits 3..10 clear, a size
 * of at least 8 that fits (kernel records a multiple of 8), and for a
 * SAMPLE an id that names an event and a time within a day of the last
 * sample read whole (one far time is taken only when three in a row
 * agree). Each candidate reads at most three headers inside a window of
 * 3 x 64 KiB + 8 that slides forward without rescanning, so the scan is
 * linear in the bytes skipped. On the test campaign (tests/integration/
 * test-damage-perf.sh: 400 damaged copies) no sample was lost silently
 * and no copy printed fewer samples than perf script where perf read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "bigbuf.h"
#include "bytes.h"
#include "error.h"
#include "fsutil.h"
#include "perfdata-internal.h"
#include "tracedata-internal.h"

#define WINDOW_SIZE	 (256u * 1024)
#define HEAD_READ	 4096u /* a seekable file's first read (read_head()): header and then some */
#define MAX_FEATURE_SIZE (1ull << 30)	/* refuse payloads above 1 GiB */
#define MAX_EXTRA_SIZE	 (1ull << 30)	/* tracing blob in pipe mode */
#define MAX_DECOMP_SIZE	 (256ull << 20) /* one COMPRESSED chunk's output */

/* A kept window (kept_room()): its first size, two huge pages less tk_big_alloc()'s header. */
#define KEPT_HUGE  (2u << 20)
#define KEPT_FIRST (2 * KEPT_HUGE - 64u)
/* Below this many droppable bytes a window with room does not move its kept ones (kept_room()). */
#define KEPT_SLIDE (4u << 20)
/* The bytes it reads at a time: the parse reaches them while the cache still holds them. */
#define KEPT_READ (256u * 1024)
/*
 * Files of more data keep the mapping: a window holds everything from the
 * oldest record the caller queues, so a file without FINISHED_ROUND
 * records would end up whole in it, in memory the kernel cannot reclaim
 * as it can a mapping's page cache.
 */
#define KEPT_MAX_DATA (1ull << 30)

/* ------------------------------------------------------------------ names */

const char *tk_perfdata_record_name(uint32_t type)
{
	static const char *const kernel[] = {
		NULL,		"MMAP",
		"LOST",		"COMM",
		"EXIT",		"THROTTLE",
		"UNTHROTTLE",	"FORK",
		"READ",		"SAMPLE",
		"MMAP2",	"AUX",
		"ITRACE_START", "LOST_SAMPLES",
		"SWITCH",	"SWITCH_CPU_WIDE",
		"NAMESPACES",	"KSYMBOL",
		"BPF_EVENT",	"CGROUP",
		"TEXT_POKE",	"AUX_OUTPUT_HW_ID",
	};
	static const char *const user[] = {
		"HEADER_ATTR",
		"HEADER_EVENT_TYPE",
		"HEADER_TRACING_DATA",
		"HEADER_BUILD_ID",
		"FINISHED_ROUND",
		"ID_INDEX",
		"AUXTRACE_INFO",
		"AUXTRACE",
		"AUXTRACE_ERROR",
		"THREAD_MAP",
		"CPU_MAP",
		"STAT_CONFIG",
		"STAT",
		"STAT_ROUND",
		"EVENT_UPDATE",
		"TIME_CONV",
		"HEADER_FEATURE",
		"COMPRESSED",
		"FINISHED_INIT",
		"COMPRESSED2",
		"BPF_METADATA",	    /* perf 6.16 */
		"SCHEDSTAT_CPU",    /* perf sched stats */
		"SCHEDSTAT_DOMAIN", /* perf sched stats */
	};

	if (type < sizeof(kernel) / sizeof(kernel[0]) && kernel[type])
		return kernel[type];
	if (type >= 64 && type - 64 < sizeof(user) / sizeof(user[0]))
		return user[type - 64];
	return "UNKNOWN";
}

const char *tk_perfdata_feature_name(uint32_t id)
{
	static const char *const names[] = {
		"RESERVED",	   "TRACING_DATA", "BUILD_ID",	   "HOSTNAME",	   "OSRELEASE",
		"VERSION",	   "ARCH",	   "NRCPUS",	   "CPUDESC",	   "CPUID",
		"TOTAL_MEM",	   "CMDLINE",	   "EVENT_DESC",   "CPU_TOPOLOGY", "NUMA_TOPOLOGY",
		"BRANCH_STACK",	   "PMU_MAPPINGS", "GROUP_DESC",   "AUXTRACE",	   "STAT",
		"CACHE",	   "SAMPLE_TIME",  "MEM_TOPOLOGY", "CLOCKID",	   "DIR_FORMAT",
		"BPF_PROG_INFO",   "BPF_BTF",	   "COMPRESSED",   "CPU_PMU_CAPS", "CLOCK_DATA",
		"HYBRID_TOPOLOGY", "PMU_CAPS",
	};

	if (id < sizeof(names) / sizeof(names[0]))
		return names[id];
	return "UNKNOWN";
}

/* ------------------------------------------------------------- attr codec */

void tk_perfdata_attr_decode(const uint8_t *in, size_t len, struct tk_perf_attr *a)
{
	uint8_t b[TK_PERF_ATTR_SIZE];

	/* Older, shorter attrs read as if their missing tail were zero. */
	memset(b, 0, sizeof(b));
	memcpy(b, in, len < sizeof(b) ? len : sizeof(b));
	memset(a, 0, sizeof(*a));
	a->type = tk_load_u32(b + 0, false);
	a->size = tk_load_u32(b + 4, false);
	a->config = tk_load_u64(b + 8, false);
	a->sample_period = tk_load_u64(b + 16, false);
	a->sample_type = tk_load_u64(b + 24, false);
	a->read_format = tk_load_u64(b + 32, false);
	a->flags = tk_load_u64(b + 40, false);
	a->wakeup_events = tk_load_u32(b + 48, false);
	a->bp_type = tk_load_u32(b + 52, false);
	a->config1 = tk_load_u64(b + 56, false);
	a->config2 = tk_load_u64(b + 64, false);
	a->branch_sample_type = tk_load_u64(b + 72, false);
	a->sample_regs_user = tk_load_u64(b + 80, false);
	a->sample_stack_user = tk_load_u32(b + 88, false);
	a->clockid = (int32_t)tk_load_u32(b + 92, false);
	a->sample_regs_intr = tk_load_u64(b + 96, false);
	a->aux_watermark = tk_load_u32(b + 104, false);
	a->sample_max_stack = tk_load_u16(b + 108, false);
	a->aux_sample_size = tk_load_u32(b + 112, false);
	a->sig_data = tk_load_u64(b + 120, false);
}

void tk_perfdata_attr_encode(const struct tk_perf_attr *a, uint8_t b[128])
{
	memset(b, 0, TK_PERF_ATTR_SIZE);
	tk_store_u32(b + 0, a->type, false);
	tk_store_u32(b + 4, TK_PERF_ATTR_SIZE, false);
	tk_store_u64(b + 8, a->config, false);
	tk_store_u64(b + 16, a->sample_period, false);
	tk_store_u64(b + 24, a->sample_type, false);
	tk_store_u64(b + 32, a->read_format, false);
	tk_store_u64(b + 40, a->flags, false);
	tk_store_u32(b + 48, a->wakeup_events, false);
	tk_store_u32(b + 52, a->bp_type, false);
	tk_store_u64(b + 56, a->config1, false);
	tk_store_u64(b + 64, a->config2, false);
	tk_store_u64(b + 72, a->branch_sample_type, false);
	tk_store_u64(b + 80, a->sample_regs_user, false);
	tk_store_u32(b + 88, a->sample_stack_user, false);
	tk_store_u32(b + 92, (uint32_t)a->clockid, false);
	tk_store_u64(b + 96, a->sample_regs_intr, false);
	tk_store_u32(b + 104, a->aux_watermark, false);
	tk_store_u16(b + 108, a->sample_max_stack, false);
	tk_store_u32(b + 112, a->aux_sample_size, false);
	tk_store_u64(b + 120, a->sig_data, false);
}

/* ------------------------------------------------------- sample decoding */

/* Borrow n u64s; the count comes from the file, so divide rather than multiply. */
static bool cur_u64s(struct tk_cursor *c, uint64_t n, const void **out)
{
	const uint8_t *p;

	if (n > tk_cursor_left(c) / 8 || !tk_cursor_bytes(c, n * 8, &p))
		return false;
	*out = p;
	return true;
}

static bool cur_regs(struct tk_cursor *c, uint64_t mask, uint64_t *abi, uint64_t *nr,
		     const void **regs)
{
	if (!tk_cursor_u64(c, abi))
		return false;
	*nr = 0;
	*regs = NULL;
	if (*abi == 0)
		return true;
	*nr = (uint64_t)__builtin_popcountll(mask);
	return cur_u64s(c, *nr, regs);
}

/*
 * tk_perf_sample_decode(), also saying in @used how many bytes the fields
 * took. Each field is placed and sized by bytes before it, so the same
 * record decodes from its first n bytes exactly when n >= *used: one
 * decode answers for every shorter length (sample_too_long()). Inline in
 * both callers: where @s is not read after (sample_too_long()) the
 * compiler drops its stores and leaves the walk.
 */
static inline __attribute__((always_inline)) int sample_decode(const struct tk_perf_attr *attr,
							       const uint8_t *rec, size_t size,
							       struct tk_perf_sample *s,
							       size_t *bad, size_t *used)
{
	uint64_t t = attr->sample_type, rf = attr->read_format;
	struct tk_cursor c;
	uint32_t u;

	memset(s, 0, sizeof(*s));
	tk_cursor_init(&c, rec, size, 0, false);
	c.pos = size < 8 ? size : 8;
#define NEED(x)                                                                                    \
	do {                                                                                       \
		if (!(x))                                                                          \
			goto short_;                                                               \
	} while (0)
	if (t & TK_PERF_SAMPLE_IDENTIFIER)
		NEED(tk_cursor_u64(&c, &s->id));
	if (t & TK_PERF_SAMPLE_IP)
		NEED(tk_cursor_u64(&c, &s->ip));
	if (t & TK_PERF_SAMPLE_TID) {
		NEED(tk_cursor_u32(&c, &s->pid));
		NEED(tk_cursor_u32(&c, &s->tid));
	}
	if (t & TK_PERF_SAMPLE_TIME)
		NEED(tk_cursor_u64(&c, &s->time));
	if (t & TK_PERF_SAMPLE_ADDR)
		NEED(tk_cursor_u64(&c, &s->addr));
	if (t & TK_PERF_SAMPLE_ID)
		NEED(tk_cursor_u64(&c, &s->id));
	if (t & TK_PERF_SAMPLE_STREAM_ID)
		NEED(tk_cursor_u64(&c, &s->stream_id));
	if (t & TK_PERF_SAMPLE_CPU) {
		NEED(tk_cursor_u32(&c, &s->cpu));
		NEED(tk_cursor_u32(&c, &u));
	}
	if (t & TK_PERF_SAMPLE_PERIOD)
		NEED(tk_cursor_u64(&c, &s->period));
	if (t & TK_PERF_SAMPLE_READ) {
		uint64_t per = 1 + !!(rf & TK_PERF_READ_ID) + !!(rf & TK_PERF_READ_LOST);
		uint64_t fixed = !!(rf & TK_PERF_READ_TOTAL_TIME_ENABLED) +
				 !!(rf & TK_PERF_READ_TOTAL_TIME_RUNNING);
		uint64_t nr = 1, words;
		size_t start = c.pos;

		if (rf & TK_PERF_READ_GROUP) {
			NEED(tk_cursor_u64(&c, &nr));
			NEED(nr <= tk_cursor_left(&c) / 8 / per);
		}
		words = fixed + nr * per;
		c.pos = start;
		words += !!(rf & TK_PERF_READ_GROUP);
		NEED(cur_u64s(&c, words, &s->read));
		s->read_size = words * 8;
	}
	if (t & TK_PERF_SAMPLE_CALLCHAIN) {
		NEED(tk_cursor_u64(&c, &s->callchain_nr));
		NEED(cur_u64s(&c, s->callchain_nr, &s->callchain));
	}
	if (t & TK_PERF_SAMPLE_RAW) {
		const uint8_t *p;

		NEED(tk_cursor_u32(&c, &s->raw_size));
		NEED(tk_cursor_bytes(&c, s->raw_size, &p));
		s->raw = p;
	}
	if (t & TK_PERF_SAMPLE_BRANCH_STACK) {
		NEED(tk_cursor_u64(&c, &s->branch_nr));
		if (attr->branch_sample_type & TK_PERF_BRANCH_HW_INDEX)
			NEED(tk_cursor_u64(&c, &s->branch_hw_idx));
		NEED(s->branch_nr <= tk_cursor_left(&c) / 24);
		NEED(cur_u64s(&c, s->branch_nr * 3, &s->branch));
	}
	if (t & TK_PERF_SAMPLE_REGS_USER)
		NEED(cur_regs(&c, attr->sample_regs_user, &s->regs_user_abi, &s->regs_user_nr,
			      &s->regs_user));
	if (t & TK_PERF_SAMPLE_STACK_USER) {
		const uint8_t *p;

		NEED(tk_cursor_u64(&c, &s->stack_user_size));
		NEED(tk_cursor_bytes(&c, s->stack_user_size, &p));
		s->stack_user = p;
		if (s->stack_user_size)
			NEED(tk_cursor_u64(&c, &s->stack_user_dyn_size));
	}
	if (t & (TK_PERF_SAMPLE_WEIGHT | TK_PERF_SAMPLE_WEIGHT_STRUCT))
		NEED(tk_cursor_u64(&c, &s->weight));
	if (t & TK_PERF_SAMPLE_DATA_SRC)
		NEED(tk_cursor_u64(&c, &s->data_src));
	if (t & TK_PERF_SAMPLE_TRANSACTION)
		NEED(tk_cursor_u64(&c, &s->transaction));
	if (t & TK_PERF_SAMPLE_REGS_INTR)
		NEED(cur_regs(&c, attr->sample_regs_intr, &s->regs_intr_abi, &s->regs_intr_nr,
			      &s->regs_intr));
	if (t & TK_PERF_SAMPLE_PHYS_ADDR)
		NEED(tk_cursor_u64(&c, &s->phys_addr));
	if (t & TK_PERF_SAMPLE_CGROUP)
		NEED(tk_cursor_u64(&c, &s->cgroup));
	if (t & TK_PERF_SAMPLE_DATA_PAGE_SIZE)
		NEED(tk_cursor_u64(&c, &s->data_page_size));
	if (t & TK_PERF_SAMPLE_CODE_PAGE_SIZE)
		NEED(tk_cursor_u64(&c, &s->code_page_size));
	if (t & TK_PERF_SAMPLE_AUX) {
		const uint8_t *p;

		NEED(tk_cursor_u64(&c, &s->aux_size));
		NEED(tk_cursor_bytes(&c, s->aux_size, &p));
		s->aux = p;
	}
#undef NEED
	s->fields = t;
	*used = c.pos;
	return 0;
short_:
	*bad = c.pos;
	return -EBADMSG;
}

int tk_perf_sample_decode(const struct tk_perf_attr *attr, const uint8_t *rec, size_t size,
			  struct tk_perf_sample *s, size_t *bad)
{
	size_t used;

	return sample_decode(attr, rec, size, s, bad, &used);
}

int tk_perf_trailer_decode(uint64_t sample_type, const uint8_t *rec, size_t size,
			   struct tk_perf_sample *s, size_t *bad)
{
	uint64_t t = sample_type & TK_PERF_TRAILER_BITS;
	size_t n = 8 * ((size_t)__builtin_popcountll(t));
	struct tk_cursor c;
	uint32_t res;

	memset(s, 0, sizeof(*s));
	if (size < 8 || size - 8 < n) {
		*bad = 8;
		return -EBADMSG;
	}
	tk_cursor_init(&c, rec, size, 0, false);
	c.pos = size - n;
	/* The cursor holds exactly n bytes from here, so these cannot fail. */
	if (t & TK_PERF_SAMPLE_TID) {
		tk_cursor_u32(&c, &s->pid);
		tk_cursor_u32(&c, &s->tid);
	}
	if (t & TK_PERF_SAMPLE_TIME)
		tk_cursor_u64(&c, &s->time);
	if (t & TK_PERF_SAMPLE_ID)
		tk_cursor_u64(&c, &s->id);
	if (t & TK_PERF_SAMPLE_STREAM_ID)
		tk_cursor_u64(&c, &s->stream_id);
	if (t & TK_PERF_SAMPLE_CPU) {
		tk_cursor_u32(&c, &s->cpu);
		tk_cursor_u32(&c, &res);
	}
	if (t & TK_PERF_SAMPLE_IDENTIFIER)
		tk_cursor_u64(&c, &s->id);
	s->fields = t;
	return 0;
}

bool tk_perf_id_offset(uint32_t type, uint64_t st, size_t size, size_t *off)
{
	size_t back;

	if (type == TK_PERF_RECORD_SAMPLE) {
		if (st & TK_PERF_SAMPLE_IDENTIFIER) {
			*off = 8;
		} else if (st & TK_PERF_SAMPLE_ID) {
			*off = 8 + 8 * (size_t)__builtin_popcountll(
					       st & (TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
						     TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ADDR));
		} else {
			return false;
		}
	} else if (tk_perf_has_trailer(type)) {
		if (st & TK_PERF_SAMPLE_IDENTIFIER)
			back = 8;
		else if (st & TK_PERF_SAMPLE_ID)
			back = 8 * (1 + !!(st & TK_PERF_SAMPLE_STREAM_ID) +
				    !!(st & TK_PERF_SAMPLE_CPU));
		else
			return false;
		if (size < 8 + back)
			return false;
		*off = size - back;
	} else {
		return false;
	}
	return *off + 8 <= size;
}

/* ------------------------------------------------------------ the reader */

struct pd_evsel {
	struct tk_perfdata_evsel pub;
	uint64_t *ids;
	char *name;
	uint32_t time_off; /* where a sample's time is (sample_time_at()); 0: none */
};

struct pd_id {
	uint64_t id;
	size_t evsel;
};

struct pd_record_copy {
	uint8_t *data; /* aligned: allocated with malloc */
	uint8_t *extra;
	struct tk_perf_record rec;
};

#define ID_CACHE 256

struct id_slot {
	uint64_t id;
	int32_t evsel;
};

struct tk_perfdata {
	char *name;
	int fd;
	bool own_fd;
	bool seekable;
	struct tk_perfdata_info info;

	struct pd_evsel **evsels;
	size_t nr_evsels;
	struct pd_id *idmap; /* sorted by id */
	size_t nr_idmap;

	struct tk_perfdata_feature **features;
	size_t nr_features;
	void **owned; /* feature payloads and other blobs */
	size_t nr_owned;

	struct tk_perfdata_host host;

	struct tk_perfdata_build_id **build_ids;
	size_t nr_build_ids;

	bool one_layout; /* every evsel that samples has evsel 0's sample_type and read_format */
	size_t sample_id_off;	 /* a SAMPLE's id by evsel 0 (tk_perf_id_offset()); 0: none */
	struct id_slot *idcache; /* find_id()'s: ID_CACHE slots, evsel -1 when empty */
	bool fixed_ok;		 /* evsel 0's fields but RAW have fixed sizes: */
	uint32_t fixed_before, fixed_after; /* their bytes before RAW and after it */
	/* sample_size_exact()'s facts, set with the ones above as each evsel comes */
	bool exact_ok;	     /* one_layout && fixed_ok */
	bool exact_raw;	     /* evsel 0 samples RAW: its length is in the record */
	uint32_t exact_base; /* the record's size without RAW's bytes */

	const uint8_t *tracing_blob;
	uint64_t tracing_len;
	uint64_t tracing_off; /* where the blob starts in the file or stream */
	struct tk_perfdata_tracing tracing;
	struct tk_tracedata *td; /* texts point into tracing_blob */

	/*
	 * Input window: buf[start, end) holds the file bytes from pos on.
	 * A mapped file's window is the mapping: buf = map, start = pos; a
	 * kept window's buf[0] is file offset pos - start, 8-byte aligned.
	 */
	uint8_t *buf;
	size_t cap, start, end;
	uint64_t pos;
	uint64_t limit; /* no reads at or past this offset */
	bool eof;

	/* The file mapped read-only (file mode, regular file), or NULL. */
	const uint8_t *map;
	uint64_t map_len;  /* the file size at open: nothing past it is read */
	uint64_t ready;	   /* pages below this offset were made resident (map_slide()) */
	uint64_t dropped;  /* and pages below this one handed back */
	uint64_t slide_at; /* where map_slide() runs next */
	uint64_t keep;	   /* the caller still reads records from here on */
	/* The window keeps the bytes from keep on (tk_perfdata_read_kept()); buf: tk_big_alloc() */
	bool kept;

	/* Decompressed bytes of COMPRESSED records: dbuf[dstart, dend). */
	ZSTD_DCtx *dctx;
	uint8_t *dbuf;
	size_t dcap, dstart, dend;
	uint64_t doff; /* offset of the COMPRESSED record being drained */

	uint64_t *scratch; /* aligned copy of one record (64 KiB) */
	uint8_t *extra;	   /* tracing blob of the current 66 record */
	uint64_t extra_cap;

	/* Pipe mode: the metadata records read at open, handed out first. */
	struct pd_record_copy *queue;
	size_t nr_queue, queue_pos;
	bool done;

	/* Salvage (not strict): the damaged regions met, and what resync judges by. */
	bool strict;
	struct tk_perfdata_damage *damage;
	size_t nr_damage;
	uint64_t last_time; /* time of the last sample read whole; 0: none yet */
	uint64_t whole_off; /* the record tk_perfdata_next() handed out last */
	long whole_evsel;   /* decodes whole as this evsel (-1: not known) */
	unsigned int time_rejects;
};

static int fail_at(const struct tk_perfdata *pd, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(const struct tk_perfdata *pd, uint64_t off, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tk_fail_at(EBADMSG, pd->name, off, "%s", msg);
}

static int own(struct tk_perfdata *pd, void *p)
{
	void **n;

	if (!p)
		return -ENOMEM;
	n = realloc(pd->owned, (pd->nr_owned + 1) * sizeof(*n));
	if (!n) {
		free(p);
		return -ENOMEM;
	}
	pd->owned = n;
	n[pd->nr_owned++] = p;
	return 0;
}

static bool fixed_layout(const struct tk_perf_attr *a, uint32_t *before, uint32_t *after);

/*
 * Note a damaged region. One that starts where the last one ended (the
 * chunks of one broken zstd frame, a resync that stops at more damage)
 * extends it, so one damaged stretch is one warning.
 */
static int add_damage(struct tk_perfdata *pd, uint64_t off, uint64_t skipped, int64_t lost,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int add_damage(struct tk_perfdata *pd, uint64_t off, uint64_t skipped, int64_t lost,
		      const char *fmt, ...)
{
	struct tk_perfdata_damage *d, *n;
	va_list ap;

	if (pd->nr_damage) {
		d = &pd->damage[pd->nr_damage - 1];
		if (d->offset + d->skipped == off && off != 0) {
			d->skipped += skipped;
			if (lost < 0)
				d->lost_known = false;
			else
				d->lost += (uint64_t)lost;
			return 0;
		}
	}
	n = realloc(pd->damage, (pd->nr_damage + 1) * sizeof(*n));
	if (!n)
		return tk_fail(ENOMEM, "out of memory");
	pd->damage = n;
	d = &n[pd->nr_damage++];
	memset(d, 0, sizeof(*d));
	d->offset = off;
	d->skipped = skipped;
	d->lost_known = lost >= 0;
	d->lost = lost >= 0 ? (uint64_t)lost : 0;
	va_start(ap, fmt);
	vsnprintf(d->what, sizeof(d->what), fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * Salvage the failure just set by fail_at() (r, an -EBADMSG) as a damaged
 * region: its message without the "name: offset 0x...: " prefix becomes the
 * region's text. Strict readers, and other errors, keep the failure.
 */
static int salvage(struct tk_perfdata *pd, int r, uint64_t off, uint64_t skipped, int64_t lost)
{
	const char *msg = tk_errmsg(), *p;

	if (pd->strict || r != -EBADMSG)
		return r;
	p = strstr(msg, ": offset 0x");
	if (p && (p = strstr(p + 11, ": ")))
		msg = p + 2;
	return add_damage(pd, off, skipped, lost, "%s", msg);
}

static int pread_full(struct tk_perfdata *pd, void *buf, size_t len, uint64_t off)
{
	int64_t n = tk_pread_full(pd->fd, buf, len, off);

	if (n < 0)
		return tk_fail((int)-n, "%s: read at offset 0x%" PRIx64 ": %s", pd->name, off,
			       strerror((int)-n));
	if ((uint64_t)n < len)
		return fail_at(pd, off + (uint64_t)n, "unexpected end of file");
	return 0;
}

/*
 * Room for @need more bytes past end in a kept window: the bytes below the
 * caller's keep offset (and below start) go, 8-byte steps at a time so that
 * buf[i] stays aligned as file offset pos - start + i is; a window still
 * more than half full (or short of @need) grows to twice what it keeps,
 * in whole huge pages, so that no byte moves more than once on average
 * and the window stays near twice the queue's span, not up to four times
 * (kmem.data's window: 16 MiB).
 */
static int kept_room(struct tk_perfdata *pd, size_t need)
{
	uint64_t base = pd->pos - pd->start;
	size_t from = pd->start;
	uint8_t *nb;
	size_t ncap;

	if (pd->keep < pd->pos)
		from = pd->keep > base ? (size_t)(pd->keep - base) : 0;
	from &= ~(size_t)7;
	/*
	 * Room enough: the kept bytes move down only once as many lie below
	 * them, and KEPT_SLIDE at least, so that a window grown for one large
	 * round (perf's first often is) does not fault in all its huge pages
	 * as the reads go on past it.
	 */
	if (pd->cap - pd->end >= need && pd->cap - pd->end >= KEPT_READ &&
	    (from < KEPT_SLIDE || from < pd->end - from))
		return 0;
	if (from) {
		memmove(pd->buf, pd->buf + from, pd->end - from);
		pd->end -= from;
		pd->start -= from;
	}
	if (pd->cap - pd->end >= need && pd->end <= pd->cap / 2)
		return 0;
	ncap = (2 * pd->end + need + 64 + KEPT_HUGE - 1) / KEPT_HUGE * KEPT_HUGE - 64;
	nb = tk_big_grow(pd->buf, pd->end, ncap);
	if (!nb)
		return tk_fail(ENOMEM, "out of memory reading %s", pd->name);
	pd->buf = nb;
	pd->cap = ncap;
	return 0;
}

/* Make at least @need bytes available at buf[start]; returns how many are. */
static int64_t __attribute__((noinline)) in_fill_slow(struct tk_perfdata *pd, size_t need)
{
	while (pd->end - pd->start < need && !pd->eof) {
		uint64_t at = pd->pos + (pd->end - pd->start);
		size_t want;
		ssize_t n;

		if (pd->kept) {
			int r = kept_room(pd, need);

			if (r < 0)
				return r;
		} else if (pd->start > 0 && (pd->cap - pd->end < need || pd->end == pd->cap)) {
			memmove(pd->buf, pd->buf + pd->start, pd->end - pd->start);
			pd->end -= pd->start;
			pd->start = 0;
		}
		if (!pd->kept && pd->cap - pd->start < need) {
			size_t ncap = need > WINDOW_SIZE ? need : WINDOW_SIZE;
			uint8_t *nb = realloc(pd->buf, ncap);

			if (!nb)
				return tk_fail(ENOMEM, "out of memory reading %s", pd->name);
			pd->buf = nb;
			pd->cap = ncap;
		}
		want = pd->cap - pd->end;
		/* A kept window reads what the parse reaches while the cache still has it. */
		if (pd->kept && want > KEPT_READ)
			want = KEPT_READ;
		if (pd->limit != UINT64_MAX) {
			if (at >= pd->limit) {
				pd->eof = true;
				break;
			}
			if (want > pd->limit - at)
				want = (size_t)(pd->limit - at);
		}
		if (pd->seekable)
			n = pread(pd->fd, pd->buf + pd->end, want, (off_t)at);
		else
			n = read(pd->fd, pd->buf + pd->end, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return tk_fail(errno, "%s: read at offset 0x%" PRIx64 ": %s", pd->name, at,
				       strerror(errno));
		}
		if (n == 0) {
			pd->eof = true;
			break;
		}
		pd->end += (size_t)n;
	}
	return (int64_t)(pd->end - pd->start);
}

/* The bytes buffered, at least @need when the input has them: a test per record, no call. */
static inline int64_t in_fill(struct tk_perfdata *pd, size_t need)
{
	if (__builtin_expect(pd->end - pd->start >= need, 1))
		return (int64_t)(pd->end - pd->start);
	return in_fill_slow(pd, need);
}

/*
 * A mapped file is touched through a window of pages that slides with the
 * reader (map_slide()): the next MAP_AHEAD bytes are made resident in one
 * madvise(MADV_POPULATE_READ) per MAP_STEP instead of a page fault each
 * 64 KiB (a fault costs ~11 us on the 2-vCPU VM bench/README.md measures
 * on), and the pages more than MAP_LAG bytes behind are handed back to the
 * page cache (MADV_DONTNEED), which would otherwise count the whole file in
 * the resident set by the end. A caller that holds records longer says
 * from where on (tk_perfdata_keep_from(): the report's ordered queue) and
 * only pages MAP_LAG below that go. Records handed out stay readable all
 * the same: a later touch faults the page in again from the file.
 */
#define MAP_STEP  (1u << 20)
#define MAP_AHEAD (2u << 20)
#define MAP_LAG	  (2u << 20)

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels refuse it: pages fault in */
#endif

static void __attribute__((noinline)) map_slide(struct tk_perfdata *pd)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), end = pd->end, to;

	to = pd->pos + MAP_AHEAD < end ? pd->pos + MAP_AHEAD : end;
	if (to > pd->ready) {
		uint64_t from = pd->ready & ~(page - 1);

		madvise((void *)(uintptr_t)(pd->map + from), to - from, MADV_POPULATE_READ);
		pd->ready = to;
	}
	to = pd->pos < pd->keep ? pd->pos : pd->keep;
	if (to > MAP_LAG) {
		to = (to - MAP_LAG) & ~(page - 1);
		if (to > pd->dropped && madvise((void *)(uintptr_t)(pd->map + pd->dropped),
						to - pd->dropped, MADV_DONTNEED) == 0)
			pd->dropped = to;
	}
	pd->slide_at = pd->pos + MAP_STEP;
}

static inline void in_consume(struct tk_perfdata *pd, size_t n)
{
	pd->start += n;
	pd->pos += n;
	if (pd->map && pd->pos >= pd->slide_at)
		map_slide(pd);
}

/* Skip @n bytes of input (AUXTRACE data), seeking when possible. */
static int in_skip(struct tk_perfdata *pd, uint64_t n, uint64_t off)
{
	while (n > 0) {
		size_t have = pd->end - pd->start;

		if (have == 0) {
			if (pd->seekable) {
				if (pd->limit != UINT64_MAX && n > pd->limit - pd->pos)
					return fail_at(pd, off,
						       "AUXTRACE data of %" PRIu64
						       " bytes runs past the data section",
						       n);
				pd->pos += n;
				return 0;
			}
			int64_t r = in_fill(pd, 1);

			if (r < 0)
				return (int)r;
			if (r == 0)
				return fail_at(pd, off, "AUXTRACE data cut short");
			continue;
		}
		if (have > n)
			have = (size_t)n;
		in_consume(pd, have);
		n -= have;
	}
	return 0;
}

/* ---------------------------------------------------------- the evsels */

static int cmp_id(const void *a, const void *b)
{
	const struct pd_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int rebuild_idmap(struct tk_perfdata *pd)
{
	size_t n = 0, k = 0;
	struct pd_id *m;

	for (size_t i = 0; i < pd->nr_evsels; i++)
		n += pd->evsels[i]->pub.nr_ids;
	m = calloc(n ? n : 1, sizeof(*m));
	if (!m)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < pd->nr_evsels; i++)
		for (uint64_t j = 0; j < pd->evsels[i]->pub.nr_ids; j++)
			m[k++] = (struct pd_id){pd->evsels[i]->ids[j], i};
	qsort(m, n, sizeof(*m), cmp_id);
	for (size_t i = 1; i < n; i++)
		if (m[i].id == m[i - 1].id && m[i].evsel != m[i - 1].evsel)
			tk_warn("%s: id %" PRIu64 " belongs to events %zu and %zu", pd->name,
				m[i].id, m[i - 1].evsel, m[i].evsel);
	free(pd->idmap);
	pd->idmap = m;
	pd->nr_idmap = n;
	return 0;
}

static bool sample_time_at(uint64_t st, size_t *off);

static int add_evsel(struct tk_perfdata *pd, const uint8_t *attr, size_t attr_len,
		     const uint8_t *ids, uint64_t nr_ids, uint64_t attr_off, uint64_t ids_off)
{
	struct pd_evsel *e, **n;
	size_t at;

	if (nr_ids > SIZE_MAX / 8)
		return fail_at(pd, ids_off, "too many ids");
	e = calloc(1, sizeof(*e));
	if (!e)
		return tk_fail(ENOMEM, "out of memory");
	e->ids = malloc(nr_ids ? nr_ids * 8 : 1);
	n = realloc(pd->evsels, (pd->nr_evsels + 1) * sizeof(*n));
	if (!e->ids || !n) {
		free(e->ids);
		free(e);
		if (n)
			pd->evsels = n;
		return tk_fail(ENOMEM, "out of memory");
	}
	pd->evsels = n;
	if (nr_ids)
		memcpy(e->ids, ids, nr_ids * 8);
	tk_perfdata_attr_decode(attr, attr_len, &e->pub.attr);
	e->pub.ids = e->ids;
	e->pub.nr_ids = nr_ids;
	e->pub.attr_offset = attr_off;
	e->pub.ids_offset = ids_off;
	pd->evsels[pd->nr_evsels++] = e;
	/* Where note_time() finds a sample's id and time, worked out once. */
	if (sample_time_at(e->pub.attr.sample_type, &at))
		e->time_off = (uint32_t)at;
	if (pd->nr_evsels == 1) {
		uint64_t st = e->pub.attr.sample_type;

		if (st & TK_PERF_SAMPLE_IDENTIFIER)
			pd->sample_id_off = 8;
		else if (st & TK_PERF_SAMPLE_ID)
			pd->sample_id_off =
				8 + 8 * (size_t)__builtin_popcountll(
						st & (TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
						      TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ADDR));
	}
	/*
	 * A dummy event (software, PERF_COUNT_SW_DUMMY) never counts, so it
	 * never samples: perf adds one for side-band records.
	 */
	if (pd->nr_evsels == 1) {
		pd->one_layout = true;
		pd->fixed_ok = fixed_layout(&e->pub.attr, &pd->fixed_before, &pd->fixed_after);
	} else if (!(e->pub.attr.type == 1 && e->pub.attr.config == 9))
		pd->one_layout = pd->one_layout &&
				 e->pub.attr.sample_type == pd->evsels[0]->pub.attr.sample_type &&
				 e->pub.attr.read_format == pd->evsels[0]->pub.attr.read_format;
	pd->exact_ok = pd->one_layout && pd->fixed_ok;
	pd->exact_raw = pd->evsels[0]->pub.attr.sample_type & TK_PERF_SAMPLE_RAW;
	pd->exact_base = 8u + pd->fixed_before + pd->fixed_after;
	return 0;
}

static int check_evsels(struct tk_perfdata *pd)
{
	const struct tk_perf_attr *a0;

	if (pd->nr_evsels == 0)
		return 0;
	a0 = &pd->evsels[0]->pub.attr;
	for (size_t i = 1; i < pd->nr_evsels; i++) {
		const struct tk_perf_attr *a = &pd->evsels[i]->pub.attr;

		if ((a->flags ^ a0->flags) & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL) {
			uint64_t off = pd->evsels[i]->pub.attr_offset;
			int r = fail_at(pd, off, "attr %zu: sample_id_all differs from attr 0", i);

			/* Trailers are then read by each record's own attr. */
			r = salvage(pd, r, off, 0, 0);
			if (r < 0)
				return r;
		}
	}
	return rebuild_idmap(pd);
}

/* --------------------------------------------------------- the features */

static bool cur_string(struct tk_cursor *c, const char **s)
{
	uint32_t len;
	const uint8_t *p;

	if (!tk_cursor_u32(c, &len) || !tk_cursor_bytes(c, len, &p) || len == 0 ||
	    !memchr(p, 0, len))
		return false;
	*s = (const char *)p;
	return true;
}

static bool skip_strings(struct tk_cursor *c, uint64_t n)
{
	const char *s;

	for (uint64_t i = 0; i < n; i++)
		if (!cur_string(c, &s))
			return false;
	return true;
}

static bool cur_skip(struct tk_cursor *c, uint64_t n)
{
	const uint8_t *p;

	return tk_cursor_bytes(c, n, &p);
}

static int add_build_id(struct tk_perfdata *pd, int32_t pid, uint16_t misc, const uint8_t *id,
			uint8_t size, const char *name, size_t name_len)
{
	struct tk_perfdata_build_id *b, **n;
	char *fn;

	b = calloc(1, sizeof(*b));
	fn = strndup(name, name_len);
	n = realloc(pd->build_ids, (pd->nr_build_ids + 1) * sizeof(*n));
	if (n)
		pd->build_ids = n;
	if (!b || !fn || !n) {
		free(b);
		free(fn);
		return tk_fail(ENOMEM, "out of memory");
	}
	if (own(pd, fn) < 0) {
		free(b);
		return tk_fail(ENOMEM, "out of memory");
	}
	b->pid = pid;
	b->misc = misc;
	memcpy(b->id, id, 20);
	/* perf falls back to 20 bytes when the size flag is absent (perf inject). */
	b->size = (misc & 0x8000) && size <= 20 ? size : 20;
	b->filename = fn;
	pd->build_ids[pd->nr_build_ids++] = b;
	return 0;
}

/*
 * One build-id entry (BUILD_ID feature or record 67):
 * {u32 type, u16 misc, u16 size; s32 pid; u8 id[20]; u8 size; 3 reserved; name[]}.
 */
static bool parse_build_id_entry(struct tk_perfdata *pd, const uint8_t *p, size_t size, bool legacy,
				 int *err)
{
	uint16_t misc = tk_load_u16(p + 4, false);
	size_t name_at = legacy ? 32 : 36;
	const uint8_t *id = legacy ? p + 8 : p + 12;
	int32_t pid = legacy ? -1 : (int32_t)tk_load_u32(p + 8, false);
	const uint8_t *nul;

	if (size < name_at + 1)
		return false;
	nul = memchr(p + name_at, 0, size - name_at);
	if (!nul || nul == p + name_at)
		return false;
	/*
	 * A file name is text: a damaged record whose type became
	 * HEADER_BUILD_ID (a flipped bit of a SAMPLE) is not taken for one.
	 */
	for (const uint8_t *c = p + name_at; c < nul; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	*err = add_build_id(pd, pid, misc, id, legacy ? 20 : p[32], (const char *)p + name_at,
			    (size_t)(nul - (p + name_at)));
	return true;
}

static bool parse_build_ids(struct tk_perfdata *pd, const uint8_t *p, uint64_t len, int *err)
{
	uint64_t pos = 0;
	bool legacy = false;

	/* Files from before the pid field put "[kernel.kallsyms]" 4 bytes earlier. */
	if (len >= 36 + 13 && memcmp(p + 36, "nel.kallsyms]", 13) == 0)
		legacy = true;
	while (pos < len) {
		uint16_t size;

		if (len - pos < 8)
			return false;
		size = tk_load_u16(p + pos + 6, false);
		if (size < 8 || size > len - pos)
			return false;
		if (!parse_build_id_entry(pd, p + pos, size, legacy, err))
			return false;
		if (*err < 0)
			return true;
		pos += size;
	}
	return true;
}

/*
 * Decode a TRACING_DATA blob (kept by the reader until close) with the
 * tracedata codec. Return: 0; -EBADMSG when it does not fit the layout
 * (the earlier tracing data, if any, stays); -ENOMEM.
 */
static int parse_tracing(struct tk_perfdata *pd, const uint8_t *p, uint64_t len, uint64_t off)
{
	struct tk_tracedata *td = tk_tracedata_new();
	struct tk_perfdata_tracing *t = &pd->tracing;
	const char *what;
	uint64_t at;
	int r;

	if (!td)
		return -ENOMEM;
	r = tk_tracedata_parse_perf(td, p, len, &at, &what);
	if (r < 0) {
		tk_tracedata_free(td);
		return r;
	}
	tk_tracedata_free(pd->td);
	pd->td = td;
	memset(t, 0, sizeof(*t));
	t->version = td->version;
	t->big_endian = td->big_endian;
	t->long_size = td->long_size;
	t->page_size = td->page_size;
	tk_tracedata_header_page(td, &t->header_page);
	tk_tracedata_header_event(td, &t->header_event);
	tk_tracedata_kallsyms(td, &t->kallsyms);
	tk_tracedata_printk(td, &t->printk);
	tk_tracedata_cmdlines(td, &t->cmdlines);
	t->nr_ftrace = (uint32_t)td->nftrace;
	t->nr_formats = (uint32_t)(tk_tracedata_format_count(td) - td->nftrace);
	pd->tracing_blob = p;
	pd->tracing_len = len;
	pd->tracing_off = off;
	return 0;
}

static bool parse_event_desc(struct tk_perfdata *pd, struct tk_cursor *c)
{
	uint32_t nr, sz, nids;
	const uint8_t *attr;
	const char *name;

	if (!tk_cursor_u32(c, &nr) || !tk_cursor_u32(c, &sz) || sz < 64)
		return false;
	for (uint32_t i = 0; i < nr; i++) {
		if (!tk_cursor_bytes(c, sz, &attr) || !tk_cursor_u32(c, &nids) ||
		    !cur_string(c, &name) || nids > tk_cursor_left(c) / 8 ||
		    !cur_skip(c, (uint64_t)nids * 8))
			return false;
		/* perf pairs descriptions with attrs by position. */
		if (i < pd->nr_evsels && !pd->evsels[i]->pub.name)
			pd->evsels[i]->pub.name = name;
	}
	return true;
}

/*
 * The parse of one feature payload: a cursor over it, and when it does not
 * fit its layout, where (bad_at, relative to the payload) and why, for the
 * warning that names the file and offset. err is set only for allocation
 * failures.
 */
struct fparse {
	struct tk_perfdata *pd;
	struct tk_cursor c;
	size_t bad_at;
	char why[160];
	int err;
};

static bool fp_bad(struct fparse *f, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fp_bad(struct fparse *f, size_t at, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	f->bad_at = at;
	return false;
}

/*
 * n zeroed elements, owned by the reader at once (so a parse that fails
 * later leaks nothing; they are freed at close). The callers have bounded n
 * by the bytes left in the payload.
 */
static void *fp_alloc(struct fparse *f, uint64_t n, size_t size)
{
	void *p;

	if (n > SIZE_MAX / size - 1 || !(p = calloc(n ? n : 1, size)) || own(f->pd, p) < 0) {
		f->err = -ENOMEM;
		return NULL;
	}
	return p;
}

/* A u32 count of @what, entries of at least @min bytes each: checked against what is left. */
static bool fp_count(struct fparse *f, uint32_t *n, size_t min, const char *what)
{
	size_t at = f->c.pos;

	*n = 0;
	if (!tk_cursor_u32(&f->c, n))
		return fp_bad(f, at, "the count of %s runs past the section end", what);
	if (*n > tk_cursor_left(&f->c) / min)
		return fp_bad(f, at, "%" PRIu32 " %s do not fit in the %zu bytes left", *n, what,
			      tk_cursor_left(&f->c));
	return true;
}

static bool fp_string(struct fparse *f, const char **s, const char *what, uint64_t i)
{
	size_t at = f->c.pos;

	if (!cur_string(&f->c, s))
		return fp_bad(f, at, "%s %" PRIu64 " is not a string that ends inside the section",
			      what, i);
	return true;
}

/* u32 n, then n strings: the sibling lists of CPU_TOPOLOGY. */
static bool fp_strings(struct fparse *f, uint32_t *n, const char *const **out, const char *what)
{
	const char **v;

	if (!fp_count(f, n, 5, what) || !(v = fp_alloc(f, *n, sizeof(*v))))
		return false;
	for (uint32_t i = 0; i < *n; i++)
		if (!fp_string(f, &v[i], what, i))
			return false;
	*out = v;
	return true;
}

/*
 * CPU_TOPOLOGY: u32 n + n strings (package siblings), u32 n + n strings
 * (core siblings); then, unless the section ends (old perf), per CPU
 * {u32 core_id, u32 socket_id}; then, unless it ends, u32 n + n strings
 * (die siblings) and per CPU u32 die_id. "Per CPU" is NRCPUS' avail count,
 * which perf writes (bit 7) before this (bit 13), in pipe mode too.
 */
static bool parse_cpu_topology(struct fparse *f)
{
	struct tk_perfdata_host *h = &f->pd->host;
	struct tk_perfdata_cpu_topology *t = fp_alloc(f, 1, sizeof(*t));
	struct tk_perfdata_cpu *cpus;
	size_t at;

	if (!t || !fp_strings(f, &t->nr_sockets, &t->sockets, "sibling socket lists") ||
	    !fp_strings(f, &t->nr_threads, &t->threads, "sibling thread lists"))
		return false;
	if (tk_cursor_left(&f->c) == 0)
		goto done;
	at = f->c.pos;
	if (!h->has_nrcpus) {
		/* Without the count the rest cannot be split: keep the lists. */
		tk_warn("%s: offset 0x%" PRIx64 ": CPU_TOPOLOGY per-CPU ids skipped: no NRCPUS "
			"feature says how many CPUs there are",
			f->pd->name, tk_cursor_offset(&f->c));
		goto done;
	}
	if (h->nr_cpus_avail > tk_cursor_left(&f->c) / 8)
		return fp_bad(f, at,
			      "core and socket ids of %" PRIu32 " CPUs do not fit in the %zu "
			      "bytes left",
			      h->nr_cpus_avail, tk_cursor_left(&f->c));
	if (!(cpus = fp_alloc(f, h->nr_cpus_avail, sizeof(*cpus))))
		return false;
	for (uint32_t i = 0; i < h->nr_cpus_avail; i++) {
		tk_cursor_u32(&f->c, &cpus[i].core_id);
		tk_cursor_u32(&f->c, &cpus[i].socket_id);
	}
	t->nr_cpus = h->nr_cpus_avail;
	t->cpus = cpus;
	if (tk_cursor_left(&f->c) == 0)
		goto done;
	if (!fp_strings(f, &t->nr_dies, &t->dies, "sibling die lists"))
		return false;
	at = f->c.pos;
	if (t->nr_cpus > tk_cursor_left(&f->c) / 4)
		return fp_bad(f, at, "die ids of %" PRIu32 " CPUs do not fit in the %zu bytes left",
			      t->nr_cpus, tk_cursor_left(&f->c));
	for (uint32_t i = 0; i < t->nr_cpus; i++)
		tk_cursor_u32(&f->c, &cpus[i].die_id);
	t->has_dies = true;
done:
	h->cpu_topology = t;
	return true;
}

/* NUMA_TOPOLOGY: u32 nr; per node: u32 node, u64 total kB, u64 free kB, string cpus. */
static bool parse_numa(struct fparse *f)
{
	struct tk_perfdata_numa_node *n;
	uint32_t nr;

	if (!fp_count(f, &nr, 4 + 16 + 5, "NUMA nodes") || !(n = fp_alloc(f, nr, sizeof(*n))))
		return false;
	for (uint32_t i = 0; i < nr; i++) {
		size_t at = f->c.pos;

		if (!tk_cursor_u32(&f->c, &n[i].node) ||
		    !tk_cursor_u64(&f->c, &n[i].mem_total_kb) ||
		    !tk_cursor_u64(&f->c, &n[i].mem_free_kb))
			return fp_bad(f, at, "NUMA node %" PRIu32 " runs past the section end", i);
		if (!fp_string(f, &n[i].cpus, "cpu list of NUMA node", i))
			return false;
	}
	f->pd->host.nr_numa_nodes = nr;
	f->pd->host.numa_nodes = n;
	return true;
}

/* GROUP_DESC: u32 nr; per group: string name, u32 leader_idx, u32 nr_members. */
static bool parse_group_desc(struct fparse *f)
{
	struct tk_perfdata_group *g;
	uint32_t nr;

	if (!fp_count(f, &nr, 5 + 8, "groups") || !(g = fp_alloc(f, nr, sizeof(*g))))
		return false;
	for (uint32_t i = 0; i < nr; i++) {
		size_t at;

		if (!fp_string(f, &g[i].name, "name of group", i))
			return false;
		at = f->c.pos;
		if (!tk_cursor_u32(&f->c, &g[i].leader_idx) ||
		    !tk_cursor_u32(&f->c, &g[i].nr_members))
			return fp_bad(f, at, "group %" PRIu32 " runs past the section end", i);
	}
	f->pd->host.nr_groups = nr;
	f->pd->host.groups = g;
	return true;
}

/* AUXTRACE: u64 nr; {u64 file_offset, u64 size} x nr. */
static bool parse_auxtrace(struct fparse *f)
{
	struct tk_perfdata_auxtrace_entry *e;
	uint64_t nr;

	if (!tk_cursor_u64(&f->c, &nr))
		return fp_bad(f, 0,
			      "the count of AUXTRACE index entries runs past the section end");
	if (nr > tk_cursor_left(&f->c) / 16)
		return fp_bad(f, 0,
			      "%" PRIu64 " AUXTRACE index entries do not fit in the %zu bytes "
			      "left",
			      nr, tk_cursor_left(&f->c));
	if (!(e = fp_alloc(f, nr, sizeof(*e))))
		return false;
	for (uint64_t i = 0; i < nr; i++) {
		tk_cursor_u64(&f->c, &e[i].file_offset);
		tk_cursor_u64(&f->c, &e[i].size);
	}
	f->pd->host.has_auxtrace = true;
	f->pd->host.nr_auxtrace = nr;
	f->pd->host.auxtrace = e;
	return true;
}

/* u32 nr; nr x (string name, string value): one PMU's caps, as both caps features store them. */
static bool parse_caps(struct fparse *f, struct tk_perfdata_pmu_caps *pc, const char *pmu)
{
	struct tk_perfdata_pmu_cap *cap;

	if (!fp_count(f, &pc->nr_caps, 10, "PMU capabilities") ||
	    !(cap = fp_alloc(f, pc->nr_caps, sizeof(*cap))))
		return false;
	for (uint32_t i = 0; i < pc->nr_caps; i++)
		if (!fp_string(f, &cap[i].name, "name of capability", i) ||
		    !fp_string(f, &cap[i].value, "value of capability", i))
			return false;
	pc->pmu = pmu;
	pc->caps = cap;
	return true;
}

/* CPU_PMU_CAPS: the caps of the "cpu" PMU (no name stored). */
static bool parse_cpu_pmu_caps(struct fparse *f)
{
	struct tk_perfdata_pmu_caps *pc = fp_alloc(f, 1, sizeof(*pc));

	if (!pc || !parse_caps(f, pc, "cpu"))
		return false;
	f->pd->host.cpu_pmu_caps = pc;
	return true;
}

/* PMU_CAPS: u32 nr_pmu; per PMU: its caps, then string pmu_name. */
static bool parse_pmu_caps(struct fparse *f)
{
	struct tk_perfdata_pmu_caps *pc;
	uint32_t nr;

	if (!fp_count(f, &nr, 4 + 5, "PMUs") || !(pc = fp_alloc(f, nr, sizeof(*pc))))
		return false;
	for (uint32_t i = 0; i < nr; i++)
		if (!parse_caps(f, &pc[i], NULL) || !fp_string(f, &pc[i].pmu, "name of PMU", i))
			return false;
	f->pd->host.nr_pmu_caps = nr;
	f->pd->host.pmu_caps = pc;
	return true;
}

/* HYBRID_TOPOLOGY: u32 nr; per node: string pmu_name, string cpus. */
static bool parse_hybrid(struct fparse *f)
{
	struct tk_perfdata_hybrid_node *n;
	uint32_t nr;

	if (!fp_count(f, &nr, 10, "hybrid nodes") || !(n = fp_alloc(f, nr, sizeof(*n))))
		return false;
	for (uint32_t i = 0; i < nr; i++)
		if (!fp_string(f, &n[i].pmu, "PMU name of hybrid node", i) ||
		    !fp_string(f, &n[i].cpus, "cpu list of hybrid node", i))
			return false;
	f->pd->host.nr_hybrid_nodes = nr;
	f->pd->host.hybrid_nodes = n;
	return true;
}

/*
 * struct bpf_prog_info (UAPI; 232 bytes in 6.1) offsets used here, and the
 * bits of perf's "arrays" word (enum perf_bpil_array_types) that say which
 * pointer fields hold offsets into the data that follows the info.
 */
enum {
	BPI_TYPE = 0,
	BPI_ID = 4,
	BPI_TAG = 8,
	BPI_JITED_LEN = 16,
	BPI_XLATED_LEN = 20,
	BPI_NAME = 64,
	BPI_NR_JITED_KSYMS = 104,
	BPI_NR_JITED_FUNC_LENS = 108,
	BPI_JITED_KSYMS = 112,
	BPI_JITED_FUNC_LENS = 120,
	BPI_BTF_ID = 128,
	BPI_FUNC_INFO_REC_SIZE = 132,
	BPI_FUNC_INFO = 136,
	BPI_NR_FUNC_INFO = 144,
	BPI_NR_PROG_TAGS = 180,
	BPI_PROG_TAGS = 184,
	BPIL_JITED_KSYMS = 3,
	BPIL_JITED_FUNC_LENS = 4,
	BPIL_FUNC_INFO = 5,
	BPIL_PROG_TAGS = 8,
};

/* A field of a bpf_prog_info of @len bytes; perf reads fields past its end as zero. */
static uint64_t bpi_load(const uint8_t *info, uint32_t len, uint32_t off, int size)
{
	if ((uint64_t)off + (uint64_t)size > len)
		return 0;
	return size == 4 ? tk_load_u32(info + off, false) : tk_load_u64(info + off, false);
}

/*
 * Where array @bit of @nr elements of @esize bytes lies in the program's
 * data: its offset is stored in the info field @field. False when the array
 * is absent or does not lie inside the data.
 */
static bool bpi_array(const uint8_t *info, uint32_t info_len, uint64_t arrays, uint32_t data_len,
		      int bit, uint32_t field, uint64_t nr, uint64_t esize, uint64_t *off)
{
	if (!(arrays >> bit & 1))
		return false;
	*off = bpi_load(info, info_len, field, 8);
	return *off <= data_len && nr <= (data_len - *off) / esize;
}

/*
 * The jited functions of one program: nr_jited_ksyms of them, when the
 * symbol, length and tag arrays agree in count (perf prints nothing
 * otherwise). An array that is announced but lies outside the program's
 * data is a malformed section.
 */
static bool parse_bpf_funcs(struct fparse *f, struct tk_perfdata_bpf_prog *bp, const uint8_t *info,
			    const uint8_t *data, size_t at)
{
	uint32_t n = (uint32_t)bpi_load(info, bp->info_len, BPI_NR_JITED_KSYMS, 4);
	uint32_t nfi = (uint32_t)bpi_load(info, bp->info_len, BPI_NR_FUNC_INFO, 4);
	uint32_t fi_size = (uint32_t)bpi_load(info, bp->info_len, BPI_FUNC_INFO_REC_SIZE, 4);
	uint64_t ksyms, lens, tags, finfo;
	struct tk_perfdata_bpf_func *fn;

	if (n == 0 || n != bpi_load(info, bp->info_len, BPI_NR_JITED_FUNC_LENS, 4) ||
	    n != bpi_load(info, bp->info_len, BPI_NR_PROG_TAGS, 4))
		return true;
	if (!bpi_array(info, bp->info_len, bp->arrays, bp->data_len, BPIL_JITED_KSYMS,
		       BPI_JITED_KSYMS, n, 8, &ksyms) ||
	    !bpi_array(info, bp->info_len, bp->arrays, bp->data_len, BPIL_JITED_FUNC_LENS,
		       BPI_JITED_FUNC_LENS, n, 4, &lens) ||
	    !bpi_array(info, bp->info_len, bp->arrays, bp->data_len, BPIL_PROG_TAGS, BPI_PROG_TAGS,
		       n, 8, &tags))
		return fp_bad(f, at,
			      "BPF program %" PRIu32 ": its %" PRIu32 " function addresses, "
			      "lengths or tags lie outside its %" PRIu32 " bytes of data",
			      bp->id, n, bp->data_len);
	/* Function info (BTF type ids) is optional; ignore it when it does not fit. */
	if (nfi != n || fi_size < 8 ||
	    !bpi_array(info, bp->info_len, bp->arrays, bp->data_len, BPIL_FUNC_INFO, BPI_FUNC_INFO,
		       n, fi_size, &finfo))
		finfo = UINT64_MAX;
	if (!(fn = fp_alloc(f, n, sizeof(*fn))))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		fn[i].addr = tk_load_u64(data + ksyms + 8ull * i, false);
		fn[i].len = tk_load_u32(data + lens + 4ull * i, false);
		memcpy(fn[i].tag, data + tags + 8ull * i, 8);
		/* bpf_func_info: {u32 insn_off, u32 type_id} */
		if (finfo != UINT64_MAX)
			fn[i].btf_type_id =
				tk_load_u32(data + finfo + (uint64_t)fi_size * i + 4, false);
	}
	bp->nr_funcs = n;
	bp->funcs = fn;
	return true;
}

/*
 * BPF_PROG_INFO: u32 count; per program: u32 info_len, u32 data_len,
 * u64 arrays, info[info_len] (struct bpf_prog_info), data[data_len] (the
 * arrays, their pointer fields in info turned into offsets into data).
 */
static bool parse_bpf_prog_info(struct fparse *f)
{
	struct tk_perfdata_bpf_prog *bp;
	uint32_t nr;

	if (!fp_count(f, &nr, 16, "BPF programs") || !(bp = fp_alloc(f, nr, sizeof(*bp))))
		return false;
	for (uint32_t i = 0; i < nr; i++) {
		const uint8_t *info, *data;
		size_t at = f->c.pos;

		if (!tk_cursor_u32(&f->c, &bp[i].info_len) ||
		    !tk_cursor_u32(&f->c, &bp[i].data_len) ||
		    !tk_cursor_u64(&f->c, &bp[i].arrays) ||
		    !tk_cursor_bytes(&f->c, bp[i].info_len, &info) ||
		    !tk_cursor_bytes(&f->c, bp[i].data_len, &data))
			return fp_bad(f, at,
				      "BPF program %" PRIu32 " (info %" PRIu32 " + data %" PRIu32
				      " bytes) runs past the section end",
				      i, bp[i].info_len, bp[i].data_len);
		bp[i].type = (uint32_t)bpi_load(info, bp[i].info_len, BPI_TYPE, 4);
		bp[i].id = (uint32_t)bpi_load(info, bp[i].info_len, BPI_ID, 4);
		if (bp[i].info_len >= BPI_TAG + 8)
			memcpy(bp[i].tag, info + BPI_TAG, 8);
		if (bp[i].info_len >= BPI_NAME + 16)
			memcpy(bp[i].name, info + BPI_NAME, 16);
		bp[i].jited_prog_len = (uint32_t)bpi_load(info, bp[i].info_len, BPI_JITED_LEN, 4);
		bp[i].xlated_prog_len = (uint32_t)bpi_load(info, bp[i].info_len, BPI_XLATED_LEN, 4);
		bp[i].btf_id = (uint32_t)bpi_load(info, bp[i].info_len, BPI_BTF_ID, 4);
		if (!parse_bpf_funcs(f, &bp[i], info, data, at))
			return false;
	}
	f->pd->host.nr_bpf_progs = nr;
	f->pd->host.bpf_progs = bp;
	return true;
}

/* BPF_BTF: u32 count; per entry: u32 id, u32 size, data[size]. */
static bool parse_bpf_btf(struct fparse *f)
{
	struct tk_perfdata_bpf_btf *b;
	uint32_t nr;

	if (!fp_count(f, &nr, 8, "BTF entries") || !(b = fp_alloc(f, nr, sizeof(*b))))
		return false;
	for (uint32_t i = 0; i < nr; i++) {
		const uint8_t *p;
		size_t at = f->c.pos;

		if (!tk_cursor_u32(&f->c, &b[i].id) || !tk_cursor_u32(&f->c, &b[i].size) ||
		    !tk_cursor_bytes(&f->c, b[i].size, &p))
			return fp_bad(f, at,
				      "BTF entry %" PRIu32 " (%" PRIu32 " bytes) runs past the "
				      "section end",
				      i, b[i].size);
		b[i].data = p;
	}
	f->pd->host.nr_bpf_btfs = nr;
	f->pd->host.bpf_btfs = b;
	return true;
}

/*
 * The types of a BTF blob, for naming BPF functions. BTF (kernel
 * Documentation/bpf/btf.rst): header {u16 magic 0xeb9f, u8 version,
 * u8 flags, u32 hdr_len, u32 type_off, type_len, str_off, str_len}; types
 * numbered from 1, each {u32 name_off, u32 info (kind in bits 24-28, vlen
 * in 0-15), u32 size/type} plus a tail that depends on the kind. Types can
 * only be found by walking them, so a blob is walked once into a table of
 * where each type starts (at most one entry per 12 bytes of it).
 */
struct btf_types {
	const uint8_t *p;
	const char *strs;
	uint32_t str_len;
	uint32_t *off; /* off[id - 1]: where type id starts in p */
	uint32_t n;
	bool done; /* walked (n is 0 when the blob is not BTF) */
};

/* Walk @b's blob; false only when out of memory. A blob that is not BTF of this byte order gets n =
 * 0. */
static bool btf_index_types(struct btf_types *b, const uint8_t *p, uint32_t len)
{
	uint32_t hdr, toff, tlen, soff, slen;
	uint64_t pos, end;

	b->done = true;
	b->p = p;
	if (len < 24 || tk_load_u16(p, false) != 0xeb9f)
		return true;
	hdr = tk_load_u32(p + 4, false);
	toff = tk_load_u32(p + 8, false);
	tlen = tk_load_u32(p + 12, false);
	soff = tk_load_u32(p + 16, false);
	slen = tk_load_u32(p + 20, false);
	if (hdr < 24 || (uint64_t)hdr + toff + tlen > len || (uint64_t)hdr + soff + slen > len)
		return true;
	b->strs = (const char *)p + hdr + soff;
	b->str_len = slen;
	b->off = malloc(((size_t)tlen / 12 + 1) * sizeof(*b->off));
	if (!b->off)
		return false;
	pos = (uint64_t)hdr + toff;
	end = pos + tlen;
	while (end - pos >= 12) {
		uint32_t info = tk_load_u32(p + pos + 4, false), vlen = info & 0xffff;
		uint64_t tail;

		switch ((info >> 24) & 0x1f) {
		case 1:
		case 14:
		case 17:
			tail = 4;
			break; /* INT, VAR, DECL_TAG */
		case 3:
			tail = 12;
			break; /* ARRAY */
		case 4:
		case 5:
		case 15:
		case 19:
			tail = 12ull * vlen;
			break; /* STRUCT UNION DATASEC ENUM64 */
		case 6:
		case 13:
			tail = 8ull * vlen;
			break; /* ENUM, FUNC_PROTO */
		case 2:
		case 7:
		case 8:
		case 9:
		case 10:
		case 11:
		case 12:
		case 16:
		case 18:
			tail = 0; /* PTR FWD TYPEDEF ... */
			break;
		default:
			return true; /* a kind we do not know: the types after it cannot be found */
		}
		if (tail > end - pos - 12)
			return true;
		b->off[b->n++] = (uint32_t)pos;
		pos += 12 + tail;
	}
	return true;
}

/* The name of type @id, or NULL when the blob has no such type or its name is not a string. */
static const char *btf_type_name(const struct btf_types *b, uint32_t id)
{
	uint32_t name_off;

	if (id == 0 || id > b->n)
		return NULL;
	name_off = tk_load_u32(b->p + b->off[id - 1], false);
	if (name_off >= b->str_len || !memchr(b->strs + name_off, 0, b->str_len - name_off))
		return NULL;
	return b->strs + name_off;
}

static int cmp_btf_by_id(const void *a, const void *b)
{
	const struct tk_perfdata_bpf_btf *const *x = a, *const *y = b;

	if ((*x)->id != (*y)->id)
		return (*x)->id < (*y)->id ? -1 : 1;
	return *x < *y ? -1 : *x > *y; /* the first of equal ids wins, as in perf's tree */
}

/*
 * Name each BPF function from its program's BTF, as perf does, once both
 * features are known (BPF_BTF comes after BPF_PROG_INFO in bit order). The
 * BTF entries are sorted by id and each blob is walked at most once, so a
 * hostile file costs time linear in its size. Return: 0 or -ENOMEM.
 */
static int resolve_bpf_names(struct tk_perfdata *pd)
{
	const struct tk_perfdata_host *h = &pd->host;
	const struct tk_perfdata_bpf_btf **by_id;
	struct btf_types *types;
	int r = 0;

	if (h->nr_bpf_progs == 0 || h->nr_bpf_btfs == 0)
		return 0;
	by_id = malloc(h->nr_bpf_btfs * sizeof(*by_id));
	types = calloc(h->nr_bpf_btfs, sizeof(*types));
	if (!by_id || !types) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t j = 0; j < h->nr_bpf_btfs; j++)
		by_id[j] = &h->bpf_btfs[j];
	qsort(by_id, h->nr_bpf_btfs, sizeof(*by_id), cmp_btf_by_id);
	for (uint32_t i = 0; i < h->nr_bpf_progs && r == 0; i++) {
		const struct tk_perfdata_bpf_prog *bp = &h->bpf_progs[i];
		/* Our own allocation (fp_alloc), handed out as const. */
		struct tk_perfdata_bpf_func *fn = (struct tk_perfdata_bpf_func *)bp->funcs;
		size_t lo = 0, hi = h->nr_bpf_btfs;

		if (!bp->btf_id || !bp->nr_funcs)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (by_id[mid]->id < bp->btf_id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == h->nr_bpf_btfs || by_id[lo]->id != bp->btf_id)
			continue;
		if (!types[lo].done &&
		    !btf_index_types(&types[lo], by_id[lo]->data, by_id[lo]->size))
			r = -ENOMEM;
		for (uint32_t k = 0; k < bp->nr_funcs && r == 0; k++)
			fn[k].btf_name = btf_type_name(&types[lo], fn[k].btf_type_id);
	}
out:
	for (uint32_t j = 0; types && j < h->nr_bpf_btfs; j++)
		free(types[j].off);
	free(types);
	free(by_id);
	return r;
}

/*
 * Parse (validate and decode) one feature payload. Returns false when the
 * payload does not fit its layout, with f->bad_at and f->why saying where
 * and why when known; f->err is set only for allocation errors.
 */
static bool parse_feature(struct fparse *f, uint32_t id, const uint8_t *p, uint64_t len,
			  uint64_t off)
{
	struct tk_perfdata *pd = f->pd;
	struct tk_perfdata_host *h = &pd->host;
	struct tk_cursor *c = &f->c;
	uint32_t a, b, nr;
	const char **sp = NULL;

	tk_cursor_init(c, p, len, off, false);
	switch (id) {
	case TK_PERF_FEAT_TRACING_DATA: {
		int r = parse_tracing(pd, p, len, off);

		if (r == -ENOMEM)
			f->err = r;
		return r == 0;
	}
	case TK_PERF_FEAT_BUILD_ID:
		return parse_build_ids(pd, p, len, &f->err);
	case TK_PERF_FEAT_HOSTNAME:
		sp = &h->hostname;
		break;
	case TK_PERF_FEAT_OSRELEASE:
		sp = &h->osrelease;
		break;
	case TK_PERF_FEAT_VERSION:
		sp = &h->version;
		break;
	case TK_PERF_FEAT_ARCH:
		sp = &h->arch;
		break;
	case TK_PERF_FEAT_CPUDESC:
		sp = &h->cpudesc;
		break;
	case TK_PERF_FEAT_CPUID:
		sp = &h->cpuid;
		break;
	case TK_PERF_FEAT_NRCPUS:
		if (!tk_cursor_u32(c, &a) || !tk_cursor_u32(c, &b))
			return false;
		h->has_nrcpus = true;
		h->nr_cpus_avail = a;
		h->nr_cpus_online = b;
		return true;
	case TK_PERF_FEAT_TOTAL_MEM:
		if (!tk_cursor_u64(c, &h->total_mem_kb))
			return false;
		h->has_total_mem = true;
		return true;
	case TK_PERF_FEAT_CMDLINE: {
		const char **argv;

		if (!fp_count(f, &nr, 5, "words"))
			return false;
		argv = fp_alloc(f, (uint64_t)nr + 1, sizeof(*argv));
		if (!argv)
			return true; /* f->err says ENOMEM */
		for (uint32_t i = 0; i < nr; i++) {
			if (!cur_string(c, &argv[i]))
				return false;
		}
		h->cmdline_argc = nr;
		h->cmdline_argv = argv;
		return true;
	}
	case TK_PERF_FEAT_EVENT_DESC:
		return parse_event_desc(pd, c);
	case TK_PERF_FEAT_CPU_TOPOLOGY:
		return parse_cpu_topology(f);
	case TK_PERF_FEAT_NUMA_TOPOLOGY:
		return parse_numa(f);
	case TK_PERF_FEAT_BRANCH_STACK:
		/* Flags: perf writes no payload; any bytes are skipped. */
		h->has_branch_stack = true;
		return true;
	case TK_PERF_FEAT_STAT:
		h->has_stat = true;
		return true;
	case TK_PERF_FEAT_PMU_MAPPINGS:
		if (!tk_cursor_u32(c, &nr))
			return false;
		for (uint32_t i = 0; i < nr; i++)
			if (!tk_cursor_u32(c, &a) || !skip_strings(c, 1))
				return false;
		h->nr_pmu_mappings = nr;
		return true;
	case TK_PERF_FEAT_GROUP_DESC:
		return parse_group_desc(f);
	case TK_PERF_FEAT_AUXTRACE:
		return parse_auxtrace(f);
	case TK_PERF_FEAT_CACHE:
		if (!tk_cursor_u32(c, &a) || a != 1 || !tk_cursor_u32(c, &nr))
			return false;
		for (uint32_t i = 0; i < nr; i++)
			if (!cur_skip(c, 16) || !skip_strings(c, 3))
				return false;
		h->nr_cache_levels = nr;
		return true;
	case TK_PERF_FEAT_SAMPLE_TIME:
		if (!tk_cursor_u64(c, &h->sample_time_first) ||
		    !tk_cursor_u64(c, &h->sample_time_last))
			return false;
		h->has_sample_time = true;
		return true;
	case TK_PERF_FEAT_MEM_TOPOLOGY: {
		uint64_t ver, bs, nodes, node, size, nbits;

		if (!tk_cursor_u64(c, &ver) || !tk_cursor_u64(c, &bs) ||
		    !tk_cursor_u64(c, &nodes) || nodes > tk_cursor_left(c) / 24)
			return false;
		for (uint64_t i = 0; i < nodes; i++)
			if (!tk_cursor_u64(c, &node) || !tk_cursor_u64(c, &size) ||
			    !tk_cursor_u64(c, &nbits) ||
			    !cur_skip(c, ((nbits / 64) + !!(nbits % 64)) * 8))
				return false;
		return true;
	}
	case TK_PERF_FEAT_CLOCKID:
		if (!tk_cursor_u64(c, &h->clockid_res_ns))
			return false;
		h->has_clockid = true;
		return true;
	case TK_PERF_FEAT_DIR_FORMAT:
		if (!tk_cursor_u64(c, &h->dir_format_version))
			return false;
		h->has_dir_format = true;
		return true;
	case TK_PERF_FEAT_BPF_PROG_INFO:
		if (!parse_bpf_prog_info(f))
			return false;
		f->err = resolve_bpf_names(pd);
		return true;
	case TK_PERF_FEAT_BPF_BTF:
		if (!parse_bpf_btf(f))
			return false;
		f->err = resolve_bpf_names(pd);
		return true;
	case TK_PERF_FEAT_COMPRESSED:
		if (!tk_cursor_u32(c, &h->comp_version) || !tk_cursor_u32(c, &h->comp_type) ||
		    !tk_cursor_u32(c, &h->comp_level) || !tk_cursor_u32(c, &h->comp_ratio) ||
		    !tk_cursor_u32(c, &h->comp_mmap_len))
			return false;
		h->has_compressed = true;
		return true;
	case TK_PERF_FEAT_CPU_PMU_CAPS:
		return parse_cpu_pmu_caps(f);
	case TK_PERF_FEAT_HYBRID_TOPOLOGY:
		return parse_hybrid(f);
	case TK_PERF_FEAT_CLOCK_DATA:
		if (!tk_cursor_u32(c, &h->clock_data_version) ||
		    !tk_cursor_u32(c, &h->clock_data_clockid) ||
		    !tk_cursor_u64(c, &h->clock_tod_ns) || !tk_cursor_u64(c, &h->clock_clockid_ns))
			return false;
		h->has_clock_data = true;
		return true;
	case TK_PERF_FEAT_PMU_CAPS:
		return parse_pmu_caps(f);
	default:
		return true;
	}
	/* The string features. */
	if (!cur_string(c, sp))
		return false;
	return true;
}

static bool has_tracepoint(const struct tk_perfdata *pd)
{
	for (size_t i = 0; i < pd->nr_evsels; i++)
		if (pd->evsels[i]->pub.attr.type == 2)
			return true;
	return false;
}

/*
 * Take ownership of @data (malloc'ed payload of @size bytes at @off) as
 * feature @id. @id_off is where the file says the feature is there: the
 * word of the header's feature bitmap that holds its bit, or the id field
 * of a pipe-mode HEADER_FEATURE record; an unknown feature is reported there.
 */
static int add_feature(struct tk_perfdata *pd, uint32_t id, uint64_t id_off, uint64_t off,
		       uint8_t *data, uint64_t size)
{
	struct tk_perfdata_feature *f, **n;
	struct fparse fp = {.pd = pd};

	if (data && own(pd, data) < 0)
		return tk_fail(ENOMEM, "out of memory");
	f = calloc(1, sizeof(*f));
	n = realloc(pd->features, (pd->nr_features + 1) * sizeof(*n));
	if (n)
		pd->features = n;
	if (!f || !n) {
		free(f);
		return tk_fail(ENOMEM, "out of memory");
	}
	f->id = id;
	f->offset = off;
	f->size = size;
	f->data = data;
	pd->features[pd->nr_features++] = f;
	/*
	 * Bit 0 is perf's HEADER_RESERVED, which perf reads nothing from;
	 * tracekit's writer sets it in the table a recording commits while it
	 * runs (perfdata-write.c), so a killed recording has it: not news.
	 */
	if (id == 0)
		return 0;
	if (id >= TK_PERF_FEAT_LAST) {
		tk_warn("%s: offset 0x%" PRIx64 ": unknown feature %u skipped (%" PRIu64
			" bytes at 0x%" PRIx64 ")",
			pd->name, id_off, id, size, off);
		return 0;
	}
	f->valid = parse_feature(&fp, id, data ? data : (const uint8_t *)"", size, off);
	if (fp.err < 0)
		return tk_fail(ENOMEM, "out of memory");
	if (!f->valid) {
		if (id == TK_PERF_FEAT_TRACING_DATA && has_tracepoint(pd))
			/* Salvaging, the samples print unnamed, as without the feature. */
			return salvage(pd,
				       fail_at(pd, off,
					       "feature TRACING_DATA (%" PRIu64
					       " bytes) is malformed and the file has tracepoint "
					       "events",
					       size),
				       off, size, 0);
		/*
		 * A payload that does not parse loses no record: it stays a
		 * warning (exit 0), salvaging or not, as before issue 21.
		 */
		if (fp.why[0])
			tk_warn("%s: offset 0x%" PRIx64 ": feature %s (%" PRIu64
				" bytes at 0x%" PRIx64 ") is malformed: %s: skipped",
				pd->name, off + fp.bad_at, tk_perfdata_feature_name(id), size, off,
				fp.why);
		else
			tk_warn("%s: offset 0x%" PRIx64 ": feature %s (%" PRIu64
				" bytes) is malformed: skipped",
				pd->name, off, tk_perfdata_feature_name(id), size);
	}
	return 0;
}

/* ------------------------------------------------------------- file mode */

static int read_file_header(struct tk_perfdata *pd, const uint8_t *h, uint64_t hsize)
{
	struct tk_perfdata_info *in = &pd->info;
	uint64_t fsize = in->file_size;

	in->header_size = hsize;
	in->attr_size = tk_load_u64(h + 16, false);
	in->attrs_offset = tk_load_u64(h + 24, false);
	in->attrs_size = tk_load_u64(h + 32, false);
	in->data_offset = tk_load_u64(h + 40, false);
	in->data_size = tk_load_u64(h + 48, false);
	if (hsize >= TK_PERF_HEADER_SIZE)
		for (int i = 0; i < 4; i++)
			in->features[i] = tk_load_u64(h + 72 + 8 * i, false);

	if (in->attr_size < 64 + 16 || in->attr_size > 4096)
		return fail_at(pd, 16, "attr_size %" PRIu64 " is not in 80..4096", in->attr_size);
	if (in->attrs_size % in->attr_size)
		return fail_at(pd, 32,
			       "attrs size %" PRIu64 " is not a multiple of attr_size %" PRIu64,
			       in->attrs_size, in->attr_size);
	if (in->attrs_offset < hsize || in->attrs_offset > fsize ||
	    in->attrs_size > fsize - in->attrs_offset)
		return fail_at(pd, 24,
			       "attrs {0x%" PRIx64 ", %" PRIu64
			       "} lie outside the file (size %" PRIu64 ")",
			       in->attrs_offset, in->attrs_size, fsize);
	if (in->data_offset < hsize || in->data_offset > fsize)
		return fail_at(pd, 40,
			       "data offset 0x%" PRIx64 " lies outside the file (size %" PRIu64 ")",
			       in->data_offset, fsize);
	if (in->attrs_size && in->attrs_offset < in->data_offset + in->data_size &&
	    in->data_offset < in->attrs_offset + in->attrs_size && in->data_size &&
	    in->data_size <= fsize - in->data_offset)
		return fail_at(pd, 24,
			       "attrs {0x%" PRIx64 ", %" PRIu64 "} overlap data {0x%" PRIx64
			       ", %" PRIu64 "}",
			       in->attrs_offset, in->attrs_size, in->data_offset, in->data_size);
	if (in->data_size && in->data_size > fsize - in->data_offset && !pd->strict) {
		/*
		 * perf writes the size at exit, so a size past the end is a
		 * file cut short after a finished recording: records and
		 * features beyond the end are lost, how many is unknown.
		 */
		in->data_size_repaired = true;
		in->data_end = fsize;
		return add_damage(pd, fsize, in->data_offset + in->data_size - fsize, -1,
				  "data section of %" PRIu64 " bytes at 0x%" PRIx64
				  " runs past the end of the file (size %" PRIu64
				  "): file cut short, read to its last complete record",
				  in->data_size, in->data_offset, fsize);
	}
	if (in->data_size == 0 || in->data_size > fsize - in->data_offset) {
		tk_warn("%s: data size %" PRIu64 " at offset 0x30 %s (recorder killed?): reading "
			"records up to the last complete one, features ignored",
			pd->name, in->data_size,
			in->data_size ? "runs past the end of the file" : "is 0");
		in->data_size_repaired = true;
		in->data_end = fsize;
	} else {
		in->data_end = in->data_offset + in->data_size;
	}
	return 0;
}

static int read_attrs(struct tk_perfdata *pd)
{
	struct tk_perfdata_info *in = &pd->info;
	uint64_t nr = in->attrs_size / in->attr_size;
	uint8_t *ent = malloc(in->attr_size);
	int r = 0;

	if (!ent)
		return tk_fail(ENOMEM, "out of memory");
	for (uint64_t i = 0; i < nr && r == 0; i++) {
		uint64_t off = in->attrs_offset + i * in->attr_size;
		uint64_t alen = in->attr_size - 16, ids_off, ids_size;
		uint32_t asz;
		uint8_t *ids = NULL;

		r = pread_full(pd, ent, in->attr_size, off);
		if (r < 0)
			break;
		asz = tk_load_u32(ent + 4, false);
		if (asz == 0)
			asz = 64;
		/* Salvaging, the attr is decoded by attr_size and its fields judged by use. */
		if (asz != alen && nr > 1) {
			r = fail_at(pd, off + 4,
				    "attr %" PRIu64 " size %u differs from attr_size-16"
				    " = %" PRIu64,
				    i, asz, alen);
			r = salvage(pd, r, off + 4, 0, 0);
			if (r < 0)
				break;
		}
		ids_off = tk_load_u64(ent + alen, false);
		ids_size = tk_load_u64(ent + alen + 8, false);
		if (ids_size % 8 || ids_off > in->file_size || ids_size > in->file_size - ids_off) {
			r = fail_at(pd, off + alen,
				    "attr %" PRIu64 " ids {0x%" PRIx64 ", %" PRIu64
				    "} lie outside the file",
				    i, ids_off, ids_size);
			/* Its samples then name an id no event has, and are counted so. */
			r = salvage(pd, r, off + alen, 0, -1);
			if (r < 0)
				break;
			ids_size = 0;
		}
		if (ids_size) {
			ids = malloc(ids_size);
			if (!ids) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			r = pread_full(pd, ids, ids_size, ids_off);
		}
		if (r == 0)
			r = add_evsel(pd, ent, alen, ids, ids_size / 8, off,
				      ids_size ? ids_off : 0);
		free(ids);
	}
	free(ent);
	return r < 0 ? r : check_evsels(pd);
}

static int read_features(struct tk_perfdata *pd)
{
	struct tk_perfdata_info *in = &pd->info;
	uint64_t table = in->data_end, nr = 0, slot = 0;
	uint8_t *tab;
	int r = 0;

	if (in->data_size_repaired)
		return 0;
	for (int i = 0; i < 4; i++)
		nr += (uint64_t)__builtin_popcountll(in->features[i]);
	if (nr == 0)
		return 0;
	if (table > in->file_size || nr * 16 > in->file_size - table)
		return salvage(pd,
			       fail_at(pd, table,
				       "feature table of %" PRIu64 " entries runs past the end "
				       "of the file (size %" PRIu64 ")",
				       nr, in->file_size),
			       table, table < in->file_size ? in->file_size - table : 0, 0);
	tab = malloc(nr * 16);
	if (!tab)
		return tk_fail(ENOMEM, "out of memory");
	r = pread_full(pd, tab, nr * 16, table);
	for (uint32_t bit = 0; bit < 256 && r == 0; bit++) {
		uint64_t off, size;
		uint8_t *data = NULL;

		if (!(in->features[bit / 64] >> (bit % 64) & 1))
			continue;
		off = tk_load_u64(tab + slot * 16, false);
		size = tk_load_u64(tab + slot * 16 + 8, false);
		slot++;
		/*
		 * An unknown bit (a newer perf's feature) is named at the
		 * bitmap word that holds it; its payload is never read, so
		 * where its table entry points does not matter.
		 */
		if (bit == 0 || bit >= TK_PERF_FEAT_LAST) {
			r = add_feature(pd, bit, 72 + 8 * (bit / 64), off, NULL, size);
			continue;
		}
		if (off > in->file_size || size > in->file_size - off || size > MAX_FEATURE_SIZE) {
			if (bit == TK_PERF_FEAT_TRACING_DATA && has_tracepoint(pd)) {
				r = fail_at(pd, table + (slot - 1) * 16,
					    "feature TRACING_DATA {0x%" PRIx64 ", %" PRIu64
					    "} lies outside the file",
					    off, size);
				r = salvage(pd, r, table + (slot - 1) * 16, 0, 0);
				if (r < 0)
					break;
				continue;
			}
			if (!pd->strict) {
				r = add_damage(pd, table + (slot - 1) * 16, 0, 0,
					       "feature %s {0x%" PRIx64 ", %" PRIu64
					       "} lies outside the file",
					       tk_perfdata_feature_name(bit), off, size);
				continue;
			}
			tk_warn("%s: offset 0x%" PRIx64 ": feature %s {0x%" PRIx64 ", %" PRIu64
				"} lies outside the file: skipped",
				pd->name, table + (slot - 1) * 16, tk_perfdata_feature_name(bit),
				off, size);
			continue;
		}
		if (size) {
			data = malloc(size);
			if (!data) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			r = pread_full(pd, data, size, off);
			if (r < 0) {
				free(data);
				break;
			}
		}
		r = add_feature(pd, bit, 72 + 8 * (bit / 64), off, data, size);
	}
	free(tab);
	if (r == 0 && has_tracepoint(pd) && !pd->tracing_blob)
		tk_warn("%s: tracepoint events but no TRACING_DATA feature", pd->name);
	return r;
}

/* ------------------------------------------------------------- pipe mode */

static int handle_header_attr(struct tk_perfdata *pd, const uint8_t *p, uint16_t size, uint64_t off)
{
	uint32_t asz;

	if (size < 8 + 64)
		return fail_at(pd, off, "HEADER_ATTR record of %u bytes is too short", size);
	asz = tk_load_u32(p + 12, false);
	if (asz == 0)
		asz = 64;
	if (asz < 64 || asz > size - 8u || (size - 8u - asz) % 8)
		return fail_at(pd, off + 12,
			       "HEADER_ATTR attr size %u does not fit the record of %u"
			       " bytes",
			       asz, size);
	if (add_evsel(pd, p + 8, asz, p + 8 + asz, (size - 8u - asz) / 8, off, off + 8 + asz) < 0)
		return -ENOMEM;
	return check_evsels(pd);
}

static int handle_meta(struct tk_perfdata *pd, const struct tk_perf_record *rec)
{
	const uint8_t *p = rec->data;
	uint8_t *copy;
	int err = 0;

	switch (rec->type) {
	case TK_PERF_RECORD_HEADER_ATTR:
		return handle_header_attr(pd, p, rec->size, rec->offset);
	case TK_PERF_RECORD_HEADER_FEATURE: {
		uint64_t id, len;

		if (rec->size < 16)
			return fail_at(pd, rec->offset,
				       "HEADER_FEATURE record of %u bytes is too "
				       "short",
				       rec->size);
		id = tk_load_u64(p + 8, false);
		if (id == TK_PERF_FEAT_LAST)
			return 0;
		len = rec->size - 16u;
		copy = malloc(len ? len : 1);
		if (!copy)
			return tk_fail(ENOMEM, "out of memory");
		memcpy(copy, p + 16, len);
		if (id < 64)
			pd->info.features[0] |= 1ull << id;
		return add_feature(pd, id > UINT32_MAX ? UINT32_MAX : (uint32_t)id, rec->offset + 8,
				   rec->offset + 16, copy, len);
	}
	case TK_PERF_RECORD_HEADER_TRACING_DATA:
		copy = malloc(rec->extra_size ? rec->extra_size : 1);
		if (!copy)
			return tk_fail(ENOMEM, "out of memory");
		if (rec->extra_size) /* an empty one has no payload pointer */
			memcpy(copy, rec->extra, rec->extra_size);
		if (own(pd, copy) < 0)
			return tk_fail(ENOMEM, "out of memory");
		err = parse_tracing(pd, copy, rec->extra_size, rec->extra_offset);
		if (err == -ENOMEM)
			return tk_fail(ENOMEM, "out of memory");
		if (err < 0) {
			if (has_tracepoint(pd))
				return fail_at(pd, rec->extra_offset,
					       "tracing data (%" PRIu64 " bytes) is malformed",
					       rec->extra_size);
			tk_warn("%s: offset 0x%" PRIx64 ": tracing data is malformed: skipped",
				pd->name, rec->extra_offset);
		}
		return 0;
	case TK_PERF_RECORD_HEADER_BUILD_ID:
		if (!parse_build_id_entry(pd, p, rec->size, false, &err))
			return fail_at(pd, rec->offset, "HEADER_BUILD_ID record is malformed");
		return err;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------- records */

static int decompress(struct tk_perfdata *pd, const uint8_t *src, size_t len, uint64_t off)
{
	ZSTD_inBuffer in = {src, len, 0};

	if (!pd->dctx) {
		pd->dctx = ZSTD_createDCtx();
		if (!pd->dctx)
			return tk_fail(ENOMEM, "out of memory");
	}
	/* Damage found in the output from here on names this record. */
	pd->doff = off;
	/* Keep the undelivered tail (a record split across chunks) in front. */
	if (pd->dstart > 0) {
		memmove(pd->dbuf, pd->dbuf + pd->dstart, pd->dend - pd->dstart);
		pd->dend -= pd->dstart;
		pd->dstart = 0;
	}
	while (in.pos < in.size) {
		ZSTD_outBuffer out;
		size_t r;

		if (pd->dcap - pd->dend < 65536) {
			size_t ncap = pd->dcap ? pd->dcap * 2 : 1u << 20;
			uint8_t *nb;

			if (ncap > MAX_DECOMP_SIZE)
				return fail_at(pd, off, "COMPRESSED record expands past %llu bytes",
					       (unsigned long long)MAX_DECOMP_SIZE);
			nb = realloc(pd->dbuf, ncap);
			if (!nb)
				return tk_fail(ENOMEM, "out of memory");
			pd->dbuf = nb;
			pd->dcap = ncap;
		}
		out = (ZSTD_outBuffer){pd->dbuf + pd->dend, pd->dcap - pd->dend, 0};
		r = ZSTD_decompressStream(pd->dctx, &out, &in);
		if (ZSTD_isError(r))
			return fail_at(pd, off, "COMPRESSED record: zstd: %s",
				       ZSTD_getErrorName(r));
		pd->dend += out.pos;
		pd->info.decompressed_bytes += out.pos;
	}
	return 0;
}

/*
 * COMPRESSED2 (perf 6.16): {header, u64 data_size, data_size bytes of the
 * zstd stream, zeros up to the 8-byte aligned header.size}. The stream is
 * the same one COMPRESSED records carry; only the padding is new, so that
 * the records after it stay 8-aligned.
 */
static int compressed2(struct tk_perfdata *pd, const uint8_t *p, uint16_t size, uint64_t off)
{
	uint64_t len;

	if (size < 16)
		return fail_at(pd, off, "COMPRESSED2 record of %u bytes has no data size", size);
	len = tk_load_u64(p + 8, false);
	if (len > size - 16u)
		return fail_at(pd, off + 8,
			       "COMPRESSED2 data size %" PRIu64 " exceeds the record's %u bytes",
			       len, size - 16u);
	pd->info.nr_compressed++;
	pd->info.compressed_bytes += len;
	return decompress(pd, p + 16, (size_t)len, off);
}

/*
 * A COMPRESSED record whose size runs past the data (a damaged size, or a
 * file cut short): its chunk still lies at its start, so the @have bytes
 * there are decoded for what they give before resync() places the next
 * record, as perf decodes such a record until zstd stops at the bytes that
 * are not its stream. The decoder's error is no damage of its own (the
 * resync's region covers these bytes) and the decoder starts afresh after.
 * Return: 0, or a negative errno that is not about the data (no memory).
 */
static int compressed_prefix(struct tk_perfdata *pd, const uint8_t *p, uint32_t type, size_t have,
			     uint64_t off)
{
	int r;

	if (type != TK_PERF_RECORD_COMPRESSED || have <= 8)
		return 0;
	r = decompress(pd, p + 8, have - 8, off);
	if (pd->dctx)
		ZSTD_DCtx_reset(pd->dctx, ZSTD_reset_session_only);
	return r == -EBADMSG ? 0 : r;
}

/* ---------------------------------------------------------------- resync */

#define DAY_NS	      (86400ull * 1000000000ull)
#define RESYNC_CHAIN  3 /* plausible headers in a row that end a damaged region */
#define RESYNC_WINDOW (RESYNC_CHAIN * 65536u + 8)
#define MISC_RESERVED 0x07f8u /* misc bits 3..10: no perf_event_header sets them */

/* The types perf writes: the kernel's 1..21 and its own 64..83 (COMPRESSED2: perf 6.16). */
static bool known_type(uint32_t t)
{
	return (t >= 1 && t <= 21) || (t >= 64 && t <= 83);
}

/* The evsel of event id @id, or -1. */
/*
 * The evsel of sample id @id, or -1. The reader asks twice per sample (the
 * too-long check, the time kept for resync()): a direct-mapped cache of
 * found ids saves the binary search (ids never change their event; ids not
 * found are not cached, pipe mode may add them later).
 */
static long __attribute__((noinline))
find_id_slow(const struct tk_perfdata *pd, uint64_t id, struct id_slot *c);

static inline long find_id(const struct tk_perfdata *pd, uint64_t id)
{
	struct id_slot *c = pd->idcache ? &pd->idcache[(id ^ id >> 9) & (ID_CACHE - 1)] : NULL;

	if (c && c->evsel >= 0 && c->id == id)
		return c->evsel;
	return find_id_slow(pd, id, c);
}

static long find_id_slow(const struct tk_perfdata *pd, uint64_t id, struct id_slot *c)
{
	int e;

	e = tk_perfdata_evsel_of_id(pd, id);
	if (e < 0)
		return -1;
	if (c) {
		c->id = id;
		c->evsel = e;
	}
	return e;
}

/* Where a SAMPLE of sample_type @st keeps its time, and whether it has one. */
static bool sample_time_at(uint64_t st, size_t *off)
{
	if (!(st & TK_PERF_SAMPLE_TIME))
		return false;
	*off = 8 + 8 * (size_t)__builtin_popcountll(st & (TK_PERF_SAMPLE_IDENTIFIER |
							  TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID));
	return true;
}

/*
 * Whether @p (a SAMPLE of @size bytes) looks like one of this file's
 * samples: its id, when the attrs place one, names an event, and its time
 * lies within a day of the last sample read whole (samples are sorted only
 * within a round, so "monotonic-ish": a day is wider than any round and
 * narrower than what a random u64 or a flipped high bit gives).
 */
static bool plausible_sample(const struct tk_perfdata *pd, const uint8_t *p, uint16_t size)
{
	const struct tk_perf_attr *a;
	size_t off;
	long e;

	if (pd->nr_evsels == 0)
		return true;
	a = &pd->evsels[0]->pub.attr;
	if (pd->nr_idmap && tk_perf_id_offset(TK_PERF_RECORD_SAMPLE, a->sample_type, size, &off)) {
		e = find_id(pd, tk_load_u64(p + off, false));
		if (e < 0)
			return false;
		a = &pd->evsels[e]->pub.attr;
	}
	if (pd->last_time && sample_time_at(a->sample_type, &off)) {
		uint64_t t;

		if (off + 8 > size)
			return false;
		t = tk_load_u64(p + off, false);
		if (t + DAY_NS < pd->last_time || t > pd->last_time + DAY_NS)
			return false;
	}
	return true;
}

/*
 * Judge a header at @p with @avail bytes buffered from it (@all: nothing
 * follows them). Return 1 when RESYNC_CHAIN records in a row are plausible
 * (or fewer ending exactly at the end of the data), 0 when not, -1 when
 * more bytes are needed to tell.
 */
static int plausible_chain(const struct tk_perfdata *pd, const uint8_t *p, size_t avail, bool all)
{
	size_t at = 0;

	for (int n = 0; n < RESYNC_CHAIN; n++) {
		uint32_t type;
		uint16_t misc, size;

		if (avail - at < 8) {
			if (!all)
				return -1;
			return n > 0 && at == avail;
		}
		type = tk_load_u32(p + at, false);
		misc = tk_load_u16(p + at + 4, false);
		size = tk_load_u16(p + at + 6, false);
		if (!known_type(type) || size < 8 || (misc & MISC_RESERVED))
			return 0;
		/* The kernel pads its records to 8 bytes; perf's own may not be. */
		if (type < 64 && size % 8)
			return 0;
		if (avail - at < size)
			return all ? 0 : -1;
		if (type == TK_PERF_RECORD_SAMPLE && !plausible_sample(pd, p + at, size))
			return 0;
		/* Their payload follows the header: a chain cannot be judged past it. */
		if (type == TK_PERF_RECORD_HEADER_TRACING_DATA || type == TK_PERF_RECORD_AUXTRACE)
			return 1;
		at += size;
	}
	return 1;
}

/*
 * Whether a SAMPLE's size field is too large: the kernel sizes a sample to
 * its fields rounded up to 8 bytes, so one whose fields still decode from
 * 8 bytes fewer, and whose rest holds plausible records, has a damaged
 * size. Such a size is plausible to the walk
 * and could step over whole records unseen; this one extra decode per
 * sample is what catching it costs.
 */
/*
 * The bytes of @a's sample fields before RAW (all of them without RAW)
 * and after it, when every field but RAW has a fixed size; false when
 * another field varies (a callchain, registers, a group read...).
 */
static bool fixed_layout(const struct tk_perf_attr *a, uint32_t *before, uint32_t *after)
{
	const uint64_t varies = TK_PERF_SAMPLE_CALLCHAIN | TK_PERF_SAMPLE_BRANCH_STACK |
				TK_PERF_SAMPLE_REGS_USER | TK_PERF_SAMPLE_STACK_USER |
				TK_PERF_SAMPLE_REGS_INTR | TK_PERF_SAMPLE_AUX;
	const uint64_t ahead = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
			       TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ADDR | TK_PERF_SAMPLE_ID |
			       TK_PERF_SAMPLE_STREAM_ID | TK_PERF_SAMPLE_CPU |
			       TK_PERF_SAMPLE_PERIOD;
	const uint64_t behind = TK_PERF_SAMPLE_WEIGHT | TK_PERF_SAMPLE_WEIGHT_STRUCT |
				TK_PERF_SAMPLE_DATA_SRC | TK_PERF_SAMPLE_TRANSACTION |
				TK_PERF_SAMPLE_PHYS_ADDR | TK_PERF_SAMPLE_CGROUP |
				TK_PERF_SAMPLE_DATA_PAGE_SIZE | TK_PERF_SAMPLE_CODE_PAGE_SIZE;
	uint64_t t = a->sample_type;
	uint32_t read = 0;

	if ((t & varies) || ((t & TK_PERF_SAMPLE_READ) && (a->read_format & TK_PERF_READ_GROUP)))
		return false;
	if (t & TK_PERF_SAMPLE_READ)
		read = 8u * (1u + (uint32_t)__builtin_popcountll(
					  a->read_format & (TK_PERF_READ_TOTAL_TIME_ENABLED |
							    TK_PERF_READ_TOTAL_TIME_RUNNING |
							    TK_PERF_READ_ID | TK_PERF_READ_LOST)));
	/* WEIGHT and WEIGHT_STRUCT share one u64. */
	*before = 8u * (uint32_t)__builtin_popcountll(t & ahead) + read;
	*after =
		8u * (uint32_t)__builtin_popcountll(t & behind & ~(uint64_t)TK_PERF_SAMPLE_WEIGHT) +
		((t & (TK_PERF_SAMPLE_WEIGHT | TK_PERF_SAMPLE_WEIGHT_STRUCT)) &&
				 !(t & TK_PERF_SAMPLE_WEIGHT_STRUCT)
			 ? 8u
			 : 0u);
	return true;
}

/*
 * Whether a side-band record's size field is too large: MMAP, MMAP2 and
 * COMM end in a name the kernel (and perf, synthesizing them) pads to 8
 * bytes, FORK and EXIT have fixed fields, and each then has the
 * sample_id_all trailer. A size larger than that, whose rest holds
 * plausible records, hides those records (one damaged size byte made an
 * MMAP2 swallow the sample after it, silently).
 */
size_t tk_perfdata_sideband_fields(const uint8_t *p, uint32_t type, uint32_t size)
{
	size_t fixed, want;

	switch (type) {
	case TK_PERF_RECORD_MMAP:
		fixed = 8 + 8 + 24;
		break;
	case TK_PERF_RECORD_MMAP2:
		fixed = 8 + 8 + 24 + 24 + 8;
		break;
	case TK_PERF_RECORD_COMM:
		fixed = 8 + 8;
		break;
	case TK_PERF_RECORD_FORK:
	case TK_PERF_RECORD_EXIT:
		fixed = 8 + 16 + 8;
		break;
	default:
		return 0;
	}
	if (size <= fixed)
		return 0;
	want = fixed;
	if (type != TK_PERF_RECORD_FORK && type != TK_PERF_RECORD_EXIT) {
		const uint8_t *nul = memchr(p + fixed, 0, size - fixed);

		if (!nul)
			return 0;
		want += ((size_t)(nul - (p + fixed)) + 1 + 7) & ~(size_t)7;
	}
	return want;
}

static bool sideband_too_long(const struct tk_perfdata *pd, const uint8_t *p, uint32_t type,
			      uint16_t size)
{
	const uint64_t trailer_bits = TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ID |
				      TK_PERF_SAMPLE_STREAM_ID | TK_PERF_SAMPLE_CPU |
				      TK_PERF_SAMPLE_IDENTIFIER;
	const struct tk_perf_attr *a;
	size_t want = tk_perfdata_sideband_fields(p, type, size);

	if (pd->nr_evsels == 0 || !want)
		return false;
	a = &pd->evsels[0]->pub.attr;
	if (a->flags & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL)
		want += 8 * (size_t)__builtin_popcountll(a->sample_type & trailer_bits);
	return want + 8 <= size && plausible_chain(pd, p + want, size - want, true) == 1;
}

/*
 * sample_too_long()'s first test, inline for the reader's fast path: the
 * sample has exactly the size its fixed fields and RAW length give.
 */
static inline bool sample_size_exact(const struct tk_perfdata *pd, const uint8_t *p, uint16_t size)
{
	uint32_t before = pd->fixed_before;
	uint64_t want = pd->exact_base;

	if (!pd->exact_ok)
		return false;
	if (pd->exact_raw)
		want += 4u + (8u + before + 4u <= size ? tk_load_u32(p + 8 + before, false)
						       : UINT32_MAX);
	return want == size;
}

/*
 * Whether SAMPLE @p of @size bytes hides records in its tail (damage). In
 * @whole the event its id names when its fields decode from its @size
 * bytes (one decode, which tells the caller what
 * tk_perfdata_parse_sample() would give), else -1.
 */
static bool sample_too_long(const struct tk_perfdata *pd, const uint8_t *p, uint16_t size,
			    long *whole)
{
	const struct tk_perf_attr *a;
	struct tk_perf_sample s;
	size_t off, bad, used;
	long e = 0;

	*whole = -1;
	if (pd->nr_evsels == 0 || size < 16)
		return false;
	a = &pd->evsels[0]->pub.attr;
	/*
	 * Most samples have a size their fields fix (a tracepoint's: all
	 * but RAW, whose length is in the record): exactly that size is no
	 * damage, and the decodes below are not needed. Every event of a
	 * file shares evsel 0's layout when pd->one_layout says so.
	 */
	if (pd->one_layout && pd->fixed_ok) {
		uint32_t before = pd->fixed_before;
		uint64_t want = 8u + before + pd->fixed_after;

		if (a->sample_type & TK_PERF_SAMPLE_RAW)
			want += 4u + (8u + before + 4u <= size ? tk_load_u32(p + 8 + before, false)
							       : UINT32_MAX);
		if (want == size)
			return false;
	}
	if (pd->nr_evsels > 1) {
		if (!tk_perf_id_offset(TK_PERF_RECORD_SAMPLE, a->sample_type, size, &off))
			return false;
		e = find_id(pd, tk_load_u64(p + off, false));
		if (e < 0)
			return false;
	}
	if (sample_decode(&pd->evsels[e]->pub.attr, p, size, &s, &bad, &used) != 0)
		return false; /* too short for its fields: tk_perfdata_parse_sample() says so */
	*whole = e;
	/*
	 * Fields that fit in 8 bytes fewer leave a tail. perf itself reads
	 * such a sample and ignores the rest (a callchain cut short by an
	 * editor leaves it, tests/data/perf/chain-zero.data): only records
	 * hidden in the rest make it damage. The fields decode from every
	 * length down to @used (sample_decode()).
	 */
	for (uint16_t rest = 8; rest <= size - 16u && used <= (size_t)(size - rest); rest += 8) {
		if (plausible_chain(pd, p + size - rest, rest, true) == 1)
			return true;
	}
	return false;
}

/*
 * Salvage from a damaged record at @off (pd->pos; nothing of it consumed):
 * scan forward, byte by byte (records after a COMPRESSED one need not be
 * 8-aligned, and a damaged size field misaligns the walk), for the next
 * offset where plausible_chain() holds, and note the bytes passed over as
 * one damaged region. Each offset is judged by at most RESYNC_CHAIN headers
 * in a window of RESYNC_WINDOW bytes, so the scan is linear in the bytes
 * skipped. @why says what was wrong at @off.
 * Return: 1 when records follow, 0 when the data ended first, or an error.
 */
static int resync(struct tk_perfdata *pd, uint64_t off, const char *why)
{
	size_t i = 1;
	int r;

	for (;;) {
		int64_t have = in_fill(pd, RESYNC_WINDOW);
		const uint8_t *p;

		if (have < 0)
			return (int)have;
		p = pd->buf + pd->start;
		for (; i + 8 <= (size_t)have; i++) {
			int c = plausible_chain(pd, p + i, (size_t)have - i, pd->eof);

			if (c < 0)
				break;
			if (c > 0) {
				in_consume(pd, i);
				r = add_damage(pd, off, pd->pos - off, -1, "%s", why);
				return r < 0 ? r : 1;
			}
		}
		if (pd->eof && i + 8 > (size_t)have) {
			in_consume(pd, (size_t)have);
			r = add_damage(pd, off, pd->pos - off, -1, "%s", why);
			return r < 0 ? r : 0;
		}
		/* Keep the bytes from i on: the window slides without rescanning. */
		in_consume(pd, i);
		i = 0;
	}
}

/* Hand out @p (size bytes) as @rec, copying it when it is not 8-aligned. */
static void set_record(struct tk_perfdata *pd, struct tk_perf_record *rec, const uint8_t *p,
		       uint16_t size)
{
	if ((uintptr_t)p % 8) {
		memcpy(pd->scratch, p, size);
		p = (const uint8_t *)pd->scratch;
	}
	rec->type = tk_load_u32(p, false);
	rec->misc = tk_load_u16(p + 4, false);
	rec->size = size;
	rec->data = p;
}

/* Salvage failure @r inside the decompressed data: drop what is left of it. */
static int drop_decompressed(struct tk_perfdata *pd, int r)
{
	r = salvage(pd, r, pd->doff, 0, -1);
	if (r < 0)
		return r;
	pd->dstart = pd->dend = 0;
	if (pd->dctx)
		ZSTD_DCtx_reset(pd->dctx, ZSTD_reset_session_only);
	return 0;
}

static int next_decompressed(struct tk_perfdata *pd, struct tk_perf_record *rec)
{
	size_t have = pd->dend - pd->dstart;
	const uint8_t *p;
	uint16_t size;
	uint32_t type;
	int r;

	/* Before the first COMPRESSED record dbuf is NULL, and NULL + 0 is undefined. */
	if (have < 8)
		return 0;
	p = pd->dbuf + pd->dstart;
	size = tk_load_u16(p + 6, false);
	type = tk_load_u32(p, false);
	if (size < 8 || (!pd->strict && !known_type(type))) {
		r = fail_at(pd, pd->doff,
			    "record of %u bytes at +%zu in the decompressed data "
			    "of the COMPRESSED record",
			    size, pd->dstart);
		goto drop;
	}
	if (have < size)
		return 0;
	if (type == TK_PERF_RECORD_HEADER_TRACING_DATA || type == TK_PERF_RECORD_AUXTRACE ||
	    type == TK_PERF_RECORD_COMPRESSED || type == TK_PERF_RECORD_COMPRESSED2) {
		r = fail_at(pd, pd->doff, "%s record inside a COMPRESSED record",
			    tk_perfdata_record_name(type));
		goto drop;
	}
	memset(rec, 0, sizeof(*rec));
	set_record(pd, rec, p, size);
	rec->offset = pd->doff;
	rec->compressed = true;
	pd->dstart += size;
	return 1;
drop:
	/*
	 * Salvaging: the decompressed bytes no longer split into records, so
	 * the rest of this output is dropped (its records' count is unknown)
	 * and the decoder restarts at the next frame.
	 */
	r = drop_decompressed(pd, r);
	return r < 0 ? r : 0;
}

/*
 * Salvage failure @r of the record at @off whose payload runs past the
 * data (tracing data, AUXTRACE): nothing after it can be placed, so the
 * rest is one damaged region and the data ends. Return: 0, or @r (strict).
 */
static int skip_rest(struct tk_perfdata *pd, uint64_t off, int r)
{
	int64_t have;

	if (pd->strict || r != -EBADMSG)
		return r;
	while ((have = in_fill(pd, 1)) > 0)
		in_consume(pd, (size_t)have);
	if (have < 0)
		return (int)have;
	r = salvage(pd, r, off, pd->pos - off, -1);
	return r < 0 ? r : 0;
}

static int next_raw(struct tk_perfdata *pd, struct tk_perf_record *rec)
{
	struct tk_perfdata_info *in = &pd->info;
	uint64_t off;
	int64_t have;
	uint16_t size;
	uint32_t type;
	const uint8_t *p;
	char why[160];
	long whole;
	int r;

	for (;;) {
		r = next_decompressed(pd, rec);
		if (r != 0)
			return r;
		off = pd->pos;
		have = in_fill(pd, 8);
		if (have < 0)
			return (int)have;
		if (have == 0) {
			if (pd->dend > pd->dstart) {
				r = fail_at(pd, pd->doff, "compressed stream ends inside a record");
				return drop_decompressed(pd, r);
			}
			return 0;
		}
		if (have < 8) {
			if (!pd->strict && !(in->data_size_repaired && in->data_size == 0))
				return add_damage(pd, off, (uint64_t)have, -1,
						  "%" PRId64 " trailing bytes are not a record "
						  "(file cut short?)",
						  have);
			tk_warn("%s: offset 0x%" PRIx64 ": %" PRId64 " trailing bytes are not a "
				"record (recording cut short?): ignored",
				pd->name, off, have);
			return 0;
		}
		p = pd->buf + pd->start;
		type = tk_load_u32(p, false);
		size = tk_load_u16(p + 6, false);
		if (size < 8 ||
		    (!pd->strict && (!known_type(type) ||
				     (type == TK_PERF_RECORD_HEADER_TRACING_DATA && size < 12) ||
				     (type == TK_PERF_RECORD_AUXTRACE && size < 16)))) {
			/*
			 * Salvaging, a killed recorder's zeroed tail still ends
			 * the data quietly; anything readable after it is news.
			 */
			if (size < 8)
				snprintf(why, sizeof(why),
					 "record size %u is smaller than its header", size);
			else if (known_type(type))
				snprintf(why, sizeof(why), "%s record of %u bytes is too short",
					 tk_perfdata_record_name(type), size);
			else
				snprintf(why, sizeof(why),
					 "record type %u is no type perf writes (size %u)", type,
					 size);
			if (!pd->strict) {
				uint64_t lost_from = pd->nr_damage;

				r = resync(pd, off, why);
				if (r < 0)
					return r;
				if (r > 0)
					continue;
				if (in->data_size_repaired && in->data_size == 0 &&
				    pd->nr_damage > lost_from) {
					/* The zeroed tail of a killed recording, not
					 * damage. */
					pd->nr_damage--;
					tk_warn("%s: offset 0x%" PRIx64
						": record size %u: data ends "
						"here",
						pd->name, off, size);
				}
				return 0;
			}
			if (in->data_size_repaired) {
				tk_warn("%s: offset 0x%" PRIx64 ": record size %u: data ends here",
					pd->name, off, size);
				return 0;
			}
			return fail_at(pd, off, "record size %u is smaller than its header", size);
		}
		have = in_fill(pd, size);
		if (have < 0)
			return (int)have;
		p = pd->buf + pd->start;
		if (have < size) {
			if (!pd->strict && !(in->data_size_repaired && in->data_size == 0)) {
				snprintf(why, sizeof(why),
					 "record of %u bytes crosses the end of the data at "
					 "0x%" PRIx64,
					 size, off + (uint64_t)have);
				/* A damaged size, or the last record of a file cut short.
				 */
				r = compressed_prefix(pd, p, type, (size_t)have, off);
				if (r < 0)
					return r;
				r = resync(pd, off, why);
				if (r > 0)
					continue;
				return r;
			}
			if (in->data_size_repaired || in->pipe) {
				tk_warn("%s: offset 0x%" PRIx64
					": last record (%u bytes) is cut short "
					"(recording killed?): ignored",
					pd->name, off, size);
				return 0;
			}
			return fail_at(pd, off,
				       "record of %u bytes crosses the end of the data "
				       "section at 0x%" PRIx64,
				       size, in->data_end);
		}
		if (!pd->strict && type != TK_PERF_RECORD_SAMPLE && type < 64 &&
		    sideband_too_long(pd, p, type, size)) {
			snprintf(why, sizeof(why),
				 "%s record size %u is 8 or more bytes longer than its fields, "
				 "and records hide in the rest",
				 tk_perfdata_record_name(type), size);
			r = resync(pd, off, why);
			if (r > 0)
				continue;
			return r;
		}
		if (!pd->strict && type == TK_PERF_RECORD_SAMPLE &&
		    sample_too_long(pd, p, size, &whole)) {
			snprintf(why, sizeof(why),
				 "SAMPLE record size %u is 8 or more bytes longer than its "
				 "fields",
				 size);
			r = resync(pd, off, why);
			if (r > 0)
				continue;
			return r;
		}
		if (type == TK_PERF_RECORD_COMPRESSED) {
			in->nr_compressed++;
			in->compressed_bytes += size - 8u;
			r = decompress(pd, p + 8, size - 8u, off);
			if (r < 0) {
				/*
				 * Salvaging: what decoded before the error stays (whole
				 * zstd frames and flushed blocks, as perf keeps them),
				 * the rest of this record is lost, and only it.
				 */
				r = salvage(pd, r, off, size, -1);
				if (r < 0)
					return r;
				if (pd->dctx) /* NULL: it failed before decompressing */
					ZSTD_DCtx_reset(pd->dctx, ZSTD_reset_session_only);
			}
			in_consume(pd, size);
			continue;
		}
		if (type == TK_PERF_RECORD_COMPRESSED2) {
			r = compressed2(pd, p, size, off);
			if (r < 0) {
				/* As for COMPRESSED: what decoded stays, the rest is lost. */
				r = salvage(pd, r, off, size, -1);
				if (r < 0)
					return r;
				if (pd->dctx) /* NULL: it failed before decompressing */
					ZSTD_DCtx_reset(pd->dctx, ZSTD_reset_session_only);
			}
			in_consume(pd, size);
			continue;
		}
		if (pd->dend > pd->dstart) {
			r = drop_decompressed(
				pd,
				fail_at(pd, pd->doff, "compressed stream ends inside a record"));
			if (r < 0)
				return r;
		}
		memset(rec, 0, sizeof(*rec));
		set_record(pd, rec, p, size);
		rec->offset = off;
		in_consume(pd, size);
		break;
	}

	if (rec->type == TK_PERF_RECORD_HEADER_TRACING_DATA) {
		uint64_t len, need;

		if (size < 12)
			return fail_at(pd, off, "HEADER_TRACING_DATA record of %u bytes", size);
		len = tk_load_u32((const uint8_t *)rec->data + 8, false);
		need = (len + 7) & ~7ull;
		if (need > MAX_EXTRA_SIZE ||
		    (pd->limit != UINT64_MAX && need > pd->limit - pd->pos))
			return skip_rest(pd, off,
					 fail_at(pd, off + 8,
						 "tracing data of %" PRIu64 " bytes runs past the "
						 "end of the data",
						 len));
		/* rec->data may live in the window, which in_fill() moves: copy first. */
		if (rec->data != pd->scratch) {
			memcpy(pd->scratch, rec->data, size);
			rec->data = pd->scratch;
		}
		if (need > pd->extra_cap) {
			uint8_t *nb = realloc(pd->extra, need);

			if (!nb)
				return tk_fail(ENOMEM, "out of memory");
			pd->extra = nb;
			pd->extra_cap = need;
		}
		rec->extra_offset = pd->pos;
		for (uint64_t got = 0; got < need;) {
			size_t chunk;

			have = in_fill(pd, 1);
			if (have < 0)
				return (int)have;
			if (have == 0)
				return skip_rest(pd, off,
						 fail_at(pd, pd->pos,
							 "tracing data cut short (%" PRIu64
							 " of %" PRIu64 " bytes)",
							 got, need));
			chunk = (size_t)((uint64_t)have < need - got ? (uint64_t)have : need - got);
			memcpy(pd->extra + got, pd->buf + pd->start, chunk);
			in_consume(pd, chunk);
			got += chunk;
		}
		rec->extra = pd->extra;
		rec->extra_size = len;
	} else if (rec->type == TK_PERF_RECORD_AUXTRACE) {
		uint64_t len;

		if (size < 16)
			return fail_at(pd, off, "AUXTRACE record of %u bytes", size);
		len = tk_load_u64((const uint8_t *)rec->data + 8, false);
		if (rec->data != pd->scratch) {
			memcpy(pd->scratch, rec->data, size);
			rec->data = pd->scratch;
		}
		rec->extra_offset = pd->pos;
		rec->extra_size = len;
		r = in_skip(pd, len, off);
		if (r < 0)
			return skip_rest(pd, off, r);
	}
	return 1;
}

/*
 * Keep the time of the sample handed out (@p, @size bytes), for
 * plausible_sample(). Return: the index of the evsel its id names (0 when
 * there is one), or -1 when none does.
 */
static inline long note_time_at(struct tk_perfdata *pd, const uint8_t *p, size_t size)
{
	const struct pd_evsel *ev;
	size_t off;
	long e = 0;

	if (pd->nr_evsels == 0)
		return -1;
	ev = pd->evsels[0];
	if (pd->nr_evsels > 1) {
		/* As tk_perf_id_offset() places it by evsel 0, without its popcount. */
		off = pd->sample_id_off;
		if (!off || off + 8 > size)
			return -1;
		e = find_id(pd, tk_load_u64(p + off, false));
		if (e < 0)
			return -1;
		ev = pd->evsels[e];
	}
	off = ev->time_off;
	if (off && off + 8 <= size) {
		uint64_t t = tk_load_u64(p + off, false);

		/*
		 * A time far from the last is taken only when three samples in
		 * a row agree it moved: one flipped time must not make every
		 * later sample look implausible to resync().
		 */
		if (!pd->last_time ||
		    (t + DAY_NS >= pd->last_time && t <= pd->last_time + DAY_NS) ||
		    ++pd->time_rejects >= 3) {
			pd->last_time = t;
			pd->time_rejects = 0;
		}
	}
	return e;
}

static inline void note_time(struct tk_perfdata *pd, const struct tk_perf_record *rec)
{
	note_time_at(pd, rec->data, rec->size);
}

int32_t tk_perfdata_whole_evsel(const struct tk_perfdata *pd, const struct tk_perf_record *rec)
{
	if (pd->whole_evsel < 0 || rec->type != TK_PERF_RECORD_SAMPLE || rec->compressed ||
	    rec->offset != pd->whole_off)
		return -1;
	return (int32_t)pd->whole_evsel;
}

size_t tk_perfdata_next_samples(struct tk_perfdata *pd, struct tk_perf_sref *out, size_t n)
{
	size_t k = 0;

	pd->whole_evsel = -1;
	/* Salvaging only: a strict read takes no time for resync() (tk_perfdata_next()). */
	if (pd->done || pd->queue_pos < pd->nr_queue || (!pd->map && !pd->kept) || pd->strict)
		return 0;
	while (k < n && pd->dend == pd->dstart && pd->end - pd->start >= 8) {
		const uint8_t *p = pd->buf + pd->start;
		uint16_t size = tk_load_u16(p + 6, false);
		bool exact;
		long e, whole = -1;

		__builtin_prefetch(p + 2048); /* as tk_perfdata_next() */
		if (tk_load_u32(p, false) != TK_PERF_RECORD_SAMPLE || size < 8 ||
		    size > pd->end - pd->start || ((uintptr_t)p % 8))
			break;
		exact = sample_size_exact(pd, p, size);
		if (!exact && sample_too_long(pd, p, size, &whole))
			break; /* next_raw() resyncs */
		out[k].offset = pd->pos;
		out[k].size = size;
		in_consume(pd, size);
		e = note_time_at(pd, p, size);
		/*
		 * A sample of exactly its fields' size decodes whole, so the
		 * event its id names is the one tk_perfdata_parse_sample() gives;
		 * so does one sample_too_long() decoded (a DWARF sample's).
		 */
		out[k].evsel = exact ? (int32_t)e : (int32_t)whole;
		k++;
	}
	return k;
}

int tk_perfdata_next(struct tk_perfdata *pd, struct tk_perf_record *rec)
{
	int r;

	pd->whole_evsel = -1;
	if (pd->done)
		return 0;
	if (pd->queue_pos < pd->nr_queue) {
		struct pd_record_copy *q = &pd->queue[pd->queue_pos++];

		*rec = q->rec;
		return 1;
	}
	/*
	 * Most records are whole, aligned SAMPLEs in the window (always so
	 * in a mapped file): handed out here with next_raw()'s checks for
	 * them and nothing else, ~80 instructions instead of ~215.
	 */
	if (pd->dend == pd->dstart && pd->end - pd->start >= 8) {
		const uint8_t *p = pd->buf + pd->start;
		uint16_t size;
		long whole = -1;

		/*
		 * The records come from memory no cache holds, front to back:
		 * ask for those 2 KiB on (past the end of the window it is a
		 * hint that faults nothing). -j 1 on raw_syscalls: 130 -> 120 ms.
		 */
		__builtin_prefetch(p + 2048);
		size = tk_load_u16(p + 6, false);
		if (tk_load_u32(p, false) == TK_PERF_RECORD_SAMPLE && size >= 8 &&
		    size <= pd->end - pd->start && !((uintptr_t)p % 8) &&
		    (pd->strict || sample_size_exact(pd, p, size) ||
		     !sample_too_long(pd, p, size, &whole))) {
			*rec = (struct tk_perf_record){
				.type = TK_PERF_RECORD_SAMPLE,
				.misc = tk_load_u16(p + 4, false),
				.size = size,
				.offset = pd->pos,
				.data = p,
			};
			in_consume(pd, size);
			if (!pd->strict)
				note_time(pd, rec);
			pd->whole_evsel = whole;
			pd->whole_off = rec->offset;
			return 1;
		}
	}
	r = next_raw(pd, rec);
	if (r <= 0) {
		pd->done = true;
		return r;
	}
	/* Metadata can come later in a stream too (perf inject, new events). */
	if (rec->type == TK_PERF_RECORD_HEADER_ATTR || rec->type == TK_PERF_RECORD_HEADER_FEATURE ||
	    rec->type == TK_PERF_RECORD_HEADER_TRACING_DATA ||
	    rec->type == TK_PERF_RECORD_HEADER_BUILD_ID) {
		r = handle_meta(pd, rec);
		if (r < 0)
			r = salvage(pd, r, rec->offset, rec->size, 1);
		if (r < 0) {
			pd->done = true;
			return r;
		}
	} else if (rec->type == TK_PERF_RECORD_SAMPLE && !pd->strict) {
		note_time(pd, rec);
	}
	return 1;
}

/* Pipe mode: parse and queue the metadata records that open the stream. */
static int prime_pipe(struct tk_perfdata *pd)
{
	for (;;) {
		struct tk_perf_record rec;
		struct pd_record_copy *q, *nq;
		int r;

		if (pd->eof && pd->end == pd->start)
			return 0;
		if (in_fill(pd, 8) < 8)
			return 0;
		{
			uint32_t type = tk_load_u32(pd->buf + pd->start, false);

			if (type < 64 || type == TK_PERF_RECORD_FINISHED_ROUND ||
			    type == TK_PERF_RECORD_COMPRESSED ||
			    type == TK_PERF_RECORD_COMPRESSED2 ||
			    type == TK_PERF_RECORD_FINISHED_INIT || type == TK_PERF_RECORD_AUXTRACE)
				return 0;
		}
		r = next_raw(pd, &rec);
		if (r <= 0)
			return r;
		r = handle_meta(pd, &rec);
		if (r < 0)
			r = salvage(pd, r, rec.offset, rec.size, 1);
		if (r < 0)
			return r;
		nq = realloc(pd->queue, (pd->nr_queue + 1) * sizeof(*nq));
		if (!nq)
			return tk_fail(ENOMEM, "out of memory");
		pd->queue = nq;
		q = &nq[pd->nr_queue];
		memset(q, 0, sizeof(*q));
		q->data = malloc(rec.size);
		q->extra = rec.extra ? malloc(rec.extra_size ? rec.extra_size : 1) : NULL;
		if (!q->data || (rec.extra && !q->extra)) {
			free(q->data);
			free(q->extra);
			return tk_fail(ENOMEM, "out of memory");
		}
		pd->nr_queue++;
		memcpy(q->data, rec.data, rec.size);
		if (rec.extra)
			memcpy(q->extra, rec.extra, rec.extra_size);
		q->rec = rec;
		q->rec.data = q->data;
		q->rec.extra = q->extra;
	}
}

/* ---------------------------------------------------------------- open */

/*
 * perf.data version 1 (magic "PERFFILE", perf before 2.6.37ish) has the
 * layout of version 2 (same header, attrs, data and feature table); only
 * its byte order is not in the magic. perf (header.c, check_magic_endian()
 * and try_all_file_abis()) takes it from attr_size, which must be one of
 * the attr sizes perf knew then (64, 72, 80, 96, 104) plus the 16 bytes of
 * the ids section, and a pipe's header size, which must be 16. The same is
 * done here; a byte-swapped size means the other byte order, which is
 * refused as for version 2.
 */
static int check_v1(struct tk_perfdata *pd, uint64_t hsize, int64_t have)
{
	static const uint64_t abi[] = {64, 72, 80, 96, 104};
	uint64_t asz;

	if (hsize == 16)
		return 0;
	if (hsize != TK_PERF_HEADER_SIZE && hsize != 72)
		return tk_fail_at(ENOTSUP, pd->name, 8,
				  "perf.data version 1 (PERFFILE) with header size %" PRIu64
				  ": not 104, 72 or 16 (pipe), which perf wrote",
				  hsize);
	if (have < 24)
		return tk_fail_at(EBADMSG, pd->name, 16,
				  "perf.data version 1 (PERFFILE) is too short for its header");
	asz = tk_load_u64(pd->buf + pd->start + 16, false);
	for (size_t i = 0; i < sizeof(abi) / sizeof(abi[0]); i++) {
		if (asz == abi[i] + 16)
			return 0;
		if (asz == __builtin_bswap64(abi[i] + 16))
			return tk_fail_at(ENOTSUP, pd->name, 16,
					  "perf.data version 1 (PERFFILE) in the other byte "
					  "order: only files of this machine's byte order "
					  "are supported");
	}
	return tk_fail_at(ENOTSUP, pd->name, 16,
			  "perf.data version 1 (PERFFILE) with attr_size %" PRIu64
			  ": not one perf wrote (64, 72, 80, 96 or 104, + 16)",
			  asz);
}

/*
 * Whether an event copies user stacks into its samples (--call-graph dwarf):
 * samples of KiBs, most of whose bytes a report never reads.
 */
static bool stack_samples(const struct tk_perfdata *pd)
{
	for (size_t i = 0; i < pd->nr_evsels; i++) {
		const struct tk_perf_attr *a = &pd->evsels[i]->pub.attr;

		if ((a->sample_type & TK_PERF_SAMPLE_STACK_USER) && a->sample_stack_user)
			return true;
	}
	return false;
}

/*
 * Read the data section in place: map the file (its size at open) and make
 * the mapping the window, so in_fill() never copies and records handed out
 * stay where they are until close (tk_perfdata_mapping()). Without a
 * mapping (no address space for it, an mmap() the file refuses) the window
 * reads with pread() as for a pipe.
 *
 * Files of stack samples are read with pread() too: each page of a mapping
 * costs its first touch from user space (microseconds on a VM that shadows
 * page tables, whether the report reads 40 bytes of it or all), and a
 * stack sample spans a page or more, so reading the headers alone touched
 * every page of the file; pread() copies through the kernel's own mapping
 * into one window that stays mapped, and the report copies only the
 * records it queues.
 */
static void map_data(struct tk_perfdata *pd)
{
	uint64_t size = pd->info.file_size, end;
	void *m;

	if (!pd->seekable || pd->info.data_offset >= size || size > SIZE_MAX ||
	    getenv("TK_PERFDATA_NO_MMAP") || stack_samples(pd))
		return;
	m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, pd->fd, 0);
	if (m == MAP_FAILED)
		return;
	/* Read once, front to back: the kernel may read ahead further and drop behind. */
	madvise(m, (size_t)size, MADV_SEQUENTIAL);
	free(pd->buf);
	pd->buf = m;
	pd->cap = 0;
	pd->map = m;
	pd->map_len = size;
	end = pd->limit < size ? pd->limit : size;
	pd->start = (size_t)pd->pos;
	pd->end = (size_t)end;
	pd->eof = true; /* all there is: in_fill_slow() reads nothing more */
	pd->ready = pd->dropped = pd->start & ~((size_t)sysconf(_SC_PAGESIZE) - 1);
	/*
	 * The first pages are made resident once the first record is read
	 * (in_consume()), not here: a report on one thread trades the mapping
	 * for a kept window before it reads any (tk_perfdata_read_kept()), and
	 * populating 2 MiB it then unmapped cost ~0.3 ms, the munmap() ~0.1 ms more.
	 */
	pd->slide_at = pd->pos;
}

/*
 * The input's first bytes, at least 16 when it has them, through the
 * window (a pipe's stream goes on from them). A seekable file's first read
 * stops at HEAD_READ: a file-mode file's header parts are read with
 * pread_full() and its data section from its own offset (map_data() or the
 * window pointed there), so a whole window read here was copied into 64
 * pages that faulted in only to be dropped (~0.7 ms of each report on the
 * VM bench/README.md measures on). A pipe stream stored in a file reads on
 * from the window past the cap, which is this read's only.
 */
static int64_t read_head(struct tk_perfdata *pd)
{
	int64_t have;

	if (pd->seekable)
		pd->limit = HEAD_READ;
	have = in_fill(pd, 16);
	pd->limit = UINT64_MAX;
	return have;
}

static struct tk_perfdata *open_fd(int fd, const char *name, bool own_fd, bool strict)
{
	struct tk_perfdata *pd = calloc(1, sizeof(*pd));
	struct stat st;
	uint8_t h[TK_PERF_HEADER_SIZE];
	uint64_t magic, hsize;
	int64_t have;
	int r;

	if (!pd) {
		tk_fail(ENOMEM, "out of memory");
		errno = ENOMEM;
		if (own_fd)
			close(fd);
		return NULL;
	}
	pd->whole_evsel = -1;
	/* Without it (no memory) every lookup searches: slower, the same answers. */
	pd->idcache = malloc(ID_CACHE * sizeof(*pd->idcache));
	for (size_t i = 0; pd->idcache && i < ID_CACHE; i++)
		pd->idcache[i].evsel = -1;
	pd->fd = fd;
	pd->own_fd = own_fd;
	pd->strict = strict;
	pd->name = strdup(name ? name : "perf.data");
	pd->scratch = malloc(65536);
	pd->limit = UINT64_MAX;
	pd->keep = UINT64_MAX;
	if (!pd->name || !pd->scratch) {
		r = tk_fail(ENOMEM, "out of memory");
		goto fail;
	}
	pd->info.path = pd->name;
	if (fstat(fd, &st) < 0) {
		r = tk_fail(errno, "%s: %s", pd->name, strerror(errno));
		goto fail;
	}
	pd->seekable = S_ISREG(st.st_mode);
	if (pd->seekable)
		pd->info.file_size = (uint64_t)st.st_size;

	have = read_head(pd);
	if (have < 0) {
		r = (int)have;
		goto fail;
	}
	if (have < 16) {
		r = fail_at(pd, 0, "file of %" PRId64 " bytes is too short for a perf.data header",
			    have);
		goto fail;
	}
	magic = tk_load_u64(pd->buf + pd->start, false);
	hsize = tk_load_u64(pd->buf + pd->start + 8, false);
	if (magic == TK_PERF_MAGIC_SWAPPED && pd->seekable) {
		/*
		 * The other byte order: read a copy swapped to ours instead
		 * (perfdata-swap.c), from the start, as if it were the file.
		 */
		int nfd;

		r = tk_perfdata_swap_to_host(fd, pd->name, pd->info.file_size, &nfd);
		if (r < 0)
			goto fail;
		if (pd->own_fd)
			close(pd->fd);
		pd->fd = nfd;
		pd->own_fd = true;
		pd->start = pd->end = 0;
		pd->pos = 0;
		pd->eof = false;
		have = read_head(pd);
		if (have < 0) {
			r = (int)have;
			goto fail;
		}
		magic = tk_load_u64(pd->buf + pd->start, false);
		hsize = tk_load_u64(pd->buf + pd->start + 8, false);
	}
	if (magic == TK_PERF_MAGIC_SWAPPED) {
		/*
		 * A stream of the other byte order that cannot be read twice
		 * (a pipe): its records would have to be swapped as they come
		 * in; refuse clearly instead (from a file it reads).
		 */
		r = tk_fail_at(
			ENOTSUP, pd->name, 0,
			"perf.data %sin %s byte order (magic reads "
			"\"2ELIFREP\"): a stream of another byte order than this machine's (%s) "
			"is read from a file, not a pipe",
			hsize == 0x1000000000000000ull ? "pipe stream " : "",
			__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "big-endian" : "little-endian",
			__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little-endian" : "big-endian");
		goto fail;
	}
	if (memcmp(pd->buf + pd->start, "PERFFILE", 8) == 0) {
		r = check_v1(pd, hsize, have);
		if (r < 0)
			goto fail;
	} else if (magic != TK_PERF_MAGIC) {
		r = fail_at(pd, 0, "not a perf.data file (no PERFILE2 magic)");
		goto fail;
	}
	if (hsize == 16) {
		pd->info.pipe = true;
		pd->info.header_size = 16;
		pd->info.data_offset = 16;
		in_consume(pd, 16);
		r = prime_pipe(pd);
		if (r < 0)
			goto fail;
		return pd;
	}
	if (hsize != TK_PERF_HEADER_SIZE && hsize != 72) {
		r = fail_at(pd, 8, "header size %" PRIu64 " is not 104, 72 or 16 (pipe)", hsize);
		goto fail;
	}
	if (!pd->seekable) {
		r = tk_fail(ENOTSUP, "%s: a file-mode perf.data needs a seekable input", pd->name);
		goto fail;
	}
	if (pd->info.file_size < hsize) {
		r = fail_at(pd, 0,
			    "file of %" PRIu64 " bytes is shorter than its header (%" PRIu64 ")",
			    pd->info.file_size, hsize);
		goto fail;
	}
	memset(h, 0, sizeof(h));
	r = pread_full(pd, h, hsize, 0);
	if (r == 0)
		r = read_file_header(pd, h, hsize);
	if (r == 0)
		r = read_attrs(pd);
	if (r == 0)
		r = read_features(pd);
	if (r < 0)
		goto fail;
	/* Point the window at the data section. */
	pd->start = pd->end = 0;
	pd->eof = false;
	pd->pos = pd->info.data_offset;
	pd->limit = pd->info.data_end;
	map_data(pd);
	return pd;
fail:
	tk_perfdata_close(pd);
	errno = -r;
	return NULL;
}

static struct tk_perfdata *open_path(const char *path, bool strict)
{
	int fd;

	if (strcmp(path, "-") == 0)
		return open_fd(0, "<stdin>", false, strict);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		tk_fail(e, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	return open_fd(fd, path, true, strict);
}

struct tk_perfdata *tk_perfdata_open(const char *path)
{
	return open_path(path, true);
}

struct tk_perfdata *tk_perfdata_open_opts(const char *path, const struct tk_perfdata_open_opts *o)
{
	bool strict = o && o->sz >= offsetof(struct tk_perfdata_open_opts, strict) + sizeof(bool) &&
		      o->strict;

	return open_path(path, strict);
}

struct tk_perfdata *tk_perfdata_open_fd(int fd, const char *name)
{
	return open_fd(fd, name, false, true);
}

void tk_perfdata_close(struct tk_perfdata *pd)
{
	if (!pd)
		return;
	for (size_t i = 0; i < pd->nr_evsels; i++) {
		free(pd->evsels[i]->ids);
		free(pd->evsels[i]);
	}
	free(pd->evsels);
	free(pd->idcache);
	free(pd->idmap);
	for (size_t i = 0; i < pd->nr_features; i++)
		free(pd->features[i]);
	free(pd->features);
	for (size_t i = 0; i < pd->nr_owned; i++)
		free(pd->owned[i]);
	free(pd->owned);
	for (size_t i = 0; i < pd->nr_build_ids; i++)
		free(pd->build_ids[i]);
	free(pd->build_ids);
	for (size_t i = 0; i < pd->nr_queue; i++) {
		free(pd->queue[i].data);
		free(pd->queue[i].extra);
	}
	free(pd->queue);
	tk_tracedata_free(pd->td);
	if (pd->map)
		munmap((void *)(uintptr_t)pd->map, (size_t)pd->map_len);
	else if (pd->kept)
		tk_big_free(pd->buf);
	else
		free(pd->buf);
	free(pd->dbuf);
	ZSTD_freeDCtx(pd->dctx);
	free(pd->scratch);
	free(pd->extra);
	free(pd->damage);
	if (pd->own_fd)
		close(pd->fd);
	free(pd->name);
	free(pd);
}

/* ------------------------------------------------------------- getters */

int tk_perfdata_fd(const struct tk_perfdata *pd)
{
	return pd->fd;
}

const uint8_t *tk_perfdata_mapping(const struct tk_perfdata *pd, uint64_t *len)
{
	*len = pd->map ? pd->map_len : 0;
	return pd->map;
}

void tk_perfdata_keep_from(struct tk_perfdata *pd, uint64_t off)
{
	/* A kept window also keeps what it hands out from now on (the caller may queue it). */
	pd->keep = pd->kept && off > pd->pos ? pd->pos : off;
}

int tk_perfdata_read_kept(struct tk_perfdata *pd)
{
	uint8_t *win;

	if (!pd->map || pd->dend != pd->dstart || pd->queue_pos < pd->nr_queue ||
	    pd->end - pd->start > KEPT_MAX_DATA)
		return 0;
	win = tk_big_alloc(KEPT_FIRST);
	if (!win)
		return 0;
	munmap((void *)(uintptr_t)pd->map, (size_t)pd->map_len);
	pd->map = NULL;
	pd->map_len = 0;
	pd->buf = win;
	pd->cap = KEPT_FIRST;
	/* buf[i] is file offset pos - start + i, 8-byte aligned where the file's records are. */
	pd->start = pd->end = (size_t)(pd->pos & 7);
	pd->eof = false;
	pd->kept = true;
	pd->keep = pd->pos;
	return 1;
}

const uint8_t *tk_perfdata_kept_base(const struct tk_perfdata *pd)
{
	return (const uint8_t *)((uintptr_t)pd->buf - (uintptr_t)(pd->pos - pd->start));
}

size_t tk_perfdata_damage_count(const struct tk_perfdata *pd)
{
	return pd->nr_damage;
}

const struct tk_perfdata_damage *tk_perfdata_damage_get(const struct tk_perfdata *pd, size_t i)
{
	return i < pd->nr_damage ? &pd->damage[i] : NULL;
}

const struct tk_perfdata_info *tk_perfdata_get_info(const struct tk_perfdata *pd)
{
	return &pd->info;
}

size_t tk_perfdata_evsel_count(const struct tk_perfdata *pd)
{
	return pd->nr_evsels;
}

const struct tk_perfdata_evsel *tk_perfdata_evsel_get(const struct tk_perfdata *pd, size_t i)
{
	return i < pd->nr_evsels ? &pd->evsels[i]->pub : NULL;
}

int tk_perfdata_evsel_of_id(const struct tk_perfdata *pd, uint64_t id)
{
	size_t lo = 0, hi = pd->nr_idmap;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->idmap[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == pd->nr_idmap || pd->idmap[lo].id != id)
		return -ENOENT;
	return (int)pd->idmap[lo].evsel;
}

size_t tk_perfdata_feature_count(const struct tk_perfdata *pd)
{
	return pd->nr_features;
}

const struct tk_perfdata_feature *tk_perfdata_feature_get(const struct tk_perfdata *pd, size_t i)
{
	return i < pd->nr_features ? pd->features[i] : NULL;
}

const struct tk_perfdata_host *tk_perfdata_get_host(const struct tk_perfdata *pd)
{
	return &pd->host;
}

size_t tk_perfdata_build_id_count(const struct tk_perfdata *pd)
{
	return pd->nr_build_ids;
}

const struct tk_perfdata_build_id *tk_perfdata_build_id_get(const struct tk_perfdata *pd, size_t i)
{
	return i < pd->nr_build_ids ? pd->build_ids[i] : NULL;
}

int tk_perfdata_tracing(const struct tk_perfdata *pd, struct tk_perfdata_tracing *t,
			const void **blob, uint64_t *len)
{
	if (!pd->tracing_blob)
		return -ENOENT;
	if (t)
		*t = pd->tracing;
	if (blob)
		*blob = pd->tracing_blob;
	if (len)
		*len = pd->tracing_len;
	return 0;
}

const struct tk_tracedata *tk_perfdata_get_tracedata(const struct tk_perfdata *pd)
{
	return pd->td;
}

int tk_perfdata_note_damage(struct tk_perfdata *pd, uint64_t off, uint64_t skipped, int64_t lost,
			    const char *what)
{
	return tk_perfdata_note_damage_at(pd, SIZE_MAX, off, skipped, lost, what);
}

bool tk_perfdata_strict(const struct tk_perfdata *pd)
{
	return pd->strict;
}

int tk_perfdata_note_damage_at(struct tk_perfdata *pd, size_t pos, uint64_t off, uint64_t skipped,
			       int64_t lost, const char *what)
{
	struct tk_perfdata_damage *d, *prev;
	size_t tail;
	const char *p;
	char copy[512];

	/* A message from fail_at() keeps only what follows its "NAME: offset 0x...: ". */
	p = strstr(what, ": offset 0x");
	if (p && (p = strstr(p + 11, ": ")))
		what = p + 2;
	snprintf(copy, sizeof(copy), "%s", what); /* @what may be tk_errmsg()'s buffer */
	what = copy;
	if (pd->strict)
		return fail_at(pd, off, "%s", what);
	if (pos >= pd->nr_damage)
		return add_damage(pd, off, skipped, lost, "%s", what);
	/*
	 * In the middle: where it would have gone had it been found in file
	 * order. add_damage() appends, and joins a region that continues the
	 * one before it: the same join here, against the region before @pos.
	 */
	prev = pos ? &pd->damage[pos - 1] : NULL;
	if (prev && prev->offset + prev->skipped == off && off != 0) {
		prev->skipped += skipped;
		if (lost < 0)
			prev->lost_known = false;
		else
			prev->lost += (uint64_t)lost;
		return 0;
	}
	d = realloc(pd->damage, (pd->nr_damage + 1) * sizeof(*d));
	if (!d)
		return tk_fail(ENOMEM, "out of memory");
	pd->damage = d;
	tail = pd->nr_damage - pos;
	memmove(&d[pos + 1], &d[pos], tail * sizeof(*d));
	pd->nr_damage++;
	d = &d[pos];
	memset(d, 0, sizeof(*d));
	d->offset = off;
	d->skipped = skipped;
	d->lost_known = lost >= 0;
	d->lost = lost >= 0 ? (uint64_t)lost : 0;
	snprintf(d->what, sizeof(d->what), "%s", what);
	return 0;
}

uint64_t tk_perfdata_tracing_offset(const struct tk_perfdata *pd, const void *at)
{
	const uint8_t *p = at;

	if (pd->tracing_blob && p >= pd->tracing_blob && p < pd->tracing_blob + pd->tracing_len)
		return pd->tracing_off + (uint64_t)(p - pd->tracing_blob);
	return pd->tracing_off;
}

int tk_perfdata_tracing_format(const struct tk_perfdata *pd, uint32_t index, const char **system,
			       struct tk_perfdata_text *text)
{
	if (!pd->td)
		return -ENOENT;
	return tk_tracedata_format(pd->td, index, system, text);
}

int tk_perfdata_parse_sample(const struct tk_perfdata *pd, const struct tk_perf_record *rec,
			     struct tk_perf_sample *s)
{
	const uint8_t *p = rec->data;
	const struct tk_perf_attr *a0;
	size_t idx = 0, off, bad = 0;
	int r;

	memset(s, 0, sizeof(*s));
	s->attr_index = -1;
	if (pd->nr_evsels == 0)
		return -ENOENT;
	a0 = &pd->evsels[0]->pub.attr;
	if (rec->type != TK_PERF_RECORD_SAMPLE &&
	    (!tk_perf_has_trailer(rec->type) || !(a0->flags & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL)))
		return -ENOENT;
	if (pd->nr_evsels > 1) {
		uint64_t id;
		size_t lo = 0, hi = pd->nr_idmap;

		if (!tk_perf_id_offset(rec->type, a0->sample_type, rec->size, &off))
			return tk_fail_at(ENOENT, pd->name, rec->offset,
					  "%s record carries no "
					  "event id in a file of %zu events",
					  tk_perfdata_record_name(rec->type), pd->nr_evsels);
		id = tk_load_u64(p + off, false);
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (pd->idmap[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == pd->nr_idmap || pd->idmap[lo].id != id)
			return tk_fail_at(ENOENT, pd->name, rec->offset,
					  "%s record has id %" PRIu64 " of no event",
					  tk_perfdata_record_name(rec->type), id);
		idx = pd->idmap[lo].evsel;
	}
	if (rec->type == TK_PERF_RECORD_SAMPLE)
		r = tk_perf_sample_decode(&pd->evsels[idx]->pub.attr, p, rec->size, s, &bad);
	else
		r = tk_perf_trailer_decode(pd->evsels[idx]->pub.attr.sample_type, p, rec->size, s,
					   &bad);
	s->attr_index = (int)idx;
	if (r < 0)
		return fail_at(pd, rec->offset,
			       "%s record of %u bytes is too short for its "
			       "sample fields (sample_type 0x%" PRIx64 ", stopped at +%zu)%s",
			       tk_perfdata_record_name(rec->type), rec->size,
			       pd->evsels[idx]->pub.attr.sample_type, bad,
			       rec->compressed ? " (inside the COMPRESSED record)" : "");
	return 0;
}

int tk_perfdata_parse_stat_config(const struct tk_perf_record *rec, struct tk_perf_stat_config *out)
{
	uint64_t nr;

	memset(out, 0, sizeof(*out));
	if (rec->type != TK_PERF_RECORD_STAT_CONFIG)
		return tk_fail(EINVAL, "a %s record is not STAT_CONFIG",
			       tk_perfdata_record_name(rec->type));
	/* header, nr, then 16 bytes a term; the data includes the header */
	if (rec->size < 16 || (nr = tk_perf_load_u64(rec->data, 1)) > (rec->size - 16u) / 16)
		return tk_fail(EBADMSG,
			       "STAT_CONFIG record of %u bytes at 0x%" PRIx64
			       " is too short for its terms",
			       rec->size, rec->offset);
	out->nr = nr;
	out->terms = (const uint8_t *)rec->data + 16;
	return 0;
}

int tk_perfdata_parse_comm(const struct tk_perf_record *rec, struct tk_perf_comm *out)
{
	const uint8_t *d = rec->data;

	memset(out, 0, sizeof(*out));
	if (rec->type != TK_PERF_RECORD_COMM)
		return tk_fail(EINVAL, "a %s record is not COMM",
			       tk_perfdata_record_name(rec->type));
	/* header, u32 pid, u32 tid, the name (NUL-padded), then any trailer */
	if (rec->size < 17)
		return tk_fail(EBADMSG, "COMM record of %u bytes at 0x%" PRIx64 " has no name",
			       rec->size, rec->offset);
	memcpy(&out->pid, d + 8, 4);
	memcpy(&out->tid, d + 12, 4);
	out->comm = (const char *)d + 16;
	out->len = strnlen(out->comm, rec->size - 16u);
	out->exec = rec->misc & 0x2000;
	return 0;
}

int tk_perfdata_parse_task(const struct tk_perf_record *rec, struct tk_perf_task *out)
{
	const uint8_t *d = rec->data;

	memset(out, 0, sizeof(*out));
	if (rec->type != TK_PERF_RECORD_FORK && rec->type != TK_PERF_RECORD_EXIT)
		return tk_fail(EINVAL, "a %s record is not FORK or EXIT",
			       tk_perfdata_record_name(rec->type));
	/* header, u32 pid, ppid, tid, ptid, u64 time, then any trailer */
	if (rec->size < 32)
		return tk_fail(EBADMSG, "%s record of %u bytes at 0x%" PRIx64 " is too short",
			       tk_perfdata_record_name(rec->type), rec->size, rec->offset);
	memcpy(&out->pid, d + 8, 4);
	memcpy(&out->ppid, d + 12, 4);
	memcpy(&out->tid, d + 16, 4);
	memcpy(&out->ptid, d + 20, 4);
	memcpy(&out->time, d + 24, 8);
	return 0;
}

/* ---------------------------------------------------------------- check */

int tk_perfdata_check(const char *path, const struct tk_perfdata_open_opts *opts,
		      struct tk_perfdata_check_result *res)
{
	struct tk_perfdata *pd;
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	size_t sz = res->sz;
	int r;

	memset(res, 0, sizeof(*res));
	res->sz = sz;
	pd = tk_perfdata_open_opts(path, opts);
	if (!pd)
		return -errno;
	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		res->records++;
		if (rec.type != TK_PERF_RECORD_SAMPLE)
			continue;
		res->samples++;
		r = tk_perfdata_parse_sample(pd, &rec, &s);
		if (r == -ENOENT) {
			res->unknown_id++;
		} else if (r < 0) {
			res->samples_bad++;
			r = salvage(pd, r, rec.offset, rec.size, 1);
			if (r < 0)
				break;
		}
	}
	if (r < 0) {
		tk_perfdata_close(pd);
		return r;
	}
	res->damage = pd->damage ? pd->damage : malloc(1);
	res->nr_damage = pd->nr_damage;
	pd->damage = NULL;
	tk_perfdata_close(pd);
	if (!res->damage)
		return tk_fail(ENOMEM, "out of memory");
	return (int)(res->nr_damage + res->unknown_id > INT_MAX ? INT_MAX
								: res->nr_damage + res->unknown_id);
}
