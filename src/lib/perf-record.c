// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perf-record: tracepoints through perf_event_open into perf.data.
 *
 * Events. Every -e spec is expanded against tracefs' events/SYSTEM/EVENT
 * directories (fnmatch on both parts); the tracepoint's attr.config is the
 * number in events/S/E/id. Each tracepoint is opened once per online CPU,
 * system-wide (pid -1), disabled, with sample_period 1 and sample_type
 * IDENTIFIER|TID|TIME|CPU|PERIOD|RAW (0x10586). IDENTIFIER puts the id at
 * a fixed place in every record, which is what lets perf tell several
 * events apart. A dummy software event per CPU (type 1, config 9) sets
 * comm/comm_exec/task so that the kernel reports exec, fork and exit: the
 * command's name after exec comes from there. Every attr has sample_id_all,
 * so those side-band records end with the {pid,tid}{time}{cpu}{id} trailer
 * (32 bytes). All events of a CPU write into one ring (the first fd's
 * mmap, the others PERF_EVENT_IOC_SET_OUTPUT to it), so a pass over the
 * rings is one read per CPU.
 *
 * Ring protocol. The mmap is one metadata page and 2^n data pages. The
 * kernel advances data_head; we load it with acquire semantics (the records
 * below head are then visible), copy records out (a record can wrap around
 * the end of the data area), then store data_tail with release semantics
 * so that the kernel does not overwrite what we are still reading. When
 * the ring is full the kernel drops samples and later writes a
 * PERF_RECORD_LOST {id, lost}; we sum those.
 *
 * File. COMM records (time 0, trailer zero: perf maps id 0 to the first
 * event) name every task alive at the start, the recorder and the held
 * command included, before any ring data. After each drain pass that found
 * data a FINISHED_ROUND is written: records of one pass are not sorted
 * across CPUs, and the marker tells perf it may sort and flush everything
 * older than the previous pass. TRACING_DATA (the formats, from the live
 * tracefs) and the host features are written at finish.
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

#include <tracekit/perfdata.h>
#include <tracekit/perfrecord.h>
#include <tracekit/tracefs.h>

#include "internal/error.h"

#define TP_SAMPLE_TYPE                                                                    \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |  \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW)
#define DUMMY_SAMPLE_TYPE                                                                 \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
/* sample_id_all trailer of TID|TIME|CPU|IDENTIFIER. */
#define TRAILER_SIZE 32
#define MAX_RECORD 65536

struct tp {
	char *name;          /* "system:event" */
	uint64_t id;
	const char *filter;
};

struct ring {
	int cpu;
	void *base;
	size_t map_len;
	unsigned char *data;
	uint64_t data_size;
};

struct session {
	const struct tk_perfrecord_opts *o;
	struct tk_perfrecord_stats *st;
	struct tp *tps;
	size_t nr_tps, cap_tps;
	int *cpus;
	size_t nr_cpus;
	int *fds;            /* [cpu][nr_tps + 1] */
	size_t nr_fds;
	struct ring *rings;
	struct tk_perfdata_writer *w;
	unsigned char *buf;  /* MAX_RECORD bytes for a record that wraps */
	pid_t child;
	int go_fd, err_fd;
};

static int sys_perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Every record goes through here: the data size is reported in the stats. */
static int emit(struct session *s, const void *rec, size_t size)
{
	int r = tk_perfdata_writer_write(s->w, rec, size);

	if (r == 0)
		s->st->bytes += size;
	return r;
}

/* ------------------------------------------------------------ events, CPUs */

