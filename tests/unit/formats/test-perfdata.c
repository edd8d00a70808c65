// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of the perf.data reader and writer: hand-built files (pipe mode,
 * COMPRESSED streams, unaligned records, killed writers, corrupt headers,
 * feature sections this machine's perf cannot record, malformed features,
 * unknown feature bits) and, when perf and root are present, files from the real perf record,
 * checked against perf report -D, and files we write, checked with perf
 * script, perf report --header-only and perf buildid-list.
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
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include <tracekit/perfdata.h>
#include <tracekit/version.h>

#include "bytes.h"
#include "perfdata-internal.h"
#include "tk-test.h"
#include "tk-tmpdir.h"

static void path_of(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

/* The last warning, so tests can check that it names the file and offset. */
static char last_warning[1024];

static void quiet(enum tk_log_level level, const char *msg, void *ctx)
{
	int *count = ctx;

	(void)level;
	snprintf(last_warning, sizeof(last_warning), "%s", msg);
	if (count)
		(*count)++;
}

static int warnings;

static struct tk_perf_attr sw_attr(uint64_t config)
{
	struct tk_perf_attr a;

	memset(&a, 0, sizeof(a));
	a.type = 1;
	a.config = config;
	a.sample_period = 1;
	a.sample_type = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
			TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD;
	a.flags = TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL | (1ull << 20) /* exclude_guest */;
	return a;
}

/* A SAMPLE for sw_attr(): id, ip, pid/tid, time, cpu, period (64 bytes). */
static size_t make_sample(uint8_t *b, uint64_t id, uint64_t ip, uint32_t pid, uint64_t time)
{
	const uint64_t q[] = {
		9 | (uint64_t)56 << 48, id, ip, pid | (uint64_t)pid << 32, time, 1, 1};

	/* Stored byte-wise: callers build streams at odd offsets. */
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		tk_store_u64(b + 8 * i, q[i], false);
	return 56;
}

/* A COMM with the sample_id_all trailer of sw_attr() (TID TIME CPU IDENTIFIER). */
static size_t make_comm(uint8_t *b, uint32_t pid, const char *comm, uint64_t time, uint64_t id)
{
	size_t n = 16 + 16 + 32;

	memset(b, 0, n);
	tk_store_u32(b, TK_PERF_RECORD_COMM, false);
	tk_store_u16(b + 6, (uint16_t)n, false);
	tk_store_u32(b + 8, pid, false);
	tk_store_u32(b + 12, pid, false);
	strncpy((char *)b + 16, comm, 15);
	tk_store_u32(b + 32, pid, false);
	tk_store_u32(b + 36, pid, false);
	tk_store_u64(b + 40, time, false);
	tk_store_u64(b + 56, id, false);
	return n;
}

static void write_ok(struct tk_perfdata_writer *w, const void *rec, size_t len)
{
	assert_int_equal(tk_perfdata_writer_write(w, rec, len), 0);
}

static void write_two_event_file(const char *path, int nsamples, bool finish)
{
	struct tk_perfdata_writer *w = tk_perfdata_writer_open(path);
	struct tk_perf_attr a0 = sw_attr(0), a1 = sw_attr(9);
	uint64_t ids0[] = {11, 12}, ids1[] = {21};
	uint8_t rec[256];
	static const uint8_t bid[20] = {0xde, 0xad, 0xbe, 0xef};

	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a0, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a1, "dummy"), 1);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, ids0, 2), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 1, ids1, 1), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 1, ids0, 1), -EINVAL);
	assert_int_equal(tk_perfdata_writer_write(w, rec, make_comm(rec, 42, "worker", 5, 21)), 0);
	for (int i = 0; i < nsamples; i++)
		assert_int_equal(
			tk_perfdata_writer_write(
				w, rec, make_sample(rec, 11 + i % 2, 0x401000 + i, 42, 1000 + i)),
			0);
	assert_int_equal(tk_perfdata_writer_set_host(w, 2, (const char *const[]){"x", "record"}),
			 0);
	assert_int_equal(tk_perfdata_writer_add_build_id(w, 2, -1, bid, 20, "/bin/true"), 0);
	assert_int_equal(tk_perfdata_writer_set_clock(w, 1), 0);
	if (finish)
		assert_int_equal(tk_perfdata_writer_finish(w), 0);
	else
		assert_int_equal(tk_perfdata_writer_flush(w), 0);
	tk_perfdata_writer_close(w);
}

static void test_roundtrip(void **state)
{
	char path[256];
	struct tk_perfdata *pd;
	const struct tk_perfdata_info *in;
	const struct tk_perfdata_host *h;
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	int n = 0, r;

	(void)state;
	path_of(path, sizeof(path), "rt.data");
	write_two_event_file(path, 10, true);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	in = tk_perfdata_get_info(pd);
	assert_false(in->pipe);
	assert_int_equal(in->header_size, 104);
	assert_int_equal(in->data_size, 64 + 10 * 56);
	assert_int_equal(tk_perfdata_evsel_count(pd), 2);
	assert_int_equal(tk_perfdata_evsel_get(pd, 0)->nr_ids, 2);
	assert_int_equal(tk_perfdata_evsel_get(pd, 1)->ids[0], 21);
	assert_string_equal(tk_perfdata_evsel_get(pd, 1)->name, "dummy");
	/* The id -> event map a READ sample's members are found by. */
	assert_int_equal(tk_perfdata_evsel_of_id(pd, 11), 0);
	assert_int_equal(tk_perfdata_evsel_of_id(pd, 12), 0);
	assert_int_equal(tk_perfdata_evsel_of_id(pd, 21), 1);
	assert_int_equal(tk_perfdata_evsel_of_id(pd, 13), -ENOENT);
	assert_int_equal(tk_perfdata_evsel_of_id(pd, 0), -ENOENT);
	h = tk_perfdata_get_host(pd);
	assert_non_null(h->hostname);
	assert_true(h->has_nrcpus);
	assert_true(h->has_sample_time);
	assert_int_equal(h->sample_time_first, 1000);
	assert_int_equal(h->sample_time_last, 1009);
	assert_true(h->has_clock_data);
	assert_int_equal(h->cmdline_argc, 2);
	assert_string_equal(h->cmdline_argv[1], "record");
	assert_int_equal(tk_perfdata_build_id_count(pd), 1);
	assert_string_equal(tk_perfdata_build_id_get(pd, 0)->filename, "/bin/true");
	assert_int_equal(tk_perfdata_build_id_get(pd, 0)->id[3], 0xef);
	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		assert_int_equal((uintptr_t)rec.data % 8, 0);
		assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &s), 0);
		if (rec.type == TK_PERF_RECORD_COMM) {
			assert_int_equal(s.attr_index, 1);
			assert_int_equal(s.time, 5);
			continue;
		}
		assert_int_equal(rec.type, TK_PERF_RECORD_SAMPLE);
		assert_int_equal(s.attr_index, 0);
		assert_int_equal(s.ip, 0x401000 + n);
		assert_int_equal(s.time, 1000 + n);
		assert_int_equal(s.pid, 42);
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 10);
	tk_perfdata_close(pd);
}

/* A writer that never finishes leaves the data size current and no feature bits. */
static void test_killed_writer(void **state)
{
	char path[256];
	struct tk_perfdata *pd;
	struct tk_perf_record rec;
	int n = 0, fd;
	uint64_t zero = 0;

	(void)state;
	path_of(path, sizeof(path), "killed.data");
	write_two_event_file(path, 5, false);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_int_equal(tk_perfdata_get_info(pd)->features[0], 0);
	assert_false(tk_perfdata_get_info(pd)->data_size_repaired);
	while (tk_perfdata_next(pd, &rec) > 0)
		n++;
	assert_int_equal(n, 6);
	tk_perfdata_close(pd);

	/* As perf leaves it: data size 0, and half a record at the end. */
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &zero, 8, 48), 8);
	assert_int_equal(ftruncate(fd, lseek(fd, 0, SEEK_END) - 20), 0);
	close(fd);
	warnings = 0;
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_true(tk_perfdata_get_info(pd)->data_size_repaired);
	n = 0;
	while (tk_perfdata_next(pd, &rec) > 0)
		n++;
	assert_int_equal(n, 5);
	assert_true(warnings >= 2);
	tk_perfdata_close(pd);
}

/* Records of @path by type: samples, COMMs and padding (HEADER_EVENT_TYPE). */
static void count_records(const char *path, int *samples, int *comms, int *pads)
{
	struct tk_perfdata *pd = tk_perfdata_open(path);
	struct tk_perf_record rec;
	int r;

	assert_non_null(pd);
	*samples = *comms = *pads = 0;
	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		*samples += rec.type == TK_PERF_RECORD_SAMPLE;
		*comms += rec.type == TK_PERF_RECORD_COMM;
		*pads += rec.type == TK_PERF_RECORD_HEADER_EVENT_TYPE;
	}
	assert_int_equal(r, 0);
	assert_false(tk_perfdata_get_info(pd)->data_size_repaired);
	tk_perfdata_close(pd);
}

/*
 * Features set before the first record are written ahead of the data, and
 * every flush commits records plus a table of them (bit 0 marks the entry
 * that becomes a padding record): a writer killed after any flush, or
 * failing in the middle of one, leaves the previous commit whole.
 */
