// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the elf module. Small programs with <sys/sdt.h> probes
 * (with and without semaphores) are compiled at test time, and what the
 * module reads is compared with binutils: the build id with `readelf -n`,
 * the symbols with `nm`, the SDT notes with readelf's stapsdt lines.
 * Corrupted copies and hand-made note areas check the error paths; a
 * hand-made ELF core checks the unmapped reader kcore copies use.
 * Without cc, readelf or <sys/sdt.h> the test is skipped (77).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/elf.h>

#include "elf-internal.h"
#include "tk-test.h"
#include "tk-tmpdir.h"

static char sdt_bin[300], plain_bin[300], sdt32_bin[300];
static bool have_32;

static const char sdt_src[] =
	"#define _SDT_HAS_SEMAPHORES 1\n"
	"#include <sys/sdt.h>\n"
	"unsigned short tkdemo_start_semaphore __attribute__((section(\".probes\")));\n"
	"unsigned short tkdemo_tick_semaphore __attribute__((section(\".probes\")));\n"
	"int work(int x, long y);\n"
	"int work(int x, long y) { STAP_PROBE2(tkdemo, start, x, y);\n"
	"  if (tkdemo_tick_semaphore) STAP_PROBE1(tkdemo, tick, x * 2); return x + (int)y; }\n"
	"int main(int argc, char **argv) { int s = 0; (void)argv;\n"
	"  for (int i = 0; i < argc + 2; i++) s += work(i, 3); return s == 12345; }\n";

static const char plain_src[] =
	"#include <sys/sdt.h>\n"
	"int main(int argc, char **argv) { (void)argv; DTRACE_PROBE1(tkplain, hit, argc);\n"
	"  DTRACE_PROBE1(tkplain, hit, argc + 1); return 0; }\n";

static char *run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *buf;

	if (!p)
		return NULL;
	buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (pclose(p) != 0) {
		free(buf);
		return NULL;
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

static int compile(const char *src, const char *out, const char *flags)
{
	char path[320], cmd[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s.c", out);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 %s -o %s %s 2>/dev/null", flags, out, path);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	if (tk_tmpdir_make())
		return -1;
	snprintf(sdt_bin, sizeof(sdt_bin), "%s/sdtdemo", tmpdir);
	snprintf(plain_bin, sizeof(plain_bin), "%s/plain", tmpdir);
	snprintf(sdt32_bin, sizeof(sdt32_bin), "%s/sdtdemo32", tmpdir);
	if (compile(sdt_src, sdt_bin, "") || compile(plain_src, plain_bin, "-no-pie"))
		return -1;
	have_32 = compile(sdt_src, sdt32_bin, "-m32") == 0;
	return 0;
}

static void check_build_id(const char *bin)
{
	char cmd[400], hex[TK_BUILD_ID_HEX_MAX], *out, *p;
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf;
	int n;

	snprintf(cmd, sizeof(cmd), "readelf -n %s", bin);
	out = run(cmd);
	assert_non_null(out);
	p = strstr(out, "Build ID: ");
	assert_non_null(p);
	p += 10;
	p[strcspn(p, "\n")] = '\0';

	elf = tk_elf_open(bin);
	assert_non_null(elf);
	n = tk_elf_build_id(elf, id, sizeof(id));
	assert_int_equal(n, 20);
	assert_int_equal(tk_elf_build_id_hex(id, (size_t)n, hex, sizeof(hex)), 40);
	assert_string_equal(hex, p);
	tk_elf_close(elf);
	free(out);
}

static void test_build_id(void **state)
{
	(void)state;
	check_build_id(sdt_bin);
	check_build_id(plain_bin);
	if (have_32)
		check_build_id(sdt32_bin);
}

static void test_kernel_build_id(void **state)
{
	uint8_t id[TK_BUILD_ID_MAX];
	int n;

	(void)state;
	if (access("/sys/kernel/notes", R_OK)) {
		skip();
		return;
	}
	n = tk_elf_kernel_build_id(id, sizeof(id));
	assert_true(n >= 16);
}

static void test_symbols_vs_nm(void **state)
{
	const struct tk_elf_symbol *syms;
	char cmd[400], *out, *line, *save = NULL;
	struct tk_elf *elf;
	size_t n, checked = 0;

	(void)state;
	elf = tk_elf_open(sdt_bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n), 0);
	assert_true(n > 10);
	snprintf(cmd, sizeof(cmd), "nm --defined-only %s", sdt_bin);
	out = run(cmd);
	assert_non_null(out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t addr;
		char type, name[256];
		bool found = false;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3)
			continue;
		for (size_t i = 0; i < n && !found; i++)
			found = !strcmp(syms[i].name, name) && syms[i].value == addr;
		if (!found)
			fail_msg("nm symbol %s at 0x%" PRIx64 " not read", name, addr);
		checked++;
	}
	assert_true(checked > 10);
	free(out);

	/* .dynsym: same count of defined + undefined names as nm -D. */
	assert_int_equal(tk_elf_symbols(elf, TK_ELF_DYNSYM, &syms, &n), 0);
	snprintf(cmd, sizeof(cmd), "nm -D %s | wc -l", sdt_bin);
	out = run(cmd);
	assert_non_null(out);
	assert_int_equal((size_t)strtoul(out, NULL, 10), n);
	free(out);
	tk_elf_close(elf);
}

