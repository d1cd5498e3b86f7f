/*
 * cmd_tier.c - tier assignments: tier set, tier unset, tier list.
 *
 * KEY may be an exact key, a CIDR block ("10.0.0.0/8") or a prefix glob
 * ("user:*"); the library classifies it.  Assignments apply to every
 * action unless --action names one.
 */
#include <stdlib.h>
#include "rlctl.h"

int cmd_tier_set(rlctl_ctx *ctx)
{
    int64_t dur, until = 0;
    int set;
    char tbuf[64];
    int rc = opt_duration(ctx, "for", &dur, &set);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    if (set)
        until = ctx->now_ms + dur;
    char *k = esc_dup(ctx->args[0]), *t = esc_dup(ctx->args[1]);
    rc = rls_tier_assign_at(ctx->db, opt_get(ctx, "action"), ctx->args[0], ctx->args[1], until,
                            ctx->now_ms);
    if (rc != RLS_OK) {
        rc = fail_lib(ctx, rc, "cannot assign '%s' to tier '%s'", k ? k : "?", t ? t : "?");
    } else if (ctx->json) {
        json_obj_begin();
        json_key("key");
        json_key_str(ctx->args[0]);
        json_key("tier");
        json_str(ctx->args[1]);
        json_key("action");
        json_opt_str(opt_get(ctx, "action"));
        json_time("expires", until);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("assigned '%s' to tier '%s' %s%s\n", k ? k : "?", t ? t : "?",
               until ? "until " : "until unassigned",
               until ? fmt_time(until, NULL, tbuf, sizeof tbuf) : "");
    }
    free(k);
    free(t);
    return rc;
}

int cmd_tier_unset(rlctl_ctx *ctx)
{
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    char *k = esc_dup(ctx->args[0]);
    rc = rls_tier_unassign_at(ctx->db, opt_get(ctx, "action"), ctx->args[0], ctx->now_ms);
    if (rc != RLS_OK) {
        rc = fail_lib(ctx, rc, "cannot remove the tier of '%s'", k ? k : "?");
    } else if (ctx->json) {
        json_obj_begin();
        json_key("unassigned");
        json_key_str(ctx->args[0]);
        json_key("action");
        json_opt_str(opt_get(ctx, "action"));
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("removed the tier assignment of '%s'\n", k ? k : "?");
    }
    free(k);
    return rc;
}

static const col_spec tier_cols[] = {
    {"pattern", "KEY", COL_TEXT},
    {"kind", "KIND", COL_TEXT},
    {"action", "ACTION", COL_ACTION},
    {"tier", "TIER", COL_TEXT},
    {"expires_ms", "EXPIRES", COL_EXPIRES},
    {"source", "SOURCE", COL_TEXT},
    {"created_ms", "CREATED", COL_TIME},
};

int cmd_tier_list(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_tier_list_at(ctx->db, ctx->now_ms, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot list tier assignments");
    print_rows(ctx, rows, tier_cols, (int)(sizeof tier_cols / sizeof tier_cols[0]));
    rls_rows_free(rows);
    return 0;
}
