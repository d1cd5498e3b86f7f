/*
 * test_copy_faults.c - rls_copy_at() when it must store nothing or
 * refuse: a dry run and a failure in the middle (a read of the source
 * failing, a row the destination refuses) leave the destination as it
 * was; a copy of more keys than a page crosses page boundaries and counts
 * keys exactly; a split source copies; misuse is refused.  Runs on SQLite
 * and, in the PostgreSQL pass, on PostgreSQL (copytest.h).
 */
#include "copytest.h"
#include "reliability/faultvfs.c"   /* a read that fails in the middle of a copy */

/* ---- nothing stored: a dry run, a failure ----------------------------------- */

static void dry_run_stores_nothing(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(it_pg() != NULL, NULL);
    char before[256], after[256];
    traffic t = make_traffic(src->db);
    fingerprint(dst->path, before, sizeof before);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL | RLS_COPY_DRY_RUN, t.now);
    assert_int_equal(row_of(rep, "rules").copied, 1);
    assert_true(row_of(rep, "states").copied > 20);
    assert_int_equal(row_of(rep, "reservations").copied, 1);
    rls_rows_free(rep);
    fingerprint(dst->path, after, sizeof after);
    assert_string_equal(before, after);
    /* the handle did not keep the rules it stored and rolled back */
    rls_result r;
    assert_int_equal(rls_check_at(dst->db, "fixed", "k1", 1, t.now, &r), RLS_ENORULES);
    /* and the real copy then works */
    rep = copy_ok(dst, src, RLS_COPY_ALL, t.now);
    rls_rows_free(rep);
    compare_after(src, dst, &t);
    tdb_free(src);
    tdb_free(dst);
}

/* SQLite: a read that fails in the middle of a large copy (the fault VFS). */
static void failure_midway_changes_nothing(void **state)
{
    IT_SQLITE_ONLY();
    tdb *src = tdb_new(0, YAML), *dst = tdb_new(0, NULL);
    char key[32], before[256], after[256];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "user:%05d", i);
        check_at(src->db, "tri", key, 1, T0 + i);
    }
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", 0, "x", T0), RLS_OK);
    fingerprint(dst->path, before, sizeof before);
    /* count the reads of a whole copy from cold handles, then fail one in
     * the middle (and every one after it) */
    tdb_reopen(src, 1);
    tdb_reopen(dst, 0);
    fv_arm(FV_READ, 1000000000L, SQLITE_IOERR_READ, 0);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL | RLS_COPY_DRY_RUN, T0 + MIN);
    rls_rows_free(rep);
    long reads = fv_seen(FV_READ);
    assert_true(reads > 20);
    tdb_reopen(src, 1);
    tdb_reopen(dst, 0);
    fv_arm(FV_READ, reads / 2, SQLITE_IOERR_READ, 1);
    rep = (rls_rows *)1;
    int rc = rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0 + MIN, &rep);
    long injected = fv_injected_since_arm();
    fv_disarm();
    assert_int_equal(rc, RLS_EIO);
    assert_null(rep);
    assert_true(injected > 0);
    assert_true(strlen(rls_errmsg(dst->db)) > 0);
    fingerprint(dst->path, after, sizeof after);
    assert_string_equal(before, after);
    /* the handle is still sound: the copy runs again, whole */
    rep = copy_ok(dst, src, RLS_COPY_ALL, T0 + MIN);
    assert_int_equal(row_of(rep, "states").copied, 9000 - expired_states(src->path, T0 + MIN));
    rls_rows_free(rep);
    assert_int_equal(it_usage_count(dst->db, "tri", T0 + MIN), 3001);   /* and blocked b */
    assert_int_equal(keys_by_sql(dst->path, "tri"), 3000);
    count_exact(dst->path, "tri");
    tdb_free(src);
    tdb_free(dst);
}

