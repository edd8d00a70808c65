// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the .dat writer.
 *
 * Every file is written from deterministic pages (records built with
 * tk_page_writer_*) and metadata bodies, then checked three ways:
 *   - through the reader (tk_dat_open ...): metadata bodies, options and
 *     every page come back byte-identical;
 *   - by a small independent parser in this file that checks the layout
 *     invariants on the raw bytes (sections tile the file, STRINGS last,
 *     DONE chain, page-aligned uncompressed data, BUFFER sizes without the
 *     chunk count, chunk sizes, descriptions);
 *   - against the real trace-cmd when it is installed: files carrying the
 *     live kernel's header_page and print format, with print events we
 *     encode, must be reported with every string and pass --check-events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "dat-internal.h"
#include "internal/bytebuf.h"
#include "internal/bytes.h"
#include "tk-test-texts.h"
#include "tk-test.h"
#include "tk-tmpdir.h"

#define PAGE	 4096u
#define NCPUS	 4u
#define PRINT_ID 5

/* ------------------------------------------------------------ fixtures */

struct mode {
	const char *label;
	int version;
	enum tk_compression comp;
	bool big;
	uint32_t chunk_pages; /* 0: default 10 */
	bool instance;	      /* add buffer "inst" */
	bool empty_cpus;      /* CPUs 1 and 3 of the top buffer get no pages */
	bool pages;	      /* write a top buffer at all */
	bool latency;	      /* add a latency text */
	bool skip_meta;	      /* leave out sections 19 and 20 */
};

static const char print_format_text[] = "name: print\nID: 5\nformat:\n" TK_TEST_COMMON_FIELDS "\n"
					"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
					"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\n"
					"print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n";

/* Metadata bodies in the v7 layout (tracedat.md 2.7). */
struct meta {
	struct tk_bytebuf body[6];
};

static void meta_build(struct meta *m, const struct tk_page_format *fmt, const char *hp,
		       size_t hp_len, const char *he, size_t he_len, const char *print_fmt,
		       bool big)
{
	char hpbuf[1024];
	static const char kallsyms[] = "ffffffff81000000 T _stext\nffffffff81000100 T tk_fn\n";
	static const char printk[] = "0xffffffff82000000 : \"tk printk %d\\n\"\n";
	static const char cmdlines[] = "1234 tkproc\n4321 other\n";
	static const char evfmt[] =
		"name: tkev\nID: 900\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
		"print fmt: \"x\"\n";
	struct tk_bytebuf *b;

	for (int i = 0; i < 6; i++)
		tk_bytebuf_init(&m->body[i], big);
	if (!hp) {
		hp_len = tk_page_format_header_text(fmt, hpbuf, sizeof(hpbuf));
		assert_true(hp_len < sizeof(hpbuf));
		hp = hpbuf;
	}
	b = &m->body[0];
	tk_bytebuf_put(b, "header_page", 12);
	tk_bytebuf_put_u64(b, hp_len);
	tk_bytebuf_put(b, hp, hp_len);
	tk_bytebuf_put(b, "header_event", 13);
	tk_bytebuf_put_u64(b, he_len);
	tk_bytebuf_put(b, he, he_len);

	b = &m->body[1];
	tk_bytebuf_put_u32(b, 1);
	tk_bytebuf_put_u64(b, strlen(print_fmt));
	tk_bytebuf_put(b, print_fmt, strlen(print_fmt));

	b = &m->body[2];
	tk_bytebuf_put_u32(b, 1);
	tk_bytebuf_put(b, "tksys", 6);
	tk_bytebuf_put_u32(b, 1);
	tk_bytebuf_put_u64(b, strlen(evfmt));
	tk_bytebuf_put(b, evfmt, strlen(evfmt));

	b = &m->body[3];
	tk_bytebuf_put_u32(b, (uint32_t)strlen(kallsyms));
	tk_bytebuf_put(b, kallsyms, strlen(kallsyms));

	b = &m->body[4];
	tk_bytebuf_put_u32(b, (uint32_t)strlen(printk));
	tk_bytebuf_put(b, printk, strlen(printk));

	b = &m->body[5];
	tk_bytebuf_put_u64(b, strlen(cmdlines));
	tk_bytebuf_put(b, cmdlines, strlen(cmdlines));
}

static void meta_release(struct meta *m)
{
	for (int i = 0; i < 6; i++)
		tk_bytebuf_release(&m->body[i]);
}

/* The body v6 writes for a skipped id. */
static void empty_body(int id, struct tk_bytebuf *b, bool big)
{
	tk_bytebuf_init(b, big);
	switch (id) {
	case 16:
		tk_bytebuf_put(b, "header_page", 12);
		tk_bytebuf_put_u64(b, 0);
		tk_bytebuf_put(b, "header_event", 13);
		tk_bytebuf_put_u64(b, 0);
		break;
	case 21:
		tk_bytebuf_put_u64(b, 0);
		break;
	default:
		tk_bytebuf_put_u32(b, 0);
	}
}

/* A print event payload: common fields, ip, NUL-terminated string (spec 6.6). */
static uint32_t print_payload(uint8_t *out, size_t cap, uint16_t type, int32_t pid, const char *s,
			      bool big)
{
	size_t n = strlen(s) + 1;

	assert_true(16 + n <= cap);
	memset(out, 0, 16);
	tk_store_u16(out, type, big);
	tk_store_u32(out + 4, (uint32_t)pid, big);
	tk_store_u64(out + 8, 0xffffffff81000100ull, big);
	memcpy(out + 16, s, n);
	return (uint32_t)(16 + n);
}

static uint64_t page_ts(unsigned buf, unsigned cpu, unsigned page)
{
	return 1000000000ull + (uint64_t)page * 1000000 + cpu * 1000 + buf * 100;
}

/* Deterministic page: a few print records naming buffer, CPU, page, record. */
static void make_page(const struct tk_page_format *fmt, uint8_t *page, unsigned buf, unsigned cpu,
		      unsigned idx)
{
	struct tk_page_writer pw;
	uint64_t ts = page_ts(buf, cpu, idx);
	unsigned nrec = 3 + idx % 5;

	assert_int_equal(tk_page_writer_init(&pw, fmt, page, ts), 0);
	for (unsigned r = 0; r < nrec; r++) {
		uint8_t payload[128];
		char s[64];
		uint32_t n;

		snprintf(s, sizeof(s), "tk-b%u-c%u-p%u-r%u", buf, cpu, idx, r);
		n = print_payload(payload, sizeof(payload), PRINT_ID, 1234, s, fmt->big_endian);
		assert_int_equal(tk_page_writer_add(&pw, ts + r * 10, payload, n), 0);
	}
	tk_page_writer_finish(&pw);
}

