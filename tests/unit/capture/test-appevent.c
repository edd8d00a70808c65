// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of application events: the definition macros, events off without
 * a recorder, a session that receives several threads' buffers and nested
 * signal-handler events and writes them into a .dat ("user" buffer) with
 * exact payloads, loss accounting in both modes (file + lost = emitted),
 * a forked child's own buffers and ids, and a recorder that goes away.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <tracekit/appevent.h>
#include <tracekit/dat.h>
#include <tracekit/page.h>
#include <tracekit/tracedata.h>

#include "tk-test-texts.h"
#include "tk-tmpdir.h"

TK_APPEVENT_DEFINE(tktest, ints, TK_APPEVENT_PRINT("seq=%u v=%lld b=%u", REC->seq, REC->v, REC->b),
		   TK_AE_FIELD(uint32_t, seq), TK_AE_FIELD(int64_t, v), TK_AE_FIELD(uint8_t, b));
TK_APPEVENT_DEFINE(tktest, str, TK_APPEVENT_PRINT("seq=%u s=%s", REC->seq, __get_str(s)),
		   TK_AE_FIELD(uint32_t, seq), TK_AE_STRING(s));
TK_APPEVENT_DEFINE(tktest, arr, TK_APPEVENT_PRINT("seq=%u", REC->seq), TK_AE_FIELD(uint32_t, seq),
		   TK_AE_ARRAY(uint16_t, a, 5));

/*
 * Fixed-size records of every size class tk_appevent_write() copies
 * differently (fields of 1, 5, 9, 16, 23, 32, 40 and 104 bytes), and one
 * past the inline length limit (120: the general path, length word).
 */
#define SIZE_TYPE(n)                                                                               \
	TK_APPEVENT_DEFINE(tksize, sz##n, TK_APPEVENT_PRINT("a=%s", __print_hex(REC->a, n)),       \
			   TK_AE_ARRAY(uint8_t, a, n))
SIZE_TYPE(1);
SIZE_TYPE(5);
SIZE_TYPE(9);
SIZE_TYPE(16);
SIZE_TYPE(23);
SIZE_TYPE(32);
SIZE_TYPE(40);
SIZE_TYPE(104);
SIZE_TYPE(120);

/*
 * Strings through tk_appevent_write_str(): after a 1-byte field (3 bytes of
 * padding before the string), and two strings around an array and a u32
 * (2 bytes of padding), short records (the fast path) and ones past 112
 * bytes (the general path, with the kernel's length word), NULL and "".
 */
TK_APPEVENT_DEFINE(tkstr, pad, TK_APPEVENT_PRINT("b=%u s=%s", REC->b, __get_str(s)),
		   TK_AE_FIELD(uint8_t, b), TK_AE_STRING(s));
TK_APPEVENT_DEFINE(tkstr, two,
		   TK_APPEVENT_PRINT("a=%s x=%s n=%u y=%s", __print_array(REC->a, 3, 2),
				     __get_str(x), REC->n, __get_str(y)),
		   TK_AE_ARRAY(uint16_t, a, 3), TK_AE_STRING(x), TK_AE_FIELD(uint32_t, n),
		   TK_AE_STRING(y));

/* The layout TK_APPEVENT_DEFINE makes of tktest:ints: packed, 4-byte aligned. */
struct __attribute__((packed, aligned(4))) rec_ints {
	struct tk_appevent_common c;
	uint32_t seq;
	int64_t v;
	uint8_t b;
};

/* The watcher thread writes the word: read it as TK_APPEVENT does. */
static uint32_t events_on(void)
{
	return __atomic_load_n(&tk_appevent_on, __ATOMIC_RELAXED);
}

#define THREADS	   4
#define PER_THREAD 3000
#define NESTED	   50

