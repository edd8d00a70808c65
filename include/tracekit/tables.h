/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tables: traces as tables for the engines a fleet's traces go to. Each
 * input (.dat or perf.data) becomes the tables Perfetto's trace processor
 * names (sched_slice, thread_state, thread, process, ftrace_event and its
 * args, perf_sample and the stack_profile mapping, frame and callsite
 * tables of its call stacks), every row tagged with trace_id, host and boot_id, written
 * as Parquet files (DuckDB, Spark, Trino, BigQuery) or into one SQLite
 * database. docs/fleet.md shows the columns and the queries.
 */
#ifndef TRACEKIT_TABLES_H
#define TRACEKIT_TABLES_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The number of tables written per trace. */
#define TK_TABLES_COUNT 14

/**
 * typedef tk_tables_damage_fn - one damaged region of an input that was
 * read as far as it goes (tk_tables_opts.strict false)
 * @input: the input's path as given
 * @offset: where the damage starts in the file
 * @what: what is wrong, one line without file name or offset
 * @skipped: bytes passed over
 * @events_lost: events lost with it, -1 when unknown
 */
typedef void (*tk_tables_damage_fn)(void *ctx, const char *input, uint64_t offset, const char *what,
				    uint64_t skipped, int64_t events_lost);

/**
 * struct tk_tables_opts - what to tag the rows with and how to cut files
 *
 * Growable as libbpf's opts are: set @sz to sizeof(struct tk_tables_opts)
 * as the caller was built with; fields past it count as zero.
 */
struct tk_tables_opts {
	size_t sz;
	const char *const *trace_ids; /* one per input; NULL: each input's file name
					 without its directory and last extension */
	const char *host;	      /* NULL: each file's own (.dat uname, perf.data
					 hostname), "" when it has none */
	const char *boot_id;	      /* NULL: "" */
	uint64_t row_group_rows;      /* Parquet: rows per row group; 0: 131072 */
	uint64_t file_rows;	      /* Parquet: rows per file; 0: no limit */
	unsigned int threads;	      /* Parquet: inputs read at once; 0: one per
					 online CPU (never more than the inputs) */
	bool strict;		      /* the first damage in an input is its error;
					 false: its intact parts are written and
					 each damaged region goes to @damage */
	tk_tables_damage_fn damage;   /* NULL: damage is counted only */
	void *damage_ctx;
};

/** What an export wrote. */
struct tk_tables_stats {
	uint64_t rows[TK_TABLES_COUNT]; /* per table, in tk_tables_name() order */
	uint64_t files;			/* Parquet files written */
	uint64_t bytes;			/* bytes written (Parquet files, or the database) */
	uint64_t damaged;		/* damaged regions met (see tk_tables_opts.strict) */
};

/**
 * tk_tables_name() - the name of table @i (0 .. TK_TABLES_COUNT - 1)
 * Context: any thread.
 * Return: a static string, or NULL when @i is out of range.
 */
TK_API const char *tk_tables_name(unsigned int i);

/**
 * tk_tables_write_parquet() - write the tables of each input under @dir
 * @inputs, @n: the .dat / perf.data files
 * @dir: created when missing; each table's files go to @dir/TABLE/, named
 *       TRACEID-NNNN.parquet (NNNN counts the files of one trace from
 *       0000), written under a .tmp name and renamed when complete
 * @opts: NULL for the defaults
 * @stats: may be NULL
 *
 * Inputs are read by up to @opts->threads threads at once, each input by
 * one thread. Trace ids must be distinct; a file of the same name is
 * replaced. @opts->damage is called from the calling thread once the
 * inputs are done, in input order.
 *
 * Context: blocking; starts and joins its threads.
 * Return: 0, or a negative errno with tk_errmsg() naming the first input
 * that failed (-EINVAL: two inputs with the same trace id).
 */
TK_API int tk_tables_write_parquet(const char *const *inputs, size_t n, const char *dir,
				   const struct tk_tables_opts *opts,
				   struct tk_tables_stats *stats);

/**
 * tk_tables_write_sqlite() - write the tables of each input into the
 * SQLite database @db (tables created when missing, rows appended)
 * @inputs, @n, @opts, @stats: as tk_tables_write_parquet() (row groups,
 *       file rows and threads do not apply)
 *
 * All rows go in one transaction: @db holds every input's rows or, after a
 * failure, none of them.
 *
 * Context: blocking.
 * Return: 0, or a negative errno with tk_errmsg() set.
 */
TK_API int tk_tables_write_sqlite(const char *const *inputs, size_t n, const char *db,
				  const struct tk_tables_opts *opts, struct tk_tables_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
