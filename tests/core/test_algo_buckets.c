/*
 * test_algo_buckets.c - core/algo.c: the bucket algorithms (token_bucket,
 * gcra, leaky_bucket) against exact vectors: the worked examples of
 * shared/DESIGN.md, the test tables of golang.org/x/time/rate, redis-cell's
 * own GCRA sequence and nginx limit_req's documented burst behaviour.  Also
 * the kind names and NULL arguments, common to all algorithms.
 */
#include "testutil.h"
#include "algo.h"

/* A whole minute (so also a whole second) in late 2023. */
#define BASE 1699999980000LL
#define NS 1000000LL

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

/* gcra's TAT in ns (fits int64 before 2262): whole ms in a, the ns within
 * the ms in b (algo.c). */
static int64_t tat_ns(const algo_state *st)
{
    return st->c == 1 ? st->a * NS + st->b : st->a;
}

static algo_state fresh(void)
{
    algo_state st;
    memset(&st, 0, sizeof st);
    return st;
}

/* Buckets ignore the window: NULL is part of what is tested. */
static algo_meta run(const algo_params *p, algo_state *st, int64_t now,
                     int64_t cost, int charge)
{
    algo_meta m;
    memset(&m, 0x5a, sizeof m);
    assert_int_equal(rls__algo_decide(p, NULL, st, now, cost, charge, &m), 0);
    return m;
}

static int take(const algo_params *p, algo_state *st, int64_t now,
                int64_t cost)
{
    return run(p, st, now, cost, 1).allowed;
}

static void refund(const algo_params *p, algo_state *st, int64_t now,
                   int64_t at, int64_t cost)
{
    assert_int_equal(rls__algo_refund(p, NULL, st, now, at, cost), 0);
}

static void assert_meta(algo_meta m, int ok, int64_t rem, int64_t reset,
                        int64_t retry)
{
    assert_int_equal(m.allowed, ok);
    assert_int_equal(m.remaining, rem);
    assert_int_equal(m.reset_ms, reset);
    assert_int_equal(m.retry_after_ms, retry);
}

/* One step of a transcribed table: time offset, cost, expected admission. */
typedef struct step {
    int64_t at;
    int64_t cost;
    int ok;
} step;

/* Runs the steps as the storage layer would call the algorithm: with the
 * clock-safe time max(now, last_ms). */
static void run_steps(const algo_params *p, const step *s, size_t n)
{
    algo_state st = fresh();
    for (size_t i = 0; i < n; i++) {
        int64_t now = BASE + s[i].at;
        if (st.present && st.last_ms > now)
            now = st.last_ms;
        if (take(p, &st, now, s[i].cost) != s[i].ok)
            fail_msg("step %zu (t=%lld, n=%lld): want %d", i,
                     (long long)s[i].at, (long long)s[i].cost, s[i].ok);
    }
}

/* ---- names and arguments, all algorithms --------------------------------- */

static void test_names_round_trip(void **unused)
{
    (void)unused;
    for (int k = ALGO_FIXED_WINDOW; k <= ALGO_LEAKY_BUCKET; k++)
        assert_int_equal(rls__algo_from_name(rls__algo_name(k)), k);
    assert_string_equal(rls__algo_name(ALGO_SLIDING_LOG), "sliding_log");
    assert_string_equal(rls__algo_name(ALGO_GCRA), "gcra");
    assert_null(rls__algo_name(0));
    assert_null(rls__algo_name(7));
    assert_int_equal(rls__algo_from_name("leaky"), 0);
    assert_int_equal(rls__algo_from_name(NULL), 0);
    assert_int_equal(rls__algo_from_name("Fixed_Window"), 0);
}

static void test_is_bucket(void **unused)
{
    (void)unused;
    assert_false(rls__algo_is_bucket(ALGO_FIXED_WINDOW));
    assert_false(rls__algo_is_bucket(ALGO_SLIDING_WINDOW));
    assert_false(rls__algo_is_bucket(ALGO_SLIDING_LOG));
    assert_true(rls__algo_is_bucket(ALGO_TOKEN_BUCKET));
    assert_true(rls__algo_is_bucket(ALGO_GCRA));
    assert_true(rls__algo_is_bucket(ALGO_LEAKY_BUCKET));
    assert_false(rls__algo_is_bucket(99));
}

