/*
 * group.c - a thread-safe handle (rls_options.thread_safe): the handle
 * lock, the per-thread error detail and group commit (group.h).
 *
 * Group commit, as PostgreSQL's and InnoDB's: a check queues; the first
 * that finds no leader leads.  The leader takes the queue (arrival order,
 * at most GROUP_MAX), takes the handle lock and runs the group
 * (group_tx.c): one member alone runs the plain pipeline (check.c, the
 * backend's own step: PostgreSQL's one round trip); several run in one
 * transaction, each decided on its own in arrival order (a later member
 * sees an earlier one's charge), one COMMIT, one fsync.  Then it marks
 * them done, wakes them, and wakes the queue's head to lead the next
 * group.  Checks that arrive while a group runs wait for the next, so the
 * group grows with the load and a lone check waits for nobody; when the
 * group's COMMIT is fsynced they join it before the COMMIT (group_tx.c,
 * late_join).
 *
 * On a busy CPU the members a group decided may not have run again by the
 * time the next check finds no leader: it would lead a group of one, again
 * and again, each thread in turn for a whole time slice.  So a check that
 * would lead while such members have not yet returned yields the CPU once
 * first (sched_yield), letting them queue for its group: PostgreSQL's
 * commit_delay, paid only when other threads are about.
 *
 * Two locks: q (the queue, held briefly, never while waiting for the
 * handle lock) and lock (the handle lock, recursive: a public function
 * that calls another, a leader that runs a member's plain pipeline).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "events.h"
#include "group_int.h"

/* ---- fork: a child re-makes the locks --------------------------------- */

/* A handle used in a forked child: the threads that held its locks or
 * queued in the parent do not exist here; the locks are made anew (under
 * a process-wide lock, in case the child's own threads race to it). */
static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;

static void group_init_locks(struct rls_group *g)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g->lock, &a);
    pthread_mutexattr_destroy(&a);
    pthread_mutex_init(&g->q, NULL);
    __atomic_store_n(&g->owner, NULL, __ATOMIC_RELAXED);
    g->depth = 0;
    g->head = g->tail = NULL;
    g->leading = 0;
    g->waiting = 0;
    g->returning = 0;
}

