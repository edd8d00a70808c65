// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit record: capture kernel events into a .dat file.
 *
 * The capture itself is the library's (tk_record_*): this file parses the
 * command line, starts the command to trace, waits for the end and prints
 * the summary.
 *
 * Signals: SIGINT, SIGTERM, SIGHUP and SIGCHLD are blocked before the
 * capture threads exist (they inherit the mask) and taken synchronously by
 * the main thread with sigtimedwait(). So Ctrl-C is an ordinary event of
 * the main loop, which then stops, drains and writes a complete file, and
 * the instance is removed by the same code path as on success. No handler
 * ever runs asynchronously.
 *
 * The command (tk_command_*): checked before anything is created, forked
 * before tracing starts and held until set_event_pid holds its pid (for -F)
 * and tracing is on. It gets TRACEKIT_INSTANCE=<instance directory> so that
 * it can write its own marks to the instance's trace_marker. When the
 * recording ends first (--duration, a signal to the recorder), the command
 * is stopped (the signal, then SIGKILL after TK_COMMAND_GRACE_SECONDS) and
 * reaped before tracing stops, so its end is in the file and nothing is
 * left running. A command that failed on its own makes the exit status 1.
 *
 * Cached probes: an -e spec spelled "%PROVIDER/EVENT", "%PROVIDER:EVENT",
 * "sdt_PROVIDER:EVENT" or "%GROUP/EVENT" names SDT notes and user probes
 * of the build-id cache (tracekit cache --add). Each is resolved to its
 * uprobe_events lines before anything touches tracefs, and those join the
 * --probe list, so the library creates, enables and removes them exactly as
 * it does --probe definitions. An SDT line carries "(0xREFCTR)", the file
 * offset of the provider's semaphore: while the uprobe is registered the
 * kernel increments that counter in every process mapping the file, so the
 * program's "if (PROVIDER_EVENT_ENABLED())" guarded probes run. The command
 * execs only after the probes are enabled, so it sees the counter raised
 * from its first instruction. One SDT name used at several places gives
 * several lines under one name; the kernel would take them as one event,
 * but the library refuses a second probe of an existing name, so the
 * second and later places become EVENT_1, EVENT_2 ... as perf names them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/appevent.h>
#include <tracekit/cache.h>
#include <tracekit/command.h>
#include <tracekit/perfrecord.h>
#include <tracekit/record.h>
#include <tracekit/tracefs.h>
#include <tracekit/version.h>

#include "cli.h"

const char cmd_record_usage[] =
	"usage: tracekit record [options] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Record kernel events into a trace-cmd .dat file, in a tracefs instance of\n"
	"its own (tracekit-<pid>) that is removed at the end. Recording stops when\n"
	"COMMAND exits, after --duration, or on Ctrl-C (SIGINT/SIGTERM); the file is\n"
	"complete in every case. trace_marker writes are always recorded; COMMAND\n"
	"finds the instance directory in $TRACEKIT_INSTANCE.\n"
	"\n"
	"options:\n"
	"  -e, --event SYSTEM[:EVENT]  events to record; globs allowed (repeatable)\n"
	"  -e %PROVIDER/EVENT, -e %PROVIDER:EVENT, -e sdt_PROVIDER:EVENT\n"
	"                          an SDT probe of the cache (tracekit cache --add\n"
	"                          BINARY): created as a uprobe with its semaphore,\n"
	"                          recorded, removed; %GROUP/EVENT does the same for\n"
	"                          cached user probes; @PATH and #BUILDID narrow it\n"
	"      --cache-dir DIR     cache for those (default $TRACEKIT_CACHE_DIR, then\n"
	"                          ~/.debug)\n"
	"  -f, --filter EXPR       filter for the events of the preceding -e\n"
	"      --probe DEFINITION  dynamic probe to create, record and remove\n"
	"                          (repeatable): 'p[:[GROUP/]EVENT] SYMBOL[+OFF] [ARGS]'\n"
	"                          (kprobe) or 'p[:[GROUP/]EVENT] PATH:OFFSET [ARGS]'\n"
	"                          (uprobe), 'r' for return probes; group tracekit\n"
	"  -p, --plugin TRACER     tracer to run (function, function_graph, nop ...;\n"
	"                          see 'tracekit list --tracers')\n"
	"  -o, --output FILE       output file (default trace.dat); with --perf, \"-\"\n"
	"                          (standard output), a FIFO or a character device\n"
	"                          get perf's pipe format, as perf record -o -\n"
	"  -b, --buffer-size KB    ring buffer size per CPU, in KiB (default for an own\n"
	"                          instance: 16384, at most 1/256 of memory in all)\n"
	"  -C, --clock CLOCK       trace clock (see 'tracekit list --clocks')\n"
	"  -P, --pid PID           record only events of this process (repeatable)\n"
	"  -F, --follow            record only events of COMMAND and its children\n"
	"      --duration SECONDS  stop after this time\n"
	"      --top               record the top-level buffer, not an own instance\n"
	"  -B, --instance NAME     record in this instance (created, then removed)\n"
	"      --compression zstd|zlib|none\n"
	"                          codec (default zstd; v6 is never compressed);\n"
	"                          Debian 12's trace-cmd 3.1.6 reads zstd, not zlib\n"
	"      --file-version 6|7  .dat version (default 7)\n"
	"      --capture splice|mmap\n"
	"                          how pages leave the kernel (default splice; mmap\n"
	"                          needs kernel 6.10, kept for measurements)\n"
	"      --user              also record COMMAND's application events\n"
	"                          (tracekit/appevent.h) into the buffer instance\n"
	"                          'user'; sets the trace clock to x86-tsc (invariant\n"
	"                          TSC) or mono, unless -C names one of them\n"
	"      --user-pid PID      also record the application events of this running\n"
	"                          process (it connects within ~100 ms)\n"
	"      --user-buffer KB    buffer per application thread, in KiB (default\n"
	"                          1024)\n"
	"      --user-mode drop|overwrite\n"
	"                          a full application buffer drops the newest event\n"
	"                          (default) or overwrites the oldest page\n"
	"      --perf              record through perf_event_open into a perf.data\n"
	"                          file (default when FILE ends in .data); the\n"
	"                          letters then mean what perf record's do:\n"
	"  perf.data options (with --perf):\n"
	"  -e EVENT[,EVENT]...     tracepoints, or software and hardware events by\n"
	"                          perf's names (cpu-clock, task-clock, page-faults,\n"
	"                          cycles...; :u, :k, :p...); {A,B} is a group; cycles\n"
	"                          falls back to cpu-clock without a hardware PMU\n"
	"  -a, --all-cpus          every task on every CPU (the default without\n"
	"                          COMMAND; with it, only COMMAND and its children)\n"
	"  -p, --pid PID[,PID]     follow these running processes\n"
	"  -t, --tid TID[,TID]     follow these running threads\n"
	"  -C, --cpu CPUS          only these CPUs (0-3,6)\n"
	"  -F, --freq HZ|max       samples per second of software and hardware\n"
	"                          events (default 4000)\n"
	"  -c, --count COUNT       a sample every COUNT events instead (all events)\n"
	"  -g                      record callchains (--call-graph fp)\n"
	"      --call-graph fp|dwarf[,SIZE]|lbr\n"
	"                          how: frame pointers, a user stack copy of SIZE\n"
	"                          bytes (default 8192) or last branch records\n"
	"  -m, --mmap-pages PAGES  ring pages per CPU, a power of two (default 64)\n"
	"  -k, --clockid CLOCK     sample times from this clock: mono, raw, realtime,\n"
	"                          boot, tai (as perf spells them) or a clockid\n"
	"                          number; realtime, boot and tai suit software\n"
	"                          events only (default: the kernel's perf clock)\n"
	"      --append            add this recording to the existing FILE\n"
	"  -q, --quiet             no summary\n"
	"  -h, --help              show this help\n";

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* 1234567 -> "1,234,567": loss counts are read at a glance. */
static void group_digits(char *buf, size_t cap, uint64_t v)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	size_t o = 0;

	for (int i = 0; i < len && o + 2 < cap; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
}

