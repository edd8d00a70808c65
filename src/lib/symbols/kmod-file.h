/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * kmod-file: kernel modules stored compressed (.ko.gz, .ko.xz), opened as
 * their ELF image. Private to the library: the symbolizer (module maps of
 * a perf.data) and the build-id cache (adding and checking such a file)
 * are its users.
 */
#ifndef TRACEKIT_KMOD_FILE_H
#define TRACEKIT_KMOD_FILE_H

#include <tracekit/elf.h>

/* How a module's file is stored, as its name says. */
enum tk_kmod_comp {
	TK_KMOD_PLAIN, /* a .ko, or no module at all */
	TK_KMOD_GZ,    /* a .ko.gz */
	TK_KMOD_XZ,    /* a .ko.xz */
};

/*
 * tk_kmod_compression() - what @name's ending says: ".ko.gz" and ".ko.xz"
 * are compressed modules (the two perf 6.1 reads); anything else, ".ko.zst"
 * included, is TK_KMOD_PLAIN.
 */
enum tk_kmod_comp tk_kmod_compression(const char *name);

/*
 * tk_kmod_elf_open() - open @path as the ELF image of a module stored as
 * @comp says: when the file starts with that codec's magic it is
 * decompressed into memory (at most TK_KMOD_MAX_IMAGE bytes), else it is
 * opened as it is (a module stored uncompressed under a compressed name
 * reads as perf reads it). Return: as tk_elf_open(); a damaged stream is
 * EBADMSG with a message naming the file and the compressed offset.
 */
struct tk_elf *tk_kmod_elf_open(const char *path, enum tk_kmod_comp comp);

/* The largest image tk_kmod_elf_open() inflates: no module comes near it. */
#define TK_KMOD_MAX_IMAGE (512u << 20)

/*
 * tk_kmod_file_build_id() - the build id of tk_kmod_elf_open(@path, @comp)
 * as hex into @hex (TK_BUILD_ID_HEX_MAX bytes). Return: its length, or a
 * negative errno.
 */
int tk_kmod_file_build_id(const char *path, enum tk_kmod_comp comp, char *hex);

/*
 * tk_kmod_inflate() - decompress @len bytes of @comp's stream at @data
 * into a malloc'ed buffer (*@out, *@out_len), at most TK_KMOD_MAX_IMAGE
 * bytes; @name names the input in messages. For the fuzz target and
 * tk_kmod_elf_open(). Return: 0, or a negative errno (EBADMSG: damaged
 * or cut short, the message giving the offset; EFBIG; ENOMEM).
 */
int tk_kmod_inflate(const void *data, size_t len, enum tk_kmod_comp comp, const char *name,
		    void **out, size_t *out_len);

#endif
