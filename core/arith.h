/*
 * arith.h - exact and saturating int64 arithmetic for the algorithms, and
 * the little-endian encoding of their stored states: small enough to be
 * inline, shared by every file that computes with times and units.
 */
#ifndef RLS_ARITH_H
#define RLS_ARITH_H

#include <stdint.h>

static inline int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

static inline int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ceil(a / b) for a >= 0, b > 0; 0 for a <= 0. */
static inline int64_t ceil_div(int64_t a, int64_t b)
{
    if (a <= 0)
        return 0;
    return a / b + (a % b != 0);
}

/*
 * floor(a * b / c) for 0 <= a, 0 <= b <= c, c > 0, exactly and without
 * overflow (the result is at most a).  *rem, if not NULL, receives
 * (a * b) mod c, so the caller can round up.  a = q*c + r gives
 * a*b/c = q*b + r*b/c; q*b <= a cannot overflow, and r*b is computed by
 * long multiplication modulo c when it does not fit in 64 bits.
 */
static inline int64_t mul_frac(int64_t a, int64_t b, int64_t c, int64_t *rem)
{
    int64_t q = a / c, r = a % c, prod;
    uint64_t hq = 0, hr = 0, uc = (uint64_t)c, ur = (uint64_t)r;

    if (!__builtin_mul_overflow(r, b, &prod)) {
        if (rem)
            *rem = prod % c;
        return q * b + prod / c;
    }
    /* r*b = hq*c + hr, built bit by bit; hr < c keeps 2*hr below 2^64. */
    for (int bit = 62; bit >= 0; bit--) {
        hq *= 2;
        hr *= 2;
        if (hr >= uc) {
            hq++;
            hr -= uc;
        }
        if (((uint64_t)b >> bit) & 1) {
            hr += ur;
            if (hr >= uc) {
                hq++;
                hr -= uc;
            }
        }
    }
    if (rem)
        *rem = (int64_t)hr;
    return q * b + (int64_t)hq;
}

/* ceil(a * b / c) under the preconditions of mul_frac. */
static inline int64_t mul_frac_ceil(int64_t a, int64_t b, int64_t c)
{
    int64_t rem;
    int64_t f = mul_frac(a, b, c, &rem);
    return f + (rem != 0);
}

static inline int64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static inline void put_le64(unsigned char *p, int64_t x)
{
    uint64_t v = (uint64_t)x;
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

#endif
