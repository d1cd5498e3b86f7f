/*
 * memclass.h - `durability: memory` limits: their states live in the
 * shared-memory table of storage/shm (shmtable.h), never in SQLite or
 * PostgreSQL.  memclass.c has the design; docs/DESIGN-NOTES.md the why.
 *
 * Two ways down the check pipeline (check.c):
 *
 *  - The fast path (rls__mem_fast): a check or peek whose limits are all
 *    memory-class, on a handle that may trust its cached rules and knows
 *    that no key has policy rows or reservations, or that this key has
 *    none that apply (memtrust.h): one shared-memory
 *    transaction (lock, read, core decides, write, unlock), no database
 *    transaction at all.
 *  - Inside a database transaction (any other check, a batch, a refund, a
 *    reservation, a peek): the memory states are read as a snapshot
 *    (rls__mem_read), the changed ones staged (rls__mem_stage), and written
 *    just before the database's COMMIT (rls__mem_prepare: lock, check that
 *    every snapshot still holds, write, unlock) - or, if a snapshot moved,
 *    the whole transaction is run again (rls__mem_retry).  A COMMIT that
 *    then fails gives the memory states back (rls__mem_undo).
 */
#ifndef RLS_MEMCLASS_H
#define RLS_MEMCLASS_H

#include "keyctx.h"
#include "shm/shmtable.h"

struct check_call;

/* Is the limit kept in the shared-memory table? */
static inline int rls__mem_limit(const rule_limit *def)
{
    return def && def->durability == DURA_MEMORY;
}

/* Does action (in any tier) have a memory-class limit? */
int rls__mem_action_has(const ruleset *rs, const char *action);
/* At most how many memory-class limits one check of action decides (its
 * defaults and its largest tier's: a bound, whatever the key's tier); one
 * transaction holds at most RLS__MEM_TXN_MAX of them (the table's lock
 * set): group.c splits a group to stay within it, batch.c refuses a batch
 * over it. */
int rls__mem_action_count(const ruleset *rs, const char *action);
#define RLS__MEM_TXN_MAX RLS__SHM_TXN_MAX

/* A coarse monotonic clock in ms (a few ms of resolution, no time-stamp
 * counter read): enough for the one-second bounds of the table's look
 * and of the fast path's trust (memtrust.c); -1 if it cannot be read. */
int64_t rls__mem_coarse_ms(void);

/* At rls_open: records the database's identity (the table's name).
 * Never fails: an identity it cannot take makes the table unavailable,
 * which the first memory-class check reports. */
void rls__mem_init(rls_db *db);
/* rls_close: unmaps the table (the file stays). */
void rls__mem_close(rls_db *db);
/* A forked child: forgets the transaction and the trust (keeps the map). */
void rls__mem_after_fork(rls_db *db);

/* The table, opened at the first use: RLS_OK and *out, or the error
 * recorded (RLS_ECANTOPEN when shm_dir cannot hold it, RLS_EFULL when it
 * has no room for it, ...). */
int rls__mem_table(rls_db *db, rls__shm **out);
/* Its path (for tools): "" before the identity is known. */
const char *rls__mem_path(const rls_db *db);

/* ---- inside a database transaction ----------------------------------- */
/* The states of ctx's memory-class limits (rl[i] of memory class, items
 * set by the caller), read from what this transaction staged, else as a
 * snapshot of the table. */
int rls__mem_read(rls_db *db, key_ctx *ctx);
/* Stages the changed states of ctx's memory-class limits. */
int rls__mem_stage(rls_db *db, key_ctx *ctx);
/* Before COMMIT (stmt.c): writes what was staged, if every snapshot still
 * holds; else RLS_EBUSY with rls__mem_retry true.  Nothing staged: OK. */
int rls__mem_prepare(rls_db *db);
/* The COMMIT after a successful prepare failed: the states written are
 * given back where nobody changed them since. */
void rls__mem_undo(rls_db *db);
/* The transaction ended (committed or rolled back). */
void rls__mem_forget(rls_db *db);
/* 1 when a transaction failed with rc because a snapshot moved: run it
 * again (bounded). */
int rls__mem_retry(rls_db *db, int rc, int *attempt);

/* ---- the check pipeline (check.c) ------------------------------------ */
/* In a charging check's transaction, after the load: learns what the
 * fast path needs to trust (memtrust.h: no policy rows or reservations at
 * all, or none that apply to this key). */
int rls__mem_learn(rls_db *db, struct check_call *call);
/* After that transaction committed, or failed only because a memory
 * state moved (what it read stands): the handle trusts what it learned
 * while the shared generation stays.  After such a failure, call's
 * generation is read again for the attempt to come. */
void rls__mem_trust(rls_db *db, struct check_call *call);
/* The fast path: 1 when it answered the call (*rc its code), 0 when the
 * call goes down the database path (again, after such a failure). */
int rls__mem_fast(rls_db *db, struct check_call *call, int *rc);

/* ---- the fast lane (memlane.c) ---------------------------------------- */
struct rls_memlane;
/* rls_check of an action whose limits are all memory-class, for a trusted
 * key, the common case served with what the handle prepared for the
 * action: 1 when served (*rc its return, *res filled, counted as the
 * pipeline counts it), 0 when it is not the case (nothing done: the
 * pipeline runs).  Equal in every answer and count to the pipeline's fast
 * path (rls__mem_fast). */
int rls__mem_lane_check(rls_db *db, const char *action, const char *key, int64_t cost,
                        int64_t now, rls_result *res, int *rc);
/* rls__mem_lane_check for a thread-safe handle, from a thread that does
 * not hold its lock: under the handle lock, taken here when the lane is
 * likely to serve the action (memlane.c); 0: route the check to the
 * group. */
int rls__mem_lane_shared(rls_db *db, const char *action, const char *key, int64_t cost,
                         int64_t now, rls_result *res, int *rcp);
void rls__memlane_free(struct rls_memlane *l);   /* NULL: no-op */
/* 0: the lane serves nothing (tests/integration/test_memlane.c compares
 * the answers with and without it); 1 by default. */
extern int rls__memlane_enabled;
/* The checks the lane of db answered, and of them those it timed (tests). */
uint64_t rls__memlane_served(rls_db *db);
uint64_t rls__memlane_timed(rls_db *db);
/* The action entries the lane of db made (tests: a rule set reloaded is
 * prepared again, never taken for the one before). */
uint64_t rls__memlane_prepared(rls_db *db);
/* memclass.c's part: where the handle keeps its lane (NULL: no memory
 * class), and the table when the trust lets the fast path serve
 * (act, key) at (now, mono): NULL otherwise (nothing recorded). */
struct rls_memlane **rls__mem_lane_slot(rls_db *db);
/* The table's refusal rc of a state recorded as the fast path records it. */
int rls__mem_lane_failed(rls_db *db, int rc);
rls__shm *rls__mem_lane_open(rls_db *db, int act, const char *key, size_t keylen,
                             int64_t now, int64_t mono);

/* ---- tools ------------------------------------------------------------ */
/* Every live entry at now (rls__shm_each); RLS_OK without a table. */
int rls__mem_each(rls_db *db, int64_t now, rls__shm_each_fn fn, void *arg);
/* Removes the entry of (lid, kind, key); *found 1 when there was one that
 * had not expired at now (an expired one is as good as reused, as an
 * expired row is as good as swept: admin_list.c's key_rows). */
int rls__mem_drop(rls_db *db, int64_t lid, int kind, const void *key, size_t keylen,
                  int64_t now, int *found);

#endif
