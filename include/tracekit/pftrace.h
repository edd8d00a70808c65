/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * pftrace: a .dat or perf.data as a Perfetto trace (the protobuf "Trace"
 * format ui.perfetto.dev and trace_processor open).
 *
 * What goes where (docs/perfetto.md has the user's view):
 *   ftrace records       FtraceEventBundle packets, one CPU each:
 *                        sched_switch and sched_waking in the compact
 *                        scheduler encoding, the common events in their
 *                        typed messages, every other event as a
 *                        GenericFtraceEvent with all its fields; a page
 *                        that lost events starts a bundle with lost_events
 *   perf tracepoints     the same, from the samples' raw payloads
 *   perf samples         PerfSample packets; callchains as interned
 *                        callstacks, frames (named when asked) and
 *                        mappings (with build ids)
 *   threads              ProcessTree packets from saved cmdlines and
 *                        perf's COMM/FORK/EXIT records
 *   the file's facts     ClockSnapshot, SystemInfo (uname)
 * Timestamps are the ones `tracekit report` prints, in nanoseconds, on
 * Perfetto's BOOTTIME timeline.
 *
 * The output is written in one pass; memory is per CPU and per thread,
 * not per event.
 */
#ifndef TRACEKIT_PFTRACE_H
#define TRACEKIT_PFTRACE_H

#include <tracekit/common.h>
#include <tracekit/codec.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_dat;
struct tk_perfdata;

/** What an export wrote. */
struct tk_pftrace_stats {
	uint64_t events;  /* ftrace events (records and tracepoint samples) */
	uint64_t compact; /* of them, in the compact scheduler encoding */
	uint64_t generic; /* of them, as GenericFtraceEvent */
	uint64_t samples; /* perf samples written as PerfSample */
	uint64_t skipped; /* perf tracepoint samples without a payload or formats to read it */
	uint64_t lost;	  /* bundles flagged with lost events */
	uint64_t packets; /* TracePackets, before compression */
	uint64_t bytes;	  /* bytes written, all pieces */
	uint32_t pieces;  /* output files (1 without a split) */
	uint32_t cpus;	  /* CPUs with events */
};

/**
 * typedef tk_pftrace_piece_fn - open the next piece of a split output
 * @ctx:   tk_pftrace_opts.piece_ctx
 * @index: the piece's number, 2 for the second piece, ...
 * Return: a descriptor to write the piece to (the caller closes it), or a
 * negative errno with tk_errmsg() set.
 */
typedef int (*tk_pftrace_piece_fn)(void *ctx, unsigned int index);

/**
 * struct tk_pftrace_opts - how to write
 * @sz:          sizeof(struct tk_pftrace_opts); declare it with TK_OPTS()
 * @compression: TK_COMPRESS_ZSTD: packets compressed in TracePacket
 *               zstd_compressed_packets (Perfetto from mid-2026);
 *               TK_COMPRESS_ZLIB: deflated in compressed_packets (every
 *               Perfetto since 2019); TK_COMPRESS_NONE: plain packets
 * @level:       the codec's level; 0: for zstd level -70, long matches only,
 *               with Huffman-coded literals (40% of level 1's compression
 *               time, ~1.6x its size), for zlib level 1
 * @split_size:  0, or cut the output by time into pieces of at most this
 *               many bytes (at least 1 MiB); needs @next_piece
 * @next_piece:  called when a piece is full
 * @piece_ctx:   its context
 * @symbolize:   perf.data: name the frames of samples from the binaries
 *               and kallsyms of this machine that have the recorded build
 *               ids (as perf report does); others stay unnamed
 */
struct tk_pftrace_opts {
	size_t sz;
	enum tk_compression compression;
	int level;
	uint64_t split_size;
	tk_pftrace_piece_fn next_piece;
	void *piece_ctx;
	bool symbolize;
};

/**
 * tk_pftrace_write_dat() - write the records of every buffer of a .dat
 * @dat:  an open reader (a salvaging one passes over damage, whose list
 *        stays in @dat for the caller to report)
 * @fd:   where the (first piece of the) trace goes
 * @name: @fd's name, for messages
 * @opts: NULL for plain packets in one piece
 * @st:   optional, receives the counts
 * Context: blocking I/O; memory per CPU (one page and one bundle each).
 * Return: 0, or a negative errno with tk_errmsg() naming the file: read
 * errors and -EBADMSG of the input, write errors of the output, -EINVAL
 * for bad @opts, -ENOMEM.
 */
TK_API int tk_pftrace_write_dat(struct tk_dat *dat, int fd, const char *name,
				const struct tk_pftrace_opts *opts, struct tk_pftrace_stats *st);

/**
 * tk_pftrace_write_perf() - write the samples and side-band records of a perf.data
 * @pd: an open reader; the rest as tk_pftrace_write_dat()
 * Tracepoint samples become ftrace events of their CPU, other samples
 * PerfSample packets; COMM, FORK and EXIT records feed the process tree.
 * Context: blocking I/O; memory per CPU, thread, mapping and distinct
 * callstack.
 * Return: as tk_pftrace_write_dat().
 */
TK_API int tk_pftrace_write_perf(struct tk_perfdata *pd, int fd, const char *name,
				 const struct tk_pftrace_opts *opts, struct tk_pftrace_stats *st);

#ifdef __cplusplus
}
#endif
#endif
