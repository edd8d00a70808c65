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
 * splice against the trace_pipe_raw mmap interface (kernel >= 6.10,
 * --capture mmap, kept for measurement). bench/bench-record, reference
 * machine (2 CPUs, kernel 6.18), 3 s of getppid() in a loop on CPU 1,
 * raw_syscalls:sys_enter system-wide, 4 MiB per CPU, release build, two
 * runs each (calls made / lost / recorder CPU time):
 *     splice   10.57 M / 0 / 1.87 s      9.88 M / 0 / 1.69 s
 *     mmap      6.10 M / 100 k (1.6%) / 2.90 s     6.03 M / 0 / 3.43 s
 *     perf      5.45 M / 0 / 4.40 s      6.86 M / 0 / 4.55 s
 * splice wins on both counts: the page goes to the page cache by
 * reference, 256 pages per call, while the mmap reader must copy each
 * sub-buffer out before the kernel reuses it, make one GET_READER ioctl
 * per page (plus re-copies of the page the writer is still on) and one
 * write() per page; the load also runs slower under it (it shares the CPU
 * with a busier capture thread). splice stays the default.
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
 * (and, compressed, the writer's chunking).
 *
 * Compression while recording. For a compressed v7 output one compressor
 * thread per CPU follows its spool: it preads each whole chunk (10 pages,
 * the .dat writer's chunk) once the capture thread has published it
 * (a release store of the spool size), compresses it with the output's
 * codec and level, counts its events and lost-event flags, and appends
 * {u32 csize, u32 usize, block} to an unnamed O_TMPFILE beside the
 * output (nothing to clean up after a crash; recover still reads the
 * spools, which keep every page). The stop joins the capture threads,
 * then lets the compressors finish every whole chunk on all cores at
 * once; the finish step puts their chunks into the file as they are
 * (tk_dat_writer_put_chunk()) and compresses only each CPU's last partial
 * chunk. The chunking and codec are the writer's, so the file is the same
 * one the finish step alone would write. It reads the page cache, never
 * the ring buffer, so a compressor that falls behind costs time at the
 * stop, never events; any failure of one (no O_TMPFILE, no room) leaves
 * the rest of its spool to the finish step. Memory: 8 chunks in and out
 * and a zstd context, ~3 MB per CPU. Measured on the reference machine
 * (2 vCPUs shared with other builds, load ~7-12), a getppid storm on both
 * CPUs, syscalls:sys_{enter,exit}_getppid: before, --duration 5 spent
 * ~6.5 s after the stop compressing 1.37 GB; now the compressors keep up
 * (the stop waits ~3-40 ms for them), and --duration 3 returns after
 * 3.7-4.3 s, ~0.4-0.7 s of it before the start (gathering kallsyms and
 * compressing the metadata under the storm's competition for the CPUs).
 * The metadata is compressed once, at the start: the blocks written to
 * .tkmeta are kept and copied into a zstd output (tk_dat_writer_put_metadata()),
 * which took the finish step from ~0.25 s to ~0.07 s under the storm.
 *
 * Buffer size. A buffer we create without opts->buffer_kb gets 16 MiB per
 * CPU (at most 1/256 of the memory over all CPUs): the kernel's default
 * 1408 KiB lost 7-13% of that storm, 8 MiB 5%, 16 MiB nothing (the capture
 * thread waits for a CPU tens of milliseconds at a time on a busy machine).
 * Losses that remain are reported with a size that would have avoided them
 * (tk_record_suggest_buffer_kb()).
 *
 * Side files and interruptions. tk_record_start() writes, before the first
 * page can exist, "<output>.tkmeta": a complete .dat (v7, zstd, ~1 MB
 * here, kallsyms mostly) with every metadata section and the options known
 * then, and holds an exclusive flock on it. It is our own format's reader
 * that reads it back, in tk_record_finish() as in tk_record_recover(), so
 * both assemble through one path (assemble()): metadata and options from
 * .tkmeta, the CPU stats (finish only) and a fresh saved_cmdlines, then
 * every whole page of every spool, into "<output>.tkpart", renamed over the
 * output when complete. The side files go only after the rename; a
 * recorder that dies earlier leaves them for "tracekit recover", which
 * refuses a locked .tkmeta (a live recorder), and treats an output newer
 * than .tkmeta as already complete. A spool's partial last page (kill,
 * full disk) is cut off; pages of zeros (punched, see below) are skipped.
 * Finish cost: it re-reads and recompresses the metadata (~30 ms) and
 * copies the spools at page-cache speed.
 *
 * Full disk. Assembling needs room while the spools still hold the data.
 * So tk_record_start() also sets aside "<output>.tkreserve" with
 * posix_fallocate(): the output's metadata (the .tkmeta size + 25% when
 * compressed, the raw size otherwise), two 1 MiB copy batches and 256 KiB
 * for the closing options and strings. A spool write that fails (ENOSPC)
 * stops that thread with a one-line message; the caller stops the rest.
 * The finish step deletes the reserve and, when free space is below what
 * a plain copy needs, punches each copied batch out of its spool
 * (FALLOC_FL_PUNCH_HOLE), so the output grows only as the spools shrink.
 * Measured: a 6 MiB tmpfs filled by raw_syscalls stops after ~1.5 MB of
 * pages (33 k events) and yields a file trace-cmd reads whole. The floor
 * is the metadata twice plus the reserve (~4.5 MB here): a disk with less
 * room refuses at start with a message naming the reserve. Punching trades
 * safety for room: if the finish itself is then killed, recover skips the
 * punched pages (they were in the .tkpart).
 *
 * Tracers and shared buffers. opts->tracer goes to current_tracer (via
 * tk_tracefs_set_tracer(), which alone may touch ftrace_enabled, and only
 * for the function tracers); its events are ftrace's own (function,
 * funcgraph_entry ...), whose formats every file carries anyway. A buffer
 * we did not create (--top, an existing instance) is handed back as found
 * in what we changed: events off, set_event_pid cleared, current_tracer
 * nop, and tracing_on as read in tk_record_new(); a created instance is
 * simply removed.
 *
 * Dynamic probes (opts->probes). kprobe_events and uprobe_events are
 * machine-wide, so a probe outlives any instance: tk_record_new() creates
 * them (tk_tracefs_probe_add(): appended, never truncating, a name that
 * exists is refused) after the buffer exists and before anything is
 * recorded, and enables each in our buffer like any event, which also
 * puts its group's formats in the file. tk_record_free() deletes exactly
 * those it created, and only after the buffer is gone or has its events
 * off, since the kernel will not delete an enabled probe. Every exit path
 * the caller controls ends in tk_record_free(), including a failure inside
 * tk_record_new(), so a refused second probe takes the first one with it.
 * A SIGKILL leaves them behind, under the names given, and noted in the
 * ledger (tracefs.h) from which `tracekit reset` removes them.
 *
 * Extract (opts->extract, the flight recorder's "tracekit extract"). The
 * buffer was set up and filled earlier, with no process of ours attached,
 * so the same engine takes what it holds instead: tk_record_new() turns
 * tracing off (the file then ends at one instant, and a writer in
 * overwrite mode cannot rotate pages under the reader) and learns the
 * systems to describe from the buffer's events/SYS/enable files rather than
 * from -e; tk_record_start() starts the threads without turning tracing
 * on, and the caller stops at once: the threads drain every whole page by
 * splice and the partial last one by read(), which consumes them, exactly
 * as a recording's stop does. tk_record_free() puts back tracing_on and
 * nothing else, so the flight recorder keeps its events and filters.
 *
 * The file (shared/specs/tracedat.md §2.7, §5.1): header_page and
 * header_event of the recorded instance; the formats of all of ftrace's own
 * events (print, bprint ...: trace_marker writes are "print" events); the
 * formats of every event of each system that had an event enabled (not all
 * ~100 systems as trace-cmd does: 2 MB saved per file); /proc/kallsyms;
 * printk_formats; saved_cmdlines (all gathered by tracedata-gather.c and
 * encoded by the tracedata codec). Options: TRACECLOCK (the instance's
 * trace_clock text), UNAME, VERSION, one CPUSTAT per CPU ("CPU: N\n" + the
 * stats text), CPUCOUNT and, for the x86-tsc clock, TSC2NSEC with the
 * kernel's perf mult/shift/zero. The data is the top buffer "" of the file
 * whatever instance it came from, so that trace-cmd report prints it
 * without an instance prefix.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
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
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/codec.h>
#include <tracekit/dat.h>
#include <tracekit/host.h>
#include <tracekit/page.h>
#include <tracekit/output.h>
#include <tracekit/tracedata.h>
#include <tracekit/record.h>
#include <tracekit/tracefs.h>

#include "formats/dat-internal.h"
#include "formats/tracedata-internal.h"
#include "internal/bytebuf.h"
#include "internal/bytes.h"
#include "internal/error.h"
#include "internal/opts.h"

#define PIPE_BYTES	 (1u << 20)
#define POLL_MS		 100
#define COPY_BATCH	 (1u << 20)
#define RESERVE_SLACK	 (256u << 10)
#define MAX_RECOVER_CPUS 4096u
/* Chunks a compressor thread reads and compresses per round (8 x 40 KiB). */
#define ZBATCH_CHUNKS 8u
#define ZIDLE_NS      (5 * 1000 * 1000)
/* Bounds of the ring buffer size per CPU that record picks for a buffer it creates. */
#define DEFAULT_BUFFER_KB_MAX	 16384u
#define DEFAULT_BUFFER_RAM_SHARE 256u

/*
 * What a compressor thread made of one spool while recording: @chunks
 * codec blocks of whole chunks, stored back to back in @fd (an unnamed
 * O_TMPFILE beside the output) as {u32 csize, u32 usize, block} in host
 * order, covering spool bytes [0, @upto).
 */
struct rec_zspool {
	int fd;
	uint64_t bytes;			  /* of @fd */
	uint64_t upto;			  /* spool bytes compressed */
	uint32_t chunks;		  /* in @fd */
	struct tk_record_cpu_stats stats; /* pages, events, missed of [0, upto) */
};

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
	uint64_t bytes;		    /* written to the spool */
	_Atomic uint64_t published; /* @bytes, for the compressor thread */
	pthread_t zthread;
	bool zthread_running;
	struct rec_zspool z; /* the compressor's until it is joined */
	int err;	     /* first failure of the thread */
	char errmsg[512];
	struct tk_record_cpu_stats stats;
	char *stats_text;
};

