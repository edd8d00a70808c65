// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * debug-inflate: the inflated copy of a debug file with compressed
 * sections. On a debug file made here with libelf (a build-id note that a
 * PT_NOTE segment points at, a NOBITS .text, zlib-compressed .debug_info
 * and .debug_str): the copy is made in the cache's .tk-inflated directory
 * with every section's bytes inflated and the notes where they were;
 * a second lookup reuses it without writing; a copy of another build id
 * is replaced; a file with nothing compressed, or no cache, gets no copy;
 * copies over the total size limit go, least recently used first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug-inflate.h"
#include "tk-tmpdir.h"

#define INFO_SIZE 200000
#define STR_SIZE  30000

static const uint8_t bid_bytes[20] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23,
				      0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54, 0x76};

static char bid[41];
static uint8_t info[INFO_SIZE], str[STR_SIZE];

/* The section bytes: patterned, so that zlib compresses them but not to nothing. */
static void fill(void)
{
	uint32_t x = 1;

	for (size_t i = 0; i < sizeof(info); i++) {
		x = x * 1103515245u + 12345u;
		info[i] = (uint8_t)(i % 64 < 40 ? i : x >> 24);
	}
	for (size_t i = 0; i < sizeof(str); i++)
		str[i] = i % 17 == 16 ? 0 : (uint8_t)('a' + i % 26);
	for (size_t i = 0; i < sizeof(bid_bytes); i++)
		snprintf(bid + 2 * i, 3, "%02x", bid_bytes[i]);
}

static Elf_Scn *add_scn(Elf *e, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
			const void *buf, size_t size, uint64_t align)
{
	Elf_Scn *s = elf_newscn(e);
	GElf_Shdr sh;
	Elf_Data *d;

	assert_non_null(s);
	if (buf || type == SHT_NOBITS) {
		d = elf_newdata(s);
		assert_non_null(d);
		d->d_buf = (void *)buf;
		d->d_size = size;
		d->d_type = ELF_T_BYTE;
		d->d_align = align;
	}
	assert_non_null(gelf_getshdr(s, &sh));
	sh.sh_name = name;
	sh.sh_type = type;
	sh.sh_flags = flags;
	sh.sh_addr = addr;
	sh.sh_size = size;
	sh.sh_addralign = align;
	assert_non_null(gelf_update_shdr(s, &sh));
	return s;
}

/* Write a debug file to @path; its .debug_* sections zlib-compressed when @compress. */
static void make_debug(const char *path, const uint8_t *id, bool compress)
{
	static const char shstr[] =
		"\0.note.gnu.build-id\0.text\0.debug_info\0.debug_str\0.shstrtab";
	uint8_t note[16 + 20];
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	Elf *e;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	GElf_Shdr sh;
	Elf_Scn *nscn, *iscn, *sscn, *shs;

	assert_true(fd >= 0);
	memcpy(note, &(uint32_t){4}, 4);
	memcpy(note + 4, &(uint32_t){20}, 4);
	memcpy(note + 8, &(uint32_t){NT_GNU_BUILD_ID}, 4);
	memcpy(note + 12, "GNU", 4);
	memcpy(note + 16, id, 20);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	assert_non_null(e);
	assert_non_null(gelf_newehdr(e, ELFCLASS64));
	assert_non_null(gelf_getehdr(e, &eh));
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	assert_non_null(gelf_update_ehdr(e, &eh));
	assert_non_null(gelf_newphdr(e, 1));
	nscn = add_scn(e, 1, SHT_NOTE, SHF_ALLOC, 0x200, note, sizeof(note), 4);
	add_scn(e, 20, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, NULL, 0x5000, 16);
	iscn = add_scn(e, 26, SHT_PROGBITS, 0, 0, info, sizeof(info), 1);
	sscn = add_scn(e, 38, SHT_PROGBITS, SHF_MERGE | SHF_STRINGS, 0, str, sizeof(str), 1);
	shs = add_scn(e, 49, SHT_STRTAB, 0, 0, shstr, sizeof(shstr), 1);
	assert_non_null(gelf_getehdr(e, &eh));
	eh.e_shstrndx = (GElf_Half)elf_ndxscn(shs);
	assert_non_null(gelf_update_ehdr(e, &eh));
	if (compress) {
		assert_int_equal(elf_compress(iscn, ELFCOMPRESS_ZLIB, 0), 1);
		assert_int_equal(elf_compress(sscn, ELFCOMPRESS_ZLIB, 0), 1);
	}
	/* Lay out, then point the PT_NOTE at the note where libelf put it. */
	assert_true(elf_update(e, ELF_C_NULL) >= 0);
	assert_non_null(gelf_getshdr(nscn, &sh));
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_NOTE;
	ph.p_flags = PF_R;
	ph.p_offset = sh.sh_offset;
	ph.p_vaddr = ph.p_paddr = sh.sh_addr;
	ph.p_filesz = ph.p_memsz = sh.sh_size;
	ph.p_align = 4;
	assert_non_null(gelf_update_phdr(e, 0, &ph));
	assert_true(elf_update(e, ELF_C_WRITE) >= 0);
	elf_end(e);
	close(fd);
}

