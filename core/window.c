/*
 * window.c - which aligned window contains an instant, in a rule's time zone.
 *
 * Pure functions over an immutable rls_tz: safe from any thread.
 *
 * Exact rules (window.h gives the outline; this is the precise contract):
 *
 *   Local midnight of a day is rls__tz_local_midnight(): the first instant whose
 *   local time is >= 00:00 of that day (the gap end if 00:00 does not exist,
 *   the first occurrence if it occurs twice).  A local day is the half-open
 *   interval between two consecutive midnights, so days are contiguous and
 *   never overlap, whatever DST does.
 *
 *   1d   [midnight(D), midnight(D+1)): 23 h on spring-forward days, 25 h on
 *        fall-back days.
 *   1w   [midnight(Monday), midnight(next Monday)): ISO weeks.
 *   1mo  [midnight(1st), midnight(1st of the next month)).
 *
 *   Fixed length L < 1 day: windows are counted in elapsed time from the
 *   local midnight instant of the day containing t: [m + k*L, m + (k+1)*L),
 *   the last one cut at the next midnight when L does not divide the day's
 *   real length.  So every window but the last of a day is exactly L long,
 *   also on DST days.  On those days the boundaries after the change are
 *   where elapsed time puts them: with 1h (or any L dividing the DST shift)
 *   they still fall on wall-clock boundaries; with 2h on a 25-hour day the
 *   windows after the fall-back start at odd wall-clock hours and the last
 *   one is 1 h; a 23-hour day has 23 one-hour windows, a 25-hour day 25.
 *   The window before the first window of a day is the last (possibly cut)
 *   window of the previous day.
 *
 *   Fixed length L >= 1 day that is not a calendar period (24h, 36h, 2d,
 *   7d, 30d, 1d1d, 2mo...): windows are multiples of L of local wall-clock
 *   time counted from 1970-01-01 00:00 local, each boundary converted with
 *   rls__tz_local_to_utc() (first instant at or after that wall time).  So 24h
 *   windows are calendar days, 2d windows start at local midnight every
 *   other day, 36h windows alternate between midnight and noon, and 7d
 *   windows start on Thursdays (1970-01-01 was one; use 1w for ISO weeks).
 *   A window containing a DST change is one hour shorter or longer.
 *
 *   A window that would be empty (a day skipped entirely, as Samoa skipped
 *   2011-12-30) is never returned, and prev_start skips it too, so
 *   prev_start < start <= t < end always holds.
 *
 *   t is clamped to +-8.6e15 ms (about +-272,000 years) and a fixed length
 *   to DUR_MS_MAX.
 */
#include "window.h"

#define MS_DAY      86400000LL
/* Below tz.c's +-8.64e15 clamp by more than two of the longest windows
 * (DUR_MS_MAX), so that window bounds are never clamped themselves. */
#define T_LIMIT     8600000000000000LL
#define MAX_STEPS   8

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/*
 * The local day D with midnight(D) <= t < midnight(D+1); its bounds in *s
 * and *e.  rls__tz_local_day() is right except when t is in a fold that crosses
 * midnight (local time went back into the previous day), hence the loop.
 */
static int64_t day_of(const rls_tz *tz, int64_t t, int64_t *s, int64_t *e)
{
    int64_t d = rls__tz_local_day(tz, t);
    int i;

    *s = rls__tz_local_midnight(tz, d);
    *e = rls__tz_local_midnight(tz, d + 1);
    for (i = 0; i < MAX_STEPS && t >= *e; i++) {
        d++;
        *s = *e;
        *e = rls__tz_local_midnight(tz, d + 1);
    }
    for (i = 0; i < MAX_STEPS && t < *s; i++) {
        d--;
        *e = *s;
        *s = rls__tz_local_midnight(tz, d);
    }
    return d;
}

/* Midnight of the latest day before `day` whose midnight is < start. */
static int64_t prev_midnight(const rls_tz *tz, int64_t day, int64_t start)
{
    int64_t p = rls__tz_local_midnight(tz, day - 1);
    int i;

    for (i = 1; i < MAX_STEPS && p >= start; i++)
        p = rls__tz_local_midnight(tz, day - 1 - i);
    return p;
}

static void calendar_window(const rls_duration *d, const rls_tz *tz,
                            int64_t t, int64_t *prev, int64_t *start,
                            int64_t *end)
{
    int64_t ds, de, day = day_of(tz, t, &ds, &de);

    if (d->calendar == DUR_DAY) {
        *start = ds;
        *end = de;
        *prev = prev_midnight(tz, day, ds);
    } else if (d->calendar == DUR_WEEK) {
        int64_t monday = day - rls__civil_weekday(day);
        *start = rls__tz_local_midnight(tz, monday);
        *end = rls__tz_local_midnight(tz, monday + 7);
        *prev = rls__tz_local_midnight(tz, monday - 7);
    } else {
        int64_t y;
        int m, dd;
        rls__civil_from_days(day, &y, &m, &dd);
        *start = rls__tz_local_midnight(tz, rls__civil_days_from(y, m, 1));
        *end = rls__tz_local_midnight(tz, m == 12 ? rls__civil_days_from(y + 1, 1, 1)
                                             : rls__civil_days_from(y, m + 1, 1));
        *prev = rls__tz_local_midnight(tz, m == 1 ? rls__civil_days_from(y - 1, 12, 1)
                                             : rls__civil_days_from(y, m - 1, 1));
    }
}

