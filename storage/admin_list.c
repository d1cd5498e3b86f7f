/*
 * admin_list.c - listings of per-key policy, the audit log and stats, and
 * resetting a key's counters.  Listings run in a read transaction and
 * return rls_rows (admin.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "memclass.h"
#include "keyctx.h"
#include "keycount.h"
#include "keynorm.h"

/* Runs one listing statement (bound by bind) in a read transaction. */
typedef void (*binder)(rls_stmt *st, const void *arg);

static int listing(rls_db *db, int id, binder bind, const void *arg, const rows_col *cols,
                   int ncols, rls_rows **out)
{
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    rls_stmt *st = rls__astmt(db, id);
    if (!st) {
        rls__rollback(db);
        return rls__stmt_failed(db);
    }
    if (bind)
        bind(st, arg);
    rc = rls__cache_refresh(db);  /* listings that add the file's rows use it */
    if (rc == RLS_OK)
        rc = rls__rows_from_stmt(db, st, cols, ncols, out);
    sql_clear_bindings(st);
    return rls__listing_end(db, rc, out);
}

static void bind_now(rls_stmt *st, const void *arg)
{
    sql_bind_int64(st, 1, *(const int64_t *)arg);
}

static int check_time(rls_db *db, int64_t now)
{
    if (db && (now < RLS_TIME_MIN || now > RLS_TIME_MAX))
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now);
    return RLS_OK;
}

static const char *kind_name(int kind)
{
    return kind == PAT_CIDR ? "cidr" : kind == PAT_PREFIX ? "prefix" : "exact";
}

int rls_tier_list_at(rls_db *db, int64_t now_ms, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"pattern", RLS_COL_TEXT}, {"kind", RLS_COL_INT},        {"action", RLS_COL_TEXT},
        {"tier", RLS_COL_TEXT},    {"expires_ms", RLS_COL_INT},  {"created_ms", RLS_COL_INT},
    };
    static const rows_col outcols[] = {
        {"pattern", RLS_COL_TEXT}, {"kind", RLS_COL_TEXT},       {"action", RLS_COL_TEXT},
        {"tier", RLS_COL_TEXT},    {"expires_ms", RLS_COL_INT},  {"created_ms", RLS_COL_INT},
        {"source", RLS_COL_TEXT},
    };
    rls_rows *raw = NULL, *res = NULL;
    int rc = check_time(db, now_ms);
    if (rc == RLS_OK)
        rc = listing(db, ASTMT_TIER_LIST, bind_now, &now_ms, cols, 6, &raw);
    if (rc)
        return rc;
    res = rls__rows_new(outcols, 7);
    if (!res)
        goto oom;
    for (int i = 0; i < rls_rows_count(raw); i++) {
        int r = rls__rows_add(res);
        if (r < 0 || rls__rows_put_str(res, r, "pattern", rls_rows_text(raw, i, 0)) ||
            rls__rows_put_str(res, r, "kind", kind_name((int)rls_rows_int(raw, i, 1))) ||
            rls__rows_put_str(res, r, "action", rls_rows_text(raw, i, 2)) ||
            rls__rows_put_str(res, r, "tier", rls_rows_text(raw, i, 3)) ||
            rls__rows_put_int(res, r, "expires_ms", rls_rows_int(raw, i, 4)) ||
            rls__rows_put_int(res, r, "created_ms", rls_rows_int(raw, i, 5)) ||
            rls__rows_put_str(res, r, "source", "operator"))
            goto oom;
    }
    /* the file's assignments, from the cache the listing just refreshed */
    for (int i = 0; db->rc.rules && i < db->rc.rules->nassignments; i++) {
        const rule_assignment *a = &db->rc.rules->assignments[i];
        key_pattern pat;
        const char *why;
        if (a->expires_ms && a->expires_ms <= now_ms)
            continue;
        if (rls__key_pattern_parse(a->key, &pat, &why) != 0)
            continue;
        int r = rls__rows_add(res);
        if (r < 0 || rls__rows_put_str(res, r, "pattern", a->key) ||
            rls__rows_put_str(res, r, "kind", kind_name(pat.kind)) ||
            rls__rows_put_str(res, r, "action", a->action) || rls__rows_put_str(res, r, "tier", a->tier) ||
            rls__rows_put_int(res, r, "expires_ms", a->expires_ms) ||
            rls__rows_put_int(res, r, "created_ms", 0) || rls__rows_put_str(res, r, "source", "file"))
            goto oom;
    }
    rls_rows_free(raw);
    *out = res;
    return RLS_OK;
