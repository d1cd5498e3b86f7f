/*
 * test_config_yaml.c - the YAML loader against hostile or broken input:
 * aliases and anchors (billion laughs), tags, deep nesting, oversized input,
 * binary garbage, invalid UTF-8, syntax errors, empty and multi-document
 * streams, random mutations of a valid file, and out of memory at every
 * allocation (ours and libyaml's) with nothing leaked.
 */
#include "testutil.h"
#include "config.h"

#include <yaml.h>
#include "config_int.h"
#include "test_config_util.h"

/* libyaml allocates through these exported functions: defining them here
 * routes its allocations through the loader's fault injection too. */
void *yaml_malloc(size_t size);
void *yaml_realloc(void *ptr, size_t size);
yaml_char_t *yaml_strdup(const yaml_char_t *str);

void *yaml_malloc(size_t size)
{
    return rls__config_fail_now() ? NULL : malloc(size ? size : 1);
}

void *yaml_realloc(void *ptr, size_t size)
{
    if (rls__config_fail_now())
        return NULL;
    return ptr ? realloc(ptr, size ? size : 1) : malloc(size ? size : 1);
}

yaml_char_t *yaml_strdup(const yaml_char_t *str)
{
    if (!str)
        return NULL;
    return rls__config_fail_now() ? NULL : (yaml_char_t *)strdup((const char *)str);
}

static const char good_tail[] =
    "actions: { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n";

static void test_aliases_refused(void **state)
{
    const config_errors *e = TC_BAD(
        "version: 1\n"
        "x: &a [1, 2]\n"
        "y: *a\n"
        "actions: { a: { limits: [ &l { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 2, 4, "anchors are not allowed (found '&a')");
    TC_EXPECT(e, 3, 4, "aliases are not allowed (found '*a')");
    TC_EXPECT(e, 4, 27, "anchors are not allowed (found '&l')");

    /* billion laughs: refused without expanding anything */
    const config_errors *b = TC_BAD(
        "version: 1\n"
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
        "actions: *i\n");
    TC_EXPECT(b, 3, 8, "aliases are not allowed (found '*a')");
    /* 9 anchors, 73 aliases, 9 unknown fields a..i: all counted, the
     * first CONFIG_MAX_ERRORS kept */
    assert_int_equal(b->total, 9 + 73 + 9);
    assert_int_equal(b->n, CONFIG_MAX_ERRORS);
    TC_EXPECT(b, 9, 11, "aliases are not allowed (found '*g')");
    assert_false(tc_has(b, 11, 0, "aliases"));

    /* an alias used as a key or a value is not reported a second time */
    e = TC_BAD("version: 1\nv: &v 1\n*v : 2\nactions: *v\n");
    assert_int_equal(e->total, 4);  /* &v, *v, *v, unknown field 'v' */
}

static void test_tags_refused(void **state)
{
    const config_errors *e = TC_BAD(
        "version: !!int 1\n"
        "actions: !custom { a: { limits: [ { name: n, limit: 1, window: 1s } ] } }\n");
    TC_EXPECT(e, 1, 10, "explicit tags are not allowed (found "
              "'tag:yaml.org,2002:int')");
    TC_EXPECT(e, 2, 10, "explicit tags are not allowed (found '!custom')");
    assert_int_equal(e->total, 2);
}

static char *nested(int depth, const char *open, const char *close)
{
    size_t lo = strlen(open), lc = strlen(close);
    char *s = malloc((size_t)depth * (lo + lc) + 64);
    size_t o = 0;
    assert_non_null(s);
    o += (size_t)sprintf(s, "version: 1\nx: ");
    for (int i = 0; i < depth; i++, o += lo)
        memcpy(s + o, open, lo);
    s[o++] = '1';
    for (int i = 0; i < depth; i++, o += lc)
        memcpy(s + o, close, lc);
    s[o++] = '\n';
    s[o] = '\0';
    return s;
}

static void test_deep_nesting(void **state)
{
    /* the root mapping is level 1: 15 lists under it are fine */
    char *s = nested(CONFIG_MAX_DEPTH - 1, "[", "]");
    const config_errors *e = TC_BAD(s);
    TC_EXPECT(e, 2, 1, "unknown field 'x'");
    assert_false(tc_has(e, -1, 0, "nesting"));
    free(s);

    s = nested(CONFIG_MAX_DEPTH, "[", "]");
    e = TC_BAD(s);
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 4 + CONFIG_MAX_DEPTH - 1, "nesting deeper than 16 levels");
    free(s);

    s = nested(200000, "{a: ", "}");
    e = TC_BAD(s);
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 4 + 4 * (CONFIG_MAX_DEPTH - 1),
              "nesting deeper than 16 levels");
    free(s);
}

