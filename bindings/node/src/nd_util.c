/*
 * nd_util.c - the addon's shared helpers: typed errors through the JS
 * factory, argument conversion with the library's error codes, and the
 * conversion of results and row sets into plain JS objects.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd.h"

/* 2^53: integers up to this are exact in a JS number. */
#define ND_SAFE_INT 9007199254740992LL

typedef struct nd_state {
    napi_ref factory;   /* (errno, name, text, detail) -> Error */
} nd_state;

static void state_free(napi_env env, void *data, void *hint)
{
    nd_state *st = data;
    if (st->factory)
        napi_delete_reference(env, st->factory);
    free(st);
}

napi_value nd_set_error_factory(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    nd_state *st = NULL;
    if (nd_args(env, info, 1, argv))
        return NULL;
    napi_get_instance_data(env, (void **)&st);
    if (!st) {
        if (!(st = calloc(1, sizeof *st)))
            return nd_throw(env, RLS_ENOMEM, NULL, NULL);
        if (napi_set_instance_data(env, st, state_free, NULL) != napi_ok) {
            free(st);
            nd_throw_napi(env);
            return NULL;
        }
    }
    if (st->factory)
        napi_delete_reference(env, st->factory);
    st->factory = NULL;
    ND_CALL(env, napi_create_reference(env, argv[0], 1, &st->factory));
    return NULL;
}

static napi_value str(napi_env env, const char *s)
{
    napi_value v = NULL;
    napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &v);
    return v;
}

napi_value nd_make_error(napi_env env, int code, const char *detail)
{
    nd_state *st = NULL;
    napi_value fn = NULL, global, argv[4], err = NULL;
    napi_get_instance_data(env, (void **)&st);
    if (!detail || !*detail)
        detail = rls_strerror(code);
    if (!st || !st->factory || napi_get_reference_value(env, st->factory, &fn) != napi_ok ||
        !fn) {
        /* before index.js installed its factory: a plain Error with .code */
        napi_create_error(env, str(env, rls_errname(code)), str(env, detail), &err);
        return err;
    }
    napi_create_int32(env, code, &argv[0]);
    argv[1] = str(env, rls_errname(code));
    argv[2] = str(env, rls_strerror(code));
    argv[3] = str(env, detail);
    napi_get_global(env, &global);
    if (napi_call_function(env, global, fn, 4, argv, &err) != napi_ok)
        return NULL;
    return err;
}

napi_value nd_throw(napi_env env, int code, const char *detail, napi_value result)
{
    bool pending = false;
    napi_value err;
    napi_is_exception_pending(env, &pending);
    if (pending)
        return NULL;
    if (!(err = nd_make_error(env, code, detail)))
        return NULL;
    if (result)
        napi_set_named_property(env, err, "result", result);
    napi_throw(env, err);
    return NULL;
}

napi_value nd_throw_db(napi_env env, nd_handle *h, int code, napi_value result)
{
    return nd_throw(env, code, h && h->db ? rls_errmsg(h->db) : NULL, result);
}

void nd_throw_napi(napi_env env)
{
    bool pending = false;
    const napi_extended_error_info *ei = NULL;
    napi_is_exception_pending(env, &pending);
    if (pending)
        return;
    napi_get_last_error_info(env, &ei);
    nd_throw(env, RLS_EINVAL, ei && ei->error_message ? ei->error_message : "N-API call failed",
             NULL);
}

int nd_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv)
{
    size_t got = n;
    if (napi_get_cb_info(env, info, &got, argv, NULL, NULL) != napi_ok) {
        nd_throw_napi(env);
        return -1;
    }
    return 0;
}

nd_handle *nd_lock(napi_env env, napi_value v)
{
    napi_valuetype t;
    nd_handle *h = NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, v, (void **)&h) != napi_ok || !h) {
        nd_throw(env, RLS_EMISUSE, "not an rlstore handle", NULL);
        return NULL;
    }
    pthread_mutex_lock(&h->mu);
    if (!h->db) {
        pthread_mutex_unlock(&h->mu);
        nd_throw(env, RLS_EMISUSE, "the limiter is closed", NULL);
        return NULL;
    }
    return h;
}

void nd_unlock(nd_handle *h)
{
    if (h)
        pthread_mutex_unlock(&h->mu);
}

