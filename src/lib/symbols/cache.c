// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * The build-id cache, in perf 6.1's layout, with its probe caches.
 *
 * Layout (DIR is --cache-dir, $TRACEKIT_CACHE_DIR or ~/.debug):
 *
 *	DIR/<abs path without leading '/'>/<bid>/elf      hard link (copy across fs)
 *	DIR/<abs path without leading '/'>/<bid>/debug    /usr/lib/debug/.build-id/xx/rest.debug
 *	DIR/<abs path without leading '/'>/<bid>/probes   probe cache, may be empty
 *	DIR/[kernel.kallsyms]/<bid>/kallsyms             copy of /proc/kallsyms
 *	DIR/[kernel.kcore]/<bid>/<stamp>/{kcore,kallsyms,modules}   no link
 *	DIR/.build-id/<bid[0:2]>/<bid[2:]>  ->  ../../<path without '/'>/<bid>
 *
 * The .build-id links are the index: every listing walks them (as perf
 * does), and the original path is the link target minus "../../" and
 * "/<bid>" (with a '/' put back unless it is a "[name]"). An entry is
 * valid when that path still has the build id (the kernel's is compared
 * with /sys/kernel/notes); perf's listings hide the others, and so do
 * ours unless asked for all.
 *
 * One build id, several paths (a copy of a binary): perf 6.1 keeps the
 * link on the first path that had the id and only makes the directory of
 * the next (with its elf, no probes: the probes of every path go through
 * the link, so the first path's probes file holds both paths' lines). We
 * do the same, so the trees are identical. Such a second directory is not
 * in the index, and perf --remove of the linked path leaves it with no
 * link at all, so what acts on the disk (stats, eviction, remove, gc) also
 * walks the tree for entry directories no link reaches: a directory named
 * by 32-40 hex digits holding an entry's file. Removing a path's entry
 * removes that directory only; when it was the linked one the link moves
 * to another path of the id (its probes with it), else the link goes.
 * gc removes directories of ids that have no link at all (neither perf nor
 * our lookups, both by build id, can reach them).
 *
 * Probes file: text lines. An entry is a marker line, '%' + "sdt_P:N=N"
 * for an SDT name or '#' + the user's probe spec, followed by one or more
 * uprobe_events definitions:
 *
 *	%sdt_tkdemo:start=start
 *	p:sdt_tkdemo/start /path/sdtdemo:0x1129(0x3012) arg1=%di:s32 arg2=%si:s64
 *
 * The offset is the unpadded hex file offset, the parenthesised one the
 * semaphore's (uprobe reference counter). perf reads lines into 256-byte
 * buffers, so longer lines would break it: we warn when writing one. We
 * rewrite a probes file whole, through a temporary file and rename(), so
 * a reader never sees half of it.
 *
 * SDT arguments "[-]N@OPERAND" become "argK=OPERAND':'TYPE" with x86
 * register names mapped to pt_regs names (%edi -> %di), memory operands
 * "OFF(%reg)" to "+OFF(%reg)", and immediates and other forms skipped
 * while still counting the position, which is what perf 6.1 writes (the
 * test compares our probes file with perf's for the same binaries).
 *
 * Beyond perf: each entry records its last use in a file of its own,
 *
 *	<entry dir>/.tk-use    empty; its mtime (ns) is the last add or lookup
 *
 * written (utimensat with the clock's time, not the file system's coarser
 * one) on add, on every symbol lookup through the entry, and when a query
 * matches one of its probes. The access time of the directory used to play
 * this part, but any reader moves it: on a relatime mount (the default)
 * the first readdir() after a change sets it, so "tracekit cache --stats",
 * a listing, "ls -R" or perf's own scans made every entry look just used
 * and eviction fell back to build-id order. Only this module writes the
 * stamp, and only for a real use; reading it is a stat(), which changes
 * nothing. An entry without a stamp (perf made it) counts as used when its
 * directory last changed. The dot keeps the stamp out of perf's way (perf
 * reads elf, debug, probes... by name) and out of the entry's size.
 * tk_cache_evict() removes entries in last-use order until the apparent
 * size of all entries fits; a hard-linked "elf" counts in full though it
 * may share its blocks with the original, which makes the limit safe.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <tracekit/cache.h>

#include "bytes.h"
#include "error.h"

#define PERF_MAX_CMDLEN 256
/* A probes file beyond this (plain or inflated) is not one we wrote. */
#define PROBES_MAX_BYTES (64u << 20)

struct tk_cache {
	char *dir;
	char kbid[TK_BUILD_ID_HEX_MAX];
	int kbid_state; /* 0 unknown, 1 known, -1 unavailable */
	bool gzip;	/* write probes.gz (tk_cache_set_gzip) */
};

/* Root of the distribution's debug files: $TRACEKIT_DEBUG_DIR, else /usr/lib/debug. */
static const char *debug_root(void)
{
	const char *d = getenv("TRACEKIT_DEBUG_DIR");

	return d && d[0] ? d : "/usr/lib/debug";
}

/* One cache entry found through its .build-id link. */
struct centry {
	char bid[TK_BUILD_ID_HEX_MAX];
	char *path;
	char *dir;
	bool valid;
	uint64_t bytes;
	int64_t last_use; /* ns since the epoch */
	bool linked;	  /* the .build-id link points here */
	bool kcore;	  /* a [kernel.kcore]/<bid>/<stamp> copy */
	bool gone;	  /* removed during this walk */
};

/* ---- small file-system helpers ---- */

static int fail_errno(int err, const char *what)
{
	return tk_fail(err, "%s: %s", what, strerror(err));
}

static int mkdir_p(const char *path)
{
	char *tmp = strdup(path);
	int r = 0;

	if (!tmp)
		return tk_fail(ENOMEM, "out of memory");
	for (char *p = tmp + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST) {
			r = fail_errno(errno, tmp);
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	free(tmp);
	return r;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

static int rm_rf(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return fail_errno(errno, path);
	return 0;
}

/* Remove empty directories from @path up to (not including) @stop. */
static void rmdir_parents(const char *path, const char *stop)
{
	char *tmp = strdup(path);
	size_t sl = strlen(stop);

	if (!tmp)
		return;
	for (;;) {
		char *slash = strrchr(tmp, '/');

		if (!slash || (size_t)(slash - tmp) <= sl)
			break;
		*slash = '\0';
		if (rmdir(tmp) < 0)
			break;
	}
	free(tmp);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Replace @path with @data through a temporary file and rename(). */
static int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp;
	int fd, r;

	if (asprintf(&tmp, "%s.tk%d", path, (int)getpid()) < 0)
		return tk_fail(ENOMEM, "out of memory");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		r = fail_errno(errno, tmp);
		free(tmp);
		return r;
	}
	r = write_all(fd, data, len);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		fail_errno(-r, path);
	}
	free(tmp);
	return r;
}

