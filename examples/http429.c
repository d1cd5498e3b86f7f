/*
 * http429.c - a small HTTP/1.1 server that limits requests per client
 * address with librlstore and answers 429 Too Many Requests, with the IETF
 * RateLimit and RateLimit-Policy headers and Retry-After, when a client is
 * over its limit.
 *
 *   build/examples/http429 [--requests N] [--trust-forwarded] DATABASE PORT
 *
 * It listens on 127.0.0.1 only (PORT 0: a free port, printed on the first
 * line of output), serves one connection at a time, and exits after N
 * requests or on SIGTERM / SIGINT.  Every response, 200 or 429, carries the
 * rate-limit headers, so well-behaved clients can slow down before they are
 * refused.
 *
 * The limit is the action "http" of the rules stored in DATABASE.  On a
 * database without rules the server applies its own: 5 requests per minute
 * per address, with bursts of 5 (GCRA).  Change them while it runs, e.g.
 *   rlctl --db DATABASE apply my-rules.yaml
 * and requests use them within a second.
 *
 * Behind a reverse proxy every client has the proxy's address.  With
 * --trust-forwarded the key is the last address of X-Forwarded-For, the one
 * the proxy appended.  Use it only when a proxy you control always sets it:
 * otherwise a client picks its own key and escapes its limit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <rlstore.h>

static const char default_rules[] =
    "version: 1\n"
    "actions:\n"
    "  http:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64\n"
    "    limits:\n"
    "      - { name: per_ip, algorithm: gcra, limit: 5, window: 1m, burst: 5 }\n";

#define REQ_MAX 8192    /* longest request head accepted */
#define IO_TIMEOUT 5    /* seconds a client may take to send or receive */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* Writes all of buf; 0 on success. */
static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads the request head (up to the blank line) into buf; its length, or -1
 * if the client closed, timed out or sent more than REQ_MAX bytes. */
static int read_head(int fd, char *buf, size_t size)
{
    size_t len = 0;
    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return (int)len;
    }
    return -1;
}

/*
 * The value of header `name` in the request head, trimmed, copied into out;
 * 0 if found.  Only for the small headers this server reads.
 */
static int header_value(const char *head, const char *name, char *out, size_t size)
{
    size_t nlen = strlen(name);
    const char *line = strchr(head, '\n');
    while (line && line[1] != '\r' && line[1] != '\n' && line[1] != '\0') {
        line++;
        const char *end = strpbrk(line, "\r\n");
        if (!end)
            return -1;
        if ((size_t)(end - line) > nlen && strncasecmp(line, name, nlen) == 0 &&
            line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            size_t vlen = (size_t)(end - v);
            while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            if (vlen >= size)
                return -1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return 0;
        }
        line = strchr(end, '\n');
    }
    return -1;
}

