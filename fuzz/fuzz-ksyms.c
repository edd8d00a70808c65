// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for ksyms-lazy (kernel symbols from a kallsyms text, one
 * symbol group at a time), differential: for every address a line of the
 * input names, and its neighbours, tk_ksyms_lazy_lookup() must give the
 * name and offset tk_elf_symtab_lookup() gives on the whole table
 * tk_elf_symtab_new_kallsyms() makes of the same text; both must accept
 * and reject the same texts (a text whose ranges overlap it leaves to the
 * whole table: ENOTSUP). A difference aborts. Then the index as the
 * cache's copy stores it (ksyms-copy.c): tk_ksyms_lazy_adopt() of
 * tk_ksyms_lazy_lines() must answer as the parsed index does, and an
 * index made of the input's own bytes must be refused or stay in bounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/elf.h>

#include "fuzz.h"
#include "ksyms-lazy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_elf_symtab *st;
	struct tk_ksyms_lazy *k;
	char *text, *copy;
	size_t i = 0;

	if (size > 65536)
		return 0;
	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	text = malloc(size + 1);
	copy = malloc(size + 1);
	if (!text || !copy) {
		free(text);
		free(copy);
		return 0;
	}
	memcpy(text, data, size);
	memcpy(copy, data, size);
	st = tk_elf_symtab_new_kallsyms(text, size, "fuzz");
	errno = 0;
	k = tk_ksyms_lazy_new(copy, size, "fuzz");
	if (!k)
		free(copy);
	/* One rejects what the other does; overlapping ranges it leaves to the whole table. */
	if (!st != !k && !(st && errno == ENOTSUP))
		abort();
	while (st && k && i < size) {
		const char *line = text + i, *nl = memchr(line, '\n', size - i);
		size_t ll = nl ? (size_t)(nl - line) : size - i;
		uint64_t a = 0;

		i += ll + 1;
		for (size_t c = 0; c < ll && c < 16; c++) {
			char ch = line[c];

			if (ch >= '0' && ch <= '9')
				a = a << 4 | (uint64_t)(ch - '0');
			else if (ch >= 'a' && ch <= 'f')
				a = a << 4 | (uint64_t)(ch - 'a' + 10);
			else
				break;
		}
		for (int d = -2; d <= 2; d++) {
			uint64_t addr = a + (uint64_t)(int64_t)(d * 1000 + (d > 0)), o1 = 0, o2 = 0;
			const char *n1 = tk_elf_symtab_lookup(st, addr, &o1, NULL);
			const char *n2 = tk_ksyms_lazy_lookup(k, addr, &o2);

			if (!n1 != !n2 || (n1 && (strcmp(n1, n2) || o1 != o2)))
				abort();
			sink += o1;
		}
	}
	if (k) {
		void *lines = NULL;
		size_t n = tk_ksyms_lazy_lines(k, size, &lines);
		char *again = malloc(size + 1);
		struct tk_ksyms_lazy *a =
			again && lines
				? tk_ksyms_lazy_adopt(again ? memcpy(again, data, size) : NULL,
						      size, lines, n, "fuzz", NULL, 0)
				: NULL;

		if (!a) {
			free(again);
			free(lines);
			if (errno != ENOMEM)
				abort();
		}
		for (i = 0; a && i < size; i += 7) {
			uint64_t addr = 0, o1 = 0, o2 = 0;
			const char *n1, *n2;

			memcpy(&addr, data + i, size - i < 8 ? size - i : 8);
			n1 = tk_ksyms_lazy_lookup(k, addr, &o1);
			n2 = tk_ksyms_lazy_lookup(a, addr, &o2);
			if (!n1 != !n2 || (n1 && (strcmp(n1, n2) || o1 != o2)))
				abort();
		}
		tk_ksyms_lazy_free(a);
	}
	{
		/* The input's bytes as index entries over its own text. */
		size_t es = tk_ksyms_lazy_line_size(), n = size / es < 64 ? size / es : 64;
		void *lines = malloc(n ? n * es : 1);
		char *t2 = malloc(size + 1);
		struct tk_ksyms_lazy *b = NULL;

		if (lines && t2) {
			memcpy(lines, data, n * es);
			memcpy(t2, data, size);
			b = tk_ksyms_lazy_adopt(t2, size, lines, n, "fuzz", NULL, 0);
		}
		if (b) {
			for (i = 0; i + 8 <= size; i += 8) {
				uint64_t addr, o = 0;

				memcpy(&addr, data + i, 8);
				if (tk_ksyms_lazy_lookup(b, addr, &o))
					sink += o;
			}
			tk_ksyms_lazy_free(b);
		} else {
			free(lines);
			free(t2);
		}
	}
	tk_elf_symtab_free(st);
	tk_ksyms_lazy_free(k);
	free(text);
	return 0;
}
