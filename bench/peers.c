/*
 * peers.c - what users would otherwise pick, measured in the same run:
 *
 * redis      a throwaway redis-server on a loopback port (no persistence),
 *            a fixed-window Lua script (EVALSHA) per check, one client, no
 *            pipelining, through a minimal RESP client here, so the timing
 *            is the same as rlstore's (one call, one latency sample);
 * postgres   a throwaway cluster in a temporary directory on loopback
 *            (bench/peer_pg.sh: initdb, pg_ctl, pgbench), one UPSERT ...
 *            RETURNING per transaction, one client, synchronous_commit=off.
 *
 * A peer that is not installed is reported as skipped, never estimated.
 * Servers are started with bounded waits and always stopped by their pid.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

/* ---- PATH lookup ------------------------------------------------------ */

static int in_path(const char *prog, char *out, size_t size)
{
    const char *path = getenv("PATH");
    const char *extra[] = {"/usr/sbin", "/usr/bin", "/usr/local/bin", NULL};
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path ? path : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, size, "%s/%s", d, prog);
        if (access(out, X_OK) == 0)
            return 1;
    }
    for (int i = 0; extra[i]; i++) {
        snprintf(out, size, "%s/%s", extra[i], prog);
        if (access(out, X_OK) == 0)
            return 1;
    }
    return 0;
}

/* A free loopback TCP port (bound once and released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int port = -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* ---- a minimal RESP client -------------------------------------------- */

typedef struct resp {
    int fd;
    char buf[65536];
    size_t len;
} resp;

