/*
 * check.c - the check transaction and its relatives: rls_check, rls_peek,
 * rls_refund and reservations (reserve, commit, cancel).
 *
 * One BEGIN IMMEDIATE transaction per call: refresh the rule cache, read the
 * key's policy and every limit's state, let core decide, write the states
 * only if the decision charges, record stats, do a bounded GC step, commit.
 * A peek uses a read transaction and writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "keyctx.h"
#include "penalty.h"

enum check_op { OP_CHECK = 0, OP_PEEK = 1, OP_RESERVE = 2 };

#define GC_STEP_ROWS 64       /* state rows examined per step */
/* PostgreSQL: a step's cost is its round trips more than its rows, so it
 * runs this many times as seldom over as many times the rows */
#define GC_PG_FACTOR 8

static uint32_t gc_every(const rls_db *db)
{
    return db->pg ? RLS_GC_EVERY_WRITES * GC_PG_FACTOR : RLS_GC_EVERY_WRITES;
}

/* The failure policy for this call: the action's, else the rules', else
 * the handle's. */
static int policy_allows(rls_db *db, const char *action)
{
    const rule_action *a = db->rc.rules && action ? rls__ruleset_action(db->rc.rules, action) : NULL;
    if (a && a->on_error != ONERR_INHERIT)
        return a->on_error == ONERR_ALLOW;
    if (db->rc.rules && db->rc.rules->on_error != ONERR_INHERIT)
        return db->rc.rules->on_error == ONERR_ALLOW;
    return db->ident.opt.on_error == RLS_ON_ERROR_ALLOW;
}

static int is_storage_failure(int rc)
{
    return rc == RLS_EBUSY || rc == RLS_EIO || rc == RLS_EFULL || rc == RLS_ECORRUPT ||
           rc == RLS_ESTORAGE || rc == RLS_ENOMEM || rc == RLS_EREADONLY ||
           rc == RLS_ENORULES || rc == RLS_ECONFIG || rc == RLS_EMISUSE ||
           rc == RLS_ENOTDB || rc == RLS_ECANTOPEN;
}

/* Failures of the database itself, as opposed to rules or input. */
static int is_io_failure(int rc)
{
    return rc == RLS_EBUSY || rc == RLS_EIO || rc == RLS_EFULL || rc == RLS_ECORRUPT ||
           rc == RLS_ESTORAGE || rc == RLS_ENOMEM || rc == RLS_EREADONLY;
}

/* Imposes the limit's block_for penalty: the step core chooses from the
 * key's own block row (core/penalty.c). */
static int impose_penalty(rls_db *db, key_ctx *ctx, int idx, int64_t now,
                          rls_result *res)
{
    const rule_limit *def = ctx->rl[idx].def;
    const penalty_prev prev = {ctx->pen_found, ctx->pen_kind, ctx->pen_level,
                               ctx->pen_forget};
    penalty_step pen;
    rls__penalty_next(def, &prev, now, &pen);

    rls_stmt *st = rls__stmt(db, STMT_PENALTY_PUT);
    if (!st)
        return rls__stmt_failed(db);
    db->trust.policy_none = 0;  /* no longer (cache.c) */
    sql_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_text(st, 2, ctx->act->name, -1, SQL_STATIC);
    sql_bind_int64(st, 3, pen.until_ms);
    sql_bind_int64(st, 4, pen.level);
    sql_bind_int64(st, 5, pen.forget_ms);
    sql_bind_text(st, 6, def->name, -1, SQL_STATIC);
    sql_bind_int64(st, 7, now);
    int rc = sql_step(st);
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot write penalty block");
    rls__penalty_raise(res, pen.dur_ms);
    return RLS_OK;
}

