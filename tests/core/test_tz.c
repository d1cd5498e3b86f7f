/*
 * test_tz.c - civil date helpers, TZif loading (system zones and
 * hand-built files), the POSIX footer rule beyond the table, local midnight
 * and local-to-UTC conversion in gaps and folds, hostile files, bad names.
 *
 * Expected instants were computed independently with Python's zoneinfo
 * (same tzdata, separate implementation) and are hard-coded with comments.
 */
#include "testutil.h"
#include "tz.h"

#include <sys/stat.h>

#define H 3600000LL
#define TZ_TEST_MAX 8192

static rls_tz *load(const char *name)
{
    rls_tz *tz = NULL;
    const char *why = NULL;
    if (rls__tz_load(name, &tz, &why) != 0)
        fail_msg("rls__tz_load(%s): %s", name, why ? why : "(null)");
    return tz;
}

static const char *load_err(const char *name)
{
    rls_tz *tz = (rls_tz *)1;
    const char *why = NULL;
    assert_int_equal(rls__tz_load(name, &tz, &why), -1);
    assert_null(tz);
    assert_non_null(why);
    return why;
}

/* ---- civil helpers ------------------------------------------------------ */

static void test_civil(void **state)
{
    int64_t y, d;
    int m, dd;
    (void)state;
    assert_int_equal(rls__civil_days_from(1970, 1, 1), 0);
    assert_int_equal(rls__civil_days_from(1969, 12, 31), -1);
    assert_int_equal(rls__civil_days_from(2000, 3, 1), 11017);
    assert_int_equal(rls__civil_days_from(2026, 3, 29), 20541);
    assert_int_equal(rls__civil_days_from(2028, 2, 29), 21243);
    assert_int_equal(rls__civil_days_from(1900, 3, 1), -25508);
    assert_int_equal(rls__civil_days_from(2100, 3, 1), 47541);
    assert_int_equal(rls__civil_days_from(1, 1, 1), -719162);
    assert_int_equal(rls__civil_days_from(9999, 12, 31), 2932896);
    /* 1900 and 2100 are not leap years, 2000 is */
    assert_int_equal(rls__civil_days_from(1900, 3, 1) - rls__civil_days_from(1900, 2, 28), 1);
    assert_int_equal(rls__civil_days_from(2000, 3, 1) - rls__civil_days_from(2000, 2, 28), 2);
    assert_int_equal(rls__civil_days_from(2100, 3, 1) - rls__civil_days_from(2100, 2, 28), 1);
    rls__civil_from_days(21243, &y, &m, &dd);
    assert_int_equal(y, 2028);
    assert_int_equal(m, 2);
    assert_int_equal(dd, 29);
    rls__civil_from_days(-719162, &y, &m, &dd);
    assert_int_equal(y, 1);
    assert_int_equal(m, 1);
    assert_int_equal(dd, 1);
    rls__civil_from_days(-1, &y, &m, &dd);
    assert_int_equal(y, 1969);
    assert_int_equal(m, 12);
    assert_int_equal(dd, 31);
    /* round trip over 1600..2400 */
    for (d = rls__civil_days_from(1600, 1, 1); d < rls__civil_days_from(2400, 1, 1); d++) {
        rls__civil_from_days(d, &y, &m, &dd);
        assert_int_equal(rls__civil_days_from(y, m, dd), d);
        assert_true(m >= 1 && m <= 12 && dd >= 1 && dd <= 31);
    }
    /* weekday: 0 = Monday; 1970-01-01 Thursday, 2026-03-29 Sunday,
     * 2026-01-01 Thursday, 2027-01-01 Friday, 2000-01-01 Saturday */
    assert_int_equal(rls__civil_weekday(0), 3);
    assert_int_equal(rls__civil_weekday(20541), 6);
    assert_int_equal(rls__civil_weekday(rls__civil_days_from(2026, 1, 1)), 3);
    assert_int_equal(rls__civil_weekday(rls__civil_days_from(2027, 1, 1)), 4);
    assert_int_equal(rls__civil_weekday(rls__civil_days_from(2000, 1, 1)), 5);
    assert_int_equal(rls__civil_weekday(-1), 2);
    assert_int_equal(rls__civil_weekday(-7), 3);
}

