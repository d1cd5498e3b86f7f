/*
 * result.c - public helpers over core: rls_format_headers() (HTTP
 * rate-limit headers from a result) and the text helpers for tools
 * (durations, times, key escaping).
 */
#include "rlstore.h"
#include <string.h>
#include "duration.h"
#include "headers.h"
#include "keynorm.h"
#include "timefmt.h"

int rls_format_headers(const rls_result *res, const char *policy, char *buf,
                       size_t bufsize)
{
    hdr_input in;
    if (!res || (!buf && bufsize > 0))
        return -1;
    in.policy = policy ? policy : res->rule;
    in.allowed = res->allowed;
    in.limit = res->limit;
    in.remaining = res->remaining;
    in.window_ms = res->window_ms;
    in.reset_ms = res->reset_ms;
    in.retry_after_ms = res->retry_after_ms;
    return rls__headers_format(&in, buf, bufsize);
}

int rls_duration_parse(const char *text, int64_t *ms)
{
    rls_duration d;
    if (!text || !ms || rls__duration_parse(text, strlen(text), &d, NULL) != 0)
        return RLS_EINVAL;
    *ms = d.ms;
    return RLS_OK;
}

int rls_time_parse(const char *text, int64_t *ms)
{
    if (!text || !ms || rls__timefmt_parse(text, strlen(text), ms) != 0)
        return RLS_EINVAL;
    return RLS_OK;
}

int rls_time_format(int64_t ms, char *buf, size_t size)
{
    if (!buf && size > 0)
        return -1;
    return rls__timefmt_format(ms, buf, size);
}

int rls_key_escape(const char *key, char *buf, size_t size)
{
    if (!key || (!buf && size > 0))
        return -1;
    return rls__key_escape(key, strlen(key), buf, size);
}
