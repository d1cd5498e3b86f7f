/*
 * test_algo_windows.c - core/algo.c: the window algorithms (fixed_window,
 * sliding_window, sliding_log), parameter validation, and a randomised
 * sweep over all six algorithms checking that retry_after_ms and reset_ms
 * are exact (the first instant that works, not one ms later or earlier),
 * that a peek never changes anything, and that a charge's metadata equals
 * what a peek right after it reports.
 */
#include "testutil.h"
#include "algo.h"

#include <inttypes.h>

/* A whole minute (so also a whole second) in late 2023. */
#define BASE 1699999980000LL
#define LOG_BYTES (ALGO_LOG_ENTRY * (ALGO_SLIDING_LOG_MAX + 1))

static unsigned char logbuf[LOG_BYTES];
static unsigned char logbuf2[LOG_BYTES];

static algo_params mk(int kind, int64_t limit, int64_t burst, int64_t period)
{
    algo_params p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.limit = limit;
    p.burst = burst;
    p.period_ms = period;
    return p;
}

static algo_state fresh(unsigned char *buf)
{
    algo_state st;
    memset(&st, 0, sizeof st);
    st.log = buf;
    st.log_cap = buf ? LOG_BYTES : 0;
    return st;
}

/* The window of period_ms aligned to the epoch that contains now. */
static algo_window win_at(const algo_params *p, int64_t now)
{
    algo_window w;
    w.start = now - now % p->period_ms;
    w.end = w.start + p->period_ms;
    w.prev_start = w.start - p->period_ms;
    return w;
}

static algo_meta run(const algo_params *p, algo_state *st, int64_t now,
                     int64_t cost, int charge)
{
    algo_meta m;
    algo_window w = win_at(p, now);
    memset(&m, 0x5a, sizeof m);
    assert_int_equal(rls__algo_decide(p, &w, st, now, cost, charge, &m), 0);
    return m;
}

static int take(const algo_params *p, algo_state *st, int64_t now)
{
    return run(p, st, now, 1, 1).allowed;
}

/* Requests of cost 1 at now until one is denied; returns how many passed. */
static int64_t admit_all(const algo_params *p, algo_state *st, int64_t now)
{
    int64_t n = 0;
    while (take(p, st, now))
        n++;
    return n;
}

static void refund(const algo_params *p, algo_state *st, int64_t now,
                   int64_t at, int64_t cost)
{
    algo_window w = win_at(p, now);
    assert_int_equal(rls__algo_refund(p, &w, st, now, at, cost), 0);
}

static void assert_meta(algo_meta m, int ok, int64_t rem, int64_t reset,
                        int64_t retry)
{
    assert_int_equal(m.allowed, ok);
    assert_int_equal(m.remaining, rem);
    assert_int_equal(m.reset_ms, reset);
    assert_int_equal(m.retry_after_ms, retry);
    assert_int_equal(m.delay_ms, 0);
}

/* ---- validation ---------------------------------------------------------- */

/* Expects -1 and not a byte of state or metadata changed. */
static void expect_invalid(const algo_params *p, const algo_window *w,
                           int64_t now, int64_t cost)
{
    algo_state st = fresh(logbuf), st0;
    algo_meta m, m0;
    st.present = 1;
    st.a = 7;
    st.b = 3;
    st0 = st;
    memset(&m, 0x5a, sizeof m);
    m0 = m;
    assert_int_equal(rls__algo_decide(p, w, &st, now, cost, 1, &m), -1);
    assert_int_equal(rls__algo_refund(p, w, &st, now, now, cost), -1);
    assert_memory_equal(&st, &st0, sizeof st);
    assert_memory_equal(&m, &m0, sizeof m);
}