/* ---- built-in UTC ------------------------------------------------------- */

static void test_utc_builtin(void **state)
{
    char *dir = tu_mkdtemp();
    rls_tz *a, *b;
    (void)state;
    /* an empty zoneinfo directory: UTC must not need it */
    setenv("TZDIR", dir, 1);
    a = load("UTC");
    b = load("Etc/UTC");
    assert_string_equal(rls__tz_name(a), "UTC");
    assert_string_equal(rls__tz_name(b), "Etc/UTC");
    assert_int_equal(rls__tz_offset_at(a, 1774738800000LL), 0);
    assert_int_equal(rls__tz_local_day(b, 86400000LL - 1), 0);
    assert_int_equal(rls__tz_local_day(b, -1), -1);
    assert_int_equal(rls__tz_local_midnight(a, 20541), 20541 * 86400000LL);
    assert_string_equal(load_err("Europe/Berlin"), "unknown time zone");
    rls__tz_free(a);
    rls__tz_free(b);
    rls__tz_free(NULL);
    unsetenv("TZDIR");
    tu_rmdir(dir);
    /* NULL means UTC */
    assert_int_equal(rls__tz_offset_at(NULL, 123), 0);
    assert_string_equal(rls__tz_name(NULL), "UTC");
    assert_int_equal(rls__tz_local_to_utc(NULL, 5), 5);
}

/* ---- system zones ------------------------------------------------------- */

static void test_berlin(void **state)
{
    rls_tz *tz = load("Europe/Berlin");
    (void)state;
    assert_string_equal(rls__tz_name(tz), "Europe/Berlin");
    /* 2026-03-29 01:00Z CET -> CEST; 2026-10-25 01:00Z CEST -> CET */
    assert_int_equal(rls__tz_offset_at(tz, 1774746000000LL - 1), 3600);
    assert_int_equal(rls__tz_offset_at(tz, 1774746000000LL), 7200);
    assert_int_equal(rls__tz_offset_at(tz, 1792890000000LL - 1), 7200);
    assert_int_equal(rls__tz_offset_at(tz, 1792890000000LL), 3600);
    /* before the first transition: LMT +0:53:28 (1893) */
    assert_int_equal(rls__tz_offset_at(tz, -4000000000000LL), 3208);
    /* local midnights: 2026-03-29 00:00 CET = 03-28 23:00Z,
     * 2026-03-30 00:00 CEST = 03-29 22:00Z (a 23-hour day),
     * 2026-10-25 00:00 CEST = 10-24 22:00Z, 10-26 00:00 CET = 10-25 23:00Z */
    assert_int_equal(rls__tz_local_midnight(tz, 20541), 1774738800000LL);
    assert_int_equal(rls__tz_local_midnight(tz, 20542), 1774821600000LL);
    assert_int_equal(rls__tz_local_midnight(tz, 20541 + 210), 1792879200000LL);
    assert_int_equal(rls__tz_local_midnight(tz, 20541 + 211), 1792969200000LL);
    assert_int_equal(rls__tz_local_day(tz, 1774738800000LL), 20541);
    assert_int_equal(rls__tz_local_day(tz, 1774738800000LL - 1), 20540);
    assert_int_equal(rls__tz_local_day(tz, 1774821600000LL - 1), 20541);
    /* gap: 2026-03-29 02:30 local does not exist -> 01:00Z (03:00 CEST) */
    assert_int_equal(rls__tz_local_to_utc(tz, (20541 * 24 + 2) * H + H / 2),
                     1774746000000LL);
    /* fold: 2026-10-25 02:30 local occurs at 00:30Z and 01:30Z -> earlier */
    assert_int_equal(rls__tz_local_to_utc(tz, ((20541 + 210) * 24 + 2) * H + H / 2),
                     1792888200000LL);
    /* ordinary: 2026-07-01 12:00 CEST = 10:00Z */
    assert_int_equal(rls__tz_local_to_utc(tz, (rls__civil_days_from(2026, 7, 1) * 24 + 12) * H),
                     rls__civil_days_from(2026, 7, 1) * 24 * H + 10 * H);
    rls__tz_free(tz);
}

