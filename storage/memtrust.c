/*
 * memtrust.c - the per-key trust table of the memory-class fast path
 * (memtrust.h has the contract, memclass.c the design).
 *
 * Layout: a tag array (one 32-bit tag per way, 0 empty; a set's tags are
 * one cache line) beside the entries, so a lookup reads one line of tags
 * and the bytes of at most the entries whose tag matches.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "denycache.h"
#include "memclass.h"
#include "memtrust.h"

struct mt_entry {
    uint64_t gen;                      /* deny generation it was learned under */
    int64_t now;                       /* the caller's time of that check */
    int64_t mono;                      /* monotonic ms of its commit */
    uint16_t act;                      /* index of the action in the rule set */
    uint8_t len;
    char key[MEMTRUST_KEY_MAX];
};

struct mem_trust {
    unsigned char seed[16];
    const void *rules;                 /* the rule set every entry is of */
    int64_t rules_gen;
    size_t count;
    uint32_t (*tag)[MEMTRUST_WAYS];    /* MEMTRUST_SETS rows, or NULL: none yet */
    struct mt_entry (*e)[MEMTRUST_WAYS];
};

mem_trust *rls__memtrust_new(void)
{
    mem_trust *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (getrandom(c->seed, sizeof c->seed, GRND_NONBLOCK) != (ssize_t)sizeof c->seed) {
        /* no entropy yet: the clock and the table's address keep the sets
         * out of a remote client's reach */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t a = (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)c;
        uint64_t b = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ts.tv_sec;
        memcpy(c->seed, &a, 8);
        memcpy(c->seed + 8, &b, 8);
    }
    c->rules_gen = -1;
    return c;
}

void rls__memtrust_free(mem_trust *c)
{
    if (!c)
        return;
    free(c->tag);
    free(c->e);
    free(c);
}

void rls__memtrust_clear(mem_trust *c)
{
    if (!c)
        return;
    if (c->tag)
        memset(c->tag, 0, sizeof c->tag[0] * MEMTRUST_SETS);
    c->count = 0;
}

/* The hash of (act, key): its set in the low bits, its tag (never 0) in
 * the high ones. */
static uint64_t hash_of(const mem_trust *c, int act, const char *key, size_t keylen)
{
    unsigned char buf[2 + MEMTRUST_KEY_MAX];
    buf[0] = (unsigned char)(act & 0xff);
    buf[1] = (unsigned char)(act >> 8);
    memcpy(buf + 2, key, keylen);
    return rls__deny_siphash(c->seed, buf, 2 + keylen);
}

static uint32_t tag_of(uint64_t h)
{
    uint32_t t = (uint32_t)(h >> 32);
    return t ? t : 1;
}

/* The way of (act, key) in its set, or -1. */
static int find(const mem_trust *c, size_t set, uint32_t tag, int act, const char *key,
                size_t keylen)
{
    for (int w = 0; w < MEMTRUST_WAYS; w++) {
        const struct mt_entry *e = &c->e[set][w];
        if (c->tag[set][w] == tag && e->act == act && e->len == keylen &&
            memcmp(e->key, key, keylen) == 0)
            return w;
    }
    return -1;
}

static int usable(int act, size_t keylen)
{
    return act >= 0 && act <= 0xffff && keylen <= MEMTRUST_KEY_MAX;
}

int rls__memtrust_get(mem_trust *c, const void *rules, int64_t rules_gen, int act,
                      const char *key, size_t keylen, uint64_t gen, int64_t now, int64_t mono)
{
    if (!c || !c->tag || c->count == 0 || !usable(act, keylen) || rules != c->rules ||
        rules_gen != c->rules_gen)
        return 0;
    uint64_t h = hash_of(c, act, key, keylen);
    size_t set = (size_t)(h & (MEMTRUST_SETS - 1));
    int w = find(c, set, tag_of(h), act, key, keylen);
    if (w < 0)
        return 0;
    const struct mt_entry *e = &c->e[set][w];
    return e->gen == gen && now >= e->now && mono >= e->mono &&
           mono - e->mono < MEMTRUST_TTL_MS;
}

/* The entries, at the first put; 0 or -1 out of memory. */
static int ensure(mem_trust *c)
{
    if (c->tag)
        return 0;
    c->tag = calloc(MEMTRUST_SETS, sizeof c->tag[0]);
    c->e = calloc(MEMTRUST_SETS, sizeof c->e[0]);
    if (c->tag && c->e)
        return 0;
    free(c->tag);
    free(c->e);
    c->tag = NULL;
    c->e = NULL;
    return -1;
}

