/*
 * test_config.c - the YAML loader on valid input: every field and its
 * default, the examples of DESIGN.md and examples/demo.yaml, tier
 * replacement inheritance, block_for forms, assignments and lookups.
 * Invalid input, limits of the format and out of memory are in
 * test_config_errors.c.
 */
#include "testutil.h"
#include "config.h"

#include "algo.h"
#include "keynorm.h"
#include "test_config_util.h"

static const rule_limit *limit_of(const rule_action *a, const char *name)
{
    for (int i = 0; i < a->nlimits; i++)
        if (strcmp(a->limits[i].name, name) == 0)
            return &a->limits[i];
    return NULL;
}

static const rule_tier_limits *tier_of(const rule_action *a, const char *t)
{
    for (int i = 0; i < a->ntiers; i++)
        if (strcmp(a->tiers[i].tier, t) == 0)
            return &a->tiers[i];
    return NULL;
}

static const rule_limit *tier_limit(const rule_action *a, const char *t,
                                    const char *name)
{
    const rule_tier_limits *tl = tier_of(a, t);
    assert_non_null(tl);
    for (int i = 0; i < tl->nlimits; i++)
        if (strcmp(tl->limits[i].name, name) == 0)
            return &tl->limits[i];
    return NULL;
}

/* A document with one limit whose fields are given in flow style. */
static ruleset *one_limit(const char *fields, const rule_limit **l)
{
    char buf[1024];
    ruleset *rs = TC_OK(tc_limit(buf, sizeof buf, fields));
    assert_int_equal(rs->nactions, 1);
    assert_int_equal(rs->actions[0].nlimits, 1);
    *l = &rs->actions[0].limits[0];
    return rs;
}

static void test_minimal_defaults(void **state)
{
    const rule_limit *l;
    ruleset *rs = one_limit("name: n, limit: 1, window: 1s", &l);
    const rule_action *a = &rs->actions[0];
    assert_int_equal(rs->version, 1);
    assert_string_equal(rs->default_tier, "");
    assert_non_null(rs->default_tz);
    assert_string_equal(rls__tz_name(rs->default_tz), "UTC");
    assert_int_equal(rs->on_error, ONERR_INHERIT);
    assert_int_equal(rs->ntiers, 0);
    assert_int_equal(rs->nassignments, 0);
    assert_string_equal(a->name, "a");
    assert_int_equal(a->key_kind, KEY_STRING);
    assert_int_equal(a->ipv4_prefix, 32);
    assert_int_equal(a->ipv6_prefix, 128);
    assert_int_equal(a->on_error, ONERR_INHERIT);
    assert_int_equal(a->ntiers, 0);
    assert_string_equal(l->name, "n");
    assert_int_equal(l->algorithm, ALGO_FIXED_WINDOW);
    assert_int_equal(l->limit, 1);
    assert_int_equal(l->window.ms, 1000);
    assert_int_equal(l->window.calendar, DUR_FIXED);
    assert_int_equal(l->burst, 0);
    assert_ptr_equal(l->tz, rs->default_tz);
    assert_int_equal(l->anchor, ANCHOR_ALIGNED);
    assert_int_equal(l->nblock_for, 0);
    assert_int_equal(l->overage_pct, 0);
    assert_int_equal(l->mode, MODE_ENFORCE);
    assert_int_equal(l->count_denied, 0);
    assert_int_equal(l->durability, DURA_NORMAL);
    assert_int_equal(l->line, 5);
    assert_int_equal(l->column, 9);
    rls__ruleset_free(rs);
}

static const char design_yaml[] =
    "version: 1\n"
    "defaults: { tier: free, timezone: UTC, on_error: deny }\n"
    "tiers: { free: {}, pro: {}, staff: { unlimited: true }, banned: { blocked: true } }\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    on_error: allow\n"
    "    limits:\n"
    "      - { name: daily,  algorithm: fixed_window, limit: 20,  window: 1d, block_for: 1h }\n"
    "      - { name: weekly, algorithm: fixed_window, limit: 100, window: 1w, timezone: Europe/Berlin }\n"
    "    tiers:\n"
    "      pro: [ { name: daily, limit: 200, window: 1d } ]\n"
    "  api:\n"
    "    limits:\n"
    "      - { name: rate, algorithm: gcra, limit: 10, window: 1s, burst: 20 }\n"
    "assignments:\n"
    "  - { key: \"10.0.0.0/8\", action: signup, tier: staff }\n"
    "  - { key: \"user:*\", tier: pro, expires: \"2027-01-01T00:00:00Z\" }\n";

