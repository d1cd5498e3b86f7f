/*
 * test_yamlite.c - the YAML reader and the in-place limit edit of rltop
 * (tui/yamlite.c): tiers and limits of real rule files, edits in block and
 * flow style that change exactly one token, refusals of what the reader
 * does not understand, and (through the public API only) that an edited
 * file applies and the library then enforces the new limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "rlstore.h"
#include "yamlite.h"

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

/* The number of lines that differ between a and b (same line count). */
static int lines_changed(const char *a, const char *b)
{
    int n = 0;
    while (*a || *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || memcmp(a, b, la) != 0)
            n++;
        a += la + (ea ? 1 : 0);
        b += lb + (eb ? 1 : 0);
        if ((!ea) != (!eb))
            return 1000;
    }
    return n;
}

static void test_tiers(void **state)
{
    (void)state;
    char names[16][64], def[64], err[200];
    int n = yl_tiers(demo, demo_len, names, 16, def, sizeof def, err, sizeof err);
    assert_int_equal(n, 4);
    assert_string_equal(names[0], "free");
    assert_string_equal(names[1], "pro");
    assert_string_equal(names[2], "staff");
    assert_string_equal(names[3], "banned");
    assert_string_equal(def, "free");

    static const char flow[] = "version: 1\ndefaults: { tier: basic }\ntiers: { gold: {}, x: {} }\n";
    n = yl_tiers(flow, sizeof flow - 1, names, 16, def, sizeof def, err, sizeof err);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "gold");
    assert_string_equal(names[2], "basic");
}

static void test_limits(void **state)
{
    (void)state;
    yl_limit *l;
    int n;
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
    assert_int_equal(yl_limits(demo, demo_len, &l, &n, err, sizeof err), 0);
    assert_int_equal(n, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < n; i++) {
        assert_string_equal(l[i].action, want[i].a);
        assert_string_equal(l[i].tier, want[i].t);
        assert_string_equal(l[i].name, want[i].name);
        assert_int_equal(l[i].value, want[i].v);
        char digits[32];
        snprintf(digits, sizeof digits, "%lld", (long long)want[i].v);
        assert_int_equal(l[i].end - l[i].start, strlen(digits));
        assert_memory_equal(demo + l[i].start, digits, strlen(digits));
    }
    free(l);
}

static void check_edit(const char *text, const char *action, const char *tier, const char *name,
                       int64_t value, const char *want_line)
{
    char *out, err[300];
    size_t len;
    int line;
    int rc = yl_set_limit(text, strlen(text), action, tier, name, value, &out, &len, &line, err,
                          sizeof err);
    if (rc != 0)
        fail_msg("edit %s/%s/%s: %s", action, tier, name, err);
    assert_int_equal(strlen(out), len);
    assert_int_equal(lines_changed(text, out), 1);
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
    yl_node *root = NULL;
    char err[300] = "";
    if (yl_parse(bom, strlen(bom), &root, err, sizeof err) != 0)
        fail_msg("a file with a byte order mark: %s", err);
    assert_string_equal(yl_text(root, "version"), "1");
    yl_free(root);
    check_edit(bom, "api", "", "rate", 9,
               "      - { name: rate, algorithm: fixed_window, limit: 9, window: 1m }\r");
    char *out = NULL;
    size_t len;
    int line;
    assert_int_equal(yl_set_limit(bom, strlen(bom), "api", "", "rate", 9, &out, &len, &line, err,
                                  sizeof err), 0);
    assert_memory_equal(out, "\xEF\xBB\xBFversion: 1\r\n", 15);
    free(out);
    /* a mark anywhere else is text, and a mark alone is an empty file */
    assert_int_equal(yl_parse("\xEF\xBB\xBF", 3, &root, err, sizeof err), 0);
    assert_int_equal(root->n, 0);
    yl_free(root);
}

