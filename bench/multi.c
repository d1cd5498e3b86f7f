/*
 * multi.c - 1, 2 or 4 processes checking on one database file at once.
 *
 * The parent creates the database and applies the one-rule fixed-window
 * rules, then forks the processes.  Each opens its own handle, makes one
 * warm-up check, reports ready and waits for the common start; then it runs
 * ops / nproc checks (process c takes operations c, c + nproc, ... of the
 * single-process key walk, so together they make the same sequence) and
 * sends its figures back through a pipe.  Total throughput is all checks
 * over the span from the first start to the last end; the latency figures
 * of the scenario are the worst of the processes (each process's own are
 * kept too).
 *
 * bench_procs is the same on any database whose rules are already applied:
 * a file, or a PostgreSQL URI (pg_backend.c, one connection per process),
 * with rls_check_at on noon_clock_ms() if asked.  With PROCS_WARM each
 * process first checks, untimed, the keys it will check (the steady state
 * of a process that has seen its keys); with PROCS_SHARED every process
 * walks the same keys from its own starting point, so each key is written
 * by every process in turn (hosts sharing keys), instead of the keys of
 * one process being nobody else's.  Each process also reports
 * the CPU time of its timed loop; a database server's CPU time is sampled
 * after the start and again once every process has reported, while every
 * handle is still open (processes close theirs only after that).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rlstore.h>
#include "bench.h"

typedef struct child_report {
    bench_lat lat;
    double t_start, t_end;  /* now_us() */
    double cpu_us;          /* this process's CPU time over the timed loop */
    long errors;
    char err[200];
} child_report;

static int read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The key index of process c's i-th check of ops: a share of its own
 * (c, c + nproc, ...), or with PROCS_SHARED the same span of keys as every
 * other process, from a starting point of its own (every key of the span
 * checked by every process, at different times). */
static long key_index(long i, int c, int nproc, long keys, long ops, int flags)
{
    long span = ops < keys ? ops : keys;
    return flags & PROCS_SHARED ? (i + c * (span / nproc)) % span : i * nproc + c;
}

static int one_check(rls_db *db, const char *key, int vclock, rls_result *res)
{
    return vclock ? rls_check_at(db, "signup", key, 1, noon_clock_ms(), res)
                  : rls_check(db, "signup", key, 1, res);
}

static void child(const char *path, int c, int nproc, long ops, long keys, int flags,
                  int ready_fd, int go_fd, int res_fd, int done_fd)
{
    int vclock = flags & PROCS_VCLOCK;
    child_report rep;
    rls_db *db = NULL;
    rls_result res;
    lat_rec lat = {0};
    char key[64], byte = 1;
    memset(&rep, 0, sizeof rep);
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK) /* warm-up */
        rc = one_check(db, "10.255.255.255", vclock, &res);
    /* the keys it will check, each once */
    long distinct = flags & PROCS_SHARED ? keys : (keys + nproc - 1) / nproc;
    for (long i = 0; rc == RLS_OK && flags & PROCS_WARM && i < ops && i < distinct; i++) {
        key_of(key, sizeof key, key_index(i, c, nproc, keys, ops, flags), keys);
        rc = one_check(db, key, vclock, &res);
    }
    if (rc != RLS_OK || lat_init(&lat, ops) != 0) {
        snprintf(rep.err, sizeof rep.err, "process %d: %s: %s", c, rls_strerror(rc),
                 rls_errmsg(db));
        rep.errors = 1;
    }
    if (write(ready_fd, &byte, 1) != 1)
        _exit(1);
    if (read(go_fd, &byte, 1) < 0) /* EOF when the parent starts everyone */
        _exit(1);
    double c0 = cpu_self_us();
    rep.t_start = now_us();
    for (long i = 0; i < ops && !rep.errors; i++) {
        key_of(key, sizeof key, key_index(i, c, nproc, keys, ops, flags), keys);
        double a = now_us();
        rc = one_check(db, key, vclock, &res);
        lat.v[lat.n++] = now_us() - a;
        if (rc != RLS_OK || !res.allowed) {
            if (!rep.errors)
                snprintf(rep.err, sizeof rep.err, "process %d, check %ld: %s: %s", c, i,
                         rls_strerror(rc), rls_errmsg(db));
            rep.errors++;
        }
    }
    rep.t_end = now_us();
    rep.cpu_us = cpu_self_us() - c0;
    if (!rep.errors)
        lat_summary(&lat, (rep.t_end - rep.t_start) / 1e6, &rep.lat);
    lat_free(&lat);
    if (write(res_fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(1);
    /* the handle stays open until the parent has sampled the server */
    while (read(done_fd, &byte, 1) < 0 && errno == EINTR)
        ;
    rls_close(db);
    _exit(0);
}

int bench_multi(const bench_cfg *cfg, int nproc, long ops, bench_result *r)
{
    char path[4096];
    rls_db *db = NULL;
    snprintf(path, sizeof path, "%s/multi-%d.db", cfg->dir, nproc);
    remove_db(path);
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK)
        rc = rls_rules_apply(db, RULES_ONE, strlen(RULES_ONE), "bench", NULL, NULL);
    if (rc != RLS_OK) {
        res_status(r, RES_FAILED, "setup: %s: %s", rls_strerror(rc), rls_errmsg(db));
        rls_close(db);
        remove_db(path);
        return -1;
    }
    rls_close(db);
    int ret = bench_procs(cfg, path, nproc, ops, 0, NULL, r, NULL);
    remove_db(path);
    return ret;
}

