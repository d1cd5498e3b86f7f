/*
 * lite_doctor.c - the SQLite backend's rows of rls_doctor() (backend.h,
 * doctor): the library's SQLite, the files under the connection, each
 * file's journal mode, schema version, quick (or integrity) check, the
 * modes of the files and their directories, the WAL's size, and what a
 * split deployment needs of its two files.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lite.h"
#include "admin.h"

#define SQLITE_SAFE_VERSION 3051003   /* the WAL-reset race is fixed here */
#define WAL_WARN_BYTES (64LL << 20)
/* Up to this size a plain doctor also runs integrity_check, which compares
 * every index with its table (quick_check does not): about half a second
 * for 64 MiB of 1 KiB pages here (docs/RELIABILITY.md).  --full runs it
 * at any size. */
#define INTEGRITY_AUTO_BYTES (64LL << 20)

extern const int rls__migration_count;

/*
 * The mode of a file or directory.  group_ok: group write permission is
 * what the deployment means (the counters of a split deployment, which the
 * applications' group writes); otherwise it is a warning, and for the rules
 * of a split deployment the warning says what is at stake.
 */
static void mode_check(rls_rows *r, const char *check, const char *path, int dir,
                       int group_ok, int rules, int *bad)
{
    struct stat sb;
    char detail[600];
    if (stat(path, &sb) != 0) {
        snprintf(detail, sizeof detail, "cannot stat '%s'", path);
        *bad |= rls__doctor_add(r, check, "warn", detail);
        return;
    }
    unsigned m = (unsigned)sb.st_mode & 07777;
    /* a sticky directory (such as /tmp, 1777) keeps others from removing
     * or renaming the files in it, not from creating the -wal and -shm
     * files first: still every user's, and it says so rather than "group" */
    int sticky_w = dir && (m & 01002) == 01002;
    int world_w = (m & 0002) && !sticky_w;
    int group_w = (m & 0020) != 0 && !sticky_w;
    int world_r = !dir && (m & 0004);   /* the file holds IPs, e-mail addresses */
    const char *why = sticky_w ? ": writable by every user (sticky: others cannot remove its "
                                 "files, but can create the -wal and -shm files first)"
                      : world_w ? ": writable by every user"
                      : group_w && group_ok ? ", group-writable: shared with the "
                                              "applications' group"
                      : group_w && rules ? ": writable by its group, whose members can change "
                                           "the rules and the audit log"
                      : group_w ? ": writable by its group (fine only for a shared deployment)"
                      : world_r ? ": readable by every user (keys may be personal data)" : "";
    snprintf(detail, sizeof detail, "%s is mode %04o, group %lu%s", path, m,
             (unsigned long)sb.st_gid, why);
    *bad |= rls__doctor_add(r, check, sticky_w || world_w || (group_w && !group_ok) || world_r ? "warn" : "ok",
                detail);
}

