// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests for outbuf.c: text kept in memory grows, text for a descriptor
 * goes out whole, a write error is kept while later text is dropped, and
 * JSON strings come out valid whatever bytes they are given.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tracekit/outbuf.h>

/* @in (@n bytes) through tk_outbuf_json_str() must give exactly @want. */
static void check_json(const char *in, size_t n, const char *want)
{
	struct tk_outbuf out;

	assert_int_equal(tk_outbuf_init(&out, -1, 4096), 0);
	tk_outbuf_json_str(&out, in, n);
	assert_int_equal(out.len, strlen(want));
	assert_memory_equal(out.buf, want, out.len);
	tk_outbuf_release(&out);
}

static void test_json_str(void **state)
{
	(void)state;
	check_json("", 0, "\"\"");
	check_json("kworker/0:1", 11, "\"kworker/0:1\"");
	check_json("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	/* Control bytes, DEL and an embedded NUL are escaped, not cut. */
	check_json("t\tn\n\x7f\0z", 7, "\"t\\u0009n\\u000a\\u007f\\u0000z\"");
	/* Valid UTF-8 passes: 2, 3 and 4 bytes. */
	check_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", 14,
		   "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\"");
	/* Latin-1, a cut sequence, an overlong '/', a surrogate: each byte escaped. */
	check_json("caf\xe9", 4, "\"caf\\u00e9\"");
	check_json("\xe2\x82", 2, "\"\\u00e2\\u0082\"");
	check_json("\xc0\xaf", 2, "\"\\u00c0\\u00af\"");
	check_json("\xed\xa0\x80", 3, "\"\\u00ed\\u00a0\\u0080\"");
	check_json("\xf4\x90\x80\x80", 4, "\"\\u00f4\\u0090\\u0080\\u0080\"");
}

static void test_memory_grows(void **state)
{
	struct tk_outbuf out;
	char line[100];

	(void)state;
	assert_int_equal(tk_outbuf_init(&out, -1, 4096), 0);
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(line, sizeof(line), "line %04d\n", i);

		tk_outbuf_write(&out, line, (size_t)n);
	}
	assert_int_equal(out.error, 0);
	assert_int_equal(out.len, 10000);
	assert_true(out.cap >= 10000);
	assert_memory_equal(out.buf + 9990, "line 0999\n", 10);
	tk_outbuf_release(&out);
	tk_outbuf_release(NULL);
}

static void test_descriptor_gets_everything(void **state)
{
	char path[] = "/tmp/tk-outbuf-XXXXXX", back[20000];
	struct tk_outbuf out;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(tk_outbuf_init(&out, fd, 4096), 0);
	for (int i = 0; i < 1500; i++)
		tk_outbuf_write(&out, "0123456789", 10);
	assert_int_equal(tk_outbuf_flush(&out), 0);
	assert_int_equal(pread(fd, back, sizeof(back), 0), 15000);
	assert_memory_equal(back + 14990, "0123456789", 10);
	tk_outbuf_release(&out);
	close(fd);
	unlink(path);
}

static void test_write_error_kept(void **state)
{
	struct tk_outbuf out;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	close(fds[0]);
	assert_int_equal(tk_outbuf_init(&out, fds[1], 4096), 0);
	tk_outbuf_write(&out, "x", 1);
	/* The reader is gone: EPIPE (SIGPIPE is ignored for this test). */
	assert_int_equal(tk_outbuf_flush(&out), -EPIPE);
	tk_outbuf_write(&out, "more", 4);
	assert_int_equal(tk_outbuf_flush(&out), -EPIPE);
	tk_outbuf_release(&out);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_grows),
		cmocka_unit_test(test_descriptor_gets_everything),
		cmocka_unit_test(test_write_error_kept),
		cmocka_unit_test(test_json_str),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
