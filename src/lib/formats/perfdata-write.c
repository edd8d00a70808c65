// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-write: write a file-mode perf.data that perf 6.1 reads, and
 * append a recording to one.
 *
 * Byte layout written (shared/specs/perfdata.md §1, §16a; host order):
 *
 *   0    header (104 bytes): magic, 104, attr_size 144, attrs, data,
 *        event_types {0,0}, adds_features[4]
 *   104  id arrays of every event, back to back (u64 each)
 *        perf_file_attr per event: attr (128 bytes) + {offset, size} of its ids
 *        payloads of the "early" features: those set before the data began
 *        (host, CMDLINE, TRACING_DATA, EVENT_DESC, clock), in bit order
 *   data records, as the caller gives them, and padding records (below)
 *   data.offset + data.size: feature table, 16 bytes per set bit in bit order
 *        then the payloads of the features set later (BUILD_ID, SAMPLE_TIME)
 *   (append only) the merged id arrays and attrs, pointed at by the header
 *
 * Staying readable when killed. perf 6.1 finds the feature table at
 * data.offset + data.size, reads no record at all when data.size is 0
 * (measured: no repair path), and refuses a file whose tracepoint attr has
 * no TRACING_DATA ("incompatible file format"). So a killed tracepoint
 * recording is readable only if, at every instant, data.size covers whole
 * records and a valid table with TRACING_DATA follows them. Each flush is
 * therefore a commit:
 *   - early payloads never move, so their table T (16 bytes per early
 *     feature plus one leading entry, below) is the same at every flush;
 *   - the committed state is [records][T] with the header's data.size
 *     ending at T and its bitmap = the early bits | bit 0;
 *   - a flush writes the new records and a fresh T *after* the committed T
 *     (two pwrite()s), then the 8-byte data.size: the old T is never
 *     overwritten before the header stops pointing at it, so a SIGKILL at
 *     any moment leaves either the old or the new state, both whole;
 *   - once data.size moves past it, the old T lies inside the data, where
 *     it must parse as a record: T's first 16-byte entry is the header of a
 *     PERF_RECORD_HEADER_EVENT_TYPE (65) record of T's length, which perf
 *     6.1 skips ("deprecated") and tracekit's reader skips. In the table
 *     that entry belongs to bit 0 (HEADER_RESERVED), which perf has no
 *     reader for and skips (its "offset" does not even seek). Verified with
 *     perf 6.1: script, report, report --header-only -I and buildid-list
 *     read such files whole, killed or finished.
 * The cost is 16·(early features + 1) bytes of padding per flush (192 bytes
 * for the recorder's 11 early features), and one more at finish. Without early features
 * (the tests' writers, append) there is no table before finish and the
 * bitmap stays 0 until then, as before.
 *
 * Other invariants:
 *   - The header is written when the data starts; its data size (offset 48)
 *     is rewritten after every block of records reaches the file: it
 *     always covers whole records only.
 *   - Feature bits are set in one header write after their table and
 *     payloads are on disk (perf itself sets the bits early, which is why a
 *     killed perf record cannot be read: §14). finish() writes the final
 *     table after the committed T, so that T stays valid until the final
 *     header; the final bitmap has no bit 0.
 *   - Records are buffered up to BLOCK bytes; nothing else is kept per
 *     record (SAMPLE_TIME is two numbers), so memory does not grow with
 *     the data. The caller decides how often to flush (the recorder: about
 *     every 100 ms).
 *   - After an I/O error the writer refuses further work (-EIO).
 *
 * The writer reads nothing from the running machine: host facts come in
 * as a struct tk_host (gathered by capture/host.c, or taken from the file
 * a conversion reads), TRACING_DATA as a blob (the tracedata codec), so a
 * converted file never carries this machine's facts.
 *
 * Append keeps the old data where it is: only what follows it (the feature
 * table and payloads) is rewritten, plus ids and attrs, which move behind
 * the features because the old id arrays in front have no room for new
 * ids. perf 6.1 reads attrs and ids wherever the header points.
 *
 * Pipe mode. Onto anything but a regular file (a FIFO, a character device,
 * standard output as "-") nothing can be filled in later, so the writer
 * streams perf's pipe format front to back, as `perf record -o -` does:
 *
 *   0   u64 magic | u64 16
 *   16  per event HEADER_ATTR {header 64; attr (128 bytes); u64 ids[]}
 *       per feature set at begin HEADER_FEATURE {header 80; u64 id;
 *       payload}, then the end mark {header 80; u64 32}
 *       (TRACING_DATA) HEADER_TRACING_DATA {header 66, size 16; u32 size
 *       rounded up to 8; u32 0}, the blob and its zero padding after it
 *   the records as the caller gives them; at finish one HEADER_BUILD_ID
 *       {header 67; s32 pid; u8 id[20]; u8 size; 3 pad; name} per build id
 *
 * The order is perf 6.1's (measured on `perf record -o -`): attrs first,
 * so that EVENT_DESC's names find their events in perf (which names
 * events by id) and in tracekit's reader (by position) alike. Features set after
 * begin (SAMPLE_TIME, known only at the end) are not sent: perf's pipe
 * files lack them too. TRACING_DATA and BUILD_ID travel as their own
 * records, never as HEADER_FEATURE, because perf 6.1 reads those two
 * features from a file descriptor that pipe mode does not have.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/host.h>

#include "bytebuf.h"
#include "bytes.h"
#include "error.h"
#include "perfdata-internal.h"
#include "tracedata-internal.h"

#define BLOCK (1u << 20)
#define NFEAT TK_PERF_FEAT_LAST

struct w_evsel {
	struct tk_perf_attr attr;
	char *name;
	uint64_t *ids;
	size_t nr_ids;
};

struct w_buildid {
	uint16_t misc;
	int32_t pid;
	uint8_t id[20];
	uint8_t size;
	char *name;
};

struct tk_perfdata_writer {
	char *name;
	int fd;
	bool own_fd;
	bool append;
	bool begun, finished, failed, flushed;
	struct w_evsel *evsels;
	size_t nr_evsels, nr_old_evsels;
	uint8_t *feat[NFEAT];
	uint64_t feat_size[NFEAT];
	uint64_t feat_at[NFEAT]; /* early payload's offset; 0: written at finish */
	bool feat_set[NFEAT];
	bool evdesc_done; /* EVENT_DESC built at begin */
	uint8_t *tab;	  /* the early features' table T, or NULL */
	size_t tab_len;
	struct w_buildid *bids;
	size_t nr_bids;
	uint64_t data_offset, data_size;
	uint8_t *buf;
	size_t len;
	bool have_time;
	uint64_t t_first, t_last;
	bool pipe; /* not a regular file: perf's pipe format, written front to back */
};

static int wfail(struct tk_perfdata_writer *w, int err, const char *what)
{
	w->failed = true;
	return tk_fail(err, "%s: %s: %s", w->name, what, strerror(err));
}

static int pwrite_full(struct tk_perfdata_writer *w, const void *p, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pwrite(w->fd, (const char *)p + done, n - done, (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return wfail(w, errno, "write");
		}
		done += (size_t)r;
	}
	return 0;
}

/* Pipe mode: append @n bytes to the stream. */
static int write_stream(struct tk_perfdata_writer *w, const void *p, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = write(w->fd, (const char *)p + done, n - done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return wfail(w, errno, "write");
		}
		done += (size_t)r;
	}
	return 0;
}

static struct tk_perfdata_writer *writer_new(int fd, const char *name, bool own_fd)
{
	struct tk_perfdata_writer *w = calloc(1, sizeof(*w));
	struct stat st;

	if (w) {
		w->name = strdup(name ? name : "perf.data");
		w->buf = malloc(BLOCK);
	}
	if (!w || !w->name || !w->buf) {
		if (w) {
			free(w->name);
			free(w->buf);
			free(w);
		}
		if (own_fd)
			close(fd);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	w->fd = fd;
	w->own_fd = own_fd;
	/* "-" is standard output in pipe mode whatever it is, as perf's -o -. */
	w->pipe = (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) || (name && !strcmp(name, "-"));
	return w;
}

/* A FIFO, a character device or "-" (standard output): opened for pipe mode. */
static struct tk_perfdata_writer *open_stream(const char *path)
{
	int fd;

