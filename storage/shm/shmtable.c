/*
 * shmtable.c - transactions on a shared-memory table (shmtable.h has the
 * design): lock the two buckets of every item in ascending order, find or
 * reserve each item's slot, read states, write them two-copy style, unlock.
 */
#include <errno.h>
#include <string.h>
#include "rlstore.h"
#include "shm_int.h"

void (*rls__shm_hook)(int point, size_t item);

static void hook(int point, size_t item)
{
    if (rls__shm_hook)
        rls__shm_hook(point, item);
}

/* ---- where an item lives --------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Keyed by the table's random seed: the buckets of a key cannot be
 * predicted, so keys cannot be chosen to fill a victim key's buckets. */
static uint64_t item_hash(const rls__shm *t, const rls__shm_item *it)
{
    uint64_t h = 0xcbf29ce484222325ull ^ mix64((uint64_t)it->lid ^ t->seed);
    const unsigned char *k = it->key;
    for (size_t i = 0; i < it->key_len; i++) {
        h ^= k[i];
        h *= 0x100000001b3ull;
    }
    return mix64(h);
}

/* The two buckets of a hash (distinct) and its tag (never 0). */
static void placement(const rls__shm *t, uint64_t h, uint32_t *b1, uint32_t *b2, uint32_t *tag)
{
    uint64_t nb = t->nbuckets;
    *b1 = (uint32_t)(((h & 0xffffffffu) * nb) >> 32);
    *b2 = (uint32_t)(((h >> 32) * nb) >> 32);
    if (*b2 == *b1)
        *b2 = (*b1 + 1) % t->nbuckets;
    *tag = (uint32_t)mix64(h ^ 0x9e3779b97f4a7c15ull) | 1u;
}

static int same_item(const rls__shm_item *a, const rls__shm_item *b)
{
    return a->lid == b->lid && a->key_len == b->key_len &&
           memcmp(a->key, b->key, a->key_len) == 0;
}

/* ---- locks ------------------------------------------------------------------ */

/* Takes bucket b's lock, taking it over from a killed holder: the states
 * under it need no repair (two copies, see shmtable.h). */
static int bucket_lock(rls__shm *t, uint32_t b)
{
    pthread_mutex_t *mu = &shm_bucket_at(t, b)->mu;
    int r = pthread_mutex_lock(mu);
    if (r == EOWNERDEAD) {
        r = pthread_mutex_consistent(mu);
        if (r != 0) {
            pthread_mutex_unlock(mu);
            return r;
        }
        __atomic_add_fetch(&t->head->recoveries, 1, __ATOMIC_RELAXED);
    }
    return r;
}

void rls__shm_unlock(rls__shm_txn *tx)
{
    if (!tx || !tx->t)
        return;
    while (tx->nlocked > 0) {
        tx->nlocked--;
        pthread_mutex_unlock(&shm_bucket_at(tx->t, tx->locked[tx->nlocked])->mu);
    }
}

/* Adds bucket b to the ascending, duplicate-free list of tx. */
static void lockset_add(rls__shm_txn *tx, uint32_t b)
{
    size_t i = tx->nlocked;
    while (i > 0 && tx->locked[i - 1] > b)
        i--;
    if (i > 0 && tx->locked[i - 1] == b)
        return;
    for (size_t j = tx->nlocked; j > i; j--)   /* a few: no memmove call */
        tx->locked[j] = tx->locked[j - 1];
    tx->locked[i] = b;
    tx->nlocked++;
}

/* Locks every bucket of the list in order; on failure none stays locked. */
static int lockset_take(rls__shm_txn *tx)
{
    size_t want = tx->nlocked;
    for (size_t i = 0; i < want; i++) {
        if (bucket_lock(tx->t, tx->locked[i]) != 0) {
            tx->nlocked = i;
            rls__shm_unlock(tx);
            return RLS_ECORRUPT;
        }
    }
    return RLS_OK;
}

/* ---- finding and reserving slots ---------------------------------------------- */