/* One metadata section as compressed (zstd, default level) for .tkmeta. */
struct meta_block {
	uint8_t *data;
	uint32_t csize, usize;
};

struct tk_record {
	char *output;
	int version;
	enum tk_compression compression;
	enum tk_record_capture capture;
	char *tracer_version;
	struct tk_tracefs *tfs;
	bool created; /* we made the instance: remove it */
	uint32_t ncpu;
	struct rec_cpu *cpus;
	uint32_t page_size;
	struct tk_page_format page_fmt;
	uint64_t chunk_bytes; /* of the output's compressed chunks; 0: no compressor threads */
	atomic_bool zdrain;   /* the spools are final: compress every whole chunk, then exit */
	int stop_fd;
	atomic_bool stopping;
	atomic_int error;
	bool started, stopped;
	bool extract;	/* opts->extract: take what the buffer holds, change nothing else */
	char **systems; /* systems with enabled events, ftrace excluded */
	size_t nsystems;
	int add_error;
	struct tk_record_cpu_stats *stats;
	char *meta_path;    /* <output>.tkmeta: what recover needs, written at start */
	int meta_fd;	    /* open with an exclusive flock while we live */
	char *reserve_path; /* <output>.tkreserve: room to finish on a full disk */
	uint64_t meta_raw;  /* uncompressed metadata bytes */
	uint64_t meta_file; /* size of .tkmeta (zstd) */
	struct meta_block meta_blocks[6]; /* sections 16..21 of .tkmeta, kept for the output */
	bool finished;			  /* the output is complete: side files may go */
	bool discarded;			  /* tk_record_discard(): nothing is worth keeping */
	int was_on;			  /* tracing_on before us, for a buffer we did not create */
	bool tracer_set;		  /* current_tracer was changed: back to nop at the end */
	uint32_t old_buffer_kb;		  /* a shared buffer's size before -b changed it, or 0 */
	uint32_t buffer_kb; /* per CPU, as the kernel reported it at the start; 0: unknown */
	bool pids_set;	    /* set_event_pid was written: cleared at the end */
	struct tk_tracefs_probe *probes; /* opts->probes, parsed */
	size_t nprobes;
	size_t probes_added; /* probes[0 .. probes_added) exist in the kernel: ours to remove */
	struct tk_tracefs_ledger *ledger; /* notes them for `tracekit reset` after a SIGKILL */
};

static int write_side_files(struct tk_record *rec);
static bool hole_page(const uint8_t *p);
static void count_pages(const struct tk_page_format *fmt, struct tk_record_cpu_stats *st,
			const uint8_t *buf, size_t len);
