// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests for output.c: what each kind of target becomes, in a private
 * directory. The character device is a node this test makes (as root) with
 * /dev/null's numbers; the system's /dev is never touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include <tracekit/output.h>

#include "tk-test.h"
#include "tk-tmpdir.h"

static char *in_dir(const char *name)
{
	static char path[4][256];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", tmpdir, name);
	return p;
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void expect_text(const char *path, const char *text)
{
	char buf[256] = {0};
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
	close(fd);
	assert_string_equal(buf, text);
}

static void write_through(struct tk_output *out, const char *text)
{
	assert_int_equal(write(tk_output_fd(out), text, strlen(text)), (ssize_t)strlen(text));
}

/* Nothing but the named entries is left in the directory (no temporary file). */
static void expect_entries(int n)
{
	char cmd[512];
	FILE *p;
	int count = 0;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", tmpdir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &count), 1);
	pclose(p);
	assert_int_equal(count, n);
}

static void test_new_file(void **state)
{
	struct tk_output *out = tk_output_open(in_dir("new.dat"), NULL);
	uint64_t size = 0;
	struct stat st;

	(void)state;
	assert_non_null(out);
	assert_int_equal(tk_output_kind(out), TK_OUTPUT_REPLACE);
	assert_non_null(tk_output_temp_path(out));
	/* Until finished, the name does not exist: no half-written file. */
	assert_int_equal(access(in_dir("new.dat"), F_OK), -1);
	write_through(out, "hello");
	assert_int_equal(tk_output_finish(out, &size), 0);
	assert_int_equal(size, 5);
	tk_output_close(out);
	expect_text(in_dir("new.dat"), "hello");
	assert_int_equal(stat(in_dir("new.dat"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644); /* the umask is 022 */
	unlink(in_dir("new.dat"));
	expect_entries(0);
}

static void test_replace_keeps_mode_and_old_until_finish(void **state)
{
	struct tk_output *out;
	struct stat st;

	(void)state;
	put_file(in_dir("old.dat"), "old", 0640);
	out = tk_output_open(in_dir("old.dat"), NULL);
	assert_non_null(out);
	write_through(out, "new");
	expect_text(in_dir("old.dat"), "old");
	assert_int_equal(tk_output_finish(out, NULL), 0);
	tk_output_close(out);
	expect_text(in_dir("old.dat"), "new");
	assert_int_equal(stat(in_dir("old.dat"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	unlink(in_dir("old.dat"));
	expect_entries(0);
}

static void test_close_without_finish_keeps_old(void **state)
{
	struct tk_output *out;

	(void)state;
	put_file(in_dir("keep.dat"), "keep", 0644);
	out = tk_output_open(in_dir("keep.dat"), NULL);
	assert_non_null(out);
	write_through(out, "partial");
	tk_output_close(out);
	expect_text(in_dir("keep.dat"), "keep");
	unlink(in_dir("keep.dat"));
	expect_entries(0);
}

static void test_symlink_target_replaced(void **state)
{
	struct tk_output *out;
	struct stat st;

	(void)state;
	assert_int_equal(mkdir(in_dir("sub"), 0755), 0);
	put_file(in_dir("sub/real.dat"), "old", 0644);
	/* A relative link, in another directory than its target. */
	assert_int_equal(symlink("sub/real.dat", in_dir("link.dat")), 0);
	out = tk_output_open(in_dir("link.dat"), NULL);
	assert_non_null(out);
	assert_string_equal(tk_output_target(out), in_dir("sub/real.dat"));
	/* The temporary file is in the target's directory, so rename() is atomic. */
	assert_non_null(strstr(tk_output_temp_path(out), "/sub/real.dat.tmp."));
	write_through(out, "new");
	assert_int_equal(tk_output_finish(out, NULL), 0);
	tk_output_close(out);
	assert_int_equal(lstat(in_dir("link.dat"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	expect_text(in_dir("sub/real.dat"), "new");

	/* A dangling link names the file to create. */
	assert_int_equal(symlink("sub/fresh.dat", in_dir("dangling.dat")), 0);
	out = tk_output_open(in_dir("dangling.dat"), NULL);
	assert_non_null(out);
	write_through(out, "fresh");
	assert_int_equal(tk_output_finish(out, NULL), 0);
	tk_output_close(out);
	expect_text(in_dir("sub/fresh.dat"), "fresh");
	assert_int_equal(lstat(in_dir("dangling.dat"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	unlink(in_dir("link.dat"));
	unlink(in_dir("dangling.dat"));
	unlink(in_dir("sub/real.dat"));
	unlink(in_dir("sub/fresh.dat"));
	assert_int_equal(rmdir(in_dir("sub")), 0);
	expect_entries(0);
}

static void test_link_loop_refused(void **state)
{
	(void)state;
	assert_int_equal(symlink("b", in_dir("a")), 0);
	assert_int_equal(symlink("a", in_dir("b")), 0);
	assert_null(tk_output_open(in_dir("a"), NULL));
	assert_int_equal(errno, ELOOP);
	unlink(in_dir("a"));
	unlink(in_dir("b"));
}

static void test_directory_refused(void **state)
{
	(void)state;
	assert_null(tk_output_open(tmpdir, NULL));
	assert_int_equal(errno, EISDIR);
	assert_non_null(strstr(tk_errmsg(), "is a directory"));
	expect_entries(0);
}

static void test_same_as_input_refused(void **state)
{
	(void)state;
	put_file(in_dir("in.dat"), "in", 0644);
	assert_int_equal(symlink("in.dat", in_dir("alias.dat")), 0);
	assert_null(tk_output_open(in_dir("alias.dat"), in_dir("in.dat")));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(tk_errmsg(), "same file"));
	expect_text(in_dir("in.dat"), "in");
	unlink(in_dir("alias.dat"));
	unlink(in_dir("in.dat"));
}

static void *drain_fifo(void *path)
{
	static char got[64];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	memset(got, 0, sizeof(got));
	if (fd < 0)
		return NULL;
	n = read(fd, got, sizeof(got) - 1);
	while (n > 0 && read(fd, got + n, sizeof(got) - 1 - (size_t)n) > 0)
		;
	close(fd);
	return got;
}

static void test_fifo_written_through(void **state)
{
	struct tk_output *out;
	pthread_t reader;
	void *got;
	struct stat st;

	(void)state;
	assert_int_equal(mkfifo(in_dir("fifo"), 0600), 0);
	assert_int_equal(pthread_create(&reader, NULL, drain_fifo, in_dir("fifo")), 0);
	out = tk_output_open(in_dir("fifo"), NULL);
	assert_non_null(out);
	assert_int_equal(tk_output_kind(out), TK_OUTPUT_STREAM);
	assert_null(tk_output_temp_path(out));
	write_through(out, "stream");
	assert_int_equal(tk_output_finish(out, NULL), 0);
	tk_output_close(out);
	assert_int_equal(pthread_join(reader, &got), 0);
	assert_non_null(got);
	assert_string_equal((char *)got, "stream");
	/* Still the FIFO: not replaced by a regular file. */
	assert_int_equal(lstat(in_dir("fifo"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	unlink(in_dir("fifo"));
	expect_entries(0);
}

static void test_char_device_written_through(void **state)
{
	struct tk_output *out;
	struct stat st;

	(void)state;
	/* A node of our own with /dev/null's numbers (1, 3). */
	if (mknod(in_dir("null"), S_IFCHR | 0666, makedev(1, 3)) < 0) {
		printf("SKIP: cannot make a character device node (%s): needs root\n",
		       strerror(errno));
		skip();
	}
	out = tk_output_open(in_dir("null"), NULL);
	assert_non_null(out);
	assert_int_equal(tk_output_kind(out), TK_OUTPUT_STREAM);
	write_through(out, "gone");
	assert_int_equal(tk_output_finish(out, NULL), 0);
	tk_output_close(out);
	assert_int_equal(lstat(in_dir("null"), &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	unlink(in_dir("null"));
	expect_entries(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_file),
		cmocka_unit_test(test_replace_keeps_mode_and_old_until_finish),
		cmocka_unit_test(test_close_without_finish_keeps_old),
		cmocka_unit_test(test_symlink_target_replaced),
		cmocka_unit_test(test_link_loop_refused),
		cmocka_unit_test(test_directory_refused),
		cmocka_unit_test(test_same_as_input_refused),
		cmocka_unit_test(test_fifo_written_through),
		cmocka_unit_test(test_char_device_written_through),
	};

	umask(022);
	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
