/*
 * test_time_ends.c - every algorithm at both ends of the accepted time
 * range (issue #17, defect 4 and its class).
 *
 * The accepted range is RLS_TIME_MIN..RLS_TIME_MAX (1970-01-01 to
 * 9999-12-31T23:59:59.999Z).  For every algorithm (fixed_window aligned and
 * first-hit, calendar windows 1d/1w/1mo in time zones on both sides of UTC,
 * sliding_window, sliding_log, token_bucket, gcra, leaky_bucket), 25 checks
 * of one key a millisecond apart at the earliest and at the latest accepted
 * times admit exactly the limit (10), and no result says a wait longer than
 * the limit's own window.  The same at 2262-04-12 (where ns overflow int64).
 * Penalty blocks, reservations and GC at the latest time stay within the
 * range; one millisecond outside it is ETIME for every entry point that
 * takes a time.  Runs on SQLite and (make test-pg) PostgreSQL.
 */
#include "reltest.h"

#define MIN_MS 60000LL
#define DAY_MS 86400000LL
#define N_TRIES 25

typedef struct algo_case {
    const char *action;
    int64_t longest;   /* the longest wait the limit can report, ms */
} algo_case;

static const algo_case CASES[] = {
    {"fw", MIN_MS},
    {"fw_day", DAY_MS + 3600000},
    {"fw_week", 7 * DAY_MS + 3600000},
    {"fw_month", 31 * DAY_MS + 3600000},
    {"fw_first", MIN_MS},
    {"sw", 2 * MIN_MS},   /* the current count weighs until the next end */
    {"sw_month", 62 * DAY_MS + 3600000},
    {"sl", MIN_MS},
    {"tb", MIN_MS},
    {"gc", MIN_MS},
    {"lb", MIN_MS},
};
#define NCASES (sizeof CASES / sizeof CASES[0])

static const char *const RULES =
    "version: 1\n"
    "actions:\n"
    "  fw: { limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1m } ] }\n"
    "  fw_day: { limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1d,"
    " timezone: Pacific/Kiritimati } ] }\n"
    "  fw_week: { limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1w,"
    " timezone: America/Los_Angeles } ] }\n"
    "  fw_month: { limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1mo,"
    " timezone: Asia/Tokyo } ] }\n"
    "  fw_first: { limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1m,"
    " anchor: first_hit } ] }\n"
    "  sw: { limits: [ { name: l, algorithm: sliding_window, limit: 10, window: 1m } ] }\n"
    "  sw_month: { limits: [ { name: l, algorithm: sliding_window, limit: 10, window: 1mo,"
    " timezone: America/Los_Angeles } ] }\n"
    "  sl: { limits: [ { name: l, algorithm: sliding_log, limit: 10, window: 1m } ] }\n"
    "  tb: { limits: [ { name: l, algorithm: token_bucket, limit: 10, window: 1m } ] }\n"
    "  gc: { limits: [ { name: l, algorithm: gcra, limit: 10, window: 1m } ] }\n"
    "  lb: { limits: [ { name: l, algorithm: leaky_bucket, limit: 10, window: 1m } ] }\n"
    "  pen: { limits: [ { name: l, algorithm: fixed_window, limit: 1, window: 1m,"
    " block_for: [1d, 1w] } ] }\n";

/* 25 checks of every algorithm from t0 on, one ms apart: exactly 10 are
 * admitted and no wait is longer than the window. */
static void run_end(itest *t, int64_t t0, const char *key)
{
    for (size_t c = 0; c < NCASES; c++) {
        int admitted = 0;
        for (int i = 0; i < N_TRIES; i++) {
            rls_result r;
            admitted += it_check(t, CASES[c].action, key, 1, t0 + i, &r);
            if (r.reset_ms < 0 || r.reset_ms > CASES[c].longest ||
                r.retry_after_ms < 0 || r.retry_after_ms > CASES[c].longest)
                fail_msg("%s at %lld: reset %lld retry %lld, window %lld", CASES[c].action,
                         (long long)(t0 + i), (long long)r.reset_ms,
                         (long long)r.retry_after_ms, (long long)CASES[c].longest);
        }
        if (admitted != 10)
            fail_msg("%s from %lld: %d of %d admitted, limit 10", CASES[c].action,
                     (long long)t0, admitted, N_TRIES);
    }
}

static void test_earliest(void **state)
{
    itest *t = it_new(RULES);
    (void)state;
    run_end(t, RLS_TIME_MIN, "k");
    it_free(t);
}

static void test_latest(void **state)
{
    itest *t = it_new(RULES);
    (void)state;
    run_end(t, RLS_TIME_MAX - (N_TRIES - 1), "k");
    it_free(t);
}

