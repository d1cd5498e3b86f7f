/*
 * test_policy.c - what a check honours besides the counters: tiers (exact,
 * CIDR, prefix, expiry, unlimited, blocked), overrides, manual blocks,
 * penalty blocks with escalation, reservations and garbage collection.
 */
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {}, staff: { unlimited: true }, banned: { blocked: true } }\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    limits:\n"
    "      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }\n"
    "    tiers:\n"
    "      pro: [ { name: daily, limit: 10 } ]\n"
    "  login:\n"
    "    limits:\n"
    "      - { name: burst, algorithm: fixed_window, limit: 2, window: 1m, block_for: [1m, 10m, 1h] }\n"
    "  api:\n"
    "    limits:\n"
    "      - { name: rate, algorithm: fixed_window, limit: 5, window: 1h }\n"
    "    tiers:\n"
    "      pro: [ { name: rate, limit: 7 } ]\n"
    "assignments:\n"
    "  - { key: \"10.0.0.0/8\", action: signup, tier: staff }\n"
    "  - { key: \"10.9.0.0/16\", tier: banned }\n"
    "  - { key: \"user:*\", tier: pro }\n"
    "  - { key: \"vip:1\", action: api, tier: pro }\n";

static const char *MORE =
    "version: 1\n"
    "tiers: { free: {}, staff: { unlimited: true } }\n"
    "defaults: { tier: free }\n"
    "actions:\n"
    "  mail:\n"
    "    key: email\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 5, window: 1d } ]\n"
    "  v6:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 1, window: 1d } ]\n"
    "  pair:\n"
    "    limits:\n"
    "      - { name: short, algorithm: fixed_window, limit: 5, window: 1m }\n"
    "      - { name: long, algorithm: fixed_window, limit: 3, window: 1h, block_for: 1d }\n"
    "  logged:\n"
    "    limits: [ { name: exact, algorithm: sliding_log, limit: 5, window: 1m } ]\n";

static void default_tier_applies(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "signup", "203.0.113.7", 5, T0), 3);
    it_free(t);
}

static void tier_replacement_from_dynamic_assignment(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(rls_tier_set_at(t->db, "203.0.113.7", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "signup", "203.0.113.7", 12, T0), 10);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op='tier.set'"), 1);
    it_free(t);
}

static void tier_assignment_expires(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(rls_tier_set_at(t->db, "203.0.113.7", "pro", T0 + 1000, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "signup", "203.0.113.7", 4, T0), 4);
    /* back on free (3 per day) and already over it */
    assert_int_equal(it_admit_n(t, "signup", "203.0.113.7", 1, T0 + 1000), 0);
    it_free(t);
}

static void cidr_and_prefix_patterns(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    /* 10.1.2.3 is in 10/8 -> staff (unlimited) for signup */
    assert_int_equal(it_admit_n(t, "signup", "10.1.2.3", 50, T0), 50);
    /* 10.9.1.1 is in the more specific 10.9/16 -> banned */
    assert_false(it_check(t, "signup", "10.9.1.1", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(r.retry_after_ms, -1);
    /* user:* prefix (from the file) -> pro: 7 per hour on api */
    assert_int_equal(it_admit_n(t, "api", "user:42", 9, T0), 7);
    assert_int_equal(it_admit_n(t, "api", "guest:1", 9, T0), 5);
    /* a pattern set by an operator reaches the cached patterns at once */
    assert_int_equal(rls_tier_set_at(t->db, "guest:*", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "guest:1", 9, T0), 2);
    assert_int_equal(rls_tier_unset_at(t->db, "guest:*", T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "guest:2", 9, T0), 5);
    assert_int_equal(rls_tier_set_at(t->db, "guest:*", "gold", 0, T0), RLS_ENOTFOUND);
    it_free(t);
}

static void unlimited_tier_still_counts(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "signup", "10.1.2.3", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 1);
    it_free(t);
}

static void ipv6_keys_fold_to_prefix(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "signup", "2001:db8:1:2::1", 2, T0), 2);
    assert_int_equal(it_admit_n(t, "signup", "2001:db8:1:2:ffff::9", 2, T0), 1);
    /* IPv4-mapped IPv6 is the IPv4 address */
    assert_int_equal(it_admit_n(t, "signup", "198.51.100.1", 2, T0), 2);
    assert_int_equal(it_admit_n(t, "signup", "::ffff:198.51.100.1", 2, T0), 1);
    rls_result r;
    assert_int_equal(rls_check_at(t->db, "signup", "not-an-ip", 1, T0, &r), RLS_EKEY);
    assert_false(r.allowed);
    it_free(t);
}