static void print_summary(struct tk_record *rec, const char *out, int version,
			  enum tk_compression codec, double seconds)
{
	const struct tk_record_cpu_stats *st;
	uint64_t events = 0, pages = 0, lost = 0;
	uint32_t n;
	struct stat sb;
	struct rusage ru;
	double cpu = 0;

	st = tk_record_cpu_stats(rec, &n);
	for (uint32_t i = 0; i < n; i++) {
		fprintf(stderr,
			"tracekit record: CPU %u: %" PRIu64 " events, %" PRIu64
			" pages, entries %" PRIu64 ", overrun %" PRIu64 ", commit overrun %" PRIu64
			", dropped %" PRIu64 ", pages after a loss %" PRIu64 " (%" PRIu64
			" events counted there)\n",
			st[i].cpu, st[i].events, st[i].pages, st[i].entries, st[i].overrun,
			st[i].commit_overrun, st[i].dropped_events, st[i].missed_pages,
			st[i].missed_events);
		events += st[i].events;
		pages += st[i].pages;
		lost += st[i].overrun + st[i].commit_overrun + st[i].dropped_events;
	}
	/* The recorder's own CPU time (threads included, the command excluded). */
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	fprintf(stderr,
		"tracekit record: %s (v%d, %s): %" PRIu64 " events, %" PRIu64
		" pages, %.2f MB in %.2f s (recorder CPU %.2f s), %" PRIu64 " events lost\n",
		out, version, tk_codec_name(codec), events, pages,
		stat(out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0.0, seconds, cpu, lost);
	if (lost)
		fprintf(stderr,
			"tracekit record: warning: %" PRIu64
			" events were lost: use a larger buffer (-b) or fewer events\n",
			lost);
	/* Which size would have kept them, per CPU, so the next run can be right. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t l = st[i].overrun + st[i].commit_overrun + st[i].dropped_events;
		uint32_t kb = tk_record_suggest_buffer_kb(rec, st[i].cpu);
		char num[32];

		if (!l)
			continue;
		group_digits(num, sizeof(num), l);
		if (kb)
			fprintf(stderr,
				"tracekit record: lost %s events on CPU %u with -b %u: try -b %u\n",
				num, st[i].cpu, tk_record_buffer_kb(rec), kb);
		else
			fprintf(stderr, "tracekit record: lost %s events on CPU %u\n", num,
				st[i].cpu);
	}
}

/* One line per application buffer, and the total. */
static void print_user_summary(const struct tk_appevent_session *s)
{
	struct tk_appevent_buffer_stats st;
	uint64_t pages = 0, lost = 0;
	size_t n = tk_appevent_session_buffers(s);

	for (size_t i = 0; i < n; i++) {
		if (tk_appevent_session_buffer_stats(s, i, &st) < 0)
			continue;
		fprintf(stderr,
			"tracekit record: user buffer %zu: %s pid %d tid %d%s: %" PRIu64
			" pages, %" PRIu64 " events lost\n",
			i, st.comm, st.pid, st.tid, st.level ? " (signal handler)" : "", st.pages,
			st.lost);
		pages += st.pages;
		lost += st.lost;
	}
	fprintf(stderr,
		"tracekit record: application events: %zu buffers, %" PRIu64 " pages, %" PRIu64
		" events lost\n",
		n, pages, lost);
	if (lost)
		fprintf(stderr,
			"tracekit record: warning: %" PRIu64
			" application events were lost: use a larger --user-buffer\n",
			lost);
}

struct record_args {
	struct tk_record_opts opts;
	struct tk_record_event *events;
	size_t nevents;
	const char **probes;
	size_t nprobes;
	size_t probes_cap;
	char **owned; /* probe lines made from the cache, freed at the end */
	size_t nowned;
	const char *cache_dir;
	int *pids;
	size_t npids;
	bool follow;
	double duration;
	bool quiet;
	/* perf.data options, refused here with a hint */
	bool all_cpus, callchain, append, use_clockid;
	int32_t clockid;
	uint64_t freq, count;
	char **command;
	/* --user: application events */
	bool user;
	int user_pid; /* --user-pid */
	struct tk_appevent_opts user_opts;
};

/*
 * Until the command exits, the duration passes or a signal comes. Return:
 * the signal that ended the wait (0 otherwise), or -1 on a capture error.
 */
static int wait_loop(struct tk_record *rec, struct record_args *a, struct tk_command *cmd,
		     const sigset_t *set)
{
	double deadline = a->duration > 0 ? now() + a->duration : 0;

	for (;;) {
		struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
		siginfo_t info;
		int sig;

		if (deadline) {
			double left = deadline - now();

			if (left <= 0)
				return 0;
			if (left < 0.2)
				ts.tv_nsec = (long)(left * 1e9);
		}
		if (tk_record_error(rec))
			return -1;
		sig = sigtimedwait(set, &info, &ts);
		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			if (cmd && tk_command_poll(cmd))
				return 0;
			continue;
		}
		return sig; /* SIGINT, SIGTERM, SIGHUP */
	}
}

static int run(struct record_args *a)
{
	struct tk_command *cmd = NULL;
	struct tk_appevent_session *user = NULL;
	sigset_t set, old;
	struct tk_record *rec;
	double start;
	int r = CLI_OK, lib, sig;

	/* A command that cannot run is refused before any file or instance exists. */
	if (a->command && tk_command_check(a->command[0]) < 0)
		return cli_lib_error(NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);

	/*
	 * Application events share the kernel's timeline when both use one
	 * clock: the session picks x86-tsc (invariant TSC) or mono, unless -C
	 * chose one of them.
	 */
	if (a->user) {
		const char *c = a->opts.clock;

		if (c && !strcmp(c, "mono"))
			a->user_opts.clock = TK_APPEVENT_CLOCK_MONO;
		else if (c && !strcmp(c, "x86-tsc"))
			a->user_opts.clock = TK_APPEVENT_CLOCK_TSC;
		else if (c)
			a->user_opts.clock = TK_APPEVENT_CLOCK_MONO;
		user = tk_appevent_session_new(&a->user_opts);
		if (!user) {
			r = cli_lib_error(NULL);
			goto out_mask;
		}
		if (c && strcmp(c, tk_appevent_session_clock(user)))
			fprintf(stderr,
				"tracekit record: warning: application events are stamped with "
				"the mono clock, not %s: their times will not match the kernel's\n",
				c);
		if (!c)
			a->opts.clock = tk_appevent_session_clock(user);
		if (a->user_pid && tk_appevent_session_attach(user, a->user_pid) < 0) {
			r = cli_lib_error(NULL);
			goto out_user;
		}
	}
	rec = tk_record_new(&a->opts);
	if (!rec) {
		r = cli_lib_error(NULL);
		goto out_user;
	}
	if (a->command) {
		char *env[3] = {NULL, NULL, NULL};

		if (asprintf(&env[0], "TRACEKIT_INSTANCE=%s",
			     tk_tracefs_dir(tk_record_tracefs(rec))) < 0 ||
		    (user && asprintf(&env[1], "%s=%s", TK_APPEVENT_ENV,
				      tk_appevent_session_path(user)) < 0)) {
			r = cli_error("out of memory");
			goto out;
		}
		cmd = tk_command_new(a->command, env);
		/* The child has its own copy of the environment now. */
		free(env[0]);
		free(env[1]);
		if (!cmd) {
			r = cli_lib_error(NULL);
			goto out;
		}
	}
	if (a->follow && cmd) {
		int *np = realloc(a->pids, (a->npids + 1) * sizeof(*np));

		if (!np) {
			r = cli_error("out of memory");
			goto out;
		}
		a->pids = np;
		a->pids[a->npids++] = tk_command_pid(cmd);
	}
	if (a->npids && tk_record_set_pids(rec, a->pids, a->npids, a->follow) < 0) {
		r = cli_lib_error(NULL);
		goto out;
	}
	start = now();
	if (tk_record_start(rec) < 0) {
		r = cli_lib_error(NULL);
		goto out;
	}
	if (cmd && tk_command_release(cmd) < 0) {
		/* The command never ran: nothing worth a file or a recover was recorded. */
		r = cli_lib_error(NULL);
		tk_record_stop(rec);
		tk_record_discard(rec);
		goto out;
	}
	sig = wait_loop(rec, a, cmd, &set);
	if (cmd)
		tk_command_stop(cmd, sig > 0 ? sig : SIGTERM, TK_COMMAND_GRACE_SECONDS);

	lib = tk_record_stop(rec);
	if (sig < 0 || lib < 0)
		r = cli_lib_error(NULL);
	if (user && tk_appevent_session_stop(user) < 0)
		r = cli_lib_error(NULL);
	if (tk_record_finish(rec) < 0) {
		r = cli_lib_error(a->opts.output);
	} else if (user && tk_appevent_session_write(user, a->opts.output) < 0) {
		r = cli_lib_error(a->opts.output);
	} else if (!a->quiet) {
		print_summary(rec, a->opts.output, a->opts.file_version, a->opts.compression,
			      now() - start);
		if (user)
			print_user_summary(user);
	}
	if (r == CLI_OK && cmd && tk_command_failed(cmd)) {
		fprintf(stderr, "tracekit record: command %s\n", tk_command_describe(cmd));
		r = CLI_FAIL;
	}
out:
	/* Before the instance goes: the command holds its trace_pipe_raw descriptors. */
	tk_command_free(cmd);
	tk_record_free(rec);
out_user:
	tk_appevent_session_free(user);
out_mask:
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* What perf mode's options gathered; the events and lists are the library's to free. */
struct perf_args {
	struct tk_perfrecord_opts o;
	struct tk_perfrecord_event *events;
	size_t nevents;
	size_t last_e; /* first event of the latest -e, which a following -f filters */
	int32_t *cpus, *pids, *tids;
	size_t ncpus, npids, ntids;
	bool quiet;
};

/* --perf or an output named *.data: the perf_event_open recorder (tk_perfrecord). */
static int run_perf(struct perf_args *a)
{
	struct tk_perfrecord_opts *o = &a->o;
	struct tk_perfrecord_stats st;
	int r;

	o->events = a->events;
	o->nr_events = a->nevents;
	o->cpus = a->cpus;
	o->nr_cpus = a->ncpus;
	o->pids = a->pids;
	o->nr_pids = a->npids;
	o->tids = a->tids;
	o->nr_tids = a->ntids;
	/* CMDLINE: left NULL, the library stores this process's whole command line. */
	r = tk_perfrecord_run(o, &st);
	if (r < 0)
		return cli_lib_error(NULL);
	if (!a->quiet) {
		fprintf(stderr,
			"tracekit record: %s%s: %" PRIu64 " samples of %u tracepoints and %u "
			"other events on %u CPUs, %.2f MB, %u build ids, %" PRIu64
			" samples lost (%" PRIu64 " LOST records)\n",
			o->output, o->append ? " (appended)" : "", st.samples, st.nr_tracepoints,
			st.nr_counters, st.nr_cpus, (double)st.bytes / 1e6, st.nr_build_ids,
			st.lost, st.lost_records);
	}
	if (st.child_failed) {
		fprintf(stderr, "tracekit record: command %s\n", st.child_outcome);
		return CLI_FAIL;
	}
	return CLI_OK;
}

/*
 * perf record's -k spellings: a clockid number, or a clock name, long or
 * short, with or without "CLOCK_", in any case.
 */
static int parse_clockid(const char *s, int32_t *out)
{
	static const struct {
		const char *name;
		int32_t id;
	} clocks[] = {
		{"monotonic", CLOCK_MONOTONIC},
		{"mono", CLOCK_MONOTONIC},
		{"monotonic_raw", CLOCK_MONOTONIC_RAW},
		{"raw", CLOCK_MONOTONIC_RAW},
		{"realtime", CLOCK_REALTIME},
		{"real", CLOCK_REALTIME},
		{"boottime", CLOCK_BOOTTIME},
		{"boot", CLOCK_BOOTTIME},
		{"tai", CLOCK_TAI},
	};
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end != s && !*end) {
		if (errno || v < 0 || v > INT32_MAX)
			return -1;
		*out = (int32_t)v;
		return 0;
	}
	if (!strncasecmp(s, "CLOCK_", 6))
		s += 6;
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (!strcasecmp(s, clocks[i].name)) {
			*out = clocks[i].id;
			return 0;
		}
	}
	return -1;
}

