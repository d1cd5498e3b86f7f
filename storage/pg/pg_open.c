/*
 * pg_open.c - a PostgreSQL handle's connection: connecting with libpq's
 * own settings (the URI, PGSSLMODE, .pgpass, PG* variables), session
 * settings, schema migrations in one transaction, reconnection after a lost
 * connection, and the bounded retry of transactions that lost a
 * serialization conflict.
 *
 * Nothing here prints: libpq's notice processor is replaced by one that
 * drops notices, and connection errors go to the handle's message without
 * the connection string (which may hold a password).
 *
 * Nothing here waits without a deadline (pg_io.c): connecting, the
 * session's setup and the schema version's reads get the quick one, the
 * migrations the slow one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pg.h"
#include "events.h"

extern const char *const rls__pg_migrations[];
extern const int rls__pg_migration_count;

/* Transactions that lost a conflict are run again up to this many times,
 * after a randomised wait that doubles from 1 ms up to PG_BACKOFF_MAX_MS. */
#define PG_RETRIES 12
#define PG_BACKOFF_MAX_MS 64

int rls__pg_uri(const char *path)
{
    return strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0;
}

static void drop_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/*
 * A server process on glibc returns the top of its heap to the kernel
 * whenever more than 128 KiB of it is free (M_TRIM_THRESHOLD's default).
 * Each execution of a check statement allocates ~140 KiB there (every
 * B-tree scan it starts takes ~27 KiB) and frees it at its end: the heap
 * was trimmed and grown again, and its pages faulted in anew, on every
 * statement: a quarter of the server's CPU per check (two brk and tens
 * of page faults a statement; PERFORMANCE.md).  glibc raises both
 * thresholds for good when a block it had to map on its own (larger than
 * the mmap threshold) is freed: one query that builds a 256 KiB value
 * does that (0.3 ms; repeat() of one character or length() would take
 * milliseconds), after which the session keeps up to 512 KiB of free
 * heap.  On another C library it costs one query per connection; its
 * failure changes nothing.
 */
/*
 * The same round trip asks a server of PostgreSQL 14 or newer to check, every
 * second while it runs a statement, that the client is still connected
 * (client_connection_check_interval): a statement the library gave up on
 * (pg_io.c shuts the socket down when a deadline passes) is then cancelled
 * instead of running on to its end, its locks held.  Its failure changes
 * nothing either, unless the connection was lost.
 */
static int keep_heap(rls_db *db)
{
    PGresult *r = NULL;
    int rc = rls__pg_collect(db, PQsendQuery(db->pg->c,
        "SELECT octet_length(repeat(repeat('x', 1024), 256)),"
        " (SELECT set_config('client_connection_check_interval', '1000', false)"
        " WHERE current_setting('server_version_num')::int >= 140000)"),
        rls__pg_deadline(db, PG_QUICK), &r);
    PQclear(r);
    return rc;
}

static int session_setup(rls_db *db)
{
    char sql[320];
    int full = db->ident.opt.durability == RLS_DURABILITY_FULL;
    int wait = db->ident.opt.busy_timeout_ms > 0 ? db->ident.opt.busy_timeout_ms : 1;
    snprintf(sql, sizeof sql,
             "SET client_min_messages = warning; SET bytea_output = hex;"
             " SET synchronous_commit = %s; SET lock_timeout = %d;"
             " SET default_transaction_isolation = 'read committed'%s",
             full ? "on" : "off", wait,
             db->ident.opt.read_only ? "; SET default_transaction_read_only = on" : "");
    int rc = rls__pg_exec(db, sql);
    if (rc == SQL_OK) {
        db->pg->durable = full;
        rc = keep_heap(db);
    }
    return rc;
}

/* Opens pc->c; SQL_OK, or SQL_CANTOPEN with the reason recorded. */
static int pg_dial(rls_db *db)
{
    struct pg_conn *pc = db->pg;
    /* libpq's parse errors quote the URI, or the part it could not read,
     * password and all: check it first and say only that it is invalid */
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(pc->conninfo, &perr);
    PQconninfoFree(opts);
    if (!opts) {
        int invalid = perr != NULL;
        snprintf(pc->errmsg, sizeof pc->errmsg, "%s", invalid ? "the URI is not a valid libpq "
                 "connection URI" : "out of memory");
        PQfreemem(perr);
        return invalid ? SQL_CANTOPEN : SQL_NOMEM;
    }
    PGconn *c;
    int rc = rls__pg_dial_until(db, rls__pg_deadline(db, PG_QUICK), &c);
    if (rc != SQL_OK)
        return rc;
    PQsetNoticeProcessor(c, drop_notice, NULL);
    if (pc->c)
        PQfinish(pc->c);
    pc->c = c;
    pc->gen++;
    pc->lost = 0;
    pc->timed_out = 0;
    rls__pg_forget_prepared(pc);
    return session_setup(db);
}

