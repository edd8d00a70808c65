// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-perf: `tracekit report` against `perf script` on one perf.data.
 *
 * The file. Two tracepoint events, sched:sched_switch and
 * sched:sched_wakeup, with the formats of the running kernel: the
 * TRACING_DATA feature is built from the live tracefs by
 * tk_perfdata_tracing_build(), and each raw payload is laid out from the
 * field offsets and sizes of those formats (parsed here from
 * events/sched/E/format), so the samples are what the kernel would write.
 * Attrs carry IDENTIFIER|TID|TIME|CPU|PERIOD|RAW with sample_id_all, as
 * `perf record -e tracepoint -a` writes them; two CPUs, ids 1..4, a COMM
 * record (time 0) per task, a FINISHED_ROUND every 4096 samples, times
 * 100..700 ns apart. Written with the perfdata writer (host features too).
 *
 * The run. Both tools are started with fork/exec, stdout on /dev/null,
 * reaped with wait4(); each line gives wall time, events/s and peak RSS,
 * then the speed ratio. The two run in turn, --reps pairs (3 by default):
 * the medians of each, and the median (and range) of the per-pair ratios,
 * which stay steadier than the times on a shared VM. tracekit runs with its
 * default thread count; --reps more runs with -j 1 give the
 * single-threaded line.
 *
 * --quick writes 20 k samples, runs each tool once with its output kept,
 * and exits 1 unless the two texts are identical byte for byte.
 * Without tracefs access or perf it exits 77 (skipped).
 *
 * bench-report runs the same after its .dat part (linked in, with
 * BENCH_PERF_LINKED): one run of bench-report times both comparisons.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "bench-perf.h"
#include "harness.h"

#define NCPU	       2u
#define DEFAULT_EVENTS 2000000ull
#define QUICK_EVENTS   20000ull
#define NTASKS	       24u
#define MAX_FIELDS     32u
#define ROUND_EVERY    4096u

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

struct field {
	char name[64];
	uint32_t offset, size;
};

struct format {
	uint64_t id;
	uint32_t size; /* end of the last field */
	struct field f[MAX_FIELDS];
	uint32_t n;
};

struct task {
	int32_t pid;
	char comm[16];
	int32_t prio;
};

static struct task tasks[NTASKS];

/* Fields from tracefs' format text: "field:TYPE NAME[N];\toffset:O;\tsize:S;". */
static int load_format(const char *event, struct format *fmt)
{
	char path[128], *text, *p;
	size_t len;

	snprintf(path, sizeof(path), "events/sched/%s/format", event);
	if (tk_tracefs_read_top_file(path, &text, &len) < 0)
		return -1;
	memset(fmt, 0, sizeof(*fmt));
	p = strstr(text, "\nID: ");
	if (!p) {
		free(text);
		return -1;
	}
	fmt->id = strtoull(p + 5, NULL, 10);
	for (p = strstr(text, "field:"); p && fmt->n < MAX_FIELDS; p = strstr(p + 1, "field:")) {
		char *semi = strchr(p, ';'), *name, *br;
		char *off = strstr(p, "offset:"), *sz = strstr(p, "size:");
		struct field *f = &fmt->f[fmt->n];
		size_t nl;

		if (!semi || !off || !sz)
			break;
		name = semi;
		while (name > p && name[-1] != ' ')
			name--;
		nl = (size_t)(semi - name);
		br = memchr(name, '[', nl);
		if (br)
			nl = (size_t)(br - name);
		if (nl >= sizeof(f->name))
			continue;
		memcpy(f->name, name, nl);
		f->name[nl] = 0;
		f->offset = (uint32_t)strtoul(off + 7, NULL, 10);
		f->size = (uint32_t)strtoul(sz + 5, NULL, 10);
		if (f->offset > 4096 || f->size > 4096)
			break;
		if (f->offset + f->size > fmt->size)
			fmt->size = f->offset + f->size;
		fmt->n++;
	}
	free(text);
	return fmt->n ? 0 : -1;
}

