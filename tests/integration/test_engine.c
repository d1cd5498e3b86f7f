/*
 * test_engine.c - the check engine end to end on real databases: the worked
 * examples of the algorithms through rls_check, all-or-nothing multi-limit
 * charging, peek, refund, clock safety, stats and live rule pick-up.
 */
#include "itest.h"
#include "pg/pg.h"   /* to look at the connection's synchronous level (db.h too) */
#include "sqlite/lite.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  fw:\n"
    "    limits: [ { name: sec, algorithm: fixed_window, limit: 2, window: 1s } ]\n"
    "  sw:\n"
    "    limits: [ { name: min, algorithm: sliding_window, limit: 100, window: 1m } ]\n"
    "  g:\n"
    "    limits: [ { name: rate, algorithm: gcra, limit: 1, window: 1s, burst: 5 } ]\n"
    "  lb:\n"
    "    limits: [ { name: shape, algorithm: leaky_bucket, limit: 1, window: 1s, burst: 6 } ]\n"
    "  tb:\n"
    "    limits: [ { name: bucket, algorithm: token_bucket, limit: 10, window: 1s, burst: 3 } ]\n"
    "  log:\n"
    "    limits: [ { name: exact, algorithm: sliding_log, limit: 3, window: 10s } ]\n"
    "  multi:\n"
    "    limits:\n"
    "      - { name: persec, algorithm: fixed_window, limit: 2, window: 1s }\n"
    "      - { name: permin, algorithm: fixed_window, limit: 5, window: 1m }\n"
    "  soft:\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 10, window: 1d, overage: 20 } ]\n"
    "  shadowed:\n"
    "    limits:\n"
    "      - { name: real, algorithm: fixed_window, limit: 5, window: 1m }\n"
    "      - { name: trial, algorithm: fixed_window, limit: 1, window: 1m, mode: shadow }\n";

static void fixed_window_worked_example(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "fw", "k", 1, T0, &r));
    assert_true(it_check(t, "fw", "k", 1, T0, &r));
    assert_false(it_check(t, "fw", "k", 1, T0, &r));
    assert_int_equal(r.retry_after_ms, 1000);
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    assert_string_equal(r.rule, "sec");
    assert_int_equal(r.remaining, 0);
    assert_true(it_check(t, "fw", "k", 1, T0 + 1000, &r));
    assert_int_equal(r.remaining, 1);
    it_free(t);
}

static void sliding_window_worked_example_75s(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "sw", "k", 100, T0 + 15000), 100);
    assert_int_equal(it_admit_n(t, "sw", "k", 200, T0 + 75000), 25);
    it_free(t);
}

static void sliding_window_worked_example_105s(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "sw", "k", 100, T0 + 15000), 100);
    assert_int_equal(it_admit_n(t, "sw", "k", 200, T0 + 105000), 75);
    it_free(t);
}

static void gcra_worked_example(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_int_equal(it_admit_n(t, "g", "k", 5, T0), 5);
    assert_false(it_check(t, "g", "k", 1, T0, &r));
    assert_int_equal(r.retry_after_ms, 1000);
    assert_int_equal(r.reset_ms, 5000);
    assert_int_equal(r.limit, 5);
    assert_false(it_check(t, "g", "k2", 6, T0, &r));
    assert_int_equal(r.retry_after_ms, -1);
    assert_int_equal(r.reason, RLS_REASON_COST_EXCEEDS);
    it_free(t);
}

static void leaky_bucket_worked_example(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    for (int i = 0; i < 6; i++) {
        assert_true(it_check(t, "lb", "k", 1, T0, &r));
        assert_int_equal(r.delay_ms, 1000 * i);
    }
    assert_false(it_check(t, "lb", "k", 1, T0, &r));
    assert_true(it_check(t, "lb", "k", 1, T0 + 1000, &r));
    assert_int_equal(r.delay_ms, 5000);
    it_free(t);
}

static void token_bucket_refills(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_int_equal(it_admit_n(t, "tb", "k", 5, T0), 3);
    /* 10 per second = one token per 100 ms */
    assert_false(it_check(t, "tb", "k", 1, T0 + 99, &r));
    assert_int_equal(r.retry_after_ms, 1);
    assert_true(it_check(t, "tb", "k", 1, T0 + 100, &r));
    it_free(t);
}