oom:
    rls_rows_free(raw);
    rls_rows_free(res);
    return rls__error(db, RLS_ENOMEM, "out of memory");
}

/* ---- listings filtered by a key, in any spelling ------------------------ */

/*
 * Does `stored`, the key of a row of `action` ("" for every action), name
 * `key`: as written, in its canonical form (rows of every action,
 * rls_policy(3)), or as the action normalises it (rows of one action)?
 * With the rules as the listing's transaction refreshed them.
 */
static int names_key(const rls_db *db, const char *stored, const char *action,
                     const char *key)
{
    char buf[RLS_KEY_MAX_LIMIT + 64];
    const char *why = "";
    if (!stored)
        return 0;
    if (strcmp(stored, key) == 0)
        return 1;
    if (!action || !*action)
        return rls__key_canonical(key, strlen(key), buf, sizeof buf) >= 0 && strcmp(buf, stored) == 0;
    const rule_action *a = db->rc.rules ? rls__ruleset_action(db->rc.rules, action) : NULL;
    return a && rls__key_normalize(a->key_kind, a->ipv4_prefix, a->ipv6_prefix, key, strlen(key),
                              buf, sizeof buf, &why) >= 0 && strcmp(buf, stored) == 0;
}

/* Appends row i of in (same columns) to out; -1 on OOM. */
static int copy_row(rls_rows *out, const rls_rows *in, int i)
{
    int row = rls__rows_add(out);
    for (int c = 0; row >= 0 && c < rls_rows_columns(in); c++) {
        if (rls_rows_is_null(in, i, c))
            continue;
        if (rls_rows_type(in, c) == RLS_COL_INT ? rls__rows_set_int(out, row, c, rls_rows_int(in, i, c))
                                                : rls__rows_set_text(out, row, c, rls_rows_text(in, i, c),
                                                                strlen(rls_rows_text(in, i, c))))
            return -1;
    }
    return row < 0 ? -1 : 0;
}

/* The rows of *rows whose key (column kcol) names key as their action
 * (column acol) sees it; replaces *rows. */
static int keep_key(rls_db *db, rls_rows **rows, const rows_col *cols, int ncols, int kcol,
                    int acol, const char *key)
{
    rls_rows *in = *rows, *out = rls__rows_new(cols, ncols);
    for (int i = 0; out && i < rls_rows_count(in); i++)
        if (names_key(db, rls_rows_text(in, i, kcol), rls_rows_text(in, i, acol), key) &&
            copy_row(out, in, i) != 0) {
            rls_rows_free(out);
            out = NULL;
        }
    rls_rows_free(in);
    *rows = out;
    return out ? RLS_OK : rls__error(db, RLS_ENOMEM, "out of memory");
}

struct override_filter {
    int64_t now;
    const char *action, *key;
};

static void bind_override(rls_stmt *st, const void *arg)
{
    const struct override_filter *f = arg;
    sql_bind_int64(st, 1, f->now);
    if (f->action)
        sql_bind_text(st, 2, f->action, -1, SQL_STATIC);
    if (f->key)
        sql_bind_text(st, 3, f->key, -1, SQL_STATIC);
}

int rls_override_list_at(rls_db *db, const char *action, const char *key, int64_t now_ms,
                         rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"key", RLS_COL_TEXT}, {"action", RLS_COL_TEXT},     {"limit_name", RLS_COL_TEXT},
        {"limit", RLS_COL_INT}, {"expires_ms", RLS_COL_INT}, {"created_ms", RLS_COL_INT},
    };
    /* rows are stored as their action normalises the key: the key filter
     * applies each row's action's normalisation (names_key) */
    struct override_filter f = {now_ms, action && *action ? action : NULL, NULL};
    int rc = check_time(db, now_ms);
    if (rc == RLS_OK)
        rc = listing(db, ASTMT_OVERRIDE_LIST, bind_override, &f, cols, 6, out);
    if (rc == RLS_OK && key && *key)
        rc = keep_key(db, out, cols, 6, 0, 1, key);
    return rc;
}

int rls_block_list_at(rls_db *db, int64_t now_ms, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"key", RLS_COL_TEXT},     {"action", RLS_COL_TEXT}, {"until_ms", RLS_COL_INT},
        {"kind", RLS_COL_TEXT},    {"level", RLS_COL_INT},   {"rule", RLS_COL_TEXT},
        {"reason", RLS_COL_TEXT},  {"os_user", RLS_COL_TEXT}, {"created_ms", RLS_COL_INT},
    };
    int rc = check_time(db, now_ms);
    return rc ? rc : listing(db, ASTMT_BLOCK_LIST, bind_now, &now_ms, cols, 9, out);
}

