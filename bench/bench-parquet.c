// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-parquet: the table exports (convert --to parquet / --to sqlite)
 * on bench-report's generated 3 M-event .dat.
 *
 * What is measured:
 *   parquet, one input     tk_tables_write_parquet() in this process,
 *                          --reps times: rows/s of wall time, and rows/s
 *                          per core (rows over this process's user + system
 *                          CPU time: the machine is shared, and wall time
 *                          counts the waits for a core as well)
 *   parquet, two inputs    the same file twice under two trace ids, one
 *                          thread each: rows/s of wall time with both cores
 *   sqlite                 tk_tables_write_sqlite() once, rows/s
 *   size                   the Parquet directory's bytes against the same
 *                          trace as a zstd .dat (tracekit convert)
 *   memory                 peak RSS of `tracekit convert --to parquet` on
 *                          the file and on one 10 times longer: the writer
 *                          keeps one row group per column, whatever the
 *                          input's length
 * The input comes from `bench-report --keep` (its generator: sched, irq,
 * softirq, timer and print events with the formats of
 * tests/data/sample-v7-zstd.dat). --quick: 20 k events, one rep, and the
 * 10x file at 200 k; it exits 1 when an export fails or the Parquet rows
 * differ from SQLite's.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <tracekit/tables.h>

#include "harness.h"

#define DEFAULT_EVENTS 3000000ull

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		die(path);
	return (uint64_t)st.st_size;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t total_rows(const struct tk_tables_stats *st)
{
	uint64_t n = 0;

	for (int t = 0; t < TK_TABLES_COUNT; t++)
		n += st->rows[t];
	return n;
}

/* Write a trace of @events events at @path with bench-report's generator. */
static void make_trace(const char *bench_report, const char *tracekit, uint64_t events,
		       const char *path)
{
	char num[32];
	struct run r;

	snprintf(num, sizeof(num), "%" PRIu64, events);
	r = run_tool((char *const[]){(char *)bench_report, "--events", num, "--reps", "1",
				     "--no-trace-cmd", "--no-perf", "--tracekit", (char *)tracekit,
				     "--keep", (char *)path, NULL},
		     NULL);
	if (r.status) {
		errno = EIO;
		die("bench-report --keep");
	}
}

static void usage(void)
{
	fputs("usage: bench-parquet [--quick] [--events N] [--reps N] --tracekit PATH\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tracekit = "tracekit";
	uint64_t events = DEFAULT_EVENTS, rows = 0, sq_rows, zstd_size;
	bool quick = false;
	int reps = 3;
	char dir[] = "/tmp/bench-parquet-XXXXXX";
	char dat[4200], big[4200], zdat[4200], out[4200], db[4200];
	double wall[32], rate_cpu[32];
	struct tk_tables_stats st;
	struct run m1, m10;
	int status = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--events"))
			events = strtoull(argv[++i], NULL, 10);
		else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--tracekit"))
			tracekit = argv[++i];
		else
			usage();
	}
	if (quick) {
		events = 20000;
		reps = 1;
	}
	if (reps < 1 || reps > 32 || !events)
		usage();
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(dat, sizeof(dat), "%s/trace.dat", dir);
	snprintf(big, sizeof(big), "%s/trace10.dat", dir);
	snprintf(zdat, sizeof(zdat), "%s/trace-zstd.dat", dir);
	snprintf(out, sizeof(out), "%s/fleet", dir);
	snprintf(db, sizeof(db), "%s/fleet.db", dir);
	make_trace(BENCH_REPORT, tracekit, events, dat);
	settle_file(dat);
	if (run_tool((char *const[]){(char *)tracekit, "convert", "-q", dat, "-o", zdat, NULL},
		     NULL)
		    .status)
		die("tracekit convert (zstd)");
	zstd_size = file_size(zdat);

	for (int r = 0; r < reps; r++) {
		const char *in[] = {dat};
		double t0, c0;

		rm_tree(out);
		t0 = now_s();
		c0 = cpu_s();
		if (tk_tables_write_parquet(in, 1, out, NULL, &st))
			die("tk_tables_write_parquet");
		wall[r] = now_s() - t0;
		rate_cpu[r] = (double)total_rows(&st) / (cpu_s() - c0);
		rows = total_rows(&st);
	}
	qsort(wall, (size_t)reps, sizeof(double), cmp_double);
	qsort(rate_cpu, (size_t)reps, sizeof(double), cmp_double);
	printf("parquet, 1 input (%" PRIu64 " events):  %.3f s (median of %d, %.3f-%.3f)  "
	       "%6.2f M rows/s wall  %6.2f M rows/s per core (%.2f-%.2f)  %" PRIu64 " rows\n",
	       events, wall[reps / 2], reps, wall[0], wall[reps - 1],
	       (double)rows / wall[reps / 2] / 1e6, rate_cpu[reps / 2] / 1e6, rate_cpu[0] / 1e6,
	       rate_cpu[reps - 1] / 1e6, rows);
	printf("size: parquet %.2f MB, zstd .dat %.2f MB: %.2fx\n", (double)st.bytes / 1e6,
	       (double)zstd_size / 1e6, (double)st.bytes / (double)zstd_size);

	{
		const char *in[] = {dat, dat};
		const char *ids[] = {"a", "b"};
		TK_OPTS(tk_tables_opts, o, .trace_ids = ids, .threads = 2);
		double t0;

		rm_tree(out);
		t0 = now_s();
		if (tk_tables_write_parquet(in, 2, out, &o, &st))
			die("tk_tables_write_parquet (2 inputs)");
		printf("parquet, 2 inputs, 2 threads:  %.3f s  %6.2f M rows/s wall\n", now_s() - t0,
		       (double)total_rows(&st) / (now_s() - t0) / 1e6);
	}
	{
		const char *in[] = {dat};
		double t0 = now_s();

		if (tk_tables_write_sqlite(in, 1, db, NULL, &st))
			die("tk_tables_write_sqlite");
		sq_rows = total_rows(&st);
		printf("sqlite, 1 input:  %.3f s  %6.2f M rows/s  %.2f MB\n", now_s() - t0,
		       (double)sq_rows / (now_s() - t0) / 1e6, (double)st.bytes / 1e6);
		if (sq_rows != rows) {
			fprintf(stderr,
				"bench-parquet: sqlite wrote %" PRIu64 " rows, parquet %" PRIu64
				"\n",
				sq_rows, rows);
			status = 1;
		}
	}

	/* Memory: the same export of a file 10 times as long, in a process of its own. */
	rm_tree(out);
	m1 = run_tool((char *const[]){(char *)tracekit, "convert", "-q", "--to", "parquet", dat,
				      "-o", out, NULL},
		      NULL);
	remove(dat);
	make_trace(BENCH_REPORT, tracekit, events * 10, big);
	rm_tree(out);
	m10 = run_tool((char *const[]){(char *)tracekit, "convert", "-q", "--to", "parquet", big,
				       "-o", out, NULL},
		       NULL);
	if (m1.status || m10.status) {
		fprintf(stderr, "bench-parquet: tracekit convert --to parquet failed\n");
		status = 1;
	}
	printf("memory: peak RSS %.1f MB at %" PRIu64 " events, %.1f MB at %" PRIu64
	       " events (%.2fx), %.2f s\n",
	       (double)m1.maxrss_kb / 1e3, events, (double)m10.maxrss_kb / 1e3, events * 10,
	       (double)m10.maxrss_kb / (double)m1.maxrss_kb, m10.seconds);
	rm_tree(dir);
	return status;
}
