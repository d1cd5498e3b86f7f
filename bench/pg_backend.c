/*
 * pg_backend.c - the "pg" group (issue #8): rlstore's PostgreSQL backend
 * against a raw PostgreSQL floor measured in the same run, on the same
 * private cluster, and against rlstore on SQLite side by side.
 *
 *   pg_floor_1        pgbench, 1 client: one prepared "INSERT ... ON
 *                     CONFLICT DO UPDATE ... RETURNING" counter per
 *                     transaction (peer_pg.c), synchronous_commit=off, on
 *                     the key space of the checks
 *   pg_check_1        rls_check_at, fixed_window, one limit, through one
 *                     connection (rls_open of a postgresql:// URI whose
 *                     search_path is a schema created for the run), by a
 *                     handle that has checked every key once before the
 *                     timing: the steady state of a long-running process,
 *                     whose checks of keys it knows take one round trip
 *   pg_check_1_cold   the same by a new handle, each key once: keys it has
 *                     never seen (two round trips each)
 *   pg_floor_n        the floor with cfg->pg_clients clients (-c N -j N)
 *   pg_check_n        rls_check_at from cfg->pg_clients processes, one
 *                     connection each, on the same schema (multi.c), each
 *                     on a share of the keys of its own that it checked
 *                     once before the timing (hosts with key affinity)
 *   pg_check_n_shared the same processes all on the same keys, each
 *                     having checked them once, each walking them from its
 *                     own point (every key written by every process in
 *                     turn: hosts sharing keys, whose knowledge is mostly
 *                     stale)
 *   pg_sqlite_1       the same checks on SQLite (a file), 1 process
 *   pg_sqlite_n       the same on SQLite, cfg->pg_clients processes on one file
 *
 * Every key exists before the timing: the floor's table is refilled with
 * every key before each run, the schema and the SQLite files get one check
 * per key first, so each timed operation updates an existing row (a check
 * that creates its key takes the usual three round trips).  The PostgreSQL
 * scenarios run in cfg->rounds interleaved rounds of cfg->pg_ops / rounds
 * operations each, keeping each scenario's best round; every one is
 * unpinned (the floor and the checks in the same placement).
 *
 * Each records its CPU time per operation: the client's (this process, the
 * client processes, or pgbench) and the server's (every process of the
 * cluster, from /proc).  Targets (report.c): throughput >= 0.8x the floor
 * with the same number of clients, for pg_check_1 and pg_check_n; the cold
 * and shared scenarios are reported against the same floors, without a
 * target.  Without PostgreSQL's server binaries the group is reported
 * skipped (not installed) and does not fail the run.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rlstore.h>
#include "bench.h"

static const char *const PG_IDS[] = {"pg_floor_1",  "pg_check_1",        "pg_check_1_cold",
                                     "pg_floor_n",  "pg_check_n",        "pg_check_n_shared",
                                     "pg_sqlite_1", "pg_sqlite_n"};
#define NPG_IDS (sizeof PG_IDS / sizeof PG_IDS[0])

/* Records the CPU time per operation as extras and in the note. */
static void cpu_extras(bench_result *r, const cpu_use *cpu, long ops, const char *what)
{
    double c = ops > 0 ? cpu->client_us / (double)ops : NAN;
    double s = ops > 0 && cpu->server_us >= 0 ? cpu->server_us / (double)ops : NAN;
    char srv[64] = "";
    res_extra(r, "client_cpu_us_per_op", c, "us");
    if (!isnan(s)) {
        res_extra(r, "server_cpu_us_per_op", s, "us");
        snprintf(srv, sizeof srv, ", server %.1f us", s);
    }
    res_status(r, RES_OK, "%s; CPU per operation: client %.1f us%s", what, c, srv);
}

/* Keeps the better (higher throughput) of a scenario's rounds: tmp is a
 * round measured into a scratch copy of r. */
static void keep_better(bench_result *r, const bench_result *tmp)
{
    if (r->status == RES_FAILED)
        return;
    if (tmp->status != RES_OK) {
        res_status(r, tmp->status, "%s", tmp->note);
        return;
    }
    if (!r->has_lat || lat_rate(&tmp->lat) > lat_rate(&r->lat))
        *r = *tmp;
}

static void scratch_of(bench_result *tmp, const bench_result *r)
{
    memset(tmp, 0, sizeof *tmp);
    memcpy(tmp->id, r->id, sizeof tmp->id);
    memcpy(tmp->name, r->name, sizeof tmp->name);
    memcpy(tmp->group, r->group, sizeof tmp->group);
}

