/*
 * doctor.c - rls_doctor(): a health report of a database for operators
 * (rlctl doctor).  Every check is one row: check, status, detail.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "admin.h"

#define SQLITE_SAFE_VERSION 3051003   /* the WAL-reset race is fixed here */
#define WAL_WARN_BYTES (64LL << 20)

extern const int rls__migration_count;

static int add(rls_rows *r, const char *check, const char *status, const char *detail)
{
    int row = rows_add(r);
    return row < 0 || rows_put_str(r, row, "check", check) ||
                   rows_put_str(r, row, "status", status) ||
                   rows_put_str(r, row, "detail", detail)
               ? -1 : 0;
}

/* First column of a one-row pragma as text into buf. */
static int pragma_text(rls_db *db, const char *sql, char *buf, size_t size)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL);
    buf[0] = '\0';
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(buf, size, "%s", t ? (const char *)t : "");
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? RLS_OK : rls__sqlite_error(db, rc, "doctor");
}

static void mode_check(rls_rows *r, const char *check, const char *path, int dir, int *bad)
{
    struct stat sb;
    char detail[512];
    if (stat(path, &sb) != 0) {
        snprintf(detail, sizeof detail, "cannot stat '%s'", path);
        *bad |= add(r, check, "warn", detail);
        return;
    }
    unsigned m = (unsigned)sb.st_mode & 07777;
    int world_w = (m & 0002) && !(dir && (m & 01000));
    int group_w = (m & 0020) != 0;
    int world_r = !dir && (m & 0004);   /* the file holds IPs, e-mail addresses */
    snprintf(detail, sizeof detail, "%s is mode %04o%s", path, m,
             world_w ? ": writable by every user"
             : group_w ? ": writable by its group (fine only for a shared deployment)"
             : world_r ? ": readable by every user (keys may be personal data)" : "");
    *bad |= add(r, check, world_w || group_w || world_r ? "warn" : "ok", detail);
}

int rls_doctor(rls_db *db, int full, rls_rows **out)
{
    static const rows_col cols[] = {
        {"check", RLS_COL_TEXT}, {"status", RLS_COL_TEXT}, {"detail", RLS_COL_TEXT},
    };
    char buf[512], detail[600], path[4200];
    int bad = 0, rc;
    struct stat sb;

    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    if ((rc = rls__db_usable(db)))
        return rc;
    rls_rows *r = rows_new(cols, 3);
    if (!r)
        return rls__error(db, RLS_ENOMEM, "out of memory");

    snprintf(detail, sizeof detail, "SQLite %s%s", sqlite3_libversion(),
             sqlite3_libversion_number() < SQLITE_SAFE_VERSION
                 ? " has the rare WAL-reset race between concurrent checkpoints "
                   "(fixed in 3.51.3); prefer a newer SQLite"
                 : "");
    bad |= add(r, "sqlite_version",
               sqlite3_libversion_number() < SQLITE_SAFE_VERSION ? "warn" : "ok", detail);

    if ((rc = pragma_text(db, "PRAGMA journal_mode", buf, sizeof buf)))
        goto out;
    snprintf(detail, sizeof detail, "journal mode %s", buf);
    bad |= add(r, "journal_mode", strcmp(buf, "wal") == 0 ? "ok" : "fail", detail);

    if ((rc = pragma_text(db, "PRAGMA user_version", buf, sizeof buf)))
        goto out;
    snprintf(detail, sizeof detail, "schema version %s (library knows %d)", buf,
             rls__migration_count);
    bad |= add(r, "schema_version", atoi(buf) == rls__migration_count ? "ok" : "fail", detail);

    if ((rc = pragma_text(db, "PRAGMA quick_check", buf, sizeof buf)))
        goto out;
    bad |= add(r, "quick_check", strcmp(buf, "ok") == 0 ? "ok" : "fail", buf);
    if (full) {
        if ((rc = pragma_text(db, "PRAGMA integrity_check", buf, sizeof buf)))
            goto out;
        bad |= add(r, "integrity_check", strcmp(buf, "ok") == 0 ? "ok" : "fail", buf);
    }

    mode_check(r, "file_mode", db->path, 0, &bad);
    snprintf(path, sizeof path, "%s", db->path);
    mode_check(r, "dir_mode", dirname(path), 1, &bad);

    snprintf(path, sizeof path, "%s-wal", db->path);
    long long wal = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
    snprintf(detail, sizeof detail, "write-ahead log is %lld bytes", wal);
    bad |= add(r, "wal_size", wal > WAL_WARN_BYTES ? "warn" : "ok", detail);

    if ((rc = pragma_text(db, "SELECT active_version FROM rls_meta WHERE id = 1", buf,
                          sizeof buf)))
        goto out;
    if (atoi(buf) > 0) {
        snprintf(detail, sizeof detail, "rule set version %s is active", buf);
        bad |= add(r, "rules", "ok", detail);
    } else {
        bad |= add(r, "rules", "warn", "no rules applied yet");
    }
    if (bad)
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
out:
    if (rc) {
        rls_rows_free(r);
        return rc;
    }
    *out = r;
    return RLS_OK;
}
