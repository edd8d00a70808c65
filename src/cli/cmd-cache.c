// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit cache: the build-id and probe cache shared with perf, with the
 * interface of the 2014 "perf cache" design (--add, --remove, --list,
 * --probe-del, --query) plus a size limit, --gc and --stats.
 *
 * Actions run in a fixed order whatever the order of the options: remove,
 * add (with --probe specs), kcore (with --probe specs), kernel (and
 * --probe specs without --add or --kcore), probe-del, gc, eviction, then
 * the read-only ones (list, query, stats), so "--add X --list" shows X.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tracekit/cache.h>

#include "cli.h"

const char cmd_cache_usage[] =
	"usage: tracekit cache [options]\n"
	"\n"
	"Manage the build-id cache that perf shares (perf 6.1 layout): binaries and\n"
	"kallsyms by build id, with probe caches of their SDT notes and user probes.\n"
	"\n"
	"options:\n"
	"  -a, --add FILES          cache ELF files (comma-separated or repeated) and\n"
	"                           their SDT probes; prints \"BUILD-ID PATH\" per file\n"
	"  -p, --probe SPEC         cache a probe [[GROUP:]EVENT=]FUNC[+OFF][%return] [ARGS]:\n"
	"                           with --add a uprobe on each file, with --kcore a\n"
	"                           kprobe on that kernel, alone on the running kernel\n"
	"  -k, --kernel             cache /proc/kallsyms under the kernel's build id\n"
	"      --kcore FILE         cache a kcore (FILE named kcore, with kallsyms and\n"
	"                           modules beside it): kernel text and modules only\n"
	"  -f, --force              --kcore: copy even when the same kcore is cached\n"
	"  -z, --compress           write probe caches gzip-compressed (perf cannot\n"
	"                           read them; tracekit reads both)\n"
	"  -r, --remove FILES|IDS   remove the entries of files or build ids\n"
	"  -l, --list[=probe|buildid]  list entries (both kinds by default)\n"
	"  -d, --probe-del QUERY    delete cached probes matching QUERY\n"
	"  -q, --query QUERY        print cached probes matching\n"
	"                           [%][GROUP:]EVENT[@PATH][#BUILDID] (globs)\n"
	"  -A, --all                list and query stale entries too\n"
	"      --max-size SIZE      evict least-recently-used entries down to SIZE\n"
	"                           (bytes, or with K, M, G)\n"
	"      --gc                 remove dangling links, empty entries and directories\n"
	"      --stats              print totals\n"
	"  -C, --cache-dir DIR      cache directory (default $TRACEKIT_CACHE_DIR, then\n"
	"                           ~/.debug)\n"
	"  -v, --verbose            say what is done\n"
	"  -h, --help               show this help\n";

enum {
	OPT_KCORE = 256,
	OPT_MAX_SIZE,
	OPT_GC,
	OPT_STATS,
};

struct strv {
	char **v;
	size_t n;
};

static int strv_add_split(struct strv *sv, const char *arg, bool split)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (tok = split ? strtok_r(copy, ",", &save) : copy; tok;
	     tok = split ? strtok_r(NULL, ",", &save) : NULL) {
		char **nv = realloc(sv->v, (sv->n + 1) * sizeof(*nv));

		if (!nv || !(nv[sv->n] = strdup(tok))) {
			free(nv ? nv : sv->v);
			sv->v = NULL;
			free(copy);
			return -ENOMEM;
		}
		sv->v = nv;
		sv->n++;
	}
	free(copy);
	return 0;
}

