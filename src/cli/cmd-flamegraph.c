// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#include "cli.h"
const char cmd_flamegraph_usage[] = "usage: tracekit flamegraph\n";
int cmd_flamegraph(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return CLI_FAIL;
}
