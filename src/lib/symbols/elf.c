// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * ELF reading: build ids, symbol tables, SDT notes, sorted symbol tables.
 *
 * libelf maps the file and checks the section and segment headers; the
 * contents of notes we parse ourselves with the bounds-checked cursor, so
 * that every error names the file and the absolute offset of the bad byte.
 * libelf takes a file cut short and shows it without sections, so opening
 * checks that both header tables lie inside the file and calls a file
 * "truncated" (with the table's offset) when one does not.
 *
 * Core files (/proc/kcore, vmcore) are read through the same handle:
 * tk_elf_open_unmapped() asks libelf for ELF_C_READ, which reads the ELF
 * header at open and the program headers on demand with pread(), because
 * /proc/kcore cannot be mapped and its size is the kernel's address space
 * (ELF_C_READ_MMAP falls back to reading the whole file). The program
 * headers (tk_elf_program_headers()), the notes of a PT_NOTE segment
 * (tk_elf_segment_notes(), the same note parser as for sections) and the
 * bytes of a segment (tk_elf_read(), bounds-checked) serve kcore.c, which
 * copies the kernel's text out of a kcore.
 *
 * A table that is unreadable (a .symtab whose size runs past the file) is
 * an error of tk_elf_symbols() naming file and offset; its callers choose:
 * caching a file needs only its build id and notes, so the cache warns
 * and goes on, and the symbolizer warns and takes .dynsym. A broken PLT
 * relocation table costs the .plt names only, with a warning, as in perf.
 *
 * Sorted tables come from ELF symbols, from kallsyms text, or from a JIT's
 * /tmp/perf-PID.map ("START SIZE NAME" lines, hex, parsed as perf 6.1's
 * dso__load_perf_map() does, symbols kept with their sizes, unstretched).
 *
 * Note layout (both ELF classes; the 4-byte words are in the file's byte
 * order, and sections aligned to 8 pad to 8 instead of 4):
 *
 *	u32 namesz; u32 descsz; u32 type;
 *	name[namesz]  (NUL included), padded to the alignment
 *	desc[descsz], padded to the alignment (the last note may lack padding)
 *
 * Build id: the first note of type NT_GNU_BUILD_ID (3) named "GNU\0";
 * perf searches .note.gnu.build-id, then .notes (vmlinux), then .note
 * (vdso); we do the same and then try any other SHT_NOTE section, since
 * nothing else may lie in a SHT_NOTE section that has that name and type.
 * Ids longer than 20 bytes are cut to 20, as perf does, so the hex names
 * in the cache match.
 *
 * SDT note (.note.stapsdt, name "stapsdt\0", type NT_STAPSDT 3):
 *
 *	addr pc; addr base; addr semaphore;   (u64 on ELF64, u32 on ELF32)
 *	"provider\0" "name\0" "args\0"
 *
 * base is the link-time address of the one-byte .stapsdt.base section.
 * The probe's file offset is pc + sh_offset(.stapsdt.base) - base, which
 * is right even when prelink moved the image after the notes were written
 * (the notes are not allocated, so prelink leaves them alone). The
 * semaphore's file offset (the uprobe reference counter) is semaphore -
 * (sh_addr - sh_offset) of the .probes section that holds the semaphores.
 * Both are what perf 6.1 writes into its probe cache, so tracekit's cache
 * lines are byte-for-byte perf's.
 *
 * Symbol table for lookups: the symbols perf 6.1 keeps, found the way perf
 * 6.1 finds them, so that a report names the frame perf script names:
 *  - functions, IFUNCs and objects of loaded sections, and labels (named
 *    STT_NOTYPE symbols of a section whose name contains "text", not
 *    hidden or internal: ld.so's _start, _dl_start_user);
 *  - C++ names demangled as perf prints them by default (see demangle());
 *  - each inserted in table order into a red-black tree keyed by address;
 *    then, in address order, a size-0 symbol is stretched to the next one
 *    (the last to the end of the next page), and of symbols at one address
 *    the best stays (sym_better(): sized, non-weak, global, fewer leading
 *    underscores, longer name), so glibc's brk reads __brk; the stretching
 *    comes first, so of two size-0 aliases the later wins (perf script
 *    --kallsyms confirmed it); the survivor also records the name that
 *    addr2line would pick among its aliases (symtab_fixup()), which perf's
 *    inline mode prints for a binary without DWARF;
 *  - then the .plt entries named from .rela.plt, "NAME@plt" (plt_symbols()),
 *    added after the stretching, as perf adds them: the size-0 _init of
 *    crti.o was stretched over the .plt, and which of the overlapping
 *    symbols answers for a .plt address depends on the shape of the tree;
 *  - a lookup walks the tree as symbols__find() does.
 * The tree is a faithful red-black tree (see the tree's notes), not a
 * convenience: with a sorted array and binary search, 0x1030 of a small
 * test program read "strlen@plt+0x0" where perf says "_init+0x30".
 * Names are copied into one arena so the table outlives the ELF handle
 * (report keeps tables for every DSO while files come and go). bench-cache
 * measures 6.5 M lookups/s at random addresses in bash's 2561 symbols
 * (PLT entries included; release build, 40-byte tree nodes), against the
 * addr2line fork per address (~1 ms) that the design's complaint 5 is
 * about.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/elf.h>

#include "bytes.h"
#include "elf-internal.h"
#include "error.h"
#include "fsutil.h"

#ifndef NT_STAPSDT
#define NT_STAPSDT 3
#endif

struct sym_cache {
	struct tk_elf_symbol *syms;
	uint8_t *other; /* st_other (visibility) of each symbol */
	size_t count;
	int status; /* 0 not loaded, 1 loaded, negative errno */
};

struct tk_elf {
	char *name;
	int fd;
	void *mem;
	uint64_t size;
	Elf *e;
	bool big;
	bool is64;
	size_t shstrndx;
	struct sym_cache tabs[2]; /* TK_ELF_SYMTAB, TK_ELF_DYNSYM */
	struct tk_elf_sdt *sdt;
	size_t sdt_count;
	bool sdt_loaded;
};

static int elf_lib_fail(struct tk_elf *elf, const char *what)
{
	return tk_fail(EBADMSG, "%s: %s: %s", elf->name, what, elf_errmsg(-1));
}

/*
 * The section and program header tables must lie inside the file. libelf
 * accepts a file cut short and then shows no sections at all, which read
 * as "no build id" or "no .symtab"; a linker writes the section headers
 * last, so a cut file is recognised here, by the table it lost.
 */
static int check_extent(struct tk_elf *elf)
{
	static const char *const what[] = {"section headers", "program headers"};
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf->e, &eh))
		return elf_lib_fail(elf, "ELF header");
	for (size_t t = 0; t < 2; t++) {
		uint64_t off = t ? eh.e_phoff : eh.e_shoff;
		uint64_t num = t ? eh.e_phnum : eh.e_shnum;
		uint64_t ent = t ? eh.e_phentsize : eh.e_shentsize;

		if (!off)
			continue;
		/* Extended numbering (0, PN_XNUM): the count is in section 0, so it must exist. */
		if (!num || (t && num == PN_XNUM))
			num = 1;
		if (off > elf->size || num * ent > elf->size - off)
			return tk_fail_at(EBADMSG, elf->name, off,
					  "%" PRIu64 " %s of %" PRIu64 " bytes end past the end of "
					  "the file (%" PRIu64 " bytes): truncated",
					  num, what[t], ent, elf->size);
	}
	return 0;
}

static int elf_setup(struct tk_elf *elf)
{
	const char *ident;
	size_t n;
	int r;

	if (elf_kind(elf->e) != ELF_K_ELF)
		return tk_fail(ENOEXEC, "%s: not an ELF file", elf->name);
	ident = elf_getident(elf->e, &n);
	if (!ident || n < EI_NIDENT)
		return elf_lib_fail(elf, "bad ELF identification");
	if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64)
		return tk_fail_at(EBADMSG, elf->name, EI_CLASS, "unknown ELF class %u",
				  (unsigned)(uint8_t)ident[EI_CLASS]);
	if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB)
		return tk_fail_at(EBADMSG, elf->name, EI_DATA, "unknown ELF data encoding %u",
				  (unsigned)(uint8_t)ident[EI_DATA]);
	elf->is64 = ident[EI_CLASS] == ELFCLASS64;
	elf->big = ident[EI_DATA] == ELFDATA2MSB;
	r = check_extent(elf);
	if (r < 0)
		return r;
	if (elf_getshdrstrndx(elf->e, &elf->shstrndx) < 0)
		return elf_lib_fail(elf, "section header string table");
	return 0;
}

static struct tk_elf *elf_new(const char *name)
{
	struct tk_elf *elf;

	elf_version(EV_CURRENT);
	elf = calloc(1, sizeof(*elf));
	if (!elf)
		return NULL;
	elf->fd = -1;
	elf->name = strdup(name);
	if (!elf->name) {
		free(elf);
		return NULL;
	}
	return elf;
}

/*
 * The common end of the open calls: libelf must have taken the image, then
 * it is parsed; on failure everything is freed and errno set.
 */
static struct tk_elf *elf_finish_open(struct tk_elf *elf)
{
	int ret = elf->e ? elf_setup(elf) : elf_lib_fail(elf, "cannot read");

