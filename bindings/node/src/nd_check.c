/*
 * nd_check.c - the synchronous checks: check, peek, refund, reserve,
 * commit, cancel and check_many, each with its _at twin.
 *
 * As the C contract says, a check answers even when the database fails:
 * the failure policy's decision (reason "degraded") is returned with the
 * error in result.error.  Errors of the caller's input (EINVAL, EKEY,
 * ECOST, ETIME, ENOACTION, EMISUSE) are thrown, with the denying result
 * in error.result.
 */
#include <stdlib.h>
#include <string.h>

#include "nd.h"

enum { OP_CHECK, OP_PEEK, OP_RESERVE };

int nd_is_input_error(int rc)
{
    return rc == RLS_EINVAL || rc == RLS_EKEY || rc == RLS_ECOST || rc == RLS_ETIME ||
           rc == RLS_ENOACTION || rc == RLS_EMISUSE;
}

/* The result of a check that returned rc: thrown for input errors, else
 * returned (with .error when rc != 0).  Called with h->mu held. */
static napi_value answer(napi_env env, nd_handle *h, int rc, const rls_result *res, int64_t id)
{
    napi_value o = nd_result(env, res);
    if (!o)
        return NULL;
    if (rc && nd_is_input_error(rc))
        return nd_throw_db(env, h, rc, o);
    if (rc) {
        napi_value err = nd_make_error(env, rc, rls_errmsg(h->db));
        if (!err)
            return NULL;
        nd_set(env, o, "error", err);
    }
    if (id >= 0)
        nd_set(env, o, "id", nd_int(env, id));
    return o;
}

/* (handle, action, key, cost[, ttl][, now]) of the check family. */
static napi_value check_op(napi_env env, napi_callback_info info, int op, int at)
{
    napi_value argv[6], out = NULL;
    size_t n = 4 + (op == OP_RESERVE) + (at != 0);
    char *action = NULL, *key = NULL;
    int64_t cost = 0, ttl = RLS_RESERVE_TTL_DEFAULT, now = 0, id = 0;
    rls_result res;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, n, argv) || nd_str(env, argv[1], "action", 0, &action) ||
        nd_key(env, argv[2], "key", &key) || nd_i64(env, argv[3], "cost", RLS_ECOST, 0, 0, &cost) ||
        (op == OP_RESERVE && nd_i64(env, argv[4], "ttlMs", RLS_EINVAL, 1, ttl, &ttl)) ||
        (at && nd_i64(env, argv[n - 1], "nowMs", RLS_ETIME, 0, 0, &now)))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    if (op == OP_CHECK)
        rc = at ? rls_check_at(h->db, action, key, cost, now, &res)
                : rls_check(h->db, action, key, cost, &res);
    else if (op == OP_PEEK)
        rc = at ? rls_peek_at(h->db, action, key, cost, now, &res)
                : rls_peek(h->db, action, key, cost, &res);
    else
        rc = at ? rls_reserve_at(h->db, action, key, cost, ttl, now, &id, &res)
                : rls_reserve(h->db, action, key, cost, ttl, &id, &res);
    out = answer(env, h, rc, &res, op == OP_RESERVE ? id : -1);
    nd_unlock(h);
out:
    free(action);
    free(key);
    return out;
}

static napi_value nd_check(napi_env env, napi_callback_info info)
{
    return check_op(env, info, OP_CHECK, 0);
}

static napi_value nd_check_at(napi_env env, napi_callback_info info)
{
    return check_op(env, info, OP_CHECK, 1);
}

static napi_value nd_peek(napi_env env, napi_callback_info info)
{
    return check_op(env, info, OP_PEEK, 0);
}

static napi_value nd_peek_at(napi_env env, napi_callback_info info)
{
    return check_op(env, info, OP_PEEK, 1);
}

static napi_value nd_reserve(napi_env env, napi_callback_info info)
{
    return check_op(env, info, OP_RESERVE, 0);
}

static napi_value nd_reserve_at(napi_env env, napi_callback_info info)
{
    return check_op(env, info, OP_RESERVE, 1);
}

/* refund(handle, action, key, cost[, now]) -> units given back */
static napi_value refund_op(napi_env env, napi_callback_info info, int at)
{
    napi_value argv[5], out = NULL;
    char *action = NULL, *key = NULL;
    int64_t cost = 0, now = 0, units = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 4 + (at != 0), argv) || nd_str(env, argv[1], "action", 0, &action) ||
        nd_key(env, argv[2], "key", &key) || nd_i64(env, argv[3], "cost", RLS_ECOST, 0, 0, &cost) ||
        (at && nd_i64(env, argv[4], "nowMs", RLS_ETIME, 0, 0, &now)))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = at ? rls_refund_units_at(h->db, action, key, cost, now, &units)
            : rls_refund_units(h->db, action, key, cost, &units);
    out = rc ? nd_throw_db(env, h, rc, NULL) : nd_int(env, units);
    nd_unlock(h);
out:
    free(action);
    free(key);
    return out;
}

static napi_value nd_refund(napi_env env, napi_callback_info info)
{
    return refund_op(env, info, 0);
}

static napi_value nd_refund_at(napi_env env, napi_callback_info info)
{
    return refund_op(env, info, 1);
}

