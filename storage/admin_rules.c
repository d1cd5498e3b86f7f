/*
 * admin_rules.c - rule-set history: listing versions, reading one,
 * rolling back (as a new version, so history only grows) and the dry run
 * of a new file against the counters stored now.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "algo.h"
#include "duration.h"
#include "keynorm.h"
#include "window.h"

int rls_rules_versions(rls_db *db, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"version", RLS_COL_INT}, {"created_ms", RLS_COL_INT}, {"os_user", RLS_COL_TEXT},
        {"tool", RLS_COL_TEXT},   {"source", RLS_COL_TEXT},    {"comment", RLS_COL_TEXT},
        {"bytes", RLS_COL_INT},   {"active", RLS_COL_INT},
    };
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    rls_stmt *st = rls__astmt(db, ASTMT_VERSIONS);
    rc = st ? rls__rows_from_stmt(db, st, cols, 8, out) : rls__stmt_failed(db);
    return rls__listing_end(db, rc, out);
}

int rls__rules_active(rls_db *db, int64_t *version)
{
    rls_stmt *st = rls__astmt(db, ASTMT_RULES_ACTIVE);
    if (!st)
        return rls__stmt_failed(db);
    int rc = sql_step(st);
    *version = rc == SQL_ROW ? sql_column_int64(st, 0) : 0;
    sql_reset(st);
    if (rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot read control row");
    if (*version == 0)
        return rls__error(db, RLS_ENORULES, "no rules applied to '%s' yet", db->ident.path);
    return RLS_OK;
}

int rls__rules_yaml(rls_db *db, int64_t version, char **yaml, size_t *len)
{
    rls_stmt *st;
    int rc, active = version == 0;
    if (active && (rc = rls__rules_active(db, &version)) != RLS_OK)
        return rc;
    st = rls__stmt(db, STMT_RULES_GET);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, version);
    rc = sql_step(st);
    if (rc != SQL_ROW) {
        sql_reset(st);
        if (rc == SQL_DONE && active)
            return rls__error(db, RLS_ECORRUPT, "active rule set %lld is missing",
                              (long long)version);
        if (rc == SQL_DONE)
            return rls__error(db, RLS_ENOTFOUND, "rule set version %lld does not exist",
                              (long long)version);
        return rls__sql_error(db, rc, "cannot read rules");
    }
    size_t n = (size_t)sql_column_bytes(st, 0);
    char *copy = malloc(n + 1);
    if (copy) {
        if (n)
            memcpy(copy, sql_column_text(st, 0), n);
        copy[n] = '\0';
    }
    sql_reset(st);
    if (!copy)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    *yaml = copy;
    if (len)
        *len = n;
    return RLS_OK;
}

int rls_rules_get(rls_db *db, int64_t version, char **yaml, size_t *len)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    if (!yaml)
        return db ? rls__error(db, RLS_EINVAL, "yaml is NULL") : RLS_EINVAL;
    *yaml = NULL;
    if (version < 0)
        return db ? rls__error(db, RLS_EINVAL, "version %lld is invalid", (long long)version)
                  : RLS_EINVAL;
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    rc = rls__rules_yaml(db, version, yaml, len);
    if (rc == RLS_OK && (rc = rls__commit(db)) != RLS_OK) {
        free(*yaml);
        *yaml = NULL;
    }
    if (rc != RLS_OK)
        rls__rollback(db);
    return rc;
}

int rls_rules_rollback_at(rls_db *db, int64_t version, const char *comment, int64_t now_ms,
                          int64_t *new_version)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    char *yaml = NULL, source[64];
    size_t len = 0;
    ruleset *rs = NULL;
    if (version < 1)
        return db ? rls__error(db, RLS_EINVAL, "version %lld is invalid", (long long)version)
                  : RLS_EINVAL;
    int rc = rls_rules_get(db, version, &yaml, &len);
    if (rc)
        return rc;
    snprintf(source, sizeof source, "rollback to version %lld", (long long)version);
    rc = rls__rules_parse(db, yaml, len, source, now_ms, &rs);
    if (rc == RLS_OK)
        rc = rls__rules_store(db, yaml, len, rs, source, comment, "rules.rollback", -1, now_ms,
                              new_version);
    rls__ruleset_free(rs);
    free(yaml);
    return rc;
}

/* ---- dry run ------------------------------------------------------------ */

