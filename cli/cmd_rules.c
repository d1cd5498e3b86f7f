/*
 * cmd_rules.c - the rule-set commands: export, rules, versions, rollback,
 * set-limit.
 *
 * `rules` summarises the active rule set as the library understood it
 * (rls_rules_describe): the version row, the tiers, and every limit of
 * every action and tier.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

int cmd_export(rlctl_ctx *ctx)
{
    int64_t version = 0;
    char *yaml = NULL;
    size_t len = 0;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if (ctx->nargs == 1 && (rc = arg_int(ctx, 0, "version", 1, INT64_MAX, &version)))
        return rc;
    if ((rc = rls_rules_get(ctx->db, version, &yaml, &len)) != RLS_OK) {
        if (version)
            return fail_lib(ctx, rc, "cannot export version %lld", (long long)version);
        return fail_lib(ctx, rc, "cannot export the active rules");
    }
    if (ctx->json) {
        json_obj_begin();
        json_key("version");
        if (version) {
            json_int(version);
        } else {
            rls_rows *v = NULL;
            int64_t active = 0;
            if (rls_rules_versions(ctx->db, &v) == RLS_OK)
                for (int r = 0; r < rls_rows_count(v); r++)
                    if (row_int(v, r, "active"))
                        active = row_int(v, r, "version");
            rls_rows_free(v);
            if (active)
                json_int(active);
            else
                json_null();
        }
        json_key("yaml");
        json_str(yaml);
        json_obj_end();
        json_end_line();
    } else {
        fwrite(yaml, 1, len, stdout);
    }
    rls_free(yaml);
    return 0;
}

static const col_spec version_cols[] = {
    {"version", ">VERSION", COL_INT},
    {"active", "ACTIVE", COL_BOOL},
    {"created_ms", "CREATED", COL_TIME},
    {"os_user", "USER", COL_TEXT},
    {"tool", "TOOL", COL_TEXT},
    {"source", "SOURCE", COL_TEXT},
    {"bytes", ">BYTES", COL_INT},
    {"comment", "COMMENT", COL_TEXT},
};

int cmd_versions(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_rules_versions(ctx->db, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot list rule versions");
    print_rows(ctx, rows, version_cols, (int)(sizeof version_cols / sizeof version_cols[0]));
    rls_rows_free(rows);
    return 0;
}

int cmd_rollback(rlctl_ctx *ctx)
{
    int64_t version, nv = 0;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = arg_int(ctx, 0, "version", 1, INT64_MAX, &version)))
        return rc;
    rc = rls_rules_rollback_at(ctx->db, version, opt_get(ctx, "comment"), ctx->now_ms, &nv);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot roll back to version %lld", (long long)version);
    if (ctx->json) {
        json_obj_begin();
        json_key("rolled_back_to");
        json_int(version);
        json_key("version");
        json_int(nv);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("rolled back to version %lld as version %lld\n", (long long)version,
               (long long)nv);
    }
    return 0;
}

/* One value written in the active rules changed in place by the library
 * (rls_rules_set_limit_at): the file keeps its text but for the digits. */
int cmd_set_limit(rlctl_ctx *ctx)
{
    int64_t value, expect = 0, nv = 0;
    const char *tier = opt_get(ctx, "tier"), *field = opt_flag(ctx, "burst") ? "burst" : "limit";
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = arg_int(ctx, 2, field, 1, RLS_LIMIT_MAX, &value)) ||
        (rc = opt_int(ctx, "if-version", 0, 1, INT64_MAX, &expect)))
        return rc;
    rc = rls_rules_set_limit_at(ctx->db, ctx->args[0], tier, ctx->args[1], field, value,
                                "rlctl set-limit", opt_get(ctx, "comment"), expect, ctx->now_ms,
                                &nv);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot set the %s of '%s' of action '%s'", field,
                        ctx->args[1], ctx->args[0]);
    if (ctx->json) {
        json_obj_begin();
        json_key("version");
        json_int(nv);
        json_key("action");
        json_str(ctx->args[0]);
        json_key("tier");
        json_opt_str(tier);
        json_key("name");
        json_str(ctx->args[1]);
        json_key("field");
        json_str(field);
        json_key("value");
        json_int(value);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("set the %s of '%s' of action '%s' (%s%s) to %lld: version %lld\n", field,
               ctx->args[1], ctx->args[0], tier && *tier ? "tier " : "default limits",
               tier && *tier ? tier : "", (long long)value, (long long)nv);
    }
    return 0;
}

/* ---- rules summary ------------------------------------------------------ */

/* The rows of limits for one action, as JSON: default limits, then tiers. */
static void action_json(const rls_rows *lim, int from, int to)
{
    json_obj_begin();
    json_key("name");
    json_str(row_text(lim, from, "action"));
    json_key("key_kind");
    json_str(row_text(lim, from, "key_kind"));
    json_key("limits");
    json_arr_begin();
    for (int r = from; r < to; r++)
        if (!*row_text(lim, r, "tier"))
            json_row_obj(lim, r);
    json_arr_end();
    json_key("tiers");
    json_obj_begin();
    for (int r = from; r < to; r++) {
        const char *tier = row_text(lim, r, "tier");
        if (!*tier || (r > from && strcmp(tier, row_text(lim, r - 1, "tier")) == 0))
            continue;
        json_key(tier);
        json_arr_begin();
        for (int q = r; q < to && strcmp(row_text(lim, q, "tier"), tier) == 0; q++)
            json_row_obj(lim, q);
        json_arr_end();
    }
    json_obj_end();
    json_obj_end();
}

