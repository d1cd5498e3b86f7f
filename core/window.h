/*
 * window.h - window alignment: which window contains an instant.
 *
 * Calendar windows (1d, 1w, 1mo) are local calendar periods in the rule's
 * time zone: a DST day is 23 or 25 hours.  Fixed windows shorter than a day
 * align to multiples of their length from local midnight (the last window of
 * a day may be cut short at the next midnight when the length does not divide
 * the day).  Fixed windows of a day or longer align to multiples of their
 * length from the Unix epoch in local time.  window.c states the exact rules
 * for DST days and for instants in a gap or a fold.
 */
#ifndef RLS_WINDOW_H
#define RLS_WINDOW_H

#include <stdint.h>
#include "duration.h"
#include "tz.h"

/*
 * Fills [*start, *end) with the window of length d containing t (UTC ms), and
 * *prev_start with the start of the window before it (which ends at *start).
 * tz NULL means UTC.  Always prev_start < start <= t < end.
 */
void rls__window_at(const rls_duration *d, const rls_tz *tz, int64_t t,
               int64_t *prev_start, int64_t *start, int64_t *end);

/* The same, computed without the thread's cache of recent windows (tests
 * compare the two). */
void rls__window_compute(const rls_duration *d, const rls_tz *tz, int64_t t,
                         int64_t *prev_start, int64_t *start, int64_t *end);

#endif
