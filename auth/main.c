/*
 * main.c - rlstore-auth: command line, start, signals and shutdown.
 *
 *   rlstore-auth --db PATH|URI [--listen ADDR:PORT] [--trusted-proxy CIDR]...
 *                [--key-header NAME] [--action-header NAME] [--route R]...
 *                [--deny-status CODE] [--timeout DURATION] [--threads N]
 *
 * The database must exist and hold rules (rlctl init): the service opens
 * it at start and exits with a status of its own when it cannot
 * (rlstore-auth(8)).  Then libmicrohttpd serves requests on a pool of
 * threads, the main thread waits for SIGTERM or SIGINT, stops the daemon
 * (which finishes the requests under way) and closes the handles.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <microhttpd.h>
#include "auth.h"
#include "dbname.h"   /* common/ */
#include "handler.h"

static const char usage_text[] =
    "usage: rlstore-auth --db PATH|URI [options]\n"
    "  --listen ADDR:PORT       address to serve (default 127.0.0.1:9090; port 0: any)\n"
    "  --trusted-proxy CIDR     peer whose X-Forwarded-For / X-Real-IP is believed\n"
    "                           (repeatable, or comma-separated)\n"
    "  --key-header NAME        the key is this header's value, not the client address\n"
    "  --action-header NAME     action of a bare /check (default X-Rlstore-Action; '' none)\n"
    "  --route '[METHOD ]PREFIX=ACTION'  action of a bare /check by the original path\n"
    "                           (X-Forwarded-Uri, X-Original-URI; repeatable)\n"
    "  --deny-status CODE       status of a denial: 429 (default), 403 or 401\n"
    "  --timeout DURATION       deadline of a check's database wait (default 2s)\n"
    "  --threads N              worker threads (default 4, at most 64)\n"
    "  --help, --version\n";

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    auth_log("%s (see --help)", line);
    exit(AUTH_EXIT_USAGE);
}

/* An HTTP field name: RFC 9110 token characters. */
static int token_ok(const char *s)
{
    if (!*s || strlen(s) > 64)
        return 0;
    for (; *s; s++)
        if (!(strchr("!#$%&'*+-.^_`|~", *s) || (*s >= '0' && *s <= '9') ||
              (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return 0;
    return 1;
}

static void add_trusted(const char *list)
{
    char buf[256];
    while (*list) {
        size_t n = strcspn(list, ",");
        if (n == 0 || n >= sizeof buf)
            usage_error("--trusted-proxy: bad CIDR list '%s'", list);
        memcpy(buf, list, n);
        buf[n] = '\0';
        if (auth_cfg.ntrusted >= AUTH_CIDR_MAX)
            usage_error("--trusted-proxy: more than %d CIDRs", AUTH_CIDR_MAX);
        if (addr_parse_cidr(buf, &auth_cfg.trusted[auth_cfg.ntrusted++]) != 0)
            usage_error("--trusted-proxy: '%s' is not an address or CIDR", buf);
        list += n + (list[n] == ',');
    }
}

/* "[METHOD ]PREFIX=ACTION" */
static void add_route(const char *spec)
{
    if (auth_cfg.nroutes >= AUTH_ROUTE_MAX)
        usage_error("--route: more than %d routes", AUTH_ROUTE_MAX);
    auth_route *r = &auth_cfg.routes[auth_cfg.nroutes++];
    const char *p = spec, *sp = strchr(spec, ' '), *eq = strrchr(spec, '=');
    if (sp && (!eq || sp < eq)) {
        if ((size_t)(sp - spec) >= sizeof r->method)
            usage_error("--route '%s': method too long", spec);
        memcpy(r->method, spec, (size_t)(sp - spec));
        p = sp + 1;
    }
    if (!eq || *p != '/' || (size_t)(eq - p) >= sizeof r->prefix || !eq[1] ||
        strlen(eq + 1) > RLS_NAME_MAX)
        usage_error("--route '%s': expected '[METHOD ]/PREFIX=ACTION'", spec);
    memcpy(r->prefix, p, (size_t)(eq - p));
    strcpy(r->action, eq + 1);
}

static void parse_listen(const char *text, struct sockaddr_storage *ss)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr(text, ':');
    char *end;
    if (!colon || (size_t)(colon - text) >= sizeof host)
        usage_error("--listen '%s': expected ADDR:PORT", text);
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end || port < 0 || port > 65535)
        usage_error("--listen '%s': bad port", text);
    size_t n = (size_t)(colon - text);
    if (n >= 2 && text[0] == '[' && text[n - 1] == ']') {
        text++;
        n -= 2;
    }
    memcpy(host, text, n);
    host[n] = '\0';
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)(void *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
    } else {
        usage_error("--listen '%s': '%s' is not an IP address", text, host);
    }
}

struct cmdline {
    const char *db, *listen;
    int timeout_ms, threads;
};

static const char *need(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        usage_error("%s needs a value", argv[*i]);
    return argv[++*i];
}

