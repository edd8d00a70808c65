// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dat-merge: the records of a .dat in time order, across CPUs and buffers.
 *
 * One stream per CPU of each chosen buffer: a per-CPU reader (pages stream
 * from disk, decompressed a chunk at a time) and a page iterator over its
 * current page. The streams sit in the shared k-way heap of
 * internal/merge-heap.h, keyed by the record's time as trace-cmd report
 * shows it (tk_dat_timestamp() of tk_dat_host_time(), which is the raw
 * time but in a guest file's top buffer) and, on equal times, by the stream's rank:
 * buffers in the order asked (all: file order, top first), then CPUs in the
 * order the buffer lists them. That is the order trace-cmd's linear scan
 * with "<" picks.
 *
 * A record handed out points into its stream's current page, so the stream
 * advances lazily at the start of the next call: the record stays valid
 * until then. Memory is one reader (one block or chunk) per stream.
 *
 * Asked to (tk_dat_merge_new_ahead(), for the analyses' feed), the merge
 * reads its compressed streams through dat-read.c's prefetch: a decoder
 * thread decodes their chunks ahead while the caller consumes records, and
 * stops by itself when it does not help (dat-read.c's notes). Records,
 * order and damage are the same either way. The prefetch must see every
 * reader before the first page is read, so the streams are made first and
 * primed after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/dat.h>

#include "dat-read-internal.h"
#include "internal/error.h"
#include "internal/merge-heap.h"

struct stream {
	struct tk_merge_key key; /* first: a key pointer is the stream pointer */
	struct tk_dat_cpu_reader *rd;
	const struct tk_dat_buffer *buf;
	struct tk_page_iter it;
	struct tk_page_record rec;
	size_t buffer, cpu_index;
	bool in_page;
	int64_t page_missed; /* the page's missed events: 0, -1 (count unknown) or the count */
};

struct tk_dat_merge {
	struct tk_dat *dat;
	struct stream *streams;
	struct tk_merge_key **heap;
	size_t nstreams, nheap;
	struct stream *last;	    /* handed out by the previous call: advance it first */
	struct tk_dat_prefetch *pf; /* compressed chunks decoded ahead, or NULL */
};

/* A stream's read failure, naming the buffer and CPU unless the reader did. */
static int stream_fail(const struct stream *s, int r)
{
	const char *name = s->buf->name;
	uint32_t cpu = s->buf->cpus[s->cpu_index].cpu;
	char msg[512], word[24];

	snprintf(msg, sizeof(msg), "%s", tk_errmsg());
	snprintf(word, sizeof(word), "CPU %u", cpu);
	if (strstr(msg, word)) {
		if (name && name[0])
			return tk_fail(-r, "%s (buffer \"%s\")", msg, name);
		return tk_fail(-r, "%s", msg);
	}
	if (name && name[0])
		return tk_fail(-r, "%s (buffer \"%s\", cpu %u)", msg, name, cpu);
	return tk_fail(-r, "%s (buffer (top), cpu %u)", msg, cpu);
}

/* Move @s to its next record. Return: 1, 0 at its end, or a negative errno. */
static int stream_next(struct tk_dat *dat, struct stream *s)
{
	for (;;) {
		struct tk_page_header h;
		const void *page;
		int r;

		if (!s->in_page) {
			r = tk_dat_cpu_reader_next_page(s->rd, &page, NULL);
			if (r <= 0)
				return r < 0 ? stream_fail(s, r) : 0;
			r = tk_page_iter_init(&s->it, &s->buf->page_format, page,
					      s->buf->page_format.page_size, &h);
			if (r < 0)
				return stream_fail(s, r);
			s->in_page = true;
			s->page_missed = !h.missed_events  ? 0
					 : h.missed_stored ? (int64_t)h.missed_count
							   : -1;
		}
		r = tk_page_iter_next(&s->it, &s->rec);
		if (r == 1) {
			/*
			 * A guest file's CPUs are corrected one by one (TIME_SHIFT),
			 * in the top buffer only, as trace-cmd corrects them.
			 */
			uint64_t raw = s->rec.timestamp;

			if (!s->buf->name[0])
				raw = tk_dat_host_time(dat, s->buf->cpus[s->cpu_index].cpu, raw);
			s->key.ts = tk_dat_timestamp(dat, raw);
			return 1;
		}
		if (r < 0)
			return stream_fail(s, r);
		s->in_page = false;
	}
}

void tk_dat_merge_free(struct tk_dat_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nstreams; i++)
		tk_dat_cpu_reader_free(m->streams[i].rd);
	tk_dat_prefetch_free(m->pf); /* after its readers, as it asks */
	free(m->streams);
	free(m->heap);
	free(m);
}

/* Decode @m's compressed streams ahead on a thread; on any failure they decode alone. */
static void merge_decode_ahead(struct tk_dat_merge *m)
{
	size_t lanes = 0;

	for (size_t i = 0; i < m->nstreams; i++)
		lanes += m->streams[i].buf->compressed;
	if (!lanes)
		return;
	m->pf = tk_dat_prefetch_new(m->dat, lanes);
	if (!m->pf)
		return;
	for (size_t i = 0; i < m->nstreams; i++) {
		if (m->streams[i].buf->compressed)
			(void)tk_dat_prefetch_attach(m->pf, m->streams[i].rd);
	}
	if (tk_dat_prefetch_start(m->pf) < 0) {
		tk_dat_prefetch_free(m->pf); /* detaches the readers: they read alone */
		m->pf = NULL;
	}
}

struct tk_dat_merge *tk_dat_merge_new_ahead(struct tk_dat *dat, const size_t *buffers,
					    size_t nbuffers, bool decode_ahead)
{
	size_t nb = buffers ? nbuffers : tk_dat_buffer_count(dat), total = 0;
	struct tk_dat_merge *m = calloc(1, sizeof(*m));
	int r = 0;

	if (!m)
		return tk_fail_null(ENOMEM, "out of memory");
	m->dat = dat;
	for (size_t i = 0; i < nb; i++) {
		size_t b = buffers ? buffers[i] : i;
		const struct tk_dat_buffer *buf =
			b < tk_dat_buffer_count(dat) ? tk_dat_buffer_get(dat, b) : NULL;

		if (!buf) {
			r = tk_fail(EINVAL, "%s: no buffer %zu", tk_dat_get_info(dat)->path, b);
			goto fail;
		}
		if (!buf->latency_text)
			total += buf->cpu_count;
	}
	m->streams = calloc(total ? total : 1, sizeof(*m->streams));
	m->heap = calloc(total ? total : 1, sizeof(*m->heap));
	if (!m->streams || !m->heap) {
		r = tk_fail(ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < nb; i++) {
		size_t b = buffers ? buffers[i] : i;
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);

		for (size_t c = 0; !buf->latency_text && c < buf->cpu_count; c++) {
			struct stream *s = &m->streams[m->nstreams];

			s->buf = buf;
			s->buffer = b;
			s->cpu_index = c;
			s->key.order = (uint32_t)m->nstreams;
			s->rd = tk_dat_cpu_reader_new(dat, b, c);
			if (!s->rd) {
				r = stream_fail(s, -(errno ? errno : EIO));
				goto fail;
			}
			m->nstreams++;
		}
	}
	if (decode_ahead)
		merge_decode_ahead(m);
	for (size_t i = 0; i < m->nstreams; i++) {
		struct stream *s = &m->streams[i];

		r = stream_next(dat, s);
		if (r < 0)
			goto fail;
		if (r == 1) {
			m->heap[m->nheap++] = &s->key;
			tk_merge_heap_up(m->heap, m->nheap);
		}
	}
	return m;
fail:
	tk_dat_merge_free(m);
	errno = -r;
	return NULL;
}

struct tk_dat_merge *tk_dat_merge_new(struct tk_dat *dat, const size_t *buffers, size_t nbuffers)
{
	return tk_dat_merge_new_ahead(dat, buffers, nbuffers, false);
}

int tk_dat_merge_next(struct tk_dat_merge *m, struct tk_dat_merge_record *out)
{
	struct stream *s;

	if (m->last) {
		int r = stream_next(m->dat, m->last);

		m->last = NULL;
		if (r < 0)
			return r;
		if (r == 1)
			tk_merge_heap_fix_top(m->heap, m->nheap);
		else
			m->nheap = tk_merge_heap_pop(m->heap, m->nheap);
	}
	if (!m->nheap)
		return 0;
	s = (struct stream *)m->heap[0];
	m->last = s;
	out->rec = s->rec;
	out->ts = s->key.ts;
	out->buffer = s->buffer;
	out->cpu_index = s->cpu_index;
	out->cpu = s->buf->cpus[s->cpu_index].cpu;
	/* As trace-cmd reports them: on the page's first record. */
	out->missed = s->rec.offset == s->buf->page_format.data_offset ? s->page_missed : 0;
	return 1;
}
