// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * File-system helpers shared by the library's modules (the build-id cache,
 * its probe files and kcore copies, the perf.data reader).
 *
 * Files that others read while we write them (a cache's probes, kallsyms
 * copies) are replaced whole: written to "<path>.tk<pid>" beside the
 * target and renamed over it, so a reader sees the old file or the new
 * one, never half of either. tk_read_file() reads until end of file rather
 * than trusting st_size, because /proc files (kallsyms, maps, modules)
 * report a size of 0. tk_rm_rf() never follows a symbolic link, so a link
 * planted in a cache cannot make it delete outside the tree.
 *
 * tk_pread_full() is the one pread() loop of the library: short reads and
 * EINTR are retried, end of file is a short count (not an error), and it
 * records no message, because only the caller knows which file and which
 * structure was being read.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"

int tk_fail_errno(int err, const char *what)
{
	return tk_fail(err, "%s: %s", what, strerror(err));
}

int tk_mkdir_p(const char *path)
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
			r = tk_fail_errno(errno, tmp);
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

int tk_rm_rf(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return tk_fail_errno(errno, path);
	return 0;
}

/* Remove empty directories from @path up to (not including) @stop. */
void tk_rmdir_parents(const char *path, const char *stop)
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

int tk_write_all(int fd, const void *data, size_t len)
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

int64_t tk_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			break;
		done += (size_t)n;
	}
	return (int64_t)done;
}

/* Replace @path with @data through a temporary file and rename(). */
int tk_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp;
	int fd, r;

	if (asprintf(&tmp, "%s.tk%d", path, (int)getpid()) < 0)
		return tk_fail(ENOMEM, "out of memory");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		r = tk_fail_errno(errno, tmp);
		free(tmp);
		return r;
	}
	r = tk_write_all(fd, data, len);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		tk_fail_errno(-r, path);
	}
	free(tmp);
	return r;
}

int tk_read_file(const char *path, char **data, size_t *len)
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
			r = tk_fail_errno(errno, path);
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

int tk_copy_file(const char *src, const char *dst)
{
	struct stat st;
	size_t len;
	char *data;
	int r;

	if (stat(src, &st) < 0)
		return tk_fail_errno(errno, src);
	r = tk_read_file(src, &data, &len);
	if (r < 0)
		return r;
	r = tk_write_file_atomic(dst, data, len, st.st_mode & 07777);
	free(data);
	return r;
}

/* Hard-link @src as @dst, or copy it when a link cannot be made. */
int tk_link_or_copy(const char *src, const char *dst)
{
	if (link(src, dst) == 0 || errno == EEXIST)
		return 0;
	return tk_copy_file(src, dst);
}
