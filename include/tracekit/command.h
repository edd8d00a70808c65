/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * command: the program a recording runs and follows.
 *
 * A recorder forks the command before tracing starts and holds it before
 * exec, so that its pid can be put in the kernel's filters and no event of
 * its start is missed; tk_command_release() lets it exec once tracing is
 * on. When the recording ends first (a duration, a signal to the recorder,
 * an error), tk_command_stop() ends the command: the signal the recorder
 * got (or SIGTERM), SIGKILL after a grace period, then it is reaped, so no
 * traced program is ever left running behind a recorder that returned.
 *
 * The program is checked before the fork (found on PATH as execvp() finds
 * it, executable, not a directory): a recorder asked to run something that
 * cannot run says so before it creates any file or tracing instance.
 */
#ifndef TRACEKIT_COMMAND_H
#define TRACEKIT_COMMAND_H

#include <sys/types.h>

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Default time between the stop signal and SIGKILL, in seconds. */
#define TK_COMMAND_GRACE_SECONDS 2.0

struct tk_command;

/**
 * tk_command_check() - whether @argv0 can be executed
 * @argv0: a path, or a name looked up in PATH as execvp() does
 *
 * Return: 0, or a negative errno (ENOENT, EACCES, EISDIR) with tk_errmsg()
 * saying "cannot run 'NAME': ...".
 */
TK_API int tk_command_check(const char *argv0);

/**
 * tk_command_new() - fork @argv, held before exec
 * @argv:       NULL-terminated; argv[0] is checked with tk_command_check()
 * @env:  optional NULL-terminated "NAME=value" strings set in the child
 *
 * The command starts with the calling thread's signal mask less SIGINT,
 * SIGTERM, SIGHUP and SIGCHLD, which a recorder blocks to take them
 * synchronously: the command gets the mask the user's shell gave.
 * Context: forks; the child does nothing but wait for release.
 * Return: handle for tk_command_free(), or NULL with errno set and tk_errmsg().
 */
TK_API struct tk_command *tk_command_new(char *const *argv, char *const *env);

/** tk_command_pid() - the command's process id. */
TK_API pid_t tk_command_pid(const struct tk_command *cmd);

/**
 * tk_command_release() - let the held command exec
 * Return: 0 once it runs, or the exec's negative errno ("cannot run 'X': ...");
 * the failed child is then reaped.
 */
TK_API int tk_command_release(struct tk_command *cmd);

/**
 * tk_command_poll() - reap the command if it has exited (never blocks)
 * Return: true once it has exited (now or before).
 */
TK_API bool tk_command_poll(struct tk_command *cmd);

/**
 * tk_command_stop() - end a command that is still running
 * @sig:   the first signal (the one the recorder received, or SIGTERM; 0
 *         means SIGTERM)
 * @grace: seconds to wait before SIGKILL (TK_COMMAND_GRACE_SECONDS)
 *
 * Blocks until the command is reaped (at most @grace plus the time SIGKILL
 * takes). A command that already exited is left as it is.
 * Return: true when this call ended it (its status is then not its own).
 */
TK_API bool tk_command_stop(struct tk_command *cmd, int sig, double grace);

/**
 * tk_command_status() - the wait status once exited, or -1
 * The command "failed" when it exited non-zero or died of a signal it was
 * not sent by tk_command_stop(): tk_command_failed() tells that.
 */
TK_API int tk_command_status(const struct tk_command *cmd);
TK_API bool tk_command_failed(const struct tk_command *cmd);

/**
 * tk_command_describe() - "exited with status 3", "killed by signal 9
 * (Killed)", "stopped by the recorder (SIGTERM)"; "" while running
 * Return: borrowed until the next call on @cmd.
 */
TK_API const char *tk_command_describe(struct tk_command *cmd);

/**
 * tk_command_free() - end the command if it still runs (a held one exits
 * without exec; a released one is stopped with SIGTERM and the default
 * grace), reap it and free the handle. NULL is accepted.
 */
TK_API void tk_command_free(struct tk_command *cmd);

#ifdef __cplusplus
}
#endif
#endif
