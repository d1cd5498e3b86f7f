/*
 * test_window.c - window alignment: calendar days on DST days, ISO weeks,
 * calendar months, sub-day windows (incl. DST days and lengths that do not
 * divide the day), fixed windows of a day or longer, prev_start across DST
 * and month boundaries, far-future instants (POSIX footer), no-DST zones,
 * and invariants over many instants.
 *
 * Expected instants were computed with Python's zoneinfo, e.g.
 *   datetime(2026,3,29, tzinfo=ZoneInfo("Europe/Berlin")).timestamp()
 * and are hard-coded with a comment naming the local time.
 */
#include "testutil.h"
#include "window.h"

#define H 3600000LL
#define DAYMS 86400000LL

static rls_tz *berlin, *newyork, *tokyo, *kolkata, *havana;

static int setup(void **state)
{
    const char *why;
    (void)state;
    unsetenv("TZDIR");
    if (rls__tz_load("Europe/Berlin", &berlin, &why) || rls__tz_load("America/New_York", &newyork, &why) ||
        rls__tz_load("Asia/Tokyo", &tokyo, &why) || rls__tz_load("Asia/Kolkata", &kolkata, &why) ||
        rls__tz_load("America/Havana", &havana, &why))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rls__tz_free(berlin);
    rls__tz_free(newyork);
    rls__tz_free(tokyo);
    rls__tz_free(kolkata);
    rls__tz_free(havana);
    return 0;
}

static rls_duration dur(const char *text)
{
    rls_duration d;
    const char *why = NULL;
    if (rls__duration_parse(text, (size_t)-1, &d, &why) != 0)
        fail_msg("%s: %s", text, why);
    return d;
}

/* Asserts the window of `text` in tz at t. */
static void check(const char *text, const rls_tz *tz, int64_t t, int64_t want_prev,
                  int64_t want_start, int64_t want_end)
{
    rls_duration d = dur(text);
    int64_t p = -1, s = -1, e = -1;
    rls__window_at(&d, tz, t, &p, &s, &e);
    if (p != want_prev || s != want_start || e != want_end)
        fail_msg("%s at %lld in %s: got [%lld) %lld..%lld, want [%lld) %lld..%lld",
                 text, (long long)t, rls__tz_name(tz), (long long)p, (long long)s,
                 (long long)e, (long long)want_prev, (long long)want_start,
                 (long long)want_end);
}

static void test_day_dst_berlin(void **state)
{
    (void)state;
    /* 2026-03-29 (23 h): 00:00 CET = 1774738800000, 03-30 00:00 CEST =
     * 1774821600000; 03-28 00:00 CET = 1774652400000.  t = 03-29 12:00 CEST */
    check("1d", berlin, 1774778400000LL, 1774652400000LL, 1774738800000LL, 1774821600000LL);
    assert_int_equal(1774821600000LL - 1774738800000LL, 23 * H);
    /* edges: the first and the last millisecond of the day */
    check("1d", berlin, 1774738800000LL, 1774652400000LL, 1774738800000LL, 1774821600000LL);
    check("1d", berlin, 1774821600000LL - 1, 1774652400000LL, 1774738800000LL, 1774821600000LL);
    /* the next day: prev_start is the 23-hour day; t = 03-30 12:00 CEST */
    check("1d", berlin, 1774864800000LL, 1774738800000LL, 1774821600000LL,
          1774821600000LL + 24 * H);
    /* 2026-10-25 (25 h): 00:00 CEST = 1792879200000, 10-26 00:00 CET =
     * 1792969200000, 10-24 00:00 CEST = 1792792800000.  t = 10-25 02:30
     * CET, the second 02:30 (01:30Z) */
    check("1d", berlin, 1792891800000LL, 1792792800000LL, 1792879200000LL, 1792969200000LL);
    assert_int_equal(1792969200000LL - 1792879200000LL, 25 * H);
    /* 10-26 12:00 CET: prev is the 25-hour day */
    check("1d", berlin, 1793012400000LL, 1792879200000LL, 1792969200000LL,
          1792969200000LL + 24 * H);
}

