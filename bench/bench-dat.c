// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-dat: how fast tracekit decodes the ring-buffer pages of a .dat file.
 *
 * What is measured. A .dat file of at least 3 M events (or the file given
 * with --file) is read front to back: tk_dat_open(), a tk_dat_cpu_reader
 * per CPU streaming every page, tk_page_iter_next() over every record. Each
 * record adds its payload size, its timestamp and the first payload word to
 * a checksum, so the compiler cannot drop the work and so that two decoders
 * can be proven to have seen the same events. Times are CLOCK_MONOTONIC
 * over whole passes; the median of several passes is printed with the
 * min-max spread. The file is read from the page cache after the first pass:
 * this is decode throughput, not disk throughput.
 *
 * The comparison a user would otherwise make, in the same run:
 *   - libtraceevent's kbuffer (what trace-cmd and perf's libtraceevent users
 *     decode pages with) walking the same pages, held in memory after being
 *     read from the same file; tracekit's page iterator over those same
 *     in-memory pages is timed beside it, so the pair compares decoders
 *     alone, without I/O;
 *   - `trace-cmd report -i FILE > /dev/null` on a slice of the events (it
 *     formats text, so it is the end-to-end tool, not a decoder; capped at
 *     about 10 s).
 *
 * The generated trace: two CPUs, 4 KiB pages, 8-byte longs, little endian.
 * Payloads are 16..64 bytes with the kernel's 8-byte common header (type,
 * flags, preempt count, pid), then a counter and a few text-like words, so
 * zstd sees data that compresses roughly as real events do. Timestamps
 * advance 100..700 ns; one gap in 4096 exceeds the 27-bit delta and forces a
 * time extend. One event format (bench/bench_event, id 1000) is stored so
 * trace-cmd can print the events.
 *
 * --quick makes ~50 k events and one pass, still checking that tracekit and
 * kbuffer agree on event count, payload bytes, timestamp sum and data sum
 * (exit 1 if not): make check runs it so the benchmark cannot rot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "harness.h"
#include "tk-test-texts.h"

#ifdef HAVE_LIBTRACEEVENT
#include <traceevent/kbuffer.h>
#endif

#define PAGE_SIZE      4096u
#define NCPU	       2u
#define BATCH_PAGES    64u
#define EVENT_ID       1000u
#define DEFAULT_EVENTS 3000000ull
#define QUICK_EVENTS   50000ull
#define SLICE_EVENTS   1000000ull
#define REPORT_CAP_S   10
#define CACHE_WINDOW   256u

