// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracefs: instances, events, filters, clocks and the raw per-CPU pipes.
 *
 * Design notes.
 *
 * The handle is nothing but a directory path: every operation opens,
 * writes and closes one control file, as a shell user would. That keeps the
 * kernel's own state the only truth (another process may change it at any
 * time) and makes each failure attributable to exactly one file, which is
 * what the error messages need: "<file>: <strerror> (<ERRNO>): <what to
 * do>". The hints come from how these machines behave (shared/specs/
 * tracedat.md §7): function tracers, set_ftrace_filter, kprobe_events and
 * /proc/sys/kernel/ftrace_enabled answer EPERM under lockdown, so an EPERM
 * on those files says "locked down", not "run as root".
 *
 * Control-file writes are a single write() of the whole text: the kernel
 * parses each write on its own, so splitting a filter or a pid list over
 * two writes would be read as two commands.
 *
 * tracefs files report st_size 0, so reads grow a buffer until EOF.
 *
 * Tracers. Only "function" and "function_graph" depend on
 * /proc/sys/kernel/ftrace_enabled, so only they look at it, and only a 0
 * there is rewritten: trace-cmd writes it on every recording, which fails
 * on locked-down kernels even when no function is traced. A tracer name is
 * checked against the instance's available_tracers first, so that an
 * unknown one is "no tracer 'x' (available: ...)", not a bare EINVAL.
 *
 * Mounting. tracefs is found by its file system magic at
 * /sys/kernel/tracing, then at /sys/kernel/debug/tracing (debugfs mounts
 * it there on access); when neither has it, it is mounted at the first
 * of those that exists as a directory.
 *
 * Event matching follows trace-cmd: "SYS:EV" with shell globs on either
 * side, or a bare word that names systems first and events (in any system)
 * when no system matches. Events of the "ftrace" system have no enable
 * file (they are always recorded while tracing is on); matching one is not
 * an error, it is reported to the callback like any other event so the
 * recorder stores its format.
 *
 * Dynamic probes (shared/specs/perfdata.md §22). kprobe_events and
 * uprobe_events are lists shared by every user of the machine: opening one
 * with O_TRUNC (a shell's '>') deletes every probe in it, whoever made
 * them. So definitions are only ever appended (O_APPEND, never O_TRUNC),
 * one write() each, and removal is
 * the kernel's own "-:GROUP/EVENT" command, also appended: we can delete
 * only what we name. The definition is rewritten with its group and event
 * spelled out, so that the name we later remove is the name the kernel
 * used, never one it derived. A name that exists already is refused before
 * the write by looking for events/GROUP/EVENT, which also catches a clash
 * with a tracepoint group; the kernel's EEXIST covers the race. A probe
 * enabled in any instance cannot be deleted (EBUSY), so callers remove or
 * disable their instance first. On refusals other than EPERM the kernel
 * writes its reason to error_log; the last entry, when its "Command:" is
 * ours, goes into the message. On the reference machine kprobe_events does
 * not exist at all (ENOENT on open, the kernel has no kprobe events) while
 * uprobe_events works.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <tracekit/tracefs.h>

#include "internal/error.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

struct tk_tracefs {
	char *name; /* "" for the top-level buffer */
	char *dir;
	bool created;
};

static char *root_path;

static bool is_tracefs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == TRACEFS_MAGIC;
}

TK_API const char *tk_tracefs_root(void)
{
	static const char *const candidates[] = {"/sys/kernel/tracing",
						 "/sys/kernel/debug/tracing"};

	if (root_path)
		return root_path;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (is_tracefs(candidates[i])) {
			root_path = (char *)candidates[i];
			return root_path;
		}
	}
	/*
	 * Not mounted: mount it where current kernels expect it, and where
	 * only debugfs offers a mount point (kernels before 4.1 have no
	 * /sys/kernel/tracing directory), there.
	 */
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (mount("nodev", candidates[i], "tracefs", 0, NULL) == 0) {
			root_path = (char *)candidates[i];
			return root_path;
		}
		if (errno != ENOENT)
			break;
	}
	{
		int err = errno;

		tk_fail(err, "cannot mount tracefs at %s: %s (%s): %s", candidates[0],
			strerror(err), strerrorname_np(err) ? strerrorname_np(err) : "?",
			err == EPERM ? "run as root (CAP_SYS_ADMIN), or mount it beforehand with "
				       "'mount -t tracefs nodev /sys/kernel/tracing'"
				     : "is the kernel built with CONFIG_TRACING?");
		errno = err;
		return NULL;
	}
}

/* What to do about @err on @path: one short sentence. */
static const char *hint_for(const char *path, int err)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	switch (err) {
	case EPERM:
	case EACCES:
		if (!strcmp(base, "current_tracer") || !strcmp(base, "set_ftrace_filter") ||
		    !strcmp(base, "set_ftrace_notrace") || !strcmp(base, "set_graph_function") ||
		    !strcmp(base, "ftrace_enabled") || !strcmp(base, "available_filter_functions"))
			return "function tracing is locked down on this kernel (lockdown or a "
			       "hypervisor policy); record events with -e instead";
		if (!strcmp(base, "kprobe_events") || !strcmp(base, "uprobe_events") ||
		    !strcmp(base, "dynamic_events"))
			return "dynamic probes are locked down on this kernel (lockdown or a "
			       "hypervisor policy); record tracepoint events with -e instead";
		return "run as root (CAP_SYS_ADMIN or CAP_PERFMON) on a writable tracefs";
	case ENOENT:
		if (strstr(path, "/events/"))
			return "the kernel has no such event; 'tracekit list' shows those it has";
		return "the kernel does not provide this file (too old, or the feature is "
		       "not built in)";
	case EINVAL:
		if (!strcmp(base, "filter"))
			return "the kernel rejected the filter expression; its error_log file "
			       "says where";
		return "the kernel rejected the value";
	case EBUSY:
		return "another process uses it; retry, or run 'tracekit reset' to remove "
		       "instances left by dead recorders";
	case ENOMEM:
		return "not enough memory; ask for a smaller buffer (-b)";
	case ENODEV:
		return "tracing is disabled in this kernel";
	case ENOSPC:
		return "the file system is full";
	default:
		return "see the kernel log (dmesg)";
	}
}

