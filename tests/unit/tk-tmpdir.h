/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The temporary directory of a unit test binary that writes files: its
 * group setup makes it (tk_tmpdir_make(), or tk_tmpdir_setup() when that
 * is all the setup does), files go below tmpdir, and tk_tmpdir_teardown()
 * removes it all as the group teardown. TK_TEST_KEEP=1 keeps it, for a
 * look with trace-cmd, perf or a hex dump afterwards. Include after
 * <cmocka.h>.
 */
#ifndef TRACEKIT_TK_TMPDIR_H
#define TRACEKIT_TK_TMPDIR_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* $TMPDIR/tk-<test binary>-XXXXXX once made; one per binary. */
static char tmpdir[256];

/* Make tmpdir; 0, or -1 when it cannot be made. */
static inline int tk_tmpdir_make(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/tk-%s-XXXXXX", getenv("TMPDIR") ?: "/tmp",
		 program_invocation_short_name);
	return mkdtemp(tmpdir) ? 0 : -1;
}

static inline int tk_tmpdir_setup(void **state)
{
	(void)state;
	return tk_tmpdir_make();
}

static inline int tk_tmpdir_teardown(void **state)
{
	char cmd[sizeof(tmpdir) + 16];

	(void)state;
	if (getenv("TK_TEST_KEEP")) {
		fprintf(stderr, "kept %s\n", tmpdir);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
