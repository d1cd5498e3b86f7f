/*
 * test_memlane.c - the memory-class fast lane (storage/memlane.c) against
 * the pipeline it short-cuts: two databases with the same rules, one
 * checked with the lane, the other without (rls__memlane_enabled), must
 * answer every call alike, every byte of the result and the return code,
 * whatever the sequence: every algorithm, soft, shadow and count_denied
 * limits, a penalty (the lane hands it over), two limits in one action,
 * a calendar day in a zone with daylight saving, tiers given by patterns
 * (unlimited, blocked, replaced limits), IP keys in every spelling and
 * email keys with tags and capitals (normalised alike), blocks set and
 * lifted by another handle meanwhile, invalid arguments, a clock that
 * mostly walks forward and sometimes back.  At the end the states (a
 * peek of every key), the stats and the metrics (latency aside: it is
 * a measure of time) must be the same in both.  SQLite: PostgreSQL has
 * no fast path (memclass.c).  Knobs: RLS_MEMLANE_OPS (default 30000),
 * RLS_MEMLANE_SEED.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include "itest.h"
#include "db.h"
#include "memclass.h"

static const char *RULES =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {}, staff: { unlimited: true }, banned: { blocked: true } }\n"
    "actions:\n"
    "  fw: { limits: [ { name: l, algorithm: fixed_window, limit: 5, window: 10s,"
    " durability: memory } ] }\n"
    "  sw: { limits: [ { name: l, algorithm: sliding_window, limit: 5, window: 10s,"
    " durability: memory } ] }\n"
    "  sl: { limits: [ { name: l, algorithm: sliding_log, limit: 5, window: 10s,"
    " durability: memory } ] }\n"
    "  tb: { limits: [ { name: l, algorithm: token_bucket, limit: 3, window: 10s, burst: 5,"
    " durability: memory } ] }\n"
    "  gc: { limits: [ { name: l, algorithm: gcra, limit: 3, window: 10s, burst: 5,"
    " durability: memory } ] }\n"
    "  lb: { limits: [ { name: l, algorithm: leaky_bucket, limit: 3, window: 10s, burst: 5,"
    " durability: memory } ] }\n"
    "  soft: { limits: [ { name: l, algorithm: fixed_window, limit: 5, window: 10s,"
    " overage: 40, durability: memory } ] }\n"
    "  shadow:\n"
    "    limits:\n"
    "      - { name: s, algorithm: fixed_window, limit: 2, window: 10s, mode: shadow,"
    " durability: memory }\n"
    "      - { name: e, algorithm: token_bucket, limit: 6, window: 10s, durability: memory }\n"
    "  cd: { limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 10s,"
    " count_denied: true, durability: memory } ] }\n"
    "  pen: { limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 10s,"
    " block_for: [2s, 5s], durability: memory } ] }\n"
    "  two:\n"
    "    limits:\n"
    "      - { name: a, algorithm: fixed_window, limit: 4, window: 10s, durability: memory }\n"
    "      - { name: b, algorithm: gcra, limit: 6, window: 1m, durability: memory }\n"
    "  day: { limits: [ { name: l, algorithm: fixed_window, limit: 9, window: 1d,"
    " timezone: Europe/Berlin, durability: memory } ] }\n"
    "  ip:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 4, window: 10s,"
    " durability: memory } ]\n"
    "  mail:\n"
    "    key: email\n"
    "    limits: [ { name: l, algorithm: sliding_window, limit: 4, window: 10s,"
    " durability: memory } ]\n"
    "  tiered:\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 10s,"
    " durability: memory } ]\n"
    "    tiers:\n"
    "      pro: [ { name: l, algorithm: token_bucket, limit: 6, window: 10s,"
    " durability: memory } ]\n"
    "assignments:\n"
    "  - { key: \"user:*\", action: tiered, tier: pro }\n"
    "  - { key: \"staff:*\", action: tiered, tier: staff }\n"
    "  - { key: \"bad:*\", action: tiered, tier: banned }\n";

static const char *const ACTIONS[] = {"fw", "sw", "sl", "tb", "gc", "lb", "soft", "shadow",
                                      "cd", "pen", "two", "day", "ip", "mail", "tiered"};
#define NACT ((int)(sizeof ACTIONS / sizeof ACTIONS[0]))

static const char *const KEYS[] = {
    "k1", "k2", "K1", "a much longer key of many bytes to be sure of that: 0123456789",
    "10.0.0.1", "10.0.0.01", "::ffff:10.0.0.1", "2001:db8::1", "2001:DB8:0::1",
    "2001:db8::2:1", "bob@example.com", "Bob+news@Example.com", "bob+x@example.com",
    "user:1", "user:2", "staff:1", "bad:1", "not an ip", "a@b@c", "@x",
};
#define NKEY ((int)(sizeof KEYS / sizeof KEYS[0]))

static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static rls_db *open_mem(const itest *t)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    return db;
}

/* One check on db, the lane on or off. */
static int check(rls_db *db, int lane, const char *action, const char *key, int64_t cost,
                 int64_t now, rls_result *r)
{
    rls__memlane_enabled = lane;
    memset(r, 0x5a, sizeof *r);   /* every byte is the call's */
    int rc = rls_check_at(db, action, key, cost, now, r);
    rls__memlane_enabled = 1;
    return rc;
}

