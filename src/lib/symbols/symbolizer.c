// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * The symbolizer: process addresses, file offsets and uprobe events to
 * symbol names, through the build-id cache when one is given.
 *
 * A symbolizer keeps one process's maps (start, end, file offset, DSO),
 * sorted by start on the first lookup after a change and searched by
 * bisection, and one record per DSO (path + build id) whose symbol table
 * (elf.c's tk_elf_symtab, perf's tree shape) and PT_LOAD segments load on the
 * first lookup that lands in it. A map's address becomes a file offset
 * (address - start + pgoff), the segments turn that into the link-time
 * address the symbol table is keyed by; the kernel's "offset" is already
 * its address.
 *
 * Where a DSO's symbols come from, in perf 6.1's order, and never from a
 * file whose build id differs from the DSO's (the recorded one): files
 * travel between machines, and a binary rebuilt since the recording would
 * name every address confidently and wrongly. perf prints [unknown]
 * there, and so do we.
 *   - A binary: the cache entry of its build id ("elf" below
 *     .build-id/xx/rest, or a pre-2016 entry that is the file itself),
 *     else the path (below --symfs DIR when one is set) when that file's
 *     build id is the DSO's; a DSO without a build id takes the path as it
 *     is, as perf does. Under --symfs DIR that cache is DIR/.debug, not
 *     the one given (perf's buildid dir then). Of that file: its .symtab,
 *     else the .symtab of a
 *     debug file with the same build id (the entry's "debug", then
 *     $TRACEKIT_DEBUG_DIR/.build-id/xx/rest.debug), else its .dynsym. A
 *     debug file without its binary names nothing: its segments carry no
 *     file offsets to place an address by. (perf 6.1 then places
 *     addresses with those zeroed offsets and may print whatever symbol
 *     lands there, e.g. a .bss array; that is not copied.)
 *   - The kernel: a kallsyms file given by the caller (trusted as it is,
 *     as perf trusts --kallsyms), else /proc/kallsyms when the running
 *     kernel's build id (/sys/kernel/notes) is the DSO's or the DSO has
 *     none, else the cache's [kernel.kallsyms]/ID/kallsyms (or its
 *     .build-id/xx/rest/kallsyms). With --symfs set perf tries neither
 *     this machine's nor the cache's kallsyms, and neither does this.
 *     /proc/kallsyms itself is read whole only for an address that the
 *     cache's copy of the kernel image's lines (DIR/.tk-kallsyms/ID,
 *     ksyms-copy.c, made at the first whole read) cannot answer: the
 *     kernel's formatting of it (~20 ms of system time) was a quarter of
 *     a DWARF report's CPU time (kernel_load()).
 *     A vmlinux given by the caller (perf's --vmlinux) comes before all
 *     of these and excludes them, as in perf: its .symtab names the kernel
 *     only when its build id is the recorded one (else every kernel address
 *     is [unknown], with one warning), moved by the recording's _text
 *     (the kernel MMAP's pgoff, tk_symbolizer_set_kernel_text()) minus the
 *     vmlinux's own _text, perf's relocation for a KASLR kernel. Its
 *     functions, relocated, also go in kallsyms's format to the event
 *     printer for tracepoints' %ps arguments (tk_symbolizer_kernel_text()),
 *     as perf names those from its kernel map; that format has no sizes, so
 *     an address between two functions takes the lower one's name where
 *     perf prints a number (a function pointer is never there).
 *   - A kernel module (tk_symbolizer_lookup_kmodule(), for the module maps
 *     of perfdata-maps.c): a binary's places, as perf 6.1 looks for a
 *     module (the cache's "elf" of its build id, then its path below
 *     --symfs when that file has the id; no /usr/lib/debug), and only a
 *     relocatable file (a .ko) serves: its .text's symbols keyed by file
 *     offset (tk_elf_symtab_new_kmodule()), an address's offset in the
 *     map plus .text's file offset being the key, as perf has it. A
 *     module recorded as .ko.gz or .ko.xz is read inflated (kmod-file.c),
 *     its build id checked on the image.
 *   - [vdso]: the cache's "vdso" of its build id. Only a [vdso] the file
 *     recorded no build id for is read from this process's own vDSO: perf
 *     6.1 makes a recorded id's [vdso] a DSO of that name, which no file
 *     on disk is, so without the cache's copy it prints [unknown].
 *   - /tmp/perf-PID.map (what perf calls an executable anonymous map, JIT
 *     code): that file's "START SIZE NAME" lines, keyed by the process
 *     address; it has no build id.
 * The build-id check is done once per DSO, when its symbols load on the
 * first lookup that lands in it; a sample costs no file access. A
 * symbolizer reading a cache entry is a use of it (the LRU stamp of
 * cache.c is touched).
 *
 * Uprobe events: a .dat names a uprobe by GROUP/EVENT and its address
 * (__probe_ip); the place it probes ("PATH:0xOFF") comes from the cache's
 * probes files (valid entries first, then stale ones), else from the live
 * uprobe_events; for an EVENT_N gone from tracefs, from the cache's EVENT.
 * The sites found (and misses) are remembered per GROUP/EVENT. When one
 * SDT name has several places, the site whose link-time address equals
 * the probe address, else is congruent to it modulo the page size (a
 * mapping's load bias is whole pages), is the one that fired.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/cache.h>
#include <tracekit/symbolizer.h>

#include "cache-internal.h"
#include "elf-internal.h"
#include "debug-inflate.h"
#include "symbolizer-internal.h"
#include "error.h"
#include "fsutil.h"
#include "kmod-file.h"
#include "ksyms-copy.h"
#include "ksyms-lazy.h"

struct seg {
	uint64_t offset, filesz, vaddr;
};

struct dso {
	char *path;
	char bid[TK_BUILD_ID_HEX_MAX];
	struct tk_elf_symtab *st;
	struct tk_ksyms_lazy *klazy; /* the kernel's kallsyms, instead of @st (ksyms-lazy.c) */
	/* @klazy holds the kernel image's lines alone, valid below this address (ksyms-copy.c) */
	uint64_t kimage_below;
	/* the copy's index after /proc/kallsyms replaced it: names it gave stay valid */
	struct tk_ksyms_lazy *kimage;
	struct seg *segs;
	size_t nsegs;
	bool kernel;
	bool vdso;
	uint64_t reloc; /* the kernel's: recorded _text - the vmlinux's _text */
	/* A vmlinux's .text: sh_addr + reloc, sh_size, sh_offset (perf's map_ip). */
	uint64_t text_addr, text_size, text_off;
	bool perfmap; /* a JIT's /tmp/perf-PID.map: keyed by process address */
	bool kmod;    /* a kernel module (.ko): offsets in its map plus kmod_off are its keys */
	uint64_t kmod_off; /* the .ko's .text sh_offset (perf's pgoff of a loaded module) */
	bool loaded;
};

struct smap {
	uint64_t start, end, pgoff;
	struct dso *dso;
};

/* Where a uprobe event probes: one per definition line of GROUP/EVENT. */
struct usite {
	char *key;  /* "GROUP/EVENT" */
	char *path; /* NULL: a remembered miss */
	char bid[TK_BUILD_ID_HEX_MAX];
	uint64_t offset;
};

struct tk_symbolizer {
	struct tk_cache *cache;
	char *symfs;	      /* root for the paths of binaries, or NULL */
	char *symfs_cache;    /* symfs's .debug: the build-id cache perf reads under --symfs */
	char *kallsyms;	      /* the kernel's symbols, trusted as they are, or NULL */
	char *vmlinux;	      /* the kernel's ELF (perf's --vmlinux), by build id, or NULL */
	uint64_t kernel_text; /* _text of the recording (its kernel MMAP's pgoff), or 0 */
	struct dso **dsos;
	size_t ndsos;
	struct smap *maps;
	size_t nmaps;
	bool sorted;
	struct usite *sites;
	size_t nsites;
};

TK_API struct tk_symbolizer *tk_symbolizer_new(struct tk_cache *cache)
{
	struct tk_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return tk_fail_null(ENOMEM, "out of memory");
	s->cache = cache;
	return s;
}

TK_API void tk_symbolizer_free(struct tk_symbolizer *sym)
{
	if (!sym)
		return;
	for (size_t i = 0; i < sym->ndsos; i++) {
		tk_elf_symtab_free(sym->dsos[i]->st);
		tk_ksyms_lazy_free(sym->dsos[i]->klazy);
		tk_ksyms_lazy_free(sym->dsos[i]->kimage);
		free(sym->dsos[i]->segs);
		free(sym->dsos[i]->path);
		free(sym->dsos[i]);
	}
	free(sym->dsos);
	free(sym->maps);
	for (size_t i = 0; i < sym->nsites; i++) {
		free(sym->sites[i].key);
		free(sym->sites[i].path);
	}
	free(sym->sites);
	free(sym->symfs);
	free(sym->symfs_cache);
	free(sym->kallsyms);
	free(sym->vmlinux);
	free(sym);
}

/* Replace *@slot by a copy of @value (NULL or "" clears it). */
static int set_string(char **slot, const char *value)
{
	char *v = NULL;

	if (value && *value) {
		v = strdup(value);
		if (!v)
			return tk_fail(ENOMEM, "out of memory");
	}
	free(*slot);
	*slot = v;
	return 0;
}

TK_API int tk_symbolizer_set_symfs(struct tk_symbolizer *sym, const char *dir)
{
	char *c = NULL;

	if (dir && *dir && asprintf(&c, "%s/.debug", dir) < 0)
		return tk_fail(ENOMEM, "out of memory");
	if (set_string(&sym->symfs, dir) < 0) {
		free(c);
		return -ENOMEM;
	}
	free(sym->symfs_cache);
	sym->symfs_cache = c;
	return 0;
}

/*
 * The build-id cache binaries are looked up in: DIR/.debug under --symfs
 * DIR (perf then sets its buildid dir so, leaving the local cache out),
 * else the cache given at creation; NULL for none.
 */
static const char *cache_root(const struct tk_symbolizer *s)
{
	if (s->symfs)
		return s->symfs_cache;
	return s->cache ? tk_cache_dir(s->cache) : NULL;
}

TK_API int tk_symbolizer_set_kallsyms(struct tk_symbolizer *sym, const char *path)
{
	return set_string(&sym->kallsyms, path);
}

TK_API int tk_symbolizer_set_vmlinux(struct tk_symbolizer *sym, const char *path)
{
	return set_string(&sym->vmlinux, path);
}

void tk_symbolizer_set_kernel_text(struct tk_symbolizer *sym, uint64_t text)
{
	if (sym && text && !sym->kernel_text)
		sym->kernel_text = text;
}

static struct dso *dso_get(struct tk_symbolizer *s, const char *path, const char *bid)
{
	struct dso *d, **nv;

	for (size_t i = 0; i < s->ndsos; i++) {
		d = s->dsos[i];
		if (!strcmp(d->path, path) && (!bid || !d->bid[0] || !strcmp(d->bid, bid)))
			return d;
	}
	nv = realloc(s->dsos, (s->ndsos + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	s->dsos = nv;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return NULL;
	}
	if (bid)
		snprintf(d->bid, sizeof(d->bid), "%s", bid);
	d->kernel = !strcmp(path, "[kernel.kallsyms]");
	d->vdso = !strcmp(path, "[vdso]");
	d->perfmap = !strncmp(path, "/tmp/perf-", 10);
	s->dsos[s->ndsos++] = d;
	return d;
}

/* Whether the ELF file at @path has build id @bid (hex). */
/* Whether @path, read as a module stored as @comp says (kmod-file.h), has build id @bid. */
static bool file_bid_is(const char *path, enum tk_kmod_comp comp, const char *bid)
{
	char hex[TK_BUILD_ID_HEX_MAX];
	int r = tk_kmod_file_build_id(path, comp, hex);

	if ((r == -EBADMSG || r == -EFBIG) && comp != TK_KMOD_PLAIN)
		/* A damaged .ko.xz: perf is silent, but the reason is worth a line. */
		tk_warn("%s; its addresses stay [unknown]", tk_errmsg());
	return r > 0 && !strcmp(hex, bid);
}

/* The cache's entry for @d by build id (its "elf", "kallsyms" or "vdso"), or NULL. */
static char *cache_file(struct tk_symbolizer *s, struct dso *d)
{
	const char *leaf = d->kernel ? "kallsyms" : d->vdso ? "vdso" : "elf";
	char *f = NULL, *link;

	if (!cache_root(s) || !d->bid[0])
		return NULL;
	if (asprintf(&link, "%s/.build-id/%.2s/%s", cache_root(s), d->bid, d->bid + 2) < 0)
		return NULL;
	if (asprintf(&f, "%s/%s", link, leaf) >= 0 && access(f, R_OK) < 0) {
		free(f);
		/* A pre-2016 entry is the file itself. */
		struct stat st;

		f = stat(link, &st) == 0 && S_ISREG(st.st_mode) ? strdup(link) : NULL;
	}
	if (f && !s->symfs) {
		char *dir = realpath(link, NULL);

		if (dir) {
			tk_cache_touch_use(dir);
			free(dir);
		}
	}
	free(link);
	return f;
}

/*
 * The kallsyms to name kernel addresses of @d from, or NULL: the caller's
 * file, the running kernel's when it is the recorded one (or none is
 * recorded), else the cache's copy for the recorded build id.
 */
static char *kernel_file(struct tk_symbolizer *s, struct dso *d)
{
	char hex[TK_BUILD_ID_HEX_MAX];
	const char *running;
	char *f = NULL;

	/* perf reads no kallsyms when given a vmlinux. */
	if (s->vmlinux)
		return NULL;
	if (s->kallsyms)
		return strdup(s->kallsyms);
	if (s->symfs)
		return NULL;
	running = s->cache				 ? tk_cache_kernel_bid(s->cache)
		  : tk_cache_running_kernel_bid(hex) > 0 ? hex
							 : NULL;
	if (!d->bid[0] || (running && !strcmp(running, d->bid)))
		return strdup("/proc/kallsyms");
	if (s->cache) {
		/* perf's own place for it, then the .build-id link to the same. */
		if (asprintf(&f, "%s/[kernel.kallsyms]/%s/kallsyms", tk_cache_dir(s->cache),
			     d->bid) >= 0 &&
		    access(f, R_OK) < 0) {
			free(f);
			f = NULL;
		}
		if (!f)
			f = cache_file(s, d);
	}
	return f;
}

static void dso_load(struct tk_symbolizer *s, struct dso *d);

int tk_symbolizer_kernel_text(struct tk_symbolizer *sym, const char *build_id, char **text,
			      size_t *len)
{
	const struct tk_elf_symbol *syms;
	struct tk_elf *elf;
	struct dso *d;
	char *path, *t = NULL;
	size_t n, cap = 0, used = 0;
	int r;

	if (!sym->vmlinux) {
		path = tk_symbolizer_kernel_file(sym, build_id);
		if (!path)
			return -ENOENT;
		r = tk_read_file(path, text, len);
		free(path);
		return r;
	}
	/* The vmlinux's functions, where its symbols name kernel addresses from. */
	d = dso_get(sym, "[kernel.kallsyms]", build_id);
	if (!d)
		return tk_fail(ENOMEM, "out of memory");
	if (!d->loaded)
		dso_load(sym, d);
	if (!d->st)
		return -ENOENT; /* another build id: warned about once */
	elf = tk_elf_open(sym->vmlinux);
	if (!elf)
		return -ENOENT;
	r = tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		size_t need;

		if (syms[i].type != 2 /* STT_FUNC */ || !syms[i].shndx || !syms[i].name[0])
			continue;
		need = strlen(syms[i].name) + 24;
		if (used + need + 1 > cap) {
			char *nt = realloc(t, cap = (used + need + 1) * 2);

			if (!nt) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			t = nt;
		}
		used += (size_t)snprintf(t + used, cap - used, "%016" PRIx64 " t %s\n",
					 syms[i].value + d->reloc, syms[i].name);
	}
	tk_elf_close(elf);
	if (r < 0 || !t) {
		free(t);
		return r < 0 ? r : -ENOENT;
	}
	*text = t;
	*len = used;
	return 0;
}

char *tk_symbolizer_kernel_file(struct tk_symbolizer *sym, const char *build_id)
{
	struct dso d = {.path = (char *)"[kernel.kallsyms]", .kernel = true};

	if (build_id)
		snprintf(d.bid, sizeof(d.bid), "%s", build_id);
	return kernel_file(sym, &d);
}

/*
 * The file to read a DSO's symbols from: the cache by build id first,
 * then the path (below symfs) when its build id is the DSO's.
 */
static char *dso_file(struct tk_symbolizer *s, struct dso *d)
{
	char *f;

	if (d->kernel)
		return kernel_file(s, d);
	f = cache_file(s, d);
	if (f || d->vdso)
		return f;
	if (s->symfs && d->path[0] == '/') {
		if (asprintf(&f, "%s%s", s->symfs, d->path) < 0)
			return NULL;
	} else {
		f = strdup(d->path);
	}
	if (f && d->bid[0] && !file_bid_is(f, tk_kmod_compression(d->path), d->bid)) {
		/* Rebuilt or replaced since the recording: its symbols would lie. */
		free(f);
		f = NULL;
	}
	return f;
}

/*
 * This process's own vDSO, the running kernel's: what perf 6.1 reads for a
 * [vdso] the file recorded no build id for (a copy of its own).
 */
static struct tk_elf *own_vdso(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char *maps = NULL, *line, *save = NULL;
	unsigned long long start, end;
	struct tk_elf *elf = NULL;
	size_t len;

	if (!base || tk_read_file("/proc/self/maps", &maps, &len) < 0)
		return NULL;
	for (line = strtok_r(maps, "\n", &save); line && !elf; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%llx-%llx", &start, &end) != 2 ||
		    start != base || end <= start)
			continue;
		elf = tk_elf_open_mem((const void *)base, (size_t)(end - start), "[vdso]");
	}
	free(maps);
	return elf;
}

/* Copy the PT_LOAD segments of @elf into @d (file offset <-> address). */
static void dso_take_segments(struct dso *d, struct tk_elf *elf)
{
	struct tk_elf_segment *tmp;
	int n = tk_elf_segments(elf, NULL, 0);

	if (n <= 0)
		return;
	tmp = calloc((size_t)n, sizeof(*tmp));
	d->segs = calloc((size_t)n, sizeof(*d->segs));
	if (tmp && d->segs && tk_elf_segments(elf, tmp, (size_t)n) == n) {
		for (int i = 0; i < n; i++) {
			d->segs[i].offset = tmp[i].offset;
			d->segs[i].filesz = tmp[i].filesz;
			d->segs[i].vaddr = tmp[i].vaddr;
		}
		d->nsegs = (size_t)n;
	} else {
		free(d->segs);
		d->segs = NULL;
	}
	free(tmp);
}

static bool has_symtab(struct tk_elf *elf)
{
	const struct tk_elf_symbol *syms;
	size_t n;

	return tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n) == 0 && n > 0;
}

/*
 * A separate debug file for build id @bid with a .symtab, or NULL: the
 * cache entry's "debug" (perf's DSO_BINARY_TYPE__BUILD_ID_CACHE_DEBUGINFO),
 * then DEBUG_ROOT/.build-id/xx/rest.debug (BUILDID_DEBUGINFO). A file
 * whose own build id differs is ignored: its symbols would be wrong.
 */
static struct tk_elf *debug_elf(struct tk_symbolizer *s, const char *bid)
{
	char *cand[2] = {NULL, NULL};
	struct tk_elf *found = NULL;

	if (!bid || strlen(bid) < 3)
		return NULL;
	if (cache_root(s) &&
	    asprintf(&cand[0], "%s/.build-id/%.2s/%s/debug", cache_root(s), bid, bid + 2) < 0)
		cand[0] = NULL;
	if (asprintf(&cand[1], "%s/.build-id/%.2s/%s.debug", tk_cache_debug_root(), bid, bid + 2) <
	    0)
		cand[1] = NULL;
	for (size_t i = 0; i < 2 && !found; i++) {
		char hex[TK_BUILD_ID_HEX_MAX];
		uint8_t id[TK_BUILD_ID_MAX];
		struct tk_elf *e;
		int n;

		if (!cand[i] || access(cand[i], R_OK) < 0)
			continue;
		e = tk_elf_open(cand[i]);
		if (!e)
			continue;
		n = tk_elf_build_id(e, id, sizeof(id));
		if (n > 0 && tk_elf_build_id_hex(id, (size_t)n, hex, sizeof(hex)) > 0 &&
		    !strcmp(hex, bid) && has_symtab(e))
			found = e;
		else
			tk_elf_close(e);
	}
	free(cand[0]);
	free(cand[1]);
	return found;
}

/*
 * A JIT's symbols from its /tmp/perf-PID.map. As perf, a file owned by
 * another user than root or us is ignored: anyone can write to /tmp, and
 * the names would be theirs.
 */
static void perfmap_load(struct dso *d)
{
	struct stat st;
	char *text;
	size_t len;

	if (lstat(d->path, &st) < 0 || (st.st_uid && st.st_uid != geteuid()))
		return;
	if (tk_read_file(d->path, &text, &len) == 0) {
		d->st = tk_elf_symtab_new_perfmap(text, len, d->path);
		free(text);
	}
}

/* The .text section header of the ELF at @path; false when it has none. */
static bool text_section(const char *path, GElf_Shdr *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	bool found = false;
	size_t shstrndx;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0) {
		while (!found && (scn = elf_nextscn(e, scn)) != NULL) {
			const char *name;

			if (gelf_getshdr(scn, out) &&
			    (name = elf_strptr(e, shstrndx, out->sh_name)) &&
			    !strcmp(name, ".text"))
				found = true;
		}
	}
	elf_end(e);
	close(fd);
	return found;
}

