/*
 * apply.c - applying a YAML rule set: validate fully in core, then in one
 * fully synchronous transaction store it as a new version, register limit
 * ids, make it active (bumping the rules generation so every handle reloads
 * at its next check) and write the audit row.  A file that does not
 * validate changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "config.h"
#include "db.h"

/*
 * Limit ids are per variant (rules.h rls__rule_limit_sig): (action, name) plus
 * what a state means.  A rule change to another window or algorithm gets
 * another id, so the states of the old variant stay as they were: should
 * it come back (a change and back, a rollback), the quota it spent in its
 * current window is still spent (cache.c, decide.h).  The stored name is
 * "name" US "variant"; a row named "name" alone was registered before
 * variants existed.
 */
static int step_limit(rls_db *db, int id, const char *action, const char *a2, const char *a3)
{
    rls_stmt *st = rls__stmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_text(st, 1, action, -1, SQL_STATIC);
    sql_bind_text(st, 2, a2, -1, SQL_STATIC);
    if (a3)
        sql_bind_text(st, 3, a3, -1, SQL_STATIC);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot register limit");
}

/* The first definition of (action, name) in rs: a default, else a tier's. */
static const rule_limit *first_def(const ruleset *rs, const char *action, const char *name)
{
    const rule_action *a = rs ? rls__ruleset_action(rs, action) : NULL;
    for (int t = -1; a && t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int i = 0; i < n; i++)
            if (strcmp(ls[i].name, name) == 0)
                return &ls[i];
    }
    return NULL;
}

static int register_limit(rls_db *db, const char *action, const rule_limit *l)
{
    char reg[RULES_NAME_MAX + RULES_SIG_MAX + 2];
    const rule_limit *old = first_def(db->rc.rules, action, l->name);
    int rc = RLS_OK;
    if (old) {
        /* the states of a row from before variants were counted under the
         * rules active until now */
        rls__limit_regname(old, reg, sizeof reg);
        rc = step_limit(db, STMT_LIMIT_ADOPT, action, l->name, reg);
    }
    rls__limit_regname(l, reg, sizeof reg);
    return rc ? rc : step_limit(db, STMT_LIMIT_ADD, action, reg, NULL);
}

static int register_limits(rls_db *db, const ruleset *rs)
{
    int rc = RLS_OK;
    for (int i = 0; i < rs->nactions && rc == RLS_OK; i++) {
        const rule_action *a = &rs->actions[i];
        for (int j = 0; j < a->nlimits && rc == RLS_OK; j++)
            rc = register_limit(db, a->name, &a->limits[j]);
        for (int t = 0; t < a->ntiers && rc == RLS_OK; t++)
            for (int j = 0; j < a->tiers[t].nlimits && rc == RLS_OK; j++)
                rc = register_limit(db, a->name, &a->tiers[t].limits[j]);
    }
    return rc;
}

static int store_version(rls_db *db, const char *yaml, size_t len, const char *name,
                         const char *comment, int64_t now, int64_t *version)
{
    rls_stmt *st = rls__stmt(db, STMT_RULESET_ADD);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, now);
    sql_bind_text(st, 2, db->ident.os_user, -1, SQL_STATIC);
    sql_bind_text(st, 3, db->ident.tool, -1, SQL_STATIC);
    sql_bind_text(st, 4, name ? name : "", -1, SQL_STATIC);
    sql_bind_text(st, 5, comment ? comment : "", -1, SQL_STATIC);
    sql_bind_text(st, 6, yaml, (int)len, SQL_STATIC);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *version = sql_column_int64(st, 0);
    sql_reset(st);
    if (rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot store rule set");
    st = rls__stmt(db, STMT_META_ACTIVATE);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, *version);
    rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot activate rule set");
}

