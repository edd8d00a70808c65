// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * flight: trace-cmd's flight-recorder workflow (start, extract, stop,
 * restart, show, stat, reset) on one tracefs buffer.
 *
 * Design notes.
 *
 * Whose buffer. trace-cmd start works on the top-level buffer unless told
 * -B NAME, and its extract and reset then tear down every instance on the
 * machine. Here the buffer is tracekit's own instance, TK_FLIGHT_INSTANCE,
 * unless the caller names another or asks for the top buffer: a flight
 * recorder runs for hours, and the top buffer is where other users and
 * tools (trace-cmd, perf's ftrace, a shell echoing into set_event) work.
 * The instance is created by start and must not exist before it: a second
 * start would otherwise reconfigure someone's live recorder. Every later
 * call only opens it, and a missing one is "nothing started", not a
 * missing kernel file. No state is kept anywhere else: the instance
 * directory is the whole truth, so any process may stop, extract or reset
 * what another started.
 *
 * Overwrite mode is the kernel's default for a new instance, but start
 * writes options/overwrite 1 anyway: a buffer someone set to producer mode
 * (the top one) would otherwise keep the first events, not the last.
 *
 * Extract is tk_record in its extract mode (record.h): the same threads,
 * spool files, metadata and assembly as "tracekit record", so the file is
 * what record writes and trace-cmd reads it. What differs from trace-cmd's
 * extract (read in trace_extract() of trace-record.c, 3.4 in our mirror;
 * Debian's 3.1.6 behaves the same here, see DESIGN.md): trace-cmd flushes
 * every CPU's trace_pipe_raw with tracing still on, then disables all
 * tracing (events off, tracer nop, instances deleted) unless -k. We turn
 * tracing off first (the file ends at one instant and the writer cannot
 * overwrite the page being read), and back on afterwards when it was on,
 * so the flight recorder goes on recording; stop and reset are separate
 * commands. Like trace-cmd's, our extract consumes what it reads:
 * trace_pipe_raw has no non-consuming read, and the non-consuming "trace"
 * file (what show prints) is the kernel's text, not pages.
 *
 * stat follows trace-stat.c's order and words, so that eyes and scripts
 * used to "trace-cmd stat" find their lines: Instance, Tracer (when not
 * nop), Events (All enabled, All disabled, or Individual systems and
 * Individual events), Filters, buffer sizes, Clock (when not local),
 * Filtered event PIDs, Tracing is enabled/disabled. It leaves out what
 * belongs to the machine rather than the buffer (the error log, probes,
 * the list of instances) and the function-tracer filters, which this
 * kernel locks down. Filters are looked up only in systems with an enabled
 * event: a filter on a disabled event filters nothing, and reading every
 * filter file costs ~0.5 s on the reference machine (2323 events; one cat
 * of all of them, eventfs creating each directory on first lookup).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/flight.h>
#include <tracekit/record.h>
#include <tracekit/tracefs.h>
#include <tracekit/version.h>

#include "internal/error.h"
#include "internal/opts.h"

/* The instance name a call means, checked against @top. */
static int pick(const char *instance, bool top, const char **name)
{
	if (top && instance)
		return tk_fail(EINVAL, "flight: an instance name and the top buffer together");
	*name = top ? NULL : instance ? instance : TK_FLIGHT_INSTANCE;
	return 0;
}

/* Open a buffer that tk_flight_start() made; its absence means nothing was started. */
static struct tk_tracefs *open_existing(const char *instance, bool top)
{
	struct tk_tracefs *tfs;
	const char *name = NULL;
	int r = pick(instance, top, &name);

	if (r < 0) {
		errno = -r;
		return NULL;
	}
	tfs = tk_tracefs_open(name, 0);
	if (!tfs && errno == ENOENT && name) {
		if (!strcmp(name, TK_FLIGHT_INSTANCE))
			return tk_fail_null(ENOENT,
					    "no flight recorder: instance %s does not exist "
					    "(start one with 'tracekit start')",
					    name);
		return tk_fail_null(ENOENT, "instance %s does not exist", name);
	}
	return tfs;
}

/* Everything start sets, in order; the buffer exists and tracing is off. */
static int configure(struct tk_tracefs *tfs, const struct tk_flight_opts *o)
{
	int r;

	if (o->clock && (r = tk_tracefs_set_clock(tfs, o->clock)) < 0)
		return r;
	if (o->buffer_kb && (r = tk_tracefs_set_buffer_kb(tfs, o->buffer_kb)) < 0)
		return r;
	r = tk_tracefs_write_file(tfs, "options/overwrite", "1");
	if (r < 0)
		return r;
	if (o->tracer && (r = tk_tracefs_set_tracer(tfs, o->tracer)) < 0)
		return r;
	for (size_t i = 0; i < o->event_count; i++) {
		r = tk_tracefs_enable_events(tfs, o->events[i].spec, o->events[i].filter, NULL,
					     NULL);
		if (r < 0)
			return r;
	}
	if (o->pid_count) {
		r = tk_tracefs_set_event_pids(tfs, o->pids, o->pid_count, o->follow_fork);
		if (r < 0)
			return r;
	}
	return tk_tracefs_set_tracing_on(tfs, true);
}

TK_API int tk_flight_start(const struct tk_flight_opts *user_opts)
{
	struct tk_flight_opts o;
	struct tk_tracefs *tfs;
	const char *name = NULL;
	int r;

	r = tk_opts_copy(&o, sizeof(o), user_opts, "tk_flight_opts");
	if (r < 0)
		return r;
	r = pick(o.instance, o.top, &name);
	if (r < 0)
		return r;
	if (!o.event_count && !o.tracer)
		return tk_fail(EINVAL, "flight: nothing to trace: give events or a tracer");
	/* A pid that is gone would leave a recorder that records nothing. */
	for (size_t i = 0; i < o.pid_count; i++) {
		if (o.pids[i] <= 0 || (kill(o.pids[i], 0) < 0 && errno == ESRCH))
			return tk_fail(ESRCH, "no process with pid %d", o.pids[i]);
	}
	tfs = tk_tracefs_open(name, name ? TK_TRACEFS_CREATE : 0);
	if (!tfs) {
		if (errno == EEXIST)
			return tk_fail(EEXIST,
				       "instance %s exists already: a flight recorder runs there "
				       "('tracekit reset%s%s' removes it), or choose another "
				       "name with -B",
				       name, strcmp(name, TK_FLIGHT_INSTANCE) ? " -B " : "",
				       strcmp(name, TK_FLIGHT_INSTANCE) ? name : "");
		return -errno;
	}
	/* A new instance starts with tracing on; the top buffer may hold others' events. */
	r = tk_tracefs_set_tracing_on(tfs, false);
	if (r == 0 && !name)
		r = tk_tracefs_disable_all_events(tfs);
	if (r == 0)
		r = configure(tfs, &o);
	if (r < 0) {
		char msg[1024];

		/* Keep the refusal's message: removal is cleanup. */
		snprintf(msg, sizeof(msg), "%s", tk_errmsg());
		if (name)
			tk_tracefs_remove(tfs);
		else
			tk_tracefs_close(tfs);
		return tk_fail(-r, "%s", msg);
	}
	tk_tracefs_close(tfs);
	return 0;
}

TK_API int tk_flight_extract(const struct tk_flight_extract_opts *user_opts,
			     struct tk_record_cpu_stats **stats, uint32_t *count)
{
	struct tk_flight_extract_opts o;
	struct tk_tracefs *tfs;
	struct tk_record *rec;
	const char *name = NULL;
	int r;

	if (stats)
		*stats = NULL;
	if (count)
		*count = 0;
	r = tk_opts_copy(&o, sizeof(o), user_opts, "tk_flight_extract_opts");
	if (r < 0)
		return r;
	if (!user_opts || !o.output)
		return tk_fail(EINVAL, "flight: extract needs an output path");
	r = pick(o.instance, o.top, &name);
	if (r < 0)
		return r;
	/* Said here, in flight words, before record would say it about a file. */
	tfs = open_existing(o.instance, o.top);
	if (!tfs)
		return -errno;
	tk_tracefs_close(tfs);
	{
		TK_OPTS(tk_record_opts, ro, .output = o.output, .instance = name, .top = !name,
			.existing_instance = name != NULL, .file_version = o.file_version,
			.compression = o.compression, .tracer_version = TK_VERSION_TEXT,
			.extract = true);

		rec = tk_record_new(&ro);
	}
	if (!rec)
		return -errno;
	r = tk_record_start(rec);
	/* Nothing more can come (tracing is off): stopping drains what is there. */
	if (r == 0)
		r = tk_record_stop(rec);
	if (r == 0)
		r = tk_record_finish(rec);
	if (r == 0 && stats && count) {
		uint32_t n;
		const struct tk_record_cpu_stats *st = tk_record_cpu_stats(rec, &n);

		*stats = malloc((n ? n : 1) * sizeof(**stats));
		if (!*stats) {
			r = tk_fail(ENOMEM, "out of memory");
		} else {
			memcpy(*stats, st, n * sizeof(**stats));
			*count = n;
		}
	}
	if (r < 0) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", tk_errmsg());
		tk_record_free(rec);
		return tk_fail(-r, "%s", msg);
	}
	tk_record_free(rec);
	return 0;
}

static int set_on(const char *instance, bool top, bool on)
{
	struct tk_tracefs *tfs = open_existing(instance, top);
	int r;

	if (!tfs)
		return -errno;
	r = tk_tracefs_set_tracing_on(tfs, on);
	tk_tracefs_close(tfs);
	return r;
}

TK_API int tk_flight_stop(const char *instance, bool top)
{
	return set_on(instance, top, false);
}

TK_API int tk_flight_restart(const char *instance, bool top)
{
	return set_on(instance, top, true);
}

/* Copy @path to @fd in large reads: a trace file of a big buffer runs to megabytes. */
static int copy_to_fd(const char *path, int fd)
{
	char buf[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (in < 0)
		return tk_fail(errno, "%s: %s", path, strerror(errno));
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf)), off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = tk_fail(errno, "%s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				err = tk_fail(errno, "cannot write the trace text: %s",
					      strerror(errno));
				break;
			}
			off += w;
		}
		if (err)
			break;
	}
	close(in);
	return err;
}

