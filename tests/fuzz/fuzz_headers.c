/*
 * fuzz_headers.c - libFuzzer target for core/headers.c and the public
 * rls_format_headers() (core/result.c).
 *
 * Input layout (missing bytes read as zero): allowed (1 byte), limit,
 * remaining, window_ms, reset_ms, retry_after_ms (8 bytes each, little
 * endian, any int64 including negative and INT64_MIN/MAX), a buffer size
 * (2 bytes), then the policy name (any bytes; cut at the first NUL).
 * Checked:
 *   - -1 exactly for the documented invalid inputs (limit < 0, policy over
 *     4096 bytes, NULL arguments);
 *   - the output equals an independent rendering of the format in
 *     headers.h: "RateLimit-Policy" and "RateLimit" lines, "Retry-After"
 *     only when denied with retry_after_ms > 0 (then t equals it), seconds
 *     rounded up, values clamped to 0..999999999999999, w omitted for
 *     window_ms <= 0, the name as an sf-string;
 *   - every byte is printable ASCII except CRLF pairs, every line ends in
 *     CRLF, no bare CR or LF (no header injection through the name);
 *   - snprintf semantics (exact heap buffers) for sizes 1..32, 16 sizes
 *     spread over the rest, the 11 around the full length and one chosen
 *     by the input; NULL with size 0 gives the length;
 *   - rls_format_headers gives the same text, with the rule name of the
 *     result when policy is NULL.
 */
#include "fuzz_util.h"

#include "headers.h"
#include "rlstore.h"

#define SF_MAX 999999999999999LL

static int64_t clamp(int64_t v)
{
    return v < 0 ? 0 : v > SF_MAX ? SF_MAX : v;
}

static int64_t up(int64_t ms)   /* ms >= 0 */
{
    return ms / 1000 + (ms % 1000 != 0);
}

/* Independent rendering of headers.h's format into a heap string. */
static char *expected(const hdr_input *in)
{
    size_t cap = 64 + 4 * strlen(in->policy) + 200, o = 0;
    char *e = malloc(cap), name[2 * 4096 + 3];
    size_t k = 0;
    int64_t retry = 0, t;

    if (!e)
        abort();
    name[k++] = '"';
    for (const unsigned char *s = (const unsigned char *)in->policy; *s; s++) {
        if (*s == '"' || *s == '\\') {
            name[k++] = '\\';
            name[k++] = (char)*s;
        } else {
            name[k++] = *s >= 0x20 && *s <= 0x7e ? (char)*s : '_';
        }
    }
    name[k++] = '"';
    name[k] = '\0';
    if (!in->allowed && in->retry_after_ms > 0)
        retry = clamp(up(in->retry_after_ms));
    t = retry > 0 ? retry : clamp(up(in->reset_ms > 0 ? in->reset_ms : 0));
    o += (size_t)snprintf(e + o, cap - o, "RateLimit-Policy: %s;q=%lld", name,
                          (long long)clamp(in->limit));
    if (in->window_ms > 0)
        o += (size_t)snprintf(e + o, cap - o, ";w=%lld",
                              (long long)clamp(up(in->window_ms)));
    o += (size_t)snprintf(e + o, cap - o, "\r\nRateLimit: %s;r=%lld;t=%lld\r\n",
                          name, (long long)clamp(in->remaining), (long long)t);
    if (retry > 0)
        snprintf(e + o, cap - o, "Retry-After: %lld\r\n", (long long)retry);
    return e;
}

