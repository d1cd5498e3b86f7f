/*
 * test_lanecount.c - an attacker's pass over what the memory-class fast
 * lane counts (storage/memlane.c, metrics.c, gc.c): its checks are timed
 * one in RLS_MET_LANE_SAMPLE, each timed one weighted for the untimed ones
 * before it, the rest carried at the flush; its metrics and stats are
 * found by (index, generation) hints.  The promise (rls_metrics(3)):
 * latency_count is exactly the number of checks counted, the buckets sum
 * to it, and so do the reasons; the stats (rls_stats, per second of the
 * check's clock) are exact per action and second.
 *
 * Attacked here, each against counts the test keeps itself: lane and
 * pipeline checks of one action interleaved (a key with a block row, a
 * tier that blocks, a mixed and a durable action), more actions than the
 * lane remembers (its entries evicted and made again), a rules reload in
 * the middle, flushes between any two checks, a clock that jumps back
 * and forth (a stats hint must never count into another second), an
 * action name of RLS_NAME_MAX bytes (read back by rls_metrics_at and
 * `rlctl metrics`), a fork with untimed counts pending (the child never
 * writes the parent's), flushes that fail and roll back (counts may be
 * lost, never doubled nor moved to another action), the clock at the
 * ends of its range; a thread-safe handle in test_lanecount_mt.c.
 * SQLite only: PostgreSQL has no lane.
 * Knobs: RLS_LANECOUNT_OPS (default 20000), RLS_LANECOUNT_SEED.
 */
#include <sys/mman.h>
#include <sys/wait.h>
#include "lanecount.h"

/*
 * One handle, NACT actions in a random order on random keys, lane and
 * pipeline mixed, a clock that walks forward in small steps, jumps a
 * second or more ahead (a flush due at the next pipeline check) and back
 * (a flush too: rls__stats_due), a block row set on m0's "pol" and the
 * rules reloaded by another handle midway.  Every count exact.
 */
static void interleaved_checks_count_exactly(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    long ops = knob("RLS_LANECOUNT_OPS", 20000);
    rng ^= (uint64_t)knob("RLS_LANECOUNT_SEED", (long)time(NULL));
    itest *t = it_new(RULES);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    struct sec_tally *st = calloc(1, sizeof *st);
    assert_non_null(st);
    int64_t base = T0 + 600000, now = base + 1800000;   /* a span of one hour at most */
    st->sec0 = base / 1000;
    assert_int_equal(rls_block_set_at(t->db, "m0", "pol", 0, "test", T0), RLS_OK);
    rls_db *db = open_h(t, 0);
    uint64_t served0 = 0;
    for (long i = 0; i < ops; i++) {
        uint64_t r = rnd();
        int a = (int)(r % NACT);
        char key[32];
        rls_result res;
        if (i == ops / 2) {   /* reloaded by another handle: the lane prepares again */
            assert_int_equal(rls_rules_apply_at(t->db, RULES2, strlen(RULES2), "r2.yaml", NULL,
                                                now, NULL),
                             RLS_OK);
            served0 = rls__memlane_served(db);
        }
        key_of(a, r >> 8, key, sizeof key);
        int64_t step = (int64_t)((r >> 20) % 64), jump = (int64_t)((r >> 32) % 1000);
        if (jump < 3)
            step = 1000 + (int64_t)((r >> 40) % 3000);   /* ahead: a flush falls due */
        else if (jump < 6)
            step = -(int64_t)((r >> 40) % 5000);          /* back */
        now += step;
        if (now < base)
            now = base;
        if (now > base + 3500000)
            now = base + 1800000;
        int rc = rls_check_at(db, ACTS[a], key, 1, now, &res);
        if (rc != RLS_OK)
            fail_msg("check %s %s: %s: %s", ACTS[a], key, rls_errname(rc), rls_errmsg(db));
        count(&tl, st, a, now, &res);
    }
    uint64_t served = rls__memlane_served(db), timed = rls__memlane_timed(db);
    /* the lane served a good share, before and after the reload, and
     * timed only some of them */
    if (served < (uint64_t)ops / 4 || served - served0 < (uint64_t)ops / 10 || timed >= served / 2)
        fail_msg("lane served %llu (%llu after the reload), timed %llu, of %ld checks",
                 (unsigned long long)served, (unsigned long long)(served - served0),
                 (unsigned long long)timed, ops);
    rls_close(db);
    assert_exact(t->db, now, &tl);
    assert_seconds(t, st);
    free(st);
    it_free(t);
}