static void unlink_side_files(struct tk_record *rec);

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
	atomic_store_explicit(&c->published, c->bytes, memory_order_release);
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
		/* The kernel hands out whole pages; pad anything shorter so the spool stays
		 * aligned. */
		if ((size_t)n < c->rec->page_size)
			memset(page + n, 0, c->rec->page_size - (size_t)n);
		r = spool_write(c, page, c->rec->page_size);
		if (r < 0) {
			thread_fail(c, -r,
				    "%s: %s (%s): recording stopped; the pages written "
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
				thread_fail(c, errno,
					    "%s: %s (%s): recording stopped; the pages "
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
		atomic_store_explicit(&c->published, c->bytes, memory_order_release);
	}
}

/*
 * The trace_pipe_raw mmap interface (kernel >= 6.10,
 * Documentation/trace/ring-buffer-map.rst). <linux/trace_mmap.h> is not
 * in every libc's kernel headers, so the ABI is spelled out here.
 */
struct rb_map_meta {
	uint32_t meta_page_size;
	uint32_t meta_struct_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	struct {
		uint64_t lost_events;
		uint32_t id;
		uint32_t read;
	} reader;
	uint64_t flags;
	uint64_t entries;
	uint64_t overrun;
	uint64_t read;
	uint64_t reserved1;
	uint64_t reserved2;
};

#define RB_MAP_GET_READER _IO('R', 0x20)

/*
 * One CPU by mmap: GET_READER swaps a new reader sub-buffer in and says
 * which one it is. The writer may still be on it (a partial page that
 * grows), so the page is copied after every call and written to the spool
 * only when the kernel hands out a different one (or at the stop): each
 * page reaches the spool once, whole.
 */
static void capture_mmap(struct rec_cpu *c, uint8_t *page)
{
	struct tk_record *rec = c->rec;
	long host_page = sysconf(_SC_PAGESIZE);
	struct rb_map_meta *meta;
	uint8_t *data = MAP_FAILED;
	size_t data_len = 0;
	struct pollfd pfd[2] = {
		{.fd = c->raw_fd, .events = POLLIN},
		{.fd = rec->stop_fd, .events = POLLIN},
	};
	bool have = false, stop = false;
	uint32_t cur_id = 0, cur_len = 0;
	int wr;

	meta = mmap(NULL, (size_t)host_page, PROT_READ, MAP_SHARED, c->raw_fd, 0);
	if (meta == MAP_FAILED) {
		thread_fail(c, errno,
			    "%s: mmap of trace_pipe_raw failed: %s (%s); the kernel "
			    "needs 6.10 or later for --capture mmap",
			    c->spool_path);
		return;
	}
	if (meta->subbuf_size != rec->page_size || !meta->nr_subbufs) {
		thread_fail(c, EINVAL, "%s: mmap meta page: unexpected sub-buffer size: %s (%s)",
			    c->spool_path);
		goto out;
	}
	data_len = (size_t)meta->subbuf_size * meta->nr_subbufs;
	data = mmap(NULL, data_len, PROT_READ, MAP_SHARED, c->raw_fd, meta->meta_page_size);
	if (data == MAP_FAILED) {
		thread_fail(c, errno, "%s: mmap of the sub-buffers failed: %s (%s)", c->spool_path);
		goto out;
	}
	for (;;) {
		bool progress = false;

		if (!stop)
			stop = atomic_load(&rec->stopping);
		for (;;) {
			uint32_t id, len;

			if (ioctl(c->raw_fd, RB_MAP_GET_READER) < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN)
					thread_fail(c, errno, "%s: GET_READER failed: %s (%s)",
						    c->spool_path);
				break;
			}
			id = __atomic_load_n(&meta->reader.id, __ATOMIC_ACQUIRE);
			if (id >= meta->nr_subbufs)
				break;
			if (have && id == cur_id) {
				memcpy(page, data + (size_t)id * rec->page_size, rec->page_size);
				len = tk_load_u64(page + 8, false) & 0xfffff;
				if (len == cur_len)
					break;
				cur_len = len;
				progress = true;
				continue;
			}
			if (have && (wr = spool_write(c, page, rec->page_size)) < 0) {
				thread_fail(c, -wr,
					    "%s: %s (%s): recording stopped; the pages written "
					    "before are kept",
					    c->spool_path);
				goto out;
			}
			memcpy(page, data + (size_t)id * rec->page_size, rec->page_size);
			cur_len = tk_load_u64(page + 8, false) & 0xfffff;
			cur_id = id;
			have = true;
			progress = true;
		}
		if (c->err)
			break;
		if (stop && !progress)
			break;
		if (!stop)
			poll(pfd, 2, POLL_MS);
	}
	if (have && cur_len && !c->err && (wr = spool_write(c, page, rec->page_size)) < 0)
		thread_fail(c, -wr, "%s: %s (%s): the last page is lost", c->spool_path);
out:
	if (data != MAP_FAILED)
		munmap(data, data_len);
	munmap(meta, (size_t)host_page);
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
	if (rec->capture == TK_RECORD_CAPTURE_MMAP) {
		capture_mmap(c, page);
		free(page);
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

/* ---------------------------------------------------------- compression */

static int pread_all(int fd, uint8_t *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t r = pread(fd, buf, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int pwrite_all(int fd, const uint8_t *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t r = pwrite(fd, buf, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/*
 * Compress the whole chunks of [z->upto, z->upto + len) of the spool, read
 * into @in, and append them to z->fd. Any failure (no room for the
 * compressed file, a page of zeros the finish step would skip) leaves what
 * was done so far valid: the finish step compresses the rest itself.
 */
static int compress_batch(struct rec_cpu *c, struct tk_codec *codec, const uint8_t *in, size_t len,
			  uint8_t *out, size_t out_cap)
{
	struct tk_record *rec = c->rec;
	struct rec_zspool *z = &c->z;
	struct tk_record_cpu_stats st = {0};
	size_t fill = 0;
	uint32_t chunks = 0;

	for (size_t off = 0; off < len; off += rec->chunk_bytes) {
		int64_t n;

		for (size_t p = 0; p < rec->chunk_bytes; p += rec->page_size) {
			if (hole_page(in + off + p))
				return -1;
		}
		n = tk_codec_compress(codec, out + fill + 8, out_cap - fill - 8, in + off,
				      rec->chunk_bytes);
		if (n <= 0 || n > UINT32_MAX)
			return -1;
		tk_store_u32(out + fill, (uint32_t)n, false);
		tk_store_u32(out + fill + 4, (uint32_t)rec->chunk_bytes, false);
		fill += 8 + (size_t)n;
		chunks++;
	}
	count_pages(&rec->page_fmt, &st, in, len);
	if (pwrite_all(z->fd, out, fill, z->bytes) < 0)
		return -1;
	z->bytes += fill;
	z->upto += len;
	z->chunks += chunks;
	z->stats.pages += len / rec->page_size;
	z->stats.events += st.events;
	z->stats.missed_pages += st.missed_pages;
	z->stats.missed_events += st.missed_events;
	return 0;
}

/*
 * One per CPU while recording to a compressed file: compresses the spool's
 * whole chunks as the capture thread writes them, so that the finish step
 * only copies them. It reads the spool through the page cache (pread at
 * its own offsets), never the ring buffer, so a slow compressor costs CPU
 * time but never events. After the stop it compresses every whole chunk
 * left (zdrain) and exits; the finish step compresses the last partial one.
 */
static void *compress_thread(void *arg)
{
	struct rec_cpu *c = arg;
	struct tk_record *rec = c->rec;
	struct tk_codec *codec = tk_codec_new(rec->compression, 0);
	size_t batch = ZBATCH_CHUNKS * (size_t)rec->chunk_bytes, out_cap;
	uint8_t *in = malloc(batch), *out = NULL;

	if (codec) {
		out_cap = ZBATCH_CHUNKS * (8 + (size_t)tk_codec_bound(codec, rec->chunk_bytes));
		out = malloc(out_cap);
	}
	while (codec && in && out) {
		bool last = atomic_load(&rec->zdrain);
		uint64_t avail =
			atomic_load_explicit(&c->published, memory_order_acquire) - c->z.upto;
		size_t n = avail > batch ? batch
					 : (size_t)(avail / rec->chunk_bytes * rec->chunk_bytes);

		if (!n) {
			struct timespec nap = {.tv_nsec = ZIDLE_NS};

			if (last)
				break;
			nanosleep(&nap, NULL);
			continue;
		}
		if (pread_all(c->spool_fd, in, n, c->z.upto) < 0 ||
		    compress_batch(c, codec, in, n, out, out_cap) < 0)
			break;
	}
	tk_codec_free(codec);
	free(out);
	free(in);
	return NULL;
}

/* An unnamed file beside the output for a CPU's compressed chunks, or -1. */
static int open_zspool(const char *output)
{
	char *dir = strdup(output), *slash;
	int fd;

	if (!dir)
		return -1;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	free(dir);
	return fd;
}

/*
 * Compressor threads for a compressed v7 output. Where one cannot start
 * (no O_TMPFILE on that filesystem, no thread) that CPU is compressed by
 * the finish step as before: slower, never wrong.
 */
static void start_compressors(struct tk_record *rec)
{
	if (rec->version != 7 || rec->compression == TK_COMPRESS_NONE)
		return;
	rec->chunk_bytes = (uint64_t)TK_DAT_DEFAULT_CHUNK_PAGES * rec->page_size;
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		c->z.fd = open_zspool(rec->output);
		if (c->z.fd < 0)
			continue;
		if (pthread_create(&c->zthread, NULL, compress_thread, c) == 0) {
			c->zthread_running = true;
		} else {
			close(c->z.fd);
			c->z.fd = -1;
		}
	}
}

static void join_compressors(struct tk_record *rec)
{
	atomic_store(&rec->zdrain, true);
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		if (c->zthread_running) {
			pthread_join(c->zthread, NULL);
			c->zthread_running = false;
		}
	}
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

/*
 * Extract: the systems with an enabled event, from each events/SYS/enable
 * ("0", "1", or "X" when only some of its events are on).
 */
static int note_enabled_systems(struct tk_record *rec)
{
	struct dirent **list = NULL;
	char *dir;
	int n, r = 0;

	if (asprintf(&dir, "%s/events", tk_tracefs_dir(rec->tfs)) < 0)
		return tk_fail(ENOMEM, "out of memory");
	n = scandir(dir, &list, NULL, alphasort);
	if (n < 0) {
		r = tk_fail(errno, "%s: %s", dir, strerror(errno));
		free(dir);
		return r;
	}
	for (int i = 0; i < n; i++) {
		const char *sys = list[i]->d_name;
		char *rel = NULL, *text = NULL;
		size_t len;
		int rr;

		/*
		 * Files (header_page, enable ...) have no enable file below
		 * them, nor has ftrace: neither is a system to switch. Only
		 * running out of memory is an error: a system left out would
		 * leave its events undecodable.
		 */
		if (r == 0 && sys[0] != '.') {
			if (asprintf(&rel, "events/%s/enable", sys) < 0) {
				r = tk_fail(ENOMEM, "out of memory");
			} else {
				rr = tk_tracefs_read_file(rec->tfs, rel, &text, &len);
				if (rr == 0 && text[0] != '0')
					note_system(rec, sys);
				else if (rr == -ENOMEM)
					r = rr;
				free(text);
				free(rel);
			}
		}
		free(list[i]);
	}
	free(list);
	free(dir);
	if (r == 0 && rec->add_error)
		r = tk_fail(ENOMEM, "out of memory");
	return r;
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
			return tk_fail(err,
				       "%s: spool file exists: another recording to the same "
				       "output runs, or one was killed (its pages are in "
				       "that file); remove it or choose another output",
				       c->spool_path);
		return tk_fail(err, "%s: %s (%s)", c->spool_path, strerror(err),
			       strerrorname_np(err) ? strerrorname_np(err) : "?");
	}
	return 0;
}

/*
 * Create the dynamic probes and enable them in our buffer. Every
 * definition is parsed before the first is created, so a typo in the last
 * one leaves the kernel untouched; probes_added counts what exists, so
 * that a refusal halfway is undone by tk_record_free() like any failure.
 */
static int add_probes(struct tk_record *rec, const struct tk_record_opts *opts)
{
	int r;

	if (!opts->probe_count)
		return 0;
	rec->probes = calloc(opts->probe_count, sizeof(*rec->probes));
	rec->ledger = tk_tracefs_ledger_new();
	if (!rec->probes || !rec->ledger)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < opts->probe_count; i++) {
		r = tk_tracefs_probe_parse(opts->probes[i], &rec->probes[i]);
		if (r < 0)
			return r;
		rec->nprobes++;
	}
	for (size_t i = 0; i < rec->nprobes; i++) {
		struct tk_tracefs_probe *pr = &rec->probes[i];
		char spec[2 * TK_TRACEFS_PROBE_NAME_MAX + 2];

		r = tk_tracefs_probe_add(pr);
		if (r < 0)
			return r;
		rec->probes_added++;
		/* Noted once it exists: a note never names a probe that is someone else's. */
		if (tk_tracefs_ledger_note(rec->ledger, pr) < 0)
			tk_warn("%s: after a SIGKILL, tracekit reset will not find probe %s/%s",
				tk_errmsg(), pr->group, pr->event);
		/* Names are [A-Za-z0-9_] only: no glob can match more than this event. */
		snprintf(spec, sizeof(spec), "%s:%s", pr->group, pr->event);
		r = tk_tracefs_enable_events(rec->tfs, spec, NULL, on_event, rec);
		if (r < 0)
			return r;
		if (rec->add_error)
			return tk_fail(ENOMEM, "out of memory");
	}
	return 0;
}

/*
 * Delete the probes we created, last first. Runs after the buffer was
 * removed or handed back with its events off: the kernel refuses to delete
 * an enabled probe. A probe someone else already deleted is no failure.
 */
static void remove_probes(struct tk_record *rec)
{
	char msg[1024];

	bool all = true;

	if (!rec->probes) {
		tk_tracefs_ledger_free(rec->ledger, true);
		rec->ledger = NULL;
		return;
	}
	snprintf(msg, sizeof(msg), "%s", tk_errmsg());
	while (rec->probes_added) {
		int r = tk_tracefs_probe_remove(&rec->probes[--rec->probes_added]);

		if (r < 0 && r != -ENOENT) {
			tk_warn("%s", tk_errmsg());
			all = false;
		}
	}
	/* A probe the kernel kept stays in the ledger, for reset. */
	tk_tracefs_ledger_free(rec->ledger, all);
	rec->ledger = NULL;
	for (size_t i = 0; i < rec->nprobes; i++)
		tk_tracefs_probe_release(&rec->probes[i]);
	free(rec->probes);
	rec->probes = NULL;
	rec->nprobes = 0;
	tk_fail(EINVAL, "%s", msg);
}

/* buffer_size_kb reads "1408", or "7 (expanded: 1408)" before first use; 0 if unreadable. */
static uint32_t read_buffer_kb(struct tk_record *rec)
{
	char *text = NULL, *p;
	size_t len;
	unsigned long kb = 0;

	if (tk_tracefs_read_file(rec->tfs, "buffer_size_kb", &text, &len) < 0)
		return 0;
	p = strstr(text, "expanded:");
	kb = strtoul(p ? p + strlen("expanded:") : text, NULL, 10);
	free(text);
	return kb > UINT32_MAX ? 0 : (uint32_t)kb;
}

/*
 * The size of a buffer we create when the caller gives none: the kernel's
 * default (1408 KiB per CPU) lost 9-13% of a two-CPU getppid storm on the
 * reference machine (2 vCPUs shared with other work, a capture thread
 * waiting tens of milliseconds for a CPU), 8 MiB lost 5%, 16 MiB nothing.
 * So 16 MiB per CPU, but never more than 1/256 of the memory over all
 * CPUs (a 128-CPU, 256 GiB machine gets 8 MiB each, 1 GiB in all), and
 * never less than the kernel's default.
 */
static int set_default_buffer(struct tk_record *rec)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	int ncpu = tk_tracefs_cpu_count(rec->tfs);
	uint64_t kb = DEFAULT_BUFFER_KB_MAX;
	uint32_t now = read_buffer_kb(rec);

	if (pages > 0 && psize > 0 && ncpu > 0) {
		uint64_t share = (uint64_t)pages * (uint64_t)psize / 1024 /
				 DEFAULT_BUFFER_RAM_SHARE / (uint64_t)ncpu;

		if (share < kb)
			kb = share;
	}
	if (kb <= now)
		return 0;
	return tk_tracefs_set_buffer_kb(rec->tfs, (uint32_t)kb);
}

TK_API struct tk_record *tk_record_new(const struct tk_record_opts *user_opts)
{
	struct tk_record_opts opts_copy;
	const struct tk_record_opts *opts = &opts_copy;
	struct tk_record *rec;
	struct tk_page_format fmt;
	char name[64];
	int r, n;

	if (tk_opts_copy(&opts_copy, sizeof(opts_copy), user_opts, "tk_record_opts") < 0)
		return tk_fail_null(EINVAL, "%s", tk_errmsg());
	if (!user_opts || !opts->output || !opts->output[0] ||
	    (opts->file_version && opts->file_version != 6 && opts->file_version != 7))
		return tk_fail_null(EINVAL,
				    "record: output path and file version 6 or 7 are required");
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return tk_fail_null(ENOMEM, "out of memory");
	rec->stop_fd = -1;
	rec->meta_fd = -1;
	rec->version = opts->file_version ? opts->file_version : 7;
	rec->compression = opts->compression;
	rec->capture = opts->capture;
	rec->extract = opts->extract;
	if (opts->extract &&
	    ((!opts->top && !(opts->instance && opts->existing_instance)) || opts->event_count ||
	     opts->buffer_kb || opts->clock || opts->tracer || opts->probe_count)) {
		r = tk_fail(EINVAL, "record: extract takes an existing buffer as it is set up");
		goto fail;
	}
	/*
	 * Where the file goes, checked before anything is created: a link's
	 * target (the spools and the final rename go beside it), never a
	 * directory or a missing one, never a device or FIFO (a .dat is
	 * assembled from spools and renamed into place).
	 */
	{
		enum tk_output_kind kind;

		rec->output = tk_output_target_of(opts->output, &kind);
		if (!rec->output) {
			r = -errno;
			goto fail;
		}
		if (kind == TK_OUTPUT_STREAM) {
			r = tk_fail(
				ESPIPE,
				"%s: record writes a .dat, which needs a regular file (it is "
				"assembled beside it and renamed into place); record to a file and "
				"copy it",
				opts->output);
			goto fail;
		}
	}
	rec->tracer_version = strdup(opts->tracer_version ? opts->tracer_version : "tracekit");
	if (!rec->tracer_version) {
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
		rec->tfs =
			tk_tracefs_open(opts->instance ? opts->instance : name, TK_TRACEFS_CREATE);
		rec->created = rec->tfs != NULL;
	}
	if (!rec->tfs) {
		r = -errno;
		goto fail;
	}
	/* A shared buffer is handed back with tracing_on as it was found. */
	if (!rec->created) {
		rec->was_on = tk_tracefs_get_tracing_on(rec->tfs);
		if (rec->was_on < 0) {
			r = rec->was_on;
			goto fail;
		}
	}
	/* Nothing is recorded until tk_record_start(): a new instance starts with tracing on. */
	r = tk_tracefs_set_tracing_on(rec->tfs, false);
	if (r < 0)
		goto fail;
	if (opts->clock && (r = tk_tracefs_set_clock(rec->tfs, opts->clock)) < 0)
		goto fail;
	if (opts->buffer_kb && !rec->created) {
		/* A buffer others use gets its size back at the end ("7" or "7 (expanded: 1408)").
		 */
		char *text = NULL;
		size_t len;

		if (tk_tracefs_read_file(rec->tfs, "buffer_size_kb", &text, &len) == 0)
			rec->old_buffer_kb = (uint32_t)strtoul(text, NULL, 10);
		free(text);
	}
	if (opts->buffer_kb && (r = tk_tracefs_set_buffer_kb(rec->tfs, opts->buffer_kb)) < 0)
		goto fail;
	if (!opts->buffer_kb && rec->created && (r = set_default_buffer(rec)) < 0)
		goto fail;
	rec->buffer_kb = read_buffer_kb(rec);
	if (opts->tracer) {
		/* Set before anything is marked as changed: a refusal changes nothing. */
		r = tk_tracefs_set_tracer(rec->tfs, opts->tracer);
		if (r < 0)
			goto fail;
		rec->tracer_set = true;
	}
	r = add_probes(rec, opts);
	if (r < 0)
		goto fail;
	if (rec->extract && (r = note_enabled_systems(rec)) < 0)
		goto fail;
	for (size_t i = 0; i < opts->event_count; i++) {
		r = tk_tracefs_enable_events(rec->tfs, opts->events[i].spec, opts->events[i].filter,
					     on_event, rec);
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
	rec->page_fmt = fmt;
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
		c->raw_fd = c->pipe_r = c->pipe_w = c->spool_fd = c->z.fd = -1;
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
	/* A pid that is gone would record nothing, silently: say so before tracing. */
	for (size_t i = 0; i < count; i++) {
		if (pids[i] <= 0 || (kill(pids[i], 0) < 0 && errno == ESRCH))
			return tk_fail(ESRCH, "no process with pid %d", pids[i]);
	}
	rec->pids_set = true;
	return tk_tracefs_set_event_pids(rec->tfs, pids, count, follow_fork);
}

TK_API int tk_record_start(struct tk_record *rec)
{
	int r;

	if (rec->started)
		return tk_fail(EINVAL, "record: already started");
	/* What tracekit recover needs exists before the first page does. */
	r = write_side_files(rec);
	if (r < 0)
		return r;
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
	start_compressors(rec);
	rec->started = true;
	/* Extract reads what is there: tracing stays off until tk_record_free(). */
	r = rec->extract ? 0 : tk_tracefs_set_tracing_on(rec->tfs, true);
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
	/* The spools are final: what is left of them is compressed on every core at once. */
	join_compressors(rec);
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

/*
 * Compressed once: the same block goes into .tkmeta now and, for a zstd
 * output, into the output at the finish, which then only copies it.
 */
static int put_section(struct tk_record *rec, struct tk_dat_writer *w, struct tk_codec *codec,
		       uint16_t id, const void *body, uint64_t len)
{
	struct meta_block *mb = &rec->meta_blocks[id - TK_DAT_SECTION_HEADER_INFO];
	uint64_t cap;
	int64_t c;

	rec->meta_raw += len;
	if (!codec || !len || len > UINT32_MAX)
		return tk_dat_writer_add_metadata(w, id, body, len);
	cap = tk_codec_bound(codec, len);
	mb->data = cap <= SIZE_MAX ? malloc((size_t)cap) : NULL;
	if (!mb->data)
		return tk_fail(ENOMEM, "out of memory");
	c = tk_codec_compress(codec, mb->data, cap, body, len);
	if (c <= 0 || c > UINT32_MAX) {
		free(mb->data);
		mb->data = NULL;
		return tk_dat_writer_add_metadata(w, id, body, len);
	}
	mb->csize = (uint32_t)c;
	mb->usize = (uint32_t)len;
	return tk_dat_writer_put_metadata(w, id, mb->data, mb->csize, mb->usize);
}

/*
 * kallsyms, printk formats and saved command lines: an unreadable one is
 * stored empty (kallsyms with a warning: symbols then show as addresses);
 * only running out of memory stops the recording.
 */
static int gather_optional(struct tk_tracedata *td)
{
	int r = tk_tracedata_gather_kallsyms(td);

	if (r == -ENOMEM)
		return r;
	if (r < 0)
		tk_warn("/proc/kallsyms: %s; the file will show addresses, not symbols",
			tk_errmsg());
	r = tk_tracedata_gather_printk(td);
	if (r == -ENOMEM)
		return r;
	r = tk_tracedata_gather_cmdlines(td);
	return r == -ENOMEM ? r : 0;
}

/*
 * The metadata of the recorded instance, gathered through the tracedata
 * model and encoded as .dat sections 16..21: the headers, every ftrace
 * event's format, every event of the systems recorded, kallsyms, printk
 * formats and saved command lines.
 */
static int add_metadata(struct tk_record *rec, struct tk_dat_writer *w)
{
	struct tk_tracedata *td = tk_tracedata_new();
	struct tk_codec *codec = tk_codec_new(TK_COMPRESS_ZSTD, 0);
	struct tk_bytebuf b;
	int r;

	if (!td) {
		tk_codec_free(codec);
		return -ENOMEM;
	}
	r = tk_tracedata_gather_headers(td, rec->tfs);
	if (r == 0)
		r = tk_tracedata_gather_system(td, rec->tfs, "ftrace");
	for (size_t i = 0; i < rec->nsystems && r == 0; i++)
		r = tk_tracedata_gather_system(td, rec->tfs, rec->systems[i]);
	if (r == 0)
		r = gather_optional(td);
	tk_bytebuf_init(&b, false);
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES && r == 0;
	     id++) {
		tk_bytebuf_reset(&b);
		r = tk_tracedata_put_dat_section(td, id, &b);
		if (r == 0)
			r = put_section(rec, w, codec, id, b.data, b.len);
	}
	tk_bytebuf_release(&b);
	tk_tracedata_free(td);
	tk_codec_free(codec);
	return r;
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t mono_raw_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * One (tsc, ns) pair: the TSC on both sides of the clock read, midpoint
 * taken, best of five by the narrowest window (a guest can be preempted
 * between two reads; the narrowest pair is the one that was not).
 */
static void tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = __builtin_ia32_rdtsc(), n = mono_raw_ns(), b = __builtin_ia32_rdtsc();

		if (b >= a && b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

/* Measure the TSC against CLOCK_MONOTONIC_RAW over CALIBRATE_NS (~1 ppm). */
#define CALIBRATE_NS 20000000u
static int tsc_calibrate(uint32_t *mult, uint32_t *shift)
{
	uint64_t t0 = 0, t1 = 0, n0 = 0, n1 = 0, cycles, ns;
	struct timespec nap = {.tv_nsec = CALIBRATE_NS};

	tsc_pair(&t0, &n0);
	while (nanosleep(&nap, &nap) < 0 && errno == EINTR)
		;
	tsc_pair(&t1, &n1);
	if (t1 <= t0 || n1 <= n0)
		return -1;
	cycles = t1 - t0;
	ns = n1 - n0;
	if (ns < CALIBRATE_NS / 2)
		return -1;
	/*
	 * The largest shift whose mult still fits keeps the most precision.
	 * trace-cmd 3.1.6 holds mult in an int (a mult of 2^31 or more reads
	 * as negative and wrecks every timestamp), and shifts the high word
	 * by 32 - shift: so mult < 2^31 and shift <= 31.
	 */
	for (uint32_t s = 31; s > 0; s--) {
		unsigned __int128 m = ((unsigned __int128)ns << s) / cycles;

		if (m && m <= INT32_MAX) {
			*mult = (uint32_t)m;
			*shift = s;
			return 0;
		}
	}
	return -1;
}
#else
static int tsc_calibrate(uint32_t *mult, uint32_t *shift)
{
	(void)mult;
	(void)shift;
	return -1;
}
#endif

/*
 * TSC2NSEC {u32 mult, u32 shift, u64 offset}: readers compute
 * ns = (tsc * mult) >> shift. The kernel publishes its own conversion in
 * the first page of a perf event mapping (time_mult, time_shift,
 * time_zero) when sched_clock is the native TSC; under a hypervisor whose
 * paravirtual sched_clock is in use (kvm-clock guests, the reference
 * machine) it does not (cap_user_time 0), and the TSC is then calibrated
 * against CLOCK_MONOTONIC_RAW. Without either, the timestamps stay in
 * cycles, with a warning.
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
	uint32_t mult = 0, shift = 0;
	uint64_t zero = 0;
	bool have = false;
	int fd;

	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		pg = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
		if (pg != MAP_FAILED) {
			if (pg->cap_user_time && pg->time_mult && pg->time_mult <= INT32_MAX &&
			    pg->time_shift <= 31) {
				mult = pg->time_mult;
				shift = pg->time_shift;
				zero = pg->cap_user_time_zero ? pg->time_zero : 0;
				have = true;
			}
			munmap(pg, (size_t)page);
		}
		close(fd);
	}
	if (!have && tsc_calibrate(&mult, &shift) == 0)
		have = true;
	if (!have) {
		tk_warn("the x86-tsc clock cannot be converted to ns (no perf time page, no TSC "
			"calibration); timestamps stay in TSC cycles");
		return 0;
	}
	tk_store_u32(payload, mult, false);
	tk_store_u32(payload + 4, shift, false);
	tk_store_u64(payload + 8, zero, false);
	return tk_dat_writer_add_option(w, TK_DAT_OPTION_TSC2NSEC, payload, sizeof(payload));
}

/* The options known before the capture: everything but the per-CPU stats. */
static int add_options(struct tk_record *rec, struct tk_dat_writer *w, char *clock,
		       size_t clock_cap)
{
	struct tk_host *host;
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

	/* Host facts come from one place (host.c); without them the option is left out. */
	host = tk_host_new();
	if (host && asprintf(&s, "%s %s %s %s", host->sysname, host->hostname, host->osrelease,
			     host->arch) >= 0) {
		r = tk_dat_writer_add_option(w, TK_DAT_OPTION_UNAME, s, (uint32_t)strlen(s) + 1);
		free(s);
	}
	tk_host_free(host);
	if (r < 0)
		return r;
	r = tk_dat_writer_add_option(w, TK_DAT_OPTION_VERSION, rec->tracer_version,
				     (uint32_t)strlen(rec->tracer_version) + 1);
	if (r < 0)
		return r;
	tk_store_u32(cnt, rec->ncpu, false);
	r = tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUCOUNT, cnt, sizeof(cnt));
	if (r < 0)
		return r;
	if (!strcmp(clock, "x86-tsc"))
		r = add_tsc2nsec(w);
	return r;
}

/* ---------------------------------------------- side files and assembly */

/*
 * A page the assembly punched out of its spool (or never filled) reads as
 * zeros: no timestamp, no commit. The kernel never hands out such a page,
 * so it is skipped rather than stored as an empty page.
 */
static bool hole_page(const uint8_t *p)
{
	static const uint8_t zero[16];

	return memcmp(p, zero, sizeof(zero)) == 0;
}

static void count_pages(const struct tk_page_format *fmt, struct tk_record_cpu_stats *st,
			const uint8_t *buf, size_t len)
{
	for (size_t off = 0; off + fmt->page_size <= len; off += fmt->page_size) {
		struct tk_page_iter it;
		struct tk_page_header hdr;
		struct tk_page_record pr;

		if (tk_page_iter_init(&it, fmt, buf + off, fmt->page_size, &hdr) < 0)
			continue;
		if (hdr.missed_events) {
			st->missed_pages++;
			if (hdr.missed_stored)
				st->missed_events += hdr.missed_count;
		}
		while (tk_page_iter_next(&it, &pr) > 0)
			st->events++;
	}
}

/* What one assembly needs; shared by tk_record_finish() and tk_record_recover(). */
struct assembly {
	const char *output;
	int version;
	enum tk_compression compression;
	struct tk_dat *meta; /* the .tkmeta file, opened */
	uint32_t ncpu;
	const int *spool_fds; /* -1: no spool for that CPU */
	char *const *spool_paths;
	char *const *cpustat;		     /* per CPU stats text or NULL; may be NULL */
	const struct tk_tracedata *cmdlines; /* fresher saved_cmdlines, or NULL */
	bool punch;			     /* free spool space behind the copy */
	/* Per CPU, the chunks compressed while recording (NULL: none, as in recover). */
	const struct rec_zspool *const *pre;
	/* Sections 16..21 as compressed for .tkmeta (zstd), or NULL. */
	const struct meta_block *blocks;
	struct tk_record_cpu_stats *stats; /* ncpu entries; pages/events/missed filled */
};

/*
 * Put the chunks a compressor thread made into the open CPU. They are our
 * own file's, still checked: a chunk that does not fit is an error, not a
 * crash. Return: spool bytes they cover, or a negative errno.
 */
static int64_t put_precompressed(const struct assembly *a, struct tk_dat_writer *w,
				 const struct rec_zspool *z, struct tk_record_cpu_stats *st)
{
	uint8_t *map;
	uint64_t off = 0, covered = 0;
	int r = 0;

	if (!z || z->fd < 0 || !z->chunks || z->bytes > SIZE_MAX)
		return 0;
	map = mmap(NULL, (size_t)z->bytes, PROT_READ, MAP_PRIVATE, z->fd, 0);
	if (map == MAP_FAILED)
		return 0; /* the spool still holds every page: compress them here */
	for (uint32_t i = 0; i < z->chunks && r == 0; i++) {
		uint32_t csize, usize;

		if (z->bytes - off < 8) {
			r = tk_fail(EIO, "%s: compressed chunks cut short", a->output);
			break;
		}
		csize = tk_load_u32(map + off, false);
		usize = tk_load_u32(map + off + 4, false);
		if (z->bytes - off - 8 < csize) {
			r = tk_fail(EIO, "%s: compressed chunks cut short", a->output);
			break;
		}
		r = tk_dat_writer_put_chunk(w, map + off + 8, csize, usize);
		off += 8 + (uint64_t)csize;
		covered += usize;
	}
	munmap(map, (size_t)z->bytes);
	if (r < 0)
		return r;
	if (covered != z->upto)
		return tk_fail(EIO, "%s: compressed chunks cover %" PRIu64 " bytes, not %" PRIu64,
			       a->output, covered, z->upto);
	st->pages += z->stats.pages;
	st->events += z->stats.events;
	st->missed_pages += z->stats.missed_pages;
	st->missed_events += z->stats.missed_events;
	return (int64_t)covered;
}

static int copy_spool(const struct assembly *a, struct tk_dat_writer *w,
		      const struct tk_page_format *fmt, uint32_t cpu, uint8_t *buf)
{
	struct tk_record_cpu_stats *st = &a->stats[cpu];
	uint32_t ps = fmt->page_size;
	int fd = a->spool_fds[cpu];
	const char *path = a->spool_paths[cpu];
	bool begun = false, punch = a->punch;
	uint64_t size, done = 0;
	struct stat sb;
	int r;

	st->pages = st->events = st->missed_pages = st->missed_events = 0;
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) < 0)
		return tk_fail(errno, "%s: %s", path, strerror(errno));
	/* A spool cut by a full disk or a kill ends in part of a page: keep the whole ones. */
	size = (uint64_t)sb.st_size / ps * ps;
	if (a->pre && a->pre[cpu] && a->pre[cpu]->chunks && a->pre[cpu]->upto <= size &&
	    tk_dat_writer_chunk_bytes(w) == (uint64_t)TK_DAT_DEFAULT_CHUNK_PAGES * ps) {
		int64_t got;

		r = tk_dat_writer_begin_cpu(w, cpu);
		if (r < 0)
			return r;
		begun = true;
		got = put_precompressed(a, w, a->pre[cpu], st);
		if (got < 0)
			return (int)got;
		if (got && punch &&
		    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)got) < 0)
			punch = false;
		done = (uint64_t)got;
	}
	while (done < size) {
		size_t want = size - done > COPY_BATCH ? COPY_BATCH : (size_t)(size - done);
		ssize_t n = pread(fd, buf, want, (off_t)done);
		size_t run = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return tk_fail(n < 0 ? errno : EIO, "%s: offset 0x%" PRIx64 ": %s", path,
				       done, n < 0 ? strerror(errno) : "file shrank");
		want = (size_t)n / ps * ps;
		if (!want)
			return tk_fail(EIO, "%s: offset 0x%" PRIx64 ": short read", path, done);
		/* Write the runs of real pages between holes. */
		for (size_t off = 0; off <= want; off += ps) {
			if (off < want && !hole_page(buf + off)) {
				run += ps;
				continue;
			}
			if (run) {
				const uint8_t *p = buf + off - run;

				if (!begun) {
					r = tk_dat_writer_begin_cpu(w, cpu);
					if (r < 0)
						return r;
					begun = true;
				}
				count_pages(fmt, st, p, run);
				st->pages += run / ps;
				r = tk_dat_writer_write_pages(w, p, run);
				if (r < 0)
					return r;
				run = 0;
			}
		}
		/*
		 * On a full disk the output grows only as the spool shrinks.
		 * A filesystem that cannot punch holes still finishes when the
		 * reserve is enough.
		 */
		if (punch && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)done,
				       (off_t)want) < 0)
			punch = false;
		done += want;
	}
	return begun ? tk_dat_writer_end_cpu(w) : 0;
}

