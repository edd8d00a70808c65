/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perf-mem: the text perf script prints for a sample's memory access
 * (PERF_SAMPLE_DATA_SRC and the page sizes), for perfdata-report.c.
 */
#ifndef TRACEKIT_PERF_MEM_H
#define TRACEKIT_PERF_MEM_H

#include <stddef.h>
#include <stdint.h>

/*
 * perf's decoding of @data_src, "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2
 * hit|LCK No|BLK  N/A", into @out (NUL-terminated, cut to @cap - 1).
 * Return: the length written.
 */
size_t tk_perf_mem_describe(uint64_t data_src, char *out, size_t cap);

/* perf's page size name: "4K", "2M", "1024B", "N/A" for 0. */
void tk_perf_page_size_name(uint64_t size, char out[16]);

#endif
