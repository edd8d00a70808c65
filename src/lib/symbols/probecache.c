// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Probe caches: the "probes" file of a build-id cache entry, in perf
 * 6.1's format, and the conversion of SDT notes into its lines.
 *
 * Probes file: text lines. An entry is a marker line, '%' + "sdt_P:N=N"
 * for an SDT name or '#' + the user's probe spec, followed by one or more
 * uprobe_events definitions:
 *
 *	%sdt_tkdemo:start=start
 *	p:sdt_tkdemo/start /path/sdtdemo:0x1129(0x3012) arg1=%di:s32 arg2=%si:s64
 *
 * The offset is the unpadded hex file offset, the parenthesised one the
 * semaphore's (uprobe reference counter). perf reads lines into 256-byte
 * buffers, so longer lines would break it: we warn when writing one. We
 * rewrite a probes file whole, through a temporary file and rename(), so
 * a reader never sees half of it. Definitions before the first marker
 * belong to no entry and are dropped; a marker seen twice keeps its first
 * entry.
 *
 * Compression (tk_cache_set_gzip()): "probes.gz" beside "probes" holds
 * every entry in gzip framing (codec.c's tk_codec_gzip_*), and "probes" is
 * left empty, so perf (which cannot read gzip) sees an empty probe cache
 * rather than a file it fails to parse; loading reads both and merges
 * them, so perf's own later writes to "probes" are kept. A gzip "probes"
 * (recognised by its magic) is read too. A probes file beyond 64 MiB,
 * plain or inflated, is not one we wrote and is refused.
 *
 * One build id, several paths: perf writes the lines of every path of a
 * build id into the probes file of the path its .build-id link names, so
 * an SDT entry holds the lines of each path, sorted and unique (perf keeps
 * them in a string list); tk_pfile_write_sdt() replaces only the lines of
 * the path it adds and keeps the others.
 *
 * SDT arguments "[-]N@OPERAND" become "argK=OPERAND':'TYPE" with x86
 * register names mapped to pt_regs names (%edi -> %di), memory operands
 * "OFF(%reg)" to "+OFF(%reg)", and immediates and other forms skipped
 * while still counting the position, which is what perf 6.1 writes (the
 * test compares our probes file with perf's for the same binaries).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/codec.h>

#include "error.h"
#include "fsutil.h"
#include "probecache-internal.h"

#define PERF_MAX_CMDLEN 256
/* A probes file beyond this (plain or inflated) is not one we wrote. */
#define PROBES_MAX_BYTES (64u << 20)

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tk_pfile_release(struct tk_pfile *pf)
{
	for (size_t i = 0; i < pf->n; i++) {
		free(pf->v[i].marker);
		for (size_t k = 0; k < pf->v[i].ndefs; k++)
			free(pf->v[i].defs[k]);
		free(pf->v[i].defs);
	}
	free(pf->v);
	pf->v = NULL;
	pf->n = 0;
}

static int pfile_add_entry(struct tk_pfile *pf, const char *marker)
{
	struct tk_pentry *nv = realloc(pf->v, (pf->n + 1) * sizeof(*nv));

	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	pf->v = nv;
	memset(&nv[pf->n], 0, sizeof(nv[0]));
	nv[pf->n].marker = strdup(marker);
	if (!nv[pf->n].marker)
		return tk_fail(ENOMEM, "out of memory");
	pf->n++;
	return 0;
}

static int pentry_add_def(struct tk_pentry *e, const char *def)
{
	char **nd = realloc(e->defs, (e->ndefs + 1) * sizeof(*nd));

	if (!nd)
		return tk_fail(ENOMEM, "out of memory");
	e->defs = nd;
	nd[e->ndefs] = strdup(def);
	if (!nd[e->ndefs])
		return tk_fail(ENOMEM, "out of memory");
	e->ndefs++;
	return 0;
}

/* A definition for the entry added last. */
static int pfile_add_def(struct tk_pfile *pf, const char *def)
{
	return pentry_add_def(&pf->v[pf->n - 1], def);
}

/* Remove entry @i of @pf, its marker and definitions freed. */
void tk_pfile_remove_at(struct tk_pfile *pf, size_t i)
{
	free(pf->v[i].marker);
	for (size_t k = 0; k < pf->v[i].ndefs; k++)
		free(pf->v[i].defs[k]);
	free(pf->v[i].defs);
	memmove(&pf->v[i], &pf->v[i + 1], (pf->n - i - 1) * sizeof(pf->v[0]));
	pf->n--;
}

/* Read one probes file (plain or gzip) into @pf, skipping markers already there. */
static int pfile_parse(const char *path, struct tk_pfile *pf)
{
	char *data, *line, *save = NULL;
	bool skip = false;
	size_t len;
	int r;

	if (access(path, F_OK) < 0)
		return 0;
	r = tk_read_file(path, &data, &len);
	if (r < 0)
		return r;
	if (tk_codec_gzip_detect(data, len)) {
		void *plain = NULL;
		uint64_t plen = 0;

		if (len > PROBES_MAX_BYTES) {
			free(data);
			return tk_fail(EFBIG, "%s: %zu bytes: too large for a probe cache", path,
				       len);
		}
		r = tk_codec_gzip_decompress(data, len, PROBES_MAX_BYTES, path, &plain, &plen);
		free(data);
		if (r < 0)
			return r;
		data = plain;
		len = (size_t)plen;
	}
	if (memchr(data, '\0', len)) {
		uint64_t at = (uint64_t)((char *)memchr(data, '\0', len) - data);

		free(data);
		return tk_fail_at(EBADMSG, path, at, "NUL byte in a probe cache");
	}
	for (line = strtok_r(data, "\n", &save); line && r == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '%') {
			skip = false;
			for (size_t i = 0; i < pf->n && !skip; i++)
				skip = !strcmp(pf->v[i].marker, line);
			if (!skip)
				r = pfile_add_entry(pf, line);
		} else if (pf->n && !skip) {
			r = pfile_add_def(pf, line);
		}
		/* Definitions before the first marker belong to no entry. */
	}
	free(data);
	return r;
}

/*
 * Parse the probes of an entry: "probes" (perf's, plain; gzip accepted too)
 * and "probes.gz" (ours when compression is on). A missing file is empty.
 */
int tk_pfile_load(const char *path, struct tk_pfile *pf)
{
	char *gz;
	int r;

	pf->v = NULL;
	pf->n = 0;
	r = pfile_parse(path, pf);
	if (r == 0) {
		if (asprintf(&gz, "%s.gz", path) < 0)
			r = tk_fail(ENOMEM, "out of memory");
		else {
			r = pfile_parse(gz, pf);
			free(gz);
		}
	}
	if (r < 0)
		tk_pfile_release(pf);
	return r;
}

/*
 * Write the probes of an entry. Plain: "probes", perf's file, and any
 * "probes.gz" goes. Gzip: "probes.gz" holds every entry and "probes" is
 * left empty, so perf (which cannot read gzip) sees an empty probe cache
 * rather than a file it fails to parse, and its own later writes to
 * "probes" are merged on our next load.
 */
int tk_pfile_store(const char *path, const struct tk_pfile *pf, bool gz)
{
	size_t len = 0, pos = 0;
	char *buf;
	int r;

	for (size_t i = 0; i < pf->n; i++) {
		len += strlen(pf->v[i].marker) + 1;
		for (size_t k = 0; k < pf->v[i].ndefs; k++)
			len += strlen(pf->v[i].defs[k]) + 1;
	}
	buf = malloc(len + 1);
	if (!buf)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < pf->n; i++) {
		pos += (size_t)sprintf(buf + pos, "%s\n", pf->v[i].marker);
		for (size_t k = 0; k < pf->v[i].ndefs; k++) {
			if (strlen(pf->v[i].defs[k]) >= PERF_MAX_CMDLEN)
				tk_warn("%s: probe line longer than %d bytes: perf cannot read it",
					path, PERF_MAX_CMDLEN - 1);
			pos += (size_t)sprintf(buf + pos, "%s\n", pf->v[i].defs[k]);
		}
	}
	if (gz) {
		char *gzpath;
		void *zbuf = NULL;
		uint64_t zlen = 0;

		if (asprintf(&gzpath, "%s.gz", path) < 0) {
			free(buf);
			return tk_fail(ENOMEM, "out of memory");
		}
		r = tk_codec_gzip_compress(buf, pos, 9, &zbuf, &zlen);
		if (r < 0)
			tk_fail_prefix(-r, gzpath);
		if (r == 0) {
			r = tk_write_file_atomic(gzpath, zbuf, (size_t)zlen, 0644);
			free(zbuf);
		}
		if (r == 0)
			r = tk_write_file_atomic(path, "", 0, 0644);
		free(gzpath);
	} else {
		char *gzpath;

		r = tk_write_file_atomic(path, buf, pos, 0644);
		if (r == 0 && asprintf(&gzpath, "%s.gz", path) >= 0) {
			unlink(gzpath);
			free(gzpath);
		}
	}
	free(buf);
	return r;
}

