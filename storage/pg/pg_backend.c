/*
 * pg_backend.c - the PostgreSQL backend's operations (backend.h): a
 * database on a server, shared by many hosts.  Connecting is pg_open.c's,
 * statements pg.c's (in the text of pg_forms.h where PostgreSQL has its
 * own), the doctor's rows pg_doctor.c's; this file holds the statement
 * forms, the transactions and the table itself.
 */
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "check.h"
#include "pg_forms.h"
#include "copy.h"

#define RLS__PG_FORM(name, sql) [STMT_##name] = sql,
#define RLS__CPG_FORM(name, sql) [CST_##name] = sql,
static const char *const stmt_pg[STMT__COUNT] = {RLS_STMT_PG_MAP(RLS__PG_FORM)};
static const char *const cst_pg[CST__COUNT] = {RLS_COPY_PG_MAP(RLS__CPG_FORM)};
#undef RLS__PG_FORM
#undef RLS__CPG_FORM

/* PostgreSQL's own text where it has one, else the reference text (the
 * driver translates it, pg_sql.c).  A check's statements get the check's
 * deadline (pg_io.c). */
static int pg_prepare(rls_db *db, int table, int id, const char *sql, rls_stmt **out)
{
    const char *own = table == RLS_TABLE_CHECK ? stmt_pg[id]
                      : table == RLS_TABLE_COPY ? cst_pg[id] : NULL;
    int rc = rls__prepare_text(db, own ? own : sql, out);
    if (rc == RLS_OK && table == RLS_TABLE_CHECK)
        rls__pg_stmt_quick(*out);
    return rc;
}

static int pg_error(rls_db *db, int src, const char *what)
{
    return rls__error(db, rls__sql_code(src), "%s: %s", what, db->be->sql->errmsg(db));
}

static const char *pg_rules_schema(const rls_db *db)
{
    (void)db;
    return "main";   /* one database: the translation drops "main." (pg_sql.c) */
}

/* ---- transactions ----------------------------------------------------------- */

static int pg_begin(rls_db *db, int write)
{
    if (db->pg)
        db->pg->retryable = 0;   /* a failure from here on decides a retry */
    return rls__exec_simple(db, write ? STMT_BEGIN_IMM : STMT_BEGIN_READ);
}

static int pg_commit(rls_db *db)
{
    return rls__exec_simple(db, STMT_COMMIT);
}

static void pg_after_commit(rls_db *db)
{
    (void)db;
}

static void pg_rollback(rls_db *db)
{
    rls__exec_rollback(db);
}

/* ---- trust: other hosts commit where no data version tells (cache.c) ------ */

static void pg_mark(rls_db *db)
{
    (void)db;
}

static int pg_unchanged(rls_db *db)
{
    (void)db;
    return 0;
}

static void *pg_shared_page(rls_db *db)
{
    (void)db;
    return NULL;
}

/* ---- deployment: one database holds rules and counters ------------------- */

static int pg_rules_apart(const rls_db *db)
{
    (void)db;
    return 0;
}

static int pg_rules_writable(const rls_db *db)
{
    (void)db;
    return 1;
}

/* The database and schema a handle is on: the same text for two handles
 * on the same database and schema (the schema's own table's oid), *out
 * malloc'd. */
