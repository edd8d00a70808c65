// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * event-print: compiling print formats into op programs and running them.
 *
 * The splitting rules are libtraceevent's (so that the text matches it):
 * literal text takes \n \t \r \\ escapes (any other escaped character
 * stands for itself) and "%%"; a conversion is '%', then any of "#-.0-9",
 * 'h' and 'l' (each h lowers, each l raises the length by one), then the
 * conversion letter; each conversion consumes the next argument of the
 * parsed argument list; a '*' takes one more argument as the width or
 * precision; an unknown letter (%c among them) prints ">c<" and takes no
 * argument. We compile what we can print identically, following
 * libtraceevent 1.7.1's print_str_arg() / print_arg_pointer() case by
 * case: numbers (%d %i %u %x %X %o with h/hh/l/ll/z/L) of fields, array
 * elements, constants, casts, arithmetic and __get_dynamic_array_len();
 * strings (char arrays, __get_str(), constants, padded by hand for
 * widths and '*'); __print_flags() / __print_symbolic() (names through the
 * conversion's width, formatted once here); ternaries over any of these
 * (CSTR for two texts, else COND with two one-op alternatives); %p, %ps/
 * %pS/%pf/%pF, %pI4/%pi4/%pI6/%pi6/%pI6c, %pM/%pm/%pMF/%pMR, %pU[bBlL],
 * %*ph[CDN]; __print_hex(), __print_hex_str(), __print_array() of fixed
 * fields or dynamic arrays; __get_bitmask(); a name where a number goes
 * (writeback's jiffies, kmem's vmemmap_base: the address of the kallsyms
 * entry of that name, as test_for_symbol() finds it, looked up again
 * when the kallsyms change); %s of a long-sized field (bputs,
 * suspend_resume: the text of the printk format at that address, else
 * the address in hex; programs with one are compiled again when printk
 * formats come, to size their room by the longest). The rest (cpumasks,
 * sockaddrs, function calls like jiffies_to_msecs(), bprint, plugin
 * handlers) uses the slow printer: tk_event_compile() leaves the reason
 * in ev->why_slow. tests/unit/present/test-event-families.c compiles
 * every format of the families people record most from the running
 * kernel's tracefs and compares both printers on synthetic records.
 *
 * Lengths from the record. Hex dumps, arrays and masks print 3-4 bytes of
 * text per record byte: the room asked per record is max_static + size *
 * size_mult. libtraceevent does not bound __print_hex() / __print_array()
 * lengths, and passes a negative '*' value to printf() without the int
 * (undefined: it crashed and padded for ever in our tests). A compiled
 * record whose length reaches past the slow path's zeroed scratch, or
 * whose '*' value is negative or over 64 Ki, prints "[truncated record]"
 * and returns -EBADMSG; within the scratch it takes the slow path, whose
 * text is then trace-cmd's.
 *
 * A last pass (finish_program()) shapes the program for speed: each
 * literal moves into the op after it, so "a=%d b=%s" is two dispatches;
 * a value that is a plain field, or a field shifted right by a constant
 * and/or ANDed with one (block's MAJOR(dev), the ioprio class), is read by
 * a direct load of its size (load, load_shift, load_mask, load_or)
 * instead of the expression walk; so is one linear in a field, a multiply
 * and an add after the load (lin_*: mm_filemap's "index << 12", kmem's
 * "vmemmap_base + pfn", with "pfn != -1UL ? ... : 0" one test more);
 * and an int or long printed whole (%d,
 * %ld, %lx, "%08lx"), an int shifted or masked (MAJOR/MINOR) or padded
 * with zeros ("%03d"), or a 1- or 2-byte field (%d, %u, %x, "%04x") gets an
 * op of its own without the general number op's tests (DEC4, DEC8, HEX8,
 * DEC4S, NUM1, NUM2); "%#x" and "%o" are written by hand, not by snprintf(),
 * which cost ~700 instructions a number; the record size is tested once per
 * record against the end of the furthest fixed field (ev->min_size).
 * Decimals are written in words of four or eight digits (up to 10^16,
 * wider ones two digits at a time from a pair table, the length known
 * first), hex numbers 16 digits at once in an SSE2 register, the wanted
 * ones shifted into place (tk_put_u64(), tk_put_hex() in
 * event-internal.h); short copies use
 * overlapping fixed-size moves (tk_copy()): "rep movs", what GCC makes of
 * a short variable memcpy(), was the costliest instruction of the run.
 * The op loop exists twice, per byte order (a constant swap flag, so the
 * little-endian loads have no test), flattened so that the number writers
 * inline; the rare ops (hex, arrays, masks, MAC, UUID) are out of line
 * in run_rare() to keep it small, and a ternary's alternative that is not
 * a literal or flags runs in run_kid() (callgrind figures: bench/README.md).
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
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "event-internal.h"

/* Per-op worst case for numbers: sign, 20 digits, prefix, width <= 999. */
#define NUM_MAX 1100u
/* Longest symbol name printed by FUNC ops (longer ones are cut). */
#define SYM_MAX 4096u

struct compiler {
	struct tk_event_set *set;
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
	bool child;	 /* compiling one alternative of a string ternary: exactly one op */
	const char *why; /* the first reason compiling failed */
	char *names;	 /* TK_EXPR_KSYM names, for ev->atom_names */
	size_t names_len;
};

static void fail(struct compiler *c, const char *why)
{
	if (!c->failed)
		c->why = why;
	c->failed = true;
}

static struct tk_op *new_op(struct compiler *c)
{
	if (c->nops == c->cap) {
		size_t n = c->cap ? c->cap * 2 : 8;
		struct tk_op *t = realloc(c->ops, n * sizeof(*t));

		if (!t) {
			fail(c, "out of memory");
			return NULL;
		}
		c->ops = t;
		c->cap = n;
	}
	memset(&c->ops[c->nops], 0, sizeof(c->ops[0]));
	c->ops[c->nops].expr = -1;
	c->ops[c->nops].lenexpr = -1;
	c->ops[c->nops].prec = -1;
	return &c->ops[c->nops++];
}

static int32_t new_expr(struct compiler *c, uint8_t kind)
{
	if (c->nexprs >= 4096) {
		fail(c, "unsupported construct");
		return -1;
	}
	if (c->nexprs == c->expr_cap) {
		size_t n = c->expr_cap ? c->expr_cap * 2 : 8;
		struct tk_expr *t = realloc(c->exprs, n * sizeof(*t));

		if (!t) {
			fail(c, "unsupported construct");
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
			fail(c, "unsupported construct");
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
		fail(c, "unsupported construct");
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
		fail(c, "unsupported construct");
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
		{"HI_SOFTIRQ", 0},	{"TIMER_SOFTIRQ", 1},	  {"NET_TX_SOFTIRQ", 2},
		{"NET_RX_SOFTIRQ", 3},	{"BLOCK_SOFTIRQ", 4},	  {"IRQ_POLL_SOFTIRQ", 5},
		{"TASKLET_SOFTIRQ", 6}, {"SCHED_SOFTIRQ", 7},	  {"HRTIMER_SOFTIRQ", 8},
		{"RCU_SOFTIRQ", 9},	{"HRTIMER_NORESTART", 0}, {"HRTIMER_RESTART", 1},
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
	static const char *const ops[] = {"|",	"||", "&",  "&&", "<", "<<", "<=", ">", ">>",
					  ">=", "==", "!=", "-",  "+", "/",  "%",  "*"};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!strcmp(op, ops[i]))
			return true;
	}
	return false;
}

static bool expr_is_const(const struct compiler *c, int32_t e);
uint64_t tk_event_eval(const struct tk_event_set *set, const struct tk_expr *x, int32_t i,
		       const uint8_t *d, uint32_t size);

/*
 * Evaluate a subtree without fields once, here, instead of per record:
 * sched_switch's state mask alone is eleven constants and operators.
 * The value is what tk_event_eval() would compute per record.
 */
static int32_t fold(struct compiler *c, int32_t e)
{
	if (expr_is_const(c, e)) {
		uint64_t v = tk_event_eval(NULL, c->exprs, e, NULL, 0);

		c->exprs[e].kind = TK_EXPR_CONST;
		c->exprs[e].val = v;
	}
	return e;
}

/*
 * A C identifier where a number goes ("jiffies", "vmemmap_base": the
 * kernel's macros expand to variables). libtraceevent's eval_num_arg()
 * takes strtoull() of it, 0, and then test_for_symbol(): the address of
 * the kallsyms entry of that name, or 0. The address depends on the
 * set's kallsyms, which a .dat file holds after its formats: the name is
 * kept and looked up again whenever they change (tk_event_ksym_atoms_resolve()).
 */
static int32_t compile_ksym_atom(struct compiler *c, const char *atom)
{
	size_t n = strlen(atom);
	char *t;
	int32_t e;

	if (!(isalpha((unsigned char)atom[0]) || atom[0] == '_'))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)atom[i]) && atom[i] != '_')
			return -1;
	if (c->names_len + n + 1 > UINT32_MAX)
		return -1;
	t = realloc(c->names, c->names_len + n + 1);
	if (!t) {
		fail(c, "out of memory");
		return -1;
	}
	c->names = t;
	e = new_expr(c, TK_EXPR_KSYM);
	if (e < 0)
		return -1;
	memcpy(t + c->names_len, atom, n + 1);
	c->exprs[e].off = (uint32_t)c->names_len;
	c->exprs[e].val = tk_event_ksym_addr(c->set, atom);
	c->names_len += n + 1;
	return e;
}

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
		/*
		 * Only numbers ("0x00000000" included: sched_switch's state
		 * mask is built from such); a name (an enum libtraceevent
		 * may resolve) starts with a letter and is not compiled.
		 */
		if (!parse_number(arg->atom.atom, &v))
			return compile_ksym_atom(c, arg->atom.atom);
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
	case TEP_PRINT_DYNAMIC_ARRAY_LEN: {
		struct tep_format_field *df = arg->dynarray.field;

		if (!df || !(df->flags & TEP_FIELD_IS_DYNAMIC) || df->size != 4 || df->offset < 0)
			return -1;
		e = new_expr(c, TK_EXPR_DYNLEN);
		if (e < 0)
			return -1;
		c->exprs[e].off = (uint32_t)df->offset;
		c->exprs[e].size = 4;
		c->exprs[e].val = !!(df->flags & TEP_FIELD_IS_RELATIVE);
		use_field(c, (uint32_t)df->offset, 4);
		return e;
	}
	case TEP_PRINT_TYPE:
		if (!arg->typecast.type)
			return -1;
		a = compile_expr(c, arg->typecast.item, depth + 1);
		if (a < 0)
			return -1;
		/*
		 * A cast that keeps every bit is no node: the syscalls'
		 * "((unsigned long)(REC->fd))" then stays a plain field, read
		 * by a direct load instead of the expression walk (69 of ~720
		 * instructions a record on a syscalls recording).
		 */
		v = cast_mask(arg->typecast.type);
		if (v == UINT64_MAX || (c->exprs[a].kind == TK_EXPR_FIELD && c->exprs[a].size < 8 &&
					v >= (1ull << (8 * c->exprs[a].size)) - 1))
			return a;
		e = new_expr(c, TK_EXPR_MASK);
		if (e < 0)
			return -1;
		c->exprs[e].a = a;
		c->exprs[e].val = cast_mask(arg->typecast.type);
		return fold(c, e);
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
			return fold(c, e);
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
			    (af->flags & TEP_FIELD_IS_DYNAMIC) || !numeric_size(af->elementsize) ||
			    af->offset < 0 || af->size <= 0)
				return -1;
			v = tk_event_eval(NULL, c->exprs, k, NULL, 0);
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
		return fold(c, e);
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
	case TK_EXPR_DYNLEN:
	case TK_EXPR_KSYM: /* its value changes with the set's kallsyms */
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

/* The op of a fixed field of exactly @size bytes (casts dropped, as libtraceevent drops them). */
static const struct tep_format_field *sized_field(struct compiler *c, struct tep_print_arg *arg,
						  int size)
{
	const struct tep_format_field *f;

	while (arg && arg->type == TEP_PRINT_TYPE)
		arg = arg->typecast.item;
	f = plain_field(c->ev, arg);
	return f && f->offset >= 0 && f->size == size ? f : NULL;
}

/* An op for text that needs the record; the literal before it is flushed first. */
static struct tk_op *value_op(struct compiler *c, enum tk_op_kind kind)
{
	struct tk_op *op;

	lit_flush(c);
	op = new_op(c);
	if (op)
		op->kind = kind;
	return op;
}

/* A literal op of its own (one alternative of a string ternary). */
static void child_lit(struct compiler *c, const char *s, size_t n)
{
	struct tk_op *op = new_op(c);

	if (!op)
		return;
	op->kind = TK_OP_LIT;
	op->lit = calloc(1, (n + 15) / 16 * 16 + 16);
	if (!op->lit) {
		fail(c, "out of memory");
		return;
	}
	memcpy(op->lit, s, n);
	op->lit_len = (uint32_t)n;
	c->max_static += n;
}

/* Text without a record value: folded into the literal, or an op of its own in a ternary. */
static void const_text(struct compiler *c, const char *s, size_t n)
{
	if (c->child)
		child_lit(c, s, n);
	else
		lit_add(c, s, n);
}

/*
 * The characters libtraceevent takes after "%p" as part of the conversion
 * (its parse_arg_format_pointer() rules; @s points after the 'p'). A bare
 * %p takes none, so "%pK" prints a pointer and then "K".
 */
int tk_event_pointer_suffix(const char *s)
{
	int n = 0, i = 2;

	switch (s[0]) {
	case 'F':
	case 'S':
	case 'f':
	case 's':
		return 1;
	case 'M':
	case 'm':
		return 1 + (s[1] == 'R' || s[1] == 'F');
	case 'I':
	case 'i':
		if (s[1] == 'S') {
			while (s[i] == 'p' || s[i] == 'f' || s[i] == 's') {
				n++;
				i++;
			}
		}
		if (s[1] == 'S' || s[1] == '4') {
			if (s[i] && strchr("hnlb", s[i])) {
				n++;
				i++;
			}
			if (s[1] == '4')
				return n + 2;
		}
		if (s[1] == 'S' || s[1] == '6')
			return n + (s[i] == 'c') + 2;
		return 1;
	case 'U':
		return 1 + (s[1] && strchr("LlBb", s[1]) != NULL);
	case 'h':
		return 1 + (s[1] && strchr("CDN", s[1]) != NULL);
	default:
		return 0;
	}
}

