/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * dat: trace-cmd's .dat trace file, versions 6 and 7.
 *
 * Reader: tk_dat_open() parses the header, every OPTIONS section and the
 * metadata sections (decompressing them), and keeps only those in memory.
 * CPU data stays on disk: a tk_dat_cpu_reader streams one CPU's pages with a
 * bounded buffer, seeks to the page holding a given offset or timestamp, and
 * decompresses only the chunks it touches. A file larger than RAM is read
 * with memory bounded by its metadata.
 *
 * Writer: streams a file front to back as trace-cmd does (v7: metadata
 * sections, an OPTIONS section whose DONE is patched to point at a second
 * one written at the end with the BUFFER options, then STRINGS; v6: the
 * sequential layout with the per-CPU table patched in place). CPU data is
 * written as it arrives, compressed in chunks of a few pages; nothing is
 * buffered whole.
 *
 * Layout facts: shared/specs/tracedat.md. Offsets and sizes are uint64_t.
 */
#ifndef TRACEKIT_DAT_H
#define TRACEKIT_DAT_H

#include <tracekit/common.h>
#include <tracekit/codec.h>
#include <tracekit/page.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Section ids (v7). v6 files are described with the same ids. */
enum tk_dat_section_id {
	TK_DAT_SECTION_OPTIONS = 0,
	TK_DAT_SECTION_FLYRECORD = 3,
	TK_DAT_SECTION_STRINGS = 15,
	TK_DAT_SECTION_HEADER_INFO = 16,
	TK_DAT_SECTION_FTRACE_EVENTS = 17,
	TK_DAT_SECTION_EVENT_FORMATS = 18,
	TK_DAT_SECTION_KALLSYMS = 19,
	TK_DAT_SECTION_PRINTK = 20,
	TK_DAT_SECTION_CMDLINES = 21,
	TK_DAT_SECTION_BUFFER_TEXT = 22,
};

/* Option ids (trace-cmd 3.1.6 numbering, shared with section ids). */
enum tk_dat_option_id {
	TK_DAT_OPTION_DONE = 0,
	TK_DAT_OPTION_DATE = 1,
	TK_DAT_OPTION_CPUSTAT = 2,
	TK_DAT_OPTION_BUFFER = 3,
	TK_DAT_OPTION_TRACECLOCK = 4,
	TK_DAT_OPTION_UNAME = 5,
	TK_DAT_OPTION_HOOK = 6,
	TK_DAT_OPTION_OFFSET = 7,
	TK_DAT_OPTION_CPUCOUNT = 8,
	TK_DAT_OPTION_VERSION = 9,
	TK_DAT_OPTION_PROCMAPS = 10,
	TK_DAT_OPTION_TRACEID = 11,
	TK_DAT_OPTION_TIME_SHIFT = 12,
	TK_DAT_OPTION_GUEST = 13,
	TK_DAT_OPTION_TSC2NSEC = 14,
	/* 16..21: offset of the metadata section with the same id */
	TK_DAT_OPTION_BUFFER_TEXT = 22,
};

/** Name of a section or option id ("HEADER_INFO", "BUFFER", ...); "UNKNOWN" otherwise. */
TK_API const char *tk_dat_section_name(uint16_t id);
TK_API const char *tk_dat_option_name(uint16_t id);

/* ------------------------------------------------------------------ reader */

struct tk_dat;
struct tk_tracedata;

/*
 * Guest/host sessions (trace-cmd record -A). A guest file's TIME_SHIFT
 * option maps each guest CPU's raw times into the host's: samples of
 * (guest time, offset, scaling, fraction bits), taken while recording.
 */
struct tk_dat_time_sample {
	int64_t time;	  /* guest raw time the sample was taken at */
	int64_t offset;	  /* host = ((guest * scaling) >> fraction) + offset */
	int64_t scaling;  /* multiplier (1 when the clocks tick alike) */
	int64_t fraction; /* fraction bits of scaling (0 when the option has none) */
};

