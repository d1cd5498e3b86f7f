/*
 * cmd_reset.c - housekeeping: reset (forget a key's counters) and gc (one
 * bounded garbage-collection step).
 */
#include <stdlib.h>
#include "rlctl.h"

int cmd_reset(rlctl_ctx *ctx)
{
    if (opt_get(ctx, "action"))
        return cmd_reset_action(ctx);   /* cmd_bulk.c */
    if (ctx->nargs != 2)
        return fail_usage(ctx, "'reset' needs ACTION KEY (or --action ACTION); see 'rlctl "
                          "reset --help'");
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    char *a = esc_dup(ctx->args[0]), *k = esc_dup(ctx->args[1]);
    rc = rls_reset_at(ctx->db, ctx->args[0], ctx->args[1], ctx->now_ms);
    if (rc != RLS_OK) {
        rc = fail_lib(ctx, rc, "cannot reset '%s' for '%s'", a ? a : "?", k ? k : "?");
    } else if (ctx->json) {
        json_obj_begin();
        json_key("reset");
        json_bool(1);
        json_key("action");
        json_str(ctx->args[0]);
        json_key("key");
        json_key_str(ctx->args[1]);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("reset the counters of '%s' for '%s'\n", a ? a : "?", k ? k : "?");
    }
    free(a);
    free(k);
    return rc;
}

int cmd_gc(rlctl_ctx *ctx)
{
    int64_t rows, deleted = 0;
    int rc = opt_int(ctx, "rows", 10000, 1, 1000000, &rows);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    if ((rc = rls_gc_at(ctx->db, (int)rows, ctx->now_ms, &deleted)) != RLS_OK)
        return fail_lib(ctx, rc, "garbage collection failed");
    if (ctx->json) {
        json_obj_begin();
        json_key("deleted");
        json_int(deleted);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("deleted %lld expired row(s)\n", (long long)deleted);
    }
    return 0;
}
