/*
 * tz.c - IANA time zones from TZif files (RFC 8536 and its v4 update), and
 * proleptic-Gregorian civil date helpers.
 *
 * A zone is loaded once into an immutable rls_tz: the transition table
 * (64-bit data of v2+ files, 32-bit data of v1 files), the local time types,
 * and the POSIX TZ rule of the footer, which gives the offset for instants
 * after the last transition (e.g. "CET-1CEST,M3.5.0,M10.5.0/3").  Lookups
 * never allocate and never touch the process's TZ, so one rls_tz can be used
 * from any number of threads.
 *
 * Files are treated as untrusted input: read with open/read up to
 * TZ_FILE_MAX bytes, every count checked against the bytes present, every
 * index against its table, transition times required to increase strictly,
 * offsets limited to RFC 8536's range.  Files with leap-second records (the
 * "right/" zones) are refused: their timestamps are not POSIX time.
 *
 * Time-zone names are restricted to [A-Za-z0-9/_+-], at most TZ_NAME_MAX
 * bytes, relative, without "..": a rule file can never make the library open
 * anything outside the zoneinfo directory.  $TZDIR is read with getenv() at
 * each rls__tz_load (not thread-safe against a concurrent setenv, like any
 * getenv use).
 */
#include "tz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TZ_FILE_MAX  (512 * 1024)
#define TZ_NAME_MAX  255
#define TZ_MS_LIMIT  8640000000000000LL          /* +-1e8 days */
#define TZ_DAY_LIMIT 100000000LL
#define SECS_DAY     86400LL
#define UTOFF_MIN    (-89999)                     /* RFC 8536 3.2 */
#define UTOFF_MAX    93599

struct tz_type {
    int32_t utoff;    /* seconds east of UTC */
    int isdst;
};

/* One date of a POSIX TZ rule: Jn, n or Mm.w.d, plus a time of day. */
struct tz_rdate {
    char kind;        /* 'J', 'N' (zero-based day) or 'M' */
    int n;            /* J: 1..365, N: 0..365 */
    int m, w, d;      /* M: month 1..12, week 1..5, weekday 0 = Sunday */
    int32_t secs;     /* local time of day, -167h..167h */
};

struct tz_rule {
    int32_t std_off;  /* seconds east of UTC, standard time */
    int32_t dst_off;
    int has_dst;
    struct tz_rdate start, end;
};

struct rls_tz {
    char *name;
    uint64_t serial;          /* rls__tz_serial: never reused in the process */
    uint32_t timecnt, typecnt;
    int64_t *times;           /* timecnt transition instants, seconds */
    unsigned char *idx;       /* timecnt type indices */
    struct tz_type *types;    /* typecnt local time types */
    int has_rule;
    struct tz_rule rule;
};

/* The last serial given (rls__tz_serial): a zone freed and another loaded
 * at its address must not look like the same zone to a cache. */
static uint64_t tz_next_serial;

/* ---- small arithmetic helpers ------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t clamp64(int64_t v, int64_t lim)
{
    return v < -lim ? -lim : v > lim ? lim : v;
}

/* ---- civil calendar (H. Hinnant's algorithms, written out) ------------- */

/*
 * Days since 1970-01-01 of y-m-d in the proleptic Gregorian calendar.
 * Defined for m 1..12, d 1..31 and |y| < 2^40; d beyond the month's end
 * counts on into the next month.
 */
int64_t rls__civil_days_from(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    if (m <= 2)
        y -= 1;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;                                     /* 0..399 */
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;   /* 0..365 */
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;             /* 0..146096 */
    return era * 146097 + doe - 719468;
}

/* Inverse of rls__civil_days_from for |days| < 2^50. */
void rls__civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                  /* 0..146096 */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);           /* 0..365 */
    int64_t mp = (5 * doy + 2) / 153;                                /* 0..11 */
    int mm = (int)(mp < 10 ? mp + 3 : mp - 9);

    if (y)
        *y = yoe + era * 400 + (mm <= 2);
    if (m)
        *m = mm;
    if (d)
        *d = (int)(doy - (153 * mp + 2) / 5 + 1);
}

