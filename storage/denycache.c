/*
 * denycache.c - denials served from memory (contract in denycache.h).
 *
 * Why: a key over its limit, or blocked, is usually asked again and again
 * (an abusive client retries).  Each of those checks would take the write
 * lock, read the same rows and write nothing but statistics.  Instead the
 * first denial keeps what decided it, and later checks of the same
 * (action, key as given) decide again from it in memory: the same pure
 * decide_check() the transaction runs, on the same resolved limits and
 * states, with the caller's own time and cost.  A decision that would admit,
 * charge (count_denied) or impose a penalty is never taken from here: the
 * check then runs its transaction.  So a cached entry can only deny, and
 * only while the rows it was built from are the database's rows.
 *
 * How long the rows are trusted:
 *  - one second of real time (CLOCK_MONOTONIC, never the caller's clock,
 *    which tests freeze): what other processes and handles change (an
 *    unblock, a refund, a new rule set) reaches this handle within a second;
 *  - in the caller's time, from the decision's `now` until the first later
 *    instant at which the key's resolution can change by itself: the end of
 *    its block, the expiry of an exact or pattern tier assignment or of an
 *    override, the expiry of one of its reservations (a check refunds it);
 *  - this handle's own changes clear the cache at once: any commit of a
 *    write transaction that is not a check (wal.c's hook), and a new rules
 *    generation (cache.c).
 * Denied checks served here are counted in the in-process stats and key
 * stats, which the next write transaction flushes as usual.
 *
 * Entries live in a chained hash table of DC_BUCKETS buckets, at most DC_MAX
 * entries (about 150 bytes each with one limit): when full, expired entries
 * are swept, then whole buckets are evicted in turn.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "denycache.h"

#define DC_BUCKETS 4096         /* power of two */
#define DC_MAX 8192             /* entries */
#define DC_VALID_NS 1000000000LL  /* one second of real time */
#define DC_SWEEP_NS 100000000LL   /* at most one full sweep per 0.1 s */

/* A state without its log pointer (the log follows in the allocation). */
typedef struct dc_state {
    int64_t a, b, c, last_ms, expires_ms;
    uint32_t log_len;
    int present;
} dc_state;