	if (ret >= 0)
		return elf;
	tk_elf_close(elf);
	errno = -ret;
	return NULL;
}

static struct tk_elf *elf_open_file(const char *path, Elf_Cmd how)
{
	struct tk_elf *elf = elf_new(path);
	struct stat st;
	int ret;

	if (!elf)
		return tk_fail_null(ENOMEM, "%s: out of memory", path);
	elf->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (elf->fd < 0) {
		ret = tk_fail(errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(elf->fd, &st) < 0) {
		ret = tk_fail(errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = tk_fail(EINVAL, "%s: not a regular file", path);
		goto fail;
	}
	elf->size = (uint64_t)st.st_size;
	elf->e = elf_begin(elf->fd, how, NULL);
	return elf_finish_open(elf);
fail:
	tk_elf_close(elf);
	errno = -ret;
	return NULL;
}

TK_API struct tk_elf *tk_elf_open(const char *path)
{
	return elf_open_file(path, ELF_C_READ_MMAP);
}

/*
 * ELF_C_READ makes libelf read the ELF header only and fetch the rest with
 * pread() when asked; ELF_C_READ_MMAP would fall back to reading the whole
 * file where mmap() fails, which for /proc/kcore is the address space.
 */
TK_API struct tk_elf *tk_elf_open_unmapped(const char *path)
{
	return elf_open_file(path, ELF_C_READ);
}

TK_API struct tk_elf *tk_elf_open_mem(const void *data, size_t len, const char *name)
{
	struct tk_elf *elf = elf_new(name ? name : "(memory)");
	int ret;

	if (!elf)
		return tk_fail_null(ENOMEM, "out of memory");
	elf->mem = malloc(len ? len : 1);
	if (!elf->mem) {
		ret = tk_fail(ENOMEM, "%s: out of memory", elf->name);
		goto fail;
	}
	memcpy(elf->mem, data, len);
	elf->size = len;
	elf->e = elf_memory(elf->mem, len);
	return elf_finish_open(elf);
fail:
	tk_elf_close(elf);
	errno = -ret;
	return NULL;
}

TK_API void tk_elf_close(struct tk_elf *elf)
{
	if (!elf)
		return;
	for (size_t i = 0; i < 2; i++) {
		free(elf->tabs[i].syms);
		free(elf->tabs[i].other);
	}
	free(elf->sdt);
	if (elf->e)
		elf_end(elf->e);
	if (elf->fd >= 0)
		close(elf->fd);
	free(elf->mem);
	free(elf->name);
	free(elf);
}

TK_API const char *tk_elf_name(const struct tk_elf *elf)
{
	return elf->name;
}

TK_API bool tk_elf_is_64(const struct tk_elf *elf)
{
	return elf->is64;
}

TK_API int tk_elf_build_id_hex(const uint8_t *id, size_t len, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";

	if (!len || len > TK_BUILD_ID_MAX || cap < 2 * len + 1)
		return tk_fail(EINVAL, "bad build id length %zu", len);
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * len] = '\0';
	return (int)(2 * len);
}

/* One note out of a note area; the name and desc are borrowed from it. */
struct note {
	uint32_t type;
	uint32_t namesz;
	uint32_t descsz;
	const uint8_t *name;
	const uint8_t *desc;
	uint64_t offset; /* absolute offset of the note header */
	uint64_t desc_offset;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * Next note of the area, or 0 at its end (trailing bytes shorter than a
 * header are padding), or -EBADMSG.
 */
static int note_next(struct tk_cursor *c, uint64_t align, const char *name, struct note *n)
{
	uint64_t padded;
	size_t left;

	if (tk_cursor_left(c) < 12)
		return 0;
	n->offset = tk_cursor_offset(c);
	tk_cursor_u32(c, &n->namesz);
	tk_cursor_u32(c, &n->descsz);
	tk_cursor_u32(c, &n->type);
	left = tk_cursor_left(c);
	padded = align_up(n->namesz, align);
	if (padded > left)
		return tk_fail_at(EBADMSG, name, n->offset,
				  "note name size %" PRIu32
				  " exceeds the %zu bytes left in the notes",
				  n->namesz, left);
	tk_cursor_bytes(c, padded, &n->name);
	left = tk_cursor_left(c);
	n->desc_offset = tk_cursor_offset(c);
	if (n->descsz > left)
		return tk_fail_at(EBADMSG, name, n->offset,
				  "note desc size %" PRIu32
				  " exceeds the %zu bytes left in the notes",
				  n->descsz, left);
	padded = align_up(n->descsz, align);
	/* The final note of an area may end without its padding. */
	if (padded > left)
		padded = n->descsz;
	tk_cursor_bytes(c, padded, &n->desc);
	return 1;
}

static bool note_named(const struct note *n, const char *want)
{
	size_t len = strlen(want) + 1;

	return n->namesz == len && !memcmp(n->name, want, len);
}

TK_API int tk_elf_notes_build_id(const void *notes, size_t len, bool big, const char *name,
				 uint64_t base_offset, uint8_t *id, size_t cap)
{
	struct tk_cursor c;
	struct note n = {0};
	int r;

	tk_cursor_init(&c, notes, len, base_offset, big);
	while ((r = note_next(&c, 4, name, &n)) > 0) {
		size_t take;

		if (n.type != NT_GNU_BUILD_ID || !note_named(&n, "GNU"))
			continue;
		if (n.descsz == 0)
			return tk_fail_at(EBADMSG, name, n.offset, "empty build-id note");
		take = n.descsz < TK_BUILD_ID_MAX ? n.descsz : TK_BUILD_ID_MAX;
		if (take > cap)
			return tk_fail(EINVAL, "build id buffer of %zu bytes is too small", cap);
		memcpy(id, n.desc, take);
		return (int)take;
	}
	if (r < 0)
		return r;
	return tk_fail(ENOENT, "%s: no build id", name);
}

/* Raw bytes of a section, checked against the file size. */
static int section_bytes(struct tk_elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			 const uint8_t **data, size_t *len)
{
	Elf_Data *d;

	if (sh->sh_type == SHT_NOBITS) {
		*data = NULL;
		*len = 0;
		return 0;
	}
	if (sh->sh_offset > elf->size || sh->sh_size > elf->size - sh->sh_offset)
		return tk_fail_at(EBADMSG, elf->name, sh->sh_offset,
				  "section of %" PRIu64 " bytes exceeds the file size %" PRIu64,
				  (uint64_t)sh->sh_size, elf->size);
	d = elf_rawdata(scn, NULL);
	if (!d)
		return tk_fail_at(EBADMSG, elf->name, sh->sh_offset, "section data: %s",
				  elf_errmsg(-1));
	*data = d->d_buf;
	*len = d->d_size;
	return 0;
}

/* The section called @want (and its header), or NULL. */
static Elf_Scn *find_section(struct tk_elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf->e, scn))) {
		const char *nm;

		if (!gelf_getshdr(scn, sh))
			continue;
		nm = elf_strptr(elf->e, elf->shstrndx, sh->sh_name);
		if (nm && !strcmp(nm, want))
			return scn;
	}
	return NULL;
}

static int scn_build_id(struct tk_elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint8_t *id,
			size_t cap)
{
	const uint8_t *data;
	size_t len;
	int r;

	r = section_bytes(elf, scn, sh, &data, &len);
	if (r < 0)
		return r;
	if (!len)
		return tk_fail(ENOENT, "%s: no build id", elf->name);
	return tk_elf_notes_build_id(data, len, elf->big, elf->name, sh->sh_offset, id, cap);
}