/* "p:GROUP/EVENT rest" -> group and event (malloc'ed); false when malformed. */
bool tk_probe_def_name(const char *def, char **group, char **event)
{
	const char *colon = strchr(def, ':'), *slash, *end;

	*group = *event = NULL;
	if (!colon)
		return false;
	end = colon + strcspn(colon, " ");
	slash = memchr(colon, '/', (size_t)(end - colon));
	if (!slash) {
		*group = strdup("uprobes");
		*event = strndup(colon + 1, (size_t)(end - colon - 1));
	} else {
		*group = strndup(colon + 1, (size_t)(slash - colon - 1));
		*event = strndup(slash + 1, (size_t)(end - slash - 1));
	}
	if (!*group || !*event || !**event) {
		free(*group);
		free(*event);
		*group = *event = NULL;
		return false;
	}
	return true;
}

/* ---- SDT argument conversion (x86) ---- */

static const char *const x86_regs[][2] = {
	{"rax", "ax"}, {"eax", "ax"}, {"ax", "ax"},  {"al", "ax"},  {"ah", "ax"},  {"rbx", "bx"},
	{"ebx", "bx"}, {"bx", "bx"},  {"bl", "bx"},  {"bh", "bx"},  {"rcx", "cx"}, {"ecx", "cx"},
	{"cx", "cx"},  {"cl", "cx"},  {"ch", "cx"},  {"rdx", "dx"}, {"edx", "dx"}, {"dx", "dx"},
	{"dl", "dx"},  {"dh", "dx"},  {"rsi", "si"}, {"esi", "si"}, {"si", "si"},  {"sil", "si"},
	{"rdi", "di"}, {"edi", "di"}, {"di", "di"},  {"dil", "di"}, {"rbp", "bp"}, {"ebp", "bp"},
	{"bp", "bp"},  {"bpl", "bp"}, {"rsp", "sp"}, {"esp", "sp"}, {"sp", "sp"},  {"spl", "sp"},
	{"rip", "ip"}, {"eip", "ip"},
};

