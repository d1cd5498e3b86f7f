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

static void child(const char *path, int c, int nproc, long ops, long keys, int ready_fd,
                  int go_fd, int res_fd)
{
    child_report rep;
    rls_db *db = NULL;
    rls_result res;
    lat_rec lat = {0};
    char key[64], byte = 1;
    memset(&rep, 0, sizeof rep);
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK)
        rc = rls_check(db, "signup", "10.255.255.255", 1, &res); /* warm-up */
    if (rc != RLS_OK || lat_init(&lat, ops) != 0) {
        snprintf(rep.err, sizeof rep.err, "process %d: %s: %s", c, rls_strerror(rc),
                 rls_errmsg(db));
        rep.errors = 1;
    }
    if (write(ready_fd, &byte, 1) != 1)
        _exit(1);
    if (read(go_fd, &byte, 1) < 0) /* EOF when the parent starts everyone */
        _exit(1);
    rep.t_start = now_us();
    for (long i = 0; i < ops && !rep.errors; i++) {
        key_of(key, sizeof key, i * nproc + c, keys);
        double a = now_us();
        rc = rls_check(db, "signup", key, 1, &res);
        lat.v[lat.n++] = now_us() - a;
        if (rc != RLS_OK || !res.allowed) {
            if (!rep.errors)
                snprintf(rep.err, sizeof rep.err, "process %d, check %ld: %s: %s", c, i,
                         rls_strerror(rc), rls_errmsg(db));
            rep.errors++;
        }
    }
    rep.t_end = now_us();
    if (!rep.errors)
        lat_summary(&lat, (rep.t_end - rep.t_start) / 1e6, &rep.lat);
    rls_close(db);
    lat_free(&lat);
    if (write(res_fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(1);
    _exit(0);
}

int bench_multi(const bench_cfg *cfg, int nproc, long ops, bench_result *r)
{
    char path[4096];
    rls_db *db = NULL;
    int ready[2] = {-1, -1}, go[2] = {-1, -1}, res[2] = {-1, -1};
    pid_t pids[BENCH_PROCS_MAX];
    int started = 0, ret = -1;
    long per = ops / nproc;
    snprintf(path, sizeof path, "%s/multi-%d.db", cfg->dir, nproc);
    remove_db(path);
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK)
        rc = rls_rules_apply(db, RULES_ONE, strlen(RULES_ONE), "bench", NULL, NULL);
    if (rc != RLS_OK) {
        res_status(r, RES_FAILED, "setup: %s: %s", rls_strerror(rc), rls_errmsg(db));
        rls_close(db);
        return -1;
    }
    rls_close(db);
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(res) != 0) {
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
            child(path, c, nproc, per, cfg->keys, ready[1], go[0], res[1]);
        }
        pids[started++] = p;
    }
    close(ready[1]);
    ready[1] = -1;
    close(res[1]);
    res[1] = -1;
    for (int c = 0; c < nproc; c++) {
        char b;
        if (read_full(ready[0], &b, 1) != 0) {
            res_status(r, RES_FAILED, "a process died before the start");
            goto out;
        }
    }
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
        worst_p50 = rep.lat.p50 > worst_p50 ? rep.lat.p50 : worst_p50;
        worst_p99 = rep.lat.p99 > worst_p99 ? rep.lat.p99 : worst_p99;
        worst_p999 = rep.lat.p999 > worst_p999 ? rep.lat.p999 : worst_p999;
        worst_max = rep.lat.max > worst_max ? rep.lat.max : worst_max;
        if (r->nprocs < BENCH_PROCS_MAX)
            r->procs[r->nprocs++] = rep.lat;
    }
    bench_lat all = {total, (last - first) / 1e6, worst_p50, worst_p99, worst_p999, worst_max};
    res_set_lat(r, &all);
    res_extra(r, "processes", nproc, "");
    ret = 0;
out:
    if (go[1] >= 0)
        close(go[1]); /* lets waiting children run (and fail) rather than hang */
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
    }
    remove_db(path);
    return ret;
}
