/*
 * test_batch.c - atomic batch checks (rls_check_many, storage/batch.c).
 *
 * Covered: an admitted batch charges every item, a denied one none; the
 * denying item's result is its own and the admissible items say BATCH
 * with the batch's wait; a blocked key; what a denying item with a
 * penalty or count_denied writes (what its own denied check writes,
 * compared with a twin key checked alone); shadow limits; a repeated
 * (action, key), also after normalisation, refused; n == 0, n over
 * RLS_BATCH_MAX, NULL arguments; an invalid item in the middle (its index
 * named, nothing charged); a cached denial answering the batch and the
 * failure policy when storage fails (SQLite: another connection holds the
 * write lock).  With RLSTORE_TEST_PG the same on PostgreSQL.
 */
#include "itest.h"

#define NOW (T0 + 3600000)

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  a:\n"
    "    limits: [ { name: ra, algorithm: fixed_window, limit: 2, window: 1h } ]\n"
    "  b:\n"
    "    limits: [ { name: rb, algorithm: token_bucket, limit: 3, window: 1h } ]\n"
    "  counted:\n"
    "    limits: [ { name: c, algorithm: fixed_window, limit: 1, window: 1h,"
    " count_denied: true } ]\n"
    "  pen:\n"
    "    limits: [ { name: p, algorithm: fixed_window, limit: 1, window: 1h,"
    " block_for: [10m] } ]\n"
    "  shadowed:\n"
    "    limits:\n"
    "      - { name: s, algorithm: fixed_window, limit: 5, window: 1h }\n"
    "      - { name: trial, algorithm: fixed_window, limit: 1, window: 1h, mode: shadow }\n"
    "  mail:\n"
    "    key: email\n"
    "    limits: [ { name: m, algorithm: fixed_window, limit: 5, window: 1h } ]\n"
    "  lenient:\n"
    "    on_error: allow\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 5, window: 1h } ]\n"
    "  lenient2:\n"
    "    on_error: allow\n"
    "    limits: [ { name: l2, algorithm: fixed_window, limit: 5, window: 1h } ]\n"
    "  slog:\n"
    "    limits: [ { name: sl, algorithm: sliding_log, limit: 3, window: 1h } ]\n";

/* Units of (action, key) still admissible at now, by a peek. */
static int64_t left(itest *t, const char *action, const char *key)
{
    rls_result r;
    assert_int_equal(rls_peek_at(t->db, action, key, 1, NOW, &r), RLS_OK);
    return r.remaining;
}

static int many(itest *t, const rls_item *it, size_t n, rls_result *res)
{
    return rls_check_many_at(t->db, it, n, NOW, res);
}

static void admitted_batch_charges_every_item(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_item it[2] = {{"a", "u1", 1}, {"b", "10.0.0.1", 1}};
    rls_result r[2];
    for (int round = 0; round < 2; round++) {
        assert_int_equal(many(t, it, 2, r), RLS_OK);
        assert_int_equal(r[0].allowed, 1);
        assert_int_equal(r[1].allowed, 1);
        assert_int_equal(r[0].reason, RLS_REASON_OK);
        assert_string_equal(r[0].rule, "ra");
        assert_string_equal(r[1].rule, "rb");
        assert_int_equal(r[0].remaining, 1 - round);
        assert_int_equal(r[1].remaining, 2 - round);
    }
    assert_int_equal(left(t, "a", "u1"), 0);
    assert_int_equal(left(t, "b", "10.0.0.1"), 1);
    it_free(t);
}

