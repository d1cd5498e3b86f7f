/*
 * check.c - the check pipeline: rls_check, rls_peek and rls_reserve, top
 * to bottom in check_pipeline():
 *
 *   validate -> denial cache (deny.c) -> plan (the key, durability) ->
 *   the backend's check step (read states -> core decides -> write ->
 *   housekeeping) -> result (the failure policy) -> cache notes.
 *
 * The step is the backend's (check.h): the generic one here is a single
 * transaction (BEGIN IMMEDIATE on SQLite, run again on PostgreSQL when
 * rls__tx_retry says), PostgreSQL's one round trip is in pg/pg_fast.c;
 * both decide with rls__check_decide.  A peek reads in a read transaction
 * and writes nothing.  Refunds and a reservation's end are in refund.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "check.h"
#include "events.h"
#include "memclass.h"

/* The failure policy for this call: the action's, else the rules', else
 * the handle's (core/rules.c). */
int rls__check_policy_allows(rls_db *db, const char *action)
{
    return rls__on_error_allows(db->rc.rules, action,
                                db->ident.opt.on_error == RLS_ON_ERROR_ALLOW);
}

int rls__check_is_storage_failure(int rc)
{
    return rc == RLS_EBUSY || rc == RLS_EIO || rc == RLS_EFULL || rc == RLS_ECORRUPT ||
           rc == RLS_ESTORAGE || rc == RLS_ENOMEM || rc == RLS_EREADONLY ||
           rc == RLS_ENORULES || rc == RLS_ECONFIG || rc == RLS_EMISUSE ||
           rc == RLS_ENOTDB || rc == RLS_ECANTOPEN;
}

/* Writes an admitted reservation's row: its cost on the limits it
 * charged, until now + ttl. */
