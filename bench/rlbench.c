/*
 * rlbench.c - benchmarks of librlstore against baselines measured in the
 * same run on the same machine.
 *
 * floor      one prepared "INSERT ... ON CONFLICT DO UPDATE ... RETURNING"
 *            per transaction (autocommit), WAL, synchronous=NORMAL, on the
 *            same key distribution: what one durable counter update costs
 * check      rls_check on a one-rule fixed-window action, same keys
 *
 * Prints checks/s and p50/p99/p99.9/max latency per scenario, the ratio of
 * each rlstore scenario to the floor, and writes a JSON file of the results.
 * Usage: rlbench [--quick] [--ops N] [--keys N] [--json FILE] [--dir DIR]
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rlstore.h>

typedef struct result {
    const char *name;
    long ops;
    double secs;
    double p50, p99, p999, max;  /* microseconds */
} result;

static double now_us(void)
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

static void summarize(result *r, double *lat, long n, double secs)
{
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    r->ops = n;
    r->secs = secs;
    r->p50 = lat[n / 2];
    r->p99 = lat[(long)((double)n * 0.99)];
    r->p999 = lat[(long)((double)n * 0.999)];
    r->max = lat[n - 1];
}

static void print_result(const result *r, const result *floor)
{
    printf("%-28s %9.0f ops/s  p50 %7.1f us  p99 %7.1f us  p99.9 %8.1f us  max %9.1f us",
           r->name, (double)r->ops / r->secs, r->p50, r->p99, r->p999, r->max);
    if (floor && floor != r)
        printf("  %.2fx floor", ((double)r->ops / r->secs) / ((double)floor->ops / floor->secs));
    printf("\n");
}

static void key_of(char *buf, size_t size, long i, long keys)
{
    /* a fixed pseudo-random walk over the key space, same for every run */
    unsigned long x = (unsigned long)i * 2654435761u;
    snprintf(buf, size, "10.%lu.%lu.%lu", (x % (unsigned long)keys) / 65536 % 256,
             (x % (unsigned long)keys) / 256 % 256, (x % (unsigned long)keys) % 256);
}

static int bench_floor(const char *dir, long ops, long keys, result *r)
{
    char path[4096];
    sqlite3 *db;
    sqlite3_stmt *st;
    snprintf(path, sizeof path, "%s/floor.db", dir);
    unlink(path);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return -1;
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE c(key BLOB PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
                 NULL, NULL, NULL);
    if (sqlite3_prepare_v3(db, "INSERT INTO c(key, n) VALUES (?1, 1) ON CONFLICT(key) "
                               "DO UPDATE SET n = n + 1 RETURNING n",
                           -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        return -1;
    double *lat = malloc(sizeof *lat * (size_t)ops);
    char key[64];
    double t0 = now_us();
    for (long i = 0; i < ops; i++) {
        key_of(key, sizeof key, i, keys);
        double a = now_us();
        sqlite3_bind_blob(st, 1, key, (int)strlen(key), SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW)
            return -1;
        sqlite3_reset(st);
        lat[i] = now_us() - a;
    }
    summarize(r, lat, ops, (now_us() - t0) / 1e6);
    free(lat);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return 0;
}

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n";

static int bench_check(const char *dir, long ops, long keys, result *r)
{
    char path[4096], key[64];
    rls_db *db;
    rls_result res;
    snprintf(path, sizeof path, "%s/check.db", dir);
    unlink(path);
    if (rls_open(&db, path, NULL) != RLS_OK ||
        rls_rules_apply(db, RULES, strlen(RULES), "bench", NULL, NULL) != RLS_OK) {
        fprintf(stderr, "rlbench: %s\n", rls_errmsg(db));
        return -1;
    }
    double *lat = malloc(sizeof *lat * (size_t)ops);
    double t0 = now_us();
    for (long i = 0; i < ops; i++) {
        key_of(key, sizeof key, i, keys);
        double a = now_us();
        if (rls_check(db, "signup", key, 1, &res) != RLS_OK || !res.allowed) {
            fprintf(stderr, "rlbench: check failed: %s\n", rls_errmsg(db));
            return -1;
        }
        lat[i] = now_us() - a;
    }
    summarize(r, lat, ops, (now_us() - t0) / 1e6);
    free(lat);
    rls_close(db);
    return 0;
}

static void write_json(const char *file, const result *rs, int n)
{
    FILE *f = fopen(file, "w");
    if (!f) {
        fprintf(stderr, "rlbench: cannot write '%s'\n", file);
        return;
    }
    fprintf(f, "{\n  \"sqlite\": \"%s\",\n  \"results\": [\n", sqlite3_libversion());
    for (int i = 0; i < n; i++)
        fprintf(f, "    {\"name\": \"%s\", \"ops\": %ld, \"ops_per_s\": %.0f, \"p50_us\": %.1f,"
                   " \"p99_us\": %.1f, \"p999_us\": %.1f, \"max_us\": %.1f}%s\n",
                rs[i].name, rs[i].ops, (double)rs[i].ops / rs[i].secs, rs[i].p50, rs[i].p99,
                rs[i].p999, rs[i].max, i + 1 < n ? "," : "");
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

int main(int argc, char **argv)
{
    long ops = 200000, keys = 10000;
    const char *json = "build/bench/results.json";
    char dirbuf[] = "/tmp/rlbench-XXXXXX";
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            ops = 30000;
        else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            ops = atol(argv[++i]);
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            keys = atol(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: rlbench [--quick] [--ops N] [--keys N] [--json FILE] [--dir DIR]\n");
            return 2;
        }
    }
    if (ops < 1000 || keys < 1) {
        fprintf(stderr, "rlbench: --ops must be >= 1000 and --keys >= 1\n");
        return 2;
    }
    if (!dir && !(dir = mkdtemp(dirbuf))) {
        perror("rlbench: mkdtemp");
        return 1;
    }
    printf("rlbench: %ld ops per scenario, %ld keys, SQLite %s, librlstore %s\n", ops, keys,
           sqlite3_libversion(), rls_version_string());
    result rs[2] = {{.name = "sqlite floor (upsert)"}, {.name = "rls_check fixed_window"}};
    /* interleave two rounds of each so machine noise hits both alike */
    result a, b;
    if (bench_floor(dir, ops / 2, keys, &rs[0]) || bench_check(dir, ops / 2, keys, &rs[1]) ||
        bench_floor(dir, ops / 2, keys, &a) || bench_check(dir, ops / 2, keys, &b)) {
        fprintf(stderr, "rlbench: a scenario failed\n");
        return 1;
    }
    /* keep the better round of each (less disturbed by other load) */
    if ((double)a.ops / a.secs > (double)rs[0].ops / rs[0].secs) { a.name = rs[0].name; rs[0] = a; }
    if ((double)b.ops / b.secs > (double)rs[1].ops / rs[1].secs) { b.name = rs[1].name; rs[1] = b; }
    for (int i = 0; i < 2; i++)
        print_result(&rs[i], &rs[0]);
    printf("target: rls_check >= 0.90x floor: %s\n",
           ((double)rs[1].ops / rs[1].secs) >= 0.9 * ((double)rs[0].ops / rs[0].secs) ? "met"
                                                                                      : "NOT met");
    write_json(json, rs, 2);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dir == dirbuf && system(cmd) != 0)
        fprintf(stderr, "rlbench: could not remove %s\n", dir);
    return 0;
}