static void names_cell(out_table *t, const char *what, const rls_rows *rows,
                       const char *action_col)
{
    char buf[2048];
    size_t len = 0;
    buf[0] = '\0';
    for (int r = 0; r < rls_rows_count(rows) && len < sizeof buf; r++) {
        const char *name = row_text(rows, r, action_col);
        if (r > 0 && strcmp(name, row_text(rows, r - 1, action_col)) == 0)
            continue;
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "", name);
    }
    tab_row(t);
    tab_set(t, 0, what);
    tab_set_esc(t, 1, buf);
}

/*
 * `rules`: the active version row, the tiers and every limit of every
 * action as the library understood them (rls_rules_describe): the
 * action's default limits (tier "*": every tier without a replacement) and
 * each tier's replacements.  Actions are listed by name.
 */
int cmd_rules(rlctl_ctx *ctx)
{
    rls_rows *vers = NULL, *tiers = NULL, *lim = NULL;
    int active = -1, rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_rules_describe(ctx->db, 0, &tiers, &lim)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot read the active rules");
    if ((rc = rls_rules_versions(ctx->db, &vers)) != RLS_OK) {
        rls_rows_free(tiers);
        rls_rows_free(lim);
        return fail_lib(ctx, rc, "cannot list rule versions");
    }
    for (int r = 0; r < rls_rows_count(vers); r++)
        if (row_int(vers, r, "active"))
            active = r;
    rc = 0;
    if (ctx->json) {
        json_obj_begin();
        json_key("version");
        json_row_obj(vers, active < 0 ? rls_rows_count(vers) : active);
        json_key("tiers");
        json_rows(tiers);
        json_key("actions");
        json_arr_begin();
        for (int r = 0; r < rls_rows_count(lim);) {
            int q = r;
            while (q < rls_rows_count(lim) &&
                   strcmp(row_text(lim, q, "action"), row_text(lim, r, "action")) == 0)
                q++;
            action_json(lim, r, q);
            r = q;
        }
        json_arr_end();
        json_obj_end();
        json_end_line();
    } else {
        static const char *const kv[] = {"FIELD", "VALUE"};
        static const char *const fields[][2] = {
            {"os_user", "by"}, {"tool", "tool"}, {"source", "source"}, {"comment", "comment"}};
        char buf[64];
        out_table *t = tab_new(2, kv);
        tab_row(t);
        tab_set(t, 0, "version");
        tab_setf(t, 1, "%lld", (long long)row_int(vers, active, "version"));
        tab_row(t);
        tab_set(t, 0, "applied");
        tab_set(t, 1, fmt_time(row_int(vers, active, "created_ms"), "-", buf, sizeof buf));
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            tab_row(t);
            tab_set(t, 0, fields[i][1]);
            tab_set_esc(t, 1, row_text(vers, active, fields[i][0]));
        }
        names_cell(t, "tiers", tiers, "name");
        names_cell(t, "actions", lim, "action");
        tab_print(t, ctx->tty);
        if ((rc = tab_failed(t)))
            fail_code(ctx, rc, "ENOMEM", "out of memory");
        tab_free(t);

        /* WINDOW as written on a terminal ("1w", a calendar week, is not
         * "7d"); CALENDAR and ZONE say which windows follow the calendar
         * of which zone. */
        static const char *const lh[] = {"ACTION", "TIER", "LIMIT", "ALGORITHM", ">CAPACITY",
                                         ">BURST", "WINDOW", "MODE", "CALENDAR", "ZONE"};
        out_table *lt = tab_new(10, lh);
        for (int r = 0; r < rls_rows_count(lim); r++) {
            const char *tier = row_text(lim, r, "tier");
            tab_row(lt);
            tab_set_esc(lt, 0, row_text(lim, r, "action"));
            tab_set_esc(lt, 1, *tier ? tier : "*");
            tab_set_esc(lt, 2, row_text(lim, r, "name"));
            tab_set_esc(lt, 3, row_text(lim, r, "algorithm"));
            tab_setf(lt, 4, "%lld", (long long)row_int(lim, r, "limit"));
            tab_setf(lt, 5, "%lld", (long long)row_int(lim, r, "burst"));
            if (ctx->tty && row_int(lim, r, "calendar"))
                tab_set_esc(lt, 6, row_text(lim, r, "window"));
            else
                tab_set(lt, 6, fmt_dur_cell(ctx, row_int(lim, r, "window_ms"), buf, sizeof buf));
            tab_set_esc(lt, 7, row_text(lim, r, "mode"));
            tab_set(lt, 8, row_int(lim, r, "calendar") ? "yes" : "no");
            tab_set_esc(lt, 9, row_text(lim, r, "timezone"));
        }
        putchar('\n');
        tab_print(lt, ctx->tty);
        if (!rc && (rc = tab_failed(lt)))
            fail_code(ctx, rc, "ENOMEM", "out of memory");
        tab_free(lt);
    }
    rls_rows_free(vers);
    rls_rows_free(tiers);
    rls_rows_free(lim);
    return rc;
}
