// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * appevent-session: the recorder side of application events.
 *
 * A session owns a unix SOCK_SEQPACKET socket in a private directory
 * (mkdtemp, mode 0700 but the socket 0777 so that a command run as another
 * user can still connect) and one thread. The thread polls the socket, the
 * connected applications and a stop eventfd (timeouts below). An
 * application says HELLO; the answer (WELCOME) gives it ids of its own,
 * TK_APPEVENT_IDS_PER_PROCESS of them from TK_APPEVENT_ID_BASE up per
 * connection, so that two programs (or a parent and its forked child) never
 * share an id; the buffer size and the mode. Then come FORMAT messages,
 * kept as text, and BUFFER messages whose memfd the thread maps, once it
 * has checked that the memfd is sealed against shrinking (an application
 * that could truncate it would make our reads fault). Any local process
 * that finds the socket may connect; what it sends is treated as input:
 * sizes are checked, pages whose commit does not fit are not copied, and
 * the .dat readers check every record.
 *
 * Draining (see appevent.c for the buffer's protocol): every 5 ms, or
 * every 1 ms while the last pass found pages (a writer at 5 M events/s
 * fills 1 MiB in ~7 ms) or left a torn batch, the thread (named
 * tk-ae-recorder) moves each buffer's complete pages (head < tail) into
 * the buffer's spool file, an unlinked file in the session directory,
 * exactly as record.c moves the kernel's whole pages into its spools: up
 * to DRAIN_BATCH pages at a time, then one cmpxchg moves head past the
 * batch. The pages go by one pwritev() straight from the shared mapping
 * into the spool opened with O_DIRECT: the disk reads them from the
 * application's memory, with no copy into the page cache and no writeback
 * thread later, and the recorder waits on the disk rather than spending
 * CPU the writers need. Recorder CPU per 4 KiB page (bench-ring's spool-*
 * cases, 64-page batches, three runs at load 7-14): O_DIRECT 0.57-0.69 us,
 * splice through a pipe 0.86-1.05 (the recorder before, plus the
 * writeback threads' CPU, not counted), pwritev through the page cache
 * 0.84-1.25, a copy and a write per page 1.5; copy_file_range from a memfd to ext4
 * fails (EXDEV). Two writers lapping their buffers (bench-ring ae-2t,
 * overwrite mode), recorder CPU per event written: 2.0-2.1 ns through
 * the page cache, 0.6-0.7 with O_DIRECT, which then drains about a third
 * as many pages: at the disk's speed (~1.3 GB/s here), what a recording
 * sustains anyway once the page cache is full of dirty pages. O_DIRECT
 * ties the recorder to the disk's latency, so a drop-newest buffer over
 * half full (the disk is behind) goes through the page cache instead, by
 * splice from the memfd through a pipe (the pages enter the pipe by
 * reference and are copied once): a burst then costs
 * CPU, not events (without a pipe or a spare descriptor, by pwritev()
 * from the mapping). Where the file system refuses O_DIRECT (at open or at
 * the first write) every batch takes that way; O_DIRECT is a flag of the
 * open file, switched with fcntl() between batches. A batch counts only
 * if its cmpxchg succeeds (an overwriting writer may have taken slots
 * meanwhile); else the next try writes over the same spool bytes, so
 * spools are written at pages_out pages and read back up to there. A
 * writer that tears a batch is lapping its buffer, pushing head a page at
 * a time, faster than any batch is written: the pass leaves that buffer
 * and comes back 1 ms later rather than retry at once (a retry from the
 * new head is torn again, its copy CPU the writers lose). Events lost
 * right before a page (the writer's drops, carried in the page's commit
 * word, and pages it overwrote since the previous copy) set that page's
 * missed-events flag (commit bit 31, and the count after the data with bit
 * 30 when it fits), as the kernel marks its pages; such a page is copied
 * (page-aligned, for O_DIRECT) and patched first.
 * tk_appevent_session_stop() turns O_DIRECT off, drains once more and then
 * copies the page each writer is still on, up to its commit word: the
 * memfd outlives a killed application, so everything it committed is
 * kept.
 *
 * Writing: tk_appevent_session_write() rewrites the recorder's finished
 * .dat with the applications' formats added to the event formats section,
 * their threads added to the saved command lines, and one more buffer, "user", whose CPUs are the
 * application buffers in the order they arrived, on the top buffer's clock. The rewrite copies the
 * existing buffers page by page through the reader (re-compressing with
 * the file's codec): record.c stays as it is and the step can be skipped
 * when no application connected. The cost is one more copy of the file.
 */
#include <tracekit/appevent.h>
#include <tracekit/dat.h>
#include <tracekit/tracedata.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "capture/appevent-internal.h"
#include "internal/error.h"
#include "internal/opts.h"

#define POLL_MS	      5
#define MAX_CONNS     ((TK_APPEVENT_ID_END - TK_APPEVENT_ID_BASE) / TK_APPEVENT_IDS_PER_PROCESS)
#define COMMIT_MISSED (1ULL << 31)
#define COMMIT_STORED (1ULL << 30)
#define DRAIN_BATCH   64 /* pages per write (see "Draining") */

struct sbuf {
	struct ae_shm *sh;
	size_t map_len;
	uint8_t *pages;
	uint32_t nr_pages;
	int spool;
	int memfd;	/* the application's memfd, for splice(); -1: write from the mapping */
	bool direct_ok; /* the spool's file system takes O_DIRECT */
	bool direct_on; /* O_DIRECT is set on the spool now */
	uint64_t pages_out, overrun_seen;
	uint64_t drops_marked; /* drops the pages copied so far carried */
	uint64_t last_ts;      /* timestamp of the last page copied */
	int32_t pid, tid;
	uint32_t level;
	char comm[16];
	bool final_done;
};

struct sconn {
	int fd;
	int32_t pid;
	char comm[16];
};

struct sformat {
	uint32_t id;
	char *system;
	char *text;
};

struct tk_appevent_session {
	char dir[PATH_MAX];
	char path[PATH_MAX];
	char link[sizeof(TK_APPEVENT_ATTACH_DIR) + 32]; /* attach rendezvous, or "" */
	int lfd, stopfd;
	int pipe[2];	 /* splice(): memfd -> pipe -> spool; -1: pwritev() from the mapping */
	size_t pipe_cap; /* bytes the pipe holds */
	pthread_t thread;
	bool running, stopped;
	pthread_mutex_t lock; /* bufs, for the stats calls while the thread runs */
	struct sconn *conns;
	size_t nconns;
	uint32_t conns_ever;
	struct sbuf *bufs;
	size_t nbufs;
	struct sformat *fmts;
	size_t nfmts;
	uint32_t nr_pages, mode, clock;
	bool torn; /* a pass ended on a torn batch: come back soon */
	int err;
	uint8_t page[AE_PAGE_SIZE];
	uint8_t *scratch; /* DRAIN_BATCH pages: copies of pages whose commit word changes */
	char msg[AE_MSG_MAX];
};

/* ------------------------------------------------------------ messages */

static void conn_close(struct tk_appevent_session *s, size_t i)
{
	close(s->conns[i].fd);
	s->conns[i] = s->conns[--s->nconns];
}

static void on_hello(struct tk_appevent_session *s, struct sconn *c, const void *msg, size_t n)
{
	const struct ae_msg_hello *h = msg;
	struct ae_msg_welcome w = {
		{AE_MAGIC, AE_MSG_WELCOME}, 0, 0, s->nr_pages, s->mode, s->clock, 0};

	if (n < sizeof(*h))
		return;
	c->pid = h->pid;
	/* Another layout of the shared buffers: refuse (id_count 0) rather than misread. */
	if (h->version != AE_VERSION) {
		send(c->fd, &w, sizeof(w), MSG_DONTWAIT | MSG_NOSIGNAL);
		return;
	}
	memcpy(c->comm, h->comm, sizeof(c->comm));
	c->comm[sizeof(c->comm) - 1] = 0;
	if (s->conns_ever < MAX_CONNS) {
		w.id_base = TK_APPEVENT_ID_BASE + s->conns_ever * TK_APPEVENT_IDS_PER_PROCESS;
		w.id_count = TK_APPEVENT_IDS_PER_PROCESS;
		s->conns_ever++;
	}
	/* id_count 0 refuses the application: it keeps its events off. */
	send(c->fd, &w, sizeof(w), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void on_format(struct tk_appevent_session *s, const void *msg, size_t n)
{
	const struct ae_msg_format *f = msg;
	struct sformat *nf;
	char *sys, *text;

	if (n <= sizeof(*f) || ((const char *)msg)[n - 1] != 0 ||
	    memchr(f->system, 0, sizeof(f->system)) == NULL || !f->system[0])
		return;
	for (size_t i = 0; i < s->nfmts; i++)
		if (s->fmts[i].id == f->id)
			return; /* an id is given once; a repeat is a reconnect of the same process
				 */
	nf = realloc(s->fmts, (s->nfmts + 1) * sizeof(*nf));
	if (!nf)
		return;
	s->fmts = nf;
	sys = strdup(f->system);
	text = strdup((const char *)msg + sizeof(*f));
	if (!sys || !text) {
		free(sys);
		free(text);
		return;
	}
	s->fmts[s->nfmts++] = (struct sformat){f->id, sys, text};
}

static void on_buffer(struct tk_appevent_session *s, struct sconn *c, const void *msg, size_t n,
		      int fd)
{
	const struct ae_msg_buffer *b = msg;
	struct sbuf nb = {.spool = -1, .memfd = -1};
	struct sbuf *grown;
	struct stat st;
	void *p;

	/*
	 * Only a sealed memfd: a buffer its sender could still shrink would
	 * turn our reads into SIGBUS.
	 */
	if (n < sizeof(*b) || fstat(fd, &st) < 0 || (uint64_t)st.st_size < b->size ||
	    b->size < AE_HDR_SIZE + AE_MIN_PAGES * AE_PAGE_SIZE ||
	    (fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_SEAL)) !=
		    (F_SEAL_SHRINK | F_SEAL_SEAL))
		return;
	p = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return;
	nb.sh = p;
	nb.map_len = b->size;
	if (nb.sh->magic != AE_MAGIC || nb.sh->version != AE_VERSION ||
	    nb.sh->page_size != AE_PAGE_SIZE || nb.sh->nr_pages < AE_MIN_PAGES ||
	    nb.sh->nr_pages > AE_MAX_PAGES ||
	    AE_HDR_SIZE + (uint64_t)nb.sh->nr_pages * AE_PAGE_SIZE > b->size)
		goto bad;
	nb.nr_pages = nb.sh->nr_pages;
	nb.pages = (uint8_t *)p + AE_HDR_SIZE;
	nb.pid = c->pid;
	nb.tid = b->tid;
	nb.level = b->level;
	memcpy(nb.comm, c->comm, sizeof(nb.comm));
	/* O_DIRECT where the file system takes it (ext4, xfs; not every tmpfs): see "Draining". */
	nb.spool = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_DIRECT, 0600);
	nb.direct_ok = nb.direct_on = nb.spool >= 0;
	if (nb.spool < 0)
		nb.spool = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (nb.spool < 0)
		goto bad;
	/* Kept for splice(); without it (out of descriptors) the pages are written from the map. */
	if (s->pipe[0] >= 0)
		nb.memfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_lock(&s->lock);
	grown = realloc(s->bufs, (s->nbufs + 1) * sizeof(*grown));
	if (grown) {
		s->bufs = grown;
		s->bufs[s->nbufs++] = nb;
	}
	pthread_mutex_unlock(&s->lock);
	if (grown)
		return;
	close(nb.spool);
	if (nb.memfd >= 0)
		close(nb.memfd);
bad:
	munmap(p, b->size);
}

/* Read every message waiting on connection @i; false when it closed. */
static bool conn_read(struct tk_appevent_session *s, size_t i)
{
	char *msg = s->msg;

	for (;;) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(4 * sizeof(int))];
		} ctl;
		struct iovec iov = {.iov_base = msg, .iov_len = AE_MSG_MAX};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		const struct ae_msg_head *h = (const void *)msg;
		int fd = -1;
		ssize_t n = recvmsg(s->conns[i].fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0)
			return false;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fds[4];

				memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
				for (size_t j = 0; j < k; j++) {
					if (fd < 0)
						fd = fds[j];
					else
						close(fds[j]);
				}
			}
		}
		if ((size_t)n >= sizeof(*h) && h->magic == AE_MAGIC) {
			if (h->kind == AE_MSG_HELLO)
				on_hello(s, &s->conns[i], msg, (size_t)n);
			else if (h->kind == AE_MSG_FORMAT)
				on_format(s, msg, (size_t)n);
			else if (h->kind == AE_MSG_BUFFER && fd >= 0)
				on_buffer(s, &s->conns[i], msg, (size_t)n, fd);
		}
		if (fd >= 0)
			close(fd);
	}
}

