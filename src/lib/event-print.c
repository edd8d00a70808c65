// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * event-print: compiling print formats into op programs and running them.
 *
 * The splitting rules are libtraceevent's (so that the text matches it):
 * literal text takes \n \t \r \\ escapes (any other escaped character
 * stands for itself) and "%%"; a conversion is '%', then any of "#-.0-9",
 * 'h' and 'l' (each h lowers, each l raises the length by one), then the
 * conversion letter; each conversion consumes the next argument of the
 * parsed argument list. We compile only what we can print identically and
 * refuse the rest (the whole event then uses the slow printer): '*'
 * widths, 'L'/'z' lengths, %p in every form, %c and other letters,
 * argument kinds other than a plain field, a numeric constant, a string
 * constant, __get_str(), __print_flags() and __print_symbolic() of a
 * plain field with numeric values.
 *
 * Running. Before a program runs, the output buffer is given room for the
 * event's worst case (ev->max_static + the record size, computed at
 * compile time from widths and table texts), so ops write with no bounds
 * test and no flush can split an event. A record too short for a fixed
 * field makes the run return -ENOTSUP before anything is written; the
 * caller then uses the slow printer, which prints what trace-cmd prints.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event-internal.h"

/* Per-op worst case for numbers: sign, 20 digits, prefix, width <= 999. */
#define NUM_MAX 1100u

struct compiler {
	struct tk_event *ev;
	struct tk_op *ops;
	size_t nops, cap;
	char *lit;
	size_t lit_len, lit_cap;
	uint64_t max_static;
	uint32_t min_size;
	int long_size;
	bool failed;
};

static struct tk_op *new_op(struct compiler *c)
{
	if (c->nops == c->cap) {
		size_t n = c->cap ? c->cap * 2 : 8;
		struct tk_op *t = realloc(c->ops, n * sizeof(*t));

		if (!t) {
			c->failed = true;
			return NULL;
		}
		c->ops = t;
		c->cap = n;
	}
	memset(&c->ops[c->nops], 0, sizeof(c->ops[0]));
	return &c->ops[c->nops++];
}

static void lit_add(struct compiler *c, const char *s, size_t n)
{
	if (c->lit_len + n + 1 > c->lit_cap) {
		size_t cap = (c->lit_len + n + 1) * 2;
		char *t = realloc(c->lit, cap);

		if (!t) {
			c->failed = true;
			return;
		}
		c->lit = t;
		c->lit_cap = cap;
	}
	memcpy(c->lit + c->lit_len, s, n);
	c->lit_len += n;
	c->lit[c->lit_len] = '\0';
}

static void lit_flush(struct compiler *c)
{
	struct tk_op *op;

	if (!c->lit_len || c->failed)
		return;
	op = new_op(c);
	if (!op)
		return;
	op->kind = TK_OP_LIT;
	op->lit = strndup(c->lit, c->lit_len);
	if (!op->lit) {
		c->failed = true;
		return;
	}
	op->lit_len = (uint32_t)c->lit_len;
	c->max_static += c->lit_len;
	c->lit_len = 0;
}

static void use_field(struct compiler *c, uint32_t off, uint32_t size)
{
	uint64_t end = (uint64_t)off + size;

	if (end > 0xffff)
		c->failed = true;
	else if (end > c->min_size)
		c->min_size = (uint32_t)end;
}

/* A numeric value cast as libtraceevent's print_arg_number() casts it. */
static inline uint64_t cast_num(uint64_t v, int ls, bool is_signed)
{
	unsigned int bits = ls <= -2 ? 8 : ls == -1 ? 16 : ls == 0 ? 32 : 64;

	if (bits == 64)
		return v;
	v &= (1ull << bits) - 1;
	if (is_signed && (v >> (bits - 1)))
		v |= ~((1ull << bits) - 1);
	return v;
}

static bool conv_signed(char conv)
{
	return conv == 'd' || conv == 'i';
}