static void strv_free(struct strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10, end++;
		break;
	case 'm':
	case 'M':
		v <<= 20, end++;
		break;
	case 'g':
	case 'G':
		v <<= 30, end++;
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int print_entry(const struct tk_cache_entry *e, void *ctx)
{
	(void)ctx;
	printf("%s %s%s\n", e->build_id, e->path, e->valid ? "" : " (stale)");
	return 0;
}

struct list_probe_ctx {
	const char *last_dir;
	char last[4096];
};

static int print_probe_list(const struct tk_cache_probe *p, void *ctx)
{
	struct list_probe_ctx *lc = ctx;

	/* perf probe --cache --list: a header per entry, then each spec. */
	if (strcmp(lc->last, p->entry->dir)) {
		snprintf(lc->last, sizeof(lc->last), "%s", p->entry->dir);
		printf("%s (%s):\n", p->entry->path, p->entry->build_id);
	}
	printf("%s\n", p->spec);
	return 0;
}

static int print_query(const struct tk_cache_probe *p, void *ctx)
{
	(void)ctx;
	printf("%s:%s %s (%s)%s\n", p->group, p->event, p->entry->path, p->entry->build_id,
	       p->entry->valid ? "" : " stale");
	for (size_t i = 0; i < p->ndefs; i++)
		printf("  %s\n", p->defs[i]);
	return 0;
}

static void human(uint64_t b, char *out, size_t cap)
{
	if (b >= 10ull << 20)
		snprintf(out, cap, "%" PRIu64 " MiB", b >> 20);
	else if (b >= 10ull << 10)
		snprintf(out, cap, "%" PRIu64 " KiB", b >> 10);
	else
		snprintf(out, cap, "%" PRIu64 " B", b);
}

int cmd_cache(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"add", required_argument, NULL, 'a'},
		{"probe", required_argument, NULL, 'p'},
		{"kernel", no_argument, NULL, 'k'},
		{"kcore", required_argument, NULL, OPT_KCORE},
		{"force", no_argument, NULL, 'f'},
		{"compress", no_argument, NULL, 'z'},
		{"remove", required_argument, NULL, 'r'},
		{"list", optional_argument, NULL, 'l'},
		{"probe-del", required_argument, NULL, 'd'},
		{"query", required_argument, NULL, 'q'},
		{"all", no_argument, NULL, 'A'},
		{"max-size", required_argument, NULL, OPT_MAX_SIZE},
		{"gc", no_argument, NULL, OPT_GC},
		{"stats", no_argument, NULL, OPT_STATS},
		{"cache-dir", required_argument, NULL, 'C'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct strv add = {0}, probes = {0}, rm = {0}, del = {0}, query = {0}, kcore = {0};
	const char *dir = NULL, *list = NULL;
	bool kernel = false, all = false, gc = false, stats = false, verbose = false;
	bool have_max = false, force = false, compress = false;
	uint64_t max_size = 0;
	struct tk_cache *cache = NULL;
	int c, r = CLI_OK;

	while ((c = getopt_long(argc, argv, ":a:p:kr:l::d:q:AC:vhfz", longopts, NULL)) != -1) {
		int e = 0;

		switch (c) {
		case 'a':
			e = strv_add_split(&add, optarg, true);
			break;
		case 'p':
			e = strv_add_split(&probes, optarg, false);
			break;
		case 'k':
			kernel = true;
			break;
		case OPT_KCORE:
			e = strv_add_split(&kcore, optarg, false);
			break;
		case 'f':
			force = true;
			break;
		case 'z':
			compress = true;
			break;
		case 'r':
			e = strv_add_split(&rm, optarg, true);
			break;
		case 'l':
			list = optarg ? optarg : "";
			/* "--list probe" as well as "--list=probe". */
			if (!optarg && optind < argc &&
			    (!strcmp(argv[optind], "probe") || !strcmp(argv[optind], "buildid")))
				list = argv[optind++];
			if (list[0] && strcmp(list, "probe") && strcmp(list, "buildid")) {
				r = cli_usage_error("--list takes 'probe' or 'buildid', not '%s'",
						    list);
				goto out;
			}
			break;
		case 'd':
			e = strv_add_split(&del, optarg, false);
			break;
		case 'q':
			e = strv_add_split(&query, optarg, false);
			break;
		case 'A':
			all = true;
			break;
		case OPT_MAX_SIZE:
			if (parse_size(optarg, &max_size)) {
				r = cli_usage_error("--max-size '%s': want a size like 500M",
						    optarg);
				goto out;
			}
			have_max = true;
			break;
		case OPT_GC:
			gc = true;
			break;
		case OPT_STATS:
			stats = true;
			break;
		case 'C':
			dir = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		default: /* -h, or an option getopt rejected */
			r = cli_help_or_bad_option(c, argv, cmd_cache_usage);
			goto out;
		}
		if (e) {
			r = cli_error("out of memory");
			goto out;
		}
	}
	if (optind < argc) {
		r = cli_usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (probes.n && add.n && kcore.n) {
		r = cli_usage_error("--probe applies to --add or to --kcore, not both at once");
		goto out;
	}
	if (!add.n && !rm.n && !kernel && !del.n && !query.n && !list && !gc && !stats &&
	    !have_max && !kcore.n && !probes.n) {
		r = cli_usage_error("nothing to do");
		goto out;
	}
	cache = tk_cache_open(dir);
	if (!cache) {
		r = cli_lib_error(dir);
		goto out;
	}
	tk_cache_set_gzip(cache, compress);
	for (size_t i = 0; i < rm.n; i++) {
		if (tk_cache_remove(cache, rm.v[i]) < 0)
			r = cli_lib_error(rm.v[i]);
		else if (verbose)
			printf("removed %s\n", rm.v[i]);
	}
	for (size_t i = 0; i < add.n; i++) {
		char bid[TK_BUILD_ID_HEX_MAX];
		int n = tk_cache_add(cache, add.v[i], bid);

		if (n < 0) {
			r = cli_lib_error(add.v[i]);
			continue;
		}
		/* One line per file, as a user checking what went in wants it; -v adds the probes.
		 */
		if (verbose)
			printf("added %s %s: %d SDT probe%s\n", bid, add.v[i], n,
			       n == 1 ? "" : "s");
		else
			printf("%s %s\n", bid, add.v[i]);
		for (size_t k = 0; k < probes.n; k++) {
			if (tk_cache_add_probe(cache, add.v[i], probes.v[k]) < 0)
				r = cli_lib_error(add.v[i]);
			else if (verbose)
				printf("cached probe '%s' on %s\n", probes.v[k], add.v[i]);
		}
	}
	for (size_t i = 0; i < kcore.n; i++) {
		char bid[TK_BUILD_ID_HEX_MAX], *ks = NULL, *slash;
		int n = tk_cache_add_kcore(cache, kcore.v[i], force, bid);

		if (n < 0) {
			r = cli_lib_error(kcore.v[i]);
			continue;
		}
		if (verbose)
			printf("%s %s [kernel.kcore]\n", n ? "added" : "already cached:", bid);
		/* Kernel probes of that kernel, from the kallsyms beside the kcore. */
		if (probes.n && !add.n) {
			slash = strrchr(kcore.v[i], '/');
			if (asprintf(&ks, "%.*skallsyms", slash ? (int)(slash + 1 - kcore.v[i]) : 0,
				     kcore.v[i]) < 0) {
				r = cli_error("out of memory");
				continue;
			}
		}
		for (size_t k = 0; ks && k < probes.n; k++) {
			if (tk_cache_add_kernel_probe(cache, ks, bid, probes.v[k]) < 0)
				r = cli_lib_error(kcore.v[i]);
			else if (verbose)
				printf("cached kernel probe '%s' for %s\n", probes.v[k], bid);
		}
		free(ks);
	}
	if (kernel) {
		char bid[TK_BUILD_ID_HEX_MAX];

		if (tk_cache_add_kernel(cache, bid) < 0)
			r = cli_lib_error(NULL);
		else if (verbose)
			printf("added %s [kernel.kallsyms]\n", bid);
	}
	for (size_t k = 0; !add.n && !kcore.n && k < probes.n; k++) {
		if (tk_cache_add_kernel_probe(cache, NULL, NULL, probes.v[k]) < 0)
			r = cli_lib_error(NULL);
		else if (verbose)
			printf("cached kernel probe '%s'\n", probes.v[k]);
	}
	for (size_t i = 0; i < del.n; i++) {
		int n = tk_cache_probe_del(cache, del.v[i]);

		if (n < 0)
			r = cli_lib_error(NULL);
		else if (n == 0)
			r = cli_error("no cached probe matches '%s'", del.v[i]);
		else if (verbose)
			printf("deleted %d probe%s matching '%s'\n", n, n == 1 ? "" : "s",
			       del.v[i]);
	}
	if (gc) {
		int n = tk_cache_gc(cache);

		if (n < 0)
			r = cli_lib_error(NULL);
		else
			printf("gc: removed %d item%s\n", n, n == 1 ? "" : "s");
	}
	if (have_max) {
		int n = tk_cache_evict(cache, max_size);

		if (n < 0)
			r = cli_lib_error(NULL);
		else if (verbose || n)
			printf("evicted %d entr%s to fit %" PRIu64 " bytes\n", n,
			       n == 1 ? "y" : "ies", max_size);
	}
	if (list && strcmp(list, "probe")) {
		if (tk_cache_for_each(cache, all, print_entry, NULL) < 0)
			r = cli_lib_error(NULL);
	}
	if (list && strcmp(list, "buildid")) {
		struct list_probe_ctx lc = {0};

		if (tk_cache_query(cache, NULL, all, print_probe_list, &lc) < 0)
			r = cli_lib_error(NULL);
	}
	for (size_t i = 0; i < query.n; i++) {
		int n = tk_cache_query(cache, query.v[i], all, print_query, NULL);

		if (n < 0)
			r = cli_lib_error(NULL);
		else if (n == 0)
			r = cli_error("no cached probe matches '%s'", query.v[i]);
	}
	if (stats) {
		struct tk_cache_stats st;
		char sz[32];

		if (tk_cache_stats(cache, &st) < 0) {
			r = cli_lib_error(NULL);
		} else {
			human(st.bytes, sz, sizeof(sz));
			printf("cache:       %s\n", tk_cache_dir(cache));
			printf("entries:     %" PRIu64 " (%" PRIu64 " valid, %" PRIu64
			       " stale, %" PRIu64 " kernel)\n",
			       st.entries, st.valid, st.stale, st.kernel);
			printf("size:        %s (%" PRIu64 " bytes)\n", sz, st.bytes);
			printf("probes:      %" PRIu64 " SDT, %" PRIu64 " user\n", st.sdt_probes,
			       st.user_probes);
			if (st.entries) {
				char a[32], b[32];
				time_t t0 = (time_t)st.oldest_use, t1 = (time_t)st.newest_use;

				strftime(a, sizeof(a), "%Y-%m-%d %H:%M:%S", localtime(&t0));
				strftime(b, sizeof(b), "%Y-%m-%d %H:%M:%S", localtime(&t1));
				printf("last use:    %s .. %s\n", a, b);
			}
		}
	}
	r = cli_finish_stdout(r);
out:
	tk_cache_close(cache);
	strv_free(&add);
	strv_free(&probes);
	strv_free(&rm);
	strv_free(&del);
	strv_free(&query);
	strv_free(&kcore);
	return r;
}
