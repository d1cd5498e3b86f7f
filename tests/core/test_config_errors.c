/*
 * test_config_errors.c - the YAML loader on invalid rules: each field's bad
 * values with the exact line, column and message, unknown and missing
 * fields, duplicates, references to undefined tiers and actions, bad
 * assignments, and the collection of every error of a file.  YAML-level
 * problems (syntax, encoding, bombs) and out of memory are in
 * test_config_yaml.c.
 */
#include "testutil.h"
#include "config.h"

#include "test_config_util.h"

/* One bad field in an otherwise good limit: exactly one error, at the value
 * of `at`, whose message contains `msg`. */
typedef struct bad_field {
    const char *fields;
    const char *at;
    const char *msg;
} bad_field;

static const bad_field bad_fields[] = {
    { "name: n, limit: 1, window: 0s", "window",
      "actions.a.limits[0].window: expected a duration such as 10s, 1h, 1d; "
      "got '0s'" },
    { "name: n, limit: 1, window: 10", "window",
      "window: expected a duration such as 10s, 1h, 1d; got '10'" },
    { "name: n, limit: 1, window: 1x", "window", "got '1x'" },
    { "name: n, limit: 1, window: -1s", "window", "got '-1s'" },
    { "name: n, limit: 1, window: [1s]", "window",
      "window: expected a duration such as 10s, 1h, 1d; got a list" },
    { "name: n, limit: 1, window: ~", "window", "got an empty value" },
    { "name: n, limit: 1, window: 101000d", "window", "got '101000d'" },
    { "name: n, limit: 0, window: 1s", "limit",
      "actions.a.limits[0].limit: expected an integer from 1 to "
      "1000000000000; got '0'" },
    { "name: n, limit: -5, window: 1s", "limit", "got '-5'" },
    { "name: n, limit: 1.5, window: 1s", "limit",
      "written in decimal; got '1.5'" },
    { "name: n, limit: \"20\", window: 1s", "limit",
      "got the quoted string '20' (write numbers without quotes)" },
    { "name: n, limit: 0x10, window: 1s", "limit", "decimal; got '0x10'" },
    { "name: n, limit: 1e3, window: 1s", "limit", "decimal; got '1e3'" },
    { "name: n, limit: 007, window: 1s", "limit", "decimal; got '007'" },
    { "name: n, limit: +7, window: 1s", "limit", "decimal; got '+7'" },
    { "name: n, limit: 1_000, window: 1s", "limit", "got '1_000'" },
    { "name: n, limit: 1000000000001, window: 1s", "limit",
      "got '1000000000001'" },
    { "name: n, limit: 99999999999999999999999, window: 1s", "limit",
      "from 1 to 1000000000000; got '99999999999999999999999'" },
    { "name: n, limit: {x: 1}, window: 1s", "limit", "got a mapping" },
    { "name: n, algorithm: sliding_log, limit: 10001, window: 1s", "limit",
      "sliding_log keeps one entry per unit and accepts a limit (with its "
      "overage) of at most 10000; got 10001" },
    { "name: n, algorithm: sliding_log, limit: 9000, window: 1s, overage: 20",
      "limit", "accepts a limit (with its overage) of at most 10000; got 10800" },
    { "name: n, algorithm: lru, limit: 1, window: 1s", "algorithm",
      "algorithm: expected one of fixed_window, sliding_window, sliding_log, "
      "token_bucket, gcra, leaky_bucket; got 'lru'" },
    { "name: n, algorithm: GCRA, limit: 1, window: 1s", "algorithm",
      "got 'GCRA'" },
    { "name: n, limit: 1, window: 1s, burst: 5", "burst",
      "burst: not valid for fixed_window (only token_bucket, gcra and "
      "leaky_bucket have a burst)" },
    { "name: n, algorithm: sliding_log, limit: 1, window: 1s, burst: 5",
      "burst", "burst: not valid for sliding_log" },
    { "name: n, algorithm: gcra, limit: 1, window: 1s, burst: 0", "burst",
      "burst: expected an integer from 1 to 1000000000000; got '0'" },
    { "name: n, algorithm: token_bucket, limit: 1, window: 1s, anchor: "
      "first_hit", "anchor", "anchor: first_hit is not valid for "
      "token_bucket (only fixed_window and sliding_window have windows to "
      "anchor)" },
    { "name: n, limit: 1, window: 1s, anchor: start", "anchor",
      "anchor: expected one of aligned, first_hit; got 'start'" },
    { "name: n, limit: 1, window: 1s, overage: 1001", "overage",
      "overage: expected an integer from 0 to 1000; got '1001'" },
    { "name: n, limit: 1, window: 1s, overage: -1", "overage", "got '-1'" },
    { "name: n, limit: 1, window: 1s, overage: 10%", "overage",
      "got '10%'" },
    { "name: n, limit: 1, window: 1s, mode: dry", "mode",
      "mode: expected one of enforce, shadow; got 'dry'" },
    { "name: n, limit: 1, window: 1s, durability: disk", "durability",
      "durability: expected one of normal, full, memory; got 'disk'" },
    { "name: n, limit: 1, window: 1s, count_denied: yes", "count_denied",
      "count_denied: expected true or false; got 'yes' (only lower-case "
      "true and false are booleans here)" },
    { "name: n, limit: 1, window: 1s, count_denied: off", "count_denied",
      "got 'off'" },
    { "name: n, limit: 1, window: 1s, count_denied: True", "count_denied",
      "got 'True'" },
    { "name: n, limit: 1, window: 1s, count_denied: 1", "count_denied",
      "expected true or false; got '1'" },
    { "name: n, limit: 1, window: 1s, count_denied: \"true\"",
      "count_denied", "got the quoted string 'true'" },
    { "name: n, limit: 1, window: 1s, timezone: Mars/Olympus", "timezone",
      "timezone: unknown time zone 'Mars/Olympus'" },
    { "name: n, limit: 1, window: 1s, timezone: ../../etc/passwd",
      "timezone", "unknown time zone '../../etc/passwd'" },
    { "name: n, limit: 1, window: 1s, timezone: \"\"", "timezone",
      "unknown time zone ''" },
    { "name: daily limit, limit: 1, window: 1s", "name",
      "name: expected a limit name of 1 to 63 characters A-Z a-z 0-9 _ . : -; "
      "got 'daily limit'" },
    { "name: \"\", limit: 1, window: 1s", "name", "got ''" },
    { "name: ~, limit: 1, window: 1s", "name",
      "expected a limit name; got an empty value" },
    { "name: "
      "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl, "
      "limit: 1, window: 1s", "name", "expected a limit name of 1 to 63" },
    { "name: n, limit: 1, window: 1s, block_for: 0s", "block_for",
      "block_for: expected a duration such as 10s, 1h, 1d; got '0s'" },
    { "name: n, limit: 1, window: 1s, block_for: [1m, 0s]", "[1m,",
      "actions.a.limits[0].block_for[1]: expected a duration" },
    { "name: n, limit: 1, window: 1s, block_for: {a: 1}", "block_for",
      "block_for: expected a duration or a list of up to 16 durations such "
      "as [1m, 10m, 1h]; got a mapping" },
    { "name: n, limit: 1, window: 1s, block_for: [1s, 1s, 1s, 1s, 1s, 1s, "
      "1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s]", "block_for",
      "block_for: expected at most 16 durations; got 17" },
    { "name: n, algorithm: gcra, limit: 1000000000000, window: 1ms", "limit",
      "is faster than one unit per nanosecond, which gcra cannot represent" },
    { "name: n, algorithm: token_bucket, limit: 1000000000000, window: "
      "36500d", "limit", "too large for token_bucket" },
    { "name: n, algorithm: leaky_bucket, limit: 1, window: 36500d, burst: "
      "1000000000000", "burst", "too large for leaky_bucket" },
};

