/*
 * lanecount.h - what the lane-counting suites share (test_lanecount.c,
 * test_lanecount_mt.c): the rules, the test's own tally of its checks,
 * and the assertions that the metrics and stats are exactly that tally.
 */
#ifndef RLS_LANECOUNT_H
#define RLS_LANECOUNT_H

#include <time.h>
#include "itest.h"
#include "db.h"
#include "memclass.h"

/* 63 bytes: RLS_NAME_MAX */
#define LONG_NAME "l23456789012345678901234567890123456789012345678901234567890123"

/* Memory-only actions of every algorithm, more than the lane remembers
 * (LANE_ACTS, 4), one with a tier that blocks by pattern, one of
 * RLS_NAME_MAX bytes, one with penalties (the lane hands them over);
 * a mixed and a durable one (never the lane).  LIM is replaced by the
 * reload's limit. */
#define RULES_OF(LIM)                                                                    \
    "version: 1\n"                                                                       \
    "defaults: { tier: free }\n"                                                         \
    "tiers: { free: {}, banned: { blocked: true } }\n"                                   \
    "actions:\n"                                                                         \
    "  m0: { limits: [ { name: a, algorithm: fixed_window, limit: " LIM ", window: 2s,"  \
    " durability: memory } ] }\n"                                                        \
    "  m1: { limits: [ { name: b, algorithm: sliding_window, limit: 4, window: 2s,"      \
    " durability: memory } ] }\n"                                                        \
    "  m2: { limits: [ { name: c, algorithm: token_bucket, limit: 3, window: 2s,"        \
    " burst: 4, durability: memory } ] }\n"                                              \
    "  m3: { limits: [ { name: d, algorithm: gcra, limit: 3, window: 2s, burst: 4,"      \
    " durability: memory } ] }\n"                                                        \
    "  m4: { limits: [ { name: e, algorithm: sliding_log, limit: 4, window: 2s,"         \
    " durability: memory } ] }\n"                                                        \
    "  m5:\n"                                                                            \
    "    limits:\n"                                                                      \
    "      - { name: s, algorithm: fixed_window, limit: 2, window: 2s, mode: shadow,"    \
    " durability: memory }\n"                                                            \
    "      - { name: f, algorithm: leaky_bucket, limit: 4, window: 2s, burst: 4,"        \
    " durability: memory }\n"                                                            \
    "  mp: { limits: [ { name: p, algorithm: fixed_window, limit: 6, window: 2s,"       \
    " block_for: [1s, 3s], durability: memory } ] }\n"                                  \
    "  mt: { limits: [ { name: g, algorithm: fixed_window, limit: 4, window: 2s,"        \
    " durability: memory } ] }\n"                                                        \
    "  " LONG_NAME ": { limits: [ { name: h, algorithm: fixed_window, limit: 4,"         \
    " window: 2s, durability: memory } ] }\n"                                            \
    "  mix:\n"                                                                           \
    "    limits:\n"                                                                      \
    "      - { name: i, algorithm: fixed_window, limit: 4, window: 2s, durability: memory }\n" \
    "      - { name: j, algorithm: fixed_window, limit: 1000000, window: 1d }\n"          \
    "  dur: { limits: [ { name: k, algorithm: fixed_window, limit: 4, window: 2s } ] }\n" \
    "assignments:\n"                                                                     \
    "  - { key: \"bad:*\", action: mt, tier: banned }\n"

#define RULES RULES_OF("4")
#define RULES2 RULES_OF("5")

static const char *const ACTS[] = {"m0", "m1", "m2", "m3", "m4", "m5", "mt", LONG_NAME, "mix",
                                   "dur", "mp"};
#define NACT ((int)(sizeof ACTS / sizeof ACTS[0]))
#define NKEY 12

/* What the test counted itself, per action. */
struct tally {
    int64_t checks[NACT], allowed[NACT];
};

/* dst += src, action by action. */
static inline void tally_add(struct tally *dst, const struct tally *src)
{
    for (int a = 0; a < NACT; a++) {
        dst->checks[a] += src->checks[a];
        dst->allowed[a] += src->allowed[a];
    }
}

