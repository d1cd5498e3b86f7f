/*
 * duration.h - durations as written in rules and on command lines.
 *
 * Grammar: one or more <integer><unit> terms, units ms, s, m, h, d, w, mo,
 * e.g. "250ms", "10s", "1h30m", "1d", "1w", "1mo".  A duration consisting
 * of exactly one term of 1d, 1w or 1mo is a calendar period (aligned to local
 * midnight, ISO week starting Monday, first of the month); any other is a
 * fixed number of milliseconds.
 */
#ifndef RLS_DURATION_H
#define RLS_DURATION_H

#include <stddef.h>
#include <stdint.h>

enum dur_calendar {
    DUR_FIXED = 0,  /* a plain number of milliseconds */
    DUR_DAY = 1,    /* exactly "1d": calendar day   */
    DUR_WEEK = 2,   /* exactly "1w": ISO week       */
    DUR_MONTH = 3   /* exactly "1mo": calendar month */
};

typedef struct rls_duration {
    int64_t ms;     /* nominal length: d = 86400000, w = 7 d, mo = 30 d */
    int calendar;   /* enum dur_calendar */
} rls_duration;

#define DUR_MS_MAX (366LL * 24 * 3600 * 1000 * 100) /* 100 years */

/*
 * Parses text[0..len) (len may be (size_t)-1 for NUL-terminated).  Returns 0
 * and fills *out, or -1 with a static description of what is wrong in *why
 * (may be NULL): empty, missing number, unknown unit, zero, too large (over
 * DUR_MS_MAX), trailing garbage.  Whitespace is not accepted.
 */
int rls__duration_parse(const char *text, size_t len, rls_duration *out,
                   const char **why);

/*
 * Formats ms as the shortest exact form using the largest units (w, d, h,
 * m, s, ms; never mo), e.g. 90000 -> "1m30s", 0 -> "0ms".  Calendar
 * durations print as "1d", "1w", "1mo"; a FIXED duration of exactly one day
 * or one week prints as "24h" or "7d", so that the text parses back to the
 * same fixed duration.  Returns snprintf-style length (-1 if d is NULL).
 */
int rls__duration_format(const rls_duration *d, char *buf, size_t size);

#endif