static void test_bad_limit_fields(void **state)
{
    for (size_t i = 0; i < sizeof bad_fields / sizeof bad_fields[0]; i++) {
        char doc[1024];
        const bad_field *b = &bad_fields[i];
        print_message("case %zu: %s\n", i, b->fields);
        const config_errors *e = TC_BAD(tc_limit(doc, sizeof doc, b->fields));
        TC_EXPECT(e, 5, tc_col(b->fields, b->at), b->msg);
        assert_int_equal(e->total, 1);
    }
}

static void test_unknown_and_missing_fields(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "actoins:\n"                              /* 2 */
        "  a: {}\n");
    TC_EXPECT(e, 2, 1, "unknown field 'actoins' (did you mean 'actions'?)");
    TC_EXPECT(e, 1, 1, "missing required field 'actions'");
    assert_int_equal(e->total, 2);

    e = TC_BAD(
        "version: 1\n"
        "actions:\n"
        "  a:\n"
        "    limits:\n"
        "      - name: n\n"                       /* 5 */
        "        limit: 1\n"
        "        windw: 1s\n"                     /* 7 */
        "        colour: red\n");                 /* 8 */
    TC_EXPECT(e, 7, 9, "actions.a.limits[0]: unknown field 'windw' (did you "
              "mean 'window'?)");
    TC_EXPECT(e, 8, 9, "actions.a.limits[0]: unknown field 'colour'; "
              "expected one of name, algorithm, limit, window, burst,");
    TC_EXPECT(e, 5, 9, "actions.a.limits[0]: missing required field "
              "'window'");
    assert_int_equal(e->total, 3);

    e = TC_BAD("version: 1\nactions: { a: { limits: [ { limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 2, 27, "actions.a.limits[0]: missing required field 'name'");
    e = TC_BAD("actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 1, 1, "missing required field 'version' (write version: 1)");
    e = TC_BAD("version: 2\nactions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 1, 10, "version: unsupported version 2; this library reads "
              "version 1");
    e = TC_BAD("version: \"1\"\nactions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 1, 10, "version: expected an integer >= 0; got the quoted");
    e = TC_BAD("version: 1\nactions: { a: { key: ip, limit: [] } }\n");
    TC_EXPECT(e, 2, 26, "actions.a: unknown field 'limit' (did you mean "
              "'limits'?)");
    TC_EXPECT(e, 2, 15, "actions.a: missing required field 'limits'");
    assert_int_equal(e->total, 2);
}

static void test_wrong_types(void **state)
{
    const config_errors *e = TC_BAD("- a\n- b\n");
    TC_EXPECT(e, 1, 1, "expected a mapping with version, tiers, actions and "
              "assignments at the top level; got a list");
    e = TC_BAD("hello\n");
    TC_EXPECT(e, 1, 1, "got 'hello'");
    e = TC_BAD("version: 1\nactions: [a]\n");
    TC_EXPECT(e, 2, 10, "actions: expected a mapping of action names to "
              "actions; got a list");
    e = TC_BAD("version: 1\nactions: {}\n");
    TC_EXPECT(e, 2, 10, "actions: expected 1 to 10000 actions; got 0");
    e = TC_BAD("version: 1\nactions:\n  a: 5\n");
    TC_EXPECT(e, 3, 6, "actions.a: expected an action: a mapping with key "
              "and limits; got '5'");
    e = TC_BAD("version: 1\nactions:\n  a:\n    limits: { name: n }\n");
    TC_EXPECT(e, 4, 13, "actions.a.limits: expected a list of limits such as");
    e = TC_BAD("version: 1\nactions:\n  a:\n    limits: []\n");
    TC_EXPECT(e, 4, 13, "actions.a.limits: expected 1 to 32 limits; got 0");
    e = TC_BAD("version: 1\nactions:\n  a:\n    limits: [ daily ]\n");
    TC_EXPECT(e, 4, 15, "actions.a.limits[0]: expected a limit: a mapping "
              "such as { name: daily, limit: 20, window: 1d }; got 'daily'");
    e = TC_BAD("version: 1\ntiers: [free]\ndefaults: { tier: free }\n"
               "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ],"
               " tiers: { free: [] } } }\n");
    TC_EXPECT(e, 2, 8, "tiers: expected a mapping of tier names to tiers");
    assert_int_equal(e->total, 1);  /* references not reported again */
    e = TC_BAD("version: 1\ndefaults: [a]\nassignments: {}\n"
               "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 2, 11, "defaults: expected a mapping such as");
    TC_EXPECT(e, 3, 14, "assignments: expected a list of assignments");
}

static void test_too_many_limits(void **state)
{
    char doc[8192];
    size_t o = (size_t)snprintf(doc, sizeof doc,
                                "version: 1\nactions:\n  a:\n    limits:\n");
    for (int i = 0; i < 33; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "      - { name: l%d, limit: 1, window: 1s }\n", i);
    const config_errors *e = TC_BAD(doc);
    TC_EXPECT(e, 5, 7, "actions.a.limits: expected 1 to 32 limits; got 33");
    assert_int_equal(e->total, 1);

    /* 20 defaults plus 13 new names in a tier: 33 for that tier */
    o = (size_t)snprintf(doc, sizeof doc, "version: 1\ntiers: { pro: {} }\n"
                         "actions:\n  a:\n    limits:\n");
    for (int i = 0; i < 20; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "      - { name: l%d, limit: 1, window: 1s }\n", i);
    o += (size_t)snprintf(doc + o, sizeof doc - o, "    tiers:\n      pro:\n");
    for (int i = 10; i < 33; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "        - { name: l%d, limit: 2, window: 1s }\n", i);
    e = TC_BAD(doc);
    TC_EXPECT(e, 28, 9, "actions.a.tiers.pro: with this tier the action "
              "would have 33 limits; at most 32 are accepted");
    assert_int_equal(e->total, 1);
}

/* One check locks its memory-class entries together in the shared-memory
 * table, 16 at most: refused when the rules load, never at a check. */
static void test_too_many_memory_limits(void **state)
{
    char doc[8192];
    size_t o = (size_t)snprintf(doc, sizeof doc, "version: 1\nactions:\n  a:\n    limits:\n");
    for (int i = 0; i < 17; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "      - { name: l%d, limit: 1, window: 1s, durability: memory }\n",
                              i);
    const config_errors *e = TC_BAD(doc);
    TC_EXPECT(e, 5, 7, "actions.a.limits: 17 limits of `durability: memory` in one check; "
              "at most 16 are accepted");
    assert_int_equal(e->total, 1);

    /* 12 in the defaults, a tier replacing 2 of them (16: accepted) and a
     * tier adding 5 (17: refused) */
    o = (size_t)snprintf(doc, sizeof doc, "version: 1\ntiers: { pro: {}, max: {} }\n"
                         "actions:\n  a:\n    limits:\n");
    for (int i = 0; i < 12; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "      - { name: l%d, limit: 1, window: 1s, durability: memory }\n",
                              i);
    o += (size_t)snprintf(doc + o, sizeof doc - o, "    tiers:\n      pro:\n");
    for (int i = 10; i < 16; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "        - { name: l%d, limit: 2, window: 1s, durability: memory }\n",
                              i);
    o += (size_t)snprintf(doc + o, sizeof doc - o, "      max:\n");
    for (int i = 12; i < 17; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "        - { name: l%d, limit: 2, window: 1s, durability: memory }\n",
                              i);
    e = TC_BAD(doc);
    TC_EXPECT(e, 27, 9, "actions.a.tiers.max: 17 limits of `durability: memory` in one check");
    assert_int_equal(e->total, 1);
}

static void test_duplicate_keys(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "actions:\n"
        "  a:\n"
        "    limits:\n"
        "      - { name: n, limit: 1, limit: 2, window: 1s }\n");
    TC_EXPECT(e, 5, 30, "duplicate key 'limit' (first defined at 5:20)");
    assert_int_equal(e->total, 1);

    e = TC_BAD(
        "version: 1\n"
        "actions:\n"
        "  a: { limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "  b: { limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "  a: { limits: [ { name: n, limit: 1, window: 1s } ] }\n"
        "version: 1\n");
    TC_EXPECT(e, 5, 3, "duplicate key 'a' (first defined at 3:3)");
    TC_EXPECT(e, 6, 1, "duplicate key 'version' (first defined at 1:1)");
    assert_int_equal(e->total, 2);

    /* a large mapping (sorted check): 30 actions, two of them repeated */
    char doc[8192];
    size_t o = (size_t)snprintf(doc, sizeof doc, "version: 1\nactions:\n");
    for (int i = 0; i < 30; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "  x%d: { limits: [ { name: n, limit: 1, "
                              "window: 1s } ] }\n", i % 28);
    e = TC_BAD(doc);
    TC_EXPECT(e, 31, 3, "duplicate key 'x0' (first defined at 3:3)");
    TC_EXPECT(e, 32, 3, "duplicate key 'x1' (first defined at 4:3)");
    assert_int_equal(e->total, 2);

    e = TC_BAD("version: 1\n? [a, b]\n: 1\n"
               "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 2, 3, "mapping keys must be plain strings, not lists");
    assert_int_equal(e->total, 1);
}

static void test_duplicate_limit_names(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "tiers: { pro: {} }\n"
        "actions:\n"
        "  a:\n"
        "    limits:\n"
        "      - { name: daily, limit: 1, window: 1d }\n"
        "      - { name: weekly, limit: 5, window: 1w }\n"
        "      - { name: daily, limit: 2, window: 1d }\n"
        "    tiers:\n"
        "      pro:\n"
        "        - { name: x, limit: 1, window: 1s }\n"
        "        - { name: x, limit: 2, window: 1s }\n");
    TC_EXPECT(e, 8, 9, "actions.a.limits[2]: duplicate limit name 'daily' "
              "(first defined at 6:9)");
    TC_EXPECT(e, 12, 11, "actions.a.tiers.pro[1]: duplicate limit name 'x' "
              "(first defined at 11:11)");
    assert_int_equal(e->total, 2);
}

static void test_tier_references(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "defaults: { tier: gold }\n"
        "tiers: { free: {}, pro: {} }\n"
        "actions:\n"
        "  a:\n"
        "    limits: [ { name: n, limit: 1, window: 1s } ]\n"
        "    tiers:\n"
        "      platinum: [ { name: n, limit: 5 } ]\n"
        "assignments:\n"
        "  - { key: k, tier: silver }\n");
    TC_EXPECT(e, 2, 19, "defaults.tier: unknown tier 'gold'; defined tiers: "
              "free, pro");
    TC_EXPECT(e, 8, 7, "actions.a.tiers: unknown tier 'platinum'; defined "
              "tiers: free, pro");
    TC_EXPECT(e, 10, 21, "assignments[0].tier: unknown tier 'silver'");
    assert_int_equal(e->total, 3);

    e = TC_BAD("version: 1\ndefaults: { tier: free }\n"
               "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 2, 19, "defaults.tier: unknown tier 'free' (no tiers are "
              "defined; define it under 'tiers')");
}

static void test_tier_definitions(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "tiers:\n"
        "  odd: { unlimited: true, blocked: true }\n"
        "  typo: { unlimted: true }\n"
        "  num: 1\n"
        "  bad name: {}\n"
        "  yes11: { blocked: yes }\n"
        "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 3, 8, "tiers.odd: a tier cannot be both unlimited and "
              "blocked");
    TC_EXPECT(e, 4, 11, "tiers.typo: unknown field 'unlimted' (did you mean "
              "'unlimited'?)");
    TC_EXPECT(e, 5, 8, "tiers.num: expected a tier: a mapping such as {} or "
              "{ unlimited: true }; got '1'");
    TC_EXPECT(e, 6, 3, "tiers: expected a tier name of 1 to 63 characters");
    TC_EXPECT(e, 7, 21, "tiers.yes11.blocked: expected true or false; got "
              "'yes'");
    assert_int_equal(e->total, 5);
}

static void test_action_tier_lists(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "tiers: { pro: {}, gold: {} }\n"
        "actions:\n"
        "  a:\n"
        "    limits: [ { name: daily, limit: 1, window: 1d } ]\n"
        "    tiers:\n"
        "      pro: [ { name: hourly, limit: 5 } ]\n"          /* 7 */
        "      gold: { name: daily }\n"                        /* 8 */
        "  b:\n"
        "    limits: [ { name: daily, limit: 1, window: 1d } ]\n"
        "    tiers: [ pro ]\n");                               /* 11 */
    TC_EXPECT(e, 7, 14, "actions.a.tiers.pro[0]: missing required field "
              "'window' (no default limit of this name to inherit it from)");
    TC_EXPECT(e, 8, 13, "actions.a.tiers.gold: expected a list of limits "
              "replacing or adding to the action's limits; got a mapping");
    TC_EXPECT(e, 11, 12, "actions.b.tiers: expected a mapping of tier names "
              "to lists of limits; got a list");
    assert_int_equal(e->total, 3);

    /* an invalid default is reported once, not again for each tier entry */
    e = TC_BAD(
        "version: 1\n"
        "tiers: { pro: {} }\n"
        "actions:\n"
        "  a:\n"
        "    limits: [ { name: daily, limit: 0, window: 1d } ]\n"
        "    tiers: { pro: [ { name: daily, burst: 3 } ] }\n");
    TC_EXPECT(e, 5, 37, "limit: expected an integer from 1");
    TC_EXPECT(e, 6, 43, "burst: not valid for fixed_window");
    assert_int_equal(e->total, 2);
}

static void test_action_fields(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "actions:\n"
        "  a:\n"
        "    key: ipv7\n"                        /* 4 */
        "    on_error: ignore\n"                 /* 5 */
        "    limits: [ { name: n, limit: 1, window: 1s } ]\n"
        "  b:\n"
        "    ipv6_prefix: 64\n"                  /* 8 */
        "    limits: [ { name: n, limit: 1, window: 1s } ]\n"
        "  c:\n"
        "    key: ip\n"
        "    ipv4_prefix: 33\n"                  /* 12 */
        "    ipv6_prefix: -1\n"                  /* 13 */
        "    limits: [ { name: n, limit: 1, window: 1s } ]\n"
        "  bad/name:\n"                          /* 15 */
        "    limits: [ { name: n, limit: 1, window: 1s } ]\n");
    TC_EXPECT(e, 4, 10, "actions.a.key: expected one of string, ip, email; "
              "got 'ipv7'");
    TC_EXPECT(e, 5, 15, "actions.a.on_error: expected one of deny, allow; "
              "got 'ignore'");
    TC_EXPECT(e, 8, 18, "actions.b.ipv6_prefix: ipv6_prefix applies only to "
              "actions with key: ip");
    TC_EXPECT(e, 12, 18, "actions.c.ipv4_prefix: expected an integer from 0 "
              "to 32; got '33'");
    TC_EXPECT(e, 13, 18, "expected an integer from 0 to 128; got '-1'");
    TC_EXPECT(e, 15, 3, "actions: expected an action name of 1 to 63 "
              "characters A-Z a-z 0-9 _ . : -; got 'bad/name'");
    assert_int_equal(e->total, 6);
}

