/*
 * admin_view.c - what a check of a key would see, without charging: explain
 * (one action and key, every limit).  Usage listings are in admin_usage.c.
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
int rls__peek_key(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                  int normalised, int64_t now, rls_result *res)
{
    decide_out dout;
    int rc = rls__keyctx_load(db, ctx, action, key, normalised, now);
    if (rc == RLS_OK)
        rc = rls__keyctx_read_states(db, ctx);
    if (rc == RLS_OK)
        rc = rls__peek_refunds(db, ctx, now);
    if (rc)
        return rc;
    ctx->deciding = -1;
    if (rls__decide_check(ctx->items, ctx->n, ctx->behaviour, now, 0, 1, 0, res,
                     &dout) != 0)
        return rls__error(db, RLS_ECONFIG, "action '%s' has a limit the engine refuses", action);
    ctx->deciding = dout.deciding;
    if (ctx->block.active || ctx->behaviour == TIER_BLOCKED)
        rls__decide_blocked_keep(res, now, ctx->block.active ? ctx->block.until_ms : 0,
                            ctx->block.active ? ctx->block.rule : "");
    return RLS_OK;
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
    rls_rows *r = rls__rows_new(cols, (int)(sizeof cols / sizeof cols[0]));
    int row = r ? rls__rows_add(r) : -1;
    if (row < 0 || rls__rows_put_str(r, row, "action", ctx->act->name) ||
        rls__rows_put_str(r, row, "key", ctx->key) ||
        rls__rows_put_str(r, row, "key_kind", rls__key_kind_name(ctx->act->key_kind)) ||
        rls__rows_put_str(r, row, "tier", ctx->tier.tier) ||
        rls__rows_put_str(r, row, "tier_source", tier_source_name(ctx->tier.source)) ||
        rls__rows_put_str(r, row, "tier_pattern", ctx->tier.by ? ctx->tier.by->text : "") ||
        rls__rows_put_str(r, row, "behaviour", behaviour_name(ctx->behaviour)) ||
        rls__rows_put_int(r, row, "blocked", ctx->block.active) ||
        rls__rows_put_int(r, row, "block_until_ms", ctx->block.active ? ctx->block.until_ms : 0) ||
        rls__rows_put_str(r, row, "block_reason", reason) ||
        rls__rows_put_str(r, row, "block_rule", ctx->block.active ? ctx->block.rule : "") ||
        rls__rows_put_int(r, row, "allowed", res->allowed) ||
        rls__rows_put_str(r, row, "reason", rls_reason_name(res->reason)) ||
        rls__rows_put_int(r, row, "retry_after_ms", res->retry_after_ms)) {
        rls_rows_free(r);
        return NULL;
    }
    (void)db;
    return r;
}

/* A limit's window as written ("1w", "7d"), whether it follows the
 * calendar of its zone, the zone, and its length at now (a DST day's 23 or
 * 25 hours: rls__decide_window_ms). */
static int put_window(rls_rows *r, int row, const rule_limit *d, int64_t now)
{
    char win[32];
    rls__duration_format(&d->window, win, sizeof win);
    return rls__rows_put_str(r, row, "window", win) ||
           rls__rows_put_int(r, row, "calendar", d->window.calendar != DUR_FIXED) ||
           rls__rows_put_str(r, row, "timezone", rls__tz_name(d->tz)) ||
           rls__rows_put_int(r, row, "window_now_ms", rls__decide_window_ms(d, now));
}

static rls_rows *explain_limits(const key_ctx *ctx, int64_t now)
{
    static const rows_col cols[] = {
        {"name", RLS_COL_TEXT},      {"algorithm", RLS_COL_TEXT},    {"limit", RLS_COL_INT},
        {"burst", RLS_COL_INT},      {"window_ms", RLS_COL_INT},     {"overridden", RLS_COL_INT},
        {"mode", RLS_COL_TEXT},      {"used", RLS_COL_INT},          {"remaining", RLS_COL_INT},
        {"reset_ms", RLS_COL_INT},   {"retry_after_ms", RLS_COL_INT}, {"allowed", RLS_COL_INT},
        {"last_ms", RLS_COL_INT},    {"window", RLS_COL_TEXT},       {"calendar", RLS_COL_INT},
        {"timezone", RLS_COL_TEXT},  {"window_now_ms", RLS_COL_INT},
    };
    rls_rows *r = rls__rows_new(cols, (int)(sizeof cols / sizeof cols[0]));
    for (int i = 0; r && i < ctx->n; i++) {
        const resolved_limit *rl = &ctx->rl[i];
        const algo_meta *m = &ctx->items[i].meta;
        int row = rls__rows_add(r);
        if (row < 0 || rls__rows_put_str(r, row, "name", rl->def->name) ||
            rls__rows_put_str(r, row, "algorithm", rls__algo_name(rl->def->algorithm)) ||
            rls__rows_put_int(r, row, "limit", rl->limit) || rls__rows_put_int(r, row, "burst", rl->burst) ||
            rls__rows_put_int(r, row, "window_ms", rl->def->window.ms) ||
            rls__rows_put_int(r, row, "overridden", rl->overridden) ||
            rls__rows_put_str(r, row, "mode", rl->def->mode == MODE_SHADOW ? "shadow" : "enforce") ||
            rls__rows_put_int(r, row, "used", m->used) ||
            rls__rows_put_int(r, row, "remaining", m->remaining) ||
            rls__rows_put_int(r, row, "reset_ms", m->reset_ms) ||
            rls__rows_put_int(r, row, "retry_after_ms", m->allowed ? 0 : m->retry_after_ms) ||
            rls__rows_put_int(r, row, "allowed", m->allowed) ||
            rls__rows_put_int(r, row, "last_ms", ctx->st[i].present ? ctx->st[i].last_ms : 0) ||
            put_window(r, row, rl->def, now)) {
            rls_rows_free(r);
            return NULL;
        }
    }
    return r;
}

int rls_explain_at(rls_db *db, const char *action, const char *key, int64_t now_ms,
                   rls_rows **info, rls_rows **limits)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    key_ctx *ctx;
    rls_result res;
    char reason[256];
    int rc = rls__keyctx_args(db, action, key, 1, now_ms);
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
        rc = rls__peek_key(db, ctx, action, key, 0, now_ms, &res);
        /* the reason of the block that applies, as the check found it
         * (keyctx.c): a row of every action may be stored under another
         * spelling of the key than this action's */
        snprintf(reason, sizeof reason, "%s", rc == RLS_OK ? ctx->block.reason : "");
        if (rc == RLS_OK && info && !(*info = explain_info(db, ctx, &res, reason)))
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
        if (rc == RLS_OK && limits && !(*limits = explain_limits(ctx, now_ms)))
            rc = rls__error(db, RLS_ENOMEM, "out of memory");
        rls__keyctx_release(ctx);
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