static int who(rls_db *db, char **out)
{
    rls_stmt *st = NULL;
    *out = NULL;
    int rc = sql_prepare(db, "SELECT current_database() || '/' ||"
                         " ('rls_state'::regclass)::oid || '/' ||"
                         " extract(epoch FROM pg_postmaster_start_time())", &st);
    if (rc == SQL_OK && (rc = sql_step(st)) == SQL_ROW) {
        const char *s = (const char *)sql_column_text(st, 0);
        *out = strdup(s ? s : "");
    }
    sql_finalize(st);
    if (rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot tell which database this is");
    return *out ? RLS_OK : rls__error(db, RLS_ENOMEM, "out of memory");
}

/* The first row's text of sql into buf; an sql.h code. */
static int first_text(rls_db *db, const char *sql, char *buf, size_t cap)
{
    rls_stmt *st = NULL;
    int rc = sql_prepare(db, sql, &st);
    if (rc == SQL_OK && (rc = sql_step(st)) == SQL_ROW) {
        const char *s = (const char *)sql_column_text(st, 0);
        snprintf(buf, cap, "%s", s ? s : "");
    }
    sql_finalize(st);
    return rc;
}

/*
 * The cluster (its system identifier, made by initdb, kept across
 * restarts), the database's oid and the oid of this rlstore schema's
 * counters table: the same for every handle of this database whatever
 * the URI says (host name or address, port spelling, options), distinct
 * for two clusters, two databases or two schemas.  A server that refuses
 * pg_control_system() to this user gives its address and port instead:
 * then handles reaching it by Unix socket and by TCP name it apart.
 */
static int pg_identity(rls_db *db, char *buf, size_t cap, unsigned *mode, long *gid)
{
    *mode = 0600;
    *gid = -1;
    int rc = first_text(db, "SELECT 'pg:' || (SELECT system_identifier FROM pg_control_system())"
                        " || '/' || (SELECT oid FROM pg_database WHERE datname ="
                        " current_database()) || '/' || ('rls_state'::regclass)::oid", buf, cap);
    if (rc != SQL_ROW)
        rc = first_text(db, "SELECT 'pg:' || coalesce(host(inet_server_addr()), 'local') || ':' ||"
                        " coalesce(inet_server_port(), 0) || '/' || (SELECT oid FROM pg_database"
                        " WHERE datname = current_database()) || '/' ||"
                        " ('rls_state'::regclass)::oid", buf, cap);
    if (rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot tell which database this is");
    return RLS_OK;
}

static int pg_same_db(rls_db *a, rls_db *b, int *same, rls_db **failed)
{
    char *x = NULL, *y = NULL;
    int rc;
    *same = 0;
    *failed = a;
    if ((rc = who(a, &x)) == RLS_OK) {
        *failed = b;
        if ((rc = who(b, &y)) == RLS_OK) {
            *failed = NULL;
            *same = strcmp(x, y) == 0;
        }
    }
    free(x);
    free(y);
    return rc;
}

/* ---- the handle's life ---------------------------------------------------------- */

static int pg_init(rls_db *db, const char *path)
{
    if (db->ident.opt.counters_path || db->ident.opt.file_group)
        return rls__error(db, RLS_EINVAL, "rls_open: counters_path and file_group are for "
                          "SQLite files, not a PostgreSQL database");
    return rls__pg_init(db, path);
}

static int pg_connected(const rls_db *db)
{
    return db->pg != NULL;
}

/* After abandon (a forked child's close): the parent's session is left
 * alone, only this process's memory goes. */
static void pg_release(rls_db *db)
{
    rls__sc_free(db);   /* the one-round-trip check's known states */
    if (!db->pg)
        return;
    rls__pg_pipe_free(db->pg);
    free(db->pg->conninfo);
    free(db->pg);
    db->pg = NULL;
}

const rls_backend rls__pg_backend = {
    .name = "postgresql",
    .sql = &rls__pg_driver,
    .claims = rls__pg_uri,
    .init = pg_init,
    .connect = rls__pg_connect,
    .disconnect = rls__pg_disconnect,
    .after_fork = rls__pg_abandon,
    .release = pg_release,
    .connected = pg_connected,
    .error = pg_error,
    .prepare = pg_prepare,
    .rules_schema = pg_rules_schema,
    .begin = pg_begin,
    .commit = pg_commit,
    .after_commit = pg_after_commit,
    .rollback = pg_rollback,
    .tx_retry = rls__pg_tx_retry,
    .conflict = rls__pg_conflict,
    .mark = pg_mark,
    .unchanged = pg_unchanged,
    .meta_per_tx = 1,
    .shared_page = pg_shared_page,
    .rules_apart = pg_rules_apart,
    .rules_writable = pg_rules_writable,
    .doctor = rls__pg_doctor,
    .same_db = pg_same_db,
    .identity = pg_identity,
    .gc_factor = 8,
    .check_tx = rls__pg_check_tx,
};
