/*
 * nd_async.c - the checks as Promises, run on libuv's thread pool so that
 * a check that waits (for the write lock, up to busy_timeout_ms, or for a
 * slow disk or PostgreSQL) never blocks the event loop.
 *
 * A job copies its arguments on the main thread, runs the library call on
 * a worker holding the handle's mutex (one thread at a time per handle, as
 * rlstore.h requires), and settles its Promise back on the main thread.
 * It keeps a reference to the handle so that the handle outlives it; a
 * handle closed meanwhile makes the job fail with EMISUSE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd.h"

enum { J_CHECK, J_PEEK, J_RESERVE, J_REFUND, J_COMMIT, J_CANCEL, J_MANY };

typedef struct job {
    int op;
    napi_async_work work;
    napi_deferred deferred;
    napi_ref href;
    nd_handle *h;
    char *action, *key;
    int64_t cost, ttl, now, id, units;
    int has_now;
    rls_item *items;         /* J_MANY: RLS_BATCH_MAX of them */
    rls_result *res;         /* one, or RLS_BATCH_MAX for J_MANY */
    size_t n;
    int rc;
    char msg[512];
} job;

static void job_free(napi_env env, job *j)
{
    if (j->href)
        napi_delete_reference(env, j->href);
    if (j->work)
        napi_delete_async_work(env, j->work);
    if (j->items)
        nd_items_free(j->items, j->n);
    free(j->items);
    free(j->res);
    free(j->action);
    free(j->key);
    free(j);
}

static int run_op(job *j, rls_db *db)
{
    int at = j->has_now;
    switch (j->op) {
    case J_CHECK:
        return at ? rls_check_at(db, j->action, j->key, j->cost, j->now, j->res)
                  : rls_check(db, j->action, j->key, j->cost, j->res);
    case J_PEEK:
        return at ? rls_peek_at(db, j->action, j->key, j->cost, j->now, j->res)
                  : rls_peek(db, j->action, j->key, j->cost, j->res);
    case J_RESERVE:
        return at ? rls_reserve_at(db, j->action, j->key, j->cost, j->ttl, j->now, &j->id, j->res)
                  : rls_reserve(db, j->action, j->key, j->cost, j->ttl, &j->id, j->res);
    case J_REFUND:
        return at ? rls_refund_units_at(db, j->action, j->key, j->cost, j->now, &j->units)
                  : rls_refund_units(db, j->action, j->key, j->cost, &j->units);
    case J_COMMIT:
        return at ? rls_commit_at(db, j->id, j->now) : rls_commit(db, j->id);
    case J_CANCEL:
        return at ? rls_cancel_at(db, j->id, j->now) : rls_cancel(db, j->id);
    default:
        return at ? rls_check_many_at(db, j->items, j->n, j->now, j->res)
                  : rls_check_many(db, j->items, j->n, j->res);
    }
}

/* On a worker thread: no N-API calls here. */
static void execute(napi_env env, void *data)
{
    job *j = data;
    pthread_mutex_lock(&j->h->mu);
    if (!j->h->db) {
        j->rc = RLS_EMISUSE;
        snprintf(j->msg, sizeof j->msg, "the limiter was closed");
    } else if ((j->rc = run_op(j, j->h->db)) != 0) {
        snprintf(j->msg, sizeof j->msg, "%s", rls_errmsg(j->h->db));
    }
    pthread_mutex_unlock(&j->h->mu);
}

/* The value a successful job resolves with, or an error to reject with
 * (*reject set).  NULL when N-API failed. */
static napi_value outcome(napi_env env, job *j, int *reject)
{
    napi_value v = NULL, err;
    int single = j->op == J_CHECK || j->op == J_PEEK || j->op == J_RESERVE;
    *reject = 0;
    if (j->op == J_MANY && !(j->rc && nd_is_input_error(j->rc)))
        return nd_batch_answer(env, j->rc, j->msg, j->res, j->n);
    if (single) {
        v = nd_result(env, j->res);
        if (j->op == J_RESERVE && v)
            nd_set(env, v, "id", nd_int(env, j->id));
    }
    if (!j->rc) {
        if (j->op == J_REFUND)
            return nd_int(env, j->units);
        if (!single)
            napi_get_undefined(env, &v);
        return v;
    }
    if (!(err = nd_make_error(env, j->rc, j->msg)))
        return NULL;
    if (single && !nd_is_input_error(j->rc)) {
        nd_set(env, v, "error", err);   /* the failure policy answered */
        return v;
    }
    if (v)
        nd_set(env, err, "result", v);
    *reject = 1;
    return err;
}

static void complete(napi_env env, napi_status status, void *data)
{
    job *j = data;
    int reject = 0;
    napi_value v = outcome(env, j, &reject);
    if (!v) {   /* an N-API failure: reject with what is pending */
        napi_value exc = NULL;
        bool pending = false;
        napi_is_exception_pending(env, &pending);
        if (pending)
            napi_get_and_clear_last_exception(env, &exc);
        if (!exc)
            exc = nd_make_error(env, RLS_ENOMEM, "cannot settle the promise");
        napi_reject_deferred(env, j->deferred, exc);
    } else if (reject) {
        napi_reject_deferred(env, j->deferred, v);
    } else {
        napi_resolve_deferred(env, j->deferred, v);
    }
    job_free(env, j);
}

