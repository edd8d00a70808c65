// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the .dat reader on files built byte by byte here (the writer is
 * tested separately; building by hand keeps the reader honest about the
 * layout in shared/specs/tracedat.md rather than about our own writer).
 * Pages are real ring-buffer pages made with tk_page_writer_*.
 *
 * With TK_WRITE_CORPUS=dir set, the small valid files are also written to
 * dir as fuzz seeds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/tracekit.h>
#include "bytes.h"
#include "dat-internal.h"
#include "dat-read-internal.h"
#include "page-internal.h"
#include "tk-test.h"
#include "tk-tmpdir.h"

/* ------------------------------------------------------------ byte builder */

struct bb {
	uint8_t *d;
	size_t len, cap;
	bool big;
};

static void bb_put(struct bb *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		b->d = realloc(b->d, cap);
		assert_non_null(b->d);
		b->cap = cap;
	}
	if (n)
		memcpy(b->d + b->len, p, n);
	b->len += n;
}

static void bb_u8(struct bb *b, uint8_t v)
{
	bb_put(b, &v, 1);
}
static void bb_u16(struct bb *b, uint16_t v)
{
	uint8_t t[2];
	tk_store_u16(t, v, b->big);
	bb_put(b, t, 2);
}
static void bb_u32(struct bb *b, uint32_t v)
{
	uint8_t t[4];
	tk_store_u32(t, v, b->big);
	bb_put(b, t, 4);
}
static void bb_u64(struct bb *b, uint64_t v)
{
	uint8_t t[8];
	tk_store_u64(t, v, b->big);
	bb_put(b, t, 8);
}
static void bb_cstr(struct bb *b, const char *s)
{
	bb_put(b, s, strlen(s) + 1);
}

static void bb_zero(struct bb *b, size_t n)
{
	static const uint8_t z[256];

	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);

		bb_put(b, z, k);
		n -= k;
	}
}

static void bb_align(struct bb *b, size_t a)
{
	if (b->len % a)
		bb_zero(b, a - b->len % a);
}

static void bb_patch_u32(struct bb *b, size_t at, uint32_t v)
{
	tk_store_u32(b->d + at, v, b->big);
}
static void bb_patch_u64(struct bb *b, size_t at, uint64_t v)
{
	tk_store_u64(b->d + at, v, b->big);
}

/* ------------------------------------------------------------ trace content */

#define PAGE 4096u

static uint64_t page_ts(uint32_t cpu, uint32_t k)
{
	return 1000000ull * (cpu + 1) + 1000ull * k;
}

static uint64_t rec_ts(uint32_t cpu, uint32_t k, uint32_t j)
{
	return page_ts(cpu, k) + 10ull * (j + 1);
}

/* Empty pages (no records, timestamp 0) where requested. */
static bool page_empty(bool empties, uint32_t k)
{
	return empties && k % 7 == 3;
}

static void make_pages(struct bb *out, const struct tk_page_format *fmt, uint32_t cpu,
		       uint32_t npages, uint32_t recs, bool empties)
{
	uint8_t *page = malloc(fmt->page_size);

	assert_non_null(page);
	for (uint32_t k = 0; k < npages; k++) {
		struct tk_page_writer w;
		bool empty = page_empty(empties, k);

		assert_int_equal(tk_page_writer_init(&w, fmt, page, empty ? 0 : page_ts(cpu, k)),
				 0);
		for (uint32_t j = 0; j < recs && !empty; j++) {
			uint32_t payload[2] = {cpu, k * 1000 + j};

			assert_int_equal(
				tk_page_writer_add(&w, rec_ts(cpu, k, j), payload, sizeof(payload)),
				0);
		}
		tk_page_writer_finish(&w);
		bb_put(out, page, fmt->page_size);
	}
	free(page);
}

static const char header_event_text[] = "# compressed entry header\n"
					"\ttype_len    :    5 bits\n"
					"\ttime_delta  :   27 bits\n"
					"\tarray       :   32 bits\n";
static const char ftrace_text[] = "name: print\nID: 5\nformat:\n\tfield:unsigned short "
				  "common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
static const char sched_switch_text[] = "name: sched_switch\nID: 372\nformat:\n";
static const char sched_wakeup_text[] = "name: sched_wakeup\nID: 373\nformat:\n";
static const char irq_text[] = "name: irq_handler_entry\nID: 50\nformat:\n";
static const char kallsyms_text[] = "ffffffff81000000 T _stext\nffffffff81000100 t foo\n";
static const char cmdlines_text[] = "1 systemd\n42 bash\n";
static const char latency_text[] = "# tracer: wakeup\n#\n  <idle>-0  0d..2  1us : foo\n";

static void text64(struct bb *b, const char *s)
{
	bb_u64(b, strlen(s));
	bb_put(b, s, strlen(s));
}

/* The v7 body (= v6 part) of metadata id 16..21. */
static void meta_body(struct bb *b, uint16_t id, const struct tk_page_format *fmt)
{
	char hp[1024];
	size_t n;

	switch (id) {
	case 16:
		n = tk_page_format_header_text(fmt, hp, sizeof(hp));
		assert_true(n < sizeof(hp));
		bb_put(b, "header_page", 12);
		bb_u64(b, n);
		bb_put(b, hp, n);
		bb_put(b, "header_event", 13);
		text64(b, header_event_text);
		break;
	case 17:
		bb_u32(b, 1);
		text64(b, ftrace_text);
		break;
	case 18:
		bb_u32(b, 2);
		bb_cstr(b, "sched");
		bb_u32(b, 2);
		text64(b, sched_switch_text);
		text64(b, sched_wakeup_text);
		bb_cstr(b, "irq");
		bb_u32(b, 1);
		text64(b, irq_text);
		break;
	case 19:
		bb_u32(b, (uint32_t)strlen(kallsyms_text));
		bb_put(b, kallsyms_text, strlen(kallsyms_text));
		break;
	case 20:
		bb_u32(b, 0);
		break;
	case 21:
		text64(b, cmdlines_text);
		break;
	}
}

/* ------------------------------------------------------------ file builder */

struct bopts {
	int version;
	enum tk_compression comp;
	uint32_t page_size;   /* 0: PAGE */
	uint32_t ncpus;	      /* top buffer CPUs 0..n-1 */
	uint32_t pages;	      /* per CPU */
	uint32_t recs;	      /* per page */
	uint32_t chunk_pages; /* 0: 4 */
	bool sparse;	      /* top CPUs are 0 and 3 */
	bool instance;	      /* add instance "inst" with CPU 1 */
	bool unknown_opt;     /* option 99 */
	bool two_options;     /* BUFFERs in a second OPTIONS section */
	bool latency;	      /* v7: BUFFER_TEXT too; v6: a latency file */
	bool empties;	      /* some empty pages */
	bool dup_cpu;
	bool misalign;
	bool done_loop;
	bool tsc; /* TSC2NSEC + OFFSET options */
	/* BTF (23) and modules (25) sections, LAST_BOOT_INFO (24): trace-cmd 3.4+ */
	bool tc34_sections;
	bool stale_btf; /* option 23 names no section, as 3.4 convert leaves it */
	/* Added to each compressed CPU size: 4 is trace-cmd 3.2+'s convention. */
	int64_t size_adjust;
	const char *codec_name;
	const char *version_str;
};

struct built {
	uint8_t *data;
	size_t len;
	size_t nbounds;
	uint64_t bounds[32];	/* v7 section header offsets, in order */
	uint64_t opt16_payload; /* file offset of option 16's u64 */
	uint64_t ftrace_size_field;
	uint64_t cpu0_data; /* top buffer, first CPU */
};

static uint32_t cpu_id(const struct bopts *o, uint32_t i)
{
	return o->sparse ? (i == 0 ? 0 : 3) : i;
}

static uint32_t top_ncpus(const struct bopts *o)
{
	return o->sparse ? 2 : o->ncpus;
}

struct strtab {
	struct bb b;
};

static int32_t str_add(struct strtab *t, const char *s)
{
	int32_t id = (int32_t)t->b.len;

	bb_cstr(&t->b, s);
	return id;
}

/* Writes a section header; returns the offset of its size field. */
static size_t sec_begin(struct built *r, struct bb *b, uint16_t id, uint16_t flags, int32_t sid)
{
	r->bounds[r->nbounds++] = b->len;
	bb_u16(b, id);
	bb_u16(b, flags);
	bb_u32(b, (uint32_t)sid);
	bb_u64(b, 0);
	return b->len - 8;
}

static void sec_end(struct bb *b, size_t size_field)
{
	bb_patch_u64(b, size_field, b->len - size_field - 8);
}

static void put_compressed_block(struct bb *b, struct tk_codec *c, const void *src, size_t n)
{
	uint64_t cap = tk_codec_bound(c, n);
	uint8_t *tmp = malloc(cap + 1);
	int64_t got;

	assert_non_null(tmp);
	got = tk_codec_compress(c, tmp, cap, src, n);
	assert_true(got > 0);
	bb_u32(b, (uint32_t)got);
	bb_u32(b, (uint32_t)n);
	bb_put(b, tmp, (size_t)got);
	free(tmp);
}

/* u32 count + chunks of @chunk bytes; returns the size without the count. */
static uint64_t put_chunks(struct bb *b, struct tk_codec *c, const uint8_t *src, size_t n,
			   size_t chunk)
{
	size_t count = (n + chunk - 1) / chunk, start;

	bb_u32(b, (uint32_t)count);
	start = b->len;
	for (size_t off = 0; off < n; off += chunk)
		put_compressed_block(b, c, src + off, n - off < chunk ? n - off : chunk);
	return b->len - start;
}

static void fmt_for(const struct bopts *o, struct tk_page_format *fmt)
{
	assert_int_equal(tk_page_format_init(fmt, o->page_size ? o->page_size : PAGE, 8, false), 0);
}

struct cpu_loc {
	uint32_t cpu;
	uint64_t off, size;
};

/* Flyrecord section with @n CPUs; fills @locs. */
static void put_flyrecord(struct built *r, struct bb *b, struct tk_codec *c, const struct bopts *o,
			  const struct tk_page_format *fmt, int32_t sid, uint32_t n,
			  const uint32_t *ids, struct cpu_loc *locs)
{
	size_t sf = sec_begin(r, b, TK_DAT_SECTION_FLYRECORD, c ? 1 : 0, sid);
	uint32_t chunk = (o->chunk_pages ? o->chunk_pages : 4) * fmt->page_size;

	for (uint32_t i = 0; i < n; i++) {
		struct bb pages = {0};

		bb_align(b, fmt->page_size);
		if (o->misalign && i == 0)
			bb_zero(b, 64);
		make_pages(&pages, fmt, ids[i], o->pages, o->recs, o->empties);
		locs[i].cpu = ids[i];
		locs[i].off = b->len;
		if (c) {
			locs[i].size = put_chunks(b, c, pages.d, pages.len, chunk) +
				       (uint64_t)o->size_adjust;
		} else {
			bb_put(b, pages.d, pages.len);
			locs[i].size = pages.len;
		}
		free(pages.d);
	}
	sec_end(b, sf);
}

static void opt_begin(struct bb *b, uint16_t id, size_t *size_at)
{
	bb_u16(b, id);
	*size_at = b->len;
	bb_u32(b, 0);
}

