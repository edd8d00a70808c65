/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
#ifndef TRACEKIT_BENCH_PERF_H
#define TRACEKIT_BENCH_PERF_H

/*
 * bench-perf's run (bench-perf.c): its own program, and the perf.data part
 * of bench-report, which links it under this name. Returns the exit
 * status: 0, 1 (texts differ), 77 (no tracefs or perf: skipped).
 */
int bench_perf_main(int argc, char **argv);

#endif