struct audit_filter {
    const char *key;
    int limit;
};

static void bind_audit(rls_stmt *st, const void *arg)
{
    const struct audit_filter *f = arg;
    if (f->key)
        sql_bind_text(st, 1, f->key, -1, SQL_STATIC);
    sql_bind_int64(st, 2, f->limit);
}

/* The stored forms of key a row may have: as written, canonical, and as
 * each action of the rules normalises it (at most AUDIT_FORMS). */
#define AUDIT_FORMS 64
static int key_forms(const rls_db *db, const char *key, char forms[][RLS_KEY_MAX_LIMIT + 64])
{
    int n = 0;
    const char *why = "";
    snprintf(forms[n++], RLS_KEY_MAX_LIMIT + 64, "%s", key);
    if (rls__key_canonical(key, strlen(key), forms[n], RLS_KEY_MAX_LIMIT + 64) >= 0)
        n++;
    for (int a = 0; db->rc.rules && a < db->rc.rules->nactions && n < AUDIT_FORMS; a++) {
        const rule_action *act = &db->rc.rules->actions[a];
        if (rls__key_normalize(act->key_kind, act->ipv4_prefix, act->ipv6_prefix, key, strlen(key),
                          forms[n], RLS_KEY_MAX_LIMIT + 64, &why) < 0)
            continue;
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = strcmp(forms[i], forms[n]) == 0;
        n += !dup;
    }
    return n;
}

typedef struct audit_ref {
    int64_t id;
    int t, row;
} audit_ref;

static int ref_newest_first(const void *a, const void *b)
{
    const audit_ref *x = a, *y = b;
    return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
}

/* The newest `limit` of rows[0..n) whose key names key; NULL on OOM. */
static rls_rows *audit_merge(const rls_db *db, rls_rows **rows, int n, const char *key,
                             int limit, const rows_col *cols, int ncols)
{
    int total = 0, m = 0;
    for (int t = 0; t < n; t++)
        total += rls_rows_count(rows[t]);
    audit_ref *refs = malloc(sizeof *refs * (size_t)(total > 0 ? total : 1));
    rls_rows *out = refs ? rls__rows_new(cols, ncols) : NULL;
    for (int t = 0; out && t < n; t++)
        for (int i = 0; i < rls_rows_count(rows[t]); i++)
            if (names_key(db, rls_rows_text(rows[t], i, 6), rls_rows_text(rows[t], i, 5), key))
                refs[m++] = (audit_ref){rls_rows_int(rows[t], i, 0), t, i};
    if (out)
        qsort(refs, (size_t)m, sizeof *refs, ref_newest_first);
    for (int i = 0, kept = 0; out && i < m && kept < limit; i++) {
        if (i > 0 && refs[i].id == refs[i - 1].id)
            continue;   /* found under two forms */
        if (copy_row(out, rows[refs[i].t], refs[i].row) != 0) {
            rls_rows_free(out);
            out = NULL;
        }
        kept++;
    }
    free(refs);
    return out;
}

/* The audit rows of key in any of its stored forms, one index lookup
 * each, newest first. */
static int audit_of_key(rls_db *db, const char *key, int limit, const rows_col *cols,
                        int ncols, rls_rows **out)
{
    rls_rows *rows[AUDIT_FORMS] = {0};
    int n = 0, rc;
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    char (*forms)[RLS_KEY_MAX_LIMIT + 64] = malloc(sizeof *forms * AUDIT_FORMS);
    if (!forms)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    if ((rc = rls__admin_begin_read(db))) {
        free(forms);
        return rc;
    }
    rls_stmt *st = rls__astmt(db, ASTMT_AUDIT_LIST);
    rc = st ? rls__cache_refresh(db) : rls__stmt_failed(db);
    if (rc == RLS_OK)
        n = key_forms(db, key, forms);
    for (int i = 0; rc == RLS_OK && i < n; i++) {
        struct audit_filter f = {forms[i], limit};
        bind_audit(st, &f);
        rc = rls__rows_from_stmt(db, st, cols, ncols, &rows[i]);
        sql_clear_bindings(st);
    }
    if (rc == RLS_OK)
        rc = rls__commit(db);
    else
        rls__rollback(db);
    if (rc == RLS_OK && !(*out = audit_merge(db, rows, n, key, limit, cols, ncols)))
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        rls_rows_free(rows[i]);
    free(forms);
    return rc;
}

