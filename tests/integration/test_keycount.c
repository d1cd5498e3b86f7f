/*
 * test_keycount.c - the number of keys each action tracks (rls_key_counts,
 * schema/002, storage/keycount.c) stays exact: after new keys and old ones,
 * keys shared by actions, a tier with a limit of its own, GC of one limit's
 * rows and then of all, reset, a limit whose algorithm changed,
 * reservations, checks that write nothing; and a database of the first
 * schema gets the count of the keys it has when it is opened.  The truth
 * is counted from rls_state directly, and rls_usage_count_at() must agree.
 */
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "tiers: { free: {}, pro: {} }\n"
    "defaults: { tier: free }\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 100, window: 1m } ]\n"
    "  login:\n"
    "    limits:\n"
    "      - { name: short, algorithm: fixed_window, limit: 100, window: 1s }\n"
    "      - { name: long, algorithm: fixed_window, limit: 100, window: 1h }\n"
    "    tiers:\n"
    "      pro: [ { name: extra, algorithm: fixed_window, limit: 5, window: 1d } ]\n"
    "assignments:\n"
    "  - { key: \"vip*\", action: login, tier: pro }\n";

/* api's limit keeps its name and id but changes algorithm. */
static const char *RULES_SLIDING =
    "version: 1\n"
    "tiers: { free: {}, pro: {} }\n"
    "defaults: { tier: free }\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: rate, algorithm: sliding_window, limit: 100, window: 1m } ]\n"
    "  login:\n"
    "    limits:\n"
    "      - { name: short, algorithm: fixed_window, limit: 100, window: 1s }\n"
    "      - { name: long, algorithm: fixed_window, limit: 100, window: 1h }\n"
    "    tiers:\n"
    "      pro: [ { name: extra, algorithm: fixed_window, limit: 5, window: 1d } ]\n"
    "assignments:\n"
    "  - { key: \"vip*\", action: login, tier: pro }\n";

/* Distinct keys with a state row of the action's limits, read directly. */
static int64_t truth(const itest *t, const char *action)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(DISTINCT s.key) FROM rls_state s JOIN rls_limits l"
             " ON l.lid = s.lid WHERE l.action = '%s'", action);
    return it_sql_int(t->path, sql);
}

static int64_t stored(const itest *t, const char *action)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT coalesce((SELECT keys FROM rls_key_counts WHERE action = '%s'), 0)",
             action);
    return it_sql_int(t->path, sql);
}

static int64_t api_count(itest *t, const char *action, int64_t now)
{
    return it_usage_count(t->db, action, now);
}

/* The stored count and the API's agree with the rows, and are `want`. */
static void expect(itest *t, const char *action, int64_t want, int64_t now)
{
    assert_int_equal(truth(t, action), want);
    assert_int_equal(stored(t, action), want);
    assert_int_equal(api_count(t, action, now), want);
}

/* Every expired row: a GC step starts where the last one stopped and ends
 * at the end of the table, so two steps cover it. */
static int64_t gc_all(itest *t, int64_t now)
{
    int64_t a = 0, b = 0;
    assert_int_equal(rls_gc_at(t->db, 1000000, now, &a), RLS_OK);
    assert_int_equal(rls_gc_at(t->db, 1000000, now, &b), RLS_OK);
    return a + b;
}

static void checks(itest *t, const char *action, const char *prefix, int from, int to,
                   int64_t now)
{
    char key[64];
    for (int i = from; i < to; i++) {
        snprintf(key, sizeof key, "%s%d", prefix, i);
        it_check(t, action, key, 1, now, NULL);
    }
}

static void new_and_old_keys_split_across_actions(void **state)
{
    itest *t = it_new(RULES);
    expect(t, "api", 0, T0);
    checks(t, "api", "k", 0, 50, T0);
    checks(t, "login", "k", 30, 60, T0);   /* 20 shared with api */
    checks(t, "login", "vip", 0, 5, T0);   /* pro: a third limit */
    expect(t, "api", 50, T0);
    expect(t, "login", 35, T0);
    /* checking them again adds nothing */
    checks(t, "api", "k", 0, 50, T0 + 10);
    checks(t, "login", "k", 30, 60, T0 + 10);
    checks(t, "login", "vip", 0, 5, T0 + 10);
    expect(t, "api", 50, T0 + 10);
    expect(t, "login", 35, T0 + 10);
    /* every action together */
    assert_int_equal(api_count(t, NULL, T0 + 10), 85);
    it_free(t);
}