/* Queues j for handle hv; returns its Promise (NULL after throwing). */
static napi_value queue(napi_env env, job *j, napi_value hv)
{
    napi_value promise = NULL, name;
    napi_valuetype t;
    if (napi_typeof(env, hv, &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, hv, (void **)&j->h) != napi_ok || !j->h) {
        job_free(env, j);
        return nd_throw(env, RLS_EMISUSE, "not an rlstore handle", NULL);
    }
    napi_create_string_utf8(env, "rlstore", NAPI_AUTO_LENGTH, &name);
    if (napi_create_reference(env, hv, 1, &j->href) != napi_ok ||
        napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
        napi_create_async_work(env, NULL, name, execute, complete, j, &j->work) != napi_ok ||
        napi_queue_async_work(env, j->work) != napi_ok) {
        job_free(env, j);   /* (a created promise is then never settled) */
        nd_throw_napi(env);
        return NULL;
    }
    return promise;
}

static job *job_new(napi_env env, int op)
{
    job *j = calloc(1, sizeof *j);
    if (j && !(j->res = calloc(op == J_MANY ? RLS_BATCH_MAX : 1, sizeof *j->res))) {
        free(j);
        j = NULL;
    }
    if (!j) {
        nd_throw(env, RLS_ENOMEM, NULL, NULL);
        return NULL;
    }
    j->op = op;
    j->ttl = RLS_RESERVE_TTL_DEFAULT;
    return j;
}

/* An optional nowMs argument: undefined means the library's clock. */
static int get_now(napi_env env, napi_value v, job *j)
{
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (t == napi_undefined || t == napi_null)
        return 0;
    j->has_now = 1;
    return nd_i64(env, v, "nowMs", RLS_ETIME, 0, 0, &j->now);
}

/* (handle, action, key, cost, [ttl,] now) */
static napi_value key_job(napi_env env, napi_callback_info info, int op)
{
    napi_value argv[6];
    int ttl = op == J_RESERVE;
    job *j;
    if (nd_args(env, info, 5 + ttl, argv) || !(j = job_new(env, op)))
        return NULL;
    if (nd_str(env, argv[1], "action", 0, &j->action) || nd_key(env, argv[2], "key", &j->key) ||
        nd_i64(env, argv[3], "cost", RLS_ECOST, 0, 0, &j->cost) ||
        (ttl && nd_i64(env, argv[4], "ttlMs", RLS_EINVAL, 1, j->ttl, &j->ttl)) ||
        get_now(env, argv[4 + ttl], j)) {
        job_free(env, j);
        return NULL;
    }
    return queue(env, j, argv[0]);
}

static napi_value nd_check_async(napi_env env, napi_callback_info info)
{
    return key_job(env, info, J_CHECK);
}

static napi_value nd_peek_async(napi_env env, napi_callback_info info)
{
    return key_job(env, info, J_PEEK);
}

static napi_value nd_reserve_async(napi_env env, napi_callback_info info)
{
    return key_job(env, info, J_RESERVE);
}

static napi_value nd_refund_async(napi_env env, napi_callback_info info)
{
    return key_job(env, info, J_REFUND);
}

/* (handle, id, now) */
static napi_value id_job(napi_env env, napi_callback_info info, int op)
{
    napi_value argv[3];
    job *j;
    if (nd_args(env, info, 3, argv) || !(j = job_new(env, op)))
        return NULL;
    if (nd_i64(env, argv[1], "id", RLS_EINVAL, 0, 0, &j->id) || get_now(env, argv[2], j)) {
        job_free(env, j);
        return NULL;
    }
    return queue(env, j, argv[0]);
}

static napi_value nd_commit_async(napi_env env, napi_callback_info info)
{
    return id_job(env, info, J_COMMIT);
}

static napi_value nd_cancel_async(napi_env env, napi_callback_info info)
{
    return id_job(env, info, J_CANCEL);
}

/* checkManyAsync(handle, items, now) */
static napi_value nd_check_many_async(napi_env env, napi_callback_info info)
{
    napi_value argv[3];
    job *j;
    if (nd_args(env, info, 3, argv) || !(j = job_new(env, J_MANY)))
        return NULL;
    if (!(j->items = calloc(RLS_BATCH_MAX, sizeof *j->items))) {
        job_free(env, j);
        return nd_throw(env, RLS_ENOMEM, NULL, NULL);
    }
    if (nd_items(env, argv[1], j->items, &j->n) || get_now(env, argv[2], j)) {
        job_free(env, j);
        return NULL;
    }
    return queue(env, j, argv[0]);
}

const nd_fn nd_async_fns[] = {
    {"checkAsync", nd_check_async},     {"peekAsync", nd_peek_async},
    {"reserveAsync", nd_reserve_async}, {"refundAsync", nd_refund_async},
    {"commitAsync", nd_commit_async},   {"cancelAsync", nd_cancel_async},
    {"checkManyAsync", nd_check_many_async},
    {NULL, NULL},
};
