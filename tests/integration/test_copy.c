/*
 * test_copy.c - rls_copy_at(): moving a deployment to another database.
 *
 * What is asserted: after a copy, the same checks on the source and on the
 * destination give the same results, field for field, for every algorithm,
 * a key under an escalating penalty (the next penalty escalates on the
 * destination too), an override, tier assignments (exact and CIDR), a
 * manual block with its reason, and an open reservation, which the
 * destination commits by the id the source gave; the keys' counts are
 * equal, and exact (a recount by SQL).  Rows the destination has win and
 * are counted as kept; rows without a place in its rules are dropped and
 * counted; expired rows are not copied.  A dry run, failures, large
 * copies, split sources and misuse are test_copy_faults.c.
 *
 * The SQLite pass copies SQLite to SQLite; the PostgreSQL pass (itest.h)
 * copies SQLite to PostgreSQL, PostgreSQL to SQLite and PostgreSQL to
 * PostgreSQL (two schemas of the test database).
 */
#include "copytest.h"

/* The core case for one pair of backends. */
static void same_checks_after_copy(int src_pg, int dst_pg)
{
    tdb *src = tdb_new(src_pg, YAML), *dst = tdb_new(dst_pg, NULL);
    traffic t = make_traffic(src->db);
    int64_t states = it_sql_int(src->path, "SELECT count(*) FROM rls_state");
    int64_t gone = expired_states(src->path, t.now);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL, t.now);

    counts n = row_of(rep, "rules");
    assert_int_equal(n.copied, 1);
    assert_string_equal(n.detail, "version 1");
    n = row_of(rep, "states");
    assert_int_equal(n.copied, states - gone);
    assert_int_equal(n.expired, gone);   /* the reservation's burst, 10 s */
    assert_int_equal(n.kept + n.dropped, 0);
    assert_int_equal(row_of(rep, "reservations").copied, 1);
    assert_int_equal(row_of(rep, "assignments").copied, 2);
    assert_int_equal(row_of(rep, "overrides").copied, 1);
    assert_int_equal(row_of(rep, "blocks").copied, 2);   /* manual and penalty */
    assert_int_equal(rls_rows_count(rep), 6);
    rls_rows_free(rep);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_state"), states - gone);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_audit WHERE op = 'copy'"), 1);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_audit"
                                " WHERE op = 'rules.copy' AND tool = 'test'"), 1);
    compare_counts(src, dst, t.now);

    /* new reservations on the destination get larger ids */
    int64_t id = 0, sid = 0;
    rls_result r;
    assert_int_equal(rls_reserve_at(src->db, "fixed", "later", 1, MIN, t.now, &sid, &r), RLS_OK);
    assert_int_equal(rls_reserve_at(dst->db, "fixed", "later", 1, MIN, t.now, &id, &r), RLS_OK);
    assert_true(id > t.res_id);

    compare_after(src, dst, &t);
    /* the counts stay exact on both (GC steps run on each handle's own
     * schedule, so the two may differ by keys whose state expired) */
    count_exact(dst->path, "multi");
    count_exact(dst->path, "pen");
    count_exact(dst->path, "fixed");
    count_exact(src->path, "fixed");
    tdb_free(src);
    tdb_free(dst);
}

/* The pair of backends of a test of same_checks_after_copy(). */
typedef struct backends {
    int src_pg, dst_pg;
} backends;

static void copy_between(void **state)
{
    const backends *b = *state;
    if (b->src_pg || b->dst_pg)
        IT_PG_ONLY();
    else
        IT_SQLITE_ONLY();
    same_checks_after_copy(b->src_pg, b->dst_pg);
}

static backends lite_lite = {0, 0}, lite_pg = {0, 1}, pg_lite = {1, 0}, pg_pg = {1, 1};

/* ---- what the destination has wins; what has no place is dropped ----------- */

/* The destination's rules: no 'sliding', 'bucket' under another algorithm,
 * no tier 'staff', 'multi' with its 'day' limit only. */
static const char *const YAML_DST =
    YAML_HEAD
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    YAML_FIXED
    YAML_LOG
    "  bucket: { limits: [ { name: r, algorithm: gcra, limit: 5, window: 1m } ] }\n"
    YAML_GCRA_LEAKY_PEN
    YAML_MULTI_DAY;