/* The slot holding item (tag, lid, key) in bucket b, or UINT32_MAX. */
static uint32_t find_in(rls__shm *t, uint32_t b, uint32_t tag, const rls__shm_item *it)
{
    struct shm_bucket *bk = shm_bucket_at(t, b);
    for (uint32_t w = 0; w < RLS__SHM_WAYS; w++) {
        if (bk->tag[w] != tag)
            continue;
        uint32_t s = b * RLS__SHM_WAYS + w;
        struct shm_slot *sl = shm_slot_at(t, s);
        if (sl->lid == it->lid && sl->key_len == it->key_len &&
            memcmp(shm_key_of(t, sl), it->key, it->key_len) == 0)
            return s;
    }
    return UINT32_MAX;
}

/* 1 if slot s is taken by an item of tx before item i. */
static int taken(const rls__shm_txn *tx, size_t upto, uint32_t s)
{
    for (size_t j = 0; j < upto; j++)
        if (tx->slot[j] == s)
            return 1;
    return 0;
}

static uint32_t free_ways(const rls__shm *t, uint32_t b)
{
    uint32_t n = 0;
    for (uint32_t w = 0; w < RLS__SHM_WAYS; w++)
        n += shm_bucket_at(t, b)->tag[w] == 0;
    return n;
}

/* A slot of bucket b for a new entry: free (expired == 0) or holding a
 * state expired at now (expired == 1), not taken by tx; UINT32_MAX if none. */
static uint32_t spare_in(const rls__shm_txn *tx, size_t n, uint32_t b, int64_t now, int expired)
{
    struct shm_bucket *bk = shm_bucket_at(tx->t, b);
    for (uint32_t w = 0; w < RLS__SHM_WAYS; w++) {
        uint32_t s = b * RLS__SHM_WAYS + w;
        if (taken(tx, n, s))
            continue;
        if (!expired && bk->tag[w] == 0)
            return s;
        if (expired && bk->tag[w] != 0) {
            struct shm_slot *sl = shm_slot_at(tx->t, s);
            if (sl->copy[sl->cur & 1].expires_ms <= now)
                return s;
        }
    }
    return UINT32_MAX;
}

/* Reserves a slot for absent item i (buckets b1, b2): a free slot of the
 * emptier bucket first, then an expired entry of either. */
static int reserve(rls__shm_txn *tx, size_t i, uint32_t b1, uint32_t b2, int64_t now)
{
    if (free_ways(tx->t, b2) > free_ways(tx->t, b1)) {
        uint32_t x = b1;
        b1 = b2;
        b2 = x;
    }
    uint32_t s = spare_in(tx, tx->n, b1, now, 0);
    if (s == UINT32_MAX)
        s = spare_in(tx, tx->n, b2, now, 0);
    if (s == UINT32_MAX)
        s = spare_in(tx, tx->n, b1, now, 1);
    if (s == UINT32_MAX)
        s = spare_in(tx, tx->n, b2, now, 1);
    if (s == UINT32_MAX)
        return RLS_EFULL;
    tx->slot[i] = s;
    tx->fresh[i] = 1;
    return RLS_OK;
}

static int items_check(const rls__shm *t, const rls__shm_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind < 1)
            return RLS_EINVAL;
        if (!items[i].key || items[i].key_len < 1 || items[i].key_len > t->key_max)
            return RLS_EKEY;
        for (size_t j = 0; j < i; j++)
            if (same_item(&items[i], &items[j]))
                return RLS_EINVAL;
    }
    return RLS_OK;
}

/* Starts loading the lines of bucket b (its lock and tags): a table far
 * larger than the caches costs a miss per line, and the lines of every
 * bucket and slot a transaction needs are loaded at once, not one after
 * the other. */
static void prefetch_bucket(const rls__shm *t, uint32_t b)
{
    const unsigned char *p = (const unsigned char *)shm_bucket_at(t, b);
    __builtin_prefetch(p, 1);
    __builtin_prefetch(p + 64, 1);
}

