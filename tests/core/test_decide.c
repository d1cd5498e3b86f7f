/*
 * test_decide.c - one check's decision over the limits of an action
 * (core/decide.c), on hand-made limits and states, no database:
 * all-or-nothing admission, the deciding limit (longest wait when denied,
 * never winning; least remaining fraction when admitted, compared
 * exactly), shadow and soft limits, unlimited and blocked tiers, the clock
 * floor and the usage other variants carry over, count_denied, the
 * penalty index, refunds and the fixed results (blocked, degraded).
 */
#include "testutil.h"
#include "decide.h"

#define NOW 1767225600000LL   /* 2026-01-01T00:00:00Z, a window start */
#define MIN 60000LL
#define HOUR 3600000LL

/* Up to 4 limits with their states; items are linked to them by link(). */
typedef struct fx {
    rule_limit def[4];
    resolved_limit rl[4];
    algo_state st[4];
    decide_item it[4];
    int n;
} fx;

static rule_limit *add(fx *f, const char *name, int alg, int64_t limit, int64_t window_ms)
{
    rule_limit *d = &f->def[f->n];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->algorithm = alg;
    d->limit = limit;
    d->window.ms = window_ms;
    d->window.calendar = DUR_FIXED;
    d->tz = NULL;   /* UTC (rls__window_at) */
    memset(&f->st[f->n], 0, sizeof f->st[0]);
    f->n++;
    return d;
}

static void link_items(fx *f)
{
    for (int i = 0; i < f->n; i++) {
        const rule_limit *d = &f->def[i];
        f->rl[i].def = d;
        f->rl[i].limit = d->limit;
        f->rl[i].burst = d->burst > 0 ? d->burst : d->limit;
        f->rl[i].overridden = 0;
        memset(&f->it[i], 0, sizeof f->it[i]);
        f->it[i].rl = &f->rl[i];
        f->it[i].st = &f->st[i];
    }
}

/* A fixed_window state of `count` units in the window starting at start. */
static void fixed_state(algo_state *s, int64_t start, int64_t count, int64_t last)
{
    memset(s, 0, sizeof *s);
    s->present = 1;
    s->a = start;
    s->b = count;
    s->last_ms = last;
    s->expires_ms = start + MIN;
}

static int check(fx *f, int behaviour, int64_t now, int64_t cost, rls_result *res,
                 decide_out *out)
{
    link_items(f);
    return rls__decide_check(f->it, f->n, behaviour, now, 0, cost, 1, res, out);
}

static void test_all_or_nothing(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "wide", ALGO_FIXED_WINDOW, 10, MIN);
    add(&f, "narrow", ALGO_FIXED_WINDOW, 1, MIN);

    assert_int_equal(check(&f, TIER_NORMAL, NOW + 1, 1, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_OK);
    assert_int_equal(f.st[0].b, 1);
    assert_int_equal(f.st[1].b, 1);
    assert_true(f.it[0].changed && f.it[1].changed);

    /* narrow denies: nothing is charged, not even to wide, which admits */
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 2, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_LIMIT);
    assert_string_equal(res.rule, "narrow");
    assert_int_equal(out.deciding, 1);
    assert_int_equal(f.st[0].b, 1);
    assert_int_equal(f.st[1].b, 1);
    assert_false(f.it[0].changed);
    assert_false(f.it[1].changed);
    assert_false(f.it[0].denied);
    assert_true(f.it[1].denied);
    assert_int_equal(res.retry_after_ms, MIN - 2);
    assert_int_equal(out.penalty, -1);   /* no block_for anywhere */
}

