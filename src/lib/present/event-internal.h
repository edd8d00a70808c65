/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Private to the event module (event.c, event-print.c) and its tests.
 */
#ifndef TRACEKIT_EVENT_INTERNAL_H
#define TRACEKIT_EVENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <tracekit/event.h>

/* Zeroed room behind a slow-path record copy: 16-bit offset + 16-bit length. */
#define TK_EVENT_SCRATCH (128u * 1024u)

enum tk_op_kind {
	TK_OP_LIT,
	TK_OP_NUM,  /* fixed numeric field */
	TK_OP_STR,  /* char array field */
	TK_OP_DSTR, /* __data_loc / __rel_loc string */
	TK_OP_FLAGS,
	TK_OP_SYMBOL,
	TK_OP_PTR,	/* %p: "0x..." or "(nil)" */
	TK_OP_FUNC,	/* %ps / %pS: kallsyms name (+0xoff), else 0x... */
	TK_OP_FUNCF,	/* plugin form "name/0x(addr - val)", else "0x%08llx" */
	TK_OP_CSTR,	/* cond ? "a" : "b" for %s */
	TK_OP_IP4,	/* %pI4 / %pi4 (zero: "%03d" parts) of a 4-byte field */
	TK_OP_IP6,	/* %pI6 / %pi6 (zero: no colons) / %pI6c (offset) of a 16-byte field */
	TK_OP_COND,	/* %s of cond ? x : y: runs kids[0] or kids[1] (one op each) */
	TK_OP_UUID,	/* %pU[bBlL] of a 16-byte field: left: GUID order, zero: upper case */
	TK_OP_MAC,	/* %pM %pm [RF] of a 6-byte field: lit[0] separator, left: reversed */
	TK_OP_HEX,	/* __print_hex (delim ' ') / __print_hex_str: expr counts the bytes */
	TK_OP_ARRAY,	/* __print_array: expr counts elements of elsize bytes, "%u" each */
	TK_OP_BITMASK,	/* __get_bitmask(): hex words, a comma every 4 bytes */
	TK_OP_HEXBUF,	/* %*ph[CDN]: up to lenexpr (default 1) bytes of a dynamic array */
	TK_OP_DEC4,	/* NUM of a 4-byte field, plain %d / %u: made by the last compile pass */
	TK_OP_PRINTK,	/* %s of a long-sized field: its printk format's text, else "%llx" */
	TK_OP_CALLSITE, /* the kmem plugin's "(func+0xoff) " of call_site, or nothing */
	TK_OP_FUTEX,	/* the futex plugin's text: expr is the first of six fields */
	TK_OP_HEX8, /* NUM of an 8-byte field, %lx or "%0Nlx" (N <= 16): the last compile pass */
	TK_OP_DEC8, /* NUM of an 8-byte field, plain %ld / %lu: the last compile pass */
	TK_OP_NUM1, /* NUM of a 1-byte field, plain %d / %u / %x or "%0Nx": the last pass */
	TK_OP_NUM2, /* the same of a 2-byte field */
	/*
	 * NUM of a 4-byte field shifted and/or masked (MAJOR(dev), MINOR(dev)),
	 * or zero-padded to 4 digits or fewer ("%03d"), %d / %u: the last pass
	 */
	TK_OP_DEC4S,
};

/*
 * A compiled numeric expression node (libtraceevent's eval_num_arg()
 * semantics: everything unsigned 64-bit, fields read without sign
 * extension, casts are masks).
 */
enum tk_expr_kind {
	TK_EXPR_CONST,
	TK_EXPR_FIELD,
	TK_EXPR_MASK,	/* a: child, val: mask */
	TK_EXPR_BIN,	/* op: operator character(s), a, b */
	TK_EXPR_COND,	/* a ? b : c */
	TK_EXPR_DYNLEN, /* __get_dynamic_array_len(): off, size: the field; val: 1 if rel */
	TK_EXPR_KSYM,	/* a name (jiffies, vmemmap_base): val its kallsyms address or 0;
			 * off: the name's offset in tk_event.atom_names */
};

struct tk_expr {
	uint8_t kind;
	char op[3];
	uint32_t off, size;
	uint64_t val;
	int32_t a, b, c;
};

/* How a number is formatted: hand-made fast forms or snprintf(fmt). */
enum tk_num_form {
	TK_NUM_PRINTF,
	TK_NUM_DEC,  /* %d %i: signed */
	TK_NUM_UDEC, /* %u */
	TK_NUM_HEX,  /* %x */
	TK_NUM_AHEX, /* %#x: "0x" and the digits, or "0" */
	TK_NUM_OCT,  /* %o */
};

struct tk_sym {
	uint64_t value;
	const char *str; /* borrowed from tep's argument tree */
	uint32_t len;
};

#define TK_FLAGS_TABLE 256

