/*
 * test_keynorm.c - key kinds, IP / email / string normalisation, patterns
 * (exact, CIDR, prefix) with matching and ranks, display escaping.
 */
#include "testutil.h"
#include "keynorm.h"

static char out[128];

static const char *norm(int kind, int p4, int p6, const char *key)
{
    const char *why = NULL;
    int n = rls__key_normalize(kind, p4, p6, key, strlen(key), out, sizeof out, &why);
    if (n < 0)
        fail_msg("'%s' rejected (%d): %s", key, n, why ? why : "(null)");
    assert_int_equal(n, (int)strlen(out));
    return out;
}

static const char *ip(const char *key) { return norm(KEY_IP, 32, 128, key); }

static const char *bad(int kind, const char *key, size_t len)
{
    const char *why = NULL;
    assert_int_equal(rls__key_normalize(kind, 32, 64, key, len, out, sizeof out, &why), -1);
    assert_non_null(why);
    return why;
}

static void test_kinds(void **state)
{
    (void)state;
    assert_string_equal(rls__key_kind_name(KEY_STRING), "string");
    assert_string_equal(rls__key_kind_name(KEY_IP), "ip");
    assert_string_equal(rls__key_kind_name(KEY_EMAIL), "email");
    assert_null(rls__key_kind_name(3));
    assert_null(rls__key_kind_name(-1));
    assert_int_equal(rls__key_kind_from_name("string"), KEY_STRING);
    assert_int_equal(rls__key_kind_from_name("ip"), KEY_IP);
    assert_int_equal(rls__key_kind_from_name("email"), KEY_EMAIL);
    assert_int_equal(rls__key_kind_from_name("IP"), -1);
    assert_int_equal(rls__key_kind_from_name(""), -1);
    assert_int_equal(rls__key_kind_from_name(NULL), -1);
}

static void test_ipv4(void **state)
{
    (void)state;
    assert_string_equal(ip("203.0.113.7"), "203.0.113.7");
    assert_string_equal(ip("0.0.0.0"), "0.0.0.0");
    assert_string_equal(ip("255.255.255.255"), "255.255.255.255");
    assert_string_equal(norm(KEY_IP, 24, 64, "203.0.113.7"), "203.0.113.0/24");
    assert_string_equal(norm(KEY_IP, 0, 64, "203.0.113.7"), "0.0.0.0/0");
    assert_string_equal(norm(KEY_IP, 31, 64, "203.0.113.7"), "203.0.113.6/31");
    assert_string_equal(norm(KEY_IP, 32, 64, "203.0.113.7"), "203.0.113.7");
}

