// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tables-parquet: the tables of many traces as a directory of Parquet
 * files, one input per thread.
 *
 * Layout (Hive/Spark-friendly: one directory per table, so
 * spark.read.parquet("DIR/sched_slice") and DuckDB's read_parquet() of
 * the glob of DIR/sched_slice's .parquet files each see one schema):
 *   DIR/TABLE/TRACEID-NNNN.parquet
 * NNNN counts a trace's files of that table from 0000; a new file starts
 * every --file-rows rows. Every table gets at least its 0000 file, with no
 * rows when the trace has none, so a glob always finds the schema. A file
 * is written as NAME.tmp and renamed when complete: a reader globbing
 * *.parquet never sees half a file.
 *
 * Threads: each input is read, modelled and written by one thread (the
 * feed and the writers share nothing but libtraceevent's format parser,
 * which the feed runs under a lock, as it keeps its state in statics); a
 * shared
 * counter hands out the inputs. Throughput then scales with the cores for
 * many inputs, and a thread's memory is one row group per column of the
 * six tables (row_group_rows x 8 bytes x ~40 columns at most).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/tables.h>

#include "tables-internal.h"
#include "internal/error.h"
#include "internal/opts.h"

#define DEFAULT_ROW_GROUP_ROWS (1u << 17)
#define ERRMSG_LEN	       512

_Static_assert(TK_TABLES_COUNT == TK_TABLE_COUNT, "public and internal table counts differ");

const char *tk_tables_name(unsigned int i)
{
	return i < TK_TABLE_COUNT ? tk_table_defs[i].name : NULL;
}

/* One table's open file. */
struct table_out {
	struct tk_parquet_writer *w;
	int fd;
	unsigned int seq;
	uint64_t rows; /* in the open file */
	char path[4096], tmp[4104];
};

struct damage {
	uint64_t offset, skipped;
	int64_t lost;
	char what[160];
};

struct job {
	const char *input;
	struct damage *damage;
	size_t ndamage;
	char trace_id[256]; /* as given, for the rows */
	char file_id[256];  /* safe for a file name */
	int ret;
	char errmsg[ERRMSG_LEN];
	struct tk_tables_stats st;
};

struct pool {
	const char *dir;
	struct tk_tables_opts opts;
	struct job *jobs;
	size_t n;
	atomic_size_t next;
};

struct worker {
	struct pool *pool;
	struct job *job;
	struct table_out out[TK_TABLE_COUNT];
};

static int open_file(struct worker *wk, enum tk_table_id t)
{
	struct table_out *o = &wk->out[t];
	const struct tk_table_def *d = &tk_table_defs[t];
	uint64_t rg = wk->pool->opts.row_group_rows;

	if (wk->pool->opts.file_rows && wk->pool->opts.file_rows < rg)
		rg = wk->pool->opts.file_rows;
	char path[sizeof(o->path)];

	/* Built aside: GCC cannot tell that the job's name and o->path never overlap. */
	snprintf(path, sizeof(path), "%s/%s/%s-%04u.parquet", wk->pool->dir, d->name,
		 wk->job->file_id, o->seq);
	memcpy(o->path, path, sizeof(path));
	snprintf(o->tmp, sizeof(o->tmp), "%s.tmp", path);
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o->fd < 0)
		return tk_fail(errno, "%s: %s", o->tmp, strerror(errno));
	o->w = tk_parquet_writer_new(o->fd, o->tmp, d->cols, d->ncols, rg, 1);
	/*
	 * Rows regrouped in each row group (parquet.c, cluster_rows()): args
	 * by event, thread_state by thread.
	 */
	if (o->w && (t == TK_TABLE_ARGS || t == TK_TABLE_THREAD_STATE))
		tk_parquet_writer_cluster(o->w);
	if (!o->w) {
		int err = errno;

		close(o->fd);
		o->fd = -1;
		unlink(o->tmp);
		return -err;
	}
	o->rows = 0;
	return 0;
}

