/*
 * handler.c - one HTTP request of rlstore-auth, from path to response.
 *
 *   /check, /check/ACTION   one check of cost 1 (request.c says of what):
 *       204                 admitted, with RateLimit and RateLimit-Policy
 *       429 (or 401, 403)   denied, with RateLimit, RateLimit-Policy,
 *                           Retry-After and X-Rlstore-Reason
 *       204 + X-Rlstore-Degraded   storage failed, the action's policy admits
 *       503 + X-Rlstore-Degraded   storage failed, the policy denies (with a
 *                           deny status other than 429 that status: nginx
 *                           passes only 401 and 403 on)
 *       400                 bad input: a one-line reason
 *       500                 no rules, or another error that is not input
 *   /metrics                Prometheus text (metrics.c)
 *   /healthz                200 "ok" when a database handle is at hand
 *   anything else           404
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <microhttpd.h>
#include "auth.h"
#include "handler.h"
#include "request.h"

auth_config auth_cfg;

void auth_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rlstore-auth: %s\n", line);
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One response: status, a text body (NULL: none), the header lines of
 * rls_format_headers (NULL: none), and one more header (NULL: none). */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned int status, const char *body,
                               const char *lines, const char *hname, const char *hvalue)
{
    size_t len = body ? strlen(body) : 0;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (body)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    char name[64];
    while (lines && *lines) {       /* "Name: value\r\n" lines */
        const char *colon = strstr(lines, ": "), *eol = strstr(lines, "\r\n");
        if (!colon || !eol || colon > eol || (size_t)(colon - lines) >= sizeof name)
            break;
        memcpy(name, lines, (size_t)(colon - lines));
        name[colon - lines] = '\0';
        char value[256];
        snprintf(value, sizeof value, "%.*s", (int)(eol - colon - 2), colon + 2);
        MHD_add_response_header(r, name, value);
        lines = eol + 2;
    }
    if (hname)
        MHD_add_response_header(r, hname, hvalue);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Storage failures are logged at most once a second: a database that is
 * down must not flood the journal with a line per request. */
static void log_storage(const char *action, int rc, const char *detail)
{
    static atomic_llong last;
    long long sec = (long long)time(NULL);
    long long prev = atomic_load(&last);
    if (prev == sec || !atomic_compare_exchange_strong(&last, &prev, sec))
        return;
    auth_log("check of '%s' failed: %s: %s", action, rls_errname(rc), detail);
}

static int bad_input(int rc)
{
    return rc == RLS_EINVAL || rc == RLS_EKEY || rc == RLS_ECOST || rc == RLS_ETIME ||
           rc == RLS_ENOACTION;
}

/* The answer to a check that returned rc (not OK). */
static enum MHD_Result answer_error(struct MHD_Connection *c, const char *action, int rc,
                                   const char *detail, const rls_result *res, int deny_status,
                                   enum auth_result *out)
{
    char body[600], esc[400];
    rls_key_escape(detail, esc, sizeof esc);    /* one line, whatever it quotes */
    if (bad_input(rc)) {
        *out = RES_BAD_REQUEST;
        snprintf(body, sizeof body, "%s: %s\n", rls_errname(rc), esc);
        return respond(c, MHD_HTTP_BAD_REQUEST, body, NULL, NULL, NULL);
    }
    if (rc == RLS_ENORULES || rc == RLS_ECONFIG || res->reason != RLS_REASON_DEGRADED) {
        *out = RES_ERROR;
        auth_log("check of '%s': %s: %s", action, rls_errname(rc), esc);
        snprintf(body, sizeof body, "%s: %s\n", rls_errname(rc), esc);
        return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, body, NULL, NULL, NULL);
    }
    log_storage(action, rc, esc);
    char degraded[450];
    snprintf(degraded, sizeof degraded, "%s: %s", rls_errname(rc), esc);
    if (res->allowed) {
        *out = RES_ERROR_ALLOWED;
        return respond(c, MHD_HTTP_NO_CONTENT, NULL, NULL, "X-Rlstore-Degraded", degraded);
    }
    *out = RES_ERROR_DENIED;
    snprintf(body, sizeof body, "storage failure, the failure policy denies: %s\n", degraded);
    return respond(c, deny_status == 429 ? MHD_HTTP_SERVICE_UNAVAILABLE : (unsigned)deny_status,
                   body, NULL, "X-Rlstore-Degraded", degraded);
}