/*
 * The kernel's symbols from the caller's vmlinux (perf's --vmlinux), only
 * when its build id is the one recorded for the kernel (or none was): one
 * warning otherwise, and the kernel's addresses stay unnamed.
 */
static void vmlinux_load(struct tk_symbolizer *s, struct dso *d)
{
	char hex[TK_BUILD_ID_HEX_MAX] = "";
	const struct tk_elf_symbol *syms;
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf = tk_elf_open(s->vmlinux);
	size_t n;
	int len;

	if (!elf) {
		tk_warn("vmlinux %s: %s: kernel symbols [unknown]", s->vmlinux, tk_errmsg());
		return;
	}
	len = tk_elf_build_id(elf, id, sizeof(id));
	if (len > 0)
		tk_elf_build_id_hex(id, (size_t)len, hex, sizeof(hex));
	if (d->bid[0] && strcmp(hex, d->bid)) {
		tk_warn("vmlinux %s: build id %s is not the recorded kernel's %s: kernel "
			"symbols [unknown]",
			s->vmlinux, hex[0] ? hex : "(none)", d->bid);
		tk_elf_close(elf);
		return;
	}
	d->st = tk_elf_symtab_new_elf(elf);
	if (s->kernel_text && tk_elf_symbols(elf, TK_ELF_ANY, &syms, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(syms[i].name, "_text") && syms[i].shndx) {
				d->reloc = s->kernel_text - syms[i].value;
				break;
			}
	}
	tk_elf_close(elf);
	/*
	 * perf then maps the kernel by the vmlinux's .text: an address it
	 * cannot name shows (perf report) as its offset in that file.
	 */
	GElf_Shdr text;

	if (d->st && text_section(s->vmlinux, &text)) {
		d->text_addr = text.sh_addr + d->reloc;
		d->text_size = text.sh_size;
		d->text_off = text.sh_offset;
	}
}