/* The case: from 2262-04-12, where a TAT in ns overflows int64. */
static void test_year_2262(void **state)
{
    itest *t = it_new(RULES);
    (void)state;
    run_end(t, 9223372036854LL - 10, "k");      /* just before the overflow */
    run_end(t, 9223372036854LL + 86400000, "k2"); /* 2262-04-12 */
    it_free(t);
}

/* A penalty at the latest time ends within the range (or never), and the
 * block is listed and in force. */
static void test_penalty_at_latest(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    rls_rows *rows = NULL;
    int64_t t0 = RLS_TIME_MAX - 1000;
    (void)state;
    assert_true(it_check(t, "pen", "p", 1, t0, &r));
    assert_false(it_check(t, "pen", "p", 1, t0 + 1, &r));
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    assert_false(it_check(t, "pen", "p", 1, t0 + 2, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    int64_t until = it_sql_int(t->path, "SELECT max(until_ms) FROM rls_blocks");
    int64_t forget = it_sql_int(t->path, "SELECT max(forget_ms) FROM rls_blocks");
    assert_true(until >= t0 && until <= RLS_TIME_MAX);
    assert_true(forget >= until && forget <= RLS_TIME_MAX);
    assert_int_equal(rls_block_list_at(t->db, RLS_TIME_MAX, &rows), RLS_OK);
    rls_rows_free(rows);
    assert_false(it_check(t, "pen", "p", 1, RLS_TIME_MAX - 1, &r));
    it_free(t);
}

/* A reservation at the latest time: its TTL end is kept within the range. */
static void test_reservation_at_latest(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0, id2 = 0;
    (void)state;
    assert_int_equal(rls_reserve_at(t->db, "fw", "r", 3, 60000, RLS_TIME_MAX - 10, &id, &r),
                     RLS_OK);
    assert_true(r.allowed && id > 0);
    assert_int_equal(rls_commit_at(t->db, id, RLS_TIME_MAX - 5), RLS_OK);
    assert_int_equal(rls_reserve_at(t->db, "gc", "r", 2, RLS_TIME_MAX, RLS_TIME_MAX, &id2, &r),
                     RLS_OK);
    assert_true(r.allowed && id2 > 0);
    assert_true(it_sql_int(t->path, "SELECT max(expires_ms) FROM rls_reservations") <=
                RLS_TIME_MAX);
    assert_int_equal(rls_cancel_at(t->db, id2, RLS_TIME_MAX), RLS_OK);
    it_free(t);
}

/* GC at either end deletes nothing that still counts. */
static void test_gc_at_ends(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    (void)state;
    for (int e = 0; e < 2; e++) {
        int64_t t0 = e ? RLS_TIME_MAX - 100 : RLS_TIME_MIN;
        const char *key = e ? "late" : "early";
        for (size_t c = 0; c < NCASES; c++)
            for (int i = 0; i < 10; i++)
                assert_true(it_check(t, CASES[c].action, key, 1, t0, &r));
        assert_int_equal(rls_gc_at(t->db, 1000, t0 + 50, NULL), RLS_OK);
        for (size_t c = 0; c < NCASES; c++)
            if (it_check(t, CASES[c].action, key, 1, t0 + 50, &r))
                fail_msg("%s: admitted after GC at %lld", CASES[c].action, (long long)t0);
    }
    it_free(t);
}

/* One ms outside the range is ETIME for each entry point taking a time. */
static void test_outside_is_etime(void **state)
{
    itest *t = it_new(RULES);
    const int64_t bad[2] = {RLS_TIME_MIN - 1, RLS_TIME_MAX + 1};
    rls_result r;
    int64_t id;
    (void)state;
    for (int i = 0; i < 2; i++) {
        int64_t now = bad[i];
        for (size_t c = 0; c < NCASES; c++) {
            assert_int_equal(rls_check_at(t->db, CASES[c].action, "k", 1, now, &r), RLS_ETIME);
            assert_int_equal(r.allowed, 0);
            assert_int_equal(rls_peek_at(t->db, CASES[c].action, "k", 1, now, &r), RLS_ETIME);
            assert_int_equal(rls_refund_at(t->db, CASES[c].action, "k", 1, now), RLS_ETIME);
            assert_int_equal(rls_reserve_at(t->db, CASES[c].action, "k", 1, 1000, now, &id, &r),
                             RLS_ETIME);
        }
        assert_int_equal(rls_gc_at(t->db, 10, now, NULL), RLS_ETIME);
        assert_int_equal(rls_rules_apply_at(t->db, RULES, strlen(RULES), "t", NULL, now, NULL),
                         RLS_ETIME);
    }
    it_free(t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_earliest),
        cmocka_unit_test(test_latest),
        cmocka_unit_test(test_year_2262),
        cmocka_unit_test(test_penalty_at_latest),
        cmocka_unit_test(test_reservation_at_latest),
        cmocka_unit_test(test_gc_at_ends),
        cmocka_unit_test(test_outside_is_etime),
    };
    rel_init(argc > 0 ? argv[0] : NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
