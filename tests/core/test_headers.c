/*
 * test_headers.c - RateLimit-Policy / RateLimit / Retry-After formatting:
 * field syntax of draft-ietf-httpapi-ratelimit-headers-11, rounding up of
 * seconds, when Retry-After appears, sf-string escaping of names, clamping,
 * invalid input and snprintf-style truncation.
 */
#include "testutil.h"
#include "headers.h"

static char buf[512];

static hdr_input base(void)
{
    hdr_input in;
    memset(&in, 0, sizeof in);
    in.policy = "daily";
    in.allowed = 1;
    in.limit = 20;
    in.remaining = 19;
    in.window_ms = 86400000;
    in.reset_ms = 3600000;
    in.retry_after_ms = 0;
    return in;
}

static const char *fmt(const hdr_input *in)
{
    int n = rls__headers_format(in, buf, sizeof buf);
    assert_true(n >= 0);
    assert_int_equal(n, (int)strlen(buf));
    return buf;
}

static void test_allowed(void **state)
{
    hdr_input in = base();
    (void)state;
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20;w=86400\r\n"
                        "RateLimit: \"daily\";r=19;t=3600\r\n");
    /* allowed never gets Retry-After, whatever retry_after_ms says */
    in.retry_after_ms = 5000;
    assert_null(strstr(fmt(&in), "Retry-After"));
}

static void test_rounding_up(void **state)
{
    hdr_input in = base();
    (void)state;
    in.window_ms = 250;          /* sub-second window: w=1, never w=0 */
    in.reset_ms = 1;
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20;w=1\r\n"
                        "RateLimit: \"daily\";r=19;t=1\r\n");
    in.window_ms = 1500;
    in.reset_ms = 1000;          /* exact seconds stay */
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20;w=2\r\n"
                        "RateLimit: \"daily\";r=19;t=1\r\n");
    in.reset_ms = 1001;
    assert_non_null(strstr(fmt(&in), ";t=2\r\n"));
    in.reset_ms = 0;
    assert_non_null(strstr(fmt(&in), ";t=0\r\n"));
}

static void test_denied(void **state)
{
    hdr_input in = base();
    (void)state;
    in.allowed = 0;
    in.remaining = 0;
    in.reset_ms = 3600000;
    in.retry_after_ms = 3600000;
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20;w=86400\r\n"
                        "RateLimit: \"daily\";r=0;t=3600\r\n"
                        "Retry-After: 3600\r\n");
    /* bucket: next unit in 0.2 s, full in 10 s: Retry-After 1 (rounded up)
     * and t equal to it (Retry-After never before the window's end) */
    in.reset_ms = 10000;
    in.retry_after_ms = 200;
    in.window_ms = 1000;
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20;w=1\r\n"
                        "RateLimit: \"daily\";r=0;t=1\r\n"
                        "Retry-After: 1\r\n");
    /* never (-1) and 0: no Retry-After, t from reset */
    in.retry_after_ms = -1;
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20;w=1\r\n"
                        "RateLimit: \"daily\";r=0;t=10\r\n");
    in.retry_after_ms = 0;
    assert_null(strstr(fmt(&in), "Retry-After"));
    in.retry_after_ms = 1;
    assert_non_null(strstr(fmt(&in), "Retry-After: 1\r\n"));
}

static void test_names(void **state)
{
    hdr_input in = base();
    (void)state;
    in.policy = "a\"b\\c";
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"a\\\"b\\\\c\";q=20;w=86400\r\n"
                        "RateLimit: \"a\\\"b\\\\c\";r=19;t=3600\r\n");
    /* control characters, CR/LF (header injection), DEL, non-ASCII -> '_' */
    in.policy = "x\r\nSet-Cookie: y\x7f\xc3\xa9";
    fmt(&in);
    assert_string_equal(buf,
                        "RateLimit-Policy: \"x__Set-Cookie: y___\";q=20;w=86400\r\n"
                        "RateLimit: \"x__Set-Cookie: y___\";r=19;t=3600\r\n");
    in.policy = "";
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"\";q=20;w=86400\r\n"
                        "RateLimit: \"\";r=19;t=3600\r\n");
}

static void test_clamping(void **state)
{
    hdr_input in = base();
    (void)state;
    in.remaining = -5;
    in.reset_ms = -1000;
    in.window_ms = 0;            /* no window: w omitted */
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=20\r\n"
                        "RateLimit: \"daily\";r=0;t=0\r\n");
    in.limit = INT64_MAX;
    in.remaining = INT64_MAX;
    in.window_ms = INT64_MAX;
    in.reset_ms = INT64_MAX;
    assert_string_equal(fmt(&in),
                        "RateLimit-Policy: \"daily\";q=999999999999999;w=999999999999999\r\n"
                        "RateLimit: \"daily\";r=999999999999999;t=999999999999999\r\n");
    in.allowed = 0;
    in.retry_after_ms = INT64_MAX;
    assert_non_null(strstr(fmt(&in), "Retry-After: 999999999999999\r\n"));
}

static void test_invalid(void **state)
{
    hdr_input in = base();
    char big[5000];
    (void)state;
    assert_int_equal(rls__headers_format(NULL, buf, sizeof buf), -1);
    assert_int_equal(rls__headers_format(&in, NULL, 10), -1);
    in.limit = -1;
    assert_int_equal(rls__headers_format(&in, buf, sizeof buf), -1);
    in = base();
    in.policy = NULL;
    assert_int_equal(rls__headers_format(&in, buf, sizeof buf), -1);
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    in.policy = big;
    assert_int_equal(rls__headers_format(&in, buf, sizeof buf), -1);
}

static void test_small_buffer(void **state)
{
    hdr_input in = base();
    const char *full = "RateLimit-Policy: \"daily\";q=20;w=86400\r\n"
                       "RateLimit: \"daily\";r=19;t=3600\r\n";
    int len = (int)strlen(full);
    char small[16];
    (void)state;
    /* size 0 with NULL: just the length */
    assert_int_equal(rls__headers_format(&in, NULL, 0), len);
    memset(small, 'x', sizeof small);
    assert_int_equal(rls__headers_format(&in, small, sizeof small), len);
    assert_int_equal(small[15], '\0');
    assert_memory_equal(small, full, 15);
    memset(small, 'x', sizeof small);
    assert_int_equal(rls__headers_format(&in, small, 1), len);
    assert_int_equal(small[0], '\0');
    assert_int_equal(small[1], 'x');
    /* exactly fitting: len + 1 */
    {
        char exact[128];
        assert_true((size_t)len + 1 <= sizeof exact);
        assert_int_equal(rls__headers_format(&in, exact, (size_t)len + 1), len);
        assert_string_equal(exact, full);
        assert_int_equal(rls__headers_format(&in, exact, (size_t)len), len);
        assert_int_equal(strlen(exact), (size_t)len - 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed),
        cmocka_unit_test(test_rounding_up),
        cmocka_unit_test(test_denied),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_clamping),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_small_buffer),
    };
    return cmocka_run_group_tests_name("headers", tests, NULL, NULL);
}
