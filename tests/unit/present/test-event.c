// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the event module: each print-format construct the
 * compiled printer handles, on hand-made formats and records, checked
 * against the exact text and against libtraceevent's printer (the slow
 * path) on the same record; constructs it does not handle must fall back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/event.h>

#include "event-internal.h"
#include "tk-test.h"

/* libtraceevent 1.7 leaks a few bytes in its format parser. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

#define COMMON                                                                                     \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"             \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const char fmt_t[] =
	"name: t1\nID: 7\nformat:\n" COMMON "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long b;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:char comm[16];\toffset:24;\tsize:16;\tsigned:1;\n"
	"\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned int fl;\toffset:44;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"a=%d au=%u ax=%x al=%ld b=%lu bx=%lx w=%5d z=%03u c=%s n=%s f=%s s=%s 100%% "
	"\\t\", "
	"REC->a, REC->a, REC->a, REC->a, REC->b, REC->b, REC->a, REC->a, REC->comm, "
	"__get_str(name), "
	"__print_flags(REC->fl, \"|\", { 1, \"ONE\" }, { 2, \"TWO\" }), "
	"__print_symbolic(REC->fl, { 1, \"one\" }, { 3, \"three\" })\n";

static const char fmt_ptr[] =
	"name: t2\nID: 8\nformat:\n" COMMON "\tfield:void * p;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"p=%p q=%d\", REC->p, REC->p ? 1 : 2\n";

struct rec {
	uint8_t b[64];
};

static void make_rec(struct rec *r, int32_t a, uint64_t b, const char *comm, const char *name,
		     uint32_t fl)
{
	uint16_t type = 7;
	int32_t pid = 42;
	uint32_t loc = 48 | (uint32_t)(strlen(name) + 1) << 16;

	memset(r, 0, sizeof(*r));
	memcpy(r->b, &type, 2);
	memcpy(r->b + 4, &pid, 4);
	memcpy(r->b + 8, &a, 4);
	memcpy(r->b + 16, &b, 8);
	memcpy(r->b + 24, comm, strnlen(comm, 16));
	memcpy(r->b + 40, &loc, 4);
	memcpy(r->b + 44, &fl, 4);
	memcpy(r->b + 48, name, strlen(name) + 1);
}

static char *print(struct tk_event_set *set, const void *d, uint32_t n, unsigned int flags)
{
	static char text[2][4096];
	static int which;
	struct tk_outbuf out;
	int type = tk_event_record_type(set, d, n);
	const struct tk_event *ev = tk_event_find(set, type);

	assert_non_null(ev);
	assert_int_equal(tk_outbuf_init(&out, -1, 0), 0);
	tk_event_print_info(set, ev, d, n, 0, flags, &out);
	which ^= 1;
	snprintf(text[which], sizeof(text[which]), "%.*s", (int)out.len, out.buf);
	tk_outbuf_release(&out);
	return text[which];
}

static struct tk_event_set *new_set(void)
{
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);

	assert_non_null(set);
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_t, strlen(fmt_t)), 7);
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_ptr, strlen(fmt_ptr)), 8);
	return set;
}

/* Add @fmt (event @id) to @set; the event, which must have compiled. */
static const struct tk_event *add_compiled(struct tk_event_set *set, const char *system,
					   const char *fmt, int id)
{
	const struct tk_event *ev;

	assert_int_equal(tk_event_set_add_format(set, system, fmt, strlen(fmt)), id);
	ev = tk_event_find(set, id);
	assert_non_null(ev);
	if (!tk_event_is_compiled(ev))
		fail_msg("not compiled: %s", ev->why_slow);
	return ev;
}

static void test_constructs(void **state)
{
	struct tk_event_set *set = new_set();
	struct rec r;
	const char *want = "a=-5 au=4294967291 ax=fffffffb al=4294967291 b=18446744073709551615 "
			   "bx=ffffffffffffffff w=   -5 z=4294967291 c=bash n=hello f=ONE|TWO|0x4 "
			   "s=0x7 100% \t";

	(void)state;
	assert_true(tk_event_is_compiled(tk_event_find(set, 7)));
	make_rec(&r, -5, UINT64_MAX, "bash", "hello", 7);
	assert_string_equal(print(set, r.b, sizeof(r.b), 0), want);
	/* The same text from libtraceevent. */
	assert_string_equal(print(set, r.b, sizeof(r.b), TK_EVENT_PRINT_SLOW), want);

	make_rec(&r, 12, 3, "0123456789abcdefXX", "", 3);
	assert_string_equal(print(set, r.b, sizeof(r.b), 0),
			    print(set, r.b, sizeof(r.b), TK_EVENT_PRINT_SLOW));
	make_rec(&r, 0, 0, "", "x", 0);
	assert_string_equal(print(set, r.b, sizeof(r.b), 0),
			    print(set, r.b, sizeof(r.b), TK_EVENT_PRINT_SLOW));
	/* Flags and symbols print from tables below 256: values in and past them. */
	for (uint32_t fl = 0; fl < 300; fl++) {
		make_rec(&r, 0, 0, "", "x", fl == 299 ? UINT32_MAX : fl);
		assert_string_equal(print(set, r.b, sizeof(r.b), 0),
				    print(set, r.b, sizeof(r.b), TK_EVENT_PRINT_SLOW));
	}
	tk_event_set_free(set);
}

/*
 * A char[16] name of every length, and one with no NUL: the compiled op
 * copies the 16 bytes whole and keeps only the name's length of them.
 */
static void test_name_lengths(void **state)
{
	struct tk_event_set *set = new_set();
	const char *letters = "abcdefghijklmnopqrstuvwxyz";
	struct rec r;

	(void)state;
	for (size_t len = 0; len <= 16; len++) {
		char name[17], want[64];
		const char *got;

		memcpy(name, letters + 26 - len, len);
		name[len] = '\0';
		make_rec(&r, 1, 2, name, "x", 1);
		/* Bytes after the name's NUL must not show. */
		if (len < 15)
			r.b[24 + len + 1] = 'Z';
		snprintf(want, sizeof(want), " c=%s n=x ", name);
		got = print(set, r.b, sizeof(r.b), 0);
		assert_non_null(strstr(got, want));
		assert_string_equal(got, print(set, r.b, sizeof(r.b), TK_EVENT_PRINT_SLOW));
	}
	tk_event_set_free(set);
}

static void test_fallback(void **state)
{
	struct tk_event_set *set = new_set();
	static const char fmt_mac[] = "name: t3\nID: 9\nformat:\n" COMMON
				      "\tfield:u8 a[6];\toffset:8;\tsize:6;\tsigned:0;\n\n"
				      "print fmt: \"mac=%pM\", REC->a\n";
	uint8_t d[16] = {8, 0};

	(void)state;
	/* %p and a numeric ternary are compiled and print what libtraceevent prints. */
	assert_true(tk_event_is_compiled(tk_event_find(set, 8)));
	d[8] = 0x10;
	assert_string_equal(print(set, d, sizeof(d), 0), "p=0x10 q=1");
	assert_string_equal(print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW), "p=0x10 q=1");
	d[8] = 0;
	assert_string_equal(print(set, d, sizeof(d), 0), "p=(nil) q=2");
	assert_string_equal(print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW), "p=(nil) q=2");
	/* %pM is compiled and prints what libtraceevent prints. */
	add_compiled(set, "test", fmt_mac, 9);
	d[0] = 9;
	d[8] = 10;
	d[11] = 7;
	assert_string_equal(print(set, d, sizeof(d), 0), "mac=0a:00:00:07:00:00");
	assert_string_equal(print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW), "mac=0a:00:00:07:00:00");
	/* %pISpc (a sockaddr) is not compiled: libtraceevent prints it. */
	{
		static const char fmt_sa[] =
			"name: t3b\nID: 12\nformat:\n" COMMON
			"\tfield:__u8 sa[28];\toffset:8;\tsize:28;\tsigned:0;\n\n"
			"print fmt: \"sa=%pISpc\", REC->sa\n";
		uint8_t r[40] = {12, 0};

		assert_int_equal(tk_event_set_add_format(set, "test", fmt_sa, strlen(fmt_sa)), 12);
		assert_false(tk_event_is_compiled(tk_event_find(set, 12)));
		assert_non_null(tk_event_find(set, 12)->why_slow);
		assert_string_equal(print(set, r, sizeof(r), 0),
				    print(set, r, sizeof(r), TK_EVENT_PRINT_SLOW));
	}
	tk_event_set_free(set);
}

/* Expressions, casts, string ternaries, %Lu, %ps/%pS through kallsyms. */
static void test_expressions_and_symbols(void **state)
{
	static const char fmt_e[] =
		"name: t4\nID: 10\nformat:\n" COMMON
		"\tfield:unsigned int fl;\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:int ret;\toffset:12;\tsize:4;\tsigned:1;\n"
		"\tfield:void * fn;\toffset:16;\tsize:8;\tsigned:0;\n"
		"\tfield:unsigned long t;\toffset:24;\tsize:8;\tsigned:0;\n"
		"\tfield:unsigned long now;\toffset:32;\tsize:8;\tsigned:0;\n\n"
		"print fmt: \"cpu=%u idx=%u r=%s fn=%ps at=%pS d=%ld v=%Lu f=%s s=%s\", "
		"REC->fl & 0x0003FFFF, REC->fl >> 22, REC->ret ? \"handled\" : \"unhandled\", "
		"REC->fn, REC->fn, (long)REC->t - REC->now, (unsigned long long)REC->t, "
		"__print_flags(REC->fl & (0x00040000 | 0x00080000), \"|\", "
		"{ 0x00040000, \"M\" }, { 0x00080000, \"D\" }), "
		"__print_symbolic(REC->ret, { HI_SOFTIRQ, \"HI\" }, { TIMER_SOFTIRQ, \"TIMER\" "
		"})\n";
	static const char syms[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81001000 t first_fn\n"
				   "ffffffff81001000 t alias_fn\n"
				   "ffffffff81002000 A absolute_sym\n"
				   "ffffffff81003000 T last_fn\t[mod]\n";
	struct tk_event_set *set = new_set();
	uint8_t d[40] = {10, 0};
	uint32_t fl = 0x00c00000 | 0x00040000 | 5;
	int32_t ret = 1;
	uint64_t fn = 0xffffffff81001010ull, t = 100, now = 250;
	char slow[4096];

	(void)state;
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_e, strlen(fmt_e)), 10);
	assert_int_equal(tk_event_set_add_kallsyms(set, syms, strlen(syms)), 0);
	assert_true(tk_event_is_compiled(tk_event_find(set, 10)));
	memcpy(d + 8, &fl, 4);
	memcpy(d + 12, &ret, 4);
	memcpy(d + 16, &fn, 8);
	memcpy(d + 24, &t, 8);
	memcpy(d + 32, &now, 8);
	snprintf(slow, sizeof(slow), "%s", print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW));
	assert_string_equal(print(set, d, sizeof(d), 0), slow);
	assert_non_null(strstr(slow, "r=handled"));
	assert_non_null(strstr(slow, "at=first_fn+0x10") || strstr(slow, "at=alias_fn+0x10"));
	/* Unknown address (above the last symbol), zero flags, ret 0. */
	fn = 0xffffffff90000000ull;
	fl = 0;
	ret = 0;
	memcpy(d + 8, &fl, 4);
	memcpy(d + 12, &ret, 4);
	memcpy(d + 16, &fn, 8);
	snprintf(slow, sizeof(slow), "%s", print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW));
	assert_string_equal(print(set, d, sizeof(d), 0), slow);
	assert_non_null(strstr(slow, "fn=0xffffffff90000000"));
	/* An exact symbol address and one inside the last. */
	fn = 0xffffffff81003004ull;
	memcpy(d + 16, &fn, 8);
	snprintf(slow, sizeof(slow), "%s", print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW));
	assert_string_equal(print(set, d, sizeof(d), 0), slow);
	fn = 0xffffffff81000000ull;
	memcpy(d + 16, &fn, 8);
	snprintf(slow, sizeof(slow), "%s", print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW));
	assert_string_equal(print(set, d, sizeof(d), 0), slow);
	assert_non_null(strstr(slow, "fn=_stext "));
	tk_event_set_free(set);
}

static void test_short_record(void **state)
{
	struct tk_event_set *set = new_set();
	struct rec r;

	(void)state;
	make_rec(&r, 1, 2, "c", "n", 1);
	/* Too short for the fixed fields: the slow path, on a padded copy. */
	print(set, r.b, 20, 0);
	/* A __data_loc pointing past the record. */
	r.b[42] = 0xff;
	print(set, r.b, sizeof(r.b), 0);
	tk_event_set_free(set);
}