static void group_fork_check(struct rls_group *g)
{
    unsigned long epoch = rls__fork_epoch();
    if (__atomic_load_n(&g->epoch, __ATOMIC_ACQUIRE) == epoch)
        return;
    pthread_mutex_lock(&fork_mu);
    if (__atomic_load_n(&g->epoch, __ATOMIC_RELAXED) != epoch) {
        group_init_locks(g);
        __atomic_store_n(&g->epoch, epoch, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&fork_mu);
}

int rls__group_open(rls_db *db)
{
    struct rls_group *g = calloc(1, sizeof *g);
    if (!g)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    group_init_locks(g);
    g->epoch = rls__fork_epoch();
    db->group = g;
    return RLS_OK;
}

void rls__group_close(rls_db *db)
{
    struct rls_group *g = db->group;
    if (!g)
        return;
    if (g->epoch == rls__fork_epoch()) {  /* a child's copies may be held: leave them */
        pthread_mutex_destroy(&g->lock);
        pthread_mutex_destroy(&g->q);
    }
    for (int i = 0; i < g->npool; i++)
        free(g->pool[i]);
    free(g);
    db->group = NULL;
}

/* ---- the error detail, per thread ------------------------------------- */

/* A thread keeps the detail of its last call on each of its last few
 * thread-safe handles (ERR_SLOTS); a handle not among them reads "". */
#define ERR_SLOTS 4
static _Thread_local struct {
    const void *db;
    char msg[RLS_GROUP_ERRMSG];
} err_slot[ERR_SLOTS];
static _Thread_local unsigned err_next;

void rls__group_errmsg_keep(const rls_db *db, const char *msg)
{
    int i;
    for (i = 0; i < ERR_SLOTS && err_slot[i].db != db; i++)
        ;
    if (i == ERR_SLOTS) {
        i = (int)(err_next++ % ERR_SLOTS);
        err_slot[i].db = db;
    }
    rls__group_copy_msg(err_slot[i].msg, sizeof err_slot[i].msg, msg);
}

/* snprintf(dst, size, "%s", msg) without snprintf: every member of a group
 * copies its (mostly empty) detail twice. */
void rls__group_copy_msg(char *dst, size_t size, const char *msg)
{
    size_t n = strlen(msg);
    if (n >= size)
        n = size - 1;
    memcpy(dst, msg, n);
    dst[n] = '\0';
}

size_t rls__group_waiting(rls_db *db)
{
    struct rls_group *g = db ? db->group : NULL;
    size_t n = 0;
    if (g) {
        pthread_mutex_lock(&g->q);
        n = g->waiting;
        pthread_mutex_unlock(&g->q);
    }
    return n;
}

uint64_t rls__group_led(rls_db *db)
{
    struct rls_group *g = db ? db->group : NULL;
    uint64_t n = 0;
    if (g) {
        pthread_mutex_lock(&g->q);
        n = g->led;
        pthread_mutex_unlock(&g->q);
    }
    return n;
}

int rls__group_leading(rls_db *db)
{
    struct rls_group *g = db ? db->group : NULL;
    int on = 0;
    if (g) {
        pthread_mutex_lock(&g->q);
        on = g->leading;
        pthread_mutex_unlock(&g->q);
    }
    return on;
}

const char *rls__group_errmsg(const rls_db *db)
{
    for (int i = 0; i < ERR_SLOTS; i++)
        if (err_slot[i].db == db)
            return err_slot[i].msg;
    return "";
}

/* ---- the handle lock --------------------------------------------------- */

/* This thread's identity for the lock's owner: the address of a
 * thread-local (pthread_t has no portable "none"). */
static _Thread_local char thread_token;

rls_db *rls__serial_enter(rls_db *db)
{
    struct rls_group *g = db ? db->group : NULL;
    if (!g)
        return NULL;
    group_fork_check(g);
    pthread_mutex_lock(&g->lock);
    if (g->depth++ == 0) {
        __atomic_store_n(&g->owner, (void *)&thread_token, __ATOMIC_RELAXED);
        db->errmsg[0] = '\0';
    }
    return db;
}

rls_db *rls__serial_try(rls_db *db)
{
    struct rls_group *g = db ? db->group : NULL;
    if (!g)
        return NULL;
    group_fork_check(g);
    if (pthread_mutex_trylock(&g->lock) != 0)
        return NULL;
    if (g->depth++ == 0) {
        __atomic_store_n(&g->owner, (void *)&thread_token, __ATOMIC_RELAXED);
        db->errmsg[0] = '\0';
    }
    return db;
}

void rls__serial_leave(rls_db **held)
{
    rls_db *db = *held;
    if (!db)
        return;
    struct rls_group *g = db->group;
    if (--g->depth == 0) {
        rls__group_errmsg_keep(db, db->errmsg);
        __atomic_store_n(&g->owner, NULL, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g->lock);
}

void rls__serial_enter_pair(rls_db *a, rls_db *b, rls_db **held)
{
    if (a == b)
        b = NULL;
    if (a && b && (uintptr_t)b < (uintptr_t)a) {
        held[0] = rls__serial_enter(b);
        held[1] = rls__serial_enter(a);
    } else {
        held[0] = rls__serial_enter(a);
        held[1] = rls__serial_enter(b);
    }
}

void rls__serial_leave_pair(rls_db *(*held)[2])
{
    rls__serial_leave(&(*held)[1]);
    rls__serial_leave(&(*held)[0]);
}

int rls__group_routes(const rls_db *db)
{
    struct rls_group *g = db ? db->group : NULL;
    if (!g)
        return 0;
    group_fork_check(g);
    return __atomic_load_n(&g->owner, __ATOMIC_RELAXED) != (void *)&thread_token;
}

/* ---- the queue and its leader ------------------------------------------ */

/* With g->q held: waits for the handle lock (an admin call may hold
 * it: the checks that queue meanwhile join this group), takes the queue's
 * first GROUP_MAX members, leads their group (q released meanwhile), then
 * marks them done and wakes them and the next leader.  Returns with g->q
 * held. */
static void lead(rls_db *db, struct rls_group *g)
{
    struct group_member *m[GROUP_MAX];
    size_t n = 0;
    g->leading = 1;
    g->led++;
    pthread_mutex_unlock(&g->q);
    rls_db *held = rls__serial_enter(db);
    pthread_mutex_lock(&g->q);
    while (g->head && n < GROUP_MAX) {
        m[n++] = g->head;
        g->head = g->head->next;
        g->waiting--;
    }
    if (!g->head)
        g->tail = NULL;
    pthread_mutex_unlock(&g->q);

    n = rls__group_run(db, m, n);
    rls__serial_leave(&held);

    pthread_mutex_lock(&g->q);
    for (size_t i = 0; i < n; i++) {
        m[i]->done = 1;
        pthread_cond_signal(&m[i]->cv);
    }
    g->returning += n;
    g->leading = 0;
    if (g->head)
        pthread_cond_signal(&g->head->cv);   /* the next group's leader */
}

struct group_member *rls__group_take(rls_db *db,
                                     int (*fits)(void *arg, const struct group_member *mb),
                                     void *arg)
{
    struct rls_group *g = db->group;
    pthread_mutex_lock(&g->q);
    struct group_member *m = g->head && fits(arg, g->head) ? g->head : NULL;
    if (m) {
        g->head = m->next;
        g->waiting--;
        if (!g->head)
            g->tail = NULL;
    }
    pthread_mutex_unlock(&g->q);
    return m;
}

int rls__group_check(rls_db *db, struct check_call *call)
{
    struct rls_group *g = db->group;
    struct group_member me;
    if (!call->res) {
        rls__group_errmsg_keep(db, "result is NULL");
        return RLS_EINVAL;
    }
    memset(&me, 0, sizeof me);
    me.call = call;
    me.t0 = rls__metrics_clock();
    pthread_cond_init(&me.cv, NULL);
    group_fork_check(g);
    pthread_mutex_lock(&g->q);
    if (g->tail)
        g->tail->next = &me;
    else
        g->head = &me;
    g->tail = &me;
    g->waiting++;
    int yielded = 0;
    while (!me.done) {
        if (!g->leading && !yielded && g->returning > 0) {
            /* Threads of the last group, decided, have not run since:
             * on a busy CPU the next check of each is only a yield away.
             * One yield lets them queue for this group (as PostgreSQL's
             * commit_delay, only when others are about: a lone check
             * never waits). */
            yielded = 1;
            pthread_mutex_unlock(&g->q);
            sched_yield();
            pthread_mutex_lock(&g->q);
        } else if (!g->leading) {
            lead(db, g);
        } else {
            pthread_cond_wait(&me.cv, &g->q);
        }
    }
    g->returning--;
    pthread_mutex_unlock(&g->q);
    pthread_cond_destroy(&me.cv);
    rls__group_errmsg_keep(db, me.errmsg);
    return me.rc;
}