static int read_file(const char *path, char **data, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	int fd, r = 0;

	if (!buf)
		return tk_fail(ENOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(buf);
		return tk_fail(-r, "%s: %s", path, strerror(-r));
	}
	for (;;) {
		ssize_t got;

		if (n == cap) {
			char *nb = cap > SIZE_MAX / 4 ? NULL : realloc(buf, cap * 2 + 1);

			if (!nb) {
				r = tk_fail(ENOMEM, "%s: out of memory", path);
				break;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = fail_errno(errno, path);
			break;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (r) {
		free(buf);
		return r;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

static int copy_file(const char *src, const char *dst)
{
	struct stat st;
	size_t len;
	char *data;
	int r;

	if (stat(src, &st) < 0)
		return fail_errno(errno, src);
	r = read_file(src, &data, &len);
	if (r < 0)
		return r;
	r = write_file_atomic(dst, data, len, st.st_mode & 07777);
	free(data);
	return r;
}

/* Hard-link @src as @dst, or copy it when a link cannot be made. */
static int link_or_copy(const char *src, const char *dst)
{
	if (link(src, dst) == 0 || errno == EEXIST)
		return 0;
	return copy_file(src, dst);
}

#define USE_STAMP ".tk-use"

/*
 * Record a use of the entry in @dir: set its stamp's mtime to now, from
 * CLOCK_REALTIME so that uses a few microseconds apart stay ordered (the
 * file system's own "now" is only as fine as the kernel tick). Best effort:
 * a read-only cache still serves lookups.
 */
static void touch_use(const char *dir)
{
	struct timespec ts[2];
	char *stamp;
	int fd;

	if (asprintf(&stamp, "%s/" USE_STAMP, dir) < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[1] = ts[0];
	fd = open(stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		futimens(fd, ts);
		close(fd);
	}
	free(stamp);
}

/* Last use of the entry in @dir (ns): its stamp, else the directory's last change. */
static int64_t read_use(const char *dir)
{
	struct stat st;
	char *stamp;
	int r = -1;

	if (asprintf(&stamp, "%s/" USE_STAMP, dir) >= 0) {
		r = stat(stamp, &st);
		free(stamp);
	}
	if (r < 0 && lstat(dir, &st) < 0)
		return 0;
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static bool is_hex(const char *s, size_t min, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n >= min && n <= max;
}

/* ---- handle ---- */

static struct tk_cache *cache_open(const char *dir, bool create)
{
	struct tk_cache *c;
	char *abs;
	int r;

	if (!dir || !dir[0])
		dir = getenv("TRACEKIT_CACHE_DIR");
	if (!dir || !dir[0]) {
		const char *home = getenv("HOME");

		if (!home || !home[0]) {
			tk_fail(ENOENT,
				"no cache directory: set --cache-dir, TRACEKIT_CACHE_DIR or HOME");
			errno = ENOENT;
			return NULL;
		}
		if (asprintf(&abs, "%s/.debug", home) < 0)
			abs = NULL;
	} else {
		abs = strdup(dir);
	}
	c = calloc(1, sizeof(*c));
	if (!abs || !c) {
		free(abs);
		free(c);
		tk_fail(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (create) {
		r = mkdir_p(abs);
	} else {
		struct stat st;

		r = stat(abs, &st) == 0 && S_ISDIR(st.st_mode)
			    ? 0
			    : tk_fail(ENOENT, "%s: no such cache directory", abs);
	}
	if (r == 0) {
		/* Links and listings need an absolute, canonical root. */
		char *real = realpath(abs, NULL);

		if (!real) {
			r = fail_errno(errno, abs);
		} else {
			free(abs);
			abs = real;
		}
	}
	if (r < 0) {
		free(abs);
		free(c);
		errno = -r;
		return NULL;
	}
	c->dir = abs;
	return c;
}

TK_API struct tk_cache *tk_cache_open(const char *dir)
{
	return cache_open(dir, true);
}

TK_API struct tk_cache *tk_cache_open_existing(const char *dir)
{
	return cache_open(dir, false);
}

TK_API void tk_cache_close(struct tk_cache *cache)
{
	if (!cache)
		return;
	free(cache->dir);
	free(cache);
}

TK_API const char *tk_cache_dir(const struct tk_cache *cache)
{
	return cache->dir;
}

TK_API void tk_cache_set_gzip(struct tk_cache *cache, bool on)
{
	cache->gzip = on;
}

static const char *kernel_bid(struct tk_cache *c)
{
	if (!c->kbid_state) {
		uint8_t id[TK_BUILD_ID_MAX];
		int n = tk_elf_kernel_build_id(id, sizeof(id));

		c->kbid_state =
			n > 0 && tk_build_id_hex(id, (size_t)n, c->kbid, sizeof(c->kbid)) > 0 ? 1
											      : -1;
	}
	return c->kbid_state > 0 ? c->kbid : NULL;
}

static int file_build_id(const char *path, char *hex)
{
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf = tk_elf_open(path);
	int n;

	if (!elf)
		return -errno;
	n = tk_elf_build_id(elf, id, sizeof(id));
	tk_elf_close(elf);
	if (n < 0)
		return n;
	return tk_build_id_hex(id, (size_t)n, hex, TK_BUILD_ID_HEX_MAX);
}

/* ---- entries ---- */

static void centry_release(struct centry *e)
{
	free(e->path);
	free(e->dir);
}

/* Apparent size of an entry's files (its stamp and other dot files left out). */
static uint64_t dir_bytes(const char *dir)
{
	struct dirent *de;
	uint64_t total = 0;
	struct stat st;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		/* An old-style entry is the file itself. */
		return stat(dir, &st) == 0 ? (uint64_t)st.st_size : 0;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

/* Size, last use and (with @check) validity of an entry whose bid, path and dir are set. */
static void centry_fill(struct tk_cache *c, struct centry *e, bool check)
{
	e->bytes = dir_bytes(e->dir);
	e->last_use = read_use(e->dir);
	if (!check)
		return;
	if (!strcmp(e->path, "[kernel.kallsyms]") || !strcmp(e->path, "[kernel.kcore]")) {
		const char *k = kernel_bid(c);

		e->valid = k && !strcmp(k, e->bid);
	} else if (e->path[0] == '/') {
		char hex[TK_BUILD_ID_HEX_MAX];

		e->valid = file_build_id(e->path, hex) > 0 && !strcmp(hex, e->bid);
	}
}

/*
 * Fill @e from the link .build-id/@xx/@rest. Returns 1 for an entry, 0 for
 * something that is not one (skipped), negative on failure.
 */
static int centry_load(struct tk_cache *c, const char *xx, const char *rest, bool check,
		       struct centry *e)
{
	char *link = NULL, target[PATH_MAX];
	size_t tl, bl;
	ssize_t n;

	memset(e, 0, sizeof(*e));
	if (strlen(xx) != 2 || !is_hex(xx, 2, 2) || !is_hex(rest, 6, 38))
		return 0;
	snprintf(e->bid, sizeof(e->bid), "%s%s", xx, rest);
	if (asprintf(&link, "%s/.build-id/%s/%s", c->dir, xx, rest) < 0)
		return tk_fail(ENOMEM, "out of memory");
	n = readlink(link, target, sizeof(target) - 1);
	free(link);
	if (n < 0)
		return 0;
	target[n] = '\0';
	tl = (size_t)n;
	bl = strlen(e->bid);
	if (strncmp(target, "../../", 6) || tl < 6 + bl + 2 || target[tl - bl - 1] != '/' ||
	    strcmp(target + tl - bl, e->bid))
		return 0;
	target[tl - bl - 1] = '\0';
	if (target[6] == '[')
		e->path = strdup(target + 6);
	else if (asprintf(&e->path, "/%s", target + 6) < 0)
		e->path = NULL;
	if (!e->path || asprintf(&e->dir, "%s/%s/%s", c->dir, target + 6, e->bid) < 0) {
		free(e->path);
		e->path = NULL;
		return tk_fail(ENOMEM, "out of memory");
	}
	e->linked = true;
	centry_fill(c, e, check);
	return 1;
}

static int centry_cmp(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;
	int r = strcmp(x->bid, y->bid);

	/* The linked entry of a build id first, then the other paths, then kcore copies. */
	if (r)
		return r;
	if (x->linked != y->linked)
		return x->linked ? -1 : 1;
	if (x->kcore != y->kcore)
		return x->kcore ? 1 : -1;
	return strcmp(x->dir, y->dir);
}

struct cvec {
	struct centry *v;
	size_t n, cap;
	char **linked; /* sorted dirs of the linked entries, for the tree scan */
	size_t nlinked;
};

static struct centry *cvec_push(struct cvec *cv)
{
	if (cv->n == cv->cap) {
		size_t ncap = cv->cap ? 2 * cv->cap : 64;
		struct centry *nv = realloc(cv->v, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		cv->v = nv;
		cv->cap = ncap;
	}
	memset(&cv->v[cv->n], 0, sizeof(cv->v[0]));
	return &cv->v[cv->n];
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory holds one of the files an entry has (perf's, and our probes.gz). */
static bool has_entry_file(const char *dir, bool with_probes)
{
	static const char *const files[] = {"elf",  "debug",  "kallsyms",
					    "vdso", "probes", "probes.gz"};
	bool found = false;

	for (size_t k = 0; k < (with_probes ? 6u : 4u) && !found; k++) {
		struct stat st;
		char *f;

		if (asprintf(&f, "%s/%s", dir, files[k]) < 0)
			continue;
		found = lstat(f, &st) == 0;
		free(f);
	}
	return found;
}

/* Append an entry found on disk; @path and @dir are taken over. */
static int cvec_add_found(struct tk_cache *c, struct cvec *cv, const char *bid, char *path,
			  char *dir, bool kcore, bool check)
{
	struct centry *e = cvec_push(cv);

	if (!e || !path || !dir) {
		free(path);
		free(dir);
		return tk_fail(ENOMEM, "out of memory");
	}
	snprintf(e->bid, sizeof(e->bid), "%s", bid);
	e->path = path;
	e->dir = dir;
	e->kcore = kcore;
	centry_fill(c, e, check);
	cv->n++;
	return 0;
}

/* DIR/[kernel.kcore]/<bid>/<stamp>: one entry per stamp directory. */
static int scan_kcore(struct tk_cache *c, struct cvec *cv, const char *kdir, bool check)
{
	struct dirent *de;
	DIR *d = opendir(kdir);
	int r = 0;

	if (!d)
		return 0;
	while (r == 0 && (de = readdir(d))) {
		struct dirent *se;
		char *bdir;
		DIR *sd;

		if (!is_hex(de->d_name, 32, 40) || asprintf(&bdir, "%s/%s", kdir, de->d_name) < 0)
			continue;
		sd = opendir(bdir);
		while (sd && r == 0 && (se = readdir(sd))) {
			struct stat st;
			char *sdir;

			if (se->d_name[0] == '.' || asprintf(&sdir, "%s/%s", bdir, se->d_name) < 0)
				continue;
			if (lstat(sdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
				free(sdir);
				continue;
			}
			r = cvec_add_found(c, cv, de->d_name, strdup("[kernel.kcore]"), sdir, true,
					   check);
		}
		if (sd)
			closedir(sd);
		free(bdir);
	}
	closedir(d);
	return r;
}

/*
 * Walk the tree below the cache root for entry directories that no
 * .build-id link reaches: a second path with the same build id (perf
 * keeps the link on the first path and still makes the second path's
 * directory), an entry whose link is gone (perf --remove of the linked
 * path leaves the others), and the [kernel.kcore] copies, which have no
 * link at all. An entry directory is named by 32 to 40 hex digits and
 * holds one of an entry's files; the walk does not descend into it.
 */
static int scan_tree(struct tk_cache *c, struct cvec *cv, const char *rel, int depth, bool check)
{
	struct dirent *de;
	char *abs;
	DIR *d;
	int r = 0;

	if (asprintf(&abs, "%s%s%s", c->dir, *rel ? "/" : "", rel) < 0)
		return tk_fail(ENOMEM, "out of memory");
	d = opendir(abs);
	while (d && r == 0 && (de = readdir(d))) {
		char *crel, *cabs;
		struct stat st;

		/* ".build-id", ".", ".." and our stamps. */
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (asprintf(&crel, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0) {
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		if (asprintf(&cabs, "%s/%s", c->dir, crel) < 0) {
			free(crel);
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		if (lstat(cabs, &st) < 0 || !S_ISDIR(st.st_mode)) {
			/* Symbolic links are not followed: no loops, nothing outside the cache. */
		} else if (!depth && !strcmp(de->d_name, "[kernel.kcore]")) {
			r = scan_kcore(c, cv, cabs, check);
		} else if (depth && is_hex(de->d_name, 32, 40) && has_entry_file(cabs, true)) {
			if (!bsearch(&cabs, cv->linked, cv->nlinked, sizeof(char *), str_cmp)) {
				char *path;

				if (rel[0] == '[')
					path = strdup(rel);
				else if (asprintf(&path, "/%s", rel) < 0)
					path = NULL;
				r = cvec_add_found(c, cv, de->d_name, path, cabs, false, check);
				cabs = NULL;
			}
		} else if (depth < 64) {
			r = scan_tree(c, cv, crel, depth + 1, check);
		}
		free(crel);
		free(cabs);
	}
	if (d)
		closedir(d);
	free(abs);
	return r;
}

/*
 * Every entry of the cache, sorted by build id; free with centries_free().
 * The .build-id links are the index (what perf lists); @every adds the
 * entries on disk that no link reaches (see scan_tree()).
 */
static int centries_load(struct tk_cache *c, bool check, bool every, struct centry **out,
			 size_t *count)
{
	struct cvec cv = {0};
	struct dirent *de;
	char *idx;
	DIR *d;
	int r = 0;

	*out = NULL;
	*count = 0;
	if (asprintf(&idx, "%s/.build-id", c->dir) < 0)
		return tk_fail(ENOMEM, "out of memory");
	d = opendir(idx);
	if (!d && errno != ENOENT) {
		r = fail_errno(errno, idx);
		free(idx);
		return r;
	}
	while (d && r == 0 && (de = readdir(d))) {
		struct dirent *se;
		char *sub;
		DIR *sd;

		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&sub, "%s/%s", idx, de->d_name) < 0) {
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		sd = opendir(sub);
		free(sub);
		if (!sd)
			continue;
		while ((se = readdir(sd))) {
			struct centry *e;
			int lr;

			if (se->d_name[0] == '.')
				continue;
			e = cvec_push(&cv);
			if (!e) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			lr = centry_load(c, de->d_name, se->d_name, check, e);
			if (lr < 0) {
				r = lr;
				break;
			}
			cv.n += (size_t)lr;
		}
		closedir(sd);
	}
	if (d)
		closedir(d);
	free(idx);
	if (r == 0 && every) {
		cv.linked = malloc((cv.n ? cv.n : 1) * sizeof(char *));
		if (!cv.linked) {
			r = tk_fail(ENOMEM, "out of memory");
		} else {
			for (size_t i = 0; i < cv.n; i++)
				cv.linked[i] = cv.v[i].dir;
			cv.nlinked = cv.n;
			qsort(cv.linked, cv.nlinked, sizeof(char *), str_cmp);
			r = scan_tree(c, &cv, "", 0, check);
		}
		free(cv.linked);
	}
	if (r < 0) {
		for (size_t i = 0; i < cv.n; i++)
			centry_release(&cv.v[i]);
		free(cv.v);
		return r;
	}
	if (cv.n)
		qsort(cv.v, cv.n, sizeof(*cv.v), centry_cmp);
	*out = cv.v;
	*count = cv.n;
	return 0;
}

static void centries_free(struct centry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		centry_release(&v[i]);
	free(v);
}

static void centry_public(const struct centry *e, struct tk_cache_entry *pub)
{
	pub->build_id = e->bid;
	pub->path = e->path;
	pub->dir = e->dir;
	pub->valid = e->valid;
	pub->bytes = e->bytes;
	pub->last_use = e->last_use / 1000000000;
}

TK_API int tk_cache_for_each(struct tk_cache *cache, bool all, tk_cache_entry_fn fn, void *ctx)
{
	struct centry *v;
	size_t n;
	int r, visited = 0;

	r = centries_load(cache, true, all, &v, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct tk_cache_entry pub;

		if (!all && !v[i].valid)
			continue;
		centry_public(&v[i], &pub);
		visited++;
		if (fn) {
			r = fn(&pub, ctx);
			if (r < 0)
				break;
		}
	}
	centries_free(v, n);
	return r < 0 ? r : visited;
}

/* ---- probes files ---- */

struct pentry {
	char *marker; /* whole line with its '%' or '#' */
	char **defs;
	size_t ndefs;
};

struct pfile {
	struct pentry *v;
	size_t n;
};

static void pfile_release(struct pfile *pf)
{
	for (size_t i = 0; i < pf->n; i++) {
		free(pf->v[i].marker);
		for (size_t k = 0; k < pf->v[i].ndefs; k++)
			free(pf->v[i].defs[k]);
		free(pf->v[i].defs);
	}
	free(pf->v);
	pf->v = NULL;
	pf->n = 0;
}

static int pfile_add_entry(struct pfile *pf, const char *marker)
{
	struct pentry *nv = realloc(pf->v, (pf->n + 1) * sizeof(*nv));

	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	pf->v = nv;
	memset(&nv[pf->n], 0, sizeof(nv[0]));
	nv[pf->n].marker = strdup(marker);
	if (!nv[pf->n].marker)
		return tk_fail(ENOMEM, "out of memory");
	pf->n++;
	return 0;
}

static int pentry_add_def(struct pentry *e, const char *def)
{
	char **nd = realloc(e->defs, (e->ndefs + 1) * sizeof(*nd));

	if (!nd)
		return tk_fail(ENOMEM, "out of memory");
	e->defs = nd;
	nd[e->ndefs] = strdup(def);
	if (!nd[e->ndefs])
		return tk_fail(ENOMEM, "out of memory");
	e->ndefs++;
	return 0;
}

/* A definition for the entry added last. */
static int pfile_add_def(struct pfile *pf, const char *def)
{
	return pentry_add_def(&pf->v[pf->n - 1], def);
}

/* Remove entry @i of @pf, its marker and definitions freed. */
static void pfile_remove_at(struct pfile *pf, size_t i)
{
	free(pf->v[i].marker);
	for (size_t k = 0; k < pf->v[i].ndefs; k++)
		free(pf->v[i].defs[k]);
	free(pf->v[i].defs);
	memmove(&pf->v[i], &pf->v[i + 1], (pf->n - i - 1) * sizeof(pf->v[0]));
	pf->n--;
}

static bool is_gzip(const char *data, size_t len)
{
	return len >= 2 && (uint8_t)data[0] == 0x1f && (uint8_t)data[1] == 0x8b;
}

/*
 * Inflate a gzip image (one or more members) into a NUL-terminated buffer;
 * @name and the offset of the bad input byte go into the message.
 */
static int gunzip(const char *name, const char *in, size_t inlen, char **out, size_t *outlen)
{
	z_stream zs = {0};
	size_t cap = inlen * 4 + 256, n = 0;
	char *buf;
	int zr = Z_OK;

	if (inlen > PROBES_MAX_BYTES)
		return tk_fail(EFBIG, "%s: %zu bytes: too large for a probe cache", name, inlen);
	buf = malloc(cap + 1);
	if (!buf)
		return tk_fail(ENOMEM, "%s: out of memory", name);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return tk_fail(ENOMEM, "%s: cannot start zlib", name);
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	while (zs.avail_in) {
		if (n == cap) {
			char *nb;

			if (cap >= PROBES_MAX_BYTES) {
				inflateEnd(&zs);
				free(buf);
				return tk_fail_at(EFBIG, name, zs.total_in,
						  "probe cache inflates beyond %u bytes",
						  PROBES_MAX_BYTES);
			}
			cap = cap * 2 > PROBES_MAX_BYTES ? PROBES_MAX_BYTES : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				inflateEnd(&zs);
				free(buf);
				return tk_fail(ENOMEM, "%s: out of memory", name);
			}
			buf = nb;
		}
		zs.next_out = (Bytef *)buf + n;
		zs.avail_out = (uInt)(cap - n);
		zr = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (zr == Z_STREAM_END && zs.avail_in) {
			/* gzip allows concatenated members, as gzip -d does. */
			zr = inflateReset(&zs);
			continue;
		}
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			break;
		if (zr == Z_BUF_ERROR && zs.avail_out)
			break;
	}
	if (zr != Z_STREAM_END) {
		uint64_t at = zs.total_in;

		inflateEnd(&zs);
		free(buf);
		return tk_fail_at(EBADMSG, name, at, "corrupt or truncated gzip data");
	}
	inflateEnd(&zs);
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

static int gzip_buf(const char *name, const char *in, size_t inlen, char **out, size_t *outlen)
{
	z_stream zs = {0};
	uLong cap;
	char *buf;

	if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return tk_fail(ENOMEM, "%s: cannot start zlib", name);
	/* deflateBound() does not count the gzip header and trailer. */
	cap = deflateBound(&zs, (uLong)inlen) + 32;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return tk_fail(ENOMEM, "%s: out of memory", name);
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	zs.next_out = (Bytef *)buf;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return tk_fail(EIO, "%s: gzip failed", name);
	}
	*outlen = zs.total_out;
	deflateEnd(&zs);
	*out = buf;
	return 0;
}

/* Read one probes file (plain or gzip) into @pf, skipping markers already there. */
static int pfile_parse(const char *path, struct pfile *pf)
{
	char *data, *line, *save = NULL;
	bool skip = false;
	size_t len;
	int r;

	if (access(path, F_OK) < 0)
		return 0;
	r = read_file(path, &data, &len);
	if (r < 0)
		return r;
	if (is_gzip(data, len)) {
		char *plain = NULL;

		r = gunzip(path, data, len, &plain, &len);
		free(data);
		if (r < 0)
			return r;
		data = plain;
	}
	if (memchr(data, '\0', len)) {
		uint64_t at = (uint64_t)((char *)memchr(data, '\0', len) - data);

		free(data);
		return tk_fail_at(EBADMSG, path, at, "NUL byte in a probe cache");
	}
	for (line = strtok_r(data, "\n", &save); line && r == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '%') {
			skip = false;
			for (size_t i = 0; i < pf->n && !skip; i++)
				skip = !strcmp(pf->v[i].marker, line);
			if (!skip)
				r = pfile_add_entry(pf, line);
		} else if (pf->n && !skip) {
			r = pfile_add_def(pf, line);
		}
		/* Definitions before the first marker belong to no entry. */
	}
	free(data);
	return r;
}

/*
 * Parse the probes of an entry: "probes" (perf's, plain; gzip accepted too)
 * and "probes.gz" (ours when compression is on). A missing file is empty.
 */
static int pfile_load(const char *path, struct pfile *pf)
{
	char *gz;
	int r;

	pf->v = NULL;
	pf->n = 0;
	r = pfile_parse(path, pf);
	if (r == 0) {
		if (asprintf(&gz, "%s.gz", path) < 0)
			r = tk_fail(ENOMEM, "out of memory");
		else {
			r = pfile_parse(gz, pf);
			free(gz);
		}
	}
	if (r < 0)
		pfile_release(pf);
	return r;
}

/*
 * Write the probes of an entry. Plain: "probes", perf's file, and any
 * "probes.gz" goes. Gzip: "probes.gz" holds every entry and "probes" is
 * left empty, so perf (which cannot read gzip) sees an empty probe cache
 * rather than a file it fails to parse, and its own later writes to
 * "probes" are merged on our next load.
 */
static int pfile_store(const char *path, const struct pfile *pf, bool gz)
{
	size_t len = 0, pos = 0;
	char *buf;
	int r;

	for (size_t i = 0; i < pf->n; i++) {
		len += strlen(pf->v[i].marker) + 1;
		for (size_t k = 0; k < pf->v[i].ndefs; k++)
			len += strlen(pf->v[i].defs[k]) + 1;
	}
	buf = malloc(len + 1);
	if (!buf)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < pf->n; i++) {
		pos += (size_t)sprintf(buf + pos, "%s\n", pf->v[i].marker);
		for (size_t k = 0; k < pf->v[i].ndefs; k++) {
			if (strlen(pf->v[i].defs[k]) >= PERF_MAX_CMDLEN)
				tk_warn("%s: probe line longer than %d bytes: perf cannot read it",
					path, PERF_MAX_CMDLEN - 1);
			pos += (size_t)sprintf(buf + pos, "%s\n", pf->v[i].defs[k]);
		}
	}
	if (gz) {
		char *gzpath, *zbuf = NULL;
		size_t zlen = 0;

		if (asprintf(&gzpath, "%s.gz", path) < 0) {
			free(buf);
			return tk_fail(ENOMEM, "out of memory");
		}
		r = gzip_buf(gzpath, buf, pos, &zbuf, &zlen);
		if (r == 0) {
			r = write_file_atomic(gzpath, zbuf, zlen, 0644);
			free(zbuf);
		}
		if (r == 0)
			r = write_file_atomic(path, "", 0, 0644);
		free(gzpath);
	} else {
		char *gzpath;

		r = write_file_atomic(path, buf, pos, 0644);
		if (r == 0 && asprintf(&gzpath, "%s.gz", path) >= 0) {
			unlink(gzpath);
			free(gzpath);
		}
	}
	free(buf);
	return r;
}

/* "p:GROUP/EVENT rest" -> group and event (malloc'ed); false when malformed. */
static bool def_name(const char *def, char **group, char **event)
{
	const char *colon = strchr(def, ':'), *slash, *end;

	*group = *event = NULL;
	if (!colon)
		return false;
	end = colon + strcspn(colon, " ");
	slash = memchr(colon, '/', (size_t)(end - colon));
	if (!slash) {
		*group = strdup("uprobes");
		*event = strndup(colon + 1, (size_t)(end - colon - 1));
	} else {
		*group = strndup(colon + 1, (size_t)(slash - colon - 1));
		*event = strndup(slash + 1, (size_t)(end - slash - 1));
	}
	if (!*group || !*event || !**event) {
		free(*group);
		free(*event);
		*group = *event = NULL;
		return false;
	}
	return true;
}

/* ---- SDT argument conversion (x86) ---- */

static const char *const x86_regs[][2] = {
	{"rax", "ax"}, {"eax", "ax"}, {"ax", "ax"},  {"al", "ax"},  {"ah", "ax"},  {"rbx", "bx"},
	{"ebx", "bx"}, {"bx", "bx"},  {"bl", "bx"},  {"bh", "bx"},  {"rcx", "cx"}, {"ecx", "cx"},
	{"cx", "cx"},  {"cl", "cx"},  {"ch", "cx"},  {"rdx", "dx"}, {"edx", "dx"}, {"dx", "dx"},
	{"dl", "dx"},  {"dh", "dx"},  {"rsi", "si"}, {"esi", "si"}, {"si", "si"},  {"sil", "si"},
	{"rdi", "di"}, {"edi", "di"}, {"di", "di"},  {"dil", "di"}, {"rbp", "bp"}, {"ebp", "bp"},
	{"bp", "bp"},  {"bpl", "bp"}, {"rsp", "sp"}, {"esp", "sp"}, {"sp", "sp"},  {"spl", "sp"},
	{"rip", "ip"}, {"eip", "ip"},
};

/* pt_regs name of an x86 register ("r8d" -> "r8"), or NULL. */
static bool x86_reg(const char *name, size_t len, char *out, size_t cap)
{
	for (size_t i = 0; i < sizeof(x86_regs) / sizeof(x86_regs[0]); i++)
		if (strlen(x86_regs[i][0]) == len && !memcmp(name, x86_regs[i][0], len)) {
			snprintf(out, cap, "%s", x86_regs[i][1]);
			return true;
		}
	if (len >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
		size_t k = 1;
		unsigned v = 0;

		while (k < len && name[k] >= '0' && name[k] <= '9' && k < 3)
			v = v * 10 + (unsigned)(name[k++] - '0');
		if (v < 8 || v > 15)
			return false;
		if (k < len && !(k + 1 == len && strchr("dwb", name[k])))
			return false;
		snprintf(out, cap, "r%u", v);
		return true;
	}
	return false;
}

/* Convert one "N@OP" argument; returns false when it is skipped. */
static bool sdt_arg(const char *arg, size_t len, char *out, size_t cap)
{
	static const char *const stypes[] = {"s8", "s16", "s32", "s64"};
	static const char *const utypes[] = {"u8", "u16", "u32", "u64"};
	const char *at = memchr(arg, '@', len), *op = arg, *type = NULL;
	const char *paren, *close;
	char reg[8], off[24] = "";
	size_t oplen = len;

	if (at) {
		long sz = strtol(arg, NULL, 10);
		long a = sz < 0 ? -sz : sz;
		int idx = a == 1 ? 0 : a == 2 ? 1 : a == 4 ? 2 : a == 8 ? 3 : -1;

		if (idx >= 0)
			type = sz < 0 ? stypes[idx] : utypes[idx];
		op = at + 1;
		oplen = len - (size_t)(op - arg);
	}
	if (!oplen || op[0] == '$')
		return false;
	if (op[0] == '%') {
		if (!x86_reg(op + 1, oplen - 1, reg, sizeof(reg)))
			return false;
	} else {
		paren = memchr(op, '(', oplen);
		close = op + oplen - 1;
		if (!paren || *close != ')' || paren[1] != '%')
			return false;
		size_t ol = (size_t)(paren - op);

		if (ol >= sizeof(off) - 2)
			return false;
		for (size_t k = 0; k < ol; k++)
			if (!((op[k] >= '0' && op[k] <= '9') ||
			      (k == 0 && (op[k] == '-' || op[k] == '+'))))
				return false;
		if (!ol)
			snprintf(off, sizeof(off), "+0");
		else if (op[0] == '-' || op[0] == '+')
			snprintf(off, sizeof(off), "%.*s", (int)ol, op);
		else
			snprintf(off, sizeof(off), "+%.*s", (int)ol, op);
		if (!x86_reg(paren + 2, (size_t)(close - paren - 2), reg, sizeof(reg)))
			return false;
	}
	if (off[0])
		snprintf(out, cap, "%s(%%%s)%s%s", off, reg, type ? ":" : "", type ? type : "");
	else
		snprintf(out, cap, "%%%s%s%s", reg, type ? ":" : "", type ? type : "");
	return true;
}

/* The uprobe_events line of one SDT note of @path. */
static char *sdt_def(const struct tk_elf_sdt *s, const char *path)
{
	char *def = NULL, *next;
	const char *a = s->args;
	int k = 0;

	if (s->sem_offset) {
		if (asprintf(&def, "p:sdt_%s/%s %s:0x%" PRIx64 "(0x%" PRIx64 ")", s->provider,
			     s->name, path, s->offset, s->sem_offset) < 0)
			return NULL;
	} else if (asprintf(&def, "p:sdt_%s/%s %s:0x%" PRIx64, s->provider, s->name, path,
			    s->offset) < 0) {
		return NULL;
	}
	while (*a) {
		size_t len;
		char conv[64];

		a += strspn(a, " ");
		len = strcspn(a, " ");
		if (!len)
			break;
		k++;
		if (sdt_arg(a, len, conv, sizeof(conv))) {
			if (asprintf(&next, "%s arg%d=%s", def, k, conv) < 0) {
				free(def);
				return NULL;
			}
			free(def);
			def = next;
		}
		a += len;
	}
	return def;
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* Add (replacing) one entry to @pf; takes ownership of nothing. */
static int pfile_replace(struct pfile *pf, const char *marker, char *const *defs, size_t ndefs)
{
	char *g = NULL, *e = NULL;
	int r;

	def_name(defs[0], &g, &e);
	for (size_t i = 0; i < pf->n;) {
		char *og = NULL, *oe = NULL;
		bool same = !strcmp(pf->v[i].marker, marker);

		if (!same && pf->v[i].ndefs && g && def_name(pf->v[i].defs[0], &og, &oe))
			same = !strcmp(og, g) && !strcmp(oe, e);
		free(og);
		free(oe);
		if (same)
			pfile_remove_at(pf, i);
		else
			i++;
	}
	free(g);
	free(e);
	r = pfile_add_entry(pf, marker);
	for (size_t k = 0; k < ndefs && r == 0; k++)
		r = pfile_add_def(pf, defs[k]);
	return r;
}

/* Whether the definition "p:GROUP/EVENT PATH:0xOFF ..." probes @path. */
static bool def_on_path(const char *def, const char *path)
{
	const char *sp = strchr(def, ' ');
	size_t pl = strlen(path);

	return sp && !strncmp(sp + 1, path, pl) && sp[1 + pl] == ':';
}

/* Drop the definitions on @path; entries left without one go. Returns whether it changed. */
static bool pfile_drop_path(struct pfile *pf, const char *path)
{
	bool changed = false;

	for (size_t i = 0; i < pf->n;) {
		struct pentry *e = &pf->v[i];
		size_t keep = 0;

		for (size_t k = 0; k < e->ndefs; k++) {
			if (def_on_path(e->defs[k], path)) {
				free(e->defs[k]);
				changed = true;
			} else {
				e->defs[keep++] = e->defs[k];
			}
		}
		e->ndefs = keep;
		if (keep)
			i++;
		else
			pfile_remove_at(pf, i);
	}
	return changed;
}

/* Add @src's entries to @dst: new markers whole, known ones by their missing lines. */
static int pfile_merge(struct pfile *dst, const struct pfile *src)
{
	int r = 0;

	for (size_t i = 0; i < src->n && r == 0; i++) {
		size_t at = dst->n;

		for (size_t k = 0; k < dst->n && at == dst->n; k++)
			if (!strcmp(dst->v[k].marker, src->v[i].marker))
				at = k;
		if (at == dst->n)
			r = pfile_add_entry(dst, src->v[i].marker);
		for (size_t d = 0; d < src->v[i].ndefs && r == 0; d++) {
			struct pentry *e = &dst->v[at];
			bool have = false;

			for (size_t k = 0; k < e->ndefs && !have; k++)
				have = !strcmp(e->defs[k], src->v[i].defs[d]);
			if (!have)
				r = pentry_add_def(e, src->v[i].defs[d]);
		}
	}
	return r;
}

/*
 * Put the SDT entry @marker with this path's lines @defs into @pf. Lines
 * of other paths with the same build id under that name stay (perf writes
 * every path's probes through the link). perf keeps an entry's lines in a
 * string list, so they are sorted and unique.
 */
static int sdt_entry_put(struct pfile *pf, const char *marker, const char *path, char *const *defs,
			 size_t nd)
{
	char **kept = NULL, **all = NULL;
	size_t nk = 0, nu = 0;
	int r = 0;

	for (size_t e = 0; e < pf->n; e++) {
		if (strcmp(pf->v[e].marker, marker))
			continue;
		/* Copies: pfile_replace() frees the entry they come from. */
		kept = calloc(pf->v[e].ndefs ? pf->v[e].ndefs : 1, sizeof(*kept));
		if (!kept)
			return tk_fail(ENOMEM, "out of memory");
		for (size_t k = 0; k < pf->v[e].ndefs && r == 0; k++)
			if (!def_on_path(pf->v[e].defs[k], path) &&
			    !(kept[nk++] = strdup(pf->v[e].defs[k])))
				r = tk_fail(ENOMEM, "out of memory");
		break;
	}
	all = r == 0 ? calloc(nk + nd + 1, sizeof(*all)) : NULL;
	if (r == 0 && !all)
		r = tk_fail(ENOMEM, "out of memory");
	if (r == 0) {
		for (size_t k = 0; k < nk; k++)
			all[k] = kept[k];
		for (size_t k = 0; k < nd; k++)
			all[nk + k] = defs[k];
		qsort(all, nk + nd, sizeof(*all), str_cmp);
		for (size_t k = 0; k < nk + nd; k++)
			if (!nu || strcmp(all[nu - 1], all[k]))
				all[nu++] = all[k];
		r = pfile_replace(pf, marker, all, nu);
	}
	for (size_t k = 0; k < nk; k++)
		free(kept[k]);
	free(kept);
	free(all);
	return r;
}

static int write_sdt_probes(const char *probes, const char *path, struct tk_elf *elf, bool gz)
{
	const struct tk_elf_sdt *notes;
	struct pfile pf;
	size_t n;
	bool *done = NULL;
	char **defs = NULL;
	int r, entries = 0;

	r = tk_elf_sdt_notes(elf, &notes, &n);
	if (r < 0)
		return r;
	r = pfile_load(probes, &pf);
	if (r < 0)
		return r;
	done = calloc(n ? n : 1, sizeof(*done));
	defs = calloc(n ? n : 1, sizeof(*defs));
	if (!done || !defs) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		size_t nd = 0;
		char *marker;

		if (done[i])
			continue;
		if (!name_ok(notes[i].provider) || !name_ok(notes[i].name)) {
			tk_warn("%s: SDT probe %s:%s has a name tracefs refuses; skipped", path,
				notes[i].provider, notes[i].name);
			continue;
		}
		for (size_t k = i; k < n; k++) {
			if (done[k] || strcmp(notes[k].provider, notes[i].provider) ||
			    strcmp(notes[k].name, notes[i].name))
				continue;
			done[k] = true;
			defs[nd] = sdt_def(&notes[k], path);
			if (!defs[nd]) {
				r = tk_fail(ENOMEM, "out of memory");
				break;
			}
			nd++;
		}
		if (r == 0 && asprintf(&marker, "%%sdt_%s:%s=%s", notes[i].provider, notes[i].name,
				       notes[i].name) < 0)
			r = tk_fail(ENOMEM, "out of memory");
		if (r == 0) {
			r = sdt_entry_put(&pf, marker, path, defs, nd);
			free(marker);
			entries++;
		}
		for (size_t k = 0; k < nd; k++) {
			free(defs[k]);
			defs[k] = NULL;
		}
	}
	if (r == 0)
		r = pfile_store(probes, &pf, gz);
out:
	free(done);
	free(defs);
	pfile_release(&pf);
	return r < 0 ? r : entries;
}

/* Directory of an entry: DIR/<path without '/'>/<bid>. */
static char *entry_dir(struct tk_cache *c, const char *path, const char *bid)
{
	char *d;

	while (*path == '/')
		path++;
	return asprintf(&d, "%s/%s/%s", c->dir, path, bid) < 0 ? NULL : d;
}

/*
 * Point .build-id/xx/rest at the entry of @path. Without @force an existing
 * link to another entry directory stays: perf 6.1 keeps the first path that
 * had a build id ("build <id> already linked to ...") and only makes the
 * directory of the next one. A dangling link, or one to a pre-2016 entry
 * (the file itself), is replaced. The new link replaces the old by rename(),
 * so a reader never finds the build id missing.
 */
static int make_link(struct tk_cache *c, const char *path, const char *bid, bool force)
{
	char *sub = NULL, *link = NULL, *target = NULL, *tmp = NULL, cur[PATH_MAX];
	struct stat st;
	ssize_t n;
	int r = 0;

	while (*path == '/')
		path++;
	if (asprintf(&sub, "%s/.build-id/%.2s", c->dir, bid) < 0 ||
	    asprintf(&link, "%s/%s", sub, bid + 2) < 0 ||
	    asprintf(&target, "../../%s/%s", path, bid) < 0 ||
	    asprintf(&tmp, "%s.tk%d", link, (int)getpid()) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = mkdir_p(sub);
	if (r < 0)
		goto out;
	n = readlink(link, cur, sizeof(cur) - 1);
	if (n >= 0) {
		cur[n] = '\0';
		if (!strcmp(cur, target))
			goto out;
		if (!force && stat(link, &st) == 0 && S_ISDIR(st.st_mode))
			goto out;
	}
	unlink(tmp);
	if (symlink(target, tmp) < 0 || rename(tmp, link) < 0) {
		r = fail_errno(errno, link);
		unlink(tmp);
	}
out:
	free(sub);
	free(link);
	free(target);
	free(tmp);
	return r;
}

/*
 * The directory whose "probes" serves build id @bid: the one its link
 * points to, as perf writes every path's probes through the link; @own
 * when there is no usable link. Returns a malloc'ed path.
 */
static char *probes_file(struct tk_cache *c, const char *bid, const char *own)
{
	char *link, *dir = NULL, *f = NULL;
	struct stat st;

	if (asprintf(&link, "%s/.build-id/%.2s/%s", c->dir, bid, bid + 2) >= 0) {
		dir = realpath(link, NULL);
		free(link);
	}
	if (dir && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
		free(dir);
		dir = NULL;
	}
	if (asprintf(&f, "%s/probes", dir ? dir : own) < 0)
		f = NULL;
	free(dir);
	return f;
}

/*
 * A symbol table of @kind that is there but unreadable (outside the file,
 * bad names); tk_errmsg() says how.
 */
static bool table_broken(struct tk_elf *elf, enum tk_elf_symtab_kind kind)
{
	const struct tk_elf_symbol *syms;
	size_t n;
	int r = tk_elf_symbols(elf, kind, &syms, &n);

	return r < 0 && r != -ENOENT;
}

/* Create the entry directory with its elf (and debug) file; returns the dir. */
static int add_files(struct tk_cache *c, const char *abs, const char *bid, char **dirp)
{
	char *dir = entry_dir(c, abs, bid), *elfp = NULL, *dbg = NULL, *dbgsrc = NULL;
	struct stat st;
	int r;

	*dirp = NULL;
	if (!dir)
		return tk_fail(ENOMEM, "out of memory");
	/* A pre-2016 cache has the entry as a file: replace it, as perf does. */
	if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		unlink(dir);
	r = mkdir_p(dir);
	if (r < 0)
		goto out;
	if (asprintf(&elfp, "%s/elf", dir) < 0 || asprintf(&dbg, "%s/debug", dir) < 0 ||
	    asprintf(&dbgsrc, "%s/.build-id/%.2s/%s.debug", debug_root(), bid, bid + 2) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = link_or_copy(abs, elfp);
	if (r < 0)
		goto out;
	if (access(dbgsrc, R_OK) == 0)
		link_or_copy(dbgsrc, dbg); /* debug info is a bonus; failing it is not fatal */
	touch_use(dir);
	*dirp = dir;
	dir = NULL;
out:
	free(dir);
	free(elfp);
	free(dbg);
	free(dbgsrc);
	return r;
}

TK_API int tk_cache_add(struct tk_cache *cache, const char *path, char *bid_out)
{
	char bid[TK_BUILD_ID_HEX_MAX], *abs, *dir = NULL, *probes = NULL;
	uint8_t id[TK_BUILD_ID_MAX];
	struct tk_elf *elf;
	int n, r;

	abs = realpath(path, NULL);
	if (!abs)
		return fail_errno(errno, path);
	elf = tk_elf_open(abs);
	if (!elf) {
		r = -errno;
		goto out;
	}
	n = tk_elf_build_id(elf, id, sizeof(id));
	if (n < 0) {
		r = n;
		goto out;
	}
	if (n < 16) {
		r = tk_fail(EINVAL,
			    "%s: build id of %d bytes is too short for the cache (16 minimum)", abs,
			    n);
		goto out;
	}
	tk_build_id_hex(id, (size_t)n, bid, sizeof(bid));
	/*
	 * The entry needs the build id and the SDT notes, which are sound; a
	 * broken symbol table only costs the symbols of what is cached. Cache
	 * it, but say so now rather than as [unknown] frames in a report.
	 */
	for (int k = TK_ELF_SYMTAB; k <= TK_ELF_DYNSYM; k++) {
		if (table_broken(elf, (enum tk_elf_symtab_kind)k))
			tk_warn("%s; cached for its build id and probes, not for those symbols",
				tk_errmsg());
	}
	r = add_files(cache, abs, bid, &dir);
	if (r < 0)
		goto out;
	r = make_link(cache, abs, bid, false);
	if (r < 0)
		goto out;
	probes = probes_file(cache, bid, dir);
	if (!probes) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = write_sdt_probes(probes, abs, elf, cache->gzip);
	if (r >= 0 && bid_out)
		memcpy(bid_out, bid, sizeof(bid));
out:
	tk_elf_close(elf);
	free(abs);
	free(dir);
	free(probes);
	return r;
}

static void sanitize(char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			*s = '_';
}

TK_API int tk_cache_add_probe(struct tk_cache *cache, const char *path, const char *spec)
{
	char bid[TK_BUILD_ID_HEX_MAX], *abs = NULL, *dir = NULL, *probes = NULL;
	char *s = NULL, *group = NULL, *event = NULL, *func, *args, *def = NULL, *marker = NULL;
	const struct tk_elf_symbol *syms;
	struct tk_elf *elf = NULL;
	uint64_t addr = 0, plus = 0, off;
	bool ret = false, found = false, named = false;
	struct pfile pf = {0};
	size_t n;
	int r;

	r = tk_cache_add(cache, path, bid);
	if (r < 0)
		return r;
	abs = realpath(path, NULL);
	s = strdup(spec);
	if (!abs || !s) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	/* Split "[[GROUP:]EVENT=]FUNC[+OFF][%return] ARGS". */
	func = s + strspn(s, " ");
	args = func + strcspn(func, " ");
	if (*args)
		*args++ = '\0';
	args += strspn(args, " ");
	char *eq = strchr(func, '=');

	if (eq) {
		char *colon;

		*eq = '\0';
		colon = strchr(func, ':');
		if (colon) {
			*colon = '\0';
			group = strdup(func);
			event = strdup(colon + 1);
		} else {
			event = strdup(func);
		}
		named = true;
		func = eq + 1;
	}
	char *pct = strstr(func, "%return");

	if (pct) {
		if (strcmp(pct, "%return")) {
			r = tk_fail(EINVAL, "probe spec '%s': text after %%return", spec);
			goto out;
		}
		*pct = '\0';
		ret = true;
	}
	char *plusp = strchr(func, '+');

	if (plusp) {
		char *end;

		*plusp = '\0';
		errno = 0;
		plus = strtoull(plusp + 1, &end, 0);
		if (errno || *end || end == plusp + 1) {
			r = tk_fail(EINVAL, "probe spec '%s': bad offset", spec);
			goto out;
		}
	}
	if (!name_ok(func) || (event && !name_ok(event)) || (group && !name_ok(group))) {
		r = tk_fail(EINVAL,
			    "probe spec '%s': want [[GROUP:]EVENT=]FUNC[+OFF][%%return] [ARGS]",
			    spec);
		goto out;
	}
	if (!group) {
		const char *base = strrchr(abs, '/') ? strrchr(abs, '/') + 1 : abs;

		if (asprintf(&group, "probe_%s", base) < 0)
			group = NULL;
		else
			sanitize(group);
	}
	if (!event)
		event = strdup(func);
	if (!group || !event) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	elf = tk_elf_open(abs);
	if (!elf) {
		r = -errno;
		goto out;
	}
	r = tk_elf_symbols(elf, TK_ELF_ANY, &syms, &n);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n && !found; i++)
		if ((syms[i].type == 2 /* STT_FUNC */ || syms[i].type == 10 /* IFUNC */) &&
		    syms[i].shndx && !strcmp(syms[i].name, func)) {
			addr = syms[i].value;
			found = true;
		}
	if (!found) {
		r = tk_fail(ENOENT, "%s: no function '%s'", abs, func);
		goto out;
	}
	r = tk_elf_vaddr_to_offset(elf, addr + plus, &off);
	if (r < 0)
		goto out;
	if (asprintf(&def, "%c:%s/%s%s %s:0x%" PRIx64 "%s%s", ret ? 'r' : 'p', group, event,
		     ret ? "__return" : "", abs, off, *args ? " " : "", args) < 0 ||
	    asprintf(&marker, "#%s%s%s%s%s%s%s%s%s", named ? group : "", named ? ":" : "",
		     named ? event : "", named ? "=" : "", func, plus ? "+" : "",
		     plus ? plusp + 1 : "", ret ? "%return" : "", "") < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (*args) {
		char *m2;

		if (asprintf(&m2, "%s %s", marker, args) < 0) {
			r = tk_fail(ENOMEM, "out of memory");
			goto out;
		}
		free(marker);
		marker = m2;
	}
	dir = entry_dir(cache, abs, bid);
	probes = dir ? probes_file(cache, bid, dir) : NULL;
	if (!probes) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = pfile_load(probes, &pf);
	if (r == 0)
		r = pfile_replace(&pf, marker, &def, 1);
	if (r == 0)
		r = pfile_store(probes, &pf, cache->gzip);
out:
	pfile_release(&pf);
	tk_elf_close(elf);
	free(abs);
	free(dir);
	free(probes);
	free(s);
	free(group);
	free(event);
	free(def);
	free(marker);
	return r;
}

TK_API int tk_cache_add_kernel(struct tk_cache *cache, char *bid_out)
{
	const char *bid = kernel_bid(cache);
	char *dir = NULL, *ks = NULL, *probes = NULL;
	int r;

	if (!bid)
		return tk_fail(ENOENT, "/sys/kernel/notes: no kernel build id");
	dir = entry_dir(cache, "[kernel.kallsyms]", bid);
	if (!dir || asprintf(&ks, "%s/kallsyms", dir) < 0 ||
	    asprintf(&probes, "%s/probes", dir) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = mkdir_p(dir);
	if (r == 0)
		r = copy_file("/proc/kallsyms", ks);
	if (r == 0 && access(probes, F_OK) < 0)
		r = write_file_atomic(probes, "", 0, 0644);
	if (r == 0)
		r = make_link(cache, "[kernel.kallsyms]", bid, false);
	if (r == 0) {
		touch_use(dir);
		if (bid_out)
			memcpy(bid_out, bid, TK_BUILD_ID_HEX_MAX);
	}
out:
	free(dir);
	free(ks);
	free(probes);
	return r;
}

/* Load, change and store the probes file @probes; @fn returns whether it changed it. */
static int pfile_update(struct tk_cache *c, const char *probes,
			int (*fn)(struct pfile *pf, const void *arg), const void *arg)
{
	struct pfile pf;
	int r;

	r = pfile_load(probes, &pf);
	if (r == 0) {
		r = fn(&pf, arg);
		if (r > 0)
			r = pfile_store(probes, &pf, c->gzip);
	}
	pfile_release(&pf);
	return r < 0 ? r : 0;
}

static int drop_path_fn(struct pfile *pf, const void *path)
{
	return pfile_drop_path(pf, path);
}

static int merge_fn(struct pfile *pf, const void *src)
{
	const struct pfile *from = src;
	int r;

	if (!from->n)
		return 0;
	r = pfile_merge(pf, from);
	return r < 0 ? r : 1;
}

/*
 * The entry that takes over the .build-id link when the linked @e goes:
 * the most recently used other path with the same build id that still has
 * its file, or NULL.
 */
static struct centry *link_heir(struct centry *v, size_t n, const struct centry *e)
{
	struct centry *best = NULL;

	for (size_t i = 0; i < n; i++) {
		struct centry *o = &v[i];

		if (o == e || o->gone || o->kcore || o->linked || strcmp(o->bid, e->bid) ||
		    !has_entry_file(o->dir, false))
			continue;
		if (!best || o->last_use > best->last_use)
			best = o;
	}
	return best;
}

/*
 * Remove entry @e of @v and keep the rest consistent, so that nothing is
 * left that no link reaches: the link of a linked entry moves to another
 * path with the same build id when there is one (with the probes the
 * removed directory held for the other paths), else it goes; a second
 * path's lines leave the shared probes file. kcore copies have no link.
 */
static int drop_entry(struct tk_cache *c, struct centry *v, size_t n, struct centry *e)
{
	struct centry *heir = NULL;
	struct pfile carry = {0};
	char *link = NULL, *probes = NULL;
	int r = 0;

	if (e->kcore) {
		/* Nothing links a kcore copy. */
	} else if (e->linked) {
		heir = link_heir(v, n, e);
		if (heir && asprintf(&probes, "%s/probes", e->dir) >= 0) {
			r = pfile_load(probes, &carry);
			if (r == 0)
				pfile_drop_path(&carry, e->path);
			free(probes);
			probes = NULL;
		}
	} else {
		for (size_t i = 0; i < n && !probes; i++)
			if (v[i].linked && !v[i].gone && !strcmp(v[i].bid, e->bid) &&
			    asprintf(&probes, "%s/probes", v[i].dir) < 0)
				probes = NULL;
		if (probes)
			r = pfile_update(c, probes, drop_path_fn, e->path);
	}
	if (r == 0)
		r = rm_rf(e->dir);
	if (r < 0)
		goto out;
	rmdir_parents(e->dir, c->dir);
	e->gone = true;
	if (!e->linked)
		goto out;
	e->linked = false;
	if (heir) {
		r = make_link(c, heir->path, heir->bid, true);
		if (r == 0 && asprintf(&probes, "%s/probes", heir->dir) >= 0)
			r = pfile_update(c, probes, merge_fn, &carry);
		heir->linked = r == 0;
	} else if (asprintf(&link, "%s/.build-id/%.2s/%s", c->dir, e->bid, e->bid + 2) >= 0) {
		unlink(link);
		rmdir_parents(link, c->dir);
	}
out:
	pfile_release(&carry);
	free(probes);
	free(link);
	return r;
}

TK_API int tk_cache_remove(struct tk_cache *cache, const char *what)
{
	char bid[TK_BUILD_ID_HEX_MAX] = "", *abs = NULL;
	const char *full = NULL;
	struct centry *v, *own = NULL;
	size_t n;
	int r, ids = 0, removed = 0;

	if (is_hex(what, 8, 40) && access(what, F_OK) < 0) {
		snprintf(bid, sizeof(bid), "%s", what);
	} else {
		r = file_build_id(what, bid);
		if (r < 0)
			return r;
		abs = realpath(what, NULL);
	}
	r = centries_load(cache, false, true, &v, &n);
	if (r < 0) {
		free(abs);
		return r;
	}
	/* Sorted by build id: count the distinct ids the prefix matches. */
	for (size_t i = 0; i < n; i++)
		if (!strncmp(v[i].bid, bid, strlen(bid)) && (!full || strcmp(full, v[i].bid))) {
			full = v[i].bid;
			ids++;
		}
	for (size_t i = 0; i < n && abs && !own; i++)
		if (!v[i].kcore && full && !strcmp(v[i].bid, full) && !strcmp(v[i].path, abs))
			own = &v[i];
	if (!ids) {
		r = tk_fail(ENOENT, "%s: not in the cache %s", what, cache->dir);
	} else if (ids > 1) {
		r = tk_fail(EINVAL, "%s: build id prefix matches %d entries", what, ids);
	} else if (own) {
		/* That path's entry; other paths with the same build id stay. */
		r = drop_entry(cache, v, n, own);
		removed = r == 0;
	} else {
		/* A build id, or a file cached only under other paths: all of that id. */
		for (int pass = 0; pass < 2 && r == 0; pass++) {
			for (size_t i = 0; i < n && r == 0; i++) {
				if (strcmp(v[i].bid, full) || v[i].gone ||
				    v[i].linked != (pass == 1))
					continue;
				r = drop_entry(cache, v, n, &v[i]);
				removed += r == 0;
			}
		}
	}
	centries_free(v, n);
	free(abs);
	return r < 0 ? r : removed;
}

/* ---- queries ---- */

struct query {
	char *buf;
	const char *group; /* NULL: any */
	const char *event; /* NULL: any */
	const char *path;
	const char *bid;
};

static int query_parse(const char *text, struct query *q)
{
	char *s, *p;

	memset(q, 0, sizeof(*q));
	if (!text)
		text = "";
	q->buf = s = strdup(text[0] == '%' ? text + 1 : text);
	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	p = strrchr(s, '#');
	if (p) {
		*p = '\0';
		q->bid = p + 1;
		if (!is_hex(q->bid, 1, 40)) {
			free(s);
			return tk_fail(EINVAL, "query '%s': build id must be lowercase hex", text);
		}
	}
	p = strchr(s, '@');
	if (p) {
		*p = '\0';
		q->path = p + 1;
	}
	p = strpbrk(s, ":/");
	if (p) {
		*p = '\0';
		q->group = s;
		q->event = p + 1;
	} else if (*s) {
		q->event = s;
	}
	if (q->group && !*q->group)
		q->group = NULL;
	if (q->event && !*q->event)
		q->event = NULL;
	return 0;
}

static bool query_entry(const struct query *q, const struct centry *e)
{
	if (q->bid && strncmp(e->bid, q->bid, strlen(q->bid)))
		return false;
	if (q->path) {
		const char *base = strrchr(e->path, '/');

		if (fnmatch(q->path, e->path, 0) && (!base || fnmatch(q->path, base + 1, 0)))
			return false;
	}
	return true;
}

static bool query_probe(const struct query *q, const char *spec, const char *group,
			const char *event)
{
	if (q->group && fnmatch(q->group, group, 0)) {
		if (strncmp(group, "sdt_", 4) || fnmatch(q->group, group + 4, 0))
			return false;
	}
	if (q->event && fnmatch(q->event, event, 0)) {
		/* Unnamed user probes are known by their spec ("-d work" in perf). */
		if (q->group || fnmatch(q->event, spec, 0))
			return false;
	}
	return true;
}

/*
 * Walk the probes of the linked entries of @v matching @q; @del removes the
 * matching probes from their files instead of (also) calling @fn; @use
 * marks the entries where probes matched as used (a lookup, not a listing).
 */
static int walk_entries(struct tk_cache *c, const struct query *qp, struct centry *v, size_t n,
			bool all, bool del, bool use, tk_cache_probe_fn fn, void *ctx)
{
	int r = 0, hits = 0;

	for (size_t i = 0; i < n && r >= 0; i++) {
		struct tk_cache_entry pub;
		struct pfile pf;
		char *probes;
		bool changed = false, matched = false;

		if (!v[i].linked || (!all && !v[i].valid) || !query_entry(qp, &v[i]))
			continue;
		if (asprintf(&probes, "%s/probes", v[i].dir) < 0) {
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		r = pfile_load(probes, &pf);
		if (r < 0) {
			free(probes);
			break;
		}
		centry_public(&v[i], &pub);
		for (size_t k = 0; k < pf.n && r >= 0;) {
			struct pentry *pe = &pf.v[k];
			char *g = NULL, *ev = NULL;
			struct tk_cache_probe p;

			if (!pe->ndefs || !def_name(pe->defs[0], &g, &ev)) {
				k++;
				continue;
			}
			if (!query_probe(qp, pe->marker + 1, g, ev)) {
				free(g);
				free(ev);
				k++;
				continue;
			}
			hits++;
			matched = true;
			p.entry = &pub;
			p.spec = pe->marker + 1;
			p.sdt = pe->marker[0] == '%';
			p.group = g;
			p.event = ev;
			p.defs = (const char *const *)pe->defs;
			p.ndefs = pe->ndefs;
			if (fn)
				r = fn(&p, ctx);
			free(g);
			free(ev);
			if (del) {
				pfile_remove_at(&pf, k);
				changed = true;
			} else {
				k++;
			}
		}
		if (r >= 0 && changed)
			r = pfile_store(probes, &pf, c->gzip);
		/* A query that found probes here used the entry; one that only looked did not. */
		if (use && matched)
			touch_use(v[i].dir);
		pfile_release(&pf);
		free(probes);
	}
	return r < 0 ? r : hits;
}

/* walk_entries() over the cache's entries, for the query @text. */
static int walk_probes(struct tk_cache *c, const char *text, bool all, bool del,
		       tk_cache_probe_fn fn, void *ctx)
{
	struct query q;
	struct centry *v;
	size_t n;
	int r;

	r = query_parse(text, &q);
	if (r < 0)
		return r;
	r = centries_load(c, true, false, &v, &n);
	if (r >= 0) {
		/* Listing everything is no use of an entry; looking something up is. */
		r = walk_entries(c, &q, v, n, all, del, !del && text && text[0], fn, ctx);
		centries_free(v, n);
	}
	free(q.buf);
	return r;
}

TK_API int tk_cache_query(struct tk_cache *cache, const char *query, bool all, tk_cache_probe_fn fn,
			  void *ctx)
{
	return walk_probes(cache, query, all, false, fn, ctx);
}

TK_API int tk_cache_probe_del(struct tk_cache *cache, const char *query)
{
	if (!query || !query[0])
		return tk_fail(EINVAL, "--probe-del needs a query");
	return walk_probes(cache, query, true, true, NULL, NULL);
}

struct resolve_ctx {
	struct tk_cache_uprobe *v;
	size_t n;
};

static int resolve_one(const struct tk_cache_probe *p, void *ctx)
{
	struct resolve_ctx *rc = ctx;

	/* Kernel probes ("_text+OFF") need kprobe_events, not uprobes. */
	if (p->entry->path[0] == '[')
		return 0;
	for (size_t i = 0; i < p->ndefs; i++) {
		const char *def = p->defs[i], *sp = strchr(def, ' '), *colon, *paren;
		struct tk_cache_uprobe *u, *nv;
		char *end;

		nv = realloc(rc->v, (rc->n + 1) * sizeof(*nv));
		if (!nv)
			return tk_fail(ENOMEM, "out of memory");
		rc->v = nv;
		u = &nv[rc->n];
		memset(u, 0, sizeof(*u));
		if (!sp || (def[0] != 'p' && def[0] != 'r'))
			return tk_fail(EBADMSG, "%s/probes: bad definition '%s'", p->entry->dir,
				       def);
		sp++;
		colon = strchr(sp, ':');
		if (!colon)
			return tk_fail(EBADMSG, "%s/probes: no offset in '%s'", p->entry->dir, def);
		u->def = strdup(def);
		u->group = strdup(p->group);
		u->event = strdup(p->event);
		u->path = strndup(sp, (size_t)(colon - sp));
		rc->n++;
		if (!u->def || !u->group || !u->event || !u->path)
			return tk_fail(ENOMEM, "out of memory");
		u->offset = strtoull(colon + 1, &end, 16);
		paren = *end == '(' ? end : NULL;
		if (paren)
			u->ref_ctr = strtoull(paren + 1, NULL, 16);
		snprintf(u->build_id, sizeof(u->build_id), "%s", p->entry->build_id);
	}
	return 0;
}

TK_API void tk_cache_uprobes_free(struct tk_cache_uprobe *probes, size_t count)
{
	if (!probes)
		return;
	for (size_t i = 0; i < count; i++) {
		free(probes[i].group);
		free(probes[i].event);
		free(probes[i].def);
		free(probes[i].path);
	}
	free(probes);
}

TK_API int tk_cache_resolve(struct tk_cache *cache, const char *spec, struct tk_cache_uprobe **out,
			    size_t *count)
{
	struct resolve_ctx rc = {0};
	const char *q = spec;
	int r;

	*out = NULL;
	*count = 0;
	if (!spec || (spec[0] != '%' && strncmp(spec, "sdt_", 4)))
		return tk_fail(EINVAL, "'%s' is not a cached probe (%%PROVIDER/EVENT or sdt_P:E)",
			       spec ? spec : "");
	if (!strpbrk(q, ":/"))
		return tk_fail(EINVAL, "'%s': want %%GROUP/EVENT or %%GROUP:EVENT", spec);
	r = tk_cache_query(cache, q, false, resolve_one, &rc);
	if (r < 0) {
		tk_cache_uprobes_free(rc.v, rc.n);
		return r;
	}
	if (!rc.n)
		return tk_fail(ENOENT,
			       "'%s': no such probe in the cache %s (tracekit cache --add BINARY)",
			       spec, cache->dir);
	*out = rc.v;
	*count = rc.n;
	return (int)rc.n;
}

/* ---- maintenance ---- */

static int stats_probe(const struct tk_cache_probe *p, void *ctx)
{
	struct tk_cache_stats *st = ctx;

	if (p->sdt)
		st->sdt_probes++;
	else
		st->user_probes++;
	return 0;
}

TK_API int tk_cache_stats(struct tk_cache *cache, struct tk_cache_stats *st)
{
	struct centry *v;
	struct query q;
	size_t n;
	int r;

	memset(st, 0, sizeof(*st));
	/* Everything on disk, linked or not: what --max-size and --gc act on. */
	r = centries_load(cache, true, true, &v, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		st->entries++;
		if (v[i].valid)
			st->valid++;
		else
			st->stale++;
		if (v[i].path[0] == '[')
			st->kernel++;
		st->bytes += v[i].bytes;
		int64_t use = v[i].last_use / 1000000000;

		if (!st->oldest_use || use < st->oldest_use)
			st->oldest_use = use;
		if (use > st->newest_use)
			st->newest_use = use;
	}
	/* The probes of the linked ones, from the entries just loaded. */
	r = query_parse(NULL, &q);
	if (r >= 0)
		r = walk_entries(cache, &q, v, n, true, false, false, stats_probe, st);
	free(q.buf);
	centries_free(v, n);
	return r < 0 ? r : 0;
}

static int lru_cmp(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	if (x->last_use != y->last_use)
		return x->last_use < y->last_use ? -1 : 1;
	return strcmp(x->bid, y->bid);
}

TK_API int tk_cache_evict(struct tk_cache *cache, uint64_t max_bytes)
{
	struct centry *v;
	uint64_t total = 0;
	size_t n;
	int r, removed = 0;

	r = centries_load(cache, false, true, &v, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		total += v[i].bytes;
	if (n)
		qsort(v, n, sizeof(*v), lru_cmp);
	for (size_t i = 0; i < n && total > max_bytes; i++) {
		r = drop_entry(cache, v, n, &v[i]);
		if (r < 0)
			break;
		total -= v[i].bytes;
		removed++;
	}
	centries_free(v, n);
	return r < 0 ? r : removed;
}

static int gc_count;
static const char *gc_root;

static int gc_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	/* Empty directories left by removals (never the root itself). */
	if (flag == FTW_DP && ftw->level > 0 && strcmp(path, gc_root) && rmdir(path) == 0)
		gc_count++;
	return 0;
}

TK_API int tk_cache_gc(struct tk_cache *cache)
{
	struct centry *v;
	size_t n;
	int r, removed = 0;

	r = centries_load(cache, false, true, &v, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct centry *e = &v[i];
		struct stat st;
		bool useless, indexed = false;

		if (e->gone || (lstat(e->dir, &st) == 0 && !S_ISDIR(st.st_mode)))
			continue; /* an old-style entry: the file itself */
		if (e->kcore) {
			char *f;

			if (asprintf(&f, "%s/kcore", e->dir) < 0)
				continue;
			useless = access(f, F_OK) < 0;
			free(f);
		} else {
			/* Dangling link or an entry without its file: useless to anyone. */
			useless = !has_entry_file(e->dir, false);
		}
		/*
		 * A directory of a build id that has no link at all: perf --remove
		 * of the linked path leaves the other paths so. Neither perf nor our
		 * lookups (both go by build id) can reach it; it finishes removing.
		 */
		for (size_t k = 0; k < n && !e->linked && !e->kcore && !indexed; k++)
			indexed = v[k].linked && !v[k].gone && !strcmp(v[k].bid, e->bid);
		if (!useless && (e->linked || e->kcore || indexed))
			continue;
		r = drop_entry(cache, v, n, e);
		removed += r == 0;
	}
	centries_free(v, n);
	if (r < 0)
		return r;
	/* Links whose names are not build ids, or that no longer point anywhere. */
	gc_count = 0;
	gc_root = cache->dir;
	nftw(cache->dir, gc_visit, 16, FTW_DEPTH | FTW_PHYS);
	return removed + gc_count;
}

/* ---- symbolization ---- */

struct seg {
	uint64_t offset, filesz, vaddr;
};

struct dso {
	char *path;
	char bid[TK_BUILD_ID_HEX_MAX];
	struct tk_symtab *st;
	struct seg *segs;
	size_t nsegs;
	bool kernel;
	bool vdso;
	bool loaded;
};

struct smap {
	uint64_t start, end, pgoff;
	struct dso *dso;
};

/* Where a uprobe event probes: one per definition line of GROUP/EVENT. */
struct usite {
	char *key;  /* "GROUP/EVENT" */
	char *path; /* NULL: a remembered miss */
	char bid[TK_BUILD_ID_HEX_MAX];
	uint64_t offset;
};

struct tk_symbolizer {
	struct tk_cache *cache;
	struct dso **dsos;
	size_t ndsos;
	struct smap *maps;
	size_t nmaps;
	bool sorted;
	struct usite *sites;
	size_t nsites;
};

TK_API struct tk_symbolizer *tk_symbolizer_new(struct tk_cache *cache)
{
	struct tk_symbolizer *s = calloc(1, sizeof(*s));

	if (!s) {
		tk_fail(ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->cache = cache;
	return s;
}

TK_API void tk_symbolizer_free(struct tk_symbolizer *sym)
{
	if (!sym)
		return;
	for (size_t i = 0; i < sym->ndsos; i++) {
		tk_symtab_free(sym->dsos[i]->st);
		free(sym->dsos[i]->segs);
		free(sym->dsos[i]->path);
		free(sym->dsos[i]);
	}
	free(sym->dsos);
	free(sym->maps);
	for (size_t i = 0; i < sym->nsites; i++) {
		free(sym->sites[i].key);
		free(sym->sites[i].path);
	}
	free(sym->sites);
	free(sym);
}

static struct dso *dso_get(struct tk_symbolizer *s, const char *path, const char *bid)
{
	struct dso *d, **nv;

	for (size_t i = 0; i < s->ndsos; i++) {
		d = s->dsos[i];
		if (!strcmp(d->path, path) && (!bid || !d->bid[0] || !strcmp(d->bid, bid)))
			return d;
	}
	nv = realloc(s->dsos, (s->ndsos + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	s->dsos = nv;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return NULL;
	}
	if (bid)
		snprintf(d->bid, sizeof(d->bid), "%s", bid);
	d->kernel = !strcmp(path, "[kernel.kallsyms]");
	d->vdso = !strcmp(path, "[vdso]");
	s->dsos[s->ndsos++] = d;
	return d;
}

/* The file to read a DSO's symbols from: the cache by build id first. */
static char *dso_file(struct tk_symbolizer *s, struct dso *d)
{
	char *f = NULL;

	if (s->cache && d->bid[0]) {
		const char *leaf = d->kernel ? "kallsyms" : d->vdso ? "vdso" : "elf";
		char *link;

		if (asprintf(&link, "%s/.build-id/%.2s/%s", s->cache->dir, d->bid, d->bid + 2) >=
		    0) {
			if (asprintf(&f, "%s/%s", link, leaf) >= 0 && access(f, R_OK) < 0) {
				free(f);
				/* A pre-2016 entry is the file itself. */
				struct stat st;

				f = stat(link, &st) == 0 && S_ISREG(st.st_mode) ? strdup(link)
										: NULL;
			}
			if (f) {
				char *dir = realpath(link, NULL);

				if (dir) {
					touch_use(dir);
					free(dir);
				}
			}
			free(link);
		}
	}
	if (!f && !d->vdso)
		f = strdup(d->kernel ? "/proc/kallsyms" : d->path);
	return f;
}

/*
 * This process's own vDSO, when it is the one @bid names (or no id is
 * given): the running kernel's, which a recording on this machine mapped.
 * perf caches it as [vdso]/BUILDID/vdso; without that copy, this one.
 */
static struct tk_elf *own_vdso(const char *bid)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char hex[TK_BUILD_ID_HEX_MAX], *maps = NULL, *line, *save = NULL;
	unsigned long long start, end;
	struct tk_elf *elf = NULL;
	uint8_t id[TK_BUILD_ID_MAX];
	size_t len;
	int n;

	if (!base || read_file("/proc/self/maps", &maps, &len) < 0)
		return NULL;
	for (line = strtok_r(maps, "\n", &save); line && !elf; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%llx-%llx", &start, &end) != 2 ||
		    start != base || end <= start)
			continue;
		elf = tk_elf_open_mem((const void *)base, (size_t)(end - start), "[vdso]");
	}
	free(maps);
	if (elf && bid &&
	    ((n = tk_elf_build_id(elf, id, sizeof(id))) <= 0 ||
	     tk_build_id_hex(id, (size_t)n, hex, sizeof(hex)) <= 0 || strcmp(hex, bid))) {
		tk_elf_close(elf);
		elf = NULL;
	}
	return elf;
}

/* Copy the PT_LOAD segments of @elf into @d (file offset <-> address). */
static void dso_take_segments(struct dso *d, struct tk_elf *elf)
{
	struct tk_elf_segment *tmp;
	int n = tk_elf_segments(elf, NULL, 0);

	if (n <= 0)
		return;
	tmp = calloc((size_t)n, sizeof(*tmp));
	d->segs = calloc((size_t)n, sizeof(*d->segs));
	if (tmp && d->segs && tk_elf_segments(elf, tmp, (size_t)n) == n) {
		for (int i = 0; i < n; i++) {
			d->segs[i].offset = tmp[i].offset;
			d->segs[i].filesz = tmp[i].filesz;
			d->segs[i].vaddr = tmp[i].vaddr;
		}
		d->nsegs = (size_t)n;
	} else {
		free(d->segs);
		d->segs = NULL;
	}
	free(tmp);
}

static bool has_symtab(struct tk_elf *elf)
{
	const struct tk_elf_symbol *syms;
	size_t n;

	return tk_elf_symbols(elf, TK_ELF_SYMTAB, &syms, &n) == 0 && n > 0;
}

/*
 * A separate debug file for build id @bid with a .symtab, or NULL: the
 * cache entry's "debug" (perf's DSO_BINARY_TYPE__BUILD_ID_CACHE_DEBUGINFO),
 * then DEBUG_ROOT/.build-id/xx/rest.debug (BUILDID_DEBUGINFO). A file
 * whose own build id differs is ignored: its symbols would be wrong.
 */
static struct tk_elf *debug_elf(struct tk_symbolizer *s, const char *bid)
{
	char *cand[2] = {NULL, NULL};
	struct tk_elf *found = NULL;

	if (!bid || strlen(bid) < 3)
		return NULL;
	if (s->cache &&
	    asprintf(&cand[0], "%s/.build-id/%.2s/%s/debug", s->cache->dir, bid, bid + 2) < 0)
		cand[0] = NULL;
	if (asprintf(&cand[1], "%s/.build-id/%.2s/%s.debug", debug_root(), bid, bid + 2) < 0)
		cand[1] = NULL;
	for (size_t i = 0; i < 2 && !found; i++) {
		char hex[TK_BUILD_ID_HEX_MAX];
		uint8_t id[TK_BUILD_ID_MAX];
		struct tk_elf *e;
		int n;

		if (!cand[i] || access(cand[i], R_OK) < 0)
			continue;
		e = tk_elf_open(cand[i]);
		if (!e)
			continue;
		n = tk_elf_build_id(e, id, sizeof(id));
		if (n > 0 && tk_build_id_hex(id, (size_t)n, hex, sizeof(hex)) > 0 &&
		    !strcmp(hex, bid) && has_symtab(e))
			found = e;
		else
			tk_elf_close(e);
	}
	free(cand[0]);
	free(cand[1]);
	return found;
}

/*
 * Load a DSO's symbols the way perf picks its symtab source: the binary's
 * own .symtab when it has one, else a debug file's .symtab, else the
 * binary's .dynsym. Segments always come from the binary (a debug file's
 * sections are NOBITS), or from the debug file when the binary is gone.
 */
static void dso_load(struct tk_symbolizer *s, struct dso *d)
{
	struct tk_elf *elf = NULL, *dbg = NULL;
	char hex[TK_BUILD_ID_HEX_MAX];
	const char *bid = d->bid[0] ? d->bid : NULL;
	char *f;

	d->loaded = true;
	f = dso_file(s, d);
	if (!f && d->vdso) {
		elf = own_vdso(bid);
		if (elf) {
			d->st = tk_symtab_new_elf(elf);
			dso_take_segments(d, elf);
			tk_elf_close(elf);
		}
		return;
	}
	if (!f)
		return;
	if (d->kernel) {
		char *text;
		size_t len;

		if (read_file(f, &text, &len) == 0) {
			d->st = tk_symtab_new_kallsyms(text, len, f);
			free(text);
		}
		free(f);
		return;
	}
	elf = tk_elf_open(f);
	free(f);
	if (elf && !bid) {
		uint8_t id[TK_BUILD_ID_MAX];
		int n = tk_elf_build_id(elf, id, sizeof(id));

		if (n > 0 && tk_build_id_hex(id, (size_t)n, hex, sizeof(hex)) > 0)
			bid = hex;
	}
	if (elf && table_broken(elf, TK_ELF_SYMTAB)) {
		/* Say why this DSO's frames will be poorer; its .dynsym still serves. */
		tk_warn("%s; symbols from its .dynsym instead", tk_errmsg());
		d->st = tk_symtab_new_dso(elf, TK_ELF_DYNSYM, elf);
	} else if (elf && has_symtab(elf)) {
		d->st = tk_symtab_new_elf(elf);
	} else {
		dbg = debug_elf(s, bid);
		/* The PLT entries come from the binary: a debug file has no bytes for them. */
		if (dbg)
			d->st = tk_symtab_new_dso(dbg, TK_ELF_ANY, elf);
		else if (elf)
			d->st = tk_symtab_new_elf(elf);
	}
	if (elf)
		dso_take_segments(d, elf);
	else if (dbg)
		dso_take_segments(d, dbg);
	tk_elf_close(dbg);
	tk_elf_close(elf);
}

static int smap_cmp(const void *a, const void *b)
{
	const struct smap *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

TK_API int tk_symbolizer_add_map(struct tk_symbolizer *sym, uint64_t start, uint64_t len,
				 uint64_t pgoff, const char *path, const char *build_id)
{
	char hex[TK_BUILD_ID_HEX_MAX];
	struct smap *nv;
	struct dso *d;

	if (!len || start + len < start)
		return tk_fail(EINVAL, "%s: empty or wrapping map 0x%" PRIx64 "+0x%" PRIx64, path,
			       start, len);
	if (!build_id && path[0] == '/' && file_build_id(path, hex) > 0)
		build_id = hex;
	if (!build_id && !strcmp(path, "[kernel.kallsyms]"))
		build_id = kernel_bid(sym->cache ? sym->cache : &(struct tk_cache){0});
	d = dso_get(sym, path, build_id);
	nv = d ? realloc(sym->maps, (sym->nmaps + 1) * sizeof(*nv)) : NULL;
	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	sym->maps = nv;
	nv[sym->nmaps].start = start;
	nv[sym->nmaps].end = start + len;
	nv[sym->nmaps].pgoff = pgoff;
	nv[sym->nmaps].dso = d;
	sym->nmaps++;
	sym->sorted = false;
	return 0;
}

/* Resolve a file offset (an address for the kernel) inside @d. */
static void dso_resolve(struct tk_symbolizer *s, struct dso *d, uint64_t off,
			struct tk_symbol_info *info)
{
	uint64_t vaddr = off;
	bool mapped = d->kernel;

	if (!d->loaded)
		dso_load(s, d);
	info->dso = d->path;
	info->symbol = NULL;
	info->offset = 0;
	info->file_offset = off;
	for (size_t i = 0; i < d->nsegs && !mapped; i++)
		if (off >= d->segs[i].offset && off - d->segs[i].offset < d->segs[i].filesz) {
			vaddr = off - d->segs[i].offset + d->segs[i].vaddr;
			mapped = true;
		}
	if (mapped && d->st)
		info->symbol = tk_symtab_lookup(d->st, vaddr, &info->offset, NULL);
}

TK_API int tk_symbolizer_lookup(struct tk_symbolizer *sym, uint64_t addr,
				struct tk_symbol_info *info)
{
	size_t lo = 0, hi;
	const struct smap *m;

	if (!sym->sorted) {
		if (sym->nmaps)
			qsort(sym->maps, sym->nmaps, sizeof(*sym->maps), smap_cmp);
		sym->sorted = true;
	}
	hi = sym->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sym->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= sym->maps[lo - 1].end)
		return tk_fail(ENOENT, "address 0x%" PRIx64 " is in no map", addr);
	m = &sym->maps[lo - 1];
	dso_resolve(sym, m->dso, m->dso->kernel ? addr : addr - m->start + m->pgoff, info);
	return 0;
}

TK_API int tk_symbolizer_lookup_file(struct tk_symbolizer *sym, const char *path,
				     const char *build_id, uint64_t offset,
				     struct tk_symbol_info *info)
{
	char hex[TK_BUILD_ID_HEX_MAX];
	struct dso *d;

	if (!build_id && path[0] == '/' && file_build_id(path, hex) > 0)
		build_id = hex;
	d = dso_get(sym, path, build_id);
	if (!d)
		return tk_fail(ENOMEM, "out of memory");
	dso_resolve(sym, d, offset, info);
	if (!d->st)
		return tk_fail(ENOENT, "%s: no symbols", path);
	return 0;
}

TK_API int tk_symbolizer_add_pid(struct tk_symbolizer *sym, int pid)
{
	char *maps, *text, *line, *save = NULL;
	size_t len;
	int r, added = 0;

	if (asprintf(&maps, "/proc/%d/maps", pid) < 0)
		return tk_fail(ENOMEM, "out of memory");
	r = read_file(maps, &text, &len);
	if (r < 0) {
		free(maps);
		return r;
	}
	for (line = strtok_r(text, "\n", &save); line && r >= 0;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int pathpos = 0;

		/* "start-end perms offset dev inode   path" */
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
			   &pathpos) < 4 ||
		    !pathpos) {
			r = tk_fail(EBADMSG, "%s: malformed line '%s'", maps, line);
			break;
		}
		/* Anonymous, [heap], [vdso] and deleted files have no file to read. */
		if (line[pathpos] != '/' || end <= start || strstr(line + pathpos, " (deleted)"))
			continue;
		r = tk_symbolizer_add_map(sym, start, end - start, pgoff, line + pathpos, NULL);
		added++;
	}
	free(text);
	free(maps);
	return r < 0 ? r : added;
}

/* "p:GROUP/EVENT PATH:0xOFF[(0xREF)] ..." -> PATH (malloc'ed) and OFF. */
static bool def_location(const char *def, char **path, uint64_t *offset)
{
	const char *sp = strchr(def, ' '), *colon;
	char *end;

	*path = NULL;
	if (!sp || (def[0] != 'p' && def[0] != 'r'))
		return false;
	sp++;
	colon = strchr(sp, ':');
	if (!colon || colon == sp || sp[0] != '/')
		return false;
	errno = 0;
	*offset = strtoull(colon + 1, &end, 16);
	if (errno || end == colon + 1)
		return false;
	*path = strndup(sp, (size_t)(colon - sp));
	return *path != NULL;
}

static int usite_add(struct tk_symbolizer *s, const char *key, const char *path, const char *bid,
		     uint64_t offset)
{
	struct usite *nv = realloc(s->sites, (s->nsites + 1) * sizeof(*nv));

	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	s->sites = nv;
	memset(&nv[s->nsites], 0, sizeof(nv[0]));
	nv[s->nsites].key = strdup(key);
	nv[s->nsites].path = path ? strdup(path) : NULL;
	nv[s->nsites].offset = offset;
	if (bid)
		snprintf(nv[s->nsites].bid, sizeof(nv[0].bid), "%s", bid);
	if (!nv[s->nsites].key || (path && !nv[s->nsites].path)) {
		free(nv[s->nsites].key);
		free(nv[s->nsites].path);
		return tk_fail(ENOMEM, "out of memory");
	}
	s->nsites++;
	return 0;
}

struct usite_ctx {
	struct tk_symbolizer *s;
	const char *key, *group, *event;
	int found;
};

static int usite_probe(const struct tk_cache_probe *p, void *ctx)
{
	struct usite_ctx *uc = ctx;

	/* The query matched globs (and "P" for "sdt_P"); we want this very event. */
	if (strcmp(p->group, uc->group) || strcmp(p->event, uc->event))
		return 0;
	for (size_t i = 0; i < p->ndefs; i++) {
		uint64_t off;
		char *path;
		int r;

		if (!def_location(p->defs[i], &path, &off))
			continue;
		r = usite_add(uc->s, uc->key, path, p->entry->build_id, off);
		free(path);
		if (r < 0)
			return r;
		uc->found++;
	}
	return 0;
}

/* The live definitions in tracefs, for uprobes created outside the cache. */
static int usite_tracefs(struct usite_ctx *uc)
{
	static const char *const files[] = {"/sys/kernel/tracing/uprobe_events",
					    "/sys/kernel/debug/tracing/uprobe_events"};
	size_t klen = strlen(uc->key);

	for (size_t f = 0; f < 2; f++) {
		char *text, *line, *save = NULL;
		size_t len;
		int r = 0;

		if (access(files[f], R_OK) < 0 || read_file(files[f], &text, &len) < 0)
			continue;
		for (line = strtok_r(text, "\n", &save); line && r == 0;
		     line = strtok_r(NULL, "\n", &save)) {
			uint64_t off;
			char *path;

			if (strlen(line) < klen + 3 || strncmp(line + 2, uc->key, klen) ||
			    line[2 + klen] != ' ' || !def_location(line, &path, &off))
				continue;
			r = usite_add(uc->s, uc->key, path, NULL, off);
			free(path);
			uc->found++;
		}
		free(text);
		if (r < 0)
			return r;
		if (uc->found)
			break;
	}
	return 0;
}

/* The places the cache lists for uprobe @uc->group/@uc->event, under @uc->key. */
static int usite_cache(struct usite_ctx *uc)
{
	char *q;
	int r;

	if (!uc->s->cache)
		return 0;
	if (asprintf(&q, "%s:%s", uc->group, uc->event) < 0)
		return tk_fail(ENOMEM, "out of memory");
	/* Valid entries first; a binary rebuilt since still resolves by its old id. */
	r = tk_cache_query(uc->s->cache, q, false, usite_probe, uc);
	if (r >= 0 && !uc->found)
		r = tk_cache_query(uc->s->cache, q, true, usite_probe, uc);
	free(q);
	return r;
}

/*
 * The base of an SDT name used at several places: EVENT for EVENT_1,
 * EVENT_2 ... (as perf probe names them in tracefs); NULL when @event is
 * none such (or on ENOMEM, which only costs the fallback).
 */
static char *sdt_base_name(const char *event)
{
	size_t n = strlen(event), k = n;

	while (k > 0 && event[k - 1] >= '0' && event[k - 1] <= '9')
		k--;
	if (k == n || k < 2 || event[k - 1] != '_')
		return NULL;
	return strndup(event, k - 1);
}

TK_API int tk_symbolizer_lookup_uprobe(struct tk_symbolizer *sym, const char *group,
				       const char *event, uint64_t ip, struct tk_symbol_info *info)
{
	struct usite_ctx uc = {.s = sym, .group = group, .event = event};
	const struct usite *best = NULL, *cong = NULL, *exact = NULL;
	long page = sysconf(_SC_PAGESIZE);
	bool known = false;
	char *key;
	int r = 0;

	if (!group || !event || !*group || !*event)
		return tk_fail(EINVAL, "uprobe lookup needs a group and an event");
	if (asprintf(&key, "%s/%s", group, event) < 0)
		return tk_fail(ENOMEM, "out of memory");
	uc.key = key;
	for (size_t i = 0; i < sym->nsites && !known; i++)
		known = !strcmp(sym->sites[i].key, key);
	if (!known) {
		r = usite_cache(&uc);
		if (r >= 0 && !uc.found)
			r = usite_tracefs(&uc);
		/*
		 * EVENT_N gone from tracefs: the cache lists every place of an
		 * SDT name under EVENT, and the address picks this one. Only
		 * the cache: tracefs's EVENT is one place, maybe another. The
		 * sites go under this key, so later lookups find them at once.
		 */
		if (r >= 0 && !uc.found) {
			char *base = sdt_base_name(event);

			if (base) {
				uc.event = base;
				r = usite_cache(&uc);
				uc.event = event;
				free(base);
			}
		}
		if (r >= 0 && !uc.found)
			r = usite_add(sym, key, NULL, NULL, 0);
		if (r < 0) {
			free(key);
			return r;
		}
	}
	/*
	 * An SDT name used at several places has one site per place. The load
	 * bias of a mapping is a multiple of the page size, so the site whose
	 * link-time address is congruent to @ip is the one that fired; an
	 * exact match (a non-PIE binary) wins outright.
	 */
	for (size_t i = 0; i < sym->nsites; i++) {
		const struct usite *u = &sym->sites[i];
		struct tk_symbol_info tmp;
		uint64_t vaddr = 0;
		struct dso *d;
		bool mapped = false;

		if (strcmp(u->key, key) || !u->path)
			continue;
		if (!best)
			best = u;
		if (!ip)
			break;
		d = dso_get(sym, u->path, u->bid[0] ? u->bid : NULL);
		if (!d) {
			free(key);
			return tk_fail(ENOMEM, "out of memory");
		}
		dso_resolve(sym, d, u->offset, &tmp);
		for (size_t k = 0; k < d->nsegs && !mapped; k++)
			if (u->offset >= d->segs[k].offset &&
			    u->offset - d->segs[k].offset < d->segs[k].filesz) {
				vaddr = u->offset - d->segs[k].offset + d->segs[k].vaddr;
				mapped = true;
			}
		if (mapped && vaddr == ip) {
			exact = u;
			break;
		}
		if (mapped && !cong && page > 0 && (ip - vaddr) % (uint64_t)page == 0)
			cong = u;
	}
	if (exact)
		best = exact;
	else if (cong)
		best = cong;
	if (!best) {
		r = tk_fail(ENOENT, "uprobe %s: not in the cache%s nor in uprobe_events", key,
			    sym->cache ? "" : " (no cache given)");
		free(key);
		return r;
	}
	free(key);
	return tk_symbolizer_lookup_file(sym, best->path, best->bid[0] ? best->bid : NULL,
					 best->offset, info);
}

/* ---- kcore ---- */

/*
 * perf buildid-cache --kcore, our way: parse the ELF core's program headers
 * ourselves with pread() (mapping /proc/kcore is not possible, and libelf
 * would read the whole address space), choose the kernel text and module
 * ranges from kallsyms and modules as perf's kcore_copy() does, and write
 * a small ELF core holding just those bytes.
 */
struct kload {
	uint64_t vaddr, offset, filesz;
};

struct kpiece {
	uint64_t addr, len, src; /* address, length, offset in the source */
	uint64_t rel;		 /* offset in the output's data area */
	int remap;		 /* index of the piece whose bytes it shares, or -1 */
};

struct kcore_src {
	const char *name;
	int fd;
	bool big, is64;
	uint16_t machine;
	uint8_t ident[16];
	struct kload *loads;
	size_t nloads;
	uint64_t note_off, note_len;
};

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int kcore_parse(struct kcore_src *k, uint64_t fsize)
{
	uint8_t eh[64], ph[56];
	uint64_t phoff;
	uint16_t phentsize, phnum, type;
	size_t want;
	int r;

	r = pread_full(k->fd, eh, 52, 0);
	if (r < 0 || memcmp(eh, ELFMAG, SELFMAG))
		return tk_fail(ENOEXEC, "%s: not an ELF file, so not a kcore", k->name);
	if ((eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64) ||
	    (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB))
		return tk_fail_at(EBADMSG, k->name, EI_CLASS, "unknown ELF class or byte order");
	k->is64 = eh[EI_CLASS] == ELFCLASS64;
	k->big = eh[EI_DATA] == ELFDATA2MSB;
	if (k->is64 && pread_full(k->fd, eh, 64, 0) < 0)
		return tk_fail_at(EBADMSG, k->name, 52, "truncated ELF header");
	memcpy(k->ident, eh, 16);
	type = tk_load_u16(eh + 16, k->big);
	k->machine = tk_load_u16(eh + 18, k->big);
	if (type != ET_CORE)
		return tk_fail_at(EINVAL, k->name, 16,
				  "ELF type %u is not ET_CORE (4): not a kcore", type);
	phoff = k->is64 ? tk_load_u64(eh + 32, k->big) : tk_load_u32(eh + 28, k->big);
	phentsize = tk_load_u16(eh + (k->is64 ? 54 : 42), k->big);
	phnum = tk_load_u16(eh + (k->is64 ? 56 : 44), k->big);
	want = k->is64 ? 56 : 32;
	if (phentsize != want || !phnum)
		return tk_fail_at(EBADMSG, k->name, k->is64 ? 54 : 42,
				  "%u program headers of %u bytes: want %zu-byte headers", phnum,
				  phentsize, want);
	if (phoff > fsize || (uint64_t)phnum * want > fsize - phoff)
		return tk_fail_at(EBADMSG, k->name, k->is64 ? 32 : 28,
				  "program headers at 0x%" PRIx64 " run past the file (%" PRIu64
				  " bytes)",
				  phoff, fsize);
	k->loads = calloc(phnum, sizeof(*k->loads));
	if (!k->loads)
		return tk_fail(ENOMEM, "out of memory");
	for (uint16_t i = 0; i < phnum; i++) {
		uint64_t at = phoff + (uint64_t)i * want, off, vaddr, filesz;
		uint32_t pt;

		if (pread_full(k->fd, ph, want, at) < 0)
			return tk_fail_at(EBADMSG, k->name, at, "cannot read program header %u", i);
		pt = tk_load_u32(ph, k->big);
		if (k->is64) {
			off = tk_load_u64(ph + 8, k->big);
			vaddr = tk_load_u64(ph + 16, k->big);
			filesz = tk_load_u64(ph + 32, k->big);
		} else {
			off = tk_load_u32(ph + 4, k->big);
			vaddr = tk_load_u32(ph + 8, k->big);
			filesz = tk_load_u32(ph + 16, k->big);
		}
		if (pt != PT_LOAD && pt != PT_NOTE)
			continue;
		if (off > fsize || filesz > fsize - off || vaddr + filesz < vaddr)
			return tk_fail_at(EBADMSG, k->name, at,
					  "segment %u (0x%" PRIx64 "+0x%" PRIx64
					  ") lies outside the file (%" PRIu64 " bytes)",
					  i, off, filesz, fsize);
		if (pt == PT_NOTE) {
			if (!k->note_len) {
				k->note_off = off;
				k->note_len = filesz;
			}
			continue;
		}
		k->loads[k->nloads].vaddr = vaddr;
		k->loads[k->nloads].offset = off;
		k->loads[k->nloads].filesz = filesz;
		k->nloads++;
	}
	if (!k->nloads)
		return tk_fail(EBADMSG, "%s: no PT_LOAD segment: not a kcore", k->name);
	return 0;
}

/* The BUILD-ID line of a VMCOREINFO note (kernels since 5.9 write one). */
static int kcore_vmcoreinfo_bid(struct kcore_src *k, char *hex)
{
	struct tk_cursor c;
	uint8_t *notes;
	int r = -ENOENT;

	if (!k->note_len || k->note_len > (1u << 20))
		return -ENOENT;
	notes = malloc(k->note_len);
	if (!notes)
		return tk_fail(ENOMEM, "out of memory");
	if (pread_full(k->fd, notes, k->note_len, k->note_off) < 0) {
		free(notes);
		return -ENOENT;
	}
	tk_cursor_init(&c, notes, k->note_len, k->note_off, k->big);
	while (tk_cursor_left(&c) >= 12 && r == -ENOENT) {
		uint32_t namesz, descsz, type;
		const uint8_t *name, *desc;

		if (!tk_cursor_u32(&c, &namesz) || !tk_cursor_u32(&c, &descsz) ||
		    !tk_cursor_u32(&c, &type) ||
		    !tk_cursor_bytes(&c, ((uint64_t)namesz + 3) & ~3ull, &name) ||
		    !tk_cursor_bytes(&c, ((uint64_t)descsz + 3) & ~3ull, &desc))
			break;
		if (namesz == 11 && !memcmp(name, "VMCOREINFO", 11)) {
			const char *p = memmem(desc, descsz, "BUILD-ID=", 9);
			size_t n = 0;

			if (!p)
				break;
			p += 9;
			while ((size_t)(p + n - (const char *)desc) < descsz && n < 40 &&
			       ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f')))
				n++;
			if (n >= 32 && !(n & 1)) {
				memcpy(hex, p, n);
				hex[n] = '\0';
				r = 0;
			}
		}
	}
	free(notes);
	return r;
}

struct kinfo {
	uint64_t stext, etext, first, last, first_mod, first_modsym, last_modsym, tramp;
};

/* perf's kcore_copy ranges, from kallsyms function symbols and modules. */
static int kcore_ranges(const char *ksname, const char *ks, size_t kslen, const char *modname,
			const char *mods, struct kinfo *ki)
{
	size_t i = 0;

	memset(ki, 0, sizeof(*ki));
	while (i < kslen) {
		const char *line = ks + i, *nl = memchr(line, '\n', kslen - i);
		size_t ll = nl ? (size_t)(nl - line) : kslen - i;
		unsigned long long a;
		char type, name[256];
		int used = 0;

		i += ll + 1;
		if (!ll)
			continue;
		if (ll >= 300 || sscanf(line, "%llx %c %255s%n", &a, &type, name, &used) != 3)
			return tk_fail_at(EBADMSG, ksname, (uint64_t)(line - ks),
					  "malformed kallsyms line");
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/* A module symbol carries "\t[module]" after its name. */
		if (memchr(line + used, '[', ll - (size_t)used)) {
			if (!ki->first_modsym || a < ki->first_modsym)
				ki->first_modsym = a;
			if (a > ki->last_modsym)
				ki->last_modsym = a;
			continue;
		}
		if (!ki->first || a < ki->first)
			ki->first = a;
		if (a > ki->last)
			ki->last = a;
		if (!strcmp(name, "_stext"))
			ki->stext = a;
		else if (!strcmp(name, "_etext"))
			ki->etext = a;
		else if (!strcmp(name, "__entry_SYSCALL_64_trampoline"))
			ki->tramp = a;
	}
	for (const char *line = mods; *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long a;
		const char *x;

		/* "name size refs deps state 0xADDR [taint]" */
		x = strstr(line, " 0x");
		if (x && (!nl || x < nl) && sscanf(x + 1, "%llx", &a) == 1 && a &&
		    (!ki->first_mod || a < ki->first_mod))
			ki->first_mod = a;
		if (!nl)
			break;
		line = nl + 1;
	}
	(void)modname;
	return 0;
}

static uint64_t round_dn(uint64_t v, uint64_t p)
{
	return v & ~(p - 1);
}

static uint64_t round_upp(uint64_t v, uint64_t p)
{
	return (v + p - 1) & ~(p - 1);
}

/* Add the part of [s, e) that starts inside load @l, as perf's kcore_copy__map(). */
static int kpiece_add(struct kpiece **v, size_t *n, const struct kload *l, uint64_t s, uint64_t e)
{
	uint64_t end = l->vaddr + l->filesz;
	struct kpiece *nv;

	if (s < l->vaddr || s >= end || e <= s)
		return 0;
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return tk_fail(ENOMEM, "out of memory");
	*v = nv;
	nv[*n].addr = s;
	nv[*n].len = (e < end ? e : end) - s;
	nv[*n].src = s - l->vaddr + l->offset;
	nv[*n].rel = 0;
	nv[*n].remap = -1;
	(*n)++;
	return 0;
}

static int copy_range(int in, uint64_t off, int out, uint64_t to, uint64_t len, const char *name)
{
	char *buf = malloc(1 << 16);
	int r = 0;

	if (!buf)
		return tk_fail(ENOMEM, "out of memory");
	while (len && r == 0) {
		size_t chunk = len > (1 << 16) ? 1 << 16 : (size_t)len;

		r = pread_full(in, buf, chunk, off);
		if (r < 0) {
			r = tk_fail_at(-r, name, off, "cannot read kcore data");
			break;
		}
		while (pwrite(out, buf, chunk, (off_t)to) != (ssize_t)chunk) {
			if (errno != EINTR) {
				r = fail_errno(errno ? errno : EIO, "kcore copy");
				break;
			}
		}
		off += chunk;
		to += chunk;
		len -= chunk;
	}
	free(buf);
	return r;
}

static int kcore_write(const struct kcore_src *k, const struct kpiece *p, size_t n, const char *out,
		       uint64_t page)
{
	size_t ehsz = k->is64 ? 64 : 52, phsz = k->is64 ? 56 : 32;
	uint64_t data = round_upp(ehsz + n * phsz, page);
	uint8_t *hdr = calloc(1, ehsz + n * phsz);
	int fd, r = 0;

	if (!hdr)
		return tk_fail(ENOMEM, "out of memory");
	memcpy(hdr, k->ident, 16);
	tk_store_u16(hdr + 16, ET_CORE, k->big);
	tk_store_u16(hdr + 18, k->machine, k->big);
	tk_store_u32(hdr + 20, EV_CURRENT, k->big);
	if (k->is64) {
		tk_store_u64(hdr + 32, 64, k->big); /* e_phoff */
		tk_store_u16(hdr + 52, 64, k->big); /* e_ehsize */
		tk_store_u16(hdr + 54, 56, k->big);
		tk_store_u16(hdr + 56, (uint16_t)n, k->big);
	} else {
		tk_store_u32(hdr + 28, 52, k->big);
		tk_store_u16(hdr + 40, 52, k->big);
		tk_store_u16(hdr + 42, 32, k->big);
		tk_store_u16(hdr + 44, (uint16_t)n, k->big);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t *ph = hdr + ehsz + i * phsz;
		uint64_t off = data + p[i].rel;

		tk_store_u32(ph, PT_LOAD, k->big);
		if (k->is64) {
			tk_store_u32(ph + 4, PF_R | PF_W | PF_X, k->big);
			tk_store_u64(ph + 8, off, k->big);
			tk_store_u64(ph + 16, p[i].addr, k->big);
			tk_store_u64(ph + 32, p[i].len, k->big);
			tk_store_u64(ph + 40, p[i].len, k->big);
			tk_store_u64(ph + 48, page, k->big);
		} else {
			tk_store_u32(ph + 4, (uint32_t)off, k->big);
			tk_store_u32(ph + 8, (uint32_t)p[i].addr, k->big);
			tk_store_u32(ph + 16, (uint32_t)p[i].len, k->big);
			tk_store_u32(ph + 20, (uint32_t)p[i].len, k->big);
			tk_store_u32(ph + 24, PF_R | PF_W | PF_X, k->big);
			tk_store_u32(ph + 28, (uint32_t)page, k->big);
		}
	}
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0) {
		free(hdr);
		return fail_errno(errno, out);
	}
	r = write_all(fd, hdr, ehsz + n * phsz);
	if (r < 0)
		r = fail_errno(-r, out);
	for (size_t i = 0; i < n && r == 0; i++)
		if (p[i].remap < 0)
			r = copy_range(k->fd, p[i].src, fd, data + p[i].rel, p[i].len, k->name);
	if (close(fd) < 0 && r == 0)
		r = fail_errno(errno, out);
	free(hdr);
	return r;
}

/* _stext of a kallsyms text: what perf's same_kallsyms_reloc() compares. */
static uint64_t kallsyms_stext(const char *ks)
{
	const char *p = strstr(ks, " _stext\n");
	unsigned long long a = 0;

	while (p && p > ks && p[-1] != '\n')
		p--;
	if (p && sscanf(p, "%llx", &a) != 1)
		a = 0;
	return a;
}

/* An existing DIR/[kernel.kcore]/BID/STAMP with the same modules and _stext. */
static bool kcore_cached(const char *bdir, const char *mods, size_t modlen, uint64_t stext)
{
	struct dirent *de;
	bool same = false;
	DIR *d = opendir(bdir);

	if (!d)
		return false;
	while (!same && (de = readdir(d))) {
		char *mp = NULL, *kp = NULL, *m = NULL, *kt = NULL;
		size_t ml, kl;

		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&mp, "%s/%s/modules", bdir, de->d_name) >= 0 &&
		    asprintf(&kp, "%s/%s/kallsyms", bdir, de->d_name) >= 0 &&
		    read_file(mp, &m, &ml) == 0 && read_file(kp, &kt, &kl) == 0)
			same = ml == modlen && !memcmp(m, mods, ml) && kallsyms_stext(kt) == stext;
		if (same) {
			/* Adding it again is a use of the copy we have. */
			char *dir;

			if (asprintf(&dir, "%s/%s", bdir, de->d_name) >= 0) {
				touch_use(dir);
				free(dir);
			}
		}
		free(mp);
		free(kp);
		free(m);
		free(kt);
	}
	closedir(d);
	return same;
}

TK_API int tk_cache_add_kcore(struct tk_cache *cache, const char *path, bool force, char *bid_out)
{
	struct kcore_src k = {.name = path, .fd = -1};
	char *dir = NULL, *root = NULL, *ksp = NULL, *modp = NULL, *notes = NULL;
	char *ks = NULL, *mods = NULL, *ks2 = NULL, *bdir = NULL, *out = NULL, *f = NULL;
	char bid[TK_BUILD_ID_HEX_MAX] = "", stamp[32];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct kpiece *pc = NULL;
	size_t kslen, modlen, ks2len, npc = 0;
	struct kinfo ki;
	struct stat st;
	int r;

	if (strcmp(base, "kcore"))
		return tk_fail(EINVAL,
			       "%s: a kcore file must be named 'kcore', beside its "
			       "'kallsyms' and 'modules' (as /proc has them)",
			       path);
	dir = realpath(path, NULL);
	if (!dir)
		return fail_errno(errno, path);
	*strrchr(dir, '/') = '\0';
	root = strdup(dir);
	if (!root || asprintf(&ksp, "%s/kallsyms", dir) < 0 ||
	    asprintf(&modp, "%s/modules", dir) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (strrchr(root, '/'))
		*strrchr(root, '/') = '\0';
	if (asprintf(&notes, "%s/sys/kernel/notes", root) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	k.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (k.fd < 0 || fstat(k.fd, &st) < 0) {
		r = fail_errno(errno, path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = tk_fail(EINVAL, "%s: not a regular file", path);
		goto out;
	}
	r = kcore_parse(&k, (uint64_t)st.st_size);
	if (r < 0)
		goto out;
	r = read_file(ksp, &ks, &kslen);
	if (r == 0)
		r = read_file(modp, &mods, &modlen);
	if (r < 0)
		goto out;
	/* The build id: perf reads ROOT/sys/kernel/notes for ROOT/proc/kcore. */
	if (access(notes, R_OK) == 0) {
		char *nb;
		size_t nl;
		uint8_t id[TK_BUILD_ID_MAX];

		r = read_file(notes, &nb, &nl);
		if (r == 0) {
			r = tk_elf_notes_build_id(nb, nl, false, notes, 0, id, sizeof(id));
			free(nb);
		}
		if (r > 0)
			r = tk_build_id_hex(id, (size_t)r, bid, sizeof(bid));
		if (r < 0)
			goto out;
	} else if (kcore_vmcoreinfo_bid(&k, bid) < 0) {
		r = tk_fail(ENOENT,
			    "%s: no kernel build id: neither %s nor a VMCOREINFO "
			    "BUILD-ID note in the kcore",
			    path, notes);
		goto out;
	}
	r = kcore_ranges(ksp, ks, kslen, modp, mods, &ki);
	if (r < 0)
		goto out;
	ki.stext = round_dn(ki.stext ? ki.stext : ki.first, page);
	if (ki.etext)
		ki.etext = round_upp(ki.etext, page);
	else if (ki.last)
		ki.etext = round_upp(ki.last, page) + page;
	if (ki.first_modsym && (!ki.first_mod || ki.first_modsym < ki.first_mod))
		ki.first_mod = ki.first_modsym;
	ki.first_mod = round_dn(ki.first_mod, page);
	if (ki.last_modsym)
		ki.last_modsym = round_upp(ki.last_modsym, page) + page;
	if (!ki.stext || !ki.etext || (ki.first_mod && !ki.last_modsym)) {
		r = tk_fail(EBADMSG, "%s: no kernel text symbols (_stext/_etext or functions)%s",
			    ksp, ki.first_mod ? " or no module symbols" : "");
		goto out;
	}
	for (size_t i = 0; i < k.nloads && r == 0; i++) {
		r = kpiece_add(&pc, &npc, &k.loads[i], ki.stext, ki.etext);
		if (r == 0 && ki.first_mod)
			r = kpiece_add(&pc, &npc, &k.loads[i], ki.first_mod, ki.last_modsym);
		if (r == 0 && ki.tramp)
			r = kpiece_add(&pc, &npc, &k.loads[i], round_dn(ki.tramp, page),
				       round_dn(ki.tramp, page) + page);
	}
	if (r < 0)
		goto out;
	if (!npc || npc > 1000) {
		r = tk_fail(EBADMSG,
			    "%s: no PT_LOAD segment holds the kernel text 0x%" PRIx64 "-0x%" PRIx64,
			    path, ki.stext, ki.etext);
		goto out;
	}
	/* Pieces inside the kernel text's bytes (e.g. a second text mapping) share them. */
	{
		size_t kt = npc, rel = 0;

		for (size_t i = 0; i < npc && kt == npc; i++)
			if (pc[i].addr <= ki.stext && ki.stext - pc[i].addr < pc[i].len)
				kt = i;
		for (size_t i = 0; i < npc; i++)
			if (kt < npc && i != kt && pc[i].src >= pc[kt].src &&
			    pc[i].src + pc[i].len <= pc[kt].src + pc[kt].len)
				pc[i].remap = (int)kt;
		for (size_t i = 0; i < npc; i++)
			if (pc[i].remap < 0) {
				pc[i].rel = rel;
				rel += pc[i].len;
			}
		for (size_t i = 0; i < npc; i++)
			if (pc[i].remap >= 0)
				pc[i].rel = pc[i].src - pc[pc[i].remap].src + pc[pc[i].remap].rel;
	}
	if (asprintf(&bdir, "%s/[kernel.kcore]/%s", cache->dir, bid) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (!force && kcore_cached(bdir, mods, modlen, kallsyms_stext(ks))) {
		r = 0;
		goto done;
	}
	{
		struct timeval tv;
		struct tm tm;
		char dt[24];

		gettimeofday(&tv, NULL);
		localtime_r(&tv.tv_sec, &tm);
		strftime(dt, sizeof(dt), "%Y%m%d%H%M%S", &tm);
		snprintf(stamp, sizeof(stamp), "%s%02u", dt, (unsigned)(tv.tv_usec / 10000));
	}
	if (asprintf(&out, "%s/%s", bdir, stamp) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = mkdir_p(out);
	if (r < 0)
		goto out;
	if (asprintf(&f, "%s/kallsyms", out) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto fail_dir;
	}
	r = write_file_atomic(f, ks, kslen, 0400);
	free(f);
	if (r == 0 && asprintf(&f, "%s/modules", out) >= 0) {
		r = write_file_atomic(f, mods, modlen, 0400);
		free(f);
	}
	if (r == 0 && asprintf(&f, "%s/kcore", out) >= 0) {
		r = kcore_write(&k, pc, npc, f, page);
		free(f);
	}
	/* Modules loaded or unloaded meanwhile would make the copy inconsistent. */
	if (r == 0 &&
	    (read_file(ksp, &ks2, &ks2len) < 0 || ks2len != kslen || memcmp(ks, ks2, kslen)))
		r = tk_fail(EAGAIN, "%s: changed while the kcore was copied; try again", ksp);
	if (r < 0)
		goto fail_dir;
	touch_use(out);
	r = 1;
done:
	if (bid_out)
		memcpy(bid_out, bid, sizeof(bid));
	goto out;
fail_dir:
	rm_rf(out);
	rmdir(bdir);
out:
	if (k.fd >= 0)
		close(k.fd);
	free(k.loads);
	free(pc);
	free(dir);
	free(root);
	free(ksp);
	free(modp);
	free(notes);
	free(ks);
	free(ks2);
	free(mods);
	free(bdir);
	free(out);
	return r;
}

/* ---- kernel probes ---- */

/* Address of @want in kallsyms text, or 0. */
static uint64_t kallsyms_addr(const char *ks, const char *want)
{
	size_t wl = strlen(want);

	for (const char *line = ks; *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long a;
		char type;
		int at = 0;

		if (sscanf(line, "%llx %c %n", &a, &type, &at) >= 2 && at &&
		    !strncmp(line + at, want, wl) &&
		    (line[at + wl] == '\n' || line[at + wl] == '\0' || line[at + wl] == '\t' ||
		     line[at + wl] == ' ') &&
		    (type == 't' || type == 'T' || type == 'w' || type == 'W'))
			return a;
		if (!nl)
			break;
		line = nl + 1;
	}
	return 0;
}

TK_API int tk_cache_add_kernel_probe(struct tk_cache *cache, const char *kallsyms, const char *bid,
				     const char *spec)
{
	char *s = NULL, *group = NULL, *event = NULL, *func, *args, *eq, *pct, *plusp;
	char *dir = NULL, *ks = NULL, *kspath = NULL, *probes = NULL, *def = NULL, *marker = NULL;
	uint64_t plus = 0, text, faddr;
	struct pfile pf = {0};
	bool ret = false;
	size_t kslen;
	int r;

	if (!bid) {
		bid = kernel_bid(cache);
		if (!bid)
			return tk_fail(ENOENT, "/sys/kernel/notes: no kernel build id");
	}
	if (!is_hex(bid, 16, 40))
		return tk_fail(EINVAL, "'%s' is not a build id", bid);
	if (!kallsyms)
		kallsyms = "/proc/kallsyms";
	s = strdup(spec);
	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	func = s + strspn(s, " ");
	args = func + strcspn(func, " ");
	if (*args)
		*args++ = '\0';
	args += strspn(args, " ");
	eq = strchr(func, '=');
	if (eq) {
		char *colon;

		*eq = '\0';
		colon = strchr(func, ':');
		if (colon) {
			*colon = '\0';
			group = strdup(func);
			event = strdup(colon + 1);
		} else {
			event = strdup(func);
		}
		func = eq + 1;
	}
	pct = strstr(func, "%return");
	if (pct) {
		ret = !strcmp(pct, "%return");
		*pct = '\0';
		if (!ret) {
			r = tk_fail(EINVAL, "probe spec '%s': text after %%return", spec);
			goto out;
		}
	}
	plusp = strchr(func, '+');
	if (plusp) {
		char *end;

		*plusp = '\0';
		errno = 0;
		plus = strtoull(plusp + 1, &end, 0);
		if (errno || *end || end == plusp + 1) {
			r = tk_fail(EINVAL, "probe spec '%s': bad offset", spec);
			goto out;
		}
	}
	if (!name_ok(func) || (event && !name_ok(event)) || (group && !name_ok(group))) {
		r = tk_fail(EINVAL,
			    "probe spec '%s': want [[GROUP:]EVENT=]FUNC[+OFF][%%return] [ARGS]",
			    spec);
		goto out;
	}
	r = read_file(kallsyms, &ks, &kslen);
	if (r < 0)
		goto out;
	text = kallsyms_addr(ks, "_text");
	faddr = kallsyms_addr(ks, func);
	if (!text) {
		r = tk_fail(ENOENT,
			    "%s: no _text symbol (are kernel addresses hidden? "
			    "kptr_restrict)",
			    kallsyms);
		goto out;
	}
	if (!faddr || faddr < text || faddr + plus < faddr) {
		r = tk_fail(ENOENT, "%s: no kernel function '%s'", kallsyms, func);
		goto out;
	}
	dir = entry_dir(cache, "[kernel.kallsyms]", bid);
	if (!dir || asprintf(&kspath, "%s/kallsyms", dir) < 0 ||
	    asprintf(&probes, "%s/probes", dir) < 0 ||
	    asprintf(&def, "%c:%s/%s%s _text+%" PRIu64 "%s%s", ret ? 'r' : 'p',
		     group ? group : "probe", event ? event : func, ret ? "__return" : "",
		     faddr + plus - text, *args ? " " : "", args) < 0 ||
	    asprintf(&marker, "#%s%s%s%s%s%s%s%s%s%s", event ? (group ? group : "probe") : "",
		     event ? ":" : "", event ? event : "", event ? "=" : "", func, plusp ? "+" : "",
		     plusp ? plusp + 1 : "", ret ? "%return" : "", *args ? " " : "", args) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = mkdir_p(dir);
	if (r == 0 && access(kspath, F_OK) < 0)
		r = write_file_atomic(kspath, ks, kslen, 0644);
	if (r == 0)
		r = make_link(cache, "[kernel.kallsyms]", bid, false);
	if (r == 0)
		r = pfile_load(probes, &pf);
	if (r == 0)
		r = pfile_replace(&pf, marker, &def, 1);
	if (r == 0)
		r = pfile_store(probes, &pf, cache->gzip);
	if (r == 0)
		touch_use(dir);
out:
	pfile_release(&pf);
	free(s);
	free(group);
	free(event);
	free(dir);
	free(ks);
	free(kspath);
	free(probes);
	free(def);
	free(marker);
	return r;
}
