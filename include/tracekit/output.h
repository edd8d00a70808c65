/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * output: where a command writes a file, without ever destroying what was
 * there.
 *
 * A regular file (or a name that does not exist yet) is replaced
 * atomically: the data goes to a temporary file beside it, renamed over it
 * only once complete and on disk, so the name holds either the old file or
 * the whole new one. A symbolic link is followed and its final target is
 * replaced that way, in the target's own directory; the link stays a link.
 * A character device or a FIFO (-o /dev/null, a pipe to another program),
 * or "-" for standard output, is written through: nothing is unlinked or renamed, and the caller
 * must write a format that streams. A directory, a block device or a socket is refused. Nothing but
 * a regular file is ever unlinked or renamed over.
 */
#ifndef TRACEKIT_OUTPUT_H
#define TRACEKIT_OUTPUT_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_output;

/** How the output is written. */
enum tk_output_kind {
	TK_OUTPUT_REPLACE, /* a temporary file renamed over the target at the end */
	TK_OUTPUT_STREAM,  /* written through: a character device or a FIFO */
};

/**
 * tk_output_open() - prepare to write @path
 * @path:  the name the user gave; "-" is standard output (a duplicate of
 *         descriptor 1, closed by the handle), written through as a stream
 * @input: optional; a file being read at the same time. Writing onto it is
 *         refused (the rename would replace the input while it is read).
 *
 * Follows symbolic links, then creates "<target>.tmp.XXXXXX" beside the
 * target with the target's mode (0666 & ~umask for a new file), or opens a
 * character device or FIFO for writing (this blocks until a FIFO has a
 * reader). A temporary file is synced to disk behind the writer, by a
 * thread of the handle's (fdatasync() every 20 ms until finish or close),
 * so that tk_output_finish() waits on little.
 * Context: blocking; the caller's signal handlers may remove
 * tk_output_temp_path() when the process is interrupted.
 * Return: handle for tk_output_close(), or NULL with errno set: EISDIR, ENOTSUP
 * (block device, socket), EINVAL (the same file as @input), ELOOP, or what
 * creating the file gave; tk_errmsg() names the file.
 */
TK_API struct tk_output *tk_output_open(const char *path, const char *input);

/**
 * tk_output_target_of() - where tk_output_open() would write @path, for a
 * writer that makes its own files beside the target (record's spools)
 * @kind: receives how the target is written
 *
 * Follows links as tk_output_open() does and refuses the same targets; also
 * refuses a target whose directory does not exist, naming it.
 * Return: the target path (malloc'ed, the caller frees it), or NULL with
 * errno set and tk_errmsg().
 */
TK_API char *tk_output_target_of(const char *path, enum tk_output_kind *kind);

/** tk_output_fd() - the descriptor to write to; owned by the handle. */
TK_API int tk_output_fd(const struct tk_output *out);

/** tk_output_kind() - whether the file is replaced or written through. */
TK_API enum tk_output_kind tk_output_kind(const struct tk_output *out);

/**
 * tk_output_temp_path() - the temporary file, for a signal handler to unlink
 * Return: borrowed until close; NULL for a stream or after finish.
 */
TK_API const char *tk_output_temp_path(const struct tk_output *out);

/**
 * tk_output_target() - the path that will hold the data (links resolved)
 * Return: borrowed until close.
 */
TK_API const char *tk_output_target(const struct tk_output *out);

/**
 * tk_output_finish() - make the output final
 * @size: optional; receives the file's size (0 for a stream)
 *
 * Replace: stop the sync-behind thread, fsync, close and rename over the
 * target; a write-back error the thread met fails the finish. Stream: close.
 * Return: 0, or a negative errno with tk_errmsg() naming the file; the
 * temporary file is then removed by tk_output_close().
 */
TK_API int tk_output_finish(struct tk_output *out, uint64_t *size);

/**
 * tk_output_close() - free the handle; a temporary file that was not
 * renamed into place is removed. NULL is accepted.
 */
TK_API void tk_output_close(struct tk_output *out);

#ifdef __cplusplus
}
#endif
#endif
