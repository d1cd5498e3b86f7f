/*
 * test_denycache.c - denials served from memory (storage/denycache.c).
 *
 * A key denied moments ago is decided again in memory, without a write
 * transaction.  Such a denial must never admit, must give the same result
 * a transaction would (the caller's own time and cost), must end at once
 * when the key becomes admissible by time (window, block, assignment,
 * override or reservation expiry) or by this handle's own change, and
 * within one second of real time when another handle or process changes it.
 * Clocks are frozen (the _at functions); the one-second bound is real time.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, strict: {}, pro: {} }\n"
    "actions:\n"
    "  api:\n"
    "    key: ip\n"
    "    limits: [ { name: min, algorithm: fixed_window, limit: 3, window: 1m } ]\n"
    "    tiers:\n"
    "      strict: [ { name: min, limit: 1 } ]\n"
    "      pro: [ { name: min, limit: 10 } ]\n"
    "  two:\n"
    "    limits:\n"
    "      - { name: s, algorithm: sliding_window, limit: 4, window: 1m }\n"
    "      - { name: g, algorithm: gcra, limit: 6, window: 1m, burst: 2 }\n"
    "  log:\n"
    "    limits: [ { name: l, algorithm: sliding_log, limit: 2, window: 10s } ]\n"
    "  counted:\n"
    "    limits: [ { name: c, algorithm: fixed_window, limit: 1, window: 1m, count_denied: true } ]\n"
    "  penal:\n"
    "    limits: [ { name: p, algorithm: fixed_window, limit: 1, window: 1m, block_for: 10s } ]\n";

static double real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A second handle on the same file (no cache of the first one's). */
static rls_db *other(itest *t)
{
    rls_db *db = NULL;
    assert_int_equal(rls_open(&db, t->path, NULL), RLS_OK);
    return db;
}

/* PRAGMA data_version of a separate connection: it changes when anyone
 * else commits. */
