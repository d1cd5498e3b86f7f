/*
 * admin_view.c - what checks of a key would see, without charging: explain
 * (one action and key, every limit) and usage (every key of one or all
 * actions with its most pressing limit, sorted and paged).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "keyctx.h"

static const char *tier_source_name(int s)
{
    return s == TIER_FROM_EXACT ? "exact" : s == TIER_FROM_PATTERN ? "pattern" : "default";
}

static const char *behaviour_name(int b)
{
    return b == TIER_UNLIMITED ? "unlimited" : b == TIER_BLOCKED ? "blocked" : "normal";
}

/*
 * Inside a read transaction: loads (action, key) and decides a peek of cost
 * 1.  *res is the decision; ctx->items[i].meta each limit's view.
 */
static int peek_key(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                    int normalised, int64_t now, rls_result *res)
{
    decide_out dout;
    int rc = keyctx_load(db, ctx, action, key, normalised, now);
    if (rc == RLS_OK)
        rc = keyctx_read_states(db, ctx);
    if (rc)
        return rc;
    if (decide_check(ctx->items, ctx->n, ctx->behaviour, now, db->gc_horizon, 1, 0, res,
                     &dout) != 0)
        return rls__error(db, RLS_ECONFIG, "action '%s' has a limit the engine refuses", action);
    if (ctx->block.active || ctx->behaviour == TIER_BLOCKED)
        decide_blocked(res, now, ctx->block.active ? ctx->block.until_ms : 0,
                       ctx->block.active ? ctx->block.rule : "");
    return RLS_OK;
}

static int block_reason(rls_db *db, const key_ctx *ctx, int64_t now, char *buf, size_t size)
{
    sqlite3_stmt *st = rls__astmt(db, ASTMT_BLOCK_REASON);
    buf[0] = '\0';
    if (!st)
        return rls__stmt_failed(db);
    sqlite3_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ctx->act->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, now);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? RLS_OK
                                                 : rls__sqlite_error(db, rc, "cannot read block");
}

static rls_rows *explain_info(rls_db *db, const key_ctx *ctx, const rls_result *res,
                              const char *reason)
{
    static const rows_col cols[] = {
        {"action", RLS_COL_TEXT},        {"key", RLS_COL_TEXT},
        {"key_kind", RLS_COL_TEXT},      {"tier", RLS_COL_TEXT},
        {"tier_source", RLS_COL_TEXT},   {"tier_pattern", RLS_COL_TEXT},
        {"behaviour", RLS_COL_TEXT},     {"blocked", RLS_COL_INT},
        {"block_until_ms", RLS_COL_INT}, {"block_reason", RLS_COL_TEXT},
        {"block_rule", RLS_COL_TEXT},    {"allowed", RLS_COL_INT},
        {"reason", RLS_COL_TEXT},        {"retry_after_ms", RLS_COL_INT},
    };
    rls_rows *r = rows_new(cols, (int)(sizeof cols / sizeof cols[0]));
    int row = r ? rows_add(r) : -1;
    if (row < 0 || rows_put_str(r, row, "action", ctx->act->name) ||
        rows_put_str(r, row, "key", ctx->key) ||
        rows_put_str(r, row, "key_kind", key_kind_name(ctx->act->key_kind)) ||
        rows_put_str(r, row, "tier", ctx->tier.tier) ||
        rows_put_str(r, row, "tier_source", tier_source_name(ctx->tier.source)) ||
        rows_put_str(r, row, "tier_pattern", ctx->tier.by ? ctx->tier.by->text : "") ||
        rows_put_str(r, row, "behaviour", behaviour_name(ctx->behaviour)) ||
        rows_put_int(r, row, "blocked", ctx->block.active) ||
        rows_put_int(r, row, "block_until_ms", ctx->block.active ? ctx->block.until_ms : 0) ||
        rows_put_str(r, row, "block_reason", reason) ||
        rows_put_str(r, row, "block_rule", ctx->block.active ? ctx->block.rule : "") ||
        rows_put_int(r, row, "allowed", res->allowed) ||
        rows_put_str(r, row, "reason", rls_reason_name(res->reason)) ||
        rows_put_int(r, row, "retry_after_ms", res->retry_after_ms)) {
        rls_rows_free(r);
        return NULL;
    }
    (void)db;
    return r;
}

