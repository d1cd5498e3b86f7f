/*
 * shmtable.c - transactions on a shared-memory table (shmtable.h has the
 * design): lock the home bucket of every present item, or the two buckets
 * of an absent one, in ascending order; find or reserve each item's slot,
 * read states, write them two-copy style, unlock.  And the lock-free read
 * (rls__shm_snap).  The losing writers' holds are shmfair.c's.
 */
#include <errno.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "rlstore.h"
#include "shm_int.h"

void (*rls__shm_hook)(int point, size_t item);

/* The pieces of a lookup and the bucket lock, which the lock paths share:
 * GCC keeps a function with two callers out of line, which costs a memory
 * check a call, its spills and a prologue each (about 55 of its 1,650
 * instructions). */
#define SHM_INLINE inline __attribute__((always_inline))

static inline void hook(int point, size_t item)
{
    if (rls__shm_hook)
        rls__shm_hook(point, item);
}

/* ---- where an item lives --------------------------------------------------- */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t load32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* The bytes of a key of n (1..16) bytes as two words, every byte in one
 * of them (overlapping loads, never beyond the key): equal keys of one
 * length give equal words and different ones different words. */
static inline void key_words(const unsigned char *k, size_t n, uint64_t *w0, uint64_t *w1)
{
    if (n >= 8) {
        *w0 = load64(k);
        *w1 = load64(k + n - 8);
    } else if (n >= 4) {
        *w0 = load32(k);
        *w1 = load32(k + n - 4);
    } else {
        *w0 = (uint64_t)k[0] | (uint64_t)k[n / 2] << 8 | (uint64_t)k[n - 1] << 16;
        *w1 = 0;
    }
}

/* Keyed by the table's random seed: the buckets of a key cannot be
 * predicted, so keys cannot be chosen to fill a victim key's buckets.
 * Eight bytes a step (a key of 10 bytes is two words, not ten bytes),
 * the length folded in, a full mix at the end. */
static SHM_INLINE uint64_t item_hash(const rls__shm *t, const rls__shm_item *it)
{
    uint64_t h = mix64((uint64_t)it->lid ^ t->seed) ^ it->key_len, w0, w1;
    const unsigned char *k = it->key;
    size_t n = it->key_len;
    for (; n > 16; n -= 8, k += 8)
        h = (h ^ load64(k)) * 0x9e3779b97f4a7c15ull;
    key_words(k, n, &w0, &w1);
    h = (h ^ w0) * 0xff51afd7ed558ccdull;
    h = (h ^ w1) * 0xc4ceb9fe1a85ec53ull;
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
    uint32_t g = (uint32_t)((h * 0xc4ceb9fe1a85ec53ull) >> 56);
    *tag = g | (g == 0);   /* 1..255 */
}

static int same_item(const rls__shm_item *a, const rls__shm_item *b)
{
    return a->lid == b->lid && a->key_len == b->key_len &&
           memcmp(a->key, b->key, a->key_len) == 0;
}

/* ---- locks ------------------------------------------------------------------ */

/* Takes bucket b's lock, taking it over from a killed holder: the states
 * under it need no repair (two copies, see shmtable.h). */
static SHM_INLINE int bucket_lock(rls__shm *t, uint32_t b)
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

/* The ways of bucket b whose tag is tag, as a bit mask (bit w: way w).
 * Without the bucket's lock the answer is a hint: the 16 tag bytes are
 * read at once and every use of the hint is verified under the lock
 * (find_at) or by the publish counter (rls__shm_snap). */
static inline uint32_t tag_mask(const rls__shm *t, uint32_t b, uint32_t tag)
{
    const uint8_t *tags = shm_bucket_at(t, b)->tag;
#if defined(__SSE2__)
    _Static_assert(RLS__SHM_WAYS == 16, "one vector of 16 tags");
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)tags);
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)tag)));
#else
    uint32_t m = 0;
    for (uint32_t w = 0; w < RLS__SHM_WAYS; w++)
        m |= (uint32_t)(__atomic_load_n(&tags[w], __ATOMIC_RELAXED) == tag) << w;
    return m;
#endif
}

/* Is the entry of slot s (hot record h) item it?  The key's first bytes
 * are in the hot record; a longer key's rest only in the cold one. */
