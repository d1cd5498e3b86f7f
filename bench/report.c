/*
 * report.c - the results of one run: the registry of scenarios, the ratios
 * against baselines measured in the same run with the target next to each,
 * the printed report and the JSON result file with the machine description.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <rlstore.h>
#include "bench.h"

#define RES_MAX 64

static bench_result results[RES_MAX];
static int nresults;

/* ---- registry ----------------------------------------------------------- */
bench_result *res_add(const char *id, const char *group, const char *name)
{
    if (nresults == RES_MAX)
        return NULL;
    bench_result *r = &results[nresults++];
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->group, sizeof r->group, "%s", group);
    snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

bench_result *res_find(const char *id)
{
    for (int i = 0; i < nresults; i++)
        if (strcmp(results[i].id, id) == 0)
            return &results[i];
    return NULL;
}

void res_set_lat(bench_result *r, const bench_lat *lat)
{
    r->lat = *lat;
    r->has_lat = 1;
    r->status = RES_OK;
}

void res_extra(bench_result *r, const char *name, double value, const char *unit)
{
    for (int i = 0; i < r->nextra; i++) {
        if (strcmp(r->extra[i].name, name) == 0) {
            r->extra[i].value = value;
            return;
        }
    }
    if (r->nextra == BENCH_EXTRA_MAX)
        return;
    bench_extra *e = &r->extra[r->nextra++];
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->unit, sizeof e->unit, "%s", unit ? unit : "");
    e->value = value;
}

double res_get_extra(const bench_result *r, const char *name)
{
    for (int i = 0; i < r->nextra; i++)
        if (strcmp(r->extra[i].name, name) == 0)
            return r->extra[i].value;
    return NAN;
}

void res_status(bench_result *r, int status, const char *fmt, ...)
{
    va_list ap;
    r->status = status;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
}

void res_skip_group(const char *group, const char *note)
{
    for (int i = 0; i < nresults; i++)
        if (results[i].status == RES_PENDING && strcmp(results[i].group, group) == 0)
            res_status(&results[i], RES_SKIPPED, "%s", note);
}

int report_failed(void)
{
    int n = 0;
    for (int i = 0; i < nresults; i++)
        n += results[i].status == RES_FAILED || results[i].status == RES_PENDING;
    return n;
}

/* ---- ratios and targets ------------------------------------------------- */
/* M_EXTRA: the scenario's extra `extra` (baseline's the same);
 * M_RATE_X, M_P50_X: the scenario's throughput or p50 over the baseline's
 * extra `extra` (e.g. a peer's figure in its other placement). */
enum { M_RATE, M_P50, M_P99, M_P999, M_MAX, M_EXTRA, M_RATE_X, M_P50_X };
enum { T_NONE, T_GE, T_LE };

typedef struct ratio_spec {
    const char *scenario;
    const char *baseline;  /* NULL: the value itself, not a ratio */
    int metric;
    const char *extra;     /* M_EXTRA: the scenario's extra of that name */
    int op;
    double target;
    const char *what;
} ratio_spec;

