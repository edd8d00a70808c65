// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Out-of-memory tests: STYLE.md says "out of memory returns -ENOMEM and
 * leaks nothing; tests prove it by failing the Nth allocation". This binary
 * does that for codec.c, page.c, dat-read.c, dat-write.c, the
 * tracing-data model (tracedata.c with bytebuf.c) and, as root, the
 * flight recorder's stat (flight.c with tracefs.c), in the manner of
 * SQLite's OOM loops.
 *
 * How: the binary is linked with --wrap for malloc, calloc, realloc, free,
 * strdup, strndup, asprintf and the codec constructors (ZSTD_createCCtx,
 * ZSTD_createDCtx, deflateInit_, inflateInit_ and their destructors), so
 * every such call that libtracekit.a makes goes through alloc-fail.c. For
 * N = 1, 2, ... an operation runs with the Nth call failing, until a run
 * completes without reaching N. Each run must either succeed with the same
 * result as a clean run (the library may survive a failure, e.g. by
 * retrying later) or fail with -ENOMEM (NULL and errno ENOMEM for
 * constructors) and a tk_errmsg() that was set by this run and says
 * "memory". After the run's cleanup the wrappers' set of live allocations
 * must be back where it started; LeakSanitizer (make check builds with ASan,
 * detect_leaks=1) checks the same thing independently, and ASan catches a
 * double free or a use of a freed block on the error paths.
 *
 * Each loop runs twice: with one failing call (the library goes on after
 * it and must recover cleanly), and "sticky", every call from the Nth on
 * failing (the cleanup paths must not depend on allocating).
 *
 * Limits: the allocations libzstd and zlib make inside themselves (during
 * ZSTD_compressCCtx, deflate, ...) happen in shared libraries that --wrap
 * does not reach, so they are never failed here; their constructors are,
 * which covers the library's own handling of codec memory errors. page.c
 * allocates nothing: its decoder runs on every page read here, so the test
 * proves that too (no counted call while decoding, see count_page).
 * Descriptors are counted around every run as well: an error path must
 * close what it opened.
 *
 * The input files are written once, with injection off, by the same writer
 * code the loops exercise; a file written under injection that reports
 * success must read back with the same summary as the clean one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "alloc-fail.h"
#include "internal/bytes.h"
#include "internal/error.h"

#define PAGE	    4096u
#define NCPUS	    2u
#define NPAGES	    5u /* pages per CPU: with 2-page chunks, 3 chunks */
#define CHUNK_PAGES 2u
#define MAX_POINTS  100000ul /* far above any operation here; stops a runaway */

static char tmpdir[256];
static struct tk_page_format fmt;
static uint8_t pages[2][NCPUS][NPAGES][PAGE]; /* [buffer][cpu][page] */

/* ---------------------------------------------------------------- inputs */

struct body {
	uint8_t data[2048];
	size_t len;
};

static struct body meta[6]; /* ids 16..21, v7 layout (tracedat.md 2.7) */

static const char header_event[] = "# compressed entry header\n"
				   "\ttype_len    :    5 bits\n"
				   "\ttime_delta  :   27 bits\n"
				   "\tarray       :   32 bits\n";
static const char print_fmt[] =
	"name: print\nID: 5\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:8;\tsize:0;\tsigned:0;\n\n"
	"print fmt: \"%s\", REC->buf\n";
static const char ev_fmt[] =
	"name: tkev\nID: 900\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
	"print fmt: \"x\"\n";
static const char kallsyms[] = "ffffffff81000000 T _stext\nffffffff81000100 T tk_fn\n";
static const char printk[] = "0xffffffff82000000 : \"tk printk %d\\n\"\n";
static const char cmdlines[] = "1234 tkproc\n4321 other\n";
static const char latency[] = "  <idle>-0  0d... 1.000us : line 1\n"
			      "  <idle>-0  0d... 2.000us : line 2\n";

/* The six metadata bodies, encoded by the tracing-data model before any fault is armed. */
static void build_meta(void)
{
	struct tk_tracedata *td = tk_tracedata_new();
	char hp[1024];
	size_t hp_len = tk_page_format_header_text(&fmt, hp, sizeof(hp));

	assert_non_null(td);
	assert_true(hp_len < sizeof(hp));
	assert_int_equal(tk_tracedata_set_header_page(td, hp, hp_len), 0);
	assert_int_equal(tk_tracedata_set_header_event(td, header_event, strlen(header_event)), 0);
	assert_int_equal(tk_tracedata_add_ftrace_format(td, print_fmt, strlen(print_fmt)), 0);
	assert_int_equal(tk_tracedata_add_format(td, "tksys", ev_fmt, strlen(ev_fmt)), 0);
	assert_int_equal(tk_tracedata_set_kallsyms(td, kallsyms, strlen(kallsyms)), 0);
	assert_int_equal(tk_tracedata_set_printk(td, printk, strlen(printk)), 0);
	assert_int_equal(tk_tracedata_set_cmdlines(td, cmdlines, strlen(cmdlines)), 0);
	for (uint16_t id = 16; id <= 21; id++) {
		struct body *b = &meta[id - 16];
		uint64_t len;
		void *body;

		assert_int_equal(tk_tracedata_encode_dat_section(td, id, false, &body, &len), 0);
		assert_true(len <= sizeof(b->data));
		memcpy(b->data, body, len);
		b->len = len;
		free(body);
	}
	tk_tracedata_free(td);
}

