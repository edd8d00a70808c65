// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * event: event formats, field access and the compiled event printer.
 *
 * Formats. libtraceevent parses the tracefs `format` texts (fields and the
 * print format with its argument tree); we keep its tep_handle as the
 * slow, always-correct printer and copy the field facts into our own
 * tk_event_field array so that readers never touch libtraceevent structs.
 *
 * Compiled printing. libtraceevent re-walks the print format's argument
 * tree for every record (and allocates while doing it), which is most of
 * why trace-cmd report runs at ~0.3 M events/s. Here each print format is
 * split once, with the same rules libtraceevent uses, into a program of
 * ops:
 *
 *   LIT      literal text (escapes \n \t \r \\ already applied, %% folded)
 *   NUM      a fixed numeric field or constant through %d/%i/%u/%x/%X/%o
 *            with h/hh/l/ll: the value is read unsigned at the field's
 *            size and then cast by the length modifier, exactly as
 *            libtraceevent's print_arg_number() does (a signed 4-byte -1
 *            printed with %lu is 4294967295 there too)
 *   STR      a char array field up to its NUL or its size
 *   DSTR     __get_str(): a __data_loc/__rel_loc word (offset | len << 16)
 *   FLAGS    __print_flags() of a numeric field with numeric values
 *   SYMBOL   __print_symbolic() of a numeric field with numeric values
 *
 * Plain %d/%u/%x/%s without width are formatted by hand; anything with a
 * width or flags goes through snprintf() with a format string we rebuilt
 * from validated characters (never the file's text). event-print.c
 * lists the other constructs compiled (pointers, %pS symbols, IP
 * addresses, MAC and UUID forms, '*' widths, hex dumps, arrays,
 * bitmasks, ternaries, casts, arithmetic, array elements). A print
 * format with a construct not compiled (cpumasks, sockaddrs, helper
 * functions, bprint ...) or an event with a plugin handler we do not
 * mirror is printed by libtraceevent instead: slower, never wrong.
 * Symbol lookups go through a direct-mapped memo of 4096 addresses (of
 * the entries they gave, wherever those live). A kallsyms text in the
 * kernel's own layout and address order, as /proc/kallsyms writes it, is
 * only checked on first use, and each lookup binary-searches its lines:
 * a report looks up a few dozen distinct addresses at most of 120 k
 * lines. An address several names share (the probe path picks one), a
 * name's address, more than 1024 lookups or any other text build the
 * table: parsed by hand and radix-sorted (a third of the instructions of
 * ctype-based parsing and qsort() on 150 k lines; names are measured in
 * the same pass). A name a print format reads
 * (jiffies, vmemmap_base) is first looked for in the text: a kernel built
 * without KALLSYMS_ALL lists no variable, and a text no line of which can
 * name it answers 0 without the table. A perf.data report may give
 * the kernel image's lines alone (a kept copy, ksyms-copy.c), where the
 * kernel would spend ~20 ms formatting the whole of /proc/kallsyms: an
 * answer they give is the whole text's unless it depends on what follows
 * the image or on the search's probe path (an address names share, which
 * the table's length changes), and such a lookup, libtraceevent's first
 * one, or a name they lack (but one no line past them can list:
 * tk_ksyms_past_image_lacks()) reads the whole text once, kept after them in
 * the same reservation so no name a printer holds moves (only what
 * follows their lines, when it begins with them). The image's parsed
 * table may be read from a file kept beside the copy
 * (tk_event_set_kallsyms_table()) instead of parsing its lines. The
 * sched_switch / sched_wakeup plugin handlers, which trace-cmd
 * loads and which dominate real traces, are mirrored natively, command
 * name registration included (the plugin registers prev/next comm for
 * pids the saved cmdlines did not know, which changes later lines).
 * A report loads libtraceevent's plugins only before parsing the first
 * format one of them may act on (tk_event_set_plugins_on_demand()): most
 * families' files never map them.
 *
 * Untrusted records. A compiled program runs only on records that cover
 * its furthest fixed field (one test per record), and dynamic fields are
 * checked where they are read. libtraceevent does not check: before the
 * slow printer runs, the record is copied into a zeroed scratch area of
 * 128 KiB + page, larger than any __data_loc offset+length (16+16 bits)
 * can reach, so a corrupt record prints garbage text rather than reading
 * out of bounds.
 *
 * Command names. trace-cmd prints, for each record, the name libtraceevent
 * 1.7's table gives for common_pid, and that table has two phases which we
 * model exactly, because which name wins for a pid depends on them:
 *
 *   list   tep_register_comm() prepends to a list without looking for the
 *          pid (saved_cmdlines lines arrive this way, and so does every
 *          name the sched_switch / sched_wakeup plugin prints, pid 0's
 *          "swapper/N" included), so duplicates pile up.
 *   array  the first lookup of a pid other than 0 (0 is "<idle>" without
 *          a lookup) copies the list, newest first, into an array sorted
 *          stably by pid; duplicates stay. A lookup is glibc's bsearch(),
 *          which returns the first equal entry its probes hit, so the
 *          winner among duplicates depends on the array's size and layout.
 *          From now on a registration of a known pid (or of pid 0) is
 *          refused, a new pid is inserted in order, moving the others.
 *
 * So when the first printed records come from pid 0 (an idle CPU under
 * --cpu or -F), the plugin's names for the tasks they switch to enter as
 * newer duplicates of the saved_cmdlines names and may be the ones shown
 * for the rest of the report ("bash" for a pid saved_cmdlines calls
 * "sleep"). Names are never freed before the set (they live in chunks of
 * an arena), so a name's address identifies it (report.c caches printed
 * prefixes on it). Lookups go through a direct-mapped cache tagged with a
 * generation that every change of the array's layout bumps. Our tep keeps
 * the very same table, but only from when something of libtraceevent's
 * may read it (its printer and plugins, a filter: tk_event_comm_tep()):
 * then it is told every name so far, in the phase ours is in, and every
 * later name and switch of phase together with ours. A file printed
 * wholly by the compiled printer never builds it (two strdup()s, a list
 * node and tep's sort of 6.5 k saved cmdlines: ~8 M instructions). A
 * report hands its saved cmdlines over as a source
 * (tk_event_set_add_cmdlines_source()), read and registered, first of all
 * names, by the first call that reads or changes the table but pid 0's
 * lookup: a file of the idle task's records alone never reads them.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <tracekit/event.h>

#include "event-internal.h"
#include "internal/bigbuf.h"
#include "internal/error.h"
#include "internal/fsutil.h"
#include "ksyms-copy.h"

/* ---------------------------------------------------------- number I/O */

static inline uint64_t load_num(const struct tk_event_set *set, const uint8_t *p, uint32_t size)
{
	uint64_t v = 0;

	switch (size) {
	case 1:
		return p[0];
	case 2: {
		uint16_t x;

		memcpy(&x, p, 2);
		return set->swap ? __builtin_bswap16(x) : x;
	}
	case 4: {
		uint32_t x;

		memcpy(&x, p, 4);
		return set->swap ? __builtin_bswap32(x) : x;
	}
	case 8:
		memcpy(&v, p, 8);
		return set->swap ? __builtin_bswap64(v) : v;
	}
	return 0;
}

/* ----------------------------------------------------------- comm table */

/* Newest registration first among equal pids: libtraceevent's list order, kept by its sort. */
static int comm_ent_cmp(const void *a, const void *b)
{
	const struct tk_comm_ent *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void comm_bump_gen(struct tk_comm_table *t)
{
	if (++t->gen == 0) {
		memset(t->cache, 0, sizeof(t->cache));
		t->gen = 1;
	}
}

/* The pid as an unsigned key in the order of the signed pids. */
static inline uint32_t comm_key(const struct tk_comm_ent *e)
{
	return (uint32_t)e->pid ^ 0x80000000u;
}

/*
 * The entries, newest first, sorted stably by pid into t->ents: three
 * counting passes over 11-bit digits of the pid, each stable. On the
 * sched bench file's 6.5 k saved cmdlines ~0.2 M instructions where
 * qsort() with comm_ent_cmp() took 3.5 M (bench/README.md, "Stop 21,
 * .dat"). Return: false when out of memory (then qsort() sorts).
 */
static bool comm_radix_sort(struct tk_comm_table *t)
{
	uint32_t n = t->count, cnt[1u << 11];
	struct tk_comm_ent *tmp = malloc((size_t)n * sizeof(*tmp)), *src, *dst;

	if (!tmp)
		return false;
	for (uint32_t i = 0; i < n; i++)
		tmp[i] = t->ents[n - 1 - i];
	src = tmp;
	dst = t->ents;
	for (unsigned int shift = 0; shift < 33; shift += 11) {
		struct tk_comm_ent *x;
		uint32_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (uint32_t i = 0; i < n; i++)
			cnt[(comm_key(&src[i]) >> shift) & 2047]++;
		for (uint32_t d = 0; d < 2048; d++) {
			uint32_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			dst[cnt[(comm_key(&src[i]) >> shift) & 2047]++] = src[i];
		/* Three passes: tmp -> ents -> tmp -> ents. */
		x = src;
		src = dst;
		dst = x;
	}
	free(tmp);
	return true;
}

/*
 * cmdline_init(): the list (newest first) copied into an array and sorted
 * stably by pid (glibc's qsort() is a merge sort). The explicit sequence
 * key gives that order whatever the sort: comm_radix_sort() takes the
 * entries in it, and qsort() with comm_ent_cmp() compares it.
 */
static void comm_build(struct tk_comm_table *t)
{
	for (uint32_t i = 0; i < t->count; i++)
		t->ents[i].seq = t->count - 1 - i;
	if (t->count > 1 && !comm_radix_sort(t))
		qsort(t->ents, t->count, sizeof(*t->ents), comm_ent_cmp);
	t->sorted = true;
	comm_bump_gen(t);
}

/*
 * glibc's bsearch() step for step: with duplicate pids, which entry it
 * returns depends on where the probes land, and trace-cmd prints that one.
 */
static const struct tk_comm_ent *comm_bsearch(const struct tk_comm_table *t, int pid)
{
	size_t l = 0, u = t->count;

	while (l < u) {
		size_t idx = (l + u) / 2;
		int p = t->ents[idx].pid;

		if (pid < p)
			u = idx;
		else if (pid > p)
			l = idx + 1;
		else
			return &t->ents[idx];
	}
	return NULL;
}

/* The name bsearch() finds for @pid in the array, or NULL; through the cache. */
static const char *comm_find(struct tk_comm_table *t, int pid)
{
	struct tk_comm_cache *c = &t->cache[(uint32_t)pid & (TK_COMM_CACHE - 1)];
	const struct tk_comm_ent *e;

	if (c->gen == t->gen && c->pid == pid)
		return c->comm;
	e = comm_bsearch(t, pid);
	c->pid = pid;
	c->gen = t->gen;
	c->comm = e ? e->comm : NULL;
	return c->comm;
}

static int add_cmdlines(struct tk_event_set *set, const char *text, size_t len);

/*
 * Register the saved cmdlines left pending, first of all names. @set is
 * not const here even when the caller's pointer is: a lookup through a
 * const set may build the table (its comms are behind a pointer), and
 * with the table not told to libtraceevent yet, registering touches
 * nothing else of the set.
 */
static inline void comm_settle(const struct tk_event_set *set)
{
	struct tk_comm_table *t = set->comms;
	int (*get)(void *arg, const char **text, size_t *len) = t->pending;
	const char *text;
	size_t len;

	if (__builtin_expect(!get, 1))
		return;
	t->pending = NULL;
	if (!get(t->pending_arg, &text, &len))
		add_cmdlines((struct tk_event_set *)set, text, len);
}

const char *tk_event_comm(const struct tk_event_set *set, int pid)
{
	struct tk_comm_table *t = set->comms;
	const char *comm;

	if (!pid)
		return "<idle>";
	if (!t->sorted) {
		comm_settle(set);
		comm_build(t);
		/*
		 * Keep tep's table in the same phase: the names it learns from
		 * its sched plugin (slow path) then go in as they do here.
		 */
		if (t->tep_told)
			tep_data_comm_from_pid(set->tep, pid);
	}
	comm = comm_find(t, pid);
	return comm ? comm : "<...>";
}

/*
 * A copy of @comm (@len bytes or up to a NUL) in the table's arena: one
 * strndup() per name cost ~230 instructions, a sixth of reading a saved
 * cmdlines line. A name longer than a quarter chunk gets a chunk of its
 * own behind the current one.
 */
static char *comm_keep(struct tk_comm_table *t, const char *comm, size_t len)
{
	struct tk_comm_arena *a = t->arena;
	char *copy;

	len = strnlen(comm, len);
	if (!a || a->cap - a->used <= len) {
		size_t cap = len >= TK_COMM_ARENA / 4 ? len + 1 : TK_COMM_ARENA;
		struct tk_comm_arena *n = malloc(sizeof(*n) + cap);

		if (!n)
			return NULL;
		n->used = 0;
		n->cap = cap;
		if (a && cap != TK_COMM_ARENA) {
			n->next = a->next;
			a->next = n;
		} else {
			n->next = a;
			t->arena = n;
		}
		a = n;
	}
	copy = a->data + a->used;
	memcpy(copy, comm, len);
	copy[len] = '\0';
	a->used += len + 1;
	return copy;
}

void tk_event_comm_tep(struct tk_event_set *set)
{
	struct tk_comm_table *t = set->comms;

	if (t->tep_told)
		return;
	comm_settle(set);
	t->tep_told = true;
	if (!t->sorted) {
		/* The list phase: the same registrations in the same order. */
		for (uint32_t i = 0; i < t->count; i++)
			tep_register_comm(set->tep, t->ents[i].comm, t->ents[i].pid);
		return;
	}
	/*
	 * Our array is what tep's would be. Prepended last to first, the list
	 * reads in the array's order; the array tep copies from it is sorted
	 * already, so its stable sort keeps it, duplicates in place. Any
	 * lookup of a pid other than 0 builds it.
	 */
	for (uint32_t i = t->count; i-- > 0;)
		tep_register_comm(set->tep, t->ents[i].comm, t->ents[i].pid);
	tep_data_comm_from_pid(set->tep, 1);
}

/* Room for @cap entries in @t (more than it has). Return: 0, or -ENOMEM with nothing changed. */
static int comm_reserve(struct tk_comm_table *t, size_t cap)
{
	struct tk_comm_ent *ents = realloc(t->ents, cap * sizeof(*ents));

	if (!ents)
		return -ENOMEM;
	t->ents = ents;
	t->cap = (uint32_t)cap;
	return 0;
}

int tk_event_comm_add(struct tk_event_set *set, int pid, const char *comm, size_t len, bool mirror)
{
	struct tk_comm_table *t = set->comms;
	size_t pos;
	char *copy;

	comm_settle(set);
	pos = t->count;
	if (t->sorted) {
		size_t l = 0, u = t->count;

		/* add_new_comm(): pid 0 is dropped, a known pid kept as it is. */
		if (!pid)
			return 0;
		if (comm_find(t, pid))
			return -EEXIST;
		while (l < u) {
			size_t m = l + (u - l) / 2;

			if (t->ents[m].pid < pid)
				l = m + 1;
			else
				u = m;
		}
		pos = l;
	}
	if (t->count == t->cap) {
		if (t->cap > UINT32_MAX / 4)
			return tk_fail(ENOMEM, "too many command names");
		if (comm_reserve(t, t->cap ? (size_t)t->cap * 2 : 256) < 0)
			return tk_fail(ENOMEM, "cannot grow the command name table");
	}
	copy = comm_keep(t, comm, len);
	if (!copy)
		return tk_fail(ENOMEM, "cannot store a command name");
	if (mirror && t->tep_told)
		tep_register_comm(set->tep, copy, pid);
	memmove(&t->ents[pos + 1], &t->ents[pos], (t->count - pos) * sizeof(*t->ents));
	t->ents[pos].pid = pid;
	t->ents[pos].seq = 0;
	t->ents[pos].comm = copy;
	t->count++;
	if (t->sorted)
		comm_bump_gen(t);
	return 0;
}

int tk_event_register_comm(struct tk_event_set *set, int pid, const char *comm, size_t len)
{
	return tk_event_comm_add(set, pid, comm, len, true);
}

int tk_event_set_add_cmdlines(struct tk_event_set *set, const char *text, size_t len)
{
	comm_settle(set);
	return add_cmdlines(set, text, len);
}

int tk_event_set_add_cmdlines_source(struct tk_event_set *set,
				     int (*get)(void *arg, const char **text, size_t *len),
				     void *arg)
{
	struct tk_comm_table *t = set->comms;
	const char *text;
	size_t len;

	/* One source waits at a time: an earlier one is registered first, as it would have been. */
	comm_settle(set);
	if (!t->sorted) {
		t->pending = get;
		t->pending_arg = arg;
		return 0;
	}
	/* Lookups in a sorted table do not settle (they stay one test shorter): register now. */
	if (get(arg, &text, &len))
		return 0;
	return add_cmdlines(set, text, len) == -ENOMEM ? -ENOMEM : 0;
}

static int add_cmdlines(struct tk_event_set *set, const char *text, size_t len)
{
	size_t pos = 0;

	/*
	 * "PID COMM\n" lines, read as tep_parse_saved_cmdlines() reads them
	 * (trace-cmd hands it the text as a C string, so a NUL ends it; each
	 * line is sscanf("%d %m[^\n]")): parsing stops at the first malformed
	 * line, a pid beyond a long is malformed (ERANGE), one beyond an int
	 * keeps its low 32 bits. Repeated pids are all registered.
	 */
	len = strnlen(text, len);
	{
		/*
		 * Room for every line at once: growing the table by doubling
		 * copied it four times into fresh pages (~20 page faults for
		 * the ~2.5 k lines of a usual file). A line that registers a
		 * name takes 4 bytes at least ("1 a\n"), so len / 4 + 1 entries
		 * hold them all; what they do not use is never touched (glibc
		 * maps a block this size fresh). Out of memory here, or a text
		 * over 16 MiB, leaves the growth to tk_event_comm_add().
		 */
		struct tk_comm_table *t = set->comms;
		size_t most = len / 4 + 1;

		if (t->count + most > t->cap && len <= (16u << 20))
			(void)comm_reserve(t, t->count + most);
	}
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		uint64_t pid = 0;
		bool neg = false, digits = false, range = false;
		size_t p;

		if (end == pos) {
			pos = end + 1;
			continue;
		}
		p = pos;
		while (p < end && isspace((unsigned char)text[p]))
			p++;
		if (p < end && (text[p] == '-' || text[p] == '+'))
			neg = text[p++] == '-';
		/* isdigit() is these ten in every locale (C11 7.4.1.5), and no call. */
		while (p < end && (unsigned char)(text[p] - '0') < 10) {
			if (pid > ((uint64_t)1 << 63) / 10)
				range = true;
			else
				pid = pid * 10 + (uint64_t)(text[p] - '0');
			digits = true;
			p++;
		}
		if (pid > (uint64_t)INT64_MAX + neg)
			range = true;
		while (p < end && isspace((unsigned char)text[p]))
			p++;
		if (!digits || range || p >= end)
			break;
		{
			uint32_t low = (uint32_t)(neg ? 0 - pid : pid);
			int ret = tk_event_register_comm(set, (int)low, text + p, end - p);

			if (ret == -ENOMEM)
				return ret;
		}
		pos = end + 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- set */

struct tk_event_set *tk_event_set_new(uint8_t long_size, bool big_endian, uint32_t page_size)
{
	struct tk_event_set *set;

	if (long_size != 4 && long_size != 8) {
		tk_fail(EINVAL, "long size %u is neither 4 nor 8", long_size);
		errno = EINVAL;
		return NULL;
	}
	set = calloc(1, sizeof(*set));
	if (!set)
		goto nomem;
	pthread_mutex_init(&set->ksym_lock, NULL);
	set->comms = calloc(1, sizeof(*set->comms));
	if (!set->comms)
		goto nomem;
	set->tep = tep_alloc();
	if (!set->tep)
		goto nomem;
	tep_set_long_size(set->tep, long_size);
	tep_set_file_bigendian(set->tep, big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(set->tep, tep_is_bigendian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_page_size(set->tep, (int)page_size);
	set->long_size = long_size;
	set->big_endian = big_endian;
	set->swap = big_endian != (bool)tep_is_bigendian();
	/*
	 * The page size comes from the file: a damaged one must not size a
	 * buffer of gigabytes. Records are bounded by the pages really read
	 * (a ring-buffer sub-buffer is at most a few MiB), and the copy into
	 * the scratch is bounded by its size.
	 */
	set->scratch_size = TK_EVENT_SCRATCH + (page_size < (16u << 20) ? page_size : (16u << 20));
	set->scratch = calloc(1, set->scratch_size);
	if (!set->scratch)
		goto nomem;
	trace_seq_init(&set->seq);
	set->seq_init = true;
	return set;
nomem:
	tk_event_set_free(set);
	tk_fail(ENOMEM, "cannot allocate an event set");
	errno = ENOMEM;
	return NULL;
}

static void event_free(struct tk_event *ev)
{
	if (!ev)
		return;
	tk_event_free_program(ev);
	free(ev->fields);
	free(ev);
}

static void ksym_drop(struct tk_event_set *set);

void tk_event_set_free(struct tk_event_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->count; i++)
		event_free(set->events[i]);
	free(set->events);
	free(set->by_id);
	if (set->comms) {
		for (struct tk_comm_arena *a = set->comms->arena, *next; a; a = next) {
			next = a->next;
			free(a);
		}
		free(set->comms->ents);
		free(set->comms);
	}
	if (set->seq_init)
		trace_seq_destroy(&set->seq);
	if (set->plugins)
		tep_unload_plugins(set->plugins, set->tep);
	free(set->plugin_words);
	if (set->tep)
		tep_free(set->tep);
	free(set->scratch);
	ksym_drop(set);
	for (size_t i = 0; i < set->nprintks; i++)
		free(set->printks[i].text);
	free(set->printks);
	pthread_mutex_destroy(&set->ksym_lock);
	free(set);
}

int tk_event_set_add_header_page(struct tk_event_set *set, const char *text, size_t len)
{
	if (tep_parse_header_page(set->tep, (char *)text, (unsigned long)len, set->long_size))
		return tk_fail(EBADMSG, "header_page text is not understood");
	return 0;
}

/*
 * kallsyms is kept as text and read on first use: a kernel's is ~5 MB
 * and 150 k lines, and most traces print no symbol. The compiled printers
 * search the text or our sorted table; libtraceevent gets the text only
 * when a record first takes the slow path.
 */
static void ksym_drop(struct tk_event_set *set)
{
	if (set->ksym_region)
		munmap(set->ksym_region, set->ksym_region_len);
	else if (set->ksym_owned)
		free(set->ksym_text);
	tk_big_free(set->ksyms);
	tk_big_free(set->ksym_full);
	free(set->ksym_lazy_ents);
	free(set->ksym_memo);
	free(set->ksym_absent);
	free(set->ksym_full_path);
	free(set->ksym_tab_path);
	set->ksym_tab_path = NULL;
	set->ksym_tab_key = 0;
	set->ksyms = NULL;
	set->ksym_lazy = false;
	set->ksym_lazy_ents = NULL;
	set->nksym_lazy = 0;
	set->ksym_lazy_asked = 0;
	set->ksym_memo = NULL;
	set->ksym_absent = NULL;
	set->nksyms = 0;
	set->ksym_built = false;
	set->ksym_text = NULL;
	set->ksym_len = 0;
	set->ksym_owned = false;
	set->ksym_partial = false;
	set->ksym_full_built = false;
	set->ksym_img_whole = false;
	set->ksym_full_split = false;
	set->ksym_region = NULL;
	set->ksym_region_len = 0;
	set->ksym_img_len = 0;
	set->ksym_full_off = 0;
	set->ksym_full_len = 0;
	set->ksym_full_path = NULL;
	set->ksym_full = NULL;
	set->nksym_full = 0;
	set->ksym_source = NULL;
	set->ksym_source_arg = NULL;
	__atomic_store_n(&set->ksym_pending, false, __ATOMIC_RELEASE);
}

/* The source's text, taken now (ksym_lock held). */
static void ksym_fetch_locked(struct tk_event_set *set)
{
	const char *text = NULL;
	size_t len = 0;

	if (!set->ksym_pending)
		return;
	if (set->ksym_source(set->ksym_source_arg, &text, &len) == 0 && text) {
		set->ksym_text = (char *)text;
		set->ksym_len = strnlen(text, len);
		set->ksym_owned = false;
	}
	__atomic_store_n(&set->ksym_pending, false, __ATOMIC_RELEASE);
}

/* Before anything reads ksym_text: a pending source is asked, once. */
static void ksym_fetch(struct tk_event_set *set)
{
	if (__builtin_expect(!__atomic_load_n(&set->ksym_pending, __ATOMIC_ACQUIRE), 1))
		return;
	pthread_mutex_lock(&set->ksym_lock);
	ksym_fetch_locked(set);
	pthread_mutex_unlock(&set->ksym_lock);
}

static void ksym_go_full(struct tk_event_set *set);

/* Everything that looked names up in the kallsyms before does it again. */
static void ksym_reload(struct tk_event_set *set)
{
	if (set->ksym_tep_loaded) {
		set->ksym_tep_loaded = false;
		tk_event_ksym_load_tep(set);
	}
	for (size_t i = 0; i < set->count; i++)
		tk_event_ksym_atoms_resolve(set, set->events[i]);
}

static void ksym_reset(struct tk_event_set *set, const char *text, size_t len, bool owned)
{
	ksym_drop(set);
	set->ksym_text = (char *)text;
	set->ksym_owned = owned;
	set->ksym_len = len;
	ksym_reload(set);
}

/*
 * Whether every name the compiled events read the address of (jiffies,
 * vmemmap_base) is on a line of the image @text, or on no line of the
 * whole text @path either (tk_ksyms_past_image_lacks()): any other name it
 * lacks is looked for in the whole text at once (kernels built without
 * KALLSYMS_ALL list no such variable, and the kmem events name
 * vmemmap_base), so the image alone would be read for nothing.
 */
static bool ksym_image_names_atoms(const struct tk_event_set *set, const char *text, size_t len,
				   const char *path)
{
	char line[258];

	for (size_t i = 0; i < set->count; i++) {
		const struct tk_event *ev = set->events[i];

		if (!ev || !ev->atom_names)
			continue;
		for (size_t j = 0; j < ev->nexprs; j++) {
			const char *name = ev->atom_names + ev->exprs[j].off;
			size_t n;

			if (ev->exprs[j].kind != TK_EXPR_KSYM)
				continue;
			n = strlen(name);
			if (n > sizeof(line) - 2)
				return false;
			line[0] = ' ';
			memcpy(line + 1, name, n);
			line[n + 1] = '\n';
			if (!memmem(text, len, line, n + 2) &&
			    !tk_ksyms_past_image_lacks(path, name))
				return false;
		}
	}
	return true;
}

/*
 * The image's lines are mapped at the start of a reservation with room
 * for a whole kallsyms after them (a kernel's is ~5-10 MB), so the text
 * never moves while printers on other threads read names from it.
 */
#define KSYM_ROOM ((size_t)1 << 30)

int tk_event_set_add_kallsyms_image(struct tk_event_set *set, const char *text, size_t len,
				    void *map, size_t map_len, const char *full_path)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), mapped = (map_len + pg - 1) / pg * pg;
	size_t text_off = (size_t)(text - (const char *)map);
	void *region;
	char *path;

	if (!len || text < (const char *)map || text_off + len > map_len ||
	    mapped + KSYM_ROOM > UINT32_MAX)
		return -1;
	if (!ksym_image_names_atoms(set, text, len, full_path))
		return -1;
	path = strdup(full_path);
	if (!path)
		return -1;
	region = mmap(NULL, mapped + KSYM_ROOM, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region == MAP_FAILED) {
		free(path);
		return -1;
	}
	/* The copy's pages move into the reservation's first ones: no byte is copied. */
	if (mremap(map, mapped, mapped, MREMAP_MAYMOVE | MREMAP_FIXED, region) == MAP_FAILED) {
		munmap(region, mapped + KSYM_ROOM);
		free(path);
		return -1;
	}
	ksym_drop(set);
	set->ksym_region = region;
	set->ksym_region_len = mapped + KSYM_ROOM;
	set->ksym_text = (char *)region + text_off;
	/* The whole reservation is readable: names are read 32 bytes at a time. */
	set->ksym_len = set->ksym_region_len - text_off;
	set->ksym_partial = true;
	set->ksym_img_len = len;
	set->ksym_full_off = mapped - text_off;
	set->ksym_full_path = path;
	ksym_reload(set);
	return 0;
}

int tk_event_set_add_kallsyms(struct tk_event_set *set, const char *text, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return tk_fail(ENOMEM, "cannot copy kallsyms");
	memcpy(copy, text, len);
	copy[len] = '\0';
	/* Text past a NUL is invisible to libtraceevent; keep both views alike. */
	ksym_reset(set, copy, strlen(copy), true);
	return 0;
}

int tk_event_set_add_kallsyms_borrowed(struct tk_event_set *set, const char *text, size_t len)
{
	ksym_reset(set, text, strnlen(text, len), false);
	return 0;
}

int tk_event_set_add_kallsyms_source(struct tk_event_set *set,
				     int (*get)(void *arg, const char **text, size_t *len),
				     void *arg)
{
	ksym_drop(set);
	set->ksym_source = get;
	set->ksym_source_arg = arg;
	__atomic_store_n(&set->ksym_pending, true, __ATOMIC_RELEASE);
	ksym_reload(set);
	return 0;
}

void tk_event_ksym_load_tep(struct tk_event_set *set)
{
	const char *text;
	size_t len;
	char *copy;

	ksym_fetch(set);
	text = set->ksym_text;
	len = set->ksym_len;
	if (set->ksym_tep_loaded || !set->ksym_text)
		return;
	set->ksym_tep_loaded = true;
	if (set->ksym_partial) {
		/* libtraceevent's lookups are not ours: it gets the whole text. */
		ksym_go_full(set);
		text = set->ksym_text + set->ksym_full_off;
		len = set->ksym_full_len;
		if (set->ksym_full_split) {
			/* The image's lines, then the rest kept at ksym_full_off. */
			size_t img = set->ksym_img_len;

			copy = malloc(len + 1);
			if (!copy)
				return;
			memcpy(copy, set->ksym_text, img);
			memcpy(copy + img, text, len - img);
			copy[len] = '\0';
			tep_parse_kallsyms(set->tep, copy);
			free(copy);
			return;
		}
	} else if (set->ksym_owned) {
		tep_parse_kallsyms(set->tep, set->ksym_text);
		return;
	}
	/*
	 * libtraceevent wants a C string, and borrowed text may not end in a
	 * NUL: a copy, for the parse only (libtraceevent keeps copies of the
	 * names, not the text).
	 */
	copy = strndup(text, len);
	if (!copy)
		return; /* no symbols for libtraceevent: addresses print as numbers */
	tep_parse_kallsyms(set->tep, copy);
	free(copy);
}

static inline bool ks_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Hex digit values plus one, 0 for anything else. */
static const uint8_t hexv[256] = {
	['0'] = 1,  ['1'] = 2,	['2'] = 3,  ['3'] = 4,	['4'] = 5,  ['5'] = 6,
	['6'] = 7,  ['7'] = 8,	['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
	['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static inline int ks_xdigit(unsigned char c)
{
	return (int)hexv[c] - 1;
}

/*
 * Sort by address, later lines first among equal addresses (libtraceevent
 * lists names newest first). An LSD radix sort, stable, over the table
 * reversed: a fraction of qsort()'s work on a kernel's 150 k symbols, and
 * passes over bytes all keys share (the top ones) are skipped.
 */
static void ksym_reverse(struct tk_ksym *tab, size_t n)
{
	for (size_t i = 0, j = n - 1; n && i < j; i++, j--) {
		struct tk_ksym t = tab[i];

		tab[i] = tab[j];
		tab[j] = t;
	}
}

static bool ksym_sort(struct tk_ksym *tab, size_t n, bool ordered, bool ties)
{
	uint32_t count[8][256]; /* 8 KiB */
	struct tk_ksym *tmp, *src = tab, *dst;

	/*
	 * /proc/kallsyms lists addresses in order (checked on 6.1 and 6.18),
	 * which the parse noted (@ordered: no address below the one before,
	 * @ties: some equal to it): then reversing each run of equal
	 * addresses is the whole sort.
	 */
	if (ordered && !ties)
		return true;
	if (ordered) {
		for (size_t a = 0, b; a < n; a = b) {
			for (b = a + 1; b < n && tab[b].addr == tab[a].addr; b++)
				;
			ksym_reverse(tab + a, b - a);
		}
		return true;
	}
	ksym_reverse(tab, n);
	tmp = tk_big_alloc(n * sizeof(*tmp));
	if (!tmp)
		return false;
	dst = tmp;
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++) {
		for (int b = 0; b < 8; b++)
			count[b][(tab[i].addr >> (8 * b)) & 0xff]++;
	}
	for (int b = 0; b < 8; b++) {
		uint32_t pos = 0;

		if (count[b][(tab[0].addr >> (8 * b)) & 0xff] == n)
			continue;
		for (int k = 0; k < 256; k++) {
			uint32_t c = count[b][k];

			count[b][k] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[b][(src[i].addr >> (8 * b)) & 0xff]++] = src[i];
		{
			struct tk_ksym *t = src;

			src = dst;
			dst = t;
		}
	}
	if (src != tab)
		memcpy(tab, src, n * sizeof(*tab));
	tk_big_free(tmp);
	return true;
}

/*
 * The first white space at or after @p (or @len). Eight bytes at a time:
 * white space is below 0x21, and the lowest byte the word test flags is
 * the first below 0x21 (little endian); a control character there is not
 * white space, and the search goes on from it byte by byte.
 */
static size_t ks_name_end(const char *t, size_t p, size_t len)
{
#if defined(__SSE2__)
	/*
	 * Sixteen bytes at a time where they are there: most names end in the
	 * first or second block. A byte is flagged when min(byte, 0x20) is
	 * the byte, i.e. unsigned byte <= 0x20; a flagged control character
	 * is no white space, and the search goes on after it.
	 */
	const __m128i blank = _mm_set1_epi8(0x20);

	while (len - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(t + p));
		unsigned int hit =
			(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, blank), x));

		if (hit) {
			p += (size_t)__builtin_ctz(hit);
			if (ks_space((unsigned char)t[p]))
				return p;
			p++;
			continue;
		}
		p += 16;
	}
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;

	while (len - p >= 8) {
		uint64_t w, hit;

		memcpy(&w, t + p, 8);
		hit = (w - ones * 0x21) & ~w & highs;
		if (hit) {
			p += (size_t)__builtin_ctzll(hit) / 8;
			if (ks_space((unsigned char)t[p]))
				return p;
			p++;
			continue;
		}
		p += 8;
	}
#endif
	while (p < len && !ks_space((unsigned char)t[p]))
		p++;
	return p;
}

/*
 * Eight lowercase hex digits (the kernel prints kallsyms with %016lx) as
 * their value, or false when a byte is anything else. Word-wide: every
 * byte test adds to the low seven bits only, so no carry crosses bytes,
 * and a digit's value is its low nibble, plus 9 for the letters.
 */
static inline bool ks_hex8_lower(const unsigned char *u, uint32_t *out)
{
	const uint64_t h = 0x8080808080808080ull, lo7 = 0x7f7f7f7f7f7f7f7full,
		       ones = 0x0101010101010101ull;
	uint64_t w, c, digit, letter, v;

	memcpy(&w, u, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	c = w & lo7;
	/* c >= a: (c + 0x80 - a) & 0x80; c <= b: ~(c + 0x7f - b) & 0x80. */
	digit = (c + ones * (0x80 - '0')) & ~(c + ones * (0x7f - '9'));
	letter = (c + ones * (0x80 - 'a')) & ~(c + ones * (0x7f - 'f'));
	if (((digit | letter) & ~w & h) != h)
		return false;
	v = (w & ones * 0x0f) + ((w >> 6) & ones) * 9;
	/* The first byte is the most significant digit: pair, then pair the pairs. */
	v = ((v << 4) | (v >> 8)) & 0x00ff00ff00ff00ffull;
	v = ((v << 8) | (v >> 16)) & 0x0000ffff0000ffffull;
	*out = (uint32_t)((v << 16) | (v >> 32));
	return true;
}

/*
 * The kernel writes every line as "%016lx %c %s" (and "\t[mod]"): such a
 * line is read with a fixed layout, 16 digits eight at a time.
 * Return: the name's offset, or 0 when the line is not of that shape (the
 * general parser then reads it, with the same result for every line this
 * accepts: 16 digits, single blanks, a type and a name that are not blank).
 */
/*
 * The high eight digits of the last line read fast: nearly every line
 * shares them ("ffffffff"), and the same bytes need no second reading.
 */
struct ks_high {
	uint64_t raw;
	uint32_t val;
	bool ok;
};

/* Inlined in the parse's loop, which it is most of, however many call it. */
static inline __attribute__((always_inline)) size_t ksym_line_fast(const char *t, size_t pos,
								   size_t len, struct ks_high *hi,
								   uint64_t *addr, char *type)
{
	const unsigned char *u = (const unsigned char *)t + pos;
	uint32_t low;
	uint64_t raw;

	/* ks_space() covers '\n' too. */
	if (len - pos < 20 || u[16] != ' ' || u[18] != ' ' || ks_space(u[17]) || ks_space(u[19]))
		return 0;
	memcpy(&raw, u, 8);
	if (!hi->ok || raw != hi->raw) {
		hi->ok = ks_hex8_lower(u, &hi->val);
		hi->raw = raw;
		if (!hi->ok)
			return 0;
	}
	if (!ks_hex8_lower(u + 8, &low))
		return 0;
	*addr = (uint64_t)hi->val << 32 | low;
	*type = (char)u[17];
	return pos + 19;
}

/*
 * Parse the lines as tep_parse_kallsyms() does: "ADDR TYPE NAME [MOD]",
 * at most 16 hex digits, names starting with '$' and 'A'/'a' symbols
 * skipped, parsing stops at the first malformed line. Called once (under
 * ksym_lock): the tables are published by the release store of ksym_built.
 */
static struct tk_ksym *ksym_parse(const char *t, size_t pos, size_t len, size_t *count,
				  size_t *stop)
{
	size_t n = 0, cap = 1;
	struct tk_ksym *tab = NULL;
	struct ks_high hi = {0};
	bool ordered = true, ties = false;

	*count = 0;
	if (stop)
		*stop = pos;
	if (!t || len > UINT32_MAX || pos > len)
		return NULL;
	/*
	 * An entry takes four bytes at least ("1ta\n"): the table is mapped
	 * once at that bound instead of counting lines first, and only the
	 * pages the entries reach are touched (huge pages, bigbuf.h).
	 */
	cap = (len - pos) / 4 + 2;
	tab = tk_big_alloc(cap * sizeof(*tab));
	if (!tab) {
		/* Too much to map at the bound (a huge section): count the lines. */
		cap = 1;
		for (const char *p = t + pos; (p = memchr(p, '\n', len - (size_t)(p - t))); p++)
			cap++;
		tab = tk_big_alloc(cap * sizeof(*tab));
	}
	if (!tab)
		return NULL;
	while (pos < len) {
		size_t p, ns, ne, end;
		uint64_t addr = 0;
		const char *nl;
		char type;

		ns = ksym_line_fast(t, pos, len, &hi, &addr, &type);
		if (!ns) {
			int digits = 0, x;

			nl = memchr(t + pos, '\n', len - pos);
			end = nl ? (size_t)(nl - t) : len;
			if (end == pos) {
				pos = end + 1;
				continue;
			}
			p = pos;
			while (p < end && ks_space((unsigned char)t[p]))
				p++;
			while (p < end && digits < 16 &&
			       (x = ks_xdigit((unsigned char)t[p])) >= 0) {
				addr = addr << 4 | (uint64_t)x;
				digits++;
				p++;
			}
			while (p < end && ks_space((unsigned char)t[p]))
				p++;
			if (!digits || p >= end)
				break;
			type = t[p++];
			while (p < end && ks_space((unsigned char)t[p]))
				p++;
			ns = p;
			if (p >= end)
				break;
		}
		/* The name runs to white space: measured here, once. */
		ne = ks_name_end(t, ns, len);
		/* Most lines end right after the name; module names follow a tab. */
		if (ne < len && t[ne] == '\n') {
			end = ne;
		} else {
			nl = memchr(t + ne, '\n', len - ne);
			end = nl ? (size_t)(nl - t) : len;
		}
		if (t[ns] != '$' && type != 'A' && type != 'a') {
			if (n) {
				ordered &= addr >= tab[n - 1].addr;
				ties |= addr == tab[n - 1].addr;
			}
			tab[n].addr = addr;
			tab[n].name_off = (uint32_t)ns;
			tab[n].name_len = (uint32_t)(ne - ns);
			n++;
		}
		pos = end + 1;
	}
	/* Where the parse ended: @len when every line was read. */
	if (stop)
		*stop = pos < len ? pos : len;
	if (n > 1 && !ksym_sort(tab, n, ordered, ties)) {
		/* Out of memory: no symbols (addresses print as numbers) beats wrong ones. */
		tk_big_free(tab);
		return NULL;
	}
	*count = n;
	return tab;
}

/*
 * The lazy table. A kernel writes its kallsyms in its own layout and in
 * address order, and a report looks up a few distinct addresses of its
 * 120 k lines (1-17 on the bench families' files), where the table costs
 * ~147 instructions a line. So a text whose every line is in that layout
 * (16 lowercase digits, lines of 20 bytes or more) with addresses that
 * never decrease is only checked (ksym_lazy_check()), and each lookup
 * binary-searches its lines (ksym_lazy_answer()) for the answer
 * ksym_search() gives on the table: at an address no entry holds, the
 * earliest line of the highest entry address below it, provided some
 * entry lies above; at an address one entry holds, that entry. An address
 * several entries hold (the search's probe path picks among them), a
 * name's address, or more than KSYM_LAZY_MAX lookups build the table.
 */
#define KSYM_LAZY_MAX  1024u
#define KSYM_LAZY_WALK 64u /* lines a lookup steps over around the search's one */

/* The 16 digits at @u as two words that order as their values do (lowercase hex sorts as bytes). */
static inline void ks_digits_key(const unsigned char *u, uint64_t *hi, uint64_t *lo)
{
	uint64_t a, b;

	memcpy(&a, u, 8);
	memcpy(&b, u + 8, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	a = __builtin_bswap64(a);
	b = __builtin_bswap64(b);
#endif
	*hi = a;
	*lo = b;
}

/* Whether the line at @u (20 bytes or more) is one ksym_line_fast() reads. */
static inline bool ks_line_kernel(const unsigned char *u)
{
	if (u[16] != ' ' || u[18] != ' ' || ks_space(u[17]) || ks_space(u[19]))
		return false;
#if defined(__SSE2__)
	/* A byte minus '0' at most 9, or minus 'a' at most 5 (unsigned). */
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)u);
	__m128i d = _mm_sub_epi8(x, _mm_set1_epi8('0')), l = _mm_sub_epi8(x, _mm_set1_epi8('a'));
	__m128i ok = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d),
				  _mm_cmpeq_epi8(_mm_min_epu8(l, _mm_set1_epi8(5)), l));

	return _mm_movemask_epi8(ok) == 0xffff;
#else
	uint32_t v;

	return ks_hex8_lower(u, &v) && ks_hex8_lower(u + 8, &v);
#endif
}

