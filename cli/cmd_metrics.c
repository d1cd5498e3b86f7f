/*
 * cmd_metrics.c - `rlctl metrics`: the node_exporter textfile (Prometheus
 * text exposition format) of a database, on standard output or, with
 * --output FILE, written atomically: a temporary file in FILE's folder,
 * fsync'd, then renamed over FILE (and the folder fsync'd), so the
 * collector reading FILE at any moment reads a whole file, the old one or
 * the new one (node_exporter's textfile convention; the temporary name
 * does not end in .prom, so the collector never reads it).
 *
 * What each metric is (rls_metrics(3)): checks since the database was
 * made (rls_stats_total); checks by reason, denials and shadow
 * would-denials by limit, and the latency histogram since schema 5, as
 * counted by the library in each process (rls_check's time from entry to
 * return, including waits for the write lock) and written at most once a
 * second; penalties counted in their block's transaction; active blocks,
 * tracked keys and the rules version as they are now.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rlctl.h"

/* The library's latency buckets (metrics.c), upper bounds in us. */
static const char *const buckets[] = {"10", "25", "50", "100", "250", "500", "1000", "2500",
                                      "5000", "10000", "25000", "100000", "1000000", "inf"};
#define NBUCKETS ((int)(sizeof buckets / sizeof buckets[0]))

/* Prometheus label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static int is(const rls_rows *r, int i, const char *metric)
{
    const char *m = row_text(r, i, "metric");
    return m && strcmp(m, metric) == 0;
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family: every row of `metric` as name{action="..",lname=".."} value
 * (lname NULL: no second label). */
static void family(FILE *f, const rls_rows *r, const char *metric, const char *name,
                   const char *type, const char *lname, const char *help)
{
    head(f, name, type, help);
    for (int i = 0; i < rls_rows_count(r); i++) {
        if (!is(r, i, metric))
            continue;
        fprintf(f, "%s{action=\"", name);
        label(f, row_text(r, i, "action"));
        if (lname) {
            fprintf(f, "\",%s=\"", lname);
            label(f, row_text(r, i, "label"));
        }
        fprintf(f, "\"} %lld\n", (long long)row_int(r, i, "value"));
    }
}

static int64_t find(const rls_rows *r, const char *metric, const char *action, const char *lbl)
{
    for (int i = 0; i < rls_rows_count(r); i++)
        if (is(r, i, metric) && strcmp(row_text(r, i, "action"), action) == 0 &&
            strcmp(row_text(r, i, "label"), lbl) == 0)
            return row_int(r, i, "value");
    return 0;
}

static void histogram(FILE *f, const rls_rows *r)
{
    const char *name = "rlstore_check_duration_seconds";
    head(f, name, "histogram", "Time rls_check took in the library (entry to return, "
         "lock waits included), per process, counted since schema 5.");
    for (int i = 0; i < rls_rows_count(r); i++) {
        if (!is(r, i, "latency_count"))
            continue;
        const char *a = row_text(r, i, "action");
        int64_t cum = 0;
        for (int b = 0; b < NBUCKETS; b++) {
            cum += find(r, "latency", a, buckets[b]);
            fprintf(f, "%s_bucket{action=\"", name);
            label(f, a);
            if (b == NBUCKETS - 1)
                fprintf(f, "\",le=\"+Inf\"} %lld\n", (long long)cum);
            else
                fprintf(f, "\",le=\"%g\"} %lld\n", atof(buckets[b]) / 1e6, (long long)cum);
        }
        fprintf(f, "%s_sum{action=\"", name);
        label(f, a);
        fprintf(f, "\"} %.6f\n%s_count{action=\"", (double)find(r, "latency_sum_us", a, "") / 1e6,
                name);
        label(f, a);
        fprintf(f, "\"} %lld\n", (long long)row_int(r, i, "value"));
    }
}