static inline int entry_is(const rls__shm *t, uint32_t s, const struct shm_hot *h,
                    const rls__shm_item *it)
{
    size_t n = it->key_len;
    const unsigned char *k = it->key;
    if (h->lid != it->lid || h->key_len != n)
        return 0;
    if (n <= SHM_KEY_INLINE) {   /* the common short key: a few word compares */
        uint64_t a0, a1, b0, b1;
        key_words(h->key, n, &a0, &a1);
        key_words(k, n, &b0, &b1);
        return a0 == b0 && a1 == b1;
    }
    return memcmp(h->key, k, SHM_KEY_INLINE) == 0 &&
           memcmp(shm_cold_at(t, s) + SHM_KEY_INLINE, k + SHM_KEY_INLINE,
                  n - SHM_KEY_INLINE) == 0;
}

/* The slot holding item (tag, lid, key) in bucket b, or UINT32_MAX. */
static uint32_t find_in(rls__shm *t, uint32_t b, uint32_t tag, const rls__shm_item *it)
{
    for (uint32_t m = tag_mask(t, b, tag); m; m &= m - 1) {
        uint32_t s = b * RLS__SHM_WAYS + (uint32_t)__builtin_ctz(m);
        if (entry_is(t, s, shm_hot_at(t, s), it))
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
    return (uint32_t)__builtin_popcount(tag_mask(t, b, 0));
}

/* The way an item's entry takes in either bucket when it is free: a
 * lookup prefetches that way's hot record with the buckets, before the
 * tags say where the entry is, so that the two misses overlap.  One of
 * the SHM_FIRST_WAYS lowest (then the next free one up): the hot records
 * are kept way by way (shm_hot_at), so the live entries of a table far
 * from full stay in its first ways' stretch.  Fewer first ways pack them
 * tighter, more guess the way right more often (a table a quarter full:
 * 4 of 16 guess 63% right, 16 guessed 90%). */
#define SHM_FIRST_WAYS 4u
static inline uint32_t first_way(uint32_t tag)
{
    return tag % SHM_FIRST_WAYS;
}

/* A slot of bucket b for a new entry: free (expired == 0) or holding a
 * state expired at now (expired == 1), not taken by tx; UINT32_MAX if
 * none.  Ways from the item's first way on. */
static uint32_t spare_in(const rls__shm_txn *tx, size_t n, uint32_t b, int64_t now, int expired,
                         uint32_t first)
{
    struct shm_bucket *bk = shm_bucket_at(tx->t, b);
    for (uint32_t k = 0; k < RLS__SHM_WAYS; k++) {
        uint32_t w = (first + k) % RLS__SHM_WAYS;
        uint32_t s = b * RLS__SHM_WAYS + w;
        if (taken(tx, n, s))
            continue;
        if (!expired && bk->tag[w] == 0)
            return s;
        if (expired && bk->tag[w] != 0) {
            const struct shm_hot *h = shm_hot_at(tx->t, s);
            if (h->copy[h->seq & 1].expires_ms <= now)
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
    uint32_t f = first_way(tx->tag[i]);
    uint32_t s = spare_in(tx, tx->n, b1, now, 0, f);
    if (s == UINT32_MAX)
        s = spare_in(tx, tx->n, b2, now, 0, f);
    if (s == UINT32_MAX)
        s = spare_in(tx, tx->n, b1, now, 1, f);
    if (s == UINT32_MAX)
        s = spare_in(tx, tx->n, b2, now, 1, f);
    if (s == UINT32_MAX)
        return RLS_EFULL;
    tx->slot[i] = s;
    tx->fresh[i] = 1;
    return RLS_OK;
}

static int items_check(const rls__shm *t, const rls__shm_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind < 1 || items[i].kind > 255)   /* SHM_META's 8 bits */
            return RLS_EINVAL;
        if (!items[i].key || items[i].key_len < 1 || items[i].key_len > t->key_max)
            return RLS_EKEY;
        for (size_t j = 0; j < i; j++)
            if (same_item(&items[i], &items[j]))
                return RLS_EINVAL;
    }
    return RLS_OK;
}

/* Starts loading the lines a lookup of an item (buckets b1, b2, tag)
 * needs: a table far larger than the caches costs a miss per line, and
 * these are then loaded at once, not one after the other.  Bucket b1's
 * line for writing (its lock is taken when it holds the entry, most
 * often: a new entry takes b1 unless b2 is emptier), the hot record of
 * the item's first way in b1 and bucket b2's line for reading: a guess
 * that misses lands on lines of other keys, which other processes may be
 * writing, and a prefetch for writing would take them away from their
 * caches at every miss (with 4 processes on 2 CPUs, every such line
 * travels back; a line no other cache holds arrives exclusive anyway).
 * b2's first way is not guessed: the entry is in b2 a third of the time
 * or less, and a guess there mostly lands on another key's record.
 * Inline by force: GCC takes a function of prefetches alone for one
 * without effect and drops its calls (until round 6 the object file held
 * no prefetch at all). */
static SHM_INLINE void prefetch_item(const rls__shm *t, uint32_t b1, uint32_t b2, uint32_t tag)
{
    __builtin_prefetch(shm_bucket_at(t, b1), 1);
    const unsigned char *p =
        (const unsigned char *)shm_hot_at(t, b1 * RLS__SHM_WAYS + first_way(tag));
    __builtin_prefetch(p, 0);
    __builtin_prefetch(p + 64, 0);
    __builtin_prefetch(shm_bucket_at(t, b2), 0);
}

/* The slot of buckets b1, b2 that holds item it (tag and identity), read
 * without a lock (a hint, verified under the lock: a namesake tag in b1
 * does not hide the entry in b2), or UINT32_MAX; *seq: the slot's publish
 * counter, read before its identity. */
static SHM_INLINE uint32_t tag_home(const rls__shm *t, uint32_t b1, uint32_t b2, uint32_t tag,
                         const rls__shm_item *it, uint64_t *seq)
{
    for (int k = 0; k < 2; k++) {
        uint32_t b = k ? b2 : b1;
        for (uint32_t m = tag_mask(t, b, tag); m; m &= m - 1) {
            uint32_t s = b * RLS__SHM_WAYS + (uint32_t)__builtin_ctz(m);
            const struct shm_hot *h = shm_hot_at(t, s);
            *seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
            if (entry_is(t, s, h, it))
                return s;
        }
    }
    return UINT32_MAX;
}

/* Under bucket s / WAYS's lock: slot s if it holds item (tag, it), else
 * the slot of its bucket that does, or UINT32_MAX.  Slot s needs no second
 * look at its identity when its tag is still tag and its publish counter
 * still seq: every change of an entry's identity (a new entry) bumps seq
 * under this lock, and an identity read while one was being written was
 * followed by that bump. */
static SHM_INLINE uint32_t find_at(rls__shm *t, uint32_t s, uint32_t tag, const rls__shm_item *it,
                        uint64_t seq)
{
    uint32_t b = s / RLS__SHM_WAYS;
    const struct shm_hot *h = shm_hot_at(t, s);
    if (shm_bucket_at(t, b)->tag[s % RLS__SHM_WAYS] == tag &&
        (h->seq == seq || entry_is(t, s, h, it)))
        return s;
    return find_in(t, b, tag, it);
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
    uint32_t hint[RLS__SHM_TXN_MAX];
    uint64_t seq[RLS__SHM_TXN_MAX];
    for (size_t i = 0; i < n; i++) {
        hint[i] = tag_home(t, b1[i], b2[i], tx->tag[i], &items[i], &seq[i]);
        if (hint[i] == UINT32_MAX)
            return 0;
    }
    for (size_t i = 0; i < n; i++)   /* n > 1: one item is lock_home1's */
        lockset_add(tx, hint[i] / RLS__SHM_WAYS);
    if (lockset_take(tx) != RLS_OK)
        return RLS_ECORRUPT;
    for (size_t i = 0; i < n; i++) {
        tx->slot[i] = find_at(t, hint[i], tx->tag[i], &items[i], seq[i]);
        if (tx->slot[i] == UINT32_MAX) {   /* moved or a tag's namesake */
            rls__shm_unlock(tx);
            for (size_t j = 0; j < n; j++)
                tx->slot[j] = UINT32_MAX;
            return 0;
        }
    }
    return 1;
}

/* lock_homes of one item, the usual check: no list, no loop. */
static int lock_home1(rls__shm *t, const rls__shm_item *it, uint32_t b1, uint32_t b2,
                      rls__shm_txn *tx)
{
    uint64_t seq;
    uint32_t hint = tag_home(t, b1, b2, tx->tag[0], it, &seq);
    if (hint == UINT32_MAX)
        return 0;
    tx->locked[0] = hint / RLS__SHM_WAYS;
    if (bucket_lock(t, tx->locked[0]) != 0)
        return RLS_ECORRUPT;
    tx->nlocked = 1;
    tx->slot[0] = find_at(t, hint, tx->tag[0], it, seq);
    if (tx->slot[0] == UINT32_MAX) {   /* moved or a tag's namesake */
        rls__shm_unlock(tx);
        return 0;
    }
    return 1;
}

/* The two-bucket path of lock_items (an item's entry not found by its
 * tag alone, or not yet made): both buckets of every item locked, in
 * order; each present entry found, a slot reserved for each absent one.
 * With peek, an absent item that finds no room stays without a slot (it
 * reads absent) instead of failing the transaction. */
static int lock_both(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now, int peek,
                     const uint32_t *b1, const uint32_t *b2, rls__shm_txn *tx)
{
    for (size_t i = 0; i < n; i++) {
        lockset_add(tx, b1[i]);
        lockset_add(tx, b2[i]);
    }
    int rc = lockset_take(tx);
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

/* rls__shm_lock and rls__shm_lock_peek. */
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
        prefetch_item(t, b1[i], b2[i], tx->tag[i]);
    }
    rc = n == 1 ? lock_home1(t, items, b1[0], b2[0], tx) : lock_homes(t, items, n, b1, b2, tx);
    if (rc == 1) {
        tx->n = n;
        hook(RLS__SHM_AT_LOCKED, 0);
        return RLS_OK;
    }
    return rc != 0 ? rc : lock_both(t, items, n, now, peek, b1, b2, tx);
}

