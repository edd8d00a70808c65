// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-report: `tracekit report` against `trace-cmd report` on one file.
 *
 * The file. Real event formats and metadata are taken from
 * tests/data/sample-v7-zstd.dat (header page, ftrace and event formats,
 * kallsyms, printk formats, saved command lines: the six metadata sections
 * are copied as they are), and records are generated for the events that
 * dominate real traces: sched_switch, sched_wakeup, sched_waking,
 * irq_handler_entry/exit, softirq_entry/exit/raise, hrtimer_start /
 * expire_entry / expire_exit / cancel, timer_start / expire_entry /
 * cancel and ftrace print. Each payload is laid out from the field
 * offsets and sizes of the sample's formats (looked up through the event
 * module), so the records are what the kernel would write for them;
 * function pointers are real addresses from the sample's kallsyms and
 * pids come from its saved command lines (plus a few unknown ones). Two
 * CPUs, 4 KiB pages, timestamps 100..700 ns apart, v7 uncompressed, the
 * top buffer on the "local" clock.
 *
 * The run. Both tools are started with fork/exec, stdout on /dev/null,
 * and reaped with wait4(), whose ru_maxrss is the child's peak resident
 * set. Each line gives the median wall time over --reps runs (tracekit)
 * and --tc-reps runs (trace-cmd, 3 by default, each in turn with one more
 * tracekit run; the ratio line is the median of those pairs' ratios, which
 * drift less than the times on a shared VM), events/s and the
 * peak RSS; the last line is the speed ratio. tracekit runs as a user runs
 * it (its default thread count: one per CPU up to 4 on a file this big),
 * and in the same rounds with -j 1, the single-threaded line.
 *
 * --before PATH adds a second tracekit binary (say, a build of the previous
 * commit), run in the same rounds, each round running both binaries one
 * after the other, so that a change is measured under the same load; the
 * line "before/after" gives the ratio of the medians.
 *
 * --quick writes ~20 k events, runs each tool once with its output kept,
 * and exits 1 unless the two texts are identical byte for byte, so the
 * smoke test in make check is also a golden test of the compiled
 * printers on many records.
 *
 * Then the convert part, on the same file: it is made v6 and v7 zstd once
 * by tracekit, untimed, then `tracekit convert` and `trace-cmd convert`
 * each turn v6 into v7 zstd, v7 zstd into v6 and v7 zstd into v7 none, in
 * interleaved pairs (--tc-reps rounds); each line gives both medians and the
 * median of the pairs' ratios, then the CPU time (user + system) of both.
 * tracekit compresses on every CPU (the .dat writer's compressor threads)
 * while its main thread reads the next pages. Left out with --no-trace-cmd;
 * --quick converts once each way with tracekit only (and trace-cmd when
 * present), checking only that the tools succeed. --convert-only writes the
 * file and runs this part alone (with --quick: tracekit only).
 *
 * Then, unless --no-perf, the perf.data part: bench-perf's run (see
 * bench-perf.c), `tracekit report` against `perf script` on 2 M
 * tracepoint samples (20 k with --quick), with the same --tracekit and
 * --reps. Skipped (a SKIP line) without tracefs or perf.
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
#define BATCH_PAGES    64u
#define DEFAULT_EVENTS 3000000ull
#define QUICK_EVENTS   20000ull
#define MAX_NPIDS      16

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so every run prints the same trace. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* ------------------------------------------------------------ the events */

struct task {
	int pid;
	char comm[16];
};

struct gen {
	struct tk_event_set *set;
	struct task tasks[MAX_NPIDS];
	size_t ntasks;
	uint64_t funcs[8];
	size_t nfuncs;
	uint64_t mark_ip;
};

/* One generated event kind: the format and how often it comes. */
struct kind {
	const char *system, *name;
	unsigned int weight;
	const struct tk_event *ev;
};

