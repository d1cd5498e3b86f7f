/*
 * request.c - what a sub-request asks: its action, its key, its deny status.
 *
 * Each function reads the request's headers through libmicrohttpd and
 * either fills its answer or writes a one-line reason (the body of the 400)
 * and returns -1.  Nothing here touches the database.
 *
 * Who may say what:
 *   - the action: the path (/check/ACTION) first; on a bare /check the
 *     action header (X-Rlstore-Action unless configured), then the routes
 *     matched against the original request (X-Forwarded-Uri and
 *     X-Forwarded-Method, as Traefik and Caddy send them, or X-Original-URI
 *     and X-Original-Method, as an nginx location sets them).  A proxy
 *     passes the client's own headers to the sub-request, so a deployment
 *     that lets the client reach a bare /check must set these headers
 *     itself (rlstore-auth(8), SECURITY).
 *   - the key: the configured key header, or else the client address:
 *     the connection's peer, and only when the peer is a trusted proxy the
 *     X-Forwarded-For list (walked from the right past trusted proxies) or,
 *     without one, X-Real-IP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "auth.h"
#include "request.h"

#define XFF_MAX 8192   /* the longest X-Forwarded-For list taken, joined */

/* Every value of one header, counted, the values joined by ", " when asked. */
struct header_scan {
    const char *name;
    int count;
    const char *first;
    char *joined;       /* NULL: do not join */
    size_t len, cap;
    int overflow;
};

static enum MHD_Result scan_one(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    struct header_scan *s = cls;
    (void)kind;
    if (!key || strcasecmp(key, s->name) != 0)
        return MHD_YES;
    if (!value)
        value = "";
    if (s->count++ == 0)
        s->first = value;
    if (s->joined) {
        size_t n = strlen(value), sep = s->len ? 2 : 0;
        if (s->len + sep + n + 1 > s->cap) {
            s->overflow = 1;
            return MHD_YES;
        }
        memcpy(s->joined + s->len, ", ", sep);
        memcpy(s->joined + s->len + sep, value, n + 1);
        s->len += sep + n;
    }
    return MHD_YES;
}

static void scan(struct MHD_Connection *c, struct header_scan *s, const char *name,
                 char *joined, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    s->joined = joined;
    s->cap = cap;
    if (joined)
        joined[0] = '\0';
    MHD_get_connection_values(c, MHD_HEADER_KIND, scan_one, s);
}

/* The one value of header name; NULL when absent, or (with a reason) when
 * given twice or empty. */
static const char *one_header(struct MHD_Connection *c, const char *name, char *why,
                              size_t wsize, int *bad)
{
    struct header_scan s;
    scan(c, &s, name, NULL, 0);
    *bad = 0;
    if (s.count == 0)
        return NULL;
    if (s.count > 1 || s.first[0] == '\0') {
        snprintf(why, wsize, "malformed header %s: %s", name,
                 s.count > 1 ? "given more than once" : "empty");
        *bad = 1;
        return NULL;
    }
    return s.first;
}

/* 1 if s is a name the rules could define (rlstore.yaml(5): letters,
 * digits, '_', '.', ':', '-', at most RLS_NAME_MAX bytes). */
static int name_ok(const char *s, size_t len)
{
    if (len < 1 || len > RLS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == ':' || ch == '-'))
            return 0;
    }
    return 1;
}

static int set_action(const char *s, size_t len, char *action, char *why, size_t wsize,
                      const char *from)
{
    if (!name_ok(s, len)) {
        snprintf(why, wsize, "invalid action name in %s (1 to %d letters, digits, "
                 "'_', '.', ':' or '-')", from, RLS_NAME_MAX);
        return -1;
    }
    memcpy(action, s, len);
    action[len] = '\0';
    return 0;
}

/*
 * A path that walks (dot segments, an empty segment, an encoded dot, slash
 * or backslash) may reach another route's target once the upstream
 * normalises it: rather than guess how it will, such a path is refused.
 */
static int path_walks(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\\')
            return 1;
        if (p[i] == '%' && i + 2 < len) {
            char a = p[i + 1], b = (char)(p[i + 2] | 0x20);
            if ((a == '2' && (b == 'e' || b == 'f')) || (a == '5' && b == 'c'))
                return 1;
        }
        if (p[i] != '/')
            continue;
        size_t j = i + 1;
        size_t dots = 0;
        while (j < len && p[j] == '.')
            dots++, j++;
        /* "/./" or "/../" (or at the end), or "//" */
        if ((j == len || p[j] == '/') && dots <= 2 && (dots > 0 || j < len))
            return 1;
    }
    return 0;
}

/* The route of the longest prefix matching method and path (a method named
 * beats any method), or NULL. */
static const auth_route *route_find(const char *method, const char *path, size_t len)
{
    const auth_route *best = NULL;
    size_t best_len = 0;
    for (int i = 0; i < auth_cfg.nroutes; i++) {
        const auth_route *r = &auth_cfg.routes[i];
        size_t n = strlen(r->prefix);
        if (r->method[0] && strcasecmp(r->method, method) != 0)
            continue;
        if (n > len || memcmp(r->prefix, path, n) != 0)
            continue;
        /* whole segments: "/login" matches /login and /login/x, not /login2 */
        if (n < len && r->prefix[n - 1] != '/' && path[n] != '/')
            continue;
        if (!best || n > best_len || (n == best_len && r->method[0] && !best->method[0])) {
            best = r;
            best_len = n;
        }
    }
    return best;
}

