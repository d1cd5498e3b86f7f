/*
 * cmd_bulk.c - the bulk forms of unblock and reset (issue #20):
 * `rlctl unblock --all [--action A]` removes every block (of one action),
 * `rlctl reset --action A` forgets every key's counters of A.  Each is one
 * transaction audited as one row with its count (`rlctl audit`).
 */
#include <stdlib.h>
#include "rlctl.h"

static int done(rlctl_ctx *ctx, const char *what, const char *action, int64_t n,
                const char *text)
{
    if (ctx->json) {
        json_obj_begin();
        json_key(what);
        json_int(n);
        json_key("action");
        if (action)
            json_str(action);
        else
            json_null();
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        char *a = action ? esc_dup(action) : NULL;
        if (action)
            printf(text, (long long)n, " of '", a ? a : "?", "'");
        else
            printf(text, (long long)n, "", "", "");
        free(a);
    }
    return 0;
}

int cmd_unblock_all(rlctl_ctx *ctx)
{
    const char *action = opt_get(ctx, "action");
    int64_t n = 0;
    if (ctx->nargs > 0)
        return fail_usage(ctx, "'unblock --all' takes no KEY");
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_block_unset_all_at(ctx->db, action, ctx->now_ms, &n)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot remove the blocks");
    return done(ctx, "unblocked", action, n, "removed %lld active block(s)%s%s%s\n");
}

int cmd_reset_action(rlctl_ctx *ctx)
{
    const char *action = opt_get(ctx, "action");
    int64_t n = 0;
    if (ctx->nargs > 0)
        return fail_usage(ctx, "'reset --action ACTION' takes no other argument");
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_reset_action_at(ctx->db, action, ctx->now_ms, &n)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot reset the counters");
    return done(ctx, "reset_keys", action, n, "reset the counters of %lld key(s)%s%s%s\n");
}