static void test_new_york(void **state)
{
    rls_tz *tz = load("America/New_York");
    int64_t mar8 = rls__civil_days_from(2026, 3, 8), nov1 = rls__civil_days_from(2026, 11, 1);
    (void)state;
    /* 2026-03-08 07:00Z EST -> EDT, 2026-11-01 06:00Z EDT -> EST */
    assert_int_equal(rls__tz_offset_at(tz, 1772953200000LL - 1), -18000);
    assert_int_equal(rls__tz_offset_at(tz, 1772953200000LL), -14400);
    assert_int_equal(rls__tz_offset_at(tz, 1793512800000LL - 1), -14400);
    assert_int_equal(rls__tz_offset_at(tz, 1793512800000LL), -18000);
    /* midnights 03-08 05:00Z, 03-09 04:00Z, 11-01 04:00Z, 11-02 05:00Z */
    assert_int_equal(rls__tz_local_midnight(tz, mar8), 1772946000000LL);
    assert_int_equal(rls__tz_local_midnight(tz, mar8 + 1), 1773028800000LL);
    assert_int_equal(rls__tz_local_midnight(tz, nov1), 1793505600000LL);
    assert_int_equal(rls__tz_local_midnight(tz, nov1 + 1), 1793595600000LL);
    /* before the first transition (1883-11-18 17:00Z): LMT -4:56:02 */
    assert_int_equal(rls__tz_offset_at(tz, -2717650800000LL - 1), -17762);
    assert_int_equal(rls__tz_offset_at(tz, -2717650800000LL), -18000);
    rls__tz_free(tz);
}

/* Year 2100 is beyond the TZif tables (which end in 2037): the footer rule
 * decides.  Transition instants from zoneinfo: */
static void test_footer_2100(void **state)
{
    rls_tz *b = load("Europe/Berlin"), *ny = load("America/New_York");
    rls_tz *syd = load("Australia/Sydney");
    (void)state;
    /* Berlin 2100-03-28 01:00Z +1 -> +2, 2100-10-31 01:00Z +2 -> +1 */
    assert_int_equal(rls__tz_offset_at(b, 4109878800000LL - 1), 3600);
    assert_int_equal(rls__tz_offset_at(b, 4109878800000LL), 7200);
    assert_int_equal(rls__tz_offset_at(b, 4128627600000LL - 1), 7200);
    assert_int_equal(rls__tz_offset_at(b, 4128627600000LL), 3600);
    /* New York 2100-03-14 07:00Z, 2100-11-07 06:00Z */
    assert_int_equal(rls__tz_offset_at(ny, 4108690800000LL - 1), -18000);
    assert_int_equal(rls__tz_offset_at(ny, 4108690800000LL), -14400);
    assert_int_equal(rls__tz_offset_at(ny, 4129250400000LL - 1), -14400);
    assert_int_equal(rls__tz_offset_at(ny, 4129250400000LL), -18000);
    /* Sydney (southern): 2100-04-03 16:00Z +11 -> +10, 2100-10-02 16:00Z +10 -> +11 */
    assert_int_equal(rls__tz_offset_at(syd, 4110451200000LL - 1), 39600);
    assert_int_equal(rls__tz_offset_at(syd, 4110451200000LL), 36000);
    assert_int_equal(rls__tz_offset_at(syd, 4126176000000LL - 1), 36000);
    assert_int_equal(rls__tz_offset_at(syd, 4126176000000LL), 39600);
    assert_int_equal(rls__tz_offset_at(syd, 4102444800000LL), 39600); /* 2100-01-01 */
    /* local midnight 2100-03-29 (Berlin, the day after the change): 22:00Z */
    assert_int_equal(rls__tz_local_midnight(b, rls__civil_days_from(2100, 3, 29)),
                     rls__civil_days_from(2100, 3, 29) * 24 * H - 2 * H);
    rls__tz_free(b);
    rls__tz_free(ny);
    rls__tz_free(syd);
}