/* Whether @elf is relocatable: a kernel module, as only a kernel MMAP record maps one. */
static bool is_kmodule(struct tk_elf *elf)
{
	struct tk_elf_header h;

	return tk_elf_header(elf, &h) == 0 && h.type == ET_REL;
}

/*
 * A kernel module's symbols: its .text's, keyed by file offset (see
 * tk_elf_symtab_new_kmodule()). A .ko without a .symtab names nothing:
 * perf 6.1 refuses a kernel-space file without one (its .dynsym, if any,
 * would not be the kernel's view), and it looks for a module's debug
 * file in the build-id cache only, which tracekit's cache does not fill.
 */
static void kmodule_load(struct dso *d, struct tk_elf *elf)
{
	d->kmod = true;
	d->st = tk_elf_symtab_new_kmodule(elf, &d->kmod_off);
	if (!d->st && errno != ENOENT)
		tk_warn("%s; its addresses stay [unknown]", tk_errmsg());
}

/*
 * The kernel's symbols from the kallsyms text at @f. For the running
 * kernel's /proc/kallsyms, the kept copy of the kernel image's lines when
 * it is still what /proc/kallsyms lists (ksyms-copy.c): dso_resolve()
 * reads /proc/kallsyms whole only for an address the copy cannot answer.
 * A whole read of it refreshes the copy.
 */
