/*
 * nd_query.c - the admin calls that read: usage (and its count), explain,
 * audit, stats, doctor and the listings of blocks, tiers and overrides.
 * Each returns plain objects, one per row, with the library's column names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd.h"

/* Ends a listing: throws for rc, else the rows as an array. */
static napi_value rows_done(napi_env env, nd_handle *h, int rc, rls_rows *rows)
{
    napi_value v = rc ? nd_throw_db(env, h, rc, NULL) : nd_rows(env, rows);
    rls_rows_free(rows);
    return v;
}

static int is_nullish(napi_env env, napi_value v)
{
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    return t == napi_undefined || t == napi_null;
}

/* A key that may be null/undefined (a filter). */
static int opt_key(napi_env env, napi_value v, const char *what, char **out)
{
    *out = NULL;
    return is_nullish(env, v) ? 0 : nd_key(env, v, what, out);
}

typedef struct usage_q {
    rls_usage_query q;
    char *action, *substr;
} usage_q;

static int query_int(napi_env env, napi_value o, const char *name, int64_t lo, int64_t hi,
                     int *out)
{
    napi_value v;
    int64_t x;
    char msg[96];
    napi_get_named_property(env, o, name, &v);
    if (nd_i64(env, v, name, RLS_EINVAL, 1, *out, &x))
        return -1;
    if (x < lo || x > hi) {
        snprintf(msg, sizeof msg, "%s out of range (%lld..%lld)", name, (long long)lo,
                 (long long)hi);
        return nd_throw(env, RLS_EINVAL, msg, NULL), -1;
    }
    *out = (int)x;
    return 0;
}

/* Reads {action, keySubstr, sort, offset, limit} (sort as the enum:
 * index.js maps the words). */
static int read_query(napi_env env, napi_value o, usage_q *u)
{
    napi_value v;
    memset(u, 0, sizeof *u);
    u->q.size = sizeof u->q;
    u->q.limit = 100;
    if (is_nullish(env, o))
        return 0;
    napi_get_named_property(env, o, "action", &v);
    if (nd_str(env, v, "action", 1, &u->action))
        return -1;
    napi_get_named_property(env, o, "keySubstr", &v);
    if (opt_key(env, v, "keySubstr", &u->substr))
        return -1;
    u->q.action = u->action;
    u->q.key_substr = u->substr;
    return query_int(env, o, "sort", 0, 3, &u->q.sort) ||
                   query_int(env, o, "offset", 0, 1000000000, &u->q.offset) ||
                   query_int(env, o, "limit", 1, 100000, &u->q.limit)
               ? -1
               : 0;
}

/* usage(h, query, now) -> rows; usageCount(h, query, now) -> count */
static napi_value usage_call(napi_env env, napi_callback_info info, int count)
{
    napi_value argv[3], out = NULL;
    usage_q u;
    int64_t now = 0, n = 0;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 3, argv) || read_query(env, argv[1], &u) ||
        nd_i64(env, argv[2], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    if (count) {
        rc = rls_usage_count_at(h->db, &u.q, now, &n);
        out = rc ? nd_throw_db(env, h, rc, NULL) : nd_int(env, n);
    } else {
        rc = rls_usage_at(h->db, &u.q, now, &rows);
        out = rows_done(env, h, rc, rows);
    }
    nd_unlock(h);
out:
    free(u.action);
    free(u.substr);
    return out;
}

static napi_value nd_usage(napi_env env, napi_callback_info info)
{
    return usage_call(env, info, 0);
}

static napi_value nd_usage_count(napi_env env, napi_callback_info info)
{
    return usage_call(env, info, 1);
}

/* explain(h, action, key, now) -> {info, limits} */
static napi_value nd_explain(napi_env env, napi_callback_info info)
{
    napi_value argv[4], out = NULL, o, arr, first = NULL;
    char *action = NULL, *key = NULL;
    int64_t now = 0;
    rls_rows *inf = NULL, *lim = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 4, argv) || nd_str(env, argv[1], "action", 0, &action) ||
        nd_key(env, argv[2], "key", &key) || nd_i64(env, argv[3], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = rls_explain_at(h->db, action, key, now, &inf, &lim);
    if (rc) {
        out = nd_throw_db(env, h, rc, NULL);
    } else if (napi_create_object(env, &o) == napi_ok) {
        arr = nd_rows(env, inf);
        if (arr && napi_get_element(env, arr, 0, &first) == napi_ok)
            nd_set(env, o, "info", first);
        nd_set(env, o, "limits", nd_rows(env, lim));
        out = o;
    }
    nd_unlock(h);
    rls_rows_free(inf);
    rls_rows_free(lim);
out:
    free(action);
    free(key);
    return out;
}