static void test_tokyo_no_dst(void **state)
{
    rls_tz *tz = load("Asia/Tokyo");
    int64_t d;
    (void)state;
    for (d = rls__civil_days_from(2026, 1, 1); d < rls__civil_days_from(2027, 1, 1); d += 5) {
        assert_int_equal(rls__tz_offset_at(tz, d * 24 * H), 32400);
        assert_int_equal(rls__tz_local_midnight(tz, d), d * 24 * H - 9 * H);
    }
    assert_int_equal(rls__tz_offset_at(tz, 4109878800000LL), 32400);   /* 2100 */
    rls__tz_free(tz);
}

/* Midnight itself in a gap or fold: America/Havana. */
static void test_midnight_gap_fold(void **state)
{
    rls_tz *tz = load("America/Havana");
    (void)state;
    /* 2026-03-08: 00:00 CST jumps to 01:00 CDT at 05:00Z: the day starts
     * at the gap end */
    assert_int_equal(rls__tz_local_midnight(tz, rls__civil_days_from(2026, 3, 8)),
                     1772946000000LL);
    assert_int_equal(rls__tz_offset_at(tz, 1772946000000LL), -14400);
    /* 2025-11-02: 01:00 CDT falls back to 00:00 CST: midnight happens at
     * 04:00Z and at 05:00Z; the day starts at the first */
    assert_int_equal(rls__tz_local_midnight(tz, rls__civil_days_from(2025, 11, 2)),
                     1762056000000LL);
    assert_int_equal(rls__tz_local_day(tz, 1762056000000LL), rls__civil_days_from(2025, 11, 2));
    rls__tz_free(tz);
}

/* ---- hand-built TZif files ---------------------------------------------- */

struct tzb {
    unsigned char b[8192];
    size_t n;
};

static void put8(struct tzb *t, unsigned v) { t->b[t->n++] = (unsigned char)v; }
static void put32(struct tzb *t, uint32_t v)
{
    put8(t, v >> 24); put8(t, (v >> 16) & 255); put8(t, (v >> 8) & 255); put8(t, v & 255);
}
static void put64(struct tzb *t, int64_t v)
{
    put32(t, (uint32_t)((uint64_t)v >> 32)); put32(t, (uint32_t)v);
}

/* A TZif file with the given transitions and types; ver 0 (v1) or '2'..'4';
 * footer NULL for none (only v2+). */
static void build(struct tzb *t, int ver, int nt, const int64_t *times,
                  const unsigned char *idx, int ny, const int32_t *offs,
                  const unsigned char *dst, const char *footer)
{
    int pass, i;
    t->n = 0;
    for (pass = 0; pass < (ver ? 2 : 1); pass++) {
        int tsz = pass == 0 ? 4 : 8;
        memcpy(t->b + t->n, "TZif", 4);
        t->n += 4;
        put8(t, (unsigned)ver);
        memset(t->b + t->n, 0, 15);
        t->n += 15;
        put32(t, 0); put32(t, 0); put32(t, 0);            /* isut, isstd, leap */
        put32(t, (uint32_t)nt); put32(t, (uint32_t)ny); put32(t, 4);
        for (i = 0; i < nt; i++) {
            if (tsz == 4) put32(t, (uint32_t)(int32_t)times[i]);
            else put64(t, times[i]);
        }
        for (i = 0; i < nt; i++) put8(t, idx[i]);
        for (i = 0; i < ny; i++) {
            put32(t, (uint32_t)offs[i]); put8(t, dst[i]); put8(t, 0);
        }
        memcpy(t->b + t->n, "AB\0", 4);
        t->n += 4;
    }
    if (ver && footer) {
        put8(t, '\n');
        memcpy(t->b + t->n, footer, strlen(footer));
        t->n += strlen(footer);
        put8(t, '\n');
    }
}

