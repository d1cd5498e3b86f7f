/*
 * test_memclass_diff.c - a differential of the two homes of a limit's
 * state (issue #19, item 1): the same limit declared `durability: memory`
 * and durable must answer every call alike, whatever the sequence.
 *
 * For every algorithm, random sequences of checks, peeks, refunds and
 * reservations (committed or cancelled) on a few keys, with random costs
 * (1 up to past the limit) and a clock that steps forward by random
 * amounts, sometimes far past the window: each call is made on the
 * memory action and on the
 * durable one, and every field of the two results (allowed, reason,
 * limit, remaining, reset, retry_after, delay, window) must agree, as
 * must the return codes.  Runs near the start of time (0) and near its
 * end (RLS_TIME_MAX), where window arithmetic meets the range's ends, and
 * with calendar windows (1d in a zone with daylight saving).  Both
 * backends.  Knobs: RLS_MEMDIFF_OPS (calls per sequence, default 400),
 * RLS_MEMDIFF_SEED.
 *
 * The clock never goes back: a caller behind the state's time is decided
 * at the state's time in both homes, but a durable state that expired is
 * deleted by GC at a moment of its own (the limit's clock floor then
 * stands for it) while an expired memory entry keeps its time until its
 * slot is reused, so the two may decide a late caller at different
 * (both safe) times.  test_clock.c checks that no late caller gains.
 */
