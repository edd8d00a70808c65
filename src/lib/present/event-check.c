// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * event-check: an event format text is shaped as the kernel writes it,
 * before libtraceevent parses it.
 *
 * Format texts come from files (a .dat's event formats, perf.data's
 * TRACING_DATA) and are untrusted. libtraceevent 1.7.1's tep_parse_format()
 * reads out of bounds or dereferences NULL on some malformed texts (the
 * fuzz-event target found such inputs: a field line cut short, a print
 * format whose argument list runs into garbage), and it is not ours to fix.
 * So every text passes this check first, and a text that fails it is an
 * error naming the line, like any other bad input.
 *
 * The shape, as kernels since 2.6.31 write it (tracedat.md 2.7):
 *
 *   name: NAME
 *   ID: NUMBER
 *   format:
 *   <TAB>field:DECLARATION;<TAB>offset:N;<TAB>size:N;[<TAB>signed:N;]
 *   ...                                 (blank lines between field groups)
 *   print fmt: "FORMAT", ARGUMENTS...
 *
 * The check is deliberately about shape, not meaning: the declaration's
 * characters, numbers that fit, and a print format whose string literals
 * are closed and whose brackets balance. What the shape allows,
 * libtraceevent parses or refuses cleanly (the fuzz target keeps checking
 * that); what it means is the compiler's business (event-print.c).
 *
 * Widths from records. A conversion's '*' width or precision is read from
 * the record; libtraceevent's printer pads to whatever it finds (a width
 * of 1.7 billion grows its text buffer 4 KiB at a time: a hang). The
 * compiled printer bounds its own; for an event it could not compile,
 * tk_event_find_stars() pairs the format's conversions with their
 * arguments once, as libtraceevent's parser pairs them, and
 * tk_event_stars_ok() reads those fields from each record before the slow
 * path may print it. A '*' whose argument is not a plain field or a
 * constant cannot be bounded: such an event's records never reach the
 * slow printer.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <stdlib.h>

#include <event-parse.h>

#include "error.h"
#include "event-internal.h"

/* Far above any real format (the largest of this kernel's 2,323: ~6 KiB). */
#define FORMAT_MAX (1u << 20)
#define FIELDS_MAX 4096
#define DECL_MAX   256
/* Records are at most a ring-buffer page (64 KiB pages at most). */
#define FIELD_END_MAX (1u << 20)

struct cursor {
	const char *p, *end;
	unsigned int line;
};

static bool starts(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
		return false;
	c->p += n;
	return true;
}

static void skip_blanks(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

/* A decimal number below @max (at most 10 digits). */
static bool number(struct cursor *c, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && digits < 11) {
		v = v * 10 + (uint64_t)(*c->p - '0');
		c->p++;
		digits++;
	}
	if (out)
		*out = v;
	return digits > 0 && digits <= 10 && v <= max;
}

static bool end_of_line(struct cursor *c)
{
	skip_blanks(c);
	if (c->p == c->end)
		return true;
	if (*c->p != '\n')
		return false;
	c->p++;
	c->line++;
	return true;
}

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '.' || ch == '-';
}

/* "\tfield:DECL;\toffset:N;\tsize:N;[\tsigned:N;]" */
static bool field_line(struct cursor *c)
{
	const char *decl = c->p;
	uint64_t offset, size;
	bool named = false;

	while (c->p < c->end && *c->p != ';' && *c->p != '\n') {
		char ch = *c->p;

		if (ch == '\t' || (unsigned char)ch < 0x20 || (unsigned char)ch > 0x7e)
			return false;
		named |= name_char(ch);
		c->p++;
	}
	if (!named || c->p - decl > DECL_MAX || !starts(c, ";"))
		return false;
	skip_blanks(c);
	if (!starts(c, "offset:") || !number(c, FIELD_END_MAX, &offset) || !starts(c, ";"))
		return false;
	skip_blanks(c);
	if (!starts(c, "size:") || !number(c, FIELD_END_MAX, &size) || !starts(c, ";"))
		return false;
	if (offset + size > FIELD_END_MAX)
		return false;
	/*
	 * A __data_loc/__rel_loc is a 32-bit offset and length: libtraceevent
	 * 1.7.1 takes a 2-byte one as an offset alone and prints "the rest of
	 * the record" from it, a negative length when it lies past the end.
	 */
	if (size != 4 && (memmem(decl, (size_t)(c->p - decl), "__data_loc", 10) ||
			  memmem(decl, (size_t)(c->p - decl), "__rel_loc", 9)))
		return false;
	skip_blanks(c);
	if (starts(c, "signed:") && (!number(c, 1, NULL) || !starts(c, ";")))
		return false;
	return end_of_line(c);
}