static void kernel_load(struct tk_symbolizer *s, struct dso *d, const char *f)
{
	const char *dir = s && s->cache ? tk_cache_dir(s->cache) : NULL;
	const char *kbid = NULL, *ctext;
	const void *clines;
	size_t len, n, map_len;
	char *text;
	void *map;

	/* kernel_file() gives /proc/kallsyms only for the running kernel's build id or none. */
	if (dir && !strcmp(f, "/proc/kallsyms"))
		kbid = d->bid[0] ? d->bid : tk_cache_kernel_bid(s->cache);
	d->kimage_below = 0;
	/* The copy comes with its index: no line is parsed (the parse was 29 M instructions). */
	if (kbid && kbid[0] &&
	    tk_ksyms_copy_get(dir, kbid, &ctext, &len, &clines, &n, &map, &map_len) == 0) {
		d->klazy = tk_ksyms_lazy_adopt(ctext, len, clines, n, f, map, map_len);
		if (d->klazy) {
			d->kimage_below = tk_ksyms_lazy_last(d->klazy);
			if (d->kimage_below)
				return;
			tk_ksyms_lazy_free(d->klazy);
			d->klazy = NULL;
		} else {
			munmap(map, map_len);
		}
	}
	if (tk_read_file(f, &text, &len) == 0) {
		/* Symbols made per address asked for; it keeps the text. */
		d->klazy = tk_ksyms_lazy_new(text, len, f);
		if (d->klazy && kbid && kbid[0])
			tk_ksyms_copy_put(dir, kbid, text, len, d->klazy);
		if (!d->klazy) {
			d->st = tk_elf_symtab_new_kallsyms(text, len, f);
			free(text);
		}
	}
}

