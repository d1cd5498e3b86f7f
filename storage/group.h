/*
 * group.h - a thread-safe handle (rls_options.thread_safe, group.c): the
 * handle lock every public call on it holds, and group commit of its
 * checks, peeks and reservations.
 *
 * A handle opened with thread_safe has db->group; any other has NULL and
 * none of this costs it anything but a NULL test.
 *
 *   - The handle lock (recursive) serialises everything that touches the
 *     handle: a public function holds it for its whole call (RLS_SERIAL at
 *     its first line), so the handle's parts (statements, caches, stats,
 *     the error detail) see one thread at a time, as in a handle of one
 *     thread.
 *   - A check does not take it itself: it queues (rls__group_check).  The
 *     first check that finds no leader becomes the leader: under the
 *     handle lock it runs one transaction for every check queued (up to
 *     GROUP_MAX, in arrival order, each decided on its own), commits once,
 *     and wakes them; checks that arrive meanwhile queue for the next.
 *   - The error detail of a call is kept per thread (rls_errmsg).
 */
#ifndef RLS_GROUP_H
#define RLS_GROUP_H

#include <stdint.h>

struct rls_db;
struct check_call;
struct rls_group;

/* rls_open of a thread-safe handle: db->group allocated (ENOMEM). */
int rls__group_open(struct rls_db *db);
/* rls_close: freed; NULL group: no-op. */
void rls__group_close(struct rls_db *db);

/* The handle lock: db when taken (a thread-safe handle), else NULL;
 * rls__serial_leave is RLS_SERIAL's cleanup and keeps the call's error
 * detail for the calling thread when the outermost call leaves. */
struct rls_db *rls__serial_enter(struct rls_db *db);
void rls__serial_leave(struct rls_db **held);
/* As rls__serial_enter when the lock is free at once, else NULL (not
 * taken). */
struct rls_db *rls__serial_try(struct rls_db *db);
/* Two handles (rls_copy_at), locked in address order so that two copies
 * in opposite directions cannot deadlock. */
void rls__serial_enter_pair(struct rls_db *a, struct rls_db *b, struct rls_db **held);
void rls__serial_leave_pair(struct rls_db *(*held)[2]);

/* The first line of a public function that takes a handle: holds the
 * handle lock of a thread-safe handle until the function returns (the
 * cleanup attribute: every return path releases it). */
#define RLS_SERIAL_NAME_(line) rls__serial_held_##line
#define RLS_SERIAL_NAME(line) RLS_SERIAL_NAME_(line)
#define RLS_SERIAL(db) \
    struct rls_db *RLS_SERIAL_NAME(__LINE__) \
        __attribute__((cleanup(rls__serial_leave), unused)) = rls__serial_enter(db)
#define RLS_SERIAL_PAIR(a, b) \
    struct rls_db *RLS_SERIAL_NAME(__LINE__)[2] \
        __attribute__((cleanup(rls__serial_leave_pair), unused)); \
    rls__serial_enter_pair((a), (b), RLS_SERIAL_NAME(__LINE__))

/* Does the public check entry route call to the group?  1 on a
 * thread-safe handle whose lock this thread does not hold (a leader, or
 * an admin call, runs the plain pipeline). */
int rls__group_routes(const struct rls_db *db);
/* The check, peek or reservation of call through group commit: its
 * code, *call->res (the failure policy on failure), the detail kept for
 * this thread. */
int rls__group_check(struct rls_db *db, struct check_call *call);
/* Checks queued and not yet taken by a leader (tests: a group forms). */
size_t rls__group_waiting(struct rls_db *db);
/* Groups led on db so far (tests: a check went through one). */
uint64_t rls__group_led(struct rls_db *db);
/* A leader is running (or waiting for the handle lock to run) a group. */
int rls__group_leading(struct rls_db *db);
/* Keeps msg as this thread's detail of its last call on db (errors.c:
 * an error recorded by a thread that does not hold the handle lock). */
void rls__group_errmsg_keep(const struct rls_db *db, const char *msg);
/* rls_errmsg of a thread-safe handle: this thread's last call's detail. */
const char *rls__group_errmsg(const struct rls_db *db);

/* Tests: called by a leader in its group's transaction, right before it
 * looks for late members (group_tx.c). */
extern void (*rls__group_late_hook)(struct rls_db *db);

#endif
