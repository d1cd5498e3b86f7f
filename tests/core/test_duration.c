/*
 * test_duration.c - rls__duration_parse / rls__duration_format: units, combinations,
 * calendar detection, every rejection reason, overflow, round trips.
 */
#include "testutil.h"
#include "duration.h"

#define DAY_MS (86400000LL)

static rls_duration parse_ok(const char *s)
{
    rls_duration d = { -1, -1 };
    const char *why = NULL;
    int rc = rls__duration_parse(s, (size_t)-1, &d, &why);
    if (rc != 0)
        fail_msg("'%s' rejected: %s", s, why ? why : "(null)");
    return d;
}

static const char *parse_bad(const char *s)
{
    rls_duration d = { 12345, 7 };
    const char *why = NULL;
    int rc = rls__duration_parse(s, (size_t)-1, &d, &why);
    if (rc != -1)
        fail_msg("'%s' accepted as %lld ms", s, (long long)d.ms);
    assert_non_null(why);
    /* *out untouched on error */
    assert_int_equal(d.ms, 12345);
    assert_int_equal(d.calendar, 7);
    return why;
}

static void test_single_units(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("250ms").ms, 250);
    assert_int_equal(parse_ok("1ms").ms, 1);
    assert_int_equal(parse_ok("10s").ms, 10000);
    assert_int_equal(parse_ok("5m").ms, 300000);
    assert_int_equal(parse_ok("1h").ms, 3600000);
    assert_int_equal(parse_ok("36h").ms, 36 * 3600000LL);
    assert_int_equal(parse_ok("2d").ms, 2 * DAY_MS);
    assert_int_equal(parse_ok("2w").ms, 14 * DAY_MS);
    assert_int_equal(parse_ok("2mo").ms, 60 * DAY_MS);
    assert_int_equal(parse_ok("10s").calendar, DUR_FIXED);
    assert_int_equal(parse_ok("36h").calendar, DUR_FIXED);
}

static void test_calendar(void **state)
{
    rls_duration d;
    (void)state;
    d = parse_ok("1d");
    assert_int_equal(d.calendar, DUR_DAY);
    assert_int_equal(d.ms, DAY_MS);
    d = parse_ok("1w");
    assert_int_equal(d.calendar, DUR_WEEK);
    assert_int_equal(d.ms, 7 * DAY_MS);
    d = parse_ok("1mo");
    assert_int_equal(d.calendar, DUR_MONTH);
    assert_int_equal(d.ms, 30 * DAY_MS);
    /* a leading zero does not change the number */
    assert_int_equal(parse_ok("01d").calendar, DUR_DAY);
    /* equal length but not the single calendar term: fixed */
    assert_int_equal(parse_ok("24h").calendar, DUR_FIXED);
    assert_int_equal(parse_ok("7d").calendar, DUR_FIXED);
    assert_int_equal(parse_ok("30d").calendar, DUR_FIXED);
    assert_int_equal(parse_ok("2d").calendar, DUR_FIXED);
    assert_int_equal(parse_ok("2mo").calendar, DUR_FIXED);
    assert_int_equal(parse_ok("1d0h").calendar, DUR_FIXED);
}

static void test_combinations(void **state)
{
    rls_duration d;
    (void)state;
    assert_int_equal(parse_ok("1h30m").ms, 5400000);
    assert_int_equal(parse_ok("1m30s").ms, 90000);
    assert_int_equal(parse_ok("1s500ms").ms, 1500);
    assert_int_equal(parse_ok("1w2d3h4m5s6ms").ms,
                     9 * DAY_MS + 3 * 3600000LL + 4 * 60000 + 5000 + 6);
    /* any order, repeats add up (decision: "1d1d" is a fixed 2d) */
    assert_int_equal(parse_ok("30m1h").ms, 5400000);
    d = parse_ok("1d1d");
    assert_int_equal(d.ms, 2 * DAY_MS);
    assert_int_equal(d.calendar, DUR_FIXED);
    d = parse_ok("1mo1d");
    assert_int_equal(d.ms, 31 * DAY_MS);
    assert_int_equal(d.calendar, DUR_FIXED);
    /* "m" followed by "s": "5ms" is five milliseconds, "5m5s" is not */
    assert_int_equal(parse_ok("5ms").ms, 5);
    assert_int_equal(parse_ok("5m5s").ms, 305000);
    assert_int_equal(parse_ok("1mo5ms").ms, 30 * DAY_MS + 5);
}