static int fail_file(int err, const char *path)
{
	const char *name = strerrorname_np(err);

	return tk_fail(err, "%s: %s (%s): %s", path, strerror(err), name ? name : "?",
		       hint_for(path, err));
}

static char *join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s/%s", a, b) < 0)
		return NULL;
	return s;
}

static char *full_path(const struct tk_tracefs *tfs, const char *path)
{
	if (path[0] == '/')
		return strdup(path);
	return join(tfs->dir, path);
}

static bool valid_instance_name(const char *name)
{
	return name[0] && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}

TK_API struct tk_tracefs *tk_tracefs_open(const char *instance, unsigned int flags)
{
	const char *root = tk_tracefs_root();
	struct tk_tracefs *tfs;
	struct stat st;
	int err;

	if (!root)
		return NULL;
	if (instance && !valid_instance_name(instance))
		return tk_fail_null(EINVAL, "invalid instance name '%s'", instance);
	tfs = calloc(1, sizeof(*tfs));
	if (!tfs)
		goto nomem;
	tfs->name = strdup(instance ? instance : "");
	if (!tfs->name)
		goto nomem;
	if (instance) {
		if (asprintf(&tfs->dir, "%s/instances/%s", root, instance) < 0) {
			tfs->dir = NULL;
			goto nomem;
		}
	} else {
		tfs->dir = strdup(root);
		if (!tfs->dir)
			goto nomem;
	}
	if (instance && (flags & TK_TRACEFS_CREATE)) {
		if (mkdir(tfs->dir, 0750) < 0) {
			err = errno;
			if (err == EEXIST)
				tk_fail(err,
					"%s: instance already exists: another recorder uses "
					"it, or 'tracekit reset' removes it if its recorder died",
					tfs->dir);
			else
				fail_file(err, tfs->dir);
			goto fail;
		}
		tfs->created = true;
	} else if (stat(tfs->dir, &st) < 0) {
		err = errno;
		fail_file(err, tfs->dir);
		goto fail;
	}
	return tfs;

nomem:
	err = ENOMEM;
	tk_fail(err, "out of memory");
fail:
	tk_tracefs_close(tfs);
	errno = err;
	return NULL;
}

TK_API void tk_tracefs_close(struct tk_tracefs *tfs)
{
	if (!tfs)
		return;
	free(tfs->name);
	free(tfs->dir);
	free(tfs);
}

TK_API int tk_tracefs_remove_instance(const char *name)
{
	const char *root = tk_tracefs_root();
	char *dir;
	int r = 0;

	if (!root)
		return -errno;
	if (!valid_instance_name(name))
		return tk_fail(EINVAL, "invalid instance name '%s'", name);
	if (asprintf(&dir, "%s/instances/%s", root, name) < 0)
		return tk_fail(ENOMEM, "out of memory");
	if (rmdir(dir) < 0)
		r = fail_file(errno, dir);
	free(dir);
	return r;
}

TK_API int tk_tracefs_remove(struct tk_tracefs *tfs)
{
	int r;

	if (!tfs)
		return 0;
	tk_tracefs_set_tracing_on(tfs, false);
	if (!tfs->name[0]) {
		tk_tracefs_close(tfs);
		return 0;
	}
	/* The kernel refuses rmdir while events of the instance are enabled on old kernels. */
	tk_tracefs_disable_all_events(tfs);
	r = tk_tracefs_remove_instance(tfs->name);
	tk_tracefs_close(tfs);
	return r;
}

TK_API const char *tk_tracefs_name(const struct tk_tracefs *tfs)
{
	return tfs->name;
}

TK_API const char *tk_tracefs_dir(const struct tk_tracefs *tfs)
{
	return tfs->dir;
}