#include <stdlib.h>
#include <time.h>
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  m_fw: { limits: [ { name: l, algorithm: fixed_window, limit: 7, window: 10s,"
    " durability: memory } ] }\n"
    "  d_fw: { limits: [ { name: l, algorithm: fixed_window, limit: 7, window: 10s } ] }\n"
    "  m_sw: { limits: [ { name: l, algorithm: sliding_window, limit: 7, window: 10s,"
    " durability: memory } ] }\n"
    "  d_sw: { limits: [ { name: l, algorithm: sliding_window, limit: 7, window: 10s } ] }\n"
    "  m_sl: { limits: [ { name: l, algorithm: sliding_log, limit: 7, window: 10s,"
    " durability: memory } ] }\n"
    "  d_sl: { limits: [ { name: l, algorithm: sliding_log, limit: 7, window: 10s } ] }\n"
    "  m_tb: { limits: [ { name: l, algorithm: token_bucket, limit: 3, window: 10s, burst: 7,"
    " durability: memory } ] }\n"
    "  d_tb: { limits: [ { name: l, algorithm: token_bucket, limit: 3, window: 10s, burst: 7 } ] }\n"
    "  m_gc: { limits: [ { name: l, algorithm: gcra, limit: 3, window: 10s, burst: 7,"
    " durability: memory } ] }\n"
    "  d_gc: { limits: [ { name: l, algorithm: gcra, limit: 3, window: 10s, burst: 7 } ] }\n"
    "  m_lb: { limits: [ { name: l, algorithm: leaky_bucket, limit: 3, window: 10s, burst: 7,"
    " durability: memory } ] }\n"
    "  d_lb: { limits: [ { name: l, algorithm: leaky_bucket, limit: 3, window: 10s, burst: 7 } ] }\n"
    "  m_day: { limits: [ { name: l, algorithm: fixed_window, limit: 7, window: 1d,"
    " timezone: Europe/Berlin, durability: memory } ] }\n"
    "  d_day: { limits: [ { name: l, algorithm: fixed_window, limit: 7, window: 1d,"
    " timezone: Europe/Berlin } ] }\n";

static const char *ALGS[] = {"fw", "sw", "sl", "tb", "gc", "lb", "day"};
#define NALGS ((int)(sizeof ALGS / sizeof ALGS[0]))

static rls_db *open_mem(const itest *t)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    int rc = rls_open(&db, t->path, &o);
    if (rc != RLS_OK)
        fail_msg("open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

struct call {
    int op;          /* 0 check, 1 peek, 2 refund, 3 reserve+commit, 4 reserve+cancel */
    int64_t cost, now;
    const char *key;
};

/* One call on action; its code, result and refunded units. */
static int run(rls_db *db, const char *action, const struct call *c, rls_result *r,
               int64_t *refunded)
{
    int64_t id = 0;
    int rc;
    memset(r, 0, sizeof *r);
    *refunded = 0;
    switch (c->op) {
    case 0:
        return rls_check_at(db, action, c->key, c->cost, c->now, r);
    case 1:
        return rls_peek_at(db, action, c->key, c->cost, c->now, r);
    case 2:
        return rls_refund_units_at(db, action, c->key, c->cost, c->now, refunded);
    default:
        rc = rls_reserve_at(db, action, c->key, c->cost, 60000, c->now, &id, r);
        if (rc != RLS_OK || !r->allowed)
            return rc;
        return c->op == 3 ? rls_commit_at(db, id, c->now) : rls_cancel_at(db, id, c->now);
    }
}

static const char *OPS[] = {"check", "peek", "refund", "reserve+commit", "reserve+cancel"};

/* The calls of the sequence so far, printed when it diverges. */
static struct call trail[4096];
static long ntrail;

static void print_trail(const char *key)
{
    for (long j = 0; j < ntrail; j++)
        if (strcmp(trail[j].key, key) == 0)
            print_message("  call %ld: %s cost %lld at %lld\n", j, OPS[trail[j].op],
                          (long long)trail[j].cost, (long long)trail[j].now);
}

static void compare(const char *alg, long seq, long i, const struct call *c, int rm, int rd,
                    const rls_result *m, const rls_result *d, int64_t fm, int64_t fd)
{
    if (rm == rd && fm == fd && m->allowed == d->allowed && m->reason == d->reason &&
        m->limit == d->limit && m->remaining == d->remaining && m->reset_ms == d->reset_ms &&
        m->retry_after_ms == d->retry_after_ms && m->delay_ms == d->delay_ms &&
        m->window_ms == d->window_ms)
        return;
    print_trail(c->key);
    fail_msg("%s, sequence %ld, call %ld (%s cost %lld at %lld on %s): memory rc %s allowed %d "
             "reason %d remaining %lld reset %lld retry %lld delay %lld window %lld refunded "
             "%lld; durable rc %s allowed %d reason %d remaining %lld reset %lld retry %lld "
             "delay %lld window %lld refunded %lld", alg, seq, i, OPS[c->op],
             (long long)c->cost, (long long)c->now, c->key, rls_errname(rm), m->allowed,
             m->reason, (long long)m->remaining, (long long)m->reset_ms,
             (long long)m->retry_after_ms, (long long)m->delay_ms, (long long)m->window_ms,
             (long long)fm, rls_errname(rd), d->allowed, d->reason, (long long)d->remaining,
             (long long)d->reset_ms, (long long)d->retry_after_ms, (long long)d->delay_ms,
             (long long)d->window_ms, (long long)fd);
}

/* The next call of a sequence: mostly checks, small clock steps. */
static void next_call(unsigned *seed, int64_t *now, int64_t lo, int64_t hi, struct call *c)
{
    static const char *keys[] = {"a", "b", "c"};
    int dice = (int)(rand_r(seed) % 100);
    c->op = dice < 60 ? 0 : dice < 72 ? 1 : dice < 84 ? 2 : dice < 92 ? 3 : 4;
    c->cost = 1 + (int64_t)(rand_r(seed) % 9);   /* up to past the limit */
    c->key = keys[rand_r(seed) % 3];
    int step = (int)(rand_r(seed) % 100);
    int64_t d = step < 50 ? (int64_t)(rand_r(seed) % 700)
                : step < 90 ? (int64_t)(rand_r(seed) % 6000)
                            : (int64_t)(rand_r(seed) % 40000);
    *now += d;
    if (*now < lo)
        *now = lo;
    if (*now > hi)
        *now = hi;
    c->now = *now;
}

static long knob_ops(void)
{
    const char *v = getenv("RLS_MEMDIFF_OPS");
    long n = v && *v ? atol(v) : 400;
    return n > 0 ? n : 400;
}

static void differential(int64_t lo, int64_t hi, long seqs)
{
    itest *t = it_new(RULES);
    rls_db *db = open_mem(t);
    long ops = knob_ops();
    const char *sv = getenv("RLS_MEMDIFF_SEED");
    unsigned seed = sv && *sv ? (unsigned)strtoul(sv, NULL, 10) : (unsigned)time(NULL);
    print_message("seed %u, times %lld..%lld\n", seed, (long long)lo, (long long)hi);
    int64_t last_end = lo;
    for (long s = 0; s < seqs; s++) {
        const char *alg = ALGS[s % NALGS];
        char ma[16], da[16];
        snprintf(ma, sizeof ma, "m_%s", alg);
        snprintf(da, sizeof da, "d_%s", alg);
        int64_t now = s == 0 ? lo + (int64_t)(rand_r(&seed) % 1000) : last_end + 1;
        for (long i = 0; i < ops; i++) {
            struct call c;
            rls_result rm, rd;
            int64_t fm, fd;
            next_call(&seed, &now, lo, hi, &c);
            if (i < (long)(sizeof trail / sizeof trail[0]))
                trail[ntrail = i] = c, ntrail++;
            int cm = run(db, ma, &c, &rm, &fm);
            int cd = run(db, da, &c, &rd, &fd);
            compare(alg, s, i, &c, cm, cd, &rm, &rd, fm, fd);
        }
        for (int k = 0; k < 6; k++) {   /* a fresh start for the next one: */
            const char *key = k % 3 == 0 ? "a" : k % 3 == 1 ? "b" : "c";   /* a */
            int rc = rls_reset_at(db, k < 3 ? ma : da, key, now);   /* state that */
            if (rc != RLS_OK && rc != RLS_ENOTFOUND)   /* expired may be gone */
                fail_msg("reset %s: %s: %s", key, rls_errname(rc), rls_errmsg(db));
        }
        last_end = now;
    }
    rls_close(db);
    it_free(t);
}

static void memory_and_durable_agree(void **state)
{
    (void)state;
    differential(T0, T0 + 86400000LL * 400, 3 * NALGS);
}

static void memory_and_durable_agree_at_the_start_of_time(void **state)
{
    (void)state;
    differential(RLS_TIME_MIN, RLS_TIME_MIN + 86400000LL * 3, NALGS);
}

static void memory_and_durable_agree_at_the_end_of_time(void **state)
{
    (void)state;
    differential(RLS_TIME_MAX - 86400000LL * 3, RLS_TIME_MAX, NALGS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memory_and_durable_agree),
        cmocka_unit_test(memory_and_durable_agree_at_the_start_of_time),
        cmocka_unit_test(memory_and_durable_agree_at_the_end_of_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
