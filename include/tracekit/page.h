/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * page: the ftrace ring-buffer page ("sub-buffer") codec.
 *
 * One format serves the pages the kernel hands out through trace_pipe_raw,
 * the pages stored in .dat files and the pages tracekit's own user-space
 * ring buffer writes:
 *
 *   u64 timestamp | long commit (4 or 8 bytes) | data ... (page_size - header)
 *
 * commit bits 0-26 = bytes of data; bit 31 = events were missed before this
 * page; bit 30 = the missed count is stored as a long right after the data.
 * Each record starts with a 32-bit word: type_len:5 | time_delta:27 (low
 * bits first on little-endian targets, high bits first on big-endian):
 *   1..28  data of type_len*4 bytes at +4
 *   0      data of array[0]-4 bytes at +8
 *   29     padding: delta 0 ends the page, else array[0] bytes follow
 *   30     time extend: ts += (array[0] << 27) + delta
 *   31     absolute time stamp: low 59 bits = (array[0] << 27) | delta
 * The byte-level facts are in shared/specs/tracedat.md section 6.
 */
#ifndef TRACEKIT_PAGE_H
#define TRACEKIT_PAGE_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How the pages of one trace are laid out. */
struct tk_page_format {
	uint32_t page_size;   /* whole sub-buffer: header + data */
	uint32_t data_offset; /* 8 + long_size: 12 or 16 */
	uint8_t long_size;    /* size of the commit word: 4 or 8 */
	bool big_endian;
};

/**
 * tk_page_format_parse() - read the layout from an events/header_page text
 * @fmt:        receives the layout
 * @text, @len: the text of events/header_page (the kernel's or a file's
 *              copy); not NUL-terminated necessarily
 * @big_endian: byte order of the pages (a .dat header's endian byte)
 *
 * Takes the commit field's size as the long size and data offset + data
 * size as the page size, as libtraceevent does. An empty text means the
 * pre-2.6.31 layout is unknown and is an error here.
 * Return: 0, or -EINVAL (message says which field is missing or absurd).
 */
TK_API int tk_page_format_parse(struct tk_page_format *fmt, const char *text, size_t len,
				bool big_endian);

/**
 * tk_page_format_init() - build a layout without a header_page text
 * Return: 0, or -EINVAL for a long size other than 4/8 or a page size that
 * cannot hold the header plus one record.
 */
TK_API int tk_page_format_init(struct tk_page_format *fmt, uint32_t page_size, uint8_t long_size,
			       bool big_endian);

/**
 * tk_page_format_header_text() - write an events/header_page text for @fmt
 * @buf, @cap: output; the text is NUL-terminated when it fits
 *
 * Used when tracekit writes pages of its own; the text has the kernel's
 * exact token order so libtraceevent accepts it.
 * Return: length of the text without the NUL (like snprintf).
 */
TK_API size_t tk_page_format_header_text(const struct tk_page_format *fmt, char *buf, size_t cap);

/** Facts from a page header. */
struct tk_page_header {
	uint64_t timestamp;
	uint32_t data_size;    /* commit & ((1 << 27) - 1) */
	bool missed_events;    /* commit bit 31 */
	bool missed_stored;    /* commit bit 30: count below is valid */
	uint64_t missed_count; /* events lost before this page, when stored */
};

/**
 * tk_page_read_header() - decode and check a page header
 * @page, @len: the page; @len must be >= fmt->page_size
 *
 * Return: 0, or -EBADMSG when the commit size exceeds the page or the
 * stored count does not fit (message gives the values; the caller prefixes
 * the file and offset).
 */
TK_API int tk_page_read_header(const struct tk_page_format *fmt, const void *page, size_t len,
			       struct tk_page_header *hdr);

/** One decoded record; @data points into the page (no copy). */
struct tk_page_record {
	uint64_t timestamp; /* absolute, in the page's clock units */
	const void *data;   /* payload */
	uint32_t size;	    /* payload bytes (4-byte rounded, as stored) */
	uint32_t offset;    /* offset of the record header within the page */
};