static void floor_round(const bench_cfg *cfg, const char *id, int clients, long ops)
{
    bench_result *r = res_find(id), tmp;
    placement unpinned = {"unpinned", -1, -1};
    bench_lat lat;
    double tps;
    cpu_use cpu;
    char err[300], what[200];
    scratch_of(&tmp, r);
    if (pg_floor_measure(cfg, clients, ops, 1, &unpinned, &lat, &tps, &cpu, err,
                         sizeof err) != 0) {
        res_status(&tmp, RES_FAILED, "%s", err);
    } else {
        res_set_lat(&tmp, &lat);
        res_extra(&tmp, "clients", clients, "");
        snprintf(what, sizeof what, "pgbench -n -M prepared -c %d -j %d, synchronous_commit=off,"
                 " Unix socket, unpinned, every key present", clients, clients);
        cpu_extras(&tmp, &cpu, lat.ops, what);
    }
    keep_better(r, &tmp);
}

/* Creates the rlstore schema in target, applies the one-rule rules and
 * checks every key once, from nproc processes (one handle each: on
 * PostgreSQL the first check of a key is several round trips, and 10,000
 * of them one after another take about as long as the measurements).
 * 0 or -1 (err). */
static int setup_target(const bench_cfg *cfg, const char *target, int nproc, char *err,
                        size_t errsize)
{
    rls_db *db = NULL;
    int rc = rls_open(&db, target, NULL);
    if (rc == RLS_OK)
        rc = rls_rules_apply_at(db, RULES_ONE, strlen(RULES_ONE), "bench", NULL,
                                noon_clock_ms(), NULL);
    if (rc != RLS_OK) {
        snprintf(err, errsize, "setup: %s: %s", rls_strerror(rc),
                 db ? rls_errmsg(db) : rls_errmsg(NULL));
        rls_close(db);
        return -1;
    }
    rls_close(db);
    pid_t pids[BENCH_PROCS_MAX];
    int started = 0, failed = 0;
    if (nproc < 1 || nproc > BENCH_PROCS_MAX)
        nproc = 1;
    fflush(stdout);
    fflush(stderr);
    for (int c = 0; c < nproc; c++) {
        pid_t p = fork();
        if (p == 0) {
            char msg[300];
            rls_db *h = NULL;
            int orc = rls_open(&h, target, NULL);
            if (orc != RLS_OK)
                snprintf(msg, sizeof msg, "open: %s: %s", rls_strerror(orc), rls_errmsg(NULL));
            int ok = orc == RLS_OK &&
                     bench_warm_part(h, cfg->keys, c, nproc, 1, msg, sizeof msg) == 0;
            if (!ok)
                fprintf(stderr, "rlbench: warming process %d: %s\n", c, msg);
            rls_close(h);
            _exit(ok ? 0 : 1);
        }
        if (p < 0) {
            failed = 1;
            break;
        }
        pids[started++] = p;
    }
    for (int c = 0; c < started; c++)
        failed |= wait_pid(pids[c], 600) != 0;
    if (failed)
        snprintf(err, errsize, "warming %ld keys from %d processes failed (see stderr)",
                 cfg->keys, nproc);
    return failed ? -1 : 0;
}

/* The schema of every PostgreSQL check scenario of the run, with every key
 * checked once; its URI into uri.  0 or -1 (err). */
static int pg_schema(const bench_cfg *cfg, char *uri, size_t size, char *err, size_t errsize)
{
    char tail[200];
    if (pg_cluster_sql("DROP SCHEMA IF EXISTS rlbench CASCADE; CREATE SCHEMA rlbench", tail,
                       sizeof tail) != 0) {
        snprintf(err, errsize, "cannot create schema rlbench: %s", tail);
        return -1;
    }
    if (pg_cluster_uri(uri, size, "rlbench") != 0) {
        snprintf(err, errsize, "the cluster's URI is too long");
        return -1;
    }
    return setup_target(cfg, uri, cfg->pg_clients, err, errsize);
}

/* pg_check_1 (warm != 0: the handle checks every key once first) or
 * pg_check_1_cold (each key once, new to the handle). */
