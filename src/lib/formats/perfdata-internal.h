/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the perf.data reader and writer share: sample decoding (the writer
 * decodes the samples it writes to keep SAMPLE_TIME) and the small helpers
 * of the on-disk encodings. Private to the library; tests may include it.
 */
#ifndef TRACEKIT_PERFDATA_INTERNAL_H
#define TRACEKIT_PERFDATA_INTERNAL_H

#include <tracekit/perfdata.h>

#define TK_PERF_MAGIC			0x32454c4946524550ull /* "PERFILE2" read as a LE u64 */
#define TK_PERF_MAGIC_SWAPPED		0x50455246494c4532ull
#define TK_PERF_HEADER_SIZE		104
#define TK_PERF_ATTR_SIZE		128
#define TK_PERF_FILE_ATTR_SIZE		(TK_PERF_ATTR_SIZE + 16)
#define TK_PERF_BRANCH_HW_INDEX		(1ull << 17)
#define TK_PERF_READ_TOTAL_TIME_ENABLED (1u << 0)
#define TK_PERF_READ_TOTAL_TIME_RUNNING (1u << 1)
#define TK_PERF_READ_ID			(1u << 2)
#define TK_PERF_READ_GROUP		(1u << 3)
#define TK_PERF_READ_LOST		(1u << 4)

/* The sample_id_all trailer's fields. */
#define TK_PERF_TRAILER_BITS                                                                       \
	(TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ID | TK_PERF_SAMPLE_STREAM_ID | \
	 TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_IDENTIFIER)

/*
 * Decode a SAMPLE record (@rec, @size bytes with its 8-byte header) by
 * @attr's sample_type. Sets every field of @s but attr_index.
 * Return: 0, or -EBADMSG with *bad set to the offset within the record
 * where the fields stopped fitting (no message is set).
 */
int tk_perf_sample_decode(const struct tk_perf_attr *attr, const uint8_t *rec, size_t size,
			  struct tk_perf_sample *s, size_t *bad);

/* Decode the sample_id_all trailer of a kernel record; same contract. */
int tk_perf_trailer_decode(uint64_t sample_type, const uint8_t *rec, size_t size,
			   struct tk_perf_sample *s, size_t *bad);

/*
 * A file-mode perf.data of the other byte order (@fd, @size bytes), copied
 * into an anonymous memory file and swapped there to host order
 * (perfdata-swap.c says what is swapped and what is not). On success *out
 * is the new fd, which the caller owns and reads like a native file.
 * Return: 0; -ENOTSUP (a part not supported yet), -EBADMSG, -ENOMEM or an
 * I/O errno, with a message naming @name and the offset.
 */
int tk_perfdata_swap_to_host(int fd, const char *name, uint64_t size, int *out);

/* Kernel record types (1..21) carry a sample_id_all trailer. */
static inline bool tk_perf_has_trailer(uint32_t type)
{
	return type >= 1 && type <= 21 && type != TK_PERF_RECORD_SAMPLE;
}

/*
 * Where the event id of a record sits (offset within the record), judged
 * by @sample_type; false when it carries none.
 */
bool tk_perf_id_offset(uint32_t type, uint64_t sample_type, size_t size, size_t *off);

/*
 * List damage a later reader of the records or texts finds (a sample too
 * short for its fields, an event format that does not parse) as the
 * reader lists its own: @off where it starts, @skipped bytes, @lost events
 * or -1 when unknown, @what says what is wrong (a fail_at() message works:
 * its "NAME: offset 0x...: " prefix is dropped). Return: 0, -ENOMEM; a
 * strict reader fails instead: -EBADMSG, the message naming file and offset.
 */
int tk_perfdata_note_damage(struct tk_perfdata *pd, uint64_t off, uint64_t skipped, int64_t lost,
			    const char *what);

/*
 * tk_perfdata_note_damage() for damage found out of file order (an event
 * format parsed when its first sample prints): the region goes in at index
 * @pos of the list, where it would have been had it been found in order;
 * @pos past the end appends. Same returns.
 */
int tk_perfdata_note_damage_at(struct tk_perfdata *pd, size_t pos, uint64_t off, uint64_t skipped,
			       int64_t lost, const char *what);

/* Whether @pd was opened strict (the first damage is an error). */
bool tk_perfdata_strict(const struct tk_perfdata *pd);

/* The file or stream offset of @at, a pointer into the TRACING_DATA blob. */
uint64_t tk_perfdata_tracing_offset(const struct tk_perfdata *pd, const void *at);

