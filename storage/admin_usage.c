/*
 * admin_usage.c - rls_usage_at(): keys with their most pressing limit, as a
 * check would see them now, sorted and paged, without looking at every key.
 *
 * The candidates of a page are, per action: the keys under pressure (the
 * rls_key_stats rows: denied, or at least half used when last seen), the
 * blocked keys, and the first keys in key order; each is peeked (the same
 * resolution and decision as a check, charging nothing).  Work is bounded
 * by offset + limit per action, not by the number of keys, so a page stays
 * cheap with a million tracked keys.  The order this allows:
 *   used    blocked first, then keys at 50 % or more by fraction used, then
 *           the others by key;
 *   denied  by denials counted in rls_key_stats, then by key;
 *   reset   blocked and keys at 50 % or more by soonest reset, then by key;
 *   key     by key (then action).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "keyctx.h"

#define HOT_PPM 500000

typedef struct usage_row {
    char action[RLS_NAME_MAX + 1];
    char *key;
    char tier[RLS_NAME_MAX + 1];
    char rule[RLS_NAME_MAX + 1];
    int64_t used, limit, remaining, ppm, reset_ms, block_until, denied;
    int blocked;
    const char *state;
} usage_row;

typedef struct usage_set {
    usage_row *rows;
    int n, cap;
} usage_set;

static int hot(const usage_row *u)
{
    return u->blocked || u->ppm >= HOT_PPM;
}

static int by_key(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->action, y->action);
}

static int by_used(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    if (x->blocked != y->blocked)
        return y->blocked - x->blocked;
    int64_t px = x->ppm >= HOT_PPM ? x->ppm : -1, py = y->ppm >= HOT_PPM ? y->ppm : -1;
    if (px != py)
        return px > py ? -1 : 1;
    return by_key(a, b);
}

static int by_denied(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    if (x->denied != y->denied)
        return x->denied > y->denied ? -1 : 1;
    return by_key(a, b);
}

static int by_reset(const void *a, const void *b)
{
    const usage_row *x = a, *y = b;
    if (hot(x) != hot(y))
        return hot(y) - hot(x);
    if (hot(x) && x->reset_ms != y->reset_ms)
        return x->reset_ms < y->reset_ms ? -1 : 1;
    return by_key(a, b);
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

/* Appends the keys one candidate statement yields (bound as admin.h says). */
static int collect(rls_db *db, int id, const char *action, const char *substr, int64_t now,
                   int want, char ***keys, int *n, int *cap)
{
    sqlite3_stmt *st = rls__astmt(db, id);
    int rc;
    if (!st)
        return rls__stmt_failed(db);
    sqlite3_bind_text(st, 1, action, -1, SQLITE_STATIC);
    if (substr)
        sqlite3_bind_text(st, 2, substr, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int(st, 4, want);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        if (*n == *cap) {
            int ncap = *cap ? *cap * 2 : 64;
            char **nk = realloc(*keys, sizeof *nk * (size_t)ncap);
            if (!nk) { rc = SQLITE_NOMEM; break; }
            *keys = nk;
            *cap = ncap;
        }
        if (!((*keys)[*n] = strdup(k ? k : ""))) { rc = SQLITE_NOMEM; break; }
        (*n)++;
    }
    sqlite3_reset(st);
    if (rc == SQLITE_NOMEM)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    return rc == SQLITE_DONE ? RLS_OK : rls__sqlite_error(db, rc, "cannot list keys");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int denials(rls_db *db, const char *action, const char *key, int64_t *d)
{
    sqlite3_stmt *st = rls__astmt(db, ASTMT_USAGE_DENIALS);
    *d = 0;
    if (!st)
        return rls__stmt_failed(db);
    sqlite3_bind_text(st, 1, action, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *d = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? RLS_OK
                                                 : rls__sqlite_error(db, rc, "cannot read key stats");
}

/* Peeks one candidate and appends its row (keys a check would refuse,
 * such as a block row's key the action does not accept, are skipped). */
static int add_row(rls_db *db, key_ctx *ctx, const char *action, char *key, int64_t now,
                   usage_set *set)
{
    rls_result res;
    int rc = rls__peek_key(db, ctx, action, key, 1, now, &res);
    keyctx_release(ctx);
    if (rc == RLS_EKEY)
        return RLS_OK;
    if (rc)
        return rc;
    if (set->n == set->cap) {
        int ncap = set->cap ? set->cap * 2 : 64;
        usage_row *nr = realloc(set->rows, sizeof *nr * (size_t)ncap);
        if (!nr)
            return rls__error(db, RLS_ENOMEM, "out of memory");
        set->rows = nr;
        set->cap = ncap;
    }
    usage_row *u = &set->rows[set->n];
    memset(u, 0, sizeof *u);
    if (!(u->key = strdup(key)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    set->n++;
    snprintf(u->action, sizeof u->action, "%s", action);
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
    return denials(db, action, key, &u->denied);
}

/* The candidates of one action for a page of `want` rows, peeked. */
static int usage_action(rls_db *db, key_ctx *ctx, const char *action, const char *substr,
                        int sort, int64_t now, int want, usage_set *set)
{
    char **keys = NULL;
    int n = 0, cap = 0, nfirst, rc;

    /* The first keys in key order; with sort=key, nothing beyond the last of
     * them can belong on the page. */
    rc = collect(db, ASTMT_USAGE_KEYS, action, substr, now, want, &keys, &n, &cap);
    nfirst = n;
    const char *bound = nfirst == want && n > 0 ? keys[n - 1] : NULL;
    if (rc == RLS_OK)
        rc = collect(db, ASTMT_USAGE_BLOCKED, action, substr, now, want, &keys, &n, &cap);
    if (rc == RLS_OK && sort != RLS_SORT_KEY)
        rc = collect(db, sort == RLS_SORT_DENIED ? ASTMT_USAGE_DENIED : ASTMT_USAGE_HOT,
                     action, substr, now, want, &keys, &n, &cap);
    if (rc == RLS_OK && n > 1)
        qsort(keys, (size_t)n, sizeof *keys, cmp_str);
    for (int i = 0; rc == RLS_OK && i < n; i++) {
        if (i > 0 && strcmp(keys[i], keys[i - 1]) == 0)
            continue;  /* a key can be a candidate several times */
        if (sort == RLS_SORT_KEY && bound && strcmp(keys[i], bound) > 0)
            continue;
        rc = add_row(db, ctx, action, keys[i], now, set);
    }
    for (int i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

static rls_rows *usage_rows(const usage_row *u, int from, int to)
{
    static const rows_col cols[] = {
        {"action", RLS_COL_TEXT},    {"key", RLS_COL_TEXT},         {"tier", RLS_COL_TEXT},
        {"rule", RLS_COL_TEXT},      {"used", RLS_COL_INT},         {"limit", RLS_COL_INT},
        {"remaining", RLS_COL_INT},  {"fraction_ppm", RLS_COL_INT}, {"reset_ms", RLS_COL_INT},
        {"blocked", RLS_COL_INT},    {"block_until_ms", RLS_COL_INT},
        {"state", RLS_COL_TEXT},     {"denied", RLS_COL_INT},
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
            rows_put_str(r, row, "state", u[i].state) ||
            rows_put_int(r, row, "denied", u[i].denied)) {
            rls_rows_free(r);
            return NULL;
        }
    }
    return r;
}

int rls_usage_at(rls_db *db, const rls_usage_query *q, int64_t now_ms, rls_rows **out)
{
    usage_set set = {NULL, 0, 0};
    key_ctx *ctx;
    int rc;

    if (!out || !q)
        return db ? rls__error(db, RLS_EINVAL, "query or out is NULL") : RLS_EINVAL;
    *out = NULL;
    if ((rc = rls__db_usable(db)))
        return rc;
    db->errmsg[0] = '\0';
    if (q->size < sizeof *q || q->limit < 1 || q->limit > 100000 || q->offset < 0 ||
        q->offset > 1000000 || q->sort < RLS_SORT_USED || q->sort > RLS_SORT_DENIED)
        return rls__error(db, RLS_EINVAL, "usage query: size, limit (1..100000), offset "
                          "(0..1000000) or sort is invalid");
    if (now_ms < RLS_TIME_MIN || now_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now_ms);
    ctx = malloc(sizeof *ctx);
    if (!ctx)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    ctx->n = 0;
    const char *substr = q->key_substr && *q->key_substr ? q->key_substr : NULL;
    int want = q->offset + q->limit;
    if ((rc = rls__begin(db, 0)) == RLS_OK && (rc = rls__cache_refresh(db)) == RLS_OK) {
        if (!db->rules)
            rc = rls__error(db, RLS_ENORULES, "no rules applied to '%s' yet", db->path);
        else if (q->action && *q->action && !ruleset_action(db->rules, q->action))
            rc = rls__error(db, RLS_ENOACTION, "action '%s' is not defined", q->action);
        for (int i = 0; rc == RLS_OK && i < db->rules->nactions; i++) {
            const char *a = db->rules->actions[i].name;
            if (q->action && *q->action && strcmp(a, q->action) != 0)
                continue;
            rc = usage_action(db, ctx, a, substr, q->sort, now_ms, want, &set);
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
        int (*cmp)(const void *, const void *) =
            q->sort == RLS_SORT_KEY ? by_key : q->sort == RLS_SORT_RESET ? by_reset
            : q->sort == RLS_SORT_DENIED ? by_denied : by_used;
        if (set.n > 1)
            qsort(set.rows, (size_t)set.n, sizeof *set.rows, cmp);
        int from = q->offset < set.n ? q->offset : set.n;
        int to = set.n - from > q->limit ? from + q->limit : set.n;
        if (!(*out = usage_rows(set.rows, from, to)))
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < set.n; i++)
        free(set.rows[i].key);
    free(set.rows);
    return rc;
}