static void test_null_arguments_rejected(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 1, 1000);
    algo_state st = fresh();
    algo_meta m;
    (void)unused;
    assert_int_equal(rls__algo_decide(NULL, NULL, &st, BASE, 1, 1, &m), -1);
    assert_int_equal(rls__algo_decide(&p, NULL, NULL, BASE, 1, 1, &m), -1);
    assert_int_equal(rls__algo_decide(&p, NULL, &st, BASE, 1, 1, NULL), -1);
    assert_int_equal(rls__algo_refund(&p, NULL, NULL, BASE, BASE, 1), -1);
    /* the buckets ignore the window: NULL is fine */
    assert_int_equal(rls__algo_decide(&p, NULL, &st, BASE, 1, 1, &m), 0);
}

/* ---- token_bucket: golang.org/x/time/rate ---------------------------------
 * Transcribed from golang/time rate/rate_test.go (TestLimiterBurst1,
 * TestLimiterBurst3, TestLimiterJumpBackwards, TestSimultaneousRequests,
 * TestLimiter_noTruncationErrors).  NewLimiter(10, b) is limit 10 per 1000 ms
 * with burst b; their t1, t2, ... are multiples of d = 100 ms. */
#define D 100

static void test_token_go_burst1(void **unused)
{
    static const step s[] = {
        {0, 1, 1}, {0, 1, 0}, {0, 1, 0},
        {1 * D, 1, 1}, {1 * D, 1, 0}, {1 * D, 1, 0},
        {2 * D, 2, 0},  /* burst size is 1, so n=2 always fails */
        {2 * D, 1, 1}, {2 * D, 1, 0},
    };
    algo_params p = mk(ALGO_TOKEN_BUCKET, 10, 1, 1000);
    (void)unused;
    run_steps(&p, s, sizeof s / sizeof s[0]);
}

static void test_token_go_burst3(void **unused)
{
    /* Go's last step {t9, 0, true} has cost 0, which algo.h does not
     * accept (a peek is charge == 0 instead); it is left out. */
    static const step s[] = {
        {0, 2, 1}, {0, 2, 0}, {0, 1, 1}, {0, 1, 0},
        {1 * D, 4, 0},
        {2 * D, 1, 1}, {3 * D, 1, 1}, {4 * D, 1, 1}, {4 * D, 1, 1},
        {4 * D, 1, 0}, {4 * D, 1, 0},
        {9 * D, 3, 1},
    };
    algo_params p = mk(ALGO_TOKEN_BUCKET, 10, 3, 1000);
    (void)unused;
    run_steps(&p, s, sizeof s / sizeof s[0]);
}

static void test_token_go_jump_backwards(void **unused)
{
    /* Deliberate deviation from Go at the first t1 step after the jump:
     * Go restarts its clock at t0 and so hands out the t0..t1 token a
     * second time; rlstore's clock safety (DESIGN 2: "no refill, never
     * extra quota") keeps the key at t1, so that step is denied here. */
    static const step s[] = {
        {1 * D, 1, 1},  /* start at t1 */
        {0, 1, 1},      /* jump back to t0, two tokens remain */
        {0, 1, 1}, {0, 1, 0}, {0, 1, 0},
        {1 * D, 1, 0},  /* Go: true */
        {1 * D, 1, 0}, {1 * D, 1, 0},
        {2 * D, 1, 1},  /* got another token */
        {2 * D, 1, 0}, {2 * D, 1, 0},
    };
    algo_params p = mk(ALGO_TOKEN_BUCKET, 10, 3, 1000);
    (void)unused;
    run_steps(&p, s, sizeof s / sizeof s[0]);
}

static void test_token_go_simultaneous_requests(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 5, 1000);
    algo_state st = fresh();
    int ok = 0;
    (void)unused;
    for (int i = 0; i < 15; i++)
        ok += take(&p, &st, BASE, 1);
    assert_int_equal(ok, 5);
}