static void dst_rows_win_and_misfits_drop(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(0, YAML_DST);
    rls_result r;
    int64_t id = 0;
    /* the source: counters of every action, policy rows */
    for (int a = 0; a < NALGOS; a++)
        check_at(src->db, ALGOS[a], "k", 1, T0);
    check_at(src->db, "fixed", "both", 1, T0);
    check_at(src->db, "multi", "192.0.2.1", 1, T0);          /* day and burst */
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", 0, "from src", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(src->db, "sliding", "b2", 0, "", T0), RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "sliding", "o", "r", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "fixed", "o", "r", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(src->db, "10.0.0.0/8", "staff", 0, T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(src->db, "user:1", "pro", 0, T0), RLS_OK);
    assert_int_equal(rls_reserve_at(src->db, "fixed", "r", 1, MIN, T0, &id, &r), RLS_OK);
    /* the destination has rows of the same identity */
    check_at(dst->db, "fixed", "both", 1, T0);
    check_at(dst->db, "fixed", "both", 1, T0 + 1);
    check_at(dst->db, "multi", "192.0.2.1", 1, T0);           /* day only */
    assert_int_equal(rls_block_set_at(dst->db, NULL, "b", 0, "from dst", T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(dst->db, "user:1", "free", 0, T0), RLS_OK);
    int64_t did = 0;
    assert_int_equal(rls_reserve_at(dst->db, "fixed", "mine", 1, MIN, T0, &did, &r), RLS_OK);
    assert_int_equal(did, id);   /* both the first id: the source's is kept out */

    rls_rows *rep = copy_ok(dst, src, RLS_COPY_POLICY | RLS_COPY_COUNTERS, T0 + SEC);
    assert_int_equal(rls_rows_count(rep), 5);   /* no rules row: not asked for */
    counts n = row_of(rep, "states");
    /* fixed/k, log/k, gcra/k, leaky/k copied, fixed/both and multi/day
     * kept; sliding (not in the destination's rules), bucket (another
     * algorithm there) and multi's burst (not there) dropped */
    assert_int_equal(n.copied, 5);   /* and fixed/r, the reservation's */
    assert_int_equal(n.kept, 2);
    assert_int_equal(n.dropped, 3);
    assert_non_null(strstr(n.detail, "limit not in the rules: 2"));
    assert_non_null(strstr(n.detail, "limit under another algorithm: 1"));
    n = row_of(rep, "blocks");
    assert_int_equal(n.kept, 1);
    assert_int_equal(n.dropped, 1);   /* for 'sliding' */
    n = row_of(rep, "overrides");
    assert_int_equal(n.copied, 1);
    assert_int_equal(n.dropped, 1);
    n = row_of(rep, "assignments");
    assert_int_equal(n.kept, 1);      /* user:1 stays free */
    assert_int_equal(n.dropped, 1);   /* no tier staff */
    assert_non_null(strstr(n.detail, "action or tier not in the rules: 1"));
    n = row_of(rep, "reservations");
    assert_int_equal(n.kept, 1);
    assert_int_equal(n.copied, 0);
    rls_rows_free(rep);

    /* the destination's rows are as they were */
    r = check_at(dst->db, "fixed", "both", 1, T0 + 2 * SEC);
    assert_int_equal(r.remaining, 2);   /* its own two, not the source's one */
    rls_rows *b = NULL;
    assert_int_equal(rls_block_list_at(dst->db, T0 + 2 * SEC, &b), RLS_OK);
    assert_int_equal(rls_rows_count(b), 1);
    assert_string_equal(rls_rows_text(b, 0, col(b, "reason")), "from dst");
    rls_rows_free(b);
    /* 'fixed' counts both, mine (the destination's), k and r (copied), and
     * the blocked key b, which has no counters */
    assert_int_equal(keys_by_sql(dst->path, "fixed"), 4);
    assert_int_equal(it_usage_count(dst->db, "fixed", T0 + 2 * SEC), 5);
    count_exact(dst->path, "fixed");
    count_exact(dst->path, "multi");
    tdb_free(src);
    tdb_free(dst);
}

/* The rules step: a key the destination counts for an action under one limit
 * gets a counter of another limit of it: counted once, not twice. */
static void copied_counter_of_a_counted_key(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(0, YAML_DST);
    check_at(src->db, "multi", "192.0.2.1", 1, T0);   /* day and burst */
    check_at(src->db, "multi", "192.0.2.2", 1, T0);
    check_at(dst->db, "multi", "192.0.2.1", 1, T0);   /* day only */
    assert_int_equal(it_usage_count(dst->db, "multi", T0), 1);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL, T0 + SEC);
    assert_int_equal(row_of(rep, "rules").copied, 1);
    counts n = row_of(rep, "states");
    assert_int_equal(n.copied, 3);   /* .1 burst, .2 day and burst */
    assert_int_equal(n.kept, 1);     /* .1 day */
    rls_rows_free(rep);
    assert_int_equal(it_usage_count(dst->db, "multi", T0 + SEC), 2);
    assert_int_equal(keys_by_sql(dst->path, "multi"), 2);
    count_exact(dst->path, "multi");
    /* the same rules again: kept, no new version */
    rep = copy_ok(dst, src, RLS_COPY_RULES, T0 + 2 * SEC);
    n = row_of(rep, "rules");
    assert_int_equal(n.copied, 0);
    assert_int_equal(n.kept, 1);
    assert_string_equal(n.detail, "identical to version 2");
    assert_int_equal(rls_rows_count(rep), 1);
    rls_rows_free(rep);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_rulesets"), 2);
    tdb_free(src);
    tdb_free(dst);
}

