/*
 * test_split.c - the privilege-separated deployment (docs/SECURITY.md):
 * rules, tiers, assignments, overrides, manual blocks and audit in a rules
 * database that applications open read-only (rules_read_only), counters,
 * reservations, penalty blocks and stats in a counters database they write.
 *
 * What is asserted: an application handle admits exactly and writes only
 * the counters file; an admin handle's changes reach the application
 * handle's next check; the application handle's admin writes fail with
 * EREADONLY and change nothing; files are never taken for one another
 * (EROLE); a pair at an older schema is migrated; listings see both files;
 * reservations live in the counters file.  Groups, file permissions and
 * fork: test_split_perm.c.
 */
#include "splittest.h"

extern const char *const rls__migrations[];
extern const int rls__migration_count;

/* ---- the application handle counts exactly, in the counters file ---- */

static void app_counts_in_counters_file(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    assert_int_equal(admit_n(p->app, "api", "192.0.2.1", 5, T0), 3);
    assert_int_equal(admit_n(p->app, "api", "192.0.2.2", 2, T0 + 1), 2);
    assert_int_equal(admit_n(p->admin, "api", "192.0.2.2", 3, T0 + 2), 1);
    rls_close(p->app);   /* flushes its stats */
    p->app = NULL;
    assert_int_equal(count(p->counters, "rls_state", NULL), 2);
    assert_int_equal(count(p->rules, "rls_state", NULL), 0);
    assert_true(count(p->counters, "rls_stats_total", NULL) > 0);
    assert_int_equal(count(p->rules, "rls_stats_total", NULL), 0);
    /* rules live in the rules file only */
    assert_int_equal(count(p->rules, "rls_rulesets", NULL), 1);
    assert_int_equal(count(p->counters, "rls_rulesets", NULL), 0);
    assert_int_equal(count(p->counters, "rls_limits", NULL), 0);
    assert_int_equal(it_sql_int(p->rules, "SELECT role FROM rls_role"), 1);
    assert_int_equal(it_sql_int(p->counters, "SELECT role FROM rls_role"), 2);
    assert_int_equal(it_sql_int(p->rules, "SELECT pair_id = (SELECT 1) FROM rls_role"), 0);
    /* the pairing is audited in the rules file */
    assert_int_equal(count(p->rules, "rls_audit", "op = 'split.pair'"), 1);
    assert_int_equal(count(p->counters, "rls_audit", NULL), 0);
    pair_free(p);
}

