// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the page decoder and the header_page parser.
 *
 * Input: byte 0 holds flags (bit 0 big-endian, bit 1 8-byte long); the rest
 * is a page, zero-padded to the next power of two (at least 32, at most
 * 64 KiB; longer inputs are cut). The page goes through
 * tk_page_read_header() and the iterator to its end; every record returned
 * must lie inside the page's data. The same bytes are parsed as a
 * header_page text.
 *
 * Oracle: the records of a page that decodes cleanly are written again with
 * tk_page_writer_* and must decode to the same timestamps and payloads; and
 * tk_page_iter_intact() says a page is whole exactly when the iterator
 * reaches its end without an error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/page.h>

#include "page-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAGE    (64U * 1024)
#define MAX_RECORDS (MAX_PAGE / 4)

struct seen {
	uint64_t ts;
	uint32_t offset;
	uint32_t size;
};

static void check(int cond)
{
	if (!cond)
		__builtin_trap();
}

/* Rewrite the decoded records with the writer and compare. */
static void rewrite(const struct tk_page_format *fmt, const uint8_t *page,
		    const struct tk_page_header *hdr, const struct seen *recs, size_t n)
{
	struct tk_page_writer w;
	struct tk_page_iter it;
	struct tk_page_record r;
	uint8_t *out = malloc(fmt->page_size);
	size_t i;

	if (!out)
		return;
	check(tk_page_writer_init(&w, fmt, out, hdr->timestamp) == 0);
	for (i = 0; i < n; i++) {
		/*
		 * Payloads whose stored size the writer would change (8 bytes
		 * grow to 12, unaligned type-0 lengths round up) or that no
		 * longer fit are outside the oracle.
		 */
		if (recs[i].size == 0 || recs[i].size == 8 || recs[i].size % 4)
			goto out;
		if (tk_page_writer_add(&w, recs[i].ts, page + recs[i].offset, recs[i].size) < 0)
			goto out;
	}
	tk_page_writer_finish(&w);
	check(tk_page_iter_init(&it, fmt, out, fmt->page_size, NULL) == 0);
	for (i = 0; i < n; i++) {
		check(tk_page_iter_next(&it, &r) == 1);
		check(r.timestamp == recs[i].ts);
		check(r.size == recs[i].size);
		check(!memcmp(r.data, page + recs[i].offset, r.size));
	}
	check(tk_page_iter_next(&it, &r) == 0);
out:
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_page_format fmt;
	struct tk_page_header hdr;
	struct tk_page_iter it;
	struct tk_page_record rec;
	struct seen *recs;
	uint32_t page_size = 32;
	uint8_t *page;
	size_t n = 0;
	bool intact;
	int ret;

	if (size < 1)
		return 0;

	/* The same bytes as a header_page text. */
	if (tk_page_format_parse(&fmt, (const char *)data + 1, size - 1, data[0] & 1) == 0) {
		check(fmt.long_size == 4 || fmt.long_size == 8);
		check(fmt.data_offset == 8U + fmt.long_size);
		check(fmt.page_size >= 32);
	}

	while (page_size < size - 1 && page_size < MAX_PAGE)
		page_size <<= 1;
	if (tk_page_format_init(&fmt, page_size, data[0] & 2 ? 8 : 4, data[0] & 1) < 0)
		__builtin_trap();
	/* Exactly page_size bytes, so ASan sees any read past the page. */
	page = calloc(1, page_size);
	recs = malloc(sizeof(*recs) * MAX_RECORDS);
	if (!page || !recs)
		goto out;
	memcpy(page, data + 1, size - 1 < page_size ? size - 1 : page_size);

	if (tk_page_read_header(&fmt, page, page_size, &hdr) < 0) {
		check(tk_page_iter_init(&it, &fmt, page, page_size, NULL) < 0);
		goto out;
	}
	check(tk_page_iter_init(&it, &fmt, page, page_size, NULL) == 0);
	intact = tk_page_iter_intact(&it);
	while ((ret = tk_page_iter_next(&it, &rec)) == 1) {
		const uint8_t *d = rec.data;
		uint32_t off = (uint32_t)(d - page);

		/* Every step consumes at least 4 bytes: no more records than words. */
		check(n < MAX_RECORDS && n <= hdr.data_size / 4);
		check(d >= page + fmt.data_offset);
		check((uint64_t)off + rec.size <= (uint64_t)fmt.data_offset + hdr.data_size);
		check(rec.offset >= fmt.data_offset && rec.offset < off);
		recs[n].ts = rec.timestamp;
		recs[n].offset = off;
		recs[n].size = rec.size;
		n++;
	}
	check(intact == (ret == 0));
	if (ret == 0)
		rewrite(&fmt, page, &hdr, recs, n);
	else
		check(rec.offset >= fmt.data_offset &&
		      rec.offset < fmt.data_offset + hdr.data_size);
out:
	free(recs);
	free(page);
	return 0;
}