static void test_ipv6(void **state)
{
    (void)state;
    /* full form, leading zeros, upper case -> RFC 5952 */
    assert_string_equal(ip("2001:0db8:0000:0000:0000:ff00:0042:8329"),
                        "2001:db8::ff00:42:8329");
    assert_string_equal(ip("2001:DB8::FF00:42:8329"), "2001:db8::ff00:42:8329");
    assert_string_equal(ip("::1"), "::1");
    assert_string_equal(ip("::"), "::");
    assert_string_equal(ip("1::"), "1::");
    assert_string_equal(ip("0:0:0:0:0:0:0:1"), "::1");
    /* one zero group is not compressed */
    assert_string_equal(ip("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");
    /* "::" standing for a single group is accepted on input */
    assert_string_equal(ip("2001:db8::1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");
    /* the longest run wins; the first of equal runs */
    assert_string_equal(ip("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1");
    assert_string_equal(ip("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
    /* dotted-quad tail that is not IPv4-mapped stays IPv6 */
    assert_string_equal(ip("::1.2.3.4"), "::102:304");
    assert_string_equal(ip("64:ff9b::192.0.2.33"), "64:ff9b::c000:221");
    /* folding */
    assert_string_equal(norm(KEY_IP, 32, 64, "2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
    assert_string_equal(norm(KEY_IP, 32, 48, "2001:db8:1:2:3:4:5:6"), "2001:db8:1::/48");
    assert_string_equal(norm(KEY_IP, 32, 56, "2001:db8:1:2ff:3:4:5:6"), "2001:db8:1:200::/56");
    assert_string_equal(norm(KEY_IP, 32, 0, "2001:db8:1:2:3:4:5:6"), "::/0");
    assert_string_equal(norm(KEY_IP, 32, 128, "2001:db8:1:2:3:4:5:6"), "2001:db8:1:2:3:4:5:6");
    assert_string_equal(norm(KEY_IP, 32, 127, "2001:db8::7"), "2001:db8::6/127");
}

static void test_ipv4_mapped(void **state)
{
    (void)state;
    assert_string_equal(ip("::ffff:192.0.2.1"), "192.0.2.1");
    assert_string_equal(ip("::FFFF:c000:0201"), "192.0.2.1");
    assert_string_equal(ip("0:0:0:0:0:ffff:192.0.2.1"), "192.0.2.1");
    /* folded with the IPv4 prefix, not the IPv6 one */
    assert_string_equal(norm(KEY_IP, 24, 64, "::ffff:192.0.2.1"), "192.0.2.0/24");
    assert_string_equal(norm(KEY_IP, 32, 64, "::ffff:192.0.2.1"), "192.0.2.1");
}

static void test_ip_invalid(void **state)
{
    static const char *cases[] = {
        "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.-4", "01.2.3.4", "1.2.3.4.",
        ".1.2.3.4", "1..2.3", "::g", "12345::", "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7", "1::2::3", ":1::", "1:", ":", ":::", "1:2:3:4:5:6:7:8::",
        "::1.2.3", "::1.2.3.4:5", "1:2:3:4:5:6:7:1.2.3.4", "[::1]", " 1.2.3.4",
        "1.2.3.4 ", "localhost", "0x7f.0.0.1", "1.2.3.4/32",
        "2001:db8::1/64", "fe80::1%eth0", "fe80::1%1",
    };
    size_t i;
    const char *why = NULL;
    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (rls__key_normalize(KEY_IP, 32, 64, cases[i], strlen(cases[i]), out,
                          sizeof out, &why) != -1)
            fail_msg("'%s' accepted as '%s'", cases[i], out);
    }
    assert_string_equal(bad(KEY_IP, "fe80::1%eth0", 12),
                        "IPv6 zone identifiers (%...) are not accepted");
    assert_string_equal(bad(KEY_IP, "10.0.0.0/8", 10),
                        "an IP key is one address, not a network");
    assert_string_equal(bad(KEY_IP, "1.2.3", 5), "not an IPv4 or IPv6 address");
    assert_string_equal(bad(KEY_IP, "", 0), "empty key");
    assert_string_equal(bad(KEY_IP, "1.2.3.4\0x", 9), "key contains a NUL byte");
    /* prefixes out of range */
    assert_int_equal(rls__key_normalize(KEY_IP, 33, 64, "1.2.3.4", 7, out, sizeof out, &why), -1);
    assert_string_equal(why, "invalid IP prefix length");
    assert_int_equal(rls__key_normalize(KEY_IP, 32, 129, "1.2.3.4", 7, out, sizeof out, &why), -1);
    assert_int_equal(rls__key_normalize(KEY_IP, -1, 64, "1.2.3.4", 7, out, sizeof out, &why), -1);
    /* a long string never reaches the parser's buffers */
    {
        char longkey[300];
        memset(longkey, '1', sizeof longkey);
        assert_int_equal(rls__key_normalize(KEY_IP, 32, 64, longkey, sizeof longkey,
                                       out, sizeof out, &why), -1);
    }
}

static void test_email(void **state)
{
    (void)state;
    assert_string_equal(norm(KEY_EMAIL, 32, 64, "Foo.Bar+news@Example.COM"),
                        "foo.bar@example.com");
    assert_string_equal(norm(KEY_EMAIL, 32, 64, "a@b"), "a@b");
    assert_string_equal(norm(KEY_EMAIL, 32, 64, "a+b+c@x.org"), "a@x.org");
    assert_string_equal(norm(KEY_EMAIL, 32, 64, "user+@x.org"), "user@x.org");
    /* '+' in the domain is not a tag */
    assert_string_equal(norm(KEY_EMAIL, 32, 64, "user@sub+x.org"), "user@sub+x.org");
    /* non-ASCII bytes are kept as they are; only ASCII is lower-cased */
    assert_string_equal(norm(KEY_EMAIL, 32, 64, "J\xc3\x96rg@Example.de"),
                        "j\xc3\x96rg@example.de");
    assert_string_equal(bad(KEY_EMAIL, "no-at", 5), "an email key must contain exactly one '@'");
    assert_string_equal(bad(KEY_EMAIL, "a@b@c", 5), "an email key must contain exactly one '@'");
    assert_string_equal(bad(KEY_EMAIL, "@x.org", 6), "an email key needs text before and after '@'");
    assert_string_equal(bad(KEY_EMAIL, "a@", 2), "an email key needs text before and after '@'");
    assert_string_equal(bad(KEY_EMAIL, "+tag@x.org", 10), "an email key needs a local part before '+'");
    assert_string_equal(bad(KEY_EMAIL, " a@x.org", 8),
                        "an email key must not contain spaces or control characters");
    assert_string_equal(bad(KEY_EMAIL, "a@x.org\n", 8),
                        "an email key must not contain spaces or control characters");
    assert_string_equal(bad(KEY_EMAIL, "", 0), "empty key");
}

static void test_string_and_buffers(void **state)
{
    const char *why = NULL;
    char small[8];
    (void)state;
    assert_string_equal(norm(KEY_STRING, 32, 64, "user:42"), "user:42");
    assert_string_equal(norm(KEY_STRING, 32, 64, "  Mixed CASE \xff"), "  Mixed CASE \xff");
    assert_string_equal(bad(KEY_STRING, "", 0), "empty key");
    assert_string_equal(bad(KEY_STRING, "a\0b", 3), "key contains a NUL byte");
    assert_int_equal(rls__key_normalize(KEY_STRING, 32, 64, NULL, 3, out, sizeof out, &why), -1);
    assert_int_equal(rls__key_normalize(9, 32, 64, "x", 1, out, sizeof out, &why), -1);
    assert_string_equal(why, "unknown key kind");
    /* out too small: -2 (room for the NUL is needed) */
    assert_int_equal(rls__key_normalize(KEY_STRING, 32, 64, "1234567", 7, small, 8, &why), 7);
    assert_int_equal(rls__key_normalize(KEY_STRING, 32, 64, "12345678", 8, small, 8, &why), -2);
    assert_int_equal(rls__key_normalize(KEY_IP, 32, 64, "2001:db8::1", 11, small, 8, &why), -2);
    assert_int_equal(rls__key_normalize(KEY_IP, 32, 64, "1.2.3.4", 7, small, 8, &why), 7);
    assert_int_equal(rls__key_normalize(KEY_EMAIL, 32, 64, "ab+x@c.d", 8, small, 8, &why), 6);
    assert_string_equal(small, "ab@c.d");
    assert_int_equal(rls__key_normalize(KEY_EMAIL, 32, 64, "abcd@ef.gh", 10, small, 8, &why), -2);
    assert_int_equal(rls__key_normalize(KEY_STRING, 32, 64, "x", 1, NULL, 0, NULL), -2);
}

static key_pattern pat(const char *text, int kind)
{
    key_pattern p;
    const char *why = NULL;
    if (rls__key_pattern_parse(text, &p, &why) != 0)
        fail_msg("pattern '%s': %s", text, why ? why : "(null)");
    assert_int_equal(p.kind, kind);
    return p;
}

static const char *pat_err(const char *text)
{
    key_pattern p;
    const char *why = NULL;
    assert_int_equal(rls__key_pattern_parse(text, &p, &why), -1);
    assert_non_null(why);
    return why;
}

static int match(const char *ptext, const char *key)
{
    key_pattern p;
    const char *why;
    assert_int_equal(rls__key_pattern_parse(ptext, &p, &why), 0);
    return rls__key_pattern_match(&p, ptext, key, strlen(key));
}

static void test_pattern_parse(void **state)
{
    key_pattern p;
    (void)state;
    p = pat("user:*", PAT_PREFIX);
    assert_int_equal(p.len, 5);
    p = pat("*", PAT_PREFIX);
    assert_int_equal(p.len, 0);
    p = pat("10.0.0.0/8", PAT_CIDR);
    assert_int_equal(p.bits, 104);
    assert_int_equal(p.addr[10], 0xff);
    assert_int_equal(p.addr[12], 10);
    p = pat("2001:db8::/32", PAT_CIDR);
    assert_int_equal(p.bits, 32);
    assert_int_equal(p.addr[0], 0x20);
    assert_int_equal(p.addr[3], 0xb8);
    p = pat("::ffff:10.0.0.0/104", PAT_CIDR);
    assert_int_equal(p.bits, 104);
    pat("0.0.0.0/0", PAT_CIDR);
    pat("::/0", PAT_CIDR);
    pat("192.0.2.1/32", PAT_CIDR);
    pat("2001:db8::1/128", PAT_CIDR);
    pat("203.0.113.7", PAT_EXACT);
    pat("user:42", PAT_EXACT);
    pat("user/1", PAT_EXACT);        /* no '.' or ':' before the slash */
    pat("a.b/c", PAT_EXACT);         /* not digits after the slash */
    pat("us*er", PAT_EXACT);         /* '*' only counts at the end */
    assert_string_equal(pat_err(""), "empty pattern");
    assert_string_equal(pat_err(NULL), "empty pattern");
    assert_string_equal(pat_err("10.0.0.0/33"), "invalid prefix length in CIDR pattern");
    assert_string_equal(pat_err("2001:db8::/129"), "invalid prefix length in CIDR pattern");
    assert_string_equal(pat_err("10.0.0.0/"), "invalid prefix length in CIDR pattern");
    assert_string_equal(pat_err("10.0.0.1/8"), "CIDR pattern has host bits set");
    assert_string_equal(pat_err("2001:db8::1/64"), "CIDR pattern has host bits set");
    assert_string_equal(pat_err("10.0.0/8"), "invalid address in CIDR pattern");
    assert_string_equal(pat_err("1.2.3.4.5/32"), "invalid address in CIDR pattern");
    assert_string_equal(pat_err("dead:beef/16"), "invalid address in CIDR pattern");
}

static void test_pattern_match(void **state)
{
    (void)state;
    /* prefix */
    assert_true(match("user:*", "user:42"));
    assert_true(match("user:*", "user:"));
    assert_false(match("user:*", "user"));
    assert_false(match("user:*", "admin:1"));
    assert_true(match("*", "anything"));
    /* exact */
    assert_true(match("user:42", "user:42"));
    assert_false(match("user:42", "user:421"));
    assert_false(match("user:42", "user:4"));
    assert_true(match("us*er", "us*er"));
    /* IPv4 CIDR: addresses and folded keys inside the network */
    assert_true(match("10.0.0.0/8", "10.1.2.3"));
    assert_true(match("10.0.0.0/8", "10.255.255.255"));
    assert_false(match("10.0.0.0/8", "11.0.0.1"));
    assert_false(match("10.0.0.0/8", "9.255.255.255"));
    assert_true(match("10.0.0.0/8", "10.0.0.0/24"));
    assert_false(match("10.0.0.0/8", "10.0.0.0/7"));   /* wider than the pattern */
    assert_false(match("10.0.0.0/8", "2001:db8::1"));
    assert_false(match("10.0.0.0/8", "not an ip"));
    assert_true(match("0.0.0.0/0", "203.0.113.7"));
    assert_false(match("0.0.0.0/0", "2001:db8::1"));
    assert_true(match("192.0.2.1/32", "192.0.2.1"));
    assert_false(match("192.0.2.1/32", "192.0.2.2"));
    assert_true(match("::ffff:10.0.0.0/104", "10.9.8.7"));
    /* IPv6 CIDR */
    assert_true(match("2001:db8::/32", "2001:db8::1"));
    assert_true(match("2001:db8::/32", "2001:db8:1:2::/64"));
    assert_false(match("2001:db8::/32", "2001:db9::1"));
    assert_false(match("2001:db8::/32", "10.0.0.1"));
    assert_true(match("2001:db8:1:2::/64", "2001:db8:1:2::/64"));
    assert_false(match("2001:db8:1:2::/64", "2001:db8:1::/48"));
    /* "::/0" is every IPv6 address, not IPv4 keys */
    assert_true(match("::/0", "2001:db8::1"));
    assert_false(match("::/0", "10.0.0.1"));
    /* defensive */
    assert_int_equal(rls__key_pattern_match(NULL, "x", "x", 1), 0);
    {
        key_pattern p = pat("x", PAT_EXACT);
        assert_int_equal(rls__key_pattern_match(&p, NULL, "x", 1), 0);
        assert_int_equal(rls__key_pattern_match(&p, "x", NULL, 0), 0);
    }
}

static void test_pattern_rank(void **state)
{
    key_pattern ex = pat("user:42", PAT_EXACT), c32 = pat("10.0.0.1/32", PAT_CIDR);
    key_pattern c24 = pat("10.0.0.0/24", PAT_CIDR), c8 = pat("10.0.0.0/8", PAT_CIDR);
    key_pattern c0 = pat("0.0.0.0/0", PAT_CIDR), v6 = pat("2001:db8::/32", PAT_CIDR);
    key_pattern p_long = pat("user:4*", PAT_PREFIX), p_short = pat("user:*", PAT_PREFIX);
    key_pattern any = pat("*", PAT_PREFIX);
    (void)state;
    assert_true(rls__key_pattern_rank(&ex) > rls__key_pattern_rank(&c32));
    assert_true(rls__key_pattern_rank(&c32) > rls__key_pattern_rank(&c24));
    assert_true(rls__key_pattern_rank(&c24) > rls__key_pattern_rank(&c8));
    assert_true(rls__key_pattern_rank(&c8) > rls__key_pattern_rank(&c0));
    assert_true(rls__key_pattern_rank(&v6) > rls__key_pattern_rank(&p_long));
    assert_true(rls__key_pattern_rank(&c0) > rls__key_pattern_rank(&p_long));
    assert_true(rls__key_pattern_rank(&p_long) > rls__key_pattern_rank(&p_short));
    assert_true(rls__key_pattern_rank(&p_short) > rls__key_pattern_rank(&any));
    assert_true(rls__key_pattern_rank(&any) > rls__key_pattern_rank(NULL));
}

static const char *esc(const char *key, size_t len)
{
    int n = rls__key_escape(key, len, out, sizeof out);
    assert_int_equal(n, (int)strlen(out));
    return out;
}

static void test_escape(void **state)
{
    char small[6];
    (void)state;
    assert_string_equal(esc("abc", 3), "abc");
    assert_string_equal(esc("", 0), "");
    assert_string_equal(esc("a\\b", 3), "a\\\\b");
    assert_string_equal(esc("\x01\x1f\t\n", 4), "\\x01\\x1f\\x09\\x0a");
    assert_string_equal(esc("\x1b[31m", 5), "\\x1b[31m");
    assert_string_equal(esc("x\x7fy", 3), "x\\x7fy");
    assert_string_equal(esc("a\0b", 3), "a\\x00b");
    /* valid UTF-8: 2, 3, 4 bytes copied; NBSP (U+00A0) is not a control */
    assert_string_equal(esc("caf\xc3\xa9", 5), "caf\xc3\xa9");
    assert_string_equal(esc("\xe2\x82\xac", 3), "\xe2\x82\xac");
    assert_string_equal(esc("\xf0\x9f\x98\x80!", 5), "\xf0\x9f\x98\x80!");
    assert_string_equal(esc("\xc2\xa0", 2), "\xc2\xa0");
    /* invalid: lone lead, lone continuation, truncated, overlong,
     * surrogate, above U+10FFFF, 0xff */
    assert_string_equal(esc("\xc3", 1), "\\xc3");
    assert_string_equal(esc("\xc3x", 2), "\\xc3x");
    assert_string_equal(esc("\x80", 1), "\\x80");
    assert_string_equal(esc("\xe2\x82", 2), "\\xe2\\x82");
    assert_string_equal(esc("\xc0\xaf", 2), "\\xc0\\xaf");
    assert_string_equal(esc("\xe0\x80\xaf", 3), "\\xe0\\x80\\xaf");
    assert_string_equal(esc("\xed\xa0\x80", 3), "\\xed\\xa0\\x80");
    assert_string_equal(esc("\xf4\x90\x80\x80", 4), "\\xf4\\x90\\x80\\x80");
    assert_string_equal(esc("\xff\xfe", 2), "\\xff\\xfe");
    /* C1 controls (U+0080..U+009F, e.g. U+009B CSI) are escaped */
    assert_string_equal(esc("\xc2\x9b", 2), "\\xc2\\x9b");
    /* characters that show nothing but reorder or hide text: bidi
     * controls, zero-width ones, the BOM, separators, tags (U+E0041) */
    assert_string_equal(esc("a\xe2\x80\xae" "b\xe2\x80\xac", 8),
                        "a\\xe2\\x80\\xaeb\\xe2\\x80\\xac");
    static const char *const invisible[] = {
        "\xe2\x80\xaa", "\xe2\x81\xa6", "\xe2\x81\xa9", "\xe2\x80\x8e", "\xe2\x80\x8f",
        "\xd8\x9c", "\xe2\x80\x8b", "\xe2\x80\x8d", "\xef\xbb\xbf", "\xe2\x80\xa8",
        "\xe2\x80\xa9", "\xe2\x81\xa0", "\xc2\xad", "\xf3\xa0\x81\x81",
    };
    for (size_t i = 0; i < sizeof invisible / sizeof invisible[0]; i++) {
        const char *e = esc(invisible[i], strlen(invisible[i]));
        assert_int_equal(strlen(e), 4 * strlen(invisible[i]));
        assert_int_equal(e[0], '\\');
    }
    /* their neighbours are letters and punctuation, shown as they are */
    assert_string_equal(esc("\xe2\x80\x90\xe2\x80\xaf\xd8\x9b\xef\xbb\xbe", 11),
                        "\xe2\x80\x90\xe2\x80\xaf\xd8\x9b\xef\xbb\xbe");
    /* snprintf-style length; a unit that does not fit is left out whole */
    assert_int_equal(rls__key_escape("ab\x01", 3, small, sizeof small), 6);
    assert_string_equal(small, "ab");
    assert_int_equal(rls__key_escape("a\x01", 2, small, sizeof small), 5);
    assert_string_equal(small, "a\\x01");
    assert_int_equal(rls__key_escape("ab\x01", 3, NULL, 0), 6);
    assert_int_equal(rls__key_escape("abc", 3, small, 1), 3);
    assert_string_equal(small, "");
    /* a multi-byte character is never cut in half */
    assert_int_equal(rls__key_escape("ab\xe2\x82\xac", 5, small, sizeof small), 5);
    assert_string_equal(small, "ab\xe2\x82\xac");
    assert_int_equal(rls__key_escape("abc\xe2\x82\xac", 6, small, sizeof small), 6);
    assert_string_equal(small, "abc");
    assert_int_equal(rls__key_escape("abc\xe2\x82\xac" "d", 7, small, sizeof small), 7);
    assert_string_equal(small, "abc");
    assert_int_equal(rls__key_escape(NULL, 1, small, sizeof small), -1);
    assert_int_equal(rls__key_escape(NULL, 0, small, sizeof small), 0);
}

/* The form of a key of every action (rls_policy(3)): one per address or
 * mailbox, whatever its spelling. */
static void test_canonical(void **state)
{
    static const char *const pairs[][2] = {
        {"2001:DB8:5:0:0:0:0:1", "2001:db8:5::1"},
        {"2001:db8:5::1", "2001:db8:5::1"},
        {"::FFFF:1.2.3.4", "1.2.3.4"},
        {"::ffff:102:304", "1.2.3.4"},
        {"1.2.3.4", "1.2.3.4"},
        {"Bob+News@Example.COM", "bob@example.com"},
        {"user:Bob", "user:Bob"},
        {"1.2.3.0/24", "1.2.3.0/24"},   /* a network is no address: as written */
        {"a@b@c", "a@b@c"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int n = rls__key_canonical(pairs[i][0], strlen(pairs[i][0]), buf, sizeof buf);
        assert_int_equal(n, (int)strlen(pairs[i][1]));
        assert_string_equal(buf, pairs[i][1]);
    }
    assert_int_equal(rls__key_canonical("user:Bob", 8, buf, 8), -2);
}

static void test_ip_net(void **state)
{
    unsigned char net[16], a[16];
    int bits, abits;
    assert_int_equal(rls__key_ip_net("1.2.3.0/24", 10, net, &bits), 0);
    assert_int_equal(bits, 96 + 24);
    assert_int_equal(rls__key_ip_net("1.2.3.77", 8, a, &abits), 0);
    assert_int_equal(abits, 128);
    assert_true(rls__key_net_contains(net, bits, a));
    assert_int_equal(rls__key_ip_net("::FFFF:1.2.4.1", 14, a, &abits), 0);
    assert_false(rls__key_net_contains(net, bits, a));
    assert_int_equal(rls__key_ip_net("2001:db8:5::/64", 15, net, &bits), 0);
    assert_int_equal(rls__key_ip_net("2001:DB8:5:0:FFFF::1", 20, a, &abits), 0);
    assert_true(rls__key_net_contains(net, bits, a));
    assert_int_equal(rls__key_ip_net("fe80::1%eth0", 12, a, &abits), -1);
    assert_int_equal(rls__key_ip_net("bob@example.com", 15, a, &abits), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_ipv4),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_ipv4_mapped),
        cmocka_unit_test(test_ip_invalid),
        cmocka_unit_test(test_email),
        cmocka_unit_test(test_string_and_buffers),
        cmocka_unit_test(test_pattern_parse),
        cmocka_unit_test(test_pattern_match),
        cmocka_unit_test(test_pattern_rank),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_ip_net),
    };
    return cmocka_run_group_tests_name("keynorm", tests, NULL, NULL);
}
