/*
 * keycount.h - the number of keys each action tracks (rls_key_counts,
 * schema/002), kept exact by the writes that add a key's first counter of
 * an action or remove its last one.  Each call runs inside the caller's
 * write transaction, so the count commits or rolls back with the rows.
 */
#ifndef RLS_KEYCOUNT_H
#define RLS_KEYCOUNT_H

#include "db.h"

struct key_ctx;

/* Right before rls__keyctx_write_states(db, ctx): if the key has no counter of
 * ctx's action yet and a state is about to be written, counts it.  Costs
 * nothing when a state of the key was read (the common case). */
int rls__keycount_before_write(rls_db *db, const struct key_ctx *ctx);

/* Right after deleting counters of key (GC, reset): if none of the
 * action's is left, uncounts the key.  The action by name, or by the id of
 * the deleted limit when action is NULL. */
int rls__keycount_deleted(rls_db *db, const char *action, int64_t lid, const void *key,
                          size_t keylen);

/* Sets the count of action to the keys that have counters of it, in one
 * scan of them: exact while no other writer adds or removes counters (the
 * caller holds them off: SQLite's write lock, PostgreSQL's table lock). */
int rls__keycount_recount(rls_db *db, const char *action);

/* Inside a transaction: the keys with counters of action (0 if none). */
int rls__keycount_get(rls_db *db, const char *action, int64_t *n);
/* ... of every action together. */
int rls__keycount_total(rls_db *db, int64_t *n);

/* "rules" in a split deployment (the rules file is attached under that
 * name, db.h), else "main": the schema of rls_limits and manual blocks. */
const char *rls__rules_schema(rls_db *db);

#endif