/*
 * A FLAGS or SYMBOL op's text per value v with v >> shift below TK_FLAGS_TABLE
 * (the value's bits below shift are the same in every record): text +
 * off[i], len[i] bytes for i = v >> shift.
 */
struct tk_flags_table {
	uint16_t off[TK_FLAGS_TABLE];
	uint8_t len[TK_FLAGS_TABLE];
	uint8_t shift;
	char text[];
};

struct tk_op {
	enum tk_op_kind kind;
	enum tk_num_form form;
	int ls;		    /* length modifier: -2 hh, -1 h, 0, 1 l, 2 ll */
	uint32_t off, size; /* the field */
	bool rel;	    /* __rel_loc */
	bool plain;	    /* %s without width/flags */
	char *lit;	    /* TK_OP_LIT text (owned) */
	uint32_t lit_len;
	char fmt[40];	     /* rebuilt printf format for TK_NUM_PRINTF / strings */
	struct tk_sym *syms; /* FLAGS / SYMBOL table (owned array) */
	uint32_t nsyms;
	const char *delim; /* FLAGS delimiter (borrowed) */
	uint32_t delim_len;
	uint16_t width;	 /* NUM: hand-padded width ("%03d", "%-5u") */
	bool left, zero; /* NUM: '-' and '0' flags */
	int32_t expr;	 /* NUM/FLAGS/SYMBOL/PTR/FUNC/CSTR value; -1: the field */
	bool offset;	 /* FUNC: %pS prints +0xoff */
	const char *alt; /* CSTR: the false text (in lit's buffer), lit: the true one */
	uint32_t alt_len;
	/*
	 * Filled by the last compile pass: the literal before this op (owned,
	 * padded as lit is), so that one dispatch prints "text%d"; and, when
	 * the value is a plain field (or a field shifted right by a constant,
	 * either ANDed with a constant), its
	 * size (1/2/4/8) at off, read without the expression walk (0: evaluate
	 * expr). bits: the cast of ls.
	 */
	char *pre;
	uint32_t pre_len;
	uint32_t load_off;
	uint64_t load_mask; /* the load is ANDed with it ("REC->f & MASK"); else all ones */
	uint64_t load_or;   /* then ORed with it ("(REC->f & MASK) | BITS"); else 0 */
	uint8_t load_shift; /* the load is shifted right by it first ("REC->dev >> 20") */
	uint8_t load;
	uint8_t bits;
	/*
	 * '*' in the conversion: the expression whose value (an int) is the
	 * width or precision (-1: none). HEX/ARRAY/HEXBUF/BITMASK: the data
	 * is a dynamic array (dyn) at off/size, else a fixed field; elsize:
	 * ARRAY's element size. COND: the two alternatives (owned).
	 */
	int32_t lenexpr;
	bool dyn;
	uint8_t elsize;
	struct tk_op *kids;
	/* STR/DSTR with a spec: padded by hand ('-', width, precision). */
	int32_t prec; /* -1: none */
	uint8_t star; /* lenexpr is 1: the width, 2: the precision */
	/*
	 * FLAGS, SYMBOL: the texts of the values below TK_FLAGS_TABLE (or
	 * NULL); COND of a flags value or a literal: the text of either.
	 */
	struct tk_flags_table *ftab;
	/*
	 * A value linear in one field, with load 0: "((FIELD >> load_shift) &
	 * load_mask) * lin_mul + lin_add", plus the address of the name of
	 * expression lin_ksym unless -1 (read per record: the kallsyms may
	 * change it). mm_filemap's "index << 12" and "((last_index + 1) <<
	 * 12) - 1", kmem's "vmemmap_base + pfn". lin_load: the field's size,
	 * 0 when the value is not such. lin_test (with lin_load 0): the same
	 * form, of a field of this size, but when the field read whole equals
	 * lin_skip the value is lin_else (kmem's "REC->pfn != -1UL ?
	 * vmemmap_base + REC->pfn : 0"); a test of its own, so that the plain
	 * linear form has none.
	 */
	uint64_t lin_mul, lin_add;
	int32_t lin_ksym;
	uint8_t lin_load;
	uint8_t lin_test;
	uint64_t lin_skip, lin_else;
	/*
	 * FLAGS: one past the last entry of syms whose value is negative (0:
	 * none). Past it, a value whose bits are all printed prints nothing
	 * more, so the loop stops there (kmem's 36 gfp names).
	 */
	uint32_t neg_end;
};

/* One kallsyms entry: the text lives in tk_event_set.ksym_text. */
struct tk_ksym {
	uint64_t addr;
	uint32_t name_off;
	uint32_t name_len;
};

/*
 * A memo of tk_event_ksym_find() for one address: the entry it gave, in
 * whichever table holds it (entries never move or change while the set's
 * kallsyms stay), &tk_ksym_none for no symbol, NULL for an unused slot.
 */
struct tk_ksym_memo {
	uint64_t addr;
	const struct tk_ksym *k;
};

