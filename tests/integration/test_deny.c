/*
 * test_deny.c - the denied path without a write transaction (storage/deny.c).
 *
 * Whether a check was answered from the denial cache is observed, not
 * guessed: another connection holds the database's write lock, and the
 * handle's busy timeout is short.  A check that needs the database then
 * fails with RLS_EBUSY; one answered from the cache returns RLS_OK.
 *
 * Covered: a denial over a limit and a block are answered without the lock
 * and field for field as the transaction answers them, for every algorithm;
 * capacity given back and admin changes made through another handle are
 * seen at the next check; what must never be cached (count_denied,
 * reservations, keys that normalise to something else) goes to the
 * database; real-time expiry; stats of cached denials; no side file.
 * With RLSTORE_TEST_PG (itest.h) there is no cache (every check asks the
 * server, storage/deny.c): only what any handle must see is checked.
 */
#include <sys/stat.h>
#include <unistd.h>
#include "itest.h"

#define NOW (T0 + 3600000)

static const char *RULES =
    "version: 1\n"
    "tiers: { free: {}, big: {} }\n"
    "actions:\n"
    "  fw:\n"
    "    limits: [ { name: hourly, algorithm: fixed_window, limit: 2, window: 1h } ]\n"
    "    tiers: { big: [ { name: hourly, limit: 5, window: 1h } ] }\n"
    "  sw:\n"
    "    limits: [ { name: s, algorithm: sliding_window, limit: 3, window: 1m } ]\n"
    "  sl:\n"
    "    limits: [ { name: s, algorithm: sliding_log, limit: 3, window: 1m } ]\n"
    "  tb:\n"
    "    limits: [ { name: t, algorithm: token_bucket, limit: 3, window: 1m } ]\n"
    "  gc:\n"
    "    limits: [ { name: g, algorithm: gcra, limit: 3, window: 1m, burst: 2 } ]\n"
    "  lb:\n"
    "    limits: [ { name: l, algorithm: leaky_bucket, limit: 3, window: 1m, burst: 2 } ]\n"
    "  counted:\n"
    "    limits: [ { name: c, algorithm: fixed_window, limit: 1, window: 1h,"
    " count_denied: true } ]\n"
    "  v6:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 1, window: 1h } ]\n";

static int check(rls_db *db, const char *action, const char *key, int64_t cost, int64_t now,
                 rls_result *r)
{
    return rls_check_at(db, action, key, cost, now, r);
}

static void assert_same_result(const rls_result *a, const rls_result *b)
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

/* Uses up the capacity of (action, key) with checks of one unit at now;
 * the last check (denied) is returned in *r. */
static void exhaust(rls_db *db, const char *action, const char *key, int64_t now,
                    rls_result *r)
{
    for (int i = 0; i < 100; i++) {
        assert_int_equal(check(db, action, key, 1, now, r), RLS_OK);
        if (!r->allowed)
            return;
    }
    fail_msg("%s %s never denied", action, key);
}