/** One guest CPU's samples, sorted by time, equal times kept once (as trace-cmd uses them). */
struct tk_dat_time_shift_cpu {
	uint32_t count;
	const struct tk_dat_time_sample *samples;
};

/** TRACEID of the host, flags and per-CPU samples of a guest's TIME_SHIFT option. */
struct tk_dat_time_shift {
	uint64_t peer_trace_id; /* the host session's TRACEID */
	uint32_t flags;		/* TK_DAT_TSYNC_INTERPOLATE */
	bool has_fraction;	/* the per-CPU fraction arrays follow (trace-cmd >= 2.10) */
	uint32_t cpu_count;
	const struct tk_dat_time_shift_cpu *cpus; /* index: guest CPU */
};

/* TIME_SHIFT flags: offsets interpolated between the samples around a time (PTP). */
#define TK_DAT_TSYNC_INTERPOLATE 0x1u

/** A GUEST option of a host file: a guest traced with this host. */
struct tk_dat_guest {
	const char *name;
	uint64_t trace_id; /* the guest file's TRACEID */
	uint32_t vcpu_count;
	const int32_t *vcpu_pids; /* index: vCPU; the host thread running it (-1: none) */
};

/** Facts from the file header and the options; all borrowed until close. */
struct tk_dat_info {
	const char *path; /* name used in messages */
	int version;	  /* 6 or 7 */
	bool big_endian;
	uint8_t long_size;		 /* the header's sizeof(long) byte */
	uint32_t page_size;		 /* the header's page size */
	enum tk_compression compression; /* v7 header; NONE for v6 */
	const char *compression_version; /* "" when none */
	uint64_t file_size;
	struct tk_page_format page_format; /* from header_page, top buffer's page size */
	uint32_t cpu_count;		   /* CPUCOUNT option, else the top buffer's table */
	const char *uname;		   /* UNAME option, or NULL */
	const char *tracer_version;	   /* VERSION option, or NULL */
	const char *trace_clock;	   /* TRACECLOCK option text, or NULL */
	const char *clock;		   /* the clock in use: "[x]" of TRACECLOCK, else the
					      top BUFFER's clock, else "local" */
	bool has_tsc2nsec;
	uint32_t tsc2nsec_mult, tsc2nsec_shift;
	uint64_t tsc2nsec_offset;
	bool has_date;
	int64_t date_offset_us; /* DATE option value (microseconds) */
	int64_t ts_offset;	/* OFFSET option value (ns), 0 when absent */
	bool has_trace_id;
	uint64_t trace_id;
	/* guest/host: a guest file's TIME_SHIFT (the last one), NULL when absent */
	const struct tk_dat_time_shift *time_shift;
	const struct tk_dat_guest *guests; /* a host file's GUEST options, in file order */
	size_t nguests;
};

/** A section as found in the file (v6 parts are listed with the v7 ids). */
struct tk_dat_section {
	uint16_t id;
	uint16_t flags;		 /* bit 0: compressed */
	int32_t string_id;	 /* description string id, -1 none */
	const char *description; /* from the strings table, or NULL */
	uint64_t offset;	 /* v7: of the 16-byte header; v6: of the part's first byte */
	uint64_t size;		 /* body bytes in the file (v7 header's size) */
	uint64_t body_size;	 /* uncompressed body size; for flyrecord = size */
};

/** One option as stored; @data is borrowed until close. */
struct tk_dat_option {
	uint16_t id;
	uint32_t size;
	const void *data;
	uint64_t offset;	  /* file offset of the option's id field; 0 when its
				     OPTIONS section was compressed */
	uint32_t options_section; /* which OPTIONS section (0 = first) */
};

/** Where one CPU's data is, as the BUFFER option (v7) or CPU table (v6) says. */
struct tk_dat_cpu_data {
	uint32_t cpu;
	uint64_t offset; /* absolute file offset */
	uint64_t size;	 /* as the file says; compressed: without the chunk count
			  * (trace-cmd <= 3.1) or with it (3.2+) */
};

