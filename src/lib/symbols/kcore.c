// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * kcore copies in the build-id cache: perf buildid-cache --kcore, our way.
 *
 *	DIR/[kernel.kcore]/<bid>/<YYYYmmddHHMMSShh>/{kcore,kallsyms,modules}
 *
 * A kcore is named "kcore" and has "kallsyms" and "modules" beside it, as
 * /proc has them; its build id comes from ROOT/sys/kernel/notes for a
 * ROOT/proc/kcore (as perf reads it), else from the BUILD-ID line of the
 * kcore's VMCOREINFO note (kernels since 5.9 write one). From kallsyms'
 * function symbols and modules we choose the ranges perf's kcore_copy()
 * takes: the kernel text _stext.._etext (page-rounded; the first and last
 * function when those are missing), the module area from the first module
 * (or module symbol) to a page past the last module symbol, and the
 * syscall entry trampoline's page. Each range is cut from the PT_LOAD
 * segment that holds its start; pieces whose bytes lie inside the kernel
 * text's (a second mapping of the text) share them in the output.
 *
 * Reading goes through elf.c: tk_elf_open_unmapped() (ELF_C_READ; mapping
 * /proc/kcore is not possible, and reading it whole would read the address
 * space), its program headers, the notes of its PT_NOTE segment and
 * bounds-checked reads of the chosen bytes. Every segment we use is checked
 * against the file's size first, so a corrupt kcore is an error naming the
 * file and offset. Writing is ours: elf.c is a reader, and the output is
 * only an ELF header, one PT_LOAD program header per piece (RWX, aligned to
 * the page) and the pieces' bytes from the next page boundary on, in the
 * source's class and byte order, which ten lines of stores write exactly.
 *
 * The same kcore again (same modules text and the same _stext in kallsyms,
 * what perf's same_kallsyms_reloc() compares) is not copied again unless
 * forced; adding it is then a use of the copy we have. kallsyms is read
 * again after the copy: modules loaded or unloaded meanwhile would make
 * the copy inconsistent, so that is an error (EAGAIN) and the copy goes.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/cache.h>
#include <tracekit/elf.h>

#include "bytes.h"
#include "cache-internal.h"
#include "error.h"
#include "fsutil.h"

struct kload {
	uint64_t vaddr, offset, filesz;
};

struct kpiece {
	uint64_t addr, len, src; /* address, length, offset in the source */
	uint64_t rel;		 /* offset in the output's data area */
	int remap;		 /* index of the piece whose bytes it shares, or -1 */
};

struct kcore_src {
	const char *name;
	struct tk_elf *elf;
	struct tk_elf_header eh;
	bool big, is64;
	struct kload *loads;
	size_t nloads;
	struct tk_elf_phdr note; /* the first PT_NOTE; type 0 when there is none */
};

/*
 * Open @k->name through elf.c and keep its PT_LOAD segments and first
 * PT_NOTE, each checked against the file's size.
 */
static int kcore_parse(struct kcore_src *k)
{
	struct tk_elf_phdr *ph = NULL;
	uint64_t fsize;
	size_t want;
	int n, r = 0;

	k->elf = tk_elf_open_unmapped(k->name);
	if (!k->elf) {
		if (errno == ENOEXEC)
			return tk_fail(ENOEXEC, "%s: not an ELF file, so not a kcore", k->name);
		return -errno;
	}
	r = tk_elf_header(k->elf, &k->eh);
	if (r < 0)
		return r;
	k->is64 = k->eh.ident[EI_CLASS] == ELFCLASS64;
	k->big = k->eh.ident[EI_DATA] == ELFDATA2MSB;
	if (k->eh.type != ET_CORE)
		return tk_fail_at(EINVAL, k->name, 16,
				  "ELF type %u is not ET_CORE (4): not a kcore", k->eh.type);
	want = k->is64 ? 56 : 32;
	if (k->eh.phentsize != want || !k->eh.phnum)
		return tk_fail_at(EBADMSG, k->name, k->is64 ? 54 : 42,
				  "%u program headers of %u bytes: want %zu-byte headers",
				  k->eh.phnum, k->eh.phentsize, want);
	fsize = tk_elf_size(k->elf);
	n = tk_elf_program_headers(k->elf, NULL, 0);
	if (n < 0)
		return n;
	ph = calloc((size_t)n, sizeof(*ph));
	k->loads = calloc((size_t)n, sizeof(*k->loads));
	if (!ph || !k->loads) {
		free(ph);
		return tk_fail(ENOMEM, "out of memory");
	}
	n = tk_elf_program_headers(k->elf, ph, (size_t)n);
	for (int i = 0; i < n && r == 0; i++) {
		uint64_t at = k->eh.phoff + (uint64_t)i * want;

		if (ph[i].type != PT_LOAD && ph[i].type != PT_NOTE)
			continue;
		if (ph[i].offset > fsize || ph[i].filesz > fsize - ph[i].offset ||
		    ph[i].vaddr + ph[i].filesz < ph[i].vaddr) {
			r = tk_fail_at(EBADMSG, k->name, at,
				       "segment %d (0x%" PRIx64 "+0x%" PRIx64
				       ") lies outside the file (%" PRIu64 " bytes)",
				       i, ph[i].offset, ph[i].filesz, fsize);
			break;
		}
		if (ph[i].type == PT_NOTE) {
			if (!k->note.type)
				k->note = ph[i];
			continue;
		}
		k->loads[k->nloads].vaddr = ph[i].vaddr;
		k->loads[k->nloads].offset = ph[i].offset;
		k->loads[k->nloads].filesz = ph[i].filesz;
		k->nloads++;
	}
	free(ph);
	if (n < 0)
		return n;
	if (r == 0 && !k->nloads)
		r = tk_fail(EBADMSG, "%s: no PT_LOAD segment: not a kcore", k->name);
	return r;
}

/* A VMCOREINFO note's BUILD-ID line into the hex buffer @ctx: 1 when found. */
static int vmcoreinfo_note(const struct tk_elf_note *n, void *ctx)
{
	char *hex = ctx;
	const char *p;
	size_t len = 0;

	if (n->namesz != 11 || memcmp(n->name, "VMCOREINFO", 11))
		return 0;
	p = memmem(n->desc, n->descsz, "BUILD-ID=", 9);
	if (!p)
		return -ENOENT;
	p += 9;
	while ((size_t)(p + len - (const char *)n->desc) < n->descsz && len < 40 &&
	       ((p[len] >= '0' && p[len] <= '9') || (p[len] >= 'a' && p[len] <= 'f')))
		len++;
	if (len < 32 || (len & 1))
		return 0;
	memcpy(hex, p, len);
	hex[len] = '\0';
	return 1;
}

/* The BUILD-ID line of a VMCOREINFO note (kernels since 5.9 write one); -ENOENT without. */
static int kcore_vmcoreinfo_bid(struct kcore_src *k, char *hex)
{
	if (!k->note.type)
		return -ENOENT;
	return tk_elf_segment_notes(k->elf, &k->note, 1u << 20, vmcoreinfo_note, hex) == 1
		       ? 0
		       : -ENOENT;
}

struct kinfo {
	uint64_t stext, etext, first, last, first_mod, first_modsym, last_modsym, tramp;
};

/* perf's kcore_copy ranges, from kallsyms function symbols and modules. */
static int kcore_ranges(const char *ksname, const char *ks, size_t kslen, const char *modname,
			const char *mods, struct kinfo *ki)
{
	size_t i = 0;

	memset(ki, 0, sizeof(*ki));
	while (i < kslen) {
		const char *line = ks + i, *nl = memchr(line, '\n', kslen - i);
		size_t ll = nl ? (size_t)(nl - line) : kslen - i;
		unsigned long long a;
		char type, name[256];
		int used = 0;

		i += ll + 1;
		if (!ll)
			continue;
		if (ll >= 300 || sscanf(line, "%llx %c %255s%n", &a, &type, name, &used) != 3)
			return tk_fail_at(EBADMSG, ksname, (uint64_t)(line - ks),
					  "malformed kallsyms line");
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/* A module symbol carries "\t[module]" after its name. */
		if (memchr(line + used, '[', ll - (size_t)used)) {
			if (!ki->first_modsym || a < ki->first_modsym)
				ki->first_modsym = a;
			if (a > ki->last_modsym)
				ki->last_modsym = a;
			continue;
		}
		if (!ki->first || a < ki->first)
			ki->first = a;
		if (a > ki->last)
			ki->last = a;
		if (!strcmp(name, "_stext"))
			ki->stext = a;
		else if (!strcmp(name, "_etext"))
			ki->etext = a;
		else if (!strcmp(name, "__entry_SYSCALL_64_trampoline"))
			ki->tramp = a;
	}
	for (const char *line = mods; *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long a;
		const char *x;

		/* "name size refs deps state 0xADDR [taint]" */
		x = strstr(line, " 0x");
		if (x && (!nl || x < nl) && sscanf(x + 1, "%llx", &a) == 1 && a &&
		    (!ki->first_mod || a < ki->first_mod))
			ki->first_mod = a;
		if (!nl)
			break;
		line = nl + 1;
	}
	(void)modname;
	return 0;
}

static uint64_t round_dn(uint64_t v, uint64_t p)
{
	return v & ~(p - 1);
}

static uint64_t round_upp(uint64_t v, uint64_t p)
{
	return (v + p - 1) & ~(p - 1);
}

/* Add the part of [s, e) that starts inside load @l, as perf's kcore_copy__map(). */
static int kpiece_add(struct kpiece **v, size_t *n, const struct kload *l, uint64_t s, uint64_t e)
{
	uint64_t end = l->vaddr + l->filesz;
	struct kpiece *nv;

	if (s < l->vaddr || s >= end || e <= s)
		return 0;
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	*v = nv;
	nv[*n].addr = s;
	nv[*n].len = (e < end ? e : end) - s;
	nv[*n].src = s - l->vaddr + l->offset;
	nv[*n].rel = 0;
	nv[*n].remap = -1;
	(*n)++;
	return 0;
}

/* Copy @len bytes at @off of the kcore to @to of the output file @out. */
static int copy_range(struct tk_elf *in, uint64_t off, int out, uint64_t to, uint64_t len)
{
	char *buf = malloc(1 << 16);
	int r = 0;

	if (!buf)
		return tk_fail(ENOMEM, "out of memory");
	while (len && r == 0) {
		size_t chunk = len > (1 << 16) ? 1 << 16 : (size_t)len;

		r = tk_elf_read(in, off, buf, chunk);
		if (r < 0)
			break;
		while (pwrite(out, buf, chunk, (off_t)to) != (ssize_t)chunk) {
			if (errno != EINTR) {
				r = tk_fail_errno(errno ? errno : EIO, "kcore copy");
				break;
			}
		}
		off += chunk;
		to += chunk;
		len -= chunk;
	}
	free(buf);
	return r;
}

static int kcore_write(const struct kcore_src *k, const struct kpiece *p, size_t n, const char *out,
		       uint64_t page)
{
	size_t ehsz = k->is64 ? 64 : 52, phsz = k->is64 ? 56 : 32;
	uint64_t data = round_upp(ehsz + n * phsz, page);
	uint8_t *hdr = calloc(1, ehsz + n * phsz);
	int fd, r = 0;

	if (!hdr)
		return tk_fail(ENOMEM, "out of memory");
	memcpy(hdr, k->eh.ident, 16);
	tk_store_u16(hdr + 16, ET_CORE, k->big);
	tk_store_u16(hdr + 18, k->eh.machine, k->big);
	tk_store_u32(hdr + 20, EV_CURRENT, k->big);
	if (k->is64) {
		tk_store_u64(hdr + 32, 64, k->big); /* e_phoff */
		tk_store_u16(hdr + 52, 64, k->big); /* e_ehsize */
		tk_store_u16(hdr + 54, 56, k->big);
		tk_store_u16(hdr + 56, (uint16_t)n, k->big);
	} else {
		tk_store_u32(hdr + 28, 52, k->big);
		tk_store_u16(hdr + 40, 52, k->big);
		tk_store_u16(hdr + 42, 32, k->big);
		tk_store_u16(hdr + 44, (uint16_t)n, k->big);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t *ph = hdr + ehsz + i * phsz;
		uint64_t off = data + p[i].rel;

		tk_store_u32(ph, PT_LOAD, k->big);
		if (k->is64) {
			tk_store_u32(ph + 4, PF_R | PF_W | PF_X, k->big);
			tk_store_u64(ph + 8, off, k->big);
			tk_store_u64(ph + 16, p[i].addr, k->big);
			tk_store_u64(ph + 32, p[i].len, k->big);
			tk_store_u64(ph + 40, p[i].len, k->big);
			tk_store_u64(ph + 48, page, k->big);
		} else {
			tk_store_u32(ph + 4, (uint32_t)off, k->big);
			tk_store_u32(ph + 8, (uint32_t)p[i].addr, k->big);
			tk_store_u32(ph + 16, (uint32_t)p[i].len, k->big);
			tk_store_u32(ph + 20, (uint32_t)p[i].len, k->big);
			tk_store_u32(ph + 24, PF_R | PF_W | PF_X, k->big);
			tk_store_u32(ph + 28, (uint32_t)page, k->big);
		}
	}
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0) {
		free(hdr);
		return tk_fail_errno(errno, out);
	}
	r = tk_write_all(fd, hdr, ehsz + n * phsz);
	if (r < 0)
		r = tk_fail_errno(-r, out);
	for (size_t i = 0; i < n && r == 0; i++)
		if (p[i].remap < 0)
			r = copy_range(k->elf, p[i].src, fd, data + p[i].rel, p[i].len);
	if (close(fd) < 0 && r == 0)
		r = tk_fail_errno(errno, out);
	free(hdr);
	return r;
}

