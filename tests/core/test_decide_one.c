/*
 * test_decide_one.c - rls__decide_one (core/decide.c), the one-limit
 * decision of the memory-class fast lane, against the general decision
 * rls__decide_check it stands for: over random limits (every algorithm,
 * soft, shadow, count_denied, penalties, first-hit anchors, calendar
 * windows in UTC and in a zone with DST, invalid parameters), states
 * (absent, present, from the future, sliding logs with and without room)
 * and times (window edges, DST days, both directions), the return, the
 * result (every byte), out, the item's meta, changed and denied, and the
 * new state (every field and log byte) must be the same, with and without
 * the caller's window cache, whose window must always be the one
 * rls__window_compute gives.
 */
#include "testutil.h"
#include "decide.h"
#include "window.h"

#define NOW 1767225600000LL   /* 2026-01-01T00:00:00Z */
#define HOUR 3600000LL
#define DAY 86400000LL
#define LOGCAP (20 * ALGO_LOG_ENTRY)

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t pick(const int64_t *v, size_t n)
{
    return v[rnd() % n];
}

#define PICK(a) pick(a, sizeof a / sizeof a[0])

/* One limit, its state (log in its own buffer) and the item. */
typedef struct one {
    rule_limit def;
    resolved_limit rl;
    algo_state st;
    unsigned char log[LOGCAP];
    decide_item it;
} one;

static void one_link(one *o)
{
    memset(&o->it, 0, sizeof o->it);
    o->it.rl = &o->rl;
    o->it.st = &o->st;
    if (o->st.log)
        o->st.log = o->log;
}

/* A copy of src pointing at its own limit, state and log. */
static void one_copy(one *dst, const one *src)
{
    memcpy(dst, src, sizeof *dst);
    dst->rl.def = &dst->def;
    dst->it.rl = &dst->rl;
    dst->it.st = &dst->st;
    if (dst->st.log)
        dst->st.log = dst->log;
}

static const rls_tz *zones[2];

static void random_limit(one *o)
{
    static const int64_t limits[] = {1, 2, 3, 5, 10, 100, 1000, 1000000000LL, INT64_MAX / 2,
                                     INT64_MAX};
    static const int64_t windows[] = {1, 7, 1000, 60000, HOUR, 2 * HOUR, DAY, 2 * DAY,
                                      7 * DAY, 30 * DAY};
    rule_limit *d = &o->def;
    memset(o, 0, sizeof *o);
    snprintf(d->name, sizeof d->name, "%s", rnd() % 8 ? "lim" : "a-limit-name-that-is-long");
    if (rnd() % 4 == 0) {   /* any length up to the array's, bytes that test the word
                             * copy (high, 0x01), what follows the NUL not zero */
        static const unsigned char b[] = {'a', 0x01, 0x80, 0xff, 0x7f, '_'};
        size_t len = (size_t)(rnd() % sizeof d->name), fill = rnd() % 2;
        for (size_t i = 0; i < sizeof d->name; i++)
            d->name[i] = (char)(i < len ? b[rnd() % sizeof b] : fill ? b[rnd() % sizeof b] : 0);
        if (len < sizeof d->name && rnd() % 8)
            d->name[len] = '\0';   /* else no NUL at all: cut at 63 bytes */
    }
    d->algorithm = 1 + (int)(rnd() % 6);
    d->limit = PICK(limits);
    if (d->algorithm == ALGO_SLIDING_LOG && d->limit > 16 && rnd() % 4)
        d->limit = 1 + (int64_t)(rnd() % 16);
    d->burst = rnd() % 3 ? 0 : PICK(limits);
    d->window.ms = PICK(windows);
    d->window.calendar = DUR_FIXED;
    if (rnd() % 3 == 0) {
        static const int cal[] = {DUR_DAY, DUR_WEEK, DUR_MONTH};
        d->window.calendar = cal[rnd() % 3];
        d->window.ms = d->window.calendar == DUR_DAY ? DAY : d->window.calendar == DUR_WEEK
                                                                ? 7 * DAY : 30 * DAY;
    }
    d->tz = zones[rnd() % 2];
    d->anchor = rnd() % 4 ? ANCHOR_ALIGNED : ANCHOR_FIRST_HIT;
    d->nblock_for = rnd() % 3 == 0;
    d->block_for[0] = 60000;
    d->overage_pct = rnd() % 4 ? 0 : (int)(rnd() % 200);
    d->mode = rnd() % 5 ? MODE_ENFORCE : MODE_SHADOW;
    d->count_denied = rnd() % 5 == 0;
    if (rnd() % 50 == 0)
        d->limit = 0;        /* refused by core: both say -1 */
    if (rnd() % 50 == 0)
        d->window.ms = 0;
    o->rl.def = d;
    o->rl.limit = d->limit;
    o->rl.burst = d->burst > 0 ? d->burst : d->limit;
    if (rnd() % 8 == 0) {    /* an override */
        o->rl.limit = PICK(limits);
        o->rl.burst = d->burst > 0 ? d->burst : o->rl.limit;
        o->rl.overridden = 1;
    }
}

