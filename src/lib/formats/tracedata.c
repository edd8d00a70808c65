// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracedata: the tracing metadata model and its two codecs.
 *
 * Byte layout. Every number is in the container's byte order (a .dat's
 * file header says which; perf.data's TRACING_DATA says it in its own
 * preamble). Texts are stored without a NUL. The six parts, which are the
 * bodies of .dat metadata sections 16..21 (v7 stores each as a section,
 * possibly compressed; v6 stores them back to back after the file header,
 * in this same layout):
 *
 *   16 HEADER_INFO     "header_page\0" u64 len, text; "header_event\0" u64 len, text
 *   17 FTRACE_EVENTS   u32 count; count x {u64 len, text}
 *   18 EVENT_FORMATS   u32 systems; systems x {"name\0", u32 count, count x {u64 len, text}}
 *   19 KALLSYMS        u32 len, text
 *   20 PRINTK          u32 len, text
 *   21 CMDLINES        u64 len, text
 *
 * perf.data's TRACING_DATA (a feature section, or the blob after a pipe
 * mode HEADER_TRACING_DATA record) is a preamble and then the six parts
 * in that order, concatenated:
 *
 *   "\x17\x08\x44tracing" (10 bytes) | "0.6\0" version | u8 big-endian (0/1)
 *   | u8 sizeof(long) | u32 page size | parts 16..21
 *
 * Version 0.5 blobs end after part 20; a 0.6 blob whose last part is cut
 * to fewer than 8 bytes is read as 0.5 (perf does the same).
 *
 * So one decoder per part, run on a cursor, serves both containers: over a
 * section body for .dat, over the whole blob in sequence for perf.data.
 * One encoder per part likewise appends to a tk_bytebuf.
 *
 * Invariants. Decoded texts point into the caller's input, which outlives
 * the tracedata (each reader keeps its section bodies and blobs until it
 * closes); texts added through the API are copies the tracedata owns
 * (owned[]). Every count read from input is checked against the bytes left
 * (a format takes at least 8, a system at least 5) before anything is
 * allocated for it, so a hostile count fails as -EBADMSG without a large
 * allocation. A part whose decoding fails is left empty and absent.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/dat.h>

#include "bytes.h"
#include "error.h"
#include "tracedata-internal.h"

#define PERF_MAGIC     "\x17\x08\x44tracing"
#define PERF_MAGIC_LEN 10

struct tk_tracedata *tk_tracedata_new(void)
{
	struct tk_tracedata *td = calloc(1, sizeof(*td));

	if (!td)
		return tk_fail_null(ENOMEM, "out of memory");
	td->big_endian = TK_HOST_BIG_ENDIAN;
	td->long_size = sizeof(long);
	td->version = "0.6";
	return td;
}

static void clear_systems(struct tk_tracedata *td)
{
	for (size_t i = 0; i < td->nsystems; i++)
		free(td->systems[i].formats);
	td->nsystems = 0;
}

void tk_tracedata_free(struct tk_tracedata *td)
{
	if (!td)
		return;
	clear_systems(td);
	free(td->systems);
	free(td->ftrace);
	for (size_t i = 0; i < td->nowned; i++)
		free(td->owned[i]);
	free(td->owned);
	free(td);
}

/*
 * A .dat reader parses some parts late (dat-read.c's meta_ready(): kallsyms
 * and the saved cmdlines, each when first asked for, under the reader's
 * lock) while other threads ask whether the parts they use are present:
 * the bits of td->parts therefore change and are read atomically.
 */
static void parts_clear(struct tk_tracedata *td, unsigned int bits)
{
	__atomic_fetch_and(&td->parts, ~bits, __ATOMIC_RELAXED);
}

static void parts_set(struct tk_tracedata *td, unsigned int bits)
{
	__atomic_fetch_or(&td->parts, bits, __ATOMIC_RELEASE);
}

