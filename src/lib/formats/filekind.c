// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * filekind: tell a .dat from a perf.data (file or pipe mode) by the first
 * 16 bytes. A .dat opens with 0x17 0x08 0x44 "tracing"; perf.data with the
 * magic "PERFILE2" and then its header's size as a little-endian u64: 16
 * for the pipe mode's short header, the full header's size (104, or 72 in
 * old files) otherwise; version 1 files open with "PERFFILE" and the same
 * layout; a big-endian machine's perf.data reads "2ELIFREP" and its size
 * is big-endian. Only the magic and that size are looked at: the
 * readers check everything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/filekind.h>

enum tk_filekind tk_filekind_of_header(const void *buf, size_t len)
{
	static const char dat_magic[10] = "\x17\x08\x44tracing";
	uint64_t size;

	if (len >= sizeof(dat_magic) && !memcmp(buf, dat_magic, sizeof(dat_magic)))
		return TK_FILE_DAT;
	/* "PERFFILE": perf.data version 1, which the perf.data reader takes too. */
	if (len >= 8 && !memcmp(buf, "2ELIFREP", 8)) {
		/* A big-endian machine's perf.data: the size is big-endian too. */
		if (len < 16)
			return TK_FILE_PERFDATA;
		memcpy(&size, (const char *)buf + 8, 8);
		return __builtin_bswap64(size) == 16 ? TK_FILE_PERFDATA_PIPE : TK_FILE_PERFDATA;
	}
	if (len < 8 || (memcmp(buf, "PERFILE2", 8) && memcmp(buf, "PERFFILE", 8)))
		return TK_FILE_OTHER;
	if (len < 16)
		return TK_FILE_PERFDATA;
	memcpy(&size, (const char *)buf + 8, 8);
	return size == 16 ? TK_FILE_PERFDATA_PIPE : TK_FILE_PERFDATA;
}

enum tk_filekind tk_filekind_of(const char *path)
{
	unsigned char head[TK_FILEKIND_HEADER_BYTES];
	size_t got = 0;
	int fd, saved;

	if (!strcmp(path, "-")) {
		errno = EINVAL;
		return TK_FILE_OTHER;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return TK_FILE_OTHER;
	while (got < sizeof(head)) {
		ssize_t n = read(fd, head + got, sizeof(head) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	saved = errno;
	close(fd);
	errno = saved;
	return tk_filekind_of_header(head, got);
}
