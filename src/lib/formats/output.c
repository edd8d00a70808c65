// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * output: writing a file without destroying what was there (output.h).
 *
 * What the target is decides how it is written:
 *   - absent, or a regular file: "<target>.tmp.XXXXXX" is created beside it
 *     (same directory, so rename() is atomic) and renamed over it by
 *     tk_output_finish() after fsync(); the name then holds the old file or
 *     the whole new one, never a part. A replaced file keeps its mode.
 *   - a symbolic link: followed, hop by hop (at most 40, as the kernel
 *     allows), to the final target, which is then treated as above in its
 *     own directory. A dangling link names the file to create. The link
 *     itself is never replaced.
 *   - a character device or a FIFO: opened for writing and written
 *     through. Unlinking /dev/null (as root) or a FIFO another program
 *     reads would break the system or the pipeline; the caller writes a
 *     format that streams (or refuses, saying why).
 *   - "-": standard output (a duplicate of descriptor 1), written through
 *     like a stream whatever it is, as perf's "-o -".
 *   - a directory, block device or socket: refused.
 *
 * A replaced file is synced behind its writer: a thread fdatasync()s it
 * every SYNC_BEHIND_NS while it is written, so that its blocks, the
 * journal's record of them and the disk's cache flush go out while the
 * writer works, and tk_output_finish()'s fsync() waits on the last few
 * milliseconds' data only. Writing back alone (the .dat writer's
 * sync_file_range() as it goes) leaves the flush to the end: on the
 * reference VM (ext4 on a virtual disk whose host caches writes) the fsync
 * of bench-report's 125 MB convert output took 65-115 ms after all of its
 * data was written back, 1-15 ms synced behind, and the convert's wall fell
 * by a fifth at the same CPU time. The thread costs a wake-up every
 * SYNC_BEHIND_NS; an error it meets is the finish's error (an fsync()
 * reports a write-back error once per descriptor, so the final one would
 * not see it again).
 *
 * The temporary file is made with open(O_EXCL) and a random suffix rather
 * than mkstemp(): mkstemp creates mode 0600, and fixing that needs the
 * process umask, which can only be read by changing it (not thread-safe).
 * open() applies the umask itself.
 */
#include <tracekit/output.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal/error.h"

#define MAX_LINK_HOPS  40
#define SYNC_BEHIND_NS (20u * 1000 * 1000)

struct tk_output {
	enum tk_output_kind kind;
	int fd;
	char *target; /* links resolved */
	char *temp;   /* NULL for a stream, and once renamed */
	/* The sync-behind thread (see the notes); its fields under lock. */
	pthread_t behind;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool behind_started, behind_stop;
	int behind_err; /* the first errno of its fdatasync() calls */
};

static void *sync_behind_main(void *arg)
{
	struct tk_output *out = arg;
	struct timespec at;
	int err;

	pthread_mutex_lock(&out->lock);
	clock_gettime(CLOCK_MONOTONIC, &at);
	while (!out->behind_stop) {
		at.tv_nsec += SYNC_BEHIND_NS;
		if (at.tv_nsec >= 1000000000) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000;
		}
		while (!out->behind_stop &&
		       pthread_cond_timedwait(&out->wake, &out->lock, &at) == 0)
			;
		if (out->behind_stop)
			break;
		pthread_mutex_unlock(&out->lock);
		err = fdatasync(out->fd) < 0 ? errno : 0;
		pthread_mutex_lock(&out->lock);
		if (err && !out->behind_err)
			out->behind_err = err;
		/* A sync that took longer than the period is followed by the next at once. */
		clock_gettime(CLOCK_MONOTONIC, &at);
	}
	pthread_mutex_unlock(&out->lock);
	return NULL;
}

/* Start the sync-behind thread; one that cannot start only costs the finish its wait. */
static void sync_behind_start(struct tk_output *out)
{
	pthread_condattr_t attr;

	if (pthread_condattr_init(&attr))
		return;
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
	    pthread_cond_init(&out->wake, &attr) == 0) {
		pthread_mutex_init(&out->lock, NULL);
		out->behind_started =
			pthread_create(&out->behind, NULL, sync_behind_main, out) == 0;
		if (!out->behind_started) {
			pthread_mutex_destroy(&out->lock);
			pthread_cond_destroy(&out->wake);
		}
	}
	pthread_condattr_destroy(&attr);
}