static void random_state(one *o, int64_t now)
{
    static const int64_t offs[] = {0, 1, -1, 999, -1000, 60000, -60000, -HOUR, HOUR, -DAY,
                                   DAY, -40 * DAY};
    static const int64_t counts[] = {0, 1, 2, 4, 5, 99, 1000000000LL, INT64_MAX, -1};
    algo_state *s = &o->st;
    memset(s, 0, sizeof *s);
    s->present = rnd() % 4 != 0;
    s->last_ms = now + PICK(offs);
    s->expires_ms = s->last_ms + PICK(offs);
    if (o->def.algorithm == ALGO_FIXED_WINDOW || o->def.algorithm == ALGO_SLIDING_WINDOW) {
        int64_t st0, prev, end;
        rls__window_compute(&o->def.window, o->def.tz, s->last_ms, &prev, &st0, &end);
        s->a = rnd() % 2 ? st0 : rnd() % 2 ? prev : s->last_ms;
        s->b = PICK(counts);
        s->c = PICK(counts);
    } else if (o->def.algorithm == ALGO_TOKEN_BUCKET) {
        s->a = (int64_t)(rnd() % 1000) * (o->def.window.ms > 0 ? o->def.window.ms : 1);
        s->b = s->last_ms - (int64_t)(rnd() % 100000);
    } else if (o->def.algorithm == ALGO_SLIDING_LOG) {
        s->log = o->log;
        s->log_cap = rnd() % 6 ? LOGCAP : (rnd() % 2 ? 0 : 2 * ALGO_LOG_ENTRY);
        size_t k = (size_t)(rnd() % 6);
        if (k * ALGO_LOG_ENTRY > s->log_cap)
            k = s->log_cap / ALGO_LOG_ENTRY;
        int64_t t = s->last_ms - (int64_t)(rnd() % 120000);
        for (size_t i = 0; i < k; i++) {
            int64_t units = 1 + (int64_t)(rnd() % 3);
            for (int b = 0; b < 8; b++) {
                o->log[i * 16 + (size_t)b] = (unsigned char)((uint64_t)t >> (8 * b));
                o->log[i * 16 + 8 + (size_t)b] = (unsigned char)((uint64_t)units >> (8 * b));
            }
            t += (int64_t)(rnd() % 20000);
        }
        s->log_len = k * ALGO_LOG_ENTRY;
        s->a = (int64_t)k;
        if (rnd() % 10 == 0)
            s->log = NULL;   /* no buffer at all */
    } else {
        s->a = (s->last_ms + (int64_t)(rnd() % 100000) - 50000) * 1000000LL;
    }
    o->it.floor_ms = rnd() % 6 ? 0 : now + PICK(offs);
}

/* Times near window edges and DST changes (Europe/Berlin 2026-03-29,
 * 2026-10-25), around NOW. */
static int64_t random_now(void)
{
    static const int64_t base[] = {NOW, 1774746000000LL, 1792890000000LL, 1772323200000LL,
                                   1767139200000LL};
    static const int64_t offs[] = {0, 1, -1, 999, 1000, 59999, 60000, HOUR - 1, HOUR,
                                   DAY - 1, 12 * HOUR};
    if (rnd() % 100 == 0)
        return -(int64_t)(rnd() % 100000);   /* before 1970: the clock floor is 0 */
    return PICK(base) + PICK(offs) * (rnd() % 2 ? 1 : -1);
}

