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
 * The file holds a header (magic, entry count, text length), the lines'
 * index as ksyms-lazy.c makes it (address, place, module flag; this
 * machine's byte order: only x86-64 keeps copies) and the text: adopting
 * the index instead of parsing 120 k lines saves ~29 M instructions a
 * report. The sizes must add up to the file's and every entry must be a
 * whole line of the text in order (tk_ksyms_lazy_adopt()), else the copy
 * is ignored.
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
 *
 * A name the copy lacks (the kmem events read vmemmap_base's address,
 * which a kernel without KALLSYMS_ALL lists nowhere) is absent from the
 * whole text too when no module is loaded and it is not one of the names
 * the kernel makes up for the other lines past the image (BPF, ftrace,
 * kprobes): tk_ksyms_past_image_lacks() reads /proc/modules (empty or
 * absent) instead of the whole text (~20 ms of system time).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "ksyms-copy.h"
#include "ksyms-lazy.h"

#define KSYMS_DIR  ".tk-kallsyms"
#define FIRST_READ 4096 /* what the first read() of /proc/kallsyms returns at most: a page */
#define MAGIC	   "TKKSYM01"

/* The file: this header, the index entries (ksyms-lazy.c's, host order), the text. */
struct copy_header {
	char magic[8];
	uint64_t n;	   /* index entries */
	uint64_t text_len; /* bytes of kallsyms text */
};

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

char *tk_ksyms_copy_path(const char *cache_dir, const char *bid)
{
	char *path;

	if (!cache_dir || !bid || !bid[0] || strchr(bid, '/') || bid[0] == '.')
		return NULL;
	if (asprintf(&path, "%s/" KSYMS_DIR "/%s", cache_dir, bid) < 0)
		return NULL;
	return path;
}

int tk_ksyms_copy_get(const char *cache_dir, const char *bid, const char **text, size_t *len,
		      const void **lines, size_t *n, void **map, size_t *map_len)
{
#if defined(__x86_64__)
	char first[FIRST_READ], *path = tk_ksyms_copy_path(cache_dir, bid);
	size_t es = tk_ksyms_lazy_line_size();
	const uint8_t *m = MAP_FAILED;
	struct copy_header h;
	struct stat st;
	ssize_t got = -1;
	int fd;

	if (!path)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	/*
	 * Mapped, not read: reading 8 MB into fresh memory faulted its 2 000
	 * pages in one by one (~6 ms of system time); the page cache's pages
	 * map in batches. The sizes must add up to the file's.
	 */
	if (fstat(fd, &st) || (uint64_t)st.st_size < sizeof(h) || (uint64_t)st.st_size > SIZE_MAX)
		goto fail;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	fd = -1;
	if (m == MAP_FAILED)
		goto fail;
	memcpy(&h, m, sizeof(h));
	if (memcmp(h.magic, MAGIC, 8) || !h.text_len || h.text_len > (uint64_t)st.st_size ||
	    h.n > ((uint64_t)st.st_size - h.text_len) / es ||
	    sizeof(h) + h.n * es + h.text_len != (uint64_t)st.st_size || m[st.st_size - 1] != '\n')
		goto fail;
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		do
			got = read(fd, first, sizeof(first));
		while (got < 0 && errno == EINTR);
		close(fd);
		fd = -1;
	}
	/* A first read that ends inside the image's lines, equal to the copy's beginning. */
	if (got <= 0 || image_part(first, (size_t)got) != (size_t)got ||
	    h.text_len < (uint64_t)got || memcmp(m + sizeof(h) + h.n * es, first, (size_t)got))
		goto fail;
	*text = (const char *)m + sizeof(h) + h.n * es;
	*len = h.text_len;
	*lines = m + sizeof(h);
	*n = h.n;
	*map = (void *)(uintptr_t)m;
	*map_len = (size_t)st.st_size;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (m != MAP_FAILED)
		munmap((void *)(uintptr_t)m, (size_t)st.st_size);
	return -1;
#else
	(void)cache_dir;
	(void)bid;
	(void)text;
	(void)len;
	(void)lines;
	(void)n;
	(void)map;
	(void)map_len;
	return -1;
#endif
}

void tk_ksyms_copy_put(const char *cache_dir, const char *bid, const char *text, size_t len,
		       const struct tk_ksyms_lazy *k)
{
#if defined(__x86_64__)
	char *path = tk_ksyms_copy_path(cache_dir, bid), *dir = NULL, *buf = NULL;
	size_t img = image_part(text, len), es = tk_ksyms_lazy_line_size(), n = 0;
	struct copy_header h;
	void *lines = NULL;
	struct stat st;

	/* The image's lines end at a newline, and the cache directory exists. */
	if (!path || !img || text[img - 1] != '\n' || stat(cache_dir, &st) ||
	    !S_ISDIR(st.st_mode) || asprintf(&dir, "%s/" KSYMS_DIR, cache_dir) < 0) {
		dir = NULL;
		goto out;
	}
	n = tk_ksyms_lazy_lines(k, img, &lines);
	if (!lines || tk_mkdir_p(dir))
		goto out;
	memcpy(h.magic, MAGIC, 8);
	h.n = n;
	h.text_len = img;
	buf = malloc(sizeof(h) + n * es + img);
	if (!buf)
		goto out;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), lines, n * es);
	memcpy(buf + sizeof(h) + n * es, text, img);
	(void)tk_write_file_atomic(path, buf, sizeof(h) + n * es + img, 0644);
out:
	free(buf);
	free(lines);
	free(dir);
	free(path);
#else
	(void)cache_dir;
	(void)bid;
	(void)text;
	(void)len;
	(void)k;
#endif
}

bool tk_ksyms_past_image_lacks(const char *path, const char *name)
{
	static const char *const made_up[] = {"bpf_", "ftrace_", "kprobe_"};
	char c;
	int fd;
	ssize_t n;

	if (!path || strcmp(path, "/proc/kallsyms"))
		return false;
	for (size_t i = 0; i < sizeof(made_up) / sizeof(made_up[0]); i++)
		if (!strncmp(name, made_up[i], strlen(made_up[i])))
			return false;
	fd = open("/proc/modules", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	return n == 0;
}