static void test_defaults_fields(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "defaults:\n"
        "  timezone: Europe/Atlantis\n"
        "  on_error: maybe\n"
        "  tz: UTC\n"
        "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 3, 13, "defaults.timezone: unknown time zone "
              "'Europe/Atlantis'");
    TC_EXPECT(e, 4, 13, "defaults.on_error: expected one of deny, allow; got "
              "'maybe'");
    TC_EXPECT(e, 5, 3, "defaults: unknown field 'tz'");
    assert_int_equal(e->total, 3);
}

static const char assign_head[] =
    "version: 1\n"
    "tiers: { pro: {} }\n"
    "actions:\n"
    "  net: { key: ip, limits: [ { name: n, limit: 1, window: 1s } ] }\n"
    "  mail: { key: email, limits: [ { name: n, limit: 1, window: 1s } ] }\n"
    "  s: { limits: [ { name: n, limit: 1, window: 1s } ] }\n"
    "assignments:\n";

/* The assignment `entry` on line 8 must give exactly one error at column
 * col whose message contains msg. */
static void bad_assignment(const char *entry, int col, const char *msg)
{
    char doc[2048];
    snprintf(doc, sizeof doc, "%s  - %s\n", assign_head, entry);
    print_message("assignment: %s\n", entry);
    const config_errors *e = TC_BAD(doc);
    TC_EXPECT(e, 8, col, msg);
    assert_int_equal(e->total, 1);
}

