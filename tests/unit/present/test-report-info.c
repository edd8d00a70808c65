// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests for report-info.c, trace-cmd report's listings: the printk
 * formats and functions as libtraceevent keeps them (quotes and a final
 * "\n" cut only with a closing quote, absolute and '$' symbols left out,
 * modules after the name, ties of one address in reverse file order, the
 * kallsyms reading stopping at a line that does not scan; a format under
 * three characters, which libtraceevent reads out of bounds on, skipped),
 * the event list
 * sorted by system and name, the endianness line, the format check, and
 * the listings tracing data alone cannot give; the format texts of
 * --events and --event and -p's page sizes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tracekit/report.h>
#include <tracekit/tracedata.h>

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

/* What a listing of @td writes, as a malloc'ed string. */
static char *listing(const struct tk_tracedata *td, enum tk_report_list what, int *ret)
{
	FILE *f = tmpfile();
	char *text;
	long n;

	assert_non_null(f);
	*ret = tk_report_list_tracedata(td, what, fileno(f));
	n = lseek(fileno(f), 0, SEEK_END);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(pread(fileno(f), text, (size_t)n, 0), n);
	fclose(f);
	return text;
}

static struct tk_tracedata *new_td(void)
{
	struct tk_tracedata *td = tk_tracedata_new();

	assert_non_null(td);
	assert_int_equal(tk_tracedata_set_layout(td, false, 8, 4096), 0);
	return td;
}

static void test_printk(void **state)
{
	static const char printk[] = "0xffffffff00000010 : \"b\\n\"\n"
				     "0xffffffff00000008 : \"aa\"\n"
				     "\n"
				     "0xffffffff00000010 : \"second at 10\"\n"
				     "ffffffff00000020 : no quotes\\n\n"
				     "ffffffff00000030 : \"x\"\n"
				     "a line without a colon\n"
				     "ffffffff00000040 : \"quote\\n\" inside\"\n";
	struct tk_tracedata *td = new_td();
	char *text;
	int ret;

	(void)state;
	assert_int_equal(tk_tracedata_set_printk(td, printk, sizeof(printk) - 1), 0);
	text = listing(td, TK_REPORT_LIST_PRINTK, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "ffffffff00000008 aa\n"
				  "ffffffff00000010 second at 10\n"
				  "ffffffff00000010 b\n"
				  "ffffffff00000020 no quotes\\n\n"
				  "ffffffff00000040 quote\\n\" inside\n");
	free(text);
	tk_tracedata_free(td);
}

static void test_funcs(void **state)
{
	static const char kallsyms[] = "ffffffff81000000 T _stext\n"
				       "ffffffff81000000 T _text\n"
				       "0000000000000010 A fixed_percpu_data\n"
				       "ffffffffc0001000 t modfn\t[mymod]\n"
				       "ffffffff81000100 t $x\n"
				       "ffffffff81000200 T last\n"
				       "not an address\n"
				       "ffffffff81000300 T after_the_bad_line\n";
	struct tk_tracedata *td = new_td();
	char *text;
	int ret;

	(void)state;
	assert_int_equal(tk_tracedata_set_kallsyms(td, kallsyms, sizeof(kallsyms) - 1), 0);
	text = listing(td, TK_REPORT_LIST_FUNCS, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "ffffffff81000000 _text\n"
				  "ffffffff81000000 _stext\n"
				  "ffffffff81000200 last\n"
				  "ffffffffc0001000 modfn [mymod]\n");
	free(text);
	tk_tracedata_free(td);
}

static void test_events_and_check(void **state)
{
	static const char fmt_b[] = "name: b_event\nID: 7\nformat:\n" COMMON
				    "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n"
				    "print fmt: \"a=%d\", REC->a\n";
	static const char fmt_a[] = "name: a_event\nID: 9\nformat:\n" COMMON
				    "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n"
				    "print fmt: \"a=%d\", REC->a\n";
	static const char fmt_bad[] = "name: broken\nID: 11\nthis is no format\n";
	struct tk_tracedata *td = new_td();
	size_t failed = 99;
	char *text;
	int ret;

	(void)state;
	assert_int_equal(tk_tracedata_add_format(td, "zsys", fmt_b, sizeof(fmt_b) - 1), 0);
	assert_int_equal(tk_tracedata_add_format(td, "asys", fmt_b, sizeof(fmt_b) - 1), 0);
	assert_int_equal(tk_tracedata_add_format(td, "zsys", fmt_a, sizeof(fmt_a) - 1), 0);
	text = listing(td, TK_REPORT_LIST_EVENTS, &ret);
	assert_int_equal(ret, 0);
	/* asys:b_event has b's id again: libtraceevent keeps both, and so does the list. */
	assert_string_equal(text, "asys:b_event\nzsys:a_event\nzsys:b_event\n");
	free(text);
	assert_int_equal(tk_report_check_formats(td, &failed), 0);
	assert_int_equal(failed, 0);
	assert_int_equal(tk_tracedata_add_format(td, "zsys", fmt_bad, sizeof(fmt_bad) - 1), 0);
	assert_int_equal(tk_report_check_formats(td, &failed), 1);
	assert_int_equal(failed, 1);
	tk_tracedata_free(td);
}