/* ... and of slot s's fields, copies and the start of its key */
static void prefetch_slot(const rls__shm *t, uint32_t s)
{
    const unsigned char *p = (const unsigned char *)shm_slot_at(t, s);
    __builtin_prefetch(p, 1);
    __builtin_prefetch(p + 64, 1);
    __builtin_prefetch(p + sizeof(struct shm_slot), 0);
}

/* The one of buckets b1, b2 whose tags hold tag, read without its lock
 * (atomic loads: a hint, verified under the lock), or UINT32_MAX; the
 * first slot with that tag is prefetched. */
static uint32_t tag_home(const rls__shm *t, uint32_t b1, uint32_t b2, uint32_t tag)
{
    for (int k = 0; k < 2; k++) {
        uint32_t b = k ? b2 : b1;
        struct shm_bucket *bk = shm_bucket_at(t, b);
        for (uint32_t w = 0; w < RLS__SHM_WAYS; w++)
            if (__atomic_load_n(&bk->tag[w], __ATOMIC_RELAXED) == tag) {
                prefetch_slot(t, b * RLS__SHM_WAYS + w);
                return b;
            }
    }
    return UINT32_MAX;
}

/*
 * The common case, every item's entry present: lock only the bucket each
 * entry is in (its "home", found by its tag without a lock, then verified
 * under the lock).  Enough, because an entry is made, reused or dropped
 * only under the lock of the bucket holding its slot (every path holds both
 * buckets of its item, one of them the slot's), so an entry found under
 * its bucket's lock stays there, and its states are read and written under
 * that lock by every path; and no second entry of the item can be made
 * meanwhile, since making one takes both its buckets' locks, this one
 * among them.  The buckets are locked in ascending order as by
 * lock_items: one global order.  1 done (every lock held), 0 an entry not
 * found (no lock held: take both buckets), or RLS_ECORRUPT.
 */
static int lock_homes(rls__shm *t, const rls__shm_item *items, size_t n, const uint32_t *b1,
                      const uint32_t *b2, rls__shm_txn *tx)
{
    uint32_t home[RLS__SHM_TXN_MAX];
    for (size_t i = 0; i < n; i++) {
        home[i] = tag_home(t, b1[i], b2[i], tx->tag[i]);
        if (home[i] == UINT32_MAX)
            return 0;
    }
    for (size_t i = 0; i < n; i++)
        lockset_add(tx, home[i]);
    if (lockset_take(tx) != RLS_OK)
        return RLS_ECORRUPT;
    for (size_t i = 0; i < n; i++) {
        tx->slot[i] = find_in(t, home[i], tx->tag[i], &items[i]);
        if (tx->slot[i] == UINT32_MAX) {   /* moved or a tag's namesake */
            rls__shm_unlock(tx);
            for (size_t j = 0; j < n; j++)
                tx->slot[j] = UINT32_MAX;
            return 0;
        }
    }
    return 1;
}

/* rls__shm_lock and rls__shm_lock_peek: with peek, an absent item that
 * finds no room stays without a slot (it reads absent) instead of failing
 * the transaction. */
