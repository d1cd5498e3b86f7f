/*
 * test_resolve.c - from rules to the limits of one check (core/resolve.c):
 * the tier ranking over exact keys and patterns (specificity, then one
 * action over every action, then an operator's over the file's), expired,
 * foreign and inert candidates, the default tier, tier replacements by
 * name and per-key overrides.
 */
#include "testutil.h"
#include "config.h"
#include "resolve.h"

#define NOW 1767225600000LL

static const char RULES[] =
    "version: 1\n"
    "defaults: { tier: free }\n"
    "tiers: { free: {}, pro: {}, gold: {}, staff: { unlimited: true } }\n"
    "actions:\n"
    "  api:\n"
    "    key: ip\n"
    "    limits:\n"
    "      - { name: minute, limit: 10, window: 1m }\n"
    "      - { name: bucket, algorithm: token_bucket, limit: 5, window: 1s, burst: 20 }\n"
    "    tiers:\n"
    "      pro:\n"
    "        - { name: minute, limit: 100 }\n"
    "        - { name: daily, limit: 1000, window: 1d }\n"
    "      gold:\n"
    "        - { name: bucket, limit: 50 }\n"
    "  login:\n"
    "    limits:\n"
    "      - { name: burst, limit: 5, window: 1m }\n";

static ruleset *rules(void)
{
    ruleset *rs = NULL;
    config_errors errs;
    assert_int_equal(rls__config_parse(RULES, strlen(RULES), &rs, &errs), 0);
    return rs;
}

static assign_cand cand(const char *text, const char *action, const char *tier,
                        int64_t expires, int dynamic)
{
    assign_cand c;
    const char *why = NULL;
    memset(&c, 0, sizeof c);
    assert_int_equal(rls__key_pattern_parse(text, &c.pat, &why), 0);
    c.text = text;
    c.action = action;
    c.tier = tier;
    c.expires_ms = expires;
    c.dynamic = dynamic;
    return c;
}

/* The tier of key among one list of candidates. */
static tier_choice tier_of(const ruleset *rs, const char *action, const char *key,
                           const assign_cand *c, int n)
{
    tier_choice t;
    const assign_cand *const lists[1] = {c};
    const int counts[1] = {n};
    rls__resolve_tier(rs, action, key, strlen(key), lists, counts, 1, NOW, &t);
    return t;
}

static void test_specificity_ranking(void **state)
{
    ruleset *rs = rules();
    (void)state;
    /* least specific first, so that the order of the list does not decide */
    assign_cand c[] = {
        cand("*", "", "free", 0, 0),
        cand("10.*", "", "pro", 0, 0),
        cand("10.1.*", "", "gold", 0, 0),
        cand("10.0.0.0/8", "", "pro", 0, 0),
        cand("10.1.0.0/16", "", "gold", 0, 0),
        cand("10.1.2.3", "", "staff", 0, 0),
    };
    tier_choice t = tier_of(rs, "api", "10.1.2.3", c, 6);
    assert_string_equal(t.tier, "staff");
    assert_int_equal(t.source, TIER_FROM_EXACT);
    assert_ptr_equal(t.by, &c[5]);
    assert_non_null(t.def);
    assert_true(t.def->unlimited);
    t = tier_of(rs, "api", "10.1.2.4", c, 6);      /* the longer CIDR */
    assert_ptr_equal(t.by, &c[4]);
    assert_int_equal(t.source, TIER_FROM_PATTERN);
    t = tier_of(rs, "api", "10.1.2.4", c, 4);      /* a CIDR over any prefix */
    assert_ptr_equal(t.by, &c[3]);
    t = tier_of(rs, "api", "10.1.2.4", c, 3);      /* the longer prefix */
    assert_ptr_equal(t.by, &c[2]);
    t = tier_of(rs, "api", "10.2.0.1", c, 3);
    assert_ptr_equal(t.by, &c[1]);
    t = tier_of(rs, "api", "192.0.2.1", c, 6);     /* "*" matches every key */
    assert_ptr_equal(t.by, &c[0]);
    rls__ruleset_free(rs);
}