/*
 * Load a DSO's symbols the way perf picks its symtab source: the binary's
 * own .symtab when it has one, else a debug file's .symtab, else the
 * binary's .dynsym. Segments always come from the binary (a debug file's
 * sections are NOBITS), or from the debug file when the binary is gone.
 */
static void dso_load(struct tk_symbolizer *s, struct dso *d)
{
	struct tk_elf *elf = NULL, *dbg = NULL;
	char hex[TK_BUILD_ID_HEX_MAX];
	const char *bid = d->bid[0] ? d->bid : NULL;
	char *f;

	d->loaded = true;
	if (d->perfmap) {
		perfmap_load(d);
		return;
	}
	if (d->kernel && s->vmlinux) {
		vmlinux_load(s, d);
		return;
	}
	f = dso_file(s, d);
	if (!f && d->vdso) {
		elf = bid ? NULL : own_vdso();
		if (elf) {
			d->st = tk_elf_symtab_new_elf(elf);
			dso_take_segments(d, elf);
			tk_elf_close(elf);
		}
		return;
	}
	if (!f && (d->kernel || !bid))
		return;
	if (d->kernel) {
		kernel_load(s, d, f);
		free(f);
		return;
	}
	/* No binary of this build id: only a debug file of it is left (see the notes). */
	elf = f ? tk_kmod_elf_open(f, tk_kmod_compression(d->path)) : NULL;
	if (!elf && f && tk_kmod_compression(d->path) != TK_KMOD_PLAIN && errno != ENOENT)
		/* A damaged .ko.xz whose build id was read before it broke: say why. */
		tk_warn("%s; its addresses stay [unknown]", tk_errmsg());
	free(f);
	if (elf && is_kmodule(elf)) {
		kmodule_load(d, elf);
		tk_elf_close(elf);
		return;
	}
	if (elf && !bid) {
		uint8_t id[TK_BUILD_ID_MAX];
		int n = tk_elf_build_id(elf, id, sizeof(id));

		if (n > 0 && tk_elf_build_id_hex(id, (size_t)n, hex, sizeof(hex)) > 0)
			bid = hex;
	}
	if (elf && tk_cache_table_broken(elf, TK_ELF_SYMTAB)) {
		/* Say why this DSO's frames will be poorer; its .dynsym still serves. */
		tk_warn("%s; symbols from its .dynsym instead", tk_errmsg());
		d->st = tk_elf_symtab_new_dso(elf, TK_ELF_DYNSYM, elf);
	} else if (elf && has_symtab(elf)) {
		d->st = tk_elf_symtab_new_elf(elf);
	} else {
		dbg = debug_elf(s, bid);
		/* The PLT entries come from the binary: a debug file has no bytes for them. */
		if (dbg)
			d->st = tk_elf_symtab_new_dso(dbg, TK_ELF_ANY, elf);
		else if (elf)
			d->st = tk_elf_symtab_new_elf(elf);
	}
	if (elf)
		dso_take_segments(d, elf);
	else if (dbg)
		dso_take_segments(d, dbg);
	tk_elf_close(dbg);
	tk_elf_close(elf);
}