/* What a decoder saw; two decoders agree when every field is equal. */
struct sums {
	uint64_t events;
	uint64_t payload_bytes;
	uint64_t ts_sum;
	uint64_t data_sum;
	uint64_t pages;
	uint64_t page_bytes;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so every run decodes the same trace. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t load32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* ------------------------------------------------------------ generation */

static const char event_format_text[] =
	"name: bench_event\n"
	"ID: 1000\n"
	"format:\n" TK_TEST_COMMON_FIELDS "\n"
	"\tfield:unsigned long value;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"value=%lu\", REC->value\n";

/* Writers fed in lockstep: the v7-none and v7-zstd files, and a slice file
 * holding the first pages of each CPU for trace-cmd report. */
struct out {
	struct tk_dat_writer *w;
	const char *path;
	uint64_t page_limit; /* pages per CPU to write; UINT64_MAX for all */
	uint64_t written;
};

static void open_out(struct out *o, const char *path, enum tk_compression comp,
		     const struct tk_page_format *fmt, uint64_t page_limit)
{
	struct tk_dat_writer_opts opts = {
		.sz = sizeof(struct tk_dat_writer_opts),
		.version = 7,
		.compression = comp,
		.long_size = 8,
		.page_size = PAGE_SIZE,
	};
	struct tk_tracedata *td = tk_tracedata_new();
	char hp[1024];
	size_t hp_len = tk_page_format_header_text(fmt, hp, sizeof(hp));

	o->path = path;
	o->page_limit = page_limit;
	o->w = tk_dat_writer_open(path, &opts);
	if (!o->w)
		die(path);

	if (!td || tk_tracedata_set_header_page(td, hp, hp_len) < 0 ||
	    tk_tracedata_set_header_event(td, tk_test_header_event,
					  sizeof(tk_test_header_event) - 1) < 0 ||
	    tk_tracedata_add_format(td, "bench", event_format_text, sizeof(event_format_text) - 1) <
		    0)
		die("tracedata");
	if (tk_dat_writer_add_tracedata(o->w, td) < 0)
		die("add metadata");
	tk_tracedata_free(td);

	if (tk_dat_writer_begin_buffer(o->w, "", "local", PAGE_SIZE, NCPU) < 0)
		die("begin buffer");
}

static void out_pages(struct out *o, const uint8_t *pages, uint64_t n)
{
	if (o->written + n > o->page_limit)
		n = o->page_limit - o->written;
	if (n && tk_dat_writer_write_pages(o->w, pages, n * PAGE_SIZE) < 0)
		die(o->path);
	o->written += n;
}

static void close_out(struct out *o)
{
	if (tk_dat_writer_end_buffer(o->w) < 0 || tk_dat_writer_finish(o->w) < 0)
		die(o->path);
	tk_dat_writer_close(o->w);
}

static const char *const comms[] = {"kworker/0:1",     "sshd",		"bash",
				    "systemd-journal", "irq/24-virtio", "rcu_preempt",
				    "ksoftirqd/1",     "bench"};

/*
 * Fill one payload: the common header, a counter, then words that look like
 * a comm and small integers.
 */
static uint32_t make_payload(uint8_t *p, uint64_t counter)
{
	uint32_t size = 16 + (uint32_t)(rng() % 49);
	uint64_t r = rng();
	uint16_t type = EVENT_ID;
	int32_t pid = 100 + (int32_t)(r % 64);
	const char *comm = comms[(r >> 8) % 8];
	size_t clen = strlen(comm);

	memset(p, 0, size);
	memcpy(p, &type, 2);
	p[2] = (uint8_t)(r >> 16) & 0x5;
	p[3] = (uint8_t)(r >> 24) & 0x3;
	memcpy(p + 4, &pid, 4);
	memcpy(p + 8, &counter, 8);
	if (size > 16)
		memcpy(p + 16, comm, clen < size - 16 ? clen : size - 16);
	if (size >= 40) {
		uint32_t v = (uint32_t)(r >> 32) % 1000;

		memcpy(p + 32, &v, 4);
	}
	return size;
}

/*
 * Generate at least @events events over NCPU CPUs into the outputs; return
 * the sums the decoders must reproduce.
 */
static struct sums generate(struct out *outs, size_t nouts, const struct tk_page_format *fmt,
			    uint64_t events)
{
	struct sums s = {0};
	uint8_t *batch = malloc((size_t)BATCH_PAGES * PAGE_SIZE);
	uint64_t per_cpu = (events + NCPU - 1) / NCPU;
	uint8_t payload[64];

	if (!batch)
		die("malloc");
	for (uint32_t cpu = 0; cpu < NCPU; cpu++) {
		uint64_t ts = 1000000000ull + cpu * 1000, done = 0;
		uint32_t npages = 0;
		struct tk_page_writer pw;

		for (size_t i = 0; i < nouts; i++) {
			outs[i].written = 0;
			if (tk_dat_writer_begin_cpu(outs[i].w, cpu) < 0)
				die("begin cpu");
		}
		if (tk_page_writer_init(&pw, fmt, batch, ts) < 0)
			die("page writer");
		while (done < per_cpu) {
			uint32_t size = make_payload(payload, s.events);
			uint64_t next = ts + 100 + rng() % 600;
			int ret;

			if (rng() % 4096 == 0)
				next += 200000000ull; /* > 2^27 ns: a time extend */
			ret = tk_page_writer_add(&pw, next, payload, size);
			if (ret == -ENOSPC) {
				tk_page_writer_finish(&pw);
				if (++npages == BATCH_PAGES) {
					for (size_t i = 0; i < nouts; i++)
						out_pages(&outs[i], batch, npages);
					npages = 0;
				}
				if (tk_page_writer_init(&pw, fmt,
							batch + (size_t)npages * PAGE_SIZE, ts) < 0)
					die("page writer");
				s.pages++;
				continue;
			}
			if (ret < 0) {
				errno = -ret;
				die("page writer add");
			}
			ts = next;
			done++;
			s.events++;
			s.payload_bytes += (size + 3) & ~3u;
			s.ts_sum += ts;
			s.data_sum += load32(payload);
		}
		tk_page_writer_finish(&pw);
		npages++;
		s.pages++;
		for (size_t i = 0; i < nouts; i++) {
			out_pages(&outs[i], batch, npages);
			if (tk_dat_writer_end_cpu(outs[i].w) < 0)
				die("end cpu");
		}
	}
	s.page_bytes = s.pages * PAGE_SIZE;
	free(batch);
	return s;
}

/* -------------------------------------------------------------- decoders */

static void walk_page(const struct tk_page_format *fmt, const void *page, struct sums *s)
{
	struct tk_page_iter it;
	struct tk_page_record rec;
	int ret;

	if (tk_page_iter_init(&it, fmt, page, fmt->page_size, NULL) < 0)
		die("page header");
	while ((ret = tk_page_iter_next(&it, &rec)) == 1) {
		s->events++;
		s->payload_bytes += rec.size;
		s->ts_sum += rec.timestamp;
		s->data_sum += rec.size >= 4 ? load32(rec.data) : 0;
	}
	if (ret < 0)
		die("page record");
	s->pages++;
	s->page_bytes += fmt->page_size;
}

/* Decode a whole file through the reader: what a tracekit user does. */
static struct sums decode_file(const char *path)
{
	struct sums s = {0};
	struct tk_dat *dat = tk_dat_open(path);

