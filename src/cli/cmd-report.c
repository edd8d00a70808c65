// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit report: print a .dat file as trace-cmd report does.
 *
 * The default text is line for line what `trace-cmd report` 3.1.6 prints;
 * the options keep trace-cmd's letters and meanings where it has them (-i,
 * --cpu, -t, -R, -l, -F, -v, -I, -S, -r, -n, -N, -L, -V, -T, -w, -O,
 * --pid, --comm, --kallsyms, -H and the time options; -e, -p, -P, -f, -E,
 * --events, --event, --cpus, --uname, --version and --check-events list
 * facts of the file instead of its events, through report-info.c). A
 * perf.data is printed as perf script prints it, with perf's letters
 * where trace-cmd has none (-C, -k, -c) and perf's long options
 * (--fields, --tid, --time, ...). Every other option of trace-cmd report
 * or perf script is refused by name (unsupported_opts), and an option of
 * one file kind given for the other is refused, never ignored. The work
 * is the library's tk_report_run(); this file
 * only turns the command line into tk_report_opts. Lost events are shown where
 * trace-cmd shows them and summarised per CPU on stderr, so the standard
 * output stays comparable with trace-cmd's; --header adds them (and an
 * incomplete file) as "# ..." lines after "cpus=N". A file whose CPU data
 * ends early is printed as far as it reads and the command exits 1.
 *
 * Damage (issue 21): a .dat is opened in salvage mode, so every intact
 * part is printed and each damaged region is one stderr line with its
 * offset, what was skipped and the events lost, and the command exits 1;
 * --strict makes the first damage the error, as before salvage existed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <tracekit/analyze.h>
#include <tracekit/filekind.h>
#include <tracekit/perfdata.h>
#include <tracekit/report.h>
#include <tracekit/tracedata.h>

#include "cli.h"

const char cmd_report_usage[] =
	"usage: tracekit report [options] [FILE]\n"
	"\n"
	"Print the events of a trace-cmd .dat file (v6 or v7) in time order, as\n"
	"`trace-cmd report` prints them, or the samples of a perf.data file as\n"
	"`perf script` prints them (the file's magic decides; \"-\" or a pipe is\n"
	"read as perf.data in pipe mode, e.g. `perf record -o - ... | tracekit\n"
	"report -`). FILE defaults to trace.dat. On perf.data --cpu, -F, --pid (pid\n"
	"or tid), --comm, --start, --end, -t and -j apply; the other options are\n"
	"for .dat files.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE      file to read (same as the FILE argument); repeat\n"
	"                        to merge .dat files by time, as trace-cmd does; each -F\n"
	"                        then filters the -i before it (before any: the first)\n"
	"  -C, --cpu LIST        only these CPUs (\"0,2-3\")\n"
	"  -F, --filter SPEC     only these events; .dat: trace-cmd's EVENT[,EVENT][:FILTER]\n"
	"                        (e.g. 'sched_switch:prev_pid>0'); perf.data: NAME,\n"
	"                        SYSTEM or SYSTEM:NAME with globs; repeat for more\n"
	"  -v                    every -F after it hides what it matches (.dat)\n"
	"      --pid PID[,PID]   only events of these pids; repeat for more. .dat:\n"
	"                        as trace-cmd's --pid, common_pid or a pid or\n"
	"                        next_pid field, and added to what -F shows\n"
	"      --comm NAME       .dat: as trace-cmd's --comm, the pids the saved\n"
	"                        command lines give NAME, added to --pid's;\n"
	"                        perf.data: threads of this name (glob); repeat\n"
	"  -I                    hide events in hard irq context (common_flags)\n"
	"  -S                    hide events in soft irq context (common_flags)\n"
	"  -T                    print the filter strings of -F, -v -F and --pid as\n"
	"                        libtraceevent reads them, one per event, and exit\n"
	"                        (no filter: the report, as trace-cmd prints it)\n"
	"  -N                    no plugins: every event printed from its format\n"
	"                        by libtraceevent, as trace-cmd -N prints it\n"
	"  -L                    only the user's own plugins: as -N while\n"
	"                        ~/.trace-cmd/plugins holds none (else an error)\n"
	"      --ts-offset NS    add NS nanoseconds to the times of the -i file before\n"
	"                        it (trace-cmd 3.1.6 ignores it on the first file)\n"
	"      --ts2secs HZ      the counts tick HZ times a second: times are\n"
	"                        counts * 1e9 / HZ (after an -i other than the first:\n"
	"                        that file's; else every file's)\n"
	"      --raw-ts          the ring buffer's counts, unconverted, no offsets\n"
	"      --align-ts        times from the first event of the top buffer(s)\n"
	"      --nodate          leave out the offset of record --date\n"
	"      --ts-check        warn when a CPU's time goes backwards\n"
	"  -r EVENTS             print these events raw (field=value), as -R does;\n"
	"                        a regex on the name or system, case ignored; repeat\n"
	"  -n EVENTS             print these events from their format, without a\n"
	"                        plugin's handler (same matching); repeat\n"
	"  -V, --verbose[=LEVEL] more messages on stderr (LEVEL 0-6 or none, crit,\n"
	"                        err, warn, info, debug, all; default all)\n"
	"  -c, --comms LIST      perf script's: each name of LIST as --comm\n"
	"      --tid TID[,TID]   perf.data: only these thread ids (perf script's)\n"
	"      --time START,STOP perf script's: --start START --end STOP, STOP shown\n"
	"      --start SECONDS   skip events before this time (as printed)\n"
	"      --end SECONDS     stop at this time\n"
	"  -t, --ns              nanosecond timestamps\n"
	"  -R                    raw field values\n"
	"  -l                    latency format (irq, resched and preempt columns)\n"
	"      --ts-diff         \"(+N)\" after the time: since the line before\n"
	"      --first-event     per CPU, the time of its first event (no events)\n"
	"      --last-event      per CPU, the time of its last event (no events)\n"
	"  -q                    quiet: no warnings on stderr (errors stay)\n"
	"      --fields LIST     perf.data: perf script -F's fields, e.g.\n"
	"                        comm,tid,pid,time,cpu,event,trace,ip,sym,symoff,\n"
	"                        dso,period,addr,data_src,weight,ins_lat,phys_addr,\n"
	"                        data_page_size,code_page_size,misc,tod,flags,\n"
	"                        callindent (printed in perf's order; perf's other\n"
	"                        names print nothing or are refused: see the man page)\n"
	"  -O [PLUGIN:]OPT[=VAL] a libtraceevent plugin option, as trace-cmd's -O\n"
	"                        (e.g. function:parent=0) or trace-cmd's fgraph:tailprint\n"
	"                        and fgraph:depth; an unknown one is an error\n"
	"      --header          add \"# events lost\" and \"# file is incomplete\"\n"
	"                        lines after cpus=N (reads the page headers first)\n"
	"      --stat            per-event counts (most first), per-CPU lost events,\n"
	"                        then trace-cmd report --stat's buffer statistics\n"
	"      --json            one JSON object per event, with typed fields\n"
	"      --slow            print every event with libtraceevent (for checks)\n"
	"      --fallbacks       list on stderr the events printed by the slow path\n"
	"  -j, --threads N       print with N threads (default: one per usable CPU\n"
	"                        free at the start, up to 4, for data of 4 MiB\n"
	"                        or more, else 1; compressed data: one more\n"
	"                        decompresses; the text is the same)\n"
	"      --sym             after each probe event, where it fired:\n"
	"                        <sym+0xoff (dso)> (uprobes through the cache)\n"
	"      --cache-dir DIR   build-id cache for symbols (default\n"
	"                        $TRACEKIT_CACHE_DIR, then ~/.debug, as perf's)\n"
	"      --symfs DIR       perf.data: look for binaries below DIR (perf's\n"
	"                        --symfs); the kernel then only from --kallsyms\n"
	"      --kallsyms FILE   perf.data: kernel symbols from FILE, whatever\n"
	"                        the recorded kernel build id (perf's --kallsyms);\n"
	"                        .dat: FILE's functions join the file's kallsyms\n"
	"                        (trace-cmd's --kallsyms)\n"
	"  -k, --vmlinux FILE    perf.data: kernel symbols from the ELF FILE alone,\n"
	"                        only when its build id is the recorded kernel's\n"
	"                        (else [unknown], with a warning; perf's -k)\n"
	"      --max-stack N     perf.data: print at most N callchain entries\n"
	"                        (default: kernel.perf_event_max_stack, as perf)\n"
	"      --strict          stop at the first damage in the file (exit 1, no\n"
	"                        events printed from past it); by default damaged\n"
	"                        parts are skipped with one warning line each, and\n"
	"                        the exit status is 1\n"
	"      --no-inline       perf.data: --call-graph dwarf frames without the\n"
	"                        functions inlined there (perf script --no-inline)\n"
	"      --profile         trace-cmd report --profile: per task, the time\n"
	"                        spent per event pair (switch, wakeup, syscall,\n"
	"                        irq, softirq) and event counts (.dat; with --json)\n"
	"  -w                    trace-cmd report -w: the wake-up latency after each\n"
	"                        sched_switch, and its summary at the end (with\n"
	"                        --json: the summary alone, as JSON)\n"
	"      --percentiles     with -w: p50..max of the latencies after the summary\n"
	"      --hist            with -w: a log2 histogram of the latencies\n"
	"  -G                    trace-cmd's --profile with irqs as global; like\n"
	"      --by-comm         trace-cmd's --profile merging tasks by name, and\n"
	"  -H HOOK               a --profile hook, [SYS:]START,MATCH[,PID]/\n"
	"                        [SYS:]END,MATCH[,FLAGS]: without --profile they\n"
	"                        change nothing (-H prints its \"start ... end\n"
	"                        ...\" line first), as in trace-cmd; with it they\n"
	"                        are refused (not supported)\n"
	"\n"
	"listings, as trace-cmd report prints them (no events; one at a time):\n"
	"  -e                    the file's byte order and the host's\n"
	"  -P                    the printk formats, by address (-P used to be\n"
	"                        --pid; it is trace-cmd's -P now)\n"
	"  -f                    the kernel functions (kallsyms), by address\n"
	"  -E                    the event formats stored, as system:name\n"
	"      --events          the event format texts (not the ftrace ones)\n"
	"      --event REGEX     those of the events REGEX matches: [SYSTEM:]EVENT,\n"
	"                        POSIX basic regexes, case ignored; a system\n"
	"                        matched without a colon gives all its events\n"
	"  -p                    the file's page size and this host's\n"
	"      --cpus            the CPUs that hold records\n"
	"      --uname           the recorded uname (and --version's line)\n"
	"      --version         the version of the tool that wrote the file\n"
	"      --check-events    exit 0 when every event format parses, else 1\n"
	"                        with one line on stderr (trace-cmd exits 22)\n"
	"                        -e, -P, -f, -E and --check-events also read a\n"
	"                        perf.data's TRACING_DATA\n"
	"  -h, --help            show this help\n"
	"\n"
	"trace-cmd report's --boundary and --debug and perf script's options not\n"
	"listed here are refused by name (not supported), never ignored.\n";