static int close_file(struct worker *wk, enum tk_table_id t)
{
	struct table_out *o = &wk->out[t];
	uint64_t size = 0;
	int ret;

	ret = tk_parquet_writer_finish(o->w, &size);
	tk_parquet_writer_free(o->w);
	o->w = NULL;
	if (!ret && close(o->fd))
		ret = tk_fail(errno, "%s: close: %s", o->tmp, strerror(errno));
	else if (ret)
		close(o->fd);
	o->fd = -1;
	if (!ret && rename(o->tmp, o->path))
		ret = tk_fail(errno, "%s: rename: %s", o->path, strerror(errno));
	if (ret) {
		unlink(o->tmp);
		return ret;
	}
	wk->job->st.files++;
	wk->job->st.bytes += size;
	o->seq++;
	return 0;
}

static int parquet_row(void *ctx, enum tk_table_id t, const struct tk_parquet_val *vals)
{
	struct worker *wk = ctx;
	struct table_out *o = &wk->out[t];
	int ret;

	if (o->w && wk->pool->opts.file_rows && o->rows == wk->pool->opts.file_rows) {
		ret = close_file(wk, t);
		if (ret)
			return ret;
	}
	if (!o->w && (ret = open_file(wk, t)))
		return ret;
	o->rows++;
	return tk_parquet_writer_add(o->w, vals);
}

static int parquet_damage(void *ctx, uint64_t offset, const char *what, uint64_t skipped,
			  int64_t lost)
{
	struct worker *wk = ctx;
	struct job *job = wk->job;
	struct damage *d = realloc(job->damage, (job->ndamage + 1) * sizeof(*d));

	if (!d)
		return tk_fail(ENOMEM, "out of memory");
	job->damage = d;
	d += job->ndamage++;
	d->offset = offset;
	d->skipped = skipped;
	d->lost = lost;
	snprintf(d->what, sizeof(d->what), "%s", what);
	return 0;
}

static void abandon(struct worker *wk)
{
	for (int t = 0; t < TK_TABLE_COUNT; t++) {
		struct table_out *o = &wk->out[t];

		if (!o->w)
			continue;
		tk_parquet_writer_free(o->w);
		close(o->fd);
		unlink(o->tmp);
		o->w = NULL;
	}
}

static int run_job(struct pool *p, struct job *job)
{
	struct worker wk = {.pool = p, .job = job};
	struct tk_table_sink sink = {
		.row = parquet_row, .damage = p->opts.strict ? NULL : parquet_damage, .ctx = &wk};
	struct tk_table_ident ident = {
		.trace_id = job->trace_id, .host = p->opts.host, .boot_id = p->opts.boot_id};
	int ret;

	ret = tk_tables_run(job->input, &ident, &sink, job->st.rows);
	/* Every table gets its first file, rows or not: a glob then finds each schema. */
	for (int t = 0; !ret && t < TK_TABLE_COUNT; t++) {
		if (!wk.out[t].w && !wk.out[t].seq)
			ret = open_file(&wk, (enum tk_table_id)t);
		if (!ret && wk.out[t].w)
			ret = close_file(&wk, (enum tk_table_id)t);
	}
	if (ret)
		abandon(&wk);
	return ret;
}

static void *worker_main(void *arg)
{
	struct pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		struct job *job = &p->jobs[i];

		job->ret = run_job(p, job);
		if (job->ret)
			snprintf(job->errmsg, sizeof(job->errmsg), "%s", tk_errmsg());
	}
	return NULL;
}

/* The input's name without its directory and last extension. */
static void default_trace_id(const char *path, char *out, size_t size)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	size_t len;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	if (len >= size)
		len = size - 1;
	memcpy(out, base, len);
	out[len] = 0;
}

