// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracedata-gather: fill a struct tk_tracedata from the running kernel.
 *
 * This is the one place that reads the tracing metadata of this machine:
 * header_page and header_event and the event formats of an instance (or
 * the top level), printk_formats and saved_cmdlines (top level only) and
 * /proc/kallsyms. The .dat and perf.data writers only encode what they are
 * given, so converting a file recorded elsewhere never mixes in ours.
 *
 * Each file is read whole (tracefs files have no size) into a malloc'ed
 * buffer that the tracedata adopts, so a 10 MB kallsyms is not copied
 * again. A system's events are taken in name order (scandir with
 * alphasort), as trace-cmd lists them; a directory entry without a format
 * file (enable, filter) is skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/perfdata.h>
#include <tracekit/tracefs.h>

#include "error.h"
#include "tracedata-internal.h"

static int read_file(const struct tk_tracefs *tfs, const char *rel, char **text, size_t *len)
{
	return tfs ? tk_tracefs_read_file(tfs, rel, text, len)
		   : tk_tracefs_read_top_file(rel, text, len);
}

static void set_host_layout(struct tk_tracedata *td)
{
	long page = sysconf(_SC_PAGESIZE);

	td->big_endian = TK_HOST_BIG_ENDIAN;
	td->long_size = sizeof(long);
	td->page_size = page > 0 ? (uint32_t)page : 4096;
}

static int take(struct tk_tracedata *td, const struct tk_tracefs *tfs, const char *rel,
		enum td_text which)
{
	char *text;
	size_t len;
	int r = read_file(tfs, rel, &text, &len);

	return r < 0 ? r : tk_tracedata_take_text(td, which, text, len);
}

int tk_tracedata_gather_headers(struct tk_tracedata *td, const struct tk_tracefs *tfs)
{
	int r = take(td, tfs, "events/header_page", TD_HEADER_PAGE);

	if (r == 0)
		r = take(td, tfs, "events/header_event", TD_HEADER_EVENT);
	set_host_layout(td);
	return r;
}

/* The format of one event into @system's group (NULL: the ftrace formats). */
static int gather_format(struct tk_tracedata *td, const struct tk_tracefs *tfs, const char *system,
			 const char *event, bool ftrace)
{
	char *rel, *text;
	size_t len;
	int r;

	if (asprintf(&rel, "events/%s/%s/format", system, event) < 0)
		return tk_fail(ENOMEM, "out of memory");
	r = read_file(tfs, rel, &text, &len);
	free(rel);
	if (r < 0)
		return r;
	return tk_tracedata_take_format(td, ftrace ? NULL : system, text, len);
}

int tk_tracedata_gather_event(struct tk_tracedata *td, const struct tk_tracefs *tfs,
			      const char *system, const char *event)
{
	if (strchr(system, '/') || strchr(event, '/') || !system[0] || !event[0])
		return tk_fail(EINVAL, "event \"%s:%s\" is not system:name", system, event);
	return gather_format(td, tfs, system, event, strcmp(system, "ftrace") == 0);
}

int tk_tracedata_gather_system(struct tk_tracedata *td, const struct tk_tracefs *tfs,
			       const char *system)
{
	bool ftrace = strcmp(system, "ftrace") == 0;
	const char *top = tfs ? tk_tracefs_dir(tfs) : tk_tracefs_root();
	struct dirent **list;
	char *dir;
	int n, r = 0;

	if (!top)
		return -errno;
	if (strchr(system, '/') || !system[0])
		return tk_fail(EINVAL, "\"%s\" is not a system name", system);
	/* The group exists even when the system has no event left. */
	if (!ftrace) {
		r = tk_tracedata_add_system(td, system);
		if (r < 0)
			return r;
	} else {
		td->parts |= TK_TRACEDATA_FTRACE;
	}
	if (asprintf(&dir, "%s/events/%s", top, system) < 0)
		return tk_fail(ENOMEM, "out of memory");
	n = scandir(dir, &list, NULL, alphasort);
	if (n < 0) {
		r = tk_fail(errno, "%s: %s", dir, strerror(errno));
		free(dir);
		return r;
	}
	for (int i = 0; i < n; i++) {
		char *abs = NULL;
		struct stat st;

		if (r == 0 && list[i]->d_name[0] != '.' &&
		    asprintf(&abs, "%s/%s/format", dir, list[i]->d_name) >= 0) {
			if (stat(abs, &st) == 0)
				r = gather_format(td, tfs, system, list[i]->d_name, ftrace);
			free(abs);
		}
		free(list[i]);
	}
	free(list);
	free(dir);
	return r;
}

/*
 * Keep @text (read from @name, or the read's error in @r) as part @which,
 * which the .dat layout sizes with a u32: more than that is refused here
 * rather than written truncated.
 */
static int take_u32_sized(struct tk_tracedata *td, enum td_text which, const char *name, int r,
			  char *text, size_t len)
{
	if (r < 0)
		return r;
	if (len > UINT32_MAX) {
		free(text);
		return tk_fail(EFBIG, "%s: %zu bytes do not fit the u32 size of the layout", name,
			       len);
	}
	return tk_tracedata_take_text(td, which, text, len);
}

int tk_tracedata_gather_kallsyms(struct tk_tracedata *td)
{
	char *text = NULL;
	size_t len = 0;
	int r = tk_tracefs_read_file(NULL, "/proc/kallsyms", &text, &len);

	return take_u32_sized(td, TD_KALLSYMS, "/proc/kallsyms", r, text, len);
}

int tk_tracedata_gather_printk(struct tk_tracedata *td)
{
	char *text = NULL;
	size_t len = 0;
	int r = tk_tracefs_read_top_file("printk_formats", &text, &len);

	return take_u32_sized(td, TD_PRINTK, "printk_formats", r, text, len);
}

int tk_tracedata_gather_cmdlines(struct tk_tracedata *td)
{
	return take(td, NULL, "saved_cmdlines", TD_CMDLINES);
}

int tk_tracedata_gather(struct tk_tracedata *td, const struct tk_tracefs *tfs,
			const char *const *events, size_t nr)
{
	int r;

	for (size_t i = 0; i < nr; i++)
		if (!strchr(events[i], ':') || strchr(events[i], '/') || strlen(events[i]) > 400)
			return tk_fail(EINVAL, "event \"%s\" is not system:name", events[i]);
	r = tk_tracedata_gather_headers(td, tfs);
	/* ftrace formats first (their own part), then the systems in order of first appearance. */
	td->parts |= TK_TRACEDATA_FTRACE | TK_TRACEDATA_EVENTS;
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		for (size_t i = 0; i < nr && r == 0; i++) {
			const char *colon = strchr(events[i], ':');
			size_t sl = (size_t)(colon - events[i]);
			bool ftrace = sl == 6 && memcmp(events[i], "ftrace", 6) == 0;
			char system[401];

			if (ftrace != (pass == 0))
				continue;
			memcpy(system, events[i], sl);
			system[sl] = 0;
			r = gather_format(td, tfs, system, colon + 1, ftrace);
		}
	}
	if (r == 0)
		r = tk_tracedata_gather_printk(td);
	if (r == 0)
		r = tk_tracedata_gather_cmdlines(td);
	return r;
}

int tk_perfdata_tracing_build(const char *const *events, size_t nr, void **blob, uint64_t *len)
{
	struct tk_tracedata *td = tk_tracedata_new();
	int r;

	if (!td)
		return -ENOMEM;
	r = tk_tracedata_gather(td, NULL, events, nr);
	if (r == 0)
		r = tk_tracedata_encode_perf(td, blob, len);
	tk_tracedata_free(td);
	return r;
}