static void same_check(rls_db *a, rls_db *b, const char *action, const char *key, int64_t cost,
                       int64_t now, int i)
{
    rls_result ra, rb;
    int rca = check(a, 1, action, key, cost, now, &ra);
    int rcb = check(b, 0, action, key, cost, now, &rb);
    if (rca != rcb || memcmp(&ra, &rb, sizeof ra) != 0)
        fail_msg("call %d: %s '%s' cost %lld at %lld: lane %s allowed %d reason %d remaining "
                 "%lld retry %lld rule '%s'; pipeline %s allowed %d reason %d remaining %lld "
                 "retry %lld rule '%s'",
                 i, action ? action : "(null)", key ? key : "(null)", (long long)cost,
                 (long long)now, rls_errname(rca), ra.allowed, ra.reason,
                 (long long)ra.remaining, (long long)ra.retry_after_ms, ra.rule,
                 rls_errname(rcb), rb.allowed, rb.reason, (long long)rb.remaining,
                 (long long)rb.retry_after_ms, rb.rule);
    assert_string_equal(rls_errmsg(a), rls_errmsg(b));
}

/* The metrics rows of db but latency (a measure of time), as one text. */
static void metrics_text(rls_db *db, int64_t now, char *out, size_t size)
{
    rls_rows *rows = NULL;
    size_t n = 0;
    assert_int_equal(rls_metrics_at(db, now, &rows), RLS_OK);
    out[0] = '\0';
    for (int r = 0; r < rls_rows_count(rows); r++) {
        const char *m = rls_rows_text(rows, r, 0);
        if (strncmp(m, "latency", 7) == 0 && strcmp(m, "latency_count") != 0)
            continue;
        n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s/%s/%s=%lld\n", m,
                              rls_rows_text(rows, r, 1), rls_rows_text(rows, r, 2),
                              (long long)rls_rows_int(rows, r, 3));
    }
    rls_rows_free(rows);
}

/* Random calls on both; a third handle on each blocks and unblocks keys
 * meanwhile (a change the trust of both must see). */
