/*
 * batch.c - rls_check_many: the check pipeline of check.c over several
 * items, one transaction for all of them:
 *
 *   validate all -> denial cache (one cached denial answers the batch) ->
 *   plan all -> one transaction (load all, refuse a repeated action and
 *   key, read + rls__check_decide each, write: all when every item is
 *   admitted, else only what the denying items' own denials write; count;
 *   housekeeping; COMMIT) -> results (the failure policy) -> cache notes.
 *
 * The transaction is the generic one on every backend: PostgreSQL's
 * one-round-trip step serves single checks only.  Items of distinct
 * (action, normalised key) touch distinct rows (states, penalty block,
 * reservations), so each item's decision is exactly the one rls_check
 * would make, and what a denied item writes is what its own denied check
 * writes.  A repeated (action, key) is refused rather than decided on the
 * first item's charge, so that this stays true.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "memclass.h"

struct batch {
    const rls_item *items;
    size_t n;
    int64_t now;
    rls_result *results;
    struct check_call *calls;
    int full_sync;      /* an item asks for `durability: full` */
    int admitted;       /* every item was admitted (after the transaction) */
};

/* Prefixes the handle's error detail with the item's index. */
static int item_error(rls_db *db, size_t i, int rc)
{
    char msg[sizeof db->errmsg];
    memcpy(msg, db->errmsg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    return rls__error(db, rc, "item %zu: %s", i, msg);
}

/* One transaction locks at most RLS__MEM_TXN_MAX memory-class entries
 * of the shared-memory table (memclass.h): a batch whose items may hold
 * more is refused before anything is read (rules as cached: a change
 * seen in the transaction is caught there, as ECONFIG). */
static int batch_mem_bound(rls_db *db, const struct batch *b)
{
    int total = 0;
    for (size_t i = 0; i < b->n; i++) {
        total += rls__mem_action_count(db->rc.rules, b->items[i].action);
        if (total > RLS__MEM_TXN_MAX)
            return rls__error(db, RLS_EINVAL, "items 0 to %zu hold more than %d durability: "
                              "memory limits, the most one batch may decide", i,
                              RLS__MEM_TXN_MAX);
    }
    return RLS_OK;
}

/* Validate: the call's own arguments, then each item's as rls_check's. */
static int batch_validate(rls_db *db, struct batch *b)
{
    if (!b->items)
        return rls__error(db, RLS_EINVAL, "items is NULL");
    b->calls = calloc(b->n, sizeof *b->calls);
    if (!b->calls)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    for (size_t i = 0; i < b->n; i++) {
        struct check_call *c = &b->calls[i];
        c->action = b->items[i].action;
        c->key = b->items[i].key;
        c->cost = b->items[i].cost;
        c->now = b->now;
        c->op = CHECK_OP_CHECK;
        c->res = &b->results[i];
        int rc = rls__check_validate(db, c);
        if (rc != RLS_OK)
            return item_error(db, i, rc);
    }
    return batch_mem_bound(db, b);
}

/* The wait of a denied batch: the longest of its denied items' (-1, never,
 * is the longest). */
static int64_t batch_retry(const struct batch *b)
{
    int64_t wait = 0;
    for (size_t i = 0; i < b->n; i++) {
        const rls_result *r = &b->results[i];
        if (r->allowed || r->reason == RLS_REASON_BATCH)
            continue;
        if (r->retry_after_ms < 0)
            return -1;
        if (r->retry_after_ms > wait)
            wait = r->retry_after_ms;
    }
    return wait;
}

/* An item admissible itself in a denied batch: not charged, says so. */
static void mark_batch(rls_result *r, int64_t wait)
{
    r->allowed = 0;
    r->reason = RLS_REASON_BATCH;
    r->delay_ms = 0;
    r->retry_after_ms = wait;
}

/* Denial cache: a cached denial of one item answers the batch; the other
 * items, not read, are BATCH with the batch's wait, counted as denied. */
static int batch_deny_cache(rls_db *db, struct batch *b)
{
    size_t hit = b->n;
    for (size_t i = 0; i < b->n && hit == b->n; i++)
        if (rls__deny_lookup(db, &b->calls[i]))
            hit = i;
    if (hit == b->n)
        return 0;
    for (size_t i = 0; i < b->n; i++) {
        if (i == hit)
            continue;
        memset(&b->results[i], 0, sizeof b->results[i]);
        mark_batch(&b->results[i], b->results[hit].retry_after_ms);
        rls__stats_count(db, b->calls[i].action, b->now, 0);
        rls__keystat_note(db, b->calls[i].action, b->calls[i].key, strlen(b->calls[i].key),
                          &b->results[i], b->now);
    }
    return 1;
}

static int batch_plan(rls_db *db, struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        int rc = rls__check_plan(db, &b->calls[i]);
        if (rc != RLS_OK)
            return rc;
        b->full_sync |= b->calls[i].full_sync;
    }
    return RLS_OK;
}

/* Two items of the same action and normalised key: refused (see above). */
static int refuse_repeated(rls_db *db, const struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        for (size_t j = 0; j < i; j++) {
            const key_ctx *x = b->calls[i].ctx, *y = b->calls[j].ctx;
            if (x->act == y->act && x->keylen == y->keylen &&
                memcmp(x->key, y->key, x->keylen) == 0)
                return rls__error(db, RLS_EINVAL,
                                  "items %zu and %zu are the same action '%s' and key: "
                                  "give one item their summed cost", j, i, x->act->name);
        }
    return RLS_OK;
}

/* In the transaction: every item loaded, read and decided (charging, in
 * memory), as check.c's step does for one. */
