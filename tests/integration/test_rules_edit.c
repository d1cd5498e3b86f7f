/*
 * test_rules_edit.c - one limit of the rules changed through the library
 * (rls_rules_limit_list, rls_rules_limit_edit, rls_rules_set_limit_at):
 * the stored file keeps its text but for the digits, the library then
 * enforces the new limit, a change applied meanwhile is never lost, what
 * is inherited or invalid is refused with nothing stored, and the tiers
 * and limits rltop lists come from the library.  (The text edit's own
 * cases are tests/core/test_yaml_edit.c; these were the tests of rltop's
 * former YAML reader.)
 */
#include "itest.h"

static char *demo;

static int setup(void **state)
{
    (void)state;
    const char *root = getenv("RLS_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/demo.yaml", root ? root : ".");
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    demo = calloc(1, 1 << 20);
    size_t n = demo ? fread(demo, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    return demo && n > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(demo);
    return 0;
}


static int64_t nversions(rls_db *db)
{
    rls_rows *r = NULL;
    assert_int_equal(rls_rules_versions(db, &r), RLS_OK);
    int64_t n = rls_rows_count(r);
    rls_rows_free(r);
    return n;
}

static char *stored(rls_db *db, int64_t version)
{
    char *y = NULL;
    assert_int_equal(rls_rules_get(db, version, &y, NULL), RLS_OK);
    return y;
}

/* The edited demo rules apply, and the library enforces the new limits. */
static void edits_apply_and_are_enforced(void **state)
{
    itest *t = it_new(demo);
    int64_t v = 0;
    rls_rows *info = NULL, *limits = NULL;
    assert_int_equal(rls_rules_set_limit_at(t->db, "signup", "", "daily", "limit", 3, "rltop",
                                            "three a day", 1, T0 + 1, &v), RLS_OK);
    assert_int_equal(v, 2);
    assert_int_equal(rls_rules_set_limit_at(t->db, "api", "pro", "rate", NULL, 250, NULL, NULL, 0,
                                            T0 + 2, &v), RLS_OK);
    assert_int_equal(v, 3);
    char *y = stored(t->db, 3);
    assert_int_equal(tu_lines_changed(demo, y), 2);
    assert_non_null(strstr(y, "- { name: daily,  algorithm: fixed_window, limit: 3,  window: 1d"));
    assert_non_null(strstr(y, "- { name: rate, limit: 250, burst: 200 }"));
    rls_free(y);
    /* a free key: 3 sign-ups a day */
    int64_t now = 1795428000000LL;
    rls_result r;
    int admitted = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(rls_check_at(t->db, "signup", "203.0.113.50", 1, now, &r), RLS_OK);
        admitted += r.allowed;
    }
    assert_int_equal(admitted, 3);
    /* a pro API key: rate 250 */
    assert_int_equal(rls_explain_at(t->db, "api", "user:pro:1", now, &info, &limits), RLS_OK);
    int name = rls_rows_find(limits, "name"), lim = rls_rows_find(limits, "limit");
    int found = 0;
    for (int i = 0; i < rls_rows_count(limits); i++)
        if (strcmp(rls_rows_text(limits, i, name), "rate") == 0) {
            assert_int_equal(rls_rows_int(limits, i, lim), 250);
            found = 1;
        }
    assert_true(found);
    rls_rows_free(info);
    rls_rows_free(limits);
    /* audited as what it was */
    rls_rows *a = NULL;
    assert_int_equal(rls_audit_list(t->db, NULL, 2, &a), RLS_OK);
    int op = rls_rows_find(a, "op"), reason = rls_rows_find(a, "reason");
    int seen = 0;
    for (int i = 0; i < rls_rows_count(a); i++) {
        assert_string_equal(rls_rows_text(a, i, op), "rules.set_limit");
        seen |= strcmp(rls_rows_text(a, i, reason), "three a day") == 0 ? 1 : 0;
        seen |= strcmp(rls_rows_text(a, i, reason), "api pro limit rate: limit 250") == 0 ? 2 : 0;
    }
    assert_int_equal(seen, 3);
    rls_rows_free(a);
    it_free(t);
}

/* The preview is the text set_limit stores, with the line it changes;
 * nothing is stored by it. */
