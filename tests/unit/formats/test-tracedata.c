// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the tracing-data model (tracedata.c): round trips through the
 * .dat section codec in both byte orders and through perf.data's
 * TRACING_DATA codec, the shared layout (a TRACING_DATA blob is a preamble
 * and the six .dat bodies), hostile input (every truncation, huge counts,
 * bad magic and byte order: -EBADMSG, never a crash or a big allocation),
 * and the host facts: a perf.data written with made-up facts, not this
 * machine's, reads them back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/dat.h>
#include <tracekit/host.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracedata.h>

#include "tk-test.h"
#include "tracedata-internal.h"

static const char hp[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n";
static const char he[] = "# compressed entry header\n\ttype_len    :    5 bits\n";
static const char f_print[] = "name: print\nID: 5\nformat:\n";
static const char f_switch[] = "name: sched_switch\nID: 316\nformat:\n";
static const char f_wakeup[] = "name: sched_wakeup\nID: 318\nformat:\n";
static const char f_enter[] = "name: sys_enter\nID: 22\nformat:\n";
static const char ksyms[] = "ffffffff81000000 T _stext\n";
static const char printk[] = "0xffffffff82000000 : \"hello\\n\"\n";
static const char cmdlines[] = "1 systemd\n42 worker\n";

static struct tk_tracedata *sample(void)
{
	struct tk_tracedata *td = tk_tracedata_new();

	assert_non_null(td);
	assert_int_equal(tk_tracedata_set_layout(td, false, 8, 4096), 0);
	assert_int_equal(tk_tracedata_set_header_page(td, hp, strlen(hp)), 0);
	assert_int_equal(tk_tracedata_set_header_event(td, he, strlen(he)), 0);
	assert_int_equal(tk_tracedata_add_ftrace_format(td, f_print, strlen(f_print)), 0);
	assert_int_equal(tk_tracedata_add_format(td, "sched", f_switch, strlen(f_switch)), 0);
	assert_int_equal(tk_tracedata_add_format(td, "raw_syscalls", f_enter, strlen(f_enter)), 0);
	/* Back to an earlier system: it joins that group. */
	assert_int_equal(tk_tracedata_add_format(td, "sched", f_wakeup, strlen(f_wakeup)), 0);
	assert_int_equal(tk_tracedata_add_system(td, "empty"), 0);
	assert_int_equal(tk_tracedata_set_kallsyms(td, ksyms, strlen(ksyms)), 0);
	assert_int_equal(tk_tracedata_set_printk(td, printk, strlen(printk)), 0);
	assert_int_equal(tk_tracedata_set_cmdlines(td, cmdlines, strlen(cmdlines)), 0);
	return td;
}

static void assert_text(const struct tk_text *t, const char *want)
{
	assert_int_equal(t->len, strlen(want));
	assert_memory_equal(t->data, want, t->len);
}

static void check_sample(const struct tk_tracedata *td)
{
	struct tk_text t;
	const char *sys;

	assert_int_equal(tk_tracedata_parts(td), 0x3f);
	assert_int_equal(tk_tracedata_header_page(td, &t), 0);
	assert_text(&t, hp);
	assert_int_equal(tk_tracedata_header_event(td, &t), 0);
	assert_text(&t, he);
	assert_int_equal(tk_tracedata_ftrace_count(td), 1);
	assert_int_equal(tk_tracedata_ftrace_format(td, 0, &t), 0);
	assert_text(&t, f_print);
	assert_int_equal(tk_tracedata_ftrace_format(td, 1, &t), -ENOENT);
	assert_int_equal(tk_tracedata_system_count(td), 3);
	assert_string_equal(tk_tracedata_system_name(td, 0), "sched");
	assert_string_equal(tk_tracedata_system_name(td, 1), "raw_syscalls");
	assert_string_equal(tk_tracedata_system_name(td, 2), "empty");
	assert_null(tk_tracedata_system_name(td, 3));
	assert_int_equal(tk_tracedata_system_format_count(td, 0), 2);
	assert_int_equal(tk_tracedata_system_format_count(td, 2), 0);
	assert_int_equal(tk_tracedata_system_format(td, 0, 1, &t), 0);
	assert_text(&t, f_wakeup);
	assert_int_equal(tk_tracedata_system_format(td, 2, 0, &t), -ENOENT);
	/* The flat sequence: ftrace first, then each system in order. */
	assert_int_equal(tk_tracedata_format_count(td), 4);
	assert_int_equal(tk_tracedata_format(td, 0, &sys, &t), 0);
	assert_string_equal(sys, "ftrace");
	assert_int_equal(tk_tracedata_format(td, 2, &sys, &t), 0);
	assert_string_equal(sys, "sched");
	assert_text(&t, f_wakeup);
	assert_int_equal(tk_tracedata_format(td, 3, &sys, &t), 0);
	assert_string_equal(sys, "raw_syscalls");
	assert_text(&t, f_enter);
	assert_int_equal(tk_tracedata_format(td, 4, &sys, &t), -ENOENT);
	assert_int_equal(tk_tracedata_kallsyms(td, &t), 0);
	assert_text(&t, ksyms);
	assert_int_equal(tk_tracedata_printk(td, &t), 0);
	assert_text(&t, printk);
	assert_int_equal(tk_tracedata_cmdlines(td, &t), 0);
	assert_text(&t, cmdlines);
}

static void test_model(void **state)
{
	struct tk_tracedata *td = sample();
	struct tk_text t;

	(void)state;
	check_sample(td);
	assert_errno(tk_tracedata_add_format(td, "ftrace", "x", 1), EINVAL);
	assert_errno(tk_tracedata_add_format(td, "", "x", 1), EINVAL);
	assert_errno(tk_tracedata_set_layout(td, false, 3, 4096), EINVAL);
	/* Replacing a text keeps one value. */
	assert_int_equal(tk_tracedata_set_cmdlines(td, "7 x\n", 4), 0);
	assert_int_equal(tk_tracedata_cmdlines(td, &t), 0);
	assert_text(&t, "7 x\n");
	tk_tracedata_free(td);
	tk_tracedata_free(NULL);

	td = tk_tracedata_new();
	assert_non_null(td);
	assert_int_equal(tk_tracedata_parts(td), 0);
	assert_int_equal(tk_tracedata_header_page(td, &t), -ENOENT);
	assert_int_equal(tk_tracedata_kallsyms(td, &t), -ENOENT);
	assert_int_equal(tk_tracedata_cmdlines(td, &t), -ENOENT);
	tk_tracedata_free(td);
}

static struct tk_tracedata *dat_round_trip(const struct tk_tracedata *src, bool big,
					   void *bodies[6])
{
	struct tk_tracedata *td = tk_tracedata_new();

	assert_non_null(td);
	for (uint16_t id = 16; id <= 21; id++) {
		uint64_t len;

		assert_int_equal(
			tk_tracedata_encode_dat_section(src, id, big, &bodies[id - 16], &len), 0);
		assert_int_equal(tk_tracedata_decode_dat_section(td, id, bodies[id - 16], len, big),
				 0);
	}
	return td;
}

static void test_dat_round_trip(void **state)
{
	struct tk_tracedata *src = sample();
	void *body;
	uint64_t len;

	(void)state;
	for (int big = 0; big < 2; big++) {
		void *bodies[6];
		struct tk_tracedata *td = dat_round_trip(src, big, bodies);

		check_sample(td);
		tk_tracedata_free(td);
		for (int i = 0; i < 6; i++)
			free(bodies[i]);
	}
	/* The byte order shows in the numbers: kallsyms' u32 size. */
	assert_int_equal(tk_tracedata_encode_dat_section(src, 19, true, &body, &len), 0);
	assert_int_equal(len, 4 + strlen(ksyms));
	assert_memory_equal(body, "\0\0\0\x1a", 4);
	free(body);
	/* An empty tracedata encodes empty parts, as a v6 file without them holds. */
	{
		struct tk_tracedata *empty = tk_tracedata_new();

		assert_int_equal(tk_tracedata_encode_dat_section(empty, 16, false, &body, &len), 0);
		assert_int_equal(len, 12 + 8 + 13 + 8);
		assert_memory_equal(body, "header_page\0\0\0\0\0\0\0\0\0header_event", 33);
		free(body);
		assert_int_equal(tk_tracedata_encode_dat_section(empty, 21, false, &body, &len), 0);
		assert_int_equal(len, 8);
		free(body);
		assert_errno(tk_tracedata_encode_dat_section(empty, 15, false, &body, &len),
			     EINVAL);
		assert_errno(tk_tracedata_decode_dat_section(empty, 22, "", 0, false), EINVAL);
		tk_tracedata_free(empty);
	}
	tk_tracedata_free(src);
}

static void test_perf_round_trip(void **state)
{
	struct tk_tracedata *src = sample(), *td;
	struct tk_bytebuf cat;
	void *blob;
	uint64_t len;
	bool big;
	uint8_t ls;
	uint32_t ps;

	(void)state;
	assert_int_equal(tk_tracedata_encode_perf(src, &blob, &len), 0);
	td = tk_tracedata_new();
	assert_int_equal(tk_tracedata_decode_perf(td, blob, len), 0);
	check_sample(td);
	tk_tracedata_layout(td, &big, &ls, &ps);
	assert_false(big);
	assert_int_equal(ls, 8);
	assert_int_equal(ps, 4096);

	/* One layout: the blob is the preamble, then the .dat bodies 16..21. */
	tk_bytebuf_init(&cat, false);
	tk_bytebuf_put(&cat, "\x17\x08\x44tracing", 10);
	tk_bytebuf_put_cstr(&cat, "0.6");
	tk_bytebuf_put_u8(&cat, 0);
	tk_bytebuf_put_u8(&cat, 8);
	tk_bytebuf_put_u32(&cat, 4096);
	for (uint16_t id = 16; id <= 21; id++)
		assert_int_equal(tk_tracedata_put_dat_section(src, id, &cat), 0);
	assert_int_equal(cat.len, len);
	assert_memory_equal(cat.data, blob, len);
	tk_bytebuf_release(&cat);

	/* Version 0.5: no command lines. */
	{
		struct tk_tracedata *old = tk_tracedata_new();
		struct tk_text t;

		assert_int_equal(tk_tracedata_decode_perf(old, blob, len - 8 - strlen(cmdlines)),
				 0);
		assert_int_equal(tk_tracedata_cmdlines(old, &t), -ENOENT);
		assert_int_equal(tk_tracedata_printk(old, &t), 0);
		tk_tracedata_free(old);
	}
	/* A big-endian blob reads back the same. */
	{
		struct tk_tracedata *be = sample(), *back = tk_tracedata_new();
		void *bb;
		uint64_t bl;

		assert_int_equal(tk_tracedata_set_layout(be, true, 4, 65536), 0);
		assert_int_equal(tk_tracedata_encode_perf(be, &bb, &bl), 0);
		assert_int_equal(tk_tracedata_decode_perf(back, bb, bl), 0);
		check_sample(back);
		tk_tracedata_layout(back, &big, &ls, &ps);
		assert_true(big);
		assert_int_equal(ls, 4);
		assert_int_equal(ps, 65536);
		tk_tracedata_free(back);
		tk_tracedata_free(be);
		free(bb);
	}
	tk_tracedata_free(td);
	tk_tracedata_free(src);
	free(blob);
}

/*
 * Decode the first @cut bytes of @bytes, a section body of @id (16..21) or,
 * for @id 0, a TRACING_DATA blob, from a copy of exactly that prefix so
 * that ASan sees a read past it. Return: the decoder's answer; @parts gets
 * the parts it kept.
 */
static int decode_cut(uint16_t id, const void *bytes, uint64_t cut, unsigned int *parts)
{
	struct tk_tracedata *td = tk_tracedata_new();
	void *copy = malloc(cut ? cut : 1);
	int r;

	assert_non_null(td);
	assert_non_null(copy);
	memcpy(copy, bytes, cut);
	if (id)
		r = tk_tracedata_decode_dat_section(td, id, copy, cut, false);
	else
		r = tk_tracedata_decode_perf(td, copy, cut);
	*parts = tk_tracedata_parts(td);
	tk_tracedata_free(td);
	free(copy);
	return r;
}

/* Every prefix of every body and of the blob: a clean answer, never a crash. */
static void test_truncated(void **state)
{
	struct tk_tracedata *src = sample();
	void *blob;
	uint64_t len;

	(void)state;
	for (uint16_t id = 16; id <= 21; id++) {
		void *body;
		uint64_t blen;

		assert_int_equal(tk_tracedata_encode_dat_section(src, id, false, &body, &blen), 0);
		for (uint64_t cut = 0; cut < blen; cut++) {
			unsigned int parts;
			int r = decode_cut(id, body, cut, &parts);

			if (r != -EBADMSG)
				fail_msg("section %u cut to %" PRIu64 " of %" PRIu64 ": %d", id,
					 cut, blen, r);
			assert_true(strstr(tk_errmsg(), "offset") != NULL);
			assert_int_equal(parts, 0);
		}
		free(body);
	}
	assert_int_equal(tk_tracedata_encode_perf(src, &blob, &len), 0);
	for (uint64_t cut = 0; cut < len; cut++) {
		unsigned int parts;
		int r = decode_cut(0, blob, cut, &parts);

		/* Cut inside the cmdlines' size: read as version 0.5. */
		if (cut >= len - 8 - strlen(cmdlines) && cut < len - strlen(cmdlines))
			assert_int_equal(r, 0);
		else
			assert_int_equal(r, -EBADMSG);
	}
	tk_tracedata_free(src);
	free(blob);
}

static void test_hostile(void **state)
{
	struct tk_tracedata *td = tk_tracedata_new();
	uint8_t b[64];

	(void)state;
	/* Counts far beyond the bytes: refused before any allocation for them. */
	memset(b, 0xff, sizeof(b));
	assert_errno(tk_tracedata_decode_dat_section(td, 17, b, sizeof(b), false), EBADMSG);
	assert_true(strstr(tk_errmsg(), "bad ftrace format count") != NULL);
	assert_errno(tk_tracedata_decode_dat_section(td, 18, b, sizeof(b), false), EBADMSG);
	assert_true(strstr(tk_errmsg(), "bad event system count") != NULL);
	/* A system whose format count is huge. */
	memcpy(b, "\1\0\0\0sys\0\xff\xff\xff\x7f", 12);
	assert_errno(tk_tracedata_decode_dat_section(td, 18, b, 12, false), EBADMSG);
	assert_true(strstr(tk_errmsg(), "bad event format count") != NULL);
	/* A format length past the end, and lengths that would wrap. */
	memcpy(b, "\1\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 12);
	assert_errno(tk_tracedata_decode_dat_section(td, 17, b, 12, false), EBADMSG);
	assert_errno(tk_tracedata_decode_dat_section(td, 21, b + 4, 8, false), EBADMSG);
	assert_errno(tk_tracedata_decode_dat_section(td, 19, b + 4, 8, false), EBADMSG);
	/* Wrong tags. */
	assert_errno(tk_tracedata_decode_dat_section(td, 16, "header_pagX\0", 12, false), EBADMSG);
	assert_true(strstr(tk_errmsg(), "missing header_page tag") != NULL);
	/* perf: bad magic, a byte order byte other than 0/1, no version NUL. */
	assert_errno(tk_tracedata_decode_perf(td, "\x17\x08\x44tracinG0.6", 14), EBADMSG);
	assert_errno(tk_tracedata_decode_perf(td, "\x17\x08\x44tracing0.6\0\2\x08", 16), EBADMSG);
	assert_errno(tk_tracedata_decode_perf(td, "\x17\x08\x44tracing0.6", 13), EBADMSG);
	assert_int_equal(tk_tracedata_parts(td), 0);
	tk_tracedata_free(td);
}

/* A text too long for the layout's u32 size is refused, without reading it. */
static void test_too_long(void **state)
{
	struct tk_tracedata *td = tk_tracedata_new();
	void *body;
	uint64_t len;

	(void)state;
	td->kallsyms = (struct tk_text){"", 1ull << 32};
	td->parts |= TK_TRACEDATA_KALLSYMS;
	assert_errno(tk_tracedata_encode_dat_section(td, 19, false, &body, &len), EINVAL);
	assert_errno(tk_tracedata_encode_perf(td, &body, &len), EINVAL);
	tk_tracedata_free(td);
}

/* The reader of a .dat we write hands out the same model. */
static void test_dat_reader(void **state)
{
	char path[] = "/tmp/tk-tracedata-XXXXXX";
	struct tk_tracedata *src = sample();
	struct tk_dat_writer *w;
	struct tk_dat *d;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	w = tk_dat_writer_open(path,
			       &(struct tk_dat_writer_opts){.sz = sizeof(struct tk_dat_writer_opts),
							    .version = 7,
							    .page_size = 4096});
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_tracedata(w, src), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);
	d = tk_dat_open(path);
	assert_non_null(d);
	check_sample(tk_dat_get_tracedata(d));
	tk_dat_close(d);
	/* Big-endian v6: the same model back. */
	w = tk_dat_writer_open(path,
			       &(struct tk_dat_writer_opts){.sz = sizeof(struct tk_dat_writer_opts),
							    .version = 6,
							    .big_endian = true,
							    .page_size = 4096});
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_tracedata(w, src), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);
	d = tk_dat_open(path);
	assert_non_null(d);
	check_sample(tk_dat_get_tracedata(d));
	tk_dat_close(d);
	unlink(path);
	tk_tracedata_free(src);
}

