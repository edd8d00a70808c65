/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perfdata-evname: the name perf gives an event of a perf.data, for the
 * report (perfdata-report.c) and the exports (pftrace-perf.c, tables.c).
 * Private to the library.
 */
#ifndef TRACEKIT_PERFDATA_EVNAME_H
#define TRACEKIT_PERFDATA_EVNAME_H

#include <stddef.h>
#include <stdint.h>

struct tk_perfdata_evsel;

/*
 * tk_perfdata_attr_base_name() - perf's name of a PERF_TYPE_HARDWARE (0)
 * or PERF_TYPE_SOFTWARE (1) @config ("cycles", "task-clock"), or NULL.
 */
const char *tk_perfdata_attr_base_name(uint32_t type, uint64_t config);

/*
 * tk_perfdata_add_modifiers() - @base with the modifiers the attr @flags
 * imply, as perf prints a hardware or software event's name: the contexts
 * counted (k, u, h) when any is excluded, one p per precise_ip level, then
 * H and G when the attr departs from the default those imply or excludes
 * the host ("cpu-clock:u" reads back as "cpu-clock:uH"). Into @buf (@size
 * bytes). Return: @buf.
 */
const char *tk_perfdata_add_modifiers(char *buf, size_t size, const char *base, uint64_t flags);

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