static void test_length_argument(void **state)
{
    rls_duration d;
    const char *why = NULL;
    (void)state;
    /* only the first len bytes count */
    assert_int_equal(rls__duration_parse("10s garbage", 3, &d, &why), 0);
    assert_int_equal(d.ms, 10000);
    assert_int_equal(rls__duration_parse("1h30m", 2, &d, &why), 0);
    assert_int_equal(d.ms, 3600000);
    assert_int_equal(rls__duration_parse("1h30m", 4, &d, &why), -1); /* "1h30" */
    assert_int_equal(rls__duration_parse("1h", 0, &d, &why), -1);
    /* an embedded NUL inside len is garbage */
    assert_int_equal(rls__duration_parse("1h\0" "5m", 5, &d, &why), -1);
    /* why may be NULL */
    assert_int_equal(rls__duration_parse("", (size_t)-1, &d, NULL), -1);
    assert_int_equal(rls__duration_parse(NULL, 3, &d, &why), -1);
    assert_int_equal(rls__duration_parse("1s", 2, NULL, &why), -1);
}

static void test_rejections(void **state)
{
    (void)state;
    assert_string_equal(parse_bad(""), "empty duration");
    assert_string_equal(parse_bad("10"), "missing unit (ms, s, m, h, d, w, mo)");
    assert_string_equal(parse_bad("1h30"), "missing unit (ms, s, m, h, d, w, mo)");
    assert_string_equal(parse_bad("s"), "missing number before unit");
    assert_string_equal(parse_bad("mo"), "missing number before unit");
    assert_string_equal(parse_bad("0s"), "duration must be greater than zero");
    assert_string_equal(parse_bad("0h0m"), "duration must be greater than zero");
    assert_string_equal(parse_bad("-1s"), "duration must not be negative");
    assert_string_equal(parse_bad("+1s"), "missing number before unit");
    assert_string_equal(parse_bad("1x"), "unknown unit (expected ms, s, m, h, d, w, mo)");
    assert_string_equal(parse_bad("1H"), "unknown unit (expected ms, s, m, h, d, w, mo)");
    assert_string_equal(parse_bad("1 s"), "whitespace is not allowed in a duration");
    assert_string_equal(parse_bad("1.5h"), "fractions are not allowed (write 1h30m, not 1.5h)");
    assert_string_equal(parse_bad(" 1s"), "whitespace is not allowed in a duration");
    assert_string_equal(parse_bad("1s "), "whitespace is not allowed in a duration");
    assert_string_equal(parse_bad("1sx"), "trailing garbage after duration");
    assert_string_equal(parse_bad("1h-5m"), "duration must not be negative");
    parse_bad("1y");
    parse_bad("1mon");
    parse_bad("1sec");
}

static void test_overflow(void **state)
{
    rls_duration d;
    char big[64];
    (void)state;
    /* DUR_MS_MAX is exactly 100 * 366 days */
    d = parse_ok("36600d");
    assert_int_equal(d.ms, DUR_MS_MAX);
    assert_string_equal(parse_bad("36601d"), "duration too large (over 100 years)");
    assert_string_equal(parse_bad("36600d1ms"), "duration too large (over 100 years)");
    assert_string_equal(parse_bad("5229w"), "duration too large (over 100 years)");
    assert_string_equal(parse_bad("1221mo"), "duration too large (over 100 years)");
    parse_ok("1220mo");
    assert_string_equal(parse_bad("99999999999999999999999999ms"),
                        "duration too large (over 100 years)");
    assert_string_equal(parse_bad("9223372036854775807ms"),
                        "duration too large (over 100 years)");
    /* many small terms adding up past the maximum */
    snprintf(big, sizeof big, "%lldms%lldms", DUR_MS_MAX / 2 + 1,
             DUR_MS_MAX / 2 + 1);
    assert_string_equal(parse_bad(big), "duration too large (over 100 years)");
    snprintf(big, sizeof big, "%lldms", (long long)DUR_MS_MAX);
    assert_int_equal(parse_ok(big).ms, DUR_MS_MAX);
}