enum {
	OPT_CPU = 256,
	OPT_COMM,
	OPT_START,
	OPT_END,
	OPT_STAT,
	OPT_JSON,
	OPT_SLOW,
	OPT_FALLBACKS,
	OPT_HEADER,
	OPT_CACHE_DIR,
	OPT_SYM,
	OPT_SYMFS,
	OPT_KALLSYMS,
	OPT_VMLINUX,
	OPT_TS_DIFF,
	OPT_FIRST_EVENT,
	OPT_LAST_EVENT,
	OPT_FIELDS,
	OPT_MAX_STACK,
	OPT_STRICT,
	OPT_NO_INLINE,
	OPT_PROFILE,
	OPT_PERCENTILES,
	OPT_HIST,
	OPT_PID,
	OPT_CPUS,
	OPT_UNAME,
	OPT_VERSION,
	OPT_CHECK_EVENTS,
	OPT_TS_OFFSET,
	OPT_TS2SECS,
	OPT_RAW_TS,
	OPT_ALIGN_TS,
	OPT_NODATE,
	OPT_TS_CHECK,
	OPT_EVENTS,
	OPT_EVENT,
	OPT_BY_COMM,
	OPT_COMMS,
	OPT_TID,
	OPT_TIME,
	OPT_UNSUPPORTED,
};

/* Built for a leak checker (ASan's LeakSanitizer): every allocation is freed before exit. */
static bool leak_checked(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

/*
 * trace-cmd report's and perf script's options tracekit report does not
 * have: each is refused by name, never taken for something else. (perf's
 * letters that trace-cmd gives other meanings keep trace-cmd's; those
 * that mean perf things on .dat files only are refused on perf.data.)
 */
static const struct {
	const char *name; /* long option, or "-X" */
	const char *tool, *what;
} unsupported_opts[] = {
	{"boundary", "trace-cmd report", "sub-buffer start marks"},
	{"debug", "trace-cmd report", "ring buffer debug output"},
	{"-a", "perf script", "system-wide collection of perf script record"},
	{"all-cpus", "perf script", "system-wide collection of perf script record"},
	{"-d", "perf script", "debug checks"},
	{"debug-mode", "perf script", "debug checks"},
	{"-D", "perf script", "raw dump; tracekit dump shows the records"},
	{"dump-raw-trace", "perf script", "raw dump; tracekit dump shows the records"},
	{"dump-unsorted-raw-trace", "perf script", "raw dump; tracekit dump shows the records"},
	{"force", "perf script", "ownership checks, which tracekit does not make"},
	{"-g", "perf script", "script generation"},
	{"gen-script", "perf script", "script generation"},
	{"-s", "perf script", "scripts"},
	{"script", "perf script", "scripts"},
	{"list", "perf script", "scripts"},
	{"dlfilter", "perf script", "filter libraries"},
	{"dlarg", "perf script", "filter libraries"},
	{"list-dlfilters", "perf script", "filter libraries"},
	{"hide-call-graph", "perf script", "hiding callchains"},
	{"show-info", "perf script", "header; tracekit dump shows it"},
	{"header-only", "perf script", "header; tracekit dump shows it"},
	{"Latency", "perf script", "latency attributes"},
	{"symbols", "perf script", "symbol filters"},
	{"addr-range", "perf script", "symbol filters"},
	{"dsos", "perf script", "symbol filters"},
	{"stop-bt", "perf script", "callchain cuts"},
	{"call-trace", "perf script", "instruction trace decoding"},
	{"call-ret-trace", "perf script", "instruction trace decoding"},
	{"graph-function", "perf script", "instruction trace decoding"},
	{"insn-trace", "perf script", "instruction trace decoding"},
	{"itrace", "perf script", "instruction trace decoding"},
	{"xed", "perf script", "instruction trace decoding"},
	{"max-blocks", "perf script", "instruction trace decoding"},
	{"stitch-lbr", "perf script", "LBR stitching"},
	{"deltatime", "perf script", "relative times"},
	{"reltime", "perf script", "relative times"},
	{"demangle", "perf script", "demangling"},
	{"demangle-kernel", "perf script", "demangling"},
	{"inline", "perf script", "inline frames, which show by default; see --no-inline"},
	{"full-source-path", "perf script", "source lines"},
	{"guest-code", "perf script", "guest symbols"},
	{"guestkallsyms", "perf script", "guest symbols"},
	{"guestmodules", "perf script", "guest symbols"},
	{"guestmount", "perf script", "guest symbols"},
	{"guestvmlinux", "perf script", "guest symbols"},
	{"per-event-dump", "perf script", "per-event files"},
	{"show-bpf-events", "perf script", "side-band record lines"},
	{"show-cgroup-events", "perf script", "side-band record lines"},
	{"show-kernel-path", "perf script", "side-band record lines"},
	{"show-lost-events", "perf script", "side-band record lines"},
	{"show-mmap-events", "perf script", "side-band record lines"},
	{"show-namespace-events", "perf script", "side-band record lines"},
	{"show-on-off-events", "perf script", "side-band record lines"},
	{"show-round-events", "perf script", "side-band record lines"},
	{"show-switch-events", "perf script", "side-band record lines"},
	{"show-task-events", "perf script", "side-band record lines"},
	{"show-text-poke-events", "perf script", "side-band record lines"},
	{"switch-on", "perf script", "event switches"},
	{"switch-off", "perf script", "event switches"},
};

/*
 * The unknown option of @c (getopt's '?') when it is one of
 * unsupported_opts: its one-line refusal, exit 2. Else -1.
 */
static int unsupported_option(int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char shortname[3] = {'-', (char)optopt, '\0'};
	const char *name = NULL;
	size_t n;

	if (c != '?')
		return -1;
	if (optopt > 0 && optopt < 128 && strncmp(arg, "--", 2) != 0) {
		name = shortname;
		n = 2;
	} else if (!strncmp(arg, "--", 2)) {
		name = arg + 2;
		n = strcspn(name, "=");
	} else {
		return -1;
	}
	for (size_t i = 0; i < sizeof(unsupported_opts) / sizeof(unsupported_opts[0]); i++) {
		if (strlen(unsupported_opts[i].name) == n &&
		    !strncmp(unsupported_opts[i].name, name, n))
			return cli_usage_error("%s%.*s is not supported (%s's %s)",
					       name == shortname ? "" : "--", (int)n, name,
					       unsupported_opts[i].tool, unsupported_opts[i].what);
	}
	return -1;
}

/* The options of trace-cmd's --profile that tracekit's profile lacks. */
struct profile_extras {
	bool global;  /* -G */
	bool by_comm; /* --by-comm */
	const char **hooks;
	size_t nhooks;	     /* -H */
	size_t nhooks_print; /* the hook lines to print: nhooks, or 0 for perf data */
};

/*
 * perf script -F's field names, for --fields (perf's -F is taken by
 * trace-cmd's filter here): every name Debian's perf 6.1 accepts. Those
 * tracekit cannot print as perf does (source lines, instructions, BPF
 * output, time of day) have no bit and are refused by name; the library
 * refuses the rest where the file's samples lack them, as perf does.
 */
static int parse_fields(const char *list, unsigned int *mask)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} names[] = {
		{"comm", TK_PERFDATA_FIELD_COMM},
		{"tid", TK_PERFDATA_FIELD_TID},
		{"pid", TK_PERFDATA_FIELD_PID},
		{"time", TK_PERFDATA_FIELD_TIME},
		{"cpu", TK_PERFDATA_FIELD_CPU},
		{"event", TK_PERFDATA_FIELD_EVENT},
		{"trace", TK_PERFDATA_FIELD_TRACE},
		{"ip", TK_PERFDATA_FIELD_IP},
		{"sym", TK_PERFDATA_FIELD_SYM},
		{"dso", TK_PERFDATA_FIELD_DSO},
		{"addr", TK_PERFDATA_FIELD_ADDR},
		{"symoff", TK_PERFDATA_FIELD_SYMOFF},
		{"srcline", 0},
		{"period", TK_PERFDATA_FIELD_PERIOD},
		{"iregs", TK_PERFDATA_FIELD_IREGS},
		{"uregs", TK_PERFDATA_FIELD_UREGS},
		{"brstack", TK_PERFDATA_FIELD_BRSTACK},
		{"brstacksym", TK_PERFDATA_FIELD_BRSTACK},
		{"flags", TK_PERFDATA_FIELD_FLAGS},
		{"data_src", TK_PERFDATA_FIELD_DATA_SRC},
		{"weight", TK_PERFDATA_FIELD_WEIGHT},
		{"bpf-output", 0},
		{"brstackinsn", 0},
		{"brstackinsnlen", 0},
		{"brstackoff", TK_PERFDATA_FIELD_BRSTACK},
		{"callindent", TK_PERFDATA_FIELD_CALLINDENT},
		{"insn", 0},
		{"insnlen", 0},
		{"synth", TK_PERFDATA_FIELD_SYNTH},
		{"phys_addr", TK_PERFDATA_FIELD_PHYS_ADDR},
		{"metric", TK_PERFDATA_FIELD_METRIC},
		{"misc", TK_PERFDATA_FIELD_MISC},
		{"srccode", 0},
		{"ipc", TK_PERFDATA_FIELD_IPC},
		{"tod", TK_PERFDATA_FIELD_TOD},
		{"data_page_size", TK_PERFDATA_FIELD_DATA_PAGE_SIZE},
		{"code_page_size", TK_PERFDATA_FIELD_CODE_PAGE_SIZE},
		{"ins_lat", TK_PERFDATA_FIELD_INS_LAT},
		{"machine_pid", TK_PERFDATA_FIELD_GUEST},
		{"vcpu", TK_PERFDATA_FIELD_GUEST},
	};
	const char *p = list, *unsupported = NULL;
	size_t unsupported_len = 0;
	bool any = false;

	*mask = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;

		if (*p == '+' || *p == '-' || memchr(p, ':', n)) {
			cli_usage_error("--fields: '%.*s': perf's event type prefixes (hw:, sw:, "
					"trace:, ...) and +/- edits are not supported; list the "
					"fields",
					(int)n, p);
			return -1;
		}
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			cli_usage_error("--fields: invalid field requested: '%.*s' (perf script "
					"-F's names; see tracekit-report(1))",
					(int)n, p);
			return -1;
		}
		if (!names[i].bit && !unsupported) {
			unsupported = p;
			unsupported_len = n;
		}
		any = true;
		*mask |= names[i].bit;
		p += n;
		if (*p == ',' && *++p == '\0') {
			cli_usage_error("--fields: empty field name in '%s'", list);
			return -1;
		}
	}
	if (!any) {
		cli_usage_error("--fields: no field given");
		return -1;
	}
	if ((*mask & TK_PERFDATA_FIELD_SYMOFF) && !(*mask & TK_PERFDATA_FIELD_SYM)) {
		cli_usage_error("--fields: display of offsets requested but symbol is not "
				"selected (add sym)");
		return -1;
	}
	if (unsupported && !(*mask & TK_PERFDATA_FIELD_IP) &&
	    (!strncmp(unsupported, "srcline", unsupported_len) ||
	     !strncmp(unsupported, "srccode", unsupported_len))) {
		cli_usage_error("--fields: display of source line number requested but sample "
				"IP is not selected (add ip)");
		return -1;
	}
	if (unsupported) {
		cli_usage_error("--fields: '%.*s' is not supported (tracekit does not print "
				"what perf script prints for it)",
				(int)unsupported_len, unsupported);
		return -1;
	}
	return 0;
}

