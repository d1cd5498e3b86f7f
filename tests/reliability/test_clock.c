/*
 * test_clock.c - clock steps and DST (issue #5, suite 7).
 *
 * Clock steps.  Simulated traffic runs for every algorithm (limits with 1 h
 * windows, then with 1 d windows) while the caller's clock is stepped by
 * -1 h, +1 h, a 1970 timestamp, -1 day and +1 day, each time set right again
 * after a while.  The library cannot tell a forward step from elapsed time,
 * so "the time" it may use is at most E, the latest clock it has seen.  For
 * every result:
 *
 *   - no call fails, no value is negative or beyond the capacity, a denial
 *     is justified by its remaining, an admission has retry_after 0;
 *   - never extra quota: for any two admitted requests i <= j where the
 *     clock at i was not behind, the units admitted from i to j are at most
 *     what the algorithm allows in E_j - E_i (fixed/sliding window: limit
 *     per aligned window touched; sliding_log: limit per window length
 *     begun; buckets: burst + refill over the span);
 *   - while the clock is behind (after a backward step, or after being set
 *     right following a forward one) there is no refill and no early reset:
 *     the units admitted in that stretch are at most the remaining reported
 *     by the last request before it;
 *   - quota comes back: once the clock has passed E again, requests are
 *     admitted again.
 *
 * DST.  1 d windows in Europe/Berlin (2026-03-29: 23 h, 2026-10-25: 25 h)
 * and America/New_York (2026-03-08: 23 h, 2026-11-01: 25 h): a fixed window
 * resets exactly at local midnight (reset_ms and retry_after_ms count to it,
 * one ms before it is still denied, at it admitted again), the days around
 * have 24 h, and a sliding window weights the previous day by the real
 * length of the short or long day.
 *
 * Knob: RLS_CLOCK_TICKS (ticks per window, default 40).
 */
#include "reltest.h"

#define H 3600000LL
#define D (24 * H)

static const char *const ACTS[6] = {"fw", "sw", "sl", "tb", "gc", "lb"};
enum { FW, SW, SL, TB, GC, LB };

#define BURST 10
/* 30; 16 for `durability: memory` (a memory sliding_log keeps at most 16) */
static int LIMIT = 30;
static const char *DURABILITY = "normal";

static char *step_rules(const char *window)
{
    static const char *const algs[6] = {"fixed_window", "sliding_window", "sliding_log",
                                        "token_bucket", "gcra", "leaky_bucket"};
    char *y = malloc(4096);
    assert_non_null(y);
    size_t o = (size_t)snprintf(y, 4096, "version: 1\nactions:\n");
    for (int a = 0; a < 6; a++) {
        char burst[32] = "";
        if (a >= TB)
            snprintf(burst, sizeof burst, " burst: %d,", BURST);
        o += (size_t)snprintf(y + o, 4096 - o,
                              "  %s: { limits: [ { name: l, algorithm: %s, limit: %d, window: %s,"
                              "%s durability: %s } ] }\n",
                              ACTS[a], algs[a], LIMIT, window, burst, DURABILITY);
    }
    return y;
}

static int64_t capacity(int a)
{
    return a >= TB ? BURST : LIMIT;
}

/* What the algorithm may admit at most in a span [e1, e2] of its clock. */
static int64_t allowance(int a, int64_t w, int64_t e1, int64_t e2)
{
    int64_t d = e2 - e1;
    switch (a) {
    case FW:
    case SW:  /* at most LIMIT in each aligned (UTC) window touched */
        return LIMIT * (e2 / w - e1 / w + 1);
    case SL:
        return LIMIT * (d / w + 1);
    case TB:
        return BURST + d * LIMIT / w;
    default: {  /* gcra: emission interval in ns, truncated as the engine does */
        int64_t t_ns = w * 1000000 / LIMIT;
        return BURST + d * 1000000 / t_ns;
    }
    }
}

typedef struct req {
    int64_t clock, e, cost, remaining;
    int allowed, behind;
} req;

/* The clock offset (or absolute clock) of simulated real time r, by
 * phase. */