static void test_design_example(void **state)
{
    ruleset *rs = TC_OK(design_yaml);
    const rule_action *su = rls__ruleset_action(rs, "signup");
    const rule_action *api = rls__ruleset_action(rs, "api");
    const rule_limit *l;

    assert_string_equal(rs->default_tier, "free");
    assert_string_equal(rls__tz_name(rs->default_tz), "UTC");
    assert_int_equal(rs->on_error, ONERR_DENY);
    assert_int_equal(rs->ntiers, 4);
    assert_int_equal(rls__ruleset_tier(rs, "staff")->unlimited, 1);
    assert_int_equal(rls__ruleset_tier(rs, "staff")->blocked, 0);
    assert_int_equal(rls__ruleset_tier(rs, "banned")->blocked, 1);
    assert_int_equal(rls__ruleset_tier(rs, "free")->unlimited, 0);
    assert_null(rls__ruleset_tier(rs, "gold"));

    assert_non_null(su);
    assert_int_equal(su->key_kind, KEY_IP);
    assert_int_equal(su->ipv6_prefix, 64);
    assert_int_equal(su->ipv4_prefix, 32);
    assert_int_equal(su->on_error, ONERR_ALLOW);
    assert_int_equal(su->nlimits, 2);
    assert_string_equal(su->limits[0].name, "daily");  /* file order */
    l = limit_of(su, "daily");
    assert_int_equal(l->limit, 20);
    assert_int_equal(l->window.calendar, DUR_DAY);
    assert_int_equal(l->nblock_for, 1);
    assert_int_equal(l->block_for[0], 3600000);
    l = limit_of(su, "weekly");
    assert_int_equal(l->limit, 100);
    assert_int_equal(l->window.calendar, DUR_WEEK);
    assert_string_equal(rls__tz_name(l->tz), "Europe/Berlin");
    assert_int_equal(su->ntiers, 1);
    l = tier_limit(su, "pro", "daily");
    assert_non_null(l);
    assert_int_equal(l->limit, 200);
    assert_int_equal(l->line, 13);

    assert_non_null(api);
    assert_int_equal(api->on_error, ONERR_INHERIT);
    l = limit_of(api, "rate");
    assert_int_equal(l->algorithm, ALGO_GCRA);
    assert_int_equal(l->burst, 20);
    assert_int_equal(l->window.ms, 1000);

    assert_int_equal(rs->nassignments, 2);
    assert_string_equal(rs->assignments[0].key, "10.0.0.0/8");
    assert_string_equal(rs->assignments[0].action, "signup");
    assert_string_equal(rs->assignments[0].tier, "staff");
    assert_int_equal(rs->assignments[0].expires_ms, 0);
    assert_string_equal(rs->assignments[1].key, "user:*");
    assert_string_equal(rs->assignments[1].action, "");
    assert_int_equal(rs->assignments[1].expires_ms, 1798761600000LL);
    rls__ruleset_free(rs);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void test_demo_yaml(void **state)
{
    size_t len;
    char *text = read_file("examples/demo.yaml", &len);
    ruleset *rs = NULL;
    int rc = rls__config_parse(text, len, &rs, &tc_errs);
    if (rc != 0)
        tc_dump(&tc_errs);
    assert_int_equal(rc, 0);
    assert_int_equal(rs->ntiers, 4);
    assert_int_equal(rs->nactions, 4);
    assert_int_equal(rs->nassignments, 8);
    assert_string_equal(rs->default_tier, "free");
    /* sorted by name */
    assert_string_equal(rs->actions[0].name, "api");
    assert_string_equal(rs->actions[1].name, "login");
    assert_string_equal(rs->actions[2].name, "mail.send");
    assert_string_equal(rs->actions[3].name, "signup");

    const rule_action *su = rls__ruleset_action(rs, "signup");
    assert_int_equal(su->key_kind, KEY_IP);
    assert_int_equal(su->ipv6_prefix, 64);
    assert_int_equal(su->nlimits, 2);
    assert_int_equal(su->ntiers, 1);
    const rule_limit *pd = tier_limit(su, "pro", "daily");
    assert_int_equal(pd->limit, 200);
    assert_int_equal(pd->window.calendar, DUR_DAY);  /* inherited */
    assert_int_equal(pd->nblock_for, 1);
    assert_int_equal(pd->block_for[0], 3600000);
    assert_string_equal(rls__tz_name(tier_limit(su, "pro", "weekly")->tz),
                        "Europe/Berlin");

    const rule_action *lg = rls__ruleset_action(rs, "login");
    const rule_limit *b = limit_of(lg, "burst");
    assert_int_equal(b->algorithm, ALGO_SLIDING_WINDOW);
    assert_int_equal(b->nblock_for, 3);
    assert_int_equal(b->block_for[0], 60000);
    assert_int_equal(b->block_for[1], 600000);
    assert_int_equal(b->block_for[2], 3600000);
    assert_int_equal(limit_of(lg, "hourly")->algorithm, ALGO_SLIDING_LOG);
    assert_int_equal(limit_of(lg, "hourly")->count_denied, 1);
    assert_int_equal(limit_of(lg, "hourly")->nblock_for, 4);

    const rule_action *api = rls__ruleset_action(rs, "api");
    assert_int_equal(api->nlimits, 2);
    assert_int_equal(api->ntiers, 2);
    assert_int_equal(limit_of(api, "rate")->algorithm, ALGO_GCRA);
    assert_int_equal(limit_of(api, "rate")->burst, 20);
    assert_int_equal(limit_of(api, "daily")->overage_pct, 10);
    const rule_limit *pr = tier_limit(api, "pro", "rate");
    assert_int_equal(pr->algorithm, ALGO_GCRA);
    assert_int_equal(pr->limit, 100);
    assert_int_equal(pr->burst, 200);
    assert_int_equal(tier_limit(api, "pro", "daily")->durability, DURA_FULL);
    assert_int_equal(tier_limit(api, "pro", "daily")->overage_pct, 10);
    assert_int_equal(tier_of(api, "banned")->nlimits, 0);

    const rule_action *ms = rls__ruleset_action(rs, "mail.send");
    assert_int_equal(ms->key_kind, KEY_EMAIL);
    assert_int_equal(ms->on_error, ONERR_DENY);
    assert_int_equal(ms->nlimits, 3);
    assert_string_equal(rls__tz_name(limit_of(ms, "weekly")->tz),
                        "America/New_York");
    assert_ptr_equal(limit_of(ms, "weekly")->tz, limit_of(ms, "daily")->tz);
    assert_int_equal(limit_of(ms, "burst")->mode, MODE_SHADOW);
    assert_int_equal(limit_of(ms, "burst")->algorithm, ALGO_TOKEN_BUCKET);
    assert_int_equal(rs->nzones_, 3);  /* UTC, Berlin, New York: once each */

    int expiring = 0, every = 0;
    for (int i = 0; i < rs->nassignments; i++) {
        key_pattern p;
        const char *why = NULL;
        assert_int_equal(rls__key_pattern_parse(rs->assignments[i].key, &p, &why),
                         0);
        expiring += rs->assignments[i].expires_ms != 0;
        every += rs->assignments[i].action[0] == '\0';
        assert_non_null(rls__ruleset_tier(rs, rs->assignments[i].tier));
    }
    assert_int_equal(expiring, 1);
    assert_int_equal(every, 1);
    rls__ruleset_free(rs);
    free(text);
}

static void test_algorithms(void **state)
{
    static const struct { const char *name; int kind; const char *extra; } t[] = {
        { "fixed_window", ALGO_FIXED_WINDOW, "" },
        { "sliding_window", ALGO_SLIDING_WINDOW, "" },
        { "sliding_log", ALGO_SLIDING_LOG, "" },
        { "token_bucket", ALGO_TOKEN_BUCKET, ", burst: 5" },
        { "gcra", ALGO_GCRA, ", burst: 5" },
        { "leaky_bucket", ALGO_LEAKY_BUCKET, ", burst: 5" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char f[200];
        const rule_limit *l;
        snprintf(f, sizeof f, "name: n, algorithm: %s, limit: 10, window: 1m%s",
                 t[i].name, t[i].extra);
        ruleset *rs = one_limit(f, &l);
        assert_int_equal(l->algorithm, t[i].kind);
        assert_int_equal(l->burst, t[i].extra[0] ? 5 : 0);
        rls__ruleset_free(rs);
    }
}

static void test_all_limit_fields(void **state)
{
    const rule_limit *l;
    ruleset *rs = one_limit("name: \"a.b:c-d_9\", algorithm: sliding_window, "
                            "limit: 1000000000000, window: 1h30m, "
                            "timezone: Asia/Tokyo, anchor: first_hit, "
                            "block_for: 90s, overage: 1000, mode: shadow, "
                            "count_denied: true, durability: memory", &l);
    assert_string_equal(l->name, "a.b:c-d_9");
    assert_int_equal(l->limit, 1000000000000LL);
    assert_int_equal(l->window.ms, 5400000);
    assert_string_equal(rls__tz_name(l->tz), "Asia/Tokyo");
    assert_int_equal(l->anchor, ANCHOR_FIRST_HIT);
    assert_int_equal(l->nblock_for, 1);
    assert_int_equal(l->block_for[0], 90000);
    assert_int_equal(l->overage_pct, 1000);
    assert_int_equal(l->mode, MODE_SHADOW);
    assert_int_equal(l->count_denied, 1);
    assert_int_equal(l->durability, DURA_MEMORY);
    rls__ruleset_free(rs);

    rs = one_limit("name: n, limit: 10000, window: 1mo, algorithm: "
                   "sliding_log, anchor: aligned, overage: 0, mode: enforce, "
                   "count_denied: false, durability: full", &l);
    assert_int_equal(l->limit, 10000);
    assert_int_equal(l->window.calendar, DUR_MONTH);
    assert_int_equal(l->anchor, ANCHOR_ALIGNED);
    assert_int_equal(l->count_denied, 0);
    assert_int_equal(l->durability, DURA_FULL);
    rls__ruleset_free(rs);
}

static void test_block_for_forms(void **state)
{
    const rule_limit *l;
    ruleset *rs = one_limit("name: n, limit: 1, window: 1s, block_for: 1h", &l);
    assert_int_equal(l->nblock_for, 1);
    assert_int_equal(l->block_for[0], 3600000);
    rls__ruleset_free(rs);

    rs = one_limit("name: n, limit: 1, window: 1s, block_for: [1m, 10m, 1h]",
                   &l);
    assert_int_equal(l->nblock_for, 3);
    assert_int_equal(l->block_for[0], 60000);
    assert_int_equal(l->block_for[1], 600000);
    assert_int_equal(l->block_for[2], 3600000);
    rls__ruleset_free(rs);

    rs = one_limit("name: n, limit: 1, window: 1s, block_for: [1d]", &l);
    assert_int_equal(l->nblock_for, 1);
    assert_int_equal(l->block_for[0], 86400000);
    rls__ruleset_free(rs);

    rs = one_limit("name: n, limit: 1, window: 1s, block_for: []", &l);
    assert_int_equal(l->nblock_for, 0);
    rls__ruleset_free(rs);

    rs = one_limit("name: n, limit: 1, window: 1s, block_for: [1s, 2s, 3s, "
                   "4s, 5s, 6s, 7s, 8s, 9s, 10s, 11s, 12s, 13s, 14s, 15s, 16s]",
                   &l);
    assert_int_equal(l->nblock_for, RULES_BLOCK_STEPS);
    assert_int_equal(l->block_for[15], 16000);
    rls__ruleset_free(rs);
}

static const char inherit_yaml[] =
    "version: 1\n"
    "defaults: { timezone: Europe/Paris }\n"
    "tiers: { pro: {}, gold: {} }\n"
    "actions:\n"
    "  a:\n"
    "    limits:\n"
    "      - { name: daily, limit: 20, window: 1d, block_for: [1m, 1h],\n"
    "          timezone: Europe/Berlin, mode: shadow, overage: 5,\n"
    "          count_denied: true, durability: full, anchor: first_hit }\n"
    "      - { name: rate, algorithm: gcra, limit: 10, window: 1s, burst: 30 }\n"
    "    tiers:\n"
    "      pro:\n"
    "        - { name: daily, limit: 200 }\n"
    "        - { name: rate, algorithm: fixed_window }\n"
    "        - { name: extra, limit: 5, window: 1w }\n"
    "      gold:\n"
    "        - { name: daily, block_for: [], algorithm: gcra, burst: 7 }\n"
    "        - { name: rate, burst: 99 }\n";

static void test_tier_inheritance(void **state)
{
    ruleset *rs = TC_OK(inherit_yaml);
    const rule_action *a = rls__ruleset_action(rs, "a");
    const rule_limit *d = limit_of(a, "daily"), *l;

    assert_string_equal(rls__tz_name(rs->default_tz), "Europe/Paris");
    assert_int_equal(a->ntiers, 2);
    /* pro.daily: only the limit given, everything else from the default */
    l = tier_limit(a, "pro", "daily");
    assert_int_equal(l->limit, 200);
    assert_int_equal(l->algorithm, ALGO_FIXED_WINDOW);
    assert_int_equal(l->window.ms, d->window.ms);
    assert_int_equal(l->window.calendar, DUR_DAY);
    assert_int_equal(l->nblock_for, 2);
    assert_int_equal(l->block_for[1], 3600000);
    assert_ptr_equal(l->tz, d->tz);
    assert_string_equal(rls__tz_name(l->tz), "Europe/Berlin");
    assert_int_equal(l->mode, MODE_SHADOW);
    assert_int_equal(l->overage_pct, 5);
    assert_int_equal(l->count_denied, 1);
    assert_int_equal(l->durability, DURA_FULL);
    assert_int_equal(l->anchor, ANCHOR_FIRST_HIT);
    assert_int_equal(l->line, 13);  /* where the entry is, not the default */
    /* pro.rate switches to fixed_window: the gcra burst is not inherited */
    l = tier_limit(a, "pro", "rate");
    assert_int_equal(l->algorithm, ALGO_FIXED_WINDOW);
    assert_int_equal(l->limit, 10);
    assert_int_equal(l->burst, 0);
    /* pro.extra: a new limit, default time zone */
    l = tier_limit(a, "pro", "extra");
    assert_int_equal(l->limit, 5);
    assert_int_equal(l->window.calendar, DUR_WEEK);
    assert_string_equal(rls__tz_name(l->tz), "Europe/Paris");
    /* gold.daily: empty block_for cancels, gcra drops first_hit */
    l = tier_limit(a, "gold", "daily");
    assert_int_equal(l->nblock_for, 0);
    assert_int_equal(l->algorithm, ALGO_GCRA);
    assert_int_equal(l->burst, 7);
    assert_int_equal(l->anchor, ANCHOR_ALIGNED);
    assert_int_equal(l->limit, 20);
    l = tier_limit(a, "gold", "rate");
    assert_int_equal(l->burst, 99);
    assert_int_equal(l->limit, 10);
    assert_int_equal(l->algorithm, ALGO_GCRA);
    /* the defaults themselves are untouched */
    assert_int_equal(d->limit, 20);
    assert_int_equal(limit_of(a, "rate")->burst, 30);
    rls__ruleset_free(rs);
}

static void test_block_style_and_nulls(void **state)
{
    ruleset *rs = TC_OK(
        "# leading comment\n"
        "---\n"
        "version: 1\n"
        "defaults:\n"
        "tiers:\n"
        "  free:\n"
        "  \"vip\": { unlimited: false, blocked: false }\n"
        "actions:\n"
        "  'mail.send':\n"
        "    key: email\n"
        "    on_error: deny\n"
        "    limits:\n"
        "      - name: daily\n"
        "        limit: 5\n"
        "        window: \"1d\"\n"
        "    tiers:\n"
        "      free:\n"
        "      vip: []\n"
        "assignments:\n"
        "...\n");
    assert_int_equal(rs->ntiers, 2);
    assert_string_equal(rs->tiers[0].name, "free");
    assert_int_equal(rs->tiers[0].unlimited, 0);
    assert_string_equal(rs->tiers[1].name, "vip");
    const rule_action *a = rls__ruleset_action(rs, "mail.send");
    assert_non_null(a);
    assert_int_equal(a->on_error, ONERR_DENY);
    assert_int_equal(a->limits[0].line, 13);
    assert_int_equal(a->limits[0].column, 9);
    assert_int_equal(a->ntiers, 1);  /* "free:" (null) adds nothing */
    assert_string_equal(a->tiers[0].tier, "vip");
    assert_int_equal(a->tiers[0].nlimits, 0);
    assert_int_equal(rs->nassignments, 0);
    rls__ruleset_free(rs);
}

static void test_ip_prefixes(void **state)
{
    ruleset *rs = TC_OK(
        "version: 1\n"
        "defaults: { on_error: allow }\n"
        "actions:\n"
        "  a: { key: ip, ipv4_prefix: 24, ipv6_prefix: 48,\n"
        "       limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "  b: { key: ip, ipv4_prefix: 0, ipv6_prefix: 128,\n"
        "       limits: [ { name: n, limit: 1, window: 1s } ] }\n");
    assert_int_equal(rs->on_error, ONERR_ALLOW);
    assert_int_equal(rls__ruleset_action(rs, "a")->on_error, ONERR_INHERIT);
    assert_int_equal(rls__ruleset_action(rs, "a")->ipv4_prefix, 24);
    assert_int_equal(rls__ruleset_action(rs, "a")->ipv6_prefix, 48);
    assert_int_equal(rls__ruleset_action(rs, "b")->ipv4_prefix, 0);
    assert_int_equal(rls__ruleset_action(rs, "b")->ipv6_prefix, 128);
    rls__ruleset_free(rs);
}

static void test_assignments_good(void **state)
{
    ruleset *rs = TC_OK(
        "version: 1\n"
        "tiers: { pro: {}, staff: {} }\n"
        "actions:\n"
        "  net: { key: ip, ipv6_prefix: 64, limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "  mail: { key: email, limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "  s: { limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "assignments:\n"
        "  - { key: \"10.0.0.0/8\", action: net, tier: staff }\n"
        "  - { key: \"2001:db8::/32\", action: net, tier: staff }\n"
        "  - { key: 203.0.113.7, action: net, tier: pro }\n"
        "  - { key: ann@example.com, action: mail, tier: pro }\n"
        "  - { key: \"user:*\", tier: pro, expires: 1798761600000 }\n"
        "  - { key: \"user:*\", action: s, tier: staff,\n"
        "      expires: \"2024-02-29T12:30:15.5Z\" }\n"
        "  - { key: \"Any Key!\", action: s, tier: pro,\n"
        "      expires: 2027-01-01T00:00:00.000Z }\n"
        "  - { key: \"10.0.0.0/8\", tier: pro }\n");
    assert_int_equal(rs->nassignments, 8);
    assert_string_equal(rs->assignments[2].key, "203.0.113.7");
    assert_int_equal(rs->assignments[4].expires_ms, 1798761600000LL);
    assert_int_equal(rs->assignments[5].expires_ms, 1709209815500LL);
    assert_int_equal(rs->assignments[6].expires_ms, 1798761600000LL);
    assert_string_equal(rs->assignments[6].key, "Any Key!");
    assert_string_equal(rs->assignments[7].action, "");
    rls__ruleset_free(rs);
}

static void test_lookups(void **state)
{
    char *yaml = malloc(64 * 1024);
    size_t o;
    assert_non_null(yaml);
    o = (size_t)sprintf(yaml, "version: 1\ntiers: {");
    for (int i = 0; i < 40; i++)
        o += (size_t)sprintf(yaml + o, "%st%02d: {}", i ? ", " : "",
                             (i * 7) % 40);
    o += (size_t)sprintf(yaml + o, "}\nactions:\n");
    for (int i = 0; i < 200; i++)
        o += (size_t)sprintf(yaml + o, "  act%03d: { limits: [ { name: n, "
                             "limit: %d, window: 1s } ] }\n", (i * 37) % 200,
                             (i * 37) % 200 + 1);
    ruleset *rs = TC_OK(yaml);
    assert_int_equal(rs->nactions, 200);
    assert_int_equal(rs->ntiers, 40);
    for (int i = 0; i < 200; i++) {
        char name[16];
        snprintf(name, sizeof name, "act%03d", i);
        const rule_action *a = rls__ruleset_action(rs, name);
        assert_non_null(a);
        assert_string_equal(a->name, name);
        assert_int_equal(a->limits[0].limit, i + 1);
    }
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%02d", i);
        assert_non_null(rls__ruleset_tier(rs, name));
    }
    assert_null(rls__ruleset_action(rs, "act200"));
    assert_null(rls__ruleset_action(rs, ""));
    assert_null(rls__ruleset_action(rs, NULL));
    assert_null(rls__ruleset_action(NULL, "act001"));
    assert_null(rls__ruleset_tier(rs, "t40"));
    assert_null(rls__ruleset_tier(rs, ""));
    assert_null(rls__ruleset_tier(NULL, "t01"));
    rls__ruleset_free(rs);
    rls__ruleset_free(NULL);
    free(yaml);
}

static void test_unsorted_lookup_fallback(void **state)
{
    /* a ruleset built by hand, not sorted: lookups still find everything */
    ruleset rs;
    rule_action acts[3];
    rule_tier tiers[2];
    memset(&rs, 0, sizeof rs);
    memset(acts, 0, sizeof acts);
    memset(tiers, 0, sizeof tiers);
    strcpy(acts[0].name, "zeta");
    strcpy(acts[1].name, "alpha");
    strcpy(acts[2].name, "mid");
    strcpy(tiers[0].name, "z");
    strcpy(tiers[1].name, "a");
    rs.actions = acts;
    rs.nactions = 3;
    rs.tiers = tiers;
    rs.ntiers = 2;
    for (int i = 0; i < 3; i++)
        assert_ptr_equal(rls__ruleset_action(&rs, acts[i].name), &acts[i]);
    assert_ptr_equal(rls__ruleset_tier(&rs, "a"), &tiers[1]);
    assert_ptr_equal(rls__ruleset_tier(&rs, "z"), &tiers[0]);
    assert_null(rls__ruleset_action(&rs, "beta"));
}

static void test_error_format(void **state)
{
    config_error e = { 3, 7, "actions: boom", 9 };
    char buf[64];
    assert_int_equal(rls__config_error_format(&e, "r.yaml", buf, sizeof buf),
                     (int)strlen("r.yaml:3:7: actions: boom"));
    assert_string_equal(buf, "r.yaml:3:7: actions: boom");
    rls__config_error_format(&e, NULL, buf, sizeof buf);
    assert_string_equal(buf, "3:7: actions: boom");
    e.line = 0;
    rls__config_error_format(&e, "r.yaml", buf, sizeof buf);
    assert_string_equal(buf, "r.yaml: actions: boom");
    rls__config_error_format(&e, NULL, buf, sizeof buf);
    assert_string_equal(buf, "actions: boom");
    /* snprintf-style: the full length even when cut */
    assert_int_equal(rls__config_error_format(&e, NULL, buf, 5), 13);
    assert_string_equal(buf, "acti");
    assert_int_equal(rls__config_error_format(NULL, NULL, buf, sizeof buf), -1);
    assert_string_equal(buf, "");
}

static void test_errs_may_be_null(void **state)
{
    static const char good[] =
        "version: 1\nactions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n";
    ruleset *rs = NULL;
    assert_int_equal(rls__config_parse(good, strlen(good), &rs, NULL), 0);
    assert_non_null(rs);
    rls__ruleset_free(rs);
    rs = (ruleset *)1;
    assert_int_equal(rls__config_parse("version: 2\n", 11, &rs, NULL), -1);
    assert_null(rs);
    assert_int_equal(rls__config_parse(good, strlen(good), NULL, &tc_errs), -1);
    assert_int_equal(rls__config_parse(NULL, 5, &rs, &tc_errs), -1);
    assert_null(rs);
    assert_int_equal(rls__config_parse(NULL, 0, &rs, &tc_errs), -1);
    assert_string_equal(tc_errs.e[0].msg, "empty configuration");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_design_example),
        cmocka_unit_test(test_demo_yaml),
        cmocka_unit_test(test_algorithms),
        cmocka_unit_test(test_all_limit_fields),
        cmocka_unit_test(test_block_for_forms),
        cmocka_unit_test(test_tier_inheritance),
        cmocka_unit_test(test_block_style_and_nulls),
        cmocka_unit_test(test_ip_prefixes),
        cmocka_unit_test(test_assignments_good),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_unsorted_lookup_fallback),
        cmocka_unit_test(test_error_format),
        cmocka_unit_test(test_errs_may_be_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
