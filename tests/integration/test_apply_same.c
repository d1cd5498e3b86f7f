/*
 * test_apply_same.c - idempotent apply (issue #20): rules the same as the
 * active ones once parsed store no version and no audit row, whatever
 * their text; every change of a value a check acts on does store one;
 * RLS_APPLY_FORCE stores anyway; the comparison is made against the rules
 * active at the time of the write, also from a handle whose cache is
 * stale.  And rls_rules_validate: every error of a file, without a
 * database.  Runs on SQLite and, with RLSTORE_TEST_PG, on PostgreSQL.
 */
#include "itest.h"

static const char *BASE =
    "version: 1\n"
    "defaults: { tier: free, timezone: UTC, on_error: deny }\n"
    "tiers: { free: {}, pro: {}, staff: { unlimited: true } }\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    limits:\n"
    "      - { name: daily, algorithm: fixed_window, limit: 20, window: 1d, block_for: 1h }\n"
    "      - { name: weekly, algorithm: fixed_window, limit: 100, window: 1w }\n"
    "    tiers:\n"
    "      pro: [ { name: daily, limit: 200, window: 1d } ]\n"
    "  api:\n"
    "    limits:\n"
    "      - { name: rate, algorithm: gcra, limit: 10, window: 60s, burst: 20 }\n"
    "assignments:\n"
    "  - { key: \"10.0.0.0/8\", action: signup, tier: staff }\n";

static int64_t nversions(rls_db *db)
{
    rls_rows *r = NULL;
    assert_int_equal(rls_rules_versions(db, &r), RLS_OK);
    int64_t n = rls_rows_count(r);
    rls_rows_free(r);
    return n;
}

static int64_t naudit(rls_db *db)
{
    rls_rows *r = NULL;
    assert_int_equal(rls_audit_list(db, NULL, 1000, &r), RLS_OK);
    int64_t n = rls_rows_count(r);
    rls_rows_free(r);
    return n;
}

/* Applies text; returns `changed` and checks the version it reports. */
static int apply2(rls_db *db, const char *text, unsigned flags, int64_t *version)
{
    int changed = -1;
    int64_t v = -1;
    int rc = rls_rules_apply_v2_at(db, text, strlen(text), "t.yaml", NULL, flags, T0 + 1000, &v,
                                   &changed);
    if (rc != RLS_OK)
        fail_msg("apply: %s: %s", rls_errname(rc), rls_errmsg(db));
    assert_true(changed == 0 || changed == 1);
    if (version)
        *version = v;
    return changed;
}