/* Fixed len < 1 day: elapsed time from the local midnight instant. */
static void subday_window(int64_t len, const rls_tz *tz, int64_t t,
                          int64_t *prev, int64_t *start, int64_t *end)
{
    int64_t ds, de, day = day_of(tz, t, &ds, &de);
    int64_t k = (t - ds) / len;

    *start = ds + k * len;
    *end = *start + len < de ? *start + len : de;
    if (k > 0) {
        *prev = *start - len;
    } else {
        int64_t ps = prev_midnight(tz, day, ds);
        *prev = ps + (ds - ps - 1) / len * len;
    }
}

/* Fixed len >= 1 day: multiples of len of local wall time since the epoch. */
static void long_window(int64_t len, const rls_tz *tz, int64_t t,
                        int64_t *prev, int64_t *start, int64_t *end)
{
    int64_t local = t + (int64_t)rls__tz_offset_at(tz, t) * 1000;
    int64_t k = floor_div(local, len);
    int i;

    *start = rls__tz_local_to_utc(tz, k * len);
    *end = rls__tz_local_to_utc(tz, (k + 1) * len);
    for (i = 0; i < MAX_STEPS && t >= *end; i++) {
        k++;
        *start = *end;
        *end = rls__tz_local_to_utc(tz, (k + 1) * len);
    }
    for (i = 0; i < MAX_STEPS && t < *start; i++) {
        k--;
        *end = *start;
        *start = rls__tz_local_to_utc(tz, k * len);
    }
    *prev = rls__tz_local_to_utc(tz, (k - 1) * len);
    for (i = 2; i < MAX_STEPS && *prev >= *start; i++)
        *prev = rls__tz_local_to_utc(tz, (k - i) * len);
}

/* The window of (d, tz) containing t (already clamped). */
static void compute(const rls_duration *d, const rls_tz *tz, int64_t t, int64_t *p,
                    int64_t *s, int64_t *e)
{
    if (!d || (d->calendar == DUR_FIXED && d->ms <= 0)) {
        *p = t - 1;
        *s = t;
        *e = t + 1;
    } else if (d->calendar == DUR_DAY || d->calendar == DUR_WEEK ||
               d->calendar == DUR_MONTH) {
        calendar_window(d, tz, t, p, s, e);
    } else if (d->ms < MS_DAY) {
        subday_window(d->ms, tz, t, p, s, e);
    } else {
        long_window(d->ms < DUR_MS_MAX ? d->ms : DUR_MS_MAX, tz, t, p, s, e);
    }
}

static int64_t clamp_t(int64_t t)
{
    return t < -T_LIMIT ? -T_LIMIT : t > T_LIMIT ? T_LIMIT : t;
}

/*
 * The windows computed last by this thread.  The windows of one (length,
 * zone) partition time (the rules above give every instant exactly one
 * window, and prev_start depends only on the window), so the window of t
 * is the cached one whenever start <= t < end: a check charging the same
 * day's window need not convert local midnights again (a calendar window
 * costs several time-zone conversions).  Keyed by the zone's serial, never
 * its address: a zone freed and another loaded there is another zone.
 * Thread-local: window.c stays safe from any thread without a lock.
 */
#define WCACHE_N 4
struct wcache {
    uint64_t serial;
    int64_t ms;
    int calendar;
    int64_t prev, start, end;   /* start == end (zeroed): holds nothing */
};
static _Thread_local struct wcache wcache[WCACHE_N];
static _Thread_local unsigned wcache_next;

void rls__window_compute(const rls_duration *d, const rls_tz *tz, int64_t t,
                         int64_t *prev_start, int64_t *start, int64_t *end)
{
    int64_t p, s, e;
    compute(d, tz, clamp_t(t), &p, &s, &e);
    if (prev_start)
        *prev_start = p;
    if (start)
        *start = s;
    if (end)
        *end = e;
}

/* The cached window of (d, tz) containing t, or NULL. */
static const struct wcache *cached(const rls_duration *d, uint64_t serial, int64_t t)
{
    for (int i = 0; i < WCACHE_N; i++) {
        const struct wcache *c = &wcache[i];
        if (c->serial == serial && c->ms == d->ms && c->calendar == d->calendar &&
            c->start <= t && t < c->end)
            return c;
    }
    return NULL;
}

/*
 * Contract: see window.h and the rules above.  d must have ms >= 1 for a
 * fixed duration; a NULL d or a non-positive length gives the 1 ms window
 * [t, t+1) (prev_start t-1).  Any output pointer may be NULL.
 */
void rls__window_at(const rls_duration *d, const rls_tz *tz, int64_t t,
               int64_t *prev_start, int64_t *start, int64_t *end)
{
    int64_t p, s, e;
    const struct wcache *c;
    uint64_t serial = rls__tz_serial(tz);

    t = clamp_t(t);
    if (!d || (d->calendar == DUR_FIXED && d->ms <= 0)) {
        compute(d, tz, t, &p, &s, &e);
    } else if ((c = cached(d, serial, t)) != NULL) {
        p = c->prev;
        s = c->start;
        e = c->end;
    } else {
        compute(d, tz, t, &p, &s, &e);
        if (s <= t && t < e)   /* always (window.h); the cache holds only that */
            wcache[wcache_next++ % WCACHE_N] =
                (struct wcache){serial, d->ms, d->calendar, p, s, e};
    }
    if (prev_start)
        *prev_start = p;
    if (start)
        *start = s;
    if (end)
        *end = e;
}
