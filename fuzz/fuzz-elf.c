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
 * goes through all of the above. An image with a build id is also handed
 * to debug-inflate as a debug file (written to /dev/shm, the copy made in
 * a cache directory there and removed after each input, so every input
 * goes through the section rewriting).
 *
 * Oracle: no crash, no sanitizer report; every failure sets tk_errmsg();
 * a copy debug-inflate accepts carries the build id asked for;
 * an SDT note's strings lie inside the input; a symbol found by lookup
 * covers the address looked up.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/elf.h>

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug-inflate.h"
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

static char inflate_dir[64], inflate_in[96];

/* The run's directory in /dev/shm goes with the process (replays run in make check). */
static void inflate_cleanup(void)
{
	char sub[128];

	unlink(inflate_in);
	snprintf(sub, sizeof(sub), "%s/.tk-inflated", inflate_dir);
	rmdir(sub);
	rmdir(inflate_dir);
}

/* @data as a debug file of build id @id (@n bytes) through tk_debug_inflated(). */
static void fuzz_inflate(const uint8_t *data, size_t size, const uint8_t *id, int n)
{
	char *dir = inflate_dir, *in = inflate_in;
	char hex[2 * TK_BUILD_ID_MAX + 1], *copy;
	struct tk_elf *elf;
	uint8_t got[TK_BUILD_ID_MAX];
	FILE *f;

	if (!dir[0]) {
		snprintf(inflate_dir, sizeof(inflate_dir), "/dev/shm/fuzz-elf-%d", (int)getpid());
		snprintf(inflate_in, sizeof(inflate_in), "%s/in.debug", dir);
		if (mkdir(dir, 0700) && errno != EEXIST)
			return;
		atexit(inflate_cleanup);
	}
	f = fopen(in, "wb");
	if (!f)
		return;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return;
	}
	fclose(f);
	for (int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	copy = tk_debug_inflated(dir, in, hex);
	if (!copy)
		return;
	/* What the symbolizer then opens must be an ELF of the build id asked for. */
	elf = tk_elf_open(copy);
	if (!elf || tk_elf_build_id(elf, got, sizeof(got)) != n || memcmp(got, id, (size_t)n))
		abort();
	tk_elf_close(elf);
	unlink(copy);
	free(copy);
}

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
	int idn;

	for (int i = 0; i < 4; i++)
		check_error(tk_elf_sdt_parse(data, size, i & 1, i & 2, "fuzz", 0, check_note, &b));
	check_error(tk_elf_notes_build_id(data, size, false, "fuzz", 0, id, sizeof(id)));
	check_error(tk_elf_notes_build_id(data, size, true, "fuzz", 0, id, sizeof(id)));

	elf = tk_elf_open_mem(data, size, "fuzz");
	if (!elf)
		return;
	idn = tk_elf_build_id(elf, id, sizeof(id));
	check_error(idn);
	if (idn > 0)
		fuzz_inflate(data, size, id, idn);
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
