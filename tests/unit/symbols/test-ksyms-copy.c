// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * ksyms-copy keeps the kernel image's lines of /proc/kallsyms and gives
 * them back only while /proc/kallsyms still begins with them; below the
 * highest address of the copy, ksyms-lazy names every address from the
 * copy as from the whole text. On this machine's /proc/kallsyms (x86-64
 * only: other architectures keep no copy, and that is checked too).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tk-test.h"
#include "fsutil.h"
#include "ksyms-copy.h"
#include "ksyms-lazy.h"

#define BID "00112233445566778899aabbccddeeff00112233"

struct fixture {
	char dir[64];
	char *text; /* /proc/kallsyms */
	size_t len;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/tk-ksyms-copy.XXXXXX");
	if (!mkdtemp(f->dir) || tk_read_file("/proc/kallsyms", &f->text, &f->len)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	tk_rm_rf(f->dir);
	free(f->text);
	free(f);
	return 0;
}

static char *copy_file(const struct fixture *f)
{
	char *p;

	assert_true(asprintf(&p, "%s/.tk-kallsyms/" BID, f->dir) > 0);
	return p;
}

/* The copy's text and index, adopted as the symbolizer adopts them; NULL when refused. */
static struct tk_ksyms_lazy *copy_load(const struct fixture *f, const char **text, size_t *len)
{
	struct tk_ksyms_lazy *k;
	const void *lines;
	size_t n, map_len;
	void *map;

	if (tk_ksyms_copy_get(f->dir, BID, text, len, &lines, &n, &map, &map_len))
		return NULL;
	k = tk_ksyms_lazy_adopt(*text, *len, lines, n, "/proc/kallsyms", map, map_len);
	assert_non_null(k);
	return k;
}

/* tk_ksyms_copy_get() succeeds (the mapping unmapped again) or not. */
static int copy_get(const struct fixture *f, const char *bid)
{
	const char *text;
	const void *lines;
	size_t len, n, map_len;
	void *map;

	if (tk_ksyms_copy_get(f->dir, bid, &text, &len, &lines, &n, &map, &map_len))
		return -1;
	munmap(map, map_len);
	return 0;
}

/* Lookups of @part equal the whole text's below @part's last address. */
static void compare_below(const struct fixture *f, struct tk_ksyms_lazy *whole,
			  struct tk_ksyms_lazy *part, const char *copy, size_t clen)
{
	uint64_t last = tk_ksyms_lazy_last(part);
	size_t checked = 0;

	(void)f;
	assert_true(last != 0);
	/* Every 37th line's address and around it: every line takes long under ASan. */
	for (size_t i = 0, n = 0; i < clen; n++) {
		const char *line = copy + i, *nl = memchr(line, '\n', clen - i);
		unsigned long long v;

		i += (size_t)(nl - line) + 1;
		if (n % 37 || sscanf(line, "%llx", &v) != 1 || !v)
			continue;
		for (int64_t d = -1; d <= 1; d++) {
			uint64_t addr = (uint64_t)v + (uint64_t)d, o1 = 0, o2 = 0;
			const char *n1, *n2;

			if (addr >= last)
				continue;
			n1 = tk_ksyms_lazy_lookup(whole, addr, &o1);
			n2 = tk_ksyms_lazy_lookup(part, addr, &o2);
			if ((n1 == NULL) != (n2 == NULL) || (n1 && (strcmp(n1, n2) || o1 != o2)))
				fail_msg("%#llx: %s+%#llx vs %s+%#llx", (unsigned long long)addr,
					 n1 ? n1 : "(none)", (unsigned long long)o1,
					 n2 ? n2 : "(none)", (unsigned long long)o2);
			checked++;
		}
	}
	assert_true(checked > 0);
}

/* Change the byte at @off of the copy's file. */
static void poke(const char *path, long off)
{
	FILE *fp = fopen(path, "r+b");
	int c;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, off, SEEK_SET), 0);
	c = fgetc(fp);
	assert_int_equal(fseek(fp, off, SEEK_SET), 0);
	fputc(c == '0' ? '1' : '0', fp);
	assert_int_equal(fclose(fp), 0);
}