static void accept_all(struct tk_appevent_session *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct sconn *nc;

		if (fd < 0)
			return;
		nc = realloc(s->conns, (s->nconns + 1) * sizeof(*nc));
		if (!nc) {
			close(fd);
			return;
		}
		s->conns = nc;
		s->conns[s->nconns++] = (struct sconn){.fd = fd};
	}
}

static void read_all(struct tk_appevent_session *s)
{
	for (size_t i = 0; i < s->nconns;) {
		if (conn_read(s, i))
			i++;
		else
			conn_close(s, i);
	}
}

/* ------------------------------------------------------------ draining */

/* O_DIRECT on or off on @b's spool (one open file: the flag is per open file, not per write). */
static void spool_direct(struct sbuf *b, bool on)
{
	int fl;

	on = on && b->direct_ok;
	if (on == b->direct_on)
		return;
	fl = fcntl(b->spool, F_GETFL);
	if (fl < 0 || fcntl(b->spool, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) < 0)
		on = false, b->direct_ok = false;
	b->direct_on = on;
}

/* Write @len bytes of @iov at @off of @b's spool, whatever the partial writes. */
static int spool_write(struct tk_appevent_session *s, struct sbuf *b, struct iovec *iov, int cnt,
		       uint64_t off)
{
	while (cnt > 0) {
		ssize_t w = pwritev(b->spool, iov, cnt, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		/* O_DIRECT opened but refused here (alignment, a file system's rule): buffered. */
		if (w < 0 && errno == EINVAL && b->direct_on) {
			spool_direct(b, false);
			b->direct_ok = false;
			continue;
		}
		if (w <= 0) {
			if (!s->err)
				s->err = tk_fail(w < 0 ? errno : EIO, "appevent spool: %s",
						 strerror(w < 0 ? errno : EIO));
			return -1;
		}
		off += (uint64_t)w;
		while (cnt > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * @len bytes at @from of @b's memfd to @off of its spool, through the
 * session's pipe: the pages go into the pipe by reference and are copied
 * once, into the spool's page cache. Returns 0, or -1 when splice() did
 * not do it all (the pipe is emptied; the caller writes the range again
 * another way).
 */
static int splice_range(struct tk_appevent_session *s, struct sbuf *b, uint64_t from, size_t len,
			uint64_t off)
{
	while (len) {
		loff_t in = (loff_t)from, out = (loff_t)off;
		ssize_t got = splice(b->memfd, &in, s->pipe[1], NULL,
				     len < s->pipe_cap ? len : s->pipe_cap, SPLICE_F_NONBLOCK);
		size_t left = got > 0 ? (size_t)got : 0;

		while (left) {
			ssize_t put = splice(s->pipe[0], NULL, b->spool, &out, left, 0);

			if (put <= 0)
				break;
			left -= (size_t)put;
		}
		if (got <= 0 || left) {
			/* Whatever stayed in the pipe must not reach the next range. */
			while (left) {
				ssize_t r = read(s->pipe[0], s->page,
						 left < sizeof(s->page) ? left : sizeof(s->page));

				if (r <= 0)
					break;
				left -= (size_t)r;
			}
			return -1;
		}
		from += (uint64_t)got;
		off += (uint64_t)got;
		len -= (size_t)got;
	}
	return 0;
}

/*
 * A batch's pages, @iov (runs of the mapping, or patched copies in
 * s->scratch, all page-aligned), to @off of @b's spool. @direct: by one
 * pwritev() with O_DIRECT where the spool takes it. Else through the page
 * cache: the mapping's runs by splice() from the memfd, the copies by
 * pwrite(); everything by pwritev() when splice is not available, or for
 * good once it failed on this buffer.
 */
static int spool_batch(struct tk_appevent_session *s, struct sbuf *b, struct iovec *iov, int cnt,
		       uint64_t off, bool direct)
{
	spool_direct(b, direct);
	if (b->memfd < 0 || b->direct_on)
		return spool_write(s, b, iov, cnt, off);
	for (int i = 0; i < cnt; i++) {
		uint8_t *base = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (base < (uint8_t *)b->sh || base >= (uint8_t *)b->sh + b->map_len ||
		    splice_range(s, b, (uint64_t)(base - (uint8_t *)b->sh), len, off) < 0) {
			if (base >= (uint8_t *)b->sh && base < (uint8_t *)b->sh + b->map_len) {
				close(b->memfd);
				b->memfd = -1;
			}
			if (spool_write(s, b, &iov[i], 1, off) < 0)
				return -1;
		}
		off += len;
	}
	return 0;
}

/*
 * The commit word the file gets for a page whose shared one is @raw, with
 * @lost events lost right before it: the kernel's missed-events flag, and
 * the count after the data (bit 30) when it fits. Sets *@count_at to where
 * the count goes in the page, or 0. Returns UINT64_MAX for a torn or
 * foreign page, which never goes into the file.
 */
static uint64_t file_commit(uint64_t raw, uint64_t lost, uint32_t *count_at)
{
	uint64_t commit = raw & ((1ULL << 27) - 1);

	*count_at = 0;
	if (commit > AE_PAGE_SIZE - AE_PAGE_DATA)
		return UINT64_MAX;
	if (lost) {
		if (commit + 8 <= AE_PAGE_SIZE - AE_PAGE_DATA) {
			*count_at = (uint32_t)(AE_PAGE_DATA + commit);
			commit |= COMMIT_STORED;
		}
		commit |= COMMIT_MISSED;
	}
	return commit;
}

/* One page the recorder made itself (the final ones, see drain()): @page, patched in place. */
static int spool_page(struct tk_appevent_session *s, struct sbuf *b, uint8_t *page)
{
	uint64_t raw, commit, n, ov = __atomic_load_n(&b->sh->overrun, __ATOMIC_ACQUIRE);
	struct iovec iov = {.iov_base = page, .iov_len = AE_PAGE_SIZE};
	uint32_t at;

	memcpy(&raw, page + 8, 8);
	/*
	 * Lost right before this page: what the writer dropped while the page
	 * before it was full (in the high half), and the pages it overwrote
	 * since our last copy (their events were older than this page's).
	 */
	n = (raw >> 32) + (ov - b->overrun_seen);
	commit = file_commit(raw, n, &at);
	if (commit == UINT64_MAX)
		return 0; /* a torn or foreign page: never into the file */
	b->overrun_seen = ov;
	b->drops_marked += raw >> 32;
	memcpy(&b->last_ts, page, 8);
	if (at)
		memcpy(page + at, &n, 8);
	memcpy(page + 8, &commit, 8);
	if (spool_write(s, b, &iov, 1, b->pages_out * AE_PAGE_SIZE) < 0)
		return -1;
	b->pages_out++;
	return 0;
}

/*
 * Drops after the last page began (the writer never got to another page to
 * carry them): one more page, without events, whose missed-events count
 * says so, stamped with the last page's time.
 */
static void final_drops(struct tk_appevent_session *s, struct sbuf *b)
{
	uint64_t lost = __atomic_load_n(&b->sh->lost, __ATOMIC_ACQUIRE);
	uint64_t ov = __atomic_load_n(&b->sh->overrun, __ATOMIC_ACQUIRE);
	uint64_t drops = lost - ov, pending, word;

	if (drops <= b->drops_marked || !b->pages_out)
		return;
	pending = drops - b->drops_marked;
	memset(s->page, 0, AE_PAGE_SIZE);
	memcpy(s->page, &b->last_ts, 8);
	word = pending << 32; /* spool_page() turns it into the kernel's flags */
	memcpy(s->page + 8, &word, 8);
	spool_page(s, b, s->page);
}

/*
 * Copy complete pages head .. head + n - 1 (n <= DRAIN_BATCH) of @b into
 * its spool with one pwritev() straight from the shared mapping, then move
 * head past them with one cmpxchg. Pages whose commit word must change
 * (events lost before them) go through a patched copy in s->scratch; a
 * torn or foreign page is left out. Returns 1 when done, 0 when the
 * cmpxchg failed (an overwriting writer took pages meanwhile: *@head is
 * then its head; nothing is counted and the next try writes over the same
 * file bytes), -1 on a spool error.
 */
static int drain_batch(struct tk_appevent_session *s, struct sbuf *b, uint64_t *head, uint32_t n,
		       bool direct)
{
	struct ae_shm *sh = b->sh;
	uint64_t ov = __atomic_load_n(&sh->overrun, __ATOMIC_ACQUIRE);
	uint64_t ov_lost = ov - b->overrun_seen, drops = 0, last_ts = b->last_ts;
	struct iovec iov[DRAIN_BATCH];
	uint32_t good = 0, patched = 0;
	int cnt = 0;

	for (uint32_t k = 0; k < n; k++) {
		uint8_t *src = b->pages + (size_t)((*head + k) % b->nr_pages) * AE_PAGE_SIZE;
		uint64_t raw = __atomic_load_n((uint64_t *)(src + 8), __ATOMIC_RELAXED);
		uint64_t lost = (raw >> 32) + (good ? 0 : ov_lost), commit;
		uint8_t *from = src;
		uint32_t at;

		commit = file_commit(raw, lost, &at);
		if (commit == UINT64_MAX)
			continue;
		if (commit != raw) {
			from = s->scratch + (size_t)patched++ * AE_PAGE_SIZE;
			memcpy(from, src, AE_PAGE_SIZE);
			if (at)
				memcpy(from + at, &lost, 8);
			memcpy(from + 8, &commit, 8);
		}
		drops += raw >> 32;
		last_ts = __atomic_load_n((uint64_t *)src, __ATOMIC_RELAXED);
		/* Slots follow each other in the mapping: one entry for a run of them. */
		if (cnt && from == (uint8_t *)iov[cnt - 1].iov_base + iov[cnt - 1].iov_len)
			iov[cnt - 1].iov_len += AE_PAGE_SIZE;
		else
			iov[cnt++] = (struct iovec){.iov_base = from, .iov_len = AE_PAGE_SIZE};
		good++;
	}
	if (cnt && spool_batch(s, b, iov, cnt, b->pages_out * AE_PAGE_SIZE, direct) < 0)
		return -1;
	if (!__atomic_compare_exchange_n(&sh->head, head, *head + n, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return 0;
	*head += n;
	b->pages_out += good;
	if (good) {
		b->overrun_seen = ov;
		b->drops_marked += drops;
		b->last_ts = last_ts;
	}
	return 1;
}

/* Copy @b's complete pages; with @final, the page its writer is on too. */
static void drain(struct tk_appevent_session *s, struct sbuf *b, bool final)
{
	struct ae_shm *sh = b->sh;
	uint64_t head = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE);

	while (head < tail) {
		uint64_t n = tail - head;

		if (n > DRAIN_BATCH)
			n = DRAIN_BATCH;
		/*
		 * O_DIRECT while the disk keeps up; when a drop-newest buffer is
		 * over half full it does not, and the page cache takes the
		 * burst rather than the writer dropping events. An overwriting
		 * writer never waits: there the CPU it would lose counts more.
		 */
		bool direct = !final &&
			      (s->mode == TK_APPEVENT_OVERWRITE || tail - head <= b->nr_pages / 2);
		int r = drain_batch(s, b, &head, (uint32_t)n, direct);

		if (r < 0)
			return;
		/*
		 * Torn: an overwriting writer took head meanwhile. It is lapping
		 * the buffer and pushes head a page at a time, faster than a
		 * batch is written, so a retry from its new head would be torn
		 * again: come back on the next pass (1 ms) rather than spend CPU
		 * the writers need. At the end the writers are done: go on.
		 */
		if (r == 0 && !final) {
			s->torn = true;
			break;
		}
	}
	if (final && !b->final_done) {
		const uint8_t *src = b->pages + (size_t)(tail % b->nr_pages) * AE_PAGE_SIZE;
		uint64_t commit = __atomic_load_n((const uint64_t *)(src + 8), __ATOMIC_ACQUIRE);

		b->final_done = true;
		if (head == tail && commit) {
			uint64_t n = commit & ((1ULL << 27) - 1);

			/* Only what is committed: a live writer may be filling the rest. */
			if (n > AE_PAGE_SIZE - AE_PAGE_DATA)
				n = AE_PAGE_SIZE - AE_PAGE_DATA;
			memset(s->page, 0, AE_PAGE_SIZE);
			memcpy(s->page, src, 8);
			memcpy(s->page + 8, &commit, 8);
			memcpy(s->page + AE_PAGE_DATA, src + AE_PAGE_DATA, n);
			spool_page(s, b, s->page);
		}
		final_drops(s, b);
	}
}

static void *session_thread(void *arg)
{
	struct tk_appevent_session *s = arg;
	struct pollfd *pfd = NULL;
	uint64_t before, after;
	bool busy = false;

	/* A name that top, perf and bench-ring (its recorder CPU time) can find. */
	pthread_setname_np(pthread_self(), "tk-ae-recorder");
	for (;;) {
		size_t n = s->nconns + 2;
		struct pollfd *np = realloc(pfd, n * sizeof(*np));
		bool stop;

		if (np)
			pfd = np;
		if (!pfd)
			break;
		pfd[0] = (struct pollfd){.fd = s->stopfd, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (size_t i = 0; np && i < s->nconns; i++)
			pfd[i + 2] = (struct pollfd){.fd = s->conns[i].fd, .events = POLLIN};
		poll(pfd, np ? n : 2, busy ? 1 : POLL_MS);
		stop = pfd[0].revents & POLLIN;
		accept_all(s);
		read_all(s);
		before = 0;
		after = 0;
		s->torn = false;
		for (size_t i = 0; i < s->nbufs; i++) {
			before += s->bufs[i].pages_out;
			drain(s, &s->bufs[i], false);
			after += s->bufs[i].pages_out;
		}
		/* Pages came (or a torn batch was left): the writers are busy, come back after 1
		 * ms. */
		busy = after != before || s->torn;
		if (stop)
			break;
	}
	free(pfd);
	return NULL;
}

/* ------------------------------------------------------------ API */

/* The TSC runs at a constant rate through sleep states (CPUID 0x80000007 EDX bit 8). */
static bool invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned int a = 0x80000000, b, c, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
	if (a < 0x80000007)
		return false;
	a = 0x80000007;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d) : "c"(0));
	return d & (1U << 8);
#else
	return false;
#endif
}

TK_API struct tk_appevent_session *tk_appevent_session_new(const struct tk_appevent_opts *opts_in)
{
	TK_OPTS(tk_appevent_opts, opts);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct tk_appevent_session *s;
	const char *base;
	uint64_t pages;
	int r;

	if (opts_in && tk_opts_copy(&opts, sizeof(opts), opts_in, "tk_appevent_opts") < 0)
		return NULL;
	if (opts.mode != TK_APPEVENT_DROP_NEWEST && opts.mode != TK_APPEVENT_OVERWRITE)
		return tk_fail_null(EINVAL, "appevent: unknown buffer mode %d", (int)opts.mode);
	if (opts.clock > TK_APPEVENT_CLOCK_TSC)
		return tk_fail_null(EINVAL, "appevent: unknown clock %d", (int)opts.clock);
	if (opts.clock == TK_APPEVENT_CLOCK_TSC && !invariant_tsc())
		return tk_fail_null(ENOTSUP, "appevent: this CPU has no invariant TSC");
	pages = (opts.buffer_kb ? opts.buffer_kb : 1024) * 1024ULL / AE_PAGE_SIZE;
	if (pages < AE_MIN_PAGES || pages > AE_MAX_PAGES)
		return tk_fail_null(EINVAL,
				    "appevent: buffer size %u KiB out of range (%u..%u KiB)",
				    opts.buffer_kb, AE_MIN_PAGES * AE_PAGE_SIZE / 1024,
				    AE_MAX_PAGES * AE_PAGE_SIZE / 1024);
	s = calloc(1, sizeof(*s));
	if (!s)
		return tk_fail_null(ENOMEM, "out of memory");
	s->lfd = s->stopfd = -1;
	s->pipe[0] = s->pipe[1] = -1;
	s->nr_pages = (uint32_t)pages;
	s->mode = opts.mode;
	s->clock = opts.clock;
	if (s->clock == TK_APPEVENT_CLOCK_AUTO)
		s->clock = invariant_tsc() ? TK_APPEVENT_CLOCK_TSC : TK_APPEVENT_CLOCK_MONO;
	pthread_mutex_init(&s->lock, NULL);
	base = opts.dir ? opts.dir : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if (snprintf(s->dir, sizeof(s->dir), "%s/tracekit-user-XXXXXX", base) >=
		    (int)sizeof(s->dir) ||
	    !mkdtemp(s->dir)) {
		r = errno ? errno : ENAMETOOLONG;
		s->dir[0] = 0;
		tk_appevent_session_free(s);
		return tk_fail_null(r, "%s: cannot make the session directory: %s", base,
				    strerror(r));
	}
	chmod(s->dir, 0711);
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s/socket", s->dir) >=
	    sizeof(sa.sun_path)) {
		tk_appevent_session_free(s);
		return tk_fail_null(ENAMETOOLONG, "%s: socket path too long", base);
	}
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->lfd, 64) < 0) {
		r = errno;
		tk_appevent_session_free(s);
		return tk_fail_null(r, "%s: %s", sa.sun_path, strerror(r));
	}
	chmod(s->path, 0777);
	/* Page-aligned: patched pages go to O_DIRECT spools as they are. */
	s->scratch = aligned_alloc(AE_PAGE_SIZE, (size_t)DRAIN_BATCH * AE_PAGE_SIZE);
	if (!s->scratch) {
		tk_appevent_session_free(s);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	/*
	 * A pipe of a batch's size for splice() (a smaller one when the user's
	 * pipe quota says so); without a pipe, pages are written from the map.
	 */
	if (pipe2(s->pipe, O_CLOEXEC) == 0) {
		int cap = fcntl(s->pipe[1], F_SETPIPE_SZ, (int)(DRAIN_BATCH * AE_PAGE_SIZE));

		if (cap < 0)
			cap = fcntl(s->pipe[1], F_GETPIPE_SZ);
		s->pipe_cap = cap > 0 ? (size_t)cap : 0;
		if (s->pipe_cap < AE_PAGE_SIZE) {
			close(s->pipe[0]);
			close(s->pipe[1]);
			s->pipe[0] = s->pipe[1] = -1;
		}
	} else {
		s->pipe[0] = s->pipe[1] = -1;
	}
	s->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->stopfd < 0) {
		r = errno;
		tk_appevent_session_free(s);
		return tk_fail_null(r, "eventfd: %s", strerror(r));
	}
	r = pthread_create(&s->thread, NULL, session_thread, s);
	if (r) {
		tk_appevent_session_free(s);
		return tk_fail_null(r, "appevent: cannot start the session thread: %s",
				    strerror(r));
	}
	s->running = true;
	return s;
}

