/*
 * peer_pg.c - the PostgreSQL peer: one UPSERT counter per transaction
 * ("INSERT ... ON CONFLICT DO UPDATE ... RETURNING", prepared) on a random
 * key of the same key space, synchronous_commit=off, through pgbench with
 * one client (-n -c 1 -j 1 -M prepared -t N).
 *
 * Needs initdb, pg_ctl, pgbench and psql, found in PATH or in
 * /usr/lib/postgresql/<version>/bin (the newest), otherwise reported as
 * skipped (not installed).  A private cluster is created in a temporary
 * directory that also holds its Unix socket (no TCP listener; trust
 * authentication is safe because only the directory's owner can reach the
 * socket).  PostgreSQL refuses to run as root: as root the cluster belongs
 * to the "postgres" user (or "nobody"), whose commands run through
 * `runuser -u USER --` (or `su USER -s /bin/sh -c`).  The server is stopped
 * and the directory removed at the end, also on exit and signals.
 *
 * Throughput is pgbench's tps (without connection time); latencies come
 * from pgbench's per-transaction log (-l), so p50/p99/p99.9/max are
 * comparable with the other scenarios.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench.h"

static const char *const PG_GLOBS[] = {"/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin",
                                       "/usr/pgsql-*/bin", NULL};

static char pg_bin[PATH_MAX];    /* directory of initdb and pg_ctl */
static char pg_dir[1024];        /* the cluster's temporary directory, "" if none */
static char pg_user[64];         /* "" when not root */
static char runner[PATH_MAX];    /* runuser or su */
static int pg_running;

/* argv to run cmd as pg_user: runuser -u USER -- cmd..., or su. */
static void as_user(char **out, int max, char *const *cmd)
{
    static char shell_cmd[] = "exec \"$0\" \"$@\"";
    int n = 0;
    if (pg_user[0]) {
        out[n++] = runner;
        if (strstr(runner, "runuser")) {
            out[n++] = "-u";
            out[n++] = pg_user;
            out[n++] = "--";
        } else {
            out[n++] = pg_user;
            out[n++] = "-s";
            out[n++] = "/bin/sh";
            out[n++] = "-c";
            out[n++] = shell_cmd;
        }
    }
    for (int i = 0; cmd[i] && n < max - 1; i++)
        out[n++] = cmd[i];
    out[n] = NULL;
}

void pg_stop(void)
{
    char ctl[PATH_MAX + 16], data[PATH_MAX + 16];
    if (pg_running) {
        char *argv[16];
        snprintf(ctl, sizeof ctl, "%s/pg_ctl", pg_bin);
        snprintf(data, sizeof data, "%s/data", pg_dir);
        char *cmd[] = {ctl, "-D", data, "-m", "immediate", "-w", "stop", NULL};
        as_user(argv, 16, cmd);
        run(argv, NULL, -1, 60);
        pg_running = 0;
    }
    if (pg_dir[0]) {
        rm_rf(pg_dir);
        pg_dir[0] = '\0';
    }
}

/* Finds the tools; 0 or -1. */
static int find_tools(void)
{
    char initdb[PATH_MAX], real[PATH_MAX], p[PATH_MAX + 16];
    static const char *const need[] = {"pg_ctl", "pgbench", "psql", NULL};
    if (find_tool("initdb", PG_GLOBS, initdb, sizeof initdb) != 0 || !realpath(initdb, real))
        return -1;
    char *slash = strrchr(real, '/');
    *slash = '\0';
    snprintf(pg_bin, sizeof pg_bin, "%s", real);
    for (int i = 0; need[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", pg_bin, need[i]);
        if (access(p, X_OK) != 0)
            return -1;
    }
    return 0;
}

/* As root: picks the user and the way to become it; 0 or -1. */
static int pick_user(uid_t *uid, gid_t *gid, char *why, size_t size)
{
    static const char *const users[] = {"postgres", "nobody", NULL};
    pg_user[0] = '\0';
    if (geteuid() != 0)
        return 0;
    if (find_tool("runuser", NULL, runner, sizeof runner) != 0 &&
        find_tool("su", NULL, runner, sizeof runner) != 0) {
        snprintf(why, size, "running as root and neither runuser nor su found");
        return -1;
    }
    for (int i = 0; users[i]; i++) {
        struct passwd *pw = getpwnam(users[i]);
        if (pw && pw->pw_uid != 0) {
            snprintf(pg_user, sizeof pg_user, "%s", users[i]);
            *uid = pw->pw_uid;
            *gid = pw->pw_gid;
            return 0;
        }
    }
    snprintf(why, size, "running as root and no unprivileged user (postgres, nobody)");
    return -1;
}

/* Runs a PostgreSQL tool as the cluster's user; exit status. */
static int pg_run(char *const *cmd, const char *log, int cpu)
{
    char *argv[32];
    as_user(argv, 32, cmd);
    return run_in(argv, log, cpu, pg_dir, 300);
}

static int parse_pgbench(const char *out, double *tps)
{
    FILE *f = fopen(out, "r");
    char line[512];
    *tps = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "tps = %lf", tps) == 1)
            break;
    fclose(f);
    return *tps > 0 ? 0 : -1;
}

