/*
 * keyctx.c - loading and saving what one (action, key) needs inside a
 * transaction (keyctx.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keyctx.h"
#include "keycount.h"
#include "keynorm.h"
#include "memclass.h"
#include "penalty.h"

int rls__keyctx_args(rls_db *db, const char *action, const char *key,
                int64_t cost, int64_t now)
{
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if (!action || !key)
        return rls__error(db, RLS_EINVAL, "action or key is NULL");
    if (!*action || strlen(action) > RLS_NAME_MAX)
        return rls__error(db, RLS_ENOACTION, "action name is empty or longer than %d bytes",
                          RLS_NAME_MAX);
    size_t kl = strlen(key);
    if (kl == 0 || kl > (size_t)db->ident.opt.max_key_len)
        return rls__error(db, RLS_EKEY, "key is empty or longer than %d bytes",
                          db->ident.opt.max_key_len);
    if (cost < 1 || cost > RLS_COST_MAX)
        return rls__error(db, RLS_ECOST, "cost %lld is outside 1..%lld", (long long)cost,
                          (long long)RLS_COST_MAX);
    if (now < RLS_TIME_MIN || now > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now);
    return RLS_OK;
}

static void copy_name(char *dst, const unsigned char *src)
{
    snprintf(dst, RLS_NAME_MAX + 1, "%s", src ? (const char *)src : "");
}

/* One pass over the key's policy rows. */
static int read_policy(rls_db *db, key_ctx *ctx, int64_t now)
{
    rls_stmt *st;
    int rc;
    if (rls__no_policy_rows(db))
        return RLS_OK;   /* no key has any (cache.c) */
    if (db->trust.fast_trust)  /* the guard of a one-flight check fails if this one
                          * has (pg_fast.c), except rows of every action of
                          * another spelling of an address */
        return rls__every_ip_apply(db, ctx, now, 1);
    if (!(st = rls__stmt(db, STMT_KEY_POLICY)))
        return rls__stmt_failed(db);
    /* Rows for this action match the normalised key; rows for every action
     * are stored canonical (policy.c), or were stored as written. */
    sql_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_text(st, 2, ctx->act->name, -1, SQL_STATIC);
    sql_bind_blob(st, 3, ctx->canon, (int)ctx->canonlen, SQL_STATIC);
    sql_bind_blob(st, 4, ctx->raw, (int)strlen(ctx->raw), SQL_STATIC);
    while ((rc = sql_step(st)) == SQL_ROW) {
        int type = sql_column_int(st, 0);
        const unsigned char *act = sql_column_text(st, 1);
        int64_t t = sql_column_int64(st, 2);
        int64_t num = sql_column_int64(st, 3);
        const unsigned char *text = sql_column_text(st, 4);
        int own = act && act[0] != '\0';
        if (type == 1) {
            int active = rls__block_active(t, now);
            if (own) {
                ctx->pen_found = 1;
                ctx->pen_kind = (int)num;
                ctx->pen_level = sql_column_int(st, 5);
                ctx->pen_until = t;
                ctx->pen_forget = sql_column_int64(st, 6);
            }
            /* the strongest active block applies (core/penalty.c) */
            if (active && rls__block_outlasts(ctx->block.active, ctx->block.until_ms, t)) {
                ctx->block.found = ctx->block.active = 1;
                ctx->block.until_ms = t;
                copy_name(ctx->block.rule, text);
                const unsigned char *why = sql_column_text(st, 7);
                snprintf(ctx->block.reason, sizeof ctx->block.reason, "%s",
                         why ? (const char *)why : "");
            }
        } else if (type == 2 && ctx->nexact < 2) {
            int i = ctx->nexact++;
            assign_cand *c = &ctx->exact[i];
            copy_name(ctx->exact_tier[i], text);
            copy_name(ctx->exact_action[i], act);
            memset(&c->pat, 0, sizeof c->pat);
            c->pat.kind = PAT_EXACT;
            c->text = ctx->key;
            c->action = ctx->exact_action[i];
            c->tier = ctx->exact_tier[i];
            c->expires_ms = t;
            c->dynamic = 1;
        } else if (type == 3 && ctx->nov < RESOLVE_MAX_LIMITS) {
            int i = ctx->nov++;
            copy_name(ctx->ov_name[i], text);
            ctx->ov[i].limit_name = ctx->ov_name[i];
            ctx->ov[i].limit = num;
            ctx->ov[i].expires_ms = t;
        }
    }
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot read key policy");
    return rls__every_ip_apply(db, ctx, now, 0);
}