static char *path_in(const char *fmt, const char *a)
{
	char *p;

	assert_true(asprintf(&p, fmt, tmpdir, a) > 0);
	return p;
}

/* The copy at @path: every section as make_debug() wrote it before compressing. */
static void check_copy(const char *path)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *s = NULL;
	size_t shstrndx, phnum;
	GElf_Phdr ph;
	uint64_t note_off = 0;
	int seen = 0;

	assert_true(fd >= 0);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		assert_non_null(gelf_getshdr(s, &sh));
		name = elf_strptr(e, shstrndx, sh.sh_name);
		assert_non_null(name);
		assert_int_equal(sh.sh_flags & SHF_COMPRESSED, 0);
		d = elf_rawdata(s, NULL);
		if (!strcmp(name, ".debug_info")) {
			assert_int_equal(d->d_size, sizeof(info));
			assert_memory_equal(d->d_buf, info, sizeof(info));
			seen++;
		} else if (!strcmp(name, ".debug_str")) {
			assert_int_equal(d->d_size, sizeof(str));
			assert_memory_equal(d->d_buf, str, sizeof(str));
			assert_int_equal(sh.sh_flags, SHF_MERGE | SHF_STRINGS);
			seen++;
		} else if (!strcmp(name, ".note.gnu.build-id")) {
			assert_memory_equal((const uint8_t *)d->d_buf + 16, bid_bytes, 20);
			note_off = sh.sh_offset;
			seen++;
		} else if (!strcmp(name, ".text")) {
			assert_int_equal(sh.sh_type, SHT_NOBITS);
			assert_int_equal(sh.sh_size, 0x5000);
			seen++;
		}
	}
	assert_int_equal(seen, 4);
	assert_int_equal(elf_getphdrnum(e, &phnum), 0);
	assert_int_equal(phnum, 1);
	assert_non_null(gelf_getphdr(e, 0, &ph));
	assert_int_equal(ph.p_offset, note_off);
	elf_end(e);
	close(fd);
}

