/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Hooks into the .dat reader for white-box tests; never installed.
 */
#ifndef TRACEKIT_DAT_READ_INTERNAL_H
#define TRACEKIT_DAT_READ_INTERNAL_H

#include <tracekit/dat.h>

/*
 * Chunks this reader has decompressed since it was created, so tests can
 * prove that a seek touched one chunk and not the whole stream.
 */
uint64_t tk_dat_cpu_reader_chunks_decoded(const struct tk_dat_cpu_reader *reader);

/* Chunks in the reader's directory (0 for uncompressed data). */
size_t tk_dat_cpu_reader_chunk_count(const struct tk_dat_cpu_reader *reader);

/*
 * The salvage decision for an error just raised (message "FILE: offset
 * 0xOFF: what"): strict readers and errors other than -EBADMSG return @err;
 * otherwise the region is added to the damage list and 0 returned.
 */
int tk_dat_salvage(struct tk_dat *dat, int err, uint64_t offset, uint64_t skipped);

#endif