	if (strcmp(path, "-") == 0) {
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	} else {
		/* Write only: a reader that goes away must end the writer (EPIPE). */
		fd = open(path, O_WRONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		int e = errno;

		tk_fail(e, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	return writer_new(fd, path, true);
}

struct tk_perfdata_writer *tk_perfdata_writer_open(const char *path)
{
	struct stat st;
	int fd;

	/* Never truncated or replaced: they are written through, in pipe mode. */
	if (strcmp(path, "-") == 0 ||
	    (stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))))
		return open_stream(path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		int e = errno;

		tk_fail(e, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	if (lseek(fd, 0, SEEK_CUR) < 0) {
		close(fd);
		errno = -tk_fail(ESPIPE,
				 "%s: this perf.data writer needs a regular file (it fills in the "
				 "header last); write to a file and copy it",
				 path);
		return NULL;
	}
	return writer_new(fd, path, true);
}

struct tk_perfdata_writer *tk_perfdata_writer_open_fd(int fd, const char *name)
{
	/* Anything but a regular file gets pipe mode (writer_new()). */
	return writer_new(fd, name, false);
}

void tk_perfdata_writer_close(struct tk_perfdata_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr_evsels; i++) {
		free(w->evsels[i].name);
		free(w->evsels[i].ids);
	}
	free(w->evsels);
	for (int i = 0; i < NFEAT; i++)
		free(w->feat[i]);
	for (size_t i = 0; i < w->nr_bids; i++)
		free(w->bids[i].name);
	free(w->bids);
	free(w->buf);
	free(w->tab);
	if (w->own_fd)
		close(w->fd);
	free(w->name);
	free(w);
}

/* ------------------------------------------------------------- events */

static bool attr_equal(const struct tk_perf_attr *a, const struct tk_perf_attr *b)
{
	uint8_t x[TK_PERF_ATTR_SIZE], y[TK_PERF_ATTR_SIZE];

	tk_perfdata_attr_encode(a, x);
	tk_perfdata_attr_encode(b, y);
	return memcmp(x, y, sizeof(x)) == 0;
}

/* perf_event_attr flag bits that recording options set (perf_event.h). */
#define AF_INHERIT	  (1ull << 1)
#define AF_EXCLUDE_USER	  (1ull << 4)
#define AF_EXCLUDE_KERNEL (1ull << 5)
#define AF_FREQ		  (1ull << 10)
#define AF_ENABLE_ON_EXEC (1ull << 12)

struct text {
	char *p;
	size_t cap, len;
};

static void text_vadd(struct text *t, const char *fmt, va_list ap)
{
	int n;

	if (t->len >= t->cap)
		return;
	n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	if (n > 0)
		t->len += (size_t)n;
}

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	text_vadd(t, fmt, ap);
	va_end(ap);
}

/* The next clause of a message, after "; " unless it is the first. */
static void clause(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void clause(struct text *t, const char *fmt, ...)
{
	va_list ap;

	if (t->len)
		text_add(t, "; ");
	va_start(ap, fmt);
	text_vadd(t, fmt, ap);
	va_end(ap);
}

static void rate_words(const struct tk_perf_attr *a, char *out, size_t cap)
{
	if (a->flags & AF_FREQ)
		snprintf(out, cap, "at %" PRIu64 " Hz (--freq)", a->sample_period);
	else if (a->sample_period == 1)
		snprintf(out, cap, "every event");
	else
		snprintf(out, cap, "every %" PRIu64 " events (-c)", a->sample_period);
}

static const char *mode_words(const struct tk_perf_attr *a)
{
	bool u = a->flags & AF_EXCLUDE_USER, k = a->flags & AF_EXCLUDE_KERNEL;

	if (u && k)
		return "neither user nor kernel mode";
	if (k)
		return "user mode only (:u)";
	if (u)
		return "kernel mode only (:k)";
	return "user and kernel mode";
}

static void clock_words(const struct tk_perf_attr *a, char *out, size_t cap)
{
	static const char *const names[12] = {
		[0] = "realtime", [1] = "mono", [4] = "raw", [7] = "boot", [11] = "tai",
	};

	if (!(a->flags & TK_PERF_ATTR_FLAG_USE_CLOCKID))
		snprintf(out, cap, "the kernel's perf clock");
	else if (a->clockid >= 0 && a->clockid < 12 && names[a->clockid])
		snprintf(out, cap, "clock %s (-k %s)", names[a->clockid], names[a->clockid]);
	else
		snprintf(out, cap, "clockid %d (-k %d)", a->clockid, a->clockid);
}

/* perf's names of sample_type bits, e.g. "IP, CALLCHAIN (-g)". */
static void sample_words(uint64_t bits, char *out, size_t cap)
{
	static const char *const names[] = {
		"IP",
		"TID",
		"TIME",
		"ADDR",
		"READ",
		"CALLCHAIN (-g)",
		"ID",
		"CPU",
		"PERIOD",
		"STREAM_ID",
		"RAW",
		"BRANCH_STACK",
		"REGS_USER",
		"STACK_USER",
		"WEIGHT",
		"DATA_SRC",
		"IDENTIFIER",
		"TRANSACTION",
		"REGS_INTR",
		"PHYS_ADDR",
		"AUX",
		"CGROUP",
		"DATA_PAGE_SIZE",
		"CODE_PAGE_SIZE",
		"WEIGHT_STRUCT",
	};
	struct text t = {out, cap, 0};

	out[0] = 0;
	for (unsigned i = 0; i < 64; i++) {
		if (!(bits & (1ull << i)))
			continue;
		if (t.len)
			text_add(&t, ", ");
		if (i < sizeof(names) / sizeof(names[0]))
			text_add(&t, "%s", names[i]);
		else
			text_add(&t, "bit %u", i);
	}
}

/*
 * Why @now cannot join @was, the file's event of the same type and config,
 * in the words of the recording options that make the difference (perf
 * record's, which tracekit record --perf shares), into @out.
 */
static void describe_mismatch(const struct tk_perf_attr *was, const struct tk_perf_attr *now,
			      char *out, size_t cap)
{
	const uint64_t handled = AF_INHERIT | AF_ENABLE_ON_EXEC | AF_FREQ | AF_EXCLUDE_USER |
				 AF_EXCLUDE_KERNEL | TK_PERF_ATTR_FLAG_USE_CLOCKID;
	struct text t = {out, cap, 0};
	struct tk_perf_attr x = *was, y = *now;
	uint64_t diff = was->flags ^ now->flags;
	char a[128], b[128];

	out[0] = 0;
	if (diff & (AF_INHERIT | AF_ENABLE_ON_EXEC)) {
		if (was->flags & (AF_INHERIT | AF_ENABLE_ON_EXEC))
			clause(&t, "the file was recorded following a command, this recording is "
				   "system-wide (-a)");
		else
			clause(&t, "the file was recorded system-wide (-a), this recording follows "
				   "a command");
	}
	if ((diff & AF_FREQ) || was->sample_period != now->sample_period) {
		rate_words(was, a, sizeof(a));
		rate_words(now, b, sizeof(b));
		clause(&t, "the file sampled %s, this recording %s", a, b);
	}
	if (diff & (AF_EXCLUDE_USER | AF_EXCLUDE_KERNEL))
		clause(&t, "the file counted %s, this recording %s", mode_words(was),
		       mode_words(now));
	if ((diff & TK_PERF_ATTR_FLAG_USE_CLOCKID) ||
	    ((was->flags & TK_PERF_ATTR_FLAG_USE_CLOCKID) && was->clockid != now->clockid)) {
		clock_words(was, a, sizeof(a));
		clock_words(now, b, sizeof(b));
		clause(&t, "the file's times are on %s, this recording's on %s", a, b);
	}
	if (was->sample_type & ~now->sample_type) {
		sample_words(was->sample_type & ~now->sample_type, a, sizeof(a));
		clause(&t, "the file's samples carry %s, this recording's do not", a);
	}
	if (now->sample_type & ~was->sample_type) {
		sample_words(now->sample_type & ~was->sample_type, a, sizeof(a));
		clause(&t, "this recording's samples carry %s, the file's do not", a);
	}
	/* Whatever no option above explains, in perf_event_attr's own terms. */
	x.flags &= ~handled;
	y.flags &= ~handled;
	x.sample_period = y.sample_period;
	x.sample_type = y.sample_type;
	x.clockid = y.clockid;
	if (x.flags != y.flags)
		clause(&t, "attr flags 0x%" PRIx64 " in the file, 0x%" PRIx64 " now", x.flags,
		       y.flags);
	if (x.read_format != y.read_format)
		clause(&t, "read_format 0x%" PRIx64 " in the file, 0x%" PRIx64 " now",
		       x.read_format, y.read_format);
	x.flags = y.flags;
	x.read_format = y.read_format;
	if (!attr_equal(&x, &y) || !t.len)
		clause(&t, "other perf_event_attr fields differ");
}

static int push_evsel(struct tk_perfdata_writer *w, const struct tk_perf_attr *attr,
		      const char *name)
{
	struct w_evsel *n = realloc(w->evsels, (w->nr_evsels + 1) * sizeof(*n));
	char *nm = name ? strdup(name) : NULL;

	if (n)
		w->evsels = n;
	if (!n || (name && !nm)) {
		free(nm);
		return tk_fail(ENOMEM, "out of memory");
	}
	memset(&n[w->nr_evsels], 0, sizeof(*n));
	n[w->nr_evsels].attr = *attr;
	n[w->nr_evsels].attr.size = TK_PERF_ATTR_SIZE;
	n[w->nr_evsels].name = nm;
	return (int)w->nr_evsels++;
}

int tk_perfdata_writer_add_attr(struct tk_perfdata_writer *w, const struct tk_perf_attr *attr,
				const char *name)
{
	if (w->begun || w->failed)
		return tk_fail(EINVAL, "%s: events must be added before the data", w->name);
	if (w->nr_evsels > 0 &&
	    ((attr->flags ^ w->evsels[0].attr.flags) & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL))
		return tk_fail(EINVAL, "%s: event %zu: sample_id_all differs from event 0", w->name,
			       w->nr_evsels);
	if (w->append) {
		for (size_t i = 0; i < w->nr_evsels; i++) {
			const struct tk_perf_attr *o = &w->evsels[i].attr;

			char why[1024], ev[160];

			if (attr_equal(attr, o))
				return (int)i;
			if (o->type != attr->type || o->config != attr->config)
				continue;
			if (w->evsels[i].name || name)
				snprintf(ev, sizeof(ev), "%s",
					 w->evsels[i].name ? w->evsels[i].name : name);
			else
				snprintf(ev, sizeof(ev), "type %u config 0x%" PRIx64, attr->type,
					 attr->config);
			describe_mismatch(o, attr, why, sizeof(why));
			return tk_fail(EINVAL,
				       "%s: cannot append: event %s was recorded with other "
				       "settings: %s; the file is left as it was",
				       w->name, ev, why);
		}
		if (!(attr->sample_type & TK_PERF_SAMPLE_IDENTIFIER))
			return tk_fail(EINVAL,
				       "%s: cannot append: new event type %u config 0x%" PRIx64
				       " lacks IDENTIFIER in its sample_type",
				       w->name, attr->type, attr->config);
		for (size_t i = 0; i < w->nr_evsels; i++)
			if (!(w->evsels[i].attr.sample_type & TK_PERF_SAMPLE_IDENTIFIER))
				return tk_fail(EINVAL,
					       "%s: cannot append a new event: event %zu of "
					       "the file lacks IDENTIFIER",
					       w->name, i);
	}
	return push_evsel(w, attr, name);
}

int tk_perfdata_writer_add_ids(struct tk_perfdata_writer *w, size_t index, const uint64_t *ids,
			       size_t nr)
{
	struct w_evsel *e;
	uint64_t *n;

	if (w->begun || w->failed || index >= w->nr_evsels)
		return tk_fail(EINVAL, "%s: ids for event %zu cannot be added now", w->name, index);
	for (size_t k = 0; k < nr; k++)
		for (size_t i = 0; i < w->nr_evsels; i++)
			for (size_t j = 0; j < w->evsels[i].nr_ids; j++)
				if (w->evsels[i].ids[j] == ids[k])
					return tk_fail(EINVAL,
						       "%s: id %" PRIu64 " is already used "
						       "by event %zu",
						       w->name, ids[k], i);
	e = &w->evsels[index];
	if (nr > SIZE_MAX / 8 - e->nr_ids)
		return tk_fail(EINVAL, "too many ids");
	n = realloc(e->ids, (e->nr_ids + nr) * 8 + 1);
	if (!n)
		return tk_fail(ENOMEM, "out of memory");
	e->ids = n;
	memcpy(e->ids + e->nr_ids, ids, nr * 8);
	e->nr_ids += nr;
	return 0;
}

/* Write the id arrays then the attrs at @off; returns the end offset. */
static int write_attrs(struct tk_perfdata_writer *w, uint64_t off, uint64_t *attrs_off,
		       uint64_t *end)
{
	uint64_t ids_at = off, nids = 0;
	uint8_t fa[TK_PERF_FILE_ATTR_SIZE];
	int r;

	for (size_t i = 0; i < w->nr_evsels; i++) {
		r = pwrite_full(w, w->evsels[i].ids, w->evsels[i].nr_ids * 8, off + nids * 8);
		if (r < 0)
			return r;
		nids += w->evsels[i].nr_ids;
	}
	*attrs_off = off + nids * 8;
	for (size_t i = 0; i < w->nr_evsels; i++) {
		tk_perfdata_attr_encode(&w->evsels[i].attr, fa);
		tk_store_u64(fa + 128, w->evsels[i].nr_ids ? ids_at : 0, false);
		tk_store_u64(fa + 136, w->evsels[i].nr_ids * 8, false);
		ids_at += w->evsels[i].nr_ids * 8;
		r = pwrite_full(w, fa, sizeof(fa), *attrs_off + i * sizeof(fa));
		if (r < 0)
			return r;
	}
	*end = *attrs_off + w->nr_evsels * sizeof(fa);
	return 0;
}

static int write_header(struct tk_perfdata_writer *w, uint64_t attrs_off, const uint64_t feats[4])
{
	uint8_t h[TK_PERF_HEADER_SIZE];

	memset(h, 0, sizeof(h));
	tk_store_u64(h, TK_PERF_MAGIC, false);
	tk_store_u64(h + 8, TK_PERF_HEADER_SIZE, false);
	tk_store_u64(h + 16, TK_PERF_FILE_ATTR_SIZE, false);
	tk_store_u64(h + 24, attrs_off, false);
	tk_store_u64(h + 32, w->nr_evsels * (uint64_t)TK_PERF_FILE_ATTR_SIZE, false);
	tk_store_u64(h + 40, w->data_offset, false);
	tk_store_u64(h + 48, w->data_size, false);
	for (int i = 0; i < 4; i++)
		tk_store_u64(h + 72 + 8 * i, feats[i], false);
	return pwrite_full(w, h, sizeof(h), 0);
}

static int build_event_desc(struct tk_perfdata_writer *w);

/*
 * The early features' payloads at @pos, then their table T at the data
 * offset (right after them); the bitmap that T goes with in @feats.
 */
static int write_early_features(struct tk_perfdata_writer *w, uint64_t pos, uint64_t feats[4])
{
	size_t n = 0;
	int r;

	for (uint32_t id = 1; id < NFEAT; id++) {
		if (!w->feat_set[id])
			continue;
		r = pwrite_full(w, w->feat[id], w->feat_size[id], pos);
		if (r < 0)
			return r;
		w->feat_at[id] = pos;
		pos += w->feat_size[id];
		n++;
	}
	w->data_offset = pos;
	if (n == 0)
		return 0;
	w->tab_len = 16 * (n + 1);
	w->tab = calloc(1, w->tab_len);
	if (!w->tab)
		return tk_fail(ENOMEM, "out of memory");
	/* Entry 0 (bit 0) doubles as the header of the padding record T becomes. */
	tk_store_u32(w->tab, TK_PERF_RECORD_HEADER_EVENT_TYPE, false);
	tk_store_u16(w->tab + 6, (uint16_t)w->tab_len, false);
	feats[0] |= 1;
	n = 1;
	for (uint32_t id = 1; id < NFEAT; id++) {
		if (!w->feat_set[id])
			continue;
		tk_store_u64(w->tab + 16 * n, w->feat_at[id], false);
		tk_store_u64(w->tab + 16 * n + 8, w->feat_size[id], false);
		feats[id / 64] |= 1ull << (id % 64);
		n++;
	}
	return pwrite_full(w, w->tab, w->tab_len, w->data_offset);
}

/* A record header for pipe mode's metadata records. */
static void put_rec_header(uint8_t *p, uint32_t type, size_t size)
{
	tk_store_u32(p, type, false);
	tk_store_u16(p + 4, 0, false);
	tk_store_u16(p + 6, (uint16_t)size, false);
}

/*
 * Pipe mode's HEADER_TRACING_DATA. perf 6.1 passes over the kallsyms of
 * tracing data with lseek(), which fails on a pipe, and then reads the
 * symbols as what follows them; its own pipe streams carry none. So the
 * blob goes out with an empty kallsyms (perf names symbols from its own
 * sources anyway).
 */
static int pipe_tracing_data(struct tk_perfdata_writer *w)
{
	static const uint8_t zero[8];
	const uint8_t *blob = w->feat[TK_PERF_FEAT_TRACING_DATA];
	uint64_t len = w->feat_size[TK_PERF_FEAT_TRACING_DATA], cut_at = len, cut = 0, aligned;
	struct tk_tracedata *td = tk_tracedata_new();
	const char *what;
	struct tk_text k;
	uint8_t h[16];
	uint64_t bad;
	int r;

	if (!td)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_tracedata_parse_perf(td, blob, len, &bad, &what) == 0 &&
	    tk_tracedata_kallsyms(td, &k) == 0 && k.len && (const uint8_t *)k.data >= blob + 4 &&
	    (const uint8_t *)k.data + k.len <= blob + len) {
		/* The kallsyms text sits in the blob after its u32 size. */
		cut_at = (uint64_t)((const uint8_t *)k.data - blob) - 4;
		cut = k.len;
	}
	tk_tracedata_free(td);
	aligned = (len - cut + 7) & ~7ull;
	if (aligned > UINT32_MAX)
		return tk_fail(E2BIG, "%s: tracing data too large", w->name);
	put_rec_header(h, TK_PERF_RECORD_HEADER_TRACING_DATA, 16);
	tk_store_u32(h + 8, (uint32_t)aligned, false);
	tk_store_u32(h + 12, 0, false);
	r = write_stream(w, h, 16);
	if (r == 0)
		r = write_stream(w, blob, cut_at);
	if (r == 0 && cut_at < len) {
		r = write_stream(w, zero, 4);
		if (r == 0)
			r = write_stream(w, blob + cut_at + 4 + cut, len - cut_at - 4 - cut);
	}
	if (r == 0)
		r = write_stream(w, zero, aligned - (len - cut));
	return r;
}

/* Pipe mode's start: header, HEADER_ATTRs, HEADER_FEATUREs, tracing data. */
static int pipe_begin(struct tk_perfdata_writer *w)
{
	uint8_t h[TK_PERF_ATTR_SIZE + 16];
	uint64_t len;
	int r;

	tk_store_u64(h, TK_PERF_MAGIC, false);
	tk_store_u64(h + 8, 16, false);
	r = write_stream(w, h, 16);
	for (size_t i = 0; i < w->nr_evsels && r == 0; i++) {
		len = 8 + TK_PERF_ATTR_SIZE + 8 * (uint64_t)w->evsels[i].nr_ids;
		if (len > 65535)
			return tk_fail(E2BIG,
				       "%s: event %zu has %zu ids, more than a pipe-mode "
				       "HEADER_ATTR record holds",
				       w->name, i, w->evsels[i].nr_ids);
		put_rec_header(h, TK_PERF_RECORD_HEADER_ATTR, len);
		tk_perfdata_attr_encode(&w->evsels[i].attr, h + 8);
		r = write_stream(w, h, 8 + TK_PERF_ATTR_SIZE);
		if (r == 0)
			r = write_stream(w, w->evsels[i].ids, w->evsels[i].nr_ids * 8);
	}
	if (r == 0 && !w->evdesc_done && !w->feat_set[TK_PERF_FEAT_EVENT_DESC]) {
		r = build_event_desc(w);
		w->evdesc_done = true;
	}
	for (uint32_t id = 1; id < NFEAT && r == 0; id++) {
		if (!w->feat_set[id] || id == TK_PERF_FEAT_TRACING_DATA ||
		    id == TK_PERF_FEAT_BUILD_ID)
			continue;
		if (w->feat_size[id] > 65535 - 16) {
			tk_warn("%s: feature %s (%" PRIu64 " bytes) does not fit a pipe-mode "
				"record: not written",
				w->name, tk_perfdata_feature_name(id), w->feat_size[id]);
			continue;
		}
		put_rec_header(h, TK_PERF_RECORD_HEADER_FEATURE, 16 + w->feat_size[id]);
		tk_store_u64(h + 8, id, false);
		r = write_stream(w, h, 16);
		if (r == 0)
			r = write_stream(w, w->feat[id], w->feat_size[id]);
	}
	if (r == 0) {
		put_rec_header(h, TK_PERF_RECORD_HEADER_FEATURE, 16);
		tk_store_u64(h + 8, TK_PERF_FEAT_LAST, false);
		r = write_stream(w, h, 16);
	}
	if (r == 0 && w->feat_set[TK_PERF_FEAT_TRACING_DATA])
		r = pipe_tracing_data(w);
	return r;
}

/* Pipe mode's end: one HEADER_BUILD_ID record per build id. */
static int pipe_build_ids(struct tk_perfdata_writer *w)
{
	static const uint8_t zero[64];
	int r = 0;

	for (size_t i = 0; i < w->nr_bids && r == 0; i++) {
		const struct w_buildid *e = &w->bids[i];
		size_t n = strlen(e->name);
		uint32_t nlen = tk_perf_string_len(n);
		uint8_t h[36];

		if (36 + nlen > 65535)
			continue;
		memset(h, 0, sizeof(h));
		tk_store_u32(h, TK_PERF_RECORD_HEADER_BUILD_ID, false);
		tk_store_u16(h + 4, e->misc, false);
		tk_store_u16(h + 6, (uint16_t)(36 + nlen), false);
		tk_store_u32(h + 8, (uint32_t)e->pid, false);
		memcpy(h + 12, e->id, 20);
		h[32] = e->size;
		r = write_stream(w, h, sizeof(h));
		if (r == 0)
			r = write_stream(w, e->name, n);
		if (r == 0)
			r = write_stream(w, zero, nlen - n);
	}
	return r;
}

int tk_perfdata_writer_begin(struct tk_perfdata_writer *w)
{
	uint64_t feats[4] = {0}, attrs_off, end;
	int r;

	if (w->failed || w->finished)
		return -EIO;
	if (w->begun)
		return 0;
	if (w->nr_evsels == 0)
		return tk_fail(EINVAL, "%s: no events added", w->name);
	if (w->nr_evsels > 1)
		for (size_t i = 0; i < w->nr_evsels; i++)
			if (!w->evsels[i].nr_ids)
				return tk_fail(EINVAL,
					       "%s: event %zu has no ids in a file of %zu "
					       "events",
					       w->name, i, w->nr_evsels);
	if (w->append) {
		w->begun = true;
		return 0; /* nothing is written before the first flush */
	}
	if (w->pipe) {
		w->begun = true;
		return pipe_begin(w);
	}
	/*
	 * Every name is known now: EVENT_DESC joins the early features, if the
	 * caller set any (a writer that sets none keeps the bitmap 0 until
	 * finish, and its data free of padding).
	 */
	for (uint32_t id = 1; id < NFEAT && !w->evdesc_done; id++) {
		if (!w->feat_set[id] || w->feat_set[TK_PERF_FEAT_EVENT_DESC])
			continue;
		r = build_event_desc(w);
		if (r < 0)
			return r;
		w->evdesc_done = true;
	}
	w->begun = true;
	r = write_attrs(w, TK_PERF_HEADER_SIZE, &attrs_off, &end);
	if (r < 0)
		return r;
	w->data_size = 0;
	r = write_early_features(w, end, feats);
	if (r < 0)
		return r;
	/*
	 * With early features this commits data size 0 and T: perf then warns
	 * "data size 0" but still opens the file (without T it would call a
	 * tracepoint file incompatible).
	 */
	return write_header(w, attrs_off, feats);
}

/* --------------------------------------------------------------- records */

static void note_time(struct tk_perfdata_writer *w, const uint8_t *rec, size_t size)
{
	struct tk_perf_sample s;
	size_t idx = 0, off, bad;

	if (w->nr_evsels > 1) {
		uint64_t id;
		bool found = false;

		if (!tk_perf_id_offset(TK_PERF_RECORD_SAMPLE, w->evsels[0].attr.sample_type, size,
				       &off))
			return;
		id = tk_load_u64(rec + off, false);
		for (size_t i = 0; i < w->nr_evsels && !found; i++)
			for (size_t j = 0; j < w->evsels[i].nr_ids && !found; j++)
				if (w->evsels[i].ids[j] == id) {
					idx = i;
					found = true;
				}
		if (!found)
			return;
	}
	if (!(w->evsels[idx].attr.sample_type & TK_PERF_SAMPLE_TIME) ||
	    tk_perf_sample_decode(&w->evsels[idx].attr, rec, size, &s, &bad) < 0)
		return;
	if (!w->have_time || s.time < w->t_first)
		w->t_first = s.time;
	if (!w->have_time || s.time > w->t_last)
		w->t_last = s.time;
	w->have_time = true;
}

/*
 * The buffered records after what is committed (after T, when there is
 * one), then a fresh T behind them when @with_tab; the writer's data size
 * then covers them (the header's moves only when the caller writes it).
 */
static int write_pending(struct tk_perfdata_writer *w, bool with_tab)
{
	uint64_t off = w->data_offset + w->data_size + (w->tab ? w->tab_len : 0);
	int r;

	if (w->pipe) {
		r = write_stream(w, w->buf, w->len);
		w->data_size += w->len;
		w->len = 0;
		return r;
	}
	r = pwrite_full(w, w->buf, w->len, off);

	if (r == 0 && with_tab && w->tab)
		r = pwrite_full(w, w->tab, w->tab_len, off + w->len);
	if (r < 0)
		return r;
	/* The committed T becomes a padding record inside the data. */
	w->data_size += (w->tab ? w->tab_len : 0) + w->len;
	w->len = 0;
	return 0;
}

int tk_perfdata_writer_flush(struct tk_perfdata_writer *w)
{
	uint8_t b[8];
	int r;

	if (w->failed)
		return -EIO;
	if (!w->begun) {
		r = tk_perfdata_writer_begin(w);
		if (r < 0)
			return r;
	}
	if (w->append && !w->flushed) {
		/* The old feature table is about to be overwritten: drop its bits first. */
		static const uint8_t zero[32];

		r = pwrite_full(w, zero, sizeof(zero), 72);
		if (r < 0)
			return r;
	}
	w->flushed = true;
	if (w->len == 0)
		return 0;
	r = write_pending(w, true);
	if (r < 0 || w->pipe)
		return r;
	if (r < 0)
		return r;
	tk_store_u64(b, w->data_size, false);
	return pwrite_full(w, b, 8, 48);
}

int tk_perfdata_writer_write(struct tk_perfdata_writer *w, const void *rec, size_t size)
{
	const uint8_t *p = rec;
	int r;

	if (w->failed || w->finished)
		return -EIO;
	if (size < 8 || size > 65535 || tk_load_u16(p + 6, false) != size)
		return tk_fail(EINVAL, "%s: record of %zu bytes has header size %u", w->name, size,
			       size >= 8 ? tk_load_u16(p + 6, false) : 0);
	if (!w->begun) {
		r = tk_perfdata_writer_begin(w);
		if (r < 0)
			return r;
	}
	if (w->len + size > BLOCK) {
		r = tk_perfdata_writer_flush(w);
		if (r < 0)
			return r;
	}
	memcpy(w->buf + w->len, p, size);
	w->len += size;
	if (tk_load_u32(p, false) == TK_PERF_RECORD_SAMPLE)
		note_time(w, p, size);
	return 0;
}

/* -------------------------------------------------------------- features */

int tk_perfdata_writer_set_feature(struct tk_perfdata_writer *w, uint32_t id, const void *data,
				   uint64_t size)
{
	uint8_t *copy;

	if (id == 0 || id >= NFEAT)
		return tk_fail(EINVAL, "%s: feature %u is not one perf 6.1 knows", w->name, id);
	if (size > SIZE_MAX - 1)
		return tk_fail(EINVAL, "feature too large");
	copy = malloc(size ? size : 1);
	if (!copy)
		return tk_fail(ENOMEM, "out of memory");
	if (size)
		memcpy(copy, data, size);
	free(w->feat[id]);
	w->feat[id] = copy;
	w->feat_size[id] = size;
	w->feat_at[id] = 0; /* not on disk yet: finish writes it */
	w->feat_set[id] = true;
	return 0;
}

/* perf_header_string: u32 len (strlen+1 rounded to 64), string, NUL padding. */
void tk_perf_put_string(struct tk_bytebuf *b, const char *s)
{
	size_t n = strlen(s);
	uint32_t len = tk_perf_string_len(n);

	tk_bytebuf_put_u32(b, len);
	tk_bytebuf_put(b, s, n);
	tk_bytebuf_put_zeros(b, len - n);
}

/* A payload in host order, as perf writes its own. */
static void payload_init(struct tk_bytebuf *b)
{
	tk_bytebuf_init(b, TK_HOST_BIG_ENDIAN);
}

/* Set feature @id to the payload built in @b, which is released. */
static int set_payload(struct tk_perfdata_writer *w, uint32_t id, struct tk_bytebuf *b)
{
	int r = tk_bytebuf_error(b);

	if (r == 0)
		r = tk_perfdata_writer_set_feature(w, id, b->data, b->len);
	tk_bytebuf_release(b);
	return r;
}

int tk_perfdata_writer_set_string(struct tk_perfdata_writer *w, uint32_t id, const char *value)
{
	struct tk_bytebuf b;

	payload_init(&b);
	tk_perf_put_string(&b, value);
	return set_payload(w, id, &b);
}

int tk_perfdata_writer_add_build_id(struct tk_perfdata_writer *w, uint16_t misc, int32_t pid,
				    const uint8_t *id, size_t len, const char *filename)
{
	struct w_buildid *n;
	char *nm;

	if (len == 0 || len > 20 || !filename)
		return tk_fail(EINVAL, "%s: build id of %zu bytes", w->name, len);
	for (size_t i = 0; i < w->nr_bids; i++)
		if (w->bids[i].pid == pid && w->bids[i].size == len &&
		    memcmp(w->bids[i].id, id, len) == 0 && strcmp(w->bids[i].name, filename) == 0)
			return 0;
	nm = strdup(filename);
	n = realloc(w->bids, (w->nr_bids + 1) * sizeof(*n));
	if (n)
		w->bids = n;
	if (!n || !nm) {
		free(nm);
		return tk_fail(ENOMEM, "out of memory");
	}
	memset(&n[w->nr_bids], 0, sizeof(*n));
	n[w->nr_bids].misc = (uint16_t)(misc | 0x8000);
	n[w->nr_bids].pid = pid;
	memcpy(n[w->nr_bids].id, id, len);
	n[w->nr_bids].size = (uint8_t)len;
	n[w->nr_bids].name = nm;
	w->nr_bids++;
	return 0;
}

static int build_build_ids(struct tk_perfdata_writer *w)
{
	struct tk_bytebuf b;

	if (w->nr_bids == 0)
		return 0;
	payload_init(&b);
	for (size_t i = 0; i < w->nr_bids; i++) {
		const struct w_buildid *e = &w->bids[i];
		size_t n = strlen(e->name);
		uint32_t nlen = tk_perf_string_len(n);
		uint8_t h[36];

		if (36 + nlen > 65535)
			continue;
		memset(h, 0, sizeof(h));
		tk_store_u32(h, 0, false);
		tk_store_u16(h + 4, e->misc, false);
		tk_store_u16(h + 6, (uint16_t)(36 + nlen), false);
		tk_store_u32(h + 8, (uint32_t)e->pid, false);
		memcpy(h + 12, e->id, 20);
		h[32] = e->size;
		tk_bytebuf_put(&b, h, sizeof(h));
		tk_bytebuf_put(&b, e->name, n);
		tk_bytebuf_put_zeros(&b, nlen - n);
	}
	return set_payload(w, TK_PERF_FEAT_BUILD_ID, &b);
}

static int build_event_desc(struct tk_perfdata_writer *w)
{
	struct tk_bytebuf b;
	uint8_t a[TK_PERF_ATTR_SIZE];

	for (size_t i = 0; i < w->nr_evsels; i++)
		if (!w->evsels[i].name)
			return 0; /* perf pairs names by position: all or none */
	payload_init(&b);
	tk_bytebuf_put_u32(&b, (uint32_t)w->nr_evsels);
	tk_bytebuf_put_u32(&b, TK_PERF_ATTR_SIZE);
	for (size_t i = 0; i < w->nr_evsels; i++) {
		tk_perfdata_attr_encode(&w->evsels[i].attr, a);
		tk_bytebuf_put(&b, a, sizeof(a));
		tk_bytebuf_put_u32(&b, (uint32_t)w->evsels[i].nr_ids);
		tk_perf_put_string(&b, w->evsels[i].name);
		tk_bytebuf_put(&b, w->evsels[i].ids, w->evsels[i].nr_ids * 8);
	}
	return set_payload(w, TK_PERF_FEAT_EVENT_DESC, &b);
}

/* CMDLINE: u32 count, then @exe (or argv[0] when unknown) and argv[1..]. */
static void put_cmdline(struct tk_bytebuf *b, const char *exe, int argc, const char *const *argv)
{
	tk_bytebuf_put_u32(b, (uint32_t)(argc > 0 ? argc : 1));
	tk_perf_put_string(b, exe ? exe : (argc > 0 ? argv[0] : "tracekit"));
	for (int i = 1; i < argc; i++)
		tk_perf_put_string(b, argv[i]);
}

int tk_perfdata_writer_set_host_facts(struct tk_perfdata_writer *w, const struct tk_host *h)
{
	static const struct {
		uint32_t id;
		size_t field;
	} strings[] = {
		{TK_PERF_FEAT_HOSTNAME, offsetof(struct tk_host, hostname)},
		{TK_PERF_FEAT_OSRELEASE, offsetof(struct tk_host, osrelease)},
		{TK_PERF_FEAT_VERSION, offsetof(struct tk_host, version)},
		{TK_PERF_FEAT_ARCH, offsetof(struct tk_host, arch)},
		{TK_PERF_FEAT_CPUDESC, offsetof(struct tk_host, cpudesc)},
		{TK_PERF_FEAT_CPUID, offsetof(struct tk_host, cpuid)},
	};
	struct tk_bytebuf b;
	uint32_t nr[2] = {h->nr_cpus_avail, h->nr_cpus_online};
	int r = 0;

	/* A fact the host did not give (NULL) is a feature not written. */
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]) && r == 0; i++) {
		const char *v = *(const char *const *)((const char *)h + strings[i].field);

		if (v)
			r = tk_perfdata_writer_set_string(w, strings[i].id, v);
	}
	if (r == 0)
		r = tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_NRCPUS, nr, sizeof(nr));
	if (r == 0 && h->has_total_mem)
		r = tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_TOTAL_MEM, &h->total_mem_kb,
						   sizeof(h->total_mem_kb));
	if (r == 0) {
		payload_init(&b);
		put_cmdline(&b, h->exe, h->argc, h->argv);
		r = set_payload(w, TK_PERF_FEAT_CMDLINE, &b);
	}
	return r;
}

