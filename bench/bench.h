/*
 * bench.h - shared declarations of rlbench, the benchmark harness.
 *
 * Every scenario fills one bench_result (registered up front in rlbench.c,
 * so the JSON names every scenario even when one is skipped or fails).
 * Ratios and targets are evaluated only at the end, from results measured
 * in the same run (report.c).  Files:
 *   rlbench.c     options, order of the scenarios, main
 *   util.c        clock, latency recorder, keys, processes, CPU placement
 *   report.c      result registry, ratios and targets, printing, JSON
 *   floor.c       the raw SQLite floors (synchronous NORMAL and FULL)
 *   checks.c      single-process rlstore scenarios on 10k keys
 *   multi.c       1, 2 and 4 processes on one file
 *   bigdb.c       1M keys: fill, checks, rltop during load, size, RSS
 *   peer_redis.c  Redis fixed-window Lua script, own RESP client + redis-benchmark
 *   peer_pg.c     a private PostgreSQL cluster, and the UPSERT-per-transaction
 *                 floor via pgbench (the "postgresql" peer and the "pg" floor)
 *   pg_backend.c  rlstore's PostgreSQL backend against that floor and SQLite
 *   plot.py       the SVG of a result file (make bench)
 */
#ifndef RLBENCH_H
#define RLBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- configuration ----------------------------------------------------- */
typedef struct bench_cfg {
    const char *mode;     /* "full", "quick" or "smoke" */
    const char *dir;      /* scratch directory of the databases */
    const char *exe_dir;  /* directory of the rlbench binary */
    long ops;             /* operations per 10k-key scenario (all rounds) */
    int rounds;           /* rounds of the 10k group; the best one is kept */
    long keys;            /* key space of the 10k scenarios */
    long big_keys;        /* key space of the 1M scenarios */
    long big_ops;         /* checks per run on the big database */
    long full_ops;        /* operations of the FULL / fsync scenarios */
    long multi_ops;       /* checks per multi-process scenario (all processes) */
    long blocked_keys;    /* keys blocked for the blocked-key scenario */
    int rltop_n;          /* rltop refreshes during load */
    int rss_handles;      /* handles opened for the RSS measurement */
    long redis_ops;       /* requests of the Redis client */
    long pg_ops;          /* pgbench transactions; checks per "pg" scenario */
    int pg_clients;       /* client processes of the "pg" group's N-client runs */
    int peers;            /* 0: peers skipped (--no-peers) */
    const char *only;     /* NULL or comma-separated groups to run */
} bench_cfg;

/* 1 if group is selected by --only (always 1 without --only). */
int cfg_selected(const bench_cfg *cfg, const char *group);

/* ---- results ----------------------------------------------------------- */
enum { RES_PENDING = 0, RES_OK, RES_SKIPPED, RES_FAILED };

#define BENCH_EXTRA_MAX 16
#define BENCH_PROCS_MAX 8

typedef struct bench_lat {
    long ops;
    double secs;                 /* wall time of the timed loop */
    double p50, p99, p999, max;  /* microseconds */
} bench_lat;

typedef struct bench_extra {
    char name[40];
    char unit[16];
    double value;
} bench_extra;

typedef struct bench_result {
    char id[40];
    char name[96];
    char group[24];
    int status;
    char note[320];
    int has_lat;
    bench_lat lat;
    int nextra;
    bench_extra extra[BENCH_EXTRA_MAX];
    int nprocs;
    bench_lat procs[BENCH_PROCS_MAX];
} bench_result;

/* Registers a scenario (pending); returns it.  Order is kept. */
bench_result *res_add(const char *id, const char *group, const char *name);
/* The scenario of that id, or NULL. */
bench_result *res_find(const char *id);
void res_set_lat(bench_result *r, const bench_lat *lat);
void res_extra(bench_result *r, const char *name, double value, const char *unit);
/* The extra of that name, or NAN. */
double res_get_extra(const bench_result *r, const char *name);
__attribute__((format(printf, 3, 4)))
void res_status(bench_result *r, int status, const char *fmt, ...);
/* Marks every still pending scenario of the group skipped with the note. */
void res_skip_group(const char *group, const char *note);
double lat_rate(const bench_lat *l);

/* One line per scenario, as soon as it is measured. */
void report_line(const bench_result *r);
/* The machine, printed at the start of a run. */
void report_machine(const bench_cfg *cfg);
/* The final table, the ratio and target lines, and the machine. */
void report_print(void);
/* Scenarios that failed or never ran (not skipped). */
int report_failed(void);
/* Writes the JSON result file; 0 or -1. */
int report_json(const char *path, const bench_cfg *cfg, double total_secs);

/* ---- latency recorder -------------------------------------------------- */
typedef struct lat_rec {
    double *v;  /* microseconds */
    long n, cap;
} lat_rec;

