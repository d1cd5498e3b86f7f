/*
 * rlbench.c - benchmarks of librlstore against baselines measured in the
 * same run on the same machine (docs/PERFORMANCE.md explains each figure).
 *
 * Parts (--only a,b,...):
 *   main   the SQLite floor (one UPSERT per transaction) and rls_check: one
 *          and two fixed-window limits, every algorithm, the denied paths
 *          (over limit and blocked, served from the deny cache; and a first
 *          denial, which runs its transaction)            scen.c
 *   full   the floor and rls_check with an fsync per commit
 *   procs  1, 2 and 4 processes on one file               procs.c
 *   many   fixed_window on many keys (insert, then steady phase), bytes per
 *          state, a refresher (rltop -b) during load, RSS per handle
 *   peers  Redis Lua fixed window and PostgreSQL UPSERT, when installed
 *                                                         peers.c
 * Prints ops/s and p50/p99/p99.9/max latency per scenario, ratios against
 * the baselines and the issue #6 targets, and writes the results as JSON
 * (bench/plot.py draws them).
 */
#include <rlstore.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "bench.h"

static void print_result(const result *r, const result *base)
{
    if (r->skipped) {
        printf("%-44s skipped: %s\n", r->name, r->note);
        return;
    }
    printf("%-44s %9.0f ops/s  p50 %7.1f  p99 %7.1f  p99.9 %8.1f  max %9.1f us",
           r->name, res_rate(r), r->p50, r->p99, r->p999, r->max);
    if (base && base != r && res_rate(base) > 0)
        printf("  %5.2fx", res_rate(r) / res_rate(base));
    printf("\n");
}

/* The baseline a result is compared with (JSON ratio_to_baseline). */
static const result *baseline_of(const bench *b, const result *r)
{
    if (strcmp(r->group, "durability") == 0)
        return bench_find(b, "floor_full");
    if (strcmp(r->group, "processes") == 0)
        return bench_find(b, "procs_1");
    return bench_find(b, "floor");
}

typedef struct target {
    char name[120];
    char value[80];
    int met;   /* 1, 0, -1 not measured */
} target;

static int add_target(target *t, int n, int met, const char *name, const char *fmt, double v1,
                      double v2)
{
    snprintf(t[n].name, sizeof t[n].name, "%s", name);
    snprintf(t[n].value, sizeof t[n].value, fmt, v1, v2);
    t[n].met = met;
    return n + 1;
}

static double ratio(const result *a, const result *b)
{
    return a && b && res_rate(b) > 0 ? res_rate(a) / res_rate(b) : -1;
}

static const metric *find_metric(const bench *b, const char *id)
{
    for (int i = 0; i < b->nmet; i++)
        if (strcmp(b->met[i].id, id) == 0)
            return &b->met[i];
    return NULL;
}