int tk_perfdata_writer_set_tracedata(struct tk_perfdata_writer *w, const struct tk_tracedata *td)
{
	struct tk_bytebuf b;
	int r;

	tk_bytebuf_init(&b, td->big_endian);
	r = tk_tracedata_put_perf(td, &b);
	if (r < 0) {
		tk_bytebuf_release(&b);
		return r;
	}
	return set_payload(w, TK_PERF_FEAT_TRACING_DATA, &b);
}

int tk_perfdata_writer_set_clock(struct tk_perfdata_writer *w, int32_t clockid)
{
	struct timespec res, tod, clk;
	uint8_t cd[24];
	uint64_t ns;
	int r;

	if (clock_getres(clockid, &res) < 0 || clock_gettime(CLOCK_REALTIME, &tod) < 0 ||
	    clock_gettime(clockid, &clk) < 0)
		return tk_fail(errno, "clock %d: %s", clockid, strerror(errno));
	ns = (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec;
	r = tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_CLOCKID, &ns, sizeof(ns));
	if (r < 0)
		return r;
	tk_store_u32(cd, 1, false);
	tk_store_u32(cd + 4, (uint32_t)clockid, false);
	tk_store_u64(cd + 8, (uint64_t)tod.tv_sec * 1000000000u + (uint64_t)tod.tv_nsec, false);
	tk_store_u64(cd + 16, (uint64_t)clk.tv_sec * 1000000000u + (uint64_t)clk.tv_nsec, false);
	return tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_CLOCK_DATA, cd, sizeof(cd));
}