static const ratio_spec RATIOS[] = {
    {"fixed_window_10k", "floor", M_RATE, NULL, T_GE, 0.9, "throughput vs floor"},
    {"fixed_window_10k", NULL, M_P999, NULL, T_LE, 1000, "p99.9 (us)"},
    {"fixed_window_10k", "redis", M_RATE, NULL, T_GE, 3.5, "throughput vs Redis"},
    {"fixed_window_10k", "redis", M_P50, NULL, T_LE, 0.3, "p50 vs Redis"},
    {"fixed_window_10k", "redis", M_RATE_X, "pinned_ops_per_s", T_NONE, 0,
     "throughput vs Redis, 2 CPUs pinned"},
    {"fixed_window_10k", "redis", M_P50_X, "pinned_p50_us", T_NONE, 0,
     "p50 vs Redis, 2 CPUs pinned"},
    {"fixed_window_10k", "postgresql", M_RATE, NULL, T_NONE, 0, "throughput vs PostgreSQL"},
    {"fixed_window_10k", "postgresql", M_P50, NULL, T_NONE, 0, "p50 vs PostgreSQL"},
    /* issue #19: how far the durable check is from the memory class's
     * physical limits (memory.c); its targets: a memory-only check >= 50x
     * the durable check and >= 0.5x the shm floor */
    {"fixed_window_10k", "floor_inproc_hash", M_RATE, NULL, T_NONE, 0,
     "throughput vs in-process floor"},
    {"fixed_window_10k", "floor_shm_hash", M_RATE, NULL, T_NONE, 0, "throughput vs shm floor"},
    {"two_limits", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"two_limits", "redis", M_RATE, NULL, T_NONE, 0, "throughput vs Redis"},
    {"batch_2", "fixed_window_10k", M_RATE, NULL, T_GE, 0.9, "batches vs single checks"},
    /* issue #19: group commit on one thread-safe handle (threads.c) */
    {"threads_8", "threads_1", M_RATE, NULL, T_GE, 3, "8 threads vs 1, durability normal"},
    {"threads_8", NULL, M_P999, NULL, T_NONE, 0, "p99.9 (us), 8 threads"},
    {"threads_8_full", "threads_1_full", M_RATE, NULL, T_GE, 5, "8 threads vs 1, durability full"},
    {"threads_8_full", NULL, M_P999, NULL, T_NONE, 0, "p99.9 (us), 8 threads, full"},
    /* memory-only checks on a thread-safe handle take the lane under its
     * lock, not a group (storage/memlane.c) */
    {"threads_8_mem", "mem_check", M_RATE, NULL, T_NONE, 0,
     "8 threads, thread-safe handle, vs one plain handle (memory-only)"},
    {"threads_8_mem", NULL, M_P999, NULL, T_NONE, 0, "p99.9 (us), 8 threads, memory-only"},
    {"algo_fixed_window", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"algo_sliding_window", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"algo_sliding_log", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"algo_token_bucket", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"algo_gcra", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"algo_leaky_bucket", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"denied_over_limit", "fixed_window_10k", M_RATE, NULL, T_GE, 10, "throughput vs admitted"},
    {"denied_over_limit", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"denied_blocked", "fixed_window_10k", M_RATE, NULL, T_GE, 10, "throughput vs admitted"},
    {"denied_blocked", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"full_durability", "floor_fsync", M_RATE, NULL, T_GE, 0.9, "throughput vs fsync floor"},
    {"multi_1", "fixed_window_10k", M_RATE, NULL, T_NONE, 0, "throughput vs in-process run"},
    {"multi_2", "multi_1", M_RATE, NULL, T_GE, 0.9, "total vs single-process"},
    {"multi_2", NULL, M_P999, NULL, T_LE, 5000, "worst p99.9 (us)"},
    {"multi_2", NULL, M_MAX, NULL, T_LE, 50000, "worst max (us)"},
    {"multi_4", "multi_1", M_RATE, NULL, T_GE, 0.9, "total vs single-process"},
    {"multi_4", NULL, M_P999, NULL, T_LE, 5000, "worst p99.9 (us)"},
    {"multi_4", NULL, M_MAX, NULL, T_LE, 50000, "worst max (us)"},
    {"floor_inproc_hash", "fixed_window_10k", M_RATE, NULL, T_NONE, 0,
     "throughput vs durable rls_check"},
    {"floor_shm_hash", "fixed_window_10k", M_RATE, NULL, T_NONE, 0,
     "throughput vs durable rls_check"},
    {"floor_shm_hash", "floor_inproc_hash", M_RATE, NULL, T_NONE, 0,
     "throughput vs in-process floor"},
    {"floor_shm_hash_4", "floor_shm_hash", M_RATE, NULL, T_NONE, 0, "total vs 1 process"},
    {"shm_table", "floor_shm_hash", M_RATE, NULL, T_NONE, 0, "throughput vs shm floor"},
    {"shm_table", "fixed_window_10k", M_RATE, NULL, T_NONE, 0,
     "throughput vs durable rls_check"},
    {"shm_table_4", "shm_table", M_RATE, NULL, T_NONE, 0, "total vs 1 process"},
    {"shm_table_4", "floor_shm_hash_4", M_RATE, NULL, T_NONE, 0, "total vs shm floor, 4 procs"},
    /* issue #19, item 1: durability: memory through rls_check (memory.c) */
    {"mem_check", "mem_durable_check", M_RATE, NULL, T_GE, 50, "throughput vs durable rls_check"},
    {"mem_check", "floor_shm_hash", M_RATE, NULL, T_GE, 0.5, "throughput vs shm floor"},
    {"mem_check_4", "mem_check", M_RATE, NULL, T_GE, 1.5, "total vs 1 process (exact)"},
    {"mem_mixed", "mem_durable_check", M_RATE, NULL, T_GE, 0.9, "mixed vs durable-only check"},
    /* issue #19: kill -9 inside the table's critical section (memkill.c) */
    {"mem_kill", NULL, M_EXTRA, "max_wait_ms", T_LE, 10, "others' longest wait (ms)"},
    {"mem_kill", NULL, M_EXTRA, "p99_wait_ms", T_NONE, 0, "others' p99 wait (ms)"},
    {"mem_kill", NULL, M_EXTRA, "wrong_counts", T_LE, 0, "counts off the acknowledged"},
    {"fixed_window_big", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor (10k keys)"},
    {"fixed_window_big", "fixed_window_10k", M_RATE, NULL, T_NONE, 0, "throughput vs 10k keys"},
    {"rltop_during_load", NULL, M_EXTRA, "cpu_ms_per_refresh", T_LE, 50, "rltop CPU per refresh (ms)"},
    {"rltop_during_load", NULL, M_EXTRA, "throughput_drop_pct", T_LE, 5, "check throughput drop (%)"},
    {"size_per_state", NULL, M_EXTRA, "bytes_per_state", T_LE, 100, "bytes per (limit, key) state"},
    {"rss_per_handle", NULL, M_EXTRA, "mb_per_handle", T_LE, 4, "RSS per open handle (MB)"},
    {"redis", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    {"postgresql", "floor", M_RATE, NULL, T_NONE, 0, "throughput vs floor"},
    /* issue #8: the PostgreSQL backend against the pgbench UPSERT floor with
     * as many clients, and against the same checks on SQLite */
    {"pg_check_1", "pg_floor_1", M_RATE, NULL, T_GE, 0.8, "throughput vs PG floor"},
    {"pg_check_1", "pg_floor_1", M_P50, NULL, T_NONE, 0, "p50 vs PG floor"},
    {"pg_check_1", "pg_floor_1", M_P99, NULL, T_NONE, 0, "p99 vs PG floor"},
    {"pg_check_1", "pg_sqlite_1", M_RATE, NULL, T_NONE, 0, "throughput vs SQLite"},
    {"pg_check_1", "pg_sqlite_1", M_P50, NULL, T_NONE, 0, "p50 vs SQLite"},
    {"pg_check_n", "pg_floor_n", M_RATE, NULL, T_GE, 0.8, "throughput vs PG floor"},
    {"pg_check_n", "pg_floor_n", M_P50, NULL, T_NONE, 0, "p50 vs PG floor"},
    {"pg_check_n", "pg_floor_n", M_P99, NULL, T_NONE, 0, "p99 vs PG floor"},
    {"pg_check_n", "pg_sqlite_n", M_RATE, NULL, T_NONE, 0, "throughput vs SQLite"},
    {"pg_check_n", "pg_sqlite_n", M_P50, NULL, T_NONE, 0, "p50 vs SQLite"},
    {"pg_check_n", "pg_check_1", M_RATE, NULL, T_NONE, 0, "throughput vs 1 connection"},
    /* the other side of the one-round-trip check: states the handle does
     * not know (new to it, or written since by another process) */
    {"pg_check_1_cold", "pg_floor_1", M_RATE, NULL, T_NONE, 0, "throughput vs PG floor"},
    {"pg_check_1_cold", "pg_check_1", M_RATE, NULL, T_NONE, 0, "throughput vs keys it knew"},
    {"pg_check_n_shared", "pg_floor_n", M_RATE, NULL, T_NONE, 0, "throughput vs PG floor"},
    {"pg_check_n_shared", "pg_check_n", M_RATE, NULL, T_NONE, 0, "throughput vs own keys"},
};
#define NRATIOS ((int)(sizeof RATIOS / sizeof RATIOS[0]))

static double metric(const bench_result *r, int m, const char *extra)
{
    if (!r || r->status != RES_OK)
        return NAN;
    switch (m) {
    case M_RATE_X:
        return r->has_lat ? lat_rate(&r->lat) : NAN;
    case M_P50_X:
        return r->has_lat ? r->lat.p50 : NAN;
    case M_RATE:
        return r->has_lat ? lat_rate(&r->lat) : NAN;
    case M_P50:
        return r->has_lat ? r->lat.p50 : NAN;
    case M_P99:
        return r->has_lat ? r->lat.p99 : NAN;
    case M_P999:
        return r->has_lat ? r->lat.p999 : NAN;
    case M_MAX:
        return r->has_lat ? r->lat.max : NAN;
    default:
        return res_get_extra(r, extra);
    }
}

/* A peer that is not installed: its figures are missing from the run, which
 * the report says (`make bench` installs the peers, bench/peers.sh). */
static int missing(const bench_result *r)
{
    return r->status == RES_SKIPPED && strncmp(r->note, "not installed", 13) == 0;
}

/* Value of the spec (NAN when not measurable) and whether it is met
 * (1 met, 0 not met, -1 no target or no value). */
static double ratio_eval(const ratio_spec *s, int *met, const char **why)
{
    const bench_result *r = res_find(s->scenario);
    const bench_result *b = s->baseline ? res_find(s->baseline) : NULL;
    double v = metric(r, s->metric, s->extra);
    *why = NULL;
    if (s->baseline) {
        int bm = s->metric == M_RATE_X || s->metric == M_P50_X ? M_EXTRA : s->metric;
        double d = metric(b, bm, s->extra);
        if (!b || b->status != RES_OK)
            *why = b && b->status == RES_SKIPPED
                       ? (missing(b) ? "baseline MISSING" : "baseline skipped")
                       : "baseline not measured";
        v = (d > 0 && !isnan(v)) ? v / d : NAN;
    }
    if (!r || r->status != RES_OK)
        *why = r && r->status == RES_SKIPPED ? "skipped" : "not measured";
    if (isnan(v) || s->op == T_NONE)
        *met = -1;
    else
        *met = s->op == T_GE ? v >= s->target : v <= s->target;
    return v;
}

/* The value with 2 decimals (ratios) or 1, and more when that would show
 * exactly the target although the target is missed (0.8997 is "0.8997x",
 * not "0.90x NOT met"). */
static void fmt_value(char *buf, size_t size, const ratio_spec *s, double v, int met)
{
    int digits = s->baseline ? 2 : 1;
    if (isnan(v)) {
        snprintf(buf, size, "n/a");
        return;
    }
    /* a small ratio (the durable check against a memory floor) with two
     * significant digits, not "0.00x" */
    while (s->baseline && v > 0 && v * pow(10, digits) < 10 && digits < 6)
        digits++;
    while (met == 0 && digits < 6 &&
           fabs(round(v * pow(10, digits)) / pow(10, digits) - s->target) < 1e-9)
        digits++;
    snprintf(buf, size, "%.*f%s", digits, v, s->baseline ? "x" : "");
}

static void fmt_target(char *buf, size_t size, const ratio_spec *s)
{
    if (s->op == T_NONE)
        snprintf(buf, size, "(no target)");
    else
        snprintf(buf, size, "target %s %g%s", s->op == T_GE ? ">=" : "<=", s->target,
                 s->baseline ? "x" : "");
}

/* ---- printing ----------------------------------------------------------- */
static const char *status_name(int st)
{
    switch (st) {
    case RES_OK: return "ok";
    case RES_SKIPPED: return "skipped";
    case RES_FAILED: return "failed";
    default: return "not run";
    }
}

void report_line(const bench_result *r)
{
    if (r->status != RES_OK) {
        printf("  %-20s %-50s %s%s%s%s\n", r->id, r->name, status_name(r->status),
               r->note[0] ? " (" : "", r->note, r->note[0] ? ")" : "");
    } else if (r->has_lat) {
        printf("  %-20s %-50s %9.0f/s  p50 %7.1f  p99 %7.1f  p99.9 %8.1f  max %9.1f us\n",
               r->id, r->name, lat_rate(&r->lat), r->lat.p50, r->lat.p99, r->lat.p999,
               r->lat.max);
    } else {
        printf("  %-20s %-50s", r->id, r->name);
        for (int i = 0; i < r->nextra; i++) {
            const bench_extra *e = &r->extra[i];
            int whole = fabs(e->value) >= 100 || e->value == floor(e->value);
            printf("%s %s %.*f%s%s", i ? "," : "", e->name, whole ? 0 : 2, e->value,
                   e->unit[0] ? " " : "", e->unit);
        }
        printf("\n");
    }
    if (r->status == RES_OK && r->has_lat && r->nprocs > 1)
        for (int i = 0; i < r->nprocs; i++)
            printf("  %-20s   process %d: %9.0f/s  p50 %7.1f  p99 %7.1f  p99.9 %8.1f  max %9.1f us\n",
                   "", i + 1, lat_rate(&r->procs[i]), r->procs[i].p50, r->procs[i].p99,
                   r->procs[i].p999, r->procs[i].max);
    if (r->status == RES_OK && r->has_lat && r->note[0])
        printf("  %-20s   note: %s\n", "", r->note);
    fflush(stdout);
}

void report_print(void)
{
    int met = 0, notmet = 0, na = 0;
    printf("\nResults (ratios against baselines of this run; targets of issues #6, #8 and #19)\n");
    for (int i = 0; i < nresults; i++) {
        report_line(&results[i]);
        for (int k = 0; k < NRATIOS; k++) {
            const ratio_spec *s = &RATIOS[k];
            if (strcmp(s->scenario, results[i].id) != 0)
                continue;
            int m;
            const char *why;
            char val[32], tgt[48];
            double v = ratio_eval(s, &m, &why);
            fmt_value(val, sizeof val, s, v, m);
            fmt_target(tgt, sizeof tgt, s);
            printf("  %-20s   %-32s %9s  %-18s %s\n", "", s->what, val, tgt,
                   m == 1 ? "met" : m == 0 ? "NOT met" : why ? why : "");
            if (s->op == T_NONE)
                continue;
            if (m == 1)
                met++;
            else if (m == 0)
                notmet++;
            else
                na++;
        }
    }
    printf("targets: %d met, %d NOT met, %d not measured\n", met, notmet, na);
    for (int i = 0; i < nresults; i++)
        if (missing(&results[i]))
            printf("MISSING: %s figures (%s): `make bench` as root installs it\n",
                   results[i].id, results[i].note);
}

/* ---- machine description ------------------------------------------------ */
static void cpu_model(char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && c) {
            c++;
            while (*c == ' ' || *c == '\t')
                c++;
            c[strcspn(c, "\n")] = '\0';
            snprintf(buf, size, "%s", c);
            break;
        }
    }
    fclose(f);
}

