/*
 * cmd_block.c - manual blocks: block, unblock, blocks.
 *
 * A block without --action applies to every action; without --for it
 * lasts until unblocked.  Every change is audited by the library.
 */
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

/* "for 'signup'" or "for every action" */
static void scope(const char *action, char *buf, size_t size)
{
    if (action && *action) {
        char *a = esc_dup(action);
        snprintf(buf, size, "for '%s'", a ? a : "?");
        free(a);
    } else {
        snprintf(buf, size, "for every action");
    }
}

int cmd_block(rlctl_ctx *ctx)
{
    int64_t dur, until = 0;
    int set;
    char sc[200], tbuf[64];
    const char *action = opt_get(ctx, "action");
    int rc = opt_duration(ctx, "for", &dur, &set);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    if (set)
        until = ctx->now_ms + dur;
    char *k = esc_dup(ctx->args[0]);
    scope(action, sc, sizeof sc);
    rc = rls_block_set_at(ctx->db, action, ctx->args[0], until, opt_get(ctx, "reason"),
                          ctx->now_ms);
    if (rc != RLS_OK) {
        rc = fail_lib(ctx, rc, "cannot block '%s' %s", k ? k : "?", sc);
    } else if (ctx->json) {
        json_obj_begin();
        json_key("blocked");
        json_key_str(ctx->args[0]);
        json_key("action");
        json_opt_str(action);
        json_time("until", until);
        json_key("reason");
        json_opt_str(opt_get(ctx, "reason"));
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        if (until)
            printf("blocked '%s' %s until %s\n", k ? k : "?", sc,
                   fmt_time(until, NULL, tbuf, sizeof tbuf));
        else
            printf("blocked '%s' %s until unblocked\n", k ? k : "?", sc);
    }
    free(k);
    return rc;
}

int cmd_unblock(rlctl_ctx *ctx)
{
    char sc[200];
    const char *action = opt_get(ctx, "action");
    if (opt_flag(ctx, "all"))
        return cmd_unblock_all(ctx);   /* cmd_bulk.c */
    if (ctx->nargs != 1)
        return fail_usage(ctx, "'unblock' needs KEY (or --all); see 'rlctl unblock --help'");
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    char *k = esc_dup(ctx->args[0]);
    scope(action, sc, sizeof sc);
    rc = rls_block_unset_at(ctx->db, action, ctx->args[0], ctx->now_ms);
    if (rc != RLS_OK) {
        rc = fail_lib(ctx, rc, "cannot unblock '%s' %s", k ? k : "?", sc);
    } else if (ctx->json) {
        json_obj_begin();
        json_key("unblocked");
        json_key_str(ctx->args[0]);
        json_key("action");
        json_opt_str(action);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("unblocked '%s' %s\n", k ? k : "?", sc);
    }
    free(k);
    return rc;
}

static const col_spec block_cols[] = {
    {"key", "KEY", COL_TEXT},
    {"action", "ACTION", COL_ACTION},
    {"until_ms", "UNTIL", COL_UNTIL},
    {"kind", "KIND", COL_TEXT},
    {"level", ">LEVEL", COL_INT},
    {"rule", "RULE", COL_TEXT},
    {"reason", "REASON", COL_TEXT},
    {"os_user", "USER", COL_TEXT},
    {"created_ms", "CREATED", COL_TIME},
};

int cmd_blocks(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_block_list_at(ctx->db, ctx->now_ms, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot list blocks");
    print_rows(ctx, rows, block_cols, (int)(sizeof block_cols / sizeof block_cols[0]));
    rls_rows_free(rows);
    return 0;
}