static int lock_items(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                      int peek, rls__shm_txn *tx)
{
    uint32_t b1[RLS__SHM_TXN_MAX], b2[RLS__SHM_TXN_MAX];
    if (!tx)
        return RLS_EINVAL;
    tx->t = NULL;   /* what rls__shm_unlock reads; slot, tag set per item below */
    tx->n = tx->nlocked = 0;
    memset(tx->fresh, 0, sizeof tx->fresh);
    if (!t || !items || n < 1 || n > RLS__SHM_TXN_MAX)
        return RLS_EINVAL;
    int rc = items_check(t, items, n);
    if (rc != RLS_OK)
        return rc;
    tx->t = t;
    for (size_t i = 0; i < n; i++) {
        tx->item[i] = items[i];
        tx->slot[i] = UINT32_MAX;
        placement(t, item_hash(t, &items[i]), &b1[i], &b2[i], &tx->tag[i]);
        prefetch_bucket(t, b1[i]);
        prefetch_bucket(t, b2[i]);
    }
    rc = lock_homes(t, items, n, b1, b2, tx);
    if (rc == 1) {
        tx->n = n;
        hook(RLS__SHM_AT_LOCKED, 0);
        return RLS_OK;
    }
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        lockset_add(tx, b1[i]);
        lockset_add(tx, b2[i]);
    }
    rc = lockset_take(tx);
    if (rc != RLS_OK)
        return rc;
    tx->n = n;
    for (size_t i = 0; i < n; i++) {   /* every present entry first: a */
        uint32_t s = find_in(t, b1[i], tx->tag[i], &items[i]);   /* new one */
        tx->slot[i] = s != UINT32_MAX ? s : find_in(t, b2[i], tx->tag[i], &items[i]);
    }                                  /* never reuses another item's slot */
    for (size_t i = 0; i < n && rc == RLS_OK; i++)
        if (tx->slot[i] == UINT32_MAX) {
            rc = reserve(tx, i, b1[i], b2[i], now);
            if (rc == RLS_EFULL && peek) {
                tx->fresh[i] = 1;   /* nowhere: reads absent, never written */
                rc = RLS_OK;
            }
        }
    if (rc != RLS_OK) {
        rls__shm_unlock(tx);
        tx->n = 0;
        return rc;
    }
    hook(RLS__SHM_AT_LOCKED, 0);
    return RLS_OK;
}

int rls__shm_lock(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                  rls__shm_txn *tx)
{
    return lock_items(t, items, n, now, 0, tx);
}

int rls__shm_lock_peek(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                       rls__shm_txn *tx)
{
    return lock_items(t, items, n, now, 1, tx);
}

/* ---- states ------------------------------------------------------------------- */

int rls__shm_read(const rls__shm_txn *tx, size_t i, algo_state *st)
{
    if (!tx || !st || i >= tx->n || tx->nlocked == 0)
        return RLS_EINVAL;
    const rls__shm *t = tx->t;
    struct shm_slot *sl = tx->fresh[i] ? NULL : shm_slot_at(t, tx->slot[i]);
    uint32_t cur = sl ? sl->cur & 1 : 0;
    const struct shm_copy *c = sl ? &sl->copy[cur] : NULL;
    if (!c || c->kind != tx->item[i].kind) {
        unsigned char *log = st->log;
        size_t cap = st->log_cap;
        memset(st, 0, sizeof *st);
        st->log = log;
        st->log_cap = cap;
        return RLS_OK;
    }
    if (c->log_len > st->log_cap || (c->log_len && !st->log))
        return RLS_EINVAL;
    st->present = 1;
    st->a = c->a;
    st->b = c->b;
    st->c = c->c;
    st->last_ms = c->last_ms;
    st->expires_ms = c->expires_ms;
    st->log_len = c->log_len;
    if (c->log_len)
        memcpy(st->log, shm_log_of(t, sl, cur), c->log_len);
    return RLS_OK;
}

/* Fills copy k of slot sl with st: the test hook may stop us halfway, to
 * show that a half-written copy is never current. */
static void copy_fill(const rls__shm_txn *tx, size_t i, struct shm_slot *sl, uint32_t k,
                      const algo_state *st)
{
    struct shm_copy *c = &sl->copy[k];
    c->a = st->a;
    c->b = st->b;
    hook(RLS__SHM_AT_HALF, i);
    c->c = st->c;
    c->last_ms = st->last_ms;
    c->expires_ms = st->expires_ms;
    c->kind = tx->item[i].kind;
    c->log_len = (uint32_t)st->log_len;
    if (st->log_len)
        memcpy(shm_log_of(tx->t, sl, k), st->log, st->log_len);
}