typedef struct phase {
    const char *name;
    int64_t offset;     /* added to real time */
    int absolute;       /* the clock is offset + (r - phase start): 1970 */
} phase;

static const phase PHASES[] = {
    {"steady", 0, 0},        {"-1h", -H, 0},      {"set right", 0, 0},
    {"+1h", H, 0},           {"set right", 0, 0}, {"1970", 0, 1},
    {"set right", 0, 0},     {"-1d", -D, 0},      {"set right", 0, 0},
    {"+1d", D, 0},           {"set right", 0, 0},
};
#define NPHASES ((int)(sizeof PHASES / sizeof PHASES[0]))

static void judge(int a, const req *q, const rls_result *r, const char *where)
{
    int64_t cap = capacity(a);
    if (r->limit != cap || r->remaining < 0 || r->remaining > cap || r->reset_ms < 0 ||
        r->delay_ms < 0 || r->retry_after_ms < -1 ||
        (r->allowed && (r->retry_after_ms != 0 || r->reason != RLS_REASON_OK)) ||
        (!r->allowed && (r->remaining >= q->cost || r->retry_after_ms <= 0 ||
                         r->reason != RLS_REASON_LIMIT)))
        fail_msg("%s %s at clock %lld: allowed %d reason %d limit %lld remaining %lld "
                 "reset %lld retry %lld delay %lld (cost %lld)", ACTS[a], where,
                 (long long)q->clock, r->allowed, r->reason, (long long)r->limit,
                 (long long)r->remaining, (long long)r->reset_ms, (long long)r->retry_after_ms,
                 (long long)r->delay_ms, (long long)q->cost);
}

/*
 * Runs the schedule for every algorithm with windows of w ms (given as
 * text for the rules) and checks the invariants above.
 */
static void steps_for(const char *window, int64_t w)
{
    char *yaml = step_rules(window);
    itest *t = it_new(yaml);
    free(yaml);
    if (strcmp(DURABILITY, "memory") == 0) {   /* its table in the test's folder */
        rls_options o;
        rls_options_init(&o);
        o.shm_dir = t->dir;
        rls_close(t->db);
        assert_int_equal(rls_open(&t->db, t->path, &o), RLS_OK);
    }
    long ticks = rel_knob("RLS_CLOCK_TICKS", 40, 8);
    /* ticks well under an hour, so a -1 h step puts the clock behind */
    int64_t tick = w / ticks < H / 2 ? w / ticks : H / 2, phase_len = w * 3 / 2;
    /* after the last forward step: long enough for the clock to pass E */
    int64_t tail = D + 2 * w;
    int64_t start = T0 + 7 * 60000 + 123;  /* not aligned to anything */
    int64_t nreq_max = (int64_t)(NPHASES * phase_len + tail) / tick * 3 + 16;
    req *q = calloc((size_t)nreq_max, sizeof *q);
    assert_non_null(q);
    unsigned seed = 12345;

    for (int a = 0; a < 6; a++) {
        int64_t n = 0, e = 0, admitted = 0, tail_admitted = 0;
        for (int64_t r = start; r < start + NPHASES * phase_len + tail; r += tick) {
            int p = (int)((r - start) / phase_len);
            int in_tail = p >= NPHASES;
            const phase *ph = &PHASES[in_tail ? NPHASES - 1 : p];
            int64_t clock = ph->absolute ? (r - start - p * phase_len) + 1000
                                         : r + ph->offset;
            if (in_tail)
                clock = r;
            for (int k = 0; k < 3; k++) {
                req *x = &q[n];
                rls_result res;
                x->clock = clock;
                x->cost = 1 + rand_r(&seed) % 2;
                if (clock > e)
                    e = clock;
                x->e = e;
                x->behind = clock < e;
                int rc = rls_check_at(t->db, ACTS[a], "k", x->cost, clock, &res);
                if (rc != RLS_OK)
                    fail_msg("%s (%s windows), phase %s: %s: %s", ACTS[a], window, ph->name,
                             rls_errname(rc), rls_errmsg(t->db));
                judge(a, x, &res, ph->name);
                x->allowed = res.allowed;
                x->remaining = res.remaining;
                admitted += res.allowed ? x->cost : 0;
                if (in_tail && r >= start + NPHASES * phase_len + tail - w)
                    tail_admitted += res.allowed ? x->cost : 0;
                n++;
            }
        }
        /* never extra quota over any span that starts with the clock right */
        for (int64_t i = 0; i < n; i++) {
            if (!q[i].allowed || q[i].behind)
                continue;
            int64_t units = 0;
            for (int64_t j = i; j < n; j++) {
                if (!q[j].allowed)
                    continue;
                units += q[j].cost;
                int64_t allow = allowance(a, w, q[i].e, q[j].e);
                if (units > allow)
                    fail_msg("%s (%s windows): %lld units admitted between clock %lld and "
                             "%lld, the limit allows %lld", ACTS[a], window, (long long)units,
                             (long long)q[i].e, (long long)q[j].e, (long long)allow);
            }
        }
        /* while the clock is behind: nothing beyond what was left */
        int stretches = 0;
        for (int64_t i = 1; i < n; i++) {
            if (!q[i].behind || q[i - 1].behind)
                continue;
            int64_t left = q[i - 1].remaining, units = 0, j;
            for (j = i; j < n && q[j].behind; j++)
                units += q[j].allowed ? q[j].cost : 0;
            stretches++;
            if (units > left)
                fail_msg("%s (%s windows): %lld units admitted while the clock was behind "
                         "(requests %lld..%lld), only %lld were left", ACTS[a], window,
                         (long long)units, (long long)i, (long long)j - 1, (long long)left);
        }
        assert_true(stretches >= 5);  /* -1h, +1h, 1970, -1d, +1d */
        if (tail_admitted == 0)
            fail_msg("%s (%s windows): nothing admitted after the clock passed E again",
                     ACTS[a], window);
        print_message("%s, %s windows: %lld requests, %lld units admitted, %d stretches "
                      "behind\n", ACTS[a], window, (long long)n, (long long)admitted, stretches);
    }
    free(q);
    it_free(t);
}