static int action_from_route(struct MHD_Connection *c, const char *method, char *action,
                             char *why, size_t wsize)
{
    int bad;
    const char *uri = one_header(c, "X-Forwarded-Uri", why, wsize, &bad);
    if (!uri && !bad)
        uri = one_header(c, "X-Original-URI", why, wsize, &bad);
    if (bad)
        return -1;
    const char *m = one_header(c, "X-Forwarded-Method", why, wsize, &bad);
    if (!m && !bad)
        m = one_header(c, "X-Original-Method", why, wsize, &bad);
    if (bad)
        return -1;
    if (!uri || auth_cfg.nroutes == 0) {
        snprintf(why, wsize, "no action: the path names none (/check/ACTION)%s%s%s",
                 auth_cfg.action_header ? ", no header " : "",
                 auth_cfg.action_header ? auth_cfg.action_header : "",
                 auth_cfg.nroutes ? ", no X-Forwarded-Uri or X-Original-URI" : "");
        return -1;
    }
    size_t len = strcspn(uri, "?#");
    if (uri[0] != '/' || path_walks(uri, len)) {
        snprintf(why, wsize, "malformed header X-Forwarded-Uri/X-Original-URI: not a "
                 "plain absolute path (dot segments, '//' and encoded '.', '/', '\\' "
                 "are refused)");
        return -1;
    }
    const auth_route *r = route_find(m ? m : method, uri, len);
    if (!r) {
        snprintf(why, wsize, "no action: no route matches the original request");
        return -1;
    }
    strcpy(action, r->action);
    return 0;
}

int req_action(struct MHD_Connection *c, const char *url, const char *method,
               char action[RLS_NAME_MAX + 1], char *why, size_t wsize)
{
    const char *rest = url + strlen("/check");
    if (rest[0] == '/' && rest[1] != '\0')
        return set_action(rest + 1, strlen(rest + 1), action, why, wsize, "the path");
    if (auth_cfg.action_header) {
        int bad;
        const char *h = one_header(c, auth_cfg.action_header, why, wsize, &bad);
        if (bad)
            return -1;
        if (h)
            return set_action(h, strlen(h), action, why, wsize, auth_cfg.action_header);
    }
    return action_from_route(c, method, action, why, wsize);
}

static int peer_address(struct MHD_Connection *c, struct in6_addr *out)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return -1;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        memset(out, 0, sizeof *out);
        out->s6_addr[10] = out->s6_addr[11] = 0xff;
        memcpy(&out->s6_addr[12], &in->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        *out = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return 0;
    }
    return -1;
}

/* The client behind a trusted peer; 0 (found or not: *a unchanged) or -1. */
static int forwarded_client(struct MHD_Connection *c, struct in6_addr *a, char *why,
                            size_t wsize)
{
    static _Thread_local char joined[XFF_MAX];
    struct header_scan s;
    scan(c, &s, "X-Forwarded-For", joined, sizeof joined);
    if (s.count > 0) {
        if (s.overflow || addr_forwarded_client(joined, auth_cfg.trusted, auth_cfg.ntrusted, a)) {
            snprintf(why, wsize, "malformed header X-Forwarded-For: %s",
                     s.overflow ? "longer than 8192 bytes" : "an element is not an IP address");
            return -1;
        }
        return 0;
    }
    int bad;
    const char *real = one_header(c, "X-Real-IP", why, wsize, &bad);
    if (bad)
        return -1;
    if (real && addr_parse(real, strlen(real), a) != 0) {
        snprintf(why, wsize, "malformed header X-Real-IP: not an IP address");
        return -1;
    }
    return 0;
}

int req_key(struct MHD_Connection *c, char *key, size_t ksize, const char **keyp, char *why,
            size_t wsize)
{
    if (auth_cfg.key_header) {
        int bad;
        const char *h = one_header(c, auth_cfg.key_header, why, wsize, &bad);
        if (bad)
            return -1;
        if (!h) {
            snprintf(why, wsize, "missing header %s (the key)", auth_cfg.key_header);
            return -1;
        }
        *keyp = h;  /* valid while the connection's request is */
        return 0;
    }
    struct in6_addr a;
    if (peer_address(c, &a) != 0) {
        snprintf(why, wsize, "the client address is unknown (not an IP connection)");
        return -1;
    }
    if (addr_in_list(&a, auth_cfg.trusted, auth_cfg.ntrusted) &&
        forwarded_client(c, &a, why, wsize) != 0)
        return -1;
    addr_format(&a, key, ksize);
    *keyp = key;
    return 0;
}

int req_deny_status(struct MHD_Connection *c, int *status, char *why, size_t wsize)
{
    int bad;
    const char *h = one_header(c, "X-Rlstore-Deny-Status", why, wsize, &bad);
    *status = auth_cfg.deny_status;
    if (bad)
        return -1;
    if (!h)
        return 0;
    if (strcmp(h, "401") != 0 && strcmp(h, "403") != 0 && strcmp(h, "429") != 0) {
        snprintf(why, wsize, "malformed header X-Rlstore-Deny-Status: not 401, 403 or 429");
        return -1;
    }
    *status = atoi(h);
    return 0;
}