/* --------------------------------------------------------------- finish */

int tk_perfdata_writer_finish(struct tk_perfdata_writer *w)
{
	uint64_t feats[4] = {0}, table, pos, attrs_off, end;
	uint32_t n = 0;
	uint8_t ent[16];
	int r;

	if (w->failed)
		return -EIO;
	if (w->finished)
		return tk_fail(EINVAL, "%s: already finished", w->name);
	if (!w->begun) {
		r = tk_perfdata_writer_begin(w);
		if (r < 0)
			return r;
	}
	if (w->pipe) {
		r = tk_perfdata_writer_flush(w);
		if (r == 0)
			r = pipe_build_ids(w);
		if (r < 0)
			goto fail;
		w->finished = true;
		return 0;
	}
	if (w->tab) {
		/*
		 * The last records and the final table go after the committed T
		 * (a padding record from then on): until the final header, the
		 * committed state stays whole.
		 */
		r = write_pending(w, false);
		if (r < 0)
			return r;
		/*
		 * From here the writer's data size is ahead of the header's: a
		 * failure ends the writer, and the file keeps its last commit.
		 */
	} else {
		r = tk_perfdata_writer_flush(w);
		if (r < 0)
			return r;
	}
	r = build_build_ids(w);
	if (r == 0 && w->nr_evsels && !w->evdesc_done)
		r = build_event_desc(w);
	if (r == 0 && w->have_time) {
		uint64_t st[2] = {w->t_first, w->t_last};

		r = tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_SAMPLE_TIME, st, sizeof(st));
	}
	if (r < 0)
		goto fail;
	for (uint32_t id = 1; id < NFEAT; id++)
		n += w->feat_set[id];
	table = w->data_offset + w->data_size;
	pos = table + 16ull * n;
	n = 0;
	for (uint32_t id = 1; id < NFEAT && r == 0; id++) {
		if (!w->feat_set[id])
			continue;
		/* Early payloads stay where they are; the others follow the table. */
		tk_store_u64(ent, w->feat_at[id] ? w->feat_at[id] : pos, false);
		tk_store_u64(ent + 8, w->feat_size[id], false);
		r = pwrite_full(w, ent, sizeof(ent), table + 16ull * n++);
		if (r == 0 && !w->feat_at[id]) {
			r = pwrite_full(w, w->feat[id], w->feat_size[id], pos);
			pos += w->feat_size[id];
		}
		feats[id / 64] |= 1ull << (id % 64);
	}
	if (r < 0)
		goto fail;
	if (w->append) {
		r = write_attrs(w, pos, &attrs_off, &end);
		if (r < 0)
			goto fail;
	} else {
		attrs_off = TK_PERF_HEADER_SIZE;
		for (size_t i = 0; i < w->nr_evsels; i++)
			attrs_off += w->evsels[i].nr_ids * 8;
		end = pos;
	}
	/* Cut what an earlier, longer file left; a device written through has no length. */
	if (ftruncate(w->fd, (off_t)end) < 0 && errno != EINVAL)
		return wfail(w, errno, "truncate");
	/* Everything the bitmap announces is on disk: now set it. */
	if (fdatasync(w->fd) < 0 && errno != EINVAL && errno != EROFS)
		return wfail(w, errno, "sync");
	r = write_header(w, attrs_off, feats);
	if (r < 0)
		goto fail;
	w->finished = true;
	return 0;