/*
 * The print format: a string literal first, then arguments; every literal
 * closed, every bracket matched, nothing but printable text and tabs, on
 * one line, except that a literal may hold a raw newline (ext4's fsmap
 * events have one in their format string). Only blank lines follow.
 */
/* What the last token of a print format's arguments was, for adjacency. */
enum tok { TOK_OP, TOK_WORD, TOK_STRING, TOK_CLOSE };

static bool word_char(char ch)
{
	return name_char(ch) && ch != '-' && ch != '.';
}

/*
 * What may follow '/' or '%' in a print format's arguments. libtraceevent
 * folds an operation of two constants while it parses, and any name that
 * is not a field is a constant to it, worth 0: "R/EC", "x / (0)" divided
 * by zero inside tep_parse_format(). Kernels divide by a number, a
 * sizeof() of a type, or a field (which the printer checks per record,
 * tk_event_stars_ok()); a bracket is taken when a field is in it, which
 * keeps it from folding.
 */
static bool divisor_ok(const char *q, const char *end)
{
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	if (end - q >= 5 && !memcmp(q, "REC->", 5))
		return true;
	if (end - q >= 7 && !memcmp(q, "sizeof", 6)) {
		for (q += 6; q < end && (*q == ' ' || *q == '\t'); q++)
			;
		return q < end && *q == '(' && !(end - q >= 4 && !memcmp(q + 1, "REC", 3));
	}
	if (q < end && *q >= '0' && *q <= '9') {
		bool nonzero = false;

		/* Decimal, octal or hex; a U or L suffix. */
		if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		for (; q < end && isxdigit((unsigned char)*q); q++)
			nonzero |= *q != '0';
		while (q < end && strchr("uUlL", *q))
			q++;
		return nonzero && (q == end || !word_char(*q));
	}
	if (q < end && *q == '(') {
		int depth = 0;

		for (const char *r = q; r < end && *r != '\n'; r++) {
			if (*r == '(')
				depth++;
			else if (*r == ')' && !--depth)
				return false;
			else if (end - r >= 5 && !memcmp(r, "REC->", 5))
				return true;
		}
	}
	return false;
}

