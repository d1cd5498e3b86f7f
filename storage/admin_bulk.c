/*
 * admin_bulk.c - admin changes of many rows at once, each audited as one
 * row with its count (issue #20): every block removed, every key's
 * counters of an action reset, old audit rows and events pruned; and the
 * listing of penalty events.
 *
 * One file: the change and its audit row commit together.  Split
 * (docs/SECURITY.md): the audit row and the rules file's part commit
 * first, then the counters file's part in a transaction of its own, as
 * policy.c's single changes do (SQLite commits attached files one by
 * one): a crash in between leaves the change audited and half done, never
 * done unaudited; running it again finishes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "events.h"
#include "keycount.h"

struct bulk {
    const char *action;
    int64_t now, before;
    int64_t count;
    int part;                 /* 0: the audited part, 1: the counters file's */
    const rule_action *act;   /* reset */
};

static int check_time(rls_db *db, int64_t t)
{
    if (t < RLS_TIME_MIN || t > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)t);
    return RLS_OK;
}

static int check_action(rls_db *db, const char *action, int null_ok)
{
    if (!action)
        return null_ok ? RLS_OK : rls__error(db, RLS_EINVAL, "action is NULL");
    if (strlen(action) > RLS_NAME_MAX)
        return rls__error(db, RLS_EINVAL, "action is longer than %d bytes", RLS_NAME_MAX);
    return RLS_OK;
}

/* Runs fn in a fully synchronous write transaction (admin changes). */
static int bulk_tx(rls_db *db, rls_tx_fn fn, struct bulk *b)
{
    int rc = rls__db_usable(db);
    if (rc || (rc = check_time(db, b->now)) || (rc = rls__rules_writable(db)))
        return rc;
    db->errmsg[0] = '\0';
    sql_durable(db, 1);
    b->part = 0;
    rc = rls__write_tx(db, fn, b);
    if (rc == RLS_OK && db->be->rules_apart(db)) {
        b->part = 1;
        if ((rc = rls__write_tx(db, fn, b)) != RLS_OK) {
            char why[sizeof db->errmsg];
            snprintf(why, sizeof why, "%s", db->errmsg);
            rls__error(db, rc, "the change is audited, but the counters database's part "
                       "failed: %s (run it again)", why);
        }
    }
    rls__durable_restore(db);
    return rc;
}

static void bind_action(rls_stmt *st, int i, const char *action)
{
    if (action)
        sql_bind_text(st, i, action, -1, SQL_STATIC);
    else
        sql_bind_null(st, i);
}

/* Runs a count (want_row) or a change statement bound to (action, now). */
static int run(rls_db *db, int id, const char *action, int64_t now, int64_t *out)
{
    rls_stmt *st = rls__astmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    bind_action(st, 1, action);
    if (out && id != ASTMT_BULK_BLOCKS_DEL && id != ASTMT_BULK_PEN_DEL)
        sql_bind_int64(st, 2, now);
    int rc = sql_step(st);
    if (rc == SQL_ROW && out)
        *out = sql_column_int64(st, 0);
    sql_reset(st);
    sql_clear_bindings(st);
    return rc == SQL_ROW || rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "bulk change failed");
}

/* ---- every block --------------------------------------------------------- */

static int unblock_fn(rls_db *db, void *p)
{
    struct bulk *b = p;
    int64_t n = 0;
    int rc;
    char after[96];
    /* a penalty that has ended leaves its end recorded, as a sweep would
     * have (events.c): in the file its row is in */
    if (b->part == 1 || !db->be->rules_apart(db)) {
        if ((rc = rls__events_ended_all(db, b->now, b->action)))
            return rc;
    }
    if (b->part == 1)   /* split: the penalties of the counters file */
        return run(db, ASTMT_BULK_PEN_DEL, b->action, b->now, NULL);
    b->count = 0;
    if ((rc = run(db, ASTMT_BULK_BLOCKS_COUNT, b->action, b->now, &b->count)))
        return rc;
    if (db->be->rules_apart(db) && (rc = run(db, ASTMT_BULK_PEN_COUNT, b->action, b->now, &n)))
        return rc;
    b->count += n;
    if ((rc = run(db, ASTMT_BULK_BLOCKS_DEL, b->action, b->now, NULL)) ||
        (rc = rls__exec_simple(db, STMT_META_BUMP)))   /* every-action rows (everykey.c) */
        return rc;
    snprintf(after, sizeof after, "%lld active block(s) removed", (long long)b->count);
    return rls__audit(db, b->now, "unblock.all", b->action ? b->action : "", NULL,
                      "", after, "");
}

int rls_block_unset_all_at(rls_db *db, const char *action, int64_t now_ms, int64_t *count)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    struct bulk b = {action, now_ms, 0, 0, 0, NULL};
    int rc = db ? check_action(db, action, 1) : RLS_EINVAL;
    if (rc == RLS_OK)
        rc = bulk_tx(db, unblock_fn, &b);
    if (count)
        *count = rc == RLS_OK ? b.count : 0;
    return rc;
}

/* ---- every key's counters of an action ----------------------------------- */

/* Deletes the counters of every limit of the action (every tier, every
 * variant) and sets its key count again, with checks held off. */
static int reset_rows(rls_db *db, const rule_action *act, int64_t *deleted)
{
    rls_stmt *st = rls__astmt(db, ASTMT_STATE_DEL_LID);
    int rc = rls__exec_simple(db, STMT_KEYS_LOCK);
    *deleted = 0;
    if (rc)
        return rc;
    if (!st)
        return rls__stmt_failed(db);
    for (int t = -1; t < act->ntiers; t++) {
        const rule_limit *ls = t < 0 ? act->limits : act->tiers[t].limits;
        int m = t < 0 ? act->nlimits : act->tiers[t].nlimits;
        for (int i = 0; i < m; i++)
            for (int j = -1; j < ls[i].nsib; j++) {
                sql_bind_int64(st, 1, j < 0 ? ls[i].id : ls[i].sib[j]);
                int src = sql_step(st);
                sql_reset(st);
                if (src != SQL_DONE)
                    return rls__sql_error(db, src, "cannot reset counters");
                *deleted += sql_changes(db);
            }
    }
    return rls__keycount_recount(db, act->name);
}