static int add_reservation(rls_db *db, key_ctx *ctx, int64_t cost, int64_t now,
                           int64_t ttl, int64_t *id)
{
    unsigned char lids[RESOLVE_MAX_LIMITS * 8];
    size_t n = 0;
    for (int i = 0; i < ctx->n; i++) {
        if (!ctx->items[i].changed)
            continue;
        uint64_t v = (uint64_t)ctx->rl[i].def->id;
        for (int b = 0; b < 8; b++)
            lids[n++] = (unsigned char)(v >> (8 * b));
    }
    rls_stmt *st = rls__stmt(db, STMT_RES_ADD);
    if (!st)
        return rls__stmt_failed(db);
    db->trust.res_none = 0;  /* no longer (cache.c) */
    sql_bind_text(st, 1, ctx->act->name, -1, SQL_STATIC);
    sql_bind_blob(st, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_int64(st, 3, cost);
    sql_bind_int64(st, 4, now);
    sql_bind_int64(st, 5, rls__time_end(now, ttl));
    sql_bind_blob(st, 6, lids, (int)n, SQL_TRANSIENT);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *id = sql_column_int64(st, 0);
    sql_reset(st);
    if (rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot write reservation");
    return RLS_OK;
}

/*
 * Work a write transaction does on the side: stats and a bounded GC step.
 * It runs in a savepoint: if it fails, its changes are undone and the check
 * itself still commits, so housekeeping can never fail a check.  GC uses the
 * earlier of the caller's time and the real clock, so one caller whose
 * clock runs ahead cannot expire everyone's state.
 */
static int stats_due(const rls_db *db, int64_t now)
{
    return (db->stats.nstats > 0 || rls__keystat_pending(db)) &&
           (now - db->stats.stats_flushed_ms >= 1000 || now < db->stats.stats_flushed_ms);
}

int rls__housekeeping_due(const rls_db *db, int64_t now)
{
    return db->stats.writes_since_gc + 1 >= gc_every(db) || stats_due(db, now);
}

static int housekeeping(rls_db *db, int64_t now)
{
    int gc = ++db->stats.writes_since_gc >= gc_every(db);
    int stats = stats_due(db, now);
    int64_t real;
    if (!gc && !stats)
        return RLS_OK;
    int src = rls__exec_simple(db, STMT_HK_SAVE);
    if (src != RLS_OK)
        return !sql_in_tx(db) ? src : RLS_OK;
    int64_t horizon = db->trust.gc_horizon;
    int rc = stats ? rls__stats_flush(db, now, 0) : RLS_OK;
    if (rc == RLS_OK && gc) {
        db->stats.writes_since_gc = 0;
        if (rls__now(&real) != RLS_OK || real > now)
            real = now;
        rc = rls__gc_step(db, real, db->pg ? GC_STEP_ROWS * GC_PG_FACTOR : GC_STEP_ROWS, NULL);
    }
    if (rc != RLS_OK && !sql_in_tx(db)) {
        /* SQLite rolled back the whole transaction (SQLITE_NOMEM, IOERR or
         * FULL in a statement): the check's own writes are gone too */
        db->trust.gc_horizon = horizon;
        return rc;
    }
    if (rc != RLS_OK) {
        rls__exec_simple(db, STMT_HK_UNDO);
        db->trust.gc_horizon = horizon;  /* as the undone rls_meta row has it */
    }
    rls__exec_simple(db, STMT_HK_RELEASE);
    db->errmsg[0] = '\0';
    return RLS_OK;
}

/* Does the key hold no reservation of this action?  Then none can expire
 * and give units back to it before a denial's retry time: one made later
 * only returns what it took later (deny.c).  0 on any doubt. */
static int no_reservation_of_key(rls_db *db, const key_ctx *ctx)
{
    rls_stmt *st;
    if (rls__no_reservations(db))
        return 1;
    if (!(st = rls__stmt(db, STMT_RES_EXPIRED_KEY)))
        return 0;
    sql_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_text(st, 2, ctx->act->name, -1, SQL_STATIC);
    sql_bind_int64(st, 3, INT64_MAX);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE;
}

/* Refunds this key's reservations whose TTL has passed, before the check
 * reads its states: an abandoned reservation gives its units back at the
 * key's next check at the latest. */
static int refund_expired(rls_db *db, const key_ctx *ctx, int64_t now)
{
    rls_stmt *st;
    int64_t ids[16];
    int n = 0, rc, found;
    if (rls__no_reservations(db))
        return RLS_OK;   /* none at all (cache.c) */
    if (!(st = rls__stmt(db, STMT_RES_EXPIRED_KEY)))
        return rls__stmt_failed(db);
    sql_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_text(st, 2, ctx->act->name, -1, SQL_STATIC);
    sql_bind_int64(st, 3, now);
    while ((rc = sql_step(st)) == SQL_ROW && n < 16)
        ids[n++] = sql_column_int64(st, 0);
    sql_reset(st);
    if (rc != SQL_DONE && rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot read reservations");
    for (int i = 0; i < n; i++)
        if ((rc = rls__refund_reservation(db, ids[i], now, &found)))
            return rc;
    return RLS_OK;
}

/* Does the lids list of a reservation (int64 LE each) hold id? */
static int lids_have(const unsigned char *lids, size_t nlids, int64_t id)
{
    for (size_t j = 0; j + 8 <= nlids; j += 8) {
        uint64_t v = 0;
        for (int b = 0; b < 8; b++)
            v |= (uint64_t)lids[j + (size_t)b] << (8 * b);
        if (v == (uint64_t)id)
            return 1;
    }
    return 0;
}

/*
 * A peek (rls_peek, explain, usage) decides as the key's next check would:
 * that check first gives back the key's expired reservations
 * (refund_expired), so the peek gives them back to the states it read, in
 * memory, and writes nothing.  ctx's states are read.
 */
int rls__peek_refunds(rls_db *db, key_ctx *ctx, int64_t now)
{
    rls_stmt *st;
    int rc;
    if (rls__no_reservations(db) || ctx->n == 0)
        return RLS_OK;
    if (!(st = rls__astmt(db, ASTMT_RES_EXPIRED_PEEK)))
        return rls__stmt_failed(db);
    sql_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_text(st, 2, ctx->act->name, -1, SQL_STATIC);
    sql_bind_int64(st, 3, now);
    while ((rc = sql_step(st)) == SQL_ROW) {
        decide_item sub[RESOLVE_MAX_LIMITS];
        int m = 0;
        int64_t cost = sql_column_int64(st, 0), created = sql_column_int64(st, 1);
        const unsigned char *lids = sql_column_blob(st, 2);
        size_t nlids = (size_t)sql_column_bytes(st, 2);
        for (int i = 0; i < ctx->n; i++)
            if (lids && lids_have(lids, nlids, ctx->rl[i].def->id))
                sub[m++] = ctx->items[i];
        if (m > 0 && cost > 0)
            rls__decide_refund(sub, m, now, 0, created, cost);
    }
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot read reservations");
}

/*
 * Does this action have a limit that asks for an fsync of every commit
 * (durability: full)?  Decided from the handle's cached rules before the
 * transaction starts, because SQLite refuses to change the synchronous
 * level inside one.  A handle that has no rules cached yet loads them first.
 * (After a rule change by another process, the first check that reloads
 * the rules still commits at the handle's level.)
 */
static int wants_full_sync(rls_db *db, const char *action)
{
    const rule_action *a;
    if (db->ident.opt.durability == RLS_DURABILITY_FULL)
        return 0;  /* every commit is synced anyway */
    if (db->rc.rules_gen < 0 && rls__begin(db, 0) == RLS_OK) {
        if (rls__cache_refresh(db) == RLS_OK)
            rls__commit(db);
        else
            rls__rollback(db);
        db->errmsg[0] = '\0';
    }
    if (!db->rc.rules || !(a = rls__ruleset_action(db->rc.rules, action)))
        return 0;
    for (int t = -1; t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int i = 0; i < n; i++)
            if (ls[i].durability == DURA_FULL)
                return 1;
    }
    return 0;
}

static int check_tx_body(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                         int64_t cost, int64_t now, int op, int64_t ttl, int64_t *id,
                         rls_result *res);

/* A check counted in the stats whose transaction then failed did not
 * happen (or, its COMMIT lost, may have: stats may lose, never count
 * twice): the count is taken back, so that the transaction run again
 * (PostgreSQL's retries) counts it once.  A flush that took it already
 * went with the rolled-back transaction. */
static void uncount(rls_db *db, const key_ctx *ctx, int64_t now, const rls_result *res,
                    int counted, int noted)
{
    if (counted)
        rls__stats_uncount(db, ctx->act->name, now, res->allowed);
    if (noted)
        rls__keystat_unnote(db, ctx->act->name, ctx->key, ctx->keylen, res);
}

/* One check, peek or reservation, fsynced when a limit asks for it. */
static int check_tx(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                    int64_t cost, int64_t now, int op, int64_t ttl, int64_t *id,
                    rls_result *res)
{
    int full = op != OP_PEEK && wants_full_sync(db, action);
    if (full)
        sql_durable(db, 1);
    int rc, attempt = 0;
    if (op == OP_CHECK && !full && db->pg &&
        (rc = rls__pg_fast_check(db, ctx, action, key, cost, now, res)) != RLS__FAST_PASS)
        return rc;   /* one round trip (pg_fast.c) */
    do {
        rc = check_tx_body(db, ctx, action, key, cost, now, op, ttl, id, res);
    } while (rls__tx_retry(db, rc, &attempt));
    if (full)
        rls__durable_restore(db);
    return rc;
}

static int check_tx_body(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                         int64_t cost, int64_t now, int op, int64_t ttl, int64_t *id,
                         rls_result *res)
{
    int charge = op != OP_PEEK;
    decide_out dout, *decided = &dout;
    int rc, states_read = 0, counted = 0, noted = 0;

    ctx->n = 0;
    if ((rc = rls__begin(db, charge)))
        return rc;
    db->trust.in_check = charge;  /* may trust what it knew (cache.c) */
    db->conn.check_tx = charge;  /* commits no give-back (deny.c) */
    if ((rc = rls__keyctx_load(db, ctx, action, key, 0, now)))
        goto fail;
    if (charge && (rc = refund_expired(db, ctx, now)))
        goto fail;

    if (ctx->block.active || ctx->behaviour == TIER_BLOCKED) {
        rls__decide_blocked(res, now, ctx->block.active ? ctx->block.until_ms : 0,
                       ctx->block.active ? ctx->block.rule : "");
        decided = NULL;
    } else {
        if ((rc = rls__keyctx_read_states(db, ctx)) ||
            (!charge && (rc = rls__peek_refunds(db, ctx, now))))
            goto fail;
        states_read = 1;
        if (rls__decide_check(ctx->items, ctx->n, ctx->behaviour, now, 0, cost,
                         charge, res, &dout) != 0) {
            rc = rls__error(db, RLS_ECONFIG, "action '%s' has a limit the engine refuses",
                            action);
            goto fail;
        }
        if (charge && (rc = rls__keyctx_write_states(db, ctx)))
            goto fail;
        if (charge && dout.penalty >= 0 &&
            (rc = impose_penalty(db, ctx, dout.penalty, dout.now, res)))
            goto fail;
        if (op == OP_RESERVE && res->allowed &&
            (rc = add_reservation(db, ctx, cost, dout.now, ttl, id)))
            goto fail;
        ctx->deny_nores = charge && !res->allowed && ctx->deny_usable &&
                          no_reservation_of_key(db, ctx);
    }
    if (charge) {
        counted = rls__stats_count(db, ctx->act->name, now, res->allowed);
        noted = rls__keystat_note(db, ctx->act->name, ctx->key, ctx->keylen, res, now);
        if ((rc = housekeeping(db, now)))
            goto fail;
    }
    db->trust.in_check = 0;
    rc = rls__commit(db);
    if (rc != RLS_OK)
        uncount(db, ctx, now, res, counted, noted);
    if (rc == RLS_OK && charge && db->pg)
        rls__pg_fast_learn(db, ctx, states_read);   /* the next check's flight */
    if (rc == RLS_OK && charge) {
        rls__cache_validate(db);
        rls__deny_note(db, action, key, ctx->deny_fp, ctx->deny_gen, ctx->deny_usable, ctx,
                       decided, cost, now, res);
    }
    rls__keyctx_release(ctx);
    return rc;
fail:
    db->trust.in_check = 0;
    uncount(db, ctx, now, res, counted, noted);
    rls__keyctx_release(ctx);
    rls__rollback(db);
    return rc;
}

static int check_common(rls_db *db, const char *action, const char *key, int64_t cost,
                        int64_t now, int op, int64_t ttl, int64_t *id, rls_result *res)
{
    key_ctx *ctx;
    uint64_t fp = 0, gen = 0;
    int rc, usable = 0;

    if (!res)
        return db ? rls__error(db, RLS_EINVAL, "result is NULL") : RLS_EINVAL;
    if (id)
        *id = 0;
    rc = rls__keyctx_args(db, action, key, cost, now);
    if (rc == RLS_OK && op == OP_RESERVE && (ttl < 1 || ttl > RLS_TIME_MAX))
        rc = rls__error(db, RLS_EINVAL, "reservation ttl %lld ms is out of range",
                        (long long)ttl);
    if (rc != RLS_OK) {
        /* Invalid input is never admitted; a handle that cannot reach its
         * database (a failed reopen after fork) follows the policy. */
        rls__decide_degraded(res, db && is_storage_failure(rc) && policy_allows(db, action));
        return rc;
    }
    if (op != OP_PEEK && rls__deny_lookup(db, action, key, cost, now, res, &fp, &gen, &usable))
        return RLS_OK;  /* a denial that cannot have changed (deny.c) */
    ctx = malloc(sizeof *ctx);
    if (!ctx) {
        rls__decide_degraded(res, policy_allows(db, action));
        return rls__error(db, RLS_ENOMEM, "out of memory");
    }
    ctx->deny_fp = fp;
    ctx->deny_gen = gen;
    ctx->deny_usable = usable;
    ctx->deny_nores = 0;
    rc = check_tx(db, ctx, action, key, cost, now, op, ttl, id, res);
    free(ctx);
    if (rc != RLS_OK) {
        if (id)
            *id = 0;
        rls__decide_degraded(res, is_storage_failure(rc) && policy_allows(db, action));
    }
    return rc;
}

int rls_check_at(rls_db *db, const char *action, const char *key, int64_t cost,
                 int64_t now_ms, rls_result *res)
{
    return check_common(db, action, key, cost, now_ms, OP_CHECK, 0, NULL, res);
}

int rls_check(rls_db *db, const char *action, const char *key, int64_t cost,
              rls_result *res)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return check_common(db, action, key, cost, now, OP_CHECK, 0, NULL, res);
}

int rls_peek_at(rls_db *db, const char *action, const char *key, int64_t cost,
                int64_t now_ms, rls_result *res)
{
    return check_common(db, action, key, cost, now_ms, OP_PEEK, 0, NULL, res);
}

int rls_peek(rls_db *db, const char *action, const char *key, int64_t cost,
             rls_result *res)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return check_common(db, action, key, cost, now, OP_PEEK, 0, NULL, res);
}