static void test_copy(void **state)
{
	struct fixture *f = *state;
	char *path = copy_file(f), *m, *wtext;
	const char *got = NULL;
	struct tk_ksyms_lazy *whole, *part;
	size_t len = 0, image;
	struct stat st;

	wtext = malloc(f->len + 1);
	assert_non_null(wtext);
	memcpy(wtext, f->text, f->len);
	whole = tk_ksyms_lazy_new(wtext, f->len, "/proc/kallsyms");
	assert_non_null(whole);
#if !defined(__x86_64__)
	tk_ksyms_copy_put(f->dir, BID, f->text, f->len, whole);
	assert_int_equal(access(path, F_OK), -1);
	tk_ksyms_lazy_free(whole);
	free(path);
	skip();
#endif
	if (!strncmp(f->text, "0000000000000000", 16)) {
		tk_ksyms_lazy_free(whole);
		free(path);
		skip(); /* addresses hidden from this reader: nothing to compare */
	}
	/* No copy yet, and a cache directory that does not exist gets none. */
	assert_int_equal(copy_get(f, BID), -1);
	tk_ksyms_copy_put("/nonexistent/tk-cache", BID, f->text, f->len, whole);
	assert_int_equal(access("/nonexistent/tk-cache", F_OK), -1);

	/* The copy: the lines before the first "\t[", given back while they match. */
	tk_ksyms_copy_put(f->dir, BID, f->text, f->len, whole);
	m = memmem(f->text, f->len, "\t[", 2);
	while (m && m > f->text && m[-1] != '\n')
		m--;
	image = m ? (size_t)(m - f->text) : f->len;
	part = copy_load(f, &got, &len);
	assert_non_null(part);
	assert_int_equal(len, image);
	assert_memory_equal(got, f->text, image);
	assert_null(memmem(got, len, "\t[", 2));
	compare_below(f, whole, part, got, len);
	tk_ksyms_lazy_free(part);

	/* A copy of half the lines (cut at a line): exact below its own end. */
	{
		char *nl = memchr(f->text + image / 2, '\n', image - image / 2);

		assert_non_null(nl);
		tk_ksyms_copy_put(f->dir, BID, f->text, (size_t)(nl - f->text) + 1, whole);
		part = copy_load(f, &got, &len);
		assert_non_null(part);
		assert_int_equal(len, (size_t)(nl - f->text) + 1);
		compare_below(f, whole, part, got, len);
		tk_ksyms_lazy_free(part);
	}
	tk_ksyms_copy_put(f->dir, BID, f->text, f->len, whole);

	/* Damage: a file cut short, an index entry off a line start: refused. */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 1), 0);
	assert_int_equal(copy_get(f, BID), -1);
	tk_ksyms_copy_put(f->dir, BID, f->text, f->len, whole);
	{
		/* An index entry off a line start (a malloc'ed copy of the index): refused. */
		const void *lines;
		size_t n, map_len, es = tk_ksyms_lazy_line_size();
		void *map, *mine;
		char *text;
		uint32_t off;

		assert_int_equal(
			tk_ksyms_copy_get(f->dir, BID, &got, &len, &lines, &n, &map, &map_len), 0);
		assert_true(n > 2);
		mine = malloc(n * es);
		text = malloc(len);
		assert_non_null(mine);
		assert_non_null(text);
		memcpy(mine, lines, n * es);
		memcpy(text, got, len);
		munmap(map, map_len);
		/* The second entry's text offset (after its address) moved by one byte. */
		memcpy(&off, (char *)mine + es + 8, 4);
		off++;
		memcpy((char *)mine + es + 8, &off, 4);
		errno = 0;
		assert_null(tk_ksyms_lazy_adopt(text, len, mine, n, "/proc/kallsyms", NULL, 0));
		assert_int_equal(errno, EBADMSG);
		free(text);
		free(mine);
	}

	/* Another load address (its first line differs): refused, then replaced by a put. */
	poke(path, (long)(st.st_size - (off_t)image + 10));
	assert_int_equal(copy_get(f, BID), -1);
	tk_ksyms_copy_put(f->dir, BID, f->text, f->len, whole);
	part = copy_load(f, &got, &len);
	assert_non_null(part);
	assert_int_equal(len, image);
	tk_ksyms_lazy_free(part);

	/* Another build id has no copy; a build id that is a path is refused. */
	assert_int_equal(copy_get(f, "ffeeddccbbaa99887766554433221100ffeeddcc"), -1);
	tk_ksyms_copy_put(f->dir, "../escape", f->text, f->len, whole);
	assert_int_equal(copy_get(f, "../escape"), -1);
	free(path);
	assert_true(asprintf(&path, "%s/escape", f->dir) > 0);
	assert_int_equal(access(path, F_OK), -1);
	free(path);
	tk_ksyms_lazy_free(whole);
}

/*
 * A name the image's lines lack is absent past them only on a kernel with
 * no module loaded, and never one of the kernel's made-up names (BPF,
 * ftrace, kprobes), and only for /proc/kallsyms itself.
 */
static void test_past_image_lacks(void **state)
{
	char c;
	int fd = open("/proc/modules", O_RDONLY);
	bool none = fd < 0 ? errno == ENOENT : read(fd, &c, 1) == 0;

	(void)state;
	if (fd >= 0)
		close(fd);
	assert_int_equal(tk_ksyms_past_image_lacks("/proc/kallsyms", "vmemmap_base"), none);
	assert_int_equal(tk_ksyms_past_image_lacks("/proc/kallsyms", "jiffies"), none);
	assert_false(tk_ksyms_past_image_lacks("/proc/kallsyms", "bpf_prog_6deef7357e7b4530"));
	assert_false(tk_ksyms_past_image_lacks("/proc/kallsyms", "ftrace_trampoline"));
	assert_false(tk_ksyms_past_image_lacks("/proc/kallsyms", "kprobe_insn_page"));
	assert_false(tk_ksyms_past_image_lacks("/tmp/kallsyms", "vmemmap_base"));
	assert_false(tk_ksyms_past_image_lacks(NULL, "vmemmap_base"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
		cmocka_unit_test(test_past_image_lacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
