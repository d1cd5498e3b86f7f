/*
 * test_penalty.c - block_for arithmetic (core/penalty.c): which step of an
 * escalating list applies, when the level is forgotten, the block's end
 * and its forget time at the ends of the time range, and how a penalty
 * raises the denial's retry and reset; which of a key's blocks applies.
 */
#include "testutil.h"
#include "penalty.h"

#define NOW 1767225600000LL
#define H 3600000LL
#define D (24 * H)

static rule_limit steps(int n, const int64_t *ms)
{
    rule_limit l;
    memset(&l, 0, sizeof l);
    for (int i = 0; i < n; i++)
        l.block_for[i] = ms[i];
    l.nblock_for = n;
    return l;
}

static penalty_prev prev_of(int kind, int level, int64_t forget)
{
    penalty_prev p = {1, kind, level, forget};
    return p;
}

static void test_first_offence(void **state)
{
    const int64_t ms[] = {H, 6 * H, D};
    rule_limit l = steps(3, ms);
    penalty_step s;
    penalty_prev none = {0, 0, 0, 0};
    (void)state;
    rls__penalty_next(&l, &none, NOW, &s);
    assert_int_equal(s.level, 0);
    assert_int_equal(s.dur_ms, H);
    assert_int_equal(s.until_ms, NOW + H);
    assert_int_equal(s.forget_ms, NOW + H + D);   /* the end plus the last step */
    rls__penalty_next(&l, NULL, NOW, &s);
    assert_int_equal(s.level, 0);
    /* an operator's block (kind manual) is not a step of the list */
    penalty_prev manual = prev_of(BLOCK_MANUAL, 2, NOW + D);
    rls__penalty_next(&l, &manual, NOW, &s);
    assert_int_equal(s.level, 0);
    /* a row that was not found says nothing, whatever its fields */
    penalty_prev gone = {0, BLOCK_PENALTY, 1, NOW + D};
    rls__penalty_next(&l, &gone, NOW, &s);
    assert_int_equal(s.level, 0);
}

static void test_escalation_and_last_step(void **state)
{
    const int64_t ms[] = {H, 6 * H, D};
    rule_limit l = steps(3, ms);
    penalty_step s;
    (void)state;
    penalty_prev p = prev_of(BLOCK_PENALTY, 0, NOW + 1);
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 1);
    assert_int_equal(s.dur_ms, 6 * H);
    assert_int_equal(s.until_ms, NOW + 6 * H);
    assert_int_equal(s.forget_ms, NOW + 6 * H + D);
    p.level = 1;
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 2);
    assert_int_equal(s.dur_ms, D);
    p.level = 2;                       /* the last step repeats */
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 2);
    assert_int_equal(s.dur_ms, D);
    assert_int_equal(s.forget_ms, NOW + 2 * D);
    /* one step: always it */
    rule_limit one = steps(1, ms);
    rls__penalty_next(&one, &p, NOW, &s);
    assert_int_equal(s.level, 0);
    assert_int_equal(s.forget_ms, NOW + 2 * H);
}

/* The level is remembered while now < forget_ms, and only then. */
static void test_forget_time(void **state)
{
    const int64_t ms[] = {H, 6 * H, D};
    rule_limit l = steps(3, ms);
    penalty_step s;
    (void)state;
    penalty_prev p = prev_of(BLOCK_PENALTY, 1, NOW + D);
    rls__penalty_next(&l, &p, NOW + D - 1, &s);
    assert_int_equal(s.level, 2);
    rls__penalty_next(&l, &p, NOW + D, &s);
    assert_int_equal(s.level, 0);
    rls__penalty_next(&l, &p, NOW + D + 1, &s);
    assert_int_equal(s.level, 0);
}

/* Ends past 9999 are kept at RLS_TIME_MAX, the end and the forget time
 * each on its own. */