static void write_zone(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4200];
    FILE *f;
    tu_path(path, sizeof path, dir, name);
    /* a new inode each time: truncating a file in place makes ext4 flush it
     * on close (auto_da_alloc), which is slow over thousands of rewrites */
    unlink(path);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static int setup_dir(void **state)
{
    char *dir = tu_mkdtemp();
    char sub[4200];
    if (!dir)
        return -1;
    tu_path(sub, sizeof sub, dir, "Test");
    mkdir(sub, 0700);
    setenv("TZDIR", dir, 1);
    *state = dir;
    return 0;
}

static int teardown_dir(void **state)
{
    unsetenv("TZDIR");
    tu_rmdir(*state);
    return 0;
}

static void test_built_v1_and_v2(void **state)
{
    const char *dir = *state;
    struct tzb t;
    static const int64_t times[2] = { 1000000000, 1100000000 };
    static const unsigned char idx[2] = { 1, 0 };
    static const int32_t offs[2] = { 3600, 7200 };
    static const unsigned char dst[2] = { 0, 1 };
    rls_tz *tz;

    /* v1: 32-bit data only, no footer: the last type stays in force */
    build(&t, 0, 2, times, idx, 2, offs, dst, NULL);
    write_zone(dir, "Test/V1", t.b, t.n);
    tz = load("Test/V1");
    assert_int_equal(rls__tz_offset_at(tz, 999999999999LL), 3600);   /* type 0 */
    assert_int_equal(rls__tz_offset_at(tz, 1000000000000LL), 7200);
    assert_int_equal(rls__tz_offset_at(tz, 1100000000000LL - 1), 7200);
    assert_int_equal(rls__tz_offset_at(tz, 1100000000000LL), 3600);
    assert_int_equal(rls__tz_offset_at(tz, 4109878800000LL), 3600);
    rls__tz_free(tz);

    /* v3, no transitions, footer only: Lord Howe style half-hour DST in the
     * southern hemisphere.  2026: DST (+11) from 10-04 02:00 local (+10:30)
     * = 10-03 15:30Z until 04-05 02:00 local (+11) = 04-04 15:00Z. */
    build(&t, '3', 0, NULL, NULL, 1, offs, dst,
          "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
    write_zone(dir, "Test/LH", t.b, t.n);
    tz = load("Test/LH");
    assert_int_equal(rls__tz_offset_at(tz, 1775314800000LL - 1), 39600);  /* 2026-04-04 15:00Z */
    assert_int_equal(rls__tz_offset_at(tz, 1775314800000LL), 37800);
    assert_int_equal(rls__tz_offset_at(tz, 1791041400000LL - 1), 37800);  /* 2026-10-03 15:30Z */
    assert_int_equal(rls__tz_offset_at(tz, 1791041400000LL), 39600);
    assert_int_equal(rls__tz_offset_at(tz, 1767225600000LL), 39600);      /* 2026-01-01 */
    rls__tz_free(tz);

    /* v4, negative rule times (as in America/Nuuk): -02 / -01 DST from
     * the last Sunday of March at -1:00 to the last Sunday of October at
     * 0:00 local.  2026: 03-28 23:00 local = 03-29 01:00Z; 10-25 00:00
     * local (-01) = 10-25 01:00Z. */
    build(&t, '4', 0, NULL, NULL, 1, offs, dst, "<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
    write_zone(dir, "Test/Neg", t.b, t.n);
    tz = load("Test/Neg");
    assert_int_equal(rls__tz_offset_at(tz, 1774746000000LL - 1), -7200);
    assert_int_equal(rls__tz_offset_at(tz, 1774746000000LL), -3600);
    assert_int_equal(rls__tz_offset_at(tz, 1792890000000LL - 1), -3600);
    assert_int_equal(rls__tz_offset_at(tz, 1792890000000LL), -7200);
    rls__tz_free(tz);

    /* Julian forms and DST all year: "J1/0 .. J365/25" covers the year */
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "EST5EDT,0/0,J365/25");
    write_zone(dir, "Test/AllDst", t.b, t.n);
    tz = load("Test/AllDst");
    assert_int_equal(rls__tz_offset_at(tz, 1767225600000LL), -14400);    /* 2026-01-01 00:00Z */
    /* 2025's end (12-31 25:00 EDT) and 2026's start (01-01 00:00 EST) are
     * both 2026-01-01 05:00Z: the start wins, DST continues */
    assert_int_equal(rls__tz_offset_at(tz, 1767243600000LL - 1), -14400);
    assert_int_equal(rls__tz_offset_at(tz, 1767243600000LL), -14400);
    assert_int_equal(rls__tz_offset_at(tz, 1782864000000LL), -14400);    /* 2026-07-01 */
    assert_int_equal(rls__tz_offset_at(tz, 1798761599000LL), -14400);    /* 2026-12-31 23:59:59Z */
    rls__tz_free(tz);

    /* Jn skips Feb 29, n counts it: in 2028 (leap) J60 is March 1 and 59 is
     * Feb 29.  DST from J60/0 to 300/0, std +0 ("AAA0BBB"). */
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "AAA0BBB,J60/0,59/0");
    write_zone(dir, "Test/Jul", t.b, t.n);
    tz = load("Test/Jul");
    /* start 2028-03-01 00:00Z; end day 59 = 2028-02-29 00:00 local (+1) =
     * 02-28 23:00Z.  2027 (not leap): J60 = 59 = March 1, so DST runs from
     * 2027-03-01 00:00Z to 2028-02-28 23:00Z, then again from 2028-03-01. */
    assert_int_equal(rls__tz_offset_at(tz, rls__civil_days_from(2028, 3, 1) * 24 * H - 1), 0);
    assert_int_equal(rls__tz_offset_at(tz, rls__civil_days_from(2028, 3, 1) * 24 * H), 3600);
    assert_int_equal(rls__tz_offset_at(tz, rls__civil_days_from(2028, 2, 28) * 24 * H + 23 * H - 1), 3600);
    assert_int_equal(rls__tz_offset_at(tz, rls__civil_days_from(2028, 2, 28) * 24 * H + 23 * H), 0);
    rls__tz_free(tz);
}