static void test_copy_and_reuse(void **state)
{
	char *debug = path_in("%s/%s", "c.debug"), *cache = path_in("%s/%s", "cache1");
	char *want = NULL, *got, *again;
	struct stat st1, st2;

	(void)state;
	make_debug(debug, bid_bytes, true);
	assert_int_equal(mkdir(cache, 0755), 0);
	assert_true(asprintf(&want, "%s/.tk-inflated/%s.debug", cache, bid) > 0);
	got = tk_debug_inflated(cache, debug, bid);
	assert_non_null(got);
	assert_string_equal(got, want);
	check_copy(got);
	assert_int_equal(stat(got, &st1), 0);
	/* Used again as it is: same file, not rewritten. */
	again = tk_debug_inflated(cache, debug, bid);
	assert_non_null(again);
	assert_string_equal(again, want);
	assert_int_equal(stat(again, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino);
	/* No temporary file left behind. */
	{
		char *cmd;

		assert_true(asprintf(&cmd, "test $(ls -A '%s/.tk-inflated' | wc -l) = 1", cache) >
			    0);
		assert_int_equal(system(cmd), 0);
		free(cmd);
	}
	free(again);
	free(got);
	free(want);
	free(cache);
	free(debug);
}

static void test_wrong_build_id_replaced(void **state)
{
	uint8_t other[20];
	char *debug = path_in("%s/%s", "w.debug"), *cache = path_in("%s/%s", "cache2");
	char *stale = NULL, *got;

	(void)state;
	memcpy(other, bid_bytes, sizeof(other));
	other[0] ^= 0xff;
	make_debug(debug, bid_bytes, true);
	assert_int_equal(mkdir(cache, 0755), 0);
	assert_true(asprintf(&stale, "%s/.tk-inflated", cache) > 0);
	assert_int_equal(mkdir(stale, 0755), 0);
	free(stale);
	/* A file under the name whose build id is another's: never used, remade. */
	assert_true(asprintf(&stale, "%s/.tk-inflated/%s.debug", cache, bid) > 0);
	make_debug(stale, other, false);
	got = tk_debug_inflated(cache, debug, bid);
	assert_non_null(got);
	assert_string_equal(got, stale);
	check_copy(got);
	free(got);
	/* A truncated one likewise, before its note or after it. */
	assert_int_equal(truncate(stale, 100), 0);
	got = tk_debug_inflated(cache, debug, bid);
	assert_non_null(got);
	check_copy(got);
	free(got);
	{
		struct stat st1, st2;

		assert_int_equal(stat(stale, &st1), 0);
		assert_int_equal(truncate(stale, st1.st_size / 2), 0);
		got = tk_debug_inflated(cache, debug, bid);
		assert_non_null(got);
		assert_int_equal(stat(got, &st2), 0);
		assert_int_equal(st2.st_size, st1.st_size);
		check_copy(got);
		free(got);
	}
	free(stale);
	free(cache);
	free(debug);
}

static void test_no_copy(void **state)
{
	char *plain = path_in("%s/%s", "p.debug"), *cache = path_in("%s/%s", "cache3");
	char *debug = path_in("%s/%s", "n.debug"), *dir;
	struct stat st;

	(void)state;
	make_debug(plain, bid_bytes, false);
	make_debug(debug, bid_bytes, true);
	assert_int_equal(mkdir(cache, 0755), 0);
	/* Nothing compressed: libdw reads the file itself. */
	assert_null(tk_debug_inflated(cache, plain, bid));
	assert_true(asprintf(&dir, "%s/.tk-inflated", cache) > 0);
	assert_int_equal(stat(dir, &st), -1);
	/* No cache, no build id, a path-like build id, a missing file. */
	assert_null(tk_debug_inflated(NULL, debug, bid));
	assert_null(tk_debug_inflated(cache, debug, ""));
	assert_null(tk_debug_inflated(cache, debug, "../x"));
	assert_null(tk_debug_inflated(cache, "/nonexistent/x.debug", bid));
	free(dir);
	free(debug);
	free(cache);
	free(plain);
}

static void test_total_limit(void **state)
{
	char *debug = path_in("%s/%s", "l.debug"), *cache = path_in("%s/%s", "cache4");
	char *dir, *old, *recent, *got;
	struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	int fd;

	(void)state;
	make_debug(debug, bid_bytes, true);
	assert_int_equal(mkdir(cache, 0755), 0);
	assert_true(asprintf(&dir, "%s/.tk-inflated", cache) > 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	/* 4 GiB (sparse) used long ago, and a small one used now: the old one goes. */
	assert_true(asprintf(&old, "%s/aaaa.debug", dir) > 0);
	assert_true(asprintf(&recent, "%s/bbbb.debug", dir) > 0);
	fd = open(old, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4ll << 30), 0);
	close(fd);
	assert_int_equal(utimensat(AT_FDCWD, old, ts, 0), 0);
	fd = open(recent, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	got = tk_debug_inflated(cache, debug, bid);
	assert_non_null(got);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(recent, F_OK), 0);
	free(got);
	free(recent);
	free(old);
	free(dir);
	free(cache);
	free(debug);
}

/*
 * A section header placing an empty section 256 MiB into a file of a few
 * KiB (damage, or a fuzzer's input: the copy was once written up to there,
 * which filled /dev/shm): no copy, and nothing left in the cache.
 */
static void test_far_section(void **state)
{
	char *debug = path_in("%s/%s", "f.debug"), *cache = path_in("%s/%s", "cache5");
	char *dir;
	uint64_t shoff, far = 1ull << 28, zero = 0;
	uint16_t shentsize;
	uint32_t progbits = SHT_PROGBITS;
	struct dirent *de;
	DIR *d;
	int fd, entries = 0;

	(void)state;
	make_debug(debug, bid_bytes, true);
	assert_int_equal(mkdir(cache, 0755), 0);
	/* Section 2 (.text, NOBITS) becomes an empty PROGBITS section far away. */
	fd = open(debug, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &shoff, 8, 0x28), 8);
	assert_int_equal(pread(fd, &shentsize, 2, 0x3a), 2);
	assert_int_equal(pwrite(fd, &progbits, 4, (off_t)(shoff + 2u * shentsize + 4)), 4);
	assert_int_equal(pwrite(fd, &far, 8, (off_t)(shoff + 2u * shentsize + 0x18)), 8);
	assert_int_equal(pwrite(fd, &zero, 8, (off_t)(shoff + 2u * shentsize + 0x20)), 8);
	close(fd);
	assert_null(tk_debug_inflated(cache, debug, bid));
	assert_true(asprintf(&dir, "%s/.tk-inflated", cache) > 0);
	d = opendir(dir);
	while (d && (de = readdir(d)))
		entries += de->d_name[0] != '.' || strlen(de->d_name) > 2;
	if (d)
		closedir(d);
	assert_int_equal(entries, 0);
	free(dir);
	free(cache);
	free(debug);
}

static int setup(void **state)
{
	fill();
	return tk_tmpdir_setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_and_reuse),
		cmocka_unit_test(test_wrong_build_id_replaced),
		cmocka_unit_test(test_no_copy),
		cmocka_unit_test(test_total_limit),
		cmocka_unit_test(test_far_section),
	};

	return cmocka_run_group_tests(tests, setup, tk_tmpdir_teardown);
}