static void test_invalid_params_rejected(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 10, 10, 1000);
    algo_window w = win_at(&p, BASE);
    (void)unused;
    p.kind = 0;
    expect_invalid(&p, &w, BASE, 1);
    p.kind = 7;
    expect_invalid(&p, &w, BASE, 1);
    p = mk(ALGO_TOKEN_BUCKET, 0, 10, 1000);
    expect_invalid(&p, &w, BASE, 1);
    p = mk(ALGO_GCRA, 10, 0, 1000);
    expect_invalid(&p, &w, BASE, 1);
    p = mk(ALGO_LEAKY_BUCKET, 10, 10, 0);
    expect_invalid(&p, &w, BASE, 1);
    p = mk(ALGO_FIXED_WINDOW, 10, 10, 1000);
    expect_invalid(&p, &w, BASE, 0);
    expect_invalid(&p, &w, BASE, -5);
    p = mk(ALGO_SLIDING_LOG, ALGO_SLIDING_LOG_MAX + 1, 1, 1000);
    expect_invalid(&p, &w, BASE, 1);
}

static void test_invalid_window_rejected(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 10, 10, 1000);
    algo_window w = win_at(&p, BASE);
    (void)unused;
    expect_invalid(&p, NULL, BASE, 1);
    expect_invalid(&p, &w, BASE + 1000, 1);  /* now past the window */
    expect_invalid(&p, &w, BASE - 1, 1);     /* now before it */
    p.kind = ALGO_SLIDING_WINDOW;
    w.prev_start = w.start;
    expect_invalid(&p, &w, BASE, 1);
}

static void test_log_needs_room_to_charge(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 3, 3, 1000);
    algo_state st = fresh(logbuf);
    algo_meta m;
    (void)unused;
    st.log_cap = ALGO_LOG_ENTRY - 1;
    assert_int_equal(rls__algo_decide(&p, NULL, &st, BASE, 1, 1, &m), -1);
    assert_int_equal(st.present, 0);
    /* a peek writes nothing, so it needs no room */
    assert_int_equal(rls__algo_decide(&p, NULL, &st, BASE, 1, 0, &m), 0);
    st.log_cap = ALGO_LOG_ENTRY;
    assert_int_equal(rls__algo_decide(&p, NULL, &st, BASE, 1, 1, &m), 0);
    assert_int_equal(st.log_len, ALGO_LOG_ENTRY);
}

/* ---- fixed_window -------------------------------------------------------- */

static void test_fixed_two_per_second(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 2, 2, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    assert_meta(run(&p, &st, BASE, 1, 1), 1, 1, 1000, 0);
    assert_meta(run(&p, &st, BASE, 1, 1), 1, 0, 1000, 0);
    assert_meta(run(&p, &st, BASE, 1, 1), 0, 0, 1000, 1000);
    assert_meta(run(&p, &st, BASE + 999, 1, 1), 0, 0, 1, 1);
    assert_meta(run(&p, &st, BASE + 1000, 1, 1), 1, 1, 1000, 0);
    assert_int_equal(run(&p, &st, BASE + 1000, 1, 1).capacity, 2);
}

static void test_fixed_denial_consumes_nothing(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 5, 5, 1000);
    algo_state st = fresh(NULL), before;
    (void)unused;
    assert_true(run(&p, &st, BASE, 4, 1).allowed);
    before = st;
    assert_meta(run(&p, &st, BASE + 10, 2, 1), 0, 1, 990, 990);
    assert_memory_equal(&st, &before, sizeof st);
    assert_meta(run(&p, &st, BASE + 10, 1, 1), 1, 0, 990, 0);
}

static void test_fixed_cost_over_limit_never(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 5, 5, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.count_denied = 1;
    assert_meta(run(&p, &st, BASE, 6, 1), 0, 5, 0, -1);
    assert_int_equal(st.present, 0);  /* not charged even with count_denied */
}

static void test_fixed_peek_reports_current_state(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 3, 3, 1000);
    algo_state st = fresh(NULL), before;
    (void)unused;
    assert_meta(run(&p, &st, BASE + 100, 1, 0), 1, 3, 0, 0);
    assert_int_equal(st.present, 0);
    run(&p, &st, BASE + 100, 2, 1);
    before = st;
    assert_meta(run(&p, &st, BASE + 200, 1, 0), 1, 1, 800, 0);
    assert_meta(run(&p, &st, BASE + 200, 2, 0), 0, 1, 800, 800);
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_fixed_count_denied(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 2, 2, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.count_denied = 1;
    run(&p, &st, BASE, 2, 1);
    assert_meta(run(&p, &st, BASE + 1, 1, 1), 0, 0, 999, 999);
    assert_int_equal(st.b, 3);
    /* the count starts over in the next window */
    assert_meta(run(&p, &st, BASE + 1000, 1, 1), 1, 1, 1000, 0);
}

