/*
 * bench.h - what the parts of rlbench share: results, latency arrays, key
 * names and the run's settings.
 */
#ifndef RLBENCH_H
#define RLBENCH_H

#include <stddef.h>
#include <stdint.h>

/* One scenario's outcome.  Latencies in microseconds. */
typedef struct result {
    char id[48];          /* stable, in the JSON */
    char name[80];        /* printed */
    char group[24];       /* plot section: "check", "algorithm", ... */
    long ops;
    double secs;
    double p50, p99, p999, max;
    int skipped;          /* 1: not run (why in note) */
    char note[200];
} result;

/* A single figure that is not a throughput (bytes per state, ms of CPU). */
typedef struct metric {
    char id[48];
    char name[96];
    double value;
    char unit[16];
    char target[48];      /* "<= 100", "" if none */
    int met;              /* 1 met, 0 not, -1 no target */
} metric;

typedef struct bench {
    long ops;             /* operations of a main scenario */
    long keys;            /* key space of the main scenarios */
    long many_keys;       /* the "1M keys" scenario */
    long deny_keys;       /* keys hammered by the denied scenarios */
    long full_ops;        /* operations with an fsync per commit */
    int quick;
    const char *dir;      /* scratch directory */
    const char *self;     /* argv[0], to find rltop next to the build */
    result *res;
    int nres, capres;
    metric *met;
    int nmet, capmet;
} bench;

/* ---- lat.c ---- */
double now_us(void);
/* Fills r's percentiles from n latencies (sorted in place). */
void lat_summarize(result *r, double *lat, long n, double secs);
double res_rate(const result *r);
/* Takes r's figures into dst if dst has none or r's rate is higher (of two
 * rounds, the one less disturbed by other load). */
void res_keep_better(result *dst, const result *r);
result *bench_add(bench *b, const char *group, const char *id, const char *name);
const result *bench_find(const bench *b, const char *id);
void bench_metric(bench *b, const char *id, const char *name, double value,
                  const char *unit, const char *target, int met);
void bench_skip(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Key n as an IPv4 address in 10.0.0.0/8; key_of: op i of a fixed
 * pseudo-random walk over `keys` keys, a permutation for i < keys. */
void key_name(char *buf, size_t size, unsigned long n);
void key_of(char *buf, size_t size, long i, long keys);
void remove_db(const char *path);
/* A file of the source tree (e.g. "bench/plot.py"), found next to the
 * build directory or from the current directory; 0 if not found. */
int bench_source(const bench *b, const char *rel, char *out, size_t size);
/* Shared, zeroed memory surviving fork(); NULL on failure. */
void *shared_alloc(size_t size);
void shared_free(void *p, size_t size);

/* ---- scen.c: one process ---- */
int scen_main(bench *b);        /* floor, checks, two limits, algorithms, denied */
int scen_full(bench *b);        /* synchronous=FULL floor and check */
int scen_many_keys(bench *b);   /* 1M keys: insert, steady, size, rltop, RSS */

/* ---- procs.c: several processes on one file ---- */
int procs_run(bench *b);

/* ---- peers.c ---- */
int peers_run(bench *b);

/* rlstore rules with one fixed-window limit on action "signup" (ip keys). */
extern const char *const RULES_ONE;

#endif