static void opt_end(struct bb *b, size_t size_at)
{
	bb_patch_u32(b, size_at, (uint32_t)(b->len - size_at - 4));
}

static void opt_str(struct bb *b, uint16_t id, const char *s)
{
	bb_u16(b, id);
	bb_u32(b, (uint32_t)strlen(s) + 1);
	bb_cstr(b, s);
}

static void opt_buffer_v7(struct bb *b, uint64_t soff, const char *name, const char *clock,
			  uint32_t psize, uint32_t n, const struct cpu_loc *locs)
{
	size_t sa;

	opt_begin(b, TK_DAT_OPTION_BUFFER, &sa);
	bb_u64(b, soff);
	bb_cstr(b, name);
	bb_cstr(b, clock);
	bb_u32(b, psize);
	bb_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		bb_u32(b, locs[i].cpu);
		bb_u64(b, locs[i].off);
		bb_u64(b, locs[i].size);
	}
	opt_end(b, sa);
}

static struct built build_v7(const struct bopts *o)
{
	struct built r = {0};
	struct bb b = {0};
	struct strtab st = {0};
	struct tk_page_format fmt;
	struct tk_codec *c = NULL;
	uint64_t meta_off[6], top_sec, inst_sec = 0, text_sec = 0, opts1, opts2 = 0;
	size_t first_field, done1 = 0, sf, sa, btf_field = 0, mod_field = 0;
	uint32_t ids[4], n = top_ncpus(o), inst_id = 1;
	struct cpu_loc locs[4], inst_loc[1] = {{0}};
	uint16_t mflags;

	fmt_for(o, &fmt);
	if (o->comp != TK_COMPRESS_NONE) {
		c = tk_codec_new(o->comp, 0);
		assert_non_null(c);
	}
	mflags = c ? 1 : 0;
	bb_put(&b, TK_DAT_MAGIC, TK_DAT_MAGIC_LEN);
	bb_cstr(&b, o->version_str ? o->version_str : "7");
	bb_u8(&b, 0);
	bb_u8(&b, 8);
	bb_u32(&b, fmt.page_size);
	bb_cstr(&b, o->codec_name ? o->codec_name : tk_codec_name(o->comp));
	bb_cstr(&b, tk_codec_version(o->comp));
	first_field = b.len;
	bb_u64(&b, 0);

	static const char *const descs[] = {"headers",	"ftrace events", "events format",
					    "kallsyms", "printk",	 "command lines"};
	for (uint16_t id = 16; id <= 21; id++) {
		struct bb body = {0};

		meta_body(&body, id, &fmt);
		meta_off[id - 16] = b.len;
		sf = sec_begin(&r, &b, id, mflags, str_add(&st, descs[id - 16]));
		if (id == 17)
			r.ftrace_size_field = sf;
		if (c)
			put_compressed_block(&b, c, body.d, body.len);
		else
			bb_put(&b, body.d, body.len);
		sec_end(&b, sf);
		free(body.d);
	}

	/* First OPTIONS section: metadata offsets and facts. */
	opts1 = b.len;
	sf = sec_begin(&r, &b, TK_DAT_SECTION_OPTIONS, 0, str_add(&st, "options"));
	for (uint16_t id = 16; id <= 21; id++) {
		bb_u16(&b, id);
		bb_u32(&b, 8);
		if (id == 16)
			r.opt16_payload = b.len;
		bb_u64(&b, meta_off[id - 16]);
	}
	opt_str(&b, TK_DAT_OPTION_TRACECLOCK, "[local] global counter\n");
	opt_str(&b, TK_DAT_OPTION_UNAME, "Linux vm 6.18.44 x86_64");
	opt_str(&b, TK_DAT_OPTION_VERSION, "3.1.6 test");
	opt_str(&b, TK_DAT_OPTION_DATE, "0x10");
	opt_begin(&b, TK_DAT_OPTION_TRACEID, &sa);
	bb_u64(&b, 0x1122334455667788ull);
	opt_end(&b, sa);
	opt_str(&b, TK_DAT_OPTION_CPUSTAT, "CPU: 0\nentries: 5\n");
	if (o->tsc) {
		opt_begin(&b, TK_DAT_OPTION_TSC2NSEC, &sa);
		bb_u32(&b, 3);
		bb_u32(&b, 1);
		bb_u64(&b, 0);
		opt_end(&b, sa);
		opt_str(&b, TK_DAT_OPTION_OFFSET, "-5");
	}
	if (o->unknown_opt) {
		opt_begin(&b, 99, &sa);
		bb_u32(&b, 0xdeadbeef);
		opt_end(&b, sa);
	}
	if (o->tc34_sections) {
		/* Their sections come later; the offsets are patched then. */
		bb_u16(&b, 23);
		bb_u32(&b, 8);
		btf_field = b.len;
		bb_u64(&b, 0);
		opt_str(&b, 24, "inst:# Current\n");
		bb_u16(&b, 25);
		bb_u32(&b, 8);
		mod_field = b.len;
		bb_u64(&b, 0);
	}
	opt_begin(&b, TK_DAT_OPTION_CPUCOUNT, &sa);
	bb_u32(&b, o->sparse ? 4 : n);
	opt_end(&b, sa);
	if (!o->two_options) {
		/* BUFFER options go here; data sections follow later, so reserve. */
	}
	bb_u16(&b, TK_DAT_OPTION_DONE);
	bb_u32(&b, 8);
	done1 = b.len;
	bb_u64(&b, 0);
	sec_end(&b, sf);

	for (uint32_t i = 0; i < n; i++)
		ids[i] = cpu_id(o, i);
	if (o->dup_cpu && n > 1)
		ids[1] = ids[0];
	top_sec = b.len;
	put_flyrecord(&r, &b, c, o, &fmt, str_add(&st, "buffer flyrecord "), n, ids, locs);
	r.cpu0_data = locs[0].off;
	if (o->instance) {
		struct bopts io = *o;

		io.misalign = false;
		inst_sec = b.len;
		put_flyrecord(&r, &b, c, &io, &fmt, str_add(&st, "buffer flyrecord inst"), 1,
			      &inst_id, inst_loc);
	}
	if (o->latency) {
		text_sec = b.len;
		sf = sec_begin(&r, &b, TK_DAT_SECTION_BUFFER_TEXT, mflags,
			       str_add(&st, "buffer latency"));
		if (c)
			put_chunks(&b, c, (const uint8_t *)latency_text, strlen(latency_text), 16);
		else
			bb_put(&b, latency_text, strlen(latency_text));
		sec_end(&b, sf);
	}

	/*
	 * Second OPTIONS section with the BUFFER options (trace-cmd's layout).
	 * Without two_options the first DONE still chains here: the test of a
	 * single section is the v6 one and the real file.
	 */
	opts2 = b.len;
	sf = sec_begin(&r, &b, TK_DAT_SECTION_OPTIONS, 0, str_add(&st, "options"));
	if (o->instance)
		opt_buffer_v7(&b, inst_sec, "inst", "global", fmt.page_size, 1, inst_loc);
	opt_buffer_v7(&b, top_sec, "", "local", fmt.page_size, n, locs);
	if (o->latency) {
		opt_begin(&b, TK_DAT_OPTION_BUFFER_TEXT, &sa);
		bb_u64(&b, text_sec);
		bb_cstr(&b, "lat");
		bb_cstr(&b, "local");
		opt_end(&b, sa);
	}
	bb_u16(&b, TK_DAT_OPTION_DONE);
	bb_u32(&b, 8);
	bb_u64(&b, o->done_loop ? opts1 : 0);
	sec_end(&b, sf);
	bb_patch_u64(&b, done1, opts2);

	if (o->tc34_sections) {
		static const char btf[] = "\x9f\xeb\x01\x00 not really BTF";
		static const char mods[] = "";

		bb_patch_u64(&b, btf_field, o->stale_btf ? opts1 + 20 : b.len);
		sf = sec_begin(&r, &b, 23, mflags, str_add(&st, "BTF"));
		if (c)
			put_compressed_block(&b, c, btf, sizeof(btf));
		else
			bb_put(&b, btf, sizeof(btf));
		sec_end(&b, sf);
		/* An empty /proc/modules, as in a VM without modules: 0 bytes. */
		bb_patch_u64(&b, mod_field, b.len);
		sf = sec_begin(&r, &b, 25, 0, str_add(&st, "modules"));
		bb_put(&b, mods, 0);
		sec_end(&b, sf);
	}

	/* Strings last, as trace-cmd writes them at close. */
	str_add(&st, "strings");
	sf = sec_begin(&r, &b, TK_DAT_SECTION_STRINGS, mflags, (int32_t)st.b.len - 8);
	if (c)
		put_compressed_block(&b, c, st.b.d, st.b.len);
	else
		bb_put(&b, st.b.d, st.b.len);
	sec_end(&b, sf);

	bb_patch_u64(&b, first_field, opts1);
	free(st.b.d);
	tk_codec_free(c);
	r.data = b.d;
	r.len = b.len;
	return r;
}

static void put_table(struct bb *b, uint32_t n, size_t *at)
{
	*at = b->len;
	bb_zero(b, (size_t)n * 16);
}

static struct built build_v6(const struct bopts *o)
{
	struct built r = {0};
	struct bb b = {0};
	struct tk_page_format fmt;
	uint32_t n = o->sparse ? 4 : o->ncpus;
	size_t table, inst_off_field = 0, sa;

	fmt_for(o, &fmt);
	bb_put(&b, TK_DAT_MAGIC, TK_DAT_MAGIC_LEN);
	bb_cstr(&b, "6");
	bb_u8(&b, 0);
	bb_u8(&b, 8);
	bb_u32(&b, fmt.page_size);
	for (uint16_t id = 16; id <= 21; id++) {
		r.bounds[r.nbounds++] = b.len;
		meta_body(&b, id, &fmt);
	}
	bb_u32(&b, n);
	r.bounds[r.nbounds++] = b.len;
	bb_put(&b, TK_DAT_V6_OPTIONS_TAG, TK_DAT_V6_TAG_LEN);
	opt_str(&b, TK_DAT_OPTION_TRACECLOCK, "[local] global counter\n");
	opt_str(&b, TK_DAT_OPTION_UNAME, "Linux vm 6.18.44 x86_64");
	if (o->instance) {
		opt_begin(&b, TK_DAT_OPTION_BUFFER, &sa);
		inst_off_field = b.len;
		bb_u64(&b, 0);
		bb_cstr(&b, "inst");
		opt_end(&b, sa);
		opt_begin(&b, TK_DAT_OPTION_CPUCOUNT, &sa);
		bb_u32(&b, 2);
		opt_end(&b, sa);
	}
	if (o->unknown_opt) {
		opt_begin(&b, 99, &sa);
		bb_u32(&b, 7);
		opt_end(&b, sa);
	}
	opt_begin(&b, TK_DAT_OPTION_CPUCOUNT, &sa);
	bb_u32(&b, n);
	opt_end(&b, sa);
	bb_u16(&b, 0);
	r.bounds[r.nbounds++] = b.len;
	if (o->latency) {
		bb_put(&b, TK_DAT_V6_LATENCY_TAG, TK_DAT_V6_TAG_LEN);
		bb_put(&b, latency_text, strlen(latency_text));
		r.data = b.d;
		r.len = b.len;
		return r;
	}
	bb_put(&b, TK_DAT_V6_FLYRECORD_TAG, TK_DAT_V6_TAG_LEN);
	put_table(&b, n, &table);
	bb_u64(&b, 7);
	bb_put(&b, "[local]", 7);
	for (uint32_t i = 0; i < top_ncpus(o); i++) {
		struct bb pages = {0};
		uint32_t id = cpu_id(o, i);

		bb_align(&b, fmt.page_size);
		make_pages(&pages, &fmt, id, o->pages, o->recs, o->empties);
		if (i == 0)
			r.cpu0_data = b.len;
		bb_patch_u64(&b, table + id * 16, b.len);
		bb_patch_u64(&b, table + id * 16 + 8, pages.len);
		bb_put(&b, pages.d, pages.len);
		free(pages.d);
	}
	if (o->instance) {
		struct bb pages = {0};

		bb_patch_u64(&b, inst_off_field, b.len);
		bb_put(&b, TK_DAT_V6_FLYRECORD_TAG, TK_DAT_V6_TAG_LEN);
		put_table(&b, 2, &table);
		bb_align(&b, fmt.page_size);
		make_pages(&pages, &fmt, 1, o->pages, o->recs, o->empties);
		/* Instance CPU 0 is empty, CPU 1 has data. */
		bb_patch_u64(&b, table + 16, b.len);
		bb_patch_u64(&b, table + 24, pages.len);
		bb_put(&b, pages.d, pages.len);
		free(pages.d);
	}
	r.data = b.d;
	r.len = b.len;
	return r;
}