TK_API int tk_flight_show(const char *instance, bool top, int cpu, int fd)
{
	struct tk_tracefs *tfs = open_existing(instance, top);
	char *path;
	int r;

	if (!tfs)
		return -errno;
	if (cpu < 0)
		r = asprintf(&path, "%s/trace", tk_tracefs_dir(tfs));
	else
		r = asprintf(&path, "%s/per_cpu/cpu%d/trace", tk_tracefs_dir(tfs), cpu);
	tk_tracefs_close(tfs);
	if (r < 0)
		return tk_fail(ENOMEM, "out of memory");
	if (cpu >= 0 && access(path, R_OK) < 0 && errno == ENOENT)
		r = tk_fail(ENOENT, "no CPU %d in this buffer (%s)", cpu, path);
	else
		r = copy_to_fd(path, fd);
	free(path);
	return r;
}

/* ------------------------------------------------------------------ stat */

/*
 * A control file's text without its final newline, or NULL when it cannot
 * be read: the section is then left out, as trace-cmd does. Running out of
 * memory is no such absence: it goes to *@err (the first one stays), and
 * the caller fails with it.
 */
static char *read_text(const struct tk_tracefs *tfs, const char *rel, int *err)
{
	char *text;
	size_t len;
	int r = tk_tracefs_read_file(tfs, rel, &text, &len);

	if (r < 0) {
		if (r == -ENOMEM && !*err)
			*err = r;
		return NULL;
	}
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	return text;
}

