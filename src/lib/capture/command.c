// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * command: fork, hold, release and stop the program a recording follows
 * (command.h). Both recorders (record.c's .dat and perf-record.c's
 * perf.data) run their command through here.
 *
 * Holding: the child blocks reading a close-on-exec pipe ("go"); one byte
 * lets it exec, end of file (the recorder gave up) makes it _exit(126)
 * without running anything. A second close-on-exec pipe carries the exec's
 * errno back: the parent reads end of file when the exec worked (the pipe
 * closed with the exec), four bytes when it failed.
 *
 * Stopping: the first signal is the one the recorder was sent, so a
 * program that handles SIGINT (to flush, say) gets the chance it would
 * have had under Ctrl-C. A command started in the background by a
 * non-interactive shell has SIGINT ignored (the shell sets that for
 * background jobs, and exec keeps it), and some programs ignore SIGTERM:
 * SIGKILL after the grace period is what guarantees that nothing is left
 * running; it goes to the command's descendants too (found through
 * /proc/PID/task/TID/children before anything dies, since an orphan is
 * reparented away), as a shell's background jobs survive their shell. The
 * command stays in the recorder's process group so that it keeps the
 * terminal, as it would under perf or trace-cmd. Waiting is a WNOHANG poll every 10 ms: the
 * recorder has nothing else to do then, and a SIGCHLD wait would need the caller's signal mask.
 */
#include <tracekit/command.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal/error.h"

struct tk_command {
	pid_t pid;
	int go_fd;  /* parent writes one byte: exec now */
	int err_fd; /* child writes its errno if exec fails */
	bool exited;
	int status;
	int stopped_by; /* the signal tk_command_stop() sent, 0 if none */
	char *name;
	char text[96];
};

/* Whether @path can be executed, as execve() would judge it. */
static int check_path(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return -EACCES;
	return 0;
}

int tk_command_check(const char *argv0)
{
	const char *path, *p;
	int best = -ENOENT;

	if (!argv0 || !*argv0)
		return tk_fail(ENOENT, "cannot run '': no command given");
	if (strchr(argv0, '/')) {
		int r = check_path(argv0);

		return r ? tk_fail(-r, "cannot run '%s': %s", argv0, strerror(-r)) : 0;
	}
	/* execvp()'s search: each PATH entry in order, "" meaning ".". */
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (p = path;; p++) {
		const char *end = strchrnul(p, ':');
		char full[4096];
		int n, r;

		n = snprintf(full, sizeof(full), "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "",
			     argv0);
		if (n > 0 && (size_t)n < sizeof(full)) {
			r = check_path(full);
			if (!r)
				return 0;
			/* A file that exists but cannot run explains more than "not found". */
			if (r != -ENOENT && r != -ENOTDIR)
				best = r;
		}
		if (!*end)
			break;
		p = end;
	}
	if (best == -ENOENT)
		return tk_fail(ENOENT, "cannot run '%s': command not found in PATH", argv0);
	return tk_fail(-best, "cannot run '%s': %s", argv0, strerror(-best));
}

struct tk_command *tk_command_new(char *const *argv, char *const *env)
{
	struct tk_command *cmd;
	int go[2], err[2];
	int r;