/* The start of the line after the '\n' at or after @p, or @len. */
static inline size_t ks_line_next(const char *t, size_t p, size_t len)
{
	const char *q;

#if defined(__SSE2__)
	const __m128i nl = _mm_set1_epi8('\n');

	while (len - p >= 16) {
		unsigned int hit = (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(t + p)), nl));

		if (hit)
			return p + (size_t)__builtin_ctz(hit) + 1;
		p += 16;
	}
#endif
	q = memchr(t + p, '\n', len - p);
	return q ? (size_t)(q - t) + 1 : len;
}

/*
 * Whether every line of @t is in the kernel's layout and no address is
 * below the one before: one pass, ~40 instructions a line.
 */
static bool ksym_lazy_check(const char *t, size_t len)
{
	uint64_t ph = 0, pl = 0, h, l;

	if (!t || len > UINT32_MAX)
		return false;
	for (size_t pos = 0; pos < len; pos = ks_line_next(t, pos + 20, len)) {
		const unsigned char *u = (const unsigned char *)t + pos;

		if (len - pos < 20 || !ks_line_kernel(u))
			return false;
		ks_digits_key(u, &h, &l);
		if (h < ph || (h == ph && l < pl))
			return false;
		ph = h;
		pl = l;
	}
	return true;
}

