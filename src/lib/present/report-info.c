// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * report-info: trace-cmd report's listing modes, which print facts of a
 * file instead of its events (report.h: tk_report_list_dat(),
 * tk_report_list_tracedata(), tk_report_check_formats()).
 *
 * The text is trace-cmd report 3.1.6's with Debian's libtraceevent 1.7.1,
 * byte for byte:
 *
 *   -e         "file is little endian and host is little endian"
 *   -P         "%016llx %s" per printk format, by address
 *   -f         "%016llx %s" per kallsyms function, " [module]" after it
 *              when it has one, by address
 *   -E         "system:name" per event format, by system, name, then id
 *   --uname    "cpus=N", the UNAME option's text (or " uname was not
 *              recorded in this file"), then what --version prints
 *   --version  "cpus=N", the VERSION option's text (or " version was not
 *              recorded in this file")
 *
 * -P and -f show what libtraceevent keeps after reading the printk and
 * kallsyms texts, so its reading is reproduced here, quirks included:
 *   - printk_formats lines are "ADDR : FORMAT". The address is what
 *     strtoull(, 16) takes from the text before the first ':' (leading
 *     ':' belong to no field); the format starts one character after that
 *     ':'. A leading '"' is dropped, then a final '"', and only when that
 *     final quote was dropped is a final literal "\n" (backslash, n)
 *     dropped as well.
 *   - kallsyms lines are scanned as "%16llx %c %n%*s%n%*1[\t][%n%*s%n":
 *     a function with type 'A' or 'a' (absolute: per-CPU offsets) or a
 *     name starting with '$' (arm's mapping symbols) is left out, a module
 *     is the text after "\t[" less its last character, and the first line
 *     that does not scan ends the reading (libtraceevent stops there too).
 *   - Both lists are built by prepending and then sorted by address with
 *     glibc's qsort(), a merge sort and so stable: entries with the same
 *     address come out in reverse file order. The sort here breaks ties
 *     by file position, reversed, to give that order without relying on
 *     the C library's sort being stable.
 * Lines libtraceevent would read out of bounds on (a printk line without
 * ':' or with nothing after it; a format shorter than three characters)
 * are skipped, as event.c skips them.
 *
 * -E and tk_report_check_formats() parse every format through the event
 * module (libtraceevent behind a check that keeps texts that would crash
 * it away). -E lists what libtraceevent holds, which includes formats
 * whose print format failed to parse, as trace-cmd lists them; a check
 * counts the formats that did not parse, as trace-cmd's --check-events.
 * Parsing ~2300 formats of a full kernel costs ~0.1 s, which is fine for
 * a listing.
 *
 * -T (tk_report_filter_test()) prints what trace-cmd's -T prints: for each
 * filter string (the -F ones, then the -v -F ones, then the one trace-cmd
 * builds from --pid, ".*:(common_pid==P)||(pid==P)||(next_pid==P)||..."
 * with the last pid given first), one " 'EVENT: FILTER'" line per event it
 * names, the filter as libtraceevent's tep_filter_make_string() writes it.
 * libtraceevent prints them while it adds the filter, walking a list it
 * built by prepending, for each comma-separated event name in turn, the
 * matching events in id order: so the lines come in the reverse of that
 * sequence. The sequence is found here by matching each name alone. Like
 * trace-cmd, the set also holds the "ftrace:blktrace" event it makes up
 * when it readies the data (add_blktrace()), so ".*" filters name it.
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/event.h>
#include <tracekit/outbuf.h>
#include <tracekit/report.h>
#include <tracekit/tracedata.h>

#include <traceevent/event-parse.h>

#include "event-internal.h"
#include "internal/error.h"

/* One printk format or function, as libtraceevent keeps it. */
struct info_entry {
	uint64_t addr;
	size_t pos; /* in file order: ties print in reverse of it */
	const char *text;
	size_t len;
	const char *mod; /* functions: the module, or NULL */
	size_t mod_len;
};

struct info_list {
	struct info_entry *v;
	size_t n, cap;
};

static int list_add(struct info_list *l, const struct info_entry *e)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct info_entry *t = realloc(l->v, cap * sizeof(*t));

		if (!t)
			return tk_fail(ENOMEM, "cannot list the file's symbols: out of memory");
		l->v = t;
		l->cap = cap;
	}
	l->v[l->n] = *e;
	l->v[l->n].pos = l->n;
	l->n++;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct info_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* libtraceevent prepends, then sorts stably: the later line first. */
	return x->pos > y->pos ? -1 : x->pos < y->pos;
}