static int base_dat(char *path, size_t cap)
{
	TK_OPTS(tk_dat_writer_opts, o, .version = 7, .page_size = 4096);
	static const char clock[] = "local global counter [mono]\n";
	struct tk_page_format fmt;
	struct tk_tracedata *td = tk_tracedata_new();
	static const uint8_t kernel_rec[12] = {7, 0, 0, 0, 42, 0, 0, 0, 1, 2, 3, 4};
	static uint8_t page[4096];
	struct tk_page_writer pw;
	struct tk_dat_writer *w;
	char hp[1024];
	size_t hp_len;

	snprintf(path, cap, "%s/base-%d.dat", tmpdir, rand());
	assert_int_equal(tk_page_format_init(&fmt, 4096, 8, false), 0);
	hp_len = tk_page_format_header_text(&fmt, hp, sizeof(hp));
	assert_int_equal(tk_tracedata_set_header_page(td, hp, hp_len), 0);
	assert_int_equal(tk_tracedata_set_header_event(td, tk_test_header_event,
						       strlen(tk_test_header_event)),
			 0);
	w = tk_dat_writer_open(path, &o);
	assert_non_null(w);
	assert_int_equal(tk_dat_writer_add_tracedata(w, td), 0);
	assert_int_equal(
		tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, clock, sizeof(clock)), 0);
	/*
	 * The kernel's part: two CPUs, data on CPU 1 only (a v7 buffer then
	 * lists CPU 1 alone), which the rewrite must keep as it is.
	 */
	assert_int_equal(tk_dat_writer_begin_buffer(w, "", "mono", 4096, 2), 0);
	assert_int_equal(tk_dat_writer_begin_cpu(w, 1), 0);
	assert_int_equal(tk_page_writer_init(&pw, &fmt, page, 1000), 0);
	assert_int_equal(tk_page_writer_add(&pw, 1000, kernel_rec, sizeof(kernel_rec)), 0);
	tk_page_writer_finish(&pw);
	assert_int_equal(tk_dat_writer_write_pages(w, page, sizeof(page)), 0);
	assert_int_equal(tk_dat_writer_end_cpu(w), 0);
	assert_int_equal(tk_dat_writer_end_buffer(w), 0);
	assert_int_equal(tk_dat_writer_finish(w), 0);
	tk_dat_writer_close(w);
	tk_tracedata_free(td);
	return 0;
}

static struct tk_appevent_session *session(uint32_t kb, enum tk_appevent_mode mode)
{
	TK_OPTS(tk_appevent_opts, o, .dir = tmpdir, .buffer_kb = kb, .mode = mode);
	struct tk_appevent_session *s = tk_appevent_session_new(&o);

	if (!s)
		fail_msg("session: %s", tk_errmsg());
	if (tk_appevent_connect(tk_appevent_session_path(s)) < 0)
		fail_msg("connect: %s", tk_errmsg());
	assert_int_equal(events_on(), 1);
	return s;
}

/* What a file's "user" buffer holds, per event type. */
struct counts {
	uint64_t ints, str, arr, bad, total, last_ts;
	uint64_t missed; /* the pages' stored missed-events counts */
	bool ordered;
};

/* @path's "user" buffer as one merge (the file open in *@dat, the buffer's index in *@user). */
static struct tk_dat_merge *user_merge(const char *path, struct tk_dat **dat, size_t *user)
{
	struct tk_dat_merge *m;

	*dat = tk_dat_open(path);
	if (!*dat)
		fail_msg("open %s: %s", path, tk_errmsg());
	*user = SIZE_MAX;
	for (size_t i = 0; i < tk_dat_buffer_count(*dat); i++)
		if (!strcmp(tk_dat_buffer_get(*dat, i)->name, "user"))
			*user = i;
	assert_true(*user != SIZE_MAX);
	m = tk_dat_merge_new(*dat, user, 1);
	assert_non_null(m);
	return m;
}