/* Copy the options of the .tkmeta file the writer does not make itself. */
static int copy_options(const struct assembly *a, struct tk_dat_writer *w)
{
	size_t n = tk_dat_option_count(a->meta);

	for (size_t i = 0; i < n; i++) {
		const struct tk_dat_option *o = tk_dat_option_get(a->meta, i);
		int r;

		if (o->id == TK_DAT_OPTION_DONE || o->id == TK_DAT_OPTION_BUFFER ||
		    o->id == TK_DAT_OPTION_CPUSTAT ||
		    (o->id >= TK_DAT_SECTION_HEADER_INFO && o->id <= TK_DAT_OPTION_BUFFER_TEXT))
			continue;
		r = tk_dat_writer_add_option(w, o->id, o->data, o->size);
		if (r < 0)
			return r;
	}
	for (uint32_t cpu = 0; a->cpustat && cpu < a->ncpu; cpu++) {
		char *s;
		int r;

		if (!a->cpustat[cpu])
			continue;
		if (asprintf(&s, "CPU: %u\n%s", cpu, a->cpustat[cpu]) < 0)
			return tk_fail(ENOMEM, "out of memory");
		r = tk_dat_writer_add_option(w, TK_DAT_OPTION_CPUSTAT, s, (uint32_t)strlen(s) + 1);
		free(s);
		if (r < 0)
			return r;
	}
	return 0;
}