/* Parse readelf's "Provider/Name/Location/Arguments" blocks into a text list. */
static void check_sdt(const char *bin, size_t want)
{
	char cmd[400], *out, *p;
	const struct tk_elf_sdt *notes;
	struct tk_elf *elf;
	size_t n, i = 0;

	snprintf(cmd, sizeof(cmd), "readelf -n %s", bin);
	out = run(cmd);
	assert_non_null(out);
	elf = tk_elf_open(bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_sdt_notes(elf, &notes, &n), 0);
	assert_int_equal(n, want);
	p = out;
	while ((p = strstr(p, "Provider: "))) {
		char prov[64], name[64], args[256] = "";
		uint64_t loc, base, sem;
		char *a;

		assert_int_equal(sscanf(p,
					"Provider: %63s\n Name: %63s\n Location: %" SCNx64
					", Base: %" SCNx64 ", Semaphore: %" SCNx64,
					prov, name, &loc, &base, &sem),
				 5);
		a = strstr(p, "Arguments: ");
		if (a) {
			a += 11;
			snprintf(args, sizeof(args), "%.*s", (int)strcspn(a, "\n"), a);
		}
		assert_true(i < n);
		assert_string_equal(notes[i].provider, prov);
		assert_string_equal(notes[i].name, name);
		assert_string_equal(notes[i].args, args);
		assert_int_equal(notes[i].pc, loc);
		assert_int_equal(notes[i].base, base);
		assert_int_equal(notes[i].semaphore, sem);
		i++;
		p++;
	}
	assert_int_equal(i, n);
	tk_elf_close(elf);
	free(out);
}

/* Section address, offset and size (@size may be NULL) from readelf -S. */
static void section_addr_off(const char *bin, const char *sec, uint64_t *addr, uint64_t *off,
			     uint64_t *size)
{
	char cmd[400], *out, *p;
	uint64_t sz;

	snprintf(cmd, sizeof(cmd), "readelf -SW %s | grep ' %s '", bin, sec);
	out = run(cmd);
	assert_non_null(out);
	p = strstr(out, sec);
	assert_non_null(p);
	p += strlen(sec);
	/* "  PROGBITS  addr off size ..." */
	assert_int_equal(sscanf(p, " %*s %" SCNx64 " %" SCNx64 " %" SCNx64, addr, off, &sz), 3);
	if (size)
		*size = sz;
	free(out);
}