static void preview_is_what_is_stored(void **state)
{
    itest *t = it_new(demo);
    char *y = NULL, *s;
    size_t len = 0;
    int line = 0;
    assert_int_equal(rls_rules_limit_edit(t->db, 0, "mail.send", NULL, "burst", "burst", 12, &y,
                                          &len, &line), RLS_OK);
    assert_int_equal(strlen(y), len);
    assert_int_equal(tu_lines_changed(demo, y), 1);
    assert_int_equal(nversions(t->db), 1);
    const char *p = y;
    for (int i = 1; i < line; i++)
        p = strchr(p, '\n') + 1;
    assert_memory_equal(p, "        burst: 12\n", 18);
    assert_int_equal(rls_rules_set_limit_at(t->db, "mail.send", NULL, "burst", "burst", 12, NULL,
                                            NULL, 1, T0 + 1, NULL), RLS_OK);
    s = stored(t->db, 0);
    assert_string_equal(s, y);
    rls_free(s);
    rls_free(y);
    /* a version other than the active one is edited as asked */
    assert_int_equal(rls_rules_limit_edit(t->db, 1, "mail.send", NULL, "burst", "burst", 13, &y,
                                          NULL, NULL), RLS_OK);
    assert_non_null(strstr(y, "        burst: 13\n"));
    rls_free(y);
    it_free(t);
}

/* Another operator's change between reading and applying: ECONFLICT and
 * nothing stored. */
static void a_change_meanwhile_is_not_lost(void **state)
{
    itest *t = it_new(demo);
    assert_int_equal(rls_rules_set_limit_at(t->db, "login", "", "burst", NULL, 6, NULL, NULL, 1,
                                            T0 + 1, NULL), RLS_OK);
    assert_int_equal(rls_rules_set_limit_at(t->db, "login", "", "burst", NULL, 7, NULL, NULL, 1,
                                            T0 + 2, NULL), RLS_ECONFLICT);
    assert_non_null(strstr(rls_errmsg(t->db), "version 2, not 1"));
    assert_int_equal(nversions(t->db), 2);
    char *y = stored(t->db, 0);
    assert_non_null(strstr(y, "        limit: 6\n"));
    rls_free(y);
    it_free(t);
}

static void expect_refused(itest *t, const char *action, const char *tier, const char *name,
                           const char *field, int64_t value, int code, const char *want)
{
    char *y = (char *)"untouched";
    int rc = rls_rules_set_limit_at(t->db, action, tier, name, field, value, NULL, NULL, 0,
                                    T0 + 1, NULL);
    if (rc != code || !strstr(rls_errmsg(t->db), want))
        fail_msg("set %s/%s/%s: %s '%s', expected %s '%s'", action, tier, name, rls_errname(rc),
                 rls_errmsg(t->db), rls_errname(code), want);
    assert_int_equal(rls_rules_limit_edit(t->db, 0, action, tier, name, field, value, &y, NULL,
                                          NULL), code);
    assert_null(y);
}

/* What is inherited, missing or invalid is refused; nothing is stored. */
static void refusals(void **state)
{
    itest *t = it_new(NULL);
    assert_int_equal(rls_rules_set_limit_at(t->db, "api", "", "rate", NULL, 5, NULL, NULL, 0, T0,
                                            NULL), RLS_ENORULES);
    assert_int_equal(rls_rules_apply_at(t->db, demo, strlen(demo), "demo", NULL, T0, NULL),
                     RLS_OK);
    expect_refused(t, "api", "banned", "rate", NULL, 5, RLS_ENOTFOUND,
                   "does not replace limit 'rate'");
    expect_refused(t, "login", "pro", "burst", NULL, 5, RLS_ENOTFOUND, "uses the default limits");
    expect_refused(t, "nope", "", "daily", NULL, 5, RLS_ENOTFOUND,
                   "action 'nope' is not in the active rules");
    expect_refused(t, "signup", "", "monthly", NULL, 5, RLS_ENOTFOUND,
                   "has no default limit 'monthly'");
    expect_refused(t, "signup", "pro", "daily", "burst", 5, RLS_ENOTFOUND,
                   "has no 'burst:' of its own");
    expect_refused(t, "signup", "", "daily", "window", 5, RLS_EINVAL, "cannot be set");
    expect_refused(t, "signup", "", "daily", NULL, 0, RLS_EINVAL, "from 1 to");
    expect_refused(t, "signup", "", "daily", NULL, RLS_LIMIT_MAX + 1, RLS_EINVAL, "from 1 to");
    expect_refused(t, "", "", "daily", NULL, 5, RLS_EINVAL, "required");
    /* the edited file must load: sliding_log keeps one entry per unit */
    expect_refused(t, "login", "", "hourly", NULL, 1000000, RLS_ECONFIG, "sliding_log");
    assert_int_equal(nversions(t->db), 1);
    it_free(t);
}