char *tk_symbolizer_binary_file(struct tk_symbolizer *sym, const char *path, const char *build_id)
{
	struct dso *d;

	if (!strcmp(path, "[kernel.kallsyms]") || !strncmp(path, "/tmp/perf-", 10))
		return NULL;
	d = dso_get(sym, path, build_id && *build_id ? build_id : NULL);
	return d ? dso_file(sym, d) : NULL;
}

char *tk_symbolizer_debug_file(struct tk_symbolizer *sym, const char *build_id)
{
	char *cand[2] = {NULL, NULL}, *found = NULL;

	if (!build_id || strlen(build_id) < 3)
		return NULL;
	if (cache_root(sym) && asprintf(&cand[0], "%s/.build-id/%.2s/%s/debug", cache_root(sym),
					build_id, build_id + 2) < 0)
		cand[0] = NULL;
	if (asprintf(&cand[1], "%s/.build-id/%.2s/%s.debug", tk_cache_debug_root(), build_id,
		     build_id + 2) < 0)
		cand[1] = NULL;
	for (size_t i = 0; i < 2 && !found; i++) {
		if (cand[i] && access(cand[i], R_OK) == 0 &&
		    file_bid_is(cand[i], TK_KMOD_PLAIN, build_id)) {
			found = cand[i];
			cand[i] = NULL;
		}
	}
	free(cand[0]);
	free(cand[1]);
	return found;
}

char *tk_symbolizer_dwarf_file(struct tk_symbolizer *sym, const char *build_id)
{
	char *debug = tk_symbolizer_debug_file(sym, build_id), *copy;

	/* The local cache only: a --symfs tree is another machine's, read, never written. */
	copy = debug && sym->cache ? tk_debug_inflated(tk_cache_dir(sym->cache), debug, build_id)
				   : NULL;
	if (!copy)
		return debug;
	free(debug);
	return copy;
}

static int smap_cmp(const void *a, const void *b)
{
	const struct smap *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

TK_API int tk_symbolizer_add_map(struct tk_symbolizer *sym, uint64_t start, uint64_t len,
				 uint64_t pgoff, const char *path, const char *build_id)
{
	char hex[TK_BUILD_ID_HEX_MAX];
	struct smap *nv;
	struct dso *d;

	if (!len || start + len < start)
		return tk_fail(EINVAL, "%s: empty or wrapping map 0x%" PRIx64 "+0x%" PRIx64, path,
			       start, len);
	if (!build_id && path[0] == '/' && tk_cache_file_build_id(path, hex) > 0)
		build_id = hex;
	if (!build_id && !strcmp(path, "[kernel.kallsyms]"))
		build_id = sym->cache				  ? tk_cache_kernel_bid(sym->cache)
			   : tk_cache_running_kernel_bid(hex) > 0 ? hex
								  : NULL;
	d = dso_get(sym, path, build_id);
	nv = d ? realloc(sym->maps, (sym->nmaps + 1) * sizeof(*nv)) : NULL;
	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	sym->maps = nv;
	nv[sym->nmaps].start = start;
	nv[sym->nmaps].end = start + len;
	nv[sym->nmaps].pgoff = pgoff;
	nv[sym->nmaps].dso = d;
	sym->nmaps++;
	sym->sorted = false;
	return 0;
}

/* Resolve a file offset (an address for the kernel) inside @d. */
/* The address the file offset @off of @d's loaded segments holds: false when none holds it. */
static bool seg_vaddr(const struct dso *d, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < d->nsegs; i++)
		if (off >= d->segs[i].offset && off - d->segs[i].offset < d->segs[i].filesz) {
			*vaddr = off - d->segs[i].offset + d->segs[i].vaddr;
			return true;
		}
	return false;
}

static void dso_resolve(struct tk_symbolizer *s, struct dso *d, uint64_t off,
			struct tk_symbol_info *info)
{
	uint64_t vaddr = off;
	bool mapped = d->kernel || d->perfmap;

	if (!d->loaded)
		dso_load(s, d);
	vaddr -= d->reloc;
	info->dso = d->path;
	info->symbol = NULL;
	info->offset = 0;
	info->file_offset = off;
	if (d->text_size && off - d->text_addr < d->text_size)
		info->file_offset = off - d->text_addr + d->text_off;
	if (d->kmod) {
		/* perf's module map: offset + the .text's file offset, its symbols' keys. */
		vaddr = off + d->kmod_off;
		info->file_offset = vaddr;
		mapped = true;
	}
	if (!mapped)
		mapped = seg_vaddr(d, off, &vaddr);
	if (mapped && d->kimage_below && vaddr >= d->kimage_below && !d->kimage) {
		uint64_t below = d->kimage_below;

		/* Beyond what the kernel image's lines answer: all of /proc/kallsyms. */
		d->kimage = d->klazy;
		d->klazy = NULL;
		kernel_load(NULL, d, "/proc/kallsyms");
		d->kimage_below = below;
	}
	/*
	 * Below it, still the copy's index, also after /proc/kallsyms was
	 * read: the same answers, and the same name pointers, which callers
	 * keep and compare (tracekit profile groups by them).
	 */
	if (mapped && d->kimage_below && vaddr < d->kimage_below)
		info->symbol = tk_ksyms_lazy_lookup(d->kimage ? d->kimage : d->klazy, vaddr,
						    &info->offset);
	else if (mapped && d->st)
		info->symbol = tk_elf_symtab_lookup(d->st, vaddr, &info->offset, NULL);
	else if (mapped && d->klazy)
		info->symbol = tk_ksyms_lazy_lookup(d->klazy, vaddr, &info->offset);
}