static void test_sdt_vs_readelf(void **state)
{
	const struct tk_elf_sdt *notes;
	struct tk_elf *elf;
	uint64_t baddr, boff, paddr, poff;
	size_t n;

	(void)state;
	check_sdt(sdt_bin, 2);
	check_sdt(plain_bin, 2);
	if (have_32)
		check_sdt(sdt32_bin, 2);

	/* Offsets as perf computes them. */
	section_addr_off(sdt_bin, ".stapsdt.base", &baddr, &boff, NULL);
	section_addr_off(sdt_bin, ".probes", &paddr, &poff, NULL);
	elf = tk_elf_open(sdt_bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_sdt_notes(elf, &notes, &n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(notes[i].offset, notes[i].pc + boff - notes[i].base);
		assert_int_not_equal(notes[i].semaphore, 0);
		assert_int_equal(notes[i].sem_offset, notes[i].semaphore - (paddr - poff));
	}
	assert_string_equal(notes[0].args, "-4@%edi -8@%rsi");
	tk_elf_close(elf);

	/* Non-PIE without semaphores: offset is a file offset, no semaphore. */
	elf = tk_elf_open(plain_bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_sdt_notes(elf, &notes, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(notes[0].sem_offset, 0);
	assert_true(notes[0].pc >= 0x400000);
	assert_true(notes[0].offset < 0x100000);
	assert_string_equal(notes[0].provider, "tkplain");
	assert_string_equal(notes[1].name, "hit");
	tk_elf_close(elf);
}

static void test_symtab_lookup(void **state)
{
	const struct tk_elf_symbol *syms;
	struct tk_elf_symtab *st;
	struct tk_elf *elf;
	uint64_t work = 0, work_size = 0, off, start;
	size_t n;

	(void)state;
	elf = tk_elf_open(sdt_bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_symbols(elf, TK_ELF_ANY, &syms, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(syms[i].name, "work")) {
			work = syms[i].value;
			work_size = syms[i].size;
		}
	assert_int_not_equal(work, 0);
	st = tk_elf_symtab_new_elf(elf);
	assert_non_null(st);
	tk_elf_close(elf); /* the table owns its names */
	assert_true(tk_elf_symtab_count(st) > 3);
	assert_string_equal(tk_elf_symtab_lookup(st, work, &off, &start), "work");
	assert_int_equal(off, 0);
	assert_string_equal(tk_elf_symtab_lookup(st, work + work_size - 1, &off, &start), "work");
	assert_int_equal(off, work_size - 1);
	assert_int_equal(start, work);
	assert_null(tk_elf_symtab_lookup(st, 1, NULL, NULL));
	tk_elf_symtab_free(st);

	static const char ks[] = "ffffffff81000000 T _text\n"
				 "ffffffff81000100 t helper\t[mod]\n"
				 "ffffffff81000200 D some_data\n"
				 "0000000000000000 A zero\n";
	st = tk_elf_symtab_new_kallsyms(ks, sizeof(ks) - 1, "kallsyms");
	assert_non_null(st);
	assert_int_equal(tk_elf_symtab_count(st), 3);
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81000104, &off, NULL), "helper");
	assert_int_equal(off, 4);
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff810000ff, NULL, NULL), "_text");
	tk_elf_symtab_free(st);
	st = tk_elf_symtab_new_kallsyms("zz T x\n", 7, "bad-kallsyms");
	assert_null(st);
	assert_int_equal(errno, EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "bad-kallsyms: offset 0x0"));
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_malformed(void **state)
{
	const struct tk_elf_sdt *notes;
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf;
	uint64_t note_off;
	uint8_t *img;
	size_t len, n;
	char want[128];
	uint8_t *bid = NULL;

	(void)state;
	img = slurp(sdt_bin, &len);
	elf = tk_elf_open(sdt_bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_sdt_notes(elf, &notes, &n), 0);
	note_off = notes[1].note_offset;
	tk_elf_close(elf);

	/* An absurd desc size in the second SDT note. */
	memcpy(img + note_off + 4, "\x00\xff\xff\x7f", 4);
	elf = tk_elf_open_mem(img, len, "bad-sdt");
	assert_non_null(elf);
	assert_int_equal(tk_elf_sdt_notes(elf, &notes, &n), -EBADMSG);
	snprintf(want, sizeof(want), "bad-sdt: offset 0x%" PRIx64 ": note desc size", note_off);
	assert_non_null(strstr(tk_errmsg(), want));
	tk_elf_close(elf);

	/* A build-id note whose name size runs past its section. */
	for (size_t i = 0; i + 16 < len; i++)
		if (!memcmp(img + i, "\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU\0", 16)) {
			bid = img + i;
			break;
		}
	assert_non_null(bid);
	memcpy(bid, "\xff\xff\0\0", 4);
	elf = tk_elf_open_mem(img, len, "bad-bid");
	assert_non_null(elf);
	assert_int_equal(tk_elf_build_id(elf, id, sizeof(id)), -EBADMSG);
	snprintf(want, sizeof(want), "bad-bid: offset 0x%zx: note name size 65535",
		 (size_t)(bid - img));
	assert_non_null(strstr(tk_errmsg(), want));
	tk_elf_close(elf);

	/*
	 * Truncated files: the section headers, written last, are gone. The
	 * open fails saying so, with the table's offset, rather than showing
	 * a file without sections ("no build id"). Cut in half, and at 3000
	 * bytes as a file on disk.
	 */
	{
		uint64_t shoff, shnum = 0, shent = 0;
		char cut[300], msg[300];
		FILE *f;

		memcpy(&shoff, img + 0x28, 8);
		memcpy(&shent, img + 0x3a, 2);
		memcpy(&shnum, img + 0x3c, 2);
		assert_true(shoff > len / 2 && shnum > 10 && shent == 64);
		elf = tk_elf_open_mem(img, len / 2, "half");
		assert_null(elf);
		assert_int_equal(errno, EBADMSG);
		snprintf(msg, sizeof(msg),
			 "half: offset 0x%" PRIx64 ": %" PRIu64
			 " section headers of 64 bytes end past the end of the file (%zu bytes): "
			 "truncated",
			 shoff, shnum, len / 2);
		assert_string_equal(tk_errmsg(), msg);

		snprintf(cut, sizeof(cut), "%s/cut3000", tmpdir);
		f = fopen(cut, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(img, 1, 3000, f), 3000);
		fclose(f);
		elf = tk_elf_open(cut);
		assert_null(elf);
		assert_int_equal(errno, EBADMSG);
		snprintf(msg, sizeof(msg),
			 "%s: offset 0x%" PRIx64 ": %" PRIu64
			 " section headers of 64 bytes end past the end of the file (3000 bytes): "
			 "truncated",
			 cut, shoff, shnum);
		assert_string_equal(tk_errmsg(), msg);

		/* Program headers cut (and no section headers): the first 200 bytes. */
		{
			uint8_t head[200];
			uint16_t phnum;

			memcpy(head, img, sizeof(head));
			memset(head + 0x28, 0, 8);
			memcpy(&phnum, head + 0x38, 2);
			elf = tk_elf_open_mem(head, sizeof(head), "head");
			assert_null(elf);
			assert_int_equal(errno, EBADMSG);
			snprintf(msg, sizeof(msg),
				 "head: offset 0x40: %u program headers of "
				 "56 bytes end past the end of the file (200 bytes): truncated",
				 phnum);
			assert_string_equal(tk_errmsg(), msg);
		}
	}

	/*
	 * A .symtab whose size runs far past the file: reading it is an error
	 * naming the file and the table's offset. The rest of the file stays
	 * usable (build id, .dynsym, a table from .dynsym), which is what the
	 * cache and the symbolizer fall back on, with a warning.
	 */
	{
		uint64_t shoff, off = 0, size = 0x7fffffffffffull;
		uint16_t shnum;
		const struct tk_elf_symbol *syms;
		struct tk_elf_symtab *st;
		char msg[300];

		free(img);
		img = slurp(sdt_bin, &len); /* the notes above were broken on purpose */
		memcpy(&shoff, img + 0x28, 8);
		memcpy(&shnum, img + 0x3c, 2);
		for (uint16_t i = 0; i < shnum; i++) {
			uint32_t type;

			memcpy(&type, img + shoff + 64u * i + 4, 4);
			if (type == 2 /* SHT_SYMTAB */) {
				memcpy(&off, img + shoff + 64u * i + 24, 8);
				memcpy(img + shoff + 64u * i + 32, &size, 8);
			}
		}
		assert_int_not_equal(off, 0);
		elf = tk_elf_open_mem(img, len, "bad-symtab");
		assert_non_null(elf);
		assert_int_equal(tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n), -EBADMSG);
		snprintf(msg, sizeof(msg),
			 "bad-symtab: offset 0x%" PRIx64 ": symbol table of "
			 "%" PRIu64 " bytes exceeds the file size %zu",
			 off, size, len);
		assert_string_equal(tk_errmsg(), msg);
		assert_int_equal(tk_elf_symbols(elf, TK_ELF_ANY, &syms, &n), -EBADMSG);
		assert_null(tk_elf_symtab_new_elf(elf));
		assert_int_equal(errno, EBADMSG);
		assert_int_equal(tk_elf_build_id(elf, id, sizeof(id)), 20);
		assert_int_equal(tk_elf_symbols(elf, TK_ELF_DYNSYM, &syms, &n), 0);
		assert_true(n > 0);
		st = tk_elf_symtab_new_dso(elf, TK_ELF_DYNSYM, elf);
		assert_non_null(st);
		tk_elf_symtab_free(st);
		tk_elf_close(elf);
	}

	/* Not ELF at all. */
	elf = tk_elf_open_mem("hello world, not elf", 20, "text");
	assert_null(elf);
	assert_int_equal(errno, ENOEXEC);
	assert_non_null(strstr(tk_errmsg(), "text: not an ELF file"));
	elf = tk_elf_open("/nonexistent/tk-elf");
	assert_null(elf);
	assert_int_equal(errno, ENOENT);
	free(img);
}

