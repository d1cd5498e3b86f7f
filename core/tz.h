/*
 * tz.h - IANA time zones read from the system zoneinfo (TZif files).
 *
 * Converts between UTC milliseconds and local civil time without touching
 * the process's TZ or localtime(): each rls_tz is an immutable object that
 * can be shared by any number of rules.  Supports TZif versions 1-4 with
 * 64-bit transition data and the POSIX TZ footer for instants beyond the
 * table.  The zoneinfo directory is $TZDIR, else /usr/share/zoneinfo.
 * Every function taking a const rls_tz * treats NULL as UTC.
 */
#ifndef RLS_TZ_H
#define RLS_TZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct rls_tz rls_tz;

/*
 * Loads zone `name` ("UTC", "Europe/Berlin").  Returns 0 and a new zone in
 * *out, or -1 with a static reason in *why: invalid name (empty, absolute,
 * containing "..", too long), not found, not a TZif file, out of memory.
 * "UTC" and "Etc/UTC" never need the filesystem.
 */
int rls__tz_load(const char *name, rls_tz **out, const char **why);
void rls__tz_free(rls_tz *tz);                /* NULL is a no-op */
const char *rls__tz_name(const rls_tz *tz);   /* as given to rls__tz_load */
/* A number naming this loaded zone, never given to another zone of the
 * process (a zone loaded at a freed zone's address has another): what a
 * cache of computed windows keys on.  0 for NULL (UTC). */
uint64_t rls__tz_serial(const rls_tz *tz);

/* Offset from UTC in seconds (local = utc + offset) in force at utc_ms. */
int32_t rls__tz_offset_at(const rls_tz *tz, int64_t utc_ms);

/*
 * Civil date/time helpers (proleptic Gregorian, no time zone).
 * days_from_civil: days since 1970-01-01 for y-m-d (m 1..12, d 1..31).
 * rls__civil_from_days: the inverse.  weekday: 0 = Monday .. 6 = Sunday.
 */
int64_t rls__civil_days_from(int64_t y, int m, int d);
void rls__civil_from_days(int64_t days, int64_t *y, int *m, int *d);
int rls__civil_weekday(int64_t days);

/*
 * The UTC instant of local midnight starting the local day `days` (days
 * since 1970-01-01 in local civil time).  If that midnight does not exist
 * (a DST gap at 00:00), the first instant of the day that exists.
 */
int64_t rls__tz_local_midnight(const rls_tz *tz, int64_t days);

/* The local civil day (days since 1970-01-01) containing utc_ms. */
int64_t rls__tz_local_day(const rls_tz *tz, int64_t utc_ms);

/*
 * (added) The first UTC instant whose local wall time is >= local_ms (ms
 * since 1970-01-01 00:00 local).  A local time that occurs once gives its
 * instant; one that occurs twice (a fold, DST ending) the earlier; one that
 * does not exist (a gap, DST starting) the instant the gap ends.  Monotone:
 * a later local time never gives an earlier instant.  local_ms is clamped
 * to +-8.64e15 (the ECMAScript time range, about +-273,000 years).
 * rls__tz_local_midnight(tz, d) == rls__tz_local_to_utc(tz, d * 86400000).
 */
int64_t rls__tz_local_to_utc(const rls_tz *tz, int64_t local_ms);

#endif