/* The descriptor a reader reads (records of a file sit at their offsets in it). */
int tk_perfdata_fd(const struct tk_perfdata *pd);

/*
 * The length of the fields of the side-band record at @p (MMAP, MMAP2 and
 * COMM up to their name's NUL padded to 8 bytes, FORK and EXIT fixed), of
 * @size bytes in all, before any sample_id_all trailer; 0 for another type
 * or when the fields do not fit. The reader calls a record longer than
 * this and its trailer damaged when plausible records hide in the rest.
 */
size_t tk_perfdata_sideband_fields(const uint8_t *p, uint32_t type, uint32_t size);

/*
 * The file as the reader maps it (file mode: the whole file, @len bytes,
 * its size at open), or NULL (a pipe, or no mapping: records are copies).
 * A record whose data lies inside it sits at its file offset there and
 * stays readable until tk_perfdata_close(); records the reader copied
 * (compressed ones, ones at an odd offset) lie outside it and live until
 * the next tk_perfdata_next() only.
 */
const uint8_t *tk_perfdata_mapping(const struct tk_perfdata *pd, uint64_t *len);

/*
 * The caller still reads records at file offset @off and after (UINT64_MAX:
 * none it was handed): the reader keeps their pages of the mapping resident
 * and hands back only those well below the lower of @off and its position.
 * Records below stay readable (a touch faults them in again); for a
 * mapping this is about memory and speed, not validity. A kept window
 * (tk_perfdata_read_kept()) keeps only the bytes from @off on.
 */
void tk_perfdata_keep_from(struct tk_perfdata *pd, uint64_t off);

/*
 * Read the rest of a mapped file (tk_perfdata_mapping() non-NULL, nothing
 * read past the header records yet) through a window of pread() copies
 * that keeps every byte from the tk_perfdata_keep_from() offset on, in
 * place of the mapping, which goes: tk_perfdata_mapping() then returns
 * NULL. Records handed out from then on that lie in the window are found
 * at tk_perfdata_kept_base() + their offset, which holds until the next
 * tk_perfdata_next*() call and, for those at or after the keep offset,
 * across calls at the base the reader gives after them.
 * Return: 1 when switched, 0 when not (no mapping, more than 1 GiB of data
 * left, no memory).
 */
int tk_perfdata_read_kept(struct tk_perfdata *pd);
const uint8_t *tk_perfdata_kept_base(const struct tk_perfdata *pd);

/* A SAMPLE handed out by tk_perfdata_next_samples(): it lies at mapping + @offset. */
struct tk_perf_sref {
	uint64_t offset;
	uint32_t size;
	/*
	 * The evsel index tk_perfdata_parse_sample() would give, which then
	 * decodes the sample without error; -1: not known.
	 */
	int32_t evsel;
};

/*
 * Up to @n records at the reader's position that tk_perfdata_next() would
 * hand out on its fast path, one after the other, as whole aligned SAMPLEs
 * of the mapping (same checks, same time kept for resync()): for a loop
 * that reads millions, without a struct tk_perf_record each or a second
 * lookup of the event. Stops before anything else (tk_perfdata_next()
 * then hands it out); 0 also when the file is not mapped, the read is
 * strict, or pipe mode's queue is not drained. @evsel is -1 unless the
 * sample has exactly its fields' size or the damage test decoded it whole.
 */
size_t tk_perfdata_next_samples(struct tk_perfdata *pd, struct tk_perf_sref *out, size_t n);

/*
 * For @rec, the record tk_perfdata_next() handed out last (no other call
 * of the reader since): the evsel index tk_perfdata_parse_sample() would
 * give when the reader's damage test decoded the SAMPLE whole (so parsing
 * it cannot fail), else -1. What tk_perf_sref's @evsel says for a run.
 */
int32_t tk_perfdata_whole_evsel(const struct tk_perfdata *pd, const struct tk_perf_record *rec);

/* perf_header_string length for @s: strlen + NUL rounded up to 64. */
static inline uint32_t tk_perf_string_len(size_t n)
{
	return (uint32_t)((n + 1 + 63) & ~(size_t)63);
}

struct tk_bytebuf;

/*
 * tk_perf_put_string() - a perf_header_string: u32 length (the string's
 * bytes and NUL rounded up to 64), the string, NUL padding (perfdata-write.c;
 * the perf recorder's topology features use it too).
 */
void tk_perf_put_string(struct tk_bytebuf *b, const char *s);

#endif