static void sliding_log_is_exact(void **state)
{
    itest *t = it_new(RULES);
    assert_true(it_check(t, "log", "k", 1, T0, NULL));
    assert_true(it_check(t, "log", "k", 1, T0 + 4000, NULL));
    assert_true(it_check(t, "log", "k", 1, T0 + 9000, NULL));
    assert_false(it_check(t, "log", "k", 1, T0 + 9999, NULL));
    assert_true(it_check(t, "log", "k", 1, T0 + 10000, NULL));   /* first fell out */
    assert_false(it_check(t, "log", "k", 1, T0 + 13999, NULL));
    assert_true(it_check(t, "log", "k", 1, T0 + 14000, NULL));
    it_free(t);
}

static void multi_limit_denial_charges_neither(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    /* 2 per second and 5 per minute */
    assert_int_equal(it_admit_n(t, "multi", "k", 2, T0), 2);
    assert_false(it_check(t, "multi", "k", 1, T0, &r));
    assert_string_equal(r.rule, "persec");
    /* the per-second denial charged nothing to the per-minute limit */
    assert_int_equal(it_admit_n(t, "multi", "k", 2, T0 + 1000), 2);
    assert_int_equal(it_admit_n(t, "multi", "k", 2, T0 + 2000), 1);
    assert_false(it_check(t, "multi", "k", 1, T0 + 3000, &r));
    assert_string_equal(r.rule, "permin");
    assert_int_equal(r.retry_after_ms, 57000);
    /* stored: per-minute count is exactly 5 */
    assert_int_equal(it_sql_int(t->path,
        "SELECT b FROM rls_state s JOIN rls_limits l USING(lid) WHERE l.name LIKE 'permin_%'"), 5);
    it_free(t);
}

static void deciding_limit_is_least_remaining_fraction(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "multi", "k", 1, T0, &r));
    /* persec 1/2 left (0.5) vs permin 4/5 left (0.8) */
    assert_string_equal(r.rule, "persec");
    assert_int_equal(r.remaining, 1);
    assert_int_equal(r.limit, 2);
    it_free(t);
}

static void peek_charges_nothing(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    for (int i = 0; i < 5; i++)
        assert_int_equal(rls_peek_at(t->db, "fw", "k", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 2);
    assert_int_equal(it_admit_n(t, "fw", "k", 3, T0), 2);
    assert_int_equal(rls_peek_at(t->db, "fw", "k", 1, T0, &r), RLS_OK);
    assert_false(r.allowed);
    it_free(t);
}

static void refund_gives_units_back(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "fw", "k", 2, T0), 2);
    assert_int_equal(rls_refund_at(t->db, "fw", "k", 1, T0 + 10), RLS_OK);
    assert_int_equal(it_admit_n(t, "fw", "k", 3, T0 + 20), 1);
    /* a refund never lifts a counter above capacity */
    assert_int_equal(rls_refund_at(t->db, "fw", "k", 50, T0 + 30), RLS_OK);
    assert_int_equal(it_admit_n(t, "fw", "k", 5, T0 + 40), 2);
    it_free(t);
}

static void clock_step_back_gives_no_extra_quota(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_int_equal(it_admit_n(t, "fw", "k", 2, T0 + 5000), 2);
    /* the clock steps back one hour: still the same (full) window */
    assert_false(it_check(t, "fw", "k", 1, T0 + 5000 - 3600000, &r));
    assert_true(r.retry_after_ms > 0);
    assert_int_equal(r.retry_after_ms, 1000 + 3600000);
    it_free(t);
}

static void soft_limit_admits_overage(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    /* 10 per day with 20% overage: 12 admitted, remaining reports 0 */
    assert_int_equal(it_admit_n(t, "soft", "k", 11, T0), 11);
    assert_true(it_check(t, "soft", "k", 1, T0, &r));
    assert_int_equal(r.remaining, 0);
    assert_int_equal(r.limit, 10);
    assert_false(it_check(t, "soft", "k", 1, T0, &r));
    it_free(t);
}

