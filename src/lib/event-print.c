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
 * widths, %c and other letters, %p forms other than bare %p, %ps/%pS/%pf/%pF,
 * %pI4/%pi4/%pI6/%pi6/%pI6c, argument kinds other than a plain field, an
 * element of a fixed array field at a constant index (REC->args[1]), a
 * numeric constant (C suffixes such as "1U" allowed), casts and
 * arithmetic over those, a string constant, __get_str(), a string
 * ternary, __print_flags() and __print_symbolic() with numeric values.
 *
 * A last pass (finish_program()) shapes the program for speed: each
 * literal moves into the op after it, so "a=%d b=%s" is two dispatches;
 * a value that is a plain field is read by a direct load of its size
 * instead of the expression walk; the record size is tested once per
 * record against the end of the furthest fixed field (ev->min_size).
 * Numbers are written two digits at a time from a pair table, the length
 * known first (tk_put_u64() in event-internal.h); short copies use
 * overlapping fixed-size moves (tk_copy()): "rep movs", what GCC makes of
 * a short variable memcpy(), was the costliest instruction of the run.
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
/* Longest symbol name printed by FUNC ops (longer ones are cut). */
#define SYM_MAX 4096u

struct compiler {
	struct tk_event *ev;
	struct tk_op *ops;
	size_t nops, cap;
	struct tk_expr *exprs;
	size_t nexprs, expr_cap;
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
	c->ops[c->nops].expr = -1;
	return &c->ops[c->nops++];
}

static int32_t new_expr(struct compiler *c, uint8_t kind)
{
	if (c->nexprs >= 4096) {
		c->failed = true;
		return -1;
	}
	if (c->nexprs == c->expr_cap) {
		size_t n = c->expr_cap ? c->expr_cap * 2 : 8;
		struct tk_expr *t = realloc(c->exprs, n * sizeof(*t));

		if (!t) {
			c->failed = true;
			return -1;
		}
		c->exprs = t;
		c->expr_cap = n;
	}
	memset(&c->exprs[c->nexprs], 0, sizeof(c->exprs[0]));
	c->exprs[c->nexprs].kind = kind;
	c->exprs[c->nexprs].a = c->exprs[c->nexprs].b = c->exprs[c->nexprs].c = -1;
	return (int32_t)c->nexprs++;
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
	/* Padded to 16-byte chunks: the run copies whole chunks (see put_lit). */
	op->lit = calloc(1, (c->lit_len + 15) / 16 * 16 + 16);
	if (op->lit)
		memcpy(op->lit, c->lit, c->lit_len);
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
	/* libtraceevent reads the digits and ignores the rest: take C's suffixes ("1U"). */
	while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
		end++;
	return !errno && !*end;
}

/*
 * The value libtraceevent's eval_flag() gives a __print_flags() or
 * __print_symbolic() key: a number (read as far as it goes), one of the
 * softirq / hrtimer names it knows, else -1.
 */
static uint64_t flag_value(const char *s)
{
	static const struct {
		const char *name;
		uint64_t value;
	} known[] = {
		{"HI_SOFTIRQ", 0},	  {"TIMER_SOFTIRQ", 1},	  {"NET_TX_SOFTIRQ", 2},
		{"NET_RX_SOFTIRQ", 3},	  {"BLOCK_SOFTIRQ", 4},	  {"IRQ_POLL_SOFTIRQ", 5},
		{"TASKLET_SOFTIRQ", 6},	  {"SCHED_SOFTIRQ", 7},	  {"HRTIMER_SOFTIRQ", 8},
		{"RCU_SOFTIRQ", 9},	  {"HRTIMER_NORESTART", 0}, {"HRTIMER_RESTART", 1},
	};

	if (isdigit((unsigned char)s[0]))
		return strtoull(s, NULL, 0);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (!strcmp(known[i].name, s))
			return known[i].value;
	}
	return UINT64_MAX;
}

/*
 * The mask libtraceevent's eval_type_str() applies for a cast: it never
 * sign-extends (its sign flag is never set), so a cast is a mask or
 * nothing.
 */
static uint64_t cast_mask(const char *type)
{
	size_t len = strlen(type);

	if (len < 2 || type[len - 1] == '*' || !strncmp(type, "struct", 6))
		return UINT64_MAX;
	if (!strcmp(type, "u8") || !strcmp(type, "s8"))
		return 0xff;
	if (!strcmp(type, "u16") || !strcmp(type, "s16"))
		return 0xffff;
	if (!strcmp(type, "u32") || !strcmp(type, "s32"))
		return 0xffffffff;
	if (!strncmp(type, "unsigned ", 9))
		type += 9;
	if (!strcmp(type, "char"))
		return 0xff;
	if (!strcmp(type, "short"))
		return 0xffff;
	if (!strcmp(type, "int"))
		return 0xffffffff;
	return UINT64_MAX;
}

