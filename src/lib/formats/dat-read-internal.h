/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Hooks into the .dat reader for white-box tests; never installed.
 */
#ifndef TRACEKIT_DAT_READ_INTERNAL_H
#define TRACEKIT_DAT_READ_INTERNAL_H

#include <tracekit/dat.h>

#include <stdbool.h>
#include <stdint.h>

/*
 * Chunks this reader has decompressed since it was created, so tests can
 * prove that a seek touched one chunk and not the whole stream.
 */
uint64_t tk_dat_cpu_reader_chunks_decoded(const struct tk_dat_cpu_reader *reader);

/* Chunks in the reader's directory (0 for uncompressed data). */
size_t tk_dat_cpu_reader_chunk_count(const struct tk_dat_cpu_reader *reader);

/*
 * A second reader of @reader's CPU data, at its start, with a copy of its
 * chunk directory rather than a walk of the chunk headers again (the walk
 * reads all of the compressed data; what damage it found is recorded
 * already). For convert's leapfrog. Return: the reader (free it with
 * tk_dat_cpu_reader_free()), or NULL with errno set (ENOMEM).
 */
struct tk_dat_cpu_reader *tk_dat_cpu_reader_dup(const struct tk_dat_cpu_reader *reader);

/* The stream offset of chunk @i (the stream size for @i past the last). */
uint64_t tk_dat_cpu_reader_chunk_offset(const struct tk_dat_cpu_reader *reader, size_t i);

/*
 * tk_dat_cpu_reader_next_page() for a whole run of pages: the next page
 * and those after it that lie contiguous in memory with it, in one block
 * of the reader (a decoded chunk, or a read of uncompressed data), each
 * checked and salvaged as next_page() does. *@pages holds *@len bytes,
 * valid until the next call; *@offset is the first page's stream offset.
 * Return: 1, 0 at the end, or an error (the run read so far is then lost:
 * the caller stops).
 */
int tk_dat_cpu_reader_next_run(struct tk_dat_cpu_reader *reader, const void **pages, uint64_t *len,
			       uint64_t *offset);

/*
 * For a consumer that decodes every page it takes with tk_page_iter_fill()
 * (report's streams): from now on a salvaging reader hands its pages out
 * with their headers checked and clamped as before, but does not walk
 * their records; the consumer calls tk_dat_cpu_reader_trim_page() on a
 * page whose decoding meets a bad record. A strict reader trims nothing
 * either way. Return: true when the reader now defers (it salvages).
 */
bool tk_dat_cpu_reader_defer_trim(struct tk_dat_cpu_reader *reader);

/*
 * The trim that tk_dat_cpu_reader_next_page() does before handing a page
 * out, for @page, the page a deferring reader handed out last (still
 * valid: no call on @reader since): records that do not decode are cut
 * from it in place and its damage recorded, exactly as an undeferred
 * reader would have. Decode the page again from its start afterwards.
 * Return: 0, -ENOMEM, or -EINVAL when @page is not that page.
 */
int tk_dat_cpu_reader_trim_page(struct tk_dat_cpu_reader *reader, const void *page);

/*
 * The salvage decision for an error just raised (message "FILE: offset
 * 0xOFF: what"): strict readers and errors other than -EBADMSG return @err;
 * otherwise the region is added to the damage list and 0 returned.
 */
int tk_dat_salvage(struct tk_dat *dat, int err, uint64_t offset, uint64_t skipped);

/*
 * Decode ahead (dat-read.c's notes on it): chunks of compressed CPU data
 * decoded on a thread of their own ahead of the readers attached, which
 * take them in place. Used by report's merge; internal, since its shape
 * follows report's needs.
 */
struct tk_dat_prefetch;

struct tk_dat_prefetch_stats {
	uint64_t loads;	  /* chunk loads by the attached readers */
	uint64_t hits;	  /* of which found decoded (or being decoded) ahead */
	uint64_t waits;	  /* of which waited for the decoder to finish the chunk */
	uint64_t decoded; /* chunks the decoder decoded (its thread, or the pumps) */
	bool stopped;	  /* the decoder was stopped (a thread: for a while) for not helping */
};

/*
 * A prefetch for the compressed CPU data of @dat, sized for @lanes
 * readers (its memory: dat-read.c's notes). No thread runs yet. Return:
 * the handle, or NULL with errno set.
 */
struct tk_dat_prefetch *tk_dat_prefetch_new(struct tk_dat *dat, size_t lanes);

/*
 * Read @reader's chunks through @pf from now on. Call before
 * tk_dat_prefetch_start(); @reader must be compressed data of @pf's file.
 * Afterwards @reader is used by one thread as before, and must be freed
 * before @pf. Return: 0, -EINVAL or -ENOMEM (the reader then reads alone).
 */
int tk_dat_prefetch_attach(struct tk_dat_prefetch *pf, struct tk_dat_cpu_reader *reader);

/* Start the decoder thread (none when no reader is attached). Return: 0 or an error. */
int tk_dat_prefetch_start(struct tk_dat_prefetch *pf);

/*
 * Instead of tk_dat_prefetch_start(): no decoder thread; the chunks are
 * decoded ahead by whoever calls tk_dat_prefetch_pump() (report's print
 * workers, between their jobs). Return: 0 or an error.
 */
int tk_dat_prefetch_start_pumped(struct tk_dat_prefetch *pf);

/*
 * Pumped @pf: decode on the calling thread the chunks that the readers'
 * windows lack, until every window is full or the prefetch is stopped.
 * One thread pumps at a time: another that calls meanwhile returns at
 * once. Any thread; a no-op unless started pumped. Return: chunks decoded.
 */
size_t tk_dat_prefetch_pump(struct tk_dat_prefetch *pf);

/*
 * tk_dat_cpu_reader_seek() for a reader attached to a prefetch (or not:
 * then the plain seek), moving its read-ahead window to @offset now: the
 * decoder decodes the chunks from there while the caller reads the CPU's
 * data before them through another reader (convert's leapfrog). Pages
 * the reader handed out before are no longer valid. Return: as seek().
 */
int tk_dat_cpu_reader_seek_ahead(struct tk_dat_cpu_reader *reader, uint64_t offset);

/* How the decoder did so far (thread-safe). */
void tk_dat_prefetch_get_stats(struct tk_dat_prefetch *pf, struct tk_dat_prefetch_stats *out);

/* Stop and join the decoder and free @pf (NULL accepted); free the readers first. */
void tk_dat_prefetch_free(struct tk_dat_prefetch *pf);

/*
 * tk_dat_merge_new(), with the compressed streams decoded ahead on a
 * thread of their own when @decode_ahead (dat-merge.c's notes). For a
 * caller that spends little time per record, with a second CPU to spare.
 */
struct tk_dat_merge *tk_dat_merge_new_ahead(struct tk_dat *dat, const size_t *buffers,
					    size_t nbuffers, bool decode_ahead);

#endif