static void test_fixed_state_layout_and_expiry(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 10, 10, 60000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 1234, 3, 1);
    assert_int_equal(st.present, 1);
    assert_int_equal(st.a, BASE);
    assert_int_equal(st.b, 3);
    assert_int_equal(st.last_ms, BASE + 1234);
    assert_int_equal(st.expires_ms, BASE + 60000);
    /* a stale row from an older window counts nothing */
    assert_meta(run(&p, &st, BASE + 60000, 10, 0), 1, 10, 0, 0);
}

static void test_fixed_anchor_first_hit(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 2, 2, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.anchor_first_hit = 1;
    assert_meta(run(&p, &st, BASE + 300, 1, 1), 1, 1, 1000, 0);
    assert_int_equal(st.a, BASE + 300);
    assert_int_equal(st.expires_ms, BASE + 1300);
    run(&p, &st, BASE + 900, 1, 1);
    /* the aligned boundary at BASE + 1000 does not reset the count */
    assert_meta(run(&p, &st, BASE + 1100, 1, 1), 0, 0, 200, 200);
    assert_meta(run(&p, &st, BASE + 1300, 1, 1), 1, 1, 1000, 0);
    /* after an idle gap the next window starts at the next hit */
    assert_meta(run(&p, &st, BASE + 5555, 1, 1), 1, 1, 1000, 0);
    assert_int_equal(st.a, BASE + 5555);
}

static void test_fixed_refund_same_window(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 3, 3, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 100, 3, 1);
    refund(&p, &st, BASE + 500, BASE + 100, 2);
    assert_int_equal(st.b, 1);
    assert_int_equal(st.last_ms, BASE + 500);
    assert_meta(run(&p, &st, BASE + 500, 2, 1), 1, 0, 500, 0);
    /* never below zero */
    refund(&p, &st, BASE + 600, BASE + 100, 50);
    assert_int_equal(st.b, 0);
}

static void test_fixed_refund_after_window_ignored(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, 3, 3, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 900, 3, 1);
    refund(&p, &st, BASE + 1100, BASE + 900, 3);
    assert_int_equal(st.a, BASE);
    assert_int_equal(st.b, 3);
    run(&p, &st, BASE + 1100, 3, 1);
    /* charged in the previous window: nothing of it counts any more */
    refund(&p, &st, BASE + 1200, BASE + 900, 3);
    assert_int_equal(st.b, 3);
}

static void test_fixed_saturates(void **unused)
{
    algo_params p = mk(ALGO_FIXED_WINDOW, INT64_MAX, 1, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.count_denied = 1;
    assert_meta(run(&p, &st, BASE, INT64_MAX, 1), 1, 0, 1000, 0);
    assert_meta(run(&p, &st, BASE, INT64_MAX, 1), 0, 0, 1000, 1000);
    assert_int_equal(st.b, INT64_MAX);
    p.anchor_first_hit = 1;
    p.period_ms = INT64_MAX;
    st = fresh(NULL);
    assert_meta(run(&p, &st, BASE, 5, 1), 1, INT64_MAX - 5, INT64_MAX - BASE,
                0);
    assert_int_equal(st.expires_ms, INT64_MAX);
}

/* ---- sliding_window ------------------------------------------------------ */

/* DESIGN 2: 100/min; 100 requests 15 s into minute 0; at 1m15s exactly 25
 * more are admitted (75 still weigh from the previous minute). */
static void test_sliding_cloudflare_at_1m15s(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 100, 100, 60000);
    algo_state st = fresh(NULL);
    (void)unused;
    assert_int_equal(admit_all(&p, &st, BASE + 15000), 100);
    assert_int_equal(admit_all(&p, &st, BASE + 75000), 25);
    assert_meta(run(&p, &st, BASE + 75000, 1, 0), 0, 0, 102601, 1);
}