int rls__shm_write(rls__shm_txn *tx, size_t i, const algo_state *st)
{
    if (!tx || !st || i >= tx->n || tx->nlocked == 0)
        return RLS_EINVAL;
    rls__shm *t = tx->t;
    if (st->log_len % ALGO_LOG_ENTRY != 0 ||
        st->log_len > (size_t)t->log_max * ALGO_LOG_ENTRY || (st->log_len && !st->log))
        return RLS_EINVAL;
    uint32_t s = tx->slot[i];
    if (s == UINT32_MAX)
        return RLS_EFULL;   /* peeked at without room */
    struct shm_slot *sl = shm_slot_at(t, s);
    if (!tx->fresh[i]) {
        uint32_t next = 1 - (sl->cur & 1);
        copy_fill(tx, i, sl, next, st);
        hook(RLS__SHM_AT_WRITTEN, i);
        __atomic_store_n(&sl->cur, next, __ATOMIC_RELEASE);   /* the publish */
        hook(RLS__SHM_AT_PUBLISHED, i);
        return RLS_OK;
    }
    /* a new entry: unpublish the expired one it replaces (expired is the
     * same as absent), write it whole, then publish its tag */
    uint32_t *tag = &shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS];
    __atomic_store_n(tag, 0, __ATOMIC_RELEASE);
    sl->lid = tx->item[i].lid;
    sl->key_len = (uint32_t)tx->item[i].key_len;
    memcpy(shm_key_of(t, sl), tx->item[i].key, tx->item[i].key_len);
    sl->cur = 0;
    copy_fill(tx, i, sl, 0, st);
    hook(RLS__SHM_AT_WRITTEN, i);
    __atomic_store_n(tag, tx->tag[i], __ATOMIC_RELEASE);      /* the publish */
    tx->fresh[i] = 0;
    hook(RLS__SHM_AT_PUBLISHED, i);
    return RLS_OK;
}

int rls__shm_drop(rls__shm_txn *tx, size_t i)
{
    if (!tx || i >= tx->n || tx->nlocked == 0)
        return RLS_EINVAL;
    uint32_t s = tx->slot[i];
    if (s == UINT32_MAX || tx->fresh[i])
        return RLS_OK;   /* no entry */
    uint32_t *tag = &shm_bucket_at(tx->t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS];
    __atomic_store_n(tag, 0, __ATOMIC_RELEASE);
    tx->fresh[i] = 1;   /* a write now makes it again, in the same slot */
    return RLS_OK;
}

/* ---- walking the table ---------------------------------------------------------- */

/* fn for each live entry of bucket b (locked by the caller). */
static int each_in(rls__shm *t, uint32_t b, int64_t now, rls__shm_each_fn fn, void *ctx)
{
    struct shm_bucket *bk = shm_bucket_at(t, b);
    for (uint32_t w = 0; w < RLS__SHM_WAYS; w++) {
        if (bk->tag[w] == 0)
            continue;
        struct shm_slot *sl = shm_slot_at(t, b * RLS__SHM_WAYS + w);
        uint32_t cur = sl->cur & 1;
        const struct shm_copy *c = &sl->copy[cur];
        if (c->expires_ms <= now)
            continue;
        algo_state st;
        memset(&st, 0, sizeof st);
        st.present = 1;
        st.a = c->a;
        st.b = c->b;
        st.c = c->c;
        st.last_ms = c->last_ms;
        st.expires_ms = c->expires_ms;
        st.log_len = c->log_len <= (size_t)t->log_max * ALGO_LOG_ENTRY ? c->log_len : 0;
        st.log = st.log_len ? shm_log_of(t, sl, cur) : NULL;
        st.log_cap = st.log_len;
        size_t klen = sl->key_len <= t->key_max ? sl->key_len : t->key_max;
        int r = fn(ctx, sl->lid, c->kind, shm_key_of(t, sl), klen, &st);
        if (r != 0)
            return r;
    }
    return 0;
}

int rls__shm_each(rls__shm *t, int64_t now, rls__shm_each_fn fn, void *ctx)
{
    if (!t || !fn)
        return RLS_EINVAL;
    for (uint32_t b = 0; b < t->nbuckets; b++) {
        if (bucket_lock(t, b) != 0)
            return RLS_ECORRUPT;
        int r = each_in(t, b, now, fn, ctx);
        pthread_mutex_unlock(&shm_bucket_at(t, b)->mu);
        if (r != 0)
            return r;
    }
    return RLS_OK;
}
