/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * convert: move a trace between trace-cmd's .dat and perf.data.
 *
 * .dat -> .dat rewrites the file as another version (6, 7) or codec:
 * metadata, options and every CPU page of every buffer are copied
 * unchanged. .dat -> perf.data makes one tracepoint event per event id met
 * and one SAMPLE per ftrace record (every buffer, merged by time).
 * perf.data -> .dat packs the tracepoint samples' raw payloads into ftrace
 * pages of the top buffer. Tracing metadata travels in both directions.
 *
 * The output goes to a descriptor the caller opened (an empty seekable
 * file): making it appear atomically (a temporary file renamed into place)
 * is the caller's business, as is removing it after a failure.
 */
#ifndef TRACEKIT_CONVERT_H
#define TRACEKIT_CONVERT_H

#include <tracekit/common.h>
#include <tracekit/codec.h>
#include <tracekit/dat.h>
#include <tracekit/perfdata.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a conversion did; the fields a direction does not use stay 0. */
struct tk_convert_stats {
	uint64_t bytes_total;	/* input data bytes to go through (progress) */
	uint64_t bytes_done;	/* of them, done so far */
	uint64_t pages;		/* .dat pages copied (dat -> dat) or CPUs written (perf -> dat) */
	uint64_t buffers;	/* .dat buffers copied */
	uint64_t samples;	/* samples written (dat -> perf) or converted (perf -> dat) */
	uint64_t events;	/* distinct events (dat -> perf: attrs made) */
	uint64_t cpus;		/* CPUs with samples (perf -> dat) */
	uint64_t skipped_other; /* perf -> dat: samples of non-tracepoint events */
	uint64_t skipped_bad;	/* perf -> dat: tracepoint samples without a usable payload */
};

/**
 * typedef tk_convert_progress_fn - called as the work advances: .dat -> .dat
 * after each batch of pages (about every MiB of input, bytes_done out of
 * bytes_total); .dat -> perf.data every 4096 samples (samples so far);
 * perf.data -> .dat after each CPU written (pages counts the CPUs)
 * @stats: the counts so far
 * @ctx:   tk_convert_opts.progress_ctx
 */
typedef void (*tk_convert_progress_fn)(const struct tk_convert_stats *stats, void *ctx);

/**
 * struct tk_convert_opts - how to write the output
 *
 * Growable as libbpf's opts are: set @sz to sizeof(struct tk_convert_opts)
 * as the caller was built with; fields past it count as zero.
 */
struct tk_convert_opts {
	size_t sz;
	int version;			 /* .dat output: 6 or 7; 0 means 7 */
	enum tk_compression compression; /* .dat v7 output codec; v6 needs NONE */
	int compression_level;		 /* 0: the codec's default */
	tk_convert_progress_fn progress; /* optional */
	void *progress_ctx;
};

/**
 * tk_convert_dat_to_dat() - rewrite a .dat as another version or codec
 * @in:    an open reader
 * @fd:    output: an empty, seekable file at offset 0; not closed
 * @name:  the output's name for messages
 * @opts:  version, codec, progress; NULL: v7, no compression
 * @stats: optional; receives pages and buffers copied
 *
 * Every buffer converts, latency text ones too. A v6 file needs a top
 * buffer before its instances: when @in has none, an empty one (no CPU
 * data) is written, as trace-cmd convert does.
 * Context: blocking I/O; memory is bounded by one batch of pages (~1 MiB)
 * plus the reader's and writer's chunk buffers.
 * Return: 0, or a negative errno (EINVAL for a bad combination, EBADMSG for
 * corrupt input, I/O errors, ENOMEM) with tk_errmsg() naming the file.
 */
TK_API int tk_convert_dat_to_dat(struct tk_dat *in, int fd, const char *name,
				 const struct tk_convert_opts *opts,
				 struct tk_convert_stats *stats);

/**
 * tk_convert_dat_to_perf() - write the .dat's events as perf.data samples
 * @in, @fd, @name, @opts, @stats: as for tk_convert_dat_to_dat(); @opts
 *   gives only the progress callback here
 *
 * Every event id met becomes a tracepoint event (sample_type IDENTIFIER,
 * TID, TIME, CPU, PERIOD, RAW) named "system:event"; every record of every
 * buffer becomes a SAMPLE whose RAW payload is the record's payload, in
 * time order across CPUs and buffers. TRACING_DATA carries the formats of
 * the events used; the saved command lines become COMM records at time 0.
 * Times on a clock_gettime() trace clock (mono, boot...) are declared as
 * such (use_clockid, CLOCKID feature).
 * Context: blocking I/O; reads the pages twice (the events must be known
 * before the first sample).
 * Return: 0, -ENOENT when the file has no event records, or as
 * tk_convert_dat_to_dat().
 */
TK_API int tk_convert_dat_to_perf(struct tk_dat *in, int fd, const char *name,
				  const struct tk_convert_opts *opts,
				  struct tk_convert_stats *stats);

/**
 * tk_convert_perf_to_dat() - write the tracepoint samples of a perf.data as a .dat
 * @in:   an open reader, not yet read from (its records are consumed)
 * @fd, @name, @opts, @stats: as for tk_convert_dat_to_dat()
 *
 * The metadata comes from TRACING_DATA; each tracepoint sample's RAW
 * payload goes into an ftrace page of its CPU at its time. Threads are
 * named as perf script names them at their last sample. Samples of other
 * events and samples without a usable payload are skipped and counted.
 * Context: blocking I/O; memory holds every raw payload (a CPU's pages must
 * be written in time order, and perf.data interleaves CPUs).
 * Return: 0, -ENOENT when there is no TRACING_DATA or no tracepoint
 * sample, or as tk_convert_dat_to_dat().
 */
TK_API int tk_convert_perf_to_dat(struct tk_perfdata *in, int fd, const char *name,
				  const struct tk_convert_opts *opts,
				  struct tk_convert_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