/* The lines of @text, as strtok_r(, "\n") gives them (empty ones skipped). */
static const char *next_line(const char **p, const char *end, size_t *len)
{
	const char *s = *p, *nl;

	while (s < end && *s == '\n')
		s++;
	if (s >= end)
		return NULL;
	nl = memchr(s, '\n', (size_t)(end - s));
	*len = nl ? (size_t)(nl - s) : (size_t)(end - s);
	*p = s + *len;
	return s;
}

/* strtoull(, 16) on a piece of text that is not NUL-terminated (at most 63 characters). */
static uint64_t hex_value(const char *s, size_t n)
{
	char buf[64];

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return strtoull(buf, NULL, 16);
}

static int read_printk(const char *text, size_t len, struct info_list *l)
{
	const char *p = text, *end = text + strnlen(text, len), *line;
	size_t n;

	while ((line = next_line(&p, end, &n))) {
		struct info_entry e = {0};
		size_t a = 0, flen;
		const char *colon, *fmt;

		while (a < n && line[a] == ':')
			a++;
		if (a == n)
			break; /* libtraceevent: "printk format with empty entry", and it stops */
		colon = memchr(line + a, ':', n - a);
		if (!colon || line + n - colon < 2)
			continue;
		fmt = colon + 2;
		flen = (size_t)(line + n - fmt);
		if (flen && *fmt == '"') {
			fmt++;
			flen--;
		}
		/* tep_register_print_string() reads before its copy under three characters. */
		if (flen < 3)
			continue;
		/* A final quote goes; then, and only then, a final literal "\n" goes too. */
		if (fmt[flen - 1] == '"') {
			flen--;
			if (fmt[flen - 2] == '\\' && fmt[flen - 1] == 'n')
				flen -= 2;
		}
		e.addr = hex_value(line + a, (size_t)(colon - (line + a)));
		e.text = fmt;
		e.len = flen;
		if (list_add(l, &e))
			return -ENOMEM;
	}
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * One kallsyms line as sscanf("%16llx %c %n%*s%n%*1[\t][%n%*s%n") reads
 * it. Return: 1 for a function to keep, 0 for one to leave out, -1 when
 * the line does not scan (the reading stops).
 */
static int scan_kallsyms_line(const char *s, size_t n, struct info_entry *e)
{
	size_t i = 0, start, digits = 0, width = 16;
	uint64_t addr = 0;
	bool neg = false;
	char type;

	while (i < n && is_space(s[i]))
		i++;
	/* %llx: an optional sign and 0x prefix, inside the width of 16. */
	if (i < n && (s[i] == '+' || s[i] == '-')) {
		neg = s[i] == '-';
		i++;
		width--;
	}
	if (i + 1 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') && width >= 3 &&
	    i + 2 < n && strchr("0123456789abcdefABCDEF", s[i + 2]) && s[i + 2]) {
		i += 2;
		width -= 2;
		digits = 1; /* the 0 counts as a digit even if no more follow */
	}
	start = i;
	while (i < n && i - start < width && s[i] && strchr("0123456789abcdefABCDEF", s[i])) {
		char c = s[i++];
		unsigned int v =
			c <= '9' ? (unsigned int)(c - '0') : (unsigned int)((c | 0x20) - 'a' + 10);

		addr = addr * 16 + v;
	}
	digits += i - start;
	if (!digits)
		return -1;
	while (i < n && is_space(s[i]))
		i++;
	if (i >= n)
		return -1;
	type = s[i++];
	while (i < n && is_space(s[i]))
		i++;
	start = i;
	while (i < n && !is_space(s[i]))
		i++;
	if (i == start)
		return -1; /* no name: func_end stays 0 */
	e->addr = neg ? (uint64_t)0 - addr : addr;
	e->text = s + start;
	e->len = i - start;
	e->mod = NULL;
	e->mod_len = 0;
	if (i + 1 < n && s[i] == '\t' && s[i + 1] == '[') {
		size_t ms = i + 2, j = ms;

		while (j < n && is_space(s[j]))
			j++;
		start = j;
		while (j < n && !is_space(s[j]))
			j++;
		if (j > start) {
			/* The module's text, less its last character (the ']'). */
			e->mod = s + ms;
			e->mod_len = j - ms - 1;
		}
	}
	if (e->text[0] == '$' || type == 'A' || type == 'a')
		return 0;
	return 1;
}

static int read_kallsyms(const char *text, size_t len, struct info_list *l, const char *path)
{
	const char *p = text, *end = text + strnlen(text, len), *line;
	size_t n;

	while ((line = next_line(&p, end, &n))) {
		struct info_entry e = {0};
		int r = scan_kallsyms_line(line, n, &e);

		if (r < 0) {
			tk_warn("%s: kallsyms line \"%.*s\" does not parse: the functions after it "
				"are not listed (libtraceevent stops there too)",
				path, (int)(n > 80 ? 80 : n), line);
			break;
		}
		if (r && list_add(l, &e))
			return -ENOMEM;
	}
	return 0;
}

static int print_entries(struct tk_outbuf *o, struct info_list *l)
{
	char head[24];

	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), entry_cmp);
	for (size_t i = 0; i < l->n; i++) {
		const struct info_entry *e = &l->v[i];
		int k = snprintf(head, sizeof(head), "%016" PRIx64 " ", e->addr);

		tk_outbuf_write(o, head, (size_t)k);
		tk_outbuf_write(o, e->text, e->len);
		if (e->mod) {
			tk_outbuf_write(o, " [", 2);
			tk_outbuf_write(o, e->mod, e->mod_len);
			tk_outbuf_write(o, "]", 1);
		}
		tk_outbuf_write(o, "\n", 1);
	}
	return 0;
}

