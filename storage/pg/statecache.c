/*
 * statecache.c - the last known state of the (limit, key) pairs a handle
 * wrote or read, for the one-round-trip check on PostgreSQL (pg_fast.c).
 *
 * Knowledge, never truth: the check that uses an entry writes only where
 * the stored state still equals it, so a stale entry costs a round trip,
 * never a wrong decision.  A chained hash table that grows with its
 * entries up to RLS_SC_MAX of them; past that, each new entry evicts the
 * first entry of the next non-empty bucket (a clock hand over the buckets:
 * no order to maintain, and no entry stays forever).  Allocated at the
 * first use: a handle that never checks on PostgreSQL has none.  States
 * with a sliding log longer than RLS_SC_LOG_MAX bytes are not kept.  A key
 * that has rows of its own in the policy tables (a block, an exact tier
 * assignment, an override) is marked instead: its checks take the usual
 * path, which reads them.  A key seen without them is noted with the
 * policy tables' generation it was seen at (schema/pg/002): while the
 * generation stays, so does that.
 */
#include <stdlib.h>
#include <string.h>
#include "statecache.h"

#define RLS_SC_MAX 32768          /* entries; a power of two */
#define RLS_SC_FIRST 1024         /* buckets at first */
#define RLS_SC_LOG_MAX 4096

typedef struct sc_entry {
    struct sc_entry *next;
    uint64_t hash;
    int64_t lid;
    int alg;
    int policy;                   /* the key has policy rows: no state kept */
    int64_t clean_gen;            /* policy generation it had none at, or -1 */
    int64_t a, b, c, last_ms, expires_ms;
    size_t log_len, keylen;
    unsigned char bytes[];        /* the key, then the log */
} sc_entry;

struct state_cache {
    sc_entry **bucket;
    size_t nbuckets;              /* a power of two */
    size_t count;
    size_t hand;                  /* the bucket eviction looks at next */
};