static const rule_limit *old_limit(const ruleset *old, const char *action, const char *tier,
                                   const char *name)
{
    const rule_action *a = old ? rls__ruleset_action(old, action) : NULL;
    if (!a)
        return NULL;
    if (tier) {
        for (int t = 0; t < a->ntiers; t++)
            for (int i = 0; strcmp(a->tiers[t].tier, tier) == 0 && i < a->tiers[t].nlimits; i++)
                if (strcmp(a->tiers[t].limits[i].name, name) == 0)
                    return &a->tiers[t].limits[i];
    }
    for (int i = 0; i < a->nlimits; i++)
        if (strcmp(a->limits[i].name, name) == 0)
            return &a->limits[i];
    return NULL;
}

static int same_limit(const rule_limit *a, const rule_limit *b)
{
    return a && b && a->algorithm == b->algorithm && a->limit == b->limit &&
           a->burst == b->burst && a->window.ms == b->window.ms &&
           a->window.calendar == b->window.calendar && a->overage_pct == b->overage_pct &&
           a->anchor == b->anchor && strcmp(rls__tz_name(a->tz), rls__tz_name(b->tz)) == 0;
}

static int64_t lookup_lid(rls_db *db, const char *action, const char *name)
{
    for (int i = 0; db->rc.rules && i < db->rc.rules->nactions; i++) {
        const rule_action *a = &db->rc.rules->actions[i];
        if (strcmp(a->name, action) != 0)
            continue;
        for (int j = 0; j < a->nlimits; j++)
            if (strcmp(a->limits[j].name, name) == 0)
                return a->limits[j].id;
        for (int t = 0; t < a->ntiers; t++)
            for (int j = 0; j < a->tiers[t].nlimits; j++)
                if (strcmp(a->tiers[t].limits[j].name, name) == 0)
                    return a->tiers[t].limits[j].id;
    }
    return 0;
}

/* Keys whose stored state is at or over limit l (new) while the old rule
 * (if any) had room, appended to out. */
static int scan_limit(rls_db *db, const char *action, const char *tier, const rule_limit *l,
                      const rule_limit *was, int64_t now, rls_rows *out)
{
    int64_t lid = lookup_lid(db, action, l->name);
    rls_stmt *st = rls__astmt(db, ASTMT_STATE_SCAN_LID);
    int rc;
    if (lid == 0)
        return RLS_OK;  /* a new name: nobody has used it yet */
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, lid);
    while ((rc = sql_step(st)) == SQL_ROW) {
        algo_state s = {0};
        algo_params p = {l->algorithm, l->limit, l->burst > 0 ? l->burst : l->limit,
                         l->window.ms, l->anchor == ANCHOR_FIRST_HIT, l->count_denied};
        algo_window w;
        algo_meta m;
        unsigned char *logbuf = NULL;
        if (sql_column_int(st, 1) != l->algorithm)
            continue;  /* another algorithm: the new rule starts it fresh */
        s.present = 1;
        s.a = sql_column_int64(st, 2);
        s.b = sql_column_int64(st, 3);
        s.c = sql_column_int64(st, 4);
        s.last_ms = sql_column_int64(st, 5);
        s.expires_ms = sql_column_int64(st, 6);
        int bytes = sql_column_bytes(st, 7);
        if (l->algorithm == ALGO_SLIDING_LOG) {
            logbuf = malloc((size_t)bytes + ALGO_LOG_ENTRY);
            if (!logbuf) {
                rc = SQL_NOMEM;
                break;
            }
            if (bytes)
                memcpy(logbuf, sql_column_blob(st, 7), (size_t)bytes);
            s.log = logbuf;
            s.log_len = (size_t)bytes;
            s.log_cap = (size_t)bytes + ALGO_LOG_ENTRY;
        }
        int64_t t = now > s.last_ms ? now : s.last_ms;
        rls__window_at(&l->window, l->tz, t, &w.prev_start, &w.start, &w.end);
        w.next_end = 0;
        int ok = rls__algo_decide(&p, &w, &s, t, 1, 0, &m) == 0;
        /* units in use, past the capacity too (algo.h) */
        int64_t used = m.used;
        free(logbuf);
        if (!ok || m.allowed)
            continue;
        int row = rls__rows_add(out);
        const char *key = (const char *)sql_column_text(st, 0);
        if (row < 0 || rls__rows_put_str(out, row, "action", action) ||
            rls__rows_put_str(out, row, "tier", tier ? tier : "") ||
            rls__rows_put_str(out, row, "key", key ? key : "") ||
            rls__rows_put_str(out, row, "limit", l->name) ||
            rls__rows_put_int(out, row, "used", used) ||
            rls__rows_put_int(out, row, "old_limit", was ? (rls__algo_is_bucket(was->algorithm) &&
                                                       was->burst ? was->burst : was->limit)
                                                    : 0) ||
            rls__rows_put_int(out, row, "new_limit", m.capacity)) {
            rc = SQL_NOMEM;
            break;
        }
    }
    sql_reset(st);
    if (rc == SQL_NOMEM)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot scan counters");
}