static void steps_with_hour_windows(void **state)
{
    steps_for("1h", H);
}

static void steps_with_day_windows(void **state)
{
    steps_for("1d", D);
}

/* The same for `durability: memory` limits (16: a memory sliding_log's
 * most): a state in the shared-memory table is as safe from a clock that
 * steps as a row. */
static void steps_in_memory(const char *window, int64_t w)
{
    LIMIT = 16;
    DURABILITY = "memory";
    steps_for(window, w);
    LIMIT = 30;
    DURABILITY = "normal";
}

static void steps_with_hour_windows_memory(void **state)
{
    steps_in_memory("1h", H);
}

static void steps_with_day_windows_memory(void **state)
{
    steps_in_memory("1d", D);
}

/* A 1970 clock on a key that has never been seen, and on the check path of
 * every algorithm: defined results, nothing negative. */
static void epoch_clock_on_fresh_keys(void **state)
{
    char *yaml = step_rules("1h");
    itest *t = it_new(yaml);
    free(yaml);
    static const int64_t clocks[] = {0, 1, 999, 86399999};
    for (int a = 0; a < 6; a++)
        for (size_t c = 0; c < sizeof clocks / sizeof clocks[0]; c++) {
            rls_result r;
            req x = {.clock = clocks[c], .cost = 1};
            char key[32];
            snprintf(key, sizeof key, "fresh:%zu", c);
            for (int i = 0; i < LIMIT + 2; i++) {
                assert_int_equal(rls_check_at(t->db, ACTS[a], key, 1, clocks[c], &r), RLS_OK);
                judge(a, &x, &r, "1970");
            }
            assert_false(r.allowed);
            /* and back to 2026: the key's time is now later, still no
             * negative value */
            assert_int_equal(rls_check_at(t->db, ACTS[a], key, 1, T0, &r), RLS_OK);
            judge(a, &x, &r, "2026 after 1970");
        }
    it_free(t);
}

/* ---- DST ----------------------------------------------------------------- */

typedef struct dst_day {
    const char *zone, *date;
    int64_t start, end;  /* local midnight before and after, UTC ms */
} dst_day;