static void test_time_range_ends(void **state)
{
    const int64_t ms[] = {H, D};
    rule_limit l = steps(2, ms);
    penalty_step s;
    (void)state;
    rls__penalty_next(&l, NULL, RLS_TIME_MAX - 1000, &s);
    assert_int_equal(s.until_ms, RLS_TIME_MAX);
    assert_int_equal(s.forget_ms, RLS_TIME_MAX);
    assert_int_equal(s.dur_ms, H);              /* the wait is still the step's */
    rls__penalty_next(&l, NULL, RLS_TIME_MAX - H - 1, &s);
    assert_int_equal(s.until_ms, RLS_TIME_MAX - 1);
    assert_int_equal(s.forget_ms, RLS_TIME_MAX);
    rls__penalty_next(&l, NULL, RLS_TIME_MAX - H - D - 1, &s);
    assert_int_equal(s.until_ms, RLS_TIME_MAX - D - 1);
    assert_int_equal(s.forget_ms, RLS_TIME_MAX - 1);
    rls__penalty_next(&l, NULL, RLS_TIME_MAX, &s);
    assert_int_equal(s.until_ms, RLS_TIME_MAX);
    rls__penalty_next(&l, NULL, RLS_TIME_MIN, &s);
    assert_int_equal(s.until_ms, H);
    assert_int_equal(s.forget_ms, H + D);

    assert_int_equal(rls__time_end(0, 0), 0);
    assert_int_equal(rls__time_end(NOW, 5), NOW + 5);
    assert_int_equal(rls__time_end(RLS_TIME_MAX - 5, 4), RLS_TIME_MAX - 1);
    assert_int_equal(rls__time_end(RLS_TIME_MAX - 5, 5), RLS_TIME_MAX);
    assert_int_equal(rls__time_end(RLS_TIME_MAX - 5, 6), RLS_TIME_MAX);
    assert_int_equal(rls__time_end(RLS_TIME_MAX, 0), RLS_TIME_MAX);
    assert_int_equal(rls__time_end(NOW, INT64_MAX), RLS_TIME_MAX);
}

/* A level stored outside the list (written by hand) is never an index. */
static void test_stored_level_out_of_list(void **state)
{
    const int64_t ms[] = {H, 6 * H, D};
    rule_limit l = steps(3, ms);
    penalty_step s;
    (void)state;
    penalty_prev p = prev_of(BLOCK_PENALTY, 99, NOW + 1);
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 2);
    p.level = 2147483647;
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 2);
    p.level = -1;
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 0);
    p.level = -7;
    rls__penalty_next(&l, &p, NOW, &s);
    assert_int_equal(s.level, 0);
}

static void test_raise(void **state)
{
    rls_result r;
    (void)state;
    memset(&r, 0, sizeof r);
    r.retry_after_ms = 500;
    r.reset_ms = 800;
    rls__penalty_raise(&r, H);
    assert_int_equal(r.retry_after_ms, H);
    assert_int_equal(r.reset_ms, H);
    r.retry_after_ms = 2 * H;                   /* a longer wait stays */
    r.reset_ms = 3 * H;
    rls__penalty_raise(&r, H);
    assert_int_equal(r.retry_after_ms, 2 * H);
    assert_int_equal(r.reset_ms, 3 * H);
    r.retry_after_ms = -1;                      /* never stays never */
    r.reset_ms = 0;
    rls__penalty_raise(&r, H);
    assert_int_equal(r.retry_after_ms, -1);
    assert_int_equal(r.reset_ms, H);
    r.retry_after_ms = 0;
    rls__penalty_raise(&r, 1);
    assert_int_equal(r.retry_after_ms, 1);
}

/* Which of a key's block rows applies (keyctx.c): the active one that
 * ends last, forever first. */
static void test_block_strength(void **state)
{
    (void)state;
    assert_true(rls__block_active(0, NOW));          /* forever */
    assert_true(rls__block_active(NOW + 1, NOW));
    assert_false(rls__block_active(NOW, NOW));       /* ends at now: over */
    assert_false(rls__block_active(NOW - H, NOW));
    assert_true(rls__block_outlasts(0, 0, NOW + H));          /* the first found */
    assert_true(rls__block_outlasts(1, NOW + H, NOW + D));
    assert_false(rls__block_outlasts(1, NOW + D, NOW + H));
    assert_false(rls__block_outlasts(1, NOW + H, NOW + H));   /* the first of equals */
    assert_true(rls__block_outlasts(1, NOW + D, 0));          /* forever outlasts all */
    assert_false(rls__block_outlasts(1, 0, NOW + D));
    assert_true(rls__block_outlasts(1, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_offence),
        cmocka_unit_test(test_escalation_and_last_step),
        cmocka_unit_test(test_forget_time),
        cmocka_unit_test(test_time_range_ends),
        cmocka_unit_test(test_stored_level_out_of_list),
        cmocka_unit_test(test_raise),
        cmocka_unit_test(test_block_strength),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
