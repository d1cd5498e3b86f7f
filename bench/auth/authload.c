/*
 * authload.c - the load generator of bench/auth/run.sh: COUNT GET requests
 * to 127.0.0.1:PORT PATH over CONNS keep-alive connections, one thread
 * each, every connection from its own loopback source address (127.0.1.N,
 * so a limiter keyed by the client address sees CONNS clients), and what
 * it took:
 *
 *   authload PORT PATH COUNT CONNS [WARMUP]
 *   -> requests=N seconds=S rps=R p50_us=A p90_us=B p99_us=C max_us=D non200=K
 *
 * WARMUP requests (default 1000) go first and are not measured.  The
 * responses come from nginx: a status line, header fields, and a body of
 * Content-Length bytes; anything else (chunked, a closed connection) is an
 * error that ends the run with status 1.  Latency is measured per request,
 * from the first byte written to the last byte read (CLOCK_MONOTONIC).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;
static const char *path;
static long total, warmup;
static atomic_long next_req;     /* requests handed out, warm-up included */
static atomic_long non200;
static int64_t *lat_us;          /* one per measured request */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int connect_from(int n)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(0x7f000100u + (uint32_t)(n % 250) + 2);   /* 127.0.1.x */
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.sin_port = htons((uint16_t)port);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0 ||
        connect(fd, (struct sockaddr *)&dst, sizeof dst) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one response; its status, or -1.  buf holds what was read past
 * it (a pipelined next response never comes: one request at a time). */
static int read_response(int fd, char *buf, size_t size)
{
    size_t len = 0;
    char *end = NULL;
    while (!end) {
        if (len + 1 >= size)
            return -1;
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    int status = atoi(buf + 9);
    long body = 0;
    for (char *p = buf; p < end; p = strstr(p, "\r\n") + 2) {
        if (strncasecmp(p, "Content-Length:", 15) == 0)
            body = atol(p + 15);
        if (strncasecmp(p, "Transfer-Encoding:", 18) == 0)
            return -1;
    }
    size_t have = len - (size_t)(end + 4 - buf);
    while ((long)have < body) {
        ssize_t n = read(fd, buf, size - 1);
        if (n <= 0)
            return -1;
        have += (size_t)n;
    }
    return status;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char req[512], buf[16384];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", path);
    int fd = connect_from(id);
    if (fd < 0) {
        fprintf(stderr, "authload: cannot connect to 127.0.0.1:%d: %s\n", port, strerror(errno));
        return (void *)1;
    }
    for (;;) {
        long i = atomic_fetch_add(&next_req, 1);
        if (i >= warmup + total)
            break;
        int64_t t0 = now_us();
        if (write(fd, req, (size_t)len) != len) {
            fprintf(stderr, "authload: write failed\n");
            close(fd);
            return (void *)1;
        }
        int status = read_response(fd, buf, sizeof buf);
        if (status < 0) {
            fprintf(stderr, "authload: bad or no response (connection %d)\n", id);
            close(fd);
            return (void *)1;
        }
        if (i >= warmup) {
            lat_us[i - warmup] = now_us() - t0;
            if (status != 200)
                atomic_fetch_add(&non200, 1);
        }
    }
    close(fd);
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: authload PORT PATH COUNT CONNS [WARMUP]\n");
        return 2;
    }
    port = atoi(argv[1]);
    path = argv[2];
    total = atol(argv[3]);
    int conns = atoi(argv[4]);
    warmup = argc > 5 ? atol(argv[5]) : 1000;
    if (port <= 0 || total <= 0 || total > 100000000 || conns < 1 || conns > 250 || warmup < 0) {
        fprintf(stderr, "authload: bad arguments\n");
        return 2;
    }
    lat_us = calloc((size_t)total, sizeof *lat_us);
    pthread_t *t = calloc((size_t)conns, sizeof *t);
    if (!lat_us || !t)
        return 1;
    /* the clock starts when the warm-up requests have been handed out:
     * close enough for runs of many thousand requests */
    int64_t t0 = 0;
    for (int i = 0; i < conns; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    while (atomic_load(&next_req) < warmup)
        usleep(100);
    t0 = now_us();
    int bad = 0;
    for (int i = 0; i < conns; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    double secs = (double)(now_us() - t0) / 1e6;
    if (bad)
        return 1;
    qsort(lat_us, (size_t)total, sizeof *lat_us, cmp64);
    printf("requests=%ld seconds=%.3f rps=%.0f p50_us=%lld p90_us=%lld p99_us=%lld max_us=%lld "
           "non200=%ld\n",
           total, secs, (double)total / secs, (long long)lat_us[total / 2],
           (long long)lat_us[total * 9 / 10], (long long)lat_us[total * 99 / 100],
           (long long)lat_us[total - 1], atomic_load(&non200));
    return 0;
}