/* Metrics of every action consistent with themselves and never more than
 * its checks (a flush that rolled back may have lost some); the stats
 * totals exact. */
static void assert_bounded(rls_db *db, int64_t now, const struct tally *t)
{
    for (int a = 0; a < NACT; a++) {
        int64_t lc = metric_sum(db, now, "latency_count", ACTS[a]),
                lb = metric_sum(db, now, "latency", ACTS[a]),
                rs = metric_sum(db, now, "reason", ACTS[a]),
                al = metric_sum(db, now, "checks_allowed", ACTS[a]),
                de = metric_sum(db, now, "checks_denied", ACTS[a]);
        if (lc != lb || lc != rs || lc > t->checks[a] || al != t->allowed[a] ||
            de != t->checks[a] - t->allowed[a])
            fail_msg("%s: %lld checks (%lld allowed): latency_count %lld, buckets %lld, "
                     "reasons %lld, allowed %lld, denied %lld",
                     ACTS[a], (long long)t->checks[a], (long long)t->allowed[a], (long long)lc,
                     (long long)lb, (long long)rs, (long long)al, (long long)de);
    }
}

/* The library runs no trigger (storage/sqlite/open.c): a table made
 * again with a CHECK that refuses rows to come, the same without it
 * accepts them again. */
#define REMAKE(table, cols)                                                            \
    "BEGIN; ALTER TABLE " table " RENAME TO old; CREATE TABLE " table "(" cols         \
    "%s) WITHOUT ROWID; INSERT INTO " table " SELECT * FROM old; DROP TABLE old; COMMIT"
#define CTR_COLS                                                                       \
    "action TEXT NOT NULL, name TEXT NOT NULL, label TEXT NOT NULL DEFAULT '', "        \
    "n INTEGER NOT NULL, PRIMARY KEY (action, name, label)"
#define STATS_COLS                                                                     \
    "action TEXT NOT NULL, sec INTEGER NOT NULL, allowed INTEGER NOT NULL, "           \
    "denied INTEGER NOT NULL, PRIMARY KEY (action, sec)"

/* which 0: m1's latency_count may not grow (the last row of its flush:
 * the rows before it, of m1 and of the actions before, are written and
 * undone); 1: m2's stats of a second after now's refused; refuse 0: the
 * table accepts everything again. */
static void refuse(const itest *t, int which, int refuse, int64_t n)
{
    char check[160] = "", sql[1024];
    if (refuse && which == 0)
        snprintf(check, sizeof check,
                 ", CHECK (action <> 'm1' OR name <> 'latency_count' OR n <= %lld)", (long long)n);
    else if (refuse)
        snprintf(check, sizeof check, ", CHECK (action <> 'm2' OR sec <= %lld)", (long long)n);
    if (which == 0)
        snprintf(sql, sizeof sql, REMAKE("rls_counters", CTR_COLS), check);
    else
        snprintf(sql, sizeof sql, REMAKE("rls_stats", STATS_COLS), check);
    it_sql_exec(t->path, sql);
}

/*
 * Flushes that fail while a table refuses a row (the housekeeping's
 * savepoint undone, the check itself committed), the table then
 * made again: counts the failed flushes had taken may be lost (the metrics
 * when the stats' rows fail after theirs were written), never doubled
 * nor counted to another action, and the stats, kept until written, are
 * exact second by second.  which: 0 the counters of m1 refused (the
 * metrics flush fails: everything kept), 1 the stats of m2 (the metrics
 * were written, then undone).
 */