static void test_fields_and_comm(void **state)
{
	struct tk_event_set *set = new_set();
	const struct tk_event *ev = tk_event_find(set, 7);
	const struct tk_event_field *f;
	const char *s;
	uint32_t len;
	uint64_t v;
	struct rec r;
	static const char lines[] = "42 bash\n43 my prog\nbad line\n44 never\n";

	(void)state;
	make_rec(&r, -5, 9, "bash", "hello", 0);
	f = tk_event_field_find(ev, "a");
	assert_non_null(f);
	assert_int_equal(tk_event_field_read(set, f, r.b, sizeof(r.b), &v), 0);
	assert_int_equal((int64_t)v, -5);
	assert_int_equal(tk_event_field_read(set, f, r.b, 10, &v), -EBADMSG);
	f = tk_event_field_find(ev, "name");
	assert_int_equal(tk_event_field_string(set, f, r.b, sizeof(r.b), &s, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(s, "hello", 5);
	assert_int_equal(tk_event_field_string(set, f, r.b, 50, &s, &len), -EBADMSG);

	assert_int_equal(tk_event_set_add_cmdlines(set, lines, strlen(lines)), 0);
	assert_string_equal(tk_event_comm(set, 0), "<idle>");
	assert_string_equal(tk_event_comm(set, 42), "bash");
	assert_string_equal(tk_event_comm(set, 43), "my prog");
	assert_string_equal(tk_event_comm(set, 44), "<...>");
	assert_int_equal(tk_event_register_comm(set, 42, "other", 5), -EEXIST);
	for (int pid = 1000; pid < 5000; pid++)
		assert_int_equal(tk_event_register_comm(set, pid, "x", 1), 0);
	assert_string_equal(tk_event_comm(set, 4999), "x");
	assert_string_equal(tk_event_comm(set, 42), "bash");
	tk_event_set_free(set);
}

static void test_bad_format(void **state)
{
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);

	(void)state;
	assert_true(tk_event_set_add_format(set, "x", "garbage", 7) < 0);
	assert_int_equal(tk_event_set_add_format(set, "x", "", 0), -EBADMSG);
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_t, strlen(fmt_t)), 7);
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_t, strlen(fmt_t)), -EEXIST);
	/* A __data_loc of 2 bytes: libtraceevent would print "the rest of the record" from it. */
	static const char loc2[] = "name: tloc\nID: 60\nformat:\n" COMMON
				   "\tfield:__data_loc char[] s;\toffset:8;\tsize:2;\tsigned:0;\n\n"
				   "print fmt: \"%s\", __get_str(s)\n";
	assert_int_equal(tk_event_set_add_format(set, "test", loc2, strlen(loc2)), -EBADMSG);
	tk_event_set_free(set);
	assert_null(tk_event_set_new(3, false, 4096));
}

/* sched_switch's fields as the kernel lays them out. */
#define SWITCH_FIELDS                                                                              \
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"                            \
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"                                \
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"                                 \
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"                               \
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"                           \
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"                                \
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"

/*
 * Command names as libtraceevent 1.7 resolves them: names registered
 * before the first lookup of a pid other than 0 pile up as duplicates, and
 * glibc's bsearch() over the stably sorted array picks the winner.
 */
static const char fmt_switch[] =
	"name: sched_switch\nID: 20\nformat:\n" COMMON SWITCH_FIELDS
	"print fmt: \"prev_comm=%s prev_pid=%d ==> next_comm=%s next_pid=%d\", "
	"REC->prev_comm, REC->prev_pid, REC->next_comm, REC->next_pid\n";

/* <idle>-0: sched_switch swapper/0:0 [120] R ==> @next:@pid [120] */
static void make_switch(uint8_t d[64], const char *next, int32_t pid)
{
	uint16_t type = 20;
	int32_t zero = 0, prio = 120;

	memset(d, 0, 64);
	memcpy(d, &type, 2);
	memcpy(d + 4, &zero, 4);
	memcpy(d + 8, "swapper/0", 9);
	memcpy(d + 24, &zero, 4);
	memcpy(d + 28, &prio, 4);
	memcpy(d + 40, next, strnlen(next, 16));
	memcpy(d + 56, &pid, 4);
	memcpy(d + 60, &prio, 4);
}

static struct tk_event_set *switch_set(const char *cmdlines)
{
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	const struct tk_event *ev;

	assert_non_null(set);
	assert_int_equal(tk_event_set_add_format(set, "sched", fmt_switch, strlen(fmt_switch)), 20);
	assert_int_equal(tk_event_set_load_plugins(set), 0);
	ev = tk_event_find(set, 20);
	assert_non_null(ev);
	if (ev->kind != TK_EVENT_SCHED_SWITCH) {
		tk_event_set_free(set);
		return NULL;
	}
	assert_int_equal(tk_event_set_add_cmdlines(set, cmdlines, strlen(cmdlines)), 0);
	return set;
}

/*
 * Plugins on demand: formats no plugin names leave them unloaded; a
 * format a plugin handles (sched_switch) or whose print format calls a
 * plugin's function has them loaded before it is parsed, and then prints
 * as with plugins loaded first.
 */
static void test_plugins_on_demand(void **state)
{
	static const char idle[] = "name: cpu_idle\nID: 30\nformat:\n" COMMON
				   "\tfield:u32 state;\toffset:8;\tsize:4;\tsigned:0;\n\n"
				   "print fmt: \"state=%lu kmalloc(x) jbd2_dev_to_name(y)\", "
				   "(unsigned long)REC->state\n";
	static const char calls[] = "name: t_calls\nID: 31\nformat:\n" COMMON
				    "\tfield:u32 dev;\toffset:8;\tsize:4;\tsigned:0;\n\n"
				    "print fmt: \"dev %s\", jbd2_dev_to_name (REC->dev)\n";
	struct tk_event_set *eager = switch_set("1 init\n"), *set;
	const struct tk_event *ev;

	(void)state;
	if (!eager)
		skip(); /* no sched_switch plugin installed */
	tk_event_set_free(eager);

	set = tk_event_set_new(8, false, 4096);
	assert_non_null(set);
	assert_int_equal(tk_event_set_plugins_on_demand(set), 0);
	/* Plugin words inside the quoted format are no calls. */
	assert_int_equal(tk_event_set_add_format(set, "power", idle, strlen(idle)), 30);
	assert_null(set->plugins);
	assert_int_equal(tk_event_set_add_format(set, "sched", fmt_switch, strlen(fmt_switch)), 20);
	assert_non_null(set->plugins);
	ev = tk_event_find(set, 20);
	assert_non_null(ev);
	assert_int_equal(ev->kind, TK_EVENT_SCHED_SWITCH);
	tk_event_set_free(set);

	set = tk_event_set_new(8, false, 4096);
	assert_non_null(set);
	assert_int_equal(tk_event_set_plugins_on_demand(set), 0);
	assert_int_equal(tk_event_set_add_format(set, "jbd2", calls, strlen(calls)), 31);
	assert_non_null(set->plugins);
	tk_event_set_free(set);
}

static const char cmdlines_sample[] = "13047 sleep\n13047 bash\n7 kworker/0:1\n";

static int cmdlines_text(void *arg, const char **t, size_t *len)
{
	(void)arg;
	*t = cmdlines_sample;
	*len = strlen(cmdlines_sample);
	return 0;
}

/*
 * Saved cmdlines handed over as a source wait until the table is needed, and
 * then give the names an eager registration gives, before later ones.
 */
static void test_cmdlines_source(void **state)
{
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);

	(void)state;
	assert_non_null(set);
	assert_int_equal(tk_event_set_add_cmdlines_source(set, cmdlines_text, NULL), 0);
	assert_string_equal(tk_event_comm(set, 0), "<idle>");
	assert_non_null(set->comms->pending); /* pid 0 needs no table */
	assert_int_equal(tk_event_register_comm(set, 99, "late", 4), 0);
	assert_null(set->comms->pending);
	assert_int_equal(set->comms->count, 4);
	assert_string_equal(tk_event_comm(set, 7), "kworker/0:1");
	assert_string_equal(tk_event_comm(set, 99), "late");
	/* A pid saved twice resolves as in the eager table. */
	{
		struct tk_event_set *eager = tk_event_set_new(8, false, 4096);

		assert_non_null(eager);
		assert_int_equal(
			tk_event_set_add_cmdlines(eager, cmdlines_sample, strlen(cmdlines_sample)),
			0);
		assert_int_equal(tk_event_register_comm(eager, 99, "late", 4), 0);
		assert_string_equal(tk_event_comm(set, 13047), tk_event_comm(eager, 13047));
		tk_event_set_free(eager);
	}
	tk_event_set_free(set);

	/* A source given once the table is sorted is registered at once. */
	set = tk_event_set_new(8, false, 4096);
	assert_non_null(set);
	assert_int_equal(tk_event_register_comm(set, 99, "late", 4), 0);
	assert_string_equal(tk_event_comm(set, 99), "late");
	assert_int_equal(tk_event_set_add_cmdlines_source(set, cmdlines_text, NULL), 0);
	assert_null(set->comms->pending);
	assert_string_equal(tk_event_comm(set, 7), "kworker/0:1");
	tk_event_set_free(set);
}

static void test_comm_plugin_duplicates(void **state)
{
	static const char *const want = "swapper/0:0 [120] R ==> bash:13047 [120]";
	struct tk_event_set *set;
	uint8_t d[64];

	(void)state;
	make_switch(d, "bash", 13047);
	for (int slow = 0; slow < 2; slow++) {
		set = switch_set("13047 sleep\n");
		if (!set)
			skip();
		/* pid 0 is "<idle>" without a lookup: the table stays a list. */
		assert_string_equal(tk_event_comm(set, 0), "<idle>");
		assert_false(set->comms->sorted);
		/* The first printed record is pid 0's; the plugin adds 0 and 13047. */
		assert_string_equal(print(set, d, sizeof(d), slow ? TK_EVENT_PRINT_SLOW : 0), want);
		assert_int_equal(set->comms->count, 3);
		/* [0 swapper/0, 13047 bash, 13047 sleep]: the first probe, 1, hits bash. */
		assert_string_equal(tk_event_comm(set, 13047), "bash");
		assert_true(set->comms->sorted);
		/* The slow printer told tep; the fast one left it for later. */
		assert_int_equal(set->comms->tep_told, slow);
		tk_event_comm_tep(set);
		assert_string_equal(tep_data_comm_from_pid(set->tep, 13047), "bash");
		/* Now the array is built: known pids and pid 0 are refused. */
		assert_int_equal(tk_event_register_comm(set, 13047, "other", 5), -EEXIST);
		assert_int_equal(tk_event_register_comm(set, 0, "swapper/1", 9), 0);
		assert_int_equal(set->comms->count, 3);
		assert_string_equal(print(set, d, sizeof(d), 0), want);
		assert_string_equal(tk_event_comm(set, 13047), "bash");
		/* A new pid moves the array: [0, 13047 bash, 13047 sleep, 20000]: 2 is sleep. */
		assert_int_equal(tk_event_register_comm(set, 20000, "new", 3), 0);
		assert_string_equal(tk_event_comm(set, 13047), "sleep");
		assert_string_equal(tep_data_comm_from_pid(set->tep, 13047), "sleep");
		tk_event_set_free(set);
	}

	/* A lookup of a real pid first: the array exists, the plugin's bash is refused. */
	set = switch_set("13047 sleep\n");
	assert_string_equal(tk_event_comm(set, 13047), "sleep");
	assert_string_equal(print(set, d, sizeof(d), 0), want);
	assert_string_equal(tk_event_comm(set, 13047), "sleep");
	assert_int_equal(set->comms->count, 1);
	tk_event_set_free(set);

	/* More saved names move the probes: [0, 13047 bash, 13047 sleep, 13048, 13049]. */
	set = switch_set("13047 sleep\n13048 a\n13049 b\n");
	assert_string_equal(print(set, d, sizeof(d), 0), want);
	assert_string_equal(tk_event_comm(set, 13047), "sleep");
	tk_event_comm_tep(set);
	assert_string_equal(tep_data_comm_from_pid(set->tep, 13047), "sleep");
	tk_event_set_free(set);
}

/*
 * The merge thread's inline check before tk_event_sched_learn() changes
 * nothing: two sets fed the same random sched_switch records, one through
 * tk_event_sched_learn_fast() and one through tk_event_sched_learn(), keep
 * the same names. The places survive the compile again that plugins bring.
 */