static void free_names(char **names, size_t count)
{
	for (size_t i = 0; names && i < count; i++)
		free(names[i]);
	free(names);
}

/* The directory entries of events/ or events/@sys/ that are directories, sorted. */
static int list_dirs(const struct tk_tracefs *tfs, const char *sys, char ***names, size_t *count)
{
	struct dirent **list = NULL;
	char *dir;
	int n;

	*names = NULL;
	*count = 0;
	if (asprintf(&dir, "%s/events%s%s", tk_tracefs_dir(tfs), sys ? "/" : "", sys ? sys : "") <
	    0)
		return tk_fail(ENOMEM, "out of memory");
	n = scandir(dir, &list, NULL, alphasort);
	if (n < 0) {
		int r = tk_fail(errno, "%s: %s", dir, strerror(errno));

		free(dir);
		return r;
	}
	free(dir);
	*names = calloc((size_t)n + 1, sizeof(**names));
	for (int i = 0; i < n; i++) {
		/*
		 * Directories only. eventfs may leave d_type unset, so the few
		 * files these directories hold (enable, filter, header_*) are
		 * left out by name; anything else fails its read later and is
		 * skipped there.
		 */
		if (*names && list[i]->d_name[0] != '.' && strcmp(list[i]->d_name, "enable") &&
		    strncmp(list[i]->d_name, "header_", 7) && strcmp(list[i]->d_name, "filter"))
			(*names)[(*count)++] = strdup(list[i]->d_name);
		free(list[i]);
	}
	free(list);
	for (size_t i = 0; *names && i < *count; i++) {
		if (!(*names)[i]) {
			free_names(*names, *count);
			*names = NULL;
		}
	}
	if (!*names) {
		*count = 0;
		return tk_fail(ENOMEM, "out of memory");
	}
	return 0;
}