static void test_token_go_no_truncation_errors(void **unused)
{
    /* rate 0.7692307692307693/s = 10 per 13 s, burst 1 */
    algo_params p = mk(ALGO_TOKEN_BUCKET, 10, 1, 13000);
    algo_state st = fresh();
    (void)unused;
    assert_true(take(&p, &st, BASE, 1));
    assert_meta(run(&p, &st, BASE, 1, 0), 0, 0, 1300, 1300);
}

/* ---- token_bucket: semantics --------------------------------------------- */

static void test_token_starts_full_and_refills(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 10, 5, 1000);
    algo_state st = fresh();
    algo_meta m;
    (void)unused;
    assert_meta(run(&p, &st, BASE, 1, 0), 1, 5, 0, 0);
    assert_int_equal(st.present, 0);
    m = run(&p, &st, BASE, 1, 1);
    assert_meta(m, 1, 4, 100, 0);
    assert_int_equal(m.capacity, 5);
    assert_int_equal(m.delay_ms, 0);
    assert_int_equal(st.a, 4 * 1000);   /* tokens scaled by period_ms */
    assert_int_equal(st.b, BASE);
    assert_int_equal(st.last_ms, BASE);
    assert_int_equal(st.expires_ms, BASE + 100);
    assert_meta(run(&p, &st, BASE + 50, 1, 0), 1, 4, 50, 0);
    assert_meta(run(&p, &st, BASE + 100, 1, 0), 1, 5, 0, 0);
}

static void test_token_retry_rounds_up(void **unused)
{
    /* 3 per second: a token every 333.3 ms */
    algo_params p = mk(ALGO_TOKEN_BUCKET, 3, 1, 1000);
    algo_state st = fresh();
    (void)unused;
    assert_true(take(&p, &st, BASE, 1));
    assert_meta(run(&p, &st, BASE, 1, 1), 0, 0, 334, 334);
    assert_false(take(&p, &st, BASE + 333, 1));
    assert_true(take(&p, &st, BASE + 334, 1));
}

static void test_token_denial_consumes_nothing(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 5, 1000);
    algo_state st = fresh(), before;
    (void)unused;
    assert_true(take(&p, &st, BASE, 3));
    before = st;
    assert_meta(run(&p, &st, BASE, 4, 1), 0, 2, 3000, 2000);
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_token_count_denied_drains(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    p.count_denied = 1;
    assert_true(take(&p, &st, BASE, 3));
    assert_meta(run(&p, &st, BASE, 4, 1), 0, 0, 5000, 4000);
    assert_int_equal(st.a, 0);
    assert_int_equal(st.expires_ms, BASE + 5000);
}

static void test_token_cost_over_burst_never(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 100, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    p.count_denied = 1;
    assert_meta(run(&p, &st, BASE, 6, 1), 0, 5, 0, -1);
    assert_int_equal(st.present, 0);
}

static void test_token_peek_changes_nothing(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 2, 1000);
    algo_state st = fresh(), before;
    (void)unused;
    take(&p, &st, BASE, 2);
    before = st;
    assert_meta(run(&p, &st, BASE + 1500, 1, 0), 1, 1, 500, 0);
    assert_meta(run(&p, &st, BASE + 1500, 2, 0), 0, 1, 500, 500);
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_token_refund_capped_at_burst(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    take(&p, &st, BASE, 5);
    refund(&p, &st, BASE + 1000, BASE, 1);
    assert_int_equal(st.a, 2 * 1000);
    assert_int_equal(st.b, BASE + 1000);
    assert_int_equal(st.expires_ms, BASE + 4000);
    refund(&p, &st, BASE + 2000, BASE, 4);   /* 3 + 4 > 5: capped */
    assert_int_equal(st.a, 5 * 1000);
    assert_meta(run(&p, &st, BASE + 2000, 1, 0), 1, 5, 0, 0);
}

static void test_token_never_refills_backwards(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    take(&p, &st, BASE + 5000, 5);
    /* a caller passing an earlier time gets no tokens from it */
    assert_meta(run(&p, &st, BASE, 1, 0), 0, 0, 5000, 1000);
}