static int read_path(const char *path, char **data, size_t *len)
{
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap);
	int fd, err;

	if (!buf)
		return tk_fail(ENOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		free(buf);
		return fail_file(err, path);
	}
	for (;;) {
		ssize_t n;

		if (cap - used < 2) {
			char *nb;

			if (cap > SIZE_MAX / 2) {
				err = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto fail;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	*data = buf;
	*len = used;
	return 0;

fail:
	close(fd);
	free(buf);
	if (err == ENOMEM)
		return tk_fail(err, "out of memory reading %s", path);
	return fail_file(err, path);
}

TK_API int tk_tracefs_read_file(const struct tk_tracefs *tfs, const char *path, char **data,
				size_t *len)
{
	char *p;
	int r;

	if (!tfs && path[0] != '/')
		return tk_fail(EINVAL, "%s: a relative path needs an instance", path);
	p = full_path(tfs, path);
	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	r = read_path(p, data, len);
	free(p);
	return r;
}

TK_API int tk_tracefs_read_top_file(const char *path, char **data, size_t *len)
{
	const char *root = tk_tracefs_root();
	char *p;
	int r;

	if (!root)
		return -errno;
	p = path[0] == '/' ? strdup(path) : join(root, path);
	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	r = read_path(p, data, len);
	free(p);
	return r;
}

static int write_path(const char *path, const char *text, int open_flags)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, err;

	fd = open(path, O_WRONLY | O_CLOEXEC | open_flags);
	if (fd < 0)
		return fail_file(errno, path);
	do {
		n = write(fd, text, len);
	} while (n < 0 && errno == EINTR);
	err = n < 0 ? errno : 0;
	if (!err && (size_t)n != len)
		err = EIO;
	if (close(fd) < 0 && !err)
		err = errno;
	return err ? fail_file(err, path) : 0;
}

TK_API int tk_tracefs_write_file(const struct tk_tracefs *tfs, const char *path, const char *text)
{
	char *p = full_path(tfs, path);
	int r;

	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	r = write_path(p, text, 0);
	free(p);
	return r;
}

static bool is_dir(const char *dir, const char *name)
{
	struct stat st;
	char *p = join(dir, name);
	bool r;

	if (!p)
		return false;
	r = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
	free(p);
	return r;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

struct enable_ctx {
	struct tk_tracefs *tfs;
	const char *filter;
	tk_tracefs_event_fn fn;
	void *ctx;
	int matched;
};

static int enable_one(struct enable_ctx *ec, const char *sys, const char *ev)
{
	char *rel = NULL, *abs = NULL;
	struct stat st;
	int r = 0;

	if (asprintf(&rel, "events/%s/%s/enable", sys, ev) < 0)
		return tk_fail(ENOMEM, "out of memory");
	abs = full_path(ec->tfs, rel);
	if (!abs) {
		free(rel);
		return tk_fail(ENOMEM, "out of memory");
	}
	/* ftrace's own events (print, bprint ...) have no switch: they are always on. */
	if (stat(abs, &st) == 0) {
		if (ec->filter) {
			char *frel;

			if (asprintf(&frel, "events/%s/%s/filter", sys, ev) < 0) {
				r = tk_fail(ENOMEM, "out of memory");
				goto out;
			}
			r = tk_tracefs_write_file(ec->tfs, frel, ec->filter);
			free(frel);
			if (r < 0)
				goto out;
		}
		r = write_path(abs, "1", 0);
		if (r < 0)
			goto out;
	}
	ec->matched++;
	if (ec->fn)
		ec->fn(sys, ev, ec->ctx);
out:
	free(rel);
	free(abs);
	return r;
}

/* Enable the events of @sys whose names match @ev_glob (NULL: all). */
static int enable_in_system(struct enable_ctx *ec, const char *events_dir, const char *sys,
			    const char *ev_glob)
{
	char *sysdir = join(events_dir, sys);
	struct dirent **list = NULL;
	int n, r = 0;

	if (!sysdir)
		return tk_fail(ENOMEM, "out of memory");
	n = scandir(sysdir, &list, NULL, alphasort);
	if (n < 0) {
		r = fail_file(errno, sysdir);
		free(sysdir);
		return r;
	}
	for (int i = 0; i < n; i++) {
		const char *ev = list[i]->d_name;

		if (r == 0 && ev[0] != '.' && is_dir(sysdir, ev) &&
		    (!ev_glob || fnmatch(ev_glob, ev, 0) == 0))
			r = enable_one(ec, sys, ev);
		free(list[i]);
	}
	free(list);
	free(sysdir);
	return r;
}

TK_API int tk_tracefs_enable_events(struct tk_tracefs *tfs, const char *spec, const char *filter,
				    tk_tracefs_event_fn fn, void *ctx)
{
	struct enable_ctx ec = {.tfs = tfs, .filter = filter, .fn = fn, .ctx = ctx};
	char *copy = strdup(spec), *colon, *events_dir = NULL;
	const char *sys_glob, *ev_glob;
	struct dirent **list = NULL;
	int n = 0, r = 0;
	bool by_event = false;

	if (!copy)
		return tk_fail(ENOMEM, "out of memory");
	if (!spec[0] || strchr(spec, '/')) {
		free(copy);
		return tk_fail(EINVAL, "invalid event '%s' (SYSTEM, SYSTEM:EVENT or EVENT)", spec);
	}
	colon = strchr(copy, ':');
	if (colon) {
		*colon = '\0';
		sys_glob = copy[0] ? copy : "*";
		ev_glob = colon[1] ? colon + 1 : NULL;
	} else {
		sys_glob = copy;
		ev_glob = NULL;
	}
	events_dir = join(tfs->dir, "events");
	if (!events_dir) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	n = scandir(events_dir, &list, NULL, alphasort);
	if (n < 0) {
		r = fail_file(errno, events_dir);
		n = 0;
		goto out;
	}
again:
	for (int i = 0; i < n && r == 0; i++) {
		const char *sys = list[i]->d_name;

		if (sys[0] == '.' || !is_dir(events_dir, sys))
			continue;
		if (by_event)
			r = enable_in_system(&ec, events_dir, sys, copy);
		else if (fnmatch(sys_glob, sys, 0) == 0)
			r = enable_in_system(&ec, events_dir, sys, ev_glob);
	}
	if (r == 0 && ec.matched == 0 && !colon && !by_event) {
		by_event = true;
		goto again;
	}
	if (r == 0 && ec.matched == 0) {
		char *what = join(events_dir, has_glob(spec) ? "*" : spec);

		r = tk_fail(ENOENT, "%s: no event matches '%s': %s", what ? what : events_dir, spec,
			    hint_for("/events/", ENOENT));
		free(what);
	}
out:
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	free(events_dir);
	free(copy);
	return r < 0 ? r : ec.matched;
}

TK_API int tk_tracefs_disable_all_events(struct tk_tracefs *tfs)
{
	return tk_tracefs_write_file(tfs, "events/enable", "0");
}

/* The word between brackets in a trace_clock text. */
static int current_clock(const char *text, char *buf, size_t cap)
{
	const char *a = strchr(text, '['), *b;

	if (!a || !(b = strchr(a, ']')) || (size_t)(b - a - 1) >= cap)
		return -EINVAL;
	memcpy(buf, a + 1, (size_t)(b - a - 1));
	buf[b - a - 1] = '\0';
	return 0;
}

static bool clock_listed(const char *text, const char *clock)
{
	size_t n = strlen(clock);

	for (const char *p = text; *p;) {
		while (*p == ' ' || *p == '[' || *p == '\n')
			p++;
		if (!strncmp(p, clock, n) && (p[n] == ' ' || p[n] == ']' || p[n] == '\n' || !p[n]))
			return true;
		while (*p && *p != ' ')
			p++;
	}
	return false;
}

TK_API int tk_tracefs_set_clock(struct tk_tracefs *tfs, const char *clock)
{
	char *text;
	size_t len;
	int r;

	r = tk_tracefs_read_file(tfs, "trace_clock", &text, &len);
	if (r < 0)
		return r;
	if (!clock[0] || strpbrk(clock, " []\n") || !clock_listed(text, clock)) {
		while (len && text[len - 1] == '\n')
			text[--len] = '\0';
		r = tk_fail(EINVAL, "%s/trace_clock: unknown clock '%s' (available: %s)", tfs->dir,
			    clock, text);
		free(text);
		return r;
	}
	free(text);
	return tk_tracefs_write_file(tfs, "trace_clock", clock);
}

TK_API int tk_tracefs_get_clock(const struct tk_tracefs *tfs, char *buf, size_t cap)
{
	char *text;
	size_t len;
	int r;

	r = tk_tracefs_read_file(tfs, "trace_clock", &text, &len);
	if (r < 0)
		return r;
	r = current_clock(text, buf, cap);
	if (r < 0)
		r = tk_fail(EINVAL, "%s/trace_clock: no clock in brackets", tfs->dir);
	free(text);
	return r;
}

TK_API int tk_tracefs_set_buffer_kb(struct tk_tracefs *tfs, uint32_t kb)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", kb);
	return tk_tracefs_write_file(tfs, "buffer_size_kb", num);
}

TK_API int tk_tracefs_set_tracing_on(struct tk_tracefs *tfs, bool on)
{
	return tk_tracefs_write_file(tfs, "tracing_on", on ? "1" : "0");
}

TK_API int tk_tracefs_get_tracing_on(const struct tk_tracefs *tfs)
{
	char *text;
	size_t len;
	int r = tk_tracefs_read_file(tfs, "tracing_on", &text, &len);

	if (r < 0)
		return r;
	if (text[0] == '0' || text[0] == '1')
		r = text[0] - '0';
	else
		r = tk_fail(EBADMSG, "%s/tracing_on: expected 0 or 1, read '%.20s'", tfs->dir,
			    text);
	free(text);
	return r;
}

/* "function" and "function_graph": the tracers that need ftrace_enabled. */
static bool is_function_tracer(const char *tracer)
{
	return !strncmp(tracer, "function", 8);
}

/*
 * The function tracers need /proc/sys/kernel/ftrace_enabled set. Only a
 * 0 there is changed (trace-cmd writes it unconditionally, which is what
 * makes it fail on locked-down kernels even for event-only recordings); a
 * kernel without the file (no dynamic ftrace) has nothing to enable.
 */
static int ensure_ftrace_enabled(void)
{
	static const char path[] = "/proc/sys/kernel/ftrace_enabled";
	char *text;
	size_t len;
	int r;

	if (access(path, F_OK) < 0)
		return 0;
	r = read_path(path, &text, &len);
	if (r < 0)
		return r;
	r = text[0] == '0' ? write_path(path, "1", 0) : 0;
	free(text);
	return r;
}

/* Whether @word is one of the blank-separated words of @text. */
static bool word_listed(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = text; *p;) {
		p += strspn(p, " \t\n");
		if (!strncmp(p, word, n) && (!p[n] || strchr(" \t\n", p[n])))
			return true;
		p += strcspn(p, " \t\n");
	}
	return false;
}

