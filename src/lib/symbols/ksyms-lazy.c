// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * ksyms-lazy: kernel symbols from kallsyms, one symbol at a time.
 *
 * Building tk_elf_symtab_new_kallsyms()'s table of a whole kernel (120 k
 * lines of /proc/kallsyms: parse, a red-black tree insert each, the end
 * and duplicate fixups) was two thirds of `tracekit report --no-inline`
 * on a 2 300-sample DWARF profile, which names a few hundred kernel
 * addresses. Here the text is only indexed: each line's address and
 * place, sorted by address (ties in text order). For an address, the
 * symbols that decide its name are those of the greatest address at or
 * below it (aliases among them, which the fixup chooses between) and
 * those of the next address (where its range ends, and whether a module
 * starts there); their lines, in text order, make a small kallsyms text
 * that tk_elf_symtab_new_kallsyms() turns into the table the lookup runs
 * on. The result is the whole table's: symbols before the group cannot
 * reach past its start, and those after the next group do not change
 * its end. Each group's table is made once and kept (a few hundred bytes;
 * at most as many as the kernel has symbols).
 *
 * A line the whole-table parser would reject makes tk_ksyms_lazy_new()
 * fail, so that the caller takes that path and gets its error; so does a
 * text whose symbol ranges would overlap (ranges_apart()).
 *
 * The cache's copy of the kernel image's lines (ksyms-copy.c) stores the
 * index beside the text (tk_ksyms_lazy_lines()): tk_ksyms_lazy_adopt()
 * checks that each entry is a whole line, in order, instead of parsing
 * the 120 k lines again (29 M instructions), and may keep the text and
 * index in the copy's mapping.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tracekit/elf.h>

#include "ksyms-lazy.h"

/* One kallsyms line the table would hold. */
struct kline {
	uint64_t addr;
	uint32_t off, len; /* the line in the text, without its newline */
	bool module;	   /* a module's ("[name]" after the symbol) */
};

/* The table of the group of lines starting at index @first. */
struct kgroup {
	size_t first; /* SIZE_MAX: empty slot */
	struct tk_elf_symtab *st;
};

struct tk_ksyms_lazy {
	char *text;
	char *name;
	struct kline *lines;
	size_t n;
	void *map; /* text and lines lie in this mapping (tk_ksyms_lazy_adopt()), else malloc'ed */
	size_t map_len;
	struct kgroup *groups;
	size_t cap, used;
};

static int kline_cmp(const void *a, const void *b)
{
	const struct kline *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Per byte: 1 + its value as a lowercase hex digit (0: none) in the low
 * five bits, KEPT when it is a symbol type the table holds. One lookup a
 * byte makes the scan of /proc/kallsyms (120 k lines) ~6x cheaper than
 * comparisons did; that scan was a third of a --no-inline report of
 * 2 600 DWARF samples. NUL counts as kept, as it does for the whole-table
 * parser (strchr() finds the terminator).
 */
#define KEPT 0x20

static const unsigned char byte_class[256] = {
	[0] = KEPT,   ['0'] = 1,    ['1'] = 2,	       ['2'] = 3,    ['3'] = 4,
	['4'] = 5,    ['5'] = 6,    ['6'] = 7,	       ['7'] = 8,    ['8'] = 9,
	['9'] = 10,   ['a'] = 11,   ['b'] = 12 | KEPT, ['c'] = 13,   ['d'] = 14 | KEPT,
	['e'] = 15,   ['f'] = 16,   ['t'] = KEPT,      ['T'] = KEPT, ['w'] = KEPT,
	['W'] = KEPT, ['D'] = KEPT, ['B'] = KEPT,      ['r'] = KEPT, ['R'] = KEPT,
	['i'] = KEPT, ['I'] = KEPT,
};

/*
 * The value of the 8 lowercase hex digits at @p, eight bytes at a time
 * (each byte's range tested by an add that sets its high bit, then the
 * nibbles packed pairwise); false when one byte is no such digit.
 */
static bool hex8(const char *p, uint32_t *out)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t x, digit, alpha;

	memcpy(&x, p, 8);
	if (x & highs)
		return false;
	digit = (x + ones * (0x80 - '0')) & ~(x + ones * (0x80 - '9' - 1)) & highs;
	alpha = (x + ones * (0x80 - 'a')) & ~(x + ones * (0x80 - 'f' - 1)) & highs;
	if ((digit | alpha) != highs)
		return false;
	/* Little-endian: the first digit is the lowest byte and the highest nibble. */
	x = (x & 0x0f0f0f0f0f0f0f0full) + (alpha >> 7) * 9;
	x = (x & 0x000f000f000f000full) << 4 | (x >> 8 & 0x000f000f000f000full);
	x = (x & 0x000000ff000000ffull) << 8 | (x >> 16 & 0x000000ff000000ffull);
	*out = (uint32_t)((x & 0xffff) << 16 | (x >> 32 & 0xffff));
	return true;
}