int rls_reserve_at(rls_db *db, const char *action, const char *key, int64_t cost,
                   int64_t ttl_ms, int64_t now_ms, int64_t *id, rls_result *res)
{
    if (!id) {
        if (res)
            rls__decide_degraded(res, 0);
        return db ? rls__error(db, RLS_EINVAL, "id is NULL") : RLS_EINVAL;
    }
    return check_common(db, action, key, cost, now_ms, OP_RESERVE, ttl_ms, id, res);
}

int rls_reserve(rls_db *db, const char *action, const char *key, int64_t cost,
                int64_t ttl_ms, int64_t *id, rls_result *res)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return rls_reserve_at(db, action, key, cost, ttl_ms, now, id, res);
}

/* ---- refunds ---------------------------------------------------------- */

/* Units in use of each item at now (a peek of cost 1: algo_meta.used). */
static int items_in_use(rls_db *db, key_ctx *ctx, int64_t now, int64_t *used)
{
    rls_result res;
    decide_out dout;
    unsigned char changed[RESOLVE_MAX_LIMITS];
    for (int i = 0; i < ctx->n; i++)
        changed[i] = (unsigned char)ctx->items[i].changed;
    if (rls__decide_check(ctx->items, ctx->n, TIER_NORMAL, now, 0, 1, 0, &res,
                     &dout) != 0)
        return -1;
    for (int i = 0; i < ctx->n; i++) {
        used[i] = ctx->items[i].meta.used;
        ctx->items[i].changed = changed[i];   /* a peek changes nothing */
    }
    return 0;
}

