// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the .dat reader: the input becomes a memfd, is opened
 * with tk_dat_open_fd() and everything reachable is walked: sections,
 * options, metadata views, every CPU of every buffer page by page (records
 * decoded), a seek and a time seek, latency text, option texts, the time
 * merge, and conversions to perf.data, v6 and Perfetto. Any crash, sanitizer
 * report, hang or leak is a bug; errors are expected and ignored.
 *
 * Each input is read twice: strict (tk_dat_open_fd(), the first damage is
 * an error) and salvaging (tk_dat_open_fd_with(), damage becomes a list of
 * regions), where tk_dat_check() also runs and the salvage promise is
 * checked: every page a salvaging reader hands out decodes to its end, and
 * every damaged region has a description. A broken promise aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_cpu(struct tk_dat *d, size_t bi, size_t ci, const struct tk_dat_buffer *b,
		     bool salvage)
{
	struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(d, bi, ci);
	const void *page;
	uint64_t off, last_ts = 0;
	int ret;

	if (!r)
		return;
	while ((ret = tk_dat_cpu_reader_next_page(r, &page, &off)) == 1) {
		struct tk_page_iter it;
		struct tk_page_record rec;

		if (tk_page_iter_init(&it, &b->page_format, page, b->page_format.page_size, NULL) <
		    0) {
			if (salvage)
				abort(); /* a salvaged page's header must read */
			continue;
		}
		while ((ret = tk_page_iter_next(&it, &rec)) == 1) {
			last_ts = rec.timestamp;
			sink += tk_dat_timestamp(d, rec.timestamp) + rec.size;
		}
		if (ret < 0 && salvage)
			abort(); /* a salvaged page must decode to its end */
	}
	if (tk_dat_cpu_reader_size(r) > 0 &&
	    tk_dat_cpu_reader_seek(r, tk_dat_cpu_reader_size(r) / 2) == 0)
		(void)tk_dat_cpu_reader_next_page(r, &page, &off);
	if (tk_dat_cpu_reader_seek_time(r, last_ts / 2) == 0)
		(void)tk_dat_cpu_reader_next_page(r, &page, &off);
	tk_dat_cpu_reader_free(r);
}

/* Every record of every buffer in time order. */
static void walk_merge(struct tk_dat *d)
{
	struct tk_dat_merge *m = tk_dat_merge_new(d, NULL, 0);
	struct tk_dat_merge_record mr;

	if (!m)
		return;
	while (tk_dat_merge_next(m, &mr) == 1)
		sink += mr.ts + mr.cpu + mr.rec.size;
	tk_dat_merge_free(m);
}

/* Convert to perf.data and to .dat v6 into memfds that are thrown away. */
static void convert(struct tk_dat *d)
{
	struct tk_convert_opts o = {.sz = sizeof(o), .version = 6};
	int out = memfd_create("fuzz-dat-perf", MFD_CLOEXEC);

	if (out >= 0) {
		if (tk_convert_dat_to_perf(d, out, "fuzz.data", NULL, NULL) == 0)
			sink += (uint64_t)lseek(out, 0, SEEK_END);
		close(out);
	}
	out = memfd_create("fuzz-dat-v6", MFD_CLOEXEC);
	if (out >= 0) {
		if (tk_convert_dat_to_dat(d, out, "fuzz-v6.dat", &o, NULL) == 0)
			sink += (uint64_t)lseek(out, 0, SEEK_END);
		close(out);
	}
	/* And to Perfetto: every event through the typed, compact and generic encoders. */
	out = memfd_create("fuzz-dat-pftrace", MFD_CLOEXEC);
	if (out >= 0) {
		if (tk_pftrace_write_dat(d, out, "fuzz.pftrace", NULL, NULL) == 0)
			sink += (uint64_t)lseek(out, 0, SEEK_END);
		close(out);
	}
}