static rls_rows *explain_limits(const key_ctx *ctx)
{
    static const rows_col cols[] = {
        {"name", RLS_COL_TEXT},      {"algorithm", RLS_COL_TEXT},    {"limit", RLS_COL_INT},
        {"burst", RLS_COL_INT},      {"window_ms", RLS_COL_INT},     {"overridden", RLS_COL_INT},
        {"mode", RLS_COL_TEXT},      {"used", RLS_COL_INT},          {"remaining", RLS_COL_INT},
        {"reset_ms", RLS_COL_INT},   {"retry_after_ms", RLS_COL_INT}, {"allowed", RLS_COL_INT},
        {"last_ms", RLS_COL_INT},
    };
    rls_rows *r = rows_new(cols, (int)(sizeof cols / sizeof cols[0]));
    for (int i = 0; r && i < ctx->n; i++) {
        const resolved_limit *rl = &ctx->rl[i];
        const algo_meta *m = &ctx->items[i].meta;
        int row = rows_add(r);
        if (row < 0 || rows_put_str(r, row, "name", rl->def->name) ||
            rows_put_str(r, row, "algorithm", algo_name(rl->def->algorithm)) ||
            rows_put_int(r, row, "limit", rl->limit) || rows_put_int(r, row, "burst", rl->burst) ||
            rows_put_int(r, row, "window_ms", rl->def->window.ms) ||
            rows_put_int(r, row, "overridden", rl->overridden) ||
            rows_put_str(r, row, "mode", rl->def->mode == MODE_SHADOW ? "shadow" : "enforce") ||
            rows_put_int(r, row, "used", m->capacity - m->remaining) ||
            rows_put_int(r, row, "remaining", m->remaining) ||
            rows_put_int(r, row, "reset_ms", m->reset_ms) ||
            rows_put_int(r, row, "retry_after_ms", m->allowed ? 0 : m->retry_after_ms) ||
            rows_put_int(r, row, "allowed", m->allowed) ||
            rows_put_int(r, row, "last_ms", ctx->st[i].present ? ctx->st[i].last_ms : 0)) {
            rls_rows_free(r);
            return NULL;
        }
    }
    return r;
}

int rls_explain_at(rls_db *db, const char *action, const char *key, int64_t now_ms,
                   rls_rows **info, rls_rows **limits)
{
    key_ctx *ctx;
    rls_result res;
    char reason[256];
    int rc = keyctx_args(db, action, key, 1, now_ms);
    if (info)
        *info = NULL;
    if (limits)
        *limits = NULL;
    if (rc)
        return rc;
    ctx = malloc(sizeof *ctx);
    if (!ctx)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    ctx->n = 0;
    if ((rc = rls__begin(db, 0)) == RLS_OK) {
        rc = peek_key(db, ctx, action, key, 0, now_ms, &res);
        if (rc == RLS_OK)
            rc = block_reason(db, ctx, now_ms, reason, sizeof reason);
        if (rc == RLS_OK && info && !(*info = explain_info(db, ctx, &res, reason)))
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
        if (rc == RLS_OK && limits && !(*limits = explain_limits(ctx)))
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
        keyctx_release(ctx);
        if (rc == RLS_OK)
            rc = rls__commit(db);
        else
            rls__rollback(db);
    }
    free(ctx);
    if (rc) {
        if (info) {
            rls_rows_free(*info);
            *info = NULL;
        }
        if (limits) {
            rls_rows_free(*limits);
            *limits = NULL;
        }
    }
    return rc;
}

/* ---- usage ------------------------------------------------------------- */

typedef struct usage_row {
    char action[RLS_NAME_MAX + 1];
    char *key;
    char tier[RLS_NAME_MAX + 1];
    char rule[RLS_NAME_MAX + 1];
    int64_t used, limit, remaining, ppm, reset_ms, block_until;
    int blocked;
    const char *state;
} usage_row;