/** A buffer instance (the top one has name ""). */
struct tk_dat_buffer {
	const char *name;
	const char *clock; /* NULL when the file does not say (v6) */
	struct tk_page_format page_format;
	bool compressed;	 /* CPU data is chunk-compressed */
	bool latency_text;	 /* a BUFFER_TEXT (latency) buffer: text, no pages */
	uint64_t section_offset; /* v7: flyrecord/text section header; v6: flyrecord tag */
	uint32_t cpu_count;
	const struct tk_dat_cpu_data *cpus;
};

/**
 * tk_dat_open() - open and parse a .dat file
 * @path: file to read
 *
 * Parses everything but the CPU data and checks every offset and size
 * against the file. Unknown option and section ids are skipped with a
 * warning. Corrupt input is an error naming the file and offset: this is
 * a strict reader (tk_dat_open_with() salvages damage instead).
 * Context: blocking I/O.
 * Return: handle for tk_dat_close(), or NULL with errno set (ENOENT,
 * EBADMSG for malformed files, ENOTSUP for unknown versions or codecs,
 * ENOMEM) and tk_errmsg() explaining.
 */
TK_API struct tk_dat *tk_dat_open(const char *path);

/**
 * tk_dat_open_fd() - same on an open descriptor
 * @fd:   seekable descriptor; not closed by tk_dat_close()
 * @name: used in messages
 */
TK_API struct tk_dat *tk_dat_open_fd(int fd, const char *name);

/** How tk_dat_open_with() treats damage; zero-initialise with TK_OPTS(). */
struct tk_dat_open_opts {
	size_t sz; /* sizeof(struct tk_dat_open_opts): declare it with TK_OPTS() */
	/*
	 * false (the default): salvage. Metadata that parses is used and a
	 * damaged part (an option, an OPTIONS or STRINGS section, a metadata
	 * section, a BUFFER's CPU table entry) is skipped; each CPU's pages are
	 * read up to the damage and after it (a page whose header does not fit
	 * is skipped, a page whose records do not decode keeps the records
	 * before the bad one, a chunk that does not decompress loses that chunk
	 * only), and a truncated file is read up to its last complete page.
	 * Each damaged region is recorded (tk_dat_damage_get()) and nothing
	 * fails for it. true: the first damage is an error, as tk_dat_open()
	 * and the readers report it.
	 */
	bool strict;
};

/**
 * tk_dat_open_with() - open a .dat file, salvaging damage unless told not to
 * @path: file to read
 * @opts: NULL for the defaults (salvage)
 *
 * Like tk_dat_open(), but in salvage mode (the default) damage found at
 * open and later by the file's per-CPU readers, merges and reports is
 * recorded as a list of regions instead of failing. A file whose header,
 * v6 metadata lengths or CPU layout cannot be read at all still fails.
 * Context: blocking I/O.
 * Return: as tk_dat_open(); also EINVAL/E2BIG for a bad @opts.
 */
TK_API struct tk_dat *tk_dat_open_with(const char *path, const struct tk_dat_open_opts *opts);

/** tk_dat_open_fd_with() - same on an open descriptor (not closed by close). */
TK_API struct tk_dat *tk_dat_open_fd_with(int fd, const char *name,
					  const struct tk_dat_open_opts *opts);

/** One damaged region of a file read in salvage mode. */
struct tk_dat_damage {
	uint64_t offset;     /* file offset where the damage starts */
	uint64_t skipped;    /* bytes passed over (0 when nothing could be measured) */
	int64_t events_lost; /* events lost with it, or -1 when unknown */
	const char *what;    /* what is wrong, without file name or offset;
				borrowed until tk_dat_close() */
};

/**
 * tk_dat_damage_count() - damaged regions found so far
 *
 * The list grows while the file is read: open adds the metadata's damage,
 * per-CPU readers add their pages' (each region once, however often it is
 * read). A file opened with strict set never has any.
 * Context: safe while other threads read @dat with their own readers.
 * Return: the number of regions.
 */