static int add_reservation(rls_db *db, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    int64_t now = call->dout.now;
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
    rls__cache_reservation_written(db);
    sql_bind_text(st, 1, ctx->act->name, -1, SQL_STATIC);
    sql_bind_blob(st, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_int64(st, 3, call->cost);
    sql_bind_int64(st, 4, now);
    sql_bind_int64(st, 5, rls__time_end(now, call->ttl));
    sql_bind_blob(st, 6, lids, (int)n, SQL_TRANSIENT);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *call->id = sql_column_int64(st, 0);
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
int rls__housekeeping_due(const rls_db *db, int64_t now)
{
    return rls__gc_due(db) || rls__stats_due(db, now);
}

int rls__check_housekeeping(rls_db *db, int64_t now)
{
    int gc = rls__gc_tick(db);
    int stats = rls__stats_due(db, now);
    int64_t real;
    if (!gc && !stats)
        return RLS_OK;
    int src = rls__exec_simple(db, STMT_HK_SAVE);
    if (src != RLS_OK)
        return !sql_in_tx(db) ? src : RLS_OK;
    int64_t horizon = rls__cache_horizon(db);
    int rc = stats ? rls__stats_flush(db, now, 0) : RLS_OK;
    if (rc == RLS_OK && gc) {
        if (rls__now(&real) != RLS_OK || real > now)
            real = now;
        rc = rls__gc_step_scheduled(db, real);
    }
    if (rc != RLS_OK && !sql_in_tx(db)) {
        /* SQLite rolled back the whole transaction (out of memory, an I/O
         * error or a full disk in a statement): the check's own writes are gone too */
        rls__cache_horizon_set(db, horizon);
        return rc;
    }
    if (rc != RLS_OK) {
        rls__exec_simple(db, STMT_HK_UNDO);
        rls__cache_horizon_set(db, horizon);  /* as the undone rls_meta row has it */
    }
    rls__exec_simple(db, STMT_HK_RELEASE);
    db->errmsg[0] = '\0';
    return RLS_OK;
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
    a = db->rc.rules ? rls__ruleset_action(db->rc.rules, action) : NULL;
    return rls__action_wants_full(a);
}

/* A check counted in the stats whose transaction then failed did not
 * happen (or, its COMMIT lost, may have: stats may lose, never count
 * twice): the count is taken back, so that the transaction run again
 * (PostgreSQL's retries) counts it once.  A flush that took it already
 * went with the rolled-back transaction. */
void rls__check_uncount(rls_db *db, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    if (call->counted)
        rls__stats_uncount(db, ctx->act->name, call->now, call->res->allowed);
    if (call->noted)
        rls__keystat_unnote(db, ctx->act->name, ctx->key, ctx->keylen, call->res);
}

/* ---- decide: the same for every backend's check step ------------------ */

int rls__check_decide(rls_db *db, struct check_call *call, int64_t floor_ms)
{
    key_ctx *ctx = call->ctx;
    int charge = call->op != CHECK_OP_PEEK;

    call->penalty = 0;
    call->blocked = rls__check_is_blocked(ctx);
    if (call->blocked) {
        rls__decide_blocked(call->res, call->now, ctx->block.active ? ctx->block.until_ms : 0,
                            ctx->block.active ? ctx->block.rule : "");
        return RLS_OK;
    }
    if (rls__decide_check(ctx->items, ctx->n, ctx->behaviour, call->now, floor_ms, call->cost,
                          charge, call->res, &call->dout) != 0)
        return rls__error(db, RLS_ECONFIG, "action '%s' has a limit the engine refuses",
                          call->action);
    if (charge && call->dout.penalty >= 0) {
        /* the limit's block_for: the step core chooses from the key's own
         * block row (core/penalty.c), and the wait it imposes */
        const penalty_prev prev = {ctx->pen_found, ctx->pen_kind, ctx->pen_level,
                                   ctx->pen_forget};
        rls__penalty_next(ctx->rl[call->dout.penalty].def, &prev, call->dout.now, &call->pen);
        rls__penalty_raise(call->res, call->pen.dur_ms);
        call->penalty = 1;
    }
    return RLS_OK;
}

/* ---- the generic check step: one transaction -------------------------- */

/* Writes the penalty block core chose (rls__check_decide). */
static int write_penalty(rls_db *db, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    rls_stmt *st = rls__stmt(db, STMT_PENALTY_PUT);
    if (!st)
        return rls__stmt_failed(db);
    rls__cache_policy_written(db);
    int erc = rls__event_penalty(db, call);   /* events.c: its event, log line, count */
    if (erc)
        return erc;
    sql_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_text(st, 2, ctx->act->name, -1, SQL_STATIC);
    sql_bind_int64(st, 3, call->pen.until_ms);
    sql_bind_int64(st, 4, call->pen.level);
    sql_bind_int64(st, 5, call->pen.forget_ms);
    sql_bind_text(st, 6, ctx->rl[call->dout.penalty].def->name, -1, SQL_STATIC);
    sql_bind_int64(st, 7, call->dout.now);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot write penalty block");
}

/* Read: a charging call first gives back the key's expired reservations
 * (refund.c); then the states of its limits, unless a block answers (a
 * peek gives those reservations back in memory). */
int rls__check_read(rls_db *db, struct check_call *call)
{
    int charge = call->op != CHECK_OP_PEEK, rc;
    if (charge && (rc = rls__refund_expired(db, call->ctx, call->now)))
        return rc;
    if (rls__check_is_blocked(call->ctx))
        return RLS_OK;
    if ((rc = rls__keyctx_read_states(db, call->ctx)) ||
        (!charge && (rc = rls__peek_refunds(db, call->ctx, call->now))))
        return rc;
    call->states_read = 1;
    return RLS_OK;
}

/* Write what the decision asks for: the changed states, a penalty block,
 * an admitted reservation's row.  A peek writes nothing. */
int rls__check_write(rls_db *db, struct check_call *call)
{
    key_ctx *ctx = call->ctx;
    int rc;
    if (call->op == CHECK_OP_PEEK || call->blocked)
        return RLS_OK;
    if ((rc = rls__keyctx_write_states(db, ctx)) ||
        (call->penalty && (rc = write_penalty(db, call))))
        return rc;
    if (call->op == CHECK_OP_RESERVE && call->res->allowed &&
        (rc = add_reservation(db, call)))
        return rc;
    /* A plain check's commit bumps no generation (stmt.c); a penalty block
     * or a reservation it writes for an action with a memory-class limit
     * is a row every handle's fast path must see (memclass.c), in every
     * path that writes it (one check, a group, a batch).  Such rows of
     * other actions do not concern those actions' keys. */
    if ((call->penalty || (call->op == CHECK_OP_RESERVE && call->res->allowed)) &&
        rls__mem_action_has(db->rc.rules, call->action))
        rls__tx_gave_back(db);
    call->deny_nores = !call->res->allowed && call->deny_usable &&
                       rls__no_reservation_of_key(db, ctx);
    return RLS_OK;
}

/* The housekeeping stage of a charging check, inside its transaction:
 * counted in the stats and key stats, then stats flushed and a GC step
 * when due (housekeeping(): it never fails the check). */
void rls__check_count(rls_db *db, struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    call->counted = rls__stats_count(db, ctx->act->name, call->now, call->res->allowed);
    call->noted = rls__keystat_note(db, ctx->act->name, ctx->key, ctx->keylen, call->res,
                                    call->now);
}

static int housekeeping_stage(rls_db *db, struct check_call *call)
{
    if (call->op == CHECK_OP_PEEK)
        return RLS_OK;
    rls__check_count(db, call);
    return rls__check_housekeeping(db, call->now);
}

void rls__check_counted(rls_db *db, struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    rls__stats_count(db, ctx->act->name, call->now, call->res->allowed);
    rls__keystat_note(db, ctx->act->name, ctx->key, ctx->keylen, call->res, call->now);
    rls__gc_count_write(db);
}

/* One attempt of the generic step.  On success ctx keeps its states for
 * the cache notes (check_pipeline releases it); on failure nothing of the
 * attempt remains. */
static int check_tx_once(rls_db *db, struct check_call *call)
{
    int charge = call->op != CHECK_OP_PEEK, rc;

    call->states_read = call->counted = call->noted = call->committed = 0;
    call->ctx->n = 0;
    if ((rc = rls__begin(db, charge)))
        return rc;
    rls__cache_check_begin(db, charge);  /* may trust what it knew (cache.c) */
    rls__tx_mark_check(db, charge);      /* commits no give-back (deny.c) */
    if ((rc = rls__keyctx_reload(db, call->ctx, call->now)) ||   /* plan, in the tx */
        (charge && (rc = rls__mem_learn(db, call))) ||   /* memclass.c's fast path */
        (rc = rls__check_read(db, call)) ||
        (rc = rls__check_decide(db, call, 0)) ||
        (rc = rls__check_write(db, call)) ||
        (rc = housekeeping_stage(db, call))) {
        rls__cache_check_begin(db, 0);
        rls__check_uncount(db, call);
        rls__keyctx_release(call->ctx);
        rls__rollback(db);
        return rc;
    }
    rls__cache_check_begin(db, 0);
    if ((rc = rls__commit(db)) != RLS_OK) {
        rls__mem_trust(db, call);   /* a memory state moved: what it read stands */
        rls__check_uncount(db, call);
        rls__keyctx_release(call->ctx);
        return rc;
    }
    if (charge)
        rls__cache_validate(db);
    call->committed = charge;
    rls__mem_trust(db, call);
    return RLS_OK;
}

/* The fast path answering a run again (rls__check_tx): the trust it
 * needs may have been learned by the attempt that just failed, after the
 * pipeline's entry read of the clock, which would take that trust for one
 * learned in the future (memtrust.c refuses it): its age is measured from
 * a read made now. */
static int fast_after_conflict(rls_db *db, struct check_call *call, int *rc)
{
    call->mono_ns = rls__metrics_clock();
    return rls__mem_fast(db, call, rc);
}

int rls__check_tx(rls_db *db, struct check_call *call)
{
    int rc, attempt = 0;
    if (call->full_sync)
        sql_durable(db, 1);
    /* a transaction that failed because a memory-class state moved (a
     * fast-path check of another process on the same key) is run again,
     * or answered by the fast path when what it read lets it (memclass.c:
     * else a hot key's checks could starve it) */
    do {
        rc = check_tx_once(db, call);
    } while (rls__tx_retry(db, rc, &attempt) && !fast_after_conflict(db, call, &rc));
    if (call->full_sync)
        rls__durable_restore(db);
    return rc;
}

/* ---- the pipeline ------------------------------------------------------ */

/* Validate: the caller's arguments, a reservation's TTL. */
int rls__check_validate(rls_db *db, struct check_call *call)
{
    int rc = rls__keyctx_args(db, call->action, call->key, call->cost, call->now);
    if (rc == RLS_OK && call->op == CHECK_OP_RESERVE && (call->ttl < 1 || call->ttl > RLS_TIME_MAX))
        rc = rls__error(db, RLS_EINVAL, "reservation ttl %lld ms is out of range",
                        (long long)call->ttl);
    return rc;
}

/* Plan: the key normalised under the rules cached (done again in the
 * transaction only if they change: keyctx.h), and whether the commit is
 * to be fsynced.  Tier, limits and overrides are resolved (core/resolve.c)
 * by the step's load, from the policy rows its transaction reads. */
int rls__check_plan(rls_db *db, struct check_call *call)
{
    /* the handle's spare context (about 29 kB: a malloc and a free per
     * check otherwise); taken by exchange, so the calls of a thread-safe
     * handle that run at once each get their own */
    call->ctx = __atomic_exchange_n(&db->ctx_spare, NULL, __ATOMIC_ACQUIRE);
    if (!call->ctx && !(call->ctx = malloc(sizeof *call->ctx)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    call->ctx->n = 0;
    call->full_sync = call->op != CHECK_OP_PEEK && wants_full_sync(db, call->action);
    rls__keyctx_plan(db, call->ctx, call->action, call->key);
    return RLS_OK;
}

/* Result: a failed call answers by the failure policy.  Invalid input is
 * never admitted; a handle that cannot reach its database (a failed
 * reopen after fork) follows the policy. */
static void stage_result(rls_db *db, struct check_call *call, int rc)
{
    if (rc == RLS_OK)
        return;
    if (call->id)
        *call->id = 0;
    rls__decide_degraded(call->res, db && rls__check_is_storage_failure(rc) &&
                                        rls__check_policy_allows(db, call->action));
}

/* Cache notes: after a charging transaction's commit, the denial cache
 * learns the answer (deny.c). */
static void stage_cache_notes(rls_db *db, const struct check_call *call, int rc)
{
    if (rc == RLS_OK && call->committed)
        rls__deny_note(db, call);
}

/*
 * One check, peek or reservation, top to bottom.  The backend's step
 * reads the states, lets core decide (rls__check_decide), writes, runs the
 * housekeeping stage and commits.
 */
static int check_pipeline(rls_db *db, struct check_call *call)
{
    int rc;
    int64_t t0 = call->mono_ns = rls__metrics_clock();   /* metrics.c: the latency */
    if (!call->res)
        return db ? rls__error(db, RLS_EINVAL, "result is NULL") : RLS_EINVAL;
    if (call->id)
        *call->id = 0;
    rc = rls__check_validate(db, call);
    if (rc == RLS_OK && call->op != CHECK_OP_PEEK && rls__deny_lookup(db, call)) {
        rls__metrics_check(db, call, RLS_OK, t0);
        return RLS_OK;   /* a denial that cannot have changed (deny.c) */
    }
    if (rc == RLS_OK)
        rc = rls__check_plan(db, call);
    /* durability: memory limits only: the shared-memory table alone
     * (memclass.c); else the backend's step, the generic transaction when
     * a memory-class limit is in it (PostgreSQL's one round trip knows
     * only rows; SQLite's step is the generic one: no lookup needed) */
    if (rc == RLS_OK && !rls__mem_fast(db, call, &rc))
        rc = db->be->check_tx != rls__check_tx &&
                     rls__mem_action_has(db->rc.rules, call->action)
                 ? rls__check_tx(db, call)
                 : db->be->check_tx(db, call);
    stage_result(db, call, rc);
    stage_cache_notes(db, call, rc);
    rls__metrics_check(db, call, rc, t0);
    if (call->ctx) {
        key_ctx *none = NULL;
        rls__keyctx_release(call->ctx);
        if (!__atomic_compare_exchange_n(&db->ctx_spare, &none, call->ctx, 0,
                                         __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            free(call->ctx);   /* another call's is the spare already */
    }
    return rc;
}

static int check_common(rls_db *db, const char *action, const char *key, int64_t cost,
                        int64_t now, int op, int64_t ttl, int64_t *id, rls_result *res)
{
    struct check_call call;
    memset(&call, 0, sizeof call);
    call.action = action;
    call.key = key;
    call.cost = cost;
    call.now = now;
    call.op = op;
    call.ttl = ttl;
    call.id = id;
    call.res = res;
    if (rls__group_routes(db))
        return rls__group_check(db, &call);   /* a thread-safe handle (group.c) */
    return check_pipeline(db, &call);
}

/* A check the memory-class fast lane may answer (memlane.c): on a
 * thread-safe handle whose lock this thread does not hold, under that
 * lock rather than through a group (group.c). */
static int lane_check(rls_db *db, const char *action, const char *key, int64_t cost,
                      int64_t now, rls_result *res, int *rc)
{
    if (!db)
        return 0;
    if (db->group && rls__group_routes(db))
        return rls__mem_lane_shared(db, action, key, cost, now, res, rc);
    return rls__mem_lane_check(db, action, key, cost, now, res, rc);
}

int rls_check_at(rls_db *db, const char *action, const char *key, int64_t cost,
                 int64_t now_ms, rls_result *res)
{
    int rc;
    if (lane_check(db, action, key, cost, now_ms, res, &rc))
        return rc;
    return check_common(db, action, key, cost, now_ms, CHECK_OP_CHECK, 0, NULL, res);
}

int rls_check(rls_db *db, const char *action, const char *key, int64_t cost,
              rls_result *res)
{
    int rc;
    int64_t now = rls__now_or_invalid();
    if (lane_check(db, action, key, cost, now, res, &rc))
        return rc;
    return check_common(db, action, key, cost, now, CHECK_OP_CHECK, 0, NULL, res);
}

int rls_peek_at(rls_db *db, const char *action, const char *key, int64_t cost,
                int64_t now_ms, rls_result *res)
{
    return check_common(db, action, key, cost, now_ms, CHECK_OP_PEEK, 0, NULL, res);
}

int rls_peek(rls_db *db, const char *action, const char *key, int64_t cost,
             rls_result *res)
{
    return check_common(db, action, key, cost, rls__now_or_invalid(), CHECK_OP_PEEK, 0, NULL, res);
}

int rls_reserve_at(rls_db *db, const char *action, const char *key, int64_t cost,
                   int64_t ttl_ms, int64_t now_ms, int64_t *id, rls_result *res)
{
    if (!id) {
        if (res)
            rls__decide_degraded(res, 0);
        return db ? rls__error(db, RLS_EINVAL, "id is NULL") : RLS_EINVAL;
    }
    return check_common(db, action, key, cost, now_ms, CHECK_OP_RESERVE, ttl_ms, id, res);
}

int rls_reserve(rls_db *db, const char *action, const char *key, int64_t cost,
                int64_t ttl_ms, int64_t *id, rls_result *res)
{
    return rls_reserve_at(db, action, key, cost, ttl_ms, rls__now_or_invalid(), id, res);
}
