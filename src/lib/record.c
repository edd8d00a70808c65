// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * record: the capture engine behind "tracekit record".
 *
 * Design notes.
 *
 * Data path. One thread per possible CPU owns that CPU's trace_pipe_raw
 * (opened O_NONBLOCK), a pipe and a spool file "<output>.cpuN" beside the
 * output. It moves pages kernel -> pipe -> spool with splice(), so a page
 * is never copied through user space: the ring buffer hands over its page
 * by reference and the page cache takes it from the pipe. splice() on
 * trace_pipe_raw only gives out full pages (the kernel refuses the page
 * the writer is still on), which is what we want while recording; on stop
 * the last, partial page of each CPU is fetched with read(), which copies
 * whatever is committed. Kernels whose trace_pipe_raw cannot splice
 * (EINVAL) fall back to read() for everything.
 *
 * Waiting. Each thread polls its pipe (the kernel wakes it when the buffer
 * passes buffer_percent, 50% by default) and an eventfd that says "stop",
 * with a 100 ms timeout so that a CPU with a trickle of events still moves
 * its pages out regularly (the spool then lags the kernel by at most that,
 * which bounds what a SIGKILL can lose beyond the ring buffer itself).
 *
 * Not yet decided by measurement: the trace_pipe_raw mmap interface
 * (kernel >= 6.10) against splice. splice was kept because it is what
 * trace-cmd does, needs no per-kernel layout knowledge, and measured
 * without loss at the rates in the report of issue 3.
 *
 * Stop. tracing_on is written 0 first, then a seq_cst flag is set and the
 * eventfd signalled; a thread that sees the flag knows every event that
 * will ever be written is already in the ring buffer, drains with splice,
 * then read() until EAGAIN, and exits. The per-CPU stats are read after
 * the threads are joined so that they describe the whole recording.
 *
 * Why spool files and not the output directly: the .dat format wants each
 * CPU's pages contiguous, and the CPUs produce concurrently. Each spool
 * file is exactly the page sequence of its CPU, the format of the .dat's
 * uncompressed CPU data, so the assembly at the end is a streaming copy
 * (and, compressed, the writer's chunking) and a killed recording leaves
 * files of whole pages that a recovery step can wrap into a .dat. A spool
 * file cut by a full disk is cut back to whole pages at assembly.
 *
 * The file (shared/specs/tracedat.md §2.7, §5.1): header_page and
 * header_event of the recorded instance; the formats of all of ftrace's own
 * events (print, bprint ...: trace_marker writes are "print" events); the
 * formats of every event of each system that had an event enabled (not all
 * ~100 systems as trace-cmd does: 2 MB saved per file); /proc/kallsyms;
 * printk_formats; saved_cmdlines. Options: TRACECLOCK (the instance's
 * trace_clock text), UNAME, VERSION, one CPUSTAT per CPU ("CPU: N\n" + the
 * stats text), CPUCOUNT and, for the x86-tsc clock, TSC2NSEC with the
 * kernel's perf mult/shift/zero. The data is the top buffer "" of the file
 * whatever instance it came from, so that trace-cmd report prints it
 * without an instance prefix.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tracekit/dat.h>
#include <tracekit/page.h>
#include <tracekit/record.h>
#include <tracekit/tracefs.h>

#include "internal/bytes.h"
#include "internal/error.h"

#define PIPE_BYTES (1u << 20)
#define POLL_MS 100
#define COPY_BATCH (1u << 20)

struct rec_cpu {
	struct tk_record *rec;
	uint32_t cpu;
	int raw_fd;
	int pipe_r, pipe_w;
	int spool_fd;
	char *spool_path;
	pthread_t thread;
	bool thread_running;
	bool use_read;
	uint64_t bytes;       /* written to the spool */
	int err;              /* first failure of the thread */
	char errmsg[512];
	struct tk_record_cpu_stats stats;
	char *stats_text;
};

struct tk_record {
	char *output;
	int version;
	enum tk_compression compression;
	char *tracer_version;
	struct tk_tracefs *tfs;
	bool created;          /* we made the instance: remove it */
	uint32_t ncpu;
	struct rec_cpu *cpus;
	uint32_t page_size;
	int stop_fd;
	atomic_bool stopping;
	atomic_int error;
	bool started, stopped;
	char **systems;        /* systems with enabled events, ftrace excluded */
	size_t nsystems;
	int add_error;
	struct tk_record_cpu_stats *stats;
};

/* ----------------------------------------------------------- byte buffer */

struct bbuf {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void bb_put(struct bbuf *b, const void *data, size_t n)
{
	if (b->failed)
		return;
	if (n > SIZE_MAX - b->len) {
		b->failed = true;
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (cap < b->len + n) {
			if (cap > SIZE_MAX / 2) {
				b->failed = true;
				return;
			}
			cap *= 2;
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void bb_u32(struct bbuf *b, uint32_t v)
{
	uint8_t x[4];

	tk_store_u32(x, v, false);
	bb_put(b, x, 4);
}

static void bb_u64(struct bbuf *b, uint64_t v)
{
	uint8_t x[8];

	tk_store_u64(x, v, false);
	bb_put(b, x, 8);
}

static void bb_str(struct bbuf *b, const char *s)
{
	bb_put(b, s, strlen(s) + 1);
}

/* ------------------------------------------------------------- capture */

static void thread_fail(struct rec_cpu *c, int err, const char *fmt, const char *path)
{
	if (c->err)
		return;
	c->err = err;
	snprintf(c->errmsg, sizeof(c->errmsg), fmt, path, strerror(err),
		 strerrorname_np(err) ? strerrorname_np(err) : "?");
	atomic_compare_exchange_strong(&c->rec->error, &(int){0}, -err);
}

/* Write all of @buf to the spool, whole or with an error. */
static int spool_write(struct rec_cpu *c, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = write(c->spool_fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
		c->bytes += (uint64_t)w;
	}
	return 0;
}

/* Move whole pages with read(): the fallback, and the final drain. */
static int move_by_read(struct rec_cpu *c, uint8_t *page)
{
	for (;;) {
		ssize_t n = read(c->raw_fd, page, c->rec->page_size);
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			thread_fail(c, errno, "%s: read failed: %s (%s)", c->spool_path);
			return -1;
		}
		if (n == 0)
			return 0;
		/* The kernel hands out whole pages; pad anything shorter so the spool stays aligned. */
		if ((size_t)n < c->rec->page_size)
			memset(page + n, 0, c->rec->page_size - (size_t)n);
		r = spool_write(c, page, c->rec->page_size);
		if (r < 0) {
			thread_fail(c, -r, "%s: %s (%s): recording stopped; the pages written "
					   "before are kept",
				    c->spool_path);
			return -1;
		}
	}
}

static int move_by_splice(struct rec_cpu *c)
{
	for (;;) {
		ssize_t n = splice(c->raw_fd, NULL, c->pipe_w, NULL, PIPE_BYTES,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			if (errno == EINVAL && c->bytes == 0) {
				c->use_read = true;
				return 0;
			}
			thread_fail(c, errno, "%s: splice from trace_pipe_raw failed: %s (%s)",
				    c->spool_path);
			return -1;
		}
		if (n == 0)
			return 0;
		while (n > 0) {
			ssize_t m = splice(c->pipe_r, NULL, c->spool_fd, NULL, (size_t)n,
					   SPLICE_F_MOVE);

			if (m < 0) {
				if (errno == EINTR)
					continue;
				thread_fail(c, errno, "%s: %s (%s): recording stopped; the pages "
						      "written before are kept",
					    c->spool_path);
				return -1;
			}
			if (m == 0) {
				thread_fail(c, EIO, "%s: splice wrote nothing: %s (%s)",
					    c->spool_path);
				return -1;
			}
			n -= m;
			c->bytes += (uint64_t)m;
		}
	}
}

static void *capture_thread(void *arg)
{
	struct rec_cpu *c = arg;
	struct tk_record *rec = c->rec;
	uint8_t *page = malloc(rec->page_size);
	struct pollfd pfd[2] = {
		{.fd = c->raw_fd, .events = POLLIN},
		{.fd = rec->stop_fd, .events = POLLIN},
	};

	if (!page) {
		thread_fail(c, ENOMEM, "%s: out of memory: %s (%s)", c->spool_path);
		return NULL;
	}
	for (;;) {
		bool stop = atomic_load(&rec->stopping);
		int r = c->use_read ? move_by_read(c, page) : move_by_splice(c);

		if (r < 0)
			break;
		if (c->use_read && !stop)
			continue;
		if (stop) {
			/* Tracing is off: the partial pages are final; read() takes them. */
			move_by_read(c, page);
			break;
		}
		if (atomic_load(&rec->stopping))
			continue;
		poll(pfd, 2, POLL_MS);
	}
	free(page);
	return NULL;
}

/* --------------------------------------------------------------- setup */

static void note_system(struct tk_record *rec, const char *sys)
{
	char **ns;

	if (!strcmp(sys, "ftrace"))
		return;
	for (size_t i = 0; i < rec->nsystems; i++) {
		if (!strcmp(rec->systems[i], sys))
			return;
	}
	ns = realloc(rec->systems, (rec->nsystems + 1) * sizeof(*ns));
	if (!ns || !(ns[rec->nsystems] = strdup(sys))) {
		if (ns)
			rec->systems = ns;
		rec->add_error = -ENOMEM;
		return;
	}
	rec->systems = ns;
	rec->nsystems++;
}

static void on_event(const char *system, const char *event, void *ctx)
{
	(void)event;
	note_system(ctx, system);
}

static int read_page_format(struct tk_record *rec, struct tk_page_format *fmt)
{
	char *text;
	size_t len;
	int r = tk_tracefs_read_file(rec->tfs, "events/header_page", &text, &len);

	if (r < 0)
		return r;
	r = tk_page_format_parse(fmt, text, len, __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	free(text);
	if (r < 0)
		return tk_fail_prefix(-r, "events/header_page");
	return 0;
}

static int open_cpu(struct tk_record *rec, struct rec_cpu *c)
{
	int fds[2];

	c->raw_fd = tk_tracefs_open_pipe_raw(rec->tfs, c->cpu, true);
	if (c->raw_fd < 0)
		return c->raw_fd;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return tk_fail(errno, "pipe: %s", strerror(errno));
	c->pipe_r = fds[0];
	c->pipe_w = fds[1];
	/* A bigger pipe moves more pages per splice; the default 64 KiB still works. */
	fcntl(c->pipe_w, F_SETPIPE_SZ, PIPE_BYTES);
	if (asprintf(&c->spool_path, "%s.cpu%u", rec->output, c->cpu) < 0) {
		c->spool_path = NULL;
		return tk_fail(ENOMEM, "out of memory");
	}
	c->spool_fd = open(c->spool_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (c->spool_fd < 0) {
		int err = errno;

		if (err == EEXIST)
			return tk_fail(err, "%s: spool file exists: another recording to the same "
					    "output runs, or one was killed (its pages are in "
					    "that file); remove it or choose another output",
				       c->spool_path);
		return tk_fail(err, "%s: %s (%s)", c->spool_path, strerror(err),
			       strerrorname_np(err) ? strerrorname_np(err) : "?");
	}
	return 0;
}

TK_API struct tk_record *tk_record_new(const struct tk_record_opts *opts)
{
	struct tk_record *rec;
	struct tk_page_format fmt;
	char name[64];
	int r, n;

	if (!opts || !opts->output || !opts->output[0] ||
	    (opts->file_version && opts->file_version != 6 && opts->file_version != 7)) {
		tk_fail(EINVAL, "record: output path and file version 6 or 7 are required");
		errno = EINVAL;
		return NULL;
	}
	rec = calloc(1, sizeof(*rec));
	if (!rec) {
		tk_fail(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	rec->stop_fd = -1;
	rec->version = opts->file_version ? opts->file_version : 7;
	rec->compression = opts->compression;
	rec->output = strdup(opts->output);
	rec->tracer_version = strdup(opts->tracer_version ? opts->tracer_version : "tracekit");
	if (!rec->output || !rec->tracer_version) {
		r = tk_fail(ENOMEM, "out of memory");
		goto fail;
	}

	if (opts->top) {
		rec->tfs = tk_tracefs_open(NULL, 0);
	} else if (opts->instance && opts->existing_instance) {
		rec->tfs = tk_tracefs_open(opts->instance, 0);
	} else {
		if (!opts->instance)
			snprintf(name, sizeof(name), "tracekit-%d", (int)getpid());
		rec->tfs = tk_tracefs_open(opts->instance ? opts->instance : name,
					   TK_TRACEFS_CREATE);
		rec->created = rec->tfs != NULL;
	}
	if (!rec->tfs) {
		r = -errno;
		goto fail;
	}
	/* Nothing is recorded until tk_record_start(): a new instance starts with tracing on. */
	r = tk_tracefs_set_tracing_on(rec->tfs, false);
	if (r < 0)
		goto fail;
	if (opts->clock && (r = tk_tracefs_set_clock(rec->tfs, opts->clock)) < 0)
		goto fail;
	if (opts->buffer_kb && (r = tk_tracefs_set_buffer_kb(rec->tfs, opts->buffer_kb)) < 0)
		goto fail;
	for (size_t i = 0; i < opts->event_count; i++) {
		r = tk_tracefs_enable_events(rec->tfs, opts->events[i].spec,
					     opts->events[i].filter, on_event, rec);
		if (r < 0)
			goto fail;
		if (rec->add_error) {
			r = tk_fail(ENOMEM, "out of memory");
			goto fail;
		}
	}

	r = read_page_format(rec, &fmt);
	if (r < 0)
		goto fail;
	rec->page_size = fmt.page_size;
	n = tk_tracefs_cpu_count(rec->tfs);
	if (n < 0) {
		r = n;
		goto fail;
	}
	rec->ncpu = (uint32_t)n;
	rec->cpus = calloc(rec->ncpu, sizeof(*rec->cpus));
	rec->stats = calloc(rec->ncpu, sizeof(*rec->stats));
	if (!rec->cpus || !rec->stats) {
		r = tk_fail(ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		c->rec = rec;
		c->cpu = i;
		c->stats.cpu = i;
		c->raw_fd = c->pipe_r = c->pipe_w = c->spool_fd = -1;
	}
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		r = open_cpu(rec, &rec->cpus[i]);
		if (r < 0)
			goto fail;
	}
	rec->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rec->stop_fd < 0) {
		r = tk_fail(errno, "eventfd: %s", strerror(errno));
		goto fail;
	}
	return rec;

fail:
	tk_record_free(rec);
	errno = -r;
	return NULL;
}

TK_API struct tk_tracefs *tk_record_tracefs(struct tk_record *rec)
{
	return rec->tfs;
}

TK_API int tk_record_set_pids(struct tk_record *rec, const int *pids, size_t count,
			      bool follow_fork)
{
	if (rec->started)
		return tk_fail(EINVAL, "record: pids must be set before the start");
	return tk_tracefs_set_event_pids(rec->tfs, pids, count, follow_fork);
}

TK_API int tk_record_start(struct tk_record *rec)
{
	int r;

	if (rec->started)
		return tk_fail(EINVAL, "record: already started");
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		r = pthread_create(&c->thread, NULL, capture_thread, c);
		if (r) {
			tk_fail(r, "cannot start the capture thread of CPU %u: %s", i, strerror(r));
			rec->started = true;
			tk_record_stop(rec);
			return -r;
		}
		c->thread_running = true;
	}
	rec->started = true;
	r = tk_tracefs_set_tracing_on(rec->tfs, true);
	if (r < 0) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", tk_errmsg());
		tk_record_stop(rec);
		return tk_fail(-r, "%s", msg);
	}
	return 0;
}

TK_API int tk_record_error(const struct tk_record *rec)
{
	return atomic_load(&((struct tk_record *)rec)->error);
}

TK_API int tk_record_stop(struct tk_record *rec)
{
	uint64_t one = 1;
	int r = 0;

	if (!rec->started || rec->stopped)
		return 0;
	rec->stopped = true;
	tk_tracefs_set_tracing_on(rec->tfs, false);
	atomic_store(&rec->stopping, true);
	if (write(rec->stop_fd, &one, sizeof(one)) < 0) {
		/* The threads still see the flag within one poll timeout. */
	}
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		if (c->thread_running) {
			pthread_join(c->thread, NULL);
			c->thread_running = false;
		}
	}
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];
		struct tk_tracefs_cpu_stats st;

		c->stats.pages = c->bytes / rec->page_size;
		if (tk_tracefs_cpu_stats(rec->tfs, c->cpu, &st, &c->stats_text) == 0) {
			c->stats.entries = st.entries;
			c->stats.overrun = st.overrun;
			c->stats.commit_overrun = st.commit_overrun;
			c->stats.dropped_events = st.dropped_events;
		}
		if (c->err && !r)
			r = tk_fail(c->err, "%s", c->errmsg);
	}
	return r;
}

/* ------------------------------------------------------------ assembly */

static int add_file_len64(struct tk_record *rec, struct bbuf *b, const char *rel)
{
	char *text;
	size_t len;
	int r = tk_tracefs_read_file(rec->tfs, rel, &text, &len);

	if (r < 0)
		return r;
	bb_u64(b, len);
	bb_put(b, text, len);
	free(text);
	return 0;
}

/* The format files of the events in @sys, as {u64 len, text} preceded by a u32 count. */
static int add_system_formats(struct tk_record *rec, struct bbuf *b, const char *sys)
{
	struct dirent **list;
	char *dir;
	uint32_t count = 0;
	size_t count_at;
	int n, r = 0;

	if (asprintf(&dir, "%s/events/%s", tk_tracefs_dir(rec->tfs), sys) < 0)
		return tk_fail(ENOMEM, "out of memory");
	n = scandir(dir, &list, NULL, alphasort);
	if (n < 0) {
		r = tk_fail(errno, "%s: %s", dir, strerror(errno));
		free(dir);
		return r;
	}
	count_at = b->len;
	bb_u32(b, 0);
	for (int i = 0; i < n; i++) {
		char *rel = NULL, *abs = NULL;
		struct stat st;

		if (r == 0 && list[i]->d_name[0] != '.' &&
		    asprintf(&rel, "events/%s/%s/format", sys, list[i]->d_name) >= 0) {
			if (asprintf(&abs, "%s/%s", tk_tracefs_dir(rec->tfs), rel) >= 0 &&
			    stat(abs, &st) == 0) {
				r = add_file_len64(rec, b, rel);
				count++;
			}
			free(abs);
			free(rel);
		}
		free(list[i]);
	}
	free(list);
	free(dir);
	if (!b->failed)
		tk_store_u32(b->p + count_at, count, false);
	return r;
}

static int add_metadata(struct tk_record *rec, struct tk_dat_writer *w)
{
	struct bbuf b = {0};
	char *text = NULL;
	size_t len;
	int r;

	/* 16: header_page and header_event of the recorded instance. */
	bb_str(&b, "header_page");
	r = add_file_len64(rec, &b, "events/header_page");
	bb_str(&b, "header_event");
	if (r == 0)
		r = add_file_len64(rec, &b, "events/header_event");
	if (r == 0 && !b.failed)
		r = tk_dat_writer_add_metadata(w, TK_DAT_SECTION_HEADER_INFO, b.p, b.len);
	b.len = 0;

	/* 17: ftrace's own events. */
	if (r == 0)
		r = add_system_formats(rec, &b, "ftrace");
	if (r == 0 && !b.failed)
		r = tk_dat_writer_add_metadata(w, TK_DAT_SECTION_FTRACE_EVENTS, b.p, b.len);
	b.len = 0;

	/* 18: every event of the systems recorded. */
	bb_u32(&b, (uint32_t)rec->nsystems);
	for (size_t i = 0; i < rec->nsystems && r == 0; i++) {
		bb_str(&b, rec->systems[i]);
		r = add_system_formats(rec, &b, rec->systems[i]);
	}
	if (r == 0 && !b.failed)
		r = tk_dat_writer_add_metadata(w, TK_DAT_SECTION_EVENT_FORMATS, b.p, b.len);
	b.len = 0;

	/* 19: kallsyms; an unreadable one is stored empty (symbols then show as addresses). */
	if (r == 0) {
		if (tk_tracefs_read_top_file("/proc/kallsyms", &text, &len) < 0 ||
		    len > UINT32_MAX) {
			tk_warn("/proc/kallsyms: %s; the file will show addresses, not symbols",
				tk_errmsg());
			len = 0;
		}
		bb_u32(&b, (uint32_t)len);
		bb_put(&b, text, len);
		free(text);
		text = NULL;
		if (!b.failed)
			r = tk_dat_writer_add_metadata(w, TK_DAT_SECTION_KALLSYMS, b.p, b.len);
		b.len = 0;
	}

	/* 20: printk formats. */
	if (r == 0) {
		if (tk_tracefs_read_top_file("printk_formats", &text, &len) < 0 ||
		    len > UINT32_MAX)
			len = 0;
		bb_u32(&b, (uint32_t)len);
		bb_put(&b, text, len);
		free(text);
		text = NULL;
		if (!b.failed)
			r = tk_dat_writer_add_metadata(w, TK_DAT_SECTION_PRINTK, b.p, b.len);
		b.len = 0;
	}

	/* 21: saved command lines. */
	if (r == 0) {
		if (tk_tracefs_read_top_file("saved_cmdlines", &text, &len) < 0)
			len = 0;
		bb_u64(&b, len);
		bb_put(&b, text, len);
		free(text);
		if (!b.failed)
			r = tk_dat_writer_add_metadata(w, TK_DAT_SECTION_CMDLINES, b.p, b.len);
	}
	if (r == 0 && b.failed)
		r = tk_fail(ENOMEM, "out of memory building the metadata");
	free(b.p);
	return r;
}

/*
 * TSC2NSEC: the kernel publishes the TSC-to-ns conversion in the first
 * page of any perf event mapping (time_mult, time_shift, time_zero).
 */
static int add_tsc2nsec(struct tk_dat_writer *w)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.exclude_kernel = 1,
	};
	struct perf_event_mmap_page *pg;
	uint8_t payload[16];
	long page = sysconf(_SC_PAGESIZE);
	int fd;

	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		tk_warn("perf_event_open: %s: the x86-tsc clock cannot be converted to ns; "
			"timestamps stay in TSC cycles",
			strerror(errno));
		return 0;
	}
	pg = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		close(fd);
		tk_warn("perf mmap: %s: timestamps stay in TSC cycles", strerror(errno));
		return 0;
	}
	if (pg->cap_user_time) {
		tk_store_u32(payload, pg->time_mult, false);
		tk_store_u32(payload + 4, pg->time_shift, false);
		tk_store_u64(payload + 8, pg->cap_user_time_zero ? pg->time_zero : 0, false);
		munmap(pg, (size_t)page);
		close(fd);
		return tk_dat_writer_add_option(w, TK_DAT_OPTION_TSC2NSEC, payload,
						sizeof(payload));
	}
	munmap(pg, (size_t)page);
	close(fd);
	tk_warn("the kernel does not publish the TSC conversion; timestamps stay in cycles");
	return 0;
}