static struct built build(const struct bopts *o)
{
	return o->version == 6 ? build_v6(o) : build_v7(o);
}

/* ------------------------------------------------------------ file helpers */

static const char *write_tmp(const char *name, const void *data, size_t len)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

static struct tk_dat *open_built(const struct built *r, const char *name)
{
	const char *path = write_tmp(name, r->data, r->len);
	struct tk_dat *d = tk_dat_open(path);

	if (!d)
		fail_msg("open %s: %s", name, tk_errmsg());
	return d;
}

/* Opening must fail with @err and a message naming the file and an offset. */
static void expect_open_error(const void *data, size_t len, const char *name, int err)
{
	const char *path = write_tmp(name, data, len);
	struct tk_dat *d = tk_dat_open(path);

	if (d) {
		tk_dat_close(d);
		fail_msg("%s: opened, expected %s", name, strerror(err));
	}
	assert_errno(-errno, err);
	if (!strstr(tk_errmsg(), name) || !strstr(tk_errmsg(), "offset 0x"))
		fail_msg("%s: message lacks file or offset: %s", name, tk_errmsg());
}

/* Decode every page of one CPU; checks record times; returns records. */
static uint64_t read_cpu(struct tk_dat *d, size_t buffer, size_t index, uint32_t cpu,
			 uint32_t npages, uint32_t recs, bool empties)
{
	const struct tk_dat_buffer *b = tk_dat_buffer_get(d, buffer);
	struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(d, buffer, index);
	uint64_t count = 0, off;
	const void *page;
	uint32_t k = 0;
	int ret;

	if (!r)
		fail_msg("reader: %s", tk_errmsg());
	assert_int_equal(tk_dat_cpu_reader_size(r), (uint64_t)npages * b->page_format.page_size);
	while ((ret = tk_dat_cpu_reader_next_page(r, &page, &off)) == 1) {
		struct tk_page_iter it;
		struct tk_page_header hdr;
		struct tk_page_record rec;
		uint32_t j = 0;

		assert_int_equal(off, (uint64_t)k * b->page_format.page_size);
		assert_int_equal(tk_page_iter_init(&it, &b->page_format, page,
						   b->page_format.page_size, &hdr),
				 0);
		while (tk_page_iter_next(&it, &rec) == 1) {
			uint32_t payload[2];

			assert_int_equal(rec.timestamp, rec_ts(cpu, k, j));
			memcpy(payload, rec.data, sizeof(payload));
			assert_int_equal(payload[0], cpu);
			assert_int_equal(payload[1], k * 1000 + j);
			j++;
			count++;
		}
		assert_int_equal(j, page_empty(empties, k) ? 0 : recs);
		k++;
	}
	if (ret < 0)
		fail_msg("next_page: %s", tk_errmsg());
	assert_int_equal(k, npages);
	tk_dat_cpu_reader_free(r);
	return count;
}

static void check_metadata(struct tk_dat *d)
{
	struct tk_dat_text t;
	char hp[1024];
	size_t n;

	assert_int_equal(tk_dat_header_page(d, &t), 0);
	n = tk_page_format_header_text(&tk_dat_get_info(d)->page_format, hp, sizeof(hp));
	assert_int_equal(t.len, n);
	assert_memory_equal(t.data, hp, n);
	assert_int_equal(tk_dat_header_event(d, &t), 0);
	assert_int_equal(t.len, strlen(header_event_text));
	assert_int_equal(tk_dat_ftrace_format_count(d), 1);
	assert_int_equal(tk_dat_ftrace_format(d, 0, &t), 0);
	assert_memory_equal(t.data, ftrace_text, t.len);
	assert_int_equal(t.len, strlen(ftrace_text));
	assert_int_equal(tk_dat_system_count(d), 2);
	assert_string_equal(tk_dat_system_name(d, 0), "sched");
	assert_string_equal(tk_dat_system_name(d, 1), "irq");
	assert_null(tk_dat_system_name(d, 2));
	assert_int_equal(tk_dat_system_format_count(d, 0), 2);
	assert_int_equal(tk_dat_system_format_count(d, 1), 1);
	assert_int_equal(tk_dat_system_format(d, 0, 1, &t), 0);
	assert_int_equal(t.len, strlen(sched_wakeup_text));
	assert_memory_equal(t.data, sched_wakeup_text, t.len);
	assert_int_equal(tk_dat_system_format(d, 1, 0, &t), 0);
	assert_memory_equal(t.data, irq_text, t.len);
	assert_errno(tk_dat_system_format(d, 1, 1, &t), ENOENT);
	assert_int_equal(tk_dat_kallsyms(d, &t), 0);
	assert_int_equal(t.len, strlen(kallsyms_text));
	assert_memory_equal(t.data, kallsyms_text, t.len);
	assert_int_equal(tk_dat_printk(d, &t), 0);
	assert_int_equal(t.len, 0);
	assert_int_equal(tk_dat_cmdlines(d, &t), 0);
	assert_memory_equal(t.data, cmdlines_text, t.len);
	/* The raw bodies are the v7 body layout whatever the version. */
	for (uint16_t id = 16; id <= 21; id++) {
		struct bb want = {0};
		const void *body;
		uint64_t len;

		meta_body(&want, id, &tk_dat_get_info(d)->page_format);
		assert_int_equal(tk_dat_metadata(d, id, &body, &len), 0);
		assert_int_equal(len, want.len);
		assert_memory_equal(body, want.d, want.len);
		free(want.d);
	}
	assert_errno(tk_dat_metadata(d, 22, &(const void *){NULL}, &(uint64_t){0}), ENOENT);
}

/* ------------------------------------------------------------------ tests */

static void check_v7_common(struct tk_dat *d, const struct bopts *o, const struct built *r)
{
	const struct tk_dat_info *info = tk_dat_get_info(d);
	const struct tk_dat_buffer *top;
	size_t n;

	assert_int_equal(info->version, 7);
	assert_false(info->big_endian);
	assert_int_equal(info->long_size, 8);
	assert_int_equal(info->page_size, PAGE);
	assert_int_equal(info->compression, o->comp);
	assert_string_equal(info->compression_version, tk_codec_version(o->comp));
	assert_int_equal(info->file_size, r->len);
	assert_int_equal(info->page_format.page_size, PAGE);
	assert_int_equal(info->page_format.long_size, 8);
	assert_int_equal(info->page_format.data_offset, 16);
	assert_int_equal(info->cpu_count, o->sparse ? 4 : o->ncpus);
	assert_string_equal(info->uname, "Linux vm 6.18.44 x86_64");
	assert_string_equal(info->tracer_version, "3.1.6 test");
	assert_string_equal(info->trace_clock, "[local] global counter\n");
	assert_string_equal(info->clock, "local");
	assert_true(info->has_date);
	assert_int_equal(info->date_offset_us, 16);
	assert_true(info->has_trace_id);
	assert_int_equal(info->trace_id, 0x1122334455667788ull);
	if (!o->tsc)
		assert_int_equal(tk_dat_timestamp(d, 1000), 1000 + 16000);

	/* Sections: every one the builder wrote, in order, with descriptions. */
	n = tk_dat_section_count(d);
	assert_int_equal(n, r->nbounds);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tk_dat_section_get(d, i)->offset, r->bounds[i]);
	assert_int_equal(tk_dat_section_get(d, 0)->id, 16);
	assert_string_equal(tk_dat_section_get(d, 0)->description, "headers");
	assert_int_equal(tk_dat_section_get(d, 0)->flags, o->comp ? 1 : 0);
	assert_int_equal(tk_dat_section_get(d, n - 1)->id, TK_DAT_SECTION_STRINGS);
	assert_string_equal(tk_dat_section_get(d, n - 1)->description, "strings");
	assert_string_equal(tk_dat_section_get(d, 6)->description, "options");
	assert_string_equal(tk_dat_section_get(d, 7)->description, "buffer flyrecord ");
	if (o->comp) {
		struct bb body = {0};

		meta_body(&body, 18, &info->page_format);
		assert_int_equal(tk_dat_section_get(d, 2)->body_size, body.len);
		assert_true(tk_dat_section_get(d, 2)->size != body.len);
		free(body.d);
	}
	check_metadata(d);

	top = tk_dat_buffer_get(d, 0);
	assert_string_equal(top->name, "");
	assert_string_equal(top->clock, "local");
	assert_int_equal(top->compressed, o->comp != TK_COMPRESS_NONE);
	assert_false(top->latency_text);
	assert_int_equal(top->cpu_count, top_ncpus(o));
	assert_int_equal(top->cpus[0].offset, r->cpu0_data);
	assert_int_equal(top->section_offset, r->bounds[7]);
	for (uint32_t i = 0; i < top->cpu_count; i++)
		assert_int_equal(read_cpu(d, 0, i, cpu_id(o, i), o->pages, o->recs, o->empties),
				 (uint64_t)o->recs * o->pages -
					 (o->empties ? (o->pages + 3) / 7 * o->recs : 0));
}

