/*
 * splittest.h - helpers of the split-deployment suites (test_split.c,
 * test_split_perm.c): a pair of rules and counters files created by an
 * admin handle with RULES applied, and an application handle on them.
 */
#ifndef RLS_SPLITTEST_H
#define RLS_SPLITTEST_H

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "itest.h"

static const char *const RULES =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    "  api:\n"
    "    key: ip\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 3, window: 1d } ]\n"
    "    tiers:\n"
    "      pro: [ { name: day, limit: 6 } ]\n"
    "  login:\n"
    "    limits: [ { name: burst, algorithm: fixed_window, limit: 2, window: 1m,"
    " block_for: [1h, 6h] } ]\n";

static const char *const RULES_MORE =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    "  api:\n"
    "    key: ip\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 5, window: 1d } ]\n"
    "  login:\n"
    "    limits: [ { name: burst, algorithm: fixed_window, limit: 2, window: 1m,"
    " block_for: [1h, 6h] } ]\n";

typedef struct pair {
    char *dir;
    char rules[4096], counters[4096];
    rls_db *admin, *app;
} pair;

static inline rls_options opts(const pair *p, int app)
{
    rls_options o;
    rls_options_init(&o);
    o.counters_path = p->counters;
    o.rules_read_only = app;
    o.tool = app ? "app" : "admin";
    return o;
}

/* An admin handle creates both files and applies RULES; an application
 * handle opens them. */
static inline pair *pair_new(void)
{
    pair *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->dir = tu_mkdtemp();
    tu_path(p->rules, sizeof p->rules, p->dir, "rules.db");
    tu_path(p->counters, sizeof p->counters, p->dir, "counters.db");
    rls_options o = opts(p, 0);
    int rc = rls_open(&p->admin, p->rules, &o);
    if (rc != RLS_OK)
        fail_msg("admin open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    rc = rls_rules_apply_at(p->admin, RULES, strlen(RULES), "rules.yaml", NULL, T0, NULL);
    if (rc != RLS_OK)
        fail_msg("apply: %s: %s", rls_errname(rc), rls_errmsg(p->admin));
    o = opts(p, 1);
    if ((rc = rls_open(&p->app, p->rules, &o)) != RLS_OK)
        fail_msg("app open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return p;
}

static inline void pair_free(pair *p)
{
    rls_close(p->app);
    rls_close(p->admin);
    tu_rmdir(p->dir);
    free(p);
}

static inline int check(rls_db *db, const char *action, const char *key, int64_t now, rls_result *r)
{
    return it_check_on(db, action, key, 1, now, r);
}

static inline int admit_n(rls_db *db, const char *action, const char *key, int n, int64_t now)
{
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += check(db, action, key, now, NULL);
    return ok;
}

static inline int64_t count(const char *path, const char *table, const char *where)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s%s%s", table, where ? " WHERE " : "",
             where ? where : "");
    return it_sql_int(path, sql);
}

static inline int col(const rls_rows *r, const char *name)
{
    int c = rls_rows_find(r, name);
    if (c < 0)
        fail_msg("no column '%s'", name);
    return c;
}

#endif