/* Per (action, second) of the check's clock: the stats rows expected. */
#define MAXSEC 4096
struct sec_tally {
    int64_t sec0;
    int32_t allowed[NACT][MAXSEC], denied[NACT][MAXSEC];
};

static uint64_t rng = 88172645463325252ULL;

static inline uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static inline long knob(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

static inline rls_db *open_h(const itest *t, int thread_safe)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    o.thread_safe = thread_safe;
    o.busy_timeout_ms = 60000;
    int rc = rls_open(&db, t->path, &o);
    if (rc != RLS_OK)
        fail_msg("open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* The key of check i of action a: mostly the lane's, some with a block
 * row (m0's "pol"), some of a tier that blocks (mt's "bad:"). */
static inline void key_of(int a, uint64_t r, char *key, size_t size)
{
    if (a == 0 && r % 13 == 0)
        snprintf(key, size, "pol");
    else if (a == 6 && r % 7 == 0)
        snprintf(key, size, "bad:%d", (int)(r % 3));
    else
        snprintf(key, size, "k%d", (int)(r % NKEY));
}

static inline void count(struct tally *t, struct sec_tally *s, int a, int64_t now, const rls_result *r)
{
    t->checks[a]++;
    t->allowed[a] += r->allowed != 0;
    if (s) {
        int64_t i = now / 1000 - s->sec0;
        if (i < 0 || i >= MAXSEC)
            fail_msg("second %lld outside the test's range", (long long)i);
        if (r->allowed)
            s->allowed[a][i]++;
        else
            s->denied[a][i]++;
    }
}

/* Sum of metric rows (metric, action) over their labels, read on db. */
static inline int64_t metric_sum(rls_db *db, int64_t now, const char *metric, const char *action)
{
    return it_metric(db, now, metric, action, NULL);
}

/* Every action's latency_count, latency buckets and reasons are exactly
 * its checks, and its stats totals its admissions and denials. */
static inline void assert_exact(rls_db *db, int64_t now, const struct tally *t)
{
    for (int a = 0; a < NACT; a++) {
        int64_t lc = metric_sum(db, now, "latency_count", ACTS[a]),
                lb = metric_sum(db, now, "latency", ACTS[a]),
                rs = metric_sum(db, now, "reason", ACTS[a]),
                al = metric_sum(db, now, "checks_allowed", ACTS[a]),
                de = metric_sum(db, now, "checks_denied", ACTS[a]);
        if (lc != t->checks[a] || lb != t->checks[a] || rs != t->checks[a] ||
            al != t->allowed[a] || de != t->checks[a] - t->allowed[a])
            fail_msg("%s: %lld checks (%lld allowed): latency_count %lld, buckets %lld, "
                     "reasons %lld, allowed %lld, denied %lld",
                     ACTS[a], (long long)t->checks[a], (long long)t->allowed[a], (long long)lc,
                     (long long)lb, (long long)rs, (long long)al, (long long)de);
    }
}

/* The stats rows, second by second, are what the checks' clocks said. */
static inline void assert_seconds(const itest *t, const struct sec_tally *s)
{
    char sql[256];
    for (int a = 0; a < NACT; a++) {
        int64_t rows = 0;
        for (int i = 0; i < MAXSEC; i++) {
            if (!s->allowed[a][i] && !s->denied[a][i])
                continue;
            rows++;
            snprintf(sql, sizeof sql,
                     "SELECT allowed * 1000000 + denied FROM rls_stats"
                     " WHERE action = '%s' AND sec = %lld", ACTS[a], (long long)(s->sec0 + i));
            int64_t v = it_sql_int(t->path, sql);
            int64_t want = (int64_t)s->allowed[a][i] * 1000000 + s->denied[a][i];
            if (v != want)
                fail_msg("%s second %d: stats %lld, checks %lld", ACTS[a], i, (long long)v,
                         (long long)want);
        }
        snprintf(sql, sizeof sql, "SELECT count(*) FROM rls_stats WHERE action = '%s'", ACTS[a]);
        assert_int_equal(it_sql_int(t->path, sql), rows);
    }
}


#endif