static void test_v7_none(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 2, .pages = 6, .recs = 5, .unknown_opt = true};
	struct built r = build(&o);
	struct tk_dat *d;
	bool saw_unknown = false, saw_done = false;

	(void)state;
	tk_test_warnings = 0;
	tk_log_set_handler(tk_test_catch_warning, NULL, TK_LOG_WARN);
	d = open_built(&r, "v7-none.dat");
	tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
	assert_int_equal(tk_test_warnings, 1);
	assert_non_null(strstr(tk_test_last_warning, "unknown option 99 skipped"));
	assert_non_null(strstr(tk_test_last_warning, "v7-none.dat: offset 0x"));
	check_v7_common(d, &o, &r);
	assert_int_equal(tk_dat_buffer_count(d), 1);
	/* Options in file order across both sections, with their offsets. */
	for (size_t i = 0; i < tk_dat_option_count(d); i++) {
		const struct tk_dat_option *opt = tk_dat_option_get(d, i);
		uint16_t id;

		assert_true(opt->offset > 0 && opt->offset < r.len);
		memcpy(&id, r.data + opt->offset, 2);
		assert_int_equal(id, opt->id);
		if (opt->id == 99) {
			saw_unknown = true;
			assert_int_equal(opt->size, 4);
		}
		if (opt->id == TK_DAT_OPTION_DONE && !saw_done) {
			saw_done = true;
			assert_int_equal(opt->options_section, 0);
		}
	}
	assert_true(saw_unknown && saw_done);
	assert_int_equal(tk_dat_option_get(d, tk_dat_option_count(d) - 1)->id, TK_DAT_OPTION_DONE);
	assert_int_equal(tk_dat_option_get(d, tk_dat_option_count(d) - 1)->options_section, 1);
	assert_null(tk_dat_option_get(d, tk_dat_option_count(d)));
	tk_dat_close(d);
	free(r.data);
}

static void test_v7_zstd(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 2,
			  .pages = 25,
			  .recs = 4,
			  .chunk_pages = 4};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "v7-zstd.dat");
	struct tk_dat_cpu_reader *rd;
	const void *page;
	uint64_t off;
	struct tk_page_header hdr;
	size_t chunks;

	(void)state;
	check_v7_common(d, &o, &r);
	rd = tk_dat_cpu_reader_new(d, 0, 1);
	assert_non_null(rd);
	chunks = tk_dat_cpu_reader_chunk_count(rd);
	assert_int_equal(chunks, 7);
	assert_int_equal(tk_dat_cpu_reader_chunks_decoded(rd), 0);

	/* Seek by offset: page 13 sits in chunk 3; only that chunk is decoded. */
	assert_int_equal(tk_dat_cpu_reader_seek(rd, 13 * PAGE + 100), 0);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
	assert_int_equal(off, 13 * PAGE);
	assert_int_equal(tk_page_read_header(&tk_dat_get_info(d)->page_format, page, PAGE, &hdr),
			 0);
	assert_int_equal(hdr.timestamp, page_ts(1, 13));
	assert_int_equal(tk_dat_cpu_reader_chunks_decoded(rd), 1);
	assert_errno(tk_dat_cpu_reader_seek(rd, 25 * PAGE), ERANGE);

	/* Seek by time: O(log chunks) chunks decoded, landing on the right page. */
	for (uint32_t k = 0; k < 25; k += 3) {
		uint64_t before = tk_dat_cpu_reader_chunks_decoded(rd);

		assert_int_equal(tk_dat_cpu_reader_seek_time(rd, rec_ts(1, k, 1)), 0);
		assert_true(tk_dat_cpu_reader_chunks_decoded(rd) - before <= 4);
		assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
		assert_int_equal(off, (uint64_t)k * PAGE);
	}
	assert_int_equal(tk_dat_cpu_reader_seek_time(rd, 0), 0);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
	assert_int_equal(off, 0);
	assert_int_equal(tk_dat_cpu_reader_seek_time(rd, UINT64_MAX), 0);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
	assert_int_equal(off, 24 * PAGE);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 0);
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
	free(r.data);
}

/*
 * trace-cmd up to 3.1 writes a compressed CPU size without the 4-byte chunk
 * count, 3.2 on (upstream 4b921329) with it: both read the same, in zstd and
 * in zlib, and the public size is the file's.
 */
static void test_compressed_size_conventions(void **state)
{
	static const enum tk_compression comps[] = {TK_COMPRESS_ZSTD, TK_COMPRESS_ZLIB};

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		uint64_t size31 = 0;

		for (int64_t adjust = 0; adjust <= 4; adjust += 4) {
			struct bopts o = {.version = 7,
					  .comp = comps[k],
					  .ncpus = 2,
					  .pages = 9,
					  .recs = 3,
					  .chunk_pages = 2,
					  .instance = true,
					  .size_adjust = adjust};
			struct built r = build(&o);
			struct tk_dat *d = open_built(&r, adjust ? "size-3.2.dat" : "size-3.1.dat");
			const struct tk_dat_buffer *top = tk_dat_buffer_get(d, 0);
			const struct tk_dat_buffer *inst = tk_dat_buffer_get(d, 1);
			struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(d, 0, 1);

			check_v7_common(d, &o, &r);
			assert_non_null(rd);
			/* Chunks of 2 pages: 9 pages take 5, whichever the size says. */
			assert_int_equal(tk_dat_cpu_reader_chunk_count(rd), 5);
			tk_dat_cpu_reader_free(rd);
			/* The size stays the file's: 4 more in the 3.2+ convention. */
			if (adjust)
				assert_int_equal(top->cpus[0].size, size31 + 4);
			else
				size31 = top->cpus[0].size;
			assert_string_equal(inst->name, "inst");
			assert_int_equal(read_cpu(d, 1, 0, 1, o.pages, o.recs, false),
					 (uint64_t)o.pages * o.recs);
			tk_dat_close(d);
			free(r.data);
		}
	}
}

/*
 * The size is untrusted: only the two exact conventions pass. Anything else
 * fails when the CPU is opened, naming the file and the data's offset.
 */
static void test_compressed_size_hostile(void **state)
{
	static const int64_t bad[] = {-8, -4, -1, 1, 3, 5, 8, 12};

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct bopts o = {.version = 7,
				  .comp = TK_COMPRESS_ZSTD,
				  .ncpus = 1,
				  .pages = 5,
				  .recs = 2,
				  .chunk_pages = 2,
				  .size_adjust = bad[k]};
		struct built r = build(&o);
		struct tk_dat *d = open_built(&r, "size-bad.dat");
		struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(d, 0, 0);

		if (rd)
			fail_msg("size adjusted by %" PRId64 " was accepted", bad[k]);
		assert_errno(-errno, EBADMSG);
		if (!strstr(tk_errmsg(), "size-bad.dat") || !strstr(tk_errmsg(), "offset 0x"))
			fail_msg("message lacks file or offset: %s", tk_errmsg());
		if (!strstr(tk_errmsg(), "chunk"))
			fail_msg("size adjusted by %" PRId64 ": %s", bad[k], tk_errmsg());
		tk_dat_close(d);
		free(r.data);
	}

	/* A size past the end of the file is refused at open. */
	{
		struct bopts o = {.version = 7,
				  .comp = TK_COMPRESS_ZSTD,
				  .ncpus = 1,
				  .pages = 5,
				  .recs = 2,
				  .size_adjust = (int64_t)1 << 40};
		struct built r = build(&o);

		expect_open_error(r.data, r.len, "size-huge.dat", EBADMSG);
		assert_non_null(strstr(tk_errmsg(), "exceeds file size"));
		free(r.data);
	}
}

/* The sections and options trace-cmd 3.4+ adds are known: no warning. */
static void test_tc34_sections(void **state)
{
	for (int k = 0; k < 2; k++) {
		struct bopts o = {.version = 7,
				  .comp = k ? TK_COMPRESS_ZSTD : TK_COMPRESS_NONE,
				  .ncpus = 2,
				  .pages = 3,
				  .recs = 2,
				  .tc34_sections = true,
				  .size_adjust = k ? 4 : 0};
		struct built r = build(&o);
		struct tk_dat *d;
		size_t n;

		(void)state;
		tk_test_warnings = 0;
		tk_log_set_handler(tk_test_catch_warning, NULL, TK_LOG_WARN);
		d = open_built(&r, "tc34.dat");
		tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
		if (tk_test_warnings)
			fail_msg("warned: %s", tk_test_last_warning);
		check_v7_common(d, &o, &r);
		n = tk_dat_section_count(d);
		assert_int_equal(tk_dat_section_get(d, n - 3)->id, 23);
		assert_string_equal(tk_dat_section_get(d, n - 3)->description, "BTF");
		assert_string_equal(tk_dat_section_name(23), "BTF_FILE");
		assert_int_equal(tk_dat_section_get(d, n - 2)->id, 25);
		assert_string_equal(tk_dat_section_name(25), "MODULES_FILE");
		tk_dat_close(d);
		free(r.data);
	}

	/* A stale option 23 is warned about and ignored. */
	{
		struct bopts o = {.version = 7,
				  .comp = TK_COMPRESS_ZSTD,
				  .ncpus = 2,
				  .pages = 3,
				  .recs = 2,
				  .tc34_sections = true,
				  .stale_btf = true};
		struct built r = build(&o);
		struct tk_dat *d;

		tk_test_warnings = 0;
		tk_log_set_handler(tk_test_catch_warning, NULL, TK_LOG_WARN);
		d = open_built(&r, "tc34-stale.dat");
		tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
		assert_int_equal(tk_test_warnings, 1);
		assert_non_null(strstr(tk_test_last_warning, "BTF_FILE option names no such"));
		assert_non_null(strstr(tk_test_last_warning, "tc34-stale.dat: offset 0x"));
		check_v7_common(d, &o, &r);
		tk_dat_close(d);
		free(r.data);
	}
}

static void test_seek_time_empty_pages(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 30, .recs = 3, .empties = true};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "empties.dat");
	struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(d, 0, 0);
	const void *page;
	uint64_t off;

	(void)state;
	assert_non_null(rd);
	for (uint32_t k = 0; k < 30; k++) {
		uint32_t want = k;

		/* An empty page's records are nowhere: the previous page is where to start. */
		if (page_empty(true, k))
			want = k - 1;
		assert_int_equal(tk_dat_cpu_reader_seek_time(rd, page_ts(0, k) + 15), 0);
		assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
		assert_int_equal(off, (uint64_t)want * PAGE);
	}
	/* Uncompressed data is read in blocks: a full scan works after seeks. */
	assert_int_equal(tk_dat_cpu_reader_seek(rd, 0), 0);
	for (int i = 0; i < 30; i++)
		assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 0);
	tk_dat_cpu_reader_free(rd);
	assert_int_equal(read_cpu(d, 0, 0, 0, 30, 3, true), 26 * 3);
	tk_dat_close(d);
	free(r.data);

	/* The same in compressed chunks. */
	o.comp = TK_COMPRESS_ZSTD;
	o.chunk_pages = 3;
	r = build(&o);
	d = open_built(&r, "empties-zstd.dat");
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	for (uint32_t k = 0; k < 30; k++) {
		uint32_t want = page_empty(true, k) ? k - 1 : k;

		assert_int_equal(tk_dat_cpu_reader_seek_time(rd, page_ts(0, k) + 15), 0);
		assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
		assert_int_equal(off, (uint64_t)want * PAGE);
	}
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
	free(r.data);
}