static uint64_t page_ts(unsigned buf, unsigned cpu, unsigned page)
{
	return 1000000000ull + (uint64_t)page * 1000000 + cpu * 1000 + buf * 100;
}

static void build_pages(void)
{
	for (unsigned b = 0; b < 2; b++) {
		for (unsigned c = 0; c < NCPUS; c++) {
			for (unsigned p = 0; p < NPAGES; p++) {
				struct tk_page_writer pw;
				uint64_t ts = page_ts(b, c, p);

				assert_int_equal(tk_page_writer_init(&pw, &fmt, pages[b][c][p], ts),
						 0);
				for (unsigned r = 0; r < 3 + p; r++) {
					char s[32];
					int n = snprintf(s, sizeof(s), "b%u c%u p%u r%u", b, c, p,
							 r);

					assert_int_equal(tk_page_writer_add(&pw, ts + r * 10, s,
									    (uint32_t)n + 1),
							 0);
				}
				tk_page_writer_finish(&pw);
			}
		}
	}
}

/* -------------------------------------------------------------- checking */

/*
 * Messages from earlier runs must not pass for this run's: clear the
 * thread's message before each run (tk_fail is the library's own setter).
 */
static void clear_errmsg(void)
{
	tk_fail(EINVAL, "%s", "");
	assert_string_equal(tk_errmsg(), "");
}

/*
 * Where the injected failure hit, as "object+0xoffset" for addr2line (the
 * binary is position-independent, so a bare address means nothing later).
 */
static const char *site(void)
{
	static char buf[300];
	const void *p = alloc_fail_site();
	Dl_info info;

	if (p && dladdr(p, &info) && info.dli_fname)
		snprintf(buf, sizeof(buf), "%s+0x%lx", info.dli_fname,
			 (unsigned long)((uintptr_t)p - (uintptr_t)info.dli_fbase - 1));
	else
		snprintf(buf, sizeof(buf), "%p", p);
	return buf;
}

/* A failed run: it must be out of memory and say so. */
static void check_failure(const char *what, unsigned long n, int ret)
{
	const char *msg = tk_errmsg();

	if (ret != -ENOMEM)
		fail_msg("%s: failing call %lu (at %s) gave %d (%s), not -ENOMEM; message: %s",
			 what, n, site(), ret, strerror(-ret), msg);
	if (!msg[0])
		fail_msg("%s: failing call %lu returned -ENOMEM without a message", what, n);
	if (!strstr(msg, "memory"))
		fail_msg("%s: failing call %lu: message does not say out of memory: %s", what, n,
			 msg);
}

/* Open descriptors: an error path must close what it opened, too. */
static int count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(dir);
	while (readdir(dir))
		n++;
	closedir(dir);
	return n;
}

/*
 * Run op(ctx) with the Nth counted call failing, for N = 1, 2, ... until a
 * run does not reach N. Returns the number of runs that hit a failure.
 */
static unsigned long oom_loop(const char *what, int (*op)(void *ctx), void *ctx,
			      void (*check_ok)(void *ctx), bool sticky)
{
	unsigned long n, survived = 0;

	for (n = 1; n < MAX_POINTS; n++) {
		size_t live = alloc_fail_live();
		int fds = count_fds();
		bool fired;
		int ret;

		clear_errmsg();
		alloc_fail_arm(n, sticky);
		ret = op(ctx);
		fired = alloc_fail_fired();
		alloc_fail_disarm();
		if (alloc_fail_live() != live)
			fail_msg("%s%s: failing call %lu (at %s): %zu allocations before, %zu "
				 "after (ret %d)",
				 what, sticky ? " (sticky)" : "", n, site(), live,
				 alloc_fail_live(), ret);
		if (count_fds() != fds)
			fail_msg("%s%s: failing call %lu (at %s): %d descriptors before, %d after",
				 what, sticky ? " (sticky)" : "", n, site(), fds, count_fds());
		if (!fired) {
			if (ret != 0)
				fail_msg("%s: clean run failed: %d %s", what, ret, tk_errmsg());
			check_ok(ctx);
			print_message("%s: %lu allocation points failed%s: %lu ENOMEM, "
				      "%lu survived\n",
				      what, n - 1, sticky ? " from the Nth on" : " one at a time",
				      n - 1 - survived, survived);
			return n - 1;
		}
		if (ret == 0) {
			/* Survived the failure: the result must be the same. */
			print_message("%s: survived failing call %lu at %s\n", what, n, site());
			check_ok(ctx);
			survived++;
		} else {
			check_failure(what, n, ret);
		}
	}
	fail_msg("%s: more than %lu allocation points", what, MAX_POINTS);
	return 0;
}

