// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * debug-inflate: an uncompressed copy of a separate debug file, kept by
 * build id in the build-id cache, for the DWARF that names inline frames.
 *
 * Debian's debug files (libc6-dbg's libc: 3.7 MB of compressed sections,
 * ~10 MB inflated) store their .debug_* sections compressed
 * (SHF_COMPRESSED). libdw inflates every one of them whole when the file's
 * DWARF is first used (dwarf_begin_elf()): ~230 M instructions for libc,
 * two thirds of a report with inline frames of a profile of 1 300
 * samples, paid again by every report. perf 6.1 hands the same debug file
 * to addr2line, which inflates what it reads too, so the output needs
 * this DWARF; only its inflating can be saved.
 *
 * The copy: DIR/.tk-inflated/<build id>.debug, DIR the build-id cache
 * (only one that exists already: a report never creates ~/.debug). It is
 * the debug file with each compressed section stored inflated, every other
 * byte as it was: sections laid out in their original order, each at its
 * old offset where the growth of an earlier one leaves room, so the ELF
 * header, program headers and notes (the build id) keep their places. libdw
 * then maps it and reads sections in place.
 *
 * Safety. Made in a temporary file of the same directory, written with
 * fdatasync() and renamed over the name: readers see the whole copy or
 * none, and concurrent makers each rename a complete one. A copy is used
 * only when its build-id note is the one asked for and it ends where its
 * section headers do (copy_is(): a file replaced by hand or cut short is
 * ignored and remade). Only files in this machine's byte order are copied.
 * Limits: no copy whose inflated sections exceed INFLATE_MAX;
 * the copies together stay under INFLATE_TOTAL_MAX, the least recently
 * used removed first (each use sets the copy's mtime). Anything that fails
 * (a read-only cache, a full disk, an unknown compression) leaves the
 * caller with the debug file itself: only slower.
 */
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
#include <time.h>
#include <unistd.h>

#include "cache-internal.h"
#include "debug-inflate.h"
#include "fsutil.h"

#define INFLATE_DIR	  ".tk-inflated"
#define INFLATE_MAX	  (1ull << 30) /* one copy's inflated sections */
#define INFLATE_TOTAL_MAX (4ull << 30) /* all copies together */
#define INFLATE_RATIO	  1100u	       /* the most a compressed section may grow */
/* Copies are made of files in this machine's byte order only (copy_is() reads their header). */
#define HOST_DATA (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB)

/*
 * Whether @path is a whole copy of build id @bid: the check of every copy
 * before use. Whole: it ends where its section header table ends, where
 * write_inflated() puts it (a copy cut short keeps its build-id note,
 * near the start, but would hand libdw truncated sections).
 */
static bool copy_is(const char *path, const char *bid)
{
	char hex[TK_BUILD_ID_HEX_MAX];
	unsigned char eh[sizeof(Elf64_Ehdr)];
	uint64_t end;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool whole;

	if (fd < 0)
		return false;
	whole = fstat(fd, &st) == 0 && tk_pread_full(fd, eh, sizeof(eh), 0) == (int64_t)sizeof(eh);
	close(fd);
	if (!whole || memcmp(eh, ELFMAG, SELFMAG) || eh[EI_DATA] != HOST_DATA)
		return false;
	if (eh[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr h;

		memcpy(&h, eh, sizeof(h));
		end = h.e_shoff + (uint64_t)h.e_shnum * h.e_shentsize;
	} else if (eh[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr h;

		memcpy(&h, eh, sizeof(h));
		end = h.e_shoff + (uint64_t)h.e_shnum * h.e_shentsize;
	} else {
		return false;
	}
	return end == (uint64_t)st.st_size && tk_cache_file_build_id(path, hex) > 0 &&
	       !strcmp(hex, bid);
}

/* Set @path's mtime to now: its last use, for the eviction order. */
static void touch(const char *path)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};

	utimensat(AT_FDCWD, path, ts, 0);
}

struct copy_file {
	char *path;
	off_t size;
	struct timespec mtime;
};

static int copy_file_cmp(const void *a, const void *b)
{
	const struct copy_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/*
 * Remove the least recently used copies in @dir until @need more bytes fit
 * under INFLATE_TOTAL_MAX. Best effort.
 */
static void make_room(const char *dir, uint64_t need)
{
	struct copy_file *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = need;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		char *p;

		if (len < 7 || strcmp(de->d_name + len - 6, ".debug") || de->d_name[0] == '.')
			continue;
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			break;
		if (lstat(p, &st) || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		if (n == cap) {
			struct copy_file *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*nv));

			if (!nv) {
				free(p);
				break;
			}
			v = nv;
		}
		v[n].path = p;
		v[n].size = st.st_size;
		v[n].mtime = st.st_mtim;
		n++;
		total += (uint64_t)st.st_size;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), copy_file_cmp);
	for (size_t i = 0; i < n; i++) {
		if (total > INFLATE_TOTAL_MAX && unlink(v[i].path) == 0)
			total -= (uint64_t)v[i].size;
		free(v[i].path);
	}
	free(v);
}