static void test_oversized_input(void **state)
{
    size_t big = 5u << 20;
    char *s = malloc(big);
    assert_non_null(s);
    memset(s, '#', big);
    const config_errors *e = TC_BADN(s, big);
    assert_int_equal(e->total, 1);
    assert_int_equal(e->e[0].line, 0);
    assert_string_equal(e->e[0].msg, "the configuration is 5242880 bytes; at "
                        "most 4194304 are accepted");
    e = TC_BADN(s, CONFIG_MAX_BYTES + 1);
    TC_EXPECT(e, 0, 0, "4194305 bytes");

    /* exactly the maximum is read: a valid file padded with a comment */
    size_t o = (size_t)sprintf(s, "version: 1\n%s#", good_tail);
    memset(s + o, 'x', CONFIG_MAX_BYTES - o - 1);
    s[CONFIG_MAX_BYTES - 1] = '\n';
    ruleset *rs = NULL;
    assert_int_equal(rls__config_parse(s, CONFIG_MAX_BYTES, &rs, &tc_errs), 0);
    rls__ruleset_free(rs);
    free(s);
}

static void test_binary_garbage(void **state)
{
    unsigned char buf[4096];
    uint32_t x = 2463534242u;
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            buf[i] = (unsigned char)x;
        }
        const config_errors *e = TC_BADN((const char *)buf, sizeof buf);
        assert_int_equal(e->total, 1);
        assert_true(e->e[0].line >= 1);
        assert_true(e->e[0].column >= 1);
        assert_non_null(strstr(e->e[0].msg, "invalid YAML"));
    }
    /* an ELF header */
    const config_errors *e = TC_BADN("\x7f" "ELF\x02\x01\x01", 7);
    TC_EXPECT(e, 1, 1, "invalid YAML: control characters are not allowed");
}

/* A UTF-8 byte order mark (as editors on Windows write) is skipped; lines
 * and columns are what an editor shows, byte offsets the file's.  UTF-16
 * and UTF-32 are refused by name, never decoded. */
static void test_byte_order_mark(void **state)
{
    static const char rules[] = "\xEF\xBB\xBFversion: 1\n" "actions: { a: { limits: "
                                "[ { name: n, limit: 1, window: 1s } ] } }\n";
    rls__ruleset_free(TC_OK(rules));
    rls__ruleset_free(TC_OK("\xEF\xBB\xBFversion: 1\r\nactions:\r\n  a:\r\n    limits:\r\n"
          "      - { name: n, limit: 1, window: 1s }\r\n"));
    const config_errors *e = TC_BAD("\xEF\xBB\xBFversion: 1\nactions: 7\n");
    TC_EXPECT(e, 2, 10, "actions");
    e = TC_BAD("\xEF\xBB\xBF  version: 1\n x: 2\n");
    TC_EXPECT(e, 2, 2, "invalid YAML");
    e = TC_BAD("\xEF\xBB\xBF" "version: 1\n\x01");
    TC_EXPECT(e, 2, 1, "control characters are not allowed (0x1 at byte 14)");
    static const char *const empty[] = {"\xEF\xBB\xBF", "\xEF\xBB\xBF\n", "\xEF\xBB\xBF# c\r\n"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        e = TC_BAD(empty[i]);
        assert_int_equal(e->total, 1);
        assert_string_equal(e->e[0].msg, "empty configuration");
    }
    e = TC_BAD("\xEF\xBB\xBF\xEF\xBB\xBFversion: 1\n");  /* one mark only */
    assert_int_equal(e->total, 1);
    e = TC_BADN("\xff\xfev\0e\0r\0", 8);
    TC_EXPECT(e, 1, 1, "the file is UTF-16 text (it starts with a byte order mark); "
              "save it as UTF-8");
    e = TC_BADN("\xfe\xff\0v\0e", 6);
    TC_EXPECT(e, 1, 1, "the file is UTF-16 text");
    e = TC_BADN("\xff\xfe\0\0v\0\0\0", 8);
    TC_EXPECT(e, 1, 1, "the file is UTF-32 text");
    e = TC_BADN("\0\0\xfe\xff\0\0\0v", 8);
    TC_EXPECT(e, 1, 1, "the file is UTF-32 text");
    e = TC_BADN("\xff\xfe", 2);
    TC_EXPECT(e, 1, 1, "the file is UTF-16 text");
}