static void test_hostile(void **state)
{
    const char *dir = *state;
    struct tzb t;
    static const int64_t times[3] = { 100, 50, 200 };
    static const unsigned char idx[3] = { 0, 0, 0 };
    static const unsigned char bad_idx[3] = { 0, 5, 0 };
    static const int32_t offs[2] = { 3600, 7200 };
    static const int32_t bad_offs[1] = { 100000 };
    static const unsigned char dst[2] = { 0, 1 };
    static const unsigned char bad_dst[1] = { 7 };
    rls_tz *tz;

    write_zone(dir, "Test/Empty", "", 0);
    assert_string_equal(load_err("Test/Empty"), "not a TZif file");
    write_zone(dir, "Test/Text", "hello world, this is not a zone file at all....", 48);
    assert_string_equal(load_err("Test/Text"), "not a TZif file");
    write_zone(dir, "Test/Short", "TZif2\0\0\0", 8);
    assert_string_equal(load_err("Test/Short"), "truncated TZif file");
    /* version '1' does not exist */
    build(&t, '1', 1, times, idx, 1, offs, dst, "UTC0");
    write_zone(dir, "Test/Ver", t.b, t.n);
    assert_string_equal(load_err("Test/Ver"), "not a TZif file (unknown version)");
    /* out of order transitions */
    build(&t, '2', 3, times, idx, 1, offs, dst, "UTC0");
    write_zone(dir, "Test/Order", t.b, t.n);
    assert_string_equal(load_err("Test/Order"), "corrupt TZif file (transitions out of order)");
    /* type index beyond typecnt */
    build(&t, 0, 3, (const int64_t[]){ 1, 2, 3 }, bad_idx, 2, offs, dst, NULL);
    write_zone(dir, "Test/Idx", t.b, t.n);
    assert_string_equal(load_err("Test/Idx"), "corrupt TZif file (bad type index)");
    /* offset beyond 25:59:59, isdst not 0/1 */
    build(&t, '2', 0, NULL, NULL, 1, bad_offs, dst, "UTC0");
    write_zone(dir, "Test/Off", t.b, t.n);
    assert_string_equal(load_err("Test/Off"), "corrupt TZif file (bad local time type)");
    build(&t, '2', 0, NULL, NULL, 1, offs, bad_dst, "UTC0");
    write_zone(dir, "Test/Dst", t.b, t.n);
    assert_string_equal(load_err("Test/Dst"), "corrupt TZif file (bad local time type)");
    /* zero types */
    build(&t, 0, 0, NULL, NULL, 0, offs, dst, NULL);
    write_zone(dir, "Test/NoType", t.b, t.n);
    assert_string_equal(load_err("Test/NoType"), "corrupt TZif file (bad counts)");
    /* a huge timecnt in the 64-bit header: must not be trusted */
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "UTC0");
    /* v2 header at 44 + v1 data (one 6-byte type, 4 chars); timecnt at +32 */
    t.b[44 + 6 + 4 + 32] = 0xff;
    write_zone(dir, "Test/Huge", t.b, t.n);
    assert_string_equal(load_err("Test/Huge"), "truncated TZif file");
    /* bad footers */
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "garbage");
    write_zone(dir, "Test/Foot1", t.b, t.n);
    assert_string_equal(load_err("Test/Foot1"), "corrupt TZif file (bad TZ rule in footer)");
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "CET-1CEST,M3.5.0,M13.5.0/3");
    write_zone(dir, "Test/Foot2", t.b, t.n);
    assert_string_equal(load_err("Test/Foot2"), "corrupt TZif file (bad TZ rule in footer)");
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "CET-1CEST,M3.5.0");
    write_zone(dir, "Test/Foot3", t.b, t.n);
    assert_string_equal(load_err("Test/Foot3"), "corrupt TZif file (bad TZ rule in footer)");
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "CET-25");
    write_zone(dir, "Test/Foot4", t.b, t.n);
    assert_string_equal(load_err("Test/Foot4"), "corrupt TZif file (bad TZ rule in footer)");
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "UTC0");
    t.n--;                                     /* no closing newline */
    write_zone(dir, "Test/Foot5", t.b, t.n);
    assert_string_equal(load_err("Test/Foot5"), "corrupt TZif file (bad footer)");
    /* leap second records */
    build(&t, 0, 0, NULL, NULL, 1, offs, dst, NULL);
    t.b[31] = 1;                               /* leapcnt = 1 */
    memset(t.b + t.n, 0, 8);
    t.n += 8;
    write_zone(dir, "Test/Leap", t.b, t.n);
    assert_string_equal(load_err("Test/Leap"),
                        "TZif files with leap seconds (right/...) are not supported");
    /* a v2 file whose empty footer is fine: type 0 rules forever */
    build(&t, '2', 0, NULL, NULL, 1, offs, dst, "");
    write_zone(dir, "Test/NoFoot", t.b, t.n);
    tz = load("Test/NoFoot");
    assert_int_equal(rls__tz_offset_at(tz, 0), 3600);
    rls__tz_free(tz);
    /* too large */
    {
        char *big = calloc(1, 600 * 1024);
        assert_non_null(big);
        memcpy(big, t.b, t.n);
        write_zone(dir, "Test/Big", big, 600 * 1024);
        free(big);
        assert_string_equal(load_err("Test/Big"), "not a TZif file (too large)");
    }
    /* a directory is not a zone */
    assert_string_equal(load_err("Test"), "unknown time zone");
}

