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
 *
 * The cluster and the floor are shared with the "pg" group (pg_backend.c),
 * which runs rlstore's PostgreSQL backend on the same cluster, against the
 * same floor with as many clients as it has processes.  RLBENCH_PG_BIN
 * names the directory of the server binaries to use (and only that one).
 * Server CPU time is read from /proc: the postmaster's own and its reaped
 * children's times, plus each live child's.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <dirent.h>
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
static char pg_port[16];         /* the cluster's port (of its socket file) */
static int pg_running;
static int pg_runs;              /* pgbench runs so far (names of their logs) */

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
    const char *only = getenv("RLBENCH_PG_BIN");
    if (only && *only) {
        snprintf(initdb, sizeof initdb, "%.4000s/initdb", only);
        if (access(initdb, X_OK) != 0 || !realpath(initdb, real))
            return -1;
    } else if (find_tool("initdb", PG_GLOBS, initdb, sizeof initdb) != 0 ||
               !realpath(initdb, real)) {
        return -1;
    }
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
int pg_cluster_sql(const char *sqltext, char *err, size_t errsize)
{
    char tool[PATH_MAX + 16], log[PATH_MAX];
    if (!pg_running) {
        snprintf(err, errsize, "no PostgreSQL cluster running");
        return -1;
    }
    snprintf(tool, sizeof tool, "%s/psql", pg_bin);
    snprintf(log, sizeof log, "%s/psql.log", pg_dir);
    unlink(log);
    char *argv[] = {tool, "-h", pg_dir, "-p", pg_port, "-U", "bench", "-d", "postgres",
                    "-q", "-v", "ON_ERROR_STOP=1", "-c", (char *)sqltext, NULL};
    if (run_in(argv, log, -1, pg_dir, 60) == 0)
        return 0;
    file_tail(log, err, errsize);
    return -1;
}

/* Appends s to buf at *o, percent-encoded unless plain (then as it is:
 * separators); all but unreserved characters and '/' are encoded.  0, or
 * -1 when it does not fit. */
static int uri_put(char *buf, size_t size, size_t *o, const char *s, int plain)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int keep = plain || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' ||
                   c == '/';
        if (*o + 4 >= size)
            return -1;
        if (keep) {
            buf[(*o)++] = (char)c;
        } else {
            buf[(*o)++] = '%';
            buf[(*o)++] = hex[c >> 4];
            buf[(*o)++] = hex[c & 15];
        }
    }
    buf[*o] = '\0';
    return 0;
}

int pg_cluster_uri(char *buf, size_t size, const char *schema)
{
    size_t o = 0;
    if (!pg_running || size == 0)
        return -1;
    buf[0] = '\0';
    if (uri_put(buf, size, &o, "postgresql://bench@/postgres?host=", 1) != 0 ||
        uri_put(buf, size, &o, pg_dir, 0) != 0 || uri_put(buf, size, &o, "&port=", 1) != 0 ||
        uri_put(buf, size, &o, pg_port, 0) != 0)
        return -1;
    if (schema && (uri_put(buf, size, &o, "&options=-csearch_path%3D", 1) != 0 ||
                   uri_put(buf, size, &o, schema, 0) != 0))
        return -1;
    return 0;
}