static int64_t version_of(sqlite3 *s)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    assert_int_equal(sqlite3_prepare_v2(s, "PRAGMA data_version", -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void same_result(const rls_result *a, const rls_result *b)
{
    assert_int_equal(a->allowed, b->allowed);
    assert_int_equal(a->reason, b->reason);
    assert_int_equal(a->limit, b->limit);
    assert_int_equal(a->remaining, b->remaining);
    assert_int_equal(a->reset_ms, b->reset_ms);
    assert_int_equal(a->retry_after_ms, b->retry_after_ms);
    assert_int_equal(a->delay_ms, b->delay_ms);
    assert_int_equal(a->window_ms, b->window_ms);
    assert_string_equal(a->rule, b->rule);
}

static void denial_writes_nothing(void **state)
{
    itest *t = it_new(RULES);
    sqlite3 *s = NULL;
    rls_result r;
    assert_int_equal(it_admit_n(t, "api", "10.0.0.1", 4, T0), 3);  /* the 4th denied */
    assert_int_equal(sqlite3_open(t->path, &s), SQLITE_OK);
    int64_t v = version_of(s);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(rls_check_at(t->db, "api", "10.0.0.1", 1, T0 + i, &r), RLS_OK);
        assert_int_equal(r.allowed, 0);
    }
    assert_int_equal(version_of(s), v);  /* nothing committed */
    /* and with the write lock held by someone else, it still answers */
    assert_int_equal(sqlite3_exec(s, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(rls_check_at(t->db, "api", "10.0.0.1", 1, T0 + 30, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    sqlite3_exec(s, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(s);
    it_free(t);
}

/* Every field as a transaction computes it, at the caller's time and cost,
 * for each algorithm, compared with a handle that has no cache. */
static void same_result_as_a_transaction(void **state)
{
    itest *t = it_new(RULES);
    rls_db *fresh = other(t);
    rls_result a, b;
    const char *actions[] = {"api", "two", "log"};
    for (int k = 0; k < 3; k++) {
        const char *act = actions[k];
        while (it_check(t, act, "10.0.0.2", 1, T0 + 1000, NULL))
            ;
        for (int64_t dt = 1000; dt < 60000; dt += 1333) {
            for (int64_t cost = 1; cost <= 2; cost++) {
                assert_int_equal(rls_check_at(t->db, act, "10.0.0.2", cost, T0 + dt, &a), RLS_OK);
                if (a.allowed)
                    break;  /* admitted (and charged): the walk moves on */
                /* a peek is the transaction's decision without a charge */
                assert_int_equal(rls_peek_at(fresh, act, "10.0.0.2", cost, T0 + dt, &b), RLS_OK);
                same_result(&a, &b);
            }
        }
    }
    rls_close(fresh);
    it_free(t);
}

static void never_admits_beyond_the_limit(void **state)
{
    itest *t = it_new(RULES);
    /* cost 3 of 3 left, then cost 1 is still admissible: denial of a
     * larger cost does not deny a smaller one */
    assert_int_equal(it_check(t, "api", "10.0.0.3", 1, T0, NULL), 1);
    assert_int_equal(it_check(t, "api", "10.0.0.3", 3, T0, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.0.0.3", 3, T0, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.0.0.3", 2, T0, NULL), 1);
    assert_int_equal(it_check(t, "api", "10.0.0.3", 1, T0, NULL), 0);
    /* the window ends in the caller's time: admitted at once */
    assert_int_equal(it_check(t, "api", "10.0.0.3", 1, T0 + 59999, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.0.0.3", 1, T0 + 60000, NULL), 1);
    /* a caller whose clock is behind is never admitted early */
    assert_int_equal(it_admit_n(t, "api", "10.0.0.4", 5, T0 + 60000), 3);
    assert_int_equal(it_check(t, "api", "10.0.0.4", 1, T0 + 1000, NULL), 0);
    it_free(t);
}

/* Changes by the same handle take effect at the very next check. */
static void same_handle_changes_are_immediate(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0;
    /* unblock */
    assert_int_equal(rls_block_set_at(t->db, "api", "10.1.0.1", 0, "test", T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.1", 1, T0, &r), 0);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(it_check(t, "api", "10.1.0.1", 1, T0, &r), 0);
    assert_int_equal(rls_block_unset_at(t->db, "api", "10.1.0.1", T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.1", 1, T0, NULL), 1);
    /* tier change */
    assert_int_equal(it_admit_n(t, "api", "10.1.0.2", 5, T0), 3);
    assert_int_equal(rls_tier_set_at(t->db, "10.1.0.2", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.2", 1, T0, NULL), 1);
    /* override */
    assert_int_equal(it_admit_n(t, "api", "10.1.0.3", 5, T0), 3);
    assert_int_equal(rls_override_set_at(t->db, "api", "10.1.0.3", "min", 4, 0, T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.3", 1, T0, NULL), 1);
    /* refund */
    assert_int_equal(it_admit_n(t, "api", "10.1.0.4", 5, T0), 3);
    assert_int_equal(rls_refund_at(t->db, "api", "10.1.0.4", 1, T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.4", 1, T0, NULL), 1);
    /* a cancelled reservation */
    assert_int_equal(rls_reserve_at(t->db, "api", "10.1.0.5", 3, 60000, T0, &id, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    assert_int_equal(it_check(t, "api", "10.1.0.5", 1, T0, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.1.0.5", 1, T0, NULL), 0);
    assert_int_equal(rls_cancel_at(t->db, id, T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.5", 1, T0, NULL), 1);
    /* new rules */
    assert_int_equal(it_admit_n(t, "api", "10.1.0.6", 5, T0), 3);
    const char *more =
        "version: 1\n"
        "actions:\n"
        "  api:\n"
        "    key: ip\n"
        "    limits: [ { name: min, algorithm: fixed_window, limit: 5, window: 1m } ]\n";
    assert_int_equal(rls_rules_apply_at(t->db, more, strlen(more), "more.yaml", NULL, T0, NULL),
                     RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.6", 1, T0, NULL), 1);
    /* reset */
    assert_int_equal(it_admit_n(t, "api", "10.1.0.7", 7, T0), 5);
    assert_int_equal(rls_reset_at(t->db, "api", "10.1.0.7", T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.1.0.7", 1, T0, NULL), 1);
    it_free(t);
}

/* What expires in the caller's time ends a cached denial at that instant. */
static void expiries_in_callers_time(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0;
    /* a block until T0 + 10 s */
    assert_int_equal(rls_block_set_at(t->db, "api", "10.2.0.1", T0 + 10000, "t", T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.2.0.1", 1, T0, &r), 0);
    assert_int_equal(r.retry_after_ms, 10000);
    assert_int_equal(it_check(t, "api", "10.2.0.1", 1, T0 + 9999, &r), 0);
    assert_int_equal(r.retry_after_ms, 1);
    assert_int_equal(it_check(t, "api", "10.2.0.1", 1, T0 + 10000, NULL), 1);
    /* a stricter tier until T0 + 10 s */
    assert_int_equal(rls_tier_set_at(t->db, "10.2.0.2", "strict", T0 + 10000, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.2.0.2", 3, T0), 1);
    assert_int_equal(it_check(t, "api", "10.2.0.2", 1, T0 + 9999, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.2.0.2", 1, T0 + 10000, NULL), 1);
    /* the same through a pattern assignment */
    assert_int_equal(rls_tier_set_at(t->db, "10.3.0.0/16", "strict", T0 + 10000, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.3.0.1", 3, T0), 1);
    assert_int_equal(it_check(t, "api", "10.3.0.1", 1, T0 + 9999, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.3.0.1", 1, T0 + 10000, NULL), 1);
    /* an override until T0 + 10 s */
    assert_int_equal(rls_override_set_at(t->db, "api", "10.2.0.3", "min", 1, T0 + 10000, T0),
                     RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.2.0.3", 3, T0), 1);
    assert_int_equal(it_check(t, "api", "10.2.0.3", 1, T0 + 9999, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.2.0.3", 1, T0 + 10000, NULL), 1);
    /* a reservation whose TTL ends at T0 + 5 s is refunded by the next check */
    assert_int_equal(rls_reserve_at(t->db, "api", "10.2.0.4", 3, 5000, T0, &id, &r), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.2.0.4", 1, T0, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.2.0.4", 1, T0 + 4999, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.2.0.4", 1, T0 + 5000, NULL), 1);
    it_free(t);
}

/* A denial that writes (count_denied, a penalty) is never served from
 * memory; a penalty's block then is. */
static void writing_denials_are_not_cached(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open(t->path, &s), SQLITE_OK);
    assert_int_equal(it_check(t, "counted", "k", 1, T0, NULL), 1);
    for (int i = 0; i < 3; i++) {
        int64_t v = version_of(s);
        assert_int_equal(it_check(t, "counted", "k", 1, T0 + i, NULL), 0);
        assert_true(version_of(s) != v);  /* counted: a write each time */
    }
    assert_int_equal(it_check(t, "penal", "k", 1, T0, NULL), 1);
    assert_int_equal(it_check(t, "penal", "k", 1, T0 + 1, &r), 0);  /* the penalty */
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    assert_int_equal(it_check(t, "penal", "k", 1, T0 + 2, &r), 0);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* served without the write lock, which someone else holds */
    assert_int_equal(sqlite3_exec(s, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(it_check(t, "penal", "k", 1, T0 + 3, &r), 0);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(r.retry_after_ms, 9998);
    sqlite3_exec(s, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(s);
    it_free(t);
}

/* Polls `db` until the key is admitted (within 3 s of real time, else the
 * test fails); returns the real time, from `since`, of the last denial it
 * saw.  A cached denial may be served for at most one second after the
 * check that cached it, which came before `since`. */
static double last_denial_after(rls_db *db, const char *key, double since)
{
    rls_result r;
    double last = 0;
    for (;;) {
        assert_int_equal(rls_check_at(db, "api", key, 1, T0, &r), RLS_OK);
        double dt = real_s() - since;
        if (r.allowed)
            return last;
        last = dt;
        if (dt > 3.0)
            fail_msg("still denied %.2f s after the change", dt);
        usleep(100000);  /* few polls: not one in 64 (a GC step) */
    }
}

/* Another handle's change reaches a cached denial within a second. */
static void other_handle_changes_within_a_second(void **state)
{
    itest *t = it_new(RULES);
    rls_db *b = other(t);
    assert_int_equal(rls_block_set_at(b, "api", "10.4.0.1", 0, "t", T0), RLS_OK);
    assert_int_equal(it_check(t, "api", "10.4.0.1", 1, T0, NULL), 0);
    assert_int_equal(it_check(t, "api", "10.4.0.1", 1, T0, NULL), 0);
    double since = real_s();
    assert_int_equal(rls_block_unset_at(b, "api", "10.4.0.1", T0), RLS_OK);
    assert_true(last_denial_after(t->db, "10.4.0.1", since) <= 1.05);

    assert_int_equal(it_admit_n(t, "api", "10.4.0.2", 5, T0), 3);
    since = real_s();
    assert_int_equal(rls_refund_at(b, "api", "10.4.0.2", 1, T0), RLS_OK);
    assert_true(last_denial_after(t->db, "10.4.0.2", since) <= 1.05);
    rls_close(b);
    it_free(t);
}

/* ... and another process's. */
static void other_process_changes_within_a_second(void **state)
{
    itest *t = it_new(RULES);
    int go[2];
    assert_int_equal(it_admit_n(t, "api", "10.5.0.1", 5, T0), 3);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rls_db *db = NULL;
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1 || rls_open(&db, t->path, NULL) != RLS_OK)
            _exit(1);
        int rc = rls_tier_set_at(db, "10.5.0.1", "pro", 0, T0);
        rls_close(db);
        _exit(rc == RLS_OK ? 0 : 2);
    }
    close(go[0]);
    double since = real_s();
    assert_int_equal(write(go[1], "x", 1), 1);
    close(go[1]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(last_denial_after(t->db, "10.5.0.1", since) <= 1.05);
    it_free(t);
}

/* Denials served from memory are counted in the stats like any other. */
static void denials_are_counted(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "api", "10.6.0.1", 30, T0), 3);
    rls_close(t->db);  /* flushes the in-process stats */
    t->db = NULL;
    assert_int_equal(it_sql_int(t->path,
        "SELECT denied FROM rls_stats_total WHERE action = 'api'"), 27);
    assert_int_equal(it_sql_int(t->path,
        "SELECT allowed FROM rls_stats_total WHERE action = 'api'"), 3);
    assert_int_equal(it_sql_int(t->path,
        "SELECT denied FROM rls_key_stats WHERE action = 'api'"), 27);
    it_free(t);
}

/* More denied keys than the cache holds (8,192): each still decided
 * exactly. */
static void many_denied_keys(void **state)
{
    itest *t = it_new(RULES);
    char key[32];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 9000; i++) {
            snprintf(key, sizeof key, "10.7.%d.%d", i / 256, i % 256);
            if (round == 0)
                assert_int_equal(it_check(t, "api", key, 3, T0, NULL), 1);
            assert_int_equal(it_check(t, "api", key, 1, T0 + round, NULL), 0);
        }
    }
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(denial_writes_nothing),
        cmocka_unit_test(same_result_as_a_transaction),
        cmocka_unit_test(never_admits_beyond_the_limit),
        cmocka_unit_test(same_handle_changes_are_immediate),
        cmocka_unit_test(expiries_in_callers_time),
        cmocka_unit_test(writing_denials_are_not_cached),
        cmocka_unit_test(other_handle_changes_within_a_second),
        cmocka_unit_test(other_process_changes_within_a_second),
        cmocka_unit_test(denials_are_counted),
        cmocka_unit_test(many_denied_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