static void test_day_dst_new_york(void **state)
{
    (void)state;
    /* 2026-03-08 (23 h): 00:00 EST = 1772946000000, 03-09 00:00 EDT =
     * 1773028800000, 03-07 00:00 EST = 1772859600000; t = 03-08 12:00 EDT */
    check("1d", newyork, 1772985600000LL, 1772859600000LL, 1772946000000LL, 1773028800000LL);
    /* 2026-11-01 (25 h): 00:00 EDT = 1793505600000, 11-02 00:00 EST =
     * 1793595600000, 10-31 00:00 EDT = 1793419200000; t = 12:00 EST and
     * both 01:30s (EDT 1793511000000, EST 1793514600000) */
    check("1d", newyork, 1793552400000LL, 1793419200000LL, 1793505600000LL, 1793595600000LL);
    check("1d", newyork, 1793511000000LL, 1793419200000LL, 1793505600000LL, 1793595600000LL);
    check("1d", newyork, 1793514600000LL, 1793419200000LL, 1793505600000LL, 1793595600000LL);
    assert_int_equal(1793595600000LL - 1793505600000LL, 25 * H);
}

/* America/Havana 2026-03-08: 00:00 does not exist (00:00 CST -> 01:00 CDT):
 * the day starts at the gap end 05:00Z; 03-07 00:00 CST = 1772859600000,
 * 03-09 00:00 CDT = 1773028800000; t = 03-08 12:00 CDT */
static void test_day_midnight_gap(void **state)
{
    (void)state;
    check("1d", havana, 1772985600000LL, 1772859600000LL, 1772946000000LL, 1773028800000LL);
}

static void test_week(void **state)
{
    (void)state;
    /* Berlin week of Sunday 2026-03-29: Mon 03-23 00:00 CET = 1774220400000
     * to Mon 03-30 00:00 CEST = 1774821600000 (167 h); prev Mon 03-16 CET
     * = 1773615600000; t = 03-29 12:00 CEST */
    check("1w", berlin, 1774778400000LL, 1773615600000LL, 1774220400000LL, 1774821600000LL);
    assert_int_equal(1774821600000LL - 1774220400000LL, 167 * H);
    /* Monday 00:00 starts a new week, Sunday 23:59:59.999 does not */
    check("1w", berlin, 1774821600000LL, 1774220400000LL, 1774821600000LL,
          1774821600000LL + 168 * H);
    /* UTC, year boundary: Thu 2026-12-31 12:00 and Fri 2027-01-01 12:00 are
     * in the ISO week Mon 2026-12-28 (1798416000000) .. Mon 2027-01-04
     * (1799020800000); prev Mon 2026-12-21 (1797811200000) */
    check("1w", NULL, 1798718400000LL, 1797811200000LL, 1798416000000LL, 1799020800000LL);
    check("1w", NULL, 1798804800000LL, 1797811200000LL, 1798416000000LL, 1799020800000LL);
    /* Wed 2025-12-31 12:00Z: Mon 2025-12-29 .. Mon 2026-01-05 */
    check("1w", NULL, 1767182400000LL, 1766361600000LL, 1766966400000LL, 1767571200000LL);
    /* Berlin Sun 2027-01-03 23:59:59 CET: week Mon 2026-12-28 00:00 CET
     * (1798412400000) .. Mon 2027-01-04 00:00 CET (1799017200000) */
    check("1w", berlin, 1799017199000LL, 1798412400000LL - 168 * H, 1798412400000LL,
          1799017200000LL);
    check("1w", berlin, 1799017200000LL - 1, 1798412400000LL - 168 * H, 1798412400000LL,
          1799017200000LL);
}

static void test_month(void **state)
{
    (void)state;
    /* Feb 2028 (leap) Berlin: t = 02-29 12:00 CET; 02-01 00:00 CET =
     * 1832972400000, 03-01 00:00 CET = 1835478000000, 01-01 00:00 CET =
     * 1830294000000 */
    check("1mo", berlin, 1835434800000LL, 1830294000000LL, 1832972400000LL, 1835478000000LL);
    assert_int_equal(1835478000000LL - 1832972400000LL, 29 * DAYMS);
    /* Dec -> Jan: t = 2026-12-15 00:00 CET: 12-01 1796079600000 .. 2027-01-01
     * 1798758000000, prev 11-01 1793487600000 */
    check("1mo", berlin, 1797289200000LL, 1793487600000LL, 1796079600000LL, 1798758000000LL);
    /* t = 2027-01-10 00:00 CET: Jan .. 02-01 1801436400000, prev December */
    check("1mo", berlin, 1799535600000LL, 1796079600000LL, 1798758000000LL, 1801436400000LL);
    /* April 2026 Berlin: prev is March, which is 31 d - 1 h long:
     * 03-01 00:00 CET 1772319600000, 04-01 00:00 CEST 1774994400000,
     * 05-01 1777586400000; t = 04-15 00:00 CEST */
    check("1mo", berlin, 1776204000000LL, 1772319600000LL, 1774994400000LL, 1777586400000LL);
    assert_int_equal(1774994400000LL - 1772319600000LL, 31 * DAYMS - H);
    /* November 2026 New York (contains the fall-back): 11-01 00:00 EDT
     * 1793505600000 .. 12-01 00:00 EST 1796101200000, prev 10-01 EDT
     * 1790827200000; t = 11-15 00:00 EST */
    check("1mo", newyork, 1794718800000LL, 1790827200000LL, 1793505600000LL, 1796101200000LL);
    assert_int_equal(1796101200000LL - 1793505600000LL, 30 * DAYMS + H);
    /* UTC and the first millisecond of a month */
    check("1mo", NULL, 1772323200000LL, 1769904000000LL, 1772323200000LL, 1775001600000LL);
}