static void check_lines(const char *s, size_t n)
{
    int lines = 0;
    FUZZ_CHECK(n >= 2 && s[n - 2] == '\r' && s[n - 1] == '\n', "output does not end in CRLF");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r') {
            FUZZ_CHECK(i + 1 < n && s[i + 1] == '\n', "bare CR at %zu", i);
            lines++;
            i++;
            continue;
        }
        FUZZ_CHECK(c >= 0x20 && c <= 0x7e, "byte 0x%02x at %zu", c, i);
    }
    FUZZ_CHECK(lines == 2 || lines == 3, "%d lines", lines);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t left = size, bufsize, plen;
    hdr_input in;
    char *policy, *full, *want;
    int n;

    in.allowed = (int)(fuzz_take(&p, &left, 1) % 3);   /* 0, 1, and 2 */
    in.limit = (int64_t)fuzz_take(&p, &left, 8);
    in.remaining = (int64_t)fuzz_take(&p, &left, 8);
    in.window_ms = (int64_t)fuzz_take(&p, &left, 8);
    in.reset_ms = (int64_t)fuzz_take(&p, &left, 8);
    in.retry_after_ms = (int64_t)fuzz_take(&p, &left, 8);
    bufsize = (size_t)fuzz_take(&p, &left, 2);
    if (left > 5000)
        return 0;
    policy = fuzz_strndup(p, left);
    plen = strlen(policy);
    in.policy = policy;

    n = rls__headers_format(&in, NULL, 0);
    if (in.limit < 0 || plen > 4096) {
        FUZZ_CHECK(n == -1, "limit %lld, policy %zu bytes: accepted", (long long)in.limit,
                   plen);
        free(policy);
        return 0;
    }
    FUZZ_CHECK(n > 0, "rc %d", n);
    full = fuzz_buf((size_t)n + 1);
    FUZZ_CHECK(rls__headers_format(&in, full, (size_t)n + 1) == n, "length changed");
    FUZZ_CHECK(strlen(full) == (size_t)n, "strlen %zu != %d", strlen(full), n);
    check_lines(full, (size_t)n);
    want = expected(&in);
    FUZZ_CHECK(strcmp(full, want) == 0, "got:\n%s\nwant:\n%s", full, want);

    /* snprintf semantics */
    {
        /* sizes 1..32, 16 spread over the rest, the last few around the
         * full length, and the one from the input */
        size_t sizes[32 + 16 + 11 + 1], ns = 0;
        for (size_t s = 1; s <= 32; s++)
            sizes[ns++] = s;
        for (size_t k = 1; k <= 16; k++)
            sizes[ns++] = 32 + k * (size_t)n / 17 + bufsize % 7;
        for (size_t k = 0; k < 11; k++)
            sizes[ns++] = (size_t)n + 2 >= k ? (size_t)n + 2 - k : 1;
        sizes[ns++] = bufsize;
        for (size_t i = 0; i < ns; i++) {
            size_t sz = sizes[i], w;
            char *b;
            if (sz == 0)
                continue;
            b = fuzz_buf(sz);
            w = sz - 1 < (size_t)n ? sz - 1 : (size_t)n;
            FUZZ_CHECK(rls__headers_format(&in, b, sz) == n, "size %zu: length", sz);
            FUZZ_CHECK(memchr(b, '\0', sz) == b + w, "size %zu: NUL not at %zu", sz, w);
            FUZZ_CHECK(memcmp(b, full, w) == 0, "size %zu: not a prefix", sz);
            free(b);
        }
        FUZZ_CHECK(rls__headers_format(&in, NULL, 1) == -1, "NULL buffer, size 1");
        FUZZ_CHECK(rls__headers_format(NULL, full, (size_t)n + 1) == -1, "NULL input");
    }

    /* the public function, with an explicit policy and with the rule name */
    {
        rls_result r;
        char *b = fuzz_buf((size_t)n + 1);
        memset(&r, 0, sizeof r);
        r.allowed = in.allowed;
        r.limit = in.limit;
        r.remaining = in.remaining;
        r.window_ms = in.window_ms;
        r.reset_ms = in.reset_ms;
        r.retry_after_ms = in.retry_after_ms;
        FUZZ_CHECK(rls_format_headers(&r, policy, b, (size_t)n + 1) == n &&
                       strcmp(b, full) == 0, "rls_format_headers differs");
        free(b);
        snprintf(r.rule, sizeof r.rule, "%s", policy);
        in.policy = r.rule;
        n = rls__headers_format(&in, NULL, 0);
        b = fuzz_buf((size_t)n + 1);
        FUZZ_CHECK(rls_format_headers(&r, NULL, b, (size_t)n + 1) == n,
                   "rls_format_headers with the rule name: length");
        free(want);
        want = expected(&in);
        FUZZ_CHECK(strcmp(b, want) == 0, "rule name: got:\n%s\nwant:\n%s", b, want);
        FUZZ_CHECK(rls_format_headers(NULL, NULL, b, 1) == -1, "NULL result");
        FUZZ_CHECK(rls_format_headers(&r, NULL, NULL, 1) == -1, "NULL buffer");
        free(b);
    }
    free(want);
    free(full);
    free(policy);
    return 0;
}
