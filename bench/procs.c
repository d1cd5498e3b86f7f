/*
 * procs.c - 1, 2 and 4 processes checking on one database file at once.
 *
 * Each process opens its own handle after fork(), waits for a common start,
 * runs its share of the operations (its own stretch of the key walk) without
 * think time, and writes its latencies to memory shared with the parent,
 * which merges them into one histogram.  Throughput is every operation over
 * the time from the first start to the last end.
 */
#include <rlstore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench.h"

typedef struct span {
    double start, end;
    int failed;
} span;

static int run_procs(const bench *b, int nproc, long ops, result *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/procs.db", b->dir);
    remove_db(path);
    rls_db *db = NULL;
    if (rls_open(&db, path, NULL) != RLS_OK ||
        rls_rules_apply(db, RULES_ONE, strlen(RULES_ONE), "bench", NULL, NULL) != RLS_OK) {
        fprintf(stderr, "rlbench: %s\n", rls_errmsg(db));
        rls_close(db);
        return -1;
    }
    rls_close(db);

    long share = ops / nproc;
    size_t latsz = sizeof(double) * (size_t)(share * nproc);
    double *lat = shared_alloc(latsz);
    span *sp = shared_alloc(sizeof *sp * (size_t)nproc);
    int go[2];
    if (!lat || !sp || pipe(go) != 0) {
        shared_free(lat, latsz);
        shared_free(sp, sizeof *sp * (size_t)nproc);
        return -1;
    }
    pid_t pids[16];
    for (int p = 0; p < nproc; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            char key[64], c;
            rls_result res;
            rls_db *h = NULL;
            close(go[1]);
            if (rls_open(&h, path, NULL) != RLS_OK)
                _exit(1);
            if (read(go[0], &c, 1) < 0) { /* EOF: start */ }
            double *mine = lat + (size_t)p * (size_t)share;
            sp[p].start = now_us();
            for (long i = 0; i < share; i++) {
                key_of(key, sizeof key, (long)p * share + i, b->keys);
                double a = now_us();
                if (rls_check(h, "signup", key, 1, &res) != RLS_OK || !res.allowed) {
                    fprintf(stderr, "rlbench: process %d: %s\n", p, rls_errmsg(h));
                    sp[p].failed = 1;
                    break;
                }
                mine[i] = now_us() - a;
            }
            sp[p].end = now_us();
            rls_close(h);
            _exit(sp[p].failed);
        }
    }
    close(go[0]);
    usleep(100000);  /* every child has opened its handle */
    close(go[1]);    /* start */
    int failed = 0;
    for (int p = 0; p < nproc; p++) {
        int status = 0;
        waitpid(pids[p], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || sp[p].failed)
            failed = 1;
    }
    if (!failed) {
        double t0 = sp[0].start, t1 = sp[0].end;
        for (int p = 1; p < nproc; p++) {
            if (sp[p].start < t0)
                t0 = sp[p].start;
            if (sp[p].end > t1)
                t1 = sp[p].end;
        }
        lat_summarize(r, lat, share * nproc, (t1 - t0) / 1e6);
    }
    shared_free(lat, latsz);
    shared_free(sp, sizeof *sp * (size_t)nproc);
    remove_db(path);
    return failed ? -1 : 0;
}

int procs_run(bench *b)
{
    static const int N[] = {1, 2, 4};
    int base = b->nres;
    char id[48], name[80];
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "procs_%d", N[i]);
        snprintf(name, sizeof name, "%d process%s on one file", N[i], N[i] > 1 ? "es" : "");
        bench_add(b, "processes", id, name);
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            result r;
            memset(&r, 0, sizeof r);
            if (run_procs(b, N[i], b->ops / 2, &r) != 0) {
                fprintf(stderr, "rlbench: %d processes failed\n", N[i]);
                return -1;
            }
            res_keep_better(&b->res[base + i], &r);
        }
    }
    return 0;
}