static void test_early_features(void **state)
{
	char path[256];
	struct tk_perfdata_writer *w;
	struct tk_perfdata *pd;
	struct tk_perf_attr a0 = sw_attr(0);
	const struct tk_perfdata_info *in;
	uint64_t ids[] = {7};
	uint8_t rec[256];
	struct rlimit old, lim;
	struct stat st;
	int samples, comms, pads;

	(void)state;
	path_of(path, sizeof(path), "early.data");
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a0, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, ids, 1), 0);
	assert_int_equal(tk_perfdata_writer_set_host(w, 0, NULL), 0);
	assert_int_equal(tk_perfdata_writer_write(w, rec, make_comm(rec, 42, "worker", 5, 7)), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tk_perfdata_writer_write(
					 w, rec, make_sample(rec, 7, 0x401000, 42, 1000 + i)),
				 0);
	assert_int_equal(tk_perfdata_writer_flush(w), 0);
	count_records(path, &samples, &comms, &pads);
	assert_int_equal(samples, 3);
	assert_int_equal(pads, 1); /* the table committed at begin */
	for (int i = 0; i < 4; i++)
		assert_int_equal(tk_perfdata_writer_write(
					 w, rec, make_sample(rec, 7, 0x401000, 42, 2000 + i)),
				 0);
	assert_int_equal(tk_perfdata_writer_flush(w), 0);

	warnings = 0;
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	in = tk_perfdata_get_info(pd);
	assert_int_equal(in->features[0] & 1, 1);
	assert_true(in->features[0] & (1u << TK_PERF_FEAT_HOSTNAME));
	assert_true(in->features[0] & (1u << TK_PERF_FEAT_EVENT_DESC));
	assert_false(in->features[0] & (1u << TK_PERF_FEAT_SAMPLE_TIME));
	/* The table follows the data: one entry per bit, bit 0 included. */
	assert_int_equal(in->data_offset + in->data_size +
				 16 * __builtin_popcountll(in->features[0]),
			 in->file_size);
	assert_non_null(tk_perfdata_get_host(pd)->hostname);
	/* CMDLINE without argv: this process's, its executable first. */
	{
		char exe[4096], all[8192];
		int fd = open("/proc/self/cmdline", O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, all, sizeof(all)) : -1, k;
		uint32_t words = 0;

		assert_true(n > 0);
		close(fd);
		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(all + i) + 1)
			words++;
		k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		assert_true(k > 0);
		exe[k] = 0;
		assert_int_equal(tk_perfdata_get_host(pd)->cmdline_argc, words);
		assert_string_equal(tk_perfdata_get_host(pd)->cmdline_argv[0], exe);
		if (words > 1)
			assert_string_equal(tk_perfdata_get_host(pd)->cmdline_argv[1],
					    all + strlen(all) + 1);
	}
	assert_string_equal(tk_perfdata_evsel_get(pd, 0)->name, "cpu-clock");
	tk_perfdata_close(pd);
	count_records(path, &samples, &comms, &pads);
	assert_int_equal(samples, 7);
	assert_int_equal(comms, 1);
	assert_int_equal(pads, 2);

	/* A flush that fails half-way (file size limit) leaves the last commit as it was. */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)st.st_size + 300;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(tk_perfdata_writer_write(
					 w, rec, make_sample(rec, 7, 0x401000, 42, 3000 + i)),
				 0);
	assert_int_equal(tk_perfdata_writer_flush(w), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	tk_perfdata_writer_close(w);
	count_records(path, &samples, &comms, &pads);
	assert_int_equal(samples, 7);
	assert_int_equal(pads, 2);

	/* Finished: the final table has no bit 0, SAMPLE_TIME is added after it. */
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a0, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, ids, 1), 0);
	assert_int_equal(tk_perfdata_writer_set_host(w, 0, NULL), 0);
	assert_int_equal(tk_perfdata_writer_write(w, rec, make_sample(rec, 7, 0x401000, 42, 9)), 0);
	assert_int_equal(tk_perfdata_writer_flush(w), 0);
	assert_int_equal(tk_perfdata_writer_write(w, rec, make_sample(rec, 7, 0x401000, 42, 10)),
			 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	in = tk_perfdata_get_info(pd);
	assert_int_equal(in->features[0] & 1, 0);
	assert_true(in->features[0] & (1u << TK_PERF_FEAT_SAMPLE_TIME));
	assert_true(tk_perfdata_get_host(pd)->has_sample_time);
	assert_int_equal(tk_perfdata_get_host(pd)->sample_time_last, 10);
	tk_perfdata_close(pd);
	count_records(path, &samples, &comms, &pads);
	assert_int_equal(samples, 2);
	assert_int_equal(pads, 2); /* the tables of begin and of the flush */
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

/* Pipe stream: HEADER_ATTR, HEADER_FEATURE (unaligned), end marker, samples. */
static void test_pipe(void **state)
{
	uint8_t buf[4096], attr[128];
	size_t len = 0;
	struct tk_perf_attr a = sw_attr(0);
	char path[256];
	struct tk_perfdata *pd;
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	int n = 0, types = 0;

	(void)state;
	tk_store_u64(buf, TK_PERF_MAGIC, false);
	tk_store_u64(buf + 8, 16, false);
	len = 16;
	/* HEADER_ATTR: attr + one id */
	tk_store_u32(buf + len, 64, false);
	tk_store_u16(buf + len + 6, 8 + 128 + 8, false);
	tk_perfdata_attr_encode(&a, attr);
	memcpy(buf + len + 8, attr, 128);
	tk_store_u64(buf + len + 136, 7, false);
	len += 144;
	/* HEADER_FEATURE HOSTNAME, with a 5-byte string length: unaligned after it */
	tk_store_u32(buf + len, 80, false);
	tk_store_u16(buf + len + 6, 16 + 4 + 5, false);
	tk_store_u64(buf + len + 8, TK_PERF_FEAT_HOSTNAME, false);
	tk_store_u32(buf + len + 16, 5, false);
	memcpy(buf + len + 20, "pipe", 5);
	len += 25;
	tk_store_u32(buf + len, 80, false);
	tk_store_u16(buf + len + 6, 16, false);
	tk_store_u64(buf + len + 8, TK_PERF_FEAT_LAST, false);
	len += 16;
	for (int i = 0; i < 3; i++)
		len += make_sample(buf + len, 7, 0x1000 + i, 9, 100 + i);
	path_of(path, sizeof(path), "pipe.data");
	write_file(path, buf, len);

	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_true(tk_perfdata_get_info(pd)->pipe);
	assert_int_equal(tk_perfdata_evsel_count(pd), 1);
	assert_string_equal(tk_perfdata_get_host(pd)->hostname, "pipe");
	while (tk_perfdata_next(pd, &rec) > 0) {
		assert_int_equal((uintptr_t)rec.data % 8, 0);
		if (rec.type != TK_PERF_RECORD_SAMPLE) {
			types++;
			continue;
		}
		assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &s), 0);
		assert_int_equal(s.ip, 0x1000 + n);
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(types, 3);
	tk_perfdata_close(pd);
}

/* COMPRESSED records: one zstd stream in two unaligned chunks, a record split between them. */
static void test_compressed(void **state)
{
	uint8_t plain[1024], comp[2048], out[4096];
	size_t plen = 0, clen, len, cut;
	char path[256];
	struct tk_perfdata_writer *w;
	struct tk_perf_attr a = sw_attr(0);
	struct tk_perfdata *pd;
	struct tk_perf_record rec;
	struct tk_perf_sample s;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_inBuffer zin;
	ZSTD_outBuffer zout;
	int n = 0;

	(void)state;
	for (int i = 0; i < 8; i++)
		plen += make_sample(plain + plen, 0, 0x2000 + i, 3, 50 + i);
	zin = (ZSTD_inBuffer){plain, plen, 0};
	zout = (ZSTD_outBuffer){comp, sizeof(comp), 0};
	assert_int_equal(ZSTD_compressStream2(cc, &zout, &zin, ZSTD_e_end), 0);
	clen = zout.pos;
	ZSTD_freeCCtx(cc);

	/* Split the compressed bytes: odd sizes make the next record unaligned. */
	cut = clen / 2 | 1;
	len = 0;
	for (int part = 0; part < 2; part++) {
		size_t from = part ? cut : 0, n8 = (part ? clen - cut : cut);

		tk_store_u32(out + len, TK_PERF_RECORD_COMPRESSED, false);
		tk_store_u16(out + len + 6, (uint16_t)(8 + n8), false);
		memcpy(out + len + 8, comp + from, n8);
		len += 8 + n8;
	}
	path_of(path, sizeof(path), "z.data");
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, NULL), 0);
	/* The writer wants whole records; feed them one by one. */
	for (size_t off = 0; off < len;) {
		uint16_t sz = tk_load_u16(out + off + 6, false);

		assert_int_equal(tk_perfdata_writer_write(w, out + off, sz), 0);
		off += sz;
	}
	len = make_sample(plain, 0, 0x3000, 3, 99);
	assert_int_equal(tk_perfdata_writer_write(w, plain, len), 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);

	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	while (tk_perfdata_next(pd, &rec) > 0) {
		assert_int_equal((uintptr_t)rec.data % 8, 0);
		assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &s), 0);
		assert_int_equal(rec.compressed, n < 8);
		assert_int_equal(s.ip, n < 8 ? 0x2000u + n : 0x3000u);
		n++;
	}
	assert_int_equal(n, 9);
	assert_int_equal(tk_perfdata_get_info(pd)->nr_compressed, 2);
	tk_perfdata_close(pd);
}

static void expect_bad(const char *name, const void *p, size_t n, int err, const char *what)
{
	char path[256];
	struct tk_perfdata *pd;

	path_of(path, sizeof(path), name);
	write_file(path, p, n);
	pd = tk_perfdata_open(path);
	assert_null(pd);
	assert_int_equal(errno, err);
	assert_non_null(strstr(tk_errmsg(), name));
	if (what && !strstr(tk_errmsg(), what))
		fail_msg("message \"%s\" lacks \"%s\"", tk_errmsg(), what);
}

/*
 * A header as a big-endian machine would write it: a valid file of ours
 * with every header field and the feature bitmap byte-swapped (perf's
 * magic then reads "2ELIFREP"), and the same for a pipe header. Files of
 * the other byte order are read since issue 16 (perfdata-swap.c, whose
 * own tests read whole big-endian files): here the rest of the file is
 * still little-endian, which reads as damage (its attrs do not parse),
 * and the empty big-endian pipe opens with no events.
 */
