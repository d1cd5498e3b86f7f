/*
 * fuzz_time.c - libFuzzer target for the time parser behind rlctl --now
 * (rls__timefmt_parse, rls_time_parse) and the formatter (rls__timefmt_format,
 * rls_time_format), core/timefmt.c.
 *
 * The input is time text ("1767225600000", "2026-11-21T10:00:00.250Z",
 * "2026-11-21", garbage); its first 8 bytes also serve as an arbitrary
 * int64 for the formatter.  Checked:
 *   - rls__timefmt_parse agrees with a reference on acceptance and value: up to
 *     15 decimal digits of epoch ms, or exactly YYYY-MM-DD,
 *     YYYY-MM-DDTHH:MM:SSZ or ...SS.f/.ff/.fffZ with a real calendar date
 *     from 1970, hours <= 23, minutes and seconds <= 59, the value computed
 *     with glibc's timegm(), all within RLS_TIME_MIN..RLS_TIME_MAX;
 *   - rls_time_parse (NUL-terminated) agrees with rls__timefmt_parse;
 *   - round trip: parse(format(ms)) == ms, format(parse(x)) == x for text
 *     already in the canonical 24-byte form;
 *   - rls__timefmt_format: -1 for ms < 0, exactly 24 bytes for ms in range, no
 *     UB or crash for any int64, snprintf semantics for every buffer size.
 */
#define _GNU_SOURCE 1   /* timegm */
#include "fuzz_util.h"

#include <time.h>

#include "rlstore.h"
#include "timefmt.h"

static int dig(const uint8_t *s, size_t n, int *v)
{
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        r = r * 10 + (s[i] - '0');
    }
    *v = r;
    return 1;
}

/* Reference parser: 1 and *ms, or 0. */
static int ref_parse(const uint8_t *s, size_t n, int64_t *ms)
{
    size_t i = 0;
    int64_t v = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
    struct tm tm;
    time_t t;

    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (n > 0 && i == n) {
        if (n > 15)
            return 0;
        for (i = 0; i < n; i++)
            v = v * 10 + (s[i] - '0');
        if (v > RLS_TIME_MAX)
            return 0;
        *ms = v;
        return 1;
    }
    if (!(n == 10 || n == 20 || (n >= 22 && n <= 24)))
        return 0;
    if (!dig(s, 4, &y) || s[4] != '-' || !dig(s + 5, 2, &mo) || s[7] != '-' ||
        !dig(s + 8, 2, &d))
        return 0;
    if (n > 10) {
        if (s[10] != 'T' || !dig(s + 11, 2, &h) || s[13] != ':' || !dig(s + 14, 2, &mi) ||
            s[16] != ':' || !dig(s + 17, 2, &sec) || s[n - 1] != 'Z')
            return 0;
        if (n > 20) {
            if (s[19] != '.' || !dig(s + 20, n - 21, &frac))
                return 0;
            for (size_t k = n - 21; k < 3; k++)
                frac *= 10;
        }
    }
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59)
        return 0;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    /* timegm normalises 2026-02-30 to March: a real date comes back as is */
    if (tm.tm_mday != d || tm.tm_mon != mo - 1 || tm.tm_year != y - 1900)
        return 0;
    v = (int64_t)t * 1000 + frac;
    if (v < RLS_TIME_MIN || v > RLS_TIME_MAX)
        return 0;
    *ms = v;
    return 1;
}

/* Formats ms at every buffer size; returns the length (or -1). */
static int check_format(int64_t ms, char out[64])
{
    int n = rls_time_format(ms, NULL, 0);
    if (ms < 0) {
        FUZZ_CHECK(n == -1, "negative ms %lld formatted", (long long)ms);
        return -1;
    }
    FUZZ_CHECK(n >= 24 && n < 64, "length %d for %lld", n, (long long)ms);
    FUZZ_CHECK(ms > RLS_TIME_MAX || n == 24, "length %d for %lld", n, (long long)ms);
    FUZZ_CHECK(rls__timefmt_format(ms, out, 64) == n && strlen(out) == (size_t)n,
               "format into a large buffer");
    for (size_t size = 1; size <= (size_t)n + 1; size++) {
        char *b = fuzz_buf(size);
        size_t w = size - 1 < (size_t)n ? size - 1 : (size_t)n;
        FUZZ_CHECK(rls_time_format(ms, b, size) == n, "size %zu: length", size);
        FUZZ_CHECK(memchr(b, '\0', size) == b + w, "size %zu: NUL not at %zu", size, w);
        FUZZ_CHECK(memcmp(b, out, w) == 0, "size %zu: not a prefix", size);
        free(b);
    }
    FUZZ_CHECK(rls_time_format(ms, NULL, 1) == -1, "NULL buffer, size 1");
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t ms = -5, ref_ms = -5, back = -5;
    char out[64];
    int rc = rls__timefmt_parse((const char *)data, size, &ms);
    int ref = ref_parse(data, size, &ref_ms);

    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    FUZZ_CHECK((rc == 0) == ref, "library %s, reference %s",
               rc == 0 ? "accepts" : "refuses", ref ? "accepts" : "refuses");
    if (rc == 0) {
        FUZZ_CHECK(ms == ref_ms, "got %lld, reference %lld", (long long)ms,
                   (long long)ref_ms);
        FUZZ_CHECK(check_format(ms, out) == 24, "format length");
        FUZZ_CHECK(rls__timefmt_parse(out, 24, &back) == 0 && back == ms,
                   "'%s' parses back as %lld, not %lld", out, (long long)back,
                   (long long)ms);
        if (size == 24 && data[10] == 'T')
            FUZZ_CHECK(memcmp(out, data, 24) == 0, "canonical text reformats as '%s'", out);
    } else {
        FUZZ_CHECK(ms == -5, "*ms written on error");
    }
    {
        char *s = fuzz_strndup(data, size);
        int64_t a = -5, b = -5;
        int r1 = rls__timefmt_parse(s, strlen(s), &a);
        int r2 = rls_time_parse(s, &b);
        FUZZ_CHECK(r2 == (r1 == 0 ? RLS_OK : RLS_EINVAL) && (r1 != 0 || a == b),
                   "rls_time_parse disagrees");
        FUZZ_CHECK(rls_time_parse(NULL, &b) == RLS_EINVAL && rls_time_parse(s, NULL) ==
                       RLS_EINVAL, "NULL arguments accepted");
        free(s);
    }
    if (size >= 8) {
        const uint8_t *p = data;
        size_t left = size;
        int64_t v = (int64_t)fuzz_take(&p, &left, 8);
        if (check_format(v, out) > 0 && v <= RLS_TIME_MAX)
            FUZZ_CHECK(rls__timefmt_parse(out, strlen(out), &back) == 0 && back == v,
                       "'%s' parses back as %lld, not %lld", out, (long long)back,
                       (long long)v);
        /* the same for a value folded into the accepted range */
        v = (int64_t)((uint64_t)v % (uint64_t)(RLS_TIME_MAX + 1));
        FUZZ_CHECK(check_format(v, out) == 24, "in-range length");
        FUZZ_CHECK(rls__timefmt_parse(out, 24, &back) == 0 && back == v,
                   "'%s' parses back as %lld, not %lld", out, (long long)back,
                   (long long)v);
    }
    return 0;
}