static void test_sched_learn_fast(void **state)
{
	static const char *const names[] = {"bash", "sleep", "kworker/0:1", "a", "make"};
	struct tk_event_set *fast = switch_set("13047 sleep\n100 init\n");
	struct tk_event_set *slow = switch_set("13047 sleep\n100 init\n");
	const struct tk_event *ev;
	uint32_t seed = 7;
	uint8_t d[64];

	(void)state;
	if (!fast || !slow)
		skip();
	ev = tk_event_find(fast, 20);
	assert_int_equal(ev->nlearn, 2);
	assert_int_equal(ev->learn_pid[0], 24);
	assert_int_equal(ev->learn_pid[1], 56);
	assert_int_equal(tk_event_set_load_plugins(fast), 0);
	assert_int_equal(ev->nlearn, 2);
	/* Sorted first, as a report's first name lookup leaves the table. */
	assert_string_equal(tk_event_comm(fast, 13047), "sleep");
	assert_string_equal(tk_event_comm(slow, 13047), "sleep");
	for (int i = 0; i < 400; i++) {
		int32_t pid;

		seed = seed * 1103515245u + 12345u;
		pid = 13040 + (int32_t)((seed >> 16) % 24);
		make_switch(d, names[(seed >> 8) % 5], pid);
		tk_event_sched_learn_fast(fast, tk_event_find(fast, 20), d, sizeof(d), NULL);
		tk_event_sched_learn(slow, tk_event_find(slow, 20), d, sizeof(d), NULL);
		assert_int_equal(fast->comms->count, slow->comms->count);
		assert_string_equal(tk_event_comm(fast, pid), tk_event_comm(slow, pid));
	}
	/* A pid first seen here was learnt by both. */
	assert_true(fast->comms->count > 2);
	tk_event_set_free(fast);
	tk_event_set_free(slow);

	/* An 8-byte next_pid: no fixed places, every record takes the full learn. */
	{
		static const char fmt_wide[] =
			"name: sched_switch\nID: 20\nformat:\n" COMMON
			"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
			"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
			"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
			"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
			"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
			"\tfield:long next_pid;\toffset:56;\tsize:8;\tsigned:1;\n"
			"\tfield:int next_prio;\toffset:64;\tsize:4;\tsigned:1;\n\n"
			"print fmt: \"%d\", REC->next_pid\n";
		struct tk_event_set *wide = tk_event_set_new(8, false, 4096);

		assert_non_null(wide);
		assert_int_equal(tk_event_set_add_format(wide, "sched", fmt_wide, strlen(fmt_wide)),
				 20);
		assert_int_equal(tk_event_set_load_plugins(wide), 0);
		ev = tk_event_find(wide, 20);
		assert_int_equal(ev->kind, TK_EVENT_SCHED_SWITCH);
		assert_int_equal(ev->nlearn, 0);
		tk_event_set_free(wide);
	}
}

/*
 * Our table against libtraceevent's own on random registration histories;
 * tep told everything at the start, in the list phase, or after our array
 * is built (tk_event_comm_tep()'s two replays).
 */
static void test_comm_model_vs_tep(void **state)
{
	uint32_t seed = 12345;
	char name[16];

	(void)state;
	for (int round = 0; round < 300; round++) {
		struct tk_event_set *set = tk_event_set_new(8, false, 4096);
		int n;

		assert_non_null(set);
		if (round % 3 == 0)
			tk_event_comm_tep(set);
		seed = seed * 1103515245u + 12345u;
		n = 1 + (int)(seed >> 16) % 40;
		for (int i = 0; i < n; i++) {
			int pid;

			seed = seed * 1103515245u + 12345u;
			pid = (int)(seed >> 16) % 13;
			snprintf(name, sizeof(name), "c%d", i);
			assert_int_equal(tk_event_register_comm(set, pid, name, strlen(name)), 0);
		}
		assert_int_equal(set->comms->count, n);
		if (round % 3 == 1)
			tk_event_comm_tep(set);
		for (int pid = 1; pid < 13; pid++) {
			const char *ours = tk_event_comm(set, pid);

			tk_event_comm_tep(set);
			assert_string_equal(ours, tep_data_comm_from_pid(set->tep, pid));
		}
		for (int i = 0; i < 10; i++) {
			int pid;

			seed = seed * 1103515245u + 12345u;
			pid = (int)(seed >> 16) % 30;
			snprintf(name, sizeof(name), "d%d", i);
			tk_event_register_comm(set, pid, name, strlen(name));
			for (int q = 1; q < 30; q++)
				assert_string_equal(tk_event_comm(set, q),
						    tep_data_comm_from_pid(set->tep, q));
		}
		tk_event_set_free(set);
	}
}

/* saved_cmdlines read as tep_parse_saved_cmdlines() reads it. */
static void test_cmdlines_vs_tep(void **state)
{
	static const char *const texts[] = {
		"5 a\n5 b\n",
		"5 a\n5 b\n6 c\n",
		"\n\n7 x y \n -8 neg\n+9 plus\n10\n11 never\n",
		"4294967308 wrap\n12 twelve\n",
		"14 one\n15 two",
		"16 a\n0 zero\n17 b\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct tk_event_set *set = tk_event_set_new(8, false, 4096);
		struct tep_handle *tep = tep_alloc();

		assert_non_null(set);
		assert_non_null(tep);
		assert_int_equal(tk_event_set_add_cmdlines(set, texts[i], strlen(texts[i])), 0);
		tep_parse_saved_cmdlines(tep, texts[i]);
		for (int pid = -10; pid < 20; pid++)
			assert_string_equal(tk_event_comm(set, pid),
					    tep_data_comm_from_pid(tep, pid));
		tep_free(tep);
		tk_event_set_free(set);
	}
	/*
	 * A NUL ends the text, as the C string trace-cmd hands over; a pid
	 * beyond a long ends it as sscanf()'s ERANGE does (libtraceevent
	 * leaks that line's name, so it is not asked here).
	 */
	{
		static const char nul[] = "18 a\0\n19 b\n";
		static const char range[] = "20 c\n99999999999999999999 range\n21 never\n";
		struct tk_event_set *set = tk_event_set_new(8, false, 4096);

		assert_int_equal(tk_event_set_add_cmdlines(set, nul, sizeof(nul) - 1), 0);
		assert_int_equal(tk_event_set_add_cmdlines(set, range, sizeof(range) - 1), 0);
		assert_string_equal(tk_event_comm(set, 18), "a");
		assert_string_equal(tk_event_comm(set, 19), "<...>");
		assert_string_equal(tk_event_comm(set, 20), "c");
		assert_string_equal(tk_event_comm(set, 21), "<...>");
		assert_int_equal(set->comms->count, 2);
		tk_event_set_free(set);
	}
}

/* %pI4/%pi4/%pI6/%pi6/%pI6c, an array element (REC->args[N]), "1U" constants. */
static void test_ip_and_index(void **state)
{
	static const char fmt_ip[] =
		"name: t9\nID: 15\nformat:\n" COMMON
		"\tfield:__u8 saddr[4];\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:__u8 v6[16];\toffset:12;\tsize:16;\tsigned:0;\n"
		"\tfield:unsigned long args[3];\toffset:32;\tsize:24;\tsigned:0;\n"
		"\tfield:dev_t dev;\toffset:56;\tsize:4;\tsigned:0;\n\n"
		"print fmt: \"%pI4 %pi4/%pI6 %pi6 [%pI6c] a1=%lx a2=%ld d=%d,%d\", REC->saddr, "
		"REC->saddr, REC->v6, REC->v6, REC->v6, REC->args[1], REC->args[2], "
		"((unsigned int) ((REC->dev) >> 20)), "
		"((unsigned int) ((REC->dev) & ((1U << 20) - 1)))\n";
	static const uint8_t v6[][16] = {
		{0},
		{[15] = 1},
		{[10] = 0xff, [11] = 0xff, 192, 168, 1, 20},
		{0xfe, 0x80, [8] = 0x02, [10] = 0x5e, [11] = 0xfe, 10, 0, 0, 1},
		{0x20, 0x01, 0x0d, 0xb8, [9] = 1, [15] = 1},
		{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1},
		{0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x08, 0xd3, 0x13, 0x19, 0x8a, 0x2e, 0x03, 0x70,
		 0x73, 0x44},
		{0x20, 0x01, [12] = 0xab, 0xcd, 0, 0},
	};
	struct tk_event_set *set = new_set();
	uint8_t d[64];
	char slow[4096];

	(void)state;
	add_compiled(set, "test", fmt_ip, 15);
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		uint64_t args[3] = {1, 0xdeadbeef00ull + i, (uint64_t)-7 - i};
		uint32_t dev = (uint32_t)(8u << 20 | (i * 17));
		uint16_t type = 15;

		memset(d, 0, sizeof(d));
		memcpy(d, &type, 2);
		d[8] = 10;
		d[9] = (uint8_t)i;
		d[10] = 200;
		d[11] = 7;
		memcpy(d + 12, v6[i], 16);
		memcpy(d + 32, args, sizeof(args));
		memcpy(d + 56, &dev, 4);
		snprintf(slow, sizeof(slow), "%s", print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW));
		assert_string_equal(print(set, d, sizeof(d), 0), slow);
		if (i == 2)
			assert_non_null(
				strstr(slow, "[::ffff:192.168.1.20] a1=deadbeef02 a2=-9 d=8,34"));
	}
	assert_non_null(strstr(print(set, d, sizeof(d), 0), "10.7.200.7 010.007.200.007/"));
	/* Too short for the array element: the slow path, same text. */
	assert_string_equal(print(set, d, 50, 0), print(set, d, 50, TK_EVENT_PRINT_SLOW));
	tk_event_set_free(set);
}

/*
 * The constructs compiled since the first printer: %pU and %pM forms, %c,
 * '*' widths, __print_hex(_str), __print_array, dynamic arrays and their
 * length, bitmasks, %*ph, string ternaries over any string argument and
 * padded symbol names. Every record is printed both ways.
 */
static const char fmt_more[] =
	"name: t20\nID: 30\nformat:\n" COMMON
	"\tfield:__u8 uuid[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:u8 mac[6];\toffset:24;\tsize:6;\tsigned:0;\n"
	"\tfield:int n;\toffset:32;\tsize:4;\tsigned:1;\n"
	"\tfield:__data_loc char[] name;\toffset:36;\tsize:4;\tsigned:1;\n"
	"\tfield:__data_loc u8[] buf;\toffset:40;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc unsigned long[] mask;\toffset:44;\tsize:4;\tsigned:0;\n"
	"\tfield:u32 arr[4];\toffset:48;\tsize:16;\tsigned:0;\n"
	"\tfield:unsigned int fl;\toffset:64;\tsize:4;\tsigned:0;\n"
	"\tfield:int w;\toffset:68;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"u=%pU ub=%pUb UL=%pUL ul=%pUl m=%pM mm=%pm mr=%pMR mf=%pMF c=%c x=%d "
	"s=[%.*s] p=[%*d] l=[%-*s] h=%s hs=%s a=%s da=%s dl=%d bm=%s bmw=[%20s] hb=%*phC "
	"t=%s z=%s sym=[%-8s] k=%pK\", REC->uuid, REC->uuid, REC->uuid, REC->uuid, REC->mac, "
	"REC->mac, REC->mac, REC->mac, REC->n, REC->w, __get_str(name), REC->w, REC->n, REC->w, "
	"__get_str(name), __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), "
	"__print_hex_str(REC->uuid, 4), __print_array(REC->arr, 4, 4), "
	"__print_array(__get_dynamic_array(buf), __get_dynamic_array_len(buf), 1), "
	"__get_dynamic_array_len(buf), __get_bitmask(mask), __get_bitmask(mask), REC->w, "
	"__get_dynamic_array(buf), "
	"REC->fl ? __print_flags(REC->fl, \"|\", { 1, \"A\" }, { 2, \"B\" }) : \"none\", "
	"REC->n ? __get_str(name) : ((void *)0), "
	"__print_symbolic(REC->fl, { 1, \"one\" }, { 2, \"two\" }), REC->fl\n";

/* A record of fmt_more: @name, @buf (@blen bytes) and @mlen mask bytes behind the fixed part. */
static uint32_t make_more(uint8_t *d, size_t cap, const char *name, const uint8_t *buf,
			  uint32_t blen, uint32_t mlen, int32_t n, int32_t w, uint32_t fl)
{
	uint16_t type = 30;
	uint32_t pos = 72, loc;
	size_t nl = strlen(name) + 1;

	assert_true(pos + nl + blen + mlen <= cap);
	memset(d, 0, cap);
	memcpy(d, &type, 2);
	for (int i = 0; i < 16; i++)
		d[8 + i] = (uint8_t)(0xa0 + i * 7);
	for (int i = 0; i < 6; i++)
		d[24 + i] = (uint8_t)(0x0f + i * 0x21);
	memcpy(d + 32, &n, 4);
	for (int i = 0; i < 4; i++) {
		uint32_t v = (uint32_t)i * 1000000007u;

		memcpy(d + 48 + 4 * i, &v, 4);
	}
	memcpy(d + 64, &fl, 4);
	memcpy(d + 68, &w, 4);
	loc = pos | (uint32_t)nl << 16;
	memcpy(d + 36, &loc, 4);
	memcpy(d + pos, name, nl);
	pos += (uint32_t)nl;
	loc = pos | blen << 16;
	memcpy(d + 40, &loc, 4);
	memcpy(d + pos, buf, blen);
	pos += blen;
	loc = pos | mlen << 16;
	memcpy(d + 44, &loc, 4);
	for (uint32_t i = 0; i < mlen; i++)
		d[pos + i] = (uint8_t)(i * 37 + 1);
	return pos + mlen;
}

/* Compiled text, checked equal to libtraceevent's; returns the compiled text. */
static const char *both(struct tk_event_set *set, const uint8_t *d, uint32_t n)
{
	static char fast[4096];

	snprintf(fast, sizeof(fast), "%s", print(set, d, n, 0));
	assert_string_equal(fast, print(set, d, n, TK_EVENT_PRINT_SLOW));
	return fast;
}

/*
 * timer_start's flags: a value of bit 18 and constant bits above, so the
 * table is indexed by value >> 18. Every value of bits 18-21, with bits
 * outside them set too.
 */