/* _stext of a kallsyms text: what perf's same_kallsyms_reloc() compares. */
static uint64_t kallsyms_stext(const char *ks)
{
	const char *p = strstr(ks, " _stext\n");
	unsigned long long a = 0;

	while (p && p > ks && p[-1] != '\n')
		p--;
	if (p && sscanf(p, "%llx", &a) != 1)
		a = 0;
	return a;
}

/* An existing DIR/[kernel.kcore]/BID/STAMP with the same modules and _stext. */
static bool kcore_cached(const char *bdir, const char *mods, size_t modlen, uint64_t stext)
{
	struct dirent *de;
	bool same = false;
	DIR *d = opendir(bdir);

	if (!d)
		return false;
	while (!same && (de = readdir(d))) {
		char *mp = NULL, *kp = NULL, *m = NULL, *kt = NULL;
		size_t ml, kl;

		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&mp, "%s/%s/modules", bdir, de->d_name) >= 0 &&
		    asprintf(&kp, "%s/%s/kallsyms", bdir, de->d_name) >= 0 &&
		    tk_read_file(mp, &m, &ml) == 0 && tk_read_file(kp, &kt, &kl) == 0)
			same = ml == modlen && !memcmp(m, mods, ml) && kallsyms_stext(kt) == stext;
		if (same) {
			/* Adding it again is a use of the copy we have. */
			char *dir;

			if (asprintf(&dir, "%s/%s", bdir, de->d_name) >= 0) {
				tk_cache_touch_use(dir);
				free(dir);
			}
		}
		free(mp);
		free(kp);
		free(m);
		free(kt);
	}
	closedir(d);
	return same;
}