static int resp_connect(resp *c, int port)
{
    struct sockaddr_in a;
    int one = 1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->len = 0;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

/* Sends one command of argc bulk strings. */
static int resp_send(resp *c, int argc, const char *const *argv)
{
    char out[4096];
    size_t n = (size_t)snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(argv[i]);
        if (n + l + 32 >= sizeof out)
            return -1;
        n += (size_t)snprintf(out + n, sizeof out - n, "$%zu\r\n%s\r\n", l, argv[i]);
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = write(c->fd, out + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    return 0;
}

/* Length of the complete reply at p (of n bytes), 0 if incomplete, -1 if
 * malformed.  *first receives the first integer of the reply. */
static long reply_len(const char *p, size_t n, long long *first, int depth)
{
    const char *e = memchr(p, '\n', n);
    if (!e)
        return 0;
    long head = (long)(e - p) + 1;
    long long v = strtoll(p + 1, NULL, 10);
    switch (p[0]) {
    case '+':
    case '-':
        return p[0] == '-' ? -1 : head;
    case ':':
        if (first && depth <= 1)
            *first = v;
        return head;
    case '$':
        if (v < 0)
            return head;
        return (size_t)head + (size_t)v + 2 <= n ? head + (long)v + 2 : 0;
    case '*': {
        long off = head;
        for (long long i = 0; i < v; i++) {
            long l = reply_len(p + off, n - (size_t)off, i == 0 ? first : NULL, depth + 1);
            if (l <= 0)
                return l;
            off += l;
        }
        return off;
    }
    default:
        return -1;
    }
}

/* Reads one reply; its first integer into *first (may be NULL).  The
 * reply's text (for SCRIPT LOAD) is left in c->buf, NUL-terminated. */
static int resp_read(resp *c, long long *first)
{
    c->len = 0;
    for (;;) {
        long l = c->len ? reply_len(c->buf, c->len, first, 0) : 0;
        if (l < 0)
            return -1;
        if (l > 0) {
            c->buf[l < (long)sizeof c->buf ? l : (long)sizeof c->buf - 1] = '\0';
            return 0;
        }
        if (c->len + 1 >= sizeof c->buf)
            return -1;
        ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
}

/* Fixed window: KEYS[1] is the key's counter for the current window
 * (the caller puts the window number in it); ARGV cost, limit, window ms.
 * A denied request consumes nothing.  Returns {allowed, remaining}. */
static const char LUA[] =
    "local cost = tonumber(ARGV[1]) local limit = tonumber(ARGV[2]) "
    "local cur = tonumber(redis.call('GET', KEYS[1]) or '0') "
    "if cur + cost > limit then return {0, limit - cur} end "
    "local n = redis.call('INCRBY', KEYS[1], cost) "
    "if n == cost then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end "
    "return {1, limit - n}";

static void stop_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 50; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        usleep(100000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static int peer_redis(bench *b, result *r)
{
    char server[4096], portbuf[16];
    if (!in_path("redis-server", server, sizeof server)) {
        bench_skip(r, "redis-server is not installed");
        return 0;
    }
    int port = free_port();
    if (port < 0) {
        bench_skip(r, "no free loopback port");
        return 0;
    }
    snprintf(portbuf, sizeof portbuf, "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (chdir(b->dir) != 0) { /* stay */ }
        execl(server, "redis-server", "--port", portbuf, "--bind", "127.0.0.1",
              "--save", "", "--appendonly", "no", "--daemonize", "no",
              "--protected-mode", "yes", (char *)NULL);
        _exit(127);
    }
    resp c = {.fd = -1};
    for (int i = 0; i < 100 && resp_connect(&c, port) != 0; i++)
        usleep(50000);  /* up to 5 s for the server to listen */
    if (c.fd < 0) {
        stop_child(pid);
        bench_skip(r, "redis-server did not start");
        return 0;
    }
    const char *load[] = {"SCRIPT", "LOAD", LUA};
    char sha[64] = "";
    if (resp_send(&c, 3, load) == 0 && resp_read(&c, NULL) == 0 && c.buf[0] == '$') {
        const char *s = strchr(c.buf, '\n');
        if (s)
            snprintf(sha, sizeof sha, "%.40s", s + 1);
    }
    long ops = b->ops / 2;
    double *lat = malloc(sizeof *lat * (size_t)ops);
    int rc = sha[0] && lat ? 0 : -1;
    char key[96], ip[64];
    long window = (long)time(NULL) / 86400;
    double t0 = now_us();
    for (long i = 0; rc == 0 && i < ops; i++) {
        key_of(ip, sizeof ip, i, b->keys);
        snprintf(key, sizeof key, "rl:signup:%s:%ld", ip, window);
        const char *argv[] = {"EVALSHA", sha, "1", key, "1", "1000000000", "86400000"};
        long long allowed = -1;
        double a = now_us();
        if (resp_send(&c, 7, argv) != 0 || resp_read(&c, &allowed) != 0 || allowed != 1)
            rc = -1;
        lat[i] = now_us() - a;
    }
    if (rc == 0)
        lat_summarize(r, lat, ops, (now_us() - t0) / 1e6);
    else
        bench_skip(r, "the Lua script failed against redis-server");
    free(lat);
    close(c.fd);
    stop_child(pid);
    return 0;
}

/* ---- PostgreSQL through bench/peer_pg.sh ------------------------------- */

static int peer_pg(bench *b, result *r)
{
    char script[4200], cmd[8600], line[512];
    if (!bench_source(b, "bench/peer_pg.sh", script, sizeof script)) {
        bench_skip(r, "bench/peer_pg.sh not found");
        return 0;
    }
    snprintf(cmd, sizeof cmd, "sh '%s' %ld %ld '%s' 2>&1", script, b->ops / 4, b->keys, b->dir);
    FILE *p = popen(cmd, "r");
    if (!p) {
        bench_skip(r, "cannot run %s", script);
        return 0;
    }
    int got = 0;
    char why[200] = "no output";
    while (fgets(line, sizeof line, p)) {
        double ops, secs, p50, p99, p999, max;
        if (sscanf(line, "result %lf %lf %lf %lf %lf %lf", &ops, &secs, &p50, &p99, &p999,
                   &max) == 6) {
            r->ops = (long)ops;
            r->secs = secs;
            r->p50 = p50;
            r->p99 = p99;
            r->p999 = p999;
            r->max = max;
            r->skipped = 0;
            got = 1;
        } else if (strncmp(line, "skip ", 5) == 0) {
            snprintf(why, sizeof why, "%.190s", line + 5);
            why[strcspn(why, "\n")] = '\0';
        }
    }
    pclose(p);
    if (!got)
        bench_skip(r, "%s", why);
    return 0;
}

int peers_run(bench *b)
{
    int i = b->nres;
    bench_add(b, "peers", "peer_redis", "redis Lua fixed window (1 client)");
    bench_add(b, "peers", "peer_postgres", "postgres UPSERT via pgbench (1 client)");
    peer_redis(b, &b->res[i]);
    peer_pg(b, &b->res[i + 1]);
    return 0;
}