/*
 * %pI4 %pi4 %pI6 %pi6 %pI6c of a plain fixed field of exactly 4 or 16
 * bytes: other sizes print "INVALIDIPv4/6" there and stay with it, as do
 * the byte-order suffixes [hnbl] of the IPv4 forms and %pISpc. @q points
 * at 'I' or 'i'. Return: true when compiled.
 */
static bool compile_ip(struct compiler *c, struct tep_print_arg *arg, const char *q, int ls,
		       bool plain)
{
	const struct tep_format_field *f;
	bool v4 = q[1] == '4', compressed = !v4 && q[2] == 'c';
	struct tk_op *op;

	if (ls || !plain || !arg || (v4 && q[2] && strchr("hnbl", q[2])) ||
	    (compressed && q[0] != 'I'))
		return false;
	f = sized_field(c, arg, v4 ? 4 : 16);
	if (!f)
		return false;
	op = value_op(c, v4 ? TK_OP_IP4 : TK_OP_IP6);
	if (!op)
		return false;
	op->off = (uint32_t)f->offset;
	op->size = (uint32_t)f->size;
	op->zero = q[0] == 'i';
	op->offset = compressed;
	use_field(c, op->off, op->size);
	c->max_static += 48;
	return true;
}

/*
 * %pM / %pm (no separator) / %pMF ('-') and the R (reversed) forms of a
 * 6-byte field, %pU[bBlL] of a 16-byte field; a field of another size
 * prints a fixed "INVALIDMAC" / "INVALIDUUID" in libtraceevent.
 */
static void compile_mac_uuid(struct compiler *c, struct tep_print_arg *arg, const char *s)
{
	bool uuid = s[0] == 'U';
	const struct tep_format_field *f;
	struct tep_print_arg *a = arg;
	struct tk_op *op;

	while (a && a->type == TEP_PRINT_TYPE)
		a = a->typecast.item;
	if (!a || a->type != TEP_PRINT_FIELD || !a->field.name ||
	    !tep_find_any_field(c->ev->tev, a->field.name)) {
		fail(c, "%pM/%pU of something other than a field");
		return;
	}
	f = sized_field(c, arg, uuid ? 16 : 6);
	if (!f) {
		if (tep_find_any_field(c->ev->tev, a->field.name)->flags & TEP_FIELD_IS_DYNAMIC) {
			fail(c, "%pM/%pU of a dynamic field");
			return;
		}
		const_text(c, uuid ? "INVALIDUUID" : "INVALIDMAC", uuid ? 11 : 10);
		return;
	}
	op = value_op(c, uuid ? TK_OP_UUID : TK_OP_MAC);
	if (!op)
		return;
	op->off = (uint32_t)f->offset;
	op->size = (uint32_t)f->size;
	use_field(c, op->off, op->size);
	c->max_static += 48;
	if (uuid) {
		op->left = s[1] == 'l' || s[1] == 'L';
		op->zero = s[1] == 'L' || s[1] == 'B';
	} else {
		op->delim_len = s[0] == 'm' ? 0 : 1;
		op->delim = s[0] == 'M' && s[1] == 'F' ? "-" : ":";
		op->left = s[1] == 'R';
	}
}

/*
 * Where HEX, ARRAY, BITMASK and HEXBUF ops find their bytes: a fixed
 * field, or __get_dynamic_array() of a __data_loc / __rel_loc field.
 */
static bool data_source(struct compiler *c, struct tep_print_arg *a, struct tk_op *op,
			bool fixed_ok)
{
	struct tep_format_field *f;

	if (a && a->type == TEP_PRINT_DYNAMIC_ARRAY && !a->dynarray.index) {
		f = a->dynarray.field;
		if (!f || !(f->flags & TEP_FIELD_IS_DYNAMIC) || f->size != 4 || f->offset < 0)
			return false;
		op->dyn = true;
		op->rel = f->flags & TEP_FIELD_IS_RELATIVE;
	} else if (fixed_ok && a && a->type == TEP_PRINT_FIELD && a->field.name) {
		f = tep_find_any_field(c->ev->tev, a->field.name);
		if (!f || (f->flags & TEP_FIELD_IS_DYNAMIC) || f->offset < 0 || f->size < 0)
			return false;
	} else {
		return false;
	}
	op->off = (uint32_t)f->offset;
	op->size = (uint32_t)f->size;
	if (op->dyn)
		use_field(c, op->off, 4);
	return true;
}

static void need_mult(struct compiler *c, uint8_t mult)
{
	if (c->ev->size_mult < mult)
		c->ev->size_mult = mult;
}

/* %*ph[CDN]: libtraceevent's print_raw_buff_arg(), of a dynamic array only. */
static void compile_hexbuf(struct compiler *c, struct tep_print_arg *arg, const char *s,
			   int32_t lenexpr)
{
	struct tk_op *op = value_op(c, TK_OP_HEXBUF);

	if (!op)
		return;
	if (!data_source(c, arg, op, false)) {
		fail(c, "%ph of something other than a dynamic array");
		return;
	}
	op->lenexpr = lenexpr;
	op->delim = s[1] == 'C' ? ":" : s[1] == 'D' ? "-" : s[1] == 'N' ? "" : " ";
	op->delim_len = (uint32_t)strlen(op->delim);
	need_mult(c, 3);
}

/* A %p conversion; @s points after the 'p'. */
static void compile_pointer(struct compiler *c, struct tep_print_arg *arg, const char *s, int ls,
			    bool plain, int32_t lenexpr)
{
	struct tk_op *op;
	int32_t e;

	switch (s[0]) {
	case 'M':
	case 'm':
	case 'U':
		compile_mac_uuid(c, arg, s);
		return;
	case 'I':
	case 'i':
		if ((s[1] == '4' || s[1] == '6') && compile_ip(c, arg, s, ls, plain))
			return;
		fail(c, "an IP address form not compiled");
		return;
	case 'h':
		compile_hexbuf(c, arg, s, lenexpr);
		return;
	default:
		break;
	}
	/* Bare %p and the symbol forms print without width or flags. */
	e = compile_expr(c, arg, 0);
	if (e < 0) {
		fail(c, "a %p value that is not a number");
		return;
	}
	op = value_op(c, TK_OP_PTR);
	if (!op)
		return;
	op->expr = e;
	if (tk_event_pointer_suffix(s) == 0) {
		c->max_static += 24;
	} else {
		op->kind = TK_OP_FUNC;
		op->offset = s[0] == 'S' || s[0] == 'F';
		c->max_static += SYM_MAX + 48;
	}
}