/**
 * struct tk_page_iter - walks the records of one page
 *
 * Public so that it can live on the stack; treat the fields as private.
 */
struct tk_page_iter {
	const uint8_t *data; /* first data byte of the page */
	uint32_t size;	     /* valid data bytes */
	uint32_t pos;
	uint32_t data_offset;
	uint64_t timestamp;
	bool big_endian;
	bool done;
};

/**
 * tk_page_iter_init() - start walking a page
 * @page, @len: the page (borrowed; must stay valid while iterating)
 * @hdr: optional, receives the page header
 *
 * Return: 0, or the error of tk_page_read_header().
 */
TK_API int tk_page_iter_init(struct tk_page_iter *it, const struct tk_page_format *fmt,
			     const void *page, size_t len, struct tk_page_header *hdr);

/**
 * tk_page_iter_next() - next data record
 *
 * Time extends, absolute stamps and padding are applied and skipped; only
 * data records are returned. Padding with a non-zero delta adds its delta,
 * as libtraceevent does, so timestamps match trace-cmd report.
 * Context: hot path: no allocation, no system call.
 * Return: 1 with @rec filled, 0 at the end of the page, -EBADMSG when a
 * record runs past the data (rec->offset then holds the bad record's
 * offset within the page).
 */
TK_API int tk_page_iter_next(struct tk_page_iter *it, struct tk_page_record *rec);

/**
 * struct tk_page_writer - builds one page record by record
 *
 * Public so that it can live on the stack; treat the fields as private.
 */
struct tk_page_writer {
	uint8_t *page;
	struct tk_page_format fmt;
	uint32_t pos; /* bytes of data written */
	uint64_t last_ts;
	uint64_t missed_count;
	bool missed_events;
	bool missed_stored;
};

/**
 * tk_page_writer_init() - start a page in caller memory
 * @page: fmt->page_size bytes, zeroed by this call
 * @timestamp: the page's base timestamp (the first record's delta is
 *             relative to it)
 *
 * Return: 0, or -EINVAL for a bad format.
 */
TK_API int tk_page_writer_init(struct tk_page_writer *w, const struct tk_page_format *fmt,
			       void *page, uint64_t timestamp);

/**
 * tk_page_writer_add() - append a data record
 * @timestamp: must not be before the previous record's (or the page's)
 * @payload, @size: copied; rounded up to 4 bytes with zeros
 *
 * Uses type_len 1..28 up to 112 bytes and the length word beyond, grows a
 * 12-byte record to 16 as the kernel does, and emits a time extend when
 * the gap exceeds 27 bits.
 * Return: 0; -ENOSPC when the record does not fit (the page is unchanged);
 * -EINVAL when @timestamp goes backwards or @size is 0.
 */
TK_API int tk_page_writer_add(struct tk_page_writer *w, uint64_t timestamp, const void *payload,
			      uint32_t size);

/**
 * tk_page_writer_add_absolute() - append an absolute time stamp (type 31)
 * Return: 0, -ENOSPC.
 */
TK_API int tk_page_writer_add_absolute(struct tk_page_writer *w, uint64_t timestamp);

/**
 * tk_page_writer_add_discarded() - append a discarded record (padding with
 * a non-zero delta covering @size payload bytes), as the kernel leaves
 * behind for discarded events
 * Return: 0, -ENOSPC, -EINVAL.
 */
TK_API int tk_page_writer_add_discarded(struct tk_page_writer *w, uint64_t timestamp,
					uint32_t size);

/**
 * tk_page_writer_set_missed() - flag events lost before this page
 * @stored: whether @count is known and stored after the data
 */
TK_API void tk_page_writer_set_missed(struct tk_page_writer *w, bool stored, uint64_t count);

/**
 * tk_page_writer_finish() - write the commit word (and stored count)
 *
 * Reserves room for the stored count when one is set: adds fail with
 * -ENOSPC rather than overwrite it.
 * Return: bytes of data in the page.
 */
TK_API uint32_t tk_page_writer_finish(struct tk_page_writer *w);

#ifdef __cplusplus
}
#endif
#endif