static void test_peek_changes_nothing(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "a", ALGO_FIXED_WINDOW, 5, MIN);
    fixed_state(&f.st[0], NOW, 2, NOW + 5);
    link_items(&f);
    assert_int_equal(rls__decide_check(f.it, f.n, TIER_NORMAL, NOW + 10, 0, 1, 0, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(res.remaining, 3);   /* what is admissible now */
    assert_int_equal(f.st[0].b, 2);
    assert_int_equal(f.st[0].last_ms, NOW + 5);
    assert_false(f.it[0].changed);
}

/* Denied: the denying limit with the longest wait decides. */
static void test_deciding_longest_wait(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "hour", ALGO_FIXED_WINDOW, 1, HOUR);
    add(&f, "minute", ALGO_FIXED_WINDOW, 1, MIN);
    add(&f, "second", ALGO_FIXED_WINDOW, 1, 1000);
    fixed_state(&f.st[0], NOW, 1, NOW);
    fixed_state(&f.st[1], NOW, 1, NOW);
    fixed_state(&f.st[2], NOW, 1, NOW);
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 500, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(out.deciding, 0);
    assert_string_equal(res.rule, "hour");
    assert_int_equal(res.retry_after_ms, HOUR - 500);
    assert_int_equal(res.window_ms, HOUR);

    /* the same with the longest last: it replaces the earlier ones */
    fx g = {0};
    add(&g, "second", ALGO_FIXED_WINDOW, 1, 1000);
    add(&g, "hour", ALGO_FIXED_WINDOW, 1, HOUR);
    fixed_state(&g.st[0], NOW, 1, NOW);
    fixed_state(&g.st[1], NOW, 1, NOW);
    assert_int_equal(check(&g, TIER_NORMAL, NOW + 500, 1, &res, &out), 0);
    assert_int_equal(out.deciding, 1);
    assert_string_equal(res.rule, "hour");
}

/* A request that can never pass (cost over a capacity, retry -1) decides
 * over any finite wait, wherever it is in the list. */
static void test_deciding_never_wins(void **state)
{
    rls_result res;
    decide_out out;
    (void)state;
    for (int first = 0; first < 2; first++) {
        fx f = {0};
        rule_limit *small, *full;
        if (first) {
            small = add(&f, "small", ALGO_FIXED_WINDOW, 2, 1000);
            full = add(&f, "full", ALGO_FIXED_WINDOW, 100, HOUR);
        } else {
            full = add(&f, "full", ALGO_FIXED_WINDOW, 100, HOUR);
            small = add(&f, "small", ALGO_FIXED_WINDOW, 2, 1000);
        }
        full->nblock_for = small->nblock_for = 1;
        full->block_for[0] = small->block_for[0] = HOUR;
        fixed_state(&f.st[full == &f.def[0] ? 0 : 1], NOW, 100, NOW);
        assert_int_equal(check(&f, TIER_NORMAL, NOW + 1, 5, &res, &out), 0);
        assert_false(res.allowed);
        assert_string_equal(res.rule, "small");
        assert_int_equal(res.reason, RLS_REASON_COST_EXCEEDS);
        assert_int_equal(res.retry_after_ms, -1);
        /* never a penalty for a request that can never pass */
        assert_int_equal(out.penalty, -1);
    }
}

/* Admitted: the least remaining fraction decides, compared exactly.
 * (N-1)/N < N/(N+1) by 1/(N(N+1)), below a double's precision near 1. */
