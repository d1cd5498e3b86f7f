/*
 * stmt.c - the statement table: each statement is prepared once per
 * connection, in its backend's form (backend.h, prepare), on first use,
 * reset after every use, and finalized at close.  Also the handle's side
 * of transactions (the backend runs BEGIN, COMMIT and ROLLBACK) and the
 * audit row.
 */
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "events.h"
#include "memclass.h"

static const char *const stmt_sql[STMT__COUNT] = {
#define RLS__STMT_SQL(name, sql) sql,
    RLS_STMT_MAP(RLS__STMT_SQL)
#undef RLS__STMT_SQL
};

int rls__prepare_text(rls_db *db, const char *text, rls_stmt **out)
{
    int rc = sql_prepare(db, text, out);
    if (rc != SQL_OK) {
        *out = NULL;
        return db->conn.stmt_code = rls__sql_error(db, rc, "cannot prepare statement");
    }
    return RLS_OK;
}

int rls__prepare(rls_db *db, int table, int id, const char *sql, rls_stmt **out)
{
    int rc = db->be->prepare(db, table, id, sql, out);
    if (rc != RLS_OK) {
        *out = NULL;
        db->conn.stmt_code = rc;
    }
    return rc;
}

rls_stmt *rls__stmt(rls_db *db, int id)
{
    rls_stmt *st = db->conn.stmt[id];
    if (st)
        return st;
    if (rls__prepare(db, RLS_TABLE_CHECK, id, stmt_sql[id], &st) != RLS_OK)
        return NULL;
    db->conn.stmt[id] = st;
    return st;
}

int rls__stmt_failed(rls_db *db)
{
    return db->conn.stmt_code ? db->conn.stmt_code : RLS_ESTORAGE;
}

void rls__stmt_finalize_all(rls_db *db)
{
    for (int i = 0; i < STMT__COUNT; i++) {
        sql_finalize(db->conn.stmt[i]);
        db->conn.stmt[i] = NULL;
    }
    for (size_t i = 0; i < sizeof db->conn.astmt / sizeof db->conn.astmt[0]; i++) {
        sql_finalize(db->conn.astmt[i]);
        db->conn.astmt[i] = NULL;
    }
}

int rls__exec_simple(rls_db *db, int id)
{
    rls_stmt *st = rls__stmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    int rc = sql_step(st);
    sql_reset(st);
    if (rc == SQL_DONE || rc == SQL_ROW)
        return RLS_OK;
    return rls__sql_error(db, rc, "statement failed");
}

int rls__begin(rls_db *db, int write)
{
    int rc = db->be->begin(db, write);
    if (rc == RLS_OK) {
        db->conn.in_tx = 1;
        db->conn.tx_write = write;
        rls__cache_tx_begun(db);
    }
    return rc;
}

/* Commits (the backend records what the handle may trust afterwards,
 * cache.c), then lets the backend do what follows a commit (SQLite: a
 * checkpoint when the WAL is long).  A write transaction that could admit
 * a cached denial sooner, or change what a memory-class fast path trusts
 * (a rule change, a block, a refund), bumps the shared generation
 * (deny.c) before its commit as well as after.  Before: while it holds
 * the write lock no check transaction runs, so nothing a handle learns
 * under the new generation predates this commit, and a writer killed
 * between its COMMIT and the bump after it has bumped already
 * (test_crash.c, suite 5; without it, handles kept answering by the old
 * rules for up to a second). */
int rls__commit(rls_db *db)
{
    int bump = db->conn.tx_write && (!db->conn.check_tx || db->conn.gave_back);
    if (bump)
        rls__deny_bump(db);
    /* durability: memory states first (memclass.h): a snapshot that moved
     * fails the transaction, to be run again */
    int rc = rls__mem_prepare(db);
    if (rc != RLS_OK) {
        rls__rollback(db);
        return rc;
    }
    rc = db->be->commit(db);
    if (rc != RLS_OK) {
        rls__mem_undo(db);
        rls__rollback(db);
        return rc;
    }
    rls__mem_forget(db);
    if (bump)
        rls__deny_bump(db);
    db->conn.check_tx = 0;
    db->conn.gave_back = 0;
    db->conn.in_tx = 0;
    db->conn.tx_write = 0;
    rls__cache_distrust(db);
    db->be->after_commit(db);
    rls__events_committed(db);   /* log_fn's lines (events.c) */
    return RLS_OK;
}

void rls__exec_rollback(rls_db *db)
{
    if (sql_in_tx(db)) {
        char keep[sizeof db->errmsg];
        memcpy(keep, db->errmsg, sizeof keep);
        rls__exec_simple(db, STMT_ROLLBACK);
        memcpy(db->errmsg, keep, sizeof keep);  /* keep the first error */
    }
}

void rls__rollback(rls_db *db)
{
    db->be->rollback(db);
    rls__mem_forget(db);
    db->conn.in_tx = 0;
    db->conn.tx_write = 0;
    rls__cache_distrust(db);
    db->conn.check_tx = 0;
    db->conn.gave_back = 0;
    rls__events_rolled_back(db);
}

int rls__write_tx(rls_db *db, rls_tx_fn fn, void *arg)
{
    int rc, attempt = 0;
    do {
        if ((rc = rls__begin(db, 1)) != RLS_OK)
            continue;   /* a connection lost while idle may be retried too */
        rc = fn(db, arg);
        if (rc == RLS_OK)
            rc = rls__commit(db);
        else
            rls__rollback(db);
    } while (rls__tx_retry(db, rc, &attempt));
    return rc;
}

static void bind_text_or_null(rls_stmt *st, int i, const char *s)
{
    sql_bind_text(st, i, s ? s : "", -1, SQL_STATIC);
}

int rls__audit(rls_db *db, int64_t now, const char *op, const char *action,
               const char *key, const char *before, const char *after,
               const char *reason)
{
    rls_stmt *st = rls__stmt(db, STMT_AUDIT_ADD);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, now);
    sql_bind_text(st, 2, db->ident.os_user, -1, SQL_STATIC);
    sql_bind_text(st, 3, db->ident.tool, -1, SQL_STATIC);
    bind_text_or_null(st, 4, op);
    bind_text_or_null(st, 5, action);
    if (key)
        sql_bind_blob(st, 6, key, (int)strlen(key), SQL_STATIC);
    else
        sql_bind_null(st, 6);
    bind_text_or_null(st, 7, before);
    bind_text_or_null(st, 8, after);
    /* the handle's reason (rls_admin_reason) where the change has none */
    bind_text_or_null(st, 9, (!reason || !*reason) && rls__admin_reason(db)
                                 ? rls__admin_reason(db) : reason);
    int rc = sql_step(st);
    sql_reset(st);
    sql_clear_bindings(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot write audit row");
}

/* The open transaction is a charging check (check.c), or the stats flush
 * of a closing handle (handle.c): its commit gives nothing back (deny.c). */
void rls__tx_mark_check(rls_db *db, int on) { db->conn.check_tx = on; }
/* It gave units back (refund.c): cached denials are stale at its commit;
 * or it wrote a row the memory-class fast path must see (check.c): the
 * commit bumps the generation either way (deny.c). */
void rls__tx_gave_back(rls_db *db) { db->conn.gave_back = 1; }

/* A forked child: the parent's statements are forgotten, never finalized. */
void rls__stmt_forget(rls_db *db)
{
    memset(db->conn.stmt, 0, sizeof db->conn.stmt);
    memset(db->conn.astmt, 0, sizeof db->conn.astmt);
    db->conn.in_tx = 0;
}
