/*
 * open.c - opening and closing a SQLite database (backend.h: init,
 * connect, disconnect): file creation with a safe mode, connection
 * settings, schema migrations, validation of foreign files, and SQLite's
 * errors as rlstore codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "busy.h"
#include "events.h"

#define RLS_APPLICATION_ID 0x524c5354  /* "RLST" */
#define RLS_PAGE_SIZE_NEW "1024"         /* page size of a new file (see migrate) */

extern const char *const rls__migrations[];
extern const int rls__migration_count;

/*
 * The code of failure src on connection c: an I/O error caused by a full
 * file system (creating or growing -shm or -wal, writing a page) is EFULL,
 * as SQLite's own SQLITE_FULL is.
 */
static int map_conn(sqlite3 *c, int src, int *full)
{
    int code = rls__sql_code(src), e = c ? sqlite3_system_errno(c) : 0;
    *full = code == RLS_EIO && (e == ENOSPC || e == EDQUOT);
    return *full ? RLS_EFULL : code;
}

static int conn_error(rls_db *db, sqlite3 *c, int src, const char *what)
{
    int full;
    int code = map_conn(c, src, &full);
    const char *detail = c ? sqlite3_errmsg(c) : sqlite3_errstr(src);
    return rls__error(db, code, "%s: %s%s", what, detail,
                      full ? " (no space left on the file system)" : "");
}

int rls__sqlite_error(rls_db *db, int src, const char *what)
{
    return conn_error(db, db ? db->lite->sql : NULL, src, what);
}

/* The error of connection c: the handle's own, or a helper connection. */
int rls__conn_error(rls_db *db, sqlite3 *c, int src, const char *what)
{
    if (!c || c == db->lite->sql)
        return rls__sqlite_error(db, src, what);
    return conn_error(db, c, src, what);
}

static int exec_sql(rls_db *db, sqlite3 *c, const char *sql, const char *what)
{
    int rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? RLS_OK : rls__conn_error(db, c, rc, what);
}

static int pragma_int(rls_db *db, sqlite3 *c, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? RLS_OK : rls__conn_error(db, c, rc, "cannot read database header");
}

#define SCHEMA_SQL "SELECT type, name, tbl_name, coalesce(sql, '') FROM %s.sqlite_schema " \
                   "WHERE name NOT IN ('sqlite_stat1', 'sqlite_stat4') ORDER BY name"

/*
 * The schema of the file `schema` ("main", or "rules" when attached) on
 * connection c must be exactly what rlstore's migrations create (built
 * afresh in memory to compare with): any other object, or one of ours with
 * another definition, is refused.  sqlite_stat1/4 (ANALYZE) are allowed.
 */
