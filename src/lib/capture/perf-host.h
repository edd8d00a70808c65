/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* perf-host: the machine's topology as perf's host features (private to the library). */
#ifndef TRACEKIT_PERF_HOST_H
#define TRACEKIT_PERF_HOST_H

#include <tracekit/perfdata.h>

/*
 * Set CPU_TOPOLOGY, NUMA_TOPOLOGY, PMU_MAPPINGS, CACHE and MEM_TOPOLOGY of
 * the running machine
 * on @w (early features when called before the first record). A part
 * whose sysfs files are missing is left out, as perf leaves it out.
 * Return: 0, -ENOMEM or a writer error.
 */
int tk_perfhost_set_topology(struct tk_perfdata_writer *w);

#endif
