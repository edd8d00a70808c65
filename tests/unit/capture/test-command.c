// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests for command.c: the check before anything starts, hold and
 * release, exit statuses, and stopping a command that ignores signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <tracekit/command.h>

#include "tk-test.h"
#include "tk-tmpdir.h"

static void test_check(void **state)
{
	char path[300];
	int fd;

	(void)state;
	assert_int_equal(tk_command_check("sh"), 0);
	assert_int_equal(tk_command_check("/bin/sh"), 0);
	assert_errno(tk_command_check("/nonexistent/prog"), ENOENT);
	assert_non_null(strstr(tk_errmsg(), "cannot run '/nonexistent/prog'"));
	assert_errno(tk_command_check("tk-no-such-command-here"), ENOENT);
	assert_non_null(strstr(tk_errmsg(), "not found in PATH"));
	assert_errno(tk_command_check(tmpdir), EISDIR);
	assert_errno(tk_command_check(""), ENOENT);
	snprintf(path, sizeof(path), "%s/not-executable", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_errno(tk_command_check(path), EACCES);
}

static struct tk_command *start(const char *script)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	struct tk_command *cmd = tk_command_new(argv, NULL);

	assert_non_null(cmd);
	return cmd;
}

static void wait_exit(struct tk_command *cmd)
{
	for (int i = 0; i < 500 && !tk_command_poll(cmd); i++)
		usleep(10000);
	assert_true(tk_command_poll(cmd));
}

static void test_exit_statuses(void **state)
{
	static const struct {
		const char *script;
		bool failed;
		const char *describe;
		bool whole; /* @describe is all of it, else it need only appear in it */
	} ends[] = {
		{"exit 0", false, "exited with status 0", true},
		{"exit 3", true, "exited with status 3", true},
		/* What follows the signal (a core dump note) depends on the system. */
		{"kill -SEGV $$", true, "killed by signal 11", false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		struct tk_command *cmd = start(ends[i].script);
		const char *d;

		assert_true(tk_command_pid(cmd) > 0);
		assert_int_equal(tk_command_release(cmd), 0);
		wait_exit(cmd);
		assert_int_equal(tk_command_failed(cmd), ends[i].failed);
		d = tk_command_describe(cmd);
		if (ends[i].whole)
			assert_string_equal(d, ends[i].describe);
		else
			assert_non_null(strstr(d, ends[i].describe));
		tk_command_free(cmd);
	}
}

/* A command that is never released runs nothing. */
static void test_held_command_never_runs(void **state)
{
	char script[400], mark[300];
	struct tk_command *cmd;

	(void)state;
	snprintf(mark, sizeof(mark), "%s/ran", tmpdir);
	snprintf(script, sizeof(script), "touch %s", mark);
	cmd = start(script);
	tk_command_free(cmd);
	assert_int_equal(access(mark, F_OK), -1);
}

/* The program vanished between the check and the exec: release says so. */
static void test_exec_failure_reported(void **state)
{
	char path[300];
	char *argv[] = {path, NULL};
	struct tk_command *cmd;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/prog", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	cmd = tk_command_new(argv, NULL);
	assert_non_null(cmd);
	assert_int_equal(unlink(path), 0);
	assert_errno(tk_command_release(cmd), ENOENT);
	assert_non_null(strstr(tk_errmsg(), "cannot run"));
	assert_true(tk_command_poll(cmd));
	tk_command_free(cmd);
}

static void test_env_reaches_the_command(void **state)
{
	char *env[] = {"TK_TEST_VALUE=42", NULL};
	char *argv[] = {"sh", "-c", "[ \"$TK_TEST_VALUE\" = 42 ]", NULL};
	struct tk_command *cmd = tk_command_new(argv, env);

	(void)state;
	assert_non_null(cmd);
	assert_int_equal(tk_command_release(cmd), 0);
	wait_exit(cmd);
	assert_false(tk_command_failed(cmd));
	tk_command_free(cmd);
}

static void test_stop(void **state)
{
	struct tk_command *cmd;
	struct timespec a, b;

	(void)state;
	/* A command that obeys: the first signal ends it. */
	cmd = start("exec sleep 30");
	assert_int_equal(tk_command_release(cmd), 0);
	assert_true(tk_command_stop(cmd, SIGINT, 5));
	assert_false(tk_command_failed(cmd));
	assert_string_equal(tk_command_describe(cmd), "stopped by the recorder (SIGINT)");
	tk_command_free(cmd);

	/* One that ignores SIGINT and SIGTERM (as a background job does): SIGKILL. */
	cmd = start("trap '' INT TERM; sleep 30 & wait; exit 0");
	assert_int_equal(tk_command_release(cmd), 0);
	usleep(100000);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_true(tk_command_stop(cmd, SIGINT, 0.3));
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(tk_command_poll(cmd));
	assert_string_equal(tk_command_describe(cmd), "stopped by the recorder (SIGKILL)");
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 5000);
	tk_command_free(cmd);

	/* An exited command is not stopped again. */
	cmd = start("exit 0");
	assert_int_equal(tk_command_release(cmd), 0);
	wait_exit(cmd);
	assert_false(tk_command_stop(cmd, SIGTERM, 1));
	tk_command_free(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_exit_statuses),
		cmocka_unit_test(test_held_command_never_runs),
		cmocka_unit_test(test_exec_failure_reported),
		cmocka_unit_test(test_env_reaches_the_command),
		cmocka_unit_test(test_stop),
	};

	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
