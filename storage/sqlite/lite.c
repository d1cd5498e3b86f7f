/*
 * lite.c - the SQLite driver (sql.h): a thin wrapper that gives each
 * sqlite3_stmt the driver header storage expects.  Everything SQLite does
 * beyond statements (files, WAL, checkpoints, the writers' turn) stays in
 * open.c, split.c, wal.c and busy.c, which only a SQLite handle runs.
 */
#include <stdlib.h>
#include "lite.h"

_Static_assert(SQL_ROW == SQLITE_ROW && SQL_DONE == SQLITE_DONE && SQL_OK == SQLITE_OK &&
               SQL_BUSY == SQLITE_BUSY && SQL_NOMEM == SQLITE_NOMEM &&
               SQL_READONLY == SQLITE_READONLY && SQL_IOERR == SQLITE_IOERR &&
               SQL_CORRUPT == SQLITE_CORRUPT && SQL_FULL == SQLITE_FULL &&
               SQL_CANTOPEN == SQLITE_CANTOPEN && SQL_CONSTRAINT == SQLITE_CONSTRAINT &&
               SQL_MISUSE == SQLITE_MISUSE && SQL_ERROR == SQLITE_ERROR &&
               SQL_PERM == SQLITE_PERM && SQL_LOCKED == SQLITE_LOCKED &&
               SQL_AUTH == SQLITE_AUTH && SQL_NOTADB == SQLITE_NOTADB,
               "sql.h codes are SQLite's");
_Static_assert(SQL_INTEGER == SQLITE_INTEGER && SQL_FLOAT == SQLITE_FLOAT &&
               SQL_TEXT == SQLITE_TEXT && SQL_BLOB == SQLITE_BLOB && SQL_NULL == SQLITE_NULL,
               "sql.h column types are SQLite's");

typedef struct lite_stmt {
    rls_stmt base;
    sqlite3_stmt *s;
} lite_stmt;

#define S(st) (((lite_stmt *)(st))->s)

static int lite_prepare(rls_db *db, const char *sql, rls_stmt **out)
{
    lite_stmt *l = malloc(sizeof *l);
    *out = NULL;
    if (!l)
        return SQL_NOMEM;
    l->base.drv = &rls__lite_driver;
    l->base.deferred_rows = 0;
    int rc = sqlite3_prepare_v3(db->lite->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &l->s, NULL);
    if (rc != SQLITE_OK) {
        free(l);
        return rc;
    }
    *out = &l->base;
    return SQL_OK;
}

static int lite_step(rls_stmt *st) { return sqlite3_step(S(st)); }

static int lite_step_deferred(rls_stmt *st)
{
    int rc = sqlite3_step(S(st));
    if (rc == SQLITE_DONE)
        st->deferred_rows += sqlite3_changes(sqlite3_db_handle(S(st)));
    return rc;
}
static void lite_reset(rls_stmt *st) { sqlite3_reset(S(st)); }
static void lite_clear(rls_stmt *st) { sqlite3_clear_bindings(S(st)); }

static void lite_finalize(rls_stmt *st)
{
    sqlite3_finalize(S(st));
    free(st);
}

static int lite_bind_int64(rls_stmt *st, int i, int64_t v)
{
    return sqlite3_bind_int64(S(st), i, v);
}

static int lite_bind_bytes(rls_stmt *st, int i, const void *p, int n, int life, int text)
{
    sqlite3_destructor_type d = life == SQL_TRANSIENT ? SQLITE_TRANSIENT : SQLITE_STATIC;
    if (text)
        return sqlite3_bind_text(S(st), i, p, n, d);
    return sqlite3_bind_blob(S(st), i, p, n, d);
}

static int lite_bind_null(rls_stmt *st, int i) { return sqlite3_bind_null(S(st), i); }
static int lite_column_type(rls_stmt *st, int i) { return sqlite3_column_type(S(st), i); }
static int64_t lite_column_int64(rls_stmt *st, int i) { return sqlite3_column_int64(S(st), i); }
static double lite_column_double(rls_stmt *st, int i) { return sqlite3_column_double(S(st), i); }

static const void *lite_column_ptr(rls_stmt *st, int i, int text)
{
    return text ? (const void *)sqlite3_column_text(S(st), i) : sqlite3_column_blob(S(st), i);
}

static int lite_column_bytes(rls_stmt *st, int i) { return sqlite3_column_bytes(S(st), i); }

static int lite_exec(rls_db *db, const char *sql)
{
    return sqlite3_exec(db->lite->sql, sql, NULL, NULL, NULL);
}

static int64_t lite_changes(rls_db *db) { return sqlite3_changes(db->lite->sql); }
static int lite_in_tx(rls_db *db) { return db->lite->sql && !sqlite3_get_autocommit(db->lite->sql); }
static const char *lite_errmsg(rls_db *db) { return sqlite3_errmsg(db->lite->sql); }

/* The pragma takes effect when it is compiled, so it runs afresh. */
static int lite_durable(rls_db *db, int full)
{
    return sqlite3_exec(db->lite->sql, full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                        NULL, NULL, NULL);
}

const sql_driver rls__lite_driver = {
    .name = "sqlite",
    .prepare = lite_prepare,
    .step = lite_step,
    .step_deferred = lite_step_deferred,
    .reset = lite_reset,
    .clear_bindings = lite_clear,
    .finalize = lite_finalize,
    .bind_int64 = lite_bind_int64,
    .bind_bytes = lite_bind_bytes,
    .bind_null = lite_bind_null,
    .column_type = lite_column_type,
    .column_int64 = lite_column_int64,
    .column_double = lite_column_double,
    .column_ptr = lite_column_ptr,
    .column_bytes = lite_column_bytes,
    .exec = lite_exec,
    .changes = lite_changes,
    .in_tx = lite_in_tx,
    .errmsg = lite_errmsg,
    .durable = lite_durable,
};

