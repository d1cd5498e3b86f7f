/*
 * shm_bench.c - nanoseconds per locked update of the shared-memory table
 * (storage/shm/, issue #19): lock, read, write, unlock, as a memory-class
 * check will do around core's decision.  One process on one key, on two
 * keys at once (an action of two limits), on 100,000 keys (cache misses),
 * a read-only peek; then two processes on one key (contended) and on
 * separate keys (in parallel); and for scale, the floor of one
 * process-shared mutex around a counter (nginx's zone is one such lock);
 * and how long a process waiting for a lock waits once the process that
 * held it is SIGKILLed inside the critical section (issue #19's target:
 * at most 10 ms).
 * Prints figures only: no verdicts (the targets of issue #19 compare whole
 * checks, in rlbench, once the table is wired in).
 *
 * Usage: shm_bench [OPS]   (default 2,000,000 per measurement)
 * The table lives under /dev/shm when it exists, else TMPDIR or /tmp.
 * Linked to librlstore.a: the table's API is internal (rls__).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "rlstore.h"
#include "shm/shmtable.h"

static const rls__shm_geom G = { 262144, 64, 0 };
static char path[512];
static long ops = 2000000;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static rls__shm *open_table(void)
{
    rls__shm *t = NULL;
    char why[200];
    int rc = rls__shm_open(&t, path, &G, why, sizeof why);
    if (rc != RLS_OK) {
        fprintf(stderr, "shm_bench: cannot open '%s': %s (%s)\n", path, rls_errname(rc), why);
        exit(1);
    }
    return t;
}

/* One transaction: +1 on each item's count (a stand-in for a decision). */
static void update(rls__shm *t, const rls__shm_item *its, size_t n)
{
    rls__shm_txn tx;
    if (rls__shm_lock(t, its, n, 0, &tx) != RLS_OK) {
        fprintf(stderr, "shm_bench: lock failed\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        algo_state s;
        memset(&s, 0, sizeof s);
        rls__shm_read(&tx, i, &s);
        s.a++;
        s.last_ms = s.a;
        s.expires_ms = INT64_MAX;
        rls__shm_write(&tx, i, &s);
    }
    rls__shm_unlock(&tx);
}

static void peek(rls__shm *t, const rls__shm_item *its)
{
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    rls__shm_lock_peek(t, its, 1, 0, &tx);
    rls__shm_read(&tx, 0, &s);
    rls__shm_unlock(&tx);
}

static void report(const char *what, double ns, long n)
{
    printf("  %-46s %8.1f ns/update  %6.2f M/s\n", what, ns / n, n / ns * 1e3);
}

static void one_process(void)
{
    rls__shm *t = open_table();
    rls__shm_item two[2] = { { 1, ALGO_GCRA, "203.0.113.7", 11 }, { 2, ALGO_GCRA, "203.0.113.7", 11 } };
    char (*keys)[24] = malloc(100000 * sizeof *keys);
    for (int i = 0; i < 100000; i++)
        snprintf(keys[i], sizeof keys[i], "user:%d", i);
    double t0 = now_ns();
    for (long i = 0; i < ops; i++)
        update(t, two, 1);
    report("1 process, one key", now_ns() - t0, ops);
    t0 = now_ns();
    for (long i = 0; i < ops; i++)
        update(t, two, 2);
    report("1 process, two keys in one transaction", now_ns() - t0, ops);
    t0 = now_ns();
    for (long i = 0; i < ops; i++) {
        const char *k = keys[(i * 7919) % 100000];
        rls__shm_item it = { 3, ALGO_GCRA, k, strlen(k) };
        update(t, &it, 1);
    }
    report("1 process, 100,000 keys", now_ns() - t0, ops);
    t0 = now_ns();
    for (long i = 0; i < ops; i++)
        peek(t, two);
    report("1 process, peek (lock, read, unlock)", now_ns() - t0, ops);
    free(keys);
    rls__shm_close(t);
}

/* Two processes, each ops updates of key a (same) or its own (apart). */
static void two_processes(int apart)
{
    int go[2];
    if (pipe(go) != 0)
        exit(1);
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        pid[p] = fork();
        if (pid[p] == 0) {
            rls__shm *t = open_table();
            const char *k = apart && p ? "198.51.100.1" : "198.51.100.0";
            rls__shm_item it = { 4, ALGO_GCRA, k, strlen(k) };
            char c;
            close(go[1]);
            while (read(go[0], &c, 1) > 0) {
            }
            for (long i = 0; i < ops; i++)
                update(t, &it, 1);
            rls__shm_close(t);
            _exit(0);
        }
    }
    close(go[0]);
    double t0 = now_ns();
    close(go[1]);
    for (int p = 0; p < 2; p++)
        waitpid(pid[p], NULL, 0);
    report(apart ? "2 processes, a key each (total)" : "2 processes, one key (total, contended)",
           now_ns() - t0, 2 * ops);
}