/* pt_regs name of an x86 register ("r8d" -> "r8"), or NULL. */
static bool x86_reg(const char *name, size_t len, char *out, size_t cap)
{
	for (size_t i = 0; i < sizeof(x86_regs) / sizeof(x86_regs[0]); i++)
		if (strlen(x86_regs[i][0]) == len && !memcmp(name, x86_regs[i][0], len)) {
			snprintf(out, cap, "%s", x86_regs[i][1]);
			return true;
		}
	if (len >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
		size_t k = 1;
		unsigned v = 0;

		while (k < len && name[k] >= '0' && name[k] <= '9' && k < 3)
			v = v * 10 + (unsigned)(name[k++] - '0');
		if (v < 8 || v > 15)
			return false;
		if (k < len && !(k + 1 == len && strchr("dwb", name[k])))
			return false;
		snprintf(out, cap, "r%u", v);
		return true;
	}
	return false;
}

/* Convert one "N@OP" argument; returns false when it is skipped. */
static bool sdt_arg(const char *arg, size_t len, char *out, size_t cap)
{
	static const char *const stypes[] = {"s8", "s16", "s32", "s64"};
	static const char *const utypes[] = {"u8", "u16", "u32", "u64"};
	const char *at = memchr(arg, '@', len), *op = arg, *type = NULL;
	const char *paren, *close;
	char reg[8], off[24] = "";
	size_t oplen = len;

	if (at) {
		long sz = strtol(arg, NULL, 10);
		long a = sz < 0 ? -sz : sz;
		int idx = a == 1 ? 0 : a == 2 ? 1 : a == 4 ? 2 : a == 8 ? 3 : -1;

		if (idx >= 0)
			type = sz < 0 ? stypes[idx] : utypes[idx];
		op = at + 1;
		oplen = len - (size_t)(op - arg);
	}
	if (!oplen || op[0] == '$')
		return false;
	if (op[0] == '%') {
		if (!x86_reg(op + 1, oplen - 1, reg, sizeof(reg)))
			return false;
	} else {
		paren = memchr(op, '(', oplen);
		close = op + oplen - 1;
		if (!paren || *close != ')' || paren[1] != '%')
			return false;
		size_t ol = (size_t)(paren - op);

		if (ol >= sizeof(off) - 2)
			return false;
		for (size_t k = 0; k < ol; k++)
			if (!((op[k] >= '0' && op[k] <= '9') ||
			      (k == 0 && (op[k] == '-' || op[k] == '+'))))
				return false;
		if (!ol)
			snprintf(off, sizeof(off), "+0");
		else if (op[0] == '-' || op[0] == '+')
			snprintf(off, sizeof(off), "%.*s", (int)ol, op);
		else
			snprintf(off, sizeof(off), "+%.*s", (int)ol, op);
		if (!x86_reg(paren + 2, (size_t)(close - paren - 2), reg, sizeof(reg)))
			return false;
	}
	if (off[0])
		snprintf(out, cap, "%s(%%%s)%s%s", off, reg, type ? ":" : "", type ? type : "");
	else
		snprintf(out, cap, "%%%s%s%s", reg, type ? ":" : "", type ? type : "");
	return true;
}

