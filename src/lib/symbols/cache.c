// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * The build-id cache, in perf 6.1's layout: the handle, its entries, adding
 * binaries, kallsyms and probes, removal, queries over the probe caches,
 * statistics, eviction and garbage collection. The probes file format and
 * the SDT conversion are probecache.c's, kcore copies kcore.c's, and the
 * symbolizer that reads the cache symbolizer.c's.
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
 * our lookups, both by build id, can reach them), then the empty
 * directories removals leave; its walk carries its count in a context, so
 * threads may collect on different caches at once.
 *
 * Beyond perf: each entry records its last use in a file of its own,
 *
 *	<entry dir>/.tk-use    empty; its mtime (ns) is the last add or lookup
 *
 * written (utimensat with the clock's time, not the file system's coarser
 * one) on add, on every symbol lookup through the entry, and when a query
 * matches one of its probes. Not the directory's access time: on a
 * relatime mount (the default) any reader moves it (a listing, "ls -R",
 * perf's own scans), which would make every entry look just used. Only
 * this library writes the stamp, and only for a real use; reading it is a
 * stat(), which changes nothing. An entry without a stamp (perf made it)
 * counts as used when its directory last changed. The dot keeps the stamp
 * out of perf's way (perf reads elf, debug, probes... by name) and out of
 * the entry's size. tk_cache_evict() removes entries in last-use order
 * until the apparent size of all entries fits; a hard-linked "elf" counts
 * in full though it may share its blocks with the original, which makes
 * the limit safe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/cache.h>

#include "cache-internal.h"
#include "error.h"
#include "fsutil.h"
#include "kmod-file.h"
#include "probecache-internal.h"

struct tk_cache {
	char *dir;
	char kbid[TK_BUILD_ID_HEX_MAX];
	int kbid_state; /* 0 unknown, 1 known, -1 unavailable */
	bool gzip;	/* write probes.gz (tk_cache_set_gzip) */
};

const char *tk_cache_debug_root(void)
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

#define USE_STAMP ".tk-use"

/*
 * Record a use of the entry in @dir: set its stamp's mtime to now, from
 * CLOCK_REALTIME so that uses a few microseconds apart stay ordered (the
 * file system's own "now" is only as fine as the kernel tick). Best effort:
 * a read-only cache still serves lookups.
 */
void tk_cache_touch_use(const char *dir)
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
		return tk_fail_null(ENOMEM, "out of memory");
	}
	if (create) {
		r = tk_mkdir_p(abs);
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
			r = tk_fail_errno(errno, abs);
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

int tk_cache_running_kernel_bid(char *hex)
{
	uint8_t id[TK_BUILD_ID_MAX];
	int n = tk_elf_kernel_build_id(id, sizeof(id));

	return n > 0 ? tk_elf_build_id_hex(id, (size_t)n, hex, TK_BUILD_ID_HEX_MAX) : n;
}

const char *tk_cache_kernel_bid(struct tk_cache *c)
{
	if (!c->kbid_state)
		c->kbid_state = tk_cache_running_kernel_bid(c->kbid) > 0 ? 1 : -1;
	return c->kbid_state > 0 ? c->kbid : NULL;
}

int tk_cache_file_build_id(const char *path, char *hex)
{
	/* A .ko.gz or .ko.xz is read inflated, as perf buildid-cache reads it. */
	return tk_kmod_file_build_id(path, tk_kmod_compression(path), hex);
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
		const char *k = tk_cache_kernel_bid(c);

		e->valid = k && !strcmp(k, e->bid);
	} else if (e->path[0] == '/') {
		char hex[TK_BUILD_ID_HEX_MAX];

		e->valid = tk_cache_file_build_id(e->path, hex) > 0 && !strcmp(hex, e->bid);
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
		r = tk_fail_errno(errno, idx);
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
	r = tk_mkdir_p(sub);
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
		r = tk_fail_errno(errno, link);
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
bool tk_cache_table_broken(struct tk_elf *elf, enum tk_elf_symtab_kind kind)
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
	r = tk_mkdir_p(dir);
	if (r < 0)
		goto out;
	if (asprintf(&elfp, "%s/elf", dir) < 0 || asprintf(&dbg, "%s/debug", dir) < 0 ||
	    asprintf(&dbgsrc, "%s/.build-id/%.2s/%s.debug", tk_cache_debug_root(), bid, bid + 2) <
		    0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = tk_link_or_copy(abs, elfp);
	if (r < 0)
		goto out;
	if (access(dbgsrc, R_OK) == 0)
		tk_link_or_copy(dbgsrc, dbg); /* debug info is a bonus; failing it is not fatal */
	tk_cache_touch_use(dir);
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
		return tk_fail_errno(errno, path);
	/* A compressed module is stored as it is (perf's "elf" is its .ko.xz bytes too). */
	elf = tk_kmod_elf_open(abs, tk_kmod_compression(abs));
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
	tk_elf_build_id_hex(id, (size_t)n, bid, sizeof(bid));
	/*
	 * The entry needs the build id and the SDT notes, which are sound; a
	 * broken symbol table only costs the symbols of what is cached. Cache
	 * it, but say so now rather than as [unknown] frames in a report.
	 */
	for (int k = TK_ELF_SYMTAB; k <= TK_ELF_DYNSYM; k++) {
		if (tk_cache_table_broken(elf, (enum tk_elf_symtab_kind)k))
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
	r = tk_pfile_write_sdt(probes, abs, elf, cache->gzip);
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

/*
 * A probe spec "[[GROUP:]EVENT=]FUNC[+OFF][%return] [ARGS]" (user-space
 * and kernel probes share the form), split in place in @s, a copy of
 * @spec the caller owns and frees. @group and @event are malloc'ed (NULL
 * when not given) and the caller frees them; the other strings point into
 * @s. Return: 0, -EINVAL naming @spec, -ENOMEM.
 */
struct probe_spec {
	char *group, *event;
	const char *func, *args;
	const char *off; /* OFF as written, or NULL */
	uint64_t plus;	 /* OFF's value, 0 without */
	bool ret;	 /* %return */
	bool named;	 /* EVENT= was given */
};

static int probe_spec_parse(struct probe_spec *ps, char *s, const char *spec)
{
	char *func, *args, *eq, *pct, *plusp;

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
			ps->group = strdup(func);
			if (!ps->group)
				return tk_fail(ENOMEM, "out of memory");
			ps->event = strdup(colon + 1);
		} else {
			ps->event = strdup(func);
		}
		if (!ps->event)
			return tk_fail(ENOMEM, "out of memory");
		ps->named = true;
		func = eq + 1;
	}
	pct = strstr(func, "%return");
	if (pct) {
		if (strcmp(pct, "%return"))
			return tk_fail(EINVAL, "probe spec '%s': text after %%return", spec);
		*pct = '\0';
		ps->ret = true;
	}
	plusp = strchr(func, '+');
	if (plusp) {
		char *end;

		*plusp = '\0';
		errno = 0;
		ps->plus = strtoull(plusp + 1, &end, 0);
		if (errno || *end || end == plusp + 1)
			return tk_fail(EINVAL, "probe spec '%s': bad offset", spec);
		ps->off = plusp + 1;
	}
	if (!tk_probe_name_ok(func) || (ps->event && !tk_probe_name_ok(ps->event)) ||
	    (ps->group && !tk_probe_name_ok(ps->group)))
		return tk_fail(EINVAL,
			       "probe spec '%s': want [[GROUP:]EVENT=]FUNC[+OFF][%%return] [ARGS]",
			       spec);
	ps->func = func;
	ps->args = args;
	return 0;
}

TK_API int tk_cache_add_probe(struct tk_cache *cache, const char *path, const char *spec)
{
	char bid[TK_BUILD_ID_HEX_MAX], *abs = NULL, *dir = NULL, *probes = NULL;
	char *s = NULL, *group = NULL, *event = NULL, *def = NULL, *marker = NULL;
	const struct tk_elf_symbol *syms;
	struct probe_spec ps = {0};
	struct tk_elf *elf = NULL;
	uint64_t addr = 0, off;
	bool found = false;
	struct tk_pfile pf = {0};
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
	r = probe_spec_parse(&ps, s, spec);
	group = ps.group; /* freed at out, also after a failed parse */
	event = ps.event;
	if (r < 0)
		goto out;
	if (!group) {
		const char *base = strrchr(abs, '/') ? strrchr(abs, '/') + 1 : abs;

		if (asprintf(&group, "probe_%s", base) < 0)
			group = NULL;
		else
			sanitize(group);
	}
	if (!event)
		event = strdup(ps.func);
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
		    syms[i].shndx && !strcmp(syms[i].name, ps.func)) {
			addr = syms[i].value;
			found = true;
		}
	if (!found) {
		r = tk_fail(ENOENT, "%s: no function '%s'", abs, ps.func);
		goto out;
	}
	r = tk_elf_vaddr_to_offset(elf, addr + ps.plus, &off);
	if (r < 0)
		goto out;
	if (asprintf(&def, "%c:%s/%s%s %s:0x%" PRIx64 "%s%s", ps.ret ? 'r' : 'p', group, event,
		     ps.ret ? "__return" : "", abs, off, *ps.args ? " " : "", ps.args) < 0 ||
	    asprintf(&marker, "#%s%s%s%s%s%s%s%s%s", ps.named ? group : "", ps.named ? ":" : "",
		     ps.named ? event : "", ps.named ? "=" : "", ps.func, ps.plus ? "+" : "",
		     ps.plus ? ps.off : "", ps.ret ? "%return" : "", "") < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	if (*ps.args) {
		char *m2;

		if (asprintf(&m2, "%s %s", marker, ps.args) < 0) {
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
	r = tk_pfile_load(probes, &pf);
	if (r == 0)
		r = tk_pfile_replace(&pf, marker, &def, 1);
	if (r == 0)
		r = tk_pfile_store(probes, &pf, cache->gzip);
out:
	tk_pfile_release(&pf);
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
	const char *bid = tk_cache_kernel_bid(cache);
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
	r = tk_mkdir_p(dir);
	if (r == 0)
		r = tk_copy_file("/proc/kallsyms", ks);
	if (r == 0 && access(probes, F_OK) < 0)
		r = tk_write_file_atomic(probes, "", 0, 0644);
	if (r == 0)
		r = make_link(cache, "[kernel.kallsyms]", bid, false);
	if (r == 0) {
		tk_cache_touch_use(dir);
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
			int (*fn)(struct tk_pfile *pf, const void *arg), const void *arg)
{
	struct tk_pfile pf;
	int r;

	r = tk_pfile_load(probes, &pf);
	if (r == 0) {
		r = fn(&pf, arg);
		if (r > 0)
			r = tk_pfile_store(probes, &pf, c->gzip);
	}
	tk_pfile_release(&pf);
	return r < 0 ? r : 0;
}

static int drop_path_fn(struct tk_pfile *pf, const void *path)
{
	return tk_pfile_drop_path(pf, path);
}

static int merge_fn(struct tk_pfile *pf, const void *src)
{
	const struct tk_pfile *from = src;
	int r;

	if (!from->n)
		return 0;
	r = tk_pfile_merge(pf, from);
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
	struct tk_pfile carry = {0};
	char *link = NULL, *probes = NULL;
	int r = 0;

	if (e->kcore) {
		/* Nothing links a kcore copy. */
	} else if (e->linked) {
		heir = link_heir(v, n, e);
		if (heir && asprintf(&probes, "%s/probes", e->dir) >= 0) {
			r = tk_pfile_load(probes, &carry);
			if (r == 0)
				tk_pfile_drop_path(&carry, e->path);
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
		r = tk_rm_rf(e->dir);
	if (r < 0)
		goto out;
	tk_rmdir_parents(e->dir, c->dir);
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
		tk_rmdir_parents(link, c->dir);
	}
out:
	tk_pfile_release(&carry);
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
		r = tk_cache_file_build_id(what, bid);
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
		struct tk_pfile pf;
		char *probes;
		bool changed = false, matched = false;

		if (!v[i].linked || (!all && !v[i].valid) || !query_entry(qp, &v[i]))
			continue;
		if (asprintf(&probes, "%s/probes", v[i].dir) < 0) {
			r = tk_fail(ENOMEM, "out of memory");
			break;
		}
		r = tk_pfile_load(probes, &pf);
		if (r < 0) {
			free(probes);
			break;
		}
		centry_public(&v[i], &pub);
		for (size_t k = 0; k < pf.n && r >= 0;) {
			struct tk_pentry *pe = &pf.v[k];
			char *g = NULL, *ev = NULL;
			struct tk_cache_probe p;

			if (!pe->ndefs || !tk_probe_def_name(pe->defs[0], &g, &ev)) {
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
				tk_pfile_remove_at(&pf, k);
				changed = true;
			} else {
				k++;
			}
		}
		if (r >= 0 && changed)
			r = tk_pfile_store(probes, &pf, c->gzip);
		/* A query that found probes here used the entry; one that only looked did not. */
		if (use && matched)
			tk_cache_touch_use(v[i].dir);
		tk_pfile_release(&pf);
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

/* What a walk for empty directories carries: no globals, so two caches collect at once. */
struct prune_walk {
	int removed;
};

/*
 * Remove the empty directories below @dir, deepest first, so that a chain
 * of them goes in one walk; @dir itself stays. Symbolic links are not
 * followed (nothing outside the cache, no loops), and the depth is bounded
 * so a planted tree cannot exhaust the stack.
 */
static void prune_empty_dirs(struct prune_walk *w, const char *dir, int depth)
{
	struct dirent *de;
	DIR *d;

	if (depth > 256)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (asprintf(&sub, "%s/%s", dir, de->d_name) < 0)
			continue;
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
			prune_empty_dirs(w, sub, depth + 1);
			if (rmdir(sub) == 0)
				w->removed++;
		}
		free(sub);
	}
	closedir(d);
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
	/* Empty directories left by removals, perf's included (never the root itself). */
	{
		struct prune_walk w = {0};

		prune_empty_dirs(&w, cache->dir, 0);
		removed += w.removed;
	}
	return removed;
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
	char *s = NULL, *group = NULL, *event = NULL;
	char *dir = NULL, *ks = NULL, *kspath = NULL, *probes = NULL, *def = NULL, *marker = NULL;
	uint64_t text, faddr;
	struct probe_spec ps = {0};
	struct tk_pfile pf = {0};
	size_t kslen;
	int r;

	if (!bid) {
		bid = tk_cache_kernel_bid(cache);
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
	r = probe_spec_parse(&ps, s, spec);
	group = ps.group; /* freed at out, also after a failed parse */
	event = ps.event;
	if (r < 0)
		goto out;
	r = tk_read_file(kallsyms, &ks, &kslen);
	if (r < 0)
		goto out;
	text = kallsyms_addr(ks, "_text");
	faddr = kallsyms_addr(ks, ps.func);
	if (!text) {
		r = tk_fail(ENOENT,
			    "%s: no _text symbol (are kernel addresses hidden? "
			    "kptr_restrict)",
			    kallsyms);
		goto out;
	}
	if (!faddr || faddr < text || faddr + ps.plus < faddr) {
		r = tk_fail(ENOENT, "%s: no kernel function '%s'", kallsyms, ps.func);
		goto out;
	}
	dir = entry_dir(cache, "[kernel.kallsyms]", bid);
	if (!dir || asprintf(&kspath, "%s/kallsyms", dir) < 0 ||
	    asprintf(&probes, "%s/probes", dir) < 0 ||
	    asprintf(&def, "%c:%s/%s%s _text+%" PRIu64 "%s%s", ps.ret ? 'r' : 'p',
		     group ? group : "probe", event ? event : ps.func, ps.ret ? "__return" : "",
		     faddr + ps.plus - text, *ps.args ? " " : "", ps.args) < 0 ||
	    asprintf(&marker, "#%s%s%s%s%s%s%s%s%s%s", event ? (group ? group : "probe") : "",
		     event ? ":" : "", event ? event : "", event ? "=" : "", ps.func,
		     ps.off ? "+" : "", ps.off ? ps.off : "", ps.ret ? "%return" : "",
		     *ps.args ? " " : "", ps.args) < 0) {
		r = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	r = tk_mkdir_p(dir);
	if (r == 0 && access(kspath, F_OK) < 0)
		r = tk_write_file_atomic(kspath, ks, kslen, 0644);
	if (r == 0)
		r = make_link(cache, "[kernel.kallsyms]", bid, false);
	if (r == 0)
		r = tk_pfile_load(probes, &pf);
	if (r == 0)
		r = tk_pfile_replace(&pf, marker, &def, 1);
	if (r == 0)
		r = tk_pfile_store(probes, &pf, cache->gzip);
	if (r == 0)
		tk_cache_touch_use(dir);
out:
	tk_pfile_release(&pf);
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