static struct kind kinds[] = {
	{"sched", "sched_switch", 20, NULL},	   {"sched", "sched_wakeup", 8, NULL},
	{"sched", "sched_waking", 8, NULL},	   {"irq", "irq_handler_entry", 4, NULL},
	{"irq", "irq_handler_exit", 4, NULL},	   {"irq", "softirq_raise", 5, NULL},
	{"irq", "softirq_entry", 6, NULL},	   {"irq", "softirq_exit", 6, NULL},
	{"timer", "hrtimer_start", 6, NULL},	   {"timer", "hrtimer_expire_entry", 6, NULL},
	{"timer", "hrtimer_expire_exit", 6, NULL}, {"timer", "hrtimer_cancel", 4, NULL},
	{"timer", "timer_start", 4, NULL},	   {"timer", "timer_expire_entry", 3, NULL},
	{"timer", "timer_cancel", 3, NULL},	   {"ftrace", "print", 3, NULL},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void put_num(uint8_t *p, uint32_t size, uint64_t v)
{
	/* Little endian, as the sample (x86_64) is. */
	for (uint32_t i = 0; i < size && i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static const struct task *pick_task(struct gen *g)
{
	return &g->tasks[rng() % g->ntasks];
}

/*
 * Lay out one record of @ev in @p (room: @cap bytes): every field by its
 * offset and size, values by field name. Returns the record size.
 */
static uint32_t make_record(struct gen *g, const struct tk_event *ev, uint32_t cpu, uint8_t *p,
			    uint32_t cap)
{
	const struct task *cur = pick_task(g), *other = pick_task(g);
	uint32_t size = 0, dyn;
	size_t n = tk_event_field_count(ev);
	uint64_t r = rng();

	for (size_t i = 0; i < n; i++) {
		const struct tk_event_field *f = tk_event_field_get(ev, i);
		uint64_t end = (uint64_t)f->offset + (f->is_dynamic ? 4 : f->size);

		if (end > size)
			size = (uint32_t)end;
	}
	if (size > cap / 2)
		die("format too large");
	memset(p, 0, cap);
	dyn = size;
	for (size_t i = 0; i < n; i++) {
		const struct tk_event_field *f = tk_event_field_get(ev, i);
		const char *name = f->name;
		uint8_t *q = p + f->offset;
		uint64_t v = r >> (i % 32);

		if (f->is_dynamic) {
			static const char *const irqs[] = {"virtio0-input.0", "ahci[0000:00:1f.2]",
							   "eth0", "timer"};
			const char *s = irqs[v % 4];
			uint32_t len = (uint32_t)strlen(s) + 1;

			put_num(q, 4, (uint64_t)dyn | (uint64_t)len << 16);
			memcpy(p + dyn, s, len);
			dyn += len;
			continue;
		}
		if (!strcmp(name, "common_type"))
			v = (uint64_t)tk_event_id(ev);
		else if (!strcmp(name, "common_flags"))
			v = (r >> 8) & 0x0d;
		else if (!strcmp(name, "common_preempt_count"))
			v = (r >> 12) & 0x3;
		else if (!strcmp(name, "common_pid") || !strcmp(name, "prev_pid"))
			v = (uint64_t)(int64_t)cur->pid;
		else if (!strcmp(name, "pid") || !strcmp(name, "next_pid"))
			v = (uint64_t)(int64_t)other->pid;
		else if (!strcmp(name, "prev_comm")) {
			memcpy(q, cur->comm, f->size < 16 ? f->size : 16);
			continue;
		} else if (!strcmp(name, "comm") || !strcmp(name, "next_comm")) {
			memcpy(q, other->comm, f->size < 16 ? f->size : 16);
			continue;
		} else if (strstr(name, "prio"))
			v = 120 - (v % 4 == 0 ? 20 : 0);
		else if (!strcmp(name, "prev_state")) {
			static const uint64_t states[] = {0, 1, 2, 0x80, 0x100, 1};

			v = states[v % 6];
		} else if (!strcmp(name, "target_cpu"))
			v = v % NCPU;
		else if (!strcmp(name, "irq"))
			v = 24 + v % 16;
		else if (!strcmp(name, "ret"))
			v = v % 5 != 0;
		else if (!strcmp(name, "vec"))
			v = v % 10;
		else if (!strcmp(name, "hrtimer") || !strcmp(name, "timer"))
			v = 0xffff888627d00000ull + ((v % 4096) << 4);
		else if (!strcmp(name, "function"))
			v = g->funcs[v % g->nfuncs];
		else if (!strcmp(name, "ip"))
			v = g->mark_ip;
		else if (!strcmp(name, "mode"))
			v = v % 12;
		else if (!strcmp(name, "clockid"))
			v = v % 2;
		else if (!strcmp(name, "was_armed"))
			v = v & 1;
		else if (!strcmp(name, "flags"))
			v = (v & 0x3c0001);
		else if (!strcmp(name, "buf")) {
			char text[64];
			int len = snprintf(text, sizeof(text), "bench marker %" PRIu64 "\n",
					   r % 100000);

			memcpy(q, text, (size_t)len + 1);
			dyn = f->offset + (uint32_t)len + 1;
			continue;
		} else if (f->size == 8)
			v = 1645000000000ull + (v & 0xffffffff);
		else
			v = v % 1000;
		if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8)
			put_num(q, f->size, v);
	}
	(void)cpu;
	return dyn;
}

/* ------------------------------------------------------------ metadata */

static void load_tasks(struct gen *g, const struct tk_dat_text *t)
{
	size_t pos = 0;

	/* Pid 0, a few unknown pids, then the saved command lines. */
	g->tasks[g->ntasks++] = (struct task){0, "swapper/0"};
	g->tasks[g->ntasks++] = (struct task){777001, "bench-worker"};
	g->tasks[g->ntasks++] = (struct task){777002, "bench-io"};
	while (t && pos < t->len && g->ntasks < MAX_NPIDS) {
		size_t end = pos;
		char line[64];
		int pid;

		while (end < t->len && t->data[end] != '\n')
			end++;
		if (end - pos < sizeof(line)) {
			memcpy(line, t->data + pos, end - pos);
			line[end - pos] = '\0';
			if (sscanf(line, "%d", &pid) == 1 && pid > 0 && strchr(line, ' ')) {
				struct task *k = &g->tasks[g->ntasks++];

				k->pid = pid;
				snprintf(k->comm, sizeof(k->comm), "%s", strchr(line, ' ') + 1);
			}
		}
		pos = end + 1;
	}
}

/* Addresses of a few functions timers use, from the sample's kallsyms. */
static void load_funcs(struct gen *g, const struct tk_dat_text *t)
{
	static const char *const want[] = {"hrtimer_wakeup",	    "tick_nohz_handler",
					   "dl_task_timer",	    "process_timeout",
					   "delayed_work_timer_fn", "mix_interrupt_randomness"};
	size_t pos = 0;

	while (pos < t->len) {
		size_t end = pos;
		char line[256], sym[200], type;
		unsigned long long addr;

		while (end < t->len && t->data[end] != '\n')
			end++;
		if (end - pos < sizeof(line)) {
			memcpy(line, t->data + pos, end - pos);
			line[end - pos] = '\0';
			if (sscanf(line, "%llx %c %199s", &addr, &type, sym) == 3) {
				for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
					if (!strcmp(sym, want[i]) && g->nfuncs < 8)
						g->funcs[g->nfuncs++] = addr;
				}
				if (!strcmp(sym, "tracing_mark_write"))
					g->mark_ip = addr;
			}
		}
		pos = end + 1;
	}
	if (!g->nfuncs || !g->mark_ip) {
		errno = ENOENT;
		die("sample kallsyms lacks the timer functions");
	}
}

static void load_sample(struct gen *g, struct tk_dat *sample, struct tk_dat_writer *w)
{
	const struct tk_dat_info *info = tk_dat_get_info(sample);
	struct tk_dat_text t;

	g->set = tk_event_set_new(info->long_size, info->big_endian, info->page_size);
	if (!g->set)
		die("event set");
	/* The six metadata sections, as they are. */
	for (uint16_t id = TK_DAT_SECTION_HEADER_INFO; id <= TK_DAT_SECTION_CMDLINES; id++) {
		const void *body;
		uint64_t len;

		if (tk_dat_metadata(sample, id, &body, &len))
			continue;
		if (tk_dat_writer_add_metadata(w, id, body, len) < 0)
			die("add metadata");
	}
	for (size_t i = 0; i < tk_dat_ftrace_format_count(sample); i++) {
		if (!tk_dat_ftrace_format(sample, i, &t))
			tk_event_set_add_format(g->set, "ftrace", t.data, t.len);
	}
	for (size_t s = 0; s < tk_dat_system_count(sample); s++) {
		const char *sys = tk_dat_system_name(sample, s);

		if (strcmp(sys, "sched") && strcmp(sys, "irq") && strcmp(sys, "timer"))
			continue;
		for (size_t i = 0; i < tk_dat_system_format_count(sample, s); i++) {
			if (!tk_dat_system_format(sample, s, i, &t))
				tk_event_set_add_format(g->set, sys, t.data, t.len);
		}
	}
	for (size_t k = 0; k < NKINDS; k++) {
		kinds[k].ev = tk_event_find_by_name(g->set, kinds[k].system, kinds[k].name);
		if (!kinds[k].ev) {
			fprintf(stderr, "bench-report: the sample has no %s:%s format\n",
				kinds[k].system, kinds[k].name);
			exit(1);
		}
	}
	if (tk_dat_kallsyms(sample, &t))
		die("sample kallsyms");
	load_funcs(g, &t);
	load_tasks(g, tk_dat_cmdlines(sample, &t) ? NULL : &t);
}

/* Write @events records over NCPU CPUs; return the number written. */
static uint64_t write_file(const char *sample_path, const char *path, uint64_t events)
{
	struct tk_dat *sample = tk_dat_open(sample_path);
	struct tk_dat_writer *w;
	struct tk_dat_writer_opts wo = {.sz = sizeof(struct tk_dat_writer_opts),
					.version = 7,
					.compression = TK_COMPRESS_NONE};
	const struct tk_dat_info *info;
	struct gen g;
	unsigned int total_weight = 0;
	uint64_t per_cpu = (events + NCPU - 1) / NCPU, written = 0;
	uint8_t *batch, payload[512];

	if (!sample)
		die(sample_path);
	info = tk_dat_get_info(sample);
	wo.long_size = info->long_size;
	wo.page_size = info->page_format.page_size;
	w = tk_dat_writer_open(path, &wo);
	if (!w)
		die(path);
	memset(&g, 0, sizeof(g));
	load_sample(&g, sample, w);
	for (size_t k = 0; k < NKINDS; k++)
		total_weight += kinds[k].weight;
	batch = malloc((size_t)BATCH_PAGES * wo.page_size);
	if (!batch)
		die("malloc");
	if (tk_dat_writer_begin_buffer(w, "", "local", wo.page_size, NCPU) < 0)
		die("begin buffer");
	for (uint32_t cpu = 0; cpu < NCPU; cpu++) {
		uint64_t ts = 1645423757000ull + cpu * 1000, done = 0;
		uint32_t npages = 0;
		struct tk_page_writer pw;

		if (tk_dat_writer_begin_cpu(w, cpu) < 0)
			die("begin cpu");
		if (tk_page_writer_init(&pw, &info->page_format, batch, ts) < 0)
			die("page writer");
		while (done < per_cpu) {
			unsigned int pick = (unsigned int)(rng() % total_weight);
			size_t k = 0;
			uint32_t size;
			uint64_t next = ts + 100 + rng() % 600;
			int ret;

			while (pick >= kinds[k].weight)
				pick -= kinds[k++].weight;
			size = make_record(&g, kinds[k].ev, cpu, payload, sizeof(payload));
			ret = tk_page_writer_add(&pw, next, payload, size);
			if (ret == -ENOSPC) {
				tk_page_writer_finish(&pw);
				if (++npages == BATCH_PAGES) {
					if (tk_dat_writer_write_pages(
						    w, batch, (uint64_t)npages * wo.page_size) < 0)
						die(path);
					npages = 0;
				}
				if (tk_page_writer_init(&pw, &info->page_format,
							batch + (size_t)npages * wo.page_size,
							ts) < 0)
					die("page writer");
				continue;
			}
			if (ret < 0) {
				errno = -ret;
				die("page writer add");
			}
			ts = next;
			done++;
		}
		tk_page_writer_finish(&pw);
		npages++;
		if (tk_dat_writer_write_pages(w, batch, (uint64_t)npages * wo.page_size) < 0 ||
		    tk_dat_writer_end_cpu(w) < 0)
			die(path);
		written += done;
	}
	if (tk_dat_writer_end_buffer(w) < 0 || tk_dat_writer_finish(w) < 0)
		die(path);
	tk_dat_writer_close(w);
	free(batch);
	tk_event_set_free(g.set);
	tk_dat_close(sample);
	return written;
}

/* ------------------------------------------------------------- running */

/* One timed run of @argv into @seconds, its peak RSS kept in @best; non-zero when it failed. */
static int timed_run(char *const argv[], const char *out, double *seconds, struct run *best)
{
	struct run r = run_tool(argv, out);

	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
		fprintf(stderr, "bench-report: %s %s %s failed (status 0x%x)\n", argv[0], argv[1],
			argv[2], r.status);
		return 1;
	}
	*seconds = r.seconds;
	if (r.maxrss_kb > best->maxrss_kb)
		best->maxrss_kb = r.maxrss_kb;
	return 0;
}