static void expect_refusal(const char *text, const char *action, const char *tier,
                           const char *name, const char *want)
{
    char *out = NULL, err[300];
    size_t len;
    int line;
    int rc = yl_set_limit(text, strlen(text), action, tier, name, 5, &out, &len, &line, err,
                          sizeof err);
    assert_int_equal(rc, -1);
    assert_null(out);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal(demo, "api", "banned", "rate", "does not replace limit 'rate'");
    expect_refusal(demo, "login", "pro", "burst", "uses the default limits");
    expect_refusal(demo, "nope", "", "daily", "action 'nope' is not in the active rules");
    expect_refusal(demo, "signup", "", "monthly", "has no default limit 'monthly'");
    static const char inherit[] =
        "actions:\n  a:\n    limits: [ { name: d, limit: 3, window: 1d } ]\n"
        "    tiers: { pro: [ { name: d, window: 2d } ] }\n";
    expect_refusal(inherit, "a", "pro", "d", "has no 'limit:' of its own");
    static const char quoted[] = "actions:\n  a:\n    limits: [ { name: d, limit: \"3\" } ]\n";
    expect_refusal(quoted, "a", "", "d", "not written as a plain integer");
    static const char anchor[] =
        "x: &base { limit: 3 }\nactions:\n  a:\n    limits: [ { name: d, limit: 3 } ]\n";
    expect_refusal(anchor, "a", "", "d", "anchors and aliases are not supported");
    static const char merge[] =
        "actions:\n  a:\n    limits:\n      - name: d\n        <<: {}\n        limit: 3\n";
    expect_refusal(merge, "a", "", "d", "merge keys");
    static const char tab[] = "actions:\n\ta:\n";
    expect_refusal(tab, "a", "", "d", "tab");
    static const char multi[] =
        "actions:\n  a:\n    limits:\n      - name: d\n        limit: 3\n"
        "        comment: a long\n          text\n";
    expect_refusal(multi, "a", "", "d", "line 7: unexpected indentation");
    static const char docs[] = "a: 1\n---\nb: 2\n";
    expect_refusal(docs, "a", "", "d", "more than one document");
    static const char block[] = "actions:\n  a:\n    note: |\n      x\n";
    expect_refusal(block, "a", "", "d", "block scalars");
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
        yl_node *root;
        if (yl_parse(buf, cut, &root, err, sizeof err) == 0)
            yl_free(root);
        if (yl_set_limit(buf, cut, "signup", "", "weekly", 77, &out, &len, &line, err,
                         sizeof err) == 0) {
            assert_true(lines_changed(buf, out) <= 1);
            free(out);
        }
    }
    free(buf);
}

/* The edited demo rules apply, and the library enforces the new limits. */
static void test_apply(void **state)
{
    (void)state;
    char dir[] = "/tmp/rltop-yl-XXXXXX", path[256], *y1, *y2, err[300];
    size_t l1, l2;
    int line;
    rls_db *db;
    rls_options opt;
    rls_rows *info = NULL, *limits = NULL;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.db", dir);
    rls_options_init(&opt);
    assert_int_equal(rls_open(&db, path, &opt), RLS_OK);
    assert_int_equal(yl_set_limit(demo, demo_len, "signup", "", "daily", 3, &y1, &l1, &line, err,
                                  sizeof err), 0);
    assert_int_equal(yl_set_limit(y1, l1, "api", "pro", "rate", 250, &y2, &l2, &line, err,
                                  sizeof err), 0);
    assert_int_equal(rls_rules_apply(db, y2, l2, "edited", NULL, NULL), RLS_OK);
    /* a free key: 3 sign-ups a day */
    int64_t t = 1795428000000LL;
    rls_result r;
    int admitted = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(rls_check_at(db, "signup", "203.0.113.50", 1, t, &r), RLS_OK);
        admitted += r.allowed;
    }
    assert_int_equal(admitted, 3);
    /* a pro API key: rate 250 */
    assert_int_equal(rls_explain_at(db, "api", "user:pro:1", t, &info, &limits), RLS_OK);
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
    free(y1);
    free(y2);
    rls_close(db);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiers),       cmocka_unit_test(test_limits),
        cmocka_unit_test(test_edit_demo),   cmocka_unit_test(test_edit_shapes),
        cmocka_unit_test(test_refusals),    cmocka_unit_test(test_damage),
        cmocka_unit_test(test_apply),       cmocka_unit_test(test_byte_order_mark),
    };
    return cmocka_run_group_tests_name("yamlite", tests, setup, teardown);
}