static void put_num(uint8_t *p, uint32_t size, uint64_t v)
{
	/* Little-endian host (x86-64): the low bytes first. */
	memcpy(p, &v, size < 8 ? size : 8);
}

/* Lay the payload out from the format; @a is the actor, @b the other task. */
static void fill(const struct format *fmt, uint8_t *raw, const struct task *a, const struct task *b,
		 uint32_t cpu)
{
	static const uint64_t states[] = {0, 1, 2, 0x80, 1, 0, 0x100};

	memset(raw, 0, fmt->size);
	for (uint32_t i = 0; i < fmt->n; i++) {
		const struct field *f = &fmt->f[i];
		uint8_t *p = raw + f->offset;
		const char *n = f->name;

		if (!strcmp(n, "common_type"))
			put_num(p, f->size, fmt->id);
		else if (!strcmp(n, "common_pid"))
			put_num(p, f->size, (uint64_t)(uint32_t)a->pid);
		else if (!strcmp(n, "common_flags"))
			put_num(p, f->size, rng() & 1 ? 1 : 0);
		else if (!strcmp(n, "prev_comm"))
			memcpy(p, a->comm, f->size < 16 ? f->size : 16);
		else if (!strcmp(n, "prev_pid"))
			put_num(p, f->size, (uint64_t)(uint32_t)a->pid);
		else if (!strcmp(n, "prev_prio"))
			put_num(p, f->size, (uint64_t)a->prio);
		else if (!strcmp(n, "prev_state"))
			put_num(p, f->size, states[rng() % 7]);
		else if (!strcmp(n, "next_comm") || !strcmp(n, "comm"))
			memcpy(p, b->comm, f->size < 16 ? f->size : 16);
		else if (!strcmp(n, "next_pid") || !strcmp(n, "pid"))
			put_num(p, f->size, (uint64_t)(uint32_t)b->pid);
		else if (!strcmp(n, "next_prio") || !strcmp(n, "prio"))
			put_num(p, f->size, (uint64_t)b->prio);
		else if (!strcmp(n, "target_cpu"))
			put_num(p, f->size, cpu);
	}
}

static void make_tasks(void)
{
	static const char *const names[] = {"kworker/0:1", "bash",	  "sshd", "systemd",
					    "rcu_sched",   "ksoftirqd/1", "Xorg", "firefox"};

	tasks[0].pid = 0;
	strcpy(tasks[0].comm, "swapper/0");
	tasks[0].prio = 120;
	for (uint32_t i = 1; i < NTASKS; i++) {
		tasks[i].pid = (int32_t)(1000 + i * 37);
		snprintf(tasks[i].comm, sizeof(tasks[i].comm), "%s", names[i % 8]);
		tasks[i].prio = i % 5 ? 120 : 98;
	}
}

static void write_rec(struct tk_perfdata_writer *w, const void *rec, size_t size)
{
	if (tk_perfdata_writer_write(w, rec, size) < 0)
		die("write record");
}

static void write_comms(struct tk_perfdata_writer *w)
{
	for (uint32_t i = 1; i < NTASKS; i++) {
		/* header, pid, tid, comm[16], sample_id_all trailer (32 zero bytes) */
		uint8_t rec[8 + 8 + 16 + 32] = {0};
		uint32_t type = TK_PERF_RECORD_COMM, pid = (uint32_t)tasks[i].pid;
		uint16_t size = sizeof(rec);

		memcpy(rec, &type, 4);
		memcpy(rec + 6, &size, 2);
		memcpy(rec + 8, &pid, 4);
		memcpy(rec + 12, &pid, 4);
		memcpy(rec + 16, tasks[i].comm, strnlen(tasks[i].comm, 15));
		write_rec(w, rec, sizeof(rec));
	}
}

