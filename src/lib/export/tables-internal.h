/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tables: the relational model of one trace (Perfetto's table names and
 * columns), computed in one pass of the feed and handed row by row to a
 * sink (the Parquet or the SQLite writer). tables.c holds the design notes.
 */
#ifndef TRACEKIT_EXPORT_TABLES_INTERNAL_H
#define TRACEKIT_EXPORT_TABLES_INTERNAL_H

#include "parquet-internal.h"

enum tk_table_id {
	TK_TABLE_SCHED_SLICE,
	TK_TABLE_THREAD_STATE,
	TK_TABLE_THREAD,
	TK_TABLE_PROCESS,
	TK_TABLE_FTRACE_EVENT,
	TK_TABLE_PERF_SAMPLE,
	TK_TABLE_ARGS,
	TK_TABLE_STACK_MAPPING,
	TK_TABLE_STACK_FRAME,
	TK_TABLE_STACK_CALLSITE,
	TK_TABLE_COUNTER,
	TK_TABLE_COUNTER_TRACK,
	TK_TABLE_CPU_COUNTER_TRACK,
	TK_TABLE_THREAD_COUNTER_TRACK,
	TK_TABLE_COUNT
};

/* The common columns every table ends with. */
#define TK_TABLE_IDENT_COLS 3

struct tk_table_def {
	const char *name;
	const struct tk_parquet_col *cols; /* the table's own, then the ident columns */
	size_t ncols;
};

extern const struct tk_table_def tk_table_defs[TK_TABLE_COUNT];

/*
 * Where rows go; @row's @vals hold the table's ncols cells (strings
 * borrowed). @damage gets each damaged region of a salvaged input (@what
 * during the call only); NULL when the run is strict.
 */
struct tk_table_sink {
	int (*row)(void *ctx, enum tk_table_id table, const struct tk_parquet_val *vals);
	int (*damage)(void *ctx, uint64_t offset, const char *what, uint64_t skipped,
		      int64_t events_lost);
	void *ctx;
};

struct tk_table_ident {
	const char *trace_id;
	const char *host;    /* NULL: the file's own (uname / hostname), else "" */
	const char *boot_id; /* NULL: "" */
};

/*
 * tk_tables_run() - read the .dat or perf.data @path once and send every
 * table's rows to @sink; @rows[t] gets the count of table t (may be NULL).
 * The input is salvaged when @sink has a damage callback, else read strictly.
 * Return: 0 or a negative errno with tk_errmsg() set (or the sink's error).
 */
int tk_tables_run(const char *path, const struct tk_table_ident *ident,
		  const struct tk_table_sink *sink, uint64_t *rows);

struct tk_tables_opts;

/*
 * The trace id of each input: @o's, else the file name without directory
 * and extension. -EINVAL (tk_errmsg() set) when two are the same.
 */
int tk_tables_trace_ids(const char *const *inputs, size_t n, const struct tk_tables_opts *o,
			char (*ids)[256]);

#endif
