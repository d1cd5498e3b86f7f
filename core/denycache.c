/*
 * denycache.c - the per-handle cache of denials (see denycache.h).
 *
 * A set-associative table: DENYCACHE_SETS sets of DENYCACHE_WAYS entries,
 * the set chosen by the fingerprint's low bits, the least recently used way
 * replaced.  A set's fingerprints are kept apart from its entries, in one
 * cache line, so a lookup reads one line, and a second one on a hit.  Eight
 * ways: 10,000 keys in 16,384 entries leave about 2 % of them without a
 * place (four ways: about 8 %).  Rule names are kept once in a small table of their own, so an
 * entry is a few machine words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "denycache.h"

#define DENY_NAMES 64           /* distinct rule names before a clear */

typedef struct deny_entry {
    uint64_t gen;               /* generation read before the denial */
    int64_t now_ms;             /* time of the denial */
    int64_t until_ms;           /* first time it could be admitted */
    int64_t mono_until;         /* monotonic expiry */
    int64_t cost;
    int64_t limit;
    int64_t reset_ms;
    int64_t retry_ms;           /* -1: never */
    int64_t window_ms;
    uint32_t stamp;             /* last use, for replacement */
    uint8_t reason;
    uint8_t name;               /* index into names */
} deny_entry;

struct deny_cache {
    unsigned char seed[16];
    uint32_t clock;
    int nnames;
    char names[DENY_NAMES][RLS_NAME_MAX + 1];
    /* the fingerprints of a set share a cache line; 0: empty */
    uint64_t fp[DENYCACHE_SETS * DENYCACHE_WAYS];
    deny_entry e[DENYCACHE_SETS * DENYCACHE_WAYS];
};

/* ---- SipHash-2-4 (Aumasson and Bernstein) -------------------------------- */

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static uint64_t load_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

static void sip_rounds(uint64_t v[4], int rounds)
{
    for (int r = 0; r < rounds; r++) {
        v[0] += v[1];
        v[1] = rotl(v[1], 13);
        v[1] ^= v[0];
        v[0] = rotl(v[0], 32);
        v[2] += v[3];
        v[3] = rotl(v[3], 16);
        v[3] ^= v[2];
        v[0] += v[3];
        v[3] = rotl(v[3], 21);
        v[3] ^= v[0];
        v[2] += v[1];
        v[1] = rotl(v[1], 17);
        v[1] ^= v[2];
        v[2] = rotl(v[2], 32);
    }
}

uint64_t rls__deny_siphash(const unsigned char key[16], const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                     k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le(p + i, 8);
        v[3] ^= m;
        sip_rounds(v, 2);
        v[0] ^= m;
    }
    uint64_t b = (uint64_t)len << 56 | load_le(p + whole, len % 8);
    v[3] ^= b;
    sip_rounds(v, 2);
    v[0] ^= b;
    v[2] ^= 0xff;
    sip_rounds(v, 4);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* ---- the table ------------------------------------------------------------ */

deny_cache *rls__denycache_new(const unsigned char seed[16])
{
    deny_cache *c = calloc(1, sizeof *c);
    if (c)
        memcpy(c->seed, seed, sizeof c->seed);
    return c;
}

void rls__denycache_free(deny_cache *c)
{
    free(c);
}

void rls__denycache_clear(deny_cache *c)
{
    if (!c)
        return;
    memset(c->fp, 0, sizeof c->fp);
    c->nnames = 0;
}

uint64_t rls__denycache_fp(const deny_cache *c, const char *action, const char *key,
                      size_t keylen)
{
    /* action, a NUL that no action name contains, then the key bytes */
    unsigned char buf[RLS_NAME_MAX + 1 + RLS_KEY_MAX_LIMIT];
    size_t al = strlen(action);
    if (al > RLS_NAME_MAX)
        al = RLS_NAME_MAX;
    if (keylen > RLS_KEY_MAX_LIMIT)
        keylen = RLS_KEY_MAX_LIMIT;
    memcpy(buf, action, al);
    buf[al] = 0;
    memcpy(buf + al + 1, key, keylen);
    uint64_t fp = rls__deny_siphash(c->seed, buf, al + 1 + keylen);
    return fp ? fp : 1;
}

/* The index of the first way of fp's set. */
static size_t set_of(uint64_t fp)
{
    return (size_t)(fp & (DENYCACHE_SETS - 1)) * DENYCACHE_WAYS;
}

