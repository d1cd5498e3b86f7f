/*
 * sql.h - the statement driver: the part of a backend (backend.h) that
 * runs statements.
 *
 * Storage keeps every statement's text (in SQLite's dialect, the reference)
 * and all of its logic: which rows a check reads and writes, in which
 * transaction.  A driver runs them: it prepares a statement, binds
 * parameters, steps through result rows, reads columns, and explains its
 * errors.  Two drivers exist: storage/sqlite/lite.c (SQLite, a file on this
 * host) and storage/pg/pg.c (PostgreSQL through libpq, shared by many
 * hosts), each its backend's sql member.
 *
 * Result codes are SQLite's primary result codes, the vocabulary storage
 * already speaks: SQL_ROW and SQL_DONE from sql_step, SQL_OK from the rest,
 * any other value a failure the driver describes in sql_errmsg.  The
 * PostgreSQL driver translates its SQLSTATEs into the same codes (pg.c), so
 * one mapping (handle.c, rls__sql_code) turns either into an rlstore code.
 *
 * A column pointer (sql_column_text, sql_column_blob) stays valid until the
 * statement is stepped, reset or finalized, as in SQLite.  Bound text and
 * blobs marked SQL_STATIC must stay valid until the statement is reset;
 * SQL_TRANSIENT ones are copied at bind time.
 */
#ifndef RLS_SQL_H
#define RLS_SQL_H

#include <stdint.h>
#include <string.h>

struct rls_db;

enum {
    SQL_OK = 0,
    SQL_ERROR = 1,
    SQL_PERM = 3,
    SQL_BUSY = 5,         /* lock wait timed out, serialization failure */
    SQL_LOCKED = 6,
    SQL_NOMEM = 7,
    SQL_READONLY = 8,
    SQL_IOERR = 10,       /* includes a lost server connection */
    SQL_CORRUPT = 11,
    SQL_FULL = 13,
    SQL_CANTOPEN = 14,
    SQL_CONSTRAINT = 19,
    SQL_MISUSE = 21,
    SQL_AUTH = 23,
    SQL_NOTADB = 26,
    SQL_ROW = 100,
    SQL_DONE = 101
};

/* Column types (sql_column_type), SQLite's numbering. */
enum { SQL_INTEGER = 1, SQL_FLOAT = 2, SQL_TEXT = 3, SQL_BLOB = 4, SQL_NULL = 5 };

/* Lifetime of bound bytes. */
enum { SQL_STATIC = 0, SQL_TRANSIENT = 1 };

typedef struct rls_stmt rls_stmt;

typedef struct sql_driver {
    const char *name;
    /* Prepares sql (SQLite dialect; the driver translates its own). */
    int (*prepare)(struct rls_db *db, const char *sql, rls_stmt **out);
    int (*step)(rls_stmt *st);
    /* A step of a statement without results whose outcome the caller does
     * not look at before the transaction's next statement: the driver may
     * send it with that one (pg_pipe.c), which then fails in its place.
     * sql_changes() does not tell what it changed; the rows it changed are
     * added to the statement's deferred_rows when its outcome arrives (at
     * once on SQLite, with that next statement on PostgreSQL). */
    int (*step_deferred)(rls_stmt *st);
    void (*reset)(rls_stmt *st);               /* keeps the bindings */
    void (*clear_bindings)(rls_stmt *st);
    void (*finalize)(rls_stmt *st);            /* NULL is a no-op */
    int (*bind_int64)(rls_stmt *st, int i, int64_t v);
    /* text 1: character data, 0: bytes; n < 0: up to the NUL */
    int (*bind_bytes)(rls_stmt *st, int i, const void *p, int n, int life, int text);
    int (*bind_null)(rls_stmt *st, int i);
    int (*column_type)(rls_stmt *st, int i);
    int64_t (*column_int64)(rls_stmt *st, int i);
    double (*column_double)(rls_stmt *st, int i);
    /* Bytes of a text or blob column, NUL-terminated; NULL for SQL NULL. */
    const void *(*column_ptr)(rls_stmt *st, int i, int text);
    int (*column_bytes)(rls_stmt *st, int i);
    /* A statement without parameters or results, run once. */
    int (*exec)(struct rls_db *db, const char *sql);
    int64_t (*changes)(struct rls_db *db);     /* rows changed by the last statement */
    int (*in_tx)(struct rls_db *db);           /* a transaction is open */
    const char *(*errmsg)(struct rls_db *db);  /* detail of the last failure */
    /* Durability of the transaction about to begin: 1 every commit survives
     * a power loss (admin changes, `durability: full`), 0 the default. */
    int (*durable)(struct rls_db *db, int full);
} sql_driver;

/* Every statement begins with its driver. */
struct rls_stmt {
    const sql_driver *drv;
    int64_t deferred_rows;   /* rows changed by its deferred steps so far */
};

extern const sql_driver rls__lite_driver;
extern const sql_driver rls__pg_driver;

static inline int sql_step(rls_stmt *st) { return st->drv->step(st); }
static inline int sql_step_deferred(rls_stmt *st) { return st->drv->step_deferred(st); }
static inline void sql_reset(rls_stmt *st) { st->drv->reset(st); }
static inline void sql_clear_bindings(rls_stmt *st) { st->drv->clear_bindings(st); }
static inline void sql_finalize(rls_stmt *st)
{
    if (st)
        st->drv->finalize(st);
}
static inline int sql_bind_int64(rls_stmt *st, int i, int64_t v)
{
    return st->drv->bind_int64(st, i, v);
}
static inline int sql_bind_text(rls_stmt *st, int i, const char *s, int n, int life)
{
    return st->drv->bind_bytes(st, i, s, n, life, 1);
}
static inline int sql_bind_blob(rls_stmt *st, int i, const void *p, int n, int life)
{
    return st->drv->bind_bytes(st, i, p, n < 0 ? 0 : n, life, 0);
}
static inline int sql_bind_null(rls_stmt *st, int i) { return st->drv->bind_null(st, i); }
static inline int sql_column_type(rls_stmt *st, int i) { return st->drv->column_type(st, i); }
static inline int64_t sql_column_int64(rls_stmt *st, int i)
{
    return st->drv->column_int64(st, i);
}
static inline int sql_column_int(rls_stmt *st, int i)
{
    return (int)st->drv->column_int64(st, i);
}
static inline double sql_column_double(rls_stmt *st, int i)
{
    return st->drv->column_double(st, i);
}
static inline const unsigned char *sql_column_text(rls_stmt *st, int i)
{
    return (const unsigned char *)st->drv->column_ptr(st, i, 1);
}
static inline const void *sql_column_blob(rls_stmt *st, int i)
{
    return st->drv->column_ptr(st, i, 0);
}
static inline int sql_column_bytes(rls_stmt *st, int i) { return st->drv->column_bytes(st, i); }

#endif
