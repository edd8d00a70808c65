// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the elf module: the note parsers (build id, SDT) and the
 * symbol-table reader.
 *
 * Input: an ELF image, opened with tk_elf_open_mem(); its build id, both
 * symbol tables, its SDT notes and a sorted symbol table are read, and a
 * lookup is done at each symbol's address; a relocatable image (a kernel
 * module) also gets its module table, looked up at each symbol's value
 * plus its .text offset. The same bytes are also fed to
 * the raw note parsers directly (both byte orders and both ELF classes),
 * so a corpus of bare note areas exercises them without an ELF around.
 * An input starting with gzip's or xz's magic is also inflated as a
 * compressed kernel module (kmod-file.h) and, when that works, the image
 * goes through all of the above.
 *
 * Oracle: no crash, no sanitizer report; every failure sets tk_errmsg();
 * an SDT note's strings lie inside the input; a symbol found by lookup
 * covers the address looked up.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/elf.h>

#include "elf-internal.h"
#include "kmod-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct bounds {
	const uint8_t *lo, *hi;
};

static int check_note(const struct tk_elf_sdt *note, void *ctx)
{
	const struct bounds *b = ctx;
	const uint8_t *p = (const uint8_t *)note->provider;

	/* A note without an arguments string gets a static "". */
	if (p < b->lo || p >= b->hi ||
	    (note->args[0] &&
	     ((const uint8_t *)note->args < b->lo || (const uint8_t *)note->args >= b->hi)))
		abort();
	return 0;
}

static void check_error(int r)
{
	if (r < 0 && !tk_errmsg()[0])
		abort();
}

static void fuzz_image(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum tk_kmod_comp comp = TK_KMOD_PLAIN;
	size_t image_len;
	void *image;
	int r;

	fuzz_image(data, size);
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b)
		comp = TK_KMOD_GZ;
	else if (size >= 6 && !memcmp(data,
				      "\xfd"
				      "7zXZ",
				      6))
		comp = TK_KMOD_XZ;
	if (comp == TK_KMOD_PLAIN)
		return 0;
	r = tk_kmod_inflate(data, size, comp, "fuzz", &image, &image_len);
	check_error(r);
	if (r == 0) {
		if (image_len > TK_KMOD_MAX_IMAGE)
			abort();
		fuzz_image(image, image_len);
		free(image);
	}
	return 0;
}

static void fuzz_image(const uint8_t *data, size_t size)
{
	const struct tk_elf_symbol *syms;
	const struct tk_elf_sdt *notes;
	uint8_t id[TK_BUILD_ID_MAX];
	struct bounds b = {data, data + size};
	struct tk_elf_symtab *st;
	struct tk_elf *elf;
	size_t n;

	for (int i = 0; i < 4; i++)
		check_error(tk_elf_sdt_parse(data, size, i & 1, i & 2, "fuzz", 0, check_note, &b));
	check_error(tk_elf_notes_build_id(data, size, false, "fuzz", 0, id, sizeof(id)));
	check_error(tk_elf_notes_build_id(data, size, true, "fuzz", 0, id, sizeof(id)));

	elf = tk_elf_open_mem(data, size, "fuzz");
	if (!elf)
		return;
	check_error(tk_elf_build_id(elf, id, sizeof(id)));
	check_error(tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n));
	check_error(tk_elf_symbols(elf, TK_ELF_DYNSYM, &syms, &n));
	check_error(tk_elf_sdt_notes(elf, &notes, &n));
	st = tk_elf_symtab_new_elf(elf);
	if (st && tk_elf_symbols(elf, TK_ELF_ANY, &syms, &n) == 0) {
		for (size_t i = 0; i < n && i < 4096; i++) {
			uint64_t off, start;
			const char *name = tk_elf_symtab_lookup(st, syms[i].value, &off, &start);

			if (name && (start > syms[i].value || syms[i].value - start != off))
				abort();
		}
	}
	tk_elf_symtab_free(st);

	uint64_t text_off;

	st = tk_elf_symtab_new_kmodule(elf, &text_off);
	if (!st && !tk_errmsg()[0])
		abort();
	if (st && tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n) == 0) {
		for (size_t i = 0; i < n && i < 4096; i++) {
			uint64_t off, start, key = syms[i].value + text_off;
			const char *name = tk_elf_symtab_lookup(st, key, &off, &start);

			if (name && (start > key || key - start != off))
				abort();
		}
	}
	tk_elf_symtab_free(st);
	tk_elf_close(elf);
}
