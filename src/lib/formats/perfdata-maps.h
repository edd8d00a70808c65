/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perfdata-maps: the names perf gives the maps of MMAP/MMAP2 records, shared
 * by every reader that symbolizes samples (perf script's text, the sample
 * analyses). perfdata-maps.c holds the notes.
 */
#ifndef TRACEKIT_PERFDATA_MAPS_H
#define TRACEKIT_PERFDATA_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tracekit/perfdata.h>

/*
 * tk_perf_map_path() - the name perf gives the map of the MMAP/MMAP2 record
 * @rec of process @pid: @*path (malloc'ed file name from the record) may be
 * replaced by the JIT map file's name. @*identity: the map's ips are shown
 * and looked up as they are (anonymous memory, the heap, the stack).
 * Returns 0 or -ENOMEM.
 */
int tk_perf_map_path(const struct tk_perf_record *rec, int32_t pid, char **path, bool *identity);

/*
 * tk_perf_map_module_name() - the dso name perf gives a kernel MMAP record
 * (pid -1) named @name (at most @max bytes, not necessarily terminated):
 * @*module is "[name]" malloc'ed for a module, NULL for the kernel's own
 * text or a name that is no module. Returns 0 or -ENOMEM.
 */
int tk_perf_map_module_name(const char *name, size_t max, char **module);

#endif
