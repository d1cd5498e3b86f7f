/*
 * errors.c - the error table: rls_strerror(), rls_errname() and
 * rls_reason_name(), all generated from the X-macro in rlstore.h.
 */
#include "rlstore.h"

const char *rls_strerror(int code)
{
    switch (code) {
#define RLS__ERR_TEXT(name, text) case RLS_##name: return text;
        RLS_ERRNO_MAP(RLS__ERR_TEXT)
#undef RLS__ERR_TEXT
    default:
        return "unknown error";
    }
}

const char *rls_errname(int code)
{
    switch (code) {
#define RLS__ERR_NAME(name, text) case RLS_##name: return #name;
        RLS_ERRNO_MAP(RLS__ERR_NAME)
#undef RLS__ERR_NAME
    default:
        return "UNKNOWN";
    }
}

const char *rls_reason_name(int reason)
{
    switch (reason) {
    case RLS_REASON_OK: return "ok";
    case RLS_REASON_LIMIT: return "limit";
    case RLS_REASON_BLOCKED: return "blocked";
    case RLS_REASON_COST_EXCEEDS: return "cost_exceeds_limit";
    case RLS_REASON_SHADOW: return "shadow";
    case RLS_REASON_DEGRADED: return "degraded";
    case RLS_REASON_BATCH: return "batch";
    default: return "unknown";
    }
}

unsigned int rls_version(void)
{
    return RLS_VERSION_HEX;
}

const char *rls_version_string(void)
{
    return RLS_VERSION_STRING;
}