/* lock_items of one item for a write (every check of the memory lane),
 * without the lists and loops of several: the same checks (items_check's
 * written out: calling it cost 38 instructions a check), the same
 * transaction. */
static int lock_one(rls__shm *t, const rls__shm_item *it, int64_t now, rls__shm_txn *tx)
{
    uint32_t b1, b2;
    tx->t = NULL;
    tx->n = tx->nlocked = 0;
    memset(tx->fresh, 0, sizeof tx->fresh);
    if (!t || !it)
        return RLS_EINVAL;
    if (it->kind < 1 || it->kind > 255)   /* SHM_META's 8 bits */
        return RLS_EINVAL;
    if (!it->key || it->key_len < 1 || it->key_len > t->key_max)
        return RLS_EKEY;
    tx->t = t;
    tx->item[0] = *it;
    tx->slot[0] = UINT32_MAX;
    placement(t, item_hash(t, it), &b1, &b2, &tx->tag[0]);
    prefetch_item(t, b1, b2, tx->tag[0]);
    int rc = lock_home1(t, it, b1, b2, tx);
    if (rc == 1) {
        tx->n = 1;
        hook(RLS__SHM_AT_LOCKED, 0);
        return RLS_OK;
    }
    return rc != 0 ? rc : lock_both(t, it, 1, now, 0, &b1, &b2, tx);
}