/* The spellings tk_cache_resolve() takes; anything else is a tracefs event glob. */
static bool is_cache_spec(const char *spec)
{
	return spec[0] == '%' || !strncmp(spec, "sdt_", 4);
}

/* "GROUP/EVENT" of a uprobe_events line, or "" when it does not parse. */
static void def_name(const char *def, char *out, size_t cap)
{
	struct tk_tracefs_probe p;

	out[0] = 0;
	if (tk_tracefs_probe_parse(def, &p) < 0)
		return;
	snprintf(out, cap, "%s/%s", p.group, p.event);
	tk_tracefs_probe_release(&p);
}

static bool name_taken(const struct record_args *a, const char *name)
{
	char have[2 * TK_TRACEFS_PROBE_NAME_MAX + 2];

	for (size_t i = 0; i < a->nowned; i++) {
		def_name(a->owned[i], have, sizeof(have));
		if (!strcmp(have, name))
			return true;
	}
	return false;
}

/*
 * Add one resolved line to the probe list. The same line twice (the
 * spellings overlap: -e %p:e -e sdt_p:e) is taken once. A second place of
 * one name is renamed EVENT_N, the first free N, as perf does.
 */
static int add_cached_probe(struct record_args *a, const struct tk_cache_uprobe *u, char ***orig)
{
	char name[2 * TK_TRACEFS_PROBE_NAME_MAX + 2], *def, *first, **no;
	struct tk_tracefs_probe p;

	if (tk_tracefs_probe_parse(u->def, &p) < 0)
		return cli_error("cache: malformed probe line '%s'", u->def);
	for (size_t i = 0; i < a->nowned; i++) {
		if (!strcmp((*orig)[i], u->def)) {
			tk_tracefs_probe_release(&p);
			return CLI_OK;
		}
	}
	snprintf(name, sizeof(name), "%s/%s", p.group, p.event);
	if (!name_taken(a, name)) {
		def = strdup(u->def);
	} else {
		def = NULL;
		for (unsigned int n = 1; n < 10000 && !def; n++) {
			char event[TK_TRACEFS_PROBE_NAME_MAX + 16];

			snprintf(event, sizeof(event), "%s_%u", u->event, n);
			if (strlen(event) > TK_TRACEFS_PROBE_NAME_MAX) {
				tk_tracefs_probe_release(&p);
				return cli_error("%s/%s: the name is too long for a numbered copy "
						 "of a probe used at several places",
						 u->group, u->event);
			}
			snprintf(name, sizeof(name), "%s/%s", p.group, event);
			if (name_taken(a, name))
				continue;
			if (tk_tracefs_probe_rename(&p, event) < 0) {
				tk_tracefs_probe_release(&p);
				return cli_lib_error(NULL);
			}
			def = p.text;
			p.text = NULL;
		}
	}
	tk_tracefs_probe_release(&p);
	first = strdup(u->def);
	if (!def || !first) {
		free(def);
		free(first);
		return cli_error("out of memory");
	}
	no = realloc(*orig, (a->nowned + 1) * sizeof(*no));
	if (no)
		*orig = no;
	if (no) {
		no = realloc(a->owned, (a->nowned + 1) * sizeof(*no));
		if (no)
			a->owned = no;
	}
	if (no && a->nprobes == a->probes_cap) {
		const char **np = realloc(a->probes, 2 * a->probes_cap * sizeof(*np));

		if (np) {
			a->probes = np;
			a->probes_cap *= 2;
		} else {
			no = NULL;
		}
	}
	if (!no) {
		free(def);
		free(first);
		return cli_error("out of memory");
	}
	(*orig)[a->nowned] = first;
	a->owned[a->nowned++] = def;
	a->probes[a->nprobes++] = def;
	return CLI_OK;
}