static void over_limit_needs_no_write_lock(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *a = it_short_handle(t);
    rls_result first, r;
    exhaust(a, "fw", "k", NOW, &first);
    assert_int_equal(first.reason, RLS_REASON_LIMIT);
    sqlite3 *lk = it_lock_db(t);
    /* the lock is real: an admissible check cannot get through */
    assert_int_equal(check(a, "fw", "other", 1, NOW, &r), RLS_EBUSY);
    /* the denial is answered, counted down by the time that passed */
    assert_int_equal(check(a, "fw", "k", 1, NOW + 1500, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    assert_int_equal(r.retry_after_ms, first.retry_after_ms - 1500);
    assert_int_equal(r.reset_ms, first.reset_ms - 1500);
    assert_string_equal(r.rule, "hourly");
    /* a fixed window: a larger cost is not the same request */
    assert_int_equal(check(a, "fw", "k", 2, NOW + 1500, &r), RLS_EBUSY);
    /* a peek always reads the database (a read transaction works) */
    assert_int_equal(rls_peek_at(a, "fw", "k", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    it_unlock_db(lk);
    /* after the reset the key is admitted again */
    assert_int_equal(check(a, "fw", "k", 1, NOW + first.retry_after_ms, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    rls_close(a);
    it_free(t);
}

/* For every algorithm, the cached answer equals what a handle without a
 * cache gets from the database at the same time. */
static void answers_equal_the_transaction(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    static const char *actions[] = {"fw", "sw", "sl", "tb", "gc", "lb"};
    itest *t = it_new(RULES);
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        rls_db *a = it_short_handle(t);
        rls_result first, cached, fresh;
        exhaust(a, actions[i], "k", NOW, &first);
        assert_true(first.retry_after_ms > 2);
        int64_t steps[] = {0, 1, first.retry_after_ms / 2, first.retry_after_ms - 1};
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            int64_t at = NOW + steps[s];
            sqlite3 *lk = it_lock_db(t);
            int rc = check(a, actions[i], "k", 1, at, &cached);
            it_unlock_db(lk);
            if (rc != RLS_OK)
                fail_msg("%s at +%lld: not answered from the cache (%s)", actions[i],
                         (long long)steps[s], rls_errname(rc));
            rls_db *b = it_short_handle(t);
            assert_int_equal(check(b, actions[i], "k", 1, at, &fresh), RLS_OK);
            rls_close(b);
            assert_same_result(&cached, &fresh);
        }
        rls_close(a);
    }
    it_free(t);
}

static void block_is_cached_for_any_cost(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *a = it_short_handle(t);
    rls_result r, first;
    assert_int_equal(rls_block_set_at(t->db, "fw", "bad", NOW + 60000, "test", NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "bad", 1, NOW, &first), RLS_OK);
    assert_int_equal(first.reason, RLS_REASON_BLOCKED);
    sqlite3 *lk = it_lock_db(t);
    assert_int_equal(check(a, "fw", "bad", 7, NOW + 1000, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(r.retry_after_ms, 59000);
    it_unlock_db(lk);
    /* unblocked through another handle: admitted at the next check */
    assert_int_equal(rls_block_unset_at(t->db, "fw", "bad", NOW + 1000), RLS_OK);
    assert_int_equal(check(a, "fw", "bad", 1, NOW + 1000, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    rls_close(a);
    it_free(t);
}

/* Each change made through another handle is seen at the next check. */
static void changes_elsewhere_are_seen_at_once(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_db *a = it_short_handle(t);
    rls_result r;
    int64_t id;

    /* a refund */
    exhaust(a, "fw", "r", NOW, &r);
    assert_int_equal(rls_refund_at(t->db, "fw", "r", 1, NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "r", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);

    /* a cancelled reservation */
    assert_int_equal(rls_reserve_at(t->db, "fw", "c", 2, 60000, NOW, &id, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    assert_int_equal(check(a, "fw", "c", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_int_equal(rls_cancel_at(t->db, id, NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "c", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);

    /* a tier with a larger limit */
    exhaust(a, "fw", "t", NOW, &r);
    assert_int_equal(rls_tier_set_at(t->db, "t", "big", 0, NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "t", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);

    /* an override */
    exhaust(a, "fw", "o", NOW, &r);
    assert_int_equal(rls_override_set_at(t->db, "fw", "o", "hourly", 10, 0, NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "o", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);

    /* a reset */
    exhaust(a, "fw", "z", NOW, &r);
    assert_int_equal(rls_reset_at(t->db, "fw", "z", NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "z", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);

    /* new rules with a larger limit */
    exhaust(a, "fw", "n", NOW, &r);
    const char *bigger = "version: 1\nactions:\n  fw:\n    limits: [ { name: hourly,"
                         " algorithm: fixed_window, limit: 9, window: 1h } ]\n";
    assert_int_equal(rls_rules_apply_at(t->db, bigger, strlen(bigger), "b.yaml", NULL, NOW,
                                        NULL), RLS_OK);
    assert_int_equal(check(a, "fw", "n", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    rls_close(a);
    it_free(t);
}

static void own_refund_is_seen(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r;
    exhaust(t->db, "fw", "k", NOW, &r);
    assert_int_equal(rls_refund_at(t->db, "fw", "k", 1, NOW), RLS_OK);
    assert_int_equal(check(t->db, "fw", "k", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    it_free(t);
}

static void what_is_never_cached(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *a = it_short_handle(t);
    rls_result r;
    int64_t id;
    sqlite3 *lk;

    /* count_denied: every denial charges */
    exhaust(a, "counted", "k", NOW, &r);
    lk = it_lock_db(t);
    assert_int_equal(check(a, "counted", "k", 1, NOW, &r), RLS_EBUSY);
    it_unlock_db(lk);

    /* an IPv6 key folded to its /64: the key as given is not the key stored */
    exhaust(a, "v6", "2001:db8::1", NOW, &r);
    lk = it_lock_db(t);
    assert_int_equal(check(a, "v6", "2001:db8::1", 1, NOW, &r), RLS_EBUSY);
    it_unlock_db(lk);

    /* a refilling algorithm and a request of more than one unit */
    exhaust(a, "tb", "k", NOW, &r);
    assert_int_equal(check(a, "tb", "k", 2, NOW, &r), RLS_OK);
    lk = it_lock_db(t);
    assert_int_equal(check(a, "tb", "k", 2, NOW, &r), RLS_EBUSY);
    it_unlock_db(lk);

    /* the key holds a reservation: it may expire and give its units back
     * (one of another key changes nothing) */
    assert_int_equal(rls_reserve_at(t->db, "fw", "other", 1, 60000, NOW, &id, &r), RLS_OK);
    assert_int_equal(rls_reserve_at(t->db, "fw", "k2", 1, 1000, NOW, &id, &r), RLS_OK);
    exhaust(a, "fw", "k2", NOW, &r);
    exhaust(a, "fw", "k3", NOW, &r);
    lk = it_lock_db(t);
    assert_int_equal(check(a, "fw", "k2", 1, NOW + 500, &r), RLS_EBUSY);
    assert_int_equal(check(a, "fw", "k3", 1, NOW + 500, &r), RLS_OK);
    it_unlock_db(lk);
    /* and when it expires, its unit is there at once */
    assert_int_equal(check(a, "fw", "k2", 1, NOW + 1000, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    rls_close(a);
    it_free(t);
}

static void trusted_for_one_second_only(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *a = it_short_handle(t);
    rls_result r;
    exhaust(a, "fw", "k", NOW, &r);
    sqlite3 *lk = it_lock_db(t);
    assert_int_equal(check(a, "fw", "k", 1, NOW, &r), RLS_OK);
    usleep(1100 * 1000);
    assert_int_equal(check(a, "fw", "k", 1, NOW, &r), RLS_EBUSY);
    it_unlock_db(lk);
    rls_close(a);
    it_free(t);
}

static void cached_denials_are_counted(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *a = it_short_handle(t);
    rls_result r;
    exhaust(a, "fw", "k", NOW, &r);  /* 2 admitted, 1 denied */
    sqlite3 *lk = it_lock_db(t);
    for (int i = 0; i < 10; i++)
        assert_int_equal(check(a, "fw", "k", 1, NOW, &r), RLS_OK);
    it_unlock_db(lk);
    rls_close(a);  /* flushes the stats */
    assert_int_equal(it_sql_int(t->path, "SELECT denied FROM rls_stats_total WHERE action = 'fw'"),
                     11);
    assert_int_equal(it_sql_int(t->path, "SELECT allowed FROM rls_stats_total WHERE action = 'fw'"),
                     2);
    assert_int_equal(it_sql_int(t->path, "SELECT denied FROM rls_key_stats WHERE action = 'fw'"),
                     11);
    it_free(t);
}

/* Without the side file that carries the generation nothing is cached,
 * and checks work as before. */
static void no_side_file_no_cache(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    char side[4200];
    rls_close(t->db);
    snprintf(side, sizeof side, "%s-ckpt", t->path);
    unlink(side);
    assert_int_equal(mkdir(side, 0700), 0);
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    rls_db *a = it_short_handle(t);
    rls_result r;
    exhaust(a, "fw", "k", NOW, &r);
    sqlite3 *lk = it_lock_db(t);
    assert_int_equal(check(a, "fw", "k", 1, NOW, &r), RLS_EBUSY);
    it_unlock_db(lk);
    assert_int_equal(rls_refund_at(t->db, "fw", "k", 1, NOW), RLS_OK);
    assert_int_equal(check(a, "fw", "k", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    rls_close(a);
    rmdir(side);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(over_limit_needs_no_write_lock),
        cmocka_unit_test(answers_equal_the_transaction),
        cmocka_unit_test(block_is_cached_for_any_cost),
        cmocka_unit_test(changes_elsewhere_are_seen_at_once),
        cmocka_unit_test(own_refund_is_seen),
        cmocka_unit_test(what_is_never_cached),
        cmocka_unit_test(trusted_for_one_second_only),
        cmocka_unit_test(cached_denials_are_counted),
        cmocka_unit_test(no_side_file_no_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