static void write_all(FILE *f, const rls_rows *r)
{
    /* the same series as `rlctl stats --prometheus` */
    head(f, "rlstore_checks_total", "counter", "Checks decided since the database was created.");
    for (int i = 0; i < rls_rows_count(r); i++)
        if (is(r, i, "checks_allowed") || is(r, i, "checks_denied")) {
            fputs("rlstore_checks_total{action=\"", f);
            label(f, row_text(r, i, "action"));
            fprintf(f, "\",result=\"%s\"} %lld\n", is(r, i, "checks_allowed") ? "allowed" : "denied",
                    (long long)row_int(r, i, "value"));
        }
    family(f, r, "reason", "rlstore_check_reasons_total", "counter", "reason",
           "Checks by reason (ok, limit, blocked, cost_exceeds_limit, shadow, degraded), "
           "counted since schema 5.");
    family(f, r, "denied", "rlstore_denials_total", "counter", "rule",
           "Checks denied by a limit, by the deciding limit.");
    family(f, r, "shadow", "rlstore_shadow_denials_total", "counter", "rule",
           "Checks a shadow limit would have denied (admitted).");
    head(f, "rlstore_degraded_checks_total", "counter",
         "Checks answered by the failure policy because storage failed.");
    for (int i = 0; i < rls_rows_count(r); i++)
        if (is(r, i, "reason") && strcmp(row_text(r, i, "label"), "degraded") == 0) {
            fputs("rlstore_degraded_checks_total{action=\"", f);
            label(f, row_text(r, i, "action"));
            fprintf(f, "\"} %lld\n", (long long)row_int(r, i, "value"));
        }
    family(f, r, "penalties", "rlstore_penalties_total", "counter", NULL,
           "Penalty blocks imposed (block_for), escalations included.");
    family(f, r, "blocks_active", "rlstore_blocks_active", "gauge", "kind",
           "Blocks in force now, manual or penalty (action \"\": every action).");
    family(f, r, "keys_tracked", "rlstore_keys_tracked", "gauge", NULL,
           "Keys with counters, per action.");
    head(f, "rlstore_rules_version", "gauge", "The active rule-set version (0: none).");
    for (int i = 0; i < rls_rows_count(r); i++)
        if (is(r, i, "rules_version"))
            fprintf(f, "rlstore_rules_version %lld\n", (long long)row_int(r, i, "value"));
    histogram(f, r);
}

/* FILE written whole or not at all: temporary file, fsync, rename. */
static int write_file(rlctl_ctx *ctx, const char *path, const rls_rows *r)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return fail_usage(ctx, "--output path is too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    char *pe = esc_dup(path);
    int rc = 0;
    if (!f) {
        rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "EIO", "cannot create a temporary file beside "
                       "'%s': %s", pe ? pe : "?", strerror(errno));
        if (fd >= 0)
            close(fd);
        free(pe);
        return rc;
    }
    fchmod(fd, 0644);   /* whatever the umask: the collector reads it */
    write_all(f, r);
    if (fflush(f) != 0 || ferror(f) || fsync(fd) != 0)
        rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "EIO", "cannot write '%s': %s", pe ? pe : "?",
                       strerror(errno));
    if (fclose(f) != 0 && !rc)
        rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "EIO", "cannot write '%s': %s", pe ? pe : "?",
                       strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "EIO", "cannot replace '%s': %s", pe ? pe : "?",
                       strerror(errno));
    if (rc) {
        unlink(tmp);
    } else {
        /* the rename itself survives a crash once the folder is synced */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    free(pe);
    return rc;
}

int cmd_metrics(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    const char *out = opt_get(ctx, "output");
    int rc;
    if (ctx->json)
        return fail_usage(ctx, "metrics writes the Prometheus text format; --json does not apply");
    if (out && !*out)
        return fail_usage(ctx, "invalid value for --output: the path is empty");
    if ((rc = db_open(ctx, 0)))
        return rc;
    if ((rc = rls_metrics_at(ctx->db, ctx->now_ms, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot read the metrics");
    if (out)
        rc = write_file(ctx, out, rows);
    else
        write_all(stdout, rows);
    rls_rows_free(rows);
    return rc;
}