int lat_init(lat_rec *r, long cap);
int lat_push(lat_rec *r, double us);  /* grows; 0 or -1 */
/* Sorts and fills out (ops = n, secs given). */
void lat_summary(lat_rec *r, double secs, bench_lat *out);
void lat_free(lat_rec *r);

/* ---- clock, keys, files ------------------------------------------------ */
double now_us(void);               /* CLOCK_MONOTONIC */
int64_t wall_ms(void);             /* CLOCK_REALTIME */
/* A clock for scenarios whose windows must not end during the run: noon
 * UTC of the current day at the first call, advancing in real time. */
int64_t noon_clock_ms(void);
/* Key number n as an IPv4 address in 10.0.0.0/8 ("10.a.b.c"). */
void key_name(char *buf, size_t size, unsigned long n);
/* Operation i's key: a fixed pseudo-random walk over keys (for i < keys a
 * permutation, every key exactly once). */
void key_of(char *buf, size_t size, long i, long keys);
void remove_db(const char *path);  /* the file and its -wal, -shm, ... */
long file_size(const char *path);  /* -1 if missing */
long vm_rss_kb(void);              /* this process, -1 if unknown */
int rm_rf(const char *path);       /* via rm -rf; 0 on success */

/* ---- processes --------------------------------------------------------- */
/* Finds an executable: in PATH, then in the glob patterns (NULL-ended),
 * newest match first.  Writes the path to out; 0 found, -1 not. */
int find_tool(const char *name, const char *const *globs, char *out, size_t size);
/* Starts argv with stdout and stderr to logfile (NULL: /dev/null),
 * optionally pinned to cpu (-1: not pinned).  Returns the pid or -1. */
pid_t spawn(char *const argv[], const char *logfile, int cpu);
/* Runs argv to completion as spawn(); returns its exit status (0..255),
 * 128+signal, or -1 if it could not be started or exceeded timeout_s. */
int run(char *const argv[], const char *logfile, int cpu, int timeout_s);
/* The same, in directory cwd (NULL: the current one). */
pid_t spawn_in(char *const argv[], const char *logfile, int cpu, const char *cwd);
int run_in(char *const argv[], const char *logfile, int cpu, const char *cwd, int timeout_s);
/* Waits for pid up to timeout_s; on timeout sends SIGKILL.  Exit status as
 * run(). */
int wait_pid(pid_t pid, int timeout_s);
/* A free TCP port on 127.0.0.1, or -1. */
int free_port(void);
/* The CPUs this process may use: *n of them, first two in cpu[0], cpu[1]. */
void cpus_allowed(int *n, int cpu[2]);
/* Pins this process to cpu (-1: restores the mask of the start). */
void pin_self(int cpu);
/* The same for another process (its main thread, as taskset -p). */
void pin_pid(pid_t pid, int cpu);

/* Where a peer's server and its client run: "unpinned" (the scheduler's
 * choice, which on small VMs keeps both on one CPU) or "pinned" (server
 * and client on two different CPUs, as taskset -c would).  Each peer is
 * measured in both when there are two CPUs; its better throughput is the
 * baseline of the ratios, so no placement handicaps the peer. */
typedef struct placement {
    const char *name;
    int server_cpu, client_cpu;  /* -1: not pinned */
} placement;
/* Fills p[] (up to 2) and returns how many placements to measure. */
int placements(placement p[2]);
/* Records one placement's figures as extras "<name>_ops_per_s", ... */
void placement_extras(bench_result *r, const placement *p, const bench_lat *l);
/* The last lines of a file into buf, newlines as " | " (for notes). */
void file_tail(const char *path, char *buf, size_t size);

/* CPU time of a timed loop (microseconds): the client's (this process, or
 * the sum of the client processes) and the database server's (every
 * process of the PostgreSQL cluster; -1 when there is no server). */
typedef struct cpu_use {
    double client_us, server_us;
} cpu_use;
/* This process's user + system CPU time (RUSAGE_SELF or RUSAGE_CHILDREN). */
double cpu_self_us(void);
double cpu_children_us(void);

/* ---- scenarios ---------------------------------------------------------- */
/* floor.c: one prepared UPSERT ... RETURNING per transaction. */
int bench_floor(const bench_cfg *cfg, int full_sync, long ops, bench_lat *out,
                char *err, size_t errsize);

/* checks.c */
typedef struct check_spec {
    const char *file;       /* database file name in cfg->dir */
    const char *rules;      /* YAML */
    int expect_allowed;     /* 1 admitted, 0 denied */
    int prepare;            /* PREP_* */
    int durability;         /* enum rls_durability */
    int vclock;             /* 1: rls_check_at with noon_clock_ms() */
    long keys;              /* key space */
    const char *target;     /* NULL: `file` in cfg->dir; else the database to open as
                             * it is (a PostgreSQL URI), left in place afterwards */
} check_spec;
/* PREP_WARM: every key checked once (admitted) before the timing */
enum { PREP_NONE = 0, PREP_OVER_LIMIT, PREP_BLOCK, PREP_WARM };
extern const char *const ALGORITHMS[6];
/* Writes the rules of a one-limit action for algorithm alg into buf. */
void rules_for_algorithm(char *buf, size_t size, const char *alg);
extern const char RULES_ONE[], RULES_TWO[], RULES_DENY[];
/* Checks keys 0..keys-1 once each on db (action "signup"); every check
 * must be admitted.  0 or -1 (err). */