/* Latencies of pgbench's transaction logs <prefix>.*: 3rd field, us. */
static int read_tx_logs(const char *prefix, lat_rec *lat)
{
    char pat[PATH_MAX + 8], line[256];
    if (strlen(prefix) > PATH_MAX - 8)
        return -1;
    glob_t g;
    snprintf(pat, sizeof pat, "%.4000s.*", prefix);
    if (glob(pat, 0, NULL, &g) != 0)
        return -1;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        long c, t, us;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "%ld %ld %ld", &c, &t, &us) == 3 && lat_push(lat, (double)us) != 0)
                break;
        if (f)
            fclose(f);
    }
    globfree(&g);
    return lat->n > 0 ? 0 : -1;
}

/* psql -c sql as the client; 0 or -1 (err gets the log's tail). */
static int pg_sql(const char *port_s, const char *sqltext, char *err, size_t errsize)
{
    char tool[PATH_MAX + 16], log[PATH_MAX];
    snprintf(tool, sizeof tool, "%s/psql", pg_bin);
    snprintf(log, sizeof log, "%s/psql.log", pg_dir);
    char *argv[] = {tool, "-h", pg_dir, "-p", (char *)port_s, "-U", "bench", "-d", "postgres",
                    "-q", "-v", "ON_ERROR_STOP=1", "-c", (char *)sqltext, NULL};
    if (run_in(argv, log, -1, pg_dir, 60) == 0)
        return 0;
    file_tail(log, err, errsize);
    return -1;
}

/* initdb, pg_ctl start, the table and the pgbench script; 0 or -1. */
static int pg_setup(const bench_cfg *cfg, const char *port_s, char *err, size_t errsize)
{
    char data[PATH_MAX], log[PATH_MAX], opts[PATH_MAX], tool[PATH_MAX + 16], slog[PATH_MAX];
    char sql[PATH_MAX], tail[200];
    snprintf(data, sizeof data, "%s/data", pg_dir);
    snprintf(log, sizeof log, "%s/setup.log", pg_dir);
    snprintf(tool, sizeof tool, "%s/initdb", pg_bin);
    char *init[] = {tool, "-D", data, "-A", "trust", "-U", "bench", "--no-sync", "-E", "UTF8",
                    "--locale=C", NULL};
    if (pg_run(init, log, -1) != 0) {
        file_tail(log, tail, sizeof tail);
        snprintf(err, errsize, "initdb as %s failed: %s", pg_user[0] ? pg_user : "self", tail);
        return -1;
    }
    snprintf(tool, sizeof tool, "%s/pg_ctl", pg_bin);
    snprintf(slog, sizeof slog, "%s/server.log", pg_dir);
    snprintf(opts, sizeof opts, "-c listen_addresses='' -c unix_socket_directories='%s' -c port=%s"
             " -c synchronous_commit=off", pg_dir, port_s);
    char *start[] = {tool, "-D", data, "-l", slog, "-w", "-t", "60", "-o", opts, "start", NULL};
    pg_running = 1;
    if (pg_run(start, log, -1) != 0) {
        file_tail(slog, tail, sizeof tail);
        snprintf(err, errsize, "pg_ctl start failed: %s", tail);
        return -1;
    }
    if (pg_sql(port_s, "CREATE TABLE c(key text PRIMARY KEY, n bigint NOT NULL)", tail,
               sizeof tail) != 0) {
        snprintf(err, errsize, "psql CREATE TABLE failed: %s", tail);
        return -1;
    }
    /* the key as the other scenarios write it: "10.a.b.c" */
    snprintf(sql, sizeof sql, "%s/upsert.sql", pg_dir);
    FILE *f = fopen(sql, "w");
    if (!f) {
        snprintf(err, errsize, "cannot write %.200s", sql);
        return -1;
    }
    fprintf(f, "\\set k random(0, %ld)\n"
               "INSERT INTO c(key, n) VALUES ('10.' || (:k / 65536) || '.' || (:k / 256 %% 256)"
               " || '.' || (:k %% 256), 1) ON CONFLICT (key) DO UPDATE SET n = c.n + 1"
               " RETURNING n;\n",
            cfg->keys - 1);
    return fclose(f) == 0 ? 0 : -1;
}

/* The postmaster's pid (first line of data/postmaster.pid), or -1. */
static pid_t postmaster_pid(void)
{
    char path[PATH_MAX];
    long pid = -1;
    snprintf(path, sizeof path, "%s/data/postmaster.pid", pg_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = -1;
        fclose(f);
    }
    return (pid_t)pid;
}