static void parse_args(int argc, char **argv, struct cmdline *cl)
{
    cl->listen = "127.0.0.1:9090";
    cl->timeout_ms = 2000;
    cl->threads = 4;
    auth_cfg.action_header = "X-Rlstore-Action";
    auth_cfg.deny_status = 429;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int64_t ms;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(AUTH_EXIT_OK);
        } else if (strcmp(a, "--version") == 0) {
            printf("rlstore-auth %s (librlstore %s, libmicrohttpd %s)\n", RLS_VERSION_STRING,
                   rls_version_string(), MHD_get_version());
            exit(AUTH_EXIT_OK);
        } else if (strcmp(a, "--db") == 0) {
            cl->db = need(argc, argv, &i);
        } else if (strcmp(a, "--listen") == 0) {
            cl->listen = need(argc, argv, &i);
        } else if (strcmp(a, "--trusted-proxy") == 0) {
            add_trusted(need(argc, argv, &i));
        } else if (strcmp(a, "--key-header") == 0) {
            auth_cfg.key_header = need(argc, argv, &i);
            if (!token_ok(auth_cfg.key_header))
                usage_error("--key-header: '%s' is not a header name", auth_cfg.key_header);
        } else if (strcmp(a, "--action-header") == 0) {
            const char *h = need(argc, argv, &i);
            if (*h && !token_ok(h))
                usage_error("--action-header: '%s' is not a header name", h);
            auth_cfg.action_header = *h ? h : NULL;
        } else if (strcmp(a, "--route") == 0) {
            add_route(need(argc, argv, &i));
        } else if (strcmp(a, "--deny-status") == 0) {
            const char *v = need(argc, argv, &i);
            if (strcmp(v, "429") && strcmp(v, "403") && strcmp(v, "401"))
                usage_error("--deny-status: '%s' is not 429, 403 or 401", v);
            auth_cfg.deny_status = atoi(v);
        } else if (strcmp(a, "--timeout") == 0) {
            const char *v = need(argc, argv, &i);
            if (rls_duration_parse(v, &ms) != RLS_OK || ms < 1 || ms > 600000)
                usage_error("--timeout: '%s' is not a duration from 1ms to 10m", v);
            cl->timeout_ms = (int)ms;
        } else if (strcmp(a, "--threads") == 0) {
            const char *v = need(argc, argv, &i);
            char *end;
            long n = strtol(v, &end, 10);
            if (!*v || *end || n < 1 || n > 64)
                usage_error("--threads: '%s' is not a number from 1 to 64", v);
            cl->threads = (int)n;
        } else {
            usage_error("unknown option '%s'", a);
        }
    }
    if (!cl->db)
        usage_error("--db PATH|URI is required");
}

/* Opens the database and makes sure it has rules; exits when it cannot. */
static void open_database(const struct cmdline *cl)
{
    const char *why;
    char *name = db_redact(cl->db);
    int rc = pool_init(cl->db, cl->timeout_ms, &why);
    if (rc == RLS_OK) {
        int prc;
        rls_db *db = pool_get(&prc);
        char *yaml = NULL;
        rc = rls_rules_get(db, 0, &yaml, NULL);
        why = rls_errmsg(db);
        if (rc != RLS_OK)
            auth_log("cannot use '%s': %s: %s", name ? name : "?", rls_errname(rc), why);
        rls_free(yaml);
        pool_put(db);
    } else {
        auth_log("cannot open '%s': %s: %s", name ? name : "?", rls_errname(rc), why);
    }
    free(name);
    if (rc == RLS_OK)
        return;
    pool_close();
    exit(rc == RLS_ECANTOPEN || rc == RLS_ENOTFOUND ? AUTH_EXIT_NOTFOUND
         : rc == RLS_ENORULES                      ? AUTH_EXIT_CONFIG
                                                   : AUTH_EXIT_STORAGE);
}

/*
 * libmicrohttpd's own messages (a client that sent garbage or went away),
 * one line each and at most one a second: a misbehaving client must not
 * flood the journal.  Before the daemon runs they are dropped: its bind
 * failure names port 0 (the address is given as a sockaddr), and start()
 * says the same with the address.
 */
static atomic_int mhd_running;
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    static atomic_llong last;
    char line[512];
    (void)cls;
    long long sec = (long long)time(NULL), prev = atomic_load(&last);
    if (!atomic_load(&mhd_running) || prev == sec ||
        !atomic_compare_exchange_strong(&last, &prev, sec))
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\r\n")] = '\0';
    auth_log("http: %s", line);
}

static struct MHD_Daemon *start(const struct cmdline *cl)
{
    struct sockaddr_storage ss;
    parse_listen(cl->listen, &ss);
    unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, auth_access, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,   /* first, so it gets every message */
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cl->threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
    if (!d) {
        auth_log("cannot listen on %s: %s", cl->listen, errno ? strerror(errno) : "failed");
        return NULL;
    }
    atomic_store(&mhd_running, 1);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET6_ADDRSTRLEN];
    const void *a = ss.ss_family == AF_INET6
                        ? (const void *)&((struct sockaddr_in6 *)(void *)&ss)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)(void *)&ss)->sin_addr;
    inet_ntop(ss.ss_family, a, host, sizeof host);
    /* the line a supervisor or a test waits for; port 0 is resolved here */
    auth_log(ss.ss_family == AF_INET6 ? "listening on [%s]:%u" : "listening on %s:%u", host,
             info ? (unsigned)info->port : 0u);
    return d;
}

int main(int argc, char **argv)
{
    struct cmdline cl = {0};
    parse_args(argc, argv, &cl);
    signal(SIGPIPE, SIG_IGN);
    /* blocked before the worker threads exist, so that only sigwait below
     * receives them */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    open_database(&cl);
    struct MHD_Daemon *d = start(&cl);
    if (!d) {
        pool_close();
        return AUTH_EXIT_LISTEN;
    }
    int sig = 0;
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
        auth_log("SIGHUP: nothing to reload (the rules are read from the database)");
    auth_log("stopping on signal %d", sig);
    MHD_stop_daemon(d);
    pool_close();
    return AUTH_EXIT_OK;
}