static int by_used(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    if (x->blocked != y->blocked)
        return y->blocked - x->blocked;
    if (x->ppm != y->ppm)
        return x->ppm > y->ppm ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int by_key(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->action, y->action);
}

static int by_reset(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    if (x->reset_ms != y->reset_ms)
        return x->reset_ms < y->reset_ms ? -1 : 1;
    return strcmp(x->key, y->key);
}

static const char *state_of(const rls_result *res, const key_ctx *ctx, int64_t ppm)
{
    if (ctx->block.active || ctx->behaviour == TIER_BLOCKED)
        return "blocked";
    if (!res->allowed)
        return "limited";
    if (res->reason == RLS_REASON_SHADOW)
        return "shadow";
    return ppm >= 800000 ? "near" : "ok";
}

/* Appends the usage of every key of one action to *rows. */
static int usage_action(rls_db *db, key_ctx *ctx, const char *action, const char *substr,
                        int64_t now, usage_row **rows, int *n, int *cap)
{
    sqlite3_stmt *st = rls__astmt(db, ASTMT_USAGE_KEYS);
    char **keys = NULL;
    int nkeys = 0, capkeys = 0, rc;
    if (!st)
        return rls__stmt_failed(db);
    sqlite3_bind_text(st, 1, action, -1, SQLITE_STATIC);
    if (substr)
        sqlite3_bind_text(st, 2, substr, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, now);
    /* Collect the keys first: peeking runs other statements. */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        if (nkeys == capkeys) {
            capkeys = capkeys ? capkeys * 2 : 64;
            char **nk = realloc(keys, sizeof *nk * (size_t)capkeys);
            if (!nk) { rc = SQLITE_NOMEM; break; }
            keys = nk;
        }
        if (!(keys[nkeys] = strdup(k ? k : ""))) { rc = SQLITE_NOMEM; break; }
        nkeys++;
    }
    sqlite3_reset(st);
    if (rc == SQLITE_NOMEM)
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    else if (rc != SQLITE_DONE)
        rc = rls__sqlite_error(db, rc, "cannot list keys");
    else
        rc = RLS_OK;
    for (int i = 0; rc == RLS_OK && i < nkeys; i++) {
        rls_result res;
        rc = peek_key(db, ctx, action, keys[i], 1, now, &res);
        keyctx_release(ctx);
        if (rc == RLS_EKEY) {  /* a block row for a key this action would not accept */
            rc = RLS_OK;
            continue;
        }
        if (rc)
            break;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 256;
            usage_row *nr = realloc(*rows, sizeof **rows * (size_t)*cap);
            if (!nr) {
                rc = rls__error(db, RLS_ENOMEM, "out of memory");
                break;
            }
            *rows = nr;
        }
        usage_row *u = &(*rows)[(*n)++];
        memset(u, 0, sizeof *u);
        snprintf(u->action, sizeof u->action, "%s", action);
        u->key = keys[i];
        keys[i] = NULL;
        snprintf(u->tier, sizeof u->tier, "%s", ctx->tier.tier);
        snprintf(u->rule, sizeof u->rule, "%s", res.rule);
        u->limit = res.limit;
        u->remaining = res.remaining;
        u->used = res.limit > res.remaining ? res.limit - res.remaining : 0;
        u->ppm = res.limit > 0 ? (int64_t)((double)u->used * 1e6 / (double)res.limit) : 0;
        u->reset_ms = res.reset_ms;
        u->blocked = ctx->block.active || ctx->behaviour == TIER_BLOCKED;
        u->block_until = ctx->block.active ? ctx->block.until_ms : 0;
        u->state = state_of(&res, ctx, u->ppm);
    }
    for (int i = 0; i < nkeys; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

static rls_rows *usage_rows(const usage_row *u, int from, int to)
{
    static const rows_col cols[] = {
        {"action", RLS_COL_TEXT},       {"key", RLS_COL_TEXT},        {"tier", RLS_COL_TEXT},
        {"rule", RLS_COL_TEXT},         {"used", RLS_COL_INT},        {"limit", RLS_COL_INT},
        {"remaining", RLS_COL_INT},     {"fraction_ppm", RLS_COL_INT}, {"reset_ms", RLS_COL_INT},
        {"blocked", RLS_COL_INT},       {"block_until_ms", RLS_COL_INT},
        {"state", RLS_COL_TEXT},
    };
    rls_rows *r = rows_new(cols, (int)(sizeof cols / sizeof cols[0]));
    for (int i = from; r && i < to; i++) {
        int row = rows_add(r);
        if (row < 0 || rows_put_str(r, row, "action", u[i].action) ||
            rows_put_str(r, row, "key", u[i].key) || rows_put_str(r, row, "tier", u[i].tier) ||
            rows_put_str(r, row, "rule", u[i].rule) || rows_put_int(r, row, "used", u[i].used) ||
            rows_put_int(r, row, "limit", u[i].limit) ||
            rows_put_int(r, row, "remaining", u[i].remaining) ||
            rows_put_int(r, row, "fraction_ppm", u[i].ppm) ||
            rows_put_int(r, row, "reset_ms", u[i].reset_ms) ||
            rows_put_int(r, row, "blocked", u[i].blocked) ||
            rows_put_int(r, row, "block_until_ms", u[i].block_until) ||
            rows_put_str(r, row, "state", u[i].state)) {
            rls_rows_free(r);
            return NULL;
        }
    }
    return r;
}

int rls_usage_at(rls_db *db, const rls_usage_query *q, int64_t now_ms, rls_rows **out)
{
    usage_row *rows = NULL;
    int n = 0, cap = 0, rc;
    key_ctx *ctx;

    if (!out || !q)
        return db ? rls__error(db, RLS_EINVAL, "query or out is NULL") : RLS_EINVAL;
    *out = NULL;
    if ((rc = rls__db_usable(db)))
        return rc;
    db->errmsg[0] = '\0';
    if (q->size < sizeof *q || q->limit < 1 || q->limit > 100000 || q->offset < 0 ||
        q->sort < RLS_SORT_USED || q->sort > RLS_SORT_RESET)
        return rls__error(db, RLS_EINVAL, "usage query: size, limit (1..100000), offset or "
                          "sort is invalid");
    if (now_ms < RLS_TIME_MIN || now_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now_ms);
    ctx = malloc(sizeof *ctx);
    if (!ctx)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    ctx->n = 0;
    const char *substr = q->key_substr && *q->key_substr ? q->key_substr : NULL;
    if ((rc = rls__begin(db, 0)) == RLS_OK && (rc = rls__cache_refresh(db)) == RLS_OK) {
        if (!db->rules)
            rc = rls__error(db, RLS_ENORULES, "no rules applied to '%s' yet", db->path);
        else if (q->action && *q->action && !ruleset_action(db->rules, q->action))
            rc = rls__error(db, RLS_ENOACTION, "action '%s' is not defined", q->action);
        for (int i = 0; rc == RLS_OK && i < db->rules->nactions; i++) {
            const char *a = db->rules->actions[i].name;
            if (q->action && *q->action && strcmp(a, q->action) != 0)
                continue;
            rc = usage_action(db, ctx, a, substr, now_ms, &rows, &n, &cap);
        }
    }
    if (db->in_tx) {
        if (rc == RLS_OK)
            rc = rls__commit(db);
        else
            rls__rollback(db);
    }
    free(ctx);
    if (rc == RLS_OK) {
        if (n > 1)  /* rows is NULL when there are none */
            qsort(rows, (size_t)n, sizeof *rows,
                  q->sort == RLS_SORT_KEY ? by_key : q->sort == RLS_SORT_RESET ? by_reset : by_used);
        int from = q->offset < n ? q->offset : n;
        int to = n - from > q->limit ? from + q->limit : n;
        if (!(*out = usage_rows(rows, from, to)))
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++)
        free(rows[i].key);
    free(rows);
    return rc;
}