/* The line of one tool's runs: median (kept in @run) and range of @times, rate and peak RSS. */
static void print_median(const char *label, double *times, int reps, uint64_t events,
			 struct run *run, const char *note)
{
	qsort(times, (size_t)reps, sizeof(times[0]), cmp_double);
	run->seconds = times[reps / 2];
	printf("%s %8.3f s (median of %d, %.3f-%.3f)  %7.2f M events/s  peak RSS %6.1f MB%s\n",
	       label, run->seconds, reps, times[0], times[reps - 1],
	       (double)events / run->seconds / 1e6, run->maxrss_kb / 1024.0, note);
}

/* The perf.data comparison (bench-perf's run); 0 also when it is skipped. */
static int perf_part(const char *tracekit, bool quick, int reps)
{
	char reps_text[16];
	char *args[] = {"bench-perf", "--tracekit", (char *)tracekit, quick ? "--quick" : "--reps",
			reps_text,    NULL};
	int argc = quick ? 4 : 5;
	int rc;

	snprintf(reps_text, sizeof(reps_text), "%d", reps > 16 ? 16 : reps);
	printf("\nperf.data: tracekit report against perf script\n");
	fflush(stdout);
	rc = bench_perf_main(argc, args);
	fflush(stdout);
	return rc == 77 ? 0 : rc;
}

