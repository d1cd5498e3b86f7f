/*
 * test_statecache.c - the last known states of a handle (storage/
 * statecache.c): what is stored comes back as stored, under its algorithm
 * only, a sliding log with room for one more entry; a policy mark hides
 * the state; a drop forgets; the policy generation a key was seen clean
 * at stays with its new states until a mark or a drop; past its bound the cache evicts and holds no
 * more than the bound; every key of a growing table stays findable.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pg/statecache.h"

static rls_db *new_db(void)
{
    rls_db *db = calloc(1, sizeof *db);
    assert_non_null(db);
    return db;
}

static void free_db(rls_db *db)
{
    rls__sc_free(db);
    assert_null(db->trust.sc);
    free(db);
}

static algo_state state_of(int64_t n)
{
    algo_state s;
    memset(&s, 0, sizeof s);
    s.present = 1;
    s.a = n;
    s.b = n * 2;
    s.c = -n;
    s.last_ms = 1000 + n;
    s.expires_ms = 2000 + n;
    return s;
}

static void put_n(rls_db *db, int64_t lid, const char *key, int alg, int64_t n)
{
    algo_state s = state_of(n);
    rls__sc_put(db, lid, key, strlen(key), alg, &s);
}

/* 1 when (lid, key) holds state_of(n) under alg. */
static int holds(rls_db *db, int64_t lid, const char *key, int alg, int64_t n)
{
    algo_state got, want = state_of(n);
    int k = rls__sc_get(db, lid, key, strlen(key), alg, &got);
    if (k != 1)
        return 0;
    free(got.log);
    return got.present && got.a == want.a && got.b == want.b && got.c == want.c &&
           got.last_ms == want.last_ms && got.expires_ms == want.expires_ms;
}

static void a_stored_state_comes_back_under_its_algorithm_only(void **state)
{
    rls_db *db = new_db();
    algo_state got;
    assert_int_equal(rls__sc_get(db, 1, "k", 1, ALGO_GCRA, &got), 0);   /* empty */
    put_n(db, 1, "k", ALGO_GCRA, 7);
    assert_true(holds(db, 1, "k", ALGO_GCRA, 7));
    assert_int_equal(rls__sc_get(db, 1, "k", 1, ALGO_FIXED_WINDOW, &got), 0);
    assert_int_equal(rls__sc_get(db, 2, "k", 1, ALGO_GCRA, &got), 0);   /* other limit */
    assert_int_equal(rls__sc_get(db, 1, "k2", 2, ALGO_GCRA, &got), 0);  /* other key */
    /* a key is bytes, not a C string: a prefix is another key */
    assert_int_equal(rls__sc_get(db, 1, "kk", 1, ALGO_GCRA, &got), 1);
    assert_int_equal(rls__sc_get(db, 1, "kk", 2, ALGO_GCRA, &got), 0);
    put_n(db, 1, "k", ALGO_GCRA, 8);   /* replaced */
    assert_true(holds(db, 1, "k", ALGO_GCRA, 8));
    rls__sc_drop(db, 1, "k", 1);
    assert_int_equal(rls__sc_get(db, 1, "k", 1, ALGO_GCRA, &got), 0);
    rls__sc_drop(db, 1, "k", 1);   /* twice: nothing to drop */
    free_db(db);
}

static void a_sliding_log_is_copied_with_room_for_one_more(void **state)
{
    rls_db *db = new_db();
    unsigned char log[3 * ALGO_LOG_ENTRY];
    for (size_t i = 0; i < sizeof log; i++)
        log[i] = (unsigned char)(i * 7);
    algo_state s = state_of(3), got;
    s.log = log;
    s.log_len = sizeof log;
    rls__sc_put(db, 5, "key", 3, ALGO_SLIDING_LOG, &s);
    log[0] = 0xff;   /* the cache holds its own copy */
    assert_int_equal(rls__sc_get(db, 5, "key", 3, ALGO_SLIDING_LOG, &got), 1);
    assert_int_equal(got.log_len, sizeof log);
    assert_int_equal(got.log_cap, sizeof log + ALGO_LOG_ENTRY);
    assert_int_equal(got.log[0], 0);
    assert_memory_equal(got.log + 1, log + 1, sizeof log - 1);
    free(got.log);
    /* a longer log replaces a shorter one in place */
    unsigned char big[40 * ALGO_LOG_ENTRY];
    memset(big, 0x5a, sizeof big);
    s.log = big;
    s.log_len = sizeof big;
    rls__sc_put(db, 5, "key", 3, ALGO_SLIDING_LOG, &s);
    assert_int_equal(rls__sc_get(db, 5, "key", 3, ALGO_SLIDING_LOG, &got), 1);
    assert_int_equal(got.log_len, sizeof big);
    assert_memory_equal(got.log, big, sizeof big);
    free(got.log);
    /* a log too long to keep: the old knowledge goes too */
    size_t huge = 4096 + ALGO_LOG_ENTRY;
    s.log = calloc(1, huge);
    assert_non_null(s.log);
    s.log_len = huge;
    rls__sc_put(db, 5, "key", 3, ALGO_SLIDING_LOG, &s);
    free(s.log);
    assert_int_equal(rls__sc_get(db, 5, "key", 3, ALGO_SLIDING_LOG, &got), 0);
    free_db(db);
}