/* One pgbench run in placement p on an emptied table. */
static int pg_measure(const bench_cfg *cfg, const char *port_s, const placement *p,
                      bench_lat *out, double *tps, char *err, size_t errsize)
{
    char tool[PATH_MAX + 16], sql[PATH_MAX], res[PATH_MAX], prefix[PATH_MAX];
    char arg_f[PATH_MAX + 16], n_s[24], tail[200];
    lat_rec lat;
    pid_t pm = postmaster_pid();
    if (pg_sql(port_s, "TRUNCATE c", tail, sizeof tail) != 0 || pm <= 0) {
        snprintf(err, errsize, "cannot empty the table: %s", tail);
        return -1;
    }
    /* a backend inherits the postmaster's CPUs when pgbench connects */
    pin_pid(pm, p->server_cpu);
    snprintf(tool, sizeof tool, "%s/pgbench", pg_bin);
    snprintf(sql, sizeof sql, "%s/upsert.sql", pg_dir);
    snprintf(res, sizeof res, "%s/pgbench-%s.out", pg_dir, p->name);
    snprintf(prefix, sizeof prefix, "%s/txlog-%s", pg_dir, p->name);
    snprintf(arg_f, sizeof arg_f, "--log-prefix=%s", prefix);
    snprintf(n_s, sizeof n_s, "%ld", cfg->pg_ops);
    char *argv[] = {tool, "-h", pg_dir, "-p", (char *)port_s, "-U", "bench", "-n", "-M",
                    "prepared", "-c", "1", "-j", "1", "-t", n_s, "-f", sql, "-l", arg_f,
                    "postgres", NULL};
    int rc = run_in(argv, res, p->client_cpu, pg_dir, 600);
    pin_pid(pm, -1);
    if (rc != 0 || parse_pgbench(res, tps) != 0) {
        file_tail(res, tail, sizeof tail);
        snprintf(err, errsize, "pgbench failed: %s", tail);
        return -1;
    }
    if (lat_init(&lat, cfg->pg_ops) != 0 || read_tx_logs(prefix, &lat) != 0) {
        snprintf(err, errsize, "no pgbench transaction log");
        lat_free(&lat);
        return -1;
    }
    lat_summary(&lat, (double)lat.n / *tps, out);
    lat_free(&lat);
    return 0;
}

void bench_postgres(const bench_cfg *cfg)
{
    bench_result *r = res_find("postgresql");
    char tmpl[900], why[256], port_s[16], err[300];
    uid_t uid = 0;
    gid_t gid = 0;
    placement pl[2];
    int npl = placements(pl), best = -1;
    bench_lat lat[2];
    double tps[2];
    if (find_tools() != 0) {
        res_status(r, RES_SKIPPED, "not installed: initdb, pg_ctl, pgbench, psql");
        return;
    }
    if (pick_user(&uid, &gid, why, sizeof why) != 0) {
        res_status(r, RES_SKIPPED, "%s", why);
        return;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%.800s/rlbench-pg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) {
        res_status(r, RES_FAILED, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(pg_dir, sizeof pg_dir, "%s", tmpl);
    if (pg_user[0] && chown(pg_dir, uid, gid) != 0) {
        res_status(r, RES_FAILED, "chown %s: %s", pg_dir, strerror(errno));
        pg_stop();
        return;
    }
    int port = free_port();
    snprintf(port_s, sizeof port_s, "%d", port > 0 ? port : 5432);
    if (pg_setup(cfg, port_s, err, sizeof err) != 0) {
        res_status(r, RES_FAILED, "%s", err);
        pg_stop();
        return;
    }
    for (int k = 0; k < npl; k++) {
        if (pg_measure(cfg, port_s, &pl[k], &lat[k], &tps[k], err, sizeof err) != 0) {
            res_status(r, RES_FAILED, "%s: %s", pl[k].name, err);
            pg_stop();
            return;
        }
        placement_extras(r, &pl[k], &lat[k]);
        if (best < 0 || tps[k] > tps[best])
            best = k;
    }
    pg_stop();
    res_set_lat(r, &lat[best]);
    res_extra(r, "pgbench_tps", tps[best], "/s");
    char pin[160];
    if (npl == 2)
        snprintf(pin, sizeof pin, "best placement: %s (unpinned %.0f/s, pinned to CPUs %d/%d "
                 "%.0f/s)", pl[best].name, tps[0], pl[1].server_cpu, pl[1].client_cpu, tps[1]);
    else
        snprintf(pin, sizeof pin, "not pinned (1 CPU)");
    res_status(r, RES_OK, "pgbench -M prepared -c 1 -j 1, synchronous_commit=off, Unix socket, "
               "server run as %s; %s", pg_user[0] ? pg_user : "this user", pin);
}