static void lane_answers_as_the_pipeline(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    const char *s = getenv("RLS_MEMLANE_SEED"), *o = getenv("RLS_MEMLANE_OPS");
    rng = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    rng = rng ? rng : 1;
    long ops = o ? atol(o) : 30000;
    print_message("seed %llu\n", (unsigned long long)rng);
    itest *ta = it_new(RULES), *tb = it_new(RULES);
    rls_db *a = open_mem(ta), *b = open_mem(tb), *adm_a = open_mem(ta), *adm_b = open_mem(tb);
    int64_t now = 1774740000000LL;   /* Europe/Berlin's 23-hour day, 2026-03-29 */
    for (long i = 0; i < ops; i++) {
        const char *action = ACTIONS[rnd() % NACT], *key = KEYS[rnd() % NKEY];
        int64_t cost = rnd() % 8 ? 1 : 1 + (int64_t)(rnd() % 7);
        uint64_t w = rnd() % 100;
        now += w < 70 ? (int64_t)(rnd() % 300) : w < 95 ? (int64_t)(rnd() % 5000)
                                                         : -(int64_t)(rnd() % 3000);
        if (rnd() % 200 == 0) {   /* a block of the key, or its end */
            const char *bk = KEYS[rnd() % NKEY], *ba = rnd() % 2 ? action : NULL;
            int set = rnd() % 2;
            int ra = set ? rls_block_set_at(adm_a, ba, bk, now + 3000, "t", now)
                         : rls_block_unset_at(adm_a, ba, bk, now);
            int rb = set ? rls_block_set_at(adm_b, ba, bk, now + 3000, "t", now)
                         : rls_block_unset_at(adm_b, ba, bk, now);
            assert_int_equal(ra, rb);
        }
        if (rnd() % 100 == 0) {   /* an argument the pipeline refuses */
            static const char *const bad_act[] = {"nope", "", NULL, "fw"};
            const char *ba = bad_act[rnd() % 4];
            const char *bk = ba && strcmp(ba, "fw") == 0 ? (rnd() % 2 ? "" : NULL) : key;
            same_check(a, b, ba, bk, rnd() % 2 ? cost : 0, now, (int)i);
            same_check(a, b, action, key, RLS_COST_MAX + 1, now, (int)i);
            same_check(a, b, action, key, cost, -1, (int)i);
            continue;
        }
        same_check(a, b, action, key, cost, now, (int)i);
    }
    /* the states: a peek of every key of every action */
    for (int x = 0; x < NACT; x++)
        for (int k = 0; k < NKEY; k++) {
            rls_result ra, rb;
            assert_int_equal(rls_peek_at(a, ACTIONS[x], KEYS[k], 1, now, &ra),
                             rls_peek_at(b, ACTIONS[x], KEYS[k], 1, now, &rb));
            assert_memory_equal(&ra, &rb, sizeof ra);
        }
    /* the comparison compared the lane (most checks: the others are the
     * keys the trust does not cover, blocks, penalties, the first check of
     * a key) with the pipeline */
    print_message("lane: %llu of %ld checks\n", (unsigned long long)rls__memlane_served(a), ops);
    assert_true(rls__memlane_served(a) > (uint64_t)ops / 4);
    assert_int_equal(rls__memlane_served(b), 0);
    /* the stats and metrics, flushed at close */
    rls_close(a);
    rls_close(b);
    char ma[16384], mb[16384];
    metrics_text(adm_a, now, ma, sizeof ma);
    metrics_text(adm_b, now, mb, sizeof mb);
    assert_string_equal(ma, mb);
    assert_non_null(strstr(ma, "checks_allowed/fw"));
    /* the keys under pressure (seen_ms aside: rows keep the latest a
     * flush wrote, and the two flushed at other checks, before the clock
     * went back or after) */
    static const char *const ks[] = {
        "SELECT count(*) FROM rls_key_stats",
        "SELECT total(denied) FROM rls_key_stats",
        "SELECT total(ppm) FROM rls_key_stats",
        "SELECT total(last_denied_ms % 1000003) FROM rls_key_stats",
        "SELECT total(length(key) * unicode(action)) FROM rls_key_stats",
    };
    for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
        assert_int_equal(it_sql_int(ta->path, ks[q]), it_sql_int(tb->path, ks[q]));
    assert_true(it_sql_int(ta->path, ks[0]) > 0);
    rls_close(adm_a);
    rls_close(adm_b);
    it_free(ta);
    it_free(tb);
}

/* Is the check served by the lane?  The first check of a key learns the
 * trust in a transaction, and the trust lasts a second: a check after it
 * that the lane serves is served within two tries (a slow machine may
 * see the trust end between them). */
static int served(rls_db *db, const char *action, const char *key, int64_t cost, int64_t now)
{
    rls_result r;
    for (int i = 0; i < 3; i++) {
        uint64_t before = rls__memlane_served(db);
        assert_int_equal(rls_check_at(db, action, key, cost, now, &r), RLS_OK);
        if (rls__memlane_served(db) == before + 1)
            return 1;
        assert_int_equal(rls__memlane_served(db), before);
    }
    return 0;
}

/* The lane serves the common case (else the comparison above would
 * compare the pipeline with itself), and hands over what it leaves to the
 * pipeline; and what it serves is counted as the pipeline counts it. */