static void shadow_limit_never_denies(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "shadowed", "k", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_OK);
    assert_true(it_check(t, "shadowed", "k", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_SHADOW);
    assert_int_equal(it_admit_n(t, "shadowed", "k", 10, T0), 3);
    it_free(t);
}

static void keys_are_independent_and_binary_safe(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "fw", "a", 3, T0), 2);
    assert_int_equal(it_admit_n(t, "fw", "b", 3, T0), 2);
    assert_int_equal(it_admit_n(t, "fw", "a'; DROP TABLE rls_state; --", 3, T0), 2);
    assert_int_equal(it_admit_n(t, "fw", "\xff\x01\x7f", 3, T0), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 4);
    it_free(t);
}

static void rule_change_reaches_open_handle(void **state)
{
    itest *t = it_new(RULES);
    rls_db *other;
    assert_int_equal(rls_open(&other, t->path, NULL), RLS_OK);
    rls_result r;
    assert_int_equal(rls_check_at(other, "fw", "k", 1, T0, &r), RLS_OK);
    assert_int_equal(r.limit, 2);
    const char *v2 = "version: 1\nactions:\n  fw:\n    limits: [ { name: sec, "
                     "algorithm: fixed_window, limit: 7, window: 1s } ]\n";
    int64_t ver = 0;
    assert_int_equal(rls_rules_apply_at(t->db, v2, strlen(v2), "v2", "raise", T0, &ver),
                     RLS_OK);
    assert_int_equal(ver, 2);
    assert_int_equal(rls_check_at(other, "fw", "k", 1, T0, &r), RLS_OK);
    assert_int_equal(r.limit, 7);
    assert_int_equal(r.remaining, 5);   /* the counter carried over */
    assert_int_equal(rls_check_at(other, "sw", "k", 1, T0, &r), RLS_ENOACTION);
    rls_close(other);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op='rules.apply'"), 2);
    it_free(t);
}