/* A stored file with a byte order mark and CRLF line ends keeps both. */
static void byte_order_mark_and_crlf(void **state)
{
    static const char bom[] =
        "\xEF\xBB\xBFversion: 1\r\n"
        "actions:\r\n"
        "  api:\r\n"
        "    limits:\r\n"
        "      - { name: rate, algorithm: fixed_window, limit: 4, window: 1m } # é\r\n";
    itest *t = it_new(bom);
    rls_rows *r = NULL;
    assert_int_equal(rls_rules_limit_list(t->db, 0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_int_equal(rls_rows_int(r, 0, rls_rows_find(r, "value")), 4);
    assert_int_equal(rls_rows_int(r, 0, rls_rows_find(r, "line")), 5);
    rls_rows_free(r);
    assert_int_equal(rls_rules_set_limit_at(t->db, "api", NULL, "rate", "limit", 9, NULL, NULL, 1,
                                            T0 + 1, NULL), RLS_OK);
    char *y = stored(t->db, 0);
    assert_string_equal(y, "\xEF\xBB\xBFversion: 1\r\n"
                           "actions:\r\n"
                           "  api:\r\n"
                           "    limits:\r\n"
                           "      - { name: rate, algorithm: fixed_window, limit: 9, window: 1m } # é\r\n");
    rls_free(y);
    it_free(t);
}

/* What rltop lists: the tiers (rls_rules_describe) and the limits written
 * in the file (rls_rules_limit_list), in file order. */
static void what_rltop_lists(void **state)
{
    itest *t = it_new(demo);
    rls_rows *tiers = NULL, *l = NULL;
    assert_int_equal(rls_rules_describe(t->db, 0, &tiers, NULL), RLS_OK);
    static const char *const want_tiers[] = {"free", "pro", "staff", "banned"};
    int name = rls_rows_find(tiers, "name"), def = rls_rows_find(tiers, "is_default");
    assert_int_equal(rls_rows_count(tiers), 4);
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (int j = 0; j < 4; j++)
            if (strcmp(rls_rows_text(tiers, j, name), want_tiers[i]) == 0) {
                found = 1;
                assert_int_equal(rls_rows_int(tiers, j, def), i == 0);
            }
        assert_true(found);
    }
    rls_rows_free(tiers);
    assert_int_equal(rls_rules_limit_list(t->db, 0, &l), RLS_OK);
    static const struct { const char *a, *t, *name, *field; int64_t v; } want[] = {
        {"signup", "", "daily", "limit", 20},     {"signup", "", "weekly", "limit", 100},
        {"signup", "pro", "daily", "limit", 200}, {"signup", "pro", "weekly", "limit", 1000},
        {"login", "", "burst", "limit", 5},       {"login", "", "hourly", "limit", 20},
        {"api", "", "rate", "limit", 10},         {"api", "", "rate", "burst", 20},
        {"api", "", "daily", "limit", 50000},     {"api", "pro", "rate", "limit", 100},
        {"api", "pro", "rate", "burst", 200},     {"api", "pro", "daily", "limit", 2000000},
        {"mail.send", "", "daily", "limit", 100}, {"mail.send", "", "weekly", "limit", 500},
        {"mail.send", "", "burst", "limit", 30},  {"mail.send", "", "burst", "burst", 10},
        {"mail.send", "pro", "daily", "limit", 2000},
        {"mail.send", "pro", "weekly", "limit", 10000},
    };
    int n = (int)(sizeof want / sizeof want[0]);
    assert_int_equal(rls_rows_count(l), n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(rls_rows_text(l, i, rls_rows_find(l, "action")), want[i].a);
        assert_string_equal(rls_rows_text(l, i, rls_rows_find(l, "tier")), want[i].t);
        assert_string_equal(rls_rows_text(l, i, rls_rows_find(l, "name")), want[i].name);
        assert_string_equal(rls_rows_text(l, i, rls_rows_find(l, "field")), want[i].field);
        assert_int_equal(rls_rows_int(l, i, rls_rows_find(l, "value")), want[i].v);
    }
    assert_int_equal(rls_rows_int(l, 0, rls_rows_find(l, "line")), 32);
    rls_rows_free(l);
    assert_int_equal(rls_rules_limit_list(t->db, 2, &l), RLS_ENOTFOUND);
    assert_null(l);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(edits_apply_and_are_enforced),
        cmocka_unit_test(preview_is_what_is_stored),
        cmocka_unit_test(a_change_meanwhile_is_not_lost),
        cmocka_unit_test(refusals),
        cmocka_unit_test(byte_order_mark_and_crlf),
        cmocka_unit_test(what_rltop_lists),
    };
    return cmocka_run_group_tests_name("rules_edit", tests, setup, teardown);
}
