// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dat-read: the reader half of trace-cmd's .dat format, versions 6 and 7.
 *
 * Byte layout (shared/specs/tracedat.md has every detail; numbers are in the
 * file's byte order):
 *
 *   0   "\x17\x08\x44tracing" | "6\0" or "7\0" | u8 endian | u8 long size |
 *       u32 page size
 *   v7: cstr codec | cstr codec version | u64 first OPTIONS offset, then
 *       sections back to back up to EOF, each
 *         u16 id | u16 flags (bit 0 compressed) | s32 string id | u64 size
 *         followed by size body bytes. A compressed metadata body is
 *         u32 csize | u32 usize | one codec block.
 *       OPTIONS bodies are {u16 id, u32 size, payload}... ending in DONE
 *       (id 0, size 8, u64 next OPTIONS offset or 0).
 *   v6: header_page/header_event, ftrace formats, systems, kallsyms,
 *       printk and cmdlines in sequence, u32 cpu count, an optional
 *       "options  \0" block ({u16 id, u32 size, payload}... u16 0), then
 *       "flyrecord\0" + cpu count x {u64 offset, u64 size} [+ u64 len
 *       "[clock]" when TRACECLOCK was given] or "latency  \0" + text.
 *   CPU data: raw pages, page aligned; or, compressed, u32 chunk count and
 *       chunks {u32 csize, u32 usize, block} whose usize is a page multiple.
 *       The BUFFER size excludes the 4-byte count when trace-cmd up to 3.1
 *       wrote it and includes it from 3.2 on; the chunk walk decides which.
 *
 * What open does: parse the header, walk every v7 section from after the
 * header to EOF (the sections must tile the file exactly, as trace-cmd's
 * string-table walk assumes; a size that runs past EOF or a partial header
 * is an error), load the string table, follow the OPTIONS chain (an offset
 * seen twice is a loop), load and decompress the metadata sections the
 * options point at, and build the buffer list. Every offset the options
 * give is checked against the section list, so it must name a real section
 * header with the expected id. kallsyms is the exception: a salvaging
 * reader of a v7 file reads and decodes it on first use (meta_ready(),
 * from tk_dat_kallsyms(), tk_dat_metadata() or tk_dat_get_tracedata(),
 * once, under meta_lock, with a codec of its own), since it is most of
 * the metadata (5 MB of text: ~50 M instructions to decode from zstd) and
 * most reports print no symbol; the saved cmdlines likewise (a report of
 * pid 0's records names no task). Their damage is recorded then, so a
 * report that never looks a symbol up does not see a damaged kallsyms, while
 * dump, convert and check (tk_dat_check() asks for it) do, and a strict
 * reader still reads it at open. The metadata (a few MB: kallsyms and the
 * event formats dominate) stays in memory; v6 parts are read raw, so
 * tk_dat_metadata() hands back the same bytes a v7 body holds. The bodies
 * are decoded by the tracedata codec (tracedata.c), which perf.data's
 * TRACING_DATA shares; the texts point into them. A guest/host session's
 * options (TIME_SHIFT, GUEST) are decoded by dat-guest.c, which also holds
 * the guest time correction (tk_dat_host_time()).
 *
 * CPU data is never read at open. A cpu reader pulls uncompressed data in
 * blocks of up to 256 KiB (at most 256 pages) with one pread each, because a
 * syscall per 4 KiB page costs more than decoding the page at 100 M
 * events/s, and no bigger, because each fresh 4 KiB page of a buffer costs
 * a fault (~11 us on the reference VM: 1 MiB blocks made a 3 M-event
 * report's start-up 5 ms slower, for no faster reading). Compressed data
 * gets a chunk directory (24 bytes per chunk, built by walking the chunk
 * headers) and one reusable buffer holding the decoded chunk, so
 * memory stays bounded by the largest chunk whatever the trace size (a
 * reader attached to a prefetch takes its chunks decoded ahead on another
 * thread instead: "decode ahead" below, bounded too). The chunk headers
 * and the compressed chunks are read through a span of the file
 * (struct span, SPAN_BYTES = 64 KiB, one per thread that reads chunks):
 * one pread() fills it from the chunk wanted on, and the chunks after it
 * are then read in place, since a CPU's chunks are read in file order. A
 * chunk is 2-13 KB of zstd, so a pread() per chunk and header was a
 * syscall per ~45 KB decoded (2 474 of them on the sched bench file); a
 * read-only mapping of the file cost more than the span's copies on the
 * PVM guests of bench/README.md, where page-table work is dear (a fault
 * ~11 us, and fault-around maps only 16 pages at a time): on
 * bench-report's 3 M-event zstd file (40 MB compressed) a mapped report
 * took 575 page faults more and ~3% more CPU, and on the family files,
 * 10 times smaller, the two cost the same. Seeking by time is a binary
 * search over page (or chunk) timestamps; empty pages carry no records
 * and may carry stale or zero stamps, so the search skips them.
 *
 * Every count read from the file is checked against the bytes that could
 * hold it before anything is allocated, and decompressed sizes are capped
 * (absolute and by ratio) so that a small file cannot ask for gigabytes.
 *
 * Damage (issue 21). A reader is strict (tk_dat_open(), or opts.strict):
 * the first corrupt byte is the error. Or it salvages (tk_dat_open_with()
 * by default): every check above still runs, and where it fails on input
 * (-EBADMSG; never on I/O or memory) salvage() turns the message into a
 * damaged region {offset, what, bytes skipped, events lost or -1} on the
 * handle's list and the caller passes over the part. What is passed over:
 * a cut or overlong section ends the walk, and a section the walk did not
 * reach is then read where an option points (section_unwalked(), as
 * trace-cmd reads it); a bad OPTIONS section ends the chain after the
 * options read; a bad option is skipped with the buffer it half built; a
 * bad metadata section is left out (the tracedata drops a part that fails
 * to parse, so nothing points into it); CPU data past the end of the file
 * is cut to its whole pages (salvage_cpu()); a chunk directory stops at
 * the first cut chunk header and skips one whose sizes are absurd but whose
 * compressed size still says where the next starts; a chunk that does not
 * decompress loses itself only, and one that decodes short keeps its pages
 * (the rest read as zero pages, which hold no records); a version digit
 * below 6 reads as 6, as trace-cmd reads it.
 *
 * Pages are salvaged in the reader's own copy, so every consumer (report,
 * merge, convert, dump, check) sees pages that decode and none needs a
 * salvage path of its own: a header whose commit overruns the page is
 * taken to fill the page (clamp_page()), runs of zero words where a record
 * should start are cut out (cut_zero_run(); records are chained by time
 * deltas and a zero word adds none), and the commit is then shortened to
 * the records that decode, a record that straddles the commit kept whole
 * when it fits in the page (trim_page()). Those are the rules trace-cmd's
 * reader follows by accident of its checks, which is why salvage reads at
 * least the events trace-cmd reads (tests/integration/test-damage-dat.sh
 * measures it). Finding a bad record costs tk_page_iter_intact(), which
 * follows each page's record lengths and stores nothing (18 instructions a
 * record on the sched bench file, against 49 for the decoding walk it
 * replaced); only a page that fails it is walked again to be trimmed. A
 * consumer that decodes each page whole at once with the same checks
 * (report's streams, tk_page_iter_fill()) need not pay for that walk: it
 * asks the reader to defer the trim (tk_dat_cpu_reader_defer_trim()),
 * gets pages with only their headers checked and clamped, and calls
 * tk_dat_cpu_reader_trim_page() on a page its decoding stops short of the
 * end of, right after taking it, so the trim, its damage and the order of
 * the damage list are what the reader would have made itself. A region is
 * recorded once however often it is read (report's header pass, seeks,
 * threads), under a mutex, since readers of one handle may run on several
 * threads.
 */
#include "dat-internal.h"
#include "dat-guest.h"
#include "dat-read-internal.h"
#include "page-internal.h"
#include "codec-internal.h"
#include "bigbuf.h"
#include "bytes.h"
#include "error.h"
#include "tracedata-internal.h"
#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Largest sub-buffer we accept; kernels allow far less. */
#define MAX_PAGE_SIZE (16u << 20)
/* Uncompressed reads go in blocks of this many bytes (and pages). */
#define BLOCK_BYTES	(256u << 10)
#define BLOCK_MAX_PAGES 256u
/* A decoded chunk is at most this big (trace-cmd writes 10 pages). */
#define MAX_CHUNK_SIZE (64u << 20)
/* Bomb guards: beyond the floor, output may be at most RATIO x input. */
#define META_RATIO  1024u
#define META_FLOOR  (1u << 20)
#define CHUNK_RATIO 4096u
#define CHUNK_FLOOR (1u << 20)
/* The header's codec name and version are short. */
#define HEADER_READ 256u

struct meta_part {
	uint8_t *data;
	uint64_t len;
	bool present;
	bool late;		       /* v7 kallsyms, cmdlines: read on first use (meta_ready()) */
	struct tk_dat_section section; /* where it is when late */
	uint64_t option_offset;	       /* v7: section offset the option names */
	uint64_t option_where;	       /* where that option is, for messages */
};

struct dat_option {
	struct tk_dat_option pub;
	uint64_t where; /* offset named in messages (section when compressed) */
};

struct dat_buffer {
	struct tk_dat_buffer pub;
	struct tk_dat_cpu_data *cpus;
	uint32_t page_size;
	uint64_t text_offset; /* latency text body */
	uint64_t text_size;
	uint32_t v6_cpus; /* v6 instance: entries in its table */
	uint64_t where;	  /* option offset, for messages */
};

struct tk_dat {
	int fd;
	bool own_fd;
	bool strict;
	char *name;
	struct tk_dat_info info;
	struct tk_codec *codec;
	uint64_t header_end;
	uint64_t first_options;

	struct tk_dat_section *sections;
	size_t nsections, sections_cap;
	char *strings;
	size_t strings_len;

	struct dat_option *options;
	size_t noptions, options_cap;

	void **keep;
	size_t nkeep, keep_cap;

	struct meta_part meta[6];
	struct tk_tracedata *td; /* texts point into meta[].data */

	struct dat_buffer *buffers;
	size_t nbuffers, buffers_cap;

	bool cpucount_set;
	bool traceclock_seen;

	/* GUEST options (dat-guest.c); their names and pids are kept blocks. */
	struct tk_dat_guest *guests;
	size_t nguests, guests_cap;

	/* A late metadata part is read under this lock, on whichever thread asks first. */
	pthread_mutex_t meta_lock;

	/* Salvage mode's damage list; readers on other threads add to it. */
	pthread_mutex_t damage_lock;
	struct tk_dat_damage *damage;
	size_t ndamage, damage_cap;
};

/* ------------------------------------------------------------ utilities */

static int grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
	void **arr = arrp;
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / elem)
		return tk_fail(ENOMEM, "out of memory");
	p = realloc(*arr, ncap * elem);
	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Hand @p to the reader to free at close; frees it when that fails. */
static int keep(struct tk_dat *d, void *p)
{
	if (grow(&d->keep, &d->keep_cap, d->nkeep + 1, sizeof(*d->keep)) < 0) {
		free(p);
		return -ENOMEM;
	}
	d->keep[d->nkeep++] = p;
	return 0;
}

/* A NUL-terminated copy of at most @len bytes (up to the first NUL). */
static const char *keep_str(struct tk_dat *d, const void *data, size_t len)
{
	size_t n = data ? strnlen(data, len) : 0;
	char *s = malloc(n + 1);

	if (!s) {
		tk_fail(ENOMEM, "out of memory");
		return NULL;
	}
	if (n)
		memcpy(s, data, n);
	s[n] = '\0';
	if (keep(d, s) < 0)
		return NULL;
	return s;
}

/* ------------------------------------------------------------- damage */

/*
 * Record a damaged region, unless the same one (offset and text) is known:
 * a page is read again by a second reader (report's header pass, seeks),
 * and must still be one line. Return: 0 or -ENOMEM.
 */
static int __attribute__((format(printf, 5, 6)))
add_damage(struct tk_dat *d, uint64_t off, uint64_t skipped, int64_t lost, const char *fmt, ...)
{
	struct tk_dat_damage *dm;
	char *what = NULL;
	va_list ap;
	int ret = 0, n;

	va_start(ap, fmt);
	n = vasprintf(&what, fmt, ap);
	va_end(ap);
	if (n < 0)
		return tk_fail(ENOMEM, "out of memory");
	pthread_mutex_lock(&d->damage_lock);
	for (size_t i = 0; i < d->ndamage; i++) {
		if (d->damage[i].offset == off && !strcmp(d->damage[i].what, what))
			goto out;
	}
	if (d->ndamage == d->damage_cap) {
		size_t cap = d->damage_cap ? d->damage_cap * 2 : 8;

		dm = realloc(d->damage, cap * sizeof(*dm));
		if (!dm) {
			ret = tk_fail(ENOMEM, "out of memory");
			goto out;
		}
		d->damage = dm;
		d->damage_cap = cap;
	}
	dm = &d->damage[d->ndamage++];
	dm->offset = off;
	dm->skipped = skipped;
	dm->events_lost = lost;
	dm->what = what;
	what = NULL;
out:
	pthread_mutex_unlock(&d->damage_lock);
	free(what);
	return ret;
}

static bool has_damage_at(struct tk_dat *d, uint64_t off)
{
	bool found = false;

	pthread_mutex_lock(&d->damage_lock);
	for (size_t i = 0; i < d->ndamage && !found; i++)
		found = d->damage[i].offset == off;
	pthread_mutex_unlock(&d->damage_lock);
	return found;
}

/*
 * The salvage decision for an error @err just raised with tk_fail_at():
 * strict readers, and errors that are not damage (I/O, memory), return it;
 * in salvage mode corrupt input (-EBADMSG) becomes a damaged region with
 * the offset and text of the message, and 0 is returned so the caller
 * skips what it was reading. @off is used when the message has none.
 */
static int salvage(struct tk_dat *d, int err, uint64_t off, uint64_t skipped, int64_t lost)
{
	const char *msg = tk_errmsg();
	size_t nlen = strlen(d->name);
	int ret;

	if (d->strict || err != -EBADMSG)
		return err;
	if (!strncmp(msg, d->name, nlen) && !strncmp(msg + nlen, ": offset 0x", 11)) {
		char *end;
		unsigned long long v = strtoull(msg + nlen + 11, &end, 16);

		if (!strncmp(end, ": ", 2)) {
			off = v;
			msg = end + 2;
		}
	} else if (!strncmp(msg, d->name, nlen) && !strncmp(msg + nlen, ": ", 2)) {
		msg += nlen + 2;
	}
	{
		/* A message nested in another names the file again: once is enough. */
		char what[512], *hit;
		size_t mlen;

		snprintf(what, sizeof(what), "%s", msg);
		while (nlen && (hit = strstr(what, d->name)) && !strncmp(hit + nlen, ": ", 2)) {
			mlen = strlen(hit + nlen + 2);
			memmove(hit, hit + nlen + 2, mlen + 1);
		}
		ret = add_damage(d, off, skipped, lost, "%s", what);
	}
	return ret < 0 ? ret : 0;
}

int tk_dat_salvage(struct tk_dat *d, int err, uint64_t offset, uint64_t skipped)
{
	return salvage(d, err, offset, skipped, -1);
}

TK_API size_t tk_dat_damage_count(const struct tk_dat *d)
{
	struct tk_dat *w = (struct tk_dat *)d;
	size_t n;

	/* The lock is the only thing written through a const reader. */
	pthread_mutex_lock(&w->damage_lock);
	n = d->ndamage;
	pthread_mutex_unlock(&w->damage_lock);
	return n;
}

TK_API int tk_dat_damage_get(const struct tk_dat *d, size_t index, struct tk_dat_damage *out)
{
	struct tk_dat *w = (struct tk_dat *)d;
	int ret = 0;

	pthread_mutex_lock(&w->damage_lock);
	if (index < d->ndamage)
		*out = d->damage[index];
	else
		ret = tk_fail(ERANGE, "%s: no damaged region %zu", d->name, index);
	pthread_mutex_unlock(&w->damage_lock);
	return ret;
}

static int read_at(const struct tk_dat *d, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;
	uint64_t done = 0;

	while (done < len) {
		uint64_t want = len - done;
		ssize_t n;

		if (want > (1u << 30))
			want = 1u << 30;
		n = pread(d->fd, p + done, want, (off_t)(off + done));
		if (n < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			return tk_fail_at(err, d->name, off + done, "read failed: %s",
					  strerror(err));
		}
		if (n == 0)
			return tk_fail_at(EBADMSG, d->name, off + done,
					  "unexpected end of file reading %" PRIu64
					  " bytes at 0x%" PRIx64,
					  len, off);
		done += (uint64_t)n;
	}
	return 0;
}

/*
 * A span of the file for the compressed chunks' reads (span_read(); the
 * notes at the top say why): file bytes [off, off + len) in buf. Each
 * thread that reads chunks has its own: a reader, a prefetch lane (for
 * whichever thread decodes ahead), build_chunks() while it walks.
 */
#define SPAN_BYTES (64u << 10)

struct span {
	uint8_t *buf;
	size_t cap;
	uint64_t off, len;
};

/* A span of max(SPAN_BYTES, @least) bytes. Return: 0 or -ENOMEM (message set). */
static int span_init(struct span *w, uint64_t least)
{
	memset(w, 0, sizeof(*w));
	w->cap = least > SPAN_BYTES ? (size_t)least : SPAN_BYTES;
	w->buf = malloc(w->cap);
	return w->buf ? 0 : tk_fail(ENOMEM, "out of memory");
}

static void span_release(struct span *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

/*
 * @len bytes at @off, for a compressed chunk or its header: *@out points
 * into @w, which is refilled from @off with one pread of up to its
 * capacity when it does not hold them (the chunks are read in file
 * order, so one read serves the next ones too). Return: 0 or
 * read_at()'s error (on a read past the end, the one reading exactly
 * @len bytes gives).
 */
static int span_read(const struct tk_dat *d, struct span *w, const uint8_t **out, uint64_t len,
		     uint64_t off)
{
	uint64_t want;
	int ret;

	*out = NULL;
	if (off >= w->off && off - w->off <= w->len && len <= w->len - (off - w->off)) {
		*out = w->buf + (off - w->off);
		return 0;
	}
	if (len > w->cap) {
		uint8_t *buf;

		if (len >= SIZE_MAX)
			return tk_fail(ENOMEM, "out of memory");
		buf = realloc(w->buf, (size_t)len);
		if (!buf)
			return tk_fail(ENOMEM, "out of memory");
		w->buf = buf;
		w->cap = (size_t)len;
	}
	want = w->cap;
	if (off < d->info.file_size && want > d->info.file_size - off)
		want = d->info.file_size - off;
	if (want < len)
		want = len;
	w->len = 0;
	ret = read_at(d, w->buf, want, off);
	if (ret < 0 && want > len) {
		want = len;
		ret = read_at(d, w->buf, want, off);
	}
	if (ret < 0)
		return ret;
	w->off = off;
	w->len = want;
	*out = w->buf;
	return 0;
}

/* Read @len bytes at @off into a fresh buffer with a NUL after them. */
/*
 * Read @len bytes at @off into a new buffer (with a NUL after them): from
 * malloc(), or from tk_big_alloc() when @big (metadata, kept until close
 * and freed with tk_big_free()).
 */
static int read_alloc_as(const struct tk_dat *d, uint64_t off, uint64_t len, uint8_t **out,
			 bool big)
{
	uint8_t *buf;
	int ret;

	if (len > d->info.file_size || off > d->info.file_size - len)
		return tk_fail_at(EBADMSG, d->name, off,
				  "%" PRIu64 " bytes run past the end of "
				  "the file (size %" PRIu64 ")",
				  len, d->info.file_size);
	if (len >= SIZE_MAX)
		return tk_fail(ENOMEM, "out of memory");
	buf = big ? tk_big_alloc(len + 1) : malloc(len + 1);
	if (!buf)
		return tk_fail(ENOMEM, "%s: out of memory for %" PRIu64 " bytes", d->name, len);
	ret = read_at(d, buf, len, off);
	if (ret < 0) {
		if (big)
			tk_big_free(buf);
		else
			free(buf);
		return ret;
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

static int read_alloc(const struct tk_dat *d, uint64_t off, uint64_t len, uint8_t **out)
{
	return read_alloc_as(d, off, len, out, false);
}

static int prefix_at(int err, const char *name, uint64_t off, const char *what)
{
	char prefix[320];

	if (what)
		snprintf(prefix, sizeof(prefix), "%s: offset 0x%" PRIx64 ": %s", name, off, what);
	else
		snprintf(prefix, sizeof(prefix), "%s: offset 0x%" PRIx64, name, off);
	return tk_fail_prefix(err, prefix);
}

/*
 * Decode a single-block compressed body {u32 csize, u32 usize, block}.
 * @where names the section in messages.
 */
static int decompress_block(struct tk_dat *d, struct tk_codec *codec, uint64_t where,
			    const uint8_t *body, uint64_t len, uint8_t **out, uint64_t *out_len,
			    bool big)
{
	uint32_t csize, usize;
	uint64_t cap;
	uint8_t *buf;
	int64_t n;

	if (!codec)
		return tk_fail_at(EBADMSG, d->name, where,
				  "compressed section in a file without compression");
	if (len < 8)
		return tk_fail_at(EBADMSG, d->name, where,
				  "compressed body of %" PRIu64 " bytes lacks its size header",
				  len);
	csize = tk_load_u32(body, d->info.big_endian);
	usize = tk_load_u32(body + 4, d->info.big_endian);
	if (csize != len - 8) {
		int ret = tk_fail_at(EBADMSG, d->name, where,
				     "compressed size %" PRIu32
				     " does not match the section size %" PRIu64,
				     csize, len);

		/*
		 * Salvage: a block inside the section is read as trace-cmd reads
		 * it; a section size the walk already found damaged is no news.
		 */
		if (d->strict || csize > len - 8)
			return ret;
		ret = has_damage_at(d, where) ? 0 : salvage(d, ret, where, 0, -1);
		if (ret < 0)
			return ret;
	}
	cap = (uint64_t)csize * META_RATIO;
	if (cap < META_FLOOR)
		cap = META_FLOOR;
	if (cap > TK_DAT_MAX_METADATA_SIZE)
		cap = TK_DAT_MAX_METADATA_SIZE;
	if (usize > cap)
		return tk_fail_at(EBADMSG, d->name, where,
				  "uncompressed size %" PRIu32 " is implausible for %" PRIu32
				  " compressed bytes",
				  usize, csize);
	buf = big ? tk_big_alloc((size_t)usize + 1) : malloc((size_t)usize + 1);
	if (!buf)
		return tk_fail(ENOMEM, "%s: out of memory for %" PRIu32 " bytes", d->name, usize);
	n = d->strict ? tk_codec_decompress(codec, buf, usize, body + 8, csize)
		      : tk_codec_decompress_upto(codec, buf, usize, body + 8, csize);
	if (n >= 0 && (uint64_t)n < usize && !d->strict) {
		/* Salvage: the block is whole; only its stated size is wrong. */
		int ret = tk_fail_at(EBADMSG, d->name, where,
				     "decompressed %" PRId64 " bytes, expected %" PRIu32, n, usize);

		ret = salvage(d, ret, where, 0, -1);
		if (ret < 0) {
			if (big)
				tk_big_free(buf);
			else
				free(buf);
			return ret;
		}
		usize = (uint32_t)n;
	}
	if (n < 0 || (uint64_t)n != usize) {
		if (big)
			tk_big_free(buf);
		else
			free(buf);
		if (n < 0)
			return prefix_at((int)n, d->name, where, NULL);
		return tk_fail_at(EBADMSG, d->name, where,
				  "decompressed %" PRId64 " bytes, expected %" PRIu32, n, usize);
	}
	buf[usize] = 0;
	*out = buf;
	*out_len = usize;
	return 0;
}

/* Body of a v7 section, decompressed by @codec; the caller frees it. */
static int load_section_with(struct tk_dat *d, struct tk_codec *codec,
			     const struct tk_dat_section *s, uint8_t **out, uint64_t *len, bool big)
{
	uint8_t *raw = NULL;
	int ret;

	if (s->size > TK_DAT_MAX_METADATA_SIZE)
		return tk_fail_at(EBADMSG, d->name, s->offset,
				  "section %u size %" PRIu64 " is too large for metadata", s->id,
				  s->size);
	if (!(s->flags & TK_DAT_SECTION_FL_COMPRESS)) {
		ret = read_alloc_as(d, s->offset + TK_DAT_SECTION_HEADER_SIZE, s->size, out, big);
		if (ret == 0)
			*len = s->size;
		return ret;
	}
	ret = read_alloc(d, s->offset + TK_DAT_SECTION_HEADER_SIZE, s->size, &raw);
	if (ret < 0)
		return ret;
	ret = decompress_block(d, codec, s->offset, raw, s->size, out, len, big);
	free(raw);
	return ret;
}

/* Body of a v7 section, decompressed at open by the handle's codec. */
static int load_section(struct tk_dat *d, const struct tk_dat_section *s, uint8_t **out,
			uint64_t *len, bool big)
{
	return load_section_with(d, d->codec, s, out, len, big);
}

/* The walked v7 section whose header is at @off (sections are sorted). */
static const struct tk_dat_section *find_section(const struct tk_dat *d, uint64_t off)
{
	size_t lo = 0, hi = d->nsections;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->sections[mid].offset == off)
			return &d->sections[mid];
		if (d->sections[mid].offset < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int add_section(struct tk_dat *d, const struct tk_dat_section *s);

/*
 * Salvage: a section the walk did not reach (it stopped at a damaged
 * section header) is read where an option points, as trace-cmd reads it:
 * its header must hold @id, and a size past the end of the file is cut to
 * the file (the walk recorded that damage). It joins the sorted list.
 */
static const struct tk_dat_section *section_unwalked(struct tk_dat *d, uint64_t off, uint16_t id)
{
	uint64_t fsize = d->info.file_size;
	uint8_t h[TK_DAT_SECTION_HEADER_SIZE];
	struct tk_dat_section s = {0};
	size_t i;

	if (d->strict || d->info.version != 7 || off < d->header_end || off > fsize ||
	    fsize - off < TK_DAT_SECTION_HEADER_SIZE || read_at(d, h, sizeof(h), off) < 0)
		return NULL;
	s.id = tk_load_u16(h, d->info.big_endian);
	if (s.id != id)
		return NULL;
	s.flags = tk_load_u16(h + 2, d->info.big_endian);
	s.string_id = (int32_t)tk_load_u32(h + 4, d->info.big_endian);
	s.size = tk_load_u64(h + 8, d->info.big_endian);
	s.offset = off;
	if (s.size > fsize - off - TK_DAT_SECTION_HEADER_SIZE)
		s.size = fsize - off - TK_DAT_SECTION_HEADER_SIZE;
	s.body_size = s.size;
	if (add_section(d, &s) < 0)
		return NULL;
	for (i = d->nsections - 1; i > 0 && d->sections[i - 1].offset > off; i--) {
		struct tk_dat_section t = d->sections[i];

		d->sections[i] = d->sections[i - 1];
		d->sections[i - 1] = t;
	}
	return &d->sections[i];
}

static int section_at(struct tk_dat *d, uint64_t off, uint16_t id, uint64_t where,
		      const struct tk_dat_section **out)
{
	const struct tk_dat_section *s = find_section(d, off);

	if (!s)
		s = section_unwalked(d, off, id);
	if (!s)
		return tk_fail_at(EBADMSG, d->name, where,
				  "%s offset 0x%" PRIx64
				  " is not a section header (file size %" PRIu64 ")",
				  tk_dat_section_name(id), off, d->info.file_size);
	if (s->id != id)
		return tk_fail_at(EBADMSG, d->name, where,
				  "offset 0x%" PRIx64 " holds section %u,"
				  " expected %u (%s)",
				  off, s->id, id, tk_dat_section_name(id));
	*out = s;
	return 0;
}

static int add_section(struct tk_dat *d, const struct tk_dat_section *s)
{
	if (grow(&d->sections, &d->sections_cap, d->nsections + 1, sizeof(*d->sections)) < 0)
		return -ENOMEM;
	d->sections[d->nsections++] = *s;
	return 0;
}

static struct dat_buffer *add_buffer(struct tk_dat *d)
{
	struct dat_buffer *b;

	if (grow(&d->buffers, &d->buffers_cap, d->nbuffers + 1, sizeof(*d->buffers)) < 0)
		return NULL;
	b = &d->buffers[d->nbuffers++];
	memset(b, 0, sizeof(*b));
	return b;
}

/* ---------------------------------------------------------- file header */

static int parse_header(struct tk_dat *d)
{
	uint8_t buf[HEADER_READ];
	uint64_t n = d->info.file_size < HEADER_READ ? d->info.file_size : HEADER_READ;
	const char *ver, *cname, *cver;
	struct tk_cursor c;
	uint8_t endian, lsize;
	uint32_t psize = 0;
	size_t vlen;
	int ret;

	if (n < TK_DAT_MAGIC_LEN)
		return tk_fail_at(EBADMSG, d->name, 0,
				  "file of %" PRIu64 " bytes is too short for a trace-cmd header",
				  d->info.file_size);
	ret = read_at(d, buf, n, 0);
	if (ret < 0)
		return ret;
	/* Commands send whatever is not perf.data here: name both formats. */
	if (!memcmp(buf, "PERFFILE", 8))
		return tk_fail_at(
			ENOTSUP, d->name, 0,
			"perf.data version 1 (PERFFILE magic, perf before 2.6.38): not read");
	if (memcmp(buf, TK_DAT_MAGIC, TK_DAT_MAGIC_LEN) != 0)
		return tk_fail_at(EBADMSG, d->name, 0,
				  "not a trace-cmd .dat or perf.data file (bad magic)");
	tk_cursor_init(&c, buf, n, 0, false);
	c.pos = TK_DAT_MAGIC_LEN;
	if (!tk_cursor_cstr(&c, &ver, &vlen) || vlen == 0 || vlen > 8)
		return tk_fail_at(EBADMSG, d->name, TK_DAT_MAGIC_LEN, "bad version string");
	if (strspn(ver, "0123456789") != vlen)
		return tk_fail_at(EBADMSG, d->name, TK_DAT_MAGIC_LEN, "bad version string '%s'",
				  ver);
	if (!d->strict && vlen == 1 && ver[0] < '6') {
		/*
		 * Salvage: trace-cmd reads every version before 7 with the v6
		 * layout, so a damaged version digit is read that way too.
		 */
		ret = add_damage(d, TK_DAT_MAGIC_LEN, 0, 0,
				 "unsupported file version %s (only 6 and 7 are known): read as"
				 " version 6",
				 ver);
		if (ret < 0)
			return ret;
		d->info.version = 6;
	} else if (strcmp(ver, "6") != 0 && strcmp(ver, "7") != 0) {
		return tk_fail_at(ENOTSUP, d->name, TK_DAT_MAGIC_LEN,
				  "unsupported file version %s (only 6 and 7 are known)", ver);
	} else {
		d->info.version = ver[0] - '0';
	}
	if (tk_cursor_left(&c) < 6)
		return tk_fail_at(EBADMSG, d->name, tk_cursor_offset(&c), "truncated file header");
	endian = c.data[c.pos];
	lsize = c.data[c.pos + 1];
	c.pos += 2;
	if (endian > 1)
		return tk_fail_at(EBADMSG, d->name, c.pos - 2, "bad endianness byte %u", endian);
	d->info.big_endian = endian == 1;
	c.big = d->info.big_endian;
	d->info.long_size = lsize;
	tk_cursor_u32(&c, &psize);
	if (psize == 0 || psize > MAX_PAGE_SIZE)
		return tk_fail_at(EBADMSG, d->name, c.pos - 4, "bad page size %" PRIu32, psize);
	d->info.page_size = psize;
	/* The tracedata carries the layout too, so it encodes as perf.data alone. */
	d->td->big_endian = d->info.big_endian;
	d->td->long_size = lsize;
	d->td->page_size = psize;
	d->info.compression = TK_COMPRESS_NONE;
	d->info.compression_version = "";
	if (d->info.version == 6) {
		d->header_end = c.pos;
		return 0;
	}
	if (!tk_cursor_cstr(&c, &cname, NULL) || !tk_cursor_cstr(&c, &cver, NULL))
		return tk_fail_at(EBADMSG, d->name, tk_cursor_offset(&c),
				  "truncated compression header");
	if (tk_codec_from_name(cname, &d->info.compression) < 0)
		return tk_fail_at(ENOTSUP, d->name, 18, "unknown compression '%s'", cname);
	d->info.compression_version = keep_str(d, cver, strlen(cver));
	if (!d->info.compression_version)
		return -ENOMEM;
	if (!tk_cursor_u64(&c, &d->first_options))
		return tk_fail_at(EBADMSG, d->name, tk_cursor_offset(&c),
				  "truncated first options offset");
	d->header_end = c.pos;
	if (d->first_options == 0)
		return tk_fail_at(EBADMSG, d->name, c.pos - 8, "first options offset is 0");
	if (d->info.compression != TK_COMPRESS_NONE) {
		d->codec = tk_codec_new(d->info.compression, 0);
		if (!d->codec)
			return prefix_at(-errno, d->name, 18, NULL);
	}
	return 0;
}

/* ------------------------------------------------------- v7 section walk */

/*
 * trace-cmd 3.4 added two metadata sections a trace may carry: 23, a copy
 * of /sys/kernel/btf/vmlinux (`trace-cmd extract` always writes it when the
 * file exists; record only for function tracing with func-args), and 25, a
 * copy of /proc/modules (beside a LAST_BOOT_INFO option, id 24, for a
 * persistent ring buffer kept from the previous boot). Both are compressed
 * like the other metadata. trace-cmd uses them for function arguments and
 * for module addresses of a previous boot; nothing we print needs them, so
 * they are known and skipped without a warning.
 */
#define DAT_ID_BTF_FILE	      23
#define DAT_ID_LAST_BOOT_INFO 24
#define DAT_ID_MODULES_FILE   25

static bool known_section(uint16_t id)
{
	return id == TK_DAT_SECTION_OPTIONS || id == TK_DAT_SECTION_FLYRECORD ||
	       (id >= TK_DAT_SECTION_STRINGS && id <= TK_DAT_SECTION_BUFFER_TEXT) ||
	       id == DAT_ID_BTF_FILE || id == DAT_ID_MODULES_FILE;
}

static int append_strings(struct tk_dat *d, const struct tk_dat_section *s)
{
	uint8_t *body;
	uint64_t len;
	char *p;
	int ret;

	ret = load_section(d, s, &body, &len, false);
	if (ret < 0)
		return ret;
	if (len > TK_DAT_MAX_METADATA_SIZE - d->strings_len) {
		free(body);
		return tk_fail_at(EBADMSG, d->name, s->offset, "string table too large");
	}
	p = realloc(d->strings, d->strings_len + len + 1);
	if (!p) {
		free(body);
		return tk_fail(ENOMEM, "out of memory");
	}
	memcpy(p + d->strings_len, body, len);
	d->strings = p;
	d->strings_len += len;
	p[d->strings_len] = '\0';
	free(body);
	return 0;
}

static int walk_sections(struct tk_dat *d)
{
	uint64_t pos = d->header_end, fsize = d->info.file_size;
	int ret;

	while (pos < fsize) {
		struct tk_dat_section s = {0};
		uint8_t h[TK_DAT_SECTION_HEADER_SIZE];

		/*
		 * Salvage: a cut or overlong section ends the walk. The options
		 * name their sections by offset, so the sections before it serve.
		 */
		if (fsize - pos < TK_DAT_SECTION_HEADER_SIZE) {
			ret = tk_fail_at(EBADMSG, d->name, pos,
					 "truncated section header (%" PRIu64 " bytes left)",
					 fsize - pos);
			ret = salvage(d, ret, pos, fsize - pos, -1);
			if (ret < 0)
				return ret;
			break;
		}
		ret = read_at(d, h, sizeof(h), pos);
		if (ret < 0)
			return ret;
		s.id = tk_load_u16(h, d->info.big_endian);
		s.flags = tk_load_u16(h + 2, d->info.big_endian);
		s.string_id = (int32_t)tk_load_u32(h + 4, d->info.big_endian);
		s.size = tk_load_u64(h + 8, d->info.big_endian);
		s.offset = pos;
		s.body_size = s.size;
		if (s.size > fsize - pos - TK_DAT_SECTION_HEADER_SIZE) {
			ret = tk_fail_at(EBADMSG, d->name, pos,
					 "section %u size %" PRIu64 " exceeds file size %" PRIu64,
					 s.id, s.size, fsize);
			/* Nothing is skipped yet: options still reach what follows. */
			ret = salvage(d, ret, pos, 0, -1);
			if (ret < 0)
				return ret;
			break;
		}
		if ((s.flags & TK_DAT_SECTION_FL_COMPRESS) &&
		    (s.id == TK_DAT_SECTION_OPTIONS ||
		     (s.id >= TK_DAT_SECTION_STRINGS && s.id <= TK_DAT_SECTION_CMDLINES) ||
		     s.id == DAT_ID_BTF_FILE || s.id == DAT_ID_MODULES_FILE)) {
			uint8_t pre[8];

			if (s.size < 8) {
				ret = tk_fail_at(EBADMSG, d->name, pos,
						 "compressed section %u"
						 " of %" PRIu64 " bytes lacks its size header",
						 s.id, s.size);
				ret = salvage(d, ret, pos, TK_DAT_SECTION_HEADER_SIZE + s.size, -1);
				if (ret < 0)
					return ret;
				/* Not listed: nothing may load it. */
				pos += TK_DAT_SECTION_HEADER_SIZE + s.size;
				continue;
			}
			ret = read_at(d, pre, 8, pos + TK_DAT_SECTION_HEADER_SIZE);
			if (ret < 0)
				return ret;
			s.body_size = tk_load_u32(pre + 4, d->info.big_endian);
		}
		ret = add_section(d, &s);
		if (ret < 0)
			return ret;
		if (s.id == TK_DAT_SECTION_STRINGS) {
			/* Salvage: without the strings only descriptions are missing. */
			ret = append_strings(d, &s);
			if (ret < 0)
				ret = salvage(d, ret, pos, TK_DAT_SECTION_HEADER_SIZE + s.size, -1);
			if (ret < 0)
				return ret;
		} else if (!known_section(s.id)) {
			tk_warn("%s: offset 0x%" PRIx64 ": unknown section %u skipped", d->name,
				pos, s.id);
		}
		pos += TK_DAT_SECTION_HEADER_SIZE + s.size;
	}
	/* Descriptions are resolved only now: the table may come last. */
	for (size_t i = 0; i < d->nsections; i++) {
		struct tk_dat_section *s = &d->sections[i];

		if (s->string_id >= 0 && (size_t)s->string_id < d->strings_len)
			s->description = d->strings + s->string_id;
	}
	return 0;
}

/* ------------------------------------------------------------- options */

static int add_option(struct tk_dat *d, uint16_t id, uint32_t size, const void *data,
		      uint64_t offset, uint64_t where, uint32_t section)
{
	struct dat_option *o;

	if (grow(&d->options, &d->options_cap, d->noptions + 1, sizeof(*d->options)) < 0)
		return -ENOMEM;
	o = &d->options[d->noptions++];
	o->pub.id = id;
	o->pub.size = size;
	o->pub.data = data;
	o->pub.offset = offset;
	o->pub.options_section = section;
	o->where = where;
	return 0;
}

static int parse_options_v7(struct tk_dat *d)
{
	uint64_t off = d->first_options, where = d->header_end - 8;
	uint64_t *visited = NULL;
	size_t nvisited = 0, visited_cap = 0;
	uint32_t index = 0;
	int ret = 0;

	while (off) {
		const struct tk_dat_section *s;
		struct tk_cursor c;
		bool compressed, done = false;
		uint8_t *body;
		uint64_t len;

		for (size_t i = 0; i < nvisited; i++) {
			if (visited[i] == off) {
				ret = tk_fail_at(EBADMSG, d->name, where,
						 "options chain loops back"
						 " to offset 0x%" PRIx64,
						 off);
				goto out;
			}
		}
		ret = grow(&visited, &visited_cap, nvisited + 1, sizeof(*visited));
		if (ret < 0)
			goto out;
		visited[nvisited++] = off;
		ret = section_at(d, off, TK_DAT_SECTION_OPTIONS, where, &s);
		if (ret < 0)
			goto out;
		compressed = s->flags & TK_DAT_SECTION_FL_COMPRESS;
		ret = load_section(d, s, &body, &len, false);
		if (ret < 0)
			goto out;
		ret = keep(d, body);
		if (ret < 0)
			goto out;
		tk_cursor_init(&c, body, len, off + TK_DAT_SECTION_HEADER_SIZE, d->info.big_endian);
		while (!done) {
			uint64_t opt_off = compressed ? 0 : tk_cursor_offset(&c);
			uint64_t err_off = compressed ? off : opt_off;
			const uint8_t *data;
			uint16_t id;
			uint32_t size;

			if (!tk_cursor_u16(&c, &id) || !tk_cursor_u32(&c, &size)) {
				ret = tk_fail_at(
					EBADMSG, d->name, err_off,
					"options section at 0x%" PRIx64 " ends without DONE", off);
				goto out;
			}
			if (!tk_cursor_bytes(&c, size, &data)) {
				ret = tk_fail_at(EBADMSG, d->name, err_off,
						 "option %u size %" PRIu32 " runs past its section",
						 id, size);
				goto out;
			}
			ret = add_option(d, id, size, data, opt_off, err_off, index);
			if (ret < 0)
				goto out;
			if (id != TK_DAT_OPTION_DONE)
				continue;
			if (size != 8) {
				ret = tk_fail_at(EBADMSG, d->name, err_off,
						 "DONE option size %" PRIu32 ", expected 8", size);
				goto out;
			}
			done = true;
			where = err_off;
			off = tk_load_u64(data, d->info.big_endian);
		}
		index++;
	}
out:
	/*
	 * Salvage: the options read so far stay, and the chain ends at the
	 * damage (what follows it is unreachable).
	 */
	if (ret < 0)
		ret = salvage(d, ret, where, 0, -1);
	free(visited);
	return ret;
}

static int parse_int_option(struct tk_dat *d, const struct dat_option *o, int64_t *out)
{
	const char *s = keep_str(d, o->pub.data, o->pub.size);
	char *end;

	if (!s)
		return -ENOMEM;
	/* strtoll as trace-cmd uses it, so out-of-range values saturate alike. */
	*out = strtoll(s, &end, 0);
	if (end == s)
		return tk_fail_at(EBADMSG, d->name, o->where, "%s option '%.40s' is not a number",
				  tk_dat_option_name(o->pub.id), s);
	return 0;
}

/*
 * The part of a v7 BUFFER or BUFFER_TEXT option both share: the section it
 * names must exist with the expected id; the buffer takes its name, clock
 * and compression from option and section.
 */
static int buffer_from_option(struct tk_dat *d, const struct dat_option *o, uint16_t section_id,
			      uint64_t soff, const char *name, const char *clock,
			      const struct tk_dat_section **section, struct dat_buffer **out)
{
	struct dat_buffer *b;
	int ret = section_at(d, soff, section_id, o->where, section);

	if (ret < 0)
		return ret;
	b = add_buffer(d);
	if (!b)
		return -ENOMEM;
	b->where = o->where;
	b->pub.section_offset = soff;
	b->pub.compressed = (*section)->flags & TK_DAT_SECTION_FL_COMPRESS;
	b->pub.name = keep_str(d, name, strlen(name));
	b->pub.clock = keep_str(d, clock, strlen(clock));
	if (!b->pub.name || !b->pub.clock)
		return -ENOMEM;
	*out = b;
	return 0;
}

/*
 * Salvage for a CPU whose data runs past the end of the file (a truncated
 * file): keep the whole pages that are there (compressed: all of it, the
 * chunk walk stops at the cut chunk) and record the rest as damage. Strict
 * readers leave the entry for the caller's error.
 */
static int salvage_cpu(struct tk_dat *d, const struct dat_buffer *b, struct tk_dat_cpu_data *cpu,
		       uint64_t where, uint64_t end_extra)
{
	uint64_t fsize = d->info.file_size, keep_bytes;

	if (d->strict || (cpu->offset <= fsize && end_extra <= fsize - cpu->offset &&
			  cpu->size <= fsize - cpu->offset))
		return 0;
	if (cpu->offset > fsize || end_extra > fsize - cpu->offset) {
		int ret = add_damage(d, cpu->offset, cpu->size, -1,
				     "buffer '%s' CPU %" PRIu32 " data starts past the end of the"
				     " file (size %" PRIu64 "; BUFFER option at 0x%" PRIx64 ")",
				     b->pub.name ? b->pub.name : "", cpu->cpu, fsize, where);

		cpu->offset = fsize;
		cpu->size = 0;
		return ret;
	}
	keep_bytes = fsize - cpu->offset;
	if (!b->pub.compressed && b->page_size)
		keep_bytes -= keep_bytes % b->page_size;
	if (!b->pub.compressed) {
		int ret = add_damage(d, cpu->offset + keep_bytes, cpu->size - keep_bytes, -1,
				     "buffer '%s' CPU %" PRIu32 " data of %" PRIu64
				     " bytes is cut by the end of the file: %" PRIu64
				     " whole pages read",
				     b->pub.name ? b->pub.name : "", cpu->cpu, cpu->size,
				     keep_bytes / b->page_size);
		if (ret < 0)
			return ret;
	}
	cpu->size = keep_bytes;
	return 0;
}

static int parse_buffer_v7(struct tk_dat *d, const struct dat_option *o)
{
	const struct tk_dat_section *s;
	struct tk_cursor c;
	struct dat_buffer *b;
	const char *name, *clock;
	uint64_t soff;
	uint32_t psize, n, *ids;
	int ret;

	tk_cursor_init(&c, o->pub.data, o->pub.size, 0, d->info.big_endian);
	if (!tk_cursor_u64(&c, &soff) || !tk_cursor_cstr(&c, &name, NULL) ||
	    !tk_cursor_cstr(&c, &clock, NULL) || !tk_cursor_u32(&c, &psize) ||
	    !tk_cursor_u32(&c, &n))
		return tk_fail_at(EBADMSG, d->name, o->where, "truncated BUFFER option");
	if (n > tk_cursor_left(&c) / 20)
		return tk_fail_at(EBADMSG, d->name, o->where,
				  "BUFFER option lists %" PRIu32 " CPUs but holds room for %zu", n,
				  tk_cursor_left(&c) / 20);
	ret = buffer_from_option(d, o, TK_DAT_SECTION_FLYRECORD, soff, name, clock, &s, &b);
	if (ret < 0)
		return ret;
	/* trace-cmd trusts the file header's page size for the top buffer. */
	b->page_size = name[0] ? psize : d->info.page_size;
	if (b->page_size == 0 || b->page_size > MAX_PAGE_SIZE)
		return tk_fail_at(EBADMSG, d->name, o->where,
				  "BUFFER '%s' page size %" PRIu32 " is invalid", name,
				  b->page_size);
	if (n == 0)
		return 0;
	b->cpus = calloc(n, sizeof(*b->cpus));
	ids = calloc(n, sizeof(*ids));
	if (!b->cpus || !ids) {
		free(ids);
		return tk_fail(ENOMEM, "out of memory");
	}
	b->pub.cpus = b->cpus;
	for (uint32_t i = 0; i < n; i++) {
		struct tk_dat_cpu_data *cpu = &b->cpus[i];
		/*
		 * Compressed data starts with a 4-byte chunk count, which the size
		 * leaves out (trace-cmd up to 3.1) or counts (3.2 on); the reader's
		 * chunk walk tells the two apart, so here only the count must fit.
		 */
		uint64_t end_extra = b->pub.compressed ? 4 : 0;

		tk_cursor_u32(&c, &cpu->cpu);
		tk_cursor_u64(&c, &cpu->offset);
		tk_cursor_u64(&c, &cpu->size);
		ids[i] = cpu->cpu;
		b->pub.cpu_count = i + 1;
		ret = salvage_cpu(d, b, cpu, o->where, end_extra);
		if (ret < 0) {
			free(ids);
			return ret;
		}
		if (cpu->offset > d->info.file_size ||
		    end_extra > d->info.file_size - cpu->offset ||
		    cpu->size > d->info.file_size - cpu->offset) {
			free(ids);
			return tk_fail_at(
				EBADMSG, d->name, o->where,
				"buffer '%s' CPU %" PRIu32 " data at 0x%" PRIx64 " size %" PRIu64
				" exceeds file size %" PRIu64 " (file truncated?)",
				name, cpu->cpu, cpu->offset, cpu->size, d->info.file_size);
		}
		/* A CPU listed twice would make readers disagree on its data. */
		for (uint32_t j = 0; j < i; j++) {
			if (ids[j] == cpu->cpu) {
				free(ids);
				return tk_fail_at(EBADMSG, d->name, o->where,
						  "buffer '%s' lists"
						  " CPU %" PRIu32 " twice",
						  name, cpu->cpu);
			}
		}
	}
	free(ids);
	return 0;
}

static int parse_buffer_text(struct tk_dat *d, const struct dat_option *o)
{
	const struct tk_dat_section *s;
	struct tk_cursor c;
	struct dat_buffer *b;
	const char *name, *clock;
	uint64_t soff;
	int ret;

	tk_cursor_init(&c, o->pub.data, o->pub.size, 0, d->info.big_endian);
	if (!tk_cursor_u64(&c, &soff) || !tk_cursor_cstr(&c, &name, NULL) ||
	    !tk_cursor_cstr(&c, &clock, NULL))
		return tk_fail_at(EBADMSG, d->name, o->where, "truncated BUFFER_TEXT option");
	ret = buffer_from_option(d, o, TK_DAT_SECTION_BUFFER_TEXT, soff, name, clock, &s, &b);
	if (ret < 0)
		return ret;
	b->pub.latency_text = true;
	b->page_size = d->info.page_size;
	b->text_offset = soff + TK_DAT_SECTION_HEADER_SIZE;
	b->text_size = s->size;
	return 0;
}

static int parse_buffer_v6(struct tk_dat *d, const struct dat_option *o)
{
	struct tk_cursor c;
	struct dat_buffer *b;
	const char *name;
	uint64_t off;

	tk_cursor_init(&c, o->pub.data, o->pub.size, 0, d->info.big_endian);
	if (!tk_cursor_u64(&c, &off) || !tk_cursor_cstr(&c, &name, NULL))
		return tk_fail_at(EBADMSG, d->name, o->where, "truncated BUFFER option");
	b = add_buffer(d);
	if (!b)
		return -ENOMEM;
	b->where = o->where;
	b->pub.section_offset = off;
	b->pub.name = keep_str(d, name, strlen(name));
	if (!b->pub.name)
		return -ENOMEM;
	b->page_size = d->info.page_size;
	b->v6_cpus = UINT32_MAX; /* "not given": the top count applies */
	return 0;
}

/*
 * "[local] global ..." -> "local" in *@out; NULL when there is no bracketed
 * token. Returns -ENOMEM apart from that, so that running out of memory is
 * not mistaken for a text without a token (and a different clock).
 */
static int bracketed(struct tk_dat *d, const char *text, size_t len, const char **out)
{
	const char *open = memchr(text, '[', len), *close;

	*out = NULL;
	if (!open)
		return 0;
	close = memchr(open, ']', len - (size_t)(open - text));
	if (!close)
		return 0;
	*out = keep_str(d, open + 1, (size_t)(close - open - 1));
	return *out ? 0 : -ENOMEM;
}

static int need_size(struct tk_dat *d, const struct dat_option *o, uint32_t size)
{
	if (o->pub.size < size)
		return tk_fail_at(EBADMSG, d->name, o->where,
				  "%s option size %" PRIu32 ", expected %" PRIu32,
				  tk_dat_option_name(o->pub.id), o->pub.size, size);
	return 0;
}

/*
 * TIME_SHIFT (a guest's time correction; the last one counts, as in
 * trace-cmd) and GUEST (a host's guest, one option each): dat-guest.c.
 */
static int parse_guest_option(struct tk_dat *d, const struct dat_option *o)
{
	bool raw = o->pub.offset != 0;
	uint64_t base = raw ? o->pub.offset + 6 : 0, at = 0;
	char why[128];
	void *mem = NULL;
	int ret;

	if (o->pub.id == TK_DAT_OPTION_TIME_SHIFT) {
		struct tk_dat_time_shift *ts = NULL;

		ret = tk_dat_time_shift_parse(o->pub.data, o->pub.size, d->info.big_endian, base,
					      &ts, why, sizeof(why), &at);
		mem = ts;
		if (!ret)
			d->info.time_shift = ts;
	} else {
		struct tk_dat_guest g;

		ret = tk_dat_guest_parse(o->pub.data, o->pub.size, d->info.big_endian, &g, base,
					 &mem, why, sizeof(why), &at);
		if (!ret && grow(&d->guests, &d->guests_cap, d->nguests + 1, sizeof(g)) < 0) {
			free(mem);
			return -ENOMEM;
		}
		if (!ret) {
			d->guests[d->nguests++] = g;
			d->info.guests = d->guests;
			d->info.nguests = d->nguests;
		}
	}
	if (ret == -EBADMSG)
		return tk_fail_at(EBADMSG, d->name, raw ? at : o->where, "%s%s", why,
				  raw ? "" : " (in a compressed OPTIONS section)");
	if (ret < 0)
		return ret;
	return keep(d, mem);
}

static int process_options(struct tk_dat *d)
{
	bool big = d->info.big_endian;
	int ret = 0;

	for (size_t i = 0; i < d->noptions && ret >= 0; i++) {
		const struct dat_option *o = &d->options[i];
		const uint8_t *p = o->pub.data;
		size_t nbuffers = d->nbuffers;
		int64_t v = 0;

		switch (o->pub.id) {
		case TK_DAT_OPTION_DONE:
		case TK_DAT_OPTION_CPUSTAT:
		case TK_DAT_OPTION_HOOK:
		case TK_DAT_OPTION_PROCMAPS:
			break;
		case TK_DAT_OPTION_TIME_SHIFT:
		case TK_DAT_OPTION_GUEST:
			ret = parse_guest_option(d, o);
			break;
		case TK_DAT_OPTION_DATE:
			ret = parse_int_option(d, o, &v);
			d->info.has_date = ret >= 0;
			d->info.date_offset_us = v;
			break;
		case TK_DAT_OPTION_OFFSET:
			ret = parse_int_option(d, o, &v);
			d->info.ts_offset = ret >= 0 ? v : 0;
			break;
		case TK_DAT_OPTION_BUFFER:
			ret = d->info.version == 6 ? parse_buffer_v6(d, o) : parse_buffer_v7(d, o);
			break;
		case TK_DAT_OPTION_TRACECLOCK:
			d->traceclock_seen = true;
			d->info.trace_clock = keep_str(d, p, o->pub.size);
			if (!d->info.trace_clock)
				return -ENOMEM;
			if (bracketed(d, d->info.trace_clock, strlen(d->info.trace_clock),
				      &d->info.clock) < 0)
				return -ENOMEM;
			break;
		case TK_DAT_OPTION_UNAME:
			d->info.uname = keep_str(d, p, o->pub.size);
			if (!d->info.uname)
				return -ENOMEM;
			break;
		case TK_DAT_OPTION_VERSION:
			d->info.tracer_version = keep_str(d, p, o->pub.size);
			if (!d->info.tracer_version)
				return -ENOMEM;
			break;
		case TK_DAT_OPTION_CPUCOUNT:
			ret = need_size(d, o, 4);
			if (ret < 0)
				break;
			/* v6: a CPUCOUNT right after BUFFER sizes that instance. */
			if (d->info.version == 6 && i > 0 &&
			    d->options[i - 1].pub.id == TK_DAT_OPTION_BUFFER && d->nbuffers) {
				d->buffers[d->nbuffers - 1].v6_cpus = tk_load_u32(p, big);
				break;
			}
			d->info.cpu_count = tk_load_u32(p, big);
			d->cpucount_set = true;
			break;
		case TK_DAT_OPTION_TRACEID:
			ret = need_size(d, o, 8);
			if (ret < 0)
				break;
			d->info.has_trace_id = true;
			d->info.trace_id = tk_load_u64(p, big);
			break;
		case TK_DAT_OPTION_TSC2NSEC:
			ret = need_size(d, o, 16);
			if (ret < 0)
				break;
			d->info.has_tsc2nsec = true;
			d->info.tsc2nsec_mult = tk_load_u32(p, big);
			d->info.tsc2nsec_shift = tk_load_u32(p + 4, big);
			d->info.tsc2nsec_offset = tk_load_u64(p + 8, big);
			break;
		case TK_DAT_SECTION_HEADER_INFO:
		case TK_DAT_SECTION_FTRACE_EVENTS:
		case TK_DAT_SECTION_EVENT_FORMATS:
		case TK_DAT_SECTION_KALLSYMS:
		case TK_DAT_SECTION_PRINTK:
		case TK_DAT_SECTION_CMDLINES:
			if (d->info.version == 6)
				goto unknown;
			ret = need_size(d, o, 8);
			if (ret < 0)
				break;
			d->meta[o->pub.id - 16].option_offset = tk_load_u64(p, big);
			d->meta[o->pub.id - 16].option_where = o->where;
			d->meta[o->pub.id - 16].present = true;
			break;
		case TK_DAT_OPTION_BUFFER_TEXT:
			if (d->info.version == 6)
				goto unknown;
			ret = parse_buffer_text(d, o);
			break;
		case DAT_ID_BTF_FILE:
		case DAT_ID_MODULES_FILE: {
			const struct tk_dat_section *s;

			/* A u64 section offset, as for the metadata above. */
			if (d->info.version == 6)
				goto unknown;
			ret = need_size(d, o, 8);
			if (ret < 0)
				break;
			/*
			 * trace-cmd 3.4's convert copies the BTF option but not its
			 * section, so the offset points into some other section (and
			 * 3.4's own report then prints nothing). Nothing here reads
			 * the section: say so and go on.
			 */
			s = find_section(d, tk_load_u64(p, big));
			if (!s || s->id != o->pub.id)
				tk_warn("%s: offset 0x%" PRIx64 ": %s option names no such section"
					" at 0x%" PRIx64 " (stale, as trace-cmd 3.4 convert leaves"
					" it); ignored",
					d->name, o->where, tk_dat_option_name(o->pub.id),
					tk_load_u64(p, big));
			break;
		}
		case DAT_ID_LAST_BOOT_INFO:
			/* "instance:text" from an instance's last_boot_info file. */
			break;
		default:
		unknown:
			tk_warn("%s: offset 0x%" PRIx64 ": unknown option %u skipped", d->name,
				o->where, o->pub.id);
			break;
		}
		/*
		 * Salvage: a damaged option is skipped whole; a buffer it half
		 * built goes with it.
		 */
		if (ret == -EBADMSG && !d->strict) {
			while (d->nbuffers > nbuffers)
				free(d->buffers[--d->nbuffers].cpus);
			ret = salvage(d, ret, o->where, 6 + (uint64_t)o->pub.size, -1);
		}
	}
	return ret;
}

/* ------------------------------------------------------ metadata bodies */

/*
 * Parse the body of metadata part @id. @base is the file offset of the
 * body's first byte when it is stored raw; @where names the section when
 * it was compressed (offsets inside it mean nothing in the file).
 */
static int parse_meta(struct tk_dat *d, uint16_t id, uint64_t base, uint64_t where, bool compressed)
{
	struct meta_part *m = &d->meta[id - 16];
	const char *what = "";
	uint64_t at = 0;
	int ret = tk_tracedata_parse_dat(d->td, id, m->data, m->len, d->info.big_endian, base, &at,
					 &what);

	if (ret == -EBADMSG)
		return tk_fail_at(EBADMSG, d->name, compressed ? where : at, "%s%s", what,
				  compressed ? " (in the decompressed body)" : "");
	return ret;
}

/*
 * Read late part @id now, with a codec of its own (the handle's may be in
 * use on another thread). Its damage goes to the list as open's would.
 */
static int meta_read_late(struct tk_dat *d, uint16_t id)
{
	struct meta_part *m = &d->meta[id - 16];
	struct tk_codec *codec = NULL;
	int ret;

	if (m->section.flags & TK_DAT_SECTION_FL_COMPRESS) {
		codec = tk_codec_new(d->info.compression, 0);
		if (!codec && d->codec)
			return tk_fail(ENOMEM, "%s: out of memory for a codec", d->name);
	}
	ret = load_section_with(d, codec, &m->section, &m->data, &m->len, true);
	tk_codec_free(codec);
	if (ret >= 0)
		ret = parse_meta(d, id, m->section.offset + TK_DAT_SECTION_HEADER_SIZE,
				 m->section.offset, m->section.flags & TK_DAT_SECTION_FL_COMPRESS);
	if (ret < 0) {
		tk_big_free(m->data);
		m->data = NULL;
		m->len = 0;
		ret = salvage(d, ret, m->option_where, TK_DAT_SECTION_HEADER_SIZE + m->section.size,
			      -1);
		m->present = false;
	}
	return ret;
}

/*
 * Part @id for a reader: a late part is read on the first call (under
 * meta_lock, so two threads asking at once read it once). What a failure
 * leaves is a missing part, as open leaves one.
 */
static int meta_ready(const struct tk_dat *cd, uint16_t id)
{
	struct tk_dat *d = (struct tk_dat *)cd;
	struct meta_part *m = &d->meta[id - 16];
	int ret = 0;

	if (!__atomic_load_n(&m->late, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&d->meta_lock);
	if (m->late) {
		ret = meta_read_late(d, id);
		__atomic_store_n(&m->late, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->meta_lock);
	return ret;
}

static int load_meta_v7(struct tk_dat *d)
{
	for (uint16_t id = 16; id <= 21; id++) {
		struct meta_part *m = &d->meta[id - 16];
		const struct tk_dat_section *s = NULL;
		int ret;

		if (!m->present)
			continue;
		ret = section_at(d, m->option_offset, id, m->option_where, &s);
		/*
		 * kallsyms (5 MB of text, ~50 M instructions to decompress) is
		 * read when first asked for: most reports print no symbol.
		 * So are the saved cmdlines (35-90 KB, a page fault per 4 KB
		 * read): a report of pid 0's records alone names no task.
		 * A strict reader reads them now, so that their damage fails open.
		 */
		if (ret >= 0 && (id == TK_DAT_SECTION_KALLSYMS || id == TK_DAT_SECTION_CMDLINES) &&
		    !d->strict && s->size <= TK_DAT_MAX_METADATA_SIZE) {
			m->section = *s;
			m->late = true;
			continue;
		}
		if (ret >= 0)
			ret = load_section(d, s, &m->data, &m->len, true);
		if (ret >= 0)
			ret = parse_meta(d, id, s->offset + TK_DAT_SECTION_HEADER_SIZE, s->offset,
					 s->flags & TK_DAT_SECTION_FL_COMPRESS);
		if (ret < 0) {
			/*
			 * Salvage: the part is missing, as if the file lacked it
			 * (the tracedata drops a part that fails to parse).
			 */
			ret = salvage(d, ret, m->option_where,
				      s ? TK_DAT_SECTION_HEADER_SIZE + s->size : 0, -1);
			if (ret < 0)
				return ret;
			m->present = false;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ v6 layout */

/* A buffered forward reader for the many small v6 fields. */
struct fr {
	struct tk_dat *d;
	uint64_t pos;
	uint64_t boff;
	size_t blen;
	uint8_t buf[4096];
};

static int fr_read(struct fr *f, void *out, size_t n, const char *what)
{
	uint64_t fsize = f->d->info.file_size;

	if (f->pos < f->boff || f->pos - f->boff + n > f->blen) {
		uint64_t left = f->pos < fsize ? fsize - f->pos : 0;
		size_t want = left < sizeof(f->buf) ? (size_t)left : sizeof(f->buf);
		int ret;

		if (want < n)
			return tk_fail_at(EBADMSG, f->d->name, f->pos, "truncated %s", what);
		ret = read_at(f->d, f->buf, want, f->pos);
		if (ret < 0)
			return ret;
		f->boff = f->pos;
		f->blen = want;
	}
	memcpy(out, f->buf + (f->pos - f->boff), n);
	f->pos += n;
	return 0;
}

static int fr_u16(struct fr *f, uint16_t *v, const char *what)
{
	uint8_t b[2] = {0};
	int ret = fr_read(f, b, 2, what);

	*v = ret < 0 ? 0 : tk_load_u16(b, f->d->info.big_endian);
	return ret;
}

static int fr_u32(struct fr *f, uint32_t *v, const char *what)
{
	uint8_t b[4] = {0};
	int ret = fr_read(f, b, 4, what);

	*v = ret < 0 ? 0 : tk_load_u32(b, f->d->info.big_endian);
	return ret;
}

static int fr_u64(struct fr *f, uint64_t *v, const char *what)
{
	uint8_t b[8] = {0};
	int ret = fr_read(f, b, 8, what);

	*v = ret < 0 ? 0 : tk_load_u64(b, f->d->info.big_endian);
	return ret;
}

static int fr_skip(struct fr *f, uint64_t n, const char *what)
{
	uint64_t fsize = f->d->info.file_size;

	if (f->pos > fsize || n > fsize - f->pos)
		return tk_fail_at(EBADMSG, f->d->name, f->pos,
				  "%s length %" PRIu64 " runs past the end of the file", what, n);
	f->pos += n;
	return 0;
}

/* Skip {u64 len, text}. */
static int fr_skip_text64(struct fr *f, const char *what)
{
	uint64_t len;
	int ret = fr_u64(f, &len, what);

	return ret < 0 ? ret : fr_skip(f, len, what);
}

/* Find where v6 part @id ends by walking its lengths. */
static int v6_measure(struct fr *f, uint16_t id)
{
	uint8_t tag[13];
	uint32_t n, len32;
	int ret;

	switch (id) {
	case TK_DAT_SECTION_HEADER_INFO:
		ret = fr_read(f, tag, 12, "header_page tag");
		if (ret < 0)
			return ret;
		if (memcmp(tag, "header_page", 12) != 0)
			return tk_fail_at(EBADMSG, f->d->name, f->pos - 12,
					  "missing header_page tag");
		ret = fr_skip_text64(f, "header_page");
		if (ret < 0)
			return ret;
		ret = fr_read(f, tag, 13, "header_event tag");
		if (ret < 0)
			return ret;
		if (memcmp(tag, "header_event", 13) != 0)
			return tk_fail_at(EBADMSG, f->d->name, f->pos - 13,
					  "missing header_event tag");
		return fr_skip_text64(f, "header_event");
	case TK_DAT_SECTION_FTRACE_EVENTS:
		ret = fr_u32(f, &n, "ftrace format count");
		for (uint32_t i = 0; i < n && ret >= 0; i++)
			ret = fr_skip_text64(f, "ftrace format");
		return ret;
	case TK_DAT_SECTION_EVENT_FORMATS:
		ret = fr_u32(f, &n, "event system count");
		for (uint32_t i = 0; i < n && ret >= 0; i++) {
			uint8_t ch = 1;
			uint32_t count = 0;

			while (ret >= 0 && ch)
				ret = fr_read(f, &ch, 1, "event system name");
			if (ret >= 0)
				ret = fr_u32(f, &count, "event format count");
			for (uint32_t j = 0; j < count && ret >= 0; j++)
				ret = fr_skip_text64(f, "event format");
		}
		return ret;
	case TK_DAT_SECTION_KALLSYMS:
	case TK_DAT_SECTION_PRINTK:
		ret = fr_u32(f, &len32, id == TK_DAT_SECTION_KALLSYMS ? "kallsyms" : "printk");
		return ret < 0 ? ret
			       : fr_skip(f, len32,
					 id == TK_DAT_SECTION_KALLSYMS ? "kallsyms" : "printk");
	case TK_DAT_SECTION_CMDLINES:
		return fr_skip_text64(f, "cmdlines");
	}
	return 0;
}

static int add_pseudo_section(struct tk_dat *d, uint16_t id, uint64_t off, uint64_t size)
{
	struct tk_dat_section s = {
		.id = id,
		.string_id = -1,
		.offset = off,
		.size = size,
		.body_size = size,
	};

	return add_section(d, &s);
}

/* Read a v6 CPU table of @count {offset, size} entries into @b. */
static int v6_table(struct tk_dat *d, struct fr *f, struct dat_buffer *b, uint32_t count)
{
	uint64_t fsize = d->info.file_size;

	if (f->pos > fsize || count > (fsize - f->pos) / 16)
		return tk_fail_at(EBADMSG, d->name, f->pos,
				  "CPU table of %" PRIu32 " entries runs past the end of the file",
				  count);
	if (count) {
		b->cpus = calloc(count, sizeof(*b->cpus));
		if (!b->cpus)
			return tk_fail(ENOMEM, "out of memory");
		b->pub.cpus = b->cpus;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint64_t where = f->pos, off, size;
		int ret;

		ret = fr_u64(f, &off, "CPU table");
		if (ret >= 0)
			ret = fr_u64(f, &size, "CPU table");
		if (ret < 0)
			return ret;
		if (off == 0 && size == 0)
			continue;
		b->cpus[b->pub.cpu_count].cpu = i;
		b->cpus[b->pub.cpu_count].offset = off;
		b->cpus[b->pub.cpu_count].size = size;
		ret = salvage_cpu(d, b, &b->cpus[b->pub.cpu_count], where, 0);
		if (ret < 0)
			return ret;
		off = b->cpus[b->pub.cpu_count].offset;
		size = b->cpus[b->pub.cpu_count].size;
		if (off > fsize || size > fsize - off)
			return tk_fail_at(EBADMSG, d->name, where,
					  "CPU %" PRIu32 " data at 0x%" PRIx64 " size %" PRIu64
					  " exceeds file size %" PRIu64 " (file truncated?)",
					  i, off, size, fsize);
		b->cpus[b->pub.cpu_count].cpu = i;
		b->cpus[b->pub.cpu_count].offset = off;
		b->cpus[b->pub.cpu_count].size = size;
		b->pub.cpu_count++;
	}
	return 0;
}

static int parse_v6(struct tk_dat *d)
{
	struct fr *f;
	uint32_t top_cpus;
	struct dat_buffer *top;
	char tag[TK_DAT_V6_TAG_LEN];
	int ret;

	f = calloc(1, sizeof(*f));
	if (!f)
		return tk_fail(ENOMEM, "out of memory");
	f->d = d;
	f->pos = d->header_end;
	for (uint16_t id = 16; id <= 21; id++) {
		struct meta_part *m = &d->meta[id - 16];
		uint64_t start = f->pos;

		ret = v6_measure(f, id);
		if (ret < 0)
			goto out;
		ret = add_pseudo_section(d, id, start, f->pos - start);
		if (ret < 0)
			goto out;
		ret = read_alloc_as(d, start, f->pos - start, &m->data, true);
		if (ret < 0)
			goto out;
		m->len = f->pos - start;
		m->present = true;
		/* Salvage: the lengths held, so only this part is lost. */
		ret = parse_meta(d, id, start, start, false);
		if (ret < 0) {
			ret = salvage(d, ret, start, f->pos - start, -1);
			m->present = false;
		}
		if (ret < 0)
			goto out;
	}
	ret = fr_u32(f, &top_cpus, "CPU count");
	if (ret < 0)
		goto out;
	ret = fr_read(f, tag, sizeof(tag), "section tag");
	if (ret < 0)
		goto out;
	if (strncmp(tag, "options", 7) == 0) {
		uint64_t start = f->pos - sizeof(tag);

		for (;;) {
			uint64_t where = f->pos;
			uint8_t *data = NULL;
			uint16_t id;
			uint32_t size;

			ret = fr_u16(f, &id, "option id");
			if (ret < 0)
				goto out;
			if (id == TK_DAT_OPTION_DONE) {
				ret = add_option(d, id, 0, NULL, where, where, 0);
				if (ret < 0)
					goto out;
				break;
			}
			ret = fr_u32(f, &size, "option size");
			if (ret < 0)
				goto out;
			ret = read_alloc(d, f->pos, size, &data);
			if (ret < 0)
				goto out;
			ret = keep(d, data);
			if (ret < 0)
				goto out;
			f->pos += size;
			ret = add_option(d, id, size, data, where, where, 0);
			if (ret < 0)
				goto out;
		}
		ret = add_pseudo_section(d, TK_DAT_SECTION_OPTIONS, start, f->pos - start);
		if (ret < 0)
			goto out;
		ret = fr_read(f, tag, sizeof(tag), "section tag");
		if (ret < 0)
			goto out;
	}
	/* Options first: TRACECLOCK and CPUCOUNT shape the table below. */
	ret = process_options(d);
	if (ret < 0)
		goto out;
	if (!d->cpucount_set)
		d->info.cpu_count = top_cpus;
	top = add_buffer(d);
	if (!top) {
		ret = -ENOMEM;
		goto out;
	}
	top->pub.name = "";
	top->page_size = d->info.page_size;
	top->pub.section_offset = f->pos - sizeof(tag);
	top->where = top->pub.section_offset;
	if (strncmp(tag, "latency", 7) == 0) {
		top->pub.latency_text = true;
		top->text_offset = f->pos;
		top->text_size = d->info.file_size - f->pos;
		ret = add_pseudo_section(d, TK_DAT_SECTION_BUFFER_TEXT, f->pos - sizeof(tag),
					 d->info.file_size - f->pos + sizeof(tag));
		goto out;
	}
	if (strncmp(tag, "flyrecord", 9) != 0) {
		ret = tk_fail_at(EBADMSG, d->name, f->pos - sizeof(tag),
				 "expected \"flyrecord\" or \"latency\" tag");
		goto out;
	}
	ret = add_pseudo_section(d, TK_DAT_SECTION_FLYRECORD, f->pos - sizeof(tag),
				 d->info.file_size - f->pos + sizeof(tag));
	if (ret < 0)
		goto out;
	ret = v6_table(d, f, top, d->info.cpu_count);
	if (ret < 0)
		goto out;
	if (d->traceclock_seen) {
		uint64_t len, where = f->pos;
		uint8_t *blob;

		ret = fr_u64(f, &len, "clock length");
		if (ret >= 0 && len > 4096)
			ret = tk_fail_at(EBADMSG, d->name, where,
					 "clock length %" PRIu64 " is implausible", len);
		if (ret >= 0)
			ret = read_alloc(d, f->pos, len, &blob);
		if (ret < 0) {
			/* Salvage: the clock is the TRACECLOCK option's, or unknown. */
			ret = salvage(d, ret, where, 0, -1);
			goto instances;
		}
		ret = keep(d, blob);
		if (ret < 0)
			goto out;
		ret = bracketed(d, (const char *)blob, len, &top->pub.clock);
		if (ret < 0)
			goto out;
		if (!top->pub.clock)
			top->pub.clock = keep_str(d, blob, len);
		if (!top->pub.clock) {
			ret = -ENOMEM;
			goto out;
		}
	}
instances:
	/* Instance tables: each BUFFER points at its own "flyrecord\0" tag. */
	for (size_t i = 0; ret >= 0 && i + 1 < d->nbuffers; i++) {
		struct dat_buffer *b = &d->buffers[i];
		uint32_t count = b->v6_cpus == UINT32_MAX ? d->info.cpu_count : b->v6_cpus;

		f->pos = b->pub.section_offset;
		f->blen = 0;
		ret = fr_read(f, tag, sizeof(tag), "instance flyrecord tag");
		if (ret < 0) {
			ret = prefix_at(ret, d->name, b->where, "BUFFER option");
		} else if (strncmp(tag, "flyrecord", 9) != 0) {
			ret = tk_fail_at(EBADMSG, d->name, b->where,
					 "BUFFER '%s' offset 0x%" PRIx64
					 " does not point at a \"flyrecord\" tag",
					 b->pub.name, b->pub.section_offset);
		} else {
			ret = v6_table(d, f, b, count);
		}
		if (ret < 0) {
			/* Salvage: the instance keeps no CPUs; the others print. */
			b->pub.cpu_count = 0;
			ret = salvage(d, ret, b->where, 0, -1);
		}
		if (ret < 0)
			goto out;
	}
out:
	free(f);
	return ret;
}

/* ------------------------------------------------------------ finishing */

static int finish_buffers(struct tk_dat *d)
{
	struct tk_page_format base;
	bool have_base;
	int ret;

	if (d->meta[0].present && d->td->header_page.len) {
		ret = tk_page_format_parse(&base, d->td->header_page.data, d->td->header_page.len,
					   d->info.big_endian);
	} else {
		ret = tk_page_format_init(&base, d->info.page_size, d->info.long_size,
					  d->info.big_endian);
	}
	have_base = ret >= 0;
	if (have_base)
		ret = tk_page_format_init(&d->info.page_format, d->info.page_size, base.long_size,
					  d->info.big_endian);
	if (ret < 0) {
		for (size_t i = 0; i < d->nbuffers; i++) {
			if (!d->buffers[i].pub.latency_text && d->buffers[i].pub.cpu_count)
				return prefix_at(ret, d->name,
						 d->info.version == 7 ? d->meta[0].option_offset
								      : d->header_end,
						 "page format");
		}
		memset(&d->info.page_format, 0, sizeof(d->info.page_format));
	}
	for (size_t i = 0; i < d->nbuffers; i++) {
		struct dat_buffer *b = &d->buffers[i];

		if (!have_base)
			break;
		ret = tk_page_format_init(&b->pub.page_format, b->page_size, base.long_size,
					  d->info.big_endian);
		if (ret < 0 && !b->pub.latency_text && b->pub.cpu_count)
			return prefix_at(ret, d->name, b->where, "buffer page format");
	}
	/* The top buffer first, the others in file order. */
	for (size_t i = 0; i < d->nbuffers; i++) {
		if (d->buffers[i].pub.name[0] == '\0') {
			struct dat_buffer top = d->buffers[i];

			memmove(&d->buffers[1], &d->buffers[0], i * sizeof(*d->buffers));
			d->buffers[0] = top;
			break;
		}
	}
	if (!d->info.clock && d->nbuffers && d->buffers[0].pub.name[0] == '\0')
		d->info.clock = d->buffers[0].pub.clock;
	if (!d->info.clock)
		d->info.clock = "local";
	if (!d->cpucount_set && d->info.version == 7 && d->nbuffers &&
	    d->buffers[0].pub.name[0] == '\0') {
		uint32_t max = 0;

		for (uint32_t i = 0; i < d->buffers[0].pub.cpu_count; i++)
			if (d->buffers[0].cpus[i].cpu >= max)
				max = d->buffers[0].cpus[i].cpu + 1;
		d->info.cpu_count = max;
	}
	return 0;
}

static struct tk_dat *open_common(int fd, bool own_fd, const char *name, bool strict)
{
	struct tk_dat *d = calloc(1, sizeof(*d));
	struct stat st;
	int ret;

	if (!d) {
		if (own_fd)
			close(fd);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	d->fd = fd;
	d->own_fd = own_fd;
	d->strict = strict;
	pthread_mutex_init(&d->damage_lock, NULL);
	pthread_mutex_init(&d->meta_lock, NULL);
	d->name = strdup(name ? name : "(fd)");
	d->td = tk_tracedata_new();
	if (!d->name || !d->td) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto fail;
	}
	d->info.path = d->name;
	if (fstat(fd, &st) < 0) {
		ret = tk_fail(errno, "%s: %s", d->name, strerror(errno));
		goto fail;
	}
	d->info.file_size = (uint64_t)st.st_size;
	ret = parse_header(d);
	if (ret < 0)
		goto fail;
	if (d->info.version == 7) {
		ret = walk_sections(d);
		if (ret >= 0)
			ret = parse_options_v7(d);
		if (ret >= 0)
			ret = process_options(d);
		if (ret >= 0)
			ret = load_meta_v7(d);
	} else {
		ret = parse_v6(d);
	}
	if (ret >= 0)
		ret = finish_buffers(d);
	if (ret < 0)
		goto fail;
	return d;
fail:
	tk_dat_close(d);
	errno = -ret;
	return NULL;
}

static struct tk_dat *open_path(const char *path, bool strict)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int err = errno;

		tk_fail(err, "%s: %s", path, strerror(err));
		errno = err;
		return NULL;
	}
	return open_common(fd, true, path, strict);
}

TK_API struct tk_dat *tk_dat_open(const char *path)
{
	return open_path(path, true);
}

TK_API struct tk_dat *tk_dat_open_fd(int fd, const char *name)
{
	return open_common(fd, false, name, true);
}

/* The opts' strict flag; a bad opts struct is -EINVAL or -E2BIG. */
static int open_strict(const struct tk_dat_open_opts *opts, bool *strict)
{
	struct tk_dat_open_opts o;
	int ret = tk_opts_copy(&o, sizeof(o), opts, "tk_dat_open_opts");

	if (ret < 0)
		return ret;
	*strict = o.strict;
	return 0;
}

TK_API struct tk_dat *tk_dat_open_with(const char *path, const struct tk_dat_open_opts *opts)
{
	bool strict;
	int ret = open_strict(opts, &strict);

	if (ret < 0) {
		errno = -ret;
		return NULL;
	}
	return open_path(path, strict);
}

TK_API struct tk_dat *tk_dat_open_fd_with(int fd, const char *name,
					  const struct tk_dat_open_opts *opts)
{
	bool strict;
	int ret = open_strict(opts, &strict);

	if (ret < 0) {
		errno = -ret;
		return NULL;
	}
	return open_common(fd, false, name, strict);
}

TK_API void tk_dat_close(struct tk_dat *d)
{
	if (!d)
		return;
	if (d->own_fd)
		close(d->fd);
	tk_codec_free(d->codec);
	free(d->sections);
	free(d->strings);
	free(d->options);
	for (size_t i = 0; i < d->nkeep; i++)
		free(d->keep[i]);
	free(d->keep);
	for (int i = 0; i < 6; i++)
		tk_big_free(d->meta[i].data);
	tk_tracedata_free(d->td);
	for (size_t i = 0; i < d->nbuffers; i++)
		free(d->buffers[i].cpus);
	free(d->buffers);
	free(d->guests);
	for (size_t i = 0; i < d->ndamage; i++)
		free((char *)d->damage[i].what);
	free(d->damage);
	pthread_mutex_destroy(&d->damage_lock);
	pthread_mutex_destroy(&d->meta_lock);
	free(d->name);
	free(d);
}

/* ------------------------------------------------------------- getters */

TK_API const struct tk_dat_info *tk_dat_get_info(const struct tk_dat *d)
{
	return &d->info;
}

TK_API size_t tk_dat_section_count(const struct tk_dat *d)
{
	return d->nsections;
}

TK_API const struct tk_dat_section *tk_dat_section_get(const struct tk_dat *d, size_t index)
{
	return index < d->nsections ? &d->sections[index] : NULL;
}

TK_API size_t tk_dat_option_count(const struct tk_dat *d)
{
	return d->noptions;
}

TK_API const struct tk_dat_option *tk_dat_option_get(const struct tk_dat *d, size_t index)
{
	return index < d->noptions ? &d->options[index].pub : NULL;
}

TK_API size_t tk_dat_buffer_count(const struct tk_dat *d)
{
	return d->nbuffers;
}

TK_API const struct tk_dat_buffer *tk_dat_buffer_get(const struct tk_dat *d, size_t index)
{
	return index < d->nbuffers ? &d->buffers[index].pub : NULL;
}

static int no_part(const struct tk_dat *d, uint16_t id)
{
	return tk_fail(ENOENT, "%s: no %s section", d->name, tk_dat_section_name(id));
}

TK_API int tk_dat_metadata(const struct tk_dat *d, uint16_t id, const void **body, uint64_t *len)
{
	int ret = id >= 16 && id <= 21 ? meta_ready(d, id) : 0;

	if (ret < 0)
		return ret;
	if (id < 16 || id > 21 || !d->meta[id - 16].data)
		return no_part(d, id);
	*body = d->meta[id - 16].data;
	*len = d->meta[id - 16].len;
	return 0;
}

static int get_text(const struct tk_dat *d, uint16_t id,
		    int (*get)(const struct tk_tracedata *, struct tk_text *),
		    struct tk_dat_text *text)
{
	int ret = meta_ready(d, id);

	if (ret < 0)
		return ret;
	if (!d->meta[id - 16].data || get(d->td, text) < 0)
		return no_part(d, id);
	return 0;
}

TK_API int tk_dat_header_page(const struct tk_dat *d, struct tk_dat_text *text)
{
	return get_text(d, TK_DAT_SECTION_HEADER_INFO, tk_tracedata_header_page, text);
}

TK_API int tk_dat_header_event(const struct tk_dat *d, struct tk_dat_text *text)
{
	return get_text(d, TK_DAT_SECTION_HEADER_INFO, tk_tracedata_header_event, text);
}

TK_API size_t tk_dat_ftrace_format_count(const struct tk_dat *d)
{
	return tk_tracedata_ftrace_count(d->td);
}

TK_API int tk_dat_ftrace_format(const struct tk_dat *d, size_t index, struct tk_dat_text *text)
{
	if (tk_tracedata_ftrace_format(d->td, index, text) < 0)
		return tk_fail(ENOENT, "%s: no ftrace format %zu", d->name, index);
	return 0;
}

TK_API size_t tk_dat_system_count(const struct tk_dat *d)
{
	return tk_tracedata_system_count(d->td);
}

TK_API const char *tk_dat_system_name(const struct tk_dat *d, size_t system)
{
	return tk_tracedata_system_name(d->td, system);
}

TK_API size_t tk_dat_system_format_count(const struct tk_dat *d, size_t system)
{
	return tk_tracedata_system_format_count(d->td, system);
}

TK_API int tk_dat_system_format(const struct tk_dat *d, size_t system, size_t index,
				struct tk_dat_text *text)
{
	if (tk_tracedata_system_format(d->td, system, index, text) < 0)
		return tk_fail(ENOENT, "%s: no event format %zu/%zu", d->name, system, index);
	return 0;
}

TK_API int tk_dat_kallsyms(const struct tk_dat *d, struct tk_dat_text *text)
{
	return get_text(d, TK_DAT_SECTION_KALLSYMS, tk_tracedata_kallsyms, text);
}

TK_API int tk_dat_printk(const struct tk_dat *d, struct tk_dat_text *text)
{
	return get_text(d, TK_DAT_SECTION_PRINTK, tk_tracedata_printk, text);
}

TK_API int tk_dat_cmdlines(const struct tk_dat *d, struct tk_dat_text *text)
{
	return get_text(d, TK_DAT_SECTION_CMDLINES, tk_tracedata_cmdlines, text);
}

TK_API const struct tk_tracedata *tk_dat_get_tracedata(const struct tk_dat *d)
{
	/* Its holder may ask for any part: the late ones (kallsyms, cmdlines) are read first. */
	(void)meta_ready(d, TK_DAT_SECTION_KALLSYMS);
	(void)meta_ready(d, TK_DAT_SECTION_CMDLINES);
	return d->td;
}

TK_API uint64_t tk_dat_timestamp(const struct tk_dat *d, uint64_t ts)
{
	const struct tk_dat_info *i = &d->info;

	if (i->has_tsc2nsec) {
		unsigned __int128 wide = (unsigned __int128)ts * i->tsc2nsec_mult;

		ts = i->tsc2nsec_shift >= 128 ? 0 : (uint64_t)(wide >> i->tsc2nsec_shift);
	}
	/* Unsigned arithmetic: the sums wrap as trace-cmd's do, never trap. */
	if (i->has_date)
		ts += (uint64_t)i->date_offset_us * 1000u;
	return ts + (uint64_t)i->ts_offset;
}

TK_API uint64_t tk_dat_host_time(const struct tk_dat *d, uint32_t cpu, uint64_t ts)
{
	return tk_dat_time_shift_apply(d->info.time_shift, cpu, ts);
}

/* ------------------------------------------------------ chunk directory */

struct chunk {
	uint64_t file_offset;	/* of the chunk's {csize, usize} header */
	uint64_t stream_offset; /* of its first byte in the decoded stream */
	uint32_t csize, usize;
};

/*
 * Walk the chunk headers of compressed data whose u32 count is at @off and
 * whose chunks fill exactly @size bytes after it. @page_size 0 means text
 * (no page multiple required).
 *
 * @size_may_count is for CPU data, whose size two trace-cmd releases wrote
 * two ways: up to 3.1 the BUFFER option's size leaves out the 4-byte count,
 * from 3.2 on (upstream commit 4b921329) it includes it. The size is
 * untrusted, so it never steers the walk: the walk follows the count and
 * the chunk headers, bounded by the larger reading (@size after the count)
 * or the file's end, whichever is nearer, and the size is then accepted
 * only if the chunks end exactly where one of the two readings says. The
 * two readings differ by 4 bytes, so at most one can match.
 *
 * CPU data (@size_may_count) is salvaged when the reader is not strict: the
 * walk keeps the chunks before the first bad header or the cut, and the
 * rest is one damaged region.
 */
static int build_chunks(const struct tk_dat *cd, const struct tk_codec *codec, uint64_t off,
			uint64_t size, uint32_t page_size, bool size_may_count, struct chunk **out,
			size_t *nout, uint64_t *total)
{
	/* Only the damage list is written; it has its own lock. */
	struct tk_dat *d = (struct tk_dat *)cd;
	bool salvaging = size_may_count && !d->strict;
	uint64_t fsize = d->info.file_size, pos, end, stream = 0;
	struct chunk *chunks = NULL;
	uint32_t kept = 0;
	uint8_t b[8] = {0};
	const uint8_t *h;
	struct span w;
	uint32_t count;
	int ret;

	*out = NULL;
	*nout = 0;
	*total = 0;
	/* A 3.2+ size that counts the count may end exactly at the end of the file. */
	if (off > fsize || fsize - off < 4 || size > fsize - off - (size_may_count ? 0 : 4)) {
		ret = tk_fail_at(
			EBADMSG, d->name, off,
			"compressed data of %" PRIu64 " bytes runs past the end of the file", size);
		return salvaging ? salvage(d, ret, off, size, -1) : ret;
	}
	ret = read_at(d, b, 4, off);
	if (ret < 0)
		return ret;
	count = tk_load_u32(b, d->info.big_endian);
	if (count > size / 8) {
		ret = tk_fail_at(EBADMSG, d->name, off,
				 "chunk count %" PRIu32 " cannot fit in %" PRIu64 " bytes", count,
				 size);
		if (!salvaging)
			return ret;
		/* Salvage: walk what can fit; the walk finds where it ends. */
		ret = salvage(d, ret, off, 0, -1);
		if (ret < 0)
			return ret;
		count = (uint32_t)(size / 8);
	}
	if (count) {
		chunks = calloc(count, sizeof(*chunks));
		if (!chunks)
			return tk_fail(ENOMEM, "out of memory");
	}
	ret = span_init(&w, 0);
	if (ret < 0) {
		free(chunks);
		return ret;
	}
	pos = off + 4;
	/* The walk's bound: @size after the count, or the file's end if nearer. */
	end = size > fsize - off - 4 ? fsize : off + 4 + size;
	for (uint32_t i = 0; i < count; i++) {
		struct chunk *c = &chunks[kept];
		uint64_t cap;

		if (end - pos < 8) {
			ret = tk_fail_at(EBADMSG, d->name, pos,
					 "chunk %" PRIu32 " header runs past"
					 " the data (ends at 0x%" PRIx64 ")",
					 i, end);
			goto cut;
		}
		ret = span_read(d, &w, &h, 8, pos);
		if (ret < 0)
			goto cut;
		c->file_offset = pos;
		c->csize = tk_load_u32(h, d->info.big_endian);
		c->usize = tk_load_u32(h + 4, d->info.big_endian);
		c->stream_offset = stream;
		cap = (uint64_t)c->csize * CHUNK_RATIO;
		if (cap < CHUNK_FLOOR)
			cap = CHUNK_FLOOR;
		if (cap > MAX_CHUNK_SIZE)
			cap = MAX_CHUNK_SIZE;
		if (c->csize > end - pos - 8) {
			ret = tk_fail_at(EBADMSG, d->name, pos,
					 "chunk %" PRIu32 " size %" PRIu32
					 " runs past the data (ends at 0x%" PRIx64 ")",
					 i, c->csize, end);
			goto cut;
		}
		/*
		 * Salvage: a size off the page grid is rounded up; the chunk's
		 * decompression tells its real size (load_chunk()).
		 */
		if (salvaging && page_size && c->usize % page_size &&
		    c->usize <= cap - cap % page_size)
			c->usize += page_size - c->usize % page_size;
		if (c->usize == 0 || (page_size && c->usize % page_size) || c->usize > cap ||
		    c->csize == 0 || c->csize > tk_codec_bound(codec, c->usize)) {
			ret = tk_fail_at(
				EBADMSG, d->name, pos,
				"chunk %" PRIu32 " sizes %" PRIu32 "/%" PRIu32 " are invalid%s", i,
				c->csize, c->usize, page_size ? " (must be whole pages)" : "");
			if (!salvaging)
				goto fail;
			/* Salvage: the size still says where the next chunk starts. */
			ret = salvage(d, ret, pos, 8 + (uint64_t)c->csize, -1);
			if (ret < 0)
				goto fail;
			pos += 8 + c->csize;
			continue;
		}
		stream += c->usize;
		pos += 8 + c->csize;
		kept++;
		continue;
	cut:
		/* Salvage: the chunks before this one are read; the rest is lost. */
		if (!salvaging || ret != -EBADMSG)
			goto fail;
		ret = salvage(d, ret, pos, end - pos, -1);
		if (ret < 0)
			goto fail;
		goto done;
	}
	/* trace-cmd 3.2+ counted the 4-byte chunk count in the size. */
	if (pos != off + 4 + size && !(size_may_count && size >= 4 && pos == off + size)) {
		if (size_may_count)
			ret = tk_fail_at(EBADMSG, d->name, off,
					 "chunks fill %" PRIu64 " bytes (%" PRIu64
					 " with their count) but the buffer says %" PRIu64,
					 pos - off - 4, pos - off, size);
		else
			ret = tk_fail_at(EBADMSG, d->name, off,
					 "chunks fill %" PRIu64 " bytes but the"
					 " buffer says %" PRIu64,
					 pos - off - 4, size);
		/* Salvage: every chunk decoded its header; the size alone is off. */
		if (salvaging)
			ret = salvage(d, ret, off, 0, -1);
		if (ret < 0)
			goto fail;
	}
done:
	span_release(&w);
	*out = chunks;
	*nout = kept;
	*total = stream;
	return 0;
fail:
	span_release(&w);
	free(chunks);
	return ret;
}

TK_API int tk_dat_latency_text(struct tk_dat *d, size_t index, struct tk_dat_text *text)
{
	struct dat_buffer *b;
	struct chunk *chunks;
	size_t n;
	uint64_t total, max_csize = 0;
	uint8_t *out = NULL, *in = NULL;
	int ret;

	if (index >= d->nbuffers || !d->buffers[index].pub.latency_text)
		return tk_fail(EINVAL, "%s: buffer %zu is not a latency text buffer", d->name,
			       index);
	b = &d->buffers[index];
	if (!b->pub.compressed) {
		if (b->text_size > TK_DAT_MAX_METADATA_SIZE)
			return tk_fail_at(EBADMSG, d->name, b->text_offset,
					  "latency text too large");
		ret = read_alloc(d, b->text_offset, b->text_size, &out);
		if (ret < 0)
			return ret;
		text->data = (const char *)out;
		text->len = b->text_size;
		return 0;
	}
	if (!d->codec)
		return tk_fail_at(EBADMSG, d->name, b->pub.section_offset,
				  "compressed text in a file without compression");
	if (b->text_size < 4)
		return tk_fail_at(EBADMSG, d->name, b->pub.section_offset,
				  "compressed latency text lacks its chunk count");
	ret = build_chunks(d, d->codec, b->text_offset, b->text_size - 4, 0, false, &chunks, &n,
			   &total);
	if (ret < 0)
		return ret;
	if (total > TK_DAT_MAX_METADATA_SIZE) {
		ret = tk_fail_at(EBADMSG, d->name, b->text_offset, "latency text too large");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (chunks[i].csize > max_csize)
			max_csize = chunks[i].csize;
	out = malloc(total + 1);
	in = malloc(max_csize + 1);
	if (!out || !in) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t got;

		ret = read_at(d, in, chunks[i].csize, chunks[i].file_offset + 8);
		if (ret < 0)
			goto out;
		got = tk_codec_decompress(d->codec, out + chunks[i].stream_offset, chunks[i].usize,
					  in, chunks[i].csize);
		if (got < 0) {
			ret = prefix_at((int)got, d->name, chunks[i].file_offset, NULL);
			goto out;
		}
		if ((uint64_t)got != chunks[i].usize) {
			ret = tk_fail_at(EBADMSG, d->name, chunks[i].file_offset,
					 "chunk decompressed"
					 " to %" PRId64 " bytes, expected %" PRIu32,
					 got, chunks[i].usize);
			goto out;
		}
	}
	out[total] = 0;
	text->data = (const char *)out;
	text->len = total;
	out = NULL;
	ret = 0;
out:
	free(chunks);
	free(in);
	free(out);
	return ret;
}

/* -------------------------------------------------------- per-CPU reader */

struct tk_dat_cpu_reader {
	struct tk_dat *dat;
	struct tk_page_format fmt;
	uint32_t page_size;
	uint32_t cpu;
	uint64_t offset, size; /* in the file */
	uint64_t stream_size;  /* decoded bytes */
	uint64_t pos;	       /* stream offset of the next page */
	bool compressed;
	uint8_t *block; /* pages of [block_start, block_start + block_len) */
	size_t block_cap;
	uint64_t block_start, block_len;
	uint8_t *probe; /* one page, for seek_time on raw data */
	struct tk_codec *codec;
	struct chunk *chunks;
	size_t nchunks;
	size_t block_chunk; /* chunk held in block, when block_len != 0 */
	struct span span;   /* the compressed chunks this thread reads */
	uint32_t max_csize;
	uint64_t chunks_decoded;
	/*
	 * Compressed data read through a prefetch (tk_dat_prefetch_attach()):
	 * block then points into the lane slot held, or at own (a chunk
	 * decoded here because no slot could take it).
	 */
	uint8_t *own;
	struct tk_dat_prefetch *pf;
	struct pf_lane *lane;
	struct pf_slot *held;
	/*
	 * tk_dat_cpu_reader_defer_trim(): pages go out with their header
	 * checked (and clamped) but their records not walked; page_clamped
	 * says the last one's header was, so its damage is recorded already.
	 */
	bool defer_trim, page_clamped;
};

static void prefetch_detach(struct tk_dat_cpu_reader *r);

/*
 * A reader's own buffers, once its sizes are known: the span its chunks
 * are read through (compressed data) and the block it decodes into.
 * Return: 0 or -ENOMEM (message set).
 */
static int reader_buffers(struct tk_dat_cpu_reader *r)
{
	if (r->nchunks && span_init(&r->span, r->max_csize) < 0)
		return -ENOMEM;
	if (r->block_cap) {
		r->block = malloc(r->block_cap);
		if (!r->block)
			return tk_fail(ENOMEM, "out of memory");
	}
	r->own = r->block;
	return 0;
}

TK_API struct tk_dat_cpu_reader *tk_dat_cpu_reader_new(struct tk_dat *d, size_t buffer,
						       size_t cpu_index)
{
	const struct dat_buffer *b;
	const struct tk_dat_cpu_data *cpu;
	struct tk_dat_cpu_reader *r;
	int ret;

	if (buffer >= d->nbuffers || d->buffers[buffer].pub.latency_text ||
	    cpu_index >= d->buffers[buffer].pub.cpu_count)
		return tk_fail_null(EINVAL, "%s: no CPU %zu in buffer %zu", d->name, cpu_index,
				    buffer);
	b = &d->buffers[buffer];
	cpu = &b->cpus[cpu_index];
	r = calloc(1, sizeof(*r));
	if (!r) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto fail;
	}
	r->dat = d;
	r->fmt = b->pub.page_format;
	r->page_size = r->fmt.page_size;
	r->cpu = cpu->cpu;
	r->offset = cpu->offset;
	r->size = cpu->size;
	r->compressed = b->pub.compressed;
	if (r->page_size == 0) {
		ret = tk_fail_at(EBADMSG, d->name, b->where, "buffer '%s' has no page format",
				 b->pub.name);
		goto fail;
	}
	if (!r->compressed) {
		size_t pages = BLOCK_BYTES / r->page_size;

		/*
		 * Salvage: data off the page grid is read as it lies (the pages
		 * are whole all the same); a partial last page is dropped.
		 */
		if (r->offset % r->page_size) {
			ret = tk_fail_at(EBADMSG, d->name, r->offset,
					 "CPU %" PRIu32 " data offset"
					 " 0x%" PRIx64
					 " is not a multiple of the page size %" PRIu32,
					 r->cpu, r->offset, r->page_size);
			ret = salvage(d, ret, r->offset, 0, -1);
			if (ret < 0)
				goto fail;
		}
		if (r->size % r->page_size) {
			ret = tk_fail_at(EBADMSG, d->name, r->offset,
					 "CPU %" PRIu32 " data size %" PRIu64
					 " is not a multiple of the page size %" PRIu32,
					 r->cpu, r->size, r->page_size);
			ret = salvage(d, ret, r->offset + r->size - r->size % r->page_size,
				      r->size % r->page_size, -1);
			if (ret < 0)
				goto fail;
			r->size -= r->size % r->page_size;
		}
		if (pages == 0)
			pages = 1;
		if (pages > BLOCK_MAX_PAGES)
			pages = BLOCK_MAX_PAGES;
		r->block_cap = pages * r->page_size;
		if (r->block_cap > r->size)
			r->block_cap = r->size;
		r->stream_size = r->size;
	} else {
		uint32_t max_u = 0;

		r->codec = tk_codec_new(d->info.compression, 0);
		if (!d->codec || !r->codec) {
			ret = d->codec ? -errno
				       : tk_fail_at(EBADMSG, d->name, r->offset,
						    "compressed CPU data in a file "
						    "without compression");
			goto fail;
		}
		ret = build_chunks(d, r->codec, r->offset, r->size, r->page_size, true, &r->chunks,
				   &r->nchunks, &r->stream_size);
		if (ret < 0)
			goto fail;
		for (size_t i = 0; i < r->nchunks; i++) {
			if (r->chunks[i].usize > max_u)
				max_u = r->chunks[i].usize;
			if (r->chunks[i].csize > r->max_csize)
				r->max_csize = r->chunks[i].csize;
		}
		r->block_cap = max_u;
	}
	ret = reader_buffers(r);
	if (ret < 0)
		goto fail;
	return r;
fail:
	tk_dat_cpu_reader_free(r);
	errno = -ret;
	return NULL;
}

struct tk_dat_cpu_reader *tk_dat_cpu_reader_dup(const struct tk_dat_cpu_reader *src)
{
	struct tk_dat_cpu_reader *r = calloc(1, sizeof(*r));
	int ret = -ENOMEM;

	if (!r)
		goto fail;
	r->dat = src->dat;
	r->fmt = src->fmt;
	r->page_size = src->page_size;
	r->cpu = src->cpu;
	r->offset = src->offset;
	r->size = src->size;
	r->stream_size = src->stream_size;
	r->compressed = src->compressed;
	r->block_cap = src->block_cap;
	r->max_csize = src->max_csize;
	if (r->compressed) {
		r->codec = tk_codec_new(src->dat->info.compression, 0);
		if (!r->codec) {
			ret = -errno;
			goto fail;
		}
	}
	if (src->nchunks) {
		r->chunks = malloc(src->nchunks * sizeof(*r->chunks));
		if (!r->chunks)
			goto fail;
		memcpy(r->chunks, src->chunks, src->nchunks * sizeof(*r->chunks));
		r->nchunks = src->nchunks;
	}
	ret = reader_buffers(r);
	if (ret < 0)
		goto fail;
	return r;
fail:
	if (ret == -ENOMEM)
		tk_fail(ENOMEM, "out of memory");
	tk_dat_cpu_reader_free(r);
	errno = -ret;
	return NULL;
}

TK_API void tk_dat_cpu_reader_free(struct tk_dat_cpu_reader *r)
{
	if (!r)
		return;
	prefetch_detach(r);
	tk_codec_free(r->codec);
	free(r->chunks);
	free(r->own);
	span_release(&r->span);
	free(r->probe);
	free(r);
}

TK_API uint64_t tk_dat_cpu_reader_size(const struct tk_dat_cpu_reader *r)
{
	return r->stream_size;
}

uint64_t tk_dat_cpu_reader_chunks_decoded(const struct tk_dat_cpu_reader *r)
{
	return r->chunks_decoded;
}

size_t tk_dat_cpu_reader_chunk_count(const struct tk_dat_cpu_reader *r)
{
	return r->nchunks;
}

uint64_t tk_dat_cpu_reader_chunk_offset(const struct tk_dat_cpu_reader *r, size_t i)
{
	return i < r->nchunks ? r->chunks[i].stream_offset : r->stream_size;
}

/*
 * convert's copy loop (dat-read-internal.h): the pages that follow the
 * first one are taken while they lie in the same block and their header
 * reads, so tk_dat_cpu_reader_next_page() returns each in place and never
 * skips past the block (which would release it, slot and all, under the
 * run); a page that fails the check ends the run and is met, salvaged or
 * reported, by the next call.
 */
int tk_dat_cpu_reader_next_run(struct tk_dat_cpu_reader *r, const void **pages, uint64_t *len,
			       uint64_t *offset)
{
	struct tk_page_header hdr;
	const void *p;
	int ret = tk_dat_cpu_reader_next_page(r, pages, offset);

	*len = ret > 0 ? r->page_size : 0;
	while (ret > 0 && r->pos < r->stream_size && r->pos >= r->block_start &&
	       r->pos - r->block_start + r->page_size <= r->block_len &&
	       tk_page_read_header(&r->fmt, r->block + (r->pos - r->block_start), r->page_size,
				   &hdr) >= 0) {
		ret = tk_dat_cpu_reader_next_page(r, &p, NULL);
		*len += r->page_size;
	}
	return ret < 0 ? ret : *len != 0;
}

/*
 * Decompress chunk @i (@c) of CPU @cpu into @out (c->usize bytes) through
 * @codec and @w. Salvage mode accepts a chunk that decodes short: the
 * tail is zeroed and its length returned in *@short_len (else c->usize),
 * for the caller to record (add_damage() must run in the reader's order,
 * not the decoder thread's). Safe on any thread with its own @codec and
 * @w. Return: 0 or an error (the message set on this thread).
 */
static int decode_chunk(struct tk_dat *d, struct tk_codec *codec, uint32_t cpu,
			const struct chunk *c, size_t i, struct span *w, uint8_t *out,
			int64_t *short_len)
{
	const uint8_t *src;
	int64_t n;
	int ret;

	*short_len = c->usize;
	ret = span_read(d, w, &src, c->csize, c->file_offset + 8);
	if (ret < 0)
		return ret;
	n = d->strict ? tk_codec_decompress(codec, out, c->usize, src, c->csize)
		      : tk_codec_decompress_upto(codec, out, c->usize, src, c->csize);
	if (n >= 0 && (uint64_t)n < c->usize && !d->strict) {
		/*
		 * Salvage: a chunk that decodes to less than its stated size
		 * keeps its pages; the missing tail reads as empty pages (a
		 * zero page header holds no records).
		 */
		memset(out + n, 0, c->usize - (uint64_t)n);
		*short_len = n;
		n = c->usize;
	}
	if (n < 0) {
		char what[64];

		snprintf(what, sizeof(what), "CPU %" PRIu32 " chunk %zu", cpu, i);
		return prefix_at((int)n, d->name, c->file_offset, what);
	}
	if ((uint64_t)n != c->usize)
		return tk_fail_at(EBADMSG, d->name, c->file_offset,
				  "CPU %" PRIu32 " chunk %zu "
				  "decompressed to %" PRId64 " bytes, expected %" PRIu32,
				  cpu, i, n, c->usize);
	return 0;
}

/* The damage of a chunk that decoded short (decode_chunk()'s *short_len). */
static int short_chunk(struct tk_dat_cpu_reader *r, size_t i, int64_t n)
{
	const struct chunk *c = &r->chunks[i];

	if ((uint64_t)n >= c->usize)
		return 0;
	return add_damage(r->dat, c->file_offset, 0, -1,
			  "CPU %" PRIu32 " chunk %zu decompressed to %" PRId64
			  " bytes, expected %" PRIu32,
			  r->cpu, i, n, c->usize);
}

static int prefetch_load(struct tk_dat_cpu_reader *r, size_t i);

static int load_chunk(struct tk_dat_cpu_reader *r, size_t i)
{
	const struct chunk *c = &r->chunks[i];
	int64_t n;
	int ret;

	if (r->block_len && r->block_chunk == i)
		return 0;
	r->block_len = 0;
	if (r->lane)
		return prefetch_load(r, i);
	r->chunks_decoded++;
	ret = decode_chunk(r->dat, r->codec, r->cpu, c, i, &r->span, r->own, &n);
	if (ret < 0)
		return ret;
	ret = short_chunk(r, i, n);
	if (ret < 0)
		return ret;
	r->block = r->own;
	r->block_start = c->stream_offset;
	r->block_len = c->usize;
	r->block_chunk = i;
	return 0;
}

static size_t find_chunk(const struct tk_dat_cpu_reader *r, uint64_t off)
{
	size_t lo = 0, hi = r->nchunks;

	/* The last chunk starting at or before @off. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->chunks[mid].stream_offset <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Make the page at stream offset @off available; returns it. */
static int get_page(struct tk_dat_cpu_reader *r, uint64_t off, const uint8_t **page)
{
	int ret;

	if (!r->block_len || off < r->block_start || off - r->block_start >= r->block_len) {
		if (r->compressed) {
			ret = load_chunk(r, find_chunk(r, off));
		} else {
			uint64_t len = r->stream_size - off;

			if (len > r->block_cap)
				len = r->block_cap;
			r->block_len = 0;
			ret = read_at(r->dat, r->block, len, r->offset + off);
			if (ret >= 0) {
				r->block_start = off;
				r->block_len = len;
			}
		}
		if (ret < 0)
			return ret;
	}
	*page = r->block + (off - r->block_start);
	return 0;
}

static int check_page(struct tk_dat_cpu_reader *r, const uint8_t *page, uint64_t off,
		      struct tk_page_header *hdr)
{
	int ret = tk_page_read_header(&r->fmt, page, r->page_size, hdr);
	char what[96];

	if (ret >= 0)
		return 0;
	if (r->compressed) {
		const struct chunk *c = &r->chunks[r->block_chunk];

		snprintf(what, sizeof(what), "CPU %" PRIu32 " chunk %zu page %" PRIu64, r->cpu,
			 r->block_chunk, (off - c->stream_offset) / r->page_size);
		return prefix_at(ret, r->dat->name, c->file_offset, what);
	}
	snprintf(what, sizeof(what), "CPU %" PRIu32 " page", r->cpu);
	return prefix_at(ret, r->dat->name, r->offset + off, what);
}

/* Write a page's commit word (bits 30 and 31 from @hdr) in the page's own layout. */
static void store_commit(const struct tk_page_format *f, uint8_t *page, uint32_t size,
			 const struct tk_page_header *hdr)
{
	uint64_t commit =
		size | (hdr->missed_events ? 1u << 31 : 0) | (hdr->missed_stored ? 1u << 30 : 0);

	if (f->long_size == 8)
		tk_store_u64(page + 8, commit, f->big_endian);
	else
		tk_store_u32(page + 8, (uint32_t)commit, f->big_endian);
}

/*
 * Salvage for a page whose header claims more data than the page holds
 * (or a missed count that does not fit): the data is taken to fill the
 * page, without a stored count, so trim_page() keeps the records that do
 * decode. trace-cmd reads such a page too. Return: 0 when the header now
 * reads, else the error.
 */
static int clamp_page(struct tk_dat_cpu_reader *r, uint8_t *page, struct tk_page_header *hdr)
{
	const struct tk_page_format *f = &r->fmt;
	struct tk_page_header h = {0};

	if (tk_page_read_header(f, page, r->page_size, &h) >= 0)
		return 0;
	/* The header read failed after filling what it could; redo it by hand. */
	h.missed_events =
		tk_load_u32(page + (f->big_endian && f->long_size == 8 ? 12 : 8), f->big_endian) >>
		31;
	h.missed_stored = false;
	store_commit(f, page, r->page_size - f->data_offset, &h);
	return tk_page_read_header(f, page, r->page_size, hdr);
}

/*
 * Salvage for a page whose header reads: walk its records, and when one
 * runs past the data, shorten the page (in the reader's own copy) to the
 * records before it, so that every consumer sees a page that decodes. A
 * stored missed-events count moves with the end of the data. @quiet: the
 * page's damage is already recorded. Return: 0 or -ENOMEM.
 */
/* The damage of page @off (stream offset) at @in_page, named as the reader names pages. */
static int page_damage(struct tk_dat_cpu_reader *r, uint64_t off, uint32_t in_page,
		       uint64_t skipped, const char *what)
{
	if (r->compressed) {
		const struct chunk *c = &r->chunks[r->block_chunk];

		return add_damage(r->dat, c->file_offset, skipped, -1,
				  "CPU %" PRIu32 " chunk %zu page %" PRIu64
				  ": %s at page offset 0x%" PRIx32,
				  r->cpu, r->block_chunk, (off - c->stream_offset) / r->page_size,
				  what, in_page);
	}
	return add_damage(r->dat, r->offset + off + in_page, skipped, -1,
			  "CPU %" PRIu32 " page: %s", r->cpu, what);
}

/*
 * Where a record should start, a run of zero words (a zeroed range) is cut
 * out of the page: records are chained by time deltas and a zero word adds
 * none, so the records after the run decode with the times trace-cmd's
 * reader gives them (it passes over zero words one by one). Return: 1 when
 * a run was cut (and @hdr's data size shrank), 0 when there is none at
 * @bad, or -ENOMEM.
 */
static int cut_zero_run(struct tk_dat_cpu_reader *r, uint8_t *page, uint64_t off, uint32_t bad,
			struct tk_page_header *hdr, bool quiet)
{
	const struct tk_page_format *f = &r->fmt;
	uint8_t *data = page + f->data_offset;
	uint32_t x = bad - f->data_offset, z = x;
	static const uint8_t zero[4];
	int ret;

	while (z + 4 <= hdr->data_size && !memcmp(data + z, zero, 4))
		z += 4;
	if (z == x || z + 4 > hdr->data_size)
		return 0;
	memmove(data + x, data + z, hdr->data_size - z);
	hdr->data_size -= z - x;
	hdr->missed_stored = false;
	store_commit(f, page, hdr->data_size, hdr);
	if (quiet)
		return 1;
	ret = page_damage(r, off, bad, z - x, "zeroed bytes where a record should start");
	return ret < 0 ? ret : 1;
}

static int trim_page(struct tk_dat_cpu_reader *r, uint8_t *page, uint64_t off,
		     const struct tk_page_header *orig, bool quiet)
{
	const struct tk_page_format *f = &r->fmt;
	struct tk_page_header cur = *orig, *hdr = &cur;
	struct tk_page_record rec;
	struct tk_page_iter it;
	uint32_t keep, bad;
	uint64_t skipped;
	bool stored;
	int ret;

	/* Most pages are whole: that is checked without decoding them twice. */
	if (tk_page_iter_init(&it, f, page, r->page_size, NULL) < 0 || tk_page_iter_intact(&it))
		return 0;
	/* A page holds at most page_size / 4 zero runs; each pass cuts one. */
	for (;;) {
		if (tk_page_iter_init(&it, f, page, r->page_size, NULL) < 0)
			return 0;
		while ((ret = tk_page_iter_next(&it, &rec)) == 1)
			;
		if (ret == 0)
			return 0;
		if (rec.offset < f->data_offset)
			break;
		ret = cut_zero_run(r, page, off, rec.offset, hdr, quiet);
		if (ret < 0)
			return ret;
		if (ret == 0)
			break;
	}
	keep = rec.offset > f->data_offset ? rec.offset - f->data_offset : 0;
	bad = rec.offset;
	if (keep < hdr->data_size) {
		/*
		 * A record that starts inside the data but ends past it is
		 * decoded whole when it fits in the page, as trace-cmd's reader
		 * does (it checks where a record starts, not where it ends).
		 */
		struct tk_page_header wide = *hdr;

		wide.missed_stored = false;
		store_commit(f, page, r->page_size - f->data_offset, &wide);
		if (tk_page_iter_init(&it, f, page, r->page_size, NULL) >= 0) {
			while (tk_page_iter_next(&it, &rec) == 1) {
				if (rec.offset == bad) {
					keep = (uint32_t)((const uint8_t *)rec.data -
							  (page + f->data_offset)) +
					       rec.size;
					break;
				}
				if (rec.offset > bad)
					break;
			}
		}
	}
	stored = orig->missed_stored && hdr->missed_stored &&
		 (uint64_t)keep + f->long_size <= r->page_size - f->data_offset;
	{
		struct tk_page_header h = *hdr;

		h.missed_stored = stored;
		store_commit(f, page, keep, &h);
	}
	if (stored) {
		if (f->long_size == 8)
			tk_store_u64(page + f->data_offset + keep, orig->missed_count,
				     f->big_endian);
		else
			tk_store_u32(page + f->data_offset + keep, (uint32_t)orig->missed_count,
				     f->big_endian);
	}
	if (quiet)
		return 0;
	skipped = keep < hdr->data_size ? hdr->data_size - keep : 0;
	return page_damage(r, off, bad, skipped, "record runs past the page data");
}

TK_API int tk_dat_cpu_reader_next_page(struct tk_dat_cpu_reader *r, const void **page,
				       uint64_t *offset)
{
	bool salvaging = !r->dat->strict, quiet = false;
	struct tk_page_header hdr;
	const uint8_t *p;
	int ret;

	for (;;) {
		if (r->pos >= r->stream_size)
			return 0;
		ret = get_page(r, r->pos, &p);
		if (ret == -EBADMSG && salvaging && r->compressed) {
			/* Salvage: a chunk that does not decompress loses itself only. */
			size_t i = find_chunk(r, r->pos);
			const struct chunk *c = &r->chunks[i];

			ret = salvage(r->dat, ret, c->file_offset, 8 + (uint64_t)c->csize, -1);
			if (ret < 0)
				return ret;
			r->pos = i + 1 < r->nchunks ? r->chunks[i + 1].stream_offset
						    : r->stream_size;
			continue;
		}
		if (ret < 0)
			return ret;
		ret = check_page(r, p, r->pos, &hdr);
		if (ret < 0 && !salvaging)
			return ret;
		if (ret < 0) {
			/*
			 * Salvage: a page whose header does not fit is read as
			 * a full page, keeping the records that decode; one
			 * region either way.
			 */
			char msg[512];
			bool clamped;

			snprintf(msg, sizeof(msg), "%s", tk_errmsg());
			clamped = clamp_page(r, r->block + (p - r->block), &hdr) >= 0;
			ret = salvage(r->dat, tk_fail(EBADMSG, "%s", msg), r->offset + r->pos,
				      clamped ? 0 : r->page_size, -1);
			if (ret < 0)
				return ret;
			if (!clamped) {
				r->pos += r->page_size;
				continue;
			}
			quiet = true;
		}
		r->page_clamped = quiet;
		ret = salvaging && !r->defer_trim
			      ? trim_page(r, r->block + (p - r->block), r->pos, &hdr, quiet)
			      : 0;
		if (ret < 0)
			return ret;
		break;
	}
	*page = p;
	if (offset)
		*offset = r->pos;
	r->pos += r->page_size;
	return 1;
}

bool tk_dat_cpu_reader_defer_trim(struct tk_dat_cpu_reader *r)
{
	r->defer_trim = !r->dat->strict;
	return r->defer_trim;
}

int tk_dat_cpu_reader_trim_page(struct tk_dat_cpu_reader *r, const void *page)
{
	const uint8_t *p = page;
	struct tk_page_header hdr;
	uint64_t off;

	/* Only the page last handed out, still in the block it came in. */
	if (!r->defer_trim || r->pos < r->page_size || !r->block_len || p < r->block ||
	    (uint64_t)(p - r->block) + r->page_size > r->block_len)
		return tk_fail(EINVAL, "%s: CPU %" PRIu32 ": no page to trim", r->dat->name,
			       r->cpu);
	off = r->block_start + (uint64_t)(p - r->block);
	if (off != r->pos - r->page_size)
		return tk_fail(EINVAL, "%s: CPU %" PRIu32 ": no page to trim", r->dat->name,
			       r->cpu);
	/* The header read (or was clamped to read) when the page was handed out. */
	if (tk_page_read_header(&r->fmt, p, r->page_size, &hdr) < 0)
		return tk_fail(EBADMSG, "%s: CPU %" PRIu32 ": page header changed", r->dat->name,
			       r->cpu);
	return trim_page(r, r->block + (p - r->block), off, &hdr, r->page_clamped);
}

TK_API int tk_dat_cpu_reader_seek(struct tk_dat_cpu_reader *r, uint64_t offset)
{
	if (offset >= r->stream_size)
		return tk_fail(ERANGE,
			       "%s: CPU %" PRIu32 " seek to %" PRIu64 " past the end (%" PRIu64
			       " bytes)",
			       r->dat->name, r->cpu, offset, r->stream_size);
	/* Lazily: the next page call decodes the one chunk that holds it. */
	r->pos = offset - offset % r->page_size;
	return 0;
}

/*
 * A unit (page or chunk) for the time search: 1 with the timestamp of its
 * first non-empty page, 0 when it holds no records, negative on error.
 */
typedef int (*probe_fn)(struct tk_dat_cpu_reader *r, size_t unit, uint64_t *ts);

static int probe_raw_page(struct tk_dat_cpu_reader *r, size_t unit, uint64_t *ts)
{
	uint64_t off = (uint64_t)unit * r->page_size;
	struct tk_page_header hdr;
	int ret;

	ret = read_at(r->dat, r->probe, r->page_size, r->offset + off);
	if (ret < 0)
		return ret;
	ret = tk_page_read_header(&r->fmt, r->probe, r->page_size, &hdr);
	/* Salvage: a damaged page is passed over as empty; reading records it. */
	if (ret < 0 && !r->dat->strict)
		return 0;
	if (ret < 0) {
		char what[64];

		snprintf(what, sizeof(what), "CPU %" PRIu32 " page", r->cpu);
		return prefix_at(ret, r->dat->name, r->offset + off, what);
	}
	*ts = hdr.timestamp;
	return hdr.data_size != 0;
}

/* Page @unit of the chunk held in the block. */
static int probe_block_page(struct tk_dat_cpu_reader *r, size_t unit, uint64_t *ts)
{
	uint64_t off = r->block_start + (uint64_t)unit * r->page_size;
	struct tk_page_header hdr;
	int ret;

	ret = check_page(r, r->block + (uint64_t)unit * r->page_size, off, &hdr);
	if (ret == -EBADMSG && !r->dat->strict)
		return 0;
	if (ret < 0)
		return ret;
	*ts = hdr.timestamp;
	return hdr.data_size != 0;
}

static int probe_chunk(struct tk_dat_cpu_reader *r, size_t unit, uint64_t *ts)
{
	int ret = load_chunk(r, unit);
	size_t pages;

	if (ret == -EBADMSG && !r->dat->strict)
		return 0;
	if (ret < 0)
		return ret;
	pages = r->block_len / r->page_size;
	for (size_t i = 0; i < pages; i++) {
		ret = probe_block_page(r, i, ts);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/*
 * Binary search for the last unit whose first non-empty page is at or
 * before @raw. Runs of empty units are scanned forward from the probe
 * point; each scanned unit is then excluded from the range, so the total
 * work stays linear in the worst case and logarithmic without empties.
 */
static int search_units(struct tk_dat_cpu_reader *r, size_t n, probe_fn probe, uint64_t raw,
			size_t *best, bool *found)
{
	size_t lo = 0, hi = n;

	*best = 0;
	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, j;
		uint64_t ts = 0;
		int ret = 0;

		for (j = mid; j < hi; j++) {
			ret = probe(r, j, &ts);
			if (ret < 0)
				return ret;
			if (ret)
				break;
		}
		if (j == hi) {
			hi = mid;
		} else if (ts <= raw) {
			*best = j;
			*found = true;
			lo = j + 1;
		} else {
			hi = mid;
		}
	}
	return 0;
}

TK_API int tk_dat_cpu_reader_seek_time(struct tk_dat_cpu_reader *r, uint64_t raw_ts)
{
	size_t best, page;
	bool found;
	int ret;

	r->pos = 0;
	if (r->stream_size == 0)
		return 0;
	if (!r->compressed) {
		if (!r->probe) {
			r->probe = malloc(r->page_size);
			if (!r->probe)
				return tk_fail(ENOMEM, "out of memory");
		}
		ret = search_units(r, r->stream_size / r->page_size, probe_raw_page, raw_ts, &best,
				   &found);
		if (ret < 0)
			return ret;
		r->pos = (uint64_t)best * r->page_size;
		return 0;
	}
	ret = search_units(r, r->nchunks, probe_chunk, raw_ts, &best, &found);
	if (ret < 0 || !found)
		return ret;
	ret = load_chunk(r, best);
	if (ret < 0)
		return ret;
	ret = search_units(r, r->chunks[best].usize / r->page_size, probe_block_page, raw_ts, &page,
			   &found);
	if (ret < 0)
		return ret;
	r->pos = r->chunks[best].stream_offset + (uint64_t)page * r->page_size;
	return 0;
}

/* ------------------------------------------------------- decode ahead */

/*
 * Chunks decoded ahead of a reader on another thread (tk_dat_prefetch_*,
 * for report's merge). Each attached reader gets a lane: a few slots, each
 * holding one decoded chunk of that CPU's data. A decoder keeps the
 * chunks after the reader's current one decoded, up to the lane's depth,
 * filling the lane that is least far ahead first. The decoder is a thread
 * of its own (tk_dat_prefetch_start()), or, pumped
 * (tk_dat_prefetch_start_pumped()), whichever thread calls
 * tk_dat_prefetch_pump(), which fills every window and returns: report's
 * print workers between their jobs, so that decoding needs no thread
 * beyond the printers, nor a wake-up of its own. The reader takes a slot
 * under the lock and reads its pages in place. A slot is the reader's
 * (held, refs 1) from the load of its chunk until the load of the next,
 * which is as long as a page the reader handed out stays valid; the
 * decoder only reuses a slot nobody holds that lies outside the window
 * ahead of the reader, so the reader's pages are never written under it.
 * An idle decoder (every window full) is woken once its reader has used
 * half of its window (lane_low()), and then decodes half a window in a
 * row: woken per chunk, its sleeps and wake-ups cost more than they
 * saved (raw_syscalls zstd, decoder and merge on two free CPUs: 1 165
 * context switches and 84 ms CPU a run; now 198 and 69 ms, -j 1 62 ms).
 * The decoder decodes into a buffer of its own (the stage), then copies
 * the chunk into its slot: a slot's cache lines were last read on the
 * reader's CPU, and zstd's small writes into lines another CPU holds, each
 * waiting for it to give the line up, stalled the decoder, where memcpy()'s
 * streamed writes overlap those waits. Decoding marker zstd's chunks on a
 * second thread took 50-80 ms in place against 27-38 ms through the stage
 * and its copy (24-30 ms on one thread), and marker zstd's report at -j 2
 * took 20% less CPU time.
 *
 * A chunk not decoded yet when the reader needs it is decoded by the
 * reader itself, into a free slot (or its own block), as without a
 * prefetch; a chunk the decoder is working on is waited for (the wait
 * frees this core for it). Errors are raised in the reader in its order:
 * the decoder keeps a failed chunk's error and message in the slot, and a
 * short chunk's length, and the reader re-raises the one and records the
 * damage of the other when it reaches the chunk, as it would have decoding
 * it itself, so output and damage lists do not depend on the thread.
 *
 * Memory: per lane, slots x the CPU's largest decoded chunk (trace-cmd
 * writes 10 pages: 40 KiB), slots = PF_BUDGET / lanes / chunk, within
 * [PF_MIN_SLOTS, PF_MAX_SLOTS]; 16 MiB in all unless a file has more than
 * ~130 CPUs (then 3 chunks a CPU); and the lane's span (SPAN_BYTES), for
 * the decoder's reads of that CPU's chunks, so that decoding ahead for
 * several CPUs in turn does not read each span again. Per prefetch, the
 * decoder's stage: the lanes' largest chunk.
 *
 * The decoder helps only when it runs beside the reader, on a CPU of its
 * own. Every PF_PERIOD loads (~2-3 ms of a report), the first counted from
 * the decoder's start, the reader judges the period: it counts how many
 * chunks it found decoded ahead, and how much CPU time the two threads got
 * against the wall time that passed: its own thread's CPU clock, read
 * then, and the decoder's, read then through its clock id
 * (pthread_getcpuclockid(): no clock read per chunk). Both are exact for
 * their thread, which lets a period be this short: the process's clock
 * sees a thread running on another CPU only at that CPU's ticks and
 * switches, and over 3 ms it read under 1.2 CPUs in 7-23% of the periods
 * of a report on two free CPUs. So a decoder that does not help costs a
 * small file 32 loads before it stops. Fewer than
 * one hit in PF_MIN_HITS (the decoder is starved, or slower than the
 * reader by far), or PF_STRIKES periods in a row in which the two threads got
 * less than 1.2 CPUs' worth of time (PF_SHARE_MIN_5THS fifths: the two
 * threads took turns on one CPU, or nearly so: a busy machine, where the
 * scheduler's autogroups give a session a share, not a CPU per thread)
 * while the reader itself got less than 0.9 of a CPU (PF_READER_10THS),
 * and the decoder stops. The second condition keeps a period in which the
 * reader worked alone on something else from counting: the kernel symbol
 * table built at the first lookup, or a print format compiled against it,
 * takes the reader 15-40 ms with the decoder's windows full and the
 * decoder idle, a share of 1.0-1.1 with the reader at a full CPU (net and
 * block zstd: one such period every run). Once stopped, the reader
 * decodes alone, as one thread would. A decoder thread stops for PF_PAUSE
 * loads, then is tried again, and each stop after that lasts twice the one
 * before: on a long file (kmem zstd: ~7 000 loads) a few milliseconds of
 * another process on the second CPU otherwise left the merge decoding
 * alone to the end (3 of 14 runs on a quiet machine took 744-817 ms
 * against 571-664 ms), while on a machine that stays busy the doubling
 * keeps the tries to a handful a run (~100 loads of 7 000 on kmem). A
 * pumped or unstarted prefetch stops for good. The line is what the
 * decoder thread costs: a report with it takes 1.15-1.25 times the CPU
 * time of one thread (the handover, the slots' pages, the chunks' cache
 * lines fetched from the other CPU), so with less than that share it ends
 * later than one thread would. On a free second CPU a report's periods
 * run at 1.3-1.8 CPUs' worth, but for the reader's lone work above. The
 * share test is the decoder thread's only: a pumped prefetch costs no
 * handover of its own (its pumps ride on jobs the printers take anyway),
 * so taking turns on one CPU costs it nothing the printers do not already
 * pay.
 */
#define PF_BUDGET	  (16u << 20)
#define PF_MIN_SLOTS	  3u
#define PF_MAX_SLOTS	  10u
#define PF_PERIOD	  16u
#define PF_MIN_HITS	  8u
#define PF_STRIKES	  2u
#define PF_PAUSE	  512u
#define PF_SHARE_MIN_5THS 6u
#define PF_READER_10THS	  9u

enum { PF_EMPTY, PF_DECODING, PF_READY };

struct pf_slot {
	size_t chunk;
	int state;
	int refs;
	int err;	   /* the decode's error, re-raised by the reader */
	int64_t short_len; /* decode_chunk()'s */
	char *msg;	   /* err's message (malloc'ed; NULL: out of memory) */
	uint8_t *data;
};

struct pf_lane {
	struct tk_dat_cpu_reader *r; /* NULL once detached */
	struct chunk *chunks;	     /* a copy of the reader's directory */
	size_t nchunks;
	uint32_t cpu;
	size_t at; /* the reader's current chunk; SIZE_MAX before the first */
	struct pf_slot *slots;
	size_t nslots;
	struct span span; /* the decoder's reads of this CPU's chunks */
};

struct tk_dat_prefetch {
	struct tk_dat *dat;
	pthread_mutex_t lock;
	pthread_cond_t work; /* to the decoder: a reader moved, or stop */
	pthread_cond_t done; /* to readers: a slot is decoded */
	struct pf_lane **lanes;
	size_t nlanes, lanes_hint;
	pthread_t thread;
	bool started, stop;
	bool paused;  /* the decoder thread waits out pause loads (prefetch_judge()) */
	bool pumped;  /* no thread: tk_dat_prefetch_pump() decodes ahead */
	bool pumping; /* a pump runs now (it owns codec and the lanes' windows) */
	bool idle;    /* the decoder waits for work (every lane's window full) */
	struct tk_codec *codec;
	uint8_t *stage;	  /* the decoder's own output, copied into a slot (prefetch_decode()) */
	size_t stage_cap; /* the lanes' largest chunk */
	struct tk_dat_prefetch_stats st;
	uint64_t period_loads, period_hits;
	uint64_t period_wall, period_cpu, period_dec; /* ns at the period's start; 0: not yet */
	clockid_t dec_clock; /* the decoder thread's CPU clock (pthread_getcpuclockid()) */
	bool dec_clock_ok;
	pthread_t judge; /* the reader thread whose clock period_cpu holds */
	unsigned int strikes;
	uint64_t pause; /* loads of the next pause: PF_PAUSE, doubled after each */
};

struct tk_dat_prefetch *tk_dat_prefetch_new(struct tk_dat *d, size_t lanes)
{
	struct tk_dat_prefetch *pf = calloc(1, sizeof(*pf));

	if (!pf) {
		errno = ENOMEM;
		return NULL;
	}
	pf->dat = d;
	pf->lanes_hint = lanes ? lanes : 1;
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->work, NULL);
	pthread_cond_init(&pf->done, NULL);
	return pf;
}

static void lane_free(struct pf_lane *l)
{
	if (!l)
		return;
	for (size_t i = 0; l->slots && i < l->nslots; i++) {
		free(l->slots[i].data);
		free(l->slots[i].msg);
	}
	free(l->slots);
	free(l->chunks);
	span_release(&l->span);
	free(l);
}

int tk_dat_prefetch_attach(struct tk_dat_prefetch *pf, struct tk_dat_cpu_reader *r)
{
	struct pf_lane *l, **lanes;
	size_t max_u = r->block_cap, slots;

	if (!r->compressed || r->lane || pf->started || pf->pumped || r->dat != pf->dat)
		return tk_fail(EINVAL, "%s: CPU %" PRIu32 " cannot be read ahead", r->dat->name,
			       r->cpu);
	if (!r->nchunks || !max_u)
		return 0;
	slots = PF_BUDGET / pf->lanes_hint / max_u;
	slots = slots < PF_MIN_SLOTS ? PF_MIN_SLOTS : slots > PF_MAX_SLOTS ? PF_MAX_SLOTS : slots;
	lanes = realloc(pf->lanes, (pf->nlanes + 1) * sizeof(*lanes));
	if (!lanes)
		return tk_fail(ENOMEM, "out of memory");
	pf->lanes = lanes;
	l = calloc(1, sizeof(*l));
	if (!l)
		return tk_fail(ENOMEM, "out of memory");
	l->chunks = malloc(r->nchunks * sizeof(*l->chunks));
	l->slots = calloc(slots, sizeof(*l->slots));
	if (!l->chunks || !l->slots)
		goto nomem;
	memcpy(l->chunks, r->chunks, r->nchunks * sizeof(*l->chunks));
	l->nchunks = r->nchunks;
	l->nslots = slots;
	for (size_t i = 0; i < slots; i++) {
		l->slots[i].data = malloc(max_u);
		if (!l->slots[i].data)
			goto nomem;
	}
	if (span_init(&l->span, r->max_csize) < 0)
		goto nomem;
	l->r = r;
	l->cpu = r->cpu;
	if (max_u > pf->stage_cap)
		pf->stage_cap = max_u;
	/* A chunk the reader holds already (in its own block) is where it is. */
	l->at = r->block_len ? r->block_chunk : SIZE_MAX;
	r->pf = pf;
	r->lane = l;
	pf->lanes[pf->nlanes++] = l;
	return 0;
nomem:
	lane_free(l);
	return tk_fail(ENOMEM, "out of memory");
}

/* The slot of lane @l holding (or decoding) chunk @i, or NULL. Under the lock. */
static struct pf_slot *lane_find(const struct pf_lane *l, size_t i)
{
	for (size_t k = 0; k < l->nslots; k++) {
		if (l->slots[k].state != PF_EMPTY && l->slots[k].chunk == i)
			return &l->slots[k];
	}
	return NULL;
}

/* The chunks lane @l reads ahead: [*lo, *hi). */
static void lane_window(const struct pf_lane *l, size_t *lo, size_t *hi)
{
	*lo = l->at == SIZE_MAX ? 0 : l->at + 1;
	/* One slot for the chunk held, one that may be waiting to be given back. */
	*hi = *lo + l->nslots - 2;
	if (*hi > l->nchunks)
		*hi = l->nchunks;
	if (*lo > *hi)
		*lo = *hi;
}

/*
 * Whether lane @l's reader has used up half of its window, so that an idle
 * decoder is worth waking: it then decodes half a window in a row instead
 * of one chunk per wake-up. Under the lock.
 */
static bool lane_low(const struct pf_lane *l)
{
	size_t lo, hi, i;

	lane_window(l, &lo, &hi);
	for (i = lo; i < hi && lane_find(l, i); i++)
		;
	return i - lo <= (hi - lo) / 2;
}

/* A slot of @l that nobody holds or needs soon (outside [lo, hi)), or NULL. Under the lock. */
static struct pf_slot *lane_free_slot(const struct pf_lane *l, size_t lo, size_t hi)
{
	struct pf_slot *best = NULL;

	for (size_t k = 0; k < l->nslots; k++) {
		struct pf_slot *s = &l->slots[k];

		if (s->state == PF_EMPTY)
			return s;
		if (s->state != PF_READY || s->refs || (s->chunk >= lo && s->chunk < hi))
			continue;
		if (!best || s->chunk < best->chunk)
			best = s;
	}
	return best;
}

/* Store decode_chunk()'s outcome in @s and mark it ready. Under the lock. */
static void slot_done(struct pf_slot *s, int ret, int64_t short_len, const char *msg)
{
	free(s->msg);
	s->msg = ret < 0 ? strdup(msg) : NULL;
	s->err = ret;
	s->short_len = short_len;
	s->state = PF_READY;
}

/*
 * The next chunk to decode ahead: in the lane least far ahead of its
 * reader, into a slot free for it, marked PF_DECODING with its directory
 * entry in *@c and its lane in *@lane. Under the lock. Return: the slot,
 * or NULL when every window is full.
 */
static struct pf_slot *prefetch_pick(struct tk_dat_prefetch *pf, struct chunk *c, size_t *chunk,
				     struct pf_lane **lane)
{
	struct pf_lane *pick = NULL;
	struct pf_slot *slot = NULL;
	size_t pick_i = 0, pick_ahead = SIZE_MAX;

	for (size_t k = 0; k < pf->nlanes; k++) {
		struct pf_lane *l = pf->lanes[k];
		struct pf_slot *free_slot;
		size_t lo, hi, i;

		if (!l->r)
			continue;
		lane_window(l, &lo, &hi);
		for (i = lo; i < hi && lane_find(l, i); i++)
			;
		if (i == hi || i - lo >= pick_ahead)
			continue;
		free_slot = lane_free_slot(l, lo, hi);
		if (!free_slot)
			continue;
		pick = l;
		slot = free_slot;
		pick_i = i;
		pick_ahead = i - lo;
	}
	if (!pick)
		return NULL;
	slot->chunk = pick_i;
	slot->state = PF_DECODING;
	*c = pick->chunks[pick_i];
	*chunk = pick_i;
	*lane = pick;
	return slot;
}

/* A clock's time in ns (0 if it cannot be read). */
static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Decode the chunk prefetch_pick() chose into @slot, with the lock dropped
 * meanwhile. A lane outlives its reader's detach, so its window stays.
 */
static void prefetch_decode(struct tk_dat_prefetch *pf, struct pf_slot *slot, const struct chunk *c,
			    size_t chunk, struct pf_lane *l)
{
	int64_t short_len;
	int ret;

	pthread_mutex_unlock(&pf->lock);
	ret = decode_chunk(pf->dat, pf->codec, l->cpu, c, chunk, &l->span, pf->stage, &short_len);
	if (ret >= 0)
		memcpy(slot->data, pf->stage, c->usize);
	pthread_mutex_lock(&pf->lock);
	slot_done(slot, ret, short_len, ret < 0 ? tk_errmsg() : NULL);
	pf->st.decoded++;
	pthread_cond_broadcast(&pf->done);
}

/* Decode the next chunk a window lacks, if any (the decoder's or a pump's step). Under the lock. */
static bool prefetch_one(struct tk_dat_prefetch *pf)
{
	struct pf_slot *slot;
	struct pf_lane *l;
	struct chunk c;
	size_t chunk;

	slot = prefetch_pick(pf, &c, &chunk, &l);
	if (!slot)
		return false;
	prefetch_decode(pf, slot, &c, chunk, l);
	return true;
}

static void *prefetch_main(void *arg)
{
	struct tk_dat_prefetch *pf = arg;

	pthread_mutex_lock(&pf->lock);
	while (!pf->stop) {
		if (pf->paused || !prefetch_one(pf)) {
			pf->idle = true;
			pthread_cond_wait(&pf->work, &pf->lock);
			pf->idle = false;
		}
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

int tk_dat_prefetch_start(struct tk_dat_prefetch *pf)
{
	int ret;

	if (pf->started || pf->pumped || !pf->nlanes)
		return 0;
	pf->codec = tk_codec_new(pf->dat->info.compression, 0);
	if (!pf->codec)
		return -errno;
	pf->stage = malloc(pf->stage_cap);
	if (!pf->stage)
		return tk_fail(ENOMEM, "out of memory");
	/* The first period is judged too: it starts here, on the reader's thread. */
	pf->judge = pthread_self();
	pf->period_wall = clock_ns(CLOCK_MONOTONIC);
	pf->period_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	ret = pthread_create(&pf->thread, NULL, prefetch_main, pf);
	if (ret)
		return tk_fail(ret, "cannot start the decoder thread");
	/* Read by the judge at a period's end: no clock read per chunk. */
	pf->dec_clock_ok = !pthread_getcpuclockid(pf->thread, &pf->dec_clock);
	pf->started = true;
	return 0;
}

int tk_dat_prefetch_start_pumped(struct tk_dat_prefetch *pf)
{
	struct tk_codec *codec;
	uint8_t *stage;

	if (pf->started || pf->pumped || !pf->nlanes)
		return 0;
	codec = tk_codec_new(pf->dat->info.compression, 0);
	if (!codec)
		return -errno;
	stage = malloc(pf->stage_cap);
	if (!stage) {
		tk_codec_free(codec);
		return tk_fail(ENOMEM, "out of memory");
	}
	/* Under the lock: the pumping threads may be running already. */
	pthread_mutex_lock(&pf->lock);
	pf->codec = codec;
	pf->stage = stage;
	pf->pumped = true;
	pthread_mutex_unlock(&pf->lock);
	return 0;
}

size_t tk_dat_prefetch_pump(struct tk_dat_prefetch *pf)
{
	size_t n = 0;

	pthread_mutex_lock(&pf->lock);
	if (pf->pumped && !pf->pumping) {
		pf->pumping = true;
		while (!pf->stop && prefetch_one(pf))
			n++;
		pf->pumping = false;
	}
	pthread_mutex_unlock(&pf->lock);
	return n;
}

/* Give back the slot @r holds. Under the lock. */
static void slot_put(struct tk_dat_cpu_reader *r)
{
	if (r->held) {
		r->held->refs--;
		r->held = NULL;
	}
}

/* The stats window of tk_dat_prefetch's notes: stop a decoder that does not help. */
static void prefetch_judge(struct tk_dat_prefetch *pf, bool hit)
{
	uint64_t wall, cpu, dec;
	bool one_cpu;

	pf->period_loads++;
	pf->period_hits += hit;
	if (pf->stop || pf->period_loads < (pf->paused ? pf->pause : PF_PERIOD))
		return;
	wall = clock_ns(CLOCK_MONOTONIC);
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	dec = pf->dec_clock_ok ? clock_ns(pf->dec_clock) : 0;
	one_cpu = false;
	if (!pf->paused && pf->started && pf->dec_clock_ok && pf->period_wall &&
	    wall > pf->period_wall && pthread_equal(pf->judge, pthread_self())) {
		uint64_t dw = wall - pf->period_wall, dm = cpu - pf->period_cpu,
			 dd = dec - pf->period_dec;
		one_cpu = (dm + dd) * 5 < dw * PF_SHARE_MIN_5THS && dm * 10 < dw * PF_READER_10THS;
	}
	pf->judge = pthread_self();
	pf->period_dec = dec;
	pf->strikes = one_cpu ? pf->strikes + 1 : 0;
	if (pf->paused) {
		/* Tried again: the period from here on judges it afresh. */
		pf->paused = false;
		pthread_cond_signal(&pf->work);
	} else if (pf->period_hits < PF_PERIOD / PF_MIN_HITS || pf->strikes >= PF_STRIKES) {
		pf->st.stopped = true;
		pf->strikes = 0;
		if (pf->started) {
			pf->paused = true;
			pf->pause = pf->pause ? pf->pause * 2 : PF_PAUSE;
		} else {
			pf->stop = true;
		}
		pthread_cond_signal(&pf->work);
	}
	pf->period_wall = wall;
	pf->period_cpu = cpu;
	pf->period_loads = 0;
	pf->period_hits = 0;
}

/* load_chunk() for a reader with a lane: take chunk @i from a slot, or decode it here. */
static int prefetch_load(struct tk_dat_cpu_reader *r, size_t i)
{
	struct tk_dat_prefetch *pf = r->pf;
	struct pf_lane *l = r->lane;
	const struct chunk *c = &r->chunks[i];
	struct pf_slot *s;
	size_t lo, hi;
	bool mine = false;
	int64_t short_len;
	int ret;

	pthread_mutex_lock(&pf->lock);
	slot_put(r);
	l->at = i;
	pf->st.loads++;
	s = lane_find(l, i);
	/* Held before any wait: a slot nobody holds may be taken for another chunk. */
	if (s)
		s->refs++;
	if (s && s->state == PF_DECODING) {
		pf->st.waits++;
		while (s->state == PF_DECODING)
			pthread_cond_wait(&pf->done, &pf->lock);
	}
	prefetch_judge(pf, s != NULL);
	if (s) {
		pf->st.hits++;
	} else {
		lane_window(l, &lo, &hi);
		s = lane_free_slot(l, lo, hi);
		if (s) {
			s->chunk = i;
			s->state = PF_DECODING;
			s->refs++;
			mine = true;
		}
	}
	r->held = s;
	if (pf->started && !pf->stop && !pf->paused && pf->idle && lane_low(l))
		pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->lock);

	if (!s || mine) {
		r->chunks_decoded++;
		ret = decode_chunk(r->dat, r->codec, r->cpu, c, i, &r->span, s ? s->data : r->own,
				   &short_len);
		if (s) {
			pthread_mutex_lock(&pf->lock);
			slot_done(s, ret, short_len, ret < 0 ? tk_errmsg() : NULL);
			pthread_cond_broadcast(&pf->done);
			pthread_mutex_unlock(&pf->lock);
		}
	} else {
		/* The decoder's outcome, raised here as decoding here would have. */
		ret = s->err;
		short_len = s->short_len;
		if (ret < 0)
			ret = s->msg ? tk_fail(-ret, "%s", s->msg) : tk_fail(-ret, "out of memory");
	}
	if (ret < 0)
		return ret;
	ret = short_chunk(r, i, short_len);
	if (ret < 0)
		return ret;
	r->block = s ? s->data : r->own;
	r->block_start = c->stream_offset;
	r->block_len = c->usize;
	r->block_chunk = i;
	return 0;
}

static void prefetch_detach(struct tk_dat_cpu_reader *r)
{
	struct tk_dat_prefetch *pf = r->pf;

	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	slot_put(r);
	r->lane->r = NULL;
	pthread_mutex_unlock(&pf->lock);
	r->lane = NULL;
	r->pf = NULL;
	/* Pages of the own block stay valid; a slot's go with the prefetch. */
	if (r->block != r->own) {
		r->block = r->own;
		r->block_len = 0;
	}
}

/*
 * convert's leapfrog (dat-read-internal.h): the lane's window moves with
 * the seek at once, not at the next load, so the decoder works on the
 * chunks from @offset on while the caller reads elsewhere. The slot held
 * is given back, and the block with it.
 */
int tk_dat_cpu_reader_seek_ahead(struct tk_dat_cpu_reader *r, uint64_t offset)
{
	struct tk_dat_prefetch *pf = r->pf;
	int ret = tk_dat_cpu_reader_seek(r, offset);
	size_t i;

	if (ret < 0 || !pf)
		return ret;
	i = find_chunk(r, r->pos);
	pthread_mutex_lock(&pf->lock);
	slot_put(r);
	r->lane->at = i ? i - 1 : SIZE_MAX;
	if (pf->started && !pf->stop && !pf->paused)
		pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->lock);
	if (r->block != r->own) {
		r->block = r->own;
		r->block_len = 0;
	}
	return 0;
}

void tk_dat_prefetch_get_stats(struct tk_dat_prefetch *pf, struct tk_dat_prefetch_stats *out)
{
	pthread_mutex_lock(&pf->lock);
	*out = pf->st;
	pthread_mutex_unlock(&pf->lock);
}

void tk_dat_prefetch_free(struct tk_dat_prefetch *pf)
{
	if (!pf)
		return;
	if (pf->started) {
		pthread_mutex_lock(&pf->lock);
		pf->stop = true;
		pthread_cond_signal(&pf->work);
		pthread_mutex_unlock(&pf->lock);
		pthread_join(pf->thread, NULL);
	}
	for (size_t i = 0; i < pf->nlanes; i++) {
		/* A reader still attached keeps reading alone from its own block. */
		if (pf->lanes[i]->r)
			prefetch_detach(pf->lanes[i]->r);
		lane_free(pf->lanes[i]);
	}
	free(pf->lanes);
	free(pf->stage);
	tk_codec_free(pf->codec);
	pthread_cond_destroy(&pf->work);
	pthread_cond_destroy(&pf->done);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}