static void write_file(const char *path, uint64_t events)
{
	static const char *const names[] = {"sched:sched_switch", "sched:sched_wakeup"};
	struct format fmts[2];
	struct tk_perfdata_writer *w;
	void *blob;
	uint64_t blob_len, t = 1000000000ull, ids[2][NCPU];
	uint8_t rec[512];

	if (load_format("sched_switch", &fmts[0]) < 0 || load_format("sched_wakeup", &fmts[1]) < 0)
		die("reading the sched formats");
	if (tk_perfdata_tracing_build(names, 2, &blob, &blob_len) < 0)
		die("tracing data");
	w = tk_perfdata_writer_open(path);
	if (!w)
		die(path);
	for (uint32_t e = 0; e < 2; e++) {
		struct tk_perf_attr a = {0};
		int idx;

		a.type = 2;
		a.size = 128;
		a.config = fmts[e].id;
		a.sample_period = 1;
		a.sample_type = TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_TID |
				TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD |
				TK_PERF_SAMPLE_RAW;
		a.flags = TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL;
		idx = tk_perfdata_writer_add_attr(w, &a, names[e]);
		for (uint32_t c = 0; c < NCPU; c++)
			ids[e][c] = 1 + e * NCPU + c;
		if (idx < 0 || tk_perfdata_writer_add_ids(w, (size_t)idx, ids[e], NCPU) < 0)
			die("attrs");
	}
	if (tk_perfdata_writer_set_feature(w, TK_PERF_FEAT_TRACING_DATA, blob, blob_len) < 0 ||
	    tk_perfdata_writer_set_host(w, 0, NULL) < 0)
		die("features");
	free(blob);
	write_comms(w);
	for (uint64_t i = 0; i < events; i++) {
		uint32_t e = rng() % 3 ? 0 : 1, cpu = (uint32_t)(rng() % NCPU);
		const struct format *f = &fmts[e];
		const struct task *a = &tasks[rng() % NTASKS],
				  *b = &tasks[1 + rng() % (NTASKS - 1)];
		uint32_t raw_size = (f->size + 4 + 7) / 8 * 8 - 4;
		uint16_t size = (uint16_t)(48 + 4 + raw_size);
		uint32_t type = TK_PERF_RECORD_SAMPLE, pid = (uint32_t)a->pid;
		uint64_t period = 1;
		uint16_t misc = 1; /* PERF_RECORD_MISC_KERNEL */

		if (size > sizeof(rec))
			die("format too large");
		t += 100 + rng() % 600;
		memset(rec, 0, size);
		memcpy(rec, &type, 4);
		memcpy(rec + 4, &misc, 2);
		memcpy(rec + 6, &size, 2);
		memcpy(rec + 8, &ids[e][cpu], 8);
		memcpy(rec + 16, &pid, 4);
		memcpy(rec + 20, &pid, 4);
		memcpy(rec + 24, &t, 8);
		memcpy(rec + 32, &cpu, 4);
		memcpy(rec + 40, &period, 8);
		memcpy(rec + 48, &raw_size, 4);
		fill(f, rec + 52, a, b, cpu);
		write_rec(w, rec, size);
		if ((i + 1) % ROUND_EVERY == 0) {
			const uint64_t round = TK_PERF_RECORD_FINISHED_ROUND | 8ull << 48;

			write_rec(w, &round, 8);
		}
	}
	if (tk_perfdata_writer_finish(w) < 0)
		die("finish");
	tk_perfdata_writer_close(w);
}

static void usage(void)
{
	fputs("usage: bench-perf [--quick] [--events N] [--reps N] [--tracekit PATH] [--keep "
	      "FILE]\n",
	      stderr);
	exit(2);
}

static bool have_perf(void)
{
	char *const argv[] = {"perf", "--version", NULL};
	struct run r = run_tool(argv, NULL);

	return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
}

