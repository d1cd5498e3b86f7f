/*
 * keycount.c - exact key counts per action (keycount.h, schema/002).
 *
 * A key is counted for an action while it has at least one rls_state row
 * of one of the action's limits.  Only the two moments that change that
 * cost anything: before a write whose key had no state read (a new key,
 * or one whose state was collected) one statement adds one unless the
 * key has a row of the action; after a delete, one subtracts one unless
 * it has one left.  The look is a seek on the key's rows, which share a
 * page (the state's primary key is (key, lid)) the check has just read.
 * A copy of many keys (copy_rows.c) counts again instead, once per action.
 *
 * The statements are prepared once per connection and live in the top
 * slots of rls_db.astmt, which rls__stmt_finalize_all() finalizes at close
 * with the admin statements; admin.h's table must stay below them.
 */
#include <stdio.h>
#include <string.h>
#include "admin.h"
#include "keyctx.h"
#include "keycount.h"

enum { KC_COUNT, KC_GET, KC_TOTAL, KC_RECOUNT, KC__COUNT };
#define KC_SLOT(id) ((int)(sizeof((rls_db *)0)->conn.astmt / sizeof(rls_stmt *)) - 1 - (id))

_Static_assert(ASTMT__COUNT <= (int)(sizeof((rls_db *)0)->conn.astmt / sizeof(rls_stmt *)) -
                                   KC__COUNT,
               "admin.h's statement table reaches the slots of keycount.c");

/* @R: the schema of rls_limits.  ?1 key, ?2 action or NULL and ?3 a limit
 * id, ?4 what to add.  Adds ?4 to the action's count unless the key has a
 * row of the action: one statement, one seek on the key's rows. */
static const char *const kc_sql[KC__COUNT] = {
    [KC_COUNT] = "INSERT INTO main.rls_key_counts(action, keys)"
                 " SELECT kc.act, ?4 FROM (SELECT coalesce(?2, (SELECT action FROM @R.rls_limits"
                 " WHERE lid = ?3)) AS act) kc"
                 " WHERE kc.act IS NOT NULL AND NOT EXISTS (SELECT 1 FROM main.rls_state s"
                 " JOIN @R.rls_limits l ON l.lid = s.lid WHERE s.key = ?1 AND l.action = kc.act)"
                 " ON CONFLICT(action) DO UPDATE SET keys = rls_key_counts.keys + excluded.keys",
    [KC_GET] = "SELECT max(keys, 0) FROM main.rls_key_counts WHERE action = ?2",
    [KC_TOTAL] = "SELECT total(max(keys, 0)) FROM main.rls_key_counts",
    /* ?2 action: its count from the counters themselves (schema/002) */
    [KC_RECOUNT] = "INSERT INTO main.rls_key_counts(action, keys)"
                   " SELECT ?2, count(DISTINCT s.key) FROM main.rls_state s"
                   " WHERE s.lid IN (SELECT lid FROM @R.rls_limits WHERE action = ?2)"
                   " ON CONFLICT(action) DO UPDATE SET keys = excluded.keys",
};

const char *rls__rules_schema(rls_db *db)
{
    return db->be->rules_schema(db);
}

static rls_stmt *kc_stmt(rls_db *db, int id)
{
    rls_stmt **slot = &db->conn.astmt[KC_SLOT(id)];
    char sql[1024];
    const char *src = kc_sql[id], *schema = rls__rules_schema(db);
    size_t o = 0;
    if (*slot)
        return *slot;
    for (; *src && o + 8 < sizeof sql; src++) {   /* @R -> schema */
        if (src[0] == '@' && src[1] == 'R') {
            o += (size_t)snprintf(sql + o, sizeof sql - o, "%s", schema);
            src++;
        } else {
            sql[o++] = *src;
        }
    }
    sql[o] = '\0';
    int rc = sql_prepare(db, sql, slot);
    if (rc != SQL_OK) {
        *slot = NULL;
        db->conn.stmt_code = rls__sql_error(db, rc, "cannot prepare statement");
    }
    return *slot;
}

/* Adds delta to the count of the action (by name, or of limit lid) unless
 * key has a counter of it. */
static int count_unless_rows(rls_db *db, const char *action, int64_t lid, const void *key,
                             size_t keylen, int delta)
{
    rls_stmt *st = kc_stmt(db, KC_COUNT);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_blob(st, 1, keylen ? key : "", (int)keylen, SQL_STATIC);
    if (action)
        sql_bind_text(st, 2, action, -1, SQL_STATIC);
    else
        sql_bind_null(st, 2);
    sql_bind_int64(st, 3, lid);
    sql_bind_int64(st, 4, delta);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot count keys");
}

int rls__keycount_before_write(rls_db *db, const key_ctx *ctx)
{
    int writes = 0;
    if (ctx->nfound > 0)
        return RLS_OK;   /* a row of the key was read: it is counted */
    for (int i = 0; i < ctx->n; i++)
        writes |= ctx->items[i].changed;
    /* No row of these limits is not no row of the action: a limit the
     * key's tier does not use now, or one no longer in the rules, may have
     * one; the statement looks. */
    return writes ? count_unless_rows(db, ctx->act->name, 0, ctx->key, ctx->keylen, 1)
                  : RLS_OK;
}

int rls__keycount_deleted(rls_db *db, const char *action, int64_t lid, const void *key,
                          size_t keylen)
{
    return count_unless_rows(db, action, lid, key, keylen, -1);
}

int rls__keycount_recount(rls_db *db, const char *action)
{
    rls_stmt *st = kc_stmt(db, KC_RECOUNT);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_text(st, 2, action, -1, SQL_STATIC);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot count keys");
}

int rls__keycount_get(rls_db *db, const char *action, int64_t *n)
{
    rls_stmt *st = kc_stmt(db, KC_GET);
    *n = 0;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_text(st, 2, action, -1, SQL_STATIC);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *n = sql_column_int64(st, 0);
    sql_reset(st);
    return rc == SQL_ROW || rc == SQL_DONE ? RLS_OK
                                           : rls__sql_error(db, rc, "cannot count keys");
}

int rls__keycount_total(rls_db *db, int64_t *n)
{
    rls_stmt *st = kc_stmt(db, KC_TOTAL);
    *n = 0;
    if (!st)
        return rls__stmt_failed(db);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *n = (int64_t)sql_column_double(st, 0);
    sql_reset(st);
    return rc == SQL_ROW ? RLS_OK : rls__sql_error(db, rc, "cannot count keys");
}