static int add_options(struct tk_record *rec, struct tk_dat_writer *w, char *clock,
		       size_t clock_cap)
{
	struct utsname u;
	char *text = NULL, *s = NULL;
	uint8_t cnt[4];
	size_t len;
	int r;

	r = tk_tracefs_read_file(rec->tfs, "trace_clock", &text, &len);
	if (r < 0)
		return r;
	if (len)
		r = tk_dat_writer_add_option(w, TK_DAT_OPTION_TRACECLOCK, text, (uint32_t)len + 1);
	free(text);
	if (r < 0)
		return r;
	r = tk_tracefs_get_clock(rec->tfs, clock, clock_cap);
	if (r < 0)
		return r;

	if (uname(&u) == 0 &&
	    asprintf(&s, "%s %s %s %s", u.sysname, u.nodename, u.release, u.machine) >= 0) {
		r = tk_dat_writer_add_option(w, TK_DAT_OPTION_UNAME, s, (uint32_t)strlen(s) + 1);
		free(s);
		if (r < 0)
			return r;
	}
	r = tk_dat_writer_add_option(w, TK_DAT_OPTION_VERSION, rec->tracer_version,
				     (uint32_t)strlen(rec->tracer_version) + 1);
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		if (!c->stats_text)
			continue;
		if (asprintf(&s, "CPU: %u\n%s", c->cpu, c->stats_text) < 0)
			return tk_fail(ENOMEM, "out of memory");
		r = tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUSTAT, s, (uint32_t)strlen(s) + 1);
		free(s);
		if (r < 0)
			return r;
	}
	tk_store_u32(cnt, rec->ncpu, false);
	r = tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUCOUNT, cnt, sizeof(cnt));
	if (r < 0)
		return r;
	if (!strcmp(clock, "x86-tsc"))
		r = add_tsc2nsec(w);
	return r;
}