/* The start of the line before the one at @s > 0 (of a checked text). */
static inline size_t ks_line_prev(const char *t, size_t s)
{
	const char *q = memrchr(t, '\n', s - 1);

	return q ? (size_t)(q - t) + 1 : 0;
}

/* Whether the parse makes an entry of the checked line at @s. */
static inline bool ks_line_entry(const char *t, size_t s)
{
	return t[s + 19] != '$' && t[s + 17] != 'A' && t[s + 17] != 'a';
}

static inline uint64_t ks_line_addr(const char *t, size_t s)
{
	uint32_t hi = 0, lo = 0;

	(void)ks_hex8_lower((const unsigned char *)t + s, &hi);
	(void)ks_hex8_lower((const unsigned char *)t + s + 8, &lo);
	return (uint64_t)hi << 32 | lo;
}

static inline int ks_line_cmp(const char *t, size_t s, uint64_t kh, uint64_t kl)
{
	uint64_t h, l;

	ks_digits_key((const unsigned char *)t + s, &h, &l);
	if (h != kh)
		return h < kh ? -1 : 1;
	return l < kl ? -1 : l > kl;
}

/*
 * What ksym_search() gives @addr on the table of the checked text, from
 * the text (ksym_lock held): true with *@found and @out the entry, or
 * false when the table must answer (an address several entries hold, or
 * more than KSYM_LAZY_WALK lines around the search's).
 */
