/*
 * duration.c - parsing and formatting of durations ("250ms", "1h30m",
 * "1d", "1w", "1mo").
 *
 * Pure functions, no allocation, no global state: safe from any thread.
 *
 * Decisions where duration.h is silent:
 *   - Terms may repeat and come in any order; their values add up ("1d1d"
 *     is a fixed 2-day duration, "30m1h" is 90 minutes), as in Go's
 *     time.ParseDuration.  Only a single term "1d", "1w" or "1mo" is a
 *     calendar period; "2d", "24h", "7d", "1d1d" are fixed.
 *   - "mo" counts as a nominal 30 days when it is not the single term
 *     "1mo" ("2mo" = 60 fixed days, "1mo1d" = 31 fixed days).
 *   - Leading zeros are accepted ("05m"); a sign, a decimal point,
 *     whitespace and upper-case units are not.
 *   - Formatting never produces text that would parse as a calendar period
 *     for a fixed duration: a fixed day prints as "24h" and a fixed week as
 *     "7d", so rls__duration_format and rls__duration_parse round-trip exactly.
 */
#include "duration.h"

#include <stdio.h>
#include <string.h>

#define MS_SEC   1000LL
#define MS_MIN   (60 * MS_SEC)
#define MS_HOUR  (60 * MS_MIN)
#define MS_DAY   (24 * MS_HOUR)
#define MS_WEEK  (7 * MS_DAY)
#define MS_MONTH (30 * MS_DAY)

/*
 * Recognises the unit at s[0..n).  Returns its length in bytes (1 or 2) and
 * its value in ms in *unit_ms, or 0 if no known unit starts there.  "ms"
 * and "mo" are tried before "m".  *cal gets the calendar kind a single
 * "1<unit>" term would have.
 */
static size_t unit_match(const char *s, size_t n, int64_t *unit_ms, int *cal)
{
    *cal = DUR_FIXED;
    if (n >= 2 && s[0] == 'm' && s[1] == 's') {
        *unit_ms = 1;
        return 2;
    }
    if (n >= 2 && s[0] == 'm' && s[1] == 'o') {
        *unit_ms = MS_MONTH;
        *cal = DUR_MONTH;
        return 2;
    }
    if (n < 1)
        return 0;
    switch (s[0]) {
    case 's': *unit_ms = MS_SEC; return 1;
    case 'm': *unit_ms = MS_MIN; return 1;
    case 'h': *unit_ms = MS_HOUR; return 1;
    case 'd': *unit_ms = MS_DAY; *cal = DUR_DAY; return 1;
    case 'w': *unit_ms = MS_WEEK; *cal = DUR_WEEK; return 1;
    default: return 0;
    }
}

/*
 * Contract: see duration.h.  On error *out is left untouched and *why (if
 * not NULL) points to a static string.  Every term is checked for overflow
 * before it is multiplied, so any input length is safe.
 */
