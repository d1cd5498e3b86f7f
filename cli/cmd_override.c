/*
 * cmd_override.c - per-key limit overrides: override set, unset, list.
 *
 * An override replaces the capacity of one named limit of an action for
 * one key (normalised for the action), optionally until a time.
 */
#include <stdlib.h>
#include "rlctl.h"

/* "'daily' of 'signup' for '1.2.3.4'" with everything escaped. */
static void subject(const rlctl_ctx *ctx, char *buf, size_t size)
{
    char *a = esc_dup(ctx->args[0]), *k = esc_dup(ctx->args[1]), *l = esc_dup(ctx->args[2]);
    snprintf(buf, size, "'%s' of '%s' for '%s'", l ? l : "?", a ? a : "?", k ? k : "?");
    free(a);
    free(k);
    free(l);
}

int cmd_override_set(rlctl_ctx *ctx)
{
    int64_t dur, until = 0, limit;
    int set;
    char subj[1400], tbuf[64];
    int rc = opt_duration(ctx, "for", &dur, &set);
    if (rc || (rc = arg_int(ctx, 3, "limit", 1, RLS_LIMIT_MAX, &limit)) || (rc = db_open(ctx, 0)))
        return rc;
    if (set)
        until = ctx->now_ms + dur;
    subject(ctx, subj, sizeof subj);
    rc = rls_override_set_at(ctx->db, ctx->args[0], ctx->args[1], ctx->args[2], limit, until,
                             ctx->now_ms);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot override %s", subj);
    if (ctx->json) {
        json_obj_begin();
        json_key("action");
        json_str(ctx->args[0]);
        json_key("key");
        json_key_str(ctx->args[1]);
        json_key("limit_name");
        json_str(ctx->args[2]);
        json_key("limit");
        json_int(limit);
        json_time("expires", until);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("set %s to %lld %s%s\n", subj, (long long)limit,
               until ? "until " : "until unset", until ? fmt_time(until, NULL, tbuf, sizeof tbuf) : "");
    }
    return 0;
}

int cmd_override_unset(rlctl_ctx *ctx)
{
    char subj[1400];
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    subject(ctx, subj, sizeof subj);
    rc = rls_override_unset_at(ctx->db, ctx->args[0], ctx->args[1], ctx->args[2], ctx->now_ms);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot remove the override %s", subj);
    if (ctx->json) {
        json_obj_begin();
        json_key("action");
        json_str(ctx->args[0]);
        json_key("key");
        json_key_str(ctx->args[1]);
        json_key("limit_name");
        json_str(ctx->args[2]);
        json_key("removed");
        json_bool(1);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("removed the override %s\n", subj);
    }
    return 0;
}

static const col_spec override_cols[] = {
    {"action", "ACTION", COL_TEXT},
    {"key", "KEY", COL_TEXT},
    {"limit_name", "LIMIT", COL_TEXT},
    {"limit", ">CAPACITY", COL_INT},
    {"expires_ms", "EXPIRES", COL_EXPIRES},
    {"created_ms", "CREATED", COL_TIME},
};

int cmd_override_list(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    rc = rls_override_list_at(ctx->db, opt_get(ctx, "action"), opt_get(ctx, "key"), ctx->now_ms,
                              &rows);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot list overrides");
    print_rows(ctx, rows, override_cols, (int)(sizeof override_cols / sizeof override_cols[0]));
    rls_rows_free(rows);
    return 0;
}