static void test_sliding_cloudflare_at_1m45s(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 100, 100, 60000);
    algo_state st = fresh(NULL);
    (void)unused;
    assert_int_equal(admit_all(&p, &st, BASE + 15000), 100);
    assert_int_equal(admit_all(&p, &st, BASE + 105000), 75);
    assert_meta(run(&p, &st, BASE + 105000, 1, 0), 0, 0, 74201, 1);
}

static void test_sliding_weighted_remaining(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 100, 100, 60000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 15000, 100, 1);
    /* floor(100 * 30000 / 60000) = 50 weigh at 1m30s, +10 charged now */
    /* reset: the 10 weigh until floor(10 * (W - e) / W) = 0, e = 54001 */
    assert_meta(run(&p, &st, BASE + 90000, 10, 1), 1, 40, 84001, 0);
}

static void test_sliding_retry_exact_in_window(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 100, 100, 60000);
    algo_state st = fresh(NULL);
    algo_meta m;
    (void)unused;
    run(&p, &st, BASE + 15000, 100, 1);
    m = run(&p, &st, BASE + 60000, 10, 1);
    /* floor(100 * (60000 - e) / 60000) <= 90 first at e = 5401; all of
     * it has decayed (weighs 0) at e = 59401 */
    assert_meta(m, 0, 0, 59401, 5401);
    assert_false(run(&p, &st, BASE + 65400, 10, 0).allowed);
    assert_true(run(&p, &st, BASE + 65401, 10, 0).allowed);
}

static void test_sliding_retry_in_next_window(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 500, 10, 1);
    /* at BASE + 1000 the 10 still weigh fully; one ms later only 9 */
    assert_meta(run(&p, &st, BASE + 500, 1, 1), 0, 0, 1401, 501);
    assert_false(run(&p, &st, BASE + 1000, 1, 0).allowed);
    assert_true(run(&p, &st, BASE + 1001, 1, 0).allowed);
    assert_meta(run(&p, &st, BASE + 1999, 10, 0), 1, 10, 0, 0);
}

static void test_sliding_forgets_after_two_windows(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 10, 10, 1);
    assert_int_equal(st.expires_ms, BASE + 2000);
    assert_meta(run(&p, &st, BASE + 2000, 10, 1), 1, 0, 1901, 0);
    assert_int_equal(st.c, 0);
}

static void test_sliding_state_roll_and_expiry(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 10, 4, 1);
    assert_int_equal(st.a, BASE);
    assert_int_equal(st.b, 4);
    assert_int_equal(st.c, 0);
    assert_int_equal(st.last_ms, BASE + 10);
    run(&p, &st, BASE + 1500, 1, 1);
    assert_int_equal(st.a, BASE + 1000);
    assert_int_equal(st.b, 1);
    assert_int_equal(st.c, 4);
    assert_int_equal(st.expires_ms, BASE + 3000);
    /* only prev > 0 after a refund: fresh-equivalent from this window's end */
    refund(&p, &st, BASE + 1600, BASE + 1500, 1);
    assert_int_equal(st.b, 0);
    assert_int_equal(st.expires_ms, BASE + 2000);
}

static void test_sliding_denial_and_peek_change_nothing(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL), before;
    (void)unused;
    run(&p, &st, BASE + 10, 9, 1);
    before = st;
    /* at 1200 the 9 weigh floor(9 * 800 / 1000) = 7 */
    assert_false(run(&p, &st, BASE + 1200, 4, 1).allowed);
    assert_true(run(&p, &st, BASE + 1200, 3, 0).allowed);
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_sliding_cost_over_limit_never(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.count_denied = 1;
    assert_meta(run(&p, &st, BASE, 11, 1), 0, 10, 0, -1);
    assert_int_equal(st.present, 0);
}

static void test_sliding_count_denied(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.count_denied = 1;
    run(&p, &st, BASE + 500, 10, 1);
    /* the denied 5 count: curr 15, so the next window starts weighing 15 */
    assert_meta(run(&p, &st, BASE + 500, 5, 1), 0, 0, 1434, 1101);
    assert_int_equal(st.b, 15);
    assert_false(run(&p, &st, BASE + 1600, 5, 0).allowed);
    assert_true(run(&p, &st, BASE + 1601, 5, 0).allowed);
}