/* An "sdt_GROUP:EVENT" that perf probe already created is an ordinary tracefs event. */
static bool in_tracefs(const char *spec)
{
	const char *root = tk_tracefs_root();
	size_t glen = strcspn(spec, ":/");
	char *path;
	struct stat st;
	bool ok;

	if (!root || !spec[glen] ||
	    asprintf(&path, "%s/events/%.*s/%s", root, (int)glen, spec, spec + glen + 1) < 0)
		return false;
	ok = stat(path, &st) == 0;
	free(path);
	return ok;
}

/*
 * Move the cached-probe specs of -e to the probe list, before tracefs is
 * touched: a probe that is not cached is an error of its own, not an
 * empty recording. The cache opens only when some spec needs it.
 */
static int resolve_cached_events(struct record_args *a)
{
	struct tk_cache *cache = NULL;
	char **orig = NULL;
	size_t kept = 0;
	int r = CLI_OK;

	for (size_t i = 0; i < a->nevents && r == CLI_OK; i++) {
		struct tk_record_event *ev = &a->events[i];
		struct tk_cache_uprobe *u;
		size_t n;
		int lib;

		if (!is_cache_spec(ev->spec)) {
			a->events[kept++] = *ev;
			continue;
		}
		if (!cache) {
			cache = tk_cache_open(a->cache_dir);
			if (!cache) {
				r = cli_lib_error(a->cache_dir);
				break;
			}
		}
		lib = tk_cache_resolve(cache, ev->spec, &u, &n);
		if (lib == -ENOENT && ev->spec[0] != '%' && in_tracefs(ev->spec)) {
			a->events[kept++] = *ev;
			continue;
		}
		if (lib == -EINVAL) {
			r = cli_usage_error("%s", tk_errmsg());
			break;
		}
		if (lib < 0) {
			r = cli_lib_error(NULL);
			break;
		}
		/* The library filters the events it enables by -e, not the probes it creates. */
		if (ev->filter)
			r = cli_usage_error("-f applies to tracefs events, not to the cached probe "
					    "'%s'",
					    ev->spec);
		for (size_t j = 0; j < n && r == CLI_OK; j++)
			r = add_cached_probe(a, &u[j], &orig);
		tk_cache_uprobes_free(u, n);
	}
	if (r == CLI_OK)
		a->nevents = kept;
	for (size_t i = 0; i < a->nowned; i++)
		free(orig[i]);
	free(orig);
	tk_cache_close(cache);
	return r;
}

