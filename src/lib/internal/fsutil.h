/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Small file-system helpers private to the library: whole-file reads and
 * atomic replacement, directory trees made and removed, and the one
 * pread() loop. Each failing call records a message naming the path (see
 * error.h) and returns a negative errno, except where noted.
 */
#ifndef TRACEKIT_INTERNAL_FSUTIL_H
#define TRACEKIT_INTERNAL_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Record "@what: strerror(@err)" as the last error; returns -@err. */
int tk_fail_errno(int err, const char *what);

/* mkdir -p, mode 0755. */
int tk_mkdir_p(const char *path);

/* rm -rf without following symbolic links; a missing @path is no error. */
int tk_rm_rf(const char *path);

/* Remove empty directories from @path's parent up to (not including) @stop. Never fails. */
void tk_rmdir_parents(const char *path, const char *stop);

/* write() all of @data, retrying on EINTR; returns -errno and records no message. */
int tk_write_all(int fd, const void *data, size_t len);

/*
 * pread() @len bytes at @off, retrying on EINTR and short reads. Returns
 * @len, fewer when the file ends first (the count read), or -errno; it
 * records no message, so that the caller names its file and offset.
 */
int64_t tk_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* Replace @path with @data through a temporary file and rename(). */
int tk_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/*
 * The whole of @path (any size, also /proc files whose size stat() does
 * not tell) in a malloc'ed buffer with a NUL after its @len bytes.
 */
int tk_read_file(const char *path, char **data, size_t *len);

/* Copy @src to @dst (atomically, keeping @src's permission bits). */
int tk_copy_file(const char *src, const char *dst);

/* Hard-link @src as @dst, or copy it when a link cannot be made; an existing @dst stays. */
int tk_link_or_copy(const char *src, const char *dst);

#endif