/* A memo's answer "no symbol". */
extern const struct tk_ksym tk_ksym_none;

#define TK_KSYM_MEMO 4096u /* direct-mapped slots (power of 2) */

enum tk_event_kind {
	TK_EVENT_SLOW,	       /* libtraceevent prints it */
	TK_EVENT_PROGRAM,      /* compiled print format */
	TK_EVENT_SCHED_SWITCH, /* mirror of the sched_switch plugin */
	TK_EVENT_SCHED_WAKEUP, /* mirror of the sched_wakeup plugin */
};

struct tk_event {
	struct tep_event *tev;
	int id;
	const char *name;
	const char *system;
	size_t name_len;
	struct tk_event_field *fields;
	size_t nfields;
	enum tk_event_kind kind;
	struct tk_op *ops;
	size_t nops;
	struct tk_expr *exprs;
	size_t nexprs;
	uint64_t fallbacks;   /* records printed by libtraceevent */
	char col[64];	      /* "name: " padded to 22 columns, when it fits */
	uint8_t col_len;      /* 0: name too long for col */
	uint64_t max_static;  /* worst-case text of the program, record aside */
	uint32_t min_size;    /* bytes a record needs for the fixed fields */
	uint8_t size_mult;    /* worst text per record byte (hex, arrays, masks) */
	const char *why_slow; /* what kept the print format from compiling (static text) */
	/*
	 * The names of TK_EXPR_KSYM nodes, each NUL-ended: their addresses
	 * are looked up again when the set's kallsyms change.
	 */
	char *atom_names;
	bool has_printk; /* a TK_OP_PRINTK: compiled again when printk formats come */
	/*
	 * The print format's '*' widths and precisions, for the slow path to
	 * bound (event-check.c): the fields they read (at most 8), or
	 * star_unsafe when one is anything else and no record may reach
	 * libtraceevent's printer.
	 */
	const struct tep_format_field *star_fields[8];
	uint8_t nstar;
	bool star_unsafe;
	/*
	 * Hex dumps and arrays (__print_hex, __print_array): where the bytes
	 * start (a fixed field, or the __data_loc field whose offset the
	 * record holds), their count (a field of the record, or len_const
	 * when len_fields is NULL) and the bytes per unit.
	 */
	const struct tep_format_field *len_base[8];
	bool len_base_dynamic[8];
	const struct tep_format_field *len_fields[8];
	bool len_dynamic[8]; /* len_fields is a __data_loc: its length */
	uint32_t len_const[8];
	uint32_t len_unit[8];
	uint8_t nlen;
	/* The lowest offset of a 0-sized field ("the rest of the record"), 0: none. */
	uint32_t rest_at;
	bool has_rest;
	/* Fields the print format divides by: a record where one is 0 is not printed. */
	const struct tep_format_field *div_fields[8];
	uint8_t ndiv;
	/* sched plugin mirrors */
	const struct tk_event_field *f_pid, *f_comm, *f_prio, *f_success, *f_target;
	const struct tk_event_field *f_prev_pid, *f_prev_comm, *f_prev_prio, *f_prev_state;
	const struct tk_event_field *f_next_pid, *f_next_comm, *f_next_prio;
	/* The pids whose names a sched record registers (0: none, or an odd layout). */
	uint8_t nlearn;
	uint32_t learn_pid[2];
	/*
	 * The sched mirrors' fields in the layout every kernel writes (4-byte
	 * pids, prios, success and target_cpu, 16-byte comms) and in the
	 * host's little-endian order: their offsets, in the order event-print.c
	 * names them (SCHED_*), read with no test of size or byte order.
	 * false: the mirrors read through the f_* fields.
	 */
	bool sched_fixed;
	uint32_t sched_off[7];
};

/*
 * The pid -> command name table, an exact model of libtraceevent 1.7's
 * (see "Command names" at the top of event.c for why every quirk matters).
 */
struct tk_comm_ent {
	int pid;
	uint32_t seq; /* list position, the sort's tie-break (stability) */
	char *comm;   /* in the table's name arena; never freed or changed before the set is */
};

struct tk_comm_cache {
	int pid;
	uint32_t gen; /* valid while equal to tk_comm_table.gen */
	const char *comm;
};

#define TK_COMM_CACHE 1024u /* direct-mapped lookup cache slots (power of 2) */

/* A chunk of command names, each NUL-terminated. */
struct tk_comm_arena {
	struct tk_comm_arena *next;
	size_t used, cap;
	char data[];
};

#define TK_COMM_ARENA (32u << 10) /* bytes of names a chunk holds */

