/*
 * denycache.h - the per-handle cache of denials (denycache.c).
 *
 * A denial that wrote nothing is remembered with what decided it (the
 * resolved limits and the states read), so the next check of the same
 * (action, key) can be decided again in memory, with its own time and cost,
 * without a transaction.  Valid for at most one second of real time (what
 * other processes and handles may change meanwhile), until the first instant
 * in the caller's time at which the key's tier, overrides, blocks or
 * reservations may change, and only while the decision still denies and
 * writes nothing.  Cleared when this handle commits anything that is not a
 * check (an admin change, a refund, a reservation resolved, GC) and when the
 * rules change.
 */
#ifndef RLS_DENYCACHE_H
#define RLS_DENYCACHE_H

#include "keyctx.h"

typedef struct dc_entry dc_entry;

/* Serves a check from the cache: 1 if res is filled (denied, counted in the
 * in-process stats), 0 to run the transaction.  Arguments are validated. */
int rls__denycache_serve(rls_db *db, const char *action, const char *key,
                         int64_t cost, int64_t now, rls_result *res);

/*
 * Inside the check's transaction, after a denial that wrote nothing: builds
 * an entry from ctx (blocked: decided by a block or a blocked tier, without
 * states).  NULL when the denial must not be cached (a reservation of the
 * key is due, out of memory, a count_denied limit).  Reads the key's
 * reservations unless there are none.
 */
dc_entry *rls__denycache_prepare(rls_db *db, const key_ctx *ctx, int blocked,
                                 int64_t now);

/* After the commit: stores e (replacing an entry of the same key). */
void rls__denycache_put(rls_db *db, dc_entry *e);

/* Forgets one entry (NULL-safe). */
void rls__denycache_drop(dc_entry *e);

/* Forgets every entry; _free also releases the table. */
void rls__denycache_clear(rls_db *db);
void rls__denycache_free(rls_db *db);

#endif
