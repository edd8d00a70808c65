// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of convert.h: every direction through the public calls, each result
 * read back with the readers and compared record by record with its source.
 *
 * The source is the real trace in tests/data (two CPUs, ~1700 events of 28
 * kinds), and a file made from it whose only buffer is an instance: that
 * one must convert to v6 (with the empty top buffer v6 needs) and to
 * perf.data with every event. Records are compared by a digest of (time,
 * CPU, the payload's first 8 bytes) in merge order, which all three formats
 * keep.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "tk-test.h"
#include "tk-tmpdir.h"

static char sample[512];

struct digest {
	uint64_t n, h;
};

static void digest_add(struct digest *d, uint64_t ts, uint32_t cpu, const void *payload,
		       uint32_t size)
{
	uint64_t head = 0;

	memcpy(&head, payload, size < 8 ? size : 8);
	d->n++;
	d->h = (d->h ^ ts) * 0x100000001b3ull;
	d->h = (d->h ^ cpu) * 0x100000001b3ull;
	d->h = (d->h ^ head) * 0x100000001b3ull;
}

static struct digest dat_digest(const char *path, size_t *nbuffers)
{
	struct tk_dat *dat = tk_dat_open(path);
	struct tk_dat_merge_record mr;
	struct tk_dat_merge *m;
	struct digest d = {0};
	int r;

	assert_non_null(dat);
	if (nbuffers)
		*nbuffers = tk_dat_buffer_count(dat);
	m = tk_dat_merge_new(dat, NULL, 0);
	assert_non_null(m);
	while ((r = tk_dat_merge_next(m, &mr)) == 1)
		digest_add(&d, mr.ts, mr.cpu, mr.rec.data, mr.rec.size);
	assert_int_equal(r, 0);
	tk_dat_merge_free(m);
	tk_dat_close(dat);
	return d;
}

static struct digest perf_digest(const char *path)
{
	struct tk_perfdata *pd = tk_perfdata_open(path);
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	struct digest d = {0};
	int r;

	assert_non_null(pd);
	while ((r = tk_perfdata_next(pd, &rec)) == 1) {
		if (rec.type != TK_PERF_RECORD_SAMPLE)
			continue;
		assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &s), 0);
		assert_int_equal(tk_perfdata_evsel_get(pd, (size_t)s.attr_index)->attr.type, 2);
		digest_add(&d, s.time, s.cpu, s.raw, s.raw_size);
	}
	assert_int_equal(r, 0);
	tk_perfdata_close(pd);
	return d;
}

static int out_fd(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	return fd;
}

static void to_dat(const char *in, const char *out, int version, enum tk_compression comp,
		   struct tk_convert_stats *st)
{
	struct tk_convert_opts o = {.sz = sizeof(o), .version = version, .compression = comp};
	struct tk_dat *dat = tk_dat_open(in);
	int fd = out_fd(out);

	assert_non_null(dat);
	if (tk_convert_dat_to_dat(dat, fd, out, &o, st) != 0)
		fail_msg("%s", tk_errmsg());
	close(fd);
	tk_dat_close(dat);
}

static void to_perf(const char *in, const char *out, struct tk_convert_stats *st)
{
	struct tk_dat *dat = tk_dat_open(in);
	int fd = out_fd(out);

	assert_non_null(dat);
	if (tk_convert_dat_to_perf(dat, fd, out, NULL, st) != 0)
		fail_msg("%s", tk_errmsg());
	close(fd);
	tk_dat_close(dat);
}

static void path_in(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void test_dat_to_dat(void **state)
{
	static const struct {
		int version;
		enum tk_compression comp;
	} modes[] = {{6, TK_COMPRESS_NONE}, {7, TK_COMPRESS_NONE}, {7, TK_COMPRESS_ZLIB}};
	struct digest want = dat_digest(sample, NULL);

	(void)state;
	assert_true(want.n > 100);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct tk_convert_stats st;
		char out[600];
		struct digest got;
		struct tk_dat *dat;

		path_in(out, sizeof(out), "d2d.dat");
		to_dat(sample, out, modes[i].version, modes[i].comp, &st);
		assert_true(st.pages > 0);
		assert_int_equal(st.buffers, 1);
		assert_int_equal(st.bytes_done, st.bytes_total);
		got = dat_digest(out, NULL);
		assert_int_equal(got.n, want.n);
		assert_true(got.h == want.h);
		dat = tk_dat_open(out);
		assert_non_null(dat);
		assert_int_equal(tk_dat_get_info(dat)->version, modes[i].version);
		assert_int_equal(tk_dat_get_info(dat)->compression, modes[i].comp);
		tk_dat_close(dat);
	}
}