int rls__schema_check(rls_db *db, sqlite3 *c, const char *schema, const char *path)
{
    sqlite3 *ref = NULL;
    sqlite3_stmt *st = NULL, *rt = NULL;
    char sql[256];
    int code = RLS_OK, rc;
    rc = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE, NULL);
    for (int v = 0; v < rls__migration_count && rc == SQLITE_OK; v++)
        rc = sqlite3_exec(ref, rls__migrations[v], NULL, NULL, NULL);
    snprintf(sql, sizeof sql, SCHEMA_SQL, "main");
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(ref, sql, -1, &rt, NULL);
    snprintf(sql, sizeof sql, SCHEMA_SQL, schema);
    if (rc != SQLITE_OK)
        code = (rc & 0xff) == SQLITE_NOMEM || !ref
                   ? rls__error(db, RLS_ENOMEM, "out of memory")
                   : rls__error(db, RLS_ESTORAGE, "cannot build the reference schema");
    else if ((rc = sqlite3_prepare_v2(c, sql, -1, &st, NULL)) != SQLITE_OK)
        code = rls__conn_error(db, c, rc, "cannot read schema");
    while (code == RLS_OK) {
        int a = sqlite3_step(st), b = sqlite3_step(rt);
        if (a == SQLITE_DONE && b == SQLITE_DONE)
            break;
        if (a != SQLITE_ROW && a != SQLITE_DONE) {
            code = rls__conn_error(db, c, a, "cannot read schema");
            break;
        }
        if (b != SQLITE_ROW && b != SQLITE_DONE) {
            code = rls__error(db, RLS_ENOMEM, "out of memory");
            break;
        }
        const char *x[4] = {0}, *y[4] = {0};
        for (int k = 0; k < 4; k++) {
            x[k] = a == SQLITE_ROW ? (const char *)sqlite3_column_text(st, k) : "";
            y[k] = b == SQLITE_ROW ? (const char *)sqlite3_column_text(rt, k) : "";
            if (!x[k] || !y[k])
                code = rls__error(db, RLS_ENOMEM, "out of memory");
        }
        if (code != RLS_OK)
            break;
        int same = a == SQLITE_ROW && b == SQLITE_ROW;
        for (int k = 0; same && k < 4; k++)
            same = strcmp(x[k], y[k]) == 0;
        if (!same)
            code = a == SQLITE_ROW
                       ? rls__error(db, RLS_EUNSAFE, "'%s': %s '%s' was not created by rlstore",
                                    path, x[0], x[1])
                       : rls__error(db, RLS_EUNSAFE, "'%s': %s '%s' is missing", path, y[0],
                                    y[1]);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(rt);
    sqlite3_close(ref);
    return code;
}

/*
 * The header of the file `schema` on connection c: a file of another
 * application, a file cut inside a page or a schema newer than the library
 * is refused without being modified.  *ver gets the schema version, *nobj
 * the number of objects in the file.
 */