static void bad_rules_change_nothing(void **state)
{
    itest *t = it_new(RULES);
    const char *bad = "version: 1\nactions:\n  fw:\n    limits: [ { name: sec, "
                      "algorithm: fixed_window, limit: 7, window: 0s } ]\n";
    assert_int_equal(rls_rules_apply_at(t->db, bad, strlen(bad), "bad.yaml", NULL, T0, NULL),
                     RLS_ECONFIG);
    assert_non_null(strstr(rls_errmsg(t->db), "bad.yaml:4:"));
    rls_result r;
    assert_true(it_check(t, "fw", "k", 1, T0, &r));
    assert_int_equal(r.limit, 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_rulesets"), 1);
    it_free(t);
}

static void stats_are_written_once_a_second(void **state)
{
    itest *t = it_new(RULES);
    it_admit_n(t, "fw", "k", 3, T0);           /* 2 allowed, 1 denied */
    it_admit_n(t, "fw", "k", 1, T0 + 1500);    /* flushes the first second */
    assert_int_equal(it_sql_int(t->path,
        "SELECT allowed * 10 + denied FROM rls_stats WHERE action='fw' AND sec=1767225600"), 21);
    rls_close(t->db);                          /* close flushes the rest */
    t->db = NULL;
    assert_int_equal(it_sql_int(t->path,
        "SELECT allowed * 10 + denied FROM rls_stats_total WHERE action='fw'"), 31);
    it_free(t);
}


static void refund_of_sliding_log_takes_newest_units(void **state)
{
    itest *t = it_new(RULES);
    assert_true(it_check(t, "log", "k", 1, T0, NULL));
    assert_true(it_check(t, "log", "k", 2, T0 + 1000, NULL));
    assert_false(it_check(t, "log", "k", 1, T0 + 2000, NULL));
    assert_int_equal(rls_refund_at(t->db, "log", "k", 1, T0 + 3000), RLS_OK);
    assert_true(it_check(t, "log", "k", 1, T0 + 3000, NULL));
    assert_false(it_check(t, "log", "k", 1, T0 + 3000, NULL));
    it_free(t);
}

static void sliding_window_state_outlives_a_short_month(void **state)
{
    const char *rules = "version: 1\nactions:\n  m:\n    limits: [ { name: month, algorithm: "
                        "sliding_window, limit: 10, window: 1mo } ]\n";
    itest *t = it_new(rules);
    const int64_t feb15 = 1771113600000LL;  /* 2026-02-15T00:00:00Z */
    const int64_t mar30 = 1774828800000LL;  /* 2026-03-30T00:00:00Z */
    const int64_t apr01 = 1775001600000LL;  /* 2026-04-01T00:00:00Z */
    int64_t deleted = 0;
    assert_int_equal(it_admit_n(t, "m", "k", 10, feb15), 10);
    /* February's count weighs on all of March (31 days, not February's 28):
     * GC must keep the state until April */
    assert_int_equal(rls_gc_at(t->db, 100, mar30, &deleted), RLS_OK);
    assert_int_equal(deleted, 0);
    assert_int_equal(rls_gc_at(t->db, 100, apr01 + 1, &deleted), RLS_OK);
    assert_int_equal(deleted, 1);
    it_free(t);
}


/* SQLite: PRAGMA synchronous (1 NORMAL, 2 FULL).  PostgreSQL: the same
 * scale from the session's synchronous_commit (off 1: a commit does not
 * wait for its WAL flush; on 2: it does). */
static int64_t sync_level(rls_db *db)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (db->pg) {
        PGresult *r = PQexec(db->pg->c, "SHOW synchronous_commit");
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        const char *s = PQgetvalue(r, 0, 0);
        v = strcmp(s, "off") == 0 ? 1 : strcmp(s, "on") == 0 ? 2 : -1;
        PQclear(r);
        return v;
    }
    assert_int_equal(sqlite3_prepare_v2(db->lite->sql, "PRAGMA synchronous", -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void durability_full_limit_checks_work(void **state)
{
    const char *rules = "version: 1\nactions:\n  pay:\n    limits: [ { name: day, algorithm: "
                        "fixed_window, limit: 2, window: 1d, durability: full } ]\n"
                        "  api:\n    limits: [ { name: s, algorithm: fixed_window, limit: 9, "
                        "window: 1s } ]\n";
    itest *t = it_new(rules);
    rls_result r;
    assert_int_equal(sync_level(t->db), 1);           /* NORMAL */
    assert_true(it_check(t, "pay", "k", 1, T0, &r));  /* the first check of the handle */
    assert_int_equal(sync_level(t->db), 1);           /* restored after the commit */
    assert_true(it_check(t, "pay", "k", 1, T0, &r));
    assert_false(it_check(t, "pay", "k", 1, T0, &r));
    assert_true(it_check(t, "api", "k", 1, T0, &r));
    assert_int_equal(sync_level(t->db), 1);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_window_worked_example),
        cmocka_unit_test(sliding_window_worked_example_75s),
        cmocka_unit_test(sliding_window_worked_example_105s),
        cmocka_unit_test(gcra_worked_example),
        cmocka_unit_test(leaky_bucket_worked_example),
        cmocka_unit_test(token_bucket_refills),
        cmocka_unit_test(sliding_log_is_exact),
        cmocka_unit_test(multi_limit_denial_charges_neither),
        cmocka_unit_test(deciding_limit_is_least_remaining_fraction),
        cmocka_unit_test(peek_charges_nothing),
        cmocka_unit_test(refund_gives_units_back),
        cmocka_unit_test(clock_step_back_gives_no_extra_quota),
        cmocka_unit_test(soft_limit_admits_overage),
        cmocka_unit_test(shadow_limit_never_denies),
        cmocka_unit_test(keys_are_independent_and_binary_safe),
        cmocka_unit_test(rule_change_reaches_open_handle),
        cmocka_unit_test(bad_rules_change_nothing),
        cmocka_unit_test(stats_are_written_once_a_second),
        cmocka_unit_test(refund_of_sliding_log_takes_newest_units),
        cmocka_unit_test(sliding_window_state_outlives_a_short_month),
        cmocka_unit_test(durability_full_limit_checks_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