	if (!dat)
		die(path);
	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		if (buf->latency_text)
			continue;
		for (size_t c = 0; c < buf->cpu_count; c++) {
			struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(dat, b, c);
			const void *page;
			int ret;

			if (!r)
				die(path);
			while ((ret = tk_dat_cpu_reader_next_page(r, &page, NULL)) == 1)
				walk_page(&buf->page_format, page, &s);
			if (ret < 0)
				die(path);
			tk_dat_cpu_reader_free(r);
		}
	}
	tk_dat_close(dat);
	return s;
}

/*
 * The same work with one thread per CPU stream, each with its own reader
 * on the shared tk_dat (the API allows readers of one file on different
 * threads): how a report tool that decodes CPUs in parallel and merges
 * afterwards sees the file.
 */
struct cpu_job {
	struct tk_dat *dat;
	size_t buffer, cpu;
	struct sums sums;
	int ret;
};

static void *decode_cpu_job(void *arg)
{
	struct cpu_job *job = arg;
	const struct tk_dat_buffer *buf = tk_dat_buffer_get(job->dat, job->buffer);
	struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(job->dat, job->buffer, job->cpu);
	const void *page;

	job->ret = -1;
	if (!r)
		return NULL;
	while ((job->ret = tk_dat_cpu_reader_next_page(r, &page, NULL)) == 1)
		walk_page(&buf->page_format, page, &job->sums);
	tk_dat_cpu_reader_free(r);
	return NULL;
}

static struct sums decode_file_threads(const char *path)
{
	struct cpu_job jobs[64];
	pthread_t threads[64];
	struct sums s = {0};
	size_t n = 0;
	struct tk_dat *dat = tk_dat_open(path);

	if (!dat)
		die(path);
	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		for (size_t c = 0; !buf->latency_text && c < buf->cpu_count && n < 64; c++) {
			jobs[n] = (struct cpu_job){.dat = dat, .buffer = b, .cpu = c};
			if (pthread_create(&threads[n], NULL, decode_cpu_job, &jobs[n]))
				die("pthread_create");
			n++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		pthread_join(threads[i], NULL);
		if (jobs[i].ret < 0)
			die(path);
		s.events += jobs[i].sums.events;
		s.payload_bytes += jobs[i].sums.payload_bytes;
		s.ts_sum += jobs[i].sums.ts_sum;
		s.data_sum += jobs[i].sums.data_sum;
		s.pages += jobs[i].sums.pages;
		s.page_bytes += jobs[i].sums.page_bytes;
	}
	tk_dat_close(dat);
	return s;
}