static void test_swapped_file(void)
{
	char path[256], bepath[256];
	uint8_t h[TK_PERF_HEADER_SIZE], pipe[16];
	struct tk_perfdata *pd;
	int fd;

	path_of(path, sizeof(path), "host.data");
	write_two_event_file(path, 3, true);
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	tk_perfdata_close(pd);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	for (size_t i = 0; i < sizeof(h); i += 8)
		tk_store_u64(h + i, __builtin_bswap64(tk_load_u64(h + i, false)), false);
	assert_memory_equal(h, "2ELIFREP", 8);
	path_of(bepath, sizeof(bepath), "big-endian.data");
	{
		uint8_t *all;
		struct stat st;

		fd = open(path, O_RDONLY);
		assert_true(fd >= 0 && fstat(fd, &st) == 0);
		all = malloc((size_t)st.st_size);
		assert_non_null(all);
		assert_int_equal(pread(fd, all, (size_t)st.st_size, 0), st.st_size);
		close(fd);
		memcpy(all, h, sizeof(h));
		expect_bad("big-endian.data", all, (size_t)st.st_size, EBADMSG, NULL);
		free(all);
	}
	tk_store_u64(pipe, TK_PERF_MAGIC_SWAPPED, false);
	tk_store_u64(pipe + 8, __builtin_bswap64(16), false);
	path_of(bepath, sizeof(bepath), "big-endian-pipe.data");
	write_file(bepath, pipe, sizeof(pipe));
	pd = tk_perfdata_open(bepath);
	assert_non_null(pd);
	tk_perfdata_close(pd);
}

static void test_bad_headers(void **state)
{
	uint8_t h[512];
	char path[256];
	struct tk_perfdata *pd;
	struct tk_perf_record rec;

	(void)state;
	memset(h, 0, sizeof(h));
	memcpy(h, "NOTPERF!", 8);
	expect_bad("magic.data", h, 104, EBADMSG, "offset 0x0");
	expect_bad("short.data", "PERFILE2", 8, EBADMSG, "too short");
	tk_store_u64(h, TK_PERF_MAGIC, false);
	tk_store_u64(h + 8, 96, false);
	expect_bad("hsize.data", h, 104, EBADMSG, "offset 0x8");
	tk_store_u64(h + 8, 104, false);
	tk_store_u64(h + 16, 0, false);
	expect_bad("attrsize.data", h, 104, EBADMSG, "offset 0x10");
	tk_store_u64(h + 16, 144, false);
	tk_store_u64(h + 24, 104, false);
	tk_store_u64(h + 32, 144 * 1000, false);
	expect_bad("attrs.data", h, 400, EBADMSG, "outside the file");
	tk_store_u64(h + 0, TK_PERF_MAGIC_SWAPPED, false);
	expect_bad("swapped.data", h, 400, ENOTSUP, "byte order");
	test_swapped_file();

	/* A record whose size runs past the data section is an error naming its offset. */
	path_of(path, sizeof(path), "rt.data");
	write_two_event_file(path, 3, true);
	{
		int fd = open(path, O_RDWR);
		uint64_t doff;
		uint16_t big = 4000;

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &doff, 8, 40), 8);
		assert_int_equal(pwrite(fd, &big, 2, (off_t)doff + 64 + 6), 2);
		close(fd);
	}
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_int_equal(tk_perfdata_next(pd, &rec), 1);
	assert_int_equal(tk_perfdata_next(pd, &rec), -EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "crosses the end"));
	tk_perfdata_close(pd);
}

static void test_append_mismatch(void **state)
{
	char path[256];
	struct tk_perfdata_writer *w;
	struct tk_perf_attr a = sw_attr(0);
	struct stat before, after;
	uint8_t rec[64];
	struct tk_perfdata *pd;
	struct tk_perf_record r;
	int n = 0;

	(void)state;
	path_of(path, sizeof(path), "app.data");
	write_two_event_file(path, 4, true);
	assert_int_equal(stat(path, &before), 0);
	w = tk_perfdata_writer_open_append(path);
	assert_non_null(w);
	a.sample_type |= TK_PERF_SAMPLE_ADDR;
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), -EINVAL);
	assert_non_null(strstr(tk_errmsg(),
			       "event cpu-clock was recorded with other settings: "
			       "this recording's samples carry ADDR, the file's do not"));
	/* Several differences, each in the words of the option that makes it. */
	a = sw_attr(0);
	a.flags |= (1ull << 1) | (1ull << 12) | (1ull << 10) | TK_PERF_ATTR_FLAG_USE_CLOCKID;
	a.sample_period = 1000;
	a.clockid = 1;
	a.sample_type &= ~TK_PERF_SAMPLE_IP;
	a.read_format = 4;
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), -EINVAL);
	assert_string_equal(strstr(tk_errmsg(), "cannot append"),
			    "cannot append: event cpu-clock was recorded with other settings: the "
			    "file was recorded system-wide (-a), this recording follows a "
			    "command; the file sampled every event, this recording at 1000 Hz "
			    "(--freq); the file's times are on the kernel's perf clock, this "
			    "recording's on clock mono (-k mono); the file's samples carry IP, "
			    "this recording's do not; read_format 0x0 in the file, 0x4 now; "
			    "the file is left as it was");
	tk_perfdata_writer_close(w);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_size, after.st_size);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);

	/* Same attr merges; a new one with IDENTIFIER is added with new ids. */
	w = tk_perfdata_writer_open_append(path);
	assert_non_null(w);
	a = sw_attr(0);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), 0);
	a = sw_attr(3);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "page-faults"), 2);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 2, (const uint64_t[]){31}, 1), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tk_perfdata_writer_write(
					 w, rec, make_sample(rec, 31, 0x5000 + i, 8, 2000 + i)),
				 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);

	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_int_equal(tk_perfdata_evsel_count(pd), 3);
	assert_string_equal(tk_perfdata_evsel_get(pd, 2)->name, "page-faults");
	assert_int_equal(tk_perfdata_get_host(pd)->sample_time_first, 1000);
	assert_int_equal(tk_perfdata_get_host(pd)->sample_time_last, 2002);
	assert_int_equal(tk_perfdata_build_id_count(pd), 1);
	while (tk_perfdata_next(pd, &r) > 0) {
		struct tk_perf_sample s;

		assert_int_equal(tk_perfdata_parse_sample(pd, &r, &s), 0);
		if (r.type == TK_PERF_RECORD_SAMPLE && s.attr_index == 2)
			n++;
	}
	assert_int_equal(n, 3);
	tk_perfdata_close(pd);
}

/* ------------------------------------------------ oracle tests with perf */

static bool have_perf(void)
{
	return geteuid() == 0 && access("/usr/bin/perf", X_OK) == 0;
}

static char *run(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	assert_non_null(f);
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	buf[len] = 0;
	pclose(f);
	return buf;
}

/* "  SAMPLE events:  227" lines of perf report -D vs our counts. */
static void check_counts(const char *path)
{
	char cmd[600], *out, *line;
	struct tk_perfdata *pd = tk_perfdata_open(path);
	struct tk_perf_record rec;
	uint64_t counts[128] = {0};
	int r, checked = 0;

	assert_non_null(pd);
	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		struct tk_perf_sample s;

		counts[rec.type < 128 ? rec.type : 127]++;
		if (rec.type == TK_PERF_RECORD_SAMPLE || tk_perf_has_trailer(rec.type)) {
			int x = tk_perfdata_parse_sample(pd, &rec, &s);

			assert_true(x == 0 || x == -ENOENT);
		}
	}
	assert_int_equal(r, 0);
	counts[TK_PERF_RECORD_COMPRESSED] = tk_perfdata_get_info(pd)->nr_compressed;
	tk_perfdata_close(pd);

	snprintf(cmd, sizeof(cmd),
		 "perf report -D -i %s 2>/dev/null | sed -n "
		 "'/Aggregated stats/,/stats:$/p'",
		 path);
	out = run(cmd);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		unsigned long long n;
		uint32_t t;

		if (sscanf(line, " %63s events: %llu", name, &n) != 2 || !strcmp(name, "TOTAL"))
			continue;
		for (t = 1; t < 128; t++) {
			const char *ours = tk_perfdata_record_name(t);
			size_t ol = strlen(ours);

			/* perf shortens HEADER_ATTR to ATTR, HEADER_FEATURE to FEATURE ... */
			if (!strcmp(ours, name) ||
			    (ol > strlen(name) && !strcmp(ours + ol - strlen(name), name) &&
			     !strncmp(ours, "HEADER_", 7)))
				break;
		}
		if (t == 128)
			continue;
		if (counts[t] != n)
			fail_msg("%s: %s: perf counts %llu, we count %" PRIu64, path, name, n,
				 counts[t]);
		checked++;
	}
	free(out);
	assert_true(checked >= 5);
}

static void test_perf_files(void **state)
{
	char cmd[1024], path[256];
	static const char *const rec[][2] = {
		{"a.data", "-e sched:sched_switch -a -o %s -- sleep 0.2"},
		{"b.data", "-e cpu-clock -g -o %s -- ls /"},
		{"z.data", "-z -e sched:sched_switch -a -o %s -- sleep 0.2"},
		{"p.data", "-e sched:sched_switch -a -o - -- sleep 0.2 > %s"},
	};

	(void)state;
	if (!have_perf())
		skip();
	for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++) {
		char args[512];

		path_of(path, sizeof(path), rec[i][0]);
		snprintf(args, sizeof(args), rec[i][1], path);
		snprintf(cmd, sizeof(cmd), "perf record -q %s >/dev/null 2>&1", args);
		if (strstr(args, "> "))
			snprintf(cmd, sizeof(cmd), "perf record -q %s 2>/dev/null", args);
		assert_int_equal(system(cmd), 0);
		check_counts(path);
	}
}

/*
 * Rewrite a real perf.data with our writer (attrs, ids, records, tracing
 * data, build ids from the original; host facts of this machine) and check
 * that perf reads it and prints the same events; then append the same
 * recording again and check that perf script shows both.
 */
static int copy_into(struct tk_perfdata *pd, struct tk_perfdata_writer *w, bool only_samples)
{
	struct tk_perf_record rec;
	int r, n = 0;

	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		if (only_samples && rec.type != TK_PERF_RECORD_SAMPLE)
			continue;
		assert_int_equal(tk_perfdata_writer_write(w, rec.data, rec.size), 0);
		n += rec.type == TK_PERF_RECORD_SAMPLE;
	}
	assert_int_equal(r, 0);
	return n;
}