static void denied_batch_charges_nothing(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r[3];
    assert_int_equal(it_admit_n(t, "a", "u1", 2, NOW), 2);   /* a is full */
    rls_item it[3] = {{"b", "x", 1}, {"a", "u1", 1}, {"mail", "M@x.org", 1}};
    assert_int_equal(many(t, it, 3, r), RLS_OK);
    assert_int_equal(r[1].allowed, 0);
    assert_int_equal(r[1].reason, RLS_REASON_LIMIT);
    assert_true(r[1].retry_after_ms > 0);
    for (int i = 0; i < 3; i += 2) {
        /* admissible itself: its own figures, the batch's wait */
        assert_int_equal(r[i].allowed, 0);
        assert_int_equal(r[i].reason, RLS_REASON_BATCH);
        assert_int_equal(r[i].retry_after_ms, r[1].retry_after_ms);
        assert_int_equal(r[i].delay_ms, 0);
    }
    assert_string_equal(r[0].rule, "rb");
    assert_int_equal(r[0].limit, 3);
    assert_int_equal(r[2].remaining, 4);   /* what its admission would have left */
    assert_string_equal(rls_reason_name(RLS_REASON_BATCH), "batch");
    /* nothing charged */
    assert_int_equal(left(t, "b", "x"), 3);
    assert_int_equal(left(t, "mail", "m@x.org"), 5);
    it_free(t);
}

static void blocked_item_denies_the_batch(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r[2];
    assert_int_equal(rls_block_set_at(t->db, "b", "bad", 0, "test", NOW), RLS_OK);
    rls_item it[2] = {{"a", "u1", 1}, {"b", "bad", 1}};
    assert_int_equal(many(t, it, 2, r), RLS_OK);
    assert_int_equal(r[1].reason, RLS_REASON_BLOCKED);
    assert_int_equal(r[1].retry_after_ms, -1);
    assert_int_equal(r[0].reason, RLS_REASON_BATCH);
    assert_int_equal(r[0].retry_after_ms, -1);   /* never, as the block */
    assert_int_equal(left(t, "a", "u1"), 2);
    it_free(t);
}

/* The denying item writes what its own denied check writes: the same
 * sequence on a twin key checked alone ends in the same state. */
static void denying_item_writes_as_alone(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    const char *acts[2] = {"counted", "pen"};
    for (int k = 0; k < 2; k++) {
        rls_result r[2], alone, after_b, after_a;
        assert_true(it_check(t, acts[k], "batch", 1, NOW, NULL));
        assert_true(it_check(t, acts[k], "alone", 1, NOW, NULL));
        rls_item it[2] = {{"a", "u1", 1}, {acts[k], "batch", 1}};
        assert_int_equal(many(t, it, 2, r), RLS_OK);
        assert_false(it_check(t, acts[k], "alone", 1, NOW, &alone));
        assert_int_equal(r[1].allowed, 0);
        assert_int_equal(r[1].reason, alone.reason);
        assert_int_equal(r[1].retry_after_ms, alone.retry_after_ms);
        assert_int_equal(r[1].remaining, alone.remaining);
        assert_int_equal(r[0].reason, RLS_REASON_BATCH);
        assert_int_equal(r[0].retry_after_ms, alone.retry_after_ms);
        /* the next check of each key: the same answer */
        assert_false(it_check(t, acts[k], "batch", 1, NOW + 1000, &after_b));
        assert_false(it_check(t, acts[k], "alone", 1, NOW + 1000, &after_a));
        assert_int_equal(after_b.reason, after_a.reason);
        assert_int_equal(after_b.retry_after_ms, after_a.retry_after_ms);
        assert_int_equal(after_b.remaining, after_a.remaining);
    }
    /* the penalty is a block row of the key: the second check says BLOCKED */
    rls_result r;
    assert_false(it_check(t, "pen", "batch", 1, NOW + 2000, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(left(t, "a", "u1"), 2);   /* never charged */
    it_free(t);
}

static void shadow_limit_admits_in_a_batch(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r[2];
    rls_item it[2] = {{"shadowed", "k", 1}, {"a", "k", 1}};
    assert_int_equal(many(t, it, 2, r), RLS_OK);
    assert_int_equal(r[0].reason, RLS_REASON_OK);
    assert_int_equal(many(t, it, 2, r), RLS_OK);
    assert_int_equal(r[0].allowed, 1);
    assert_int_equal(r[0].reason, RLS_REASON_SHADOW);   /* the shadow limit would deny */
    assert_int_equal(r[1].allowed, 1);
    assert_int_equal(left(t, "shadowed", "k"), 3);
    assert_int_equal(left(t, "a", "k"), 0);
    it_free(t);
}

static void repeated_key_is_refused(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r[3];
    rls_item same[3] = {{"a", "k", 1}, {"b", "k", 1}, {"a", "k", 1}};
    assert_int_equal(many(t, same, 3, r), RLS_EINVAL);
    assert_non_null(strstr(rls_errmsg(t->db), "items 0 and 2"));
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].allowed, 0);
    /* the same key after the action's normalisation */
    rls_item norm[2] = {{"mail", "Bob@Example.org", 1}, {"mail", "bob@example.org", 2}};
    assert_int_equal(many(t, norm, 2, r), RLS_EINVAL);
    assert_non_null(strstr(rls_errmsg(t->db), "items 0 and 1"));
    assert_int_equal(left(t, "a", "k"), 2);
    assert_int_equal(left(t, "b", "k"), 3);
    assert_int_equal(left(t, "mail", "bob@example.org"), 5);
    it_free(t);
}