static void flush_fails_then_recovers(int which)
{
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    struct sec_tally *st = calloc(1, sizeof *st);
    assert_non_null(st);
    int64_t now = T0 + 600000;
    st->sec0 = now / 1000;
    static const int acts[] = {0, 1, 2, 9};   /* m0 m1 m2 dur */
    rls_db *db = open_h(t, 0);
    int64_t during = -1, refused_at = 0;
    for (int i = 0; i < 6000; i++) {
        uint64_t r = rnd();
        int a = acts[r % 4];
        char key[32];
        rls_result res;
        if (i == 2000) {
            during = metric_sum(t->db, now, "latency_count", "m0");
            refused_at = now;
            refuse(t, which, 1, which == 0 ? metric_sum(t->db, now, "latency_count", "m1")
                                           : now / 1000);
        }
        if (i == 4000) {   /* nothing of m0 was written meanwhile: every flush failed */
            char sql[160];
            snprintf(sql, sizeof sql,
                     "SELECT count(*) FROM rls_stats WHERE action = 'm2' AND sec > %lld",
                     (long long)(refused_at / 1000));
            if (which == 0)
                assert_int_equal(metric_sum(t->db, now, "latency_count", "m0"), during);
            else   /* m2 was checked in later seconds, and nothing written */
                assert_int_equal(it_sql_int(t->path, sql), 0);
            refuse(t, which, 0, 0);
        }
        key_of(a, r >> 8, key, sizeof key);
        now += i % 300 == 299 ? 1100 : (int64_t)((r >> 40) % 8);
        int rc = rls_check_at(db, ACTS[a], key, 1, now, &res);
        if (rc != RLS_OK)
            fail_msg("check %s %s: %s: %s", ACTS[a], key, rls_errname(rc), rls_errmsg(db));
        count(&tl, st, a, now, &res);
    }
    assert_true(rls__memlane_served(db) > 1000);
    rls_close(db);
    if (which == 0)
        assert_exact(t->db, now, &tl);
    else
        assert_bounded(t->db, now, &tl);
    assert_seconds(t, st);
    free(st);
    it_free(t);
}

static void metrics_flush_fails(void **state)
{
    (void)state;
    flush_fails_then_recovers(0);
}

static void stats_flush_fails(void **state)
{
    (void)state;
    flush_fails_then_recovers(1);
}

/* Checks of (action a, key) at now on db, n times; counted in tl. */
static void checks(rls_db *db, struct tally *tl, int a, const char *key, int64_t now, long n)
{
    for (long i = 0; i < n; i++) {
        rls_result res;
        char k[48];
        snprintf(k, sizeof k, "%s%ld", key, i % 5);
        int rc = rls_check_at(db, ACTS[a], k, 1, now + i, &res);
        if (rc != RLS_OK)
            fail_msg("check %s %s: %s: %s", ACTS[a], k, rls_errname(rc), rls_errmsg(db));
        count(tl, NULL, a, now + i, &res);
    }
}

/* The value of the line of `rlctl metrics` on path that starts with
 * prefix; -1 without one, -2 without rlctl. */
static double rlctl_metric(const char *path, const char *prefix)
{
    const char *b = getenv("BUILD");
    char cmd[8192], line[4096];
    snprintf(cmd, sizeof cmd, "%s/rlctl", b && *b ? b : "build");
    if (access(cmd, X_OK) != 0)
        return -2;
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " --db '%s' metrics", path);
    FILE *f = popen(cmd, "r");
    double v = -1;
    assert_non_null(f);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            v = strtod(line + strlen(prefix), NULL);
    assert_int_equal(pclose(f), 0);
    return v;
}

/*
 * An action name of RLS_NAME_MAX bytes, through the lane (its entry, its
 * met_act and stat_acc names are RLS_NAME_MAX + 1 bytes): counted under
 * its whole name, read back by rls_metrics_at and `rlctl metrics`; a name
 * one byte longer is refused and counted nowhere.
 */
