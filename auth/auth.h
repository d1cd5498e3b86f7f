/*
 * auth.h - rlstore-auth, the forward-auth service: what its files share.
 *
 * rlstore-auth answers the sub-requests of nginx `auth_request`, Traefik
 * ForwardAuth and Caddy `forward_auth` with a rate-limit decision of
 * librlstore: 204 admitted, 429 (or the deny status asked for) denied.  It
 * is a tool like rlctl: it uses include/rlstore.h and common/ only, and
 * libmicrohttpd for HTTP.
 *
 *   main.c     command line, start, signals, shutdown
 *   handler.c  one request: path, check, response (handler.h)
 *   request.c  what a request asks: action, key, deny status (request.h)
 *   netaddr.c  addresses, CIDR lists, the X-Forwarded-For walk
 *   pool.c     the database handles (one per concurrent request)
 *   metrics.c  counters and the latency histogram of /metrics
 */
#ifndef RLSTORE_AUTH_H
#define RLSTORE_AUTH_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <rlstore.h>

/* Exit statuses (rlstore-auth(8), EXIT STATUS). */
enum auth_exit {
    AUTH_EXIT_OK = 0,       /* stopped by SIGTERM or SIGINT                  */
    AUTH_EXIT_USAGE = 2,    /* bad command line                              */
    AUTH_EXIT_NOTFOUND = 3, /* the database does not exist                   */
    AUTH_EXIT_CONFIG = 4,   /* the database has no rules                     */
    AUTH_EXIT_STORAGE = 5,  /* the database cannot be opened                 */
    AUTH_EXIT_LISTEN = 6    /* the address cannot be bound, or HTTP failed   */
};

/* ---- netaddr.c ----------------------------------------------------------- */
/* An IPv4 address is kept as its IPv4-mapped IPv6 form (::ffff:a.b.c.d), so
 * that one comparison serves both families. */
typedef struct auth_cidr {
    struct in6_addr addr;
    int bits;               /* 0..128, of the mapped form                    */
} auth_cidr;

#define AUTH_CIDR_MAX 64

/* Parses "a.b.c.d[/n]" or "v6[/n]" (no /n: a single address).  0 or -1. */
int addr_parse_cidr(const char *text, auth_cidr *out);
/* Parses an address ("a.b.c.d", "v6", "[v6]") as the mapped form.  0 or -1. */
int addr_parse(const char *text, size_t len, struct in6_addr *out);
/* 1 if a is inside one of the n CIDRs. */
int addr_in_list(const struct in6_addr *a, const auth_cidr *list, int n);
/* Writes a as text: dotted IPv4 for a mapped address, else RFC 5952. */
void addr_format(const struct in6_addr *a, char *buf, size_t size);
/*
 * The client of an X-Forwarded-For list: walking from the right, the first
 * address not in the trusted list (all trusted: the leftmost).  0 with *out
 * set, or -1 when an element is not an address (the header is malformed).
 */
int addr_forwarded_client(const char *xff, const auth_cidr *trusted, int n,
                          struct in6_addr *out);

/* ---- pool.c -------------------------------------------------------------- */
/* Opens the first handle (kept for later requests).  RLS_OK or the code of
 * rls_open, *why its detail. */
int pool_init(const char *db, int timeout_ms, const char **why);
/* A handle for one request, NULL when one cannot be opened (*rc the code). */
rls_db *pool_get(int *rc);
/* Gives the handle back for the next request. */
void pool_put(rls_db *db);
/* Closes every handle; no request may be running. */
void pool_close(void);

/* ---- metrics.c ----------------------------------------------------------- */
enum auth_result {
    RES_ALLOWED = 0,        /* admitted                                      */
    RES_DENIED,             /* denied by a limit or a block                  */
    RES_ERROR_ALLOWED,      /* storage failed, the action's policy admits    */
    RES_ERROR_DENIED,       /* storage failed, the action's policy denies    */
    RES_BAD_REQUEST,        /* 400: bad input                                */
    RES_ERROR,              /* 500: no rules, cannot open the database...    */
    RES__COUNT
};

/* Counts one check of action (NULL: one the service could not name, such
 * as a bad request) taking micros microseconds. */
void metrics_count(const char *action, enum auth_result r, int64_t micros);
/* The Prometheus text of every counter, malloc'd (NULL: out of memory). */
char *metrics_render(size_t *len);

/* ---- handler.c ----------------------------------------------------------- */
typedef struct auth_route {
    char method[16];        /* "" any method                                 */
    char prefix[256];
    char action[RLS_NAME_MAX + 1];
} auth_route;

#define AUTH_ROUTE_MAX 64

typedef struct auth_config {
    auth_cidr trusted[AUTH_CIDR_MAX];
    int ntrusted;
    const char *key_header;     /* NULL: the client address is the key       */
    const char *action_header;  /* NULL: no action from a header             */
    auth_route routes[AUTH_ROUTE_MAX];
    int nroutes;
    int deny_status;            /* 429 unless told                           */
} auth_config;

/* The configuration every request reads (set before the daemon starts). */
extern auth_config auth_cfg;

/* Logs one line to stderr, "rlstore-auth: ...". */
void auth_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* RLSTORE_AUTH_H */