static unsigned int parts_of(const struct tk_tracedata *td)
{
	return __atomic_load_n(&td->parts, __ATOMIC_ACQUIRE);
}

unsigned int tk_tracedata_parts(const struct tk_tracedata *td)
{
	return parts_of(td);
}

int tk_tracedata_set_layout(struct tk_tracedata *td, bool big_endian, uint8_t long_size,
			    uint32_t page_size)
{
	if (long_size != 4 && long_size != 8)
		return tk_fail(EINVAL, "long size %u is neither 4 nor 8", long_size);
	td->big_endian = big_endian;
	td->long_size = long_size;
	td->page_size = page_size;
	return 0;
}

void tk_tracedata_layout(const struct tk_tracedata *td, bool *big_endian, uint8_t *long_size,
			 uint32_t *page_size)
{
	if (big_endian)
		*big_endian = td->big_endian;
	if (long_size)
		*long_size = td->long_size;
	if (page_size)
		*page_size = td->page_size;
}

/* ------------------------------------------------------------ building */

/* Make room for @need elements of @size in *@arr; 0 or -ENOMEM (no message). */
static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 8;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int adopt(struct tk_tracedata *td, void *p)
{
	if (grow((void **)&td->owned, &td->owned_cap, td->nowned + 1, sizeof(*td->owned)) < 0) {
		free(p);
		return tk_fail(ENOMEM, "out of memory");
	}
	td->owned[td->nowned++] = p;
	return 0;
}

/* A malloc'ed copy of @len bytes (+ a NUL, so copies of names are strings). */
static char *copy_bytes(const void *data, uint64_t len)
{
	char *p;

	if (len >= SIZE_MAX)
		return NULL;
	p = malloc((size_t)len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, data, (size_t)len);
	p[len] = 0;
	return p;
}

static struct tk_text *text_slot(struct tk_tracedata *td, enum td_text which, unsigned int *part)
{
	switch (which) {
	case TD_HEADER_PAGE:
		*part = TK_TRACEDATA_HEADERS;
		return &td->header_page;
	case TD_HEADER_EVENT:
		*part = TK_TRACEDATA_HEADERS;
		return &td->header_event;
	case TD_KALLSYMS:
		*part = TK_TRACEDATA_KALLSYMS;
		return &td->kallsyms;
	case TD_PRINTK:
		*part = TK_TRACEDATA_PRINTK;
		return &td->printk;
	case TD_CMDLINES:
		break;
	}
	*part = TK_TRACEDATA_CMDLINES;
	return &td->cmdlines;
}

int tk_tracedata_take_text(struct tk_tracedata *td, enum td_text which, char *data, uint64_t len)
{
	unsigned int part;
	struct tk_text *t = text_slot(td, which, &part);
	int r = adopt(td, data);

	if (r < 0)
		return r;
	*t = (struct tk_text){data, len};
	td->parts |= part;
	return 0;
}

static struct td_system *new_system(struct tk_tracedata *td, const char *name)
{
	struct td_system *s;

	if (grow((void **)&td->systems, &td->systems_cap, td->nsystems + 1, sizeof(*td->systems)) <
	    0)
		return NULL;
	s = &td->systems[td->nsystems++];
	memset(s, 0, sizeof(*s));
	s->name = name;
	td->parts |= TK_TRACEDATA_EVENTS;
	return s;
}

static struct td_system *find_system(struct tk_tracedata *td, const char *name)
{
	for (size_t i = 0; i < td->nsystems; i++)
		if (strcmp(td->systems[i].name, name) == 0)
			return &td->systems[i];
	return NULL;
}

/* The group of @system, made (with an owned copy of the name) when new. */
static int system_group(struct tk_tracedata *td, const char *system, struct td_system **out)
{
	char *name;
	int r;

	if (!system[0] || strcmp(system, "ftrace") == 0)
		return tk_fail(EINVAL, "\"%s\" is not a system for event formats", system);
	*out = find_system(td, system);
	if (*out)
		return 0;
	name = copy_bytes(system, strlen(system));
	if (!name)
		return tk_fail(ENOMEM, "out of memory");
	r = adopt(td, name);
	if (r < 0)
		return r;
	*out = new_system(td, name);
	return *out ? 0 : tk_fail(ENOMEM, "out of memory");
}