TK_API size_t tk_dat_damage_count(const struct tk_dat *dat);

/**
 * tk_dat_damage_get() - one damaged region, in the order found
 * @index: below tk_dat_damage_count()
 * @out:   receives the region
 * Context: as tk_dat_damage_count().
 * Return: 0, or -ERANGE for a bad @index.
 */
TK_API int tk_dat_damage_get(const struct tk_dat *dat, size_t index, struct tk_dat_damage *out);

/**
 * tk_dat_check() - read a whole file: every buffer, page and record
 * @events: optional, receives the number of records read
 *
 * Every CPU's pages are read and every record on them decoded; latency
 * text is decompressed. In salvage mode damage goes to the damage list
 * (the file is intact when tk_dat_damage_count() stays 0); with strict
 * set, the first damage is the error.
 * Context: blocking I/O.
 * Return: 0, or a negative errno (-EBADMSG in strict mode, read errors,
 * -ENOMEM) with tk_errmsg() naming file and offset.
 */
TK_API int tk_dat_check(struct tk_dat *dat, uint64_t *events);

/** tk_dat_close() - free a reader; NULL is accepted. */
TK_API void tk_dat_close(struct tk_dat *dat);

/** tk_dat_get_info() - header facts; borrowed until close. */
TK_API const struct tk_dat_info *tk_dat_get_info(const struct tk_dat *dat);

/** Sections in file order. */
TK_API size_t tk_dat_section_count(const struct tk_dat *dat);
TK_API const struct tk_dat_section *tk_dat_section_get(const struct tk_dat *dat, size_t index);

/** Options in file order, DONE entries included. */
TK_API size_t tk_dat_option_count(const struct tk_dat *dat);
TK_API const struct tk_dat_option *tk_dat_option_get(const struct tk_dat *dat, size_t index);

/**
 * tk_dat_option_describe() - an option's payload decoded as text
 * @dat: the reader the option came from (for byte order and version)
 * @o:   an option of @dat
 * @buf: receives the text, NUL-terminated and cut to fit; may be NULL when
 *       @cap is 0
 * @cap: bytes at @buf
 *
 * The text is " key=value" fields, each with a leading space: " cpus=2",
 * " value=\"Linux ...\"", " section=0x1000 name=\"inst\" clock=\"local\"
 * page_size=4096 cpus=2"; nothing for ids it does not know; " (malformed)"
 * when the payload is too short for its id. Strings are quoted with control
 * and non-ASCII bytes escaped.
 * Context: any.
 * Return: the text's length without the NUL, as snprintf() counts it (a
 * result >= @cap means it was cut).
 */
TK_API size_t tk_dat_option_describe(const struct tk_dat *dat, const struct tk_dat_option *o,
				     char *buf, size_t cap);

/** Buffers: the top one first when present, then instances in file order. */
TK_API size_t tk_dat_buffer_count(const struct tk_dat *dat);
TK_API const struct tk_dat_buffer *tk_dat_buffer_get(const struct tk_dat *dat, size_t index);

/**
 * tk_dat_metadata() - uncompressed body of a metadata section
 * @id: 16..21 (HEADER_INFO .. CMDLINES)
 * @body, @len: receive the body, borrowed until close; its layout is the
 *   v7 body layout (identical to the v6 sequential part)
 *
 * Return: 0, or -ENOENT when the file has no such section.
 */
TK_API int tk_dat_metadata(const struct tk_dat *dat, uint16_t id, const void **body, uint64_t *len);

/* A piece of text from the metadata; the one text type of the library. */
#define tk_dat_text tk_text

/*
 * Parsed views of the metadata (all borrowed until close). Each returns 0
 * or -ENOENT when the file lacks the part.
 */