static void read_user(const char *path, struct counts *c, int32_t only_pid)
{
	struct tk_dat_merge_record mr;
	struct tk_dat *dat;
	size_t user;
	struct tk_dat_merge *m = user_merge(path, &dat, &user);
	int r;

	/* The kernel's buffer came through the rewrite as base_dat() wrote it. */
	assert_int_equal(tk_dat_buffer_get(dat, 0)->name[0], 0);
	assert_int_equal(tk_dat_buffer_get(dat, 0)->cpu_count, 1);
	assert_int_equal(tk_dat_buffer_get(dat, 0)->cpus[0].cpu, 1);
	memset(c, 0, sizeof(*c));
	c->ordered = true;
	while ((r = tk_dat_merge_next(m, &mr)) > 0) {
		const uint8_t *d = mr.rec.data;
		struct tk_appevent_common cm;

		memcpy(&cm, d, sizeof(cm));
		if (mr.ts < c->last_ts)
			c->ordered = false;
		c->last_ts = mr.ts;
		if (only_pid && cm.pid != only_pid)
			continue;
		c->total++;
		if (cm.type == tk__ae_type_tktest_ints.id) {
			struct rec_ints ri;

			memcpy(&ri, d, sizeof(ri));
			if (ri.v != (int64_t)ri.seq * -3 || ri.b != (uint8_t)ri.seq)
				c->bad++;
			c->ints++;
		} else if (cm.type == tk__ae_type_tktest_str.id) {
			uint32_t seq, loc;
			char want[32];

			memcpy(&seq, d + 8, 4);
			memcpy(&loc, d + 12, 4);
			snprintf(want, sizeof(want), "s-%u", seq);
			if ((loc >> 16) != strlen(want) + 1 ||
			    (loc & 0xffff) + (loc >> 16) > mr.rec.size ||
			    memcmp(d + (loc & 0xffff), want, strlen(want) + 1))
				c->bad++;
			c->str++;
		} else if (cm.type == tk__ae_type_tktest_arr.id) {
			uint32_t seq;
			uint16_t a[5];

			memcpy(&seq, d + 8, 4);
			memcpy(a, d + 12, sizeof(a));
			for (int k = 0; k < 5; k++)
				if (a[k] != (uint16_t)(seq + k))
					c->bad++;
			c->arr++;
		} else {
			c->bad++;
		}
	}
	assert_int_equal(r, 0);
	tk_dat_merge_free(m);
	for (size_t i = 0; i < tk_dat_buffer_get(dat, user)->cpu_count; i++) {
		const struct tk_dat_buffer *b = tk_dat_buffer_get(dat, user);
		struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(dat, user, i);
		struct tk_page_header h;
		const void *page;

		assert_non_null(rd);
		while (tk_dat_cpu_reader_next_page(rd, &page, NULL) > 0) {
			assert_int_equal(tk_page_read_header(&b->page_format, page,
							     b->page_format.page_size, &h),
					 0);
			if (h.missed_events && h.missed_stored)
				c->missed += h.missed_count;
		}
		tk_dat_cpu_reader_free(rd);
	}
	tk_dat_close(dat);
}

static void emit(uint32_t seq)
{
	uint16_t a[5];
	char s[32];

	for (int k = 0; k < 5; k++)
		a[k] = (uint16_t)(seq + k);
	snprintf(s, sizeof(s), "s-%u", seq);
	switch (seq % 3) {
	case 0:
		TK_APPEVENT(tktest, ints, seq, (int64_t)seq * -3, (uint8_t)seq);
		break;
	case 1:
		TK_APPEVENT(tktest, str, seq, s);
		break;
	default:
		TK_APPEVENT(tktest, arr, seq, a);
		break;
	}
}

static void test_off_without_recorder(void **state)
{
	(void)state;
	assert_null(getenv(TK_APPEVENT_ENV));
	assert_int_equal(events_on(), 0);
	/* Registered by the constructors, with an id even without a recorder. */
	assert_non_null(tk__ae_type_tktest_ints.fields);
	assert_int_equal(tk__ae_type_tktest_ints.nr_fields, 3);
	assert_int_equal(tk__ae_type_tktest_str.fields[1].kind, TK_APPEVENT_STRING);
	assert_int_equal(tk__ae_type_tktest_arr.fields[1].size, 10);
	assert_int_equal(tk__ae_type_tktest_ints.fields[1].is_signed, 1);
	assert_int_equal(tk__ae_type_tktest_ints.fields[0].is_signed, 0);
	assert_int_equal(tk__ae_type_tktest_ints.fields[1].offset, 12);
	assert_int_equal(tk__ae_type_tktest_ints.fixed_size, sizeof(struct rec_ints));
	emit(1);
	assert_int_equal(tk_appevent_lost(), 0);
	assert_int_equal(tk_appevent_connect(NULL), -ENOENT);
}

static void *worker(void *arg)
{
	uint32_t base = (uint32_t)(uintptr_t)arg;

	for (uint32_t i = 0; i < PER_THREAD; i++)
		emit(base + i);
	return NULL;
}

