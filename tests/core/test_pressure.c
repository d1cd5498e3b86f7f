/*
 * test_pressure.c - how much of a limit is used (core/pressure.c): units
 * in use, the fraction in parts per million, "half used" and the state a
 * usage row shows (blocked, limited, shadow, near, ok) and what a check
 * records in the per-key stats.
 */
#include "testutil.h"
#include "pressure.h"

static rls_result result(int allowed, int reason, int64_t limit, int64_t remaining)
{
    rls_result r;
    memset(&r, 0, sizeof r);
    r.allowed = allowed;
    r.reason = reason;
    r.limit = limit;
    r.remaining = remaining;
    return r;
}

static void test_used(void **state)
{
    rls_result r = result(1, RLS_REASON_OK, 10, 4);
    algo_meta m;
    (void)state;
    memset(&m, 0, sizeof m);
    assert_int_equal(rls__pressure_used(&r, NULL), 6);
    m.used = 7;                      /* 7 of 2 under an unlimited tier */
    r = result(1, RLS_REASON_OK, 2, 0);
    assert_int_equal(rls__pressure_used(&r, &m), 7);
    assert_int_equal(rls__pressure_used(&r, NULL), 2);
    r = result(1, RLS_REASON_OK, 5, 9);   /* never below 0 */
    assert_int_equal(rls__pressure_used(&r, NULL), 0);
    r = result(1, RLS_REASON_OK, 5, 5);
    assert_int_equal(rls__pressure_used(&r, NULL), 0);
}

static void test_ppm(void **state)
{
    (void)state;
    assert_int_equal(rls__pressure_ppm(1, 2), 500000);
    assert_int_equal(rls__pressure_ppm(7, 2), 3500000);      /* past the capacity */
    assert_int_equal(rls__pressure_ppm(1, 3), 333333);       /* truncated */
    assert_int_equal(rls__pressure_ppm(2, 3), 666666);
    assert_int_equal(rls__pressure_ppm(0, 3), 0);
    assert_int_equal(rls__pressure_ppm(10, 10), PRESSURE_PPM);
    assert_int_equal(rls__pressure_ppm(5, 0), 0);
    assert_int_equal(rls__pressure_ppm(5, -1), 0);
    assert_int_equal(rls__pressure_ppm(999999999999LL, 1000000000000LL), 999999);
    assert_int_equal(rls__pressure_ppm(INT64_MAX, 1), INT64_MAX);   /* kept in range */
    assert_int_equal(rls__pressure_ppm(INT64_MIN, 1), INT64_MIN);
    assert_int_equal(rls__pressure_ppm(-1, 2), -500000);
}

static void test_hot(void **state)
{
    (void)state;
    assert_false(rls__pressure_hot(PRESSURE_HOT_PPM - 1));
    assert_true(rls__pressure_hot(PRESSURE_HOT_PPM));
    assert_true(rls__pressure_hot(PRESSURE_PPM));
    assert_false(rls__pressure_hot(0));
    assert_int_equal(PRESSURE_HOT_PPM, 500000);
    /* the SQL form of the recent-pressure window says the same */
    assert_int_equal(strtoll(PRESSURE_RECENT_SQL, NULL, 10), PRESSURE_RECENT_MS);
    assert_int_equal(PRESSURE_RECENT_MS, 24 * 3600 * 1000);
}

static void test_state(void **state)
{
    rls_result ok = result(1, RLS_REASON_OK, 10, 5);
    rls_result denied = result(0, RLS_REASON_LIMIT, 10, 0);
    rls_result shadow = result(1, RLS_REASON_SHADOW, 10, 5);
    (void)state;
    assert_string_equal(rls__pressure_state(1, 0, &ok, 0), "blocked");
    assert_string_equal(rls__pressure_state(1, 0, &denied, PRESSURE_PPM), "blocked");
    assert_string_equal(rls__pressure_state(0, 0, &denied, 0), "limited");
    assert_string_equal(rls__pressure_state(0, 0, &shadow, PRESSURE_PPM), "shadow");
    assert_string_equal(rls__pressure_state(0, 0, &ok, PRESSURE_NEAR_PPM - 1), "ok");
    assert_string_equal(rls__pressure_state(0, 0, &ok, PRESSURE_NEAR_PPM), "near");
    assert_string_equal(rls__pressure_state(0, 0, &ok, 3500000), "near");
    assert_int_equal(PRESSURE_NEAR_PPM, 800000);
    /* an unlimited tier is never near, however far past its limit
     * (117 of 5 used); blocked and shadow still say so */
    assert_string_equal(rls__pressure_state(0, 1, &ok, 23400000), "ok");
    assert_string_equal(rls__pressure_state(0, 1, &ok, PRESSURE_NEAR_PPM), "ok");
    assert_string_equal(rls__pressure_state(1, 1, &ok, 23400000), "blocked");
    assert_string_equal(rls__pressure_state(0, 1, &shadow, 0), "shadow");
}

/* What the per-key stats record of a check (keystats.c). */
static void test_of_check(void **state)
{
    int64_t ppm = -1;
    (void)state;
    rls_result denied = result(0, RLS_REASON_LIMIT, 10, 0);
    assert_true(rls__pressure_of_check(&denied, &ppm));
    assert_int_equal(ppm, PRESSURE_PPM);        /* a denial counts as all used */
    rls_result blocked = result(0, RLS_REASON_BLOCKED, 0, 0);
    assert_true(rls__pressure_of_check(&blocked, &ppm));
    assert_int_equal(ppm, PRESSURE_PPM);
    rls_result half = result(1, RLS_REASON_OK, 10, 5);
    assert_true(rls__pressure_of_check(&half, &ppm));
    assert_int_equal(ppm, PRESSURE_HOT_PPM);    /* the threshold itself counts */
    rls_result under = result(1, RLS_REASON_OK, 10, 6);
    assert_false(rls__pressure_of_check(&under, &ppm));
    rls_result nolimit = result(1, RLS_REASON_OK, 0, 0);
    assert_false(rls__pressure_of_check(&nolimit, &ppm));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_used),
        cmocka_unit_test(test_ppm),
        cmocka_unit_test(test_hot),
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_of_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