struct out_scn {
	Elf_Scn *in;
	GElf_Shdr sh; /* after inflating; sh_offset the copy's */
	uint64_t old_off, old_size;
	bool inflated; /* it was compressed */
};

static int off_cmp(const void *a, const void *b)
{
	const struct out_scn *x = a, *y = b;

	return (x->old_off > y->old_off) - (x->old_off < y->old_off);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

/*
 * Write @in with its compressed sections inflated to @fd. 0, or -1 when
 * the file is not one to copy (no compressed section, too big, an ELF
 * libelf cannot lay out or inflate).
 */
static int write_inflated(Elf *in, int fd)
{
	struct out_scn *s = NULL;
	size_t shnum, phnum, shstrndx, n = 0, in_size = 0;
	uint64_t cur, end = 0, inflated = 0;
	bool any = false;
	GElf_Ehdr eh;
	Elf *out = NULL;
	Elf_Scn *scn = NULL;
	int ret = -1;

	if (!gelf_getehdr(in, &eh) || elf_getshdrnum(in, &shnum) || elf_getphdrnum(in, &phnum) ||
	    elf_getshdrstrndx(in, &shstrndx) || shnum < 2 || shnum >= SHN_LORESERVE ||
	    shstrndx >= SHN_LORESERVE || !elf_rawfile(in, &in_size))
		return -1;
	s = calloc(shnum, sizeof(*s));
	if (!s)
		return -1;
	/* Which sections are compressed, and how big they grow, before any work. */
	while ((scn = elf_nextscn(in, scn))) {
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &s[n].sh))
			goto out;
		s[n].in = scn;
		s[n].old_off = s[n].sh.sh_offset;
		s[n].old_size = s[n].sh.sh_type == SHT_NOBITS ? 0 : s[n].sh.sh_size;
		/* Every byte a section claims lies in the file: the copy's layout follows them. */
		if (s[n].old_size &&
		    (s[n].old_off > in_size || s[n].old_size > in_size - s[n].old_off))
			goto out;
		if (s[n].sh.sh_flags & SHF_COMPRESSED) {
			/*
			 * zlib inflates 1032:1 at most, and real debug sections in zstd stay
			 * far below that: a larger claim is damage (no copy then, only slower).
			 */
			if (!gelf_getchdr(scn, &ch) ||
			    ch.ch_size > s[n].old_size * INFLATE_RATIO + 4096)
				goto out;
			inflated += ch.ch_size;
			s[n].inflated = true;
			any = true;
		}
		n++;
	}
	if (!any || inflated > INFLATE_MAX)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if ((s[i].sh.sh_flags & SHF_COMPRESSED) &&
		    (elf_compress(s[i].in, 0, 0) < 0 || !gelf_getshdr(s[i].in, &s[i].sh)))
			goto out;
	}
	/*
	 * The layout, in the original file order: each section at its old
	 * offset unless an earlier one grew past it, then right after.
	 */
	qsort(s, n, sizeof(*s), off_cmp);
	cur = phnum ? eh.e_phoff + (uint64_t)phnum * eh.e_phentsize : eh.e_ehsize;
	for (size_t i = 0; i < n; i++) {
		if (s[i].sh.sh_type == SHT_NOBITS)
			continue;
		s[i].sh.sh_offset = s[i].old_off >= align_up(cur, s[i].sh.sh_addralign)
					    ? s[i].old_off
					    : align_up(cur, s[i].sh.sh_addralign);
		cur = s[i].sh.sh_offset + s[i].sh.sh_size;
		end = cur > end ? cur : end;
	}
	/*
	 * The copy is the file plus what inflating adds, and a little for
	 * alignment: a header placing sections far apart (damage) would
	 * otherwise have the copy written up to that far.
	 */
	if (end > (uint64_t)in_size + inflated + (uint64_t)n * 4096)
		goto out;
	out = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!out || !gelf_newehdr(out, gelf_getclass(in)) || (phnum && !gelf_newphdr(out, phnum)))
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(in, (int)i, &ph))
			goto out;
		/* A segment starting inside a moved section moves with it. */
		for (size_t k = 0; k < n; k++)
			if (s[k].old_size && ph.p_offset >= s[k].old_off &&
			    ph.p_offset < s[k].old_off + s[k].old_size) {
				ph.p_offset += s[k].sh.sh_offset - s[k].old_off;
				break;
			}
		if (!gelf_update_phdr(out, (int)i, &ph))
			goto out;
	}
	/* Sections keep their indexes: create them in index order. */
	for (size_t idx = 1; idx < shnum; idx++) {
		struct out_scn *o = NULL;
		Elf_Scn *os;
		Elf_Data *id, *od;

		for (size_t k = 0; k < n && !o; k++)
			if (elf_ndxscn(s[k].in) == idx)
				o = &s[k];
		if (!o)
			goto out;
		os = elf_newscn(out);
		if (!os || elf_ndxscn(os) != idx)
			goto out;
		if (o->sh.sh_type != SHT_NOBITS) {
			/* Bytes as they are (inflated ones as libelf inflated them), no conversion.
			 */
			id = o->inflated ? elf_getdata(o->in, NULL) : elf_rawdata(o->in, NULL);
			if (!id && o->sh.sh_size)
				goto out;
			od = elf_newdata(os);
			if (!od)
				goto out;
			od->d_buf = id ? id->d_buf : NULL;
			od->d_size = id ? id->d_size : 0;
			od->d_type = ELF_T_BYTE;
			od->d_off = 0;
			od->d_align = 1;
			od->d_version = EV_CURRENT;
			if (od->d_size != o->sh.sh_size)
				goto out;
		}
		if (!gelf_update_shdr(os, &o->sh))
			goto out;
	}
	eh.e_shoff = align_up(end, gelf_getclass(in) == ELFCLASS64 ? 8 : 4);
	eh.e_shnum = (GElf_Half)shnum;
	eh.e_shstrndx = (GElf_Half)shstrndx;
	if (!gelf_update_ehdr(out, &eh))
		goto out;
	elf_flagelf(out, ELF_C_SET, ELF_F_LAYOUT);
	if (elf_update(out, ELF_C_WRITE) < 0)
		goto out;
	ret = 0;