static void bounds_and_null_arguments(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_item it[RLS_BATCH_MAX + 1];
    rls_result r[RLS_BATCH_MAX + 1];
    char keys[RLS_BATCH_MAX + 1][16];
    for (int i = 0; i <= RLS_BATCH_MAX; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        it[i] = (rls_item){"b", keys[i], 1};
    }
    assert_int_equal(rls_check_many_at(t->db, NULL, 0, NOW, NULL), RLS_OK);
    memset(r, 0x5a, sizeof r);
    assert_int_equal(many(t, it, RLS_BATCH_MAX + 1, r), RLS_EINVAL);
    assert_non_null(strstr(rls_errmsg(t->db), "RLS_BATCH_MAX"));
    assert_int_equal(r[0].allowed, 0x5a5a5a5a);   /* results not written */
    assert_int_equal(many(t, it, RLS_BATCH_MAX, r), RLS_OK);   /* the bound itself */
    for (int i = 0; i < RLS_BATCH_MAX; i++)
        assert_int_equal(r[i].allowed, 1);
    assert_int_equal(rls_check_many_at(t->db, NULL, 1, NOW, r), RLS_EINVAL);
    assert_int_equal(r[0].allowed, 0);
    assert_int_equal(rls_check_many_at(t->db, it, 1, NOW, NULL), RLS_EINVAL);
    assert_int_equal(rls_check_many_at(NULL, it, 1, NOW, r), RLS_EINVAL);
    assert_int_equal(r[0].allowed, 0);
    assert_int_equal(rls_check_many(NULL, it, 1, r), RLS_EINVAL);
    it_free(t);
}

static void invalid_item_names_its_index(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r[3];
    rls_item noact[3] = {{"a", "k", 1}, {"nosuch", "k", 1}, {"b", "k", 1}};
    assert_int_equal(many(t, noact, 3, r), RLS_ENOACTION);
    assert_non_null(strstr(rls_errmsg(t->db), "item 1: "));
    rls_item nokey[3] = {{"a", "k", 1}, {"b", "k", 1}, {"b", "", 1}};
    assert_int_equal(many(t, nokey, 3, r), RLS_EKEY);
    assert_non_null(strstr(rls_errmsg(t->db), "item 2: "));
    rls_item nullkey[2] = {{"a", "k", 1}, {"b", NULL, 1}};
    assert_int_equal(many(t, nullkey, 2, r), RLS_EINVAL);
    rls_item cost[2] = {{"a", "k", 1}, {"b", "k", -1}};
    assert_int_equal(many(t, cost, 2, r), RLS_ECOST);
    assert_non_null(strstr(rls_errmsg(t->db), "item 1: "));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].allowed, 0);   /* invalid input is never admitted */
        assert_int_equal(r[i].reason, RLS_REASON_DEGRADED);
    }
    assert_int_equal(left(t, "a", "k"), 2);
    assert_int_equal(left(t, "b", "k"), 3);
    it_free(t);
}