/* Pages of buffer b (0 top, 1 inst) on a CPU, per mode. */
static unsigned npages(const struct mode *m, unsigned buf, unsigned cpu)
{
	static const unsigned top[NCPUS] = {23, 5, 1, 2};
	static const unsigned inst[NCPUS] = {2, 0, 4, 0};

	if (buf == 1)
		return inst[cpu];
	if (m->empty_cpus && (cpu == 1 || cpu == 3))
		return 0;
	return top[cpu];
}

static uint8_t *make_pages(const struct tk_page_format *fmt, unsigned buf, unsigned cpu, unsigned n)
{
	uint8_t *p = calloc(n ? n : 1, PAGE);

	assert_non_null(p);
	for (unsigned i = 0; i < n; i++)
		make_page(fmt, p + (size_t)i * PAGE, buf, cpu, i);
	return p;
}

static char *latency_text(size_t *len)
{
	size_t cap = 100000, n = 0;
	char *t = malloc(cap);

	assert_non_null(t);
	for (unsigned i = 0; n + 64 < cap; i++)
		n += (size_t)snprintf(t + n, cap - n, "  <idle>-0  0d... %6u.%03uus : line %u\n", i,
				      i % 1000, i);
	*len = n;
	return t;
}

/* Options every file carries (before data), and one added after data (v7). */
struct opt {
	uint16_t id;
	const void *data;
	uint32_t size;
};

static const uint8_t cpucount_le[4] = {NCPUS, 0, 0, 0};
static const uint8_t cpucount_be[4] = {0, 0, 0, NCPUS};
static const uint8_t unknown_payload[3] = {1, 2, 3};

static void early_options(const struct mode *m, struct opt *o, size_t *n)
{
	static const char uname[] = "Linux tk 6.0 x86_64";
	static const char version[] = "tk-test 0.1";
	static const char clock[] = "[local] global counter\n";

	o[0] = (struct opt){TK_DAT_OPTION_UNAME, uname, sizeof(uname)};
	o[1] = (struct opt){TK_DAT_OPTION_VERSION, version, sizeof(version)};
	o[2] = (struct opt){TK_DAT_OPTION_TRACECLOCK, clock, sizeof(clock)};
	o[3] = (struct opt){TK_DAT_OPTION_CPUCOUNT, m->big ? cpucount_be : cpucount_le, 4};
	o[4] = (struct opt){99, unknown_payload, sizeof(unknown_payload)};
	*n = 5;
	/* v6 latency files cannot have TRACECLOCK (see test_error_state_machine). */
	if (m->version == 6 && m->latency)
		o[2] = o[--*n];
}

static const char late_date[] = "0x10";

static void write_buffer(struct tk_dat_writer *w, const struct mode *m,
			 const struct tk_page_format *fmt, unsigned buf)
{
	assert_int_equal(tk_dat_writer_begin_buffer(w, buf ? "inst" : "", "local", PAGE, NCPUS), 0);
	for (unsigned cpu = 0; cpu < NCPUS; cpu++) {
		unsigned n = npages(m, buf, cpu);
		uint8_t *pages;
		/* Odd batches cover both the accumulating and the whole-chunk paths. */
		static const unsigned batch[] = {1, 7, 12, 3};
		unsigned done = 0;

		if (cpu == 3 && buf == 1)
			continue; /* a CPU never begun */
		pages = make_pages(fmt, buf, cpu, n);
		assert_int_equal(tk_dat_writer_begin_cpu(w, cpu), 0);
		for (unsigned i = 0; done < n; i++) {
			unsigned k = batch[i % 4];

			if (k > n - done)
				k = n - done;
			assert_int_equal(tk_dat_writer_write_pages(w, pages + (size_t)done * PAGE,
								   (uint64_t)k * PAGE),
					 0);
			done += k;
		}
		assert_int_equal(tk_dat_writer_end_cpu(w), 0);
		free(pages);
	}
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
}

static void write_file(const char *path, const struct mode *m, struct meta *meta)
{
	struct tk_dat_writer_opts o = {
		.sz = sizeof(struct tk_dat_writer_opts),
		.version = m->version,
		.compression = m->comp,
		.big_endian = m->big,
		.page_size = PAGE,
		.chunk_pages = m->chunk_pages,
	};
	struct tk_page_format fmt;
	struct tk_dat_writer *w;
	struct opt opts[8];
	size_t nopts;

	assert_int_equal(tk_page_format_init(&fmt, PAGE, 8, m->big), 0);
	meta_build(meta, &fmt, NULL, 0, tk_test_header_event, strlen(tk_test_header_event),
		   print_format_text, m->big);
	w = tk_dat_writer_open(path, &o);
	if (!w)
		fail_msg("open %s: %s", path, tk_errmsg());
	for (int id = 16; id <= 21; id++) {
		if (m->skip_meta && (id == 19 || id == 20))
			continue;
		assert_int_equal(tk_dat_writer_add_metadata(w, (uint16_t)id,
							    meta->body[id - 16].data,
							    meta->body[id - 16].len),
				 0);
	}
	early_options(m, opts, &nopts);
	for (size_t i = 0; i < nopts; i++)
		assert_int_equal(
			tk_dat_writer_add_option(w, opts[i].id, opts[i].data, opts[i].size), 0);
	if (m->instance)
		assert_int_equal(tk_dat_writer_declare_buffer(w, "inst"), 0);
	if (m->pages) {
		write_buffer(w, m, &fmt, 0);
		if (m->version == 7)
			assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_DATE, late_date,
								  sizeof(late_date)),
					 0);
		if (m->instance)
			write_buffer(w, m, &fmt, 1);
	}
	if (m->latency) {
		size_t len;
		char *t = latency_text(&len);

		assert_int_equal(tk_dat_writer_add_latency_text(w, "", "local", t, len), 0);
		free(t);
	}
	if (tk_dat_writer_finish(w))
		fail_msg("finish %s: %s", path, tk_errmsg());
	tk_dat_writer_close(w);
}

struct file {
	uint8_t *data;
	size_t len;
};

static void read_whole(const char *path, struct file *f)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	f->len = (size_t)st.st_size;
	f->data = malloc(f->len + 1);
	assert_non_null(f->data);
	assert_int_equal(pread(fd, f->data, f->len, 0), (ssize_t)f->len);
	close(fd);
}

/* ------------------------------------------- byte-level checks: v7 */

struct v7_section {
	uint16_t id, flags;
	int32_t sid;
	uint64_t off, size;
};

static uint8_t *decompress(enum tk_compression kind, const uint8_t *src, uint32_t csize,
			   uint32_t usize)
{
	struct tk_codec *c = tk_codec_new(kind, 0);
	uint8_t *out = malloc(usize ? usize : 1);

	assert_non_null(c);
	assert_non_null(out);
	assert_int_equal(tk_codec_decompress(c, out, usize, src, csize), (int64_t)usize);
	tk_codec_free(c);
	return out;
}

/* Body of a v7 section, decompressed when flagged; *len receives its size. */
static uint8_t *section_body(const struct file *f, const struct v7_section *s,
			     enum tk_compression kind, bool big, uint64_t *len)
{
	const uint8_t *b = f->data + s->off + 16;
	uint8_t *out;