TK_API int tk_tracefs_set_tracer(struct tk_tracefs *tfs, const char *tracer)
{
	char *list, *top = NULL;
	size_t len, top_len;
	bool at_top;
	int r;

	if (!tracer[0] || strpbrk(tracer, " \t\n/"))
		return tk_fail(EINVAL, "invalid tracer name '%s'", tracer);
	r = tk_tracefs_read_file(tfs, "available_tracers", &list, &len);
	if (r < 0)
		return r;
	if (!word_listed(list, tracer)) {
		/* Instances offer fewer tracers than the top-level buffer (blk, for one). */
		at_top = tfs->name[0] &&
			 tk_tracefs_read_top_file("available_tracers", &top, &top_len) == 0 &&
			 word_listed(top, tracer);
		free(top);
		while (len && list[len - 1] == '\n')
			list[--len] = '\0';
		r = tk_fail(ENOENT, "%s/available_tracers: no tracer '%s' (available: %s)%s",
			    tfs->dir, tracer, list,
			    at_top ? "; the top-level buffer has it: use --top" : "");
		free(list);
		return r;
	}
	free(list);
	if (is_function_tracer(tracer)) {
		r = ensure_ftrace_enabled();
		if (r < 0)
			return r;
	}
	return tk_tracefs_write_file(tfs, "current_tracer", tracer);
}

TK_API int tk_tracefs_set_event_pids(struct tk_tracefs *tfs, const int *pids, size_t count,
				     bool follow_fork)
{
	char *text, *p;
	int r;

	if (count > SIZE_MAX / 16)
		return tk_fail(EINVAL, "too many pids");
	text = malloc(count * 16 + 2);
	if (!text)
		return tk_fail(ENOMEM, "out of memory");
	p = text;
	for (size_t i = 0; i < count; i++)
		p += sprintf(p, "%s%d", i ? " " : "", pids[i]);
	if (!count) {
		/* An empty write is ignored; O_TRUNC clears the list. */
		char *path = full_path(tfs, "set_event_pid");

		free(text);
		if (!path)
			return tk_fail(ENOMEM, "out of memory");
		r = write_path(path, "", O_TRUNC);
		free(path);
		if (r == 0)
			r = tk_tracefs_write_file(tfs, "options/event-fork",
						  follow_fork ? "1" : "0");
		return r;
	}
	*p++ = '\n';
	*p = '\0';
	r = tk_tracefs_write_file(tfs, "set_event_pid", text);
	free(text);
	if (r == 0)
		r = tk_tracefs_write_file(tfs, "options/event-fork", follow_fork ? "1" : "0");
	return r;
}

TK_API int tk_tracefs_cpu_count(const struct tk_tracefs *tfs)
{
	char *dir = join(tfs->dir, "per_cpu");
	struct dirent *de;
	DIR *d;
	int max = -1;

	if (!dir)
		return tk_fail(ENOMEM, "out of memory");
	d = opendir(dir);
	if (!d) {
		int r = fail_file(errno, dir);

		free(dir);
		return r;
	}
	while ((de = readdir(d))) {
		char *end;
		long v;

		if (strncmp(de->d_name, "cpu", 3) || !isdigit((unsigned char)de->d_name[3]))
			continue;
		v = strtol(de->d_name + 3, &end, 10);
		if (*end || v < 0 || v > 65535)
			continue;
		if (v > max)
			max = (int)v;
	}
	closedir(d);
	if (max < 0) {
		int r = tk_fail(ENOENT, "%s: no cpuN directories", dir);

		free(dir);
		return r;
	}
	free(dir);
	return max + 1;
}

static uint64_t stat_field(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, n) && p[n] == ':')
			return strtoull(p + n + 1, NULL, 10);
	}
	return 0;
}

TK_API int tk_tracefs_cpu_stats(const struct tk_tracefs *tfs, uint32_t cpu,
				struct tk_tracefs_cpu_stats *stats, char **text)
{
	char rel[64], *buf;
	size_t len;
	int r;

