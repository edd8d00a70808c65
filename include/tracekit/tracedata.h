/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tracedata: the tracing metadata as one object.
 *
 * The kernel describes its trace events with a handful of texts: the page
 * header (header_page), the event header (header_event), one format per
 * ftrace event and per event of each other system, kallsyms, the printk
 * formats and the saved command lines. A trace-cmd .dat stores them as
 * metadata sections 16..21, perf.data as its TRACING_DATA feature; both
 * hold the same texts in nearly the same framing. struct tk_tracedata is
 * that content once, with one codec per container and one gatherer that
 * reads it from tracefs. The .dat and perf.data readers hand theirs out
 * (tk_dat_get_tracedata(), tk_perfdata_get_tracedata()), so a converter
 * moves the metadata from one container to the other without parsing it.
 */
#ifndef TRACEKIT_TRACEDATA_H
#define TRACEKIT_TRACEDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_tracefs;
struct tk_tracedata;

/** Which parts a tracedata holds; see tk_tracedata_parts(). */
enum tk_tracedata_part {
	TK_TRACEDATA_HEADERS = 1 << 0,	/* header_page and header_event (.dat section 16) */
	TK_TRACEDATA_FTRACE = 1 << 1,	/* ftrace event formats (17) */
	TK_TRACEDATA_EVENTS = 1 << 2,	/* event formats by system (18) */
	TK_TRACEDATA_KALLSYMS = 1 << 3, /* (19) */
	TK_TRACEDATA_PRINTK = 1 << 4,	/* (20) */
	TK_TRACEDATA_CMDLINES = 1 << 5, /* (21) */
};

/**
 * tk_tracedata_new() - an empty tracedata
 *
 * Its layout starts as this machine's byte order and sizeof(long), with
 * page size 0 until tk_tracedata_set_layout() or a gatherer sets it. It
 * reads nothing from the machine.
 * Context: any thread.
 * Return: handle for tk_tracedata_free(), or NULL with errno ENOMEM.
 */
TK_API struct tk_tracedata *tk_tracedata_new(void);

/** tk_tracedata_free() - free it and every text it owns; NULL is accepted. */
TK_API void tk_tracedata_free(struct tk_tracedata *td);

/**
 * tk_tracedata_parts() - the parts present (set, gathered or decoded)
 * Return: a mask of enum tk_tracedata_part.
 */
TK_API unsigned int tk_tracedata_parts(const struct tk_tracedata *td);

/**
 * tk_tracedata_set_layout() - byte order, long size and page size of the
 * kernel the texts describe (perf.data's TRACING_DATA stores them; a .dat
 * keeps them in its file header)
 * @long_size: 4 or 8
 * Return: 0, -EINVAL.
 */
TK_API int tk_tracedata_set_layout(struct tk_tracedata *td, bool big_endian, uint8_t long_size,
				   uint32_t page_size);

/** tk_tracedata_layout() - read them back; any pointer may be NULL. */
TK_API void tk_tracedata_layout(const struct tk_tracedata *td, bool *big_endian, uint8_t *long_size,
				uint32_t *page_size);

/*
 * Adders. Each copies @data (@len bytes, no NUL needed) and marks its part
 * present; setting a single text again replaces it. Formats keep their
 * order. tk_tracedata_add_format() puts the format in the group of
 * @system, creating the group (after the existing ones) when it is new;
 * tk_tracedata_add_system() creates a group, even an empty one.
 * Return: 0, -EINVAL (empty system name, or "ftrace", whose formats go
 * through tk_tracedata_add_ftrace_format()), -ENOMEM.
 */
TK_API int tk_tracedata_set_header_page(struct tk_tracedata *td, const void *data, uint64_t len);
TK_API int tk_tracedata_set_header_event(struct tk_tracedata *td, const void *data, uint64_t len);
TK_API int tk_tracedata_add_ftrace_format(struct tk_tracedata *td, const void *data, uint64_t len);
TK_API int tk_tracedata_add_system(struct tk_tracedata *td, const char *system);
TK_API int tk_tracedata_add_format(struct tk_tracedata *td, const char *system, const void *data,
				   uint64_t len);
TK_API int tk_tracedata_set_kallsyms(struct tk_tracedata *td, const void *data, uint64_t len);
TK_API int tk_tracedata_set_printk(struct tk_tracedata *td, const void *data, uint64_t len);
TK_API int tk_tracedata_set_cmdlines(struct tk_tracedata *td, const void *data, uint64_t len);

/*
 * Getters. Texts are borrowed until tk_tracedata_free() (or, for a reader's
 * tracedata, until the reader closes). The single texts return 0, or
 * -ENOENT when their part is absent (no message: absence is ordinary).
 */
TK_API int tk_tracedata_header_page(const struct tk_tracedata *td, struct tk_text *text);
TK_API int tk_tracedata_header_event(const struct tk_tracedata *td, struct tk_text *text);
TK_API int tk_tracedata_kallsyms(const struct tk_tracedata *td, struct tk_text *text);
TK_API int tk_tracedata_printk(const struct tk_tracedata *td, struct tk_text *text);
TK_API int tk_tracedata_cmdlines(const struct tk_tracedata *td, struct tk_text *text);