static bool known_op(const char *op)
{
	static const char *const ops[] = {"|", "||", "&", "&&", "<", "<<", "<=", ">", ">>",
					  ">=", "==", "!=", "-", "+", "/", "%", "*"};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!strcmp(op, ops[i]))
			return true;
	}
	return false;
}

static bool expr_is_const(const struct compiler *c, int32_t e);
uint64_t tk_event_eval(const struct tk_event_set *set, const struct tk_expr *x, int32_t i,
		       const uint8_t *d);

/* Compile a numeric argument into an expression; -1 when we cannot. */
static int32_t compile_expr(struct compiler *c, struct tep_print_arg *arg, int depth)
{
	const struct tep_format_field *f;
	int32_t e, a, b, k;
	uint64_t v;

	if (!arg || depth > 32 || c->failed)
		return -1;
	switch (arg->type) {
	case TEP_PRINT_NULL:
		e = new_expr(c, TK_EXPR_CONST);
		return e;
	case TEP_PRINT_ATOM:
		/* A zero atom may be an enum name libtraceevent resolves. */
		if (!parse_number(arg->atom.atom, &v) || (!v && strcmp(arg->atom.atom, "0")))
			return -1;
		e = new_expr(c, TK_EXPR_CONST);
		if (e >= 0)
			c->exprs[e].val = v;
		return e;
	case TEP_PRINT_FIELD:
		f = plain_field(c->ev, arg);
		if (!f || !numeric_size(f->size))
			return -1;
		e = new_expr(c, TK_EXPR_FIELD);
		if (e < 0)
			return -1;
		c->exprs[e].off = (uint32_t)f->offset;
		c->exprs[e].size = (uint32_t)f->size;
		use_field(c, (uint32_t)f->offset, (uint32_t)f->size);
		return e;
	case TEP_PRINT_TYPE:
		if (!arg->typecast.type)
			return -1;
		a = compile_expr(c, arg->typecast.item, depth + 1);
		if (a < 0)
			return -1;
		e = new_expr(c, TK_EXPR_MASK);
		if (e < 0)
			return -1;
		c->exprs[e].a = a;
		c->exprs[e].val = cast_mask(arg->typecast.type);
		return e;
	case TEP_PRINT_OP:
		if (!arg->op.op || !arg->op.left)
			return -1;
		if (!strcmp(arg->op.op, "?")) {
			struct tep_print_arg *r = arg->op.right;

			if (!r || r->type != TEP_PRINT_OP || !r->op.op || strcmp(r->op.op, ":"))
				return -1;
			k = compile_expr(c, arg->op.left, depth + 1);
			a = compile_expr(c, r->op.left, depth + 1);
			b = compile_expr(c, r->op.right, depth + 1);
			if (k < 0 || a < 0 || b < 0)
				return -1;
			e = new_expr(c, TK_EXPR_COND);
			if (e < 0)
				return -1;
			c->exprs[e].a = k;
			c->exprs[e].b = a;
			c->exprs[e].c = b;
			return e;
		}
		if (!strcmp(arg->op.op, "[")) {
			/*
			 * REC->args[N]: libtraceevent reads element N at the
			 * element size of the (fixed) array field. Only a plain
			 * field and a constant index are compiled.
			 */
			struct tep_format_field *af;

			if (!arg->op.right || arg->op.left->type != TEP_PRINT_FIELD ||
			    !arg->op.left->field.name)
				return -1;
			af = tep_find_any_field(c->ev->tev, arg->op.left->field.name);
			k = compile_expr(c, arg->op.right, depth + 1);
			if (!af || k < 0 || !expr_is_const(c, k) ||
			    (af->flags & TEP_FIELD_IS_DYNAMIC) ||
			    !numeric_size(af->elementsize) || af->offset < 0 || af->size <= 0)
				return -1;
			v = tk_event_eval(NULL, c->exprs, k, NULL);
			/* The element must lie inside the field. */
			if (v > 0xffff || (v + 1) * (uint64_t)af->elementsize > (uint64_t)af->size)
				return -1;
			e = new_expr(c, TK_EXPR_FIELD);
			if (e < 0)
				return -1;
			c->exprs[e].off =
				(uint32_t)((uint64_t)af->offset + v * (uint64_t)af->elementsize);
			c->exprs[e].size = (uint32_t)af->elementsize;
			use_field(c, c->exprs[e].off, c->exprs[e].size);
			return e;
		}
		if (!known_op(arg->op.op) || !arg->op.right)
			return -1;
		a = compile_expr(c, arg->op.left, depth + 1);
		b = compile_expr(c, arg->op.right, depth + 1);
		if (a < 0 || b < 0)
			return -1;
		e = new_expr(c, TK_EXPR_BIN);
		if (e < 0)
			return -1;
		memcpy(c->exprs[e].op, arg->op.op, strlen(arg->op.op) + 1);
		c->exprs[e].a = a;
		c->exprs[e].b = b;
		return e;
	default:
		return -1;
	}
}