/* Where a perf.data report may take symbols from, its perf-only --fields, how deep its callchains
 * go. */
struct sym_sources {
	const char *cache_dir, *symfs, *kallsyms;
	const char *vmlinux;
	unsigned int fields;
	unsigned int max_stack; /* 0: perf's default */
	int *tids;		/* --tid */
	size_t ntids;
	bool strict; /* --strict: for the readers' opts */
	bool no_inline;
};

/* The perf.data-only option given (perf script's), for a refusal on .dat files; NULL: none. */
static const char *perf_only(const struct sym_sources *src)
{
	if (src->ntids)
		return "--tid";
	if (src->vmlinux)
		return "--vmlinux (-k)";
	if (src->symfs)
		return "--symfs";
	if (src->max_stack)
		return "--max-stack";
	if (src->no_inline)
		return "--no-inline";
	return NULL;
}

#define MAX_CPUS 4096

static int parse_cpus(const char *s, uint8_t *mask)
{
	while (*s) {
		char *end;
		unsigned long a, b;

		errno = 0;
		a = strtoul(s, &end, 10);
		if (end == s || errno || a >= MAX_CPUS)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			s++;
			b = strtoul(s, &end, 10);
			if (end == s || errno || b >= MAX_CPUS || b < a)
				return -1;
			s = end;
		}
		for (unsigned long c = a; c <= b; c++)
			mask[c / 8] |= (uint8_t)(1u << (c % 8));
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return 0;
}

/* "SECONDS[.FRACTION]" to nanoseconds, without floating point rounding. */
static int parse_time(const char *s, uint64_t *ns)
{
	uint64_t sec = 0, frac = 0, scale = 1000000000ull;
	const char *p = s;

	if (!*p)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (sec > UINT64_MAX / 10 / 1000000000ull)
			return -1;
		sec = sec * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
		}
	}
	if (*p)
		return -1;
	*ns = sec * 1000000000ull + frac;
	return 0;
}

static int add_str(const char ***list, size_t *n, const char *s);

/* Input @input's --ts-offset (added) or --ts2secs (@hz, when not 0). Return: 0, -1 ENOMEM. */
static int set_input_time(int64_t **off, uint64_t **hz, size_t *n, size_t input, int64_t add,
			  uint64_t freq)
{
	if (input >= *n) {
		int64_t *o = realloc(*off, (input + 1) * sizeof(*o));
		uint64_t *h;

		if (!o)
			return -1;
		*off = o;
		h = realloc(*hz, (input + 1) * sizeof(*h));
		if (!h)
			return -1;
		*hz = h;
		for (size_t i = *n; i <= input; i++) {
			o[i] = 0;
			h[i] = 0;
		}
		*n = input + 1;
	}
	(*off)[input] += add;
	if (freq)
		(*hz)[input] = freq;
	return 0;
}

static int add_index(size_t **list, size_t *n, size_t v)
{
	size_t *t = realloc(*list, (*n + 1) * sizeof(*t));

	if (!t)
		return -1;
	t[(*n)++] = v;
	*list = t;
	return 0;
}

/* @n inputs' own -F lists, from every -F and the input each belongs to. NULL: ENOMEM. */
static struct tk_report_file_filter *file_filters(size_t n, const char **events,
						  const size_t *event_input, size_t nevents,
						  const char **neg, const size_t *neg_input,
						  size_t nneg)
{
	struct tk_report_file_filter *f = calloc(n, sizeof(*f));
	bool ok = f != NULL;

	for (size_t i = 0; ok && i < n; i++) {
		const char **ev = NULL, **ng = NULL;
		size_t nev = 0, nng = 0;

		for (size_t k = 0; ok && k < nevents; k++)
			if (event_input[k] == i)
				ok = !add_str(&ev, &nev, events[k]);
		for (size_t k = 0; ok && k < nneg; k++)
			if (neg_input[k] == i)
				ok = !add_str(&ng, &nng, neg[k]);
		f[i] = (struct tk_report_file_filter){ev, nev, ng, nng, 0, 0};
	}
	if (!ok && f) {
		for (size_t i = 0; i < n; i++) {
			free((void *)f[i].events);
			free((void *)f[i].neg_events);
		}
		free(f);
		f = NULL;
	}
	return f;
}

static int add_str(const char ***list, size_t *n, const char *s)
{
	const char **t = realloc(*list, (*n + 1) * sizeof(*t));

	if (!t)
		return -1;
	t[(*n)++] = s;
	*list = t;
	return 0;
}

/*
 * The losses a perf.data records, as perf script warns of them on stderr
 * (the same text, so that scripts reading it keep working), and samples of
 * no event, which perf script refuses: the file is damaged, exit 1.
 */