TK_API int tk_cache_add_kcore(struct tk_cache *cache, const char *path, bool force, char *bid_out)
{
	struct kcore_src k = {.name = path};
	char *dir = NULL, *root = NULL, *ksp = NULL, *modp = NULL, *notes = NULL;
	char *ks = NULL, *mods = NULL, *ks2 = NULL, *bdir = NULL, *out = NULL, *f = NULL;
	char bid[TK_BUILD_ID_HEX_MAX] = "", stamp[32];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct kpiece *pc = NULL;
	size_t kslen, modlen, ks2len, npc = 0;
	struct kinfo ki;
	int r;

	if (strcmp(base, "kcore"))
		return tk_fail(EINVAL,
			       "%s: a kcore file must be named 'kcore', beside its "
			       "'kallsyms' and 'modules' (as /proc has them)",
			       path);
	dir = realpath(path, NULL);
	if (!dir)
		return tk_fail_errno(errno, path);
	*strrchr(dir, '/') = '\0';
	root = strdup(dir);
	if (!root || asprintf(&ksp, "%s/kallsyms", dir) < 0 ||
	    asprintf(&modp, "%s/modules", dir) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (strrchr(root, '/'))
		*strrchr(root, '/') = '\0';
	if (asprintf(&notes, "%s/sys/kernel/notes", root) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = kcore_parse(&k);
	if (r < 0)
		goto out;
	r = tk_read_file(ksp, &ks, &kslen);
	if (r == 0)
		r = tk_read_file(modp, &mods, &modlen);
	if (r < 0)
		goto out;
	/* The build id: perf reads ROOT/sys/kernel/notes for ROOT/proc/kcore. */
	if (access(notes, R_OK) == 0) {
		char *nb;
		size_t nl;
		uint8_t id[TK_BUILD_ID_MAX];

		r = tk_read_file(notes, &nb, &nl);
		if (r == 0) {
			r = tk_elf_notes_build_id(nb, nl, false, notes, 0, id, sizeof(id));
			free(nb);
		}
		if (r > 0)
			r = tk_elf_build_id_hex(id, (size_t)r, bid, sizeof(bid));
		if (r < 0)
			goto out;
	} else if (kcore_vmcoreinfo_bid(&k, bid) < 0) {
		r = tk_fail(ENOENT,
			    "%s: no kernel build id: neither %s nor a VMCOREINFO "
			    "BUILD-ID note in the kcore",
			    path, notes);
		goto out;
	}
	r = kcore_ranges(ksp, ks, kslen, modp, mods, &ki);
	if (r < 0)
		goto out;
	ki.stext = round_dn(ki.stext ? ki.stext : ki.first, page);
	if (ki.etext)
		ki.etext = round_upp(ki.etext, page);
	else if (ki.last)
		ki.etext = round_upp(ki.last, page) + page;
	if (ki.first_modsym && (!ki.first_mod || ki.first_modsym < ki.first_mod))
		ki.first_mod = ki.first_modsym;
	ki.first_mod = round_dn(ki.first_mod, page);
	if (ki.last_modsym)
		ki.last_modsym = round_upp(ki.last_modsym, page) + page;
	if (!ki.stext || !ki.etext || (ki.first_mod && !ki.last_modsym)) {
		r = tk_fail(EBADMSG, "%s: no kernel text symbols (_stext/_etext or functions)%s",
			    ksp, ki.first_mod ? " or no module symbols" : "");
		goto out;
	}
	for (size_t i = 0; i < k.nloads && r == 0; i++) {
		r = kpiece_add(&pc, &npc, &k.loads[i], ki.stext, ki.etext);
		if (r == 0 && ki.first_mod)
			r = kpiece_add(&pc, &npc, &k.loads[i], ki.first_mod, ki.last_modsym);
		if (r == 0 && ki.tramp)
			r = kpiece_add(&pc, &npc, &k.loads[i], round_dn(ki.tramp, page),
				       round_dn(ki.tramp, page) + page);
	}
	if (r < 0)
		goto out;
	if (!npc || npc > 1000) {
		r = tk_fail(EBADMSG,
			    "%s: no PT_LOAD segment holds the kernel text 0x%" PRIx64 "-0x%" PRIx64,
			    path, ki.stext, ki.etext);
		goto out;
	}
	/* Pieces inside the kernel text's bytes (e.g. a second text mapping) share them. */
	{
		size_t kt = npc, rel = 0;

		for (size_t i = 0; i < npc && kt == npc; i++)
			if (pc[i].addr <= ki.stext && ki.stext - pc[i].addr < pc[i].len)
				kt = i;
		for (size_t i = 0; i < npc; i++)
			if (kt < npc && i != kt && pc[i].src >= pc[kt].src &&
			    pc[i].src + pc[i].len <= pc[kt].src + pc[kt].len)
				pc[i].remap = (int)kt;
		for (size_t i = 0; i < npc; i++)
			if (pc[i].remap < 0) {
				pc[i].rel = rel;
				rel += pc[i].len;
			}
		for (size_t i = 0; i < npc; i++)
			if (pc[i].remap >= 0)
				pc[i].rel = pc[i].src - pc[pc[i].remap].src + pc[pc[i].remap].rel;
	}
	if (asprintf(&bdir, "%s/[kernel.kcore]/%s", tk_cache_dir(cache), bid) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (!force && kcore_cached(bdir, mods, modlen, kallsyms_stext(ks))) {
		r = 0;
		goto done;
	}
	{
		struct timeval tv;
		struct tm tm;
		char dt[24];

		gettimeofday(&tv, NULL);
		localtime_r(&tv.tv_sec, &tm);
		strftime(dt, sizeof(dt), "%Y%m%d%H%M%S", &tm);
		snprintf(stamp, sizeof(stamp), "%s%02u", dt, (unsigned)(tv.tv_usec / 10000));
	}
	if (asprintf(&out, "%s/%s", bdir, stamp) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = tk_mkdir_p(out);
	if (r < 0)
		goto out;
	if (asprintf(&f, "%s/kallsyms", out) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto fail_dir;
	}
	r = tk_write_file_atomic(f, ks, kslen, 0400);
	free(f);
	if (r == 0 && asprintf(&f, "%s/modules", out) >= 0) {
		r = tk_write_file_atomic(f, mods, modlen, 0400);
		free(f);
	}
	if (r == 0 && asprintf(&f, "%s/kcore", out) >= 0) {
		r = kcore_write(&k, pc, npc, f, page);
		free(f);
	}
	/* Modules loaded or unloaded meanwhile would make the copy inconsistent. */
	if (r == 0 &&
	    (tk_read_file(ksp, &ks2, &ks2len) < 0 || ks2len != kslen || memcmp(ks, ks2, kslen)))
		r = tk_fail(EAGAIN, "%s: changed while the kcore was copied; try again", ksp);
	if (r < 0)
		goto fail_dir;
	tk_cache_touch_use(out);
	r = 1;
done:
	if (bid_out)
		memcpy(bid_out, bid, sizeof(bid));
	goto out;
fail_dir:
	tk_rm_rf(out);
	rmdir(bdir);
out:
	tk_elf_close(k.elf);
	free(k.loads);
	free(pc);
	free(dir);
	free(root);
	free(ksp);
	free(modp);
	free(notes);
	free(ks);
	free(ks2);
	free(mods);
	free(bdir);
	free(out);
	return r;
}