static int pragma_check(rls_db *db, rls_rows *r, const char *schema, const char *prefix,
                        int full, int *bad)
{
    char sql[96], buf[512], detail[600], name[64];
    int rc;
    snprintf(sql, sizeof sql, "PRAGMA %s.journal_mode", schema);
    if ((rc = rls__doctor_text(db, sql, buf, sizeof buf)))
        return rc;
    snprintf(detail, sizeof detail, "journal mode %s", buf);
    snprintf(name, sizeof name, "%sjournal_mode", prefix);
    *bad |= rls__doctor_add(r, name, strcmp(buf, "wal") == 0 ? "ok" : "fail", detail);

    snprintf(sql, sizeof sql, "PRAGMA %s.user_version", schema);
    if ((rc = rls__doctor_text(db, sql, buf, sizeof buf)))
        return rc;
    snprintf(detail, sizeof detail, "schema version %s (library knows %d)", buf,
             rls__migration_count);
    snprintf(name, sizeof name, "%sschema_version", prefix);
    *bad |= rls__doctor_add(r, name, atoi(buf) == rls__migration_count ? "ok" : "fail", detail);

    snprintf(sql, sizeof sql, "SELECT page_count * page_size FROM pragma_page_count('%s'),"
             " pragma_page_size('%s')", schema, schema);
    if ((rc = rls__doctor_text(db, sql, buf, sizeof buf)))
        return rc;
    long long bytes = atoll(buf);
    full = full || bytes <= INTEGRITY_AUTO_BYTES;

    snprintf(sql, sizeof sql, "PRAGMA %s.quick_check", schema);
    if ((rc = rls__doctor_text(db, sql, buf, sizeof buf)))
        return rc;
    snprintf(name, sizeof name, "%squick_check", prefix);
    if (strcmp(buf, "ok") == 0 && !full)
        snprintf(detail, sizeof detail, "ok (the indexes were not compared with their tables: "
                 "the file is %lld MiB, over the %lld MiB a plain doctor checks; doctor --full "
                 "does)", bytes >> 20, INTEGRITY_AUTO_BYTES >> 20);
    else
        snprintf(detail, sizeof detail, "%s", buf);
    *bad |= rls__doctor_add(r, name, strcmp(buf, "ok") == 0 ? "ok" : "fail", detail);
    if (full) {
        snprintf(sql, sizeof sql, "PRAGMA %s.integrity_check", schema);
        if ((rc = rls__doctor_text(db, sql, buf, sizeof buf)))
            return rc;
        snprintf(name, sizeof name, "%sintegrity_check", prefix);
        *bad |= rls__doctor_add(r, name, strcmp(buf, "ok") == 0 ? "ok" : "fail", buf);
    }
    return RLS_OK;
}

/* The file's mode, its directory's, and its WAL's size. */
static void file_checks(rls_rows *r, const char *path, const char *prefix, int group_ok,
                        int rules, int *bad)
{
    char p[4200], name[64], detail[600];
    struct stat sb;
    snprintf(name, sizeof name, "%sfile_mode", prefix);
    mode_check(r, name, path, 0, group_ok, rules, bad);
    snprintf(p, sizeof p, "%s", path);
    snprintf(name, sizeof name, "%sdir_mode", prefix);
    mode_check(r, name, dirname(p), 1, group_ok, rules, bad);
    if (group_ok && stat(path, &sb) == 0 && (sb.st_mode & 020)) {
        /* the counters' -wal and -shm come and go: the applications' group
         * must be able to create them */
        struct stat ds;
        snprintf(p, sizeof p, "%s", path);
        if (stat(dirname(p), &ds) == 0 && (ds.st_gid != sb.st_gid || !(ds.st_mode & 020)) &&
            !(ds.st_mode & 002)) {
            snprintf(detail, sizeof detail, "the directory of '%s' is not writable by its "
                     "group %lu: its members cannot create the -wal and -shm files",
                     path, (unsigned long)sb.st_gid);
            snprintf(name, sizeof name, "%sdir_group", prefix);
            *bad |= rls__doctor_add(r, name, "warn", detail);
        }
    }
    snprintf(p, sizeof p, "%s-wal", path);
    long long wal = stat(p, &sb) == 0 ? (long long)sb.st_size : 0;
    snprintf(detail, sizeof detail, "write-ahead log is %lld bytes", wal);
    snprintf(name, sizeof name, "%swal_size", prefix);
    *bad |= rls__doctor_add(r, name, wal > WAL_WARN_BYTES ? "warn" : "ok", detail);
}

/* Split: readers that may not write the rules directory need its -wal and
 * -shm, in the rules file's group and mode. */