static int report_losses(const char *path, const struct tk_perfdata_report_stats *st)
{
	uint64_t offered = st->samples + st->lost_samples;

	if (st->lost_records)
		fprintf(stderr,
			"Warning:\nProcessed %" PRIu64 " events and lost %" PRIu64
			" chunks!\n\nCheck IO/CPU overload!\n\n",
			st->records, st->lost_records);
	if (offered && (double)st->lost_samples / (double)offered > 0.05)
		fprintf(stderr, "Warning:\nProcessed %" PRIu64 " samples and lost %3.2f%%!\n\n",
			offered, 100.0 * (double)st->lost_samples / (double)offered);
	if (st->unknown_id)
		return cli_error("%s: %" PRIu64 " samples name an event id the file does not "
				 "define: not printed",
				 path, st->unknown_id);
	return CLI_OK;
}

/*
 * A perf.data file is told by tk_filekind_of(); a stream that cannot seek
 * (standard input as "-", a pipe) can only be perf.data in pipe mode,
 * since .dat files are read by offset. Return: 1 when @path was perf
 * data (printed, or its error reported in @status), 0 for a .dat.
 */
static int report_perfdata(const char *path, const struct tk_report_opts *opts,
			   const struct sym_sources *src, bool strict, const char *dat_opt,
			   int *status)
{
	TK_OPTS(tk_perfdata_open_opts, oopts, .strict = strict);
	struct tk_perfdata_report_stats rst;
	int ret;
	static const struct {
		unsigned int flag;
		const char *name;
	} dat_only[] = {
		{TK_REPORT_RAW, "-R"},
		{TK_REPORT_LATENCY, "-l"},
		{TK_REPORT_STAT, "--stat"},
		{TK_REPORT_JSON, "--json"},
		{TK_REPORT_SLOW, "--slow"},
		{TK_REPORT_FALLBACKS, "--fallbacks"},
		{TK_REPORT_HEADER, "--header"},
		{TK_REPORT_TS_DIFF, "--ts-diff"},
		{TK_REPORT_FIRST_EVENT, "--first-event"},
		{TK_REPORT_LAST_EVENT, "--last-event"},
		{TK_REPORT_NO_HARDIRQ, "-I"},
		{TK_REPORT_NO_SOFTIRQ, "-S"},
		{TK_REPORT_NO_PLUGINS, "-N (or -L)"},
		{TK_REPORT_RAW_TS, "--raw-ts"},
		{TK_REPORT_NODATE, "--nodate"},
		{TK_REPORT_ALIGN_TS, "--align-ts"},
		{TK_REPORT_TS_CHECK, "--ts-check"},
		{TK_REPORT_SYMBOLS, "--sym"},
	};
	struct tk_perfdata_report_opts popts = {
		.sz = sizeof(struct tk_perfdata_report_opts),
		.fd = STDOUT_FILENO,
		.cpu_mask = opts->cpu_mask,
		.cpu_mask_bits = opts->cpu_mask_bits,
		.events = opts->events,
		.nevents = opts->nevents,
		.pids = opts->pids,
		.npids = opts->npids,
		.comms = opts->comms,
		.ncomms = opts->ncomms,
		.has_start = opts->has_start,
		.has_end = opts->has_end,
		.start_ns = opts->start_ns,
		.end_ns = opts->end_ns,
		.cache_dir = src->cache_dir,
		.threads = opts->threads,
		.symfs = src->symfs,
		.kallsyms = src->kallsyms,
		.vmlinux = src->vmlinux,
		.fields = src->fields,
		.max_stack = src->max_stack,
		.tids = src->tids,
		.ntids = src->ntids,
	};
	struct tk_perfdata *pd;
	struct stat st;

	if (strcmp(path, "-") && (stat(path, &st) || S_ISREG(st.st_mode))) {
		enum tk_filekind kind = tk_filekind_of(path);

		if (kind != TK_FILE_PERFDATA && kind != TK_FILE_PERFDATA_PIPE) {
			if (src->fields)
				*status =
					cli_usage_error("--fields is for perf.data files; %s is a "
							".dat file",
							path);
			return src->fields ? 1 : 0;
		}
	}
	if (dat_opt) {
		*status = cli_usage_error("%s is for .dat files; %s is perf data", dat_opt, path);
		return 1;
	}
	if (opts->ts_offset || opts->ts2secs_hz) {
		*status = cli_usage_error("%s is for .dat files; %s is perf data",
					  opts->ts_offset ? "--ts-offset" : "--ts2secs", path);
		return 1;
	}
	if (opts->nneg_events || opts->nplugin_options || opts->nraw_events ||
	    opts->nnohandle_events) {
		*status = cli_usage_error("%s is for .dat files; %s is perf data",
					  opts->nneg_events	  ? "-v"
					  : opts->nplugin_options ? "-O"
					  : opts->nraw_events	  ? "-r"
								  : "-n",
					  path);
		return 1;
	}
	for (size_t i = 0; i < sizeof(dat_only) / sizeof(dat_only[0]); i++) {
		if (opts->flags & dat_only[i].flag) {
			*status = cli_usage_error("%s is for .dat files; %s is perf data, printed "
						  "as perf script prints it",
						  dat_only[i].name, path);
			return 1;
		}
	}
	if (opts->flags & TK_REPORT_NSEC)
		popts.flags |= TK_PERFDATA_REPORT_NSEC;
	if (src->no_inline)
		popts.flags |= TK_PERFDATA_REPORT_NO_INLINE;
	pd = tk_perfdata_open_opts(path, &oopts);
	if (!pd) {
		*status = cli_lib_error(path);
		return 1;
	}
	if (!src->no_inline)
		cli_unwind_heap(path, pd);
	fflush(stdout);
	ret = tk_perfdata_report_run(pd, &popts, &rst);
	/* Damage met before a failure is news too: its lines come first. */
	if (cli_perf_damage(path, pd) != CLI_OK)
		*status = CLI_FAIL;
	/* An -F that names no event of the file is a usage error. */
	if (ret == -EINVAL)
		*status = cli_usage_error("%s", tk_errmsg());
	else if (ret < 0)
		*status = cli_lib_error(path);
	else if (report_losses(path, &rst) != CLI_OK)
		*status = CLI_FAIL;
	tk_perfdata_close(pd);
	return 1;
}

/* -w given (a flag beside TK_WAKEUP_*). */
#define WAKEUP_ON (1u << 16)

/*
 * --profile and -w (trace-cmd's analyses, .dat only): --profile runs here
 * (analyze/taskprofile.c); -w returns -1 to print the report with the
 * wake-up hook (analyze/wakeup.c). Otherwise the exit status.
 */
static int report_analysis(const char *path, const struct tk_report_opts *opts, bool profile,
			   unsigned int wakeup_flags, size_t ninputs)
{
	struct tk_taskprofile_opts popts = {.fd = STDOUT_FILENO};
	enum tk_filekind kind;

	if (ninputs)
		return cli_usage_error("--profile and -w read one .dat file");
	if (profile && wakeup_flags)
		return cli_usage_error("--profile and -w do not go together");
	if (wakeup_flags && !(wakeup_flags & WAKEUP_ON))
		return cli_usage_error("--percentiles and --hist go with -w");
	kind = tk_filekind_of(path);
	if (!strcmp(path, "-") || kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE)
		return cli_usage_error("%s: --profile and -w read a .dat file", path);
	if (!profile) {
		if (opts->flags & (TK_REPORT_STAT | TK_REPORT_FIRST_EVENT | TK_REPORT_LAST_EVENT))
			return cli_usage_error(
				"-w prints events: not with --stat or --first/last-event");
		return -1;
	}
	if (opts->nevents || opts->npids || opts->ncomms || opts->cpu_mask || opts->has_start ||
	    opts->has_end || opts->nneg_events || (opts->flags & ~TK_REPORT_JSON))
		return cli_usage_error("--profile takes only --json");
	popts.flags = (opts->flags & TK_REPORT_JSON) ? TK_TASKPROFILE_JSON : 0;
	if (tk_taskprofile_run(path, &popts) < 0)
		return cli_lib_error(path);
	return CLI_OK;
}

/*
 * -i A -i B: .dat files merged by time, each line after its file's name,
 * as trace-cmd report prints several inputs.
 */
static int report_files(const char **paths, size_t n, const struct tk_report_opts *opts,
			const struct tk_report_file_filter *filters)
{
	struct tk_dat **dats = calloc(n, sizeof(*dats));
	int status = CLI_OK, ret;
	size_t open = 0;

	if (!dats)
		return cli_error("out of memory");
	for (; open < n; open++) {
		enum tk_filekind kind = tk_filekind_of(paths[open]);

		if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE) {
			status = cli_usage_error("%s: several inputs are for .dat files",
						 paths[open]);
			goto out;
		}
		dats[open] = tk_dat_open(paths[open]);
		if (!dats[open]) {
			status = cli_lib_error(paths[open]);
			goto out;
		}
	}
	fflush(stdout);
	ret = tk_report_run_files_filtered(dats, paths, n, opts, filters, NULL);
	if (ret == -EINVAL)
		status = cli_usage_error("%s", tk_errmsg());
	else if (ret < 0)
		status = cli_error("%s", tk_errmsg());
out:
	for (size_t i = 0; i < open; i++)
		tk_dat_close(dats[i]);
	free(dats);
	return status;
}