/* Refunds `cost` charged at charged_at to the limits of (action, key); with
 * lids != NULL only to the limits whose ids are listed.  With given != NULL,
 * *given receives the units given back: the most any limit got back (a
 * limit whose window ended, or with less in use, gets back less). */
static int refund_in_tx(rls_db *db, const char *action, const char *key, int normalised,
                        int64_t cost, int64_t charged_at, int64_t now,
                        const unsigned char *lids, size_t nlids, int64_t *given)
{
    int64_t before[RESOLVE_MAX_LIMITS], after[RESOLVE_MAX_LIMITS];
    key_ctx *ctx = malloc(sizeof *ctx);
    int rc;
    if (!ctx)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    rc = rls__keyctx_load(db, ctx, action, key, normalised, now);
    if (rc == RLS_OK && lids) {
        int m = 0;
        for (int i = 0; i < ctx->n; i++)
            if (lids_have(lids, nlids, ctx->rl[i].def->id))
                ctx->rl[m++] = ctx->rl[i];
        ctx->n = m;
    }
    if (rc == RLS_OK)
        rc = rls__keyctx_read_states(db, ctx);
    if (rc == RLS_OK && ((given && items_in_use(db, ctx, now, before) != 0) ||
                         rls__decide_refund(ctx->items, ctx->n, now, 0, charged_at, cost) != 0 ||
                         (given && items_in_use(db, ctx, now, after) != 0)))
        rc = rls__error(db, RLS_ECONFIG, "action '%s' has a limit the engine refuses", action);
    for (int i = 0; rc == RLS_OK && given && i < ctx->n; i++)
        if (before[i] - after[i] > *given)
            *given = before[i] - after[i];
    if (rc == RLS_OK)
        rc = rls__keyctx_write_states(db, ctx);
    rls__keyctx_release(ctx);
    free(ctx);
    return rc;
}