static bool expr_is_const(const struct compiler *c, int32_t e)
{
	const struct tk_expr *x = &c->exprs[e];

	switch (x->kind) {
	case TK_EXPR_CONST:
		return true;
	case TK_EXPR_FIELD:
		return false;
	case TK_EXPR_MASK:
		return expr_is_const(c, x->a);
	default:
		return expr_is_const(c, x->a) && expr_is_const(c, x->b) &&
		       (x->c < 0 || expr_is_const(c, x->c));
	}
}

/*
 * Split "%[-0]width" flags for hand padding: only '-' and '0' flags and a
 * width, which covers the kernel's "%03d" and "%-5u" forms.
 */
static bool simple_spec(const char *spec, uint16_t *width, bool *left, bool *zero)
{
	const char *p = spec + 1;
	unsigned int w = 0;

	*left = *zero = false;
	for (; *p == '-' || *p == '0'; p++) {
		if (*p == '-')
			*left = true;
		else
			*zero = true;
	}
	while (*p >= '0' && *p <= '9')
		w = w * 10 + (unsigned int)(*p++ - '0');
	if (p[1] != '\0' || w > 999)
		return false;
	if (*left)
		*zero = false;
	*width = (uint16_t)w;
	return true;
}

/* A %p conversion: @kind is the letter after 'p' (0 for a bare %p). */
static void compile_pointer(struct compiler *c, struct tep_print_arg *arg, char kind, bool plain)
{
	int32_t e;
	struct tk_op *op;

	if (!plain) {
		c->failed = true;
		return;
	}
	e = compile_expr(c, arg, 0);
	if (e < 0) {
		c->failed = true;
		return;
	}
	lit_flush(c);
	op = new_op(c);
	if (!op)
		return;
	op->expr = e;
	if (!kind) {
		op->kind = TK_OP_PTR;
		c->max_static += 24;
	} else {
		op->kind = TK_OP_FUNC;
		op->offset = kind == 'S' || kind == 'F';
		c->max_static += SYM_MAX + 48;
	}
}

/*
 * %pI4 %pi4 %pI6 %pi6 %pI6c of a plain fixed field (casts dropped, as
 * libtraceevent drops them) of exactly 4 or 16 bytes: other sizes print
 * "INVALIDIPv4/6" there and stay with it, as do the byte-order suffixes
 * [hnbl] of the IPv4 forms and %pISpc. @q points at 'I' or 'i'.
 * Return: the format characters used after 'p', or 0 (not compiled).
 */
