// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Tests of perfdata-swap.c, the copy of a perf.data of the other byte
 * order swapped to ours. The big-endian corpus files (tests/data/perf/be-*,
 * made by make-bigendian.py from the little-endian ones) must swap back to
 * their originals byte for byte where no tracepoint is involved (TRACING_DATA
 * and tracepoint payloads stay in the file's order by design). A file cut
 * at every length and a file with one byte changed at many places must
 * neither crash nor read outside the file (run under ASan by make check),
 * and what is not supported (a branch-stack sample) is refused with
 * -ENOTSUP and a message.
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

#include <tracekit/common.h>
#include <tracekit/perfdata.h>

#include "perfdata-internal.h"

static void quiet(enum tk_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	(void)ctx;
}

static uint8_t *read_data(const char *name, size_t *len)
{
	const char *src = getenv("TK_SOURCE_DIR");
	char path[4096];
	struct stat st;
	uint8_t *b;
	int fd;

	snprintf(path, sizeof(path), "%s/tests/data/perf/%s", src ? src : ".", name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size);
	assert_non_null(b);
	assert_int_equal(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static int mem_fd(const uint8_t *b, size_t len)
{
	int fd = memfd_create("test-swap", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	return fd;
}

/* Swap @b; 0 and the swapped bytes in *out (malloc'ed), or the error. */
static int swap_bytes(const uint8_t *b, size_t len, uint8_t **out)
{
	int fd = mem_fd(b, len), nfd = -1;
	int r = tk_perfdata_swap_to_host(fd, "test.data", len, &nfd);

	close(fd);
	if (r < 0)
		return r;
	*out = malloc(len ? len : 1);
	assert_non_null(*out);
	assert_int_equal(pread(nfd, *out, len, 0), (ssize_t)len);
	close(nfd);
	return 0;
}

static void swaps_back_to_the_original(void **state)
{
	static const char *const names[] = {
		"plain",      "g",  "two-events", "switch-events", "namespaces",
		"group-read", "k1", "d",	  "all-cgroups",   "R",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char le_name[64], be_name[64];
		size_t le_len, be_len;
		uint8_t *le, *be, *sw = NULL;

		snprintf(le_name, sizeof(le_name), "%s.data", names[i]);
		snprintf(be_name, sizeof(be_name), "be-%s.data", names[i]);
		le = read_data(le_name, &le_len);
		be = read_data(be_name, &be_len);
		assert_int_equal(le_len, be_len);
		assert_int_equal(swap_bytes(be, be_len, &sw), 0);
		if (memcmp(sw, le, le_len)) {
			size_t k = 0;

			while (sw[k] == le[k])
				k++;
			fail_msg("%s: first difference at 0x%zx", be_name, k);
		}
		free(sw);
		free(le);
		free(be);
	}
}

/* The tracepoint file: all but TRACING_DATA and the payloads swap back. */
static void tracepoints_open_as_the_original(void **state)
{
	size_t le_len, be_len;
	uint8_t *le = read_data("tracepoints.data", &le_len);
	uint8_t *be = read_data("be-tracepoints.data", &be_len);
	uint8_t *sw = NULL;
	size_t diff = 0;

	(void)state;
	assert_int_equal(swap_bytes(be, be_len, &sw), 0);
	assert_memory_equal(sw, le, 104);
	for (size_t k = 0; k < le_len; k++)
		diff += sw[k] != le[k];
	/* The payloads' numbers and TRACING_DATA's, nothing else. */
	assert_true(diff > 0 && diff < le_len / 20);
	free(sw);
	free(le);
	free(be);
}

static void cut_at_every_length(void **state)
{
	size_t len;
	uint8_t *be = read_data("be-two-events.data", &len);

	(void)state;
	for (size_t n = 0; n <= len; n += n < 600 ? 1 : 13) {
		uint8_t *sw = NULL;

		if (swap_bytes(be, n, &sw) == 0)
			free(sw);
	}
	free(be);
}

static void one_byte_changed(void **state)
{
	size_t len;
	uint8_t *be = read_data("be-g.data", &len);
	uint32_t seed = 12345;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		uint8_t *sw = NULL, old;
		size_t at;

		seed = seed * 1103515245 + 12345;
		at = (seed >> 8) % len;
		old = be[at];
		be[at] ^= (uint8_t)(1 + (seed >> 3) % 255);
		if (swap_bytes(be, len, &sw) == 0)
			free(sw);
		be[at] = old;
	}
	free(be);
}

static void branch_stack_is_refused(void **state)
{
	size_t len;
	uint8_t *be = read_data("be-plain.data", &len);
	uint8_t *sw = NULL;
	uint64_t aoff = 0;

	(void)state;
	for (int i = 0; i < 8; i++)
		aoff = aoff << 8 | be[24 + i];
	be[aoff + 24 + 6] |= 0x08; /* sample_type bit 11, big-endian */
	assert_int_equal(swap_bytes(be, len, &sw), -ENOTSUP);
	assert_non_null(strstr(tk_errmsg(), "BRANCH_STACK"));
	assert_non_null(strstr(tk_errmsg(), "big-endian"));
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(swaps_back_to_the_original),
		cmocka_unit_test(tracepoints_open_as_the_original),
		cmocka_unit_test(cut_at_every_length),
		cmocka_unit_test(one_byte_changed),
		cmocka_unit_test(branch_stack_is_refused),
	};

	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