TK_API int tk_dat_header_page(const struct tk_dat *dat, struct tk_dat_text *text);
TK_API int tk_dat_header_event(const struct tk_dat *dat, struct tk_dat_text *text);
TK_API size_t tk_dat_ftrace_format_count(const struct tk_dat *dat);
TK_API int tk_dat_ftrace_format(const struct tk_dat *dat, size_t index, struct tk_dat_text *text);
TK_API size_t tk_dat_system_count(const struct tk_dat *dat);
TK_API const char *tk_dat_system_name(const struct tk_dat *dat, size_t system);
TK_API size_t tk_dat_system_format_count(const struct tk_dat *dat, size_t system);
TK_API int tk_dat_system_format(const struct tk_dat *dat, size_t system, size_t index,
				struct tk_dat_text *text);
TK_API int tk_dat_kallsyms(const struct tk_dat *dat, struct tk_dat_text *text);
TK_API int tk_dat_printk(const struct tk_dat *dat, struct tk_dat_text *text);
TK_API int tk_dat_cmdlines(const struct tk_dat *dat, struct tk_dat_text *text);

/**
 * tk_dat_get_tracedata() - the metadata sections as one tracedata
 *
 * The same texts as the views above, in the model perf.data shares
 * (tracekit/tracedata.h): tk_tracedata_encode_perf() turns them into a
 * TRACING_DATA blob. Its layout (byte order, long and page size) is the
 * file header's.
 * Context: read-only; safe from several threads while nobody closes @dat.
 * Return: borrowed until tk_dat_close(); never NULL.
 */
TK_API const struct tk_tracedata *tk_dat_get_tracedata(const struct tk_dat *dat);

/**
 * tk_dat_latency_text() - the text of a latency (BUFFER_TEXT or v6
 * "latency") buffer, decompressed
 * @buffer: index of a buffer with latency_text set
 * @text: receives a malloc'ed copy the caller frees with free(text->data)
 * Return: 0, -EINVAL when the buffer is not a text buffer, -EBADMSG, -ENOMEM.
 */
TK_API int tk_dat_latency_text(struct tk_dat *dat, size_t buffer, struct tk_dat_text *text);

/**
 * tk_dat_timestamp() - convert a raw ring-buffer timestamp to the time
 * trace-cmd report shows (ns): TSC2NSEC mult/shift, then + DATE*1000 and
 * OFFSET when present.
 */
TK_API uint64_t tk_dat_timestamp(const struct tk_dat *dat, uint64_t raw);

/**
 * tk_dat_host_time() - a guest file's raw time on CPU @cpu in the host's
 * raw time, as its TIME_SHIFT option says (trace-cmd 3.4's correction)
 * @dat: the guest file
 * @cpu: the CPU id the record was recorded on
 * @raw: the ring buffer's time
 *
 * Apply before tk_dat_timestamp(), to the top buffer's records only
 * (trace-cmd does not correct buffer instances). @raw itself when the
 * file has no TIME_SHIFT, or no samples for @cpu; see
 * tk_dat_time_shift_apply().
 * Context: read-only; safe from several threads.
 * Return: the corrected raw time.
 */
TK_API uint64_t tk_dat_host_time(const struct tk_dat *dat, uint32_t cpu, uint64_t raw);

/**
 * tk_dat_time_shift_apply() - correct @raw with the samples of one CPU
 * @shift: a TIME_SHIFT, e.g. tk_dat_info.time_shift
 * @cpu:   guest CPU id; past @shift's CPUs, @raw is returned
 * @raw:   guest raw time
 *
 * As trace-cmd 3.4 corrects (the samples are sorted already): one sample
 * adds its offset (no scaling); otherwise the
 * pair around @raw is used (the first two before the first sample, the
 * last two after the last), the offset taken from the earlier sample or,
 * with TK_DAT_TSYNC_INTERPOLATE, interpolated linearly (rounded to
 * nearest), and the result is ((@raw * scaling) >> fraction) + offset
 * with the earlier sample's scaling and fraction, in 64-bit arithmetic
 * that wraps as trace-cmd's does.
 * Context: pure; any thread.
 * Return: the corrected raw time.
 */