static void test_bad_assignments(void **state)
{
    bad_assignment("{ key: \"10.0.0.0/33\", action: net, tier: pro }", 12,
                   "assignments[0].key: invalid key pattern '10.0.0.0/33'");
    bad_assignment("{ key: \"10.0.0.0/8\", action: s, tier: pro }", 12,
                   "assignments[0].key: the CIDR pattern '10.0.0.0/8' can "
                   "only match actions with key: ip; action 's' has key: "
                   "string");
    bad_assignment("{ key: not-an-ip, action: net, tier: pro }", 12,
                   "'not-an-ip' is not a valid key for action 'net' (key: ip)");
    bad_assignment("{ key: Ann+x@Example.COM, action: mail, tier: pro }", 12,
                   "'Ann+x@Example.COM' never matches: action 'mail' "
                   "normalises keys to 'ann@example.com'");
    bad_assignment("{ key: k, action: nope, tier: pro }", 23,
                   "assignments[0].action: unknown action 'nope'");
    bad_assignment("{ key: k }", 5,
                   "assignments[0]: missing required field 'tier'");
    bad_assignment("{ tier: pro }", 5,
                   "assignments[0]: missing required field 'key'");
    bad_assignment("{ key: [a], tier: pro }", 12,
                   "assignments[0].key: expected a key, a CIDR such as");
    bad_assignment("{ key: \"\", tier: pro }", 12,
                   "expected a key of 1 to 4096 bytes without NUL; got ''");
    bad_assignment("{ key: \"a\\0b\", tier: pro }", 12, "got 'a\\x00b'");
    bad_assignment("{ key: k, tier: pro, until: 1 }", 26,
                   "assignments[0]: unknown field 'until'");
    bad_assignment("k", 5, "assignments[0]: expected an assignment such as");
    static const char *const bad_times[] = {
        "\"2027-02-29T00:00:00Z\"", "\"2027-01-01 00:00:00Z\"",
        "\"2027-01-01T00:00:00\"", "\"2027-01-01T00:00:00+01:00\"",
        "\"2027-01-01T24:00:00Z\"", "\"2027-01-01T00:00:00.1234Z\"",
        "\"1969-12-31T23:59:59Z\"", "\"2027-13-01T00:00:00Z\"",
        "\"2027-1-01T00:00:00Z\"", "\"tomorrow\"", "-5", "0", "1.5",
        "253402300800000",
    };
    for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
        char entry[128];
        snprintf(entry, sizeof entry, "{ key: k, tier: pro, expires: %s }",
                 bad_times[i]);
        bad_assignment(entry, 35, "assignments[0].expires: expected");
    }
    bad_assignment("{ key: k, tier: pro, expires: \"2027-01-01T00:00:00X\" }",
                   35, "expected a UTC time such as 2027-01-01T00:00:00Z or "
                   "epoch milliseconds; got '2027-01-01T00:00:00X'");
}