static void dst_fixed_window(const dst_day *d, int idx)
{
    char yaml[512], key[64];
    snprintf(yaml, sizeof yaml,
             "version: 1\n"
             "actions:\n"
             "  day:\n"
             "    limits: [ { name: d, algorithm: fixed_window, limit: 3, window: 1d, "
             "timezone: %s } ]\n"
             "  slide:\n"
             "    limits: [ { name: s, algorithm: sliding_window, limit: 100, window: 1d, "
             "timezone: %s } ]\n", d->zone, d->zone);
    itest *t = it_new(yaml);
    int64_t len = d->end - d->start;
    rls_result r;

    /* the day itself: exhausted right after local midnight... */
    snprintf(key, sizeof key, "k%d", idx);
    assert_int_equal(it_admit_n(t, "day", key, 3, d->start), 3);
    assert_false(it_check(t, "day", key, 1, d->start + 1, &r));
    if (r.retry_after_ms != len - 1 || r.reset_ms != len - 1)
        fail_msg("%s %s: retry %lld / reset %lld ms after local midnight, the day has %lld h",
                 d->zone, d->date, (long long)r.retry_after_ms, (long long)r.reset_ms,
                 (long long)(len / H));
    /* ... still denied 1 ms before the next local midnight, admitted at it */
    assert_false(it_check(t, "day", key, 1, d->end - 1, &r));
    assert_int_equal(r.retry_after_ms, 1);
    assert_true(it_check(t, "day", key, 1, d->end, &r));
    assert_int_equal(r.reset_ms, D);  /* the next day has 24 h */

    /* the day before has 24 h and ends at this day's start */
    snprintf(key, sizeof key, "before%d", idx);
    assert_int_equal(it_admit_n(t, "day", key, 4, d->start - D), 3);
    assert_false(it_check(t, "day", key, 1, d->start - 1, &r));
    assert_int_equal(r.retry_after_ms, 1);
    assert_true(it_check(t, "day", key, 1, d->start, &r));

    /* sliding window: the previous day's 100 units weigh by the real length
     * of this day, 12 h into it */
    snprintf(key, sizeof key, "slide%d", idx);
    assert_true(it_check(t, "slide", key, 100, d->start - 12 * H, &r));
    int64_t at = d->start + 12 * H;
    int64_t want = 100 - 100 * (len - 12 * H) / len;
    assert_int_equal(rls_peek_at(t->db, "slide", key, 1, at, &r), RLS_OK);
    if (r.remaining != want)
        fail_msg("%s %s: sliding window remaining %lld 12 h into a %lld h day, expected %lld",
                 d->zone, d->date, (long long)r.remaining, (long long)(len / H),
                 (long long)want);
    print_message("%-16s %s: %2lld h, resets at local midnight; sliding window remaining "
                  "12 h in: %lld\n", d->zone, d->date, (long long)(len / H), (long long)want);
    it_free(t);
}

static void dst_days_have_23_or_25_hours(void **state)
{
    static const dst_day days[] = {
        /* 00:00 CET = 23:00Z; 00:00 CEST = 22:00Z */
        {"Europe/Berlin", "2026-03-29", 1774738800000LL, 1774821600000LL},
        {"Europe/Berlin", "2026-10-25", 1792879200000LL, 1792969200000LL},
        /* 00:00 EST = 05:00Z; 00:00 EDT = 04:00Z */
        {"America/New_York", "2026-03-08", 1772946000000LL, 1773028800000LL},
        {"America/New_York", "2026-11-01", 1793505600000LL, 1793595600000LL},
    };
    static const int64_t hours[] = {23, 25, 23, 25};
    for (int i = 0; i < 4; i++) {
        assert_int_equal((days[i].end - days[i].start) / H, hours[i]);
        dst_fixed_window(&days[i], i);
    }
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(steps_with_hour_windows),
        cmocka_unit_test(steps_with_day_windows),
        cmocka_unit_test(steps_with_hour_windows_memory),
        cmocka_unit_test(steps_with_day_windows_memory),
        cmocka_unit_test(epoch_clock_on_fresh_keys),
        cmocka_unit_test(dst_days_have_23_or_25_hours),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