static void test_perf_oracle_writer(void **state)
{
	char src[256], dst[256], cmd[1200], *a, *b;
	struct tk_perfdata *pd;
	struct tk_perfdata_writer *w;
	const void *blob;
	uint64_t blen;
	size_t i, lines_a = 0, lines_b = 0;
	int nsamples, nsamples2;

	(void)state;
	if (!have_perf())
		skip();
	path_of(src, sizeof(src), "orig.data");
	path_of(dst, sizeof(dst), "ours.data");
	snprintf(cmd, sizeof(cmd),
		 "perf record -q -e sched:sched_switch -a -o %s -- sleep 0.2 >/dev/null 2>&1", src);
	assert_int_equal(system(cmd), 0);

	pd = tk_perfdata_open(src);
	assert_non_null(pd);
	w = tk_perfdata_writer_open(dst);
	assert_non_null(w);
	for (i = 0; i < tk_perfdata_evsel_count(pd); i++) {
		const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, i);

		assert_int_equal(tk_perfdata_writer_add_attr(w, &e->attr, e->name), (int)i);
		assert_int_equal(tk_perfdata_writer_add_ids(w, i, e->ids, e->nr_ids), 0);
	}
	/* Tracing data made from the live kernel, as the perf recorder will. */
	assert_int_equal(tk_perfdata_tracing(pd, NULL, &blob, &blen), 0);
	{
		const char *const ev[] = {"sched:sched_switch"};
		void *built;

		assert_int_equal(tk_perfdata_tracing_build(ev, 1, &built, &blen), 0);
		assert_int_equal(
			tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_TRACING_DATA, built, blen),
			0);
		free(built);
	}
	for (i = 0; i < tk_perfdata_build_id_count(pd); i++) {
		const struct tk_perfdata_build_id *bi = tk_perfdata_build_id_get(pd, i);

		assert_int_equal(tk_perfdata_writer_add_build_id(w, bi->misc & 7, bi->pid, bi->id,
								 bi->size, bi->filename),
				 0);
	}
	assert_int_equal(tk_perfdata_writer_set_host(w, 1, (const char *const[]){"t"}), 0);
	assert_int_equal(tk_perfdata_writer_set_clock(w, 1), 0);
	nsamples = copy_into(pd, w, false);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	tk_perfdata_close(pd);
	assert_true(nsamples > 0);

	snprintf(cmd, sizeof(cmd), "perf script -i %s 2>&1", src);
	a = run(cmd);
	snprintf(cmd, sizeof(cmd), "perf script -i %s 2>&1", dst);
	b = run(cmd);
	assert_string_equal(a, b);
	for (char *p = a; (p = strchr(p, '\n')); p++)
		lines_a++;
	assert_int_equal(lines_a, (size_t)nsamples);
	free(b);

	snprintf(cmd, sizeof(cmd), "perf report --header-only -I -i %s 2>&1", dst);
	b = run(cmd);
	assert_non_null(strstr(b, "# perf version : " TK_VERSION_TEXT));
	assert_non_null(strstr(b, "# nrcpus online"));
	assert_non_null(strstr(b, "sched:sched_switch"));
	assert_non_null(strstr(b, "# clockid frequency"));
	assert_null(strstr(b, "incompatible"));
	free(b);
	snprintf(cmd, sizeof(cmd), "perf buildid-list -i %s 2>&1", src);
	a = (free(a), run(cmd));
	snprintf(cmd, sizeof(cmd), "perf buildid-list -i %s 2>&1", dst);
	b = run(cmd);
	assert_string_equal(a, b);
	free(a);
	free(b);

	/* Append the samples of the same recording once more. */
	w = tk_perfdata_writer_open_append(dst);
	assert_non_null(w);
	pd = tk_perfdata_open(src);
	assert_non_null(pd);
	for (i = 0; i < tk_perfdata_evsel_count(pd); i++)
		assert_int_equal(
			tk_perfdata_writer_add_attr(w, &tk_perfdata_evsel_get(pd, i)->attr, NULL),
			(int)i);
	nsamples2 = copy_into(pd, w, true);
	tk_perfdata_close(pd);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	snprintf(cmd, sizeof(cmd), "perf script -i %s 2>/dev/null", dst);
	b = run(cmd);
	for (char *p = b; (p = strchr(p, '\n')); p++)
		lines_b++;
	assert_int_equal(lines_b, (size_t)(nsamples + nsamples2));
	free(b);
	check_counts(dst);
}

static int setup(void **state)
{
	(void)state;
	if (tk_tmpdir_make())
		return -1;
	tk_log_set_handler(quiet, &warnings, TK_LOG_WARN);
	return 0;
}

/*
 * tk_perfdata_report_run() orders records as perf's ordered events do: a
 * FINISHED_ROUND releases what is not newer than the previous round's
 * highest time; a COMM names its thread from its own time on; an unknown
 * thread prints as ":TID".
 */
static void test_report_order(void **state)
{
	char path[256], out[256], text[4096];
	struct tk_perfdata_writer *w;
	struct tk_perf_attr a = sw_attr(0);
	const uint64_t ids[] = {11};
	uint8_t rec[256];
	const uint8_t round[8] = {TK_PERF_RECORD_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0};
	struct tk_perfdata_report_opts opts = {.sz = sizeof(struct tk_perfdata_report_opts)};
	struct tk_perfdata *pd;
	struct tk_perfdata_report_stats rst;
	uint64_t printed = 0;
	ssize_t n;
	int fd;

	(void)state;
	path_of(path, sizeof(path), "order.data");
	path_of(out, sizeof(out), "order.txt");
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, ids, 1), 0);
	/* Round 1: t=3000 (pid 7, unnamed), then COMM of 42 at t=1500, sample t=2000. */
	write_ok(w, rec, make_sample(rec, 11, 0x10, 7, 3000000));
	write_ok(w, rec, make_comm(rec, 42, "w1", 1500000, 11));
	write_ok(w, rec, make_sample(rec, 11, 0x20, 42, 2000000));
	write_ok(w, round, 8);
	/* Round 2: a sample older than round 1's newest, and a rename. */
	write_ok(w, rec, make_sample(rec, 11, 0x30, 42, 2500000));
	write_ok(w, rec, make_comm(rec, 42, "w2", 2600000, 11));
	write_ok(w, rec, make_sample(rec, 11, 0x40, 42, 4000000));
	write_ok(w, round, 8);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);

	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	opts.fd = fd;
	assert_int_equal(tk_perfdata_report_run(pd, &opts, &rst), 0);
	printed = rst.printed;
	close(fd);
	tk_perfdata_close(pd);
	assert_int_equal(printed, 4);
	fd = open(out, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	assert_true(n > 0);
	text[n] = 0;
	assert_string_equal(
		text,
		"              w1    42 [001]     0.002000:          1 cpu-clock:                "
		"20 [unknown] ([unknown])\n"
		"              w1    42 [001]     0.002500:          1 cpu-clock:                "
		"30 [unknown] ([unknown])\n"
		"              :7     7 [001]     0.003000:          1 cpu-clock:                "
		"10 [unknown] ([unknown])\n"
		"              w2    42 [001]     0.004000:          1 cpu-clock:                "
		"40 [unknown] ([unknown])\n");
}

/* One queued sample of the ordering model below: its time and its ip (its name). */
struct model_ent {
	uint64_t time, ip;
};

static int model_cmp(const void *a, const void *b)
{
	const struct model_ent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip; /* ips grow in arrival order */
}

/* By time, ties in arrival order: the order perf's ordered events deliver. */
static void model_sort(struct model_ent *q, size_t n)
{
	qsort(q, n, sizeof(*q), model_cmp);
}

/*
 * Many rounds of per-CPU runs (up to 24 in a round, more than the report
 * merges without sorting first; two rounds of thousands, so that the queue
 * grows and moves while it holds runs), late samples, and ties: the report prints
 * the samples in the order of a model that sorts the whole queue stably at
 * each round and releases what is not newer than the previous round's
 * highest time. Read from the mapping and through the copying path.
 */
static void test_report_order_runs(void **state)
{
	enum { NMAX = 131072 };
	char path[256], out[256];
	static char text[NMAX * 100];
	static struct model_ent q[NMAX];
	static uint64_t want[NMAX];
	struct tk_perf_attr a = sw_attr(0);
	const uint64_t ids[] = {11};
	const uint8_t round[8] = {TK_PERF_RECORD_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0};
	struct tk_perfdata_writer *w;
	uint8_t rec[256];
	uint64_t seed = 42, ip = 0x1000, max_ts = 0, limit = 0, base = 1000000;
	size_t qn = 0, nwant = 0;

	(void)state;
	path_of(path, sizeof(path), "order-runs.data");
	path_of(out, sizeof(out), "order-runs.txt");
	w = tk_perfdata_writer_open(path);
	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, ids, 1), 0);
	for (int rd = 0; rd < 60; rd++) {
		int runs = rd % 15 == 7 ? 24 : 1 + (int)((seed >> 33) % 4);

		for (int k = 0; k < runs; k++) {
			uint64_t t;
			int len;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* Some runs start before the last round's newest sample: late ones. */
			t = base - 3000 + (seed >> 40) % 9000;
			len = (int)((seed >> 20) % (rd == 20 || rd == 21 ? 2500 : 40));
			/*
			 * Two rounds hold thousands: the queue grows with runs in
			 * it. The long runs after them always leave some queued, so
			 * the queue's start moves on until it fills its array again.
			 */
			if (rd > 21) {
				t = base + (uint64_t)k * 100;
				len = 400;
			}
			for (int i = 0; i < len && ip - 0x1000 < NMAX; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				/* Steps of 0 make ties within a run and across runs. */
				t += ((seed >> 50) % 3) * 500;
				write_ok(w, rec, make_sample(rec, 11, ip, 7, t));
				q[qn].time = t;
				q[qn++].ip = ip++;
				if (t > max_ts)
					max_ts = t;
			}
		}
		write_ok(w, round, 8);
		model_sort(q, qn);
		{
			size_t i = 0;

			while (i < qn && q[i].time <= limit)
				want[nwant++] = q[i++].ip;
			memmove(q, q + i, (qn - i) * sizeof(*q));
			qn -= i;
		}
		limit = max_ts;
		base += rd > 21 ? 30000 : 6000;
	}
	model_sort(q, qn);
	for (size_t i = 0; i < qn; i++)
		want[nwant++] = q[i].ip;
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
	assert_true(nwant > 1000);

	for (int pass = 0; pass < 2; pass++) {
		struct tk_perfdata_report_opts opts = {.sz = sizeof(opts), .threads = 1};
		struct tk_perfdata_report_stats rst;
		struct tk_perfdata *pd;
		size_t len = 0, line = 0;
		ssize_t n;
		char *p;
		int fd;

		if (pass)
			setenv("TK_PERFDATA_NO_MMAP", "1", 1);
		pd = tk_perfdata_open(path);
		assert_non_null(pd);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		opts.fd = fd;
		assert_int_equal(tk_perfdata_report_run(pd, &opts, &rst), 0);
		close(fd);
		tk_perfdata_close(pd);
		unsetenv("TK_PERFDATA_NO_MMAP");
		assert_int_equal(rst.printed, nwant);
		fd = open(out, O_RDONLY);
		assert_true(fd >= 0);
		while ((n = read(fd, text + len, sizeof(text) - 1 - len)) > 0)
			len += (size_t)n;
		close(fd);
		text[len] = 0;
		/*
		 * Line by line: ASan's strstr() measures the whole rest of its
		 * text at each call, which over 13 MB of text took this test
		 * past its timeout on a busy host.
		 */
		for (p = text; *p;) {
			char *nl = strchr(p, '\n'), *c;
			unsigned long long v;

			if (nl)
				*nl = '\0';
			c = strstr(p, "cpu-clock:");
			p = nl ? nl + 1 : p + strlen(p);
			if (!c)
				continue;
			v = strtoull(c + 10, NULL, 16);
			assert_true(line < nwant);
			if (v != want[line])
				fail_msg("pass %d line %zu: ip %llx, want %llx", pass, line, v,
					 (unsigned long long)want[line]);
			line++;
		}
		assert_int_equal(line, nwant);
	}
}

