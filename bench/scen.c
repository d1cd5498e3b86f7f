/*
 * scen.c - rlbench scenarios in one process: the SQLite floor, rls_check on
 * one and two limits and under every algorithm, the denied paths, FULL
 * durability, and the many-keys scenario (insert and steady phases, size
 * per state, rltop refreshing during load, RSS per handle).
 */
#include <rlstore.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

#define ACTION "signup"
#define RULES_HEAD "version: 1\nactions:\n  signup:\n    key: ip\n"

const char *const RULES_ONE =
    RULES_HEAD
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n";

static const char RULES_TWO[] =
    RULES_HEAD
    "    limits:\n"
    "      - { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d }\n"
    "      - { name: weekly, algorithm: fixed_window, limit: 1000000000, window: 1w }\n";

static const char RULES_DENY[] =
    RULES_HEAD
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1, window: 1d } ]\n";

/* ---- the floor -------------------------------------------------------- */

/*
 * One prepared "INSERT ... ON CONFLICT DO UPDATE ... RETURNING" per
 * autocommit transaction, WAL, on the same keys.  SQLite runs its
 * auto-checkpoint only when sqlite3_step() returns SQLITE_DONE, and this
 * loop resets after the RETURNING row: the floor never checkpoints and its
 * WAL grows for the whole round (rlstore keeps its WAL bounded).
 */