static const char *type_name(napi_valuetype t)
{
    static const char *names[] = {"undefined", "null",     "boolean",  "number",
                                  "string",    "symbol",   "object",   "function",
                                  "external",  "bigint"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "value";
}

/* Copies a string value of at most max bytes; -1 (thrown code) otherwise. */
static int copy_string(napi_env env, napi_value v, const char *what, int code, size_t max,
                       char **out)
{
    size_t len = 0;
    char msg[160];
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok)
        return nd_throw_napi(env), -1;
    if (len > max) {
        snprintf(msg, sizeof msg, "%s is %zu bytes long; at most %zu", what, len, max);
        return nd_throw(env, code, msg, NULL), -1;
    }
    if (!(*out = malloc(len + 1)))
        return nd_throw(env, RLS_ENOMEM, NULL, NULL), -1;
    napi_get_value_string_utf8(env, v, *out, len + 1, &len);
    if (strlen(*out) != len) {
        free(*out);
        *out = NULL;
        snprintf(msg, sizeof msg, "%s contains a NUL character", what);
        return nd_throw(env, code, msg, NULL), -1;
    }
    return 0;
}

int nd_key(napi_env env, napi_value v, const char *what, char **out)
{
    napi_valuetype t;
    bool isbuf = false;
    char msg[160];
    *out = NULL;
    napi_typeof(env, v, &t);
    if (t == napi_string)
        return copy_string(env, v, what, RLS_EKEY, RLS_KEY_MAX_LIMIT, out);
    napi_is_buffer(env, v, &isbuf);
    if (isbuf) {
        void *data = NULL;
        size_t len = 0;
        napi_get_buffer_info(env, v, &data, &len);
        if (len > RLS_KEY_MAX_LIMIT || memchr(data, 0, len)) {
            snprintf(msg, sizeof msg, "%s: a Buffer of %zu bytes%s", what, len,
                     len > RLS_KEY_MAX_LIMIT ? " is too long" : " contains a NUL byte");
            return nd_throw(env, RLS_EKEY, msg, NULL), -1;
        }
        if (!(*out = malloc(len + 1)))
            return nd_throw(env, RLS_ENOMEM, NULL, NULL), -1;
        memcpy(*out, data, len);
        (*out)[len] = '\0';
        return 0;
    }
    snprintf(msg, sizeof msg, "%s must be a string or a Buffer, not %s", what, type_name(t));
    return nd_throw(env, RLS_EKEY, msg, NULL), -1;
}

int nd_str(napi_env env, napi_value v, const char *what, int nullable, char **out)
{
    napi_valuetype t;
    char msg[160];
    *out = NULL;
    napi_typeof(env, v, &t);
    if (nullable && (t == napi_undefined || t == napi_null))
        return 0;
    if (t == napi_string)
        return copy_string(env, v, what, RLS_EINVAL, 64u << 20, out);
    snprintf(msg, sizeof msg, "%s must be a string, not %s", what, type_name(t));
    return nd_throw(env, RLS_EINVAL, msg, NULL), -1;
}

int nd_i64(napi_env env, napi_value v, const char *what, int code, int has_def, int64_t def,
           int64_t *out)
{
    napi_valuetype t;
    char msg[160];
    napi_typeof(env, v, &t);
    if (has_def && (t == napi_undefined || t == napi_null)) {
        *out = def;
        return 0;
    }
    if (t == napi_number) {
        double d = 0;
        napi_get_value_double(env, v, &d);
        /* integers only, and within int64 (2^63 is not) */
        if (isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 &&
            d < 9223372036854775808.0) {
            *out = (int64_t)d;
            return 0;
        }
    } else if (t == napi_bigint) {
        bool lossless = false;
        napi_get_value_bigint_int64(env, v, out, &lossless);
        if (lossless)
            return 0;
    }
    snprintf(msg, sizeof msg, "%s must be an integer (a number or a BigInt within int64)",
             what);
    return nd_throw(env, code, msg, NULL), -1;
}

int nd_bool(napi_env env, napi_value v, int def)
{
    napi_valuetype t;
    bool b = false;
    if (!v || napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null)
        return def;
    if (napi_coerce_to_bool(env, v, &v) != napi_ok)
        return def;
    napi_get_value_bool(env, v, &b);
    return b ? 1 : 0;
}

napi_value nd_int(napi_env env, int64_t v)
{
    napi_value out = NULL;
    if (v > -ND_SAFE_INT && v < ND_SAFE_INT)
        napi_create_int64(env, v, &out);
    else
        napi_create_bigint_int64(env, v, &out);
    return out;
}

