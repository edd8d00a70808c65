// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dat-check: read every part of a .dat file, for `tracekit check`.
 *
 * Open already parses and bounds-checks the header, every section, the
 * options and the metadata bodies but kallsyms and the saved cmdlines, which a v7 reader that
 * salvages reads on first use; what it leaves on disk is those and the CPU
 * data. tk_dat_check() reads them all: kallsyms and cmdlines (tk_dat_kallsyms(),
 * tk_dat_cmdlines()), every CPU of every buffer, page by
 * page through the ordinary per-CPU reader (so chunks are decompressed and page headers checked
 * exactly as a report would), every record on each page decoded, and the text of latency buffers
 * decompressed. Nothing is kept: memory is one reader at a time.
 *
 * The verdict is the reader's: in salvage mode each damaged region lands
 * in the file's damage list (the reader trims a page to its records that
 * decode, so the walk here never meets a bad record, and the damage list
 * holds the rest); in strict mode the first damage is the error returned.
 */
#include <errno.h>
#include <stdlib.h>

#include <tracekit/dat.h>

#include "dat-read-internal.h"
#include "internal/error.h"

static int check_cpu(struct tk_dat *dat, size_t b, size_t c, uint64_t *events)
{
	const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);
	struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(dat, b, c);
	const void *page;
	int ret;

	if (!rd)
		return -(errno ? errno : EIO);
	while ((ret = tk_dat_cpu_reader_next_page(rd, &page, NULL)) > 0) {
		struct tk_page_record rec;
		struct tk_page_iter it;

		ret = tk_page_iter_init(&it, &buf->page_format, page, buf->page_format.page_size,
					NULL);
		while (ret >= 0 && (ret = tk_page_iter_next(&it, &rec)) == 1)
			(*events)++;
		if (ret < 0) {
			ret = tk_fail(EBADMSG, "%s: buffer '%s' CPU %u: %s",
				      tk_dat_get_info(dat)->path, buf->name, buf->cpus[c].cpu,
				      "record runs past the page data");
			break;
		}
	}
	tk_dat_cpu_reader_free(rd);
	return ret;
}

TK_API int tk_dat_check(struct tk_dat *dat, uint64_t *events)
{
	struct tk_dat_text ksyms, cmdlines;
	uint64_t n = 0;
	int ret = tk_dat_kallsyms(dat, &ksyms);

	/* A missing part is no error here; a damaged one is in the list now. */
	if (ret == -ENOENT)
		ret = 0;
	/* The saved cmdlines are read on first use too. */
	if (ret >= 0) {
		ret = tk_dat_cmdlines(dat, &cmdlines);
		if (ret == -ENOENT)
			ret = 0;
	}
	for (size_t b = 0; b < tk_dat_buffer_count(dat) && ret >= 0; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		if (buf->latency_text) {
			struct tk_dat_text text;

			ret = tk_dat_latency_text(dat, b, &text);
			if (ret >= 0)
				free((void *)text.data);
			else
				ret = tk_dat_salvage(dat, ret, buf->section_offset, 0);
			continue;
		}
		for (size_t c = 0; c < buf->cpu_count && ret >= 0; c++)
			ret = check_cpu(dat, b, c, &n);
	}
	if (events)
		*events = n;
	return ret < 0 ? ret : 0;
}