static void test_token_shrunk_burst_clamps(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, 10, 1000);
    algo_state st = fresh();
    (void)unused;
    take(&p, &st, BASE, 1);          /* 9 tokens stored */
    p.burst = 4;                     /* the rule changed */
    assert_meta(run(&p, &st, BASE, 1, 1), 1, 3, 1000, 0);
}

static void test_token_saturates(void **unused)
{
    algo_params p = mk(ALGO_TOKEN_BUCKET, 1, INT64_MAX, 1);
    algo_state st = fresh();
    (void)unused;
    assert_meta(run(&p, &st, BASE, INT64_MAX, 1), 1, 0, INT64_MAX, 0);
    assert_int_equal(st.expires_ms, INT64_MAX);
    assert_meta(run(&p, &st, BASE + 10, 11, 1), 0, 10, INT64_MAX - 10, 1);
    /* every product saturates: decisions stay sane */
    p = mk(ALGO_TOKEN_BUCKET, INT64_MAX, INT64_MAX, INT64_MAX);
    st = fresh();
    assert_true(take(&p, &st, BASE, 1));
    assert_true(take(&p, &st, BASE + 1, 1));
    assert_true(run(&p, &st, BASE + 1, 1, 0).remaining <= INT64_MAX);
    p = mk(ALGO_TOKEN_BUCKET, 1, 1, INT64_MAX);  /* 1 per 292 My */
    st = fresh();
    assert_true(take(&p, &st, BASE, 1));
    assert_meta(run(&p, &st, BASE + 1, 1, 1), 0, 0, INT64_MAX - 1,
                INT64_MAX - 1);
}

/* ---- gcra ---------------------------------------------------------------- */

/* DESIGN 2 worked example: 1/s burst 5. */
static void test_gcra_one_per_second_burst_five(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    for (int i = 0; i < 5; i++)
        assert_meta(run(&p, &st, BASE, 1, 1), 1, 4 - i, 1000 * (i + 1), 0);
    assert_meta(run(&p, &st, BASE, 1, 1), 0, 0, 5000, 1000);
    assert_meta(run(&p, &st, BASE, 6, 1), 0, 0, 5000, -1);
    st = fresh();
    assert_meta(run(&p, &st, BASE, 6, 1), 0, 5, 0, -1);
}

/* Transcribed from brandur/redis-cell src/cell/mod.rs (also
 * redis-cell-impl/src/lib.rs), test it_rate_limits: max_burst 4 (burst 5),
 * 1 per second.  Columns: ms after start, volume, limited, remaining,
 * reset_after ms, retry_after ms.  redis-cell's volume 0 (peek) is our
 * charge == 0; its retry_after -1 on admitted requests is our 0. */
static void test_gcra_redis_cell_sequence(void **unused)
{
    static const struct {
        int64_t at, cost;
        int limited;
        int64_t remaining, reset, retry;
    } c[] = {
        {0, 6, 1, 5, 0, -1},   /* never more than the maximum */
        {0, 1, 0, 4, 1000, -1},
        {0, 1, 0, 3, 2000, -1},
        {0, 1, 0, 2, 3000, -1},
        {0, 1, 0, 1, 4000, -1},
        {0, 1, 0, 0, 5000, -1},
        {0, 1, 1, 0, 5000, 1000},
        {3000, 1, 0, 2, 3000, -1},
        {3100, 1, 0, 1, 3900, -1},
        {4000, 1, 0, 1, 4000, -1},
        {8000, 1, 0, 4, 1000, -1},
        {9500, 1, 0, 4, 1000, -1},
        {9500, 0, 0, 4, 1000, -1},   /* zero volume peeks */
        {9500, 2, 0, 2, 3000, -1},
        {9500, 5, 1, 2, 3000, 3000},
    };
    algo_params p = mk(ALGO_GCRA, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int peek = c[i].cost == 0;
        algo_meta m = run(&p, &st, BASE + c[i].at, peek ? 1 : c[i].cost,
                          !peek);
        assert_int_equal(m.capacity, 5);
        assert_meta(m, !c[i].limited, c[i].remaining, c[i].reset,
                    c[i].limited ? c[i].retry : 0);
    }
}