static int count_cb(const struct tk_elf_sdt *note, void *ctx)
{
	(*(int *)ctx)++;
	assert_string_equal(note->provider, "p");
	return 0;
}

static void test_raw_notes(void **state)
{
	/* Big-endian ELF32 SDT note, built by hand. */
	static const uint8_t be32[] = {
		0, 0, 0, 8,    0, 0, 0, 18,   0, 0, 0, 3, 's', 't', 'a', 'p', 's', 'd', 't',
		0, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0, 0,   'p', 0,	 'n', 0,   0,	0,
	};
	static const uint8_t short_hdr[] = {4, 0, 0, 0,	  20,  0,   0, 0, 3,
					    0, 0, 0, 'G', 'N', 'U', 0, 1};
	static const uint8_t md5[] = {4, 0, 0, 0, 16, 0, 0, 0, 3, 0,  0,  0,  'G', 'N', 'U', 0,
				      1, 2, 3, 4, 5,  6, 7, 8, 9, 10, 11, 12, 13,  14,	15,  16};
	uint8_t id[TK_BUILD_ID_MAX];
	char hex[TK_BUILD_ID_HEX_MAX];
	int count = 0;

	(void)state;
	assert_int_equal(
		tk_elf_sdt_parse(be32, sizeof(be32), true, false, "be32", 0, count_cb, &count), 1);
	assert_int_equal(count, 1);
	/* Cut inside the strings: the name loses its NUL. */
	assert_int_equal(tk_elf_sdt_parse(be32, 33, true, false, "cut", 0x100, NULL, NULL),
			 -EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "cut: offset 0x100: note desc size 18"));
	assert_int_equal(tk_elf_notes_build_id(short_hdr, sizeof(short_hdr), false, "notes", 0, id,
					       sizeof(id)),
			 -EBADMSG);
	assert_int_equal(tk_elf_notes_build_id(md5, sizeof(md5), false, "notes", 0, id, sizeof(id)),
			 16);
	assert_int_equal(tk_elf_build_id_hex(id, 16, hex, sizeof(hex)), 32);
	assert_string_equal(hex, "0102030405060708090a0b0c0d0e0f10");
	assert_int_equal(tk_elf_notes_build_id(md5, 12, false, "notes", 0, id, sizeof(id)),
			 -EBADMSG);
	assert_int_equal(tk_elf_notes_build_id(md5, 8, false, "notes", 0, id, sizeof(id)), -ENOENT);
}

/*
 * perf 6.1's choice among kallsyms symbols at one address. perf stretches
 * every size-0 symbol to the next one before it folds aliases, and the
 * earlier of two aliases stretches only to the later one, staying size 0;
 * choose_best_symbol() then prefers the sized one. So in kallsyms the last
 * alias at an address wins, whatever its binding or name: checked with
 * perf script --kallsyms on a file with an alias put before (global "T",
 * loses) and after (same type and length, wins) a sampled function.
 */
static void test_alias_choice(void **state)
{
	static const char ks[] = "ffffffff81000000 W brk\n" /* local after weak */
				 "ffffffff81000000 t __brk\n"
				 "ffffffff81001000 T global_one\n" /* local after global */
				 "ffffffff81001000 t local_one\n"
				 "ffffffff81002000 T _two\n" /* more underscores after fewer */
				 "ffffffff81002000 T __two\n"
				 "ffffffff81003000 T abcd\n" /* shorter after longer */
				 "ffffffff81003000 T abc\n"
				 "ffffffff81004000 T first\n" /* full tie */
				 "ffffffff81004000 T other\n"
				 "ffffffff81005000 T end\n";
	struct tk_elf_symtab *st;
	uint64_t off;

	(void)state;
	st = tk_elf_symtab_new_kallsyms(ks, strlen(ks), "test-kallsyms");
	assert_non_null(st);
	assert_int_equal(tk_elf_symtab_count(st), 6);
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81000010ull, NULL, NULL), "__brk");
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81001000ull, NULL, NULL),
			    "local_one");
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81002000ull, NULL, NULL), "__two");
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81003000ull, NULL, NULL), "abc");
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81004fffull, &off, NULL), "other");
	assert_int_equal(off, 0xfff);
	/* The last symbol reaches one page past its page's start (perf: roundup + 4096). */
	assert_non_null(tk_elf_symtab_lookup(st, 0xffffffff81005fffull, NULL, NULL));
	assert_string_equal(tk_elf_symtab_lookup(st, 0xffffffff81005fffull, NULL, NULL), "end");
	assert_null(tk_elf_symtab_lookup(st, 0xffffffff81006000ull, NULL, NULL));
	tk_elf_symtab_free(st);
}

/* Address of @name in @elf's .symtab (0 when absent). */
static uint64_t sym_value(struct tk_elf *elf, const char *name)
{
	const struct tk_elf_symbol *syms;
	size_t n;

	assert_int_equal(tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(syms[i].name, name))
			return syms[i].value;
	return 0;
}

