/*
 * pool.c - the database handles of rlstore-auth.
 *
 * A handle serves one thread at a time (rlstore.h), and libmicrohttpd runs
 * requests on several threads.
 *
 * On a SQLite file the requests share one handle, taken in turn under a
 * mutex: SQLite writers go one at a time anyway, and one connection keeps
 * its page cache warm and its place in the library's writers' turn, where
 * connections taking turns would each start cold and wait for the other's
 * lease (docs/DESIGN-NOTES.md, "The writers' turn"; measured in
 * docs/PERFORMANCE.md, rlstore-auth).  A request that cannot have it
 * within the deadline (something outside holds the database's lock and the
 * holder of the handle waits for it) takes a handle of its own from the
 * stack below, so that it meets the lock itself and its action's failure
 * policy answers it: a check waits at most twice the deadline.
 *
 * On PostgreSQL, where transactions of different keys run side by side,
 * every request takes a free handle from the stack, or opens one when none
 * is free: as many handles as requests ever ran at once (the worker
 * threads), none shared.  The stack's lock is held only to push or pop.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dbname.h"   /* common/ */
#include "auth.h"

#define POOL_MAX 256

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static rls_db *free_list[POOL_MAX];
static int nfree;
static rls_db *all[POOL_MAX];   /* every handle opened, to close them all */
static int nall;
static char *db_path;
static int busy_ms;
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static rls_db *primary;         /* SQLite: the shared handle, else NULL */

static int open_one(rls_db **db)
{
    rls_options opt;
    rls_options_init(&opt);
    opt.busy_timeout_ms = busy_ms;
    opt.create = 0;             /* a service never makes an empty database */
    opt.tool = "rlstore-auth";
    return rls_open(db, db_path, &opt);
}

int pool_init(const char *db, int timeout_ms, const char **why)
{
    db_path = malloc(strlen(db) + 1);
    if (!db_path) {
        *why = "out of memory";
        return RLS_ENOMEM;
    }
    strcpy(db_path, db);
    busy_ms = timeout_ms;
    rls_db *h;
    int rc = open_one(&h);
    if (rc != RLS_OK) {
        *why = rls_errmsg(NULL);
        return rc;
    }
    all[nall++] = h;
    if (db_is_uri(db))
        free_list[nfree++] = h;
    else
        primary = h;
    return RLS_OK;
}

/* The shared handle, if it is free within the deadline. */
static rls_db *take_primary(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += busy_ms / 1000;
    until.tv_nsec += (long)(busy_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return pthread_mutex_timedlock(&primary_lock, &until) == 0 ? primary : NULL;
}

rls_db *pool_get(int *rc)
{
    rls_db *h = primary ? take_primary() : NULL;
    if (h)
        return h;
    pthread_mutex_lock(&pool_lock);
    if (nfree > 0)
        h = free_list[--nfree];
    int room = nall < POOL_MAX;
    pthread_mutex_unlock(&pool_lock);
    if (h)
        return h;
    if (!room) {
        *rc = RLS_EBUSY;
        return NULL;
    }
    *rc = open_one(&h);     /* outside the lock: an open may take a while */
    if (*rc != RLS_OK)
        return NULL;
    pthread_mutex_lock(&pool_lock);
    if (nall < POOL_MAX) {
        all[nall++] = h;
    } else {                /* another thread took the last place */
        pthread_mutex_unlock(&pool_lock);
        rls_close(h);
        *rc = RLS_EBUSY;
        return NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    return h;
}

void pool_put(rls_db *db)
{
    if (db == primary) {
        pthread_mutex_unlock(&primary_lock);
        return;
    }
    pthread_mutex_lock(&pool_lock);
    free_list[nfree++] = db;    /* nfree <= nall <= POOL_MAX */
    pthread_mutex_unlock(&pool_lock);
}

void pool_close(void)
{
    for (int i = 0; i < nall; i++)
        rls_close(all[i]);
    nall = nfree = 0;
    primary = NULL;
    free(db_path);
    db_path = NULL;
}
