/*
 * config_list.c - rls_rules_validate(): every error of a rule file as rows,
 * without a database (the library side of `rlctl lint`, `nginx -t`'s
 * model).
 *
 * The loader (config.c) already collects every error instead of stopping
 * at the first; this file only lays them out for callers that see nothing
 * but rlstore.h: one row per error in file order, place, path and message
 * apart and the whole line as tools print it, so that `rlctl lint`, `apply`
 * and `init` all say the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "rows.h"

static const rows_col err_cols[] = {
    {"line", RLS_COL_INT},   {"column", RLS_COL_INT}, {"path", RLS_COL_TEXT},
    {"message", RLS_COL_TEXT}, {"text", RLS_COL_TEXT},
};
#define NCOLS ((int)(sizeof err_cols / sizeof err_cols[0]))

/* One error as a row; -1 out of memory. */
static int add_row(rls_rows *r, const config_error *e, const char *name)
{
    char text[512];
    int row = rls__rows_add(r);
    if (row < 0)
        return -1;
    rls__config_error_format(e, name, text, sizeof text);
    if (rls__rows_set_int(r, row, 0, e->line) < 0 || rls__rows_set_int(r, row, 1, e->column) < 0 ||
        (e->msg_at > 1 && rls__rows_set_text(r, row, 2, e->msg, (size_t)e->msg_at - 2) < 0) ||
        rls__rows_put_str(r, row, "message", e->msg + e->msg_at) < 0 ||
        rls__rows_put_str(r, row, "text", text) < 0)
        return -1;
    return 0;
}

/* The errors of errs as rows, plus one saying how many were not kept. */
static int list(const config_errors *errs, const char *name, rls_rows **out)
{
    rls_rows *r = rls__rows_new(err_cols, NCOLS);
    int bad = !r;
    for (int i = 0; !bad && i < errs->n; i++)
        bad = add_row(r, &errs->e[i], name) < 0;
    if (!bad && errs->total > errs->n) {
        config_error more = {0, 0, "", 0};
        snprintf(more.msg, sizeof more.msg, "%d more errors not listed",
                 errs->total - errs->n);
        bad = add_row(r, &more, name) < 0;
    }
    if (bad) {
        rls_rows_free(r);
        return RLS_ENOMEM;
    }
    *out = r;
    return RLS_OK;
}

/* Contract in rlstore.h. */
int rls_rules_validate(const char *yaml, size_t len, const char *name, rls_rows **errors)
{
    ruleset *rs = NULL;
    config_errors *errs;
    int rc;

    if (errors)
        *errors = NULL;
    if (!yaml && len)
        return RLS_EINVAL;
    errs = malloc(sizeof *errs);
    if (!errs)
        return RLS_ENOMEM;
    int prc = rls__config_parse(yaml ? yaml : "", len, &rs, errs);
    rls__ruleset_free(rs);
    rc = prc == -2 ? RLS_ENOMEM : prc ? RLS_ECONFIG : RLS_OK;
    if (errors && rc != RLS_ENOMEM) {
        int lrc = list(errs, name && *name ? name : "rules", errors);
        if (lrc != RLS_OK)
            rc = lrc;
    }
    free(errs);
    return rc;
}