	if (!(s->flags & 1)) {
		out = malloc(s->size + 1);
		assert_non_null(out);
		memcpy(out, b, s->size);
		*len = s->size;
		return out;
	}
	assert_true(s->size >= 8);
	uint32_t cs = tk_load_u32(b, big), us = tk_load_u32(b + 4, big);
	assert_int_equal((uint64_t)cs + 8, s->size);
	*len = us;
	return decompress(kind, b + 8, cs, us);
}

static const struct v7_section *section_at(const struct v7_section *secs, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (secs[i].off == off)
			return &secs[i];
	return NULL;
}

/* Check one CPU's data against the pages we generated. */
static void check_cpu_bytes(const struct file *f, const struct mode *m, bool compressed,
			    const struct v7_section *sec, unsigned buf, uint32_t cpu, uint64_t off,
			    uint64_t size, bool big)
{
	struct tk_page_format fmt;
	unsigned n = npages(m, buf, cpu);
	uint8_t *want;
	uint64_t end = sec ? sec->off + 16 + sec->size : f->len;

	assert_int_equal(tk_page_format_init(&fmt, PAGE, 8, big), 0);
	want = make_pages(&fmt, buf, cpu, n);
	assert_true(n > 0);
	assert_int_equal(off % PAGE, 0);
	if (sec)
		assert_true(off >= sec->off + 16);
	if (!compressed) {
		assert_int_equal(size, (uint64_t)n * PAGE);
		assert_true(off + size <= end);
		assert_memory_equal(f->data + off, want, size);
	} else {
		uint32_t count = tk_load_u32(f->data + off, big);
		uint64_t pos = off + 4, sum = 0, ustream = 0;
		uint32_t chunk_pages = m->chunk_pages ? m->chunk_pages : 10;

		assert_true(count == (n + chunk_pages - 1) / chunk_pages);
		for (uint32_t i = 0; i < count; i++) {
			uint32_t cs = tk_load_u32(f->data + pos, big);
			uint32_t us = tk_load_u32(f->data + pos + 4, big);
			uint8_t *u;

			assert_int_equal(us % PAGE, 0);
			assert_true(pos + 8 + cs <= end);
			u = decompress(m->comp, f->data + pos + 8, cs, us);
			assert_memory_equal(u, want + ustream, us);
			free(u);
			ustream += us;
			sum += 8 + (uint64_t)cs;
			pos += 8 + (uint64_t)cs;
		}
		assert_int_equal(ustream, (uint64_t)n * PAGE);
		/* The BUFFER size excludes the 4-byte chunk count. */
		assert_int_equal(size, sum);
	}
	free(want);
}

