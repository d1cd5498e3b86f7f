/*
 * stmt.c - the statement table: each statement is prepared once per
 * connection (SQLITE_PREPARE_PERSISTENT) on first use, reset after every
 * use, and finalized at close.  Also transactions and the audit row.
 */
#include <string.h>
#include "db.h"

static const char *const stmt_sql[STMT__COUNT] = {
#define RLS__STMT_SQL(name, sql) sql,
    RLS_STMT_MAP(RLS__STMT_SQL)
#undef RLS__STMT_SQL
};

sqlite3_stmt *rls__stmt(rls_db *db, int id)
{
    sqlite3_stmt *st = db->stmt[id];
    if (st)
        return st;
    int rc = sqlite3_prepare_v3(db->sql, stmt_sql[id], -1,
                                SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        db->stmt_code = rls__sqlite_error(db, rc, "cannot prepare statement");
        return NULL;
    }
    db->stmt[id] = st;
    return st;
}

int rls__stmt_failed(rls_db *db)
{
    return db->stmt_code ? db->stmt_code : RLS_ESTORAGE;
}

void rls__stmt_finalize_all(rls_db *db)
{
    for (int i = 0; i < STMT__COUNT; i++) {
        sqlite3_finalize(db->stmt[i]);
        db->stmt[i] = NULL;
    }
    for (size_t i = 0; i < sizeof db->astmt / sizeof db->astmt[0]; i++) {
        sqlite3_finalize(db->astmt[i]);
        db->astmt[i] = NULL;
    }
}

int rls__exec_simple(rls_db *db, int id)
{
    sqlite3_stmt *st = rls__stmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return RLS_OK;
    return rls__sqlite_error(db, rc, "statement failed");
}

int rls__begin(rls_db *db, int write)
{
    int rc = rls__exec_simple(db, write ? STMT_BEGIN_IMM : STMT_BEGIN_READ);
    if (rc == RLS_OK) {
        db->in_tx = 1;
        db->tx_write = write;
    }
    return rc;
}

/* Commits, records the data version (cache.c) and checkpoints when the WAL
 * is long (wal.c).  A write transaction ends the handle's trust in what it
 * knew (a check re-establishes it); a read one only if the version moved. */
int rls__commit(rls_db *db)
{
    int rc = rls__exec_simple(db, STMT_COMMIT);
    if (rc != RLS_OK) {
        rls__rollback(db);
        return rc;
    }
    db->commit_dv_ok = sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_DATA_VERSION,
                                            &db->commit_dv) == SQLITE_OK;
    if (db->tx_write || !db->commit_dv_ok || db->commit_dv != db->meta_dv)
        db->meta_dv_ok = 0;
    db->in_tx = 0;
    db->tx_write = 0;
    db->tx_trusted = 0;
    rls__wal_after_commit(db);
    return RLS_OK;
}

void rls__rollback(rls_db *db)
{
    if (sqlite3_get_autocommit(db->sql) == 0) {
        char keep[sizeof db->errmsg];
        memcpy(keep, db->errmsg, sizeof keep);
        rls__exec_simple(db, STMT_ROLLBACK);
        memcpy(db->errmsg, keep, sizeof keep);  /* keep the first error */
    }
    db->in_tx = 0;
    db->tx_write = 0;
    db->tx_trusted = 0;
    db->meta_dv_ok = 0;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

int rls__audit(rls_db *db, int64_t now, const char *op, const char *action,
               const char *key, const char *before, const char *after,
               const char *reason)
{
    sqlite3_stmt *st = rls__stmt(db, STMT_AUDIT_ADD);
    if (!st)
        return rls__stmt_failed(db);
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, db->os_user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, db->tool, -1, SQLITE_STATIC);
    bind_text_or_null(st, 4, op);
    bind_text_or_null(st, 5, action);
    if (key)
        sqlite3_bind_blob(st, 6, key, (int)strlen(key), SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 6);
    bind_text_or_null(st, 7, before);
    bind_text_or_null(st, 8, after);
    bind_text_or_null(st, 9, reason);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? RLS_OK : rls__sqlite_error(db, rc, "cannot write audit row");
}
