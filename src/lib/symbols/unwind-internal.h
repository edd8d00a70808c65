/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * unwind: the user-space frames of a perf sample recorded with
 * --call-graph dwarf (PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER),
 * from its registers and stack copy and the call frame information of the
 * mapped binaries; and the functions inlined at a frame's address. Private
 * to the library: perfdata-report.c and the .pftrace export
 * (pftrace-perf.c) are its users.
 */
#ifndef TRACEKIT_UNWIND_INTERNAL_H
#define TRACEKIT_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_symbolizer;
struct tk_unwind;

/* A mapping into the sampled process, as its MMAP/MMAP2 record says. */
struct tk_unwind_map {
	uint64_t start, end, pgoff;
	const char *path;
	const char *build_id; /* hex as recorded, or NULL / "" when none was */
	bool anon;	      /* not a binary's file: anonymous memory, [stack], ... */
};

/*
 * The map of the sampled process that holds @addr, of any kind, or NULL
 * when none does. Called during tk_unwind_sample(); the map is only read
 * during the call.
 */
typedef const struct tk_unwind_map *(*tk_unwind_find_map_fn)(void *ctx, uint64_t addr);

/*
 * The lowest start of the sampled process's maps of the file @path with
 * the recorded build id @build_id ("" when none), as struct tk_unwind_map
 * names them, or 0 when none is. perf places a binary's .eh_frame_hdr from
 * there (see unwind.c); stale maps count: a process keeps the maps of the
 * program it exec'd from until new ones overlap them, in perf as here.
 */
typedef uint64_t (*tk_unwind_file_low_fn)(void *ctx, const char *path, const char *build_id);

/* One sample's user state, pointers into the record (unaligned is fine). */
struct tk_unwind_sample {
	int32_t pid, tid;
	uint64_t maps_gen; /* changes whenever the process's maps change */
	/*
	 * Changes whenever a map is added to the process, beside the others
	 * too (which maps_gen may not count); 0: unknown. @file_low's answer
	 * holds while it and maps_gen stay.
	 */
	uint64_t maps_adds;
	uint64_t regs_abi;  /* PERF_SAMPLE_REGS_ABI_*: only 64 (2) unwinds, on x86-64 */
	uint64_t regs_mask; /* the attr's sample_regs_user */
	uint64_t regs_nr;
	const void *regs;
	uint64_t stack_size; /* bytes of @stack that hold data (the dynamic size) */
	const void *stack;
	/* NULL: each binary is taken as mapped once, where its frame's map puts it */
	tk_unwind_file_low_fn file_low;
};

/*
 * tk_unwind_new() - an unwinder that finds binaries through @sym
 * (build-id cache, --symfs, paths whose build id matches), borrowed until
 * tk_unwind_free(). NULL with errno on failure.
 */
struct tk_unwind *tk_unwind_new(struct tk_symbolizer *sym);

/* tk_unwind_free() - NULL is accepted. */
void tk_unwind_free(struct tk_unwind *uw);

/*
 * tk_unwind_sample() - the user frames of @s, innermost first, into @ips
 * (at most @max): the sampled ip, then each caller's return address - 1
 * (the call instruction, which is what names and inline scopes belong
 * to). Unwinding stops at the stack's end, at a frame it cannot step
 * (no CFI, memory outside the copy) and after a frame whose binary has no
 * file of its recorded build id here (printed as [unknown]).
 * Return: the number of frames (0 when the sample has no usable state),
 * or -ENOMEM.
 */
int tk_unwind_sample(struct tk_unwind *uw, const struct tk_unwind_sample *s,
		     tk_unwind_find_map_fn find, void *ctx, uint64_t *ips, size_t max);

/*
 * tk_unwind_set_fast() - whether tk_unwind_sample() steps frames by its
 * cached CFI rules (the default) or leaves every step to libdwfl; the
 * frames are the same either way (tests compare the two).
 */
void tk_unwind_set_fast(struct tk_unwind *uw, bool on);

/*
 * tk_unwind_inlines() - the names of the functions at @ip (a frame of the
 * last tk_unwind_sample()), innermost inlined one first, the containing
 * function last, from the DWARF of the binary (or its debug file).
 * @names is borrowed until the next call (or tk_unwind_free()).
 * Return: the number of names, 0 when there is no DWARF for @ip.
 */
int tk_unwind_inlines(struct tk_unwind *uw, uint64_t ip, const char *const **names);

#endif