/* At one specificity: one action over every action, then an operator's
 * over the file's; specificity first, whatever those say. */
static void test_action_then_dynamic(void **state)
{
    ruleset *rs = rules();
    (void)state;
    assign_cand c[] = {
        cand("10.0.0.0/8", "", "pro", 0, 1),
        cand("10.0.0.0/8", "api", "gold", 0, 0),
        cand("10.0.0.0/8", "api", "staff", 0, 1),
    };
    tier_choice t = tier_of(rs, "api", "10.9.9.9", c, 3);
    assert_string_equal(t.tier, "staff");
    t = tier_of(rs, "api", "10.9.9.9", c, 2);      /* the action's, even from the file */
    assert_string_equal(t.tier, "gold");
    assign_cand d[] = {
        cand("10.0.0.0/8", "api", "pro", 0, 0),
        cand("10.0.0.0/8", "api", "gold", 0, 1),
        cand("10.1.0.0/16", "", "staff", 0, 0),    /* more specific wins */
    };
    t = tier_of(rs, "api", "10.1.0.1", d, 3);
    assert_string_equal(t.tier, "staff");
    t = tier_of(rs, "api", "10.2.0.1", d, 3);
    assert_string_equal(t.tier, "gold");
    /* equal in every way: the first found keeps it, across lists too */
    assign_cand e1 = cand("10.0.0.0/8", "", "pro", 0, 0);
    assign_cand e2 = cand("10.0.0.0/8", "", "gold", 0, 0);
    const assign_cand *const lists[2] = {&e1, &e2};
    const int counts[2] = {1, 1};
    rls__resolve_tier(rs, "api", "10.0.0.1", 8, lists, counts, 2, NOW, &t);
    assert_ptr_equal(t.by, &e1);
    rls__ruleset_free(rs);
}

static void test_expired_foreign_inert(void **state)
{
    ruleset *rs = rules();
    (void)state;
    assign_cand c[] = {
        cand("10.0.0.1", "", "staff", NOW, 1),         /* expired at now */
        cand("10.0.0.1", "login", "staff", 0, 1),      /* another action */
        cand("10.0.0.1", "", "nosuchtier", 0, 1),      /* tier gone: inert */
        cand("10.0.0.0/8", "", "pro", NOW + 1, 0),     /* expires later */
    };
    tier_choice t = tier_of(rs, "api", "10.0.0.1", c, 4);
    assert_ptr_equal(t.by, &c[3]);
    assert_string_equal(t.tier, "pro");
    t = tier_of(rs, "api", "10.0.0.1", c, 3);          /* none: the default */
    assert_string_equal(t.tier, "free");
    assert_int_equal(t.source, TIER_FROM_DEFAULT);
    assert_null(t.by);
    assert_non_null(t.def);
    t = tier_of(rs, "login", "10.0.0.1", c, 2);        /* login's own */
    assert_string_equal(t.tier, "staff");
    rls__ruleset_free(rs);

    /* without a default tier: "" and no definition */
    static const char bare[] = "version: 1\nactions: { a: { limits: [ { name: n, limit: 1, "
                               "window: 1s } ] } }\n";
    ruleset *b = NULL;
    assert_int_equal(rls__config_parse(bare, strlen(bare), &b, NULL), 0);
    t = tier_of(b, "a", "k", NULL, 0);
    assert_string_equal(t.tier, "");
    assert_null(t.def);
    assert_int_equal(t.source, TIER_FROM_DEFAULT);
    rls__ruleset_free(b);
}

static const resolved_limit *named(const resolved_limit *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].def->name, name) == 0)
            return &r[i];
    return NULL;
}