static void check_v7_bytes(const char *path, const struct mode *m, const struct meta *meta)
{
	struct v7_section secs[64];
	size_t nsec = 0, pos;
	struct file f;
	bool big = m->big;
	uint64_t first_opt, next;
	uint8_t *strings = NULL;
	uint64_t strings_len = 0;
	unsigned buffers_seen = 0, texts_seen = 0, dates_seen = 0;

	read_whole(path, &f);
	assert_memory_equal(f.data, "\x17\x08\x44tracing7", 11);
	assert_int_equal(f.data[11], 0);
	assert_int_equal(f.data[12], big ? 1 : 0);
	assert_int_equal(f.data[13], 8);
	assert_int_equal(tk_load_u32(f.data + 14, big), PAGE);
	pos = 18;
	assert_string_equal((char *)f.data + pos, tk_codec_name(m->comp));
	pos += strlen((char *)f.data + pos) + 1;
	if (m->comp == TK_COMPRESS_NONE)
		assert_string_equal((char *)f.data + pos, "");
	else
		assert_string_equal((char *)f.data + pos, tk_codec_version(m->comp));
	pos += strlen((char *)f.data + pos) + 1;
	first_opt = tk_load_u64(f.data + pos, big);
	pos += 8;

	/* Sections tile the file to EOF. */
	while (pos < f.len) {
		struct v7_section *s = &secs[nsec++];

		assert_true(nsec < 64);
		assert_true(pos + 16 <= f.len);
		s->off = pos;
		s->id = tk_load_u16(f.data + pos, big);
		s->flags = tk_load_u16(f.data + pos + 2, big);
		s->sid = (int32_t)tk_load_u32(f.data + pos + 4, big);
		s->size = tk_load_u64(f.data + pos + 8, big);
		assert_true(s->size <= f.len - pos - 16);
		pos += 16 + s->size;
	}
	assert_int_equal(pos, f.len);
	assert_int_equal(secs[nsec - 1].id, TK_DAT_SECTION_STRINGS);
	for (size_t i = 0; i + 1 < nsec; i++)
		assert_int_not_equal(secs[i].id, TK_DAT_SECTION_STRINGS);
	strings = section_body(&f, &secs[nsec - 1], m->comp, big, &strings_len);
	assert_int_equal(!!(secs[nsec - 1].flags & 1), m->comp != TK_COMPRESS_NONE);

	/* Descriptions, exactly as trace-cmd names them. */
	for (size_t i = 0; i < nsec; i++) {
		const struct v7_section *s = &secs[i];
		const char *d;

		assert_true(s->sid >= 0 && (uint64_t)s->sid < strings_len);
		d = (const char *)strings + s->sid;
		switch (s->id) {
		case 0:
			assert_string_equal(d, "options");
			break;
		case 15:
			assert_string_equal(d, "strings");
			break;
		case 16:
			assert_string_equal(d, "headers");
			break;
		case 17:
			assert_string_equal(d, "ftrace events");
			break;
		case 18:
			assert_string_equal(d, "events format");
			break;
		case 19:
			assert_string_equal(d, "kallsyms");
			break;
		case 20:
			assert_string_equal(d, "printk");
			break;
		case 21:
			assert_string_equal(d, "command lines");
			break;
		case 22:
			assert_string_equal(d, "buffer latency");
			break;
		case 3:
			assert_true(!strcmp(d, "buffer flyrecord ") ||
				    !strcmp(d, "buffer flyrecord inst"));
			break;
		default:
			fail_msg("unexpected section %u", s->id);
		}
		if (s->id >= 16 && s->id <= 21)
			assert_int_equal(!!(s->flags & 1), m->comp != TK_COMPRESS_NONE);
		if (s->id == 0)
			assert_int_equal(s->flags, 0);
	}

	/* Follow the OPTIONS chain from the header. */
	unsigned nopt_sections = 0;
	struct opt want[8];
	size_t nwant;
	bool found[8] = {0};
	bool meta_seen[6] = {0};

	early_options(m, want, &nwant);
	for (next = first_opt; next; nopt_sections++) {
		const struct v7_section *s = section_at(secs, nsec, next);
		uint64_t blen, p = 0;
		uint8_t *b;

		assert_non_null(s);
		assert_int_equal(s->id, 0);
		b = section_body(&f, s, m->comp, big, &blen);
		next = 0;
		for (;;) {
			uint16_t id;
			uint32_t size;
			const uint8_t *d;

			assert_true(p + 6 <= blen);
			id = tk_load_u16(b + p, big);
			size = tk_load_u32(b + p + 2, big);
			d = b + p + 6;
			assert_true(p + 6 + size <= blen);
			p += 6 + size;
			if (id == 0) {
				assert_int_equal(size, 8);
				next = tk_load_u64(d, big);
				assert_int_equal(p, blen);
				break;
			}
			if (id >= 16 && id <= 21) {
				const struct v7_section *ms =
					section_at(secs, nsec, tk_load_u64(d, big));
				uint64_t mlen;
				uint8_t *mb;

				assert_non_null(ms);
				assert_int_equal(ms->id, id);
				mb = section_body(&f, ms, m->comp, big, &mlen);
				assert_int_equal(mlen, meta->body[id - 16].len);
				assert_memory_equal(mb, meta->body[id - 16].data, mlen);
				free(mb);
				assert_int_equal(nopt_sections, 0);
				meta_seen[id - 16] = true;
			} else if (id == TK_DAT_OPTION_BUFFER) {
				const struct v7_section *fs =
					section_at(secs, nsec, tk_load_u64(d, big));
				const char *name = (const char *)d + 8;
				const char *clock = name + strlen(name) + 1;
				const uint8_t *q = (const uint8_t *)clock + strlen(clock) + 1;
				uint32_t ps = tk_load_u32(q, big), n = tk_load_u32(q + 4, big);
				unsigned buf = *name ? 1 : 0;
				unsigned expect_n = 0;
				uint32_t prev = 0;

				assert_non_null(fs);
				assert_int_equal(fs->id, 3);
				assert_int_equal(!!(fs->flags & 1), m->comp != TK_COMPRESS_NONE);
				assert_string_equal(clock, "local");
				assert_int_equal(ps, PAGE);
				assert_int_equal(size, 8 + strlen(name) + 1 + 6 + 8 + 20 * n);
				for (unsigned c = 0; c < NCPUS; c++)
					expect_n += npages(m, buf, c) > 0;
				/* CPUs without pages are omitted. */
				assert_int_equal(n, expect_n);
				q += 8;
				for (uint32_t i = 0; i < n; i++, q += 20) {
					uint32_t cpu = tk_load_u32(q, big);

					assert_true(i == 0 || cpu > prev);
					prev = cpu;
					check_cpu_bytes(&f, m, m->comp != TK_COMPRESS_NONE, fs, buf,
							cpu, tk_load_u64(q + 4, big),
							tk_load_u64(q + 12, big), big);
					/* The first CPU follows the padding straight away. */
					if (i == 0)
						assert_true(tk_load_u64(q + 4, big) -
								    (fs->off + 16) <
							    PAGE);
				}
				/* The section ends with the last CPU's data. */
				if (n) {
					q -= 20;
					assert_int_equal(
						tk_load_u64(q + 4, big) + tk_load_u64(q + 12, big) +
							(m->comp != TK_COMPRESS_NONE ? 4 : 0),
						fs->off + 16 + fs->size);
				}
				buffers_seen++;
			} else if (id == TK_DAT_OPTION_BUFFER_TEXT) {
				const struct v7_section *ts =
					section_at(secs, nsec, tk_load_u64(d, big));
				size_t tlen;
				char *t = latency_text(&tlen);

				assert_non_null(ts);
				assert_int_equal(ts->id, 22);
				assert_string_equal((const char *)d + 8, "");
				if (m->comp == TK_COMPRESS_NONE) {
					assert_int_equal(ts->size, tlen);
					assert_memory_equal(f.data + ts->off + 16, t, tlen);
				} else {
					const uint8_t *q = f.data + ts->off + 16;
					uint32_t count = tk_load_u32(q, big);
					uint64_t got = 0;

					assert_int_equal(count, (tlen + 40959) / 40960);
					q += 4;
					for (uint32_t i = 0; i < count; i++) {
						uint32_t cs = tk_load_u32(q, big);
						uint32_t us = tk_load_u32(q + 4, big);
						uint8_t *u = decompress(m->comp, q + 8, cs, us);

						assert_memory_equal(u, t + got, us);
						free(u);
						got += us;
						q += 8 + cs;
					}
					assert_int_equal(got, tlen);
					assert_ptr_equal(q, f.data + ts->off + 16 + ts->size);
				}
				free(t);
				texts_seen++;
			} else if (id == TK_DAT_OPTION_DATE) {
				assert_int_equal(size, sizeof(late_date));
				assert_memory_equal(d, late_date, size);
				assert_int_equal(nopt_sections, 1);
				dates_seen++;
			} else {
				for (size_t i = 0; i < nwant; i++)
					if (want[i].id == id && want[i].size == size &&
					    !memcmp(want[i].data, d, size))
						found[i] = true;
				assert_int_equal(nopt_sections, 0);
			}
		}
		free(b);
	}
	for (size_t i = 0; i < nwant; i++)
		assert_true(found[i]);
	for (int i = 0; i < 6; i++)
		assert_int_equal(meta_seen[i], !(m->skip_meta && (i == 3 || i == 4)));
	assert_int_equal(buffers_seen, m->pages ? 1 + m->instance : 0);
	assert_int_equal(texts_seen, m->latency);
	assert_int_equal(dates_seen, m->pages);
	assert_int_equal(nopt_sections, (m->pages || m->latency) ? 2 : 1);
	free(strings);
	free(f.data);
}

/* ------------------------------------------- byte-level checks: v6 */

