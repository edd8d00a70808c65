// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perf-events: perf record's -e syntax, split into event specs.
 *
 * One -e argument is a comma list. An element is either a spec
 * ("cpu-clock", "cycles:u", "sched:sched_switch", "sched:*") or a group
 * "{SPEC,SPEC,...}" that may carry modifiers after its closing brace
 * ("{cycles,instructions}:u"); perf applies those to every member, so they
 * are appended to each member's spec here (a member that has modifiers of
 * its own gets both). Commas inside braces separate members, so the split
 * counts brace depth; a group inside a group is refused, as perf does.
 * Tracepoint names hold no commas or braces, which is why this plain scan
 * suffices.
 *
 * What a spec means (a named counter and its modifiers, or a tracepoint
 * glob) is decided by perf-record.c when it opens the events: this file
 * only cuts the text, so it needs neither tracefs nor perf_event_open and
 * any program can check a user's -e before recording.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/perfrecord.h>

#include "internal/array.h"
#include "internal/error.h"

/* The specs being built; on failure they are freed and the caller's array is left alone. */
struct list {
	struct tk_perfrecord_event *ev;
	size_t n, cap;
};

static int push(struct list *l, const char *spec, size_t len, const char *mod, size_t mlen,
		uint32_t group)
{
	char *s;

	if (len == 0)
		return tk_fail(EINVAL, "empty event in the -e list");
	{
		struct tk_perfrecord_event *n = tk_array_grow(l->ev, &l->cap, l->n, sizeof(*n), 8);

		if (!n)
			return tk_fail(ENOMEM, "out of memory");
		l->ev = n;
	}
	/* A member with modifiers of its own joins the group's with no second colon. */
	s = malloc(len + mlen + 2);
	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	memcpy(s, spec, len);
	s[len] = 0;
	if (mlen) {
		const char *colon = NULL;
		size_t rest;

		for (size_t i = 0; i < len; i++)
			if (spec[i] == ':')
				colon = spec + i;
		rest = colon ? len - (size_t)(colon - spec) - 1 : 0;
		if (!colon || !rest || strspn(colon + 1, "ukp") < rest)
			strcat(s, ":");
		strncat(s, mod, mlen);
	}
	l->ev[l->n++] = (struct tk_perfrecord_event){.spec = s, .group = group};
	return 0;
}

static void drop(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free((char *)l->ev[i].spec);
	free(l->ev);
}

TK_API int tk_perfrecord_parse_events(const char *arg, struct tk_perfrecord_event **events,
				      size_t *nr)
{
	struct list l = {0};
	uint32_t group = 0;
	const char *p = arg;
	struct tk_perfrecord_event *all;
	int r = 0;

	if (!arg || !events || !nr)
		return tk_fail(EINVAL, "tk_perfrecord_parse_events: NULL argument");
	for (size_t i = 0; i < *nr; i++)
		if ((*events)[i].group > group)
			group = (*events)[i].group;
	for (;;) {
		if (*p == '{') {
			const char *start = p + 1, *close = strchr(start, '}'), *open, *mod, *end;
			size_t mlen = 0;

			open = strchr(start, '{');
			if (!close)
				return drop(&l),
				       tk_fail(EINVAL, "event list \"%s\": '{' without '}'", arg);
			if (open && open < close)
				return drop(&l),
				       tk_fail(EINVAL, "event list \"%s\": a group inside a group",
					       arg);
			mod = close + 1;
			if (*mod == ':') {
				mod++;
				mlen = strcspn(mod, ",");
				if (!mlen)
					return drop(&l),
					       tk_fail(EINVAL, "event list \"%s\": empty modifier",
						       arg);
			}
			end = mod + mlen;
			if (*end && *end != ',')
				return drop(&l),
				       tk_fail(EINVAL, "event list \"%s\": text after '}'", arg);
			group++;
			for (const char *m = start; r == 0;) {
				size_t len = strcspn(m, ",}");

				r = push(&l, m, len, mod, mlen, group);
				if (m[len] == '}')
					break;
				m += len + 1;
			}
			if (r)
				return drop(&l), r;
			p = end;
		} else {
			size_t len = strcspn(p, ",{}");

			if (p[len] == '{' || p[len] == '}')
				return drop(&l),
				       tk_fail(EINVAL, "event list \"%s\": braces do not pair",
					       arg);
			r = push(&l, p, len, NULL, 0, 0);
			if (r)
				return drop(&l), r;
			p += len;
		}
		if (!*p)
			break;
		p++; /* the comma */
		if (!*p)
			return drop(&l), tk_fail(EINVAL, "empty event in the -e list \"%s\"", arg);
	}
	all = realloc(*events, (*nr + l.n) * sizeof(*all));
	if (!all)
		return drop(&l), tk_fail(ENOMEM, "out of memory");
	memcpy(all + *nr, l.ev, l.n * sizeof(*all));
	*events = all;
	*nr += l.n;
	free(l.ev);
	return 0;
}