int bench_procs(const bench_cfg *cfg, const char *path, int nproc, long ops, int flags,
                int (*server_cpu)(double *us), bench_result *r, cpu_use *cpu)
{
    int ready[2] = {-1, -1}, go[2] = {-1, -1}, res[2] = {-1, -1}, done[2] = {-1, -1};
    pid_t pids[BENCH_PROCS_MAX];
    int started = 0, ret = -1, have_srv = 0;
    long per = ops / nproc;
    double srv0 = 0, srv1 = 0, client_cpu = 0;
    if (nproc < 1 || nproc > BENCH_PROCS_MAX) {
        res_status(r, RES_FAILED, "%d processes: at most %d", nproc, BENCH_PROCS_MAX);
        return -1;
    }
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(res) != 0 || pipe(done) != 0) {
        res_status(r, RES_FAILED, "pipe: %s", strerror(errno));
        goto out;
    }
    fflush(stdout);
    fflush(stderr);
    for (int c = 0; c < nproc; c++) {
        pid_t p = fork();
        if (p < 0) {
            res_status(r, RES_FAILED, "fork: %s", strerror(errno));
            goto out;
        }
        if (p == 0) {
            close(ready[0]);
            close(go[1]);
            close(res[0]);
            close(done[1]);
            child(path, c, nproc, per, cfg->keys, flags, ready[1], go[0], res[1], done[0]);
        }
        pids[started++] = p;
    }
    close(ready[1]);
    ready[1] = -1;
    close(res[1]);
    res[1] = -1;
    close(done[0]);
    done[0] = -1;
    for (int c = 0; c < nproc; c++) {
        char b;
        if (read_full(ready[0], &b, 1) != 0) {
            res_status(r, RES_FAILED, "a process died before the start");
            goto out;
        }
    }
    have_srv = server_cpu && server_cpu(&srv0) == 0;
    close(go[1]); /* start */
    go[1] = -1;
    double first = 0, last = 0, worst_p50 = 0, worst_p99 = 0, worst_p999 = 0, worst_max = 0;
    long total = 0;
    r->nprocs = 0;
    for (int c = 0; c < nproc; c++) {
        child_report rep;
        if (read_full(res[0], &rep, sizeof rep) != 0) {
            res_status(r, RES_FAILED, "a process died during the run");
            goto out;
        }
        if (rep.errors) {
            res_status(r, RES_FAILED, "%ld failed checks; first: %s", rep.errors, rep.err);
            goto out;
        }
        if (c == 0 || rep.t_start < first)
            first = rep.t_start;
        if (rep.t_end > last)
            last = rep.t_end;
        total += rep.lat.ops;
        client_cpu += rep.cpu_us;
        worst_p50 = rep.lat.p50 > worst_p50 ? rep.lat.p50 : worst_p50;
        worst_p99 = rep.lat.p99 > worst_p99 ? rep.lat.p99 : worst_p99;
        worst_p999 = rep.lat.p999 > worst_p999 ? rep.lat.p999 : worst_p999;
        worst_max = rep.lat.max > worst_max ? rep.lat.max : worst_max;
        if (r->nprocs < BENCH_PROCS_MAX)
            r->procs[r->nprocs++] = rep.lat;
    }
    have_srv = have_srv && server_cpu(&srv1) == 0;
    bench_lat all = {total, (last - first) / 1e6, worst_p50, worst_p99, worst_p999, worst_max};
    res_set_lat(r, &all);
    res_extra(r, "processes", nproc, "");
    if (cpu) {
        cpu->client_us = client_cpu;
        cpu->server_us = have_srv ? srv1 - srv0 : -1;
    }
    ret = 0;
out:
    if (go[1] >= 0)
        close(go[1]); /* lets waiting children run (and fail) rather than hang */
    if (done[1] >= 0)
        close(done[1]); /* lets them close their handles and exit */
    done[1] = -1;
    for (int c = 0; c < started; c++) {
        if (ret != 0)
            kill(pids[c], SIGKILL);
        waitpid(pids[c], NULL, 0);
    }
    for (int i = 0; i < 2; i++) {
        if (ready[i] >= 0)
            close(ready[i]);
        if (go[i] >= 0)
            close(go[i]);
        if (res[i] >= 0)
            close(res[i]);
        if (done[i] >= 0)
            close(done[i]);
    }
    return ret;
}