static const char fmt_timer_flags[] =
	"name: tflags\nID: 41\nformat:\n" COMMON
	"\tfield:unsigned int flags;\toffset:8;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"cpu=%u flags=%s\", REC->flags & 0x0003FFFF, "
	"__print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000 | 0x00200000), \"|\", "
	"{ 0x00040000, \"M\" }, { 0x00080000, \"D\" }, { 0x00100000, \"P\" }, "
	"{ 0x00200000, \"I\" })\n";

static void test_flags_shifted_table(void **state)
{
	struct tk_event_set *set = new_set();
	const struct tk_event *ev;
	uint8_t d[16];

	(void)state;
	ev = add_compiled(set, "timer", fmt_timer_flags, 41);
	for (size_t i = 0; i < ev->nops; i++)
		if (ev->ops[i].kind == TK_OP_FLAGS)
			assert_int_equal(ev->ops[i].ftab ? ev->ops[i].ftab->shift : 0, 18);
	for (uint32_t bits = 0; bits < 16; bits++) {
		static const uint32_t others[] = {0, 1, 0x3ffff, 0x400000, 0xffc00000};

		for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
			uint32_t flags = bits << 18 | others[k];
			uint16_t type = 41;

			memset(d, 0, sizeof(d));
			memcpy(d, &type, 2);
			memcpy(d + 8, &flags, 4);
			both(set, d, sizeof(d));
		}
	}
	/*
	 * libtraceevent reads "REC->flags & (M | D | P | I)" as "(REC->flags &
	 * M) | D | P | I": D, P and I always show (as in trace-cmd's text).
	 */
	memset(d + 8, 0, 4);
	d[10] = 0x2c; /* bits 18, 19, 21 */
	assert_string_equal(both(set, d, sizeof(d)), "cpu=0 flags=M|D|P|I");
	d[10] = 0x28; /* bits 19, 21 */
	assert_string_equal(both(set, d, sizeof(d)), "cpu=0 flags=D|P|I");
	tk_event_set_free(set);
}

/*
 * block's MAJOR/MINOR and ioprio (a field shifted right, then masked, a
 * cast's mask too) as direct loads, and net's "%#x" by hand: both as
 * libtraceevent prints them, zero and all-ones values included; "%o" too.
 */
static const char fmt_shifted[] =
	"name: tshift\nID: 42\nformat:\n" COMMON
	"\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned short ioprio;\toffset:12;\tsize:2;\tsigned:0;\n"
	"\tfield:u64 big;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"%d,%d c=%s l=%u v=%u %#x %#llx %#hx b=%llu s=%d o=%o %llo z=%03d %04u "
	"%03d\", "
	"((unsigned int) ((REC->dev) >> 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), "
	"__print_symbolic((((REC->ioprio) >> 13) & (8 - 1)), { 0, \"none\" }, { 1, \"rt\" }, "
	"{ 2, \"be\" }), (((REC->ioprio) >> 3) & ((1 << 10) - 1)), ((REC->ioprio) & ((1 << 3) - "
	"1)), "
	"REC->dev, REC->big, REC->ioprio, (unsigned long long)(REC->big >> 40), "
	"(unsigned char)(REC->big >> 60), REC->dev, REC->big, REC->dev, REC->dev, "
	"((unsigned int) ((REC->dev) >> 20))\n";

static void test_shifted_loads(void **state)
{
	static const uint64_t vals[] = {0,	    1,
					0x7,	    0x1000,
					0xfff00001, 0x8000000000000000ull,
					UINT64_MAX, 0x123456789abcdef0ull,
					42,	    9999,
					10000};
	struct tk_event_set *set = new_set();
	const struct tk_event *ev;
	uint16_t type = 42;
	uint8_t d[24];
	size_t ndec4s = 0;

	(void)state;
	ev = add_compiled(set, "block", fmt_shifted, 42);
	/* Every number is a direct load: no expression walk is left. */
	for (size_t i = 0; i < ev->nops; i++) {
		if (ev->ops[i].kind != TK_OP_LIT)
			assert_true(ev->ops[i].load != 0 || ev->ops[i].kind == TK_OP_SYMBOL);
		ndec4s += ev->ops[i].kind == TK_OP_DEC4S;
	}
	/* MAJOR, MINOR and the three zero-padded ints: the shifted/padded int op. */
	assert_int_equal(ndec4s, 5);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (size_t j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
			uint32_t dev = (uint32_t)vals[i];
			uint16_t io = (uint16_t)(vals[j] ^ vals[i] >> 7);

			memset(d, 0, sizeof(d));
			memcpy(d, &type, 2);
			memcpy(d + 8, &dev, 4);
			memcpy(d + 12, &io, 2);
			memcpy(d + 16, &vals[j], 8);
			both(set, d, sizeof(d));
		}
	}
	memset(d + 8, 0, 16);
	assert_string_equal(both(set, d, sizeof(d)),
			    "0,0 c=none l=0 v=0 0 0 0 b=0 s=0 o=0 0 z=000 0000 000");
	tk_event_set_free(set);
}

/*
 * Values linear in one field: mm_filemap's offsets (a shift left, a cast
 * and "+ 1 ... - 1"), kmem's "vmemmap_base + pfn" with and without the
 * "pfn != -1UL ? ... : 0" test, a multiply of a shifted field, and a
 * constant minus a field (not linear here: the expression walk). Each is
 * checked against libtraceevent, without kallsyms and with them.
 */
static const char fmt_linear[] =
	"name: tlin\nID: 43\nformat:\n" COMMON
	"\tfield:unsigned long index;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long pfn;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int small;\toffset:24;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"ofs=%lld-%lld page=%p pfn=0x%lx q=%p m=%u d=%d i=%d\", "
	"((loff_t)REC->index) << 12, ((((loff_t)REC->index + 1) << 12) - 1), "
	"REC->pfn != -1UL ? (((struct page *)vmemmap_base) + (REC->pfn)) : ((void *)0), "
	"REC->pfn != -1UL ? REC->pfn : 0, (((struct page *)vmemmap_base) + (REC->pfn)), "
	"((REC->small >> 4) & 0xff) * 3 + 7, 100 - REC->small, (int)(REC->small * 5)\n";

static void test_linear_loads(void **state)
{
	static const uint64_t vals[] = {0,
					1,
					0xfff,
					0x123456789ull,
					0x7fffffffffffffffull,
					0x8000000000000000ull,
					UINT64_MAX - 1,
					UINT64_MAX};
	static const char syms[] = "ffffffff81000000 T _stext\nffffffff82000000 D vmemmap_base\n";
	struct tk_event_set *set = NULL;
	uint16_t type = 43;
	uint8_t d[32];

	(void)state;
	/* Without kallsyms (vmemmap_base reads 0), then with them before the format. */
	for (int pass = 0; pass < 2; pass++) {
		const struct tk_event *ev;
		size_t nlin = 0;

		tk_event_set_free(set);
		set = tk_event_set_new(8, false, 4096);
		assert_non_null(set);
		if (pass)
			assert_int_equal(tk_event_set_add_kallsyms(set, syms, strlen(syms)), 0);
		ev = add_compiled(set, "kmem", fmt_linear, 43);
		for (size_t i = 0; i < ev->nops; i++)
			nlin += ev->ops[i].lin_load || ev->ops[i].lin_test;
		assert_int_equal(nlin, 6);
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			for (size_t j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
				uint32_t small = (uint32_t)(vals[j] ^ vals[i] >> 3);

				memset(d, 0, sizeof(d));
				memcpy(d, &type, 2);
				memcpy(d + 8, &vals[i], 8);
				memcpy(d + 16, &vals[j], 8);
				memcpy(d + 24, &small, 4);
				both(set, d, sizeof(d));
			}
		}
	}
	memset(d + 8, 0xff, 16);
	memset(d + 24, 0, 4);
	assert_string_equal(both(set, d, sizeof(d)),
			    "ofs=-4096--1 page=(nil) pfn=0x0 q=0xffffffff81ffffff m=7 d=100 i=0");
	tk_event_set_free(set);
}

static void test_more_constructs(void **state)
{
	struct tk_event_set *set = new_set();
	const struct tk_event *ev;
	static const uint8_t buf[] = {0xde, 0xad, 0xbe, 0xef, 0x01};
	uint8_t d[512];
	uint32_t n;
	const char *t;

	(void)state;
	ev = add_compiled(set, "test", fmt_more, 30);

	n = make_more(d, sizeof(d), "hello", buf, sizeof(buf), 12, 3, 7, 3);
	t = both(set, d, n);
	assert_non_null(strstr(t, "u=a0a7aeb5-bcc3-cad1-d8df-e6edf4fb0209 "));
	assert_non_null(strstr(t, "UL=B5AEA7A0-C3BC-D1CA-D8DF-E6EDF4FB0209 "));
	assert_non_null(strstr(t, "m=0f:30:51:72:93:b4 mm=0f30517293b4 "));
	assert_non_null(strstr(t, "mr=b4:93:72:51:30:0f mf=0f-30-51-72-93-b4 c=>c< x=3 "));
	assert_non_null(
		strstr(t, "s=[hello] p=[      3] l=[hello  ] h=de ad be ef 01 hs=a0a7aeb5 "));
	assert_non_null(strstr(t, "da=222 173 190 239 1 dl=5 "));
	assert_non_null(strstr(t, "hb=de:ad:be:ef:01 t=A|B z=hello sym=[0x3] k=0x3K"));

	/* Narrow widths, other flags. */
	n = make_more(d, sizeof(d), "a longer name", buf, 2, 4, 0, 2, 1);
	t = both(set, d, n);
	assert_non_null(strstr(t, "sym=[one     ]"));
	n = make_more(d, sizeof(d), "x", buf, 1, 9, -5, 0, 0);
	both(set, d, n);
	/*
	 * A negative '*' value: libtraceevent then calls printf() without
	 * the int (undefined, it crashes or pads for ever), so the record
	 * fails with the marker instead.
	 */
	n = make_more(d, sizeof(d), "x", buf, 1, 9, 1, -12, 0);
	{
		struct tk_outbuf out;

		assert_int_equal(tk_outbuf_init(&out, -1, 0), 0);
		assert_int_equal(tk_event_print_info(set, ev, d, n, 0, 0, &out), -EBADMSG);
		assert_int_equal(out.len, 18);
		tk_outbuf_release(&out);
	}
	n = make_more(d, sizeof(d), "x", buf, 0, 0, 0, 0, 2);
	both(set, d, n);
	/* A flags value past the table of ready texts, inside a ternary: printed bit by bit. */
	n = make_more(d, sizeof(d), "x", buf, 0, 0, 0, 0, 0x10003);
	assert_non_null(strstr(both(set, d, n), "t=A|B|0x10000"));

	/* Empty arrays, an empty string, an empty mask. */
	n = make_more(d, sizeof(d), "", buf, 0, 0, 1, 5, 0);
	t = both(set, d, n);
	assert_non_null(strstr(t, "h= hs="));
	assert_non_null(strstr(t, "t=none"));

	/* A width beyond what the compiled form pads: the slow path, same text. */
	n = make_more(d, sizeof(d), "y", buf, 3, 4, 1, 5000, 0);
	both(set, d, n);

	/* A dynamic array pointing past the record: same text, no crash. */
	n = make_more(d, sizeof(d), "z", buf, 5, 8, 1, 3, 1);
	d[42] = 0x40; /* buf's length 0x40 + offset > record */
	both(set, d, n);
	d[40] = 0xff; /* and its offset too */
	d[41] = 0x7f;
	both(set, d, n);
	/* Too short for the fixed fields. */
	print(set, d, 50, 0);
	tk_event_set_free(set);
}

/* Every low byte of prev_state, and bits above it, as the sched plugin prints them. */
static void test_sched_switch_states(void **state)
{
	const uint64_t high[] = {0x100, 0x1ff, 0x400, 0x8000000000000001ull};
	struct tk_event_set *set = switch_set("13047 sleep\n");
	uint8_t d[64];

	(void)state;
	if (!set)
		skip();
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The usual layout, in our byte order: read from the fixed places. */
	assert_true(tk_event_find(set, 20)->sched_fixed);
#endif
	make_switch(d, "bash", 13047);
	for (uint64_t v = 0; v < 256 + sizeof(high) / sizeof(high[0]); v++) {
		uint64_t st = v < 256 ? v : high[v - 256];

		memcpy(d + 32, &st, 8);
		both(set, d, sizeof(d));
	}
	{
		uint64_t st = 0x83;

		memcpy(d + 32, &st, 8);
		assert_non_null(strstr(both(set, d, sizeof(d)), "[120] S|D|W ==> "));
	}
	tk_event_set_free(set);
}

/* sched_switch with a 2-byte prev_prio: the mirror reads through the fields. */
static const char fmt_switch_odd[] =
	"name: sched_switch\nID: 20\nformat:\n" COMMON
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:short prev_prio;\toffset:28;\tsize:2;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%d ==> next_comm=%s "
	"next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, "
	"REC->prev_state, REC->next_comm, REC->next_pid, REC->next_prio\n";