void nd_set(napi_env env, napi_value obj, const char *name, napi_value v)
{
    napi_set_named_property(env, obj, name, v);
}

napi_value nd_result(napi_env env, const rls_result *res)
{
    napi_value o, b, nul;
    if (napi_create_object(env, &o) != napi_ok)
        return NULL;
    napi_get_boolean(env, res->allowed != 0, &b);
    napi_get_null(env, &nul);
    nd_set(env, o, "allowed", b);
    nd_set(env, o, "reason", str(env, rls_reason_name(res->reason)));
    nd_set(env, o, "limit", nd_int(env, res->limit));
    nd_set(env, o, "remaining", nd_int(env, res->remaining));
    nd_set(env, o, "resetMs", nd_int(env, res->reset_ms));
    nd_set(env, o, "retryAfterMs", res->retry_after_ms < 0 ? nul : nd_int(env, res->retry_after_ms));
    nd_set(env, o, "delayMs", nd_int(env, res->delay_ms));
    nd_set(env, o, "windowMs", nd_int(env, res->window_ms));
    nd_set(env, o, "rule", str(env, res->rule));
    return o;
}

static int get_field(napi_env env, napi_value obj, const char *name, int64_t nul_as,
                     int64_t *out)
{
    napi_value v;
    napi_valuetype t;
    if (napi_get_named_property(env, obj, name, &v) != napi_ok)
        return nd_throw_napi(env), -1;
    napi_typeof(env, v, &t);
    if (t == napi_null) {
        *out = nul_as;
        return 0;
    }
    return nd_i64(env, v, name, RLS_EINVAL, 1, 0, out);
}

int nd_result_from(napi_env env, napi_value obj, rls_result *res)
{
    static const char *reasons[] = {"ok",     "limit",    "blocked", "cost_exceeds_limit",
                                    "shadow", "degraded", "batch"};
    napi_value v;
    char *s = NULL;
    napi_valuetype t;
    memset(res, 0, sizeof *res);
    if (napi_typeof(env, obj, &t) != napi_ok || t != napi_object)
        return nd_throw(env, RLS_EINVAL, "result must be an object", NULL), -1;
    napi_get_named_property(env, obj, "allowed", &v);
    res->allowed = nd_bool(env, v, 0);
    if (get_field(env, obj, "limit", 0, &res->limit) ||
        get_field(env, obj, "remaining", 0, &res->remaining) ||
        get_field(env, obj, "resetMs", 0, &res->reset_ms) ||
        get_field(env, obj, "retryAfterMs", -1, &res->retry_after_ms) ||
        get_field(env, obj, "delayMs", 0, &res->delay_ms) ||
        get_field(env, obj, "windowMs", 0, &res->window_ms))
        return -1;
    napi_get_named_property(env, obj, "reason", &v);
    if (nd_str(env, v, "result.reason", 1, &s))
        return -1;
    res->reason = res->allowed ? RLS_REASON_OK : RLS_REASON_LIMIT;
    for (size_t i = 0; s && i < sizeof reasons / sizeof *reasons; i++)
        if (!strcmp(s, reasons[i]))
            res->reason = (int)i;
    free(s);
    napi_get_named_property(env, obj, "rule", &v);
    if (nd_str(env, v, "result.rule", 1, &s))
        return -1;
    if (s)
        snprintf(res->rule, sizeof res->rule, "%s", s);
    free(s);
    return 0;
}

napi_value nd_rows(napi_env env, const rls_rows *rows)
{
    napi_value arr, o, nul;
    int n = rls_rows_count(rows), cols = rls_rows_columns(rows);
    if (napi_create_array_with_length(env, (size_t)n, &arr) != napi_ok)
        return NULL;
    napi_get_null(env, &nul);
    for (int r = 0; r < n; r++) {
        napi_create_object(env, &o);
        for (int c = 0; c < cols; c++) {
            napi_value v = nul;
            if (rls_rows_is_null(rows, r, c))
                v = nul;
            else if (rls_rows_type(rows, c) == RLS_COL_INT)
                v = nd_int(env, rls_rows_int(rows, r, c));
            else
                v = str(env, rls_rows_text(rows, r, c));
            nd_set(env, o, rls_rows_name(rows, c), v);
        }
        napi_set_element(env, arr, (uint32_t)r, o);
    }
    return arr;
}
