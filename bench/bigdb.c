/*
 * bigdb.c - the scenarios on one large database (1M keys; fewer in quick
 * and smoke runs, which the names say):
 *
 *   fill_big           rls_check on a fresh database, every key once in a
 *                      pseudo-random order: the insert path, and how the
 *                      database is built (through the API, so it holds
 *                      exactly the rows the library writes)
 *   fixed_window_big   rls_check on existing keys of the full database
 *   rltop_during_load  the same checks while `rltop -b -n N -d 0.2` refreshes
 *                      against the same file; rltop's CPU per refresh
 *                      (getrusage RUSAGE_CHILDREN / N) and the drop of check
 *                      throughput against runs without rltop just before and
 *                      just after
 *   rss_per_handle     VmRSS growth of opening more handles (each making
 *                      RSS_CHECKS checks) after warm-up, per handle
 *   size_per_state     database bytes (after a TRUNCATE checkpoint) per
 *                      (limit, key) state row
 */
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rlstore.h>
#include "bench.h"

/* Checks per handle of the RSS measurement: enough random keys of the big
 * database to fill the page cache of a connection (SQLite's default of
 * 2 MB: about 2,000 pages of 1 KiB), i.e. a handle as warm as it gets. */
#define RSS_CHECKS 2000
/* rltop gets this long for its refreshes before it counts as hung. */
#define RLTOP_TIMEOUT_S 300

/* ops checks on existing keys, starting at walk position `from`; or, if
 * stop_pid is given, until that process exits (*stop_status gets its exit
 * status, -1 if it was killed after RLTOP_TIMEOUT_S) and ops is only the
 * initial size of the recorder. */
static int run_checks(rls_db *db, long keys, long from, long ops, pid_t *stop_pid,
                      int *stop_status, bench_lat *out, char *err, size_t errsize)
{
    lat_rec lat;
    rls_result res;
    char key[64];
    if (lat_init(&lat, ops) != 0) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    double t0 = now_us();
    for (long i = 0; stop_pid || i < ops; i++) {
        if (stop_pid && i % 256 == 0) {
            int st;
            if (waitpid(*stop_pid, &st, WNOHANG) == *stop_pid) {
                *stop_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                *stop_pid = 0;
                break;
            }
            if (now_us() - t0 > RLTOP_TIMEOUT_S * 1e6) {
                kill(*stop_pid, SIGKILL);
                waitpid(*stop_pid, NULL, 0);
                *stop_status = -1;
                *stop_pid = 0;
                break;
            }
        }
        key_of(key, sizeof key, from + i, keys);
        double a = now_us();
        int rc = rls_check(db, "signup", key, 1, &res);
        double d = now_us() - a;
        if (rc != RLS_OK || !res.allowed || lat_push(&lat, d) != 0) {
            snprintf(err, errsize, "check of %s: %s: %s", key, rls_strerror(rc), rls_errmsg(db));
            lat_free(&lat);
            return -1;
        }
    }
    lat_summary(&lat, (now_us() - t0) / 1e6, out);
    lat_free(&lat);
    return 0;
}

