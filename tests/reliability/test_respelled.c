/*
 * test_respelled.c - every admin entry point keyed by a key, with the key
 * respelled (issue #17, defect 6).
 *
 * rls_policy(3): a block or tier assignment of every action matches the key
 * as written and as each action normalises it; rows of one action are
 * stored as that action normalises the key.  So an operator may write a key
 * in any spelling the action folds to the same counter key: letter case and
 * +tag of an email address, IPv6 case, zero compression or the expanded
 * form, IPv4-mapped IPv6, another IPv4 address of the same /24 under an
 * action that folds to /24, another IPv6 address of the same /64.
 *
 * For each case (written key K, action, checked key X, and a third spelling
 * W used to undo), through a second handle (as rlctl or rltop would), while
 * the application's handle keeps checking (on PostgreSQL its one-flight
 * path, which knows the key's states by then):
 *   block K of every action      -> X denied, reason blocked; explain and
 *                                   usage show the block and its reason
 *   unblock W (every action)     -> X admitted again (W: another spelling
 *                                   of K, and of X under a string action)
 *   tier set K pro               -> X checked under pro; explain says pro
 *   tier unset W                 -> X back to the default tier
 *   override set (action) W      -> X checked with the override, listed
 *                                   by a filter of X; unset X
 *   audit list of W              -> the block and unblock of K
 *   reset (action) W             -> X's counters are gone
 *   a penalty of X, listed by    -> unblock of the listed key and of W
 *   rls_block_list_at               without an action remove it
 *   reserve X, 2 x ttl later     -> peek/explain/usage of W see the refund
 * and cases that must NOT match (another address, another /24, a string
 * action's other letter case).
 *
 * Runs on SQLite, and on PostgreSQL with RLSTORE_TEST_PG (Makefile
 * PG_RELIABILITY).
 */
#include "reltest.h"

#define H 3600000LL

static const char *RULES =
    "version: 1\n"
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    "  em:\n"
    "    key: email\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1h } ]\n"
    "    tiers: { pro: [ { name: l, algorithm: fixed_window, limit: 100, window: 1h } ] }\n"
    "  ip4:\n"
    "    key: ip\n"
    "    ipv4_prefix: 24\n"
    "    ipv6_prefix: 64\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1h } ]\n"
    "    tiers: { pro: [ { name: l, algorithm: fixed_window, limit: 100, window: 1h } ] }\n"
    "  ipx:\n"
    "    key: ip\n"
    "    ipv6_prefix: 128\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1h } ]\n"
    "    tiers: { pro: [ { name: l, algorithm: fixed_window, limit: 100, window: 1h } ] }\n"
    "  st:\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1h } ]\n"
    "    tiers: { pro: [ { name: l, algorithm: fixed_window, limit: 100, window: 1h } ] }\n"
    "  pen4:\n"
    "    key: ip\n"
    "    ipv4_prefix: 24\n"
    "    ipv6_prefix: 64\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 1, window: 1h, block_for: 1h } ]\n"
    "  pemail:\n"
    "    key: email\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 1, window: 1h, block_for: 1h } ]\n";

typedef struct rcase {
    const char *written;  /* K: as the operator writes it */
    const char *action;
    const char *checked;  /* X: as the application checks it */
    const char *undo;     /* W: a third spelling, to undo with */
} rcase;

