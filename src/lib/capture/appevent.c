// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * appevent: the application side of application events (the instrumentation
 * API of include/tracekit/appevent.h).
 *
 * Buffers. Each thread writes into buffers of its own, one per signal
 * nesting level: a thread's events go to level 0; a signal handler that
 * emits while the thread is inside an emit goes to level 1, and so on up to
 * TK_APPEVENT_MAX_NEST. A buffer therefore has exactly one writer that is
 * never interrupted by another writer of the same buffer, so its write path
 * needs no atomic read-modify-write and no nested-commit protocol, and its
 * timestamps only grow. The cost is a buffer per level actually used (most
 * threads only ever use level 0), and events of one thread spread over
 * several buffers, which the reader merges by time anyway, as it merges CPUs.
 *
 * Why not the ring of ring.c: its buffer descriptors (positions, reader
 * mutex, slot words) live in the writing process's heap and hold pointers,
 * while here the reader is another process (the recorder). A shared buffer
 * here is one memfd holding a control page and the event pages; every word
 * the two processes share is in the control page and is an offset or a
 * sequence number, never a pointer.
 *
 * Layout (appevent-internal.h): control page | nr_pages pages of 4096 bytes
 * in the kernel's format (u64 timestamp | u64 commit | records). Records
 * are the kernel's: a 32-bit type_len:5 | time_delta:27 header, the payload
 * inline up to 112 bytes or after a length word, a time extend (type 30)
 * before a record whose delta needs more than 27 bits. The first record of
 * a page has delta 0 and sets the page timestamp. Timestamps come from the
 * clock the recorder names in its WELCOME: the TSC when the CPU's is
 * invariant (the recording's trace_clock is then x86-tsc, which the .dat
 * converts with TSC2NSEC), else CLOCK_MONOTONIC through the vDSO (trace_clock
 * mono); either way the application's and the kernel's stamps are one
 * timeline. The TSC is what makes the 25 ns budget: bench-ring measured
 * rdtsc at ~7-11 ns and clock_gettime at ~23-31 ns on the reference VM.
 * rdtsc is read without a fence: a stamp taken a few cycles early cannot
 * cross a system call's kernel stamps, hundreds of ns away.
 *
 * The write path. An event type without strings is built on the caller's
 * stack and handed to tk_appevent_write(), whose fast path (write_fast())
 * takes a thread's own events (level 0) on the TSC clock inside a page: TLS
 * load, nest claim, one gate compare (r->fast is the connection number only
 * while the buffer is the current connection's and stamps with the TSC), a
 * room test that also catches the first record of a page, rdtsc, a delta
 * test that also catches a stamp below the last one, the record header and
 * the common header (type id | tid << 32) as two stores, the fields as
 * overlapping 8-byte loads and stores, the commit store. ~45 instructions,
 * no callee-saved register, about 3.5 ns over rdtsc alone (bench-ring, CPU
 * time). An event with strings takes tk_appevent_write_str(), the same
 * fast path with the fixed part and then each string (pointer and size,
 * measured by the emitter) copied in, laid out as reserve, fill and commit
 * lay it out (strings from the fixed part's size rounded to 4, padding
 * zero). Every other case (a buffer to create, a page to begin or end, a
 * time extend, CLOCK_MONOTONIC, nested levels, a record past 112 bytes)
 * goes through reserve_in(), which tk_appevent_reserve() uses too. The commit word is
 * kept whole in the ring (drops before the page in the high half, bytes in
 * the low), so a commit is an add and a store.
 *
 * Publication. The writer stores a record, then its page's commit word
 * (data bytes) with release. When a record does not fit it moves to page
 * tail + 1 and stores tail with release; every page before tail is then
 * complete. The reader copies pages head .. tail - 1 and then moves head
 * past them with a cmpxchg; in overwrite mode the writer pushes head itself
 * (a cmpxchg at page boundaries only) before it reuses the slot, so a
 * reader whose cmpxchg fails knows its copy may be torn and drops it. In
 * drop-newest mode the writer drops the event when the next slot is still
 * unread. head and tail sit on cache lines of their own, and the writer
 * reads head again only when the value it read last says the next slot is
 * taken (head only grows, so an old value errs on the safe side): each side
 * pulls the other's line about once a lap, not once a page. Drops and overwritten events are
 * counted in the control page and in tk_appevent_lost(); the drops before a page also ride in its
 * commit word's high half, so that the recorder marks exactly the page after the gap with the
 * kernel's missed-events flag. A killed application leaves its pages in the memfd, which the
 * recorder still maps: its last committed record is readable.
 *
 * Session. A recorder ("tracekit record --user") owns a unix SOCK_SEQPACKET
 * socket and names it in $TRACEKIT_SESSION. The first registration (a
 * constructor, before main) connects: HELLO (pid, comm) and the recorder's
 * WELCOME (an id range of its own for this process, buffer size and mode),
 * then one FORMAT message per event type, later one BUFFER message with the
 * memfd (SCM_RIGHTS) per buffer created. Sends use MSG_DONTWAIT and
 * MSG_NOSIGNAL: a recorder that died costs a failed send (events then turn
 * off), never a SIGPIPE or a block. Without a recorder events stay off and
 * TK_APPEVENT is one load and one not-taken branch.
 *
 * Attaching. A watcher thread (see watch_main()) notices a recorder that
 * hangs up, and finds one that attaches to a running process by pid.
 *
 * Threads, signals and fork. The thread's state is found through an
 * initial-exec TLS pointer; it and the buffers are mmap'ed (no malloc, so
 * that a signal handler's first event can create them). A thread's exit
 * marks its buffers closed (pthread key destructor). A fork child (atfork
 * handler) drops the parent's buffers, whose pages are shared with the
 * parent, and connects again, in the handler, so that its events get ids
 * and buffers of their own.
 */
#include <tracekit/appevent.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capture/appevent-internal.h"
#include "internal/error.h"

#define RD(x)	    __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WR(x, v)    __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define barrier()   __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define DELTA_MASK  ((1U << 27) - 1)
#define TYPE_EXTEND 30u

TK_API uint32_t tk_appevent_on;

/* A ring's gen while it has no buffer: connections count from 1. */
#define GEN_NONE UINT64_MAX

struct ae_ring {
	/* What tk_appevent_write()'s fast path reads and writes: one cache line. */
	uint8_t *page;	  /* the page being written */
	uint64_t cw;	  /* its commit word: drops before it (bits 32-63) | data bytes */
	uint64_t last_ts; /* the last event's stamp */
	uint64_t fast;	  /* gen when stamped with the TSC, else GEN_NONE: the fast path's gate */
	uint32_t events;  /* in the current page; stored in page_events when it is left */
	uint32_t pend;	  /* tk_appevent_reserve(): bytes of the record and its headers */
	/* Page changes and the general path. */
	uint64_t gen;	   /* connection the buffer was handed to; GEN_NONE: no buffer */
	struct ae_shm *sh; /* NULL: not created */
	uint8_t *pages;
	uint64_t seq;
	uint64_t head; /* sh->head as last read: read again only when it seems to block */
	size_t map_len;
	uint32_t nr_pages, mode;
	uint32_t slot;	 /* seq % nr_pages, kept: a division per event cost ~10 ns */
	uint32_t missed; /* events dropped since the current page began */
	bool tsc;	 /* stamp with rdtsc, else CLOCK_MONOTONIC */
} __attribute__((aligned(64)));

struct ae_thread {
	uint32_t nest;
	pid_t tid;
	uint64_t tid_word; /* the common header's pid field in place: tid << 32 */
	struct ae_ring rings[TK_APPEVENT_MAX_NEST];
};

static __thread struct ae_thread *t_self __attribute__((tls_model("initial-exec")));

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static struct tk_appevent_type *g_types, **g_types_tail = &g_types;
static uint32_t g_ntypes;
static int g_sock = -1;
static uint64_t g_gen; /* bumped on each connection; 0: never connected */
static uint32_t g_id_base, g_id_count, g_nr_pages, g_mode, g_clock;
static uint64_t g_lost;
static uint32_t g_senders; /* ring_open()s using g_sock right now */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The event's time: the TSC (the kernel's x86-tsc clock; rdtsc without a
 * fence, as ring.c reads it: a stamp read early by a few cycles cannot
 * cross a system call's kernel stamps, which are hundreds of ns away), or
 * CLOCK_MONOTONIC (the kernel's mono clock) through the vDSO.
 */
static inline uint64_t stamp(const struct ae_ring *r)
{
#if defined(__x86_64__)
	if (r->tsc)
		return __builtin_ia32_rdtsc();
#else
	(void)r;
#endif
	return mono_ns();
}

/* ------------------------------------------------------------ formats */

/* Kernel spellings for the fixed-width types, so that formats read as tracefs's. */
static const char *type_text(const char *c)
{
	static const char *const map[][2] = {
		{"uint8_t", "u8"}, {"uint16_t", "u16"}, {"uint32_t", "u32"}, {"uint64_t", "u64"},
		{"int8_t", "s8"},  {"int16_t", "s16"},	{"int32_t", "s32"},  {"int64_t", "s64"},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(c, map[i][0]))
			return map[i][1];
	return c;
}

/* The tracefs "format" file of @t with id @id, into @buf; its length, or 0 if it does not fit. */
static size_t format_text(const struct tk_appevent_type *t, uint32_t id, char *buf, size_t cap)
{
	size_t n;
	int k;

	k = snprintf(buf, cap,
		     "name: %s\nID: %u\nformat:\n"
		     "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		     "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		     "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		     "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
		     t->name, id);
	if (k < 0 || (size_t)k >= cap)
		return 0;
	n = (size_t)k;
	for (uint32_t i = 0; i < t->nr_fields; i++) {
		const struct tk_appevent_field *f = &t->fields[i];

		if (f->kind == TK_APPEVENT_STRING)
			k = snprintf(
				buf + n, cap - n,
				"\tfield:__data_loc char[] %s;\toffset:%u;\tsize:4;\tsigned:1;\n",
				f->name, f->offset);
		else if (f->kind == TK_APPEVENT_ARRAY)
			k = snprintf(buf + n, cap - n,
				     "\tfield:%s %s[%u];\toffset:%u;\tsize:%u;\tsigned:%u;\n",
				     type_text(f->type), f->name, f->count, f->offset, f->size,
				     f->is_signed);
		else
			k = snprintf(buf + n, cap - n,
				     "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%u;\n",
				     type_text(f->type), f->name, f->offset, f->size, f->is_signed);
		if (k < 0 || (size_t)k >= cap - n)
			return 0;
		n += (size_t)k;
	}
	k = snprintf(buf + n, cap - n, "\nprint fmt: %s\n", t->print_fmt);
	if (k < 0 || (size_t)k >= cap - n)
		return 0;
	return n + (size_t)k;
}

/* ------------------------------------------------------------ session */

static int send_msg(int fd, const void *msg, size_t len, int pass_fd)
{
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &pass_fd, sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		return -1;
	return 0;
}

/* Send @t's format on @fd (with the lock held). */
static void send_format(int fd, const struct tk_appevent_type *t)
{
	static char buf[AE_MSG_MAX];
	struct ae_msg_format *m = (struct ae_msg_format *)buf;
	size_t n;

	if (!t->id)
		return;
	memset(m, 0, sizeof(*m));
	m->h.magic = AE_MAGIC;
	m->h.kind = AE_MSG_FORMAT;
	m->id = t->id;
	snprintf(m->system, sizeof(m->system), "%s", t->system);
	n = format_text(t, t->id, buf + sizeof(*m), sizeof(buf) - sizeof(*m) - 1);
	if (!n)
		return;
	buf[sizeof(*m) + n] = 0;
	send_msg(fd, buf, sizeof(*m) + n + 1, -1);
}

/*
 * Replace the connection (with g_lock held) and close the old one once no
 * ring_open() can still be sending on it: a thread or a signal handler
 * that creates a buffer reads g_sock without the lock, so closing at once
 * could let the number be reused under its sendmsg. Both sides use
 * sequentially consistent accesses (a sender counts itself, then reads the
 * socket; we store the socket, then read the count), so either the sender
 * sees the new socket or we see the sender.
 */
static void replace_sock(int fd)
{
	int old = __atomic_exchange_n(&g_sock, fd, __ATOMIC_SEQ_CST);

	if (old < 0)
		return;
	while (__atomic_load_n(&g_senders, __ATOMIC_SEQ_CST))
		sched_yield();
	close(old);
}

/* Turn events off for good on this connection: the recorder is gone. */
static void lose_recorder(void)
{
	WR(tk_appevent_on, 0);
}

/* Connect to @path and hand over the formats; with g_lock held. */
static int connect_locked(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 2};
	struct ae_msg_hello hello = {0};
	struct ae_msg_welcome w;
	uint32_t i = 0;
	ssize_t n;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return tk_fail(ENAMETOOLONG, "%s: socket path too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return tk_fail(errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return tk_fail(e, "%s: %s", path, strerror(e));
	}
	hello.h.magic = AE_MAGIC;
	hello.h.kind = AE_MSG_HELLO;
	hello.pid = getpid();
	hello.version = AE_VERSION;
	prctl(PR_GET_NAME, hello.comm, 0, 0, 0);
	if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello))
		goto refused;
	n = recv(fd, &w, sizeof(w), 0);
	if (n != sizeof(w) || w.h.magic != AE_MAGIC || w.h.kind != AE_MSG_WELCOME ||
	    w.nr_pages < AE_MIN_PAGES || w.nr_pages > AE_MAX_PAGES || w.id_count == 0 ||
	    w.id_base + w.id_count > TK_APPEVENT_ID_END)
		goto refused;
	g_id_base = w.id_base;
	g_id_count = w.id_count;
	g_nr_pages = w.nr_pages;
	g_mode = w.mode;
	g_clock = w.clock;
	for (struct tk_appevent_type *t = g_types; t; t = t->next, i++) {
		WR(t->id, (uint16_t)(i < g_id_count ? g_id_base + i : 0));
		send_format(fd, t);
	}
	replace_sock(fd);
	WR(g_gen, g_gen + 1);
	WR(tk_appevent_on, 1);
	return 0;