static void test_gcra_state_is_tat_in_ns(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    take(&p, &st, BASE + 250, 2);
    assert_int_equal(tat_ns(&st), (BASE + 2250) * NS);
    assert_int_equal(st.expires_ms, BASE + 2250);
    assert_int_equal(st.last_ms, BASE + 250);
    /* an old TAT counts as now */
    take(&p, &st, BASE + 9000, 1);
    assert_int_equal(tat_ns(&st), (BASE + 10000) * NS);
}

static void test_gcra_fractional_interval_rounds_up(void **unused)
{
    /* T = 1000 / 3 ms = 333333333 ns */
    algo_params p = mk(ALGO_GCRA, 3, 1, 1000);
    algo_state st = fresh();
    (void)unused;
    assert_meta(run(&p, &st, BASE, 1, 1), 1, 0, 334, 0);
    assert_int_equal(tat_ns(&st), BASE * NS + 333333333);
    assert_int_equal(st.expires_ms, BASE + 334);
    assert_meta(run(&p, &st, BASE, 1, 1), 0, 0, 334, 334);
    assert_false(take(&p, &st, BASE + 333, 1));
    assert_true(take(&p, &st, BASE + 334, 1));
}

static void test_gcra_denial_consumes_nothing(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 2, 1000);
    algo_state st = fresh(), before;
    (void)unused;
    take(&p, &st, BASE, 2);
    before = st;
    assert_meta(run(&p, &st, BASE + 500, 1, 1), 0, 0, 1500, 500);
    assert_meta(run(&p, &st, BASE + 500, 1, 0), 0, 0, 1500, 500);
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_gcra_count_denied_fills_bucket(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 2, 1000);
    algo_state st = fresh();
    (void)unused;
    p.count_denied = 1;
    take(&p, &st, BASE, 2);
    /* TAT moves from +2000 to now + tolerance = +2500 */
    assert_meta(run(&p, &st, BASE + 500, 1, 1), 0, 0, 2000, 1000);
    assert_int_equal(tat_ns(&st), (BASE + 2500) * NS);
    assert_meta(run(&p, &st, BASE + 500, 3, 1), 0, 0, 2000, -1);
    assert_int_equal(tat_ns(&st), (BASE + 2500) * NS);
}

static void test_gcra_refund_not_below_now(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 5, 1000);
    algo_state st = fresh();
    (void)unused;
    take(&p, &st, BASE, 3);
    refund(&p, &st, BASE + 500, BASE, 2);
    assert_int_equal(tat_ns(&st), (BASE + 1000) * NS);
    assert_int_equal(st.expires_ms, BASE + 1000);
    assert_int_equal(st.last_ms, BASE + 500);
    refund(&p, &st, BASE + 500, BASE, 5);
    assert_int_equal(tat_ns(&st), (BASE + 500) * NS);
    assert_meta(run(&p, &st, BASE + 500, 1, 0), 1, 5, 0, 0);
}

static void test_gcra_tiny_interval_clamps(void **unused)
{
    /* more than 1e6 per ms: T would be 0 ns, it is 1 ns */
    algo_params p = mk(ALGO_GCRA, INT64_MAX, 3, 1);
    algo_state st = fresh();
    (void)unused;
    assert_meta(run(&p, &st, BASE, 3, 1), 1, 0, 1, 0);
    assert_meta(run(&p, &st, BASE, 1, 1), 0, 0, 1, 1);
    assert_true(take(&p, &st, BASE + 1, 3));
}

static void test_gcra_saturates(void **unused)
{
    algo_params p = mk(ALGO_GCRA, 1, 1, INT64_MAX);
    algo_state st = fresh();
    (void)unused;
    assert_true(take(&p, &st, BASE, 1));
    assert_int_equal(st.a, INT64_MAX);
    assert_false(take(&p, &st, BASE + 1, 1));
    p = mk(ALGO_GCRA, 1, INT64_MAX, INT64_MAX);
    st = fresh();
    assert_true(take(&p, &st, BASE, 1));
    assert_false(take(&p, &st, BASE, INT64_MAX));
    /* a clock beyond the ns range of int64 (year 2262) must not crash */
    p = mk(ALGO_GCRA, 10, 10, 1000);
    st = fresh();
    assert_true(take(&p, &st, INT64_MAX / 2, 1));
    assert_true(run(&p, &st, INT64_MAX / 2, 1, 0).remaining <= 10);
}