static int compile_ip(struct compiler *c, struct tep_print_arg *arg, const char *q, int ls,
		      bool plain)
{
	const struct tep_format_field *f;
	bool v4 = q[1] == '4', compressed = !v4 && q[2] == 'c';
	struct tk_op *op;

	if (ls || !plain || !arg || (v4 && q[2] && strchr("hnbl", q[2])) ||
	    (compressed && q[0] != 'I'))
		return 0;
	while (arg && arg->type == TEP_PRINT_TYPE)
		arg = arg->typecast.item;
	f = plain_field(c->ev, arg);
	if (!f || f->offset < 0 || f->size != (v4 ? 4 : 16))
		return 0;
	lit_flush(c);
	op = new_op(c);
	if (!op)
		return 0;
	op->kind = v4 ? TK_OP_IP4 : TK_OP_IP6;
	op->off = (uint32_t)f->offset;
	op->size = (uint32_t)f->size;
	op->zero = q[0] == 'i';
	op->offset = compressed;
	use_field(c, op->off, op->size);
	c->max_static += 48;
	return compressed ? 3 : 2;
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
		char fmt[40];
		int32_t e = compile_expr(c, arg, 0);

		if (e < 0) {
			c->failed = true;
			return;
		}
		snprintf(fmt, sizeof(fmt), "%.*sll%c", (int)strlen(spec) - 1, spec, conv);
		if (expr_is_const(c, e)) {
			uint64_t v = tk_event_eval(NULL, c->exprs, e, NULL);

			v = cast_num(v, ls, conv_signed(conv));
			snprintf(buf, sizeof(buf), fmt, v);
			lit_add(c, buf, strlen(buf));
			return;
		}
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = TK_OP_NUM;
		op->expr = e;
		op->ls = ls;
		op->plain = plain;
		snprintf(op->fmt, sizeof(op->fmt), "%s", fmt);
		op->form = TK_NUM_PRINTF;
		if (conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x') {
			if (plain || simple_spec(spec, &op->width, &op->left, &op->zero))
				op->form = conv == 'u' ? TK_NUM_UDEC :
					   conv == 'x' ? TK_NUM_HEX : TK_NUM_DEC;
		}
		/* The sign decides the cast; keep it for the printf form too. */
		op->rel = conv_signed(conv);
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
		if (!f || f->size < 0 || f->size > 4096 ||
		    (!(f->flags & TEP_FIELD_IS_ARRAY) && f->size == c->long_size)) {
			c->failed = true;
			return;
		}
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = TK_OP_STR;
		/* A zero-sized array (char buf[]) runs to the end of the record. */
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
	case TEP_PRINT_OP: {
		/* cond ? "text" : "text", the only operator libtraceevent takes for %s */
		struct tep_print_arg *r = arg->op.right;
		int32_t e;

		if (!plain || !arg->op.op || strcmp(arg->op.op, "?") || !r ||
		    r->type != TEP_PRINT_OP || !r->op.op || strcmp(r->op.op, ":") ||
		    !r->op.left || r->op.left->type != TEP_PRINT_ATOM || !r->op.right ||
		    r->op.right->type != TEP_PRINT_ATOM) {
			c->failed = true;
			return;
		}
		e = compile_expr(c, arg->op.left, 0);
		if (e < 0) {
			c->failed = true;
			return;
		}
		lit_flush(c);
		op = new_op(c);
		if (!op)
			return;
		op->kind = TK_OP_CSTR;
		op->expr = e;
		op->lit = strdup(r->op.left->atom.atom);
		if (!op->lit) {
			c->failed = true;
			return;
		}
		op->lit_len = (uint32_t)strlen(op->lit);
		op->alt = r->op.right->atom.atom;
		op->alt_len = (uint32_t)strlen(op->alt);
		c->max_static += op->lit_len + op->alt_len;
		return;
	}
	case TEP_PRINT_FLAGS:
	case TEP_PRINT_SYMBOL: {
		bool flags = arg->type == TEP_PRINT_FLAGS;
		struct tep_print_flag_sym *s = flags ? arg->flags.flags : arg->symbol.symbols;
		uint32_t n = 0, i = 0;
		int32_t e;

		e = compile_expr(c, flags ? arg->flags.field : arg->symbol.field, 0);
		if (e < 0 || !plain) {
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
		op->expr = e;
		op->syms = calloc(n ? n : 1, sizeof(*op->syms));
		if (!op->syms) {
			c->failed = true;
			return;
		}
		op->nsyms = n;
		for (; s; s = s->next, i++) {
			if (!s->value || !s->str) {
				c->failed = true;
				return;
			}
			op->syms[i].value = flag_value(s->value);
			op->syms[i].str = s->str;
			op->syms[i].len = (uint32_t)strlen(s->str);
			c->max_static += op->syms[i].len;
		}
		if (flags && arg->flags.delim) {
			op->delim = arg->flags.delim;
			op->delim_len = (uint32_t)strlen(op->delim);
		}
		c->max_static += (uint64_t)(n + 1) * op->delim_len + 24;
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
				} else if (ch == 'L') {
					/* libtraceevent: L sets long long, z/Z long */
					ls = 2;
				} else if (ch == 'z' || ch == 'Z') {
					ls = 1;
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
			case 'p': {
				/*
				 * libtraceevent takes one more letter for the
				 * symbol forms; a bare %p leaves what follows
				 * as text. Other forms (%pM, %pU...) are left
				 * to it.
				 */
				char k = q[1];

				if ((k == 'I' || k == 'i') && (q[2] == '4' || q[2] == '6')) {
					int used = compile_ip(c, arg, q + 1, ls, plain);

					if (used <= 0) {
						c->failed = true;
						return;
					}
					if (arg)
						arg = arg->next;
					p = q + 1 + used;
					break;
				}

				if (ls || (isalnum((unsigned char)k) && k != 's' && k != 'S' &&
					   k != 'f' && k != 'F')) {
					c->failed = true;
					return;
				}
				if (!isalnum((unsigned char)k))
					k = 0;
				compile_pointer(c, arg, k, plain);
				if (arg)
					arg = arg->next;
				p = q + 1 + (k != 0);
				break;
			}
			default:
				c->failed = true;
				return;
			}
		}
	}
	lit_flush(c);
}

/* ----------------------------------------------------- hrtimer plugin */

static void add_lit(struct compiler *c, const char *s)
{
	lit_add(c, s, strlen(s));
	lit_flush(c);
}

static bool add_field_num(struct compiler *c, const char *name, enum tk_num_form form)
{
	const struct tk_event_field *f = tk_event_field_find(c->ev, name);
	struct tk_op *op;
	int32_t e;

	if (!f || f->is_dynamic || !numeric_size((int)f->size))
		return false;
	e = new_expr(c, TK_EXPR_FIELD);
	op = new_op(c);
	if (e < 0 || !op)
		return false;
	c->exprs[e].off = f->offset;
	c->exprs[e].size = f->size;
	use_field(c, f->offset, f->size);
	op->kind = form == TK_NUM_PRINTF ? TK_OP_FUNCF : TK_OP_NUM;
	op->form = form;
	op->ls = 2;
	op->plain = true;
	op->expr = e;
	c->max_static += form == TK_NUM_PRINTF ? 160 : NUM_MAX;
	return true;
}