fail:
	w->failed = true;
	return r;
}

/* --------------------------------------------------------------- append */

struct tk_perfdata_writer *tk_perfdata_writer_open_append(const char *path)
{
	struct tk_perfdata *pd;
	const struct tk_perfdata_info *in;
	const struct tk_perfdata_host *h;
	struct tk_perfdata_writer *w = NULL;
	struct stat st;
	int fd = -1, r = 0;

	/* Reading a FIFO to append to it would wait for a writer that never comes. */
	if (strcmp(path, "-") == 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
		errno = -tk_fail(ESPIPE, "%s: cannot append to a stream (not a regular file)",
				 path);
		return NULL;
	}
	pd = tk_perfdata_open(path);
	if (!pd)
		return NULL;
	in = tk_perfdata_get_info(pd);
	if (in->pipe || in->data_size_repaired) {
		r = tk_fail(EINVAL, "%s: cannot append to a %s", path,
			    in->pipe ? "pipe-mode file" : "file whose recording was not finished");
		goto out;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		r = tk_fail(errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	w = writer_new(fd, path, true);
	fd = -1;
	if (!w) {
		r = -ENOMEM;
		goto out;
	}
	w->append = true;
	w->data_offset = in->data_offset;
	w->data_size = in->data_size;
	for (size_t i = 0; i < tk_perfdata_evsel_count(pd) && r == 0; i++) {
		const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, i);

		r = push_evsel(w, &e->attr, e->name);
		if (r >= 0) {
			w->evsels[i].ids = malloc(e->nr_ids * 8 + 1);
			if (!w->evsels[i].ids) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			memcpy(w->evsels[i].ids, e->ids, e->nr_ids * 8);
			w->evsels[i].nr_ids = e->nr_ids;
			r = 0;
		}
	}
	w->nr_old_evsels = w->nr_evsels;
	for (size_t i = 0; i < tk_perfdata_feature_count(pd) && r == 0; i++) {
		const struct tk_perfdata_feature *f = tk_perfdata_feature_get(pd, i);

		/* Build ids are merged from their parsed form; the rest is kept as is. */
		if (f->id == 0 || f->id >= NFEAT || f->id == TK_PERF_FEAT_BUILD_ID || !f->valid)
			continue;
		r = tk_perfdata_writer_set_feature(w, f->id, f->data, f->size);
	}
	for (size_t i = 0; i < tk_perfdata_build_id_count(pd) && r == 0; i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(pd, i);

		r = tk_perfdata_writer_add_build_id(w, b->misc & 0x7fff, b->pid, b->id,
						    b->size ? b->size : 20, b->filename);
	}
	h = tk_perfdata_get_host(pd);
	if (h->has_sample_time && h->sample_time_first <= h->sample_time_last) {
		w->have_time = true;
		w->t_first = h->sample_time_first;
		w->t_last = h->sample_time_last;
	}
out:
	if (fd >= 0)
		close(fd);
	tk_perfdata_close(pd);
	if (r < 0) {
		tk_perfdata_writer_close(w);
		errno = -r;
		return NULL;
	}
	return w;
}

/* ------------------------------------------------------------------------
 * Records from fields: callers describe a sample or a side-band record and
 * the writer lays out its bytes, so that no caller packs perf records.
 * A SAMPLE's fields follow its event's sample_type in the kernel's order;
 * a side-band record (COMM, FORK, EXIT) ends with the sample_id_all trailer
 * of event 0 (every event shares sample_id_all, add_attr checks it), whose
 * id is event 0's first kernel id.
 */

/* The bits add_sample() can lay out; READ, CALLCHAIN, BRANCH... need data it has no field for. */
#define SAMPLE_BITS_FROM_FIELDS                                                                    \
	(TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |                      \
	 TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ADDR | TK_PERF_SAMPLE_ID |                           \
	 TK_PERF_SAMPLE_STREAM_ID | TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD |                   \
	 TK_PERF_SAMPLE_RAW)

/* Records up to this size are built on the stack; bigger ones (large RAW) in the heap. */
#define SMALL_RECORD 512u

void tk_perfdata_attr_tracepoint(struct tk_perf_attr *attr, uint64_t event_id, uint64_t sample_type)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = 2; /* PERF_TYPE_TRACEPOINT */
	attr->config = event_id;
	attr->sample_period = 1;
	attr->sample_type = sample_type;
	attr->flags = TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL;
}