/* After 2262 (ns beyond int64) up to the year 9999 the arithmetic stays
 * exact: 10 per minute admits 10 of 25 (issue #17, defect 4). */
static void test_gcra_exact_to_year_9999(void **unused)
{
    const int64_t at[3] = {9223372036854LL, 9300000000000LL, 253402300799999LL - 24};
    (void)unused;
    for (int k = 0; k < 3; k++)
        for (int kind = ALGO_GCRA; kind <= ALGO_LEAKY_BUCKET; kind++) {
            algo_params p = mk(kind, 10, 10, 60000);
            algo_state st = fresh();
            int ok = 0;
            for (int i = 0; i < 25; i++)
                ok += take(&p, &st, at[k] + i, 1);
            assert_int_equal(ok, 10);
            algo_meta m = run(&p, &st, at[k] + 24, 1, 0);
            assert_true(m.reset_ms > 0 && m.reset_ms <= 60000);
            assert_true(m.retry_after_ms > 0 && m.retry_after_ms <= 6000);
        }
}

/* ---- leaky_bucket -------------------------------------------------------- */

/* DESIGN 2 worked example: 1/s burst 6. */
static void test_leaky_one_per_second_burst_six(void **unused)
{
    algo_params p = mk(ALGO_LEAKY_BUCKET, 1, 6, 1000);
    algo_state st = fresh();
    algo_meta m;
    (void)unused;
    for (int i = 0; i < 6; i++) {
        m = run(&p, &st, BASE, 1, 1);
        assert_true(m.allowed);
        assert_int_equal(m.delay_ms, 1000 * i);
    }
    m = run(&p, &st, BASE, 1, 1);
    assert_false(m.allowed);
    assert_int_equal(m.delay_ms, 0);
    assert_int_equal(m.retry_after_ms, 1000);
    m = run(&p, &st, BASE + 1000, 1, 1);
    assert_true(m.allowed);
    assert_int_equal(m.delay_ms, 5000);
}

/* nginx limit_req, "limit_req_zone ... rate=1r/s; limit_req zone=one
 * burst=5;" (ngx_http_limit_req_module documentation): excess requests are
 * delayed to 1 r/s until more than 5 wait, then rejected.  nginx keeps
 * excess = max(0, excess - elapsed + 1000) per accepted request, rejects
 * when it exceeds burst * 1000 and delays by excess ms; the expected values
 * below were computed with that rule.  Our burst counts the request being
 * served too, so nginx burst=5 is burst 6 here. */
static void test_leaky_nginx_rate_1rs_burst_5(void **unused)
{
    static const struct {
        int64_t at;
        int ok;
        int64_t delay;
    } c[] = {
        {0, 1, 0}, {0, 1, 1000}, {0, 1, 2000},
        {500, 1, 2500}, {500, 1, 3500}, {500, 1, 4500},
        {500, 0, 0},      /* excess would be 5500 > 5000 */
        {700, 0, 0},      /* 5300 > 5000 */
        {1000, 1, 5000},
        {10000, 1, 0},    /* drained: no delay */
        {10000, 1, 1000},
    };
    algo_params p = mk(ALGO_LEAKY_BUCKET, 1, 6, 1000);
    algo_state st = fresh();
    (void)unused;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        algo_meta m = run(&p, &st, BASE + c[i].at, 1, 1);
        assert_int_equal(m.allowed, c[i].ok);
        assert_int_equal(m.delay_ms, c[i].delay);
    }
}