static void test_sched_switch_odd_sizes(void **state)
{
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	const struct tk_event *ev;
	uint8_t d[64];

	(void)state;
	assert_non_null(set);
	assert_int_equal(
		tk_event_set_add_format(set, "sched", fmt_switch_odd, strlen(fmt_switch_odd)), 20);
	assert_int_equal(tk_event_set_load_plugins(set), 0);
	ev = tk_event_find(set, 20);
	assert_non_null(ev);
	if (ev->kind != TK_EVENT_SCHED_SWITCH) {
		tk_event_set_free(set);
		skip();
	}
	assert_false(ev->sched_fixed);
	assert_int_equal(tk_event_set_add_cmdlines(set, "13047 sleep\n", 12), 0);
	make_switch(d, "bash", 13047);
	for (int64_t st = 0; st < 4; st++) {
		memcpy(d + 32, &st, 8);
		assert_non_null(strstr(both(set, d, sizeof(d)), "[120] "));
	}
	tk_event_set_free(set);
}

/*
 * sched_switch as this kernel (6.18) prints it without the sched plugin,
 * which is how perf script prints it: the state mask is built from
 * "0x00000000 | 0x00000001 | ..." constants (folded once at compile time)
 * and a ternary chooses between __print_flags() and "R".
 */
static const char fmt_switch_kernel[] =
	"name: sched_switch\nID: 40\nformat:\n" COMMON SWITCH_FIELDS "print fmt: "
	"\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d nex"
	"t_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x000"
	"00000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x"
	"00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001"
	" | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << "
	"1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0"
	"x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" },"
	" { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | 0x00000001 | 0x000000"
	"02 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" "
	": \"\", REC->next_comm, REC->next_pid, REC->next_prio"
	"\n";

static void test_sched_switch_unplugged(void **state)
{
	static const int64_t states[] = {0, 1, 2, 3, 0x80, 0x100, 0x101, 0x7f, 0xff, -1};
	struct tk_event_set *set = new_set();
	const struct tk_event *ev;
	uint8_t d[64];

	(void)state;
	ev = add_compiled(set, "sched", fmt_switch_kernel, 40);
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		int32_t pid = 1234, prio = 120, npid = 0, nprio = 98;

		memset(d, 0, sizeof(d));
		d[0] = 40;
		memcpy(d + 8, "kworker/0:1", 11);
		memcpy(d + 24, &pid, 4);
		memcpy(d + 28, &prio, 4);
		memcpy(d + 32, &states[i], 8);
		memcpy(d + 40, "swapper/0", 9);
		memcpy(d + 56, &npid, 4);
		memcpy(d + 60, &nprio, 4);
		both(set, d, sizeof(d));
	}
	/* The state ternary prints from one table: every value in it and past it. */
	for (size_t i = 0; i < ev->nops; i++)
		if (ev->ops[i].kind == TK_OP_COND)
			assert_non_null(ev->ops[i].ftab);
	for (int64_t s = 0; s < 2 * TK_FLAGS_TABLE + 2; s++) {
		memcpy(d + 32, &s, 8);
		both(set, d, sizeof(d));
	}
	memcpy(d + 32, &states[sizeof(states) / sizeof(states[0]) - 1], 8);
	assert_string_equal(print(set, d, sizeof(d), 0),
			    "prev_comm=kworker/0:1 prev_pid=1234 prev_prio=120 "
			    "prev_state=S|D|T|t|X|Z|P|I+ ==> next_comm=swapper/0 next_pid=0 "
			    "next_prio=98");
	memset(d + 32, 0, 8);
	d[32] = 0x02;
	assert_non_null(strstr(print(set, d, sizeof(d), 0), " prev_state=D ==> "));
	d[32] = 0;
	assert_non_null(strstr(print(set, d, sizeof(d), 0), " prev_state=R ==> "));
	d[33] = 1;
	assert_non_null(strstr(print(set, d, sizeof(d), 0), " prev_state=R+ ==> "));
	tk_event_set_free(set);
}

/*
 * printk_formats from a file: a line without ':', one with nothing after
 * it and a format too short for libtraceevent's quote stripping made
 * libtraceevent read past its buffers (ASan saw it); they are skipped with
 * one warning and the good lines still resolve %s of a printk address.
 */
static void test_printk_formats_untrusted(void **state)
{
	static const char fmt_str[] = "name: t_ptr\nID: 50\nformat:\n" COMMON
				      "\tfield:const char * str;\toffset:8;\tsize:8;\tsigned:0;\n\n"
				      "print fmt: \"%s\", REC->str\n";
	static const char printk[] = "0xffffffff81000010 : \"hello %d\\n\"\n"
				     "no colon on this line\n"
				     "\n"
				     "0xffffffff81000020 :\n"
				     "0xffffffff81000030 : \"a\"\n"
				     "::\n"
				     "0xffffffff81000040:";
	struct tk_event_set *set = new_set();
	uint64_t addr = 0xffffffff81000010ull;
	uint8_t d[16] = {50, 0};

	(void)state;
	tk_log_set_handler(tk_test_catch_warning, NULL, TK_LOG_WARN);
	tk_test_warnings = 0;
	assert_int_equal(tk_event_set_add_printk(set, printk, sizeof(printk) - 1), 0);
	tk_log_set_handler(NULL, NULL, TK_LOG_WARN);
	assert_int_equal(tk_test_warnings, 1);
	assert_non_null(strstr(tk_test_last_warning, "4 printk format lines"));
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_str, strlen(fmt_str)), 50);
	memcpy(d + 8, &addr, 8);
	assert_string_equal(print(set, d, sizeof(d), 0), "hello %d");
	tk_event_set_free(set);
}

/* An address printed as %ps and %pS, for the kallsyms tests. */
static const char fmt_sym[] = "name: t_ip\nID: 51\nformat:\n" COMMON
			      "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\n"
			      "print fmt: \"%ps %pS\", (void *)REC->ip, (void *)REC->ip\n";

/* A kallsyms source counting how often it is asked. */
struct ksym_source_arg {
	const char *text;
	int calls;
};

static int count_source(void *arg, const char **text, size_t *len)
{
	struct ksym_source_arg *a = arg;

	a->calls++;
	if (!a->text)
		return -1;
	*text = a->text;
	*len = strlen(a->text);
	return 0;
}

/*
 * A kallsyms source is asked once, when a symbol is first printed, and
 * never by a set that prints none; one that fails leaves addresses as
 * numbers, as no kallsyms would.
 */
static void test_ksym_source(void **state)
{
	static const char syms[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t foo\n"
				   "ffffffff81000200 T bar\n";
	struct ksym_source_arg arg = {syms, 0}, none = {NULL, 0};
	struct tk_event_set *set = new_set(), *plain = new_set();
	uint8_t d[16] = {51, 0};

	(void)state;
	assert_int_equal(tk_event_set_add_kallsyms_source(set, count_source, &arg), 0);
	add_compiled(set, "test", fmt_sym, 51);
	assert_int_equal(arg.calls, 0);
	memcpy(d + 8, &(uint64_t){0xffffffff81000104ull}, 8);
	assert_string_equal(both(set, d, sizeof(d)), "foo foo+0x4");
	assert_string_equal(print(set, d, sizeof(d), 0), "foo foo+0x4");
	assert_int_equal(arg.calls, 1);
	tk_event_set_free(set);

	assert_int_equal(tk_event_set_add_kallsyms_source(plain, count_source, &none), 0);
	add_compiled(plain, "test", fmt_sym, 51);
	assert_int_equal(none.calls, 0);
	assert_string_equal(both(plain, d, sizeof(d)), "0xffffffff81000104 0xffffffff81000104");
	assert_int_equal(none.calls, 1);
	tk_event_set_free(plain);
}

/*
 * kallsyms in address order (as /proc/kallsyms lists them) takes the sort's
 * shortcut, and borrowed text need not end in a NUL: the symbol chosen
 * for every address, equal addresses included, is libtraceevent's (the
 * slow path parses a C-string copy of the borrowed text).
 */
static void test_ksym_sorted_borrowed(void **state)
{
	static const char syms[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 t __do_sys_x\n"
		"ffffffff81000100 T __ia32_sys_x\n"
		"ffffffff81000100 T __x64_sys_x\n"
		"ffffffff81000180 A absolute_one\n"
		"ffffffff81000200 T later_fn [mod]\n"
		"ffffffff81000280 T a_function_name_longer_than_thirty_two_bytes\n"
		"ffffffff81000300 T last_fn";
	const uint64_t addrs[] = {0xffffffff81000000ull, 0xffffffff81000100ull,
				  0xffffffff81000104ull, 0xffffffff81000180ull,
				  0xffffffff81000200ull, 0xffffffff81000284ull,
				  0xffffffff81000301ull, 0xffffffff80000000ull};
	struct tk_event_set *set = new_set();
	/* The text, then bytes that must not be read as more lines. */
	char text[sizeof(syms) + 32];
	uint8_t d[16] = {51, 0};

	(void)state;
	memcpy(text, syms, sizeof(syms) - 1);
	memcpy(text + sizeof(syms) - 1, "\nffffffff81000104 T not_a_symbol\n", 33);
	assert_int_equal(tk_event_set_add_kallsyms_borrowed(set, text, sizeof(syms) - 1), 0);
	add_compiled(set, "test", fmt_sym, 51);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		const char *t;

		memcpy(d + 8, &addrs[i], 8);
		t = both(set, d, sizeof(d));
		assert_null(strstr(t, "not_a_symbol"));
	}
	memcpy(d + 8, &addrs[2], 8);
	assert_string_equal(print(set, d, sizeof(d), 0), "__do_sys_x __do_sys_x+0x4");
	/* Names are copied 32 bytes at a time: the text past them must not show. */
	memcpy(d + 8, &addrs[4], 8);
	assert_string_equal(print(set, d, sizeof(d), 0), "later_fn later_fn+0x0");
	memcpy(d + 8, &addrs[5], 8);
	assert_string_equal(print(set, d, sizeof(d), 0),
			    "a_function_name_longer_than_thirty_two_bytes "
			    "a_function_name_longer_than_thirty_two_bytes+0x4");
	/* The last name ends the borrowed text: no 32 bytes to copy there. */
	memcpy(d + 8, &(uint64_t){0xffffffff81000300ull}, 8);
	assert_string_equal(both(set, d, sizeof(d)), "last_fn last_fn+0x0");
	tk_event_set_free(set);
}

/*
 * The fast line parser reads the kernel's lowercase digits a word at a
 * time; uppercase or short addresses go through the general one: every
 * digit value in both cases, equal addresses across the two, and the
 * shortest lines an entry can have (the table is sized by that bound).
 */
static void test_ksym_hex_digits(void **state)
{
	static const char syms[] = "0123456789abcdef T all_digits\n"
				   "0123456789ABCDEF t upper_same\n"
				   "8100a0f0 T short_addr\n"
				   "fedcba9876543210 T desc\n"
				   "fedcba98765432a0 T desc_2\n"
				   "FEDCBA98765432B0 T upper_after\n"
				   "ffffffff8100c0d0 T last\n";
	const uint64_t addrs[] = {0x0123456789abcdefull, 0x0123456789abcdf0ull,
				  0x8100a0f4ull,	 0xfedcba9876543214ull,
				  0xfedcba98765432a0ull, 0xfedcba98765432b8ull,
				  0xffffffff8100c0d1ull, 0x10};
	struct tk_event_set *set = new_set();
	uint8_t d[16] = {51, 0};
	char tiny[4 * 600 + 1];

	(void)state;
	assert_int_equal(tk_event_set_add_kallsyms(set, syms, strlen(syms)), 0);
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_sym, strlen(fmt_sym)), 51);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		memcpy(d + 8, &addrs[i], 8);
		both(set, d, sizeof(d));
	}
	assert_int_equal(set->nksyms, 7);
	memcpy(d + 8, &addrs[3], 8);
	assert_string_equal(print(set, d, sizeof(d), 0), "desc desc+0x4");
	memcpy(d + 8, &addrs[5], 8);
	assert_string_equal(print(set, d, sizeof(d), 0), "upper_after upper_after+0x8");
	tk_event_set_free(set);

	for (int i = 0; i < 600; i++)
		memcpy(tiny + 4 * i,
		       (const char[]){"123456789"[i % 9], 't', (char)('a' + i % 26), '\n'}, 4);
	tiny[4 * 600] = '\0';
	set = new_set();
	assert_int_equal(tk_event_set_add_kallsyms(set, tiny, 4 * 600), 0);
	assert_int_equal(tk_event_set_add_format(set, "test", fmt_sym, strlen(fmt_sym)), 51);
	for (uint64_t a = 0; a < 12; a++) {
		memcpy(d + 8, &a, 8);
		both(set, d, sizeof(d));
	}
	assert_int_equal(set->nksyms, 600);
	tk_event_set_free(set);
}

/*
 * A name looked up before the table is built: a scan of the text answers
 * when no line can name it (writeback's jiffies in a kernel built without
 * KALLSYMS_ALL), and the table is then not built; whatever the scan
 * answers, it is what the table answers.
 */
