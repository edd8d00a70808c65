// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-profile: `tracekit profile` against `perf report --stdio`, and
 * `tracekit flamegraph --folded` against `perf script | stackcollapse`, on
 * one big real profile, in the same run.
 *
 * The file: `perf record -g -F 4000 -e cpu-clock` around a small mixed
 * load (a shell loop in dash, dd | md5sum through libc and the kernel)
 * gives a real profile of some thousands of samples; its records are then
 * replayed into one perf.data (tracekit's writer, the same attrs and build
 * ids) until it holds --samples samples: the first pass whole, each later
 * one only its samples and round ends, times shifted by the recording's
 * span. The threads' maps and names stay those of the first pass (EXIT
 * records are left out so that every thread lives on, as perf then
 * resolves them). 2 M samples by default (~0.5 GB with callchains);
 * --scale10 also times tracekit alone on a file ten times as big.
 *
 * Lines: the median over --reps runs (default 1: perf report on 2 M
 * callchain samples takes minutes) of wall time and peak RSS (of the whole
 * pipeline for perf script | awk). stackcollapse is
 * tests/integration/stackcollapse.awk, stackcollapse-perf.pl's rules in
 * awk (Perl's own takes about as long). --quick (make check) replays to
 * 20 k samples, runs each once and exits 1 unless the folded stacks are
 * identical and `profile --no-children -g none` equals perf's text. Needs
 * root and perf, else "SKIP: reason" and exit 77. --source FILE replays
 * FILE (one event, with callchains) instead of recording.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include <tracekit/perfdata.h>

#include "harness.h"

static void usage(void)
{
	fputs("usage: bench-profile [--quick] [--samples N] [--reps N] [--scale10] "
	      "[--tracekit PATH] [--keep DIR] [--source PERF.DATA]\n",
	      stderr);
	exit(2);
}

/* Where a sample's TIME field is, from its sample_type (0: none). */
static size_t time_offset(uint64_t st)
{
	size_t pos = 8;

	if (!(st & TK_PERF_SAMPLE_TIME))
		return 0;
	if (st & TK_PERF_SAMPLE_IDENTIFIER)
		pos += 8;
	if (st & TK_PERF_SAMPLE_IP)
		pos += 8;
	if (st & TK_PERF_SAMPLE_TID)
		pos += 8;
	return pos;
}

/* Replay @src into @dst until it holds @want samples. Return: the samples written. */
static uint64_t replay(const char *src, const char *dst, uint64_t want)
{
	struct tk_perfdata *pd = tk_perfdata_open(src);
	struct tk_perfdata_writer *w;
	struct tk_perf_record rec;
	uint64_t first = 0, last = 0, written = 0, span;
	size_t toff;
	uint8_t buf[65536];

	if (!pd)
		die(src);
	w = tk_perfdata_writer_open(dst);
	if (!w)
		die(dst);
	for (size_t i = 0; i < tk_perfdata_evsel_count(pd); i++) {
		const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, i);
		int idx = tk_perfdata_writer_add_attr(w, &e->attr, e->name);

		if (idx < 0 || (e->nr_ids &&
				tk_perfdata_writer_add_ids(w, (size_t)idx, e->ids, e->nr_ids) < 0))
			die("attrs");
	}
	for (size_t i = 0; i < tk_perfdata_build_id_count(pd); i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(pd, i);

		if (b->filename && tk_perfdata_writer_add_build_id(w, b->misc, b->pid, b->id,
								   b->size, b->filename) < 0)
			die("build ids");
	}
	if (tk_perfdata_evsel_count(pd) != 1)
		die("the recording has more than one event");
	toff = time_offset(tk_perfdata_evsel_get(pd, 0)->attr.sample_type);
	if (!toff)
		die("samples without time");
	/* The recording's span: the shift of each later pass. */
	while (tk_perfdata_next(pd, &rec) > 0) {
		uint64_t t;

		if (rec.type != TK_PERF_RECORD_SAMPLE || rec.size < toff + 8)
			continue;
		memcpy(&t, (const uint8_t *)rec.data + toff, 8);
		if (!first)
			first = t;
		last = t;
	}
	tk_perfdata_close(pd);
	span = last - first + 1000000;
	for (uint64_t pass = 0; written < want; pass++) {
		pd = tk_perfdata_open(src);
		if (!pd)
			die(src);
		while (written < want && tk_perfdata_next(pd, &rec) > 0) {
			bool sample = rec.type == TK_PERF_RECORD_SAMPLE;

			if (rec.type == TK_PERF_RECORD_EXIT)
				continue;
			if (pass && !sample && rec.type != TK_PERF_RECORD_FINISHED_ROUND)
				continue;
			memcpy(buf, rec.data, rec.size);
			if (sample && rec.size >= toff + 8) {
				uint64_t t;

				memcpy(&t, buf + toff, 8);
				t += pass * span;
				memcpy(buf + toff, &t, 8);
				written++;
			}
			if (tk_perfdata_writer_write(w, buf, rec.size) < 0)
				die("write");
		}
		tk_perfdata_close(pd);
	}
	if (tk_perfdata_writer_finish(w) < 0)
		die("finish");
	tk_perfdata_writer_close(w);
	return written;
}