static void check_v6_bytes(const char *path, const struct mode *m, const struct meta *meta)
{
	struct file f;
	bool big = m->big;
	size_t pos = 18;
	uint32_t cpus;
	uint64_t inst_off = 0;
	bool traceclock = false;

	read_whole(path, &f);
	assert_memory_equal(f.data, "\x17\x08\x44tracing6", 12);
	assert_int_equal(tk_load_u32(f.data + 14, big), PAGE);
	for (int id = 16; id <= 21; id++) {
		struct tk_bytebuf e;
		const struct tk_bytebuf *want = &meta->body[id - 16];

		if (m->skip_meta && (id == 19 || id == 20)) {
			empty_body(id, &e, big);
			want = &e;
		}
		assert_true(pos + want->len <= f.len);
		assert_memory_equal(f.data + pos, want->data, want->len);
		pos += want->len;
		if (want == &e)
			free(e.data);
	}
	cpus = tk_load_u32(f.data + pos, big);
	pos += 4;
	assert_int_equal(cpus, m->pages ? NCPUS : 0);
	assert_memory_equal(f.data + pos, "options  \0", 10);
	pos += 10;
	for (;;) {
		uint16_t id = tk_load_u16(f.data + pos, big);
		uint32_t size;

		pos += 2;
		if (!id)
			break;
		size = tk_load_u32(f.data + pos, big);
		pos += 4;
		if (id == TK_DAT_OPTION_BUFFER) {
			inst_off = tk_load_u64(f.data + pos, big);
			assert_string_equal((char *)f.data + pos + 8, "inst");
		}
		if (id == TK_DAT_OPTION_TRACECLOCK)
			traceclock = true;
		pos += size;
	}
	assert_int_equal(traceclock, !m->latency);
	if (m->latency) {
		size_t tlen;
		char *t = latency_text(&tlen);

		assert_memory_equal(f.data + pos, "latency  \0", 10);
		assert_int_equal(f.len - pos - 10, tlen);
		assert_memory_equal(f.data + pos + 10, t, tlen);
		free(t);
		free(f.data);
		return;
	}
	for (unsigned buf = 0; buf <= (unsigned)m->instance; buf++) {
		if (buf == 1) {
			assert_true(inst_off > 0);
			pos = inst_off;
		}
		assert_memory_equal(f.data + pos, "flyrecord\0", 10);
		pos += 10;
		for (uint32_t cpu = 0; cpu < cpus; cpu++) {
			uint64_t off = tk_load_u64(f.data + pos + cpu * 16, big);
			uint64_t size = tk_load_u64(f.data + pos + cpu * 16 + 8, big);

			if (!npages(m, buf, cpu)) {
				assert_int_equal(off, 0);
				assert_int_equal(size, 0);
				continue;
			}
			check_cpu_bytes(&f, m, false, NULL, buf, cpu, off, size, big);
		}
		if (buf == 0) {
			pos += cpus * 16;
			assert_int_equal(tk_load_u64(f.data + pos, big), 7);
			assert_memory_equal(f.data + pos + 8, "[local]", 7);
		}
	}
	free(f.data);
}

/* ------------------------------------------------ reader round trip */

static int warnings;

static void count_warning(enum tk_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level <= TK_LOG_WARN && strstr(msg, "option 99"))
		warnings++;
	else if (level <= TK_LOG_WARN)
		fail_msg("unexpected reader warning: %s", msg);
}

static void check_with_reader(const char *path, const struct mode *m, const struct meta *meta)
{
	struct tk_dat *dat;
	const struct tk_dat_info *info;
	struct opt want[8];
	size_t nwant, nbuf;
	unsigned page_buffers = 0, text_buffers = 0;

	warnings = 0;
	dat = tk_dat_open(path);
	if (!dat)
		fail_msg("reader rejects %s: %s", path, tk_errmsg());
	info = tk_dat_get_info(dat);
	assert_int_equal(info->version, m->version);
	assert_int_equal(info->big_endian, m->big);
	assert_int_equal(info->page_size, PAGE);
	assert_int_equal(info->compression, m->version == 6 ? TK_COMPRESS_NONE : m->comp);

	for (uint16_t id = 16; id <= 21; id++) {
		const void *body;
		uint64_t len;
		struct tk_bytebuf e;
		const struct tk_bytebuf *w = &meta->body[id - 16];
		int ret = tk_dat_metadata(dat, id, &body, &len);

		if (m->skip_meta && (id == 19 || id == 20)) {
			if (m->version == 7) {
				assert_int_equal(ret, -ENOENT);
				continue;
			}
			empty_body(id, &e, m->big);
			w = &e;
		}
		assert_int_equal(ret, 0);
		assert_int_equal(len, w->len);
		assert_memory_equal(body, w->data, len);
		if (w == &e)
			free(e.data);
	}

	early_options(m, want, &nwant);
	for (size_t i = 0; i < nwant; i++) {
		bool found = false;

		for (size_t k = 0; k < tk_dat_option_count(dat); k++) {
			const struct tk_dat_option *o = tk_dat_option_get(dat, k);

			if (o->id == want[i].id && o->size == want[i].size &&
			    !memcmp(o->data, want[i].data, o->size))
				found = true;
		}
		if (!found)
			fail_msg("%s: option %u lost", m->label, want[i].id);
	}

	nbuf = tk_dat_buffer_count(dat);
	for (size_t b = 0; b < nbuf; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);
		unsigned bi = *buf->name ? 1 : 0;
		unsigned cpus_with_data = 0;

		if (buf->latency_text) {
			struct tk_dat_text t;
			size_t tlen;
			char *want_t = latency_text(&tlen);

			assert_true(m->latency);
			assert_int_equal(tk_dat_latency_text(dat, b, &t), 0);
			assert_int_equal(t.len, tlen);
			assert_memory_equal(t.data, want_t, tlen);
			free((void *)t.data);
			free(want_t);
			text_buffers++;
			continue;
		}
		page_buffers++;
		assert_int_equal(buf->page_format.page_size, PAGE);
		for (uint32_t i = 0; i < buf->cpu_count; i++) {
			struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(dat, b, i);
			uint32_t cpu = buf->cpus[i].cpu;
			unsigned n = npages(m, bi, cpu), got = 0;
			struct tk_page_format fmt;
			uint8_t page[PAGE];
			const void *p;
			int ret;

			if (!r)
				fail_msg("cpu reader %zu/%u: %s", b, i, tk_errmsg());
			assert_int_equal(tk_page_format_init(&fmt, PAGE, 8, m->big), 0);
			while ((ret = tk_dat_cpu_reader_next_page(r, &p, NULL)) == 1) {
				assert_true(got < n);
				make_page(&fmt, page, bi, cpu, got);
				assert_memory_equal(p, page, PAGE);
				got++;
			}
			assert_int_equal(ret, 0);
			assert_int_equal(got, n);
			cpus_with_data += n > 0;
			tk_dat_cpu_reader_free(r);
		}
		{
			unsigned expect = 0;

			for (unsigned c = 0; c < NCPUS; c++)
				expect += npages(m, bi, c) > 0;
			assert_int_equal(cpus_with_data, expect);
		}
	}
	assert_int_equal(page_buffers, m->pages ? 1 + m->instance : 0);
	assert_int_equal(text_buffers, m->latency);
	/* The unknown option 99 is skipped with a warning, nothing else warns. */
	assert_int_equal(warnings, 1);
	tk_dat_close(dat);
}

static void run_mode(const struct mode *m)
{
	char path[512];
	struct meta meta;

	snprintf(path, sizeof(path), "%s/%s.dat", tmpdir, m->label);
	write_file(path, m, &meta);
	if (m->version == 7)
		check_v7_bytes(path, m, &meta);
	else
		check_v6_bytes(path, m, &meta);
	check_with_reader(path, m, &meta);
	meta_release(&meta);
}

static void test_v7_none(void **state)
{
	const struct mode m = {"v7-none", 7,	TK_COMPRESS_NONE, false, 0, true, true, true,
			       false,	  false};
	(void)state;
	run_mode(&m);
}

static void test_v7_zstd(void **state)
{
	const struct mode m = {"v7-zstd", 7,   TK_COMPRESS_ZSTD, false, 0, true, true, true,
			       true,	  true};
	(void)state;
	run_mode(&m);
}