static void check_format(int64_t ms, int cal, const char *want)
{
    rls_duration d = { ms, cal };
    char buf[64];
    int n = rls__duration_format(&d, buf, sizeof buf);
    assert_string_equal(buf, want);
    assert_int_equal(n, (int)strlen(want));
}

static void test_format(void **state)
{
    (void)state;
    check_format(0, DUR_FIXED, "0ms");
    check_format(250, DUR_FIXED, "250ms");
    check_format(1000, DUR_FIXED, "1s");
    check_format(90000, DUR_FIXED, "1m30s");
    check_format(5400000, DUR_FIXED, "1h30m");
    check_format(1500, DUR_FIXED, "1s500ms");
    check_format(36 * 3600000LL, DUR_FIXED, "1d12h");
    check_format(2 * DAY_MS, DUR_FIXED, "2d");
    check_format(8 * DAY_MS, DUR_FIXED, "1w1d");
    check_format(14 * DAY_MS, DUR_FIXED, "2w");
    check_format(30 * DAY_MS, DUR_FIXED, "4w2d");     /* never "mo" for fixed */
    check_format(9 * DAY_MS + 3 * 3600000LL + 4 * 60000 + 5000 + 6, DUR_FIXED,
                 "1w2d3h4m5s6ms");
    /* fixed lengths that would re-parse as calendar periods */
    check_format(DAY_MS, DUR_FIXED, "24h");
    check_format(7 * DAY_MS, DUR_FIXED, "7d");
    /* calendar periods */
    check_format(DAY_MS, DUR_DAY, "1d");
    check_format(7 * DAY_MS, DUR_WEEK, "1w");
    check_format(30 * DAY_MS, DUR_MONTH, "1mo");
    check_format(-1500, DUR_FIXED, "-1s500ms");
    /* 2^63 ms, computed with python divmod chains */
    check_format(INT64_MIN, DUR_FIXED, "-15250284452w3d7h12m55s808ms");
}

static void test_format_small_buffer(void **state)
{
    rls_duration d = { 5400000, DUR_FIXED };
    char buf[4];
    (void)state;
    memset(buf, 'x', sizeof buf);
    assert_int_equal(rls__duration_format(&d, buf, sizeof buf), 5);
    assert_string_equal(buf, "1h3");
    assert_int_equal(rls__duration_format(&d, NULL, 0), 5);
    memset(buf, 'x', sizeof buf);
    assert_int_equal(rls__duration_format(&d, buf, 1), 5);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(buf[1], 'x');
    d.ms = -1;
    assert_int_equal(rls__duration_format(&d, buf, 1), 4);
    assert_int_equal(buf[0], '\0');
    d.calendar = DUR_MONTH;
    assert_int_equal(rls__duration_format(&d, buf, 2), 3);
    assert_string_equal(buf, "1");
    assert_int_equal(rls__duration_format(NULL, buf, sizeof buf), -1);
}

static void test_round_trip(void **state)
{
    static const char *texts[] = {
        "1ms", "999ms", "1s", "59s", "1m", "1h", "23h59m59s999ms", "24h",
        "1d", "1w", "1mo", "2d", "7d", "13d", "36h", "1w6d23h", "2mo",
        "36600d", "1h1ms",
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        rls_duration a = parse_ok(texts[i]), b;
        char buf[64];
        rls__duration_format(&a, buf, sizeof buf);
        b = parse_ok(buf);
        assert_int_equal(a.ms, b.ms);
        assert_int_equal(a.calendar, b.calendar);
    }
    /* every exact ms count from 1 to 100000 (step 7) survives */
    for (i = 1; i < 100000; i += 7) {
        rls_duration a = { (int64_t)i * 1237, DUR_FIXED }, b;
        char buf[64];
        rls__duration_format(&a, buf, sizeof buf);
        b = parse_ok(buf);
        assert_int_equal(a.ms, b.ms);
        assert_int_equal(b.calendar, DUR_FIXED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_units),
        cmocka_unit_test(test_calendar),
        cmocka_unit_test(test_combinations),
        cmocka_unit_test(test_length_argument),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_small_buffer),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests_name("duration", tests, NULL, NULL);
}