TK_API int tk_symbolizer_lookup(struct tk_symbolizer *sym, uint64_t addr,
				struct tk_symbol_info *info)
{
	size_t lo = 0, hi;
	const struct smap *m;

	if (!sym->sorted) {
		if (sym->nmaps)
			qsort(sym->maps, sym->nmaps, sizeof(*sym->maps), smap_cmp);
		sym->sorted = true;
	}
	hi = sym->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sym->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= sym->maps[lo - 1].end)
		return tk_fail(ENOENT, "address 0x%" PRIx64 " is in no map", addr);
	m = &sym->maps[lo - 1];
	dso_resolve(sym, m->dso,
		    m->dso->kernel || m->dso->perfmap ? addr : addr - m->start + m->pgoff, info);
	return 0;
}

/* The dso of @path, by @build_id or, without one, the build id of the file at @path. */
static struct dso *dso_of_file(struct tk_symbolizer *sym, const char *path, const char *build_id)
{
	char hex[TK_BUILD_ID_HEX_MAX];

	if (!build_id && path[0] == '/' && tk_cache_file_build_id(path, hex) > 0)
		build_id = hex;
	return dso_get(sym, path, build_id);
}

TK_API int tk_symbolizer_lookup_file(struct tk_symbolizer *sym, const char *path,
				     const char *build_id, uint64_t offset,
				     struct tk_symbol_info *info)
{
	struct dso *d = dso_of_file(sym, path, build_id);

	if (!d)
		return tk_fail(ENOMEM, "out of memory");
	dso_resolve(sym, d, offset, info);
	if (!d->st && !d->klazy)
		return tk_fail(ENOENT, "%s: no symbols", path);
	return 0;
}

const char *tk_symbolizer_a2l_alias(struct tk_symbolizer *sym, const char *path,
				    const char *build_id, uint64_t offset)
{
	struct dso *d = dso_of_file(sym, path, build_id);
	uint64_t vaddr;

	if (!d)
		return NULL;
	if (!d->loaded)
		dso_load(sym, d);
	/* Only a binary's own table: addr2line is not asked about the kernel or a JIT. */
	if (!d->st || d->kernel || d->perfmap || d->kmod || d->kimage_below)
		return NULL;
	return seg_vaddr(d, offset, &vaddr) ? tk_elf_symtab_a2l_alias(d->st, vaddr) : NULL;
}

int tk_symbolizer_lookup_kmodule(struct tk_symbolizer *sym, const char *path, const char *build_id,
				 uint64_t offset, struct tk_symbol_info *info)
{
	struct dso *d = dso_get(sym, path, build_id);

	info->dso = path;
	info->symbol = NULL;
	info->offset = 0;
	info->file_offset = offset;
	if (!d)
		return tk_fail(ENOMEM, "out of memory");
	if (!d->loaded)
		dso_load(sym, d);
	if (!d->kmod || !d->st)
		return 0;
	dso_resolve(sym, d, offset, info);
	return 1;
}

TK_API int tk_symbolizer_add_pid(struct tk_symbolizer *sym, int pid)
{
	char *maps, *text, *line, *save = NULL;
	size_t len;
	int r, added = 0;

	if (asprintf(&maps, "/proc/%d/maps", pid) < 0)
		return tk_fail(ENOMEM, "out of memory");
	r = tk_read_file(maps, &text, &len);
	if (r < 0) {
		free(maps);
		return r;
	}
	for (line = strtok_r(text, "\n", &save); line && r >= 0;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int pathpos = 0;

		/* "start-end perms offset dev inode   path" */
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
			   &pathpos) < 4 ||
		    !pathpos) {
			r = tk_fail(EBADMSG, "%s: malformed line '%s'", maps, line);
			break;
		}
		/* Anonymous, [heap], [vdso] and deleted files have no file to read. */
		if (line[pathpos] != '/' || end <= start || strstr(line + pathpos, " (deleted)"))
			continue;
		r = tk_symbolizer_add_map(sym, start, end - start, pgoff, line + pathpos, NULL);
		added++;
	}
	free(text);
	free(maps);
	return r < 0 ? r : added;
}

/* "p:GROUP/EVENT PATH:0xOFF[(0xREF)] ..." -> PATH (malloc'ed) and OFF. */
static bool def_location(const char *def, char **path, uint64_t *offset)
{
	const char *sp = strchr(def, ' '), *colon;
	char *end;

	*path = NULL;
	if (!sp || (def[0] != 'p' && def[0] != 'r'))
		return false;
	sp++;
	colon = strchr(sp, ':');
	if (!colon || colon == sp || sp[0] != '/')
		return false;
	errno = 0;
	*offset = strtoull(colon + 1, &end, 16);
	if (errno || end == colon + 1)
		return false;
	*path = strndup(sp, (size_t)(colon - sp));
	return *path != NULL;
}

static int usite_add(struct tk_symbolizer *s, const char *key, const char *path, const char *bid,
		     uint64_t offset)
{
	struct usite *nv = realloc(s->sites, (s->nsites + 1) * sizeof(*nv));

	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	s->sites = nv;
	memset(&nv[s->nsites], 0, sizeof(nv[0]));
	nv[s->nsites].key = strdup(key);
	nv[s->nsites].path = path ? strdup(path) : NULL;
	nv[s->nsites].offset = offset;
	if (bid)
		snprintf(nv[s->nsites].bid, sizeof(nv[0].bid), "%s", bid);
	if (!nv[s->nsites].key || (path && !nv[s->nsites].path)) {
		free(nv[s->nsites].key);
		free(nv[s->nsites].path);
		return tk_fail(ENOMEM, "out of memory");
	}
	s->nsites++;
	return 0;
}

struct usite_ctx {
	struct tk_symbolizer *s;
	const char *key, *group, *event;
	int found;
};

