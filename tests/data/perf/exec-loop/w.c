// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * w: a few tens of ms of calls five deep (mid recursing into leaf), run by
 * sh in a loop for tests/data/perf/exec-loop/exec-loop.data (README.md).
 */
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 200; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}
__attribute__((noinline)) static unsigned long mid(unsigned long x, int d)
{
	return d ? mid(x + 1, d - 1) ^ leaf(x) : leaf(x);
}
int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 20000;
	for (unsigned long i = 0; i < n; i++)
		sink += mid(i, 5);
	printf("%lu\n", sink);
	return 0;
}