static void test_v7_instance_sparse_latency(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .sparse = true,
			  .pages = 3,
			  .recs = 2,
			  .instance = true,
			  .latency = true,
			  .tsc = true};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "v7-inst.dat");
	const struct tk_dat_buffer *b;
	struct tk_dat_text t;

	(void)state;
	check_v7_common(d, &o, &r);
	assert_int_equal(tk_dat_buffer_count(d), 3);
	b = tk_dat_buffer_get(d, 0);
	assert_int_equal(b->cpus[0].cpu, 0);
	assert_int_equal(b->cpus[1].cpu, 3);
	b = tk_dat_buffer_get(d, 1);
	assert_string_equal(b->name, "inst");
	assert_string_equal(b->clock, "global");
	assert_int_equal(b->cpu_count, 1);
	assert_int_equal(b->cpus[0].cpu, 1);
	assert_int_equal(read_cpu(d, 1, 0, 1, 3, 2, false), 6);
	b = tk_dat_buffer_get(d, 2);
	assert_string_equal(b->name, "lat");
	assert_true(b->latency_text);
	assert_true(b->compressed);
	assert_null(tk_dat_cpu_reader_new(d, 2, 0));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(tk_dat_latency_text(d, 2, &t), 0);
	assert_int_equal(t.len, strlen(latency_text));
	assert_memory_equal(t.data, latency_text, t.len);
	free((void *)t.data);
	assert_errno(tk_dat_latency_text(d, 0, &t), EINVAL);
	/* TSC2NSEC 3 >> 1, DATE 16 us, OFFSET -5 ns. */
	assert_true(tk_dat_get_info(d)->has_tsc2nsec);
	assert_int_equal(tk_dat_timestamp(d, 1000), 1500 + 16000 - 5);
	assert_int_equal(tk_dat_timestamp(d, UINT64_MAX),
			 (uint64_t)((((unsigned __int128)UINT64_MAX) * 3) >> 1) + 16000 - 5);
	tk_dat_close(d);
	free(r.data);

	/* Uncompressed latency text. */
	o.comp = TK_COMPRESS_NONE;
	r = build(&o);
	d = open_built(&r, "v7-inst-none.dat");
	assert_int_equal(tk_dat_latency_text(d, 2, &t), 0);
	assert_int_equal(t.len, strlen(latency_text));
	assert_memory_equal(t.data, latency_text, t.len);
	free((void *)t.data);
	tk_dat_close(d);
	free(r.data);
}

static void test_v6(void **state)
{
	struct bopts o = {.version = 6,
			  .ncpus = 2,
			  .pages = 4,
			  .recs = 3,
			  .instance = true,
			  .unknown_opt = true};
	struct built r = build(&o);
	struct tk_dat *d;
	const struct tk_dat_info *info;
	const struct tk_dat_buffer *b;
	struct tk_dat_text t;

	(void)state;
	tk_log_set_handler(tk_test_catch_warning, NULL, TK_LOG_WARN);
	tk_test_warnings = 0;
	d = open_built(&r, "v6.dat");
	tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
	assert_int_equal(tk_test_warnings, 1);
	info = tk_dat_get_info(d);
	assert_int_equal(info->version, 6);
	assert_int_equal(info->compression, TK_COMPRESS_NONE);
	assert_string_equal(info->compression_version, "");
	assert_int_equal(info->cpu_count, 2);
	assert_string_equal(info->clock, "local");
	assert_string_equal(info->uname, "Linux vm 6.18.44 x86_64");
	check_metadata(d);
	/* Pseudo-sections: the six parts, the options block, the flyrecord tag. */
	assert_int_equal(tk_dat_section_count(d), 8);
	for (int i = 0; i < 6; i++) {
		const struct tk_dat_section *s = tk_dat_section_get(d, (size_t)i);

		assert_int_equal(s->id, 16 + i);
		assert_int_equal(s->offset, r.bounds[i]);
		assert_int_equal(s->flags, 0);
		assert_int_equal(s->string_id, -1);
	}
	assert_int_equal(tk_dat_section_get(d, 6)->id, TK_DAT_SECTION_OPTIONS);
	assert_int_equal(tk_dat_section_get(d, 6)->offset, r.bounds[6]);
	assert_int_equal(tk_dat_section_get(d, 7)->id, TK_DAT_SECTION_FLYRECORD);
	assert_int_equal(tk_dat_option_get(d, tk_dat_option_count(d) - 1)->id, 0);
	assert_int_equal(tk_dat_option_get(d, tk_dat_option_count(d) - 1)->size, 0);

	assert_int_equal(tk_dat_buffer_count(d), 2);
	b = tk_dat_buffer_get(d, 0);
	assert_string_equal(b->name, "");
	assert_string_equal(b->clock, "local");
	assert_int_equal(b->cpu_count, 2);
	assert_int_equal(b->cpus[0].offset, r.cpu0_data);
	assert_int_equal(read_cpu(d, 0, 0, 0, 4, 3, false), 12);
	assert_int_equal(read_cpu(d, 0, 1, 1, 4, 3, false), 12);
	b = tk_dat_buffer_get(d, 1);
	assert_string_equal(b->name, "inst");
	assert_null(b->clock);
	/* Its CPU 0 is (0, 0) in the table: skipped. */
	assert_int_equal(b->cpu_count, 1);
	assert_int_equal(b->cpus[0].cpu, 1);
	assert_int_equal(read_cpu(d, 1, 0, 1, 4, 3, false), 12);
	assert_errno(tk_dat_latency_text(d, 0, &t), EINVAL);
	tk_dat_close(d);
	free(r.data);

	/* Sparse top CPUs and a latency file. */
	o = (struct bopts){.version = 6, .sparse = true, .pages = 2, .recs = 1};
	r = build(&o);
	d = open_built(&r, "v6-sparse.dat");
	b = tk_dat_buffer_get(d, 0);
	assert_int_equal(tk_dat_get_info(d)->cpu_count, 4);
	assert_int_equal(b->cpu_count, 2);
	assert_int_equal(b->cpus[1].cpu, 3);
	assert_int_equal(read_cpu(d, 0, 1, 3, 2, 1, false), 2);
	tk_dat_close(d);
	free(r.data);

	o = (struct bopts){.version = 6, .ncpus = 1, .latency = true};
	r = build(&o);
	d = open_built(&r, "v6-latency.dat");
	assert_int_equal(tk_dat_buffer_count(d), 1);
	assert_true(tk_dat_buffer_get(d, 0)->latency_text);
	assert_int_equal(tk_dat_latency_text(d, 0, &t), 0);
	assert_int_equal(t.len, strlen(latency_text));
	assert_memory_equal(t.data, latency_text, t.len);
	free((void *)t.data);
	tk_dat_close(d);
	free(r.data);
}

static void test_truncation(void **state)
{
	struct bopts opts[] = {
		{.version = 7,
		 .ncpus = 2,
		 .pages = 2,
		 .recs = 2,
		 .instance = true,
		 .latency = true},
		{.version = 7, .comp = TK_COMPRESS_ZSTD, .ncpus = 2, .pages = 2, .recs = 2},
		{.version = 6, .ncpus = 2, .pages = 2, .recs = 2, .instance = true},
	};

	(void)state;
	for (size_t v = 0; v < sizeof(opts) / sizeof(opts[0]); v++) {
		struct built r = build(&opts[v]);
		size_t last = opts[v].version == 7 ? r.nbounds - 1 : r.nbounds;

		/*
		 * Cut at each part boundary and in the middle of each part. For
		 * v7 the STRINGS section comes last and is cosmetic: the file
		 * without it opens (and has no descriptions).
		 */
		for (size_t i = 0; i < r.nbounds; i++) {
			uint64_t end = i + 1 < r.nbounds ? r.bounds[i + 1] : r.len;

			if (i < last)
				expect_open_error(r.data, r.bounds[i], "trunc.dat", EBADMSG);
			expect_open_error(r.data, r.bounds[i] + (end - r.bounds[i]) / 2,
					  "trunc-mid.dat", EBADMSG);
		}
		if (opts[v].version == 7) {
			struct built cut = r;
			struct tk_dat *d;

			cut.len = r.bounds[r.nbounds - 1];
			d = open_built(&cut, "no-strings.dat");
			assert_null(tk_dat_section_get(d, 0)->description);
			tk_dat_close(d);
		}
		/* Inside the header. */
		for (size_t n = 0; n < r.bounds[0]; n += 3)
			expect_open_error(r.data, n, "trunc-head.dat", EBADMSG);
		free(r.data);
	}
}

static void test_header_errors(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 1, .recs = 1};
	struct built r = build(&o);
	uint8_t *bad = malloc(r.len);
	struct tk_dat *d;

	(void)state;
	memcpy(bad, r.data, r.len);
	bad[3] = 'T';
	expect_open_error(bad, r.len, "magic.dat", EBADMSG);
	free(bad);
	free(r.data);

	o.version_str = "5";
	r = build(&o);
	expect_open_error(r.data, r.len, "v5.dat", ENOTSUP);
	assert_non_null(strstr(tk_errmsg(), "version 5"));
	free(r.data);
	o.version_str = "8";
	r = build(&o);
	expect_open_error(r.data, r.len, "v8.dat", ENOTSUP);
	free(r.data);
	o.version_str = NULL;
	o.codec_name = "lz99";
	r = build(&o);
	expect_open_error(r.data, r.len, "codec.dat", ENOTSUP);
	assert_non_null(strstr(tk_errmsg(), "lz99"));
	free(r.data);

	d = tk_dat_open("/nonexistent/x.dat");
	assert_null(d);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(tk_errmsg(), "/nonexistent/x.dat"));
}

static void test_layout_errors(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 2,
			  .pages = 8,
			  .recs = 2,
			  .chunk_pages = 2};
	struct built r = build(&o);
	struct bb b = {.big = false};
	struct tk_dat *d;
	struct tk_dat_cpu_reader *rd;
	const void *page;
	uint64_t off;
	int ret;

	(void)state;
	/* Oversized section size. */
	bb_put(&b, r.data, r.len);
	bb_patch_u64(&b, r.ftrace_size_field, 1ull << 40);
	expect_open_error(b.d, b.len, "oversized.dat", EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "exceeds file size"));
	/* Option offset outside the file. */
	memcpy(b.d, r.data, r.len);
	bb_patch_u64(&b, r.opt16_payload, r.len + 100);
	expect_open_error(b.d, b.len, "optoff.dat", EBADMSG);
	/* Option offset at a section of another id. */
	bb_patch_u64(&b, r.opt16_payload, r.bounds[1]);
	expect_open_error(b.d, b.len, "optid.dat", EBADMSG);
	/* Corrupt zstd chunk: opens, then the chunk read fails with its offset. */
	memcpy(b.d, r.data, r.len);
	for (int i = 0; i < 4; i++)
		b.d[r.cpu0_data + 4 + 8 + i] ^= 0x5a;
	d = open_built(&(struct built){.data = b.d, .len = b.len}, "zchunk.dat");
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	ret = tk_dat_cpu_reader_next_page(rd, &page, &off);
	assert_errno(ret, EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "zchunk.dat: offset 0x"));
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
	free(b.d);
	free(r.data);

	o.done_loop = true;
	r = build(&o);
	expect_open_error(r.data, r.len, "loop.dat", EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "loop"));
	free(r.data);
	o.done_loop = false;

	o.dup_cpu = true;
	r = build(&o);
	expect_open_error(r.data, r.len, "dupcpu.dat", EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "twice"));
	free(r.data);
	o.dup_cpu = false;

	o.comp = TK_COMPRESS_NONE;
	o.misalign = true;
	r = build(&o);
	d = open_built(&r, "misalign.dat");
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_null(rd);
	assert_int_equal(errno, EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "misalign.dat: offset 0x"));
	assert_non_null(strstr(tk_errmsg(), "page size"));
	tk_dat_close(d);
	free(r.data);
}