static void test_v7_zlib_big_endian(void **state)
{
	const struct mode m = {"v7-zlib-be", 7,	   TK_COMPRESS_ZLIB, true, 3, true, false, true,
			       false,	     false};
	(void)state;
	run_mode(&m);
}

static void test_v7_latency_only(void **state)
{
	const struct mode m = {"v7-latency", 7,	   TK_COMPRESS_NONE, false, 0, false, false, false,
			       true,	     false};
	(void)state;
	run_mode(&m);
}

static void test_v6(void **state)
{
	const struct mode m = {"v6", 6, TK_COMPRESS_NONE, false, 0, true, true, true, false, true};
	(void)state;
	run_mode(&m);
}

static void test_v6_latency(void **state)
{
	const struct mode m = {"v6-latency", 6,	   TK_COMPRESS_NONE, false, 0, false, false, false,
			       true,	     false};
	(void)state;
	run_mode(&m);
}

/* ----------------------------------------------------- trace-cmd oracle */

static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	do {
		if (n + 4096 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r > 0)
			n += (size_t)r;
	} while (r > 0);
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

static bool in_path(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

#define ORACLE_EVENTS 60

static void oracle_write(const char *path, int version, enum tk_compression comp, const char *hp,
			 size_t hp_len, const char *he, size_t he_len, const char *pf, int print_id)
{
	struct tk_dat_writer_opts o = {
		.sz = sizeof(struct tk_dat_writer_opts), .version = version, .compression = comp};
	struct tk_page_format fmt;
	struct tk_dat_writer *w;
	struct meta meta;
	static const char clock[] = "[local] global counter\n";
	uint8_t cpus[4] = {2, 0, 0, 0};

	assert_int_equal(tk_page_format_parse(&fmt, hp, hp_len, false), 0);
	o.page_size = fmt.page_size;
	meta_build(&meta, &fmt, hp, hp_len, he, he_len, pf, false);
	w = tk_dat_writer_open(path, &o);
	assert_non_null(w);
	for (uint16_t id = 16; id <= 21; id++)
		assert_int_equal(tk_dat_writer_add_metadata(w, id, meta.body[id - 16].data,
							    meta.body[id - 16].len),
				 0);
	assert_int_equal(
		tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, clock, sizeof(clock)), 0);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUCOUNT, cpus, 4), 0);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", fmt.page_size, 2), 0);
	for (uint32_t cpu = 0; cpu < 2; cpu++) {
		uint8_t *page = calloc(1, fmt.page_size);
		struct tk_page_writer pw;
		int in_page = 0;

		assert_non_null(page);
		assert_int_equal(tk_dat_writer_begin_cpu(w, cpu), 0);
		/* Events on both CPUs interleave in time; 12 per page forces several pages. */
		for (int i = (int)cpu; i < ORACLE_EVENTS; i += 2) {
			uint8_t payload[128];
			char s[64];
			uint64_t ts = 5000000000ull + (uint64_t)i * 1000;
			uint32_t n;

			if (!in_page)
				assert_int_equal(tk_page_writer_init(&pw, &fmt, page, ts), 0);
			snprintf(s, sizeof(s), "tk-oracle-%03d", i);
			n = print_payload(payload, sizeof(payload), (uint16_t)print_id, 1234, s,
					  false);
			assert_int_equal(tk_page_writer_add(&pw, ts, payload, n), 0);
			if (++in_page == 12) {
				tk_page_writer_finish(&pw);
				assert_int_equal(tk_dat_writer_write_pages(w, page, fmt.page_size),
						 0);
				in_page = 0;
			}
		}
		if (in_page) {
			tk_page_writer_finish(&pw);
			assert_int_equal(tk_dat_writer_write_pages(w, page, fmt.page_size), 0);
		}
		assert_int_equal(tk_dat_writer_end_cpu(w), 0);
		free(page);
	}
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);
	meta_release(&meta);
}

