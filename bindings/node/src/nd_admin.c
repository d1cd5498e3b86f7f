/*
 * nd_admin.c - the admin calls that change a database: rules (apply, dry
 * run, rollback, versions, get, describe), blocks, tier assignments,
 * overrides, reset and GC.  All synchronous: they are operator actions,
 * not on a request's path.  Every one takes now_ms (index.js passes
 * Date.now() when the caller gives none).
 */
#include <stdlib.h>
#include <string.h>

#include "nd.h"

/* Ends an admin call: throws for rc != 0, else returns v (or undefined). */
static napi_value done(napi_env env, nd_handle *h, int rc, napi_value v)
{
    if (rc)
        return nd_throw_db(env, h, rc, NULL);
    if (!v)
        napi_get_undefined(env, &v);
    return v;
}

/* The text of a string or Buffer argument (rule YAML), malloc'ed. */
static int get_text(napi_env env, napi_value v, char **out, size_t *len)
{
    bool isbuf = false;
    napi_is_buffer(env, v, &isbuf);
    if (isbuf) {
        void *data = NULL;
        napi_get_buffer_info(env, v, &data, len);
        if (!(*out = malloc(*len + 1)))
            return nd_throw(env, RLS_ENOMEM, NULL, NULL), -1;
        memcpy(*out, data, *len);
        (*out)[*len] = '\0';
        return 0;
    }
    if (nd_str(env, v, "yaml", 0, out))
        return -1;
    *len = strlen(*out);
    return 0;
}

/* rulesApply(h, yaml, name, comment, now, expect) -> version; expect
 * undefined: apply whatever is active, else only over that version. */
static napi_value nd_rules_apply(napi_env env, napi_callback_info info)
{
    napi_value argv[6], out = NULL;
    char *yaml = NULL, *name = NULL, *comment = NULL;
    size_t len = 0;
    int64_t now = 0, expect = -1, version = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 6, argv) || get_text(env, argv[1], &yaml, &len) ||
        nd_str(env, argv[2], "name", 1, &name) || nd_str(env, argv[3], "comment", 1, &comment) ||
        nd_i64(env, argv[4], "nowMs", RLS_ETIME, 0, 0, &now) ||
        nd_i64(env, argv[5], "ifVersion", RLS_EINVAL, 1, -1, &expect))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = expect >= 0 ? rls_rules_apply_if_at(h->db, yaml, len, name, comment, expect, now, &version)
                     : rls_rules_apply_at(h->db, yaml, len, name, comment, now, &version);
    out = done(env, h, rc, rc ? NULL : nd_int(env, version));
    nd_unlock(h);
out:
    free(yaml);
    free(name);
    free(comment);
    return out;
}

/* rulesDryRun(h, yaml, name, now) -> rows of keys over a new limit */
static napi_value nd_rules_dry_run(napi_env env, napi_callback_info info)
{
    napi_value argv[4], out = NULL;
    char *yaml = NULL, *name = NULL;
    size_t len = 0;
    int64_t now = 0;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 4, argv) || get_text(env, argv[1], &yaml, &len) ||
        nd_str(env, argv[2], "name", 1, &name) ||
        nd_i64(env, argv[3], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = rls_rules_dry_run_at(h->db, yaml, len, name, now, &rows);
    out = done(env, h, rc, rc ? NULL : nd_rows(env, rows));
    nd_unlock(h);
    rls_rows_free(rows);
out:
    free(yaml);
    free(name);
    return out;
}

/* rulesRollback(h, version, comment, now) -> new version */
static napi_value nd_rules_rollback(napi_env env, napi_callback_info info)
{
    napi_value argv[4], out = NULL;
    char *comment = NULL;
    int64_t version = 0, now = 0, nv = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 4, argv) ||
        nd_i64(env, argv[1], "version", RLS_EINVAL, 0, 0, &version) ||
        nd_str(env, argv[2], "comment", 1, &comment) ||
        nd_i64(env, argv[3], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = rls_rules_rollback_at(h->db, version, comment, now, &nv);
    out = done(env, h, rc, rc ? NULL : nd_int(env, nv));
    nd_unlock(h);
out:
    free(comment);
    return out;
}