static void test_ksym_name_scan(void **state)
{
	static const char *const texts[] = {
		/* Only inside or at the end of other names: no table. */
		"ffffffff81000000 T msecs_to_jiffies\nffffffff81000010 T jiffies_to_msecs\n"
		"ffffffff81000020 t get_jiffies\t[mod]\n",
		"ffffffff81000000 T _stext\nffffffff82000000 D jiffies\n",
		"ffffffff81000000 T _stext\nffffffff82000000 D jiffies",
		/* Other layouts: the type right before the name, blanks, a module. */
		"1 Tjiffies\n2 t x\n",
		"  ffff  d  jiffies\t[mod]\n",
		"ffffffff81000000 T a\nffffffff82000000 a jiffies\n",
		"ffffffff81000000 T a\nffffffff82000000 D $jiffies\n",
		/* After a line the parse stops at. */
		"ffffffff81000000 T a\nzz\nffffffff82000000 D jiffies\n",
		"ffffffff81000000 T a\nffffffff82000000 D jiffies\nffffffff81000000 T jiffies\n",
	};
	static const char *const names[] = {
		"jiffies", "msecs_to_jiffies", "jiffies_to", "get_jiffies", "x", "mod"};

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			struct tk_event_set *set = new_set(), *ref = new_set();
			uint64_t want, got;

			assert_int_equal(tk_event_set_add_kallsyms(set, texts[i], strlen(texts[i])),
					 0);
			assert_int_equal(tk_event_set_add_kallsyms(ref, texts[i], strlen(texts[i])),
					 0);
			tk_event_ksym_prepare(ref);
			want = tk_event_ksym_addr(ref, names[j]);
			got = tk_event_ksym_addr(set, names[j]);
			assert_int_equal(got, want);
			/* Asked again, from the remembered scan or the table. */
			assert_int_equal(tk_event_ksym_addr(set, names[j]), want);
			if (i == 0 && !strcmp(names[j], "jiffies"))
				assert_false(set->ksym_built);
			tk_event_set_free(set);
			tk_event_set_free(ref);
		}
	}
}

/* A name in a print format, looked up in kallsyms (writeback's jiffies). */
static const char fmt_age[] = "name: t_age\nID: 52\nformat:\n" COMMON
			      "\tfield:unsigned long when;\toffset:8;\tsize:8;\tsigned:0;\n\n"
			      "print fmt: \"age=%lu\", (jiffies - REC->when) / 250\n";

/* @text (@len bytes) in a fresh mapping, @off bytes in (a copy's text follows its header). */
static void *map_text(const char *text, size_t len, size_t off, size_t *map_len)
{
	void *m;

	*map_len = off + len;
	m = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	memcpy((char *)m + off, text, len);
	return m;
}

/*
 * The kernel image's lines alone (a kept copy, ksyms-copy.c) name every
 * address as the whole text does: an address above the image's last
 * symbol, one that names share, or a name the image lacks reads the whole
 * text (from its file) first, and nothing else does.
 */
static void test_ksym_image(void **state)
{
	static const char image[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000100 t __do_sys_x\n"
				    "ffffffff81000100 T __x64_sys_x\n"
				    "ffffffff81000180 A absolute_one\n"
				    "ffffffff81000200 T timer_fn\n"
				    "ffffffff81000300 T last_image_fn\n";
	static const char tail[] = "ffffffffc0001000 t mod_fn\t[mod]\n"
				   "ffffffffc0001100 d mod_var\t[mod]\n";
	const uint64_t safe[] = {0xffffffff81000000ull, 0xffffffff81000104ull,
				 0xffffffff81000200ull, 0xffffffff81000240ull,
				 0xffffffff81000300ull, 0xffffffff80000000ull};
	const uint64_t unsafe[] = {0xffffffff81000100ull, 0xffffffff81000301ull,
				   0xffffffffc0001004ull};
	char path[] = "/tmp/tk-test-ksym-XXXXXX", whole[512];
	struct tk_event_set *ref = new_set(), *set;
	uint8_t d[16] = {51, 0};
	size_t map_len;
	void *map;
	int fd;

	(void)state;
	snprintf(whole, sizeof(whole), "%s%s", image, tail);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, whole, strlen(whole)), (ssize_t)strlen(whole));
	close(fd);
	assert_int_equal(tk_event_set_add_kallsyms(ref, whole, strlen(whole)), 0);
	add_compiled(ref, "test", fmt_sym, 51);

	for (size_t u = 0; u <= sizeof(unsafe) / sizeof(unsafe[0]); u++) {
		set = new_set();
		map = map_text(image, strlen(image), 24, &map_len);
		assert_int_equal(tk_event_set_add_kallsyms_image(set, (char *)map + 24,
								 strlen(image), map, map_len, path),
				 0);
		add_compiled(set, "test", fmt_sym, 51);
		for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++) {
			memcpy(d + 8, &safe[i], 8);
			assert_string_equal(print(set, d, sizeof(d), 0),
					    print(ref, d, sizeof(d), 0));
		}
		assert_false(set->ksym_full_built);
		assert_int_equal(tk_event_ksym_addr(set, "timer_fn"), 0xffffffff81000200ull);
		assert_false(set->ksym_full_built);
		if (u < sizeof(unsafe) / sizeof(unsafe[0])) {
			memcpy(d + 8, &unsafe[u], 8);
			assert_string_equal(print(set, d, sizeof(d), 0),
					    print(ref, d, sizeof(d), 0));
		} else {
			assert_int_equal(tk_event_ksym_addr(set, "mod_var"), 0xffffffffc0001100ull);
		}
		assert_true(set->ksym_full_built);
		/* Every answer, those the image gave before included, is still the whole text's. */
		for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++) {
			memcpy(d + 8, &safe[i], 8);
			assert_string_equal(print(set, d, sizeof(d), 0),
					    print(ref, d, sizeof(d), 0));
		}
		for (size_t i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
			memcpy(d + 8, &unsafe[i], 8);
			assert_string_equal(print(set, d, sizeof(d), 0),
					    print(ref, d, sizeof(d), 0));
			assert_string_equal(print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW),
					    print(ref, d, sizeof(d), TK_EVENT_PRINT_SLOW));
		}
		tk_event_set_free(set);
	}

	/* A name no line lists (a variable of a kernel without KALLSYMS_ALL): the whole text. */
	set = new_set();
	map = map_text(image, strlen(image), 24, &map_len);
	assert_int_equal(tk_event_ksym_addr(set, "nothing"), 0);
	assert_int_equal(tk_event_set_add_kallsyms_image(set, (char *)map + 24, strlen(image), map,
							 map_len, path),
			 0);
	assert_int_equal(tk_event_ksym_addr(set, "jiffies"), 0);
	assert_true(set->ksym_full_built);
	tk_event_set_free(set);

	/* Compiled events that name such a variable already: the image is not taken. */
	set = new_set();
	map = map_text(image, strlen(image), 24, &map_len);
	add_compiled(set, "test", fmt_age, 52);
	assert_int_equal(tk_event_set_add_kallsyms_image(set, (char *)map + 24, strlen(image), map,
							 map_len, path),
			 -1);
	assert_false(set->ksym_partial);
	munmap(map, map_len);
	tk_event_set_free(set);
	tk_event_set_free(ref);
	unlink(path);
}

/*
 * The whole text a partial set reads keeps only what follows the image's
 * lines when it begins with them and lists nothing at or below the
 * image's last address; any other whole text is kept whole. Every answer,
 * ours and libtraceevent's, is the whole text's either way. Texts of more
 * than one read (64 KiB), so that a difference may come after the first.
 */
static void test_ksym_image_whole(void **state)
{
	enum { LINES = 4000 };
	const char *tails[] = {
		"ffffffffc0001000 t mod_fn\t[mod]\nffffffffc0001100 d mod_var\t[mod]\n",
		"ffffffff81000040 t low_fn\t[mod]\n"};
	const uint64_t addrs[] = {0xffffffff81000000ull, 0xffffffff81000105ull,
				  0xffffffff81000bb8ull, 0xffffffff81000f9full,
				  0xffffffff81001000ull, 0xffffffffc0001004ull,
				  0xffffffffc0001100ull, 0xffffffff81000041ull};
	size_t ilen = 0, cap = LINES * 40;
	char *image = malloc(cap), *whole = malloc(cap + 256);
	char path[] = "/tmp/tk-test-ksymw-XXXXXX";
	uint8_t d[16] = {51, 0};

	(void)state;
	assert_non_null(image);
	assert_non_null(whole);
	for (unsigned int i = 0; i < LINES; i++)
		ilen += (size_t)snprintf(image + ilen, cap - ilen, "ffffffff81%06x T fn_%05u\n", i,
					 i);
	/* 0: image and modules; 1: a line changed past the first read; 2: a low tail; 3: short */
	for (int v = 0; v < 4; v++) {
		struct tk_event_set *ref = new_set(), *set = new_set();
		size_t wlen = v == 3 ? ilen / 2 : ilen, map_len;
		char *hit;
		void *map;
		int fd;

		memcpy(whole, image, wlen);
		if (v == 1) {
			hit = strstr(whole, " fn_03000\n");
			assert_non_null(hit);
			hit[4] = '9';
		}
		if (v != 3)
			wlen += (size_t)sprintf(whole + wlen, "%s", tails[v == 2]);
		fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, whole, wlen), (ssize_t)wlen);
		close(fd);
		assert_int_equal(tk_event_set_add_kallsyms(ref, whole, wlen), 0);
		add_compiled(ref, "test", fmt_sym, 51);
		map = map_text(image, ilen, 24, &map_len);
		assert_int_equal(tk_event_set_add_kallsyms_image(set, (char *)map + 24, ilen, map,
								 map_len, path),
				 0);
		add_compiled(set, "test", fmt_sym, 51);
		assert_int_equal(tk_event_ksym_addr(set, "nothing"), 0);
		assert_true(set->ksym_full_built);
		assert_int_equal(set->ksym_full_split, v == 0);
		assert_int_equal(tk_event_ksym_addr(set, "mod_var"),
				 tk_event_ksym_addr(ref, "mod_var"));
		/* A name the image lists is the image's (a valid copy begins the whole text). */
		if (v != 3)
			assert_int_equal(tk_event_ksym_addr(set, "fn_03999"),
					 tk_event_ksym_addr(ref, "fn_03999"));
		for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
			memcpy(d + 8, &addrs[i], 8);
			assert_string_equal(print(set, d, sizeof(d), 0),
					    print(ref, d, sizeof(d), 0));
			assert_string_equal(print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW),
					    print(ref, d, sizeof(d), TK_EVENT_PRINT_SLOW));
		}
		tk_event_set_free(set);
		tk_event_set_free(ref);
		unlink(path);
		strcpy(path, "/tmp/tk-test-ksymw-XXXXXX");
	}
	free(image);
	free(whole);
}

/* A table file header's size (event.c's struct ksym_tab_header). */
#define TAB_HEADER 40

/* A partial set of @image and its table file @tab (key @key), built. */
static struct tk_event_set *tab_set(const char *image, size_t ilen, const char *whole_path,
				    const char *tab, uint64_t key)
{
	struct tk_event_set *set = new_set();
	size_t map_len;
	void *map = map_text(image, ilen, 24, &map_len);

	assert_int_equal(tk_event_set_add_kallsyms_image(set, (char *)map + 24, ilen, map, map_len,
							 whole_path),
			 0);
	assert_int_equal(tk_event_set_kallsyms_table(set, tab, key), 0);
	add_compiled(set, "test", fmt_sym, 51);
	tk_event_ksym_prepare(set);
	return set;
}

/* An entry of the table file @tab, read or written. */
static void tab_entry(const char *tab, size_t i, struct tk_ksym *k, bool write)
{
	FILE *f = fopen(tab, write ? "r+b" : "rb");

	assert_non_null(f);
	assert_int_equal(fseek(f, (long)(TAB_HEADER + i * sizeof(*k)), SEEK_SET), 0);
	if (write)
		assert_int_equal(fwrite(k, sizeof(*k), 1, f), 1);
	else
		assert_int_equal(fread(k, sizeof(*k), 1, f), 1);
	fclose(f);
}

/*
 * The image's table kept in a file: written by the first set, read by the
 * next of the same key; one of another key, or a file with a name outside
 * the image, parses the lines again and writes the file anew. Every
 * answer is the whole text's.
 */