/* ------------------------------------------------------ (d) the codecs */

struct codec_ctx {
	enum tk_compression kind;
	uint8_t src[65536];
	uint8_t comp[70000];
	uint8_t out[65536];
	bool done;
};

static int codec_round(struct tk_codec *c, struct codec_ctx *x)
{
	int64_t csize, usize;

	memset(x->out, 0, sizeof(x->out));
	csize = tk_codec_compress(c, x->comp, sizeof(x->comp), x->src, sizeof(x->src));
	if (csize < 0)
		return (int)csize;
	assert_true((uint64_t)csize <= tk_codec_bound(c, sizeof(x->src)));
	usize = tk_codec_decompress(c, x->out, sizeof(x->out), x->comp, (uint64_t)csize);
	if (usize < 0)
		return (int)usize;
	assert_int_equal(usize, sizeof(x->src));
	return 0;
}

static int codec_op(void *ctx)
{
	struct codec_ctx *x = ctx;
	struct tk_codec *c;
	int ret;

	x->done = false;
	c = tk_codec_new(x->kind, 0);
	if (!c)
		return -errno;
	/* Twice: the second round reuses the contexts the first one made. */
	ret = codec_round(c, x);
	if (!ret)
		ret = codec_round(c, x);
	tk_codec_free(c);
	x->done = !ret;
	return ret;
}

static void codec_check(void *ctx)
{
	struct codec_ctx *x = ctx;

	assert_true(x->done);
	assert_memory_equal(x->out, x->src, sizeof(x->src));
}

static void test_codec_oom(void **state)
{
	static const enum tk_compression kinds[] = {TK_COMPRESS_ZSTD, TK_COMPRESS_ZLIB};
	static struct codec_ctx x;

	(void)state;
	for (size_t i = 0; i < sizeof(x.src); i++)
		x.src[i] = (uint8_t)((i * 7) ^ (i >> 5));
	for (size_t k = 0; k < 2; k++) {
		x.kind = kinds[k];
		/* codec, compression context, decompression context at least */
		assert_true(oom_loop(tk_codec_name(x.kind), codec_op, &x, codec_check, false) >= 3);
		oom_loop(tk_codec_name(x.kind), codec_op, &x, codec_check, true);
	}
}

/* ------------------------------------------------ (e) the tracing data */

/*
 * The tracing-data model (tracedata.c) and its byte buffer (bytebuf.c):
 * build a tracedata through the adders, encode it as TRACING_DATA, decode
 * that into a second one and encode its six .dat sections. The result must
 * equal a clean run's bytes.
 */
struct td_ctx {
	uint8_t *want, *got; /* got is kept only by the first, clean run */
	uint64_t want_len, got_len;
	bool same; /* the last run's bytes equal want */
};