static long mem_total_mb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

static const char *fs_type(const char *dir)
{
    struct statfs s;
    if (statfs(dir, &s) != 0)
        return "unknown";
    switch ((unsigned long)s.f_type) {
    case 0xEF53UL: return "ext2/3/4";
    case 0x58465342UL: return "xfs";
    case 0x9123683EUL: return "btrfs";
    case 0x01021994UL: return "tmpfs";
    case 0x794C7630UL: return "overlayfs";
    case 0x2FC12FC1UL: return "zfs";
    default: return "other";
    }
}

static const char *compiler(void)
{
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

/* ---- JSON --------------------------------------------------------------- */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number, or null for NAN/inf (not valid JSON). */
static void jnum(FILE *f, double v, int decimals)
{
    if (isnan(v) || isinf(v))
        fprintf(f, "null");
    else
        fprintf(f, "%.*f", decimals, v);
}

static void jlat(FILE *f, const bench_lat *l)
{
    fprintf(f, "\"ops\": %ld, \"secs\": ", l->ops);
    jnum(f, l->secs, 4);
    fprintf(f, ", \"ops_per_s\": ");
    jnum(f, lat_rate(l), 1);
    /* three decimals: a memory-class operation takes tens of nanoseconds */
    fprintf(f, ", \"p50_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f, \"max_us\": %.3f",
            l->p50, l->p99, l->p999, l->max);
}

int report_json(const char *path, const bench_cfg *cfg, double total_secs)
{
    FILE *f = fopen(path, "w");
    struct utsname u;
    char cpu[256], date[32];
    time_t t = time(NULL);
    if (!f) {
        fprintf(stderr, "rlbench: cannot write '%s'\n", path);
        return -1;
    }
    cpu_model(cpu, sizeof cpu);
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    fprintf(f, "{\n  \"format\": 1,\n  \"mode\": ");
    jstr(f, cfg->mode);
    fprintf(f, ",\n  \"date\": \"%s\",\n  \"total_secs\": %.1f,\n", date, total_secs);
    fprintf(f, "  \"machine\": {\"nproc\": %ld, \"cpu_model\": ", sysconf(_SC_NPROCESSORS_ONLN));
    jstr(f, cpu);
    fprintf(f, ", \"mem_mb\": %ld, \"kernel\": ", mem_total_mb());
    char kernel[200];
    snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
    jstr(f, kernel);
    fprintf(f, ", \"sqlite\": ");
    jstr(f, sqlite3_libversion());
    fprintf(f, ", \"librlstore\": ");
    jstr(f, rls_version_string());
    fprintf(f, ", \"compiler\": ");
    jstr(f, compiler());
    fprintf(f, ", \"filesystem\": ");
    jstr(f, fs_type(cfg->dir));
    fprintf(f, "},\n");
    fprintf(f, "  \"config\": {\"ops\": %ld, \"rounds\": %d, \"keys\": %ld, \"big_keys\": %ld,"
               " \"big_ops\": %ld, \"full_ops\": %ld, \"multi_ops\": %ld, \"blocked_keys\": %ld,"
               " \"rltop_refreshes\": %d, \"rss_handles\": %d, \"redis_ops\": %ld,"
               " \"pg_ops\": %ld, \"pg_clients\": %d},\n",
            cfg->ops, cfg->rounds, cfg->keys, cfg->big_keys, cfg->big_ops, cfg->full_ops,
            cfg->multi_ops, cfg->blocked_keys, cfg->rltop_n, cfg->rss_handles, cfg->redis_ops,
            cfg->pg_ops, cfg->pg_clients);
    fprintf(f, "  \"scenarios\": [\n");
    for (int i = 0; i < nresults; i++) {
        const bench_result *r = &results[i];
        fprintf(f, "    {\"id\": ");
        jstr(f, r->id);
        fprintf(f, ", \"group\": ");
        jstr(f, r->group);
        fprintf(f, ", \"name\": ");
        jstr(f, r->name);
        fprintf(f, ", \"status\": ");
        jstr(f, r->status == RES_PENDING ? "failed" : status_name(r->status));
        fprintf(f, ", \"note\": ");
        jstr(f, r->status == RES_PENDING && !r->note[0] ? "not run" : r->note);
        if (r->status == RES_OK && r->has_lat) {
            fprintf(f, ", ");
            jlat(f, &r->lat);
        }
        fprintf(f, ", \"extra\": {");
        for (int k = 0; k < r->nextra; k++) {
            fprintf(f, "%s", k ? ", " : "");
            jstr(f, r->extra[k].name);
            fprintf(f, ": ");
            jnum(f, r->extra[k].value, 3);
        }
        fprintf(f, "}");
        if (r->nprocs > 0) {
            fprintf(f, ", \"processes\": [");
            for (int k = 0; k < r->nprocs; k++) {
                fprintf(f, "%s{", k ? ", " : "");
                jlat(f, &r->procs[k]);
                fprintf(f, "}");
            }
            fprintf(f, "]");
        }
        fprintf(f, "}%s\n", i + 1 < nresults ? "," : "");
    }
    fprintf(f, "  ],\n  \"ratios\": [\n");
    for (int k = 0; k < NRATIOS; k++) {
        const ratio_spec *s = &RATIOS[k];
        int m;
        const char *why;
        double v = ratio_eval(s, &m, &why);
        fprintf(f, "    {\"scenario\": ");
        jstr(f, s->scenario);
        fprintf(f, ", \"baseline\": ");
        if (s->baseline)
            jstr(f, s->baseline);
        else
            fprintf(f, "null");
        fprintf(f, ", \"what\": ");
        jstr(f, s->what);
        fprintf(f, ", \"value\": ");
        jnum(f, v, 4);
        fprintf(f, ", \"op\": %s, \"target\": ",
                s->op == T_GE ? "\">=\"" : s->op == T_LE ? "\"<=\"" : "null");
        if (s->op == T_NONE)
            fprintf(f, "null");
        else
            jnum(f, s->target, 4);
        fprintf(f, ", \"met\": %s}%s\n", m == 1 ? "true" : m == 0 ? "false" : "null",
                k + 1 < NRATIOS ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "rlbench: cannot write '%s'\n", path);
        return -1;
    }
    return 0;
}

void report_machine(const bench_cfg *cfg)
{
    char cpu[256];
    struct utsname u;
    cpu_model(cpu, sizeof cpu);
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    printf("machine: %ld CPUs (%s), %ld MB, %s %s, SQLite %s, %s, librlstore %s, %s in %s\n",
           sysconf(_SC_NPROCESSORS_ONLN), cpu, mem_total_mb(), u.sysname, u.release,
           sqlite3_libversion(), compiler(), rls_version_string(), fs_type(cfg->dir), cfg->dir);
}