/* One direction of convert: tracekit against trace-cmd on @from, in pairs. */
static int convert_case(const char *label, const char *tracekit, const char *from,
			const char *to_tk, const char *to_tc, const char *version, bool to_none,
			bool quick, int rounds)
{
	const char *codec = strcmp(version, "7") ? "none" : to_none ? "none" : "zstd";
	char *argv_tk[] = {(char *)tracekit,
			   "convert",
			   "-q",
			   (char *)from,
			   "-o",
			   (char *)to_tk,
			   "--file-version",
			   (char *)version,
			   "--compression",
			   (char *)codec,
			   NULL};
	char *argv_tc[] = {"trace-cmd",
			   "convert",
			   "-i",
			   (char *)from,
			   "-o",
			   (char *)to_tc,
			   "--file-version",
			   (char *)version,
			   "--compression",
			   (char *)codec,
			   NULL};
	struct pairs p;

	if (quick) {
		struct run r = run_tool(argv_tk, NULL);

		if (!WIFEXITED(r.status) || WEXITSTATUS(r.status)) {
			fprintf(stderr, "bench-report: tracekit convert %s failed\n", label);
			return 1;
		}
		printf("tracekit convert %s: %8.3f s (1 run)\n", label, r.seconds);
		return 0;
	}
	p = run_pairs(argv_tk, argv_tc, rounds);
	if (!p.rounds) {
		printf("trace-cmd convert %s: failed or not installed, skipped\n", label);
		return 0;
	}
	printf("convert %s: tracekit %7.3f s, trace-cmd %7.3f s (medians of %d); ratio: "
	       "tracekit %.2fx faster (median of %d interleaved pairs, %.2f-%.2f)\n",
	       label, p.ours, p.theirs, p.rounds, p.ratio, p.rounds, p.ratio_lo, p.ratio_hi);
	printf("  cpu (user+sys): tracekit %.3f s, trace-cmd %.3f s; ratio %.2fx\n", p.ours_cpu,
	       p.theirs_cpu, p.cpu_ratio);
	return 0;
}

