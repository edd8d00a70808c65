// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * unwind-heap: malloc's heap on transparent huge pages for the commands
 * that unwind a --call-graph dwarf profile.
 *
 * Unwinding loads the DWARF of every binary a profile touches through
 * libdw, which mallocs its units, abbreviation tables and DIE caches in
 * small pieces: on a short profile of a program calling into libc,
 * libelf and ld.so, most of the report's ~2 200 page faults (11.3 us each
 * on the bench VM) were malloc's heap being touched page by page. glibc
 * asks for huge pages on its heap (madvise(MADV_HUGEPAGE) on each sbrk
 * and arena, with sbrk rounded to 2 MiB) when the tunable
 * glibc.malloc.hugetlb=1 is set, and reads tunables only when the
 * process starts. On other reports the same setting costs: a .dat report
 * touches little heap, and a 2 MiB zeroed huge page for it is slower than
 * the few small pages it faults.
 *
 * So the choice is made per file: once a perf.data is open and one of its
 * events records user registers and stacks (what gets unwound), and the
 * frames get their inline names (the DWARF of libc and the others is
 * loaded for them; with --no-inline only the CFI is, the heap stays
 * small, and the re-execution cost that report ~10 % CPU), and the
 * file holds at least 1 MiB of records, the command runs itself again
 * (/proc/self/exe, the same arguments) with the tunable added to
 * GLIBC_TUNABLES. The exec, the second start-up and the zeroed huge
 * pages cost ~8 ms on the bench VM: a one-sample file would pay it in
 * full, while 100 samples of 8 KB stacks already gain (a file under
 * 1 MiB holds ~120 such samples at most). The re-executed process puts
 * GLIBC_TUNABLES back as the user had it (cli_unwind_heap_init()), so
 * nothing it starts inherits the setting. Not done when the user's
 * GLIBC_TUNABLES already names the tunable (either value is theirs to
 * choose), for standard input or a pipe (which cannot be read twice), or
 * when the reader met damage or a library message was printed (it would
 * print twice); the caller asks before it prints anything itself.
 *
 * The other ways were worse: the library cannot change malloc's heap for
 * libdw without process-wide malloc state changed from library code
 * (M_TOP_PAD and madvise() of a heap it does not own), and libdw cannot be
 * handed an allocator of ours.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/perfdata.h>

#include "cli.h"

#define TUNABLE		     "glibc.malloc.hugetlb"
#define UNWIND_HEAP_MIN_DATA (1u << 20)
/* In the re-executed process: the user's GLIBC_TUNABLES ("" unset, else "=VALUE"). */
#define SAVED_ENV "TRACEKIT_SAVED_GLIBC_TUNABLES"

static char **saved_argv;
static bool reexecuted;

void cli_unwind_heap_init(int argc, char **argv)
{
	const char *saved = getenv(SAVED_ENV);

	/* A copy: the commands' getopt_long() reorders argv in place. */
	saved_argv = malloc(((size_t)argc + 1) * sizeof(*saved_argv));
	if (saved_argv) {
		memcpy(saved_argv, argv, (size_t)argc * sizeof(*saved_argv));
		saved_argv[argc] = NULL;
	}
	if (!saved)
		return;
	reexecuted = true;
	if (saved[0] == '=')
		setenv("GLIBC_TUNABLES", saved + 1, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	unsetenv(SAVED_ENV);
}

/* Whether @pd's samples are unwound from user registers and stacks. */
static bool has_user_stacks(const struct tk_perfdata *pd)
{
	size_t n = tk_perfdata_evsel_count(pd);

	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_evsel *es = tk_perfdata_evsel_get(pd, i);

		if (es && (es->attr.sample_type & TK_PERF_SAMPLE_STACK_USER) &&
		    (es->attr.sample_type & TK_PERF_SAMPLE_REGS_USER))
			return true;
	}
	return false;
}

void cli_unwind_heap(const char *path, const struct tk_perfdata *pd)
{
	const char *user = getenv("GLIBC_TUNABLES");
	const struct tk_perfdata_info *info = tk_perfdata_get_info(pd);
	char *tunables, *saved;
	int ok;

	if (reexecuted || !saved_argv || !strcmp(path, "-") || info->pipe || !info->file_size ||
	    info->data_end - info->data_offset < UNWIND_HEAP_MIN_DATA ||
	    tk_perfdata_damage_count(pd) || cli_logged || !has_user_stacks(pd) ||
	    (user && strstr(user, TUNABLE)))
		return;
	if (user && user[0])
		ok = asprintf(&tunables, "%s:" TUNABLE "=1", user) >= 0;
	else
		ok = asprintf(&tunables, TUNABLE "=1") >= 0;
	if (!ok)
		return;
	if (asprintf(&saved, "%s%s", user ? "=" : "", user ? user : "") < 0) {
		free(tunables);
		return;
	}
	/*
	 * Nothing is flushed: what the standard streams hold is printed by
	 * the new process again from the start.
	 */
	if (!setenv(SAVED_ENV, saved, 1) && !setenv("GLIBC_TUNABLES", tunables, 1))
		execv("/proc/self/exe", saved_argv);
	/* No exec: run on as we are, with the environment as it was. */
	if (user)
		setenv("GLIBC_TUNABLES", saved + 1, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	unsetenv(SAVED_ENV);
	free(tunables);
	free(saved);
}
