// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-evname: an event's name when the perf.data does not hold it.
 *
 * perf record writes the names in the EVENT_DESC feature (pipe mode:
 * EVENT_UPDATE records); a file without them (stripped features, other
 * writers) still names its events in perf script, from the attr: the
 * generic hardware and software events by their config, followed by the
 * modifiers the attr's exclude and precise bits imply, as perf 6.1's
 * evsel__name() derives them. The exports name their tracks and sample
 * sequences the same way, so that a .pftrace or a table shows the name
 * `tracekit report` prints. (perfdata-report.c derives the same names on
 * its own, ahead of this file.)
 */
#include <stdbool.h>
#include <stdio.h>

#include <tracekit/perfdata.h>

#include "perfdata-evname.h"

/* perf's names of PERF_TYPE_SOFTWARE configs */
static const char *const sw_names[] = {
	"cpu-clock",	    "task-clock",   "page-faults",  "context-switches",
	"cpu-migrations",   "minor-faults", "major-faults", "alignment-faults",
	"emulation-faults", "dummy",	    "bpf-output",   "cgroup-switches",
};
/* and of PERF_TYPE_HARDWARE ones */
static const char *const hw_names[] = {
	"cycles",
	"instructions",
	"cache-references",
	"cache-misses",
	"branches",
	"branch-misses",
	"bus-cycles",
	"stalled-cycles-frontend",
	"stalled-cycles-backend",
	"ref-cycles",
};

/* perf_event_attr flag bits the modifiers come from */
#define EXCLUDE_USER   (1ull << 4)
#define EXCLUDE_KERNEL (1ull << 5)
#define EXCLUDE_HV     (1ull << 6)
#define PRECISE_SHIFT  15 /* 2 bits */
#define EXCLUDE_HOST   (1ull << 19)
#define EXCLUDE_GUEST  (1ull << 20)

/*
 * The contexts counted (k, u, h) when any is excluded, then a p per
 * precise_ip level; either makes excluding the guest the default, and H
 * and G (host, guest counted) follow when the attr departs from that
 * default or excludes the host: `-e cpu-clock:u` reads back "cpu-clock:uH".
 */
const char *tk_perfdata_add_modifiers(char *buf, size_t size, const char *base, uint64_t flags)
{
	unsigned int precise = (unsigned int)(flags >> PRECISE_SHIFT) & 3;
	bool guest_default = false;
	char mod[16];
	size_t n = 0;

	if (flags & (EXCLUDE_KERNEL | EXCLUDE_USER | EXCLUDE_HV)) {
		if (!(flags & EXCLUDE_KERNEL))
			mod[n++] = 'k';
		if (!(flags & EXCLUDE_USER))
			mod[n++] = 'u';
		if (!(flags & EXCLUDE_HV))
			mod[n++] = 'h';
		guest_default = true;
	}
	for (unsigned int i = 0; i < precise; i++) {
		mod[n++] = 'p';
		guest_default = true;
	}
	if ((flags & EXCLUDE_HOST) || !!(flags & EXCLUDE_GUEST) == guest_default) {
		if (!(flags & EXCLUDE_HOST))
			mod[n++] = 'H';
		if (!(flags & EXCLUDE_GUEST))
			mod[n++] = 'G';
	}
	mod[n] = '\0';
	snprintf(buf, size, "%s%s%s", base, n ? ":" : "", mod);
	return buf;
}

const char *tk_perfdata_attr_base_name(uint32_t type, uint64_t config)
{
	if (type == 1 && config < sizeof(sw_names) / sizeof(sw_names[0]))
		return sw_names[config];
	if (type == 0 && config < sizeof(hw_names) / sizeof(hw_names[0]))
		return hw_names[config];
	return NULL;
}

const char *tk_perfdata_evsel_display_name(const struct tk_perfdata_evsel *e, char *buf,
					   size_t size)
{
	const struct tk_perf_attr *a = &e->attr;

	const char *base;

	if (e->name)
		return e->name;
	base = tk_perfdata_attr_base_name(a->type, a->config);
	if (base)
		return tk_perfdata_add_modifiers(buf, size, base, a->flags);
	snprintf(buf, size, "unknown-%u:%llu", (unsigned int)a->type,
		 (unsigned long long)a->config);
	return buf;
}