TK_API const char *tk_appevent_session_clock(const struct tk_appevent_session *s)
{
	return s->clock == TK_APPEVENT_CLOCK_TSC ? "x86-tsc" : "mono";
}

TK_API const char *tk_appevent_session_path(const struct tk_appevent_session *s)
{
	return s->path;
}

TK_API int tk_appevent_session_stop(struct tk_appevent_session *s)
{
	uint64_t one = 1;

	if (s->stopped)
		return s->err;
	if (s->running) {
		if (write(s->stopfd, &one, sizeof(one)) < 0) {
			/* an eventfd write fails only on overflow: the thread is told already */
		}
		pthread_join(s->thread, NULL);
		s->running = false;
	}
	/* Messages sent just before the applications ended, then every committed event. */
	accept_all(s);
	read_all(s);
	for (size_t i = 0; i < s->nbufs; i++) {
		/* The last pages are made in s->page, and the spools are read back buffered. */
		spool_direct(&s->bufs[i], false);
		drain(s, &s->bufs[i], true);
	}
	s->stopped = true;
	return s->err;
}

TK_API int tk_appevent_session_attach(struct tk_appevent_session *s, int pid)
{
	char link[sizeof(s->link)], old[PATH_MAX];
	ssize_t n;

	if (pid <= 0 || s->link[0])
		return tk_fail(EINVAL, "appevent: cannot attach to pid %d", pid);
	if (mkdir(TK_APPEVENT_ATTACH_DIR, 0755) < 0 && errno != EEXIST)
		return tk_fail(errno, "%s: %s", TK_APPEVENT_ATTACH_DIR, strerror(errno));
	snprintf(link, sizeof(link), "%s/%d.sock", TK_APPEVENT_ATTACH_DIR, pid);
	/* A link left by a recorder that died points at a socket nobody listens on. */
	n = readlink(link, old, sizeof(old) - 1);
	if (n > 0) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		bool live;

		old[n] = 0;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", old);
		live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (fd >= 0)
			close(fd);
		if (live)
			return tk_fail(EEXIST, "%s: another recorder is attached to pid %d", link,
				       pid);
		unlink(link);
	}
	if (symlink(s->path, link) < 0)
		return tk_fail(errno, "%s: %s", link, strerror(errno));
	memcpy(s->link, link, sizeof(link));
	return 0;
}