/*
 * trace-cmd's -V / --verbose[=LEVEL]: its levels 0-6 or names, onto
 * tracekit's log levels (errors always show). Return: 0, -1 for a bad one.
 */
static int set_verbose(const char *level)
{
	static const char *const names[] = {"none", "crit", "err", "warn", "info", "debug", "all"};
	static const enum tk_log_level map[] = {TK_LOG_ERROR, TK_LOG_ERROR, TK_LOG_ERROR,
						TK_LOG_WARN,  TK_LOG_INFO,  TK_LOG_DEBUG,
						TK_LOG_DEBUG};
	int n = 6;

	if (level) {
		for (n = 0; n < 7; n++)
			if (!strcmp(level, names[n]) || (level[0] == '0' + n && !level[1]))
				break;
		if (n == 7)
			return -1;
	}
	tk_log_set_handler(NULL, NULL, map[n]);
	return 0;
}

/* The first user plugin directory trace-cmd's -L would load from that has a plugin, or NULL. */
static const char *local_plugins(void)
{
	static char dir[4096];
	const char *home = getenv("HOME");
	static const char *const subdirs[] = {".trace-cmd/plugins",
					      ".local/lib/traceevent/plugins"};

	for (size_t i = 0; home && i < 2; i++) {
		DIR *d;
		struct dirent *e;
		bool any = false;

		snprintf(dir, sizeof(dir), "%s/%s", home, subdirs[i]);
		d = opendir(dir);
		if (!d)
			continue;
		while (!any && (e = readdir(d)))
			any = strlen(e->d_name) > 3 &&
			      !strcmp(e->d_name + strlen(e->d_name) - 3, ".so");
		closedir(d);
		if (any)
			return dir;
	}
	return NULL;
}

/* -T: the filter strings, as libtraceevent reads them; no events. */
static int report_filter_test(const char *path, const struct tk_report_opts *opts, size_t ninputs)
{
	enum tk_filekind kind;
	struct tk_dat *dat;
	int ret, status = CLI_OK;

	if (ninputs)
		return cli_usage_error("-T reads one file");
	kind = strcmp(path, "-") ? tk_filekind_of(path) : TK_FILE_PERFDATA_PIPE;
	if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE)
		return cli_usage_error("-T is for .dat files; %s is perf data", path);
	dat = tk_dat_open(path);
	if (!dat)
		return cli_lib_error(path);
	fflush(stdout);
	ret = tk_report_filter_test(dat, opts, STDOUT_FILENO);
	if (ret == -EINVAL)
		status = cli_usage_error("%s: %s", path, tk_errmsg());
	else if (ret < 0)
		status = cli_lib_error(path);
	tk_dat_close(dat);
	return status;
}

/*
 * trace-cmd's -H hook, [SYS:]START,MATCH[,PID]/[SYS:]END,MATCH[,FLAGS],
 * split as trace-cmd 3.1.6 splits it (strtok() at ':' and ',', a system
 * where the token is followed by ':') into the line it prints when it
 * reads the option: "start S:E:M (PID) end S:E:M (FLAGS)", "(null)" for
 * an absent part. Flags other than P, G and S get a warning, as in
 * trace-cmd. Return: 0, -1 for a hook that does not split (trace-cmd
 * 3.1.6 and 3.4 crash on one). @warn: print the flag warnings.
 */
static int hook_line(const char *arg, char *out, size_t cap, bool warn)
{
	char *str = strdup(arg), *save = NULL, *tok;
	const char *part[8] = {
		NULL}; /* start sys, event, match, pid; end sys, event, match, flags */
	size_t index;
	int ret = -1;

	if (!str)
		return -1;
	tok = strtok_r(str, ":,", &save);
	if (!tok)
		goto out;
	/* trace-cmd measures from the start of the text, whatever strtok() skipped. */
	index = strlen(tok);
	if (arg[index] == ':') {
		part[0] = tok;
		tok = strtok_r(NULL, ",", &save);
		if (!tok)
			goto out;
	}
	part[1] = tok;
	tok = strtok_r(NULL, ",/", &save);
	if (!tok)
		goto out;
	part[2] = tok;
	index = strlen(tok) + (size_t)(tok - str);
	if (arg[index] == ',') {
		tok = strtok_r(NULL, "/", &save);
		if (!tok)
			goto out;
		part[3] = tok;
	}
	tok = strtok_r(NULL, ":,", &save);
	if (!tok)
		goto out;
	index = (size_t)(tok - str) + strlen(tok);
	if (arg[index] == ':') {
		part[4] = tok;
		tok = strtok_r(NULL, ",", &save);
		if (!tok)
			goto out;
	}
	part[5] = tok;
	tok = strtok_r(NULL, ",", &save);
	if (!tok)
		goto out;
	part[6] = tok;
	index = strlen(tok) + (size_t)(tok - str);
	if (arg[index] == ',') {
		tok = strtok_r(NULL, "", &save);
		if (!tok)
			goto out;
		part[7] = tok;
	}
	for (const char *f = part[7]; warn && f && *f; f++)
		if (!strchr("pPgGsS", *f))
			fprintf(stderr, "tracekit report: -H: unknown flag %c\n", *f);
	for (size_t i = 0; i < 8; i++)
		if (!part[i])
			part[i] = "(null)";
	snprintf(out, cap, "start %s:%s:%s (%s) end %s:%s:%s (%s)\n", part[0], part[1], part[2],
		 part[3], part[4], part[5], part[6], part[7]);
	ret = 0;
out:
	free(str);
	return ret;
}

/*
 * trace-cmd's --comm NAME on a .dat: the pids its saved command lines give
 * NAME (the whole text after "PID ", compared exactly), added to --pid's,
 * so that the events of those pids show as --pid shows them (their own, and
 * those whose pid or next_pid field names them). The lines are walked last
 * first, as libtraceevent walks its list. A name no line has is a usage
 * error (trace-cmd warns "not in cmdline list" and prints every event).
 * Return: CLI_OK, or the exit status after the message.
 */
static int comm_pids(struct tk_dat *dat, const char *path, const char *const *comms, size_t ncomms,
		     int **pids, size_t *npids)
{
	struct tk_dat_text t = {NULL, 0};

	if (tk_dat_cmdlines(dat, &t))
		t.len = 0;
	for (size_t c = 0; c < ncomms; c++) {
		size_t found = 0, end = t.len;

		while (end > 0) {
			size_t start = end - 1, n;
			const char *line, *sp;
			char *num_end;
			long pid;

			/* The line before @end (without its newline). */
			if (t.data[start] == '\n' && start == end - 1) {
				end--;
				continue;
			}
			while (start > 0 && t.data[start - 1] != '\n')
				start--;
			line = t.data + start;
			n = end - start;
			end = start;
			sp = memchr(line, ' ', n);
			if (!sp)
				continue;
			errno = 0;
			pid = strtol(line, &num_end, 10);
			if (num_end != sp || errno)
				continue;
			if ((size_t)(line + n - (sp + 1)) != strlen(comms[c]) ||
			    memcmp(sp + 1, comms[c], strlen(comms[c])))
				continue;
			{
				int *np = realloc(*pids, (*npids + 1) * sizeof(*np));

				if (!np)
					return cli_error("out of memory");
				*pids = np;
				(*pids)[(*npids)++] = (int)pid;
				found++;
			}
		}
		if (!found)
			return cli_usage_error("%s: --comm %s: no task of that name in the file's "
					       "saved command lines",
					       path, comms[c]);
	}
	return CLI_OK;
}

/* The option that asked for listing @c, for messages. */
static const char *listing_name(int c)
{
	switch (c) {
	case 'e':
		return "-e";
	case 'P':
		return "-P";
	case 'f':
		return "-f";
	case 'E':
		return "-E";
	case OPT_CPUS:
		return "--cpus";
	case OPT_UNAME:
		return "--uname";
	case OPT_VERSION:
		return "--version";
	case 'p':
		return "-p";
	case OPT_EVENTS:
		return "--events";
	case OPT_EVENT:
		return "--event";
	default:
		return "--check-events";
	}
}

/*
 * trace-cmd report's listings (-e, -p, -P, -f, -E, --events, --event,
 * --cpus, --uname, --version, --check-events): facts of the file, no
 * events. On perf.data those that need only the tracing metadata read its
 * TRACING_DATA. @regex: --event's.
 */