/* A numeric conversion: "%d"... of an expression, @lenexpr the '*' value or -1. */
static void compile_num(struct compiler *c, struct tep_print_arg *arg, const char *spec, char conv,
			int ls, bool plain, int32_t lenexpr)
{
	char fmt[40], buf[1100];
	struct tk_op *op;
	int32_t e = compile_expr(c, arg, 0);

	if (e < 0) {
		fail(c, "a number that is not a field, constant or arithmetic over them");
		return;
	}
	snprintf(fmt, sizeof(fmt), "%.*sll%c", (int)strlen(spec) - 1, spec, conv);
	if (lenexpr < 0 && expr_is_const(c, e)) {
		uint64_t v = tk_event_eval(NULL, c->exprs, e, NULL, 0);

		v = cast_num(v, ls, conv_signed(conv));
		snprintf(buf, sizeof(buf), fmt, v);
		const_text(c, buf, strlen(buf));
		return;
	}
	op = value_op(c, TK_OP_NUM);
	if (!op)
		return;
	op->expr = e;
	op->ls = ls;
	op->plain = plain;
	op->lenexpr = lenexpr;
	snprintf(op->fmt, sizeof(op->fmt), "%s", fmt);
	op->form = TK_NUM_PRINTF;
	if (lenexpr < 0 && (conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x')) {
		if (plain || simple_spec(spec, &op->width, &op->left, &op->zero))
			op->form = conv == 'u'	 ? TK_NUM_UDEC
				   : conv == 'x' ? TK_NUM_HEX
						 : TK_NUM_DEC;
		/* net's napi_id and gso_type: snprintf() cost ~650 instructions each. */
		else if (conv == 'x' && !strcmp(spec, "%#x"))
			op->form = TK_NUM_AHEX;
	}
	/* writeback's "mode 0%o": snprintf() was 4% of block's file. */
	if (lenexpr < 0 && conv == 'o' && !strcmp(spec, "%o"))
		op->form = TK_NUM_OCT;
	/* The sign decides the cast; keep it for the printf form too. */
	op->rel = conv_signed(conv);
	c->max_static += NUM_MAX;
}

/*
 * "%[flags][width|*][.prec|.*]s" for hand padding: of the flags only '-'
 * matters for strings (glibc ignores '0' and '#' there).
 */
static void str_spec(const char *spec, struct tk_op *op)
{
	const char *p = spec + 1;
	unsigned int w = 0;

	for (; *p == '-' || *p == '0' || *p == '#'; p++)
		op->left |= *p == '-';
	if (*p == '*') {
		op->star = 1;
		p++;
	}
	while (*p >= '0' && *p <= '9')
		w = w * 10 + (unsigned int)(*p++ - '0');
	op->width = (uint16_t)w;
	if (*p == '.') {
		unsigned int pr = 0;

		p++;
		if (*p == '*') {
			op->star = 2;
			p++;
		}
		while (*p >= '0' && *p <= '9')
			pr = pr * 10 + (unsigned int)(*p++ - '0');
		if (op->star != 2)
			op->prec = (int32_t)pr;
	}
}

/* A flags or symbol name as printed through @spec (no '*'): formatted once here. */
static char *format_name(const char *spec, bool plain, const char *name)
{
	char *s = NULL;

	if (plain)
		return strdup(name);
	return asprintf(&s, spec, name) < 0 ? NULL : s;
}

static void compile_str(struct compiler *c, struct tep_print_arg *arg, const char *spec, bool plain,
			int32_t lenexpr);

/* CSTR: each text's bytes in the op's buffer (see compile_str_cond()). */
#define CSTR_ROOM 32u

static size_t cstr_room(uint32_t len)
{
	return len < CSTR_ROOM ? CSTR_ROOM : (size_t)len + 1;
}

/*
 * cond ? x : y as %s: libtraceevent prints x or y through the same
 * format. Two literal texts become CSTR; anything else COND, whose two
 * alternatives are one op each.
 */
static void compile_str_cond(struct compiler *c, struct tep_print_arg *arg, const char *spec,
			     bool plain, int32_t lenexpr)
{
	struct tep_print_arg *r = arg->op.right;
	struct tep_print_arg *alt[2];
	bool saved = c->child;
	size_t idx;
	int32_t e;

	if (!r || r->type != TEP_PRINT_OP || !r->op.op || strcmp(r->op.op, ":") || !r->op.left ||
	    !r->op.right) {
		fail(c, "a string ternary without two alternatives");
		return;
	}
	e = compile_expr(c, arg->op.left, 0);
	if (e < 0) {
		fail(c, "a string ternary whose condition is not compiled");
		return;
	}
	alt[0] = r->op.left;
	alt[1] = r->op.right;
	if (plain && alt[0]->type == TEP_PRINT_ATOM && alt[1]->type == TEP_PRINT_ATOM) {
		struct tk_op *op = value_op(c, TK_OP_CSTR);

		if (!op)
			return;
		op->expr = e;
		op->lit_len = (uint32_t)strlen(alt[0]->atom.atom);
		op->alt_len = (uint32_t)strlen(alt[1]->atom.atom);
		/*
		 * Both texts in one buffer, each with CSTR_ROOM readable bytes at
		 * least, so the run copies a short one (most: "+" or "") whole,
		 * with no branch on which it is.
		 */
		op->lit = calloc(1, cstr_room(op->lit_len) + cstr_room(op->alt_len));
		if (!op->lit) {
			fail(c, "out of memory");
			return;
		}
		memcpy(op->lit, alt[0]->atom.atom, op->lit_len);
		op->alt = op->lit + cstr_room(op->lit_len);
		memcpy((char *)op->alt, alt[1]->atom.atom, op->alt_len);
		c->max_static += op->lit_len + op->alt_len;
		return;
	}
	if (!value_op(c, TK_OP_COND))
		return;
	idx = c->nops - 1;
	c->ops[idx].expr = e;
	c->ops[idx].kids = calloc(2, sizeof(struct tk_op));
	if (!c->ops[idx].kids) {
		fail(c, "out of memory");
		return;
	}
	c->child = true;
	for (int k = 0; k < 2 && !c->failed; k++) {
		compile_str(c, alt[k], spec, plain, lenexpr);
		if (c->failed)
			break;
		if (c->nops != idx + 2) {
			fail(c, "a string ternary alternative of more than one op");
			break;
		}
		c->ops[idx].kids[k] = c->ops[idx + 1];
		c->nops--;
	}
	c->child = saved;
}

/* A %s conversion, as libtraceevent's print_str_arg() prints each argument kind. */
static void compile_str(struct compiler *c, struct tep_print_arg *arg, const char *spec, bool plain,
			int32_t lenexpr)
{
	struct tk_event *ev = c->ev;
	const struct tep_format_field *f;
	struct tk_op *op;
	char buf[1100];

	switch (arg->type) {
	case TEP_PRINT_NULL:
	case TEP_PRINT_TYPE:
	case TEP_PRINT_DYNAMIC_ARRAY:
	case TEP_PRINT_DYNAMIC_ARRAY_LEN:
		/* libtraceevent prints nothing for these as strings. */
		const_text(c, "", 0);
		return;
	case TEP_PRINT_ATOM:
		if (lenexpr >= 0) {
			fail(c, "a constant string with a '*' width");
			return;
		}
		snprintf(buf, sizeof(buf), spec, arg->atom.atom);
		const_text(c, buf, strlen(buf));
		return;
	case TEP_PRINT_FIELD:
		f = plain_field(ev, arg);
		if (!f || f->size < 0 || f->size > 4096) {
			fail(c, "a %s field that is a pointer, printk address or dynamic");
			return;
		}
		/*
		 * A long-sized non-array is taken as the address of a printk
		 * format (trace_printk()'s, suspend_resume's action): its text
		 * whatever the conversion says, else the address in hex.
		 */
		if (!(f->flags & TEP_FIELD_IS_ARRAY) && f->size == c->long_size) {
			op = value_op(c, TK_OP_PRINTK);
			if (!op)
				return;
			op->off = (uint32_t)f->offset;
			op->size = (uint32_t)f->size;
			use_field(c, op->off, op->size);
			c->max_static += c->set->printk_max + 24;
			ev->has_printk = true;
			return;
		}
		op = value_op(c, TK_OP_STR);
		if (!op)
			return;
		/* A zero-sized array (char buf[]) runs to the end of the record. */
		op->off = (uint32_t)f->offset;
		op->size = (uint32_t)f->size;
		break;
	case TEP_PRINT_STRING: {
		struct tep_format_field *df = arg->string.field;

		if (!df && arg->string.string)
			df = tep_find_any_field(ev->tev, arg->string.string);
		if (!df || !(df->flags & TEP_FIELD_IS_DYNAMIC) || df->size != 4) {
			fail(c, "__get_str() of a field that is not a 4-byte __data_loc");
			return;
		}
		op = value_op(c, TK_OP_DSTR);
		if (!op)
			return;
		op->off = (uint32_t)df->offset;
		op->size = (uint32_t)df->size;
		op->rel = df->flags & TEP_FIELD_IS_RELATIVE;
		break;
	}
	case TEP_PRINT_BITMASK: {
		struct tep_format_field *df = arg->bitmask.field;

		if (!df && arg->bitmask.bitmask)
			df = tep_find_any_field(ev->tev, arg->bitmask.bitmask);
		if (!df || !(df->flags & TEP_FIELD_IS_DYNAMIC) || df->size != 4) {
			fail(c, "__get_bitmask() of a field that is not a 4-byte __data_loc");
			return;
		}
		op = value_op(c, TK_OP_BITMASK);
		if (!op)
			return;
		op->off = (uint32_t)df->offset;
		op->size = 4;
		op->dyn = true;
		op->rel = df->flags & TEP_FIELD_IS_RELATIVE;
		need_mult(c, 3);
		break;
	}
	case TEP_PRINT_HEX:
	case TEP_PRINT_HEX_STR:
	case TEP_PRINT_INT_ARRAY: {
		/* The format does not apply: libtraceevent prints these directly. */
		bool hex = arg->type != TEP_PRINT_INT_ARRAY;
		int32_t e = compile_expr(c, hex ? arg->hex.size : arg->int_array.count, 0);
		int32_t el = hex ? -1 : compile_expr(c, arg->int_array.el_size, 0);

		op = value_op(c, hex ? TK_OP_HEX : TK_OP_ARRAY);
		if (!op)
			return;
		if (e < 0 ||
		    !data_source(c, hex ? arg->hex.field : arg->int_array.field, op, true)) {
			fail(c, "__print_hex/__print_array of an unsupported source or count");
			return;
		}
		op->expr = e;
		op->delim = arg->type == TEP_PRINT_HEX ? " " : "";
		op->delim_len = arg->type == TEP_PRINT_HEX;
		if (!hex) {
			uint64_t v;

			if (el < 0 || !expr_is_const(c, el)) {
				fail(c, "__print_array with an element size not constant");
				return;
			}
			v = tk_event_eval(NULL, c->exprs, el, NULL, 0);
			if (v != 1 && v != 2 && v != 4 && v != 8) {
				fail(c, "__print_array with an element size not 1, 2, 4 or 8");
				return;
			}
			op->elsize = (uint8_t)v;
		}
		need_mult(c, 4);
		return;
	}
	case TEP_PRINT_OP:
		/* The only operator libtraceevent prints for %s is ?:; others print nothing. */
		if (arg->op.op && !strcmp(arg->op.op, "?"))
			compile_str_cond(c, arg, spec, plain, lenexpr);
		else
			const_text(c, "", 0);
		return;
	case TEP_PRINT_FLAGS:
	case TEP_PRINT_SYMBOL: {
		bool flags = arg->type == TEP_PRINT_FLAGS;
		struct tep_print_flag_sym *s = flags ? arg->flags.flags : arg->symbol.symbols;
		uint32_t n = 0, i = 0;
		int32_t e;

		e = compile_expr(c, flags ? arg->flags.field : arg->symbol.field, 0);
		if (e < 0 || lenexpr >= 0) {
			fail(c, "__print_flags/__print_symbolic of a value not compiled");
			return;
		}
		for (struct tep_print_flag_sym *t = s; t; t = t->next)
			n++;
		op = value_op(c, flags ? TK_OP_FLAGS : TK_OP_SYMBOL);
		if (!op)
			return;
		op->expr = e;
		op->syms = calloc(n ? n : 1, sizeof(*op->syms));
		if (!op->syms) {
			fail(c, "out of memory");
			return;
		}
		op->nsyms = n;
		for (; s; s = s->next, i++) {
			char *name;

			if (!s->value || !s->str) {
				fail(c, "a flag without value or name");
				return;
			}
			/* Each name goes through the conversion's width, as in libtraceevent. */
			name = format_name(spec, plain, s->str);
			if (!name) {
				fail(c, "out of memory");
				return;
			}
			op->syms[i].value = flag_value(s->value);
			op->syms[i].str = name;
			op->syms[i].len = (uint32_t)strlen(name);
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
		fail(c, "a string argument kind not compiled (function, cpumask, bprint)");
		return;
	}
	/* STR, DSTR, BITMASK: padded by hand. */
	op->plain = plain;
	op->lenexpr = lenexpr;
	if (!plain)
		str_spec(spec, op);
	if (op->kind == TK_OP_STR)
		use_field(c, op->off, op->size);
	else
		use_field(c, op->off, 4);
	c->max_static += (op->kind == TK_OP_STR ? op->size : 0) + 2048;
}

static void compile_format(struct compiler *c)
{
	struct tep_event *tev = c->ev->tev;
	const char *p = tev->print_fmt.format;
	struct tep_print_arg *arg = tev->print_fmt.args;

	if (!p) {
		fail(c, "no print format");
		return;
	}
	while (*p && !c->failed) {
		char spec[24];
		size_t n = 0;
		int ls = 0, digits = 0;
		bool plain = true;
		const char *q = p + 1;
		int32_t lenexpr = -1;

		if (*p == '\\') {
			char ch;

			if (!p[1]) {
				fail(c, "a print format ending in a backslash");
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
		/* A conversion, split as libtraceevent's parse_arg_format() splits it. */
		spec[n++] = '%';
		for (;; q++) {
			char ch = *q;

			if (ch == 'h') {
				ls--;
			} else if (ch == 'l') {
				ls++;
			} else if (ch == 'L') {
				ls = 2;
			} else if (ch == 'z' || ch == 'Z') {
				ls = 1;
			} else if (ch == '#' || ch == '-' || ch == '.' || ch == '*' ||
				   (ch >= '0' && ch <= '9')) {
				digits = (ch >= '0' && ch <= '9') ? digits + 1 : 0;
				if (digits > 3 || n + 2 >= sizeof(spec)) {
					fail(c, "a conversion with a width over 999");
					return;
				}
				if (ch == '*') {
					/* The argument is the width or precision. */
					if (!arg || lenexpr >= 0) {
						fail(c, "a '*' without its argument");
						return;
					}
					lenexpr = compile_expr(c, arg, 0);
					if (lenexpr < 0) {
						fail(c, "a '*' width that is not compiled");
						return;
					}
					arg = arg->next;
				}
				spec[n++] = ch;
				plain = false;
			} else {
				break;
			}
		}
		if (ls < -2 || ls > 2) {
			fail(c, "a length modifier beyond ll or hh");
			return;
		}
		if (!*q) {
			/* libtraceevent drops an unfinished conversion at the end. */
			p = q;
			break;
		}
		switch (*q) {
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'X':
		case 'o':
		case 's':
			if (!arg) {
				fail(c, "a conversion without an argument");
				return;
			}
			spec[n++] = *q;
			spec[n] = '\0';
			if (*q != 's')
				compile_num(c, arg, spec, *q, ls, plain, lenexpr);
			else if (ls)
				fail(c, "%ls");
			else
				compile_str(c, arg, spec, plain, lenexpr);
			arg = arg->next;
			p = q + 1;
			break;
		case 'p':
			if (!arg) {
				fail(c, "a conversion without an argument");
				return;
			}
			compile_pointer(c, arg, q + 1, ls, plain, lenexpr);
			arg = arg->next;
			p = q + 1 + tk_event_pointer_suffix(q + 1);
			break;
		default: {
			/*
			 * %c and every other letter: libtraceevent prints ">c<"
			 * and leaves the argument for the next conversion.
			 */
			char t[3] = {'>', *q, '<'};

			lit_add(c, t, 3);
			p = q + 1;
			break;
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

/* A field as a plugin reads it (tep_find_field(): not the common ones), -1 if unreadable. */
static int32_t plugin_field(struct compiler *c, const char *name)
{
	struct tep_format_field *f = tep_find_field(c->ev->tev, name);
	int32_t e;

	if (!f || (f->flags & TEP_FIELD_IS_DYNAMIC) || !numeric_size(f->size) || f->offset < 0)
		return -1;
	e = new_expr(c, TK_EXPR_FIELD);
	if (e < 0)
		return -1;
	c->exprs[e].off = (uint32_t)f->offset;
	c->exprs[e].size = (uint32_t)f->size;
	use_field(c, (uint32_t)f->offset, (uint32_t)f->size);
	return e;
}

static bool plain_format(struct compiler *c)
{
	if (c->ev->tev->flags &
	    (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT | TEP_EVENT_FL_PRINTRAW))
		return false;
	compile_format(c);
	return !c->failed;
}

/*
 * libtraceevent's kmem plugin (kfree, kmalloc, kmalloc_node,
 * kmem_cache_alloc, kmem_cache_alloc_node, kmem_cache_free): "(%s+0x%x) "
 * of call_site's function and (int) offset when kallsyms has one, then
 * the print format as usual (its handler returns 1).
 */
static bool setup_kmem(struct compiler *c)
{
	static const char *const names[] = {"kfree",
					    "kmalloc",
					    "kmalloc_node",
					    "kmem_cache_alloc",
					    "kmem_cache_alloc_node",
					    "kmem_cache_free"};
	struct tk_op *op;
	bool ours = false;
	int32_t e;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ours |= !strcmp(c->ev->name, names[i]);
	if (!ours)
		return false;
	/* Without a readable call_site the handler prints nothing. */
	e = plugin_field(c, "call_site");
	if (e >= 0) {
		op = new_op(c);
		if (!op)
			return false;
		op->kind = TK_OP_CALLSITE;
		op->expr = e;
		c->max_static += SYM_MAX + 32;
	}
	return plain_format(c);
}

/*
 * libtraceevent's futex plugin (syscalls:sys_enter_futex): "op=NAME"
 * with |FUTEX_PRIVATE_FLAG and |FUTEX_CLOCK_REALTIME, then uaddr and the
 * arguments that command uses. A command past its table (13 and up)
 * makes the plugin fall back to the print format: the run then returns
 * -ENOTSUP and the slow path prints it.
 */
static bool setup_futex(struct compiler *c)
{
	static const char *const args[] = {"uaddr", "op", "val", "utime", "uaddr2", "val3"};
	struct tk_op *op;
	int32_t first = -1;

	if (strcmp(c->ev->name, "sys_enter_futex"))
		return false;
	for (int i = 0; i < 6; i++) {
		int32_t e = plugin_field(c, args[i]);

		if (e < 0 || (i && e != first + i))
			return false;
		if (!i)
			first = e;
	}
	op = new_op(c);
	if (!op)
		return false;
	op->kind = TK_OP_FUTEX;
	op->expr = first;
	c->max_static += 256;
	return !c->failed;
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
#define SCHED_STATES "SDTtZXxW"

/* The text of one low byte of prev_state: the letters of its bits, '|' between, "R" for none. */
struct state_text {
	char text[15];
	uint8_t len;
};

static struct state_text state_texts[256];
static pthread_once_t states_once = PTHREAD_ONCE_INIT;

/* All 256 texts, made once: a record then copies one (its bits no longer branch). */
static void states_init(void)
{
	for (unsigned int v = 0; v < 256; v++) {
		struct state_text *t = &state_texts[v];
		uint8_t n = 0;

		for (int i = 0; SCHED_STATES[i]; i++) {
			if (!(v & (1u << i)))
				continue;
			if (n)
				t->text[n++] = '|';
			t->text[n++] = SCHED_STATES[i];
		}
		if (!n)
			t->text[n++] = 'R';
		t->len = n;
	}
}

static void setup_states(void)
{
	pthread_once(&states_once, states_init);
}

/* The record size that covers every field the mirror reads: one test per record. */
static void sched_min_size(struct tk_event *ev)
{
	const struct tk_event_field *const f[] = {
		ev->f_pid,	  ev->f_comm,	  ev->f_prio,	   ev->f_success,
		ev->f_target,	  ev->f_prev_pid, ev->f_prev_comm, ev->f_prev_prio,
		ev->f_prev_state, ev->f_next_pid, ev->f_next_comm, ev->f_next_prio,
	};
	uint64_t m = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i] && (uint64_t)f[i]->offset + f[i]->size > m)
			m = (uint64_t)f[i]->offset + f[i]->size;
	}
	ev->min_size = m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

/*
 * The names the sched plugin registers, for tk_event_sched_learn_fast():
 * where their @n pids are, when each is a 4-byte pid beside a 16-byte
 * comm; any other layout leaves nlearn 0 (no fast check).
 */
static void learn_places(struct tk_event *ev, const struct tk_event_field *const *pid,
			 const struct tk_event_field *const *comm, uint8_t n)
{
	ev->nlearn = 0;
	for (uint8_t i = 0; i < n; i++) {
		if (pid[i]->size != 4 || comm[i]->size != 16)
			return;
		ev->learn_pid[i] = pid[i]->offset;
	}
	ev->nlearn = n;
}

/* The fields of ev->sched_off: sched_switch's, then sched_wakeup's. */
enum {
	SCHED_PREV_PID,
	SCHED_PREV_COMM,
	SCHED_PREV_PRIO,
	SCHED_PREV_STATE,
	SCHED_NEXT_PID,
	SCHED_NEXT_COMM,
	SCHED_NEXT_PRIO,
	SCHED_PID = 0,
	SCHED_COMM,
	SCHED_PRIO,
	SCHED_SUCCESS,
	SCHED_TARGET,
};

/*
 * ev->sched_fixed and the offsets of @f (@n fields, NULL for a field the
 * format lacks), when each has the size @want says (0: any, the state,
 * whose low byte alone is read) and the records are in the host's order.
 */
static void sched_places(const struct tk_event_set *set, struct tk_event *ev,
			 const struct tk_event_field *const *f, const uint32_t *want, size_t n)
{
	ev->sched_fixed = false;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (set->swap)
		return;
	for (size_t i = 0; i < n; i++) {
		if (f[i] && want[i] && f[i]->size != want[i])
			return;
		ev->sched_off[i] = f[i] ? f[i]->offset : 0;
	}
	ev->sched_fixed = true;
#else
	(void)f;
	(void)want;
	(void)n;
#endif
}

static bool setup_sched(const struct tk_event_set *set, struct tk_event *ev)
{
	/* Compiled again when plugins come: the places are found afresh. */
	ev->nlearn = 0;
	ev->sched_fixed = false;
	if (!strcmp(ev->name, "sched_switch")) {
		ev->f_prev_pid = find_num(ev, "prev_pid");
		ev->f_prev_comm = find_arr(ev, "prev_comm");
		ev->f_prev_prio = find_num(ev, "prev_prio");
		ev->f_prev_state = find_num(ev, "prev_state");
		ev->f_next_pid = find_num(ev, "next_pid");
		ev->f_next_comm = find_arr(ev, "next_comm");
		ev->f_next_prio = find_num(ev, "next_prio");
		/* Missing fields print differently: leave those to the plugin. */
		if (!ev->f_prev_pid || !ev->f_prev_comm || !ev->f_prev_prio || !ev->f_prev_state ||
		    !ev->f_next_pid || !ev->f_next_comm || !ev->f_next_prio)
			return false;
		setup_states();
		sched_min_size(ev);
		learn_places(ev, (const struct tk_event_field *[]){ev->f_prev_pid, ev->f_next_pid},
			     (const struct tk_event_field *[]){ev->f_prev_comm, ev->f_next_comm},
			     2);
		sched_places(set, ev,
			     (const struct tk_event_field *[]){ev->f_prev_pid, ev->f_prev_comm,
							       ev->f_prev_prio, ev->f_prev_state,
							       ev->f_next_pid, ev->f_next_comm,
							       ev->f_next_prio},
			     (const uint32_t[]){4, 16, 4, 0, 4, 16, 4}, 7);
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
		learn_places(ev, &ev->f_pid, &ev->f_comm, 1);
		sched_places(set, ev,
			     (const struct tk_event_field *[]){ev->f_pid, ev->f_comm, ev->f_prio,
							       ev->f_success, ev->f_target},
			     (const uint32_t[]){4, 16, 4, 4, 4}, 5);
		ev->kind = TK_EVENT_SCHED_WAKEUP;
		return true;
	}
	return false;
}

static void free_op(struct tk_op *op)
{
	free(op->lit);
	free(op->pre);
	for (uint32_t i = 0; op->syms && i < op->nsyms; i++)
		free((char *)op->syms[i].str);
	free(op->syms);
	free(op->ftab);
	if (op->kids) {
		free_op(&op->kids[0]);
		free_op(&op->kids[1]);
		free(op->kids);
	}
}

void tk_event_free_program(struct tk_event *ev)
{
	for (size_t i = 0; i < ev->nops; i++)
		free_op(&ev->ops[i]);
	free(ev->ops);
	free(ev->exprs);
	free(ev->atom_names);
	ev->atom_names = NULL;
	ev->ops = NULL;
	ev->nops = 0;
	ev->exprs = NULL;
	ev->nexprs = 0;
}

static char *put_flags(char *o, const struct tk_op *op, uint64_t v);
static char *put_symbolic(char *o, const struct tk_op *op, uint64_t v);

/* The text of @v as the FLAGS or SYMBOL op prints it. */
static char *put_named(char *o, const struct tk_op *op, uint64_t v)
{
	return op->kind == TK_OP_SYMBOL ? put_symbolic(o, op, v) : put_flags(o, op, v);
}

/*
 * The text of every value below TK_FLAGS_TABLE, made once with the runtime
 * algorithm (put_flags(), put_symbolic()): sched_switch prints its state
 * with eight flags per record, most flag words live in the low byte, and a
 * symbolic value (softirq vectors) was a search whose exit point changed
 * at random. A value read as
 * "field & MASK" (or "| CONST") whose mask spans under 8 bits above its
 * lowest (timer flags) is indexed by value >> shift. Skipped (no table, the
 * loop runs) when the texts would take more than 16 KiB.
 */
static void named_table(struct tk_op *op)
{
	struct tk_flags_table *t;
	char tmp[4096];
	size_t total = 0;
	unsigned int shift = 0;
	uint64_t low = 0;
	/* The widest text: every name, every delimiter, "0x" and 16 digits. */
	uint64_t widest = (uint64_t)op->delim_len + 24;

	for (uint32_t i = 0; i < op->nsyms; i++)
		widest += (uint64_t)op->syms[i].len + op->delim_len;
	if (widest > sizeof(tmp))
		return;
	if (op->load && op->load_mask && op->load_mask != UINT64_MAX &&
	    op->load_mask >> __builtin_ctzll(op->load_mask) < TK_FLAGS_TABLE) {
		shift = (unsigned int)__builtin_ctzll(op->load_mask);
		/* The value's bits below the mask are the or-constant's, always the same. */
		low = op->load_or & ((1ull << shift) - 1);
	}
	for (uint64_t i = 0; i < TK_FLAGS_TABLE; i++) {
		size_t n;

		n = (size_t)(put_named(tmp, op, i << shift | low) - tmp);
		if (n > UINT8_MAX)
			return;
		total += n;
	}
	if (total > (16u << 10))
		return;
	/* 16 bytes more: the last text's hex digits may be written 16 bytes whole. */
	t = malloc(sizeof(*t) + total + 16);
	if (!t)
		return; /* the loop still prints it */
	total = 0;
	for (uint64_t i = 0; i < TK_FLAGS_TABLE; i++) {
		size_t n = (size_t)(put_named(t->text + total, op, i << shift | low) -
				    (t->text + total));

		t->off[i] = (uint16_t)total;
		t->len[i] = (uint8_t)n;
		total += n;
	}
	t->shift = (uint8_t)shift;
	op->ftab = t;
}

/*
 * "v ? __print_flags(v, ...) : \"R\"" (sched_switch's prev_state in perf's
 * format): when the condition and the flags read the same value, one
 * table gives the text of both alternatives, the literal at 0. Which
 * alternative a record takes is random, and the branch on it was missed.
 */
static void cond_table(struct tk_op *op)
{
	const struct tk_op *yes = &op->kids[0], *no = &op->kids[1];
	const struct tk_flags_table *f = yes->ftab;
	struct tk_flags_table *t;
	size_t total;

	if (yes->kind != TK_OP_FLAGS || no->kind != TK_OP_LIT || !f || !op->load ||
	    op->load != yes->load || op->load_off != yes->load_off ||
	    op->load_shift != yes->load_shift || op->load_mask != yes->load_mask ||
	    op->load_or != yes->load_or || no->lit_len > UINT8_MAX)
		return;
	total = (size_t)f->off[TK_FLAGS_TABLE - 1] + f->len[TK_FLAGS_TABLE - 1] + no->lit_len;
	if (total > UINT16_MAX)
		return;
	t = malloc(sizeof(*t) + total);
	if (!t)
		return; /* the kids still print it */
	memcpy(t, f, sizeof(*t) + f->off[TK_FLAGS_TABLE - 1] + f->len[TK_FLAGS_TABLE - 1]);
	t->off[0] = (uint16_t)(total - no->lit_len);
	t->len[0] = (uint8_t)no->lit_len;
	memcpy(t->text + t->off[0], no->lit, no->lit_len);
	op->ftab = t;
}

/* @x as "FIELD & CONST" (either order): the field's expression and the mask's; false if not. */
static bool masked_field(const struct tk_event *ev, const struct tk_expr *x,
			 const struct tk_expr **field, const struct tk_expr **mask)
{
	const struct tk_expr *l, *r;

	if (x->kind != TK_EXPR_BIN || strcmp(x->op, "&"))
		return false;
	l = &ev->exprs[x->a];
	r = &ev->exprs[x->b];
	if (l->kind == TK_EXPR_CONST && r->kind == TK_EXPR_FIELD) {
		const struct tk_expr *t = l;

		l = r;
		r = t;
	}
	*field = l;
	*mask = r;
	return l->kind == TK_EXPR_FIELD && r->kind == TK_EXPR_CONST;
}

/*
 * @x as "(FIELD >> CONST) & CONST" with the shift, the masks (a cast's
 * too) or both left out: what libtraceevent's eval_num_arg() computes
 * from them is one load, a shift and an AND. block's and writeback's
 * MAJOR(dev) and the ioprio class and level are such; through the
 * expression walk they cost block's file a fifth of its instructions.
 */
static bool shifted_field(const struct tk_event *ev, const struct tk_expr *x, struct tk_op *op)
{
	uint64_t mask = UINT64_MAX;
	unsigned int shift = 0;

	for (;;) {
		const struct tk_expr *f, *m;

		if (x->kind == TK_EXPR_MASK) {
			mask &= x->val;
			x = &ev->exprs[x->a];
		} else if (x->kind == TK_EXPR_BIN && !strcmp(x->op, "&") &&
			   (ev->exprs[x->a].kind == TK_EXPR_CONST ||
			    ev->exprs[x->b].kind == TK_EXPR_CONST)) {
			f = &ev->exprs[x->a];
			m = &ev->exprs[x->b];
			if (f->kind == TK_EXPR_CONST) {
				const struct tk_expr *t = f;

				f = m;
				m = t;
			}
			mask &= m->val;
			x = f;
		} else {
			break;
		}
	}
	if (x->kind == TK_EXPR_BIN && !strcmp(x->op, ">>") &&
	    ev->exprs[x->b].kind == TK_EXPR_CONST) {
		shift = (unsigned int)(ev->exprs[x->b].val & 63);
		x = &ev->exprs[x->a];
	}
	if (x->kind != TK_EXPR_FIELD || (shift == 0 && mask == UINT64_MAX))
		return false;
	op->load = (uint8_t)x->size;
	op->load_off = x->off;
	op->load_shift = (uint8_t)shift;
	op->load_mask = mask;
	return true;
}

/*
 * @x as "((FIELD >> CONST) & CONST) * MUL + ADD" (+ a name's address,
 * kept aside in op->lin_ksym): what tk_event_eval() computes from '+',
 * '-', '*' and '<<' by constants, modulo 2^64 as it does. The field part
 * goes in load_off/load_shift/load_mask, the rest in lin_*; false (op
 * unchanged but for lin_*) if @x is not such.
 */
static bool linear_field(const struct tk_event *ev, const struct tk_expr *x, struct tk_op *op,
			 int depth)
{
	const struct tk_expr *l, *r;
	struct tk_op base;

	if (depth > 16)
		return false;
	/* The field itself, or a cast's mask and "(FIELD >> s) & m" on it. */
	base.load = 0;
	if (x->kind == TK_EXPR_FIELD) {
		base.load = (uint8_t)x->size;
		base.load_off = x->off;
		base.load_shift = 0;
		base.load_mask = UINT64_MAX;
	} else {
		shifted_field(ev, x, &base);
	}
	if (base.load) {
		op->lin_load = base.load;
		op->load_off = base.load_off;
		op->load_shift = base.load_shift;
		op->load_mask = base.load_mask;
		op->lin_mul = 1;
		op->lin_add = 0;
		return true;
	}
	if (x->kind != TK_EXPR_BIN)
		return false;
	l = &ev->exprs[x->a];
	r = &ev->exprs[x->b];
	if (!strcmp(x->op, "+") && (l->kind == TK_EXPR_CONST || l->kind == TK_EXPR_KSYM)) {
		const struct tk_expr *t = l;

		l = r;
		r = t;
	}
	if (!strcmp(x->op, "+") && r->kind == TK_EXPR_KSYM) {
		if (op->lin_ksym >= 0 || !linear_field(ev, l, op, depth + 1))
			return false;
		op->lin_ksym = (int32_t)(r - ev->exprs);
		return true;
	}
	if (r->kind != TK_EXPR_CONST ||
	    (strcmp(x->op, "+") && strcmp(x->op, "-") && strcmp(x->op, "*") && strcmp(x->op, "<<")))
		return false;
	/* "(base + name) * k" would scale the name's address: not kept aside then. */
	if (!linear_field(ev, l, op, depth + 1) || (op->lin_ksym >= 0 && x->op[0] != '+'))
		return false;
	switch (x->op[0]) {
	case '+':
		op->lin_add += r->val;
		break;
	case '-':
		op->lin_add -= r->val;
		break;
	case '*':
		op->lin_mul *= r->val;
		op->lin_add *= r->val;
		break;
	default: /* "<<" */
		op->lin_mul <<= r->val & 63;
		op->lin_add <<= r->val & 63;
		break;
	}
	return true;
}

/*
 * @x as "FIELD != C ? LINEAR : K" or "FIELD == C ? K : LINEAR", LINEAR a
 * linear_field() of the same FIELD read whole: the linear form, with the
 * test of the whole field against C (lin_skip) giving K (lin_else).
 */
static bool tested_linear(const struct tk_event *ev, const struct tk_expr *x, struct tk_op *op)
{
	const struct tk_expr *t, *f, *c, *lin, *k;

	op->lin_ksym = -1;
	if (x->kind != TK_EXPR_COND)
		return false;
	t = &ev->exprs[x->a];
	if (t->kind != TK_EXPR_BIN || (strcmp(t->op, "!=") && strcmp(t->op, "==")))
		return false;
	f = &ev->exprs[t->a];
	c = &ev->exprs[t->b];
	if (f->kind == TK_EXPR_CONST) {
		const struct tk_expr *s = f;

		f = c;
		c = s;
	}
	if (f->kind != TK_EXPR_FIELD || c->kind != TK_EXPR_CONST)
		return false;
	lin = &ev->exprs[t->op[0] == '!' ? x->b : x->c];
	k = &ev->exprs[t->op[0] == '!' ? x->c : x->b];
	if (k->kind != TK_EXPR_CONST || !linear_field(ev, lin, op, 1) || op->lin_load != f->size ||
	    op->load_off != f->off || op->load_shift || op->load_mask != UINT64_MAX)
		return false;
	op->lin_test = op->lin_load;
	op->lin_load = 0;
	op->lin_skip = c->val;
	op->lin_else = k->val;
	return true;
}

/* Direct loads and the cast's bit count, for an op and its alternatives. */
static void finish_op(struct tk_event *ev, struct tk_op *op)
{
	const struct tk_expr *x = op->expr >= 0 ? &ev->exprs[op->expr] : NULL;
	const struct tk_expr *f, *m;

	op->load_mask = UINT64_MAX;
	op->load_or = 0;
	op->load_shift = 0;
	op->lin_load = 0;
	op->lin_ksym = -1;
	op->lin_test = 0;
	if (op->kind == TK_OP_LIT || !x) {
		/* nothing to load */
	} else if (x->kind == TK_EXPR_FIELD) {
		op->load = (uint8_t)x->size;
		op->load_off = x->off;
	} else if (masked_field(ev, x, &f, &m)) {
		/* "REC->state & MASK" (flags, states) loads as directly as a field. */
		op->load = (uint8_t)f->size;
		op->load_off = f->off;
		op->load_mask = m->val;
	} else if (x->kind == TK_EXPR_BIN && !strcmp(x->op, "|")) {
		/*
		 * "(REC->f & A) | B": libtraceevent's reading of "REC->f & (A | B
		 * | C)" (timer_start's flags), where '&' binds to the first term.
		 */
		const struct tk_expr *l = &ev->exprs[x->a], *r = &ev->exprs[x->b];

		if (l->kind == TK_EXPR_CONST) {
			const struct tk_expr *t = l;

			l = r;
			r = t;
		}
		if (r->kind == TK_EXPR_CONST && masked_field(ev, l, &f, &m)) {
			op->load = (uint8_t)f->size;
			op->load_off = f->off;
			op->load_mask = m->val;
			op->load_or = r->val;
		}
	} else if (!shifted_field(ev, x, op) && !linear_field(ev, x, op, 0) &&
		   !tested_linear(ev, x, op)) {
		op->lin_load = 0;
		op->lin_ksym = -1;
		op->lin_test = 0;
		op->load_shift = 0;
		op->load_mask = UINT64_MAX;
	}
	op->bits = op->ls <= -2 ? 8 : op->ls == -1 ? 16 : op->ls == 0 ? 32 : 64;
	op->neg_end = 0;
	for (uint32_t k = 0; op->kind == TK_OP_FLAGS && k < op->nsyms; k++)
		if ((int64_t)op->syms[k].value < 0)
			op->neg_end = k + 1;
	if (op->kind == TK_OP_FLAGS || op->kind == TK_OP_SYMBOL)
		named_table(op);
	/*
	 * The commonest number, an int or pid_t printed with plain %d or %u,
	 * gets an op of its own: a 4-byte load and the cast as two shifts,
	 * without the general op's tests of size, mask, width and form.
	 */
	if (op->kind == TK_OP_NUM && op->load == 4 && op->load_mask == UINT64_MAX && !op->load_or &&
	    !op->load_shift && op->lenexpr < 0 && !op->width &&
	    (op->form == TK_NUM_DEC || op->form == TK_NUM_UDEC))
		op->kind = TK_OP_DEC4;
	/*
	 * The same int shifted and/or masked (block's MAJOR(dev) and
	 * MINOR(dev)), or zero-padded to 4 digits or fewer (sched_waking's
	 * "target_cpu=%03d"): two ALU ops and the pad in the digit count.
	 */
	if (op->kind == TK_OP_NUM && op->load == 4 && !op->load_or && op->lenexpr < 0 &&
	    (op->form == TK_NUM_DEC || op->form == TK_NUM_UDEC) &&
	    (!op->width || (op->zero && !op->left && op->width <= 4)))
		op->kind = TK_OP_DEC4S;
	/*
	 * The same for a long of 8 bytes printed whole (%ld %lu %lx, and
	 * "%08lx", the syscall arguments): no cast, mask or width tests.
	 */
	if (op->kind == TK_OP_NUM && op->load == 8 && op->load_mask == UINT64_MAX && !op->load_or &&
	    !op->load_shift && op->lenexpr < 0 && op->bits == 64) {
		if (op->form == TK_NUM_HEX &&
		    (!op->width || (op->zero && !op->left && op->width <= 16)))
			op->kind = TK_OP_HEX8;
		else if (!op->width && (op->form == TK_NUM_DEC || op->form == TK_NUM_UDEC))
			op->kind = TK_OP_DEC8;
	}
	/*
	 * A 1- or 2-byte field (net's flags, ports, protocols: most of its
	 * numbers) read unsigned, which a cast to 32 or 64 bits leaves as it
	 * is: a load and the digits, without the general op's tests.
	 */
	if (op->kind == TK_OP_NUM && (op->load == 1 || op->load == 2) &&
	    op->load_mask == UINT64_MAX && !op->load_or && !op->load_shift && op->lenexpr < 0 &&
	    op->bits >= 32 &&
	    (((op->form == TK_NUM_DEC || op->form == TK_NUM_UDEC) && !op->width) ||
	     (op->form == TK_NUM_HEX &&
	      (!op->width || (op->zero && !op->left && op->width <= 16)))))
		op->kind = op->load == 1 ? TK_OP_NUM1 : TK_OP_NUM2;
	if (op->kids) {
		finish_op(ev, &op->kids[0]);
		finish_op(ev, &op->kids[1]);
		cond_table(op);
	}
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

		finish_op(ev, op);
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
	ev->size_mult = 1;

	memset(&c, 0, sizeof(c));
	c.set = set;
	c.ev = ev;
	c.long_size = set->long_size;
	if (ev->tev->handler) {
		if (!strcmp(ev->system, "sched") && setup_sched(set, ev))
			return;
		ev->why_slow = "a plugin handler not mirrored";
		/* A plugin handler we do not mirror: the slow path runs it. */
		if (!strcmp(ev->system, "kmem"))
			ok = setup_kmem(&c);
		else if (!strcmp(ev->system, "syscalls"))
			ok = setup_futex(&c);
		else if (!strcmp(ev->system, "timer"))
			ok = setup_hrtimer(&c);
		else
			return;
	} else {
		if (ev->tev->flags & TEP_EVENT_FL_FAILED)
			ev->why_slow = "libtraceevent failed to parse it";
		else if (ev->tev->flags & TEP_EVENT_FL_ISBPRINT)
			ev->why_slow = "bprint";
		else
			ev->why_slow = "raw printing";
		if (ev->tev->flags &
		    (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT | TEP_EVENT_FL_PRINTRAW))
			return;
		compile_format(&c);
		ok = !c.failed;
	}
	free(c.lit);
	if (!ok || c.failed || c.max_static > (1u << 20)) {
		ev->why_slow = c.why ? c.why : c.failed || !ok ? ev->why_slow : "text too long";
		for (size_t i = 0; i < c.nops; i++)
			free_op(&c.ops[i]);
		free(c.ops);
		free(c.exprs);
		free(c.names);
		return;
	}
	ev->why_slow = NULL;
	ev->atom_names = c.names;
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
/*
 * A field of 1, 2, 4 or 8 bytes. @swap is a constant where the printer is
 * specialised per byte order, so the common little-endian run has no
 * test per load.
 */
static inline __attribute__((always_inline)) uint64_t rd_o(const uint8_t *p, uint32_t size,
							   bool swap)
{
	switch (size) {
	case 1:
		return p[0];
	case 2: {
		uint16_t x;

		memcpy(&x, p, 2);
		return swap ? __builtin_bswap16(x) : x;
	}
	case 4: {
		uint32_t x;

		memcpy(&x, p, 4);
		return swap ? __builtin_bswap32(x) : x;
	}
	default: {
		uint64_t x;

		memcpy(&x, p, 8);
		return swap ? __builtin_bswap64(x) : x;
	}
	}
}

static inline uint64_t rd(const struct tk_event_set *set, const uint8_t *p, uint32_t size)
{
	return rd_o(p, size, set->swap);
}

const char tk_dec_pairs[201] = "00010203040506070809101112131415161718192021222324"
			       "25262728293031323334353637383940414243444546474849"
			       "50515253545556575859606162636465666768697071727374"
			       "75767778798081828384858687888990919293949596979899";
const char tk_hex_pairs[513] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
			       "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
			       "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
			       "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
			       "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
			       "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
			       "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
			       "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
const uint64_t tk_pow10[20] = {
	1ull,
	10ull,
	100ull,
	1000ull,
	10000ull,
	100000ull,
	1000000ull,
	10000000ull,
	100000000ull,
	1000000000ull,
	10000000000ull,
	100000000000ull,
	1000000000000ull,
	10000000000000ull,
	100000000000000ull,
	1000000000000000ull,
	10000000000000000ull,
	100000000000000000ull,
	1000000000000000000ull,
	10000000000000000000ull,
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

/*
 * @x below 10^4 as tk_put_dec4() writes it, zero-padded to @width digits
 * (at most 4): the word holds all four digits, the pad is in the length.
 */
static inline char *put_dec4_pad(char *o, uint32_t x, uint32_t width)
{
	uint32_t len = 1u + (x >= 10u) + (x >= 100u) + (x >= 1000u);
	uint16_t hi, lo;
	uint32_t word;

	len = len > width ? len : width;
	memcpy(&hi, tk_dec_pairs + 2 * (x / 100u), 2);
	memcpy(&lo, tk_dec_pairs + 2 * (x % 100u), 2);
	word = ((uint32_t)hi | (uint32_t)lo << 16) >> (8 * (4 - len));
	memcpy(o, &word, 4);
	return o + len;
}

/* A padded numeric field: zero-fill what a 3-digit pad needs ("%03u"). */
static inline char *put_num_fmt(char *o, const char *end, const char *fmt, uint64_t v)
{
	int n = snprintf(o, (size_t)(end - o), fmt, v);

	return n > 0 ? o + (n < end - o ? n : end - o - 1) : o;
}

/*
 * Literal text in whole chunks: fixed-size copies compile to a few vector
 * moves, where a variable memcpy() became "rep movs", the slowest way to
 * move ten bytes; most literals (" pid=", " ==> next_comm=") take one
 * 32-byte move and no loop. A literal is allocated padded to 16 bytes plus
 * 16 (so 32 bytes are readable from any literal up to 32), and the output
 * has the event's worst case + 32 bytes of room: the overshoot is harmless.
 */
static inline char *put_lit(char *o, const char *s, size_t n)
{
	/* 1 to 32 bytes; none (an op without a literal before it, s NULL) loops zero times. */
	if (__builtin_expect(n - 1 < 32, 1)) {
		memcpy(o, s, 32);
		return o + n;
	}
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

/*
 * strnlen(s, 16) without a branch on the length (names of 4 to 15 bytes
 * mix at random): one compare of 16 bytes, or the usual bit trick on two
 * words when SSE2 is missing.
 */
static inline size_t strnlen16(const char *s)
{
#if defined(__SSE2__)
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
	unsigned int zeros =
		(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));

	return (size_t)__builtin_ctz(zeros | 0x10000u);
#else
	const uint64_t lo = 0x0101010101010101ull, hi = 0x8080808080808080ull;
	uint64_t w[2];

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return strnlen(s,
		       16); /* the trick below finds the lowest-addressed zero on little endian */
#endif
	memcpy(w, s, 16);
	for (int i = 0; i < 2; i++) {
		uint64_t z = (w[i] - lo) & ~w[i] & hi;

		if (z)
			return (size_t)i * 8 + (size_t)__builtin_ctzll(z) / 8;
	}
	return 16;
#endif
}

/*
 * The name the sched plugin registers when it prints field @f, unless
 * nothing would change (most records: no lock then). Registering also
 * tells libtraceevent, hence @lock (NULL: no other thread prints).
 */
static void learn_comm(struct tk_event_set *set, const uint8_t *data,
		       const struct tk_event_field *f, int pid, pthread_mutex_t *lock)
{
	const char *c = (const char *)data + f->offset;

	if (tk_comm_settled(set->comms, pid))
		return;
	if (lock)
		pthread_mutex_lock(lock);
	tk_event_register_comm(set, pid, c, f->size == 16 ? strnlen16(c) : strnlen(c, f->size));
	if (lock)
		pthread_mutex_unlock(lock);
}

/*
 * The plugin registers every name it prints (see "Command names" in
 * event.c for what that does to later lines): @learn is the set to
 * register in, or NULL when tk_event_sched_learn() did it already.
 */
static char *put_comm(char *o, const uint8_t *data, const struct tk_event_field *f, int pid,
		      struct tk_event_set *learn)
{
	const char *c = (const char *)data + f->offset;
	size_t n = f->size == 16 ? strnlen16(c) : strnlen(c, f->size);

	if (learn)
		learn_comm(learn, data, f, pid, NULL);
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
void tk_event_sched_register(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			     uint32_t size)
{
	const uint8_t *d = data;

	if (ev->kind == TK_EVENT_SCHED_SWITCH) {
		sched_learn(set, d, size, ev->f_prev_pid, ev->f_prev_comm);
		sched_learn(set, d, size, ev->f_next_pid, ev->f_next_comm);
	} else if (ev->kind == TK_EVENT_SCHED_WAKEUP) {
		sched_learn(set, d, size, ev->f_pid, ev->f_comm);
	}
}

/*
 * A sched field's value: at its fixed place with a 4-byte load (@fixed,
 * ev->sched_fixed), else through the field (any size, either order).
 */
static inline __attribute__((always_inline)) uint64_t
sched_rd(const struct tk_event_set *set, const struct tk_event *ev, const uint8_t *d,
	 const struct tk_event_field *f, int place, bool fixed)
{
	uint32_t x;

	if (!fixed)
		return rd(set, d + f->offset, f->size);
	memcpy(&x, d + ev->sched_off[place], 4);
	return x;
}

/* put_comm() of a sched field: a 16-byte comm at its fixed place when @fixed. */
static inline __attribute__((always_inline)) char *
sched_comm(char *o, const struct tk_event *ev, const uint8_t *d, const struct tk_event_field *f,
	   int place, int pid, struct tk_event_set *learn, bool fixed)
{
	const char *c = (const char *)d + ev->sched_off[place];

	if (!fixed)
		return put_comm(o, d, f, pid, learn);
	if (learn)
		learn_comm(learn, d, f, pid, NULL);
	memcpy(o, c, 16);
	return o + strnlen16(c);
}

/* The sched_switch plugin's text (@fixed: ev->sched_fixed, a constant at each call). */
static inline __attribute__((always_inline)) int
put_sched_switch(struct tk_event_set *set, const struct tk_event *ev, const uint8_t *d,
		 struct tk_outbuf *out, bool learn, bool fixed)
{
	uint64_t v;
	uint8_t state;
	char *o;

	if (ensure_room(out, 2u * 256 + 200))
		return -ENOTSUP;
	o = out->buf + out->len;
	v = sched_rd(set, ev, d, ev->f_prev_pid, SCHED_PREV_PID, fixed);
	o = sched_comm(o, ev, d, ev->f_prev_comm, SCHED_PREV_COMM, (int)v, learn ? set : NULL,
		       fixed);
	*o++ = ':';
	o = put_s64(o, (int64_t)v);
	*o++ = ' ';
	*o++ = '[';
	o = put_s64(o, (int32_t)sched_rd(set, ev, d, ev->f_prev_prio, SCHED_PREV_PRIO, fixed));
	*o++ = ']';
	*o++ = ' ';
	/* The state's low byte: the first one in the host's (little-endian) order. */
	state = fixed ? d[ev->sched_off[SCHED_PREV_STATE]]
		      : (uint8_t)rd(set, d + ev->f_prev_state->offset, ev->f_prev_state->size);
	{
		const struct state_text *st = &state_texts[state];

		memcpy(o, st->text, sizeof(st->text));
		o += st->len;
	}
	o = put_str(o, " ==> ", 5);
	v = sched_rd(set, ev, d, ev->f_next_pid, SCHED_NEXT_PID, fixed);
	o = sched_comm(o, ev, d, ev->f_next_comm, SCHED_NEXT_COMM, (int)v, learn ? set : NULL,
		       fixed);
	*o++ = ':';
	o = put_s64(o, (int64_t)v);
	*o++ = ' ';
	*o++ = '[';
	o = put_s64(o, (int32_t)sched_rd(set, ev, d, ev->f_next_prio, SCHED_NEXT_PRIO, fixed));
	*o++ = ']';
	out->len = (size_t)(o - out->buf);
	return 0;
}

static __attribute__((noinline, flatten)) int run_sched_switch(struct tk_event_set *set,
							       const struct tk_event *ev,
							       const uint8_t *d, uint32_t size,
							       struct tk_outbuf *out, bool learn)
{
	if (size < ev->min_size)
		return -ENOTSUP;
	if (__builtin_expect(ev->sched_fixed, 1))
		return put_sched_switch(set, ev, d, out, learn, true);
	return put_sched_switch(set, ev, d, out, learn, false);
}

/* The sched_wakeup plugin's text (@fixed as for put_sched_switch()). */
static inline __attribute__((always_inline)) int
put_sched_wakeup(struct tk_event_set *set, const struct tk_event *ev, const uint8_t *d,
		 struct tk_outbuf *out, bool learn, bool fixed)
{
	uint64_t v;
	char *o;

	if (ensure_room(out, 256 + 200))
		return -ENOTSUP;
	o = out->buf + out->len;
	v = sched_rd(set, ev, d, ev->f_pid, SCHED_PID, fixed);
	o = sched_comm(o, ev, d, ev->f_comm, SCHED_COMM, (int)v, learn ? set : NULL, fixed);
	*o++ = ':';
	o = put_s64(o, (int64_t)v);
	o = put_str(o, " [", 2);
	o = put_s64(o, (int64_t)sched_rd(set, ev, d, ev->f_prio, SCHED_PRIO, fixed));
	*o++ = ']';
	if (ev->f_success) {
		o = put_str(o, " success=", 9);
		o = put_s64(o, (int64_t)sched_rd(set, ev, d, ev->f_success, SCHED_SUCCESS, fixed));
	}
	if (ev->f_target) {
		v = sched_rd(set, ev, d, ev->f_target, SCHED_TARGET, fixed);
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

static __attribute__((noinline, flatten)) int run_sched_wakeup(struct tk_event_set *set,
							       const struct tk_event *ev,
							       const uint8_t *d, uint32_t size,
							       struct tk_outbuf *out, bool learn)
{
	if (size < ev->min_size)
		return -ENOTSUP;
	if (__builtin_expect(ev->sched_fixed, 1))
		return put_sched_wakeup(set, ev, d, out, learn, true);
	return put_sched_wakeup(set, ev, d, out, learn, false);
}

uint64_t tk_event_eval(const struct tk_event_set *set, const struct tk_expr *x, int32_t i,
		       const uint8_t *d, uint32_t size)
{
	const struct tk_expr *e = &x[i];
	uint64_t l, r;

	switch (e->kind) {
	case TK_EXPR_CONST:
	case TK_EXPR_KSYM:
		return e->val;
	case TK_EXPR_FIELD:
		return rd(set, d + e->off, e->size);
	case TK_EXPR_MASK:
		return tk_event_eval(set, x, e->a, d, size) & e->val;
	case TK_EXPR_COND:
		return tk_event_eval(set, x, e->a, d, size) ? tk_event_eval(set, x, e->b, d, size)
							    : tk_event_eval(set, x, e->c, d, size);
	case TK_EXPR_DYNLEN: {
		/*
		 * libtraceevent: 0 when offset + length pass the record (the
		 * offset taken before __rel_loc's adjustment).
		 */
		uint32_t w = (uint32_t)rd(set, d + e->off, 4);

		return (w & 0xffff) + (w >> 16) > size ? 0 : w >> 16;
	}
	default:
		break;
	}
	l = tk_event_eval(set, x, e->a, d, size);
	r = tk_event_eval(set, x, e->b, d, size);
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

/* @n copies of @c, in 16-byte stores (up to 15 bytes more are written). */
static inline char *put_fill(char *o, char c, size_t n)
{
	char chunk[16];

	memset(chunk, c, sizeof(chunk));
	for (size_t i = 0; i < n; i += 16)
		memcpy(o + i, chunk, 16);
	return o + n;
}

/* "%-5d", "%03u", "%08x": digits in @tmp, padded as printf pads them. */
static inline char *put_padded(char *o, const struct tk_op *op, const char *digits, size_t n,
			       bool neg)
{
	size_t len = n + neg, pad = op->width > len ? op->width - len : 0;

	/* Fixed 16-byte fills (a number op has NUM_MAX of room): no call for "%03d". */
	if (!op->left && !op->zero)
		o = put_fill(o, ' ', pad);
	if (neg)
		*o++ = '-';
	if (op->zero)
		o = put_fill(o, '0', pad);
	o = tk_copy(o, digits, n);
	if (op->left)
		o = put_fill(o, ' ', pad);
	return o;
}

/*
 * "%08lx", every syscall argument: the digits written at the padded length
 * (@width <= 16), high zero digits being the padding; no fill, no copy.
 */
static inline char *put_hex_zpad(char *o, uint64_t v, unsigned int width)
{
	unsigned int n = (64u - (unsigned int)__builtin_clzll(v | 1) + 3) / 4;

	return tk_put_hex_n(o, v, n > width ? n : width);
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
		case TK_NUM_AHEX:
			/* glibc's '#' flag: no prefix on a zero. */
			if (!v) {
				*o = '0';
				return o + 1;
			}
			memcpy(o, "0x", 2);
			return put_hex(o + 2, v);
		case TK_NUM_OCT: {
			unsigned int n = (64u - (unsigned int)__builtin_clzll(v | 1) + 2) / 3;

			for (unsigned int i = n; i-- > 0; v >>= 3)
				o[i] = (char)('0' + (v & 7));
			return o + n;
		}
		default:
			return put_hex(o, v);
		}
	}
	if (op->form == TK_NUM_HEX && op->zero && !op->left && op->width <= 16)
		return put_hex_zpad(o, v, op->width);
	if (op->form == TK_NUM_DEC && (int64_t)v < 0) {
		neg = true;
		v = (uint64_t)0 - v;
	}
	e = op->form == TK_NUM_HEX ? put_hex(tmp, v) : put_u64(tmp, v);
	return put_padded(o, op, tmp, (size_t)(e - tmp), neg);
}

/*
 * @n bytes of symbol @k's name: 32 bytes whole when the name fits in them
 * and the text has them (the op's room covers the overshoot), so the
 * name's length (which varies at random) is no branch.
 */
static inline char *put_sym_name(const struct tk_event_set *set, char *o, const struct tk_ksym *k,
				 size_t n)
{
	const char *name = set->ksym_text + k->name_off;

	if (__builtin_expect(n <= 32 && (size_t)k->name_off + 32 <= set->ksym_len, 1)) {
		memcpy(o, name, 32);
		return o + n;
	}
	return put_str(o, name, n);
}

/* The kmem plugin's "(name+0xoff) ", the offset as an int through "%x"; nothing unknown. */
static char *put_callsite(struct tk_event_set *set, struct tk_ksym_memo *memo, char *o, uint64_t v)
{
	const struct tk_ksym *k = tk_event_ksym_find_memo(set, memo, v);

	if (!k)
		return o;
	*o++ = '(';
	o = put_sym_name(set, o, k, k->name_len < SYM_MAX ? k->name_len : SYM_MAX);
	o = put_str(o, "+0x", 3);
	o = put_hex(o, (uint32_t)(v - k->addr));
	return put_str(o, ") ", 2);
}

/* "%08llx": hex digits, zero-padded to eight. */
static inline char *put_hex08(char *o, uint64_t v)
{
	char tmp[24];
	char *t = put_hex(tmp, v);
	size_t n;

	for (n = (size_t)(t - tmp); n < 8; n++)
		*o++ = '0';
	return put_str(o, tmp, (size_t)(t - tmp));
}

/* "name", "name+0xoff" (%pS) or the plugin's "name/0x(addr - val)". */
static char *put_func(struct tk_event_set *set, struct tk_ksym_memo *memo, char *o, uint64_t v,
		      enum tk_op_kind kind, bool offset)
{
	const struct tk_ksym *k = tk_event_ksym_find_memo(set, memo, v);

	if (kind == TK_OP_FUNCF) {
		/* The plugin formats into a 128-byte buffer: keep its cut. */
		char tmp[24];
		char *t;
		size_t n;

		if (k) {
			char *start = o;

			/* Written in place, then cut (the op's room is 160 bytes). */
			n = k->name_len < 127 ? k->name_len : 127;
			o = put_sym_name(set, o, k, n);
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
	o = put_sym_name(set, o, k, k->name_len < SYM_MAX ? k->name_len : SYM_MAX);
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
	bool v4 = (!b[0] && !b[1] && !b[2] && !b[3] && !b[4] && !b[5] && !b[6] && !b[7] && !b[8] &&
		   !b[9] && b[10] == 0xff && b[11] == 0xff) ||
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

/* The value of an op's linear form (finish_op()) from its field's @raw value. */
static inline __attribute__((always_inline)) uint64_t
lin_value(const struct tk_event *ev, const struct tk_op *op, uint64_t raw)
{
	return ((raw >> op->load_shift) & op->load_mask) * op->lin_mul + op->lin_add +
	       (op->lin_ksym >= 0 ? ev->exprs[op->lin_ksym].val : 0);
}

/* The same, when the field may hold the value that selects lin_else. */
static inline __attribute__((always_inline)) uint64_t
lin_tested(const struct tk_event *ev, const struct tk_op *op, uint64_t raw)
{
	return raw == op->lin_skip ? op->lin_else : lin_value(ev, op, raw);
}

/*
 * rd_o() of an op's direct load: pointers and longs (%p, %ps, most
 * symbolic values) tested first, where the switch tested them last.
 */
static inline __attribute__((always_inline)) uint64_t rd_load(const uint8_t *p, uint32_t size,
							      bool swap)
{
	if (__builtin_expect(size == 8, 1))
		return rd_o(p, 8, swap);
	return rd_o(p, size, swap);
}

static inline __attribute__((always_inline)) uint64_t
op_value_o(const struct tk_event_set *set, const struct tk_event *ev, const struct tk_op *op,
	   const uint8_t *d, uint32_t size, bool swap)
{
	if (op->load)
		return ((rd_load(d + op->load_off, op->load, swap) >> op->load_shift) &
			op->load_mask) |
		       op->load_or;
	if (op->lin_load)
		return lin_value(ev, op, rd_o(d + op->load_off, op->lin_load, swap));
	if (op->lin_test)
		return lin_tested(ev, op, rd_o(d + op->load_off, op->lin_test, swap));
	return tk_event_eval(set, ev->exprs, op->expr, d, size);
}

static inline uint64_t op_value(const struct tk_event_set *set, const struct tk_event *ev,
				const struct tk_op *op, const uint8_t *d, uint32_t size)
{
	if (op->load)
		return ((rd(set, d + op->load_off, op->load) >> op->load_shift) & op->load_mask) |
		       op->load_or;
	if (op->lin_load)
		return lin_value(ev, op, rd(set, d + op->load_off, op->lin_load));
	if (op->lin_test)
		return lin_tested(ev, op, rd(set, d + op->load_off, op->lin_test));
	return tk_event_eval(set, ev->exprs, op->expr, d, size);
}

/* cast_num() with the bit count finish_program() derived from the length. */
static inline uint64_t cast_bits(uint64_t v, unsigned int bits, bool is_signed)
{
	unsigned int sh = 64 - bits; /* bits is 8, 16, 32 or 64 */

	/* Keep @bits bits, sign-extended when the cast is signed: two shifts, no branch. */
	v <<= sh;
	return is_signed ? (uint64_t)((int64_t)v >> sh) : v >> sh;
}

/*
 * Set by a compiled op that found a length reaching past even the slow
 * path's zeroed scratch (libtraceevent would read out of bounds): the
 * record then prints a marker and fails. Per thread: records of one set
 * may be printed on several threads at once (tk_event_run_shared()).
 */
static __thread bool run_bad;

/*
 * A '*' width or precision. libtraceevent passes a negative one to
 * printf() without the int (its print_str_to_seq() and print_arg_number()
 * test len_arg >= 0), so the format reads a pointer as the width: garbage
 * text or a crash. Such a record fails with a marker here, as does a width
 * over 64 Ki that would make the slow path pad for ever; widths over 1000
 * go to the slow path. Return: false when the op cannot print.
 */
static inline bool star_value(struct tk_event_set *set, const struct tk_event *ev,
			      const struct tk_op *op, const uint8_t *d, uint32_t size, int *v)
{
	*v = (int)tk_event_eval(set, ev->exprs, op->lenexpr, d, size);
	if (*v < 0 || *v > 65536)
		run_bad = true;
	return *v >= 0 && *v <= 1000;
}

/*
 * @n bytes at @s through "%[-][width][.prec]s" (the op's, or its '*'
 * value @star), written at @o. @s may lie ahead of @o in the output.
 */
static char *put_str_spec(char *o, const struct tk_op *op, int star, const char *s, size_t n)
{
	size_t width = op->width, pad;
	long prec = op->prec;
	bool left = op->left;

	if (op->star == 1) {
		left |= star < 0;
		width = star < 0 ? (size_t) - (long)star : (size_t)star;
	} else if (op->star == 2) {
		prec = star < 0 ? -1 : star;
	}
	if (prec >= 0 && n > (size_t)prec)
		n = (size_t)prec;
	pad = width > n ? width - n : 0;
	if (!left)
		for (; pad; pad--)
			*o++ = ' ';
	memmove(o, s, n);
	o += n;
	for (; pad; pad--)
		*o++ = ' ';
	return o;
}

/*
 * The bytes of a HEX / ARRAY / BITMASK / HEXBUF op: a fixed field, or a
 * dynamic array located as libtraceevent's dynamic_offset_field() does
 * (an offset past the record reads as 0; __rel_loc counts from the end of
 * its field). @len: the dynamic length (0 when offset + length pass the
 * record), or the fixed field's size.
 */
static inline uint32_t op_base(const struct tk_event_set *set, const struct tk_op *op,
			       const uint8_t *d, uint32_t size, uint32_t *len)
{
	uint32_t w, o;

	if (!op->dyn) {
		*len = op->size;
		return op->off;
	}
	w = (uint32_t)rd(set, d + op->off, 4);
	o = w & 0xffff;
	*len = o + (w >> 16) > size ? 0 : w >> 16;
	o = o > size ? 0 : o;
	if (op->rel)
		o += op->off + 4;
	return o;
}

/* __print_symbolic() of @v, as libtraceevent prints it. */
static char *put_symbolic(char *o, const struct tk_op *op, uint64_t v)
{
	for (uint32_t k = 0; k < op->nsyms; k++)
		if (op->syms[k].value == v)
			return put_str(o, op->syms[k].str, op->syms[k].len);
	o = put_str(o, "0x", 2);
	return put_hex(o, v);
}

/* __print_flags() of @v, as libtraceevent prints it. */
static char *put_flags(char *o, const struct tk_op *op, uint64_t v)
{
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
			/* Only a negative entry still prints for a value of 0. */
			if (!v && k >= op->neg_end)
				break;
		}
	}
	if (v) {
		if (printed && op->delim)
			o = put_str(o, op->delim, op->delim_len);
		o = put_str(o, "0x", 2);
		o = put_hex(o, v);
	}
	return o;
}

static inline char *put_hex2(char *o, uint8_t b)
{
	memcpy(o, tk_hex_pairs + 2 * b, 2);
	return o + 2;
}

static char *run_kid(struct tk_event_set *set, const struct tk_event *ev, const struct tk_op *op,
		     const uint8_t *d, uint32_t size, char *o, const struct tk_outbuf *out,
		     struct tk_ksym_memo *memo);
static char *run_rare(struct tk_event_set *set, const struct tk_event *ev, const struct tk_op *op,
		      const uint8_t *d, uint32_t size, char *o);

/*
 * A length that passes the record: the slow path prints what trace-cmd
 * prints when its read stays inside the zeroed scratch behind the record
 * copy (see event.c); beyond that libtraceevent would fault, so the
 * record fails instead. Return: NULL either way.
 */
static char *past_record(uint64_t end, uint32_t size)
{
	if (end > (uint64_t)size + TK_EVENT_SCRATCH)
		run_bad = true;
	return NULL;
}

/*
 * One op's text at @o. Return: the end, or NULL when the record needs the
 * slow path (a location outside it, a '*' width beyond 1000).
 */
/*
 * The ops that print hex dumps, arrays, masks, MAC and UUID text: out of
 * line, so that the common ops' loop stays small enough for the compiler
 * to inline the number writers into it.
 */
static __attribute__((noinline)) char *run_rare(struct tk_event_set *set, const struct tk_event *ev,
						const struct tk_op *op, const uint8_t *d,
						uint32_t size, char *o)
{
	switch (op->kind) {
	case TK_OP_BITMASK: {
		/*
		 * libtraceevent's print_bitmask_to_seq(): the bytes from the
		 * last, "%02x" each, a comma before every fourth from the end
		 * but the first (big-endian files read the bytes backwards),
		 * then through the conversion's format. Written 1 KiB ahead
		 * so that the padding can move in front.
		 */
		uint32_t len, base = op_base(set, op, d, size, &len);
		char *t = o + 1024, *p = t;
		int w = 0;

		if ((uint64_t)base + len > size)
			return past_record((uint64_t)base + len, size);
		for (uint32_t j = len; j-- > 0;) {
			if ((j + 1) % 4 == 0 && j != len - 1)
				*p++ = ',';
			p = put_hex2(p, d[base + (set->big_endian ? len - 1 - j : j)]);
		}
		if (op->plain) {
			memmove(o, t, (size_t)(p - t));
			o += p - t;
			break;
		}
		if (op->star && !star_value(set, ev, op, d, size, &w))
			return NULL;
		o = put_str_spec(o, op, w, t, (size_t)(p - t));
		break;
	}
	case TK_OP_HEX: {
		uint32_t len, base = op_base(set, op, d, size, &len);
		uint32_t n = (uint32_t)op_value(set, ev, op, d, size);

		if ((uint64_t)base + n > size)
			return past_record((uint64_t)base + n, size);
		for (uint32_t i = 0; i < n; i++) {
			if (i && op->delim_len)
				*o++ = ' ';
			o = put_hex2(o, d[base + i]);
		}
		break;
	}
	case TK_OP_ARRAY: {
		uint32_t len, base = op_base(set, op, d, size, &len);
		uint32_t n = (uint32_t)op_value(set, ev, op, d, size);
		const uint8_t *p = d + base;

		if ((uint64_t)base + (uint64_t)n * op->elsize > size)
			return past_record((uint64_t)base + (uint64_t)n * op->elsize, size);
		/* In host order, as libtraceevent reads them (no byte swap). */
		for (uint32_t i = 0; i < n; i++, p += op->elsize) {
			uint8_t b;
			uint16_t h;
			uint32_t x;
			uint64_t q;

			if (i)
				*o++ = ' ';
			switch (op->elsize) {
			case 1:
				b = *p;
				o = put_u64(o, b);
				break;
			case 2:
				memcpy(&h, p, 2);
				o = put_u64(o, h);
				break;
			case 4:
				memcpy(&x, p, 4);
				o = put_u64(o, x);
				break;
			default:
				memcpy(&q, p, 8);
				o = put_u64(o, q);
				break;
			}
		}
		break;
	}
	case TK_OP_HEXBUF: {
		uint32_t len, base = op_base(set, op, d, size, &len);
		int plen = 1;

		if (op->lenexpr >= 0)
			plen = (int)tk_event_eval(set, ev->exprs, op->lenexpr, d, size);
		/* libtraceevent compares unsigned: a negative count takes the array's length. */
		if (len < (uint32_t)plen)
			plen = (int)len;
		if (plen < 1)
			break;
		if ((uint64_t)base + (uint32_t)plen > size)
			return past_record((uint64_t)base + (uint32_t)plen, size);
		for (int i = 0; i < plen; i++) {
			if (i)
				o = put_str(o, op->delim, op->delim_len);
			o = put_hex2(o, d[base + (uint32_t)i]);
		}
		break;
	}
	case TK_OP_FUTEX: {
		static const struct {
			const char *name;
			uint8_t hex_val, utime, val2, uaddr2, val3;
		} tbl[13] = {
			{"FUTEX_WAIT", 2, 1, 0, 0, 0},
			{"FUTEX_WAKE", 1, 0, 0, 0, 0},
			{"FUTEX_FD", 1, 0, 0, 0, 0},
			{"FUTEX_REQUEUE", 1, 0, 1, 1, 0},
			{"FUTEX_CMP_REQUEUE", 1, 0, 1, 1, 1},
			{"FUTEX_WAKE_OP", 1, 0, 1, 1, 1},
			{"FUTEX_LOCK_PI", 0, 1, 0, 0, 0},
			{"FUTEX_UNLOCK_PI", 0, 0, 0, 0, 0},
			{"FUTEX_TRYLOCK_PI", 0, 0, 0, 0, 0},
			{"FUTEX_WAIT_BITSET", 2, 1, 0, 0, 1},
			{"FUTEX_WAKE_BITSET", 1, 0, 0, 0, 1},
			{"FUTEX_WAIT_REQUEUE_PI", 2, 1, 0, 1, 1},
			{"FUTEX_CMP_REQUEUE_PI", 1, 0, 1, 1, 1},
		};
		uint64_t a[6], cmd;

		for (int i = 0; i < 6; i++)
			a[i] = tk_event_eval(set, ev->exprs, op->expr + i, d, size);
		/* FUTEX_CMD_MASK: all but FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256).
		 */
		cmd = a[1] & ~(uint64_t)384;
		if (cmd >= 13)
			return NULL; /* the plugin prints the format: the slow path */
		o = put_str(o, "op=", 3);
		o = put_str(o, tbl[cmd].name, strlen(tbl[cmd].name));
		if (a[1] & 128)
			o = put_str(o, "|FUTEX_PRIVATE_FLAG", 19);
		if (a[1] & 256)
			o = put_str(o, "|FUTEX_CLOCK_REALTIME", 21);
		o = put_hex08(put_str(o, " uaddr=0x", 9), a[0]);
		if (tbl[cmd].hex_val == 2)
			o = put_hex08(put_str(o, " val=0x", 7), a[2]);
		else if (tbl[cmd].hex_val)
			o = put_u64(put_str(o, " val=", 5), a[2]);
		if (tbl[cmd].utime)
			o = put_hex08(put_str(o, " utime=0x", 9), a[3]);
		if (tbl[cmd].val2)
			o = put_u64(put_str(o, " val2=", 6), a[3]);
		if (tbl[cmd].uaddr2)
			o = put_hex08(put_str(o, " uaddr2=0x", 10), a[4]);
		if (tbl[cmd].val3)
			o = put_hex08(put_str(o, " val3=0x", 8), a[5]);
		break;
	}
	case TK_OP_PRINTK: {
		/* Read as libtraceevent reads it: in the host's byte order. */
		uint64_t a = 0;
		const struct tk_printk *pk;

		if (op->size == 8) {
			memcpy(&a, d + op->off, 8);
		} else {
			uint32_t a4;

			memcpy(&a4, d + op->off, 4);
			a = a4;
		}
		pk = tk_event_printk_find(set, a);
		if (pk)
			return put_str(o, pk->text, pk->len);
		return put_hex(o, a);
	}
	case TK_OP_MAC: {
		const uint8_t *b = d + op->off;

		for (int i = 0; i < 6; i++) {
			if (i && op->delim_len)
				*o++ = op->delim[0];
			o = put_hex2(o, b[op->left ? 5 - i : i]);
		}
		break;
	}
	case TK_OP_UUID: {
		static const uint8_t guid[16] = {3, 2, 1,  0,  5,  4,  7,  6,
						 8, 9, 10, 11, 12, 13, 14, 15};
		const uint8_t *b = d + op->off;

		for (int i = 0; i < 16; i++) {
			uint8_t v = b[op->left ? guid[i] : i];

			if (op->zero) {
				*o++ = "0123456789ABCDEF"[v >> 4];
				*o++ = "0123456789ABCDEF"[v & 15];
			} else {
				o = put_hex2(o, v);
			}
			if (i == 3 || i == 5 || i == 7 || i == 9)
				*o++ = '-';
		}
		break;
	}
	default:
		break;
	}
	return o;
}

/* A FLAGS or SYMBOL value: from the op's table (named_table()) when it has the value. */
static inline char *put_table_value(char *o, const struct tk_op *op, uint64_t v)
{
	if (op->ftab) {
		uint64_t i = v >> op->ftab->shift;

		if (i < TK_FLAGS_TABLE)
			return put_str(o, op->ftab->text + op->ftab->off[i], op->ftab->len[i]);
	}
	return put_named(o, op, v);
}

/* One op, whose kind is @kind (a constant @kind leaves one case of the switch). */
static inline __attribute__((always_inline)) char *
run_op_as(struct tk_event_set *set, const struct tk_event *ev, const struct tk_op *op,
	  const uint8_t *d, uint32_t size, char *o, const struct tk_outbuf *out, bool swap,
	  enum tk_op_kind kind, struct tk_ksym_memo *memo)
{
	switch (kind) {
	case TK_OP_LIT:
		o = put_lit(o, op->lit, op->lit_len);
		break;
	case TK_OP_DEC4: {
		uint64_t v = cast_bits(rd_o(d + op->load_off, 4, swap), op->bits, op->rel);

		o = op->form == TK_NUM_DEC ? put_s64(o, (int64_t)v) : put_u64(o, v);
		break;
	}
	case TK_OP_DEC4S: {
		uint64_t v = cast_bits((rd_o(d + op->load_off, 4, swap) >> op->load_shift) &
					       op->load_mask,
				       op->bits, op->rel);

		/* Negative or wide values as the general op prints them. */
		o = v < 10000u ? put_dec4_pad(o, (uint32_t)v, op->width) : put_num(o, op, v);
		break;
	}
	case TK_OP_DEC8: {
		uint64_t v = rd_o(d + op->load_off, 8, swap);

		o = op->form == TK_NUM_DEC ? put_s64(o, (int64_t)v) : put_u64(o, v);
		break;
	}
	case TK_OP_HEX8: {
		uint64_t v = rd_o(d + op->load_off, 8, swap);

		o = op->width ? put_hex_zpad(o, v, op->width) : put_hex(o, v);
		break;
	}
	case TK_OP_NUM1:
	case TK_OP_NUM2: {
		/* Below 65536: %d and %u print the same digits. */
		uint64_t v = kind == TK_OP_NUM1 ? d[op->load_off] : rd_o(d + op->load_off, 2, swap);

		if (op->form != TK_NUM_HEX)
			o = put_u64(o, v);
		else
			o = op->width ? put_hex_zpad(o, v, op->width) : put_hex(o, v);
		break;
	}
	case TK_OP_NUM: {
		uint64_t v = cast_bits(op_value_o(set, ev, op, d, size, swap), op->bits, op->rel);

		if (op->lenexpr >= 0) {
			char *end = out->buf + out->cap;
			int w;
			int n;

			if (!star_value(set, ev, op, d, size, &w))
				return NULL;
			n = snprintf(o, (size_t)(end - o), op->fmt, w, v);
			o += n > 0 ? (n < end - o ? n : end - o - 1) : 0;
		} else if (op->form == TK_NUM_PRINTF) {
			o = put_num_fmt(o, out->buf + out->cap, op->fmt, v);
		} else {
			o = put_num(o, op, v);
		}
		break;
	}
	case TK_OP_PTR: {
		uint64_t v = op_value_o(set, ev, op, d, size, swap);

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
		o = put_func(set, memo, o, op_value_o(set, ev, op, d, size, swap), op->kind,
			     op->offset);
		break;
	case TK_OP_CALLSITE:
		o = put_callsite(set, memo, o, op_value_o(set, ev, op, d, size, swap));
		break;
	case TK_OP_CSTR: {
		bool yes = op_value_o(set, ev, op, d, size, swap) != 0;
		const char *t = yes ? op->lit : op->alt;
		uint32_t n = yes ? op->lit_len : op->alt_len;

		if (n < CSTR_ROOM) {
			/* CSTR_ROOM bytes whole (the output's slack covers them), n kept. */
			memcpy(o, t, CSTR_ROOM);
			o += n;
		} else {
			o = put_str(o, t, n);
		}
		break;
	}
	case TK_OP_STR:
	case TK_OP_DSTR: {
		const char *s;
		size_t n;
		int w = 0;

		if (op->kind == TK_OP_STR) {
			s = (const char *)d + op->off;
			if (!op->size && op->off > size)
				return NULL;
			/* char comm[16] is most strings of most traces. */
			n = op->size == 16 ? strnlen16(s)
					   : strnlen(s, op->size ? op->size : size - op->off);
		} else {
			/*
			 * tk_event_dyn_loc(), inline (sched_stat_runtime's comm
			 * is a __data_loc on 6.18: a call and a strnlen() call
			 * per record were ~45 instructions).
			 */
			uint32_t word, len;
			uint64_t off;

			if ((uint64_t)op->off + 4 > size)
				return NULL; /* the slow path prints what trace-cmd prints */
			word = (uint32_t)rd_o(d + op->off, 4, swap);
			len = word >> 16;
			off = (word & 0xffff) + (op->rel ? (uint64_t)op->off + op->size : 0);
			if (off + len > size)
				return NULL;
			/* An empty string prints nothing, padding included. */
			if (!len)
				break;
			s = (const char *)d + off;
			n = off + 16 <= size ? strnlen16(s) : 0;
			if (n == 16 || off + 16 > size)
				n = strnlen(s, size - (uint32_t)off);
		}
		if (op->plain && op->size == 16) {
			/*
			 * A name field lies inside the record and has its 16 bytes of
			 * room: copied whole, no branch on its length.
			 */
			memcpy(o, s, 16);
			o += n;
			break;
		}
		if (op->plain) {
			o = put_str(o, s, n);
			break;
		}
		if (op->star && !star_value(set, ev, op, d, size, &w))
			return NULL;
		o = put_str_spec(o, op, w, s, n);
		break;
	}
	case TK_OP_FLAGS:
		o = put_table_value(o, op, op_value_o(set, ev, op, d, size, swap));
		break;
	case TK_OP_COND: {
		/*
		 * sched_switch's "(prev_state & mask) ? __print_flags(...) : \"R\"":
		 * a literal or flags alternative is printed here, any other by
		 * its own op, out of line (it recurses).
		 */
		uint64_t v = op_value_o(set, ev, op, d, size, swap);
		const struct tk_op *k;

		if (op->ftab && v >> op->ftab->shift < TK_FLAGS_TABLE) {
			uint64_t i = v >> op->ftab->shift;

			o = put_str(o, op->ftab->text + op->ftab->off[i], op->ftab->len[i]);
			break;
		}
		k = &op->kids[v ? 0 : 1];

		if (k->kind == TK_OP_LIT)
			o = put_lit(o, k->lit, k->lit_len);
		else if (k->kind == TK_OP_FLAGS)
			o = put_table_value(o, k, op_value_o(set, ev, k, d, size, swap));
		else
			return run_kid(set, ev, k, d, size, o, out, memo);
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
	case TK_OP_SYMBOL:
		o = put_table_value(o, op, op_value_o(set, ev, op, d, size, swap));
		break;
	default:
		return run_rare(set, ev, op, d, size, o);
	}
	return o;
}

static inline __attribute__((always_inline)) char *
run_op(struct tk_event_set *set, const struct tk_event *ev, const struct tk_op *op,
       const uint8_t *d, uint32_t size, char *o, const struct tk_outbuf *out, bool swap,
       struct tk_ksym_memo *memo)
{
	return run_op_as(set, ev, op, d, size, o, out, swap, op->kind, memo);
}

/* One alternative of a string ternary (kept out of line: it recurses). */
static __attribute__((noinline)) char *run_kid(struct tk_event_set *set, const struct tk_event *ev,
					       const struct tk_op *op, const uint8_t *d,
					       uint32_t size, char *o, const struct tk_outbuf *out,
					       struct tk_ksym_memo *memo)
{
	return run_op(set, ev, op, d, size, o, out, set->swap, memo);
}

static __attribute__((noinline)) int run_failed(struct tk_outbuf *out)
{
	if (!run_bad)
		return -ENOTSUP;
	run_bad = false;
	tk_outbuf_write(out, "[truncated record]", 18);
	return -EBADMSG;
}

/*
 * The op loop, once per byte order. Each op's handler ends in its own jump
 * to the next op's (GNU C's computed goto): a record's events come mixed,
 * and one shared dispatch jump, whose target changed with the event, was
 * mispredicted at nearly every op; a jump per handler learns which kind
 * follows which. An op that wants the slow path lets the later ops still
 * run (their text is dropped) in case one of them finds a length the slow
 * path cannot survive.
 */
#define OP_CASE(label, k, swap)                                                                    \
	label:                                                                                     \
	next = run_op_as(set, ev, op, d, size, o, out, swap, k, memo);                             \
	if (__builtin_expect(!next, 0))                                                            \
		failed = true;                                                                     \
	else                                                                                       \
		o = next;                                                                          \
	if (++op == last)                                                                          \
		goto done;                                                                         \
	o = put_lit(o, op->pre, op->pre_len);                                                      \
	goto *at[op->kind]

#define DEFINE_RUN_PROGRAM(name, SWAP)                                                             \
	static __attribute__((noinline, flatten)) int name(                                        \
		struct tk_event_set *set, const struct tk_event *ev, const uint8_t *d,             \
		uint32_t size, struct tk_outbuf *out, struct tk_ksym_memo *memo)                   \
	{                                                                                          \
		static const void *const at[] = {                                                  \
			[TK_OP_LIT] = &&lit,	  [TK_OP_NUM] = &&num,                             \
			[TK_OP_STR] = &&str,	  [TK_OP_DSTR] = &&dstr,                           \
			[TK_OP_FLAGS] = &&flags,  [TK_OP_SYMBOL] = &&symbol,                       \
			[TK_OP_PTR] = &&ptr,	  [TK_OP_FUNC] = &&func,                           \
			[TK_OP_FUNCF] = &&funcf,  [TK_OP_CSTR] = &&cstr,                           \
			[TK_OP_IP4] = &&other,	  [TK_OP_IP6] = &&other,                           \
			[TK_OP_COND] = &&cond,	  [TK_OP_UUID] = &&other,                          \
			[TK_OP_MAC] = &&other,	  [TK_OP_HEX] = &&other,                           \
			[TK_OP_ARRAY] = &&other,  [TK_OP_BITMASK] = &&other,                       \
			[TK_OP_HEXBUF] = &&other, [TK_OP_DEC4] = &&dec4,                           \
			[TK_OP_PRINTK] = &&other, [TK_OP_CALLSITE] = &&other,                      \
			[TK_OP_FUTEX] = &&other,  [TK_OP_HEX8] = &&hex8,                           \
			[TK_OP_DEC8] = &&dec8,	  [TK_OP_NUM1] = &&num1,                           \
			[TK_OP_NUM2] = &&num2,	  [TK_OP_DEC4S] = &&dec4s,                         \
		};                                                                                 \
		char *o = out->buf + out->len, *next = NULL;                                       \
		/* An empty print format compiles to no ops (and no array). */                     \
		const struct tk_op *op = ev->ops, *last = op ? op + ev->nops : op;                 \
		bool failed = false;                                                               \
                                                                                                   \
		if (op == last)                                                                    \
			goto done;                                                                 \
		o = put_lit(o, op->pre, op->pre_len);                                              \
		goto *at[op->kind];                                                                \
		OP_CASE(lit, TK_OP_LIT, SWAP);                                                     \
		OP_CASE(num, TK_OP_NUM, SWAP);                                                     \
		OP_CASE(str, TK_OP_STR, SWAP);                                                     \
		OP_CASE(dstr, TK_OP_DSTR, SWAP);                                                   \
		OP_CASE(flags, TK_OP_FLAGS, SWAP);                                                 \
		OP_CASE(symbol, TK_OP_SYMBOL, SWAP);                                               \
		OP_CASE(ptr, TK_OP_PTR, SWAP);                                                     \
		OP_CASE(func, TK_OP_FUNC, SWAP);                                                   \
		OP_CASE(funcf, TK_OP_FUNCF, SWAP);                                                 \
		OP_CASE(cstr, TK_OP_CSTR, SWAP);                                                   \
		OP_CASE(cond, TK_OP_COND, SWAP);                                                   \
		OP_CASE(dec4, TK_OP_DEC4, SWAP);                                                   \
		OP_CASE(hex8, TK_OP_HEX8, SWAP);                                                   \
		OP_CASE(num1, TK_OP_NUM1, SWAP);                                                   \
		OP_CASE(num2, TK_OP_NUM2, SWAP);                                                   \
		OP_CASE(dec8, TK_OP_DEC8, SWAP);                                                   \
		OP_CASE(dec4s, TK_OP_DEC4S, SWAP);                                                 \
		OP_CASE(other, op->kind, SWAP);                                                    \
	done:                                                                                      \
		if (__builtin_expect(failed, 0))                                                   \
			return run_failed(out);                                                    \
		out->len = (size_t)(o - out->buf);                                                 \
		return 0;                                                                          \
	}

DEFINE_RUN_PROGRAM(run_program_native, false)
DEFINE_RUN_PROGRAM(run_program_swapped, true)

/* A program's record when the buffer must be flushed first, or one for the slow path. */
static __attribute__((noinline)) int run_event_cold(struct tk_event_set *set,
						    const struct tk_event *ev, const uint8_t *d,
						    uint32_t size, struct tk_outbuf *out,
						    struct tk_ksym_memo *memo)
{
	if (ev->kind != TK_EVENT_PROGRAM || size < ev->min_size)
		return -ENOTSUP;
	/* Hex dumps, arrays and masks grow with the record: room for their worst case. */
	if (ensure_room(out, ev->max_static + (uint64_t)size * ev->size_mult + 32))
		return -ENOTSUP;
	if (set->swap)
		return run_program_swapped(set, ev, d, size, out, memo);
	return run_program_native(set, ev, d, size, out, memo);
}

/*
 * flatten (here and on the two op loops): every call is inlined (number
 * writers, symbol lookups' front), which the compiler stops doing on its
 * own once the code exists twice; the out-of-line ops (run_rare, run_kid)
 * and the op loops themselves stay calls. A program's record that fits
 * the buffer as it is (nearly every line) and the sched mirrors' go
 * straight to their printers, tail calls from a function without a frame;
 * a flush, a short record and the slow path's -ENOTSUP take
 * run_event_cold().
 */
static inline __attribute__((always_inline)) int
run_event(struct tk_event_set *set, const struct tk_event *ev, const void *data, uint32_t size,
	  struct tk_outbuf *out, bool learn, struct tk_ksym_memo *memo)
{
	const uint8_t *d = data;

	if (__builtin_expect(ev->kind == TK_EVENT_PROGRAM && size >= ev->min_size, 1) &&
	    __builtin_expect(out->cap - out->len >=
				     ev->max_static + (uint64_t)size * ev->size_mult + 32,
			     1)) {
		if (set->swap)
			return run_program_swapped(set, ev, d, size, out, memo);
		return run_program_native(set, ev, d, size, out, memo);
	}
	if (ev->kind == TK_EVENT_SCHED_SWITCH)
		return run_sched_switch(set, ev, d, size, out, learn);
	if (ev->kind == TK_EVENT_SCHED_WAKEUP)
		return run_sched_wakeup(set, ev, d, size, out, learn);
	return run_event_cold(set, ev, d, size, out, memo);
}

int tk_event_run(struct tk_event_set *set, const struct tk_event *ev, const void *data,
		 uint32_t size, struct tk_outbuf *out)
{
	/* One printer: the set's own memo. */
	return run_event(set, ev, data, size, out, true, NULL);
}

int tk_event_run_shared(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			uint32_t size, struct tk_outbuf *out, struct tk_ksym_memo *memo)
{
	return run_event(set, ev, data, size, out, false, memo);
}

void tk_event_sched_learn(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			  uint32_t size, pthread_mutex_t *lock)
{
	const uint8_t *d = data;

	/*
	 * Too short for the compiled printer: the slow path's order
	 * (tk_event_print_info()); it tells libtraceevent nothing.
	 */
	if (size < ev->min_size) {
		tk_event_sched_register(set, ev, data, size);
		return;
	}
	if (ev->kind == TK_EVENT_SCHED_SWITCH) {
		learn_comm(set, d, ev->f_prev_comm,
			   (int)rd(set, d + ev->f_prev_pid->offset, ev->f_prev_pid->size), lock);
		learn_comm(set, d, ev->f_next_comm,
			   (int)rd(set, d + ev->f_next_pid->offset, ev->f_next_pid->size), lock);
	} else if (ev->kind == TK_EVENT_SCHED_WAKEUP) {
		learn_comm(set, d, ev->f_comm, (int)rd(set, d + ev->f_pid->offset, ev->f_pid->size),
			   lock);
	}
}