static void expect_same(const one *a, const one *b, int rca, int rcb, const rls_result *ra,
                        const rls_result *rb, const decide_out *oa, const decide_out *ob)
{
    assert_int_equal(rca, rcb);
    if (rca != 0)
        return;
    assert_memory_equal(ra, rb, sizeof *ra);
    /* the rule: the limit's name as snprintf("%s") cuts it, zeros after */
    char want[sizeof ra->rule];
    memset(want, 0, sizeof want);
    memcpy(want, a->def.name, strnlen(a->def.name, sizeof want - 1));
    assert_memory_equal(ra->rule, want, sizeof want);
    /* reserved_ zero, over the 0xa5 compare() left there: fill_result
     * zeroes the result in parts, not as a whole */
    static const char zero[sizeof ra->reserved_];
    assert_memory_equal(ra->reserved_, zero, sizeof zero);
    assert_int_equal(oa->now, ob->now);
    assert_int_equal(oa->deciding, ob->deciding);
    assert_int_equal(oa->penalty, ob->penalty);
    const algo_meta *ma = &a->it.meta, *mb = &b->it.meta;   /* field by field: padding */
    assert_int_equal(ma->allowed, mb->allowed);
    assert_int_equal(ma->capacity, mb->capacity);
    assert_int_equal(ma->remaining, mb->remaining);
    assert_int_equal(ma->reset_ms, mb->reset_ms);
    assert_int_equal(ma->retry_after_ms, mb->retry_after_ms);
    assert_int_equal(ma->delay_ms, mb->delay_ms);
    assert_int_equal(ma->used, mb->used);
    assert_int_equal(a->it.changed, b->it.changed);
    assert_int_equal(a->it.denied, b->it.denied);
    assert_int_equal(a->st.present, b->st.present);
    assert_int_equal(a->st.a, b->st.a);
    assert_int_equal(a->st.b, b->st.b);
    assert_int_equal(a->st.c, b->st.c);
    assert_int_equal(a->st.last_ms, b->st.last_ms);
    assert_int_equal(a->st.expires_ms, b->st.expires_ms);
    assert_int_equal(a->st.log_len, b->st.log_len);
    assert_true(!a->st.log == !b->st.log);
    if (a->st.log_len && a->st.log)
        assert_memory_equal(a->st.log, b->st.log, a->st.log_len);
}

/* The general decision and the one-limit one on copies of o: the same. */
static void compare(const one *o, int64_t now, int64_t cost, decide_wcache *wc)
{
    one g, f;
    rls_result rg, rf;
    decide_out og, of;
    one_copy(&g, o);
    one_copy(&f, o);
    memset(&rg, 0xa5, sizeof rg);   /* every byte is written, or neither */
    memset(&rf, 0xa5, sizeof rf);
    int rcg = rls__decide_check(&g.it, 1, TIER_NORMAL, now, 0, cost, 1, &rg, &og);
    int rcf = rls__decide_one(&f.it, now, cost, wc, &rf, &of);
    expect_same(&g, &f, rcg, rcf, &rg, &rf, &og, &of);
}

static rls_tz *berlin;

static int load_zones(void **state)
{
    const char *why = NULL;
    (void)state;
    zones[0] = NULL;   /* UTC */
    zones[1] = rls__tz_load("Europe/Berlin", &berlin, &why) == 0 ? berlin : NULL;
    if (!zones[1])
        print_message("no zone data (%s): UTC only\n", why ? why : "?");
    return 0;
}

static int free_zones(void **state)
{
    (void)state;
    rls__tz_free(berlin);
    return 0;
}

/* Random limits, states and costs, each decided both ways. */
static void test_random_same(void **state)
{
    static const int64_t costs[] = {1, 1, 1, 2, 3, 5, 10, 1000000000LL, INT64_MAX, 0, -1};
    (void)state;
    for (int i = 0; i < 300000; i++) {
        one o;
        int64_t now = random_now();
        random_limit(&o);
        one_link(&o);
        random_state(&o, now);
        decide_wcache wc = {0};
        compare(&o, now, PICK(costs), rnd() % 2 ? &wc : NULL);
    }
}

/* One limit decided again and again, its state carried forward, the
 * window cache kept across calls while time walks forward across window
 * edges and DST days, then jumps back (a caller's older time): the same
 * as the general decision at every step, and the cache always holding
 * the window rls__window_compute gives for the time it was asked at. */