static void override_replaces_one_limit(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(rls_override_set_at(t->db, "api", "u1", "rate", 8, 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "u1", 10, T0), 8);
    assert_int_equal(it_admit_n(t, "api", "u2", 10, T0), 5);
    assert_int_equal(rls_override_unset_at(t->db, "api", "u1", "rate", T0), RLS_OK);
    assert_int_equal(rls_override_unset_at(t->db, "api", "u1", "rate", T0), RLS_ENOTFOUND);
    assert_int_equal(rls_override_set_at(t->db, "nope", "u1", "rate", 8, 0, T0), RLS_ENOACTION);
    it_free(t);
}

static void override_expires(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(rls_override_set_at(t->db, "api", "u1", "rate", 8, T0 + 10, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "u1", 6, T0), 6);
    assert_int_equal(it_admit_n(t, "api", "u1", 1, T0 + 10), 0);
    it_free(t);
}

static void manual_block_and_unblock(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_int_equal(rls_block_set_at(t->db, "api", "u1", 0, "abuse", T0), RLS_OK);
    assert_false(it_check(t, "api", "u1", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(r.retry_after_ms, -1);
    assert_true(it_check(t, "login", "u1", 1, T0, &r));     /* other action */
    assert_int_equal(rls_block_unset_at(t->db, "api", "u1", T0), RLS_OK);
    assert_true(it_check(t, "api", "u1", 1, T0, &r));
    assert_int_equal(rls_block_unset_at(t->db, "api", "u1", T0), RLS_ENOTFOUND);
    assert_int_equal(it_sql_int(t->path,
        "SELECT count(*) FROM rls_audit WHERE op IN ('block','unblock') AND key=CAST('u1' AS BLOB)"), 2);
    it_free(t);
}

static void block_for_all_actions_until_time(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    assert_int_equal(rls_block_set_at(t->db, NULL, "u1", T0 + 5000, "spam", T0), RLS_OK);
    assert_false(it_check(t, "api", "u1", 1, T0, &r));
    assert_int_equal(r.retry_after_ms, 5000);
    assert_false(it_check(t, "login", "u1", 1, T0 + 4999, &r));
    assert_int_equal(r.retry_after_ms, 1);
    assert_true(it_check(t, "login", "u1", 1, T0 + 5000, &r));
    it_free(t);
}

static void penalty_blocks_escalate(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    const int64_t M = 60000;
    assert_int_equal(it_admit_n(t, "login", "u1", 2, T0), 2);
    assert_false(it_check(t, "login", "u1", 1, T0, &r));        /* 1st offence: 1m */
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    assert_int_equal(r.retry_after_ms, M);
    assert_false(it_check(t, "login", "u1", 1, T0 + M - 1, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* block over, new window: 2 more, then the 2nd offence: 10m */
    assert_int_equal(it_admit_n(t, "login", "u1", 2, T0 + M), 2);
    assert_false(it_check(t, "login", "u1", 1, T0 + M, &r));
    assert_int_equal(r.retry_after_ms, 10 * M);
    assert_false(it_check(t, "login", "u1", 1, T0 + 11 * M - 1, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* 3rd offence: 1h, and it stays at the last step */
    assert_int_equal(it_admit_n(t, "login", "u1", 2, T0 + 11 * M), 2);
    assert_false(it_check(t, "login", "u1", 1, T0 + 11 * M, &r));
    assert_int_equal(r.retry_after_ms, 60 * M);
    it_free(t);
}

static void penalty_level_is_forgotten(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    const int64_t M = 60000;
    assert_int_equal(it_admit_n(t, "login", "u1", 3, T0), 2);
    /* block ends at 1m, remembered until 1m + 1h; after that: 1m again */
    int64_t later = T0 + M + 60 * M + 1;
    assert_int_equal(it_admit_n(t, "login", "u1", 2, later), 2);
    assert_false(it_check(t, "login", "u1", 1, later, &r));
    assert_int_equal(r.retry_after_ms, M);
    it_free(t);
}

/* A block, tier assignment or override that has ended is as good as
 * swept, whenever GC sweeps it: an unset finds nothing to lift; a clock
 * that steps back under an hour finds the block as it was, swept or not
 * (gc.c, ENDED_KEEP_MS), beyond the hour it is gone. */
static void ended_rows_are_as_good_as_swept(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    const int64_t U = T0 + 5000, H = 3600 * 1000LL;
    const char *rows = "SELECT count(*) FROM rls_blocks WHERE key = CAST('u1' AS BLOB)";
    assert_int_equal(rls_block_set_at(t->db, "api", "u1", U, "t", T0), RLS_OK);
    assert_int_equal(rls_block_unset_at(t->db, "api", "u1", U), RLS_ENOTFOUND);
    assert_int_equal(rls_block_unset_at(t->db, NULL, "u1", U), RLS_ENOTFOUND);
    assert_int_equal(rls_gc_at(t->db, 1000, U + H - 1, NULL), RLS_OK);
    assert_int_equal(it_sql_int(t->path, rows), 1);
    assert_false(it_check(t, "api", "u1", 1, U - 1, &r));   /* the clock went back */
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(r.retry_after_ms, 1);
    assert_int_equal(rls_gc_at(t->db, 1000, U + H, NULL), RLS_OK);
    assert_int_equal(it_sql_int(t->path, rows), 0);
    assert_true(it_check(t, "api", "u1", 1, U - 1, &r));
    /* the last instant a block is in force, it can be lifted */
    assert_int_equal(rls_block_set_at(t->db, "api", "u1", U, "t", T0), RLS_OK);
    assert_int_equal(rls_block_unset_at(t->db, "api", "u1", U - 1), RLS_OK);
    /* tiers and overrides alike */
    assert_int_equal(rls_tier_set_at(t->db, "u2", "pro", U, T0), RLS_OK);
    assert_int_equal(rls_tier_unset_at(t->db, "u2", U), RLS_ENOTFOUND);
    assert_int_equal(rls_tier_unset_at(t->db, "u2", U - 1), RLS_OK);
    assert_int_equal(rls_override_set_at(t->db, "api", "u2", "rate", 8, U, T0), RLS_OK);
    assert_int_equal(rls_override_unset_at(t->db, "api", "u2", "rate", U), RLS_ENOTFOUND);
    assert_int_equal(rls_override_unset_at(t->db, "api", "u2", "rate", U - 1), RLS_OK);
    it_free(t);
}

/* A penalty block that has ended still remembers its level (until its
 * forget time): lifting it forgets the level, and then nothing is left. */
static void ended_penalty_level_can_be_lifted(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    const int64_t M = 60000;
    assert_int_equal(it_admit_n(t, "login", "u1", 3, T0), 2);   /* blocked 1m */
    assert_int_equal(rls_block_unset_at(t->db, "login", "u1", T0 + 2 * M), RLS_OK);
    assert_int_equal(rls_block_unset_at(t->db, "login", "u1", T0 + 2 * M), RLS_ENOTFOUND);
    /* the level is forgotten: the next offence is the first step again */
    assert_int_equal(it_admit_n(t, "login", "u1", 2, T0 + 2 * M), 2);
    assert_false(it_check(t, "login", "u1", 1, T0 + 2 * M, &r));
    assert_int_equal(r.retry_after_ms, M);
    it_free(t);
}

/* A key's counters that have expired (each state equal to a fresh one)
 * are as good as swept too: rls_reset_at finds nothing to clear
 * (ENOTFOUND) whether or not GC has taken their rows (before, it cleared
 * "1 counters" where they were still there); live ones it clears. */
static void expired_counters_are_as_good_as_swept(void **state)
{
    const int64_t H = 3600 * 1000LL;
    for (int sweep = 0; sweep < 2; sweep++) {
        itest *t = it_new(RULES);
        assert_true(it_check(t, "api", "u1", 1, T0, NULL));   /* its window ends at T0+1h */
        if (sweep)
            assert_int_equal(rls_gc_at(t->db, 1000, T0 + 2 * H, NULL), RLS_OK);
        int rc = rls_reset_at(t->db, "api", "u1", T0 + 2 * H);
        if (rc != RLS_ENOTFOUND)
            fail_msg("%s: reset of expired counters: %s", sweep ? "swept" : "unswept",
                     rls_errname(rc));
        assert_true(it_check(t, "api", "u2", 1, T0 + 2 * H, NULL));
        assert_int_equal(rls_reset_at(t->db, "api", "u2", T0 + 2 * H), RLS_OK);
        /* the last instant of a window: still live */
        assert_true(it_check(t, "api", "u3", 1, T0, NULL));
        assert_int_equal(rls_reset_at(t->db, "api", "u3", T0 + H - 1), RLS_OK);
        it_free(t);
    }
}

/* The audit row of a block set over one that has ended, swept or not,
 * says there was none before: a manual block, and a penalty that still
 * remembers its level (which the text names). */
static const char *last_before(rls_db *db, const char *key, char *buf, size_t size)
{
    rls_rows *r = NULL;
    assert_int_equal(rls_audit_list(db, key, 1, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    snprintf(buf, size, "%s", rls_rows_text(r, 0, rls_rows_find(r, "before")));
    rls_rows_free(r);
    return buf;
}

static void block_over_an_ended_one_had_none_before(void **state)
{
    itest *t = it_new(RULES);
    const int64_t U = T0 + 5000, M = 60000;
    char b[256];
    assert_int_equal(rls_block_set_at(t->db, "api", "u1", U, "t", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(t->db, "api", "u1", U + M, "again", U), RLS_OK);
    assert_string_equal(last_before(t->db, "u1", b, sizeof b), "none");
    assert_int_equal(rls_block_set_at(t->db, "api", "u1", U + 2 * M, "more", U + M - 1), RLS_OK);
    assert_non_null(strstr(last_before(t->db, "u1", b, sizeof b), "blocked until"));
    /* a penalty ended at T0+1m, its level remembered for an hour after */
    assert_int_equal(it_admit_n(t, "login", "u2", 3, T0), 2);
    assert_int_equal(rls_block_set_at(t->db, "login", "u2", 0, "m", T0 + 2 * M), RLS_OK);
    if (strncmp(last_before(t->db, "u2", b, sizeof b), "none", 4) != 0)
        fail_msg("before: '%s'", b);
    assert_int_equal(rls_block_unset_at(t->db, "login", "u2", T0 + 2 * M), RLS_OK);
    assert_int_equal(it_admit_n(t, "login", "u3", 3, T0), 2);
    assert_int_equal(rls_block_unset_at(t->db, "login", "u3", T0 + 2 * M), RLS_OK);
    if (strncmp(last_before(t->db, "u3", b, sizeof b), "none (", 6) != 0)
        fail_msg("before of an unblock of an ended penalty: '%s'", b);
    it_free(t);
}

static void reservation_commit_keeps_charge(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0;
    assert_int_equal(rls_reserve_at(t->db, "api", "u1", 2, 60000, T0, &id, &r), RLS_OK);
    assert_true(r.allowed);
    assert_true(id > 0);
    assert_int_equal(r.remaining, 3);
    assert_int_equal(rls_commit_at(t->db, id, T0 + 10), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "u1", 5, T0 + 20), 3);
    assert_int_equal(rls_commit_at(t->db, id, T0 + 30), RLS_ENOTFOUND);
    it_free(t);
}

static void reservation_cancel_refunds(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0;
    assert_int_equal(rls_reserve_at(t->db, "api", "u1", 4, 60000, T0, &id, &r), RLS_OK);
    assert_int_equal(rls_cancel_at(t->db, id, T0 + 10), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "u1", 6, T0 + 20), 5);
    assert_int_equal(rls_cancel_at(t->db, id, T0 + 30), RLS_ENOTFOUND);
    it_free(t);
}

static void reservation_expiry_refunds(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 0, deleted = 0;
    assert_int_equal(rls_reserve_at(t->db, "api", "u1", 5, 1000, T0, &id, &r), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "u1", 1, T0 + 10), 0);
    /* committing after the TTL: refunded, and the caller is told */
    assert_int_equal(rls_commit_at(t->db, id, T0 + 1000), RLS_EEXPIRED);
    assert_int_equal(it_admit_n(t, "api", "u1", 6, T0 + 1001), 5);
    /* an abandoned reservation is refunded by GC */
    assert_int_equal(rls_reserve_at(t->db, "api", "u2", 5, 1000, T0, &id, &r), RLS_OK);
    assert_int_equal(rls_gc_at(t->db, 100, T0 + 2000, &deleted), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), 0);
    assert_int_equal(it_admit_n(t, "api", "u2", 6, T0 + 2001), 5);
    it_free(t);
}

static void denied_reservation_has_no_id(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    int64_t id = 99;
    assert_int_equal(rls_reserve_at(t->db, "api", "u1", 6, 1000, T0, &id, &r), RLS_OK);
    assert_false(r.allowed);
    assert_int_equal(id, 0);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), 0);
    it_free(t);
}

static void gc_collects_expired_state(void **state)
{
    itest *t = it_new(RULES);
    char key[32];
    int64_t deleted = 0, total = 0;
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "user-%d", i);
        it_check(t, "login", key, 1, T0, NULL);
    }
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 500);
    /* nothing has expired yet */
    assert_int_equal(rls_gc_at(t->db, 1000, T0 + 1000, &deleted), RLS_OK);
    assert_int_equal(deleted, 0);
    /* after the 1-minute window every row is collectable, in bounded steps */
    for (int i = 0; i < 20 && total < 500; i++) {
        assert_int_equal(rls_gc_at(t->db, 100, T0 + 61000, &deleted), RLS_OK);
        assert_true(deleted <= 100);
        total += deleted;
    }
    assert_int_equal(total, 500);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 0);
    assert_true(it_sql_int(t->path, "SELECT gc_horizon FROM rls_meta") >= T0 + 60000);
    it_free(t);
}