int rls__shm_lock(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                  rls__shm_txn *tx)
{
    if (n == 1 && tx)
        return lock_one(t, items, now, tx);
    return lock_items(t, items, n, now, 0, tx);
}

int rls__shm_lock_peek(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                       rls__shm_txn *tx)
{
    return lock_items(t, items, n, now, 1, tx);
}

/* ---- states ------------------------------------------------------------------- */

/* st := absent, keeping the caller's log buffer. */
static void state_absent(algo_state *st)
{
    unsigned char *log = st->log;
    size_t cap = st->log_cap;
    memset(st, 0, sizeof *st);
    st->log = log;
    st->log_cap = cap;
}

static void state_put(algo_state *st, const struct shm_state *c, uint32_t log_len)
{
    st->present = 1;
    st->a = c->a;
    st->b = c->b;
    st->c = c->c;
    st->last_ms = c->last_ms;
    st->expires_ms = c->expires_ms;
    st->log_len = log_len;
}

/* rls__shm_read past its argument checks. */
static inline int read_at(const rls__shm_txn *tx, size_t i, algo_state *st)
{
    const rls__shm *t = tx->t;
    if (tx->fresh[i]) {
        state_absent(st);
        return RLS_OK;
    }
    uint32_t s = tx->slot[i];
    const struct shm_hot *h = shm_hot_at(t, s);
    uint32_t cur = (uint32_t)(h->seq & 1), meta = h->meta[cur];
    if (SHM_META_KIND(meta) != tx->item[i].kind) {
        state_absent(st);
        return RLS_OK;
    }
    uint32_t log_len = SHM_META_LOG(meta);
    if (log_len > st->log_cap || (log_len && !st->log))
        return RLS_EINVAL;
    state_put(st, &h->copy[cur], log_len);
    if (log_len)
        memcpy(st->log, shm_log_of(t, s, cur), log_len);
    return RLS_OK;
}