TK_API uint64_t tk_dat_time_shift_apply(const struct tk_dat_time_shift *shift, uint32_t cpu,
					uint64_t raw);

/* -------------------------------------------------------- per-CPU reader */

struct tk_dat_cpu_reader;

/**
 * tk_dat_cpu_reader_new() - stream the pages of one CPU of one buffer
 * @buffer:    index into the buffers
 * @cpu_index: index into that buffer's cpus[] (not the CPU id)
 *
 * Reads in blocks of many pages (uncompressed) or one chunk at a time
 * (compressed); memory stays bounded whatever the data size. For compressed
 * data it first reads the chunk directory (24 bytes per chunk, no
 * decompression).
 * Context: readers of the same tk_dat may be used from different threads at
 * once; each reader by one thread at a time.
 * Return: handle for tk_dat_cpu_reader_free(), or NULL with errno set.
 */
TK_API struct tk_dat_cpu_reader *tk_dat_cpu_reader_new(struct tk_dat *dat, size_t buffer,
						       size_t cpu_index);

TK_API void tk_dat_cpu_reader_free(struct tk_dat_cpu_reader *reader);

/** Bytes in the uncompressed page stream of this CPU (pages * page size). */
TK_API uint64_t tk_dat_cpu_reader_size(const struct tk_dat_cpu_reader *reader);

/**
 * tk_dat_cpu_reader_next_page() - the next page
 * @page:   receives the page (page_format.page_size bytes), borrowed until
 *          the next call on this reader
 * @offset: optional; receives the page's offset in the uncompressed stream
 *
 * The page header is checked (commit size within the page); records are
 * not: decode them with tk_page_iter_*().
 * Return: 1 with a page, 0 at the end, negative errno on a read error or
 * corrupt chunk (message names file and offset).
 */
TK_API int tk_dat_cpu_reader_next_page(struct tk_dat_cpu_reader *reader, const void **page,
				       uint64_t *offset);

/**
 * tk_dat_cpu_reader_seek() - make the next page the one holding @offset
 * @offset: offset in the uncompressed page stream (< tk_dat_cpu_reader_size)
 *
 * Decompresses at most the one chunk that holds the page.
 * Return: 0, -ERANGE past the end, or a read error.
 */
TK_API int tk_dat_cpu_reader_seek(struct tk_dat_cpu_reader *reader, uint64_t offset);

/**
 * tk_dat_cpu_reader_seek_time() - make the next page the last one whose
 * page timestamp is <= @raw_ts (the first page when none is), so that
 * scanning forward from it finds the first record at or after @raw_ts
 * @raw_ts: raw ring-buffer time (before tk_dat_timestamp())
 *
 * Binary search over page timestamps; for compressed data over chunks,
 * decompressing O(log chunks) of them.
 * Return: 0, or a read error.
 */
TK_API int tk_dat_cpu_reader_seek_time(struct tk_dat_cpu_reader *reader, uint64_t raw_ts);

/* ------------------------------------------------------------ time merge */

struct tk_dat_merge;

/** One record of the merge; @rec.data is borrowed until the next call. */
struct tk_dat_merge_record {
	struct tk_page_record rec; /* raw timestamp, payload */
	uint64_t ts;		   /* tk_dat_timestamp() of rec.timestamp (of
				      tk_dat_host_time() of it in a guest file's
				      top buffer) */
	uint32_t cpu;		   /* the CPU id */
	size_t buffer;		   /* buffer index */
	size_t cpu_index;	   /* index into that buffer's cpus[] */
	int64_t missed;		   /* events lost before it (the first record of a page
				      the kernel flagged): 0, -1 count unknown, or the count */
};