static const char label_src[] =
	"__asm__(\".text\\n\"\n"
	"\t\".globl tk_lbl_outer\\n\"\n"
	"\t\"tk_lbl_outer:\\n nop\\n nop\\n nop\\n nop\\n\"\n"
	"\t\"tk_lbl_inner:\\n nop\\n nop\\n\"\n"
	"\t\".globl tk_lbl_hidden\\n .hidden tk_lbl_hidden\\n\"\n"
	"\t\"tk_lbl_hidden:\\n nop\\n ret\\n\"\n"
	"\t\".data\\n .globl tk_lbl_data\\n tk_lbl_data: .long 7\\n .text\\n\");\n"
	"int main(void) { return 0; }\n";

/*
 * Labels: perf 6.1 keeps named STT_NOTYPE symbols of code sections (not
 * hidden or internal ones, not those of data sections) and stretches them
 * to the next symbol, as it shows ld.so's _start and _dl_start_user.
 */
static void test_labels(void **state)
{
	char bin[300], dbg[400], hex[TK_BUILD_ID_HEX_MAX];
	uint64_t outer, inner, hidden, data, off, a, b;
	const char *ldso = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf, *d;
	struct tk_elf_symtab *st;
	int n;

	(void)state;
	snprintf(bin, sizeof(bin), "%s/labels", tmpdir);
	assert_int_equal(compile(label_src, bin, ""), 0);
	elf = tk_elf_open(bin);
	assert_non_null(elf);
	outer = sym_value(elf, "tk_lbl_outer");
	inner = sym_value(elf, "tk_lbl_inner");
	hidden = sym_value(elf, "tk_lbl_hidden");
	data = sym_value(elf, "tk_lbl_data");
	assert_true(outer && inner == outer + 4 && hidden == inner + 2 && data);
	st = tk_elf_symtab_new_elf(elf);
	assert_non_null(st);
	assert_string_equal(tk_elf_symtab_lookup(st, outer, &off, NULL), "tk_lbl_outer");
	assert_int_equal(off, 0);
	assert_string_equal(tk_elf_symtab_lookup(st, outer + 3, &off, NULL), "tk_lbl_outer");
	assert_int_equal(off, 3);
	assert_string_equal(tk_elf_symtab_lookup(st, inner + 1, &off, NULL), "tk_lbl_inner");
	assert_int_equal(off, 1);
	/* A hidden label is not kept: the label before it reaches over it. */
	assert_string_equal(tk_elf_symtab_lookup(st, hidden, &off, NULL), "tk_lbl_inner");
	assert_int_equal(off, 2);
	assert_true(!tk_elf_symtab_lookup(st, data, NULL, NULL) ||
		    strcmp(tk_elf_symtab_lookup(st, data, NULL, NULL), "tk_lbl_data"));
	tk_elf_symtab_free(st);
	tk_elf_close(elf);

	/* ld.so with libc6-dbg's debug file, the case seen in perf.data reports. */
	elf = tk_elf_open(ldso);
	n = elf ? tk_elf_build_id(elf, id, sizeof(id)) : -1;
	if (n <= 0 || tk_elf_build_id_hex(id, (size_t)n, hex, sizeof(hex)) <= 0) {
		tk_elf_close(elf);
		printf("note: %s unreadable, its labels not checked\n", ldso);
		return;
	}
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	d = tk_elf_open(dbg);
	if (!d) {
		tk_elf_close(elf);
		printf("note: no %s (libc6-dbg): ld.so's _start not checked\n", dbg);
		return;
	}
	a = sym_value(d, "_start");
	b = sym_value(d, "_dl_start_user");
	assert_true(a && b);
	st = tk_elf_symtab_new_dso(d, TK_ELF_ANY, elf);
	assert_non_null(st);
	assert_string_equal(tk_elf_symtab_lookup(st, a, &off, NULL), "_start");
	assert_int_equal(off, 0);
	assert_string_equal(tk_elf_symtab_lookup(st, b, &off, NULL), "_dl_start_user");
	assert_int_equal(off, 0);
	tk_elf_symtab_free(st);
	tk_elf_close(d);
	tk_elf_close(elf);
}

static const char plt_src[] =
	"#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n"
	"void tk_start(void);\n"
	"void tk_start(void) { volatile size_t n = strlen(\"abc\") + (size_t)getpid();\n"
	"  _exit((int)(n & 1)); }\n";

/*
 * PLT entries, perf 6.1's way: the i-th .rela.plt relocation names the
 * i-th .plt entry after the 16-byte header, "NAME@plt", 16 bytes long.
 * The binary has no crt files, so no size-0 _init stretches over .plt.
 * Checked against readelf's relocations; with IBT the .plt.sec entries get
 * no name (perf 6.1 does not know them); a debug file's table gets them
 * from the binary.
 */