TK_API void tk_perfrecord_events_free(struct tk_perfrecord_event *events, size_t nr)
{
	for (size_t i = 0; events && i < nr; i++)
		free((char *)events[i].spec);
	free(events);
}

/* "fp", "dwarf", "dwarf,SIZE", "lbr": perf record --call-graph's values. */
TK_API int tk_perfrecord_parse_callgraph(const char *arg, enum tk_perfrecord_callgraph *mode,
					 uint32_t *stack_size)
{
	const char *comma = arg ? strchr(arg, ',') : NULL;
	size_t n = comma ? (size_t)(comma - arg) : (arg ? strlen(arg) : 0);

	if (!arg || !mode || !stack_size)
		return tk_fail(EINVAL, "tk_perfrecord_parse_callgraph: NULL argument");
	*stack_size = 0;
	if (n == 2 && !strncmp(arg, "fp", 2) && !comma) {
		*mode = TK_PERFRECORD_CALLGRAPH_FP;
	} else if (n == 3 && !strncmp(arg, "lbr", 3) && !comma) {
		*mode = TK_PERFRECORD_CALLGRAPH_LBR;
	} else if (n == 5 && !strncmp(arg, "dwarf", 5)) {
		*mode = TK_PERFRECORD_CALLGRAPH_DWARF;
		if (comma) {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(comma + 1, &end, 0);
			/* perf rounds the size up to whole u64 words. */
			v = (v + 7) & ~7ULL;
			if (errno || end == comma + 1 || *end || comma[1] == '-' || !v ||
			    v > TK_PERFRECORD_MAX_STACK)
				return tk_fail(
					EINVAL,
					"call graph \"%s\": the stack dump size must be 1 to "
					"%u bytes",
					arg, TK_PERFRECORD_MAX_STACK);
			*stack_size = (uint32_t)v;
		}
	} else {
		return tk_fail(EINVAL, "call graph \"%s\": not fp, dwarf[,SIZE] or lbr", arg);
	}
	return 0;
}

/* "0-3,6": a list of numbers and ranges, as perf takes for -C, -p and -t. */
TK_API int tk_perfrecord_parse_list(const char *arg, int32_t **out, size_t *nr)
{
	int32_t *v = NULL;
	size_t n = 0, cap = 0;
	const char *p = arg;

	if (!arg || !out || !nr)
		return tk_fail(EINVAL, "tk_perfrecord_parse_list: NULL argument");
	for (;;) {
		char *end;
		long lo, hi;

		errno = 0;
		lo = strtol(p, &end, 10);
		if (errno || end == p || lo < 0 || lo > INT32_MAX || *p == '-' || *p == '+')
			goto bad;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (errno || end == p + 1 || p[1] == '-' || p[1] == '+' || hi < lo ||
			    hi > INT32_MAX || hi - lo > 65535)
				goto bad;
			p = end;
		}
		/* The whole list is bounded as one range is: a CPU or pid list, not a table. */
		if (n + (size_t)(hi - lo) + 1 > 65536)
			goto bad;
		if (n + (size_t)(hi - lo) + 1 > cap) {
			size_t want = cap ? cap : 16;
			int32_t *nv;

			while (want < n + (size_t)(hi - lo) + 1)
				want *= 2;
			nv = realloc(v, want * sizeof(*nv));
			if (!nv) {
				free(v);
				return tk_fail(ENOMEM, "out of memory");
			}
			v = nv;
			cap = want;
		}
		for (long x = lo; x <= hi; x++)
			v[n++] = (int32_t)x;
		if (!*p)
			break;
		if (*p != ',' || !p[1])
			goto bad;
		p++;
	}
	*out = v;
	*nr = n;
	return 0;
bad:
	free(v);
	return tk_fail(EINVAL, "\"%s\" is not a list of at most 65536 numbers and ranges (0-3,6)",
		       arg);
}
