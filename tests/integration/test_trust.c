/*
 * test_trust.c - the reads a check skips while its handle may trust what it
 * knew after its last check (storage/cache.c): the control row, the key's
 * policy rows and its expired reservations while those tables are empty.
 * Whatever changed since, by the same handle (an admin change, its own
 * penalty or reservation) or by any other connection, must be honoured at
 * the very next check.
 */
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    "  api:\n"
    "    key: ip\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 2, window: 1d } ]\n"
    "    tiers:\n"
    "      pro: [ { name: day, limit: 5 } ]\n"
    "  login:\n"
    "    limits: [ { name: burst, algorithm: fixed_window, limit: 2, window: 1m, block_for: 1h } ]\n";

static const char *RULES_MORE =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    key: ip\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 4, window: 1d } ]\n";

/* A few checks on unrelated keys: afterwards the handle trusts its cache
 * and knows the policy and reservation tables are empty. */
static void settle(itest *t)
{
    it_check(t, "api", "192.0.2.1", 1, T0, NULL);
    it_check(t, "api", "192.0.2.2", 1, T0, NULL);
    it_check(t, "api", "192.0.2.3", 1, T0, NULL);
}

static void same_handle_admin_changes(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    settle(t);
    /* a CIDR assignment lives in the handle's cache (rules generation) */
    assert_int_equal(rls_tier_set_at(t->db, "10.1.0.0/16", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.1.2.3", 6, T0), 5);
    assert_int_equal(rls_tier_unset_at(t->db, "10.1.0.0/16", T0), RLS_OK);
    settle(t);
    /* an exact assignment, a block and an override are rows of the key */
    assert_int_equal(rls_tier_set_at(t->db, "10.2.2.2", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.2.2.2", 6, T0), 5);
    settle(t);
    assert_int_equal(rls_block_set_at(t->db, "api", "10.3.3.3", 0, "test", T0), RLS_OK);
    assert_int_equal(rls_check_at(t->db, "api", "10.3.3.3", 1, T0, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    settle(t);
    assert_int_equal(rls_override_set_at(t->db, "api", "10.4.4.4", "day", 3, 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.4.4.4", 5, T0), 3);
    settle(t);
    /* new rules */
    assert_int_equal(rls_rules_apply_at(t->db, RULES_MORE, strlen(RULES_MORE), "more", NULL,
                                        T0, NULL), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.5.5.5", 5, T0), 4);
    it_free(t);
}

static void other_connection_changes(void **state)
{
    itest *t = it_new(RULES);
    rls_db *other;
    rls_result r;
    assert_int_equal(rls_open(&other, t->path, NULL), RLS_OK);
    settle(t);
    assert_int_equal(rls_tier_set_at(other, "10.1.0.0/16", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.1.2.3", 6, T0), 5);
    settle(t);
    assert_int_equal(rls_block_set_at(other, "", "10.3.3.3", 0, "test", T0), RLS_OK);
    assert_int_equal(rls_check_at(t->db, "api", "10.3.3.3", 1, T0, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    settle(t);
    /* a charge by the other handle counts at once */
    assert_int_equal(rls_check_at(other, "api", "10.6.6.6", 1, T0, &r), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.6.6.6", 3, T0), 1);
    settle(t);
    assert_int_equal(rls_rules_apply_at(other, RULES_MORE, strlen(RULES_MORE), "more", NULL,
                                        T0, NULL), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "10.4.4.4", 5, T0), 4);
    settle(t);
    /* a plain SQLite connection going back to the first rule set */
    it_sql_exec(t->path, "UPDATE rls_meta SET active_version = 1, rules_gen = rules_gen + 1");
    assert_int_equal(it_admit_n(t, "api", "10.5.5.5", 5, T0), 2);
    rls_close(other);
    it_free(t);
}

static void own_penalty_blocks_the_next_check(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    settle(t);
    assert_int_equal(it_admit_n(t, "login", "mallory", 3, T0), 2);  /* 3rd: penalty */
    assert_int_equal(rls_check_at(t->db, "login", "mallory", 1, T0 + 1, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* a minute later the window has room again, the block still holds */
    assert_int_equal(rls_check_at(t->db, "login", "mallory", 1, T0 + 61000, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    it_free(t);
}

static void own_reservation_expires_at_the_next_check(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0;
    settle(t);
    assert_int_equal(rls_reserve_at(t->db, "api", "10.7.7.7", 2, 1000, T0, &id, &r), RLS_OK);
    assert_true(r.allowed);
    assert_true(id > 0);
    assert_int_equal(it_admit_n(t, "api", "10.7.7.7", 1, T0), 0);
    /* abandoned: its units come back at the key's next check */
    assert_int_equal(it_admit_n(t, "api", "10.7.7.7", 3, T0 + 2000), 2);
    it_free(t);
}

static void peeks_keep_nothing_stale(void **state)
{
    itest *t = it_new(RULES);
    rls_db *other;
    rls_result r;
    assert_int_equal(rls_open(&other, t->path, NULL), RLS_OK);
    settle(t);
    assert_int_equal(rls_peek_at(t->db, "api", "10.8.8.8", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    assert_int_equal(rls_block_set_at(other, "api", "10.8.8.8", 0, "test", T0), RLS_OK);
    assert_int_equal(rls_peek_at(t->db, "api", "10.8.8.8", 1, T0, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(rls_check_at(t->db, "api", "10.8.8.8", 1, T0, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    rls_close(other);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_handle_admin_changes),
        cmocka_unit_test(other_connection_changes),
        cmocka_unit_test(own_penalty_blocks_the_next_check),
        cmocka_unit_test(own_reservation_expires_at_the_next_check),
        cmocka_unit_test(peeks_keep_nothing_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