/*
 * Every format of @td parsed into a new set. @failed: how many did not
 * parse (-EBADMSG; a second format with a known id is not a failure, as
 * libtraceevent takes both). NULL with tk_errmsg() on ENOMEM.
 */
static struct tk_event_set *parse_all(const struct tk_tracedata *td, size_t *failed)
{
	struct tk_event_set *set;
	bool big = false;
	uint8_t long_size = 8;
	uint32_t page_size = 4096;
	size_t n = tk_tracedata_format_count(td);

	tk_tracedata_layout(td, &big, &long_size, &page_size);
	set = tk_event_set_new(long_size == 4 ? 4 : 8, big, page_size ? page_size : 4096);
	if (!set) {
		tk_fail(ENOMEM, "cannot allocate an event set");
		return NULL;
	}
	*failed = 0;
	for (size_t i = 0; i < n; i++) {
		const char *system = NULL;
		struct tk_text t;
		int ret;

		if (tk_tracedata_format(td, i, &system, &t) < 0)
			continue;
		ret = tk_event_set_add_format(set, system, t.data, t.len);
		if (ret == -ENOMEM) {
			tk_event_set_free(set);
			return NULL;
		}
		if (ret < 0 && ret != -EEXIST)
			(*failed)++;
	}
	return set;
}

static int list_events(const struct tk_tracedata *td, struct tk_outbuf *o)
{
	size_t failed;
	struct tk_event_set *set = parse_all(td, &failed);
	struct tep_event **evs;

	if (!set)
		return -ENOMEM;
	/* libtraceevent's own list: it holds the formats whose print format failed too. */
	evs = tep_list_events(set->tep, TEP_EVENT_SORT_SYSTEM);
	for (size_t i = 0; evs && evs[i]; i++) {
		if (evs[i]->system) {
			tk_outbuf_write(o, evs[i]->system, strlen(evs[i]->system));
			tk_outbuf_write(o, ":", 1);
		}
		tk_outbuf_write(o, evs[i]->name, strlen(evs[i]->name));
		tk_outbuf_write(o, "\n", 1);
	}
	tk_event_set_free(set);
	if (!evs && tk_tracedata_format_count(td))
		return tk_fail(ENOMEM, "cannot sort the event formats: out of memory");
	return 0;
}