static int reset_fn(rls_db *db, void *p)
{
    struct bulk *b = p;
    int64_t rows = 0;
    char after[96];
    int rc = rls__cache_refresh(db);
    if (rc)
        return rc;
    if (!db->rc.rules)
        return rls__error(db, RLS_ENORULES, "no rules have been applied");
    if (!(b->act = rls__ruleset_action(db->rc.rules, b->action)))
        return rls__error(db, RLS_ENOACTION, "action '%s' is not defined", b->action);
    if (b->part == 1)
        return reset_rows(db, b->act, &rows);
    if ((rc = rls__keycount_get(db, b->action, &b->count)))
        return rc;
    if (!db->be->rules_apart(db) && (rc = reset_rows(db, b->act, &rows)))
        return rc;
    snprintf(after, sizeof after, "counters of %lld key(s) cleared", (long long)b->count);
    return rls__audit(db, b->now, "reset.action", b->action, NULL, "", after, "");
}

int rls_reset_action_at(rls_db *db, const char *action, int64_t now_ms, int64_t *count)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    struct bulk b = {action, now_ms, 0, 0, 0, NULL};
    int rc = db ? check_action(db, action, 0) : RLS_EINVAL;
    if (rc == RLS_OK)
        rc = bulk_tx(db, reset_fn, &b);
    if (count)
        *count = rc == RLS_OK ? b.count : 0;
    return rc;
}

/* ---- pruning ------------------------------------------------------------- */

static int prune_fn(rls_db *db, void *p, int id, const char *op, const char *what)
{
    struct bulk *b = p;
    char after[160], t[40];
    rls_stmt *st = rls__astmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, b->before);
    int rc = sql_step(st);
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot prune");
    b->count = sql_changes(db);
    if (rls_time_format(b->before, t, sizeof t) < 0)
        snprintf(t, sizeof t, "%lld", (long long)b->before);
    snprintf(after, sizeof after, "%lld %s before %s deleted", (long long)b->count, what, t);
    return rls__audit(db, b->now, op, "", NULL, "", after, "");
}

static int audit_prune_fn(rls_db *db, void *p)
{
    return prune_fn(db, p, ASTMT_AUDIT_PRUNE, "audit.prune", "audit row(s)");
}

static int events_prune_fn(rls_db *db, void *p)
{
    return prune_fn(db, p, ASTMT_EV_PRUNE, "events.prune", "event(s)");
}

static int prune(rls_db *db, rls_tx_fn fn, int64_t before, int64_t now, int64_t *deleted)
{
    struct bulk b = {NULL, now, before, 0, 0, NULL};
    int rc = db ? check_time(db, before) : RLS_EINVAL;
    if (rc == RLS_OK && before > now)
        rc = rls__error(db, RLS_EINVAL, "cannot prune rows newer than now");
    if (rc == RLS_OK) {
        int rc2 = rls__db_usable(db);
        if (rc2 || (rc2 = check_time(db, now)) || (rc2 = rls__rules_writable(db)))
            rc = rc2;
    }
    if (rc == RLS_OK) {
        db->errmsg[0] = '\0';
        sql_durable(db, 1);
        rc = rls__write_tx(db, fn, &b);   /* one transaction: split too */
        rls__durable_restore(db);
    }
    if (deleted)
        *deleted = rc == RLS_OK ? b.count : 0;
    return rc;
}

int rls_audit_prune_at(rls_db *db, int64_t before_ms, int64_t now_ms, int64_t *deleted)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return prune(db, audit_prune_fn, before_ms, now_ms, deleted);
}

int rls_events_prune_at(rls_db *db, int64_t before_ms, int64_t now_ms, int64_t *deleted)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return prune(db, events_prune_fn, before_ms, now_ms, deleted);
}

/* ---- the listing of events ------------------------------------------------ */

int rls_events_list_at(rls_db *db, const char *action, const char *key, const char *event,
                       int64_t since_ms, int limit, rls_rows **out)
{
    static const rows_col cols[] = {
        {"id", RLS_COL_INT},     {"ts_ms", RLS_COL_INT},    {"event", RLS_COL_TEXT},
        {"action", RLS_COL_TEXT}, {"key", RLS_COL_TEXT},    {"rule", RLS_COL_TEXT},
        {"level", RLS_COL_INT},  {"until_ms", RLS_COL_INT},
    };
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    if (!db)
        return RLS_EINVAL;
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    if (limit < 1 || limit > 100000)
        return rls__error(db, RLS_EINVAL, "limit %d is outside 1..100000", limit);
    if (since_ms < 0 || since_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "since %lld ms is outside 1970..9999",
                          (long long)since_ms);
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    rls_stmt *st = rls__astmt(db, ASTMT_EV_LIST);
    if (!st) {
        rls__rollback(db);
        return rls__stmt_failed(db);
    }
    bind_action(st, 1, action);
    if (key)
        sql_bind_blob(st, 2, key, (int)strlen(key), SQL_STATIC);
    else
        sql_bind_null(st, 2);
    bind_action(st, 3, event);
    sql_bind_int64(st, 4, since_ms);
    sql_bind_int64(st, 5, limit);
    rc = rls__rows_from_stmt(db, st, cols, 8, out);
    sql_clear_bindings(st);
    return rls__listing_end(db, rc, out);
}