/* ------------------------------------------------ feature sections by hand */

/* A feature payload under construction, in host order as perf writes it. */
struct pl {
	uint8_t b[4096];
	size_t n;
};

static void pl_bytes(struct pl *p, const void *d, size_t n)
{
	assert_true(n <= sizeof(p->b) - p->n);
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void pl_u32(struct pl *p, uint32_t v)
{
	uint8_t b[4];

	tk_store_u32(b, v, false);
	pl_bytes(p, b, 4);
}

static void pl_u64(struct pl *p, uint64_t v)
{
	uint8_t b[8];

	tk_store_u64(b, v, false);
	pl_bytes(p, b, 8);
}

/* perf_header_string: u32 len (strlen + NUL rounded up to 64), the string zero-padded. */
static void pl_str(struct pl *p, const char *s)
{
	uint8_t pad[256] = {0};
	uint32_t len = tk_perf_string_len(strlen(s));

	assert_true(len <= sizeof(pad));
	memcpy(pad, s, strlen(s));
	pl_u32(p, len);
	pl_bytes(p, pad, len);
}

/*
 * CPU_TOPOLOGY of 4 CPUs as perf 6.1 writes it: one package "0-3" (72
 * bytes), two cores "0-1" and "2-3" (140), core and socket ids of 4 CPUs
 * (32), one die "0-3" (72), die ids (16): 332 bytes; the parts end at 72,
 * 212, 244, 316 and 332. CPUs 2 and 3 are core 1 of socket 0.
 */
static void pl_topology(struct pl *p)
{
	pl_u32(p, 1);
	pl_str(p, "0-3");
	pl_u32(p, 2);
	pl_str(p, "0-1");
	pl_str(p, "2-3");
	for (uint32_t cpu = 0; cpu < 4; cpu++) {
		pl_u32(p, cpu / 2);
		pl_u32(p, 0);
	}
	pl_u32(p, 1);
	pl_str(p, "0-3");
	for (uint32_t cpu = 0; cpu < 4; cpu++)
		pl_u32(p, 0);
}

/*
 * A BTF blob of three types (kernel Documentation/bpf/btf.rst): [1] INT
 * "int", [2] FUNC_PROTO returning it, [3] FUNC @name of that prototype.
 */
static void pl_btf(struct pl *p, const char *name)
{
	char strs[64] = "\0int";
	size_t slen = 5 + strlen(name) + 1;
	const uint32_t types[] = {
		1, 1u << 24,  4, 0x01000020, /* INT "int", 4 bytes, signed 32 bits */
		0, 13u << 24, 1,	     /* FUNC_PROTO, no args, returns [1] */
		5, 12u << 24, 2,	     /* FUNC name, of [2] */
	};

	memcpy(strs + 5, name, strlen(name) + 1);
	pl_u32(p, 0xeb9f | 1u << 16); /* magic, version 1, flags 0 */
	pl_u32(p, 24);		      /* hdr_len */
	pl_u32(p, 0);		      /* type_off */
	pl_u32(p, sizeof(types));
	pl_u32(p, sizeof(types)); /* str_off */
	pl_u32(p, (uint32_t)slen);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		pl_u32(p, types[i]);
	pl_bytes(p, strs, slen);
}

/*
 * One BPF_PROG_INFO entry as perf's bpil_addr_to_offs() leaves it: u32
 * info_len (232, struct bpf_prog_info of 6.1), u32 data_len, u64 arrays,
 * the info, then the data: @nf function addresses (array bit 3), lengths
 * (bit 4), tags (bit 8) and, with @btf_id, func_info records {insn_off,
 * type_id 3} (bit 5), the info's pointer fields holding their offsets.
 */
static void pl_bpf_prog(struct pl *p, uint32_t id, uint32_t nf, uint32_t btf_id)
{
	uint8_t info[232] = {0}, data[512] = {0};
	uint64_t arrays = 0;
	size_t dn = 0;

	assert_true(nf <= 8);
	tk_store_u32(info + 0, 1, false); /* BPF_PROG_TYPE_SOCKET_FILTER */
	tk_store_u32(info + 4, id, false);
	for (int i = 0; i < 8; i++)
		info[8 + i] = (uint8_t)(0xa0 + i);
	tk_store_u32(info + 16, 16 * nf, false); /* jited_prog_len */
	tk_store_u32(info + 20, 16, false);	 /* xlated_prog_len */
	memcpy(info + 64, "hand_prog", 9);
	if (nf) {
		arrays |= 1u << 3 | 1u << 4 | 1u << 8;
		tk_store_u32(info + 104, nf, false); /* nr_jited_ksyms */
		tk_store_u32(info + 108, nf, false); /* nr_jited_func_lens */
		tk_store_u32(info + 180, nf, false); /* nr_prog_tags */
		tk_store_u64(info + 112, dn, false); /* jited_ksyms */
		for (uint32_t i = 0; i < nf; i++, dn += 8)
			tk_store_u64(data + dn, 0xffffffffc0001000ull + 0x100 * i + id, false);
		tk_store_u64(info + 120, dn, false); /* jited_func_lens */
		for (uint32_t i = 0; i < nf; i++, dn += 4)
			tk_store_u32(data + dn, 16 + i, false);
		dn = (dn + 7) & ~(size_t)7;
		tk_store_u64(info + 184, dn, false); /* prog_tags */
		for (uint32_t i = 0; i < nf; i++)
			for (int k = 0; k < 8; k++)
				data[dn++] = (uint8_t)(0x10 * i + k + id);
	}
	if (nf && btf_id) {
		arrays |= 1u << 5;
		tk_store_u32(info + 128, btf_id, false);
		tk_store_u32(info + 132, 8, false);  /* func_info_rec_size */
		tk_store_u64(info + 136, dn, false); /* func_info */
		tk_store_u32(info + 144, nf, false); /* nr_func_info */
		for (uint32_t i = 0; i < nf; i++, dn += 8) {
			tk_store_u32(data + dn, 2 * i, false);
			tk_store_u32(data + dn + 4, 3, false);
		}
	}
	pl_u32(p, sizeof(info));
	pl_u32(p, (uint32_t)dn);
	pl_u64(p, arrays);
	pl_bytes(p, info, sizeof(info));
	pl_bytes(p, data, dn);
}

struct feat {
	uint32_t id;
	const struct pl *pl;
};

/* A file of two events, cpu-clock and task-clock (ids 11 and 12), one sample, and @nf features. */
static void write_feature_file(const char *path, const struct feat *f, size_t nf)
{
	struct tk_perfdata_writer *w = tk_perfdata_writer_open(path);
	struct tk_perf_attr a0 = sw_attr(0), a1 = sw_attr(1);
	const uint64_t ids0[] = {11}, ids1[] = {12};
	uint8_t rec[64];

	assert_non_null(w);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a0, "cpu-clock"), 0);
	assert_int_equal(tk_perfdata_writer_add_attr(w, &a1, "task-clock"), 1);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 0, ids0, 1), 0);
	assert_int_equal(tk_perfdata_writer_add_ids(w, 1, ids1, 1), 0);
	assert_int_equal(tk_perfdata_writer_write(w, rec, make_sample(rec, 11, 0x401000, 42, 1000)),
			 0);
	for (size_t i = 0; i < nf; i++)
		assert_int_equal(tk_perfdata_writer_set_feature(w, f[i].id, f[i].pl->b, f[i].pl->n),
				 0);
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
}

static const struct tk_perfdata_feature *feature_of(const struct tk_perfdata *pd, uint32_t id)
{
	for (size_t i = 0; i < tk_perfdata_feature_count(pd); i++)
		if (tk_perfdata_feature_get(pd, i)->id == id)
			return tk_perfdata_feature_get(pd, i);
	return NULL;
}

/* The line perf prints, "# " included, must be in @out. */
static void expect_line(const char *out, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n# %s\n", line);
	if (!strstr(out, want))
		fail_msg("perf report --header-only -I lacks \"# %s\"", line);
}