static int run_floor(const bench *b, const char *sync, long ops, long keys, result *r)
{
    char path[4096], key[64], sql[128];
    sqlite3 *db;
    sqlite3_stmt *st;
    snprintf(path, sizeof path, "%s/floor.db", b->dir);
    remove_db(path);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return -1;
    snprintf(sql, sizeof sql, "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;", sync);
    sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_exec(db, "CREATE TABLE c(key BLOB PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
                 NULL, NULL, NULL);
    if (sqlite3_prepare_v3(db, "INSERT INTO c(key, n) VALUES (?1, 1) ON CONFLICT(key) "
                               "DO UPDATE SET n = n + 1 RETURNING n",
                           -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    double *lat = malloc(sizeof *lat * (size_t)ops);
    int rc = lat ? 0 : -1;
    double t0 = now_us();
    for (long i = 0; rc == 0 && i < ops; i++) {
        key_of(key, sizeof key, i, keys);
        double a = now_us();
        sqlite3_bind_blob(st, 1, key, (int)strlen(key), SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW)
            rc = -1;
        sqlite3_reset(st);
        lat[i] = now_us() - a;
    }
    if (rc == 0)
        lat_summarize(r, lat, ops, (now_us() - t0) / 1e6);
    free(lat);
    sqlite3_finalize(st);
    sqlite3_close(db);
    remove_db(path);
    return rc;
}

/* ---- rlstore ---------------------------------------------------------- */

static rls_db *open_rules(const char *path, const char *rules, int durability)
{
    rls_db *db = NULL;
    rls_options o;
    rls_options_init(&o);
    o.durability = durability;
    remove_db(path);
    if (rls_open(&db, path, &o) != RLS_OK ||
        rls_rules_apply(db, rules, strlen(rules), "bench", NULL, NULL) != RLS_OK) {
        fprintf(stderr, "rlbench: %s: %s\n", path, rls_errmsg(db));
        rls_close(db);
        return NULL;
    }
    return db;
}

/* ops checks over `keys` keys from walk position `from`; each must be
 * admitted (expect 1) or denied (0).  Latencies into lat (may be NULL). */
static int run_checks(rls_db *db, long from, long ops, long keys, int expect, double *lat)
{
    char key[64];
    rls_result res;
    for (long i = 0; i < ops; i++) {
        key_of(key, sizeof key, from + i, keys);
        double a = lat ? now_us() : 0;
        if (rls_check(db, ACTION, key, 1, &res) != RLS_OK || res.allowed != expect) {
            fprintf(stderr, "rlbench: check of '%s' failed or decided wrongly (%s): %s\n",
                    key, res.allowed ? "admitted" : "denied", rls_errmsg(db));
            return -1;
        }
        if (lat)
            lat[i] = now_us() - a;
    }
    return 0;
}

/* Keys blocked by an operator in the blocked scenario: each block is an
 * admin change committed with an fsync. */
#define BLOCKED_KEYS 100

enum prep { PREP_NONE, PREP_OVER, PREP_BLOCK, PREP_OVER_ONCE };

typedef struct check_scen {
    const char *group, *id, *name;
    const char *rules;
    enum prep prep;
    int keys_kind;     /* 0: b->keys, 1: b->deny_keys, 2: BLOCKED_KEYS */
} check_scen;

/* One timed round of a check scenario on a fresh file. */
static int run_check_scen(const bench *b, const check_scen *s, long ops, result *r)
{
    char path[4096], key[64];
    long keys = s->keys_kind == 2 ? BLOCKED_KEYS : s->keys_kind ? b->deny_keys : b->keys;
    snprintf(path, sizeof path, "%s/check.db", b->dir);
    rls_db *db = open_rules(path, s->rules, RLS_DURABILITY_NORMAL);
    if (!db)
        return -1;
    int expect = s->prep == PREP_NONE;
    int rc = 0;
    if (s->prep == PREP_OVER || s->prep == PREP_OVER_ONCE) {
        /* every key over its limit (a day is longer than any run) ... */
        rc = run_checks(db, 0, keys, keys, 1, NULL);
        /* ... and denied once, as an abusive client's retries are */
        if (rc == 0 && s->prep == PREP_OVER)
            rc = run_checks(db, 0, keys, keys, 0, NULL);
    } else if (s->prep == PREP_BLOCK) {
        /* an operator's block on every key (each an audited admin change) */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        for (long i = 0; rc == 0 && i < keys; i++) {
            key_name(key, sizeof key, (unsigned long)i);
            if (rls_block_set_at(db, ACTION, key, 0, "bench", now) != RLS_OK)
                rc = -1;
        }
        if (rc == 0)
            rc = run_checks(db, 0, keys, keys, 0, NULL);
    }
    if (s->prep == PREP_OVER_ONCE)
        ops = keys;  /* the first denial of each key: the transaction path */
    double *lat = malloc(sizeof *lat * (size_t)ops);
    if (rc == 0 && lat) {
        double t0 = now_us();
        rc = run_checks(db, 0, ops, keys, expect, lat);
        if (rc == 0)
            lat_summarize(r, lat, ops, (now_us() - t0) / 1e6);
    } else {
        rc = -1;
    }
    free(lat);
    rls_close(db);
    remove_db(path);
    return rc;
}

#define ALGO_RULES(alg, extra)                                                  \
    RULES_HEAD "    limits: [ { name: r, algorithm: " alg ", limit: " extra " } ]\n"

static const check_scen CHECKS[] = {
    {"check", "check_fixed_window", "rls_check fixed_window", NULL, PREP_NONE, 0},
    {"check", "check_two_limits", "rls_check 2 limits (d+w)", RULES_TWO, PREP_NONE, 0},
    {"algorithm", "algo_sliding_window", "sliding_window",
     ALGO_RULES("sliding_window", "1000000000, window: 1d"), PREP_NONE, 0},
    {"algorithm", "algo_sliding_log", "sliding_log",
     ALGO_RULES("sliding_log", "10000, window: 1d"), PREP_NONE, 0},
    /* buckets: a slow rate (a state stays non-trivial for minutes rather
     * than being collected at once as equal to a fresh one) with a burst
     * that admits every check of the run */
    {"algorithm", "algo_token_bucket", "token_bucket",
     ALGO_RULES("token_bucket", "1000, window: 1d, burst: 1000000"), PREP_NONE, 0},
    {"algorithm", "algo_gcra", "gcra", ALGO_RULES("gcra", "1000, window: 1d, burst: 1000000"),
     PREP_NONE, 0},
    {"algorithm", "algo_leaky_bucket", "leaky_bucket",
     ALGO_RULES("leaky_bucket", "1000, window: 1d, burst: 1000000"), PREP_NONE, 0},
    {"denied", "denied_over_limit", "denied: over limit (cached)", RULES_DENY, PREP_OVER, 1},
    {"denied", "denied_blocked", "denied: blocked key (cached)", NULL, PREP_BLOCK, 2},
    {"denied", "denied_first", "denied: first denial (transaction)", RULES_DENY,
     PREP_OVER_ONCE, 0},
};
#define NCHECKS (int)(sizeof CHECKS / sizeof CHECKS[0])

/*
 * The floor and every check scenario, in two interleaved rounds of ops/2 on
 * fresh files, so that noise from other load hits all of them alike; each
 * keeps its better round.
 */
int scen_main(bench *b)
{
    /* bench_add may move the array: results are found by index */
    int base = b->nres;
    bench_add(b, "check", "floor", "sqlite floor (upsert, NORMAL)");
    for (int i = 0; i < NCHECKS; i++)
        bench_add(b, CHECKS[i].group, CHECKS[i].id, CHECKS[i].name);
    for (int round = 0; round < 2; round++) {
        result r;
        memset(&r, 0, sizeof r);
        if (run_floor(b, "NORMAL", b->ops / 2, b->keys, &r) != 0) {
            fprintf(stderr, "rlbench: the floor failed\n");
            return -1;
        }
        res_keep_better(&b->res[base], &r);
        for (int i = 0; i < NCHECKS; i++) {
            check_scen s = CHECKS[i];
            if (!s.rules)
                s.rules = RULES_ONE;
            memset(&r, 0, sizeof r);
            if (run_check_scen(b, &s, b->ops / 2, &r) != 0) {
                fprintf(stderr, "rlbench: scenario '%s' failed\n", s.id);
                return -1;
            }
            res_keep_better(&b->res[base + 1 + i], &r);
        }
    }
    return 0;
}

/* ---- FULL durability -------------------------------------------------- */

int scen_full(bench *b)
{
    int fi = b->nres;
    bench_add(b, "durability", "floor_full", "sqlite floor (upsert, FULL)");
    bench_add(b, "durability", "check_full", "rls_check fixed_window, FULL");
    for (int round = 0; round < 2; round++) {
        result r;
        memset(&r, 0, sizeof r);
        if (run_floor(b, "FULL", b->full_ops / 2, b->keys, &r) != 0)
            return -1;
        res_keep_better(&b->res[fi], &r);
        char path[4096];
        snprintf(path, sizeof path, "%s/full.db", b->dir);
        rls_db *db = open_rules(path, RULES_ONE, RLS_DURABILITY_FULL);
        long ops = b->full_ops / 2;
        double *lat = malloc(sizeof *lat * (size_t)ops);
        if (!db || !lat) {
            free(lat);
            rls_close(db);
            return -1;
        }
        double t0 = now_us();
        int rc = run_checks(db, 0, ops, b->keys, 1, lat);
        memset(&r, 0, sizeof r);
        if (rc == 0)
            lat_summarize(&r, lat, ops, (now_us() - t0) / 1e6);
        free(lat);
        rls_close(db);
        remove_db(path);
        if (rc != 0)
            return -1;
        res_keep_better(&b->res[fi + 1], &r);
    }
    return 0;
}

/* ---- many keys -------------------------------------------------------- */

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* Bytes of the database per state row, from SQLite's own page count. */
static int size_per_state(bench *b, const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    double rows = 0, pages = 0, page = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    const char *q[] = {"SELECT count(*) FROM rls_state", "PRAGMA page_count", "PRAGMA page_size"};
    double *out[] = {&rows, &pages, &page};
    for (int i = 0; i < 3; i++) {
        if (sqlite3_prepare_v2(db, q[i], -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            *out[i] = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    if (rows <= 0)
        return -1;
    double per = pages * page / rows;
    char name[96];
    snprintf(name, sizeof name, "database bytes per (limit, key) state at %.0f states", rows);
    bench_metric(b, "bytes_per_state", name, per, "bytes", "<= 100", per <= 100);
    printf("%-44s %8.1f bytes (%.0f pages of %.0f bytes, %.0f rows)\n",
           "size per (limit, key) state", per, pages, page, rows);
    return 0;
}

/* Library RSS per open handle, in a child: each handle does 2,000 checks
 * over the many keys so its page cache is as full as it gets. */
static int rss_per_handle(bench *b, const char *path)
{
    enum { H = 4 };
    double *out = shared_alloc(sizeof(double) * 2);
    if (!out)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        rls_db *h[H] = {0};
        long r0 = rss_kb(), r1 = 0;
        for (int i = 0; i < H; i++) {
            if (rls_open(&h[i], path, NULL) != RLS_OK ||
                run_checks(h[i], (long)i * 7919, 2000, b->many_keys, 1, NULL) != 0)
                _exit(1);
            if (i == 0)
                r1 = rss_kb();
        }
        long r4 = rss_kb();
        out[0] = (double)(r1 - r0) / 1024.0;
        out[1] = (double)(r4 - r1) / (H - 1) / 1024.0;
        for (int i = 0; i < H; i++)
            rls_close(h[i]);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int rc = -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        bench_metric(b, "rss_first_handle", "RSS of the first open handle (library, connection, caches)",
                     out[0], "MB", "<= 4", out[0] <= 4.0);
        bench_metric(b, "rss_per_handle", "RSS of each further open handle", out[1], "MB",
                     "<= 4", out[1] <= 4.0);
        printf("%-44s %8.2f MB first, %.2f MB each further\n", "RSS per open handle",
               out[0], out[1]);
        rc = 0;
    }
    shared_free(out, sizeof(double) * 2);
    return rc;
}

/* Checks for `secs` seconds; returns checks/s (< 0 on failure). */
static double timed_rate(rls_db *db, long *pos, long keys, double secs)
{
    double t0 = now_us(), end = t0 + secs * 1e6, t;
    long n = 0;
    do {
        if (run_checks(db, *pos, 256, keys, 1, NULL) != 0)
            return -1;
        *pos += 256;
        n += 256;
        t = now_us();
    } while (t < end);
    return (double)n / ((t - t0) / 1e6);
}

/* The rltop built next to rlbench (build/rltop), or NULL. */
static const char *find_rltop(const bench *b, char *buf, size_t size)
{
    const char *slash = strrchr(b->self, '/');
    if (!slash)
        return NULL;
    snprintf(buf, size, "%.*s/../rltop", (int)(slash - b->self), b->self);
    return access(buf, X_OK) == 0 ? buf : NULL;
}

/* A refresher without rltop: rls_usage_at every second, as rltop's model
 * does for its key table. */
static void usage_loop(const char *path, int n)
{
    rls_db *db = NULL;
    rls_options o;
    rls_options_init(&o);
    o.read_only = 1;
    if (rls_open(&db, path, &o) != RLS_OK)
        _exit(1);
    for (int i = 0; i < n; i++) {
        rls_usage_query q = {sizeof q, NULL, NULL, RLS_SORT_USED, 0, 20};
        rls_rows *rows = NULL;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (rls_usage_at(db, &q, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, &rows) ==
            RLS_OK)
            rls_rows_free(rows);
        if (i + 1 < n)
            sleep(1);
    }
    rls_close(db);
    _exit(0);
}

/*
 * Check throughput with and without a refresher reading the same file
 * (rltop -b once a second, else rls_usage_at), and the refresher's CPU per
 * refresh (start-up included).  Phases: without, with, without.
 */
static int refresh_during_load(bench *b, rls_db *db, const char *path, long *pos)
{
    double secs = b->quick ? 2.0 : 4.0;
    int n = (int)secs + 1;
    char buf[4200], nbuf[16];
    const char *rltop = find_rltop(b, buf, sizeof buf);
    double a1 = timed_rate(db, pos, b->many_keys, secs);
    pid_t pid = fork();
    if (pid == 0) {
        if (rltop) {
            snprintf(nbuf, sizeof nbuf, "%d", n);
            if (!freopen("/dev/null", "w", stdout)) { /* keep going */ }
            execl(rltop, "rltop", "-b", "-n", nbuf, "-d", "1", "--db", path, (char *)NULL);
            _exit(127);
        }
        usage_loop(path, n);
    }
    double with = timed_rate(db, pos, b->many_keys, secs);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    wait4(pid, &status, 0, &ru);
    double a2 = timed_rate(db, pos, b->many_keys, secs);
    if (a1 < 0 || a2 < 0 || with < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rlbench: refresher failed (status %d)\n", status);
        return -1;
    }
    double without = (a1 + a2) / 2;
    double drop = 100.0 * (1.0 - with / without);
    double cpu_ms = ((double)ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
                     (double)ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3) / n;
    char name[96];
    snprintf(name, sizeof name, "check throughput drop while %s refreshes each second",
             rltop ? "rltop -b" : "rls_usage_at");
    bench_metric(b, "refresh_drop", name, drop, "%", "<= 5", drop <= 5.0);
    snprintf(name, sizeof name, "%s CPU per refresh at %ld keys (start-up included)",
             rltop ? "rltop -b" : "rls_usage_at", b->many_keys);
    bench_metric(b, "refresh_cpu", name, cpu_ms, "ms", "<= 50", cpu_ms <= 50.0);
    printf("%-44s %.0f -> %.0f checks/s (%+.1f %%), refresher %.1f ms CPU per refresh (%s)\n",
           "refresher during load", without, with, -drop, cpu_ms,
           rltop ? "rltop -b" : "rls_usage_at");
    return 0;
}

int scen_many_keys(bench *b)
{
    char path[4096], id[48], name[80];
    long keys = b->many_keys;
    snprintf(path, sizeof path, "%s/many.db", b->dir);
    rls_db *db = open_rules(path, RULES_ONE, RLS_DURABILITY_NORMAL);
    if (!db)
        return -1;
    long steady = b->ops / 2;
    double *lat = malloc(sizeof *lat * (size_t)(keys > steady ? keys : steady));
    if (!lat) {
        rls_close(db);
        return -1;
    }
    char kn[32];
    if (keys >= 1000000 && keys % 1000000 == 0)
        snprintf(kn, sizeof kn, "%ldM", keys / 1000000);
    else if (keys >= 1000 && keys % 1000 == 0)
        snprintf(kn, sizeof kn, "%ldk", keys / 1000);
    else
        snprintf(kn, sizeof kn, "%ld", keys);

    snprintf(id, sizeof id, "many_insert");
    snprintf(name, sizeof name, "fixed_window %s keys: insert phase", kn);
    int ri = b->nres;
    bench_add(b, "keys", id, name);
    double t0 = now_us();
    int rc = run_checks(db, 0, keys, keys, 1, lat);
    if (rc == 0)
        lat_summarize(&b->res[ri], lat, keys, (now_us() - t0) / 1e6);

    snprintf(name, sizeof name, "fixed_window %s keys: steady phase", kn);
    ri = b->nres;
    bench_add(b, "keys", "many_steady", name);
    if (rc == 0) {
        t0 = now_us();
        rc = run_checks(db, keys, steady, keys, 1, lat);
        if (rc == 0)
            lat_summarize(&b->res[ri], lat, steady, (now_us() - t0) / 1e6);
    }
    free(lat);
    long pos = keys + steady;
    if (rc == 0)
        rc = refresh_during_load(b, db, path, &pos);
    rls_close(db);
    if (rc == 0)
        rc = size_per_state(b, path);
    if (rc == 0)
        rc = rss_per_handle(b, path);
    remove_db(path);
    return rc;
}