struct refund_arg {
    const char *action, *key;
    int64_t cost, now;
    int64_t *given;
};

static int refund_fn(rls_db *db, void *p)
{
    const struct refund_arg *a = p;
    *a->given = 0;   /* a transaction run again counts again */
    return refund_in_tx(db, a->action, a->key, 0, a->cost, a->now, a->now, NULL, 0, a->given);
}

int rls_refund_units_at(rls_db *db, const char *action, const char *key, int64_t cost,
                        int64_t now_ms, int64_t *refunded)
{
    int64_t given = 0;
    if (refunded)
        *refunded = 0;
    int rc = rls__keyctx_args(db, action, key, cost, now_ms);
    if (rc)
        return rc;
    struct refund_arg a = {action, key, cost, now_ms, &given};
    rc = rls__write_tx(db, refund_fn, &a);
    if (rc == RLS_OK && refunded)
        *refunded = given;
    return rc;
}

int rls_refund_units(rls_db *db, const char *action, const char *key, int64_t cost,
                     int64_t *refunded)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return rls_refund_units_at(db, action, key, cost, now, refunded);
}

int rls_refund_at(rls_db *db, const char *action, const char *key, int64_t cost,
                  int64_t now_ms)
{
    return rls_refund_units_at(db, action, key, cost, now_ms, NULL);
}