static int push_format(struct tk_tracedata *td, struct td_system *s, const char *data, uint64_t len)
{
	if (!s) {
		if (grow((void **)&td->ftrace, &td->ftrace_cap, td->nftrace + 1,
			 sizeof(*td->ftrace)) < 0)
			return tk_fail(ENOMEM, "out of memory");
		td->ftrace[td->nftrace++] = (struct tk_text){data, len};
		td->parts |= TK_TRACEDATA_FTRACE;
		return 0;
	}
	if (grow((void **)&s->formats, &s->cap, s->count + 1, sizeof(*s->formats)) < 0)
		return tk_fail(ENOMEM, "out of memory");
	s->formats[s->count++] = (struct tk_text){data, len};
	return 0;
}

int tk_tracedata_take_format(struct tk_tracedata *td, const char *system, char *data, uint64_t len)
{
	struct td_system *s = NULL;
	int r;

	if (system) {
		r = system_group(td, system, &s);
		if (r < 0) {
			free(data);
			return r;
		}
	}
	r = adopt(td, data);
	return r < 0 ? r : push_format(td, s, data, len);
}

static int set_copy(struct tk_tracedata *td, enum td_text which, const void *data, uint64_t len)
{
	char *p = copy_bytes(data, len);

	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	return tk_tracedata_take_text(td, which, p, len);
}

int tk_tracedata_set_header_page(struct tk_tracedata *td, const void *data, uint64_t len)
{
	return set_copy(td, TD_HEADER_PAGE, data, len);
}

int tk_tracedata_set_header_event(struct tk_tracedata *td, const void *data, uint64_t len)
{
	return set_copy(td, TD_HEADER_EVENT, data, len);
}

int tk_tracedata_set_kallsyms(struct tk_tracedata *td, const void *data, uint64_t len)
{
	return set_copy(td, TD_KALLSYMS, data, len);
}

int tk_tracedata_set_printk(struct tk_tracedata *td, const void *data, uint64_t len)
{
	return set_copy(td, TD_PRINTK, data, len);
}

int tk_tracedata_set_cmdlines(struct tk_tracedata *td, const void *data, uint64_t len)
{
	return set_copy(td, TD_CMDLINES, data, len);
}

int tk_tracedata_add_ftrace_format(struct tk_tracedata *td, const void *data, uint64_t len)
{
	char *p = copy_bytes(data, len);

	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	return tk_tracedata_take_format(td, NULL, p, len);
}

int tk_tracedata_add_format(struct tk_tracedata *td, const char *system, const void *data,
			    uint64_t len)
{
	char *p;

	if (!system)
		return tk_fail(EINVAL, "no system named for an event format");
	p = copy_bytes(data, len);
	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	return tk_tracedata_take_format(td, system, p, len);
}

int tk_tracedata_add_system(struct tk_tracedata *td, const char *system)
{
	struct td_system *s;

	if (!system)
		return tk_fail(EINVAL, "no system named");
	return system_group(td, system, &s);
}

/* ------------------------------------------------------------- getters */

static int get_text(const struct tk_tracedata *td, unsigned int part, const struct tk_text *src,
		    struct tk_text *text)
{
	if (!(parts_of(td) & part))
		return -ENOENT;
	*text = *src;
	return 0;
}

int tk_tracedata_header_page(const struct tk_tracedata *td, struct tk_text *text)
{
	return get_text(td, TK_TRACEDATA_HEADERS, &td->header_page, text);
}

int tk_tracedata_header_event(const struct tk_tracedata *td, struct tk_text *text)
{
	return get_text(td, TK_TRACEDATA_HEADERS, &td->header_event, text);
}