struct dc_entry {
    dc_entry *next;
    const rule_action *act;
    int64_t t0;            /* the caller's time of the decision */
    int64_t hi;            /* ... and the first instant it may change */
    int64_t deadline_ns;   /* monotonic: trusted before */
    int64_t block_until;   /* blocked: 0 = forever */
    uint32_t hash;
    uint16_t rawlen, keylen;
    uint8_t n, blocked;
    /* then: resolved_limit rl[n], dc_state st[n], the logs, the raw key,
     * the normalised key, and for a blocked key the rule name (NUL-ended) */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint32_t hash_of(const char *action, const char *key, size_t keylen)
{
    uint32_t h = 2166136261u;  /* FNV-1a */
    for (const char *p = action; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ 0xff) * 16777619u;
    for (size_t i = 0; i < keylen; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h;
}

static resolved_limit *e_rl(dc_entry *e)
{
    return (resolved_limit *)(void *)(e + 1);
}

static dc_state *e_st(dc_entry *e)
{
    return (dc_state *)(void *)(e_rl(e) + e->n);
}

static unsigned char *e_logs(dc_entry *e)
{
    return (unsigned char *)(e_st(e) + e->n);
}

static char *e_raw(dc_entry *e)
{
    unsigned char *p = e_logs(e);
    for (int i = 0; i < e->n; i++)
        p += e_st(e)[i].log_len;
    return (char *)p;
}

static char *e_key(dc_entry *e)
{
    return e_raw(e) + e->rawlen + 1;
}

static char *e_rule(dc_entry *e)
{
    return e_key(e) + e->keylen + 1;
}

void rls__denycache_drop(dc_entry *e)
{
    free(e);
}

/* Unlinks and frees *pp. */
static void unlink_at(rls_db *db, dc_entry **pp)
{
    dc_entry *e = *pp;
    *pp = e->next;
    free(e);
    db->dc_count--;
}

void rls__denycache_clear(rls_db *db)
{
    if (!db->dc_buckets || db->dc_count == 0)
        return;
    for (int i = 0; i < DC_BUCKETS; i++)
        while (db->dc_buckets[i])
            unlink_at(db, &db->dc_buckets[i]);
    db->dc_count = 0;
}

void rls__denycache_free(rls_db *db)
{
    rls__denycache_clear(db);
    free(db->dc_buckets);
    db->dc_buckets = NULL;
}

static dc_entry **find(rls_db *db, uint32_t h, const char *action, const char *key,
                       size_t keylen)
{
    dc_entry **pp = &db->dc_buckets[h & (DC_BUCKETS - 1)];
    for (; *pp; pp = &(*pp)->next) {
        dc_entry *e = *pp;
        if (e->hash == h && e->rawlen == keylen && strcmp(e->act->name, action) == 0 &&
            memcmp(e_raw(e), key, keylen) == 0)
            return pp;
    }
    return NULL;
}

int rls__denycache_serve(rls_db *db, const char *action, const char *key,
                         int64_t cost, int64_t now, rls_result *res)
{
    if (!db->dc_buckets || db->dc_count == 0)
        return 0;
    size_t keylen = strlen(key);
    uint32_t h = hash_of(action, key, keylen);
    dc_entry **pp = find(db, h, action, key, keylen);
    if (!pp)
        return 0;
    dc_entry *e = *pp;
    int64_t t = mono_ns();
    if (t < 0 || t >= e->deadline_ns || now < e->t0 || now >= e->hi) {
        unlink_at(db, pp);
        return 0;
    }
    if (e->blocked) {
        decide_blocked(res, now, e->block_until, e_rule(e));
    } else {
        decide_item items[RESOLVE_MAX_LIMITS];
        algo_state st[RESOLVE_MAX_LIMITS];
        decide_out dout;
        resolved_limit *rl = e_rl(e);
        const dc_state *cs = e_st(e);
        unsigned char *log = e_logs(e);
        for (int i = 0; i < e->n; i++) {
            st[i].present = cs[i].present;
            st[i].a = cs[i].a;
            st[i].b = cs[i].b;
            st[i].c = cs[i].c;
            st[i].last_ms = cs[i].last_ms;
            st[i].expires_ms = cs[i].expires_ms;
            st[i].log = cs[i].log_len ? log : NULL;
            st[i].log_len = st[i].log_cap = cs[i].log_len;
            log += cs[i].log_len;
            items[i].rl = &rl[i];
            items[i].st = &st[i];
        }
        /* charge == 0: nothing changes, and for a denial without a
         * count_denied limit the result is the one a charging check gets. */
        if (decide_check(items, e->n, TIER_NORMAL, now, db->gc_horizon, cost, 0, res,
                         &dout) != 0 ||
            res->allowed || dout.penalty >= 0) {
            unlink_at(db, pp);
            return 0;
        }
    }
    rls__stats_count(db, e->act->name, now, 0);
    rls__keystat_note(db, e->act->name, e_key(e), e->keylen, res, now);
    return 1;
}

/* The first instant after now at which x changes something, kept in *hi. */
static void until_change(int64_t *hi, int64_t x, int64_t now)
{
    if (x > now && x < *hi)
        *hi = x;
}

/* The earliest expiry of the key's reservations into *hi; 0 if one is
 * already due (the next check refunds it: not cacheable) or on error. */
static int reservations_until(rls_db *db, const key_ctx *ctx, int64_t now, int64_t *hi)
{
    if (rls__no_reservations(db))
        return 1;
    sqlite3_stmt *st = rls__stmt(db, STMT_RES_NEXT_KEY);
    if (!st) {
        db->errmsg[0] = '\0';  /* the check itself succeeded */
        return 0;
    }
    sqlite3_bind_blob(st, 1, ctx->key, (int)ctx->keylen, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ctx->act->name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), ok = 0;
    if (rc == SQLITE_ROW) {
        ok = 1;
        if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
            int64_t x = sqlite3_column_int64(st, 0);
            if (x <= now)
                ok = 0;
            until_change(hi, x, now);
        }
    }
    sqlite3_reset(st);
    return ok;
}

dc_entry *rls__denycache_prepare(rls_db *db, const key_ctx *ctx, int blocked,
                                 int64_t now)
{
    size_t rawlen = strlen(ctx->raw), logs = 0, rulelen = 0;
    int n = blocked ? 0 : ctx->n;
    int64_t hi = RLS_TIME_MAX + 1;

    if (rawlen > UINT16_MAX || ctx->keylen > UINT16_MAX || n > RESOLVE_MAX_LIMITS)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (ctx->rl[i].def->count_denied || ctx->items[i].changed)
            return NULL;  /* the denial writes: never from memory */
        if (ctx->st[i].present && ctx->st[i].log)
            logs += ctx->st[i].log_len;
    }
    if (blocked && ctx->block.active)
        rulelen = strlen(ctx->block.rule);
    if (ctx->block.active && ctx->block.until_ms != 0)
        until_change(&hi, ctx->block.until_ms, now);
    for (int i = 0; i < ctx->nexact; i++)
        until_change(&hi, ctx->exact[i].expires_ms, now);
    for (int i = 0; i < ctx->nov; i++)
        until_change(&hi, ctx->ov[i].expires_ms, now);
    for (int i = 0; i < db->npatterns; i++)
        until_change(&hi, db->patterns[i].expires_ms, now);
    if (!reservations_until(db, ctx, now, &hi))
        return NULL;

