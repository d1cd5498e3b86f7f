/*
 * open.c - opening and closing a database: file creation with a safe mode,
 * connection settings, schema migrations, validation of foreign files, fork
 * detection, and the mapping of SQLite errors to rlstore codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "db.h"

#define RLS_APPLICATION_ID 0x524c5354  /* "RLST" */
#define RLS_PAGE_SIZE_NEW "1024"         /* page size of a new file (see migrate) */

extern const char *const rls__migrations[];
extern const int rls__migration_count;

static _Thread_local char open_errmsg[512];

int rls__now(int64_t *now_ms)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return RLS_ETIME;
    *now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return RLS_OK;
}

int rls__error(rls_db *db, int code, const char *fmt, ...)
{
    va_list ap;
    char *buf = db ? db->errmsg : open_errmsg;
    size_t size = db ? sizeof db->errmsg : sizeof open_errmsg;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return code;
}

/* SQLite result code -> rlstore code. */
static int map_sqlite(int src)
{
    switch (src & 0xff) {
    case SQLITE_OK: return RLS_OK;
    case SQLITE_NOMEM: return RLS_ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return RLS_EBUSY;
    case SQLITE_READONLY: return RLS_EREADONLY;
    case SQLITE_IOERR: return RLS_EIO;
    case SQLITE_CORRUPT: return RLS_ECORRUPT;
    case SQLITE_FULL: return RLS_EFULL;
    case SQLITE_CANTOPEN: return RLS_ECANTOPEN;
    case SQLITE_NOTADB: return RLS_ENOTDB;
    case SQLITE_PERM:
    case SQLITE_AUTH: return RLS_EREADONLY;
    default: return RLS_ESTORAGE;
    }
}

int rls__sqlite_error(rls_db *db, int src, const char *what)
{
    int code = map_sqlite(src);
    const char *detail = db && db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(src);
    return rls__error(db, code, "%s: %s", what, detail);
}

const char *rls_errmsg(rls_db *db)
{
    return db ? db->errmsg : open_errmsg;
}

void rls_options_init(rls_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->size = sizeof *opt;
    opt->busy_timeout_ms = 5000;
    opt->durability = RLS_DURABILITY_NORMAL;
    opt->on_error = RLS_ON_ERROR_DENY;
    opt->read_only = 0;
    opt->create = 1;
    opt->file_mode = 0600;
    opt->max_key_len = RLS_KEY_MAX_DEFAULT;
    opt->tool = "lib";
}

/* Copies the fields the caller's struct has (it may be older and smaller). */
static int options_take(rls_options *dst, const rls_options *src)
{
    rls_options_init(dst);
    if (!src)
        return RLS_OK;
    if (src->size < offsetof(rls_options, busy_timeout_ms) + sizeof(int) ||
        src->size > sizeof(rls_options) * 4)
        return RLS_EINVAL;
    size_t n = src->size < sizeof *dst ? src->size : sizeof *dst;
    memcpy(dst, src, n);
    dst->size = sizeof *dst;
    if (!dst->tool)
        dst->tool = "lib";
    if (dst->busy_timeout_ms < 0 || dst->max_key_len < 1 ||
        dst->max_key_len > RLS_KEY_MAX_LIMIT ||
        (dst->durability != RLS_DURABILITY_NORMAL &&
         dst->durability != RLS_DURABILITY_FULL) ||
        (dst->on_error != RLS_ON_ERROR_DENY && dst->on_error != RLS_ON_ERROR_ALLOW) ||
        (dst->file_mode & ~0777u) != 0)
        return RLS_EINVAL;
    return RLS_OK;
}

/*
 * Busy handler: short waits that grow from 20 us to 2 ms with jitter, until
 * the busy timeout.  SQLite's own handler sleeps in coarse steps, which under
 * contention makes the worst waits hundreds of milliseconds.
 */
static int busy_wait(void *arg, int count)
{
    rls_db *db = arg;
    int64_t waited_us = 0, step = 20;
    for (int i = 0; i < count; i++) {
        waited_us += step;
        if (step < 2000)
            step = step * 3 / 2 + 1;
    }
    int limit = db->opt.busy_timeout_ms;
    if (db->busy_cap_ms > 0 && db->busy_cap_ms < limit)
        limit = db->busy_cap_ms;
    if (waited_us / 1000 >= limit)
        return 0;
    db->rng ^= db->rng << 13;
    db->rng ^= db->rng >> 17;
    db->rng ^= db->rng << 5;
    struct timespec ts = {0, (long)(step * 1000 + db->rng % (uint32_t)(step * 500 + 1))};
    nanosleep(&ts, NULL);
    return 1;
}