/* PostgreSQL: text PostgreSQL refuses (a block reason that is not UTF-8,
 * which SQLite stores), after the assignments and overrides were copied. */
static void refused_row_changes_nothing(void **state)
{
    IT_PG_ONLY();
    tdb *src = tdb_new(0, YAML), *dst = tdb_new(1, NULL);
    char before[256], after[256];
    check_at(src->db, "fixed", "k", 1, T0);
    assert_int_equal(rls_tier_set_at(src->db, "user:1", "pro", 0, T0), RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "fixed", "o", "r", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", 0, "bad \xff byte", T0), RLS_OK);
    fingerprint(dst->path, before, sizeof before);
    rls_rows *rep = NULL;
    int rc = rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0 + SEC, &rep);
    assert_int_not_equal(rc, RLS_OK);
    assert_null(rep);
    assert_true(strlen(rls_errmsg(dst->db)) > 0);
    fingerprint(dst->path, after, sizeof after);
    assert_string_equal(before, after);
    rls_result r;
    assert_int_equal(rls_check_at(dst->db, "fixed", "k", 1, T0 + SEC, &r), RLS_ENORULES);
    tdb_free(src);
    tdb_free(dst);
}

/* ---- large: pages, keys across page boundaries ---------------------------------- */

static void many_keys_in_pages(void **state)
{
    tdb *src = tdb_new(0, YAML), *dst = tdb_new(it_pg() != NULL, YAML);
    char key[32];
    /* three limits per key: a key's rows straddle pages of 512 */
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "k%05d", i);
        check_at(src->db, "tri", key, 1 + i % 3, T0 + i);
    }
    /* the destination counts some of the keys already */
    for (int i = 0; i < 2000; i += 7) {
        snprintf(key, sizeof key, "k%05d", i);
        check_at(dst->db, "tri", key, 1, T0);
    }
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_COUNTERS, T0 + 3 * SEC);
    counts n = row_of(rep, "states");
    assert_int_equal(n.copied + n.kept, 6000);
    assert_int_equal(n.kept, 3 * 286);
    rls_rows_free(rep);
    assert_int_equal(it_usage_count(dst->db, "tri", T0 + 3 * SEC), 2000);
    assert_int_equal(keys_by_sql(dst->path, "tri"), 2000);
    count_exact(dst->path, "tri");
    /* a copied key decides as on the source */
    for (int i = 1; i < 2000; i += 333) {
        if (i % 7 == 0)
            continue;   /* the destination's own */
        snprintf(key, sizeof key, "k%05d", i);
        both(src->db, dst->db, "tri", key, 1, T0 + 4 * SEC);
    }
    tdb_free(src);
    tdb_free(dst);
}

/* ---- split deployments ------------------------------------------------------------ */