static void test_sliding_refund_current_and_previous(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    run(&p, &st, BASE + 100, 6, 1);
    run(&p, &st, BASE + 1100, 2, 1);
    /* at 1500 prev 6 weighs 3, curr 2: 5 left */
    assert_int_equal(run(&p, &st, BASE + 1500, 1, 0).remaining, 5);
    refund(&p, &st, BASE + 1500, BASE + 100, 4);   /* previous window */
    assert_int_equal(st.c, 2);
    assert_int_equal(run(&p, &st, BASE + 1500, 1, 0).remaining, 7);
    refund(&p, &st, BASE + 1500, BASE + 1100, 5);  /* current, capped */
    assert_int_equal(st.b, 0);
    assert_int_equal(run(&p, &st, BASE + 1500, 1, 0).remaining, 9);
    refund(&p, &st, BASE + 2500, BASE + 100, 1);   /* two windows ago */
    assert_int_equal(st.c, 2);
}

static void test_sliding_anchor_first_hit(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_WINDOW, 10, 10, 1000);
    algo_state st = fresh(NULL);
    (void)unused;
    p.anchor_first_hit = 1;
    run(&p, &st, BASE + 300, 10, 1);
    assert_int_equal(st.a, BASE + 300);
    /* the anchored window rolls at BASE + 1300, not at BASE + 1000 */
    assert_false(run(&p, &st, BASE + 1299, 1, 0).allowed);
    assert_false(run(&p, &st, BASE + 1300, 1, 0).allowed);
    /* at 1800 the 10 weigh floor(10 * 500 / 1000) = 5 */
    assert_meta(run(&p, &st, BASE + 1800, 5, 1), 1, 0, 1301, 0);
    assert_int_equal(st.a, BASE + 1300);
    assert_int_equal(st.c, 10);
    /* idle for more than a window: a new anchor at the next hit */
    run(&p, &st, BASE + 9999, 1, 1);
    assert_int_equal(st.a, BASE + 9999);
    assert_int_equal(st.c, 0);
}

static void test_sliding_huge_window_exact(void **unused)
{
    /* W of ~146 years and counts near 2^62: the weighting product does not
     * fit in 64 bits and must still be exact. */
    int64_t period = 4611686018427LL, limit = 4611686018427387903LL;
    algo_params p = mk(ALGO_SLIDING_WINDOW, limit, 1, period);
    algo_state st = fresh(NULL);
    algo_meta m;
    int64_t now;
    (void)unused;
    p.anchor_first_hit = 1;
    run(&p, &st, 0, limit, 1);
    now = period + period / 3;
    m = run(&p, &st, now, 1, 0);
    /* remaining = limit - floor(limit * (W - W/3) / W), computed exactly */
    {
        __int128 w = period, e = period / 3;
        __int128 weighted = (__int128)limit * (w - e) / w;
        assert_int_equal(m.remaining, (int64_t)(limit - weighted));
    }
    assert_true(m.allowed);
}

static void test_sliding_window_beyond_2_pow_62(void **unused)
{
    /* W > 2^62 ms, previous count > 2^62, one ms into the window: every
     * bit of the 64-bit multiplication matters.  Reference in 128 bits. */
    int64_t len = 4611686018427400000LL, prev = 4611686018427387904LL + 777;
    algo_params p = mk(ALGO_SLIDING_WINDOW, INT64_MAX, 1, len);
    algo_window w = {-len, 0, len, 0};
    algo_state st = fresh(NULL);
    algo_meta m;
    __int128 weighted = (__int128)prev * (len - 1) / len;
    int64_t cost = INT64_MAX - (int64_t)weighted + 5;
    (void)unused;
    st.present = 1;
    st.a = -len;
    st.b = prev;
    assert_int_equal(rls__algo_decide(&p, &w, &st, 1, 1, 0, &m), 0);
    assert_int_equal(m.remaining, INT64_MAX - (int64_t)weighted);
    /* denied by 5 units: retry is the first ms the weight drops by 5 */
    assert_int_equal(rls__algo_decide(&p, &w, &st, 1, cost, 0, &m), 0);
    assert_false(m.allowed);
    {
        int64_t t = 1 + m.retry_after_ms;
        __int128 at = (__int128)prev * (len - t) / len;
        __int128 before = (__int128)prev * (len - t + 1) / len;
        assert_true(at + cost <= INT64_MAX);
        assert_true(before + cost > INT64_MAX);
    }
}

