// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * sqlite: the tables of many traces in one SQLite database, for
 * `sqlite3 trace.db 'select ...'` with nothing else installed. libsqlite3
 * is Debian's (libsqlite3-dev): a database file is SQLite's own format,
 * which no one should write by hand.
 *
 * The tables are tables.c's, column for column (INTEGER or TEXT; no
 * declared keys, as the rows of many traces share utids). Inputs are read
 * one after the other (SQLite has one writer); each table's INSERT is
 * prepared once and every row goes in one transaction, with the journal
 * off and no syncs until the commit: a failure leaves the database as it
 * was before the call (SQLite rolls back the open transaction).
 *
 * libsqlite3 is opened (dlopen()) when a database is first written, not
 * linked: linked, it was mapped and relocated at the start of every
 * command (~2 950 relocations and ~28 page faults, ~0.7 ms), which a
 * report of a small trace paid for nothing. The calls go through sq_api
 * (the macros below), filled once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include <tracekit/tables.h>

#include "tables-internal.h"
#include "internal/bytebuf.h"
#include "internal/error.h"
#include "internal/opts.h"

#define SQ_CALLS(X)                                                                                \
	X(bind_double)                                                                             \
	X(bind_int64)                                                                              \
	X(bind_text)                                                                               \
	X(close)                                                                                   \
	X(errmsg)                                                                                  \
	X(exec)                                                                                    \
	X(finalize)                                                                                \
	X(free)                                                                                    \
	X(open_v2)                                                                                 \
	X(prepare_v2)                                                                              \
	X(reset)                                                                                   \
	X(step)

static struct {
#define SQ_FIELD(f) __typeof__(&sqlite3_##f) f;
	SQ_CALLS(SQ_FIELD)
#undef SQ_FIELD
} sq_api;
static pthread_once_t sq_once = PTHREAD_ONCE_INIT;
static char sq_load_error[256];

static void sq_resolve(void)
{
	/* SQLite's soname has been libsqlite3.so.0 since version 3. */
	void *h = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(sq_load_error, sizeof(sq_load_error), "%s", dlerror());
		return;
	}