TK_API size_t tk_appevent_session_buffers(const struct tk_appevent_session *s)
{
	return s->nbufs;
}

TK_API int tk_appevent_session_buffer_stats(const struct tk_appevent_session *s, size_t index,
					    struct tk_appevent_buffer_stats *out)
{
	const struct sbuf *b;

	if (index >= s->nbufs)
		return tk_fail(EINVAL, "appevent: no buffer %zu", index);
	b = &s->bufs[index];
	memset(out, 0, sizeof(*out));
	out->pid = b->pid;
	out->tid = b->tid;
	out->level = b->level;
	memcpy(out->comm, b->comm, sizeof(out->comm));
	out->pages = b->pages_out;
	out->lost = __atomic_load_n(&b->sh->lost, __ATOMIC_RELAXED);
	return 0;
}

TK_API void tk_appevent_session_free(struct tk_appevent_session *s)
{
	if (!s)
		return;
	if (s->running)
		tk_appevent_session_stop(s);
	for (size_t i = 0; i < s->nconns; i++)
		close(s->conns[i].fd);
	for (size_t i = 0; i < s->nbufs; i++) {
		munmap(s->bufs[i].sh, s->bufs[i].map_len);
		if (s->bufs[i].spool >= 0)
			close(s->bufs[i].spool);
		if (s->bufs[i].memfd >= 0)
			close(s->bufs[i].memfd);
	}
	if (s->pipe[0] >= 0) {
		close(s->pipe[0]);
		close(s->pipe[1]);
	}
	for (size_t i = 0; i < s->nfmts; i++) {
		free(s->fmts[i].system);
		free(s->fmts[i].text);
	}
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stopfd >= 0)
		close(s->stopfd);
	if (s->link[0])
		unlink(s->link);
	if (s->path[0])
		unlink(s->path);
	if (s->dir[0])
		rmdir(s->dir);
	pthread_mutex_destroy(&s->lock);
	free(s->conns);
	free(s->bufs);
	free(s->fmts);
	free(s->scratch);
	free(s);
}