static void test_bad_page_header(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 3, .recs = 1};
	struct built r = build(&o);
	struct tk_dat *d;
	struct tk_dat_cpu_reader *rd;
	const void *page;
	uint64_t off;

	(void)state;
	/* Page 1's commit claims more than the page holds. */
	tk_store_u64(r.data + r.cpu0_data + PAGE + 8, PAGE * 2, false);
	d = open_built(&r, "badpage.dat");
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
	assert_errno(tk_dat_cpu_reader_next_page(rd, &page, &off), EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "badpage.dat: offset 0x"));
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
	free(r.data);
}

/* Open @path salvaging; NULL on failure (errno set). */
static struct tk_dat *open_salvage(const char *path)
{
	TK_OPTS(tk_dat_open_opts, opts, .strict = false);

	return tk_dat_open_with(path, &opts);
}

static void test_salvage_bad_page(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 3, .recs = 1};
	struct built r = build(&o);
	TK_OPTS(tk_dat_open_opts, strict, .strict = true);
	struct tk_dat_damage dm;
	struct tk_dat_cpu_reader *rd;
	const void *page;
	const char *path;
	uint64_t off, events = 0;
	struct tk_dat *d;

	(void)state;
	/* Page 1's commit claims more than the page holds: read as a full page. */
	tk_store_u64(r.data + r.cpu0_data + PAGE + 8, PAGE * 2, false);
	path = write_tmp("salvage-page.dat", r.data, r.len);
	d = open_salvage(path);
	assert_non_null(d);
	assert_int_equal(tk_dat_damage_count(d), 0);
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 1);
	assert_int_equal(tk_dat_cpu_reader_next_page(rd, &page, &off), 0);
	tk_dat_cpu_reader_free(rd);
	assert_int_equal(tk_dat_damage_count(d), 1);
	assert_int_equal(tk_dat_damage_get(d, 0, &dm), 0);
	assert_int_equal(dm.offset, r.cpu0_data + PAGE);
	assert_int_equal(dm.events_lost, -1);
	assert_non_null(strstr(dm.what, "CPU 0 page"));
	assert_null(strstr(dm.what, "salvage-page.dat"));
	assert_errno(tk_dat_damage_get(d, 1, &dm), ERANGE);
	/* Read again (check): the region stays one. */
	assert_int_equal(tk_dat_check(d, &events), 0);
	assert_true(events >= 2);
	assert_int_equal(tk_dat_damage_count(d), 1);
	tk_dat_close(d);
	/* Strict through the opts: the old error, and no damage list. */
	d = tk_dat_open_with(path, &strict);
	assert_non_null(d);
	assert_errno(tk_dat_check(d, NULL), EBADMSG);
	assert_int_equal(tk_dat_damage_count(d), 0);
	tk_dat_close(d);
	free(r.data);
}

/*
 * A salvaging reader reads a v7 file's kallsyms on first use: its damage is
 * found then (once), and a strict reader still fails at open.
 */
static void test_salvage_late_kallsyms(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 1,
			  .pages = 2,
			  .recs = 1,
			  .chunk_pages = 2};
	struct built r = build(&o);
	TK_OPTS(tk_dat_open_opts, strict, .strict = true);
	struct tk_dat_damage dm;
	struct tk_dat_text t;
	const char *path;
	uint64_t ksyms = 0, events = 0;
	struct tk_dat *d;

	(void)state;
	for (size_t i = 0; i < r.nbounds; i++)
		if (tk_load_u16(r.data + r.bounds[i], false) == TK_DAT_SECTION_KALLSYMS)
			ksyms = r.bounds[i];
	assert_true(ksyms != 0);
	/* The zstd frame's magic, after the section header and {csize, usize}. */
	memset(r.data + ksyms + TK_DAT_SECTION_HEADER_SIZE + 8, 0, 4);
	path = write_tmp("late-kallsyms.dat", r.data, r.len);
	d = open_salvage(path);
	assert_non_null(d);
	assert_int_equal(tk_dat_damage_count(d), 0);
	assert_errno(tk_dat_kallsyms(d, &t), ENOENT);
	assert_int_equal(tk_dat_damage_count(d), 1);
	assert_int_equal(tk_dat_damage_get(d, 0, &dm), 0);
	assert_int_equal(dm.events_lost, -1);
	assert_errno(tk_dat_kallsyms(d, &t), ENOENT);
	assert_int_equal(tk_dat_damage_count(d), 1);
	/* The other parts are whole. */
	assert_int_equal(tk_dat_cmdlines(d, &t), 0);
	assert_memory_equal(t.data, cmdlines_text, t.len);
	tk_dat_close(d);
	/* check reads it too, unasked. */
	d = open_salvage(path);
	assert_non_null(d);
	assert_int_equal(tk_dat_check(d, &events), 0);
	assert_int_equal(tk_dat_damage_count(d), 1);
	tk_dat_close(d);
	/* Strict: open fails, as before kallsyms was read late. */
	d = tk_dat_open_with(path, &strict);
	assert_null(d);
	/* Intact, the late text is the one written. */
	free(r.data);
	r = build(&o);
	path = write_tmp("late-kallsyms-ok.dat", r.data, r.len);
	d = open_salvage(path);
	assert_non_null(d);
	assert_int_equal(tk_dat_kallsyms(d, &t), 0);
	assert_int_equal(t.len, strlen(kallsyms_text));
	assert_memory_equal(t.data, kallsyms_text, t.len);
	assert_int_equal(tk_dat_damage_count(d), 0);
	tk_dat_close(d);
	free(r.data);
}

static void test_salvage_truncation(void **state)
{
	struct bopts opts[] = {
		{.version = 7, .ncpus = 2, .pages = 4, .recs = 2},
		{.version = 7, .comp = TK_COMPRESS_ZSTD, .ncpus = 2, .pages = 4, .recs = 2},
		{.version = 6, .ncpus = 2, .pages = 4, .recs = 2},
	};

	(void)state;
	for (size_t v = 0; v < sizeof(opts) / sizeof(opts[0]); v++) {
		struct built r = build(&opts[v]);

		/*
		 * Cut anywhere after the header: salvage either opens, with the
		 * cut recorded, and reads the rest to its end, or fails as
		 * strict does (a v6 file whose metadata lengths are cut).
		 */
		for (size_t n = r.bounds[0] + 1; n < r.len; n += 97) {
			const char *path = write_tmp("salvage-cut.dat", r.data, n);
			struct tk_dat *d = open_salvage(path);
			uint64_t events = 0;

			if (!d) {
				assert_errno(-errno, EBADMSG);
				continue;
			}
			assert_int_equal(tk_dat_check(d, &events), 0);
			if (!tk_dat_damage_count(d))
				fail_msg("v%d cut at %zu: opened without damage", opts[v].version,
					 n);
			tk_dat_close(d);
		}
		/* v6 keeps its CPU table before the data: a cut in CPU 1 keeps CPU 0. */
		if (opts[v].version == 6) {
			const char *path = write_tmp("salvage-cpu.dat", r.data, r.len - PAGE - 1);
			struct tk_dat *d = open_salvage(path);
			uint64_t events = 0;

			assert_non_null(d);
			assert_int_equal(tk_dat_check(d, &events), 0);
			assert_true(events >= 4 * 2 + 2 * 2);
			tk_dat_close(d);
		}
		free(r.data);
	}
}

static void test_salvage_opts(void **state)
{
	struct tk_dat_open_opts bad = {0};
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 1, .recs = 1};
	struct built r = build(&o);
	const char *path = write_tmp("opts.dat", r.data, r.len);
	struct tk_dat *d;

	(void)state;
	assert_null(tk_dat_open_with(path, &bad));
	assert_errno(-errno, EINVAL);
	d = tk_dat_open_with(path, NULL);
	assert_non_null(d);
	assert_int_equal(tk_dat_damage_count(d), 0);
	tk_dat_close(d);
	free(r.data);
}

/* ------------------------------------------------------------ decode ahead */

/* Pages read from @rd, copied end to end into *@out; returns the page count or an error. */
static int read_all_pages(struct tk_dat_cpu_reader *rd, uint8_t **out, size_t *len)
{
	const void *page;
	uint64_t off;
	int ret, n = 0;

	*out = NULL;
	*len = 0;
	while ((ret = tk_dat_cpu_reader_next_page(rd, &page, &off)) == 1) {
		*out = realloc(*out, *len + PAGE);
		assert_non_null(*out);
		memcpy(*out + *len, page, PAGE);
		*len += PAGE;
		n++;
	}
	return ret < 0 ? ret : n;
}

/*
 * The next page of each CPU whose data goes on (@more), from reader @rd
 * and from the plain reader @ref: the same result, offset and bytes.
 */
static void next_pages_match(struct tk_dat_cpu_reader **rd, struct tk_dat_cpu_reader **ref,
			     bool *more)
{
	for (int c = 0; c < 2; c++) {
		const void *page, *want;
		uint64_t off, woff;
		int a, b;

		if (!more[c])
			continue;
		a = tk_dat_cpu_reader_next_page(rd[c], &page, &off);
		b = tk_dat_cpu_reader_next_page(ref[c], &want, &woff);
		assert_int_equal(a, b);
		if (a != 1) {
			more[c] = false;
			continue;
		}
		assert_int_equal(off, woff);
		assert_memory_equal(page, want, PAGE);
	}
}

/*
 * Two CPUs read side by side through a started prefetch: every page is the
 * plain reader's, seeks work, and the decoder did decode chunks ahead.
 */
static void test_prefetch(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 2,
			  .pages = 300,
			  .recs = 4,
			  .chunk_pages = 2};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "prefetch.dat");
	struct tk_dat_cpu_reader *rd[2], *ref[2];
	struct tk_dat_prefetch *pf = tk_dat_prefetch_new(d, 2);
	struct tk_dat_prefetch_stats st;
	bool more[2] = {true, true};
	const void *page;
	uint64_t off;

	(void)state;
	assert_non_null(pf);
	for (int c = 0; c < 2; c++) {
		rd[c] = tk_dat_cpu_reader_new(d, 0, (size_t)c);
		ref[c] = tk_dat_cpu_reader_new(d, 0, (size_t)c);
		assert_non_null(rd[c]);
		assert_non_null(ref[c]);
		assert_int_equal(tk_dat_prefetch_attach(pf, rd[c]), 0);
	}
	/* Attaching twice, or data that is not compressed, is refused. */
	assert_errno(tk_dat_prefetch_attach(pf, rd[0]), EINVAL);
	assert_int_equal(tk_dat_prefetch_start(pf), 0);
	while (more[0] || more[1]) {
		next_pages_match(rd, ref, more);
	}
	/* Seeks on a reader that reads ahead land where a plain reader's do. */
	for (uint32_t k = 0; k < 300; k += 37) {
		assert_int_equal(tk_dat_cpu_reader_seek_time(rd[1], rec_ts(1, k, 1)), 0);
		assert_int_equal(tk_dat_cpu_reader_next_page(rd[1], &page, &off), 1);
		assert_int_equal(off, (uint64_t)k * PAGE);
	}
	tk_dat_prefetch_get_stats(pf, &st);
	assert_true(st.loads >= 300);
	assert_true(st.hits <= st.loads);
	assert_true(st.decoded > 0 || st.stopped);
	for (int c = 0; c < 2; c++) {
		tk_dat_cpu_reader_free(rd[c]);
		tk_dat_cpu_reader_free(ref[c]);
	}
	tk_dat_prefetch_free(pf);
	tk_dat_prefetch_free(NULL);
	tk_dat_close(d);
	free(r.data);
}

