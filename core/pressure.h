/*
 * pressure.h - how much of a key's limit is in use, as usage listings and
 * the per-key stats report it: the units in use, the fraction used in
 * parts per million, the state a listing shows ("blocked", "limited",
 * "shadow", "near", "ok") and the threshold of "under pressure".  Pure:
 * storage peeks or checks, core says what the figures mean.
 */
#ifndef RLS_PRESSURE_H
#define RLS_PRESSURE_H

#include <stdint.h>
#include "rlstore.h"
#include "algo.h"

#define PRESSURE_PPM 1000000      /* the whole capacity */
#define PRESSURE_HOT_PPM 500000   /* half used: under pressure (listed first) */
#define PRESSURE_NEAR_PPM 800000  /* "near" its limit */
/* A key the per-key stats saw under pressure within this time (ms) is a
 * candidate of a usage listing's head (usage_src.c); in SQL text, as
 * PRESSURE_RECENT_SQL. */
#define PRESSURE_RECENT_MS 86400000
#define PRESSURE_RECENT_SQL "86400000"

/*
 * Units in use of the deciding limit of res: its meta's `used` when given
 * (past the capacity too: an unlimited tier counts every request, overage
 * admits beyond the limit), else limit - remaining, never below 0.
 */
int64_t rls__pressure_used(const rls_result *res, const algo_meta *deciding);

/* used / limit in parts per million (truncated; above PRESSURE_PPM past
 * the capacity; kept within int64); 0 when limit <= 0. */
int64_t rls__pressure_ppm(int64_t used, int64_t limit);

/* At least half used. */
int rls__pressure_hot(int64_t ppm);

/* The state a usage row shows: "blocked" (an active block or a blocked
 * tier), "limited" (res denied), "shadow" (admitted past a shadow limit),
 * "near" (at least PRESSURE_NEAR_PPM used, unless the key's tier is
 * unlimited: always admitted, so never near), else "ok".  A static
 * string. */
const char *rls__pressure_state(int blocked, int unlimited, const rls_result *res, int64_t ppm);

/* What a check's answer res records in the per-key stats (keystats.c):
 * 1 with *ppm for a denial (all used: PRESSURE_PPM) or an admission whose
 * deciding limit is at least half used; 0 for any other admission (and
 * one without a limit). */
int rls__pressure_of_check(const rls_result *res, int64_t *ppm);

#endif