	snprintf(rel, sizeof(rel), "per_cpu/cpu%u/stats", cpu);
	r = tk_tracefs_read_file(tfs, rel, &buf, &len);
	if (r < 0)
		return r;
	memset(stats, 0, sizeof(*stats));
	stats->entries = stat_field(buf, "entries");
	stats->overrun = stat_field(buf, "overrun");
	stats->commit_overrun = stat_field(buf, "commit overrun");
	stats->bytes = stat_field(buf, "bytes");
	stats->dropped_events = stat_field(buf, "dropped events");
	stats->read_events = stat_field(buf, "read events");
	if (text)
		*text = buf;
	else
		free(buf);
	return 0;
}

TK_API int tk_tracefs_open_pipe_raw(const struct tk_tracefs *tfs, uint32_t cpu, bool nonblock)
{
	char rel[64], *p;
	int fd, r;

	snprintf(rel, sizeof(rel), "per_cpu/cpu%u/trace_pipe_raw", cpu);
	p = full_path(tfs, rel);
	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	fd = open(p, O_RDONLY | O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
	r = fd < 0 ? fail_file(errno, p) : fd;
	free(p);
	return r;
}

/* ------------------------------------------------------ dynamic probes */

/* The kernel's rule for group and event names (is_good_name()). */
static bool good_name(const char *s, size_t n)
{
	if (!n || n > TK_TRACEFS_PROBE_NAME_MAX || (!isalpha((unsigned char)s[0]) && s[0] != '_'))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	}
	return true;
}

/* Whether [s, s+n) is a number as the kernel's kstrtoul(base 0) reads it. */
static bool good_number(const char *s, size_t n)
{
	size_t i = 0;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < n; i++) {
			if (!isxdigit((unsigned char)s[i]))
				return false;
		}
		return true;
	}
	for (; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
	}
	return n > 0;
}

/*
 * Check a uprobe target "PATH:OFFSET[%return][(REF_CTR_OFFSET)]" and find
 * its parts. The last ':' ends the path, as in the kernel, so a path may
 * hold colons itself.
 */
static int parse_uprobe_target(const char *t, size_t n, const char **base, size_t *base_len,
			       const char **off, size_t *off_len, bool *ret)
{
	const char *colon = NULL, *p, *end = t + n, *slash;

	for (p = t; p < end; p++) {
		if (*p == ':')
			colon = p;
	}
	if (!colon || colon == t)
		return tk_fail(EINVAL, "probe target '%.*s': expected PATH:OFFSET", (int)n, t);
	p = colon + 1;
	*off = p;
	while (p < end && *p != '%' && *p != '(')
		p++;
	*off_len = (size_t)(p - *off);
	if (!good_number(*off, *off_len))
		return tk_fail(EINVAL, "probe target '%.*s': offset '%.*s' is not a number", (int)n,
			       t, (int)*off_len, *off);
	if (end - p >= 7 && !strncmp(p, "%return", 7)) {
		*ret = true;
		p += 7;
	}
	if (p < end && *p == '(') {
		const char *q = p + 1;

		while (q < end && *q != ')')
			q++;
		if (q + 1 != end || !good_number(p + 1, (size_t)(q - p - 1)))
			return tk_fail(EINVAL,
				       "probe target '%.*s': expected (REF_CTR_OFFSET) "
				       "at the end",
				       (int)n, t);
		p = end;
	}
	if (p != end)
		return tk_fail(EINVAL, "probe target '%.*s': unexpected '%.*s' after the offset",
			       (int)n, t, (int)(end - p), p);
	slash = colon;
	while (slash > t && slash[-1] != '/')
		slash--;
	*base = slash;
	*base_len = (size_t)(colon - slash);
	if (!*base_len)
		return tk_fail(EINVAL, "probe target '%.*s': the path names a directory", (int)n,
			       t);
	return 0;
}

/* Append [s, s+n) to @dst (of length *len) with every non-name character as '_'. */
static void put_name_part(char *dst, size_t *len, const char *s, size_t n, size_t max)
{
	for (size_t i = 0; i < n && *len < max; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[(*len)++] = isalnum(c) || c == '_' ? (char)c : '_';
	}
	dst[*len] = '\0';
}

/* The event name of a definition that gives none: "<what>[_<offset>][__return]". */
static void derive_event(struct tk_tracefs_probe *pr, const char *what, size_t what_len,
			 const char *off, size_t off_len)
{
	static const char suffix[] = "__return";
	size_t max = TK_TRACEFS_PROBE_NAME_MAX - (pr->retprobe ? sizeof(suffix) - 1 : 0);
	size_t len = 0;

	if (isdigit((unsigned char)what[0]))
		put_name_part(pr->event, &len, "p_", 2, max);
	put_name_part(pr->event, &len, what, what_len, max);
	if (off_len) {
		put_name_part(pr->event, &len, "_", 1, max);
		put_name_part(pr->event, &len, off, off_len, max);
	}
	if (pr->retprobe)
		strcat(pr->event, suffix);
}