/*
 * Pumped (no decoder thread): the chunks the windows lack are decoded by
 * whoever calls tk_dat_prefetch_pump(), here between pages, and the pages
 * are the plain reader's; a pump on a prefetch not pumped does nothing.
 */
static void test_prefetch_pumped(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 2,
			  .pages = 300,
			  .recs = 4,
			  .chunk_pages = 2};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "prefetch-pumped.dat");
	struct tk_dat_cpu_reader *rd[2], *ref[2];
	struct tk_dat_prefetch *pf = tk_dat_prefetch_new(d, 2);
	struct tk_dat_prefetch_stats st;
	bool more[2] = {true, true};
	size_t pumped = 0;

	(void)state;
	assert_non_null(pf);
	for (int c = 0; c < 2; c++) {
		rd[c] = tk_dat_cpu_reader_new(d, 0, (size_t)c);
		ref[c] = tk_dat_cpu_reader_new(d, 0, (size_t)c);
		assert_non_null(rd[c]);
		assert_non_null(ref[c]);
		assert_int_equal(tk_dat_prefetch_attach(pf, rd[c]), 0);
	}
	assert_int_equal(tk_dat_prefetch_pump(pf), 0);
	assert_int_equal(tk_dat_prefetch_start_pumped(pf), 0);
	/* Started: no more readers, and no thread either. */
	assert_errno(tk_dat_prefetch_attach(pf, ref[0]), EINVAL);
	assert_int_equal(tk_dat_prefetch_start(pf), 0);
	for (uint32_t k = 0; more[0] || more[1]; k++) {
		if (k % 3 == 0)
			pumped += tk_dat_prefetch_pump(pf);
		next_pages_match(rd, ref, more);
	}
	tk_dat_prefetch_get_stats(pf, &st);
	assert_true(pumped > 0);
	assert_int_equal(st.decoded, pumped);
	assert_true(st.hits > 0 && st.hits <= st.loads);
	assert_false(st.stopped);
	for (int c = 0; c < 2; c++) {
		tk_dat_cpu_reader_free(rd[c]);
		tk_dat_cpu_reader_free(ref[c]);
	}
	tk_dat_prefetch_free(pf);
	tk_dat_close(d);
	free(r.data);
}

/*
 * convert's second reader (tk_dat_cpu_reader_dup()) reads the pages the
 * first one reads, from the start and after a seek, with the directory
 * copied.
 */
static void test_reader_dup(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 2,
			  .pages = 300,
			  .recs = 4,
			  .chunk_pages = 2};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "reader-dup.dat");
	struct tk_dat_cpu_reader *rd[2], *dup[2];
	bool more[2] = {true, true};

	(void)state;
	for (int c = 0; c < 2; c++) {
		rd[c] = tk_dat_cpu_reader_new(d, 0, (size_t)c);
		assert_non_null(rd[c]);
		/* A reader part way through gives a duplicate at the start. */
		for (int k = 0; k < 7; k++) {
			const void *page;

			assert_int_equal(tk_dat_cpu_reader_next_page(rd[c], &page, NULL), 1);
		}
		dup[c] = tk_dat_cpu_reader_dup(rd[c]);
		assert_non_null(dup[c]);
		assert_int_equal(tk_dat_cpu_reader_size(dup[c]), tk_dat_cpu_reader_size(rd[c]));
		assert_int_equal(tk_dat_cpu_reader_chunk_count(dup[c]),
				 tk_dat_cpu_reader_chunk_count(rd[c]));
		assert_int_equal(tk_dat_cpu_reader_seek(rd[c], 0), 0);
	}
	while (more[0] || more[1])
		next_pages_match(dup, rd, more);
	for (int c = 0; c < 2; c++) {
		assert_int_equal(tk_dat_cpu_reader_seek(dup[c], 100 * PAGE), 0);
		assert_int_equal(tk_dat_cpu_reader_seek(rd[c], 100 * PAGE), 0);
		more[c] = true;
	}
	while (more[0] || more[1])
		next_pages_match(dup, rd, more);
	for (int c = 0; c < 2; c++) {
		tk_dat_cpu_reader_free(dup[c]);
		tk_dat_cpu_reader_free(rd[c]);
	}
	tk_dat_close(d);
	free(r.data);
}

/*
 * A decoder that never runs (not started: as one starved of CPU) is given
 * up after a period of loads it did not help; the reader reads on alone.
 */
static void test_prefetch_starved(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 1,
			  .pages = 300,
			  .recs = 2,
			  .chunk_pages = 1};
	struct built r = build(&o);
	struct tk_dat *d = open_built(&r, "prefetch-starved.dat");
	struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(d, 0, 0);
	struct tk_dat_prefetch *pf = tk_dat_prefetch_new(d, 1);
	struct tk_dat_prefetch_stats st;
	uint8_t *pages;
	size_t len;

	(void)state;
	assert_non_null(rd);
	assert_non_null(pf);
	assert_int_equal(tk_dat_prefetch_attach(pf, rd), 0);
	assert_int_equal(read_all_pages(rd, &pages, &len), 300);
	tk_dat_prefetch_get_stats(pf, &st);
	assert_int_equal(st.loads, 300);
	assert_int_equal(st.hits, 0);
	assert_true(st.stopped);
	free(pages);
	/* Freed in the wrong order, the reader keeps its own block and reads on. */
	tk_dat_prefetch_free(pf);
	assert_int_equal(tk_dat_cpu_reader_seek(rd, 0), 0);
	assert_int_equal(read_all_pages(rd, &pages, &len), 300);
	free(pages);
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
	free(r.data);
}

/*
 * Read CPU 0 of @path (salvaging unless @strict), through a prefetch when
 * @ahead: 1 its decoder thread, 2 pumped once before the first page.
 */
static int read_damaged(const char *path, bool strict, int ahead, char *damage, size_t cap)
{
	TK_OPTS(tk_dat_open_opts, opts, .strict = strict);
	struct tk_dat *d = tk_dat_open_with(path, &opts);
	struct tk_dat_cpu_reader *rd;
	struct tk_dat_prefetch *pf = NULL;
	struct tk_dat_damage dm;
	uint8_t *pages;
	size_t len, used = 0;
	int n;

	assert_non_null(d);
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	if (ahead) {
		pf = tk_dat_prefetch_new(d, 1);
		assert_non_null(pf);
		assert_int_equal(tk_dat_prefetch_attach(pf, rd), 0);
		if (ahead == 2) {
			assert_int_equal(tk_dat_prefetch_start_pumped(pf), 0);
			assert_true(tk_dat_prefetch_pump(pf) > 0);
		} else {
			assert_int_equal(tk_dat_prefetch_start(pf), 0);
		}
	}
	n = read_all_pages(rd, &pages, &len);
	damage[0] = '\0';
	if (n < 0)
		used += (size_t)snprintf(damage, cap, "error %d: %s\n", n, tk_errmsg());
	for (size_t i = 0; i < tk_dat_damage_count(d) && used < cap; i++) {
		assert_int_equal(tk_dat_damage_get(d, i, &dm), 0);
		used += (size_t)snprintf(damage + used, cap - used, "0x%" PRIx64 " %s\n", dm.offset,
					 dm.what);
	}
	free(pages);
	tk_dat_cpu_reader_free(rd);
	tk_dat_prefetch_free(pf);
	tk_dat_close(d);
	return n;
}

/*
 * A chunk that does not decompress: read ahead or not, the same pages, the
 * same damage (salvaging) and the same error (strict).
 */
static void test_prefetch_damage(void **state)
{
	struct bopts o = {.version = 7,
			  .comp = TK_COMPRESS_ZSTD,
			  .ncpus = 1,
			  .pages = 40,
			  .recs = 3,
			  .chunk_pages = 2};
	struct built r = build(&o);
	uint64_t at = r.cpu0_data + 4;
	char plain[2048], ahead[2048];
	const char *path;
	int n1, n2;

	(void)state;
	/* Chunk 5 of CPU 0: skip five {csize, usize, block}, then garble the block. */
	for (int i = 0; i < 5; i++) {
		uint32_t csize;

		memcpy(&csize, r.data + at, 4);
		at += 8 + csize;
	}
	memset(r.data + at + 8, 0x5a, 12);
	path = write_tmp("prefetch-damage.dat", r.data, r.len);
	n1 = read_damaged(path, false, 0, plain, sizeof(plain));
	assert_int_equal(n1, 38);
	assert_non_null(strstr(plain, "chunk 5"));
	/* The decoder thread, and a pump that decodes chunk 5 before the reader reaches it. */
	for (int mode = 1; mode <= 2; mode++) {
		n2 = read_damaged(path, false, mode, ahead, sizeof(ahead));
		assert_int_equal(n2, n1);
		assert_string_equal(ahead, plain);
	}
	n1 = read_damaged(path, true, 0, plain, sizeof(plain));
	assert_int_equal(n1, -EBADMSG);
	for (int mode = 1; mode <= 2; mode++) {
		n2 = read_damaged(path, true, mode, ahead, sizeof(ahead));
		assert_int_equal(n2, n1);
		assert_string_equal(ahead, plain);
	}
	free(r.data);
}

/*
 * Every record of CPU 0 of @path (salvaging), one line each, then the
 * damage list. @defer: the reader hands its pages out unchecked and a page
 * is trimmed only when tk_page_iter_fill() stops short of its end, as
 * report's streams do; else the reader trims before handing pages out.
 */
