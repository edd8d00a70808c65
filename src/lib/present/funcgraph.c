// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * funcgraph: the function_graph tracer's events as trace-cmd 3.1.6
 * prints them.
 *
 * trace-cmd registers its own handlers for ftrace:funcgraph_entry and
 * ftrace:funcgraph_exit (the kernel's print formats, "--> %ps (%u)" and
 * "<-- %ps ...", never show). The text after the event name is
 *
 *   entry, leaf:    OO DURATION |  INDENTfunc();
 *   entry, nested:  "  " 11 spaces "|  " INDENTfunc() {
 *   exit:           OO DURATION |  INDENT}
 *
 * INDENT is two spaces per level of the record's "depth" field; an
 * address kallsyms does not name prints as bare hex ("%llx", no 0x).
 * DURATION is rettime - calltime of the exit record in ns (unsigned, so a
 * return stamped before its call is a huge duration): the microseconds,
 * then "." and three digits of ns when the microseconds have fewer than 7
 * digits, then " us ", then spaces up to 7 columns of number. OO, the
 * overhead marker, is "$ " over 1 s, "# " over 1 ms, "! " over 100 us,
 * "+ " over 10 us, else two spaces (3.1.6 has no '*' or '@'; "over" is
 * strict: exactly 10 us gets no marker).
 *
 * An entry is a leaf when the next record of its buffer (every CPU's
 * records merged by time, the lower CPU first on equal times, as
 * trace-cmd's tracecmd_peek_next_data() scans them) is a funcgraph_exit
 * of the same pid and function: the entry prints the leaf form with that
 * exit's duration and the exit is not printed at all. The look-ahead is
 * the merge's (report.c, fgraph_take()); this file only decides and
 * prints. trace-cmd compares the entry's pid as an int with the exit's as
 * an unsigned 32-bit number widened to 64 bits, so a negative pid is
 * never a leaf, and neither is it here. The look-ahead sees the CPUs the
 * report reads: with --cpu, trace-cmd 3.1.6 still peeks at the others (it
 * filters after reading), so an entry followed by another CPU's record
 * can print nested there and as a leaf here. When the return comes from
 * another CPU than the entry (a task moved during the call), trace-cmd
 * frees that record while its merge still holds it; here it is simply
 * taken, and the merge goes on in order.
 *
 * Fields are found by name in the event's format (libtraceevent's
 * tep_find_field(), as trace-cmd does) and read only when they lie inside
 * the record: libtraceevent would read past a short record, here the
 * event's own print format is used instead (-ENOTSUP). trace-cmd's own
 * options, -O fgraph:tailprint (the function's name in a C comment after
 * an exit's "}", when kallsyms names it) and fgraph:depth (" (DEPTH)" after every
 * entry and exit), come as flags (tk_fgraph_option()). The indentation
 * is cut at MAX_INDENT columns: trace-cmd prints (int)(2 * depth) spaces,
 * up to 2^31 for a damaged depth, and no real call graph is 2048 deep.
 *
 * ftrace:function events need nothing here: libtraceevent's function
 * plugin (loaded by tk_event_set_load_plugins()) replaces trace-cmd's own
 * handler in 3.1.6 as well, so both print through the plugin.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <traceevent/event-parse.h>

#include "funcgraph.h"

#define MAX_INDENT 4096

/* Field @name of @ev in @data, or false when it is missing or past @size. */
static bool field_u64(const struct tk_event *ev, const char *name, const void *data, uint32_t size,
		      unsigned long long *v)
{
	struct tep_format_field *f;

	if (!ev || !ev->tev)
		return false;
	f = tep_find_field(ev->tev, name);
	if (!f || f->offset < 0 || f->size < 0 || (uint32_t)f->offset > size ||
	    (uint32_t)f->size > size - (uint32_t)f->offset)
		return false;
	return tep_read_number_field(f, data, v) == 0;
}

bool tk_fgraph_is_leaf(const struct tk_event *entry, const void *edata, uint32_t esize, int epid,
		       const struct tk_event *exit, const void *xdata, uint32_t xsize, int xpid)
{
	unsigned long long ef, xf;

	if (epid < 0 || epid != xpid)
		return false;
	return field_u64(entry, "func", edata, esize, &ef) &&
	       field_u64(exit, "func", xdata, xsize, &xf) && ef == xf;
}

static void put_marker(struct tk_outbuf *o, unsigned long long d)
{
	const char *m = "  ";

	if (d > 1000000000ull)
		m = "$ ";
	else if (d > 1000000ull)
		m = "# ";
	else if (d > 100000ull)
		m = "! ";
	else if (d > 10000ull)
		m = "+ ";
	tk_outbuf_write(o, m, 2);
}