/* A perf.data at @path with one attr @a and the host facts @h, opened for reading. */
static struct tk_perfdata *write_host(const char *path, const struct tk_perf_attr *a,
				      const struct tk_host *h)
{
	struct tk_perfdata_writer *w = tk_perfdata_writer_open(path);
	struct tk_perfdata *pd;

	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, a, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_set_host_facts(w, h), 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	return pd;
}

/* A perf.data written with made-up host facts reads them back: nothing of this machine. */
static void test_host_facts(void **state)
{
	char path[] = "/tmp/tk-tracedata-XXXXXX";
	static const char *const argv[] = {"argv0", "record", "-a"};
	const struct tk_host fake = {
		.sysname = "Plan9",
		.hostname = "elsewhere",
		.osrelease = "9.99.1-test",
		.version = "tracekit 0.0.1",
		.arch = "riscv64",
		.nr_cpus_avail = 96,
		.nr_cpus_online = 64,
		.cpudesc = "Imaginary CPU @ 1.00GHz",
		.cpuid = "Nobody,1,2,3",
		.has_total_mem = true,
		.total_mem_kb = 123456789,
		.exe = "/opt/elsewhere/tracekit",
		.argc = 3,
		.argv = argv,
	};
	struct tk_perf_attr a;
	struct tk_perfdata *pd;
	const struct tk_perfdata_host *h;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	memset(&a, 0, sizeof(a));
	a.type = 1;
	a.sample_period = 1;
	a.sample_type = 1; /* IP */
	pd = write_host(path, &a, &fake);
	h = tk_perfdata_get_host(pd);
	assert_string_equal(h->hostname, "elsewhere");
	assert_string_equal(h->osrelease, "9.99.1-test");
	assert_string_equal(h->version, "tracekit 0.0.1");
	assert_string_equal(h->arch, "riscv64");
	assert_true(h->has_nrcpus);
	assert_int_equal(h->nr_cpus_avail, 96);
	assert_int_equal(h->nr_cpus_online, 64);
	assert_string_equal(h->cpudesc, "Imaginary CPU @ 1.00GHz");
	assert_string_equal(h->cpuid, "Nobody,1,2,3");
	assert_true(h->has_total_mem);
	assert_int_equal(h->total_mem_kb, 123456789);
	assert_int_equal(h->cmdline_argc, 3);
	assert_string_equal(h->cmdline_argv[0], "/opt/elsewhere/tracekit");
	assert_string_equal(h->cmdline_argv[1], "record");
	assert_string_equal(h->cmdline_argv[2], "-a");
	assert_null(tk_perfdata_get_tracedata(pd));
	tk_perfdata_close(pd);

	/* Facts left out are features left out. */
	{
		const struct tk_host bare = {.hostname = "h", .argc = 0};

		pd = write_host(path, &a, &bare);
		h = tk_perfdata_get_host(pd);
		assert_string_equal(h->hostname, "h");
		assert_null(h->osrelease);
		assert_null(h->cpudesc);
		assert_false(h->has_total_mem);
		assert_int_equal(h->cmdline_argc, 1);
		assert_string_equal(h->cmdline_argv[0], "tracekit");
		tk_perfdata_close(pd);
	}
	unlink(path);
}