static void read_records(const char *path, bool defer, char *out, size_t cap)
{
	struct tk_dat *d = open_salvage(path);
	const struct tk_page_format *fmt;
	struct tk_page_record recs[PAGE / 8];
	struct tk_dat_cpu_reader *rd;
	struct tk_dat_damage dm;
	const void *page;
	size_t used = 0;
	int ret;

	assert_non_null(d);
	fmt = &tk_dat_buffer_get(d, 0)->page_format;
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	if (defer)
		assert_true(tk_dat_cpu_reader_defer_trim(rd));
	while ((ret = tk_dat_cpu_reader_next_page(rd, &page, NULL)) == 1) {
		struct tk_page_header hdr;
		struct tk_page_iter it;
		size_t before = tk_dat_damage_count(d);
		int n;

		assert_int_equal(tk_page_iter_init(&it, fmt, page, PAGE, &hdr), 0);
		n = tk_page_iter_fill(&it, recs, PAGE / 8);
		if (defer && (n < 0 || (n < (int)(PAGE / 8) && !tk_page_iter_at_end(&it)))) {
			/* Nothing was recorded for the page's records before the trim. */
			assert_int_equal(tk_dat_damage_count(d), before);
			assert_int_equal(tk_dat_cpu_reader_trim_page(rd, page), 0);
			assert_true(tk_dat_damage_count(d) >= before);
			assert_int_equal(tk_page_iter_init(&it, fmt, page, PAGE, &hdr), 0);
			n = tk_page_iter_fill(&it, recs, PAGE / 8);
			/* Once only: the next page is not the one handed out. */
			assert_errno(tk_dat_cpu_reader_trim_page(rd, (const uint8_t *)page + PAGE),
				     EINVAL);
		}
		if (n < 0)
			fail_msg("a page handed out salvaged does not decode: %s", tk_errmsg());
		assert_true(n < (int)(PAGE / 8) && tk_page_iter_at_end(&it));
		used += (size_t)snprintf(out + used, cap - used, "page missed %d/%d/%" PRIu64 "\n",
					 hdr.missed_events, hdr.missed_stored, hdr.missed_count);
		for (int i = 0; i < n && used < cap; i++) {
			uint32_t v;

			memcpy(&v, (const uint8_t *)recs[i].data + 4, 4);
			used += (size_t)snprintf(
				out + used, cap - used,
				"%" PRIu32 " %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", recs[i].offset,
				recs[i].timestamp, recs[i].size, v);
		}
		assert_true(used < cap);
	}
	assert_int_equal(ret, 0);
	for (size_t i = 0; i < tk_dat_damage_count(d); i++) {
		assert_int_equal(tk_dat_damage_get(d, i, &dm), 0);
		used += (size_t)snprintf(out + used, cap - used,
					 "0x%" PRIx64 " %" PRIu64 " %" PRId64 " %s\n", dm.offset,
					 dm.skipped, dm.events_lost, dm.what);
		assert_true(used < cap);
	}
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
}

/*
 * report's streams take pages unchecked and have them trimmed when the
 * fill meets a bad record: the records and the damage must be those of a
 * reader that trims every page before handing it out. Pages of 20 records
 * of 16 bytes after the 16-byte header; each damaged page has one kind of
 * damage: a bad length word in the middle, the last record straddling the
 * commit, a length that runs past the page, a zeroed run where records
 * start (the records after it are kept), and a commit past the page (the
 * header clamped) with a bad record after it.
 */
static void test_salvage_deferred_trim(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 8, .recs = 20};
	struct built r = build(&o);
	TK_OPTS(tk_dat_open_opts, strict, .strict = true);
	char *checked = malloc(1 << 16), *deferred = malloc(1 << 16);
	const char *path;
	struct tk_dat *d;
	struct tk_dat_cpu_reader *rd;

	(void)state;
	assert_non_null(checked);
	assert_non_null(deferred);
#define REC(k, j) (r.data + r.cpu0_data + (k)*PAGE + 16 + (j)*16)
	/* Page 1, record 5: type 0 with a length word below its own 4 bytes. */
	tk_store_u32(REC(1, 5), 10u << 5, false);
	tk_store_u32(REC(1, 5) + 4, 2, false);
	/* Page 2: the commit ends 8 bytes into the last record (kept whole: it fits the page). */
	tk_store_u64(r.data + r.cpu0_data + 2 * PAGE + 8, 19 * 16 + 8, false);
	/* Page 3, record 10: a length word past the page. */
	tk_store_u32(REC(3, 10), 10u << 5, false);
	tk_store_u32(REC(3, 10) + 4, 0x10000, false);
	/* Page 4, records 3 and 4 zeroed: cut out, the records after them kept. */
	memset(REC(4, 3), 0, 32);
	/* Page 5, the last record: type 0 whose length runs 4 bytes past the data. */
	tk_store_u32(REC(5, 19), 10u << 5, false);
	tk_store_u32(REC(5, 19) + 4, 20, false);
	/* Page 6: a commit past the page (clamped), and record 7 bad. */
	tk_store_u64(r.data + r.cpu0_data + 6 * PAGE + 8, PAGE * 2, false);
	tk_store_u32(REC(6, 7), 10u << 5, false);
	tk_store_u32(REC(6, 7) + 4, 1, false);
#undef REC
	path = write_tmp("salvage-deferred.dat", r.data, r.len);
	read_records(path, false, checked, 1 << 16);
	read_records(path, true, deferred, 1 << 16);
	assert_string_equal(deferred, checked);
	/* Every damaged page is one region, page 6's the clamped header's. */
	{
		int regions = 0;

		for (const char *p = checked; (p = strstr(p, " CPU 0 page")); p++)
			regions++;
		assert_int_equal(regions, 6);
	}
	assert_non_null(strstr(checked, "zeroed bytes where a record should start"));
	/* A strict reader defers nothing. */
	d = tk_dat_open_with(path, &strict);
	assert_non_null(d);
	rd = tk_dat_cpu_reader_new(d, 0, 0);
	assert_non_null(rd);
	assert_false(tk_dat_cpu_reader_defer_trim(rd));
	tk_dat_cpu_reader_free(rd);
	tk_dat_close(d);
	free(checked);
	free(deferred);
	free(r.data);
}

static void test_open_fd(void **state)
{
	struct bopts o = {.version = 7, .ncpus = 1, .pages = 2, .recs = 2};
	struct built r = build(&o);
	int fd = memfd_create("dat", MFD_CLOEXEC);
	struct tk_dat *d;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, r.data, r.len), (ssize_t)r.len);
	d = tk_dat_open_fd(fd, "memfd.dat");
	assert_non_null(d);
	assert_string_equal(tk_dat_get_info(d)->path, "memfd.dat");
	assert_int_equal(read_cpu(d, 0, 0, 0, 2, 2, false), 4);
	tk_dat_close(d);
	/* The caller's descriptor is still open. */
	assert_true(lseek(fd, 0, SEEK_SET) == 0);
	close(fd);
	free(r.data);
}

/* A real trace-cmd file, when the fixture exists. */
static void test_real_file(void **state)
{
	const char *src = getenv("TK_SOURCE_DIR");
	char path[512];
	struct tk_dat *d;
	uint64_t records = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/sample-v7-zstd.dat", src ? src : ".");
	if (access(path, R_OK) != 0) {
		printf("skip: %s absent\n", path);
		skip();
	}
	d = tk_dat_open(path);
	if (!d)
		fail_msg("%s", tk_errmsg());
	assert_true(tk_dat_buffer_count(d) >= 1);
	for (size_t bi = 0; bi < tk_dat_buffer_count(d); bi++) {
		const struct tk_dat_buffer *b = tk_dat_buffer_get(d, bi);

		if (bi == 0)
			assert_true(b->cpu_count >= 1);
		for (uint32_t ci = 0; ci < b->cpu_count && !b->latency_text; ci++) {
			struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(d, bi, ci);
			const void *page;
			int ret;

			if (!rd)
				fail_msg("%s", tk_errmsg());
			while ((ret = tk_dat_cpu_reader_next_page(rd, &page, NULL)) == 1) {
				struct tk_page_iter it;
				struct tk_page_record rec;

				assert_int_equal(tk_page_iter_init(&it, &b->page_format, page,
								   b->page_format.page_size, NULL),
						 0);
				while ((ret = tk_page_iter_next(&it, &rec)) == 1)
					records++;
				assert_int_equal(ret, 0);
			}
			if (ret < 0)
				fail_msg("%s", tk_errmsg());
			tk_dat_cpu_reader_free(rd);
		}
	}
	assert_true(records > 0);
	tk_dat_close(d);
}

/* Seeds for fuzz/corpus/dat: small pages keep them small. */
static void write_corpus(const char *dir)
{
	struct {
		const char *name;
		struct bopts o;
	} seeds[] = {
		{"v7-none",
		 {.version = 7,
		  .page_size = 256,
		  .ncpus = 2,
		  .pages = 3,
		  .recs = 3,
		  .unknown_opt = true,
		  .latency = true}},
		{"v7-zstd",
		 {.version = 7,
		  .comp = TK_COMPRESS_ZSTD,
		  .page_size = 256,
		  .sparse = true,
		  .pages = 5,
		  .recs = 3,
		  .chunk_pages = 2,
		  .instance = true,
		  .latency = true,
		  .tsc = true}},
		{"v6",
		 {.version = 6,
		  .page_size = 256,
		  .ncpus = 2,
		  .pages = 2,
		  .recs = 2,
		  .instance = true}},
		{"v6-latency", {.version = 6, .page_size = 256, .ncpus = 1, .latency = true}},
		/* trace-cmd 3.4: sizes with the chunk count, zlib, BTF and modules. */
		{"v7-zlib-tc34",
		 {.version = 7,
		  .comp = TK_COMPRESS_ZLIB,
		  .page_size = 256,
		  .ncpus = 2,
		  .pages = 4,
		  .recs = 2,
		  .chunk_pages = 3,
		  .instance = true,
		  .tc34_sections = true,
		  .size_adjust = 4}},
	};

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		struct built r = build(&seeds[i].o);
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(r.data, 1, r.len, f), r.len);
		fclose(f);
		free(r.data);
	}
}

static void test_corpus_seeds_open(void **state)
{
	const char *dir = getenv("TK_WRITE_CORPUS");
	char sub[300];

	(void)state;
	snprintf(sub, sizeof(sub), "%s/corpus", tmpdir);
	assert_int_equal(mkdir(sub, 0700), 0);
	write_corpus(sub);
	tk_log_set_handler(tk_test_catch_warning, NULL, TK_LOG_WARN);
	for (int i = 0; i < 5; i++) {
		static const char *const names[] = {"v7-none", "v7-zstd", "v6", "v6-latency",
						    "v7-zlib-tc34"};
		char path[400];
		struct tk_dat *d;

		snprintf(path, sizeof(path), "%s/%s", sub, names[i]);
		d = tk_dat_open(path);
		if (!d)
			fail_msg("%s", tk_errmsg());
		tk_dat_close(d);
		unlink(path);
	}
	tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
	rmdir(sub);
	if (dir)
		write_corpus(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v7_none),
		cmocka_unit_test(test_v7_zstd),
		cmocka_unit_test(test_compressed_size_conventions),
		cmocka_unit_test(test_compressed_size_hostile),
		cmocka_unit_test(test_tc34_sections),
		cmocka_unit_test(test_seek_time_empty_pages),
		cmocka_unit_test(test_v7_instance_sparse_latency),
		cmocka_unit_test(test_v6),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_header_errors),
		cmocka_unit_test(test_layout_errors),
		cmocka_unit_test(test_bad_page_header),
		cmocka_unit_test(test_salvage_bad_page),
		cmocka_unit_test(test_salvage_late_kallsyms),
		cmocka_unit_test(test_salvage_truncation),
		cmocka_unit_test(test_salvage_opts),
		cmocka_unit_test(test_prefetch),
		cmocka_unit_test(test_prefetch_pumped),
		cmocka_unit_test(test_reader_dup),
		cmocka_unit_test(test_prefetch_starved),
		cmocka_unit_test(test_prefetch_damage),
		cmocka_unit_test(test_salvage_deferred_trim),
		cmocka_unit_test(test_open_fd),
		cmocka_unit_test(test_real_file),
		cmocka_unit_test(test_corpus_seeds_open),
	};

	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