int rls_audit_list(rls_db *db, const char *key, int limit, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"id", RLS_COL_INT},       {"ts_ms", RLS_COL_INT},  {"os_user", RLS_COL_TEXT},
        {"tool", RLS_COL_TEXT},    {"op", RLS_COL_TEXT},    {"action", RLS_COL_TEXT},
        {"key", RLS_COL_TEXT},     {"before", RLS_COL_TEXT}, {"after", RLS_COL_TEXT},
        {"reason", RLS_COL_TEXT},
    };
    if (db && (limit < 1 || limit > 100000))
        return rls__error(db, RLS_EINVAL, "limit %d is outside 1..100000", limit);
    if (key && *key)
        return audit_of_key(db, key, limit, cols, 10, out);
    struct audit_filter f = {NULL, limit};
    return listing(db, ASTMT_AUDIT_LIST, bind_audit, &f, cols, 10, out);
}

struct stats_window {
    int64_t from, to;
};

static void bind_stats(rls_stmt *st, const void *arg)
{
    const struct stats_window *w = arg;
    sql_bind_int64(st, 1, w->from);
    sql_bind_int64(st, 2, w->to);
}

int rls_stats_at(rls_db *db, int seconds, int64_t now_ms, rls_rows **recent, rls_rows **totals)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col rcols[] = {
        {"action", RLS_COL_TEXT}, {"sec", RLS_COL_INT}, {"allowed", RLS_COL_INT},
        {"denied", RLS_COL_INT},
    };
    static const rows_col tcols[] = {
        {"action", RLS_COL_TEXT}, {"allowed", RLS_COL_INT}, {"denied", RLS_COL_INT},
    };
    int rc = check_time(db, now_ms);
    if (rc)
        return rc;
    if (db && (seconds < 1 || seconds > 3600))
        return rls__error(db, RLS_EINVAL, "seconds %d is outside 1..3600", seconds);
    if (recent) {
        struct stats_window w = {now_ms / 1000 - seconds, now_ms / 1000};
        rc = listing(db, ASTMT_STATS_RECENT, bind_stats, &w, rcols, 4, recent);
    }
    if (rc == RLS_OK && totals) {
        rc = listing(db, ASTMT_STATS_TOTALS, NULL, NULL, tcols, 3, totals);
        if (rc && recent) {
            rls_rows_free(*recent);
            *recent = NULL;
        }
    }
    return rc;
}

/* ---- reset ------------------------------------------------------------- */

/* The ids of every limit of the action, whatever tier the key is in, and
 * of their other variants (cache.c), whose usage a check would carry over. */
static int64_t *action_lids(const rule_action *act, int *n)
{
    int cap = act->nlimits;
    for (int t = 0; t < act->ntiers; t++)
        cap += act->tiers[t].nlimits;
    cap *= 1 + RULES_SIB_MAX;
    int64_t *lids = malloc(sizeof *lids * (size_t)(cap > 0 ? cap : 1));
    *n = 0;
    for (int t = -1; lids && t < act->ntiers; t++) {
        const rule_limit *ls = t < 0 ? act->limits : act->tiers[t].limits;
        int m = t < 0 ? act->nlimits : act->tiers[t].nlimits;
        for (int i = 0; i < m; i++) {
            lids[(*n)++] = ls[i].id;
            for (int j = 0; j < ls[i].nsib; j++)
                lids[(*n)++] = ls[i].sib[j];
        }
    }
    return lids;
}

/* Counts the key's counter rows of those limits that are live at now, and
 * with del deletes its rows of them.  A state that has expired (equal to a
 * fresh one: GC's test, gc.c) is as good as swept: not counted, so whether
 * GC has taken it yet changes nothing; a reset that finds none live fails
 * with ENOTFOUND and its transaction deletes nothing (before, an unswept
 * one was "cleared"); one that finds some deletes every row of the key, as
 * before. */
