/*
 * deny.c - the denied path without a write transaction.
 *
 * A check on a blocked key, or on a key over its limit until a known time,
 * is answered from the handle's cache of denials (core/denycache.h) instead
 * of a BEGIN IMMEDIATE transaction.  What keeps the answer exact:
 *
 *  - A shared generation number, 8 bytes of the side file "<db>-ckpt"
 *    mapped by every handle, is bumped before and after the commit of
 *    every write transaction that is not a plain check (stmt.c,
 *    rls__commit): refunds, cancelled and expired reservations, rule
 *    changes, blocks, tiers, overrides, resets.  A cached
 *    denial is trusted only under the generation read before the
 *    transaction that made it, so capacity given back or any admin change
 *    in any process is seen at the next check.  Plain checks only consume,
 *    which cannot make a denied request admissible sooner.
 *  - A cached denial is also trusted for at most DENYCACHE_TTL_MS of real
 *    time: the bound for changes made to the file by something else than
 *    the library.
 *  - Only denials whose answer is fixed until their retry time are cached
 *    (rls__deny_cacheable), for the key exactly as given when normalising it
 *    changes nothing, and limit denials only when the key held no
 *    reservation (an unexpired one may expire and give units back).
 *
 * Stats and per-key denial counts of cached answers are counted as for any
 * check.  A handle that has counted stats for a second of real time
 * without a transaction, or answered RLS_GC_EVERY_DENIALS denials since its
 * last GC step, goes to the database, whose transaction writes the stats or
 * runs a GC step: denied traffic alone keeps collecting expired state.  Without the side file (it cannot be
 * created or mapped), nothing is cached.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "db.h"
#include "denycache.h"
#include "check.h"

#define GEN_OFFSET 64

static int64_t mono_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Maps the shared generation, once per handle. */
static int map_gen(rls_db *db)
{
    if (db->deny.deny_state)
        return db->deny.deny_state > 0;
    db->deny.deny_state = -1;
    /* PostgreSQL: other hosts change counters where no shared page can
     * announce it, so every check asks the database */
    void *p = db->be->shared_page(db);
    if (!p)
        return 0;  /* a handle that could not bump it must not rely on it */
    db->deny.deny_map = p;
    db->deny.deny_gen = (uint64_t *)((unsigned char *)p + GEN_OFFSET);
    db->deny.deny_state = 1;
    return 1;
}

static int ensure_cache(rls_db *db)
{
    unsigned char seed[16];
    if (db->deny.cache)
        return 1;
    if (getrandom(seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
        /* no entropy yet: the monotonic clock and the handle's address
         * still keep collisions out of a remote client's reach */
        uint64_t a = (uint64_t)mono_ms() ^ (uint64_t)(uintptr_t)db;
        uint64_t b = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)time(NULL);
        memcpy(seed, &a, 8);
        memcpy(seed + 8, &b, 8);
    }
    db->deny.cache = rls__denycache_new(seed);
    return db->deny.cache != NULL;
}

int rls__deny_lookup(rls_db *db, struct check_call *call)
{
    int64_t mono;
    call->deny_usable = 0;
    call->deny_fp = 0;
    mono = call->mono_ns > 0 ? call->mono_ns / 1000000 : mono_ms();   /* one clock read */
    if (db->ident.opt.read_only || !map_gen(db) || mono < 0)
        return 0;
    call->deny_gen = __atomic_load_n(db->deny.deny_gen, __ATOMIC_ACQUIRE);
    call->deny_usable = 1;
    if (!db->deny.cache)
        return 0;  /* nothing denied yet */
    size_t keylen = strlen(call->key);
    call->deny_fp = rls__denycache_fp(db->deny.cache, call->action, call->key, keylen);
    /* stats counted for a second without a transaction, or a GC step due:
     * let a transaction do them */
    if (rls__stats_pending(db) && mono - db->deny.deny_tx_mono >= 1000)
        return 0;
    if (db->deny.deny_hits >= RLS_GC_EVERY_DENIALS) {
        db->deny.deny_hits = 0;
        rls__gc_due_now(db);  /* this transaction runs it */
        return 0;
    }
    if (!rls__denycache_get(db->deny.cache, call->deny_fp, call->cost, call->now, mono,
                            call->deny_gen, call->res))
        return 0;
    db->deny.deny_hits++;
    rls__stats_count(db, call->action, call->now, 0);
    rls__keystat_note(db, call->action, call->key, keylen, call->res, call->now);
    return 1;
}

void rls__deny_note(rls_db *db, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    const rls_result *res = call->res;
    const decide_out *out = call->blocked ? NULL : &call->dout;
    uint64_t fp = call->deny_fp;
    int64_t mono;
    if (!call->deny_usable)
        return;
    db->deny.deny_tx_mono = mono_ms();
    if (res->allowed) {
        if (db->deny.cache)
            rls__denycache_forget(db->deny.cache, fp);
        return;
    }
    size_t keylen = strlen(call->key);
    if (!rls__deny_cacheable(ctx->items, out ? ctx->n : 0, out, res, call->cost) ||
        ctx->keylen != keylen || memcmp(ctx->key, call->key, keylen) != 0 ||
        (res->reason != RLS_REASON_BLOCKED && !call->deny_nores) ||
        (mono = db->deny.deny_tx_mono) < 0 || !ensure_cache(db))
        return;
    if (!fp)
        fp = rls__denycache_fp(db->deny.cache, call->action, call->key, keylen);
    rls__denycache_put(db->deny.cache, fp, call->cost, call->now, mono, call->deny_gen, res);
}

void rls__deny_bump(rls_db *db)
{
    if (db->deny.cache)
        rls__denycache_clear(db->deny.cache);
    if (map_gen(db))
        __atomic_add_fetch(db->deny.deny_gen, 1, __ATOMIC_RELEASE);
}

void rls__deny_close(rls_db *db)
{
    if (db->deny.deny_map)
        munmap(db->deny.deny_map, RLS_SIDE_BYTES);
    db->deny.deny_map = NULL;
    db->deny.deny_gen = NULL;
    db->deny.deny_state = 0;
    rls__denycache_free(db->deny.cache);
    db->deny.cache = NULL;
}