static void cached_denial_answers_the_batch(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *db = it_short_handle(t);
    rls_result one, r[2];
    for (int i = 0; i < 3; i++)
        assert_int_equal(rls_check_at(db, "a", "u1", 1, NOW, &one), RLS_OK);
    assert_int_equal(one.reason, RLS_REASON_LIMIT);
    sqlite3 *lk = it_lock_db(t);
    rls_item it[2] = {{"b", "x", 1}, {"a", "u1", 1}};
    assert_int_equal(rls_check_many_at(db, it, 2, NOW, r), RLS_OK);   /* no transaction */
    assert_int_equal(r[1].reason, RLS_REASON_LIMIT);
    assert_int_equal(r[1].retry_after_ms, one.retry_after_ms);
    assert_int_equal(r[0].reason, RLS_REASON_BATCH);
    assert_int_equal(r[0].retry_after_ms, one.retry_after_ms);
    /* an admissible batch needs the database */
    rls_item ok[2] = {{"b", "x", 1}, {"a", "u2", 1}};
    assert_int_equal(rls_check_many_at(db, ok, 2, NOW, r), RLS_EBUSY);
    it_unlock_db(lk);
    assert_int_equal(left(t, "b", "x"), 3);
    rls_close(db);
    it_free(t);
}

static void storage_failure_follows_every_policy(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *db = it_short_handle(t);
    rls_result r[2];
    sqlite3 *lk = it_lock_db(t);
    rls_item both[2] = {{"lenient", "k", 1}, {"lenient2", "k", 1}};
    assert_int_equal(rls_check_many_at(db, both, 2, NOW, r), RLS_EBUSY);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].allowed, 1);
        assert_int_equal(r[i].reason, RLS_REASON_DEGRADED);
    }
    /* one item's action denies on failure: the whole batch is denied */
    rls_item mixed[2] = {{"lenient", "k", 1}, {"a", "k", 1}};
    assert_int_equal(rls_check_many_at(db, mixed, 2, NOW, r), RLS_EBUSY);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i].allowed, 0);
        assert_int_equal(r[i].reason, RLS_REASON_DEGRADED);
    }
    it_unlock_db(lk);
    assert_int_equal(left(t, "lenient", "k"), 5);
    assert_int_equal(left(t, "a", "k"), 2);
    rls_close(db);
    it_free(t);
}

/* A batch leaves its items' key contexts to the next call (keyctx.c,
 * rls__keyctx_give_back): batches, checks and peeks in turn on keys of
 * their own, each decided from its own key's rows alone (a sliding log's
 * entries, a state read before, never carried into the next call). */
static void calls_after_a_batch_start_clean(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_result r[2];
    char key[16], fresh[16];
    for (int round = 0; round < 4; round++) {
        snprintf(key, sizeof key, "k%d", round);
        snprintf(fresh, sizeof fresh, "f%d", round);
        rls_item it[2] = {{"slog", key, 1}, {"a", key, 1}};
        assert_int_equal(many(t, it, 2, r), RLS_OK);
        assert_true(r[0].allowed && r[1].allowed);
        assert_int_equal(r[0].remaining, 2);
        assert_int_equal(rls_check_at(t->db, "slog", key, 1, NOW, &r[0]), RLS_OK);
        assert_true(r[0].allowed);
        assert_int_equal(r[0].remaining, 1);
        assert_int_equal(many(t, it, 2, r), RLS_OK);
        assert_true(r[0].allowed && r[1].allowed);
        assert_int_equal(r[0].remaining, 0);
        assert_int_equal(r[1].remaining, 0);
        assert_int_equal(many(t, it, 2, r), RLS_OK);   /* both at their limit */
        assert_false(r[0].allowed || r[1].allowed);
        assert_int_equal(left(t, "slog", key), 0);
        assert_int_equal(left(t, "slog", fresh), 3);
        assert_int_equal(rls_check_at(t->db, "a", fresh, 1, NOW, &r[0]), RLS_OK);
        assert_int_equal(r[0].remaining, 1);
    }
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admitted_batch_charges_every_item),
        cmocka_unit_test(denied_batch_charges_nothing),
        cmocka_unit_test(blocked_item_denies_the_batch),
        cmocka_unit_test(denying_item_writes_as_alone),
        cmocka_unit_test(shadow_limit_admits_in_a_batch),
        cmocka_unit_test(repeated_key_is_refused),
        cmocka_unit_test(bounds_and_null_arguments),
        cmocka_unit_test(invalid_item_names_its_index),
        cmocka_unit_test(cached_denial_answers_the_batch),
        cmocka_unit_test(storage_failure_follows_every_policy),
        cmocka_unit_test(calls_after_a_batch_start_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