static void put_duration(struct tk_outbuf *o, unsigned long long d)
{
	char t[64];
	int n = snprintf(t, sizeof(t), "%llu", d / 1000);

	if (n < 7)
		n += snprintf(t + n, sizeof(t) - (size_t)n, ".%03llu", d % 1000);
	tk_outbuf_write(o, t, (size_t)n);
	tk_outbuf_write(o, " us ", 4);
	for (; n < 7; n++)
		tk_outbuf_write(o, " ", 1);
	tk_outbuf_write(o, "|  ", 3);
}

static void put_spaces(struct tk_outbuf *o, size_t n)
{
	static const char sp[64] =
		"                                                                ";

	while (n > 0) {
		size_t k = n < sizeof(sp) ? n : sizeof(sp);

		tk_outbuf_write(o, sp, k);
		n -= k;
	}
}

static void put_indent(struct tk_outbuf *o, unsigned long long depth)
{
	/* trace-cmd's (int)(depth * 2): a negative int prints nothing. */
	int n = (int)(depth * 2);

	put_spaces(o, n < 0 ? 0 : n > MAX_INDENT ? MAX_INDENT : (size_t)n);
}

static void put_func(struct tk_event_set *set, struct tk_ksym_memo *memo, struct tk_outbuf *o,
		     unsigned long long addr, const char *tail)
{
	const struct tk_ksym *k = tk_event_ksym_find(set, memo, addr);

	if (k) {
		tk_outbuf_write(o, set->ksym_text + k->name_off, k->name_len);
	} else {
		char t[24];
		int n = snprintf(t, sizeof(t), "%llx", addr);

		tk_outbuf_write(o, t, (size_t)n);
	}
	tk_outbuf_write(o, tail, strlen(tail));
}

bool tk_fgraph_option(const char *opt, unsigned int *flags)
{
	static const struct {
		const char *name;
		unsigned int flag;
	} opts[] = {{"fgraph:tailprint", TK_FGRAPH_TAILPRINT}, {"fgraph:depth", TK_FGRAPH_DEPTH}};
	size_t n = strcspn(opt, "=");

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		const char *v = opt + n + 1;

		if (strlen(opts[i].name) != n || memcmp(opts[i].name, opt, n))
			continue;
		if (!opt[n] || !strcmp(v, "1") || !strcasecmp(v, "true"))
			*flags |= opts[i].flag;
		else if (!strcmp(v, "0") || !strcasecmp(v, "false"))
			*flags &= ~opts[i].flag;
		return true;
	}
	return false;
}

static void put_depth(struct tk_outbuf *o, unsigned long long depth, unsigned int flags)
{
	char t[32];
	int n;

	if (!(flags & TK_FGRAPH_DEPTH))
		return;
	n = snprintf(t, sizeof(t), " (%lld)", (long long)depth);
	tk_outbuf_write(o, t, (size_t)n);
}

int tk_fgraph_put_entry(struct tk_event_set *set, struct tk_ksym_memo *memo,
			const struct tk_event *entry, const void *data, uint32_t size,
			const struct tk_event *exit, const void *xdata, uint32_t xsize,
			unsigned int flags, struct tk_outbuf *o)
{
	unsigned long long func, depth, call = 0, ret = 0;

	if (!field_u64(entry, "func", data, size, &func) ||
	    !field_u64(entry, "depth", data, size, &depth))
		return -ENOTSUP;
	if (xdata && (!field_u64(exit, "calltime", xdata, xsize, &call) ||
		      !field_u64(exit, "rettime", xdata, xsize, &ret)))
		return -ENOTSUP;
	if (xdata) {
		put_marker(o, ret - call);
		put_duration(o, ret - call);
	} else {
		tk_outbuf_write(o, "             |  ", 16);
	}
	put_indent(o, depth);
	put_func(set, memo, o, func, xdata ? "();" : "() {");
	put_depth(o, depth, flags);
	return 0;
}

int tk_fgraph_put_exit(struct tk_event_set *set, struct tk_ksym_memo *memo,
		       const struct tk_event *exit, const void *data, uint32_t size,
		       unsigned int flags, struct tk_outbuf *o)
{
	unsigned long long depth, call, ret, func;

	if (!field_u64(exit, "calltime", data, size, &call) ||
	    !field_u64(exit, "rettime", data, size, &ret) ||
	    !field_u64(exit, "depth", data, size, &depth))
		return -ENOTSUP;
	put_marker(o, ret - call);
	put_duration(o, ret - call);
	put_indent(o, depth);
	tk_outbuf_write(o, "}", 1);
	/*
	 * trace-cmd names the function only when kallsyms does (no hex), and
	 * when it cannot, ends the line there: no depth either.
	 */
	if (flags & TK_FGRAPH_TAILPRINT) {
		const struct tk_ksym *k = NULL;

		if (field_u64(exit, "func", data, size, &func))
			k = tk_event_ksym_find(set, memo, func);
		if (!k)
			return 0;
		tk_outbuf_write(o, " /* ", 4);
		tk_outbuf_write(o, set->ksym_text + k->name_off, k->name_len);
		tk_outbuf_write(o, " */", 3);
	}
	put_depth(o, depth, flags);
	return 0;
}

