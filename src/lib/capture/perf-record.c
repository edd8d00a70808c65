// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perf-record: tracepoints, software and hardware events through
 * perf_event_open into perf.data.
 *
 * Events. An -e spec that names a software or hardware event as perf does
 * ("cpu-clock", "page-faults", "cycles"..., optionally ":u"/":k" and
 * ":p".. for precise_ip) is a counter: sampled by frequency (attr.freq,
 * 4000 Hz by default, as perf) or every -c COUNT events, sample_type
 * IDENTIFIER|IP|TID|TIME|CPU|PERIOD (0x10187). Any other spec is expanded
 * against tracefs' events/SYSTEM/EVENT directories (fnmatch on both
 * parts); the tracepoint's attr.config is the number in events/S/E/id,
 * sample_period 1, sample_type IDENTIFIER|IP|TID|TIME|CPU|PERIOD|RAW
 * (0x10587): perf's own tracepoint samples carry IP, and perf script
 * refuses -F ip,sym without it. A cycles event that this machine cannot
 * count (no PMU: ENOENT/EOPNOTSUPP on its first open) becomes cpu-clock
 * with a warning, as perf falls back. Call graphs: fp (-g) adds CALLCHAIN;
 * dwarf adds CALLCHAIN|REGS_USER|STACK_USER with perf's x86_64 register
 * mask and exclude_callchain_user, and sets mmap_data on the dummy (and
 * synthesizes file-backed data maps), because perf's unwinder reads
 * .eh_frame_hdr through the read-only segment's map; lbr adds
 * BRANCH_STACK with the call-stack branch filter. Groups ({a,b}, the
 * tk_perfrecord_event.group number): members open with the leader's fd
 * of the same CPU and task as group_fd, enabled (the leader gates them),
 * and GROUP_DESC names them for perf report --group. IDENTIFIER puts the id at a fixed place in
 * every record, which is what lets perf tell several events apart. A
 * dummy software event (type 1, config 9) sets comm/comm_exec/task/mmap/
 * mmap2 so that the kernel reports exec, fork, exit and every executable
 * mapping. Every attr has sample_id_all, so those side-band records end
 * with the {pid,tid}{time}{cpu}{id} trailer (32 bytes, the same for every
 * attr: perf reads the trailer by the first event's layout).
 *
 * Targets. System-wide (-a, or no command): every event once per online
 * CPU (or per CPU of the -C list) with pid -1. Existing tasks (-p: every
 * thread of the process alive at the start; -t: those threads): once per
 * CPU and thread, inherit, enabled by ioctl; the side band is their COMM
 * and their processes' maps. fds are laid out [cpu][task][event]. Around a command without -a: once
 * per CPU with pid = the held child, inherit (its descendants count too) and enable_on_exec
 * (nothing before the exec: the kernel enables the events as the image
 * is replaced, before it names the task, so the exec COMM is recorded).
 * inherit needs per-CPU events to be mmap'ed, hence not one per-task ring.
 * All events of a CPU write into one ring (the first fd's mmap, the others
 * PERF_EVENT_IOC_SET_OUTPUT to it), so a pass over the rings is one read
 * per CPU.
 *
 * Ring protocol. The mmap is one metadata page and 2^n data pages. The
 * kernel advances data_head; we load it with acquire semantics (the records
 * below head are then visible), copy records out (a record can wrap around
 * the end of the data area), then store data_tail with release semantics
 * so that the kernel does not overwrite what we are still reading. When
 * the ring is full the kernel drops samples and later writes a
 * PERF_RECORD_LOST {id, lost}; we sum those.
 *
 * File. First what perf synthesizes: the kernel map as a type-1 MMAP
 * (pid -1, [_text, _etext) from /proc/kallsyms, pgoff = _text, name
 * "[kernel.kallsyms]_text", misc KERNEL) so perf relocates kallsyms; then
 * system-wide a COMM for every thread alive and an MMAP2 for every
 * executable mapping of every process (/proc/PID/maps: prot, MAP_PRIVATE
 * or MAP_SHARED, dev, inode; anonymous ones named "//anon"), or around a
 * command a COMM for the held child. Their trailers are zero (time 0, id
 * 0: perf maps id 0 to the first event). Then the ring contents, with a
 * FINISHED_ROUND after each drain pass that found data: records of one
 * pass are not sorted across CPUs, and the marker tells perf it may sort
 * and flush everything older than the previous pass. Before the first
 * record the writer gets what is known up front: TRACING_DATA (the formats
 * and saved_cmdlines of the live tracefs, taken at the start: tasks born
 * later are named by their COMM records), the host features and CMDLINE;
 * it writes them ahead of the data (perfdata-write.c). At finish: BUILD_ID
 * and SAMPLE_TIME.
 *
 * Killed recordings. The side band is committed before the events are
 * enabled, then whatever a drain pass copied out is committed at the end
 * of the first pass 90 ms or more after the previous commit (every 100 ms
 * poll cycle when idle; under load, passes come on wakeups and a commit
 * also happens at every 1 MiB). A SIGKILL so loses at most ~100 ms plus
 * what the rings held, and leaves a file that perf script and tracekit
 * report read whole. The commits cost no measurable recorder CPU and
 * 0.02 % of padding (figures: bench/README.md, "bench-record").
 *
 * Build ids. While draining, MMAP/MMAP2 records (and the synthesized ones)
 * fill a per-process table of executable maps, FORK copies the parent's,
 * and the ip of every counter sample marks the file its map holds as hit
 * (kernel-mode ips mark [kernel.kallsyms]), as perf's build-id pass does.
 * Rings are drained CPU by CPU, so a sample can be seen before the MMAP2
 * of another CPU that precedes it; such ips are kept (up to PENDING_MAX)
 * and resolved at the end. The newest map covering an address wins, which
 * is what an exec or a remap means. At finish the hit files' build ids are
 * read with the elf module (files that vanished or have none are left
 * out), the kernel's from /sys/kernel/notes, and [vdso]'s from our own
 * vdso image whenever a process mapped one (perf always lists it).
 *
 * Append. The file is opened with tk_perfdata_writer_open_append(): equal attrs
 * get the new ids, a changed attr is refused before anything is written.
 * TRACING_DATA is rebuilt from the old file's tracepoints and the new ones
 * (an old tracepoint whose id the running kernel gives to another event,
 * after a reboot, is refused: perf would decode it with the wrong format).
 *
 * Waiting. Signals arrive through a signalfd polled with the rings, and
 * the poll timeout (100 ms, or less before the deadline) also drains rings
 * that have not reached the wakeup watermark (half a ring).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/command.h>
#include <tracekit/host.h>
#include <tracekit/elf.h>
#include <tracekit/perfdata.h>
#include <tracekit/perfrecord.h>
#include <tracekit/tracedata.h>
#include <tracekit/tracefs.h>

#include "internal/array.h"
#include "internal/error.h"
#include "internal/opts.h"
#include "perf-host.h"

#define TP_SAMPLE_TYPE                                                                             \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW)
#define CTR_SAMPLE_TYPE                                                                            \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define DUMMY_SAMPLE_TYPE                                                                          \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
#define MAX_RECORD	  65536
#define DEFAULT_FREQ	  4000
#define PENDING_MAX	  65536
#define FLUSH_INTERVAL	  0.09 /* s: each 100 ms poll cycle commits, faster wakeups wait */
#define MISC_CPUMODE_MASK 7
#define DEFAULT_STACK	  8192
#define MAX_STACK	  TK_PERFRECORD_MAX_STACK
/* perf's user registers for DWARF unwinding on x86_64: all but the segment registers. */
#define X86_64_REGS_USER 0xff0fffULL

/* An event to open: a tracepoint or a counter (software or hardware). */
struct ev {
	char *name;    /* "system:event", "cpu-clock", "cycles:u" */
	uint32_t type; /* PERF_TYPE_* */
	uint64_t config;
	const char *filter;
	bool exclude_user, exclude_kernel;
	uint8_t precise; /* :p, :pp, :ppp */
	uint32_t group;	 /* tk_perfrecord_event.group */
	size_t leader;	 /* index of the group's first event; itself when alone */
};

/* A task events follow: the held command, or one of -p/-t; pid -1 system-wide. */
struct target {
	int32_t pid, tid;
};

struct ring {
	int cpu;
	void *base;
	size_t map_len;
	unsigned char *data;
	uint64_t data_size;
};

/* Kernel id of an event fd, for finding a sample's event. */
struct idmap {
	uint64_t id;
	size_t ev; /* index into evs, nr_evs for the dummy */
};

/* A file that executable maps point at; hit once a sample's ip lands in it. */
struct dso {
	char *path;
	uint32_t hash;
	bool hit;
};

struct umap {
	uint64_t start, end;
	uint32_t dso;
};

struct uproc {
	int32_t pid; /* 0: free slot (pid 0 never maps user code) */
	struct umap *maps;
	size_t n, cap;
};

struct pending {
	int32_t pid;
	uint64_t ip;
};

struct session {
	const struct tk_perfrecord_opts *o;
	struct tk_perfrecord_stats *st;
	struct ev *evs;
	size_t nr_evs, cap_evs, nr_tps;
	char **old_tps; /* append: tracepoints of the existing file */
	size_t nr_old_tps;
	uint64_t freq;
	int *cpus;
	size_t nr_cpus;
	struct target *targets; /* {-1, -1} system-wide, the child, or -p/-t threads */
	size_t nr_targets;
	int *fds; /* [cpu][target][nr_evs + 1] */
	size_t nr_fds;
	struct idmap *ids; /* sorted by id */
	size_t nr_ids;
	struct ring *rings;
	struct tk_perfdata_writer *w;
	unsigned char *buf;	/* MAX_RECORD bytes for a record that wraps */
	struct tk_command *cmd; /* the command followed, or NULL */
	pid_t child;		/* its pid, or -1 */
	bool system_wide;

	struct dso *dsos;
	size_t nr_dsos, cap_dsos;
	struct uproc *procs; /* open addressing by pid, cap a power of two */
	size_t nr_procs, cap_procs;
	struct pending *pend;
	size_t nr_pend;
	bool kernel_hit, vdso_seen;
	int track_err; /* first failure of the tracking tables (ENOMEM) */
};

/* Every record goes through here: the data size is reported in the stats. */
static int emit(struct session *s, const void *rec, size_t size)
{
	int r = tk_perfdata_writer_write(s->w, rec, size);

	if (r == 0)
		s->st->bytes += size;
	return r;
}

/* ------------------------------------------------------------ events, CPUs */

/* The software and hardware events perf knows by name (perf list). */
static const struct named_event {
	const char *name;
	uint32_t type;
	uint64_t config;
} named_events[] = {
	{"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
	{"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
	{"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
	{"faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
	{"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
	{"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
	{"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
	{"migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
	{"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
	{"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
	{"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
	{"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
	{"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
	{"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
	{"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
	{"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
	{"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
	{"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
	{"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
	{"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
	{"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
	{"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
};

static int add_ev(struct session *s, const char *name, uint32_t type, uint64_t config,
		  const char *filter, bool excl_user, bool excl_kernel, uint8_t precise,
		  uint32_t group)
{
	size_t leader = s->nr_evs;

	for (size_t i = 0; i < s->nr_evs; i++) {
		const struct ev *e = &s->evs[i];

		/* The same event twice is opened once, unless a group needs its own copy. */
		if (!group && !e->group && e->type == type && e->config == config &&
		    e->exclude_user == excl_user && e->exclude_kernel == excl_kernel &&
		    e->precise == precise)
			return 0;
		if (group && e->group == group && leader == s->nr_evs)
			leader = i;
	}
	{
		struct ev *n = tk_array_grow(s->evs, &s->cap_evs, s->nr_evs, sizeof(*n), 16);

		if (!n)
			return tk_fail(ENOMEM, "out of memory");
		s->evs = n;
	}
	s->evs[s->nr_evs] = (struct ev){
		.name = strdup(name),
		.type = type,
		.config = config,
		.filter = filter,
		.exclude_user = excl_user,
		.exclude_kernel = excl_kernel,
		.precise = precise,
		.group = group,
		.leader = leader,
	};
	if (!s->evs[s->nr_evs].name)
		return tk_fail(ENOMEM, "out of memory");
	s->nr_evs++;
	if (type == PERF_TYPE_TRACEPOINT)
		s->nr_tps++;
	return 0;
}

/*
 * A named counter, with optional modifiers u (user only), k (kernel only)
 * and p, pp, ppp (attr.precise_ip, as perf). Returns 1 when @spec is one, 0 when it is not (then it
 * is a tracepoint spec), or a negative errno.
 */
static int parse_counter(struct session *s, const struct tk_perfrecord_event *e)
{
	const char *colon = strchr(e->spec, ':');
	size_t n = colon ? (size_t)(colon - e->spec) : strlen(e->spec);
	bool u = false, k = false;
	uint8_t p = 0;
	int r;

	for (size_t i = 0; i < sizeof(named_events) / sizeof(named_events[0]); i++) {
		const struct named_event *ne = &named_events[i];

		if (strlen(ne->name) != n || strncmp(ne->name, e->spec, n))
			continue;
		for (const char *m = colon ? colon + 1 : ""; *m; m++) {
			if (*m == 'u') {
				u = true;
			} else if (*m == 'k') {
				k = true;
			} else if (*m == 'p' && p < 3) {
				p++;
			} else {
				/* "cycles:foo" could only be a tracepoint of a system named cycles.
				 */
				return 0;
			}
		}
		if (e->filter)
			return tk_fail(EINVAL, "event %s: filters (-f) apply to tracepoints only",
				       e->spec);
		/* ":u" excludes the kernel, ":k" the user; both (or none) count both. */
		r = add_ev(s, e->spec, ne->type, ne->config, NULL, k && !u, u && !k, p, e->group);
		return r < 0 ? r : 1;
	}
	return 0;
}

static int read_id(const char *path, uint64_t *id)
{
	char b[32];
	ssize_t n;
	char *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	b[n] = 0;
	errno = 0;
	*id = strtoull(b, &end, 10);
	if (errno || end == b)
		return -EIO;
	return 0;
}

static int expand_spec(struct session *s, const char *root, const struct tk_perfrecord_event *e)
{
	char sys_pat[256], path[4096], name[600];
	const char *ev_pat = "*";
	const char *colon = strchr(e->spec, ':');
	size_t n = colon ? (size_t)(colon - e->spec) : strlen(e->spec);
	size_t matched = 0;
	DIR *top, *sd;
	struct dirent *a, *b;
	int r;

	r = parse_counter(s, e);
	if (r)
		return r < 0 ? r : 0;
	if (n == 0 || n >= sizeof(sys_pat))
		return tk_fail(EINVAL, "event \"%s\" is not SYSTEM[:EVENT]", e->spec);
	memcpy(sys_pat, e->spec, n);
	sys_pat[n] = 0;
	if (colon)
		ev_pat = colon + 1;
	if (!*ev_pat)
		return tk_fail(EINVAL, "event \"%s\" is not SYSTEM[:EVENT]", e->spec);
	snprintf(path, sizeof(path), "%s/events", root);
	top = opendir(path);
	if (!top)
		return tk_fail(errno, "%s: %s", path, strerror(errno));
	while (!r && (a = readdir(top))) {
		if (a->d_name[0] == '.' || fnmatch(sys_pat, a->d_name, 0))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", root, a->d_name);
		sd = opendir(path);
		if (!sd)
			continue; /* the files enable, header_page... */
		while (!r && (b = readdir(sd))) {
			uint64_t id = 0;

			if (b->d_name[0] == '.' || fnmatch(ev_pat, b->d_name, 0))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", root,
					     a->d_name, b->d_name) >= sizeof(path) ||
			    read_id(path, &id) < 0)
				continue;
			matched++;
			snprintf(name, sizeof(name), "%s:%s", a->d_name, b->d_name);
			r = add_ev(s, name, PERF_TYPE_TRACEPOINT, id, e->filter, false, false, 0,
				   e->group);
		}
		closedir(sd);
	}
	closedir(top);
	if (r)
		return r;
	if (!matched)
		return tk_fail(ENOENT, "no tracepoint matches \"%s\"", e->spec);
	return 0;
}

static int online_cpus(struct session *s)
{
	char b[4096], *p;
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return tk_fail(errno, "/sys/devices/system/cpu/online: %s", strerror(errno));
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return tk_fail(EIO, "/sys/devices/system/cpu/online: cannot read");
	b[n] = 0;
	p = b;
	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p || lo < 0 || lo > 65535)
			return tk_fail(EIO, "/sys/devices/system/cpu/online: bad list \"%s\"", b);
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo || hi > 65535)
				return tk_fail(EIO, "/sys/devices/system/cpu/online: bad list");
			p = end;
		}
		for (long c = lo; c <= hi; c++) {
			int *nc = realloc(s->cpus, (s->nr_cpus + 1) * sizeof(*nc));

			if (!nc)
				return tk_fail(ENOMEM, "out of memory");
			s->cpus = nc;
			s->cpus[s->nr_cpus++] = (int)c;
		}
		if (*p == ',')
			p++;
	}
	if (!s->nr_cpus)
		return tk_fail(EIO, "/sys/devices/system/cpu/online: no CPU");
	return 0;
}

static enum tk_perfrecord_callgraph callgraph(const struct session *s)
{
	if (s->o->callgraph)
		return s->o->callgraph;
	return s->o->callchain ? TK_PERFRECORD_CALLGRAPH_FP : TK_PERFRECORD_CALLGRAPH_NONE;
}

/* What perf record --call-graph sets on every sampling event. */
static void callgraph_attr(const struct session *s, struct perf_event_attr *a)
{
	switch (callgraph(s)) {
	case TK_PERFRECORD_CALLGRAPH_FP:
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		break;
	case TK_PERFRECORD_CALLGRAPH_DWARF:
		/* The kernel part of the chain comes walked, the user part as registers
		 * and a stack copy that the reader unwinds with the DWARF CFI. */
		a->sample_type |=
			PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = X86_64_REGS_USER;
		a->sample_stack_user = s->o->stack_size ? s->o->stack_size : DEFAULT_STACK;
		a->exclude_callchain_user = 1;
		break;
	case TK_PERFRECORD_CALLGRAPH_LBR:
		a->sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BRANCH_STACK;
		a->branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK |
					PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS;
		break;
	case TK_PERFRECORD_CALLGRAPH_NONE:
		break;
	}
}

/* -C: the CPUs asked for, each of which must be online, replace the online list. */
static int pick_cpus(struct session *s)
{
	size_t n = 0;

	if (!s->o->cpus)
		return 0;
	if (!s->o->nr_cpus)
		return tk_fail(EINVAL, "an empty CPU list");
	for (size_t i = 0; i < s->o->nr_cpus; i++) {
		bool online = false, dup = false;

		for (size_t c = 0; c < s->nr_cpus && !online; c++)
			online = s->cpus[c] == s->o->cpus[i];
		if (!online)
			return tk_fail(EINVAL, "CPU %d is not online", (int)s->o->cpus[i]);
		for (size_t k = 0; k < i && !dup; k++)
			dup = s->o->cpus[k] == s->o->cpus[i];
		if (!dup)
			s->cpus[n++] = s->o->cpus[i];
	}
	s->nr_cpus = n;
	return 0;
}

static int add_target(struct session *s, int32_t pid, int32_t tid)
{
	struct target *n = realloc(s->targets, (s->nr_targets + 1) * sizeof(*n));

	if (!n)
		return tk_fail(ENOMEM, "out of memory");
	s->targets = n;
	s->targets[s->nr_targets++] = (struct target){.pid = pid, .tid = tid};
	return 0;
}

/* The process a thread belongs to (Tgid in /proc/TID/status), or -1. */
static int32_t thread_group(int32_t tid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	long tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	free(line);
	fclose(f);
	return tgid > 0 && tgid <= INT32_MAX ? (int32_t)tgid : -1;
}

/*
 * Whom the events follow: every task (pid -1) system-wide, the held child,
 * or the threads of -p (all of a process's threads alive now; inherit adds
 * those they create) and -t, each opened per CPU as perf does.
 */
static int find_targets(struct session *s)
{
	int r;

	if (s->system_wide)
		return add_target(s, -1, -1);
	if (s->cmd)
		return add_target(s, s->child, s->child);
	for (size_t i = 0; i < s->o->nr_pids; i++) {
		int32_t pid = s->o->pids[i];
		char path[64];
		struct dirent *d;
		size_t before = s->nr_targets;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		dir = pid > 0 ? opendir(path) : NULL;
		if (!dir)
			return tk_fail(ESRCH, "process %d: no such process", (int)pid);
		r = 0;
		while (!r && (d = readdir(dir))) {
			char *end;
			long tid = strtol(d->d_name, &end, 10);

			if (*end || end == d->d_name || tid <= 0 || tid > INT32_MAX)
				continue;
			r = add_target(s, pid, (int32_t)tid);
		}
		closedir(dir);
		if (r)
			return r;
		if (s->nr_targets == before)
			return tk_fail(ESRCH, "process %d: no threads", (int)pid);
	}
	for (size_t i = 0; i < s->o->nr_tids; i++) {
		int32_t tid = s->o->tids[i], pid = tid > 0 ? thread_group(tid) : -1;

		if (pid < 0)
			return tk_fail(ESRCH, "thread %d: no such thread", (int)tid);
		r = add_target(s, pid, tid);
		if (r)
			return r;
	}
	return 0;
}

/*
 * The attr of event @e (nr_evs: the dummy), as opened and as stored: the
 * same function for both, so that an append finds equal attrs equal.
 */
static void fill_attr(const struct session *s, size_t e, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->disabled = 1;
	a->sample_id_all = 1;
	if (e == s->nr_evs) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		a->sample_period = 1;
		a->sample_type = DUMMY_SAMPLE_TYPE;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->mmap = 1;
		a->mmap2 = 1;
		/* DWARF unwinding reads .eh_frame from the file's read-only segment: perf
		 * needs the data maps too to find it (mmap_data, as perf sets it). */
		a->mmap_data = callgraph(s) == TK_PERFRECORD_CALLGRAPH_DWARF;
	} else if (s->evs[e].type == PERF_TYPE_TRACEPOINT) {
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = s->evs[e].config;
		a->sample_period = s->o->period ? s->o->period : 1;
		a->sample_type = TP_SAMPLE_TYPE;
	} else {
		a->type = s->evs[e].type;
		a->config = s->evs[e].config;
		a->sample_type = CTR_SAMPLE_TYPE;
		if (s->o->period) {
			a->sample_period = s->o->period;
		} else {
			a->freq = 1;
			a->sample_freq = s->freq;
		}
		a->exclude_user = s->evs[e].exclude_user;
		a->exclude_kernel = s->evs[e].exclude_kernel;
		a->precise_ip = s->evs[e].precise;
	}
	if (e < s->nr_evs)
		callgraph_attr(s, a);
	if (!s->system_wide)
		a->inherit = 1;
	/* Only the command starts at an exec; -p/-t tasks run already and are enabled by ioctl. */
	if (s->cmd)
		a->enable_on_exec = 1;
	/* A group member counts while its leader does: perf opens members enabled. */
	if (e < s->nr_evs && s->evs[e].leader != e) {
		a->disabled = 0;
		a->enable_on_exec = 0;
	}
	/* perf sets the clock on every event, the dummy too: all times on one clock. */
	if (s->o->use_clockid) {
		a->use_clockid = 1;
		a->clockid = s->o->clockid;
	}
}

static const char *ev_name(const struct session *s, size_t e)
{
	return e < s->nr_evs ? s->evs[e].name : "dummy:HG";
}

/* The writer's view of an attr: the kernel's struct, encoded by tk_perfdata_attr_decode(). */
static void to_tk_attr(const struct perf_event_attr *a, struct tk_perf_attr *t)
{
	uint8_t raw[128] = {0};

	memcpy(raw, a, sizeof(*a) < sizeof(raw) ? sizeof(*a) : sizeof(raw));
	tk_perfdata_attr_decode(raw, sizeof(raw), t);
	t->size = 128;
}

/* One line that names the event, the CPU, the errno, and what it likely means. */
static int open_error(const struct session *s, size_t e, int cpu, int err)
{
	const char *hint = "";

	if (e < s->nr_evs && callgraph(s) == TK_PERFRECORD_CALLGRAPH_LBR &&
	    (err == EOPNOTSUPP || err == EINVAL || err == ENOENT))
		hint = " (--call-graph lbr needs a hardware event on a CPU with last branch "
		       "records; try fp or dwarf)";
	else if (e < s->nr_evs && s->evs[e].type == PERF_TYPE_HARDWARE &&
		 (err == ENOENT || err == EOPNOTSUPP || err == ENODEV))
		hint = " (this machine has no hardware PMU for it; try cpu-clock)";
	else if (err == EACCES || err == EPERM)
		hint = " (needs root or CAP_PERFMON; see kernel.perf_event_paranoid)";
	else if (err == ESRCH)
		hint = s->cmd ? " (the command is gone)" : " (the task is gone)";
	else if (err == EINVAL && s->o->use_clockid && s->o->clockid != CLOCK_MONOTONIC &&
		 s->o->clockid != CLOCK_MONOTONIC_RAW)
		hint = " (the kernel takes that clock for software events only: tracepoints "
		       "and hardware events need mono or raw)";
	return tk_fail(err, "event %s: perf_event_open on CPU %d: %s%s", ev_name(s, e), cpu,
		       strerror(err), hint);
}

/*
 * perf's fallback: a cycles event the machine cannot count (no hardware
 * PMU, as in most VMs) becomes cpu-clock, with the same modifiers. Only
 * before the event's first fd exists, so every CPU opens the same attr.
 */
static bool fall_back(struct session *s, size_t e, int err)
{
	struct ev *ev = &s->evs[e];
	const char *mod;
	char *name;

	if (ev->type != PERF_TYPE_HARDWARE || ev->config != PERF_COUNT_HW_CPU_CYCLES ||
	    (err != ENOENT && err != EOPNOTSUPP && err != ENODEV))
		return false;
	mod = strchr(ev->name, ':');
	if (asprintf(&name, "cpu-clock%s", mod ? mod : "") < 0)
		return false;
	tk_warn("the %s event is not supported, falling back to %s", ev->name, name);
	free(ev->name);
	ev->name = name;
	ev->type = PERF_TYPE_SOFTWARE;
	ev->config = PERF_COUNT_SW_CPU_CLOCK;
	/* cpu-clock is a timer: it has no precise variant to ask for. */
	ev->precise = 0;
	s->st->nr_fallbacks++;
	return true;
}

static int open_one(struct session *s, size_t c, size_t t, size_t e, uint32_t watermark)
{
	size_t per_cpu = s->nr_evs + 1;
	size_t base = (c * s->nr_targets + t) * per_cpu;
	struct perf_event_attr a;
	int group_fd = -1, fd;

	if (e < s->nr_evs && s->evs[e].leader != e)
		group_fd = s->fds[base + s->evs[e].leader];
	for (;;) {
		fill_attr(s, e, &a);
		a.watermark = 1;
		a.wakeup_watermark = watermark;
		fd = (int)syscall(SYS_perf_event_open, &a, s->targets[t].tid, s->cpus[c], group_fd,
				  PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			break;
		if (e < s->nr_evs && c == 0 && t == 0 && fall_back(s, e, errno))
			continue;
		return open_error(s, e, s->cpus[c], errno);
	}
	s->fds[base + e] = fd;
	if (e < s->nr_evs && s->evs[e].filter &&
	    ioctl(fd, PERF_EVENT_IOC_SET_FILTER, s->evs[e].filter) < 0)
		return tk_fail(errno, "%s: filter \"%s\": %s", s->evs[e].name, s->evs[e].filter,
			       strerror(errno));
	return fd;
}

static int open_events(struct session *s)
{
	size_t per_cpu = s->nr_evs + 1;
	uint32_t pages = s->o->mmap_pages ? s->o->mmap_pages : 64;
	long psz = sysconf(_SC_PAGESIZE);
	uint32_t watermark = (uint32_t)((uint64_t)pages * (uint64_t)psz / 2);

	if (pages & (pages - 1))
		return tk_fail(EINVAL, "ring of %u pages: not a power of two", pages);
	s->nr_fds = s->nr_cpus * s->nr_targets * per_cpu;
	s->fds = malloc(s->nr_fds * sizeof(*s->fds));
	s->rings = calloc(s->nr_cpus, sizeof(*s->rings));
	if (!s->fds || !s->rings)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nr_fds; i++)
		s->fds[i] = -1;
	for (size_t c = 0; c < s->nr_cpus; c++) {
		struct ring *rg = &s->rings[c];
		int first = -1;

		rg->cpu = s->cpus[c];
		for (size_t t = 0; t < s->nr_targets; t++) {
			for (size_t e = 0; e < per_cpu; e++) {
				int fd = open_one(s, c, t, e, watermark);

				if (fd < 0)
					return fd;
				if (first >= 0) {
					if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, first) < 0)
						return tk_fail(errno,
							       "PERF_EVENT_IOC_SET_OUTPUT on CPU "
							       "%d: %s",
							       rg->cpu, strerror(errno));
					continue;
				}
				first = fd;
				rg->map_len = (size_t)(pages + 1) * (size_t)psz;
				rg->base = mmap(NULL, rg->map_len, PROT_READ | PROT_WRITE,
						MAP_SHARED, fd, 0);
				if (rg->base == MAP_FAILED) {
					rg->base = NULL;
					return tk_fail(errno, "mmap of the CPU %d ring: %s",
						       rg->cpu, strerror(errno));
				}
				struct perf_event_mmap_page *m = rg->base;

				if (m->data_size && m->data_offset) {
					rg->data = (unsigned char *)rg->base + m->data_offset;
					rg->data_size = m->data_size;
				} else {
					rg->data = (unsigned char *)rg->base + psz;
					rg->data_size = (uint64_t)pages * (uint64_t)psz;
				}
			}
		}
	}
	return 0;
}

static int idmap_cmp(const void *a, const void *b)
{
	const struct idmap *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int add_attrs(struct session *s)
{
	size_t per_cpu = s->nr_evs + 1;

	s->ids = calloc(s->nr_fds ? s->nr_fds : 1, sizeof(*s->ids));
	if (!s->ids)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t e = 0; e < per_cpu; e++) {
		struct perf_event_attr a;
		struct tk_perf_attr t;
		int idx, r;

		/* The file keeps what perf keeps: not the kernel's wakeup settings. */
		fill_attr(s, e, &a);
		to_tk_attr(&a, &t);
		idx = tk_perfdata_writer_add_attr(s->w, &t, ev_name(s, e));
		if (idx < 0)
			return idx;
		for (size_t i = 0; i < s->nr_cpus * s->nr_targets; i++) {
			uint64_t id;

			if (ioctl(s->fds[i * per_cpu + e], PERF_EVENT_IOC_ID, &id) < 0)
				return tk_fail(errno, "PERF_EVENT_IOC_ID: %s", strerror(errno));
			r = tk_perfdata_writer_add_ids(s->w, (size_t)idx, &id, 1);
			if (r < 0)
				return r;
			s->ids[s->nr_ids++] = (struct idmap){.id = id, .ev = e};
		}
	}
	qsort(s->ids, s->nr_ids, sizeof(*s->ids), idmap_cmp);
	return 0;
}

/* The event a SAMPLE belongs to (IDENTIFIER is its first field), or SIZE_MAX. */
static size_t sample_event(const struct session *s, const unsigned char *rec, size_t size)
{
	size_t lo = 0, hi = s->nr_ids;
	uint64_t id;

	if (size < 16)
		return SIZE_MAX;
	memcpy(&id, rec + 8, 8);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ids[mid].id == id)
			return s->ids[mid].ev;
		if (s->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/* ------------------------------------------------------------ maps and hits */

static uint32_t str_hash(const char *p)
{
	uint32_t h = 2166136261u;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

static int track_fail(struct session *s)
{
	if (!s->track_err)
		s->track_err = tk_fail(ENOMEM, "out of memory");
	return s->track_err;
}

static int64_t dso_get(struct session *s, const char *path)
{
	uint32_t h = str_hash(path);

	for (size_t i = s->nr_dsos; i-- > 0;)
		if (s->dsos[i].hash == h && !strcmp(s->dsos[i].path, path))
			return (int64_t)i;
	if (s->nr_dsos == s->cap_dsos) {
		size_t cap = s->cap_dsos ? s->cap_dsos * 2 : 64;
		struct dso *n = realloc(s->dsos, cap * sizeof(*n));

		if (!n)
			return track_fail(s);
		s->dsos = n;
		s->cap_dsos = cap;
	}
	s->dsos[s->nr_dsos].path = strdup(path);
	if (!s->dsos[s->nr_dsos].path)
		return track_fail(s);
	s->dsos[s->nr_dsos].hash = h;
	s->dsos[s->nr_dsos].hit = false;
	if (!strcmp(path, "[vdso]"))
		s->vdso_seen = true;
	return (int64_t)s->nr_dsos++;
}

static struct uproc *proc_find(struct session *s, int32_t pid, bool create)
{
	size_t mask, i;

	if (pid <= 0)
		return NULL;
	if (create && (s->nr_procs + 1) * 2 > s->cap_procs) {
		size_t cap = s->cap_procs ? s->cap_procs * 2 : 256;
		struct uproc *n = calloc(cap, sizeof(*n));

		if (!n) {
			track_fail(s);
			return NULL;
		}
		for (size_t k = 0; k < s->cap_procs; k++) {
			if (!s->procs[k].pid)
				continue;
			for (i = ((uint32_t)s->procs[k].pid * 2654435761u) & (cap - 1); n[i].pid;
			     i = (i + 1) & (cap - 1))
				;
			n[i] = s->procs[k];
		}
		free(s->procs);
		s->procs = n;
		s->cap_procs = cap;
	}
	if (!s->cap_procs)
		return NULL;
	mask = s->cap_procs - 1;
	for (i = ((uint32_t)pid * 2654435761u) & mask; s->procs[i].pid; i = (i + 1) & mask)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (!create)
		return NULL;
	s->procs[i].pid = pid;
	s->nr_procs++;
	return &s->procs[i];
}

static void add_map(struct session *s, int32_t pid, uint64_t start, uint64_t len, const char *path)
{
	struct uproc *p;
	int64_t d;

	if (!len || start + len < start)
		return;
	d = dso_get(s, path);
	if (d < 0)
		return;
	p = proc_find(s, pid, true);
	if (!p)
		return;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct umap *n = realloc(p->maps, cap * sizeof(*n));

		if (!n) {
			track_fail(s);
			return;
		}
		p->maps = n;
		p->cap = cap;
	}
	p->maps[p->n++] = (struct umap){.start = start, .end = start + len, .dso = (uint32_t)d};
}

/* A new process starts with its parent's maps (fork copies the address space). */
static void fork_maps(struct session *s, int32_t ppid, int32_t pid)
{
	struct uproc *parent, *child;
	struct umap *copy;
	size_t n;

	if (ppid == pid)
		return; /* a thread: maps are per process */
	parent = proc_find(s, ppid, false);
	if (!parent || !parent->n)
		return;
	n = parent->n;
	copy = malloc(n * sizeof(*copy));
	if (!copy) {
		track_fail(s);
		return;
	}
	memcpy(copy, parent->maps, n * sizeof(*copy));
	child = proc_find(s, pid, true); /* may rehash: parent is stale from here */
	if (!child) {
		free(copy);
		return;
	}
	if (child->n) {
		/* Maps of the child seen first (another CPU's ring) are newer: they stay last. */
		struct umap *all = realloc(copy, (n + child->n) * sizeof(*all));

		if (!all) {
			free(copy);
			track_fail(s);
			return;
		}
		memcpy(all + n, child->maps, child->n * sizeof(*all));
		n += child->n;
		copy = all;
	}
	free(child->maps);
	child->maps = copy;
	child->n = child->cap = n;
}

/* Mark the file holding @ip of process @pid as hit; false when no map holds it. */
static bool hit_user(struct session *s, int32_t pid, uint64_t ip)
{
	struct uproc *p = proc_find(s, pid, false);

	if (!p)
		return false;
	for (size_t i = p->n; i-- > 0;) {
		if (ip >= p->maps[i].start && ip < p->maps[i].end) {
			s->dsos[p->maps[i].dso].hit = true;
			return true;
		}
	}
	return false;
}

static void note_sample(struct session *s, const unsigned char *rec, size_t size, uint16_t misc)
{
	size_t e = sample_event(s, rec, size);
	uint64_t ip;
	uint32_t pid;

	/* IDENTIFIER, IP, {pid, tid} are the first fields of every event's samples. */
	if (e >= s->nr_evs || size < 32)
		return;
	memcpy(&ip, rec + 16, 8);
	memcpy(&pid, rec + 24, 4);
	switch (misc & MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_KERNEL:
		s->kernel_hit = true;
		break;
	case PERF_RECORD_MISC_USER:
		if (hit_user(s, (int32_t)pid, ip))
			break;
		/* Its MMAP2 may still wait in another CPU's ring: look again at the end. */
		if (s->nr_pend && s->pend[s->nr_pend - 1].pid == (int32_t)pid &&
		    s->pend[s->nr_pend - 1].ip >> 12 == ip >> 12)
			break;
		if (!s->pend) {
			s->pend = malloc(PENDING_MAX * sizeof(*s->pend));
			if (!s->pend) {
				track_fail(s);
				break;
			}
		}
		if (s->nr_pend < PENDING_MAX)
			s->pend[s->nr_pend++] = (struct pending){.pid = (int32_t)pid, .ip = ip};
		break;
	default:
		break;
	}
}

/* Side-band and samples of the rings feed the map and hit tables. */
static void track(struct session *s, const unsigned char *rec, const struct perf_event_header *h)
{
	uint32_t pid, ppid;
	uint64_t addr, len;
	size_t name_off;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		note_sample(s, rec, h->size, h->misc);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		char name[4096];
		size_t n;

		name_off = h->type == PERF_RECORD_MMAP ? 40 : 72;
		if (h->size <= name_off || (h->misc & MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
			break;
		memcpy(&pid, rec + 8, 4);
		memcpy(&addr, rec + 16, 8);
		memcpy(&len, rec + 24, 8);
		n = strnlen((const char *)rec + name_off, h->size - name_off);
		if (n == 0 || n >= sizeof(name))
			break;
		memcpy(name, rec + name_off, n);
		name[n] = 0;
		add_map(s, (int32_t)pid, addr, len, name);
		break;
	}
	case PERF_RECORD_FORK:
		if (h->size < 24)
			break;
		memcpy(&pid, rec + 8, 4);
		memcpy(&ppid, rec + 12, 4);
		fork_maps(s, (int32_t)ppid, (int32_t)pid);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------ side band */

/* Count what the writer's add_* call wrote (it returns the record's size). */
static int added(struct session *s, int r)
{
	if (r < 0)
		return r;
	s->st->bytes += (uint64_t)r;
	return 0;
}

/* A synthesized COMM: time 0, id 0 (a NULL trailer leaves them zero). */
static int write_comm(struct session *s, uint32_t pid, uint32_t tid, const char *comm)
{
	return added(s, tk_perfdata_writer_add_comm(s->w, pid, tid, comm, false, NULL));
}

static int read_small(const char *path, char *b, size_t cap)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, b, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = 0;
	b[strcspn(b, "\n")] = 0;
	return 0;
}

/*
 * The kernel map as perf synthesizes it, so that perf relocates kallsyms:
 * MMAP, pid -1, [_text, _etext), pgoff = _text. Without readable kallsyms
 * addresses (kptr_restrict) there is nothing true to write, and perf falls
 * back on its own guess.
 */
static int synthesize_kernel_mmap(struct session *s)
{
	static const char name[] = "[kernel.kallsyms]_text";
	uint64_t text = 0, etext = 0;
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	while ((!text || !etext) && getline(&line, &cap, f) > 0) {
		char sym[64], t;
		unsigned long long a;

		if (sscanf(line, "%llx %c %63s", &a, &t, sym) != 3)
			continue;
		if (!strcmp(sym, "_text"))
			text = a;
		else if (!strcmp(sym, "_etext"))
			etext = a;
	}
	free(line);
	fclose(f);
	if (!text || etext <= text)
		return 0;
	return added(s, tk_perfdata_writer_add_mmap(s->w, PERF_RECORD_MISC_KERNEL, UINT32_MAX, 0,
						    text, etext - text, text, name, NULL));
}

/*
 * MMAP2 for every executable mapping of process @pid (/proc/PID/maps), as
 * perf synthesizes them for processes that run when recording starts. A
 * process that exits meanwhile just has none.
 */
static int synthesize_maps(struct session *s, unsigned long pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%lu/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!r && getline(&line, &cap, f) > 0) {
		unsigned long long start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[8];
		int name_at = 0;
		const char *name;
		char nm[4096];
		size_t n;
		struct tk_perf_mmap2 m = {
			.pid = (uint32_t)pid, .tid = (uint32_t)pid, .filename = nm};

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &maj, &min, &ino, &name_at) < 7 ||
		    strlen(perms) < 4 || end <= start)
			continue;
		/* Data maps only for DWARF unwinding (see fill_attr), and only of files. */
		if (perms[2] != 'x' && (callgraph(s) != TK_PERFRECORD_CALLGRAPH_DWARF || !name_at ||
					line[name_at] != '/'))
			continue;
		name = name_at ? line + name_at : "";
		n = strcspn(name, "\n");
		if (n == 0) {
			name = "//anon";
			n = 6;
		} else if (!strncmp(name, "[vsyscall]", 10)) {
			continue; /* a kernel page at a fixed address, not a file */
		}
		if (n >= 4096)
			continue;
		memcpy(nm, name, n);
		nm[n] = 0;
		m.start = start;
		m.len = end - start;
		m.pgoff = pgoff;
		m.maj = maj;
		m.min = min;
		m.ino = ino;
		m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			 (perms[2] == 'x' ? PROT_EXEC : 0);
		m.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		r = added(s, tk_perfdata_writer_add_mmap2(s->w, PERF_RECORD_MISC_USER, &m, NULL));
		if (!r)
			add_map(s, (int32_t)pid, m.start, m.len, nm);
	}
	free(line);
	fclose(f);
	return r;
}

/*
 * System-wide: a COMM for every thread alive now and the executable maps
 * of every process; tasks that vanish meanwhile are skipped. Around a
 * command: the held child's COMM (the exec renames it later). With -p/-t:
 * the followed threads and their processes' maps.
 */
static int synthesize_tasks(struct session *s)
{
	DIR *proc, *task;
	struct dirent *p, *t;
	char path[300], comm[64];
	int r = 0;

	if (s->cmd) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)s->child);
		if (read_small(path, comm, sizeof(comm)) < 0)
			snprintf(comm, sizeof(comm), "tracekit");
		return write_comm(s, (uint32_t)s->child, (uint32_t)s->child, comm);
	}
	/* -p/-t: the followed threads' names, and the maps of their processes once each. */
	if (!s->system_wide) {
		for (size_t i = 0; !r && i < s->nr_targets; i++) {
			const struct target *tg = &s->targets[i];
			bool seen = false;

			snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)tg->pid,
				 (int)tg->tid);
			if (read_small(path, comm, sizeof(comm)) < 0)
				continue;
			r = write_comm(s, (uint32_t)tg->pid, (uint32_t)tg->tid, comm);
			for (size_t k = 0; k < i && !seen; k++)
				seen = s->targets[k].pid == tg->pid;
			if (!r && !seen)
				r = synthesize_maps(s, (unsigned long)tg->pid);
		}
		return r;
	}
	proc = opendir("/proc");
	if (!proc)
		return tk_fail(errno, "/proc: %s", strerror(errno));
	while (!r && (p = readdir(proc))) {
		char *end;
		unsigned long pid = strtoul(p->d_name, &end, 10);

		if (*end || end == p->d_name || pid > INT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%lu/task", pid);
		task = opendir(path);
		if (!task)
			continue;
		while (!r && (t = readdir(task))) {
			unsigned long tid = strtoul(t->d_name, &end, 10);

			if (*end || end == t->d_name || tid > INT32_MAX)
				continue;
			snprintf(path, sizeof(path), "/proc/%lu/task/%lu/comm", pid, tid);
			if (read_small(path, comm, sizeof(comm)) < 0)
				continue;
			r = write_comm(s, (uint32_t)pid, (uint32_t)tid, comm);
		}
		closedir(task);
		if (!r)
			r = synthesize_maps(s, pid);
	}
	closedir(proc);
	return r;
}

/* ------------------------------------------------------------ rings */

static void ring_copy(const struct ring *rg, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (rg->data_size - 1);
	size_t first = len;

	if (off + len > rg->data_size)
		first = (size_t)(rg->data_size - off);
	memcpy(dst, rg->data + off, first);
	if (first < len)
		memcpy((unsigned char *)dst + first, rg->data, len - first);
}

/* Copy out everything between data_tail and data_head; returns records seen or -errno. */
static int64_t drain_ring(struct session *s, struct ring *rg)
{
	struct perf_event_mmap_page *m = rg->base;
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = m->data_tail;
	int64_t n = 0;
	int r = 0;

	while (tail < head) {
		struct perf_event_header h;
		const unsigned char *rec;

		if (head - tail < sizeof(h))
			break;
		ring_copy(rg, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			/* Cannot happen with a sane kernel; skip the rest rather than spin. */
			tail = head;
			break;
		}
		if ((tail & (rg->data_size - 1)) + h.size <= rg->data_size) {
			rec = rg->data + (tail & (rg->data_size - 1));
		} else {
			ring_copy(rg, tail, s->buf, h.size);
			rec = s->buf;
		}
		track(s, rec, &h);
		if (h.type == PERF_RECORD_SAMPLE) {
			s->st->samples++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
			uint64_t lost;

			memcpy(&lost, rec + 16, 8);
			s->st->lost += lost;
			s->st->lost_records++;
		}
		s->st->records++;
		r = emit(s, rec, h.size);
		if (r < 0)
			break;
		tail += h.size;
		n++;
	}
	__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
	return r < 0 ? r : n;
}

static int drain_all(struct session *s)
{
	int64_t total = 0;

	for (size_t c = 0; c < s->nr_cpus; c++) {
		int64_t n = drain_ring(s, &s->rings[c]);

		if (n < 0)
			return (int)n;
		total += n;
	}
	if (total) {
		const struct perf_event_header round = {
			.type = TK_PERF_RECORD_FINISHED_ROUND,
			.misc = 0,
			.size = 8,
		};

		return emit(s, &round, sizeof(round));
	}
	return 0;
}

static int set_enabled(struct session *s, bool on)
{
	for (size_t i = 0; i < s->nr_fds; i++) {
		if (ioctl(s->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0)
			return tk_fail(errno, "perf event %s: %s", on ? "enable" : "disable",
				       strerror(errno));
	}
	return 0;
}

/* ------------------------------------------------------------ the command */

static double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * -p/-t: whether a followed task still runs (a zombie is over too). perf
 * stops when its targets are gone; so does this recorder, checked once per
 * poll cycle.
 */
static bool targets_alive(const struct session *s)
{
	for (size_t i = 0; i < s->nr_targets; i++) {
		char path[64], st[256];
		const char *close;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)s->targets[i].pid,
			 (int)s->targets[i].tid);
		if (read_small(path, st, sizeof(st)) < 0)
			continue;
		close = strrchr(st, ')');
		if (close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X')
			return true;
	}
	return false;
}

static int wait_loop(struct session *s, int sfd)
{
	double deadline = s->o->duration > 0 ? mono_now() + s->o->duration : 0;
	double last_flush = mono_now();
	struct pollfd *pfd = calloc(s->nr_cpus + 1, sizeof(*pfd));
	int r = 0;

	if (!pfd)
		return tk_fail(ENOMEM, "out of memory");
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	for (size_t c = 0; c < s->nr_cpus; c++) {
		pfd[c + 1].fd = s->fds[c * s->nr_targets * (s->nr_evs + 1)];
		pfd[c + 1].events = POLLIN;
	}
	for (;;) {
		int timeout = 100;

		if (deadline) {
			double left = deadline - mono_now();

			if (left <= 0)
				break;
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (poll(pfd, s->nr_cpus + 1, timeout) < 0 && errno != EINTR) {
			r = tk_fail(errno, "poll: %s", strerror(errno));
			break;
		}
		r = drain_all(s);
		if (r < 0)
			break;
		/* Commit what was drained: a killed recorder loses at most FLUSH_INTERVAL. */
		if (mono_now() - last_flush >= FLUSH_INTERVAL) {
			r = tk_perfdata_writer_flush(s->w);
			if (r < 0)
				break;
			last_flush = mono_now();
		}
		if (!s->system_wide && !s->cmd && !targets_alive(s))
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			bool stop = false;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo != SIGCHLD) {
					s->st->stop_signal = (int)si.ssi_signo;
					stop = true;
				}
			}
			if (s->cmd && tk_command_poll(s->cmd))
				stop = true;
			if (stop)
				break;
		}
	}
	free(pfd);
	return r;
}

/* ------------------------------------------------------------ the session */

/* ------------------------------------------------------------ build ids */

/* Our own [vdso]: the kernel maps the same image into every process. */
static int vdso_build_id(uint8_t *id, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t lcap = 0;
	unsigned long long start = 0, end = 0;
	struct tk_elf *elf;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &lcap, f) > 0) {
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			break;
		start = end = 0;
	}
	free(line);
	fclose(f);
	if (end <= start)
		return -ENOENT;
	elf = tk_elf_open_mem((const void *)(uintptr_t)start, (size_t)(end - start), "[vdso]");
	if (elf) {
		r = tk_elf_build_id(elf, id, cap);
		tk_elf_close(elf);
	}
	return r;
}

/*
 * BUILD_ID entries: the kernel when a sample hit it, [vdso] when mapped,
 * and every file a sample's ip hit. A file that cannot be read or has no
 * build id is left out, as perf does; the recording stays valid.
 */
static int add_build_ids(struct session *s)
{
	uint8_t id[TK_BUILD_ID_MAX];
	int n, r;

	if (s->track_err)
		return s->track_err;
	for (size_t i = 0; i < s->nr_pend; i++)
		hit_user(s, s->pend[i].pid, s->pend[i].ip);
	if (s->kernel_hit && (n = tk_elf_kernel_build_id(id, sizeof(id))) > 0) {
		r = tk_perfdata_writer_add_build_id(s->w, PERF_RECORD_MISC_KERNEL, -1, id,
						    (size_t)n, "[kernel.kallsyms]");
		if (r < 0)
			return r;
		s->st->nr_build_ids++;
	}
	for (size_t i = 0; i < s->nr_dsos; i++) {
		const char *path = s->dsos[i].path;
		struct tk_elf *elf;

		if (!strcmp(path, "[vdso]")) {
			n = vdso_build_id(id, sizeof(id));
		} else if (s->dsos[i].hit && path[0] == '/') {
			elf = tk_elf_open(path);
			n = elf ? tk_elf_build_id(elf, id, sizeof(id)) : -ENOENT;
			tk_elf_close(elf);
		} else {
			continue;
		}
		if (n <= 0)
			continue;
		r = tk_perfdata_writer_add_build_id(s->w, PERF_RECORD_MISC_USER, -1, id, (size_t)n,
						    path);
		if (r < 0)
			return r;
		s->st->nr_build_ids++;
	}
	return 0;
}

/* ------------------------------------------------------------ the session */

/* Tracefs "system:event" whose id is @config, in @name (cap bytes); -ENOENT if none. */
static int tracepoint_by_id(const char *root, uint64_t config, char *name, size_t cap)
{
	char path[4096];
	DIR *top, *sd;
	struct dirent *a, *b;
	int r = -ENOENT;

	snprintf(path, sizeof(path), "%s/events", root);
	top = opendir(path);
	if (!top)
		return -errno;
	while (r == -ENOENT && (a = readdir(top))) {
		if (a->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", root, a->d_name);
		sd = opendir(path);
		if (!sd)
			continue;
		while (r == -ENOENT && (b = readdir(sd))) {
			uint64_t id;

			if (b->d_name[0] == '.' ||
			    (size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", root,
					     a->d_name, b->d_name) >= sizeof(path) ||
			    read_id(path, &id) < 0 || id != config)
				continue;
			if ((size_t)snprintf(name, cap, "%s:%s", a->d_name, b->d_name) < cap)
				r = 0;
		}
		closedir(sd);
	}
	closedir(top);
	return r;
}

/*
 * Append: the tracepoints already in the file, so that the rebuilt
 * TRACING_DATA still holds their formats. Each must still be the same
 * tracepoint in the running kernel (same name, same id).
 */
static int old_tracepoints(struct session *s, const char *root)
{
	struct tk_perfdata *pd = tk_perfdata_open(s->o->output);
	int r = 0;

	if (!pd)
		return -errno;
	for (size_t i = 0; i < tk_perfdata_evsel_count(pd) && !r; i++) {
		const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, i);
		char name[600], path[4096], **n;
		uint64_t id;
		const char *colon;

		if (e->attr.type != PERF_TYPE_TRACEPOINT)
			continue;
		colon = e->name ? strchr(e->name, ':') : NULL;
		if (colon && strlen(e->name) < sizeof(name)) {
			snprintf(name, sizeof(name), "%s", e->name);
			snprintf(path, sizeof(path), "%s/events/%.*s/%s/id", root,
				 (int)(colon - e->name), e->name, colon + 1);
			if (read_id(path, &id) < 0 || id != e->attr.config)
				r = tk_fail(EINVAL,
					    "%s: cannot append: its tracepoint %s (id %" PRIu64
					    ") is not the running kernel's",
					    s->o->output, e->name, e->attr.config);
		} else if (tracepoint_by_id(root, e->attr.config, name, sizeof(name)) < 0) {
			r = tk_fail(EINVAL,
				    "%s: cannot append: no tracepoint of the running kernel "
				    "has id %" PRIu64,
				    s->o->output, e->attr.config);
		}
		if (r)
			break;
		n = realloc(s->old_tps, (s->nr_old_tps + 1) * sizeof(*n));
		if (!n) {
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		s->old_tps = n;
		s->old_tps[s->nr_old_tps] = strdup(name);
		if (!s->old_tps[s->nr_old_tps]) {
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		s->nr_old_tps++;
	}
	tk_perfdata_close(pd);
	return r;
}

/*
 * GROUP_DESC, as perf writes it for -e '{a,b}': u32 nr, then per group the
 * name as a perf string (u32 len, NUL-padded to 64), u32 leader_idx and
 * u32 nr_members; members follow their leader in attr order, because
 * events are added in the order the user listed them. Without it perf
 * reports the members as lone events. An append keeps the old file's.
 */
static int group_desc(struct session *s)
{
	static const char name[64] = "{anon_group}";
	unsigned char *blob, *p;
	uint32_t nr = 0, len = sizeof(name);
	int r;

	for (size_t e = 0; e < s->nr_evs; e++)
		if (s->evs[e].group && s->evs[e].leader == e)
			nr++;
	if (!nr || s->o->append)
		return 0;
	blob = calloc(1, 4 + (size_t)nr * (4 + sizeof(name) + 8));
	if (!blob)
		return tk_fail(ENOMEM, "out of memory");
	memcpy(blob, &nr, 4);
	p = blob + 4;
	for (size_t e = 0; e < s->nr_evs; e++) {
		uint32_t leader = (uint32_t)e, members = 0;

		if (!s->evs[e].group || s->evs[e].leader != e)
			continue;
		for (size_t k = e; k < s->nr_evs; k++)
			members += s->evs[k].leader == e;
		memcpy(p, &len, 4);
		memcpy(p + 4, name, sizeof(name));
		memcpy(p + 4 + sizeof(name), &leader, 4);
		memcpy(p + 8 + sizeof(name), &members, 4);
		p += 12 + sizeof(name);
	}
	r = tk_perfdata_writer_set_feature(s->w, TK_PERF_FEAT_GROUP_DESC, blob,
					   (uint64_t)(p - blob));
	free(blob);
	return r;
}

/*
 * TRACING_DATA, the host features and CMDLINE: everything known before the
 * capture. Set before the first record, the writer puts them ahead of the
 * data and keeps a table of them after it at every flush, so that a killed
 * recording still opens in perf (which needs TRACING_DATA for tracepoints).
 */
static int early_features(struct session *s)
{
	const char **names = NULL;
	size_t nr = 0;
	struct tk_tracedata *td;
	struct tk_host *host;
	int r;

	/* Without new tracepoints an appended file keeps its TRACING_DATA as it is. */
	if (s->nr_tps) {
		names = malloc((s->nr_evs + s->nr_old_tps) * sizeof(*names));
		if (!names)
			return tk_fail(ENOMEM, "out of memory");
		for (size_t i = 0; i < s->nr_old_tps; i++)
			names[nr++] = s->old_tps[i];
		for (size_t i = 0; i < s->nr_evs; i++) {
			bool dup = false;

			if (s->evs[i].type != PERF_TYPE_TRACEPOINT)
				continue;
			for (size_t k = 0; k < s->nr_old_tps && !dup; k++)
				dup = !strcmp(s->old_tps[k], s->evs[i].name);
			if (!dup)
				names[nr++] = s->evs[i].name;
		}
		td = tk_tracedata_new();
		r = td ? tk_tracedata_gather(td, NULL, names, nr) : -ENOMEM;
		free(names);
		if (r == 0)
			r = tk_perfdata_writer_set_tracedata(s->w, td);
		tk_tracedata_free(td);
		if (r < 0)
			return r;
	}
	r = group_desc(s);
	if (r < 0)
		return r;
	/* The reference pair is read now, as recording starts (perf reads it there too). */
	if (s->o->use_clockid) {
		r = tk_perfdata_writer_set_clock(s->w, s->o->clockid);
		if (r < 0)
			return r;
	}
	/* This machine's facts, with the command line the caller gave (or our own). */
	host = tk_host_new();
	if (!host)
		return -errno;
	r = s->o->argv ? tk_host_set_cmdline(host, s->o->argc, s->o->argv) : 0;
	if (r == 0)
		r = tk_perfdata_writer_set_host_facts(s->w, host);
	tk_host_free(host);
	/* An append keeps the old file's topology: it stays the recording's first machine. */
	if (r == 0 && !s->o->append)
		r = tk_perfhost_set_topology(s->w);
	return r;
}

static int max_sample_rate(uint64_t *rate)
{
	char b[32];

	if (read_small("/proc/sys/kernel/perf_event_max_sample_rate", b, sizeof(b)) < 0)
		return -1;
	*rate = strtoull(b, NULL, 10);
	return 0;
}

static int record(struct session *s, int sfd)
{
	const char *root;
	uint64_t max_rate;
	int r;

	if (!s->o->output || !s->o->nr_events)
		return tk_fail(EINVAL, "perf record needs an output and at least one event");
	if (s->o->freq && s->o->period)
		return tk_fail(EINVAL, "a frequency and a period exclude each other");
	s->freq = s->o->freq ? s->o->freq : DEFAULT_FREQ;
	if ((s->o->nr_pids || s->o->nr_tids) && (s->o->command || s->o->system_wide))
		return tk_fail(EINVAL, "existing tasks (-p/-t) exclude a command and -a");
	s->system_wide = s->o->system_wide || (!s->o->command && !s->o->nr_pids && !s->o->nr_tids);
	if (s->o->stack_size > MAX_STACK || s->o->stack_size % 8)
		return tk_fail(EINVAL,
			       "a user stack dump of %u bytes: not a multiple of 8 up to %u",
			       s->o->stack_size, MAX_STACK);
	root = tk_tracefs_root();
	if (!root)
		return -errno;
	for (size_t i = 0; i < s->o->nr_events; i++) {
		r = expand_spec(s, root, &s->o->events[i]);
		if (r < 0)
			return r;
	}
	s->st->nr_tracepoints = (uint32_t)s->nr_tps;
	s->st->nr_counters = (uint32_t)(s->nr_evs - s->nr_tps);
	if (s->o->freq == TK_PERFRECORD_FREQ_MAX) {
		if (max_sample_rate(&max_rate) < 0 || !max_rate)
			return tk_fail(EIO, "/proc/sys/kernel/perf_event_max_sample_rate: cannot "
					    "read it");
		s->freq = max_rate;
	}
	if (s->nr_evs > s->nr_tps && !s->o->period && max_sample_rate(&max_rate) == 0 &&
	    s->freq > max_rate)
		return tk_fail(EINVAL,
			       "--freq %" PRIu64 " exceeds kernel.perf_event_max_sample_rate "
			       "%" PRIu64,
			       s->freq, max_rate);
	if (s->o->append) {
		r = old_tracepoints(s, root);
		if (r < 0)
			return r;
	}
	r = online_cpus(s);
	if (r < 0)
		return r;
	r = pick_cpus(s);
	if (r < 0)
		return r;
	s->st->nr_cpus = (uint32_t)s->nr_cpus;
	s->buf = malloc(MAX_RECORD);
	if (!s->buf)
		return tk_fail(ENOMEM, "out of memory");
	/* The command exists (held) before its events: they follow its pid. */
	if (s->o->command) {
		s->cmd = tk_command_new(s->o->command, NULL);
		if (!s->cmd)
			return -errno;
		s->child = tk_command_pid(s->cmd);
	}
	r = find_targets(s);
	if (r < 0)
		return r;
	r = open_events(s);
	if (r < 0)
		return r;
	s->w = s->o->append ? tk_perfdata_writer_open_append(s->o->output)
			    : tk_perfdata_writer_open(s->o->output);
	if (!s->w)
		return -errno;
	/* An append whose events do not match fails here, before the file is written. */
	r = add_attrs(s);
	if (r < 0)
		return r;
	r = early_features(s);
	if (r < 0)
		return r;
	r = synthesize_kernel_mmap(s);
	if (r < 0)
		return r;
	r = synthesize_tasks(s);
	if (r < 0)
		return r;
	/* What perf needs to name tasks and maps is on disk before any sample. */
	r = tk_perfdata_writer_flush(s->w);
	if (r < 0)
		return r;
	/* Following a command, enable_on_exec turns the events on at its exec. */
	if (!s->cmd) {
		r = set_enabled(s, true);
		if (r < 0)
			return r;
	}
	if (s->cmd) {
		r = tk_command_release(s->cmd);
		if (r < 0)
			return r;
	}
	r = wait_loop(s, sfd);
	if (r < 0)
		return r;
	/* Ended by the duration or a signal: the command ends too, inside the recording. */
	if (s->cmd)
		tk_command_stop(s->cmd, s->st->stop_signal ? s->st->stop_signal : SIGTERM,
				TK_COMMAND_GRACE_SECONDS);
	r = set_enabled(s, false);
	if (r < 0)
		return r;
	r = drain_all(s);
	if (r < 0)
		return r;
	r = add_build_ids(s);
	if (r < 0)
		return r;
	r = tk_perfdata_writer_finish(s->w);
	if (r < 0)
		return r;
	return 0;
}

static void cleanup(struct session *s)
{
	if (s->cmd) {
		/* Stopped early (an error): do not leave the command behind. */
		tk_command_stop(s->cmd, SIGTERM, TK_COMMAND_GRACE_SECONDS);
		s->st->child_exited = tk_command_status(s->cmd) != -1;
		s->st->child_status = tk_command_status(s->cmd);
		s->st->child_failed = tk_command_failed(s->cmd);
		snprintf(s->st->child_outcome, sizeof(s->st->child_outcome), "%s",
			 tk_command_describe(s->cmd));
		tk_command_free(s->cmd);
	}
	if (s->rings) {
		for (size_t c = 0; c < s->nr_cpus; c++) {
			if (s->rings[c].base)
				munmap(s->rings[c].base, s->rings[c].map_len);
		}
	}
	for (size_t i = 0; s->fds && i < s->nr_fds; i++) {
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	}
	tk_perfdata_writer_close(s->w);
	for (size_t i = 0; i < s->nr_evs; i++)
		free(s->evs[i].name);
	free(s->evs);
	for (size_t i = 0; i < s->nr_old_tps; i++)
		free(s->old_tps[i]);
	free(s->old_tps);
	for (size_t i = 0; i < s->nr_dsos; i++)
		free(s->dsos[i].path);
	free(s->dsos);
	for (size_t i = 0; i < s->cap_procs; i++)
		free(s->procs[i].maps);
	free(s->procs);
	free(s->pend);
	free(s->ids);
	free(s->cpus);
	free(s->targets);
	free(s->fds);
	free(s->rings);
	free(s->buf);
}

int tk_perfrecord_run(const struct tk_perfrecord_opts *user_opts, struct tk_perfrecord_stats *stats)
{
	struct tk_perfrecord_stats local;
	struct tk_perfrecord_opts opts;
	struct session s = {.o = &opts, .child = -1};
	sigset_t set, old;
	int sfd, r;

	if (tk_opts_copy(&opts, sizeof(opts), user_opts, "tk_perfrecord_opts") < 0)
		return -EINVAL;

	s.st = stats ? stats : &local;
	memset(s.st, 0, sizeof(*s.st));
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	r = pthread_sigmask(SIG_BLOCK, &set, &old);
	if (r)
		return tk_fail(r, "pthread_sigmask: %s", strerror(r));
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		r = tk_fail(errno, "signalfd: %s", strerror(errno));
	} else {
		r = record(&s, sfd);
	}
	cleanup(&s);
	if (sfd >= 0)
		close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r < 0 ? r : 0;
}