/* Fields past the caller's sz count as zero: v7, no compression. */
static void test_short_opts(void **state)
{
	struct tk_convert_opts o = {.sz = offsetof(struct tk_convert_opts, compression),
				    .version = 7,
				    .compression = TK_COMPRESS_ZSTD};
	struct tk_dat *dat = tk_dat_open(sample), *back;
	char out[600];
	int fd;

	(void)state;
	path_in(out, sizeof(out), "short.dat");
	fd = out_fd(out);
	assert_int_equal(tk_convert_dat_to_dat(dat, fd, out, &o, NULL), 0);
	close(fd);
	back = tk_dat_open(out);
	assert_non_null(back);
	assert_int_equal(tk_dat_get_info(back)->compression, TK_COMPRESS_NONE);
	tk_dat_close(back);
	tk_dat_close(dat);
}

static void test_dat_to_perf_and_back(void **state)
{
	struct digest want = dat_digest(sample, NULL), got;
	struct tk_convert_stats st;
	struct tk_perfdata *pd;
	char data[600], back[600];
	int fd;

	(void)state;
	path_in(data, sizeof(data), "d2p.data");
	to_perf(sample, data, &st);
	assert_int_equal(st.samples, want.n);
	assert_true(st.events > 1);
	got = perf_digest(data);
	assert_int_equal(got.n, want.n);
	assert_true(got.h == want.h);
	/*
	 * The host facts are those of the machine that recorded the .dat (its
	 * UNAME option and CPU count), never this machine's.
	 */
	pd = tk_perfdata_open(data);
	assert_non_null(pd);
	{
		const struct tk_perfdata_host *h = tk_perfdata_get_host(pd);
		const struct tk_dat_info *in;
		struct tk_dat *dat = tk_dat_open(sample);
		char want_uname[256];

		assert_non_null(dat);
		in = tk_dat_get_info(dat);
		assert_non_null(in->uname);
		assert_non_null(h->hostname);
		assert_non_null(h->osrelease);
		assert_non_null(h->arch);
		snprintf(want_uname, sizeof(want_uname), "Linux %s %s %s", h->hostname,
			 h->osrelease, h->arch);
		assert_string_equal(want_uname, in->uname);
		assert_int_equal(h->nr_cpus_avail, in->cpu_count);
		assert_null(h->cpudesc);
		assert_false(h->has_total_mem);
		tk_dat_close(dat);
	}
	tk_perfdata_close(pd);

	path_in(back, sizeof(back), "p2d.dat");
	pd = tk_perfdata_open(data);
	assert_non_null(pd);
	fd = out_fd(back);
	if (tk_convert_perf_to_dat(pd, fd, back, NULL, &st) != 0)
		fail_msg("%s", tk_errmsg());
	close(fd);
	tk_perfdata_close(pd);
	assert_int_equal(st.samples, want.n);
	assert_int_equal(st.skipped_other + st.skipped_bad, 0);
	got = dat_digest(back, NULL);
	assert_int_equal(got.n, want.n);
	assert_true(got.h == want.h);
}