static const struct tep_format_field *plain_field(struct tk_event *ev, struct tep_print_arg *arg)
{
	struct tep_format_field *f;

	if (!arg || arg->type != TEP_PRINT_FIELD || !arg->field.name)
		return NULL;
	f = tep_find_any_field(ev->tev, arg->field.name);
	if (!f || f->flags & TEP_FIELD_IS_DYNAMIC)
		return NULL;
	return f;
}

static bool numeric_size(int size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

static bool parse_number(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

/*
 * Compile one conversion. @spec is the validated "%...X" text with the
 * length letters removed; @conv the letter; @plain when no flag or width.
 */
static void compile_conv(struct compiler *c, struct tep_print_arg *arg, const char *spec,
			 char conv, int ls, bool plain)
{
	struct tk_event *ev = c->ev;
	const struct tep_format_field *f;
	struct tk_op *op;
	char buf[1100];

	if (!arg) {
		c->failed = true;
		return;
	}
	if (conv != 's') {
		uint64_t v;
		char fmt[40];

		snprintf(fmt, sizeof(fmt), "%.*sll%c", (int)strlen(spec) - 1, spec, conv);
		if (arg->type == TEP_PRINT_ATOM) {
			/* A zero atom may be an enum name libtraceevent resolves. */
			if (!parse_number(arg->atom.atom, &v) || (!v && strcmp(arg->atom.atom, "0"))) {
				c->failed = true;
				return;
			}
			v = cast_num(v, ls, conv_signed(conv));
			snprintf(buf, sizeof(buf), fmt, v);
			lit_add(c, buf, strlen(buf));
			return;
		}
		f = plain_field(ev, arg);
		if (!f || !numeric_size(f->size)) {
			c->failed = true;
			return;
		}
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = TK_OP_NUM;
		op->off = (uint32_t)f->offset;
		op->size = (uint32_t)f->size;
		op->ls = ls;
		op->plain = plain;
		snprintf(op->fmt, sizeof(op->fmt), "%s", fmt);
		if (plain && conv_signed(conv))
			op->form = TK_NUM_DEC;
		else if (plain && conv == 'u')
			op->form = TK_NUM_UDEC;
		else if (plain && conv == 'x')
			op->form = TK_NUM_HEX;
		else
			op->form = TK_NUM_PRINTF;
		/* The sign decides the cast; keep it for the printf form too. */
		op->rel = conv_signed(conv);
		use_field(c, op->off, op->size);
		c->max_static += NUM_MAX;
		return;
	}

	switch (arg->type) {
	case TEP_PRINT_ATOM:
		snprintf(buf, sizeof(buf), spec, arg->atom.atom);
		lit_add(c, buf, strlen(buf));
		return;
	case TEP_PRINT_FIELD:
		f = plain_field(ev, arg);
		/* A long-sized non-array is taken as a pointer or printk address. */
		if (!f || f->size <= 0 || f->size > 4096 ||
		    (!(f->flags & TEP_FIELD_IS_ARRAY) && f->size == c->long_size)) {
			c->failed = true;
			return;
		}
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = TK_OP_STR;
		op->off = (uint32_t)f->offset;
		op->size = (uint32_t)f->size;
		op->plain = plain;
		snprintf(op->fmt, sizeof(op->fmt), "%s", spec);
		use_field(c, op->off, op->size);
		c->max_static += op->size + 1000;
		return;
	case TEP_PRINT_STRING: {
		struct tep_format_field *df = arg->string.field;

		if (!df && arg->string.string)
			df = tep_find_any_field(ev->tev, arg->string.string);
		if (!df || !(df->flags & TEP_FIELD_IS_DYNAMIC) || df->size != 4) {
			c->failed = true;
			return;
		}
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = TK_OP_DSTR;
		op->off = (uint32_t)df->offset;
		op->size = (uint32_t)df->size;
		op->rel = df->flags & TEP_FIELD_IS_RELATIVE;
		op->plain = plain;
		snprintf(op->fmt, sizeof(op->fmt), "%s", spec);
		use_field(c, op->off, 4);
		c->max_static += 1000;
		return;
	}
	case TEP_PRINT_FLAGS:
	case TEP_PRINT_SYMBOL: {
		bool flags = arg->type == TEP_PRINT_FLAGS;
		struct tep_print_flag_sym *s = flags ? arg->flags.flags : arg->symbol.symbols;
		uint32_t n = 0, i = 0;

		f = plain_field(ev, flags ? arg->flags.field : arg->symbol.field);
		if (!f || !numeric_size(f->size) || !plain) {
			c->failed = true;
			return;
		}
		for (struct tep_print_flag_sym *t = s; t; t = t->next)
			n++;
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = flags ? TK_OP_FLAGS : TK_OP_SYMBOL;
		op->off = (uint32_t)f->offset;
		op->size = (uint32_t)f->size;
		op->syms = calloc(n ? n : 1, sizeof(*op->syms));
		if (!op->syms) {
			c->failed = true;
			return;
		}
		op->nsyms = n;
		for (; s; s = s->next, i++) {
			if (!parse_number(s->value, &op->syms[i].value) || !s->str) {
				c->failed = true;
				return;
			}
			op->syms[i].str = s->str;
			op->syms[i].len = (uint32_t)strlen(s->str);
			c->max_static += op->syms[i].len;
		}
		if (flags && arg->flags.delim) {
			op->delim = arg->flags.delim;
			op->delim_len = (uint32_t)strlen(op->delim);
		}
		c->max_static += (uint64_t)(n + 1) * op->delim_len + 24;
		use_field(c, op->off, op->size);
		return;
	}
	default:
		c->failed = true;
		return;
	}
}

static void compile_format(struct compiler *c)
{
	struct tep_event *tev = c->ev->tev;
	const char *p = tev->print_fmt.format;
	struct tep_print_arg *arg = tev->print_fmt.args;

	if (!p) {
		c->failed = true;
		return;
	}
	while (*p && !c->failed) {
		if (*p == '\\') {
			char ch;

			if (!p[1]) {
				c->failed = true;
				return;
			}
			ch = p[1] == 'n' ? '\n' : p[1] == 't' ? '\t' : p[1] == 'r' ? '\r' : p[1];
			lit_add(c, &ch, 1);
			p += 2;
			continue;
		}
		if (*p != '%') {
			lit_add(c, p, 1);
			p++;
			continue;
		}
		if (p[1] == '%') {
			lit_add(c, "%", 1);
			p += 2;
			continue;
		}
		{
			char spec[24];
			size_t n = 0;
			int ls = 0, digits = 0;
			bool plain = true;
			const char *q = p + 1;

			spec[n++] = '%';
			for (;; q++) {
				char ch = *q;

				if (ch == 'h') {
					ls--;
				} else if (ch == 'l') {
					ls++;
				} else if (ch == '#' || ch == '-' || ch == '.' ||
					   (ch >= '0' && ch <= '9')) {
					digits = (ch >= '0' && ch <= '9') ? digits + 1 : 0;
					if (digits > 3 || n + 2 >= sizeof(spec)) {
						c->failed = true;
						return;
					}
					spec[n++] = ch;
					plain = false;
				} else {
					break;
				}
			}
			if (ls < -2 || ls > 2) {
				c->failed = true;
				return;
			}
			switch (*q) {
			case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 's':
				spec[n++] = *q;
				spec[n] = '\0';
				if (*q == 's' && ls) {
					c->failed = true;
					return;
				}
				compile_conv(c, arg, spec, *q, ls, plain);
				if (arg)
					arg = arg->next;
				p = q + 1;
				break;
			default:
				c->failed = true;
				return;
			}
		}
	}
	lit_flush(c);
}

/* ------------------------------------------------------ sched plugins */

static const struct tk_event_field *find_num(struct tk_event *ev, const char *name)
{
	const struct tk_event_field *f = tk_event_field_find(ev, name);

	return f && numeric_size((int)f->size) && !f->is_dynamic ? f : NULL;
}

static const struct tk_event_field *find_arr(struct tk_event *ev, const char *name)
{
	const struct tk_event_field *f = tk_event_field_find(ev, name);

	return f && !f->is_dynamic && f->size > 0 && f->size <= 256 ? f : NULL;
}

/*
 * The state letters of the sched_switch plugin of libtraceevent 1.7 (the
 * one trace-cmd 3.1.6 loads on our machines): a fixed table over the low
 * eight bits, whatever the kernel's print format says ("X" for 0x10 where
 * the kernel prints "Z"). Later libtraceevent versions read the letters
 * from the print format; this follows the installed oracle.
 */
static void setup_states(struct tk_event *ev)
{
	snprintf(ev->states, sizeof(ev->states), "SDTtZXxW");
}

static bool setup_sched(struct tk_event *ev)
{
	if (!strcmp(ev->name, "sched_switch")) {
		ev->f_prev_pid = find_num(ev, "prev_pid");
		ev->f_prev_comm = find_arr(ev, "prev_comm");
		ev->f_prev_prio = find_num(ev, "prev_prio");
		ev->f_prev_state = find_num(ev, "prev_state");
		ev->f_next_pid = find_num(ev, "next_pid");
		ev->f_next_comm = find_arr(ev, "next_comm");
		ev->f_next_prio = find_num(ev, "next_prio");
		/* Missing fields print differently: leave those to the plugin. */
		if (!ev->f_prev_pid || !ev->f_prev_comm || !ev->f_prev_prio ||
		    !ev->f_prev_state || !ev->f_next_pid || !ev->f_next_comm || !ev->f_next_prio)
			return false;
		setup_states(ev);
		ev->kind = TK_EVENT_SCHED_SWITCH;
		return true;
	}
	if (!strcmp(ev->name, "sched_wakeup") || !strcmp(ev->name, "sched_wakeup_new")) {
		ev->f_pid = find_num(ev, "pid");
		ev->f_comm = find_arr(ev, "comm");
		ev->f_prio = find_num(ev, "prio");
		ev->f_success = tk_event_field_find(ev, "success");
		ev->f_target = tk_event_field_find(ev, "target_cpu");
		if (!ev->f_pid || !ev->f_comm || !ev->f_prio ||
		    (ev->f_success && !numeric_size((int)ev->f_success->size)) ||
		    (ev->f_target && !numeric_size((int)ev->f_target->size)))
			return false;
		ev->kind = TK_EVENT_SCHED_WAKEUP;
		return true;
	}
	return false;
}

void tk_event_compile(struct tk_event_set *set, struct tk_event *ev)
{
	struct compiler c;

	for (size_t i = 0; i < ev->nops; i++) {
		free(ev->ops[i].lit);
		free(ev->ops[i].syms);
	}
	free(ev->ops);
	ev->ops = NULL;
	ev->nops = 0;
	ev->kind = TK_EVENT_SLOW;

	if (ev->tev->handler) {
		if (!strcmp(ev->system, "sched") && setup_sched(ev))
			return;
		/* A plugin handler we do not mirror: the slow path runs it. */
		if (!strcmp(ev->system, "sched") &&
		    (!strcmp(ev->name, "sched_switch") || !strcmp(ev->name, "sched_wakeup") ||
		     !strcmp(ev->name, "sched_wakeup_new")))
			ev->kind = TK_EVENT_SLOW;
		return;
	}
	if (ev->tev->flags & (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT |
			      TEP_EVENT_FL_PRINTRAW | TEP_EVENT_FL_ISFTRACE))
		return;

	memset(&c, 0, sizeof(c));
	c.ev = ev;
	c.long_size = set->long_size;
	compile_format(&c);
	free(c.lit);
	if (c.failed || c.max_static > (1u << 20)) {
		for (size_t i = 0; i < c.nops; i++) {
			free(c.ops[i].lit);
			free(c.ops[i].syms);
		}
		free(c.ops);
		return;
	}
	ev->ops = c.ops;
	ev->nops = c.nops;
	ev->max_static = c.max_static;
	ev->min_size = c.min_size;
	ev->kind = TK_EVENT_PROGRAM;
}

/* --------------------------------------------------------------- run */

static inline uint64_t rd(const struct tk_event_set *set, const uint8_t *p, uint32_t size)
{
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
	default: {
		uint64_t x;

		memcpy(&x, p, 8);
		return set->swap ? __builtin_bswap64(x) : x;
	}
	}
}

static inline char *put_u64(char *o, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*o++ = tmp[--n];
	return o;
}

static inline char *put_s64(char *o, int64_t v)
{
	if (v < 0) {
		*o++ = '-';
		return put_u64(o, (uint64_t)0 - (uint64_t)v);
	}
	return put_u64(o, (uint64_t)v);
}

static inline char *put_hex(char *o, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*o++ = tmp[--n];
	return o;
}

static inline char *put_str(char *o, const char *s, size_t n)
{
	memcpy(o, s, n);
	return o + n;
}

/* A padded numeric field: zero-fill what a 3-digit pad needs ("%03u"). */
static inline char *put_num_fmt(char *o, const char *end, const char *fmt, uint64_t v)
{
	int n = snprintf(o, (size_t)(end - o), fmt, v);

	return n > 0 ? o + (n < end - o ? n : end - o - 1) : o;
}

static inline char *put_cstr_fmt(char *o, const char *end, const char *fmt, const char *s,
				 size_t len)
{
	char tmp[4100];
	int n;

	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	n = snprintf(o, (size_t)(end - o), fmt, tmp);
	return n > 0 ? o + (n < end - o ? n : end - o - 1) : o;
}

static inline int ensure_room(struct tk_outbuf *out, uint64_t need)
{
	if (need > out->cap)
		return -ENOTSUP;
	if (out->cap - out->len < need)
		tk_outbuf_flush(out);
	return 0;
}

static char *put_comm(const struct tk_event_set *set, char *o, const uint8_t *data,
		      const struct tk_event_field *f, int pid, struct tk_event_set *mset)
{
	const char *c = (const char *)data + f->offset;
	size_t n = strnlen(c, f->size);

	(void)set;
	/* The plugin learns names of pids the saved cmdlines did not know. */
	tk_event_register_comm(mset, pid, c, n);
	return put_str(o, c, n);
}

void tk_event_sched_register(struct tk_event_set *set, const struct tk_event *ev,
			     const void *data, uint32_t size)
{
	const uint8_t *d = data;

	if (ev->kind == TK_EVENT_SCHED_SWITCH) {
		if (ev->f_prev_pid->offset + ev->f_prev_pid->size <= size &&
		    ev->f_prev_comm->offset + ev->f_prev_comm->size <= size)
			tk_event_register_comm(set, (int)rd(set, d + ev->f_prev_pid->offset,
							    ev->f_prev_pid->size),
					       (const char *)d + ev->f_prev_comm->offset,
					       strnlen((const char *)d + ev->f_prev_comm->offset,
						       ev->f_prev_comm->size));
		if (ev->f_next_pid->offset + ev->f_next_pid->size <= size &&
		    ev->f_next_comm->offset + ev->f_next_comm->size <= size)
			tk_event_register_comm(set, (int)rd(set, d + ev->f_next_pid->offset,
							    ev->f_next_pid->size),
					       (const char *)d + ev->f_next_comm->offset,
					       strnlen((const char *)d + ev->f_next_comm->offset,
						       ev->f_next_comm->size));
	} else if (ev->kind == TK_EVENT_SCHED_WAKEUP) {
		if (ev->f_pid->offset + ev->f_pid->size <= size &&
		    ev->f_comm->offset + ev->f_comm->size <= size)
			tk_event_register_comm(set, (int)rd(set, d + ev->f_pid->offset,
							    ev->f_pid->size),
					       (const char *)d + ev->f_comm->offset,
					       strnlen((const char *)d + ev->f_comm->offset,
						       ev->f_comm->size));
	}
}

static bool fits(const struct tk_event_field *f, uint32_t size)
{
	return !f || (uint64_t)f->offset + f->size <= size;
}

static int run_sched_switch(struct tk_event_set *set, const struct tk_event *ev,
			    const uint8_t *d, uint32_t size, struct tk_outbuf *out)
{
	uint64_t v, state;
	char *o;
	bool found = false;

	if (!fits(ev->f_prev_pid, size) || !fits(ev->f_prev_comm, size) ||
	    !fits(ev->f_prev_prio, size) || !fits(ev->f_prev_state, size) ||
	    !fits(ev->f_next_pid, size) || !fits(ev->f_next_comm, size) ||
	    !fits(ev->f_next_prio, size))
		return -ENOTSUP;
	if (ensure_room(out, 2u * 256 + 200))
		return -ENOTSUP;
	o = out->buf + out->len;
	v = rd(set, d + ev->f_prev_pid->offset, ev->f_prev_pid->size);
	o = put_comm(set, o, d, ev->f_prev_comm, (int)v, set);
	*o++ = ':';
	o = put_s64(o, (int64_t)v);
	*o++ = ' ';
	*o++ = '[';
	o = put_s64(o, (int32_t)rd(set, d + ev->f_prev_prio->offset, ev->f_prev_prio->size));
	*o++ = ']';
	*o++ = ' ';
	state = rd(set, d + ev->f_prev_state->offset, ev->f_prev_state->size);
	for (int i = 0; ev->states[i]; i++) {
		if (!(state & (1u << i)))
			continue;
		if (found)
			*o++ = '|';
		found = true;
		*o++ = ev->states[i];
	}
	if (!found)
		*o++ = 'R';
	o = put_str(o, " ==> ", 5);
	v = rd(set, d + ev->f_next_pid->offset, ev->f_next_pid->size);
	o = put_comm(set, o, d, ev->f_next_comm, (int)v, set);
	*o++ = ':';
	o = put_s64(o, (int64_t)v);
	*o++ = ' ';
	*o++ = '[';
	o = put_s64(o, (int32_t)rd(set, d + ev->f_next_prio->offset, ev->f_next_prio->size));
	*o++ = ']';
	out->len = (size_t)(o - out->buf);
	return 0;
}

static int run_sched_wakeup(struct tk_event_set *set, const struct tk_event *ev,
			    const uint8_t *d, uint32_t size, struct tk_outbuf *out)
{
	uint64_t v;
	char *o;

	if (!fits(ev->f_pid, size) || !fits(ev->f_comm, size) || !fits(ev->f_prio, size) ||
	    !fits(ev->f_success, size) || !fits(ev->f_target, size))
		return -ENOTSUP;
	if (ensure_room(out, 256 + 200))
		return -ENOTSUP;
	o = out->buf + out->len;
	v = rd(set, d + ev->f_pid->offset, ev->f_pid->size);
	o = put_comm(set, o, d, ev->f_comm, (int)v, set);
	*o++ = ':';
	o = put_s64(o, (int64_t)v);
	o = put_str(o, " [", 2);
	o = put_s64(o, (int64_t)rd(set, d + ev->f_prio->offset, ev->f_prio->size));
	*o++ = ']';
	if (ev->f_success) {
		o = put_str(o, " success=", 9);
		o = put_s64(o, (int64_t)rd(set, d + ev->f_success->offset, ev->f_success->size));
	}
	if (ev->f_target) {
		v = rd(set, d + ev->f_target->offset, ev->f_target->size);
		o = put_str(o, " CPU:", 5);
		if (v < 10)
			o = put_str(o, "00", 2);
		else if (v < 100)
			*o++ = '0';
		o = put_u64(o, v);
	}
	out->len = (size_t)(o - out->buf);
	return 0;
}

int tk_event_run(struct tk_event_set *set, const struct tk_event *ev, const void *data,
		 uint32_t size, struct tk_outbuf *out)
{
	const uint8_t *d = data;
	char *o, *end;

	if (ev->kind == TK_EVENT_SCHED_SWITCH)
		return run_sched_switch(set, ev, d, size, out);
	if (ev->kind == TK_EVENT_SCHED_WAKEUP)
		return run_sched_wakeup(set, ev, d, size, out);
	if (ev->kind != TK_EVENT_PROGRAM || size < ev->min_size)
		return -ENOTSUP;
	if (ensure_room(out, ev->max_static + size + 16))
		return -ENOTSUP;
	o = out->buf + out->len;
	end = out->buf + out->cap;
	for (size_t i = 0; i < ev->nops; i++) {
		const struct tk_op *op = &ev->ops[i];

		switch (op->kind) {
		case TK_OP_LIT:
			o = put_str(o, op->lit, op->lit_len);
			break;
		case TK_OP_NUM: {
			uint64_t v = cast_num(rd(set, d + op->off, op->size), op->ls, op->rel);

			switch (op->form) {
			case TK_NUM_DEC:
				o = put_s64(o, (int64_t)v);
				break;
			case TK_NUM_UDEC:
				o = put_u64(o, v);
				break;
			case TK_NUM_HEX:
				o = put_hex(o, v);
				break;
			default:
				o = put_num_fmt(o, end, op->fmt, v);
				break;
			}
			break;
		}
		case TK_OP_STR: {
			const char *s = (const char *)d + op->off;
			size_t n = strnlen(s, op->size);

			o = op->plain ? put_str(o, s, n) : put_cstr_fmt(o, end, op->fmt, s, n);
			break;
		}
		case TK_OP_DSTR: {
			uint32_t off, len;
			size_t n;

			if (tk_event_dyn_loc(set, op->off, op->size, op->rel, d, size, &off, &len)) {
				/* Let the slow path print what trace-cmd prints. */
				return -ENOTSUP;
			}
			if (!len)
				break;
			n = strnlen((const char *)d + off, size - off);
			if (op->plain)
				o = put_str(o, (const char *)d + off, n);
			else
				o = put_cstr_fmt(o, end, op->fmt, (const char *)d + off, n);
			break;
		}
		case TK_OP_FLAGS: {
			uint64_t v = rd(set, d + op->off, op->size);
			bool printed = false;

			for (uint32_t k = 0; k < op->nsyms; k++) {
				uint64_t fv = op->syms[k].value;

				if ((int64_t)fv > 0 && (v & fv) == fv) {
					if (printed && op->delim)
						o = put_str(o, op->delim, op->delim_len);
					o = put_str(o, op->syms[k].str, op->syms[k].len);
					printed = true;
					v &= ~fv;
				}
			}
			if (v) {
				if (printed && op->delim)
					o = put_str(o, op->delim, op->delim_len);
				o = put_str(o, "0x", 2);
				o = put_hex(o, v);
			}
			break;
		}
		case TK_OP_SYMBOL: {
			uint64_t v = rd(set, d + op->off, op->size);
			uint32_t k;

			for (k = 0; k < op->nsyms; k++) {
				if (op->syms[k].value == v) {
					o = put_str(o, op->syms[k].str, op->syms[k].len);
					break;
				}
			}
			if (k == op->nsyms) {
				o = put_str(o, "0x", 2);
				o = put_hex(o, v);
			}
			break;
		}
		}
	}
	out->len = (size_t)(o - out->buf);
	return 0;
}