int tk_tracedata_kallsyms(const struct tk_tracedata *td, struct tk_text *text)
{
	return get_text(td, TK_TRACEDATA_KALLSYMS, &td->kallsyms, text);
}

int tk_tracedata_printk(const struct tk_tracedata *td, struct tk_text *text)
{
	return get_text(td, TK_TRACEDATA_PRINTK, &td->printk, text);
}

int tk_tracedata_cmdlines(const struct tk_tracedata *td, struct tk_text *text)
{
	return get_text(td, TK_TRACEDATA_CMDLINES, &td->cmdlines, text);
}

size_t tk_tracedata_ftrace_count(const struct tk_tracedata *td)
{
	return td->nftrace;
}

int tk_tracedata_ftrace_format(const struct tk_tracedata *td, size_t index, struct tk_text *text)
{
	if (index >= td->nftrace)
		return -ENOENT;
	*text = td->ftrace[index];
	return 0;
}

size_t tk_tracedata_system_count(const struct tk_tracedata *td)
{
	return td->nsystems;
}

const char *tk_tracedata_system_name(const struct tk_tracedata *td, size_t system)
{
	return system < td->nsystems ? td->systems[system].name : NULL;
}

size_t tk_tracedata_system_format_count(const struct tk_tracedata *td, size_t system)
{
	return system < td->nsystems ? td->systems[system].count : 0;
}

int tk_tracedata_system_format(const struct tk_tracedata *td, size_t system, size_t index,
			       struct tk_text *text)
{
	if (system >= td->nsystems || index >= td->systems[system].count)
		return -ENOENT;
	*text = td->systems[system].formats[index];
	return 0;
}

size_t tk_tracedata_format_count(const struct tk_tracedata *td)
{
	size_t n = td->nftrace;

	for (size_t i = 0; i < td->nsystems; i++)
		n += td->systems[i].count;
	return n;
}

int tk_tracedata_format(const struct tk_tracedata *td, size_t index, const char **system,
			struct tk_text *text)
{
	const char *sys = "ftrace";
	const struct tk_text *t = NULL;

	if (index < td->nftrace) {
		t = &td->ftrace[index];
	} else {
		index -= td->nftrace;
		for (size_t i = 0; i < td->nsystems && !t; i++) {
			if (index < td->systems[i].count) {
				sys = td->systems[i].name;
				t = &td->systems[i].formats[index];
			} else {
				index -= td->systems[i].count;
			}
		}
	}
	if (!t)
		return -ENOENT;
	if (system)
		*system = sys;
	if (text)
		*text = *t;
	return 0;
}

/* ------------------------------------------------------------ decoding */

static bool cursor_text(struct tk_cursor *c, uint64_t len, struct tk_text *t)
{
	const uint8_t *p;

	if (!tk_cursor_bytes(c, len, &p))
		return false;
	t->data = (const char *)p;
	t->len = len;
	return true;
}