struct rls_db;
int bench_warm(struct rls_db *db, long keys, int vclock, char *err, size_t errsize);
/* The same for keys first, first + step, ... below keys. */
int bench_warm_part(struct rls_db *db, long keys, long first, long step, int vclock, char *err,
                    size_t errsize);
int bench_check(const bench_cfg *cfg, const check_spec *sp, long ops, bench_lat *out,
                double *prep_secs, char *err, size_t errsize);
/* threads.c: one thread-safe handle, 1 and 8 threads, durability normal
 * and full (the "threads" group). */
void threads_register(const bench_cfg *c);
void bench_threads(const bench_cfg *cfg);

/* batch.c: rls_check_many of two items (batch_2), every batch admitted. */
int bench_batch2(const bench_cfg *cfg, long ops, bench_lat *out, char *err, size_t errsize);
/* The same, also measuring the CPU time of the timed loop (cpu may be
 * NULL; its server part from server_cpu, NULL: none). */
int bench_check_cpu(const bench_cfg *cfg, const check_spec *sp, long ops, bench_lat *out,
                    double *prep_secs, int (*server_cpu)(double *us), cpu_use *cpu,
                    char *err, size_t errsize);

/* multi.c: nproc processes on one file, ops checks in total. */
int bench_multi(const bench_cfg *cfg, int nproc, long ops, bench_result *r);
/* bench_procs' flags: rls_check_at on noon_clock_ms(); each process checks
 * the keys it will check once before the timing; every process walks the
 * same keys (from its own starting point) instead of a share of its own */
enum { PROCS_VCLOCK = 1, PROCS_WARM = 2, PROCS_SHARED = 4 };
/* nproc processes, each with its own handle on target (a file or a URI
 * whose rules are already applied), ops checks in total (PROCS_* flags);
 * figures into r, CPU time into cpu (may be NULL; its server part from
 * server_cpu, sampled while every handle is still open). */
int bench_procs(const bench_cfg *cfg, const char *target, int nproc, long ops, int flags,
                int (*server_cpu)(double *us), bench_result *r, cpu_use *cpu);

/* bigdb.c: every big-key scenario (fill, checks, rltop, size, RSS). */
void bench_big(const bench_cfg *cfg);

/* peer_redis.c, peer_pg.c */
void bench_redis(const bench_cfg *cfg);
void bench_postgres(const bench_cfg *cfg);

/* peer_pg.c: the private PostgreSQL cluster.  pg_cluster_start finds the
 * server binaries (RLBENCH_PG_BIN: only in that directory), creates and
 * starts a cluster reachable only through a Unix socket in its temporary
 * directory, with the floor's table; 0 started, 1 skipped (err: why, e.g.
 * not installed), -1 failed (err: what).  pg_stop() stops it. */
int pg_cluster_start(const bench_cfg *cfg, char *err, size_t errsize);
/* A libpq URI of the running cluster's database as role "bench", with
 * search_path set to schema (NULL: the default); 0 or -1 (too long). */
int pg_cluster_uri(char *buf, size_t size, const char *schema);
/* Runs one SQL text through psql; 0 or -1 (err: psql's last lines). */
int pg_cluster_sql(const char *sqltext, char *err, size_t errsize);
/* CPU time of every process of the cluster so far, exited ones included
 * (the postmaster's own and reaped children's times plus each live
 * child's); 0 or -1. */
int pg_server_cpu_us(double *us);
/* The floor: pgbench -n -M prepared with `clients` clients (-c and -j),
 * ops transactions in total, one UPSERT counter per transaction, on an
 * emptied table (prefill: holding every key of cfg->keys already, so each
 * transaction updates a row), in placement p; latencies from the
 * transaction logs, throughput pgbench's tps.  cpu may be NULL. */
int pg_floor_measure(const bench_cfg *cfg, int clients, long ops, int prefill,
                     const placement *p, bench_lat *out, double *tps, cpu_use *cpu, char *err,
                     size_t errsize);

/* pg_backend.c: the "pg" group. */
void bench_pg(const bench_cfg *cfg);
/* Stop the peer's server if it is still running (also at exit and on
 * signals); no-ops otherwise.  Async-signal-tolerant enough for a
 * benchmark: kill, wait, and for PostgreSQL pg_ctl stop. */
void redis_stop(void);
void pg_stop(void);

#endif /* RLBENCH_H */