struct tk_comm_table {
	struct tk_comm_ent *ents; /* unsorted: registration order; sorted: the array */
	uint32_t count, cap;
	bool sorted; /* libtraceevent built its array (first pid != 0 lookup) */
	/*
	 * Bumped whenever the sorted array's layout changes; 0 until the
	 * first sort and never again after it (report.c's name memo relies
	 * on that).
	 */
	uint32_t gen;
	/*
	 * libtraceevent's copy of the table is built only when something of
	 * libtraceevent's may read it (tk_event_comm_tep()); until then no
	 * name is registered there.
	 */
	bool tep_told;
	/*
	 * Saved cmdlines not read yet (tk_event_set_add_cmdlines_source()):
	 * asked for and registered, before anything else, by the first call
	 * that reads or changes the table other than pid 0's lookup
	 * (comm_settle()).
	 */
	int (*pending)(void *arg, const char **text, size_t *len);
	void *pending_arg;
	struct tk_comm_arena *arena; /* the names, newest chunk first */
	struct tk_comm_cache cache[TK_COMM_CACHE];
};

/*
 * tk_event_set_add_cmdlines_source() - tk_event_set_add_cmdlines() of the
 * text @get hands out, asked for when the table is first needed: a file
 * whose records all come from pid 0 (an idle system's power events) never
 * reads its saved cmdlines. @get is called once, at most, where the
 * table's callers hold their lock; its text need last only during the
 * call. A failing @get, or running out of memory then, keeps the names
 * registered so far, as a registration failing while printing does.
 * Return: 0.
 */
int tk_event_set_add_cmdlines_source(struct tk_event_set *set,
				     int (*get)(void *arg, const char **text, size_t *len),
				     void *arg);

/*
 * tk_event_set_plugins_on_demand() - load libtraceevent's plugins only
 * when a format about to be parsed may be one of theirs: its event name or
 * a function its print format calls is a word some plugin file holds
 * (read, not loaded, the first time a format is parsed). Formats are
 * parsed by tk_event_set_add_format() alone, under the lock printers take
 * for libtraceevent when threads print. Return: 0.
 */
int tk_event_set_plugins_on_demand(struct tk_event_set *set);

/*
 * tk_event_comm_tep() - tell libtraceevent every name registered so far, in
 * the phase our table is in, and every later one as it comes: called before
 * anything of libtraceevent's that reads its names runs (its printer and
 * plugins, its filters). Under the same lock as registrations when threads
 * print.
 */
void tk_event_comm_tep(struct tk_event_set *set);

/*
 * Whether registering @pid's name would change nothing: once the table is
 * sorted, pid 0 is dropped and a pid it knows is kept (tk_event_comm_add()),
 * and a valid cache slot says it knows the pid without a search.
 */
static inline bool tk_comm_settled(const struct tk_comm_table *t, int pid)
{
	const struct tk_comm_cache *c = &t->cache[(uint32_t)pid & (TK_COMM_CACHE - 1)];

	return t->sorted && (!pid || (c->gen == t->gen && c->pid == pid && c->comm));
}

/* A printk format as libtraceevent keeps it (quotes and a final "\n" stripped). */
struct tk_printk {
	uint64_t addr;
	char *text;
	uint32_t len;
};