static void test_deciding_least_fraction_exact(void **state)
{
    const int64_t N = 3000000000LL;
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "larger", ALGO_FIXED_WINDOW, N + 1, MIN);
    add(&f, "smaller", ALGO_FIXED_WINDOW, N, MIN);
    assert_int_equal(check(&f, TIER_NORMAL, NOW, 1, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(out.deciding, 1);
    assert_string_equal(res.rule, "smaller");
    assert_int_equal(res.limit, N);
    assert_int_equal(res.remaining, N - 1);

    /* plain fractions: 1 of 4 left beats 2 of 3 left, whatever the order */
    fx g = {0};
    add(&g, "a", ALGO_FIXED_WINDOW, 3, MIN);
    add(&g, "b", ALGO_FIXED_WINDOW, 4, MIN);
    fixed_state(&g.st[1], NOW, 2, NOW);
    assert_int_equal(check(&g, TIER_NORMAL, NOW + 1, 1, &res, &out), 0);
    assert_int_equal(out.deciding, 1);
    assert_int_equal(res.remaining, 1);
    /* equal fractions: the first keeps it */
    fx h = {0};
    add(&h, "a", ALGO_FIXED_WINDOW, 2, MIN);
    add(&h, "b", ALGO_FIXED_WINDOW, 4, MIN);
    fixed_state(&h.st[1], NOW, 1, NOW);
    assert_int_equal(check(&h, TIER_NORMAL, NOW + 1, 1, &res, &out), 0);
    assert_int_equal(out.deciding, 0);
}

static void test_shadow_never_denies(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    rule_limit *s = add(&f, "trial", ALGO_FIXED_WINDOW, 1, MIN);
    s->mode = MODE_SHADOW;
    s->nblock_for = 1;
    s->block_for[0] = HOUR;
    add(&f, "real", ALGO_FIXED_WINDOW, 10, MIN);
    fixed_state(&f.st[0], NOW, 1, NOW);
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 1, 1, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_SHADOW);
    assert_int_equal(out.deciding, 1);        /* the shadow limit's meta says denied */
    assert_string_equal(res.rule, "real");
    assert_int_equal(out.penalty, -1);
    assert_int_equal(f.st[0].b, 1);           /* the shadow limit is left as it is */
    assert_false(f.it[0].changed);
    assert_int_equal(f.st[1].b, 1);
    assert_true(f.it[0].denied);

    /* a shadow limit that admits is charged */
    fx g = {0};
    add(&g, "trial", ALGO_FIXED_WINDOW, 5, MIN)->mode = MODE_SHADOW;
    assert_int_equal(check(&g, TIER_NORMAL, NOW, 1, &res, &out), 0);
    assert_int_equal(res.reason, RLS_REASON_OK);
    assert_int_equal(g.st[0].b, 1);
}

static void test_overage_reports_nominal(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "soft", ALGO_FIXED_WINDOW, 10, MIN)->overage_pct = 50;
    for (int i = 1; i <= 15; i++) {
        assert_int_equal(check(&f, TIER_NORMAL, NOW + i, 1, &res, &out), 0);
        assert_true(res.allowed);
        assert_int_equal(res.limit, 10);
        assert_int_equal(res.remaining, i <= 10 ? 10 - i : 0);   /* never negative */
        assert_int_equal(f.it[0].meta.used, i);
    }
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 16, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(res.limit, 10);
    assert_int_equal(res.remaining, 0);
    assert_int_equal(f.st[0].b, 15);

    /* c * (100 + pct) / 100, truncated, saturating */
    assert_int_equal(rls__decide_overage(10, 50), 15);
    assert_int_equal(rls__decide_overage(7, 0), 7);
    assert_int_equal(rls__decide_overage(7, -5), 7);
    assert_int_equal(rls__decide_overage(101, 50), 151);
    assert_int_equal(rls__decide_overage(150, 33), 199);
    assert_int_equal(rls__decide_overage(1000000000000LL, 1000), 11000000000000LL);
    assert_int_equal(rls__decide_overage(INT64_MAX, 1), INT64_MAX);
    assert_int_equal(rls__decide_overage(INT64_MAX / 2, 1000), INT64_MAX);
}

static void test_unlimited_counts_past_capacity(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "one", ALGO_FIXED_WINDOW, 1, MIN);
    add(&f, "trial", ALGO_FIXED_WINDOW, 1, MIN)->mode = MODE_SHADOW;
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(check(&f, TIER_UNLIMITED, NOW + i, 1, &res, &out), 0);
        assert_true(res.allowed);
        assert_int_equal(res.reason, RLS_REASON_OK);   /* not shadow */
        assert_int_equal(res.retry_after_ms, 0);
        assert_int_equal(out.penalty, -1);
        assert_true(out.deciding >= 0);
    }
    assert_int_equal(f.st[0].b, 3);
    assert_int_equal(f.st[1].b, 3);
    assert_int_equal(f.it[0].meta.used, 3);     /* 3 of 1: visible */
    assert_int_equal(res.remaining, 0);
    assert_int_equal(res.limit, 1);
}