	if (!argv || !argv[0])
		return tk_fail_null(EINVAL, "no command given");
	r = tk_command_check(argv[0]);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	cmd = calloc(1, sizeof(*cmd));
	if (cmd)
		cmd->name = strdup(argv[0]);
	if (!cmd || !cmd->name) {
		free(cmd);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	cmd->go_fd = cmd->err_fd = -1;
	if (pipe2(go, O_CLOEXEC) < 0) {
		r = tk_fail(errno, "pipe: %s", strerror(errno));
		goto fail;
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		r = tk_fail(errno, "pipe: %s", strerror(errno));
		close(go[0]);
		close(go[1]);
		goto fail;
	}
	cmd->pid = fork();
	if (cmd->pid < 0) {
		r = tk_fail(errno, "fork: %s", strerror(errno));
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		goto fail;
	}
	if (cmd->pid == 0) {
		char b;
		int e;

		close(go[1]);
		close(err[0]);
		sigset_t recorder_signals;

		sigemptyset(&recorder_signals);
		sigaddset(&recorder_signals, SIGINT);
		sigaddset(&recorder_signals, SIGTERM);
		sigaddset(&recorder_signals, SIGHUP);
		sigaddset(&recorder_signals, SIGCHLD);
		sigprocmask(SIG_UNBLOCK, &recorder_signals, NULL);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		/* Wait until tracing is on (or the recorder gave up: end of file). */
		if (read(go[0], &b, 1) != 1)
			_exit(126);
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	cmd->go_fd = go[1];
	cmd->err_fd = err[0];
	return cmd;
fail:
	free(cmd->name);
	free(cmd);
	errno = -r;
	return NULL;
}

pid_t tk_command_pid(const struct tk_command *cmd)
{
	return cmd->pid;
}

static void reap(struct tk_command *cmd, int flags)
{
	int status;
	pid_t r;

	if (cmd->exited || cmd->pid <= 0)
		return;
	do {
		r = waitpid(cmd->pid, &status, flags);
	} while (r < 0 && errno == EINTR);
	if (r == cmd->pid) {
		cmd->exited = true;
		cmd->status = status;
	} else if (r < 0) {
		/* ECHILD: someone else reaped it; nothing is left to stop. */
		cmd->exited = true;
		cmd->status = -1;
	}
}

int tk_command_release(struct tk_command *cmd)
{
	ssize_t n;
	int e = 0;

	if (cmd->go_fd < 0)
		return tk_fail(EINVAL, "'%s' was released already", cmd->name);
	if (write(cmd->go_fd, "g", 1) != 1)
		e = errno ? errno : EIO;
	close(cmd->go_fd);
	cmd->go_fd = -1;
	if (!e) {
		do {
			n = read(cmd->err_fd, &e, sizeof(e));
		} while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(e))
			e = 0;
		else if (!e)
			e = EIO;
	}
	close(cmd->err_fd);
	cmd->err_fd = -1;
	if (e) {
		reap(cmd, 0);
		return tk_fail(e, "cannot run '%s': %s", cmd->name, strerror(e));
	}
	return 0;
}

bool tk_command_poll(struct tk_command *cmd)
{
	reap(cmd, WNOHANG);
	return cmd->exited;
}

/* Append @pid's children (every thread's) to @v; Return: the new count. */
static size_t add_children(pid_t pid, pid_t **v, size_t n, size_t *cap)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return n;
	while ((e = readdir(d))) {
		char file[320];
		FILE *f;
		int child;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/children", path, e->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		while (fscanf(f, "%d", &child) == 1) {
			if (n == *cap) {
				size_t c = *cap ? *cap * 2 : 16;
				pid_t *t = realloc(*v, c * sizeof(*t));

				if (!t)
					break;
				*v = t;
				*cap = c;
			}
			(*v)[n++] = (pid_t)child;
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* SIGKILL @pid and every descendant it has now. */
static void kill_tree(pid_t pid)
{
	pid_t *v = NULL;
	size_t n = 0, cap = 0;

	n = add_children(pid, &v, n, &cap);
	/* Breadth first: v grows while it is walked. */
	for (size_t i = 0; i < n && n < 4096; i++)
		n = add_children(v[i], &v, n, &cap);
	kill(pid, SIGKILL);
	for (size_t i = 0; i < n; i++)
		kill(v[i], SIGKILL);
	free(v);
}

static double mono_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

bool tk_command_stop(struct tk_command *cmd, int sig, double grace)
{
	double deadline;

	if (tk_command_poll(cmd))
		return false;
	if (!sig)
		sig = SIGTERM;
	cmd->stopped_by = sig;
	kill(cmd->pid, sig);
	deadline = mono_seconds() + (grace > 0 ? grace : 0);
	while (!tk_command_poll(cmd) && mono_seconds() < deadline) {
		struct timespec ten_ms = {0, 10 * 1000 * 1000};

		nanosleep(&ten_ms, NULL);
	}
	if (!cmd->exited) {
		cmd->stopped_by = SIGKILL;
		kill_tree(cmd->pid);
		reap(cmd, 0);
	}
	return true;
}

int tk_command_status(const struct tk_command *cmd)
{
	return cmd->exited ? cmd->status : -1;
}

bool tk_command_failed(const struct tk_command *cmd)
{
	/* A command the recorder stopped exits as it likes (130, 143, a signal). */
	if (!cmd->exited || cmd->status == -1 || cmd->stopped_by)
		return false;
	return !WIFEXITED(cmd->status) || WEXITSTATUS(cmd->status) != 0;
}

const char *tk_command_describe(struct tk_command *cmd)
{
	cmd->text[0] = '\0';
	if (!cmd->exited)
		return cmd->text;
	if (cmd->status == -1)
		snprintf(cmd->text, sizeof(cmd->text), "exited (status unknown)");
	else if (cmd->stopped_by)
		snprintf(cmd->text, sizeof(cmd->text), "stopped by the recorder (SIG%s)",
			 sigabbrev_np(cmd->stopped_by) ? sigabbrev_np(cmd->stopped_by) : "?");
	else if (WIFEXITED(cmd->status))
		snprintf(cmd->text, sizeof(cmd->text), "exited with status %d",
			 WEXITSTATUS(cmd->status));
	else if (WIFSIGNALED(cmd->status))
		snprintf(cmd->text, sizeof(cmd->text), "killed by signal %d (%s)",
			 WTERMSIG(cmd->status), strsignal(WTERMSIG(cmd->status)));
	return cmd->text;
}

void tk_command_free(struct tk_command *cmd)
{
	if (!cmd)
		return;
	if (cmd->go_fd >= 0) {
		/* Never released: end of file makes it exit without running anything. */
		close(cmd->go_fd);
		reap(cmd, 0);
	} else {
		tk_command_stop(cmd, SIGTERM, TK_COMMAND_GRACE_SECONDS);
	}
	if (cmd->err_fd >= 0)
		close(cmd->err_fd);
	free(cmd->name);
	free(cmd);
}