#define SQ_SYM(f)                                                                                  \
	if (!sq_load_error[0] && !(sq_api.f = (__typeof__(sq_api.f))dlsym(h, "sqlite3_" #f)))      \
		snprintf(sq_load_error, sizeof(sq_load_error),                                     \
			 "libsqlite3.so.0 has no sqlite3_%s", #f);
	SQ_CALLS(SQ_SYM)
#undef SQ_SYM
	/* The handle stays open: the functions are used until the program ends. */
}

/* Load libsqlite3 once; Return: 0, or -ENOENT naming what is missing. */
static int sq_load(void)
{
	pthread_once(&sq_once, sq_resolve);
	if (sq_load_error[0])
		return tk_fail(ENOENT, "cannot load SQLite: %s", sq_load_error);
	return 0;
}

#define sqlite3_bind_double (*sq_api.bind_double)
#define sqlite3_bind_int64  (*sq_api.bind_int64)
#define sqlite3_bind_text   (*sq_api.bind_text)
#define sqlite3_close	    (*sq_api.close)
#define sqlite3_errmsg	    (*sq_api.errmsg)
#define sqlite3_exec	    (*sq_api.exec)
#define sqlite3_finalize    (*sq_api.finalize)
#define sqlite3_free	    (*sq_api.free)
#define sqlite3_open_v2	    (*sq_api.open_v2)
#define sqlite3_prepare_v2  (*sq_api.prepare_v2)
#define sqlite3_reset	    (*sq_api.reset)
#define sqlite3_step	    (*sq_api.step)

struct sq {
	sqlite3 *db;
	const char *path;
	sqlite3_stmt *ins[TK_TABLE_COUNT];
	const struct tk_tables_opts *opts;
	const char *input;
	struct tk_tables_stats *stats;
};

static int sqlite_damage(void *ctx, uint64_t offset, const char *what, uint64_t skipped,
			 int64_t lost)
{
	struct sq *s = ctx;

	if (s->stats)
		s->stats->damaged++;
	if (s->opts->damage)
		s->opts->damage(s->opts->damage_ctx, s->input, offset, what, skipped, lost);
	return 0;
}

static int sq_fail(struct sq *s, const char *what)
{
	return tk_fail(EIO, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int exec(struct sq *s, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		int ret = tk_fail(EIO, "%s: %s: %s", s->path, sql, err ? err : "failed");

		sqlite3_free(err);
		return ret;
	}
	return 0;
}

/* CREATE TABLE and the prepared INSERT of table @t. */
static int prepare(struct sq *s, enum tk_table_id t)
{
	const struct tk_table_def *d = &tk_table_defs[t];
	char create[2048], insert[2048];
	size_t c = 0, i = 0;

	c += (size_t)snprintf(create + c, sizeof(create) - c, "CREATE TABLE IF NOT EXISTS %s (",
			      d->name);
	i += (size_t)snprintf(insert + i, sizeof(insert) - i, "INSERT INTO %s VALUES (", d->name);
	for (size_t k = 0; k < d->ncols; k++) {
		/* Quoted: Perfetto's column names include "end". */
		c += (size_t)snprintf(create + c, sizeof(create) - c, "%s\"%s\" %s", k ? ", " : "",
				      d->cols[k].name,
				      d->cols[k].type == TK_PARQUET_STRING   ? "TEXT"
				      : d->cols[k].type == TK_PARQUET_DOUBLE ? "REAL"
									     : "INTEGER");
		i += (size_t)snprintf(insert + i, sizeof(insert) - i, "%s?", k ? ", " : "");
	}
	snprintf(create + c, sizeof(create) - c, ")");
	snprintf(insert + i, sizeof(insert) - i, ")");
	if (exec(s, create))
		return -EIO;
	if (sqlite3_prepare_v2(s->db, insert, -1, &s->ins[t], NULL) != SQLITE_OK)
		return sq_fail(s, "prepare");
	return 0;
}

static int sqlite_row(void *ctx, enum tk_table_id t, const struct tk_parquet_val *vals)
{
	struct sq *s = ctx;
	const struct tk_table_def *d = &tk_table_defs[t];
	sqlite3_stmt *st = s->ins[t];

	for (size_t k = 0; k < d->ncols; k++) {
		int r;

		if (d->cols[k].type == TK_PARQUET_STRING)
			r = sqlite3_bind_text(st, (int)k + 1, vals[k].s ? vals[k].s : "",
					      (int)vals[k].len, SQLITE_STATIC);
		else if (d->cols[k].type == TK_PARQUET_DOUBLE)
			r = sqlite3_bind_double(st, (int)k + 1, vals[k].d);
		else
			r = sqlite3_bind_int64(st, (int)k + 1, vals[k].i);
		if (r != SQLITE_OK)
			return sq_fail(s, "bind");
	}
	if (sqlite3_step(st) != SQLITE_DONE)
		return sq_fail(s, "insert");
	sqlite3_reset(st);
	return 0;
}

int tk_tables_write_sqlite(const char *const *inputs, size_t n, const char *db,
			   const struct tk_tables_opts *opts, struct tk_tables_stats *stats)
{
	struct tk_tables_opts o;
	struct sq s = {.path = db, .opts = &o, .stats = stats};
	struct tk_table_sink sink = {.row = sqlite_row, .ctx = &s};
	char(*ids)[256] = NULL;
	bool in_tx = false;
	struct stat sb;
	int ret;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	ret = sq_load();
	if (ret)
		return ret;
	ret = tk_opts_copy(&o, sizeof(o), opts, "tk_tables_opts");
	if (ret < 0)
		return ret;
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids)
		return tk_fail(ENOMEM, "out of memory");
	ret = tk_tables_trace_ids(inputs, n, &o, ids);
	if (ret)
		goto out;
	if (!o.strict)
		sink.damage = sqlite_damage;
	if (sqlite3_open_v2(db, &s.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		ret = s.db ? sq_fail(&s, "open") : tk_fail(ENOMEM, "%s: open: out of memory", db);
		goto out;
	}
	ret = exec(&s, "PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; BEGIN");
	in_tx = !ret;
	for (int t = 0; !ret && t < TK_TABLE_COUNT; t++)
		ret = prepare(&s, (enum tk_table_id)t);
	for (size_t i = 0; !ret && i < n; i++) {
		struct tk_table_ident ident = {
			.trace_id = ids[i], .host = o.host, .boot_id = o.boot_id};
		uint64_t rows[TK_TABLE_COUNT];

		s.input = inputs[i];
		ret = tk_tables_run(inputs[i], &ident, &sink, rows);
		for (int t = 0; stats && t < TK_TABLE_COUNT; t++)
			stats->rows[t] += rows[t];
	}
	if (!ret) {
		ret = exec(&s, "COMMIT");
		in_tx = ret != 0;
	}
out:
	for (int t = 0; t < TK_TABLE_COUNT; t++)
		sqlite3_finalize(s.ins[t]);
	if (in_tx)
		sqlite3_exec(s.db, "ROLLBACK", NULL, NULL, NULL);
	if (s.db && sqlite3_close(s.db) != SQLITE_OK && !ret)
		ret = tk_fail(EIO, "%s: close failed", db);
	if (!ret && stats && stat(db, &sb) == 0)
		stats->bytes = (uint64_t)sb.st_size;
	free(ids);
	return ret;
}