static void test_no_limits_and_blocked_tier(void **state)
{
    rls_result res;
    decide_out out;
    (void)state;
    assert_int_equal(rls__decide_check(NULL, 0, TIER_NORMAL, NOW, 0, 1, 1, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_OK);
    assert_int_equal(out.deciding, -1);
    assert_int_equal(rls__decide_check(NULL, 0, TIER_BLOCKED, NOW, 0, 1, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_BLOCKED);
    assert_int_equal(res.retry_after_ms, -1);
    assert_int_equal(rls__decide_check(NULL, 0, TIER_UNLIMITED, NOW, 0, 1, 1, &res, &out), 0);
    assert_true(res.allowed);
}

static void test_fixed_results(void **state)
{
    rls_result res;
    (void)state;
    rls__decide_blocked(&res, NOW, NOW + HOUR, "daily");
    assert_false(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_BLOCKED);
    assert_int_equal(res.retry_after_ms, HOUR);
    assert_int_equal(res.reset_ms, HOUR);
    assert_string_equal(res.rule, "daily");
    rls__decide_blocked(&res, NOW, 0, NULL);          /* forever */
    assert_int_equal(res.retry_after_ms, -1);
    assert_int_equal(res.reset_ms, 0);
    assert_string_equal(res.rule, "");
    rls__decide_blocked(&res, NOW, NOW, "x");         /* ended: never 0 */
    assert_int_equal(res.retry_after_ms, -1);

    /* a peek of a blocked key keeps the deciding limit's figures */
    memset(&res, 0, sizeof res);
    res.allowed = 1;
    res.limit = 10;
    res.remaining = 3;
    res.window_ms = MIN;
    res.delay_ms = 7;
    rls__decide_blocked_keep(&res, NOW, NOW + 5, "manual");
    assert_false(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_BLOCKED);
    assert_int_equal(res.limit, 10);
    assert_int_equal(res.remaining, 3);
    assert_int_equal(res.window_ms, MIN);
    assert_int_equal(res.delay_ms, 0);
    assert_int_equal(res.retry_after_ms, 5);
    assert_string_equal(res.rule, "manual");

    rls__decide_degraded(&res, 1);
    assert_true(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_DEGRADED);
    assert_int_equal(res.retry_after_ms, 0);
    rls__decide_degraded(&res, 7);
    assert_int_equal(res.allowed, 1);
    rls__decide_degraded(&res, 0);
    assert_false(res.allowed);
    assert_int_equal(res.retry_after_ms, -1);
}

/* The clock-safe time: the caller's, the floor, present states' last_ms,
 * and absent states' own floors; results measured from the caller's now. */
static void test_clock_floor(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "m", ALGO_FIXED_WINDOW, 5, MIN);
    link_items(&f);
    /* the handle's floor: a minute and 10 s ahead of the caller */
    assert_int_equal(rls__decide_check(f.it, f.n, TIER_NORMAL, NOW + 10000, NOW + 70000, 1, 1,
                                  &res, &out), 0);
    assert_int_equal(out.now, NOW + 70000);
    assert_int_equal(f.st[0].a, NOW + MIN);      /* charged in the floor's window */
    assert_int_equal(f.st[0].last_ms, NOW + 70000);
    assert_int_equal(res.reset_ms, 50000 + 60000);   /* from the caller's now */

    /* a present state's last_ms moves the clock; its limit's floor does not */
    fx g = {0};
    add(&g, "m", ALGO_FIXED_WINDOW, 5, MIN);
    fixed_state(&g.st[0], NOW, 1, NOW + 30000);
    link_items(&g);
    g.it[0].floor_ms = NOW + HOUR;
    assert_int_equal(rls__decide_check(g.it, g.n, TIER_NORMAL, NOW + 1000, 0, 1, 1, &res, &out), 0);
    assert_int_equal(out.now, NOW + 30000);
    assert_int_equal(g.st[0].b, 2);

    /* an absent state's floor stands in for its last_ms */
    fx h = {0};
    add(&h, "m", ALGO_FIXED_WINDOW, 5, MIN);
    add(&h, "n", ALGO_FIXED_WINDOW, 5, MIN);
    link_items(&h);
    h.it[1].floor_ms = NOW + 5000;
    assert_int_equal(rls__decide_check(h.it, h.n, TIER_NORMAL, NOW, 0, 1, 1, &res, &out), 0);
    assert_int_equal(out.now, NOW + 5000);
    assert_int_equal(h.st[0].last_ms, NOW + 5000);
    /* the caller ahead of everything: its own time */
    link_items(&h);
    h.it[1].floor_ms = NOW + 5000;
    assert_int_equal(rls__decide_check(h.it, h.n, TIER_NORMAL, NOW + 9000, 0, 1, 1, &res, &out), 0);
    assert_int_equal(out.now, NOW + 9000);
}

/* Usage recorded by another variant after the limit's own state was last
 * written, in its current window, is charged to it, capped at capacity. */
static void test_sibling_carry_over(void **state)
{
    rls_result res;
    decide_out out;
    decide_sib sib;
    (void)state;

    /* own state absent, a sibling with 4 in this minute */
    fx f = {0};
    add(&f, "m", ALGO_FIXED_WINDOW, 10, MIN);
    link_items(&f);
    memset(&sib, 0, sizeof sib);
    sib.alg = ALGO_FIXED_WINDOW;
    fixed_state(&sib.st, NOW - HOUR + MIN, 4, NOW + 1000);
    f.it[0].sib = &sib;
    f.it[0].nsib = 1;
    assert_int_equal(rls__decide_check(f.it, f.n, TIER_NORMAL, NOW + 2000, 0, 1, 1, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(res.remaining, 5);
    assert_int_equal(f.st[0].b, 5);
    assert_true(f.it[0].changed);

    /* a peek carries it too (what the check would see), in memory */
    fx p = {0};
    add(&p, "m", ALGO_FIXED_WINDOW, 10, MIN);
    link_items(&p);
    p.it[0].sib = &sib;
    p.it[0].nsib = 1;
    assert_int_equal(rls__decide_check(p.it, p.n, TIER_NORMAL, NOW + 2000, 0, 1, 0, &res, &out), 0);
    assert_int_equal(res.remaining, 6);   /* admissible now: 10 - 4 */

    /* the sibling's usage before the window started does not count */
    fx g = {0};
    add(&g, "m", ALGO_FIXED_WINDOW, 10, MIN);
    link_items(&g);
    sib.st.last_ms = NOW - 1;
    g.it[0].sib = &sib;
    g.it[0].nsib = 1;
    assert_int_equal(rls__decide_check(g.it, g.n, TIER_NORMAL, NOW + 2000, 0, 1, 1, &res, &out), 0);
    assert_int_equal(res.remaining, 9);

    /* nor what the sibling recorded before the own state was written */
    fx h = {0};
    add(&h, "m", ALGO_FIXED_WINDOW, 10, MIN);
    fixed_state(&h.st[0], NOW, 2, NOW + 1500);
    link_items(&h);
    sib.st.last_ms = NOW + 1000;
    h.it[0].sib = &sib;
    h.it[0].nsib = 1;
    assert_int_equal(rls__decide_check(h.it, h.n, TIER_NORMAL, NOW + 2000, 0, 1, 1, &res, &out), 0);
    assert_int_equal(res.remaining, 7);

    /* capped at the capacity: the request is then denied */
    fx k = {0};
    add(&k, "m", ALGO_FIXED_WINDOW, 10, MIN);
    link_items(&k);
    sib.st.b = 50;
    sib.st.last_ms = NOW + 1000;
    k.it[0].sib = &sib;
    k.it[0].nsib = 1;
    assert_int_equal(rls__decide_check(k.it, k.n, TIER_NORMAL, NOW + 2000, 0, 1, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(k.st[0].b, 10);
    assert_true(k.it[0].changed);   /* the carried usage is kept */

    /* a bucket that is not full again counts as the whole capacity; the
     * sibling's last_ms moves the clock as well */
    fx b = {0};
    add(&b, "m", ALGO_FIXED_WINDOW, 10, MIN);
    link_items(&b);
    memset(&sib, 0, sizeof sib);
    sib.alg = ALGO_TOKEN_BUCKET;
    sib.st.present = 1;
    sib.st.last_ms = NOW + 3000;
    sib.st.expires_ms = NOW + HOUR;
    b.it[0].sib = &sib;
    b.it[0].nsib = 1;
    assert_int_equal(rls__decide_check(b.it, b.n, TIER_NORMAL, NOW + 2000, 0, 1, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(out.now, NOW + 3000);
}

static void test_count_denied(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "strict", ALGO_FIXED_WINDOW, 1, MIN)->count_denied = 1;
    add(&f, "loose", ALGO_FIXED_WINDOW, 10, MIN);
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 1, 1, &res, &out), 0);
    assert_true(res.allowed);
    for (int i = 2; i <= 4; i++) {
        assert_int_equal(check(&f, TIER_NORMAL, NOW + i, 1, &res, &out), 0);
        assert_false(res.allowed);
        assert_int_equal(f.st[0].b, i);      /* counted while denied */
        assert_true(f.it[0].changed);
        assert_int_equal(f.st[1].b, 1);      /* the other one is not */
        assert_false(f.it[1].changed);
    }
    /* a request that can never pass charges nothing, even here */
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 5, 2, &res, &out), 0);
    assert_int_equal(res.reason, RLS_REASON_COST_EXCEEDS);
    assert_int_equal(f.st[0].b, 4);
}

/* The penalty: the deciding limit's block_for, else another enforcing
 * limit that denied; never a shadow limit's, never when admitted. */
static void test_penalty_index(void **state)
{
    rls_result res;
    decide_out out;
    (void)state;
    fx f = {0};
    rule_limit *a = add(&f, "a", ALGO_FIXED_WINDOW, 1, MIN);
    rule_limit *b = add(&f, "b", ALGO_FIXED_WINDOW, 1, HOUR);
    a->nblock_for = b->nblock_for = 1;
    a->block_for[0] = b->block_for[0] = HOUR;
    fixed_state(&f.st[0], NOW, 1, NOW);
    fixed_state(&f.st[1], NOW, 1, NOW);
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 1, 1, &res, &out), 0);
    assert_int_equal(out.deciding, 1);
    assert_int_equal(out.penalty, 1);           /* the deciding one first */

    b->nblock_for = 0;                          /* then another that denied */
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 2, 1, &res, &out), 0);
    assert_int_equal(out.deciding, 1);
    assert_int_equal(out.penalty, 0);

    a->mode = MODE_SHADOW;                      /* a shadow limit: none */
    assert_int_equal(check(&f, TIER_NORMAL, NOW + 3, 1, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(out.penalty, -1);

    fx g = {0};                                 /* admitted: none */
    rule_limit *c = add(&g, "c", ALGO_FIXED_WINDOW, 5, MIN);
    c->nblock_for = 1;
    c->block_for[0] = HOUR;
    assert_int_equal(check(&g, TIER_NORMAL, NOW, 1, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(out.penalty, -1);
    assert_int_equal(check(&g, TIER_UNLIMITED, NOW, 9, &res, &out), 0);
    assert_int_equal(out.penalty, -1);
}

static void test_refund(void **state)
{
    fx f = {0};
    rls_result res;
    decide_out out;
    (void)state;
    add(&f, "m", ALGO_FIXED_WINDOW, 10, MIN);
    add(&f, "absent", ALGO_FIXED_WINDOW, 10, MIN);
    fixed_state(&f.st[0], NOW, 5, NOW + 10);
    link_items(&f);
    assert_int_equal(rls__decide_refund(f.it, f.n, NOW + 20, 0, NOW + 10, 3), 0);
    assert_int_equal(f.st[0].b, 2);
    assert_true(f.it[0].changed);
    assert_false(f.it[1].changed);              /* nothing charged survives */
    assert_false(f.st[1].present);

    /* never below zero; charged_at past the clock is taken as the clock */
    link_items(&f);
    assert_int_equal(rls__decide_refund(f.it, 1, NOW + 20, 0, NOW + 999, 7), 0);
    assert_int_equal(f.st[0].b, 0);

    /* charged in a window that has ended: nothing comes back */
    fixed_state(&f.st[0], NOW + MIN, 5, NOW + MIN);
    link_items(&f);
    assert_int_equal(rls__decide_refund(f.it, 1, NOW + MIN + 5, 0, NOW + 10, 3), 0);
    assert_int_equal(f.st[0].b, 5);

    /* the clock floor applies: refunded as of the floor's window */
    fixed_state(&f.st[0], NOW + MIN, 5, NOW + MIN);
    link_items(&f);
    assert_int_equal(rls__decide_refund(f.it, 1, NOW + 5, NOW + MIN + 1, NOW + MIN, 2), 0);
    assert_int_equal(f.st[0].b, 3);
    (void)res;
    (void)out;
}

/* rls_refund_units' figure: the most any limit got back. */
static void test_refund_given(void **state)
{
    fx f = {0};
    int64_t given = -1;
    (void)state;
    add(&f, "short", ALGO_FIXED_WINDOW, 10, MIN);
    add(&f, "long", ALGO_FIXED_WINDOW, 100, HOUR);
    add(&f, "absent", ALGO_FIXED_WINDOW, 10, MIN);
    fixed_state(&f.st[0], NOW, 2, NOW + 10);    /* less in use than the cost */
    fixed_state(&f.st[1], NOW, 50, NOW + 10);
    link_items(&f);
    assert_int_equal(rls__decide_refund_given(f.it, f.n, NOW + 20, NOW + 10, 5, &given), 0);
    assert_int_equal(given, 5);                 /* the long limit got all 5 */
    assert_int_equal(f.st[0].b, 0);             /* the short one only its 2 */
    assert_int_equal(f.st[1].b, 45);
    assert_true(f.it[0].changed);
    assert_true(f.it[1].changed);
    assert_false(f.it[2].changed);

    /* every window ended since the charge: nothing comes back */
    fixed_state(&f.st[0], NOW + MIN, 3, NOW + MIN);
    link_items(&f);
    assert_int_equal(rls__decide_refund_given(f.it, 1, NOW + MIN + 5, NOW + 10, 3, &given), 0);
    assert_int_equal(given, 0);
    assert_int_equal(f.st[0].b, 3);

    /* a limit core refuses: refused, whatever was given */
    fx g = {0};
    add(&g, "zero", ALGO_FIXED_WINDOW, 0, MIN);
    fixed_state(&g.st[0], NOW, 1, NOW);
    link_items(&g);
    assert_int_equal(rls__decide_refund_given(g.it, g.n, NOW, NOW, 1, &given), -1);
}

static void test_invalid_limits_refused(void **state)
{
    rls_result res;
    decide_out out;
    (void)state;
    fx f = {0};
    add(&f, "zero", ALGO_FIXED_WINDOW, 0, MIN);
    assert_int_equal(check(&f, TIER_NORMAL, NOW, 1, &res, &out), -1);
    fx u = {0};
    add(&u, "unknown", 99, 1, MIN);
    assert_int_equal(check(&u, TIER_NORMAL, NOW, 1, &res, &out), -1);
    fx g = {0};
    add(&g, "zero", ALGO_FIXED_WINDOW, 0, MIN);
    link_items(&g);
    assert_int_equal(rls__decide_refund(g.it, g.n, NOW, 0, NOW, 1), 0);   /* absent: untouched */
    fixed_state(&g.st[0], NOW, 1, NOW);
    assert_int_equal(rls__decide_refund(g.it, g.n, NOW, 0, NOW, 1), -1);
    /* more items than an action may have */
    decide_item many[RESOLVE_MAX_LIMITS + 1];
    memset(many, 0, sizeof many);
    fx h = {0};
    add(&h, "m", ALGO_FIXED_WINDOW, 1, MIN);
    link_items(&h);
    for (int i = 0; i <= RESOLVE_MAX_LIMITS; i++)
        many[i] = h.it[0];
    assert_int_equal(rls__decide_check(many, RESOLVE_MAX_LIMITS + 1, TIER_NORMAL, NOW, 0, 1, 0,
                                  &res, &out), -1);
}

/* A calendar window reports its true length at the decision's instant
 * (rls_result.window_ms, hence RateLimit-Policy's w): Europe/Berlin's
 * 2026-03-29 is 23 hours, 2026-10-25 25 hours, its week of 2026-10-19 7
 * days and one hour, February 2026 28 days; a fixed 7d, a first_hit
 * anchor and a token bucket keep their nominal length. */
static void test_calendar_window_length(void **state)
{
    rls_tz *tz = NULL;
    const char *why = NULL;
    (void)state;
    if (rls__tz_load("Europe/Berlin", &tz, &why) != 0) {
        print_message("no zone data: %s\n", why ? why : "?");
        skip();
    }
    static const struct { int cal; int64_t ms; int alg; int anchor; int64_t at, want; } c[] = {
        {DUR_DAY, 86400000, ALGO_FIXED_WINDOW, ANCHOR_ALIGNED, 1774778400000LL, 23 * HOUR},
        {DUR_DAY, 86400000, ALGO_SLIDING_WINDOW, ANCHOR_ALIGNED, 1792922400000LL, 25 * HOUR},
        {DUR_DAY, 86400000, ALGO_FIXED_WINDOW, ANCHOR_ALIGNED, 1792400000000LL, 24 * HOUR},
        {DUR_WEEK, 7 * 86400000LL, ALGO_FIXED_WINDOW, ANCHOR_ALIGNED, 1792922400000LL, 169 * HOUR},
        {DUR_MONTH, 30 * 86400000LL, ALGO_FIXED_WINDOW, ANCHOR_ALIGNED, 1771000000000LL, 28 * 24 * HOUR},
        {DUR_FIXED, 7 * 86400000LL, ALGO_FIXED_WINDOW, ANCHOR_ALIGNED, 1792922400000LL, 168 * HOUR},
        {DUR_DAY, 86400000, ALGO_FIXED_WINDOW, ANCHOR_FIRST_HIT, 1792922400000LL, 24 * HOUR},
        {DUR_DAY, 86400000, ALGO_TOKEN_BUCKET, ANCHOR_ALIGNED, 1792922400000LL, 24 * HOUR},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        fx f = {0};
        rls_result res;
        decide_out out;
        rule_limit *d = add(&f, "w", c[i].alg, 5, c[i].ms);
        d->window.calendar = c[i].cal;
        d->anchor = c[i].anchor;
        d->tz = tz;
        assert_int_equal(rls__decide_window_ms(d, c[i].at), c[i].want);
        assert_int_equal(check(&f, TIER_NORMAL, c[i].at, 1, &res, &out), 0);
        assert_true(res.allowed);
        assert_int_equal(res.window_ms, c[i].want);
    }
    rls__tz_free(tz);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_peek_changes_nothing),
        cmocka_unit_test(test_deciding_longest_wait),
        cmocka_unit_test(test_deciding_never_wins),
        cmocka_unit_test(test_deciding_least_fraction_exact),
        cmocka_unit_test(test_shadow_never_denies),
        cmocka_unit_test(test_overage_reports_nominal),
        cmocka_unit_test(test_unlimited_counts_past_capacity),
        cmocka_unit_test(test_no_limits_and_blocked_tier),
        cmocka_unit_test(test_fixed_results),
        cmocka_unit_test(test_clock_floor),
        cmocka_unit_test(test_sibling_carry_over),
        cmocka_unit_test(test_count_denied),
        cmocka_unit_test(test_penalty_index),
        cmocka_unit_test(test_refund),
        cmocka_unit_test(test_refund_given),
        cmocka_unit_test(test_invalid_limits_refused),
        cmocka_unit_test(test_calendar_window_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