static void test_plt(void **state)
{
	char bin[300], sec[300], dbg[320], cmd[900], *out, *line, *save = NULL;
	uint64_t plt, size, off;
	struct tk_elf *elf, *d;
	struct tk_elf_symtab *st;
	size_t i = 0;

	(void)state;
	snprintf(bin, sizeof(bin), "%s/pltbin", tmpdir);
	snprintf(sec, sizeof(sec), "%s/pltsec", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/pltbin.debug", tmpdir);
	assert_int_equal(compile(plt_src, bin, "-nostartfiles -Wl,-e,tk_start -Wl,-z,lazy"), 0);
	section_addr_off(bin, ".plt", &plt, &off, &size);
	elf = tk_elf_open(bin);
	assert_non_null(elf);
	st = tk_elf_symtab_new_elf(elf);
	assert_non_null(st);
	snprintf(cmd, sizeof(cmd),
		 "readelf -rW %s | sed -n '/.rela.plt/,$p' | "
		 "awk '/JUMP_SLOT/ {sub(/@.*/, \"\", $5); print $5}'",
		 bin);
	out = run(cmd);
	assert_non_null(out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		char want[300];

		snprintf(want, sizeof(want), "%s@plt", line);
		assert_string_equal(tk_elf_symtab_lookup(st, plt + 16 + 16 * i + 6, &off, NULL),
				    want);
		assert_int_equal(off, 6);
	}
	free(out);
	assert_true(i >= 2);
	assert_int_equal(size, 16 * (i + 1));
	tk_elf_symtab_free(st);

	/* Symbols from a debug file, PLT entries from the binary (or none without it). */
	snprintf(cmd, sizeof(cmd), "objcopy --only-keep-debug %s %s", bin, dbg);
	assert_int_equal(system(cmd), 0);
	d = tk_elf_open(dbg);
	assert_non_null(d);
	st = tk_elf_symtab_new_dso(d, TK_ELF_ANY, elf);
	assert_non_null(st);
	assert_non_null(strstr(tk_elf_symtab_lookup(st, plt + 16, NULL, NULL), "@plt"));
	tk_elf_symtab_free(st);
	st = tk_elf_symtab_new_dso(d, TK_ELF_ANY, NULL);
	assert_non_null(st);
	assert_null(tk_elf_symtab_lookup(st, plt + 16, NULL, NULL));
	tk_elf_symtab_free(st);
	assert_null(tk_elf_symtab_new_dso(d, (enum tk_elf_symtab_kind)7, NULL));
	assert_int_equal(errno, EINVAL);
	tk_elf_close(d);
	tk_elf_close(elf);

	/* IBT: calls go through .plt.sec, which perf 6.1 leaves unnamed. */
	if (compile(plt_src, sec,
		    "-nostartfiles -Wl,-e,tk_start -fcf-protection=full "
		    "-Wl,-z,ibtplt -Wl,-z,lazy")) {
		printf("note: no IBT PLT (-z ibtplt) here: .plt.sec not checked\n");
		return;
	}
	section_addr_off(sec, ".plt.sec", &plt, &off, &size);
	elf = tk_elf_open(sec);
	assert_non_null(elf);
	st = tk_elf_symtab_new_elf(elf);
	assert_non_null(st);
	for (uint64_t a = plt; a < plt + size; a += 4)
		assert_null(tk_elf_symtab_lookup(st, a, NULL, NULL));
	tk_elf_symtab_free(st);
	tk_elf_close(elf);
}

static const char cxx_src[] =
	"#include <functional>\n#include <string>\n#include <vector>\n"
	"#define K __attribute__((noinline, used))\n"
	"enum rtx_code { A, B };\n"
	"namespace ns { struct Widget { int v; K int twice(int k) const { return v * k + 1; }\n"
	"  K int operator()(int x) && { return x + v; } K operator long() const { return v; }\n"
	"  K bool operator<(const Widget &o) const { return v < o.v; }\n"
	"  K Widget &operator+=(int d) { v += d; return *this; } K ~Widget() { v = 0; } }; }\n"
	"template <typename T> K T maxof(T a, T b) { return a > b ? a : b; }\n"
	"template long maxof<long>(long, long);\n"
	"static int (*pick(int))(int);\n"
	"template <typename T> K int (*fnptr(T))(int) { return pick(0); }\n"
	"template int (*fnptr<char>(char))(int);\n"
	"K long rtx_alloc(rtx_code c) { static int calls; return c + ++calls; }\n"
	"namespace { K int anon(int x) { return x * 7; } }\n"
	"static int (*pick(int))(int) { return anon; }\n"
	"K int use_lambda(int k) { auto f = [k](int x) { return x * k; };\n"
	"  std::function<int(int)> g = f; return g(3); }\n"
	"K size_t vec(std::vector<std::string> &v) { v.push_back(\"x\"); return v.size(); }\n"
	"int main(int argc, char **) { std::vector<std::string> v; ns::Widget w{argc};\n"
	"  w += 1; return (int)rtx_alloc(A) + w.twice(2) + (int)maxof<long>(1, 2) +\n"
	"    anon(argc) + use_lambda(argc) + (int)vec(v) + (int)(long)w + (w < w) +\n"
	"    std::move(w)(1) + fnptr<char>('a')(1); }\n";

/*
 * Names in each table as perf 6.1 prints them: every C++ function that is
 * alone at its address reads as binutils' c++filt -p -i prints its symbol
 * (libiberty's demangler without parameters and verbose expansions, what
 * perf uses): a test program with methods, operators, templates with
 * return types, lambdas and anonymous namespaces, and libstdc++'s dynamic
 * symbols.
 */
static void check_demangled(const char *bin, enum tk_elf_symtab_kind kind, size_t min)
{
	const struct tk_elf_symbol *syms;
	char names[300], cmd[700], *out, *line, *save = NULL;
	struct tk_elf_symtab *st;
	struct tk_elf *elf;
	size_t n, checked = 0, k = 0;
	FILE *f;

	elf = tk_elf_open(bin);
	assert_non_null(elf);
	assert_int_equal(tk_elf_symbols(elf, kind, &syms, &n), 0);
	st = tk_elf_symtab_new_elf(elf);
	assert_non_null(st);
	snprintf(names, sizeof(names), "%s/mangled.txt", tmpdir);
	f = fopen(names, "w");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		if (syms[i].type == 2 /* STT_FUNC */ && syms[i].shndx && syms[i].size &&
		    !strncmp(syms[i].name, "_Z", 2))
			fprintf(f, "%s\n", syms[i].name);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "c++filt -p -i < %s", names);
	out = run(cmd);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		bool alone = true;
		const char *got;

		if (syms[i].type != 2 || !syms[i].shndx || !syms[i].size ||
		    strncmp(syms[i].name, "_Z", 2))
			continue;
		line = strtok_r(k++ ? NULL : out, "\n", &save);
		assert_non_null(line);
		for (size_t j = 0; j < n && alone; j++)
			alone = j == i || syms[j].value != syms[i].value || !syms[j].shndx;
		if (!alone)
			continue;
		got = tk_elf_symtab_lookup(st, syms[i].value, NULL, NULL);
		assert_non_null(got);
		if (strcmp(got, line))
			fail_msg("%s: %s shows as '%s', c++filt -p -i says '%s'", bin, syms[i].name,
				 got, line);
		checked++;
	}
	free(out);
	assert_true(checked >= min);
	tk_elf_symtab_free(st);
	tk_elf_close(elf);
}