/* The floor: a process-shared, non-robust mutex around a counter. */
static void floor_mutex(void)
{
    struct { pthread_mutex_t mu; int64_t n; } *z =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&z->mu, &a);
    double t0 = now_ns();
    for (long i = 0; i < ops; i++) {
        pthread_mutex_lock(&z->mu);
        z->n++;
        pthread_mutex_unlock(&z->mu);
    }
    report("floor: one shared mutex + counter, 1 process", now_ns() - t0, ops);
    munmap(z, 4096);
}

/* ---- take-over after a kill ------------------------------------------------ */

static int stop_fd;

static void stop_locked(int point, size_t item)
{
    char c = 'S';
    if (point != RLS__SHM_AT_LOCKED || write(stop_fd, &c, 1) != 1)
        return;
    for (;;)
        pause();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The victim locks the key and stops; a waiter blocks on it; the victim is
 * killed at t_kill and the waiter reports when it got the lock. */
static double take_over_once(void)
{
    int vs[2], ws[2];
    char c;
    double t_got = 0;
    if (pipe(vs) != 0 || pipe(ws) != 0)
        exit(1);
    rls__shm_item it = { 5, ALGO_GCRA, "victim", 6 };
    pid_t vic = fork();
    if (vic == 0) {
        rls__shm *t = open_table();
        stop_fd = vs[1];
        rls__shm_hook = stop_locked;
        update(t, &it, 1);
        _exit(1);
    }
    if (read(vs[0], &c, 1) != 1)
        exit(1);
    pid_t wai = fork();
    if (wai == 0) {
        rls__shm *t = open_table();
        if (write(ws[1], "R", 1) != 1)
            _exit(1);
        update(t, &it, 1);
        double now = now_ns();
        _exit(write(ws[1], &now, sizeof now) == (ssize_t)sizeof now ? 0 : 1);
    }
    if (read(ws[0], &c, 1) != 1)
        exit(1);
    usleep(2000);   /* let the waiter reach the lock and sleep on it */
    double t_kill = now_ns();
    kill(vic, SIGKILL);
    if (read(ws[0], &t_got, sizeof t_got) != (ssize_t)sizeof t_got)
        exit(1);
    waitpid(vic, NULL, 0);
    waitpid(wai, NULL, 0);
    close(vs[0]);
    close(vs[1]);
    close(ws[0]);
    close(ws[1]);
    return t_got - t_kill;
}

static void take_over(void)
{
    enum { ROUNDS = 50 };
    double us[ROUNDS];
    for (int i = 0; i < ROUNDS; i++)
        us[i] = take_over_once() / 1e3;
    qsort(us, ROUNDS, sizeof us[0], cmp_double);
    printf("  %-46s %8.1f us median, %.1f us worst of %d\n",
           "lock taken over after SIGKILL of its holder", us[ROUNDS / 2], us[ROUNDS - 1], ROUNDS);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        ops = atol(argv[1]) > 0 ? atol(argv[1]) : ops;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                       : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/rlstore-shm-bench.%ld.shm", base, (long)getpid());
    printf("shared-memory table: %u slots, %ld updates per line, %s\n", G.slots, ops, path);
    one_process();
    two_processes(0);
    two_processes(1);
    floor_mutex();
    take_over();
    unlink(path);
    return 0;
}