static void test_far_future_and_no_dst(void **state)
{
    (void)state;
    /* Berlin 2100-03-28 (a Sunday, 23 h, beyond the TZif table): 00:00 CET
     * 4109871600000 .. 03-29 00:00 CEST 4109954400000, prev 03-27 00:00 CET
     * 4109785200000; t = 12:00 CEST */
    check("1d", berlin, 4109911200000LL, 4109785200000LL, 4109871600000LL, 4109954400000LL);
    /* Tokyo (+9, no DST): 2026-03-29 00:00 JST = 1774710000000; week from
     * Mon 03-23 1774191600000; month 03-01 1772290800000 .. 04-01
     * 1774969200000; t = 03-29 12:00 JST */
    check("1d", tokyo, 1774753200000LL, 1774710000000LL - 24 * H, 1774710000000LL,
          1774796400000LL);
    check("1w", tokyo, 1774753200000LL, 1774191600000LL - 168 * H, 1774191600000LL,
          1774191600000LL + 168 * H);
    check("1mo", tokyo, 1774753200000LL, 1772290800000LL - 28 * DAYMS, 1772290800000LL,
          1774969200000LL);
    check("1h", tokyo, 1774753200000LL + 5, 1774753200000LL - H, 1774753200000LL,
          1774753200000LL + H);
}

static void test_subday(void **state)
{
    (void)state;
    /* 1h, Berlin 2026-03-29 03:30 CEST: elapsed 2.5 h since midnight ->
     * window 03:00 CEST (1774746000000) .. 04:00, prev 01:00 CET */
    check("1h", berlin, 1774747800000LL, 1774742400000LL, 1774746000000LL,
          1774746000000LL + H);
    /* the 23rd and last hour: 23:00 CEST .. 03-30 00:00 CEST */
    check("1h", berlin, 1774819800000LL, 1774818000000LL - H, 1774818000000LL,
          1774821600000LL);
    /* first hour of 03-30 (00:10 CEST): prev is the last hour of 03-29 */
    check("1h", berlin, 1774822200000LL, 1774818000000LL, 1774821600000LL,
          1774821600000LL + H);
    /* 25-hour day: the 25th hour 23:00 CET (1792965600000) .. 10-26 00:00 */
    check("1h", berlin, 1792967400000LL, 1792965600000LL - H, 1792965600000LL,
          1792969200000LL);
    /* 2h on the 25-hour day: from midnight 1792879200000 in elapsed time;
     * window 2 starts at +4 h = 03:00 CET (odd wall hour, documented), and
     * the 13th window (+24 h) is cut to 1 h by the next midnight */
    check("2h", berlin, 1792879200000LL + 4 * H + 1, 1792879200000LL + 2 * H,
          1792879200000LL + 4 * H, 1792879200000LL + 6 * H);
    check("2h", berlin, 1792969200000LL - 1, 1792879200000LL + 22 * H,
          1792879200000LL + 24 * H, 1792969200000LL);
    /* prev of the next day's first 2h window: that 1-hour window */
    check("2h", berlin, 1792969200000LL, 1792879200000LL + 24 * H, 1792969200000LL,
          1792969200000LL + 2 * H);
    /* 7h does not divide 24: Berlin 2026-07-01, midnight 1782856800000,
     * windows at +0, +7, +14, +21 (cut at 07-02 00:00 = 1782943200000) */
    check("7h", berlin, 1782939600000LL, 1782856800000LL + 14 * H,
          1782856800000LL + 21 * H, 1782943200000LL);
    check("7h", berlin, 1782946800000LL, 1782856800000LL + 21 * H, 1782943200000LL,
          1782943200000LL + 7 * H);
    /* 90m in UTC: 13:37Z is in 13:30..15:00 */
    check("90m", NULL, 1774791420000LL, 1774791000000LL - 90 * 60000,
          1774791000000LL, 1774796400000LL);
    /* Kolkata (+5:30): hours align to local hours, 12:10 IST is in
     * 12:00 IST (06:30Z, 1782887400000) .. 13:00 IST */
    check("1h", kolkata, 1782888000000LL, 1782887400000LL - H, 1782887400000LL,
          1782891000000LL);
    /* sub-second and odd lengths in UTC */
    check("250ms", NULL, 1000000000123LL, 999999999750LL, 1000000000000LL, 1000000000250LL);
    check("1ms", NULL, 42, 41, 42, 43);
    /* 1440 % 7 = 5: the last window of 1969-12-31 is 23:55..24:00 */
    check("7m", NULL, 0, -5 * 60000, 0, 7 * 60000);
}

