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

/* A control file's text without its final newline, or NULL when unreadable. */
static char *read_text(const struct tk_tracefs *tfs, const char *rel)
{
	char *text;
	size_t len;

	if (tk_tracefs_read_file(tfs, rel, &text, &len) < 0)
		return NULL;
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

/* Read events/@sys[/@ev]/@file. */
static char *event_file(const struct tk_tracefs *tfs, const char *sys, const char *ev,
			const char *file)
{
	char *rel, *text;

	if (asprintf(&rel, "events/%s%s%s/%s", sys, ev ? "/" : "", ev ? ev : "", file) < 0)
		return NULL;
	text = read_text(tfs, rel);
	free(rel);
	return text;
}

/* The Events and Filters sections. */
static int stat_events(const struct tk_tracefs *tfs, FILE *out)
{
	char **systems = NULL, *all = read_text(tfs, "events/enable");
	size_t nsys = 0;
	bool any_sys = false, any_ev = false, any_filter = false;
	int r;

	fprintf(out, "\nEvents:\n");
	if (all && (all[0] == '0' || all[0] == '1')) {
		fprintf(out, all[0] == '1' ? " All enabled\n" : " All disabled\n");
		free(all);
		return 0;
	}
	free(all);
	r = list_dirs(tfs, NULL, &systems, &nsys);
	if (r < 0)
		return r;
	/* trace-cmd lists the whole systems first, then the events of the mixed ones. */
	for (size_t i = 0; i < nsys; i++) {
		char *en = event_file(tfs, systems[i], NULL, "enable");

		if (en && en[0] == '1') {
			if (!any_sys)
				fprintf(out, " Individual systems:\n");
			fprintf(out, "   %s\n", systems[i]);
			any_sys = true;
		}
		free(en);
	}
	for (size_t i = 0; i < nsys && r == 0; i++) {
		char *en = event_file(tfs, systems[i], NULL, "enable");
		char **events = NULL;
		size_t nev = 0;
		bool sys_named = false;

		if (!en || en[0] != 'X') {
			free(en);
			continue;
		}
		free(en);
		r = list_dirs(tfs, systems[i], &events, &nev);
		for (size_t j = 0; j < nev && r == 0; j++) {
			char *e = event_file(tfs, systems[i], events[j], "enable");

			if (e && e[0] == '1') {
				if (!any_ev)
					fprintf(out, " Individual events:\n");
				if (!sys_named)
					fprintf(out, "    %s\n", systems[i]);
				fprintf(out, "        %s\n", events[j]);
				any_ev = sys_named = true;
			}
			free(e);
		}
		free_names(events, nev);
	}
	if (!any_sys && !any_ev)
		fprintf(out, "  (none enabled)\n");
	/* Filters of the systems that record something. */
	for (size_t i = 0; i < nsys && r == 0; i++) {
		char *en = event_file(tfs, systems[i], NULL, "enable");
		char **events = NULL;
		size_t nev = 0;

		if (!en || en[0] == '0') {
			free(en);
			continue;
		}
		free(en);
		r = list_dirs(tfs, systems[i], &events, &nev);
		for (size_t j = 0; j < nev && r == 0; j++) {
			char *f = event_file(tfs, systems[i], events[j], "filter");

			if (f && strcmp(f, "none")) {
				if (!any_filter)
					fprintf(out, "\nFilters:\n");
				fprintf(out, "  %s:%s \"%s\"\n", systems[i], events[j], f);
				any_filter = true;
			}
			free(f);
		}
		free_names(events, nev);
	}
	free_names(systems, nsys);
	return r;
}

/* "Description" + the file's text, when it is neither empty nor @def. */
static void stat_file(const struct tk_tracefs *tfs, FILE *out, const char *rel, const char *def,
		      const char *what)
{
	char *text = read_text(tfs, rel);

	if (text && text[0] && strcmp(text, def))
		fprintf(out, "\n%s%s\n", what, text);
	free(text);
}

TK_API int tk_flight_stat(const char *instance, bool top, char **text)
{
	struct tk_tracefs *tfs = open_existing(instance, top);
	char *buf = NULL, *s, clock[64];
	size_t len = 0;
	FILE *out;
	int r, on;

	*text = NULL;
	if (!tfs)
		return -errno;
	out = open_memstream(&buf, &len);
	if (!out) {
		tk_tracefs_close(tfs);
		return tk_fail(ENOMEM, "out of memory");
	}
	if (tk_tracefs_name(tfs)[0])
		fprintf(out, "Instance: %s\n", tk_tracefs_name(tfs));
	stat_file(tfs, out, "current_tracer", "nop", "Tracer: ");
	r = stat_events(tfs, out);
	if (r == 0) {
		s = read_text(tfs, "buffer_size_kb");
		if (s)
			fprintf(out, "\nBuffer size in kilobytes (per cpu):\n   %s\n", s);
		free(s);
		s = read_text(tfs, "buffer_total_size_kb");
		if (s)
			fprintf(out, "\nBuffer total size in kilobytes:\n   %s\n", s);
		free(s);
		if (tk_tracefs_get_clock(tfs, clock, sizeof(clock)) == 0 && strcmp(clock, "local"))
			fprintf(out, "\nClock: %s\n", clock);
		stat_file(tfs, out, "set_event_pid", "", "Filtered event PIDs:\n");
		on = tk_tracefs_get_tracing_on(tfs);
		if (on < 0)
			r = on;
		else
			fprintf(out, on ? "\nTracing is enabled\n\n" : "\nTracing is disabled\n\n");
	}
	tk_tracefs_close(tfs);
	if (fclose(out) != 0 && r == 0)
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
		char *tracer = read_text(tfs, "current_tracer");

		/* Writing nop where nop runs already is skipped: some kernels refuse the file. */
		if (!tracer || strcmp(tracer, "nop"))
			r = tk_tracefs_write_file(tfs, "current_tracer", "nop");
		free(tracer);
	}
	if (r == 0)
		r = tk_tracefs_set_tracing_on(tfs, true);
	tk_tracefs_close(tfs);
	return r;
}