/* Every truncation and many corruptions of a real file: no crash. */
static void test_truncated_and_flipped(void **state)
{
    const char *dir = *state;
    unsigned char *real = malloc(TZ_TEST_MAX);
    size_t n, cut, ok = 0;
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    unsigned seed = 12345;
    int i;

    assert_non_null(real);
    assert_non_null(f);
    n = fread(real, 1, TZ_TEST_MAX, f);
    fclose(f);
    assert_true(n > 100);
    write_zone(dir, "Test/Real", real, n);
    rls__tz_free(load("Test/Real"));
    for (cut = 0; cut < n; cut++) {
        rls_tz *tz = NULL;
        const char *why = NULL;
        write_zone(dir, "Test/Cut", real, cut);
        if (rls__tz_load("Test/Cut", &tz, &why) == 0) {
            /* only a cut exactly before the footer can still be valid */
            ok++;
            rls__tz_offset_at(tz, 4109878800000LL);
            rls__tz_free(tz);
        } else {
            assert_non_null(why);
        }
    }
    assert_true(ok <= 1);
    for (i = 0; i < 3000; i++) {
        unsigned char copy[TZ_TEST_MAX];
        rls_tz *tz = NULL;
        const char *why;
        int k;
        memcpy(copy, real, n);
        for (k = 0; k < 1 + i % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % n] ^= (unsigned char)(1u << ((seed >> 4) % 8));
        }
        write_zone(dir, "Test/Flip", copy, n);
        if (rls__tz_load("Test/Flip", &tz, &why) == 0) {
            int64_t t;
            for (t = -4000000000000LL; t < 8000000000000LL; t += 99999999999LL) {
                int32_t off = rls__tz_offset_at(tz, t);
                assert_true(off >= -89999 && off <= 93599);
                rls__tz_local_to_utc(tz, t);
            }
            rls__tz_free(tz);
        }
    }
    free(real);
}