out:
	if (out)
		elf_end(out);
	free(s);
	return ret;
}

char *tk_debug_inflated(const char *cache_dir, const char *debug, const char *bid)
{
	char *dir = NULL, *path = NULL, *tmp = NULL;
	Elf *in = NULL;
	int ifd = -1, ofd = -1;
	bool ok = false;

	if (!cache_dir || !debug || !bid || !bid[0] || strchr(bid, '/'))
		return NULL;
	if (asprintf(&dir, "%s/" INFLATE_DIR, cache_dir) < 0)
		return NULL;
	if (asprintf(&path, "%s/%s.debug", dir, bid) < 0) {
		free(dir);
		return NULL;
	}
	if (copy_is(path, bid)) {
		touch(path);
		free(dir);
		return path;
	}
	ifd = open(debug, O_RDONLY | O_CLOEXEC);
	elf_version(EV_CURRENT);
	in = ifd >= 0 ? elf_begin(ifd, ELF_C_READ_MMAP, NULL) : NULL;
	if (!in || elf_kind(in) != ELF_K_ELF || !elf_getident(in, NULL) ||
	    elf_getident(in, NULL)[EI_DATA] != HOST_DATA)
		goto out;
	{
		/* Nothing compressed (an upstream build's debug file): libdw reads it as it is. */
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		bool any = false;

		while (!any && (scn = elf_nextscn(in, scn)))
			any = gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED);
		if (!any)
			goto out;
	}
	if (tk_mkdir_p(dir) < 0)
		goto out;
	{
		struct stat st;

		make_room(dir, fstat(ifd, &st) ? 0 : (uint64_t)st.st_size * 4);
	}
	if (asprintf(&tmp, "%s/.%s.XXXXXX", dir, bid) < 0) {
		tmp = NULL;
		goto out;
	}
	ofd = mkstemp(tmp);
	if (ofd < 0) {
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if (write_inflated(in, ofd) < 0 || fchmod(ofd, 0644) || fdatasync(ofd))
		goto out;
	if (close(ofd)) {
		ofd = -1;
		goto out;
	}
	ofd = -1;
	if (!copy_is(tmp, bid) || rename(tmp, path))
		goto out;
	free(tmp);
	tmp = NULL;
	ok = true;
out:
	if (ofd >= 0)
		close(ofd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	if (in)
		elf_end(in);
	if (ifd >= 0)
		close(ifd);
	free(dir);
	if (!ok) {
		free(path);
		path = NULL;
	}
	return path;
}
