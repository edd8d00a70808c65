// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * host: gather the facts about this machine that recordings store.
 *
 * The one place that reads them: uname(2), sysconf for the CPU counts,
 * /proc/cpuinfo (the first CPU's "model name", and vendor_id, cpu family,
 * model and stepping for perf's CPUID string), /proc/meminfo (MemTotal),
 * /proc/self/exe and /proc/self/cmdline. Writers get a struct tk_host and
 * never look at the machine themselves.
 *
 * Memory: tk_host_new() returns the public struct inside a private one
 * that owns every string (one allocation per string, freed together), so
 * the public struct can also be filled by hand with borrowed strings.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tracekit/host.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracefs.h>
#include <tracekit/version.h>

#include "error.h"

#define PROC_TEXT_MAX (1 << 16)

struct host {
	struct tk_host pub;
	char *strings[8]; /* the uname strings, cpudesc, cpuid, exe, cmdline text */
	size_t nstrings;
	const char **argv; /* points into the cmdline text or argv_copy */
	char **argv_copy;
	int argv_copies;
};

static struct host *host_of(struct tk_host *pub)
{
	return (struct host *)((char *)pub - offsetof(struct host, pub));
}

/* Keep @s (malloc'ed, may be NULL) and return it; NULL when it was NULL. */
static const char *keep(struct host *h, char *s)
{
	if (s)
		h->strings[h->nstrings++] = s;
	return s;
}

/* Read a small /proc file into @buf (NUL-terminated); 0 or -errno. */
static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	return 0;
}

/* Value of "key<spaces>: value" in /proc text; copied to @out with space runs squashed. */
static bool proc_field(const char *text, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '\t' || p[kl] == ':')) {
			const char *v = strchr(p, ':');
			size_t o = 0;

			if (!v)
				return false;
			v++;
			while (*v == ' ' || *v == '\t')
				v++;
			for (; *v && *v != '\n' && o + 1 < cap; v++) {
				if (*v == ' ' && o > 0 && out[o - 1] == ' ')
					continue;
				out[o++] = *v;
			}
			while (o > 0 && out[o - 1] == ' ')
				o--;
			out[o] = 0;
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

/* This process's argv as exec'ed, from /proc/self/cmdline; 0 or a negative errno. */
static int own_cmdline(struct host *h)
{
	char *all;
	size_t len;
	int argc = 0, r;

	r = tk_tracefs_read_file(NULL, "/proc/self/cmdline", &all, &len);
	if (r < 0)
		return r;
	keep(h, all);
	for (size_t i = 0; i < len; i += strlen(all + i) + 1)
		argc++;
	h->argv = malloc((size_t)(argc ? argc : 1) * sizeof(*h->argv));
	if (!h->argv)
		return tk_fail(ENOMEM, "out of memory");
	argc = 0;
	for (size_t i = 0; i < len; i += strlen(all + i) + 1)
		h->argv[argc++] = all + i;
	h->pub.argc = argc;
	h->pub.argv = h->argv;
	return 0;
}

static int gather(struct host *h, char *text)
{
	struct tk_host *p = &h->pub;
	struct utsname u;
	char a[256], b[64], c[64], d[64];
	ssize_t n;

	if (uname(&u) < 0)
		return tk_fail(errno, "uname: %s", strerror(errno));
	p->version = TK_VERSION_TEXT;
	if (!(p->sysname = keep(h, strdup(u.sysname))) ||
	    !(p->hostname = keep(h, strdup(u.nodename))) ||
	    !(p->osrelease = keep(h, strdup(u.release))) || !(p->arch = keep(h, strdup(u.machine))))
		return tk_fail(ENOMEM, "out of memory");
	p->nr_cpus_avail = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	p->nr_cpus_online = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
	if (read_small("/proc/cpuinfo", text, PROC_TEXT_MAX) == 0) {
		if (proc_field(text, "model name", a, sizeof(a)) &&
		    !(p->cpudesc = keep(h, strdup(a))))
			return tk_fail(ENOMEM, "out of memory");
		if (proc_field(text, "vendor_id", a, sizeof(a)) &&
		    proc_field(text, "cpu family", b, sizeof(b)) &&
		    proc_field(text, "model", c, sizeof(c)) &&
		    proc_field(text, "stepping", d, sizeof(d))) {
			char *id;

			if (asprintf(&id, "%s,%s,%s,%s", a, b, c, d) < 0)
				return tk_fail(ENOMEM, "out of memory");
			p->cpuid = keep(h, id);
		}
	}
	if (read_small("/proc/meminfo", text, PROC_TEXT_MAX) == 0 &&
	    proc_field(text, "MemTotal", a, sizeof(a))) {
		p->has_total_mem = true;
		p->total_mem_kb = strtoull(a, NULL, 10);
	}
	n = readlink("/proc/self/exe", text, PROC_TEXT_MAX - 1);
	if (n > 0) {
		text[n] = 0;
		if (!(p->exe = keep(h, strdup(text))))
			return tk_fail(ENOMEM, "out of memory");
	}
	return own_cmdline(h);
}

struct tk_host *tk_host_new(void)
{
	struct host *h = calloc(1, sizeof(*h));
	char *text = malloc(PROC_TEXT_MAX);
	int r;

	if (!h || !text) {
		free(h);
		free(text);
		return tk_fail_null(ENOMEM, "out of memory");
	}
	r = gather(h, text);
	free(text);
	if (r < 0) {
		tk_host_free(&h->pub);
		errno = -r;
		return NULL;
	}
	return &h->pub;
}

static void free_copies(struct host *h)
{
	for (int i = 0; i < h->argv_copies; i++)
		free(h->argv_copy[i]);
	free(h->argv_copy);
	h->argv_copy = NULL;
	h->argv_copies = 0;
}

void tk_host_free(struct tk_host *pub)
{
	struct host *h;

	if (!pub)
		return;
	h = host_of(pub);
	for (size_t i = 0; i < h->nstrings; i++)
		free(h->strings[i]);
	free(h->argv);
	free_copies(h);
	free(h);
}

int tk_host_set_cmdline(struct tk_host *pub, int argc, const char *const *argv)
{
	struct host *h = host_of(pub);
	char **copy;
	const char **ptrs;

	if (argc < 0)
		return tk_fail(EINVAL, "negative argument count");
	copy = calloc((size_t)argc + 1, sizeof(*copy));
	ptrs = calloc((size_t)argc + 1, sizeof(*ptrs));
	for (int i = 0; copy && ptrs && i < argc; i++) {
		copy[i] = strdup(argv[i]);
		if (!copy[i]) {
			for (int j = 0; j < i; j++)
				free(copy[j]);
			free(copy);
			copy = NULL;
		}
		ptrs[i] = copy ? copy[i] : NULL;
	}
	if (!copy || !ptrs) {
		free(copy);
		free(ptrs);
		return tk_fail(ENOMEM, "out of memory");
	}
	free_copies(h);
	free(h->argv);
	h->argv = ptrs;
	h->argv_copy = copy;
	h->argv_copies = argc;
	pub->argc = argc;
	pub->argv = ptrs;
	return 0;
}

int tk_perfdata_writer_set_host(struct tk_perfdata_writer *w, int argc, const char *const *argv)
{
	struct tk_host *h = tk_host_new();
	int r;

	if (!h)
		return -errno;
	r = argv ? tk_host_set_cmdline(h, argc, argv) : 0;
	if (r == 0)
		r = tk_perfdata_writer_set_host_facts(w, h);
	tk_host_free(h);
	return r;
}
