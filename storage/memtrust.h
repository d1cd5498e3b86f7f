/*
 * memtrust.h - what the memory-class fast path (memclass.c, which has the
 * design) trusts: the trust of every key (no policy row, no reservation in
 * the database at all) and, beside it, a bounded per-handle table of
 * "this (action, key) has no policy row that applies and no reservation",
 * learned from what a committed database transaction read for that key.
 *
 * ---- the table ----------------------------------------------------------
 *
 * An entry is (action index in the rule set, the key exactly as the
 * caller gave it) -> the deny generation read before the transaction
 * that learned it, the caller's time of that check and the monotonic
 * milliseconds of its commit.  It answers a later lookup only under the
 * same rule set (pointer and rules generation, kept for the whole table),
 * the same deny generation, at a caller's time not earlier than its own
 * (rows that expire stay expired later; earlier they may apply) and for
 * less than MEMTRUST_TTL_MS of monotonic time.
 *
 * Size is fixed: MEMTRUST_SETS x MEMTRUST_WAYS entries (about 1.3 MiB,
 * allocated at the first entry), set-associative by a keyed SipHash of
 * (action, key) (a client cannot choose keys that evict another's), the
 * victim in a full set the entry learned longest ago (the nearest to its
 * end of trust).  Keys longer than MEMTRUST_KEY_MAX bytes are not cached:
 * their checks take the database path, as without the cache.  A hash is
 * only where to look: an entry matches by its bytes, never by its hash.
 *
 * Not thread-safe by itself: it is a part of the handle, used under the
 * handle's serialisation (group.h: a thread-safe handle's calls run one
 * at a time).
 */
#ifndef RLS_MEMTRUST_H
#define RLS_MEMTRUST_H

#include <stddef.h>
#include <stdint.h>
#include "db.h"

struct check_call;

#define MEMTRUST_TTL_MS 1000    /* longest an entry is trusted */
#define MEMTRUST_SETS 2048
#define MEMTRUST_WAYS 8         /* 16384 entries */
#define MEMTRUST_KEY_MAX 48     /* longer keys are not cached */

typedef struct mem_trust mem_trust;

/* A new empty table (the entries are allocated at the first put); NULL
 * when out of memory. */
mem_trust *rls__memtrust_new(void);
void rls__memtrust_free(mem_trust *c);   /* NULL: no-op */
void rls__memtrust_clear(mem_trust *c);  /* every entry forgotten */

/* Is (act, key) known clean for a check at now, under the rule set
 * (rules, rules_gen), deny generation gen, at monotonic mono?  1 or 0. */
int rls__memtrust_get(mem_trust *c, const void *rules, int64_t rules_gen, int act,
                      const char *key, size_t keylen, uint64_t gen, int64_t now, int64_t mono);

/* Learns (act, key) clean as of gen, now and mono under (rules,
 * rules_gen); another rule set forgets every entry first.  A key longer
 * than MEMTRUST_KEY_MAX, an act outside 0..65535 or no memory: nothing. */
void rls__memtrust_put(mem_trust *c, const void *rules, int64_t rules_gen, int act,
                       const char *key, size_t keylen, uint64_t gen, int64_t now, int64_t mono);

/* Forgets (act, key) (a key found not clean). */
void rls__memtrust_drop(mem_trust *c, int act, const char *key, size_t keylen);

/* Entries held (tests: the bound). */
size_t rls__memtrust_count(const mem_trust *c);
/* Bytes the table takes, entries included once allocated (tests). */
size_t rls__memtrust_bytes(const mem_trust *c);

/* ---- the trust (memclass.c's rls__mem_learn, rls__mem_trust and fast
 * path ask it) ------------------------------------------------------------ */
struct mem_fast_trust {
    /* every key, as of (gen, rules, rules_gen, mono) */
    int learned, pol_none, res_none;    /* learned in the open transaction */
    int known;                          /* pol_none, res_none as of gen */
    int trusted;                        /* ... both: every key is clean */
    uint64_t gen;
    int64_t rules_gen, mono;
    const ruleset *rules;
    /* per key */
    int key_clean;                      /* the open transaction's key is */
    mem_trust *keys;                    /* NULL until a key is learned */
};

/* In a charging check's transaction, after the load (rls__mem_learn):
 * what the trust of every key needs (a statement, unless known for half
 * its time), and whether the call's key is clean. */
int rls__memtrust_learn(rls_db *db, struct mem_fast_trust *t, struct check_call *call);
/* After that transaction (rls__mem_trust): with stands (it committed, or
 * failed only because a memory-class state moved, having read the same),
 * what it learned is trusted from now; else it is forgotten. */
void rls__memtrust_commit(rls_db *db, struct mem_fast_trust *t, const struct check_call *call,
                          int stands);
/* Outside a transaction, for a check or a peek (call planned): may the
 * fast path serve it? */
int rls__memtrust_allows(rls_db *db, struct mem_fast_trust *t, const struct check_call *call);
/* The same for a check of action index act (-1: the trust of every key
 * only) and key as the caller gave it, at the caller's now and monotonic
 * mono ms (a read at or after the coarse clock the trust learned with). */
int rls__memtrust_allows_key(rls_db *db, struct mem_fast_trust *t, int act, const char *key,
                             size_t keylen, int64_t now, int64_t mono);
/* A forked child: trusts nothing yet. */
void rls__memtrust_forget(struct mem_fast_trust *t);
/* rls_close: frees the table. */
void rls__memtrust_fini(struct mem_fast_trust *t);

#endif
