/*
 * pressure.c - usage fraction and states of a key's limit (pressure.h).
 */
#include "pressure.h"

int64_t rls__pressure_used(const rls_result *res, const algo_meta *deciding)
{
    if (deciding)
        return deciding->used;
    return res->limit > res->remaining ? res->limit - res->remaining : 0;
}

int64_t rls__pressure_ppm(int64_t used, int64_t limit)
{
    if (limit <= 0)
        return 0;
    double f = (double)used * 1e6 / (double)limit;
    /* 2^63 as a double: the first value an int64 cannot hold */
    if (f >= 9223372036854775808.0)
        return INT64_MAX;
    if (f <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)f;
}

int rls__pressure_hot(int64_t ppm)
{
    return ppm >= PRESSURE_HOT_PPM;
}

const char *rls__pressure_state(int blocked, int unlimited, const rls_result *res, int64_t ppm)
{
    if (blocked)
        return "blocked";
    if (!res->allowed)
        return "limited";
    if (res->reason == RLS_REASON_SHADOW)
        return "shadow";
    /* an unlimited tier is always admitted: its count past the limit is
     * shown, but it is never about to be limited */
    return !unlimited && ppm >= PRESSURE_NEAR_PPM ? "near" : "ok";
}

int rls__pressure_of_check(const rls_result *res, int64_t *ppm)
{
    *ppm = PRESSURE_PPM;   /* a denial counts as all used */
    if (!res->allowed)
        return 1;
    if (res->limit <= 0)
        return 0;
    *ppm = rls__pressure_ppm(rls__pressure_used(res, NULL), res->limit);
    return rls__pressure_hot(*ppm);
}
