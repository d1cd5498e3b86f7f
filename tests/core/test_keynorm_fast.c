/*
 * test_keynorm_fast.c - rls__key_is_normal (core/keynorm.c), the quick
 * test the memory-class fast lane uses to skip normalising a key, against
 * rls__key_normalize itself: whenever it says a key is its own normal
 * form, normalising must accept the key and give back the same bytes, for
 * every kind and prefix, over edge spellings (every respelling of one
 * address or mailbox: leading zeros, upper case, +tags, IPv4-mapped IPv6,
 * spaces, control and high bytes, NUL inside) and random keys from
 * alphabets that make such spellings likely.  And it must say so for the
 * common spellings (or the lane would gain nothing).
 */
#include "testutil.h"
#include "keynorm.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const int prefixes[][2] = {{32, 128}, {24, 64}, {0, 0}, {32, 64}, {31, 128},
                                  {33, 128}, {32, 129}, {-1, 128}, {32, -1}};

static long normal_seen;

/* If the quick test says key is normal for (kind, prefixes), normalising
 * gives it back unchanged. */
static void same(int kind, int v4, int v6, const char *key, size_t len)
{
    char out[512];
    const char *why = NULL;
    if (!rls__key_is_normal(kind, v4, v6, key, len))
        return;
    normal_seen++;
    int n = rls__key_normalize(kind, v4, v6, key, len, out, sizeof out, &why);
    if (n != (int)len || memcmp(out, key, len) != 0)
        fail_msg("kind %d /%d /%d: '%.*s' (%zu bytes) said normal, normalised to %d '%s' (%s)",
                 kind, v4, v6, (int)len, key, len, n, n >= 0 ? out : "", why ? why : "");
}

static void every_kind(const char *key, size_t len)
{
    for (int kind = -1; kind <= 3; kind++)
        for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++)
            same(kind, prefixes[p][0], prefixes[p][1], key, len);
}

static void test_edges(void **state)
{
    static const char *const keys[] = {
        "0.0.0.0", "1.2.3.4", "10.0.0.1", "255.255.255.255", "256.1.1.1", "1.2.3.256",
        "01.2.3.4", "1.02.3.4", "1.2.3.04", "1.2.3.00", "00.0.0.0", "1.2.3", "1.2.3.4.",
        ".1.2.3.4", "1..2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4/32", "1.2.3.4%eth0",
        "1.2.3.4.5", "1234.1.1.1", "1.2.3.-4", "+1.2.3.4", "1.2.3.4\n", "::ffff:1.2.3.4",
        "::1", "2001:db8::1", "2001:DB8::1", "::", "1:2:3:4:5:6:7:8", "99999999999999999",
        "a@b", "a@b.c", "A@b", "a@B", "a+b@c", "+a@b", "a@b+c", "@b", "a@", "@", "a@@b",
        "a@b@c", "ab", "a b@c", "a@b c", "a\t@b", "a\x7f@b", "\xc3\xa4@b", "a@\xc3\xa4",
        "user:42", "User:42", "x", " ", "\x01", "\xff\xfe", "a-very-long-key-of-many-bytes",
    };
    (void)state;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        every_kind(keys[i], strlen(keys[i]));
        every_kind(keys[i], 0);
    }
    /* a NUL inside the length: never normal, normalising refuses it */
    every_kind("1.2\0.3.4", 8);
    every_kind("a@b\0c", 5);
    every_kind("ab\0", 3);
    assert_int_equal(rls__key_is_normal(KEY_STRING, 32, 128, NULL, 3), 0);
}

/* The common spellings are recognised: the lane's whole point. */
static void test_common_recognised(void **state)
{
    (void)state;
    assert_int_equal(rls__key_is_normal(KEY_STRING, 32, 128, "user:42", 7), 1);
    assert_int_equal(rls__key_is_normal(KEY_STRING, 24, 64, "User 42\xff", 8), 1);
    assert_int_equal(rls__key_is_normal(KEY_IP, 32, 128, "203.0.113.7", 11), 1);
    assert_int_equal(rls__key_is_normal(KEY_IP, 32, 64, "0.0.0.0", 7), 1);
    assert_int_equal(rls__key_is_normal(KEY_IP, 24, 128, "203.0.113.7", 11), 0);
    assert_int_equal(rls__key_is_normal(KEY_IP, 32, 128, "203.0.113.07", 12), 0);
    assert_int_equal(rls__key_is_normal(KEY_IP, 32, 128, "::1", 3), 0);
    assert_int_equal(rls__key_is_normal(KEY_EMAIL, 32, 128, "bob@example.com", 15), 1);
    assert_int_equal(rls__key_is_normal(KEY_EMAIL, 32, 128, "Bob@example.com", 15), 0);
    assert_int_equal(rls__key_is_normal(KEY_EMAIL, 32, 128, "bob+x@example.com", 17), 0);
    assert_int_equal(rls__key_is_normal(KEY_EMAIL, 32, 128, "bob@ex+ample.com", 16), 1);
}

/* Random keys over alphabets that spell addresses and mailboxes. */
static void test_random(void **state)
{
    static const char *const alphabets[] = {
        "0123456789.", "0123456789.:", "0123456789abcdefABCDEF:.", "ab@+.AZ",
        "ab@+. \t\x7f\x01\xc3\xa4", "0123456789./%", "a@",
    };
    (void)state;
    normal_seen = 0;
    for (int i = 0; i < 400000; i++) {
        const char *al = alphabets[rnd() % (sizeof alphabets / sizeof alphabets[0])];
        size_t na = strlen(al), len = (size_t)(rnd() % 18);
        char key[32];
        for (size_t j = 0; j < len; j++)
            key[j] = al[rnd() % na];
        if (rnd() % 50 == 0 && len > 0)
            key[rnd() % len] = '\0';
        key[len] = '\0';
        int kind = (int)(rnd() % 3);
        size_t p = (size_t)(rnd() % (sizeof prefixes / sizeof prefixes[0]));
        same(kind, prefixes[p][0], prefixes[p][1], key, len);
    }
    assert_true(normal_seen > 10000);   /* the test tried the fast answers */
}

/* Every dotted quad of parts 0..255 spelled without leading zeros, each
 * part over a range of values: normal with /32, and normalised to itself. */
static void test_quads(void **state)
{
    static const int vals[] = {0, 1, 9, 10, 99, 100, 199, 200, 249, 250, 255};
    (void)state;
    for (size_t a = 0; a < 11; a++)
        for (size_t b = 0; b < 11; b++)
            for (size_t c = 0; c < 11; c++)
                for (size_t d = 0; d < 11; d++) {
                    char key[32];
                    int n = snprintf(key, sizeof key, "%d.%d.%d.%d", vals[a], vals[b], vals[c],
                                     vals[d]);
                    assert_int_equal(rls__key_is_normal(KEY_IP, 32, 128, key, (size_t)n), 1);
                    same(KEY_IP, 32, 128, key, (size_t)n);
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_common_recognised),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_quads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