/* ------------------------------------------------------------ the .dat */

/* The event formats section with the applications' formats added. */
static int formats_section(struct tk_appevent_session *s, struct tk_dat *dat, void **body,
			   uint64_t *len)
{
	const struct tk_dat_info *info = tk_dat_get_info(dat);
	struct tk_tracedata *td = tk_tracedata_new();
	const void *old = NULL;
	uint64_t old_len = 0;
	int r = 0;

	if (!td)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_dat_metadata(dat, TK_DAT_SECTION_EVENT_FORMATS, &old, &old_len) == 0)
		r = tk_tracedata_decode_dat_section(td, TK_DAT_SECTION_EVENT_FORMATS, old, old_len,
						    info->big_endian);
	for (size_t i = 0; i < s->nfmts && r == 0; i++)
		r = tk_tracedata_add_format(td, s->fmts[i].system, s->fmts[i].text,
					    strlen(s->fmts[i].text));
	if (r == 0)
		r = tk_tracedata_encode_dat_section(td, TK_DAT_SECTION_EVENT_FORMATS,
						    info->big_endian, body, len);
	tk_tracedata_free(td);
	return r;
}

/*
 * The saved command lines with a line for every application thread the
 * file does not name yet (a recording without the threads' kernel events
 * would print them as "<...>").
 */