/**
 * tk_dat_merge_new() - iterate the records of some buffers in time order
 * @dat:      an open reader; must outlive the merge
 * @buffers:  buffer indexes to merge, or NULL for every buffer of the file
 *            (latency text buffers have no records and are passed over)
 * @nbuffers: entries in @buffers (ignored when it is NULL)
 *
 * Records of all CPUs of all chosen buffers come out oldest first; equal
 * times keep the order of @buffers, then of each buffer's cpus[], as
 * trace-cmd report orders them. Each CPU's pages stream from the file;
 * memory is one reader per CPU.
 * Context: blocking I/O (the first page of every CPU is read here).
 * Return: handle for tk_dat_merge_free(), or NULL with errno set (EINVAL
 * for a bad index, ENOMEM, read errors) and tk_errmsg() naming file,
 * buffer and CPU.
 */
TK_API struct tk_dat_merge *tk_dat_merge_new(struct tk_dat *dat, const size_t *buffers,
					     size_t nbuffers);

/**
 * tk_dat_merge_next() - the next record in time order
 * @out: receives the record, valid until the next call or free
 * Context: blocking I/O.
 * Return: 1 with a record, 0 at the end, or a negative errno (read errors,
 * corrupt pages: EBADMSG) with tk_errmsg() naming file, buffer and CPU.
 */
TK_API int tk_dat_merge_next(struct tk_dat_merge *m, struct tk_dat_merge_record *out);

/** tk_dat_merge_free() - free a merge; NULL is accepted. */
TK_API void tk_dat_merge_free(struct tk_dat_merge *m);

/* ------------------------------------------------------------------ writer */

struct tk_dat_writer;

struct tk_dat_writer_opts {
	size_t sz;   /* sizeof(struct tk_dat_writer_opts): declare it with TK_OPTS() */
	int version; /* 6 or 7; 0 means 7 */
	enum tk_compression compression; /* v7 only; v6 requires NONE */
	int compression_level;		 /* 0: codec default */
	bool big_endian;		 /* byte order of the file's numbers */
	uint8_t long_size;		 /* header byte; 0 means 8 */
	uint32_t page_size;		 /* top buffer's page size; required */
	uint32_t chunk_pages;		 /* pages per compressed chunk; 0 means 10 */
	/*
	 * Threads that compress CPU data chunks while the caller goes on
	 * (0 or 1: the caller's thread does it). The file is the same byte
	 * for byte; the handle is still used by one thread at a time.
	 */
	uint32_t compress_threads;
	/*
	 * Start the write-back of CPU data as it is written (Linux
	 * sync_file_range(), which does not wait for the disk), for a file
	 * the caller will fsync(): the disk then works while the data is
	 * made, and the fsync() finds little left. false: the page cache
	 * decides when.
	 */
	bool write_behind;
};

/**
 * tk_dat_writer_open() - create (truncate) @path and write the file header
 * Return: handle, or NULL with errno (EINVAL for bad opts, I/O errors).
 */
TK_API struct tk_dat_writer *tk_dat_writer_open(const char *path,
						const struct tk_dat_writer_opts *opts);

/**
 * tk_dat_writer_open_fd() - same on a descriptor positioned at the start
 * of an empty, seekable file; @fd is not closed by the writer.
 */
TK_API struct tk_dat_writer *tk_dat_writer_open_fd(int fd, const char *name,
						   const struct tk_dat_writer_opts *opts);

/**
 * tk_dat_writer_add_metadata() - write a metadata section
 * @id: 16..21; each at most once
 * @body, @len: the uncompressed body in the v7 layout (tracedat.md 2.7);
 *   copied, not validated beyond its size
 *
 * v7: written (compressed when a codec is set) at once. v6: ids must come
 * in increasing order; ids skipped before a later one are written empty.
 * Must come before the first buffer.
 * Return: 0, -EINVAL (order, duplicate, bad id), I/O errors.
 */
TK_API int tk_dat_writer_add_metadata(struct tk_dat_writer *w, uint16_t id, const void *body,
				      uint64_t len);

