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

#endif