static void test_demangle(void **state)
{
	char bin[300], path[320], cmd[800];
	struct tk_elf_symtab *st;
	struct tk_elf *elf;
	FILE *f;

	(void)state;
	if (system("command -v g++ >/dev/null && command -v c++filt >/dev/null")) {
		printf("SKIP (partly): g++ or c++filt missing: C++ demangling not checked\n");
		return;
	}
	snprintf(bin, sizeof(bin), "%s/cxxdemo", tmpdir);
	snprintf(path, sizeof(path), "%s.cc", bin);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(cxx_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "g++ -O1 -o %s %s 2>/dev/null", bin, path);
	assert_int_equal(system(cmd), 0);
	check_demangled(bin, TK_ELF_SYMTAB, 12);
	check_demangled("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", TK_ELF_DYNSYM, 1000);

	/* The names the audit found: the function without its parameters. */
	elf = tk_elf_open(bin);
	assert_non_null(elf);
	st = tk_elf_symtab_new_elf(elf);
	assert_non_null(st);
	assert_string_equal(
		tk_elf_symtab_lookup(st, sym_value(elf, "_Z9rtx_alloc8rtx_code") + 1, NULL, NULL),
		"rtx_alloc");
	assert_string_equal(
		tk_elf_symtab_lookup(st, sym_value(elf, "_ZNK2ns6Widget5twiceEi"), NULL, NULL),
		"ns::Widget::twice");
	assert_string_equal(
		tk_elf_symtab_lookup(st, sym_value(elf, "_Z5maxofIlET_S0_S0_"), NULL, NULL),
		"maxof<long>");
	tk_elf_symtab_free(st);
	tk_elf_close(elf);
}

/* Note callback: "NAME:TYPE:DESCSZ " for each note into the string @ctx. */
static int note_names(const struct tk_elf_note *n, void *ctx)
{
	char *seen = ctx;

	snprintf(seen + strlen(seen), 256 - strlen(seen), "%.*s:%u:%u ", (int)n->namesz - 1,
		 n->name, n->type, n->descsz);
	return 0;
}

static int note_stop(const struct tk_elf_note *n, void *ctx)
{
	(void)n;
	(void)ctx;
	return 7;
}

/* Append a 4-byte aligned note to @p; returns the bytes written. */
static size_t put_note(uint8_t *p, const char *name, uint32_t type, const char *desc)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1, descsz = (uint32_t)strlen(desc);
	size_t at = 12;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memcpy(p + at, name, namesz);
	at += (namesz + 3) & ~3u;
	memcpy(p + at, desc, descsz);
	return at + ((descsz + 3) & ~3u);
}

/*
 * An ELF core as /proc/kcore has it, read without mapping: the header, a
 * PT_NOTE and two PT_LOADs, the notes of the segment, reads of its bytes
 * checked against the file's end, and a note segment whose note overruns.
 */
