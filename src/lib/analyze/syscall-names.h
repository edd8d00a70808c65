/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * syscall-names: number -> name tables per architecture, generated at build
 * time from the kernel's uapi headers by gen-syscall-names.sh (our own
 * tables: perf's are not copied). Private to the library.
 */
#ifndef TRACEKIT_ANALYZE_SYSCALL_NAMES_H
#define TRACEKIT_ANALYZE_SYSCALL_NAMES_H

#include <stddef.h>

struct tk_syscall_table {
	const char *arch;	  /* "x86_64", "i386"; NULL ends the list */
	const char *const *names; /* names[nr], NULL for a hole */
	size_t count;
};

extern const struct tk_syscall_table tk_syscall_tables[];

#endif