int rls__file_check(rls_db *db, sqlite3 *c, const char *schema, const char *path,
                    int64_t *ver, int64_t *nobj)
{
    int64_t appid = 0, page = 0;
    struct stat sb;
    char q[4][96];
    int rc;
    snprintf(q[0], sizeof q[0], "PRAGMA %s.application_id", schema);
    snprintf(q[1], sizeof q[1], "PRAGMA %s.user_version", schema);
    snprintf(q[2], sizeof q[2], "SELECT count(*) FROM %s.sqlite_schema", schema);
    snprintf(q[3], sizeof q[3], "PRAGMA %s.page_size", schema);
    *ver = *nobj = 0;
    /* One read transaction: a file another process is creating or
     * upgrading is seen before or after, never with the version of one
     * and the application id of the other */
    if ((rc = exec_sql(db, c, "BEGIN", "cannot read database header")))
        return rc;
    if ((rc = pragma_int(db, c, q[0], &appid)) || (rc = pragma_int(db, c, q[1], ver)) ||
        (rc = pragma_int(db, c, q[2], nobj)) || (rc = pragma_int(db, c, q[3], &page))) {
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    if ((rc = exec_sql(db, c, "COMMIT", "cannot read database header"))) {
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    /* SQLite reads a partial last page as zeros: a file cut inside it would
     * pass for intact */
    if (page > 0 && stat(path, &sb) == 0 && sb.st_size > 1 && sb.st_size % page != 0)
        return rls__error(db, RLS_ECORRUPT, "'%s' is truncated: %lld bytes is not a whole "
                          "number of %lld-byte pages", path, (long long)sb.st_size,
                          (long long)page);
    if (appid != RLS_APPLICATION_ID && (appid != 0 || *nobj != 0 || *ver != 0))
        return rls__error(db, RLS_ENOTDB, "'%s' is an SQLite database of another application",
                          path);
    rls__schema_found(*ver, rls__migration_count);   /* for rls_migrate (schema.c) */
    if (*ver > rls__migration_count)
        return rls__error(db, RLS_ENEWER,
                          "'%s' has schema version %lld, this library knows up to %d: it "
                          "needs a newer librlstore, one of schema version %lld",
                          path, (long long)*ver, rls__migration_count, (long long)*ver);
    return RLS_OK;
}

/*
 * Brings the main database of connection c from schema version ver (as
 * rls__file_check found it) to the library's, in one transaction.
 */
int rls__file_upgrade(rls_db *db, sqlite3 *c, const char *path, int64_t ver, int64_t nobj)
{
    int rc;
    /* A new file gets small pages: every commit appends each page it
     * changes to the WAL, and a check changes one row of a few dozen bytes,
     * so 1 KiB pages write (and later sync and checkpoint) a quarter of the
     * bytes 4 KiB pages would.  Ignored by SQLite once the file has content
     * (another process may have created it meanwhile). */
    if (nobj == 0 && ver == 0 &&
        (rc = exec_sql(db, c, "PRAGMA page_size = " RLS_PAGE_SIZE_NEW, "cannot create database")))
        return rc;
    if ((rc = exec_sql(db, c, "BEGIN IMMEDIATE", "cannot start migration")))
        return rc;
    /* Another process may have migrated while we waited for the lock. */
    if ((rc = pragma_int(db, c, "PRAGMA user_version", &ver)))
        goto fail;
    for (int64_t v = ver; v < rls__migration_count; v++) {
        char sql[64];
        if ((rc = exec_sql(db, c, rls__migrations[v], "migration failed")))
            goto fail;
        snprintf(sql, sizeof sql, "PRAGMA user_version = %lld", (long long)v + 1);
        if ((rc = exec_sql(db, c, sql, "migration failed")))
            goto fail;
    }
    {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d", RLS_APPLICATION_ID);
        if ((rc = exec_sql(db, c, sql, "migration failed")))
            goto fail;
    }
    if ((rc = exec_sql(db, c, "COMMIT", "cannot commit migration")))
        goto fail;
    return RLS_OK;
fail:
    sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    (void)path;
    return rc;
}

static int upgrade_ok(rls_db *db, const char *path, int64_t ver)
{
    char what[300];
    snprintf(what, sizeof what, "'%s'", path);
    return rls__schema_upgrade_ok(db, what, ver, rls__migration_count);
}

/*
 * Brings the schema of the handle's main database to the library's
 * version.  A database with another application id or a newer schema is
 * refused without being modified.
 */
static int migrate(rls_db *db, const char *path)
{
    int64_t ver = 0, nobj = 0;
    int rc = rls__file_check(db, db->lite->sql, "main", path, &ver, &nobj);
    if (rc != RLS_OK || ver == rls__migration_count)
        return rc;
    if ((ver != 0 || nobj != 0) && (rc = upgrade_ok(db, path, ver)))
        return rc;   /* an existing schema: not when no_upgrade is set */
    if (db->ident.opt.read_only)
        return rls__error(db, RLS_EREADONLY, "'%s' needs a schema upgrade but is opened read-only",
                          path);
    return rls__file_upgrade(db, db->lite->sql, path, ver, nobj);
}

/* Creates path with `mode` (and the handle's group) before SQLite sees it,
 * whole and at once (create.c); the -wal and -shm files then inherit that
 * mode.  *created is set when this call created it. */
static int prepare_path(rls_db *db, const char *path, unsigned int mode, int may_create,
                        int *created)
{
    struct stat sb;
    *created = 0;
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return rls__error(db, RLS_EISDIR, "'%s' is a directory", path);
        /* a device, FIFO or socket: SQLite would "migrate" /dev/null or
         * block on a FIFO; none can hold a database */
        if (!S_ISREG(sb.st_mode))
            return rls__error(db, RLS_ENOTDB, "'%s' is not a regular file", path);
        return RLS_OK;
    }
    if (errno != ENOENT)
        return rls__error(db, RLS_ECANTOPEN, "cannot open '%s': %s", path, strerror(errno));
    if (!db->ident.opt.create || !may_create)
        return rls__error(db, RLS_ECANTOPEN, "'%s' does not exist", path);
    return rls__file_create(db, path, mode, created);
}

/* Switches the file `schema` of connection c to WAL and checks that it took
 * (it does not on some filesystems, and a rollback journal would break the
 * concurrency model). */
int rls__set_wal(rls_db *db, sqlite3 *c, const char *schema, const char *path)
{
    sqlite3_stmt *st = NULL;
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA %s.journal_mode = WAL", schema);
    int rc = sqlite3_prepare_v2(c, sql, -1, &st, NULL);
    int code = RLS_OK;
    /* Switching takes the write lock while holding a read lock, so SQLite
     * reports another writer at once (no busy handler): wait here, up to
     * the busy timeout (a file an older rlstore made, or created empty by
     * someone else, that several processes open at once) */
    for (int waited = 0; rc == SQLITE_OK; waited++) {
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *mode = (const char *)sqlite3_column_text(st, 0);
            if (!mode || strcmp(mode, "wal") != 0)
                code = rls__error(db, RLS_ESTORAGE, "'%s' cannot use WAL mode (journal mode "
                                  "stays '%s')", path, mode ? mode : "?");
            rc = SQLITE_OK;
            break;
        }
        if ((rc & 0xff) != SQLITE_BUSY || waited >= db->ident.opt.busy_timeout_ms)
            break;
        sqlite3_reset(st);
        rc = SQLITE_OK;
        sqlite3_sleep(1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return rls__conn_error(db, c, rc, "cannot switch to WAL mode");
    return code;
}

/* The settings of every connection the library opens to a database. */
void rls__conn_defaults(sqlite3 *c)
{
    sqlite3_extended_result_codes(c, 1);
    sqlite3_db_config(c, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(c, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(c, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
    sqlite3_db_config(c, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
}

/* Opens the connection and brings it into service.  Split: the counters
 * file is the main database, the rules file is attached (split.c). */
int rls__lite_connect(rls_db *db)
{
    const char *path = db->lite->split ? db->lite->counters_path : db->ident.path;
    char *uri = NULL;
    int flags = (db->ident.opt.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
                SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
    if (db->lite->split) {
        /* URIs, so that the rules file can be attached read-only */
        if (!(uri = rls__file_uri(path, 0)))
            return rls__error(db, RLS_ENOMEM, "out of memory");
        flags |= SQLITE_OPEN_URI;
    }
    int rc = sqlite3_open_v2(uri ? uri : path, &db->lite->sql, flags, NULL);
    free(uri);
    if (rc != SQLITE_OK) {
        if (!db->lite->sql)
            return rls__error(db, RLS_ENOMEM, "out of memory");
        return rls__sqlite_error(db, rc, "cannot open database");
    }
    /* SQLite falls back to read-only when the file is not writable, and
     * would then create -wal and -shm with the file's read-only mode, which
     * stay and keep the database read-only after the mode is fixed */
    if (!db->ident.opt.read_only && sqlite3_db_readonly(db->lite->sql, "main") == 1)
        return rls__error(db, RLS_EREADONLY, "'%s' is not writable by this user; open it "
                          "read-only", path);
    rls__busy_install(db);
    rls__conn_defaults(db->lite->sql);

    if ((rc = migrate(db, path)))
        return rc;
    if ((rc = rls__schema_check(db, db->lite->sql, "main", path)))
        return rc;
    if (!db->ident.opt.read_only && (rc = rls__set_wal(db, db->lite->sql, "main", path)))
        return rc;
    if (db->lite->split && (rc = rls__split_attach(db)))
        return rc;
    if ((rc = rls__roles_check(db)))
        return rc;
    rc = exec_sql(db, db->lite->sql, db->ident.opt.durability == RLS_DURABILITY_FULL
                                   ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                  "cannot configure database");
    if (rc == RLS_OK)
        rc = exec_sql(db, db->lite->sql, "PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = OFF",
                      "cannot configure database");
    if (rc == RLS_OK)
        rc = rls__wal_setup(db);
    if (rc == RLS_OK)
        rls__files_identify(db);
    /* Transaction control must never need memory later: a ROLLBACK that
     * cannot be prepared would leave the transaction, and its locks, open. */
    static const int tx_stmts[] = {STMT_BEGIN_IMM, STMT_BEGIN_READ, STMT_COMMIT, STMT_ROLLBACK,
                                   STMT_HK_SAVE, STMT_HK_RELEASE, STMT_HK_UNDO};
    for (size_t i = 0; rc == RLS_OK && i < sizeof tx_stmts / sizeof tx_stmts[0]; i++)
        if (!rls__stmt(db, tx_stmts[i]))
            rc = rls__stmt_failed(db);
    if (rc == RLS_OK)
        rls__share_side_files(db);
    return rc;
}

void rls__lite_disconnect(rls_db *db)
{
    if (!db->lite)
        return;
    rls__stmt_finalize_all(db);
    if (db->lite->sql)
        sqlite3_close_v2(db->lite->sql);
    db->lite->sql = NULL;
    rls__wal_close(db);
}

/* The files of a handle and how they are created: the one file, or the
 * rules file (never group- or world-writable: only its owner writes rules)
 * and the counters file of a split deployment. */
static int prepare_files(rls_db *db, int *created_rules, int *created_counters)
{
    unsigned int mode = db->ident.opt.file_mode;
    struct stat a, b;
    /* a new rules file that the counters file would refuse: create nothing */
    if (db->lite->split && db->lite->rules_rw && db->ident.opt.create && stat(db->ident.path, &a) != 0 &&
        errno == ENOENT && stat(db->lite->counters_path, &b) == 0 && S_ISREG(b.st_mode)) {
        int rc = rls__split_precheck(db);
        if (rc != RLS_OK)
            return rc;
    }
    int rc = prepare_path(db, db->ident.path, db->lite->split ? mode & ~022u : mode,
                          db->lite->split ? db->lite->rules_rw : !db->ident.opt.read_only, created_rules);
    if (rc != RLS_OK || !db->lite->split)
        return rc;
    if ((rc = prepare_path(db, db->lite->counters_path, mode, !db->ident.opt.read_only, created_counters)))
        return rc;
    if (stat(db->ident.path, &a) == 0 && stat(db->lite->counters_path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return rls__error(db, RLS_EINVAL, "the rules database '%s' and the counters database "
                          "'%s' are the same file", db->ident.path, db->lite->counters_path);
    return RLS_OK;
}

/* Takes the options that point at the caller's memory: the counters file
 * of a split deployment, the group of the files it creates. */
static int options_own(rls_db *db)
{
    const char *counters = db->ident.opt.counters_path, *group = db->ident.opt.file_group;
    db->ident.opt.counters_path = NULL;
    db->ident.opt.file_group = NULL;   /* resolved here, not kept */
    if (counters) {
        if (!(db->lite->counters_path = strdup(counters)))
            return rls__error(db, RLS_ENOMEM, "out of memory");
        db->ident.opt.counters_path = db->lite->counters_path;
        db->lite->split = 1;
    }
    db->lite->rules_rw = !db->ident.opt.read_only && !(db->lite->split && db->ident.opt.rules_read_only);
    return group ? rls__group_resolve(db, group) : RLS_OK;
}

int rls__lite_init(rls_db *db, const char *path)
{
    int created_counters = 0;
    if (!(db->lite = calloc(1, sizeof *db->lite)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    db->lite->ckpt_fd = RLS_CKPT_FD_NONE;
    db->lite->rules_ckpt_fd = RLS_CKPT_FD_NONE;
    db->lite->file_dir[0] = db->lite->file_dir[1] = -1;
    if (!(db->ident.path = strdup(path)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    int rc = options_own(db);
    return rc == RLS_OK ? prepare_files(db, &db->ident.created, &created_counters) : rc;
}