struct tk_event_set {
	struct tep_handle *tep;
	struct tep_plugin_list *plugins;
	/*
	 * Plugins on demand (tk_event_set_plugins_on_demand()): not loaded
	 * yet, and the words the plugin files hold (each NUL-terminated
	 * identifier run of every file, NUL after each); words_state 0: not
	 * read yet, 1: read, -1: a file could not be read (load them).
	 */
	bool plugins_deferred;
	int8_t plugin_words_state;
	char *plugin_words;
	size_t plugin_words_len, plugin_words_cap;
	uint8_t long_size;
	bool big_endian;
	bool swap;		  /* record byte order differs from ours */
	struct tk_event **events; /* in the order added */
	size_t count, cap;
	struct tk_event **by_id;
	size_t by_id_len;
	bool have_common;
	uint32_t type_off, type_size, pid_off, pid_size;
	uint32_t flags_off, flags_size, pc_off, pc_size;
	/* Behind a pointer: a lookup through a const set may build the array. */
	struct tk_comm_table *comms;
	uint8_t *scratch;
	size_t scratch_size;
	size_t scratch_dirty;
	struct trace_seq seq;
	bool seq_init;
	/* kallsyms: kept as text, parsed when first needed (tep and ours) */
	char *ksym_text; /* the kallsyms text: ours, or borrowed (ksym_owned false) */
	size_t ksym_len;
	bool ksym_owned;
	bool ksym_tep_loaded;
	bool ksym_built; /* read with acquire: printers on several threads build once */
	/*
	 * A source of the text, asked once, when something first needs it
	 * (tk_event_set_add_kallsyms_source()); pending is read with acquire.
	 */
	int (*ksym_source)(void *arg, const char **text, size_t *len);
	void *ksym_source_arg;
	bool ksym_pending;
	pthread_mutex_t ksym_lock;
	struct tk_ksym *ksyms;
	size_t nksyms;
	/*
	 * The text checked for the kernel's layout in address order, and no
	 * table yet (ksym_lazy, read with acquire; cleared when ksyms is
	 * published): lookups search the text under ksym_lock and keep their
	 * answers in ksym_lazy_ents (at most KSYM_LAZY_MAX, never moved).
	 */
	bool ksym_lazy;
	struct tk_ksym *ksym_lazy_ents;
	size_t nksym_lazy;
	uint32_t ksym_lazy_asked;	/* lookups the text answered */
	struct tk_ksym_memo *ksym_memo; /* NULL until built (or when out of memory) */
	char *ksym_absent; /* the last name a scan found the unbuilt text lacks (ksym_lock) */
	/*
	 * The kernel image's lines only (tk_event_set_add_kallsyms_image()):
	 * ksym_text lies in a reservation of ksym_region_len bytes at
	 * ksym_region, ksym_len covers the rest of it (names are read 32
	 * bytes at a time), ksyms is parsed from the ksym_img_len bytes of
	 * image lines, and a lookup the image cannot answer as the whole text
	 * would reads ksym_full_path and publishes its table (ksym_full_built,
	 * release/acquire). The text kept at ksym_full_off is the whole, or,
	 * with ksym_full_split, what follows the image's lines (which it
	 * begins with); ksym_full_len counts the whole either way.
	 */
	bool ksym_partial;
	bool ksym_full_built;
	bool ksym_img_whole;  /* the image's lines parsed to their end */
	bool ksym_full_split; /* the whole text is the image's lines, then ksym_full_off's */
	void *ksym_region;
	size_t ksym_region_len;
	size_t ksym_img_len;
	size_t ksym_full_off, ksym_full_len;
	char *ksym_full_path;
	/*
	 * Where the image's table is kept between reports, and the key of
	 * the copy it was parsed from (tk_event_set_kallsyms_table()); ksyms
	 * then may be that file's table, read whole.
	 */
	char *ksym_tab_path;
	uint64_t ksym_tab_key;
	struct tk_ksym *ksym_full;
	size_t nksym_full;
	/* printk formats, sorted by address, for TK_OP_PRINTK; the longest text */
	struct tk_printk *printks;
	size_t nprintks, printk_cap;
	uint32_t printk_max;
};

/*
 * Decimal and hex text without a divide per digit: decimals below 10^16
 * in groups of four or eight digits made in a word (tk_dec8_word()), wider
 * ones with the length first (from the bit length and a power table), then
 * two digits per step from the back; hex 16 digits at once
 * (tk_put_hex_n()). Both return the end of the digits; tk_put_hex() may
 * write up to 16 bytes from @o, tk_put_u64() up to 4, whatever the length.
 */
extern const char tk_dec_pairs[201];
extern const char tk_hex_pairs[513];
extern const uint64_t tk_pow10[20];