static int add_tp(struct session *s, const char *sys, const char *ev, uint64_t id,
		  const char *filter)
{
	size_t len = strlen(sys) + strlen(ev) + 2;

	for (size_t i = 0; i < s->nr_tps; i++) {
		if (s->tps[i].id == id)
			return 0;
	}
	if (s->nr_tps == s->cap_tps) {
		size_t cap = s->cap_tps ? s->cap_tps * 2 : 16;
		struct tp *n = realloc(s->tps, cap * sizeof(*n));

		if (!n)
			return tk_fail(ENOMEM, "out of memory");
		s->tps = n;
		s->cap_tps = cap;
	}
	s->tps[s->nr_tps].name = malloc(len);
	if (!s->tps[s->nr_tps].name)
		return tk_fail(ENOMEM, "out of memory");
	snprintf(s->tps[s->nr_tps].name, len, "%s:%s", sys, ev);
	s->tps[s->nr_tps].id = id;
	s->tps[s->nr_tps].filter = filter;
	s->nr_tps++;
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
	char sys_pat[256], path[4096];
	const char *ev_pat = "*";
	const char *colon = strchr(e->spec, ':');
	size_t n = colon ? (size_t)(colon - e->spec) : strlen(e->spec);
	size_t matched = 0;
	DIR *top, *sd;
	struct dirent *a, *b;
	int r = 0;

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
			continue;    /* the files enable, header_page... */
		while (!r && (b = readdir(sd))) {
			uint64_t id = 0;

			if (b->d_name[0] == '.' || fnmatch(ev_pat, b->d_name, 0))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", root,
					     a->d_name, b->d_name) >= sizeof(path) ||
			    read_id(path, &id) < 0)
				continue;
			matched++;
			r = add_tp(s, a->d_name, b->d_name, id, e->filter);
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

static void fill_tp_attr(struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_TRACEPOINT;
	a->size = sizeof(*a);
	a->config = config;
	a->sample_period = 1;
	a->sample_type = TP_SAMPLE_TYPE;
	a->disabled = 1;
	a->sample_id_all = 1;
	a->watermark = 1;
}

static void fill_dummy_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->size = sizeof(*a);
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_period = 1;
	a->sample_type = DUMMY_SAMPLE_TYPE;
	a->disabled = 1;
	a->sample_id_all = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->watermark = 1;
}

/* The writer's view of an attr: the kernel's struct, encoded by tk_perfdata_attr_decode(). */
static void to_tk_attr(const struct perf_event_attr *a, struct tk_perf_attr *t)
{
	uint8_t raw[128] = {0};

	memcpy(raw, a, sizeof(*a) < sizeof(raw) ? sizeof(*a) : sizeof(raw));
	tk_perfdata_attr_decode(raw, sizeof(raw), t);
	t->size = 128;
}

static int open_events(struct session *s)
{
	size_t per_cpu = s->nr_tps + 1;
	uint32_t pages = s->o->mmap_pages ? s->o->mmap_pages : 64;
	long psz = sysconf(_SC_PAGESIZE);

	if (pages & (pages - 1))
		return tk_fail(EINVAL, "ring of %u pages: not a power of two", pages);
	s->nr_fds = s->nr_cpus * per_cpu;
	s->fds = malloc(s->nr_fds * sizeof(*s->fds));
	s->rings = calloc(s->nr_cpus, sizeof(*s->rings));
	if (!s->fds || !s->rings)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nr_fds; i++)
		s->fds[i] = -1;
	for (size_t c = 0; c < s->nr_cpus; c++) {
		struct ring *rg = &s->rings[c];

		rg->cpu = s->cpus[c];
		for (size_t e = 0; e < per_cpu; e++) {
			struct perf_event_attr a;
			int fd;

			if (e < s->nr_tps)
				fill_tp_attr(&a, s->tps[e].id);
			else
				fill_dummy_attr(&a);
			a.wakeup_watermark = (uint32_t)((uint64_t)pages * (uint64_t)psz / 2);
			fd = sys_perf_event_open(&a, rg->cpu);
			if (fd < 0)
				return tk_fail(errno, "perf_event_open %s on CPU %d: %s",
					       e < s->nr_tps ? s->tps[e].name : "dummy", rg->cpu,
					       strerror(errno));
			s->fds[c * per_cpu + e] = fd;
			if (e < s->nr_tps && s->tps[e].filter &&
			    ioctl(fd, PERF_EVENT_IOC_SET_FILTER, s->tps[e].filter) < 0)
				return tk_fail(errno, "%s: filter \"%s\": %s", s->tps[e].name,
					       s->tps[e].filter, strerror(errno));
			if (e == 0) {
				rg->map_len = (size_t)(pages + 1) * (size_t)psz;
				rg->base = mmap(NULL, rg->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
						fd, 0);
				if (rg->base == MAP_FAILED) {
					rg->base = NULL;
					return tk_fail(errno, "mmap of the CPU %d ring: %s", rg->cpu,
						       strerror(errno));
				}
				struct perf_event_mmap_page *m = rg->base;

				if (m->data_size && m->data_offset) {
					rg->data = (unsigned char *)rg->base + m->data_offset;
					rg->data_size = m->data_size;
				} else {
					rg->data = (unsigned char *)rg->base + psz;
					rg->data_size = (uint64_t)pages * (uint64_t)psz;
				}
			} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->fds[c * per_cpu]) < 0) {
				return tk_fail(errno, "PERF_EVENT_IOC_SET_OUTPUT on CPU %d: %s",
					       rg->cpu, strerror(errno));
			}
		}
	}
	return 0;
}