/* The sample with its top buffer's pages moved into instance "inst", and no top buffer. */
static void make_instance_only(const char *out)
{
	struct tk_dat *dat = tk_dat_open(sample);
	const struct tk_dat_info *info;
	const struct tk_dat_buffer *buf;
	struct tk_dat_writer_opts wo = {.sz = sizeof(struct tk_dat_writer_opts), .version = 7};
	struct tk_dat_writer *w;

	assert_non_null(dat);
	info = tk_dat_get_info(dat);
	buf = tk_dat_buffer_get(dat, 0);
	wo.page_size = info->page_size;
	wo.long_size = info->long_size;
	w = tk_dat_writer_open(out, &wo);
	assert_non_null(w);
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES; id++) {
		const void *body;
		uint64_t len;

		if (tk_dat_metadata(dat, id, &body, &len) == 0)
			assert_int_equal(tk_dat_writer_add_metadata(w, id, body, len), 0);
	}
	assert_int_equal(tk_dat_writer_begin_buffer(w, "inst", "local", buf->page_format.page_size,
						    info->cpu_count),
			 0);
	for (uint32_t c = 0; c < buf->cpu_count; c++) {
		struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(dat, 0, c);
		const void *page;

		assert_non_null(rd);
		assert_int_equal(tk_dat_writer_begin_cpu(w, buf->cpus[c].cpu), 0);
		while (tk_dat_cpu_reader_next_page(rd, &page, NULL) == 1)
			assert_int_equal(
				tk_dat_writer_write_pages(w, page, buf->page_format.page_size), 0);
		assert_int_equal(tk_dat_writer_end_cpu(w), 0);
		tk_dat_cpu_reader_free(rd);
	}
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);
	tk_dat_close(dat);
}

static void test_instance_only(void **state)
{
	struct digest want = dat_digest(sample, NULL), got;
	char inst[600], v6[600], data[600];
	struct tk_convert_stats st;
	size_t nbuf;
	struct tk_dat *dat;

	(void)state;
	path_in(inst, sizeof(inst), "inst.dat");
	make_instance_only(inst);
	got = dat_digest(inst, &nbuf);
	assert_int_equal(nbuf, 1);
	assert_int_equal(got.n, want.n);

	/* v6: an empty top buffer, then the instance with every record. */
	path_in(v6, sizeof(v6), "inst-v6.dat");
	to_dat(inst, v6, 6, TK_COMPRESS_NONE, &st);
	got = dat_digest(v6, &nbuf);
	assert_int_equal(nbuf, 2);
	assert_int_equal(got.n, want.n);
	assert_true(got.h == want.h);
	dat = tk_dat_open(v6);
	assert_string_equal(tk_dat_buffer_get(dat, 0)->name, "");
	assert_string_equal(tk_dat_buffer_get(dat, 1)->name, "inst");
	tk_dat_close(dat);

	/* perf.data: every event of the instance. */
	path_in(data, sizeof(data), "inst.data");
	to_perf(inst, data, &st);
	assert_int_equal(st.samples, want.n);
	got = perf_digest(data);
	assert_int_equal(got.n, want.n);
	assert_true(got.h == want.h);
}

static void test_errors(void **state)
{
	char out[600], bad[600];
	struct tk_perfdata *pd;
	struct tk_dat *dat;
	int fd;

	(void)state;
	/* v6 cannot be compressed: the writer refuses, the message names the output. */
	{
		struct tk_convert_opts o = {
			.sz = sizeof(o), .version = 6, .compression = TK_COMPRESS_ZSTD};

		dat = tk_dat_open(sample);
		path_in(out, sizeof(out), "bad-v6.dat");
		fd = out_fd(out);
		assert_errno(tk_convert_dat_to_dat(dat, fd, out, &o, NULL), EINVAL);
		assert_non_null(strstr(tk_errmsg(), out));
		close(fd);
		tk_dat_close(dat);
	}
	/* A perf.data without TRACING_DATA has nothing to convert. */
	path_in(bad, sizeof(bad), "empty.data");
	{
		struct tk_perfdata_writer *w = tk_perfdata_writer_open(bad);
		struct tk_perf_attr a = {.type = 1, .sample_type = TK_PERF_SAMPLE_TIME};

		assert_non_null(w);
		assert_true(tk_perfdata_writer_add_attr(w, &a, "cpu-clock") == 0);
		assert_int_equal(tk_perfdata_writer_finish(w), 0);
		tk_perfdata_writer_close(w);
	}
	pd = tk_perfdata_open(bad);
	assert_non_null(pd);
	fd = out_fd(out);
	assert_errno(tk_convert_perf_to_dat(pd, fd, out, NULL, NULL), ENOENT);
	assert_non_null(strstr(tk_errmsg(), "empty.data"));
	close(fd);
	tk_perfdata_close(pd);
}