/* Every page of every CPU of the file, in memory, for the decoder-only pair. */
struct mem_pages {
	struct tk_page_format fmt;
	uint8_t *data;
	uint64_t count;
};

static struct mem_pages load_pages(const char *path)
{
	struct mem_pages m = {0};
	struct tk_dat *dat = tk_dat_open(path);
	uint64_t cap = 0;

	if (!dat)
		die(path);
	for (size_t b = 0; b < tk_dat_buffer_count(dat); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		if (buf->latency_text)
			continue;
		/* One page size for the whole array: a file whose instances use
		 * other sizes is benchmarked on its first buffer only. */
		if (m.fmt.page_size && buf->page_format.page_size != m.fmt.page_size)
			continue;
		m.fmt = buf->page_format;
		for (size_t c = 0; c < buf->cpu_count; c++) {
			struct tk_dat_cpu_reader *r = tk_dat_cpu_reader_new(dat, b, c);
			const void *page;
			int ret;

			if (!r)
				die(path);
			while ((ret = tk_dat_cpu_reader_next_page(r, &page, NULL)) == 1) {
				if (m.count == cap) {
					cap = cap ? cap * 2 : 1024;
					m.data = realloc(m.data, cap * m.fmt.page_size);
					if (!m.data)
						die("realloc");
				}
				memcpy(m.data + m.count * m.fmt.page_size, page, m.fmt.page_size);
				m.count++;
			}
			if (ret < 0)
				die(path);
			tk_dat_cpu_reader_free(r);
		}
	}
	tk_dat_close(dat);
	return m;
}

/*
 * Page @i of a pass over @m: with a window, the pass decodes the first
 * window pages over and over (as many pages as the file has), so the data
 * stays in the CPU cache and the decoder's own cost shows, not the memory
 * bandwidth's.
 */
static const uint8_t *mem_page(const struct mem_pages *m, uint64_t window, uint64_t i)
{
	return m->data + (window ? i % window : i) * m->fmt.page_size;
}

static struct sums decode_mem_tracekit(const struct mem_pages *m, uint64_t window)
{
	struct sums s = {0};

	for (uint64_t i = 0; i < m->count; i++)
		walk_page(&m->fmt, mem_page(m, window, i), &s);
	return s;
}

#ifdef HAVE_LIBTRACEEVENT
static struct sums decode_mem_kbuffer(const struct mem_pages *m, uint64_t window)
{
	struct sums s = {0};
	struct kbuffer *kb =
		kbuffer_alloc(m->fmt.long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			      m->fmt.big_endian ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);

	if (!kb)
		die("kbuffer_alloc");
	for (uint64_t i = 0; i < m->count; i++) {
		unsigned long long ts;
		void *data;

		if (kbuffer_load_subbuffer(kb, (void *)mem_page(m, window, i)) < 0)
			die("kbuffer_load_subbuffer");
		for (data = kbuffer_read_event(kb, &ts); data; data = kbuffer_next_event(kb, &ts)) {
			uint32_t size = (uint32_t)kbuffer_event_size(kb);

			s.events++;
			s.payload_bytes += size;
			s.ts_sum += ts;
			s.data_sum += size >= 4 ? load32(data) : 0;
		}
		s.pages++;
		s.page_bytes += m->fmt.page_size;
	}
	kbuffer_free(kb);
	return s;
}
#endif

/* ---------------------------------------------------------------- timing */

static bool same(const struct sums *a, const struct sums *b)
{
	return a->events == b->events && a->payload_bytes == b->payload_bytes &&
	       a->ts_sum == b->ts_sum && a->data_sum == b->data_sum;
}

static int mismatch(const char *what, const struct sums *want, const struct sums *got)
{
	fprintf(stderr,
		"bench-dat: %s: checksum mismatch: events %" PRIu64 " vs %" PRIu64
		", payload bytes %" PRIu64 " vs %" PRIu64 ", ts sum %#" PRIx64 " vs %#" PRIx64
		", data sum %#" PRIx64 " vs %#" PRIx64 "\n",
		what, want->events, got->events, want->payload_bytes, got->payload_bytes,
		want->ts_sum, got->ts_sum, want->data_sum, got->data_sum);
	return 1;
}