TK_API int tk_elf_build_id(struct tk_elf *elf, uint8_t *id, size_t cap)
{
	static const char *const names[] = {".note.gnu.build-id", ".notes", ".note"};
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int r;

	for (size_t i = 0; i < 3; i++) {
		scn = find_section(elf, names[i], &sh);
		if (!scn || sh.sh_type != SHT_NOTE)
			continue;
		r = scn_build_id(elf, scn, &sh, id, cap);
		if (r != -ENOENT)
			return r;
	}
	/* Linkers may name the section otherwise; any note section will do. */
	while ((scn = elf_nextscn(elf->e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (sh.sh_addralign > 4)
			continue; /* .note.gnu.property and friends: 8-aligned, no build id */
		r = scn_build_id(elf, scn, &sh, id, cap);
		if (r != -ENOENT)
			return r;
	}
	return tk_fail(ENOENT, "%s: no build id", elf->name);
}

TK_API int tk_elf_kernel_build_id(uint8_t *id, size_t cap)
{
	static const char path[] = "/sys/kernel/notes";
	uint8_t buf[4096];
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tk_fail(errno, "%s: %s", path, strerror(errno));
	/* sysfs binary attribute: one read returns the whole (small) area. */
	n = read(fd, buf, sizeof(buf));
	r = errno;
	close(fd);
	if (n < 0)
		return tk_fail(r, "%s: %s", path, strerror(r));
	return tk_elf_notes_build_id(buf, (size_t)n, false, path, 0, id, cap);
}

static int load_symbols(struct tk_elf *elf, enum tk_elf_symtab_kind kind)
{
	struct sym_cache *tab = &elf->tabs[kind];
	uint32_t want = kind == TK_ELF_SYMTAB ? SHT_SYMTAB : SHT_DYNSYM;
	const uint8_t *strs;
	size_t strsz, entsize, n;
	Elf_Scn *scn = NULL, *strscn;
	GElf_Shdr sh, strsh;
	Elf_Data *d;
	int r;

	while ((scn = elf_nextscn(elf->e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
			break;
	if (!scn)
		return tk_fail(ENOENT, "%s: no %s", elf->name,
			       kind == TK_ELF_SYMTAB ? ".symtab" : ".dynsym");
	strscn = elf_getscn(elf->e, sh.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB)
		return tk_fail_at(EBADMSG, elf->name, sh.sh_offset,
				  "symbol table links to section %" PRIu32 ", not a string table",
				  (uint32_t)sh.sh_link);
	r = section_bytes(elf, strscn, &strsh, &strs, &strsz);
	if (r < 0)
		return r;
	if (sh.sh_offset > elf->size || sh.sh_size > elf->size - sh.sh_offset)
		return tk_fail_at(EBADMSG, elf->name, sh.sh_offset,
				  "symbol table of %" PRIu64
				  " bytes exceeds the file size %" PRIu64,
				  (uint64_t)sh.sh_size, elf->size);
	d = elf_getdata(scn, NULL);
	if (!d)
		return tk_fail_at(EBADMSG, elf->name, sh.sh_offset, "symbol table: %s",
				  elf_errmsg(-1));
	entsize = gelf_fsize(elf->e, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return elf_lib_fail(elf, "symbol size");
	n = sh.sh_size / entsize;
	tab->syms = calloc(n ? n : 1, sizeof(*tab->syms));
	tab->other = calloc(n ? n : 1, sizeof(*tab->other));
	if (!tab->syms || !tab->other)
		return tk_fail(ENOMEM, "%s: out of memory for %zu symbols", elf->name, n);
	tab->count = 0;
	for (size_t i = 1; i < n; i++) {
		struct tk_elf_symbol *s = &tab->syms[tab->count];
		uint64_t off = sh.sh_offset + i * entsize;
		GElf_Sym sym;

		if (!gelf_getsym(d, (int)i, &sym))
			return tk_fail_at(EBADMSG, elf->name, off, "symbol %zu: %s", i,
					  elf_errmsg(-1));
		if (sym.st_name >= strsz || !memchr(strs + sym.st_name, 0, strsz - sym.st_name))
			return tk_fail_at(EBADMSG, elf->name, off,
					  "symbol %zu: name offset %" PRIu32
					  " outside its string table of %zu bytes",
					  i, (uint32_t)sym.st_name, strsz);
		s->name = (const char *)strs + sym.st_name;
		s->value = sym.st_value;
		s->size = sym.st_size;
		s->shndx = sym.st_shndx;
		s->type = GELF_ST_TYPE(sym.st_info);
		s->bind = GELF_ST_BIND(sym.st_info);
		tab->other[tab->count] = sym.st_other;
		tab->count++;
	}
	return 0;
}

TK_API int tk_elf_symbols(struct tk_elf *elf, enum tk_elf_symtab_kind kind,
			  const struct tk_elf_symbol **syms, size_t *count)
{
	if (kind == TK_ELF_ANY) {
		int r = tk_elf_symbols(elf, TK_ELF_SYMTAB, syms, count);

		return r == -ENOENT ? tk_elf_symbols(elf, TK_ELF_DYNSYM, syms, count) : r;
	}
	if ((unsigned)kind > TK_ELF_DYNSYM)
		return tk_fail(EINVAL, "bad symbol table kind %d", (int)kind);
	struct sym_cache *tab = &elf->tabs[kind];

	if (tab->status == 0) {
		int r = load_symbols(elf, kind);

		if (r < 0) {
			free(tab->syms);
			free(tab->other);
			tab->syms = NULL;
			tab->other = NULL;
			tab->count = 0;
		}
		tab->status = r < 0 ? r : 1;
	}
	if (tab->status < 0) {
		/* Keep tk_errmsg() meaningful on a repeated call. */
		if (tab->status == -ENOENT)
			return tk_fail(ENOENT, "%s: no %s", elf->name,
				       kind == TK_ELF_SYMTAB ? ".symtab" : ".dynsym");
		return tab->status;
	}
	*syms = tab->syms;
	*count = tab->count;
	return 0;
}

TK_API int tk_elf_sdt_parse(const void *notes, size_t len, bool big, bool is64, const char *name,
			    uint64_t base_offset, tk_elf_sdt_fn fn, void *ctx)
{
	struct tk_cursor c;
	struct note n = {0};
	int r, count = 0;

	tk_cursor_init(&c, notes, len, base_offset, big);
	while ((r = note_next(&c, 4, name, &n)) > 0) {
		struct tk_elf_sdt sdt = {0};
		struct tk_cursor d;
		uint64_t a[3];

		if (n.type != NT_STAPSDT || !note_named(&n, "stapsdt"))
			continue;
		tk_cursor_init(&d, n.desc, n.descsz, n.desc_offset, big);
		for (size_t i = 0; i < 3; i++) {
			uint32_t v32;
			bool ok = is64 ? tk_cursor_u64(&d, &a[i]) : tk_cursor_u32(&d, &v32);

			if (!ok)
				return tk_fail_at(EBADMSG, name, n.offset,
						  "SDT note desc of %" PRIu32
						  " bytes is too short for its addresses",
						  n.descsz);
			if (!is64)
				a[i] = v32;
		}
		if (!tk_cursor_cstr(&d, &sdt.provider, NULL) ||
		    !tk_cursor_cstr(&d, &sdt.name, NULL))
			return tk_fail_at(
				EBADMSG, name, tk_cursor_offset(&d),
				"SDT note provider or name not NUL-terminated in its desc");
		if (!sdt.provider[0] || !sdt.name[0])
			return tk_fail_at(EBADMSG, name, n.offset,
					  "SDT note with an empty provider or name");
		if (tk_cursor_left(&d) == 0)
			sdt.args = "";
		else if (!tk_cursor_cstr(&d, &sdt.args, NULL))
			return tk_fail_at(EBADMSG, name, tk_cursor_offset(&d),
					  "SDT note arguments not NUL-terminated in its desc");
		sdt.pc = a[0];
		sdt.base = a[1];
		sdt.semaphore = a[2];
		sdt.offset = a[0];
		sdt.sem_offset = a[2];
		sdt.note_offset = n.offset;
		if (count == INT32_MAX)
			return tk_fail_at(EBADMSG, name, n.offset, "too many SDT notes");
		count++;
		if (fn) {
			int fr = fn(&sdt, ctx);

			if (fr < 0)
				return fr;
		}
	}
	return r < 0 ? r : count;
}

struct sdt_collect {
	struct tk_elf_sdt *v;
	size_t n, cap;
};

static int sdt_collect_one(const struct tk_elf_sdt *note, void *ctx)
{
	struct sdt_collect *c = ctx;

	if (c->n == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 16;
		struct tk_elf_sdt *v = realloc(c->v, ncap * sizeof(*v));

		if (!v)
			return tk_fail(ENOMEM, "out of memory for SDT notes");
		c->v = v;
		c->cap = ncap;
	}
	c->v[c->n++] = *note;
	return 0;
}

TK_API int tk_elf_sdt_notes(struct tk_elf *elf, const struct tk_elf_sdt **notes, size_t *count)
{
	struct sdt_collect col = {0};
	const uint8_t *data;
	GElf_Shdr sh, bsh, psh;
	Elf_Scn *scn;
	bool have_base, have_probes;
	size_t len;
	int r;

	if (elf->sdt_loaded) {
		*notes = elf->sdt;
		*count = elf->sdt_count;
		return 0;
	}
	scn = find_section(elf, ".note.stapsdt", &sh);
	if (!scn || sh.sh_type != SHT_NOTE) {
		elf->sdt_loaded = true;
		*notes = NULL;
		*count = 0;
		return 0;
	}
	r = section_bytes(elf, scn, &sh, &data, &len);
	if (r < 0)
		return r;
	r = tk_elf_sdt_parse(data, len, elf->big, elf->is64, elf->name, sh.sh_offset,
			     sdt_collect_one, &col);
	if (r < 0) {
		free(col.v);
		return r;
	}
	have_base = find_section(elf, ".stapsdt.base", &bsh) != NULL;
	have_probes = find_section(elf, ".probes", &psh) != NULL;
	for (size_t i = 0; i < col.n; i++) {
		struct tk_elf_sdt *s = &col.v[i];
		uint64_t off;

		/* Unsigned wrap-around is intended: the deltas may be negative. */
		if (have_base)
			s->offset = s->pc + bsh.sh_offset - s->base;
		else if (!tk_elf_vaddr_to_offset(elf, s->pc, &off))
			s->offset = off;
		if (!s->semaphore)
			s->sem_offset = 0;
		else if (have_probes)
			s->sem_offset = s->semaphore - (psh.sh_addr - psh.sh_offset);
		else if (!tk_elf_vaddr_to_offset(elf, s->semaphore, &off))
			s->sem_offset = off;
	}
	elf->sdt = col.v;
	elf->sdt_count = col.n;
	elf->sdt_loaded = true;
	*notes = elf->sdt;
	*count = elf->sdt_count;
	return 0;
}

/*
 * Translate between virtual addresses and file offsets through the PT_LOAD
 * segment that holds @in; @to_offset picks the direction.
 */
static int map_through_segments(struct tk_elf *elf, uint64_t in, bool to_offset, uint64_t *out)
{
	size_t n;

	if (elf_getphdrnum(elf->e, &n) < 0)
		return elf_lib_fail(elf, "program headers");
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t from, to;

		if (!gelf_getphdr(elf->e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		from = to_offset ? ph.p_vaddr : ph.p_offset;
		to = to_offset ? ph.p_offset : ph.p_vaddr;
		if (in >= from && in - from < ph.p_filesz) {
			*out = in - from + to;
			return 0;
		}
	}
	return tk_fail(ENOENT, "%s: %s 0x%" PRIx64 " is in no loadable segment", elf->name,
		       to_offset ? "address" : "file offset", in);
}

TK_API int tk_elf_vaddr_to_offset(struct tk_elf *elf, uint64_t vaddr, uint64_t *offset)
{
	return map_through_segments(elf, vaddr, true, offset);
}

TK_API int tk_elf_offset_to_vaddr(struct tk_elf *elf, uint64_t offset, uint64_t *vaddr)
{
	return map_through_segments(elf, offset, false, vaddr);
}

TK_API int tk_elf_header(struct tk_elf *elf, struct tk_elf_header *out)
{
	const char *ident;
	size_t phnum;
	GElf_Ehdr eh;

	ident = elf_getident(elf->e, NULL);
	if (!gelf_getehdr(elf->e, &eh) || !ident)
		return elf_lib_fail(elf, "ELF header");
	if (elf_getphdrnum(elf->e, &phnum) < 0)
		return elf_lib_fail(elf, "program header count");
	memcpy(out->ident, ident, sizeof(out->ident));
	out->type = eh.e_type;
	out->machine = eh.e_machine;
	out->phoff = eh.e_phoff;
	out->phentsize = eh.e_phentsize;
	out->phnum = (uint32_t)phnum;
	return 0;
}

TK_API int tk_elf_program_headers(struct tk_elf *elf, struct tk_elf_phdr *out, size_t cap)
{
	size_t n;

	if (elf_getphdrnum(elf->e, &n) < 0)
		return elf_lib_fail(elf, "program headers");
	if (n > INT32_MAX)
		return tk_fail(EBADMSG, "%s: too many program headers", elf->name);
	for (size_t i = 0; i < n && i < cap; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf->e, (int)i, &ph))
			return elf_lib_fail(elf, "program header");
		out[i].type = ph.p_type;
		out[i].flags = ph.p_flags;
		out[i].offset = ph.p_offset;
		out[i].vaddr = ph.p_vaddr;
		out[i].paddr = ph.p_paddr;
		out[i].filesz = ph.p_filesz;
		out[i].memsz = ph.p_memsz;
		out[i].align = ph.p_align;
	}
	return (int)n;
}

TK_API uint64_t tk_elf_size(const struct tk_elf *elf)
{
	return elf->size;
}

TK_API int tk_elf_read(struct tk_elf *elf, uint64_t offset, void *buf, size_t len)
{
	int64_t n;

	if (offset > elf->size || len > elf->size - offset)
		return tk_fail_at(EBADMSG, elf->name, offset > elf->size ? elf->size : offset,
				  "%zu bytes at 0x%" PRIx64
				  " run past the end of the file (%" PRIu64 " bytes)",
				  len, offset, elf->size);
	if (elf->mem) {
		memcpy(buf, (const uint8_t *)elf->mem + offset, len);
		return 0;
	}
	n = tk_pread_full(elf->fd, buf, len, offset);
	if (n < 0)
		return tk_fail_at((int)-n, elf->name, offset, "cannot read %zu bytes: %s", len,
				  strerror((int)-n));
	if ((uint64_t)n < len)
		return tk_fail_at(EBADMSG, elf->name, offset + (uint64_t)n,
				  "the file ends inside a read of %zu bytes", len);
	return 0;
}

TK_API int tk_elf_segment_notes(struct tk_elf *elf, const struct tk_elf_phdr *seg,
				uint64_t max_bytes, tk_elf_note_fn fn, void *ctx)
{
	struct tk_cursor c;
	struct note n = {0};
	uint8_t *bytes;
	int r;

	if (seg->type != PT_NOTE)
		return tk_fail(EINVAL, "%s: program header of type %" PRIu32 " is not PT_NOTE",
			       elf->name, seg->type);
	if (seg->filesz > max_bytes)
		return tk_fail_at(EFBIG, elf->name, seg->offset,
				  "note segment of %" PRIu64 " bytes exceeds %" PRIu64, seg->filesz,
				  max_bytes);
	bytes = malloc(seg->filesz ? seg->filesz : 1);
	if (!bytes)
		return tk_fail(ENOMEM, "%s: out of memory", elf->name);
	r = tk_elf_read(elf, seg->offset, bytes, seg->filesz);
	if (r < 0) {
		free(bytes);
		return r;
	}
	tk_cursor_init(&c, bytes, seg->filesz, seg->offset, elf->big);
	while ((r = note_next(&c, 4, elf->name, &n)) > 0) {
		struct tk_elf_note pub = {
			.type = n.type,
			.namesz = n.namesz,
			.descsz = n.descsz,
			.name = (const char *)n.name,
			.desc = n.desc,
			.offset = n.offset,
		};

		r = fn(&pub, ctx);
		if (r)
			break;
	}
	free(bytes);
	return r;
}

TK_API int tk_elf_segments(struct tk_elf *elf, struct tk_elf_segment *out, size_t cap)
{
	size_t n, count = 0;

	if (elf_getphdrnum(elf->e, &n) < 0)
		return elf_lib_fail(elf, "program headers");
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf->e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (count < cap) {
			out[count].offset = ph.p_offset;
			out[count].filesz = ph.p_filesz;
			out[count].vaddr = ph.p_vaddr;
			out[count].memsz = ph.p_memsz;
			out[count].flags = ph.p_flags;
		}
		if (count == INT32_MAX)
			return tk_fail(EBADMSG, "%s: too many segments", elf->name);
		count++;
	}
	return (int)count;
}

/* ---- symbol tables, searched as perf 6.1 searches them ---- */

#define NIL UINT32_MAX

struct tk_sym {
	uint64_t start;
	uint64_t end;		      /* exclusive; == start: size 0 (matches start only) */
	uint32_t name;		      /* offset into the arena */
	uint32_t left, right, parent; /* red-black tree links, NIL for none */
	uint8_t bind;		      /* STB_* (kallsyms: from the type letter, as perf maps it) */
	bool red;
	bool module;  /* kallsyms: a module's symbol ("\t[mod]") */
	uint8_t type; /* STT_* of an ELF symbol (else 0) */
	uint32_t a2l; /* 1 + the name addr2line gives, 0: this one's (symtab_fixup()) */
};

struct tk_elf_symtab {
	struct tk_sym *syms; /* in insertion order; erased ones stay, unlinked */
	size_t count;	     /* slots used */
	size_t live;	     /* symbols in the tree */
	uint32_t root;
	char *names;
};

/*
 * The tree. perf keeps a DSO's symbols in a red-black tree keyed by start
 * address (equal keys go right, so they stay in insertion order) and
 * searches it without backtracking: the first node on the path whose
 * range holds the address wins. When ranges overlap, as when a size-0
 * _init stretched to the next symbol covers the .plt entries added after
 * the stretching, which symbol answers depends on the shape of the tree.
 * To name the same symbol perf does, we build the same shape: the same
 * insertions and removals in the same order, with the textbook (CLRS)
 * insertion and deletion fix-ups, which Linux's lib/rbtree.c implements
 * case for case. Lookups walk the tree the way symbols__find() does.
 */
static struct tk_sym *rbn(struct tk_elf_symtab *st, uint32_t i)
{
	return &st->syms[i];
}

static bool is_red(struct tk_elf_symtab *st, uint32_t i)
{
	return i != NIL && st->syms[i].red;
}

/* Make @to take @from's place under @from's parent. */
static void rb_replace_child(struct tk_elf_symtab *st, uint32_t from, uint32_t to)
{
	uint32_t p = rbn(st, from)->parent;

	if (p == NIL)
		st->root = to;
	else if (rbn(st, p)->left == from)
		rbn(st, p)->left = to;
	else
		rbn(st, p)->right = to;
	if (to != NIL)
		rbn(st, to)->parent = p;
}

/* Rotate at @x: its right child takes its place when @left, its left child otherwise. */
static void rb_rotate(struct tk_elf_symtab *st, uint32_t x, bool left)
{
	uint32_t y = left ? rbn(st, x)->right : rbn(st, x)->left;
	uint32_t inner = left ? rbn(st, y)->left : rbn(st, y)->right;

	if (left)
		rbn(st, x)->right = inner;
	else
		rbn(st, x)->left = inner;
	if (inner != NIL)
		rbn(st, inner)->parent = x;
	rb_replace_child(st, x, y);
	if (left)
		rbn(st, y)->left = x;
	else
		rbn(st, y)->right = x;
	rbn(st, x)->parent = y;
}

static void rb_insert(struct tk_elf_symtab *st, uint32_t z)
{
	uint32_t y = NIL, x = st->root;

	while (x != NIL) {
		y = x;
		x = rbn(st, z)->start < rbn(st, x)->start ? rbn(st, x)->left : rbn(st, x)->right;
	}
	rbn(st, z)->parent = y;
	rbn(st, z)->left = rbn(st, z)->right = NIL;
	rbn(st, z)->red = true;
	if (y == NIL)
		st->root = z;
	else if (rbn(st, z)->start < rbn(st, y)->start)
		rbn(st, y)->left = z;
	else
		rbn(st, y)->right = z;
	while (z != st->root && is_red(st, rbn(st, z)->parent)) {
		uint32_t p = rbn(st, z)->parent, g = rbn(st, p)->parent;
		bool left = rbn(st, g)->left == p;
		uint32_t u = left ? rbn(st, g)->right : rbn(st, g)->left;

		if (is_red(st, u)) {
			rbn(st, p)->red = rbn(st, u)->red = false;
			rbn(st, g)->red = true;
			z = g;
			continue;
		}
		if (z == (left ? rbn(st, p)->right : rbn(st, p)->left)) {
			z = p;
			rb_rotate(st, z, left);
			p = rbn(st, z)->parent;
		}
		rbn(st, p)->red = false;
		rbn(st, g)->red = true;
		rb_rotate(st, g, !left);
	}
	rbn(st, st->root)->red = false;
	st->live++;
}

static uint32_t rb_first(struct tk_elf_symtab *st, uint32_t n)
{
	while (n != NIL && rbn(st, n)->left != NIL)
		n = rbn(st, n)->left;
	return n;
}

static uint32_t rb_next(struct tk_elf_symtab *st, uint32_t n)
{
	uint32_t p;

	if (rbn(st, n)->right != NIL)
		return rb_first(st, rbn(st, n)->right);
	while ((p = rbn(st, n)->parent) != NIL && rbn(st, p)->right == n)
		n = p;
	return p;
}

/* Deletion fix-up: @x (maybe NIL) under @xp is one black short. */
static void rb_erase_fixup(struct tk_elf_symtab *st, uint32_t x, uint32_t xp)
{
	while (x != st->root && !is_red(st, x)) {
		bool left = rbn(st, xp)->left == x;
		uint32_t w = left ? rbn(st, xp)->right : rbn(st, xp)->left;

		if (is_red(st, w)) {
			rbn(st, w)->red = false;
			rbn(st, xp)->red = true;
			rb_rotate(st, xp, left);
			w = left ? rbn(st, xp)->right : rbn(st, xp)->left;
		}
		if (!is_red(st, rbn(st, w)->left) && !is_red(st, rbn(st, w)->right)) {
			rbn(st, w)->red = true;
			x = xp;
			xp = rbn(st, x)->parent;
			continue;
		}
		if (!is_red(st, left ? rbn(st, w)->right : rbn(st, w)->left)) {
			rbn(st, left ? rbn(st, w)->left : rbn(st, w)->right)->red = false;
			rbn(st, w)->red = true;
			rb_rotate(st, w, !left);
			w = left ? rbn(st, xp)->right : rbn(st, xp)->left;
		}
		rbn(st, w)->red = rbn(st, xp)->red;
		rbn(st, xp)->red = false;
		rbn(st, left ? rbn(st, w)->right : rbn(st, w)->left)->red = false;
		rb_rotate(st, xp, left);
		x = st->root;
	}
	if (x != NIL)
		rbn(st, x)->red = false;
}

static void rb_erase(struct tk_elf_symtab *st, uint32_t z)
{
	uint32_t y = z, x, xp;
	bool y_red = rbn(st, y)->red;

	if (rbn(st, z)->left == NIL || rbn(st, z)->right == NIL) {
		x = rbn(st, z)->left == NIL ? rbn(st, z)->right : rbn(st, z)->left;
		xp = rbn(st, z)->parent;
		rb_replace_child(st, z, x);
	} else {
		/* The successor takes z's place and colour. */
		y = rb_first(st, rbn(st, z)->right);
		y_red = rbn(st, y)->red;
		x = rbn(st, y)->right;
		if (rbn(st, y)->parent == z) {
			xp = y;
		} else {
			xp = rbn(st, y)->parent;
			rb_replace_child(st, y, x);
			rbn(st, y)->right = rbn(st, z)->right;
			rbn(st, rbn(st, y)->right)->parent = y;
		}
		rb_replace_child(st, z, y);
		rbn(st, y)->left = rbn(st, z)->left;
		rbn(st, rbn(st, y)->left)->parent = y;
		rbn(st, y)->red = rbn(st, z)->red;
	}
	if (!y_red)
		rb_erase_fixup(st, x, xp);
	rbn(st, z)->left = rbn(st, z)->right = rbn(st, z)->parent = NIL;
	st->live--;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Whether @b should replace @a, the symbol kept so far at the same address.
 * This is perf 6.1's choice (symbol.c, choose_best_symbol), so that reports
 * name the same function perf does: a sized symbol beats a size-0 one
 * (sizes as symbols__fixup_end() left them), a non-weak beats a weak one
 * (glibc's LOCAL __brk beats its WEAK brk), a global beats a local, fewer
 * leading underscores win, then the longer name, and on a full tie the one
 * earlier in the tree (x86's rule against "SyS" syscall aliases included).
 */
static bool sym_better(const struct tk_elf_symtab *st, const struct tk_sym *a,
		       const struct tk_sym *b)
{
	const char *na = st->names + a->name, *nb = st->names + b->name;
	size_t ua, ub, la, lb;

	if ((a->end == a->start) != (b->end == b->start))
		return b->end != b->start;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return b->bind == STB_GLOBAL;
	ua = leading_underscores(na);
	ub = leading_underscores(nb);
	if (ua != ub)
		return ub < ua;
	la = strlen(na);
	lb = strlen(nb);
	if (la != lb)
		return lb > la;
	return !strncmp(na, "SyS", 3) || !strncmp(na, "compat_SyS", 10);
}

static uint64_t page_up(uint64_t v)
{
	return (v + 4095) & ~4095ull;
}

/* addr2line names no data: an object's address gets "??", and perf its own line. */
static bool a2l_names(const struct tk_sym *s)
{
	return s->type == STT_FUNC || s->type == STT_GNU_IFUNC;
}

/*
 * Whether addr2line (binutils' elf_find_function()) takes @b over @a, an
 * earlier entry of the table at the same address and of the same size:
 * a function over anything else, a typed symbol over an untyped one, and
 * on a tie the one it met first.
 */
static bool a2l_better(const struct tk_sym *a, const struct tk_sym *b)
{
	bool fa = a2l_names(a), fb = a2l_names(b);

	if (fa != fb)
		return fb;
	return a->type == STT_NOTYPE && b->type != STT_NOTYPE;
}

/*
 * perf's symbols__fixup_end() then symbols__fixup_duplicate(), in tree
 * order: a size-0 symbol reaches to the next one (in kallsyms, from the
 * kernel's last symbol to a module's first, or back, only to the end of
 * the next page), the last to the end of the next page; then of symbols
 * at one address the best stays, compared pairwise as they come.
 *
 * perf's inline mode asks addr2line for every frame's function; without
 * DWARF addr2line answers from the same table by its own rule among
 * aliases (a2l_better()), and perf prints that name as an inlined frame
 * when it is not the symbol's. So the survivor of a run at one address
 * keeps addr2line's pick in a2l when it is another name, a function, and
 * the run's symbols all have one nonzero size: addr2line then sees each
 * of them cover the same addresses (stretching changed none of them; of
 * size-0 ones it stretched the last, so their ends differ).
 */
static void symtab_fixup(struct tk_elf_symtab *st, bool kallsyms)
{
	uint32_t prev = rb_first(st, st->root), cur, pick = NIL;
	bool same = false;

	if (prev == NIL)
		return;
	for (cur = rb_next(st, prev); cur != NIL; prev = cur, cur = rb_next(st, cur)) {
		struct tk_sym *p = rbn(st, prev);

		if (p->end != p->start)
			continue;
		if (kallsyms && p->module != rbn(st, cur)->module)
			p->end = page_up(p->end + 4096);
		else
			p->end = rbn(st, cur)->start;
	}
	if (rbn(st, prev)->end == rbn(st, prev)->start)
		rbn(st, prev)->end = page_up(rbn(st, prev)->start) + 4096;
	for (cur = rb_first(st, st->root); cur != NIL;) {
		uint32_t next = rb_next(st, cur);

		if (pick == NIL) {
			pick = cur;
			same = rbn(st, cur)->end != rbn(st, cur)->start;
		}
		if (next == NIL || rbn(st, cur)->start != rbn(st, next)->start) {
			if (!kallsyms && pick != cur && same && a2l_names(rbn(st, pick)) &&
			    strcmp(st->names + rbn(st, pick)->name, st->names + rbn(st, cur)->name))
				rbn(st, cur)->a2l = rbn(st, pick)->name + 1;
			pick = NIL;
			cur = next;
			continue;
		}
		same = same && rbn(st, next)->end == rbn(st, pick)->end;
		if (a2l_better(rbn(st, pick), rbn(st, next)))
			pick = next;
		if (sym_better(st, rbn(st, cur), rbn(st, next))) {
			rb_erase(st, cur);
			cur = next;
		} else {
			rb_erase(st, next);
		}
	}
}

/* ---- C++ names, as perf 6.1 prints them ---- */

static char *(*cxa_demangle)(const char *mangled, char *buf, size_t *len, int *status);
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_load(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL), *fn;

	/* Kept open for the life of the process: the function is used from then on. */
	fn = h ? dlsym(h, "__cxa_demangle") : NULL;
	memcpy(&cxa_demangle, &fn, sizeof(fn));
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Index of the bracket that opens the one closing s[end - 1], or -1. */
static long opening(const char *s, size_t end, char open, char close)
{
	long depth = 0;

	for (size_t i = end; i-- > 0;) {
		if (s[i] == close)
			depth++;
		else if (s[i] == open && --depth == 0)
			return (long)i;
	}
	return -1;
}

/*
 * Length of the operator name at s[i] ("operator<<", "operator new[]"),
 * or 0; *conv is set for a conversion operator ("operator int").
 */
static size_t operator_len(const char *s, size_t i, size_t len, bool *conv)
{
	static const char *const ops[] = {
		"->*", "<=>", "<<=", ">>=", "()", "[]",	  "<<", ">>", "<=", ">=",
		"==",  "!=",  "&&",  "||",  "++", "--",	  "+=", "-=", "*=", "/=",
		"%=",  "&=",  "|=",  "^=",  "->", "\"\"", ",",	"+",  "-",  "*",
		"/",   "%",   "^",   "&",   "|",  "~",	  "!",	"=",  "<",  ">",
	};
	static const char *const words[] = {" new[]", " delete[]", " new", " delete", " co_await"};
	size_t k = i + 8;

	*conv = false;
	if (len - i < 9 || memcmp(s + i, "operator", 8) || (i && ident_char(s[i - 1])) ||
	    ident_char(s[k]))
		return 0;
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		if (!strncmp(s + k, ops[o], strlen(ops[o])))
			return 8 + strlen(ops[o]);
	for (size_t o = 0; o < sizeof(words) / sizeof(words[0]); o++) {
		size_t wl = strlen(words[o]);

		if (!strncmp(s + k, words[o], wl) && (k + wl == len || !ident_char(s[k + wl])))
			return 8 + wl;
	}
	*conv = s[k] == ' ';
	return 0;
}

/*
 * Where the name starts in "RET NAME<ARGS>": only a template function's
 * demangled name carries its return type, separated by the last space
 * outside brackets. Scanned forward so that operator names, whose '<' and
 * '>' do not pair, are stepped over whole.
 */
static size_t skip_return_type(const char *s, size_t len)
{
	size_t split = 0;
	long depth = 0;

	if (!ends_with(s, len, ">"))
		return 0;
	for (size_t i = 0; i < len; i++) {
		bool conv;
		size_t ol = operator_len(s, i, len, &conv);

		if (conv)
			break; /* a conversion operator has no return type */
		if (ol) {
			i += ol - 1;
			if (i + 1 < len && s[i + 1] == ' ')
				i++; /* "operator< <int>": that space is the name's */
			continue;
		}
		if (strchr("<([{", s[i]))
			depth++;
		else if (strchr(">)]}", s[i]))
			depth--;
		else if (s[i] == ' ' && !depth)
			split = i + 1;
	}
	return split;
}

/*
 * The function name in the demangled declaration s[0, len), as [*start,
 * *end); false when it is not a function's (a variable, a string we do
 * not understand), which then prints whole.
 */
static bool decl_name(const char *s, size_t len, size_t *start, size_t *end, int level)
{
	static const char *const quals[] = {" const", " volatile", " &&",
					    " &",     " noexcept", " restrict"};
	long p;

	if (level > 8)
		return false;
	for (bool again = true; again;) {
		again = false;
		for (size_t q = 0; q < sizeof(quals) / sizeof(quals[0]); q++)
			if (ends_with(s, len, quals[q])) {
				len -= strlen(quals[q]);
				again = true;
			}
	}
	if (ends_with(s, len, "]")) {
		/* An array return type: "int (&f<int>(int)) [10]". */
		p = opening(s, len, '[', ']');
		if (p < 1 || s[p - 1] != ' ')
			return false;
		len = (size_t)p - 1;
	}
	if (!ends_with(s, len, ")"))
		return false;
	p = opening(s, len, '(', ')');
	if (p < 0)
		return false;
	if (p == 0 || s[p - 1] == ' ') {
		/* A declarator group "(*NAME(ARGS))": the name is inside, after the pointer. */
		size_t b = (size_t)p + 1, e = len - 1;
		const char *mp;

		while (b < e && (s[b] == '*' || s[b] == '&' || s[b] == ' '))
			b++;
		mp = memmem(s + b, e - b, "::*", 3);
		if (mp && !memchr(s + b, '(', (size_t)(mp - (s + b))))
			b = (size_t)(mp - s) + 3;
		if (!decl_name(s + b, e - b, start, end, level + 1))
			return false;
		*start += b;
		*end += b;
		return true;
	}
	len = (size_t)p;
	for (size_t i = 0; i < len; i++) {
		bool conv;

		operator_len(s, i, len, &conv);
		if (conv) {
			/* "A::operator int (*)()": the list before was the conversion's type. */
			*start = 0;
			*end = len;
			return true;
		}
	}
	if (ends_with(s, len, ")") && !ends_with(s, len, "operator()"))
		/* That list belonged to a returned function pointer: "void (*f<int>(int))()". */
		return decl_name(s, len, start, end, level + 1);
	*start = skip_return_type(s, len);
	*end = len;
	return true;
}

/*
 * The name perf 6.1 shows for @mangled, malloc'ed, or NULL to show it as
 * it is. perf demangles with libiberty's cplus_demangle() without
 * DMGL_PARAMS: no parameters, no return type, no " const", no GCC clone
 * suffix (" [clone .cold]"); special names (vtables, thunks, guard
 * variables: "_ZT...", "_ZG...") print whole. We take libstdc++'s
 * __cxa_demangle() (the same demangler, with parameters) through dlopen()
 * at first need, so tracekit gains no link-time dependency, and cut what
 * perf leaves out; without libstdc++ names stay mangled.
 */
static char *demangle(const char *mangled)
{
	size_t len, start, end;
	int status = -1;
	char *d, *c;

	if (strncmp(mangled, "_Z", 2))
		return NULL;
	pthread_once(&cxa_once, cxa_load);
	if (!cxa_demangle)
		return NULL;
	d = cxa_demangle(mangled, NULL, NULL, &status);
	if (!d || status) {
		free(d);
		return NULL;
	}
	if (!strncmp(mangled, "_ZT", 3) || !strncmp(mangled, "_ZG", 3))
		return d;
	len = strlen(d);
	while (ends_with(d, len, "]") && (c = memmem(d, len, " [clone ", 8))) {
		char *last = c;

		while ((c = memmem(last + 1, len - (size_t)(last + 1 - d), " [clone ", 8)))
			last = c;
		len = (size_t)(last - d);
	}
	if (decl_name(d, len, &start, &end, 0)) {
		memmove(d, d + start, end - start);
		d[end - start] = '\0';
	}
	return d;
}

/* ---- building a sorted table ---- */

struct symtab_builder {
	struct tk_elf_symtab *st;
	size_t cap;	  /* of st->syms */
	size_t names_cap; /* of st->names */
	size_t pos;	  /* bytes of st->names used */
};

/* Append a symbol named @name then @suffix and insert it into the tree. */
static inline __attribute__((always_inline)) int
builder_add_parts(struct symtab_builder *b, const char *name, const char *suffix, uint64_t start,
		  uint64_t size, uint8_t bind)
{
	struct tk_elf_symtab *st = b->st;
	size_t ln = strlen(name), ls = strlen(suffix), l = ln + ls + 1;

	if (st->count == b->cap) {
		size_t ncap = b->cap ? 2 * b->cap : 256;
		struct tk_sym *nv = realloc(st->syms, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		st->syms = nv;
		b->cap = ncap;
	}
	if (b->pos + l > b->names_cap) {
		size_t ncap = b->names_cap ? 2 * b->names_cap : 4096;
		char *nn;

		while (ncap < b->pos + l)
			ncap *= 2;
		if (ncap > (size_t)UINT32_MAX + 1)
			return -EFBIG;
		nn = realloc(st->names, ncap);
		if (!nn)
			return -ENOMEM;
		st->names = nn;
		b->names_cap = ncap;
	}
	if (st->count >= NIL)
		return -EFBIG;
	memcpy(st->names + b->pos, name, ln);
	memcpy(st->names + b->pos + ln, suffix, ls + 1);
	memset(&st->syms[st->count], 0, sizeof(st->syms[0]));
	st->syms[st->count].start = start;
	/* A size that wraps is a broken table: treat it as unknown (size 0). */
	st->syms[st->count].end = start + size >= start ? start + size : start;
	st->syms[st->count].name = (uint32_t)b->pos;
	st->syms[st->count].bind = bind;
	rb_insert(st, (uint32_t)st->count);
	st->count++;
	b->pos += l;
	return 0;
}

/* Append a symbol and insert it into the tree. */
static int builder_add(struct symtab_builder *b, const char *name, uint64_t start, uint64_t size,
		       uint8_t bind)
{
	return builder_add_parts(b, name, "", start, size, bind);
}

/*
 * Add @name demangled (as perf shows it) with @suffix, copied into the
 * table as two parts: an asprintf() of "NAME@plt" was ~1 700 instructions,
 * 3 M of a report that loads libc's and libdw's PLTs.
 */
static int builder_add_sym(struct symtab_builder *b, const char *name, const char *suffix,
			   uint64_t start, uint64_t size, uint8_t bind)
{
	char *d = demangle(name);
	int r;

	if (*suffix)
		r = builder_add_parts(b, d ? d : name, suffix, start, size, bind);
	else
		r = builder_add(b, d ? d : name, start, size, bind);
	free(d);
	return r;
}

#define SEC_ALLOC 1u /* SHF_ALLOC: the section is in memory at run time */
#define SEC_TEXT  2u /* its name contains "text", perf's test for code */

/* SEC_* of each section of @elf (malloc'ed), for the symbol filters. */
static uint8_t *section_kinds(struct tk_elf *elf, size_t *count)
{
	Elf_Scn *scn = NULL;
	uint8_t *k;
	size_t n;

	if (elf_getshdrnum(elf->e, &n) < 0)
		n = 0;
	k = calloc(n ? n : 1, 1);
	if (!k)
		return NULL;
	while ((scn = elf_nextscn(elf->e, scn))) {
		size_t i = elf_ndxscn(scn);
		const char *nm;
		GElf_Shdr sh;

		if (i >= n || !gelf_getshdr(scn, &sh))
			continue;
		nm = elf_strptr(elf->e, elf->shstrndx, sh.sh_name);
		k[i] = (sh.sh_flags & SHF_ALLOC ? SEC_ALLOC : 0) |
		       (nm && strstr(nm, "text") ? SEC_TEXT : 0);
	}
	*count = n;
	return k;
}

/* The table tk_elf_symbols(@kind) returned, for the fields it does not return. */
static const struct sym_cache *loaded_table(const struct tk_elf *elf, enum tk_elf_symtab_kind kind)
{
	if (kind == TK_ELF_ANY)
		kind = elf->tabs[TK_ELF_SYMTAB].status == 1 ? TK_ELF_SYMTAB : TK_ELF_DYNSYM;
	return &elf->tabs[kind];
}

/*
 * PLT entries as perf 6.1 synthesizes them (dso__synthesize_plt_symbols):
 * the i-th relocation of .rela.plt (or .rel.plt, linked to .dynsym) names
 * the i-th .plt entry after the header, "NAME@plt" (demangled), one entry
 * long; an IRELATIVE relocation has no symbol and gives "@plt". On x86
 * the header and the entries are .plt's sh_entsize (16); other machines
 * have perf's fixed sizes. perf 6.1 knows nothing of .plt.sec (IBT) or
 * .plt.got, which stay without symbols, as in its output. It places the
 * entries at .plt's file offset; we use its address, which is the same
 * in the usual layouts and right in the others.
 */
static int plt_symbols(struct symtab_builder *b, struct tk_elf *rt)
{
	const struct tk_elf_symbol *dyn;
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rel, *plt, *dscn = NULL;
	uint64_t header, entry, nrel;
	const uint8_t *raw;
	GElf_Ehdr eh;
	Elf_Data *d;
	size_t ndyn, rawlen;
	int r;

	rel = find_section(rt, ".rela.plt", &rsh);
	if (!rel)
		rel = find_section(rt, ".rel.plt", &rsh);
	plt = find_section(rt, ".plt", &psh);
	if (!rel || !plt || (rsh.sh_type != SHT_RELA && rsh.sh_type != SHT_REL) ||
	    psh.sh_type == SHT_NOBITS || !rsh.sh_entsize || !gelf_getehdr(rt->e, &eh))
		return 0;
	while ((dscn = elf_nextscn(rt->e, dscn)))
		if (gelf_getshdr(dscn, &dsh) && dsh.sh_type == SHT_DYNSYM)
			break;
	if (!dscn || rsh.sh_link != elf_ndxscn(dscn) ||
	    tk_elf_symbols(rt, TK_ELF_DYNSYM, &dyn, &ndyn) < 0)
		return 0;
	switch (eh.e_machine) {
	case EM_ARM:
		header = 20, entry = 12;
		break;
	case EM_AARCH64:
		header = 32, entry = 16;
		break;
	case EM_SPARC:
		header = 48, entry = 12;
		break;
	case EM_SPARCV9:
		header = 128, entry = 32;
		break;
	default:
		header = entry = psh.sh_entsize;
		break;
	}
	if (!entry || psh.sh_size < header)
		return 0;
	/* As perf: a broken PLT costs its names, not the table (which says why). */
	r = section_bytes(rt, rel, &rsh, &raw, &rawlen);
	d = r < 0 ? NULL : elf_getdata(rel, NULL);
	if (!d) {
		if (r == 0)
			tk_fail_at(EBADMSG, rt->name, rsh.sh_offset, "PLT relocations: %s",
				   elf_errmsg(-1));
		tk_warn("%s; no names for its .plt entries", tk_errmsg());
		return 0;
	}
	/* Only the entries the .plt has room for: a larger count is not a real table. */
	nrel = rsh.sh_size / rsh.sh_entsize;
	if (nrel > (psh.sh_size - header) / entry)
		nrel = (psh.sh_size - header) / entry;
	for (uint64_t i = 0; i < nrel; i++) {
		GElf_Rela rela;
		GElf_Rel rl;
		uint64_t idx;

		if (rsh.sh_type == SHT_RELA) {
			if (!gelf_getrela(d, (int)i, &rela))
				break;
			idx = GELF_R_SYM(rela.r_info);
		} else {
			if (!gelf_getrel(d, (int)i, &rl))
				break;
			idx = GELF_R_SYM(rl.r_info);
		}
		/* tk_elf_symbols() leaves out the null symbol 0. */
		if (idx > ndyn)
			continue;
		r = builder_add_sym(b, idx ? dyn[idx - 1].name : "", "@plt",
				    psh.sh_addr + header + i * entry, entry, STB_GLOBAL);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The symbols perf 6.1 keeps (dso__load_sym): functions (and IFUNCs) and
 * objects with a name and a section, and labels: named STT_NOTYPE symbols
 * of a section whose name contains "text", not hidden or internal, like
 * ld.so's _start and _dl_start_user (size 0, so they reach to the next
 * symbol). Symbols of sections not loaded at run time are left out.
 */
static int elf_symbols_add(struct symtab_builder *b, struct tk_elf *elf,
			   enum tk_elf_symtab_kind kind)
{
	const struct tk_elf_symbol *syms;
	const struct sym_cache *tab;
	uint8_t *kinds;
	size_t n, nsec;
	int r;

	r = tk_elf_symbols(elf, kind, &syms, &n);
	if (r < 0)
		return r;
	tab = loaded_table(elf, kind);
	kinds = section_kinds(elf, &nsec);
	if (!kinds)
		return -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct tk_elf_symbol *s = &syms[i];
		uint8_t vis = GELF_ST_VISIBILITY(tab->other[i]);
		bool label = s->type == STT_NOTYPE && vis != STV_HIDDEN && vis != STV_INTERNAL;

		if (!label && s->type != STT_FUNC && s->type != STT_GNU_IFUNC &&
		    s->type != STT_OBJECT)
			continue;
		if (s->shndx == SHN_UNDEF || s->shndx >= nsec || !s->value || !s->name[0])
			continue;
		if (!(kinds[s->shndx] & SEC_ALLOC) || (label && !(kinds[s->shndx] & SEC_TEXT)))
			continue;
		r = builder_add_sym(b, s->name, "", s->value, s->size, s->bind);
		if (r == 0)
			b->st->syms[b->st->count - 1].type = s->type;
	}
	free(kinds);
	return r;
}

TK_API struct tk_elf_symtab *
tk_elf_symtab_new_dso(struct tk_elf *syms, enum tk_elf_symtab_kind kind, struct tk_elf *runtime)
{
	struct symtab_builder b = {0};
	int r;

	if ((unsigned)kind > TK_ELF_ANY)
		return tk_fail_null(EINVAL, "bad symbol table kind %d", (int)kind);
	b.st = calloc(1, sizeof(*b.st));
	if (!b.st)
		return tk_fail_null(ENOMEM, "%s: out of memory for symbols", syms->name);
	b.st->root = NIL;
	r = elf_symbols_add(&b, syms, kind);
	/* perf stretches and folds the table's symbols before it adds the PLT's. */
	if (r == 0)
		symtab_fixup(b.st, false);
	if (r == 0 && runtime)
		r = plt_symbols(&b, runtime);
	if (r < 0) {
		if (r == -ENOMEM || r == -EFBIG)
			tk_fail(-r, "%s: %s for symbols", syms->name,
				r == -ENOMEM ? "out of memory" : "names too large");
		tk_elf_symtab_free(b.st);
		errno = -r;
		return NULL;
	}
	return b.st;
}

TK_API struct tk_elf_symtab *tk_elf_symtab_new_elf(struct tk_elf *elf)
{
	return tk_elf_symtab_new_dso(elf, TK_ELF_ANY, elf);
}

/* ARM's mapping symbols ($a, $d, $t, $x, alone or with a '.' suffix): not functions. */
static bool arm_mapping_symbol(const char *name)
{
	return name[0] == '$' && name[1] && strchr("adtx", name[1]) &&
	       (name[2] == '\0' || name[2] == '.');
}

struct tk_elf_symtab *tk_elf_symtab_new_kmodule(struct tk_elf *elf, uint64_t *text_off)
{
	struct symtab_builder b = {0};
	const struct tk_elf_symbol *syms;
	const struct sym_cache *tab;
	bool have_off = false;
	GElf_Ehdr eh;
	size_t n;
	int r;

	*text_off = 0;
	if (!gelf_getehdr(elf->e, &eh) || eh.e_type != ET_REL)
		return tk_fail_null(ENOENT, "%s: not a relocatable file (a kernel module)",
				    elf->name);
	r = tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	tab = loaded_table(elf, TK_ELF_SYMTAB);
	b.st = calloc(1, sizeof(*b.st));
	if (!b.st)
		return tk_fail_null(ENOMEM, "%s: out of memory for symbols", elf->name);
	b.st->root = NIL;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct tk_elf_symbol *s = &syms[i];
		uint8_t vis = GELF_ST_VISIBILITY(tab->other[i]);
		bool label = s->type == STT_NOTYPE && vis != STV_HIDDEN && vis != STV_INTERNAL &&
			     s->shndx != SHN_ABS;
		uint64_t value = s->value;
		const char *sec;
		Elf_Scn *scn;
		GElf_Shdr sh;

		/* perf's filters, in its order; unlike a binary's, a value of 0 is a symbol. */
		if (!label && s->type != STT_FUNC && s->type != STT_GNU_IFUNC &&
		    s->type != STT_OBJECT)
			continue;
		if (!s->name[0] || s->shndx == SHN_UNDEF || s->shndx >= SHN_LORESERVE)
			continue;
		if ((eh.e_machine == EM_ARM || eh.e_machine == EM_AARCH64) &&
		    arm_mapping_symbol(s->name))
			continue;
		scn = elf_getscn(elf->e, s->shndx);
		if (!scn || !gelf_getshdr(scn, &sh))
			continue;
		sec = elf_strptr(elf->e, elf->shstrndx, sh.sh_name);
		/* Only .text is placed at the module's address; its other sections are not. */
		if (!sec || strcmp(sec, ".text"))
			continue;
		if (eh.e_machine == EM_ARM && s->type == STT_FUNC && (value & 1))
			value--;
		if (!have_off) {
			*text_off = sh.sh_offset;
			have_off = true;
		}
		if (value + sh.sh_offset < value)
			continue; /* a value that wraps names nothing */
		r = builder_add(&b, s->name, value + sh.sh_offset, s->size, s->bind);
	}
	if (r == 0)
		symtab_fixup(b.st, false);
	if (r < 0) {
		tk_fail(-r, "%s: %s for symbols", elf->name,
			r == -ENOMEM ? "out of memory" : "names too large");
		tk_elf_symtab_free(b.st);
		errno = -r;
		return NULL;
	}
	return b.st;
}

/* Hex digits at @p into @v, as perf's hex2u64(): the count of digits read. */
static size_t perfmap_hex(const char *p, const char *end, uint64_t *v)
{
	size_t n = 0;

	*v = 0;
	for (; p + n < end; n++) {
		char c = p[n];
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned int)(c - 'A' + 10);
		else
			break;
		*v = (*v << 4) | d;
	}
	return n;
}

TK_API struct tk_elf_symtab *tk_elf_symtab_new_perfmap(const char *text, size_t len,
						       const char *name)
{
	struct symtab_builder b = {0};
	const char *p = text, *end = text + len;
	char *sym = NULL;
	size_t sym_cap = 0;
	int r = 0;

	b.st = calloc(1, sizeof(*b.st));
	if (!b.st)
		return tk_fail_null(ENOMEM, "%s: out of memory for symbols", name);
	b.st->root = NIL;
	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p;
		size_t line_len = (size_t)((nl ? nl : end) - p), k;
		uint64_t start, size;

		p = nl ? nl + 1 : end;
		/*
		 * "START SIZE NAME", both numbers hex without 0x, parsed as perf
		 * does: one separator after each, and a line too short for a
		 * name after them is skipped.
		 */
		k = perfmap_hex(line, line + line_len, &start) + 1;
		if (k + 2 >= line_len)
			continue;
		k += perfmap_hex(line + k, line + line_len, &size) + 1;
		if (k + 2 >= line_len)
			continue;
		if (line_len - k + 1 > sym_cap) {
			char *ns = realloc(sym, line_len - k + 1);

			if (!ns) {
				r = -ENOMEM;
				break;
			}
			sym = ns;
			sym_cap = line_len - k + 1;
		}
		memcpy(sym, line + k, line_len - k);
		sym[line_len - k] = '\0';
		r = builder_add(&b, sym, start, size, STB_GLOBAL);
	}
	free(sym);
	if (r < 0) {
		tk_fail(-r, "%s: %s for symbols", name,
			r == -ENOMEM ? "out of memory" : "names too large");
		tk_elf_symtab_free(b.st);
		errno = -r;
		return NULL;
	}
	return b.st;
}

TK_API struct tk_elf_symtab *tk_elf_symtab_new_kallsyms(const char *text, size_t len,
							const char *name)
{
	struct tk_elf_symtab *st = calloc(1, sizeof(*st));
	size_t lines = 0, pos = 0, i = 0;
	int err = ENOMEM;

	if (!st)
		goto fail_oom;
	for (size_t k = 0; k < len; k++)
		lines += text[k] == '\n';
	st->root = NIL;
	if (lines >= NIL) {
		err = EFBIG;
		tk_fail(EFBIG, "%s: too many symbols", name);
		goto fail;
	}
	st->syms = malloc((lines + 1) * sizeof(*st->syms));
	st->names = malloc(len + 1);
	if (!st->syms || !st->names)
		goto fail_oom;
	while (i < len) {
		const char *line = text + i, *nl = memchr(line, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - line) : len - i;
		uint64_t addr = 0;
		size_t k = 0, nstart, nend;
		char type;

		i += ll + 1;
		if (!ll)
			continue;
		while (k < ll && k < 17 &&
		       ((line[k] >= '0' && line[k] <= '9') || (line[k] >= 'a' && line[k] <= 'f'))) {
			addr = addr << 4 |
			       (uint64_t)(line[k] <= '9' ? line[k] - '0' : line[k] - 'a' + 10);
			k++;
		}
		if (k == 0 || k > 16 || k + 3 > ll || line[k] != ' ' || line[k + 2] != ' ') {
			err = EBADMSG;
			tk_fail_at(EBADMSG, name, (uint64_t)(line - text),
				   "malformed kallsyms line");
			goto fail;
		}
		type = line[k + 1];
		nstart = k + 3;
		nend = nstart;
		while (nend < ll && line[nend] != '\t' && line[nend] != ' ')
			nend++;
		if (nend == nstart || !addr)
			continue;
		if (!strchr("tTwWdDbBrRiI", type))
			continue;
		memcpy(st->names + pos, line + nstart, nend - nstart);
		st->names[pos + nend - nstart] = '\0';
		memset(&st->syms[st->count], 0, sizeof(st->syms[0]));
		st->syms[st->count].start = addr;
		st->syms[st->count].end = addr;
		st->syms[st->count].name = (uint32_t)pos;
		st->syms[st->count].module = memchr(line + nend, '[', ll - nend) != NULL;
		/* perf's kallsyms2elf_binding: 'W' weak, upper case global, else local. */
		st->syms[st->count].bind = type == 'W'			  ? STB_WEAK
					   : (type >= 'A' && type <= 'Z') ? STB_GLOBAL
									  : STB_LOCAL;
		rb_insert(st, (uint32_t)st->count);
		st->count++;
		pos += nend - nstart + 1;
	}
	symtab_fixup(st, true);
	return st;
fail_oom:
	tk_fail(ENOMEM, "%s: out of memory for symbols", name);
fail:
	tk_elf_symtab_free(st);
	errno = err;
	return NULL;
}

TK_API void tk_elf_symtab_free(struct tk_elf_symtab *st)
{
	if (!st)
		return;
	free(st->syms);
	free(st->names);
	free(st);
}

TK_API size_t tk_elf_symtab_count(const struct tk_elf_symtab *st)
{
	return st->live;
}

/* symbols__find(): the first node on the path whose range holds @addr, or NULL. */
static const struct tk_sym *symtab_find(const struct tk_elf_symtab *st, uint64_t addr)
{
	uint32_t n = st->root;

	while (n != NIL) {
		const struct tk_sym *s = &st->syms[n];

		if (addr < s->start)
			n = s->left;
		else if (addr > s->end || (addr == s->end && addr != s->start))
			n = s->right;
		else
			return s;
	}
	return NULL;
}

TK_API const char *tk_elf_symtab_lookup(const struct tk_elf_symtab *st, uint64_t addr,
					uint64_t *offset, uint64_t *start)
{
	const struct tk_sym *s = symtab_find(st, addr);

	if (!s)
		return NULL;
	if (offset)
		*offset = addr - s->start;
	if (start)
		*start = s->start;
	return st->names + s->name;
}

const char *tk_elf_symtab_a2l_alias(const struct tk_elf_symtab *st, uint64_t addr)
{
	const struct tk_sym *s = symtab_find(st, addr);

	/* The symbol tk_elf_symtab_lookup() finds, then its run's pick. */
	return s && s->a2l ? st->names + s->a2l - 1 : NULL;
}