/* s with the first `from` replaced by `to` (malloc'd). */
static char *subst(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    assert_non_null(p);
    size_t n = strlen(s) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    assert_non_null(out);
    snprintf(out, n + 1, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
    return out;
}

/* The same file, and files that differ only in text, store nothing. */
static void same_rules_store_nothing(void **state)
{
    (void)state;
    itest *t = it_new(BASE);
    int64_t v = 0, audits = naudit(t->db);
    assert_int_equal(apply2(t->db, BASE, 0, &v), 0);
    assert_int_equal(v, 1);
    static const char *const same[][2] = {
        {"version: 1\n", "# a comment\nversion: 1   # trailing\n"},
        {"{ tier: free, timezone: UTC, on_error: deny }", "{ on_error: deny, timezone: UTC, tier: free }"},
        {"limit: 20, window: 1d", "window: \"1d\",   limit: 20"},
        {"window: 60s", "window: 1m"},
        {"  api:\n    limits:\n      - { name: rate, algorithm: gcra, limit: 10, window: 60s, burst: 20 }\n",
         "  api:\n    limits:\n      - name: rate\n        algorithm: gcra\n        limit: 10\n"
         "        window: 60000ms\n        burst: 20\n"},
        {"tiers: { free: {}, pro: {}, staff: { unlimited: true } }",
         "tiers: { staff: { unlimited: true }, pro: , free: {} }"},
        {"version: 1\n", "\xef\xbb\xbfversion: 1\r\n"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char *y = subst(BASE, same[i][0], same[i][1]);
        if (apply2(t->db, y, 0, &v) != 0)
            fail_msg("case %zu stored a version: %s", i, y);
        assert_int_equal(v, 1);
        free(y);
    }
    /* actions in another order */
    char *api_first = subst(BASE, "actions:\n",
                            "actions:\n  api:\n    limits:\n      - { name: rate, algorithm: gcra, "
                            "limit: 10, window: 60s, burst: 20 }\n");
    char *cut = strstr(strstr(api_first, "  signup:"), "  api:");
    *cut = '\0';
    strcat(api_first, "assignments:\n  - { key: \"10.0.0.0/8\", action: signup, tier: staff }\n");
    assert_int_equal(apply2(t->db, api_first, 0, &v), 0);
    free(api_first);
    assert_int_equal(nversions(t->db), 1);
    assert_int_equal(naudit(t->db), audits);
    /* the old entry points are idempotent too, and give the active version */
    v = 0;
    assert_int_equal(rls_rules_apply_at(t->db, BASE, strlen(BASE), "t", NULL, T0, &v), RLS_OK);
    assert_int_equal(v, 1);
    assert_int_equal(rls_rules_apply(t->db, BASE, strlen(BASE), "t", NULL, &v), RLS_OK);
    assert_int_equal(v, 1);
    assert_int_equal(rls_rules_apply_if_at(t->db, BASE, strlen(BASE), "t", NULL, 1, T0, &v),
                     RLS_OK);
    assert_int_equal(v, 1);
    assert_int_equal(rls_rules_apply_if_at(t->db, BASE, strlen(BASE), "t", NULL, 7, T0, &v),
                     RLS_ECONFLICT);
    assert_int_equal(nversions(t->db), 1);
    assert_int_equal(naudit(t->db), audits);
    it_free(t);
}

/* Every value a check acts on is a change. */
static void every_change_stores(void **state)
{
    (void)state;
    static const char *const changes[][2] = {
        {"limit: 20,", "limit: 21,"},
        {"limit: 200, window: 1d", "limit: 200, window: 24h"},  /* a calendar day is not 24h */
        {"window: 1w", "window: 7d"},
        {"burst: 20", "burst: 21"},
        {"block_for: 1h", "block_for: 2h"},
        {"block_for: 1h", "block_for: [1h, 2h]"},
        {"algorithm: gcra", "algorithm: token_bucket"},
        {"window: 1w }", "window: 1w, timezone: Europe/Berlin }"},
        {"window: 1w }", "window: 1w, mode: shadow }"},
        {"window: 1w }", "window: 1w, anchor: first_hit }"},
        {"window: 1w }", "window: 1w, overage: 10 }"},
        {"window: 1w }", "window: 1w, count_denied: true }"},
        {"window: 1w }", "window: 1w, durability: full }"},
        {"timezone: UTC", "timezone: Europe/Berlin"},
        {"on_error: deny }", "on_error: allow }"},
        {"tier: free,", "tier: pro,"},
        {"pro: {}", "pro: { blocked: true }"},
        {"staff: { unlimited: true } }", "staff: { unlimited: true }, gold: {} }"},
        {"ipv6_prefix: 64", "ipv6_prefix: 56"},
        {"    key: ip\n    ipv6_prefix: 64\n", "    key: ip\n"},
        {"    key: ip\n", "    key: ip\n    on_error: allow\n"},
        {"pro: [ { name: daily, limit: 200, window: 1d } ]", "pro: []"},
        {"tier: staff }", "tier: pro }"},
        {"\"10.0.0.0/8\"", "\"10.0.0.0/9\""},
        {"tier: staff }\n", "tier: staff, expires: 2027-01-01T00:00:00Z }\n"},
        /* the order of a list of limits */
        {"      - { name: daily, algorithm: fixed_window, limit: 20, window: 1d, block_for: 1h }\n"
         "      - { name: weekly, algorithm: fixed_window, limit: 100, window: 1w }\n",
         "      - { name: weekly, algorithm: fixed_window, limit: 100, window: 1w }\n"
         "      - { name: daily, algorithm: fixed_window, limit: 20, window: 1d, block_for: 1h }\n"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        itest *t = it_new(BASE);
        int64_t v = 0, audits = naudit(t->db);
        char *y = subst(BASE, changes[i][0], changes[i][1]);
        if (apply2(t->db, y, 0, &v) != 1)
            fail_msg("case %zu (%s) stored nothing", i, changes[i][1]);
        assert_int_equal(v, 2);
        assert_int_equal(nversions(t->db), 2);
        assert_int_equal(naudit(t->db), audits + 1);
        /* and back is a change again */
        assert_int_equal(apply2(t->db, BASE, 0, &v), 1);
        assert_int_equal(v, 3);
        free(y);
        it_free(t);
    }
}

/* RLS_APPLY_FORCE stores the same rules; a rollback always stores. */
static void force_and_rollback(void **state)
{
    (void)state;
    itest *t = it_new(BASE);
    int64_t v = 0, audits = naudit(t->db);
    char *commented = subst(BASE, "version: 1\n", "version: 1  # forced\n");
    assert_int_equal(apply2(t->db, commented, RLS_APPLY_FORCE, &v), 1);
    assert_int_equal(v, 2);
    char *y = NULL;
    assert_int_equal(rls_rules_get(t->db, 0, &y, NULL), RLS_OK);
    assert_string_equal(y, commented);   /* stored verbatim */
    rls_free(y);
    assert_int_equal(naudit(t->db), audits + 1);
    assert_int_equal(rls_rules_rollback_at(t->db, 1, NULL, T0 + 2000, &v), RLS_OK);
    assert_int_equal(v, 3);
    int changed = 7;
    v = 0;
    assert_int_equal(rls_rules_apply_v2_at(t->db, BASE, strlen(BASE), "t", NULL, 0x80, T0, &v,
                                           &changed), RLS_EINVAL);
    assert_int_equal(changed, 0);
    assert_int_equal(rls_rules_apply_v2_at(t->db, "version: 1\n", 11, "t", NULL, 0, T0, &v,
                                           &changed), RLS_ECONFIG);
    assert_int_equal(changed, 0);
    assert_int_equal(nversions(t->db), 3);
    /* into a database without rules: always a version */
    itest *e = it_new(NULL);
    assert_int_equal(apply2(e->db, BASE, 0, &v), 1);
    assert_int_equal(v, 1);
    it_free(e);
    free(commented);
    it_free(t);
}

/* RLS_APPLY_DRY_RUN says what an apply would do and stores nothing, also
 * on a read-only handle. */
static void dry_run_says_what_apply_would_do(void **state)
{
    (void)state;
    itest *t = it_new(BASE);
    int64_t v = -1, audits = naudit(t->db);
    int changed = -1;
    char *comment = subst(BASE, "version: 1\n", "version: 1 # c\n");
    char *other = subst(BASE, "limit: 20,", "limit: 21,");
    assert_int_equal(rls_rules_apply_v2_at(t->db, comment, strlen(comment), "t", NULL,
                                           RLS_APPLY_DRY_RUN, T0, &v, &changed), RLS_OK);
    assert_int_equal(changed, 0);
    assert_int_equal(v, 1);
    assert_int_equal(rls_rules_apply_v2_at(t->db, other, strlen(other), "t", NULL,
                                           RLS_APPLY_DRY_RUN, T0, &v, &changed), RLS_OK);
    assert_int_equal(changed, 1);
    assert_int_equal(v, 1);
    assert_int_equal(rls_rules_apply_v2_at(t->db, comment, strlen(comment), "t", NULL,
                                           RLS_APPLY_DRY_RUN | RLS_APPLY_FORCE, T0, &v, &changed),
                     RLS_OK);
    assert_int_equal(changed, 1);
    assert_int_equal(nversions(t->db), 1);
    assert_int_equal(naudit(t->db), audits);
    /* a read-only handle may ask */
    rls_options o;
    rls_options_init(&o);
    o.read_only = 1;
    rls_db *ro = NULL;
    assert_int_equal(rls_open(&ro, t->path, &o), RLS_OK);
    assert_int_equal(rls_rules_apply_v2_at(ro, other, strlen(other), "t", NULL,
                                           RLS_APPLY_DRY_RUN, T0, &v, &changed), RLS_OK);
    assert_int_equal(changed, 1);
    assert_int_equal(rls_rules_apply_v2_at(ro, other, strlen(other), "t", NULL, 0, T0, &v,
                                           &changed), RLS_EREADONLY);
    assert_int_equal(changed, 0);
    rls_close(ro);
    /* no rules yet: it would store, version 0 */
    itest *e = it_new(NULL);
    assert_int_equal(rls_rules_apply_v2_at(e->db, BASE, strlen(BASE), "t", NULL,
                                           RLS_APPLY_DRY_RUN, T0, &v, &changed), RLS_OK);
    assert_int_equal(changed, 1);
    assert_int_equal(v, 0);
    assert_int_equal(nversions(e->db), 0);
    it_free(e);
    free(comment);
    free(other);
    it_free(t);
}

/* A handle that cached version 1 compares with what is active when it
 * writes, not with what it cached. */
static void stale_handle_compares_with_the_active_rules(void **state)
{
    (void)state;
    itest *t = it_new(BASE);
    rls_db *other = NULL;
    rls_result r;
    int64_t v = 0;
    assert_int_equal(rls_open(&other, t->path, NULL), RLS_OK);
    assert_int_equal(rls_check_at(other, "api", "k", 1, T0, &r), RLS_OK);  /* caches v1 */
    char *changed = subst(BASE, "limit: 20,", "limit: 5,");
    assert_int_equal(apply2(t->db, changed, 0, &v), 1);
    assert_int_equal(v, 2);
    /* other still has v1 cached: the same text as v2 is unchanged, v1's
     * text is a change */
    assert_int_equal(apply2(other, changed, 0, &v), 0);
    assert_int_equal(v, 2);
    assert_int_equal(apply2(other, BASE, 0, &v), 1);
    assert_int_equal(v, 3);
    assert_int_equal(apply2(t->db, BASE, 0, &v), 0);
    assert_int_equal(v, 3);
    free(changed);
    rls_close(other);
    it_free(t);
}

static const char *cell(const rls_rows *r, int row, const char *col)
{
    return rls_rows_text(r, row, rls_rows_find(r, col));
}

static int64_t icell(const rls_rows *r, int row, const char *col)
{
    return rls_rows_int(r, row, rls_rows_find(r, col));
}

/* rls_rules_validate: every error, in file order, without a database. */
static void validate_lists_every_error(void **state)
{
    (void)state;
    static const char bad[] =
        "version: 1\n"
        "actions:\n"
        "  signup:\n"
        "    limits:\n"
        "      - { name: daily, algorthm: fixed_window, limt: 20, window: 1d }\n"
        "      - { name: weekly, limit: 100, window: 1x }\n"
        "  api:\n"
        "    kye: string\n"
        "    limits: [ { name: r, limit: -5, window: 1s } ]\n";
    rls_rows *e = NULL;
    assert_int_equal(rls_rules_validate(bad, strlen(bad), "bad.yaml", &e), RLS_ECONFIG);
    assert_int_equal(rls_rows_count(e), 6);
    assert_int_equal(icell(e, 0, "line"), 5);
    assert_string_equal(cell(e, 0, "path"), "actions.signup.limits[0]");
    assert_string_equal(cell(e, 0, "message"), "missing required field 'limit'");
    assert_int_equal(icell(e, 1, "column"), 24);
    assert_string_equal(cell(e, 1, "message"),
                        "unknown field 'algorthm' (did you mean 'algorithm'?)");
    assert_string_equal(cell(e, 2, "text"), "bad.yaml:5:48: actions.signup.limits[0]: unknown "
                                             "field 'limt' (did you mean 'limit'?)");
    assert_string_equal(cell(e, 3, "path"), "actions.signup.limits[1].window");
    assert_string_equal(cell(e, 4, "message"), "unknown field 'kye' (did you mean 'key'?)");
    assert_int_equal(icell(e, 5, "line"), 9);
    rls_rows_free(e);

    /* valid: no rows; NULL errors allowed */
    assert_int_equal(rls_rules_validate(BASE, strlen(BASE), NULL, &e), RLS_OK);
    assert_int_equal(rls_rows_count(e), 0);
    rls_rows_free(e);
    assert_int_equal(rls_rules_validate(BASE, strlen(BASE), NULL, NULL), RLS_OK);
    assert_int_equal(rls_rules_validate(NULL, 3, "x", &e), RLS_EINVAL);
    assert_null(e);

    /* no place, no path: an empty file; the name defaults to "rules" */
    assert_int_equal(rls_rules_validate("", 0, NULL, &e), RLS_ECONFIG);
    assert_int_equal(rls_rows_count(e), 1);
    assert_int_equal(icell(e, 0, "line"), 0);
    assert_true(rls_rows_is_null(e, 0, rls_rows_find(e, "path")));
    assert_string_equal(cell(e, 0, "text"), "rules: empty configuration");
    rls_rows_free(e);

    /* more than 64 errors: 64 and a count of the rest */
    char many[8192];
    size_t n = (size_t)snprintf(many, sizeof many, "version: 1\nactions:\n");
    for (int i = 0; i < 70; i++)
        n += (size_t)snprintf(many + n, sizeof many - n,
                              "  a%d: { limits: [ { name: l, limit: 0, window: 1s } ] }\n", i);
    assert_int_equal(rls_rules_validate(many, n, "m", &e), RLS_ECONFIG);
    assert_int_equal(rls_rows_count(e), 65);
    assert_string_equal(cell(e, 64, "message"), "6 more errors not listed");
    rls_rows_free(e);
}

/* What validate says is what apply refuses, and the other way round. */
static void validate_agrees_with_apply(void **state)
{
    (void)state;
    static const char *const files[] = {
        "version: 2\nactions: { a: { limits: [ { name: x, limit: 1, window: 1s } ] } }\n",
        "version: 1\nactions: { a: { limits: [ { name: x, limit: 1, window: 1s, timezone: Mars/Base } ] } }\n",
        "version: 1\nactions: { a: { limits: [ { name: x, limit: 1, window: 1s } ] } }\n",
        "version: 1\nactions: { a: { limits: [ { name: x, limit: 1, window: 1s } ] } }\nx: &a 1\n",
        "- just a list\n",
        "version: 1\nactions: {\n",
    };
    itest *t = it_new(NULL);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int vrc = rls_rules_validate(files[i], strlen(files[i]), "f", NULL);
        int arc = rls_rules_apply_at(t->db, files[i], strlen(files[i]), "f", NULL, T0, NULL);
        if (vrc != arc)
            fail_msg("file %zu: validate %s, apply %s", i, rls_errname(vrc), rls_errname(arc));
    }
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_rules_store_nothing),
        cmocka_unit_test(every_change_stores),
        cmocka_unit_test(force_and_rollback),
        cmocka_unit_test(dry_run_says_what_apply_would_do),
        cmocka_unit_test(stale_handle_compares_with_the_active_rules),
        cmocka_unit_test(validate_lists_every_error),
        cmocka_unit_test(validate_agrees_with_apply),
    };
    return cmocka_run_group_tests_name("apply_same", tests, NULL, NULL);
}
