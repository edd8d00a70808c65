// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dat-write: stream a trace-cmd .dat file (v6 or v7) front to back.
 *
 * Byte layout written (facts in shared/specs/tracedat.md; "u" numbers are in
 * the file's byte order, cstr includes its NUL):
 *
 * v7 (sectioned), in file order:
 *
 *   "\x17\x08\x44" "tracing" "7\0" | endian u8 | long size u8 | u32 page size
 *   cstr codec name | cstr codec version | u64 offset of OPTIONS #1 (patched)
 *   section 16..21, as the caller adds them, each:
 *       u16 id | u16 flags | s32 string id | u64 size | body
 *       compressed body = u32 csize | u32 usize | one codec block
 *   OPTIONS #1 (id 0, never compressed), written at the first buffer:
 *       options 16..21 {u64 section offset} | caller's early options |
 *       DONE {u64 offset of OPTIONS #2, patched at finish}
 *   per buffer: FLYRECORD section (id 3, flags 1 when compressed):
 *       zero padding to a page multiple | CPU data | pad | CPU data ...
 *       uncompressed CPU data = pages verbatim, starting page aligned;
 *       compressed = u32 chunk count | count x {u32 csize, u32 usize, block}
 *   per latency text: BUFFER_TEXT section (id 22): raw text, or the chunk
 *       format above with 40960-byte chunks when compressed
 *   OPTIONS #2 (only when it has something to say): BUFFER options
 *       {u64 section offset, cstr name, cstr clock, u32 page size, u32 n,
 *        n x {u32 cpu, u64 offset, u64 size}}, BUFFER_TEXT options
 *       {u64 section offset, cstr name, cstr clock}, late options, DONE 0
 *   STRINGS (id 15, compressed when a codec is set): every description,
 *       NUL-terminated, as the last bytes of the file
 *
 * v6 (sequential, never compressed):
 *
 *   "\x17\x08\x44" "tracing" "6\0" | endian | long size | u32 page size
 *   bodies of 16..21 in id order (skipped ids written as empty bodies)
 *   u32 cpu count | "options  \0" | options | u16 0
 *   "flyrecord\0" | cpu count x {u64 offset, u64 size} (patched per CPU)
 *   [u64 len, "[clock]" when a TRACECLOCK option was given]
 *   page-aligned CPU data; then per instance "flyrecord\0" + its table + data
 *   or, instead of "flyrecord": "latency  \0" + text to EOF (refused with
 *   a TRACECLOCK option, which would make trace-cmd expect a clock blob)
 *
 * Invariants:
 *   - v7 sections tile the file from the end of the header to EOF: trace-cmd
 *     finds the string table by walking section headers, so every padding
 *     byte lives inside a section body (the flyrecord one).
 *   - The write position is tracked here (pos) and every write is a pwrite
 *     at it, so patches of earlier placeholders never disturb it and no
 *     lseek is needed. Patches are always within bytes already written.
 *   - Memory is O(one chunk + options + strings + CPU table): pages go to
 *     the file as they arrive; compressed data waits only until a chunk of
 *     chunk_pages pages is full. A whole-chunk write is compressed straight
 *     from the caller's memory without a copy.
 *   - With opts->compress_threads > 1, whole chunks are copied into a ring
 *     of slots that worker threads compress, and written from the
 *     caller's thread strictly in order (every file write and every field
 *     of the handle stays the caller's), so the file is byte for byte the
 *     single-threaded one; end_cpu waits for all of them. Chunks compressed
 *     elsewhere (tk_dat_writer_put_chunk(), the recorder's compressors) and
 *     metadata likewise (tk_dat_writer_put_metadata()) are written as given.
 *     Memory then adds 4 slots per thread (chunk + its zstd bound).
 *   - With opts->write_behind, the CPU data written is handed to the
 *     kernel's write-back every MiB (I/O slots: each slot) with
 *     sync_file_range(SYNC_FILE_RANGE_WRITE), which starts the disk
 *     writes without waiting for them: a caller that fsync()s the file
 *     (convert's tk_output) then waits for little. The headers before the
 *     first CPU data are left to the fsync(): they are patched later.
 *   - A CPU's data starts (and its padding is written) at its first page,
 *     so a CPU without pages leaves no bytes and no BUFFER entry.
 *   - After an I/O or allocation failure in the middle of a write the
 *     file is inconsistent; the writer then refuses every call (-EIO)
 *     rather than produce a file that looks valid.
 *
 * Why v6 instances must have the top buffer's CPU count: trace-cmd reads
 * every v6 flyrecord table with the one CPU count the options leave behind
 * (the last CPUCOUNT wins), so differing counts cannot be represented.
 * Each declared instance gets a BUFFER option (offset patched when its data
 * begins) followed by CPUCOUNT with that shared count, as trace-cmd does.
 */
#include "dat-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/bytebuf.h"
#include "tracedata-internal.h"
#include "internal/bytes.h"
#include "internal/error.h"
#include "internal/opts.h"

/* trace-cmd chunks latency text by ten host pages; the reference is 4 KiB. */
#define LATENCY_CHUNK_SIZE	   (10u * 4096u)
#define MAX_PAGE_SIZE		   (1u << 30)
#define MAX_CHUNK_BYTES		   (1u << 30)
#define MAX_CPUS		   (1u << 20)
#define V7_OPTION_ID_FIRST_SECTION 16
#define V7_OPTION_ID_LAST_SECTION  21
/* Most compressor threads a writer starts, and chunks in flight per thread. */
#define MAX_COMPRESS_THREADS 64u
#define SLOTS_PER_THREAD     4u
#define IO_SLOT_BYTES	     (1u << 20)
/* opts->write_behind: CPU data handed to write-back every this many bytes. */
#define WRITE_BEHIND_BYTES (1u << 20)

enum writer_state {
	ST_META,       /* header written, metadata may follow */
	ST_IDLE,       /* data began; between buffers */
	ST_BUFFER,     /* inside a buffer, no CPU open */
	ST_CPU,	       /* inside a CPU */
	ST_V6_LATENCY, /* v6 latency text written: nothing may follow */
	ST_DONE,       /* finished */
	ST_BROKEN,     /* a write failed midway */
};

/* The library's one growable buffer; the byte order is given per number here. */
#define wbuf tk_bytebuf

struct cpu_entry {
	uint32_t cpu;
	uint64_t offset;
	uint64_t size;
};

struct buffer_rec {
	char *name;
	char *clock;
	uint32_t page_size;
	uint64_t section_offset; /* v7 section header; v6 "flyrecord" tag */
	struct cpu_entry *cpus;
	uint32_t ncpus;
};

struct text_rec {
	char *name;
	char *clock;
	uint64_t section_offset;
};

struct v6_instance {
	char *name;
	uint64_t option_offset; /* where its BUFFER option's u64 offset lies */
	bool written;
};

struct tk_dat_writer {
	int fd;
	bool own_fd;
	char *name;
	int version;
	bool big;
	uint8_t long_size;
	uint32_t page_size;
	uint32_t chunk_pages;
	struct tk_codec *codec;
	enum writer_state state;
	uint64_t pos;

	/* v7 */
	uint64_t first_options_patch;
	uint64_t done1_patch;
	bool options1_written;
	uint64_t meta_offset[6];
	bool meta_written[6];
	struct wbuf strings;
	struct wbuf early_options;
	struct wbuf late_options;
	struct buffer_rec *buffers;
	size_t nbuffers;
	struct text_rec *texts;
	size_t ntexts;

	/* v6 */
	int v6_next_meta;
	bool v6_traceclock;
	bool v6_top_written;
	uint32_t v6_cpus;
	uint64_t v6_table;
	struct v6_instance *instances;
	size_t ninstances;

	/* current buffer and CPU */
	struct buffer_rec cur;
	uint32_t cur_cpu_count; /* declared CPUs: bounds the ids */
	bool cur_has_cpu;
	uint32_t cpu;
	bool cpu_started;
	uint64_t cpu_offset;
	uint64_t cpu_size;
	uint32_t cpu_chunks;
	uint8_t *chunk;
	uint64_t chunk_cap;
	uint64_t chunk_fill;
	uint8_t *cbuf;
	uint64_t cbuf_cap;
	struct zpool *zp; /* compressor threads, or NULL: compress in the caller's thread */
	bool write_behind;
	uint64_t wb_from; /* opts->write_behind: data before this was handed to write-back */
};

/*
 * Compressor threads (opts->compress_threads). The caller's thread keeps
 * all of the writer's state: it copies each whole chunk into the next slot
 * of a ring, and writes finished slots to the file strictly in order, so
 * the file is byte for byte the one the single-threaded path writes. The
 * workers only take a queued slot, compress it with their own codec
 * context and mark it done. Memory: nslots x (chunk + its bound).
 */
enum zslot_state { ZS_FREE, ZS_QUEUED, ZS_BUSY, ZS_DONE };

struct zslot {
	uint8_t *in, *out;
	uint64_t usize;
	uint64_t off;  /* I/O slots: where @in goes in the file */
	int64_t csize; /* or a negative errno, with errmsg */
	enum zslot_state state;
	char errmsg[256];
};

struct zpool {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	pthread_t *threads;
	uint32_t nthreads;
	struct zslot *slots;
	uint32_t nslots;
	uint64_t head, take, tail; /* next chunk to queue, to compress, to write */
	bool quit;
	bool io; /* an uncompressed file: one thread writes the slots, at @off */
	bool write_behind;
	int fd;
	enum tk_compression kind;
	int level;
	uint64_t in_cap, out_cap;
};

static const uint8_t zeros[4096];

static const char *const meta_desc[6] = {
	"headers", "ftrace events", "events format", "kallsyms", "printk", "command lines",
};

/* ------------------------------------------------------------ utilities */

static int wbuf_put(struct wbuf *b, const void *p, size_t n)
{
	tk_bytebuf_put(b, p, n);
	if (!b->err)
		return 0;
	tk_bytebuf_error(b); /* the message */
	return -ENOMEM;
}

static int wbuf_u16(struct wbuf *b, uint16_t v, bool big)
{
	uint8_t t[2];

	tk_store_u16(t, v, big);
	return wbuf_put(b, t, sizeof(t));
}

static int wbuf_u32(struct wbuf *b, uint32_t v, bool big)
{
	uint8_t t[4];

	tk_store_u32(t, v, big);
	return wbuf_put(b, t, sizeof(t));
}

static int wbuf_u64(struct wbuf *b, uint64_t v, bool big)
{
	uint8_t t[8];

	tk_store_u64(t, v, big);
	return wbuf_put(b, t, sizeof(t));
}

static int wbuf_cstr(struct wbuf *b, const char *s)
{
	return wbuf_put(b, s, strlen(s) + 1);
}

static void wbuf_release(struct wbuf *b)
{
	tk_bytebuf_release(b);
}

static int broken(struct tk_dat_writer *w, int ret)
{
	w->state = ST_BROKEN;
	return ret;
}

static int check_usable(struct tk_dat_writer *w)
{
	if (!w)
		return tk_fail(EINVAL, "no writer");
	if (w->state == ST_BROKEN)
		return tk_fail(EIO, "%s: writer unusable after an earlier failure", w->name);
	if (w->state == ST_DONE)
		return tk_fail(EINVAL, "%s: writer already finished", w->name);
	return 0;
}

static int invalid(struct tk_dat_writer *w, const char *what)
{
	return tk_fail(EINVAL, "%s: %s", w->name, what);
}

/* ------------------------------------------------------------------ I/O */

/* Write all of buf at off, retrying EINTR and short writes. */
static int write_at(struct tk_dat_writer *w, uint64_t off, const void *buf, uint64_t len)
{
	const uint8_t *p = buf;

	if (len > (uint64_t)INT64_MAX - off)
		return broken(w, tk_fail_at(EFBIG, w->name, off,
					    "write of %" PRIu64
					    " bytes exceeds the largest file offset",
					    len));
	while (len) {
		size_t n = len > (1u << 30) ? (1u << 30) : (size_t)len;
		ssize_t r = pwrite(w->fd, p, n, (off_t)off);

		if (r < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			return broken(w, tk_fail_at(err, w->name, off,
						    "cannot write %" PRIu64 " bytes: %s", len,
						    strerror(err)));
		}
		if (r == 0)
			return broken(w, tk_fail_at(EIO, w->name, off, "write made no progress"));
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

static int append(struct tk_dat_writer *w, const void *buf, uint64_t len)
{
	int ret = write_at(w, w->pos, buf, len);

	if (ret)
		return ret;
	w->pos += len;
	return 0;
}

/*
 * opts->write_behind: start the write-back of the CPU data written since
 * the last call once there is enough of it (SYNC_FILE_RANGE_WRITE does
 * not wait for the disk), so the fsync() that follows the file finds
 * little left. Not for a pipe or a device, where it fails harmlessly.
 */
static void write_behind(int fd, uint64_t *from, uint64_t to, uint64_t min)
{
	if (to - *from < min)
		return;
	sync_file_range(fd, (off_t)*from, (off_t)(to - *from), SYNC_FILE_RANGE_WRITE);
	*from = to;
}

static int append_zeros(struct tk_dat_writer *w, uint64_t len)
{
	while (len) {
		uint64_t n = len > sizeof(zeros) ? sizeof(zeros) : len;
		int ret = append(w, zeros, n);

		if (ret)
			return ret;
		len -= n;
	}
	return 0;
}

static int align_to(struct tk_dat_writer *w, uint32_t page)
{
	uint64_t rem = w->pos % page;

	return rem ? append_zeros(w, page - rem) : 0;
}

static int append_u32(struct tk_dat_writer *w, uint32_t v)
{
	uint8_t t[4];

	tk_store_u32(t, v, w->big);
	return append(w, t, sizeof(t));
}

static int append_u64(struct tk_dat_writer *w, uint64_t v)
{
	uint8_t t[8];

	tk_store_u64(t, v, w->big);
	return append(w, t, sizeof(t));
}

static int patch_u32(struct tk_dat_writer *w, uint64_t off, uint32_t v)
{
	uint8_t t[4];

	tk_store_u32(t, v, w->big);
	return write_at(w, off, t, sizeof(t));
}

static int patch_u64(struct tk_dat_writer *w, uint64_t off, uint64_t v)
{
	uint8_t t[8];

	tk_store_u64(t, v, w->big);
	return write_at(w, off, t, sizeof(t));
}

/* -------------------------------------------------------- compression */

static int ensure_cbuf(struct tk_dat_writer *w, uint64_t src_size)
{
	uint64_t need = tk_codec_bound(w->codec, src_size);
	uint8_t *p;

	if (need <= w->cbuf_cap)
		return 0;
	if (need > SIZE_MAX)
		return tk_fail(ENOMEM, "%s: compression buffer of %" PRIu64 " bytes", w->name,
			       need);
	p = realloc(w->cbuf, (size_t)need);
	if (!p)
		return tk_fail(ENOMEM,
			       "%s: out of memory for a %" PRIu64 " byte compression buffer",
			       w->name, need);
	w->cbuf = p;
	w->cbuf_cap = need;
	return 0;
}

/* Compress src into w->cbuf; returns the compressed size or a negative errno. */
static int64_t compress_block(struct tk_dat_writer *w, const void *src, uint64_t len)
{
	int64_t c;
	int ret;

	if (len > UINT32_MAX)
		return tk_fail(EFBIG,
			       "%s: block of %" PRIu64 " bytes exceeds the 4 GiB that a "
			       "compressed block header can describe",
			       w->name, len);
	ret = ensure_cbuf(w, len);
	if (ret)
		return ret;
	c = tk_codec_compress(w->codec, w->cbuf, w->cbuf_cap, src, len);
	if (c < 0)
		return tk_fail_prefix((int)c, w->name);
	if ((uint64_t)c > UINT32_MAX)
		return tk_fail(EFBIG, "%s: compressed block of %" PRId64 " bytes too large",
			       w->name, c);
	return c;
}

/* One chunk of CPU data or latency text: {u32 csize, u32 usize, block}. */
static int append_chunk(struct tk_dat_writer *w, const void *src, uint64_t len)
{
	int64_t c = compress_block(w, src, len);
	int ret;

	if (c < 0)
		return broken(w, (int)c);
	if (w->cpu_chunks == UINT32_MAX)
		return broken(w, tk_fail(EFBIG, "%s: too many chunks", w->name));
	ret = append_u32(w, (uint32_t)c);
	if (!ret)
		ret = append_u32(w, (uint32_t)len);
	if (!ret)
		ret = append(w, w->cbuf, (uint64_t)c);
	if (ret)
		return ret;
	w->cpu_chunks++;
	w->cpu_size += 8 + (uint64_t)c;
	if (w->write_behind)
		write_behind(w->fd, &w->wb_from, w->pos, WRITE_BEHIND_BYTES);
	return 0;
}

/* An I/O slot's bytes to the file; 0 or a negative errno with the slot's message set. */
static int64_t write_slot(int fd, struct zslot *sl)
{
	const uint8_t *p = sl->in;
	uint64_t off = sl->off, len = sl->usize;

	while (len) {
		ssize_t r = pwrite(fd, p, (size_t)len, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int err = r < 0 ? errno : EIO;

			snprintf(sl->errmsg, sizeof(sl->errmsg),
				 "cannot write %" PRIu64 " bytes: %s", sl->usize,
				 r < 0 ? strerror(err) : "write made no progress");
			return -err;
		}
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

static void *zpool_worker(void *arg)
{
	struct zpool *zp = arg;
	struct tk_codec *codec = zp->io ? NULL : tk_codec_new(zp->kind, zp->level);
	const char *why = codec ? NULL : tk_errmsg();

	pthread_mutex_lock(&zp->mu);
	for (;;) {
		struct zslot *sl;
		int64_t c;

		while (!zp->quit && zp->take == zp->head)
			pthread_cond_wait(&zp->work, &zp->mu);
		if (zp->take == zp->head)
			break;
		sl = &zp->slots[zp->take++ % zp->nslots];
		sl->state = ZS_BUSY;
		pthread_mutex_unlock(&zp->mu);
		if (zp->io) {
			uint64_t from = sl->off;

			c = write_slot(zp->fd, sl);
			if (c == 0 && zp->write_behind)
				write_behind(zp->fd, &from, sl->off + sl->usize, 0);
		} else if (codec) {
			c = tk_codec_compress(codec, sl->out, zp->out_cap, sl->in, sl->usize);
		} else {
			c = -ENOMEM;
		}
		if (c < 0 && !zp->io)
			snprintf(sl->errmsg, sizeof(sl->errmsg), "%s", why ? why : tk_errmsg());
		pthread_mutex_lock(&zp->mu);
		sl->csize = c;
		sl->state = ZS_DONE;
		pthread_cond_broadcast(&zp->done);
	}
	pthread_mutex_unlock(&zp->mu);
	tk_codec_free(codec);
	return NULL;
}

static void zpool_free(struct zpool *zp)
{
	if (!zp)
		return;
	pthread_mutex_lock(&zp->mu);
	zp->quit = true;
	pthread_cond_broadcast(&zp->work);
	pthread_mutex_unlock(&zp->mu);
	for (uint32_t i = 0; i < zp->nthreads; i++)
		pthread_join(zp->threads[i], NULL);
	for (uint32_t i = 0; zp->slots && i < zp->nslots; i++) {
		free(zp->slots[i].in);
		free(zp->slots[i].out);
	}
	free(zp->slots);
	free(zp->threads);
	pthread_cond_destroy(&zp->work);
	pthread_cond_destroy(&zp->done);
	pthread_mutex_destroy(&zp->mu);
	free(zp);
}

/* Start @n compressor threads for chunks of @chunk bytes; NULL on failure (message set). */
static struct zpool *zpool_new(struct tk_dat_writer *w, uint32_t n, enum tk_compression kind,
			       int level, uint64_t chunk)
{
	struct zpool *zp = calloc(1, sizeof(*zp));

	if (!zp) {
		tk_fail(ENOMEM, "%s: out of memory", w->name);
		return NULL;
	}
	pthread_mutex_init(&zp->mu, NULL);
	pthread_cond_init(&zp->work, NULL);
	pthread_cond_init(&zp->done, NULL);
	zp->kind = kind;
	zp->level = level;
	zp->in_cap = chunk;
	zp->io = !w->codec;
	zp->write_behind = w->write_behind;
	zp->fd = w->fd;
	zp->out_cap = zp->io ? 1 : tk_codec_bound(w->codec, chunk);
	zp->nslots = n * SLOTS_PER_THREAD;
	zp->slots = calloc(zp->nslots, sizeof(*zp->slots));
	zp->threads = calloc(n, sizeof(*zp->threads));
	if (!zp->slots || !zp->threads || zp->out_cap > SIZE_MAX || chunk > SIZE_MAX)
		goto oom;
	for (uint32_t i = 0; i < zp->nslots; i++) {
		zp->slots[i].in = malloc((size_t)chunk);
		zp->slots[i].out = malloc((size_t)zp->out_cap);
		if (!zp->slots[i].in || !zp->slots[i].out)
			goto oom;
	}
	for (uint32_t i = 0; i < n; i++) {
		int r = pthread_create(&zp->threads[i], NULL, zpool_worker, zp);

		if (r) {
			zpool_free(zp);
			tk_fail(r, "%s: cannot start a compressor thread: %s", w->name,
				strerror(r));
			return NULL;
		}
		zp->nthreads++;
	}
	return zp;
oom:
	zpool_free(zp);
	tk_fail(ENOMEM, "%s: out of memory for compressor buffers", w->name);
	return NULL;
}

/* Wait for the oldest chunk in flight and write it. */
static int zpool_write_one(struct tk_dat_writer *w)
{
	struct zpool *zp = w->zp;
	struct zslot *sl = &zp->slots[zp->tail % zp->nslots];
	int ret;

	pthread_mutex_lock(&zp->mu);
	while (sl->state != ZS_DONE)
		pthread_cond_wait(&zp->done, &zp->mu);
	pthread_mutex_unlock(&zp->mu);
	zp->tail++;
	sl->state = ZS_FREE;
	if (zp->io && sl->csize < 0)
		return broken(w, tk_fail_at((int)-sl->csize, w->name, sl->off, "%s", sl->errmsg));
	if (zp->io)
		return 0;
	if (sl->csize < 0)
		return broken(w, tk_fail((int)-sl->csize, "%s: %s", w->name, sl->errmsg));
	if (sl->csize > UINT32_MAX)
		return broken(w,
			      tk_fail(EFBIG, "%s: compressed block of %" PRId64 " bytes too large",
				      w->name, sl->csize));
	if (w->cpu_chunks == UINT32_MAX)
		return broken(w, tk_fail(EFBIG, "%s: too many chunks", w->name));
	ret = append_u32(w, (uint32_t)sl->csize);
	if (!ret)
		ret = append_u32(w, (uint32_t)sl->usize);
	if (!ret)
		ret = append(w, sl->out, (uint64_t)sl->csize);
	if (ret)
		return ret;
	w->cpu_chunks++;
	w->cpu_size += 8 + (uint64_t)sl->csize;
	if (w->write_behind)
		write_behind(w->fd, &w->wb_from, w->pos, WRITE_BEHIND_BYTES);
	return 0;
}

/* Write every chunk in flight, in order. */
static int zpool_drain(struct tk_dat_writer *w)
{
	while (w->zp && w->zp->tail < w->zp->head) {
		int ret = zpool_write_one(w);

		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Uncompressed CPU data: copied into I/O slots that the writer thread puts
 * at their offsets while the caller goes on; without one, written here.
 */
static int put_data_bytes(struct tk_dat_writer *w, const uint8_t *p, uint64_t len)
{
	struct zpool *zp = w->zp;

	if (!zp || !zp->io) {
		int ret = append(w, p, len);

		if (!ret && w->write_behind)
			write_behind(w->fd, &w->wb_from, w->pos, WRITE_BEHIND_BYTES);
		return ret;
	}
	if (len > (uint64_t)INT64_MAX - w->pos)
		return broken(w, tk_fail_at(EFBIG, w->name, w->pos,
					    "write of %" PRIu64
					    " bytes exceeds the largest file offset",
					    len));
	while (len) {
		uint64_t n = len > zp->in_cap ? zp->in_cap : len;
		struct zslot *sl;

		if (zp->head - zp->tail == zp->nslots) {
			int ret = zpool_write_one(w);

			if (ret)
				return ret;
		}
		sl = &zp->slots[zp->head % zp->nslots];
		memcpy(sl->in, p, (size_t)n);
		sl->usize = n;
		sl->off = w->pos;
		w->pos += n;
		pthread_mutex_lock(&zp->mu);
		sl->state = ZS_QUEUED;
		zp->head++;
		pthread_cond_signal(&zp->work);
		pthread_mutex_unlock(&zp->mu);
		p += n;
		len -= n;
	}
	return 0;
}

/* A chunk of CPU data: to a compressor thread when there are any, else compressed here. */
static int put_data_chunk(struct tk_dat_writer *w, const void *src, uint64_t len)
{
	struct zpool *zp = w->zp;
	struct zslot *sl;

	if (!zp)
		return append_chunk(w, src, len);
	if (len > zp->in_cap) {
		/* An instance with larger pages than the file's: compressed here, in order. */
		int ret = zpool_drain(w);

		return ret ? ret : append_chunk(w, src, len);
	}
	if (zp->head - zp->tail == zp->nslots) {
		int ret = zpool_write_one(w);

		if (ret)
			return ret;
	}
	sl = &zp->slots[zp->head % zp->nslots];
	memcpy(sl->in, src, len);
	sl->usize = len;
	pthread_mutex_lock(&zp->mu);
	sl->state = ZS_QUEUED;
	zp->head++;
	pthread_cond_signal(&zp->work);
	pthread_mutex_unlock(&zp->mu);
	return 0;
}

/* ------------------------------------------------------------- strings */

static int add_string(struct tk_dat_writer *w, const char *s, int32_t *id)
{
	size_t off = w->strings.len;
	int ret;

	if (off > INT32_MAX)
		return tk_fail(EOVERFLOW, "%s: string table too large", w->name);
	ret = wbuf_cstr(&w->strings, s);
	if (ret)
		return ret;
	*id = (int32_t)off;
	return 0;
}

/* ------------------------------------------------------------- sections */

static int append_section_header(struct tk_dat_writer *w, uint16_t id, uint16_t flags,
				 int32_t string_id, uint64_t size)
{
	uint8_t h[TK_DAT_SECTION_HEADER_SIZE];

	tk_store_u16(h, id, w->big);
	tk_store_u16(h + 2, flags, w->big);
	tk_store_u32(h + 4, (uint32_t)string_id, w->big);
	tk_store_u64(h + 8, size, w->big);
	return append(w, h, sizeof(h));
}

/*
 * Write a whole section whose body is in memory: a single compressed block
 * when compress is set (metadata, strings), else the body verbatim.
 */
static int append_section_sid(struct tk_dat_writer *w, uint16_t id, int32_t sid, const void *body,
			      uint64_t len, bool compress, uint64_t *offset)
{
	int64_t c;
	int ret;

	*offset = w->pos;
	if (!compress) {
		ret = append_section_header(w, id, 0, sid, len);
		return ret ? ret : append(w, body, len);
	}
	c = compress_block(w, body, len);
	if (c < 0)
		return c;
	ret = append_section_header(w, id, TK_DAT_SECTION_FL_COMPRESS, sid, 8 + (uint64_t)c);
	if (!ret)
		ret = append_u32(w, (uint32_t)c);
	if (!ret)
		ret = append_u32(w, (uint32_t)len);
	if (!ret)
		ret = append(w, w->cbuf, (uint64_t)c);
	return ret;
}

static int append_section(struct tk_dat_writer *w, uint16_t id, const char *desc, const void *body,
			  uint64_t len, bool compress, uint64_t *offset)
{
	int32_t sid = -1;
	int ret = add_string(w, desc, &sid);

	return ret ? ret : append_section_sid(w, id, sid, body, len, compress, offset);
}

static int option_put(struct wbuf *b, uint16_t id, const void *data, uint32_t size, bool big)
{
	int ret = wbuf_u16(b, id, big);

	if (!ret)
		ret = wbuf_u32(b, size, big);
	if (!ret)
		ret = wbuf_put(b, data, size);
	return ret;
}

/* Finish an OPTIONS body with DONE and write it; *done_off gets DONE's u64. */
static int append_options_section(struct tk_dat_writer *w, struct wbuf *body, uint64_t *offset,
				  uint64_t *done_off)
{
	int ret = wbuf_u16(body, TK_DAT_OPTION_DONE, w->big);

	if (!ret)
		ret = wbuf_u32(body, 8, w->big);
	if (!ret)
		ret = wbuf_u64(body, 0, w->big);
	if (ret)
		return ret;
	ret = append_section(w, TK_DAT_SECTION_OPTIONS, "options", body->data, body->len, false,
			     offset);
	if (ret)
		return ret;
	*done_off = w->pos - 8;
	return 0;
}

/* v7: the first OPTIONS section, written when the data part begins. */
static int v7_write_options1(struct tk_dat_writer *w)
{
	struct wbuf body = {0};
	uint64_t off;
	int ret = 0;

	if (w->options1_written)
		return 0;
	for (int i = 0; i < 6 && !ret; i++) {
		uint8_t t[8];

		if (!w->meta_written[i])
			continue;
		tk_store_u64(t, w->meta_offset[i], w->big);
		ret = option_put(&body, (uint16_t)(V7_OPTION_ID_FIRST_SECTION + i), t, 8, w->big);
	}
	if (!ret)
		ret = wbuf_put(&body, w->early_options.data, w->early_options.len);
	if (!ret)
		ret = append_options_section(w, &body, &off, &w->done1_patch);
	if (!ret)
		ret = patch_u64(w, w->first_options_patch, off);
	wbuf_release(&body);
	if (ret)
		return broken(w, ret);
	wbuf_release(&w->early_options);
	w->options1_written = true;
	return 0;
}

/* ------------------------------------------------------------------ v6 */

/* A v6 metadata part the caller did not give: the tracedata codec's empty body. */
static int v6_empty_body(struct tk_dat_writer *w, int id)
{
	static const struct tk_tracedata empty;
	struct tk_bytebuf b;
	int ret;

	tk_bytebuf_init(&b, w->big);
	ret = tk_tracedata_put_dat_section(&empty, (uint16_t)id, &b);
	if (!ret)
		ret = append(w, b.data, b.len);
	tk_bytebuf_release(&b);
	return ret;
}

static int v6_fill_meta(struct tk_dat_writer *w, int upto)
{
	while (w->v6_next_meta < upto) {
		int ret = v6_empty_body(w, w->v6_next_meta);

		if (ret)
			return ret;
		w->v6_next_meta++;
	}
	return 0;
}

static int append_tag(struct tk_dat_writer *w, const char *tag)
{
	char t[TK_DAT_V6_TAG_LEN] = {0};

	memcpy(t, tag, strlen(tag));
	return append(w, t, sizeof(t));
}

/*
 * v6: everything between the metadata and the first data tag: the CPU
 * count, the options block and its DONE.
 */
static int v6_write_options(struct tk_dat_writer *w, uint32_t cpus)
{
	uint64_t start;
	int ret;

	ret = v6_fill_meta(w, TK_DAT_SECTION_CMDLINES + 1);
	if (!ret)
		ret = append_u32(w, cpus);
	if (!ret)
		ret = append_tag(w, TK_DAT_V6_OPTIONS_TAG);
	if (!ret)
		ret = append(w, w->early_options.data, w->early_options.len);
	for (size_t i = 0; i < w->ninstances && !ret; i++) {
		struct wbuf opt = {0};
		uint8_t t[4];

		ret = wbuf_u16(&opt, TK_DAT_OPTION_BUFFER, w->big);
		if (!ret)
			ret = wbuf_u32(&opt, (uint32_t)(8 + strlen(w->instances[i].name) + 1),
				       w->big);
		if (!ret)
			ret = wbuf_u64(&opt, 0, w->big);
		if (!ret)
			ret = wbuf_cstr(&opt, w->instances[i].name);
		tk_store_u32(t, cpus, w->big);
		if (!ret)
			ret = option_put(&opt, TK_DAT_OPTION_CPUCOUNT, t, 4, w->big);
		start = w->pos;
		if (!ret)
			ret = append(w, opt.data, opt.len);
		w->instances[i].option_offset = start + 6;
		wbuf_release(&opt);
	}
	if (!ret) {
		uint8_t t[2];

		tk_store_u16(t, TK_DAT_OPTION_DONE, w->big);
		ret = append(w, t, 2);
	}
	if (ret)
		return broken(w, ret);
	wbuf_release(&w->early_options);
	w->v6_cpus = cpus;
	w->state = ST_IDLE;
	return 0;
}

/* v6: "flyrecord\0" and a zeroed {offset, size} table of v6_cpus entries. */
static int v6_write_flyrecord(struct tk_dat_writer *w)
{
	int ret = append_tag(w, TK_DAT_V6_FLYRECORD_TAG);

	w->v6_table = w->pos;
	if (!ret)
		ret = append_zeros(w, (uint64_t)w->v6_cpus * 16);
	return ret;
}

/* ---------------------------------------------------------- open/close */

static int validate_opts(const struct tk_dat_writer_opts *o, int *version, uint8_t *long_size,
			 uint32_t *chunk_pages)
{
	*version = o->version ? o->version : 7;
	if (*version != 6 && *version != 7)
		return tk_fail(EINVAL, "unsupported .dat version %d (6 or 7)", o->version);
	if (*version == 6 && o->compression != TK_COMPRESS_NONE)
		return tk_fail(EINVAL, ".dat version 6 cannot be compressed (asked for %s)",
			       tk_codec_name(o->compression));
	*long_size = o->long_size ? o->long_size : 8;
	if (*long_size != 4 && *long_size != 8)
		return tk_fail(EINVAL, "long size %u is not 4 or 8", o->long_size);
	if (o->page_size < 64 || o->page_size > MAX_PAGE_SIZE ||
	    (o->page_size & (o->page_size - 1)))
		return tk_fail(EINVAL, "page size %u is not a power of two in 64..%u", o->page_size,
			       MAX_PAGE_SIZE);
	*chunk_pages = o->chunk_pages ? o->chunk_pages : TK_DAT_DEFAULT_CHUNK_PAGES;
	if ((uint64_t)*chunk_pages * o->page_size > MAX_CHUNK_BYTES)
		return tk_fail(EINVAL, "chunk of %u pages of %u bytes is too large", *chunk_pages,
			       o->page_size);
	return 0;
}

static int write_header(struct tk_dat_writer *w, enum tk_compression comp)
{
	struct wbuf h = {0};
	uint8_t t[4];
	int ret;

	ret = wbuf_put(&h, TK_DAT_MAGIC, TK_DAT_MAGIC_LEN);
	if (!ret)
		ret = wbuf_cstr(&h, w->version == 6 ? "6" : "7");
	t[0] = w->big ? 1 : 0;
	t[1] = w->long_size;
	if (!ret)
		ret = wbuf_put(&h, t, 2);
	if (!ret)
		ret = wbuf_u32(&h, w->page_size, w->big);
	if (w->version == 7) {
		if (!ret)
			ret = wbuf_cstr(&h, tk_codec_name(comp));
		if (!ret)
			ret = wbuf_cstr(&h, comp == TK_COMPRESS_NONE ? "" : tk_codec_version(comp));
		w->first_options_patch = h.len;
		if (!ret)
			ret = wbuf_u64(&h, 0, w->big);
	}
	if (!ret)
		ret = append(w, h.data, h.len);
	wbuf_release(&h);
	return ret;
}

static struct tk_dat_writer *writer_new(int fd, bool own_fd, const char *name,
					const struct tk_dat_writer_opts *opts)
{
	struct tk_dat_writer *w;
	int version, ret;
	uint8_t long_size = 0;
	uint32_t chunk_pages = 0;

	if (!opts || !name) {
		errno = -tk_fail(EINVAL, "writer needs a name and options");
		return NULL;
	}
	ret = validate_opts(opts, &version, &long_size, &chunk_pages);
	if (ret) {
		tk_fail_prefix(ret, name);
		errno = -ret;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->name = strdup(name))) {
		free(w);
		errno = -tk_fail(ENOMEM, "%s: out of memory", name);
		return NULL;
	}
	w->fd = fd;
	w->version = version;
	w->big = opts->big_endian;
	w->long_size = long_size;
	w->page_size = opts->page_size;
	w->chunk_pages = chunk_pages;
	w->write_behind = opts->write_behind;
	w->state = ST_META;
	w->v6_next_meta = TK_DAT_SECTION_HEADER_INFO;
	if (opts->compression != TK_COMPRESS_NONE) {
		w->codec = tk_codec_new(opts->compression, opts->compression_level);
		if (!w->codec) {
			ret = -errno;
			tk_fail_prefix(ret, name);
			goto fail;
		}
	}
	if (opts->compress_threads > 1) {
		uint32_t n = opts->compress_threads > MAX_COMPRESS_THREADS ? MAX_COMPRESS_THREADS
									   : opts->compress_threads;

		/* Uncompressed: one thread writes 1 MiB batches while the caller reads on. */
		w->zp = w->codec ? zpool_new(w, n, opts->compression, opts->compression_level,
					     (uint64_t)w->chunk_pages * w->page_size)
				 : zpool_new(w, 1, opts->compression, 0, IO_SLOT_BYTES);
		if (!w->zp) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	ret = write_header(w, opts->compression);
	if (ret)
		goto fail;
	/* Only now does the writer own the descriptor: on failure the caller keeps it. */
	w->own_fd = own_fd;
	return w;
fail:
	zpool_free(w->zp);
	tk_codec_free(w->codec);
	free(w->name);
	free(w);
	errno = -ret;
	return NULL;
}

TK_API struct tk_dat_writer *tk_dat_writer_open_fd(int fd, const char *name,
						   const struct tk_dat_writer_opts *user_opts)
{
	struct tk_dat_writer_opts opts;

	if (!user_opts || tk_opts_copy(&opts, sizeof(opts), user_opts, "tk_dat_writer_opts") < 0) {
		errno = -tk_fail(EINVAL, "%s: %s", name ? name : "(fd)",
				 user_opts ? tk_errmsg() : "no writer options");
		return NULL;
	}
	if (fd < 0) {
		errno = -tk_fail(EBADF, "%s: bad file descriptor %d", name ? name : "(fd)", fd);
		return NULL;
	}
	/* The writer goes back to fill in offsets: a pipe or FIFO cannot hold a .dat. */
	if (lseek(fd, 0, SEEK_CUR) < 0) {
		errno = -tk_fail(ESPIPE,
				 "%s: a .dat needs a regular file (its writer goes back to fill in "
				 "offsets); write to a file and copy it",
				 name ? name : "(fd)");
		return NULL;
	}
	return writer_new(fd, false, name ? name : "(fd)", &opts);
}

TK_API struct tk_dat_writer *tk_dat_writer_open(const char *path,
						const struct tk_dat_writer_opts *user_opts)
{
	struct tk_dat_writer_opts opts;
	struct tk_dat_writer *w;
	int fd, err;

	if (!path) {
		errno = -tk_fail(EINVAL, "no path");
		return NULL;
	}
	if (!user_opts || tk_opts_copy(&opts, sizeof(opts), user_opts, "tk_dat_writer_opts") < 0) {
		errno = -tk_fail(EINVAL, "%s: %s", path,
				 user_opts ? tk_errmsg() : "no writer options");
		return NULL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = errno;
		errno = -tk_fail(err, "%s: cannot create: %s", path, strerror(err));
		return NULL;
	}
	w = writer_new(fd, true, path, &opts);
	if (!w) {
		err = errno;
		close(fd);
		errno = err;
	}
	return w;
}

static void buffer_rec_release(struct buffer_rec *b)
{
	free(b->name);
	free(b->clock);
	free(b->cpus);
	memset(b, 0, sizeof(*b));
}

TK_API void tk_dat_writer_close(struct tk_dat_writer *w)
{
	if (!w)
		return;
	if (w->own_fd)
		close(w->fd);
	zpool_free(w->zp);
	tk_codec_free(w->codec);
	wbuf_release(&w->strings);
	wbuf_release(&w->early_options);
	wbuf_release(&w->late_options);
	for (size_t i = 0; i < w->nbuffers; i++)
		buffer_rec_release(&w->buffers[i]);
	free(w->buffers);
	for (size_t i = 0; i < w->ntexts; i++) {
		free(w->texts[i].name);
		free(w->texts[i].clock);
	}
	free(w->texts);
	for (size_t i = 0; i < w->ninstances; i++)
		free(w->instances[i].name);
	free(w->instances);
	buffer_rec_release(&w->cur);
	free(w->chunk);
	free(w->cbuf);
	free(w->name);
	free(w);
}

/* ------------------------------------------------------------ metadata */

TK_API int tk_dat_writer_add_tracedata(struct tk_dat_writer *w, const struct tk_tracedata *td)
{
	struct tk_bytebuf b;
	int ret = 0;

	tk_bytebuf_init(&b, w->big);
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES && !ret;
	     id++) {
		tk_bytebuf_reset(&b);
		ret = tk_tracedata_put_dat_section(td, id, &b);
		if (!ret)
			ret = tk_dat_writer_add_metadata(w, id, b.data, b.len);
	}
	tk_bytebuf_release(&b);
	return ret;
}

TK_API int tk_dat_writer_add_metadata(struct tk_dat_writer *w, uint16_t id, const void *body,
				      uint64_t len)
{
	uint64_t off;
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (id < TK_DAT_SECTION_HEADER_INFO || id > TK_DAT_SECTION_CMDLINES)
		return tk_fail(EINVAL, "%s: section %u is not a metadata section (16..21)", w->name,
			       id);
	if (w->state != ST_META)
		return tk_fail(EINVAL, "%s: metadata section %u after the data began", w->name, id);
	if (len && !body)
		return invalid(w, "metadata body is NULL");
	if (w->version == 6) {
		if (id < w->v6_next_meta)
			return tk_fail(EINVAL,
				       "%s: v6 metadata section %u out of order or "
				       "duplicated (next allowed is %d)",
				       w->name, id, w->v6_next_meta);
		ret = v6_fill_meta(w, id);
		if (!ret)
			ret = append(w, body, len);
		if (ret)
			return broken(w, ret);
		w->v6_next_meta = id + 1;
		return 0;
	}
	if (w->meta_written[id - TK_DAT_SECTION_HEADER_INFO])
		return tk_fail(EINVAL, "%s: metadata section %u added twice", w->name, id);
	ret = append_section(w, id, meta_desc[id - TK_DAT_SECTION_HEADER_INFO], body, len,
			     w->codec != NULL, &off);
	if (ret)
		return broken(w, ret);
	w->meta_offset[id - TK_DAT_SECTION_HEADER_INFO] = off;
	w->meta_written[id - TK_DAT_SECTION_HEADER_INFO] = true;
	/* kallsyms can need megabytes of output room; the chunks need far less. */
	if (w->cbuf_cap > (1u << 20)) {
		free(w->cbuf);
		w->cbuf = NULL;
		w->cbuf_cap = 0;
	}
	return 0;
}

/*
 * A metadata section compressed elsewhere with the writer's codec and level
 * (the recorder compresses its metadata once, for its side file and the
 * output): the same bytes add_metadata() would write for its body.
 */
int tk_dat_writer_put_metadata(struct tk_dat_writer *w, uint16_t id, const void *block,
			       uint32_t csize, uint32_t usize)
{
	int32_t sid = -1;
	uint64_t off;
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (id < TK_DAT_SECTION_HEADER_INFO || id > TK_DAT_SECTION_CMDLINES)
		return tk_fail(EINVAL, "%s: section %u is not a metadata section (16..21)", w->name,
			       id);
	if (w->state != ST_META || w->version != 7 || !w->codec)
		return tk_fail(EINVAL,
			       "%s: compressed metadata section %u needs a compressed v7 "
			       "file before its data",
			       w->name, id);
	if (w->meta_written[id - TK_DAT_SECTION_HEADER_INFO])
		return tk_fail(EINVAL, "%s: metadata section %u added twice", w->name, id);
	if (!block || !csize)
		return invalid(w, "compressed metadata block is empty");
	off = w->pos;
	ret = add_string(w, meta_desc[id - TK_DAT_SECTION_HEADER_INFO], &sid);
	if (!ret)
		ret = append_section_header(w, id, TK_DAT_SECTION_FL_COMPRESS, sid,
					    8 + (uint64_t)csize);
	if (!ret)
		ret = append_u32(w, csize);
	if (!ret)
		ret = append_u32(w, usize);
	if (!ret)
		ret = append(w, block, csize);
	if (ret)
		return broken(w, ret);
	w->meta_offset[id - TK_DAT_SECTION_HEADER_INFO] = off;
	w->meta_written[id - TK_DAT_SECTION_HEADER_INFO] = true;
	return 0;
}

TK_API int tk_dat_writer_add_option(struct tk_dat_writer *w, uint16_t id, const void *data,
				    uint32_t size)
{
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (id == TK_DAT_OPTION_DONE || id == TK_DAT_OPTION_BUFFER ||
	    (id >= TK_DAT_SECTION_HEADER_INFO && id <= TK_DAT_OPTION_BUFFER_TEXT))
		return tk_fail(EINVAL, "%s: option %u (%s) is written by the writer itself",
			       w->name, id, tk_dat_option_name(id));
	if (size == 0 && (id == TK_DAT_OPTION_CPUSTAT || id == TK_DAT_OPTION_TRACECLOCK ||
			  id == TK_DAT_OPTION_UNAME || id == TK_DAT_OPTION_VERSION))
		return tk_fail(EINVAL,
			       "%s: option %u (%s) must not be empty: trace-cmd reads "
			       "its last byte",
			       w->name, id, tk_dat_option_name(id));
	if (size && !data)
		return invalid(w, "option payload is NULL");
	if (w->version == 6) {
		if (w->state != ST_META)
			return tk_fail(EINVAL, "%s: v6 option %u after the data began", w->name,
				       id);
		ret = option_put(&w->early_options, id, data, size, w->big);
		if (!ret && id == TK_DAT_OPTION_TRACECLOCK)
			w->v6_traceclock = true;
		return ret;
	}
	return option_put(w->options1_written ? &w->late_options : &w->early_options, id, data,
			  size, w->big);
}

TK_API int tk_dat_writer_declare_buffer(struct tk_dat_writer *w, const char *name)
{
	struct v6_instance *p;
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (!name)
		return invalid(w, "buffer name is NULL");
	if (w->version == 7)
		return 0;
	if (w->state != ST_META)
		return tk_fail(EINVAL, "%s: v6 buffer \"%s\" declared after the data began",
			       w->name, name);
	if (!*name)
		return invalid(w, "the top buffer needs no declaration");
	for (size_t i = 0; i < w->ninstances; i++)
		if (!strcmp(w->instances[i].name, name))
			return tk_fail(EINVAL, "%s: buffer \"%s\" declared twice", w->name, name);
	p = realloc(w->instances, (w->ninstances + 1) * sizeof(*p));
	if (!p)
		return tk_fail(ENOMEM, "%s: out of memory", w->name);
	w->instances = p;
	p += w->ninstances;
	memset(p, 0, sizeof(*p));
	p->name = strdup(name);
	if (!p->name)
		return tk_fail(ENOMEM, "%s: out of memory", w->name);
	w->ninstances++;
	return 0;
}

/* ------------------------------------------------------------- buffers */

static int ensure_chunk(struct tk_dat_writer *w, uint64_t bytes)
{
	uint8_t *p;

	if (bytes <= w->chunk_cap)
		return 0;
	p = realloc(w->chunk, (size_t)bytes);
	if (!p)
		return tk_fail(ENOMEM, "%s: out of memory for a %" PRIu64 " byte chunk", w->name,
			       bytes);
	w->chunk = p;
	w->chunk_cap = bytes;
	return 0;
}

static struct v6_instance *find_instance(struct tk_dat_writer *w, const char *name)
{
	for (size_t i = 0; i < w->ninstances; i++)
		if (!strcmp(w->instances[i].name, name))
			return &w->instances[i];
	return NULL;
}

static int v6_begin_buffer(struct tk_dat_writer *w, const char *name, const char *clock,
			   uint32_t page_size, uint32_t cpu_count)
{
	struct v6_instance *inst = NULL;
	int ret;

	if (page_size != w->page_size)
		return tk_fail(EINVAL,
			       "%s: v6 buffer \"%s\" page size %u differs from the "
			       "file's %u",
			       w->name, name, page_size, w->page_size);
	if (!w->v6_top_written) {
		if (*name)
			return tk_fail(EINVAL, "%s: v6 needs the top buffer before \"%s\"", w->name,
				       name);
	} else {
		inst = find_instance(w, name);
		if (!inst || inst->written)
			return tk_fail(EINVAL, "%s: v6 buffer \"%s\" %s", w->name, name,
				       !*name || (inst && inst->written)
					       ? "written twice"
					       : "was not declared before the data");
		if (cpu_count != w->v6_cpus)
			return tk_fail(EINVAL,
				       "%s: v6 buffer \"%s\" has %u CPUs, the top one %u; "
				       "v6 cannot tell them apart",
				       w->name, name, cpu_count, w->v6_cpus);
	}
	if (!inst) {
		ret = v6_write_options(w, cpu_count);
		if (ret)
			return ret;
		ret = v6_write_flyrecord(w);
		if (!ret && w->v6_traceclock) {
			/* "[clock]" with a u64 length and no NUL. */
			size_t n = strlen(clock);

			ret = append_u64(w, n + 2);
			if (!ret)
				ret = append(w, "[", 1);
			if (!ret)
				ret = append(w, clock, n);
			if (!ret)
				ret = append(w, "]", 1);
		}
		w->v6_top_written = true;
	} else {
		ret = patch_u64(w, inst->option_offset, w->pos);
		if (!ret)
			ret = v6_write_flyrecord(w);
		inst->written = true;
	}
	return ret ? broken(w, ret) : 0;
}

TK_API int tk_dat_writer_begin_buffer(struct tk_dat_writer *w, const char *name, const char *clock,
				      uint32_t page_size, uint32_t cpu_count)
{
	struct buffer_rec *b;
	char *desc;
	int32_t sid = -1; /* set by add_string() before use */
	int ret = check_usable(w);

	if (ret)
		return ret;
	b = &w->cur;
	if (!name)
		return invalid(w, "buffer name is NULL");
	if (!clock)
		clock = "local";
	if (w->state == ST_BUFFER || w->state == ST_CPU)
		return tk_fail(EINVAL, "%s: buffer \"%s\" begun inside buffer \"%s\"", w->name,
			       name, w->cur.name);
	if (w->state == ST_V6_LATENCY)
		return invalid(w, "v6 latency text must be the file's only data");
	if (!*name && page_size != w->page_size)
		return tk_fail(EINVAL, "%s: top buffer page size %u differs from the file's %u",
			       w->name, page_size, w->page_size);
	if (page_size < 64 || page_size > MAX_PAGE_SIZE || (page_size & (page_size - 1)))
		return tk_fail(EINVAL,
			       "%s: buffer \"%s\" page size %u is not a power of two in "
			       "64..%u",
			       w->name, name, page_size, MAX_PAGE_SIZE);
	if (cpu_count > MAX_CPUS)
		return tk_fail(EINVAL, "%s: %u CPUs is too many", w->name, cpu_count);
	for (size_t i = 0; i < w->nbuffers; i++)
		if (!strcmp(w->buffers[i].name, name))
			return tk_fail(EINVAL, "%s: buffer \"%s\" written twice", w->name, name);
	if (w->codec && (ret = ensure_chunk(w, (uint64_t)w->chunk_pages * page_size)))
		return ret;

	memset(b, 0, sizeof(*b));
	b->name = strdup(name);
	b->clock = strdup(clock);
	if (!b->name || !b->clock) {
		buffer_rec_release(b);
		return tk_fail(ENOMEM, "%s: out of memory", w->name);
	}
	b->page_size = page_size;
	w->cur_has_cpu = false;
	w->cur_cpu_count = cpu_count;

	if (w->version == 6) {
		b->section_offset = w->pos;
		ret = v6_begin_buffer(w, name, clock, page_size, cpu_count);
		if (ret) {
			buffer_rec_release(b);
			return ret;
		}
		b->section_offset = w->v6_table - TK_DAT_V6_TAG_LEN;
		w->state = ST_BUFFER;
		return 0;
	}

	ret = v7_write_options1(w);
	if (ret)
		goto fail;
	if (asprintf(&desc, "buffer flyrecord %s", name) < 0) {
		ret = tk_fail(ENOMEM, "%s: out of memory", w->name);
		goto fail;
	}
	ret = add_string(w, desc, &sid);
	free(desc);
	if (ret)
		goto fail;
	b->section_offset = w->pos;
	ret = append_section_header(w, TK_DAT_SECTION_FLYRECORD,
				    w->codec ? TK_DAT_SECTION_FL_COMPRESS : 0, sid, 0);
	if (!ret)
		ret = align_to(w, page_size);
	if (ret)
		goto fail;
	w->state = ST_BUFFER;
	return 0;
fail:
	buffer_rec_release(b);
	return broken(w, ret);
}

TK_API int tk_dat_writer_begin_cpu(struct tk_dat_writer *w, uint32_t cpu)
{
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (w->state == ST_CPU)
		return tk_fail(EINVAL, "%s: CPU %u begun while CPU %u is open", w->name, cpu,
			       w->cpu);
	if (w->state != ST_BUFFER)
		return tk_fail(EINVAL, "%s: CPU %u begun outside a buffer", w->name, cpu);
	if (cpu >= w->cur_cpu_count)
		return tk_fail(EINVAL, "%s: CPU %u out of range (buffer \"%s\" has %u)", w->name,
			       cpu, w->cur.name, w->cur_cpu_count);
	if (w->cur_has_cpu && cpu <= w->cpu)
		return tk_fail(EINVAL, "%s: CPU %u after CPU %u: CPU ids must increase", w->name,
			       cpu, w->cpu);
	w->cpu = cpu;
	w->cur_has_cpu = true;
	w->cpu_started = false;
	w->cpu_size = 0;
	w->cpu_chunks = 0;
	w->chunk_fill = 0;
	w->state = ST_CPU;
	return 0;
}

/* The first page of a CPU: align it and, compressed, leave room for the count. */
static int start_cpu_data(struct tk_dat_writer *w)
{
	int ret = align_to(w, w->cur.page_size);

	if (ret)
		return ret;
	w->cpu_offset = w->pos;
	w->cpu_started = true;
	/* Write-back starts at the first CPU data: what comes before is patched later. */
	if (!w->wb_from)
		w->wb_from = w->pos;
	return w->codec ? append_u32(w, 0) : 0;
}

TK_API int tk_dat_writer_write_pages(struct tk_dat_writer *w, const void *pages, uint64_t len)
{
	const uint8_t *p = pages;
	uint64_t chunk_bytes;
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (w->state != ST_CPU)
		return invalid(w, "pages written outside a CPU");
	if (len % w->cur.page_size)
		return tk_fail(EINVAL,
			       "%s: %" PRIu64 " bytes is not a whole number of %u-byte "
			       "pages",
			       w->name, len, w->cur.page_size);
	if (!len)
		return 0;
	if (!pages)
		return invalid(w, "pages is NULL");
	if (!w->cpu_started && (ret = start_cpu_data(w)))
		return ret;
	if (!w->codec) {
		ret = put_data_bytes(w, p, len);
		if (!ret)
			w->cpu_size += len;
		return ret;
	}
	chunk_bytes = (uint64_t)w->chunk_pages * w->cur.page_size;
	while (len) {
		uint64_t n;

		if (!w->chunk_fill && len >= chunk_bytes) {
			ret = put_data_chunk(w, p, chunk_bytes);
			if (ret)
				return ret;
			p += chunk_bytes;
			len -= chunk_bytes;
			continue;
		}
		n = chunk_bytes - w->chunk_fill;
		if (n > len)
			n = len;
		memcpy(w->chunk + w->chunk_fill, p, n);
		w->chunk_fill += n;
		p += n;
		len -= n;
		if (w->chunk_fill == chunk_bytes) {
			ret = put_data_chunk(w, w->chunk, chunk_bytes);
			if (ret)
				return ret;
			w->chunk_fill = 0;
		}
	}
	return 0;
}

/*
 * A chunk compressed elsewhere (the recorder's compressor threads, convert's
 * worker) goes in as it is: the bytes equal what write_pages() would have
 * produced for the same pages with the same codec, so a file assembled from
 * such chunks is the file a single-threaded writer makes. Only whole chunks
 * may precede one, which keeps the chunking of the CPU's data regular.
 */
int tk_dat_writer_put_chunk(struct tk_dat_writer *w, const void *block, uint32_t csize,
			    uint32_t usize)
{
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (w->state != ST_CPU)
		return invalid(w, "chunk written outside a CPU");
	if (!w->codec)
		return invalid(w, "compressed chunk for an uncompressed file");
	if (w->chunk_fill)
		return invalid(w, "compressed chunk after a partial chunk");
	ret = zpool_drain(w);
	if (ret)
		return ret;
	if (!usize || usize % w->cur.page_size ||
	    usize > (uint64_t)w->chunk_pages * w->cur.page_size || !csize || !block)
		return tk_fail(EINVAL, "%s: chunk of %u bytes for %u-byte pages in %u-page chunks",
			       w->name, usize, w->cur.page_size, w->chunk_pages);
	if (!w->cpu_started && (ret = start_cpu_data(w)))
		return ret;
	if (w->cpu_chunks == UINT32_MAX)
		return broken(w, tk_fail(EFBIG, "%s: too many chunks", w->name));
	ret = append_u32(w, csize);
	if (!ret)
		ret = append_u32(w, usize);
	if (!ret)
		ret = append(w, block, csize);
	if (ret)
		return ret;
	w->cpu_chunks++;
	w->cpu_size += 8 + (uint64_t)csize;
	return 0;
}

uint64_t tk_dat_writer_chunk_bytes(const struct tk_dat_writer *w)
{
	return w->codec ? (uint64_t)w->chunk_pages * w->page_size : 0;
}

TK_API int tk_dat_writer_end_cpu(struct tk_dat_writer *w)
{
	struct cpu_entry *e;
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (w->state != ST_CPU)
		return invalid(w, "end_cpu without an open CPU");
	if (!w->cpu_started) {
		w->state = ST_BUFFER;
		return 0;
	}
	if (w->codec) {
		if (w->chunk_fill) {
			ret = put_data_chunk(w, w->chunk, w->chunk_fill);
			if (ret)
				return ret;
			w->chunk_fill = 0;
		}
		ret = zpool_drain(w);
		if (ret)
			return ret;
		ret = patch_u32(w, w->cpu_offset, w->cpu_chunks);
		if (ret)
			return ret;
	}
	/* The page batches an uncompressed file has in flight are in it after this. */
	ret = zpool_drain(w);
	if (ret)
		return ret;
	if (w->version == 6) {
		uint64_t slot = w->v6_table + (uint64_t)w->cpu * 16;

		ret = patch_u64(w, slot, w->cpu_offset);
		if (!ret)
			ret = patch_u64(w, slot + 8, w->cpu_size);
		if (ret)
			return ret;
		w->state = ST_BUFFER;
		return 0;
	}
	e = realloc(w->cur.cpus, (w->cur.ncpus + 1) * sizeof(*e));
	if (!e)
		return broken(w, tk_fail(ENOMEM, "%s: out of memory", w->name));
	w->cur.cpus = e;
	e[w->cur.ncpus++] = (struct cpu_entry){w->cpu, w->cpu_offset, w->cpu_size};
	w->state = ST_BUFFER;
	return 0;
}

TK_API int tk_dat_writer_end_buffer(struct tk_dat_writer *w)
{
	struct buffer_rec *p;
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (w->state == ST_CPU)
		return tk_fail(EINVAL, "%s: end_buffer with CPU %u still open", w->name, w->cpu);
	if (w->state != ST_BUFFER)
		return invalid(w, "end_buffer without an open buffer");
	if (w->version == 7) {
		ret = patch_u64(w, w->cur.section_offset + 8,
				w->pos - (w->cur.section_offset + TK_DAT_SECTION_HEADER_SIZE));
		if (ret)
			return ret;
	}
	p = realloc(w->buffers, (w->nbuffers + 1) * sizeof(*p));
	if (!p)
		return broken(w, tk_fail(ENOMEM, "%s: out of memory", w->name));
	w->buffers = p;
	w->buffers[w->nbuffers++] = w->cur;
	memset(&w->cur, 0, sizeof(w->cur));
	w->state = ST_IDLE;
	return 0;
}

/* --------------------------------------------------------- latency text */

static int v7_latency_text(struct tk_dat_writer *w, const char *name, const char *clock,
			   const void *text, uint64_t len)
{
	struct text_rec *t;
	uint64_t hdr;
	int32_t sid = -1; /* set by add_string() before use */
	int ret;

	t = realloc(w->texts, (w->ntexts + 1) * sizeof(*t));
	if (!t)
		return tk_fail(ENOMEM, "%s: out of memory", w->name);
	w->texts = t;
	t += w->ntexts;
	t->name = strdup(name);
	t->clock = strdup(clock);
	if (!t->name || !t->clock) {
		free(t->name);
		free(t->clock);
		return tk_fail(ENOMEM, "%s: out of memory", w->name);
	}
	w->ntexts++;

	ret = v7_write_options1(w);
	if (!ret)
		ret = add_string(w, "buffer latency", &sid);
	if (ret)
		return broken(w, ret);
	hdr = w->pos;
	t->section_offset = hdr;
	ret = append_section_header(w, TK_DAT_SECTION_BUFFER_TEXT,
				    w->codec ? TK_DAT_SECTION_FL_COMPRESS : 0, sid, 0);
	if (ret)
		return ret;
	if (!w->codec) {
		ret = append(w, text, len);
	} else {
		const uint8_t *p = text;
		uint64_t count_off = w->pos;

		w->cpu_chunks = 0;
		w->cpu_size = 0;
		ret = append_u32(w, 0);
		while (!ret && len) {
			uint64_t n = len > LATENCY_CHUNK_SIZE ? LATENCY_CHUNK_SIZE : len;

			ret = append_chunk(w, p, n);
			p += n;
			len -= n;
		}
		if (!ret)
			ret = patch_u32(w, count_off, w->cpu_chunks);
	}
	if (!ret)
		ret = patch_u64(w, hdr + 8, w->pos - (hdr + TK_DAT_SECTION_HEADER_SIZE));
	return ret;
}

TK_API int tk_dat_writer_add_latency_text(struct tk_dat_writer *w, const char *name,
					  const char *clock, const void *text, uint64_t len)
{
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (!name)
		name = "";
	if (!clock)
		clock = "local";
	if (len && !text)
		return invalid(w, "latency text is NULL");
	if (w->state != ST_META && w->state != ST_IDLE)
		return invalid(w, w->state == ST_V6_LATENCY ? "v6 allows one latency text"
							    : "latency text inside a buffer");
	if (w->version == 7)
		return v7_latency_text(w, name, clock, text, len);
	if (w->v6_top_written || w->ninstances)
		return invalid(w, "v6 latency text must be the file's only data");
	/*
	 * trace-cmd reads a "[clock]" blob after the v6 data tag whenever a
	 * TRACECLOCK option exists, but its writer never puts one after
	 * "latency": such a file has no form both sides agree on.
	 */
	if (w->v6_traceclock)
		return invalid(w, "v6 latency text cannot carry a TRACECLOCK option: trace-cmd "
				  "would read the text's first bytes as a clock");
	ret = v6_write_options(w, 0);
	if (!ret)
		ret = append_tag(w, TK_DAT_V6_LATENCY_TAG);
	if (!ret)
		ret = append(w, text, len);
	if (ret)
		return broken(w, ret);
	w->state = ST_V6_LATENCY;
	return 0;
}

/* --------------------------------------------------------------- finish */

static int v7_buffer_option(struct tk_dat_writer *w, struct wbuf *b, const struct buffer_rec *r)
{
	uint64_t size =
		8 + strlen(r->name) + 1 + strlen(r->clock) + 1 + 8 + (uint64_t)r->ncpus * 20;
	int ret;

	if (size > UINT32_MAX)
		return tk_fail(EFBIG, "%s: BUFFER option for \"%s\" too large", w->name, r->name);
	ret = wbuf_u16(b, TK_DAT_OPTION_BUFFER, w->big);
	if (!ret)
		ret = wbuf_u32(b, (uint32_t)size, w->big);
	if (!ret)
		ret = wbuf_u64(b, r->section_offset, w->big);
	if (!ret)
		ret = wbuf_cstr(b, r->name);
	if (!ret)
		ret = wbuf_cstr(b, r->clock);
	if (!ret)
		ret = wbuf_u32(b, r->page_size, w->big);
	if (!ret)
		ret = wbuf_u32(b, r->ncpus, w->big);
	for (uint32_t i = 0; i < r->ncpus && !ret; i++) {
		ret = wbuf_u32(b, r->cpus[i].cpu, w->big);
		if (!ret)
			ret = wbuf_u64(b, r->cpus[i].offset, w->big);
		if (!ret)
			ret = wbuf_u64(b, r->cpus[i].size, w->big);
	}
	return ret;
}

static int v7_text_option(struct tk_dat_writer *w, struct wbuf *b, const struct text_rec *t)
{
	uint64_t size = 8 + strlen(t->name) + 1 + strlen(t->clock) + 1;
	int ret;

	if (size > UINT32_MAX)
		return tk_fail(EFBIG, "%s: BUFFER_TEXT option too large", w->name);
	ret = wbuf_u16(b, TK_DAT_OPTION_BUFFER_TEXT, w->big);
	if (!ret)
		ret = wbuf_u32(b, (uint32_t)size, w->big);
	if (!ret)
		ret = wbuf_u64(b, t->section_offset, w->big);
	if (!ret)
		ret = wbuf_cstr(b, t->name);
	if (!ret)
		ret = wbuf_cstr(b, t->clock);
	return ret;
}

static int v7_finish(struct tk_dat_writer *w)
{
	struct wbuf body = {0};
	uint64_t off, done;
	int32_t sid = -1; /* set by add_string() before use */
	int ret;

	ret = v7_write_options1(w);
	if (ret)
		return ret;
	for (size_t i = 0; i < w->nbuffers && !ret; i++)
		ret = v7_buffer_option(w, &body, &w->buffers[i]);
	for (size_t i = 0; i < w->ntexts && !ret; i++)
		ret = v7_text_option(w, &body, &w->texts[i]);
	if (!ret)
		ret = wbuf_put(&body, w->late_options.data, w->late_options.len);
	/* An OPTIONS #2 with nothing but DONE would say nothing: leave DONE #1 at 0. */
	if (!ret && body.len) {
		ret = append_options_section(w, &body, &off, &done);
		if (!ret)
			ret = patch_u64(w, w->done1_patch, off);
	}
	wbuf_release(&body);
	if (ret)
		return ret;
	/* The table must hold its own description before it is written. */
	ret = add_string(w, "strings", &sid);
	if (ret)
		return ret;
	return append_section_sid(w, TK_DAT_SECTION_STRINGS, sid, w->strings.data, w->strings.len,
				  w->codec != NULL, &off);
}

static int v6_finish(struct tk_dat_writer *w)
{
	int ret = 0;

	if (w->state == ST_META) {
		ret = v6_write_options(w, 0);
		if (!ret)
			ret = v6_write_flyrecord(w);
		if (ret)
			return ret;
	}
	/* Declared instances that got no data still need the table their option names. */
	for (size_t i = 0; i < w->ninstances && !ret; i++) {
		if (w->instances[i].written)
			continue;
		ret = patch_u64(w, w->instances[i].option_offset, w->pos);
		if (!ret)
			ret = v6_write_flyrecord(w);
		w->instances[i].written = true;
	}
	return ret;
}

TK_API int tk_dat_writer_finish(struct tk_dat_writer *w)
{
	int ret = check_usable(w);

	if (ret)
		return ret;
	if (w->state == ST_CPU || w->state == ST_BUFFER)
		return tk_fail(EINVAL, "%s: finish with buffer \"%s\"%s still open", w->name,
			       w->cur.name, w->state == ST_CPU ? " and a CPU" : "");
	ret = w->version == 6 ? v6_finish(w) : v7_finish(w);
	if (ret)
		return broken(w, ret);
	w->state = ST_DONE;
	return 0;
}