static int cmdlines_section(struct tk_appevent_session *s, struct tk_dat *dat, void **body,
			    uint64_t *len)
{
	const struct tk_dat_info *info = tk_dat_get_info(dat);
	struct tk_tracedata *td = tk_tracedata_new();
	const void *old = NULL;
	uint64_t old_len = 0;
	struct tk_text text = {0};
	char *all = NULL;
	size_t size = 0;
	FILE *f;
	int r = 0;

	if (!td)
		return tk_fail(ENOMEM, "out of memory");
	if (tk_dat_metadata(dat, TK_DAT_SECTION_CMDLINES, &old, &old_len) == 0)
		r = tk_tracedata_decode_dat_section(td, TK_DAT_SECTION_CMDLINES, old, old_len,
						    info->big_endian);
	if (r == 0 && tk_tracedata_cmdlines(td, &text) < 0)
		text = (struct tk_text){"", 0};
	f = r == 0 ? open_memstream(&all, &size) : NULL;
	if (r == 0 && !f)
		r = tk_fail(ENOMEM, "out of memory");
	if (f) {
		fwrite(text.data, 1, (size_t)text.len, f);
		if (text.len && text.data[text.len - 1] != '\n')
			fputc('\n', f);
		for (size_t i = 0; i < s->nbufs; i++) {
			char key[24];
			int k = snprintf(key, sizeof(key), "%d ", (int)s->bufs[i].tid);
			bool known = false;

			/* A line "TID comm" at the start of the text or after a newline. */
			for (const char *p = text.data, *end = text.data + text.len;
			     p && p < end;) {
				if ((size_t)(end - p) >= (size_t)k && !memcmp(p, key, (size_t)k)) {
					known = true;
					break;
				}
				p = memchr(p, '\n', (size_t)(end - p));
				if (p)
					p++;
			}
			for (size_t j = 0; j < i && !known; j++)
				known = s->bufs[j].tid == s->bufs[i].tid;
			if (!known && s->bufs[i].comm[0])
				fprintf(f, "%d %s\n", (int)s->bufs[i].tid, s->bufs[i].comm);
		}
		if (fclose(f) != 0 || !all)
			r = tk_fail(ENOMEM, "out of memory");
	}
	if (r == 0)
		r = tk_tracedata_set_cmdlines(td, all, size);
	if (r == 0)
		r = tk_tracedata_encode_dat_section(td, TK_DAT_SECTION_CMDLINES, info->big_endian,
						    body, len);
	tk_tracedata_free(td);
	free(all);
	return r;
}