static void gc_of_some_limits_then_of_all(void **state)
{
    itest *t = it_new(RULES);
    checks(t, "api", "k", 0, 40, T0);
    checks(t, "login", "k", 0, 20, T0);
    checks(t, "login", "vip", 0, 5, T0);
    expect(t, "login", 25, T0);
    /* two seconds on: the 1s window's rows go, the 1h ones keep the keys */
    assert_int_equal(gc_all(t, T0 + 2000), 25);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state s JOIN rls_limits l"
                                         " ON l.lid = s.lid WHERE l.name LIKE 'short_%'"), 0);
    expect(t, "login", 25, T0 + 2000);
    expect(t, "api", 40, T0 + 2000);
    /* two hours on: only the vip keys' day limit is left */
    assert_int_equal(gc_all(t, T0 + 7200000), 40 + 25);
    expect(t, "api", 0, T0 + 7200000);
    expect(t, "login", 5, T0 + 7200000);
    /* and a key that comes back is counted again */
    checks(t, "api", "k", 0, 3, T0 + 7200000);
    expect(t, "api", 3, T0 + 7200000);
    it_free(t);
}

static void gc_in_small_steps_during_checks(void **state)
{
    itest *t = it_new(RULES);
    checks(t, "api", "old", 0, 300, T0);
    expect(t, "api", 300, T0);
    /* later checks collect the old rows a little at a time (a step every
     * 64 writes on SQLite, every 512 on PostgreSQL) */
    for (int round = 0; round < 60; round++)
        checks(t, "api", "new", round * 10, round * 10 + 10, T0 + 120000 + round * 1000);
    int64_t left = truth(t, "api");
    assert_true(left < 900);   /* some were collected */
    expect(t, "api", left, T0 + 200000);
    it_free(t);
}

static void reset_forgets_the_key(void **state)
{
    itest *t = it_new(RULES);
    checks(t, "login", "k", 0, 10, T0);
    checks(t, "api", "k", 0, 10, T0);
    assert_int_equal(rls_reset_at(t->db, "login", "k3", T0), RLS_OK);
    expect(t, "login", 9, T0);
    expect(t, "api", 10, T0);   /* the key's other action keeps it */
    assert_int_equal(rls_reset_at(t->db, "login", "k3", T0), RLS_ENOTFOUND);
    assert_int_equal(rls_reset_at(t->db, "login", "nobody", T0), RLS_ENOTFOUND);
    expect(t, "login", 9, T0);
    it_check(t, "login", "k3", 1, T0 + 1, NULL);
    expect(t, "login", 10, T0 + 1);
    it_free(t);
}

static void a_limit_of_another_algorithm_is_not_a_new_key(void **state)
{
    itest *t = it_new(RULES);
    checks(t, "api", "k", 0, 10, T0);
    expect(t, "api", 10, T0);
    assert_int_equal(rls_rules_apply_at(t->db, RULES_SLIDING, strlen(RULES_SLIDING), "s.yaml",
                                        NULL, T0 + 1, NULL), RLS_OK);
    /* the rows are there, written by the old algorithm: read as absent */
    checks(t, "api", "k", 0, 10, T0 + 2);
    expect(t, "api", 10, T0 + 2);
    checks(t, "api", "k", 10, 12, T0 + 2);
    expect(t, "api", 12, T0 + 2);
    it_free(t);
}

static void a_tier_limit_of_its_own(void **state)
{
    itest *t = it_new(RULES);
    /* vip1 on the default tier first (no assignment yet for "vipx") */
    it_check(t, "login", "vipx1", 1, T0, NULL);
    expect(t, "login", 1, T0);
    /* moved to pro by an exact assignment: its "extra" row is new, the
     * key is not */
    assert_int_equal(rls_tier_assign_at(t->db, "login", "plain", "pro", 0, T0), RLS_OK);
    it_check(t, "login", "plain", 1, T0, NULL);
    expect(t, "login", 2, T0);
    it_check(t, "login", "vipx1", 1, T0 + 1, NULL);
    expect(t, "login", 2, T0 + 1);
    it_free(t);
}

