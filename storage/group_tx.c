/*
 * group_tx.c - what a group's leader runs (group.c), the handle lock held:
 *
 *   one member: the plain pipeline (check.c), the backend's own step;
 *   several:    each member's validate -> denial cache -> plan (check.h's
 *               stages, as check_pipeline runs them), then ONE transaction:
 *               for each member in arrival order load, read, decide, write,
 *               count (a member sees the charges of those before it, as
 *               if they had committed one by one); housekeeping; COMMIT
 *               (fsynced when a member asks for `durability: full`);
 *               then each member's result and cache notes.
 *
 * Unlike a batch (batch.c) the members are independent: a denied member
 * changes nothing for the others.  A member whose own input fails inside
 * the transaction (an action unknown to the rules the transaction reads, a
 * limit the engine refuses) gets its error and the group runs again
 * without it; any other failure (BEGIN, a statement's storage error,
 * COMMIT) fails every member with it, each answered by its own action's
 * failure policy.  PostgreSQL's retryable failures run the group again
 * whole, as the generic step does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "events.h"
#include "group_int.h"
#include "memclass.h"

struct gtx {
    struct group_member *m[GROUP_MAX];   /* members in the transaction */
    size_t n;
    int write;                           /* a member charges */
    int full_sync;                       /* a member asks for `durability: full` */
    int64_t now;                         /* the latest member's time (housekeeping) */
    rls_db *db;
    int late;                            /* the group's last transaction: late
                                          * members may join (late_join) */
    int mem;                             /* memory-class entries the members lock */
    int late_mem;                        /* ... of the queue's head (late_fits) */
    struct group_member **all;           /* the leader's members, late ones */
    size_t *nall;                        /* appended (room for GROUP_MAX) */
};

void (*rls__group_late_hook)(rls_db *db);

/* A member alone: the plain pipeline, through the public entry (the
 * handle lock is this thread's, so it does not route to the group). */
static int run_single(rls_db *db, struct check_call *c)
{
    switch (c->op) {
    case CHECK_OP_PEEK:
        return rls_peek_at(db, c->action, c->key, c->cost, c->now, c->res);
    case CHECK_OP_RESERVE:
        return rls_reserve_at(db, c->action, c->key, c->cost, c->ttl, c->now, c->id, c->res);
    default:
        return rls_check_at(db, c->action, c->key, c->cost, c->now, c->res);
    }
}

/* A member's context, done with: kept in the group's pool for the next
 * group's members (the handle lock is the leader's), else freed. */
static void member_free_ctx(rls_db *db, struct check_call *c)
{
    struct rls_group *g = db->group;
    if (!c->ctx)
        return;
    rls__keyctx_release(c->ctx);
    if (g->npool < GROUP_POOL)
        g->pool[g->npool++] = c->ctx;
    else
        free(c->ctx);
    c->ctx = NULL;
}

/* The pool's next context as the handle's spare, which rls__check_plan
 * takes (a lone member's plain pipeline gives it back itself). */