/* ---- sliding_log --------------------------------------------------------- */

static int64_t entry_field(const algo_state *st, size_t i, int off)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = (v << 8) | st->log[i * ALGO_LOG_ENTRY + (size_t)off + (size_t)b];
    return (int64_t)v;
}

static void test_log_window_is_half_open(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 3, 3, 1000);
    algo_state st = fresh(logbuf);
    (void)unused;
    assert_meta(run(&p, &st, BASE + 100, 1, 1), 1, 2, 1000, 0);
    assert_meta(run(&p, &st, BASE + 400, 2, 1), 1, 0, 1000, 0);
    assert_meta(run(&p, &st, BASE + 1099, 1, 1), 0, 0, 301, 1);
    /* (now - W, now]: the unit stamped 100 is out at 1100 */
    assert_meta(run(&p, &st, BASE + 1100, 1, 1), 1, 0, 1000, 0);
    assert_meta(run(&p, &st, BASE + 1100, 2, 1), 0, 0, 1000, 300);
}

static void test_log_packed_entries(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 10, 10, 1000);
    algo_state st = fresh(logbuf);
    (void)unused;
    run(&p, &st, BASE + 1, 2, 1);
    run(&p, &st, BASE + 1, 3, 1);   /* same instant: merged */
    run(&p, &st, BASE + 7, 1, 1);
    assert_int_equal(st.a, 2);
    assert_int_equal(st.log_len, 2 * ALGO_LOG_ENTRY);
    assert_int_equal(entry_field(&st, 0, 0), BASE + 1);
    assert_int_equal(entry_field(&st, 0, 8), 5);
    assert_int_equal(entry_field(&st, 1, 0), BASE + 7);
    assert_int_equal(entry_field(&st, 1, 8), 1);
    assert_int_equal(st.log[0], (unsigned char)((BASE + 1) & 0xff)); /* LE */
    assert_int_equal(st.expires_ms, BASE + 1007);
    assert_int_equal(st.last_ms, BASE + 7);
}

static void test_log_drops_old_entries_when_charging(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 10, 10, 1000);
    algo_state st = fresh(logbuf), before;
    (void)unused;
    run(&p, &st, BASE, 1, 1);
    run(&p, &st, BASE + 500, 1, 1);
    before = st;
    run(&p, &st, BASE + 1200, 1, 0);   /* a peek drops nothing */
    assert_memory_equal(&st, &before, sizeof st);
    run(&p, &st, BASE + 1200, 1, 1);
    assert_int_equal(st.a, 2);
    assert_int_equal(entry_field(&st, 0, 0), BASE + 500);
    assert_int_equal(entry_field(&st, 1, 0), BASE + 1200);
}

static void test_log_retry_walks_oldest_first(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 5, 5, 1000);
    algo_state st = fresh(logbuf);
    (void)unused;
    run(&p, &st, BASE + 100, 1, 1);
    run(&p, &st, BASE + 200, 2, 1);
    run(&p, &st, BASE + 300, 2, 1);
    /* 3 needed: 1 leaves at 1100, 2 more at 1200 */
    assert_meta(run(&p, &st, BASE + 400, 3, 1), 0, 0, 900, 800);
    assert_false(run(&p, &st, BASE + 1199, 3, 0).allowed);
    assert_true(run(&p, &st, BASE + 1200, 3, 0).allowed);
}

static void test_log_cost_over_limit_never(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 5, 5, 1000);
    algo_state st = fresh(logbuf);
    (void)unused;
    p.count_denied = 1;
    assert_meta(run(&p, &st, BASE, 6, 1), 0, 5, 0, -1);
    assert_int_equal(st.present, 0);
}