static int targets(const bench *b, target *t)
{
    int n = 0;
    const result *fl = bench_find(b, "floor"), *ck = bench_find(b, "check_fixed_window");
    const result *dl = bench_find(b, "denied_over_limit"), *db = bench_find(b, "denied_blocked");
    const result *p1 = bench_find(b, "procs_1"), *p4 = bench_find(b, "procs_4");
    const result *ff = bench_find(b, "floor_full"), *cf = bench_find(b, "check_full");
    const result *rd = bench_find(b, "peer_redis");
    double x;
    if (fl && ck) {
        x = ratio(ck, fl);
        n = add_target(t, n, x >= 0.9, "1. admitted check >= 0.90x the floor", "%.2fx", x, 0);
    }
    if (ck && rd) {
        x = ratio(ck, rd);
        n = add_target(t, n, x >= 3.5, "2. vs Redis Lua: >= 3.5x throughput", "%.2fx", x, 0);
        x = ck->p50 / rd->p50;
        n = add_target(t, n, x <= 0.3, "2. vs Redis Lua: <= 0.3x p50", "%.2fx", x, 0);
    } else if (ck) {
        const result *r = NULL;
        for (int i = 0; i < b->nres; i++)
            if (strcmp(b->res[i].id, "peer_redis") == 0)
                r = &b->res[i];
        n = add_target(t, n, -1, "2. vs Redis Lua", r && r->skipped ? "skipped" : "not run", 0, 0);
    }
    if (p1 && p4) {
        x = ratio(p4, p1);
        n = add_target(t, n, x >= 0.9, "3. 4 processes: total >= 0.90x one process", "%.2fx", x, 0);
        n = add_target(t, n, p4->p999 <= 5000, "3. 4 processes: p99.9 <= 5 ms", "%.2f ms",
                       p4->p999 / 1000, 0);
        n = add_target(t, n, p4->max <= 50000, "3. 4 processes: max <= 50 ms", "%.1f ms",
                       p4->max / 1000, 0);
    }
    if (ck)
        n = add_target(t, n, ck->p999 <= 1000, "4. admitted check p99.9 <= 1 ms", "%.0f us",
                       ck->p999, 0);
    if (ck && dl) {
        x = ratio(dl, ck);
        n = add_target(t, n, x >= 10, "5. denied (over limit) >= 10x admitted", "%.1fx", x, 0);
    }
    if (ck && db) {
        x = ratio(db, ck);
        n = add_target(t, n, x >= 10, "5. denied (blocked key) >= 10x admitted", "%.1fx", x, 0);
    }
    if (ff && cf) {
        x = ratio(cf, ff);
        n = add_target(t, n, x >= 0.9, "6. FULL durability >= 0.90x fsync floor", "%.2fx", x, 0);
    }
    const char *mids[] = {"bytes_per_state", "rss_first_handle", "rss_per_handle",
                          "refresh_drop", "refresh_cpu"};
    const char *mnames[] = {"7. <= 100 bytes per (limit, key) state", "7. RSS of an open handle <= 4 MB",
                            "7. RSS of each further handle <= 4 MB",
                            "rltop at many keys: check throughput drop <= 5 %",
                            "rltop at many keys: <= 50 ms CPU per refresh"};
    for (int i = 0; i < 5; i++) {
        const metric *m = find_metric(b, mids[i]);
        if (m)
            n = add_target(t, n, m->met, mnames[i], i == 3 ? "%.1f %%" : "%.1f", m->value, 0);
    }
    return n;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void cpu_model(char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(out, size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && c) {
            snprintf(out, size, "%s", c + 2);
            out[strcspn(out, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

static void write_json(const bench *b, const char *file, const target *t, int nt)
{
    FILE *f = fopen(file, "w");
    char cpu[256];
    struct utsname u;
    if (!f) {
        fprintf(stderr, "rlbench: cannot write '%s'\n", file);
        return;
    }
    cpu_model(cpu, sizeof cpu);
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    fprintf(f, "{\n  \"machine\": {\"cpus\": %ld, \"cpu\": ", sysconf(_SC_NPROCESSORS_ONLN));
    json_str(f, cpu);
    fprintf(f, ", \"system\": ");
    json_str(f, u.release);
    fprintf(f, "},\n  \"sqlite\": \"%s\",\n  \"librlstore\": \"%s\",\n", sqlite3_libversion(),
            rls_version_string());
    fprintf(f, "  \"settings\": {\"ops\": %ld, \"keys\": %ld, \"many_keys\": %ld, "
               "\"deny_keys\": %ld, \"full_ops\": %ld, \"quick\": %d},\n",
            b->ops, b->keys, b->many_keys, b->deny_keys, b->full_ops, b->quick);
    fprintf(f, "  \"results\": [\n");
    for (int i = 0; i < b->nres; i++) {
        const result *r = &b->res[i];
        const result *base = baseline_of(b, r);
        fprintf(f, "    {\"id\": \"%s\", \"group\": \"%s\", \"name\": ", r->id, r->group);
        json_str(f, r->name);
        if (r->skipped) {
            fprintf(f, ", \"skipped\": true, \"note\": ");
            json_str(f, r->note);
        } else {
            fprintf(f, ", \"ops\": %ld, \"secs\": %.4f, \"ops_per_s\": %.0f, \"p50_us\": %.1f,"
                       " \"p99_us\": %.1f, \"p999_us\": %.1f, \"max_us\": %.1f",
                    r->ops, r->secs, res_rate(r), r->p50, r->p99, r->p999, r->max);
            if (base)
                fprintf(f, ", \"baseline\": \"%s\", \"ratio_to_baseline\": %.3f", base->id,
                        res_rate(r) / res_rate(base));
        }
        fprintf(f, "}%s\n", i + 1 < b->nres ? "," : "");
    }
    fprintf(f, "  ],\n  \"metrics\": [\n");
    for (int i = 0; i < b->nmet; i++) {
        const metric *m = &b->met[i];
        fprintf(f, "    {\"id\": \"%s\", \"name\": ", m->id);
        json_str(f, m->name);
        fprintf(f, ", \"value\": %.3f, \"unit\": \"%s\", \"target\": ", m->value, m->unit);
        json_str(f, m->target);
        fprintf(f, ", \"met\": %s}%s\n", m->met < 0 ? "null" : m->met ? "true" : "false",
                i + 1 < b->nmet ? "," : "");
    }
    fprintf(f, "  ],\n  \"targets\": [\n");
    for (int i = 0; i < nt; i++) {
        fprintf(f, "    {\"name\": ");
        json_str(f, t[i].name);
        fprintf(f, ", \"value\": ");
        json_str(f, t[i].value);
        fprintf(f, ", \"met\": %s}%s\n", t[i].met < 0 ? "null" : t[i].met ? "true" : "false",
                i + 1 < nt ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

/* FILE.json -> FILE.svg with bench/plot.py, when python3 is there. */
static void plot(const bench *b, const char *json)
{
    char script[4200], svg[4200], cmd[12800];
    size_t l = strlen(json);
    if (!bench_source(b, "bench/plot.py", script, sizeof script) ||
        system("command -v python3 >/dev/null 2>&1") != 0)
        return;
    snprintf(svg, sizeof svg, "%.*s.svg", (int)(l > 5 && strcmp(json + l - 5, ".json") == 0
                                                      ? l - 5 : l), json);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s'", script, json, svg);
    if (system(cmd) == 0)
        printf("plot: %s\n", svg);
}

static int wants(const char *only, const char *part)
{
    if (!only)
        return 1;
    size_t l = strlen(part);
    for (const char *p = only; (p = strstr(p, part)); p += l)
        if ((p == only || p[-1] == ',') && (p[l] == ',' || p[l] == '\0'))
            return 1;
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: rlbench [--quick] [--ops N] [--keys N] [--many-keys N] [--deny-keys N]\n"
            "               [--full-ops N] [--only main,full,procs,many,peers]\n"
            "               [--json FILE] [--dir DIR]\n"
            "  --json FILE  results (default: results.json next to rlbench); FILE.svg is\n"
            "               drawn from it by bench/plot.py when python3 is installed\n");
}

int main(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.ops = 200000;
    b.keys = 10000;
    b.many_keys = 1000000;
    b.deny_keys = 1000;
    b.full_ops = 1000;
    b.self = argv[0];
    const char *json = NULL, *only = NULL;
    char jsonbuf[4200];
    char dirbuf[] = "/tmp/rlbench-XXXXXX";
    long set_ops = 0, set_many = 0, set_full = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            b.quick = 1;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--ops") == 0)
            set_ops = atol(v);
        else if (strcmp(a, "--keys") == 0)
            b.keys = atol(v);
        else if (strcmp(a, "--many-keys") == 0)
            set_many = atol(v);
        else if (strcmp(a, "--deny-keys") == 0)
            b.deny_keys = atol(v);
        else if (strcmp(a, "--full-ops") == 0)
            set_full = atol(v);
        else if (strcmp(a, "--only") == 0)
            only = v;
        else if (strcmp(a, "--json") == 0)
            json = v;
        else if (strcmp(a, "--dir") == 0)
            b.dir = v;
        else {
            usage();
            return 2;
        }
    }
    if (b.quick) {
        b.ops = 60000;
        b.many_keys = 100000;
        b.full_ops = 300;
    }
    if (set_ops)
        b.ops = set_ops;
    if (set_many)
        b.many_keys = set_many;
    if (set_full)
        b.full_ops = set_full;
    if (b.ops < 1000 || b.keys < 1 || b.keys > (1L << 24) || b.many_keys < 1000 ||
        b.many_keys > (1L << 24) || b.deny_keys < 1 || b.deny_keys > (1L << 24) ||
        b.full_ops < 20) {
        fprintf(stderr, "rlbench: --ops >= 1000, --keys and --deny-keys 1..2^24, "
                        "--many-keys 1000..2^24, --full-ops >= 20\n");
        return 2;
    }
    if (!json) {
        /* next to the program: build/bench/results.json */
        const char *slash = strrchr(argv[0], '/');
        snprintf(jsonbuf, sizeof jsonbuf, "%.*s%sresults.json", slash ? (int)(slash - argv[0]) : 0,
                 argv[0], slash ? "/" : "");
        json = jsonbuf;
    }
    if (!b.dir && !(b.dir = mkdtemp(dirbuf))) {
        perror("rlbench: mkdtemp");
        return 1;
    }
    printf("rlbench: %ld ops per scenario, %ld keys (%ld for the many-keys scenario, %ld "
           "denied), SQLite %s, librlstore %s, %ld CPUs\n",
           b.ops, b.keys, b.many_keys, b.deny_keys, sqlite3_libversion(), rls_version_string(),
           sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
    int rc = 0;
    if (rc == 0 && wants(only, "main"))
        rc = scen_main(&b);
    if (rc == 0 && wants(only, "full"))
        rc = scen_full(&b);
    if (rc == 0 && wants(only, "procs"))
        rc = procs_run(&b);
    if (rc == 0 && wants(only, "many"))
        rc = scen_many_keys(&b);
    if (rc == 0 && wants(only, "peers"))
        rc = peers_run(&b);
    if (rc != 0) {
        fprintf(stderr, "rlbench: a scenario failed\n");
        return 1;
    }
    printf("\n%-44s %9s %9s %7s %7s %8s %9s   vs baseline\n", "scenario", "", "", "", "", "",
           "");
    for (int i = 0; i < b.nres; i++)
        print_result(&b.res[i], baseline_of(&b, &b.res[i]));
    target t[32];
    int nt = targets(&b, t);
    printf("\ntargets (issue #6):\n");
    for (int i = 0; i < nt; i++)
        printf("  %-52s %-22s %s\n", t[i].name, t[i].value,
               t[i].met < 0 ? "not measured" : t[i].met ? "met" : "NOT met");
    write_json(&b, json, t, nt);
    printf("results: %s\n", json);
    plot(&b, json);
    if (b.dir == dirbuf) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", b.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "rlbench: could not remove %s\n", b.dir);
    }
    free(b.res);
    free(b.met);
    return 0;
}