int rls_rules_dry_run_at(rls_db *db, const char *yaml, size_t len, const char *name,
                         int64_t now_ms, rls_rows **over)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"action", RLS_COL_TEXT}, {"tier", RLS_COL_TEXT},     {"key", RLS_COL_TEXT},
        {"limit", RLS_COL_TEXT},  {"used", RLS_COL_INT},      {"old_limit", RLS_COL_INT},
        {"new_limit", RLS_COL_INT},
    };
    ruleset *rs = NULL;
    if (!over)
        return db ? rls__error(db, RLS_EINVAL, "over is NULL") : RLS_EINVAL;
    *over = NULL;
    int rc = rls__rules_parse(db, yaml, len, name, now_ms, &rs);
    if (rc)
        return rc;
    rls_rows *out = rls__rows_new(cols, 7);
    if (!out) {
        rls__ruleset_free(rs);
        return rls__error(db, RLS_ENOMEM, "out of memory");
    }
    if ((rc = rls__begin(db, 0)) == RLS_OK) {
        rc = rls__cache_refresh(db);
        for (int i = 0; rc == RLS_OK && i < rs->nactions; i++) {
            const rule_action *a = &rs->actions[i];
            for (int j = 0; rc == RLS_OK && j < a->nlimits; j++) {
                const rule_limit *was = old_limit(db->rc.rules, a->name, NULL, a->limits[j].name);
                if (!same_limit(was, &a->limits[j]))
                    rc = scan_limit(db, a->name, NULL, &a->limits[j], was, now_ms, out);
            }
            for (int t = 0; rc == RLS_OK && t < a->ntiers; t++)
                for (int j = 0; rc == RLS_OK && j < a->tiers[t].nlimits; j++) {
                    const rule_limit *l = &a->tiers[t].limits[j];
                    const rule_limit *was = old_limit(db->rc.rules, a->name, a->tiers[t].tier,
                                                      l->name);
                    if (!same_limit(was, l))
                        rc = scan_limit(db, a->name, a->tiers[t].tier, l, was, now_ms, out);
                }
        }
        if (rc == RLS_OK)
            rc = rls__commit(db);
        else
            rls__rollback(db);
    }
    rls__ruleset_free(rs);
    if (rc) {
        rls_rows_free(out);
        return rc;
    }
    *over = out;
    return RLS_OK;
}

/* ---- describe ----------------------------------------------------------- */

static const char *const durability_names[] = {"normal", "full", "memory"};

static int put_limit(rls_rows *r, const rule_action *a, const char *tier, const rule_limit *l)
{
    char win[32], blocks[RULES_BLOCK_STEPS * 24] = "";
    size_t len = 0;
    rls__duration_format(&l->window, win, sizeof win);
    for (int i = 0; i < l->nblock_for; i++) {
        rls_duration d = {l->block_for[i], DUR_FIXED};
        char one[32];
        rls__duration_format(&d, one, sizeof one);
        len += (size_t)snprintf(blocks + len, sizeof blocks - len, "%s%s", i ? "," : "", one);
        if (len >= sizeof blocks)
            break;
    }
    int row = rls__rows_add(r);
    return row < 0 || rls__rows_put_str(r, row, "action", a->name) ||
                   rls__rows_put_str(r, row, "key_kind", rls__key_kind_name(a->key_kind)) ||
                   rls__rows_put_str(r, row, "tier", tier) || rls__rows_put_str(r, row, "name", l->name) ||
                   rls__rows_put_str(r, row, "algorithm", rls__algo_name(l->algorithm)) ||
                   rls__rows_put_int(r, row, "limit", l->limit) ||
                   rls__rows_put_int(r, row, "burst", l->burst > 0 ? l->burst : l->limit) ||
                   rls__rows_put_str(r, row, "window", win) ||
                   rls__rows_put_int(r, row, "window_ms", l->window.ms) ||
                   rls__rows_put_str(r, row, "timezone", rls__tz_name(l->tz)) ||
                   rls__rows_put_int(r, row, "calendar", l->window.calendar != DUR_FIXED) ||
                   rls__rows_put_str(r, row, "anchor",
                                l->anchor == ANCHOR_FIRST_HIT ? "first_hit" : "aligned") ||
                   rls__rows_put_str(r, row, "mode", l->mode == MODE_SHADOW ? "shadow" : "enforce") ||
                   rls__rows_put_str(r, row, "block_for", blocks) ||
                   rls__rows_put_int(r, row, "overage", l->overage_pct) ||
                   rls__rows_put_int(r, row, "count_denied", l->count_denied) ||
                   rls__rows_put_str(r, row, "durability", durability_names[l->durability])
               ? -1 : 0;
}