static bool ksym_lazy_answer(const struct tk_event_set *set, uint64_t addr, struct tk_ksym *out,
			     bool *found)
{
	const char *t = set->ksym_text, *q;
	size_t len = set->ksym_len, lo = 0, hi = len, mid, s, e, p;
	unsigned int walk = 0;
	uint64_t kh, kl, a;
	unsigned char key[16];

	*found = false;
	for (int i = 0; i < 16; i++)
		key[15 - i] = (unsigned char)"0123456789abcdef"[(addr >> (4 * i)) & 15];
	ks_digits_key(key, &kh, &kl);
	if (!len || ks_line_cmp(t, 0, kh, kl) > 0)
		return true;
	/* The last line at or below @addr: lo is one, hi is @len or a line above it. */
	for (;;) {
		mid = lo + (hi - lo) / 2;
		q = memchr(t + mid, '\n', hi - mid);
		s = q ? (size_t)(q - t) + 1 : hi;
		if (s >= hi) {
			q = memrchr(t + lo, '\n', mid - lo);
			if (!q)
				break;
			s = (size_t)(q - t) + 1;
		}
		if (ks_line_cmp(t, s, kh, kl) <= 0)
			lo = s;
		else
			hi = s;
	}
	/* The last entry at or below @addr: none, and the search finds nothing. */
	for (e = lo; !ks_line_entry(t, e); e = ks_line_prev(t, e)) {
		if (!e)
			return true;
		if (++walk > KSYM_LAZY_WALK)
			return false;
	}
	a = ks_line_addr(t, e);
	if (a == addr) {
		/* Held by this entry alone, or the probe path decides. */
		for (p = e; p;) {
			p = ks_line_prev(t, p);
			if (ks_line_addr(t, p) != a)
				break;
			if (ks_line_entry(t, p) || ++walk > KSYM_LAZY_WALK)
				return false;
		}
	} else {
		/* Above the last entry the search's bound is 0: nothing found. */
		for (p = ks_line_next(t, lo + 20, len);; p = ks_line_next(t, p + 20, len)) {
			if (p >= len)
				return true;
			if (ks_line_entry(t, p))
				break;
			if (++walk > KSYM_LAZY_WALK)
				return false;
		}
		/* The table lists equal addresses later line first: the search stops at the
		 * earliest. */
		for (p = e; p;) {
			p = ks_line_prev(t, p);
			if (ks_line_addr(t, p) != a)
				break;
			if (ks_line_entry(t, p))
				e = p;
			if (++walk > KSYM_LAZY_WALK)
				return false;
		}
	}
	out->addr = a;
	out->name_off = (uint32_t)(e + 19);
	out->name_len = (uint32_t)(ks_name_end(t, e + 19, len) - (e + 19));
	*found = true;
	return true;
}