TK_API int tk_tracefs_probe_parse(const char *def, struct tk_tracefs_probe *pr)
{
	const char *p = def, *kind, *names = NULL, *target, *args, *what = NULL, *off = NULL;
	size_t kind_len, names_len = 0, target_len, args_len, what_len, off_len = 0;
	const char *slash;
	bool maxactive = false;
	int r;

	memset(pr, 0, sizeof(*pr));
	/* One definition is one write: a newline would make the kernel read two commands. */
	for (const char *q = def; *q; q++) {
		if (iscntrl((unsigned char)*q) && *q != '\t')
			return tk_fail(EINVAL, "probe '%s': control characters are not allowed",
				       def);
	}
	p += strspn(p, " \t");
	kind = p;
	if (*p != 'p' && *p != 'r')
		return tk_fail(EINVAL,
			       "probe '%s': expected 'p' or 'r' first (p[:[GROUP/]EVENT] "
			       "TARGET [ARGS])",
			       def);
	pr->retprobe = *p++ == 'r';
	while (pr->retprobe && isdigit((unsigned char)*p)) {
		maxactive = true;
		p++;
	}
	kind_len = (size_t)(p - kind);
	if (*p == ':') {
		names = ++p;
		names_len = strcspn(p, " \t");
		p += names_len;
	}
	if (*p && *p != ' ' && *p != '\t')
		return tk_fail(EINVAL,
			       "probe '%s': expected 'p' or 'r' first (p[:[GROUP/]EVENT] "
			       "TARGET [ARGS])",
			       def);
	p += strspn(p, " \t");
	target = p;
	target_len = strcspn(p, " \t");
	if (!target_len)
		return tk_fail(EINVAL, "probe '%s': no target (SYMBOL[+OFF] or PATH:OFFSET)", def);
	p += target_len;
	p += strspn(p, " \t");
	args = p;
	args_len = strlen(p);
	while (args_len && (args[args_len - 1] == ' ' || args[args_len - 1] == '\t'))
		args_len--;

	/* GROUP/EVENT: either may be left out ("p:", "p:EV", "p:GRP/"), not the group alone. */
	strcpy(pr->group, TK_TRACEFS_PROBE_GROUP);
	if (names) {
		const char *ev = names;
		size_t ev_len = names_len;

		slash = memchr(names, '/', names_len);
		if (slash) {
			size_t g_len = (size_t)(slash - names);

			if (!good_name(names, g_len))
				return tk_fail(EINVAL,
					       "probe '%s': bad group name '%.*s' (letters, "
					       "digits and '_', at most %d)",
					       def, (int)g_len, names, TK_TRACEFS_PROBE_NAME_MAX);
			memcpy(pr->group, names, g_len);
			pr->group[g_len] = '\0';
			ev = slash + 1;
			ev_len = names_len - g_len - 1;
		}
		if (ev_len && !good_name(ev, ev_len))
			return tk_fail(EINVAL,
				       "probe '%s': bad event name '%.*s' (letters, digits "
				       "and '_', at most %d)",
				       def, (int)ev_len, ev, TK_TRACEFS_PROBE_NAME_MAX);
		memcpy(pr->event, ev, ev_len);
		pr->event[ev_len] = '\0';
	}

	pr->uprobe = memchr(target, '/', target_len) && memchr(target, ':', target_len);
	if (pr->uprobe) {
		bool pct_return = false;

		if (maxactive)
			return tk_fail(EINVAL,
				       "probe '%s': MAXACTIVE (r<N>) is for kretprobes only", def);
		r = parse_uprobe_target(target, target_len, &what, &what_len, &off, &off_len,
					&pct_return);
		if (r < 0)
			return r;
		pr->retprobe |= pct_return;
		pr->file = "uprobe_events";
	} else {
		const char *plus, *colon, *pct;

		/* [MOD:]SYMBOL[+OFF][%return] or an address. */
		what = target;
		what_len = target_len;
		colon = memchr(what, ':', what_len);
		if (colon) {
			what_len -= (size_t)(colon + 1 - what);
			what = colon + 1;
		}
		pct = memchr(what, '%', what_len);
		if (pct) {
			if ((size_t)(what + what_len - pct) != 7 || strncmp(pct, "%return", 7))
				return tk_fail(EINVAL,
					       "probe target '%.*s': only %%return may "
					       "follow the symbol",
					       (int)target_len, target);
			pr->retprobe = true;
			what_len = (size_t)(pct - what);
		}
		plus = memchr(what, '+', what_len);
		if (plus) {
			off = plus + 1;
			off_len = (size_t)(what + what_len - off);
			what_len = (size_t)(plus - what);
			if (!good_number(off, off_len))
				return tk_fail(EINVAL,
					       "probe target '%.*s': offset '%.*s' is not "
					       "a number",
					       (int)target_len, target, (int)off_len, off);
		}
		if (!what_len)
			return tk_fail(EINVAL, "probe target '%.*s': no symbol", (int)target_len,
				       target);
		pr->file = "kprobe_events";
	}
	if (!pr->event[0])
		derive_event(pr, what, what_len, off, off_len);

	if (asprintf(&pr->text, "%.*s:%s/%s %.*s%s%.*s", (int)kind_len, kind, pr->group, pr->event,
		     (int)target_len, target, args_len ? " " : "", (int)args_len, args) < 0) {
		pr->text = NULL;
		return tk_fail(ENOMEM, "out of memory");
	}
	return 0;
}

TK_API int tk_tracefs_probe_rename(struct tk_tracefs_probe *pr, const char *event)
{
	size_t len = strlen(event);
	const char *rest;
	char *text;

	if (!pr->text || !good_name(event, len))
		return tk_fail(EINVAL,
			       "probe event name '%s': letters, digits and '_', at most %d, "
			       "on a parsed probe",
			       event, TK_TRACEFS_PROBE_NAME_MAX);
	/* The text is "KIND:GROUP/EVENT TARGET [ARGS]", as parsing made it. */
	rest = strchr(pr->text, ' ');
	if (asprintf(&text, "%.*s:%s/%s%s", (int)strcspn(pr->text, ":"), pr->text, pr->group, event,
		     rest ? rest : "") < 0)
		return tk_fail(ENOMEM, "out of memory");
	free(pr->text);
	pr->text = text;
	memcpy(pr->event, event, len + 1);
	return 0;
}

TK_API void tk_tracefs_probe_release(struct tk_tracefs_probe *pr)
{
	if (!pr)
		return;
	free(pr->text);
	pr->text = NULL;
}

/*
 * The kernel's own reason for refusing @text: the last "error: " entry of
 * error_log, when the "Command:" line under it is ours (the log is shared
 * and keeps old entries). Returns a malloc'ed line or NULL.
 */
static char *kernel_reason(const char *text)
{
	char *log, *e, *found = NULL, *cmd, *res = NULL;
	size_t len;

	if (tk_tracefs_read_top_file("error_log", &log, &len) < 0)
		return NULL;
	for (e = strstr(log, "error: "); e; e = strstr(e + 1, "error: "))
		found = e;
	if (found) {
		size_t n = strcspn(found, "\n");

		cmd = strstr(found, "Command: ");
		if (cmd && !strncmp(cmd + 9, text, strcspn(cmd + 9, "\n")))
			res = strndup(found + 7, n - 7);
	}
	free(log);
	return res;
}