static int copy_buffer(struct tk_dat *dat, struct tk_dat_writer *w, size_t bi, uint32_t ncpu)
{
	const struct tk_dat_buffer *b = tk_dat_buffer_get(dat, bi);
	int r;

	/* A v7 buffer lists only the CPUs that had data: declare up to the highest id. */
	if (!ncpu) {
		ncpu = tk_dat_get_info(dat)->cpu_count;
		for (uint32_t i = 0; i < b->cpu_count; i++)
			if (b->cpus[i].cpu >= ncpu)
				ncpu = b->cpus[i].cpu + 1;
	}
	r = tk_dat_writer_begin_buffer(w, b->name, b->clock ? b->clock : "local",
				       b->page_format.page_size, ncpu);
	for (uint32_t i = 0; i < b->cpu_count && r == 0; i++) {
		struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(dat, bi, i);
		const void *page;
		int k;

		if (!rd)
			return -errno;
		r = tk_dat_writer_begin_cpu(w, b->cpus[i].cpu);
		while (r == 0 && (k = tk_dat_cpu_reader_next_page(rd, &page, NULL)) > 0)
			r = tk_dat_writer_write_pages(w, page, b->page_format.page_size);
		if (r == 0 && k < 0)
			r = k;
		if (r == 0)
			r = tk_dat_writer_end_cpu(w);
		tk_dat_cpu_reader_free(rd);
	}
	if (r == 0)
		r = tk_dat_writer_end_buffer(w);
	return r;
}