/*
 * The image's table kept between reports (tk_event_set_kallsyms_table()):
 * parsing the 120 k lines (~20 M instructions) also touched every page
 * of the copy's 5 MB text, where a report that names a few hundred
 * addresses reads the pages of those names only. The file is this
 * header, then the entries (struct tk_ksym, this machine's byte order).
 * It is read with pread() (a first touch of a mapped page costs more than
 * the copy) and taken only when its key and image length are the set's,
 * every name lies inside the image, the addresses are sorted and three
 * entries name whole words of the text; else the lines are parsed again.
 */
#define KSYM_TAB_MAGIC "TKKSTB01"

struct ksym_tab_header {
	char magic[8];
	uint64_t key;
	uint64_t img_len;
	uint64_t n;
	uint64_t whole; /* the lines parsed to their end */
};

static bool ksym_tab_names_word(const struct tk_event_set *set, const struct tk_ksym *k)
{
	size_t end = (size_t)k->name_off + k->name_len;

	return k->name_off && ks_space((unsigned char)set->ksym_text[k->name_off - 1]) &&
	       (end == set->ksym_img_len || ks_space((unsigned char)set->ksym_text[end]));
}

static bool ksym_tab_load(struct tk_event_set *set)
{
	struct ksym_tab_header h;
	struct tk_ksym *tab = NULL;
	bool ok = false;
	struct stat st;
	int fd = open(set->ksym_tab_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (fstat(fd, &st) || tk_pread_full(fd, &h, sizeof(h), 0) != (int64_t)sizeof(h) ||
	    memcmp(h.magic, KSYM_TAB_MAGIC, 8) || h.key != set->ksym_tab_key ||
	    h.img_len != set->ksym_img_len || h.n > h.img_len / 4 + 2 || h.whole > 1 ||
	    (uint64_t)st.st_size != sizeof(h) + h.n * sizeof(*tab))
		goto out;
	tab = tk_big_alloc(h.n ? h.n * sizeof(*tab) : 1);
	if (!tab ||
	    tk_pread_full(fd, tab, h.n * sizeof(*tab), sizeof(h)) != (int64_t)(h.n * sizeof(*tab)))
		goto out;
	for (size_t i = 0; i < h.n; i++) {
		if ((uint64_t)tab[i].name_off + tab[i].name_len > h.img_len ||
		    (i && tab[i].addr < tab[i - 1].addr))
			goto out;
	}
	if (h.n &&
	    (!ksym_tab_names_word(set, &tab[0]) || !ksym_tab_names_word(set, &tab[h.n / 2]) ||
	     !ksym_tab_names_word(set, &tab[h.n - 1])))
		goto out;
	set->ksyms = tab;
	set->nksyms = (size_t)h.n;
	set->ksym_img_whole = h.whole;
	tab = NULL;
	ok = true;
out:
	tk_big_free(tab);
	close(fd);
	return ok;
}

static void ksym_tab_save(const struct tk_event_set *set)
{
	struct ksym_tab_header h = {.key = set->ksym_tab_key,
				    .img_len = set->ksym_img_len,
				    .n = set->nksyms,
				    .whole = set->ksym_img_whole};
	size_t len = sizeof(h) + set->nksyms * sizeof(*set->ksyms);
	uint8_t *buf;

	if (!set->ksyms || !(buf = malloc(len)))
		return;
	memcpy(h.magic, KSYM_TAB_MAGIC, 8);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), set->ksyms, set->nksyms * sizeof(*set->ksyms));
	/* Another report may write it at the same time: the same bytes, renamed whole. */
	(void)tk_write_file_atomic(set->ksym_tab_path, buf, len, 0644);
	free(buf);
}

int tk_event_set_kallsyms_table(struct tk_event_set *set, const char *path, uint64_t key)
{
	char *p;

	if (!set->ksym_partial)
		return 0;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	free(set->ksym_tab_path);
	set->ksym_tab_path = p;
	set->ksym_tab_key = key;
	return 0;
}

/* The table of the set's text (its image lines only, when partial), or the lazy one's check. */
static void ksym_build(struct tk_event_set *set)
{
	size_t len, stop;

	ksym_fetch_locked(set);
	len = set->ksym_partial ? set->ksym_img_len : set->ksym_len;
	if (set->ksym_partial && set->ksym_tab_path && ksym_tab_load(set)) {
		set->ksym_memo = calloc(TK_KSYM_MEMO, sizeof(*set->ksym_memo));
		__atomic_store_n(&set->ksym_built, true, __ATOMIC_RELEASE);
		return;
	}
	if (!set->ksym_partial && ksym_lazy_check(set->ksym_text, len) &&
	    (set->ksym_lazy_ents = malloc(KSYM_LAZY_MAX * sizeof(*set->ksym_lazy_ents)))) {
		set->ksym_lazy = true;
		set->ksym_memo = calloc(TK_KSYM_MEMO, sizeof(*set->ksym_memo));
		__atomic_store_n(&set->ksym_built, true, __ATOMIC_RELEASE);
		return;
	}
	set->ksyms = ksym_parse(set->ksym_text, 0, len, &set->nksyms, &stop);
	set->ksym_img_whole = set->ksym_partial && stop == len;
	if (set->ksym_partial && set->ksym_tab_path)
		ksym_tab_save(set);
	/* Without the memo every lookup searches: slower, same text. */
	if (set->ksym_text)
		set->ksym_memo = calloc(TK_KSYM_MEMO, sizeof(*set->ksym_memo));
	__atomic_store_n(&set->ksym_built, true, __ATOMIC_RELEASE);
}

/*
 * The whole text, after the image's lines (where no name a printer may
 * hold moves), and its table, published once (under ksym_lock). It
 * begins with the image's lines byte for byte where the copy is valid:
 * then only what follows them is kept (at ksym_full_off) and parsed, and
 * the whole table is the image's entries, then those of the rest, which
 * is what a parse of the whole gives when the image's lines parsed to
 * their end and every other entry lies above them (ksyms-copy.c). A
 * kmem report, which reads the whole text for a name the image lacks
 * (vmemmap_base), so holds ~5 MB less. Else the whole text is kept
 * there. An unreadable text leaves an empty table: the addresses the
 * image could not answer print as numbers, as with no kallsyms at all.
 */
#define KSYM_CHUNK ((size_t)64 << 10)

static bool ksym_full_read(struct tk_event_set *set, char *dst, size_t room, size_t *kept,
			   bool *split)
{
	const char *img = set->ksym_text;
	size_t img_len = set->ksym_img_len, got = 0;
	bool ok = true, nul = false;
	char *buf = malloc(KSYM_CHUNK);
	int fd = open(set->ksym_full_path, O_RDONLY | O_CLOEXEC);

	*kept = 0;
	*split = set->ksym_img_whole && img_len && img[img_len - 1] == '\n';
	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (ok && !nul) {
		ssize_t n = read(fd, buf, KSYM_CHUNK);
		size_t m, i = 0;
		const char *z;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = n == 0;
			break;
		}
		m = (size_t)n;
		/* Text past a NUL is invisible to libtraceevent; keep both views alike. */
		if ((z = memchr(buf, '\0', m))) {
			m = (size_t)(z - buf);
			nul = true;
		}
		if (*split && got < img_len) {
			i = m < img_len - got ? m : img_len - got;
			if (memcmp(buf, img + got, i)) {
				/* Not the image's lines: all is kept, what was read first. */
				*split = false;
				i = 0;
				if (got > room) {
					ok = false;
					break;
				}
				memcpy(dst, img, got);
				*kept = got;
			}
		}
		if (m - i > room - *kept) {
			ok = false;
			break;
		}
		memcpy(dst + *kept, buf + i, m - i);
		*kept += m - i;
		got += m;
	}
	free(buf);
	close(fd);
	if (ok && *split && got < img_len) {
		/* Shorter than the image's lines: all of it is their beginning. */
		*split = false;
		memcpy(dst, img, got);
		*kept = got;
	}
	return ok;
}

static void ksym_full_build(struct tk_event_set *set)
{
	char *dst = set->ksym_text + set->ksym_full_off;
	size_t room = set->ksym_region_len - set->ksym_full_off -
		      (size_t)(set->ksym_text - (char *)set->ksym_region);
	size_t kept, img_len = set->ksym_img_len, nrest = 0;
	struct tk_ksym *rest = NULL;
	bool split;

	/* The image's table first: the whole one starts with it. */
	if (!set->ksym_built)
		ksym_build(set);
	if (!ksym_full_read(set, dst, room, &kept, &split) ||
	    set->ksym_full_off + kept > UINT32_MAX)
		goto out;
	if (split) {
		rest = ksym_parse(set->ksym_text, set->ksym_full_off, set->ksym_full_off + kept,
				  &nrest, NULL);
		split = (rest || !nrest) &&
			(!nrest || !set->nksyms ||
			 rest[0].addr > set->ksyms[set->nksyms - 1].addr) &&
			(set->ksym_full = tk_big_alloc((set->nksyms + nrest + 1) * sizeof(*rest)));
		if (split) {
			memcpy(set->ksym_full, set->ksyms, set->nksyms * sizeof(*rest));
			if (nrest)
				memcpy(set->ksym_full + set->nksyms, rest, nrest * sizeof(*rest));
			set->nksym_full = set->nksyms + nrest;
			set->ksym_full_len = img_len + kept;
			set->ksym_full_split = true;
			tk_big_free(rest);
			goto out;
		}
		tk_big_free(rest);
		/* The rest goes after a copy of the image's lines, as the whole text. */
		if (img_len > room - kept)
			goto out;
		memmove(dst + img_len, dst, kept);
		memcpy(dst, set->ksym_text, img_len);
		kept += img_len;
		if (set->ksym_full_off + kept > UINT32_MAX)
			goto out;
	}
	set->ksym_full_len = kept;
	set->ksym_full = ksym_parse(set->ksym_text, set->ksym_full_off, set->ksym_full_off + kept,
				    &set->nksym_full, NULL);
out:
	__atomic_store_n(&set->ksym_full_built, true, __ATOMIC_RELEASE);
}

static void ksym_go_full(struct tk_event_set *set)
{
	pthread_mutex_lock(&set->ksym_lock);
	if (!set->ksym_full_built)
		ksym_full_build(set);
	pthread_mutex_unlock(&set->ksym_lock);
}

/*
 * libtraceevent runs glibc's bsearch() with a comparator that matches an
 * entry when addr equals it or lies strictly between it and the next
 * entry (the last compares against a zero sentinel, so addresses above
 * the last symbol are unknown). Among equal addresses the entry found
 * depends on the probe path, so the same halving is done here.
 */
