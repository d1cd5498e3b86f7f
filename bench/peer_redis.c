/*
 * peer_redis.c - the Redis peer: a fixed-window Lua script (INCR, EXPIRE on
 * the first hit, compare with the limit) over loopback, one client, no
 * pipelining, on the same key walk as the rlstore scenarios.
 *
 * Needs redis-server and redis-benchmark; otherwise reported as skipped
 * (not installed), never faked.  Starts a private redis-server on a free
 * loopback port, without a configuration file and without persistence
 * (save "", appendonly no), in a directory of its own, and stops it at the
 * end (also on exit and signals, see peers_cleanup()).  With two CPUs or
 * more, the server runs on one and the client on another.
 *
 * The figures of the scenario come from rlbench's own client (RESP over a
 * TCP socket with TCP_NODELAY, EVALSHA per check, latency per request timed
 * like every other scenario, so p99.9 and max mean the same thing);
 * `redis-benchmark -c 1 -P 1 -n N EVALSHA ...` runs as a cross-check and its
 * throughput and p50/p99/max go into the extras.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
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

static const char SCRIPT[] =
    "local n = redis.call('INCR', KEYS[1]) "
    "if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end "
    "if n > tonumber(ARGV[1]) then return 0 end "
    "return 1";

static pid_t server_pid = -1;

static char server_dir[4200];  /* removed by redis_stop() */

void redis_stop(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGTERM);
        if (wait_pid(server_pid, 5) != 0)
            kill(server_pid, SIGKILL);
        server_pid = -1;
    }
    if (server_dir[0]) {
        rm_rf(server_dir);
        server_dir[0] = '\0';
    }
}

/* ---- a minimal RESP client -------------------------------------------- */
typedef struct conn {
    int fd;
    char buf[4096];
    size_t len, pos;
} conn;

