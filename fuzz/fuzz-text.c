// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the small text parsers that take what a user types or a
 * file on disk holds, outside the trace files the other targets cover. The
 * first input byte picks the parser, the rest is its text:
 *   0  perf -e lists (tk_perfrecord_parse_events(): groups, modifiers)
 *   1  perf --call-graph values and -C/-p lists
 *   2  tracefs probe definitions (tk_tracefs_probe_parse(), then a rename
 *      as perf numbers a second probe)
 *   3  a build-id cache's probes file (tk_pfile_load() from a memfd, then
 *      the merge, replace and drop a cache update does)
 *   4  event specs ("system:name" globs, tk_event_spec_match())
 * Errors are expected; the target only needs to not crash, hang or leak.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/event.h>
#include <tracekit/perfrecord.h>
#include <tracekit/tracefs.h>

#include "fuzz.h"
#include "probecache-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void perf_events(const char *text)
{
	struct tk_perfrecord_event *events = NULL;
	size_t nr = 0;

	if (tk_perfrecord_parse_events(text, &events, &nr) == 0)
		sink += nr;
	/* A second list appends (groups numbered after the first's). */
	if (tk_perfrecord_parse_events(text, &events, &nr) == 0)
		sink += nr;
	tk_perfrecord_events_free(events, nr);
}

static void perf_values(const char *text)
{
	enum tk_perfrecord_callgraph mode;
	uint32_t stack_size;
	int32_t *list;
	size_t nr;

	if (tk_perfrecord_parse_callgraph(text, &mode, &stack_size) == 0)
		sink += stack_size + (uint64_t)mode;
	if (tk_perfrecord_parse_list(text, &list, &nr) == 0) {
		sink += nr ? (uint64_t)list[nr - 1] : 0;
		free(list);
	}
}

static void probe_def(const char *text)
{
	struct tk_tracefs_probe probe;

	if (tk_tracefs_probe_parse(text, &probe))
		return;
	sink += strlen(probe.text);
	if (tk_tracefs_probe_rename(&probe, "renamed_1") == 0)
		sink += strlen(probe.text);
	tk_tracefs_probe_release(&probe);
}

static void probes_file(const uint8_t *data, size_t size)
{
	struct tk_pfile pf = {0}, copy = {0};
	char path[64];
	int fd = fuzz_input("fuzz-text-probes", data, size);
	char *def = "p:sdt_x/y /bin/true:0x10";

	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (tk_pfile_load(path, &pf) == 0) {
		sink += pf.n;
		if (tk_pfile_merge(&copy, &pf) == 0)
			sink += copy.n;
		if (tk_pfile_replace(&copy, "%sdt_x:y=y", &def, 1) == 0)
			sink += copy.n;
		sink += tk_pfile_drop_path(&copy, "/bin/true");
		if (pf.n)
			tk_pfile_remove_at(&pf, 0);
	}
	tk_pfile_release(&pf);
	tk_pfile_release(&copy);
	close(fd);
}

static void event_spec(const char *text)
{
	static const char *const names[][2] = {
		{"sched", "sched_switch"},
		{"irq", "irq_handler_entry"},
		{"ftrace", "print"},
		{"", ""},
		{"a:b", "c*d"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		sink += tk_event_spec_match(text, names[i][0], names[i][1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1 || size > 8192)
		return 0;
	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	if (data[0] % 5 == 3) {
		probes_file(data + 1, size - 1);
		return 0;
	}
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		perf_events(text);
		break;
	case 1:
		perf_values(text);
		break;
	case 2:
		probe_def(text);
		break;
	default:
		event_spec(text);
		break;
	}
	free(text);
	return 0;
}