/* The uprobe_events line of one SDT note of @path. */
static char *sdt_def(const struct tk_elf_sdt *s, const char *path)
{
	char *def = NULL, *next;
	const char *a = s->args;
	int k = 0;

	if (s->sem_offset) {
		if (asprintf(&def, "p:sdt_%s/%s %s:0x%" PRIx64 "(0x%" PRIx64 ")", s->provider,
			     s->name, path, s->offset, s->sem_offset) < 0)
			return NULL;
	} else if (asprintf(&def, "p:sdt_%s/%s %s:0x%" PRIx64, s->provider, s->name, path,
			    s->offset) < 0) {
		return NULL;
	}
	while (*a) {
		size_t len;
		char conv[64];

		a += strspn(a, " ");
		len = strcspn(a, " ");
		if (!len)
			break;
		k++;
		if (sdt_arg(a, len, conv, sizeof(conv))) {
			if (asprintf(&next, "%s arg%d=%s", def, k, conv) < 0) {
				free(def);
				return NULL;
			}
			free(def);
			def = next;
		}
		a += len;
	}
	return def;
}

bool tk_probe_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* Add (replacing) one entry to @pf; takes ownership of nothing. */
int tk_pfile_replace(struct tk_pfile *pf, const char *marker, char *const *defs, size_t ndefs)
{
	char *g = NULL, *e = NULL;
	int r;

	tk_probe_def_name(defs[0], &g, &e);
	for (size_t i = 0; i < pf->n;) {
		char *og = NULL, *oe = NULL;
		bool same = !strcmp(pf->v[i].marker, marker);

		if (!same && pf->v[i].ndefs && g && tk_probe_def_name(pf->v[i].defs[0], &og, &oe))
			same = !strcmp(og, g) && !strcmp(oe, e);
		free(og);
		free(oe);
		if (same)
			tk_pfile_remove_at(pf, i);
		else
			i++;
	}
	free(g);
	free(e);
	r = pfile_add_entry(pf, marker);
	for (size_t k = 0; k < ndefs && r == 0; k++)
		r = pfile_add_def(pf, defs[k]);
	return r;
}

/* Whether the definition "p:GROUP/EVENT PATH:0xOFF ..." probes @path. */
static bool def_on_path(const char *def, const char *path)
{
	const char *sp = strchr(def, ' ');
	size_t pl = strlen(path);

	return sp && !strncmp(sp + 1, path, pl) && sp[1 + pl] == ':';
}

/* Drop the definitions on @path; entries left without one go. Returns whether it changed. */
bool tk_pfile_drop_path(struct tk_pfile *pf, const char *path)
{
	bool changed = false;

	for (size_t i = 0; i < pf->n;) {
		struct tk_pentry *e = &pf->v[i];
		size_t keep = 0;

		for (size_t k = 0; k < e->ndefs; k++) {
			if (def_on_path(e->defs[k], path)) {
				free(e->defs[k]);
				changed = true;
			} else {
				e->defs[keep++] = e->defs[k];
			}
		}
		e->ndefs = keep;
		if (keep)
			i++;
		else
			tk_pfile_remove_at(pf, i);
	}
	return changed;
}

