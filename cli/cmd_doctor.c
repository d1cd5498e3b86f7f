/*
 * cmd_doctor.c - `rlctl doctor [--full] [--fix]` (--shm-dir global): the
 * library's health report (SQLite version, journal mode, schema,
 * integrity, file modes, WAL size, rules, the memory-class table and
 * tables of earlier boots, which --fix removes).  Exits 0 unless a check
 * says "fail".
 */
#include <string.h>
#include "rlctl.h"

static const col_spec doctor_cols[] = {
    {"check", "CHECK", COL_TEXT},
    {"status", "STATUS", COL_TEXT},
    {"detail", "DETAIL", COL_TEXT},
};

int cmd_doctor(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int failed = 0, rc;
    if ((rc = db_open(ctx, 0)))
        return rc;
    unsigned int flags = (opt_flag(ctx, "full") ? RLS_DOCTOR_FULL : 0) |
                         (opt_flag(ctx, "fix") ? RLS_DOCTOR_FIX : 0);
    if ((rc = rls_doctor_v2(ctx->db, flags, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot examine the database");
    for (int r = 0; r < rls_rows_count(rows); r++) {
        const char *s = row_text(rows, r, "status");
        if (s && strcmp(s, "fail") == 0)
            failed++;
    }
    if (ctx->json) {
        json_obj_begin();
        json_key("ok");
        json_bool(!failed);
        json_key("checks");
        json_rows(rows);
        json_obj_end();
        json_end_line();
    } else {
        print_rows_table(ctx, rows, doctor_cols, 3);
    }
    if (failed)
        fprintf(stderr, "rlctl: %d health check(s) failed\n", failed);
    rls_rows_free(rows);
    return failed ? RLCTL_EXIT_STORAGE : 0;
}