/* What stat writes to, what it printed of the Events section, and its first ENOMEM. */
struct stat_ctx {
	const struct tk_tracefs *tfs;
	FILE *out;
	int err;
	bool any_system, any_event, any_filter;
};

/* Read events/@sys[/@ev]/@file. */
static char *event_file(struct stat_ctx *sc, const char *sys, const char *ev, const char *file)
{
	char *rel, *text;

	if (asprintf(&rel, "events/%s%s%s/%s", sys, ev ? "/" : "", ev ? ev : "", file) < 0) {
		if (!sc->err)
			sc->err = tk_fail(ENOMEM, "out of memory");
		return NULL;
	}
	text = read_text(sc->tfs, rel, &sc->err);
	free(rel);
	return text;
}

/* The first character of events/@sys/enable: '0', '1', 'X' (some), or 0 unreadable. */
static char system_state(struct stat_ctx *sc, const char *sys)
{
	char *en = event_file(sc, sys, NULL, "enable");
	char c = en ? en[0] : '\0';

	free(en);
	return c;
}

/*
 * The enabled events of a system with some on (under trace-cmd's
 * " Individual events:" heading, printed once, each system named once), or
 * with @filters the filters of every event of the system.
 */
static int system_events(struct stat_ctx *sc, const char *sys, bool filters)
{
	char **events = NULL;
	size_t nev = 0;
	bool named = false;
	int r = list_dirs(sc->tfs, sys, &events, &nev);

	for (size_t j = 0; j < nev && r == 0 && !sc->err; j++) {
		char *text = event_file(sc, sys, events[j], filters ? "filter" : "enable");

		if (text && filters && strcmp(text, "none")) {
			if (!sc->any_filter)
				fprintf(sc->out, "\nFilters:\n");
			fprintf(sc->out, "  %s:%s \"%s\"\n", sys, events[j], text);
			sc->any_filter = true;
		} else if (text && !filters && text[0] == '1') {
			if (!sc->any_event)
				fprintf(sc->out, " Individual events:\n");
			if (!named)
				fprintf(sc->out, "    %s\n", sys);
			fprintf(sc->out, "        %s\n", events[j]);
			sc->any_event = named = true;
		}
		free(text);
	}
	free_names(events, nev);
	return r ? r : sc->err;
}

/* The Events and Filters sections. */
static int stat_events(struct stat_ctx *sc)
{
	char **systems = NULL, *all = read_text(sc->tfs, "events/enable", &sc->err);
	size_t nsys = 0;
	int r;

	fprintf(sc->out, "\nEvents:\n");
	if (all && (all[0] == '0' || all[0] == '1')) {
		fprintf(sc->out, all[0] == '1' ? " All enabled\n" : " All disabled\n");
		free(all);
		return 0;
	}
	free(all);
	if (sc->err)
		return sc->err;
	r = list_dirs(sc->tfs, NULL, &systems, &nsys);
	/* trace-cmd lists the whole systems first, then the events of the mixed ones. */
	for (size_t i = 0; i < nsys && r == 0 && !sc->err; i++) {
		if (system_state(sc, systems[i]) == '1') {
			if (!sc->any_system)
				fprintf(sc->out, " Individual systems:\n");
			fprintf(sc->out, "   %s\n", systems[i]);
			sc->any_system = true;
		}
	}
	for (size_t i = 0; i < nsys && r == 0 && !sc->err; i++) {
		if (system_state(sc, systems[i]) == 'X')
			r = system_events(sc, systems[i], false);
	}
	if (r == 0 && !sc->err && !sc->any_system && !sc->any_event)
		fprintf(sc->out, "  (none enabled)\n");
	/* Filters of the systems that record something. */
	for (size_t i = 0; i < nsys && r == 0 && !sc->err; i++) {
		char state = system_state(sc, systems[i]);

		if (state == '1' || state == 'X')
			r = system_events(sc, systems[i], true);
	}
	free_names(systems, nsys);
	return r ? r : sc->err;
}