static int td_op(void *ctx)
{
	struct td_ctx *x = ctx;
	struct tk_tracedata *a = tk_tracedata_new(), *b = tk_tracedata_new();
	void *blob = NULL, *body;
	uint64_t len, blen;
	int r = a && b ? 0 : -ENOMEM;

	free(x->got);
	x->got = NULL;
	x->got_len = 0;
	if (!r)
		r = tk_tracedata_set_header_page(a, "hp", 2);
	if (!r)
		r = tk_tracedata_set_header_event(a, "he", 2);
	for (int i = 0; i < 20 && !r; i++)
		r = tk_tracedata_add_ftrace_format(a, "name: print\n", 12);
	for (int i = 0; i < 40 && !r; i++)
		r = tk_tracedata_add_format(a, i % 3 ? "sched" : "irq", "name: x\n", 8);
	if (!r)
		r = tk_tracedata_set_kallsyms(a, "0 T x\n", 6);
	if (!r)
		r = tk_tracedata_set_printk(a, "", 0);
	if (!r)
		r = tk_tracedata_set_cmdlines(a, "1 init\n", 7);
	if (!r)
		r = tk_tracedata_encode_perf(a, &blob, &len);
	if (!r)
		r = tk_tracedata_decode_perf(b, blob, len);
	for (uint16_t id = 16; id <= 21 && !r; id++) {
		uint8_t *n;

		r = tk_tracedata_encode_dat_section(b, id, false, &body, &blen);
		if (r)
			break;
		n = realloc(x->got, x->got_len + blen);
		if (!n) {
			free(body);
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		memcpy(n + x->got_len, body, blen);
		x->got = n;
		x->got_len += blen;
		free(body);
	}
	free(blob);
	tk_tracedata_free(a);
	tk_tracedata_free(b);
	x->same = !r && x->want && x->got_len == x->want_len &&
		  memcmp(x->got, x->want, x->want_len) == 0;
	if (r || x->want) {
		free(x->got);
		x->got = NULL;
	}
	return r;
}

static void td_check(void *ctx)
{
	struct td_ctx *x = ctx;

	assert_true(x->same);
}

static void test_tracedata_oom(void **state)
{
	struct td_ctx x = {0};

	(void)state;
	assert_int_equal(td_op(&x), 0);
	x.want = x.got;
	x.want_len = x.got_len;
	x.got = NULL;
	assert_true(oom_loop("tracedata", td_op, &x, td_check, false) >= 10);
	oom_loop("tracedata", td_op, &x, td_check, true);
	free(x.want);
}

/* ----------------------------------------------------- (c) the writer */

struct file_mode {
	const char *label;
	int version;
	enum tk_compression comp;
	bool latency_only; /* v6's "latency" form: text, no buffers */
};

static const struct file_mode modes[] = {
	{"v7-zstd", 7, TK_COMPRESS_ZSTD, false},   {"v6", 6, TK_COMPRESS_NONE, false},
	{"v7-zlib", 7, TK_COMPRESS_ZLIB, false},   {"v7-none", 7, TK_COMPRESS_NONE, false},
	{"v6-latency", 6, TK_COMPRESS_NONE, true},
};

static int write_buffer(struct tk_dat_writer *w, unsigned b)
{
	int ret = tk_dat_writer_begin_buffer(w, b ? "inst" : "", "local", PAGE, NCPUS);

	for (unsigned c = 0; !ret && c < NCPUS; c++) {
		ret = tk_dat_writer_begin_cpu(w, c);
		/* 1 + 4 pages: a partial chunk first, then whole ones. */
		if (!ret)
			ret = tk_dat_writer_write_pages(w, pages[b][c][0], PAGE);
		if (!ret)
			ret = tk_dat_writer_write_pages(w, pages[b][c][1], (NPAGES - 1) * PAGE);
		if (!ret)
			ret = tk_dat_writer_end_cpu(w);
	}
	if (!ret)
		ret = tk_dat_writer_end_buffer(w);
	return ret;
}

/* Write a file of @m's kind to @path; 0 or the first negative errno. */
static int write_file(const struct file_mode *m, const char *path)
{
	static const char uname[] = "Linux tk 6.0 x86_64";
	static const char version[] = "tk-test 0.1";
	static const char clock[] = "[local] global counter\n";
	static const uint8_t cpucount[4] = {NCPUS, 0, 0, 0};
	static const char date[] = "0x10";
	struct tk_dat_writer_opts o = {
		.sz = sizeof(struct tk_dat_writer_opts),
		.version = m->version,
		.compression = m->comp,
		.page_size = PAGE,
		.chunk_pages = CHUNK_PAGES,
	};
	struct tk_dat_writer *w = tk_dat_writer_open(path, &o);
	int ret = 0;

	if (!w)
		return -errno;
	for (uint16_t id = 16; !ret && id <= 21; id++)
		ret = tk_dat_writer_add_metadata(w, id, meta[id - 16].data, meta[id - 16].len);
	if (!ret)
		ret = tk_dat_writer_add_option(w, TK_DAT_OPTION_UNAME, uname, sizeof(uname));
	if (!ret)
		ret = tk_dat_writer_add_option(w, TK_DAT_OPTION_VERSION, version, sizeof(version));
	/* trace-cmd cannot read a v6 latency file with TRACECLOCK (dat-write.c). */
	if (!ret && !m->latency_only)
		ret = tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, clock, sizeof(clock));
	if (!ret)
		ret = tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUCOUNT, cpucount, 4);
	if (m->latency_only) {
		if (!ret)
			ret = tk_dat_writer_add_latency_text(w, "", "local", latency,
							     sizeof(latency) - 1);
		goto finish;
	}
	if (!ret && m->version == 6)
		ret = tk_dat_writer_declare_buffer(w, "inst");
	if (!ret)
		ret = write_buffer(w, 0);
	/* v7 puts options added after data into the closing OPTIONS section. */
	if (!ret && m->version == 7)
		ret = tk_dat_writer_add_option(w, TK_DAT_OPTION_DATE, date, sizeof(date));
	if (!ret)
		ret = write_buffer(w, 1);
	if (!ret && m->version == 7)
		ret = tk_dat_writer_add_latency_text(w, "lat", "local", latency,
						     sizeof(latency) - 1);
finish:
	if (!ret)
		ret = tk_dat_writer_finish(w);
	tk_dat_writer_close(w);
	return ret;
}

/* ------------------------------------------------ (a, b) the reader */

/* What a full walk of a file saw; equal summaries mean equal reads. */
struct summary {
	uint64_t hash;
	uint64_t pages, records, seeks, texts;
};

static void mix(struct summary *s, uint64_t v)
{
	s->hash = (s->hash ^ v) * 0x100000001b3ull + 0x9e37;
}

static void mix_bytes(struct summary *s, const void *p, uint64_t n)
{
	const uint8_t *b = p;

	mix(s, n);
	for (uint64_t i = 0; i < n; i++)
		mix(s, b[i]);
}

static void mix_text(struct summary *s, int ret, const struct tk_dat_text *t)
{
	mix(s, (uint64_t)ret);
	if (!ret)
		mix_bytes(s, t->data, t->len);
}