static void test_log_count_denied_stays_bounded(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 3, 3, 1000);
    algo_state st = fresh(logbuf);
    (void)unused;
    p.count_denied = 1;
    for (int i = 0; i < 3; i++)
        assert_true(take(&p, &st, BASE + i));
    for (int i = 3; i < 50; i++)
        assert_false(take(&p, &st, BASE + i));
    /* at most `limit` entries; the merged denials count from the last one */
    assert_int_equal(st.a, 3);
    assert_int_equal(entry_field(&st, 2, 0), BASE + 49);
    assert_int_equal(entry_field(&st, 2, 8), 48);
    assert_meta(run(&p, &st, BASE + 1000, 1, 0), 0, 0, 49, 49);
    assert_true(run(&p, &st, BASE + 1049, 3, 0).allowed);
}

static void test_log_refund_matching_units(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, 5, 5, 1000);
    algo_state st = fresh(logbuf);
    (void)unused;
    run(&p, &st, BASE + 100, 2, 1);
    run(&p, &st, BASE + 200, 3, 1);
    refund(&p, &st, BASE + 300, BASE + 200, 1);
    assert_int_equal(entry_field(&st, 1, 8), 2);
    refund(&p, &st, BASE + 300, BASE + 150, 1);    /* newest at or before 150 */
    assert_int_equal(entry_field(&st, 0, 8), 1);
    assert_int_equal(run(&p, &st, BASE + 300, 1, 0).remaining, 2);
    refund(&p, &st, BASE + 300, BASE + 100, 9);    /* entry removed */
    assert_int_equal(st.a, 1);
    assert_int_equal(entry_field(&st, 0, 0), BASE + 200);
    assert_int_equal(st.expires_ms, BASE + 1200);
    refund(&p, &st, BASE + 1200, BASE + 200, 2);   /* already out */
    assert_int_equal(st.a, 0);
    assert_int_equal(st.log_len, 0);
}

static void test_log_full_capacity(void **unused)
{
    algo_params p = mk(ALGO_SLIDING_LOG, ALGO_SLIDING_LOG_MAX, 1, 60000);
    algo_state st = fresh(logbuf);
    (void)unused;
    for (int64_t i = 0; i < ALGO_SLIDING_LOG_MAX; i++)
        assert_true(take(&p, &st, BASE + i));
    assert_int_equal(st.a, ALGO_SLIDING_LOG_MAX);
    assert_meta(run(&p, &st, BASE + 20000, 1, 1), 0, 0, 49999, 40000);
}

/* ---- properties over all algorithms -------------------------------------- */

static uint64_t rng = 88172645463325252ULL;