/*
 * ftrace:function. libtraceevent's function plugin indents each function
 * 3 columns per place its parent holds in a per-CPU stack of names the
 * plugin keeps from every function record it printed before (on any
 * buffer: the stacks are global, by CPU number). That makes a line depend
 * on all the lines before it, which the print pool's workers do not see,
 * so the merge keeps the stacks here (tk_fn_indent_next(), in record
 * order) and hands each line its index; the text is then put by
 * tk_fn_put() on any thread. The plugin's rules, kept exactly:
 *   - no parent name (kallsyms does not know it): index 0, nothing kept;
 *   - else the first slot from the bottom holding the parent's name (up to
 *     the first empty slot) gives the index i, and slot i + 1 takes the
 *     function's name (slots above it stay as they were);
 *   - not found: slot 0 takes the parent, slot 1 the function; index 0;
 *   - a function kallsyms does not name leaves its slot as it was.
 * Names are compared as strings, as the plugin's strcmp() does.
 */
struct fn_name {
	const char *s; /* in the set's kallsyms text; NULL: empty slot */
	uint32_t len;
};

struct fn_stack {
	struct fn_name *slot;
	size_t n;
};

struct tk_fn_indent {
	struct fn_stack *cpu;
	size_t ncpu;
};

struct tk_fn_indent *tk_fn_indent_new(void)
{
	return calloc(1, sizeof(struct tk_fn_indent));
}

void tk_fn_indent_free(struct tk_fn_indent *fi)
{
	if (!fi)
		return;
	for (size_t i = 0; i < fi->ncpu; i++)
		free(fi->cpu[i].slot);
	free(fi->cpu);
	free(fi);
}

static struct fn_name ksym_name(struct tk_event_set *set, struct tk_ksym_memo *memo, uint64_t addr)
{
	const struct tk_ksym *k = tk_event_ksym_find(set, memo, addr);
	struct fn_name n = {NULL, 0};

	if (k) {
		n.s = set->ksym_text + k->name_off;
		n.len = k->name_len;
	}
	return n;
}

/* The plugin's add_child(): a slot past the top grows the stack by 10 empty slots. */
static void fn_set(struct fn_stack *st, size_t pos, struct fn_name name)
{
	if (!name.s)
		return;
	if (pos >= st->n) {
		struct fn_name *p = realloc(st->slot, (st->n + 10) * sizeof(*p));

		/* The plugin warns and keeps its stack; the index is what it was. */
		if (!p)
			return;
		memset(p + st->n, 0, 10 * sizeof(*p));
		st->slot = p;
		st->n += 10;
	}
	st->slot[pos] = name;
}

int tk_fn_indent_next(struct tk_fn_indent *fi, struct tk_event_set *set, struct tk_ksym_memo *memo,
		      const struct tk_event *ev, const void *data, uint32_t size, uint32_t cpu)
{
	unsigned long long ip, parent_ip;
	struct fn_name fn, parent;
	struct fn_stack *st;

	if (!field_u64(ev, "ip", data, size, &ip) ||
	    !field_u64(ev, "parent_ip", data, size, &parent_ip))
		return -ENOTSUP;
	parent = ksym_name(set, memo, parent_ip);
	if (!parent.s)
		return 0;
	fn = ksym_name(set, memo, ip);
	if (cpu >= fi->ncpu) {
		struct fn_stack *p = realloc(fi->cpu, ((size_t)cpu + 1) * sizeof(*p));

		if (!p)
			return 0;
		memset(p + fi->ncpu, 0, ((size_t)cpu + 1 - fi->ncpu) * sizeof(*p));
		fi->cpu = p;
		fi->ncpu = (size_t)cpu + 1;
	}
	st = &fi->cpu[cpu];
	for (size_t i = 0; i < st->n && st->slot[i].s; i++) {
		if (st->slot[i].len == parent.len && !memcmp(st->slot[i].s, parent.s, parent.len)) {
			fn_set(st, i + 1, fn);
			return i > INT32_MAX ? INT32_MAX : (int)i;
		}
	}
	fn_set(st, 0, parent);
	fn_set(st, 1, fn);
	return 0;
}

int tk_fn_put(struct tk_event_set *set, struct tk_ksym_memo *memo, const struct tk_event *ev,
	      const void *data, uint32_t size, int index, struct tk_outbuf *o)
{
	unsigned long long ip;
	struct fn_name fn;

	if (index < 0 || !field_u64(ev, "ip", data, size, &ip))
		return -ENOTSUP;
	put_spaces(o, (size_t)index * 3);
	fn = ksym_name(set, memo, ip);
	if (fn.s) {
		tk_outbuf_write(o, fn.s, fn.len);
	} else {
		char t[24];
		int n = snprintf(t, sizeof(t), "0x%llx", ip);

		tk_outbuf_write(o, t, (size_t)n);
	}
	return 0;
}