static int list_texts(const struct tk_tracedata *td, enum tk_report_list what, const char *path,
		      struct tk_outbuf *o)
{
	struct info_list l = {0};
	struct tk_text t;
	int ret = 0;

	if (what == TK_REPORT_LIST_PRINTK) {
		if (!tk_tracedata_printk(td, &t))
			ret = read_printk(t.data, t.len, &l);
	} else if (!tk_tracedata_kallsyms(td, &t)) {
		ret = read_kallsyms(t.data, t.len, &l, path);
	}
	if (!ret)
		ret = print_entries(o, &l);
	free(l.v);
	return ret;
}

static int list_to(const struct tk_tracedata *td, const struct tk_dat_info *info,
		   enum tk_report_list what, int fd, const char *path)
{
	struct tk_outbuf o;
	int ret, fret;
	char line[128];

	if (what < TK_REPORT_LIST_ENDIAN || what > TK_REPORT_LIST_PAGE_SIZE)
		return tk_fail(EINVAL, "unknown listing %d", (int)what);
	if (!info && (what == TK_REPORT_LIST_UNAME || what == TK_REPORT_LIST_VERSION))
		return tk_fail(EINVAL, "--uname and --version read a .dat file's options");
	ret = tk_outbuf_init(&o, fd, 64u << 10);
	if (ret)
		return tk_fail(ENOMEM, "cannot allocate the output buffer");
	switch (what) {
	case TK_REPORT_LIST_ENDIAN: {
		bool big = false;
		int k;

		if (info)
			big = info->big_endian;
		else
			tk_tracedata_layout(td, &big, NULL, NULL);
		k = snprintf(line, sizeof(line), "file is %s endian and host is %s endian\n",
			     big ? "big" : "little",
			     __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? "big" : "little");
		tk_outbuf_write(&o, line, (size_t)k);
		break;
	}
	case TK_REPORT_LIST_PAGE_SIZE: {
		uint32_t page_size = 0;
		int k;

		tk_tracedata_layout(td, NULL, NULL, &page_size);
		k = snprintf(line, sizeof(line),
			     "file page size is %" PRIu32 ", and host page size is %ld\n",
			     page_size, sysconf(_SC_PAGESIZE));
		tk_outbuf_write(&o, line, (size_t)k);
		break;
	}
	case TK_REPORT_LIST_PRINTK:
	case TK_REPORT_LIST_FUNCS:
		ret = list_texts(td, what, path, &o);
		break;
	case TK_REPORT_LIST_EVENTS:
		ret = list_events(td, &o);
		break;
	case TK_REPORT_LIST_UNAME:
	case TK_REPORT_LIST_VERSION: {
		int k = snprintf(line, sizeof(line), "cpus=%u\n", info->cpu_count);

		tk_outbuf_write(&o, line, (size_t)k);
		/* trace-cmd's --uname falls through into --version's text. */
		if (what == TK_REPORT_LIST_UNAME) {
			if (info->uname) {
				tk_outbuf_write(&o, info->uname, strlen(info->uname));
				tk_outbuf_write(&o, "\n", 1);
			} else {
				tk_outbuf_write(&o, " uname was not recorded in this file\n", 37);
			}
		}
		if (info->tracer_version) {
			tk_outbuf_write(&o, info->tracer_version, strlen(info->tracer_version));
			tk_outbuf_write(&o, "\n", 1);
		} else {
			tk_outbuf_write(&o, " version was not recorded in this file\n", 39);
		}
		break;
	}
	}
	fret = tk_outbuf_flush(&o);
	tk_outbuf_release(&o);
	if (!ret && fret)
		ret = tk_fail(-fret, "cannot write the listing: %s", strerror(-fret));
	return ret;
}