/* saved_cmdlines as they are now (the kernel adds tasks while we record), or NULL. */
static struct tk_tracedata *fresh_cmdlines(void)
{
	struct tk_tracedata *td = tk_tracedata_new();

	if (td && tk_tracedata_gather_cmdlines(td) < 0) {
		tk_tracedata_free(td);
		td = NULL;
	}
	return td;
}

/*
 * Write the .dat to "<output>.tkpart" from the metadata file and the
 * spools, then rename it over @output: the output name never holds half a
 * file. The side files are left to the caller.
 */
static int assemble(const struct assembly *a)
{
	const struct tk_dat_info *info = tk_dat_get_info(a->meta);
	struct tk_dat_writer_opts wo = {
		.sz = sizeof(struct tk_dat_writer_opts),
		.version = a->version,
		.compression = a->compression,
		.big_endian = info->big_endian,
		.long_size = info->long_size,
		.page_size = info->page_size,
	};
	struct tk_dat_writer *w = NULL;
	uint8_t *buf = NULL;
	char *part = NULL;
	int fd = -1, r = 0;

	if (info->page_format.page_size != info->page_size || info->page_size < 64 ||
	    COPY_BATCH % info->page_size)
		return tk_fail(EBADMSG, "%s: page size %u cannot be assembled", info->path,
			       info->page_size);
	if (asprintf(&part, "%s.tkpart", a->output) < 0)
		return tk_fail(ENOMEM, "out of memory");
	fd = open(part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = tk_fail(errno, "%s: %s (%s)", part, strerror(errno),
			    strerrorname_np(errno) ? strerrorname_np(errno) : "?");
		goto out;
	}
	w = tk_dat_writer_open_fd(fd, part, &wo);
	if (!w) {
		r = -errno;
		goto out;
	}
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES && !r; id++) {
		const void *body;
		uint64_t len;
		void *own = NULL;

		if (id == TK_DAT_SECTION_CMDLINES && a->cmdlines) {
			r = tk_tracedata_encode_dat_section(a->cmdlines, id, info->big_endian, &own,
							    &len);
			if (r)
				break;
			body = own;
		} else if (a->blocks && a->blocks[id - TK_DAT_SECTION_HEADER_INFO].data &&
			   a->version == 7 && a->compression == TK_COMPRESS_ZSTD) {
			const struct meta_block *mb = &a->blocks[id - TK_DAT_SECTION_HEADER_INFO];

			r = tk_dat_writer_put_metadata(w, id, mb->data, mb->csize, mb->usize);
			continue;
		} else if (tk_dat_metadata(a->meta, id, &body, &len) < 0) {
			continue;
		}
		r = tk_dat_writer_add_metadata(w, id, body, len);
		free(own);
	}
	if (r == 0)
		r = copy_options(a, w);
	if (r == 0)
		r = tk_dat_writer_begin_buffer(w, "", info->clock, info->page_size, a->ncpu);
	if (r == 0 && !(buf = malloc(COPY_BATCH)))
		r = tk_fail(ENOMEM, "out of memory");
	for (uint32_t cpu = 0; cpu < a->ncpu && r == 0; cpu++)
		r = copy_spool(a, w, &info->page_format, cpu, buf);
	if (r == 0)
		r = tk_dat_writer_end_buffer(w);
	if (r == 0)
		r = tk_dat_writer_finish(w);
	if (r == 0 && rename(part, a->output) < 0)
		r = tk_fail(errno, "%s: cannot rename to %s: %s", part, a->output, strerror(errno));