static void test_long_fixed(void **state)
{
    (void)state;
    /* 24h = local days: same as 1d on the DST day */
    check("24h", berlin, 1774778400000LL, 1774652400000LL, 1774738800000LL, 1774821600000LL);
    /* 2d: local day 20541 (03-29) is odd -> window from 03-28 00:00 CET
     * (1774652400000) to 03-30 00:00 CEST (1774821600000, 47 h), prev from
     * 03-26 00:00 CET (1774479600000) */
    check("2d", berlin, 1774778400000LL, 1774479600000LL, 1774652400000LL, 1774821600000LL);
    /* 36h: 03-29 00:00 CET (1774738800000) .. 03-30 12:00 CEST
     * (1774864800000, 35 h); prev 03-27 12:00 CET (1774609200000) */
    check("36h", berlin, 1774778400000LL, 1774609200000LL, 1774738800000LL, 1774864800000LL);
    /* 7d in UTC: Thursdays (1970-01-01 was one); t = Sun 2026-03-29 12:00Z
     * -> Thu 03-26 (1774483200000) .. Thu 04-02, prev Thu 03-19 */
    check("7d", NULL, 1774785600000LL, 1773878400000LL, 1774483200000LL, 1775088000000LL);
    /* 1d1d is a fixed 2d */
    check("1d1d", berlin, 1774778400000LL, 1774479600000LL, 1774652400000LL, 1774821600000LL);
}

/* Invariants over many instants in several zones and lengths: the window
 * contains t, is contiguous with its neighbours, prev ends at start, and a
 * fixed sub-day window is never longer than its length. */
static void test_invariants(void **state)
{
    static const char *durs[] = {
        "1d", "1w", "1mo", "1h", "7m", "90m", "5h", "23h", "24h", "36h", "2d", "7d", "1mo1d",
    };
    const rls_tz *zones[] = { berlin, newyork, tokyo, kolkata, havana, NULL };
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    size_t z, k;
    int i;
    (void)state;
    for (z = 0; z < sizeof zones / sizeof zones[0]; z++) {
        for (k = 0; k < sizeof durs / sizeof durs[0]; k++) {
            rls_duration d = dur(durs[k]);
            for (i = 0; i < 1500; i++) {
                int64_t t, p, s, e, p2, s2, e2;
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                /* 1950 .. 2150 */
                t = -631152000000LL + (int64_t)(seed % 6311520000000ULL);
                rls__window_at(&d, zones[z], t, &p, &s, &e);
                assert_true(p < s && s <= t && t < e);
                if (d.calendar == DUR_FIXED && d.ms < DAYMS)
                    assert_true(e - s <= d.ms);
                rls__window_at(&d, zones[z], s - 1, &p2, &s2, &e2);
                assert_int_equal(s2, p);
                assert_int_equal(e2, s);
                rls__window_at(&d, zones[z], e, &p2, &s2, &e2);
                assert_int_equal(p2, s);
                rls__window_at(&d, zones[z], e - 1, NULL, &s2, &e2);
                assert_int_equal(s2, s);
                assert_int_equal(e2, e);
            }
        }
    }
}

/* rls__window_at (the thread's cache of recent windows) against
 * rls__window_compute (none) at t. */
static void same_as_computed(const rls_duration *d, const rls_tz *tz, int64_t t)
{
    int64_t p, s, e, p2, s2, e2;
    rls__window_at(d, tz, t, &p, &s, &e);
    rls__window_compute(d, tz, t, &p2, &s2, &e2);
    if (p != p2 || s != s2 || e != e2)
        fail_msg("%s at %lld: cached [%lld) %lld..%lld, computed [%lld) %lld..%lld",
                 rls__tz_name(tz), (long long)t, (long long)p, (long long)s, (long long)e,
                 (long long)p2, (long long)s2, (long long)e2);
}

/* The window cache never answers with a stale window: walking every
 * window edge (end - 1, end, end + 1) forward through DST changes and
 * back, interleaving lengths and zones (more than the cache holds), and a
 * zone freed and another loaded (maybe at its address) at the same instant. */