static void check1_round(const bench_cfg *cfg, const char *uri, long ops, int warm)
{
    const char *id = warm ? "pg_check_1" : "pg_check_1_cold";
    bench_result *r = res_find(id), tmp;
    char err[300];
    bench_lat lat;
    cpu_use cpu;
    check_spec sp = {NULL, RULES_ONE, 1, warm ? PREP_WARM : PREP_NONE, 0, 1, cfg->keys, uri};
    if (!warm && ops > cfg->keys)
        ops = cfg->keys;
    scratch_of(&tmp, r);
    if (bench_check_cpu(cfg, &sp, ops, &lat, NULL, pg_server_cpu_us, &cpu, err,
                        sizeof err) != 0) {
        res_status(&tmp, RES_FAILED, "%s", err);
    } else {
        res_set_lat(&tmp, &lat);
        res_extra(&tmp, "connections", 1, "");
        cpu_extras(&tmp, &cpu, lat.ops,
                   warm ? "1 connection, Unix socket, rls_check_at, every key present and"
                          " checked once by this handle before"
                        : "1 connection, Unix socket, rls_check_at, every key present,"
                          " each new to this handle");
    }
    keep_better(r, &tmp);
}

/* pg_check_n (each process on keys of its own, checked once first) or
 * pg_check_n_shared (every process on the same keys, each checked once by
 * each first). */
static void checkn_round(const bench_cfg *cfg, const char *uri, long ops, int shared)
{
    bench_result *r = res_find(shared ? "pg_check_n_shared" : "pg_check_n"), tmp;
    char what[160];
    cpu_use cpu;
    int flags = PROCS_VCLOCK | PROCS_WARM | (shared ? PROCS_SHARED : 0);
    scratch_of(&tmp, r);
    if (bench_procs(cfg, uri, cfg->pg_clients, ops, flags, pg_server_cpu_us, &tmp, &cpu) == 0) {
        res_extra(&tmp, "connections", cfg->pg_clients, "");
        snprintf(what, sizeof what, "%d processes, one connection each, Unix socket, "
                 "rls_check_at, every key present, %s", cfg->pg_clients,
                 shared ? "every process on the same keys, each checked once by each before"
                        : "each process on keys of its own, checked once before");
        cpu_extras(&tmp, &cpu, tmp.lat.ops, what);
    }
    keep_better(r, &tmp);
}

/* The same checks on SQLite (the side-by-side reference). */
static void sqlite_refs(const bench_cfg *cfg, long ops)
{
    bench_result *r = res_find("pg_sqlite_1");
    char path[4096], err[300], what[96];
    bench_lat lat;
    cpu_use cpu;
    check_spec sp = {"pg-sqlite.db", RULES_ONE, 1, PREP_WARM, 0, 1, cfg->keys, NULL};
    if (bench_check_cpu(cfg, &sp, ops, &lat, NULL, NULL, &cpu, err, sizeof err) != 0) {
        res_status(r, RES_FAILED, "%s", err);
    } else {
        res_set_lat(r, &lat);
        cpu_extras(r, &cpu, lat.ops, "1 process, one file, rls_check_at, every key present");
    }
    r = res_find("pg_sqlite_n");
    snprintf(path, sizeof path, "%s/pg-sqlite-n.db", cfg->dir);
    remove_db(path);
    if (setup_target(cfg, path, 1, err, sizeof err) != 0) {
        res_status(r, RES_FAILED, "%s", err);
    } else if (bench_procs(cfg, path, cfg->pg_clients, ops, PROCS_VCLOCK, NULL, r, &cpu) == 0) {
        snprintf(what, sizeof what, "%d processes on one file, rls_check_at, every key present",
                 cfg->pg_clients);
        cpu_extras(r, &cpu, r->lat.ops, what);
    }
    remove_db(path);
}

/* v with fmt, or "n/a" when it was not measured. */
static void fmt_num(char *buf, size_t size, double v, const char *fmt)
{
    if (isnan(v) || isinf(v))
        snprintf(buf, size, "n/a");
    else
        snprintf(buf, size, fmt, v);
}