static int add_attrs(struct session *s)
{
	size_t per_cpu = s->nr_tps + 1;

	for (size_t e = 0; e < per_cpu; e++) {
		struct perf_event_attr a;
		struct tk_perf_attr t;
		int idx, r;

		if (e < s->nr_tps)
			fill_tp_attr(&a, s->tps[e].id);
		else
			fill_dummy_attr(&a);
		/* The file keeps what perf keeps: not the kernel's wakeup settings. */
		a.watermark = 0;
		to_tk_attr(&a, &t);
		idx = tk_perfdata_writer_add_attr(s->w, &t,
						  e < s->nr_tps ? s->tps[e].name : "dummy:HG");
		if (idx < 0)
			return idx;
		for (size_t c = 0; c < s->nr_cpus; c++) {
			uint64_t id;

			if (ioctl(s->fds[c * per_cpu + e], PERF_EVENT_IOC_ID, &id) < 0)
				return tk_fail(errno, "PERF_EVENT_IOC_ID: %s", strerror(errno));
			r = tk_perfdata_writer_add_ids(s->w, (size_t)idx, &id, 1);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ side band */

static int write_comm(struct session *s, uint32_t pid, uint32_t tid, const char *comm)
{
	unsigned char rec[8 + 8 + 24 + TRAILER_SIZE] = {0};
	size_t n = strnlen(comm, 15);
	size_t name_len = (n + 1 + 7) & ~(size_t)7;
	size_t size = 16 + name_len + TRAILER_SIZE;
	uint32_t type = PERF_RECORD_COMM;
	uint16_t misc = 0, sz = (uint16_t)size;

	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &sz, 2);
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &tid, 4);
	memcpy(rec + 16, comm, n);
	/* The trailer stays zero: a synthesized record, time 0, id 0. */
	return emit(s, rec, size);
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

/* COMM for every thread alive now; tasks that vanish meanwhile are skipped. */
static int synthesize_comms(struct session *s)
{
	DIR *proc = opendir("/proc"), *task;
	struct dirent *p, *t;
	char path[300], comm[64];
	int r = 0;

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
			.type = TK_PERF_RECORD_FINISHED_ROUND, .misc = 0, .size = 8,
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

static int fork_child(struct session *s, const sigset_t *old_mask)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) < 0)
		return tk_fail(errno, "pipe: %s", strerror(errno));
	if (pipe2(err, O_CLOEXEC) < 0) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		return tk_fail(e, "pipe: %s", strerror(e));
	}
	s->child = fork();
	if (s->child < 0) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return tk_fail(e, "fork: %s", strerror(e));
	}
	if (s->child == 0) {
		char b;
		int e;

		close(go[1]);
		close(err[0]);
		sigprocmask(SIG_SETMASK, old_mask, NULL);
		if (read(go[0], &b, 1) != 1)
			_exit(126);
		execvp(s->o->command[0], s->o->command);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	s->go_fd = go[1];
	s->err_fd = err[0];
	return 0;
}

static int release_child(struct session *s)
{
	ssize_t n;
	int e = 0;

	if (write(s->go_fd, "g", 1) != 1)
		e = errno;
	close(s->go_fd);
	s->go_fd = -1;
	if (e)
		return tk_fail(e, "cannot start '%s': %s", s->o->command[0], strerror(e));
	do {
		n = read(s->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(s->err_fd);
	s->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		if (!e)
			e = EIO;
		return tk_fail(e, "cannot run '%s': %s", s->o->command[0], strerror(e));
	}
	return 0;
}

static double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int wait_loop(struct session *s, int sfd)
{
	double deadline = s->o->duration > 0 ? mono_now() + s->o->duration : 0;
	struct pollfd *pfd = calloc(s->nr_cpus + 1, sizeof(*pfd));
	int r = 0;

	if (!pfd)
		return tk_fail(ENOMEM, "out of memory");
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	for (size_t c = 0; c < s->nr_cpus; c++) {
		pfd[c + 1].fd = s->fds[c * (s->nr_tps + 1)];
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
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			bool stop = false;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo != SIGCHLD) {
					s->st->stop_signal = (int)si.ssi_signo;
					stop = true;
				}
			}
			if (s->child > 0) {
				int status;

				if (waitpid(s->child, &status, WNOHANG) == s->child) {
					s->st->child_exited = true;
					s->st->child_status = status;
					s->child = -1;
					stop = true;
				}
			}
			if (stop)
				break;
		}
	}
	free(pfd);
	return r;
}