static void split_source_copies(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();   /* RULES of splittest.h */
    tdb *dst = tdb_new(0, NULL);
    rls_result r;
    /* a penalty (counters file), then a manual block of the same key and
     * action (rules file), which lifts the penalty in a second transaction
     * (policy.c); a crash between the two leaves both */
    assert_int_equal(admit_n(p->app, "login", "alice", 3, T0), 2);
    assert_int_equal(rls_block_set_at(p->admin, "login", "alice", 0, "manual", T0 + 1), RLS_OK);
    char sql[300];
    snprintf(sql, sizeof sql, "INSERT INTO rls_blocks(key, action, until_ms, kind, level,"
             " forget_ms, rule, reason, created_ms) VALUES (CAST('alice' AS BLOB), 'login',"
             " %lld, 1, 1, %lld, 'burst', 'penalty', %lld)", (long long)(T0 + 3600 * SEC),
             (long long)(T0 + 7 * 3600 * SEC), (long long)T0);
    it_sql_exec(p->counters, sql);
    /* a split handle lists both rows when both files hold one */
    assert_int_equal(admit_n(p->app, "api", "192.0.2.1", 2, T0), 2);
    assert_int_equal(rls_tier_set_at(p->admin, "192.0.2.9", "pro", 0, T0), RLS_OK);
    rls_rows *rep = copy_ok(dst, &(tdb){.db = p->app}, RLS_COPY_ALL, T0 + 2);
    counts n = row_of(rep, "blocks");
    assert_int_equal(n.copied, 1);
    assert_int_equal(n.dropped, 1);
    assert_non_null(strstr(n.detail, "penalty under a manual block"));
    assert_int_equal(row_of(rep, "states").copied, 2);
    assert_int_equal(row_of(rep, "assignments").copied, 1);
    rls_rows_free(rep);
    rls_rows *b = NULL;
    assert_int_equal(rls_block_list_at(dst->db, T0 + 3, &b), RLS_OK);
    assert_int_equal(rls_rows_count(b), 1);
    assert_string_equal(rls_rows_text(b, 0, col(b, "reason")), "manual");
    rls_rows_free(b);
    r = check_at(dst->db, "api", "192.0.2.1", 1, T0 + 3);
    assert_int_equal(r.remaining, 0);   /* 3 a day: the two copied count */
    /* into a split deployment: refused */
    rls_rows *none = (rls_rows *)1;
    assert_int_equal(rls_copy_at(p->admin, dst->db, RLS_COPY_ALL, T0 + 4, &none), RLS_EINVAL);
    assert_null(none);
    assert_non_null(strstr(rls_errmsg(p->admin), "split deployment"));
    tdb_free(dst);
    pair_free(p);
}

/* ---- misuse ---------------------------------------------------------------------------- */

static void misuse_is_refused(void **state)
{
    int pg = it_pg() != NULL;
    tdb *src = tdb_new(pg, YAML), *dst = tdb_new(pg, NULL);
    rls_rows *rep = (rls_rows *)1;
    assert_int_equal(rls_copy_at(NULL, src->db, RLS_COPY_ALL, T0, &rep), RLS_EINVAL);
    assert_null(rep);
    assert_int_equal(rls_copy_at(dst->db, NULL, RLS_COPY_ALL, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, 0, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_DRY_RUN, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, 8, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_ALL, -1, NULL), RLS_ETIME);
    assert_int_equal(rls_copy_at(dst->db, dst->db, RLS_COPY_ALL, T0, NULL), RLS_EINVAL);
    /* the same database through another handle */
    rls_db *again = open_path(src->path, 1);
    assert_int_equal(rls_copy_at(src->db, again, RLS_COPY_ALL, T0, NULL), RLS_EINVAL);
    assert_non_null(strstr(rls_errmsg(src->db), "is the destination"));
    rls_close(again);
    /* no rules anywhere to map onto */
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_COUNTERS, T0, NULL), RLS_ENORULES);
    assert_int_equal(rls_copy_at(src->db, dst->db, RLS_COPY_RULES, T0, NULL), RLS_ENORULES);
    /* a read-only destination; a read-only source is fine */
    check_at(src->db, "fixed", "k", 1, T0);
    tdb_reopen(dst, 1);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0, NULL), RLS_EREADONLY);
    tdb_reopen(dst, 0);
    tdb_reopen(src, 1);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0, NULL), RLS_OK);
    assert_int_equal(it_usage_count(dst->db, "fixed", T0), 1);
    tdb_free(src);
    tdb_free(dst);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(dry_run_stores_nothing, teardown),
        cmocka_unit_test_teardown(failure_midway_changes_nothing, teardown),
        cmocka_unit_test_teardown(refused_row_changes_nothing, teardown),
        cmocka_unit_test_teardown(many_keys_in_pages, teardown),
        cmocka_unit_test_teardown(split_source_copies, teardown),
        cmocka_unit_test_teardown(misuse_is_refused, teardown),
    };
    if (fv_install() != SQLITE_OK) {
        fprintf(stderr, "cannot install the fault VFS\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