/* "Description" + the file's text, when it is neither empty nor @def. */
static void stat_file(struct stat_ctx *sc, const char *rel, const char *def, const char *what)
{
	char *text = read_text(sc->tfs, rel, &sc->err);

	if (text && text[0] && strcmp(text, def))
		fprintf(sc->out, "\n%s%s\n", what, text);
	free(text);
}

TK_API int tk_flight_stat(const char *instance, bool top, char **text)
{
	struct tk_tracefs *tfs = open_existing(instance, top);
	struct stat_ctx sc = {.tfs = tfs};
	char *buf = NULL, *s, clock[64];
	size_t len = 0;
	int r, on;

	*text = NULL;
	if (!tfs)
		return -errno;
	sc.out = open_memstream(&buf, &len);
	if (!sc.out) {
		tk_tracefs_close(tfs);
		return tk_fail(ENOMEM, "out of memory");
	}
	if (tk_tracefs_name(tfs)[0])
		fprintf(sc.out, "Instance: %s\n", tk_tracefs_name(tfs));
	stat_file(&sc, "current_tracer", "nop", "Tracer: ");
	r = sc.err ? sc.err : stat_events(&sc);
	if (r == 0) {
		s = read_text(tfs, "buffer_size_kb", &sc.err);
		if (s)
			fprintf(sc.out, "\nBuffer size in kilobytes (per cpu):\n   %s\n", s);
		free(s);
		s = read_text(tfs, "buffer_total_size_kb", &sc.err);
		if (s)
			fprintf(sc.out, "\nBuffer total size in kilobytes:\n   %s\n", s);
		free(s);
		r = tk_tracefs_get_clock(tfs, clock, sizeof(clock));
		if (r == 0 && strcmp(clock, "local"))
			fprintf(sc.out, "\nClock: %s\n", clock);
		else if (r == -ENOMEM && !sc.err)
			sc.err = r;
		stat_file(&sc, "set_event_pid", "", "Filtered event PIDs:\n");
		on = tk_tracefs_get_tracing_on(tfs);
		r = on < 0 ? on : sc.err;
		if (r == 0)
			fprintf(sc.out,
				on ? "\nTracing is enabled\n\n" : "\nTracing is disabled\n\n");
	}
	tk_tracefs_close(tfs);
	if (fclose(sc.out) != 0 && r == 0)
		r = tk_fail(ENOMEM, "out of memory");
	if (r < 0) {
		free(buf);
		return r;
	}
	*text = buf;
	return 0;
}

TK_API int tk_flight_reset(const char *instance, bool top)
{
	struct tk_tracefs *tfs = open_existing(instance, top);
	int r;

	if (!tfs)
		return -errno;
	if (tk_tracefs_name(tfs)[0])
		return tk_tracefs_remove(tfs);
	/* The top buffer stays: put it back as the kernel boots it. */
	r = tk_tracefs_set_tracing_on(tfs, false);
	if (r == 0)
		r = tk_tracefs_disable_all_events(tfs);
	if (r == 0)
		r = tk_tracefs_set_event_pids(tfs, NULL, 0, false);
	if (r == 0) {
		int err = 0;
		char *tracer = read_text(tfs, "current_tracer", &err);

		/* Writing nop where nop runs already is skipped: some kernels refuse the file. */
		if (err)
			r = err;
		else if (!tracer || strcmp(tracer, "nop"))
			r = tk_tracefs_write_file(tfs, "current_tracer", "nop");
		free(tracer);
	}
	if (r == 0)
		r = tk_tracefs_set_tracing_on(tfs, true);
	tk_tracefs_close(tfs);
	return r;
}