static void test_cache_walk(void **state)
{
    static const int64_t steps[] = {1, 7, 999, 1000, 60000, HOUR, HOUR - 1, DAY / 3};
    (void)state;
    for (int round = 0; round < 3000; round++) {
        one g, f;
        decide_wcache wc = {0};
        int64_t now = random_now();
        random_limit(&g);
        g.def.limit = g.def.limit == 0 ? 1 : g.def.limit;
        g.def.window.ms = g.def.window.ms == 0 ? 1000 : g.def.window.ms;
        g.rl.limit = g.rl.limit == 0 ? 1 : g.rl.limit;
        one_link(&g);
        memset(&g.st, 0, sizeof g.st);
        if (g.def.algorithm == ALGO_SLIDING_LOG) {
            g.st.log = g.log;
            g.st.log_cap = LOGCAP;
        }
        one_copy(&f, &g);
        for (int k = 0; k < 60; k++) {
            rls_result rg, rf;
            decide_out og, of;
            int64_t cost = 1 + (int64_t)(rnd() % 3);
            memset(&rg, 0, sizeof rg);
            memset(&rf, 0, sizeof rf);
            int rcg = rls__decide_check(&g.it, 1, TIER_NORMAL, now, 0, cost, 1, &rg, &og);
            int rcf = rls__decide_one(&f.it, now, cost, &wc, &rf, &of);
            expect_same(&g, &f, rcg, rcf, &rg, &rf, &og, &of);
            if (wc.start < wc.end) {
                int64_t p, s, e;
                rls__window_compute(&f.def.window, f.def.tz, wc.start, &p, &s, &e);
                assert_int_equal(s, wc.start);
                assert_int_equal(e, wc.end);
                assert_int_equal(p, wc.prev_start);
            }
            if (g.def.algorithm == ALGO_SLIDING_LOG && g.st.log_len + 2 * ALGO_LOG_ENTRY >
                                                           LOGCAP) {
                g.st.log_len = f.st.log_len = 0;   /* keep room: start the log again */
                g.st.present = f.st.present = 0;
            }
            now += rnd() % 8 == 0 ? -PICK(steps) : PICK(steps);
        }
    }
}

/* The cases the one-limit decision hands to the general one, and a few
 * fixed answers: admitted, denied with its wait and penalty, a cost no
 * capacity admits (never, no penalty). */
static void test_fixed_cases(void **state)
{
    (void)state;
    one o;
    rls_result res;
    decide_out out;
    memset(&o, 0, sizeof o);
    snprintf(o.def.name, sizeof o.def.name, "per_minute");
    o.def.algorithm = ALGO_FIXED_WINDOW;
    o.def.limit = 2;
    o.def.window.ms = 60000;
    o.def.nblock_for = 1;
    o.def.block_for[0] = 1000;
    o.rl.def = &o.def;
    o.rl.limit = o.rl.burst = 2;
    one_link(&o);
    decide_wcache wc = {0};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rls__decide_one(&o.it, NOW + 10, 1, &wc, &res, &out), 0);
        assert_true(res.allowed);
        assert_int_equal(res.remaining, 1 - i);
        assert_int_equal(out.penalty, -1);
        assert_true(o.it.changed);
    }
    assert_int_equal(wc.start, NOW);
    assert_int_equal(wc.end, NOW + 60000);
    assert_int_equal(rls__decide_one(&o.it, NOW + 20, 1, &wc, &res, &out), 0);
    assert_false(res.allowed);
    assert_int_equal(res.reason, RLS_REASON_LIMIT);
    assert_int_equal(res.retry_after_ms, 60000 - 20);
    assert_string_equal(res.rule, "per_minute");
    assert_int_equal(out.penalty, 0);
    assert_false(o.it.changed);
    assert_int_equal(o.st.b, 2);
    assert_int_equal(rls__decide_one(&o.it, NOW + 30, 3, &wc, &res, &out), 0);
    assert_int_equal(res.reason, RLS_REASON_COST_EXCEEDS);
    assert_int_equal(res.retry_after_ms, -1);
    assert_int_equal(out.penalty, -1);
    /* the next window: the cache moves with it */
    assert_int_equal(rls__decide_one(&o.it, NOW + 60000, 1, &wc, &res, &out), 0);
    assert_true(res.allowed);
    assert_int_equal(wc.start, NOW + 60000);
    /* handed over, the same answers: shadow, count_denied, a sibling */
    for (int c = 0; c < 3; c++) {
        one a;
        random_limit(&a);
        one_link(&a);
        random_state(&a, NOW);
        a.def.mode = c == 0 ? MODE_SHADOW : MODE_ENFORCE;
        a.def.count_denied = c == 1;
        decide_sib sib;
        memset(&sib, 0, sizeof sib);
        if (c == 2) {
            a.it.sib = &sib;
            a.it.nsib = 1;
        }
        decide_wcache fresh = {0};
        compare(&a, NOW + 5, 1, &fresh);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_same),
        cmocka_unit_test(test_cache_walk),
        cmocka_unit_test(test_fixed_cases),
    };
    return cmocka_run_group_tests(tests, load_zones, free_zones);
}
