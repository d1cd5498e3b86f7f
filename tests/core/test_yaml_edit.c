/*
 * test_yaml_edit.c - the limit values a rule file writes and the in-place
 * edit of one (core/yaml_edit.c): the limits of real rule files, edits in
 * block and flow style that change exactly one token (a byte order mark,
 * CRLF and multi-byte text kept), refusals of what is not written or not
 * understood, damaged input, and out of memory at every allocation.
 * (Moved from the tests of rltop's former YAML reader; the apply of an
 * edited file and its enforcement are in
 * tests/integration/test_rules_edit.c.)
 */
#include "testutil.h"
#include "config_int.h"
#include "yaml_edit.h"

static char *demo;
static size_t demo_len;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[*len] = '\0';
    return buf;
}

static int setup(void **state)
{
    (void)state;
    const char *root = getenv("RLS_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/demo.yaml", root ? root : ".");
    demo = slurp(path, &demo_len);
    return demo ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(demo);
    return 0;
}


static void test_limits(void **state)
{
    (void)state;
    yedit_value *l;
    int n, k = 0, nb = 0;
    char err[200];
    static const struct { const char *a, *t, *name; int64_t v; } want[] = {
        {"signup", "", "daily", 20},         {"signup", "", "weekly", 100},
        {"signup", "pro", "daily", 200},     {"signup", "pro", "weekly", 1000},
        {"login", "", "burst", 5},           {"login", "", "hourly", 20},
        {"api", "", "rate", 10},             {"api", "", "daily", 50000},
        {"api", "pro", "rate", 100},         {"api", "pro", "daily", 2000000},
        {"mail.send", "", "daily", 100},     {"mail.send", "", "weekly", 500},
        {"mail.send", "", "burst", 30},      {"mail.send", "pro", "daily", 2000},
        {"mail.send", "pro", "weekly", 10000},
    };
    assert_int_equal(rls__yedit_list(demo, demo_len, &l, &n, err, sizeof err), 0);
    for (int i = 0; i < n; i++) {
        char digits[32];
        snprintf(digits, sizeof digits, "%lld", (long long)l[i].value);
        assert_int_equal(l[i].end - l[i].start, strlen(digits));
        assert_memory_equal(demo + l[i].start, digits, strlen(digits));
        if (strcmp(l[i].field, "burst") == 0) {
            /* the written bursts: api's rate, its pro replacement, and
             * mail.send's token bucket */
            static const int64_t bursts[] = {20, 200, 10};
            assert_true(nb < 3);
            assert_string_equal(l[i].action, nb < 2 ? "api" : "mail.send");
            assert_string_equal(l[i].name, nb < 2 ? "rate" : "burst");
            assert_int_equal(l[i].value, bursts[nb]);
            nb++;
            continue;
        }
        assert_string_equal(l[i].field, "limit");
        assert_true(k < (int)(sizeof want / sizeof want[0]));
        assert_string_equal(l[i].action, want[k].a);
        assert_string_equal(l[i].tier, want[k].t);
        assert_string_equal(l[i].name, want[k].name);
        assert_int_equal(l[i].value, want[k].v);
        k++;
    }
    assert_int_equal(k, (int)(sizeof want / sizeof want[0]));
    assert_int_equal(nb, 3);
    assert_int_equal(n, k + nb);
    free(l);
}

static void check_edit_field(const char *text, const char *action, const char *tier,
                             const char *name, const char *field, int64_t value,
                             const char *want_line)
{
    char *out, err[300];
    size_t len;
    int line;
    int rc = rls__yedit_set(text, strlen(text), action, tier, name, field, value, &out, &len,
                            &line, err, sizeof err);
    if (rc != 0)
        fail_msg("edit %s/%s/%s: %s", action, tier, name, err);
    assert_int_equal(strlen(out), len);
    assert_int_equal(tu_lines_changed(text, out), 1);
    /* the changed line reads as wanted */
    const char *p = out;
    for (int i = 1; i < line; i++)
        p = strchr(p, '\n') + 1;
    const char *e = strchr(p, '\n');
    size_t ll = e ? (size_t)(e - p) : strlen(p);
    if (ll != strlen(want_line) || memcmp(p, want_line, ll) != 0)
        fail_msg("line %d is '%.*s', expected '%s'", line, (int)ll, p, want_line);
    free(out);
}