int tk_report_list_tracedata(const struct tk_tracedata *td, enum tk_report_list what, int fd)
{
	if (!td)
		return tk_fail(EINVAL, "no tracing data to list");
	return list_to(td, NULL, what, fd, "tracing data");
}

int tk_report_list_dat(struct tk_dat *dat, enum tk_report_list what, int fd)
{
	const struct tk_dat_info *info = tk_dat_get_info(dat);

	return list_to(tk_dat_get_tracedata(dat), info, what, fd,
		       info->path ? info->path : "trace.dat");
}

/* The event name a format text gives: its first non-empty line, after "name: ". */
static bool format_name(const struct tk_text *t, char *name, size_t cap)
{
	const char *p = t->data, *end = t->data + t->len, *nl;
	size_t n;

	while (p < end && *p == '\n')
		p++;
	nl = memchr(p, '\n', (size_t)(end - p));
	n = (size_t)((nl ? nl : end) - p);
	if (nl == NULL && n == 0)
		return false;
	if (n >= 6 && !memcmp(p, "name: ", 6)) {
		p += 6;
		n -= 6;
	}
	/* A NUL ends the line for regexec(), as it ends trace-cmd's copy. */
	n = strnlen(p, n);
	if (n >= cap)
		n = cap - 1;
	memcpy(name, p, n);
	name[n] = '\0';
	return true;
}

int tk_report_list_formats(const struct tk_tracedata *td, const char *regex, int fd)
{
	regex_t sreg, ereg;
	bool unique = false, compiled = false;
	struct tk_outbuf o;
	int ret = 0, fret;
	char name[256];

	if (!td)
		return tk_fail(EINVAL, "no tracing data to list");
	if (!regex)
		regex = ".*";
	/*
	 * "SYSTEM:EVENT" splits at the colons as strtok() splits it (empty
	 * parts vanish); without a second part the one regex serves both.
	 */
	{
		char *copy = strdup(regex), *save = NULL, *sys, *ev;

		if (!copy)
			return tk_fail(ENOMEM, "out of memory");
		sys = strtok_r(copy, ":", &save);
		ev = sys ? strtok_r(NULL, ":", &save) : NULL;
		if (!sys) {
			free(copy);
			return tk_fail(EINVAL, "bad event regex '%s'", regex);
		}
		unique = ev != NULL;
		if (!ev)
			ev = sys;
		if (regcomp(&sreg, sys, REG_ICASE | REG_NOSUB)) {
			ret = tk_fail(EINVAL, "bad regular expression '%s'", sys);
		} else if (regcomp(&ereg, ev, REG_ICASE | REG_NOSUB)) {
			regfree(&sreg);
			ret = tk_fail(EINVAL, "bad regular expression '%s'", ev);
		} else {
			compiled = true;
		}
		free(copy);
		if (!compiled)
			return ret;
	}
	if (tk_outbuf_init(&o, fd, 64u << 10)) {
		regfree(&sreg);
		regfree(&ereg);
		return tk_fail(ENOMEM, "cannot allocate the output buffer");
	}
	for (size_t s = 0; s < tk_tracedata_system_count(td); s++) {
		const char *system = tk_tracedata_system_name(td, s);
		bool all = false, any = true, printed = false;

		if (!system)
			continue;
		/* A system the regex names takes all its events; with "S:E", only S's can match. */
		if (!regexec(&sreg, system, 0, NULL, 0))
			all = !unique;
		else if (unique)
			any = false;
		for (size_t i = 0; any && i < tk_tracedata_system_format_count(td, s); i++) {
			struct tk_text t;

			if (tk_tracedata_system_format(td, s, i, &t) < 0)
				continue;
			if (!all && (!format_name(&t, name, sizeof(name)) ||
				     regexec(&ereg, name, 0, NULL, 0)))
				continue;
			if (!printed) {
				tk_outbuf_write(&o, "\nsystem: ", 9);
				tk_outbuf_write(&o, system, strlen(system));
				tk_outbuf_write(&o, "\n", 1);
				printed = true;
			}
			tk_outbuf_write(&o, t.data, strnlen(t.data, t.len));
			tk_outbuf_write(&o, "\n", 1);
		}
	}
	regfree(&sreg);
	regfree(&ereg);
	fret = tk_outbuf_flush(&o);
	tk_outbuf_release(&o);
	if (fret)
		return tk_fail(-fret, "cannot write the formats: %s", strerror(-fret));
	return 0;
}