static double cpu_children_ms(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* The load while rltop runs, then the run without it. */
static void big_rltop_run(const bench_cfg *cfg, rls_db *db, bench_result *r, pid_t pid,
                          const char *out, double cpu0, double w0, const bench_lat *before)
{
    char note[300];
    bench_lat with, after;
    int status = -1;
    if (run_checks(db, cfg->big_keys, 2 * cfg->big_ops, cfg->big_ops, &pid, &status, &with, note,
                   sizeof note) != 0) {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        res_status(r, RES_FAILED, "%s", note);
        return;
    }
    double wall = (now_us() - w0) / 1e6;
    double cpu = cpu_children_ms() - cpu0;
    if (status < 0) {
        res_status(r, RES_FAILED, "rltop did not finish %d refreshes in %d s", cfg->rltop_n,
                   RLTOP_TIMEOUT_S);
        return;
    }
    if (status != 0 || file_size(out) <= 0) {
        file_tail(out, note, sizeof note);
        res_status(r, RES_FAILED, "rltop exited with %d: %s", status, note);
        return;
    }
    if (run_checks(db, cfg->big_keys, 3 * cfg->big_ops, cfg->big_ops, NULL, NULL, &after, note,
                   sizeof note) != 0) {
        res_status(r, RES_FAILED, "%s", note);
        return;
    }
    double without = (lat_rate(before) + lat_rate(&after)) / 2;
    res_set_lat(r, &with);
    res_extra(r, "rltop_refreshes", cfg->rltop_n, "");
    res_extra(r, "rltop_wall_s", wall, "s");
    res_extra(r, "cpu_ms_per_refresh", cpu / cfg->rltop_n, "ms");
    res_extra(r, "without_before_ops_per_s", lat_rate(before), "/s");
    res_extra(r, "without_after_ops_per_s", lat_rate(&after), "/s");
    res_extra(r, "throughput_drop_pct", 100.0 * (1.0 - lat_rate(&with) / without), "%");
    res_status(r, RES_OK, "rltop -b -n %d -d 0.2 for %.1f s; without rltop %.0f/s (before %.0f, "
               "after %.0f)", cfg->rltop_n, wall, without, lat_rate(before), lat_rate(&after));
}

static void big_rltop(const bench_cfg *cfg, rls_db *db, const char *path, const bench_lat *before)
{
    bench_result *r = res_find("rltop_during_load");
    char rltop[4200], out[4200], n[16];
    snprintf(rltop, sizeof rltop, "%s/../rltop", cfg->exe_dir);
    if (access(rltop, X_OK) != 0) {
        res_status(r, RES_SKIPPED, "rltop not built (%s)", rltop);
        return;
    }
    snprintf(out, sizeof out, "%s/rltop.out", cfg->dir);
    snprintf(n, sizeof n, "%d", cfg->rltop_n);
    char *argv[] = {rltop, "--db", (char *)path, "-b", "-n", n, "-d", "0.2", NULL};
    double cpu0 = cpu_children_ms();
    double w0 = now_us();
    pid_t pid = spawn(argv, out, -1);
    if (pid < 0) {
        res_status(r, RES_FAILED, "cannot start rltop");
        return;
    }
    big_rltop_run(cfg, db, r, pid, out, cpu0, w0, before);
    unlink(out);
}

static void big_rss(const bench_cfg *cfg, const char *path)
{
    bench_result *r = res_find("rss_per_handle");
    int n = cfg->rss_handles;
    rls_db **h = calloc((size_t)n, sizeof *h);
    rls_db *warm = NULL;
    rls_result res;
    char key[64];
    int rc = RLS_OK, opened = 0;
    if (!h) {
        res_status(r, RES_FAILED, "out of memory");
        return;
    }
    /* warm-up: one more handle opened, used and closed before measuring */
    rc = rls_open(&warm, path, NULL);
    for (int k = 0; rc == RLS_OK && k < 200; k++) {
        key_of(key, sizeof key, 7 * k, cfg->big_keys);
        rc = rls_check(warm, "signup", key, 1, &res);
    }
    rls_close(warm);
    long rss0 = vm_rss_kb();
    for (; rc == RLS_OK && opened < n; opened++) {
        rc = rls_open(&h[opened], path, NULL);
        for (int k = 0; rc == RLS_OK && k < RSS_CHECKS; k++) {
            key_of(key, sizeof key, 100003L * opened + 13 * k, cfg->big_keys);
            rc = rls_check(h[opened], "signup", key, 1, &res);
        }
    }
    long rss1 = vm_rss_kb();
    if (rc != RLS_OK)
        res_status(r, RES_FAILED, "handle %d: %s: %s", opened, rls_strerror(rc),
                   rls_errmsg(opened > 0 ? h[opened - 1] : NULL));
    for (int i = 0; i < opened; i++)
        rls_close(h[i]);
    free(h);
    if (rc != RLS_OK)
        return;
    if (rss0 < 0 || rss1 < 0) {
        res_status(r, RES_SKIPPED, "VmRSS not available");
        return;
    }
    double per = (double)(rss1 - rss0) / n;
    res_extra(r, "handles", n, "");
    res_extra(r, "rss_before_kb", (double)rss0, "kB");
    res_extra(r, "rss_after_kb", (double)rss1, "kB");
    res_extra(r, "kb_per_handle", per, "kB");
    res_extra(r, "mb_per_handle", per / 1024.0, "MB");
    res_status(r, RES_OK, "%d handles, %d checks each on random keys, after warm-up", n,
               RSS_CHECKS);
}

/* Scalar result of sql on db, or -1. */
static double sql_num(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    double v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void big_size(const bench_cfg *cfg, const char *path)
{
    bench_result *r = res_find("size_per_state");
    sqlite3 *db = NULL;
    char wal[4200];
    /* every rlstore handle is closed: checkpoint what is left in the WAL so
     * the file holds everything */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK) {
        res_status(r, RES_FAILED, "sqlite: %s", sqlite3_errmsg(db));
        sqlite3_close(db);
        return;
    }
    double states = sql_num(db, "SELECT count(*) FROM rls_state");
    double pages = sql_num(db, "PRAGMA page_count");
    double psize = sql_num(db, "PRAGMA page_size");
    double freel = sql_num(db, "PRAGMA freelist_count");
    /* dbstat is optional in SQLite builds: -1 when missing */
    double tbytes = sql_num(db, "SELECT sum(pgsize) FROM dbstat WHERE name = 'rls_state'");
    sqlite3_close(db);
    snprintf(wal, sizeof wal, "%s-wal", path);
    long fsize = file_size(path), wsize = file_size(wal);
    if (states <= 0 || fsize <= 0) {
        res_status(r, RES_FAILED, "no state rows or no file");
        return;
    }
    res_extra(r, "states", states, "");
    res_extra(r, "file_bytes", (double)fsize, "B");
    res_extra(r, "wal_bytes", wsize > 0 ? (double)wsize : 0, "B");
    res_extra(r, "page_size", psize, "B");
    res_extra(r, "pages", pages, "");
    res_extra(r, "free_pages", freel, "");
    res_extra(r, "bytes_per_state", (double)fsize / states, "B");
    if (tbytes > 0)
        res_extra(r, "state_table_bytes_per_state", tbytes / states, "B");
    res_status(r, RES_OK, "%.0f states in %ld bytes", states, fsize);
}

void bench_big(const bench_cfg *cfg)
{
    char path[4096], err[300];
    rls_db *db = NULL;
    bench_result *fill = res_find("fill_big"), *fw = res_find("fixed_window_big");
    bench_lat lat;
    snprintf(path, sizeof path, "%s/big.db", cfg->dir);
    remove_db(path);
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK)
        rc = rls_rules_apply(db, RULES_ONE, strlen(RULES_ONE), "bench", NULL, NULL);
    if (rc != RLS_OK) {
        res_status(fill, RES_FAILED, "setup: %s: %s", rls_strerror(rc), rls_errmsg(db));
        rls_close(db);
        res_skip_group("big", "the big database could not be built");
        return;
    }
    /* fill: positions 0..keys-1 of the walk are every key once */
    if (run_checks(db, cfg->big_keys, 0, cfg->big_keys, NULL, NULL, &lat, err, sizeof err) != 0) {
        res_status(fill, RES_FAILED, "%s", err);
        rls_close(db);
        remove_db(path);
        res_skip_group("big", "the big database could not be built");
        return;
    }
    res_set_lat(fill, &lat);
    report_line(fill);
    if (run_checks(db, cfg->big_keys, cfg->big_ops, cfg->big_ops, NULL, NULL, &lat, err,
                   sizeof err) != 0)
        res_status(fw, RES_FAILED, "%s", err);
    else
        res_set_lat(fw, &lat);
    report_line(fw);
    if (fw->status == RES_OK)
        big_rltop(cfg, db, path, &fw->lat);
    else
        res_status(res_find("rltop_during_load"), RES_SKIPPED, "no baseline");
    report_line(res_find("rltop_during_load"));
    big_rss(cfg, path);
    report_line(res_find("rss_per_handle"));
    rls_close(db);
    big_size(cfg, path);
    report_line(res_find("size_per_state"));
    remove_db(path);
}