/* bpf_prog_<tag>_<name> as perf names a BPF function (tools/perf/util/bpf-event.c). */
static void bpf_func_name(char *out, size_t cap, const struct tk_perfdata_bpf_prog *bp, uint32_t k)
{
	size_t n = (size_t)snprintf(out, cap, "bpf_prog_");

	for (int i = 0; i < 8; i++)
		n += (size_t)snprintf(out + n, cap - n, "%02x", bp->funcs[k].tag[i]);
	if (bp->funcs[k].btf_name)
		snprintf(out + n, cap - n, "_%s", bp->funcs[k].btf_name);
	else if (bp->nr_funcs == 1)
		snprintf(out + n, cap - n, "_%s", bp->name);
	else
		snprintf(out + n, cap - n, "_F");
}

/*
 * Features this machine's perf cannot record (no hybrid CPUs, no PMU with
 * caps, no branch stacks or AUX area) built by hand in the layouts of
 * perf 6.1's writers, decoded, and checked against what perf report
 * --header-only -I prints for the same file when perf is present: the
 * oracle checks both our layouts and our decoding.
 */
static void test_features_handmade(void **state)
{
	struct pl nrcpus = {.n = 0}, topo = {.n = 0}, numa = {.n = 0}, group = {.n = 0},
		  aux = {.n = 0}, empty = {.n = 0}, cpucaps = {.n = 0}, caps = {.n = 0},
		  hybrid = {.n = 0}, progs = {.n = 0}, btf = {.n = 0};
	const struct feat f[] = {
		{TK_PERF_FEAT_NRCPUS, &nrcpus},
		{TK_PERF_FEAT_CPU_TOPOLOGY, &topo},
		{TK_PERF_FEAT_NUMA_TOPOLOGY, &numa},
		{TK_PERF_FEAT_BRANCH_STACK, &empty},
		{TK_PERF_FEAT_GROUP_DESC, &group},
		{TK_PERF_FEAT_AUXTRACE, &aux},
		{TK_PERF_FEAT_STAT, &empty},
		{TK_PERF_FEAT_BPF_PROG_INFO, &progs},
		{TK_PERF_FEAT_BPF_BTF, &btf},
		{TK_PERF_FEAT_CPU_PMU_CAPS, &cpucaps},
		{TK_PERF_FEAT_HYBRID_TOPOLOGY, &hybrid},
		{TK_PERF_FEAT_PMU_CAPS, &caps},
	};
	const struct tk_perfdata_host *h;
	const struct tk_perfdata_cpu_topology *t;
	char path[256], cmd[512], line[512], name[128], *out;
	struct tk_perfdata *pd;

	(void)state;
	pl_u32(&nrcpus, 4);
	pl_u32(&nrcpus, 4);
	pl_topology(&topo);
	pl_u32(&numa, 1);
	pl_u32(&numa, 0);
	pl_u64(&numa, 1000);
	pl_u64(&numa, 500);
	pl_str(&numa, "0-3");
	pl_u32(&group, 1);
	pl_str(&group, "{anon_group}");
	pl_u32(&group, 0);
	pl_u32(&group, 2);
	pl_u64(&aux, 1);
	pl_u64(&aux, 0x1234);
	pl_u64(&aux, 4096);
	pl_u32(&cpucaps, 2);
	pl_str(&cpucaps, "branches");
	pl_str(&cpucaps, "32");
	pl_str(&cpucaps, "max_precise");
	pl_str(&cpucaps, "3");
	pl_u32(&caps, 2);
	pl_u32(&caps, 1);
	pl_str(&caps, "branches");
	pl_str(&caps, "32");
	pl_str(&caps, "cpu_core");
	pl_u32(&caps, 0);
	pl_str(&caps, "cpu_atom");
	pl_u32(&hybrid, 2);
	pl_str(&hybrid, "cpu_core");
	pl_str(&hybrid, "0-1");
	pl_str(&hybrid, "cpu_atom");
	pl_str(&hybrid, "2-3");
	pl_u32(&progs, 2);
	pl_bpf_prog(&progs, 7, 1, 5);
	pl_bpf_prog(&progs, 8, 2, 0);
	pl_u32(&btf, 1);
	pl_u32(&btf, 5);
	pl_u32(&btf, 24 + 40 + 15);
	pl_btf(&btf, "hand_func");
	assert_int_equal(btf.n, 12 + 24 + 40 + 15);

	path_of(path, sizeof(path), "features.data");
	write_feature_file(path, f, sizeof(f) / sizeof(f[0]));
	warnings = 0;
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_int_equal(warnings, 0);
	for (size_t i = 0; i < tk_perfdata_feature_count(pd); i++)
		assert_true(tk_perfdata_feature_get(pd, i)->valid);
	h = tk_perfdata_get_host(pd);

	t = h->cpu_topology;
	assert_non_null(t);
	assert_int_equal(t->nr_sockets, 1);
	assert_string_equal(t->sockets[0], "0-3");
	assert_int_equal(t->nr_threads, 2);
	assert_string_equal(t->threads[1], "2-3");
	assert_true(t->has_dies);
	assert_int_equal(t->nr_dies, 1);
	assert_int_equal(t->nr_cpus, 4);
	assert_int_equal(t->cpus[3].core_id, 1);
	assert_int_equal(t->cpus[3].socket_id, 0);
	assert_int_equal(h->nr_numa_nodes, 1);
	assert_int_equal(h->numa_nodes[0].mem_free_kb, 500);
	assert_string_equal(h->numa_nodes[0].cpus, "0-3");
	assert_int_equal(h->nr_groups, 1);
	assert_string_equal(h->groups[0].name, "{anon_group}");
	assert_int_equal(h->groups[0].nr_members, 2);
	assert_true(h->has_branch_stack && h->has_stat && h->has_auxtrace);
	assert_int_equal(h->nr_auxtrace, 1);
	assert_int_equal(h->auxtrace[0].file_offset, 0x1234);
	assert_int_equal(h->auxtrace[0].size, 4096);
	assert_non_null(h->cpu_pmu_caps);
	assert_string_equal(h->cpu_pmu_caps->pmu, "cpu");
	assert_int_equal(h->cpu_pmu_caps->nr_caps, 2);
	assert_string_equal(h->cpu_pmu_caps->caps[1].name, "max_precise");
	assert_string_equal(h->cpu_pmu_caps->caps[1].value, "3");
	assert_int_equal(h->nr_pmu_caps, 2);
	assert_string_equal(h->pmu_caps[0].pmu, "cpu_core");
	assert_string_equal(h->pmu_caps[0].caps[0].value, "32");
	assert_string_equal(h->pmu_caps[1].pmu, "cpu_atom");
	assert_int_equal(h->pmu_caps[1].nr_caps, 0);
	assert_int_equal(h->nr_hybrid_nodes, 2);
	assert_string_equal(h->hybrid_nodes[1].pmu, "cpu_atom");
	assert_string_equal(h->hybrid_nodes[1].cpus, "2-3");
	assert_int_equal(h->nr_bpf_progs, 2);
	assert_int_equal(h->bpf_progs[0].id, 7);
	assert_string_equal(h->bpf_progs[0].name, "hand_prog");
	assert_int_equal(h->bpf_progs[0].btf_id, 5);
	assert_int_equal(h->bpf_progs[0].nr_funcs, 1);
	assert_int_equal(h->bpf_progs[0].funcs[0].addr, 0xffffffffc0001007ull);
	assert_int_equal(h->bpf_progs[0].funcs[0].btf_type_id, 3);
	assert_string_equal(h->bpf_progs[0].funcs[0].btf_name, "hand_func");
	assert_int_equal(h->bpf_progs[1].nr_funcs, 2);
	assert_int_equal(h->bpf_progs[1].funcs[1].len, 17);
	assert_int_equal(h->bpf_progs[1].funcs[1].tag[0], 0x18);
	assert_null(h->bpf_progs[1].funcs[1].btf_name);
	assert_int_equal(h->nr_bpf_btfs, 1);
	assert_int_equal(h->bpf_btfs[0].size, 79);

	if (!have_perf()) {
		tk_perfdata_close(pd);
		return;
	}
	snprintf(cmd, sizeof(cmd), "perf report --header-only -I -i %s 2>&1", path);
	out = run(cmd);
	for (uint32_t i = 0; i < t->nr_sockets; i++) {
		snprintf(line, sizeof(line), "sibling sockets : %s", t->sockets[i]);
		expect_line(out, line);
	}
	snprintf(line, sizeof(line), "sibling dies    : %s", t->dies[0]);
	expect_line(out, line);
	for (uint32_t i = 0; i < t->nr_threads; i++) {
		snprintf(line, sizeof(line), "sibling threads : %s", t->threads[i]);
		expect_line(out, line);
	}
	for (uint32_t i = 0; i < t->nr_cpus; i++) {
		snprintf(line, sizeof(line), "CPU %u: Core ID %u, Die ID %u, Socket ID %u", i,
			 t->cpus[i].core_id, t->cpus[i].die_id, t->cpus[i].socket_id);
		expect_line(out, line);
	}
	snprintf(line, sizeof(line),
		 "node%u meminfo  : total = %" PRIu64 " kB, free = %" PRIu64 " kB",
		 h->numa_nodes[0].node, h->numa_nodes[0].mem_total_kb,
		 h->numa_nodes[0].mem_free_kb);
	expect_line(out, line);
	expect_line(out, "group: {cpu-clock,task-clock}");
	expect_line(out, "contains samples with branch stack");
	expect_line(out, "contains AUX area data (e.g. instruction trace)");
	expect_line(out, "contains stat data");
	snprintf(line, sizeof(line), "cpu pmu capabilities: %s=%s, %s=%s",
		 h->cpu_pmu_caps->caps[0].name, h->cpu_pmu_caps->caps[0].value,
		 h->cpu_pmu_caps->caps[1].name, h->cpu_pmu_caps->caps[1].value);
	expect_line(out, line);
	snprintf(line, sizeof(line), "%s pmu capabilities: %s=%s", h->pmu_caps[0].pmu,
		 h->pmu_caps[0].caps[0].name, h->pmu_caps[0].caps[0].value);
	expect_line(out, line);
	snprintf(line, sizeof(line), "%s pmu capabilities: not available", h->pmu_caps[1].pmu);
	expect_line(out, line);
	expect_line(out, "hybrid cpu system:");
	for (uint32_t i = 0; i < h->nr_hybrid_nodes; i++) {
		snprintf(line, sizeof(line), "%s cpu list : %s", h->hybrid_nodes[i].pmu,
			 h->hybrid_nodes[i].cpus);
		expect_line(out, line);
	}
	bpf_func_name(name, sizeof(name), &h->bpf_progs[0], 0);
	snprintf(line, sizeof(line), "bpf_prog_info %u: %s addr 0x%" PRIx64 " size %u",
		 h->bpf_progs[0].id, name, h->bpf_progs[0].funcs[0].addr,
		 h->bpf_progs[0].funcs[0].len);
	expect_line(out, line);
	snprintf(line, sizeof(line), "bpf_prog_info %u:", h->bpf_progs[1].id);
	expect_line(out, line);
	for (uint32_t k = 0; k < h->bpf_progs[1].nr_funcs; k++) {
		bpf_func_name(name, sizeof(name), &h->bpf_progs[1], k);
		snprintf(line, sizeof(line), "\tsub_prog %u: %s addr 0x%" PRIx64 " size %u", k,
			 name, h->bpf_progs[1].funcs[k].addr, h->bpf_progs[1].funcs[k].len);
		expect_line(out, line);
	}
	snprintf(line, sizeof(line), "btf info of id %u", h->bpf_btfs[0].id);
	expect_line(out, line);
	free(out);
	tk_perfdata_close(pd);
}

