/*
 * cmd_usage.c - `rlctl usage` and `rlctl explain`: what the counters say.
 *
 * usage lists (action, key) pairs with their most pressing limit as a
 * check would see them now (rls_usage_at, charging nothing).  explain shows
 * everything that decides one key's checks (rls_explain_at) and the
 * key's recent audit rows (rls_audit_list).
 */
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

static const col_spec usage_cols[] = {
    {"action", "ACTION", COL_TEXT},
    {"key", "KEY", COL_TEXT},
    {"tier", "TIER", COL_TEXT},
    {"rule", "RULE", COL_TEXT},
    {"used", ">USED", COL_INT},
    {"limit", ">LIMIT", COL_INT},
    {"remaining", ">REMAINING", COL_INT},
    {"fraction_ppm", ">USE", COL_PPM},
    {"reset_ms", ">RESET", COL_DUR},
    {"denied", ">DENIED", COL_INT},
    {"state", "STATE", COL_TEXT},
};

int cmd_usage(rlctl_ctx *ctx)
{
    static const char *const sorts[] = {"used", "key", "reset", "denied"};
    static const int codes[] = {RLS_SORT_USED, RLS_SORT_KEY, RLS_SORT_RESET, RLS_SORT_DENIED};
    rls_usage_query q;
    rls_rows *rows = NULL;
    int64_t top;
    const char *sort = opt_get(ctx, "sort");
    int rc = opt_int(ctx, "top", 100, 1, 100000, &top);
    if (rc)
        return rc;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.action = opt_get(ctx, "action");
    q.key_substr = opt_get(ctx, "key");
    q.limit = (int)top;
    q.sort = RLS_SORT_USED;
    if (sort) {
        q.sort = -1;
        for (size_t i = 0; i < sizeof sorts / sizeof sorts[0]; i++)
            if (strcmp(sort, sorts[i]) == 0)
                q.sort = codes[i];
        if (q.sort < 0)
            return fail_usage(ctx, "invalid value for --sort: '%s' (expected used, key, reset "
                              "or denied)", sort);
    }
    if ((rc = db_open(ctx, 0)))
        return rc;
    if ((rc = rls_usage_at(ctx->db, &q, ctx->now_ms, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot read usage");
    print_rows(ctx, rows, usage_cols, (int)(sizeof usage_cols / sizeof usage_cols[0]));
    rls_rows_free(rows);
    return 0;
}

static const col_spec limit_cols[] = {
    {"name", "LIMIT", COL_TEXT},
    {"algorithm", "ALGORITHM", COL_TEXT},
    {"limit", ">CAPACITY", COL_INT},
    {"burst", ">BURST", COL_INT},
    {"window_ms", ">WINDOW", COL_WINDOW},       /* on a terminal 1w, not 7d */
    {"overridden", "OVERRIDDEN", COL_BOOL},
    {"mode", "MODE", COL_TEXT},
    {"used", ">USED", COL_INT},
    {"remaining", ">REMAINING", COL_INT},
    {"reset_ms", ">RESET", COL_DUR},
    {"retry_after_ms", ">RETRY", COL_DUR},
    {"allowed", "NEXT", COL_BOOL},
    {"last_ms", "LAST", COL_TIME},
    /* appended, so that scripts reading the columns by position still do */
    {"calendar", "CALENDAR", COL_BOOL},
    {"window_now_ms", ">LENGTH", COL_DUR},      /* this window's: 25 h on a DST day */
    {"timezone", "ZONE", COL_TEXT},
};

static const col_spec audit_cols[] = {
    {"ts_ms", "TIME", COL_TIME},
    {"os_user", "USER", COL_TEXT},
    {"tool", "TOOL", COL_TEXT},
    {"op", "OP", COL_TEXT},
    {"action", "ACTION", COL_TEXT},
    {"before", "BEFORE", COL_TEXT},
    {"after", "AFTER", COL_TEXT},
    {"reason", "REASON", COL_TEXT},
};

/* The info row as FIELD VALUE lines, in the order of its columns. */
static void print_info(const rlctl_ctx *ctx, const rls_rows *info)
{
    static const char *const h[] = {"FIELD", "VALUE"};
    out_table *t = tab_new(2, h);
    char buf[64];
    for (int c = 0; c < rls_rows_columns(info); c++) {
        const char *name = rls_rows_name(info, c);
        tab_row(t);
        tab_set(t, 0, name);
        if (rls_rows_count(info) < 1 || rls_rows_is_null(info, 0, c)) {
            tab_set(t, 1, NULL);
        } else if (rls_rows_type(info, c) == RLS_COL_TEXT) {
            const char *s = rls_rows_text(info, 0, c);
            tab_set_esc(t, 1, s && *s ? s : "-");
        } else {
            int64_t v = rls_rows_int(info, 0, c);
            size_t n = strlen(name);
            if (strcmp(name, "block_until_ms") == 0)
                tab_set(t, 1, row_int(info, 0, "blocked") ? fmt_time(v, "forever", buf, sizeof buf)
                                                          : "-");
            else if (n > 3 && strcmp(name + n - 3, "_ms") == 0)
                tab_set(t, 1, fmt_dur_cell(ctx, v, buf, sizeof buf));
            else if (strcmp(name, "allowed") == 0 || strcmp(name, "blocked") == 0)
                tab_set(t, 1, v ? "yes" : "no");
            else if (strcmp(name, "reason") == 0)
                tab_set(t, 1, rls_reason_name((int)v));
            else
                tab_setf(t, 1, "%lld", (long long)v);
        }
    }
    tab_print(t, ctx->tty);
    tab_free(t);
}

int cmd_explain(rlctl_ctx *ctx)
{
    rls_rows *info = NULL, *limits = NULL, *audit = NULL;
    int64_t naudit;
    int rc = opt_int(ctx, "audit", 10, 0, 100000, &naudit);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    rc = rls_explain_at(ctx->db, ctx->args[0], ctx->args[1], ctx->now_ms, &info, &limits);
    if (rc != RLS_OK) {
        char *a = esc_dup(ctx->args[0]), *k = esc_dup(ctx->args[1]);
        rc = fail_lib(ctx, rc, "cannot explain '%s' for '%s'", a ? a : "?", k ? k : "?");
        free(a);
        free(k);
        return rc;
    }
    const char *nkey = row_text(info, 0, "key") ? row_text(info, 0, "key") : ctx->args[1];
    if (naudit > 0 && (rc = rls_audit_list(ctx->db, nkey, (int)naudit, &audit)) != RLS_OK) {
        rc = fail_lib(ctx, rc, "cannot read the audit log");
        goto out;
    }
    if (ctx->json) {
        json_obj_begin();
        json_key("info");
        json_row_obj(info, 0);
        json_key("limits");
        json_rows(limits);
        json_key("audit");
        json_rows(audit);
        json_obj_end();
        json_end_line();
    } else {
        print_info(ctx, info);
        putchar('\n');
        print_rows_table(ctx, limits, limit_cols, (int)(sizeof limit_cols / sizeof limit_cols[0]));
        if (naudit > 0) {
            if (ctx->tty)
                printf("\nrecent changes of this key:\n");
            else
                putchar('\n');
            if (rls_rows_count(audit) == 0 && ctx->tty)
                printf("(none)\n");
            else
                print_rows_table(ctx, audit, audit_cols,
                                 (int)(sizeof audit_cols / sizeof audit_cols[0]));
        }
    }
out:
    rls_rows_free(info);
    rls_rows_free(limits);
    rls_rows_free(audit);
    return rc;
}