static void test_file_kind(void **state)
{
	char data[600];

	(void)state;
	path_in(data, sizeof(data), "d2p.data");
	assert_int_equal(tk_filekind_of(sample), TK_FILE_DAT);
	assert_int_equal(tk_filekind_of(data), TK_FILE_PERFDATA);
	assert_int_equal(tk_filekind_of_header("PERFILE2\x10\0\0\0\0\0\0\0", 16),
			 TK_FILE_PERFDATA_PIPE);
	assert_int_equal(tk_filekind_of_header("PERFILE2\x68\0\0\0\0\0\0\0", 16), TK_FILE_PERFDATA);
	assert_int_equal(tk_filekind_of_header("PERFILE", 7), TK_FILE_OTHER);
	assert_int_equal(tk_filekind_of_header("hello, world", 12), TK_FILE_OTHER);
	assert_int_equal(tk_filekind_of("/nonexistent/x"), TK_FILE_OTHER);
}

/* The dat module decodes option payloads for dump: whole, cut to fit, and malformed. */
static void test_option_describe(void **state)
{
	struct tk_dat *dat = tk_dat_open(sample);
	static const uint8_t short_u32[2] = {1, 0};
	struct tk_dat_option bad = {.id = TK_DAT_OPTION_CPUCOUNT, .size = 2, .data = short_u32};
	bool saw_cpucount = false;
	char text[512];

	(void)state;
	assert_non_null(dat);
	for (size_t i = 0; i < tk_dat_option_count(dat); i++) {
		const struct tk_dat_option *o = tk_dat_option_get(dat, i);
		size_t n = tk_dat_option_describe(dat, o, text, sizeof(text));

		assert_int_equal(n, strlen(text));
		assert_null(strstr(text, "(malformed)"));
		if (o->id == TK_DAT_OPTION_CPUCOUNT) {
			assert_string_equal(text, " cpus=2");
			saw_cpucount = true;
			assert_int_equal(tk_dat_option_describe(dat, o, text, 4), 7);
			assert_string_equal(text, " cp");
		}
	}
	assert_true(saw_cpucount);
	tk_dat_option_describe(dat, &bad, text, sizeof(text));
	assert_string_equal(text, " (malformed)");
	tk_dat_close(dat);
}