/*
 * A feature that does not fit its layout is skipped (valid false, host
 * fields unset) with a warning naming the file and the offset of the part
 * that did not fit: @bad_at bytes into the payload.
 */
static void expect_malformed(const char *name, uint32_t id, const struct pl *p, size_t bad_at)
{
	struct pl nrcpus = {.n = 0};
	const struct feat f[] = {{TK_PERF_FEAT_NRCPUS, &nrcpus}, {id, p}};
	const struct tk_perfdata_feature *ft;
	char path[256], want[64];
	struct tk_perfdata *pd;

	pl_u32(&nrcpus, 4);
	pl_u32(&nrcpus, 4);
	path_of(path, sizeof(path), name);
	write_feature_file(path, f, 2);
	last_warning[0] = 0;
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	ft = feature_of(pd, id);
	assert_non_null(ft);
	assert_false(ft->valid);
	snprintf(want, sizeof(want), "offset 0x%" PRIx64 ": feature %s", ft->offset + bad_at,
		 tk_perfdata_feature_name(id));
	if (!strstr(last_warning, path) || !strstr(last_warning, want) ||
	    !strstr(last_warning, "is malformed"))
		fail_msg("warning \"%s\" lacks \"%s\" or \"%s\"", last_warning, path, want);
	tk_perfdata_close(pd);
}

static void test_features_malformed(void **state)
{
	struct pl p;
	const struct tk_perfdata_host *h;
	struct tk_perfdata *pd;
	char path[256];

	(void)state;
	/* CPU_TOPOLOGY: a socket count past the end; ids, a string, die ids cut short. */
	p = (struct pl){.n = 0};
	pl_topology(&p);
	tk_store_u32(p.b, 0x7fffffff, false);
	expect_malformed("topo-count.data", TK_PERF_FEAT_CPU_TOPOLOGY, &p, 0);
	p.n = 0;
	pl_topology(&p);
	p.n = 212 + 16;
	expect_malformed("topo-ids.data", TK_PERF_FEAT_CPU_TOPOLOGY, &p, 212);
	p.n = 72 + 4 + 68 + 10;
	expect_malformed("topo-string.data", TK_PERF_FEAT_CPU_TOPOLOGY, &p, 72 + 4 + 68);
	p.n = 0;
	pl_topology(&p);
	p.n -= 4;
	expect_malformed("topo-dies.data", TK_PERF_FEAT_CPU_TOPOLOGY, &p, 316);
	path_of(path, sizeof(path), "topo-dies.data");
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_null(tk_perfdata_get_host(pd)->cpu_topology);
	tk_perfdata_close(pd);

	/* NUMA node, group, AUXTRACE index, caps, hybrid: counts past the end. */
	p = (struct pl){.n = 0};
	pl_u32(&p, 1000);
	pl_u32(&p, 0);
	pl_u64(&p, 1);
	pl_u64(&p, 1);
	pl_str(&p, "0-3");
	expect_malformed("numa.data", TK_PERF_FEAT_NUMA_TOPOLOGY, &p, 0);
	tk_store_u32(p.b, 2, false); /* fits the count check; node 1 is missing */
	expect_malformed("numa2.data", TK_PERF_FEAT_NUMA_TOPOLOGY, &p, p.n);
	p = (struct pl){.n = 0};
	pl_u32(&p, 1);
	pl_str(&p, "{anon_group}");
	pl_u32(&p, 0);
	expect_malformed("group.data", TK_PERF_FEAT_GROUP_DESC, &p, 72);
	p = (struct pl){.n = 0};
	pl_u64(&p, 1000);
	pl_u64(&p, 0);
	pl_u64(&p, 8);
	expect_malformed("auxtrace.data", TK_PERF_FEAT_AUXTRACE, &p, 0);
	p = (struct pl){.n = 0};
	pl_u32(&p, 1);
	pl_str(&p, "branches");
	pl_u32(&p, 4000); /* the value's length runs past the end */
	expect_malformed("cpucaps.data", TK_PERF_FEAT_CPU_PMU_CAPS, &p, 72);
	p = (struct pl){.n = 0};
	pl_u32(&p, 3);
	pl_u32(&p, 0);
	pl_str(&p, "cpu_core");
	pl_u32(&p, 0);
	expect_malformed("pmucaps.data", TK_PERF_FEAT_PMU_CAPS, &p, p.n);
	p = (struct pl){.n = 0};
	pl_u32(&p, 1);
	pl_str(&p, "cpu_core");
	pl_u32(&p, 4);
	pl_bytes(&p, "0-15", 4); /* no NUL inside its length */
	expect_malformed("hybrid.data", TK_PERF_FEAT_HYBRID_TOPOLOGY, &p, 72);

	/* BPF: data past the end; function arrays outside the program's data; BTF size. */
	p = (struct pl){.n = 0};
	pl_u32(&p, 1);
	pl_bpf_prog(&p, 9, 1, 0);
	p.n -= 8;
	expect_malformed("bpf-data.data", TK_PERF_FEAT_BPF_PROG_INFO, &p, 4);
	p = (struct pl){.n = 0};
	pl_u32(&p, 1);
	pl_bpf_prog(&p, 9, 2, 0);
	tk_store_u64(p.b + 4 + 16 + 112, 4096, false); /* jited_ksyms offset */
	expect_malformed("bpf-arrays.data", TK_PERF_FEAT_BPF_PROG_INFO, &p, 4);
	p = (struct pl){.n = 0};
	pl_u32(&p, 2);
	pl_u32(&p, 5);
	pl_u32(&p, 79);
	pl_btf(&p, "hand_func");
	expect_malformed("btf.data", TK_PERF_FEAT_BPF_BTF, &p, 4 + 8 + 79);

	/*
	 * Old perf: CPU_TOPOLOGY without die part, or without any ids, is
	 * valid. Without NRCPUS the per-CPU ids cannot be counted: the lists
	 * are kept and a warning names the offset of the ids.
	 */
	p = (struct pl){.n = 0};
	pl_topology(&p);
	p.n = 244;
	{
		struct pl nrcpus = {.n = 0};
		const struct feat f[] = {{TK_PERF_FEAT_NRCPUS, &nrcpus},
					 {TK_PERF_FEAT_CPU_TOPOLOGY, &p}};
		const struct tk_perfdata_feature *ft;
		char want[64];

		pl_u32(&nrcpus, 4);
		pl_u32(&nrcpus, 4);
		path_of(path, sizeof(path), "topo-old.data");
		write_feature_file(path, f, 2);
		pd = tk_perfdata_open(path);
		assert_non_null(pd);
		h = tk_perfdata_get_host(pd);
		assert_non_null(h->cpu_topology);
		assert_false(h->cpu_topology->has_dies);
		assert_int_equal(h->cpu_topology->nr_cpus, 4);
		assert_int_equal(h->cpu_topology->cpus[2].core_id, 1);
		tk_perfdata_close(pd);

		p.n = 212;
		write_feature_file(path, f, 2);
		pd = tk_perfdata_open(path);
		assert_non_null(pd);
		h = tk_perfdata_get_host(pd);
		assert_non_null(h->cpu_topology);
		assert_int_equal(h->cpu_topology->nr_cpus, 0);
		assert_null(h->cpu_topology->cpus);
		tk_perfdata_close(pd);

		p.n = 332;
		write_feature_file(path, f + 1, 1);
		last_warning[0] = 0;
		pd = tk_perfdata_open(path);
		assert_non_null(pd);
		h = tk_perfdata_get_host(pd);
		ft = feature_of(pd, TK_PERF_FEAT_CPU_TOPOLOGY);
		assert_true(ft->valid);
		assert_int_equal(h->cpu_topology->nr_threads, 2);
		assert_int_equal(h->cpu_topology->nr_cpus, 0);
		snprintf(want, sizeof(want), "topo-old.data: offset 0x%" PRIx64 ": CPU_TOPOLOGY",
			 ft->offset + 212);
		if (!strstr(last_warning, want) || !strstr(last_warning, "NRCPUS"))
			fail_msg("warning \"%s\" lacks \"%s\"", last_warning, want);
		tk_perfdata_close(pd);
	}
}

/*
 * Set feature @bit of a finished file: a table entry {0, 0} (like perf's
 * slack entries) is inserted where the bit's slot falls, the payloads
 * after it moved down by 16 bytes.
 */
