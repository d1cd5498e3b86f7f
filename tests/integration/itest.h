/*
 * itest.h - helpers of the integration suites: a fresh database with a rule
 * set applied, and direct reads for asserting what is stored.
 *
 * With RLSTORE_TEST_PG set to the URI of a live PostgreSQL database
 * (tests/pg/), it_new gives each test a fresh schema of that database
 * instead of a SQLite file, and it_sql_int / it_sql_exec read and write it
 * through libpq: the same suites then run against the PostgreSQL backend.
 * IT_SQLITE_ONLY() skips a test that is about SQLite files themselves.
 */
#ifndef RLS_ITEST_H
#define RLS_ITEST_H

#include <sqlite3.h>
#include <libpq-fe.h>
#include <unistd.h>
#include "testutil.h"
#include "rlstore.h"

/* The base URI of the PostgreSQL test database, or NULL: SQLite. */
static inline const char *it_pg(void)
{
    const char *u = getenv("RLSTORE_TEST_PG");
    return u && *u ? u : NULL;
}

#define IT_SQLITE_ONLY()                                                      \
    do {                                                                      \
        if (it_pg())                                                          \
            skip();                                                           \
    } while (0)

/* Skips a test that is about the PostgreSQL backend alone. */
#define IT_PG_ONLY()                                                          \
    do {                                                                      \
        if (!it_pg())                                                         \
            skip();                                                           \
    } while (0)

static inline int it_is_uri(const char *path)
{
    return strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0;
}

/* Runs sql on the database of uri (a base URI or a per-test one); the
 * result of a query, or NULL after fail_msg.  The suites' queries are
 * written for SQLite: "AS BLOB" (keys are bytes) becomes "AS bytea". */
static inline PGresult *it_pg_run(const char *uri, const char *sql)
{
    size_t n = strlen(sql), o = 0;
    char *q = malloc(n * 2 + 1);
    assert_non_null(q);
    for (size_t i = 0; i < n;) {
        if (strncmp(sql + i, "AS BLOB", 7) == 0) {
            memcpy(q + o, "AS bytea", 8);
            o += 8;
            i += 7;
        } else {
            q[o++] = sql[i++];
        }
    }
    q[o] = '\0';
    PGconn *c = PQconnectdb(uri);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("cannot connect to the PostgreSQL test server: %s", PQerrorMessage(c));
    /* a lock left by a test is an error, not a hang */
    PQclear(PQexec(c, "SET client_min_messages = warning; SET lock_timeout = '60s'"));
    PGresult *r = PQexec(c, q);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
        fail_msg("sql %s: %s", q, PQerrorMessage(c));
    free(q);
    PQfinish(c);
    return r;
}

/* A fresh, empty schema of the test database: its URI in buf. */
static inline void it_pg_schema(char *buf, size_t size, char *name, size_t namesize)
{
    static int seq;
    char sql[256];
    snprintf(name, namesize, "t_%d_%d", (int)getpid(), ++seq);
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", name, name);
    PQclear(it_pg_run(it_pg(), sql));
    const char *base = it_pg();
    snprintf(buf, size, "%s%soptions=-csearch_path%%3D%s", base, strchr(base, '?') ? "&" : "?",
             name);
}

/* Drops the schema name of the test database, with all it holds. */
static inline void it_pg_drop_schema(const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", name);
    PQclear(it_pg_run(it_pg(), sql));
}

#define T0 1767225600000LL  /* 2026-01-01T00:00:00Z */

typedef struct itest {
    char *dir;
    char path[4096];
    char schema[64];   /* PostgreSQL: the test's schema */
    rls_db *db;
} itest;

/* Opens a new database and applies yaml (if not NULL). */
static inline itest *it_new(const char *yaml)
{
    itest *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->dir = tu_mkdtemp();
    assert_non_null(t->dir);
    if (it_pg())
        it_pg_schema(t->path, sizeof t->path, t->schema, sizeof t->schema);
    else
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
    if (t->schema[0])
        it_pg_drop_schema(t->schema);
    tu_rmdir(t->dir);
    free(t);
}

/* One check through db that must succeed; returns allowed. */
/* SQLite: a handle of its own with a short busy timeout (30 ms), and
 * another connection holding the write lock, so that a check that needs
 * the database fails with RLS_EBUSY. */
static inline rls_db *it_short_handle(const itest *t)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.busy_timeout_ms = 30;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    return db;
}

static inline sqlite3 *it_lock_db(const itest *t)
{
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open(t->path, &s), SQLITE_OK);
    assert_int_equal(sqlite3_exec(s, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    return s;
}

static inline void it_unlock_db(sqlite3 *s)
{
    assert_int_equal(sqlite3_exec(s, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
}

static inline int it_check_on(rls_db *db, const char *action, const char *key, int64_t cost,
                              int64_t now, rls_result *res)
{
    rls_result tmp;
    rls_result *r = res ? res : &tmp;
    int rc = rls_check_at(db, action, key, cost, now, r);
    if (rc != RLS_OK)
        fail_msg("check %s %s: %s: %s", action, key, rls_errname(rc), rls_errmsg(db));
    return r->allowed;
}

/* The same through t's handle. */
static inline int it_check(itest *t, const char *action, const char *key, int64_t cost,
                           int64_t now, rls_result *res)
{
    return it_check_on(t->db, action, key, cost, now, res);
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

/* rls_usage_count_at() of action (NULL: every action), which must succeed. */
static inline int64_t it_usage_count(rls_db *db, const char *action, int64_t now)
{
    rls_usage_query q;
    int64_t n = -1;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.action = action;
    q.limit = 1;
    int rc = rls_usage_count_at(db, &q, now, &n);
    if (rc != RLS_OK)
        fail_msg("count %s: %s: %s", action ? action : "(all)", rls_errname(rc), rls_errmsg(db));
    return n;
}

/* The metric rows (name, action) of rls_metrics_at(db, now), summed over
 * their labels, or the row of label alone (0 without one). */
static inline int64_t it_metric(rls_db *db, int64_t now, const char *name, const char *action,
                                const char *label)
{
    rls_rows *rows = NULL;
    int64_t sum = 0;
    int rc = rls_metrics_at(db, now, &rows);
    if (rc != RLS_OK)
        fail_msg("metrics: %s: %s", rls_errname(rc), rls_errmsg(db));
    for (int r = 0; r < rls_rows_count(rows); r++)
        if (strcmp(rls_rows_text(rows, r, 0), name) == 0 &&
            strcmp(rls_rows_text(rows, r, 1), action) == 0 &&
            (!label || strcmp(rls_rows_text(rows, r, 2), label) == 0))
            sum += rls_rows_int(rows, r, 3);
    rls_rows_free(rows);
    return sum;
}

/* A scalar from a direct read-only query on the database file. */
static inline int64_t it_sql_int(const char *path, const char *sql)
{
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (it_is_uri(path)) {
        PGresult *r = it_pg_run(path, sql);
        if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) {
            const char *x = PQgetvalue(r, 0, 0);
            v = x[0] == 't' ? 1 : x[0] == 'f' ? 0 : strtoll(x, NULL, 10);
        }
        PQclear(r);
        return v;
    }
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
    if (it_is_uri(path)) {
        PQclear(it_pg_run(path, sql));
        return;
    }
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(s, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("sql: %s", err ? err : "?");
    sqlite3_close(s);
}

#endif