/* Stop and join the sync-behind thread. Return: the errno of its first failed sync, or 0. */
static int sync_behind_stop(struct tk_output *out)
{
	int err;

	if (!out->behind_started)
		return 0;
	pthread_mutex_lock(&out->lock);
	out->behind_stop = true;
	pthread_cond_signal(&out->wake);
	pthread_mutex_unlock(&out->lock);
	pthread_join(out->behind, NULL);
	err = out->behind_err;
	out->behind_started = false;
	pthread_mutex_destroy(&out->lock);
	pthread_cond_destroy(&out->wake);
	return err;
}

/*
 * Follow @path's links to the name that will hold the data. @st receives
 * that name's lstat(), or st_mode 0 when it does not exist.
 */
static char *resolve_target(const char *path, struct stat *st, int *err)
{
	char *cur = strdup(path);

	for (int hops = 0; cur; hops++) {
		char link[PATH_MAX];
		ssize_t n;
		char *next;

		if (lstat(cur, st) < 0) {
			if (errno != ENOENT) {
				*err = tk_fail(errno, "%s: %s", cur, strerror(errno));
				goto fail;
			}
			memset(st, 0, sizeof(*st));
			return cur;
		}
		if (!S_ISLNK(st->st_mode))
			return cur;
		if (hops == MAX_LINK_HOPS) {
			*err = tk_fail(ELOOP, "%s: too many levels of symbolic links", path);
			goto fail;
		}
		n = readlink(cur, link, sizeof(link) - 1);
		if (n < 0) {
			*err = tk_fail(errno, "%s: %s", cur, strerror(errno));
			goto fail;
		}
		link[n] = '\0';
		if (link[0] == '/') {
			next = strdup(link);
		} else {
			/* A relative link is relative to the directory holding it. */
			const char *slash = strrchr(cur, '/');
			int dir_len = slash ? (int)(slash - cur + 1) : 0;

			if (asprintf(&next, "%.*s%s", dir_len, cur, link) < 0)
				next = NULL;
		}
		free(cur);
		cur = next;
	}
	*err = tk_fail(ENOMEM, "out of memory");
	return NULL;
fail:
	free(cur);
	return NULL;
}

static int create_temp(struct tk_output *out, const struct stat *st)
{
	/* A replaced file keeps its mode; a new one gets 0666 less the umask. */
	mode_t mode = st->st_mode ? (st->st_mode & 07777) : 0666;

	for (int tries = 0; tries < 100; tries++) {
		uint64_t rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), 0) < 0)
			rnd = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull + (uint64_t)tries;
		free(out->temp);
		if (asprintf(&out->temp, "%s.tmp.%06" PRIx64, out->target, rnd & 0xffffff) < 0) {
			out->temp = NULL;
			return tk_fail(ENOMEM, "out of memory");
		}
		out->fd = open(out->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (out->fd >= 0)
			break;
		if (errno != EEXIST) {
			int err = errno;

			free(out->temp);
			out->temp = NULL;
			return tk_fail(err, "%s: cannot create a temporary file beside it: %s",
				       out->target, strerror(err));
		}
	}
	if (out->fd < 0) {
		free(out->temp);
		out->temp = NULL;
		return tk_fail(EEXIST, "%s: no free temporary name beside it", out->target);
	}
	if (st->st_mode && fchmod(out->fd, mode) < 0)
		return tk_fail(errno, "%s: %s", out->temp, strerror(errno));
	return 0;
}

static bool same_file(const char *target, const struct stat *st, const char *input)
{
	struct stat in;

	if (!input || !st->st_mode)
		return false;
	if (stat(input, &in) < 0)
		return !strcmp(target, input);
	return in.st_dev == st->st_dev && in.st_ino == st->st_ino;
}

struct tk_output *tk_output_open(const char *path, const char *input)
{
	struct tk_output *out = calloc(1, sizeof(*out));
	struct stat st;
	int r = 0;