static void longest_name_counts(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    int64_t now = T0 + 600000;
    rls_db *db = open_h(t, 0);
    assert_int_equal(strlen(LONG_NAME), RLS_NAME_MAX);
    checks(db, &tl, 7, "n", now, 1999);
    assert_true(rls__memlane_served(db) > 1900);
    rls_result res;
    assert_int_equal(rls_check_at(db, LONG_NAME "4", "n1", 1, now, &res), RLS_ENOACTION);
    rls_close(db);
    assert_exact(t->db, now, &tl);
    assert_int_equal(metric_sum(t->db, now, "latency_count", LONG_NAME "4"), 0);
    double v = rlctl_metric(t->path, "rlstore_check_duration_seconds_count{action=\"" LONG_NAME
                                     "\"} ");
    if (v == -2) {
        printf("rlctl not built: its part of longest_name_counts skipped\n");
    } else {
        assert_true(v == (double)tl.checks[7]);
        v = rlctl_metric(t->path, "rlstore_check_duration_seconds_bucket{action=\"" LONG_NAME
                                  "\",le=\"+Inf\"} ");
        assert_true(v == (double)tl.checks[7]);
    }
    it_free(t);
}

/*
 * The clock at the ends of its range and in between, jumping at every
 * check (a stats entry per second, a flush at every pipeline check that
 * goes back), and costs of 1 and RLS_COST_MAX (denied whatever the
 * state): the totals and metrics exact (the seconds of 1970 are collected
 * by GC: totals only).
 */
static void clock_ends_count_exactly(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    static const int64_t at[] = {RLS_TIME_MIN, T0 + 600000, RLS_TIME_MAX - 5000};
    static const int acts[] = {0, 2, 5, 7};
    rls_db *db = open_h(t, 0);
    for (int i = 0; i < 4000; i++) {
        uint64_t r = rnd();
        int a = acts[r % 4];
        int64_t now = at[(r >> 8) % 3] + (i % 5000), cost = (r >> 16) % 50 ? 1 : RLS_COST_MAX;
        char key[32];
        rls_result res;
        key_of(a, r >> 24, key, sizeof key);
        int rc = rls_check_at(db, ACTS[a], key, cost, now, &res);
        if (rc != RLS_OK)
            fail_msg("check %s %s at %lld: %s: %s", ACTS[a], key, (long long)now,
                     rls_errname(rc), rls_errmsg(db));
        count(&tl, NULL, a, now, &res);
    }
    assert_true(rls__memlane_served(db) > 1000);
    rls_close(db);
    assert_exact(t->db, T0, &tl);
    it_free(t);
}

/*
 * A fork with untimed lane checks pending in the parent (counted, not yet
 * written): the child counts its own checks and writes only them; the
 * parent's are still exact after the child's writes.
 */
static void fork_with_untimed_pending(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    int64_t now = T0 + 600000;
    rls_db *db = open_h(t, 0);
    checks(db, &tl, 0, "p", now, 997);   /* ends after untimed ones, most likely */
    checks(db, &tl, 7, "p", now, 501);
    assert_true(rls__memlane_served(db) > 1000);
    assert_true(rls__memlane_timed(db) < rls__memlane_served(db));
    struct tally *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
    assert_true(c != MAP_FAILED);
    memset(c, 0, sizeof *c);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* m1 first: it takes in the child's emptied arrays the index m0
         * had in the parent's, which m0's hints must not take for its own */
        checks(db, c, 1, "c", now + 5000, 211);
        checks(db, c, 0, "c", now + 5000, 333);
        rls_close(db);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(c->checks[0], 333);
    tally_add(&tl, c);
    munmap(c, sizeof *c);
    checks(db, &tl, 0, "p", now + 10000, 123);
    rls_close(db);
    assert_exact(t->db, now + 20000, &tl);
    it_free(t);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(interleaved_checks_count_exactly),
        cmocka_unit_test(fork_with_untimed_pending),
        cmocka_unit_test(metrics_flush_fails),
        cmocka_unit_test(stats_flush_fails),
        cmocka_unit_test(longest_name_counts),
        cmocka_unit_test(clock_ends_count_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