static void test_bad_names(void **state)
{
    char longname[300];
    (void)state;
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_string_equal(load_err(""), "invalid time zone name (empty)");
    assert_string_equal(load_err(NULL), "invalid time zone name (empty)");
    assert_string_equal(load_err("/etc/passwd"), "invalid time zone name (absolute path)");
    assert_string_equal(load_err("../etc/passwd"), "invalid time zone name (contains '..')");
    assert_string_equal(load_err("Europe/../../etc/passwd"),
                        "invalid time zone name (contains '..')");
    assert_string_equal(load_err("Europe/Ber lin"), "invalid time zone name (bad character)");
    assert_string_equal(load_err("Europe\\Berlin"), "invalid time zone name (bad character)");
    assert_string_equal(load_err("Europe/Berlin\n"), "invalid time zone name (bad character)");
    assert_string_equal(load_err("./UTC"), "invalid time zone name (bad character)");
    assert_string_equal(load_err(longname), "invalid time zone name (too long)");
    assert_string_equal(load_err("Europe/Nowhere"), "unknown time zone");
    assert_string_equal(load_err("utc"), "unknown time zone");
    /* allowed characters: Etc/GMT+5 (offset -5), America/Port-au-Prince */
    {
        rls_tz *tz = load("Etc/GMT+5");
        assert_int_equal(rls__tz_offset_at(tz, 0), -18000);
        rls__tz_free(tz);
        tz = load("America/Port-au-Prince");
        rls__tz_free(tz);
    }
    {
        const char *why = NULL;
        assert_int_equal(rls__tz_load("UTC", NULL, &why), -1);
        assert_int_equal(rls__tz_load("", NULL, NULL), -1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_civil),
        cmocka_unit_test(test_utc_builtin),
        cmocka_unit_test(test_berlin),
        cmocka_unit_test(test_new_york),
        cmocka_unit_test(test_footer_2100),
        cmocka_unit_test(test_tokyo_no_dst),
        cmocka_unit_test(test_midnight_gap_fold),
        cmocka_unit_test_setup_teardown(test_built_v1_and_v2, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_hostile, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_truncated_and_flipped, setup_dir, teardown_dir),
        cmocka_unit_test(test_bad_names),
    };
    unsetenv("TZDIR");
    return cmocka_run_group_tests_name("tz", tests, NULL, NULL);
}
