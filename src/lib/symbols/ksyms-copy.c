// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * ksyms-copy: the kernel image's symbols without reading /proc/kallsyms.
 *
 * The kernel formats /proc/kallsyms anew for every reader: ~20 ms of
 * system time for 5.4 MB (122 k lines) on the reference VM, however large
 * the reads, a quarter of the CPU time of `tracekit report` on a 25 k
 * sample DWARF profile with a few kernel frames. Its first lines, up to the
 * first one with a "\t[" (a module's, a BPF program's, an ftrace or kprobe
 * trampoline's symbol), are the kernel image's own table, which does not
 * change while the kernel runs: the same build at the same load address
 * lists them byte for byte alike, and so does a reader who is shown every
 * address as 0. That part is kept as
 *
 *	DIR/.tk-kallsyms/<kernel build id>
 *
 * DIR the build-id cache (only one that exists: a report never creates
 * it), written to a temporary file and renamed, as debug-inflate.c does.
 * A copy is used when the running kernel has that build id and the first
 * read of /proc/kallsyms (one page, ~100 lines: they carry the load
 * address, which KASLR changes at each boot, and show whether this reader
 * sees addresses) equals the copy's beginning. A changed load address
 * rewrites the copy at the next whole read.
 *
 * What a copy may answer (symbolizer.c): addresses below the highest
 * address it lists. On x86-64 everything /proc/kallsyms lists after the
 * image's lines lies in the module area above the kernel image, so such
 * an address's symbol and the symbol after it are the copy's lines, and
 * the lookup (ksyms-lazy.c) gives what the whole text gives. Any other
 * address makes the caller read /proc/kallsyms whole. Other architectures
 * (arm64 may load modules below the kernel) keep no copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "ksyms-copy.h"

#define KSYMS_DIR  ".tk-kallsyms"
#define FIRST_READ 4096 /* what the first read() of /proc/kallsyms returns at most: a page */

/*
 * The length of @text's kernel image lines: up to the line of the first
 * "\t[". Found by memchr() of the tab, which those lines never hold
 * (memmem() of the pair cost ~8 instructions a byte, 43 M for 5.4 MB).
 */
static size_t image_part(const char *text, size_t len)
{
	const char *m = text, *end = text + len;

	while ((m = memchr(m, '\t', (size_t)(end - m))) && (m + 1 == end || m[1] != '['))
		m++;
	if (!m)
		return len;
	while (m > text && m[-1] != '\n')
		m--;
	return (size_t)(m - text);
}

static char *copy_path(const char *cache_dir, const char *bid)
{
	char *path;

	if (!cache_dir || !bid || !bid[0] || strchr(bid, '/') || bid[0] == '.')
		return NULL;
	if (asprintf(&path, "%s/" KSYMS_DIR "/%s", cache_dir, bid) < 0)
		return NULL;
	return path;
}

char *tk_ksyms_copy_get(const char *cache_dir, const char *bid, size_t *len)
{
#if defined(__x86_64__)
	char first[FIRST_READ], *path = copy_path(cache_dir, bid), *text = NULL;
	ssize_t n = -1;
	size_t tlen = 0;
	int fd;

	if (!path)
		return NULL;
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		do
			n = read(fd, first, sizeof(first));
		while (n < 0 && errno == EINTR);
		close(fd);
	}
	/* A first read that ends inside the image's lines, equal to the copy's beginning. */
	if (n > 0 && image_part(first, (size_t)n) == (size_t)n && access(path, R_OK) == 0 &&
	    tk_read_file(path, &text, &tlen) == 0 &&
	    (tlen < (size_t)n || memcmp(text, first, (size_t)n) || text[tlen - 1] != '\n')) {
		free(text);
		text = NULL;
	}
	free(path);
	if (n <= 0 || !text) {
		free(text);
		return NULL;
	}
	*len = tlen;
	return text;
#else
	(void)cache_dir;
	(void)bid;
	(void)len;
	return NULL;
#endif
}

void tk_ksyms_copy_put(const char *cache_dir, const char *bid, const char *text, size_t len)
{
#if defined(__x86_64__)
	char *path = copy_path(cache_dir, bid), *dir = NULL;
	size_t n = image_part(text, len);
	struct stat st;

	/* The image's lines end at a newline, and the cache directory exists. */
	if (path && n && text[n - 1] == '\n' && !stat(cache_dir, &st) && S_ISDIR(st.st_mode) &&
	    asprintf(&dir, "%s/" KSYMS_DIR, cache_dir) >= 0 && tk_mkdir_p(dir) == 0)
		(void)tk_write_file_atomic(path, text, n, 0644);
	free(dir);
	free(path);
#else
	(void)cache_dir;
	(void)bid;
	(void)text;
	(void)len;
#endif
}