/* Add @src's entries to @dst: new markers whole, known ones by their missing lines. */
int tk_pfile_merge(struct tk_pfile *dst, const struct tk_pfile *src)
{
	int r = 0;

	for (size_t i = 0; i < src->n && r == 0; i++) {
		size_t at = dst->n;

		for (size_t k = 0; k < dst->n && at == dst->n; k++)
			if (!strcmp(dst->v[k].marker, src->v[i].marker))
				at = k;
		if (at == dst->n)
			r = pfile_add_entry(dst, src->v[i].marker);
		for (size_t d = 0; d < src->v[i].ndefs && r == 0; d++) {
			struct tk_pentry *e = &dst->v[at];
			bool have = false;

			for (size_t k = 0; k < e->ndefs && !have; k++)
				have = !strcmp(e->defs[k], src->v[i].defs[d]);
			if (!have)
				r = pentry_add_def(e, src->v[i].defs[d]);
		}
	}
	return r;
}

/*
 * Put the SDT entry @marker with this path's lines @defs into @pf. Lines
 * of other paths with the same build id under that name stay (perf writes
 * every path's probes through the link). perf keeps an entry's lines in a
 * string list, so they are sorted and unique.
 */
static int sdt_entry_put(struct tk_pfile *pf, const char *marker, const char *path,
			 char *const *defs, size_t nd)
{
	char **kept = NULL, **all = NULL;
	size_t nk = 0, nu = 0;
	int r = 0;

	for (size_t e = 0; e < pf->n; e++) {
		if (strcmp(pf->v[e].marker, marker))
			continue;
		/* Copies: tk_pfile_replace() frees the entry they come from. */
		kept = calloc(pf->v[e].ndefs ? pf->v[e].ndefs : 1, sizeof(*kept));
		if (!kept)
			return tk_fail(ENOMEM, "out of memory");
		for (size_t k = 0; k < pf->v[e].ndefs && r == 0; k++)
			if (!def_on_path(pf->v[e].defs[k], path) &&
			    !(kept[nk++] = strdup(pf->v[e].defs[k])))
				r = tk_fail(ENOMEM, "out of memory");
		break;
	}
	all = r == 0 ? calloc(nk + nd + 1, sizeof(*all)) : NULL;
	if (r == 0 && !all)
		r = tk_fail(ENOMEM, "out of memory");
	if (r == 0) {
		for (size_t k = 0; k < nk; k++)
			all[k] = kept[k];
		for (size_t k = 0; k < nd; k++)
			all[nk + k] = defs[k];
		qsort(all, nk + nd, sizeof(*all), str_cmp);
		for (size_t k = 0; k < nk + nd; k++)
			if (!nu || strcmp(all[nu - 1], all[k]))
				all[nu++] = all[k];
		r = tk_pfile_replace(pf, marker, all, nu);
	}
	for (size_t k = 0; k < nk; k++)
		free(kept[k]);
	free(kept);
	free(all);
	return r;
}

int tk_pfile_write_sdt(const char *probes, const char *path, struct tk_elf *elf, bool gz)
{
	const struct tk_elf_sdt *notes;
	struct tk_pfile pf;
	size_t n;
	bool *done = NULL;
	char **defs = NULL;
	int r, entries = 0;

	r = tk_elf_sdt_notes(elf, &notes, &n);
	if (r < 0)
		return r;
	r = tk_pfile_load(probes, &pf);
	if (r < 0)
		return r;
	done = calloc(n ? n : 1, sizeof(*done));
	defs = calloc(n ? n : 1, sizeof(*defs));
	if (!done || !defs) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		size_t nd = 0;
		char *marker;

		if (done[i])
			continue;
		if (!tk_probe_name_ok(notes[i].provider) || !tk_probe_name_ok(notes[i].name)) {
			tk_warn("%s: SDT probe %s:%s has a name tracefs refuses; skipped", path,
				notes[i].provider, notes[i].name);
			continue;
		}
		for (size_t k = i; k < n; k++) {
			if (done[k] || strcmp(notes[k].provider, notes[i].provider) ||
			    strcmp(notes[k].name, notes[i].name))
				continue;
			done[k] = true;
			defs[nd] = sdt_def(&notes[k], path);
			if (!defs[nd]) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			nd++;
		}
		if (r == 0 && asprintf(&marker, "%%sdt_%s:%s=%s", notes[i].provider, notes[i].name,
				       notes[i].name) < 0)
			r = tk_fail(ENOMEM, "out of memory");
		if (r == 0) {
			r = sdt_entry_put(&pf, marker, path, defs, nd);
			free(marker);
			entries++;
		}
		for (size_t k = 0; k < nd; k++) {
			free(defs[k]);
			defs[k] = NULL;
		}
	}
	if (r == 0)
		r = tk_pfile_store(probes, &pf, gz);
out:
	free(done);
	free(defs);
	tk_pfile_release(&pf);
	return r < 0 ? r : entries;
}