/*
 * libtraceevent's hrtimer plugin, which trace-cmd loads: hrtimer_start
 * and hrtimer_expire_entry printed field by field with "0x%llx" and
 * "%llu" of the raw values, and the function as "name/0x(addr - value)".
 */
static bool setup_hrtimer(struct compiler *c)
{
	struct tk_event *ev = c->ev;
	const char *timer = tk_event_field_find(ev, "timer") ? "timer" : "hrtimer";
	bool start = !strcmp(ev->name, "hrtimer_start");

	if (!start && strcmp(ev->name, "hrtimer_expire_entry"))
		return false;
	add_lit(c, "hrtimer=0x");
	if (!add_field_num(c, timer, TK_NUM_HEX))
		return false;
	if (start) {
		add_lit(c, " function=");
		if (!add_field_num(c, "function", TK_NUM_PRINTF))
			return false;
		add_lit(c, " expires=");
		if (!add_field_num(c, "expires", TK_NUM_UDEC))
			return false;
		add_lit(c, " softexpires=");
		return add_field_num(c, "softexpires", TK_NUM_UDEC) && !c->failed;
	}
	add_lit(c, " now=");
	if (!add_field_num(c, "now", TK_NUM_UDEC))
		return false;
	add_lit(c, " function=");
	return add_field_num(c, "function", TK_NUM_PRINTF) && !c->failed;
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

/* The record size that covers every field the mirror reads: one test per record. */
static void sched_min_size(struct tk_event *ev)
{
	const struct tk_event_field *const f[] = {
		ev->f_pid,	 ev->f_comm,	  ev->f_prio,	   ev->f_success,   ev->f_target,
		ev->f_prev_pid, ev->f_prev_comm, ev->f_prev_prio, ev->f_prev_state,
		ev->f_next_pid, ev->f_next_comm, ev->f_next_prio,
	};
	uint64_t m = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i] && (uint64_t)f[i]->offset + f[i]->size > m)
			m = (uint64_t)f[i]->offset + f[i]->size;
	}
	ev->min_size = m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
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
		sched_min_size(ev);
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
		sched_min_size(ev);
		ev->kind = TK_EVENT_SCHED_WAKEUP;
		return true;
	}
	return false;
}


void tk_event_free_program(struct tk_event *ev)
{
	for (size_t i = 0; i < ev->nops; i++) {
		free(ev->ops[i].lit);
		free(ev->ops[i].pre);
		free(ev->ops[i].syms);
	}
	free(ev->ops);
	free(ev->exprs);
	ev->ops = NULL;
	ev->nops = 0;
	ev->exprs = NULL;
	ev->nexprs = 0;
}

/*
 * The last pass: each literal moves into the op after it (one dispatch
 * prints "text%d"), plain field values get a direct load instead of the
 * expression walk, and the length modifier becomes a bit count.
 */
static void finish_program(struct tk_event *ev)
{
	size_t k = 0;

	for (size_t i = 0; i < ev->nops; i++) {
		struct tk_op *op = &ev->ops[i];

		if (op->kind != TK_OP_LIT && op->expr >= 0 &&
		    ev->exprs[op->expr].kind == TK_EXPR_FIELD) {
			op->load = (uint8_t)ev->exprs[op->expr].size;
			op->load_off = ev->exprs[op->expr].off;
		}
		op->bits = op->ls <= -2 ? 8 : op->ls == -1 ? 16 : op->ls == 0 ? 32 : 64;
		if (op->kind == TK_OP_LIT && i + 1 < ev->nops && ev->ops[i + 1].kind != TK_OP_LIT &&
		    !ev->ops[i + 1].pre) {
			ev->ops[i + 1].pre = op->lit;
			ev->ops[i + 1].pre_len = op->lit_len;
			op->lit = NULL;
			continue;
		}
		if (k != i)
			ev->ops[k] = *op;
		k++;
	}
	ev->nops = k;
}

