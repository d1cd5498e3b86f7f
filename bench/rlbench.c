/*
 * rlbench.c - the benchmark harness of librlstore (issue #6): every scenario
 * against baselines measured in the same run on the same machine.
 *
 * Runs, in this order (groups for --only in brackets):
 *   [core]        the SQLite floor, rls_check one rule and two limits on 10k
 *                 keys, each algorithm; in rounds, keeping each one's best
 *   [denied]      a key over its limit, a blocked key
 *   [durability]  durability FULL against an fsync-per-commit floor
 *   [multi]       1, 2 and 4 processes on one file
 *   [big]         1M keys: fill, checks, rltop refreshing during load,
 *                 RSS per handle, bytes per state
 *   [memory]      the memory class's floors: an in-process hash, an
 *                 nginx-style shared-memory zone (1 and 4 processes), and
 *                 storage/shm's table against them (memory.c; after big,
 *                 so its heap churn never reaches big's RSS figures)
 *   [redis]       Redis fixed-window Lua script (skipped if not installed)
 *   [postgresql]  PostgreSQL UPSERT via pgbench (skipped if not installed)
 *   [pg]          rlstore's PostgreSQL backend on a private cluster: 1 and N
 *                 connections against the pgbench UPSERT floor with as many
 *                 clients, and the same checks on SQLite (pg_backend.c;
 *                 skipped if PostgreSQL is not installed)
 * then prints every scenario with its ratios and targets, and writes the
 * JSON result file (default: results.json next to the binary).  Exit status
 * 0 when every scenario ran or was skipped, 1 when one failed, 2 on usage
 * errors; targets not met do not change it (they are measurements).
 *
 * Usage: rlbench [--quick | --smoke] [--ops N] [--keys N] [--big-keys N]
 *                [--pg-clients N] [--json FILE] [--dir DIR] [--no-peers]
 *                [--only GROUP,...]
 * --no-peers skips the redis and postgresql peers; the pg group measures
 * rlstore itself and runs whenever PostgreSQL is installed (RLBENCH_PG_BIN:
 * the directory of its server binaries, see peer_pg.c).
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench.h"
#include "memkill.h"
#include "memory.h"

static const char *const GROUPS[] = {"core", "denied", "durability", "multi", "big", "memory", "threads",
                                     "redis", "postgresql", "pg", NULL};

static char scratch[PATH_MAX];  /* our own scratch directory, "" if --dir */

static void cleanup(void)
{
    redis_stop();
    pg_stop();
    if (scratch[0]) {
        rm_rf(scratch);
        scratch[0] = '\0';
    }
}

/* Not strictly async-signal-safe (it forks rm and pg_ctl), which is
 * acceptable for a benchmark: it leaves no server running behind a ^C. */