static void lane_serves_the_common_case(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    rls_db *db = open_mem(t);
    int64_t now = 1774740000000LL;
    /* every algorithm, two limits, a calendar day, keys already in their
     * normal form and keys that are not, a tier by a pattern */
    static const char *const yes[][2] = {
        {"fw", "k1"}, {"sw", "k1"}, {"sl", "k1"}, {"tb", "k1"}, {"gc", "k1"}, {"lb", "k1"},
        {"soft", "k1"}, {"shadow", "k1"}, {"cd", "k1"}, {"two", "k1"}, {"day", "k1"},
        {"ip", "10.0.0.1"}, {"ip", "::ffff:10.0.0.9"}, {"ip", "2001:DB8::1"},
        {"mail", "bob@example.com"}, {"mail", "Bob+x@Example.com"}, {"tiered", "user:1"},
        {"tiered", "staff:1"}, {"tiered", "k1"}, {"pen", "k1"},
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!served(db, yes[i][0], yes[i][1], 1, now))
            fail_msg("%s '%s' not served by the lane", yes[i][0], yes[i][1]);
    /* handed over: a blocked tier, invalid keys, a penalty block to write
     * (pen's fourth check in its window), a cost over every limit */
    static const char *const no[][2] = {
        {"tiered", "bad:1"}, {"ip", "10.0.0.01"}, {"mail", "a@b@c"}, {"nope", "k1"},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        rls_result r;
        uint64_t before = rls__memlane_served(db);
        (void)rls_check_at(db, no[i][0], no[i][1], 1, now, &r);
        (void)rls_check_at(db, no[i][0], no[i][1], 1, now, &r);
        assert_int_equal(rls__memlane_served(db), before);
    }
    assert_true(served(db, "pen", "k1", 1, now));
    assert_true(served(db, "pen", "k1", 1, now));   /* its third */
    uint64_t before = rls__memlane_served(db);
    rls_result r;
    assert_int_equal(rls_check_at(db, "pen", "k1", 1, now, &r), RLS_OK);
    assert_false(r.allowed);
    assert_int_equal(rls__memlane_served(db), before);   /* the block is the pipeline's */
    assert_int_equal(rls_check_at(db, "pen", "k1", 1, now + 1, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    rls_close(db);
    it_free(t);
}

/* The lane times one check in about RLS_MET_LANE_SAMPLE, and each timed
 * one counts for the untimed ones before it: every check is in
 * latency_count and in one bucket, whether the flush comes after a timed
 * check or after untimed ones, in one period or across several. */
static void lane_latency_is_sampled_and_counted(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    int64_t now = 1774740000000LL, checks = 0;
    for (int round = 0; round < 3; round++) {   /* a flush at each close */
        rls_db *db = open_mem(t);
        long n = 2000 + 7 * round;   /* ends after an untimed one, most likely */
        for (long i = 0; i < n; i++, checks++) {
            rls_result r;
            char key[16];
            snprintf(key, sizeof key, "k%ld", i % 50);
            assert_int_equal(rls_check_at(db, "tb", key, 1, now + i, &r), RLS_OK);
        }
        uint64_t served = rls__memlane_served(db), timed = rls__memlane_timed(db);
        assert_true(served > (uint64_t)n / 2);   /* a key's first check: the pipeline */
        if (timed < 1 || timed * 4 > served || timed * 64 < served)
            fail_msg("lane timed %llu of %llu checks", (unsigned long long)timed,
                     (unsigned long long)served);
        rls_close(db);
        now += 100000;
    }
    rls_db *db = open_mem(t);
    assert_int_equal(it_metric(db, now, "latency_count", "tb", NULL), checks);
    assert_int_equal(it_metric(db, now, "latency", "tb", NULL), checks);
    assert_int_equal(it_metric(db, now, "reason", "tb", NULL), checks);
    assert_true(it_metric(db, now, "latency_sum_us", "tb", NULL) >= 0);
    rls_close(db);
    it_free(t);
}

/* A rule set freed and loaded again, of the same generation (as after a
 * fork, or a copy whose stored rules rolled back), quite likely at the
 * same address: the lane's entries keep pointers into the old one, and
 * must never be taken for the new one's (its serial, core/rules.c). */
static void reloaded_rules_are_prepared_again(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    rls_db *db = open_mem(t);
    int64_t now = 1774740000000LL;
    assert_true(served(db, "fw", "k1", 1, now));
    for (int round = 0; round < 20; round++) {
        uint64_t before = rls__memlane_prepared(db);
        int64_t gen = db->rc.rules_gen;
        rls__cache_free(db);   /* storage/cache.c: what a reload after a fork does */
        rls_result r;
        int64_t at = now + (round + 1) * 60000;   /* a window of its own: admitted,
                                                   * no denial cached (deny.c) */
        assert_int_equal(rls_check_at(db, "fw", "k1", 1, at, &r), RLS_OK);
        assert_true(r.allowed);
        assert_int_equal(db->rc.rules_gen, gen);   /* the same generation */
        assert_true(served(db, "fw", "k1", 1, at));
        assert_int_equal(rls__memlane_prepared(db), before + 1);
    }
    rls_close(db);
    it_free(t);
}

/* ---- an attacker's pass (the lane against changes made elsewhere) ---- */

/* Two rule sets that differ only in fw's default limit. */
#define RULES_FW(limit)                                                              \
    "version: 1\n"                                                                   \
    "defaults: { tier: free }\n"                                                     \
    "tiers: { free: {}, pro: {} }\n"                                                 \
    "actions:\n"                                                                     \
    "  fw:\n"                                                                        \
    "    limits: [ { name: l, algorithm: fixed_window, limit: " #limit ", window: 1h,"  \
    " durability: memory } ]\n"                                                      \
    "    tiers:\n"                                                                   \
    "      pro: [ { name: l, algorithm: fixed_window, limit: 3, window: 1h,"          \
    " durability: memory } ]\n"                                                      \
    "  ip:\n"                                                                        \
    "    key: ip\n"                                                                  \
    "    limits: [ { name: l, algorithm: fixed_window, limit: 1000, window: 1h,"      \
    " durability: memory } ]\n"                                                      \
    "  huge: { limits: [ { name: l, algorithm: fixed_window, limit: 1000000000000,"   \
    " window: 1d, durability: memory } ] }\n"                                        \
    "  one: { limits: [ { name: l, algorithm: gcra, limit: 1, window: 1d,"            \
    " durability: memory } ] }\n"                                                    \
    "  day: { limits: [ { name: l, algorithm: fixed_window, limit: 7, window: 1d,"    \
    " timezone: Europe/Berlin, durability: memory } ] }\n"                           \
    "  slog: { limits: [ { name: l, algorithm: sliding_log, limit: 4, window: 1h,"    \
    " durability: memory } ] }\n"

static const char *RULES_A = RULES_FW(1000);
static const char *RULES_B = RULES_FW(2);   /* fw's default limit is 2 */

/* RULES_A with a durable limit beside fw's: a mixed action (the lane
 * leaves it to the pipeline). */
static const char *RULES_M =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    "  fw:\n"
    "    limits:\n"
    "      - { name: l, algorithm: fixed_window, limit: 1000, window: 1h, durability: memory }\n"
    "      - { name: d, algorithm: fixed_window, limit: 6, window: 1h }\n"
    "  ip:\n"
    "    key: ip\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 1000, window: 1h,"
    " durability: memory } ]\n";

/* An admin change made on both databases (through handles of their own,
 * or from a child process for a rule set), each change's codes equal. */
enum { CH_RULES_B, CH_RULES_A, CH_TIER, CH_UNTIER, CH_BLOCK, CH_UNBLOCK, CH_OV, CH_UNOV,
       CH_CIDR, CH_UNCIDR, CH_RESERVE, CH_CANCEL, CH_RESET, CH_REFUND, CH_N };

static int change_one(rls_db *adm, const char *path, int what, int64_t now, int64_t *resv)
{
    switch (what) {
    case CH_RULES_B:
    case CH_RULES_A: {
        const char *y = what == CH_RULES_B ? RULES_B : RULES_A;
        /* another process applies the rules (rlctl apply) */
        pid_t pid = fork();
        if (pid == 0) {
            rls_db *c = NULL;
            int rc = rls_open(&c, path, NULL);
            if (rc == RLS_OK)
                rc = rls_rules_apply_at(c, y, strlen(y), "t.yaml", NULL, now, NULL);
            rls_close(c);
            _exit(rc == RLS_OK ? 0 : 1);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
    }
    case CH_TIER: return rls_tier_assign_at(adm, "fw", "k", "pro", 0, now);
    case CH_UNTIER: return rls_tier_unassign_at(adm, "fw", "k", now);
    case CH_BLOCK: return rls_block_set_at(adm, NULL, "10.0.0.1", 0, "t", now);
    case CH_UNBLOCK: return rls_block_unset_at(adm, NULL, "10.0.0.1", now);
    case CH_OV: return rls_override_set_at(adm, "fw", "k", "l", 1, 0, now);
    case CH_UNOV: return rls_override_unset_at(adm, "fw", "k", "l", now);
    case CH_CIDR: return rls_tier_set_at(adm, "10.0.0.0/8", "pro", 0, now);
    case CH_UNCIDR: return rls_tier_unset_at(adm, "10.0.0.0/8", now);
    case CH_RESERVE: {
        rls_result r;
        return rls_reserve_at(adm, "fw", "k", 5, 3600000, now, resv, &r);
    }
    case CH_CANCEL: return rls_cancel_at(adm, *resv, now);
    case CH_RESET: return rls_reset_at(adm, "fw", "k", now);
    default: return rls_refund_at(adm, "fw", "k", 1, now);
    }
}

/* A handle whose lane holds entries for fw and ip while another handle or
 * process changes the rules and back, gives a key a tier and takes it back,
 * (and the checking handle itself changes them and back, once making
 * fw a mixed action),
 * blocks it (as every action writes it: the key as given) and lifts the
 * block, overrides its limit, reserves on it, resets and refunds it: the
 * lane answers as the pipeline at every check after each change, and the
 * change shows at once (the shared generation moved). */
static void changes_elsewhere_reach_a_warm_lane(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *ta = it_new(RULES_A), *tb = it_new(RULES_A);
    rls_db *a = open_mem(ta), *b = open_mem(tb), *adm_a = open_mem(ta), *adm_b = open_mem(tb);
    int64_t now = 1774740000000LL, ra_id = 0, rb_id = 0;
    static const char *const ks[][2] = {
        {"fw", "k"}, {"fw", "K"}, {"ip", "10.0.0.1"}, {"ip", "::ffff:10.0.0.1"},
        {"ip", "::FFFF:10.0.0.1"}, {"ip", "10.0.0.2"},
    };
    int n = 0;
    for (int round = 0; round < 3; round++)
        for (int what = 0; what < CH_N; what++) {
            for (int w = 0; w < 4; w++)   /* the lane warm for every key */
                for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
                    same_check(a, b, ks[k][0], ks[k][1], 1, now, n++);
            int rca = change_one(adm_a, ta->path, what, now, &ra_id);
            int rcb = change_one(adm_b, tb->path, what, now, &rb_id);
            assert_int_equal(rca, rcb);
            if (what != CH_RESET && what != CH_REFUND && what != CH_CANCEL)
                assert_int_equal(rca, RLS_OK);
            /* at once: fw k under its override of 1, its tier of 3, ... */
            for (int w = 0; w < 4; w++)
                for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
                    same_check(a, b, ks[k][0], ks[k][1], 1, now, n++);
            rls_result r;
            if (what == CH_BLOCK) {
                assert_int_equal(rls_check_at(a, "ip", "::ffff:10.0.0.1", 1, now, &r), RLS_OK);
                assert_int_equal(r.reason, RLS_REASON_BLOCKED);
            }
            if (what == CH_OV || what == CH_TIER || what == CH_RULES_B) {
                assert_int_equal(rls_check_at(a, "fw", "k", 1, now, &r), RLS_OK);
                assert_false(r.allowed);
            }
            now += 1000;
        }
    /* the checking handles themselves change the rules and back */
    for (int v = 0; v < 4; v++) {
        const char *y = v % 2 ? RULES_A : v ? RULES_M : RULES_B;
        assert_int_equal(rls_rules_apply_at(a, y, strlen(y), "t.yaml", NULL, now, NULL), RLS_OK);
        assert_int_equal(rls_rules_apply_at(b, y, strlen(y), "t.yaml", NULL, now, NULL), RLS_OK);
        for (int w = 0; w < 4; w++)
            for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
                same_check(a, b, ks[k][0], ks[k][1], 1, now, n++);
        now += 1000;
    }
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
        rls_result pa, pb;
        assert_int_equal(rls_peek_at(a, ks[k][0], ks[k][1], 1, now, &pa),
                         rls_peek_at(b, ks[k][0], ks[k][1], 1, now, &pb));
        assert_memory_equal(&pa, &pb, sizeof pa);
    }
    print_message("lane: %llu of %d checks\n", (unsigned long long)rls__memlane_served(a), n);
    assert_true(rls__memlane_served(a) > (uint64_t)n / 4);
    rls_close(a);
    rls_close(b);
    rls_close(adm_a);
    rls_close(adm_b);
    it_free(ta);
    it_free(tb);
}

/* Keys and numbers at the ends of their ranges through the lane and the
 * pipeline: keys of 15, 16 and 17 bytes sharing their first 16 (the hot
 * record holds 16: the rest is only in the cold one), keys of exactly
 * max_key_len bytes and one more, bytes 0x01..0xff, costs 1 and
 * RLS_COST_MAX and just outside, times RLS_TIME_MIN and RLS_TIME_MAX and
 * just outside, a limit of 10^12 (the largest) and a limit of 1. */
static void ends_of_ranges_through_the_lane(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *ta = it_new(RULES_A), *tb = it_new(RULES_A);
    rls_db *a = open_mem(ta), *b = open_mem(tb);
    static char keys[12][RLS_KEY_MAX_DEFAULT + 2];
    int nk = 0;
    memcpy(keys[nk++], "0123456789abcdef", 17);
    memcpy(keys[nk++], "0123456789abcdefX", 18);
    memcpy(keys[nk++], "0123456789abcdeY", 17);
    memcpy(keys[nk++], "0123456789abcde", 16);
    memcpy(keys[nk++], "0123456789abcdefXY", 19);
    for (int v = 0; v < 3; v++) {   /* max_key_len - 1 + v bytes, the last ones differing */
        memset(keys[nk], 'z', RLS_KEY_MAX_DEFAULT - 1 + v);
        keys[nk][RLS_KEY_MAX_DEFAULT - 2 + v] = (char)('a' + v);
        keys[nk++][RLS_KEY_MAX_DEFAULT - 1 + v] = '\0';
    }
    for (int c = 1; c < 256; c++)   /* every byte but NUL, twice over */
        keys[nk][c - 1] = (char)c, keys[nk + 1][c - 1] = (char)(256 - c);
    keys[nk][255] = keys[nk + 1][255] = '\0';
    nk += 2;
    memcpy(keys[nk++], "\xff\xfe", 3);
    memcpy(keys[nk++], "\x01", 2);
    static const char *const acts[] = {"fw", "huge", "one", "day", "slog"};
    const int64_t costs[] = {1, 2, RLS_COST_MAX, RLS_COST_MAX - 1, RLS_COST_MAX + 1, 0, -1};
    const int64_t times[] = {RLS_TIME_MIN, RLS_TIME_MIN + 1, 86399999, RLS_TIME_MAX - 86400000,
                             RLS_TIME_MAX - 1, RLS_TIME_MAX, RLS_TIME_MAX + 1, -1,
                             1774740000000LL};
    int n = 0;
    for (size_t ti = 0; ti < sizeof times / sizeof times[0]; ti++)
        for (int rep = 0; rep < 3; rep++)
            for (size_t x = 0; x < sizeof acts / sizeof acts[0]; x++)
                for (int k = 0; k < nk; k++)
                    for (size_t c = 0; c < sizeof costs / sizeof costs[0]; c++)
                        same_check(a, b, acts[x], keys[k],
                                   costs[(c + (size_t)rep) % (sizeof costs / sizeof costs[0])],
                                   times[ti], n++);
    for (size_t ti = 0; ti < sizeof times / sizeof times[0]; ti++)
        for (size_t x = 0; x < sizeof acts / sizeof acts[0]; x++)
            for (int k = 0; k < nk; k++) {
                rls_result pa, pb;
                assert_int_equal(rls_peek_at(a, acts[x], keys[k], 1, times[ti], &pa),
                                 rls_peek_at(b, acts[x], keys[k], 1, times[ti], &pb));
                assert_memory_equal(&pa, &pb, sizeof pa);
            }
    print_message("lane: %llu of %d checks\n", (unsigned long long)rls__memlane_served(a), n);
    assert_true(rls__memlane_served(a) > (uint64_t)n / 8);
    rls_close(a);
    rls_close(b);
    it_free(ta);
    it_free(tb);
}

/* fork() after the lane is warm: each child's handle learns its own trust
 * (a block set by the parent after the fork, before the child's first
 * check, is seen by the child), and the children and the parent charge one
 * table exactly: never more admitted than the limit.  PostgreSQL too
 * (no lane there: the same exactness through the database path). */
static void fork_after_a_warm_lane(void **state)
{
    (void)state;
    int lane_on = !it_pg();   /* PostgreSQL: no fast path, the exactness holds all the same */
    itest *t = it_new(RULES_A);
    rls_db *db = open_mem(t), *adm = open_mem(t);
    int64_t now = 1774740000000LL;
    rls_result r;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rls_check_at(db, "fw", "k", 1, now, &r), RLS_OK);
        assert_int_equal(rls_check_at(db, "ip", "10.0.0.1", 1, now, &r), RLS_OK);
    }
    for (int i = 0; i < 2; i++) {   /* 5 charged */
        assert_int_equal(rls_check_at(db, i ? "ip" : "fw", i ? "10.0.0.1" : "k", 1, now, &r), RLS_OK);
        assert_true(!lane_on || rls__memlane_served(db) > 0);
    }
    enum { KIDS = 3, EACH = 400 };
    int go[2], out[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(out), 0);
    pid_t pid[KIDS];
    for (int c = 0; c < KIDS; c++) {
        pid[c] = fork();
        assert_true(pid[c] >= 0);
        if (pid[c] == 0) {
            char x;
            int64_t got[2] = {0, 0};
            if (read(go[0], &x, 1) != 1)
                _exit(2);
            if (rls_check_at(db, "ip", "10.0.0.1", 1, now, &r) != RLS_OK ||
                r.reason != RLS_REASON_BLOCKED)
                _exit(3);   /* the parent's trust, stale */
            for (int i = 0; i < EACH; i++) {
                if (rls_check_at(db, "fw", "k", 1, now, &r) != RLS_OK)
                    _exit(4);
                got[0] += r.allowed;
            }
            got[1] = (int64_t)rls__memlane_served(db);
            _exit(write(out[1], got, sizeof got) == sizeof got ? 0 : 5);
        }
    }
    assert_int_equal(rls_block_set_at(adm, "ip", "10.0.0.1", 0, "t", now), RLS_OK);
    assert_int_equal(write(go[1], "xxx", KIDS), KIDS);
    int64_t allowed = 5, lane = 0;
    for (int i = 0; i < EACH; i++) {
        assert_int_equal(rls_check_at(db, "fw", "k", 1, now, &r), RLS_OK);
        allowed += r.allowed;
    }
    for (int c = 0; c < KIDS; c++) {
        int st = 0;
        int64_t got[2];
        assert_int_equal(waitpid(pid[c], &st, 0), pid[c]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_int_equal(read(out[0], got, sizeof got), sizeof got);
        allowed += got[0];
        lane += got[1];
    }
    assert_int_equal(allowed, 1000);   /* 4 x 400 + 5 tried: exactly the limit */
    assert_int_equal(rls_peek_at(adm, "fw", "k", 1, now, &r), RLS_OK);
    assert_int_equal(r.remaining, 0);
    print_message("children's lanes served %lld\n", (long long)lane);
    assert_true(!lane_on || lane > 0);
    close(go[0]);
    close(go[1]);
    close(out[0]);
    close(out[1]);
    rls_close(db);
    rls_close(adm);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lane_answers_as_the_pipeline),
        cmocka_unit_test(lane_serves_the_common_case),
        cmocka_unit_test(lane_latency_is_sampled_and_counted),
        cmocka_unit_test(reloaded_rules_are_prepared_again),
        cmocka_unit_test(changes_elsewhere_reach_a_warm_lane),
        cmocka_unit_test(ends_of_ranges_through_the_lane),
        cmocka_unit_test(fork_after_a_warm_lane),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