static uint64_t hash_of(int64_t lid, const char *key, size_t klen)
{
    uint64_t h = 1469598103934665603u ^ (uint64_t)lid;
    for (size_t i = 0; i < klen; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211u;
    return h ^ h >> 29;
}

/* The link that points at (lid, key)'s entry, or NULL. */
static sc_entry **find(rls_db *db, uint64_t h, int64_t lid, const char *key, size_t klen)
{
    struct state_cache *sc = db->trust.sc;
    if (!sc)
        return NULL;
    for (sc_entry **e = &sc->bucket[h & (sc->nbuckets - 1)]; *e; e = &(*e)->next)
        if ((*e)->hash == h && (*e)->lid == lid && (*e)->keylen == klen &&
            memcmp((*e)->bytes, key, klen) == 0)
            return e;
    return NULL;
}

int rls__sc_get(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                algo_state *st)
{
    sc_entry **pe = find(db, hash_of(lid, key, klen), lid, key, klen);
    const sc_entry *e = pe ? *pe : NULL;
    if (e && e->policy)
        return 2;
    if (!e || e->alg != alg)
        return 0;
    memset(st, 0, sizeof *st);
    st->present = 1;
    st->a = e->a;
    st->b = e->b;
    st->c = e->c;
    st->last_ms = e->last_ms;
    st->expires_ms = e->expires_ms;
    if (alg == ALGO_SLIDING_LOG) {
        /* room for one more entry, as a state read from the table has */
        st->log = malloc(e->log_len + ALGO_LOG_ENTRY);
        if (!st->log)
            return -1;
        memcpy(st->log, e->bytes + e->keylen, e->log_len);
        st->log_len = e->log_len;
        st->log_cap = e->log_len + ALGO_LOG_ENTRY;
    }
    return 1;
}

/* Twice the buckets (up to one per entry allowed); 0, or -1 if it cannot. */
static int grow(struct state_cache *sc)
{
    size_t n = sc->nbuckets ? sc->nbuckets * 2 : RLS_SC_FIRST;
    sc_entry **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < sc->nbuckets; i++)
        for (sc_entry *e = sc->bucket[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(sc->bucket);
    sc->bucket = b;
    sc->nbuckets = n;
    sc->hand = 0;
    return 0;
}

/* Makes room for one entry more: the first entry of the next non-empty
 * bucket goes. */
static void evict_one(struct state_cache *sc)
{
    for (size_t seen = 0; seen < sc->nbuckets; seen++) {
        sc_entry **b = &sc->bucket[sc->hand];
        sc->hand = (sc->hand + 1) & (sc->nbuckets - 1);
        if (*b) {
            sc_entry *e = *b;
            *b = e->next;
            free(e);
            sc->count--;
            return;
        }
    }
}

/* Stores an entry: the state, or (st NULL) the policy mark.  Knowledge
 * only: when memory is short, nothing is stored and nothing is lost. */
static void store(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                  const algo_state *st)
{
    static const algo_state none;
    int policy = st == NULL;
    uint64_t h = hash_of(lid, key, klen);
    if (policy)
        st = &none;
    size_t loglen = st->log ? st->log_len : 0;
    if (loglen > RLS_SC_LOG_MAX) {
        rls__sc_drop(db, lid, key, klen);
        return;
    }
    if (!db->trust.sc && (!(db->trust.sc = calloc(1, sizeof *db->trust.sc)) || grow(db->trust.sc) != 0)) {
        free(db->trust.sc);
        db->trust.sc = NULL;
        return;
    }
    struct state_cache *sc = db->trust.sc;
    sc_entry **link = find(db, h, lid, key, klen), *e;
    int64_t clean_gen = -1;
    if (link) {
        e = *link;
        if (!policy && !e->policy)
            clean_gen = e->clean_gen;   /* a new state says nothing of policy */
        *link = e->next;   /* unlinked; linked again below */
        sc->count--;
        if (e->log_len < loglen) {
            sc_entry *n = realloc(e, sizeof *n + klen + loglen);
            if (!n) {
                free(e);
                return;
            }
            e = n;
        }
    } else {
        if (sc->count >= sc->nbuckets && sc->nbuckets < RLS_SC_MAX && grow(sc) != 0)
            return;
        if (sc->count >= RLS_SC_MAX)
            evict_one(sc);
        if (!(e = malloc(sizeof *e + klen + loglen)))
            return;
    }
    e->hash = h;
    e->lid = lid;
    e->alg = alg;
    e->policy = policy;
    e->clean_gen = clean_gen;
    e->a = st->a;
    e->b = st->b;
    e->c = st->c;
    e->last_ms = st->last_ms;
    e->expires_ms = st->expires_ms;
    e->keylen = klen;
    e->log_len = loglen;
    memcpy(e->bytes, key, klen);
    if (loglen)
        memcpy(e->bytes + klen, st->log, loglen);
    sc_entry **b = &sc->bucket[h & (sc->nbuckets - 1)];
    e->next = *b;
    *b = e;
    sc->count++;
}

void rls__sc_put(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                 const algo_state *st)
{
    store(db, lid, key, klen, alg, st);
}

void rls__sc_mark_policy(rls_db *db, int64_t lid, const char *key, size_t klen)
{
    store(db, lid, key, klen, 0, NULL);
}

int64_t rls__sc_clean_gen(rls_db *db, int64_t lid, const char *key, size_t klen)
{
    sc_entry **pe = find(db, hash_of(lid, key, klen), lid, key, klen);
    return pe && !(*pe)->policy ? (*pe)->clean_gen : -1;
}

void rls__sc_set_clean_gen(rls_db *db, int64_t lid, const char *key, size_t klen, int64_t gen)
{
    sc_entry **pe = find(db, hash_of(lid, key, klen), lid, key, klen);
    if (pe && !(*pe)->policy)
        (*pe)->clean_gen = gen;
}

void rls__sc_drop(rls_db *db, int64_t lid, const char *key, size_t klen)
{
    sc_entry **link = find(db, hash_of(lid, key, klen), lid, key, klen);
    if (link) {
        sc_entry *e = *link;
        *link = e->next;
        free(e);
        db->trust.sc->count--;
    }
}

void rls__sc_free(rls_db *db)
{
    struct state_cache *sc = db->trust.sc;
    if (!sc)
        return;
    for (size_t i = 0; i < sc->nbuckets; i++)
        for (sc_entry *e = sc->bucket[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(sc->bucket);
    free(sc);
    db->trust.sc = NULL;
}