/* The canonical form of the caller's key (or of a stored one: a string
 * action's key is stored as given), and the one-flight probe. */
static void canon_key(key_ctx *ctx)
{
    const rule_action *a = ctx->act;
    int n;
    /* An IP action that folds no address: its key normalised from the
     * caller's is the canonical form already (both are the address's
     * RFC 5952 text, keynorm.c), which need not be worked out twice. */
    if (a->key_kind == KEY_IP && a->ipv4_prefix == 32 && a->ipv6_prefix == 128 &&
        !ctx->normalised_arg && ctx->keylen < sizeof ctx->canon) {
        memcpy(ctx->canon, ctx->key, ctx->keylen + 1);
        n = (int)ctx->keylen;
    } else {
        n = rls__key_canonical(ctx->raw, strlen(ctx->raw), ctx->canon, sizeof ctx->canon);
    }
    if (n < 0) {   /* no room: as it is */
        n = snprintf(ctx->canon, sizeof ctx->canon, "%s", ctx->raw);
        if (n >= (int)sizeof ctx->canon)
            n = (int)sizeof ctx->canon - 1;
    }
    ctx->canonlen = (size_t)n;
    int same = ctx->canonlen == ctx->keylen && memcmp(ctx->canon, ctx->key, ctx->keylen) == 0;
    ctx->probe = same ? ctx->raw : ctx->canon;
    ctx->probelen = same ? strlen(ctx->raw) : ctx->canonlen;
}

/* The action under the rules cached, and the key normalised for it (the
 * error a check reports when either is not so). */
static int load_key(rls_db *db, key_ctx *ctx)
{
    const char *why = "", *action = ctx->action_arg;
    int kl;
    if (!db->rc.rules)
        return rls__error(db, RLS_ENORULES, "no rules applied to '%s' yet", db->ident.path);
    ctx->act = rls__ruleset_action(db->rc.rules, action);
    if (!ctx->act)
        return rls__error(db, RLS_ENOACTION, "action '%s' is not defined", action);
    if (ctx->normalised_arg) {
        kl = snprintf(ctx->key, sizeof ctx->key, "%s", ctx->raw);
        if (kl >= (int)sizeof ctx->key)
            kl = -2;
    } else {
        kl = rls__key_normalize(ctx->act->key_kind, ctx->act->ipv4_prefix, ctx->act->ipv6_prefix,
                                ctx->raw, strlen(ctx->raw), ctx->key, sizeof ctx->key, &why);
    }
    if (kl < 0 || kl > db->ident.opt.max_key_len)
        return rls__error(db, RLS_EKEY, "key is not valid for action '%s' (%s keys): %s",
                          action, rls__key_kind_name(ctx->act->key_kind),
                          kl == -2 || kl > 0 ? "too long" : why);
    ctx->keylen = (size_t)kl;
    ctx->canon_done = 0;   /* when a load needs it (the fast path never does) */
    ctx->planned = KEYCTX_KEY;
    ctx->plan_rules = db->rc.rules;
    ctx->plan_gen = db->rc.rules_gen;
    return RLS_OK;
}

void rls__keyctx_plan(rls_db *db, key_ctx *ctx, const char *action, const char *key)
{
    ctx->n = 0;
    ctx->raw = key;
    ctx->action_arg = action;
    ctx->normalised_arg = 0;
    ctx->planned = KEYCTX_NONE;
    if (db->rc.rules_gen >= 0 && db->rc.rules && load_key(db, ctx) != RLS_OK) {
        ctx->planned = KEYCTX_NONE;   /* the load inside the transaction says why */
        db->errmsg[0] = '\0';
    }
}

/* The tier and the limits that apply, from the rules and the key's policy
 * rows (core/resolve.c). */
