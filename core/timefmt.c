/*
 * timefmt.c - ISO-8601 UTC and epoch-millisecond timestamps (timefmt.h).
 */
#include <stdio.h>
#include "rlstore.h"
#include "timefmt.h"
#include "tz.h"

/* Reads exactly n digits at s into *v; 0 if they are not all digits. */
static int digits(const char *s, int n, int *v)
{
    int r = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        r = r * 10 + (s[i] - '0');
    }
    *v = r;
    return 1;
}

static int valid_date(int y, int mo, int d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 &&
           d <= mdays[mo - 1] + (mo == 2 && leap);
}

int rls__timefmt_parse_iso(const char *s, size_t len, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, fd;
    if (len < 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) ||
        !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) || !valid_date(y, mo, d))
        return -1;
    if (len > 10) {
        if (len < 20 || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len - 1] != 'Z' ||
            !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec))
            return -1;
        if (len > 20) {
            fd = (int)len - 21;
            if (s[19] != '.' || fd < 1 || fd > 3 || !digits(s + 20, fd, &frac))
                return -1;
            for (int i = fd; i < 3; i++)
                frac *= 10;
        }
        if (h > 23 || mi > 59 || sec > 59)
            return -1;
    }
    *ms = ((rls__civil_days_from(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + sec * 1000LL + frac;
    return 0;
}

int rls__timefmt_parse(const char *s, size_t len, int64_t *ms)
{
    int64_t v = 0;
    size_t i = 0;
    if (len == 0)
        return -1;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == len) {
        if (len > 15)
            return -1;  /* beyond RLS_TIME_MAX (15 digits) */
        for (i = 0; i < len; i++)
            v = v * 10 + (s[i] - '0');
    } else if (rls__timefmt_parse_iso(s, len, &v) != 0) {
        return -1;
    }
    if (v < RLS_TIME_MIN || v > RLS_TIME_MAX)
        return -1;
    *ms = v;
    return 0;
}

int rls__timefmt_format(int64_t ms, char *buf, size_t size)
{
    int64_t y;
    int mo, d;
    if (ms < 0)
        return -1;
    rls__civil_from_days(ms / 86400000, &y, &mo, &d);
    int64_t rem = ms % 86400000;
    return snprintf(buf, size, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, mo, d,
                    (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
                    (int)(rem % 1000));
}