static void test_duplicate_assignments(void **state)
{
    char doc[2048];
    snprintf(doc, sizeof doc, "%s%s", assign_head,
             "  - { key: \"user:*\", tier: pro }\n"                  /* 8 */
             "  - { key: \"user:*\", action: s, tier: pro }\n"       /* 9 */
             "  - { key: \"user:*\", tier: pro }\n"                  /* 10 */
             "  - { key: \"user:*\", action: s, tier: pro }\n");     /* 11 */
    const config_errors *e = TC_BAD(doc);
    TC_EXPECT(e, 10, 5, "assignments[2]: duplicate assignment of key "
              "'user:*' for every action (first at 8:5)");
    TC_EXPECT(e, 11, 5, "assignments[3]: duplicate assignment of key "
              "'user:*' for action 's' (first at 9:5)");
    assert_int_equal(e->total, 2);
}

static void test_all_errors_reported_in_order(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "tiers: { pro: {} }\n"
        "actions:\n"
        "  signup:\n"
        "    key: ip\n"
        "    limits:\n"
        "      - { name: daily, limit: 0, window: 1d }\n"        /* 7 */
        "      - { name: weekly, limit: 5, window: 1y }\n"       /* 8 */
        "  api:\n"
        "    limits:\n"
        "      - { name: rate, algorithm: gcra, limit: 10, window: 1s, burst: -1 }\n"
        "    tiers: { gold: [] }\n"                              /* 12 */
        "assignments:\n"
        "  - { key: \"10.0.0.0/99\", action: signup, tier: pro }\n"  /* 14 */
        "  - { key: x, tier: pro, expires: never }\n");          /* 15 */
    assert_int_equal(e->total, 6);
    assert_int_equal(e->n, 6);
    static const int want[][2] = { { 7, 31 }, { 8, 43 }, { 11, 70 },
                                   { 12, 14 }, { 14, 12 }, { 15, 35 } };
    for (int i = 0; i < 6; i++) {
        assert_int_equal(e->e[i].line, want[i][0]);
        assert_int_equal(e->e[i].column, want[i][1]);
    }
    assert_non_null(strstr(e->e[0].msg, "actions.signup.limits[0].limit:"));
    assert_non_null(strstr(e->e[1].msg, "actions.signup.limits[1].window:"));
    assert_non_null(strstr(e->e[2].msg, "actions.api.limits[0].burst:"));
    assert_non_null(strstr(e->e[3].msg, "actions.api.tiers: unknown tier "
                                        "'gold'"));
    assert_non_null(strstr(e->e[4].msg, "assignments[0].key:"));
    assert_non_null(strstr(e->e[5].msg, "assignments[1].expires:"));
}