static void test_invalid_utf8(void **state)
{
    const config_errors *e = TC_BAD("version: 1\nactions:\n  a\xff: 1\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 3, 4, "invalid YAML: invalid leading UTF-8 octet (0xFF at "
              "byte 23)");
    e = TC_BAD("version: 1\n# caf\xc3\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 7, "invalid YAML: invalid trailing UTF-8 octet (0xA at "
              "byte 17)");
    e = TC_BAD("version: 1\n# caf\xc3");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 6, "invalid YAML: incomplete UTF-8 octet sequence");
    e = TC_BAD("version: 1\nx: \xc0\xaf\n");  /* overlong '/' */
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 4, "invalid YAML");
    e = TC_BAD("version: 1\nx: \xed\xa0\x80\n");  /* a UTF-16 surrogate */
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 4, "invalid YAML");
    e = TC_BADN("version: 1\0\n", 12);
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 1, 11, "invalid YAML: control characters are not allowed");
}

static void test_syntax_errors(void **state)
{
    const config_errors *e = TC_BAD("version: 1\nactions: [a, b\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 3, 1, "invalid YAML: ");
    TC_EXPECT(e, 3, 1, " flow sequence started at 2:10)");
    e = TC_BAD("version: 1\nactions:\n  a: 1\n b: 2\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 4, 2, "invalid YAML: ");
    e = TC_BAD("version: 1\nactions: a: b\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 11, "invalid YAML: ");
    e = TC_BAD("version: 1\n\tactions: {}\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 1, "invalid YAML: ");
    /* a syntax error late in the file replaces earlier findings */
    e = TC_BAD("version: 1\nx: &a 1\ny: *a\nz: [\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 5, 1, "invalid YAML");
}

static void test_empty_and_streams(void **state)
{
    static const char *const empty[] = {
        "", "\n\n", "# only a comment\n", "---\n", "~\n", "--- null\n",
        "---\n...\n", "  \n",
    };
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        const config_errors *e = TC_BAD(empty[i]);
        assert_int_equal(e->total, 1);
        assert_int_equal(e->e[0].line, 0);
        assert_string_equal(e->e[0].msg, "empty configuration");
    }
    const config_errors *e = TC_BAD("version: 1\n---\nversion: 1\n");
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 1, "only one YAML document is allowed");
    e = TC_BAD("\"just a string\"\n");
    TC_EXPECT(e, 1, 1, "expected a mapping with version, tiers, actions and "
              "assignments at the top level; got 'just a string'");
}

static void test_many_nodes_and_bounds(void **state)
{
    /* 10001 actions: refused as a whole, one error */
    size_t cap = 10002u * 64, o;
    char *s = malloc(cap);
    assert_non_null(s);
    o = (size_t)sprintf(s, "version: 1\nactions:\n");
    for (int i = 0; i < 10001; i++)
        o += (size_t)sprintf(s + o, "  a%d: {}\n", i);
    const config_errors *e = TC_BAD(s);
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 3, 3, "actions: expected 1 to 10000 actions; got 10001");
    free(s);

    /* more than a million nodes: a fatal error, not gigabytes of tree */
    cap = 4u << 20;
    s = malloc(cap);
    assert_non_null(s);
    o = (size_t)sprintf(s, "version: 1\nx: [");
    while (o + 8 < cap - 8)
        o += (size_t)sprintf(s + o, "1,");
    o += (size_t)sprintf(s + o, "1]\n");
    e = TC_BADN(s, o);
    assert_int_equal(e->total, 1);
    TC_EXPECT(e, 2, 0, "the document has more than 1000000 YAML nodes");
    free(s);
}

static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : *p >= 0xF0 ? 3 : *p >= 0xE0 ? 2
              : *p >= 0xC2 ? 1 : -1;
        if (n < 0)
            return 0;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80)
                return 0;
    }
    return 1;
}

