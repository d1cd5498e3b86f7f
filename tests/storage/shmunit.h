/*
 * shmunit.h - what the one-process suites of the shared-memory table
 * (test_shm_table.c, test_shm_fast.c) share: a scratch folder per suite
 * (SHMUNIT_NAME, defined before including), a fresh table path per test,
 * and writing and reading counts whose fields follow from the count (a
 * torn state shows).  Include after cmocka.h.
 */
#ifndef RLS_SHMUNIT_H
#define RLS_SHMUNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rlstore.h"
#include "shm/shmtable.h"
#include "shmcount.h"

static char dir[256];
static char path[512];
static int seq;

static inline int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/" SHMUNIT_NAME ".XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static inline int group_teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fresh path for each test. */
static inline const char *new_path(void)
{
    snprintf(path, sizeof path, "%s/t%d.shm", dir, ++seq);
    return path;
}

static const rls__shm_geom G = { 64, 32, 4 };

static inline rls__shm *open_ok(const char *p, const rls__shm_geom *g)
{
    rls__shm *t = NULL;
    char why[200];
    int rc = rls__shm_open(&t, p, g, why, sizeof why);
    if (rc != RLS_OK)
        fail_msg("open '%s': %s (%s)", p, rls_errname(rc), why);
    return t;
}

static inline rls__shm_item item(int64_t lid, const char *key)
{
    rls__shm_item it = { lid, ALGO_FIXED_WINDOW, key, strlen(key) };
    return it;
}

/* Writes shm_count(n, expires) for (lid, key) at now: the return code of
 * the lock. */
static inline int put(rls__shm *t, int64_t lid, const char *key, int64_t n,
                      int64_t expires, int64_t now)
{
    rls__shm_txn tx;
    rls__shm_item it = item(lid, key);
    int rc = rls__shm_lock(t, &it, 1, now, &tx);
    if (rc != RLS_OK)
        return rc;
    algo_state s = shm_count(n, expires);
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_OK);
    rls__shm_unlock(&tx);
    return RLS_OK;
}

/* The a of (lid, key): -1 when absent. */
static inline int64_t get(rls__shm *t, int64_t lid, const char *key)
{
    rls__shm_txn tx;
    rls__shm_item it = item(lid, key);
    algo_state s;
    memset(&s, 0, sizeof s);
    assert_int_equal(rls__shm_lock_peek(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &s), RLS_OK);
    rls__shm_unlock(&tx);
    if (!s.present)
        return -1;
    assert_int_equal(s.b, 2 * s.a);   /* last_ms aside: some tests write it apart */
    assert_int_equal(s.c, -s.a);
    return s.a;
}

#endif