static void on_signal(int sig)
{
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

int cfg_selected(const bench_cfg *cfg, const char *group)
{
    if (!cfg->only)
        return 1;
    size_t n = strlen(group);
    for (const char *s = cfg->only; *s;) {
        size_t len = strcspn(s, ",");
        if (len == n && strncmp(s, group, n) == 0)
            return 1;
        s += len + (s[len] == ',');
    }
    return 0;
}

/* "10k", "1M", "200k", "5000" for names. */
static const char *count_str(long n)
{
    static char buf[4][24];
    static int k;
    char *b = buf[k++ % 4];
    if (n >= 1000000 && n % 1000000 == 0)
        snprintf(b, 24, "%ldM", n / 1000000);
    else if (n >= 1000 && n % 1000 == 0)
        snprintf(b, 24, "%ldk", n / 1000);
    else
        snprintf(b, 24, "%ld", n);
    return b;
}

/* Operation counts of the three modes.  full: `make bench`, a few minutes;
 * quick: `make bench QUICK=1`, under a minute, 200k instead of 1M keys;
 * smoke: a few seconds, for the harness's own test. */
static const struct preset {
    const char *mode;
    long ops;
    int rounds;
    long keys, big_keys, big_ops, full_ops, multi_ops, blocked_keys;
    int rltop_n, rss_handles;
    long redis_ops, pg_ops;
    int pg_clients;
} PRESETS[] = {
    {"full", 200000, 2, 10000, 1000000, 200000, 3000, 200000, 10000, 20, 20, 50000, 30000, 4},
    {"quick", 40000, 1, 10000, 200000, 20000, 500, 40000, 1000, 8, 20, 20000, 10000, 4},
    {"smoke", 2000, 1, 1000, 5000, 2000, 50, 2000, 100, 2, 4, 2000, 1000, 4},
};

static void preset(bench_cfg *c, const char *mode)
{
    const struct preset *p = &PRESETS[0];
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
        if (strcmp(PRESETS[i].mode, mode) == 0)
            p = &PRESETS[i];
    c->mode = p->mode;
    c->ops = p->ops;
    c->rounds = p->rounds;
    c->keys = p->keys;
    c->big_keys = p->big_keys;
    c->big_ops = p->big_ops;
    c->full_ops = p->full_ops;
    c->multi_ops = p->multi_ops;
    c->blocked_keys = p->blocked_keys;
    c->rltop_n = p->rltop_n;
    c->rss_handles = p->rss_handles;
    c->redis_ops = p->redis_ops;
    c->pg_ops = p->pg_ops;
    c->pg_clients = p->pg_clients;
}

static void register_all(const bench_cfg *c)
{
    char name[96];
    const char *small = count_str(c->keys), *big = count_str(c->big_keys);
    const char *reduced = c->big_keys < 1000000 ? " (REDUCED)" : "";
    snprintf(name, sizeof name, "sqlite floor: upsert, sync NORMAL, %s keys", small);
    res_add("floor", "core", name);
    snprintf(name, sizeof name, "rls_check fixed_window, %s keys", small);
    res_add("fixed_window_10k", "core", name);
    res_add("two_limits", "core", "rls_check 2 limits (daily + weekly)");
    res_add("batch_2", "core", "rls_check_many of 2 items (2 actions)");
    for (int i = 0; i < 6; i++) {
        char id[40];
        snprintf(id, sizeof id, "algo_%s", ALGORITHMS[i]);
        snprintf(name, sizeof name, "rls_check %s", ALGORITHMS[i]);
        res_add(id, "core", name);
    }
    res_add("denied_over_limit", "denied", "rls_check denied: key over its limit");
    snprintf(name, sizeof name, "rls_check denied: key blocked (%s keys)",
             count_str(c->blocked_keys < c->keys ? c->blocked_keys : c->keys));
    res_add("denied_blocked", "denied", name);
    res_add("floor_fsync", "durability", "sqlite fsync floor: upsert, sync FULL");
    res_add("full_durability", "durability", "rls_check durability FULL");
    res_add("multi_1", "multi", "1 process on one file");
    res_add("multi_2", "multi", "2 processes on one file: total, worst");
    res_add("multi_4", "multi", "4 processes on one file: total, worst");
    snprintf(name, sizeof name, "rls_check new keys (fill), %s keys%s", big, reduced);
    res_add("fill_big", "big", name);
    snprintf(name, sizeof name, "rls_check fixed_window, %s keys%s", big, reduced);
    res_add("fixed_window_big", "big", name);
    snprintf(name, sizeof name, "rls_check, %s keys, rltop refreshing%s", big, reduced);
    res_add("rltop_during_load", "big", name);
    res_add("rss_per_handle", "big", "RSS per open handle");
    snprintf(name, sizeof name, "database size per state, %s keys%s", big, reduced);
    res_add("size_per_state", "big", name);
    mem_register(c);
    memkill_register(c);
    threads_register(c);
    res_add("redis", "redis", "Redis Lua fixed window, 1 client");
    res_add("postgresql", "postgresql", "PostgreSQL UPSERT (pgbench), 1 client");
    res_add("pg_floor_1", "pg", "pg floor: pgbench UPSERT, 1 client");
    res_add("pg_check_1", "pg", "rls_check_at on PostgreSQL, 1 connection");
    res_add("pg_check_1_cold", "pg", "rls_check_at on PostgreSQL, 1 connection, keys new to it");
    snprintf(name, sizeof name, "pg floor: pgbench UPSERT, %d clients", c->pg_clients);
    res_add("pg_floor_n", "pg", name);
    snprintf(name, sizeof name, "rls_check_at on PostgreSQL, %d connections", c->pg_clients);
    res_add("pg_check_n", "pg", name);
    snprintf(name, sizeof name, "rls_check_at on PostgreSQL, %d connections, keys shared",
             c->pg_clients);
    res_add("pg_check_n_shared", "pg", name);
    res_add("pg_sqlite_1", "pg", "rls_check_at on SQLite, 1 process (vs pg)");
    snprintf(name, sizeof name, "rls_check_at on SQLite, %d processes (vs pg)", c->pg_clients);
    res_add("pg_sqlite_n", "pg", name);
}

/* Runs one single-process scenario into the result, keeping the better
 * (higher throughput) of successive calls. */
static void keep_best(bench_result *r, int rc, const bench_lat *lat, const char *err)
{
    if (rc != 0) {
        res_status(r, RES_FAILED, "%s", err);
        return;
    }
    if (r->status == RES_FAILED)
        return;
    if (!r->has_lat || lat_rate(lat) > lat_rate(&r->lat))
        res_set_lat(r, lat);
}

static void run_core(const bench_cfg *cfg)
{
    long per = cfg->ops / cfg->rounds;
    char rules[6][512], err[300];
    check_spec one = {"check.db", RULES_ONE, 1, PREP_NONE, 0, 0, cfg->keys, NULL};
    check_spec two = {"check2.db", RULES_TWO, 1, PREP_NONE, 0, 0, cfg->keys, NULL};
    bench_lat lat;
    for (int i = 0; i < 6; i++)
        rules_for_algorithm(rules[i], sizeof rules[i], ALGORITHMS[i]);
    for (int round = 0; round < cfg->rounds; round++) {
        int rc = bench_floor(cfg, 0, per, &lat, err, sizeof err);
        keep_best(res_find("floor"), rc, &lat, err);
        rc = bench_check(cfg, &one, per, &lat, NULL, err, sizeof err);
        keep_best(res_find("fixed_window_10k"), rc, &lat, err);
        rc = bench_check(cfg, &two, per, &lat, NULL, err, sizeof err);
        keep_best(res_find("two_limits"), rc, &lat, err);
        rc = bench_batch2(cfg, per, &lat, err, sizeof err);
        keep_best(res_find("batch_2"), rc, &lat, err);
        for (int i = 0; i < 6; i++) {
            char id[40];
            check_spec a = {"algo.db", rules[i], 1, PREP_NONE, 0, 0, cfg->keys, NULL};
            snprintf(id, sizeof id, "algo_%s", ALGORITHMS[i]);
            rc = bench_check(cfg, &a, per, &lat, NULL, err, sizeof err);
            keep_best(res_find(id), rc, &lat, err);
        }
    }
    static const char *const ids[] = {"floor", "fixed_window_10k", "two_limits", "batch_2",
                                      "algo_fixed_window",
                                      "algo_sliding_window", "algo_sliding_log",
                                      "algo_token_bucket", "algo_gcra", "algo_leaky_bucket"};
    printf("  (core: each the best of %d round(s) of %ld operations, interleaved)\n",
           cfg->rounds, per);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        report_line(res_find(ids[i]));
}

static void run_denied(const bench_cfg *cfg)
{
    char err[300];
    double prep;
    bench_lat lat;
    long blocked = cfg->blocked_keys < cfg->keys ? cfg->blocked_keys : cfg->keys;
    check_spec over = {"denied.db", RULES_DENY, 0, PREP_OVER_LIMIT, 0, 1, cfg->keys, NULL};
    check_spec block = {"blocked.db", RULES_ONE, 0, PREP_BLOCK, 0, 1, blocked, NULL};
    bench_result *r = res_find("denied_over_limit");
    if (bench_check(cfg, &over, cfg->ops, &lat, &prep, err, sizeof err) != 0) {
        res_status(r, RES_FAILED, "%s", err);
    } else {
        res_set_lat(r, &lat);
        res_status(r, RES_OK, "limit 1 a day, every key charged once before the timing");
    }
    report_line(r);
    r = res_find("denied_blocked");
    if (bench_check(cfg, &block, cfg->ops, &lat, &prep, err, sizeof err) != 0) {
        res_status(r, RES_FAILED, "%s", err);
    } else {
        res_set_lat(r, &lat);
        res_extra(r, "block_set_per_s", (double)blocked / prep, "/s");
        res_status(r, RES_OK, "%ld keys blocked forever by rls_block_set_at (%.0f/s)", blocked,
                   (double)blocked / prep);
    }
    report_line(r);
}

static void run_durability(const bench_cfg *cfg)
{
    char err[300];
    bench_lat lat;
    check_spec full = {"full.db", RULES_ONE, 1, PREP_NONE, 1, 0, cfg->keys, NULL};
    bench_result *r = res_find("floor_fsync");
    keep_best(r, bench_floor(cfg, 1, cfg->full_ops, &lat, err, sizeof err), &lat, err);
    report_line(r);
    r = res_find("full_durability");
    keep_best(r, bench_check(cfg, &full, cfg->full_ops, &lat, NULL, err, sizeof err), &lat, err);
    report_line(r);
}

static void run_multi(const bench_cfg *cfg)
{
    static const int n[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "multi_%d", n[i]);
        bench_result *r = res_find(id);
        bench_multi(cfg, n[i], cfg->multi_ops, r);
        report_line(r);
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: rlbench [--quick | --smoke] [--ops N] [--keys N] [--big-keys N]\n"
            "               [--pg-clients N] [--json FILE] [--dir DIR] [--no-peers]\n"
            "               [--only GROUP,...]\n"
            "groups: core denied durability multi big memory threads redis postgresql pg\n");
}