static void test_ksym_table(void **state)
{
	enum { LINES = 3000 };
	static const char tail[] = "ffffffffc0001000 t mod_fn\t[mod]\n";
	const uint64_t addrs[] = {0xffffffff81000000ull, 0xffffffff81000105ull,
				  0xffffffff81000bb7ull, 0xffffffff81000bb8ull,
				  0xffffffffc0001004ull};
	size_t ilen = 0, cap = LINES * 40, n;
	char *image = malloc(cap), *whole = malloc(cap + sizeof(tail));
	char path[] = "/tmp/tk-test-ksymt-XXXXXX", tab[64];
	struct tk_event_set *ref = new_set(), *a, *b;
	struct tk_ksym k0, k;
	uint8_t d[16] = {51, 0};
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(image);
	assert_non_null(whole);
	for (unsigned int i = 0; i < LINES; i++)
		ilen += (size_t)snprintf(image + ilen, cap - ilen, "ffffffff81%06x T fn_%05u\n", i,
					 i);
	memcpy(whole, image, ilen);
	memcpy(whole + ilen, tail, sizeof(tail));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, whole, strlen(whole)), (ssize_t)strlen(whole));
	close(fd);
	snprintf(tab, sizeof(tab), "%s.tab", path);
	unlink(tab);
	assert_int_equal(tk_event_set_add_kallsyms(ref, whole, strlen(whole)), 0);
	add_compiled(ref, "test", fmt_sym, 51);

	a = tab_set(image, ilen, path, tab, 42);
	n = a->nksyms;
	assert_int_equal(n, LINES);
	assert_int_equal(stat(tab, &st), 0);
	assert_int_equal((size_t)st.st_size, TAB_HEADER + n * sizeof(struct tk_ksym));
	/* Read back: an entry changed in the file (still sorted) is the set's. */
	tab_entry(tab, 1, &k0, false);
	k = k0;
	k.addr = a->ksyms[0].addr;
	tab_entry(tab, 1, &k, true);
	b = tab_set(image, ilen, path, tab, 42);
	assert_int_equal(b->nksyms, n);
	assert_true(b->ksym_img_whole);
	assert_int_equal(b->ksyms[1].addr, a->ksyms[0].addr);
	tk_event_set_free(b);
	/* Another key, then a name outside the image: parsed again, the file written anew. */
	for (int v = 0; v < 2; v++) {
		if (v) {
			k = k0;
			k.name_off = (uint32_t)ilen;
			tab_entry(tab, 1, &k, true);
		}
		b = tab_set(image, ilen, path, tab, 43);
		assert_int_equal(b->nksyms, n);
		assert_memory_equal(b->ksyms, a->ksyms, n * sizeof(*a->ksyms));
		tab_entry(tab, 1, &k, false);
		assert_memory_equal(&k, &k0, sizeof(k));
		for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
			memcpy(d + 8, &addrs[i], 8);
			assert_string_equal(print(b, d, sizeof(d), 0), print(ref, d, sizeof(d), 0));
		}
		tk_event_set_free(b);
	}
	tk_event_set_free(a);
	tk_event_set_free(ref);
	unlink(tab);
	unlink(path);
	free(image);
	free(whole);
}

/* A length no record can hold: a marker and -EBADMSG, never libtraceevent's read past memory. */
static void test_hex_bad_length(void **state)
{
	static const char fmt_h[] = "name: t21\nID: 31\nformat:\n" COMMON
				    "\tfield:u8 b[8];\toffset:8;\tsize:8;\tsigned:0;\n"
				    "\tfield:unsigned int n;\toffset:16;\tsize:4;\tsigned:0;\n\n"
				    "print fmt: \"%s|%s\", __print_hex(REC->b, REC->n), "
				    "__print_array(REC->b, REC->n, 2)\n";
	struct tk_event_set *set = new_set();
	const struct tk_event *ev;
	struct tk_outbuf out;
	uint8_t d[24] = {31, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
	uint32_t n;

	(void)state;
	ev = add_compiled(set, "test", fmt_h, 31);
	for (n = 0; n <= 4; n++) {
		memcpy(d + 16, &n, 4);
		both(set, d, sizeof(d));
	}
	/* Past the record but inside the slow path's zeroed scratch: its text. */
	n = 100;
	memcpy(d + 16, &n, 4);
	both(set, d, sizeof(d));
	n = 0x40000000;
	memcpy(d + 16, &n, 4);
	assert_int_equal(tk_outbuf_init(&out, -1, 0), 0);
	assert_int_equal(tk_event_print_info(set, ev, d, sizeof(d), 0, 0, &out), -EBADMSG);
	assert_int_equal(out.len, 18);
	assert_memory_equal(out.buf, "[truncated record]", 18);
	tk_outbuf_release(&out);
	tk_event_set_free(set);
}

/* The digit-pair decimal and hex writers against printf, at every length boundary. */
static void test_number_text(void **state)
{
	uint64_t v[200];
	size_t n = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (uint64_t p = 1; n < 60; p *= 10) {
		v[n++] = p - 1;
		v[n++] = p;
		v[n++] = p + 1;
		if (p > UINT64_MAX / 10)
			break;
	}
	for (int b = 0; b < 64; b += 4)
		v[n++] = (1ull << b) - 1;
	v[n++] = UINT32_MAX;
	v[n++] = (uint64_t)UINT32_MAX + 1;
	v[n++] = UINT64_MAX;
	while (n < sizeof(v) / sizeof(v[0])) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[n++] = x >> (x & 63);
	}
	for (size_t i = 0; i < n; i++) {
		char got[32], want[32];
		char *e = tk_put_u64(got, v[i]);

		*e = '\0';
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v[i]);
		assert_string_equal(got, want);
		e = tk_put_hex(got, v[i]);
		*e = '\0';
		snprintf(want, sizeof(want), "%llx", (unsigned long long)v[i]);
		assert_string_equal(got, want);
	}
}

/* Symbol lookups through the memo give what the search gives, found or not, repeatedly. */
static void test_ksym_memo(void **state)
{
	static const char syms[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t b_fn [mod]\n"
				   "ffffffff81000100 t a_fn\n"
				   "ffffffff81000200 T c_fn\n"
				   "ffffffff80000000 T low_fn\n";
	struct tk_event_set *set = new_set();
	const uint64_t addrs[] = {0xffffffff81000000ull,
				  0xffffffff81000104ull,
				  0xffffffff810001ffull,
				  0xffffffff81000200ull,
				  0xffffffff81000300ull,
				  0xffffffff80000010ull,
				  0x1000};
	const struct tk_ksym *first[7];

	(void)state;
	assert_int_equal(tk_event_set_add_kallsyms(set, syms, strlen(syms)), 0);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < 7; i++) {
			const struct tk_ksym *k = tk_event_ksym_find(set, NULL, addrs[i]);

			if (!round)
				first[i] = k;
			assert_ptr_equal(k, first[i]);
		}
	}
	/* Sorted by address with the later line first among equals; names measured. */
	assert_non_null(first[0]);
	assert_int_equal(first[0]->name_len, 6);
	assert_non_null(first[1]);
	assert_true(first[1] == first[2]);
	assert_int_equal(first[1]->name_len, 4);
	assert_null(first[4]);
	assert_non_null(first[5]);
	assert_int_equal(set->ksyms[0].addr, 0xffffffff80000000ull);
	assert_null(first[6]);
	/* A printer's own memo (threaded reports) gives the same answers. */
	{
		struct tk_ksym_memo *memo = calloc(TK_KSYM_MEMO, sizeof(*memo));

		assert_non_null(memo);
		for (int round = 0; round < 2; round++) {
			for (size_t i = 0; i < 7; i++)
				assert_ptr_equal(tk_event_ksym_find(set, memo, addrs[i]), first[i]);
		}
		free(memo);
	}
	tk_event_set_free(set);
}

/* The lazy table's answer for @a is the whole table's (@ref), found or not. */
static void lazy_same(struct tk_event_set *set, struct tk_event_set *ref, uint64_t a)
{
	const struct tk_ksym *k = tk_event_ksym_find(set, NULL, a);
	const struct tk_ksym *r = tk_event_ksym_find(ref, NULL, a);

	if (!r) {
		assert_null(k);
		return;
	}
	assert_non_null(k);
	assert_int_equal(k->addr, r->addr);
	assert_int_equal(k->name_off, r->name_off);
	assert_int_equal(k->name_len, r->name_len);
}

/* Every line's address, its neighbours, and the ends of the address space. */
static void lazy_all(struct tk_event_set *set, struct tk_event_set *ref, const char *text)
{
	lazy_same(set, ref, 0);
	lazy_same(set, ref, ~0ull);
	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		uint64_t a = strtoull(p, NULL, 16);

		lazy_same(set, ref, a - 1);
		lazy_same(set, ref, a);
		lazy_same(set, ref, a + 1);
		lazy_same(set, ref, a + 0x7f);
	}
}

/*
 * kallsyms in the kernel's layout and address order is checked, not
 * parsed: lookups search its lines and answer as the whole table does
 * (equal addresses, skipped lines at either side, below the first entry,
 * above the last, a last line without its newline); an address several
 * entries hold, unsorted lines, another layout, a name's address or many
 * lookups build the table, and answers given before stay the same.
 */
static void test_ksym_lazy(void **state)
{
	static const char *const texts[] = {
		"ffffffff80000000 a skipped_first\n"
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 t tie_1\n"
		"ffffffff81000100 T tie_2\n"
		"ffffffff81000100 T $tie_skipped\n"
		"ffffffff81000180 A absolute_one\n"
		"ffffffff81000200 T alone\t[mod]\n"
		"ffffffff81000200 a alone_abs\n"
		"ffffffff81000280 t after_abs\r\n"
		"ffffffff81000300 T last_fn\n"
		"ffffffff81000400 A abs_after_last\n",
		"0000000000001000 T one\n",
		"0000000000001000 T one\nffffffff81000000 T no_newline",
		"ffffffff81000000 a only_skipped\nffffffff81000010 t $x\n",
		/* Not the kernel's layout or order: the table answers. */
		"ffffffff81000000 T _stext\nffffffff80000000 T below\nffffffff81000100 T c\n",
		"ffffffff81000000 T _stext\nFFFFFFFF81000100 T upper\n",
		"ffffffff81000000 T _stext\n81000100 T short\n",
		"ffffffff81000000 T _stext\n\nffffffff81000100 T after_blank\n",
	};
	char big[200 * 40 + 1], *o = big;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct tk_event_set *set = new_set(), *ref = new_set();

		assert_int_equal(tk_event_set_add_kallsyms(set, texts[i], strlen(texts[i])), 0);
		assert_int_equal(tk_event_set_add_kallsyms(ref, texts[i], strlen(texts[i])), 0);
		tk_event_ksym_table(ref);
		tk_event_ksym_prepare(set);
		assert_int_equal(set->ksym_lazy, i < 4);
		/* Not at the shared address first: these the text answers. */
		lazy_same(set, ref, 0xffffffff81000104ull);
		lazy_same(set, ref, 0xffffffff81000200ull);
		lazy_same(set, ref, 0xffffffff81000290ull);
		lazy_same(set, ref, 0xffffffff81000300ull);
		lazy_same(set, ref, 0xffffffff81000500ull);
		lazy_same(set, ref, 0xffffffff7fffffffull);
		assert_int_equal(set->ksym_lazy, i < 4);
		lazy_all(set, ref, texts[i]);
		if (i == 0)
			assert_false(set->ksym_lazy);
		tk_event_set_free(set);
		tk_event_set_free(ref);
	}

	/* More lookups than the text answers: the table takes over, and the memo's answers stay. */
	for (int i = 0; i < 200; i++)
		o += sprintf(o, "%016llx %c fn_%04d\n",
			     0xffffffff81000000ull + 0x40ull * (i / 2 * 2), i % 7 ? 't' : 'a', i);
	{
		struct tk_event_set *set = new_set(), *ref = new_set();
		struct tk_ksym_memo *memo = calloc(TK_KSYM_MEMO, sizeof(*memo));
		const struct tk_ksym *first[2048];

		assert_non_null(memo);
		assert_int_equal(tk_event_set_add_kallsyms(set, big, strlen(big)), 0);
		assert_int_equal(tk_event_set_add_kallsyms(ref, big, strlen(big)), 0);
		tk_event_ksym_table(ref);
		for (int round = 0; round < 2; round++) {
			for (uint64_t a = 0; a < 2048; a++) {
				uint64_t addr = 0xffffffff81000000ull + a * 3 + 1;
				const struct tk_ksym *k = tk_event_ksym_find(set, memo, addr);

				if (!round)
					first[a] = k;
				/* Lazy entries outlive the switch: a memo may give them. */
				assert_int_equal(!k, !first[a]);
				if (k)
					assert_memory_equal(k, first[a], sizeof(*k));
				lazy_same(set, ref, addr);
			}
			assert_false(set->ksym_lazy);
		}
		free(memo);
		tk_event_set_free(set);
		tk_event_set_free(ref);
	}
	/* A name's address needs the table. */
	{
		struct tk_event_set *set = new_set();

		assert_int_equal(tk_event_set_add_kallsyms(set, texts[0], strlen(texts[0])), 0);
		lazy_same(set, set, 0xffffffff81000104ull);
		assert_true(set->ksym_lazy);
		assert_int_equal(tk_event_ksym_addr(set, "alone"), 0xffffffff81000200ull);
		assert_false(set->ksym_lazy);
		tk_event_set_free(set);
	}
}

/*
 * Format texts are checked for the kernel's shape before libtraceevent
 * sees them: texts that crashed its tep_parse_format() are refused with a
 * message naming the line; the kernel's own shapes (no signed:, a raw
 * newline inside the format string, blank lines) pass.
 */