/* tracekit convert against trace-cmd convert, v6 <-> v7 zstd, on bench-report's file. */
static int convert_part(const char *tracekit, const char *path, const char *dir, bool quick,
			int rounds)
{
	char v6[600], v7z[600], out_tk[600], out_tc[600];
	char *mk6[] = {(char *)tracekit, "convert", "-q", (char *)path, "-o", v6,
		       "--file-version", "6",	    NULL};
	char *mk7[] = {(char *)tracekit, "convert", "-q", (char *)path, "-o", v7z, NULL};
	struct run a, b;
	int status = 0;

	snprintf(v6, sizeof(v6), "%s/convert-v6.dat", dir);
	snprintf(v7z, sizeof(v7z), "%s/convert-v7z.dat", dir);
	snprintf(out_tk, sizeof(out_tk), "%s/convert-tk.dat", dir);
	snprintf(out_tc, sizeof(out_tc), "%s/convert-tc.dat", dir);
	a = run_tool(mk6, NULL);
	b = run_tool(mk7, NULL);
	if (!WIFEXITED(a.status) || WEXITSTATUS(a.status) || !WIFEXITED(b.status) ||
	    WEXITSTATUS(b.status)) {
		fprintf(stderr, "bench-report: tracekit convert could not make the inputs\n");
		status = 1;
	} else {
		settle_file(v6);
		settle_file(v7z);
		status |= convert_case("v6 -> v7 zstd", tracekit, v6, out_tk, out_tc, "7", false,
				       quick, rounds);
		status |= convert_case("v7 zstd -> v6", tracekit, v7z, out_tk, out_tc, "6", false,
				       quick, rounds);
		status |= convert_case("v7 zstd -> v7 none", tracekit, v7z, out_tk, out_tc, "7",
				       true, quick, rounds);
	}
	unlink(v6);
	unlink(v7z);
	unlink(out_tk);
	unlink(out_tc);
	return status;
}