static bool ends_with_data(const char *path)
{
	size_t n = strlen(path);

	return n > 5 && !strcmp(path + n - 5, ".data");
}

/* Long options that take a value in either mode: their value is skipped when looking for --perf. */
static bool long_takes_value(const char *opt)
{
	static const char *const with_value[] = {
		"event", "filter",     "plugin",     "output",	    "buffer-size",  "clock",
		"pid",	 "instance",   "duration",   "compression", "file-version", "capture",
		"probe", "cache-dir",  "freq",	     "count",	    "clockid",	    "cpu",
		"tid",	 "call-graph", "mmap-pages",
	};
	size_t n = strcspn(opt, "=");

	if (opt[n] == '=')
		return false;
	for (size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (strlen(with_value[i]) == n && !strncmp(with_value[i], opt, n))
			return true;
	return false;
}

/*
 * Whether this is a perf.data recording (--perf, or the last -o names a
 * *.data file): the option letters then mean what perf record's do (-F
 * frequency, -p PID, -C CPUs...), so the mode is settled before getopt
 * reads them. The scan stops where getopt would, at "--" or the command.
 * -F is the one letter whose value depends on the mode: a number after it
 * (or "max") is taken as its value, since no command is named that.
 */
static bool perf_mode(int argc, char **argv)
{
	const char *out = NULL;
	bool perf = false;

	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "--") || s[0] != '-' || !s[1])
			break;
		if (s[1] == '-') {
			if (!strcmp(s, "--perf"))
				perf = true;
			else if (!strncmp(s, "--output=", 9))
				out = s + 9;
			else if (!strcmp(s, "--output") && i + 1 < argc)
				out = argv[++i];
			else if (long_takes_value(s + 2))
				i++;
			continue;
		}
		for (const char *c = s + 1; *c; c++) {
			const char *val = c[1] ? c + 1 : (i + 1 < argc ? argv[i + 1] : NULL);

			if (*c == 'F') {
				if (c[1])
					break;
				if (val && (strspn(val, "0123456789") == strlen(val) ||
					    !strcmp(val, "max")))
					i++;
				break;
			}
			if (!strchr("efopbCPBkcmt", *c))
				continue;
			if (*c == 'o' && val)
				out = val;
			if (!c[1])
				i++;
			break;
		}
	}
	return perf || (out && ends_with_data(out));
}

