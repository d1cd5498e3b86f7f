/*
 * test_rules.c - questions a check asks of the rules (core/rules.c):
 * looking an action up, which failure policy applies (the action's, the
 * rules', the handle's), and whether a limit asks for `durability: full`.
 */
#include "testutil.h"
#include "rules.h"

static rule_limit lim(const char *name, int durability)
{
    rule_limit l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.durability = durability;
    return l;
}

static rule_action act(const char *name, int on_error, rule_limit *ls, int n)
{
    rule_action a;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", name);
    a.on_error = on_error;
    a.limits = ls;
    a.nlimits = n;
    return a;
}

static void test_action_lookup(void **state)
{
    rule_limit l = lim("m", DURA_NORMAL);
    rule_action as[2] = {act("api", ONERR_INHERIT, &l, 1), act("login", ONERR_INHERIT, &l, 1)};
    ruleset rs;
    (void)state;
    memset(&rs, 0, sizeof rs);
    rs.actions = as;
    rs.nactions = 2;
    assert_ptr_equal(rls__ruleset_action(&rs, "login"), &as[1]);
    assert_ptr_equal(rls__ruleset_action(&rs, "api"), &as[0]);
    assert_null(rls__ruleset_action(&rs, "other"));
}

static void test_on_error(void **state)
{
    rule_limit l = lim("m", DURA_NORMAL);
    rule_action as[3] = {act("a_allow", ONERR_ALLOW, &l, 1), act("b_deny", ONERR_DENY, &l, 1),
                         act("c_inherit", ONERR_INHERIT, &l, 1)};
    ruleset rs;
    (void)state;
    memset(&rs, 0, sizeof rs);
    rs.actions = as;
    rs.nactions = 3;
    rs.on_error = ONERR_INHERIT;
    /* the action's own policy first, whatever the handle says */
    assert_true(rls__on_error_allows(&rs, "a_allow", 0));
    assert_false(rls__on_error_allows(&rs, "b_deny", 1));
    /* an action that inherits, or none: the rules', else the handle's */
    assert_true(rls__on_error_allows(&rs, "c_inherit", 1));
    assert_false(rls__on_error_allows(&rs, "c_inherit", 0));
    rs.on_error = ONERR_DENY;
    assert_false(rls__on_error_allows(&rs, "c_inherit", 1));
    assert_false(rls__on_error_allows(&rs, "undefined", 1));
    assert_false(rls__on_error_allows(&rs, NULL, 1));
    rs.on_error = ONERR_ALLOW;
    assert_true(rls__on_error_allows(&rs, "c_inherit", 0));
    assert_false(rls__on_error_allows(&rs, "b_deny", 0));
    /* no rules loaded: the handle's */
    assert_true(rls__on_error_allows(NULL, "a_allow", 1));
    assert_false(rls__on_error_allows(NULL, "a_allow", 0));
}

static void test_wants_full(void **state)
{
    rule_limit normal[2] = {lim("m", DURA_NORMAL), lim("h", DURA_MEMORY)};
    rule_limit full = lim("d", DURA_FULL);
    rule_tier_limits tiers[2];
    (void)state;
    memset(tiers, 0, sizeof tiers);
    rule_action a = act("api", ONERR_INHERIT, normal, 2);
    assert_false(rls__action_wants_full(&a));
    assert_false(rls__action_wants_full(NULL));
    /* a tier's replacement asks for it: the action does */
    tiers[0].limits = normal;
    tiers[0].nlimits = 1;
    tiers[1].limits = &full;
    tiers[1].nlimits = 1;
    a.tiers = tiers;
    a.ntiers = 1;
    assert_false(rls__action_wants_full(&a));
    a.ntiers = 2;
    assert_true(rls__action_wants_full(&a));
    /* or a default limit */
    rule_action b = act("b", ONERR_INHERIT, &full, 1);
    assert_true(rls__action_wants_full(&b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_action_lookup),
        cmocka_unit_test(test_on_error),
        cmocka_unit_test(test_wants_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