static int resolve(rls_db *db, key_ctx *ctx, int64_t now)
{
    const assign_cand *const lists[2] = {ctx->exact, db->rc.patterns};
    const int counts[2] = {ctx->nexact, db->rc.npatterns};
    rls__resolve_tier(db->rc.rules, ctx->act->name, ctx->key, ctx->keylen, lists, counts, 2, now,
                 &ctx->tier);
    ctx->behaviour = TIER_NORMAL;
    if (ctx->tier.def && ctx->tier.def->blocked)
        ctx->behaviour = TIER_BLOCKED;
    else if (ctx->tier.def && ctx->tier.def->unlimited)
        ctx->behaviour = TIER_UNLIMITED;

    ctx->n = rls__resolve_limits(ctx->act, ctx->tier.tier, ctx->ov, ctx->nov, now, ctx->rl,
                            RESOLVE_MAX_LIMITS);
    if (ctx->n < 0) {
        ctx->n = 0;
        return rls__error(db, RLS_ECONFIG, "action '%s' has more than %d limits",
                          ctx->action_arg, RESOLVE_MAX_LIMITS);
    }
    return RLS_OK;
}

/* States are read later, or never (a blocked key): release must find no
 * buffers either way. */
static void items_clear(key_ctx *ctx, int64_t now)
{
    memset(ctx->st, 0, sizeof ctx->st[0] * (size_t)ctx->n);
    for (int i = 0; i < ctx->n; i++) {
        ctx->items[i].floor_ms = 0;
        ctx->items[i].sib = NULL;
        ctx->items[i].nsib = 0;
        ctx->row[i] = 0;
        for (int j = 0; j < RULES_SIB_MAX; j++)
            ctx->sib[i][j].st.log = NULL;
    }
    ctx->now = now;
}

int rls__keyctx_reload(rls_db *db, key_ctx *ctx, int64_t now)
{
    int rc, trusted = db->trust.fast_trust;

    ctx->n = 0;
    ctx->nexact = ctx->nov = 0;
    ctx->pen_found = 0;
    ctx->policy_maybe = 0;
    memset(&ctx->block, 0, sizeof ctx->block);
    if ((rc = rls__cache_refresh(db)) || (rc = rls__cache_empties(db)))
        return rc;
    int same = ctx->planned != KEYCTX_NONE && ctx->plan_rules == db->rc.rules &&
               ctx->plan_gen == db->rc.rules_gen && db->rc.rules;
    if (!same && (rc = load_key(db, ctx)))
        return rc;
    if (!ctx->canon_done) {
        canon_key(ctx);
        ctx->canon_done = 1;
    }
    if ((rc = read_policy(db, ctx, now)))
        return rc;
    /* resolved before without policy rows, and there are none: the same */
    if (same && ctx->planned == KEYCTX_RESOLVED && ctx->now == now && ctx->nexact == 0 &&
        ctx->nov == 0)
        ctx->n = ctx->plan_n;
    else if ((rc = resolve(db, ctx, now)))
        return rc;
    ctx->planned = trusted ? KEYCTX_RESOLVED : KEYCTX_KEY;
    ctx->plan_n = ctx->n;
    items_clear(ctx, now);
    return RLS_OK;
}

int rls__keyctx_resolve_trusted(rls_db *db, key_ctx *ctx, int64_t now)
{
    ctx->n = 0;
    if (ctx->planned == KEYCTX_NONE || !db->rc.rules || ctx->plan_rules != db->rc.rules ||
        ctx->plan_gen != db->rc.rules_gen)
        return 0;
    ctx->nexact = ctx->nov = 0;
    ctx->pen_found = 0;
    ctx->policy_maybe = 0;
    memset(&ctx->block, 0, sizeof ctx->block);
    if (resolve(db, ctx, now) != RLS_OK) {
        db->errmsg[0] = '\0';   /* the database path says why */
        return 0;
    }
    items_clear(ctx, now);
    return 1;
}

int rls__keyctx_load(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                int normalised, int64_t now)
{
    ctx->raw = key;
    ctx->action_arg = action;
    ctx->normalised_arg = normalised;
    ctx->planned = KEYCTX_NONE;
    return rls__keyctx_reload(db, ctx, now);
}

/* Copies a stored sliding log into a buffer with room for two more
 * entries: a charge, and usage carried over from another variant. */
static int take_log(rls_db *db, algo_state *s, const void *blob, int bytes)
{
    size_t len = bytes > 0 ? (size_t)bytes : 0;
    s->log = malloc(len + 2 * ALGO_LOG_ENTRY);
    if (!s->log)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    if (len)
        memcpy(s->log, blob, len);
    s->log_len = len;
    s->log_cap = len + 2 * ALGO_LOG_ENTRY;
    return RLS_OK;
}

