/*
 * headers.h - HTTP rate-limit header formatting (pure helpers behind
 * rls_format_headers in rlstore.h).
 *
 * Uses the structured-field form of draft-ietf-httpapi-ratelimit-headers
 * (checked against draft -11, May 2026):
 *   RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>
 *   RateLimit: "<name>";r=<remaining>;t=<seconds until reset>
 *   Retry-After: <seconds>          only when denied and retry_after_ms > 0
 * Seconds are rounded up.  ";w=" is left out when window_ms <= 0 (the draft
 * requires w > 0).  When Retry-After is written, t equals it (the draft:
 * Retry-After SHOULD NOT point earlier than the end of the effective
 * window).  Negative remaining/reset are written as 0; numbers are capped
 * at 999999999999999 (sf-integer range).  Names are sf-strings: '"' and
 * '\' escaped, non-printable bytes replaced by '_'.
 */
#ifndef RLS_HEADERS_H
#define RLS_HEADERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct hdr_input {
    const char *policy;      /* policy name (non-NULL, may be "")      */
    int allowed;
    int64_t limit;
    int64_t remaining;
    int64_t window_ms;
    int64_t reset_ms;
    int64_t retry_after_ms;  /* -1 never: no Retry-After is written    */
} hdr_input;

/* Lines end with CRLF.  snprintf-style return; -1 on invalid input (in or
 * in->policy NULL, buf NULL with size > 0, limit < 0, policy > 4096 bytes). */
int rls__headers_format(const hdr_input *in, char *buf, size_t size);

#endif
