/*
 * nd.h - what the files of the Node.js addon (bindings/node/src) share.
 *
 * The addon is a thin N-API layer over include/rlstore.h: one exported
 * function per library call it wraps, taking the handle (a JS external made
 * by open()) as its first argument.  index.js builds the classes on top.
 * Errors are thrown as objects made by a JS factory (setErrorFactory), so
 * that every error is an instance of the class of its library code.
 */
#ifndef ND_H
#define ND_H

#include <node_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <rlstore.h>

/* One open database.  rls_db is used by one thread at a time: every call,
 * on the main thread or a worker of the async functions, holds mu. */
typedef struct nd_handle {
    rls_db *db;          /* NULL once closed */
    pthread_mutex_t mu;
} nd_handle;

/* Returns NULL from a napi_callback after a failed N-API call (an
 * exception is then pending or has been thrown). */
#define ND_CALL(env, call)                                         \
    do {                                                           \
        if ((call) != napi_ok) {                                   \
            nd_throw_napi(env);                                    \
            return NULL;                                           \
        }                                                          \
    } while (0)

/* ---- nd_util.c: errors ---- */
/* Throws the error of code with the given detail (NULL or "": the code's
 * text); result (may be NULL) becomes the error's .result.  Returns NULL
 * for use as `return nd_throw(...)`. */
napi_value nd_throw(napi_env env, int code, const char *detail, napi_value result);
/* Throws code with rls_errmsg of the handle (call with h->mu held). */
napi_value nd_throw_db(napi_env env, nd_handle *h, int code, napi_value result);
/* After a failed napi_* call: throws a generic error unless one is pending. */
void nd_throw_napi(napi_env env);
napi_value nd_set_error_factory(napi_env env, napi_callback_info info);
/* The error object of code (not thrown), or NULL after throwing. */
napi_value nd_make_error(napi_env env, int code, const char *detail);

/* ---- nd_util.c: arguments ---- */
/* argv[0..n-1] of the call; missing ones are undefined. */
int nd_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv);
/* The handle of argv (an external from open()), locked; NULL after throwing
 * (EMISUSE when it is not one or is closed).  Unlock with nd_unlock. */
nd_handle *nd_lock(napi_env env, napi_value v);
void nd_unlock(nd_handle *h);
/* A key: a string (UTF-8) or a Buffer; *out is malloc'ed and
 * NUL-terminated.  Non-string, NUL inside or longer than RLS_KEY_MAX_LIMIT
 * bytes: throws EKEY and returns -1.  what names it in the message. */
int nd_key(napi_env env, napi_value v, const char *what, char **out);
/* A name (action, limit, tier): a string without NUL; EINVAL otherwise
 * (with nullable, undefined/null give *out NULL).  malloc'ed. */
int nd_str(napi_env env, napi_value v, const char *what, int nullable, char **out);
/* An integer: a Number holding an integer or a BigInt within int64.
 * undefined/null give def when has_def, else throw code. */
int nd_i64(napi_env env, napi_value v, const char *what, int code, int has_def,
           int64_t def, int64_t *out);
int nd_bool(napi_env env, napi_value v, int def);

/* ---- nd_util.c: results ---- */
/* A plain object of res: allowed, reason, limit, remaining, resetMs,
 * retryAfterMs (null: never), delayMs, windowMs, rule. */
napi_value nd_result(napi_env env, const rls_result *res);
/* Reads such an object back (for formatHeaders); -1 after throwing. */
int nd_result_from(napi_env env, napi_value obj, rls_result *res);
/* An array of objects, one per row, named columns; frees nothing. */
napi_value nd_rows(napi_env env, const rls_rows *rows);
/* A JS number of v (a BigInt beyond 2^53). */
napi_value nd_int(napi_env env, int64_t v);
void nd_set(napi_env env, napi_value obj, const char *name, napi_value v);

/* ---- nd_check.c: shared with nd_async.c ---- */
/* 1 for the codes of the caller's input (thrown, not answered by the
 * failure policy): EINVAL, EKEY, ECOST, ETIME, ENOACTION, EMISUSE. */
int nd_is_input_error(int rc);
/* Reads an array of {action, key, cost} (cost default 1) into items (room
 * for RLS_BATCH_MAX); *n the count read so far.  -1 after throwing. */
int nd_items(napi_env env, napi_value arr, rls_item *items, size_t *n);
/* Frees the strings of items read by nd_items. */
void nd_items_free(rls_item *items, size_t n);
/* The answer of a batch: {allowed, results, error?}; input errors are
 * thrown (NULL returned). */
napi_value nd_batch_answer(napi_env env, int rc, const char *msg, const rls_result *res,
                           size_t n);

/* ---- registration (each file exports its table) ---- */
typedef struct nd_fn {
    const char *name;
    napi_callback fn;
} nd_fn;
extern const nd_fn nd_open_fns[];
extern const nd_fn nd_check_fns[];
extern const nd_fn nd_async_fns[];
extern const nd_fn nd_admin_fns[];
extern const nd_fn nd_query_fns[];

#endif /* ND_H */