static void test_limits_and_tier_replacements(void **state)
{
    ruleset *rs = rules();
    const rule_action *api = rls__ruleset_action(rs, "api");
    resolved_limit out[RESOLVE_MAX_LIMITS];
    (void)state;
    assert_int_equal(rls__resolve_limits(api, "", NULL, 0, NOW, out, RESOLVE_MAX_LIMITS), 2);
    assert_string_equal(out[0].def->name, "minute");
    assert_int_equal(out[0].limit, 10);
    assert_int_equal(out[0].burst, 10);          /* burst not given: the limit */
    assert_int_equal(out[1].limit, 5);
    assert_int_equal(out[1].burst, 20);
    assert_false(out[0].overridden);
    assert_int_equal(rls__resolve_limits(api, NULL, NULL, 0, NOW, out, RESOLVE_MAX_LIMITS), 2);
    assert_int_equal(rls__resolve_limits(api, "free", NULL, 0, NOW, out, RESOLVE_MAX_LIMITS), 2);
    assert_int_equal(out[0].limit, 10);

    /* pro replaces minute by name (its window inherited) and adds daily */
    int n = rls__resolve_limits(api, "pro", NULL, 0, NOW, out, RESOLVE_MAX_LIMITS);
    assert_int_equal(n, 3);
    assert_int_equal(named(out, n, "minute")->limit, 100);
    assert_int_equal(named(out, n, "minute")->def->window.ms, 60000);
    assert_int_equal(named(out, n, "bucket")->limit, 5);
    assert_int_equal(named(out, n, "daily")->limit, 1000);
    assert_string_equal(out[0].def->name, "minute");   /* replaced in place */
    assert_string_equal(out[2].def->name, "daily");    /* added at the end */

    /* gold's bucket keeps the default's burst (inherited by the loader) */
    n = rls__resolve_limits(api, "gold", NULL, 0, NOW, out, RESOLVE_MAX_LIMITS);
    assert_int_equal(n, 2);
    assert_int_equal(named(out, n, "bucket")->limit, 50);
    assert_int_equal(named(out, n, "bucket")->burst, 20);

    /* not enough room */
    assert_int_equal(rls__resolve_limits(api, "", NULL, 0, NOW, out, 1), -1);
    assert_int_equal(rls__resolve_limits(api, "pro", NULL, 0, NOW, out, 2), -1);
    assert_int_equal(rls__resolve_limits(api, "pro", NULL, 0, NOW, out, 3), 3);
    rls__ruleset_free(rs);
}

static void test_overrides(void **state)
{
    ruleset *rs = rules();
    const rule_action *api = rls__ruleset_action(rs, "api");
    resolved_limit out[RESOLVE_MAX_LIMITS];
    (void)state;
    override_in ov[] = {
        {"minute", 7, 0},            /* never expires */
        {"bucket", 9, NOW + 1},      /* burst given: it stays */
        {"daily", 3, 0},             /* only under pro */
        {"nosuch", 1, 0},            /* no such limit: ignored */
    };
    int n = rls__resolve_limits(api, "", ov, 4, NOW, out, RESOLVE_MAX_LIMITS);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].limit, 7);
    assert_int_equal(out[0].burst, 7);           /* a burst not given follows */
    assert_true(out[0].overridden);
    assert_int_equal(out[1].limit, 9);
    assert_int_equal(out[1].burst, 20);
    assert_true(out[1].overridden);

    n = rls__resolve_limits(api, "pro", ov, 4, NOW, out, RESOLVE_MAX_LIMITS);
    assert_int_equal(named(out, n, "minute")->limit, 7);   /* after the tier */
    assert_int_equal(named(out, n, "daily")->limit, 3);

    /* expired at now: the tier's or the file's figure */
    n = rls__resolve_limits(api, "", ov, 4, NOW + 1, out, RESOLVE_MAX_LIMITS);
    assert_int_equal(out[1].limit, 5);
    assert_false(out[1].overridden);
    assert_int_equal(out[0].limit, 7);
    rls__ruleset_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_specificity_ranking),
        cmocka_unit_test(test_action_then_dynamic),
        cmocka_unit_test(test_expired_foreign_inert),
        cmocka_unit_test(test_limits_and_tier_replacements),
        cmocka_unit_test(test_overrides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