/* initdb, pg_ctl start, the table and the pgbench script; 0 or -1. */
static int pg_setup(const bench_cfg *cfg, char *err, size_t errsize)
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
             " -c synchronous_commit=off", pg_dir, pg_port);
    char *start[] = {tool, "-D", data, "-l", slog, "-w", "-t", "60", "-o", opts, "start", NULL};
    pg_running = 1;
    if (pg_run(start, log, -1) != 0) {
        file_tail(slog, tail, sizeof tail);
        snprintf(err, errsize, "pg_ctl start failed: %s", tail);
        return -1;
    }
    if (pg_cluster_sql("CREATE TABLE c(key text PRIMARY KEY, n bigint NOT NULL)", tail,
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

int pg_cluster_start(const bench_cfg *cfg, char *err, size_t errsize)
{
    char tmpl[900];
    uid_t uid = 0;
    gid_t gid = 0;
    if (pg_running)
        return 0;
    if (find_tools() != 0) {
        const char *only = getenv("RLBENCH_PG_BIN");
        snprintf(err, errsize, "not installed: initdb, pg_ctl, pgbench, psql%s%.200s",
                 only && *only ? " in RLBENCH_PG_BIN=" : "", only && *only ? only : "");
        return 1;
    }
    if (pick_user(&uid, &gid, err, errsize) != 0)
        return 1;
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%.800s/rlbench-pg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) {
        snprintf(err, errsize, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    snprintf(pg_dir, sizeof pg_dir, "%s", tmpl);
    if (pg_user[0] && chown(pg_dir, uid, gid) != 0) {
        snprintf(err, errsize, "chown %s: %s", pg_dir, strerror(errno));
        pg_stop();
        return -1;
    }
    int port = free_port();
    snprintf(pg_port, sizeof pg_port, "%d", port > 0 ? port : 5432);
    if (pg_setup(cfg, err, errsize) != 0) {
        pg_stop();
        return -1;
    }
    return 0;
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

/* Fields of /proc/<pid>/stat: parent, and CPU ticks (own, reaped children). */
static int proc_stat(long pid, long *ppid, double *own, double *children)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');  /* the command name may hold spaces */
    unsigned long long ut, st;
    long long cut, cst;
    char state;
    long pp;
    if (!p || sscanf(p + 1, " %c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
                     &state, &pp, &ut, &st, &cut, &cst) != 6)
        return -1;
    *ppid = pp;
    *own = (double)(ut + st);
    *children = (double)(cut + cst);
    return 0;
}

int pg_server_cpu_us(double *us)
{
    long pm = (long)postmaster_pid(), ppid;
    double own, children, ticks = 0;
    double hz = (double)sysconf(_SC_CLK_TCK);
    if (pm <= 0 || hz <= 0 || proc_stat(pm, &ppid, &own, &children) != 0)
        return -1;
    ticks = own + children;
    DIR *d = opendir("/proc");
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (pid > 0 && !*end && pid != pm && proc_stat(pid, &ppid, &own, &children) == 0 &&
            ppid == pm)
            ticks += own + children;
    }
    closedir(d);
    *us = ticks / hz * 1e6;
    return 0;
}

int pg_floor_measure(const bench_cfg *cfg, int clients, long ops, int prefill,
                     const placement *p, bench_lat *out, double *tps, cpu_use *cpu, char *err,
                     size_t errsize)
{
    char tool[PATH_MAX + 16], sql[PATH_MAX], res[PATH_MAX], prefix[PATH_MAX];
    char arg_f[PATH_MAX + 16], n_s[24], c_s[16], tail[200];
    lat_rec lat;
    double srv0 = 0, srv1 = 0;
    char fill[320];
    pid_t pm = postmaster_pid();
    if (clients < 1)
        clients = 1;
    /* the keys as the script writes them (pg_setup) */
    snprintf(fill, sizeof fill, "TRUNCATE c; INSERT INTO c(key, n) SELECT '10.' || (k / 65536)"
             " || '.' || (k / 256 %% 256) || '.' || (k %% 256), 1"
             " FROM generate_series(0, %ld) AS k", cfg->keys - 1);
    if (pg_cluster_sql(prefill ? fill : "TRUNCATE c", tail, sizeof tail) != 0 || pm <= 0) {
        snprintf(err, errsize, "cannot empty the table: %s", tail);
        return -1;
    }
    /* a backend inherits the postmaster's CPUs when pgbench connects */
    pin_pid(pm, p->server_cpu);
    int run_no = ++pg_runs;
    snprintf(tool, sizeof tool, "%s/pgbench", pg_bin);
    snprintf(sql, sizeof sql, "%s/upsert.sql", pg_dir);
    snprintf(res, sizeof res, "%s/pgbench-%d-%s.out", pg_dir, run_no, p->name);
    snprintf(prefix, sizeof prefix, "%s/txlog-%d-%s", pg_dir, run_no, p->name);
    snprintf(arg_f, sizeof arg_f, "--log-prefix=%s", prefix);
    snprintf(n_s, sizeof n_s, "%ld", ops / clients > 0 ? ops / clients : 1);
    snprintf(c_s, sizeof c_s, "%d", clients);
    char *argv[] = {tool, "-h", pg_dir, "-p", pg_port, "-U", "bench", "-n", "-M",
                    "prepared", "-c", c_s, "-j", c_s, "-t", n_s, "-f", sql, "-l", arg_f,
                    "postgres", NULL};
    int have_srv = pg_server_cpu_us(&srv0) == 0;
    double c0 = cpu_children_us();
    int rc = run_in(argv, res, p->client_cpu, pg_dir, 600);
    double c1 = cpu_children_us();
    have_srv = have_srv && pg_server_cpu_us(&srv1) == 0;
    pin_pid(pm, -1);
    if (rc != 0 || parse_pgbench(res, tps) != 0) {
        file_tail(res, tail, sizeof tail);
        snprintf(err, errsize, "pgbench failed: %s", tail);
        return -1;
    }
    if (lat_init(&lat, ops) != 0 || read_tx_logs(prefix, &lat) != 0) {
        snprintf(err, errsize, "no pgbench transaction log");
        lat_free(&lat);
        return -1;
    }
    lat_summary(&lat, (double)lat.n / *tps, out);
    lat_free(&lat);
    if (cpu) {
        /* pgbench's CPU includes its connection setup and its log writes */
        cpu->client_us = c1 - c0;
        cpu->server_us = have_srv ? srv1 - srv0 : -1;
    }
    return 0;
}

void bench_postgres(const bench_cfg *cfg)
{
    bench_result *r = res_find("postgresql");
    char err[300];
    placement pl[2];
    int npl = placements(pl), best = -1;
    bench_lat lat[2];
    double tps[2];
    int rc = pg_cluster_start(cfg, err, sizeof err);
    if (rc != 0) {
        res_status(r, rc > 0 ? RES_SKIPPED : RES_FAILED, "%s", err);
        return;
    }
    for (int k = 0; k < npl; k++) {
        if (pg_floor_measure(cfg, 1, cfg->pg_ops, 0, &pl[k], &lat[k], &tps[k], NULL, err,
                             sizeof err) != 0) {
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
