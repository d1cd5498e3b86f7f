/*
 * memory.c - the "memory" group (issue #19, item 4): what a limiter that
 * keeps its counters in memory can physically do on this machine, the
 * baselines of the memory-class targets (a memory-only check >= 50x the
 * durable rls_check, >= 0.5x the shared-memory floor), and storage/shm's
 * table measured against them.
 *
 *   floor_inproc_hash  an in-process hash table of counters: the limit of
 *                      an in-process limiter (Go's x/time/rate, Rust's
 *                      governor), nothing shared with other processes
 *   floor_shm_hash     an nginx-style shared-memory zone (limit_req): one
 *                      robust process-shared mutex around a hash table in
 *                      a MAP_SHARED mapping, as ngx_shmtx_lock guards the
 *                      zone's tree
 *   floor_shm_hash_4   the same zone, 4 processes (forked after the
 *                      mapping, as nginx's workers), ops in total
 *   shm_table          storage/shm's table (linked from its sources; its
 *                      API is internal): lock, read, write, unlock
 *   shm_table_4        the same table, 4 processes (forked after it is
 *                      opened: one MAP_SHARED mapping, as the zone's)
 *   mem_check          rls_check through the public API on an action whose
 *                      one limit is `durability: memory` (the table, no
 *                      database transaction), 1 process
 *   mem_check_4        the same, 4 processes (each its own handle), ops in
 *                      total; afterwards every key is peeked and the
 *                      counts must add up to the operations made (exact)
 *   mem_check_policy   mem_check with one unrelated key blocked in the
 *                      database (a deployment's usual state: a policy row
 *                      somewhere), so the fast path trusts per key
 *                      (storage/memtrust.c) rather than for every key
 *   mem_durable_check  rls_check on the same limit kept durably (the
 *                      baseline of the memory-class targets, same run)
 *   mem_mixed          rls_check on an action with both limits, memory and
 *                      durable (target: >= 0.9x mem_durable_check)
 *
 * Every operation is one fixed-window increment (window 1 day, limit never
 * reached, every operation admitted) on the key of the rlstore scenarios'
 * walk, reading the wall clock as a check does.  Neither floor decides
 * anything else: no rules, no key validation, no result to fill.
 *
 * An operation takes tens of nanoseconds, about as long as reading the
 * clock twice, so the throughput comes from an untimed pass and the
 * latencies from a second pass timing each operation (their figures
 * include one clock read, the extra "clock_read_ns").  Each scenario, of
 * one process or of several, is the best of 3 rounds, each on a fresh
 * table.
 */
#include <errno.h>
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rlstore.h>
#include "shm/shmtable.h"
#include "memory.h"

#define MEM_LIMIT 1000000000LL  /* never reached */
#define MEM_WINDOW_MS 86400000LL
#define MEM_PROCS 4
#define MEM_ROUNDS 3

/* ---- the floors' hash table ----------------------------------------------- */
/* One counter; a key of the walk is at most 15 bytes ("10.255.255.255"). */
typedef struct mslot {
    char key[16];
    int64_t window;
    int64_t n;
} mslot;

typedef struct mhash {
    size_t mask;
    mslot s[];
} mhash;

/* FNV-1a */
static uint64_t hash_key(const char *k, size_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
    return h;
}

/* Slots for keys: a power of two, at least twice as many (linear probing,
 * never full). */
static size_t hash_slots(long keys)
{
    size_t n = 64;
    while (n < 2 * (size_t)keys)
        n *= 2;
    return n;
}

/* One fixed-window increment: 1 admitted, 0 denied. */
static int hash_incr(mhash *h, const char *key, size_t len, int64_t now)
{
    size_t i = hash_key(key, len) & h->mask;
    int64_t w = now / MEM_WINDOW_MS;
    mslot *s;
    for (;; i = (i + 1) & h->mask) {
        s = &h->s[i];
        if (!s->key[0]) {
            memcpy(s->key, key, len);
            s->window = w;
            break;
        }
        if (memcmp(s->key, key, len + 1) == 0)
            break;
    }
    if (s->window != w) {
        s->window = w;
        s->n = 0;
    }
    if (s->n + 1 > MEM_LIMIT)
        return 0;
    s->n++;
    return 1;
}