static volatile uint32_t nested_seq;

static void on_usr1(int sig)
{
	(void)sig;
	emit(nested_seq);
}

/*
 * Several threads at once, and a signal handler's event inside an event
 * of the interrupted thread (reserve, raise, commit): every event arrives
 * once with its payload, in time order.
 */
static void test_threads_and_signals(void **state)
{
	struct tk_appevent_session *s = session(1024, TK_APPEVENT_DROP_NEWEST);
	struct sigaction sa = {.sa_handler = on_usr1};
	pthread_t th[THREADS];
	struct counts c;
	uint64_t lost0 = tk_appevent_lost();
	char path[512];

	(void)state;
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i * PER_THREAD)),
			0);
	for (uint32_t i = 0; i < NESTED; i++) {
		struct rec_ints *r = tk_appevent_reserve(&tk__ae_type_tktest_ints, sizeof(*r));
		uint32_t seq = THREADS * PER_THREAD + 2 * i;

		assert_non_null(r);
		nested_seq = seq + 1;
		raise(SIGUSR1);
		r->seq = seq;
		r->v = (int64_t)seq * -3;
		r->b = (uint8_t)seq;
		tk_appevent_commit(r);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	signal(SIGUSR1, SIG_DFL);
	assert_int_equal(tk_appevent_session_stop(s), 0);
	/* Threads and levels: at least the workers, the main thread and its handler. */
	assert_true(tk_appevent_session_buffers(s) >= THREADS + 2);
	base_dat(path, sizeof(path));
	if (tk_appevent_session_write(s, path) < 0)
		fail_msg("write: %s", tk_errmsg());
	read_user(path, &c, 0);
	assert_int_equal(tk_appevent_lost() - lost0, 0);
	assert_int_equal(c.total, THREADS * PER_THREAD + 2 * NESTED);
	assert_int_equal(c.bad, 0);
	assert_true(c.ordered);
	tk_appevent_session_free(s);
	tk_appevent_disconnect();
}

/*
 * Small buffers, no time to drain: what the file holds plus what was lost
 * is what was emitted, and losses are marked.
 */
static void check_loss(uint32_t kb, enum tk_appevent_mode mode, uint32_t n)
{
	struct tk_appevent_session *s = session(kb, mode);
	struct tk_appevent_buffer_stats st;
	uint64_t lost0 = tk_appevent_lost(), lost_buffers = 0;
	struct counts c;
	char path[512];

	for (uint32_t i = 0; i < n; i++)
		emit(i);
	assert_int_equal(tk_appevent_session_stop(s), 0);
	for (size_t i = 0; i < tk_appevent_session_buffers(s); i++) {
		assert_int_equal(tk_appevent_session_buffer_stats(s, i, &st), 0);
		lost_buffers += st.lost;
	}
	base_dat(path, sizeof(path));
	assert_int_equal(tk_appevent_session_write(s, path), 0);
	read_user(path, &c, 0);
	assert_int_equal(c.bad, 0);
#if defined(__SANITIZE_THREAD__)
	/* Instrumented writers can be slower than the recorder: then nothing is lost to count. */
	if (tk_appevent_lost() == lost0 && c.total == n)
		skip();
#endif
	assert_true(tk_appevent_lost() - lost0 > 0);
	assert_int_equal(tk_appevent_lost() - lost0, lost_buffers);
	assert_int_equal(c.total + lost_buffers, n);
	/*
	 * Every loss is marked in the pages, as the kernel marks its own; the
	 * count only where the page has room after its data (with 8 KiB
	 * buffers, always here), else the flag alone.
	 */
	if (kb == 8)
		assert_int_equal(c.missed, lost_buffers);
	else
		assert_true(c.missed <= lost_buffers);
	tk_appevent_session_free(s);
	tk_appevent_disconnect();
}

static void test_loss_drop_newest(void **state)
{
	(void)state;
	check_loss(8, TK_APPEVENT_DROP_NEWEST, 20000);
}

/*
 * A burst that fills most of a 64 KiB drop-newest buffer before the
 * recorder's pass: over half full, its pages go through the page cache
 * (splice) rather than O_DIRECT, and everything still adds up.
 */