static void pool_to_spare(rls_db *db)
{
    struct rls_group *g = db->group;
    key_ctx *none = NULL;
    if (g->npool > 0 &&
        __atomic_compare_exchange_n(&db->ctx_spare, &none, g->pool[g->npool - 1], 0,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        g->npool--;
}

/* A member answered: rc, the detail, on failure the failure policy (as
 * check.c's stage_result), after a commit the denial cache's note, and
 * its count in the metrics (as check_pipeline's: every check). */
static void member_answer(rls_db *db, struct group_member *m, int rc)
{
    struct check_call *c = m->call;
    m->rc = rc;
    rls__group_copy_msg(m->errmsg, sizeof m->errmsg, rc == RLS_OK ? "" : db->errmsg);
    if (rc != RLS_OK) {
        if (c->id)
            *c->id = 0;
        rls__decide_degraded(c->res, rls__check_is_storage_failure(rc) &&
                                         rls__check_policy_allows(db, c->action));
    } else if (c->committed) {
        rls__deny_note(db, c);
    }
    rls__metrics_check(db, c, rc, m->t0);
    member_free_ctx(db, c);
}

/* Before the transaction: 1 when the member needs it, 0 when answered
 * (invalid input, a cached denial). */
static int member_prepare(rls_db *db, struct group_member *m)
{
    struct check_call *c = m->call;
    int rc;
    db->errmsg[0] = '\0';
    if (c->id)
        *c->id = 0;
    rc = rls__check_validate(db, c);
    if (rc == RLS_OK && c->op != CHECK_OP_PEEK && rls__deny_lookup(db, c)) {
        member_answer(db, m, RLS_OK);
        return 0;
    }
    if (rc == RLS_OK) {
        pool_to_spare(db);
        rc = rls__check_plan(db, c);
    }
    if (rc != RLS_OK) {
        member_answer(db, m, rc);
        return 0;
    }
    return 1;
}

/* In the transaction: one member, as check.c's step does it. */
static int member_tx(rls_db *db, struct check_call *c)
{
    int rc;
    c->states_read = c->counted = c->noted = c->committed = 0;
    c->ctx->n = 0;
    if ((rc = rls__keyctx_reload(db, c->ctx, c->now)) || (rc = rls__check_read(db, c)) ||
        (rc = rls__check_decide(db, c, 0)) || (rc = rls__check_write(db, c)))
        return rc;
    if (c->op != CHECK_OP_PEEK)
        rls__check_count(db, c);
    return RLS_OK;
}

static void undo_all(rls_db *db, struct gtx *t)
{
    for (size_t i = 0; i < t->n; i++) {
        struct check_call *c = t->m[i]->call;
        rls__check_uncount(db, c);
        c->counted = c->noted = 0;
        rls__keyctx_release(c->ctx);
    }
}

/* Member m, prepared, of mem memory-class entries, joins transaction t. */
static void gtx_add(struct gtx *t, struct group_member *m, int mem)
{
    struct check_call *c = m->call;
    t->mem += mem;
    t->m[t->n++] = m;
    t->write |= c->op != CHECK_OP_PEEK;
    t->full_sync |= c->full_sync;
    if (c->now > t->now)
        t->now = c->now;
}

/* A queued member fits an open transaction when its memory-class entries
 * (kept in late_mem for gtx_add) stay within what one transaction may
 * lock (memclass.h). */
static int late_fits(void *arg, const struct group_member *mb)
{
    struct gtx *t = arg;
    t->late_mem = rls__mem_action_count(t->db->rc.rules, mb->call->action);
    return t->n < GROUP_MAX && t->mem + t->late_mem <= RLS__MEM_TXN_MAX;
}

/*
 * Late members.  Checks that queued while this transaction ran its members
 * join it before its COMMIT when that commit is fsynced (the handle's
 * `durability: full`, or a member's): decided after the others, in arrival
 * order, committed with them.  Without it a steady load of N threads
 * splits into two groups that alternate, each thread in every other one:
 * each check waits for two fsyncs instead of one.  Where the commit is not
 * fsynced a member's own statements cost more than the commit it would
 * share, and it waits for the next group as before.  In a write
 * transaction only (a late member may charge), the group's last (a late
 * member is decided after every member that arrived before it).  A late member answered
 * before the transaction (invalid input, a cached denial) is answered as
 * in the first pass.
 */
static int late_join(rls_db *db, struct gtx *t, size_t *bad)
{
    if (rls__group_late_hook)
        rls__group_late_hook(db);
    if (!t->late || !t->write ||
        !(t->full_sync || db->ident.opt.durability == RLS_DURABILITY_FULL))
        return RLS_OK;
    struct group_member *late;
    /* one at a time: whether the next fits depends on those before it */
    while (*t->nall < GROUP_MAX && (late = rls__group_take(db, late_fits, t))) {
        t->all[(*t->nall)++] = late;
        if (!member_prepare(db, late))
            continue;
        gtx_add(t, late, t->late_mem);
        int rc = member_tx(db, late->call);
        if (rc) {
            *bad = t->n - 1;
            return rc;
        }
    }
    return RLS_OK;
}

/* One attempt of the group's transaction; *bad is the member whose stage
 * failed (t->n: none, BEGIN, housekeeping or COMMIT).  Nothing of a
 * failed attempt remains. */
static int gtx_once(rls_db *db, struct gtx *t, size_t *bad)
{
    int rc;
    *bad = t->n;
    if ((rc = rls__begin(db, t->write)))
        return rc;
    rls__cache_check_begin(db, t->write);
    rls__tx_mark_check(db, t->write);
    for (size_t i = 0; i < t->n; i++)
        if ((rc = member_tx(db, t->m[i]->call))) {
            *bad = i;
            goto fail;
        }
    if ((rc = late_join(db, t, bad)))
        goto fail;
    if (t->write && (rc = rls__check_housekeeping(db, t->now)))
        goto fail;
    rls__cache_check_begin(db, 0);
    if ((rc = rls__commit(db)) != RLS_OK) {
        undo_all(db, t);
        return rc;
    }
    if (t->write)
        rls__cache_validate(db);
    for (size_t i = 0; i < t->n; i++)
        t->m[i]->call->committed = t->m[i]->call->op != CHECK_OP_PEEK;
    return RLS_OK;
fail:
    rls__cache_check_begin(db, 0);
    undo_all(db, t);
    rls__rollback(db);
    return rc;
}

/* A failure that is the member's own input's, not the storage's: the
 * group runs again without that member. */
static int own_failure(int rc)
{
    return rc == RLS_EINVAL || rc == RLS_EKEY || rc == RLS_ECOST || rc == RLS_ETIME ||
           rc == RLS_ENOACTION || rc == RLS_ENOTFOUND || rc == RLS_ECONFIG;
}

static void gtx_run(rls_db *db, struct gtx *t)
{
    if (t->full_sync)
        sql_durable(db, 1);
    while (t->n > 0) {
        int rc, attempt = 0;
        size_t bad;
        do {
            rc = gtx_once(db, t, &bad);
        } while (rls__tx_retry(db, rc, &attempt));
        if (rc != RLS_OK && bad < t->n && own_failure(rc)) {
            member_answer(db, t->m[bad], rc);
            memmove(&t->m[bad], &t->m[bad + 1], (t->n - bad - 1) * sizeof t->m[0]);
            t->n--;
            continue;
        }
        for (size_t i = 0; i < t->n; i++)
            member_answer(db, t->m[i], rc);
        break;
    }
    if (t->full_sync)
        rls__durable_restore(db);
}

/* A fresh transaction for the leader's members (all, *nall of them). */
static void gtx_init(rls_db *db, struct gtx *t, struct group_member **all, size_t *nall)
{
    memset(t, 0, sizeof *t);
    t->db = db;
    t->all = all;
    t->nall = nall;
}

size_t rls__group_run(rls_db *db, struct group_member **m, size_t n)
{
    struct gtx t;
    if (n == 1) {
        m[0]->rc = run_single(db, m[0]->call);
        rls__group_copy_msg(m[0]->errmsg, sizeof m[0]->errmsg, m[0]->rc ? db->errmsg : "");
        return n;
    }
    size_t first = n;   /* late members are appended to m, and prepared there */
    gtx_init(db, &t, m, &n);
    for (size_t i = 0; i < first; i++) {
        struct check_call *c = m[i]->call;
        if (!member_prepare(db, m[i]))
            continue;
        /* one transaction locks at most RLS__MEM_TXN_MAX memory-class
         * entries (memclass.h): a member that would pass that bound starts
         * the next transaction of the group */
        int k = rls__mem_action_count(db->rc.rules, c->action);
        if (t.n > 0 && t.mem + k > RLS__MEM_TXN_MAX) {
            gtx_run(db, &t);
            gtx_init(db, &t, m, &n);
        }
        gtx_add(&t, m[i], k);
    }
    t.late = 1;
    gtx_run(db, &t);
    return n;
}
