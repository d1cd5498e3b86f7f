/*
 * busy.h - the writers' turn (busy.c): first come, first served among the
 * writing connections of every process, instead of polling for SQLite's
 * write lock.
 */
#ifndef RLS_BUSY_H
#define RLS_BUSY_H

#include "lite.h"

/* Installs the busy handler, the commit and rollback hooks and the
 * statement trace hook (the turn's gate before BEGIN IMMEDIATE) on
 * db->lite->sql.  Called at every connect (also in a forked child).  Never
 * fails: without memory or without the shared side file, writers meet
 * SQLite's lock alone, with short growing sleeps. */
void rls__busy_install(rls_db *db);

/* After a commit (wal.c, after any checkpoint it ran): ends the turn's
 * transaction, passes the turn on if its lease is over and someone waits,
 * lets writers held off by this handle go on, and wakes connections
 * waiting for SQLite's lock. */
void rls__busy_after_commit(rls_db *db);

/* Around a checkpoint (wal.c): leave, before the PASSIVE step, ends the
 * turn's transaction and passes the turn on if anyone waits; hold_off,
 * before the RESTART step, holds every writer off at its next BEGIN
 * IMMEDIATE and waits (briefly) for the turn's holder to leave its
 * transaction.  rls__busy_after_commit lets the writers go on. */
void rls__busy_leave(rls_db *db);
void rls__busy_hold_off(rls_db *db);

/* Releases what rls__busy_install allocated (wal.c, with the side file),
 * passing a held turn on.  In a forked child it leaves the parent's turn
 * alone. */
void rls__busy_close(rls_db *db);

/* For tests: 1 if the handle takes turns in the shared memory, 0 if it
 * meets SQLite's lock alone.  With 1, *holding says whether it holds the
 * turn and *queued counts the tickets not yet done (the holder's
 * included). */
int rls__busy_probe(const rls_db *db, int *holding, int *queued);

#endif