refused:
	close(fd);
	return tk_fail(EPROTO, "%s: the recorder did not answer", path);
}

static void thread_exit(void *arg)
{
	struct ae_thread *t = arg;

	if (t_self == t)
		t_self = NULL;
	for (int l = 0; l < TK_APPEVENT_MAX_NEST; l++) {
		struct ae_ring *r = &t->rings[l];

		if (!r->sh)
			continue;
		__atomic_store_n(&r->sh->closed, 1, __ATOMIC_RELEASE);
		munmap(r->sh, r->map_len);
	}
	munmap(t, sizeof(*t));
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&g_lock);
}

/*
 * The child shares the parent's buffers (MAP_SHARED) and its connection:
 * it forgets both and connects on its own, so that its events reach the
 * recorder as another process's.
 */
static void atfork_child(void)
{
	const char *path = getenv(TK_APPEVENT_ENV);
	bool was_on = RD(tk_appevent_on);

	/* The parent's, left mapped and never written again, nor closed at our exit. */
	t_self = NULL;
	pthread_setspecific(g_key, NULL);
	WR(tk_appevent_on, 0);
	g_senders = 0; /* the only thread now; none of the parent's is sending */
	replace_sock(-1);
	WR(g_gen, g_gen + 1);
	if (was_on && path && *path)
		connect_locked(path);
	pthread_mutex_unlock(&g_lock);
}