static char *demo_text(size_t *len)
{
    FILE *f = fopen("examples/demo.yaml", "rb");
    char *buf = malloc(1 << 16);
    assert_non_null(f);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    assert_true(*len > 100);
    return buf;
}

/* Random byte edits and cuts of a valid file: never a crash, a result or
 * a clean list of errors with places inside the file. */
static void test_mutations(void **state)
{
    size_t len;
    char *demo = demo_text(&len);
    char *buf = malloc(len + 1);
    uint32_t x = 88172645u;
    int refused = 0;
    assert_non_null(buf);
    for (int round = 0; round < 3000; round++) {
        size_t n = len;
        memcpy(buf, demo, len);
        int edits = 1 + round % 4;
        for (int k = 0; k < edits; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            size_t at = x % len;
            static const char pick[] = "{}[]:,-&*!#'\"\n \t0x~|>?%@`\\\xc3\xff";
            buf[at] = pick[(x >> 16) % (sizeof pick - 1)];
        }
        if (round % 7 == 0)
            n = x % len;  /* truncated */
        ruleset *rs = NULL;
        int rc = rls__config_parse(buf, n, &rs, &tc_errs);
        if (rc == 0) {
            assert_non_null(rs);
            rls__ruleset_free(rs);
            continue;
        }
        assert_int_equal(rc, -1);
        assert_null(rs);
        refused++;
        assert_true(tc_errs.n >= 1 && tc_errs.n <= CONFIG_MAX_ERRORS);
        assert_true(tc_errs.total >= tc_errs.n);
        for (int i = 0; i < tc_errs.n; i++) {
            const config_error *er = &tc_errs.e[i];
            assert_true(er->line >= 0 && er->line <= 200);
            assert_true(er->line == 0 || er->column >= 1);
            assert_true(strlen(er->msg) > 0 && strlen(er->msg) < sizeof er->msg);
            assert_true(valid_utf8(er->msg));
        }
    }
    assert_true(refused > 1000);
    free(buf);
    free(demo);
}

/* Fails allocation n = 0, 1, 2, ... until the parse succeeds: each failure
 * must be -2 with no result, and ASan/valgrind see no leak. */
static void oom_loop(const char *text, size_t len, int want)
{
    long n;
    int saw_oom = 0;
    for (n = 0; n < 200000; n++) {
        ruleset *rs = (ruleset *)1;
        rls__config_fail_after(n);
        int rc = rls__config_parse(text, len, &rs, &tc_errs);
        rls__config_fail_after(-1);
        if (rc == want) {
            if (rs != (ruleset *)1)
                rls__ruleset_free(rs);
            break;
        }
        assert_int_equal(rc, -2);
        assert_null(rs);
        assert_int_equal(tc_errs.n, 1);
        assert_string_equal(tc_errs.e[0].msg, "out of memory");
        saw_oom++;
    }
    assert_true(n < 200000);
    assert_true(saw_oom > 10);
}

static void test_out_of_memory(void **state)
{
    size_t len;
    char *demo = demo_text(&len);
    oom_loop(demo, len, 0);
    free(demo);
    static const char bad[] =
        "version: 1\ntiers: { a: {}, b: {} }\n"
        "actions: { x: { limits: [ { name: n, limit: 0, window: 1s } ],\n"
        "                tiers: { a: [ { name: n } ] } } }\n"
        "assignments: [ { key: k, tier: c }, { key: k, tier: a } ]\n";
    oom_loop(bad, strlen(bad), -1);
    static const char anchors[] = "version: 1\nx: &a [1]\ny: *a\n";
    oom_loop(anchors, strlen(anchors), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aliases_refused),
        cmocka_unit_test(test_tags_refused),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_oversized_input),
        cmocka_unit_test(test_binary_garbage),
        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_empty_and_streams),
        cmocka_unit_test(test_many_nodes_and_bounds),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