TK_API int tk_tracefs_probe_add(const struct tk_tracefs_probe *pr)
{
	const char *root = tk_tracefs_root(), *ename;
	char *path = NULL, *evdir = NULL, *why;
	struct stat st;
	ssize_t n;
	int fd, err, r;

	if (!root)
		return -errno;
	if (!pr->text || !pr->file)
		return tk_fail(EINVAL, "probe: not parsed");
	if (asprintf(&evdir, "%s/events/%s/%s", root, pr->group, pr->event) < 0) {
		evdir = NULL;
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	path = join(root, pr->file);
	if (!path) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	/*
	 * Someone else's event of that name: refuse before the kernel does,
	 * with a message about names rather than the kernel's EEXIST, and
	 * whatever kind of event it is (a tracepoint group can clash too).
	 */
	if (stat(evdir, &st) == 0) {
		r = tk_fail(EEXIST,
			    "%s: probe %s/%s already exists: name yours with "
			    "p:GROUP/EVENT, or remove that one with "
			    "'echo -:%s/%s >> %s'",
			    path, pr->group, pr->event, pr->group, pr->event, path);
		goto out;
	}
	/* Never O_TRUNC: the kernel would delete every probe of the file, anyone's. */
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == ENOENT)
			r = tk_fail(err,
				    "%s: %s (%s): this kernel has no %s (built without "
				    "CONFIG_%s_EVENTS)%s",
				    path, strerror(err), strerrorname_np(err), pr->file,
				    pr->uprobe ? "UPROBE" : "KPROBE",
				    pr->uprobe ? "; record tracepoint events with -e instead"
					       : "; probe user code with PATH:OFFSET or record "
						 "tracepoint events with -e instead");
		else
			r = fail_file(err, path);
		goto out;
	}
	do {
		n = write(fd, pr->text, strlen(pr->text));
	} while (n < 0 && errno == EINTR);
	err = n < 0 ? errno : (size_t)n != strlen(pr->text) ? EIO : 0;
	close(fd);
	if (!err) {
		r = 0;
		goto out;
	}
	ename = strerrorname_np(err) ? strerrorname_np(err) : "?";
	if (err == EPERM || err == EACCES) {
		r = fail_file(err, path);
		goto out;
	}
	why = kernel_reason(pr->text);
	if (err == EEXIST)
		r = tk_fail(err,
			    "%s: %s (%s): probe %s/%s already exists: name yours with "
			    "p:GROUP/EVENT",
			    path, strerror(err), ename, pr->group, pr->event);
	else if (why)
		r = tk_fail(err, "%s: %s (%s): the kernel rejected '%s': %s", path, strerror(err),
			    ename, pr->text, why);
	else if (err == ENOENT)
		r = tk_fail(err, "%s: %s (%s): the target of '%s' was not found (%s)", path,
			    strerror(err), ename, pr->text,
			    pr->uprobe ? "check the path" : "see /proc/kallsyms");
	else
		r = tk_fail(err,
			    "%s: %s (%s): the kernel rejected '%s'; its error_log file "
			    "says why",
			    path, strerror(err), ename, pr->text);
	free(why);
out:
	free(path);
	free(evdir);
	return r;
}

TK_API int tk_tracefs_probe_remove(const struct tk_tracefs_probe *pr)
{
	const char *root = tk_tracefs_root();
	char *path, *cmd;
	int r;

	if (!root)
		return -errno;
	if (!pr->file)
		return tk_fail(EINVAL, "probe: not parsed");
	path = join(root, pr->file);
	if (!path)
		return tk_fail(ENOMEM, "out of memory");
	if (asprintf(&cmd, "-:%s/%s", pr->group, pr->event) < 0) {
		free(path);
		return tk_fail(ENOMEM, "out of memory");
	}
	r = write_path(path, cmd, O_APPEND);
	if (r == -EBUSY)
		r = tk_fail(EBUSY,
			    "%s: probe %s/%s is in use (enabled in an instance, or "
			    "opened by perf): disable it, then 'echo %s >> %s'",
			    path, pr->group, pr->event, cmd, path);
	free(cmd);
	free(path);
	return r;
}

/* ------------------------------------------------------------ probe ledger */

struct tk_tracefs_ledger {
	char *path; /* NULL until the first note */
	unsigned int serial;
};

static unsigned int ledger_serial;

static const char *ledger_dir(void)
{
	const char *d = getenv("TRACEKIT_RUN_DIR");

	return d && *d ? d : TK_TRACEFS_LEDGER_DIR;
}

