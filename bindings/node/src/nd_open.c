/*
 * nd_open.c - opening and closing a database, the error table and the
 * header formatter, and the module's registration of every function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd.h"

static void handle_free(napi_env env, void *data, void *hint)
{
    nd_handle *h = data;
    pthread_mutex_lock(&h->mu);
    rls_close(h->db);
    h->db = NULL;
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* opts.name (an integer) into *out if present. */
static int opt_int(napi_env env, napi_value opts, const char *name, int64_t lo, int64_t hi,
                   int *out)
{
    napi_value v;
    int64_t x;
    char msg[96];
    if (napi_get_named_property(env, opts, name, &v) != napi_ok)
        return nd_throw_napi(env), -1;
    if (nd_i64(env, v, name, RLS_EINVAL, 1, *out, &x))
        return -1;
    if (x < lo || x > hi) {
        snprintf(msg, sizeof msg, "option %s out of range", name);
        return nd_throw(env, RLS_EINVAL, msg, NULL), -1;
    }
    *out = (int)x;
    return 0;
}

static int opt_flag(napi_env env, napi_value opts, const char *name, int *out)
{
    napi_value v;
    if (napi_get_named_property(env, opts, name, &v) != napi_ok)
        return nd_throw_napi(env), -1;
    *out = nd_bool(env, v, *out);
    return 0;
}

static int opt_str(napi_env env, napi_value opts, const char *name, char **out)
{
    napi_value v;
    if (napi_get_named_property(env, opts, name, &v) != napi_ok)
        return nd_throw_napi(env), -1;
    return nd_str(env, v, name, 1, out);
}

/* Fills o from the JS options object (camelCase names of rls_options;
 * durability and onError as 0/1, index.js maps the words).  The strings
 * are malloc'ed into s[0..2]. */
static int read_options(napi_env env, napi_value opts, rls_options *o, char *s[3])
{
    napi_valuetype t;
    int mode = (int)o->file_mode;
    napi_typeof(env, opts, &t);
    if (t == napi_undefined || t == napi_null)
        return 0;
    if (t != napi_object)
        return nd_throw(env, RLS_EINVAL, "options must be an object", NULL), -1;
    if (opt_int(env, opts, "busyTimeoutMs", 0, 2147483647, &o->busy_timeout_ms) ||
        opt_int(env, opts, "durability", 0, 1, &o->durability) ||
        opt_int(env, opts, "onError", 0, 1, &o->on_error) ||
        opt_flag(env, opts, "readOnly", &o->read_only) ||
        opt_flag(env, opts, "create", &o->create) ||
        opt_int(env, opts, "fileMode", 0, 07777, &mode) ||
        opt_int(env, opts, "maxKeyLen", 1, RLS_KEY_MAX_LIMIT, &o->max_key_len) ||
        opt_flag(env, opts, "rulesReadOnly", &o->rules_read_only) ||
        opt_str(env, opts, "tool", &s[0]) || opt_str(env, opts, "countersPath", &s[1]) ||
        opt_str(env, opts, "fileGroup", &s[2]))
        return -1;
    o->file_mode = (unsigned)mode;
    if (s[0])
        o->tool = s[0];
    o->counters_path = s[1];
    o->file_group = s[2];
    return 0;
}

/* open(path, options) -> handle */
static napi_value nd_open(napi_env env, napi_callback_info info)
{
    napi_value argv[2], ext = NULL;
    char *path = NULL, *s[3] = {NULL, NULL, NULL};
    rls_options o;
    rls_db *db = NULL;
    nd_handle *h = NULL;
    int rc;
    if (nd_args(env, info, 2, argv) || nd_str(env, argv[0], "path", 0, &path))
        return NULL;
    rls_options_init(&o);
    o.tool = "node";
    if (read_options(env, argv[1], &o, s))
        goto out;
    if ((rc = rls_open(&db, path, &o))) {
        nd_throw(env, rc, rls_errmsg(NULL), NULL);
        goto out;
    }
    if (!(h = calloc(1, sizeof *h))) {
        rls_close(db);
        nd_throw(env, RLS_ENOMEM, NULL, NULL);
        goto out;
    }
    h->db = db;
    pthread_mutex_init(&h->mu, NULL);
    if (napi_create_external(env, h, handle_free, NULL, &ext) != napi_ok) {
        handle_free(env, h, NULL);
        nd_throw_napi(env);
        ext = NULL;
    }
out:
    free(path);
    for (int i = 0; i < 3; i++)
        free(s[i]);
    return ext;
}

