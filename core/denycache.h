/*
 * denycache.h - a per-handle cache of denials that cannot change soon, so
 * that a check on a blocked key, or on a key that is over its limit until a
 * known time, is answered without a write transaction.
 *
 * Pure: no SQLite, no clock.  The caller supplies the check's time (now),
 * its own monotonic milliseconds (mono) and a generation number that every
 * process bumps after a change that can make a denied request admissible
 * sooner (a refund, a cancelled or expired reservation, any admin change).
 * An entry answers a later check of the same (action, key) only while all
 * of these hold:
 *
 *   - the generation is the one read before the transaction that denied;
 *   - mono is less than DENYCACHE_TTL_MS after the denial (a bound for
 *     writers that died between their commit and the bump, and for changes
 *     made outside the library);
 *   - now lies in [time of the denial, time it could first be admitted);
 *   - the cost is the same (any cost for a block).
 *
 * Only denials whose every reported field is fixed until then are cached
 * (rls__deny_cacheable): a block, or one limit denying with nothing remaining
 * for a request of one unit (or any cost under a fixed window, where
 * nothing refills before the reset).  The answer then equals what the
 * transaction would have returned, field for field, with reset_ms and
 * retry_after_ms counted down by the time that passed.
 *
 * Entries are found by a keyed 64-bit SipHash-2-4 of action and key with a
 * per-cache random key, so colliding keys cannot be chosen by a client.
 */
#ifndef RLS_DENYCACHE_H
#define RLS_DENYCACHE_H

#include <stddef.h>
#include <stdint.h>
#include "rlstore.h"
#include "decide.h"

#define DENYCACHE_TTL_MS 1000   /* longest an entry is trusted */
#define DENYCACHE_SETS 2048     /* x DENYCACHE_WAYS entries, about 1.4 MiB */
#define DENYCACHE_WAYS 8

typedef struct deny_cache deny_cache;

/* SipHash-2-4 of data under the 16-byte key (exposed for its test). */
uint64_t rls__deny_siphash(const unsigned char key[16], const void *data, size_t len);

/* A new, empty cache keyed by `seed`; NULL when out of memory. */
deny_cache *rls__denycache_new(const unsigned char seed[16]);
void rls__denycache_free(deny_cache *c);
void rls__denycache_clear(deny_cache *c);

/* The fingerprint of (action, key) for this cache; never 0. */
uint64_t rls__denycache_fp(const deny_cache *c, const char *action, const char *key,
                      size_t keylen);

/* 1 and *res filled when a valid entry answers (fp, cost) at now; else 0. */
int rls__denycache_get(deny_cache *c, uint64_t fp, int64_t cost, int64_t now, int64_t mono,
                  uint64_t gen, rls_result *res);

/* Remembers a denial that rls__deny_cacheable() accepted, made at now (mono)
 * under generation gen.  Returns 0, or -1 if it could not be kept (nothing
 * is then cached for fp). */
int rls__denycache_put(deny_cache *c, uint64_t fp, int64_t cost, int64_t now, int64_t mono,
                  uint64_t gen, const rls_result *res);

/* Drops the entries of fp. */
void rls__denycache_forget(deny_cache *c, uint64_t fp);

/*
 * May this result of a check be cached?  items/n/out are the decision's
 * (n == 0 and out == NULL for a key that was blocked before any limit was
 * read).  1 for a block, and for a denial by exactly one limit, without a
 * penalty imposed now, with no limit of the action counting denials, no
 * soft limit deciding, nothing remaining, and cost 1 or a fixed window.
 */
int rls__deny_cacheable(const decide_item *items, int n, const decide_out *out,
                   const rls_result *res, int64_t cost);

#endif