TK_API struct tk_tracefs_ledger *tk_tracefs_ledger_new(void)
{
	struct tk_tracefs_ledger *l = calloc(1, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l->serial = __atomic_add_fetch(&ledger_serial, 1, __ATOMIC_RELAXED);
	return l;
}

TK_API int tk_tracefs_ledger_note(struct tk_tracefs_ledger *l, const struct tk_tracefs_probe *pr)
{
	char *line;
	int fd, n, r = 0;

	if (!l->path) {
		if (mkdir(ledger_dir(), 0700) < 0 && errno != EEXIST)
			return tk_fail(errno, "%s: %s", ledger_dir(), strerror(errno));
		if (asprintf(&l->path, "%s/probes-%ld-%u", ledger_dir(), (long)getpid(),
			     l->serial) < 0) {
			l->path = NULL;
			return tk_fail(ENOMEM, "out of memory");
		}
	}
	n = asprintf(&line, "%s %s/%s\n", pr->file, pr->group, pr->event);
	if (n < 0)
		return tk_fail(ENOMEM, "out of memory");
	errno = 0;
	fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		r = tk_fail(errno ? errno : EIO, "%s: %s", l->path, strerror(errno ? errno : EIO));
	if (fd >= 0)
		close(fd);
	free(line);
	return r;
}

TK_API void tk_tracefs_ledger_free(struct tk_tracefs_ledger *l, bool drop)
{
	if (!l)
		return;
	if (drop && l->path)
		unlink(l->path);
	free(l->path);
	free(l);
}

/*
 * The pid in @name = @prefix, the pid's digits, then @stop ('\0' or a
 * separator), or -1 when @name is no such name.
 */
static long pid_in_name(const char *name, const char *prefix, char stop)
{
	size_t n = strlen(prefix);
	char *end;
	long pid;

	if (strncmp(name, prefix, n) || name[n] < '1' || name[n] > '9')
		return -1;
	errno = 0;
	pid = strtol(name + n, &end, 10);
	if (errno || *end != stop || pid <= 0 || pid > 4194304)
		return -1;
	return pid;
}

/* Whether no process @pid exists (kill(2) with signal 0: only ESRCH says gone). */
static bool pid_gone(long pid)
{
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

TK_API int tk_tracefs_instances_reap(void (*report)(const char *name, long pid, void *ctx),
				     void *ctx, bool dry_run)
{
	const char *root = tk_tracefs_root();
	int removed = 0, first = 0;
	struct dirent *de;
	char *dir;
	DIR *d;

	if (!root)
		return -errno;
	dir = join(root, "instances");
	if (!dir)
		return tk_fail(ENOMEM, "out of memory");
	d = opendir(dir);
	if (!d) {
		first = tk_fail(errno, "%s: %s", dir, strerror(errno));
		free(dir);
		return first;
	}
	while ((de = readdir(d))) {
		long pid = pid_in_name(de->d_name, "tracekit-", '\0');
		struct tk_tracefs *tfs;

		if (pid < 0 || !pid_gone(pid))
			continue;
		if (!dry_run) {
			int r;

			tfs = tk_tracefs_open(de->d_name, 0);
			r = tfs ? tk_tracefs_remove(tfs) : -errno;
			if (r < 0) {
				first = first ? first : r;
				continue;
			}
			removed++;
		}
		if (report)
			report(de->d_name, pid, ctx);
	}
	closedir(d);
	free(dir);
	return first ? first : removed;
}

/* Remove the probes of one dead process's ledger @path. */
static int reap_one(const char *path, long pid,
		    void (*report)(const char *probe, long pid, bool gone, void *ctx), void *ctx,
		    bool dry_run, int *removed)
{
	FILE *f = fopen(path, "re");
	char line[256];
	bool keep = false;
	int first = 0;

	if (!f)
		return errno == ENOENT ? 0 : tk_fail(errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct tk_tracefs_probe pr;
		char file[32], names[2 * TK_TRACEFS_PROBE_NAME_MAX + 2];
		const char *slash;
		int r;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%31s %127s", file, names) != 2 || !(slash = strchr(names, '/')) ||
		    (strcmp(file, "uprobe_events") && strcmp(file, "kprobe_events")) ||
		    slash == names || (size_t)(slash - names) > TK_TRACEFS_PROBE_NAME_MAX ||
		    strlen(slash + 1) > TK_TRACEFS_PROBE_NAME_MAX || !slash[1]) {
			tk_warn("%s: ignored malformed line '%s'", path, line);
			continue;
		}
		memset(&pr, 0, sizeof(pr));
		pr.file = !strcmp(file, "uprobe_events") ? "uprobe_events" : "kprobe_events";
		memcpy(pr.group, names, (size_t)(slash - names));
		strcpy(pr.event, slash + 1);
		if (dry_run) {
			if (report)
				report(line, pid, false, ctx);
			continue;
		}
		r = tk_tracefs_probe_remove(&pr);
		if (r == 0 || r == -ENOENT || r == -EINVAL) {
			/* EINVAL: the kernel has no such probe to delete. */
			if (report)
				report(line, pid, r != 0, ctx);
			if (r == 0)
				(*removed)++;
			continue;
		}
		keep = true;
		if (!first)
			first = r;
	}
	fclose(f);
	if (!dry_run && !keep)
		unlink(path);
	return first;
}

TK_API int tk_tracefs_ledger_reap(void (*report)(const char *probe, long pid, bool gone, void *ctx),
				  void *ctx, bool dry_run)
{
	const char *dir = ledger_dir();
	struct dirent *de;
	int removed = 0, first = 0;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? 0 : tk_fail(errno, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		long pid = pid_in_name(de->d_name, "probes-", '-');
		char *path;
		int r;

		if (pid < 0 || !pid_gone(pid))
			continue;
		path = join(dir, de->d_name);
		if (!path) {
			first = first ? first : tk_fail(ENOMEM, "out of memory");
			continue;
		}
		r = reap_one(path, pid, report, ctx, dry_run, &removed);
		if (r && !first)
			first = r;
		free(path);
	}
	closedir(d);
	return first ? first : removed;
}

/* ---------------------------------------------------------------- listing */

static int list_add(char ***names, size_t *count, size_t *cap, const char *s, size_t n)
{
	if (*count == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		char **t = realloc(*names, c * sizeof(*t));

		if (!t)
			return tk_fail(ENOMEM, "out of memory");
		*names = t;
		*cap = c;
	}
	(*names)[*count] = strndup(s, n);
	if (!(*names)[*count])
		return tk_fail(ENOMEM, "out of memory");
	(*count)++;
	return 0;
}

/* Whether the first @count names hold @s (@n bytes). */
static bool list_has(char *const *names, size_t count, const char *s, size_t n)
{
	for (size_t i = 0; i < count; i++) {
		if (strlen(names[i]) == n && !memcmp(names[i], s, n))
			return true;
	}
	return false;
}

TK_API int tk_tracefs_list(enum tk_tracefs_list_kind kind, char ***names, size_t *count)
{
	static const char *const file[] = {"available_events", "available_events", "trace_clock",
					   "available_tracers"};
	size_t len, cap = 0;
	char *text;
	int r;

	*names = NULL;
	*count = 0;
	if ((unsigned int)kind > TK_TRACEFS_LIST_TRACERS)
		return tk_fail(EINVAL, "unknown list kind %d", (int)kind);
	r = tk_tracefs_read_top_file(file[kind], &text, &len);
	if (r < 0)
		return r;
	for (const char *p = text; !r && *p;) {
		/* Events and systems: one per line. Clocks and tracers: words. */
		bool lines = kind <= TK_TRACEFS_LIST_EVENTS;
		size_t n = lines ? strcspn(p, "\n") : strcspn(p, " \n");
		const char *colon = memchr(p, ':', n);

		if (kind == TK_TRACEFS_LIST_SYSTEMS) {
			/*
			 * Not grouped by system on every kernel (6.18 interleaves
			 * syscalls with others): each system where it first appears.
			 */
			if (colon && !list_has(*names, *count, p, (size_t)(colon - p)))
				r = list_add(names, count, &cap, p, (size_t)(colon - p));
		} else if (n) {
			r = list_add(names, count, &cap, p, n);
		}
		p += n;
		while (*p == '\n' || (!lines && *p == ' '))
			p++;
	}
	free(text);
	if (r) {
		tk_tracefs_list_free(*names, *count);
		*names = NULL;
		*count = 0;
	}
	return r;
}

TK_API void tk_tracefs_list_free(char **names, size_t count)
{
	for (size_t i = 0; names && i < count; i++)
		free(names[i]);
	free(names);
}
