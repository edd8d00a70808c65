// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for ksyms-lazy (kernel symbols from a kallsyms text, one
 * symbol group at a time), differential: for every address a line of the
 * input names, and its neighbours, tk_ksyms_lazy_lookup() must give the
 * name and offset tk_elf_symtab_lookup() gives on the whole table
 * tk_elf_symtab_new_kallsyms() makes of the same text; both must accept
 * and reject the same texts (a text whose ranges overlap it leaves to the
 * whole table: ENOTSUP). A difference aborts.
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
	tk_elf_symtab_free(st);
	tk_ksyms_lazy_free(k);
	free(text);
	return 0;
}