/* {u32 count, count x {u64 len, text}} into @s (NULL: the ftrace formats). */
static int parse_formats(struct tk_tracedata *td, struct td_system *s, struct tk_cursor *c,
			 const char **what)
{
	uint32_t n;
	uint64_t len;
	struct tk_text t;

	if (!tk_cursor_u32(c, &n) || n > tk_cursor_left(c) / 8) {
		*what = s ? "bad event format count" : "bad ftrace format count";
		return -EBADMSG;
	}
	/* Bounded by the bytes left: room for every entry at once. */
	if (s ? grow((void **)&s->formats, &s->cap, n, sizeof(*s->formats))
	      : grow((void **)&td->ftrace, &td->ftrace_cap, n, sizeof(*td->ftrace)))
		return tk_fail(ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		if (!tk_cursor_u64(c, &len) || !cursor_text(c, len, &t)) {
			*what = s ? "truncated event format" : "truncated ftrace format";
			return -EBADMSG;
		}
		if (push_format(td, s, t.data, t.len) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int parse_part(struct tk_tracedata *td, uint16_t id, struct tk_cursor *c, const char **what)
{
	const uint8_t *tag;
	uint64_t len;
	uint32_t n, len32;
	struct tk_text t;
	int r;

	switch (id) {
	case TK_DAT_SECTION_HEADER_INFO:
		parts_clear(td, TK_TRACEDATA_HEADERS);
		if (!tk_cursor_bytes(c, 12, &tag) || memcmp(tag, "header_page", 12) != 0)
			return *what = "missing header_page tag", -EBADMSG;
		if (!tk_cursor_u64(c, &len) || !cursor_text(c, len, &td->header_page))
			return *what = "truncated header_page", -EBADMSG;
		if (!tk_cursor_bytes(c, 13, &tag) || memcmp(tag, "header_event", 13) != 0)
			return *what = "missing header_event tag", -EBADMSG;
		if (!tk_cursor_u64(c, &len) || !cursor_text(c, len, &td->header_event))
			return *what = "truncated header_event", -EBADMSG;
		parts_set(td, TK_TRACEDATA_HEADERS);
		return 0;
	case TK_DAT_SECTION_FTRACE_EVENTS:
		td->nftrace = 0;
		parts_clear(td, TK_TRACEDATA_FTRACE);
		r = parse_formats(td, NULL, c, what);
		if (r < 0)
			td->nftrace = 0;
		else
			parts_set(td, TK_TRACEDATA_FTRACE);
		return r;
	case TK_DAT_SECTION_EVENT_FORMATS:
		clear_systems(td);
		parts_clear(td, TK_TRACEDATA_EVENTS);
		/* Each system needs at least a NUL name and a u32 count. */
		if (!tk_cursor_u32(c, &n) || n > tk_cursor_left(c) / 5)
			return *what = "bad event system count", -EBADMSG;
		if (grow((void **)&td->systems, &td->systems_cap, n, sizeof(*td->systems)) < 0)
			return tk_fail(ENOMEM, "out of memory");
		for (uint32_t i = 0; i < n; i++) {
			const char *name;
			struct td_system *s;

			if (!tk_cursor_cstr(c, &name, NULL)) {
				*what = "truncated event system name";
				r = -EBADMSG;
			} else {
				s = new_system(td, name);
				r = parse_formats(td, s, c, what);
			}
			if (r < 0) {
				clear_systems(td);
				parts_clear(td, TK_TRACEDATA_EVENTS);
				return r;
			}
		}
		parts_set(td, TK_TRACEDATA_EVENTS);
		return 0;
	case TK_DAT_SECTION_KALLSYMS:
	case TK_DAT_SECTION_PRINTK: {
		unsigned int part =
			id == TK_DAT_SECTION_KALLSYMS ? TK_TRACEDATA_KALLSYMS : TK_TRACEDATA_PRINTK;

		parts_clear(td, part);
		if (!tk_cursor_u32(c, &len32) || !cursor_text(c, len32, &t))
			return *what = id == TK_DAT_SECTION_KALLSYMS ? "truncated kallsyms"
								     : "truncated printk formats",
			       -EBADMSG;
		*(id == TK_DAT_SECTION_KALLSYMS ? &td->kallsyms : &td->printk) = t;
		parts_set(td, part);
		return 0;
	}
	case TK_DAT_SECTION_CMDLINES:
		parts_clear(td, TK_TRACEDATA_CMDLINES);
		if (!tk_cursor_u64(c, &len) || !cursor_text(c, len, &td->cmdlines))
			return *what = "truncated cmdlines", -EBADMSG;
		parts_set(td, TK_TRACEDATA_CMDLINES);
		return 0;
	}
	return tk_fail(EINVAL, "%u is not a metadata section (16..21)", id);
}

int tk_tracedata_parse_dat(struct tk_tracedata *td, uint16_t id, const void *body, uint64_t len,
			   bool big_endian, uint64_t base, uint64_t *bad_at, const char **what)
{
	struct tk_cursor c;
	int r;

	tk_cursor_init(&c, body, len, base, big_endian);
	r = parse_part(td, id, &c, what);
	if (r == -EBADMSG)
		*bad_at = tk_cursor_offset(&c);
	return r;
}

int tk_tracedata_decode_dat_section(struct tk_tracedata *td, uint16_t id, const void *body,
				    uint64_t len, bool big_endian)
{
	uint64_t at = 0;
	const char *what = "";
	int r = tk_tracedata_parse_dat(td, id, body, len, big_endian, 0, &at, &what);

	if (r == -EBADMSG)
		return tk_fail_at(EBADMSG, "metadata section", at, "%s", what);
	return r;
}

int tk_tracedata_parse_perf(struct tk_tracedata *td, const void *blob, uint64_t len,
			    uint64_t *bad_at, const char **what)
{
	struct tk_cursor c;
	const uint8_t *b;
	const char *version;
	uint32_t page_size;
	bool big;
	uint8_t long_size;
	int r = 0;

	tk_cursor_init(&c, blob, len, 0, false);
	if (!tk_cursor_bytes(&c, PERF_MAGIC_LEN, &b) || memcmp(b, PERF_MAGIC, PERF_MAGIC_LEN) != 0)
		*what = "no tracing data magic";
	else if (!tk_cursor_cstr(&c, &version, NULL))
		*what = "truncated version";
	else if (!tk_cursor_bytes(&c, 1, &b) || b[0] > 1)
		*what = "bad byte order";
	else
		r = 1;
	if (r == 0) {
		*bad_at = tk_cursor_offset(&c);
		return -EBADMSG;
	}
	big = b[0];
	c.big = big;
	if (!tk_cursor_bytes(&c, 1, &b) || !tk_cursor_u32(&c, &page_size)) {
		*bad_at = tk_cursor_offset(&c);
		*what = "truncated layout";
		return -EBADMSG;
	}
	long_size = b[0];
	td->parts = 0;
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_PRINTK; id++) {
		r = parse_part(td, id, &c, what);
		if (r < 0)
			break;
	}
	/* Version 0.5 ends with the printk formats; 0.6 adds the saved cmdlines. */
	if (r == 0 && tk_cursor_left(&c) >= 8)
		r = parse_part(td, TK_DAT_SECTION_CMDLINES, &c, what);
	if (r < 0) {
		if (r == -EBADMSG)
			*bad_at = tk_cursor_offset(&c);
		td->parts = 0;
		td->nftrace = 0;
		clear_systems(td);
		return r;
	}
	td->version = version;
	td->big_endian = big;
	td->long_size = long_size;
	td->page_size = page_size;
	return 0;
}

int tk_tracedata_decode_perf(struct tk_tracedata *td, const void *blob, uint64_t len)
{
	uint64_t at = 0;
	const char *what = "";
	int r = tk_tracedata_parse_perf(td, blob, len, &at, &what);

	if (r == -EBADMSG)
		return tk_fail_at(EBADMSG, "TRACING_DATA", at, "%s", what);
	return r;
}

/* ------------------------------------------------------------ encoding */

static void put_text64(struct tk_bytebuf *b, const struct tk_text *t)
{
	tk_bytebuf_put_u64(b, t->len);
	tk_bytebuf_put(b, t->data, (size_t)t->len);
}

static int put_text32(struct tk_bytebuf *b, const struct tk_text *t, const char *what)
{
	if (t->len > UINT32_MAX)
		return tk_fail(EINVAL,
			       "%s of %" PRIu64 " bytes do not fit the u32 size of the layout",
			       what, t->len);
	tk_bytebuf_put_u32(b, (uint32_t)t->len);
	tk_bytebuf_put(b, t->data, (size_t)t->len);
	return 0;
}

static void put_formats(struct tk_bytebuf *b, const struct tk_text *f, size_t n)
{
	tk_bytebuf_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		put_text64(b, &f[i]);
}

int tk_tracedata_put_dat_section(const struct tk_tracedata *td, uint16_t id, struct tk_bytebuf *b)
{
	static const struct tk_text none;
	bool have;
	int r = 0;

	switch (id) {
	case TK_DAT_SECTION_HEADER_INFO:
		have = parts_of(td) & TK_TRACEDATA_HEADERS;
		tk_bytebuf_put_cstr(b, "header_page");
		put_text64(b, have ? &td->header_page : &none);
		tk_bytebuf_put_cstr(b, "header_event");
		put_text64(b, have ? &td->header_event : &none);
		break;
	case TK_DAT_SECTION_FTRACE_EVENTS:
		if (td->nftrace > UINT32_MAX)
			return tk_fail(EINVAL, "%zu ftrace formats are too many", td->nftrace);
		put_formats(b, td->ftrace, td->nftrace);
		break;
	case TK_DAT_SECTION_EVENT_FORMATS:
		if (td->nsystems > UINT32_MAX)
			return tk_fail(EINVAL, "%zu systems are too many", td->nsystems);
		tk_bytebuf_put_u32(b, (uint32_t)td->nsystems);
		for (size_t i = 0; i < td->nsystems; i++) {
			if (td->systems[i].count > UINT32_MAX)
				return tk_fail(EINVAL, "%zu formats are too many",
					       td->systems[i].count);
			tk_bytebuf_put_cstr(b, td->systems[i].name);
			put_formats(b, td->systems[i].formats, td->systems[i].count);
		}
		break;
	case TK_DAT_SECTION_KALLSYMS:
		r = put_text32(b, parts_of(td) & TK_TRACEDATA_KALLSYMS ? &td->kallsyms : &none,
			       "kallsyms");
		break;
	case TK_DAT_SECTION_PRINTK:
		r = put_text32(b, parts_of(td) & TK_TRACEDATA_PRINTK ? &td->printk : &none,
			       "printk formats");
		break;
	case TK_DAT_SECTION_CMDLINES:
		put_text64(b, parts_of(td) & TK_TRACEDATA_CMDLINES ? &td->cmdlines : &none);
		break;
	default:
		return tk_fail(EINVAL, "%u is not a metadata section (16..21)", id);
	}
	return r < 0 ? r : tk_bytebuf_error(b);
}

int tk_tracedata_put_perf(const struct tk_tracedata *td, struct tk_bytebuf *b)
{
	int r = 0;

	tk_bytebuf_put(b, PERF_MAGIC, PERF_MAGIC_LEN);
	tk_bytebuf_put_cstr(b, "0.6");
	tk_bytebuf_put_u8(b, b->big);
	tk_bytebuf_put_u8(b, td->long_size);
	tk_bytebuf_put_u32(b, td->page_size);
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES && !r; id++)
		r = tk_tracedata_put_dat_section(td, id, b);
	return r;
}

static int finish_encoding(struct tk_bytebuf *b, int r, void **out, uint64_t *len)
{
	size_t n;

	if (r < 0) {
		tk_bytebuf_release(b);
		return r;
	}
	*out = tk_bytebuf_steal(b, &n);
	if (!*out)
		return -ENOMEM;
	*len = n;
	return 0;
}

int tk_tracedata_encode_dat_section(const struct tk_tracedata *td, uint16_t id, bool big_endian,
				    void **body, uint64_t *len)
{
	struct tk_bytebuf b;

	tk_bytebuf_init(&b, big_endian);
	return finish_encoding(&b, tk_tracedata_put_dat_section(td, id, &b), body, len);
}

int tk_tracedata_encode_perf(const struct tk_tracedata *td, void **blob, uint64_t *len)
{
	struct tk_bytebuf b;

	tk_bytebuf_init(&b, td->big_endian);
	return finish_encoding(&b, tk_tracedata_put_perf(td, &b), blob, len);
}