/* commit/cancel(handle, id[, now]) */
static napi_value resolve_op(napi_env env, napi_callback_info info, int commit, int at)
{
    napi_value argv[3];
    int64_t id = 0, now = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 2 + (at != 0), argv) ||
        nd_i64(env, argv[1], "id", RLS_EINVAL, 0, 0, &id) ||
        (at && nd_i64(env, argv[2], "nowMs", RLS_ETIME, 0, 0, &now)))
        return NULL;
    if (!(h = nd_lock(env, argv[0])))
        return NULL;
    if (commit)
        rc = at ? rls_commit_at(h->db, id, now) : rls_commit(h->db, id);
    else
        rc = at ? rls_cancel_at(h->db, id, now) : rls_cancel(h->db, id);
    if (rc)
        nd_throw_db(env, h, rc, NULL);
    nd_unlock(h);
    return NULL;
}

static napi_value nd_commit(napi_env env, napi_callback_info info)
{
    return resolve_op(env, info, 1, 0);
}

static napi_value nd_commit_at(napi_env env, napi_callback_info info)
{
    return resolve_op(env, info, 1, 1);
}

static napi_value nd_cancel(napi_env env, napi_callback_info info)
{
    return resolve_op(env, info, 0, 0);
}

static napi_value nd_cancel_at(napi_env env, napi_callback_info info)
{
    return resolve_op(env, info, 0, 1);
}

void nd_items_free(rls_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)items[i].action);
        free((char *)items[i].key);
    }
}

int nd_items(napi_env env, napi_value arr, rls_item *items, size_t *n)
{
    bool is_arr = false;
    uint32_t len = 0;
    napi_value it, v;
    char *s;
    *n = 0;
    napi_is_array(env, arr, &is_arr);
    if (!is_arr)
        return nd_throw(env, RLS_EINVAL, "items must be an array", NULL), -1;
    napi_get_array_length(env, arr, &len);
    if (len > RLS_BATCH_MAX)
        return nd_throw(env, RLS_EINVAL, "more than RLS_BATCH_MAX (64) items", NULL), -1;
    for (uint32_t i = 0; i < len; i++) {
        memset(&items[i], 0, sizeof items[i]);
        napi_get_element(env, arr, i, &it);
        *n = i + 1;
        if (napi_get_named_property(env, it, "action", &v) != napi_ok)
            return nd_throw_napi(env), -1;
        if (nd_str(env, v, "item.action", 0, &s))
            return -1;
        items[i].action = s;
        napi_get_named_property(env, it, "key", &v);
        if (nd_key(env, v, "item.key", &s))
            return -1;
        items[i].key = s;
        napi_get_named_property(env, it, "cost", &v);
        if (nd_i64(env, v, "item.cost", RLS_ECOST, 1, 1, &items[i].cost))
            return -1;
    }
    return 0;
}

napi_value nd_batch_answer(napi_env env, int rc, const char *msg, const rls_result *res,
                           size_t n)
{
    napi_value o, arr, b;
    int all = n > 0 || rc == 0;
    if (rc && nd_is_input_error(rc))
        return nd_throw(env, rc, msg, NULL);
    ND_CALL(env, napi_create_object(env, &o));
    napi_create_array_with_length(env, n, &arr);
    for (size_t i = 0; i < n; i++) {
        napi_set_element(env, arr, (uint32_t)i, nd_result(env, &res[i]));
        all = all && res[i].allowed;
    }
    napi_get_boolean(env, all != 0, &b);
    nd_set(env, o, "allowed", b);
    nd_set(env, o, "results", arr);
    if (rc) {
        napi_value err = nd_make_error(env, rc, msg);
        if (!err)
            return NULL;
        nd_set(env, o, "error", err);
    }
    return o;
}

/* checkMany(handle, items[, now]) */
static napi_value many_op(napi_env env, napi_callback_info info, int at)
{
    napi_value argv[3], out = NULL;
    rls_item items[RLS_BATCH_MAX];
    rls_result res[RLS_BATCH_MAX];
    size_t n = 0;
    int64_t now = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 2 + (at != 0), argv) || nd_items(env, argv[1], items, &n) ||
        (at && nd_i64(env, argv[2], "nowMs", RLS_ETIME, 0, 0, &now)))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = at ? rls_check_many_at(h->db, items, n, now, res) : rls_check_many(h->db, items, n, res);
    out = nd_batch_answer(env, rc, rc ? rls_errmsg(h->db) : NULL, res, n);
    nd_unlock(h);
out:
    nd_items_free(items, n);
    return out;
}

static napi_value nd_check_many(napi_env env, napi_callback_info info)
{
    return many_op(env, info, 0);
}

static napi_value nd_check_many_at(napi_env env, napi_callback_info info)
{
    return many_op(env, info, 1);
}

const nd_fn nd_check_fns[] = {
    {"check", nd_check},           {"checkAt", nd_check_at},
    {"peek", nd_peek},             {"peekAt", nd_peek_at},
    {"reserve", nd_reserve},       {"reserveAt", nd_reserve_at},
    {"refund", nd_refund},         {"refundAt", nd_refund_at},
    {"commit", nd_commit},         {"commitAt", nd_commit_at},
    {"cancel", nd_cancel},         {"cancelAt", nd_cancel_at},
    {"checkMany", nd_check_many},  {"checkManyAt", nd_check_many_at},
    {NULL, NULL},
};