int rls_refund(rls_db *db, const char *action, const char *key, int64_t cost)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return rls_refund_at(db, action, key, cost, now);
}

/*
 * Refunds reservation `id` and deletes it (inside a transaction).  *found is
 * 0 if there is no such reservation.  A reservation whose action or key no
 * longer resolves is deleted without a refund.
 */
int rls__refund_reservation(rls_db *db, int64_t id, int64_t now, int *found)
{
    rls_stmt *st = rls__stmt(db, STMT_RES_GET);
    char action[RLS_NAME_MAX + 1], *key = NULL;
    unsigned char *lids = NULL;
    size_t nlids = 0;
    int64_t cost = 0, created = 0;
    int rc;

    *found = 0;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, id);
    rc = sql_step(st);
    if (rc == SQL_ROW) {
        *found = 1;
        snprintf(action, sizeof action, "%s", (const char *)sql_column_text(st, 0));
        int kb = sql_column_bytes(st, 1);
        key = malloc((size_t)kb + 1);
        nlids = (size_t)sql_column_bytes(st, 5);
        lids = malloc(nlids + 1);
        if (key && lids) {
            if (kb)
                memcpy(key, sql_column_blob(st, 1), (size_t)kb);
            key[kb] = '\0';
            if (nlids)
                memcpy(lids, sql_column_blob(st, 5), nlids);
        }
        cost = sql_column_int64(st, 2);
        created = sql_column_int64(st, 3);
    }
    sql_reset(st);
    if (rc != SQL_ROW) {
        return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot read reservation");
    }
    if (!key || !lids) {
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
        goto out;
    }
    rc = refund_in_tx(db, action, key, 1, cost, created, now, lids, nlids, NULL);
    if (rc != RLS_OK && !is_io_failure(rc)) {
        /* The rules changed under it (action gone, limits refused): there
         * is nothing left to refund, and keeping the row would make every
         * later attempt fail again. */
        db->errmsg[0] = '\0';
        rc = RLS_OK;
    }
    if (rc == RLS_OK) {
        db->conn.gave_back = 1;  /* units back: cached denials are stale (deny.c) */
        rls_stmt *del = rls__stmt(db, STMT_RES_DEL);
        if (!del) {
            rc = rls__stmt_failed(db);
            goto out;
        }
        sql_bind_int64(del, 1, id);
        int src = sql_step(del);
        sql_reset(del);
        if (src != SQL_DONE)
            rc = rls__sql_error(db, src, "cannot delete reservation");
    }