static inline unsigned int tk_dec_len(uint64_t v)
{
	unsigned int t = ((64u - (unsigned int)__builtin_clzll(v | 1)) * 1233u) >> 12;

	t = t + 1 - (v < tk_pow10[t]);
	return t ? t : 1;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * @x below 10^8 as exactly eight digits in a word, the first in its low
 * byte, without a divide: both halves of four digits split into pairs,
 * then the pairs into digits, each step one multiply for all lanes.
 */
static inline uint64_t tk_dec8_word(uint32_t x)
{
	uint64_t m = x / 10000u | (uint64_t)(x % 10000u) << 32;
	uint64_t h = (m * 10486u) >> 20 & 0x0000007f0000007full; /* each lane / 100 */
	uint64_t p = h | (m - h * 100u) << 16;			 /* four lanes of two digits */
	uint64_t t = (p * 103u) >> 10 & 0x000f000f000f000full;	 /* each lane / 10 */

	return (t | (p - t * 10u) << 8) + 0x3030303030303030ull;
}

/*
 * Below 10^4 (pids, prios, cpus: most numbers of most lines): the four
 * digit places at once, shifted so the first significant one leads,
 * stored as one word: no branch on the length, which changes from number
 * to number. Writes 4 bytes: callers have the room.
 */
static inline char *tk_put_dec4(char *o, uint32_t x)
{
	uint32_t len = 1u + (x >= 10u) + (x >= 100u) + (x >= 1000u);
	uint16_t hi, lo;
	uint32_t word;

	__builtin_memcpy(&hi, tk_dec_pairs + 2 * (x / 100u), 2);
	__builtin_memcpy(&lo, tk_dec_pairs + 2 * (x % 100u), 2);
	word = ((uint32_t)hi | (uint32_t)lo << 16) >> (8 * (4 - len));
	__builtin_memcpy(o, &word, 4);
	return o + len;
}

/*
 * 10^4 to 10^8 (real pids are five digits on a machine that has run a
 * while, sched_stat_runtime's nanoseconds six or seven): the high group
 * as above, the low four digits as one word. Writes nothing past the end.
 */
static inline char *tk_put_dec8(char *o, uint32_t x)
{
	uint32_t l = x % 10000u;
	uint16_t a, b;
	uint32_t word;

	/* tk_put_dec4()'s 4 bytes end inside the low group written over them. */
	o = tk_put_dec4(o, x / 10000u);
	__builtin_memcpy(&a, tk_dec_pairs + 2 * (l / 100u), 2);
	__builtin_memcpy(&b, tk_dec_pairs + 2 * (l % 100u), 2);
	word = (uint32_t)a | (uint32_t)b << 16;
	__builtin_memcpy(o, &word, 4);
	return o + 4;
}
#endif

static inline char *tk_put_u64(char *o, uint64_t v)
{
	char *e, *p;
	uint32_t w;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (v < 10000u)
		return tk_put_dec4(o, (uint32_t)v);
	if (v < 100000000u)
		return tk_put_dec8(o, (uint32_t)v);
	/*
	 * Below 10^16 (nanosecond times, 32-bit all-ones): the high group as
	 * above, then the low eight digits as one word (one divide in all).
	 */
	if (v < 10000000000000000ull) {
		uint64_t q = v / 100000000u, word = tk_dec8_word((uint32_t)(v - q * 100000000u));

		o = q < 10000u ? tk_put_dec4(o, (uint32_t)q) : tk_put_dec8(o, (uint32_t)q);
		__builtin_memcpy(o, &word, 8);
		return o + 8;
	}
#endif
	e = o + tk_dec_len(v);
	p = e;

	/*
	 * Wide values (nanosecond times, pointers) lose eight digits per
	 * 64-bit divide; the digits themselves come from 32-bit arithmetic,
	 * whose divides by 100 are cheaper multiplies than 64-bit ones.
	 */
	while (v > UINT32_MAX) {
		uint64_t q = v / 100000000u;
		uint32_t lo = (uint32_t)(v - q * 100000000u);

		p -= 8;
		__builtin_memcpy(p + 6, tk_dec_pairs + 2 * (lo % 100), 2);
		lo /= 100;
		__builtin_memcpy(p + 4, tk_dec_pairs + 2 * (lo % 100), 2);
		lo /= 100;
		__builtin_memcpy(p + 2, tk_dec_pairs + 2 * (lo % 100), 2);
		__builtin_memcpy(p, tk_dec_pairs + 2 * (lo / 100), 2);
		v = q;
	}
	w = (uint32_t)v;
	while (w >= 100) {
		p -= 2;
		__builtin_memcpy(p, tk_dec_pairs + 2 * (w % 100), 2);
		w /= 100;
	}
	if (w >= 10)
		__builtin_memcpy(p - 2, tk_dec_pairs + 2 * w, 2);
	else
		p[-1] = (char)('0' + w);
	return e;
}

/*
 * The last @n (1 to 16) of the 16 hex digits of @v, zeros leading. With
 * SSE2 all 16 are made at once (each nibble spread to a byte, then '0' or
 * 'a' - 10 added by a compare), and the @n wanted are shifted into place
 * in two words: ~20 instructions for a kernel pointer, where a digit pair
 * per step took ~45. May write up to 16 bytes from @o whatever @n.
 */
static inline char *tk_put_hex_n(char *o, uint64_t v, unsigned int n)
{
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const __m128i m = _mm_set1_epi8(0x0f);
	__m128i x = _mm_cvtsi64_si128((long long)__builtin_bswap64(v));
	__m128i d = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m), _mm_and_si128(x, m));
	__m128i letter =
		_mm_and_si128(_mm_cmpgt_epi8(d, _mm_set1_epi8(9)), _mm_set1_epi8('a' - '0' - 10));
	__m128i a = _mm_add_epi8(_mm_add_epi8(d, _mm_set1_epi8('0')), letter);
	/* hi: the first 8 digits (the first in its low byte), lo: the last 8. */
	uint64_t hi = (uint64_t)_mm_cvtsi128_si64(a);
	uint64_t lo = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a));

	if (n > 8) {
		unsigned int k = 8 * (16 - n);
		uint64_t w = k ? hi >> k | lo << (64 - k) : hi;

		__builtin_memcpy(o, &w, 8);
		lo >>= k;
		__builtin_memcpy(o + 8, &lo, 8);
	} else {
		lo >>= 8 * (8 - n);
		__builtin_memcpy(o, &lo, 8);
	}
	return o + n;
#else
	char *e = o + n, *p = e;

	for (; n >= 2; n -= 2) {
		p -= 2;
		__builtin_memcpy(p, tk_hex_pairs + 2 * (v & 0xff), 2);
		v >>= 8;
	}
	if (n)
		p[-1] = tk_hex_pairs[2 * v + 1];
	return e;
#endif
}