out:
	tk_dat_writer_close(w);
	free(buf);
	if (fd >= 0)
		close(fd);
	if (r < 0 && part) {
		char msg[1024];

		/* Keep the real cause; the half file goes, the spools stay. */
		snprintf(msg, sizeof(msg), "%s", tk_errmsg());
		unlink(part);
		r = tk_fail(-r, "%s", msg);
	}
	free(part);
	return r;
}

/* Free bytes for an unprivileged writer in the directory of @path; UINT64_MAX if unknown. */
static uint64_t free_space(const char *path)
{
	char *dir = strdup(path), *slash;
	struct statvfs sv;
	uint64_t avail = UINT64_MAX;

	if (!dir)
		return avail;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	if (statvfs(dir, &sv) == 0 && sv.f_frsize && sv.f_bavail <= UINT64_MAX / sv.f_frsize)
		avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	free(dir);
	return avail;
}

/* Bytes the spools hold, for the space estimate. */
static uint64_t spool_bytes(const int *fds, uint32_t n)
{
	uint64_t sum = 0;
	struct stat sb;

	for (uint32_t i = 0; i < n; i++) {
		if (fds[i] >= 0 && fstat(fds[i], &sb) == 0 &&
		    (uint64_t)sb.st_size <= UINT64_MAX - sum)
			sum += (uint64_t)sb.st_size;
	}
	return sum;
}

/*
 * Room the finish step may need beyond what the spools free as they are
 * copied: the output's metadata (at most its uncompressed size, or what
 * the zstd .tkmeta took when the output is compressed too), two copy
 * batches in flight and the closing options and strings.
 */
static uint64_t reserve_size(uint64_t meta_raw, uint64_t meta_file, enum tk_compression c)
{
	uint64_t meta = c == TK_COMPRESS_NONE ? meta_raw : meta_file + meta_file / 4;

	return meta + 2 * (uint64_t)COPY_BATCH + RESERVE_SLACK;
}