static void penalties_go_to_counters_file(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    rls_result r;
    assert_int_equal(admit_n(p->app, "login", "alice", 3, T0), 2);   /* third: penalty */
    assert_int_equal(count(p->counters, "rls_blocks", "kind = 1"), 1);
    assert_int_equal(count(p->rules, "rls_blocks", NULL), 0);
    assert_int_equal(rls_check_at(p->app, "login", "alice", 1, T0 + 120000, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* the escalation remembers the first penalty: 6h next time */
    assert_int_equal(admit_n(p->app, "login", "alice", 3, T0 + 3600000 + 1), 2);
    assert_int_equal(it_sql_int(p->counters, "SELECT level FROM rls_blocks"), 1);
    /* the admin handle sees it too, and lifts it (both files change) */
    assert_int_equal(rls_check_at(p->admin, "login", "alice", 1, T0 + 3600000 + 2, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(rls_block_unset_at(p->admin, "login", "alice", T0 + 3600000 + 3), RLS_OK);
    assert_int_equal(count(p->counters, "rls_blocks", NULL), 0);
    assert_int_equal(count(p->rules, "rls_audit", "op = 'unblock'"), 1);
    /* the next window: no penalty left to deny it */
    assert_int_equal(check(p->app, "login", "alice", T0 + 3600000 + 60000, &r), 1);
    pair_free(p);
}

/* A penalty that has ended: while it remembers its level, lifting it
 * forgets the level (the counters file's row goes); once forgotten it is
 * nothing to lift, and a manual block set over it still removes its row. */
static void ended_penalties_in_the_counters_file(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    const int64_t H = 3600000;
    assert_int_equal(admit_n(p->app, "login", "carol", 3, T0), 2);   /* 1h, kept 7h */
    assert_int_equal(rls_block_unset_at(p->admin, "login", "carol", T0 + 2 * H), RLS_OK);
    assert_int_equal(count(p->counters, "rls_blocks", NULL), 0);
    assert_int_equal(rls_block_unset_at(p->admin, "login", "carol", T0 + 2 * H), RLS_ENOTFOUND);
    assert_int_equal(admit_n(p->app, "login", "alice", 3, T0), 2);
    assert_int_equal(rls_block_unset_at(p->admin, "login", "alice", T0 + 7 * H), RLS_ENOTFOUND);
    assert_int_equal(rls_block_set_at(p->admin, "login", "alice", T0 + 9 * H, "m", T0 + 8 * H),
                     RLS_OK);
    assert_int_equal(count(p->counters, "rls_blocks", NULL), 0);
    assert_int_equal(count(p->rules, "rls_blocks", NULL), 1);
    assert_int_equal(rls_block_unset_at(p->admin, "login", "alice", T0 + 9 * H), RLS_ENOTFOUND);
    pair_free(p);
}

/* The end of a penalty in the counters file is recorded when the admin
 * handle removes its row, as a sweep would have: lifted while it still
 * remembers its level, replaced by a manual block, or by unblock --all
 * (events.c; before, these three left no 'expire' event unless a sweep
 * had run first). */
static void ended_penalty_removed_keeps_its_end_split(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    const int64_t H = 3600000;
    int64_t n = -1;
    const char *keys[] = {"ann", "bob", "cy"};
    for (int k = 0; k < 3; k++)
        assert_int_equal(admit_n(p->app, "login", keys[k], 3, T0), 2);   /* 1h, kept 7h */
    assert_int_equal(rls_block_unset_at(p->admin, "login", "ann", T0 + 2 * H), RLS_OK);
    assert_int_equal(rls_block_set_at(p->admin, "login", "bob", 0, "m", T0 + 2 * H), RLS_OK);
    assert_int_equal(rls_block_unset_all_at(p->admin, NULL, T0 + 2 * H, &n), RLS_OK);
    assert_int_equal(n, 1);   /* bob's manual block */
    assert_int_equal(count(p->counters, "rls_blocks", NULL), 0);
    assert_int_equal(count(p->counters, "rls_events", "event = 'expire'"), 3);
    assert_int_equal(count(p->counters, "rls_events", "event = 'expire' AND ts_ms = 1767229200000"),
                     3);   /* T0 + 1h, each */
    pair_free(p);
}

/* ---- admin changes reach the application's next check ---------------- */

/* A few checks on other keys: the application handle then trusts what it
 * knew (storage/cache.c) and skips rereading rules and policy rows. */
static void settle(pair *p, int64_t now)
{
    check(p->app, "api", "198.51.100.1", now, NULL);
    check(p->app, "api", "198.51.100.2", now, NULL);
    check(p->app, "api", "198.51.100.3", now, NULL);
}

static void admin_changes_seen_by_app(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    rls_result r;
    int64_t v = 0;
    settle(p, T0);
    /* manual block, then unblock */
    assert_int_equal(rls_block_set_at(p->admin, "api", "10.0.0.1", 0, "abuse", T0), RLS_OK);
    assert_int_equal(rls_check_at(p->app, "api", "10.0.0.1", 1, T0, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    settle(p, T0);
    assert_int_equal(rls_block_unset_at(p->admin, "api", "10.0.0.1", T0), RLS_OK);
    assert_int_equal(check(p->app, "api", "10.0.0.1", T0, NULL), 1);
    /* an all-actions block */
    settle(p, T0);
    assert_int_equal(rls_block_set_at(p->admin, NULL, "10.0.0.9", 0, "all", T0), RLS_OK);
    assert_int_equal(rls_check_at(p->app, "api", "10.0.0.9", 1, T0, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* CIDR tier (cached with the rules) and exact tier (a row of the key) */
    settle(p, T0);
    assert_int_equal(rls_tier_set_at(p->admin, "10.1.0.0/16", "pro", 0, T0), RLS_OK);
    assert_int_equal(admit_n(p->app, "api", "10.1.2.3", 8, T0), 6);
    settle(p, T0);
    assert_int_equal(rls_tier_set_at(p->admin, "10.2.2.2", "pro", 0, T0), RLS_OK);
    assert_int_equal(admit_n(p->app, "api", "10.2.2.2", 8, T0), 6);
    /* override */
    settle(p, T0);
    assert_int_equal(rls_override_set_at(p->admin, "api", "10.3.3.3", "day", 1, 0, T0), RLS_OK);
    assert_int_equal(admit_n(p->app, "api", "10.3.3.3", 3, T0), 1);
    /* new rules, then rollback to the first version */
    settle(p, T0);
    assert_int_equal(rls_rules_apply_at(p->admin, RULES_MORE, strlen(RULES_MORE), "more",
                                        NULL, T0, &v), RLS_OK);
    assert_int_equal(v, 2);
    assert_int_equal(admit_n(p->app, "api", "10.4.4.4", 7, T0), 5);
    settle(p, T0);
    assert_int_equal(rls_rules_rollback_at(p->admin, 1, "back", T0, &v), RLS_OK);
    assert_int_equal(admit_n(p->app, "api", "10.5.5.5", 5, T0), 3);
    /* reset: the application's counters of a key go */
    assert_int_equal(admit_n(p->app, "api", "10.6.6.6", 4, T0), 3);
    settle(p, T0);
    assert_int_equal(rls_reset_at(p->admin, "api", "10.6.6.6", T0), RLS_OK);
    assert_int_equal(admit_n(p->app, "api", "10.6.6.6", 4, T0), 3);
    assert_int_equal(rls_reset_at(p->admin, "api", "10.99.0.1", T0), RLS_ENOTFOUND);
    /* every change is audited in the rules file */
    assert_int_equal(count(p->rules, "rls_audit", "op = 'reset'"), 1);
    assert_int_equal(count(p->rules, "rls_audit", "op = 'rules.apply'"), 2);
    assert_int_equal(count(p->counters, "rls_audit", NULL), 0);
    pair_free(p);
}

/* The application handle's admin writes fail with EREADONLY and change
 * nothing in either file. */
static void app_admin_writes_refused(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    int64_t v = 0;
    rls_result r;
    assert_int_equal(admit_n(p->app, "api", "10.0.0.1", 1, T0), 1);
    int64_t audit = count(p->rules, "rls_audit", NULL);
    int rc[] = {
        rls_block_set_at(p->app, "api", "10.0.0.1", 0, "x", T0),
        rls_block_unset_at(p->app, "api", "10.0.0.1", T0),
        rls_tier_set_at(p->app, "10.0.0.0/8", "pro", 0, T0),
        rls_tier_assign_at(p->app, "api", "10.0.0.2", "pro", 0, T0),
        rls_override_set_at(p->app, "api", "10.0.0.1", "day", 100, 0, T0),
        rls_rules_apply_at(p->app, RULES_MORE, strlen(RULES_MORE), "x", NULL, T0, &v),
        rls_rules_apply_if_at(p->app, RULES_MORE, strlen(RULES_MORE), "x", NULL, 1, T0, &v),
        rls_rules_rollback_at(p->app, 1, NULL, T0, &v),
        rls_reset_at(p->app, "api", "10.0.0.1", T0),
    };
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++)
        if (rc[i] != RLS_EREADONLY)
            fail_msg("admin write %zu: %s, expected EREADONLY", i, rls_errname(rc[i]));
    assert_non_null(strstr(rls_errmsg(p->app), "rules_read_only"));
    assert_int_equal(count(p->rules, "rls_audit", NULL), audit);
    assert_int_equal(count(p->rules, "rls_rulesets", NULL), 1);
    assert_int_equal(count(p->rules, "rls_blocks", NULL), 0);
    assert_int_equal(count(p->rules, "rls_assignments", NULL), 0);
    assert_int_equal(count(p->rules, "rls_overrides", NULL), 0);
    assert_int_equal(count(p->counters, "rls_state", NULL), 1);
    assert_int_equal(rls_check_at(p->app, "api", "10.0.0.1", 1, T0, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    /* GC of the application handle leaves the rules file alone */
    assert_int_equal(rls_gc_at(p->app, 100, T0 + 86400000LL * 3, NULL), RLS_OK);
    pair_free(p);
}

/* ---- roles ------------------------------------------------------------ */

static void roles_refused(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    rls_db *db = NULL;
    rls_options o;
    char other[4096], single[4096];
    /* each file of the pair alone */
    assert_int_equal(rls_open(&db, p->rules, NULL), RLS_EROLE);
    assert_null(db);
    assert_non_null(strstr(rls_errmsg(NULL), "rules database of a split deployment"));
    assert_int_equal(rls_open(&db, p->counters, NULL), RLS_EROLE);
    assert_non_null(strstr(rls_errmsg(NULL), "counters database"));
    /* the files swapped */
    rls_options_init(&o);
    o.counters_path = p->rules;
    assert_int_equal(rls_open(&db, p->counters, &o), RLS_EROLE);
    assert_non_null(strstr(rls_errmsg(NULL), "is a counters database, not a rules database"));
    /* a second, unrelated rules file with these counters */
    tu_path(other, sizeof other, p->dir, "other-rules.db");
    o.counters_path = p->counters;
    assert_int_equal(rls_open(&db, other, &o), RLS_EROLE);
    assert_non_null(strstr(rls_errmsg(NULL), "another rules database"));
    /* a used single file is no counters file, nor a rules file */
    tu_path(single, sizeof single, p->dir, "single.db");
    assert_int_equal(rls_open(&db, single, NULL), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "r", NULL, T0, NULL), RLS_OK);
    assert_int_equal(admit_n(db, "api", "192.0.2.1", 1, T0), 1);
    rls_close(db);
    db = NULL;
    o.counters_path = single;
    assert_int_equal(rls_open(&db, p->rules, &o), RLS_EROLE);
    assert_non_null(strstr(rls_errmsg(NULL), "not a new counters database"));
    o.counters_path = p->counters;
    assert_int_equal(rls_open(&db, single, &o), RLS_EROLE);
    assert_non_null(strstr(rls_errmsg(NULL), "has counted checks"));
    /* the same file for both */
    o.counters_path = p->rules;
    assert_int_equal(rls_open(&db, p->rules, &o), RLS_EINVAL);
    /* rules_read_only means nothing without counters */
    rls_options_init(&o);
    o.rules_read_only = 1;
    assert_int_equal(rls_open(&db, single, &o), RLS_EINVAL);
    /* an application cannot make a new file the rules file */
    tu_path(other, sizeof other, p->dir, "empty-rules.db");
    it_sql_exec(other, "PRAGMA user_version = 0");   /* an empty file */
    o = opts(p, 1);
    assert_int_equal(rls_open(&db, other, &o), RLS_EREADONLY);   /* needs its schema */
    /* a new counters file for existing rules is fine (counters start over) */
    tu_path(other, sizeof other, p->dir, "counters2.db");
    o = opts(p, 1);
    o.counters_path = other;
    assert_int_equal(rls_open(&db, p->rules, &o), RLS_OK);
    assert_int_equal(admit_n(db, "api", "192.0.2.1", 4, T0), 3);
    rls_close(db);
    /* nothing above changed the roles */
    assert_int_equal(it_sql_int(p->rules, "SELECT role FROM rls_role"), 1);
    assert_int_equal(it_sql_int(p->counters, "SELECT role FROM rls_role"), 2);
    assert_int_equal(it_sql_int(single, "SELECT role FROM rls_role"), 0);
    pair_free(p);
}

/* ---- migration -------------------------------------------------------- */

/* A file at schema version `ver` as an older library left it. */
static void make_old(const char *path, int ver)
{
    char sql[128];
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    assert_int_equal(sqlite3_exec(s, "PRAGMA page_size = 1024; PRAGMA journal_mode = WAL",
                                  NULL, NULL, NULL), SQLITE_OK);
    for (int v = 0; v < ver; v++)
        assert_int_equal(sqlite3_exec(s, rls__migrations[v], NULL, NULL, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d; PRAGMA application_id = %d", ver,
             0x524c5354);
    assert_int_equal(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
}

static void old_pair_is_migrated(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp();
    char rules[4096], counters[4096], sql[4096];
    rls_db *db = NULL;
    rls_options o;
    int old = rls__migration_count - 1;
    tu_path(rules, sizeof rules, dir, "rules.db");
    tu_path(counters, sizeof counters, dir, "counters.db");
    make_old(rules, old);
    make_old(counters, old);
    /* the rules file holds rules, an assignment and their audit, as a
     * single file that never counted a check would */
    snprintf(sql, sizeof sql,
             "INSERT INTO rls_rulesets(version, created_ms, os_user, tool, yaml)"
             " VALUES (1, %lld, 'op', 'rlctl', '%s');"
             "INSERT INTO rls_limits(lid, action, name) VALUES (1, 'api', 'day'),"
             " (2, 'login', 'burst');"
             "UPDATE rls_meta SET active_version = 1, rules_gen = 1;"
             "INSERT INTO rls_assignments(pattern, action, kind, tier, created_ms)"
             " VALUES (CAST('10.7.7.7' AS BLOB), '', 0, 'pro', %lld);"
             "INSERT INTO rls_audit(ts_ms, os_user, tool, op) VALUES (%lld, 'op', 'rlctl',"
             " 'rules.apply');",
             (long long)T0, RULES, (long long)T0, (long long)T0);
    it_sql_exec(rules, sql);
    /* an application cannot upgrade the rules: a named error */
    rls_options_init(&o);
    o.counters_path = counters;
    o.rules_read_only = 1;
    assert_int_equal(rls_open(&db, rules, &o), RLS_EREADONLY);
    assert_non_null(strstr(rls_errmsg(NULL), "needs an upgrade"));
    assert_non_null(strstr(rls_errmsg(NULL), "admin tool"));
    assert_int_equal(it_sql_int(rules, "PRAGMA user_version"), old);
    /* an admin handle upgrades both and pairs them */
    o.rules_read_only = 0;
    assert_int_equal(rls_open(&db, rules, &o), RLS_OK);
    assert_int_equal(it_sql_int(rules, "PRAGMA user_version"), rls__migration_count);
    assert_int_equal(it_sql_int(counters, "PRAGMA user_version"), rls__migration_count);
    assert_int_equal(it_sql_int(rules, "SELECT role FROM rls_role"), 1);
    assert_int_equal(it_sql_int(counters, "SELECT role FROM rls_role"), 2);
    /* the data is kept and decides */
    assert_int_equal(admit_n(db, "api", "10.7.7.7", 8, T0), 6);     /* pro */
    assert_int_equal(admit_n(db, "api", "10.7.7.8", 4, T0), 3);     /* free */
    assert_int_equal(count(rules, "rls_audit", "op = 'rules.apply'"), 1);
    rls_close(db);
    /* now the application opens them */
    o.rules_read_only = 1;
    assert_int_equal(rls_open(&db, rules, &o), RLS_OK);
    assert_int_equal(admit_n(db, "api", "10.7.7.8", 1, T0), 0);
    rls_close(db);
    tu_rmdir(dir);
}

/* ---- listings see both files ------------------------------------------ */

static void listings_see_both_files(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    rls_rows *r = NULL, *info = NULL, *lim = NULL;
    assert_int_equal(admit_n(p->app, "login", "bob", 3, T0), 2);      /* penalty */
    assert_int_equal(rls_block_set_at(p->admin, "api", "10.9.9.9", 0, "manual", T0), RLS_OK);
    assert_int_equal(admit_n(p->app, "api", "10.8.8.8", 3, T0), 3);  /* at its limit */
    /* the application handle lists blocks of both files */
    assert_int_equal(rls_block_list_at(p->app, T0 + 1, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "10.9.9.9");
    assert_string_equal(rls_rows_text(r, 0, col(r, "kind")), "manual");
    assert_string_equal(rls_rows_text(r, 1, col(r, "key")), "bob");
    assert_string_equal(rls_rows_text(r, 1, col(r, "kind")), "penalty");
    rls_rows_free(r);
    /* usage: the blocked keys of both files, and the key at its limit */
    rls_usage_query q = {sizeof q, "api", NULL, RLS_SORT_USED, 0, 10};
    assert_int_equal(rls_usage_at(p->admin, &q, T0 + 1, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "10.9.9.9");
    assert_int_equal(rls_rows_int(r, 0, col(r, "blocked")), 1);
    assert_string_equal(rls_rows_text(r, 1, col(r, "key")), "10.8.8.8");
    assert_string_equal(rls_rows_text(r, 1, col(r, "state")), "limited");
    rls_rows_free(r);
    q.action = "login";
    assert_int_equal(rls_usage_at(p->app, &q, T0 + 1, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_string_equal(rls_rows_text(r, 0, col(r, "state")), "blocked");
    rls_rows_free(r);
    /* explain: the penalty's rule and reason, the manual block's reason */
    assert_int_equal(rls_explain_at(p->app, "login", "bob", T0 + 1, &info, &lim), RLS_OK);
    assert_int_equal(rls_rows_int(info, 0, col(info, "blocked")), 1);
    assert_string_equal(rls_rows_text(info, 0, col(info, "block_rule")), "burst");
    assert_string_equal(rls_rows_text(info, 0, col(info, "block_reason")), "penalty");
    rls_rows_free(info);
    rls_rows_free(lim);
    assert_int_equal(rls_explain_at(p->app, "api", "10.9.9.9", T0 + 1, &info, NULL), RLS_OK);
    assert_string_equal(rls_rows_text(info, 0, col(info, "block_reason")), "manual");
    rls_rows_free(info);
    /* audit and versions come from the rules file */
    assert_int_equal(rls_audit_list(p->app, "10.9.9.9", 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_string_equal(rls_rows_text(r, 0, col(r, "op")), "block");
    rls_rows_free(r);
    assert_int_equal(rls_rules_versions(p->app, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_int_equal(rls_rows_int(r, 0, col(r, "active")), 1);
    rls_rows_free(r);
    /* a read-only handle (rltop of a user who may write neither file) */
    rls_db *ro = NULL;
    rls_options o = opts(p, 0);
    rls_result res;
    o.read_only = 1;
    assert_int_equal(rls_open(&ro, p->rules, &o), RLS_OK);
    assert_int_equal(rls_block_list_at(ro, T0 + 1, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);
    rls_rows_free(r);
    assert_int_equal(rls_peek_at(ro, "api", "10.8.8.8", 1, T0 + 1, &res), RLS_OK);
    assert_int_equal(res.reason, RLS_REASON_LIMIT);
    assert_int_equal(rls_check_at(ro, "api", "10.8.8.7", 1, T0 + 1, &res), RLS_EREADONLY);
    rls_close(ro);
    /* a manual block on a penalised key: both rows, then unblock removes both */
    assert_int_equal(rls_block_set_at(p->admin, "login", "bob", T0 + 60000, "calm", T0), RLS_OK);
    assert_int_equal(count(p->counters, "rls_blocks", NULL), 0);   /* replaced, as in one file */
    assert_int_equal(count(p->rules, "rls_blocks", "key = CAST('bob' AS BLOB)"), 1);
    assert_int_equal(check(p->app, "login", "bob", T0 + 60001, NULL), 1);
    pair_free(p);
}

/* ---- reservations ----------------------------------------------------- */

static void reservations_in_counters_file(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    rls_result r;
    int64_t a = 0, b = 0, c = 0;
    assert_int_equal(rls_reserve_at(p->app, "api", "192.0.2.5", 1, 1000, T0, &a, &r), RLS_OK);
    assert_int_equal(rls_reserve_at(p->app, "api", "192.0.2.5", 1, 1000, T0, &b, &r), RLS_OK);
    assert_int_equal(rls_reserve_at(p->app, "api", "192.0.2.5", 1, 1000, T0, &c, &r), RLS_OK);
    assert_true(a > 0 && b > a && c > b);
    assert_int_equal(count(p->counters, "rls_reservations", NULL), 3);
    assert_int_equal(count(p->rules, "rls_reservations", NULL), 0);
    assert_int_equal(check(p->app, "api", "192.0.2.5", T0, NULL), 0);
    assert_int_equal(rls_commit_at(p->app, a, T0 + 10), RLS_OK);
    assert_int_equal(rls_cancel_at(p->app, b, T0 + 10), RLS_OK);     /* one back */
    assert_int_equal(admit_n(p->app, "api", "192.0.2.5", 2, T0 + 20), 1);
    /* c expires unresolved: refunded at the key's next check */
    assert_int_equal(rls_commit_at(p->admin, c, T0 + 5000), RLS_EEXPIRED);
    assert_int_equal(admit_n(p->app, "api", "192.0.2.5", 2, T0 + 5001), 1);
    assert_int_equal(count(p->counters, "rls_reservations", NULL), 0);
    pair_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(app_counts_in_counters_file),
        cmocka_unit_test(penalties_go_to_counters_file),
        cmocka_unit_test(ended_penalties_in_the_counters_file),
        cmocka_unit_test(ended_penalty_removed_keeps_its_end_split),
        cmocka_unit_test(admin_changes_seen_by_app),
        cmocka_unit_test(app_admin_writes_refused),
        cmocka_unit_test(roles_refused),
        cmocka_unit_test(old_pair_is_migrated),
        cmocka_unit_test(listings_see_both_files),
        cmocka_unit_test(reservations_in_counters_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