static void oracle_check(const char *path)
{
	char cmd[1024], out[600], errp[600];
	size_t len, elen;
	char *text, *err;
	int status, count = 0;

	snprintf(out, sizeof(out), "%s.report", path);
	snprintf(errp, sizeof(errp), "%s.stderr", path);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i '%s' >'%s' 2>'%s'", path, out, errp);
	status = system(cmd);
	text = slurp(out, &len);
	err = slurp(errp, &elen);
	assert_non_null(text);
	if (status != 0 || elen)
		fail_msg("trace-cmd report %s: status %d, stderr: %s", path, status, err);
	for (int i = 0; i < ORACLE_EVENTS; i++) {
		char s[64];

		snprintf(s, sizeof(s), "tk-oracle-%03d", i);
		if (!strstr(text, s))
			fail_msg("%s: %s missing from trace-cmd report:\n%s", path, s, text);
	}
	for (char *p = text; (p = strstr(p, "tk-oracle-")); p++)
		count++;
	if (count != ORACLE_EVENTS)
		fail_msg("%s: %d events reported, want %d:\n%s", path, count, ORACLE_EVENTS, text);
	if (!strstr(text, "cpus=2"))
		fail_msg("%s: no cpus=2 line:\n%s", path, text);
	free(text);
	free(err);

	snprintf(cmd, sizeof(cmd), "trace-cmd report --check-events -i '%s' >/dev/null 2>&1", path);
	status = system(cmd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_oracle_trace_cmd(void **state)
{
	const char *tfs = "/sys/kernel/tracing";
	char p[512], path[512];
	char *hp, *he, *pf;
	size_t hp_len, he_len, pf_len;
	int print_id;
	const char *id_line;

	(void)state;
	if (!in_path("trace-cmd")) {
		print_message("SKIP: trace-cmd not in PATH\n");
		skip();
	}
	snprintf(p, sizeof(p), "%s/events/header_page", tfs);
	if (access(p, R_OK) != 0 &&
	    system("mount -t tracefs nodev /sys/kernel/tracing >/dev/null 2>&1") != 0) {
		print_message("SKIP: tracefs not mounted and cannot be mounted\n");
		skip();
	}
	hp = slurp(p, &hp_len);
	snprintf(p, sizeof(p), "%s/events/header_event", tfs);
	he = slurp(p, &he_len);
	snprintf(p, sizeof(p), "%s/events/ftrace/print/format", tfs);
	pf = slurp(p, &pf_len);
	if (!hp || !he || !pf) {
		print_message("SKIP: tracefs files not readable\n");
		free(hp);
		free(he);
		free(pf);
		skip();
	}
	id_line = strstr(pf, "\nID: ");
	assert_non_null(id_line);
	print_id = atoi(id_line + 5);
	assert_true(print_id > 0);

	snprintf(path, sizeof(path), "%s/oracle-v7-none.dat", tmpdir);
	oracle_write(path, 7, TK_COMPRESS_NONE, hp, hp_len, he, he_len, pf, print_id);
	oracle_check(path);
	snprintf(path, sizeof(path), "%s/oracle-v7-zstd.dat", tmpdir);
	oracle_write(path, 7, TK_COMPRESS_ZSTD, hp, hp_len, he, he_len, pf, print_id);
	oracle_check(path);
	snprintf(path, sizeof(path), "%s/oracle-v6.dat", tmpdir);
	oracle_write(path, 6, TK_COMPRESS_NONE, hp, hp_len, he, he_len, pf, print_id);
	oracle_check(path);
	free(hp);
	free(he);
	free(pf);
}

/* --------------------------------------------------------------- errors */

static const struct tk_dat_writer_opts basic_opts = {
	.sz = sizeof(struct tk_dat_writer_opts), .version = 7, .page_size = PAGE};

static void test_error_pipe_and_readonly(void **state)
{
	struct tk_dat_writer *w;
	char path[512];
	int fds[2], fd;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	errno = 0;
	w = tk_dat_writer_open_fd(fds[1], "the-pipe", &basic_opts);
	assert_null(w);
	assert_int_equal(errno, ESPIPE);
	assert_non_null(strstr(tk_errmsg(), "the-pipe"));
	/* Refused before anything is written: a .dat needs a file it can seek in. */
	assert_non_null(strstr(tk_errmsg(), "needs a regular file"));
	close(fds[0]);
	close(fds[1]);

	snprintf(path, sizeof(path), "%s/readonly.dat", tmpdir);
	fd = open(path, O_RDONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	errno = 0;
	w = tk_dat_writer_open_fd(fd, path, &basic_opts);
	assert_null(w);
	assert_int_equal(errno, EBADF);
	assert_non_null(strstr(tk_errmsg(), path));
	/* The caller's descriptor stays open. */
	assert_int_not_equal(fcntl(fd, F_GETFD), -1);
	close(fd);

	errno = 0;
	assert_null(tk_dat_writer_open("/nonexistent-dir/x.dat", &basic_opts));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(tk_errmsg(), "/nonexistent-dir/x.dat"));
}

/*
 * A real mid-stream write failure: a file size limit makes pwrite fail with
 * EFBIG after the header, like a full disk would with ENOSPC.
 */
static void test_error_midstream(void **state)
{
	struct tk_dat_writer *w;
	struct rlimit old, lim;
	struct tk_page_format fmt;
	uint8_t *pages;
	char path[512];
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s/limited.dat", tmpdir);
	assert_int_equal(tk_page_format_init(&fmt, PAGE, 8, false), 0);
	pages = make_pages(&fmt, 0, 0, 8);
	w = tk_dat_writer_open(path, &basic_opts);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", PAGE, 1), 0);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 0), 0);

	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 3 * PAGE;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	ret = tk_dat_writer_write_pages(w, pages, 8 * PAGE);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);

	assert_int_equal(ret, -EFBIG);
	assert_non_null(strstr(tk_errmsg(), path));
	assert_non_null(strstr(tk_errmsg(), "offset 0x"));
	/* The writer refuses to go on with a half-written file. */
	assert_int_equal(tk_dat_writer_end_cpu(w), -EIO);
	assert_int_equal(tk_dat_writer_finish(w), -EIO);
	tk_dat_writer_close(w);
	free(pages);
}

static void test_error_state_machine(void **state)
{
	struct tk_dat_writer_opts o = basic_opts;
	struct tk_dat_writer *w;
	char path[512];
	uint8_t page[PAGE] = {0};
	uint8_t body[4] = {0};

	(void)state;
	snprintf(path, sizeof(path), "%s/misuse.dat", tmpdir);

	/* Bad options. */
	o.version = 5;
	assert_null(tk_dat_writer_open(path, &o));
	assert_int_equal(errno, EINVAL);
	o = basic_opts;
	o.version = 6;
	o.compression = TK_COMPRESS_ZSTD;
	assert_null(tk_dat_writer_open(path, &o));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(tk_errmsg(), "version 6"));
	o = basic_opts;
	o.page_size = 1000;
	assert_null(tk_dat_writer_open(path, &o));
	assert_int_equal(errno, EINVAL);

	w = tk_dat_writer_open(path, &basic_opts);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_metadata(w, 15, body, 4), -EINVAL);
	assert_int_equal(tk_dat_writer_add_metadata(w, 19, body, 4), 0);
	assert_int_equal(tk_dat_writer_add_metadata(w, 19, body, 4), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "twice"));
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_BUFFER, body, 4), -EINVAL);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_DONE, body, 4), -EINVAL);
	assert_int_equal(tk_dat_writer_add_option(w, 17, body, 4), -EINVAL);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_UNAME, NULL, 0), -EINVAL);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUSTAT, NULL, 0), -EINVAL);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, NULL, 0), -EINVAL);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_VERSION, NULL, 0), -EINVAL);
	assert_int_equal(tk_dat_writer_write_pages(w, page, PAGE), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 0), -EINVAL);
	assert_int_equal(tk_dat_writer_end_cpu(w), -EINVAL);
	assert_int_equal(tk_dat_writer_end_buffer(w), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", 2 * PAGE, 2), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "page size"));

	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", PAGE, 2), 0);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "x", "local", PAGE, 2), -EINVAL);
	assert_int_equal(tk_dat_writer_add_metadata(w, 16, body, 4), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "after the data"));
	assert_int_equal(tk_dat_writer_finish(w), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 2), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 1), 0);
	assert_int_equal(tk_dat_writer_write_pages(w, page, PAGE / 2), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "whole number"));
	assert_int_equal(tk_dat_writer_end_buffer(w), -EINVAL);
	assert_int_equal(tk_dat_writer_finish(w), -EINVAL);
	assert_int_equal(tk_dat_writer_end_cpu(w), 0);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 1), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 0), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "increase"));
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", PAGE, 2), -EINVAL);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	assert_int_equal(tk_dat_writer_finish(w), -EINVAL);
	tk_dat_writer_close(w);

	/* v6 ordering rules. */
	o = basic_opts;
	o.version = 6;
	w = tk_dat_writer_open(path, &o);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_metadata(w, 18, body, 4), 0);
	assert_int_equal(tk_dat_writer_add_metadata(w, 17, body, 4), -EINVAL);
	assert_int_equal(tk_dat_writer_add_metadata(w, 18, body, 4), -EINVAL);
	assert_int_equal(tk_dat_writer_declare_buffer(w, "a"), 0);
	assert_int_equal(tk_dat_writer_declare_buffer(w, "a"), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "a", "local", PAGE, 2), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", PAGE, 2), 0);
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_UNAME, "x", 2), -EINVAL);
	assert_int_equal(tk_dat_writer_declare_buffer(w, "b"), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "b", "local", PAGE, 2), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "a", "local", PAGE, 3), -EINVAL);
	assert_int_equal(tk_dat_writer_add_latency_text(w, "", "local", "x", 1), -EINVAL);
	/* "a" never gets data: finish still writes the table its option points at. */
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);

	/* v6 latency text and TRACECLOCK have no layout trace-cmd reads back. */
	w = tk_dat_writer_open(path, &o);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, "[local]", 8), 0);
	assert_int_equal(tk_dat_writer_add_latency_text(w, "", "local", "x", 1), -EINVAL);
	assert_non_null(strstr(tk_errmsg(), "TRACECLOCK"));
	tk_dat_writer_close(w);
}