void tk_event_compile(struct tk_event_set *set, struct tk_event *ev)
{
	struct compiler c;
	bool ok;

	tk_event_free_program(ev);
	ev->kind = TK_EVENT_SLOW;

	memset(&c, 0, sizeof(c));
	c.ev = ev;
	c.long_size = set->long_size;
	if (ev->tev->handler) {
		if (!strcmp(ev->system, "sched") && setup_sched(ev))
			return;
		/* A plugin handler we do not mirror: the slow path runs it. */
		if (strcmp(ev->system, "timer"))
			return;
		ok = setup_hrtimer(&c);
	} else {
		if (ev->tev->flags & (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT |
				      TEP_EVENT_FL_PRINTRAW))
			return;
		compile_format(&c);
		ok = !c.failed;
	}
	free(c.lit);
	if (!ok || c.failed || c.max_static > (1u << 20)) {
		for (size_t i = 0; i < c.nops; i++) {
			free(c.ops[i].lit);
			free(c.ops[i].syms);
		}
		free(c.ops);
		free(c.exprs);
		return;
	}
	ev->ops = c.ops;
	ev->nops = c.nops;
	ev->exprs = c.exprs;
	ev->nexprs = c.nexprs;
	ev->max_static = c.max_static;
	ev->min_size = c.min_size;
	ev->kind = TK_EVENT_PROGRAM;
	finish_program(ev);
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

const char tk_dec_pairs[201] = "00010203040506070809101112131415161718192021222324"
				"25262728293031323334353637383940414243444546474849"
				"50515253545556575859606162636465666768697071727374"
				"75767778798081828384858687888990919293949596979899";
const char tk_hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
const uint64_t tk_pow10[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
	10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

static inline char *put_u64(char *o, uint64_t v)
{
	return tk_put_u64(o, v);
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
	return tk_put_hex(o, v);
}

static inline char *put_str(char *o, const char *s, size_t n)
{
	return tk_copy(o, s, n);
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

/*
 * Literal text in whole 16-byte chunks: fixed-size copies compile to a
 * few vector moves, where a variable memcpy() became "rep movs", the
 * slowest way to move ten bytes. The literal is padded and the output has
 * the event's worst case + 16 bytes of room, so the overshoot is harmless.
 */
static inline char *put_lit(char *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i += 16)
		memcpy(o + i, s + i, 16);
	return o + n;
}

static inline int ensure_room(struct tk_outbuf *out, uint64_t need)
{
	if (need > out->cap)
		return -ENOTSUP;
	if (out->cap - out->len < need)
		tk_outbuf_flush(out);
	return 0;
}

/* strnlen(s, 16) in two words: the first zero byte by the usual bit trick. */
static inline size_t strnlen16(const char *s)
{
	const uint64_t lo = 0x0101010101010101ull, hi = 0x8080808080808080ull;
	uint64_t w[2];

	memcpy(w, s, 16);
	for (int i = 0; i < 2; i++) {
		uint64_t z = (w[i] - lo) & ~w[i] & hi;

		if (z)
			return (size_t)i * 8 + (size_t)__builtin_ctzll(z) / 8;
	}
	return 16;
}

/*
 * Whether registering @pid's name would change nothing: once the table is
 * sorted, pid 0 is dropped and a pid it knows is kept (tk_event_comm_add()),
 * and a valid cache slot says it knows the pid without a search.
 */
static inline bool comm_settled(const struct tk_comm_table *t, int pid)
{
	const struct tk_comm_cache *c = &t->cache[(uint32_t)pid & (TK_COMM_CACHE - 1)];

	return t->sorted && (!pid || (c->gen == t->gen && c->pid == pid && c->comm));
}

static char *put_comm(const struct tk_event_set *set, char *o, const uint8_t *data,
		      const struct tk_event_field *f, int pid, struct tk_event_set *mset)
{
	const char *c = (const char *)data + f->offset;
	size_t n = f->size == 16 ? strnlen16(c) : strnlen(c, f->size);

	(void)set;
	/*
	 * The plugin registers every name it prints (see "Command names" in
	 * event.c for what that does to later lines).
	 */
	if (!comm_settled(mset->comms, pid))
		tk_event_register_comm(mset, pid, c, n);
	if (f->size == 16) {
		/* The field lies inside the record: copy it whole (room is ensured). */
		memcpy(o, c, 16);
		return o + n;
	}
	return put_str(o, c, n);
}

/* One name the plugin registered in tep already: ours learns it, tep is not told twice. */
static void sched_learn(struct tk_event_set *set, const uint8_t *d, uint32_t size,
			const struct tk_event_field *fpid, const struct tk_event_field *fcomm)
{
	const char *c;

	if ((uint64_t)fpid->offset + fpid->size > size ||
	    (uint64_t)fcomm->offset + fcomm->size > size)
		return;
	c = (const char *)d + fcomm->offset;
	tk_event_comm_add(set, (int)rd(set, d + fpid->offset, fpid->size), c,
			  strnlen(c, fcomm->size), false);
}

/*
 * After libtraceevent printed a sched event (slow path), its plugin has
 * registered prev then next (or the woken) name in tep: register them
 * here in the same order.
 */
void tk_event_sched_register(struct tk_event_set *set, const struct tk_event *ev,
			     const void *data, uint32_t size)
{
	const uint8_t *d = data;

	if (ev->kind == TK_EVENT_SCHED_SWITCH) {
		sched_learn(set, d, size, ev->f_prev_pid, ev->f_prev_comm);
		sched_learn(set, d, size, ev->f_next_pid, ev->f_next_comm);
	} else if (ev->kind == TK_EVENT_SCHED_WAKEUP) {
		sched_learn(set, d, size, ev->f_pid, ev->f_comm);
	}
}

static int run_sched_switch(struct tk_event_set *set, const struct tk_event *ev,
			    const uint8_t *d, uint32_t size, struct tk_outbuf *out)
{
	uint64_t v, state;
	char *o;
	bool found = false;

	if (size < ev->min_size)
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

	if (size < ev->min_size)
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


uint64_t tk_event_eval(const struct tk_event_set *set, const struct tk_expr *x, int32_t i,
		       const uint8_t *d)
{
	const struct tk_expr *e = &x[i];
	uint64_t l, r;

	switch (e->kind) {
	case TK_EXPR_CONST:
		return e->val;
	case TK_EXPR_FIELD:
		return rd(set, d + e->off, e->size);
	case TK_EXPR_MASK:
		return tk_event_eval(set, x, e->a, d) & e->val;
	case TK_EXPR_COND:
		return tk_event_eval(set, x, e->a, d) ? tk_event_eval(set, x, e->b, d) :
							  tk_event_eval(set, x, e->c, d);
	default:
		break;
	}
	l = tk_event_eval(set, x, e->a, d);
	r = tk_event_eval(set, x, e->b, d);
	switch (e->op[0]) {
	case '|':
		return e->op[1] ? (l || r) : (l | r);
	case '&':
		return e->op[1] ? (l && r) : (l & r);
	case '<':
		return e->op[1] == '<' ? l << (r & 63) : e->op[1] == '=' ? l <= r : l < r;
	case '>':
		return e->op[1] == '>' ? l >> (r & 63) : e->op[1] == '=' ? l >= r : l > r;
	case '=':
		return l == r;
	case '!':
		return l != r;
	case '-':
		return l - r;
	case '+':
		return l + r;
	case '*':
		return l * r;
	/* libtraceevent would trap on a zero divisor; we print 0. */
	case '/':
		return r ? l / r : 0;
	case '%':
		return r ? l % r : 0;
	}
	return 0;
}

/* "%-5d", "%03u", "%08x": digits in @tmp, padded as printf pads them. */
static inline char *put_padded(char *o, const struct tk_op *op, const char *digits, size_t n,
			       bool neg)
{
	size_t len = n + neg, pad = op->width > len ? op->width - len : 0;

	if (!op->left && !op->zero)
		for (; pad; pad--)
			*o++ = ' ';
	if (neg)
		*o++ = '-';
	if (op->zero)
		for (; pad; pad--)
			*o++ = '0';
	memcpy(o, digits, n);
	o += n;
	for (; pad; pad--)
		*o++ = ' ';
	return o;
}

static inline char *put_num(char *o, const struct tk_op *op, uint64_t v)
{
	char tmp[24];
	char *e;
	bool neg = false;

	if (!op->width) {
		switch (op->form) {
		case TK_NUM_DEC:
			return put_s64(o, (int64_t)v);
		case TK_NUM_UDEC:
			return put_u64(o, v);
		default:
			return put_hex(o, v);
		}
	}
	if (op->form == TK_NUM_DEC && (int64_t)v < 0) {
		neg = true;
		v = (uint64_t)0 - v;
	}
	e = op->form == TK_NUM_HEX ? put_hex(tmp, v) : put_u64(tmp, v);
	return put_padded(o, op, tmp, (size_t)(e - tmp), neg);
}

/* "name", "name+0xoff" (%pS) or the plugin's "name/0x(addr - val)". */
static char *put_func(struct tk_event_set *set, char *o, uint64_t v, enum tk_op_kind kind,
		      bool offset)
{
	const struct tk_ksym *k = tk_event_ksym_find(set, v);

	if (kind == TK_OP_FUNCF) {
		/* The plugin formats into a 128-byte buffer: keep its cut. */
		char tmp[24];
		char *t;
		size_t n;

		if (k) {
			char *start = o;

			/* Written in place, then cut (the op's room is 160 bytes). */
			n = k->name_len < 127 ? k->name_len : 127;
			o = put_str(o, set->ksym_text + k->name_off, n);
			o = put_str(o, "/0x", 3);
			o = put_hex(o, k->addr - v);
			return o - start < 127 ? o : start + 127;
		}
		t = put_hex(tmp, v);
		o = put_str(o, "0x", 2);
		for (n = (size_t)(t - tmp); n < 8; n++)
			*o++ = '0';
		return put_str(o, tmp, (size_t)(t - tmp));
	}
	if (!k) {
		o = put_str(o, "0x", 2);
		return put_hex(o, v);
	}
	o = put_str(o, set->ksym_text + k->name_off, k->name_len < SYM_MAX ? k->name_len : SYM_MAX);
	if (offset) {
		o = put_str(o, "+0x", 3);
		o = put_hex(o, v - k->addr);
	}
	return o;
}

/* "1.2.3.4", or with @pad "001.002.003.004" (%pi4). */
static char *put_ip4(char *o, const uint8_t *b, bool pad)
{
	for (int i = 0; i < 4; i++) {
		if (i)
			*o++ = '.';
		if (pad) {
			*o++ = (char)('0' + b[i] / 100);
			o = tk_copy(o, tk_dec_pairs + 2 * (b[i] % 100), 2);
		} else {
			o = put_u64(o, b[i]);
		}
	}
	return o;
}

/* %pI6 (@colons) and %pi6: sixteen bytes as hex pairs, grouped by two. */
static char *put_ip6(char *o, const uint8_t *b, bool colons)
{
	for (int j = 0; j < 16; j += 2) {
		o = tk_copy(o, tk_hex_pairs + 2 * b[j], 2);
		o = tk_copy(o, tk_hex_pairs + 2 * b[j + 1], 2);
		if (colons && j < 14)
			*o++ = ':';
	}
	return o;
}

/*
 * %pI6c, as libtraceevent compresses: the first longest run (two words or
 * more) of zero words becomes "::", words print in hex without leading
 * zeros, and v4-mapped or ISATAP addresses end in dotted IPv4.
 */
static char *put_ip6c(char *o, const uint8_t *b)
{
	bool v4 = (!b[0] && !b[1] && !b[2] && !b[3] && !b[4] && !b[5] && !b[6] && !b[7] &&
		   !b[8] && !b[9] && b[10] == 0xff && b[11] == 0xff) ||
		  ((b[8] | 0x02) == 0x02 && !b[9] && b[10] == 0x5e && b[11] == 0xfe);
	int range = v4 ? 6 : 8, longest = 1, colonpos = -1;
	bool needcolon = false;

	for (int i = 0; i < range; i++) {
		int run = 0;

		while (i + run < range && !b[2 * (i + run)] && !b[2 * (i + run) + 1])
			run++;
		if (run > longest) {
			longest = run;
			colonpos = i;
		}
	}
	for (int i = 0; i < range; i++) {
		if (i == colonpos) {
			if (needcolon || i == 0)
				*o++ = ':';
			*o++ = ':';
			needcolon = false;
			i += longest - 1;
			continue;
		}
		if (needcolon)
			*o++ = ':';
		o = put_hex(o, (uint64_t)b[2 * i] << 8 | b[2 * i + 1]);
		needcolon = true;
	}
	if (v4) {
		if (needcolon)
			*o++ = ':';
		o = put_ip4(o, b + 12, false);
	}
	return o;
}

static inline uint64_t op_value(const struct tk_event_set *set, const struct tk_event *ev,
				const struct tk_op *op, const uint8_t *d)
{
	if (op->load)
		return rd(set, d + op->load_off, op->load);
	return tk_event_eval(set, ev->exprs, op->expr, d);
}

/* cast_num() with the bit count finish_program() derived from the length. */
static inline uint64_t cast_bits(uint64_t v, unsigned int bits, bool is_signed)
{
	if (bits >= 64)
		return v;
	v &= (1ull << bits) - 1;
	if (is_signed && (v >> (bits - 1)))
		v |= ~((1ull << bits) - 1);
	return v;
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
	for (const struct tk_op *op = ev->ops, *last = ev->ops + ev->nops; op < last; op++) {
		o = put_lit(o, op->pre, op->pre_len);
		switch (op->kind) {
		case TK_OP_LIT:
			o = put_lit(o, op->lit, op->lit_len);
			break;
		case TK_OP_NUM: {
			uint64_t v = cast_bits(op_value(set, ev, op, d), op->bits, op->rel);

			if (op->form == TK_NUM_PRINTF)
				o = put_num_fmt(o, end, op->fmt, v);
			else
				o = put_num(o, op, v);
			break;
		}
		case TK_OP_PTR: {
			uint64_t v = op_value(set, ev, op, d);

			if (!v) {
				o = put_str(o, "(nil)", 5);
			} else {
				o = put_str(o, "0x", 2);
				o = put_hex(o, v);
			}
			break;
		}
		case TK_OP_FUNC:
		case TK_OP_FUNCF:
			o = put_func(set, o, op_value(set, ev, op, d), op->kind, op->offset);
			break;
		case TK_OP_CSTR:
			if (op_value(set, ev, op, d))
				o = put_str(o, op->lit, op->lit_len);
			else
				o = put_str(o, op->alt, op->alt_len);
			break;
		case TK_OP_STR: {
			const char *s = (const char *)d + op->off;
			size_t n;

			if (!op->size && op->off > size)
				return -ENOTSUP;
			n = strnlen(s, op->size ? op->size : size - op->off);
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
			uint64_t v = op_value(set, ev, op, d);
			bool printed = false;

			for (uint32_t k = 0; k < op->nsyms; k++) {
				uint64_t fv = op->syms[k].value;

				if (!v && (int64_t)fv < 0) {
					o = put_str(o, op->syms[k].str, op->syms[k].len);
					break;
				}
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
		case TK_OP_IP4:
			o = put_ip4(o, d + op->off, op->zero);
			break;
		case TK_OP_IP6:
			if (op->offset)
				o = put_ip6c(o, d + op->off);
			else
				o = put_ip6(o, d + op->off, !op->zero);
			break;
		case TK_OP_SYMBOL: {
			uint64_t v = op_value(set, ev, op, d);
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