/* ---- the three implementations ------------------------------------------- */
typedef struct mem_ctx {
    mhash *h;            /* floors: the table (heap or shared mapping)      */
    pthread_mutex_t *mu; /* shm floor: the zone's lock, in the mapping      */
    size_t map_size;     /* shm floor: the mapping                          */
    rls__shm *t;         /* shm_table                                       */
    char path[4200];     /* shm_table's file                                */
    rls_db *db;          /* mem_*: this process's handle                    */
    pid_t pid;           /*        the process that opened it               */
    char shm_dir[4200];  /*        where its table lives (removed at done)  */
} mem_ctx;

typedef struct mem_impl {
    const char *id;
    int shared;          /* 1: usable by several processes                  */
    int slow;            /* 1: a durable check: a tenth of the operations   */
    int own_clock;       /* 1: reads the wall clock itself (rls_check), so
                            the loop does not read it for the operation     */
    int (*setup)(mem_ctx *c, long keys, char *err, size_t errsize);  /* before fork */
    int (*op)(mem_ctx *c, const char *key, size_t len, int64_t now);
    void (*done)(mem_ctx *c);
} mem_impl;

static int inproc_setup(mem_ctx *c, long keys, char *err, size_t errsize)
{
    size_t n = hash_slots(keys);
    c->h = calloc(1, sizeof *c->h + n * sizeof(mslot));
    if (!c->h) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    c->h->mask = n - 1;
    return 0;
}

static int inproc_op(mem_ctx *c, const char *key, size_t len, int64_t now)
{
    return hash_incr(c->h, key, len, now);
}

static void inproc_done(mem_ctx *c)
{
    free(c->h);
}

/* The zone: [mutex][table], anonymous and shared, inherited by fork. */
static int zone_setup(mem_ctx *c, long keys, char *err, size_t errsize)
{
    size_t n = hash_slots(keys), off = 128;
    pthread_mutexattr_t a;
    c->map_size = off + sizeof(mhash) + n * sizeof(mslot);
    void *m = mmap(NULL, c->map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errsize, "mmap: %s", strerror(errno));
        return -1;
    }
    c->mu = m;
    c->h = (mhash *)((char *)m + off);
    c->h->mask = n - 1;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(c->mu, &a);
    pthread_mutexattr_destroy(&a);
    if (rc != 0) {
        snprintf(err, errsize, "pthread_mutex_init: %s", strerror(rc));
        munmap(m, c->map_size);
        return -1;
    }
    return 0;
}

static int zone_op(mem_ctx *c, const char *key, size_t len, int64_t now)
{
    int rc = pthread_mutex_lock(c->mu);
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(c->mu);
    else if (rc != 0)
        return -1;
    int ok = hash_incr(c->h, key, len, now);
    pthread_mutex_unlock(c->mu);
    return ok;
}

static void zone_done(mem_ctx *c)
{
    pthread_mutex_destroy(c->mu);
    munmap(c->mu, c->map_size);
}

/* storage/shm's table, in /dev/shm when it can be written (where the memory
 * class will keep it), else in the scratch directory.  The file is removed
 * as soon as it is mapped: the mapping lives on, and no run, however it
 * ends, leaves a table behind. */
static rls__shm_geom table_geom;

static int table_open(mem_ctx *c, char *err, size_t errsize)
{
    char why[200];
    int rc = rls__shm_open(&c->t, c->path, &table_geom, why, sizeof why);
    if (rc != RLS_OK) {
        snprintf(err, errsize, "rls__shm_open %s: %s (%s)", c->path, rls_errname(rc), why);
        return -1;
    }
    return 0;
}

static const bench_cfg *table_cfg;

static int table_setup(mem_ctx *c, long keys, char *err, size_t errsize)
{
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : table_cfg->dir;
    snprintf(c->path, sizeof c->path, "%s/rlbench-%ld.shm", dir, (long)getpid());
    unlink(c->path);
    table_geom.slots = (uint32_t)(4 * keys > 4096 ? 4 * keys : 4096);
    table_geom.key_max = 64;
    table_geom.log_max = 0;
    int rc = table_open(c, err, errsize);
    unlink(c->path);
    return rc;
}