static void test_leaky_peek_reports_delay(void **unused)
{
    algo_params p = mk(ALGO_LEAKY_BUCKET, 1, 6, 1000);
    algo_state st = fresh(), before;
    algo_meta m;
    (void)unused;
    take(&p, &st, BASE, 3);
    before = st;
    m = run(&p, &st, BASE + 400, 1, 0);
    assert_true(m.allowed);
    assert_int_equal(m.delay_ms, 2600);
    assert_int_equal(m.remaining, 3);
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_leaky_fractional_delay_rounds_up(void **unused)
{
    algo_params p = mk(ALGO_LEAKY_BUCKET, 3, 3, 1000);
    algo_state st = fresh();
    (void)unused;
    assert_int_equal(run(&p, &st, BASE, 1, 1).delay_ms, 0);
    assert_int_equal(run(&p, &st, BASE, 1, 1).delay_ms, 334);
    assert_int_equal(run(&p, &st, BASE, 1, 1).delay_ms, 667);
}

static void test_leaky_count_denied_and_refund(void **unused)
{
    algo_params p = mk(ALGO_LEAKY_BUCKET, 1, 2, 1000);
    algo_state st = fresh();
    (void)unused;
    p.count_denied = 1;
    take(&p, &st, BASE, 2);
    assert_false(take(&p, &st, BASE + 200, 1));
    assert_int_equal(tat_ns(&st), (BASE + 2200) * NS);
    refund(&p, &st, BASE + 200, BASE, 1);
    assert_int_equal(tat_ns(&st), (BASE + 1200) * NS);
    assert_int_equal(run(&p, &st, BASE + 200, 1, 1).delay_ms, 1000);
}

static void test_leaky_cost_over_burst_never(void **unused)
{
    algo_params p = mk(ALGO_LEAKY_BUCKET, 1, 2, 1000);
    algo_state st = fresh();
    algo_meta m;
    (void)unused;
    p.count_denied = 1;
    m = run(&p, &st, BASE, 3, 1);
    assert_meta(m, 0, 2, 0, -1);
    assert_int_equal(m.delay_ms, 0);
    assert_int_equal(st.present, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_is_bucket),
        cmocka_unit_test(test_null_arguments_rejected),
        cmocka_unit_test(test_token_go_burst1),
        cmocka_unit_test(test_token_go_burst3),
        cmocka_unit_test(test_token_go_jump_backwards),
        cmocka_unit_test(test_token_go_simultaneous_requests),
        cmocka_unit_test(test_token_go_no_truncation_errors),
        cmocka_unit_test(test_token_starts_full_and_refills),
        cmocka_unit_test(test_token_retry_rounds_up),
        cmocka_unit_test(test_token_denial_consumes_nothing),
        cmocka_unit_test(test_token_count_denied_drains),
        cmocka_unit_test(test_token_cost_over_burst_never),
        cmocka_unit_test(test_token_peek_changes_nothing),
        cmocka_unit_test(test_token_refund_capped_at_burst),
        cmocka_unit_test(test_token_never_refills_backwards),
        cmocka_unit_test(test_token_shrunk_burst_clamps),
        cmocka_unit_test(test_token_saturates),
        cmocka_unit_test(test_gcra_one_per_second_burst_five),
        cmocka_unit_test(test_gcra_redis_cell_sequence),
        cmocka_unit_test(test_gcra_state_is_tat_in_ns),
        cmocka_unit_test(test_gcra_fractional_interval_rounds_up),
        cmocka_unit_test(test_gcra_denial_consumes_nothing),
        cmocka_unit_test(test_gcra_count_denied_fills_bucket),
        cmocka_unit_test(test_gcra_refund_not_below_now),
        cmocka_unit_test(test_gcra_tiny_interval_clamps),
        cmocka_unit_test(test_gcra_saturates),
        cmocka_unit_test(test_gcra_exact_to_year_9999),
        cmocka_unit_test(test_leaky_one_per_second_burst_six),
        cmocka_unit_test(test_leaky_nginx_rate_1rs_burst_5),
        cmocka_unit_test(test_leaky_peek_reports_delay),
        cmocka_unit_test(test_leaky_fractional_delay_rounds_up),
        cmocka_unit_test(test_leaky_count_denied_and_refund),
        cmocka_unit_test(test_leaky_cost_over_burst_never),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