static const rcase CASES[] = {
    {"Bob@Example.com", "em", "bob@example.com", "BOB+undo@EXAMPLE.COM"},
    {"bob+news@example.com", "em", "BOB@example.COM", "Bob@example.com"},
    {"1.2.3.4", "ip4", "1.2.3.5", "::ffff:1.2.3.4"},
    {"2001:db8:5::1", "ipx", "2001:DB8:5::1", "2001:db8:5:0:0:0:0:1"},
    {"2001:DB8:5:0:0:0:0:1", "ipx", "2001:db8:5::1", "2001:Db8:5::0:1"},
    {"2001:db8:5::1", "ip4", "2001:db8:5::ffff", "2001:DB8:5:0::1"},
    {"::ffff:1.2.3.4", "ipx", "1.2.3.4", "::FFFF:1.2.3.4"},
    {"1.2.3.4", "ipx", "::FFFF:1.2.3.4", "::ffff:102:304"},
    /* a string action's key is its own spelling; a row of every action is
     * stored under the canonical form, which its check also probes */
    {"Bob@Example.com", "st", "Bob@Example.com", "Bob@Example.com"},
    {"BOB@example.com", "st", "bob@example.com", "bob@example.com"},
    {"2001:DB8::0:7", "st", "2001:db8::7", "2001:db8::7"},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

/* Keys that must not meet: a row of every action of `written` leaves a
 * check of `checked` alone. */
static const rcase OTHERS[] = {
    {"1.2.3.4", "ipx", "1.2.3.5", NULL},
    {"1.2.3.4", "ip4", "1.2.4.4", NULL},
    {"2001:db8:5::1", "ip4", "2001:db8:6::1", NULL},
    {"bob@example.com", "em", "alice@example.com", NULL},
    {"user:Bob", "st", "user:bob", NULL},
};
#define NOTHERS ((int)(sizeof OTHERS / sizeof OTHERS[0]))

typedef struct env {
    itest *t;
    rls_db *adm;   /* the operator's handle */
} env;

static void env_open(env *e)
{
    e->t = it_new(RULES);
    assert_int_equal(rls_open(&e->adm, e->t->path, NULL), RLS_OK);
}

static void env_close(env *e)
{
    rls_close(e->adm);
    it_free(e->t);
}

#define OK(db, call)                                                          \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != RLS_OK)                                                    \
            fail_msg("%s: %s: %s", #call, rls_errname(rc_), rls_errmsg(db)); \
    } while (0)

/* The application's check of X (the one-flight path on PostgreSQL once the
 * handle knows the key's states). */
static void app_check(env *e, const rcase *c, int64_t now, rls_result *res)
{
    it_check(e->t, c->action, c->checked, 1, now, res);
}

/* A field of explain's info for (action, key): text into out, and the
 * integer value. */
static int64_t explain_field(rls_db *db, const char *action, const char *key, int64_t now,
                             const char *field, char *out, size_t size)
{
    rls_rows *info = NULL, *limits = NULL;
    OK(db, rls_explain_at(db, action, key, now, &info, &limits));
    int col = rls_rows_find(info, field);
    assert_true(col >= 0);
    const char *v = rls_rows_type(info, col) == RLS_COL_TEXT ? rls_rows_text(info, 0, col) : "";
    int64_t n = rls_rows_type(info, col) == RLS_COL_INT ? rls_rows_int(info, 0, col) : 0;
    snprintf(out, size, "%s", v ? v : "");
    rls_rows_free(info);
    rls_rows_free(limits);
    return n;
}

/* usage's row of (action, key as the action normalises it): column
 * `field` as an int.  The key's spelling comes from explain. */
static int64_t usage_int(rls_db *db, const char *action, const char *key, int64_t now,
                         const char *field)
{
    rls_usage_query q;
    rls_rows *r = NULL;
    char nk[256];
    int64_t v = -1;
    explain_field(db, action, key, now, "key", nk, sizeof nk);
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.action = action;
    q.limit = 10;
    OK(db, rls_usage_at(db, &q, now, &r));
    for (int i = 0; i < rls_rows_count(r); i++)
        if (strcmp(rls_rows_text(r, i, rls_rows_find(r, "key")), nk) == 0)
            v = rls_rows_int(r, i, rls_rows_find(r, field));
    rls_rows_free(r);
    if (v < 0)
        fail_msg("usage of %s lists no '%s'", action, nk);
    return v;
}

static void blocks_and_unblocks(const rcase *c, int64_t now)
{
    env e;
    rls_result res;
    char buf[256];
    env_open(&e);
    for (int i = 0; i < 2; i++) {   /* the application knows the key */
        app_check(&e, c, now, &res);
        assert_true(res.allowed);
    }
    OK(e.adm, rls_block_set_at(e.adm, NULL, c->written, 0, "abuse", now));
    app_check(&e, c, now, &res);
    if (res.allowed || res.reason != RLS_REASON_BLOCKED)
        fail_msg("block of '%s': %s '%s' admitted", c->written, c->action, c->checked);
    assert_int_equal(explain_field(e.adm, c->action, c->checked, now, "blocked", buf,
                                   sizeof buf), 1);
    explain_field(e.adm, c->action, c->undo, now, "block_reason", buf, sizeof buf);
    assert_string_equal(buf, "abuse");
    if (usage_int(e.adm, c->action, c->undo, now, "blocked") != 1)
        fail_msg("usage of %s does not show the block of %s", c->action, c->written);
    OK(e.adm, rls_block_unset_at(e.adm, NULL, c->undo, now));
    app_check(&e, c, now, &res);
    if (!res.allowed)
        fail_msg("unblock of '%s': %s '%s' still denied", c->undo, c->action, c->checked);
    /* the audit log of W lists both changes, stored under K's canonical form */
    rls_rows *audit = NULL;
    OK(e.adm, rls_audit_list(e.adm, c->undo, 10, &audit));
    if (rls_rows_count(audit) != 2)
        fail_msg("audit of '%s' lists %d rows, not the block and unblock of '%s'", c->undo,
                 rls_rows_count(audit), c->written);
    assert_string_equal(rls_rows_text(audit, 0, rls_rows_find(audit, "op")), "unblock");
    assert_string_equal(rls_rows_text(audit, 1, rls_rows_find(audit, "op")), "block");
    rls_rows_free(audit);
    env_close(&e);
}

static void tiers_and_overrides(const rcase *c, int64_t now)
{
    env e;
    rls_result res;
    char buf[64];
    env_open(&e);
    app_check(&e, c, now, &res);
    assert_int_equal(res.limit, 3);
    OK(e.adm, rls_tier_set_at(e.adm, c->written, "pro", 0, now));
    app_check(&e, c, now, &res);
    if (res.limit != 100)
        fail_msg("tier of '%s': %s '%s' checked with limit %lld", c->written, c->action,
                 c->checked, (long long)res.limit);
    explain_field(e.adm, c->action, c->undo, now, "tier", buf, sizeof buf);
    assert_string_equal(buf, "pro");
    OK(e.adm, rls_tier_unset_at(e.adm, c->undo, now));
    app_check(&e, c, now, &res);
    assert_int_equal(res.limit, 3);

    /* rows of one action: a spelling the action folds to X's key (W) */
    OK(e.adm, rls_override_set_at(e.adm, c->action, c->undo, "l", 50, 0, now));
    app_check(&e, c, now, &res);
    assert_int_equal(res.limit, 50);
    rls_rows *ov = NULL;
    OK(e.adm, rls_override_list_at(e.adm, NULL, c->checked, now, &ov));
    if (rls_rows_count(ov) != 1)
        fail_msg("override list of '%s' has %d rows", c->checked, rls_rows_count(ov));
    rls_rows_free(ov);
    OK(e.adm, rls_override_unset_at(e.adm, c->action, c->checked, "l", now));
    app_check(&e, c, now, &res);
    assert_int_equal(res.limit, 3);

    /* reset under another spelling: X starts fresh (a peek reports what is
     * admissible now) */
    OK(e.adm, rls_reset_at(e.adm, c->action, c->undo, now));
    OK(e.t->db, rls_peek_at(e.t->db, c->action, c->checked, 1, now, &res));
    assert_int_equal(res.remaining, 3);
    env_close(&e);
}

/* A penalty of X's counter key, as `rlctl blocks` lists it, removed by an
 * unblock without an action: of the listed key, then of a respelling. */
static void penalty_unblock(const char *action, const char *checked, const char *undo,
                            int64_t now)
{
    env e;
    rls_result res;
    rls_rows *list = NULL;
    env_open(&e);
    for (int round = 0; round < 2; round++) {
        int64_t t = now + round * 10 * H;
        it_check(e.t, action, checked, 1, t, &res);
        it_check(e.t, action, checked, 1, t, &res);   /* over the limit: the penalty */
        assert_false(res.allowed);
        it_check(e.t, action, checked, 1, t, &res);
        assert_int_equal(res.reason, RLS_REASON_BLOCKED);
        OK(e.adm, rls_block_list_at(e.adm, t, &list));
        assert_int_equal(rls_rows_count(list), 1);
        char listed[256];
        snprintf(listed, sizeof listed, "%s", rls_rows_text(list, 0, rls_rows_find(list, "key")));
        assert_string_equal(rls_rows_text(list, 0, rls_rows_find(list, "action")), action);
        assert_string_equal(rls_rows_text(list, 0, rls_rows_find(list, "kind")), "penalty");
        rls_rows_free(list);
        OK(e.adm, rls_block_unset_at(e.adm, NULL, round == 0 ? listed : undo, t));
        OK(e.adm, rls_block_list_at(e.adm, t, &list));
        assert_int_equal(rls_rows_count(list), 0);
        rls_rows_free(list);
        OK(e.t->db, rls_peek_at(e.t->db, action, checked, 1, t, &res));
        assert_int_not_equal(res.reason, RLS_REASON_BLOCKED);
    }
    /* nothing left to remove: a named error */
    assert_int_equal(rls_block_unset_at(e.adm, NULL, undo, now + 20 * H), RLS_ENOTFOUND);
    env_close(&e);
}

static void every_admin_entry_point(void **state)
{
    int64_t now = T0 + H / 2;
    for (int i = 0; i < NCASES; i++) {
        blocks_and_unblocks(&CASES[i], now);
        tiers_and_overrides(&CASES[i], now);
    }
}

static void penalties_unblocked_without_action(void **state)
{
    int64_t now = T0 + H / 2;
    penalty_unblock("pen4", "1.2.3.5", "1.2.3.77", now);
    penalty_unblock("pen4", "2001:db8:7::1", "2001:DB8:7:0:0:0:0:2", now);
    penalty_unblock("pemail", "Carol+x@Example.com", "carol@EXAMPLE.com", now);
}

static void other_keys_are_left_alone(void **state)
{
    int64_t now = T0 + H / 2;
    for (int i = 0; i < NOTHERS; i++) {
        const rcase *c = &OTHERS[i];
        env e;
        rls_result res;
        env_open(&e);
        OK(e.adm, rls_block_set_at(e.adm, NULL, c->written, 0, "abuse", now));
        OK(e.adm, rls_tier_set_at(e.adm, c->written, "pro", 0, now));
        app_check(&e, c, now, &res);
        if (!res.allowed || res.limit != 3)
            fail_msg("'%s' of every action reached %s '%s'", c->written, c->action, c->checked);
        env_close(&e);
    }
}

/* A reservation of X past its TTL: peek, explain and usage of a respelling
 * decide as the next check does (defect 7 with a respelled key). */
static void reservations_under_respellings(void **state)
{
    int64_t now = T0 + H / 2, id;
    for (int i = 0; i < NCASES; i++) {
        const rcase *c = &CASES[i];
        env e;
        rls_result res;
        char buf[16];
        env_open(&e);
        for (int k = 0; k < 3; k++)
            OK(e.t->db, rls_reserve_at(e.t->db, c->action, c->checked, 1, 10000, now, &id, &res));
        int64_t later = now + 11000;
        OK(e.adm, rls_peek_at(e.adm, c->action, c->undo, 1, later, &res));
        assert_true(res.allowed);
        assert_int_equal(res.remaining, 3);
        assert_int_equal(explain_field(e.adm, c->action, c->undo, later, "allowed", buf,
                                       sizeof buf), 1);
        assert_int_equal(usage_int(e.adm, c->action, c->undo, later, "used"), 0);
        app_check(&e, c, later, &res);
        assert_true(res.allowed);
        env_close(&e);
    }
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_admin_entry_point),
        cmocka_unit_test(penalties_unblocked_without_action),
        cmocka_unit_test(other_keys_are_left_alone),
        cmocka_unit_test(reservations_under_respellings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