/*
 * tracekit record in perf mode: perf record's options with perf's letters,
 * then tk_perfrecord_run(). The .dat letters that mean something else here
 * (-F, -p, -C) are perf's; the .dat-only long options are refused by name.
 */
static int cmd_record_perf(int argc, char **argv)
{
	enum {
		OPT_DURATION = 256,
		OPT_PERF,
		OPT_APPEND,
		OPT_CALL_GRAPH,
		OPT_DAT_ONLY,
	};
	static const struct option longopts[] = {
		{"event", required_argument, NULL, 'e'},
		{"filter", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"all-cpus", no_argument, NULL, 'a'},
		{"cpu", required_argument, NULL, 'C'},
		{"pid", required_argument, NULL, 'p'},
		{"tid", required_argument, NULL, 't'},
		{"freq", required_argument, NULL, 'F'},
		{"count", required_argument, NULL, 'c'},
		{"call-graph", required_argument, NULL, OPT_CALL_GRAPH},
		{"mmap-pages", required_argument, NULL, 'm'},
		{"clockid", required_argument, NULL, 'k'},
		{"append", no_argument, NULL, OPT_APPEND},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"perf", no_argument, NULL, OPT_PERF},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"plugin", required_argument, NULL, OPT_DAT_ONLY},
		{"buffer-size", required_argument, NULL, OPT_DAT_ONLY},
		{"clock", required_argument, NULL, OPT_DAT_ONLY},
		{"follow", no_argument, NULL, OPT_DAT_ONLY},
		{"instance", required_argument, NULL, OPT_DAT_ONLY},
		{"top", no_argument, NULL, OPT_DAT_ONLY},
		{"compression", required_argument, NULL, OPT_DAT_ONLY},
		{"file-version", required_argument, NULL, OPT_DAT_ONLY},
		{"capture", required_argument, NULL, OPT_DAT_ONLY},
		{"probe", required_argument, NULL, OPT_DAT_ONLY},
		{"cache-dir", required_argument, NULL, OPT_DAT_ONLY},
		{NULL, 0, NULL, 0},
	};
	struct perf_args a = {.o.sz = sizeof(a.o)};
	bool output_set = false;
	int32_t **list;
	size_t *nlist;
	unsigned long long u64;
	char *end;
	int c, lib, r = CLI_OK;

	a.o.output = "perf.data";
	while (r == CLI_OK &&
	       (c = getopt_long(argc, argv, "+:e:f:o:aC:p:t:F:c:gm:k:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			a.last_e = a.nevents;
			if (optarg[0] == '%') {
				r = cli_usage_error(
					"cached probes (-e %s) record into a .dat file, "
					"not with --perf",
					optarg);
				break;
			}
			lib = tk_perfrecord_parse_events(optarg, &a.events, &a.nevents);
			if (lib < 0)
				r = lib == -ENOMEM ? cli_lib_error(NULL)
						   : cli_usage_error("%s", tk_errmsg());
			break;
		case 'f':
			if (!a.nevents) {
				r = cli_usage_error("-f applies to the events of a preceding -e");
				break;
			}
			for (size_t i = a.last_e; i < a.nevents; i++)
				a.events[i].filter = optarg;
			break;
		case 'o':
			a.o.output = optarg;
			output_set = true;
			break;
		case 'a':
			a.o.system_wide = true;
			break;
		case 'C':
		case 'p':
		case 't':
			list = c == 'C' ? &a.cpus : c == 'p' ? &a.pids : &a.tids;
			nlist = c == 'C' ? &a.ncpus : c == 'p' ? &a.npids : &a.ntids;
			free(*list);
			*list = NULL;
			if (tk_perfrecord_parse_list(optarg, list, nlist) < 0)
				r = cli_usage_error("-%c: %s", c, tk_errmsg());
			break;
		case 'g':
			a.o.callgraph = TK_PERFRECORD_CALLGRAPH_FP;
			break;
		case OPT_CALL_GRAPH:
			if (tk_perfrecord_parse_callgraph(optarg, &a.o.callgraph, &a.o.stack_size) <
			    0)
				r = cli_usage_error("%s", tk_errmsg());
			break;
		case 'k':
			if (parse_clockid(optarg, &a.o.clockid) < 0)
				r = cli_usage_error(
					"unknown clock '%s' (mono, raw, realtime, boot, "
					"tai or a clockid number)",
					optarg);
			a.o.use_clockid = true;
			break;
		case 'm':
			if (cli_parse_u32(optarg, &a.o.mmap_pages) < 0 ||
			    (a.o.mmap_pages & (a.o.mmap_pages - 1)))
				r = cli_usage_error("-m must be a power of two of pages, not '%s'",
						    optarg);
			break;
		case 'F':
		case 'c':
			if (c == 'F' && !strcmp(optarg, "max")) {
				a.o.freq = TK_PERFRECORD_FREQ_MAX;
				break;
			}
			errno = 0;
			u64 = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || !u64 || optarg[0] == '-') {
				r = cli_usage_error("%s must be a positive number, not '%s'",
						    c == 'c' ? "-c" : "-F", optarg);
				break;
			}
			if (c == 'c')
				a.o.period = u64;
			else
				a.o.freq = u64;
			break;
		case OPT_APPEND:
			a.o.append = true;
			break;
		case OPT_DURATION:
			errno = 0;
			a.o.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(a.o.duration > 0) ||
			    !isfinite(a.o.duration))
				r = cli_usage_error(
					"duration must be a positive number of seconds, "
					"not '%s'",
					optarg);
			break;
		case OPT_PERF:
			break;
		case OPT_DAT_ONLY:
			r = cli_usage_error("%s records into a .dat file, not with --perf",
					    argv[optind - 1]);
			break;
		case 'q':
			a.quiet = true;
			break;
		case 'h':
			fputs(cmd_record_usage, stdout);
			r = cli_finish_stdout(CLI_OK);
			goto out;
		default:
			r = cli_bad_option(c, argv);
			break;
		}
	}
	if (r != CLI_OK)
		goto out;
	if (optind < argc)
		a.o.command = argv + optind;
	if (a.o.freq && a.o.period)
		r = cli_usage_error("-F and -c exclude each other");
	else if (a.o.append && !output_set)
		r = cli_usage_error("--append needs the file to add to (-o FILE)");
	else if ((a.npids || a.ntids) && (a.o.command || a.o.system_wide))
		r = cli_usage_error("-p and -t follow running tasks: not with -a or a command");
	else
		r = run_perf(&a);
