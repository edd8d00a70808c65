// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#include <errno.h>
#include <tracekit/analyze.h>
#include "internal/error.h"
int tk_flamegraph_run(const char *path, const struct tk_flamegraph_opts *opts)
{
	(void)opts;
	return tk_fail(ENOSYS, "%s: todo", path);
}