/*
 * Whether no symbol's range can reach over the next address's symbols. A
 * symbol whose successor is of the other kind (kernel or module) ends a
 * page past its start rounded up (perf's fixup), not at the successor;
 * within one address, or closer than that to the next, the whole table's
 * ranges overlap and which one a lookup meets depends on the shape of
 * its tree. /proc/kallsyms has no such place (modules lie far above the
 * kernel); a text that has one takes the whole table.
 */
static bool ranges_apart(const struct tk_ksyms_lazy *k)
{
	for (size_t i = 1; i < k->n; i++) {
		const struct kline *p = &k->lines[i - 1], *c = &k->lines[i];

		if (p->module != c->module &&
		    (p->addr == c->addr || ((p->addr + 4096 + 4095) & ~(uint64_t)4095) > c->addr))
			return false;
	}
	return true;
}

struct tk_ksyms_lazy *tk_ksyms_lazy_new(char *text, size_t len, const char *name)
{
	struct tk_ksyms_lazy *k;
	size_t cap = 0, i = 0;
	bool sorted = true;

	if (len >= UINT32_MAX) {
		errno = EFBIG;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strdup(name)))
		goto fail_oom;
	/* The same lines, by the same rules, as tk_elf_symtab_new_kallsyms(). */
	while (i < len) {
		const char *line = text + i, *nl = memchr(line, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - line) : len - i, kk = 0, nstart, nend;
		uint64_t addr = 0;
		uint32_t hi, lo;
		bool module;
		char type;

		i += ll + 1;
		if (!ll)
			continue;
		if (ll > 16 && line[16] == ' ' && hex8(line, &hi) && hex8(line + 8, &lo)) {
			/* The usual 16 digits. */
			addr = (uint64_t)hi << 32 | lo;
			kk = 16;
		}
		if (!kk) {
			while (kk < ll && kk < 17 && (byte_class[(unsigned char)line[kk]] & 0x1f)) {
				addr = addr << 4 |
				       (uint64_t)((byte_class[(unsigned char)line[kk]] & 0x1f) - 1);
				kk++;
			}
		}
		if (kk == 0 || kk > 16 || kk + 3 > ll || line[kk] != ' ' || line[kk + 2] != ' ') {
			free(k->lines);
			free(k->name);
			free(k);
			errno = EBADMSG;
			return NULL;
		}
		type = line[kk + 1];
		nstart = kk + 3;
		/* The name ends at a tab or space; a module's "[name]" may follow. */
		if (nstart >= ll || line[nstart] == '\t' || line[nstart] == ' ' || !addr ||
		    !(byte_class[(unsigned char)type] & KEPT))
			continue;
		module = false;
		if (memchr(line + nstart, '[', ll - nstart)) {
			nend = nstart;
			while (nend < ll && line[nend] != '\t' && line[nend] != ' ')
				nend++;
			module = memchr(line + nend, '[', ll - nend) != NULL;
		}
		if (k->n == cap) {
			struct kline *nv;

			cap = cap ? 2 * cap : 65536;
			nv = realloc(k->lines, cap * sizeof(*nv));
			if (!nv)
				goto fail_oom;
			k->lines = nv;
		}
		if (k->n && addr < k->lines[k->n - 1].addr)
			sorted = false;
		k->lines[k->n].addr = addr;
		k->lines[k->n].off = (uint32_t)(line - text);
		k->lines[k->n].len = (uint32_t)ll;
		k->lines[k->n].module = module;
		k->n++;
	}
	/* /proc/kallsyms lists the kernel in address order, modules after. */
	if (!sorted)
		qsort(k->lines, k->n, sizeof(*k->lines), kline_cmp);
	if (!ranges_apart(k)) {
		free(k->lines);
		free(k->name);
		free(k);
		errno = ENOTSUP;
		return NULL;
	}
	k->text = text;
	return k;
fail_oom:
	if (k) {
		free(k->lines);
		free(k->name);
		free(k);
	}
	errno = ENOMEM;
	return NULL;
}

void tk_ksyms_lazy_free(struct tk_ksyms_lazy *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->cap; i++)
		if (k->groups[i].first != SIZE_MAX)
			tk_elf_symtab_free(k->groups[i].st);
	free(k->groups);
	if (k->map) {
		munmap(k->map, k->map_len);
	} else {
		free(k->lines);
		free(k->text);
	}
	free(k->name);
	free(k);
}

/* The table of the lines [first, end), in text order; NULL when it cannot be made. */
static struct tk_elf_symtab *group_table(struct tk_ksyms_lazy *k, size_t first, size_t end)
{
	struct tk_elf_symtab *st;
	struct kline *sel;
	size_t n = end - first, len = 0;
	char *text, *p;

	sel = malloc(n * sizeof(*sel));
	if (!sel)
		return NULL;
	memcpy(sel, k->lines + first, n * sizeof(*sel));
	for (size_t i = 0; i < n; i++) {
		/* Text order: insertion order decides among equal addresses. */
		for (size_t j = i; j > 0 && sel[j - 1].off > sel[j].off; j--) {
			struct kline t = sel[j];

			sel[j] = sel[j - 1];
			sel[j - 1] = t;
		}
	}
	for (size_t i = 0; i < n; i++)
		len += sel[i].len + 1;
	text = malloc(len ? len : 1);
	if (!text) {
		free(sel);
		return NULL;
	}
	p = text;
	for (size_t i = 0; i < n; i++) {
		memcpy(p, k->text + sel[i].off, sel[i].len);
		p += sel[i].len;
		*p++ = '\n';
	}
	st = tk_elf_symtab_new_kallsyms(text, len, k->name);
	free(text);
	free(sel);
	return st;
}