/** The ftrace formats; tk_tracedata_ftrace_format() returns 0 or -ENOENT past the end. */
TK_API size_t tk_tracedata_ftrace_count(const struct tk_tracedata *td);
TK_API int tk_tracedata_ftrace_format(const struct tk_tracedata *td, size_t index,
				      struct tk_text *text);

/**
 * The systems, in stored order, and their formats. A decoded file may name
 * one system twice; it then has two groups. tk_tracedata_system_name()
 * returns NULL past the end; tk_tracedata_system_format() 0 or -ENOENT.
 */
TK_API size_t tk_tracedata_system_count(const struct tk_tracedata *td);
TK_API const char *tk_tracedata_system_name(const struct tk_tracedata *td, size_t system);
TK_API size_t tk_tracedata_system_format_count(const struct tk_tracedata *td, size_t system);
TK_API int tk_tracedata_system_format(const struct tk_tracedata *td, size_t system, size_t index,
				      struct tk_text *text);

/**
 * tk_tracedata_format() - every format in one sequence: the ftrace ones
 * ("ftrace"), then each system's in order
 * @system: receives the system name, borrowed; may be NULL
 * Return: 0, -ENOENT past the end (tk_tracedata_format_count()).
 */
TK_API size_t tk_tracedata_format_count(const struct tk_tracedata *td);
TK_API int tk_tracedata_format(const struct tk_tracedata *td, size_t index, const char **system,
			       struct tk_text *text);

/**
 * tk_tracedata_decode_dat_section() - read a .dat metadata section body
 * @id:   16..21 (TK_DAT_SECTION_HEADER_INFO .. TK_DAT_SECTION_CMDLINES)
 * @body, @len: the uncompressed body (v7 layout, which is the v6 part's);
 *        the texts point into it, so it must outlive @td
 * @big_endian: the file's byte order
 *
 * The part is replaced (a system group list is replaced whole).
 * Context: any thread.
 * Return: 0, -EINVAL (@id), -EBADMSG (the message names the offset in
 * @body and what did not fit), -ENOMEM.
 */
TK_API int tk_tracedata_decode_dat_section(struct tk_tracedata *td, uint16_t id, const void *body,
					   uint64_t len, bool big_endian);

/**
 * tk_tracedata_encode_dat_section() - make a .dat metadata section body
 * @id: 16..21; a part that is absent is encoded empty
 * @big_endian: byte order of the numbers
 * @body, @len: receive a malloc'ed body the caller frees
 * Return: 0, -EINVAL (@id, or kallsyms/printk formats of 4 GiB or more,
 * which the layout's u32 size cannot hold), -ENOMEM.
 */
TK_API int tk_tracedata_encode_dat_section(const struct tk_tracedata *td, uint16_t id,
					   bool big_endian, void **body, uint64_t *len);

/**
 * tk_tracedata_decode_perf() - read a perf.data TRACING_DATA blob
 * @blob, @len: the blob; texts point into it, so it must outlive @td
 *
 * Sets the layout from the blob and every part it holds (version 0.5
 * blobs have no command lines).
 * Return: 0, -EBADMSG (the message names the offset in @blob), -ENOMEM.
 */
TK_API int tk_tracedata_decode_perf(struct tk_tracedata *td, const void *blob, uint64_t len);

/**
 * tk_tracedata_encode_perf() - make a TRACING_DATA blob (version 0.6) in
 * the tracedata's byte order, with its long and page size
 * @blob, @len: receive a malloc'ed blob the caller frees
 * Return: 0, -EINVAL (a text too long for the layout), -ENOMEM.
 */
TK_API int tk_tracedata_encode_perf(const struct tk_tracedata *td, void **blob, uint64_t *len);

/*
 * Gathering from tracefs. @tfs is the instance whose header_page,
 * header_event and formats are read; NULL reads the top level. printk
 * formats and saved command lines exist at the top level only; kallsyms is
 * /proc/kallsyms. The layout facts are set to this machine's.
 * Context: blocking file I/O.
 * Return: 0, tracefs errors (-ENOENT for an unknown system or event, with
 * the file named), -EFBIG (kallsyms or printk formats of 4 GiB or more),
 * -ENOMEM.
 */
TK_API int tk_tracedata_gather_headers(struct tk_tracedata *td, const struct tk_tracefs *tfs);
/* Every event of @system, in name order ("ftrace": the ftrace formats). */
TK_API int tk_tracedata_gather_system(struct tk_tracedata *td, const struct tk_tracefs *tfs,
				      const char *system);
TK_API int tk_tracedata_gather_event(struct tk_tracedata *td, const struct tk_tracefs *tfs,
				     const char *system, const char *event);
TK_API int tk_tracedata_gather_kallsyms(struct tk_tracedata *td);
TK_API int tk_tracedata_gather_printk(struct tk_tracedata *td);
TK_API int tk_tracedata_gather_cmdlines(struct tk_tracedata *td);

/**
 * tk_tracedata_gather() - what perf stores for a set of events: the
 * headers, the formats of @events ("system:event"; ftrace ones first,
 * then one group per system in order of first appearance), the printk
 * formats and command lines, and no kallsyms
 * Return: as the gatherers above, and -EINVAL for a name that is not
 * "system:event".
 */
TK_API int tk_tracedata_gather(struct tk_tracedata *td, const struct tk_tracefs *tfs,
			       const char *const *events, size_t nr);

#ifdef __cplusplus
}
#endif
#endif