/* close(handle): idempotent; pending async calls then fail with EMISUSE. */
static napi_value nd_close(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    napi_valuetype t;
    nd_handle *h = NULL;
    if (nd_args(env, info, 1, argv))
        return NULL;
    if (napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, argv[0], (void **)&h) != napi_ok || !h)
        return nd_throw(env, RLS_EMISUSE, "not an rlstore handle", NULL);
    pthread_mutex_lock(&h->mu);
    rls_close(h->db);
    h->db = NULL;
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* version() -> "0.1.0" of the linked library */
static napi_value nd_version(napi_env env, napi_callback_info info)
{
    napi_value v = NULL;
    napi_create_string_utf8(env, rls_version_string(), NAPI_AUTO_LENGTH, &v);
    return v;
}

/* errors() -> [[errno, name, text], ...]: the library's table, from which
 * index.js makes one class per code (so the classes follow the library). */
static napi_value nd_errors(napi_env env, napi_callback_info info)
{
    napi_value arr, row, v;
    ND_CALL(env, napi_create_array(env, &arr));
    for (int c = 1; c < RLS__ERR_COUNT; c++) {
        napi_create_array_with_length(env, 3, &row);
        napi_create_int32(env, c, &v);
        napi_set_element(env, row, 0, v);
        napi_create_string_utf8(env, rls_errname(c), NAPI_AUTO_LENGTH, &v);
        napi_set_element(env, row, 1, v);
        napi_create_string_utf8(env, rls_strerror(c), NAPI_AUTO_LENGTH, &v);
        napi_set_element(env, row, 2, v);
        napi_set_element(env, arr, (uint32_t)(c - 1), row);
    }
    return arr;
}

/* formatHeaders(result, policy) -> the header lines of rls_format_headers */
static napi_value nd_format_headers(napi_env env, napi_callback_info info)
{
    napi_value argv[2], v = NULL;
    rls_result res;
    char *policy = NULL, buf[512];
    int n;
    if (nd_args(env, info, 2, argv) || nd_result_from(env, argv[0], &res) ||
        nd_str(env, argv[1], "policy", 1, &policy))
        return NULL;
    n = rls_format_headers(&res, policy, buf, sizeof buf);
    free(policy);
    if (n < 0 || (size_t)n >= sizeof buf)
        return nd_throw(env, RLS_EINVAL, "cannot format the headers of this result", NULL);
    ND_CALL(env, napi_create_string_utf8(env, buf, (size_t)n, &v));
    return v;
}

const nd_fn nd_open_fns[] = {
    {"open", nd_open},
    {"close", nd_close},
    {"version", nd_version},
    {"errors", nd_errors},
    {"formatHeaders", nd_format_headers},
    {"setErrorFactory", nd_set_error_factory},
    {NULL, NULL},
};

static napi_value init(napi_env env, napi_value exports)
{
    const nd_fn *tables[] = {nd_open_fns, nd_check_fns, nd_async_fns, nd_admin_fns,
                             nd_query_fns};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        for (const nd_fn *f = tables[t]; f->name; f++) {
            napi_value fn;
            if (napi_create_function(env, f->name, NAPI_AUTO_LENGTH, f->fn, NULL, &fn) !=
                    napi_ok ||
                napi_set_named_property(env, exports, f->name, fn) != napi_ok)
                return NULL;
        }
    }
    return exports;
}

NAPI_MODULE(rlstore, init)
