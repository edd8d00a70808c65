// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the kallsyms table a report keeps beside the kept copy
 * of the kernel image's lines (event.c's ksym_tab_load(): a file of the
 * build-id cache, so untrusted). The input's first byte chooses its
 * layout: odd, the table file is the rest of the input as it is; even,
 * the harness writes a header that matches the set's key and image (so
 * the entries themselves are fuzzed, not only the header's checks) and
 * then the rest. Whether the file is taken or refused (then the lines
 * are parsed again), every lookup must give NULL or an entry whose name
 * lies inside the image, and nothing may read outside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tracekit/event.h>

#include "event-internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TAB_KEY 0x6b73796d74616231ull

static const char image[] = "ffffffff81000000 T _stext\n"
			    "ffffffff81000100 t __do_sys_x\n"
			    "ffffffff81000100 T __x64_sys_x\n"
			    "ffffffff81000180 A absolute_one\n"
			    "ffffffff81000200 T last_text\n";

/* event.c's struct ksym_tab_header, as the file holds it. */
struct tab_header {
	char magic[8];
	uint64_t key, img_len, n, whole;
};

static void check(struct tk_event_set *set, uint64_t addr)
{
	const struct tk_ksym *k = tk_event_ksym_find(set, NULL, addr);
	volatile char sum = 0;

	if (!k)
		return;
	if ((uint64_t)k->name_off + k->name_len > set->ksym_img_len)
		abort();
	/* Read the name as the printers do: ASan checks every byte. */
	for (uint32_t i = 0; i < k->name_len; i++)
		sum = (char)(sum ^ set->ksym_text[k->name_off + i]);
	(void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t addrs[] = {0,
					 0xffffffff80ffffffull,
					 0xffffffff81000000ull,
					 0xffffffff81000001ull,
					 0xffffffff81000100ull,
					 0xffffffff81000190ull,
					 0xffffffff81000200ull,
					 0xffffffff81000fffull,
					 UINT64_MAX};
	struct tk_event_set *set;
	size_t len = sizeof(image) - 1, map_len = 24 + len;
	char path[64];
	void *map;
	int fd;

	if (!size || size > 65536)
		return 0;
	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	fd = memfd_create("ksymtab", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (!(data[0] & 1)) {
		struct tab_header h = {.key = TAB_KEY,
				       .img_len = len,
				       .n = (size - 1) / sizeof(struct tk_ksym),
				       .whole = data[0] >> 7};

		memcpy(h.magic, "TKKSTB01", 8);
		if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
			close(fd);
			return 0;
		}
	}
	if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	set = tk_event_set_new(8, false, 4096);
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!set || map == MAP_FAILED)
		abort();
	memcpy((char *)map + 24, image, len);
	if (tk_event_set_add_kallsyms_image(set, (char *)map + 24, len, map, map_len,
					    "/nonexistent/kallsyms") != 0)
		abort();
	if (tk_event_set_kallsyms_table(set, path, TAB_KEY) != 0)
		abort();
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++)
		check(set, addrs[i]);
	/* And each entry's own address, whatever the file said. */
	for (size_t i = 0; i < set->nksyms && i < 64; i++)
		check(set, set->ksyms[i].addr);
	tk_event_set_free(set);
	close(fd);
	return 0;
}