static void count_pages(struct tk_record *rec, const struct tk_page_format *fmt,
			struct rec_cpu *c, const uint8_t *buf, size_t len)
{
	for (size_t off = 0; off + rec->page_size <= len; off += rec->page_size) {
		struct tk_page_iter it;
		struct tk_page_header hdr;
		struct tk_page_record pr;

		if (tk_page_iter_init(&it, fmt, buf + off, rec->page_size, &hdr) < 0)
			continue;
		if (hdr.missed_events) {
			c->stats.missed_pages++;
			if (hdr.missed_stored)
				c->stats.missed_events += hdr.missed_count;
		}
		while (tk_page_iter_next(&it, &pr) > 0)
			c->stats.events++;
	}
}

static int copy_spool(struct tk_record *rec, struct tk_dat_writer *w,
		      const struct tk_page_format *fmt, struct rec_cpu *c, uint8_t *buf)
{
	uint64_t size, done = 0;
	struct stat st;
	int r;

	if (fstat(c->spool_fd, &st) < 0)
		return tk_fail(errno, "%s: %s", c->spool_path, strerror(errno));
	/* A spool cut by a full disk ends in part of a page: keep the whole ones. */
	size = (uint64_t)st.st_size / rec->page_size * rec->page_size;
	c->stats.pages = size / rec->page_size;
	c->stats.events = c->stats.missed_pages = c->stats.missed_events = 0;
	if (size == 0)
		return 0;
	r = tk_dat_writer_begin_cpu(w, c->cpu);
	if (r < 0)
		return r;
	while (done < size) {
		size_t want = size - done > COPY_BATCH ? COPY_BATCH : (size_t)(size - done);
		ssize_t n = pread(c->spool_fd, buf, want, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return tk_fail(n < 0 ? errno : EIO, "%s: offset 0x%" PRIx64 ": %s",
				       c->spool_path, done, n < 0 ? strerror(errno) : "file shrank");
		want = (size_t)n / rec->page_size * rec->page_size;
		if (!want)
			return tk_fail(EIO, "%s: short read", c->spool_path);
		count_pages(rec, fmt, c, buf, want);
		r = tk_dat_writer_write_pages(w, buf, want);
		if (r < 0)
			return r;
		done += want;
	}
	return tk_dat_writer_end_cpu(w);
}

TK_API int tk_record_finish(struct tk_record *rec)
{
	struct tk_dat_writer_opts wo = {
		.version = rec->version,
		.compression = rec->compression,
		.big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__,
		.long_size = (uint8_t)sizeof(long),
	};
	struct tk_page_format fmt;
	struct tk_dat_writer *w;
	char clock[64];
	uint8_t *buf = NULL;
	int r;

	if (rec->started && !rec->stopped)
		tk_record_stop(rec);
	r = read_page_format(rec, &fmt);
	if (r < 0)
		return r;
	wo.page_size = fmt.page_size;
	w = tk_dat_writer_open(rec->output, &wo);
	if (!w)
		return -errno;
	r = add_metadata(rec, w);
	if (r == 0)
		r = add_options(rec, w, clock, sizeof(clock));
	if (r == 0)
		r = tk_dat_writer_begin_buffer(w, "", clock, rec->page_size, rec->ncpu);
	if (r == 0) {
		buf = malloc(COPY_BATCH);
		if (!buf)
			r = tk_fail(ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < rec->ncpu && r == 0; i++)
		r = copy_spool(rec, w, &fmt, &rec->cpus[i], buf);
	free(buf);
	if (r == 0)
		r = tk_dat_writer_end_buffer(w);
	if (r == 0)
		r = tk_dat_writer_finish(w);
	tk_dat_writer_free(w);
	return r;
}

TK_API const struct tk_record_cpu_stats *tk_record_cpu_stats(const struct tk_record *rec,
							     uint32_t *count)
{
	for (uint32_t i = 0; i < rec->ncpu; i++)
		rec->stats[i] = rec->cpus[i].stats;
	*count = rec->ncpu;
	return rec->stats;
}

TK_API void tk_record_free(struct tk_record *rec)
{
	if (!rec)
		return;
	if (rec->started && !rec->stopped)
		tk_record_stop(rec);
	for (uint32_t i = 0; rec->cpus && i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		if (c->raw_fd >= 0)
			close(c->raw_fd);
		if (c->pipe_r >= 0)
			close(c->pipe_r);
		if (c->pipe_w >= 0)
			close(c->pipe_w);
		if (c->spool_fd >= 0) {
			close(c->spool_fd);
			unlink(c->spool_path);
		}
		free(c->spool_path);
		free(c->stats_text);
	}
	if (rec->stop_fd >= 0)
		close(rec->stop_fd);
	if (rec->tfs) {
		if (rec->created) {
			/* Keep the caller's error message: removal is cleanup. */
			char msg[1024];
			int r;

			snprintf(msg, sizeof(msg), "%s", tk_errmsg());
			r = tk_tracefs_remove(rec->tfs);
			if (r < 0)
				tk_warn("%s", tk_errmsg());
			tk_fail(EINVAL, "%s", msg);
		} else {
			tk_tracefs_disable_all_events(rec->tfs);
			tk_tracefs_close(rec->tfs);
		}
	}
	for (size_t i = 0; i < rec->nsystems; i++)
		free(rec->systems[i]);
	free(rec->systems);
	free(rec->stats);
	free(rec->cpus);
	free(rec->output);
	free(rec->tracer_version);
	free(rec);
}