int bench_perf_main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *keep = NULL;
	uint64_t events = DEFAULT_EVENTS;
	unsigned int reps = 3;
	bool quick = false;
	char path[] = "/tmp/bench-perf-XXXXXX";
	char file[64], out_tk[80], out_perf[80];
	struct run tk = {0}, pf;
	char *str;
	size_t str_len;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
			events = QUICK_EVENTS;
			reps = 1;
		} else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
			events = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--tracekit") && i + 1 < argc) {
			tracekit = argv[++i];
		} else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
			keep = argv[++i];
		} else {
			usage();
		}
	}
	if (!events || !reps || reps > 16)
		usage();
	if (tk_tracefs_read_top_file("events/sched/sched_switch/format", &str, &str_len) < 0) {
		printf("SKIP: no tracefs access (%s)\n", tk_errmsg());
		return 77;
	}
	free(str);
	if (!have_perf()) {
		printf("SKIP: perf is not installed\n");
		return 77;
	}
	if (!mkdtemp(path))
		die("mkdtemp");
	snprintf(file, sizeof(file), "%s/perf.data", path);
	snprintf(out_tk, sizeof(out_tk), "%s/tk.txt", path);
	snprintf(out_perf, sizeof(out_perf), "%s/perf.txt", path);
	make_tasks();

	double t0 = now_s();
	struct stat sb;

	write_file(keep ? keep : file, events);
	settle_file(keep ? keep : file);
	if (stat(keep ? keep : file, &sb) < 0)
		die("stat");
	printf("file: %" PRIu64
	       " samples (sched_switch/sched_wakeup), %.1f MB, written in %.2f s\n",
	       events, (double)sb.st_size / 1e6, now_s() - t0);

	char *tk_argv[] = {(char *)tracekit, "report", keep ? (char *)keep : file, NULL};
	char *perf_argv[] = {"perf", "script", "-i", keep ? (char *)keep : file, NULL};

	if (quick) {
		tk = run_tool(tk_argv, out_tk);
		if (!WIFEXITED(tk.status) || WEXITSTATUS(tk.status))
			die("tracekit report failed");
		pf = run_tool(perf_argv, out_perf);
		if (!WIFEXITED(pf.status) || WEXITSTATUS(pf.status))
			die("perf script failed");
		printf("tracekit report: %8.3f s, perf script %8.3f s\n", tk.seconds, pf.seconds);
	} else {
		struct pairs p = run_pairs(tk_argv, perf_argv, (int)reps);

		if (!p.rounds)
			die("perf script failed");
		printf("tracekit report: %8.3f s  %12.0f events/s  peak RSS %6ld MB  (median of "
		       "%d)\n",
		       p.ours, (double)events / p.ours, p.ours_rss_kb / 1024, p.rounds);
		printf("perf script:     %8.3f s  %12.0f events/s  peak RSS %6ld MB  (median of "
		       "%d)\n",
		       p.theirs, (double)events / p.theirs, p.theirs_rss_kb / 1024, p.rounds);
		printf("ratio: tracekit report is %.1fx perf script (median of %d interleaved "
		       "pairs, "
		       "%.1f-%.1f)\n",
		       p.ratio, p.rounds, p.ratio_lo, p.ratio_hi);

		/* The same file on one thread: the single-threaded figure. */
		char *one_argv[] = {(char *)tracekit,		"report", "-j", "1",
				    keep ? (char *)keep : file, NULL};
		double one[16];

		for (unsigned int i = 0; i < reps; i++) {
			struct run r = run_tool(one_argv, NULL);

			if (!WIFEXITED(r.status) || WEXITSTATUS(r.status))
				die("tracekit report -j 1 failed");
			one[i] = r.seconds;
		}
		qsort(one, reps, sizeof(one[0]), cmp_double);
		printf("tracekit report -j 1: %8.3f s  %12.0f events/s  (one thread, median of "
		       "%u)\n",
		       one[reps / 2], (double)events / one[reps / 2], reps);
	}

	int rc = 0;

	if (quick) {
		if (files_equal(out_tk, out_perf)) {
			printf("outputs identical\n");
		} else {
			printf("outputs DIFFER: %s %s\n", out_tk, out_perf);
			rc = 1;
		}
	}
	if (!rc) {
		unlink(out_tk);
		unlink(out_perf);
		unlink(file);
		rmdir(path);
	}
	return rc;
}

#ifndef BENCH_PERF_LINKED
int main(int argc, char **argv)
{
	return bench_perf_main(argc, argv);
}
#endif