int rls__rules_parse(rls_db *db, const char *yaml, size_t len, const char *name,
                     int64_t now_ms, ruleset **out)
{
    config_errors *errs;
    int rc = rls__db_usable(db);

    *out = NULL;
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if (!yaml)
        return rls__error(db, RLS_EINVAL, "yaml is NULL");
    if (len > CONFIG_MAX_BYTES || len > (size_t)INT32_MAX)
        return rls__error(db, RLS_ECONFIG, "%s: larger than %u bytes", name ? name : "rules",
                          CONFIG_MAX_BYTES);
    if (now_ms < RLS_TIME_MIN || now_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999",
                          (long long)now_ms);
    errs = malloc(sizeof *errs);
    if (!errs)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    int prc = rls__config_parse(yaml, len, out, errs);
    if (prc != 0) {
        char where[256];
        if (prc == -2)
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
        else if (errs->n > 0 &&
                 rls__config_error_format(&errs->e[0], name ? name : "rules", where, sizeof where) >= 0)
            rc = errs->total > 1
                     ? rls__error(db, RLS_ECONFIG, "%s (and %d more errors)", where,
                                  errs->total - 1)
                     : rls__error(db, RLS_ECONFIG, "%s", where);
        else
            rc = rls__error(db, RLS_ECONFIG, "%s: invalid configuration", name ? name : "rules");
    }
    free(errs);
    return rc;
}

/*
 * The store step in the caller's write transaction.  With `same_ok` and
 * rules that are the same as the active ones (rls__ruleset_same: parsed
 * content, not text), nothing is written, not even an audit row: *version
 * gets the active version and *stored 0.  The comparison is made under the
 * control row's lock, after the cache read the active version of this
 * transaction, so it cannot miss an apply that committed meanwhile.
 */
static int store_tx(rls_db *db, const char *yaml, size_t len, const ruleset *rs,
                    const char *name, const char *comment, const char *op, int64_t expect,
                    int same_ok, int64_t now_ms, int64_t *version, int *stored)
{
    char before[64], after[64];
    int64_t v = 0;
    int rc;

    *stored = 0;
    if ((rc = rls__exec_simple(db, STMT_META_LOCK)) == RLS_OK &&
        (rc = rls__cache_refresh(db)) == RLS_OK && expect >= 0 &&
        db->rc.active_version != expect)
        rc = rls__error(db, RLS_ECONFLICT, "the active rules are version %lld, not %lld",
                        (long long)db->rc.active_version, (long long)expect);
    if (rc == RLS_OK && same_ok && db->rc.active_version > 0 &&
        rls__ruleset_same(rs, db->rc.rules)) {
        if (version)
            *version = db->rc.active_version;
        return RLS_OK;
    }
    if (rc == RLS_OK && (rc = register_limits(db, rs)) == RLS_OK) {
        snprintf(before, sizeof before, "version %lld", (long long)db->rc.active_version);
        rc = store_version(db, yaml, len, name, comment, now_ms, &v);
    }
    if (rc == RLS_OK) {
        snprintf(after, sizeof after, "version %lld", (long long)v);
        rc = rls__audit(db, now_ms, op, "", NULL, before, after, comment ? comment : "");
    }
    if (rc == RLS_OK && version)
        *version = v;
    *stored = rc == RLS_OK;
    return rc;
}

int rls__rules_store_tx(rls_db *db, const char *yaml, size_t len, const ruleset *rs,
                        const char *name, const char *comment, const char *op, int64_t expect,
                        int64_t now_ms, int64_t *version)
{
    int stored;
    return store_tx(db, yaml, len, rs, name, comment, op, expect, 0, now_ms, version, &stored);
}

struct store_arg {
    const char *yaml, *name, *comment, *op;
    size_t len;
    const ruleset *rs;
    int64_t expect, now, version;
    int same_ok, stored;
};

static int store_fn(rls_db *db, void *p)
{
    struct store_arg *a = p;
    return store_tx(db, a->yaml, a->len, a->rs, a->name, a->comment, a->op, a->expect,
                    a->same_ok, a->now, &a->version, &a->stored);
}

static int store(rls_db *db, struct store_arg *a)
{
    int rc;
    if ((rc = rls__rules_writable(db)))
        return rc;
    sql_durable(db, 1);
    rc = rls__write_tx(db, store_fn, a);
    rls__durable_restore(db);
    return rc;
}

int rls__rules_store(rls_db *db, const char *yaml, size_t len, const ruleset *rs,
                     const char *name, const char *comment, const char *op, int64_t expect,
                     int64_t now_ms, int64_t *version)
{
    struct store_arg a = {yaml, name, comment, op, len, rs, expect, now_ms, 0, 0, 0};
    int rc = store(db, &a);
    if (rc == RLS_OK && version)
        *version = a.version;
    return rc;
}