static void a_policy_mark_hides_the_state_until_a_state_is_stored(void **state)
{
    rls_db *db = new_db();
    algo_state got;
    put_n(db, 1, "k", ALGO_FIXED_WINDOW, 1);
    rls__sc_mark_policy(db, 1, "k", 1);
    assert_int_equal(rls__sc_get(db, 1, "k", 1, ALGO_FIXED_WINDOW, &got), 2);
    assert_int_equal(rls__sc_get(db, 1, "k", 1, ALGO_GCRA, &got), 2);   /* any algorithm */
    put_n(db, 1, "k", ALGO_FIXED_WINDOW, 2);
    assert_true(holds(db, 1, "k", ALGO_FIXED_WINDOW, 2));
    free_db(db);
}

/* The policy generation a key was seen clean at: kept across new states
 * of the key (they say nothing of policy), lost with a policy mark or a
 * drop, never set on a key the cache does not hold. */
static void a_clean_generation_stays_with_the_key_until_marked_or_dropped(void **state)
{
    rls_db *db = new_db();
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), -1);
    rls__sc_set_clean_gen(db, 1, "k", 1, 7);   /* no entry: nothing kept */
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), -1);
    put_n(db, 1, "k", ALGO_FIXED_WINDOW, 1);
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), -1);
    rls__sc_set_clean_gen(db, 1, "k", 1, 7);
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), 7);
    assert_int_equal(rls__sc_clean_gen(db, 2, "k", 1), -1);   /* another limit */
    put_n(db, 1, "k", ALGO_FIXED_WINDOW, 2);
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), 7);
    assert_true(holds(db, 1, "k", ALGO_FIXED_WINDOW, 2));
    rls__sc_mark_policy(db, 1, "k", 1);
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), -1);
    rls__sc_set_clean_gen(db, 1, "k", 1, 8);   /* marked: not kept */
    put_n(db, 1, "k", ALGO_FIXED_WINDOW, 3);   /* policy gone: seen afresh */
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), -1);
    rls__sc_set_clean_gen(db, 1, "k", 1, 9);
    rls__sc_drop(db, 1, "k", 1);
    put_n(db, 1, "k", ALGO_FIXED_WINDOW, 4);
    assert_int_equal(rls__sc_clean_gen(db, 1, "k", 1), -1);
    free_db(db);
}

static void many_keys_grow_the_table_and_stay_findable(void **state)
{
    rls_db *db = new_db();
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "10.0.%d.%d", i / 256, i % 256);
        put_n(db, 1 + i % 3, key, ALGO_FIXED_WINDOW, i);
    }
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "10.0.%d.%d", i / 256, i % 256);
        if (!holds(db, 1 + i % 3, key, ALGO_FIXED_WINDOW, i))
            fail_msg("key %s lost below the bound", key);
    }
    free_db(db);
}

static void past_its_bound_it_evicts_and_holds_no_more(void **state)
{
    rls_db *db = new_db();
    char key[32];
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "user:%d", i);
        put_n(db, 1, key, ALGO_GCRA, i);
    }
    int found = 0;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "user:%d", i);
        found += holds(db, 1, key, ALGO_GCRA, i);
    }
    /* full to its bound, not past it */
    assert_int_equal(found, 32768);
    /* the newest is there */
    snprintf(key, sizeof key, "user:%d", n - 1);
    assert_true(holds(db, 1, key, ALGO_GCRA, n - 1));
    free_db(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_stored_state_comes_back_under_its_algorithm_only),
        cmocka_unit_test(a_sliding_log_is_copied_with_room_for_one_more),
        cmocka_unit_test(a_policy_mark_hides_the_state_until_a_state_is_stored),
        cmocka_unit_test(a_clean_generation_stays_with_the_key_until_marked_or_dropped),
        cmocka_unit_test(many_keys_grow_the_table_and_stay_findable),
        cmocka_unit_test(past_its_bound_it_evicts_and_holds_no_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
