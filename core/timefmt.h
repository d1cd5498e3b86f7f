/*
 * timefmt.h - UTC timestamps as text: ISO-8601 ("2026-11-21T10:00:00Z",
 * with .f/.ff/.fff before the Z, or a bare date "2026-11-21") and epoch
 * milliseconds, parsed and formatted without the C library's time zone.
 */
#ifndef RLS_TIMEFMT_H
#define RLS_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* ISO-8601 UTC form only; 0 and *ms, or -1 (not a valid date/time, or
 * before 1970). */
int rls__timefmt_parse_iso(const char *s, size_t len, int64_t *ms);

/* ISO-8601 or all-digit epoch milliseconds, within 0..RLS_TIME_MAX. */
int rls__timefmt_parse(const char *s, size_t len, int64_t *ms);

/* "YYYY-MM-DDTHH:MM:SS.mmmZ"; snprintf-style return, -1 if ms < 0. */
int rls__timefmt_format(int64_t ms, char *buf, size_t size);

#endif