/* What the add_* calls return: the record's size once written, else the error. */
static int wrote(int r, size_t size)
{
	return r < 0 ? r : (int)size;
}

static uint64_t first_id(const struct w_evsel *e)
{
	return e->nr_ids ? e->ids[0] : 0;
}

static void put_u64(uint8_t *p, size_t *at, uint64_t v)
{
	memcpy(p + *at, &v, 8);
	*at += 8;
}

static void put_u32x2(uint8_t *p, size_t *at, uint32_t a, uint32_t b)
{
	memcpy(p + *at, &a, 4);
	memcpy(p + *at + 4, &b, 4);
	*at += 8;
}

static void put_header(uint8_t *p, uint32_t type, uint16_t misc, size_t size)
{
	uint16_t sz = (uint16_t)size;

	memcpy(p, &type, 4);
	memcpy(p + 4, &misc, 2);
	memcpy(p + 6, &sz, 2);
}

int tk_perfdata_writer_add_sample(struct tk_perfdata_writer *w, size_t attr_index,
				  const struct tk_perf_sample *s)
{
	const struct w_evsel *e;
	uint64_t st, id;
	uint32_t raw_pad = 0;
	uint8_t small[SMALL_RECORD], *rec;
	size_t size = 8, at = 8;
	int r;

	if (attr_index >= w->nr_evsels)
		return tk_fail(EINVAL, "%s: sample of unknown event %zu", w->name, attr_index);
	e = &w->evsels[attr_index];
	st = e->attr.sample_type;
	if (st & ~(uint64_t)SAMPLE_BITS_FROM_FIELDS)
		return tk_fail(ENOTSUP,
			       "%s: event %zu: sample_type 0x%" PRIx64 " has fields "
			       "a sample cannot be built from",
			       w->name, attr_index, st);
	id = s->id ? s->id : first_id(e);
	size += 8 * (size_t)__builtin_popcountll(st & ~(uint64_t)TK_PERF_SAMPLE_RAW);
	if (st & TK_PERF_SAMPLE_RAW) {
		/* The u32 size and the payload keep the record 8-byte sized. */
		raw_pad = (uint32_t)(((uint64_t)s->raw_size + 4 + 7) & ~7ull) - 4;
		size += 4 + (size_t)raw_pad;
	}
	if (size > 65535)
		return tk_fail(E2BIG, "%s: a sample of %zu bytes exceeds perf's 64 KiB records",
			       w->name, size);
	rec = size <= sizeof(small) ? small : malloc(size);
	if (!rec)
		return tk_fail(ENOMEM, "out of memory");
	put_header(rec, TK_PERF_RECORD_SAMPLE, 0, size);
	if (st & TK_PERF_SAMPLE_IDENTIFIER)
		put_u64(rec, &at, id);
	if (st & TK_PERF_SAMPLE_IP)
		put_u64(rec, &at, s->ip);
	if (st & TK_PERF_SAMPLE_TID)
		put_u32x2(rec, &at, s->pid, s->tid);
	if (st & TK_PERF_SAMPLE_TIME)
		put_u64(rec, &at, s->time);
	if (st & TK_PERF_SAMPLE_ADDR)
		put_u64(rec, &at, s->addr);
	if (st & TK_PERF_SAMPLE_ID)
		put_u64(rec, &at, id);
	if (st & TK_PERF_SAMPLE_STREAM_ID)
		put_u64(rec, &at, s->stream_id);
	if (st & TK_PERF_SAMPLE_CPU)
		put_u32x2(rec, &at, s->cpu, 0);
	if (st & TK_PERF_SAMPLE_PERIOD)
		put_u64(rec, &at, s->period);
	if (st & TK_PERF_SAMPLE_RAW) {
		memcpy(rec + at, &raw_pad, 4);
		if (s->raw_size)
			memcpy(rec + at + 4, s->raw, s->raw_size);
		memset(rec + at + 4 + s->raw_size, 0, raw_pad - s->raw_size);
	}
	r = tk_perfdata_writer_write(w, rec, size);
	if (rec != small)
		free(rec);
	return wrote(r, size);
}