static void side_by_side(const bench_cfg *cfg)
{
    static const struct {
        const char *label, *sqlite, *pg, *floor;
    } rows[] = {{"1 connection", "pg_sqlite_1", "pg_check_1", "pg_floor_1"},
                {"  keys new", "pg_sqlite_1", "pg_check_1_cold", "pg_floor_1"},
                {"N connections", "pg_sqlite_n", "pg_check_n", "pg_floor_n"},
                {"  keys shared", "pg_sqlite_n", "pg_check_n_shared", "pg_floor_n"}};
    printf("  SQLite vs PostgreSQL (rls_check_at, fixed_window, %ld keys; CPU us per check "
           "client+server):\n", cfg->keys);
    printf("  %-16s %12s %12s %12s %9s %9s %16s\n", "", "SQLite/s", "PG/s", "PG floor/s",
           "PG/floor", "PG/SQLite", "PG CPU/check");
    for (int i = 0; i < 4; i++) {
        const bench_result *s = res_find(rows[i].sqlite), *p = res_find(rows[i].pg),
                           *f = res_find(rows[i].floor);
        double sr = s->status == RES_OK ? lat_rate(&s->lat) : NAN;
        double pr = p->status == RES_OK ? lat_rate(&p->lat) : NAN;
        double fr = f->status == RES_OK ? lat_rate(&f->lat) : NAN;
        char label[32];
        if (i == 2)
            snprintf(label, sizeof label, "%d connections", cfg->pg_clients);
        else
            snprintf(label, sizeof label, "%s", rows[i].label);
        char v[6][24];
        fmt_num(v[0], sizeof v[0], sr, "%.0f");
        fmt_num(v[1], sizeof v[1], pr, "%.0f");
        fmt_num(v[2], sizeof v[2], fr, "%.0f");
        fmt_num(v[3], sizeof v[3], pr / fr, "%.2fx");
        fmt_num(v[4], sizeof v[4], pr / sr, "%.3fx");
        fmt_num(v[5], sizeof v[5], res_get_extra(p, "client_cpu_us_per_op"), "%.1f");
        char cpu[64];
        snprintf(cpu, sizeof cpu, "%s + %s", v[5], "");
        fmt_num(cpu + strlen(v[5]) + 3, sizeof cpu - strlen(v[5]) - 3,
                res_get_extra(p, "server_cpu_us_per_op"), "%.1f");
        printf("  %-16s %12s %12s %12s %9s %9s %16s\n", label, v[0], v[1], v[2], v[3], v[4], cpu);
    }
}

void bench_pg(const bench_cfg *cfg)
{
    char err[300], uri[2048];
    int rounds = cfg->rounds > 0 ? cfg->rounds : 1;
    long per = cfg->pg_ops / rounds;
    int rc = pg_cluster_start(cfg, err, sizeof err);
    if (rc != 0) {
        /* no server, no rlstore-on-PostgreSQL figures: the SQLite side alone
         * would compare with nothing */
        for (size_t i = 0; i < NPG_IDS; i++)
            res_status(res_find(PG_IDS[i]), rc > 0 ? RES_SKIPPED : RES_FAILED, "%s", err);
        printf("  pg: %s: %s\n", rc > 0 ? "skipped" : "failed", err);
        for (size_t i = 0; i < NPG_IDS; i++)
            report_line(res_find(PG_IDS[i]));
        return;
    }
    double w0 = now_us();
    int schema_ok = pg_schema(cfg, uri, sizeof uri, err, sizeof err) == 0;
    for (size_t i = 0; !schema_ok && i < NPG_IDS; i++)
        if (strncmp(PG_IDS[i], "pg_check", 8) == 0)
            res_status(res_find(PG_IDS[i]), RES_FAILED, "%s", err);
    double warm = (now_us() - w0) / 1e6;
    for (int round = 0; round < rounds; round++) {
        floor_round(cfg, "pg_floor_1", 1, per);
        if (res_find("pg_check_1")->status != RES_FAILED)
            check1_round(cfg, uri, per, 1);
        if (res_find("pg_check_1_cold")->status != RES_FAILED)
            check1_round(cfg, uri, per, 0);
        floor_round(cfg, "pg_floor_n", cfg->pg_clients, per);
        if (res_find("pg_check_n")->status != RES_FAILED)
            checkn_round(cfg, uri, per, 0);
        if (res_find("pg_check_n_shared")->status != RES_FAILED)
            checkn_round(cfg, uri, per, 1);
    }
    pg_stop();
    sqlite_refs(cfg, per);
    printf("  (pg: each PostgreSQL scenario the best of %d round(s) of %ld operations, "
           "interleaved; %ld keys checked once before, in %.1f s)\n", rounds, per, cfg->keys,
           warm);
    for (size_t i = 0; i < NPG_IDS; i++)
        report_line(res_find(PG_IDS[i]));
    side_by_side(cfg);
}
