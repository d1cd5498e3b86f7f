/*
 * result.c - rls_format_headers(): HTTP rate-limit headers from a result.
 */
#include "rlstore.h"
#include "headers.h"

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
    return headers_format(&in, buf, bufsize);
}