static const struct tk_ksym *ksym_search(const struct tk_ksym *tab, size_t n, uint64_t addr)
{
	size_t l = 0, u = n;

	while (l < u) {
		size_t i = (l + u) / 2;
		const struct tk_ksym *k = &tab[i];
		uint64_t next = i + 1 < n ? tab[i + 1].addr : 0;

		if (addr == k->addr || (addr > k->addr && addr < next))
			return k;
		if (addr < k->addr)
			u = i;
		else
			l = i + 1;
	}
	return NULL;
}

/*
 * Traces print few distinct addresses (timer callbacks, call sites) many
 * times: a direct-mapped memo of the search's answer saves its ~17 probes.
 * The table is built on first use, once even when printers on several
 * threads ask at once; each such printer passes its own memo, the set's
 * serving the one thread that prints alone.
 */
void tk_event_ksym_prepare(struct tk_event_set *set)
{
	pthread_mutex_lock(&set->ksym_lock);
	if (!set->ksym_built)
		ksym_build(set);
	pthread_mutex_unlock(&set->ksym_lock);
}

/* The lazy table's end (ksym_lock held): the entries it gave stay, for the memos. */
static void ksym_table_locked(struct tk_event_set *set)
{
	set->ksyms = ksym_parse(set->ksym_text, 0, set->ksym_len, &set->nksyms, NULL);
	__atomic_store_n(&set->ksym_lazy, false, __ATOMIC_RELEASE);
}

void tk_event_ksym_table(struct tk_event_set *set)
{
	pthread_mutex_lock(&set->ksym_lock);
	if (!set->ksym_built)
		ksym_build(set);
	if (set->ksym_lazy)
		ksym_table_locked(set);
	pthread_mutex_unlock(&set->ksym_lock);
}

/*
 * A lookup the memo missed, while the table is lazy: answered from the
 * text (the same line's entry given once), or by the table it builds.
 */
static const struct tk_ksym *__attribute__((noinline))
ksym_find_lazy(struct tk_event_set *set, uint64_t addr)
{
	const struct tk_ksym *k = NULL;
	bool answered = false, found = false;
	struct tk_ksym ent;

	pthread_mutex_lock(&set->ksym_lock);
	if (set->ksym_lazy) {
		answered = set->ksym_lazy_asked < KSYM_LAZY_MAX &&
			   ksym_lazy_answer(set, addr, &ent, &found);
		if (answered)
			set->ksym_lazy_asked++;
		for (size_t i = 0; found && !k && i < set->nksym_lazy; i++)
			if (set->ksym_lazy_ents[i].name_off == ent.name_off)
				k = &set->ksym_lazy_ents[i];
		if (found && !k) {
			set->ksym_lazy_ents[set->nksym_lazy] = ent;
			k = &set->ksym_lazy_ents[set->nksym_lazy++];
		}
		if (!answered)
			ksym_table_locked(set);
	}
	pthread_mutex_unlock(&set->ksym_lock);
	return answered ? k : ksym_search(set->ksyms, set->nksyms, addr);
}

/*
 * The address libtraceevent's test_for_symbol() gives a name in a print
 * format: the first entry of that name in its address-sorted table (ours
 * is sorted the same way), 0 without one. Linear, as there: it runs once
 * per name and set, at compile time and when the kallsyms change.
 */
static const struct tk_ksym *ksym_named(const struct tk_event_set *set, const struct tk_ksym *tab,
					size_t count, const char *name, size_t n)
{
	for (size_t i = 0; i < count; i++)
		if (tab[i].name_len == n && !memcmp(set->ksym_text + tab[i].name_off, name, n))
			return &tab[i];
	return NULL;
}

/*
 * The first occurrence of @name (@n > 0 bytes) at or after @p in @t, or
 * @len. Sixteen places at a time where they are there: a place is tried
 * only where the name's first and last bytes both match (glibc's memmem()
 * read the 5 MB at ~2.3 instructions a byte).
 */
static size_t ks_find(const char *t, size_t len, size_t p, const char *name, size_t n)
{
	if (n > len)
		return len;
#if defined(__SSE2__)
	const __m128i first = _mm_set1_epi8(name[0]), last = _mm_set1_epi8(name[n - 1]);

	while (len - p >= n + 15) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(t + p));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(t + p + n - 1));
		unsigned int hit = (unsigned int)_mm_movemask_epi8(
			_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));

		for (; hit; hit &= hit - 1) {
			size_t q = p + (size_t)__builtin_ctz(hit);

			if (!memcmp(t + q, name, n))
				return q;
		}
		p += 16;
	}
#endif
	for (; len - p >= n; p++)
		if (t[p] == name[0] && !memcmp(t + p, name, n))
			return p;
	return len;
}

/*
 * Whether the parse could give some entry the name @name (@n > 0 bytes):
 * it names an entry by the bytes from a line's name start to the next
 * white space, so the text must hold @name followed by white space or its
 * end. A line in the kernel's own layout ("%016lx %c %s",
 * ksym_line_fast()) names only what starts at its 20th byte; any other
 * such occurrence may be a name, and the table decides. The parse's lines
 * start after each '\n' too. So a print format naming a variable of a
 * kernel built without KALLSYMS_ALL (the writeback events' jiffies) costs
 * a scan of the text instead of the table's build: no entry has that
 * name, and the address is 0 either way.
 */
static bool ksym_text_may_name(const char *t, size_t len, const char *name, size_t n)
{
	for (size_t q = 0; (q = ks_find(t, len, q, name, n)) < len; q++) {
		size_t ls = 0;
		const char *nl;
		struct ks_high hi = {0};
		uint64_t addr;
		char type;

		if (q + n < len && !ks_space((unsigned char)t[q + n]))
			continue;
		nl = memrchr(t, '\n', q);
		if (nl)
			ls = (size_t)(nl - t) + 1;
		if (!ksym_line_fast(t, ls, len, &hi, &addr, &type) || q == ls + 19)
			return true;
	}
	return false;
}

/*
 * Whether no entry of the table, not built yet, can be named @name: then
 * the scan stands in for the build. The last such name is remembered,
 * since several formats name the same variable (jiffies: one scan for
 * the five writeback events).
 */
static bool ksym_absent(struct tk_event_set *set, const char *name, size_t n)
{
	bool absent;

	/* The image's reservation (ksym_partial) is no text to scan: its tables answer. */
	if (!n || set->ksym_partial)
		return false;
	pthread_mutex_lock(&set->ksym_lock);
	absent = !set->ksym_built || set->ksym_lazy;
	if (absent && !(set->ksym_absent && !strcmp(set->ksym_absent, name))) {
		absent = !ksym_text_may_name(set->ksym_text, set->ksym_len, name, n);
		if (absent) {
			free(set->ksym_absent);
			set->ksym_absent = strdup(name);
		}
	}
	pthread_mutex_unlock(&set->ksym_lock);
	return absent;
}

uint64_t tk_event_ksym_addr(struct tk_event_set *set, const char *name)
{
	size_t n = strlen(name);
	const struct tk_ksym *k;

	ksym_fetch(set);
	if (!set->ksym_text)
		return 0;
	if (ksym_absent(set, name, n))
		return 0;
	tk_event_ksym_table(set);
	/* The image's lines come first in the whole table: a name found there is its first. */
	k = ksym_named(set, set->ksyms, set->nksyms, name, n);
	/* A name listed nowhere past the image's lines is the whole text's answer already. */
	if (!k && set->ksym_partial && !__atomic_load_n(&set->ksym_full_built, __ATOMIC_ACQUIRE) &&
	    tk_ksyms_past_image_lacks(set->ksym_full_path, name))
		return 0;
	if (!k && set->ksym_partial) {
		ksym_go_full(set);
		k = ksym_named(set, set->ksym_full, set->nksym_full, name, n);
	}
	return k ? k->addr : 0;
}

/* Look the names of @ev's program up again, in the set's kallsyms as they are now. */
void tk_event_ksym_atoms_resolve(struct tk_event_set *set, struct tk_event *ev)
{
	if (!ev->atom_names)
		return;
	for (size_t i = 0; i < ev->nexprs; i++)
		if (ev->exprs[i].kind == TK_EXPR_KSYM)
			ev->exprs[i].val =
				tk_event_ksym_addr(set, ev->atom_names + ev->exprs[i].off);
}

/*
 * Whether the image's lines give @addr the answer (@k) the whole text
 * would. The whole table begins with the image's entries, in the same
 * order, and every other entry lies above them (ksyms-copy.c), so the
 * search's answer is the same unless it depends on what follows the
 * image (an address above its last symbol) or on the search's probe
 * path, which the table's length changes: an address several names share.
 */
static bool ksym_image_answers(const struct tk_event_set *set, const struct tk_ksym *k,
			       uint64_t addr)
{
	const struct tk_ksym *v = set->ksyms, *last = v + set->nksyms - 1;

	if (!set->nksyms)
		return false;
	if (!k)
		return addr < v[0].addr;
	if (addr != k->addr)
		return k != last;
	return (k == v || k[-1].addr != addr) && (k == last || k[1].addr != addr);
}

static const struct tk_ksym *__attribute__((noinline))
ksym_find_partial(struct tk_event_set *set, uint64_t addr)
{
	const struct tk_ksym *k;

	if (!__atomic_load_n(&set->ksym_full_built, __ATOMIC_ACQUIRE)) {
		k = ksym_search(set->ksyms, set->nksyms, addr);
		if (ksym_image_answers(set, k, addr))
			return k;
		ksym_go_full(set);
	}
	return ksym_search(set->ksym_full, set->nksym_full, addr);
}

const struct tk_ksym tk_ksym_none;

const struct tk_ksym *tk_event_ksym_find(struct tk_event_set *set, struct tk_ksym_memo *memo,
					 uint64_t addr)
{
	struct tk_ksym_memo *m = NULL;
	const struct tk_ksym *k;

	if (__builtin_expect(!__atomic_load_n(&set->ksym_built, __ATOMIC_ACQUIRE), 0))
		tk_event_ksym_prepare(set);
	if (!memo)
		memo = set->ksym_memo;
	if (memo) {
		m = &memo[tk_ksym_memo_slot(addr)];
		if (m->k && m->addr == addr)
			return m->k != &tk_ksym_none ? m->k : NULL;
	}
	if (__builtin_expect(set->ksym_partial, 0))
		k = ksym_find_partial(set, addr);
	else if (__builtin_expect(__atomic_load_n(&set->ksym_lazy, __ATOMIC_ACQUIRE), 0))
		k = ksym_find_lazy(set, addr);
	else
		k = ksym_search(set->ksyms, set->nksyms, addr);
	if (m) {
		m->addr = addr;
		m->k = k ? k : &tk_ksym_none;
	}
	return k;
}

/*
 * Our copy of what tep_register_print_string() keeps: the text without
 * a leading quote, then (only when a closing quote was cut) without a
 * final "\n". The caller has checked the text is 3 characters or more.
 */
static int printk_keep(struct tk_event_set *set, const char *fmt, uint64_t addr)
{
	struct tk_printk *t;
	size_t n;
	char *text;

	if (fmt[0] == '"')
		fmt++;
	n = strlen(fmt);
	if (n > UINT32_MAX / 2)
		return -1;
	text = strndup(fmt, n);
	if (!text)
		return -1;
	if (n && text[n - 1] == '"') {
		text[--n] = '\0';
		if (n >= 2 && !strcmp(text + n - 2, "\\n"))
			text[n -= 2] = '\0';
	}
	if (set->nprintks == set->printk_cap) {
		size_t cap = set->printk_cap ? set->printk_cap * 2 : 64;

		t = realloc(set->printks, cap * sizeof(*t));
		if (!t) {
			free(text);
			return -1;
		}
		set->printks = t;
		set->printk_cap = cap;
	}
	t = set->printks;
	t[set->nprintks].addr = addr;
	t[set->nprintks].text = text;
	t[set->nprintks].len = (uint32_t)n;
	set->nprintks++;
	if (n > set->printk_max)
		set->printk_max = (uint32_t)n;
	return 0;
}

