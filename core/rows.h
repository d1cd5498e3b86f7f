/*
 * rows.h - building the rls_rows result sets of the admin API (the reading
 * side is public, in rlstore.h).  Pure memory: no SQLite here.
 */
#ifndef RLS_ROWS_H
#define RLS_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include "rlstore.h"

/* A column: name and RLS_COL_INT or RLS_COL_TEXT. */
typedef struct rows_col {
    const char *name;
    int type;
} rows_col;

/* New empty table with these columns (names are copied).  NULL on OOM. */
rls_rows *rls__rows_new(const rows_col *cols, int ncols);
/* Appends a row of NULLs; returns its index or -1 on OOM. */
int rls__rows_add(rls_rows *r);
/* Set a cell; the type must match the column's.  -1 on OOM or misuse. */
int rls__rows_set_int(rls_rows *r, int row, int col, int64_t v);
int rls__rows_set_text(rls_rows *r, int row, int col, const char *s, size_t len);
/* Same, by column name (which must exist). */
int rls__rows_put_int(rls_rows *r, int row, const char *name, int64_t v);
int rls__rows_put_str(rls_rows *r, int row, const char *name, const char *s);

#endif