static int64_t rnd(int64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

/* Peeking at now + d: copies of the state so nothing can leak back. */
static algo_meta peek_copy(const algo_params *p, const algo_state *st,
                           int64_t t, int64_t cost)
{
    algo_state c = *st;
    memcpy(logbuf2, st->log, st->log_len);
    c.log = logbuf2;
    return run(p, &c, t, cost, 0);
}

static void check_timings(const algo_params *p, const algo_state *st,
                          int64_t now, int64_t cost, algo_meta m)
{
    if (!m.allowed && m.retry_after_ms > 0) {
        int64_t at = now + m.retry_after_ms;
        assert_false(peek_copy(p, st, at - 1, cost).allowed);
        assert_true(peek_copy(p, st, at, cost).allowed);
    }
    if (m.reset_ms > 0) {
        int64_t cap = m.capacity;
        assert_true(peek_copy(p, st, now + m.reset_ms - 1, 1).remaining < cap);
        assert_int_equal(peek_copy(p, st, now + m.reset_ms, 1).remaining, cap);
        if (st->present)
            assert_true(st->expires_ms <= now + m.reset_ms ||
                        p->kind == ALGO_SLIDING_WINDOW ||
                        p->kind == ALGO_FIXED_WINDOW);
    }
}

/* The metadata of a charge describes the state it left: a peek right after
 * reports the same remaining and reset (and retry, if it was denied). */
static void check_meta_is_state(const algo_params *p, const algo_state *st,
                                int64_t now, int64_t cost, algo_meta m)
{
    algo_meta after = peek_copy(p, st, now, cost);
    assert_int_equal(after.remaining, m.remaining);
    assert_int_equal(after.reset_ms, m.reset_ms);
    if (!m.allowed)
        assert_int_equal(after.retry_after_ms, m.retry_after_ms);
}

static void sweep(int kind, int count_denied)
{
    for (int round = 0; round < 60; round++) {
        algo_params p = mk(kind, 1 + rnd(8), 1 + rnd(8), 100 + rnd(2000));
        algo_state st = fresh(logbuf), before;
        int64_t now = BASE + rnd(5000);
        p.count_denied = count_denied;
        if (rnd(2) == 0)
            p.period_ms = p.limit * (100 + rnd(500));  /* whole-ms T too */
        for (int step = 0; step < 40; step++) {
            int64_t cost = 1 + rnd(p.limit > p.burst ? p.limit : p.burst);
            algo_meta m;
            now += rnd(4) == 0 ? 0 : rnd(p.period_ms / 2 + 1);
            before = st;
            m = run(&p, &st, now, cost, 0);
            assert_memory_equal(&st, &before, sizeof st);
            assert_true(m.remaining >= 0 && m.remaining <= m.capacity);
            check_timings(&p, &st, now, cost, m);
            m = run(&p, &st, now, cost, 1);
            check_timings(&p, &st, now, cost, m);
            check_meta_is_state(&p, &st, now, cost, m);
        }
    }
}

static void test_timings_exact_all_algorithms(void **unused)
{
    (void)unused;
    for (int k = ALGO_FIXED_WINDOW; k <= ALGO_LEAKY_BUCKET; k++) {
        sweep(k, 0);
        sweep(k, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_params_rejected),
        cmocka_unit_test(test_invalid_window_rejected),
        cmocka_unit_test(test_log_needs_room_to_charge),
        cmocka_unit_test(test_fixed_two_per_second),
        cmocka_unit_test(test_fixed_denial_consumes_nothing),
        cmocka_unit_test(test_fixed_cost_over_limit_never),
        cmocka_unit_test(test_fixed_peek_reports_current_state),
        cmocka_unit_test(test_fixed_count_denied),
        cmocka_unit_test(test_fixed_state_layout_and_expiry),
        cmocka_unit_test(test_fixed_anchor_first_hit),
        cmocka_unit_test(test_fixed_refund_same_window),
        cmocka_unit_test(test_fixed_refund_after_window_ignored),
        cmocka_unit_test(test_fixed_saturates),
        cmocka_unit_test(test_sliding_cloudflare_at_1m15s),
        cmocka_unit_test(test_sliding_cloudflare_at_1m45s),
        cmocka_unit_test(test_sliding_weighted_remaining),
        cmocka_unit_test(test_sliding_retry_exact_in_window),
        cmocka_unit_test(test_sliding_retry_in_next_window),
        cmocka_unit_test(test_sliding_forgets_after_two_windows),
        cmocka_unit_test(test_sliding_state_roll_and_expiry),
        cmocka_unit_test(test_sliding_denial_and_peek_change_nothing),
        cmocka_unit_test(test_sliding_cost_over_limit_never),
        cmocka_unit_test(test_sliding_count_denied),
        cmocka_unit_test(test_sliding_refund_current_and_previous),
        cmocka_unit_test(test_sliding_anchor_first_hit),
        cmocka_unit_test(test_sliding_huge_window_exact),
        cmocka_unit_test(test_sliding_window_beyond_2_pow_62),
        cmocka_unit_test(test_log_window_is_half_open),
        cmocka_unit_test(test_log_packed_entries),
        cmocka_unit_test(test_log_drops_old_entries_when_charging),
        cmocka_unit_test(test_log_retry_walks_oldest_first),
        cmocka_unit_test(test_log_cost_over_limit_never),
        cmocka_unit_test(test_log_count_denied_stays_bounded),
        cmocka_unit_test(test_log_refund_matching_units),
        cmocka_unit_test(test_log_full_capacity),
        cmocka_unit_test(test_timings_exact_all_algorithms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