int rls__pg_reconnect(rls_db *db)
{
    int rc = pg_dial(db);
    if (rc != SQL_OK) {
        db->pg->lost = 1;
        db->pg->retryable = 0;  /* no server: the policy decides, now */
        return SQL_IOERR;
    }
    return SQL_OK;
}

/* One value of a query without parameters; *isnull when NULL or no row. */
static int query_int(rls_db *db, const char *sql, int slow, int64_t *v, int *isnull)
{
    PGresult *res = NULL;
    int rc = db->pg->lost ? SQL_IOERR
                          : rls__pg_collect(db, PQsendQuery(db->pg->c, sql),
                                            rls__pg_deadline(db, slow), &res);
    *v = 0;
    *isnull = 1;
    if (rc != SQL_OK) {
        return rc;
    } else if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = rls__pg_fail(db, res, NULL);
    } else if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)) {
        const char *s = PQgetvalue(res, 0, 0);
        *v = s[0] == 't' ? 1 : s[0] == 'f' ? 0 : strtoll(s, NULL, 10);
        *isnull = 0;
    }
    PQclear(res);
    return rc;
}

/* Schema version of the database: -1 when it has none yet. */
static int schema_version(rls_db *db, int64_t *ver)
{
    int64_t v;
    int isnull, rc = query_int(db, "SELECT to_regclass('rls_schema') IS NOT NULL", PG_QUICK,
                                &v, &isnull);
    if (rc != SQL_OK)
        return rc;
    *ver = -1;
    if (!v)
        return SQL_OK;
    rc = query_int(db, "SELECT version FROM rls_schema WHERE id = 1", PG_QUICK, &v, &isnull);
    if (rc == SQL_OK && !isnull)
        *ver = v;
    return rc;
}

/* Applies migrations from..count in one transaction; *raced when another
 * process created the schema at the same time (then nothing was done). */
static int migrate_tx(rls_db *db, int64_t from, int *raced)
{
    char sql[96];
    int rc = rls__pg_exec_by(db, "BEGIN", PG_SLOW);
    *raced = 0;
    if (rc == SQL_OK && from > 0) {
        int64_t v;
        int isnull;
        rc = query_int(db, "SELECT version FROM rls_schema WHERE id = 1 FOR UPDATE", PG_SLOW, &v,
                       &isnull);
        if (rc == SQL_OK && !isnull && v >= rls__pg_migration_count)
            from = rls__pg_migration_count;  /* another process did it */
    }
    for (int64_t m = from < 0 ? 0 : from; rc == SQL_OK && m < rls__pg_migration_count; m++)
        rc = rls__pg_exec_by(db, rls__pg_migrations[m], PG_SLOW);
    snprintf(sql, sizeof sql, "UPDATE rls_schema SET version = %d WHERE id = 1",
             rls__pg_migration_count);
    if (rc == SQL_OK)
        rc = rls__pg_exec_by(db, sql, PG_SLOW);
    if (rc == SQL_OK)
        rc = rls__pg_exec_by(db, "COMMIT", PG_SLOW);
    if (rc != SQL_OK) {
        /* duplicate table or key: a concurrent rls_open created it */
        *raced = from < 0 && rc == SQL_CONSTRAINT;
        rls__pg_exec(db, "ROLLBACK");   /* nothing on a lost connection */
    }
    return rc;
}

static int pg_error(rls_db *db, int rc, const char *what)
{
    return rls__sql_error(db, rc, what);
}

static int pg_migrate(rls_db *db)
{
    int64_t ver, n;
    int rc, raced = 0, isnull;
    for (int attempt = 0; attempt < 3; attempt++) {
        if ((rc = schema_version(db, &ver)) != SQL_OK)
            return pg_error(db, rc, "cannot read the schema version");
        rls__schema_found(ver, rls__pg_migration_count);   /* rls_migrate (schema.c) */
        if (ver > rls__pg_migration_count)
            return rls__error(db, RLS_ENEWER, "the rlstore schema in this PostgreSQL database "
                              "is version %lld, newer than this library's %d: it needs a "
                              "newer librlstore, one of schema version %lld",
                              (long long)ver, rls__pg_migration_count, (long long)ver);
        if (ver == rls__pg_migration_count)
            return RLS_OK;
        if (ver >= 0 && (rc = rls__schema_upgrade_ok(db, "the rlstore schema in this "
                                                     "PostgreSQL database", ver,
                                                     rls__pg_migration_count)))
            return rc;   /* an existing schema: not when no_upgrade is set */
        if (ver < 0) {
            rc = query_int(db, "SELECT count(*) FROM information_schema.tables"
                           " WHERE table_schema = current_schema() AND table_name LIKE 'rls\\_%'",
                           PG_QUICK, &n, &isnull);
            if (rc != SQL_OK)
                return pg_error(db, rc, "cannot read the schema");
            if (n > 0)
                return rls__error(db, RLS_EUNSAFE, "this PostgreSQL schema has rls_ tables "
                                  "but no rlstore schema version");
            if (!db->ident.opt.create)
                return rls__error(db, RLS_ENOTFOUND, "this PostgreSQL database has no rlstore "
                                  "schema and create is off");
        }
        if (db->ident.opt.read_only)
            return rls__error(db, RLS_EREADONLY, "the rlstore schema in this PostgreSQL "
                              "database needs %s, which a read-only handle cannot do",
                              ver < 0 ? "creating" : "an upgrade");
        rc = migrate_tx(db, ver, &raced);
        if (rc == SQL_OK)
            return RLS_OK;
        if (!raced)
            return pg_error(db, rc, "cannot create the schema");
    }
    return pg_error(db, rc, "cannot create the schema");
}