int rls__shm_read(const rls__shm_txn *tx, size_t i, algo_state *st)
{
    if (!tx || !st || i >= tx->n || tx->nlocked == 0)
        return RLS_EINVAL;
    return read_at(tx, i, st);
}

int rls__shm_lock_read1(rls__shm *t, const rls__shm_item *it, int64_t now, int64_t mono_ms,
                        rls__shm_txn *tx, algo_state *st)
{
    if (!tx || !st)
        return RLS_EINVAL;
    int rc = lock_one(t, it, now, tx);
    if (rc != RLS_OK)
        return rc;
    if (shm_held(tx, mono_ms)) {
        rls__shm_unlock(tx);
        return RLS_EBUSY;
    }
    rc = read_at(tx, 0, st);
    if (rc != RLS_OK)
        rls__shm_unlock(tx);
    return rc;
}

/* Fills copy k of slot s (hot record h) with st: the test hook may stop
 * us halfway, to show that a half-written copy is never current. */
static inline void copy_fill(const rls__shm_txn *tx, size_t i, uint32_t s, struct shm_hot *h,
                      uint32_t k, const algo_state *st)
{
    struct shm_state *c = &h->copy[k];
    __atomic_thread_fence(__ATOMIC_RELEASE);   /* a reader that sees these
                                  stores sees the publish before them */
    c->a = st->a;
    c->b = st->b;
    hook(RLS__SHM_AT_HALF, i);
    c->c = st->c;
    c->last_ms = st->last_ms;
    c->expires_ms = st->expires_ms;
    h->meta[k] = SHM_META(tx->item[i].kind, st->log_len);
    if (st->log_len)
        memcpy(shm_log_of(tx->t, s, k), st->log, st->log_len);
}

/* A new entry in slot s: unpublish the expired one it replaces (expired
 * is the same as absent; the fence orders that before the identity's
 * stores, for rls__shm_snap), write it whole, then publish the state and
 * the tag. */
static void entry_make(rls__shm_txn *tx, size_t i, uint32_t s, const algo_state *st)
{
    rls__shm *t = tx->t;
    struct shm_hot *h = shm_hot_at(t, s);
    uint8_t *tag = &shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS];
    size_t n = tx->item[i].key_len;
    __atomic_store_n(tag, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    h->lid = tx->item[i].lid;
    h->key_len = (uint32_t)n;
    memcpy(h->key, tx->item[i].key, n < SHM_KEY_INLINE ? n : SHM_KEY_INLINE);
    memcpy(shm_cold_at(t, s), tx->item[i].key, n);
    uint64_t seq = h->seq + 1;
    copy_fill(tx, i, s, h, (uint32_t)(seq & 1), st);
    hook(RLS__SHM_AT_WRITTEN, i);
    __atomic_store_n(&h->seq, seq, __ATOMIC_RELEASE);
    __atomic_store_n(tag, (uint8_t)tx->tag[i], __ATOMIC_RELEASE);      /* the publish */
    tx->fresh[i] = 0;
    hook(RLS__SHM_AT_PUBLISHED, i);
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
    if (tx->fresh[i]) {
        entry_make(tx, i, s, st);
        return RLS_OK;
    }
    struct shm_hot *h = shm_hot_at(t, s);
    uint64_t seq = h->seq + 1;
    copy_fill(tx, i, s, h, (uint32_t)(seq & 1), st);
    hook(RLS__SHM_AT_WRITTEN, i);
    __atomic_store_n(&h->seq, seq, __ATOMIC_RELEASE);   /* the publish */
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
    uint8_t *tag = &shm_bucket_at(tx->t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS];
    __atomic_store_n(tag, 0, __ATOMIC_RELEASE);
    tx->fresh[i] = 1;   /* a write now makes it again, in the same slot */
    return RLS_OK;
}