/**
 * tk_dat_writer_add_tracedata() - write all six metadata sections (16..21)
 * from a tracedata (tracekit/tracedata.h), in the file's byte order
 * @td: a part it lacks is written empty
 *
 * Same rules as tk_dat_writer_add_metadata() for each section.
 * Return: 0, -EINVAL, -ENOMEM, I/O errors.
 */
TK_API int tk_dat_writer_add_tracedata(struct tk_dat_writer *w, const struct tk_tracedata *td);

/**
 * tk_dat_writer_add_option() - add an option the writer does not make itself
 * @id: anything but DONE, BUFFER, 16..22 and BUFFER_TEXT (the writer writes
 *      those); unknown ids are written as given
 * @data, @size: payload, copied
 *
 * v7: options added before the first buffer go in the first OPTIONS
 * section, later ones in the last. v6: must come before the first buffer.
 * Return: 0, -EINVAL, -ENOMEM.
 */
TK_API int tk_dat_writer_add_option(struct tk_dat_writer *w, uint16_t id, const void *data,
				    uint32_t size);

/**
 * tk_dat_writer_declare_buffer() - announce an instance buffer (v6 only)
 *
 * v6 writes its options before any data, so instance names must be known
 * before the first tk_dat_writer_begin_buffer(). v7 needs no declaration
 * (calling it is harmless).
 * Return: 0, -EINVAL after data started.
 */
TK_API int tk_dat_writer_declare_buffer(struct tk_dat_writer *w, const char *name);

/**
 * tk_dat_writer_begin_buffer() - start a buffer's CPU data
 * @name:      "" for the top buffer (in v6 it must come first)
 * @clock:     the buffer's trace clock ("local"), stored in v7
 * @page_size: its pages' size (the top buffer must use opts->page_size)
 * @cpu_count: number of CPUs (v6 table size; v7 lists only CPUs given data)
 * Return: 0, -EINVAL (nesting, order, undeclared v6 instance), I/O errors.
 */
TK_API int tk_dat_writer_begin_buffer(struct tk_dat_writer *w, const char *name, const char *clock,
				      uint32_t page_size, uint32_t cpu_count);

/**
 * tk_dat_writer_begin_cpu() - start one CPU's pages; CPUs in increasing
 * order, each at most once per buffer
 */
TK_API int tk_dat_writer_begin_cpu(struct tk_dat_writer *w, uint32_t cpu);

/**
 * tk_dat_writer_write_pages() - append whole pages to the current CPU
 * @pages, @len: a multiple of the buffer's page size; written (or
 *   compressed into chunks) before return, except at most one partial
 *   chunk kept until the chunk fills or the CPU ends
 * Return: 0, -EINVAL for a partial page, I/O errors (-ENOSPC ...).
 */
TK_API int tk_dat_writer_write_pages(struct tk_dat_writer *w, const void *pages, uint64_t len);

/** tk_dat_writer_end_cpu() - flush and close the current CPU's data. */
TK_API int tk_dat_writer_end_cpu(struct tk_dat_writer *w);

/** tk_dat_writer_end_buffer() - close the current buffer. */
TK_API int tk_dat_writer_end_buffer(struct tk_dat_writer *w);

/**
 * tk_dat_writer_add_latency_text() - add a latency (text) buffer
 * v7: a BUFFER_TEXT section and option; v6: the "latency" form, only as
 * the file's sole data. Must not be inside a buffer.
 */
TK_API int tk_dat_writer_add_latency_text(struct tk_dat_writer *w, const char *name,
					  const char *clock, const void *text, uint64_t len);

/**
 * tk_dat_writer_finish() - write the closing options, strings and patches
 *
 * The file is complete and valid only after this returns 0.
 * Return: 0 or a negative errno (I/O errors, -EINVAL when a buffer or CPU
 * is still open).
 */
TK_API int tk_dat_writer_finish(struct tk_dat_writer *w);

/** tk_dat_writer_close() - free the writer (closes the file it opened). */
TK_API void tk_dat_writer_close(struct tk_dat_writer *w);

#ifdef __cplusplus
}
#endif
#endif