    size_t size = sizeof(dc_entry) + (size_t)n * (sizeof(resolved_limit) + sizeof(dc_state)) +
                  logs + rawlen + 1 + ctx->keylen + 1 + rulelen + 1;
    dc_entry *e = malloc(size);
    if (!e)
        return NULL;
    e->next = NULL;
    e->act = ctx->act;
    e->t0 = now;
    e->hi = hi;
    e->deadline_ns = 0;  /* set when stored, after the commit */
    e->block_until = blocked && ctx->block.active ? ctx->block.until_ms : 0;
    e->hash = hash_of(ctx->act->name, ctx->raw, rawlen);
    e->rawlen = (uint16_t)rawlen;
    e->keylen = (uint16_t)ctx->keylen;
    e->n = (uint8_t)n;
    e->blocked = (uint8_t)(blocked != 0);
    dc_state *cs = e_st(e);
    unsigned char *log = e_logs(e);
    for (int i = 0; i < n; i++) {
        const algo_state *s = &ctx->st[i];
        e_rl(e)[i] = ctx->rl[i];
        cs[i].present = s->present;
        cs[i].a = s->a;
        cs[i].b = s->b;
        cs[i].c = s->c;
        cs[i].last_ms = s->last_ms;
        cs[i].expires_ms = s->expires_ms;
        cs[i].log_len = s->present && s->log ? (uint32_t)s->log_len : 0;
        if (cs[i].log_len)
            memcpy(log, s->log, cs[i].log_len);
        log += cs[i].log_len;
    }
    memcpy(e_raw(e), ctx->raw, rawlen + 1);
    memcpy(e_key(e), ctx->key, ctx->keylen);
    e_key(e)[ctx->keylen] = '\0';
    if (rulelen)
        memcpy(e_rule(e), ctx->block.rule, rulelen);
    e_rule(e)[rulelen] = '\0';
    return e;
}

/* Room for one more: expired entries first (at most one sweep per
 * DC_SWEEP_NS), then whole buckets in turn. */
static void make_room(rls_db *db, int64_t t)
{
    if (t - db->dc_swept_ns >= DC_SWEEP_NS) {
        db->dc_swept_ns = t;
        for (int i = 0; i < DC_BUCKETS; i++)
            for (dc_entry **pp = &db->dc_buckets[i]; *pp;)
                if ((*pp)->deadline_ns <= t)
                    unlink_at(db, pp);
                else
                    pp = &(*pp)->next;
    }
    while (db->dc_count >= DC_MAX) {
        dc_entry **b = &db->dc_buckets[db->dc_evict++ & (DC_BUCKETS - 1)];
        while (*b)
            unlink_at(db, b);
    }
}

void rls__denycache_put(rls_db *db, dc_entry *e)
{
    int64_t t = mono_ns();
    if (t < 0 || (!db->dc_buckets &&
                  !(db->dc_buckets = calloc(DC_BUCKETS, sizeof *db->dc_buckets)))) {
        free(e);
        return;
    }
    /* Measured after the commit: others' changes come after it. */
    e->deadline_ns = t + DC_VALID_NS;
    dc_entry **pp = find(db, e->hash, e->act->name, e_raw(e), e->rawlen);
    if (pp)
        unlink_at(db, pp);
    else if (db->dc_count >= DC_MAX)
        make_room(db, t);
    dc_entry **b = &db->dc_buckets[e->hash & (DC_BUCKETS - 1)];
    e->next = *b;
    *b = e;
    db->dc_count++;
}