/* Expired rows are not copied; a reservation past its TTL is, and refunds. */
static void expired_rows_stay(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(0, NULL);
    rls_result r;
    int64_t id = 0;
    check_at(src->db, "fixed", "old", 1, T0);                 /* expires at T0 + 1m */
    check_at(src->db, "tri", "young", 1, T0 + 50 * MIN);
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", T0 + MIN, "short", T0), RLS_OK);
    assert_int_equal(rls_tier_assign_at(src->db, "multi", "192.0.2.4", "pro", T0 + MIN, T0),
                     RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "fixed", "o", "r", 9, T0 + MIN, T0), RLS_OK);
    assert_int_equal(rls_reserve_at(src->db, "multi", "198.51.100.4", 3, MIN, T0 + 50 * MIN,
                                    &id, &r), RLS_OK);
    int64_t now = T0 + 55 * MIN;   /* the reservation's TTL is over */
    int64_t gone = expired_states(src->path, now);
    assert_true(gone >= 1);   /* fixed/old at least */
    int64_t states = it_sql_int(src->path, "SELECT count(*) FROM rls_state");
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL, now);
    assert_int_equal(row_of(rep, "states").expired, gone);
    assert_int_equal(row_of(rep, "states").copied, states - gone);
    assert_int_equal(row_of(rep, "blocks").expired, 1);
    assert_int_equal(row_of(rep, "assignments").expired, 1);
    assert_int_equal(row_of(rep, "overrides").expired, 1);
    counts n = row_of(rep, "reservations");
    assert_int_equal(n.copied, 1);
    assert_non_null(strstr(n.detail, "past their TTL"));
    rls_rows_free(rep);
    /* the overdue reservation is refunded on both at the key's next check */
    rls_result a = check_at(src->db, "multi", "198.51.100.4", 1, now + 1);
    rls_result b = check_at(dst->db, "multi", "198.51.100.4", 1, now + 1);
    same_result(&a, &b, "after the overdue reservation");
    assert_int_equal(b.remaining, 2);   /* of burst 3: its 3 units came back */
    assert_int_equal(rls_commit_at(dst->db, id, now + 2), RLS_ENOTFOUND);
    /* GC's horizon moved past the state not copied */
    assert_true(it_sql_int(dst->path, "SELECT gc_horizon FROM rls_meta") >= T0 + MIN);
    tdb_free(src);
    tdb_free(dst);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        {"sqlite_to_sqlite", copy_between, NULL, teardown, &lite_lite},
        {"sqlite_to_pg", copy_between, NULL, teardown, &lite_pg},
        {"pg_to_sqlite", copy_between, NULL, teardown, &pg_lite},
        {"pg_to_pg", copy_between, NULL, teardown, &pg_pg},
        cmocka_unit_test_teardown(dst_rows_win_and_misfits_drop, teardown),
        cmocka_unit_test_teardown(copied_counter_of_a_counted_key, teardown),
        cmocka_unit_test_teardown(expired_rows_stay, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