static int usite_probe(const struct tk_cache_probe *p, void *ctx)
{
	struct usite_ctx *uc = ctx;

	/* The query matched globs (and "P" for "sdt_P"); we want this very event. */
	if (strcmp(p->group, uc->group) || strcmp(p->event, uc->event))
		return 0;
	for (size_t i = 0; i < p->ndefs; i++) {
		uint64_t off;
		char *path;
		int r;

		if (!def_location(p->defs[i], &path, &off))
			continue;
		r = usite_add(uc->s, uc->key, path, p->entry->build_id, off);
		free(path);
		if (r < 0)
			return r;
		uc->found++;
	}
	return 0;
}

/* The live definitions in tracefs, for uprobes created outside the cache. */
static int usite_tracefs(struct usite_ctx *uc)
{
	static const char *const files[] = {"/sys/kernel/tracing/uprobe_events",
					    "/sys/kernel/debug/tracing/uprobe_events"};
	size_t klen = strlen(uc->key);

	for (size_t f = 0; f < 2; f++) {
		char *text, *line, *save = NULL;
		size_t len;
		int r = 0;

		if (access(files[f], R_OK) < 0 || tk_read_file(files[f], &text, &len) < 0)
			continue;
		for (line = strtok_r(text, "\n", &save); line && r == 0;
		     line = strtok_r(NULL, "\n", &save)) {
			uint64_t off;
			char *path;

			if (strlen(line) < klen + 3 || strncmp(line + 2, uc->key, klen) ||
			    line[2 + klen] != ' ' || !def_location(line, &path, &off))
				continue;
			r = usite_add(uc->s, uc->key, path, NULL, off);
			free(path);
			uc->found++;
		}
		free(text);
		if (r < 0)
			return r;
		if (uc->found)
			break;
	}
	return 0;
}

/* The places the cache lists for uprobe @uc->group/@uc->event, under @uc->key. */
static int usite_cache(struct usite_ctx *uc)
{
	char *q;
	int r;

	if (!uc->s->cache)
		return 0;
	if (asprintf(&q, "%s:%s", uc->group, uc->event) < 0)
		return tk_fail(ENOMEM, "out of memory");
	/* Valid entries first; a binary rebuilt since still resolves by its old id. */
	r = tk_cache_query(uc->s->cache, q, false, usite_probe, uc);
	if (r >= 0 && !uc->found)
		r = tk_cache_query(uc->s->cache, q, true, usite_probe, uc);
	free(q);
	return r;
}

/*
 * The base of an SDT name used at several places: EVENT for EVENT_1,
 * EVENT_2 ... (as perf probe names them in tracefs); NULL when @event is
 * none such (or on ENOMEM, which only costs the fallback).
 */
static char *sdt_base_name(const char *event)
{
	size_t n = strlen(event), k = n;

	while (k > 0 && event[k - 1] >= '0' && event[k - 1] <= '9')
		k--;
	if (k == n || k < 2 || event[k - 1] != '_')
		return NULL;
	return strndup(event, k - 1);
}

TK_API int tk_symbolizer_lookup_uprobe(struct tk_symbolizer *sym, const char *group,
				       const char *event, uint64_t ip, struct tk_symbol_info *info)
{
	struct usite_ctx uc = {.s = sym, .group = group, .event = event};
	const struct usite *best = NULL, *cong = NULL, *exact = NULL;
	long page = sysconf(_SC_PAGESIZE);
	bool known = false;
	char *key;
	int r = 0;

	if (!group || !event || !*group || !*event)
		return tk_fail(EINVAL, "uprobe lookup needs a group and an event");
	if (asprintf(&key, "%s/%s", group, event) < 0)
		return tk_fail(ENOMEM, "out of memory");
	uc.key = key;
	for (size_t i = 0; i < sym->nsites && !known; i++)
		known = !strcmp(sym->sites[i].key, key);
	if (!known) {
		r = usite_cache(&uc);
		if (r >= 0 && !uc.found)
			r = usite_tracefs(&uc);
		/*
		 * EVENT_N gone from tracefs: the cache lists every place of an
		 * SDT name under EVENT, and the address picks this one. Only
		 * the cache: tracefs's EVENT is one place, maybe another. The
		 * sites go under this key, so later lookups find them at once.
		 */
		if (r >= 0 && !uc.found) {
			char *base = sdt_base_name(event);

			if (base) {
				uc.event = base;
				r = usite_cache(&uc);
				uc.event = event;
				free(base);
			}
		}
		if (r >= 0 && !uc.found)
			r = usite_add(sym, key, NULL, NULL, 0);
		if (r < 0) {
			free(key);
			return r;
		}
	}
	/*
	 * An SDT name used at several places has one site per place. The load
	 * bias of a mapping is a multiple of the page size, so the site whose
	 * link-time address is congruent to @ip is the one that fired; an
	 * exact match (a non-PIE binary) wins outright.
	 */
	for (size_t i = 0; i < sym->nsites; i++) {
		const struct usite *u = &sym->sites[i];
		struct tk_symbol_info tmp;
		uint64_t vaddr = 0;
		struct dso *d;
		bool mapped;

		if (strcmp(u->key, key) || !u->path)
			continue;
		if (!best)
			best = u;
		if (!ip)
			break;
		d = dso_get(sym, u->path, u->bid[0] ? u->bid : NULL);
		if (!d) {
			free(key);
			return tk_fail(ENOMEM, "out of memory");
		}
		dso_resolve(sym, d, u->offset, &tmp);
		mapped = seg_vaddr(d, u->offset, &vaddr);
		if (mapped && vaddr == ip) {
			exact = u;
			break;
		}
		if (mapped && !cong && page > 0 && (ip - vaddr) % (uint64_t)page == 0)
			cong = u;
	}
	if (exact)
		best = exact;
	else if (cong)
		best = cong;
	if (!best) {
		r = tk_fail(ENOENT, "uprobe %s: not in the cache%s nor in uprobe_events", key,
			    sym->cache ? "" : " (no cache given)");
		free(key);
		return r;
	}
	free(key);
	return tk_symbolizer_lookup_file(sym, best->path, best->bid[0] ? best->bid : NULL,
					 best->offset, info);
}