static void file_id_of(const char *id, char *out, size_t size)
{
	size_t n = 0;

	for (; id[n] && n < size - 1; n++) {
		char c = id[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';

		out[n] = ok ? c : '_';
	}
	if (!n)
		out[n++] = '_';
	out[n] = 0;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		return tk_fail(errno, "%s: %s", path, strerror(errno));
	return 0;
}

int tk_tables_trace_ids(const char *const *inputs, size_t n, const struct tk_tables_opts *o,
			char (*ids)[256])
{
	for (size_t i = 0; i < n; i++) {
		if (o->trace_ids && o->trace_ids[i])
			snprintf(ids[i], 256, "%s", o->trace_ids[i]);
		else
			default_trace_id(inputs[i], ids[i], 256);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(ids[i], ids[j]))
				return tk_fail(EINVAL,
					       "%s and %s have the same trace id '%s': give each "
					       "a distinct one",
					       inputs[j], inputs[i], ids[i]);
	}
	return 0;
}

int tk_tables_write_parquet(const char *const *inputs, size_t n, const char *dir,
			    const struct tk_tables_opts *opts, struct tk_tables_stats *stats)
{
	struct pool p = {.dir = dir, .n = n};
	pthread_t tids[256];
	char(*ids)[256] = NULL;
	size_t nthreads, started = 0;
	long cpus;
	int ret;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	ret = tk_opts_copy(&p.opts, sizeof(p.opts), opts, "tk_tables_opts");
	if (ret < 0)
		return ret;
	if (!p.opts.row_group_rows)
		p.opts.row_group_rows = DEFAULT_ROW_GROUP_ROWS;
	p.jobs = calloc(n ? n : 1, sizeof(*p.jobs));
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!p.jobs || !ids) {
		ret = tk_fail(ENOMEM, "out of memory");
		goto out;
	}
	ret = tk_tables_trace_ids(inputs, n, &p.opts, ids);
	if (ret)
		goto out;
	ret = make_dir(dir);
	for (int t = 0; !ret && t < TK_TABLE_COUNT; t++) {
		char sub[4096];

		snprintf(sub, sizeof(sub), "%s/%s", dir, tk_table_defs[t].name);
		ret = make_dir(sub);
	}
	if (ret)
		goto out;
	for (size_t i = 0; i < n; i++) {
		p.jobs[i].input = inputs[i];
		snprintf(p.jobs[i].trace_id, sizeof(p.jobs[i].trace_id), "%s", ids[i]);
		file_id_of(ids[i], p.jobs[i].file_id, sizeof(p.jobs[i].file_id));
	}
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	nthreads = p.opts.threads ? p.opts.threads : (size_t)(cpus > 0 ? cpus : 1);
	if (nthreads > n)
		nthreads = n;
	if (nthreads > sizeof(tids) / sizeof(tids[0]))
		nthreads = sizeof(tids) / sizeof(tids[0]);
	if (nthreads <= 1) {
		worker_main(&p);
	} else {
		for (; started < nthreads; started++)
			if (pthread_create(&tids[started], NULL, worker_main, &p))
				break;
		/* Fewer threads than asked for still finish every input. */
		if (!started)
			worker_main(&p);
		for (size_t i = 0; i < started; i++)
			pthread_join(tids[i], NULL);
	}
	for (size_t i = 0; i < n; i++) {
		if (stats) {
			for (int t = 0; t < TK_TABLE_COUNT; t++)
				stats->rows[t] += p.jobs[i].st.rows[t];
			stats->files += p.jobs[i].st.files;
			stats->bytes += p.jobs[i].st.bytes;
		}
		for (size_t k = 0; k < p.jobs[i].ndamage; k++) {
			const struct damage *d = &p.jobs[i].damage[k];

			if (stats)
				stats->damaged++;
			if (p.opts.damage)
				p.opts.damage(p.opts.damage_ctx, inputs[i], d->offset, d->what,
					      d->skipped, d->lost);
		}
		if (p.jobs[i].ret && !ret)
			ret = tk_fail(-p.jobs[i].ret, "%s", p.jobs[i].errmsg);
	}
out:
	for (size_t i = 0; p.jobs && i < n; i++)
		free(p.jobs[i].damage);
	free(p.jobs);
	free(ids);
	return ret;
}