/* The perf.data writer's records from fields come back through the reader. */
static void test_perf_records_from_fields(void **state)
{
	const uint64_t st = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |
			    TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD | TK_PERF_SAMPLE_RAW;
	static const uint8_t raw[6] = {7, 0, 1, 2, 3, 4};
	struct tk_perf_sample s = {.pid = 10,
				   .tid = 11,
				   .time = 500,
				   .cpu = 1,
				   .period = 1,
				   .raw = raw,
				   .raw_size = sizeof(raw)};
	struct tk_perf_sample id = {.pid = 10, .tid = 11, .time = 400, .cpu = 1};
	struct tk_perf_mmap2 m = {.pid = 10,
				  .tid = 10,
				  .start = 0x1000,
				  .len = 0x2000,
				  .prot = 5,
				  .filename = "/usr/bin/prog"};
	static const uint32_t want[] = {TK_PERF_RECORD_COMM,	      TK_PERF_RECORD_MMAP2,
					TK_PERF_RECORD_MMAP,	      TK_PERF_RECORD_FORK,
					TK_PERF_RECORD_SAMPLE,	      TK_PERF_RECORD_EXIT,
					TK_PERF_RECORD_FINISHED_ROUND};
	struct tk_perfdata_writer *w;
	struct tk_perf_record rec;
	struct tk_perf_sample got;
	struct tk_perf_comm comm;
	struct tk_perf_task task;
	struct tk_perfdata *pd;
	struct tk_perf_attr a;
	uint64_t kid = 77;
	char path[600];
	size_t n = 0;

	(void)state;
	path_in(path, sizeof(path), "fields.data");
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	tk_perfdata_attr_tracepoint(&a, 7, st);
	assert_int_equal(a.type, 2);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "sys:ev"), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, &kid, 1), 0);
	/* 8 header + 8 pid/tid + 16 name + 32 trailer */
	assert_int_equal(tk_perfdata_writer_add_comm(w, 10, 11, "a-long-name-here", true, &id), 64);
	assert_true(tk_perfdata_writer_add_mmap2(w, 2, &m, NULL) > 0);
	assert_true(tk_perfdata_writer_add_mmap(w, 1, UINT32_MAX, 0, 0xffff0000, 0x100, 0,
						"[kernel.kallsyms]_text", NULL) > 0);
	assert_int_equal(tk_perfdata_writer_add_fork(w, 12, 10, 12, 11, 450, &id), 64);
	/* 8 + 5 fields + 4 size + 6 raw padded to 12 */
	assert_int_equal(tk_perfdata_writer_add_sample(w, 0, &s), 64);
	assert_true(tk_perfdata_writer_add_exit(w, 12, 10, 12, 11, 600, &id) > 0);
	assert_int_equal(tk_perfdata_writer_add_round(w), 8);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);

	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	while (tk_perfdata_next(pd, &rec) == 1) {
		const char *d = rec.data;

		assert_true(n < sizeof(want) / sizeof(want[0]));
		assert_int_equal(rec.type, want[n]);
		if (rec.type != TK_PERF_RECORD_FINISHED_ROUND)
			assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &got), 0);
		switch (rec.type) {
		case TK_PERF_RECORD_COMM:
			assert_int_equal(rec.misc, 0x2000);
			assert_int_equal(tk_perfdata_parse_comm(&rec, &comm), 0);
			assert_int_equal(comm.pid, 10);
			assert_int_equal(comm.tid, 11);
			assert_int_equal(comm.len, 15);
			assert_true(comm.exec);
			assert_string_equal(d + 16, "a-long-name-her");
			assert_int_equal(got.time, 400);
			assert_int_equal(got.id, 77);
			break;
		case TK_PERF_RECORD_MMAP2:
			assert_string_equal(d + 72, "/usr/bin/prog");
			assert_int_equal(got.time, 0);
			assert_int_equal(got.id, 0);
			break;
		case TK_PERF_RECORD_FORK:
		case TK_PERF_RECORD_EXIT:
			assert_int_equal(tk_perfdata_parse_task(&rec, &task), 0);
			assert_int_equal(task.pid, 12);
			assert_int_equal(task.ppid, 10);
			assert_int_equal(task.ptid, 11);
			assert_int_equal(task.time, rec.type == TK_PERF_RECORD_FORK ? 450 : 600);
			assert_errno(tk_perfdata_parse_comm(&rec, &comm), EINVAL);
			break;
		case TK_PERF_RECORD_MMAP:
			assert_string_equal(d + 40, "[kernel.kallsyms]_text");
			break;
		case TK_PERF_RECORD_SAMPLE:
			assert_int_equal(got.attr_index, 0);
			assert_int_equal(got.tid, 11);
			assert_int_equal(got.time, 500);
			assert_int_equal(got.cpu, 1);
			assert_int_equal(got.raw_size, 12);
			assert_memory_equal(got.raw, raw, sizeof(raw));
			break;
		}
		n++;
	}
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	tk_perfdata_close(pd);
}

static int setup(void **state)
{
	const char *src = getenv("TK_SOURCE_DIR");

	(void)state;
	snprintf(sample, sizeof(sample), "%s/tests/data/sample-v7-zstd.dat", src ? src : ".");
	return tk_tmpdir_make();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dat_to_dat),
		cmocka_unit_test(test_short_opts),
		cmocka_unit_test(test_dat_to_perf_and_back),
		cmocka_unit_test(test_instance_only),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_file_kind),
		cmocka_unit_test(test_option_describe),
		cmocka_unit_test(test_perf_records_from_fields),
	};

	return cmocka_run_group_tests(tests, setup, tk_tmpdir_teardown);
}