/* This machine's facts, gathered once; the command line can be replaced. */
static void test_host_new(void **state)
{
	struct tk_host *h = tk_host_new();

	(void)state;
	assert_non_null(h);
	assert_non_null(h->hostname);
	assert_non_null(h->osrelease);
	assert_non_null(h->arch);
	assert_string_equal(h->sysname, "Linux");
	assert_true(h->nr_cpus_online >= 1);
	assert_true(h->nr_cpus_avail >= h->nr_cpus_online);
	assert_true(h->argc >= 1);
	assert_int_equal(tk_host_set_cmdline(h, 2, (const char *const[]){"a", "b"}), 0);
	assert_int_equal(h->argc, 2);
	assert_string_equal(h->argv[1], "b");
	tk_host_free(h);
	tk_host_free(NULL);
}

/* The TRACING_DATA of a perf.data we write is the model a reader hands out. */
static void test_perf_reader(void **state)
{
	char path[] = "/tmp/tk-tracedata-XXXXXX";
	struct tk_tracedata *src = sample();
	struct tk_perfdata_tracing t;
	struct tk_perf_attr a;
	struct tk_perfdata_writer *w;
	struct tk_perfdata *pd;
	struct tk_text text;
	const char *sys;
	const void *raw;
	void *blob;
	uint64_t len, raw_len;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	memset(&a, 0, sizeof(a));
	a.type = 1;
	a.sample_period = 1;
	a.sample_type = 1;
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_set_tracedata(w, src), 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	check_sample(tk_perfdata_get_tracedata(pd));
	assert_int_equal(tk_perfdata_tracing(pd, &t, NULL, NULL), 0);
	assert_string_equal(t.version, "0.6");
	assert_int_equal(t.nr_ftrace, 1);
	assert_int_equal(t.nr_formats, 3);
	assert_int_equal(t.page_size, 4096);
	assert_text(&t.kallsyms, ksyms);
	assert_int_equal(tk_perfdata_tracing_format(pd, 1, &sys, &text), 0);
	assert_string_equal(sys, "sched");
	assert_text(&text, f_switch);
	assert_int_equal(tk_perfdata_tracing_format(pd, 4, &sys, &text), -ENOENT);
	/* The raw blob is what the codec makes. */
	assert_int_equal(tk_tracedata_encode_perf(src, &blob, &len), 0);
	assert_int_equal(tk_perfdata_tracing(pd, NULL, &raw, &raw_len), 0);
	assert_int_equal(raw_len, len);
	assert_memory_equal(raw, blob, len);
	tk_perfdata_close(pd);
	unlink(path);
	free(blob);
	tk_tracedata_free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),		cmocka_unit_test(test_dat_round_trip),
		cmocka_unit_test(test_perf_round_trip), cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_hostile),		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_dat_reader),	cmocka_unit_test(test_host_facts),
		cmocka_unit_test(test_host_new),	cmocka_unit_test(test_perf_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