static void reservations_and_checks_that_write_nothing(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0;
    assert_int_equal(rls_reserve_at(t->db, "api", "r1", 1, 60000, T0, &id, &r), RLS_OK);
    assert_true(r.allowed);
    expect(t, "api", 1, T0);
    assert_int_equal(rls_cancel_at(t->db, id, T0 + 1), RLS_OK);
    expect(t, "api", 1, T0 + 1);   /* refunded, the row stays */
    /* denied without a write: a cost over the limit, a blocked key */
    assert_int_equal(rls_check_at(t->db, "api", "big", 1000, T0, &r), RLS_OK);
    assert_false(r.allowed);
    assert_int_equal(rls_block_set_at(t->db, "api", "bad", 0, "test", T0), RLS_OK);
    assert_int_equal(rls_check_at(t->db, "api", "bad", 1, T0, &r), RLS_OK);
    assert_false(r.allowed);
    assert_int_equal(truth(t, "api"), 1);
    assert_int_equal(stored(t, "api"), 1);
    /* the list also has the blocked key, which has no counters */
    assert_int_equal(api_count(t, "api", T0), 2);
    it_free(t);
}

extern const char *const rls__migrations[];

/* Makes the file what the first schema left: the tables later migrations
 * added dropped (those of schema/001 are known by building it in memory),
 * user_version 1. */
static void back_to_the_first_schema(const char *path)
{
    sqlite3 *ref = NULL;
    sqlite3_stmt *st = NULL;
    char sql[4300], drop[4096] = "";
    size_t o = 0;
    assert_int_equal(sqlite3_open(":memory:", &ref), SQLITE_OK);
    assert_int_equal(sqlite3_exec(ref, rls__migrations[0], NULL, NULL, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql, "ATTACH '%s' AS f", path);
    assert_int_equal(sqlite3_exec(ref, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(ref, "SELECT name FROM f.sqlite_schema WHERE type ="
                                             " 'table' AND name NOT IN (SELECT name FROM"
                                             " main.sqlite_schema)", -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW && o < sizeof drop - 200)
        o += (size_t)snprintf(drop + o, sizeof drop - o, "DROP TABLE \"%s\"; ",
                              (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(ref);
    assert_true(strstr(drop, "rls_key_counts") != NULL);
    snprintf(sql, sizeof sql, "%sPRAGMA user_version = 1;", drop);
    it_sql_exec(path, sql);
}

static void a_first_schema_database_is_counted_when_opened(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    checks(t, "api", "k", 0, 30, T0);
    checks(t, "login", "k", 20, 45, T0);
    int64_t rows = it_sql_int(t->path, "SELECT count(*) FROM rls_state");
    rls_close(t->db);
    t->db = NULL;
    /* as the first schema left it: no counts, user_version 1 */
    back_to_the_first_schema(t->path);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM sqlite_schema"
                                         " WHERE name = 'rls_key_counts'"), 0);
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    assert_true(it_sql_int(t->path, "PRAGMA user_version") >= 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), rows);
    expect(t, "api", 30, T0);
    expect(t, "login", 25, T0);
    /* and kept from then on */
    checks(t, "api", "k", 25, 40, T0 + 1);
    expect(t, "api", 40, T0 + 1);
    /* a read-only handle cannot upgrade: refused, file untouched */
    rls_close(t->db);
    t->db = NULL;
    back_to_the_first_schema(t->path);
    rls_options o;
    rls_options_init(&o);
    o.read_only = 1;
    assert_int_equal(rls_open(&t->db, t->path, &o), RLS_EREADONLY);
    assert_int_equal(it_sql_int(t->path, "PRAGMA user_version"), 1);
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    expect(t, "api", 40, T0 + 1);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_and_old_keys_split_across_actions),
        cmocka_unit_test(gc_of_some_limits_then_of_all),
        cmocka_unit_test(gc_in_small_steps_during_checks),
        cmocka_unit_test(reset_forgets_the_key),
        cmocka_unit_test(a_limit_of_another_algorithm_is_not_a_new_key),
        cmocka_unit_test(a_tier_limit_of_its_own),
        cmocka_unit_test(reservations_and_checks_that_write_nothing),
        cmocka_unit_test(a_first_schema_database_is_counted_when_opened),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