/* Decode one page's records; page.c must not allocate doing it. */
static void count_page(struct summary *s, const void *page)
{
	unsigned long before = alloc_fail_calls();
	struct tk_page_record rec;
	struct tk_page_iter it;
	int ret;

	assert_int_equal(tk_page_iter_init(&it, &fmt, page, PAGE, NULL), 0);
	while ((ret = tk_page_iter_next(&it, &rec)) == 1) {
		s->records++;
		mix(s, rec.timestamp);
		mix_bytes(s, rec.data, rec.size);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(alloc_fail_calls(), before);
}

static int walk_cpu(struct tk_dat *d, size_t b, size_t ci, struct summary *s)
{
	struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(d, b, ci);
	const void *page;
	uint64_t size, off, mid_ts = 0;
	int ret;

	if (!r)
		return -errno;
	size = tk_dat_cpu_reader_size(r);
	mix(s, size);
	while ((ret = tk_dat_cpu_reader_next_page(r, &page, &off)) == 1) {
		struct tk_page_header h;

		assert_int_equal(tk_page_read_header(&fmt, page, PAGE, &h), 0);
		if (off == size / PAGE / 2 * PAGE)
			mid_ts = h.timestamp;
		s->pages++;
		mix(s, off);
		count_page(s, page);
	}
	if (ret < 0)
		goto out;
	/* Seek to the middle page, then into the last chunk, then by time. */
	ret = tk_dat_cpu_reader_seek(r, size / PAGE / 2 * PAGE);
	if (!ret)
		ret = tk_dat_cpu_reader_next_page(r, &page, &off);
	if (ret == 1) {
		mix(s, off);
		ret = tk_dat_cpu_reader_seek(r, size - PAGE);
	}
	if (!ret)
		ret = tk_dat_cpu_reader_next_page(r, &page, &off);
	if (ret == 1) {
		mix(s, off);
		ret = tk_dat_cpu_reader_seek_time(r, mid_ts + 5);
	}
	if (!ret)
		ret = tk_dat_cpu_reader_next_page(r, &page, &off);
	if (ret == 1) {
		mix(s, off);
		ret = tk_dat_cpu_reader_seek_time(r, 0);
	}
	if (!ret)
		ret = tk_dat_cpu_reader_next_page(r, &page, &off);
	if (ret == 1) {
		mix(s, off);
		s->seeks++;
		ret = 0;
	} else if (ret == 0) {
		fail_msg("reader ended after a seek");
	}
out:
	tk_dat_cpu_reader_free(r);
	return ret;
}

static void walk_metadata(struct tk_dat *d, struct summary *s)
{
	const struct tk_dat_info *info = tk_dat_get_info(d);
	struct tk_dat_text t;

	mix(s, (uint64_t)info->version);
	mix(s, info->cpu_count);
	mix(s, info->page_format.page_size);
	mix_bytes(s, info->clock, strlen(info->clock));
	for (size_t i = 0; i < tk_dat_section_count(d); i++) {
		const struct tk_dat_section *sec = tk_dat_section_get(d, i);

		mix(s, sec->id);
		mix(s, sec->body_size);
	}
	for (size_t i = 0; i < tk_dat_option_count(d); i++) {
		const struct tk_dat_option *o = tk_dat_option_get(d, i);

		mix(s, o->id);
		mix_bytes(s, o->data, o->size);
	}
	for (uint16_t id = 16; id <= 21; id++) {
		const void *body;
		uint64_t len;

		assert_int_equal(tk_dat_metadata(d, id, &body, &len), 0);
		mix_bytes(s, body, len);
	}
	mix_text(s, tk_dat_header_page(d, &t), &t);
	mix_text(s, tk_dat_header_event(d, &t), &t);
	for (size_t i = 0; i < tk_dat_ftrace_format_count(d); i++)
		mix_text(s, tk_dat_ftrace_format(d, i, &t), &t);
	for (size_t i = 0; i < tk_dat_system_count(d); i++) {
		const char *name = tk_dat_system_name(d, i);

		mix_bytes(s, name, strlen(name));
		for (size_t j = 0; j < tk_dat_system_format_count(d, i); j++)
			mix_text(s, tk_dat_system_format(d, i, j, &t), &t);
	}
	mix_text(s, tk_dat_kallsyms(d, &t), &t);
	mix_text(s, tk_dat_printk(d, &t), &t);
	mix_text(s, tk_dat_cmdlines(d, &t), &t);
}

/* Open @path and read all of it; 0 or the first negative errno. */
static int read_file(const char *path, struct summary *s)
{
	struct tk_dat *d = tk_dat_open(path);
	int ret = 0;

	memset(s, 0, sizeof(*s));
	if (!d)
		return -errno;
	walk_metadata(d, s);
	for (size_t b = 0; !ret && b < tk_dat_buffer_count(d); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(d, b);

		mix_bytes(s, buf->name, strlen(buf->name));
		if (buf->clock)
			mix_bytes(s, buf->clock, strlen(buf->clock));
		mix(s, buf->cpu_count);
		if (buf->latency_text) {
			struct tk_dat_text t;

			ret = tk_dat_latency_text(d, b, &t);
			if (!ret) {
				assert_memory_equal(t.data, latency, sizeof(latency) - 1);
				mix_bytes(s, t.data, t.len);
				free((void *)t.data);
				s->texts++;
			}
			continue;
		}
		for (size_t c = 0; !ret && c < buf->cpu_count; c++)
			ret = walk_cpu(d, b, c, s);
	}
	tk_dat_close(d);
	return ret;
}

struct file_ctx {
	const struct file_mode *mode;
	char input[300];  /* written clean, read under injection */
	char output[300]; /* written under injection */
	struct summary want, got;
};

static int read_op(void *ctx)
{
	struct file_ctx *x = ctx;

	return read_file(x->input, &x->got);
}

static void read_check(void *ctx)
{
	struct file_ctx *x = ctx;

	assert_memory_equal(&x->got, &x->want, sizeof(x->want));
}

static int write_op(void *ctx)
{
	struct file_ctx *x = ctx;

	return write_file(x->mode, x->output);
}

/* A file the writer called complete must read back as the clean one does. */
static void write_check(void *ctx)
{
	struct file_ctx *x = ctx;

	assert_int_equal(read_file(x->output, &x->got), 0);
	assert_memory_equal(&x->got, &x->want, sizeof(x->want));
}

static void setup_file(struct file_ctx *x, const struct file_mode *m)
{
	memset(x, 0, sizeof(*x));
	x->mode = m;
	snprintf(x->input, sizeof(x->input), "%s/%s-in.dat", tmpdir, m->label);
	snprintf(x->output, sizeof(x->output), "%s/%s-out.dat", tmpdir, m->label);
	if (write_file(m, x->input))
		fail_msg("%s: writing the input: %s", m->label, tk_errmsg());
	if (read_file(x->input, &x->want))
		fail_msg("%s: reading the input: %s", m->label, tk_errmsg());
	/* Both buffers, every CPU, every page, every seek was seen. */
	assert_int_equal(x->want.pages, m->latency_only ? 0 : 2 * NCPUS * NPAGES);
	assert_int_equal(x->want.seeks, m->latency_only ? 0 : 2 * NCPUS);
	assert_int_equal(x->want.texts, m->version == 7 || m->latency_only);
}

static void test_read_oom(void **state)
{
	static struct file_ctx x;

	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		setup_file(&x, &modes[i]);
		assert_true(oom_loop(modes[i].label, read_op, &x, read_check, false) >= 10);
		oom_loop(modes[i].label, read_op, &x, read_check, true);
		unlink(x.input);
	}
}