static void checks_collect_garbage_by_themselves(void **state)
{
    itest *t = it_new(RULES);
    char key[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "old-%d", i);
        it_check(t, "login", key, 1, T0, NULL);
    }
    /* an hour later, ordinary traffic alone sweeps the old rows */
    for (int i = 0; i < 2000; i++)
        it_check(t, "api", "hot", 1, T0 + 3600000 + i, NULL);
    assert_int_equal(it_sql_int(t->path,
        "SELECT count(*) FROM rls_state WHERE CAST(key AS TEXT) LIKE 'old-%'"), 0);
    it_free(t);
}


static void expired_reservation_refunds_at_next_check(void **state)
{
    itest *t = it_new(MORE);
    rls_result r;
    int64_t id = 0;
    assert_int_equal(rls_reserve_at(t->db, "v6", "2001:db8::1", 1, 1000, T0, &id, &r), RLS_OK);
    assert_true(r.allowed);
    /* no GC step has run: the key's own next check refunds it */
    assert_true(it_check(t, "v6", "2001:db8::2", 1, T0 + 2000, &r));
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), 0);
    it_free(t);
}

static void reservation_on_folded_ipv6_key_cancels(void **state)
{
    itest *t = it_new(MORE);
    rls_result r;
    int64_t id = 0;
    assert_int_equal(rls_reserve_at(t->db, "v6", "2001:db8:1:2::1", 1, 60000, T0, &id, &r),
                     RLS_OK);
    assert_false(it_check(t, "v6", "2001:db8:1:2::9", 1, T0 + 1, &r));
    assert_int_equal(rls_cancel_at(t->db, id, T0 + 2), RLS_OK);
    /* the /64 got its unit back */
    assert_true(it_check(t, "v6", "2001:db8:1:2::9", 1, T0 + 3, &r));
    it_free(t);
}