static void run(int fd, bool salvage)
{
	TK_OPTS(tk_dat_open_opts, opts, .strict = !salvage);
	struct tk_dat_text t;
	const void *body;
	uint64_t len;
	struct tk_dat *d;

	d = salvage ? tk_dat_open_fd_with(fd, "fuzz.dat", &opts) : tk_dat_open_fd(fd, "fuzz.dat");
	if (!d)
		return;
	for (size_t i = 0; i < tk_dat_section_count(d); i++) {
		const struct tk_dat_section *s = tk_dat_section_get(d, i);

		sink += s->size + s->body_size + (s->description ? s->description[0] : 0);
	}
	for (size_t i = 0; i < tk_dat_option_count(d); i++) {
		const struct tk_dat_option *o = tk_dat_option_get(d, i);

		char text[64];

		if (o->size)
			sink += ((const uint8_t *)o->data)[o->size - 1];
		/* Cut to fit: the decoder must not write past a small buffer. */
		sink += tk_dat_option_describe(d, o, text, sizeof(text));
	}
	for (uint16_t id = 16; id <= 21; id++)
		if (tk_dat_metadata(d, id, &body, &len) == 0 && len)
			sink += ((const uint8_t *)body)[len - 1];
	if (tk_dat_header_page(d, &t) == 0 && t.len)
		sink += (uint8_t)t.data[t.len - 1];
	if (tk_dat_header_event(d, &t) == 0 && t.len)
		sink += (uint8_t)t.data[t.len - 1];
	for (size_t i = 0; i < tk_dat_ftrace_format_count(d); i++)
		if (tk_dat_ftrace_format(d, i, &t) == 0 && t.len)
			sink += (uint8_t)t.data[t.len - 1];
	for (size_t s = 0; s < tk_dat_system_count(d); s++) {
		sink += (uint8_t)tk_dat_system_name(d, s)[0];
		for (size_t i = 0; i < tk_dat_system_format_count(d, s); i++)
			if (tk_dat_system_format(d, s, i, &t) == 0 && t.len)
				sink += (uint8_t)t.data[t.len - 1];
	}
	if (tk_dat_kallsyms(d, &t) == 0 && t.len)
		sink += (uint8_t)t.data[t.len - 1];
	if (tk_dat_printk(d, &t) == 0 && t.len)
		sink += (uint8_t)t.data[t.len - 1];
	if (tk_dat_cmdlines(d, &t) == 0 && t.len)
		sink += (uint8_t)t.data[t.len - 1];
	for (size_t bi = 0; bi < tk_dat_buffer_count(d); bi++) {
		const struct tk_dat_buffer *b = tk_dat_buffer_get(d, bi);

		sink += (uint8_t)b->name[0] + (b->clock ? (uint8_t)b->clock[0] : 0);
		if (b->latency_text) {
			if (tk_dat_latency_text(d, bi, &t) == 0) {
				if (t.len)
					sink += (uint8_t)t.data[t.len - 1];
				free((void *)t.data);
			}
			continue;
		}
		for (size_t ci = 0; ci < b->cpu_count; ci++)
			walk_cpu(d, bi, ci, b, salvage);
	}
	walk_merge(d);
	convert(d);
	if (salvage) {
		uint64_t events = 0;

		(void)tk_dat_check(d, &events);
		sink += events;
		for (size_t i = 0; i < tk_dat_damage_count(d); i++) {
			struct tk_dat_damage dm;

			if (tk_dat_damage_get(d, i, &dm) < 0 || !dm.what || !dm.what[0])
				abort(); /* every region is described */
			sink += dm.offset + dm.skipped + strlen(dm.what);
		}
	} else if (tk_dat_damage_count(d)) {
		abort(); /* a strict reader records nothing */
	}
	tk_dat_close(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_input("fuzz-dat", data, size);

	if (fd < 0)
		return 0;
	run(fd, false);
	run(fd, true);
	close(fd);
	tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
	return 0;
}