/*
 * RLS_APPLY_DRY_RUN: would rs be stored?  The active version (*version; 0
 * none) is read in a read transaction and parsed as an apply would; nothing
 * is locked for writing.  *store 1 if the rules differ or none are active.
 */
static int would_store(rls_db *db, const ruleset *rs, int64_t *version, int *store)
{
    char *yaml = NULL;
    size_t len = 0;
    ruleset *old = NULL;
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    rc = rls__rules_active(db, version);
    if (rc == RLS_OK)
        rc = rls__rules_yaml(db, *version, &yaml, &len);
    if (rc == RLS_OK || rc == RLS_ENORULES) {
        int none = rc == RLS_ENORULES;
        if ((rc = rls__commit(db)) == RLS_OK && !none)
            rc = rls__rules_parse(db, yaml, len, "active rules", RLS_TIME_MIN, &old);
        db->errmsg[0] = '\0';   /* "no rules" is an answer here, not an error */
    } else {
        rls__rollback(db);
    }
    *store = rc == RLS_OK && !rls__ruleset_same(rs, old);
    rls__ruleset_free(old);
    free(yaml);
    return rc;
}

/* Contract in rlstore.h (rls_rules_apply_v2_at); expect -1 = any version. */
static int apply(rls_db *db, const char *yaml, size_t len, const char *name,
                 const char *comment, unsigned int flags, int64_t expect, int64_t now_ms,
                 int64_t *version, int *changed)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    ruleset *rs = NULL;
    struct store_arg a = {yaml, name, comment, "rules.apply", len, NULL, expect, now_ms, 0,
                          !(flags & RLS_APPLY_FORCE), 0};
    int rc = rls__rules_parse(db, yaml, len, name, now_ms, &rs);
    if (rc == RLS_OK && (flags & ~(unsigned int)(RLS_APPLY_FORCE | RLS_APPLY_DRY_RUN)))
        rc = rls__error(db, RLS_EINVAL, "unknown flags 0x%x", flags);
    if (rc == RLS_OK && (flags & RLS_APPLY_DRY_RUN)) {
        rc = would_store(db, rs, &a.version, &a.stored);
        a.stored |= rc == RLS_OK && (flags & RLS_APPLY_FORCE);
    } else if (rc == RLS_OK) {
        a.rs = rs;
        rc = store(db, &a);
    }
    rls__ruleset_free(rs);
    if (rc == RLS_OK && version)
        *version = a.version;
    if (changed)
        *changed = rc == RLS_OK && a.stored;
    return rc;
}

int rls_rules_apply_v2_at(rls_db *db, const char *yaml, size_t len, const char *name,
                          const char *comment, unsigned int flags, int64_t now_ms,
                          int64_t *version, int *changed)
{
    return apply(db, yaml, len, name, comment, flags, -1, now_ms, version, changed);
}

int rls_rules_apply_v2(rls_db *db, const char *yaml, size_t len, const char *name,
                       const char *comment, unsigned int flags, int64_t *version, int *changed)
{
    return apply(db, yaml, len, name, comment, flags, -1, rls__now_or_invalid(), version,
                 changed);
}

int rls_rules_apply_at(rls_db *db, const char *yaml, size_t len, const char *name,
                       const char *comment, int64_t now_ms, int64_t *version)
{
    return apply(db, yaml, len, name, comment, 0, -1, now_ms, version, NULL);
}

int rls_rules_apply_if_at(rls_db *db, const char *yaml, size_t len, const char *name,
                          const char *comment, int64_t expect, int64_t now_ms, int64_t *version)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    if (expect < 0)
        return db ? rls__error(db, RLS_EINVAL, "expected version %lld is invalid",
                               (long long)expect) : RLS_EINVAL;
    return apply(db, yaml, len, name, comment, 0, expect, now_ms, version, NULL);
}

int rls_rules_apply(rls_db *db, const char *yaml, size_t len, const char *name,
                    const char *comment, int64_t *version)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return rls_rules_apply_at(db, yaml, len, name, comment, rls__now_or_invalid(), version);
}