static void test_write_oom(void **state)
{
	static struct file_ctx x;

	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		setup_file(&x, &modes[i]);
		assert_true(oom_loop(modes[i].label, write_op, &x, write_check, false) >= 3);
		oom_loop(modes[i].label, write_op, &x, write_check, true);
		unlink(x.input);
		unlink(x.output);
	}
}

/* ---------------------------------------------------- (f) conversion */

struct convert_ctx {
	char in[300], data[300], back[300];
	int dir; /* 0: .dat -> perf.data, 1: perf.data -> .dat, 2: .dat -> .dat v7 uncompressed */
	uint64_t want;
};

static uint64_t dat_records(const char *path)
{
	struct tk_dat *dat = tk_dat_open(path);
	struct tk_dat_merge_record mr;
	struct tk_dat_merge *m;
	uint64_t n = 0;

	assert_non_null(dat);
	m = tk_dat_merge_new(dat, NULL, 0);
	assert_non_null(m);
	while (tk_dat_merge_next(m, &mr) == 1)
		n++;
	tk_dat_merge_free(m);
	tk_dat_close(dat);
	return n;
}

static uint64_t perf_samples(const char *path)
{
	struct tk_perfdata *pd = tk_perfdata_open(path);
	struct tk_perf_record rec;
	uint64_t n = 0;

	assert_non_null(pd);
	while (tk_perfdata_next(pd, &rec) == 1)
		n += rec.type == TK_PERF_RECORD_SAMPLE;
	tk_perfdata_close(pd);
	return n;
}

static int convert_op(void *ctx)
{
	struct convert_ctx *x = ctx;
	const char *out = x->dir ? x->back : x->data;
	int fd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), r;

	assert_true(fd >= 0);
	if (x->dir == 2) {
		struct tk_convert_opts o = {.sz = sizeof(o), .version = 7};
		struct tk_dat *dat = tk_dat_open(x->in);

		r = dat ? tk_convert_dat_to_dat(dat, fd, out, &o, NULL) : -errno;
		tk_dat_close(dat);
	} else if (x->dir == 1) {
		struct tk_perfdata *pd = tk_perfdata_open(x->data);

		r = pd ? tk_convert_perf_to_dat(pd, fd, out, NULL, NULL) : -errno;
		tk_perfdata_close(pd);
	} else {
		struct tk_dat *dat = tk_dat_open(x->in);

		r = dat ? tk_convert_dat_to_perf(dat, fd, out, NULL, NULL) : -errno;
		tk_dat_close(dat);
	}
	close(fd);
	return r;
}

