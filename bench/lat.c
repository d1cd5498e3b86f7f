/*
 * lat.c - latency summaries, the result list, key names and small helpers
 * of rlbench.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void lat_summarize(result *r, double *lat, long n, double secs)
{
    r->ops = n;
    r->secs = secs;
    r->skipped = 0;
    if (n <= 0)
        return;
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    r->p50 = lat[n / 2];
    r->p99 = lat[(long)((double)n * 0.99)];
    r->p999 = lat[(long)((double)n * 0.999)];
    r->max = lat[n - 1];
}

double res_rate(const result *r)
{
    return r->secs > 0 && !r->skipped ? (double)r->ops / r->secs : 0.0;
}

void res_keep_better(result *dst, const result *r)
{
    if (r->skipped || (!dst->skipped && res_rate(r) <= res_rate(dst)))
        return;
    dst->ops = r->ops;
    dst->secs = r->secs;
    dst->p50 = r->p50;
    dst->p99 = r->p99;
    dst->p999 = r->p999;
    dst->max = r->max;
    dst->skipped = 0;
}

result *bench_add(bench *b, const char *group, const char *id, const char *name)
{
    if (b->nres == b->capres) {
        int cap = b->capres ? b->capres * 2 : 32;
        result *n = realloc(b->res, sizeof *n * (size_t)cap);
        if (!n) {
            fprintf(stderr, "rlbench: out of memory\n");
            exit(1);
        }
        b->res = n;
        b->capres = cap;
    }
    result *r = &b->res[b->nres++];
    memset(r, 0, sizeof *r);
    snprintf(r->group, sizeof r->group, "%s", group);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->skipped = 1;  /* until it has figures */
    return r;
}

const result *bench_find(const bench *b, const char *id)
{
    for (int i = 0; i < b->nres; i++)
        if (strcmp(b->res[i].id, id) == 0 && !b->res[i].skipped)
            return &b->res[i];
    return NULL;
}

void bench_metric(bench *b, const char *id, const char *name, double value,
                  const char *unit, const char *target, int met)
{
    if (b->nmet == b->capmet) {
        int cap = b->capmet ? b->capmet * 2 : 32;
        metric *n = realloc(b->met, sizeof *n * (size_t)cap);
        if (!n) {
            fprintf(stderr, "rlbench: out of memory\n");
            exit(1);
        }
        b->met = n;
        b->capmet = cap;
    }
    metric *m = &b->met[b->nmet++];
    snprintf(m->id, sizeof m->id, "%s", id);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->value = value;
    snprintf(m->unit, sizeof m->unit, "%s", unit);
    snprintf(m->target, sizeof m->target, "%s", target ? target : "");
    m->met = met;
}

void bench_skip(result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
    r->skipped = 1;
}

void key_name(char *buf, size_t size, unsigned long n)
{
    snprintf(buf, size, "10.%lu.%lu.%lu", n / 65536 % 256, n / 256 % 256, n % 256);
}

void key_of(char *buf, size_t size, long i, long keys)
{
    /* 2654435761 is a prime that divides no key count used here, so the
     * first `keys` operations visit every key once */
    unsigned long x = (unsigned long)i * 2654435761u;
    key_name(buf, size, x % (unsigned long)keys);
}

void remove_db(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-ckpt", "-journal"};
    char p[4200];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
}

int bench_source(const bench *b, const char *rel, char *out, size_t size)
{
    const char *slash = strrchr(b->self, '/');
    /* build/bench/rlbench -> the source tree two levels up */
    if (slash) {
        snprintf(out, size, "%.*s/../../%s", (int)(slash - b->self), b->self, rel);
        if (access(out, R_OK) == 0)
            return 1;
    }
    snprintf(out, size, "%s", rel);
    return access(out, R_OK) == 0;
}

void *shared_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void shared_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}