/* rulesVersions(h) -> rows */
static napi_value nd_rules_versions(napi_env env, napi_callback_info info)
{
    napi_value argv[1], out;
    rls_rows *rows = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 1, argv) || !(h = nd_lock(env, argv[0])))
        return NULL;
    rc = rls_rules_versions(h->db, &rows);
    out = done(env, h, rc, rc ? NULL : nd_rows(env, rows));
    nd_unlock(h);
    rls_rows_free(rows);
    return out;
}

/* rulesGet(h, version) -> YAML text */
static napi_value nd_rules_get(napi_env env, napi_callback_info info)
{
    napi_value argv[2], out, v = NULL;
    int64_t version = 0;
    char *yaml = NULL;
    size_t len = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 2, argv) ||
        nd_i64(env, argv[1], "version", RLS_EINVAL, 1, 0, &version) ||
        !(h = nd_lock(env, argv[0])))
        return NULL;
    rc = rls_rules_get(h->db, version, &yaml, &len);
    if (!rc)
        napi_create_string_utf8(env, yaml, len, &v);
    out = done(env, h, rc, v);
    nd_unlock(h);
    rls_free(yaml);
    return out;
}

/* rulesDescribe(h, version) -> {tiers, limits} */
static napi_value nd_rules_describe(napi_env env, napi_callback_info info)
{
    napi_value argv[2], out, o = NULL;
    int64_t version = 0;
    rls_rows *tiers = NULL, *limits = NULL;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 2, argv) ||
        nd_i64(env, argv[1], "version", RLS_EINVAL, 1, 0, &version) ||
        !(h = nd_lock(env, argv[0])))
        return NULL;
    rc = rls_rules_describe(h->db, version, &tiers, &limits);
    if (!rc && napi_create_object(env, &o) == napi_ok) {
        nd_set(env, o, "tiers", nd_rows(env, tiers));
        nd_set(env, o, "limits", nd_rows(env, limits));
    }
    out = done(env, h, rc, o);
    nd_unlock(h);
    rls_rows_free(tiers);
    rls_rows_free(limits);
    return out;
}