static struct run median_run(char *const argv[], const char *out, unsigned int reps)
{
	struct run r[16];
	double t[16];
	struct run best = {0};

	for (unsigned int i = 0; i < reps; i++) {
		r[i] = run_tool(argv, out);
		if (!WIFEXITED(r[i].status) || WEXITSTATUS(r[i].status)) {
			errno = 0;
			fprintf(stderr, "bench-profile: %s failed\n", argv[0]);
			return r[i];
		}
		t[i] = r[i].seconds;
		if (r[i].maxrss_kb > best.maxrss_kb)
			best.maxrss_kb = r[i].maxrss_kb;
	}
	qsort(t, reps, sizeof(t[0]), cmp_double);
	best.seconds = t[reps / 2];
	return best;
}

static void line(const char *what, struct run r, uint64_t samples)
{
	printf("%-44s %8.2f s  %10.0f samples/s  peak RSS %6ld MB\n", what, r.seconds,
	       (double)samples / r.seconds, r.maxrss_kb / 1024);
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *keep = NULL, *source = NULL;
	uint64_t want = 2000000, got;
	unsigned int reps = 1;
	bool quick = false, scale10 = false;
	char dir[] = "/tmp/bench-profile-XXXXXX";
	char src[160], big[160], huge[160], out_tk[160], out_perf[160], cmd[1024];
	struct stat sb;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
			want = 20000;
		} else if (!strcmp(argv[i], "--samples") && i + 1 < argc) {
			want = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--scale10")) {
			scale10 = true;
		} else if (!strcmp(argv[i], "--tracekit") && i + 1 < argc) {
			tracekit = argv[++i];
		} else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
			keep = argv[++i];
		} else if (!strcmp(argv[i], "--source") && i + 1 < argc) {
			source = argv[++i];
		} else {
			usage();
		}
	}
	if (!want || !reps || reps > 16)
		usage();
	/* Each line as soon as it is measured: a full run takes minutes. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0 || system("perf --version >/dev/null 2>&1") != 0) {
		printf("SKIP: needs root and perf\n");
		return 77;
	}
	if (keep) {
		if (strlen(keep) > 100)
			usage();
		mkdir(keep, 0755);
		snprintf(dir, sizeof(dir), "%s", keep);
	} else if (!mkdtemp(dir)) {
		die("mkdtemp");
	}
	snprintf(src, sizeof(src), "%s/rec.data", dir);
	snprintf(big, sizeof(big), "%s/big.data", dir);
	snprintf(huge, sizeof(huge), "%s/huge.data", dir);
	snprintf(out_tk, sizeof(out_tk), "%s/tk.txt", dir);
	snprintf(out_perf, sizeof(out_perf), "%s/perf.txt", dir);

	snprintf(cmd, sizeof(cmd),
		 "perf record -q -g -F 4000 -e cpu-clock -o %s -- sh -c 'i=0; while [ $i -lt "
		 "%d ]; do i=$((i+1)); done; dd if=/dev/zero bs=1k count=%d 2>/dev/null | md5sum' "
		 ">/dev/null 2>&1",
		 src, quick ? 20000 : 100000, quick ? 20000 : 100000);
	if (source)
		snprintf(src, sizeof(src), "%s", source);
	else if (system(cmd) != 0)
		src[0] = '\0';
	if (!src[0] || stat(src, &sb) < 0) {
		printf("SKIP: perf record failed\n");
		return 77;
	}
	got = replay(src, big, want);
	settle_file(big);
	stat(big, &sb);
	printf("file: %" PRIu64 " cpu-clock samples with callchains (a real recording replayed), "
	       "%.1f MB\n",
	       got, (double)sb.st_size / 1e6);

	char *tk_prof[] = {(char *)tracekit, "profile", "-i", big, NULL};
	char *pf_prof[] = {"perf", "report", "-i", big, "--stdio", NULL};
	char *tk_flat[] = {(char *)tracekit, "profile", "-i",	big,
			   "--no-children",  "-g",	"none", NULL};
	char *pf_flat[] = {"perf",	    "report", "-i",   big, "--stdio",
			   "--no-children", "-g",     "none", NULL};
	char *tk_fold[] = {(char *)tracekit, "flamegraph", "--folded", "-i", big, NULL};
	char pipeline[512];

	snprintf(pipeline, sizeof(pipeline),
		 "perf script -i %s 2>/dev/null | LC_ALL=C awk -f %s/tests/integration/"
		 "stackcollapse.awk | LC_ALL=C sort",
		 big, SOURCE_ROOT);
	char *pf_fold[] = {"sh", "-c", pipeline, NULL};
	char *tk_svg[] = {(char *)tracekit, "flamegraph", "-i", big, NULL};

	if (quick) {
		struct run a = median_run(tk_flat, out_tk, 1), b = median_run(pf_flat, out_perf, 1);

		snprintf(cmd, sizeof(cmd), "head -n -3 %s > %s.cut && mv %s.cut %s", out_perf,
			 out_perf, out_perf, out_perf);
		if (system(cmd) != 0 || !files_equal(out_tk, out_perf)) {
			printf("profile --no-children -g none DIFFERS from perf report: %s %s\n",
			       out_tk, out_perf);
			rc = 1;
		}
		line("tracekit profile --no-children -g none", a, got);
		line("perf report --stdio --no-children -g none", b, got);
		a = median_run(tk_fold, out_tk, 1);
		b = median_run(pf_fold, out_perf, 1);
		if (!files_equal(out_tk, out_perf)) {
			printf("flamegraph --folded DIFFERS from perf script | stackcollapse: %s "
			       "%s\n",
			       out_tk, out_perf);
			rc = 1;
		}
		line("tracekit flamegraph --folded", a, got);
		line("perf script | stackcollapse.awk | sort", b, got);
		if (!rc)
			printf("outputs identical\n");
	} else {
		struct run a, b;

		a = median_run(tk_prof, NULL, reps);
		b = median_run(pf_prof, NULL, reps);
		line("tracekit profile (children, graphs)", a, got);
		line("perf report --stdio (children, graphs)", b, got);
		printf("ratio: %.1fx\n", b.seconds / a.seconds);
		a = median_run(tk_flat, NULL, reps);
		b = median_run(pf_flat, NULL, reps);
		line("tracekit profile --no-children -g none", a, got);
		line("perf report --stdio --no-children -g none", b, got);
		printf("ratio: %.1fx\n", b.seconds / a.seconds);
		a = median_run(tk_fold, NULL, reps);
		b = median_run(pf_fold, NULL, reps);
		line("tracekit flamegraph --folded", a, got);
		line("perf script | stackcollapse.awk | sort", b, got);
		printf("ratio: %.1fx\n", b.seconds / a.seconds);
		a = median_run(tk_svg, NULL, reps);
		line("tracekit flamegraph (SVG)", a, got);
		if (scale10) {
			uint64_t got10 = replay(src, huge, want * 10);
			char *tk_prof10[] = {(char *)tracekit, "profile", "-i", huge, NULL};
			char *tk_fold10[] = {
				(char *)tracekit, "flamegraph", "--folded", "-i", huge, NULL};

			settle_file(huge);
			stat(huge, &sb);
			printf("file x10: %" PRIu64 " samples, %.1f MB\n", got10,
			       (double)sb.st_size / 1e6);
			line("tracekit profile x10 (children, graphs)",
			     median_run(tk_prof10, NULL, 1), got10);
			line("tracekit flamegraph --folded x10", median_run(tk_fold10, NULL, 1),
			     got10);
			if (!keep)
				unlink(huge);
		}
	}
	if (!rc && !keep) {
		unlink(out_tk);
		unlink(out_perf);
		if (!source)
			unlink(src);
		unlink(big);
		rmdir(dir);
	}
	return rc;
}
