/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Constants of the .dat layout shared by the reader and the writer.
 * Facts: shared/specs/tracedat.md.
 */
#ifndef TRACEKIT_DAT_INTERNAL_H
#define TRACEKIT_DAT_INTERNAL_H

#include <tracekit/dat.h>

#define TK_DAT_MAGIC		   "\x17\x08\x44tracing"
#define TK_DAT_MAGIC_LEN	   10
#define TK_DAT_SECTION_HEADER_SIZE 16
#define TK_DAT_SECTION_FL_COMPRESS 1
/* v6 tags are exactly 10 bytes, NUL included. */
#define TK_DAT_V6_TAG_LEN	10
#define TK_DAT_V6_OPTIONS_TAG	"options  "
#define TK_DAT_V6_LATENCY_TAG	"latency  "
#define TK_DAT_V6_FLYRECORD_TAG "flyrecord"
/* trace-cmd compresses CPU data in chunks of this many pages. */
#define TK_DAT_DEFAULT_CHUNK_PAGES 10
/* Largest metadata body we accept decompressed, against zip bombs. */
#define TK_DAT_MAX_METADATA_SIZE (1ULL << 32)

/*
 * tk_dat_writer_put_chunk() - append one chunk of the open CPU's data that
 * was compressed elsewhere with the writer's codec and level: @block is the
 * codec block of @usize bytes of pages (at most one chunk, a whole number of
 * pages), @csize long. Only whole chunks may come before it in this CPU.
 * Lets threads other than the writer's compress (record, convert).
 * Return: 0 or a negative errno (message set).
 */
int tk_dat_writer_put_chunk(struct tk_dat_writer *w, const void *block, uint32_t csize,
			    uint32_t usize);

/*
 * tk_dat_writer_put_metadata() - add metadata section @id (16..21) whose
 * body of @usize bytes was compressed elsewhere into @block (@csize bytes)
 * with the writer's codec and level; compressed v7 writers only.
 * Return: 0 or a negative errno (message set).
 */
int tk_dat_writer_put_metadata(struct tk_dat_writer *w, uint16_t id, const void *block,
			       uint32_t csize, uint32_t usize);

/* Bytes of pages in one compressed chunk (page size of the header times chunk pages); 0 when
 * the writer does not compress. */
uint64_t tk_dat_writer_chunk_bytes(const struct tk_dat_writer *w);

#endif