static int printk_cmp(const void *a, const void *b)
{
	const struct tk_printk *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool printks_sorted(const struct tk_event_set *set)
{
	for (size_t i = 1; i < set->nprintks; i++)
		if (set->printks[i - 1].addr > set->printks[i].addr)
			return false;
	return true;
}

/*
 * libtraceevent's find_printk(): a bsearch() for the exact address.
 * (A kernel has one format per address; with two, the one found may
 * differ from libtraceevent's.)
 */
const struct tk_printk *tk_event_printk_find(const struct tk_event_set *set, uint64_t addr)
{
	size_t l = 0, u = set->nprintks;

	while (l < u) {
		size_t m = l + (u - l) / 2;

		if (set->printks[m].addr == addr)
			return &set->printks[m];
		if (set->printks[m].addr < addr)
			l = m + 1;
		else
			u = m;
	}
	return NULL;
}

/*
 * printk_formats lines are "ADDR : \"FORMAT\"". libtraceevent's own loop
 * (tep_parse_printk_formats()) reads past the buffer on a line without a
 * ':' or with nothing after it, and tep_register_print_string() reads
 * before its copy for a format shorter than three characters; files are
 * untrusted, so the lines are split here and only well-formed ones are
 * handed over, exactly as libtraceevent would hand them (the text one
 * character after the first ':').
 */
int tk_event_set_add_printk(struct tk_event_set *set, const char *text, size_t len)
{
	size_t pos = 0, bad = 0;
	char *copy;
	int ret = 0;

	/* libtraceevent reads the text as a C string: nothing after a NUL counts. */
	len = strnlen(text, len);
	/* One copy, each line ended in place: formats are handed over as C strings. */
	copy = malloc(len + 1);
	if (!copy)
		return tk_fail(ENOMEM, "cannot copy printk formats");
	memcpy(copy, text, len);
	copy[len] = '\0';
	while (pos < len) {
		char *line = copy + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		char *end = line + n, *colon, *fmt;
		size_t a = 0, flen;
		unsigned long long addr;

		pos += n + 1;
		*end = '\0';
		/* strtok_r() semantics: leading ':' belong to no field. */
		while (a < n && line[a] == ':')
			a++;
		if (a == n)
			continue;
		colon = memchr(line + a, ':', n - a);
		if (!colon || end - colon < 2) {
			bad++;
			continue;
		}
		/* libtraceevent takes the format one character after the ':'. */
		fmt = colon + 2;
		flen = (size_t)(end - fmt);
		if (flen && *fmt == '"')
			flen--;
		/* An address of 64 characters or more is no address. */
		if (flen < 3 || colon - (line + a) >= 64) {
			bad++;
			continue;
		}
		*colon = '\0';
		/* One strtoull() for both: glibc's costs ~460 instructions an address. */
		addr = strtoull(line + a, NULL, 16);
		if (printk_keep(set, fmt, addr) || tep_register_print_string(set->tep, fmt, addr)) {
			ret = tk_fail(ENOMEM, "cannot register printk formats");
			break;
		}
	}
	free(copy);
	if (!ret && bad)
		tk_warn("%zu printk format lines are not \"ADDR : FORMAT\": ignored", bad);
	/* Kernels list them in address order: a sorted table is left as it is. */
	if (set->nprintks > 1 && !printks_sorted(set)) /* qsort() of a NULL array is undefined */
		qsort(set->printks, set->nprintks, sizeof(*set->printks), printk_cmp);
	/* Programs that print printk texts size their room by the longest. */
	for (size_t i = 0; i < set->count; i++)
		if (set->events[i]->has_printk)
			tk_event_compile(set, set->events[i]);
	return ret;
}

int tk_event_set_load_plugins(struct tk_event_set *set)
{
	set->plugins_deferred = false;
	if (!set->plugins)
		set->plugins = tep_load_plugins(set->tep);
	/* Handlers attach to events already parsed and to later ones. */
	for (size_t i = 0; i < set->count; i++) {
		tk_event_compile(set, set->events[i]);
		tk_event_find_stars(set->events[i]);
	}
	return 0;
}

/*
 * Plugins on demand. Loading libtraceevent's 12 plugins maps 12 shared
 * objects (87 page faults, 1.5-2.4 ms) and unloading them takes 0.6-0.8 ms
 * more: a tenth of a report of a 10 MB file whose events no plugin
 * handles. A plugin acts on an event only through names it holds as
 * string literals: the system and event it registers a handler for, and
 * the functions it lets print formats call (tep_register_event_handler(),
 * tep_register_print_function()). So the files libtraceevent would load
 * (tep_load_plugins_hook() walks the same directories, a user's too) are
 * read once, every identifier run that ends in a NUL kept as a word, and
 * a format whose event name or called function is the end of such a word
 * (the linker may keep "kmalloc" as the tail of "__kmalloc") has them
 * loaded before it is parsed. Any doubt loads them: a file that cannot be
 * read, a name too long for the test. Events parsed before stay as they
 * were compiled: none of them was named by a plugin, so none gets a
 * handler, and the functions they call were no plugin's.
 */
static const uint8_t word_chars[256] = {
	['0' ... '9'] = 1,
	['A' ... 'Z'] = 1,
	['_'] = 1,
	['a' ... 'z'] = 1,
};

static bool word_char(unsigned char c)
{
	return word_chars[c];
}

/* Keep every identifier run of @p..@end that a NUL ends, with its NUL. */
static void plugin_scan_words(struct tk_event_set *set, const unsigned char *p,
			      const unsigned char *end)
{
	size_t run = 0;

	for (; p < end; p++) {
		if (word_char(*p)) {
			run++;
			continue;
		}
		if (!*p && run) {
			if (set->plugin_words_len + run + 1 > set->plugin_words_cap) {
				size_t n = (set->plugin_words_cap + run + 1) * 2;
				char *w = realloc(set->plugin_words, n);

				if (!w) {
					set->plugin_words_state = -1;
					return;
				}
				set->plugin_words = w;
				set->plugin_words_cap = n;
			}
			memcpy(set->plugin_words + set->plugin_words_len, p - run, run + 1);
			set->plugin_words_len += run + 1;
		}
		run = 0;
	}
}

/*
 * The words of a plugin file: those of its data sections (every PROGBITS
 * section but code), where its string literals are, so that the scan
 * skips the code (most of the bytes); any file that is not an ELF of our
 * class and byte order, or whose section table is out of bounds, is
 * scanned whole.
 */
static void plugin_file_words(struct tep_handle *tep, const char *path, const char *name,
			      void *data)
{
	struct tk_event_set *set = data;
	const unsigned char *u;
	const Elf64_Ehdr *eh;
	char *buf = NULL, *file = NULL;
	size_t len = 0;
	int ret;

	(void)tep;
	if (set->plugin_words_state < 0)
		return;
	/* @path is the directory, @name the file in it. */
	if (asprintf(&file, "%s/%s", path, name) < 0) {
		set->plugin_words_state = -1;
		return;
	}
	ret = tk_read_file(file, &buf, &len);
	free(file);
	if (ret < 0) {
		set->plugin_words_state = -1;
		return;
	}
	u = (const unsigned char *)buf;
	eh = (const Elf64_Ehdr *)(const void *)buf; /* tk_read_file()'s malloc() aligns it */
	if (len >= sizeof(*eh) && !memcmp(u, ELFMAG, SELFMAG) && u[EI_CLASS] == ELFCLASS64 &&
	    u[EI_DATA] == (tep_is_bigendian() ? ELFDATA2MSB : ELFDATA2LSB) &&
	    eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shnum && eh->e_shoff <= len &&
	    (len - eh->e_shoff) / sizeof(Elf64_Shdr) >= eh->e_shnum && !(eh->e_shoff % 8)) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(u + eh->e_shoff);

		for (size_t i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != SHT_PROGBITS || (sh[i].sh_flags & SHF_EXECINSTR))
				continue;
			if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset) {
				plugin_scan_words(set, u, u + len);
				break;
			}
			plugin_scan_words(set, u + sh[i].sh_offset,
					  u + sh[i].sh_offset + sh[i].sh_size);
		}
	} else {
		plugin_scan_words(set, u, u + len);
	}
	free(buf);
}

/* Whether the @len bytes at @name end a word of a plugin file (true when unsure). */
static bool plugin_word(const struct tk_event_set *set, const char *name, size_t len)
{
	char key[128];

	if (len + 1 > sizeof(key))
		return true;
	memcpy(key, name, len);
	key[len] = '\0';
	return set->plugin_words_len &&
	       memmem(set->plugin_words, set->plugin_words_len, key, len + 1) != NULL;
}

/*
 * Whether format @text may be a plugin's: its "name:" or an identifier its
 * print format's arguments call ("NAME("), outside quoted strings.
 */
static bool format_names_plugin(struct tk_event_set *set, const char *text, size_t len)
{
	const char *end = text + len, *p, *pf;

	if (!set->plugin_words_state) {
		set->plugin_words_state = 1;
		tep_load_plugins_hook(set->tep, ".so", plugin_file_words, set);
	}
	if (set->plugin_words_state < 0)
		return true;
	if (!set->plugin_words_len)
		return false;
	p = memmem(text, len, "name:", 5);
	if (!p)
		return true;
	for (p += 5; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	{
		const char *w = p;

		while (p < end && word_char((unsigned char)*p))
			p++;
		/* A name of other characters too ("a-b") is no plugin word's end: unsure. */
		if (p == w || (p < end && !strchr(" \t\r\n", *p)) ||
		    plugin_word(set, w, (size_t)(p - w)))
			return true;
	}
	pf = memmem(text, len, "print fmt:", 10);
	for (p = pf ? pf + 10 : end; p < end;) {
		const char *w = p, *q;

		if (*p == '"') {
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\' && p + 1 < end)
					p++;
			p += p < end;
			continue;
		}
		if (!word_char((unsigned char)*p) || (*p >= '0' && *p <= '9')) {
			/* A number's letters (0x1f) are no name: skip the whole token. */
			if (*p >= '0' && *p <= '9')
				while (p < end && word_char((unsigned char)*p))
					p++;
			else
				p++;
			continue;
		}
		while (p < end && word_char((unsigned char)*p))
			p++;
		for (q = p; q < end && (*q == ' ' || *q == '\t'); q++)
			;
		if (q < end && *q == '(' && plugin_word(set, w, (size_t)(p - w)))
			return true;
	}
	return false;
}

int tk_event_set_plugins_on_demand(struct tk_event_set *set)
{
	set->plugins_deferred = !set->plugins;
	return 0;
}

static int copy_fields(struct tk_event *ev)
{
	struct tep_format_field *f;
	size_t n = 0, i = 0;

	for (f = ev->tev->format.common_fields; f; f = f->next)
		n++;
	for (f = ev->tev->format.fields; f; f = f->next)
		n++;
	ev->fields = calloc(n ? n : 1, sizeof(*ev->fields));
	if (!ev->fields)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		f = pass ? ev->tev->format.fields : ev->tev->format.common_fields;
		for (; f; f = f->next) {
			struct tk_event_field *o = &ev->fields[i++];

			o->name = f->name;
			o->type = f->type;
			o->offset = (uint32_t)f->offset;
			o->size = (uint32_t)f->size;
			o->is_signed = f->flags & TEP_FIELD_IS_SIGNED;
			o->is_array = f->flags & TEP_FIELD_IS_ARRAY;
			o->is_dynamic = f->flags & TEP_FIELD_IS_DYNAMIC;
			o->is_relative = f->flags & TEP_FIELD_IS_RELATIVE;
			o->is_string = f->flags & TEP_FIELD_IS_STRING;
			o->is_common = pass == 0;
		}
	}
	ev->nfields = n;
	return 0;
}