enum bench_kind { FROM_FILE, FROM_FILE_THREADS, FROM_MEM_TRACEKIT, FROM_MEM_KBUFFER };

/*
 * Run one case @reps times; print its line; return 1 when its sums differ
 * from @want (when @want is given).
 */
static int run_case(const char *label, enum bench_kind kind, const char *path,
		    const struct mem_pages *m, uint64_t window, int reps, const struct sums *want,
		    struct sums *got)
{
	double t[64], ev_s[64];
	struct sums s = {0};

	if (reps > 64)
		reps = 64;
	for (int r = 0; r < reps; r++) {
		double t0 = now_s();

		switch (kind) {
		case FROM_FILE:
			s = decode_file(path);
			break;
		case FROM_FILE_THREADS:
			s = decode_file_threads(path);
			break;
		case FROM_MEM_TRACEKIT:
			s = decode_mem_tracekit(m, window);
			break;
		case FROM_MEM_KBUFFER:
#ifdef HAVE_LIBTRACEEVENT
			s = decode_mem_kbuffer(m, window);
#endif
			break;
		}
		t[r] = now_s() - t0;
		if (t[r] <= 0)
			t[r] = 1e-9;
		ev_s[r] = (double)s.events / t[r] / 1e6;
	}
	qsort(t, (size_t)reps, sizeof(double), cmp_double);
	qsort(ev_s, (size_t)reps, sizeof(double), cmp_double);
	double med = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
	printf("bench-dat: %s: %" PRIu64
	       " events, %.1f M events/s (median of %d, spread %.1f-%.1f), "
	       "%.0f MB/s\n",
	       label, s.events, (double)s.events / med / 1e6, reps, ev_s[0], ev_s[reps - 1],
	       (double)s.page_bytes / med / 1e6);
	fflush(stdout);
	if (got)
		*got = s;
	if (want && !same(want, &s))
		return mismatch(label, want, &s);
	return 0;
}

/*
 * trace-cmd report on @path with its output counted here: lines/s is its
 * event rate (one line per event). Stopped after REPORT_CAP_S seconds.
 */
