/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * filekind: which of the formats tracekit reads a file is, from its first
 * bytes, so that every command tells them apart the same way.
 */
#ifndef TRACEKIT_FILEKIND_H
#define TRACEKIT_FILEKIND_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tk_filekind {
	TK_FILE_OTHER = 0,	   /* none of the below (or too short to tell) */
	TK_FILE_DAT = 1,	   /* trace-cmd .dat ("\x17\x08\x44tracing") */
	TK_FILE_PERFDATA = 2,	   /* perf.data, file mode ("PERFILE2", header size > 16) */
	TK_FILE_PERFDATA_PIPE = 3, /* perf.data, pipe mode ("PERFILE2", header size 16) */
};

/** The number of leading bytes tk_filekind_of_header() needs to tell every kind. */
#define TK_FILEKIND_HEADER_BYTES 16

/**
 * tk_filekind_of_header() - the kind of a file from its first bytes
 * @buf: the file's first bytes
 * @len: how many (TK_FILEKIND_HEADER_BYTES suffice; fewer may give OTHER)
 * Context: any.
 * Return: the kind.
 */
TK_API enum tk_filekind tk_filekind_of_header(const void *buf, size_t len);

/**
 * tk_filekind_of() - the kind of the file at @path, read from its start
 * @path: a file ("-" and unreadable files give TK_FILE_OTHER)
 * Context: blocking I/O (one small read).
 * Return: the kind; TK_FILE_OTHER with errno set when it cannot be read.
 */
TK_API enum tk_filekind tk_filekind_of(const char *path);

#ifdef __cplusplus
}
#endif
#endif