static void add_feature_bit(const char *path, uint32_t bit)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	uint8_t *b;
	uint64_t doff, dsize, words[4], table, slot = 0, nr = 0;

	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	b = calloc(1, (size_t)st.st_size + 16);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
	doff = tk_load_u64(b + 40, false);
	dsize = tk_load_u64(b + 48, false);
	for (int i = 0; i < 4; i++) {
		words[i] = tk_load_u64(b + 72 + 8 * i, false);
		nr += (uint64_t)__builtin_popcountll(words[i]);
		if (i < (int)(bit / 64))
			slot += (uint64_t)__builtin_popcountll(words[i]);
	}
	slot += (uint64_t)__builtin_popcountll(words[bit / 64] & ((1ull << (bit % 64)) - 1));
	table = doff + dsize;
	for (uint64_t i = 0; i < nr; i++)
		tk_store_u64(b + table + 16 * i, tk_load_u64(b + table + 16 * i, false) + 16,
			     false);
	memmove(b + table + 16 * (slot + 1), b + table + 16 * slot,
		(size_t)st.st_size - (table + 16 * slot));
	memset(b + table + 16 * slot, 0, 16);
	words[bit / 64] |= 1ull << (bit % 64);
	for (int i = 0; i < 4; i++)
		tk_store_u64(b + 72 + 8 * i, words[i], false);
	assert_int_equal(pwrite(fd, b, (size_t)st.st_size + 16, 0), st.st_size + 16);
	close(fd);
	free(b);
}

/*
 * A feature bit unknown to perf 6.1 is skipped with a warning at the
 * header's bitmap word that holds it (0x48 for bits 0-63, 0x50 for 64-127)
 * or, in pipe mode, at the id of its HEADER_FEATURE record; the known
 * features after it still decode.
 */
/*
 * tk_perfdata_next_samples() hands out what tk_perfdata_next() would, in
 * the same order: one reader taking runs of samples (then one record by
 * tk_perfdata_next() when a run ends) against one taking every record
 * alone, over corpus files and a copy with damaged sample sizes; an
 * evsel it names is the one tk_perfdata_parse_sample() gives, and both
 * readers list the same damage.
 */
struct seen {
	uint64_t offset;
	uint32_t type, size;
};

static size_t read_alone(const char *path, struct seen *out, size_t cap, size_t *ndamage)
{
	struct tk_perfdata *pd = tk_perfdata_open_opts(path, NULL);
	struct tk_perf_record rec;
	size_t n = 0;

	assert_non_null(pd);
	while (tk_perfdata_next(pd, &rec) > 0) {
		assert_true(n < cap);
		out[n++] = (struct seen){rec.offset, rec.type, rec.size};
	}
	*ndamage = tk_perfdata_damage_count(pd);
	tk_perfdata_close(pd);
	return n;
}

static size_t check_runs(const char *path)
{
	enum { CAP = 200000 };
	struct seen *alone = calloc(CAP, sizeof(*alone));
	struct tk_perfdata *pd = tk_perfdata_open_opts(path, NULL);
	struct tk_perf_sref refs[7];
	struct tk_perf_record rec;
	size_t nalone, ndamage, i = 0, runs = 0;
	const uint8_t *map;
	uint64_t map_len;

	assert_non_null(alone);
	assert_non_null(pd);
	nalone = read_alone(path, alone, CAP, &ndamage);
	map = tk_perfdata_mapping(pd, &map_len);
	assert_non_null(map);
	for (;;) {
		size_t n = tk_perfdata_next_samples(pd, refs, 7);

		runs += n > 0;
		for (size_t k = 0; k < n; k++, i++) {
			struct tk_perf_sample s;

			assert_true(i < nalone);
			assert_int_equal(refs[k].offset, alone[i].offset);
			assert_int_equal(refs[k].size, alone[i].size);
			assert_int_equal(alone[i].type, TK_PERF_RECORD_SAMPLE);
			if (refs[k].evsel < 0)
				continue;
			rec = (struct tk_perf_record){
				.type = TK_PERF_RECORD_SAMPLE,
				.misc = tk_load_u16(map + refs[k].offset + 4, false),
				.size = (uint16_t)refs[k].size,
				.offset = refs[k].offset,
				.data = map + refs[k].offset};
			assert_int_equal(tk_perfdata_parse_sample(pd, &rec, &s), 0);
			assert_int_equal(s.attr_index, refs[k].evsel);
		}
		if (n)
			continue;
		if (tk_perfdata_next(pd, &rec) <= 0)
			break;
		assert_true(i < nalone);
		assert_int_equal(rec.offset, alone[i].offset);
		assert_int_equal(rec.type, alone[i].type);
		assert_int_equal(rec.size, alone[i].size);
		i++;
	}
	assert_int_equal(i, nalone);
	assert_int_equal(tk_perfdata_damage_count(pd), ndamage);
	tk_perfdata_close(pd);
	free(alone);
	return runs;
}

static void test_sample_runs(void **state)
{
	static const char *const files[] = {"tracepoints.data", "two-events.data",
					    "kctx-user-ips.data", "group-read-g.data",
					    "chain-zero.data"};
	const char *src = getenv("TK_SOURCE_DIR");
	char path[4096], copy[256];
	struct tk_perfdata *pd;
	struct tk_perf_record rec;
	uint8_t *b;
	size_t len, hits = 0, runs = 0;
	FILE *f;

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/tests/data/perf/%s", src ? src : ".", files[i]);
		runs += check_runs(path);
	}
	assert_true(runs > 0);
	/* A strict reader takes every record alone (no time kept for resync()). */
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	assert_int_equal(tk_perfdata_next_samples(pd, &(struct tk_perf_sref){0}, 1), 0);
	tk_perfdata_close(pd);
	/* Every 97th sample of a 2 k-sample file 8 bytes longer: resync() between the runs. */
	snprintf(path, sizeof(path), "%s/tests/data/perf/public-perf42-nokmap.data",
		 src ? src : ".");
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = (size_t)ftell(f);
	rewind(f);
	b = malloc(len);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, len, f), len);
	fclose(f);
	pd = tk_perfdata_open_opts(path, NULL);
	assert_non_null(pd);
	for (size_t n = 0; tk_perfdata_next(pd, &rec) > 0;) {
		if (rec.type == TK_PERF_RECORD_SAMPLE && ++n % 97 == 0) {
			uint16_t size = (uint16_t)(rec.size + 8);

			memcpy(b + rec.offset + 6, &size, 2);
			hits++;
		}
	}
	tk_perfdata_close(pd);
	assert_true(hits > 0);
	path_of(copy, sizeof(copy), "runs-damaged.data");
	f = fopen(copy, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	fclose(f);
	free(b);
	assert_true(check_runs(copy) > 0);
}

static void test_unknown_feature(void **state)
{
	struct pl nrcpus = {.n = 0}, topo = {.n = 0};
	const struct feat f[] = {{TK_PERF_FEAT_NRCPUS, &nrcpus},
				 {TK_PERF_FEAT_CPU_TOPOLOGY, &topo}};
	static const struct {
		uint32_t bit;
		const char *want;
	} cases[] = {
		{64, "unknown.data: offset 0x50: unknown feature 64 skipped"},
		{40, "unknown.data: offset 0x48: unknown feature 40 skipped"},
		{200, "unknown.data: offset 0x60: unknown feature 200 skipped"},
	};
	uint8_t buf[512], attr[128];
	struct tk_perf_attr a = sw_attr(0);
	struct tk_perfdata *pd;
	char path[256];
	size_t len;

	(void)state;
	pl_u32(&nrcpus, 4);
	pl_u32(&nrcpus, 4);
	pl_topology(&topo);
	path_of(path, sizeof(path), "unknown.data");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_feature_file(path, f, 2);
		add_feature_bit(path, cases[i].bit);
		last_warning[0] = 0;
		pd = tk_perfdata_open(path);
		assert_non_null(pd);
		if (!strstr(last_warning, cases[i].want))
			fail_msg("warning \"%s\" lacks \"%s\"", last_warning, cases[i].want);
		assert_non_null(tk_perfdata_get_host(pd)->cpu_topology);
		assert_int_equal(tk_perfdata_get_host(pd)->cpu_topology->nr_cpus, 4);
		tk_perfdata_close(pd);
	}

	/* Pipe mode: HEADER_ATTR at 16 (144 bytes), HEADER_FEATURE id 40 at 160. */
	tk_store_u64(buf, TK_PERF_MAGIC, false);
	tk_store_u64(buf + 8, 16, false);
	len = 16;
	tk_store_u32(buf + len, TK_PERF_RECORD_HEADER_ATTR, false);
	tk_store_u16(buf + len + 4, 0, false);
	tk_store_u16(buf + len + 6, 8 + 128 + 8, false);
	tk_perfdata_attr_encode(&a, attr);
	memcpy(buf + len + 8, attr, 128);
	tk_store_u64(buf + len + 136, 7, false);
	len += 144;
	tk_store_u32(buf + len, TK_PERF_RECORD_HEADER_FEATURE, false);
	tk_store_u16(buf + len + 4, 0, false);
	tk_store_u16(buf + len + 6, 16 + 8, false);
	tk_store_u64(buf + len + 8, 40, false);
	tk_store_u64(buf + len + 16, 0, false);
	len += 24;
	tk_store_u32(buf + len, TK_PERF_RECORD_HEADER_FEATURE, false);
	tk_store_u16(buf + len + 4, 0, false);
	tk_store_u16(buf + len + 6, 16, false);
	tk_store_u64(buf + len + 8, TK_PERF_FEAT_LAST, false);
	len += 16;
	path_of(path, sizeof(path), "unknown-pipe.data");
	write_file(path, buf, len);
	last_warning[0] = 0;
	pd = tk_perfdata_open(path);
	assert_non_null(pd);
	if (!strstr(last_warning, "unknown-pipe.data: offset 0xa8: unknown feature 40 skipped"))
		fail_msg("warning \"%s\" lacks the HEADER_FEATURE id offset 0xa8", last_warning);
	tk_perfdata_close(pd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_killed_writer),
		cmocka_unit_test(test_early_features),
		cmocka_unit_test(test_pipe),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_append_mismatch),
		cmocka_unit_test(test_perf_files),
		cmocka_unit_test(test_perf_oracle_writer),
		cmocka_unit_test(test_report_order),
		cmocka_unit_test(test_features_handmade),
		cmocka_unit_test(test_features_malformed),
		cmocka_unit_test(test_unknown_feature),
		cmocka_unit_test(test_sample_runs),
		cmocka_unit_test(test_report_order_runs),
	};

	return cmocka_run_group_tests(tests, setup, tk_tmpdir_teardown);
}