static void block_for_all_actions_matches_normalised_keys(void **state)
{
    itest *t = it_new(MORE);
    rls_result r;
    assert_int_equal(rls_block_set_at(t->db, NULL, "Bob@Example.com", 0, "spam", T0), RLS_OK);
    assert_false(it_check(t, "mail", "Bob@Example.com", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(rls_block_set_at(t->db, NULL, "bob@example.com", 0, "spam", T0), RLS_OK);
    assert_false(it_check(t, "mail", "Bob+news@EXAMPLE.com", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* a block for one action is stored under the action's normalised key */
    assert_int_equal(rls_block_set_at(t->db, "v6", "2001:db8:7:7::1", 0, "x", T0), RLS_OK);
    assert_false(it_check(t, "v6", "2001:db8:7:7::2", 1, T0, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    it_free(t);
}

static void action_specific_assignment_beats_all_actions(void **state)
{
    itest *t = it_new(RULES);
    /* the file gives vip:1 the pro tier on api; an operator's assignment
     * for every action is less specific */
    assert_int_equal(rls_tier_set_at(t->db, "vip:1", "free", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "vip:1", 9, T0), 7);
    it_free(t);
}

static void unlimited_tier_counts_beyond_capacity(void **state)
{
    itest *t = it_new(MORE);
    assert_int_equal(rls_tier_set_at(t->db, "u@example.com", "staff", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "mail", "u@example.com", 8, T0), 8);
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state"), 8);
    it_free(t);
}

static void penalty_of_a_non_deciding_limit_applies(void **state)
{
    itest *t = it_new(MORE);
    rls_result r;
    /* 3 per hour (with a 1-day penalty) runs out before 5 per minute */
    assert_int_equal(it_admit_n(t, "pair", "k", 3, T0), 3);
    assert_false(it_check(t, "pair", "k", 1, T0, &r));
    assert_int_equal(r.retry_after_ms, 86400000);
    assert_false(it_check(t, "pair", "k", 1, T0 + 7200000, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    it_free(t);
}

static void sliding_log_override_must_fit(void **state)
{
    itest *t = it_new(MORE);
    assert_int_equal(rls_override_set_at(t->db, "logged", "k", "exact", 20000, 0, T0),
                     RLS_EINVAL);
    assert_int_equal(rls_override_set_at(t->db, "logged", "k", "exact", 10000, 0, T0), RLS_OK);
    assert_true(it_check(t, "logged", "k", 1, T0, NULL));
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_tier_applies),
        cmocka_unit_test(tier_replacement_from_dynamic_assignment),
        cmocka_unit_test(tier_assignment_expires),
        cmocka_unit_test(cidr_and_prefix_patterns),
        cmocka_unit_test(unlimited_tier_still_counts),
        cmocka_unit_test(ipv6_keys_fold_to_prefix),
        cmocka_unit_test(override_replaces_one_limit),
        cmocka_unit_test(override_expires),
        cmocka_unit_test(manual_block_and_unblock),
        cmocka_unit_test(block_for_all_actions_until_time),
        cmocka_unit_test(penalty_blocks_escalate),
        cmocka_unit_test(penalty_level_is_forgotten),
        cmocka_unit_test(ended_rows_are_as_good_as_swept),
        cmocka_unit_test(ended_penalty_level_can_be_lifted),
        cmocka_unit_test(expired_counters_are_as_good_as_swept),
        cmocka_unit_test(block_over_an_ended_one_had_none_before),
        cmocka_unit_test(reservation_commit_keeps_charge),
        cmocka_unit_test(reservation_cancel_refunds),
        cmocka_unit_test(reservation_expiry_refunds),
        cmocka_unit_test(denied_reservation_has_no_id),
        cmocka_unit_test(gc_collects_expired_state),
        cmocka_unit_test(checks_collect_garbage_by_themselves),
        cmocka_unit_test(expired_reservation_refunds_at_next_check),
        cmocka_unit_test(reservation_on_folded_ipv6_key_cancels),
        cmocka_unit_test(block_for_all_actions_matches_normalised_keys),
        cmocka_unit_test(action_specific_assignment_beats_all_actions),
        cmocka_unit_test(unlimited_tier_counts_beyond_capacity),
        cmocka_unit_test(penalty_of_a_non_deciding_limit_applies),
        cmocka_unit_test(sliding_log_override_must_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