/* The URI with its passwords replaced: user:secret@host -> user:***@host,
 * password=secret -> password=***, sslpassword likewise (NULL: out of
 * memory). */
static char *redact(const char *uri)
{
    size_t len = strlen(uri);
    char *out = malloc(len + 8 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    const char *p = uri, *scheme = strstr(uri, "://");
    const char *auth = scheme ? scheme + 3 : uri;
    const char *end = auth + strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', (size_t)(end - auth));
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (colon) {
        memcpy(o, p, (size_t)(colon + 1 - p));
        o += colon + 1 - p;
        memcpy(o, "***", 3);
        o += 3;
        p = at;
    }
    while (*p) {
        size_t k = strncmp(p, "password=", 9) == 0 ? 9
                   : strncmp(p, "sslpassword=", 12) == 0 ? 12 : 0;
        if (k && (p[-1] == '?' || p[-1] == '&')) {   /* p > uri: the scheme is first */
            memcpy(o, p, k);
            memcpy(o + k, "***", 3);
            o += k + 3;
            p += k + strcspn(p + k, "&#");
            continue;
        }
        *o++ = *p++;
    }
    *o = '\0';
    return out;
}

int rls__pg_init(rls_db *db, const char *uri)
{
    if (!(db->pg = calloc(1, sizeof *db->pg)) || !(db->pg->conninfo = strdup(uri)) ||
        !(db->ident.path = redact(uri)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    return RLS_OK;
}

int rls__pg_connect(rls_db *db)
{
    int rc = pg_dial(db);
    if (rc == SQL_CANTOPEN)
        return rls__error(db, RLS_ECANTOPEN, "cannot connect to PostgreSQL: %s",
                          db->pg->errmsg);
    if (rc != SQL_OK)
        return pg_error(db, rc, "cannot configure the PostgreSQL session");
    if ((rc = pg_migrate(db)))
        return rc;
    /* Transaction control must never need memory later (open.c) */
    static const int tx_stmts[] = {STMT_BEGIN_IMM, STMT_BEGIN_READ, STMT_COMMIT, STMT_ROLLBACK,
                                   STMT_HK_SAVE, STMT_HK_RELEASE, STMT_HK_UNDO};
    for (size_t i = 0; i < sizeof tx_stmts / sizeof tx_stmts[0]; i++)
        if (!rls__stmt(db, tx_stmts[i]))
            return rls__stmt_failed(db);
    return RLS_OK;
}

void rls__pg_disconnect(rls_db *db)
{
    if (!db->pg)
        return;
    if (db->pg->c && PQstatus(db->pg->c) == CONNECTION_OK)
        db->pg->lost = 1;  /* finalizing: no DEALLOCATE each, the session ends */
    rls__stmt_finalize_all(db);
    rls__pg_pipe_free(db->pg);
    if (db->pg->c)
        PQfinish(db->pg->c);
    free(db->pg->conninfo);
    free(db->pg);
    db->pg = NULL;
}

void rls__pg_abandon(rls_db *db)
{
    /* The parent's session: finishing it would send it a Terminate.  The
     * child's copy of the socket stays open until exit; the child connects
     * anew (its statements were forgotten with the handle's tables). */
    if (!db->pg)
        return;
    db->pg->c = NULL;
    db->pg->stmts = NULL;
    db->pg->lost = 0;
    db->pg->begin_sql = NULL;
    rls__pg_pipe_free(db->pg);
}

int rls__pg_conflict(rls_db *db, const char *what)
{
    if (db->pg)
        db->pg->retryable = 1;
    return rls__error(db, RLS_EBUSY, "%s", what);
}

int rls__pg_tx_retry(rls_db *db, int rc, int *attempt)
{
    if (!db || !db->pg || rc == RLS_OK || !db->pg->retryable || *attempt >= PG_RETRIES)
        return 0;
    db->pg->retryable = 0;
    int64_t cap = (int64_t)1 << (*attempt < 6 ? *attempt : 6);
    if (cap > PG_BACKOFF_MAX_MS)
        cap = PG_BACKOFF_MAX_MS;
    db->conn.rng = db->conn.rng * 1103515245u + 12345u;
    int64_t us = cap * 500 + (int64_t)(db->conn.rng >> 8) % (cap * 1000);  /* 0.5..1.5 x cap ms */
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    (*attempt)++;
    return 1;
}
