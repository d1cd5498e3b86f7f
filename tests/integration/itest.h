/*
 * itest.h - helpers of the integration suites: a fresh database in a
 * temporary directory with a rule set applied, and direct SQLite reads for
 * asserting what is stored.
 */
#ifndef RLS_ITEST_H
#define RLS_ITEST_H

#include <sqlite3.h>
#include "testutil.h"
#include "rlstore.h"

#define T0 1767225600000LL  /* 2026-01-01T00:00:00Z */

typedef struct itest {
    char *dir;
    char path[4096];
    rls_db *db;
} itest;

/* Opens a new database and applies yaml (if not NULL). */
static inline itest *it_new(const char *yaml)
{
    itest *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->dir = tu_mkdtemp();
    assert_non_null(t->dir);
    tu_path(t->path, sizeof t->path, t->dir, "rl.db");
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    if (yaml) {
        int rc = rls_rules_apply_at(t->db, yaml, strlen(yaml), "test.yaml", NULL, T0, NULL);
        if (rc != RLS_OK)
            fail_msg("apply: %s: %s", rls_errname(rc), rls_errmsg(t->db));
    }
    return t;
}

static inline void it_free(itest *t)
{
    if (!t)
        return;
    rls_close(t->db);
    tu_rmdir(t->dir);
    free(t);
}

/* One check that must succeed; returns allowed. */
static inline int it_check(itest *t, const char *action, const char *key, int64_t cost,
                           int64_t now, rls_result *res)
{
    rls_result tmp;
    rls_result *r = res ? res : &tmp;
    int rc = rls_check_at(t->db, action, key, cost, now, r);
    if (rc != RLS_OK)
        fail_msg("check %s %s: %s: %s", action, key, rls_errname(rc), rls_errmsg(t->db));
    return r->allowed;
}

/* Number of admitted checks among n identical ones at now. */
static inline int it_admit_n(itest *t, const char *action, const char *key, int n,
                             int64_t now)
{
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += it_check(t, action, key, 1, now, NULL);
    return ok;
}

/* A scalar from a direct read-only query on the database file. */
static inline int64_t it_sql_int(const char *path, const char *sql)
{
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    assert_int_equal(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(s, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(s);
    return v;
}

static inline void it_sql_exec(const char *path, const char *sql)
{
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(s, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("sql: %s", err ? err : "?");
    sqlite3_close(s);
}

#endif