static void test_loss_drop_newest_burst(void **state)
{
	(void)state;
	check_loss(64, TK_APPEVENT_DROP_NEWEST, 20000);
}

static void test_loss_overwrite(void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* A copy the writer overwrites is a race by design (dropped after its cmpxchg fails). */
	skip();
#endif
	check_loss(8, TK_APPEVENT_OVERWRITE, 20000);
}

/*
 * A recorder racing a writer that laps 64 KiB: its batches are torn and
 * redone, and what it copied plus what was overwritten still adds up.
 */
static void test_loss_overwrite_race(void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	skip();
#endif
	check_loss(64, TK_APPEVENT_OVERWRITE, 400000);
}

static const struct tk_appevent_type *const size_types[] = {
	&tk__ae_type_tksize_sz1,  &tk__ae_type_tksize_sz5,   &tk__ae_type_tksize_sz9,
	&tk__ae_type_tksize_sz16, &tk__ae_type_tksize_sz23,  &tk__ae_type_tksize_sz32,
	&tk__ae_type_tksize_sz40, &tk__ae_type_tksize_sz104, &tk__ae_type_tksize_sz120};
static const uint32_t sizes[] = {1, 5, 9, 16, 23, 32, 40, 104, 120};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Event @seq: type seq % NSIZES, bytes seq * 7 + i. */
static void emit_size(uint32_t seq)
{
	uint8_t a[120];

	for (uint32_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(seq * 7 + i);
	switch (seq % NSIZES) {
	case 0:
		TK_APPEVENT(tksize, sz1, a);
		break;
	case 1:
		TK_APPEVENT(tksize, sz5, a);
		break;
	case 2:
		TK_APPEVENT(tksize, sz9, a);
		break;
	case 3:
		TK_APPEVENT(tksize, sz16, a);
		break;
	case 4:
		TK_APPEVENT(tksize, sz23, a);
		break;
	case 5:
		TK_APPEVENT(tksize, sz32, a);
		break;
	case 6:
		TK_APPEVENT(tksize, sz40, a);
		break;
	case 7:
		TK_APPEVENT(tksize, sz104, a);
		break;
	default:
		TK_APPEVENT(tksize, sz120, a);
		break;
	}
}

/*
 * Every size lands whole: the fields as emitted, the padding to 4 bytes
 * zero, each event once. The bytes carry seq only through their pattern,
 * so a record is matched by its first byte and type: seq % 256 per type.
 */
static void test_write_sizes(void **state)
{
	struct tk_appevent_session *s = session(1024, TK_APPEVENT_DROP_NEWEST);
	const uint32_t n = 9 * 256; /* each (type, first byte) pair once */
	uint8_t seen[NSIZES][256] = {{0}};
	struct tk_dat_merge_record mr;
	struct tk_dat_merge *m;
	struct tk_dat *dat;
	size_t user;
	uint32_t total = 0, bad = 0;
	char path[512];
	int r;

	(void)state;
	for (uint32_t seq = 0; seq < n; seq++)
		emit_size(seq);
	assert_int_equal(tk_appevent_session_stop(s), 0);
	base_dat(path, sizeof(path));
	assert_int_equal(tk_appevent_session_write(s, path), 0);
	m = user_merge(path, &dat, &user);
	while ((r = tk_dat_merge_next(m, &mr)) > 0) {
		const uint8_t *d = mr.rec.data;
		struct tk_appevent_common cm;
		size_t k;

		memcpy(&cm, d, sizeof(cm));
		for (k = 0; k < NSIZES && size_types[k]->id != cm.type; k++)
			;
		total++;
		if (k == NSIZES || cm.pid != (int32_t)syscall(SYS_gettid) ||
		    mr.rec.size != ((8 + sizes[k] + 3) & ~3u)) {
			bad++;
			continue;
		}
		for (uint32_t i = 1; i < sizes[k]; i++)
			if (d[8 + i] != (uint8_t)(d[8] + i))
				bad++;
		for (uint32_t i = 8 + sizes[k]; i < mr.rec.size; i++)
			if (d[i])
				bad++;
		if (seen[k][d[8]]++)
			bad++;
	}
	assert_int_equal(r, 0);
	tk_dat_merge_free(m);
	tk_dat_close(dat);
	assert_int_equal(bad, 0);
	assert_int_equal(total, n);
	tk_appevent_session_free(s);
	tk_appevent_disconnect();
}

/* tkstr:two's strings for @seq: x is seq % 120 letters, y NULL every 7th. */
static void two_strings(uint32_t seq, char *x, char *y, size_t cap)
{
	memset(x, 'a' + (int)(seq % 26), seq % 120);
	x[seq % 120] = 0;
	snprintf(y, cap, "y-%u", seq);
}

static void emit_str(uint32_t seq)
{
	uint16_t a[3] = {(uint16_t)seq, (uint16_t)(seq * 3), 0xbeef};
	char p[32], x[128], y[32];

	snprintf(p, sizeof(p), "p%u", seq);
	two_strings(seq, x, y, sizeof(y));
	if (seq % 2)
		TK_APPEVENT(tkstr, pad, (uint8_t)seq, seq % 5 == 1 ? "" : p);
	else
		TK_APPEVENT(tkstr, two, a, x, seq, seq % 7 == 0 ? NULL : y);
}

/* Append @v's @n bytes at *@at of @rec. */
static void put(uint8_t *rec, uint32_t *at, const void *v, size_t n)
{
	memcpy(rec + *at, v, n);
	*at += (uint32_t)n;
}

/*
 * The record emit_str(@seq) must have made, built by hand from the layout
 * the format says (the reserve path's): common header, fields, zeros to 4,
 * the strings, each __data_loc (size << 16) | offset. Returns its bytes
 * before the padding to 4.
 */
static uint32_t want_str(uint32_t seq, uint32_t tid, uint8_t *rec)
{
	struct tk_appevent_common cm = {0, 0, 0, (int32_t)tid};
	char p[32], x[128], y[32];
	const char *s1, *s2 = NULL;
	uint32_t at = 0, loc, fixed;

	memset(rec, 0, 256);
	snprintf(p, sizeof(p), "p%u", seq);
	two_strings(seq, x, y, sizeof(y));
	if (seq % 2) {
		uint8_t b = (uint8_t)seq;

		cm.type = tk__ae_type_tkstr_pad.id;
		s1 = seq % 5 == 1 ? "" : p;
		fixed = 16;
		put(rec, &at, &cm, sizeof(cm));
		put(rec, &at, &b, 1);
		loc = (uint32_t)(strlen(s1) + 1) << 16 | fixed;
		put(rec, &at, &loc, 4);
	} else {
		uint16_t a[3] = {(uint16_t)seq, (uint16_t)(seq * 3), 0xbeef};

		cm.type = tk__ae_type_tkstr_two.id;
		s1 = x;
		s2 = seq % 7 == 0 ? "(null)" : y;
		fixed = 28;
		put(rec, &at, &cm, sizeof(cm));
		put(rec, &at, a, sizeof(a));
		loc = (uint32_t)(strlen(s1) + 1) << 16 | fixed;
		put(rec, &at, &loc, 4);
		put(rec, &at, &seq, 4);
		loc = (uint32_t)(strlen(s2) + 1) << 16 | (fixed + (uint32_t)strlen(s1) + 1);
		put(rec, &at, &loc, 4);
	}
	at = fixed;
	put(rec, &at, s1, strlen(s1) + 1);
	if (s2)
		put(rec, &at, s2, strlen(s2) + 1);
	return at;
}

/*
 * Events with strings land byte for byte as the format lays them out,
 * padding zero, on the fast path and the general one, each exactly once;
 * the same from a second thread (a buffer whose pages hold other records).
 */
static void test_write_strings(void **state)
{
	struct tk_appevent_session *s = session(1024, TK_APPEVENT_DROP_NEWEST);
	const uint32_t n = 3000;
	uint8_t *seen = calloc(n, 1), want[256];
	struct tk_dat_merge_record mr;
	struct tk_dat_merge *m;
	struct tk_dat *dat;
	size_t user;
	uint32_t total = 0, bad = 0, tid = (uint32_t)syscall(SYS_gettid), big = 0;
	uint64_t lost = tk_appevent_lost();
	char path[512];
	int r;

	(void)state;
	assert_non_null(seen);
	for (uint32_t seq = 0; seq < n; seq++)
		emit_str(seq);
	assert_int_equal(tk_appevent_lost(), lost);
	assert_int_equal(tk_appevent_session_stop(s), 0);
	base_dat(path, sizeof(path));
	assert_int_equal(tk_appevent_session_write(s, path), 0);
	m = user_merge(path, &dat, &user);
	while ((r = tk_dat_merge_next(m, &mr)) > 0) {
		const uint8_t *d = mr.rec.data;
		struct tk_appevent_common cm;
		uint32_t seq, len;

		memcpy(&cm, d, sizeof(cm));
		total++;
		if (cm.type == tk__ae_type_tkstr_pad.id && mr.rec.size >= 9)
			seq = d[8]; /* the low byte; the rest from the string */
		else if (cm.type == tk__ae_type_tkstr_two.id && mr.rec.size >= 22)
			memcpy(&seq, d + 18, 4);
		else {
			bad++;
			continue;
		}
		if (cm.type == tk__ae_type_tkstr_pad.id) {
			/* "p<seq>" or "" (seq % 5 == 1): find seq among the odd ones with that byte
			 */
			uint32_t k;

			for (k = seq | 1; k < n; k += 256) {
				len = want_str(k, tid, want);
				if (!seen[k] && mr.rec.size == ((len + 3) & ~3u) &&
				    !memcmp(d, want, mr.rec.size))
					break;
			}
			seq = k;
		}
		if (seq >= n) {
			bad++;
			continue;
		}
		len = want_str(seq, tid, want);
		if (mr.rec.size != ((len + 3) & ~3u) || memcmp(d, want, mr.rec.size))
			bad++;
		if (len > 112)
			big++;
		if (seen[seq]++)
			bad++;
	}
	assert_int_equal(r, 0);
	tk_dat_merge_free(m);
	tk_dat_close(dat);
	assert_int_equal(bad, 0);
	assert_int_equal(total, n);
	assert_true(big > 0); /* the general path was taken too */
	free(seen);
	tk_appevent_session_free(s);
	tk_appevent_disconnect();
}

/* A forked child gets ids and buffers of its own and its events arrive as its pid's. */
static void test_fork(void **state)
{
	struct tk_appevent_session *s;
	struct counts c;
	char path[512];
	pid_t pid;
	int status;

	(void)state;
	s = session(64, TK_APPEVENT_DROP_NEWEST);
	setenv(TK_APPEVENT_ENV, tk_appevent_session_path(s), 1);
	emit(0); /* the parent's buffer exists before the fork */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (uint32_t i = 0; i < 300; i++)
			emit(i);
		_exit(events_on() == 1 ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unsetenv(TK_APPEVENT_ENV);
	assert_int_equal(tk_appevent_session_stop(s), 0);
	base_dat(path, sizeof(path));
	assert_int_equal(tk_appevent_session_write(s, path), 0);
	/* The child's ids differ from ours, so count its records by pid, all types. */
	read_user(path, &c, pid);
	assert_int_equal(c.total, 300);
	read_user(path, &c, getpid());
	assert_int_equal(c.total, 1);
	tk_appevent_session_free(s);
	tk_appevent_disconnect();
}

/* A recorder that goes away: no SIGPIPE, no block, events drop or turn off. */
static void test_recorder_gone(void **state)
{
	struct tk_appevent_session *s = session(8, TK_APPEVENT_DROP_NEWEST);
	pthread_t th;

	(void)state;
	emit(1);
	tk_appevent_session_free(s);
	/* A new thread's buffer cannot be handed over any more. */
	assert_int_equal(pthread_create(&th, NULL, worker, (void *)(uintptr_t)0), 0);
	pthread_join(th, NULL);
	for (uint32_t i = 0; i < 5000; i++)
		emit(i);
	assert_int_equal(events_on(), 0);
	tk_appevent_disconnect();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_without_recorder),
		cmocka_unit_test(test_threads_and_signals),
		cmocka_unit_test(test_write_sizes),
		cmocka_unit_test(test_write_strings),
		cmocka_unit_test(test_loss_drop_newest),
		cmocka_unit_test(test_loss_drop_newest_burst),
		cmocka_unit_test(test_loss_overwrite),
		cmocka_unit_test(test_loss_overwrite_race),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_recorder_gone),
	};

	unsetenv(TK_APPEVENT_ENV);
	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
