/*
 * cmd_audit.c - `rlctl audit`: the audit log of admin changes (rule sets,
 * rollbacks, blocks, tiers, overrides, resets), newest first.
 */
#include "rlctl.h"

static const col_spec audit_cols[] = {
    {"id", ">ID", COL_INT},
    {"ts_ms", "TIME", COL_TIME},
    {"os_user", "USER", COL_TEXT},
    {"tool", "TOOL", COL_TEXT},
    {"op", "OP", COL_TEXT},
    {"action", "ACTION", COL_ACTION},
    {"key", "KEY", COL_TEXT},
    {"before", "BEFORE", COL_TEXT},
    {"after", "AFTER", COL_TEXT},
    {"reason", "REASON", COL_TEXT},
};

int cmd_audit(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int64_t limit;
    int handled, rc = prune_args(ctx, 1, &handled);   /* audit prune (cmd_events.c) */
    if (handled)
        return rc;
    rc = opt_int(ctx, "limit", 50, 1, 100000, &limit);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    if ((rc = rls_audit_list(ctx->db, opt_get(ctx, "key"), (int)limit, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot read the audit log");
    print_rows(ctx, rows, audit_cols, (int)(sizeof audit_cols / sizeof audit_cols[0]));
    rls_rows_free(rows);
    return 0;
}