/* The fixed window on the slot's state: a = count, b = window start. */
static int table_op(mem_ctx *c, const char *key, size_t len, int64_t now)
{
    rls__shm_item it = {1, ALGO_FIXED_WINDOW, key, len};
    rls__shm_txn tx;
    algo_state s;
    if (rls__shm_lock(c->t, &it, 1, now, &tx) != RLS_OK)
        return -1;
    memset(&s, 0, sizeof s);
    rls__shm_read(&tx, 0, &s);
    int64_t w = now - now % MEM_WINDOW_MS;
    if (!s.present || s.b != w) {
        s.a = 0;
        s.b = w;
    }
    int ok = s.a + 1 <= MEM_LIMIT;
    if (ok) {
        s.a++;
        s.last_ms = now;
        s.expires_ms = w + MEM_WINDOW_MS;
        if (rls__shm_write(&tx, 0, &s) != RLS_OK)
            ok = -1;
    }
    rls__shm_unlock(&tx);
    return ok;
}

static void table_done(mem_ctx *c)
{
    rls__shm_close(c->t);
}

/* ---- full checks through the public API ---------------------------------- */
static const char MEM_RULES[] =
    "version: 1\n"
    "actions:\n"
    "  mem:\n"
    "    limits: [ { name: m, algorithm: fixed_window, limit: 1000000000, window: 1d,"
    " durability: memory } ]\n"
    "  dur:\n"
    "    limits: [ { name: d, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n"
    "  mix:\n"
    "    limits:\n"
    "      - { name: m, algorithm: fixed_window, limit: 1000000000, window: 1d,"
    " durability: memory }\n"
    "      - { name: d, algorithm: fixed_window, limit: 1000000000, window: 1d }\n";
static char check_db[4200];   /* the database of the current scenario */

static rls_db *check_open(mem_ctx *c)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = c->shm_dir;
    o.shm_slots = (unsigned)(4 * table_cfg->keys > 4096 ? 4 * table_cfg->keys : 4096);
    return rls_open(&db, check_db, &o) == RLS_OK ? db : NULL;
}

/* A fresh database with the rules, its table in a folder of its own under
 * /dev/shm (else the scratch directory), both removed at done. */
static int check_setup(mem_ctx *c, long keys, char *err, size_t errsize)
{
    static int seq;
    (void)keys;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : table_cfg->dir;
    snprintf(c->shm_dir, sizeof c->shm_dir, "%s/rlbench-mem-%ld-%d", base, (long)getpid(),
             ++seq);
    snprintf(check_db, sizeof check_db, "%s/memcheck-%d.db", table_cfg->dir, seq);
    unlink(check_db);
    if (mkdir(c->shm_dir, 0700) != 0) {
        snprintf(err, errsize, "mkdir %s: %s", c->shm_dir, strerror(errno));
        return -1;
    }
    c->db = check_open(c);
    c->pid = getpid();
    int rc = c->db ? rls_rules_apply(c->db, MEM_RULES, sizeof MEM_RULES - 1, "memory.yaml",
                                     NULL, NULL)
                   : RLS_ECANTOPEN;
    if (rc != RLS_OK) {
        snprintf(err, errsize, "setup: %s: %s", rls_errname(rc), rls_errmsg(c->db));
        return -1;
    }
    return 0;
}

/* check_setup, then one key outside the walk blocked forever. */
static int policy_setup(mem_ctx *c, long keys, char *err, size_t errsize)
{
    if (check_setup(c, keys, err, errsize) != 0)
        return -1;
    int rc = rls_block_set_at(c->db, "mem", "blocked.example", 0, "bench", wall_ms());
    if (rc != RLS_OK) {
        snprintf(err, errsize, "block: %s: %s", rls_errname(rc), rls_errmsg(c->db));
        return -1;
    }
    return 0;
}

/* A forked process: a handle of its own (a handle is not shared across
 * fork).  Called before the processes are released (mem_child), so that
 * opening it is not timed: the one process's handle is opened by setup. */
static void check_reopen(mem_ctx *c)
{
    if (c->pid != getpid()) {
        c->db = check_open(c);
        c->pid = getpid();
    }
}

/* The handle is the process's own already (setup's, or check_reopen's in
 * mem_child): a getpid() here, a system call, would cost a memory check a
 * third of its time, which no application pays. */
static int check_op(mem_ctx *c, const char *action, const char *key)
{
    rls_result r;
    if (!c->db || rls_check(c->db, action, key, 1, &r) != RLS_OK)
        return -1;
    return r.allowed;
}

