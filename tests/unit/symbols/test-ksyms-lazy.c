// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * ksyms-lazy names every address as the whole kallsyms table does: the
 * same name and offset from tk_ksyms_lazy_lookup() as from
 * tk_elf_symtab_lookup() on tk_elf_symtab_new_kallsyms() of the same
 * text, at every symbol's start, inside, at its end and between, on a
 * text with aliases, weak and local symbols, skipped types, modules and
 * an unsorted tail, and on this machine's /proc/kallsyms when it shows
 * addresses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/elf.h>

#include "tk-test.h"
#include "fsutil.h"
#include "ksyms-lazy.h"

static const char synthetic[] = "ffffffff81000000 T _text\n"
				"ffffffff81000000 T startup_64\n"
				"ffffffff81000040 t secondary\n"
				"ffffffff81000040 T secondary_alias\n"
				"ffffffff81000040 W weak_alias\n"
				"ffffffff81000100 a absolute_skipped\n"
				"ffffffff81000100 t after_abs\n"
				"0000000000000000 T zero_skipped\n"
				"ffffffff81001000 D data_sym\n"
				"ffffffff81001000 d data_local\n"
				"ffffffff81002000 T last_core\n"
				"ffffffffc0010000 t mod_b_fn\t[mod_b]\n"
				"ffffffffc0000000 t mod_a_fn\t[mod_a]\n"
				"ffffffffc0000000 T mod_a_alias\t[mod_a]\n"
				"ffffffffc0000800 t mod_a_two\t[mod_a]\n"
				"\n"
				"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";

/* Every interesting address of @text's lines: each start, around it, and past the ends. */
static void compare_text(const char *text, size_t len, size_t max_lines)
{
	char *copy = malloc(len + 1);
	struct tk_elf_symtab *st;
	struct tk_ksyms_lazy *k;
	size_t lines = 0, i = 0, checked = 0;

	assert_non_null(copy);
	memcpy(copy, text, len);
	st = tk_elf_symtab_new_kallsyms(text, len, "test");
	assert_non_null(st);
	k = tk_ksyms_lazy_new(copy, len, "test");
	assert_non_null(k);
	while (i < len && lines < max_lines) {
		const char *line = text + i, *nl = memchr(line, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - line) : len - i;
		unsigned long long a;
		const int64_t deltas[] = {-4097, -1, 0, 1, 7, 63, 64, 4095, 4096, 65536};

		i += ll + 1;
		lines++;
		if (sscanf(line, "%llx", &a) != 1)
			continue;
		for (size_t d = 0; d < sizeof(deltas) / sizeof(deltas[0]); d++) {
			uint64_t addr = (uint64_t)a + (uint64_t)deltas[d], o1 = 0, o2 = 0;
			const char *n1 = tk_elf_symtab_lookup(st, addr, &o1, NULL);
			const char *n2 = tk_ksyms_lazy_lookup(k, addr, &o2);

			if (!n1 || !n2) {
				if (n1 != n2)
					fail_msg("%#llx: %s vs %s", (unsigned long long)addr,
						 n1 ? n1 : "(none)", n2 ? n2 : "(none)");
				continue;
			}
			if (strcmp(n1, n2) || o1 != o2)
				fail_msg("%#llx: %s+%#llx vs %s+%#llx", (unsigned long long)addr,
					 n1, (unsigned long long)o1, n2, (unsigned long long)o2);
			checked++;
		}
	}
	assert_true(checked > 0);
	tk_ksyms_lazy_free(k);
	tk_elf_symtab_free(st);
}

static void test_synthetic(void **state)
{
	(void)state;
	compare_text(synthetic, sizeof(synthetic) - 1, SIZE_MAX);
}

static void test_proc_kallsyms(void **state)
{
	char *text;
	size_t len;

	(void)state;
	if (tk_read_file("/proc/kallsyms", &text, &len) || !len ||
	    !strncmp(text, "0000000000000000", 16)) {
		free(len ? text : NULL);
		skip();
	}
	/* The first 4000 lines: every line takes tens of seconds under ASan. */
	compare_text(text, len, 4000);
	free(text);
}

static void test_bad_line(void **state)
{
	char text[] = "ffffffff81000000 T ok\nnot a kallsyms line\n";

	(void)state;
	errno = 0;
	assert_null(tk_ksyms_lazy_new(text, sizeof(text) - 1, "bad"));
	assert_int_equal(errno, EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_proc_kallsyms),
		cmocka_unit_test(test_bad_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