static void time_trace_cmd(const char *path)
{
	int fds[2];
	pid_t pid;
	char buf[1 << 16];
	uint64_t lines = 0;
	ssize_t n;
	double t0, t;
	int status;
	bool capped = false;

	if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {
		printf("bench-dat: trace-cmd report: skipped (trace-cmd not installed)\n");
		return;
	}
	if (pipe(fds) < 0)
		die("pipe");
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 2);
		close(fds[0]);
		close(fds[1]);
		execlp("trace-cmd", "trace-cmd", "report", "-i", path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
		if (!capped && now_s() - t0 > REPORT_CAP_S) {
			kill(pid, SIGTERM);
			capped = true;
			break;
		}
	}
	t = now_s() - t0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (!capped && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		printf("bench-dat: trace-cmd report: failed (status %d)\n", status);
		return;
	}
	/* The first line is "cpus=N", not an event. */
	if (lines)
		lines--;
	printf("bench-dat: trace-cmd report > /dev/null: %" PRIu64 " events%s, %.2f M events/s "
	       "(1 run, %.1f s)\n",
	       lines, capped ? " (capped)" : "", (double)lines / t / 1e6, t);
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr, "usage: bench-dat [--quick] [--events N] [--reps R] [--file F] "
			"[--no-trace-cmd] [--keep DIR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t events = DEFAULT_EVENTS;
	int reps = 7, rc = 0;
	bool quick = false, run_trace_cmd = true;
	const char *file = NULL, *keep = NULL;
	char dir[4096] = "", none_path[4200], zstd_path[4200], slice_path[4200];
	struct sums want = {0}, got;
	struct mem_pages m;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
			events = QUICK_EVENTS;
			reps = 1;
			run_trace_cmd = false;
		} else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
			events = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
			keep = argv[++i];
		} else if (!strcmp(argv[i], "--no-trace-cmd")) {
			run_trace_cmd = false;
		} else {
			usage();
		}
	}
	if (reps < 1 || events < 1)
		usage();

	if (file) {
		/* A user's file: no expected sums, tracekit's first pass is the
		 * reference the other decoders must match. */
		if (run_case("decode file", FROM_FILE, file, NULL, 0, reps, NULL, &want))
			return 1;
		snprintf(slice_path, sizeof(slice_path), "%s", file);
	} else {
		struct tk_page_format fmt;
		struct out outs[3] = {0};
		uint64_t slice_pages;
		size_t nouts;

		if (keep) {
			snprintf(dir, sizeof(dir), "%s", keep);
			mkdir(dir, 0755);
		} else {
			const char *tmp = getenv("TMPDIR");

			snprintf(dir, sizeof(dir), "%s/bench-dat.XXXXXX", tmp ? tmp : "/tmp");
			if (!mkdtemp(dir))
				die("mkdtemp");
		}
		snprintf(none_path, sizeof(none_path), "%s/bench-v7-none.dat", dir);
		snprintf(zstd_path, sizeof(zstd_path), "%s/bench-v7-zstd.dat", dir);
		snprintf(slice_path, sizeof(slice_path), "%s/bench-slice-v7-none.dat", dir);
		if (tk_page_format_init(&fmt, PAGE_SIZE, 8, false) < 0)
			die("page format");
		/* ~90 events per page: the slice holds about SLICE_EVENTS. */
		slice_pages = SLICE_EVENTS / NCPU / 90 + 1;
		open_out(&outs[0], none_path, TK_COMPRESS_NONE, &fmt, UINT64_MAX);
		open_out(&outs[1], zstd_path, TK_COMPRESS_ZSTD, &fmt, UINT64_MAX);
		if (run_trace_cmd)
			open_out(&outs[2], slice_path, TK_COMPRESS_NONE, &fmt, slice_pages);
		nouts = run_trace_cmd ? 3 : 2;
		want = generate(outs, nouts, &fmt, events);
		for (size_t i = 0; i < nouts; i++)
			close_out(&outs[i]);
		if (!quick) {
			struct stat st1, st2;

			if (stat(none_path, &st1) == 0 && stat(zstd_path, &st2) == 0)
				printf("bench-dat: made %" PRIu64 " events in %" PRIu64
				       " pages: v7-none %.1f MB, v7-zstd %.1f MB\n",
				       want.events, want.pages, st1.st_size / 1e6,
				       st2.st_size / 1e6);
		}
		rc |= run_case("decode v7-none", FROM_FILE, none_path, NULL, 0, reps, &want, NULL);
		rc |= run_case("decode v7-zstd", FROM_FILE, zstd_path, NULL, 0, reps, &want, NULL);
		rc |= run_case("decode v7-none, a thread per CPU", FROM_FILE_THREADS, none_path,
			       NULL, 0, reps, &want, NULL);
		rc |= run_case("decode v7-zstd, a thread per CPU", FROM_FILE_THREADS, zstd_path,
			       NULL, 0, reps, &want, NULL);
		file = none_path;
	}

	m = load_pages(file);
	rc |= run_case("decode in-memory pages, tracekit tk_page_iter", FROM_MEM_TRACEKIT, NULL, &m,
		       0, reps, &want, &got);
#ifdef HAVE_LIBTRACEEVENT
	rc |= run_case("decode in-memory pages, libtraceevent kbuffer", FROM_MEM_KBUFFER, NULL, &m,
		       0, reps, &got, NULL);
#endif
	rc |= run_case("decode in-cache pages (256 pages reused), tracekit tk_page_iter",
		       FROM_MEM_TRACEKIT, NULL, &m, CACHE_WINDOW, reps, NULL, &got);
#ifdef HAVE_LIBTRACEEVENT
	rc |= run_case("decode in-cache pages (256 pages reused), libtraceevent kbuffer",
		       FROM_MEM_KBUFFER, NULL, &m, CACHE_WINDOW, reps, &got, NULL);
#else
	printf("bench-dat: libtraceevent kbuffer: skipped (built without libtraceevent)\n");
#endif
	free(m.data);

	if (run_trace_cmd)
		time_trace_cmd(slice_path);

	if (!keep && dir[0]) {
		unlink(none_path);
		unlink(zstd_path);
		unlink(slice_path);
		rmdir(dir);
	}
	if (rc)
		fprintf(stderr, "bench-dat: FAILED: decoders disagree\n");
	return rc;
}