out:
	tk_perfrecord_events_free(a.events, a.nevents);
	free(a.cpus);
	free(a.pids);
	free(a.tids);
	return r;
}

int cmd_record(int argc, char **argv)
{
	enum {
		OPT_DURATION = 256,
		OPT_TOP,
		OPT_COMPRESSION,
		OPT_FILE_VERSION,
		OPT_CAPTURE,
		OPT_PERF,
		OPT_PROBE,
		OPT_CACHE_DIR,
		OPT_FREQ,
		OPT_APPEND,
		OPT_USER,
		OPT_USER_BUFFER,
		OPT_USER_MODE,
		OPT_USER_PID
	};
	static const struct option longopts[] = {
		{"event", required_argument, NULL, 'e'},
		{"filter", required_argument, NULL, 'f'},
		{"plugin", required_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"buffer-size", required_argument, NULL, 'b'},
		{"clock", required_argument, NULL, 'C'},
		{"pid", required_argument, NULL, 'P'},
		{"follow", no_argument, NULL, 'F'},
		{"instance", required_argument, NULL, 'B'},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"top", no_argument, NULL, OPT_TOP},
		{"compression", required_argument, NULL, OPT_COMPRESSION},
		{"file-version", required_argument, NULL, OPT_FILE_VERSION},
		{"capture", required_argument, NULL, OPT_CAPTURE},
		{"perf", no_argument, NULL, OPT_PERF},
		{"probe", required_argument, NULL, OPT_PROBE},
		{"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
		{"all-cpus", no_argument, NULL, 'a'},
		{"freq", required_argument, NULL, OPT_FREQ},
		{"count", required_argument, NULL, 'c'},
		{"append", no_argument, NULL, OPT_APPEND},
		{"clockid", required_argument, NULL, 'k'},
		{"user", no_argument, NULL, OPT_USER},
		{"user-buffer", required_argument, NULL, OPT_USER_BUFFER},
		{"user-mode", required_argument, NULL, OPT_USER_MODE},
		{"user-pid", required_argument, NULL, OPT_USER_PID},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct record_args a = {0};
	struct tk_tracefs_probe probe;
	const char *codec = NULL;
	bool perf = false, perf_only = false;
	unsigned long long u64;
	uint32_t v;
	char *end;
	int c, r;

	if (perf_mode(argc, argv))
		return cmd_record_perf(argc, argv);
	a.opts.sz = sizeof(a.opts);
	a.user_opts.sz = sizeof(a.user_opts);
	a.opts.output = "trace.dat";
	a.opts.file_version = 7;
	a.opts.tracer_version = TK_VERSION_TEXT;
	a.events = calloc((size_t)argc + 1, sizeof(*a.events));
	a.pids = calloc((size_t)argc + 1, sizeof(*a.pids));
	a.probes = calloc((size_t)argc + 1, sizeof(*a.probes));
	a.probes_cap = (size_t)argc + 1;
	if (!a.events || !a.pids || !a.probes) {
		free(a.events);
		free(a.pids);
		free(a.probes);
		return cli_error("out of memory");
	}

	/* "+" stops at the command: its options are its own. */
	while ((c = getopt_long(argc, argv, "+:e:f:p:o:b:C:P:FB:qhac:gk:", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			a.events[a.nevents++].spec = optarg;
			break;
		case 'f':
			if (!a.nevents) {
				r = cli_usage_error("-f applies to the events of a preceding -e");
				goto out;
			}
			a.events[a.nevents - 1].filter = optarg;
			break;
		case 'p':
			a.opts.tracer = optarg;
			break;
		case 'o':
			a.opts.output = optarg;
			break;
		case 'b':
			if (cli_parse_u32(optarg, &v) < 0) {
				r = cli_usage_error("buffer size must be a positive number of KiB, "
						    "not '%s'",
						    optarg);
				goto out;
			}
			a.opts.buffer_kb = v;
			break;
		case 'C':
			a.opts.clock = optarg;
			break;
		case 'P':
			if (cli_parse_u32(optarg, &v) < 0 || v > INT32_MAX) {
				r = cli_usage_error("invalid pid '%s'", optarg);
				goto out;
			}
			a.pids[a.npids++] = (int)v;
			break;
		case 'F':
			a.follow = true;
			break;
		case 'B':
			a.opts.instance = optarg;
			break;
		case OPT_DURATION:
			errno = 0;
			a.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(a.duration > 0) ||
			    !isfinite(a.duration)) {
				r = cli_usage_error(
					"duration must be a positive number of seconds, "
					"not '%s'",
					optarg);
				goto out;
			}
			break;
		case OPT_TOP:
			a.opts.top = true;
			break;
		case OPT_COMPRESSION:
			codec = optarg;
			break;
		case OPT_FILE_VERSION:
			r = cli_parse_file_version(optarg, &a.opts.file_version);
			if (r)
				goto out;
			break;
		case OPT_CAPTURE:
			if (!strcmp(optarg, "splice")) {
				a.opts.capture = TK_RECORD_CAPTURE_SPLICE;
			} else if (!strcmp(optarg, "mmap")) {
				a.opts.capture = TK_RECORD_CAPTURE_MMAP;
			} else {
				r = cli_usage_error("capture must be splice or mmap, not '%s'",
						    optarg);
				goto out;
			}
			break;
		case OPT_PERF:
			perf = true;
			break;
		case OPT_PROBE:
			/* A malformed definition is a usage error, found before tracefs is touched.
			 */
			if (tk_tracefs_probe_parse(optarg, &probe) < 0) {
				r = cli_usage_error("%s", tk_errmsg());
				goto out;
			}
			tk_tracefs_probe_release(&probe);
			a.probes[a.nprobes++] = optarg;
			break;
		case OPT_CACHE_DIR:
			a.cache_dir = optarg;
			break;
		case 'q':
			a.quiet = true;
			break;
		case 'a':
			a.all_cpus = perf_only = true;
			break;
		case 'g':
			a.callchain = perf_only = true;
			break;
		case OPT_APPEND:
			a.append = perf_only = true;
			break;
		case 'k':
			if (parse_clockid(optarg, &a.clockid) < 0) {
				r = cli_usage_error(
					"unknown clock '%s' (mono, raw, realtime, boot, "
					"tai or a clockid number)",
					optarg);
				goto out;
			}
			a.use_clockid = perf_only = true;
			break;
		case OPT_FREQ:
		case 'c':
			errno = 0;
			u64 = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || !u64 || optarg[0] == '-') {
				r = cli_usage_error("%s must be a positive number, not '%s'",
						    c == 'c' ? "-c" : "--freq", optarg);
				goto out;
			}
			if (c == 'c')
				a.count = u64;
			else
				a.freq = u64;
			perf_only = true;
			break;
		case OPT_USER:
			a.user = true;
			break;
		case OPT_USER_PID:
			if (cli_parse_u32(optarg, &v) < 0 || !v || v > INT32_MAX) {
				r = cli_usage_error("invalid pid '%s'", optarg);
				goto out;
			}
			a.user_pid = (int)v;
			a.user = true;
			break;
		case OPT_USER_BUFFER:
			if (cli_parse_u32(optarg, &v) < 0 || v < 8 || v > 3968) {
				r = cli_usage_error("--user-buffer must be 8..3968 KiB, not '%s'",
						    optarg);
				goto out;
			}
			a.user_opts.buffer_kb = v;
			a.user = true;
			break;
		case OPT_USER_MODE:
			if (!strcmp(optarg, "drop")) {
				a.user_opts.mode = TK_APPEVENT_DROP_NEWEST;
			} else if (!strcmp(optarg, "overwrite")) {
				a.user_opts.mode = TK_APPEVENT_OVERWRITE;
			} else {
				r = cli_usage_error(
					"--user-mode must be drop or overwrite, not '%s'", optarg);
				goto out;
			}
			a.user = true;
			break;
		case 'h':
			fputs(cmd_record_usage, stdout);
			r = cli_finish_stdout(CLI_OK);
			goto out;
		default:
			r = cli_bad_option(c, argv);
			goto out;
		}
	}
	if (optind < argc)
		a.command = argv + optind;
	if (a.user && !a.command && !a.user_pid) {
		r = cli_usage_error("--user needs the command whose events to record "
				    "(-- COMMAND ARGS...) or --user-pid PID");
		goto out;
	}
	if (a.follow && !a.command) {
		r = cli_usage_error("-F needs a command to follow (-- COMMAND ARGS...)");
		goto out;
	}
	if (a.opts.top && a.opts.instance) {
		r = cli_usage_error("--top and -B exclude each other");
		goto out;
	}
	if (!codec) {
		a.opts.compression = a.opts.file_version == 6 ? TK_COMPRESS_NONE : TK_COMPRESS_ZSTD;
	} else if (tk_codec_from_name(codec, &a.opts.compression) < 0) {
		r = cli_usage_error("unknown compression '%s' (zstd, zlib or none)", codec);
		goto out;
	}
	if (a.opts.file_version == 6 && a.opts.compression != TK_COMPRESS_NONE) {
		r = cli_usage_error("file version 6 cannot be compressed (use --compression none "
				    "or --file-version 7)");
		goto out;
	}
	/* perf_mode() sent every --perf and *.data recording to cmd_record_perf(). */
	if (perf || ends_with_data(a.opts.output)) {
		r = cli_usage_error("--perf and -o FILE.data come before the command");
		goto out;
	}
	if (perf_only) {
		r = cli_usage_error("-a, -c, -g, -k, --freq and --append record into perf.data: "
				    "add --perf or name the output *.data");
		goto out;
	}
	r = resolve_cached_events(&a);
	if (r != CLI_OK)
		goto out;
	a.opts.events = a.events;
	a.opts.event_count = a.nevents;
	a.opts.probes = a.probes;
	a.opts.probe_count = a.nprobes;
	r = run(&a);
out:
	free(a.events);
	free(a.pids);
	free(a.probes);
	for (size_t i = 0; i < a.nowned; i++)
		free(a.owned[i]);
	free(a.owned);
	return r;
}