static void check_edit(const char *text, const char *action, const char *tier, const char *name,
                       int64_t value, const char *want_line)
{
    check_edit_field(text, action, tier, name, "limit", value, want_line);
}

static void test_edit_demo(void **state)
{
    (void)state;
    check_edit(demo, "signup", "", "weekly", 150, "        limit: 150");
    check_edit(demo, "signup", "", "daily", 7,
               "      - { name: daily,  algorithm: fixed_window, limit: 7,  window: 1d, block_for: 1h }");
    check_edit(demo, "signup", "pro", "daily", 300,
               "        - { name: daily, limit: 300 }      # window and block_for inherited");
    check_edit(demo, "api", "pro", "daily", 9, "        - { name: daily, limit: 9, durability: full }");
    check_edit(demo, "mail.send", "", "burst", 12345, "        limit: 12345");
    /* NULL is the default limits too; a burst is edited the same way */
    check_edit(demo, "signup", NULL, "weekly", 151, "        limit: 151");
    check_edit_field(demo, "api", "pro", "rate", "burst", 300,
                     "        - { name: rate, limit: 100, burst: 300 }");
}

static void test_edit_shapes(void **state)
{
    (void)state;
    /* the rule file of the CLI tests: a tier as a one-line flow sequence */
    static const char cli[] =
        "version: 1\n"
        "defaults: { tier: free, timezone: UTC }\n"
        "tiers:\n  free: {}\n  pro: {}\n"
        "actions:\n"
        "  signup:\n"
        "    key: ip\n"
        "    limits:\n"
        "      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }\n"
        "    tiers:\n"
        "      pro: [ { name: daily, limit: 10 } ]\n"
        "  login:\n"
        "    limits:\n"
        "    - name: burst\n"            /* a sequence at its key's column */
        "      limit: 2 # two\n"
        "      window: 1m\n"
        "    - {name: hourly, limit: 5, window: 1h}\n";
    check_edit(cli, "signup", "pro", "daily", 11, "      pro: [ { name: daily, limit: 11 } ]");
    check_edit(cli, "login", "", "burst", 3, "      limit: 3 # two");
    check_edit(cli, "login", "", "hourly", 50, "    - {name: hourly, limit: 50, window: 1h}");

    /* quoted keys and names, CRLF line ends, a multi-line flow sequence */
    static const char odd[] =
        "version: 1\r\n"
        "actions:\r\n"
        "  \"mail.send\":\r\n"
        "    limits: [\r\n"
        "      { name: 'daily', limit: 100 },\r\n"
        "      { \"name\": \"weekly\", \"limit\": 500 }\r\n"
        "    ]\r\n";
    check_edit(odd, "mail.send", "", "weekly", 501, "      { \"name\": \"weekly\", \"limit\": 501 }\r");
    check_edit(odd, "mail.send", "", "daily", 99, "      { name: 'daily', limit: 99 },\r");

    /* multi-byte text before the value: libyaml counts characters, the
     * edit bytes */
    static const char utf8[] =
        "# Größen: 10 €\n"
        "actions:\n"
        "  a:\n"
        "    comment: \"Ünïcödé ✓\"\n"
        "    limits: [ { name: d, limit: 3, window: 1d } ]\n";
    check_edit(utf8, "a", "", "d", 42, "    limits: [ { name: d, limit: 42, window: 1d } ]");

    /* what rltop's reader refused and the library's reads: a plain scalar
     * over two lines and a block scalar stay as they were */
    static const char multi[] =
        "actions:\n  a:\n    limits:\n      - name: d\n        limit: 3\n"
        "        comment: a long\n          text\n    note: |\n      x\n";
    check_edit(multi, "a", "", "d", 4, "        limit: 4");
}

