/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perfdata-evname: the name perf gives an event of a perf.data, for the
 * exports (pftrace-perf.c, tables.c). Private to the library.
 */
#ifndef TRACEKIT_PERFDATA_EVNAME_H
#define TRACEKIT_PERFDATA_EVNAME_H

#include <stddef.h>

struct tk_perfdata_evsel;

/*
 * tk_perfdata_evsel_display_name() - @e's name as perf script prints it:
 * EVENT_DESC's; else, for a hardware or software event, perf's name of
 * its config with the modifiers its attr implies ("task-clock:k"); else
 * "unknown-TYPE:CONFIG". Tracepoints without a name get the latter: their
 * name is their format's, which the caller has.
 * Return: @e->name, or @buf (of @size bytes) holding the name.
 */
const char *tk_perfdata_evsel_display_name(const struct tk_perfdata_evsel *e, char *buf,
					   size_t size);

#endif