/* Bytes of event 0's sample_id_all trailer (0 when it has none). */
static size_t trailer_size(const struct tk_perfdata_writer *w)
{
	uint64_t st;

	if (!w->nr_evsels || !(w->evsels[0].attr.flags & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL))
		return 0;
	st = w->evsels[0].attr.sample_type;
	return 8 *
	       (size_t)__builtin_popcountll(st & (TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |
						  TK_PERF_SAMPLE_ID | TK_PERF_SAMPLE_STREAM_ID |
						  TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_IDENTIFIER));
}

/* The trailer from @id's fields; a NULL @id leaves the zeros of a synthesized record. */
static void put_trailer(const struct tk_perfdata_writer *w, uint8_t *rec, size_t at,
			const struct tk_perf_sample *id)
{
	uint64_t st, kid;

	if (!trailer_size(w) || !id)
		return;
	st = w->evsels[0].attr.sample_type;
	kid = id->id ? id->id : first_id(&w->evsels[0]);
	if (st & TK_PERF_SAMPLE_TID)
		put_u32x2(rec, &at, id->pid, id->tid);
	if (st & TK_PERF_SAMPLE_TIME)
		put_u64(rec, &at, id->time);
	if (st & TK_PERF_SAMPLE_ID)
		put_u64(rec, &at, kid);
	if (st & TK_PERF_SAMPLE_STREAM_ID)
		put_u64(rec, &at, id->stream_id);
	if (st & TK_PERF_SAMPLE_CPU)
		put_u32x2(rec, &at, id->cpu, 0);
	if (st & TK_PERF_SAMPLE_IDENTIFIER)
		put_u64(rec, &at, kid);
}