static int open_excl(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return tk_fail(errno, "%s: %s (%s)", path, strerror(errno),
			       strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	return fd;
}

/*
 * Before the capture: "<output>.tkmeta", a complete .dat without data
 * (v7, zstd when available) holding every metadata section and the
 * options known now, and "<output>.tkreserve", disk space set aside so
 * that the finish step works on a disk the capture filled.
 */
static int write_side_files(struct tk_record *rec)
{
	struct tk_dat_writer_opts wo = {
		.sz = sizeof(struct tk_dat_writer_opts),
		.version = 7,
		.compression = TK_COMPRESS_ZSTD,
		.big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__,
		.long_size = (uint8_t)sizeof(long),
		.page_size = rec->page_size,
	};
	struct tk_dat_writer *w;
	char clock[64];
	struct stat sb;
	uint64_t need;
	int fd, r;

	if (asprintf(&rec->meta_path, "%s.tkmeta", rec->output) < 0 ||
	    asprintf(&rec->reserve_path, "%s.tkreserve", rec->output) < 0)
		return tk_fail(ENOMEM, "out of memory");
	rec->meta_fd = open_excl(rec->meta_path);
	if (rec->meta_fd < 0) {
		free(rec->meta_path);
		rec->meta_path = NULL;
		return rec->meta_fd;
	}
	/* Held until we exit: tracekit recover refuses a recording in progress. */
	flock(rec->meta_fd, LOCK_EX | LOCK_NB);
	w = tk_dat_writer_open_fd(rec->meta_fd, rec->meta_path, &wo);
	if (!w)
		return -errno;
	r = add_metadata(rec, w);
	if (r == 0)
		r = add_options(rec, w, clock, sizeof(clock));
	if (r == 0)
		r = tk_dat_writer_finish(w);
	tk_dat_writer_close(w);
	if (r < 0)
		return r;
	if (fstat(rec->meta_fd, &sb) < 0)
		return tk_fail(errno, "%s: %s", rec->meta_path, strerror(errno));

	rec->meta_file = (uint64_t)sb.st_size;
	need = reserve_size(rec->meta_raw, rec->meta_file, rec->compression);
	fd = open_excl(rec->reserve_path);
	if (fd < 0) {
		free(rec->reserve_path);
		rec->reserve_path = NULL;
		return fd;
	}
	r = posix_fallocate(fd, 0, (off_t)need);
	close(fd);
	if (r)
		return tk_fail(r,
			       "%s: cannot set aside %" PRIu64 " KiB to finish the file on a "
			       "full disk: %s (%s); free some space or choose another output",
			       rec->reserve_path, need >> 10, strerror(r),
			       strerrorname_np(r) ? strerrorname_np(r) : "?");
	return 0;
}

static void unlink_side_files(struct tk_record *rec)
{
	for (uint32_t i = 0; rec->cpus && i < rec->ncpu; i++) {
		if (rec->cpus[i].spool_fd >= 0)
			unlink(rec->cpus[i].spool_path);
	}
	if (rec->reserve_path)
		unlink(rec->reserve_path);
	if (rec->meta_path)
		unlink(rec->meta_path);
}

TK_API int tk_record_finish(struct tk_record *rec)
{
	struct assembly a = {
		.output = rec->output,
		.version = rec->version,
		.compression = rec->compression,
		.ncpu = rec->ncpu,
	};
	int *fds = NULL;
	char **paths = NULL, **stats = NULL;
	const struct rec_zspool **pre = NULL;
	struct tk_tracedata *cmdlines = NULL;
	uint64_t need;
	int r;

	if (!rec->started)
		return tk_fail(EINVAL, "record: finish before start");
	if (rec->finished)
		return 0;
	if (!rec->stopped)
		tk_record_stop(rec);
	a.meta = tk_dat_open_fd(rec->meta_fd, rec->meta_path);
	if (!a.meta)
		return -errno;
	fds = calloc(rec->ncpu, sizeof(*fds));
	paths = calloc(rec->ncpu, sizeof(*paths));
	stats = calloc(rec->ncpu, sizeof(*stats));
	a.stats = calloc(rec->ncpu, sizeof(*a.stats));
	pre = calloc(rec->ncpu, sizeof(*pre));
	if (!fds || !paths || !stats || !a.stats || !pre) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < rec->ncpu; i++) {
		fds[i] = rec->cpus[i].spool_fd;
		paths[i] = rec->cpus[i].spool_path;
		stats[i] = rec->cpus[i].stats_text;
		pre[i] = &rec->cpus[i].z;
	}
	a.pre = pre;
	a.blocks = rec->meta_blocks;
	a.spool_fds = fds;
	a.spool_paths = paths;
	a.cpustat = stats;
	/* The commands that ran during the recording are known only now. */
	cmdlines = fresh_cmdlines();
	a.cmdlines = cmdlines;
	/* The reserve was for this moment. */
	if (rec->reserve_path)
		unlink(rec->reserve_path);
	need = reserve_size(rec->meta_raw, rec->meta_file, rec->compression);
	if (need <= UINT64_MAX - spool_bytes(fds, rec->ncpu))
		need += spool_bytes(fds, rec->ncpu);
	a.punch = free_space(rec->output) < need;
	r = assemble(&a);
	if (r == 0) {
		rec->finished = true;
		for (uint32_t i = 0; i < rec->ncpu; i++) {
			struct tk_record_cpu_stats *st = &rec->cpus[i].stats;

			st->pages = a.stats[i].pages;
			st->events = a.stats[i].events;
			st->missed_pages = a.stats[i].missed_pages;
			st->missed_events = a.stats[i].missed_events;
		}
	}
out:
	tk_tracedata_free(cmdlines);
	free(a.stats);
	free(pre);
	free(stats);
	free(paths);
	free(fds);
	tk_dat_close(a.meta);
	return r;
}

/* ------------------------------------------------------------- recover */

struct recovery {
	char *meta_path, *reserve_path, *part_path;
	uint32_t ncpu;
	int *fds;
	char **paths;
	int meta_fd;
};

static void recovery_release(struct recovery *rv, bool remove_files)
{
	for (uint32_t i = 0; i < rv->ncpu; i++) {
		if (rv->fds && rv->fds[i] >= 0) {
			if (remove_files)
				unlink(rv->paths[i]);
			close(rv->fds[i]);
		}
		if (rv->paths)
			free(rv->paths[i]);
	}
	if (remove_files) {
		unlink(rv->reserve_path);
		unlink(rv->part_path);
		unlink(rv->meta_path);
	}
	if (rv->meta_fd >= 0)
		close(rv->meta_fd);
	free(rv->fds);
	free(rv->paths);
	free(rv->meta_path);
	free(rv->reserve_path);
	free(rv->part_path);
}

/* Open the spools "<output>.cpuN" for N < @ncpu that exist; -1 for the others. */
static int open_spools(struct recovery *rv, const char *output, uint32_t ncpu, uint64_t *total)
{
	rv->fds = malloc(ncpu * sizeof(*rv->fds));
	rv->paths = calloc(ncpu, sizeof(*rv->paths));
	if (!rv->fds || !rv->paths)
		return tk_fail(ENOMEM, "out of memory");
	rv->ncpu = ncpu;
	for (uint32_t i = 0; i < ncpu; i++)
		rv->fds[i] = -1;
	*total = 0;
	for (uint32_t i = 0; i < ncpu; i++) {
		struct stat sb;

		if (asprintf(&rv->paths[i], "%s.cpu%u", output, i) < 0) {
			rv->paths[i] = NULL;
			return tk_fail(ENOMEM, "out of memory");
		}
		rv->fds[i] = open(rv->paths[i], O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (rv->fds[i] < 0) {
			if (errno == ENOENT)
				continue;
			return tk_fail(errno, "%s: %s", rv->paths[i], strerror(errno));
		}
		if (fstat(rv->fds[i], &sb) < 0)
			return tk_fail(errno, "%s: %s", rv->paths[i], strerror(errno));
		if (!S_ISREG(sb.st_mode))
			return tk_fail(EINVAL, "%s: not a regular file", rv->paths[i]);
		*total += (uint64_t)sb.st_size;
	}
	return 0;
}

/* Highest N of an existing "<output>.cpuN" plus one, at most MAX_RECOVER_CPUS. */
static uint32_t spool_count(const char *output)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < MAX_RECOVER_CPUS; i++) {
		char *p;
		struct stat sb;

		if (asprintf(&p, "%s.cpu%u", output, i) < 0)
			break;
		if (lstat(p, &sb) == 0)
			n = i + 1;
		free(p);
	}
	return n;
}

TK_API int tk_record_recover(const char *output, const struct tk_record_recover_opts *user_opts,
			     struct tk_record_cpu_stats **stats, uint32_t *count)
{
	struct tk_record_recover_opts opts_copy;
	const struct tk_record_recover_opts *opts = &opts_copy;
	struct recovery rv = {.meta_fd = -1};
	struct assembly a = {.output = output};
	const struct tk_dat_info *info;
	struct stat msb, osb;
	struct tk_tracedata *cmdlines = NULL;
	uint64_t total = 0, need;
	int r;

