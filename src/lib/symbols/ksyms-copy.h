/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * ksyms-copy: the kernel image's own lines of /proc/kallsyms, kept in the
 * build-id cache by kernel build id (ksyms-copy.c says when a copy is
 * used). Private to the library: the symbolizer's kernel DSO is its user.
 */
#ifndef TRACEKIT_KSYMS_COPY_H
#define TRACEKIT_KSYMS_COPY_H

#include <stdbool.h>
#include <stddef.h>

struct tk_ksyms_lazy;

/*
 * tk_ksyms_copy_path() - where the copy for the kernel of build id @bid
 * (hex) lives in @cache_dir (malloc()ed), or NULL for a @bid that is no
 * file name. Its readers may keep files of their own beside it.
 */
char *tk_ksyms_copy_path(const char *cache_dir, const char *bid);

/*
 * tk_ksyms_copy_get() - the copy for the running kernel of build id @bid
 * (hex) in @cache_dir, when it is the beginning of what /proc/kallsyms
 * lists now, mapped (*@map, *@map_len bytes; the caller unmaps it, or
 * hands it to tk_ksyms_lazy_adopt()): its text (*@text, *@len bytes) and
 * its index (*@lines, *@n entries), inside the mapping. 0, or -1 (no
 * copy, a damaged one, another load address, a reader who sees other
 * addresses, not x86-64).
 */
int tk_ksyms_copy_get(const char *cache_dir, const char *bid, const char **text, size_t *len,
		      const void **lines, size_t *n, void **map, size_t *map_len);

/*
 * tk_ksyms_copy_put() - keep the kernel image's lines of @text (@len bytes
 * just read from /proc/kallsyms of the running kernel of build id @bid),
 * with their part of @k (the index of @text), in @cache_dir, which must
 * exist. Failures are silent: only the next report is slower.
 */
void tk_ksyms_copy_put(const char *cache_dir, const char *bid, const char *text, size_t len,
		       const struct tk_ksyms_lazy *k);

/*
 * tk_ksyms_past_image_lacks() - whether @path (/proc/kallsyms) lists @name
 * on none of its lines past the kernel image's: true only when no module
 * is loaded (/proc/modules empty, or absent: a kernel without modules)
 * and @name is not one the kernel makes up for a BPF program, trampoline
 * or dispatcher ("bpf_..."), an ftrace trampoline ("ftrace_...") or a
 * kprobe page ("kprobe_..."), the only other lines there. False when
 * that cannot be told: the caller reads the whole text.
 */
bool tk_ksyms_past_image_lacks(const char *path, const char *name);

#endif