static int key_rows(rls_db *db, const key_ctx *ctx, const int64_t *lids, int nlids, int del,
                    int64_t now, int *n)
{
    rls_stmt *get = rls__stmt(db, STMT_STATE_GET);
    rls_stmt *st = del ? rls__astmt(db, ASTMT_STATE_DEL_KEY) : get;
    int rows = 0;
    *n = 0;
    if (!get || !st)
        return rls__stmt_failed(db);
    for (int i = 0; i < nlids; i++) {
        sql_bind_int64(get, 1, lids[i]);
        sql_bind_blob(get, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
        int src = sql_step(get);
        *n += src == SQL_ROW && sql_column_int64(get, 5) >= now;   /* exp_ms */
        sql_reset(get);
        if (src == SQL_ROW && del) {
            sql_bind_int64(st, 1, lids[i]);
            sql_bind_blob(st, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
            src = sql_step(st);
            sql_reset(st);
            rows += sql_changes(db);
        }
        if (src != SQL_DONE && src != SQL_ROW)
            return rls__sql_error(db, src, "cannot reset counters");
    }
    return rows > 0 ? rls__keycount_deleted(db, ctx->act->name, 0, ctx->key, ctx->keylen)
                    : RLS_OK;
}

struct reset_arg {
    const char *action, *key;
    int64_t now;
    key_ctx *ctx;
    int64_t *lids;   /* out: the action's limit ids (malloc'd), for the split part */
    int nlids;
    int n;
};

/* The key's entries of every memory-class limit of ctx's action (any
 * tier) dropped from the shared-memory table: *n how many there were. */
static int mem_reset_key(rls_db *db, const key_ctx *ctx, int64_t now, int *n)
{
    const rule_action *act = ctx->act;
    *n = 0;
    for (int t = -1; t < act->ntiers; t++) {
        const rule_limit *ls = t < 0 ? act->limits : act->tiers[t].limits;
        int m = t < 0 ? act->nlimits : act->tiers[t].nlimits;
        for (int i = 0; i < m; i++) {
            int found = 0, rc;
            if (!rls__mem_limit(&ls[i]))
                continue;
            if ((rc = rls__mem_drop(db, ls[i].id, ls[i].algorithm, ctx->key, ctx->keylen, now,
                                    &found)))
                return rc;
            *n += found;
        }
    }
    return RLS_OK;
}

/* The counters (one file) and the audit row, in a transaction. */
static int reset_fn(rls_db *db, void *p)
{
    struct reset_arg *a = p;
    char after[64];
    int rc = rls__keyctx_load(db, a->ctx, a->action, a->key, 0, a->now);
    free(a->lids);
    a->lids = NULL;
    if (rc == RLS_OK && !(a->lids = action_lids(a->ctx->act, &a->nlids)))
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    if (rc == RLS_OK)
        rc = key_rows(db, a->ctx, a->lids, a->nlids, !db->be->rules_apart(db), a->now,
                      &a->n);
    int mem = 0;   /* durability: memory entries go at once (memclass.c) */
    if (rc == RLS_OK && (rc = mem_reset_key(db, a->ctx, a->now, &mem)) == RLS_OK)
        a->n += mem;
    if (rc == RLS_OK && a->n == 0)
        rc = rls__error(db, RLS_ENOTFOUND, "key has no counters for action '%s'", a->action);
    if (rc == RLS_OK) {
        snprintf(after, sizeof after, "%d counters cleared", a->n);
        rc = rls__audit(db, a->now, "reset", a->action, a->ctx->key, "", after, "");
    }
    return rc;
}

/*
 * Forgets a key's counters, audited.  One file: in one transaction.
 * Split: the audit row (rules file) commits first, then the counters go
 * (counters file) in a transaction of its own, as block changes do
 * (policy.c): a crash in between leaves the counters and the audit row,
 * never an unaudited reset.
 */
int rls_reset_at(rls_db *db, const char *action, const char *key, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    key_ctx *ctx;
    int64_t *lids = NULL;
    int rc = rls__keyctx_args(db, action, key, 1, now_ms), nlids = 0, n = 0;
    if (rc || (rc = rls__rules_writable(db)))
        return rc;
    ctx = malloc(sizeof *ctx);
    if (!ctx)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    ctx->n = 0;
    struct reset_arg a = {action, key, now_ms, ctx, NULL, 0, 0};
    sql_durable(db, 1);
    rc = rls__write_tx(db, reset_fn, &a);
    lids = a.lids;
    nlids = a.nlids;
    if (rc == RLS_OK && db->be->rules_apart(db)) {
        if ((rc = rls__begin(db, 1)) == RLS_OK &&
            (rc = key_rows(db, ctx, lids, nlids, 1, now_ms, &n)) == RLS_OK)
            rc = rls__commit(db);
        else if (db->conn.in_tx)
            rls__rollback(db);
        if (rc != RLS_OK) {
            char why[sizeof db->errmsg];
            snprintf(why, sizeof why, "%s", db->errmsg);
            rls__error(db, rc, "the reset is audited, but the counters stay: %s (run it "
                       "again)", why);
        }
    }
    rls__durable_restore(db);
    free(lids);
    free(ctx);
    return rc;
}