static int index_event(struct tk_event_set *set, struct tk_event *ev)
{
	if (ev->id < 0 || ev->id > 0xffff)
		return tk_fail(EBADMSG, "event %s has id %d outside 0..65535", ev->name, ev->id);
	if ((size_t)ev->id >= set->by_id_len) {
		size_t n = (size_t)ev->id + 64;
		struct tk_event **t = realloc(set->by_id, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t + set->by_id_len, 0, (n - set->by_id_len) * sizeof(*t));
		set->by_id = t;
		set->by_id_len = n;
	}
	if (set->by_id[ev->id])
		return tk_fail(EEXIST, "two formats have event id %d", ev->id);
	set->by_id[ev->id] = ev;
	return 0;
}

int tk_event_set_add_format(struct tk_event_set *set, const char *system, const char *text,
			    size_t len)
{
	struct tep_event *tev = NULL;
	struct tk_event *ev;
	enum tep_errno terr;
	int ret;

	if (!len)
		return tk_fail(EBADMSG, "empty event format (system %s)", system);
	/* libtraceevent crashes on some malformed texts: only the kernel's shape reaches it. */
	ret = tk_event_format_check(system, text, len);
	if (ret)
		return ret;
	if (set->plugins_deferred && format_names_plugin(set, text, len)) {
		set->plugins_deferred = false;
		set->plugins = tep_load_plugins(set->tep);
	}
	terr = tep_parse_format(set->tep, &tev, text, (unsigned long)len, system);
	if (terr || !tev) {
		char buf[128];

		tep_strerror(set->tep, terr, buf, sizeof(buf));
		/* tep keeps a half-parsed event on some errors; it owns it. */
		return tk_fail(EBADMSG, "event format of system %s not understood: %s", system,
			       buf);
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return tk_fail(ENOMEM, "cannot allocate an event");
	ev->tev = tev;
	ev->id = tev->id;
	ev->name = tev->name;
	ev->system = tev->system;
	ev->name_len = strlen(ev->name);
	if (ev->name_len + 2 < sizeof(ev->col)) {
		/* The report's "%s: %*s" event column, made once. */
		memset(ev->col, ' ', sizeof(ev->col));
		memcpy(ev->col, ev->name, ev->name_len);
		ev->col[ev->name_len] = ':';
		ev->col_len = (uint8_t)(ev->name_len < 20 ? 22 : ev->name_len + 2);
	}
	if (copy_fields(ev)) {
		event_free(ev);
		return tk_fail(ENOMEM, "cannot copy event fields");
	}
	ret = index_event(set, ev);
	if (ret) {
		event_free(ev);
		return ret;
	}
	if (set->count == set->cap) {
		size_t n = set->cap ? set->cap * 2 : 64;
		struct tk_event **t = realloc(set->events, n * sizeof(*t));

		if (!t) {
			set->by_id[ev->id] = NULL;
			event_free(ev);
			return tk_fail(ENOMEM, "cannot grow the event table");
		}
		set->events = t;
		set->cap = n;
	}
	set->events[set->count++] = ev;
	if (!set->have_common) {
		const struct tk_event_field *t = tk_event_field_find(ev, "common_type");
		const struct tk_event_field *p = tk_event_field_find(ev, "common_pid");
		const struct tk_event_field *fl = tk_event_field_find(ev, "common_flags");
		const struct tk_event_field *pc = tk_event_field_find(ev, "common_preempt_count");

		if (t && p && t->size <= 8 && p->size <= 8) {
			set->type_off = t->offset;
			set->type_size = t->size;
			set->pid_off = p->offset;
			set->pid_size = p->size;
			set->flags_off = fl ? fl->offset : 0;
			set->flags_size = fl ? fl->size : 0;
			set->pc_off = pc ? pc->offset : 0;
			set->pc_size = pc ? pc->size : 0;
			set->have_common = true;
		}
	}
	tk_event_compile(set, ev);
	tk_event_find_stars(ev);
	return ev->id;
}

size_t tk_event_set_count(const struct tk_event_set *set)
{
	return set->count;
}

const struct tk_event *tk_event_set_get(const struct tk_event_set *set, size_t index)
{
	return index < set->count ? set->events[index] : NULL;
}

const struct tk_event *tk_event_find(const struct tk_event_set *set, int id)
{
	if (id < 0 || (size_t)id >= set->by_id_len)
		return NULL;
	return set->by_id[id];
}

const struct tk_event *tk_event_find_by_name(const struct tk_event_set *set, const char *system,
					     const char *name)
{
	for (size_t i = 0; i < set->count; i++) {
		const struct tk_event *ev = set->events[i];

		if (!strcmp(ev->name, name) && (!system || !strcmp(ev->system, system)))
			return ev;
	}
	return NULL;
}

int tk_event_id(const struct tk_event *ev)
{
	return ev->id;
}

const char *tk_event_name(const struct tk_event *ev)
{
	return ev->name;
}

const char *tk_event_system(const struct tk_event *ev)
{
	return ev->system;
}

bool tk_event_is_compiled(const struct tk_event *ev)
{
	return ev->kind != TK_EVENT_SLOW;
}

size_t tk_event_field_count(const struct tk_event *ev)
{
	return ev->nfields;
}

const struct tk_event_field *tk_event_field_get(const struct tk_event *ev, size_t index)
{
	return index < ev->nfields ? &ev->fields[index] : NULL;
}

const struct tk_event_field *tk_event_field_find(const struct tk_event *ev, const char *name)
{
	for (size_t i = 0; i < ev->nfields; i++) {
		if (!strcmp(ev->fields[i].name, name))
			return &ev->fields[i];
	}
	return NULL;
}

int tk_event_field_read(const struct tk_event_set *set, const struct tk_event_field *field,
			const void *data, uint32_t size, uint64_t *val)
{
	uint64_t v;

	if (field->size != 1 && field->size != 2 && field->size != 4 && field->size != 8)
		return tk_fail(EINVAL, "field %s has %u bytes: not a number", field->name,
			       field->size);
	if ((uint64_t)field->offset + field->size > size)
		return tk_fail(EBADMSG, "record of %u bytes too short for field %s", size,
			       field->name);
	v = load_num(set, (const uint8_t *)data + field->offset, field->size);
	if (field->is_signed && field->size < 8) {
		unsigned int shift = 64 - field->size * 8;

		v = (uint64_t)((int64_t)(v << shift) >> shift);
	}
	*val = v;
	return 0;
}

int tk_event_dyn_loc(const struct tk_event_set *set, uint32_t foff, uint32_t fsize, bool rel,
		     const void *data, uint32_t size, uint32_t *off, uint32_t *len)
{
	uint32_t word;
	uint64_t o;

	if ((uint64_t)foff + 4 > size)
		return -EBADMSG;
	word = (uint32_t)load_num(set, (const uint8_t *)data + foff, 4);
	o = word & 0xffff;
	if (rel)
		o += (uint64_t)foff + fsize;
	*len = word >> 16;
	if (o > size || (uint64_t)o + *len > size)
		return -EBADMSG;
	*off = (uint32_t)o;
	return 0;
}

int tk_event_field_string(const struct tk_event_set *set, const struct tk_event_field *field,
			  const void *data, uint32_t size, const char **str, uint32_t *len)
{
	const char *p;
	uint32_t off, max;

	if (field->is_dynamic) {
		if (tk_event_dyn_loc(set, field->offset, field->size, field->is_relative, data,
				     size, &off, &max))
			return tk_fail(EBADMSG, "field %s points outside its record", field->name);
	} else if (field->is_array) {
		off = field->offset;
		/* A zero-sized array (char buf[]) runs to the end of the record. */
		max = field->size ? field->size : (off < size ? size - off : 0);
		if ((uint64_t)off + max > size)
			return tk_fail(EBADMSG, "record of %u bytes too short for field %s", size,
				       field->name);
	} else {
		return tk_fail(EINVAL, "field %s is not a string", field->name);
	}
	p = (const char *)data + off;
	*str = p;
	*len = (uint32_t)strnlen(p, max);
	return 0;
}

int tk_event_record_type(const struct tk_event_set *set, const void *data, uint32_t size)
{
	if (!set->have_common || (uint64_t)set->type_off + set->type_size > size)
		return -EBADMSG;
	return (int)load_num(set, (const uint8_t *)data + set->type_off, set->type_size);
}

int tk_event_record_pid(const struct tk_event_set *set, const void *data, uint32_t size)
{
	if (!set->have_common || (uint64_t)set->pid_off + set->pid_size > size)
		return -1;
	return (int)load_num(set, (const uint8_t *)data + set->pid_off, set->pid_size);
}

/* ----------------------------------------------------------- slow path */

/*
 * Run libtraceevent on a padded copy of the record (see the notes at the
 * top) and append its text.
 */
static void slow_print(struct tk_event_set *set, const void *data, uint32_t size, int cpu,
		       const char *what, struct tk_outbuf *out)
{
	struct tep_record rec;
	uint32_t n = size;

	if (n > set->scratch_size - TK_EVENT_SCRATCH)
		n = (uint32_t)(set->scratch_size - TK_EVENT_SCRATCH);
	if (set->scratch_dirty > n)
		memset(set->scratch + n, 0, set->scratch_dirty - n);
	memcpy(set->scratch, data, n);
	set->scratch_dirty = n;

	tk_event_ksym_load_tep(set);
	tk_event_comm_tep(set);
	memset(&rec, 0, sizeof(rec));
	rec.data = set->scratch;
	rec.size = (int)n;
	rec.cpu = cpu;
	trace_seq_reset(&set->seq);
	tep_print_event(set->tep, &set->seq, &rec, "%s", what);
	trace_seq_terminate(&set->seq);
	if (set->seq.len > 0)
		tk_outbuf_write(out, set->seq.buffer, (size_t)set->seq.len);
}

int tk_event_print_latency(struct tk_event_set *set, const void *data, uint32_t size, int cpu,
			   struct tk_outbuf *out)
{
	slow_print(set, data, size, cpu, TEP_PRINT_LATENCY, out);
	return 0;
}

void tk_event_print_slow_shared(struct tk_event_set *set, const struct tk_event *ev,
				const void *data, uint32_t size, int cpu, struct tk_outbuf *out)
{
	((struct tk_event *)ev)->fallbacks++;
	if (__builtin_expect(ev->nstar || ev->nlen || ev->ndiv || ev->has_rest || ev->star_unsafe,
			     0) &&
	    !tk_event_stars_ok(set, ev, data, size)) {
		/* The compiled printer's marker for a record it cannot print whole. */
		tk_outbuf_write(out, "[truncated record]", 18);
		return;
	}
	slow_print(set, data, size, cpu, TEP_PRINT_INFO, out);
}

int tk_event_print_info(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			uint32_t size, int cpu, unsigned int flags, struct tk_outbuf *out)
{
	int ret = 0;

	if (flags & TK_EVENT_PRINT_RAW) {
		slow_print(set, data, size, cpu, TEP_PRINT_INFO_RAW, out);
		return 0;
	}
	if (ev->kind != TK_EVENT_SLOW && !(flags & TK_EVENT_PRINT_SLOW)) {
		ret = tk_event_run(set, ev, data, size, out);
		if (ret != -ENOTSUP)
			return ret;
	}
	tk_event_print_slow_shared(set, ev, data, size, cpu, out);
	/* The plugin registered names in tep; mirror them in our table. */
	if (ev->kind == TK_EVENT_SCHED_SWITCH || ev->kind == TK_EVENT_SCHED_WAKEUP)
		tk_event_sched_register(set, ev, data, size);
	return 0;
}

bool tk_event_spec_match(const char *spec, const char *system, const char *name)
{
	const char *colon = strchr(spec, ':');
	char sys[256];
	size_t n;

	if (!colon)
		return !fnmatch(spec, name, 0) || !fnmatch(spec, system, 0);
	n = (size_t)(colon - spec);
	if (n >= sizeof(sys))
		return false;
	memcpy(sys, spec, n);
	sys[n] = '\0';
	return !fnmatch(sys, system, 0) && !fnmatch(colon[1] ? colon + 1 : "*", name, 0);
}