static long arg_long(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v >= lo && v <= hi ? v : -1;
}

int main(int argc, char **argv)
{
    bench_cfg cfg;
    const char *json = NULL, *dir = NULL, *mode = "full", *only = NULL;
    long ops = 0, keys = 0, big = 0, pg_clients = 0;
    int no_peers = 0;
    char exe[PATH_MAX], jsonbuf[PATH_MAX + 32], dirbuf[PATH_MAX];
    memset(&cfg, 0, sizeof cfg);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0)
            mode = "quick";
        else if (strcmp(a, "--smoke") == 0)
            mode = "smoke";
        else if (strcmp(a, "--no-peers") == 0)
            no_peers = 1;
        else if (strcmp(a, "--ops") == 0 && v && (ops = arg_long(v, 100, 100000000)) > 0)
            i++;
        else if (strcmp(a, "--keys") == 0 && v && (keys = arg_long(v, 1, 1L << 24)) > 0)
            i++;
        else if (strcmp(a, "--big-keys") == 0 && v && (big = arg_long(v, 1, 1L << 24)) > 0)
            i++;
        else if (strcmp(a, "--pg-clients") == 0 && v &&
                 (pg_clients = arg_long(v, 1, BENCH_PROCS_MAX)) > 0)
            i++;
        else if (strcmp(a, "--json") == 0 && v)
            json = argv[++i];
        else if (strcmp(a, "--dir") == 0 && v)
            dir = argv[++i];
        else if (strcmp(a, "--only") == 0 && v)
            only = argv[++i];
        else {
            usage();
            return 2;
        }
    }
    preset(&cfg, mode);
    cfg.peers = !no_peers;
    cfg.only = only;
    cfg.ops = ops ? ops : cfg.ops;
    cfg.keys = keys ? keys : cfg.keys;
    cfg.big_keys = big ? big : cfg.big_keys;
    cfg.pg_clients = pg_clients ? (int)pg_clients : cfg.pg_clients;
    if (cfg.rounds > 1 && cfg.ops < 2 * 100)
        cfg.rounds = 1;
    for (const char *s = cfg.only; s && *s;) {
        size_t len = strcspn(s, ",");
        int ok = 0;
        for (int g = 0; GROUPS[g]; g++)
            ok |= strlen(GROUPS[g]) == len && strncmp(GROUPS[g], s, len) == 0;
        if (!ok) {
            fprintf(stderr, "rlbench: unknown group '%.*s'\n", (int)len, s);
            usage();
            return 2;
        }
        s += len + (s[len] == ',');
    }

    /* where the binary is: rltop is next to it, results.json goes there */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0)
        exe[n] = '\0';
    else
        snprintf(exe, sizeof exe, "%s", argv[0]);
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(exe, sizeof exe, ".");
    cfg.exe_dir = exe;
    if (!json) {
        snprintf(jsonbuf, sizeof jsonbuf, "%s/results.json", exe);
        json = jsonbuf;
    }
    if (!dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/rlbench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(scratch)) {
            perror("rlbench: mkdtemp");
            return 1;
        }
        dir = scratch;
    } else if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0) {
        fprintf(stderr, "rlbench: cannot use directory '%s'\n", dir);
        return 1;
    }
    if (!realpath(dir, dirbuf)) {
        perror("rlbench: realpath");
        return 1;
    }
    cfg.dir = dirbuf;
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    signal(SIGPIPE, SIG_IGN);

    register_all(&cfg);
    printf("rlbench (%s run): %ld ops per 10k-key scenario in %d round(s), %ld keys, "
           "%ld big keys%s\n",
           cfg.mode, cfg.ops, cfg.rounds, cfg.keys, cfg.big_keys,
           strcmp(cfg.mode, "full") ? " (REDUCED: not a full run)" : "");
    report_machine(&cfg);
    double t0 = now_us();
    static const struct {
        const char *group;
        void (*fn)(const bench_cfg *);
        int peer;
    } steps[] = {{"core", run_core, 0},    {"denied", run_denied, 0},
                 {"durability", run_durability, 0}, {"multi", run_multi, 0},
                 {"big", bench_big, 0},    {"memory", bench_memory, 0},
                 {"memory", bench_memkill, 0},
                 {"threads", bench_threads, 0},
                 {"redis", bench_redis, 1},
                 {"postgresql", bench_postgres, 1}, {"pg", bench_pg, 0}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (steps[i].peer && !cfg.peers) {
            res_skip_group(steps[i].group, "peers disabled by --no-peers");
            report_line(res_find(steps[i].group));
            continue;
        }
        if (!cfg_selected(&cfg, steps[i].group)) {
            res_skip_group(steps[i].group, "not selected by --only");
            continue;
        }
        double g0 = now_us();
        steps[i].fn(&cfg);
        if (steps[i].peer)
            report_line(res_find(steps[i].group));
        printf("  [%s: %.1f s]\n", steps[i].group, (now_us() - g0) / 1e6);
    }
    double total = (now_us() - t0) / 1e6;
    report_print();
    int failed = report_failed();
    int wrote = report_json(json, &cfg, total);
    printf("total %.1f s; results in %s\n", total, json);
    cleanup();
    return failed || wrote != 0 ? 1 : 0;
}