/* audit(h, key, limit) -> rows, newest first */
static napi_value nd_audit(napi_env env, napi_callback_info info)
{
    napi_value argv[3], out = NULL;
    char *key = NULL;
    int64_t limit = 0;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 3, argv) || opt_key(env, argv[1], "key", &key) ||
        nd_i64(env, argv[2], "limit", RLS_EINVAL, 1, 100, &limit))
        goto out;
    if (limit < 1 || limit > 100000) {
        nd_throw(env, RLS_EINVAL, "limit out of range (1..100000)", NULL);
        goto out;
    }
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = rls_audit_list(h->db, key, (int)limit, &rows);
    out = rows_done(env, h, rc, rows);
    nd_unlock(h);
out:
    free(key);
    return out;
}

/* stats(h, seconds, now) -> {recent, totals} */
static napi_value nd_stats(napi_env env, napi_callback_info info)
{
    napi_value argv[3], out = NULL, o;
    int64_t seconds = 0, now = 0;
    rls_rows *recent = NULL, *totals = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 3, argv) ||
        nd_i64(env, argv[1], "seconds", RLS_EINVAL, 1, 60, &seconds) ||
        nd_i64(env, argv[2], "nowMs", RLS_ETIME, 0, 0, &now))
        return NULL;
    if (seconds < 1 || seconds > 3600)
        return nd_throw(env, RLS_EINVAL, "seconds out of range (1..3600)", NULL);
    if (!(h = nd_lock(env, argv[0])))
        return NULL;
    rc = rls_stats_at(h->db, (int)seconds, now, &recent, &totals);
    if (rc) {
        nd_throw_db(env, h, rc, NULL);
    } else if (napi_create_object(env, &o) == napi_ok) {
        nd_set(env, o, "recent", nd_rows(env, recent));
        nd_set(env, o, "totals", nd_rows(env, totals));
        out = o;
    }
    nd_unlock(h);
    rls_rows_free(recent);
    rls_rows_free(totals);
    return out;
}

/* doctor(h, full) -> rows of check, status, detail */
static napi_value nd_doctor(napi_env env, napi_callback_info info)
{
    napi_value argv[2], out;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 2, argv) || !(h = nd_lock(env, argv[0])))
        return NULL;
    rc = rls_doctor(h->db, nd_bool(env, argv[1], 0), &rows);
    out = rows_done(env, h, rc, rows);
    nd_unlock(h);
    return out;
}

/* blockList(h, now), tierList(h, now) */
static napi_value list_call(napi_env env, napi_callback_info info, int tiers)
{
    napi_value argv[2], out;
    int64_t now = 0;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 2, argv) || nd_i64(env, argv[1], "nowMs", RLS_ETIME, 0, 0, &now) ||
        !(h = nd_lock(env, argv[0])))
        return NULL;
    rc = tiers ? rls_tier_list_at(h->db, now, &rows) : rls_block_list_at(h->db, now, &rows);
    out = rows_done(env, h, rc, rows);
    nd_unlock(h);
    return out;
}

static napi_value nd_block_list(napi_env env, napi_callback_info info)
{
    return list_call(env, info, 0);
}

static napi_value nd_tier_list(napi_env env, napi_callback_info info)
{
    return list_call(env, info, 1);
}

/* overrideList(h, action, key, now) */
static napi_value nd_override_list(napi_env env, napi_callback_info info)
{
    napi_value argv[4], out = NULL;
    char *action = NULL, *key = NULL;
    int64_t now = 0;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 4, argv) || nd_str(env, argv[1], "action", 1, &action) ||
        opt_key(env, argv[2], "key", &key) || nd_i64(env, argv[3], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = rls_override_list_at(h->db, action, key, now, &rows);
    out = rows_done(env, h, rc, rows);
    nd_unlock(h);
out:
    free(action);
    free(key);
    return out;
}

const nd_fn nd_query_fns[] = {
    {"usage", nd_usage},          {"usageCount", nd_usage_count},
    {"explain", nd_explain},      {"audit", nd_audit},
    {"stats", nd_stats},          {"doctor", nd_doctor},
    {"blockList", nd_block_list}, {"tierList", nd_tier_list},
    {"overrideList", nd_override_list},
    {NULL, NULL},
};