static void convert_check(void *ctx)
{
	struct convert_ctx *x = ctx;

	if (x->dir)
		assert_int_equal(dat_records(x->back), x->want);
	else
		assert_int_equal(perf_samples(x->data), x->want);
}

/* .dat (top buffer, instance, latency text) -> perf.data -> .dat, and .dat -> .dat. */
static void test_convert_oom(void **state)
{
	static struct convert_ctx x;

	(void)state;
	snprintf(x.in, sizeof(x.in), "%s/convert-in.dat", tmpdir);
	snprintf(x.data, sizeof(x.data), "%s/convert.data", tmpdir);
	snprintf(x.back, sizeof(x.back), "%s/convert-back.dat", tmpdir);
	if (write_file(&modes[0], x.in))
		fail_msg("writing the input: %s", tk_errmsg());
	x.want = dat_records(x.in);
	assert_true(x.want > 0);
	for (x.dir = 0; x.dir < 3; x.dir++) {
		static const char *const what[] = {"dat -> perf", "perf -> dat", "dat -> dat"};

		assert_true(oom_loop(what[x.dir], convert_op, &x, convert_check, false) >= 5);
		oom_loop(what[x.dir], convert_op, &x, convert_check, true);
	}
	unlink(x.in);
	unlink(x.data);
	unlink(x.back);
}

/*
 * perf's -e syntax: a list that grows an existing array, and a CPU list.
 * Whatever fails, the array keeps what it had and nothing leaks.
 */
static int perf_events_op(void *ctx)
{
	struct tk_perfrecord_event *ev = NULL;
	size_t n = 0, had;
	int32_t *cpus = NULL;
	size_t ncpus = 0;
	int r;

	(void)ctx;
	r = tk_perfrecord_parse_events("cpu-clock", &ev, &n);
	had = n;
	if (r == 0) {
		r = tk_perfrecord_parse_events("{cycles,instructions}:u,sched:*", &ev, &n);
		if (r < 0 && n != had)
			fail_msg("a failed parse changed the array from %zu to %zu events", had, n);
	}
	if (r == 0)
		r = tk_perfrecord_parse_list("0-3,6", &cpus, &ncpus);
	free(cpus);
	tk_perfrecord_events_free(ev, n);
	return r;
}

static void perf_events_check(void *ctx)
{
	(void)ctx;
}

static void test_perf_events_oom(void **state)
{
	(void)state;
	assert_true(oom_loop("perf events", perf_events_op, NULL, perf_events_check, false) >= 5);
	oom_loop("perf events", perf_events_op, NULL, perf_events_check, true);
}

/*
 * tk_flight_stat() on a private instance with a system, a single event, a
 * filter and a pid (every section it prints): each allocation it makes
 * fails in turn. It reads many files whose absence only drops a section,
 * so an ENOMEM mistaken for absence would show as a "survived" run with a
 * different text. Needs root and tracefs.
 */
struct flight_ctx {
	char name[64];
	char *want;
	bool same;
};

static int flight_stat_op(void *ctx)
{
	struct flight_ctx *x = ctx;
	char *text;
	int r = tk_flight_stat(x->name, false, &text);

	if (r == 0) {
		x->same = x->want && !strcmp(text, x->want);
		if (!x->want)
			x->want = text;
		else
			free(text);
	}
	return r;
}

static void flight_stat_check(void *ctx)
{
	struct flight_ctx *x = ctx;

	assert_true(x->same);
}

static void test_flight_stat_oom(void **state)
{
	struct tk_record_event ev[] = {{.spec = "irq"},
				       {.spec = "sched:sched_switch", .filter = "prev_pid != 0"}};
	struct flight_ctx x = {0};
	int self = (int)getpid();
	TK_OPTS(tk_flight_opts, o, .instance = x.name, .events = ev, .event_count = 2,
		.pids = &self, .pid_count = 1);

	(void)state;
	if (geteuid() != 0 || !tk_tracefs_root()) {
		print_message("SKIP: flight stat needs root and tracefs\n");
		skip();
	}
	snprintf(x.name, sizeof(x.name), "tk-unit-oom-%d", (int)getpid());
	if (tk_flight_start(&o) < 0)
		fail_msg("start %s: %s", x.name, tk_errmsg());
	assert_int_equal(flight_stat_op(&x), 0);
	assert_non_null(strstr(x.want, "Filters:"));
	assert_true(oom_loop("flight stat", flight_stat_op, &x, flight_stat_check, false) >= 10);
	oom_loop("flight stat", flight_stat_op, &x, flight_stat_check, true);
	free(x.want);
	assert_int_equal(tk_flight_reset(x.name, false), 0);
}