/* ------------------------------------------------------------ the session */

static int write_features(struct session *s)
{
	const char **names = malloc(s->nr_tps * sizeof(*names));
	void *blob = NULL;
	uint64_t len = 0;
	int r;

	if (!names)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nr_tps; i++)
		names[i] = s->tps[i].name;
	r = tk_perfdata_tracing_build(names, s->nr_tps, &blob, &len);
	free(names);
	if (r < 0)
		return r;
	r = tk_perfdata_writer_set_feature(s->w, TK_PERF_FEAT_TRACING_DATA, blob, len);
	free(blob);
	if (r < 0)
		return r;
	return tk_perfdata_writer_set_host(s->w, s->o->argc, s->o->argv);
}

static int record(struct session *s, int sfd, const sigset_t *old_mask)
{
	const char *root;
	int r;

	if (!s->o->output || !s->o->nr_events)
		return tk_fail(EINVAL, "perf record needs an output and at least one event");
	root = tk_tracefs_root();
	if (!root)
		return -errno;
	for (size_t i = 0; i < s->o->nr_events; i++) {
		r = expand_spec(s, root, &s->o->events[i]);
		if (r < 0)
			return r;
	}
	s->st->nr_tracepoints = (uint32_t)s->nr_tps;
	r = online_cpus(s);
	if (r < 0)
		return r;
	s->st->nr_cpus = (uint32_t)s->nr_cpus;
	s->buf = malloc(MAX_RECORD);
	if (!s->buf)
		return tk_fail(ENOMEM, "out of memory");
	r = open_events(s);
	if (r < 0)
		return r;
	s->w = tk_perfdata_writer_open(s->o->output);
	if (!s->w)
		return -errno;
	r = add_attrs(s);
	if (r < 0)
		return r;
	if (s->o->command) {
		r = fork_child(s, old_mask);
		if (r < 0)
			return r;
	}
	/* After the fork: the held command is named too (exec renames it). */
	r = synthesize_comms(s);
	if (r < 0)
		return r;
	r = set_enabled(s, true);
	if (r < 0)
		return r;
	if (s->o->command) {
		r = release_child(s);
		if (r < 0)
			return r;
	}
	r = wait_loop(s, sfd);
	if (r < 0)
		return r;
	r = set_enabled(s, false);
	if (r < 0)
		return r;
	r = drain_all(s);
	if (r < 0)
		return r;
	r = write_features(s);
	if (r < 0)
		return r;
	r = tk_perfdata_writer_finish(s->w);
	if (r < 0)
		return r;
	return 0;
}

static void cleanup(struct session *s)
{
	if (s->go_fd >= 0)
		close(s->go_fd);    /* a held child sees EOF and exits 126 */
	if (s->err_fd >= 0)
		close(s->err_fd);
	if (s->child > 0) {
		int status;

		/* Stopped early (error, signal): do not leave the command behind. */
		kill(s->child, SIGTERM);
		if (waitpid(s->child, &status, 0) == s->child) {
			s->st->child_exited = true;
			s->st->child_status = status;
		}
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
	for (size_t i = 0; i < s->nr_tps; i++)
		free(s->tps[i].name);
	free(s->tps);
	free(s->cpus);
	free(s->fds);
	free(s->rings);
	free(s->buf);
}

int tk_perfrecord_run(const struct tk_perfrecord_opts *opts, struct tk_perfrecord_stats *stats)
{
	struct tk_perfrecord_stats local;
	struct session s = {.o = opts, .child = -1, .go_fd = -1, .err_fd = -1};
	sigset_t set, old;
	int sfd, r;

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
		r = record(&s, sfd, &old);
	}
	cleanup(&s);
	if (sfd >= 0)
		close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r < 0 ? r : 0;
}