/*
 * @ncpu: CPUs the buffer declares: the application buffers, or in a v6
 * file (one CPU count for every buffer) the file's count.
 */
static int copy_spools(struct tk_appevent_session *s, struct tk_dat_writer *w, const char *clock,
		       uint32_t ncpu)
{
	const size_t cap = 64 * AE_PAGE_SIZE;
	uint8_t *batch = malloc(cap);
	int r;

	if (!batch)
		return tk_fail(ENOMEM, "out of memory");
	r = tk_dat_writer_begin_buffer(w, "user", clock, AE_PAGE_SIZE, ncpu);

	for (size_t i = 0; i < s->nbufs && r == 0; i++) {
		/* Up to the pages counted: a copy an overwriting writer tore may lie past them. */
		uint64_t off = 0, end = s->bufs[i].pages_out * AE_PAGE_SIZE;

		if (!end)
			continue;
		r = tk_dat_writer_begin_cpu(w, (uint32_t)i);
		while (r == 0 && off < end) {
			ssize_t n = pread(s->bufs[i].spool, batch,
					  end - off < cap ? end - off : cap, (off_t)off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				r = tk_fail(errno, "appevent spool: %s", strerror(errno));
			if (n <= 0)
				break;
			n -= n % AE_PAGE_SIZE;
			if (!n)
				break;
			r = tk_dat_writer_write_pages(w, batch, (uint64_t)n);
			off += (uint64_t)n;
		}
		if (r == 0)
			r = tk_dat_writer_end_cpu(w);
	}
	if (r == 0)
		r = tk_dat_writer_end_buffer(w);
	free(batch);
	return r;
}

TK_API int tk_appevent_session_write(struct tk_appevent_session *s, const char *path)
{
	struct tk_dat *dat;
	const struct tk_dat_info *info;
	struct tk_dat_writer *w = NULL;
	uint32_t v6_cpus;
	char *part = NULL;
	int r = 0;

	if (!s->stopped && (r = tk_appevent_session_stop(s)) < 0)
		return r;
	if (!s->nbufs && !s->nfmts)
		return 0;
	dat = tk_dat_open(path);
	if (!dat)
		return -errno;
	info = tk_dat_get_info(dat);
	if (asprintf(&part, "%s.tkpart", path) < 0) {
		part = NULL;
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	{
		TK_OPTS(tk_dat_writer_opts, wo, .version = info->version,
			.compression = info->compression, .big_endian = info->big_endian,
			.long_size = info->long_size, .page_size = info->page_size);

		w = tk_dat_writer_open(part, &wo);
	}
	if (!w) {
		r = -errno;
		goto out;
	}
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES && !r; id++) {
		const void *body;
		void *own = NULL;
		uint64_t len;

		if (id == TK_DAT_SECTION_EVENT_FORMATS) {
			r = formats_section(s, dat, &own, &len);
			body = own;
		} else if (id == TK_DAT_SECTION_CMDLINES) {
			r = cmdlines_section(s, dat, &own, &len);
			body = own;
		} else if (tk_dat_metadata(dat, id, &body, &len) < 0) {
			continue;
		}
		if (r == 0)
			r = tk_dat_writer_add_metadata(w, id, body, len);
		free(own);
	}
	for (size_t i = 0; i < tk_dat_option_count(dat) && !r; i++) {
		const struct tk_dat_option *o = tk_dat_option_get(dat, i);

		if (o->id == TK_DAT_OPTION_DONE || o->id == TK_DAT_OPTION_BUFFER ||
		    (o->id >= TK_DAT_SECTION_HEADER_INFO && o->id <= TK_DAT_OPTION_BUFFER_TEXT))
			continue;
		r = tk_dat_writer_add_option(w, o->id, o->data, o->size);
	}
	for (size_t i = 0; i < tk_dat_buffer_count(dat) && !r; i++)
		if (!tk_dat_buffer_get(dat, i)->latency_text && tk_dat_buffer_get(dat, i)->name[0])
			r = tk_dat_writer_declare_buffer(w, tk_dat_buffer_get(dat, i)->name);
	if (!r)
		r = tk_dat_writer_declare_buffer(w, "user");
	/* v6 has one CPU count for all buffers: the file's, which must hold ours. */
	v6_cpus = info->version == 6 ? info->cpu_count : 0;
	if (!r && v6_cpus && s->nbufs > v6_cpus)
		r = tk_fail(EINVAL,
			    "%s: a version 6 file holds at most %u application buffers (its CPU "
			    "count), not %zu: record version 7",
			    path, v6_cpus, s->nbufs);
	for (size_t i = 0; i < tk_dat_buffer_count(dat) && !r; i++)
		if (!tk_dat_buffer_get(dat, i)->latency_text)
			r = copy_buffer(dat, w, i, v6_cpus);
	if (!r)
		r = copy_spools(s, w, info->clock, v6_cpus ? v6_cpus : (uint32_t)s->nbufs);
	if (!r)
		r = tk_dat_writer_finish(w);
	if (!r && rename(part, path) < 0)
		r = tk_fail(errno, "%s: cannot rename to %s: %s", part, path, strerror(errno));
out:
	tk_dat_writer_close(w);
	if (r < 0 && part) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", tk_errmsg());
		unlink(part);
		r = tk_fail(-r, "%s", msg);
	}
	free(part);
	tk_dat_close(dat);
	return r;
}