static int describe(const ruleset *rs, rls_rows **tiers, rls_rows **limits)
{
    static const rows_col tcols[] = {
        {"name", RLS_COL_TEXT}, {"unlimited", RLS_COL_INT}, {"blocked", RLS_COL_INT},
        {"is_default", RLS_COL_INT},
    };
    static const rows_col lcols[] = {
        {"action", RLS_COL_TEXT},   {"key_kind", RLS_COL_TEXT},  {"tier", RLS_COL_TEXT},
        {"name", RLS_COL_TEXT},     {"algorithm", RLS_COL_TEXT}, {"limit", RLS_COL_INT},
        {"burst", RLS_COL_INT},     {"window", RLS_COL_TEXT},    {"window_ms", RLS_COL_INT},
        {"timezone", RLS_COL_TEXT}, {"anchor", RLS_COL_TEXT},    {"mode", RLS_COL_TEXT},
        {"block_for", RLS_COL_TEXT}, {"overage", RLS_COL_INT},   {"count_denied", RLS_COL_INT},
        {"durability", RLS_COL_TEXT}, {"calendar", RLS_COL_INT},
    };
    if (tiers) {
        rls_rows *t = rls__rows_new(tcols, 4);
        for (int i = 0; t && i < rs->ntiers; i++) {
            const rule_tier *tr = &rs->tiers[i];
            int row = rls__rows_add(t);
            if (row < 0 || rls__rows_put_str(t, row, "name", tr->name) ||
                rls__rows_put_int(t, row, "unlimited", tr->unlimited) ||
                rls__rows_put_int(t, row, "blocked", tr->blocked) ||
                rls__rows_put_int(t, row, "is_default", strcmp(tr->name, rs->default_tier) == 0)) {
                rls_rows_free(t);
                t = NULL;
            }
        }
        if (!t)
            return -1;
        *tiers = t;
    }
    if (limits) {
        rls_rows *l = rls__rows_new(lcols, (int)(sizeof lcols / sizeof lcols[0]));
        for (int i = 0; l && i < rs->nactions; i++) {
            const rule_action *a = &rs->actions[i];
            for (int j = 0; l && j < a->nlimits; j++)
                if (put_limit(l, a, "", &a->limits[j])) {
                    rls_rows_free(l);
                    l = NULL;
                }
            for (int t = 0; l && t < a->ntiers; t++)
                for (int j = 0; l && j < a->tiers[t].nlimits; j++)
                    if (put_limit(l, a, a->tiers[t].tier, &a->tiers[t].limits[j])) {
                        rls_rows_free(l);
                        l = NULL;
                    }
        }
        if (!l) {
            if (tiers) {
                rls_rows_free(*tiers);
                *tiers = NULL;
            }
            return -1;
        }
        *limits = l;
    }
    return 0;
}

int rls_rules_describe(rls_db *db, int64_t version, rls_rows **tiers, rls_rows **limits)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    char *yaml = NULL;
    size_t len = 0;
    ruleset *rs = NULL;
    if (tiers)
        *tiers = NULL;
    if (limits)
        *limits = NULL;
    int rc = rls_rules_get(db, version, &yaml, &len);
    if (rc)
        return rc;
    rc = rls__rules_parse(db, yaml, len, "stored rules", RLS_TIME_MIN, &rs);
    free(yaml);
    if (rc == RLS_OK && describe(rs, tiers, limits) != 0)
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    rls__ruleset_free(rs);
    return rc;
}
