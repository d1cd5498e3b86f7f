/*
 * cmd_stats.c - `rlctl stats`: admitted and denied checks per action, since
 * the database was created and over the last --seconds, as a table, JSON
 * or the Prometheus text exposition format (--prometheus).
 */
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

/* Prometheus label value: backslash, double quote and newline escaped. */
static void prom_label(const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\' || *s == '"')
            printf("\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", stdout);
        else
            putchar(*s);
    }
}

static void prometheus(const rls_rows *totals)
{
    static const char *const results[] = {"allowed", "denied"};
    puts("# HELP rlstore_checks_total Checks decided since the database was created.");
    puts("# TYPE rlstore_checks_total counter");
    for (int r = 0; r < rls_rows_count(totals); r++)
        for (int k = 0; k < 2; k++) {
            fputs("rlstore_checks_total{action=\"", stdout);
            prom_label(row_text(totals, r, "action"));
            printf("\",result=\"%s\"} %lld\n", results[k],
                   (long long)row_int(totals, r, results[k]));
        }
}

/* Sum of the recent per-second rows of one action. */
static void recent_sum(const rls_rows *recent, const char *action, int64_t *allowed,
                       int64_t *denied)
{
    *allowed = *denied = 0;
    for (int r = 0; r < rls_rows_count(recent); r++) {
        const char *a = row_text(recent, r, "action");
        if (a && strcmp(a, action) == 0) {
            *allowed += row_int(recent, r, "allowed");
            *denied += row_int(recent, r, "denied");
        }
    }
}

int cmd_stats(rlctl_ctx *ctx)
{
    rls_rows *recent = NULL, *totals = NULL;
    int64_t seconds;
    int rc = opt_int(ctx, "seconds", 60, 1, 3600, &seconds);
    if (rc)
        return rc;
    if (ctx->json && opt_flag(ctx, "prometheus"))
        return fail_usage(ctx, "--prometheus and --json cannot be combined");
    if ((rc = db_open(ctx, 0)))
        return rc;
    if ((rc = rls_stats_at(ctx->db, (int)seconds, ctx->now_ms, &recent, &totals)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot read stats");
    if (opt_flag(ctx, "prometheus")) {
        prometheus(totals);
    } else if (ctx->json) {
        json_obj_begin();
        json_key("seconds");
        json_int(seconds);
        static const char *const counts[] = {"allowed", NULL};
        json_key("totals");
        json_rows_counting(totals, counts);
        json_key("recent");
        json_rows_counting(recent, counts);
        json_obj_end();
        json_end_line();
    } else {
        static const char *const h[] = {"ACTION", ">ALLOWED", ">DENIED", ">RECENT_ALLOWED",
                                        ">RECENT_DENIED"};
        out_table *t = tab_new(5, h);
        for (int r = 0; r < rls_rows_count(totals); r++) {
            const char *a = row_text(totals, r, "action");
            int64_t ra, rd;
            recent_sum(recent, a ? a : "", &ra, &rd);
            tab_row(t);
            tab_set_esc(t, 0, a);
            tab_setf(t, 1, "%lld", (long long)row_int(totals, r, "allowed"));
            tab_setf(t, 2, "%lld", (long long)row_int(totals, r, "denied"));
            tab_setf(t, 3, "%lld", (long long)ra);
            tab_setf(t, 4, "%lld", (long long)rd);
        }
        if (ctx->tty)
            printf("checks since the database was created, and in the last %llds:\n",
                   (long long)seconds);
        tab_print(t, ctx->tty);
        rc = tab_failed(t);
        tab_free(t);
        if (rc)
            fail_code(ctx, rc, "ENOMEM", "out of memory");
    }
    rls_rows_free(recent);
    rls_rows_free(totals);
    return rc;
}