static bool print_fmt(struct cursor *c)
{
	char stack[64];
	uint16_t ternaries[65] = {0}; /* '?' waiting for their ':' per depth */
	size_t depth = 0;
	bool first = true;
	enum tok prev = TOK_OP;
	const char *word = NULL; /* the last name or number */
	const char *begin;
	/*
	 * The last token was an operator that needs an operand after it: a
	 * ',', a closing bracket or the end there is refused (libtraceevent
	 * 1.7.1 dereferences NULL on "\"none\"=, REC->n"). Not '*': "(char *)"
	 * closes a cast.
	 */
	bool needs_operand = false;

	skip_blanks(c);
	begin = c->p;
	if (c->p == c->end || *c->p != '"')
		return false;
	while (c->p < c->end && *c->p != '\n') {
		char ch = *c->p++;

		if (ch == '\t' || ch == ' ')
			continue;
		if ((unsigned char)ch < 0x20 || (unsigned char)ch > 0x7e)
			return false;
		if (needs_operand && (ch == ',' || ch == ')' || ch == ']' || ch == '}'))
			return false;
		needs_operand = strchr("+-&|^~!<>=/%?:", ch) != NULL;
		if (ch == '"' || ch == '\'') {
			char quote = ch;

			/*
			 * A literal follows an operator, a bracket or another
			 * literal, never a name or a closing bracket: libtraceevent
			 * 1.7.1 crashes on "REC->f"|"".
			 */
			if (prev == TOK_WORD || prev == TOK_CLOSE)
				return false;
			while (c->p < c->end && *c->p != quote) {
				unsigned char in = (unsigned char)*c->p;

				/*
				 * Control characters are only text to libtraceevent
				 * inside a literal (perf prints them); a byte above
				 * 0x7e is not: 0xff reads as its end of input.
				 */
				if (in == '\n')
					c->line++;
				else if (in == 0 || in > 0x7e)
					return false;
				if (in == '\\' && c->p + 1 < c->end)
					c->p++;
				c->p++;
			}
			if (c->p == c->end)
				return false;
			c->p++;
			first = false;
			prev = TOK_STRING;
		} else if (word_char(ch)) {
			/*
			 * A name or number does not follow a literal, nor another
			 * name outside brackets: two names in a row are a type
			 * ("(unsigned long)x", "sizeof(struct s)"), which only a
			 * bracket holds ("REC->f rint f" crashes libtraceevent).
			 */
			if (prev == TOK_STRING || (prev == TOK_WORD && !depth))
				return false;
			word = c->p - 1;
			while (c->p < c->end && word_char(*c->p))
				c->p++;
			prev = TOK_WORD;
		} else if (ch == '(' || ch == '[' || ch == '{') {
			/*
			 * A brace opens a statement expression, a symbol table
			 * entry or a compound literal: never right after a name
			 * ("REC->f{ 1, "one" }" crashes libtraceevent 1.7.1).
			 */
			if (depth == sizeof(stack) || (ch == '{' && prev == TOK_WORD))
				return false;
			stack[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
			ternaries[depth] = 0;
			prev = TOK_OP;
		} else if (ch == ')' || ch == ']' || ch == '}') {
			if (!depth || stack[--depth] != ch)
				return false;
			prev = TOK_CLOSE;
		} else if (ch == '?') {
			ternaries[depth]++;
			prev = TOK_OP;
		} else if (ch == ':') {
			/* Only a ternary's: "REC->x % d:" made libtraceevent divide by zero. */
			if (!ternaries[depth])
				return false;
			ternaries[depth]--;
			prev = TOK_OP;
		} else if (ch == '-' && c->p < c->end && *c->p == '>') {
			/*
			 * Only REC has members: libtraceevent 1.7.1 dereferences
			 * NULL on "x ? a :C->f".
			 */
			bool rec =
				prev == TOK_WORD && c->p - 1 - word == 3 && !memcmp(word, "REC", 3);

			/* "(REC)->f", as func_repeats writes it. */
			rec |= prev == TOK_CLOSE && c->p - 6 >= begin &&
			       !memcmp(c->p - 6, "(REC)", 5);
			if (!rec)
				return false;
			c->p++;
			prev = TOK_OP;
		} else if ((ch == '/' || ch == '%') && prev != TOK_STRING) {
			if (!divisor_ok(c->p, c->end))
				return false;
			prev = TOK_OP;
		} else if (strchr("+-*&|^~!<>=,", ch) || (ch == ';' && depth) ||
			   (ch == '.' && prev == TOK_WORD)) {
			/*
			 * '.' only as a member of a name ("role.word" in the
			 * kvmmmu formats): libtraceevent crashes on "(x). y".
			 */
			prev = TOK_OP;
		} else {
			/*
			 * No C operator ('$', '@', '#'; ';' only inside a
			 * statement expression's braces): libtraceevent 1.7.1
			 * crashes on "(x)$ y".
			 */
			return false;
		}
	}
	if (first || depth || needs_operand)
		return false;
	/* Nothing follows but blank lines. */
	for (; c->p < c->end; c->p++) {
		if (*c->p != '\n' && *c->p != ' ' && *c->p != '\t')
			return false;
	}
	return true;
}

/*
 * Whether the field lines before @end declare a field @name (@n bytes):
 * the last name of a declaration, before its ';' or its '['.
 */
static bool field_declared(const char *text, const char *end, const char *name, size_t n)
{
	for (const char *p = text; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *decl = eol ? eol : end;
		const char *f = memmem(p, (size_t)(decl - p), "field:", 6);

		if (f) {
			const char *semi = memchr(f, ';', (size_t)(decl - f));
			const char *stop = semi;

			/* "u8 uuid[16];": the name is before the last '['; "char[] name;" ends in
			 * it. */
			while (stop && stop > f && stop[-1] == ' ')
				stop--;
			if (stop && stop > f && stop[-1] == ']')
				stop = memrchr(f, '[', (size_t)(stop - f));
			if (stop && (size_t)(stop - f) > n && !memcmp(stop - n, name, n) &&
			    !word_char(stop[-(long)n - 1]))
				return true;
		}
		p = eol ? eol + 1 : end;
	}
	return false;
}

/*
 * Every REC->NAME of the print format's arguments is a declared field:
 * libtraceevent 1.7.1 dereferences NULL for an unknown one inside
 * __print_symbolic().
 */
static bool fields_known(const char *text, const char *args, const char *end)
{
	const char *fmt_line = args;

	for (const char *p = args; p + 5 < end; p++) {
		size_t n = 0;

		if (*p == '"' || *p == '\'') {
			char quote = *p++;

			while (p < end && *p != quote)
				p += *p == '\\' ? 2 : 1;
			continue;
		}
		if (memcmp(p, "REC->", 5))
			continue;
		p += 5;
		while (p + n < end && word_char(p[n]))
			n++;
		if (!n || !field_declared(text, fmt_line, p, n))
			return false;
	}
	return true;
}

int tk_event_format_check(const char *system, const char *text, size_t len)
{
	struct cursor c = {text, text + len, 1};
	const char *name;
	int fields = 0;

	if (len > FORMAT_MAX)
		return tk_fail(EBADMSG, "event format of system %s: %zu bytes, more than %u",
			       system, len, FORMAT_MAX);
	if (memchr(text, '\0', len))
		return tk_fail(EBADMSG, "event format of system %s: a NUL byte in the text",
			       system);
	if (!starts(&c, "name:"))
		goto bad;
	skip_blanks(&c);
	name = c.p;
	while (c.p < c.end && name_char(*c.p))
		c.p++;
	if (c.p == name || !end_of_line(&c))
		goto bad;
	if (!starts(&c, "ID:"))
		goto bad;
	skip_blanks(&c);
	if (!number(&c, UINT32_MAX, NULL) || !end_of_line(&c))
		goto bad;
	if (!starts(&c, "format:") || !end_of_line(&c))
		goto bad;
	for (;;) {
		skip_blanks(&c);
		if (c.p == c.end)
			goto bad; /* no print fmt line */
		if (*c.p == '\n') {
			c.p++;
			c.line++;
			continue;
		}
		if (starts(&c, "field:")) {
			if (++fields > FIELDS_MAX || !field_line(&c))
				goto bad;
			continue;
		}
		if (starts(&c, "print fmt:")) {
			const char *args = c.p;

			if (print_fmt(&c) && fields_known(text, args, c.end))
				return 0;
		}
		goto bad;
	}
bad:
	return tk_fail(EBADMSG, "event format of system %s: line %u is not as the kernel writes it",
		       system, c.line);
}

/*
 * The largest '*' value the slow path is given: the compiled printer hands
 * widths above 1000 to the slow path and marks those above 64 Ki as
 * truncated records, so the two paths agree.
 */
#define STAR_MAX 65536

static void add_star(struct tk_event *ev, const struct tep_print_arg *arg)
{
	while (arg && arg->type == TEP_PRINT_TYPE)
		arg = arg->typecast.item;
	if (arg && arg->type == TEP_PRINT_ATOM) {
		long v = strtol(arg->atom.atom, NULL, 0);

		if (v < 0 || v > STAR_MAX)
			ev->star_unsafe = true;
	} else if (arg && arg->type == TEP_PRINT_FIELD && arg->field.field &&
		   ev->nstar < sizeof(ev->star_fields) / sizeof(ev->star_fields[0])) {
		ev->star_fields[ev->nstar++] = arg->field.field;
	} else {
		ev->star_unsafe = true;
	}
}

/*
 * The pairing is libtraceevent's, as compile_format() in event-print.c
 * follows it: after '%', only "hlLzZ#-.*" and digits belong to the
 * conversion; d, i, u, x, X, o, s and p (with its suffix) take an
 * argument, a '*' takes one before it, and any other letter takes none.
 */
/*
 * A hex dump's or an array's bytes: where they start and how many. The
 * printer takes the start from a plain field or a __data_loc
 * (libtraceevent reads any other argument there as a field: a type
 * confusion), and the count from a constant, a field or a __data_loc's own
 * length; anything else cannot be bounded.
 */
static void add_len(struct tk_event *ev, const struct tep_print_arg *base,
		    const struct tep_print_arg *arg, uint32_t unit)
{
	const size_t cap = sizeof(ev->len_fields) / sizeof(ev->len_fields[0]);
	const struct tep_format_field *start;
	bool dynamic;

	if (base && base->type == TEP_PRINT_FIELD && base->field.field) {
		start = base->field.field;
		dynamic = false;
	} else if (base && base->type == TEP_PRINT_DYNAMIC_ARRAY && base->dynarray.field) {
		start = base->dynarray.field;
		dynamic = true;
	} else {
		ev->star_unsafe = true;
		return;
	}
	while (arg && arg->type == TEP_PRINT_TYPE)
		arg = arg->typecast.item;
	if (!unit || ev->nlen >= cap) {
		ev->star_unsafe = true;
	} else if (arg && arg->type == TEP_PRINT_ATOM) {
		unsigned long v = strtoul(arg->atom.atom, NULL, 0);

		if (v > STAR_MAX / unit) {
			ev->star_unsafe = true;
			return;
		}
		ev->len_fields[ev->nlen] = NULL;
		ev->len_dynamic[ev->nlen] = false;
		ev->len_const[ev->nlen] = (uint32_t)v;
	} else if (arg && arg->type == TEP_PRINT_FIELD && arg->field.field) {
		ev->len_fields[ev->nlen] = arg->field.field;
		ev->len_dynamic[ev->nlen] = false;
	} else if (arg && arg->type == TEP_PRINT_DYNAMIC_ARRAY_LEN && arg->dynarray.field &&
		   arg->dynarray.field->size == 4) {
		/* A __data_loc's length: the high 16 bits of its word. */
		ev->len_fields[ev->nlen] = arg->dynarray.field;
		ev->len_dynamic[ev->nlen] = true;
	} else {
		ev->star_unsafe = true;
		return;
	}
	ev->len_base[ev->nlen] = start;
	ev->len_base_dynamic[ev->nlen] = dynamic;
	ev->len_unit[ev->nlen++] = unit;
}

/*
 * A divisor: libtraceevent's printer divides without looking, so a field
 * is read from each record first, and a constant must not be 0.
 */
static void add_divisor(struct tk_event *ev, const struct tep_print_arg *arg)
{
	while (arg && arg->type == TEP_PRINT_TYPE)
		arg = arg->typecast.item;
	if (arg && arg->type == TEP_PRINT_ATOM) {
		if (!strtoull(arg->atom.atom, NULL, 0))
			ev->star_unsafe = true;
	} else if (arg && arg->type == TEP_PRINT_FIELD && arg->field.field &&
		   ev->ndiv < sizeof(ev->div_fields) / sizeof(ev->div_fields[0])) {
		ev->div_fields[ev->ndiv++] = arg->field.field;
	} else {
		ev->star_unsafe = true;
	}
}

/* Every hex dump and array of the arguments, wherever a ternary or cast put it. */
static void find_lens(struct tk_event *ev, const struct tep_print_arg *arg, int depth)
{
	if (!arg || depth > 32)
		return;
	switch (arg->type) {
	case TEP_PRINT_HEX:
	case TEP_PRINT_HEX_STR:
		add_len(ev, arg->hex.field, arg->hex.size, 1);
		break;
	case TEP_PRINT_INT_ARRAY: {
		const struct tep_print_arg *el = arg->int_array.el_size;
		unsigned long unit =
			el && el->type == TEP_PRINT_ATOM ? strtoul(el->atom.atom, NULL, 0) : 0;

		if (!unit || unit > 8)
			ev->star_unsafe = true;
		else
			add_len(ev, arg->int_array.field, arg->int_array.count, (uint32_t)unit);
		break;
	}
	case TEP_PRINT_OP:
		if (arg->op.op && (!strcmp(arg->op.op, "/") || !strcmp(arg->op.op, "%")))
			add_divisor(ev, arg->op.right);
		find_lens(ev, arg->op.left, depth + 1);
		find_lens(ev, arg->op.right, depth + 1);
		break;
	case TEP_PRINT_TYPE:
		find_lens(ev, arg->typecast.item, depth + 1);
		break;
	case TEP_PRINT_FLAGS:
		find_lens(ev, arg->flags.field, depth + 1);
		break;
	case TEP_PRINT_SYMBOL:
		find_lens(ev, arg->symbol.field, depth + 1);
		break;
	default:
		break;
	}
}

void tk_event_find_stars(struct tk_event *ev)
{
	const char *p = ev->tev->print_fmt.format;
	const struct tep_print_arg *arg = ev->tev->print_fmt.args;

	ev->nstar = 0;
	ev->nlen = 0;
	ev->ndiv = 0;
	ev->star_unsafe = false;
	/*
	 * A field of size 0 is "the rest of the record" to libtraceevent's
	 * printer, which allocates size - offset bytes for it: a record
	 * shorter than the offset would ask for nearly 4 GiB.
	 */
	ev->has_rest = false;
	for (const struct tep_format_field *f = ev->tev->format.fields; f; f = f->next) {
		if (f->size == 0 && (!ev->has_rest || (uint32_t)f->offset < ev->rest_at)) {
			ev->rest_at = (uint32_t)f->offset;
			ev->has_rest = true;
		}
	}
	for (const struct tep_print_arg *a = arg; a; a = a->next)
		find_lens(ev, a, 0);
	if (!p || !strchr(p, '*'))
		return;
	while (*p) {
		if (*p == '\\' && p[1]) {
			p += 2;
			continue;
		}
		if (*p != '%') {
			p++;
			continue;
		}
		if (p[1] == '%') {
			p += 2;
			continue;
		}
		for (p++; *p && strchr("hlLzZ#-.*0123456789", *p); p++) {
			if (*p != '*')
				continue;
			add_star(ev, arg);
			arg = arg ? arg->next : NULL;
		}
		if (!*p)
			break;
		if (strchr("diuxXos", *p)) {
			arg = arg ? arg->next : NULL;
		} else if (*p == 'p') {
			arg = arg ? arg->next : NULL;
			p += tk_event_pointer_suffix(p + 1);
		}
		p++;
	}
}

bool tk_event_stars_ok(const struct tk_event_set *set, const struct tk_event *ev, const void *data,
		       uint32_t size)
{
	if (ev->star_unsafe || (ev->has_rest && size < ev->rest_at))
		return false;
	for (uint8_t i = 0; i < ev->nstar; i++) {
		const struct tep_format_field *f = ev->star_fields[i];
		int v;

		if (f->size < 1 || f->size > 8 || (uint64_t)f->offset + (uint64_t)f->size > size)
			return false;
		/* libtraceevent passes the width as an int. */
		v = (int)tep_read_number(set->tep, (const uint8_t *)data + f->offset, f->size);
		if (v < 0 || v > STAR_MAX)
			return false;
	}
	for (uint8_t i = 0; i < ev->nlen; i++) {
		const struct tep_format_field *f = ev->len_fields[i];
		const struct tep_format_field *b = ev->len_base[i];
		uint64_t v = ev->len_const[i], start = b->offset;

		if (f) {
			if (f->size < 1 || f->size > 8 ||
			    (uint64_t)f->offset + (uint64_t)f->size > size)
				return false;
			v = tep_read_number(set->tep, (const uint8_t *)data + f->offset, f->size);
			/* A __data_loc's length, zero when it runs past the record (as
			 * libtraceevent reads it). */
			if (ev->len_dynamic[i])
				v = (v & 0xffff) + (v >> 16 & 0xffff) > size ? 0 : v >> 16 & 0xffff;
		}
		if (ev->len_base_dynamic[i]) {
			/* A __data_loc: the low 16 bits of its word are the offset. */
			if (b->size != 4 || (uint64_t)b->offset + 4 > size)
				return false;
			start = tep_read_number(set->tep, (const uint8_t *)data + b->offset, 4) &
				0xffff;
			if (start > size)
				start = 0; /* libtraceevent's reading of an offset past the record
					    */
			if (b->flags & TEP_FIELD_IS_RELATIVE)
				start += (uint64_t)b->offset + 4;
		}
		/* The bytes the printer reads must lie in the record. */
		if (v > size / ev->len_unit[i] || start + v * ev->len_unit[i] > size)
			return false;
	}
	for (uint8_t i = 0; i < ev->ndiv; i++) {
		const struct tep_format_field *f = ev->div_fields[i];

		if (f->size < 1 || f->size > 8 || (uint64_t)f->offset + (uint64_t)f->size > size ||
		    !tep_read_number(set->tep, (const uint8_t *)data + f->offset, f->size))
			return false;
	}
	return true;
}

/*
 * Filters (report -F "EVENT[,EVENT]:FILTER"). libtraceevent 1.7.1's
 * tep_filter_add_filter_str() crashes (trace-cmd 3.1.6 with it) on texts a
 * user types by mistake, each found by fuzz/fuzz-filter.c: an operator
 * without its operand ("prev_pid>"), a bracketed group compared
 * ("(vec & 3) == 1"), a lone field or a field as the value in a condition
 * joined by || ("a > 5 || b", "a > 5 || b == c"), a chain ("a == b == 1"),
 * a byte above 0x7f (a UTF-8 command name in a string). So a filter must
 * have the shape libtraceevent handles, checked first: ASCII; conditions
 * "[!] FIELD OP VALUE" (OP a comparison, glob, regex or arithmetic
 * operator, VALUE a number, optionally negated or complemented, or a
 * quoted string) or "[!] ( FILTER )", joined by && or ||. Each shape
 * refused here libtraceevent refuses as well, or crashes on: nothing that
 * printed is refused, except "a & b" of two fields, which it evaluates.
 * What this lets through, libtraceevent parses or refuses with a message.
 */
static const char *const filter_ops[] = {
	"&&", "||", "==", "!=", "<=", ">=", "=~", "!~", "<<", ">>", "<",
	">",  "~",  "+",  "-",	"*",  "/",  "%",  "&",	"|",  "^",
};

/* The operators of a condition: comparisons, globs and regexes, arithmetic. */
static size_t condition_op(const char *p)
{
	for (size_t i = 0; i < sizeof(filter_ops) / sizeof(filter_ops[0]); i++) {
		size_t len = strlen(filter_ops[i]);

		if (!strncmp(p, filter_ops[i], len))
			return strcmp(filter_ops[i], "&&") && strcmp(filter_ops[i], "||") ? len : 0;
	}
	return 0;
}

int tk_event_filter_check(const char *spec)
{
	/* Where in a condition "[!...] FIELD OP VALUE" or "[!...] ( FILTER )" the text is. */
	enum { AT_START, AT_OP, AT_VALUE, AT_END } at = AT_START;
	const char *p = strchr(spec, ':');
	int depth = 0;

	if (!p)
		return 0; /* event names only */
	if (p == spec)
		return tk_fail(EINVAL, "-F '%s': no event before ':'", spec);
	/* libtraceevent's tokenizer follows a NULL pointer on a byte above 0x7f. */
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c >= 0x80)
			return tk_fail(
				EINVAL,
				"-F '%s': the filter must be ASCII (byte 0x%02x at offset %zu)",
				spec, (unsigned char)*c, (size_t)(c - spec));
	for (p++; *p;) {
		size_t n;

		if (*p == ' ' || *p == '\t') {
			p++;
			continue;
		}
		switch (at) {
		case AT_START:
			if (*p == '!' || *p == '(') {
				depth += *p == '(';
				p++;
			} else if (isalpha((unsigned char)*p) || *p == '_') {
				while (word_char(*p) || *p == '.')
					p++;
				at = AT_OP;
			} else {
				return tk_fail(EINVAL,
					       "-F '%s': a condition starts with a field, at '%s'",
					       spec, p);
			}
			break;
		case AT_OP:
			n = condition_op(p);
			if (!n)
				return tk_fail(
					EINVAL,
					"-F '%s': a field alone is not a condition; an operator "
					"is due at '%s'",
					spec, p);
			p += n;
			at = AT_VALUE;
			break;
		case AT_VALUE:
			if (*p == '-' || *p == '~')
				p++; /* a negative or complemented number */
			if (isdigit((unsigned char)*p)) {
				while (word_char(*p) || *p == '.')
					p++;
			} else if (*p == '"' || *p == '\'') {
				char quote = *p++;

				while (*p && *p != quote)
					p += p[0] == '\\' && p[1] ? 2 : 1;
				if (!*p)
					return tk_fail(EINVAL, "-F '%s': a string is not closed",
						       spec);
				p++;
			} else {
				return tk_fail(
					EINVAL,
					"-F '%s': a number or a quoted string is due at '%s'", spec,
					p);
			}
			at = AT_END;
			break;
		case AT_END:
			if (*p == ')') {
				if (!depth--)
					return tk_fail(EINVAL, "-F '%s': ')' without '('", spec);
				p++;
			} else if (!strncmp(p, "&&", 2) || !strncmp(p, "||", 2)) {
				p += 2;
				at = AT_START;
			} else {
				return tk_fail(
					EINVAL,
					"-F '%s': only && or || can follow a condition, at '%s'",
					spec, p);
			}
			break;
		}
	}
	if (at != AT_END)
		return tk_fail(EINVAL, "-F '%s': the filter ends where a %s is due", spec,
			       at == AT_VALUE ? "value"
			       : at == AT_OP  ? "operator"
					      : "condition");
	if (depth)
		return tk_fail(EINVAL, "-F '%s': '(' without ')'", spec);
	return 0;
}
