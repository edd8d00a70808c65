// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the sample analyses: the input, as a perf.data or a .dat
 * in a memfd, goes through tk_profile_run() (children with graphs, then a
 * flat profile by every sort key, and JSON) and tk_flamegraph_run()
 * (folded, SVG, off-CPU) into /dev/null. That reaches samples.c's
 * ordering queue, maps, MMAP names, callchain context markers and
 * aggregation, the profile's tries and graph printing, the flame graph's
 * stack table, the .dat kernel_stack reader and the off-CPU pass. Kernel
 * addresses are named from /dev/null's kallsyms (nothing) so an input
 * costs no /proc/kallsyms load. Errors are expected; the target only
 * needs to not crash, hang or leak.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <tracekit/analyze.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sorts[] = {"comm,dso,sym", "pid,cpu", "sym,dso"};
	static int null_fd = -1;
	char path[64];
	int fd = fuzz_input("fuzz-profile", data, size);

	if (fd < 0)
		return 0;
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int i = 0; i < 3; i++) {
		struct tk_profile_opts o = {
			.fd = null_fd, .sort = sorts[i], .kallsyms = "/dev/null"};

		o.flags = i == 0   ? TK_PROFILE_CHILDREN | TK_PROFILE_GRAPH
			  : i == 1 ? TK_PROFILE_GRAPH | TK_PROFILE_CALLEE
				   : TK_PROFILE_JSON | TK_PROFILE_CHILDREN;
		o.percent_limit = i == 2 ? 1 : 0;
		sink += (uint64_t)tk_profile_run(path, &o);
	}
	for (unsigned int f = 0; f < 3; f++) {
		struct tk_flamegraph_opts o = {.fd = null_fd};

		o.flags = f == 0 ? TK_FLAMEGRAPH_FOLDED : f == 1 ? 0 : TK_FLAMEGRAPH_OFF_CPU;
		sink += (uint64_t)tk_flamegraph_run(path, &o);
	}
	close(fd);
	return 0;
}