static void test_format_shape_checked(void **state)
{
	static const char *const bad[] = {
		/* the fuzz-event finding: a field line cut short */
		"name:0\nID:0\nformat:\nfield:_",
		"name: t\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\n", /* no print fmt */
		"name: t\nID: 1\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\nprint fmt: \"\"\n",
		"name: t\nID: 1\nformat:\n\tfield:int a\n\nprint fmt: \"%d\", REC->a\n",
		"name: t\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\nprint fmt: \"%d, "
		"REC->a\n",
		"name: t\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\nprint fmt: \"%d\", "
		"(REC->a\n",
		"name: t\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\nprint fmt: \"%d\", "
		"REC->a)\n",
		/* a field line after the print format (what crashed in the fuzzer) */
		"name: t\nID: 1\nformat:\nprint fmt: \"%d\", REC->a\n\tfield:x(REC->a, {1, "
		"\"A\"})\n",
		"name: t\nID: 99999999999\nformat:\nprint fmt: \"\"\n",
		"name: \nID: 1\nformat:\nprint fmt: \"\"\n",
		"name: t\nID: 1\nformat:\n\tfield:int a;\toffset:4294967295;\tsize:4;\nprint fmt: "
		"\"\"\n",
	};
	static const char good_old[] = "name: t9\nID: 12\nformat:\n"
				       "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n"
				       "\tfield:int a;\toffset:8;\tsize:4;\n\n"
				       "print fmt: \"a=%d\n\", REC->a\n";
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);

	(void)state;
	assert_non_null(set);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = tk_event_set_add_format(set, "fuzz", bad[i], strlen(bad[i]));

		if (r != -EBADMSG)
			fail_msg("text %zu: returned %d, expected -EBADMSG", i, r);
		assert_non_null(strstr(tk_errmsg(), "fuzz"));
	}
	assert_errno(tk_event_set_add_format(set, "fuzz", "name: t\n\0ID: 1\n", 15), EBADMSG);
	assert_non_null(strstr(tk_errmsg(), "NUL"));
	assert_true(tk_event_set_add_format(set, "old", good_old, strlen(good_old)) >= 0);
	assert_true(tk_event_set_add_format(set, "t", fmt_t, strlen(fmt_t)) >= 0);
	tk_event_set_free(set);
}

/*
 * A '*' width read from the record, in an event the compiled printer
 * cannot take (%ls): libtraceevent pads to whatever it is given, so a
 * width of two billion once hung the report. The slow path now gets the
 * record only when its widths are in 0..65536; a width that is an
 * expression cannot be bounded and never reaches it.
 */
static void test_slow_path_star_bounded(void **state)
{
	static const char fmt_star[] = "name: tstar\nID: 31\nformat:\n" COMMON
				       "\tfield:int w;\toffset:8;\tsize:4;\tsigned:1;\n"
				       "\tfield:int v;\toffset:12;\tsize:4;\tsigned:1;\n\n"
				       "print fmt: \"p=[%*d] q=%ls\", REC->w, REC->v, REC->v\n";
	static const char fmt_expr[] =
		"name: texpr\nID: 32\nformat:\n" COMMON
		"\tfield:int w;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:int v;\toffset:12;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"p=[%*d] q=%ls\", REC->w + REC->v, REC->v, REC->v\n";
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	uint8_t rec[16] = {0};
	uint16_t type = 31;
	int32_t w = 5, v = 7;

	(void)state;
	assert_non_null(set);
	assert_int_equal(tk_event_set_add_format(set, "t", fmt_star, strlen(fmt_star)), 31);
	assert_int_equal(tk_event_set_add_format(set, "t", fmt_expr, strlen(fmt_expr)), 32);
	assert_false(tk_event_is_compiled(tk_event_find(set, 31)));
	memcpy(rec, &type, 2);
	memcpy(rec + 8, &w, 4);
	memcpy(rec + 12, &v, 4);
	assert_non_null(strstr(print(set, rec, sizeof(rec), 0), "p=[    7]"));
	w = 2000000000;
	memcpy(rec + 8, &w, 4);
	assert_string_equal(print(set, rec, sizeof(rec), 0), "[truncated record]");
	w = -3;
	memcpy(rec + 8, &w, 4);
	assert_string_equal(print(set, rec, sizeof(rec), 0), "[truncated record]");
	/* A record too short for the width's field. */
	assert_string_equal(print(set, rec, 10, 0), "[truncated record]");
	type = 32;
	w = 1;
	memcpy(rec, &type, 2);
	memcpy(rec + 8, &w, 4);
	assert_string_equal(print(set, rec, sizeof(rec), 0), "[truncated record]");
	tk_event_set_free(set);
}

/*
 * Hex dumps on the slow path: the bytes a record's length asks for must lie
 * in the record, and a dump of anything but a field or a __data_loc never
 * reaches libtraceevent's printer (it reads such an argument as a field).
 */
static void test_slow_path_hex_bounded(void **state)
{
	static const char fmt_hex[] =
		"name: thex\nID: 33\nformat:\n" COMMON
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:u8 b[4];\toffset:12;\tsize:4;\tsigned:0;\n\n"
		"print fmt: \"h=%s q=%ls\", __print_hex(REC->b, REC->n), REC->n\n";
	static const char fmt_expr[] =
		"name: thexpr\nID: 34\nformat:\n" COMMON
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:u8 b[4];\toffset:12;\tsize:4;\tsigned:0;\n\n"
		"print fmt: \"h=%s q=%ls\", __print_hex_str(REC->n - REC->n, 2), REC->n\n";
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	uint8_t rec[16] = {0};
	uint16_t type = 33;
	int32_t n = 4;

	(void)state;
	assert_non_null(set);
	assert_int_equal(tk_event_set_add_format(set, "t", fmt_hex, strlen(fmt_hex)), 33);
	assert_int_equal(tk_event_set_add_format(set, "t", fmt_expr, strlen(fmt_expr)), 34);
	assert_false(tk_event_is_compiled(tk_event_find(set, 33)));
	memcpy(rec, &type, 2);
	memcpy(rec + 8, &n, 4);
	memcpy(rec + 12, "\x01\x02\x03\x04", 4);
	assert_non_null(strstr(print(set, rec, sizeof(rec), 0), "h=01 02 03 04"));
	/* Four bytes asked from offset 12 of a 15-byte record. */
	assert_string_equal(print(set, rec, 15, 0), "[truncated record]");
	n = 5;
	memcpy(rec + 8, &n, 4);
	assert_string_equal(print(set, rec, sizeof(rec), 0), "[truncated record]");
	type = 34;
	memcpy(rec, &type, 2);
	assert_string_equal(print(set, rec, sizeof(rec), 0), "[truncated record]");
	tk_event_set_free(set);
}

/*
 * Division: libtraceevent folds two constants while parsing (a name that
 * is not a field is a constant 0 to it) and divides by a field without
 * looking when printing. Formats that would divide by zero while parsing
 * are refused; a record whose divisor field is 0 is not printed.
 */
static void test_division_by_zero(void **state)
{
#define DIV_FMT(id, args)                                                                          \
	"name: tdiv\nID: " #id "\nformat:\n" COMMON                                                \
	"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n"                                          \
	"\tfield:int w;\toffset:12;\tsize:4;\tsigned:1;\n\n"                                       \
	"print fmt: \"d=%d q=%ls\", " args ", REC->n\n"
	static const char *const refused[] = {
		DIV_FMT(40, "R/EC->w"), DIV_FMT(41, "REC->n / (0)"), DIV_FMT(42, "REC->n % 0x0"),
		DIV_FMT(43, "REC->n / 00"), DIV_FMT(44, "REC->n / x"),
		/* Not a division, the other parse-time NULL dereference: a member of a non-REC. */
		DIV_FMT(46, "REC->n ? REC->w :C->w"),
		/* No C operator. */
		DIV_FMT(48, "(REC->n)$ REC->w"), DIV_FMT(49, "(REC->n). REC->w"),
		/* A brace right after a name; a field named like a __data_loc's type. */
		DIV_FMT(50, "__print_symbolic(REC->n{ 1, \"one\" })"), DIV_FMT(51, "REC->char")};
	static const char fmt_ok[] = DIV_FMT(45, "REC->n / REC->w + REC->n / 8");
	static const char fmt_paren[] = DIV_FMT(47, "(REC)->n / 2");
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	uint8_t rec[16] = {0};
	uint16_t type = 45;
	int32_t n = 64, w = 4;

	(void)state;
	assert_non_null(set);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_true(tk_event_set_add_format(set, "t", refused[i], strlen(refused[i])) < 0);
	assert_int_equal(tk_event_set_add_format(set, "t", fmt_ok, strlen(fmt_ok)), 45);
	assert_int_equal(tk_event_set_add_format(set, "t", fmt_paren, strlen(fmt_paren)), 47);
	memcpy(rec, &type, 2);
	memcpy(rec + 8, &n, 4);
	memcpy(rec + 12, &w, 4);
	assert_non_null(strstr(print(set, rec, sizeof(rec), 0), "d=24 "));
	w = 0;
	memcpy(rec + 12, &w, 4);
	assert_string_equal(print(set, rec, sizeof(rec), 0), "[truncated record]");
	tk_event_set_free(set);
#undef DIV_FMT
}

/*
 * A .dat file holds its kallsyms and printk formats after the event
 * formats: a name in a print format (writeback's jiffies) takes its
 * address from kallsyms added later, and a %s of a long (bputs,
 * suspend_resume) the text of printk formats added later; both printed
 * as libtraceevent prints them.
 */
static void test_late_kallsyms_and_printk(void **state)
{
	static const char fmt[] =
		"name: t_late\nID: 30\nformat:\n" COMMON
		"\tfield:unsigned long when;\toffset:8;\tsize:8;\tsigned:0;\n"
		"\tfield:const char * str;\toffset:16;\tsize:8;\tsigned:0;\n\n"
		"print fmt: \"age=%lu s=%s\", (jiffies - REC->when) / 250, REC->str\n";
	static const char syms[] = "ffffffff81000000 T _stext\nffffffff82000000 D jiffies\n";
	static const char printk[] = "0xffffffff83000000 : \"hello %d\\n\"\n"
				     "0xffffffff83000100 : \"plain\"\n";
	struct tk_event_set *set = tk_event_set_new(8, false, 4096);
	uint8_t d[24] = {30, 0};
	uint64_t when = 1000, str = 0xffffffff83000000ull;
	char slow[256];

	(void)state;
	assert_non_null(set);
	add_compiled(set, "test", fmt, 30);
	memcpy(d + 8, &when, 8);
	memcpy(d + 16, &str, 8);
	/* Neither yet: jiffies is 0, the address prints in hex. */
	assert_string_equal(print(set, d, sizeof(d), 0),
			    "age=73786976294838202 s=ffffffff83000000");
	assert_int_equal(tk_event_set_add_kallsyms(set, syms, strlen(syms)), 0);
	assert_int_equal(tk_event_set_add_printk(set, printk, strlen(printk)), 0);
	assert_true(tk_event_is_compiled(tk_event_find(set, 30)));
	snprintf(slow, sizeof(slow), "%s", print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW));
	assert_string_equal(slow, "age=73786976286382485 s=hello %d");
	assert_string_equal(print(set, d, sizeof(d), 0), slow);
	str = 0xffffffff83000100ull;
	memcpy(d + 16, &str, 8);
	assert_string_equal(print(set, d, sizeof(d), 0), "age=73786976286382485 s=plain");
	assert_string_equal(print(set, d, sizeof(d), TK_EVENT_PRINT_SLOW),
			    "age=73786976286382485 s=plain");
	tk_event_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constructs),
		cmocka_unit_test(test_name_lengths),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_expressions_and_symbols),
		cmocka_unit_test(test_short_record),
		cmocka_unit_test(test_fields_and_comm),
		cmocka_unit_test(test_bad_format),
		cmocka_unit_test(test_comm_plugin_duplicates),
		cmocka_unit_test(test_comm_model_vs_tep),
		cmocka_unit_test(test_cmdlines_vs_tep),
		cmocka_unit_test(test_ip_and_index),
		cmocka_unit_test(test_number_text),
		cmocka_unit_test(test_ksym_memo),
		cmocka_unit_test(test_ksym_lazy),
		cmocka_unit_test(test_ksym_hex_digits),
		cmocka_unit_test(test_ksym_name_scan),
		cmocka_unit_test(test_ksym_image),
		cmocka_unit_test(test_ksym_image_whole),
		cmocka_unit_test(test_ksym_table),
		cmocka_unit_test(test_sched_learn_fast),
		cmocka_unit_test(test_sched_switch_states),
		cmocka_unit_test(test_sched_switch_odd_sizes),
		cmocka_unit_test(test_more_constructs),
		cmocka_unit_test(test_flags_shifted_table),
		cmocka_unit_test(test_shifted_loads),
		cmocka_unit_test(test_linear_loads),
		cmocka_unit_test(test_hex_bad_length),
		cmocka_unit_test(test_sched_switch_unplugged),
		cmocka_unit_test(test_printk_formats_untrusted),
		cmocka_unit_test(test_ksym_sorted_borrowed),
		cmocka_unit_test(test_ksym_source),
		cmocka_unit_test(test_format_shape_checked),
		cmocka_unit_test(test_slow_path_star_bounded),
		cmocka_unit_test(test_slow_path_hex_bounded),
		cmocka_unit_test(test_division_by_zero),
		cmocka_unit_test(test_late_kallsyms_and_printk),
		cmocka_unit_test(test_plugins_on_demand),
		cmocka_unit_test(test_cmdlines_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