int rls__duration_parse(const char *text, size_t len, rls_duration *out,
                   const char **why)
{
    const char *dummy;
    size_t i = 0;
    int64_t total = 0;
    int terms = 0, last_cal = DUR_FIXED;
    int64_t last_n = 0;

    if (!why)
        why = &dummy;
    if (!text || !out) {
        *why = "no duration given";
        return -1;
    }
    if (len == (size_t)-1)
        len = strlen(text);
    if (len == 0) {
        *why = "empty duration";
        return -1;
    }
    while (i < len) {
        int64_t n = 0, unit_ms = 0;
        size_t start = i, ulen;
        int cal;

        while (i < len && text[i] >= '0' && text[i] <= '9') {
            int digit = text[i] - '0';
            if (n > (DUR_MS_MAX - digit) / 10) {
                *why = "duration too large (over 100 years)";
                return -1;
            }
            n = n * 10 + digit;
            i++;
        }
        if (i == start) {
            if (text[i] == '-')
                *why = "duration must not be negative";
            else if (text[i] == ' ' || text[i] == '\t')
                *why = "whitespace is not allowed in a duration";
            else
                *why = terms == 0 ? "missing number before unit"
                                  : "trailing garbage after duration";
            return -1;
        }
        if (i == len) {
            *why = "missing unit (ms, s, m, h, d, w, mo)";
            return -1;
        }
        ulen = unit_match(text + i, len - i, &unit_ms, &cal);
        if (ulen == 0) {
            if (text[i] == ' ' || text[i] == '\t')
                *why = "whitespace is not allowed in a duration";
            else if (text[i] == '.' || text[i] == ',')
                *why = "fractions are not allowed (write 1h30m, not 1.5h)";
            else
                *why = "unknown unit (expected ms, s, m, h, d, w, mo)";
            return -1;
        }
        i += ulen;
        if (n > DUR_MS_MAX / unit_ms || total > DUR_MS_MAX - n * unit_ms) {
            *why = "duration too large (over 100 years)";
            return -1;
        }
        total += n * unit_ms;
        terms++;
        last_cal = cal;
        last_n = n;
    }
    if (total == 0) {
        *why = "duration must be greater than zero";
        return -1;
    }
    out->ms = total;
    out->calendar = (terms == 1 && last_n == 1) ? last_cal : DUR_FIXED;
    return 0;
}

/* Appends "<n><unit>" at buf+pos (snprintf-style bookkeeping). */
static size_t put_term(char *buf, size_t size, size_t pos, uint64_t n,
                       const char *unit)
{
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "%llu%s", (unsigned long long)n, unit);
    size_t j;

    for (j = 0; j < (size_t)k; j++, pos++)
        if (pos + 1 < size)
            buf[pos] = tmp[j];
    return pos;
}

/*
 * Contract: see duration.h.  Fixed durations use w, d, h, m, s, ms (never
 * "mo": a month is not an exact length); a fixed duration that would print
 * as exactly "1d" or "1w" prints as "24h" or "7d" instead, so that parsing
 * the text gives back the same (fixed) duration.  A negative ms prints with
 * a leading '-' (never produced by rls__duration_parse).
 */
int rls__duration_format(const rls_duration *d, char *buf, size_t size)
{
    static const struct { int64_t ms; const char *name; } units[] = {
        { MS_WEEK, "w" }, { MS_DAY, "d" }, { MS_HOUR, "h" },
        { MS_MIN, "m" }, { MS_SEC, "s" }, { 1, "ms" },
    };
    size_t pos = 0, k;
    uint64_t v;

    if (!d || (!buf && size > 0))
        return -1;
    if (d->calendar == DUR_DAY || d->calendar == DUR_WEEK ||
        d->calendar == DUR_MONTH) {
        const char *s = d->calendar == DUR_DAY ? "1d"
                      : d->calendar == DUR_WEEK ? "1w" : "1mo";
        return snprintf(buf, size, "%s", s);
    }
    if (d->ms == 0)
        return snprintf(buf, size, "0ms");
    if (d->ms < 0) {
        if (size > 1)
            buf[0] = '-';
        pos = 1;
        v = (uint64_t)0 - (uint64_t)d->ms;
    } else {
        v = (uint64_t)d->ms;
    }
    if (v == (uint64_t)MS_DAY) {
        pos = put_term(buf, size, pos, 24, "h");
        v = 0;
    } else if (v == (uint64_t)MS_WEEK) {
        pos = put_term(buf, size, pos, 7, "d");
        v = 0;
    }
    for (k = 0; k < sizeof units / sizeof units[0] && v > 0; k++) {
        uint64_t n = v / (uint64_t)units[k].ms;
        if (n == 0)
            continue;
        pos = put_term(buf, size, pos, n, units[k].name);
        v -= n * (uint64_t)units[k].ms;
    }
    if (size > 0)
        buf[pos < size ? pos : size - 1] = '\0';
    return (int)pos;
}
