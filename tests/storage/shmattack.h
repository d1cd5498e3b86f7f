/*
 * shmattack.h - what round 8's attack suites of the shared-memory table
 * (test_shm_attack.c, test_shm_attack_procs.c) share: opening tables in
 * the suite's scratch folder (shmtest.h), writing and reading counts
 * whose fields follow from the count (a torn state shows), and looking
 * at the table's tags and records directly (no key in two slots, no lock
 * left held, the way of an entry).  Include after cmocka.h and shmtest.h.
 */
#ifndef RLS_SHMATTACK_H
#define RLS_SHMATTACK_H

#include <pthread.h>
#include <string.h>
#include "rlstore.h"
#include "shm/shmtable.h"
#include "shm/shm_int.h"
#include "shmcount.h"

static int nseq;
static const int64_t FOREVER = (int64_t)1 << 60;

static const char *new_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/a%d.shm", dir, ++nseq);
    return buf;
}

static inline rls__shm *open_geom(const char *p, const rls__shm_geom *g)
{
    rls__shm *t = NULL;
    char why[200];
    int rc = rls__shm_open(&t, p, g, why, sizeof why);
    if (rc != RLS_OK)
        fail_msg("open '%s': %s (%s)", p, rls_errname(rc), why);
    return t;
}

static inline rls__shm_item item_k(int64_t lid, int kind, const char *key)
{
    rls__shm_item it = { lid, kind, key, strlen(key) };
    return it;
}

/* Writes count n, expiring at exp, to (lid, key) at now. */
static inline int put(rls__shm *t, int64_t lid, const char *key, int64_t n, int64_t exp, int64_t now)
{
    rls__shm_txn tx;
    rls__shm_item it = item_k(lid, ALGO_FIXED_WINDOW, key);
    int rc = rls__shm_lock(t, &it, 1, now, &tx);
    if (rc != RLS_OK)
        return rc;
    algo_state s = shm_count(n, exp);
    rc = rls__shm_write(&tx, 0, &s);
    rls__shm_unlock(&tx);
    return rc;
}

/* The count of (lid, key) read at now, -1 when absent or expired. */
static inline int64_t get(rls__shm *t, int64_t lid, const char *key, int64_t now)
{
    rls__shm_txn tx;
    rls__shm_item it = item_k(lid, ALGO_FIXED_WINDOW, key);
    algo_state s;
    memset(&s, 0, sizeof s);
    assert_int_equal(rls__shm_lock_peek(t, &it, 1, now, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &s), RLS_OK);
    rls__shm_unlock(&tx);
    if (!s.present || s.expires_ms <= now)
        return -1;
    if (!shm_count_whole(&s))
        fail_msg("'%s' torn: a %lld b %lld", key, (long long)s.a, (long long)s.b);
    return s.a;
}

/* The number of published entries of (lid, key) in the whole table,
 * read from the tags and hot records under no lock (the caller's
 * processes are done). */
static inline int copies_of(const rls__shm *t, int64_t lid, const char *key)
{
    int n = 0;
    size_t len = strlen(key);
    for (uint32_t s = 0; s < t->nbuckets * RLS__SHM_WAYS; s++) {
        if (shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS] == 0)
            continue;
        const struct shm_hot *h = shm_hot_at(t, s);
        n += h->lid == lid && h->key_len == len && memcmp(shm_cold_at(t, s), key, len) == 0;
    }
    return n;
}

/* No published (lid, key) is in two slots. */
static inline void no_key_twice(const rls__shm *t)
{
    uint32_t slots = t->nbuckets * RLS__SHM_WAYS;
    for (uint32_t s = 0; s < slots; s++) {
        if (shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS] == 0)
            continue;
        const struct shm_hot *h = shm_hot_at(t, s);
        for (uint32_t u = s + 1; u < slots; u++) {
            const struct shm_hot *g = shm_hot_at(t, u);
            if (shm_bucket_at(t, u / RLS__SHM_WAYS)->tag[u % RLS__SHM_WAYS] != 0 &&
                g->lid == h->lid && g->key_len == h->key_len &&
                memcmp(shm_cold_at(t, s), shm_cold_at(t, u), h->key_len) == 0)
                fail_msg("lid %lld key '%.*s' in slots %u and %u", (long long)h->lid,
                         (int)h->key_len, (const char *)shm_cold_at(t, s), s, u);
        }
    }
}

/* Every bucket lock of t is free (tried, never waited for). */
static inline void no_lock_held(rls__shm *t)
{
    for (uint32_t b = 0; b < t->nbuckets; b++) {
        pthread_mutex_t *mu = &shm_bucket_at(t, b)->mu;
        int r = pthread_mutex_trylock(mu);
        if (r != 0)
            fail_msg("bucket %u still locked (trylock: %d)", b, r);
        pthread_mutex_unlock(mu);
    }
}

#define FILL_MAX 5000

/* Fills t at now 0 with keys "f<i>" (count i + 1; expiry by exp_of)
 * until RLS_EFULL; returns how many went in. */
static inline int fill(rls__shm *t, int64_t lid, int64_t (*exp_of)(int))
{
    int i = 0;
    for (; i < FILL_MAX; i++) {
        char k[32];
        snprintf(k, sizeof k, "f%d", i);
        int rc = put(t, lid, k, i + 1, exp_of(i), 0);
        if (rc == RLS_EFULL)
            break;
        assert_int_equal(rc, RLS_OK);
    }
    return i;
}

static inline int64_t far_expiry(int i)
{
    return 1000000 + i;
}

/* The way of (lid, key)'s one entry, -1 when none. */
static inline int way_of(const rls__shm *t, int64_t lid, const char *key)
{
    size_t len = strlen(key);
    for (uint32_t s = 0; s < t->nbuckets * RLS__SHM_WAYS; s++) {
        const struct shm_hot *h = shm_hot_at(t, s);
        if (shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS] != 0 && h->lid == lid &&
            h->key_len == len && memcmp(shm_cold_at(t, s), key, len) == 0)
            return (int)(s % RLS__SHM_WAYS);
    }
    return -1;
}

/* The free slots of t (tag 0). */
static inline int free_slots(const rls__shm *t)
{
    int n = 0;
    for (uint32_t s = 0; s < t->nbuckets * RLS__SHM_WAYS; s++)
        n += shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS] == 0;
    return n;
}

#endif