/* The wrappers themselves: a test that cannot fail proves nothing. */
static void test_injector(void **state)
{
	/* Through a pointer, so the compiler does not assume the block moved. */
	void *(*volatile grow)(void *, size_t) = realloc;
	size_t live = alloc_fail_live();
	void *a, *b, *c;
	char *s;

	(void)state;
	alloc_fail_arm(2, false);
	a = malloc(8);
	b = malloc(8);
	c = calloc(1, 8);
	assert_non_null(a);
	assert_null(b);
	assert_int_equal(errno, ENOMEM);
	assert_non_null(c);
	assert_true(alloc_fail_fired());
	assert_int_equal(alloc_fail_calls(), 3);
	alloc_fail_arm(1, true);
	assert_null(strdup("x"));
	assert_null(grow(a, 64));
	assert_int_equal(asprintf(&s, "%d", 1), -1);
	alloc_fail_disarm();
	assert_int_equal(alloc_fail_live(), live + 2);
	a = grow(a, 64);
	assert_non_null(a);
	assert_int_equal(alloc_fail_live(), live + 2);
	assert_true(asprintf(&s, "%d", 12) == 2);
	assert_int_equal(alloc_fail_live(), live + 3);
	free(s);
	free(a);
	free(c);
	assert_int_equal(alloc_fail_live(), live);
}

/*
 * The Perfetto export of a .dat (every event kind of the sample, zstd
 * packets) and of a perf.data with callchains (interned stacks): whatever
 * allocation fails, -ENOMEM, a message, nothing leaked, no descriptor left.
 */
struct pftrace_ctx {
	char in[4200], out[4200];
	bool perf;
	uint64_t want;
	struct tk_pftrace_stats st;
};

static int pftrace_op(void *ctx)
{
	struct pftrace_ctx *x = ctx;
	TK_OPTS(tk_pftrace_opts, opts, .compression = TK_COMPRESS_ZSTD, .symbolize = x->perf);
	int fd = open(x->out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), r;

	assert_true(fd >= 0);
	if (x->perf) {
		struct tk_perfdata *pd = tk_perfdata_open(x->in);

		r = pd ? tk_pftrace_write_perf(pd, fd, x->out, &opts, &x->st) : -errno;
		tk_perfdata_close(pd);
	} else {
		struct tk_dat *dat = tk_dat_open(x->in);

		r = dat ? tk_pftrace_write_dat(dat, fd, x->out, &opts, &x->st) : -errno;
		tk_dat_close(dat);
	}
	close(fd);
	return r;
}

static void pftrace_check(void *ctx)
{
	struct pftrace_ctx *x = ctx;

	assert_int_equal(x->perf ? x->st.samples : x->st.events, x->want);
}

static void test_pftrace_oom(void **state)
{
	static struct pftrace_ctx x;
	const char *src = getenv("TK_SOURCE_DIR") ?: ".";

	(void)state;
	snprintf(x.out, sizeof(x.out), "%s/oom.pftrace", tmpdir);
	snprintf(x.in, sizeof(x.in), "%s/tests/data/sample-v7-zstd.dat", src);
	x.perf = false;
	x.want = 1748;
	assert_true(oom_loop("pftrace .dat", pftrace_op, &x, pftrace_check, false) >= 5);
	oom_loop("pftrace .dat", pftrace_op, &x, pftrace_check, true);
	snprintf(x.in, sizeof(x.in), "%s/tests/data/perf/g.data", src);
	x.perf = true;
	x.want = 68;
	assert_true(oom_loop("pftrace perf.data", pftrace_op, &x, pftrace_check, false) >= 5);
	oom_loop("pftrace perf.data", pftrace_op, &x, pftrace_check, true);
	unlink(x.out);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/tk-oom-XXXXXX", getenv("TMPDIR") ?: "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	if (tk_page_format_init(&fmt, PAGE, 8, false))
		return -1;
	build_meta();
	build_pages();
	/* Unknown-option warnings are expected noise; keep the log quiet. */
	tk_log_set_handler(NULL, NULL, TK_LOG_ERROR);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	rmdir(tmpdir);
	return 0;
}

int main(void)
{
	cpu_set_t one;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_injector),	cmocka_unit_test(test_codec_oom),
		cmocka_unit_test(test_read_oom),	cmocka_unit_test(test_write_oom),
		cmocka_unit_test(test_convert_oom),	cmocka_unit_test(test_tracedata_oom),
		cmocka_unit_test(test_perf_events_oom), cmocka_unit_test(test_flight_stat_oom),
		cmocka_unit_test(test_pftrace_oom),
	};

	/*
	 * alloc-fail's bookkeeping is single-threaded, and the library starts
	 * helper threads (convert's decode ahead of compressed input, report's
	 * printers) only when the process may use more than one CPU: on one,
	 * every allocation comes from this thread and is counted once.
	 */
	CPU_ZERO(&one);
	CPU_SET((int)(sched_getcpu() > 0 ? sched_getcpu() : 0), &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		perror("test-oom: sched_setaffinity (helper threads may skew the counts)");
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
