/*
 * doctor.c - rls_doctor(): a health report of a database for operators
 * (rlctl doctor).  Every check is one row: check, status, detail.  A split
 * deployment reports its rules file under the usual names, its counters
 * file under counters_*, and whether readers can open the rules.  The
 * backend adds its own rows (storage/sqlite/lite_doctor.c,
 * storage/pg/pg_doctor.c); this file the rows every database has, and
 * doctor_mem.c those of the memory class's shared-memory table.
 */
#include <stdio.h>
#include <stdlib.h>
#include "admin.h"

int rls__doctor_add(rls_rows *r, const char *check, const char *status, const char *detail)
{
    int row = rls__rows_add(r);
    return row < 0 || rls__rows_put_str(r, row, "check", check) ||
                   rls__rows_put_str(r, row, "status", status) ||
                   rls__rows_put_str(r, row, "detail", detail)
               ? -1 : 0;
}

/* First column of a one-row pragma as text into buf. */
int rls__doctor_text(rls_db *db, const char *sql, char *buf, size_t size)
{
    rls_stmt *st = NULL;
    int rc = sql_prepare(db, sql, &st);
    buf[0] = '\0';
    if (rc == SQL_OK && (rc = sql_step(st)) == SQL_ROW) {
        const unsigned char *t = sql_column_text(st, 0);
        snprintf(buf, size, "%s", t ? (const char *)t : "");
        rc = SQL_OK;
    } else if (rc == SQL_DONE) {
        rc = SQL_OK;
    }
    sql_finalize(st);
    return rc == SQL_OK ? RLS_OK : rls__sql_error(db, rc, "doctor");
}

/* The active rule set (its version), in the rules tables. */
static int rules_row(rls_db *db, rls_rows *r, int *bad)
{
    char buf[512], detail[600];
    int rc;
    snprintf(detail, sizeof detail, "SELECT active_version FROM %s.rls_meta WHERE id = 1",
             db->be->rules_schema(db));
    if ((rc = rls__doctor_text(db, detail, buf, sizeof buf)))
        return rc;
    if (atoi(buf) > 0) {
        snprintf(detail, sizeof detail, "rule set version %s is active", buf);
        *bad |= rls__doctor_add(r, "rules", "ok", detail);
    } else {
        *bad |= rls__doctor_add(r, "rules", "warn", "no rules applied yet");
    }
    return RLS_OK;
}

/* The backend's rows (backend.h, doctor), the rules', the memory
 * class's (doctor_mem.c). */
static int doctor(rls_db *db, unsigned int flags, rls_rows **out)
{
    static const rows_col cols[] = {
        {"check", RLS_COL_TEXT}, {"status", RLS_COL_TEXT}, {"detail", RLS_COL_TEXT},
    };
    int bad = 0, done = 0, rc;

    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    if ((rc = rls__db_usable(db)))
        return rc;
    if (flags & ~(RLS_DOCTOR_FULL | RLS_DOCTOR_FIX))
        return rls__error(db, RLS_EINVAL, "unknown flags 0x%x", flags);
    rls_rows *r = rls__rows_new(cols, 3);
    if (!r)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    rc = db->be->doctor(db, (flags & RLS_DOCTOR_FULL) != 0, r, &bad, &done);
    if (rc == RLS_OK && !done)
        rc = rules_row(db, r, &bad);
    if (rc == RLS_OK)
        rc = rls__doctor_mem(db, (flags & RLS_DOCTOR_FIX) != 0, r, &bad);
    if (rc == RLS_OK && bad)
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    if (rc) {
        rls_rows_free(r);
        return rc;
    }
    *out = r;
    return RLS_OK;
}

int rls_doctor(rls_db *db, int full, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return doctor(db, full ? RLS_DOCTOR_FULL : 0, out);
}

int rls_doctor_v2(rls_db *db, unsigned int flags, rls_rows **out)
{
    RLS_SERIAL(db);
    return doctor(db, flags, out);
}
