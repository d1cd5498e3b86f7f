/*
 * lite_backend.c - the SQLite backend's operations (backend.h): a database
 * file on this host, or two in a split deployment (counters main, rules
 * attached).  Opening is open.c's, statements lite.c's and splitform.c's,
 * checkpoints wal.c's, the writers' turn busy.c's, the files under the
 * connection filecheck.c's, the doctor's rows lite_doctor.c's; this file
 * holds the transactions, the data versions the handle's trust rests on,
 * and the table itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lite.h"
#include "check.h"

/* ---- transactions --------------------------------------------------------- */

/* A write transaction writes nothing to files that are no longer the
 * database's (filecheck.c). */
static int lite_begin(rls_db *db, int write)
{
    int rc = rls__exec_simple(db, write ? STMT_BEGIN_IMM : STMT_BEGIN_READ);
    if (rc == RLS_OK && write && db->lite->sql && (rc = rls__files_verify(db, 1)) != RLS_OK)
        rls__exec_simple(db, STMT_ROLLBACK);
    return rc;
}

/* The data version of schema ("main", "rules") of the connection: it
 * changes with every commit of a write transaction on this connection and,
 * when a transaction starts, whenever another connection committed since. */
static int data_version(rls_db *db, const char *schema, unsigned int *dv)
{
    return db->lite->sql &&
           sqlite3_file_control(db->lite->sql, schema, SQLITE_FCNTL_DATA_VERSION, dv) == SQLITE_OK;
}

/* Commits and records the data versions right after it.  A write
 * transaction ends the handle's trust in what it knew (a check
 * re-establishes it, mark); a read one only if a version moved. */
static int lite_commit(rls_db *db)
{
    struct rls_lite *l = db->lite;
    int rc = rls__exec_simple(db, STMT_COMMIT);
    if (rc != RLS_OK)
        return rc;
    l->commit_dv_ok = data_version(db, "main", &l->commit_dv);
    /* a split handle knows what it knows of both files */
    if (l->split && l->commit_dv_ok)
        l->commit_dv_ok = data_version(db, "rules", &l->rules_commit_dv);
    if (db->conn.tx_write || !l->commit_dv_ok || l->commit_dv != l->meta_dv ||
        (l->split && l->rules_commit_dv != l->rules_meta_dv))
        l->meta_dv_ok = 0;
    return RLS_OK;
}

/* A checkpoint when the WAL is long, and the writers' turn passed on
 * (wal.c, busy.c). */
static void lite_after_commit(rls_db *db)
{
    if (db->lite->sql)
        rls__wal_after_commit(db);
}

static void lite_rollback(rls_db *db)
{
    rls__exec_rollback(db);
    db->lite->meta_dv_ok = 0;
}

static int lite_tx_retry(rls_db *db, int rc, int *attempt)
{
    (void)db, (void)rc, (void)attempt;
    return 0;   /* busy waits happen inside a statement (busy.c) */
}

static int lite_conflict(rls_db *db, const char *what)
{
    return rls__error(db, RLS_EBUSY, "%s", what);
}

/* ---- trust (cache.c) ---------------------------------------------------------- */

static void lite_mark(rls_db *db)
{
    struct rls_lite *l = db->lite;
    l->meta_dv = l->commit_dv;
    l->rules_meta_dv = l->rules_commit_dv;
    l->meta_dv_ok = l->commit_dv_ok;
}

/* Nothing was committed since the mark, by this handle or any other, when
 * the data version is the one right after the handle's last check; split:
 * of both files (an admin change commits to the rules file alone). */
static int lite_unchanged(rls_db *db)
{
    struct rls_lite *l = db->lite;
    unsigned int dv, rdv;
    return l->meta_dv_ok && data_version(db, "main", &dv) && dv == l->meta_dv &&
           (!l->split || (data_version(db, "rules", &rdv) && rdv == l->rules_meta_dv));
}

static void *lite_shared_page(rls_db *db)
{
    return db->lite->sql ? rls__wal_side_map(db) : NULL;
}

/* ---- deployment ------------------------------------------------------------------ */

static const char *lite_rules_schema(const rls_db *db)
{
    return db->lite->split ? "rules" : "main";
}

static int lite_rules_apart(const rls_db *db)
{
    return db->lite->split;
}

static int lite_rules_writable(const rls_db *db)
{
    return !db->lite->split || db->lite->rules_rw;
}

static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* a is one file (a copy's destination is never split); b's either file. */
static int lite_same_db(rls_db *a, rls_db *b, int *same, rls_db **failed)
{
    *failed = NULL;
    *same = a->lite->sql && b->lite->sql &&
            (same_file(a->ident.path, b->ident.path) ||
             same_file(a->ident.path, b->lite->counters_path));
    return RLS_OK;
}

/* The counters file's device and inode: any path to it, any process; its
 * read and write bits and its group for the table. */
static int lite_identity(rls_db *db, char *buf, size_t cap, unsigned *mode, long *gid)
{
    struct stat sb;
    const char *f = db->lite->counters_path ? db->lite->counters_path : db->ident.path;
    if (!f || stat(f, &sb) != 0)
        return rls__error(db, RLS_EIO, "cannot stat '%s'", f ? f : "");
    *mode = (unsigned)(sb.st_mode & 0666) | 0600;
    *gid = (long)sb.st_gid;
    snprintf(buf, cap, "sqlite:%llu:%llu", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino);
    return RLS_OK;
}

/* ---- the handle's life ---------------------------------------------------------- */

static int lite_claims(const char *path)
{
    (void)path;
    return 1;   /* anything that is not another backend's is a file */
}

static int lite_connected(const rls_db *db)
{
    return db->lite && db->lite->sql;
}

static void lite_after_fork(rls_db *db)
{
    db->lite->sql = NULL;      /* abandoned, never closed: it is the parent's */
    rls__wal_close(db);        /* the inherited descriptor shares the parent's lock */
    db->lite->meta_dv_ok = 0;
}

static void lite_release(rls_db *db)
{
    if (!db->lite)
        return;
    free(db->lite->counters_path);
    free(db->lite);
    db->lite = NULL;
}

const rls_backend rls__sqlite_backend = {
    .name = "sqlite",
    .sql = &rls__lite_driver,
    .claims = lite_claims,
    .init = rls__lite_init,
    .connect = rls__lite_connect,
    .disconnect = rls__lite_disconnect,
    .after_fork = lite_after_fork,
    .release = lite_release,
    .connected = lite_connected,
    .error = rls__sqlite_error,
    .prepare = rls__lite_prepare,
    .rules_schema = lite_rules_schema,
    .begin = lite_begin,
    .commit = lite_commit,
    .after_commit = lite_after_commit,
    .rollback = lite_rollback,
    .tx_retry = lite_tx_retry,
    .conflict = lite_conflict,
    .mark = lite_mark,
    .unchanged = lite_unchanged,
    .meta_per_tx = 0,
    .shared_page = lite_shared_page,
    .rules_apart = lite_rules_apart,
    .rules_writable = lite_rules_writable,
    .doctor = rls__lite_doctor,
    .same_db = lite_same_db,
    .identity = lite_identity,
    .gc_factor = 1,
    .check_tx = rls__check_tx,
};