static int mem_check_op(mem_ctx *c, const char *key, size_t len, int64_t now)
{
    (void)len;
    (void)now;
    return check_op(c, "mem", key);
}

static int dur_check_op(mem_ctx *c, const char *key, size_t len, int64_t now)
{
    (void)len;
    (void)now;
    return check_op(c, "dur", key);
}

static int mix_check_op(mem_ctx *c, const char *key, size_t len, int64_t now)
{
    (void)len;
    (void)now;
    return check_op(c, "mix", key);
}

/* Units used on "mem" over the whole key walk: the 4-process run's
 * exactness check. */
static int64_t check_used(mem_ctx *c, long keys)
{
    char key[16];
    int64_t sum = 0;
    for (long i = 0; i < keys; i++) {
        rls_result r;
        key_of(key, sizeof key, i, keys);
        if (rls_peek(c->db, "mem", key, 1, &r) != RLS_OK)
            return -1;
        sum += r.limit - r.remaining;
    }
    return sum;
}

static void check_done(mem_ctx *c)
{
    char path[4600];
    rls_close(c->db);
    c->db = NULL;
    DIR *d = opendir(c->shm_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", c->shm_dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(c->shm_dir);
    unlink(check_db);
    snprintf(path, sizeof path, "%s-wal", check_db);
    unlink(path);
    snprintf(path, sizeof path, "%s-shm", check_db);
    unlink(path);
    snprintf(path, sizeof path, "%s-ckpt", check_db);
    unlink(path);
}

static const mem_impl IMPLS[] = {
    {"floor_inproc_hash", 0, 0, 0, inproc_setup, inproc_op, inproc_done},
    {"floor_shm_hash", 1, 0, 0, zone_setup, zone_op, zone_done},
    {"shm_table", 1, 0, 0, table_setup, table_op, table_done},
    {"mem_check", 1, 0, 1, check_setup, mem_check_op, check_done},
    {"mem_check_policy", 0, 0, 1, policy_setup, mem_check_op, check_done},
    {"mem_durable_check", 0, 1, 1, check_setup, dur_check_op, check_done},
    {"mem_mixed", 0, 1, 1, check_setup, mix_check_op, check_done},
};

/* ---- measuring ------------------------------------------------------------ */
/* Operations first, first + step, ... below n of the key walk; with lat,
 * each one timed.  0, or -1 when one failed or was denied. */
static int mem_loop(const mem_impl *im, mem_ctx *c, long first, long step, long n, long keys,
                    lat_rec *lat)
{
    char key[16];
    for (long i = first; i < n; i += step) {
        key_of(key, sizeof key, i, keys);
        size_t len = strlen(key);
        double a = lat ? now_us() : 0;
        if (im->op(c, key, len, im->own_clock ? 0 : wall_ms()) != 1)
            return -1;
        if (lat)
            lat->v[lat->n++] = now_us() - a;
    }
    return 0;
}

/* The share of process p of nproc: an untimed pass (its span into t0, t1)
 * and a timed one (latencies into out). */
static int mem_pass(const mem_impl *im, mem_ctx *c, int p, int nproc, long ops, long keys,
                    double *t0, double *t1, bench_lat *out)
{
    lat_rec lat;
    if (lat_init(&lat, ops / nproc + 1) != 0)
        return -1;
    *t0 = now_us();
    int rc = mem_loop(im, c, p, nproc, ops, keys, NULL);
    *t1 = now_us();
    double s0 = now_us();
    if (rc == 0)
        rc = mem_loop(im, c, p, nproc, ops, keys, &lat);
    if (rc == 0) {
        lat_summary(&lat, (now_us() - s0) / 1e6, out);
        out->secs = (*t1 - *t0) / 1e6;  /* the rate is the untimed pass's */
    }
    lat_free(&lat);
    return rc;
}

/* One process: best of MEM_ROUNDS rounds, each on a fresh table. */
static int mem_single(const bench_cfg *cfg, const mem_impl *im, long ops, bench_lat *best,
                      char *err, size_t errsize)
{
    int have = 0;
    for (int round = 0; round < MEM_ROUNDS; round++) {
        mem_ctx c;
        bench_lat l;
        double t0, t1;
        memset(&c, 0, sizeof c);
        if (im->setup(&c, cfg->keys, err, errsize) != 0)
            return -1;
        int rc = mem_pass(im, &c, 0, 1, ops, cfg->keys, &t0, &t1, &l);
        im->done(&c);
        if (rc != 0) {
            snprintf(err, errsize, "an operation failed or was denied");
            return -1;
        }
        if (!have || lat_rate(&l) > lat_rate(best))
            *best = l;
        have = 1;
    }
    return 0;
}

/* What a child reports through the shared mapping. */
typedef struct mem_rep {
    int rc;
    double t0, t1;
    bench_lat lat;
} mem_rep;

static void mem_child(const mem_impl *im, mem_ctx *c, int p, long ops, long keys, int go,
                      mem_rep *rep)
{
    char ch;
    rep->rc = -1;
    if (im->setup == check_setup)
        check_reopen(c);
    while (read(go, &ch, 1) > 0) {
    }
    rep->rc = mem_pass(im, c, p, MEM_PROCS, ops, keys, &rep->t0, &rep->t1, &rep->lat);
    _exit(rep->rc == 0 ? 0 : 1);
}

/* Forks the processes, releases them together, collects their reports
 * (total ops over the span of every untimed pass, worst latencies). */
static int mem_forked(const mem_impl *im, mem_ctx *c, long ops, long keys, mem_rep *rep,
                      char *err, size_t errsize)
{
    int go[2], failed = 0;
    pid_t pid[MEM_PROCS];
    if (pipe(go) != 0) {
        snprintf(err, errsize, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    for (int p = 0; p < MEM_PROCS; p++) {
        pid[p] = fork();
        if (pid[p] == 0) {
            close(go[1]);
            mem_child(im, c, p, ops, keys, go[0], &rep[p]);
        }
        if (pid[p] < 0) {
            snprintf(err, errsize, "fork: %s", strerror(errno));
            failed = 1;
        }
    }
    close(go[0]);
    close(go[1]);
    for (int p = 0; p < MEM_PROCS; p++)
        if (pid[p] > 0 && wait_pid(pid[p], 600) != 0)
            failed = 1;
    if (failed && !err[0])
        snprintf(err, errsize, "a process failed (an operation failed or was denied)");
    return failed ? -1 : 0;
}

/* One round of the processes on a fresh table: their reports into rep,
 * the run's total (operations over the span from the first start to the
 * last end, worst latencies) into *all.  0, or -1 with err set. */
static int mem_multi_round(const bench_cfg *cfg, const mem_impl *im, long ops, mem_rep *rep,
                           bench_lat *all, char *err, size_t errsize)
{
    mem_ctx c;
    memset(&c, 0, sizeof c);
    int rc = im->setup(&c, cfg->keys, err, errsize);
    int64_t used = -2;
    if (rc == 0) {
        rc = mem_forked(im, &c, ops, cfg->keys, rep, err, errsize);
        if (rc == 0 && im->op == mem_check_op)   /* both passes of every process */
            used = check_used(&c, cfg->keys);
        im->done(&c);
    }
    if (rc == 0 && used != -2 && used != 2 * ops) {
        snprintf(err, errsize, "not exact: %lld units used after %ld checks",
                 (long long)used, 2 * ops);
        rc = -1;
    }
    if (rc != 0)
        return -1;
    double first = rep[0].t0, last = rep[0].t1;
    memset(all, 0, sizeof *all);
    for (int p = 0; p < MEM_PROCS; p++) {
        const bench_lat *l = &rep[p].lat;
        first = rep[p].t0 < first ? rep[p].t0 : first;
        last = rep[p].t1 > last ? rep[p].t1 : last;
        all->ops += l->ops;
        all->p50 = l->p50 > all->p50 ? l->p50 : all->p50;
        all->p99 = l->p99 > all->p99 ? l->p99 : all->p99;
        all->p999 = l->p999 > all->p999 ? l->p999 : all->p999;
        all->max = l->max > all->max ? l->max : all->max;
    }
    all->secs = (last - first) / 1e6;
    return 0;
}

/* The processes: best of MEM_ROUNDS rounds, each on a fresh table, as the
 * one process's figure it is divided by (a ratio of a best of three to a
 * single run read low by the spread of the runs alone); every round must
 * be exact. */
static void mem_multi(const bench_cfg *cfg, const mem_impl *im, long ops, bench_result *r)
{
    char err[300] = "";
    mem_rep *rep = mmap(NULL, sizeof(mem_rep) * MEM_PROCS, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    mem_rep best[MEM_PROCS];
    bench_lat all, top = {0, 0, 0, 0, 0, 0};
    if (rep == MAP_FAILED) {
        res_status(r, RES_FAILED, "mmap: %s", strerror(errno));
        return;
    }
    for (int round = 0; round < MEM_ROUNDS; round++) {
        if (mem_multi_round(cfg, im, ops, rep, &all, err, sizeof err) != 0) {
            res_status(r, RES_FAILED, "%s", err);
            munmap(rep, sizeof(mem_rep) * MEM_PROCS);
            return;
        }
        if (round == 0 || lat_rate(&all) > lat_rate(&top)) {
            top = all;
            memcpy(best, rep, sizeof best);
        }
    }
    munmap(rep, sizeof(mem_rep) * MEM_PROCS);
    res_set_lat(r, &top);
    r->nprocs = 0;
    for (int p = 0; p < MEM_PROCS; p++)
        r->procs[r->nprocs++] = best[p].lat;
}

/* ---- the group ------------------------------------------------------------ */
void mem_register(const bench_cfg *cfg)
{
    char name[96];
    (void)cfg;
    res_add("floor_inproc_hash", "memory", "memory floor: in-process hash, 1 process");
    res_add("floor_shm_hash", "memory", "memory floor: shm hash + robust mutex, 1 process");
    snprintf(name, sizeof name, "memory floor: shm hash + robust mutex, %d processes",
             MEM_PROCS);
    res_add("floor_shm_hash_4", "memory", name);
    res_add("shm_table", "memory", "storage/shm table (lock, read, write), 1 process");
    snprintf(name, sizeof name, "storage/shm table (lock, read, write), %d processes",
             MEM_PROCS);
    res_add("shm_table_4", "memory", name);
    res_add("mem_check", "memory", "rls_check, durability: memory limit, 1 process");
    snprintf(name, sizeof name, "rls_check, durability: memory limit, %d processes",
             MEM_PROCS);
    res_add("mem_check_4", "memory", name);
    res_add("mem_check_policy", "memory",
            "rls_check, durability: memory limit, one other key blocked, 1 process");
    res_add("mem_durable_check", "memory", "rls_check, the same limit durable, 1 process");
    res_add("mem_mixed", "memory", "rls_check, memory + durable limit, 1 process");
}

/* Nanoseconds of one now_us() (the latencies include one). */
static double clock_read_ns(void)
{
    double t0 = now_us();
    for (int i = 0; i < 100000; i++)
        (void)now_us();
    return (now_us() - t0) * 1e3 / 100000;
}

void bench_memory(const bench_cfg *cfg)
{
    /* ten times the 10k group's operations: each costs ~1000x less */
    long ops = cfg->ops * 10;
    double clk = clock_read_ns();
    char err[300];
    table_cfg = cfg;
    for (size_t i = 0; i < sizeof IMPLS / sizeof IMPLS[0]; i++) {
        const mem_impl *im = &IMPLS[i];
        bench_result *r = res_find(im->id);
        bench_lat lat;
        if (mem_single(cfg, im, im->slow ? ops / 10 : ops, &lat, err, sizeof err) != 0) {
            res_status(r, RES_FAILED, "%s", err);
        } else {
            res_set_lat(r, &lat);
            res_extra(r, "clock_read_ns", clk, "ns");
            res_status(r, RES_OK, "best of %d rounds; ops/s untimed, latencies include one "
                       "clock read (%.0f ns)", MEM_ROUNDS, clk);
        }
        report_line(r);
        if (!im->shared)
            continue;
        char id[40];
        snprintf(id, sizeof id, "%s_%d", im->id, MEM_PROCS);
        r = res_find(id);
        mem_multi(cfg, im, ops, r);
        if (r->status == RES_OK)
            res_status(r, RES_OK, "best of %d rounds; %ld ops in total, a share each; unpinned; "
                       "worst latencies%s", MEM_ROUNDS, ops,
                       im->op == mem_check_op ? "; counts exact" : "");
        report_line(r);
    }
}