void rls__memtrust_put(mem_trust *c, const void *rules, int64_t rules_gen, int act,
                       const char *key, size_t keylen, uint64_t gen, int64_t now, int64_t mono)
{
    if (!c || !usable(act, keylen) || ensure(c) != 0)
        return;
    if (rules != c->rules || rules_gen != c->rules_gen) {
        rls__memtrust_clear(c);   /* indexes of another rule set mean nothing */
        c->rules = rules;
        c->rules_gen = rules_gen;
    }
    uint64_t h = hash_of(c, act, key, keylen);
    size_t set = (size_t)(h & (MEMTRUST_SETS - 1));
    uint32_t tag = tag_of(h);
    int w = find(c, set, tag, act, key, keylen);
    for (int i = 0; w < 0 && i < MEMTRUST_WAYS; i++)
        if (c->tag[set][i] == 0)
            w = i;
    if (w < 0) {   /* full: the entry learned longest ago goes */
        w = 0;
        for (int i = 1; i < MEMTRUST_WAYS; i++)
            if (c->e[set][i].mono < c->e[set][w].mono)
                w = i;
    } else if (c->tag[set][w] == 0) {
        c->count++;
    }
    struct mt_entry *e = &c->e[set][w];
    c->tag[set][w] = tag;
    e->gen = gen;
    e->now = now;
    e->mono = mono;
    e->act = (uint16_t)act;
    e->len = (uint8_t)keylen;
    memcpy(e->key, key, keylen);
}

void rls__memtrust_drop(mem_trust *c, int act, const char *key, size_t keylen)
{
    if (!c || !c->tag || c->count == 0 || !usable(act, keylen))
        return;
    uint64_t h = hash_of(c, act, key, keylen);
    size_t set = (size_t)(h & (MEMTRUST_SETS - 1));
    int w = find(c, set, tag_of(h), act, key, keylen);
    if (w >= 0) {
        c->tag[set][w] = 0;
        c->count--;
    }
}

size_t rls__memtrust_count(const mem_trust *c)
{
    return c ? c->count : 0;
}

size_t rls__memtrust_bytes(const mem_trust *c)
{
    if (!c)
        return 0;
    return sizeof *c + (c->tag ? MEMTRUST_SETS * (sizeof c->tag[0] + sizeof c->e[0]) : 0);
}

/* ---- the trust ------------------------------------------------------------ */

/* Is what the trust of every key learned (pol_none, res_none) as of the
 * current generation and rules, with more than half its time left?  Then
 * a transaction needs no statement to learn it again (a mixed action's
 * checks, or every check while some key has a policy row, would pay one
 * each). */
static int known_fresh(rls_db *db, const struct mem_fast_trust *m)
{
    int64_t mono = rls__mem_coarse_ms();
    return m->known && mono >= 0 && mono - m->mono < MEMTRUST_TTL_MS / 2 &&
           m->rules == db->rc.rules && m->rules_gen == db->rc.rules_gen &&
           __atomic_load_n(db->deny.deny_gen, __ATOMIC_ACQUIRE) == m->gen;
}

/* The trust of every key: pol_none and res_none, learned in this
 * transaction (m->learned) unless known_fresh. */
static int learn_every_key(rls_db *db, struct mem_fast_trust *m)
{
    if (known_fresh(db, m))
        return RLS_OK;
    if (db->trust.tx_trusted && db->trust.empties_known) {
        m->pol_none = db->trust.policy_none;
        m->res_none = db->trust.res_none;
        m->learned = 1;
        return RLS_OK;
    }
    int rc = rls__empties_read(db, &m->pol_none, &m->res_none);
    m->learned = rc == RLS_OK;
    return rc;
}

/* A row read by the load (keyctx.c) that had expired at now: it cannot
 * apply at now or later (core/resolve.c, core/penalty.c). */
static int expired(int64_t expires_ms, int64_t now)
{
    return expires_ms > 0 && expires_ms <= now;
}

/* Did the load find no policy row that applies to ctx's key at ctx->now,
 * and are its limits ones the fast path serves?  The load's lists are
 * capped (two assignments, RESOLVE_MAX_LIMITS overrides): a full list may
 * have left a row out, so it is not clean. */
static int rows_clean(const key_ctx *ctx)
{
    if (ctx->block.active || ctx->policy_maybe || ctx->nexact >= 2 ||
        ctx->nov >= RESOLVE_MAX_LIMITS || ctx->n > RLS__SHM_TXN_MAX)
        return 0;
    for (int i = 0; i < ctx->nexact; i++)
        if (!expired(ctx->exact[i].expires_ms, ctx->now))
            return 0;
    for (int i = 0; i < ctx->nov; i++)
        if (!expired(ctx->ov[i].expires_ms, ctx->now))
            return 0;
    for (int i = 0; i < ctx->n; i++)
        if (!rls__mem_limit(ctx->rl[i].def))
            return 0;   /* a mixed action: the fast path never serves it */
    return 1;
}