int tk_report_check_formats(const struct tk_tracedata *td, size_t *failed)
{
	size_t n = 0;
	struct tk_event_set *set;

	if (!td)
		return tk_fail(EINVAL, "no tracing data to check");
	set = parse_all(td, &n);
	if (!set)
		return -ENOMEM;
	tk_event_set_free(set);
	if (failed)
		*failed = n;
	return n ? 1 : 0;
}

/* The events @name (one comma-separated part of a filter's event list) matches, by id. */
static int part_ids(struct tep_handle *tep, const char *name, size_t len, int **ids, size_t *n)
{
	struct tep_event_filter *f = tep_filter_alloc(tep);
	char *part = strndup(name, len);
	int ret = 0;

	if (!f || !part) {
		ret = tk_fail(ENOMEM, "cannot test a filter: out of memory");
	} else if (tep_filter_add_filter_str(f, part) >= 0) {
		int *t = realloc(*ids, (*n + (size_t)f->filters + 1) * sizeof(*t));

		if (!t) {
			ret = tk_fail(ENOMEM, "cannot test a filter: out of memory");
		} else {
			*ids = t;
			for (int i = 0; i < f->filters; i++)
				t[(*n)++] = f->event_filters[i].event_id;
		}
	}
	free(part);
	if (f)
		tep_filter_free(f);
	return ret;
}

static int test_one(struct tep_handle *tep, const char *spec, struct tk_outbuf *o)
{
	struct tep_event_filter *f = tep_filter_alloc(tep);
	const char *colon = strchr(spec, ':'), *p = spec;
	int *ids = NULL;
	size_t n = 0;
	int ret = 0;

	if (!f)
		return tk_fail(ENOMEM, "cannot test a filter: out of memory");
	if (tep_filter_add_filter_str(f, spec) < 0) {
		tep_filter_free(f);
		return tk_fail(EINVAL, "failed to create event filter: %s", spec);
	}
	/* The event names, as libtraceevent splits them: at ',' before the ':'. */
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len;

		if (comma && (!colon || comma < colon))
			len = (size_t)(comma - p);
		else
			len = colon ? (size_t)(colon - p) : strlen(p);
		ret = part_ids(tep, p, len, &ids, &n);
		if (ret || !comma || (colon && comma > colon))
			break;
		p = comma + 1;
	}
	while (!ret && n--) {
		struct tep_event *ev = tep_find_event(tep, ids[n]);
		char *text = tep_filter_make_string(f, ids[n]);

		if (ev && text) {
			tk_outbuf_write(o, " '", 2);
			tk_outbuf_write(o, ev->name, strlen(ev->name));
			tk_outbuf_write(o, ": ", 2);
			tk_outbuf_write(o, text, strlen(text));
			tk_outbuf_write(o, "'\n", 2);
		}
		free(text);
	}
	free(ids);
	tep_filter_free(f);
	return ret;
}

/* trace-cmd's --pid filter string: the last pid given first. NULL: ENOMEM. */
static char *pid_filter(const int *pids, size_t npids)
{
	char *s = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);

	if (!m)
		return NULL;
	fputs(".*:", m);
	for (size_t i = npids; i--;)
		fprintf(m, "%s(common_pid==%d)||(pid==%d)||(next_pid==%d)",
			i + 1 < npids ? "||" : "", pids[i], pids[i], pids[i]);
	if (fclose(m)) {
		free(s);
		return NULL;
	}
	return s;
}

/*
 * trace-cmd adds an "ftrace:blktrace" event when it readies a file's data
 * (the kernel exports no format for it): the id after ftrace's power,
 * kmem_free or user_stack event, whichever it finds first, the common
 * fields of that event (when they have their usual places), the fields of
 * struct blk_io_trace after them. Filters name it, so -T lists it.
 */