int rls__denycache_get(deny_cache *c, uint64_t fp, int64_t cost, int64_t now, int64_t mono,
                  uint64_t gen, rls_result *res)
{
    size_t s = set_of(fp);
    for (int w = 0; w < DENYCACHE_WAYS; w++) {
        if (c->fp[s + w] != fp)
            continue;
        deny_entry *e = &c->e[s + w];
        if (e->gen != gen || mono >= e->mono_until || now >= e->until_ms) {
            c->fp[s + w] = 0;  /* stale for good */
            continue;
        }
        if (now < e->now_ms || (e->reason != RLS_REASON_BLOCKED && e->cost != cost))
            continue;
        int64_t passed = now - e->now_ms;
        memset(res, 0, sizeof *res);
        res->allowed = 0;
        res->reason = e->reason;
        res->limit = e->limit;
        res->remaining = 0;
        res->reset_ms = e->reset_ms > passed ? e->reset_ms - passed : 0;
        res->retry_after_ms = e->retry_ms < 0 ? -1 : e->retry_ms - passed;
        res->window_ms = e->window_ms;
        memcpy(res->rule, c->names[e->name], sizeof res->rule);
        e->stamp = ++c->clock;
        return 1;
    }
    return 0;
}

static int name_index(deny_cache *c, const char *name)
{
    for (int i = 0; i < c->nnames; i++)
        if (strcmp(c->names[i], name) == 0)
            return i;
    if (c->nnames == DENY_NAMES)
        return -1;
    snprintf(c->names[c->nnames], sizeof c->names[0], "%s", name);
    return c->nnames++;
}

int rls__denycache_put(deny_cache *c, uint64_t fp, int64_t cost, int64_t now, int64_t mono,
                  uint64_t gen, const rls_result *res)
{
    rls__denycache_forget(c, fp);
    if (res->allowed || res->remaining != 0 || res->retry_after_ms == 0 ||
        res->retry_after_ms > RLS_TIME_MAX)
        return -1;
    int name = name_index(c, res->rule);
    if (name < 0) {
        rls__denycache_clear(c);  /* many rule names came and went: start over */
        if ((name = name_index(c, res->rule)) < 0)
            return -1;
    }
    size_t s = set_of(fp), i = s;
    for (size_t w = s; w < s + DENYCACHE_WAYS; w++) {
        if (c->fp[w] == 0) {
            i = w;
            break;
        }
        if ((int32_t)(c->e[w].stamp - c->e[i].stamp) < 0)
            i = w;
    }
    deny_entry *e = &c->e[i];
    c->fp[i] = fp;
    e->gen = gen;
    e->now_ms = now;
    e->until_ms = res->retry_after_ms < 0 ? INT64_MAX : now + res->retry_after_ms;
    e->mono_until = mono + DENYCACHE_TTL_MS;
    e->cost = cost;
    e->limit = res->limit;
    e->reset_ms = res->reset_ms;
    e->retry_ms = res->retry_after_ms;
    e->window_ms = res->window_ms;
    e->reason = (uint8_t)res->reason;
    e->name = (uint8_t)name;
    e->stamp = ++c->clock;
    return 0;
}

void rls__denycache_forget(deny_cache *c, uint64_t fp)
{
    size_t s = set_of(fp);
    for (size_t w = s; w < s + DENYCACHE_WAYS; w++)
        if (c->fp[w] == fp)
            c->fp[w] = 0;
}

int rls__deny_cacheable(const decide_item *items, int n, const decide_out *out,
                   const rls_result *res, int64_t cost)
{
    if (res->allowed || res->remaining != 0)
        return 0;
    if (res->reason == RLS_REASON_BLOCKED)
        return 1;
    if (res->reason != RLS_REASON_LIMIT || !out || out->penalty >= 0 ||
        out->deciding < 0 || out->deciding >= n || res->retry_after_ms <= 0)
        return 0;
    int denied = 0;
    for (int i = 0; i < n; i++) {
        if (items[i].rl->def->count_denied)
            return 0;  /* a denial charges: it must reach the database */
        denied += items[i].denied != 0;
    }
    const decide_item *d = &items[out->deciding];
    if (denied != 1 || !d->denied || d->rl->def->overage_pct != 0)
        return 0;
    /* Nothing remains, and nothing will before retry_after_ms: a fixed
     * window refills only at its reset; the others refill gradually, so
     * only a request of one unit sees "0 remaining" until it passes. */
    return cost == 1 || d->rl->def->algorithm == ALGO_FIXED_WINDOW;
}