/* A rule file saved with a UTF-8 byte order mark (the library accepts and
 * stores it): read and edited like any other, the mark kept. */
static void test_byte_order_mark(void **state)
{
    (void)state;
    static const char bom[] =
        "\xEF\xBB\xBFversion: 1\r\n"
        "actions:\r\n"
        "  api:\r\n"
        "    limits:\r\n"
        "      - { name: rate, algorithm: fixed_window, limit: 4, window: 1m }\r\n";
    yedit_value *l = NULL;
    int n;
    char err[300] = "";
    if (rls__yedit_list(bom, strlen(bom), &l, &n, err, sizeof err) != 0)
        fail_msg("a file with a byte order mark: %s", err);
    assert_int_equal(n, 1);
    assert_int_equal(l[0].value, 4);
    assert_int_equal(l[0].line, 5);
    assert_memory_equal(bom + l[0].start, "4", 1);
    free(l);
    check_edit(bom, "api", "", "rate", 9,
               "      - { name: rate, algorithm: fixed_window, limit: 9, window: 1m }\r");
    char *out = NULL;
    size_t len;
    int line;
    assert_int_equal(rls__yedit_set(bom, strlen(bom), "api", "", "rate", "limit", 9, &out, &len,
                                    &line, err, sizeof err), 0);
    assert_memory_equal(out, "\xEF\xBB\xBFversion: 1\r\n", 15);
    free(out);
    /* a mark alone is an empty file: nothing written, nothing to edit */
    assert_int_equal(rls__yedit_list("\xEF\xBB\xBF", 3, &l, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    free(l);
}

/* A refusal: -1 when the value is not written there, -3 when the file or
 * value cannot be edited as text (yaml_edit.h). */
static void expect_refusal_field(const char *text, const char *action, const char *tier,
                                 const char *name, const char *field, const char *want)
{
    static const char *const not_written[] = {
        "does not replace", "uses the default limits", "is not in the active rules",
        "has no default limit", "of its own", NULL};
    int want_rc = -3;
    for (int i = 0; not_written[i]; i++)
        if (strstr(want, not_written[i]))
            want_rc = -1;
    char *out = NULL, err[300];
    size_t len;
    int line;
    int rc = rls__yedit_set(text, strlen(text), action, tier, name, field, 5, &out, &len, &line,
                            err, sizeof err);
    assert_int_equal(rc, want_rc);
    assert_null(out);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void expect_refusal(const char *text, const char *action, const char *tier,
                           const char *name, const char *want)
{
    expect_refusal_field(text, action, tier, name, "limit", want);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal(demo, "api", "banned", "rate", "does not replace limit 'rate'");
    expect_refusal(demo, "login", "pro", "burst", "uses the default limits");
    expect_refusal(demo, "nope", "", "daily", "action 'nope' is not in the active rules");
    expect_refusal(demo, "signup", "", "monthly", "has no default limit 'monthly'");
    expect_refusal_field(demo, "signup", "", "daily", "burst", "has no 'burst:' of its own");
    expect_refusal_field(demo, "signup", "", "daily", "window", "cannot be edited");
    static const char inherit[] =
        "actions:\n  a:\n    limits: [ { name: d, limit: 3, window: 1d } ]\n"
        "    tiers: { pro: [ { name: d, window: 2d } ] }\n";
    expect_refusal(inherit, "a", "pro", "d", "has no 'limit:' of its own");
    static const char quoted[] = "actions:\n  a:\n    limits: [ { name: d, limit: \"3\" } ]\n";
    expect_refusal(quoted, "a", "", "d", "not written as a plain integer");
    static const char anchor[] =
        "x: &base { limit: 3 }\nactions:\n  a:\n    limits: [ { name: d, limit: 3 } ]\n";
    expect_refusal(anchor, "a", "", "d", "line 1: anchors are not allowed");
    static const char alias[] =
        "actions:\n  a:\n    limits: [ { name: d, limit: *b } ]\n";
    expect_refusal(alias, "a", "", "d", "aliases are not allowed");
    static const char merge[] =
        "actions:\n  a:\n    limits:\n      - name: d\n        <<: {}\n        limit: 3\n";
    expect_refusal(merge, "a", "", "d", "line 5: merge keys");
    static const char tab[] = "actions:\n\ta:\n";
    expect_refusal(tab, "a", "", "d", "tab");
    static const char docs[] = "a: 1\n---\nb: 2\n";
    expect_refusal(docs, "a", "", "d", "only one YAML document");
    static const char dup[] =
        "actions:\n  a:\n    limits: [ { name: d, limit: 3, limit: 4 } ]\n";
    expect_refusal(dup, "a", "", "d", "duplicate key");
    static const char block[] = "actions:\n  a:\n    note: |\n      x\n";
    expect_refusal(block, "a", "", "d", "has no default limit 'd'");
    /* a value below 1 is never written */
    char *out = NULL, err[300];
    size_t len;
    int line;
    assert_int_equal(rls__yedit_set(demo, demo_len, "signup", "", "daily", "limit", 0, &out,
                                    &len, &line, err, sizeof err), -3);
    assert_null(out);
    assert_non_null(strstr(err, "at least 1"));
}

/* Damaged input never crashes the reader, and an accepted edit of a
 * damaged file still changes only the digits. */
static void test_damage(void **state)
{
    (void)state;
    char *buf = malloc(demo_len + 1), *out, err[300];
    size_t len;
    int line;
    unsigned seed = 7;
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, demo, demo_len + 1);
        size_t cut = demo_len;
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % demo_len;
            static const char junk[] = " -:{}[],#'\"\n\tx&*|";
            buf[at] = junk[(seed >> 3) % (sizeof junk - 1)];
        }
        if (round % 3 == 0)
            cut = (seed >> 4) % demo_len;
        buf[cut] = '\0';
        yedit_value *l;
        int n;
        if (rls__yedit_list(buf, cut, &l, &n, err, sizeof err) == 0)
            free(l);
        if (rls__yedit_set(buf, cut, "signup", "", "weekly", "limit", 77, &out, &len, &line, err,
                           sizeof err) == 0) {
            assert_true(tu_lines_changed(buf, out) <= 1);
            free(out);
        }
    }
    free(buf);
}

/* Out of memory at every allocation: -2, nothing returned, nothing leaked
 * (the sanitizer pass checks the last). */
static void test_out_of_memory(void **state)
{
    (void)state;
    char *out = NULL, err[300];
    size_t len;
    int line, rc = -2, n = 0;
    yedit_value *l = NULL;
    for (long k = 0; rc == -2; k++) {
        rls__config_fail_after(k);
        rc = rls__yedit_set(demo, demo_len, "api", "pro", "daily", "limit", 9, &out, &len, &line,
                            err, sizeof err);
        rls__config_fail_after(-1);
        if (rc == -2)
            assert_null(out);
    }
    assert_int_equal(rc, 0);
    free(out);
    rc = -2;
    for (long k = 0; rc == -2; k++) {
        rls__config_fail_after(k);
        rc = rls__yedit_list(demo, demo_len, &l, &n, err, sizeof err);
        rls__config_fail_after(-1);
        if (rc == -2)
            assert_null(l);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, 18);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits),        cmocka_unit_test(test_edit_demo),
        cmocka_unit_test(test_edit_shapes),   cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_damage),        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests_name("yaml_edit", tests, setup, teardown);
}
