/*
 * threads.c - the "threads" group (issue #19, item 2): one handle opened
 * with rls_options.thread_safe, shared by 1 and by 8 threads, under the
 * handle's durability `normal` and `full`.  Group commit shares one
 * transaction (one fsync under `full`) among the checks that wait while
 * one runs: targets 8 threads >= 3x one thread under `normal`, >= 5x under
 * `full` (report.c), each thread's every latency in the p99.9.  Each
 * thread checks keys of its own (the fixed_window_10k rule and key walk),
 * every check admitted.  threads_8_mem: the same walk on a `durability:
 * memory` limit (its table in a folder of its own under /dev/shm), 8
 * threads on one thread-safe handle, beside mem_check (one plain handle).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <rlstore.h>
#include "bench.h"

#define THREADS_MAX 8

static const char RULES_MEM[] =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    limits: [ { name: m, algorithm: fixed_window, limit: 1000000000, window: 1d,"
    " durability: memory } ]\n";

/* What the threads check: the rules and, for memory limits, the folder of
 * the table (NULL: none). */
struct tsetup {
    const char *rules;
    const char *shm_dir;
};

/* Removes the table files of dir and dir itself. */
static void shm_dir_remove(const char *dir)
{
    char path[4600];
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

struct tworker {
    rls_db *db;
    const bench_cfg *cfg;
    int id, nthreads;
    long ops;
    lat_rec lat;
    char err[200];
};

static void *tworker_run(void *arg)
{
    struct tworker *w = arg;
    char key[64];
    rls_result res;
    for (long i = 0; i < w->ops; i++) {
        key_of(key, sizeof key, i * w->nthreads + w->id, w->cfg->keys);
        double a = now_us();
        int rc = rls_check(w->db, "signup", key, 1, &res);
        w->lat.v[w->lat.n++] = now_us() - a;
        if (rc != RLS_OK || !res.allowed) {
            snprintf(w->err, sizeof w->err, "thread %d check %ld: %s (%s)", w->id, i,
                     rls_strerror(rc), rls_errmsg(w->db));
            return NULL;
        }
    }
    return NULL;
}

/* nthreads threads, ops checks in all, on one thread-safe handle. */
static int run_threads(const bench_cfg *cfg, const struct tsetup *ts, int nthreads,
                       int durability, long ops, bench_lat *out, char *err, size_t errsize)
{
    char path[4096];
    rls_db *db = NULL;
    rls_options o;
    struct tworker w[THREADS_MAX];
    pthread_t th[THREADS_MAX];
    lat_rec all = {0};
    int rc, ret = -1, started = 0;
    memset(w, 0, sizeof w);
    snprintf(path, sizeof path, "%s/threads.db", cfg->dir);
    remove_db(path);
    rls_options_init(&o);
    o.thread_safe = 1;
    o.durability = durability;
    o.shm_dir = ts->shm_dir;
    if ((rc = rls_open(&db, path, &o)) != RLS_OK) {
        snprintf(err, errsize, "open: %s: %s", rls_strerror(rc), rls_errmsg(NULL));
        goto out;
    }
    if ((rc = rls_rules_apply_at(db, ts->rules, strlen(ts->rules), "bench", NULL, wall_ms(),
                                 NULL)) != RLS_OK) {
        snprintf(err, errsize, "rules: %s: %s", rls_strerror(rc), rls_errmsg(db));
        goto out;
    }
    if (lat_init(&all, ops) != 0)
        goto oom;
    for (int i = 0; i < nthreads; i++) {
        w[i] = (struct tworker){db, cfg, i, nthreads, ops / nthreads, {0}, ""};
        if (lat_init(&w[i].lat, w[i].ops) != 0)
            goto oom;
    }
    double t0 = now_us();
    for (; started < nthreads; started++)
        if (pthread_create(&th[started], NULL, tworker_run, &w[started]) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    double secs = (now_us() - t0) / 1e6;
    for (int i = 0; i < nthreads; i++) {
        if (w[i].err[0] || i >= started) {
            snprintf(err, errsize, "%s", w[i].err[0] ? w[i].err : "cannot start a thread");
            goto out;
        }
        for (long j = 0; j < w[i].lat.n; j++)
            all.v[all.n++] = w[i].lat.v[j];
    }
    lat_summary(&all, secs, out);
    ret = 0;
    goto out;
oom:
    snprintf(err, errsize, "out of memory");
out:
    for (int i = 0; i < nthreads; i++)
        lat_free(&w[i].lat);
    lat_free(&all);
    rls_close(db);
    remove_db(path);
    return ret;
}

void threads_register(const bench_cfg *c)
{
    (void)c;
    res_add("threads_1", "threads", "rls_check, 1 thread, thread-safe handle");
    res_add("threads_8", "threads", "rls_check, 8 threads on one thread-safe handle");
    res_add("threads_1_full", "threads", "rls_check FULL, 1 thread, thread-safe handle");
    res_add("threads_8_full", "threads", "rls_check FULL, 8 threads on one thread-safe handle");
    res_add("threads_8_mem", "threads",
            "rls_check, memory-only, 8 threads on one thread-safe handle");
}

static void one_with(const bench_cfg *cfg, const struct tsetup *ts, const char *id, int n,
                     int durability, long ops)
{
    char err[300];
    bench_lat lat;
    bench_result *r = res_find(id);
    for (int round = 0; round < cfg->rounds; round++)
        if (run_threads(cfg, ts, n, durability, ops, &lat, err, sizeof err) != 0) {
            res_status(r, RES_FAILED, "%s", err);
            break;
        } else if (!r->has_lat || lat_rate(&lat) > lat_rate(&r->lat)) {
            res_set_lat(r, &lat);
        }
    report_line(r);
}

static void one(const bench_cfg *cfg, const char *id, int n, int durability, long ops)
{
    const struct tsetup ts = {RULES_ONE, NULL};
    one_with(cfg, &ts, id, n, durability, ops);
}

/* threads_8_mem: as many checks as mem_check makes (memory.c: ops x 10). */
static void one_mem(const bench_cfg *cfg)
{
    char dir[4200];
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : cfg->dir;
    snprintf(dir, sizeof dir, "%s/rlbench-threads-%ld", base, (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        res_status(res_find("threads_8_mem"), RES_FAILED, "mkdir %s failed", dir);
        report_line(res_find("threads_8_mem"));
        return;
    }
    const struct tsetup ts = {RULES_MEM, dir};
    one_with(cfg, &ts, "threads_8_mem", 8, RLS_DURABILITY_NORMAL, cfg->ops * 10);
    shm_dir_remove(dir);
}

void bench_threads(const bench_cfg *cfg)
{
    long full = cfg->full_ops * 2;
    one(cfg, "threads_1", 1, RLS_DURABILITY_NORMAL, cfg->ops / 2);
    one(cfg, "threads_8", 8, RLS_DURABILITY_NORMAL, cfg->ops / 2);
    one(cfg, "threads_1_full", 1, RLS_DURABILITY_FULL, full);
    one(cfg, "threads_8_full", 8, RLS_DURABILITY_FULL, full * 4);
    one_mem(cfg);
}