static int report_listing(const char *path, int listing, const char *regex,
			  const struct tk_report_opts *opts, size_t ninputs)
{
	enum tk_report_list what = 0;
	enum tk_filekind kind;
	const struct tk_tracedata *td;
	struct tk_perfdata *pd = NULL;
	struct tk_dat *dat = NULL;
	size_t failed = 0;
	int ret, status = CLI_OK;

	if (ninputs)
		return cli_usage_error("%s reads one file", listing_name(listing));
	if (opts->kallsyms)
		return cli_usage_error("--kallsyms with %s is not supported (it adds functions "
				       "to the report)",
				       listing_name(listing));
	if (opts->flags & ~(unsigned int)(TK_REPORT_FIRST_EVENT | TK_REPORT_LAST_EVENT))
		return cli_usage_error("%s lists, it prints no events: no other output option "
				       "goes with it",
				       listing_name(listing));
	if ((opts->flags & (TK_REPORT_FIRST_EVENT | TK_REPORT_LAST_EVENT)) && listing != OPT_CPUS)
		return cli_usage_error("--first-event and --last-event go with --cpus only, of "
				       "the listings");
	switch (listing) {
	case 'e':
		what = TK_REPORT_LIST_ENDIAN;
		break;
	case 'P':
		what = TK_REPORT_LIST_PRINTK;
		break;
	case 'f':
		what = TK_REPORT_LIST_FUNCS;
		break;
	case 'E':
		what = TK_REPORT_LIST_EVENTS;
		break;
	case OPT_UNAME:
		what = TK_REPORT_LIST_UNAME;
		break;
	case OPT_VERSION:
		what = TK_REPORT_LIST_VERSION;
		break;
	case 'p':
		what = TK_REPORT_LIST_PAGE_SIZE;
		break;
	default:
		break;
	}
	kind = strcmp(path, "-") ? tk_filekind_of(path) : TK_FILE_PERFDATA_PIPE;
	if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE) {
		if (listing == OPT_CPUS || listing == OPT_UNAME || listing == OPT_VERSION ||
		    listing == 'p')
			return cli_usage_error("%s is for .dat files; %s is perf data",
					       listing_name(listing), path);
		pd = tk_perfdata_open(path);
		if (!pd)
			return cli_lib_error(path);
		td = tk_perfdata_get_tracedata(pd);
		if (!td) {
			tk_perfdata_close(pd);
			return cli_usage_error(
				"%s: %s reads the tracing metadata, and this perf.data "
				"has no TRACING_DATA (no tracepoint events)",
				path, listing_name(listing));
		}
		/* perf record stores no kallsyms (and may store no printk formats): say so. */
		if (listing == 'P' || listing == 'f') {
			struct tk_text t = {NULL, 0};

			if ((listing == 'P' ? tk_tracedata_printk(td, &t)
					    : tk_tracedata_kallsyms(td, &t)) < 0 ||
			    !t.len) {
				tk_perfdata_close(pd);
				return cli_usage_error(
					"%s: the TRACING_DATA of this perf.data holds no "
					"%s: %s has nothing to list",
					path, listing == 'P' ? "printk formats" : "kallsyms",
					listing_name(listing));
			}
		}
	} else {
		dat = tk_dat_open(path);
		if (!dat)
			return cli_lib_error(path);
		td = tk_dat_get_tracedata(dat);
	}
	fflush(stdout);
	if (listing == OPT_CPUS) {
		struct tk_report_opts copts = *opts;

		copts.flags |= TK_REPORT_CPUS;
		ret = tk_report_run(dat, &copts, NULL);
	} else if (listing == OPT_CHECK_EVENTS) {
		ret = tk_report_check_formats(td, &failed);
		if (ret > 0)
			status = cli_error("%s: %zu event formats do not parse", path, failed);
	} else if (listing == OPT_EVENTS || listing == OPT_EVENT) {
		ret = tk_report_list_formats(td, listing == OPT_EVENT ? regex : NULL,
					     STDOUT_FILENO);
		if (ret == -EINVAL) {
			status = cli_usage_error("--event: %s", tk_errmsg());
			ret = 0;
		}
	} else if (dat) {
		ret = tk_report_list_dat(dat, what, STDOUT_FILENO);
	} else {
		ret = tk_report_list_tracedata(td, what, STDOUT_FILENO);
	}
	if (ret < 0)
		status = cli_lib_error(path);
	tk_dat_close(dat);
	tk_perfdata_close(pd);
	return status;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"cpu", required_argument, NULL, OPT_CPU},
		{"filter", required_argument, NULL, 'F'},
		{"pid", required_argument, NULL, OPT_PID},
		{"cpus", no_argument, NULL, OPT_CPUS},
		{"uname", no_argument, NULL, OPT_UNAME},
		{"version", no_argument, NULL, OPT_VERSION},
		{"check-events", no_argument, NULL, OPT_CHECK_EVENTS},
		{"events", no_argument, NULL, OPT_EVENTS},
		{"by-comm", no_argument, NULL, OPT_BY_COMM},
		{"comms", required_argument, NULL, OPT_COMMS},
		{"tid", required_argument, NULL, OPT_TID},
		{"time", required_argument, NULL, OPT_TIME},
		{"event", required_argument, NULL, OPT_EVENT},
		{"verbose", optional_argument, NULL, 'V'},
		{"ts-offset", required_argument, NULL, OPT_TS_OFFSET},
		{"ts2secs", required_argument, NULL, OPT_TS2SECS},
		{"raw-ts", no_argument, NULL, OPT_RAW_TS},
		{"align-ts", no_argument, NULL, OPT_ALIGN_TS},
		{"nodate", no_argument, NULL, OPT_NODATE},
		{"ts-check", no_argument, NULL, OPT_TS_CHECK},
		{"filter-test", no_argument, NULL, 'T'},
		{"comm", required_argument, NULL, OPT_COMM},
		{"start", required_argument, NULL, OPT_START},
		{"end", required_argument, NULL, OPT_END},
		{"stat", no_argument, NULL, OPT_STAT},
		{"json", no_argument, NULL, OPT_JSON},
		{"slow", no_argument, NULL, OPT_SLOW},
		{"fallbacks", no_argument, NULL, OPT_FALLBACKS},
		{"ns", no_argument, NULL, 't'},
		{"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
		{"threads", required_argument, NULL, 'j'},
		{"sym", no_argument, NULL, OPT_SYM},
		{"symfs", required_argument, NULL, OPT_SYMFS},
		{"kallsyms", required_argument, NULL, OPT_KALLSYMS},
		{"vmlinux", required_argument, NULL, OPT_VMLINUX},
		{"max-stack", required_argument, NULL, OPT_MAX_STACK},
		{"no-inline", no_argument, NULL, OPT_NO_INLINE},
		{"header", no_argument, NULL, OPT_HEADER},
		{"ts-diff", no_argument, NULL, OPT_TS_DIFF},
		{"first-event", no_argument, NULL, OPT_FIRST_EVENT},
		{"last-event", no_argument, NULL, OPT_LAST_EVENT},
		{"fields", required_argument, NULL, OPT_FIELDS},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"profile", no_argument, NULL, OPT_PROFILE},
		{"percentiles", no_argument, NULL, OPT_PERCENTILES},
		{"hist", no_argument, NULL, OPT_HIST},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static uint8_t mask[MAX_CPUS / 8];
	struct tk_report_opts opts;
	const char *path = NULL, *cache_dir = NULL;
	struct sym_sources src = {NULL, NULL, NULL, NULL, 0, 0, NULL, 0, false, false};
	const char **events = NULL, **comms = NULL, **neg_events = NULL, **plugin_opts = NULL;
	size_t nevents = 0, ncomms = 0, nneg_events = 0, nplugin_opts = 0, ninputs = 0;
	const char **inputs = NULL, **raw_events = NULL, **nohandle_events = NULL;
	size_t nraw_events = 0, nnohandle_events = 0;
	/* The input each -F belongs to (trace-cmd 3.1.6: the one before it, the first for those
	 * before any). */
	size_t *event_input = NULL, *neg_input = NULL, nevent_input = 0, nneg_input = 0;
	struct tk_report_file_filter *filters = NULL;
	bool negate = false, filter_test = false;
	/* --ts-offset and --ts2secs per input (trace-cmd's), ntimes of them. */
	int64_t *in_offset = NULL;
	uint64_t *in_hz = NULL;
	size_t ntimes = 0;
	int *pids = NULL;
	size_t npids = 0;
	struct tk_dat *dat;
	bool strict = false, profile = false;
	unsigned int wakeup_flags = 0;
	struct tk_wakeup *wakeup = NULL;
	int c, ret, status = CLI_OK, listing = 0;
	const char *event_regex = NULL;
	struct profile_extras extras = {false, false, NULL, 0, 0};

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.fd = STDOUT_FILENO;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:F:tRlj:hvqO:wPefEISTNLV::r:n:pH:GC:k:c:", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'i':
			/* Repeated, trace-cmd merges the files (report_files()). */
			if (path && add_str(&inputs, &ninputs, path))
				goto nomem;
			path = optarg;
			break;
		case 'C': /* perf script's letter for --cpu */
		case OPT_CPU:
			if (parse_cpus(optarg, mask)) {
				status = cli_usage_error("bad CPU list '%s'", optarg);
				goto out;
			}
			opts.cpu_mask = mask;
			opts.cpu_mask_bits = MAX_CPUS;
			break;
		case 'F': {
			size_t input = ninputs + (path != NULL);

			input = input ? input - 1 : 0;
			/* trace-cmd's -v turns every -F after it into one that hides. */
			if (negate ? add_str(&neg_events, &nneg_events, optarg) ||
					     add_index(&neg_input, &nneg_input, input)
				   : add_str(&events, &nevents, optarg) ||
					     add_index(&event_input, &nevent_input, input))
				goto nomem;
			break;
		}
		case 'v':
			if (negate) {
				status = cli_usage_error("only one -v can be used (it applies to "
							 "every -F after it)");
				goto out;
			}
			negate = true;
			break;
		case 'O':
			if (add_str(&plugin_opts, &nplugin_opts, optarg))
				goto nomem;
			break;
		case 'q':
			/* trace-cmd's -q: no warnings, the events and errors stay. */
			tk_log_set_handler(NULL, NULL, TK_LOG_ERROR);
			break;
		case OPT_TS_DIFF:
			opts.flags |= TK_REPORT_TS_DIFF;
			break;
		case OPT_FIRST_EVENT:
			opts.flags |= TK_REPORT_FIRST_EVENT;
			break;
		case OPT_LAST_EVENT:
			opts.flags |= TK_REPORT_LAST_EVENT;
			break;
		case OPT_FIELDS:
			if (parse_fields(optarg, &src.fields)) {
				status = CLI_USAGE;
				goto out;
			}
			break;
		case OPT_EVENT:
			event_regex = optarg;
			/* fall through */
		case 'e':
		case 'p':
		case OPT_EVENTS:
		case 'P':
		case 'f':
		case 'E':
		case OPT_CPUS:
		case OPT_UNAME:
		case OPT_VERSION:
		case OPT_CHECK_EVENTS:
			/* trace-cmd's listings: one at a time (it would pick one silently). */
			if (listing && listing != c) {
				status =
					cli_usage_error("%s and %s do not go together (one listing "
							"at a time)",
							listing_name(listing), listing_name(c));
				goto out;
			}
			listing = c;
			break;
		case 'r':
			if (add_str(&raw_events, &nraw_events, optarg))
				goto nomem;
			break;
		case 'n':
			if (add_str(&nohandle_events, &nnohandle_events, optarg))
				goto nomem;
			break;
		case OPT_TS_OFFSET:
		case OPT_TS2SECS: {
			/* Each belongs to the -i before it (--ts2secs before the second: all). */
			size_t input = ninputs;
			char *end;

			errno = 0;
			if (c == OPT_TS_OFFSET) {
				long long v = strtoll(optarg, &end, 10);

				if (!path) {
					status = cli_usage_error(
						"--ts-offset must come after -i (it "
						"shifts the file before it)");
					goto out;
				}
				if (end == optarg || *end || errno) {
					status = cli_usage_error(
						"bad --ts-offset '%s' (nanoseconds)", optarg);
					goto out;
				}
				if (set_input_time(&in_offset, &in_hz, &ntimes, input, v, 0))
					goto nomem;
			} else {
				unsigned long long v = strtoull(optarg, &end, 10);

				if (end == optarg || *end || errno || !v || optarg[0] == '-') {
					status = cli_usage_error(
						"bad --ts2secs '%s' (counts per second)", optarg);
					goto out;
				}
				if (!path || !input)
					opts.ts2secs_hz = v;
				else if (set_input_time(&in_offset, &in_hz, &ntimes, input, 0, v))
					goto nomem;
			}
			break;
		}
		case OPT_RAW_TS:
			opts.flags |= TK_REPORT_RAW_TS;
			break;
		case OPT_ALIGN_TS:
			opts.flags |= TK_REPORT_ALIGN_TS;
			break;
		case OPT_NODATE:
			opts.flags |= TK_REPORT_NODATE;
			break;
		case OPT_TS_CHECK:
			opts.flags |= TK_REPORT_TS_CHECK;
			break;
		case 'I':
			opts.flags |= TK_REPORT_NO_HARDIRQ;
			break;
		case 'S':
			opts.flags |= TK_REPORT_NO_SOFTIRQ;
			break;
		case 'T':
			filter_test = true;
			break;
		case 'N':
			opts.flags |= TK_REPORT_NO_PLUGINS;
			break;
		case 'L':
			/* Only the plugins of the user's own directories: tracekit loads none from
			 * there, so the meaning is -N's while those directories hold no plugin. */
			if (local_plugins()) {
				status = cli_usage_error(
					"-L: %s holds plugins, which tracekit does not "
					"load (use -N for none)",
					local_plugins());
				goto out;
			}
			opts.flags |= TK_REPORT_NO_PLUGINS;
			break;
		case 'V':
			if (set_verbose(optarg)) {
				status = cli_usage_error(
					"invalid verbose level '%s' (0-6, none, crit, "
					"err, warn, info, debug, all)",
					optarg);
				goto out;
			}
			break;
		case OPT_PID: {
			/* A comma-separated list, as trace-cmd's --pid takes. */
			const char *p = optarg;

			do {
				char *end;
				long pid;
				int *t;

				errno = 0;
				pid = strtol(p, &end, 10);
				if (end == p || (*end && (*end != ',' || !end[1])) || errno ||
				    pid < 0 || pid > 0x7fffffff) {
					status = cli_usage_error("bad pid '%s'", optarg);
					goto out;
				}
				t = realloc(pids, (npids + 1) * sizeof(*t));
				if (!t)
					goto nomem;
				pids = t;
				pids[npids++] = (int)pid;
				p = *end ? end + 1 : end;
			} while (*p);
			break;
		}
		case OPT_COMM:
			if (add_str(&comms, &ncomms, optarg))
				goto nomem;
			break;
		case 'c':
		case OPT_COMMS: {
			/* perf script's -c/--comms: a comma-separated list, each as a --comm. */
			char *p = optarg, *comma;

			do {
				comma = strchr(p, ',');
				if (comma)
					*comma = '\0';
				if (!*p) {
					status = cli_usage_error("--comms: empty name");
					goto out;
				}
				if (add_str(&comms, &ncomms, p))
					goto nomem;
				p = comma ? comma + 1 : NULL;
			} while (p);
			break;
		}
		case OPT_TID: {
			/* perf script's --tid: thread ids alone, a comma-separated list. */
			const char *p = optarg;

			do {
				char *end;
				long tid;
				int *t;

				errno = 0;
				tid = strtol(p, &end, 10);
				if (end == p || (*end && (*end != ',' || !end[1])) || errno ||
				    tid < 0 || tid > 0x7fffffff) {
					status = cli_usage_error("bad tid '%s'", optarg);
					goto out;
				}
				t = realloc(src.tids, (src.ntids + 1) * sizeof(*t));
				if (!t)
					goto nomem;
				src.tids = t;
				src.tids[src.ntids++] = (int)tid;
				p = *end ? end + 1 : end;
			} while (*p);
			break;
		}
		case OPT_TIME: {
			/*
			 * perf script's --time START,STOP (either may be empty), both
			 * ends included; its percent and multi-range forms are not
			 * supported.
			 */
			const char *comma = strchr(optarg, ',');
			char part[64];
			uint64_t ns;

			if (!comma || strchr(comma + 1, ',') || strpbrk(optarg, "% ") ||
			    (size_t)(comma - optarg) >= sizeof(part)) {
				status = cli_usage_error("--time '%s': only perf's START,STOP form "
							 "is supported (seconds, as printed)",
							 optarg);
				goto out;
			}
			memcpy(part, optarg, (size_t)(comma - optarg));
			part[comma - optarg] = '\0';
			if (part[0]) {
				if (parse_time(part, &ns)) {
					status = cli_usage_error(
						"bad time '%s' (seconds, as printed)", part);
					goto out;
				}
				opts.has_start = true;
				opts.start_ns = ns;
			}
			if (comma[1]) {
				if (parse_time(comma + 1, &ns) || ns == UINT64_MAX) {
					status = cli_usage_error(
						"bad time '%s' (seconds, as printed)", comma + 1);
					goto out;
				}
				opts.has_end = true;
				opts.end_ns =
					ns + 1; /* --end excludes its time; perf's STOP is shown */
			}
			break;
		}
		case OPT_START:
		case OPT_END: {
			uint64_t ns;

			if (parse_time(optarg, &ns)) {
				status = cli_usage_error("bad time '%s' (seconds, as printed)",
							 optarg);
				goto out;
			}
			if (c == OPT_START) {
				opts.has_start = true;
				opts.start_ns = ns;
			} else {
				opts.has_end = true;
				opts.end_ns = ns;
			}
			break;
		}
		case 't':
			opts.flags |= TK_REPORT_NSEC;
			break;
		case 'R':
			opts.flags |= TK_REPORT_RAW;
			break;
		case 'l':
			opts.flags |= TK_REPORT_LATENCY;
			break;
		case OPT_STAT:
			opts.flags |= TK_REPORT_STAT;
			break;
		case OPT_JSON:
			opts.flags |= TK_REPORT_JSON;
			break;
		case OPT_SLOW:
			opts.flags |= TK_REPORT_SLOW;
			break;
		case OPT_FALLBACKS:
			opts.flags |= TK_REPORT_FALLBACKS;
			break;
		case OPT_HEADER:
			opts.flags |= TK_REPORT_HEADER;
			break;
		case OPT_STRICT:
			strict = true;
			src.strict = true;
			break;
		case OPT_CACHE_DIR:
			cache_dir = optarg;
			break;
		case OPT_SYM:
			opts.flags |= TK_REPORT_SYMBOLS;
			break;
		case OPT_SYMFS:
			src.symfs = optarg;
			break;
		case OPT_KALLSYMS:
			/* perf's --kallsyms on perf.data, trace-cmd's on a .dat. */
			src.kallsyms = optarg;
			opts.kallsyms = optarg;
			break;
		case 'k': /* perf script's letter for --vmlinux */
		case OPT_VMLINUX:
			src.vmlinux = optarg;
			break;
		case OPT_MAX_STACK: {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || n < 1 || n > 65535) {
				status = cli_usage_error("bad --max-stack '%s' (1 to 65535)",
							 optarg);
				goto out;
			}
			src.max_stack = (unsigned int)n;
			break;
		}
		case OPT_NO_INLINE:
			src.no_inline = true;
			break;
		case 'j': {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || n < 1 || n > 64) {
				status = cli_usage_error("bad thread count '%s' (1 to 64)", optarg);
				goto out;
			}
			opts.threads = (unsigned int)n;
			break;
		}
		case OPT_PROFILE:
			profile = true;
			break;
		case 'G':
			extras.global = true;
			break;
		case OPT_BY_COMM:
			extras.by_comm = true;
			break;
		case 'H': {
			char line[8];

			if (hook_line(optarg, line, sizeof(line), false)) {
				status = cli_usage_error(
					"-H: invalid hook '%s' (trace-cmd's "
					"[SYS:]START,MATCH[,PID]/[SYS:]END,MATCH[,FLAGS])",
					optarg);
				goto out;
			}
			if (add_str(&extras.hooks, &extras.nhooks, optarg))
				goto nomem;
			extras.nhooks_print = extras.nhooks;
			break;
		}
		case 'w':
			wakeup_flags |= WAKEUP_ON;
			break;
		case OPT_PERCENTILES:
			wakeup_flags |= TK_WAKEUP_PERCENTILES;
			break;
		case OPT_HIST:
			wakeup_flags |= TK_WAKEUP_HIST;
			break;
		case 'h':
			fputs(cmd_report_usage, stdout);
			status = cli_finish_stdout(CLI_OK);
			goto out;
		default:
			status = unsupported_option(c, argv);
			if (status < 0)
				status = cli_bad_option(c, argv);
			goto out;
		}
	}
	if (optind < argc) {
		if (path || optind + 1 < argc) {
			status = cli_usage_error("report reads one file");
			goto out;
		}
		path = argv[optind];
	}
	if (!path)
		path = "trace.dat";
	/*
	 * -G, --by-comm and -H change only trace-cmd's --profile (elsewhere -H
	 * prints its line and they do nothing, as in trace-cmd); tracekit's
	 * profile has none of them, so with --profile they are refused.
	 */
	if (profile && (extras.global || extras.by_comm || extras.nhooks)) {
		status = cli_usage_error("--profile with %s is not supported (tracekit's profile "
					 "has no %s)",
					 extras.global	  ? "-G"
					 : extras.by_comm ? "--by-comm"
							  : "-H",
					 extras.global	  ? "global irq events"
					 : extras.by_comm ? "merging of tasks by command name"
							  : "user hooks");
		goto out;
	}
	/* The hook lines come first, as trace-cmd prints them while it reads its options; on
	 * perf data -H is refused instead (report_perfdata()). */
	if (extras.nhooks && (!strcmp(path, "-") || tk_filekind_of(path) == TK_FILE_PERFDATA ||
			      tk_filekind_of(path) == TK_FILE_PERFDATA_PIPE))
		extras.nhooks_print = 0;
	for (size_t i = 0; i < extras.nhooks_print; i++) {
		char line[1024];

		if (!hook_line(extras.hooks[i], line, sizeof(line), true))
			fputs(line, stdout);
	}
	if ((opts.flags & TK_REPORT_STAT) && (opts.flags & TK_REPORT_JSON)) {
		status = cli_usage_error("--stat and --json do not go together");
		goto out;
	}
	opts.cache_dir = cache_dir;
	opts.events = events;
	opts.nevents = nevents;
	opts.pids = pids;
	opts.npids = npids;
	opts.comms = comms;
	opts.ncomms = ncomms;
	opts.neg_events = neg_events;
	opts.nneg_events = nneg_events;
	opts.plugin_options = plugin_opts;
	opts.nplugin_options = nplugin_opts;
	if (ntimes) {
		opts.ts_offset = in_offset[0];
		if (in_hz[0])
			opts.ts2secs_hz = in_hz[0];
	}
	opts.raw_events = raw_events;
	opts.nraw_events = nraw_events;
	opts.nohandle_events = nohandle_events;
	opts.nnohandle_events = nnohandle_events;

	src.cache_dir = cache_dir;
	if (listing) {
		status = report_listing(path, listing, event_regex, &opts, ninputs);
		goto out;
	}
	/* -T with no filter prints the report, as trace-cmd does. */
	if (filter_test && (nevents || nneg_events || npids || ncomms)) {
		status = report_filter_test(path, &opts, ninputs);
		goto out;
	}
	if (profile || wakeup_flags) {
		status = report_analysis(path, &opts, profile, wakeup_flags, ninputs);
		if (status != -1)
			goto out;
		status = CLI_OK;
	}
	if (ninputs) {
		if (perf_only(&src)) {
			status = cli_usage_error("%s is for perf.data files", perf_only(&src));
			goto out;
		}
		/* trace-cmd would take the pids from the first file and filter only that one. */
		if (ncomms) {
			status = cli_usage_error("--comm with several -i is not supported");
			goto out;
		}
		if (add_str(&inputs, &ninputs, path))
			goto nomem;
		filters = file_filters(ninputs, events, event_input, nevents, neg_events, neg_input,
				       nneg_events);
		if (!filters)
			goto nomem;
		/* Each file's own time options; @opts' are the first file's and the default. */
		opts.ts_offset = 0;
		for (size_t i = 0; i < ntimes && i < ninputs; i++) {
			filters[i].ts_offset = in_offset[i];
			filters[i].ts2secs_hz = in_hz[i];
		}
		status = report_files(inputs, ninputs, &opts, filters);
		goto out;
	}
	/* trace-cmd's options that change nothing on perf data are refused there, not ignored. */
	if (report_perfdata(path, &opts, &src, strict,
			    extras.global    ? "-G"
			    : extras.by_comm ? "--by-comm"
			    : extras.nhooks  ? "-H"
			    : negate	     ? "-v"
			    : filter_test    ? "-T"
					     : NULL,
			    &status))
		goto out;
	if (perf_only(&src)) {
		status = cli_usage_error("%s is for perf.data files; %s is a .dat file",
					 perf_only(&src), path);
		goto out;
	}
	TK_OPTS(tk_dat_open_opts, dopts, .strict = src.strict);
	dat = tk_dat_open_with(path, &dopts);
	if (!dat) {
		status = cli_lib_error(path);
		goto out;
	}
	if (ncomms) {
		status = comm_pids(dat, path, comms, ncomms, &pids, &npids);
		if (status != CLI_OK) {
			tk_dat_close(dat);
			goto out;
		}
		opts.pids = pids;
		opts.npids = npids;
		opts.comms = NULL;
		opts.ncomms = 0;
	}
	fflush(stdout);
	if (wakeup_flags) {
		/* -w --json: the summary alone, as JSON (the event lines go nowhere). */
		if (opts.flags & TK_REPORT_JSON) {
			opts.flags &= ~(unsigned int)TK_REPORT_JSON;
			wakeup_flags |= TK_WAKEUP_JSON;
			opts.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
			if (opts.fd < 0) {
				tk_dat_close(dat);
				status = cli_error("/dev/null: %s", strerror(errno));
				goto out;
			}
		}
		wakeup = tk_wakeup_new(wakeup_flags & ~WAKEUP_ON);
		if (!wakeup) {
			tk_dat_close(dat);
			goto nomem;
		}
		opts.line_hook = tk_wakeup_line;
		opts.line_hook_ctx = wakeup;
	}
	/* The process ends after this report: its event set is the exit's to free. */
	if (!leak_checked())
		opts.flags |= TK_REPORT_EXITING;
	ret = tk_report_run(dat, &opts, NULL);
	if (wakeup && ret >= 0 && tk_wakeup_finish(wakeup, STDOUT_FILENO) < 0)
		ret = -1;
	tk_wakeup_free(wakeup);
	if (opts.fd != STDOUT_FILENO)
		close(opts.fd);
	/* A filter that does not parse, or names no event, is a usage error. */
	if (ret == -EINVAL)
		status = cli_usage_error("%s: %s", path, tk_errmsg());
	else if (ret < 0)
		status = cli_lib_error(path);
	if (status != CLI_USAGE)
		status = cli_dat_damage(dat, path, status);
	tk_dat_close(dat);
	goto out;
nomem:
	status = cli_error("out of memory");
out:
	if (filters) {
		for (size_t i = 0; i < ninputs; i++) {
			free((void *)filters[i].events);
			free((void *)filters[i].neg_events);
		}
		free(filters);
	}
	free(event_input);
	free(neg_input);
	free(events);
	free(neg_events);
	free(inputs);
	free(plugin_opts);
	free(raw_events);
	free(nohandle_events);
	free(in_offset);
	free(in_hz);
	free(comms);
	free(pids);
	free(extras.hooks);
	free(src.tids);
	return status;
}