/* Reads the states the key has under the other variants of limit i
 * (decide.h): what a rule change left behind may still count. */
static int read_sibs(rls_db *db, key_ctx *ctx, rls_stmt *st, int i)
{
    const rule_limit *def = ctx->rl[i].def;
    ctx->items[i].sib = ctx->sib[i];
    ctx->items[i].nsib = def->nsib;
    for (int j = 0; j < def->nsib; j++) {
        decide_sib *d = &ctx->sib[i][j];
        memset(d, 0, sizeof *d);
        sql_bind_int64(st, 1, def->sib[j]);
        sql_bind_blob(st, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
        int rc = sql_step(st), lrc = RLS_OK;
        if (rc == SQL_ROW) {
            d->alg = sql_column_int(st, 0);
            d->st.present = 1;
            d->st.a = sql_column_int64(st, 1);
            d->st.b = sql_column_int64(st, 2);
            d->st.c = sql_column_int64(st, 3);
            d->st.last_ms = sql_column_int64(st, 4);
            d->st.expires_ms = sql_column_int64(st, 5);
            if (d->alg == ALGO_SLIDING_LOG)
                lrc = take_log(db, &d->st, sql_column_blob(st, 6), sql_column_bytes(st, 6));
        }
        sql_reset(st);
        if (lrc)
            return lrc;
        if (rc != SQL_ROW && rc != SQL_DONE)
            return rls__sql_error(db, rc, "cannot read counter state");
    }
    return RLS_OK;
}

/*
 * The clock floor of limit lid: the latest exp_ms GC deleted for it.  Read
 * only when it can matter: every limit's floor is at most rls_meta's
 * gc_horizon, so while that is not past now, no floor is.
 */
static int read_floor(rls_db *db, int64_t lid, int64_t now, int64_t *floor_ms)
{
    *floor_ms = 0;
    if (db->trust.gc_horizon <= now)
        return RLS_OK;
    rls_stmt *st = rls__stmt(db, STMT_HORIZON_GET);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, lid);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *floor_ms = sql_column_int64(st, 0);
    sql_reset(st);
    return rc == SQL_ROW || rc == SQL_DONE ? RLS_OK
                                           : rls__sql_error(db, rc, "cannot read clock floor");
}

