/*
 * refund.c - giving units back: rls_refund, a reservation's commit and
 * cancel, the expired reservations a check gives back before it reads the
 * key's states, and a peek's view of those.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "check.h"

/* Failures of the database itself, as opposed to rules or input. */
static int is_io_failure(int rc)
{
    return rc == RLS_EBUSY || rc == RLS_EIO || rc == RLS_EFULL || rc == RLS_ECORRUPT ||
           rc == RLS_ESTORAGE || rc == RLS_ENOMEM || rc == RLS_EREADONLY;
}

/* Does the key hold no reservation of this action?  Then none can expire
 * and give units back to it before a denial's retry time: one made later
 * only returns what it took later (deny.c).  0 on any doubt. */
int rls__no_reservation_of_key(rls_db *db, const key_ctx *ctx)
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
int rls__refund_expired(rls_db *db, const key_ctx *ctx, int64_t now)
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
int rls__lids_have(const unsigned char *lids, size_t nlids, int64_t id)
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
            if (lids && rls__lids_have(lids, nlids, ctx->rl[i].def->id))
                sub[m++] = ctx->items[i];
        if (m > 0 && cost > 0)
            rls__decide_refund(sub, m, now, 0, created, cost);
    }
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot read reservations");
}

/* ---- refunds ---------------------------------------------------------- */

/* Refunds `cost` charged at charged_at to the limits of (action, key); with
 * lids != NULL only to the limits whose ids are listed.  With given != NULL,
 * *given receives the units given back: the most any limit got back (a
 * limit whose window ended, or with less in use, gets back less). */
static int refund_in_tx(rls_db *db, const char *action, const char *key, int normalised,
                        int64_t cost, int64_t charged_at, int64_t now,
                        const unsigned char *lids, size_t nlids, int64_t *given)
{
    key_ctx *ctx = malloc(sizeof *ctx);
    int rc;
    if (!ctx)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    rc = rls__keyctx_load(db, ctx, action, key, normalised, now);
    if (rc == RLS_OK && lids) {
        int m = 0;
        for (int i = 0; i < ctx->n; i++)
            if (rls__lids_have(lids, nlids, ctx->rl[i].def->id))
                ctx->rl[m++] = ctx->rl[i];
        ctx->n = m;
    }
    if (rc == RLS_OK)
        rc = rls__keyctx_read_states(db, ctx);
    /* core gives back, and says how much (core/decide.c) */
    if (rc == RLS_OK &&
        (given ? rls__decide_refund_given(ctx->items, ctx->n, now, charged_at, cost, given)
               : rls__decide_refund(ctx->items, ctx->n, now, 0, charged_at, cost)) != 0)
        rc = rls__error(db, RLS_ECONFIG, "action '%s' has a limit the engine refuses", action);
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
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
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
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return rls_refund_units_at(db, action, key, cost, rls__now_or_invalid(), refunded);
}

int rls_refund_at(rls_db *db, const char *action, const char *key, int64_t cost,
                  int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return rls_refund_units_at(db, action, key, cost, now_ms, NULL);
}

int rls_refund(rls_db *db, const char *action, const char *key, int64_t cost)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return rls_refund_at(db, action, key, cost, rls__now_or_invalid());
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
        rls__tx_gave_back(db);  /* units back: cached denials are stale (deny.c) */
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
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return resolve_reservation(db, id, now_ms, 0);
}

int rls_commit(rls_db *db, int64_t id)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return resolve_reservation(db, id, rls__now_or_invalid(), 0);
}

int rls_cancel_at(rls_db *db, int64_t id, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return resolve_reservation(db, id, now_ms, 1);
}

int rls_cancel(rls_db *db, int64_t id)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return resolve_reservation(db, id, rls__now_or_invalid(), 1);
}