static int decide_all(rls_db *db, struct batch *b)
{
    int rc;
    for (size_t i = 0; i < b->n; i++) {
        struct check_call *c = &b->calls[i];
        c->states_read = c->counted = c->noted = c->committed = 0;
        c->ctx->n = 0;
        if ((rc = rls__keyctx_reload(db, c->ctx, b->now)))
            return item_error(db, i, rc);
    }
    if ((rc = refuse_repeated(db, b)))
        return rc;
    for (size_t i = 0; i < b->n; i++) {
        struct check_call *c = &b->calls[i];
        if ((rc = rls__check_read(db, c)) || (rc = rls__check_decide(db, c, 0)))
            return item_error(db, i, rc);
    }
    return RLS_OK;
}

/* In the transaction: the writes (all items', or the denying items' own
 * when the batch is denied: the others' results say BATCH), the counts
 * and the housekeeping. */
static int write_all(rls_db *db, struct batch *b)
{
    int rc;
    b->admitted = 1;
    for (size_t i = 0; i < b->n; i++)
        b->admitted &= b->results[i].allowed != 0;
    int64_t wait = b->admitted ? 0 : batch_retry(b);
    for (size_t i = 0; i < b->n; i++) {
        struct check_call *c = &b->calls[i];
        if (!b->admitted && c->res->allowed) {
            mark_batch(c->res, wait);
            continue;
        }
        if ((rc = rls__check_write(db, c)))
            return item_error(db, i, rc);
    }
    for (size_t i = 0; i < b->n; i++)
        rls__check_count(db, &b->calls[i]);
    return rls__check_housekeeping(db, b->now);
}

static void undo_all(rls_db *db, struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        rls__check_uncount(db, &b->calls[i]);
        b->calls[i].counted = b->calls[i].noted = 0;
        rls__keyctx_release(b->calls[i].ctx);
    }
}

/* One attempt of the batch's transaction; nothing of it remains when it
 * fails. */
static int batch_tx_once(rls_db *db, struct batch *b)
{
    int rc;
    if ((rc = rls__begin(db, 1)))
        return rc;
    rls__cache_check_begin(db, 1);
    rls__tx_mark_check(db, 1);
    if ((rc = decide_all(db, b)) || (rc = write_all(db, b))) {
        rls__cache_check_begin(db, 0);
        undo_all(db, b);
        rls__rollback(db);
        return rc;
    }
    rls__cache_check_begin(db, 0);
    if ((rc = rls__commit(db)) != RLS_OK) {
        undo_all(db, b);
        return rc;
    }
    rls__cache_validate(db);
    for (size_t i = 0; i < b->n; i++)
        b->calls[i].committed = 1;
    return RLS_OK;
}

static int batch_tx(rls_db *db, struct batch *b)
{
    int rc, attempt = 0;
    if (b->full_sync)
        sql_durable(db, 1);
    do {
        rc = batch_tx_once(db, b);
    } while (rls__tx_retry(db, rc, &attempt));
    if (b->full_sync)
        rls__durable_restore(db);
    return rc;
}

/* Result: a failed batch answers every item by the failure policy, which
 * admits only when every item's action's policy admits (all or none). */
static void batch_result(rls_db *db, struct batch *b, int rc)
{
    if (rc == RLS_OK)
        return;
    int allow = rls__check_is_storage_failure(rc);
    for (size_t i = 0; i < b->n && allow; i++)
        allow = b->items[i].action && rls__check_policy_allows(db, b->items[i].action);
    for (size_t i = 0; i < b->n; i++)
        rls__decide_degraded(&b->results[i], allow);
}

/* Cache notes: each item's own answer after the commit; a BATCH item
 * (admissible itself) teaches the denial cache nothing. */
static void batch_cache_notes(rls_db *db, const struct batch *b, int rc)
{
    if (rc != RLS_OK || !b->calls)
        return;
    for (size_t i = 0; i < b->n; i++)
        if (b->calls[i].committed && b->results[i].reason != RLS_REASON_BATCH)
            rls__deny_note(db, &b->calls[i]);
}

static void batch_free(rls_db *db, struct batch *b)
{
    if (!b->calls)
        return;
    for (size_t i = 0; i < b->n; i++)
        rls__keyctx_give_back(db, b->calls[i].ctx);
    free(b->calls);
}

int rls_check_many_at(rls_db *db, const rls_item *items, size_t n, int64_t now_ms,
                      rls_result *results)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    struct batch b = {items, n, now_ms, results, NULL, 0, 0};
    int rc;
    if (n == 0)
        return RLS_OK;
    if (!results)
        return db ? rls__error(db, RLS_EINVAL, "results is NULL") : RLS_EINVAL;
    if (n > RLS_BATCH_MAX)  /* results not written: the caller's n is not to be trusted */
        return db ? rls__error(db, RLS_EINVAL,
                               "a batch of %zu items is more than RLS_BATCH_MAX (%d)", n,
                               RLS_BATCH_MAX)
                  : RLS_EINVAL;
    if (!db) {
        for (size_t i = 0; i < n; i++)
            rls__decide_degraded(&results[i], 0);
        return RLS_EINVAL;
    }
    rc = batch_validate(db, &b);
    if (rc == RLS_OK && batch_deny_cache(db, &b)) {
        batch_free(db, &b);
        return RLS_OK;   /* a denial that cannot have changed (deny.c) */
    }
    if (rc == RLS_OK)
        rc = batch_plan(db, &b);
    if (rc == RLS_OK)
        rc = batch_tx(db, &b);
    batch_result(db, &b, rc);
    batch_cache_notes(db, &b, rc);
    batch_free(db, &b);
    return rc;
}

int rls_check_many(rls_db *db, const rls_item *items, size_t n, rls_result *results)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int64_t now;
    if (rls__now(&now) != RLS_OK)
        now = -1;
    return rls_check_many_at(db, items, n, now, results);
}
