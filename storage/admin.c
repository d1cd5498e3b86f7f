/*
 * admin.c - the admin statement table and small helpers shared by the
 * admin API files (admin.h).
 */
#include <string.h>
#include "admin.h"

static const char *const astmt_sql[ASTMT__COUNT] = {
#define RLS__ASTMT_SQL(name, sql) sql,
    RLS_ADMIN_STMT_MAP(RLS__ASTMT_SQL)
#undef RLS__ASTMT_SQL
};

_Static_assert(ASTMT__COUNT <= sizeof(((rls_db *)0)->conn.astmt) / sizeof(rls_stmt *),
               "rls_db.astmt is too small for the admin statement table");

rls_stmt *rls__astmt(rls_db *db, int id)
{
    rls_stmt *st = db->conn.astmt[id];
    if (st)
        return st;
    if (rls__prepare(db, RLS_TABLE_ADMIN, id, astmt_sql[id], &st) != RLS_OK)
        return NULL;   /* in its backend's form (backend.h, prepare) */
    db->conn.astmt[id] = st;
    return st;
}

int rls__listing_end(rls_db *db, int rc, rls_rows **out)
{
    if (rc == RLS_OK)
        rc = rls__commit(db);
    else
        rls__rollback(db);
    if (rc) {
        rls_rows_free(*out);
        *out = NULL;
    }
    return rc;
}

int rls__rows_from_stmt(rls_db *db, rls_stmt *st, const rows_col *cols, int ncols,
                        rls_rows **out)
{
    rls_rows *r = rls__rows_new(cols, ncols);
    int rc;
    *out = NULL;
    if (!r) {
        sql_reset(st);
        return rls__error(db, RLS_ENOMEM, "out of memory");
    }
    while ((rc = sql_step(st)) == SQL_ROW) {
        int row = rls__rows_add(r);
        if (row < 0)
            goto oom;
        for (int c = 0; c < ncols; c++) {
            if (sql_column_type(st, c) == SQL_NULL)
                continue;
            if (cols[c].type == RLS_COL_INT) {
                rls__rows_set_int(r, row, c, sql_column_int64(st, c));
            } else {
                const char *t = (const char *)sql_column_text(st, c);
                if (t && rls__rows_set_text(r, row, c, t, (size_t)sql_column_bytes(st, c)) != 0)
                    goto oom;
            }
        }
    }
    sql_reset(st);
    if (rc != SQL_DONE) {
        rls_rows_free(r);
        return rls__sql_error(db, rc, "cannot read listing");
    }
    *out = r;
    return RLS_OK;
oom:
    sql_reset(st);
    rls_rows_free(r);
    return rls__error(db, RLS_ENOMEM, "out of memory");
}

int rls__admin_begin_read(rls_db *db)
{
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    return rls__begin(db, 0);
}