static void test_core_unmapped(void **state)
{
	uint8_t img[0x3000] = {0}, got[16];
	struct tk_elf_header eh;
	struct tk_elf_phdr ph[4];
	struct tk_elf *elf;
	char path[400], seen[256] = "";
	size_t nlen;
	FILE *f;

	(void)state;
	memcpy(img,
	       "\x7f"
	       "ELF\x02\x01\x01",
	       7);
	{
		uint16_t type = 4, machine = 62, ehsize = 64, phentsize = 56, phnum = 3;
		uint32_t version = 1;
		uint64_t phoff = 64;

		memcpy(img + 16, &type, 2);
		memcpy(img + 18, &machine, 2);
		memcpy(img + 20, &version, 4);
		memcpy(img + 32, &phoff, 8);
		memcpy(img + 52, &ehsize, 2);
		memcpy(img + 54, &phentsize, 2);
		memcpy(img + 56, &phnum, 2);
	}
	nlen = put_note(img + 0x400, "CORE", 1, "prstatus");
	nlen += put_note(img + 0x400 + nlen, "VMCOREINFO", 0, "OSRELEASE=6.1\nBUILD-ID=ab\n");
	for (int i = 0; i < 3; i++) {
		uint8_t *p = img + 64 + 56 * i;
		uint32_t type = i ? 1 : 4, flags = 7;
		uint64_t off = i ? 0x1000 * (uint64_t)i : 0x400, len = i ? 0x1000 : nlen;
		uint64_t vaddr = i ? 0xffffffff81000000ull + 0x100000 * (uint64_t)i : 0;

		memcpy(p, &type, 4);
		memcpy(p + 4, &flags, 4);
		memcpy(p + 8, &off, 8);
		memcpy(p + 16, &vaddr, 8);
		memcpy(p + 32, &len, 8);
		memcpy(p + 40, &len, 8);
		if (i)
			memset(img + off, 0x40 + i, len);
	}
	snprintf(path, sizeof(path), "%s/core", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(img, 1, sizeof(img), f), sizeof(img));
	fclose(f);

	elf = tk_elf_open_unmapped(path);
	assert_non_null(elf);
	assert_int_equal(tk_elf_header(elf, &eh), 0);
	assert_int_equal(eh.type, 4);
	assert_int_equal(eh.machine, 62);
	assert_int_equal(eh.phnum, 3);
	assert_int_equal(eh.phentsize, 56);
	assert_int_equal(eh.ident[4], 2);
	assert_int_equal(tk_elf_size(elf), sizeof(img));
	assert_int_equal(tk_elf_program_headers(elf, NULL, 0), 3);
	assert_int_equal(tk_elf_program_headers(elf, ph, 4), 3);
	assert_int_equal(ph[0].type, 4);
	assert_int_equal(ph[0].filesz, nlen);
	assert_int_equal(ph[2].type, 1);
	assert_int_equal(ph[2].vaddr, 0xffffffff81200000ull);
	assert_int_equal(ph[2].offset, 0x2000);
	/* PT_LOAD only, as before. */
	assert_int_equal(tk_elf_segments(elf, NULL, 0), 2);

	assert_int_equal(tk_elf_read(elf, 0x2000 + 0xff0, got, 16), 0);
	assert_int_equal(got[15], 0x42);
	assert_errno(tk_elf_read(elf, 0x2ff8, got, 16), EBADMSG);
	assert_non_null(strstr(tk_errmsg(), path));
	assert_errno(tk_elf_read(elf, UINT64_MAX - 2, got, 16), EBADMSG);

	assert_errno(tk_elf_segment_notes(elf, &ph[1], 1 << 20, NULL, NULL), EINVAL);
	assert_errno(tk_elf_segment_notes(elf, &ph[0], 8, NULL, NULL), EFBIG);
	assert_int_equal(tk_elf_segment_notes(elf, &ph[0], 1 << 20, note_names, seen), 0);
	assert_string_equal(seen, "CORE:1:8 VMCOREINFO:0:26 ");
	/* The callback stops the walk with its value. */
	assert_int_equal(tk_elf_segment_notes(elf, &ph[0], 1 << 20, note_stop, NULL), 7);
	/* A note that claims more than the segment holds. */
	ph[0].filesz = 20;
	assert_errno(tk_elf_segment_notes(elf, &ph[0], 1 << 20, note_names, seen), EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "offset 0x400"));
	tk_elf_close(elf);

	/* Not ELF at all: ENOEXEC, as tk_elf_open() says it. */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("hello", f);
	fclose(f);
	assert_null(tk_elf_open_unmapped(path));
	assert_int_equal(errno, ENOEXEC);
}

/*
 * A kernel module's table (tests/data/perf/usbdemo.ko): the functions of
 * its .text keyed by file offset (.text at 0x64), demo_helper at value 0
 * kept; .init.text's demo_init and .bss's demo_counter left out, as perf
 * places neither; a file that is not relocatable has no such table.
 */
static void test_kmodule(void **state)
{
	const char *src = getenv("TK_SOURCE_DIR");
	struct tk_elf_symtab *st;
	struct tk_elf *elf;
	uint64_t toff, off;
	char ko[400];

	(void)state;
	snprintf(ko, sizeof(ko), "%s/tests/data/perf/usbdemo.ko", src ? src : ".");
	elf = tk_elf_open(ko);
	assert_non_null(elf);
	st = tk_elf_symtab_new_kmodule(elf, &toff);
	assert_non_null(st);
	assert_int_equal(toff, 0x64);
	assert_int_equal(tk_elf_symtab_count(st), 4);
	assert_string_equal(tk_elf_symtab_lookup(st, 0x64, &off, NULL), "demo_helper");
	assert_int_equal(off, 0);
	assert_string_equal(tk_elf_symtab_lookup(st, 0x64 + 0xc, &off, NULL), "demo_probe");
	assert_int_equal(off, 2);
	assert_string_equal(tk_elf_symtab_lookup(st, 0x64 + 0x3e, &off, NULL), "demo_xmit");
	assert_string_equal(tk_elf_symtab_lookup(st, 0x64 + 0x63, &off, NULL), "demo_poll");
	assert_null(tk_elf_symtab_lookup(st, 0x64 + 0x64, NULL, NULL));
	assert_null(tk_elf_symtab_lookup(st, 0xc8, NULL, NULL)); /* demo_init's bytes */
	tk_elf_symtab_free(st);
	tk_elf_close(elf);

	elf = tk_elf_open(plain_bin);
	assert_non_null(elf);
	assert_null(tk_elf_symtab_new_kmodule(elf, &toff));
	assert_int_equal(errno, ENOENT);
	assert_true(strstr(tk_errmsg(), "not a relocatable file") != NULL);
	tk_elf_close(elf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_id),      cmocka_unit_test(test_kernel_build_id),
		cmocka_unit_test(test_symbols_vs_nm), cmocka_unit_test(test_sdt_vs_readelf),
		cmocka_unit_test(test_symtab_lookup), cmocka_unit_test(test_alias_choice),
		cmocka_unit_test(test_labels),	      cmocka_unit_test(test_plt),
		cmocka_unit_test(test_demangle),      cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_raw_notes),     cmocka_unit_test(test_core_unmapped),
		cmocka_unit_test(test_kmodule),
	};

	if (system("command -v cc >/dev/null && command -v readelf >/dev/null && command -v nm "
		   ">/dev/null && test -e /usr/include/x86_64-linux-gnu/sys/sdt.h -o -e "
		   "/usr/include/sys/sdt.h")) {
		printf("skip: needs cc, readelf, nm and <sys/sdt.h> (systemtap-sdt-dev)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, tk_tmpdir_teardown);
}