/* The kept table of the group at @first, made on first use; NULL: none. */
static struct tk_elf_symtab *group_get(struct tk_ksyms_lazy *k, size_t first, size_t end)
{
	size_t j;

	if ((k->used + 1) * 2 > k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 256;
		struct kgroup *t = malloc(cap * sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < cap; i++)
			t[i].first = SIZE_MAX;
		for (size_t i = 0; i < k->cap; i++) {
			if (k->groups[i].first == SIZE_MAX)
				continue;
			j = (k->groups[i].first * 0x9e3779b97f4a7c15ull >> 24) & (cap - 1);
			while (t[j].first != SIZE_MAX)
				j = (j + 1) & (cap - 1);
			t[j] = k->groups[i];
		}
		free(k->groups);
		k->groups = t;
		k->cap = cap;
	}
	j = (first * 0x9e3779b97f4a7c15ull >> 24) & (k->cap - 1);
	while (k->groups[j].first != SIZE_MAX) {
		if (k->groups[j].first == first)
			return k->groups[j].st;
		j = (j + 1) & (k->cap - 1);
	}
	k->groups[j].first = first;
	k->groups[j].st = group_table(k, first, end);
	k->used++;
	return k->groups[j].st;
}

const char *tk_ksyms_lazy_lookup(struct tk_ksyms_lazy *k, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi = k->n, first, end;
	struct tk_elf_symtab *st;

	/* The first line above @addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->lines[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	first = lo - 1;
	while (first > 0 && k->lines[first - 1].addr == k->lines[lo - 1].addr)
		first--;
	end = lo;
	while (end < k->n && k->lines[end].addr == k->lines[lo].addr)
		end++;
	st = group_get(k, first, end);
	return st ? tk_elf_symtab_lookup(st, addr, offset, NULL) : NULL;
}

uint64_t tk_ksyms_lazy_last(const struct tk_ksyms_lazy *k)
{
	/* The lines are sorted by address (tk_ksyms_lazy_new()). */
	return k->n ? k->lines[k->n - 1].addr : 0;
}

size_t tk_ksyms_lazy_lines(const struct tk_ksyms_lazy *k, size_t text_len, void **lines)
{
	/* Zeroed: the entries' padding goes to a file, and should say the same every time. */
	struct kline *out = calloc(k->n ? k->n : 1, sizeof(*out));
	size_t n = 0;

	*lines = out;
	if (!out)
		return 0;
	/* The sorted lines of the first @text_len bytes: a sorted subsequence of all. */
	for (size_t i = 0; i < k->n; i++) {
		if (k->lines[i].off >= text_len || k->lines[i].off + k->lines[i].len > text_len)
			continue;
		out[n].addr = k->lines[i].addr;
		out[n].off = k->lines[i].off;
		out[n].len = k->lines[i].len;
		out[n].module = k->lines[i].module;
		n++;
	}
	return n;
}

size_t tk_ksyms_lazy_line_size(void)
{
	return sizeof(struct kline);
}

struct tk_ksyms_lazy *tk_ksyms_lazy_adopt(const char *text, size_t len, const void *lines, size_t n,
					  const char *name, void *map, size_t map_len)
{
	const struct kline *l = lines;
	struct tk_ksyms_lazy *k;
	bool apart = true;

	/*
	 * What tk_ksyms_lazy_new() would have made, as far as bounds go: each
	 * entry a whole line of @text (its start after a newline, its end at
	 * one), sorted by address and then text order. An entry that is not
	 * is a damaged file, refused.
	 */
	for (size_t i = 0; i < n; i++) {
		uint64_t end = (uint64_t)l[i].off + l[i].len;

		if (end > len || (l[i].off && text[l[i].off - 1] != '\n') ||
		    (end < len && text[end] != '\n') || !l[i].len ||
		    (i && (l[i].addr < l[i - 1].addr ||
			   (l[i].addr == l[i - 1].addr && l[i].off <= l[i - 1].off)))) {
			errno = EBADMSG;
			return NULL;
		}
		/* ranges_apart()'s test, in the same pass (a second one was 1 M instructions). */
		if (i && l[i].module != l[i - 1].module &&
		    (l[i - 1].addr == l[i].addr ||
		     ((l[i - 1].addr + 4096 + 4095) & ~(uint64_t)4095) > l[i].addr))
			apart = false;
	}
	k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strdup(name))) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	/* Only read from here on: the casts keep one struct for both kinds. */
	k->lines = (struct kline *)(uintptr_t)l;
	k->n = n;
	if (!apart) {
		free(k->name);
		free(k);
		errno = ENOTSUP;
		return NULL;
	}
	k->text = (char *)(uintptr_t)text;
	k->map = map;
	k->map_len = map_len;
	return k;
}