static void test_error_cap(void **state)
{
    char *doc = malloc(64 * 1024);
    assert_non_null(doc);
    size_t o = (size_t)sprintf(doc, "version: 1\nactions:\n  a:\n    limits:\n");
    for (int i = 0; i < 20; i++)
        o += (size_t)sprintf(doc + o, "      - { name: l%d, limit: 0, "
                             "window: 0s, mode: x, burst: 1, zz: 1 }\n", i);
    doc[o] = '\0';
    const config_errors *e = TC_BAD(doc);
    assert_int_equal(e->n, CONFIG_MAX_ERRORS);
    assert_int_equal(e->total, 100);
    for (int i = 1; i < e->n; i++)  /* sorted by place */
        assert_true(e->e[i - 1].line < e->e[i].line ||
                    (e->e[i - 1].line == e->e[i].line &&
                     e->e[i - 1].column <= e->e[i].column));
    free(doc);
}

static void test_messages_escape_and_utf8(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "actions:\n"
        "  a:\n"
        "    limits:\n"
        "      - { name: n, limit: 1, window: 1s, \"wi\\tndow\\u00e9\": 1 }\n");
    TC_EXPECT(e, 5, 42, "unknown field 'wi\\x09ndow\xc3\xa9'");
    /* a long value is shortened, never in the middle of a character */
    char doc[2048], val[400];
    size_t o = 0;
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(val + o, sizeof val - o, "\xc3\xa9");
    snprintf(doc, sizeof doc, "version: 1\nactions:\n  a:\n    limits:\n"
             "      - { name: n, limit: 1, window: 1s, mode: %s }\n", val);
    e = TC_BAD(doc);
    assert_int_equal(e->total, 1);
    const char *m = strstr(e->e[0].msg, "got '");
    assert_non_null(m);
    m += 5;
    size_t n = strlen(m);
    assert_true(n < 60);
    assert_string_equal(m + n - 4, "...'");
    for (const char *p = m; p < m + n - 4; p += 2)
        assert_memory_equal(p, "\xc3\xa9", 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_limit_fields),
        cmocka_unit_test(test_unknown_and_missing_fields),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_too_many_limits),
        cmocka_unit_test(test_too_many_memory_limits),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_duplicate_limit_names),
        cmocka_unit_test(test_tier_references),
        cmocka_unit_test(test_tier_definitions),
        cmocka_unit_test(test_action_tier_lists),
        cmocka_unit_test(test_action_fields),
        cmocka_unit_test(test_defaults_fields),
        cmocka_unit_test(test_bad_assignments),
        cmocka_unit_test(test_duplicate_assignments),
        cmocka_unit_test(test_all_errors_reported_in_order),
        cmocka_unit_test(test_error_cap),
        cmocka_unit_test(test_messages_escape_and_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