/* 0 = Monday .. 6 = Sunday; 1970-01-01 was a Thursday. */
int rls__civil_weekday(int64_t days)
{
    int64_t r = (days + 3) % 7;
    return (int)(r < 0 ? r + 7 : r);
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int64_t y, int m)
{
    static const int len[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* ---- POSIX TZ rules (the TZif footer) ---------------------------------- */

/* A zone abbreviation: <...> quoted ([A-Za-z0-9+-]) or 3+ letters. */
static const char *parse_abbr(const char *s)
{
    const char *p = s;

    if (*p == '<') {
        p++;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
               (*p >= '0' && *p <= '9') || *p == '+' || *p == '-')
            p++;
        if (*p != '>' || p - s < 4)
            return NULL;
        return p + 1;
    }
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* [+-]h[h[h]][:mm[:ss]] with hours <= max_h; seconds into *out. */
static const char *parse_hms(const char *s, int max_h, int32_t *out)
{
    int sign = 1, h = 0, mi = 0, se = 0, k;

    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    for (k = 0; k < 3 && *s >= '0' && *s <= '9'; k++)
        h = h * 10 + (*s++ - '0');
    if (k == 0 || h > max_h)
        return NULL;
    if (*s == ':') {
        s++;
        for (k = 0; k < 2 && *s >= '0' && *s <= '9'; k++)
            mi = mi * 10 + (*s++ - '0');
        if (k == 0 || mi > 59)
            return NULL;
        if (*s == ':') {
            s++;
            for (k = 0; k < 2 && *s >= '0' && *s <= '9'; k++)
                se = se * 10 + (*s++ - '0');
            if (k == 0 || se > 59)
                return NULL;
        }
    }
    *out = sign * (h * 3600 + mi * 60 + se);
    return s;
}

static const char *parse_num(const char *s, int lo, int hi, int *out)
{
    int v = 0, k;

    for (k = 0; k < 3 && *s >= '0' && *s <= '9'; k++)
        v = v * 10 + (*s++ - '0');
    if (k == 0 || v < lo || v > hi || (*s >= '0' && *s <= '9'))
        return NULL;
    *out = v;
    return s;
}

/* date[/time]: Jn, n or Mm.w.d; default time 02:00. */
static const char *parse_rdate(const char *s, struct tz_rdate *r)
{
    memset(r, 0, sizeof *r);
    if (*s == 'J') {
        r->kind = 'J';
        s = parse_num(s + 1, 1, 365, &r->n);
    } else if (*s == 'M') {
        r->kind = 'M';
        s = parse_num(s + 1, 1, 12, &r->m);
        if (s && *s == '.')
            s = parse_num(s + 1, 1, 5, &r->w);
        else
            s = NULL;
        if (s && *s == '.')
            s = parse_num(s + 1, 0, 6, &r->d);
        else
            s = NULL;
    } else if (*s >= '0' && *s <= '9') {
        r->kind = 'N';
        s = parse_num(s, 0, 365, &r->n);
    } else {
        return NULL;
    }
    if (!s)
        return NULL;
    r->secs = 7200;
    if (*s == '/')
        s = parse_hms(s + 1, 167, &r->secs);   /* RFC 8536 3.3.1 extension */
    return s;
}

/*
 * Parses a POSIX TZ string "std offset [dst [offset] [,start[/time],end[/time]]]"
 * as found in TZif footers.  A dst without rules gets the US rules
 * (M3.2.0,M11.1.0), like glibc.  Returns 0 or -1.
 */
static int parse_rule(const char *s, struct tz_rule *r)
{
    int32_t off;

    memset(r, 0, sizeof *r);
    s = parse_abbr(s);
    if (!s)
        return -1;
    s = parse_hms(s, 24, &off);
    if (!s)
        return -1;
    r->std_off = -off;                 /* POSIX offsets are west-positive */
    if (*s == '\0')
        return 0;
    s = parse_abbr(s);
    if (!s)
        return -1;
    r->has_dst = 1;
    r->dst_off = r->std_off + 3600;
    if (*s != ',' && *s != '\0') {
        s = parse_hms(s, 24, &off);
        if (!s)
            return -1;
        r->dst_off = -off;
    }
    if (*s == '\0') {
        s = "M3.2.0,M11.1.0";
        if (!parse_rdate(s, &r->start) || !parse_rdate(s + 7, &r->end))
            return -1;
        return 0;
    }
    if (*s != ',')
        return -1;
    s = parse_rdate(s + 1, &r->start);
    if (!s || *s != ',')
        return -1;
    s = parse_rdate(s + 1, &r->end);
    if (!s || *s != '\0')
        return -1;
    return 0;
}

/* Days since the epoch of rule date r in year y. */
static int64_t rdate_day(const struct tz_rdate *r, int64_t y)
{
    int64_t jan1 = rls__civil_days_from(y, 1, 1);

    if (r->kind == 'J')
        return jan1 + r->n - 1 + (is_leap(y) && r->n >= 60 ? 1 : 0);
    if (r->kind == 'N')
        return jan1 + r->n;
    {
        int64_t first = rls__civil_days_from(y, r->m, 1);
        int wd_sun = (rls__civil_weekday(first) + 1) % 7;   /* 0 = Sunday */
        int day = 1 + (r->d - wd_sun + 7) % 7 + (r->w - 1) * 7;
        int dim = month_days(y, r->m);
        while (day > dim)
            day -= 7;
        return first + day - 1;
    }
}

/*
 * Offset in force at t (seconds) under rule r.  Collects the DST start and
 * end instants of the years around t's local year and applies the latest one
 * at or before t; a start wins over an end at the same instant (rules such as
 * "0/0,J365/25" that mean DST all year).
 */
static int32_t rule_offset(const struct tz_rule *r, int64_t t)
{
    int64_t y, yy, best = INT64_MIN;
    int32_t off = r->std_off;

    if (!r->has_dst)
        return r->std_off;
    rls__civil_from_days(floor_div(t + r->std_off, SECS_DAY), &y, NULL, NULL);
    for (yy = y - 1; yy <= y + 1; yy++) {
        int64_t s = rdate_day(&r->start, yy) * SECS_DAY + r->start.secs -
                    r->std_off;
        int64_t e = rdate_day(&r->end, yy) * SECS_DAY + r->end.secs -
                    r->dst_off;
        if (e <= t && e > best) {
            best = e;
            off = r->std_off;
        }
        if (s <= t && s >= best) {
            best = s;
            off = r->dst_off;
        }
    }
    return off;
}

/* ---- lookups ----------------------------------------------------------- */

static int32_t offset_at_secs(const rls_tz *tz, int64_t t)
{
    uint32_t lo, hi;

    if (!tz)
        return 0;
    if (tz->timecnt == 0)
        return tz->has_rule ? rule_offset(&tz->rule, t) : tz->types[0].utoff;
    if (t < tz->times[0])
        return tz->types[0].utoff;
    if (t >= tz->times[tz->timecnt - 1] && tz->has_rule)
        return rule_offset(&tz->rule, t);
    /* last i with times[i] <= t */
    lo = 0;
    hi = tz->timecnt;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tz->times[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return tz->types[tz->idx[lo]].utoff;
}

int32_t rls__tz_offset_at(const rls_tz *tz, int64_t utc_ms)
{
    return offset_at_secs(tz, floor_div(utc_ms, 1000));
}

int64_t rls__tz_local_day(const rls_tz *tz, int64_t utc_ms)
{
    int64_t s = floor_div(utc_ms, 1000);
    return floor_div(s + offset_at_secs(tz, s), SECS_DAY);
}

static int64_t local_of(const rls_tz *tz, int64_t u)
{
    return u + (int64_t)rls__tz_offset_at(tz, u) * 1000;
}

/*
 * Contract: see tz.h.  The answer lies within local_ms +- 26 h.  The
 * offsets in force 2 days before, at, and 2 days after local_ms (read as
 * UTC) give candidate instants u = L - offset; a candidate whose own offset
 * is the one used maps exactly to L, and the earliest such is the answer.
 * If none does, L is in a gap: the answer is the first instant whose local
 * time is >= L, found by bisection between the candidates (local time only
 * increases across a gap).
 */
int64_t rls__tz_local_to_utc(const rls_tz *tz, int64_t local_ms)
{
    int64_t L = clamp64(local_ms, TZ_MS_LIMIT);
    int64_t probe[3], lo = INT64_MAX, hi = INT64_MIN, best = INT64_MAX;
    int i;

    if (!tz)
        return L;
    /* One offset for all time (UTC, a zone without transitions): every
     * candidate below is this one.  Every check of a calendar window asks
     * for a midnight: six offset lookups saved. */
    if (tz->timecnt == 0 && !tz->has_rule)
        return L - (int64_t)tz->types[0].utoff * 1000;
    probe[0] = L - 2 * SECS_DAY * 1000;
    probe[1] = L;
    probe[2] = L + 2 * SECS_DAY * 1000;
    for (i = 0; i < 3; i++) {
        int32_t off = rls__tz_offset_at(tz, probe[i]);
        int64_t u = L - (int64_t)off * 1000;
        if (u < lo)
            lo = u;
        if (u > hi)
            hi = u;
        if (rls__tz_offset_at(tz, u) == off && u < best)
            best = u;
    }
    if (best != INT64_MAX)
        return best;
    /* gap: smallest u in (lo, hi] with local_of(u) >= L */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (local_of(tz, mid) >= L)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int64_t rls__tz_local_midnight(const rls_tz *tz, int64_t days)
{
    return rls__tz_local_to_utc(tz, clamp64(days, TZ_DAY_LIMIT) * SECS_DAY * 1000);
}

uint64_t rls__tz_serial(const rls_tz *tz)
{
    return tz ? tz->serial : 0;
}

const char *rls__tz_name(const rls_tz *tz)
{
    return tz ? tz->name : "UTC";
}

void rls__tz_free(rls_tz *tz)
{
    if (!tz)
        return;
    free(tz->name);
    free(tz->times);
    free(tz->idx);
    free(tz->types);
    free(tz);
}

/* ---- loading ----------------------------------------------------------- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int64_t be64(const unsigned char *p)
{
    uint64_t v = (uint64_t)be32(p) << 32 | be32(p + 4);
    return (int64_t)v;
}

/* The six counts of a TZif header, in file order. */
struct tzif_counts {
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

/*
 * Reads a 44-byte header at p (n bytes available).  The counts are checked
 * only if `check` (the block that will be used): a v2+ file's v1 block is
 * skipped and may be minimal.
 */
static int read_header(const unsigned char *p, size_t n, int check,
                       struct tzif_counts *c, int *version, const char **why)
{
    if (n < 44 || memcmp(p, "TZif", 4) != 0) {
        *why = n < 44 && n >= 4 && memcmp(p, "TZif", 4) == 0
                   ? "truncated TZif file" : "not a TZif file";
        return -1;
    }
    if (p[4] != 0 && p[4] < '2') {
        *why = "not a TZif file (unknown version)";
        return -1;
    }
    *version = p[4] == 0 ? 1 : p[4] - '0';
    c->isutcnt = be32(p + 20);
    c->isstdcnt = be32(p + 24);
    c->leapcnt = be32(p + 28);
    c->timecnt = be32(p + 32);
    c->typecnt = be32(p + 36);
    c->charcnt = be32(p + 40);
    if (check && (c->typecnt == 0 || c->typecnt > 256 || c->charcnt == 0 ||
        (c->isutcnt != 0 && c->isutcnt != c->typecnt) ||
        (c->isstdcnt != 0 && c->isstdcnt != c->typecnt))) {
        *why = "corrupt TZif file (bad counts)";
        return -1;
    }
    return 0;
}

/* Bytes of the data block that follows a header; tsize 4 (v1) or 8. */
static uint64_t block_size(const struct tzif_counts *c, int tsize)
{
    return (uint64_t)c->timecnt * (uint64_t)(tsize + 1) +
           (uint64_t)c->typecnt * 6 + c->charcnt +
           (uint64_t)c->leapcnt * (uint64_t)(tsize + 4) +
           c->isstdcnt + c->isutcnt;
}

/*
 * Fills tz's tables from the data block at p (already known to be complete)
 * with timestamps of tsize bytes.  Checks order, indices and offsets.
 */
static int read_block(const unsigned char *p, const struct tzif_counts *c,
                      int tsize, rls_tz *tz, const char **why)
{
    const unsigned char *tp = p;
    const unsigned char *ip = tp + (size_t)c->timecnt * tsize;
    const unsigned char *yp = ip + c->timecnt;
    uint32_t i;

    tz->timecnt = c->timecnt;
    tz->typecnt = c->typecnt;
    tz->times = malloc(sizeof *tz->times * (c->timecnt ? c->timecnt : 1));
    tz->idx = malloc(c->timecnt ? c->timecnt : 1);
    tz->types = malloc(sizeof *tz->types * c->typecnt);
    if (!tz->times || !tz->idx || !tz->types) {
        *why = "out of memory";
        return -1;
    }
    for (i = 0; i < c->timecnt; i++) {
        int64_t t = tsize == 8 ? be64(tp + (size_t)i * 8)
                               : (int64_t)(int32_t)be32(tp + (size_t)i * 4);
        if (i > 0 && t <= tz->times[i - 1]) {
            *why = "corrupt TZif file (transitions out of order)";
            return -1;
        }
        if (ip[i] >= c->typecnt) {
            *why = "corrupt TZif file (bad type index)";
            return -1;
        }
        tz->times[i] = t;
        tz->idx[i] = ip[i];
    }
    for (i = 0; i < c->typecnt; i++) {
        const unsigned char *e = yp + (size_t)i * 6;
        int32_t off = (int32_t)be32(e);
        if (off < UTOFF_MIN || off > UTOFF_MAX || e[4] > 1 ||
            e[5] >= c->charcnt) {
            *why = "corrupt TZif file (bad local time type)";
            return -1;
        }
        tz->types[i].utoff = off;
        tz->types[i].isdst = e[4];
    }
    return 0;
}

/*
 * Parses a whole TZif image p[0..n) into tz.  v1 files use their 32-bit
 * block; v2+ files skip it and use the 64-bit block and the footer.
 */
static int parse_tzif(const unsigned char *p, size_t n, rls_tz *tz,
                      const char **why)
{
    struct tzif_counts c;
    int version, v2;
    uint64_t sz;
    size_t pos;

    if (read_header(p, n, 0, &c, &version, why) != 0)
        return -1;
    if (version < 2 && read_header(p, n, 1, &c, &version, why) != 0)
        return -1;
    sz = block_size(&c, 4);
    if (sz > n - 44) {
        *why = "truncated TZif file";
        return -1;
    }
    pos = 44;
    if (version >= 2) {
        pos += (size_t)sz;
        if (read_header(p + pos, n - pos, 1, &c, &v2, why) != 0)
            return -1;
        pos += 44;
        sz = block_size(&c, 8);
        if (sz > n - pos) {
            *why = "truncated TZif file";
            return -1;
        }
    }
    if (c.leapcnt != 0) {
        *why = "TZif files with leap seconds (right/...) are not supported";
        return -1;
    }
    if (read_block(p + pos, &c, version >= 2 ? 8 : 4, tz, why) != 0)
        return -1;
    pos += (size_t)sz;
    if (version >= 2 && pos < n) {
        char footer[256];
        const unsigned char *nl;
        size_t len;

        if (p[pos] != '\n') {
            *why = "corrupt TZif file (bad footer)";
            return -1;
        }
        nl = memchr(p + pos + 1, '\n', n - pos - 1);
        if (!nl) {
            *why = "corrupt TZif file (bad footer)";
            return -1;
        }
        len = (size_t)(nl - (p + pos + 1));
        if (len >= sizeof footer) {
            *why = "corrupt TZif file (bad footer)";
            return -1;
        }
        memcpy(footer, p + pos + 1, len);
        footer[len] = '\0';
        if (len > 0) {
            if (memchr(footer, '\0', len) || parse_rule(footer, &tz->rule) != 0) {
                *why = "corrupt TZif file (bad TZ rule in footer)";
                return -1;
            }
            tz->has_rule = 1;
        }
    }
    return 0;
}

static int name_ok(const char *name, const char **why)
{
    size_t i, len;

    if (!name || !*name) {
        *why = "invalid time zone name (empty)";
        return 0;
    }
    len = strlen(name);
    if (len > TZ_NAME_MAX) {
        *why = "invalid time zone name (too long)";
        return 0;
    }
    if (name[0] == '/') {
        *why = "invalid time zone name (absolute path)";
        return 0;
    }
    if (strstr(name, "..")) {
        *why = "invalid time zone name (contains '..')";
        return 0;
    }
    for (i = 0; i < len; i++) {
        char ch = name[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '/' || ch == '_' ||
              ch == '+' || ch == '-')) {
            *why = "invalid time zone name (bad character)";
            return 0;
        }
    }
    return 1;
}

/* Reads the whole regular file at path (at most TZ_FILE_MAX bytes). */
static unsigned char *read_file(const char *path, size_t *n, const char **why)
{
    struct stat st;
    unsigned char *buf = NULL;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        *why = errno == ENOENT || errno == ENOTDIR ? "unknown time zone"
                                                   : "cannot read time zone file";
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = "unknown time zone";
        goto out;
    }
    buf = malloc(TZ_FILE_MAX + 1);
    if (!buf) {
        *why = "out of memory";
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf + got, TZ_FILE_MAX + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *why = "cannot read time zone file";
            free(buf);
            buf = NULL;
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        if (got > TZ_FILE_MAX) {
            *why = "not a TZif file (too large)";
            free(buf);
            buf = NULL;
            goto out;
        }
    }
    *n = got;
out:
    close(fd);
    return buf;
}

/*
 * Contract: see tz.h.  On failure *out is set to NULL and nothing leaks.
 * "UTC" and "Etc/UTC" are built in (offset 0, no file read).
 */
int rls__tz_load(const char *name, rls_tz **out, const char **why)
{
    const char *dummy, *dir;
    char path[4096];
    unsigned char *data = NULL;
    size_t n = 0;
    rls_tz *tz = NULL;
    int rc = -1;

    if (!why)
        why = &dummy;
    if (!out) {
        *why = "no output given";
        return -1;
    }
    *out = NULL;
    if (!name_ok(name, why))
        return -1;
    tz = calloc(1, sizeof *tz);
    if (!tz || !(tz->name = strdup(name))) {
        *why = "out of memory";
        goto out;
    }
    tz->serial = __atomic_add_fetch(&tz_next_serial, 1, __ATOMIC_RELAXED);
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
        tz->typecnt = 1;
        tz->types = calloc(1, sizeof *tz->types);
        if (!tz->types) {
            *why = "out of memory";
            goto out;
        }
        rc = 0;
        goto out;
    }
    dir = getenv("TZDIR");
    if (!dir || !*dir)
        dir = "/usr/share/zoneinfo";
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        *why = "invalid time zone name (too long)";
        goto out;
    }
    data = read_file(path, &n, why);
    if (!data)
        goto out;
    rc = parse_tzif(data, n, tz, why);
out:
    free(data);
    if (rc == 0)
        *out = tz;
    else
        rls__tz_free(tz);
    return rc;
}
