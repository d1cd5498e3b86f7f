/*
 * headers.c - RateLimit-Policy, RateLimit and Retry-After header lines
 * (draft-ietf-httpapi-ratelimit-headers-11, structured fields RFC 9651).
 *
 * Pure function, no allocation: safe from any thread.  Output, each line
 * ending in CRLF:
 *
 *   RateLimit-Policy: "<name>";q=<limit>;w=<window seconds>
 *   RateLimit: "<name>";r=<remaining>;t=<seconds>
 *   Retry-After: <seconds>                   denied and retry_after_ms > 0
 *
 * Decisions where the draft leaves room:
 *   - Seconds are rounded up (a client that waits the advertised time must
 *     not be early).  w is omitted when window_ms <= 0 (the draft requires
 *     w > 0 when present).
 *   - t is the time until reset, except when Retry-After is sent: then t
 *     equals it, because the draft says Retry-After SHOULD NOT point earlier
 *     than the end of the effective window, and for bucket algorithms the
 *     full reset lies later than the next admissible request.
 *   - Negative remaining or reset values are written as 0; values are capped
 *     at 999999999999999, the largest sf-integer.
 *   - The name is an sf-string: '"' and '\' are escaped, bytes outside
 *     0x20..0x7e become '_'.
 */
#include "headers.h"

#include <stdio.h>
#include <string.h>

#define SF_INT_MAX 999999999999999LL

static int64_t cap(int64_t v)
{
    return v < 0 ? 0 : v > SF_INT_MAX ? SF_INT_MAX : v;
}

/* ms rounded up to whole seconds (ms >= 0). */
static int64_t ceil_secs(int64_t ms)
{
    return ms / 1000 + (ms % 1000 != 0);
}

struct out {
    char *buf;
    size_t size, pos;
};

static void put_char(struct out *o, char c)
{
    if (o->pos + 1 < o->size)
        o->buf[o->pos] = c;
    o->pos++;
}

static void put_str(struct out *o, const char *s)
{
    while (*s)
        put_char(o, *s++);
}

static void put_int(struct out *o, int64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put_str(o, tmp);
}

static void put_sf_string(struct out *o, const char *s)
{
    put_char(o, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            put_char(o, '\\');
            put_char(o, (char)c);
        } else if (c < 0x20 || c > 0x7e) {
            put_char(o, '_');
        } else {
            put_char(o, (char)c);
        }
    }
    put_char(o, '"');
}

/*
 * Contract: see headers.h.  -1 if in or in->policy is NULL, buf is NULL with
 * size > 0, or limit < 0.  Otherwise the full length (snprintf semantics:
 * buf holds at most size-1 bytes and is always NUL-terminated if size > 0).
 */
int rls__headers_format(const hdr_input *in, char *buf, size_t size)
{
    struct out o = { buf, size, 0 };
    int64_t t, retry = 0;

    if (!in || !in->policy || (!buf && size > 0) || in->limit < 0)
        return -1;
    if (strlen(in->policy) > 4096)
        return -1;
    if (!in->allowed && in->retry_after_ms > 0)
        retry = cap(ceil_secs(in->retry_after_ms));
    t = retry > 0 ? retry
                  : cap(ceil_secs(in->reset_ms > 0 ? in->reset_ms : 0));

    put_str(&o, "RateLimit-Policy: ");
    put_sf_string(&o, in->policy);
    put_str(&o, ";q=");
    put_int(&o, cap(in->limit));
    if (in->window_ms > 0) {
        put_str(&o, ";w=");
        put_int(&o, cap(ceil_secs(in->window_ms)));
    }
    put_str(&o, "\r\nRateLimit: ");
    put_sf_string(&o, in->policy);
    put_str(&o, ";r=");
    put_int(&o, cap(in->remaining));
    put_str(&o, ";t=");
    put_int(&o, t);
    put_str(&o, "\r\n");
    if (retry > 0) {
        put_str(&o, "Retry-After: ");
        put_int(&o, retry);
        put_str(&o, "\r\n");
    }
    if (size > 0)
        buf[o.pos < size ? o.pos : size - 1] = '\0';
    return (int)o.pos;
}