static enum MHD_Result answer_result(struct MHD_Connection *c, const rls_result *res,
                                     int deny_status, enum auth_result *out)
{
    char lines[1024];
    int n = rls_format_headers(res, NULL, lines, sizeof lines);
    const char *hl = n > 0 && (size_t)n < sizeof lines ? lines : NULL;
    if (res->allowed) {
        *out = RES_ALLOWED;
        return respond(c, MHD_HTTP_NO_CONTENT, NULL, hl, NULL, NULL);
    }
    *out = RES_DENIED;
    const char *reason = rls_reason_name(res->reason);
    char body[128];
    snprintf(body, sizeof body, "rate limited (%s)\n", reason);
    return respond(c, (unsigned)deny_status, body, hl, "X-Rlstore-Reason", reason);
}

static enum MHD_Result check(struct MHD_Connection *c, const char *url, const char *method)
{
    int64_t t0 = now_us();
    char why[400], action[RLS_NAME_MAX + 1], addr[64];
    const char *key;
    int deny_status, rc;
    enum auth_result out;
    enum MHD_Result ret;
    /* sizeof why - 1: room for the newline the body ends with */
    if (req_action(c, url, method, action, why, sizeof why - 1) != 0 ||
        req_key(c, addr, sizeof addr, &key, why, sizeof why - 1) != 0 ||
        req_deny_status(c, &deny_status, why, sizeof why - 1) != 0) {
        strcat(why, "\n");
        metrics_count(NULL, RES_BAD_REQUEST, now_us() - t0);
        return respond(c, MHD_HTTP_BAD_REQUEST, why, NULL, NULL, NULL);
    }
    rls_result res;
    rls_db *db = pool_get(&rc);
    if (!db) {
        snprintf(why, sizeof why, "cannot open the database: %s", rls_errmsg(NULL));
        memset(&res, 0, sizeof res);
        res.reason = RLS_REASON_DEGRADED;   /* the policy is unknown: deny */
        ret = answer_error(c, action, rc, why, &res, deny_status, &out);
    } else {
        rc = rls_check(db, action, key, 1, &res);
        if (rc == RLS_OK) {
            pool_put(db);
            ret = answer_result(c, &res, deny_status, &out);
        } else {
            snprintf(why, sizeof why, "%s", rls_errmsg(db));
            pool_put(db);
            ret = answer_error(c, action, rc, why, &res, deny_status, &out);
        }
    }
    /* an action is a label only once the library knew it */
    metrics_count(out == RES_BAD_REQUEST ? NULL : action, out, now_us() - t0);
    return ret;
}

static enum MHD_Result metrics(struct MHD_Connection *c)
{
    size_t len;
    char *text = metrics_render(&len);
    if (!text)
        return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL, NULL, NULL);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result healthz(struct MHD_Connection *c)
{
    int rc;
    rls_db *db = pool_get(&rc);
    if (!db) {
        char body[400];
        snprintf(body, sizeof body, "%s: cannot open the database\n", rls_errname(rc));
        return respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, body, NULL, NULL, NULL);
    }
    pool_put(db);
    return respond(c, MHD_HTTP_OK, "ok\n", NULL, NULL, NULL);
}

enum MHD_Result auth_access(void *cls, struct MHD_Connection *c, const char *url,
                            const char *method, const char *version, const char *upload_data,
                            size_t *upload_data_size, void **req_cls)
{
    static int marker;
    (void)cls, (void)version, (void)upload_data;
    /* The first call comes with the headers: answering then would make
     * libmicrohttpd close the connection (a body might follow unread), so
     * the answer waits for the call that says the request is complete.  A
     * body (an auth request has none) is skipped. */
    if (*req_cls == NULL) {
        *req_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/check") == 0 || strncmp(url, "/check/", 7) == 0)
        return check(c, url, method);
    if (strcmp(url, "/metrics") == 0)
        return metrics(c);
    if (strcmp(url, "/healthz") == 0)
        return healthz(c);
    return respond(c, MHD_HTTP_NOT_FOUND, "unknown path: use /check/ACTION, /metrics or /healthz\n",
                   NULL, NULL, NULL);
}