/* The hex digits of @v, no leading zero. May write up to 16 bytes from @o. */
static inline char *tk_put_hex(char *o, uint64_t v)
{
	/* One or two digits (flags, small ids) are one table load. */
	if (v < 0x100) {
		if (v < 0x10) {
			*o = tk_hex_pairs[2 * v + 1];
			return o + 1;
		}
		__builtin_memcpy(o, tk_hex_pairs + 2 * v, 2);
		return o + 2;
	}
	return tk_put_hex_n(o, v, (64u - (unsigned int)__builtin_clzll(v) + 3) / 4);
}

/*
 * Copy @n bytes, no more read or written, without a call or "rep movs"
 * (what a short variable memcpy() becomes inline): overlapping fixed-size
 * moves cover every length from 1 to 32 in two, longer ones loop.
 */
static inline char *tk_copy(char *o, const char *s, size_t n)
{
	if (n >= 16) {
		size_t i = 0;

		for (; i + 16 < n; i += 16) {
			__builtin_memcpy(o + i, s + i, 16);
			/* Keeps GCC from turning the loop back into memcpy(). */
			__asm__("" : "+r"(i));
		}
		__builtin_memcpy(o + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		__builtin_memcpy(o, s, 8);
		__builtin_memcpy(o + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		__builtin_memcpy(o, s, 4);
		__builtin_memcpy(o + n - 4, s + n - 4, 4);
	} else if (n) {
		o[0] = s[0];
		o[n / 2] = s[n / 2];
		o[n - 1] = s[n - 1];
	}
	return o + n;
}

/* event-print.c */
void tk_event_compile(struct tk_event_set *set, struct tk_event *ev);
/* Return: 0, -EBADMSG (truncated marker printed), -ENOTSUP: use the slow path. */
int tk_event_run(struct tk_event_set *set, const struct tk_event *ev, const void *data,
		 uint32_t size, struct tk_outbuf *out);
/*
 * tk_event_run() for printers on several threads at once: it registers no
 * command names (the sched mirrors' names are learnt in record order, by
 * one thread, with tk_event_sched_learn()) and looks symbols up through
 * @memo, the calling printer's own (TK_KSYM_MEMO entries; NULL: the set's,
 * which only one thread may use). The set's formats must all be parsed
 * already.
 */
int tk_event_run_shared(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			uint32_t size, struct tk_outbuf *out, struct tk_ksym_memo *memo);
/*
 * The slow printer for printers on several threads: the caller holds the
 * lock that serialises libtraceevent and the set's scratch, and learns the
 * sched events' names itself (tk_event_sched_learn()).
 */
void tk_event_print_slow_shared(struct tk_event_set *set, const struct tk_event *ev,
				const void *data, uint32_t size, int cpu, struct tk_outbuf *out);
/*
 * The names a compiled sched_switch / sched_wakeup record registers when
 * printed; @lock (or NULL) is taken around what reaches libtraceevent.
 */
void tk_event_sched_learn(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			  uint32_t size, pthread_mutex_t *lock);

/*
 * tk_event_sched_learn() with its usual case inline: every name the record
 * would register is known already (tk_comm_settled()), so nothing changes.
 * The merge thread of a threaded report calls it for every sched record.
 */
static inline void tk_event_sched_learn_fast(struct tk_event_set *set, const struct tk_event *ev,
					     const void *data, uint32_t size, pthread_mutex_t *lock)
{
	if (ev->nlearn && !set->swap && size >= ev->min_size) {
		uint32_t i = 0;

		for (; i < ev->nlearn; i++) {
			int32_t pid;

			__builtin_memcpy(&pid, (const uint8_t *)data + ev->learn_pid[i], 4);
			if (!tk_comm_settled(set->comms, pid))
				break;
		}
		if (i == ev->nlearn)
			return;
	}
	tk_event_sched_learn(set, ev, data, size, lock);
}
void tk_event_free_program(struct tk_event *ev);
void tk_event_sched_register(struct tk_event_set *set, const struct tk_event *ev, const void *data,
			     uint32_t size);

/* event.c */
/*
 * Register @pid's name as tep_register_comm() does; @mirror: also tell tep
 * (false when tep's sched plugin registered it already).
 */
const struct tk_printk *tk_event_printk_find(const struct tk_event_set *set, uint64_t addr);
uint64_t tk_event_ksym_addr(struct tk_event_set *set, const char *name);
void tk_event_ksym_atoms_resolve(struct tk_event_set *set, struct tk_event *ev);
int tk_event_comm_add(struct tk_event_set *set, int pid, const char *comm, size_t len, bool mirror);
/*
 * The entry libtraceevent's find_func() returns for @addr, or NULL. @memo:
 * the calling printer's memo of lookups (TK_KSYM_MEMO entries), or NULL for
 * the set's, which only one thread may use.
 */
const struct tk_ksym *tk_event_ksym_find(struct tk_event_set *set, struct tk_ksym_memo *memo,
					 uint64_t addr);

/* The memo slot of @addr (TK_KSYM_MEMO entries). */
static inline size_t tk_ksym_memo_slot(uint64_t addr)
{
	return (size_t)(((addr ^ (addr >> 17)) * 0x9e3779b97f4a7c15ull) >> 52);
}

/*
 * tk_event_ksym_find() with its memo hit inline: workqueue's records each
 * print a "%ps" of the same few functions, and the call cost ~30
 * instructions of the ~45 a hit took.
 */
static inline const struct tk_ksym *
tk_event_ksym_find_memo(struct tk_event_set *set, struct tk_ksym_memo *memo, uint64_t addr)
{
	const struct tk_ksym_memo *m, *own;

	/*
	 * ksym_built first: its release store publishes the set's memo, which
	 * a thread of tk_event_ksym_prepare() may still be allocating.
	 */
	if (__builtin_expect(__atomic_load_n(&set->ksym_built, __ATOMIC_ACQUIRE), 1) &&
	    (own = memo ? memo : set->ksym_memo)) {
		m = &own[tk_ksym_memo_slot(addr)];
		if (m->k && m->addr == addr)
			return m->k != &tk_ksym_none ? m->k : NULL;
	}
	return tk_event_ksym_find(set, memo, addr);
}
/*
 * Ready the symbols now, as the first tk_event_ksym_find() would: from a
 * spare thread, while the caller's goes on (a lookup meanwhile waits for
 * it). A text in the kernel's layout and address order is only checked:
 * lookups then search it until they are many (tk_event_ksym_table()).
 */
void tk_event_ksym_prepare(struct tk_event_set *set);
/* Build the whole sorted table now (names' addresses, many lookups, tests). */
void tk_event_ksym_table(struct tk_event_set *set);
/*
 * Give @set the kernel image's lines of kallsyms (@text, @len bytes, in the
 * mapping @map of @map_len bytes, which the set takes and unmaps) instead of
 * the whole text of @full_path, which they begin (ksyms-copy.c): symbols are
 * looked up in them while the answer is the one the whole text would give
 * (an address inside the image that no other symbol shares), and the whole
 * text is read at the first lookup that is not. Return: 0, or -1 (nothing
 * taken: the caller unmaps @map and gives the whole text instead).
 */
int tk_event_set_add_kallsyms_image(struct tk_event_set *set, const char *text, size_t len,
				    void *map, size_t map_len, const char *full_path);
/*
 * After tk_event_set_add_kallsyms_image(): the table of the image's lines
 * is read from @path when that file was written for a copy of key @key
 * (its identity: a new copy has another), else parsed and written there
 * (through a temporary file; failures are silent). Return: 0, or -ENOMEM.
 */
int tk_event_set_kallsyms_table(struct tk_event_set *set, const char *path, uint64_t key);
/*
 * tk_event_set_add_kallsyms_source() - kallsyms that @get hands out when
 * the set first needs them (a symbol printed, a name's address, the slow
 * printer), as tk_event_set_add_kallsyms_borrowed() text: a .dat's
 * compressed kallsyms is decoded then, or never. @get runs once, on the
 * thread that first needs it, under the set's ksym_lock; a failure (-1)
 * leaves the set without kallsyms. Return: 0.
 */
int tk_event_set_add_kallsyms_source(struct tk_event_set *set,
				     int (*get)(void *arg, const char **text, size_t *len),
				     void *arg);
void tk_event_ksym_load_tep(struct tk_event_set *set);
int tk_event_dyn_loc(const struct tk_event_set *set, uint32_t foff, uint32_t fsize, bool rel,
		     const void *data, uint32_t size, uint32_t *off, uint32_t *len);

/*
 * tk_event_format_check() - @text is shaped as the kernel writes an event
 * format (event-check.c); checked before libtraceevent parses it.
 * Return: 0, or -EBADMSG with a message naming @system and the line.
 */
int tk_event_format_check(const char *system, const char *text, size_t len);

/*
 * tk_event_find_stars() - note which fields @ev's '*' widths read, pairing
 * conversions and arguments as libtraceevent does (event-check.c).
 */
void tk_event_find_stars(struct tk_event *ev);

/*
 * tk_event_stars_ok() - whether libtraceevent may print this record: every
 * '*' width or precision it would read lies in 0..65536. A width from the
 * record of 1.7 billion made its printer pad for ever.
 */
bool tk_event_stars_ok(const struct tk_event_set *set, const struct tk_event *ev, const void *data,
		       uint32_t size);

/*
 * tk_event_pointer_suffix() - how many characters after "%p" libtraceevent
 * takes as part of the conversion (@s points after the 'p').
 */
int tk_event_pointer_suffix(const char *s);

/*
 * tk_event_filter_check() - a -F filter ("EVENT:FILTER") has the shape
 * libtraceevent's filter parser survives (event-check.c)
 * Return: 0, or -EINVAL with a one-line message naming the spec.
 */
int tk_event_filter_check(const char *spec);

#endif