/* The last element of a comma-separated list, trimmed, in place. */
static char *last_element(char *list)
{
    char *s = strrchr(list, ',');
    s = s ? s + 1 : list;
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static void respond(int fd, int status, const char *reason, const char *headers,
                    const char *body, int head_only)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\n"
                     "Cache-Control: no-store\r\n"
                     "Connection: close\r\n"
                     "%s\r\n%s",
                     status, reason, strlen(body), headers, head_only ? "" : body);
    if (n > 0)
        send_all(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Serves one connection: one request, one response. */
static void serve(rls_db *db, int fd, const struct sockaddr_in *peer, int trust_forwarded)
{
    char head[REQ_MAX], method[16], target[1024], version[16], client[256];
    char hdrs[512], body[512];
    struct timeval tv = {IO_TIMEOUT, 0};
    rls_result res;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (read_head(fd, head, sizeof head) < 0 ||
        sscanf(head, "%15s %1023s %15s", method, target, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0) {
        respond(fd, 400, "Bad Request", "", "bad request\n", 0);
        printf("- - 400 malformed request\n");
        return;
    }
    int head_only = strcmp(method, "HEAD") == 0;

    /* The client: the peer address, or what the trusted proxy says. */
    inet_ntop(AF_INET, &peer->sin_addr, client, sizeof client);
    if (trust_forwarded && header_value(head, "X-Forwarded-For", client, sizeof client) == 0)
        memmove(client, last_element(client), strlen(last_element(client)) + 1);

    int rc = rls_check(db, "http", client, 1, &res);
    if (rc == RLS_EKEY) {
        respond(fd, 400, "Bad Request", "", "bad client address\n", head_only);
        printf("%s %s %s 400 %s\n", client, method, target, rls_errmsg(db));
        return;
    }
    if (rc != RLS_OK) {
        /* A storage failure: res is filled according to the failure policy
         * (on_error), so the request is still admitted or refused as the
         * rules say.  Log it; never fail open by accident. */
        fprintf(stderr, "http429: rate limiter degraded: %s: %s\n", rls_errname(rc),
                rls_errmsg(db));
    }
    int n = rls_format_headers(&res, NULL, hdrs, sizeof hdrs);
    if (n < 0 || (size_t)n >= sizeof hdrs)
        hdrs[0] = '\0';
    if (res.allowed) {
        snprintf(body, sizeof body, "hello %s: %lld more request(s) now\n", client,
                 (long long)res.remaining);
        respond(fd, 200, "OK", hdrs, body, head_only);
        printf("%s %s %s 200 remaining=%lld\n", client, method, target, (long long)res.remaining);
    } else if (res.reason == RLS_REASON_DEGRADED) {
        respond(fd, 503, "Service Unavailable", "Retry-After: 1\r\n",
                "rate limiter unavailable\n", head_only);
        printf("%s %s %s 503 %s\n", client, method, target, rls_errname(rc));
    } else {
        if (res.retry_after_ms < 0)
            snprintf(body, sizeof body, "too many requests: %s\n",
                     rls_reason_name(res.reason));
        else
            snprintf(body, sizeof body, "too many requests: retry in %lld s\n",
                     (long long)((res.retry_after_ms + 999) / 1000));
        respond(fd, 429, "Too Many Requests", hdrs, body, head_only);
        printf("%s %s %s 429 rule=%s reason=%s retry_after_ms=%lld\n", client, method, target,
               res.rule, rls_reason_name(res.reason), (long long)res.retry_after_ms);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: http429 [--requests N] [--trust-forwarded] DATABASE PORT\n");
    return 2;
}

int main(int argc, char **argv)
{
    long max_requests = -1, port;
    int trust_forwarded = 0, argi = 1, lfd, rc, status = 1;
    struct sockaddr_in addr;
    socklen_t alen = sizeof addr;
    struct sigaction sa;
    sigset_t block, orig;
    rls_db *db = NULL;
    char *yaml = NULL, *end;
    size_t ylen;

    for (; argi < argc && strncmp(argv[argi], "--", 2) == 0; argi++) {
        if (strcmp(argv[argi], "--trust-forwarded") == 0) {
            trust_forwarded = 1;
        } else if (strcmp(argv[argi], "--requests") == 0 && argi + 1 < argc) {
            max_requests = strtol(argv[++argi], &end, 10);
            if (*end || max_requests < 1)
                return usage();
        } else {
            return usage();
        }
    }
    if (argc - argi != 2)
        return usage();
    port = strtol(argv[argi + 1], &end, 10);
    if (*end || port < 0 || port > 65535)
        return usage();

    if (rls_open(&db, argv[argi], NULL) != RLS_OK) {
        fprintf(stderr, "http429: cannot open '%s': %s\n", argv[argi], rls_errmsg(NULL));
        return 1;
    }
    rc = rls_rules_get(db, 0, &yaml, &ylen);
    rls_free(yaml);
    if (rc == RLS_ENORULES)
        rc = rls_rules_apply(db, default_rules, strlen(default_rules), "http429.c",
                             "default rules of the example", NULL);
    if (rc != RLS_OK) {
        fprintf(stderr, "http429: rules: %s\n", rls_errmsg(db));
        goto out;
    }

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((unsigned short)port);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(lfd, 16) != 0 || getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) {
        fprintf(stderr, "http429: cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
        goto out;
    }

    /* SIGTERM and SIGINT are blocked except while waiting in pselect(),
     * which unblocks them atomically: a signal can neither be lost between
     * the check of `stop` and the wait, nor interrupt a response. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);  /* a client that hung up is not fatal */
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &orig);

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("listening on http://127.0.0.1:%d/\n", ntohs(addr.sin_port));

    long served = 0;
    while (!stop && (max_requests < 0 || served < max_requests)) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(lfd, &rd);
        if (pselect(lfd + 1, &rd, NULL, NULL, NULL, &orig) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "http429: pselect: %s\n", strerror(errno));
            break;
        }
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        int fd = accept(lfd, (struct sockaddr *)&peer, &plen);
        if (fd < 0)
            continue;
        serve(db, fd, &peer, trust_forwarded);
        close(fd);
        served++;
    }
    close(lfd);
    printf("served %ld request(s)%s\n", served, stop ? ", stopped by a signal" : "");
    status = 0;
out:
    rls_close(db);
    return status;
}