/* One run of the compressed-file part: wall and CPU seconds, peak RSS. */
struct zrun {
	double wall, cpu;
	long rss_kb;
};

/* run_tool() in this part's terms: a wall time of -1 when the tool failed. */
static struct zrun zrun_tool(char *const argv[], const char *out)
{
	struct run r = run_tool(argv, out);
	bool ok = WIFEXITED(r.status) && !WEXITSTATUS(r.status);

	return (struct zrun){
		.wall = ok ? r.seconds : -1, .cpu = r.cpu_seconds, .rss_kb = r.maxrss_kb};
}

static double zmedian(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/*
 * The same events as v7 zstd beside the uncompressed file, in the same
 * rounds: tracekit report (default threads, and -j 1) and trace-cmd
 * report on each file in turn, each line with its median wall and CPU
 * time and peak RSS, and the median of each round's trace-cmd/tracekit
 * ratio. --quick: one tracekit run on the zstd file, whose text must be
 * the uncompressed file's.
 */
static int zstd_part(const char *tracekit, const char *path, const char *dir, bool quick,
		     bool with_tc, int rounds, uint64_t events)
{
	enum { TK, TK1, TC, NTOOLS };
	static const char *const tool[NTOOLS] = {"tracekit report", "tracekit report -j 1",
						 "trace-cmd report"};
	char z[600], out_a[600], out_b[600];
	char *mk[] = {(char *)tracekit, "convert", "-q", (char *)path, "-o", z, NULL};
	const char *files[2] = {path, z}, *names[2] = {"v7 none", "v7 zstd"};
	double wall[2][NTOOLS][32], cpu[2][NTOOLS][32], ratio[2][32];
	long rss[2][NTOOLS] = {{0}};
	struct run mk_run;
	int status = 0;

	snprintf(z, sizeof(z), "%s/bench-zstd.dat", dir);
	snprintf(out_a, sizeof(out_a), "%s/zstd-none.txt", dir);
	snprintf(out_b, sizeof(out_b), "%s/zstd-zstd.txt", dir);
	mk_run = run_tool(mk, NULL);
	if (!WIFEXITED(mk_run.status) || WEXITSTATUS(mk_run.status)) {
		fprintf(stderr, "bench-report: tracekit convert could not make the zstd file\n");
		return 1;
	}
	settle_file(z);
	printf("\ncompressed: the same events as v7 zstd (%s), in the same rounds\n", z);
	if (quick) {
		char *a[] = {(char *)tracekit, "report", "-i", (char *)path, NULL};
		char *b[] = {(char *)tracekit, "report", "-i", z, NULL};
		struct zrun ra = zrun_tool(a, out_a), rb = zrun_tool(b, out_b);

		if (ra.wall < 0 || rb.wall < 0 || !files_equal(out_a, out_b)) {
			fprintf(stderr, "bench-report: the zstd file's text differs: diff %s %s\n",
				out_a, out_b);
			status = 1;
		} else {
			printf("zstd text identical to the uncompressed file's (%.3f s)\n",
			       rb.wall);
		}
		goto out;
	}
	if (rounds > 32)
		rounds = 32;
	for (int i = 0; i < rounds; i++) {
		for (int f = 0; f < 2; f++) {
			char *argv[NTOOLS][8] = {
				{(char *)tracekit, "report", "-i", (char *)files[f], NULL},
				{(char *)tracekit, "report", "-j", "1", "-i", (char *)files[f],
				 NULL},
				{"trace-cmd", "report", "-i", (char *)files[f], NULL},
			};

			for (int t = 0; t < NTOOLS; t++) {
				struct zrun r;

				if (t == TC && !with_tc)
					continue;
				r = zrun_tool(argv[t], NULL);
				if (r.wall < 0) {
					fprintf(stderr, "bench-report: %s -i %s failed\n", tool[t],
						files[f]);
					status = 1;
					goto out;
				}
				wall[f][t][i] = r.wall;
				cpu[f][t][i] = r.cpu;
				if (r.rss_kb > rss[f][t])
					rss[f][t] = r.rss_kb;
			}
			if (with_tc)
				ratio[f][i] = wall[f][TC][i] / wall[f][TK][i];
		}
	}
	for (int f = 0; f < 2; f++) {
		for (int t = 0; t < NTOOLS; t++) {
			double w, c;

			if (t == TC && !with_tc)
				continue;
			w = zmedian(wall[f][t], rounds);
			c = zmedian(cpu[f][t], rounds);
			printf("%s, %-21s %8.3f s wall, %.3f s CPU (medians of %d)  %7.2f M "
			       "events/s  peak RSS %6.1f MB\n",
			       names[f], tool[t], w, c, rounds, (double)events / w / 1e6,
			       rss[f][t] / 1024.0);
		}
		if (with_tc) {
			double lo, hi, m;

			m = zmedian(ratio[f], rounds);
			lo = ratio[f][0];
			hi = ratio[f][rounds - 1];
			printf("%s ratio: tracekit %.1fx faster (median of %d interleaved pairs, "
			       "%.1f-%.1f)\n",
			       names[f], m, rounds, lo, hi);
		}
	}
out:
	unlink(z);
	unlink(out_a);
	unlink(out_b);
	return status;
}

static void usage(void)
{
	fputs("usage: bench-report [--quick] [--events N] [--reps N] [--tc-reps N] [--tracekit "
	      "PATH]\n"
	      "                    [--before PATH] [--sample FILE] [--keep FILE]\n"
	      "                    [--no-trace-cmd] [--no-perf] [--no-zstd] [--convert-only]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit", *sample = NULL, *keep = NULL, *before = NULL;
	uint64_t events = DEFAULT_EVENTS, written;
	bool quick = false, with_tc = true, with_perf = true, with_zstd = true;
	bool convert_only = false, events_given = false;
	int reps = 3, tc_reps = 3;
	double pairs_ratio = 0, pairs_lo = 0, pairs_hi = 0;
	char dir[] = "/tmp/bench-report-XXXXXX", path[4200], out_tk[4200], out_tc[4200];
	double times[32], btimes[32], stimes[32], ftimes[2][32];
	struct run tk = {0}, tc = {0}, bk = {0}, one = {0};
	int status = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--no-trace-cmd"))
			with_tc = false;
		else if (!strcmp(argv[i], "--no-perf"))
			with_perf = false;
		else if (!strcmp(argv[i], "--no-zstd"))
			with_zstd = false;
		else if (!strcmp(argv[i], "--convert-only"))
			convert_only = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--events")) {
			events = strtoull(argv[++i], NULL, 0);
			events_given = true;
		} else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--tc-reps"))
			tc_reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--tracekit"))
			tracekit = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--before"))
			before = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--sample"))
			sample = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--keep"))
			keep = argv[++i];
		else
			usage();
	}
	if (quick) {
		/* --events still counts with --quick --convert-only (the leapfrog test's file). */
		if (!convert_only || !events_given)
			events = QUICK_EVENTS;
		reps = 1;
	}
	if (reps < 1 || reps > 32 || tc_reps < 1 || tc_reps > 32 || !events)
		usage();
	if (!sample)
		sample = getenv("TK_SAMPLE") ? getenv("TK_SAMPLE")
					     : SOURCE_ROOT "/tests/data/sample-v7-zstd.dat";
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof(path), "%s", keep ? keep : "");
	if (!keep)
		snprintf(path, sizeof(path), "%s/bench.dat", dir);
	snprintf(out_tk, sizeof(out_tk), "%s/tracekit.txt", dir);
	snprintf(out_tc, sizeof(out_tc), "%s/trace-cmd.txt", dir);

	written = write_file(sample, path, events);
	{
		struct stat st;

		settle_file(path);
		if (stat(path, &st))
			die(path);
		printf("file: %s, %" PRIu64 " events, %.1f MB, v7 uncompressed, 2 CPUs\n", path,
		       written, (double)st.st_size / 1e6);
	}
	if (convert_only) {
		/* The convert part alone (issue 22): no report, no perf.data part. */
		with_zstd = false;
		with_perf = false;
		if (quick)
			with_tc = false;
		goto convert;
	}
	{
		char *argv_tk[] = {(char *)tracekit, "report", "-i", path, NULL};
		char *argv_bk[] = {(char *)before, "report", "-i", path, NULL};
		char *argv_st[] = {(char *)tracekit, "report", "-j", "1", "-i", path, NULL};

		for (int i = 0; i < reps; i++) {
			/* Then the same run on one thread: the single-threaded figure. */
			if (timed_run(argv_tk, quick ? out_tk : NULL, &times[i], &tk) ||
			    timed_run(argv_st, NULL, &stimes[i], &one) ||
			    (before && timed_run(argv_bk, NULL, &btimes[i], &bk)))
				return 1;
		}
		print_median("tracekit report  > /dev/null:", times, reps, written, &tk, "");
		print_median("tracekit report -j 1 > /dev/null:", stimes, reps, written, &one,
			     "  (one thread)");
		/*
		 * Filters, timed over the same rounds' file: a field filter that
		 * keeps few lines, and -v of one that hides few (most records
		 * still print, and every sched_switch goes through libtraceevent's
		 * filter): the figures say what a filter costs beside the plain run.
		 */
		{
			char *argv_f[2][8] = {
				{(char *)tracekit, "report", "-F", "sched_switch:prev_pid>0", "-i",
				 path, NULL},
				{(char *)tracekit, "report", "-v", "-F", "sched_switch:prev_pid==0",
				 "-i", path, NULL},
			};
			static const char *const label[2] = {
				"tracekit report -F 'sched_switch:prev_pid>0':",
				"tracekit report -v -F 'sched_switch:prev_pid==0':",
			};

			for (int k = 0; k < 2; k++) {
				struct run fr = {0};

				for (int i = 0; i < reps; i++)
					if (timed_run(argv_f[k], NULL, &ftimes[k][i], &fr))
						return 1;
				print_median(label[k], ftimes[k], reps, written, &fr, "");
				printf("  filtered/unfiltered speed: %.0f%%\n",
				       100.0 * tk.seconds / fr.seconds);
			}
		}
		if (before) {
			printf("before: %s\n", before);
			print_median("tracekit (before) > /dev/null:", btimes, reps, written, &bk,
				     "");
			printf("before/after: %.2fx\n", bk.seconds / tk.seconds);
		}
	}
	if (with_tc) {
		char *argv_tc[] = {"trace-cmd", "report", "-i", path, NULL};
		char *argv_tk[] = {(char *)tracekit, "report", "-i", path, NULL};

		if (quick) {
			tc = run_tool(argv_tc, out_tc);
		} else {
			/* Interleaved pairs: the ratio of each pair is what drifts least. */
			struct pairs p = run_pairs(argv_tk, argv_tc, tc_reps);

			tc.status = p.rounds ? 0 : 127 << 8;
			tc.seconds = p.theirs;
			tc.maxrss_kb = p.theirs_rss_kb;
			pairs_ratio = p.ratio;
			pairs_lo = p.ratio_lo;
			pairs_hi = p.ratio_hi;
		}
		if (WIFEXITED(tc.status) && WEXITSTATUS(tc.status) == 127) {
			printf("trace-cmd report: not installed, skipped\n");
			with_tc = false;
		} else if (quick) {
			printf("trace-cmd report > /dev/null: %8.3f s (1 run)\n", tc.seconds);
		} else {
			printf("trace-cmd report > /dev/null: %8.3f s (median of %d)          "
			       "%7.2f M events/s  peak RSS %6.1f MB\n",
			       tc.seconds, tc_reps, written / tc.seconds / 1e6,
			       tc.maxrss_kb / 1024.0);
			printf("ratio: tracekit %.1fx faster (median of %d interleaved pairs, "
			       "%.1f-%.1f), "
			       "%.2fx the peak RSS\n",
			       pairs_ratio, tc_reps, pairs_lo, pairs_hi,
			       (double)tk.maxrss_kb / (double)tc.maxrss_kb);
		}
	}
	if (with_zstd && (with_tc || quick))
		status |= zstd_part(tracekit, path, dir, quick, with_tc, tc_reps, written);
convert:
	if (with_tc || convert_only)
		status |= convert_part(tracekit, path, dir, quick, tc_reps);
	if (quick && with_tc) {
		if (files_equal(out_tk, out_tc)) {
			printf("texts identical\n");
		} else {
			fprintf(stderr, "bench-report: texts differ: diff %s %s\n", out_tc, out_tk);
			status = 1;
		}
	}
	if (!status) {
		unlink(out_tk);
		unlink(out_tc);
		if (!keep)
			unlink(path);
		rmdir(dir);
	}
	if (with_perf)
		status |= perf_part(tracekit, quick, reps);
	return status;
}