out:
    free(key);
    free(lids);
    return rc;
}

struct resolve_arg {
    int64_t id, now;
    int refund;
    int expired;   /* out: a commit found it expired and refunded it */
};

/* commit (refund == 0) or cancel (refund == 1) reservation id, in a
 * transaction. */
static int resolve_fn(rls_db *db, void *p)
{
    struct resolve_arg *a = p;
    rls_stmt *st = rls__stmt(db, STMT_RES_GET);
    int64_t expires = 0;
    int found = 0, rc;
    a->expired = 0;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, a->id);
    int src = sql_step(st);
    if (src == SQL_ROW) {
        found = 1;
        expires = sql_column_int64(st, 4);
    }
    sql_reset(st);
    if (src != SQL_ROW && src != SQL_DONE)
        return rls__sql_error(db, src, "cannot read reservation");
    if (!found)
        return rls__error(db, RLS_ENOTFOUND, "reservation %lld does not exist (committed, "
                          "cancelled or expired and collected)", (long long)a->id);
    if (expires <= a->now || a->refund) {
        if ((rc = rls__refund_reservation(db, a->id, a->now, &found)))
            return rc;
        a->expired = !a->refund;   /* refunded now, and the caller learns it */
        return RLS_OK;
    }
    rls_stmt *del = rls__stmt(db, STMT_RES_DEL);
    if (!del)
        return rls__stmt_failed(db);
    sql_bind_int64(del, 1, a->id);
    src = sql_step(del);
    sql_reset(del);
    return src == SQL_DONE ? RLS_OK : rls__sql_error(db, src, "cannot delete reservation");
}

static int resolve_reservation(rls_db *db, int64_t id, int64_t now, int refund)
{
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if (id < 1)
        return rls__error(db, RLS_EINVAL, "reservation id %lld is invalid", (long long)id);
    if (now < RLS_TIME_MIN || now > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now);
    struct resolve_arg a = {id, now, refund, 0};
    if ((rc = rls__write_tx(db, resolve_fn, &a)))
        return rc;
    if (a.expired)
        return rls__error(db, RLS_EEXPIRED, "reservation %lld expired and was refunded",
                          (long long)id);
    return RLS_OK;
}

int rls_commit_at(rls_db *db, int64_t id, int64_t now_ms)
{
    return resolve_reservation(db, id, now_ms, 0);
}

int rls_commit(rls_db *db, int64_t id)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return resolve_reservation(db, id, now, 0);
}

int rls_cancel_at(rls_db *db, int64_t id, int64_t now_ms)
{
    return resolve_reservation(db, id, now_ms, 1);
}

int rls_cancel(rls_db *db, int64_t id)
{
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return resolve_reservation(db, id, now, 1);
}