int tk_perfdata_writer_add_comm(struct tk_perfdata_writer *w, uint32_t pid, uint32_t tid,
				const char *comm, bool exec, const struct tk_perf_sample *id)
{
	/* header, pid, tid, the name NUL-terminated and 8-byte padded, the trailer */
	uint8_t rec[8 + 8 + 24 + 64] = {0};
	size_t n = strnlen(comm, 15), body = (n + 1 + 7) & ~(size_t)7;
	size_t at = 8, size = 16 + body + trailer_size(w);

	put_header(rec, TK_PERF_RECORD_COMM, exec ? 0x2000 /* PERF_RECORD_MISC_COMM_EXEC */ : 0,
		   size);
	put_u32x2(rec, &at, pid, tid);
	memcpy(rec + at, comm, n);
	put_trailer(w, rec, at + body, id);
	return wrote(tk_perfdata_writer_write(w, rec, size), size);
}

/* A file name NUL-terminated and padded to 8 bytes at @rec + @at; the new end. */
static size_t put_name(uint8_t *rec, size_t at, const char *name, size_t n)
{
	size_t padded = (n + 1 + 7) & ~(size_t)7;

	memcpy(rec + at, name, n);
	memset(rec + at + n, 0, padded - n);
	return at + padded;
}

/* Longest file name an MMAP or MMAP2 record takes here (PATH_MAX, as the kernel's). */
#define MMAP_NAME_MAX 4095u

int tk_perfdata_writer_add_mmap(struct tk_perfdata_writer *w, uint16_t misc, uint32_t pid,
				uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff,
				const char *filename, const struct tk_perf_sample *id)
{
	uint8_t rec[8 + 32 + MMAP_NAME_MAX + 1 + 8 + 64] = {0};
	size_t n = strlen(filename), at = 8;

	if (n > MMAP_NAME_MAX)
		return tk_fail(ENAMETOOLONG, "%s: mmap file name of %zu bytes", w->name, n);
	put_u32x2(rec, &at, pid, tid);
	put_u64(rec, &at, start);
	put_u64(rec, &at, len);
	put_u64(rec, &at, pgoff);
	at = put_name(rec, at, filename, n);
	put_trailer(w, rec, at, id);
	at += trailer_size(w);
	put_header(rec, TK_PERF_RECORD_MMAP, misc, at);
	return wrote(tk_perfdata_writer_write(w, rec, at), at);
}

int tk_perfdata_writer_add_mmap2(struct tk_perfdata_writer *w, uint16_t misc,
				 const struct tk_perf_mmap2 *m, const struct tk_perf_sample *id)
{
	uint8_t rec[8 + 64 + MMAP_NAME_MAX + 1 + 8 + 64] = {0};
	size_t n = strlen(m->filename), at = 8;

	if (n > MMAP_NAME_MAX)
		return tk_fail(ENAMETOOLONG, "%s: mmap file name of %zu bytes", w->name, n);
	put_u32x2(rec, &at, m->pid, m->tid);
	put_u64(rec, &at, m->start);
	put_u64(rec, &at, m->len);
	put_u64(rec, &at, m->pgoff);
	put_u32x2(rec, &at, m->maj, m->min);
	put_u64(rec, &at, m->ino);
	put_u64(rec, &at, m->ino_generation);
	put_u32x2(rec, &at, m->prot, m->flags);
	at = put_name(rec, at, m->filename, n);
	put_trailer(w, rec, at, id);
	at += trailer_size(w);
	put_header(rec, TK_PERF_RECORD_MMAP2, misc, at);
	return wrote(tk_perfdata_writer_write(w, rec, at), at);
}

static int add_task(struct tk_perfdata_writer *w, uint32_t type, uint32_t pid, uint32_t ppid,
		    uint32_t tid, uint32_t ptid, uint64_t time, const struct tk_perf_sample *id)
{
	uint8_t rec[8 + 24 + 64] = {0};
	size_t at = 8, size = 32 + trailer_size(w);

	put_header(rec, type, 0, size);
	put_u32x2(rec, &at, pid, ppid);
	put_u32x2(rec, &at, tid, ptid);
	put_u64(rec, &at, time);
	put_trailer(w, rec, at, id);
	return wrote(tk_perfdata_writer_write(w, rec, size), size);
}

int tk_perfdata_writer_add_fork(struct tk_perfdata_writer *w, uint32_t pid, uint32_t ppid,
				uint32_t tid, uint32_t ptid, uint64_t time,
				const struct tk_perf_sample *id)
{
	return add_task(w, TK_PERF_RECORD_FORK, pid, ppid, tid, ptid, time, id);
}

int tk_perfdata_writer_add_exit(struct tk_perfdata_writer *w, uint32_t pid, uint32_t ppid,
				uint32_t tid, uint32_t ptid, uint64_t time,
				const struct tk_perf_sample *id)
{
	return add_task(w, TK_PERF_RECORD_EXIT, pid, ppid, tid, ptid, time, id);
}

int tk_perfdata_writer_add_round(struct tk_perfdata_writer *w)
{
	uint8_t rec[8];

	put_header(rec, TK_PERF_RECORD_FINISHED_ROUND, 0, sizeof(rec));
	return wrote(tk_perfdata_writer_write(w, rec, sizeof(rec)), sizeof(rec));
}
