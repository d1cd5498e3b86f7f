/*
 * pool.c - the database handles of rlstore-auth.
 *
 * A handle serves one thread at a time (rlstore.h), and libmicrohttpd runs
 * requests on several threads.  Each request takes a free handle from a
 * stack and gives it back when decided; when none is free a new one is
 * opened, so there are as many handles as requests ever ran at once (the
 * worker threads), and none is shared.  The lock guards only the stack:
 * checks run outside it, side by side, and SQLite's busy timeout (the
 * request's deadline) orders their transactions.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "auth.h"

#define POOL_MAX 256

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static rls_db *free_list[POOL_MAX];
static int nfree;
static rls_db *all[POOL_MAX];   /* every handle opened, to close them all */
static int nall;
static char *db_path;
static int busy_ms;

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
    free_list[nfree++] = h;
    return RLS_OK;
}

rls_db *pool_get(int *rc)
{
    rls_db *h = NULL;
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
    pthread_mutex_lock(&pool_lock);
    free_list[nfree++] = db;    /* nfree <= nall <= POOL_MAX */
    pthread_mutex_unlock(&pool_lock);
}

void pool_close(void)
{
    for (int i = 0; i < nall; i++)
        rls_close(all[i]);
    nall = nfree = 0;
    free(db_path);
    db_path = NULL;
}