/* blockSet(h, action, key, untilMs, reason, now) */
static napi_value nd_block_set(napi_env env, napi_callback_info info)
{
    napi_value argv[6], out = NULL;
    char *action = NULL, *key = NULL, *reason = NULL;
    int64_t until = 0, now = 0;
    nd_handle *h;
    if (nd_args(env, info, 6, argv) || nd_str(env, argv[1], "action", 1, &action) ||
        nd_key(env, argv[2], "key", &key) ||
        nd_i64(env, argv[3], "untilMs", RLS_ETIME, 1, 0, &until) ||
        nd_str(env, argv[4], "reason", 1, &reason) ||
        nd_i64(env, argv[5], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    out = done(env, h, rls_block_set_at(h->db, action, key, until, reason, now), NULL);
    nd_unlock(h);
out:
    free(action);
    free(key);
    free(reason);
    return out;
}

/* (h, action, key, now) of blockUnset, tierUnassign and reset */
static napi_value key_call(napi_env env, napi_callback_info info, int which)
{
    napi_value argv[4], out = NULL;
    char *action = NULL, *key = NULL;
    int64_t now = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 4, argv) || nd_str(env, argv[1], "action", which != 2, &action) ||
        nd_key(env, argv[2], "key", &key) || nd_i64(env, argv[3], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    if (which == 0)
        rc = rls_block_unset_at(h->db, action, key, now);
    else if (which == 1)
        rc = rls_tier_unassign_at(h->db, action, key, now);
    else
        rc = rls_reset_at(h->db, action, key, now);
    out = done(env, h, rc, NULL);
    nd_unlock(h);
out:
    free(action);
    free(key);
    return out;
}

static napi_value nd_block_unset(napi_env env, napi_callback_info info)
{
    return key_call(env, info, 0);
}

static napi_value nd_tier_unassign(napi_env env, napi_callback_info info)
{
    return key_call(env, info, 1);
}

static napi_value nd_reset(napi_env env, napi_callback_info info)
{
    return key_call(env, info, 2);
}

/* tierAssign(h, action, key, tier, untilMs, now) */
static napi_value nd_tier_assign(napi_env env, napi_callback_info info)
{
    napi_value argv[6], out = NULL;
    char *action = NULL, *key = NULL, *tier = NULL;
    int64_t until = 0, now = 0;
    nd_handle *h;
    if (nd_args(env, info, 6, argv) || nd_str(env, argv[1], "action", 1, &action) ||
        nd_key(env, argv[2], "key", &key) || nd_str(env, argv[3], "tier", 0, &tier) ||
        nd_i64(env, argv[4], "untilMs", RLS_ETIME, 1, 0, &until) ||
        nd_i64(env, argv[5], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    out = done(env, h, rls_tier_assign_at(h->db, action, key, tier, until, now), NULL);
    nd_unlock(h);
out:
    free(action);
    free(key);
    free(tier);
    return out;
}

/* overrideSet(h, action, key, limitName, limit, untilMs, now) and
 * overrideUnset(h, action, key, limitName, now) */
static napi_value override_call(napi_env env, napi_callback_info info, int set)
{
    napi_value argv[7], out = NULL;
    char *action = NULL, *key = NULL, *name = NULL;
    int64_t limit = 0, until = 0, now = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, set ? 7 : 5, argv) || nd_str(env, argv[1], "action", 0, &action) ||
        nd_key(env, argv[2], "key", &key) || nd_str(env, argv[3], "limitName", 0, &name) ||
        (set && (nd_i64(env, argv[4], "limit", RLS_EINVAL, 0, 0, &limit) ||
                 nd_i64(env, argv[5], "untilMs", RLS_ETIME, 1, 0, &until))) ||
        nd_i64(env, argv[set ? 6 : 4], "nowMs", RLS_ETIME, 0, 0, &now))
        goto out;
    if (!(h = nd_lock(env, argv[0])))
        goto out;
    rc = set ? rls_override_set_at(h->db, action, key, name, limit, until, now)
             : rls_override_unset_at(h->db, action, key, name, now);
    out = done(env, h, rc, NULL);
    nd_unlock(h);
out:
    free(action);
    free(key);
    free(name);
    return out;
}

static napi_value nd_override_set(napi_env env, napi_callback_info info)
{
    return override_call(env, info, 1);
}

static napi_value nd_override_unset(napi_env env, napi_callback_info info)
{
    return override_call(env, info, 0);
}

/* gc(h, maxRows, now) -> rows deleted */
static napi_value nd_gc(napi_env env, napi_callback_info info)
{
    napi_value argv[3], out;
    int64_t max = 0, now = 0, deleted = 0;
    nd_handle *h;
    int rc;
    if (nd_args(env, info, 3, argv) || nd_i64(env, argv[1], "maxRows", RLS_EINVAL, 1, 1000, &max) ||
        nd_i64(env, argv[2], "nowMs", RLS_ETIME, 0, 0, &now))
        return NULL;
    if (max < 1 || max > 2147483647)
        return nd_throw(env, RLS_EINVAL, "maxRows out of range", NULL);
    if (!(h = nd_lock(env, argv[0])))
        return NULL;
    rc = rls_gc_at(h->db, (int)max, now, &deleted);
    out = done(env, h, rc, rc ? NULL : nd_int(env, deleted));
    nd_unlock(h);
    return out;
}

const nd_fn nd_admin_fns[] = {
    {"rulesApply", nd_rules_apply},       {"rulesDryRun", nd_rules_dry_run},
    {"rulesRollback", nd_rules_rollback}, {"rulesVersions", nd_rules_versions},
    {"rulesGet", nd_rules_get},           {"rulesDescribe", nd_rules_describe},
    {"blockSet", nd_block_set},           {"blockUnset", nd_block_unset},
    {"tierAssign", nd_tier_assign},       {"tierUnassign", nd_tier_unassign},
    {"overrideSet", nd_override_set},     {"overrideUnset", nd_override_unset},
    {"reset", nd_reset},                  {"gc", nd_gc},
    {NULL, NULL},
};