static int conn_open(conn *c, int port)
{
    struct sockaddr_in a;
    int one = 1;
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

static int conn_write(conn *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(c->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int conn_fill(conn *c)
{
    if (c->pos > 0) {
        memmove(c->buf, c->buf + c->pos, c->len - c->pos);
        c->len -= c->pos;
        c->pos = 0;
    }
    if (c->len == sizeof c->buf)
        return -1;
    ssize_t k;
    do
        k = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
    while (k < 0 && errno == EINTR);
    if (k <= 0)
        return -1;
    c->len += (size_t)k;
    return 0;
}

/* Reads one reply of type + - : or $ (a bulk string of at most out size).
 * *type gets its first byte; out the text.  0 or -1. */
static int conn_reply(conn *c, char *type, char *out, size_t size)
{
    char *nl;
    while (!(nl = memchr(c->buf + c->pos, '\n', c->len - c->pos)))
        if (conn_fill(c) != 0)
            return -1;
    size_t line = (size_t)(nl - (c->buf + c->pos)) + 1;
    *type = c->buf[c->pos];
    snprintf(out, size, "%.*s", (int)(line > 2 ? line - 3 : 0), c->buf + c->pos + 1);
    c->pos += line;
    if (*type != '$')
        return 0;
    long n = atol(out);
    if (n < 0 || (size_t)n + 1 > size)
        return n < 0 ? 0 : -1;
    while (c->len - c->pos < (size_t)n + 2)
        if (conn_fill(c) != 0)
            return -1;
    memcpy(out, c->buf + c->pos, (size_t)n);
    out[n] = '\0';
    c->pos += (size_t)n + 2;
    return 0;
}

/* Appends one RESP bulk string. */
static size_t put_bulk(char *buf, size_t o, size_t size, const char *s)
{
    int k = snprintf(buf + o, size - o, "$%zu\r\n%s\r\n", strlen(s), s);
    return k > 0 && o + (size_t)k < size ? o + (size_t)k : size;
}

static int command(conn *c, int argc, const char *const *argv, char *type, char *out, size_t size)
{
    char buf[2048];
    size_t o = (size_t)snprintf(buf, sizeof buf, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        o = put_bulk(buf, o, sizeof buf, argv[i]);
    if (o >= sizeof buf || conn_write(c, buf, o) != 0)
        return -1;
    return conn_reply(c, type, out, size);
}

/* ---- the scenario ------------------------------------------------------- */
static int client_run(const bench_cfg *cfg, int port, const char *sha, bench_lat *out,
                      char *err, size_t errsize)
{
    conn c;
    lat_rec lat;
    char key[64], type, reply[128];
    if (conn_open(&c, port) != 0) {
        snprintf(err, errsize, "cannot connect: %s", strerror(errno));
        return -1;
    }
    if (lat_init(&lat, cfg->redis_ops) != 0) {
        close(c.fd);
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    int ret = 0;
    double t0 = now_us();
    for (long i = 0; i < cfg->redis_ops; i++) {
        key_of(key, sizeof key, i, cfg->keys);
        const char *argv[] = {"EVALSHA", sha, "1", key, "1000000000", "86400"};
        double a = now_us();
        if (command(&c, 6, argv, &type, reply, sizeof reply) != 0 || type != ':' ||
            strcmp(reply, "1") != 0) {
            snprintf(err, errsize, "EVALSHA of %s: reply %c%s", key, type, reply);
            ret = -1;
            break;
        }
        lat.v[lat.n++] = now_us() - a;
    }
    if (ret == 0)
        lat_summary(&lat, (now_us() - t0) / 1e6, out);
    lat_free(&lat);
    close(c.fd);
    return ret;
}

/* Runs redis-benchmark and puts its CSV figures into the extras. */
static void cross_check(const bench_cfg *cfg, bench_result *r, const char *tool, int port,
                        const char *sha, int cpu)
{
    char log[4200], p[16], n[24], keys[24], line[1024], hdr[1024];
    snprintf(log, sizeof log, "%s/redis/benchmark.csv", cfg->dir);
    snprintf(p, sizeof p, "%d", port);
    snprintf(n, sizeof n, "%ld", cfg->redis_ops < 50000 ? cfg->redis_ops : 50000);
    snprintf(keys, sizeof keys, "%ld", cfg->keys);
    char *argv[] = {(char *)tool, "-h", "127.0.0.1", "-p", p, "-c", "1", "-P", "1", "-n", n,
                    "-r", keys, "--csv", "EVALSHA", (char *)sha, "1", "rb:__rand_int__",
                    "1000000000", "86400", NULL};
    int st = run(argv, log, cpu, 600);
    FILE *f = fopen(log, "r");
    double rps, avg, mn, p50, p95, p99, mx;
    int ok = 0;
    if (st == 0 && f && fgets(hdr, sizeof hdr, f) && fgets(line, sizeof line, f)) {
        /* "EVALSHA ...","rps","avg","min","p50","p95","p99","max" */
        char *q = strstr(line, "\",\"");
        if (q && sscanf(q, "\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\"", &rps,
                        &avg, &mn, &p50, &p95, &p99, &mx) == 7)
            ok = 1;
    }
    if (f)
        fclose(f);
    if (!ok) {
        res_extra(r, "redis_benchmark_failed", 1, "");
        return;
    }
    res_extra(r, "redis_benchmark_ops_per_s", rps, "/s");
    res_extra(r, "redis_benchmark_p50_us", p50 * 1000, "us");
    res_extra(r, "redis_benchmark_p99_us", p99 * 1000, "us");
    res_extra(r, "redis_benchmark_max_us", mx * 1000, "us");
}

/* FLUSHALL, so each measured run starts from an empty server. */
static int flush_all(int port)
{
    conn c;
    char type, reply[64];
    const char *argv[] = {"FLUSHALL"};
    if (conn_open(&c, port) != 0)
        return -1;
    int rc = command(&c, 1, argv, &type, reply, sizeof reply);
    close(c.fd);
    return rc == 0 && type == '+' ? 0 : -1;
}

void bench_redis(const bench_cfg *cfg)
{
    bench_result *r = res_find("redis");
    char server[4200], tool[4200], dir[4200], log[4200], port_s[16], err[300];
    char sha[128], type;
    placement pl[2];
    int npl = placements(pl), best = -1;
    bench_lat lat[2];
    conn c = {.fd = -1};
    if (find_tool("redis-server", NULL, server, sizeof server) != 0 ||
        find_tool("redis-benchmark", NULL, tool, sizeof tool) != 0) {
        res_status(r, RES_SKIPPED, "not installed: redis-server, redis-benchmark");
        return;
    }
    int port = free_port();
    snprintf(dir, sizeof dir, "%s/redis", cfg->dir);
    snprintf(log, sizeof log, "%s/redis/server.log", cfg->dir);
    snprintf(port_s, sizeof port_s, "%d", port);
    if (port < 0 || (mkdir(dir, 0700) != 0 && errno != EEXIST)) {
        res_status(r, RES_FAILED, "no free port or no directory");
        return;
    }
    snprintf(server_dir, sizeof server_dir, "%s", dir);
    char *argv[] = {server, "--port", port_s, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", dir, "--daemonize", "no",
                    "--protected-mode", "yes", NULL};
    server_pid = spawn(argv, log, -1);
    if (server_pid < 0) {
        res_status(r, RES_FAILED, "cannot start redis-server");
        return;
    }
    for (int i = 0; i < 500 && conn_open(&c, port) != 0; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        if (waitpid(server_pid, NULL, WNOHANG) == server_pid) {
            server_pid = -1;
            break;
        }
    }
    const char *load[] = {"SCRIPT", "LOAD", SCRIPT};
    if (c.fd < 0 || command(&c, 3, load, &type, sha, sizeof sha) != 0 || type != '$' ||
        strlen(sha) != 40) {
        file_tail(log, err, sizeof err);
        res_status(r, RES_FAILED, "redis-server did not start or load the script: %s", err);
        if (c.fd >= 0)
            close(c.fd);
        redis_stop();
        return;
    }
    close(c.fd);
    for (int k = 0; k < npl; k++) {
        pin_pid(server_pid, pl[k].server_cpu);
        pin_self(pl[k].client_cpu);
        int rc = flush_all(port);
        if (rc != 0)
            snprintf(err, sizeof err, "FLUSHALL failed");
        else
            rc = client_run(cfg, port, sha, &lat[k], err, sizeof err);
        pin_self(-1);
        if (rc != 0) {
            res_status(r, RES_FAILED, "%s: %s", pl[k].name, err);
            redis_stop();
            return;
        }
        placement_extras(r, &pl[k], &lat[k]);
        if (best < 0 || lat_rate(&lat[k]) > lat_rate(&lat[best]))
            best = k;
    }
    res_set_lat(r, &lat[best]);
    pin_pid(server_pid, pl[best].server_cpu);
    cross_check(cfg, r, tool, port, sha, pl[best].client_cpu);
    redis_stop();
    double rb = res_get_extra(r, "redis_benchmark_ops_per_s");
    char pin[160];
    if (npl == 2)
        snprintf(pin, sizeof pin, "best placement: %s (unpinned %.0f/s, pinned to CPUs %d/%d "
                 "%.0f/s)", pl[best].name, lat_rate(&lat[0]), pl[1].server_cpu,
                 pl[1].client_cpu, lat_rate(&lat[1]));
    else
        snprintf(pin, sizeof pin, "not pinned (1 CPU)");
    if (!isnan(rb))
        res_status(r, RES_OK, "own RESP client, EVALSHA, 1 connection; %s; redis-benchmark "
                   "-c 1 -P 1: %.0f/s, p50 %.0f us", pin, rb,
                   res_get_extra(r, "redis_benchmark_p50_us"));
    else
        res_status(r, RES_OK, "own RESP client, EVALSHA, 1 connection; %s; redis-benchmark "
                   "cross-check failed", pin);
}