static void add_blktrace(struct tk_event_set *set)
{
	static const char *const after[] = {"power", "kmem_free", "user_stack"};
	static const struct {
		const char *decl, *name;
		int offset, size;
	} common[] = {
		{"unsigned short", "common_type", 0, 2},
		{"unsigned char", "common_flags", 2, 1},
		{"unsigned char", "common_preempt_count", 3, 1},
		{"int", "common_pid", 4, 4},
	};
	struct tep_event *ev = NULL;
	struct tep_format_field *lock;
	char text[1536];
	int n;

	for (size_t i = 0; !ev && i < 3; i++)
		ev = tep_find_event_by_name(set->tep, "ftrace", after[i]);
	if (!ev)
		return;
	n = snprintf(text, sizeof(text), "name: blktrace\nID: %d\nformat:\n", ev->id + 1);
	for (size_t i = 0; i < 4; i++) {
		struct tep_format_field *f = tep_find_common_field(ev, common[i].name);

		if (!f || f->offset != common[i].offset || f->size != common[i].size)
			return;
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "\tfield:%s %s;\toffset:%d;\tsize:%d;\n", common[i].decl,
			      common[i].name, common[i].offset, common[i].size);
	}
	lock = tep_find_common_field(ev, "common_lock_depth");
	if (lock && (lock->offset != 8 || lock->size != 4))
		return;
	if (lock)
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "\tfield:int common_lock_depth;\toffset:8;\tsize:4;\n");
	n += snprintf(text + n, sizeof(text) - (size_t)n,
		      "\n\tfield:u64 sector;\toffset:16;\tsize:8;\n"
		      "\tfield:int bytes;\toffset:24;\tsize:4;\n"
		      "\tfield:int action;\toffset:28;\tsize:4;\n"
		      "\tfield:int pid;\toffset:32;\tsize:4;\n"
		      "\tfield:int device;\toffset:36;\tsize:4;\n"
		      "\tfield:int cpu;\toffset:40;\tsize:4;\n"
		      "\tfield:short error;\toffset:44;\tsize:2;\n"
		      "\tfield:short pdu_len;\toffset:46;\tsize:2;\n"
		      "\tfield:void data;\toffset:48;\tsize:0;\n"
		      "\nprint fmt: \"%%d\", REC->pid\n");
	if (n > 0 && (size_t)n < sizeof(text))
		tk_event_set_add_format(set, "ftrace", text, (size_t)n);
}

int tk_report_filter_test(struct tk_dat *dat, const struct tk_report_opts *opts, int fd)
{
	struct tk_outbuf o;
	size_t failed;
	struct tk_event_set *set;
	char *pids = NULL;
	int ret = 0, fret;

	if (!dat || !opts)
		return tk_fail(EINVAL, "no file or no options to test filters of");
	if (opts->ncomms)
		return tk_fail(EINVAL, "-T shows the -F and --pid filters; --comm is not one");
	set = parse_all(tk_dat_get_tracedata(dat), &failed);
	if (!set)
		return -ENOMEM;
	add_blktrace(set);
	if (tk_outbuf_init(&o, fd, 64u << 10)) {
		tk_event_set_free(set);
		return tk_fail(ENOMEM, "cannot allocate the output buffer");
	}
	for (size_t i = 0; !ret && i < opts->nevents; i++)
		ret = test_one(set->tep, opts->events[i], &o);
	for (size_t i = 0; !ret && i < opts->nneg_events; i++)
		ret = test_one(set->tep, opts->neg_events[i], &o);
	if (!ret && opts->npids) {
		pids = pid_filter(opts->pids, opts->npids);
		ret = pids ? test_one(set->tep, pids, &o)
			   : tk_fail(ENOMEM, "cannot test a filter: out of memory");
		free(pids);
	}
	fret = tk_outbuf_flush(&o);
	tk_outbuf_release(&o);
	tk_event_set_free(set);
	if (!ret && fret)
		ret = tk_fail(-fret, "cannot write the filters: %s", strerror(-fret));
	return ret;
}