	*stats = NULL;
	*count = 0;
	r = tk_opts_copy(&opts_copy, sizeof(opts_copy), user_opts, "tk_record_recover_opts");
	if (r < 0)
		return r;
	a.version = opts->file_version ? opts->file_version : 7;
	/* No options at all: v7 and zstd. */
	a.compression = r == 1 ? TK_COMPRESS_ZSTD : opts->compression;
	if (!output || !output[0] || (a.version != 6 && a.version != 7) ||
	    (a.version == 6 && a.compression != TK_COMPRESS_NONE))
		return tk_fail(EINVAL,
			       "recover: an output name, and version 6 (uncompressed) or 7");
	if (asprintf(&rv.meta_path, "%s.tkmeta", output) < 0 ||
	    asprintf(&rv.reserve_path, "%s.tkreserve", output) < 0 ||
	    asprintf(&rv.part_path, "%s.tkpart", output) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	rv.meta_fd = open(rv.meta_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (rv.meta_fd < 0) {
		uint32_t n = spool_count(output);

		if (errno != ENOENT) {
			r = tk_fail(errno, "%s: %s", rv.meta_path, strerror(errno));
			goto out;
		}
		/* Died before the capture began: the spools can only be empty. */
		r = open_spools(&rv, output, n, &total);
		if (r == 0 && n && total == 0) {
			recovery_release(&rv, true);
			return tk_fail(ENODATA,
				       "%s: the recorder died before it captured anything; "
				       "its empty spool files were removed",
				       output);
		}
		if (r == 0)
			r = tk_fail(ENOENT, "%s: nothing to recover: no %s%s", output, rv.meta_path,
				    n ? " (spool files without it cannot be read: remove them)"
				      : " and no spool files");
		goto out;
	}
	if (flock(rv.meta_fd, LOCK_EX | LOCK_NB) < 0) {
		r = tk_fail(EBUSY,
			    "%s: a recorder is still writing it (%s is locked); stop it "
			    "first",
			    output, rv.meta_path);
		goto out;
	}
	a.meta = tk_dat_open_fd(rv.meta_fd, rv.meta_path);
	if (!a.meta) {
		uint32_t n = spool_count(output);

		char head[10] = {0};
		ssize_t got = pread(rv.meta_fd, head, sizeof(head), 0);

		r = -errno;
		/*
		 * Not a .dat header we began (empty, or starting with the magic):
		 * it is not ours to remove, whatever made it.
		 */
		if (got > 0 && memcmp(head, "\x17\x08\x44tracing", (size_t)got)) {
			r = tk_fail(EBADMSG,
				    "%s: not the start of a .dat file: left as it is (%s); "
				    "nothing recovered",
				    rv.meta_path, tk_errmsg());
			goto out;
		}
		/* Killed while writing it: that is before the capture started. */
		if (open_spools(&rv, output, n, &total) == 0 && total == 0) {
			recovery_release(&rv, true);
			return tk_fail(ENODATA,
				       "%s: the recorder died before it captured anything; "
				       "its side files were removed",
				       output);
		}
		goto out;
	}
	info = tk_dat_get_info(a.meta);
	if (info->cpu_count == 0 || info->cpu_count > MAX_RECOVER_CPUS) {
		r = tk_fail(EBADMSG, "%s: CPU count %u out of range", rv.meta_path,
			    info->cpu_count);
		goto out;
	}
	/*
	 * An output newer than the metadata was renamed into place by the
	 * recorder, which died while removing its side files.
	 */
	if (stat(output, &osb) == 0 && fstat(rv.meta_fd, &msb) == 0 &&
	    (osb.st_mtim.tv_sec > msb.st_mtim.tv_sec ||
	     (osb.st_mtim.tv_sec == msb.st_mtim.tv_sec &&
	      osb.st_mtim.tv_nsec >= msb.st_mtim.tv_nsec))) {
		struct tk_dat *done = tk_dat_open(output);

		if (done) {
			tk_dat_close(done);
			r = open_spools(&rv, output, info->cpu_count, &total);
			if (r == 0) {
				recovery_release(&rv, true);
				tk_dat_close(a.meta);
				return 1;
			}
			goto out;
		}
	}
	r = open_spools(&rv, output, info->cpu_count, &total);
	if (r < 0)
		goto out;
	a.ncpu = info->cpu_count;
	a.spool_fds = rv.fds;
	a.spool_paths = rv.paths;
	a.stats = calloc(a.ncpu, sizeof(*a.stats));
	if (!a.stats) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < a.ncpu; i++)
		a.stats[i].cpu = i;
	/* As trace-cmd extract does: the command lines as the kernel knows them now. */
	cmdlines = fresh_cmdlines();
	a.cmdlines = cmdlines;
	unlink(rv.reserve_path);
	need = 0;
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES; id++) {
		const void *body;
		uint64_t len;

		if (tk_dat_metadata(a.meta, id, &body, &len) == 0 && len <= UINT64_MAX / 2 - need)
			need += len;
	}
	need = fstat(rv.meta_fd, &msb) == 0
		       ? reserve_size(need, (uint64_t)msb.st_size, a.compression)
		       : UINT64_MAX / 2;
	a.punch = total <= UINT64_MAX - need && free_space(output) < need + total;
	r = assemble(&a);
	if (r == 0) {
		*stats = a.stats;
		*count = a.ncpu;
		a.stats = NULL;
		tk_dat_close(a.meta);
		a.meta = NULL;
		recovery_release(&rv, true);
		tk_tracedata_free(cmdlines);
		return 0;
	}
out:
	tk_tracedata_free(cmdlines);
	free(a.stats);
	tk_dat_close(a.meta);
	recovery_release(&rv, false);
	return r;
}

TK_API uint32_t tk_record_buffer_kb(const struct tk_record *rec)
{
	return rec->buffer_kb;
}

/*
 * Each page flagged with lost events before it marks one time the capture
 * fell a whole buffer behind; what it lost then, on average, is what the
 * buffer lacked. Stalls vary a lot: on the reference machine a getppid
 * storm lost 7% with 1408 KiB, 5% with 8 MiB and nothing with 16 MiB, while
 * the average loss per time suggested ~3 MiB. So the margin is four times
 * that average and the size at least four times the current one, rounded
 * up to a power of two (1408 KiB -> 8 MiB there, 8 MiB -> 32 MiB).
 */
TK_API uint32_t tk_record_suggest_buffer_kb(const struct tk_record *rec, uint32_t cpu)
{
	const struct tk_record_cpu_stats *st;
	uint64_t lost, per_episode, bytes_per_event, want;

	if (cpu >= rec->ncpu || !rec->buffer_kb)
		return 0;
	st = &rec->cpus[cpu].stats;
	lost = st->overrun + st->commit_overrun + st->dropped_events;
	if (!lost)
		return 0;
	bytes_per_event = st->events ? st->pages * rec->page_size / st->events : 64;
	per_episode = lost / (st->missed_pages ? st->missed_pages : 1);
	want = (uint64_t)rec->buffer_kb +
	       4 * per_episode * (bytes_per_event ? bytes_per_event : 1) / 1024;
	if (want < 4 * (uint64_t)rec->buffer_kb)
		want = 4 * (uint64_t)rec->buffer_kb;
	if (want > (1u << 31))
		return 1u << 31;
	want--;
	for (unsigned sh = 1; sh < 64; sh <<= 1)
		want |= want >> sh;
	return (uint32_t)(want + 1);
}

TK_API const struct tk_record_cpu_stats *tk_record_cpu_stats(const struct tk_record *rec,
							     uint32_t *count)
{
	for (uint32_t i = 0; i < rec->ncpu; i++)
		rec->stats[i] = rec->cpus[i].stats;
	*count = rec->ncpu;
	return rec->stats;
}

/*
 * Hand a buffer we did not create (the top level, an existing instance)
 * back. What we changed is undone; the clock and buffer size stay as set,
 * as trace-cmd leaves them. Failures are warnings: this is cleanup, and
 * the caller's error message is kept.
 */
static void restore_shared(struct tk_record *rec)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", tk_errmsg());
	/* Extract changed nothing but tracing_on: the flight recorder keeps its events. */
	if (!rec->extract && tk_tracefs_disable_all_events(rec->tfs) < 0)
		tk_warn("%s", tk_errmsg());
	if (rec->pids_set && tk_tracefs_set_event_pids(rec->tfs, NULL, 0, false) < 0)
		tk_warn("%s", tk_errmsg());
	if (rec->tracer_set && tk_tracefs_write_file(rec->tfs, "current_tracer", "nop") < 0)
		tk_warn("%s", tk_errmsg());
	if (rec->old_buffer_kb && tk_tracefs_set_buffer_kb(rec->tfs, rec->old_buffer_kb) < 0)
		tk_warn("%s", tk_errmsg());
	if (rec->was_on == 1 && tk_tracefs_set_tracing_on(rec->tfs, true) < 0)
		tk_warn("%s", tk_errmsg());
	tk_fail(EINVAL, "%s", msg);
}

TK_API void tk_record_discard(struct tk_record *rec)
{
	rec->discarded = true;
}

TK_API void tk_record_free(struct tk_record *rec)
{
	bool keep = false;

	if (!rec)
		return;
	if (rec->started && !rec->stopped)
		tk_record_stop(rec);
	/*
	 * Captured pages that did not make it into a finished output stay
	 * for tracekit recover; everything else goes.
	 */
	if (rec->started && !rec->finished && !rec->discarded && rec->meta_path) {
		uint64_t bytes = 0;

		for (uint32_t i = 0; i < rec->ncpu; i++)
			bytes += rec->cpus[i].bytes;
		if (bytes) {
			tk_warn("%s: the captured pages stay in %s.cpu*: run 'tracekit recover %s'",
				rec->output, rec->output, rec->output);
			keep = true;
		}
	}
	if (!keep)
		unlink_side_files(rec);
	if (rec->meta_fd >= 0)
		close(rec->meta_fd);
	free(rec->meta_path);
	free(rec->reserve_path);
	for (size_t i = 0; i < 6; i++)
		free(rec->meta_blocks[i].data);
	for (uint32_t i = 0; rec->cpus && i < rec->ncpu; i++) {
		struct rec_cpu *c = &rec->cpus[i];

		if (c->raw_fd >= 0)
			close(c->raw_fd);
		if (c->pipe_r >= 0)
			close(c->pipe_r);
		if (c->pipe_w >= 0)
			close(c->pipe_w);
		if (c->spool_fd >= 0)
			close(c->spool_fd);
		if (c->z.fd >= 0)
			close(c->z.fd);
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
			restore_shared(rec);
			tk_tracefs_close(rec->tfs);
		}
	}
	remove_probes(rec);
	for (size_t i = 0; i < rec->nsystems; i++)
		free(rec->systems[i]);
	free(rec->systems);
	free(rec->stats);
	free(rec->cpus);
	free(rec->output);
	free(rec->tracer_version);
	free(rec);
}