/* ---- the lock-free read ------------------------------------------------------- */

/* One try at item it in slot s (tag in bucket b's way s % WAYS): 1 read
 * whole into st, 0 not this item, -1 moved while read (try again).  A
 * seqlock read: the publish counter before and after, the tag after; a
 * writer fills the copy that is not current, so reading copy seq & 1 while
 * seq has not moved reads a state that was whole.  Plain loads of memory a
 * writer may change meanwhile are what a seqlock is: any value read when
 * seq or the tag moved is thrown away. */
static int snap_try(const rls__shm *t, uint32_t b, uint32_t s, uint32_t tag,
                    const rls__shm_item *it, algo_state *st)
{
    const struct shm_hot *h = shm_hot_at(t, s);
    const uint8_t *tp = &shm_bucket_at(t, b)->tag[s % RLS__SHM_WAYS];
    uint64_t seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
    hook(RLS__SHM_AT_SNAP, 0);
    int same = entry_is(t, s, h, it);
    uint32_t cur = (uint32_t)(seq & 1), meta = h->meta[cur];
    uint32_t log_len = SHM_META_LOG(meta);
    int fits = log_len <= st->log_cap && (log_len == 0 || st->log) &&
               log_len <= (uint64_t)t->log_max * ALGO_LOG_ENTRY;
    struct shm_state c = h->copy[cur];
    if (same && fits && log_len)
        memcpy(st->log, shm_log_of(t, s, cur), log_len);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != seq ||
        __atomic_load_n(tp, __ATOMIC_RELAXED) != tag)
        return -1;
    if (!same)
        return 0;
    if (SHM_META_KIND(meta) != it->kind) {
        state_absent(st);
        return 1;
    }
    if (!fits)
        return -2;
    state_put(st, &c, log_len);
    return 1;
}

int rls__shm_snap(const rls__shm *t, const rls__shm_item *it, algo_state *st)
{
    uint32_t b[2], tag;
    if (!t || !it || !st || it->kind < 1 || it->kind > 255)
        return RLS_EINVAL;
    if (!it->key || it->key_len < 1 || it->key_len > t->key_max)
        return RLS_EKEY;
    placement(t, item_hash(t, it), &b[0], &b[1], &tag);
    for (int round = 0; round < 4; round++) {
        int moved = 0;
        for (int k = 0; k < 2; k++)
            for (uint32_t m = tag_mask(t, b[k], tag); m; m &= m - 1) {
                uint32_t s = b[k] * RLS__SHM_WAYS + (uint32_t)__builtin_ctz(m);
                int r = snap_try(t, b[k], s, tag, it, st);
                if (r == 1)
                    return RLS_OK;
                if (r == -2)
                    return RLS_EINVAL;
                moved |= r < 0;
            }
        if (!moved) {   /* no entry: absent (a hint too, see shmtable.h) */
            state_absent(st);
            return RLS_OK;
        }
    }
    return RLS_EBUSY;
}

/* ---- walking the table ---------------------------------------------------------- */

/* fn for each live entry of bucket b (locked by the caller). */
static int each_in(rls__shm *t, uint32_t b, int64_t now, rls__shm_each_fn fn, void *ctx)
{
    struct shm_bucket *bk = shm_bucket_at(t, b);
    for (uint32_t w = 0; w < RLS__SHM_WAYS; w++) {
        if (bk->tag[w] == 0)
            continue;
        uint32_t s = b * RLS__SHM_WAYS + w;
        const struct shm_hot *h = shm_hot_at(t, s);
        uint32_t cur = (uint32_t)(h->seq & 1), meta = h->meta[cur];
        const struct shm_state *c = &h->copy[cur];
        if (c->expires_ms <= now)
            continue;
        algo_state st;
        memset(&st, 0, sizeof st);
        uint32_t log_len = SHM_META_LOG(meta);
        state_put(&st, c, log_len <= (size_t)t->log_max * ALGO_LOG_ENTRY ? log_len : 0);
        st.log = st.log_len ? shm_log_of(t, s, cur) : NULL;
        st.log_cap = st.log_len;
        size_t klen = h->key_len <= t->key_max ? h->key_len : t->key_max;
        int r = fn(ctx, h->lid, SHM_META_KIND(meta), shm_cold_at(t, s), klen, &st);
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