/* A writer with no buffers at all still makes a well-formed v7 file. */
static void test_v7_metadata_only(void **state)
{
	const struct mode m = {
		"v7-meta-only", 7, TK_COMPRESS_ZSTD, false, 0, false, false, false, false, false};
	(void)state;
	run_mode(&m);
}

/*
 * Chunks and metadata compressed outside the writer (record's compressor
 * threads) and chunks compressed by the writer's own threads (convert) give
 * the file the writer makes alone, byte for byte; a chunk is refused after a
 * partial one and in an uncompressed file. 255 pages are 25 whole chunks
 * and a half, more than the 12 slots of 3 threads: the ring wraps.
 */
static void write_precompressed(const char *path, enum tk_compression comp, bool pre,
				uint32_t threads, const struct meta *meta, const uint8_t *pages,
				unsigned n)
{
	struct tk_dat_writer_opts o = {
		.sz = sizeof(struct tk_dat_writer_opts),
		.version = 7,
		.compression = comp,
		.page_size = PAGE,
		.compress_threads = threads,
	};
	struct tk_codec *codec = tk_codec_new(TK_COMPRESS_ZSTD, 0);
	uint64_t chunk = (uint64_t)TK_DAT_DEFAULT_CHUNK_PAGES * PAGE, done = 0;
	uint64_t cap = tk_codec_bound(codec, 1u << 20);
	uint8_t *block = malloc(cap);
	struct tk_dat_writer *w = tk_dat_writer_open(path, &o);

	assert_non_null(codec);
	assert_non_null(block);
	if (!w)
		fail_msg("open %s: %s", path, tk_errmsg());
	assert_int_equal(tk_dat_writer_chunk_bytes(w), comp == TK_COMPRESS_NONE ? 0 : chunk);
	for (int id = 16; id <= 21; id++) {
		const struct tk_bytebuf *b = &meta->body[id - 16];

		if (pre && b->len) {
			int64_t c = tk_codec_compress(codec, block, cap, b->data, b->len);

			assert_true(c > 0);
			assert_int_equal(tk_dat_writer_put_metadata(w, (uint16_t)id, block,
								    (uint32_t)c, (uint32_t)b->len),
					 0);
		} else {
			assert_int_equal(
				tk_dat_writer_add_metadata(w, (uint16_t)id, b->data, b->len), 0);
		}
	}
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", PAGE, 1), 0);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 0), 0);
	while (pre && (n * (uint64_t)PAGE) - done >= chunk) {
		int64_t c = tk_codec_compress(codec, block, cap, pages + done, chunk);

		assert_true(c > 0);
		assert_int_equal(tk_dat_writer_put_chunk(w, block, (uint32_t)c, (uint32_t)chunk),
				 0);
		done += chunk;
	}
	assert_int_equal(tk_dat_writer_write_pages(w, pages + done, n * (uint64_t)PAGE - done), 0);
	if (pre) {
		/* The tail left a partial chunk open: a whole one may not follow it. */
		assert_int_equal(tk_dat_writer_put_chunk(w, block, 1, PAGE), -EINVAL);
	}
	assert_int_equal(tk_dat_writer_end_cpu(w), 0);
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);
	tk_codec_free(codec);
	free(block);
}

static void test_precompressed_chunks(void **state)
{
	struct tk_page_format fmt;
	struct meta meta;
	char a[512], b[512], c[512];
	size_t alen, blen;
	char *fa, *fb;
	unsigned n = 255;
	uint8_t *pages;
	struct tk_dat_writer *w;
	struct tk_dat_writer_opts o = basic_opts;

	(void)state;
	assert_int_equal(tk_page_format_init(&fmt, PAGE, 8, false), 0);
	meta_build(&meta, &fmt, NULL, 0, tk_test_header_event, strlen(tk_test_header_event),
		   print_format_text, false);
	pages = make_pages(&fmt, 0, 0, n);
	snprintf(a, sizeof(a), "%s/pre-writer.dat", tmpdir);
	snprintf(b, sizeof(b), "%s/pre-outside.dat", tmpdir);
	write_precompressed(a, TK_COMPRESS_ZSTD, false, 0, &meta, pages, n);
	fa = slurp(a, &alen);
	for (int v = 1; v < 4; v++) {
		write_precompressed(b, TK_COMPRESS_ZSTD, v & 1, v & 2 ? 3 : 0, &meta, pages, n);
		fb = slurp(b, &blen);
		assert_int_equal(alen, blen);
		assert_memory_equal(fa, fb, alen);
		free(fb);
	}
	free(fa);
	/* Uncompressed, a writer thread puts the page batches in place: the same file. */
	write_precompressed(a, TK_COMPRESS_NONE, false, 0, &meta, pages, n);
	write_precompressed(b, TK_COMPRESS_NONE, false, 2, &meta, pages, n);
	fa = slurp(a, &alen);
	fb = slurp(b, &blen);
	assert_int_equal(alen, blen);
	assert_memory_equal(fa, fb, alen);
	free(fa);
	free(fb);

	/* An uncompressed writer has no chunks to take. */
	snprintf(c, sizeof(c), "%s/pre-none.dat", tmpdir);
	w = tk_dat_writer_open(c, &o);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_chunk_bytes(w), 0);
	assert_int_equal(tk_dat_writer_put_metadata(w, 16, pages, 8, 8), -EINVAL);
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "local", PAGE, 1), 0);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 0), 0);
	assert_int_equal(tk_dat_writer_put_chunk(w, pages, 8, PAGE), -EINVAL);
	tk_dat_writer_close(w);
	meta_release(&meta);
	free(pages);
}

static int setup(void **state)
{
	(void)state;
	tk_log_set_handler(count_warning, NULL, TK_LOG_WARN);
	return tk_tmpdir_make();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v7_none),
		cmocka_unit_test(test_v7_zstd),
		cmocka_unit_test(test_v7_zlib_big_endian),
		cmocka_unit_test(test_v7_latency_only),
		cmocka_unit_test(test_v7_metadata_only),
		cmocka_unit_test(test_v6),
		cmocka_unit_test(test_v6_latency),
		cmocka_unit_test(test_error_pipe_and_readonly),
		cmocka_unit_test(test_error_midstream),
		cmocka_unit_test(test_error_state_machine),
		cmocka_unit_test(test_oracle_trace_cmd),
		cmocka_unit_test(test_precompressed_chunks),
	};

	return cmocka_run_group_tests(tests, setup, tk_tmpdir_teardown);
}