static void who_am_i(rls_db *db)
{
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res)
        snprintf(db->os_user, sizeof db->os_user, "%s", pw.pw_name);
    else
        snprintf(db->os_user, sizeof db->os_user, "uid:%ld", (long)geteuid());
}

static int exec_sql(rls_db *db, const char *sql, const char *what)
{
    int rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? RLS_OK : rls__sqlite_error(db, rc, what);
}

static int pragma_int(rls_db *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? RLS_OK : rls__sqlite_error(db, rc, "cannot read database header");
}

#define SCHEMA_SQL "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema " \
                   "WHERE name NOT IN ('sqlite_stat1', 'sqlite_stat4') ORDER BY name"

/*
 * The file's schema must be exactly what rlstore's migrations create (built
 * afresh in memory to compare with): any other object, or one of ours with
 * another definition, is refused.  sqlite_stat1/4 (ANALYZE) are allowed.
 */
static int check_foreign_objects(rls_db *db)
{
    sqlite3 *ref = NULL;
    sqlite3_stmt *st = NULL, *rt = NULL;
    int code = RLS_OK, rc;
    rc = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE, NULL);
    for (int v = 0; v < rls__migration_count && rc == SQLITE_OK; v++)
        rc = sqlite3_exec(ref, rls__migrations[v], NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(ref, SCHEMA_SQL, -1, &rt, NULL);
    if (rc != SQLITE_OK)
        code = (rc & 0xff) == SQLITE_NOMEM || !ref
                   ? rls__error(db, RLS_ENOMEM, "out of memory")
                   : rls__error(db, RLS_ESTORAGE, "cannot build the reference schema");
    else if ((rc = sqlite3_prepare_v2(db->sql, SCHEMA_SQL, -1, &st, NULL)) != SQLITE_OK)
        code = rls__sqlite_error(db, rc, "cannot read schema");
    while (code == RLS_OK) {
        int a = sqlite3_step(st), b = sqlite3_step(rt);
        if (a == SQLITE_DONE && b == SQLITE_DONE)
            break;
        if (a != SQLITE_ROW && a != SQLITE_DONE) {
            code = rls__sqlite_error(db, a, "cannot read schema");
            break;
        }
        if (b != SQLITE_ROW && b != SQLITE_DONE) {
            code = rls__error(db, RLS_ENOMEM, "out of memory");
            break;
        }
        const char *x[4] = {0}, *y[4] = {0};
        for (int c = 0; c < 4; c++) {
            x[c] = a == SQLITE_ROW ? (const char *)sqlite3_column_text(st, c) : "";
            y[c] = b == SQLITE_ROW ? (const char *)sqlite3_column_text(rt, c) : "";
            if (!x[c] || !y[c])
                code = rls__error(db, RLS_ENOMEM, "out of memory");
        }
        if (code != RLS_OK)
            break;
        int same = a == SQLITE_ROW && b == SQLITE_ROW;
        for (int c = 0; same && c < 4; c++)
            same = strcmp(x[c], y[c]) == 0;
        if (!same)
            code = a == SQLITE_ROW
                       ? rls__error(db, RLS_EUNSAFE, "'%s': %s '%s' was not created by rlstore",
                                    db->path, x[0], x[1])
                       : rls__error(db, RLS_EUNSAFE, "'%s': %s '%s' is missing", db->path, y[0],
                                    y[1]);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(rt);
    sqlite3_close(ref);
    return code;
}

/*
 * Brings the schema to the library's version.  A database with another
 * application id or a newer schema is refused without being modified.
 */
static int migrate(rls_db *db)
{
    int64_t appid = 0, ver = 0, nobj = 0;
    int rc;

    int64_t page = 0;
    struct stat sb;
    if ((rc = pragma_int(db, "PRAGMA application_id", &appid)) ||
        (rc = pragma_int(db, "PRAGMA user_version", &ver)) ||
        (rc = pragma_int(db, "SELECT count(*) FROM sqlite_schema", &nobj)) ||
        (rc = pragma_int(db, "PRAGMA page_size", &page)))
        return rc;
    /* SQLite reads a partial last page as zeros: a file cut inside it would
     * pass for intact */
    if (page > 0 && stat(db->path, &sb) == 0 && sb.st_size > 1 && sb.st_size % page != 0)
        return rls__error(db, RLS_ECORRUPT, "'%s' is truncated: %lld bytes is not a whole "
                          "number of %lld-byte pages", db->path, (long long)sb.st_size,
                          (long long)page);
    if (appid != RLS_APPLICATION_ID && (appid != 0 || nobj != 0 || ver != 0))
        return rls__error(db, RLS_ENOTDB, "'%s' is an SQLite database of another application",
                          db->path);
    if (ver > rls__migration_count)
        return rls__error(db, RLS_ENEWER,
                          "'%s' has schema version %lld, this library knows up to %d",
                          db->path, (long long)ver, rls__migration_count);
    if (ver == rls__migration_count)
        return RLS_OK;
    if (db->opt.read_only)
        return rls__error(db, RLS_EREADONLY, "'%s' needs a schema upgrade but is opened read-only",
                          db->path);

    /* A new file gets small pages: every commit appends each page it
     * changes to the WAL, and a check changes one row of a few dozen bytes,
     * so 1 KiB pages write (and later sync and checkpoint) a quarter of the
     * bytes 4 KiB pages would.  Ignored by SQLite once the file has content
     * (another process may have created it meanwhile). */
    if (nobj == 0 && ver == 0 &&
        (rc = exec_sql(db, "PRAGMA page_size = " RLS_PAGE_SIZE_NEW, "cannot create database")))
        return rc;
    if ((rc = exec_sql(db, "BEGIN IMMEDIATE", "cannot start migration")))
        return rc;
    /* Another process may have migrated while we waited for the lock. */
    if ((rc = pragma_int(db, "PRAGMA user_version", &ver)))
        goto fail;
    for (int64_t v = ver; v < rls__migration_count; v++) {
        char sql[64];
        if ((rc = exec_sql(db, rls__migrations[v], "migration failed")))
            goto fail;
        snprintf(sql, sizeof sql, "PRAGMA user_version = %lld", (long long)v + 1);
        if ((rc = exec_sql(db, sql, "migration failed")))
            goto fail;
    }
    {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d", RLS_APPLICATION_ID);
        if ((rc = exec_sql(db, sql, "migration failed")))
            goto fail;
    }
    if ((rc = exec_sql(db, "COMMIT", "cannot commit migration")))
        goto fail;
    return RLS_OK;
fail:
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Creates the file with the requested mode before SQLite sees it; the -wal
 * and -shm files then inherit that mode. */
static int prepare_path(rls_db *db)
{
    struct stat sb;
    if (stat(db->path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return rls__error(db, RLS_EISDIR, "'%s' is a directory", db->path);
        return RLS_OK;
    }
    if (errno != ENOENT)
        return rls__error(db, RLS_ECANTOPEN, "cannot open '%s': %s", db->path, strerror(errno));
    if (!db->opt.create || db->opt.read_only)
        return rls__error(db, RLS_ECANTOPEN, "'%s' does not exist", db->path);
    int fd = open(db->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, db->opt.file_mode);
    if (fd >= 0)
        db->created = 1;
    if (fd < 0 && errno != EEXIST)
        return rls__error(db, errno == EACCES || errno == EROFS ? RLS_EREADONLY : RLS_ECANTOPEN,
                          "cannot create '%s': %s", db->path, strerror(errno));
    if (fd >= 0) {
        if (fchmod(fd, db->opt.file_mode) != 0) { /* umask must not widen or narrow it */ }
        close(fd);
    }
    return RLS_OK;
}

/* Switches to WAL and checks that it took (it does not on some
 * filesystems, and a rollback journal would break the concurrency model). */
static int set_wal(rls_db *db)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sql, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    int code = RLS_OK;
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(st, 0);
        if (!mode || strcmp(mode, "wal") != 0)
            code = rls__error(db, RLS_ESTORAGE, "'%s' cannot use WAL mode (journal mode "
                              "stays '%s')", db->path, mode ? mode : "?");
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return rls__sqlite_error(db, rc, "cannot switch to WAL mode");
    return code;
}

/* Opens the connection and brings it into service. */
static int connect_db(rls_db *db)
{
    int flags = (db->opt.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
                SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
    int rc = sqlite3_open_v2(db->path, &db->sql, flags, NULL);
    if (rc != SQLITE_OK) {
        if (!db->sql)
            return rls__error(db, RLS_ENOMEM, "out of memory");
        return rls__sqlite_error(db, rc, "cannot open database");
    }
    /* SQLite falls back to read-only when the file is not writable, and
     * would then create -wal and -shm with the file's read-only mode, which
     * stay and keep the database read-only after the mode is fixed */
    if (!db->opt.read_only && sqlite3_db_readonly(db->sql, "main") == 1)
        return rls__error(db, RLS_EREADONLY, "'%s' is not writable by this user; open it "
                          "read-only", db->path);
    sqlite3_extended_result_codes(db->sql, 1);
    sqlite3_busy_handler(db->sql, busy_wait, db);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);

    if ((rc = migrate(db)))
        return rc;
    if ((rc = check_foreign_objects(db)))
        return rc;
    if (!db->opt.read_only && (rc = set_wal(db)))
        return rc;
    rc = exec_sql(db, db->opt.durability == RLS_DURABILITY_FULL
                          ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                  "cannot configure database");
    if (rc == RLS_OK)
        rc = exec_sql(db, "PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = OFF",
                      "cannot configure database");
    if (rc == RLS_OK)
        rc = rls__wal_setup(db);
    /* Transaction control must never need memory later: a ROLLBACK that
     * cannot be prepared would leave the transaction, and its locks, open. */
    static const int tx_stmts[] = {STMT_BEGIN_IMM, STMT_BEGIN_READ, STMT_COMMIT, STMT_ROLLBACK,
                                   STMT_HK_SAVE, STMT_HK_RELEASE, STMT_HK_UNDO};
    for (size_t i = 0; rc == RLS_OK && i < sizeof tx_stmts / sizeof tx_stmts[0]; i++)
        if (!rls__stmt(db, tx_stmts[i]))
            rc = rls__stmt_failed(db);
    return rc;
}

static void disconnect(rls_db *db)
{
    rls__stmt_finalize_all(db);
    if (db->sql)
        sqlite3_close_v2(db->sql);
    db->sql = NULL;
    rls__wal_close(db);
}

/* Removes a database this call created, with its -wal and -shm. */
static void remove_created(const char *path)
{
    char side[4200];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

int rls_open(rls_db **out, const char *path, const rls_options *opt)
{
    int rc;
    rls_db *db;

    open_errmsg[0] = '\0';
    if (!out)
        return rls__error(NULL, RLS_EINVAL, "rls_open: db is NULL");
    *out = NULL;
    if (!path || !*path)
        return rls__error(NULL, RLS_EINVAL, "rls_open: path is NULL or empty");
    db = calloc(1, sizeof *db);
    if (!db)
        return rls__error(NULL, RLS_ENOMEM, "out of memory");
    db->rules_gen = -1;
    db->ckpt_fd = RLS_CKPT_FD_NONE;
    if ((rc = options_take(&db->opt, opt))) {
        free(db);
        return rls__error(NULL, rc, "rls_open: invalid options");
    }
    snprintf(db->tool, sizeof db->tool, "%s", db->opt.tool);
    db->opt.tool = db->tool;
    db->path = strdup(path);
    if (!db->path) {
        free(db);
        return rls__error(NULL, RLS_ENOMEM, "out of memory");
    }
    who_am_i(db);
    db->pid = getpid();
    db->rng = (uint32_t)db->pid * 2654435761u + 1;
    rc = prepare_path(db);
    if (rc == RLS_OK)
        rc = connect_db(db);
    if (rc != RLS_OK) {
        snprintf(open_errmsg, sizeof open_errmsg, "%s", db->errmsg);
        disconnect(db);
        if (db->created)
            remove_created(db->path);  /* leave no empty file behind */
        free(db->path);
        free(db);
        return rc;
    }
    *out = db;
    return RLS_OK;
}

void rls_close(rls_db *db)
{
    if (!db)
        return;
    if (db->pid == getpid()) {
        if (db->sql && !db->in_tx && (db->nstats > 0 || rls__keystat_pending(db))) {
            int64_t now;
            if (rls__now(&now) == RLS_OK && rls__begin(db, 1) == RLS_OK) {
                if (rls__stats_flush(db, now, 1) == RLS_OK)
                    rls__commit(db);
                else
                    rls__rollback(db);
            }
        }
        disconnect(db);
    } else {
        /* In a forked child the parent's connection is abandoned, never
         * closed: closing could disturb the parent's locks or WAL.  Closing
         * the child's copy of the checkpoint lock descriptor releases
         * nothing (a flock lock goes with the last descriptor). */
        rls__wal_close(db);
    }
    rls__cache_free(db);
    rls__keystat_free(db);
    free(db->stats);
    free(db->path);
    free(db);
}

/*
 * Checks that the handle can be used.  After fork() the child gets a fresh
 * connection of its own; the inherited one is abandoned untouched.
 */
int rls__db_usable(rls_db *db)
{
    if (!db)
        return RLS_EINVAL;
    if (db->pid == getpid()) {
        if (!db->sql)
            return rls__error(db, RLS_EMISUSE, "handle has no open connection");
        return RLS_OK;
    }
    db->sql = NULL;  /* abandoned, never closed: it is the parent's */
    memset(db->stmt, 0, sizeof db->stmt);
    memset(db->astmt, 0, sizeof db->astmt);
    rls__wal_close(db);  /* the inherited descriptor shares the parent's lock */
    db->in_tx = 0;
    db->nstats = 0;
    rls__keystat_free(db);  /* the parent flushes its own */
    db->rules_gen = -1;
    db->meta_dv_ok = 0;
    db->pid = getpid();
    int rc = connect_db(db);
    if (rc != RLS_OK) {
        disconnect(db);
        db->pid = 0;  /* not connected: the next call tries again */
        return rc;
    }
    return RLS_OK;
}