static void test_cache_edges(void **state)
{
    static const char *durs[] = {"1d", "1w", "1mo", "1h", "90m", "7m", "24h", "36h", "2d"};
    const rls_tz *zones[] = {berlin, newyork, havana, NULL};
    (void)state;
    for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
        for (size_t k = 0; k < sizeof durs / sizeof durs[0]; k++) {
            rls_duration d = dur(durs[k]), other = dur(durs[(k + 1) % 9]);
            /* 2026-03-20 .. past Europe's and America's spring changes */
            int64_t t = 1773964800000LL, s, e, p;
            for (int i = 0; i < 40; i++) {
                rls__window_at(&d, zones[z], t, &p, &s, &e);
                for (int64_t u = e - 2; u <= e + 1; u++) {
                    same_as_computed(&d, zones[z], u);
                    same_as_computed(&other, zones[(z + 1) % 4], u);   /* evicts */
                }
                same_as_computed(&d, zones[z], s);
                same_as_computed(&d, zones[z], s - 1);
                t = e;
            }
            for (int i = 0; i < 20; i++) {   /* and back */
                rls__window_at(&d, zones[z], t, &p, &s, &e);
                same_as_computed(&d, zones[z], s - 1);
                same_as_computed(&d, zones[z], s);
                t = s - 1;
            }
        }
    }
    /* Fall back in New York, 2026-11-01: the 25-hour day */
    rls_duration day = dur("1d");
    for (int64_t u = 1793505600000LL - 3; u < 1793505600000LL + 3; u++)
        same_as_computed(&day, newyork, u);
    for (int64_t u = 1793592000000LL - 3; u < 1793592000000LL + 3; u++)
        same_as_computed(&day, newyork, u);
    /* a zone freed and another loaded: never the first one's window */
    const char *why;
    rls_tz *a = NULL, *b = NULL;
    int64_t t = 1775000000000LL, sa, sb, p, e;
    assert_int_equal(rls__tz_load("Asia/Tokyo", &a, &why), 0);
    uint64_t serial = rls__tz_serial(a);
    rls__window_at(&day, a, t, &p, &sa, &e);
    rls__tz_free(a);
    assert_int_equal(rls__tz_load("America/Los_Angeles", &b, &why), 0);
    assert_true(rls__tz_serial(b) != serial);
    rls__window_at(&day, b, t, &p, &sb, &e);
    assert_true(sa != sb);
    same_as_computed(&day, b, t);
    rls__tz_free(b);
}

static void test_defensive(void **state)
{
    int64_t p, s, e;
    rls_duration zero = { 0, DUR_FIXED };
    rls_duration day = { DAYMS, DUR_DAY };
    (void)state;
    rls__window_at(NULL, NULL, 100, &p, &s, &e);
    assert_int_equal(s, 100);
    assert_int_equal(e, 101);
    rls__window_at(&zero, berlin, 100, &p, &s, &e);
    assert_int_equal(s, 100);
    rls__window_at(&day, berlin, 100, NULL, NULL, NULL);
    /* extreme instants are clamped, never overflow */
    rls__window_at(&day, berlin, INT64_MAX, &p, &s, &e);
    assert_true(p < s && s < e);
    rls__window_at(&day, berlin, INT64_MIN, &p, &s, &e);
    assert_true(p < s && s < e);
    {
        rls_duration big = dur("36600d");
        rls_duration huge = { INT64_MAX, DUR_FIXED };
        rls__window_at(&big, berlin, INT64_MAX, &p, &s, &e);
        assert_true(p < s && s < e);
        rls__window_at(&big, berlin, INT64_MIN, &p, &s, &e);
        assert_true(p < s && s < e);
        /* a hand-made length beyond DUR_MS_MAX is treated as DUR_MS_MAX */
        rls__window_at(&huge, NULL, 0, &p, &s, &e);
        assert_true(p < s && s <= 0 && 0 < e);
        assert_int_equal(e - s, DUR_MS_MAX);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_day_dst_berlin),
        cmocka_unit_test(test_day_dst_new_york),
        cmocka_unit_test(test_day_midnight_gap),
        cmocka_unit_test(test_week),
        cmocka_unit_test(test_month),
        cmocka_unit_test(test_far_future_and_no_dst),
        cmocka_unit_test(test_subday),
        cmocka_unit_test(test_long_fixed),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_cache_edges),
        cmocka_unit_test(test_defensive),
    };
    return cmocka_run_group_tests_name("window", tests, setup, teardown);
}
