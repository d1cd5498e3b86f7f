/*
 * test_usage_scale.c - usage lists of databases too large to be examined
 * whole (storage/admin_usage.c, usage_src.c): every page, by offset or
 * from an anchor (a row of another page, or the end of the list), is the
 * same slice of the full list; rls_usage_count_at() is its length; with
 * several actions, a dense one, one of two limits and a sparse one with
 * its keys spread among the others'; with keys under pressure, denials,
 * blocked keys without counters, blocks of every action; and with key
 * filters.  An anchored page is found from its anchor (rows added before
 * it do not move it), bad anchors are refused, and no read transaction is
 * left open.  (How fast pages are is measured by rltop -b, not here.)
 */
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 10, window: 1h } ]\n"
    "  login:\n"
    "    limits:\n"
    "      - { name: a, algorithm: fixed_window, limit: 4, window: 1h }\n"
    "      - { name: b, algorithm: sliding_window, limit: 20, window: 1d }\n"
    "  rare:\n"
    "    limits: [ { name: r, algorithm: token_bucket, limit: 3, window: 1h } ]\n";

#define NKEYS 900
#define NOW (T0 + 5000)

static const char *const ACTIONS[] = {NULL, "api", "login", "rare"};
static const char *const FILTERS[] = {NULL, "k0", "7"};

static void admit(itest *t, const char *action, const char *key, int n, int64_t now)
{
    rls_result r;
    for (int i = 0; i < n; i++)
        assert_int_equal(rls_check_at(t->db, action, key, 1, now, &r), RLS_OK);
}

/* api: NKEYS keys, some used up (denied), some past half; login: every
 * third key; rare: five keys far apart; blocks of one action and of all,
 * on keys with and without counters. */