static void test_endian_and_refusals(void **state)
{
	struct tk_tracedata *td = new_td();
	char *text;
	int ret;

	(void)state;
	text = listing(td, TK_REPORT_LIST_ENDIAN, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "file is little endian and host is little endian\n");
	free(text);
	/* No printk part: nothing to list, no error (trace-cmd prints nothing either). */
	text = listing(td, TK_REPORT_LIST_PRINTK, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "");
	free(text);
	text = listing(td, TK_REPORT_LIST_UNAME, &ret);
	assert_int_equal(ret, -EINVAL);
	free(text);
	assert_int_equal(tk_report_list_tracedata(NULL, TK_REPORT_LIST_EVENTS, 1), -EINVAL);
	assert_int_equal(tk_report_check_formats(NULL, NULL), -EINVAL);
	tk_tracedata_free(td);
}

/* What tk_report_list_formats(@td, @regex) writes, as a malloc'ed string. */
static char *formats(const struct tk_tracedata *td, const char *regex, int *ret)
{
	FILE *f = tmpfile();
	char *text;
	long n;

	assert_non_null(f);
	*ret = tk_report_list_formats(td, regex, fileno(f));
	n = lseek(fileno(f), 0, SEEK_END);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(pread(fileno(f), text, (size_t)n, 0), n);
	fclose(f);
	return text;
}

/*
 * --events and --event: per system in file order, "\nsystem: S\n" before its
 * first printed format, each format as stored and a newline; no ftrace
 * formats; trace-cmd's regex rules (a system match without a colon takes
 * the system, "S:E" both, basic regexes anywhere in the name, case ignored).
 */
static void test_formats(void **state)
{
	static const char sw[] = "name: sched_switch\nID: 1\nformat:\n";
	static const char sk[] = "name: sched_waking\nID: 2\nformat:\n";
	static const char ie[] = "name: irq_handler_entry\nID: 3\nformat:\n";
	static const char fn[] = "name: function\nID: 4\nformat:\n";
	struct tk_tracedata *td = new_td();
	char *text;
	int ret;

	(void)state;
	assert_int_equal(tk_tracedata_add_ftrace_format(td, fn, sizeof(fn) - 1), 0);
	assert_int_equal(tk_tracedata_add_format(td, "sched", sw, sizeof(sw) - 1), 0);
	assert_int_equal(tk_tracedata_add_format(td, "sched", sk, sizeof(sk) - 1), 0);
	assert_int_equal(tk_tracedata_add_format(td, "irq", ie, sizeof(ie) - 1), 0);
	text = formats(td, NULL, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "\nsystem: sched\nname: sched_switch\nID: 1\nformat:\n\n"
				  "name: sched_waking\nID: 2\nformat:\n\n"
				  "\nsystem: irq\nname: irq_handler_entry\nID: 3\nformat:\n\n");
	free(text);
	/* The name anywhere, case ignored. */
	text = formats(td, "WAK", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "\nsystem: sched\nname: sched_waking\nID: 2\nformat:\n\n");
	free(text);
	/* A system without a colon: all of it. */
	text = formats(td, "^irq$", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "\nsystem: irq\nname: irq_handler_entry\nID: 3\nformat:\n\n");
	free(text);
	/* "S:E": the name must match within a matching system. */
	text = formats(td, "irq:switch", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "");
	free(text);
	text = formats(td, "sch:_s", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "\nsystem: sched\nname: sched_switch\nID: 1\nformat:\n\n");
	free(text);
	/* ftrace formats are never printed. */
	text = formats(td, "function", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "");
	free(text);
	text = formats(td, "sched[", &ret);
	assert_int_equal(ret, -EINVAL);
	assert_string_equal(text, "");
	free(text);
	assert_int_equal(tk_report_list_formats(NULL, NULL, 1), -EINVAL);
	tk_tracedata_free(td);
}

/* -p: the file's page size and this host's. */
static void test_page_size(void **state)
{
	struct tk_tracedata *td = new_td();
	char want[96], *text;
	int ret;

	(void)state;
	text = listing(td, TK_REPORT_LIST_PAGE_SIZE, &ret);
	assert_int_equal(ret, 0);
	snprintf(want, sizeof(want), "file page size is 4096, and host page size is %ld\n",
		 sysconf(_SC_PAGESIZE));
	assert_string_equal(text, want);
	free(text);
	tk_tracedata_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_printk),		 cmocka_unit_test(test_funcs),
		cmocka_unit_test(test_events_and_check), cmocka_unit_test(test_endian_and_refusals),
		cmocka_unit_test(test_formats),		 cmocka_unit_test(test_page_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