	if (!out) {
		tk_fail(ENOMEM, "out of memory");
		return NULL;
	}
	out->fd = -1;
	if (strcmp(path, "-") == 0) {
		out->kind = TK_OUTPUT_STREAM;
		out->target = strdup("-");
		out->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (!out->target)
			r = tk_fail(ENOMEM, "out of memory");
		else if (out->fd < 0)
			r = tk_fail(errno, "standard output: %s", strerror(errno));
		if (r < 0)
			goto fail;
		return out;
	}
	out->target = resolve_target(path, &st, &r);
	if (!out->target)
		goto fail;
	if (same_file(out->target, &st, input)) {
		r = tk_fail(EINVAL, "%s: input and output are the same file", path);
	} else if (S_ISDIR(st.st_mode)) {
		r = tk_fail(EISDIR, "%s: is a directory", path);
	} else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
		out->kind = TK_OUTPUT_STREAM;
		out->fd = open(out->target, O_WRONLY | O_CLOEXEC);
		if (out->fd < 0)
			r = tk_fail(errno, "%s: %s", path, strerror(errno));
	} else if (st.st_mode && !S_ISREG(st.st_mode)) {
		r = tk_fail(ENOTSUP, "%s: not a regular file, character device or FIFO", path);
	} else {
		out->kind = TK_OUTPUT_REPLACE;
		r = create_temp(out, &st);
		if (!r)
			sync_behind_start(out);
	}
	if (r < 0)
		goto fail;
	return out;
fail:
	tk_output_close(out);
	errno = -r;
	return NULL;
}

char *tk_output_target_of(const char *path, enum tk_output_kind *kind)
{
	struct stat st;
	char *target, *dir;
	int r = 0;

	if (strcmp(path, "-") == 0) {
		*kind = TK_OUTPUT_STREAM;
		target = strdup("-");
		if (!target)
			errno = -tk_fail(ENOMEM, "out of memory");
		return target;
	}
	target = resolve_target(path, &st, &r);
	if (!target) {
		errno = -r;
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		r = tk_fail(EISDIR, "%s: is a directory", path);
	} else if (st.st_mode && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) &&
		   !S_ISFIFO(st.st_mode)) {
		r = tk_fail(ENOTSUP, "%s: not a regular file, character device or FIFO", path);
	} else if (!st.st_mode) {
		/* A new file: its directory must exist (named, not a spool file beside it). */
		const char *slash = strrchr(target, '/');

		if (slash && slash != target &&
		    asprintf(&dir, "%.*s", (int)(slash - target), target) >= 0) {
			if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
				r = tk_fail(ENOENT, "%s: directory %s does not exist", path, dir);
			free(dir);
		}
		memset(&st, 0, sizeof(st));
	}
	if (r < 0) {
		free(target);
		errno = -r;
		return NULL;
	}
	*kind = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) ? TK_OUTPUT_STREAM : TK_OUTPUT_REPLACE;
	return target;
}

int tk_output_fd(const struct tk_output *out)
{
	return out->fd;
}

enum tk_output_kind tk_output_kind(const struct tk_output *out)
{
	return out->kind;
}

const char *tk_output_temp_path(const struct tk_output *out)
{
	return out->temp;
}

const char *tk_output_target(const struct tk_output *out)
{
	return out->target;
}

int tk_output_finish(struct tk_output *out, uint64_t *size)
{
	const char *name = out->temp ? out->temp : out->target;
	struct stat st = {0};
	int fd = out->fd, behind_err = sync_behind_stop(out);

	out->fd = -1;
	if (out->kind == TK_OUTPUT_REPLACE && (behind_err || fstat(fd, &st) < 0 || fsync(fd) < 0)) {
		int err = behind_err ? behind_err : errno;

		close(fd);
		return tk_fail(err, "%s: %s", name, strerror(err));
	}
	if (close(fd) < 0)
		return tk_fail(errno, "%s: %s", name, strerror(errno));
	if (out->kind == TK_OUTPUT_REPLACE) {
		if (rename(out->temp, out->target) < 0)
			return tk_fail(errno, "cannot rename %s to %s: %s", out->temp, out->target,
				       strerror(errno));
		free(out->temp);
		out->temp = NULL;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	return 0;
}

void tk_output_close(struct tk_output *out)
{
	if (!out)
		return;
	(void)sync_behind_stop(out);
	if (out->fd >= 0)
		close(out->fd);
	if (out->temp)
		unlink(out->temp);
	free(out->temp);
	free(out->target);
	free(out);
}