int rls__keyctx_read_states(rls_db *db, key_ctx *ctx)
{
    rls_stmt *st = rls__stmt(db, db->conn.tx_write ? STMT_STATE_GET : STMT_STATE_READ);
    int rc = SQL_DONE;
    memset(ctx->st, 0, sizeof ctx->st[0] * (size_t)ctx->n);
    ctx->nfound = 0;
    if (!st)
        return rls__stmt_failed(db);
    int mem = 0;
    for (int i = 0; i < ctx->n; i++) {
        algo_state *s = &ctx->st[i];
        const rule_limit *def = ctx->rl[i].def;
        ctx->items[i].rl = &ctx->rl[i];
        ctx->items[i].st = s;
        ctx->items[i].floor_ms = 0;
        ctx->row[i] = 0;
        if (rls__mem_limit(def)) {
            mem = 1;   /* the shared-memory table's, read below (memclass.c) */
            continue;
        }
        sql_bind_int64(st, 1, def->id);
        sql_bind_blob(st, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
        rc = sql_step(st);
        ctx->nfound += rc == SQL_ROW;
        ctx->row[i] = rc == SQL_ROW;
        /* A row written under another algorithm means nothing to this one. */
        if (rc == SQL_ROW && sql_column_int(st, 0) == def->algorithm) {
            s->present = 1;
            s->a = sql_column_int64(st, 1);
            s->b = sql_column_int64(st, 2);
            s->c = sql_column_int64(st, 3);
            s->last_ms = sql_column_int64(st, 4);
            s->expires_ms = sql_column_int64(st, 5);
        }
        if (def->algorithm == ALGO_SLIDING_LOG) {
            const void *blob = s->present ? sql_column_blob(st, 6) : NULL;
            int bytes = s->present ? sql_column_bytes(st, 6) : 0;
            int lrc = take_log(db, s, blob, bytes);
            if (lrc) {
                sql_reset(st);
                return lrc;
            }
        }
        sql_reset(st);
        if (rc != SQL_ROW && rc != SQL_DONE)
            return rls__sql_error(db, rc, "cannot read counter state");
        ctx->items[i].floor_ms = 0;
        if (!s->present && (rc = read_floor(db, def->id, ctx->now, &ctx->items[i].floor_ms)))
            return rc;
        if (def->nsib > 0 && (rc = read_sibs(db, ctx, st, i)))
            return rc;
    }
    /* memory-class states last: a snapshot, no lock held (memclass.c) */
    return mem ? rls__mem_read(db, ctx) : RLS_OK;
}

static void bind_state(rls_stmt *st, const key_ctx *ctx, int i)
{
    const algo_state *s = &ctx->st[i];
    sql_bind_int64(st, 1, ctx->rl[i].def->id);
    sql_bind_blob(st, 2, ctx->key, (int)ctx->keylen, SQL_STATIC);
    sql_bind_int64(st, 3, ctx->rl[i].def->algorithm);
    sql_bind_int64(st, 4, s->a);
    sql_bind_int64(st, 5, s->b);
    sql_bind_int64(st, 6, s->c);
    sql_bind_int64(st, 7, s->last_ms);
    sql_bind_int64(st, 8, s->expires_ms);
    if (s->log && s->log_len)
        sql_bind_blob(st, 9, s->log, (int)s->log_len, SQL_STATIC);
    else
        sql_bind_null(st, 9);
}

/* The state of limit i written back over the row the transaction read.
 * SQLite's STATE_PUT is an UPDATE (statements.h) whose outcome is known
 * at once: should it find no row, the state is inserted instead, never
 * lost.  PostgreSQL's is the upsert, its outcome read with the next
 * statement (an existing state's upsert travels with it, pg_pipe.c). */
static int put_state(rls_db *db, const key_ctx *ctx, int i, rls_stmt *put, rls_stmt *add)
{
    int64_t before = put->deferred_rows;
    bind_state(put, ctx, i);
    int rc = sql_step_deferred(put);
    sql_reset(put);
    if (rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot write counter state");
    if (put->drv != &rls__lite_driver || put->deferred_rows != before)
        return RLS_OK;
    bind_state(add, ctx, i);
    rc = sql_step(add);
    sql_reset(add);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot write counter state");
}

int rls__keyctx_write_states(rls_db *db, key_ctx *ctx)
{
    rls_stmt *put = rls__stmt(db, STMT_STATE_PUT), *add = rls__stmt(db, STMT_STATE_NEW);
    if (!put || !add)
        return rls__stmt_failed(db);
    int durable = 0, krc = rls__mem_stage(db, ctx);   /* memory-class: staged */
    if (krc)
        return krc;
    for (int i = 0; i < ctx->n; i++)
        durable |= ctx->items[i].changed && !rls__mem_limit(ctx->rl[i].def);
    /* a new key is counted (keycount.c): its rows are the durable ones */
    if (durable && (krc = rls__keycount_before_write(db, ctx)))
        return krc;
    for (int i = 0; i < ctx->n; i++) {
        if (!ctx->items[i].changed || rls__mem_limit(ctx->rl[i].def))
            continue;
        if (ctx->row[i]) {
            if ((krc = put_state(db, ctx, i, put, add)))
                return krc;
            continue;
        }
        bind_state(add, ctx, i);
        int rc = sql_step(add);
        sql_reset(add);
        if (rc != SQL_DONE)
            return rls__sql_error(db, rc, "cannot write counter state");
        if (sql_changes(db) != 1)   /* another check created it */
            return db->be->conflict(db, "counter state was created by a concurrent check");
    }
    return RLS_OK;
}

void rls__keyctx_release(key_ctx *ctx)
{
    for (int i = 0; i < ctx->n; i++) {
        free(ctx->st[i].log);
        ctx->st[i].log = NULL;
        for (int j = 0; j < RULES_SIB_MAX; j++) {
            free(ctx->sib[i][j].st.log);
            ctx->sib[i][j].st.log = NULL;
        }
    }
}

void rls__keyctx_give_back(rls_db *db, key_ctx *ctx)
{
    key_ctx *none = NULL;
    if (!ctx)
        return;
    rls__keyctx_release(ctx);
    if (!__atomic_compare_exchange_n(&db->ctx_spare, &none, ctx, 0, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED))
        free(ctx);   /* another call's is the spare already */
}