static itest *big_db(void)
{
    itest *t = it_new(RULES);
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        admit(t, "api", key, i % 97 == 0 ? 12 : i % 13 == 0 ? 6 + i % 4 : 1, T0);
        if (i % 3 == 0)
            admit(t, "login", key, i % 51 == 0 ? 6 : 1, T0);
        if (i % 200 == 7)
            admit(t, "rare", key, 1 + i % 3, T0);
    }
    assert_int_equal(rls_block_set_at(t->db, "api", "k0100", 0, "test", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(t->db, NULL, "k0451", T0 + 3600000, "all", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(t->db, "login", "zz-none", 0, "no counters", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(t->db, NULL, "a-first", 0, "no counters", T0), RLS_OK);
    admit(t, "api", "flush", 1, T0 + 2000);   /* the notes of keys under pressure */
    return t;
}

static rls_usage_query query(const char *action, const char *substr, int sort, int off,
                             int lim)
{
    rls_usage_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.action = action;
    q.key_substr = substr;
    q.sort = sort;
    q.offset = off;
    q.limit = lim;
    return q;
}

static const char *cell(const rls_rows *r, int row, const char *col)
{
    const char *s = rls_rows_text(r, row, rls_rows_find(r, col));
    return s ? s : "";
}

/* page must be rows [off, off + want) of full. */
static void same_slice(const rls_rows *full, int off, int want, const rls_rows *page,
                       const char *what)
{
    int n = rls_rows_count(full) - off;
    n = n < 0 ? 0 : n > want ? want : n;
    if (rls_rows_count(page) != n)
        fail_msg("%s: %d rows, want %d", what, rls_rows_count(page), n);
    for (int i = 0; i < n; i++)
        if (strcmp(cell(full, off + i, "key"), cell(page, i, "key")) != 0 ||
            strcmp(cell(full, off + i, "action"), cell(page, i, "action")) != 0)
            fail_msg("%s: row %d is %s/%s, want %s/%s", what, off + i, cell(page, i, "action"),
                     cell(page, i, "key"), cell(full, off + i, "action"),
                     cell(full, off + i, "key"));
}

static void near(itest *t, const rls_usage_query *q, const char *key, const char *action,
                 int at, rls_rows **out)
{
    rls_usage_anchor an = {sizeof an, key, action, at};
    int rc = rls_usage_near_at(t->db, q, &an, NOW, out);
    if (rc != RLS_OK)
        fail_msg("near: %s: %s", rls_errname(rc), rls_errmsg(t->db));
}

static void every_page_is_a_slice_of_the_list(void **state)
{
    itest *t = big_db();
    int lists = 0;
    for (size_t a = 0; a < sizeof ACTIONS / sizeof *ACTIONS; a++)
        for (size_t f = 0; f < sizeof FILTERS / sizeof *FILTERS; f++)
            for (int sort = RLS_SORT_USED; sort <= RLS_SORT_DENIED; sort++) {
                rls_usage_query q = query(ACTIONS[a], FILTERS[f], sort, 0, 100000);
                rls_rows *full = NULL, *page = NULL;
                int64_t count = -1;
                char what[160];
                assert_int_equal(rls_usage_at(t->db, &q, NOW, &full), RLS_OK);
                assert_int_equal(rls_usage_count_at(t->db, &q, NOW, &count), RLS_OK);
                int n = rls_rows_count(full);
                assert_int_equal(count, n);
                lists += n > 0;
                const int offs[] = {0, 1, 25, 60, n / 3, n / 2, n - 40, n - 7};
                for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
                    int off = offs[k];
                    if (off < 0 || off >= n)
                        continue;
                    snprintf(what, sizeof what, "%s/%s sort %d offset %d",
                             ACTIONS[a] ? ACTIONS[a] : "*", FILTERS[f] ? FILTERS[f] : "-",
                             sort, off);
                    q.offset = off;
                    q.limit = 30;
                    assert_int_equal(rls_usage_at(t->db, &q, NOW, &page), RLS_OK);
                    same_slice(full, off, 30, page, what);
                    rls_rows_free(page);
                    /* anchored on rows before, after and at the page */
                    const int anchors[] = {off - 35, off + 50, off + 2, off};
                    for (size_t m = 0; m < sizeof anchors / sizeof *anchors; m++) {
                        int at = anchors[m];
                        if (at < 0 || at >= n)
                            continue;
                        near(t, &q, cell(full, at, "key"), cell(full, at, "action"), at, &page);
                        same_slice(full, off, 30, page, what);
                        rls_rows_free(page);
                    }
                    /* anchored on the end */
                    near(t, &q, NULL, NULL, n, &page);
                    same_slice(full, off, 30, page, what);
                    rls_rows_free(page);
                    q.offset = 0;
                    q.limit = 100000;
                }
                rls_rows_free(full);
            }
    assert_true(lists >= 40);
    it_free(t);
}

static void the_list_has_every_key_once(void **state)
{
    itest *t = big_db();
    rls_usage_query q = query(NULL, NULL, RLS_SORT_USED, 0, 100000);
    rls_rows *full = NULL;
    assert_int_equal(rls_usage_at(t->db, &q, NOW, &full), RLS_OK);
    /* api: its keys, flush and a-first (blocked, no counters); login: every
     * third key, zz-none, a-first and k0451 (blocked for all, not a login
     * key); rare: five keys, a-first and k0451 */
    int n = rls_rows_count(full);
    assert_int_equal(n, (NKEYS + 2) + (NKEYS / 3 + 3) + (5 + 2));
    /* pressing first: blocked, then by fraction used */
    assert_int_equal(rls_rows_int(full, 0, rls_rows_find(full, "blocked")), 1);
    int last_hot = -1;
    for (int i = 0; i < n; i++)
        if (!rls_rows_int(full, i, rls_rows_find(full, "blocked")) &&
            rls_rows_int(full, i, rls_rows_find(full, "fraction_ppm")) >= 500000)
            last_hot = i;
    assert_true(last_hot > 20);
    for (int i = last_hot + 2; i < n; i++) {   /* the rest by key, then action */
        int c = strcmp(cell(full, i - 1, "key"), cell(full, i, "key"));
        assert_true(c < 0 || (c == 0 && strcmp(cell(full, i - 1, "action"),
                                              cell(full, i, "action")) < 0));
    }
    rls_rows_free(full);
    it_free(t);
}

static void an_anchored_page_is_found_from_its_anchor(void **state)
{
    itest *t = big_db();
    rls_usage_query q = query("api", NULL, RLS_SORT_KEY, 0, 100000);
    rls_rows *full = NULL, *page = NULL;
    assert_int_equal(rls_usage_at(t->db, &q, NOW, &full), RLS_OK);
    int at = 700;
    char key[32];
    snprintf(key, sizeof key, "%s", cell(full, at, "key"));
    /* two keys before the anchor: the list moves, the anchored page not */
    admit(t, "api", "a0", 1, NOW);
    admit(t, "api", "a1", 1, NOW);
    q.offset = at;
    q.limit = 10;
    near(t, &q, key, "api", at, &page);
    same_slice(full, at, 10, page, "from the anchor");
    rls_rows_free(page);
    assert_int_equal(rls_usage_at(t->db, &q, NOW, &page), RLS_OK);
    same_slice(full, at - 2, 10, page, "by offset");
    rls_rows_free(page);
    /* past the end of an end anchor: nothing; and no anchor at all */
    q.offset = 905;
    near(t, &q, NULL, NULL, 900, &page);
    assert_int_equal(rls_rows_count(page), 0);
    rls_rows_free(page);
    q.offset = 2;
    assert_int_equal(rls_usage_near_at(t->db, &q, NULL, NOW, &page), RLS_OK);
    assert_string_equal(cell(page, 0, "key"), "a1");   /* a-first, a0, a1 */
    rls_rows_free(page);
    rls_rows_free(full);
    it_free(t);
}

static void bad_queries_and_anchors_are_refused(void **state)
{
    itest *t = big_db();
    rls_usage_query q = query(NULL, NULL, RLS_SORT_USED, 0, 10);
    rls_usage_anchor an = {sizeof an, "k0001", "api", 5};
    rls_rows *page = (rls_rows *)&an;
    int64_t n = 7;
    an.size = 4;
    assert_int_equal(rls_usage_near_at(t->db, &q, &an, NOW, &page), RLS_EINVAL);
    assert_null(page);
    an.size = sizeof an;
    an.offset = -1;
    assert_int_equal(rls_usage_near_at(t->db, &q, &an, NOW, &page), RLS_EINVAL);
    an.offset = 5;
    q.offset = -1;
    assert_int_equal(rls_usage_near_at(t->db, &q, &an, NOW, &page), RLS_EINVAL);
    q.offset = 0;
    assert_int_equal(rls_usage_near_at(t->db, &q, &an, NOW, NULL), RLS_EINVAL);
    assert_int_equal(rls_usage_count_at(t->db, &q, NOW, NULL), RLS_EINVAL);
    assert_int_equal(rls_usage_count_at(t->db, NULL, NOW, &n), RLS_EINVAL);
    q.action = "nope";
    assert_int_equal(rls_usage_count_at(t->db, &q, NOW, &n), RLS_ENOACTION);
    assert_int_equal(n, 0);
    q.action = NULL;
    q.size = 8;
    assert_int_equal(rls_usage_count_at(t->db, &q, NOW, &n), RLS_EINVAL);
    q.size = sizeof q;
    assert_int_equal(rls_usage_count_at(t->db, &q, -5, &n), RLS_ETIME);
    assert_int_equal(rls_usage_count_at(NULL, &q, NOW, &n), RLS_EINVAL);
    it_free(t);
}

static void no_transaction_is_left_open(void **state)
{
    itest *t = big_db();
    rls_usage_query q = query(NULL, NULL, RLS_SORT_USED, 600, 50);
    rls_usage_anchor an = {sizeof an, NULL, NULL, 1000};
    rls_rows *page = NULL;
    int64_t n = 0;
    assert_int_equal(rls_usage_near_at(t->db, &q, &an, NOW, &page), RLS_OK);
    rls_rows_free(page);
    assert_int_equal(rls_usage_count_at(t->db, &q, NOW, &n), RLS_OK);
    if (it_pg()) {
        /* another session can lock every table the listing reads at once:
         * no transaction of the handle holds one */
        it_sql_exec(t->path, "BEGIN; SET LOCAL lock_timeout = 1;"
                             " LOCK TABLE rls_state, rls_limits, rls_blocks, rls_key_stats,"
                             " rls_key_counts IN ACCESS EXCLUSIVE MODE; ROLLBACK");
        it_free(t);
        return;
    }
    /* another connection can checkpoint the whole WAL: no reader holds it */
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(t->path, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(s, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);   /* not busy */
    sqlite3_finalize(st);
    sqlite3_close(s);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_page_is_a_slice_of_the_list),
        cmocka_unit_test(the_list_has_every_key_once),
        cmocka_unit_test(an_anchored_page_is_found_from_its_anchor),
        cmocka_unit_test(bad_queries_and_anchors_are_refused),
        cmocka_unit_test(no_transaction_is_left_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