/* The trust of this check's key (m->key_clean), from the rows its load
 * read and whether it holds a reservation: known for every key, else one
 * statement.  Only a check of a handle without the trust of every key
 * needs it. */
static int learn_key(rls_db *db, struct mem_fast_trust *m, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    if (call->op != CHECK_OP_CHECK || (m->learned ? m->pol_none && m->res_none : m->trusted) ||
        !rows_clean(ctx))
        return RLS_OK;
    int nores = m->learned || known_fresh(db, m) ? m->res_none : 0;
    if (!nores)
        nores = rls__no_reservation_of_key(db, ctx);
    m->key_clean = nores;
    return RLS_OK;
}

int rls__memtrust_learn(rls_db *db, struct mem_fast_trust *m, struct check_call *call)
{
    m->learned = m->key_clean = 0;   /* an earlier transaction's is not this one's */
    if (!call->deny_usable || !rls__mem_action_has(db->rc.rules, call->action))
        return RLS_OK;
    int rc = learn_every_key(db, m);
    return rc ? rc : learn_key(db, m, call);
}

void rls__memtrust_commit(rls_db *db, struct mem_fast_trust *m, const struct check_call *call,
                          int stands)
{
    const key_ctx *ctx = call->ctx;
    int clean = m->key_clean;
    m->key_clean = 0;
    if (!call->deny_usable || !stands) {
        m->learned = 0;
        return;   /* nothing learned: the trust stands as it was */
    }
    int64_t mono = rls__mem_coarse_ms();
    if (m->learned) {
        m->trusted = m->pol_none && m->res_none;
        m->known = 1;
        m->learned = 0;
        m->gen = call->deny_gen;
        m->rules_gen = db->rc.rules_gen;
        m->rules = db->rc.rules;
        m->mono = mono;
    }
    /* a penalty block or a reservation it wrote: not clean any more (the
     * generation moved too, stmt.c) */
    if (!clean || m->trusted || call->penalty || call->blocked || mono < 0 || !db->rc.rules)
        return;
    if (!m->keys && !(m->keys = rls__memtrust_new()))
        return;   /* out of memory: no per-key trust, the database path */
    rls__memtrust_put(m->keys, db->rc.rules, db->rc.rules_gen,
                      (int)(ctx->act - db->rc.rules->actions), call->key, strlen(call->key),
                      call->deny_gen, call->now, mono);
}

int rls__memtrust_allows_key(rls_db *db, struct mem_fast_trust *m, int act, const char *key,
                             size_t keylen, int64_t now, int64_t mono)
{
    if ((!m->trusted && !m->keys) || mono < 0)
        return 0;
    uint64_t gen = __atomic_load_n(db->deny.deny_gen, __ATOMIC_ACQUIRE);
    if (m->trusted) {
        if (gen == m->gen && m->rules == db->rc.rules && m->rules_gen == db->rc.rules_gen &&
            mono - m->mono < MEMTRUST_TTL_MS)
            return 1;
        m->trusted = 0;
    }
    if (!m->keys || act < 0 || !db->rc.rules)
        return 0;
    return rls__memtrust_get(m->keys, db->rc.rules, db->rc.rules_gen, act, key, keylen, gen,
                             now, mono);
}

/* The trust of every key, else of the call's key (the key as the caller
 * gave it: its action's normalisation, canonical form and spelling are
 * what the load matched rows by). */
int rls__memtrust_allows(rls_db *db, struct mem_fast_trust *m, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    /* the pipeline's entry read of CLOCK_MONOTONIC when there is one: at
     * or after the coarse clock the trust was learned with, so its age is
     * never under-estimated */
    int64_t mono = call->mono_ns > 0 ? call->mono_ns / 1000000 : rls__mem_coarse_ms();
    int planned = ctx->planned != KEYCTX_NONE && db->rc.rules &&
                  ctx->plan_rules == db->rc.rules && ctx->plan_gen == db->rc.rules_gen;
    return rls__memtrust_allows_key(db, m, planned ? (int)(ctx->act - db->rc.rules->actions) : -1,
                                    call->key, planned ? strlen(call->key) : 0, call->now, mono);
}

void rls__memtrust_forget(struct mem_fast_trust *t)
{
    t->trusted = t->learned = t->known = t->key_clean = 0;
    rls__memtrust_clear(t->keys);
}

void rls__memtrust_fini(struct mem_fast_trust *t)
{
    rls__memtrust_free(t->keys);
    t->keys = NULL;
}