static void rules_side_check(rls_rows *r, const char *path, int *bad)
{
    static const char *const sides[] = {"-wal", "-shm"};
    struct stat db, sb;
    char p[4200], detail[9000] = "";
    if (stat(path, &db) != 0)
        return;
    for (size_t i = 0; i < 2 && !*detail; i++) {
        snprintf(p, sizeof p, "%s%s", path, sides[i]);
        if (stat(p, &sb) != 0)
            snprintf(detail, sizeof detail, "'%s' is missing: applications that may not "
                     "write the directory cannot open the rules until an admin tool opens "
                     "them", p);
        else if (sb.st_gid != db.st_gid || (sb.st_mode & 0777) != (db.st_mode & 0777))
            snprintf(detail, sizeof detail, "'%s' is mode %04o, group %lu, not the rules "
                     "file's %04o, group %lu: give it the same (docs/SECURITY.md)", p,
                     (unsigned)sb.st_mode & 0777, (unsigned long)sb.st_gid,
                     (unsigned)db.st_mode & 0777, (unsigned long)db.st_gid);
    }
    *bad |= rls__doctor_add(r, "rules_side_files", *detail ? "warn" : "ok",
                *detail ? detail : "-wal and -shm are there, as the rules file");
}

/* The library's SQLite and the files under the handle; *done when they
 * are not the database's (nothing more is read). */
static int version_rows(rls_db *db, rls_rows *r, int *bad, int *done)
{
    char detail[600];
    /* SQLite before 3.51.3 can corrupt the WAL when two checkpoints race;
     * rlstore's own checkpoints take turns under "<db>-ckpt" (wal.c), so
     * the race is only a risk when that lock cannot be had. */
    int old = sqlite3_libversion_number() < SQLITE_SAFE_VERSION;
    int exposed = old && !rls__wal_serialised(db);
    snprintf(detail, sizeof detail, "SQLite %s%s", sqlite3_libversion(),
             !old ? ""
             : exposed ? " has the rare WAL-reset race between concurrent checkpoints "
                         "(fixed in 3.51.3), and the checkpoint lock file '-ckpt' beside "
                         "the database cannot be opened: prefer a newer SQLite"
                       : " predates the fix of the WAL-reset race (3.51.3); rlstore's "
                         "checkpoints take turns under the '-ckpt' lock file, which avoids "
                         "it (other programs must not checkpoint this database)");
    *bad |= rls__doctor_add(r, "sqlite_version", exposed ? "warn" : "ok", detail);

    /* the files under the handle are the database's (filecheck.c) */
    if (rls__files_verify(db, 0) == RLS_OK) {
        *bad |= rls__doctor_add(r, "files", "ok", "the database file and its write-ahead log "
                                "are the ones at their paths and in the shared index");
    } else {
        /* what it would read next may be in a log nobody writes any more */
        *bad |= rls__doctor_add(r, "files", "fail", db->errmsg);
        *done = 1;
    }
    return RLS_OK;
}

/* One file, or the rules file of a split deployment and its counters file. */
static int file_rows(rls_db *db, int full, rls_rows *r, int *bad)
{
    char detail[600];
    int rc;
    /* one file, or the rules file of a split deployment */
    const char *schema = db->lite->split ? "rules" : "main";
    if ((rc = pragma_check(db, r, schema, "", full, bad)))
        return rc;
    file_checks(r, db->ident.path, "", 0, db->lite->split, bad);
    if (db->lite->split) {
        rules_side_check(r, db->ident.path, bad);
        if ((rc = pragma_check(db, r, "main", "counters_", full, bad)))
            return rc;
        file_checks(r, db->lite->counters_path, "counters_", 1, 0, bad);
        snprintf(detail, sizeof detail, "split deployment: rules database '%s'%s, counters "
                 "database '%s'", db->ident.path, db->lite->rules_rw ? "" : " (read-only)",
                 db->lite->counters_path);
    } else {
        snprintf(detail, sizeof detail, "single-file database '%s'", db->ident.path);
    }
    *bad |= rls__doctor_add(r, "role", "ok", detail);
    return RLS_OK;
}

int rls__lite_doctor(rls_db *db, int full, rls_rows *r, int *bad, int *done)
{
    int rc = version_rows(db, r, bad, done);
    return rc != RLS_OK || *done ? rc : file_rows(db, full, r, bad);
}