/*
 * The watcher: one thread per instrumented process (started with the first
 * event type, never in a process that defines none, such as tracekit
 * itself; TRACEKIT_ATTACH=0 keeps it off). Connected, it waits for the
 * recorder to hang up and then turns events off at once, so that a dead
 * recorder costs nothing at all; unconnected, it looks every 100 ms for
 * the rendezvous socket a recorder attaching by pid makes
 * (TK_APPEVENT_ATTACH_DIR/PID.sock, "tracekit record --user-pid PID") and
 * connects to it.
 */
static void hang_up(int fd)
{
	pthread_mutex_lock(&g_lock);
	if (RD(g_sock) == fd) {
		WR(tk_appevent_on, 0);
		replace_sock(-1);
		WR(g_gen, g_gen + 1);
	}
	pthread_mutex_unlock(&g_lock);
}

static void *watch_main(void *arg)
{
	char path[sizeof(TK_APPEVENT_ATTACH_DIR) + 32];
	sigset_t all;

	(void)arg;
	/* Signals are the application's business, not this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		int fd = RD(g_sock);

		if (fd >= 0) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			char c;

			if (poll(&p, 1, 250) > 0 &&
			    ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) ||
			     ((p.revents & POLLIN) && recv(fd, &c, 1, MSG_DONTWAIT) == 0)))
				hang_up(fd);
			continue;
		}
		usleep(100 * 1000);
		snprintf(path, sizeof(path), "%s/%d.sock", TK_APPEVENT_ATTACH_DIR, (int)getpid());
		if (access(path, F_OK) == 0)
			tk_appevent_connect(path);
	}
	return NULL;
}

static void init_once(void)
{
	const char *path = getenv(TK_APPEVENT_ENV);
	const char *attach = getenv("TRACEKIT_ATTACH");
	pthread_t th;

	pthread_key_create(&g_key, thread_exit);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (path && *path) {
		pthread_mutex_lock(&g_lock);
		if (connect_locked(path) < 0)
			tk_warn("appevent: %s: %s; application events are off", TK_APPEVENT_ENV,
				tk_errmsg());
		pthread_mutex_unlock(&g_lock);
	}
	if (!attach || strcmp(attach, "0")) {
		pthread_attr_t at;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 64 * 1024);
		if (pthread_create(&th, &at, watch_main, NULL) != 0)
			tk_warn("appevent: cannot start the watcher thread; attaching by pid "
				"will not work");
		pthread_attr_destroy(&at);
	}
}

TK_API void tk_appevent_register(struct tk_appevent_type *type)
{
	pthread_once(&g_once, init_once);
	pthread_mutex_lock(&g_lock);
	for (struct tk_appevent_type *t = g_types; t; t = t->next) {
		if (t == type) {
			pthread_mutex_unlock(&g_lock);
			return;
		}
	}
	type->next = NULL;
	*g_types_tail = type;
	g_types_tail = &type->next;
	if (g_sock >= 0) {
		WR(type->id, (uint16_t)(g_ntypes < g_id_count ? g_id_base + g_ntypes : 0));
		send_format(g_sock, type);
	}
	g_ntypes++;
	pthread_mutex_unlock(&g_lock);
}

TK_API int tk_appevent_connect(const char *path)
{
	int r;

	pthread_once(&g_once, init_once);
	if (!path)
		path = getenv(TK_APPEVENT_ENV);
	if (!path || !*path)
		return tk_fail(ENOENT, "no recorder: %s is not set", TK_APPEVENT_ENV);
	pthread_mutex_lock(&g_lock);
	r = connect_locked(path);
	pthread_mutex_unlock(&g_lock);
	return r;
}

TK_API void tk_appevent_disconnect(void)
{
	pthread_once(&g_once, init_once);
	pthread_mutex_lock(&g_lock);
	WR(tk_appevent_on, 0);
	replace_sock(-1);
	WR(g_gen, g_gen + 1);
	pthread_mutex_unlock(&g_lock);
}

TK_API uint64_t tk_appevent_lost(void)
{
	return __atomic_load_n(&g_lost, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ buffers */

static struct ae_thread *thread_new(void)
{
	struct ae_thread *t =
		mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		return NULL;
	t->tid = (pid_t)syscall(SYS_gettid);
	t->tid_word = (uint64_t)(uint32_t)t->tid << 32;
	for (int l = 0; l < TK_APPEVENT_MAX_NEST; l++)
		t->rings[l].gen = t->rings[l].fast = GEN_NONE;
	t_self = t;
	/* glibc's pthread_setspecific is a store for the first 32 keys: fine in a handler. */
	pthread_setspecific(g_key, t);
	return t;
}

static void ring_close(struct ae_ring *r)
{
	r->gen = r->fast = GEN_NONE;
	if (!r->sh)
		return;
	__atomic_store_n(&r->sh->closed, 1, __ATOMIC_RELEASE);
	munmap(r->sh, r->map_len);
	r->sh = NULL;
}

/* Create level @level's buffer of @t and hand it to the recorder. Async-signal-safe. */
static int ring_open(struct ae_thread *t, struct ae_ring *r, uint32_t level)
{
	uint64_t gen = RD(g_gen);
	int sock, fd, err, rc = -1;
	uint32_t nr = RD(g_nr_pages);
	size_t len = AE_HDR_SIZE + (size_t)nr * AE_PAGE_SIZE;
	struct ae_msg_buffer m = {{AE_MAGIC, AE_MSG_BUFFER}, t->tid, level, len};
	void *p;

	ring_close(r);
	if (nr < AE_MIN_PAGES)
		return -1;
	fd = (int)syscall(SYS_memfd_create, "tracekit-appevent", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	/* Sealed against resizing: the recorder refuses a buffer that could SIGBUS it. */
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	r->sh = p;
	r->map_len = len;
	r->pages = (uint8_t *)p + AE_HDR_SIZE;
	r->page = r->pages;
	r->nr_pages = nr;
	r->seq = 0;
	r->head = 0;
	r->slot = 0;
	r->events = 0;
	r->missed = 0;
	r->cw = 0;
	r->last_ts = 0;
	r->mode = RD(g_mode);
#if defined(__x86_64__)
	r->tsc = RD(g_clock) == TK_APPEVENT_CLOCK_TSC;
#endif
	r->sh->magic = AE_MAGIC;
	r->sh->version = AE_VERSION;
	r->sh->page_size = AE_PAGE_SIZE;
	r->sh->nr_pages = nr;
	r->sh->pid = getpid();
	r->sh->tid = t->tid;
	r->sh->level = level;
	r->sh->mode = r->mode;
	/* Counted as a sender while we use the socket: see replace_sock(). */
	__atomic_add_fetch(&g_senders, 1, __ATOMIC_SEQ_CST);
	sock = __atomic_load_n(&g_sock, __ATOMIC_SEQ_CST);
	if (sock >= 0 && send_msg(sock, &m, sizeof(m), fd) == 0) {
		rc = 0;
	} else {
		err = errno;
		if (sock >= 0 &&
		    (err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ECONNREFUSED))
			lose_recorder();
	}
	__atomic_sub_fetch(&g_senders, 1, __ATOMIC_RELEASE);
	close(fd);
	if (rc < 0) {
		munmap(p, len);
		r->sh = NULL;
		return rc;
	}
	r->gen = gen;
	r->fast = r->tsc ? gen : GEN_NONE;
	return rc;
}

/*
 * Ask for every line of the page we are about to fill, for writing, at
 * once: the recorder read these lines a lap ago, so each first store would
 * otherwise wait for its own cross-core invalidation, one after the other.
 */
static void prefetch_page(uint8_t *page)
{
	for (uint32_t off = 0; off < AE_PAGE_SIZE; off += 64)
		__builtin_prefetch(page + off, 1, 3);
}

/*
 * Move to page seq + 1; false when drop-newest finds it unread. The head
 * the recorder moves is read only when the one read last time says the
 * slot is taken: head only grows, so an old value errs on the safe side,
 * and the recorder's line is then read once a lap rather than once a page.
 */
static bool next_page(struct ae_ring *r)
{
	struct ae_shm *sh = r->sh;
	uint64_t next = r->seq + 1, head = r->head;
	uint32_t slot;

	if (next - head >= r->nr_pages) {
		head = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);
		while (next - head >= r->nr_pages) {
			uint32_t lost;

			if (r->mode != TK_APPEVENT_OVERWRITE) {
				r->head = head;
				return false;
			}
			lost = RD(sh->page_events[head % r->nr_pages]);
			if (__atomic_compare_exchange_n(&sh->head, &head, head + 1, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				WR(sh->lost, RD(sh->lost) + lost);
				WR(sh->overrun, RD(sh->overrun) + lost);
				__atomic_fetch_add(&g_lost, lost, __ATOMIC_RELAXED);
				head++;
			}
		}
		r->head = head;
	}
	WR(sh->page_events[r->slot], r->events);
	slot = r->slot + 1 == r->nr_pages ? 0 : r->slot + 1;
	r->page = r->pages + (size_t)slot * AE_PAGE_SIZE;
	r->events = 0;
	prefetch_page(r->page);
	prefetch_page(r->pages + (size_t)(slot + 1 == r->nr_pages ? 0 : slot + 1) * AE_PAGE_SIZE);
	/* Drops while the previous page was full are lost before this one. */
	r->cw = (uint64_t)r->missed << 32;
	r->missed = 0;
	__atomic_store_n((uint64_t *)(r->page + 8), r->cw, __ATOMIC_RELAXED);
	r->seq = next;
	r->slot = slot;
	/* The previous page's last commit store came first: pages before tail are complete. */
	__atomic_store_n(&sh->tail, next, __ATOMIC_RELEASE);
	return true;
}

static void drop(struct ae_ring *r)
{
	if (r && r->sh) {
		WR(r->sh->lost, RD(r->sh->lost) + 1);
		r->missed++;
	}
	__atomic_fetch_add(&g_lost, 1, __ATOMIC_RELAXED);
}

/*
 * Room for a record of @len bytes (common header included) in @r, level
 * @level of @t, which the caller has claimed (t->nest is level + 1): the
 * general path, for every case tk_appevent_write()'s fast path leaves to
 * it (a buffer to create, the first record of a page, a page end, a time
 * extend, the monotonic clock, strings, nested levels). Fills the record
 * header and the common header; r->pend is what the commit adds.
 */
static uint8_t *reserve_in(struct ae_thread *t, struct ae_ring *r, uint32_t level,
			   const struct tk_appevent_type *type, uint32_t len)
{
	uint32_t len4, need, ext = 0, hdr, off;
	uint64_t now, delta = 0, id = RD(type->id);
	uint8_t *p;

	if (__builtin_expect(r->gen != RD(g_gen), 0)) {
		if (ring_open(t, r, level) < 0)
			return NULL;
	}
	if (len < sizeof(struct tk_appevent_common) || len > AE_MAX_RECORD || !id) {
		drop(r);
		return NULL;
	}
	len4 = (len + 3) & ~3u;
	need = len4 <= 112 ? 4 + len4 : 8 + len4;
	now = stamp(r);
	off = (uint32_t)r->cw;
	if (off) {
		delta = now > r->last_ts ? now - r->last_ts : 0;
		if (delta > DELTA_MASK)
			ext = 8;
	}
	if (off + ext + need > AE_PAGE_SIZE - AE_PAGE_DATA) {
		if (!next_page(r)) {
			drop(r);
			return NULL;
		}
		ext = 0;
		delta = 0;
		off = 0;
	}
	if (!off)
		*(uint64_t *)r->page = now;
	p = r->page + AE_PAGE_DATA + off;
	if (ext) {
		uint32_t w[2] = {TYPE_EXTEND | (uint32_t)(delta & DELTA_MASK) << 5,
				 (uint32_t)(delta >> 27)};

		memcpy(p, w, 8);
		p += 8;
		delta = 0;
	}
	if (len4 <= 112) {
		hdr = (len4 / 4) | (uint32_t)delta << 5;
		memcpy(p, &hdr, 4);
		p += 4;
	} else {
		uint32_t w[2] = {(uint32_t)delta << 5, len4 + 4};

		memcpy(p, w, 8);
		p += 8;
	}
	if (len4 != len)
		memset(p + len, 0, len4 - len);
	r->pend = ext + need;
	r->last_ts = now;
	id |= t->tid_word;
	memcpy(p, &id, 8);
	return p;
}

TK_API void *tk_appevent_reserve(const struct tk_appevent_type *type, uint32_t len)
{
	struct ae_thread *t = t_self;
	uint32_t level;
	uint8_t *p;

	if (!t && !(t = thread_new()))
		return NULL;
	level = t->nest;
	if (level >= TK_APPEVENT_MAX_NEST) {
		drop(NULL);
		return NULL;
	}
	/* Claim the level before touching its buffer: a handler from now on takes the next. */
	t->nest = level + 1;
	barrier();
	p = reserve_in(t, &t->rings[level], level, type, len);
	if (!p) {
		barrier();
		t->nest = level;
	}
	return p;
}

TK_API void tk_appevent_commit(void *record)
{
	struct ae_thread *t = t_self;
	uint32_t level = t->nest - 1;
	struct ae_ring *r = &t->rings[level];

	(void)record;
	r->cw += r->pend;
	r->events++;
	__atomic_store_n((uint64_t *)(r->page + 8), r->cw, __ATOMIC_RELEASE);
	barrier();
	t->nest = level;
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	__builtin_memcpy(p, &v, 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	__builtin_memcpy(p, &v, 4);
}

/*
 * The fields of a fixed-size record, @n bytes (at most 104): two
 * overlapping loads and stores of 8 or 16 bytes for the common sizes, so
 * that a call site's constant size always takes one predicted branch and
 * no loop.
 */
static inline void copy_fields(uint8_t *d, const uint8_t *s, uint32_t n)
{
	if (n - 8 <= 8) {
		uint64_t a = get64(s), b = get64(s + n - 8);

		put64(d, a);
		put64(d + n - 8, b);
	} else if (n - 17 <= 15) {
		uint64_t a = get64(s), b = get64(s + 8);
		uint64_t c = get64(s + n - 16), e = get64(s + n - 8);

		put64(d, a);
		put64(d + 8, b);
		put64(d + n - 16, c);
		put64(d + n - 8, e);
	} else if (n >= 4 && n < 8) {
		uint32_t a, b;

		__builtin_memcpy(&a, s, 4);
		__builtin_memcpy(&b, s + n - 4, 4);
		put32(d, a);
		put32(d + n - 4, b);
	} else {
		memcpy(d, s, n);
	}
}

/* tk_appevent_write() for what its fast path does not take. */
static void __attribute__((noinline, cold))
write_general(const struct tk_appevent_type *type, const void *record, uint32_t len)
{
	uint8_t *p = tk_appevent_reserve(type, len);

	if (!p)
		return;
	memcpy(p + sizeof(struct tk_appevent_common),
	       (const uint8_t *)record + sizeof(struct tk_appevent_common),
	       len - sizeof(struct tk_appevent_common));
	tk_appevent_commit(p);
}

static inline uint64_t tsc_now(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return 0; /* never called: r->fast is GEN_NONE without the TSC */
#endif
}

/*
 * The measured path (bench/bench-ring.c): a thread's own events (level 0)
 * on the TSC clock, inside a page, a record of up to 112 bytes, no time
 * extend. Everything else goes to the general path before anything is
 * written. The gate is one compare: r->fast is the connection number only
 * while the buffer belongs to the current connection and stamps with the
 * TSC. The first record of a page fails the room test (off - 1 wraps), as
 * a full page does: the general path stamps the page.
 *
 * fast_begin() writes a record's header word, its padding's zeros and its
 * id, and returns where the fields go (NULL: take the general path);
 * fast_end() publishes it. Both inline into each writer, so the plain and
 * the string writers share the protocol without a call.
 */
struct fast_slot {
	struct ae_ring *ring;
	uint8_t *page;
	uint64_t now, cw;
	uint32_t need;
};

static inline __attribute__((always_inline)) uint8_t *
fast_begin(struct ae_thread *t, const struct tk_appevent_type *type, uint32_t size,
	   struct fast_slot *s)
{
	const uint32_t len4 = (size + 3) & ~3u, need = 4 + len4;
	struct ae_ring *r = &t->rings[0];
	uint64_t now, delta, id, cw;
	uint32_t off;
	uint8_t *page, *p;

	t->nest = 1;
	barrier();
	id = RD(type->id);
	/* In locals: the stores into the page below could alias them. */
	cw = r->cw;
	page = r->page;
	off = (uint32_t)cw;
	if (__builtin_expect(r->fast != RD(g_gen) || !id ||
				     off - 1 >= AE_PAGE_SIZE - AE_PAGE_DATA - need,
			     0))
		goto general;
	now = tsc_now();
	delta = now - r->last_ts;
	/* Also a stamp below the last one (another CPU's TSC): the general path clamps it. */
	if (__builtin_expect(delta >> 27, 0))
		goto general;
	p = page + AE_PAGE_DATA + off;
	put32(p, (len4 / 4) | (uint32_t)delta << 5);
	/* Zero the padding first: the copy then overwrites what is not padding. */
	if (len4 != size)
		put32(p + len4, 0);
	put64(p + 4, id | t->tid_word);
	*s = (struct fast_slot){.ring = r, .page = page, .now = now, .cw = cw, .need = need};
	return p + 4;
general:
	barrier();
	t->nest = 0;
	return NULL;
}

static inline __attribute__((always_inline)) void fast_end(struct ae_thread *t,
							   const struct fast_slot *s)
{
	struct ae_ring *r = s->ring;

	r->last_ts = s->now;
	r->events++;
	r->cw = s->cw + s->need;
	__atomic_store_n((uint64_t *)(s->page + 8), s->cw + s->need, __ATOMIC_RELEASE);
	barrier();
	t->nest = 0;
}

static inline __attribute__((always_inline)) void write_fast(const struct tk_appevent_type *type,
							     const void *record, uint32_t len)
{
	struct ae_thread *t = t_self;
	struct fast_slot s;
	uint8_t *p;

	if (__builtin_expect(!t || t->nest || len - 8 > 104, 0))
		return write_general(type, record, len);
	p = fast_begin(t, type, len, &s);
	if (__builtin_expect(!p, 0))
		return write_general(type, record, len);
	copy_fields(p + 8, (const uint8_t *)record + 8, len - 8);
	fast_end(t, &s);
}

/* Two u64 fields, the common case, get a copy with the size folded in. */
static void __attribute__((noinline))
write_any(const struct tk_appevent_type *type, const void *record, uint32_t len)
{
	write_fast(type, record, len);
}

TK_API void tk_appevent_write(const struct tk_appevent_type *type, const void *record, uint32_t len)
{
	if (__builtin_expect(len != 24, 0))
		return write_any(type, record, len);
	write_fast(type, record, 24);
}

/*
 * A record with strings into @p (the record's first byte, its common
 * header written): the fixed part's fields, zeros up to @len rounded to 4,
 * then the strings one after the other, where their __data_loc words say.
 */
static inline void fill_str(uint8_t *p, const uint8_t *record, uint32_t len,
			    const struct tk_appevent_str *strs, uint32_t nr)
{
	uint32_t at = (len + 3) & ~3u;

	/* The padding first: the fields' copy then overwrites what is not padding. */
	if (at != len)
		put32(p + at - 4, 0);
	copy_fields(p + 8, record + 8, len - 8);
	for (uint32_t i = 0; i < nr; i++) {
		const uint8_t *src = (const uint8_t *)strs[i].s;
		uint32_t n = strs[i].size;

		/* Inline moves up to 32 bytes (no call, so no registers to save around one). */
		if (__builtin_expect(n >= 4, 1))
			copy_fields(p + at, src, n);
		else
			for (uint32_t k = 0; k < n; k++)
				p[at + k] = src[k];
		at += n;
	}
}

/* tk_appevent_write_str() for what its fast path does not take. */
static void __attribute__((noinline, cold))
write_str_general(const struct tk_appevent_type *type, const void *record, uint32_t len,
		  const struct tk_appevent_str *strs, uint32_t nr, uint32_t total)
{
	/* Length 0 drops and counts: a record with strings has one __data_loc word at least. */
	uint8_t *p = tk_appevent_reserve(type, len < 12 || len > total ? 0 : total);

	if (!p)
		return;
	fill_str(p, record, len, strs, nr);
	tk_appevent_commit(p);
}

/*
 * write_fast() with strings: the same gate, room and delta tests, then the
 * fields and the strings copied in (memcpy per string: their sizes are
 * not known at the call site). Records of up to 112 bytes; longer ones,
 * which need the kernel's length word, go to the general path.
 */
static inline __attribute__((always_inline)) void
write_str_fast(const struct tk_appevent_type *type, const void *record, uint32_t len,
	       const struct tk_appevent_str *strs, uint32_t nr)
{
	struct ae_thread *t = t_self;
	uint32_t total = (len + 3) & ~3u;
	struct fast_slot s;
	uint8_t *p;

	for (uint32_t i = 0; i < nr; i++) {
		total += strs[i].size;
		/* One or two strings as a rule: a plain loop, not the vectorised one gcc makes. */
		__asm__("" : "+r"(total));
	}
	if (__builtin_expect(!t || t->nest || len < 12 || total > 112, 0))
		return write_str_general(type, record, len, strs, nr, total);
	p = fast_begin(t, type, total, &s);
	if (__builtin_expect(!p, 0))
		return write_str_general(type, record, len, strs, nr, total);
	fill_str(p, record, len, strs, nr);
	fast_end(t, &s);
}

/* Two strings or more: the loops stay loops. */
static void __attribute__((noinline))
write_str_n(const struct tk_appevent_type *type, const void *record, uint32_t len,
	    const struct tk_appevent_str *strs, uint32_t nr)
{
	write_str_fast(type, record, len, strs, nr);
}

TK_API void tk_appevent_write_str(const struct tk_appevent_type *type, const void *record,
				  uint32_t len, const struct tk_appevent_str *strs, uint32_t nr)
{
	/* One string, the common case, gets a copy with the loops gone. */
	if (__builtin_expect(nr != 1, 0))
		return write_str_n(type, record, len, strs, nr);
	write_str_fast(type, record, len, strs, 1);
}
