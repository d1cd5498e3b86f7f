/*
 * pg.h - internals of the PostgreSQL backend (pg_backend.c, its table of
 * operations, backend.h; pg.c, the statement driver; pg_sql.c, pg_open.c,
 * pg_pipe.c, pg_fast.c, pg_io.c, pg_doctor.c).  Only storage/pg/ includes
 * it (and tests that look into a PostgreSQL handle).
 */
#ifndef RLS_PG_H
#define RLS_PG_H

#include <libpq-fe.h>
#include <stdio.h>
#include "db.h"
#include "statecache.h"

#define PG_MAX_PARAMS 16

typedef struct pg_stmt pg_stmt;

/* The connection of one handle. */
struct pg_conn {
    PGconn *c;
    char *conninfo;          /* the URI as given, password and all: never shown */
    unsigned long gen;       /* bumped at every (re)connect: statements re-prepare */
    unsigned long seq;       /* names of prepared statements */
    int64_t changes;         /* rows of the last INSERT/UPDATE/DELETE */
    int durable;             /* synchronous_commit is on for the session */
    int retryable;           /* the last failure may succeed in a new transaction */
    int lost;                /* the connection broke; reconnect before the next one */
    const char *begin_sql;   /* a BEGIN not sent yet (its text: a read transaction's
                              * differs), or NULL: it goes with the next statement */
    struct pg_held **held;   /* writes not sent yet (pg_pipe.c) */
    int nheld, capheld;
    char errmsg[512];
    pg_stmt *stmts;          /* every live statement (re-prepared after a reconnect) */
    unsigned long fast_gen;  /* connection pg_fast.c's statements were prepared on */
    int fast_refused;        /* ... or the server refused one of them */
    int fast_stale;          /* how often known states were stale, 0..1024 (pg_fast.c) */
    int64_t started_ms;      /* when the current round trip's deadline was set (pg_io.c) */
    int timed_out;           /* lost to a deadline (pg_io.c), until the next connection */
};

/* ---- pg_open.c: the handle's life (backend.h) ----------------------- */
int rls__pg_uri(const char *path);            /* a libpq URI: postgresql:// or postgres:// */
/* Takes the URI: db->ident.path becomes it without its password. */
int rls__pg_init(rls_db *db, const char *uri);
int rls__pg_connect(rls_db *db);              /* connects, migrates, checks the schema */
void rls__pg_disconnect(rls_db *db);          /* frees db->pg; NULL: no-op */
void rls__pg_abandon(rls_db *db);             /* after fork: forget, never close */
/* backend.h's tx_retry: a serialization failure, a deadlock, a lost
 * connection before COMMIT: waits a randomised, growing time first; 0
 * after PG_RETRIES attempts or for any other failure. */
int rls__pg_tx_retry(rls_db *db, int rc, int *attempt);
/* A statement of the check table: its round trips get the quick deadline
 * (busy_timeout_ms + a grace), every other statement the slow one (pg_io.c). */
void rls__pg_stmt_quick(rls_stmt *st);
int rls__pg_doctor(rls_db *db, int full, rls_rows *r, int *bad, int *done);   /* pg_doctor.c */

/* SQLite's statement text in PostgreSQL's dialect (malloc'd; NULL: out of
 * memory); *nparams the highest ?N it names, bit N-1 of *bytea set when ?N
 * is cast to a blob (its bytes are a bytea, whatever was bound). */
char *rls__pg_translate(const char *sql, int *nparams, uint32_t *bytea);

/* Runs sql (several statements allowed) outside the statement table,
 * under the quick deadline (rls__pg_exec) or the one given (PG_QUICK,
 * PG_SLOW); SQL_OK or a code with the message in the connection.  On a
 * lost connection, SQL_IOERR at once. */
int rls__pg_exec(rls_db *db, const char *sql);
int rls__pg_exec_by(rls_db *db, const char *sql, int slow);
/* ---- pg_pipe.c: what is held back, and the pipeline that sends it ---- */
/* Holds back an execution of `name`; the rows it changes are added to
 * *rows (may be NULL) when its result arrives. */
int rls__pg_hold(rls_db *db, const char *name, int n, const char *const *vals, const int *lens,
                 int64_t *rows);
/* A statement goes away: held executions no longer count into *rows. */
void rls__pg_forget_rows(struct pg_conn *pc, const int64_t *rows);
PGresult *rls__pg_run(rls_db *db, const char *name, int n, const char *const *vals,
                      const int *lens, const int *fmts, int slow, int *rc);
int rls__pg_flush(rls_db *db);               /* sends what is held back */
void rls__pg_drop_held(struct pg_conn *pc);   /* a ROLLBACK: forget it */
void rls__pg_pipe_free(struct pg_conn *pc);
/* Records a libpq result's failure in the connection: its sql.h code. */
int rls__pg_fail(rls_db *db, PGresult *res, const char *what);
/* Connects again after a lost connection (SQL_OK or SQL_IOERR). */
int rls__pg_reconnect(rls_db *db);
/* After a new connection: every statement prepares again at its next step. */
void rls__pg_forget_prepared(struct pg_conn *pc);

/* ---- pg_io.c: every exchange under a deadline ---------------------------
 * A round trip may take busy_timeout_ms + PG_GRACE_MS (quick: connecting,
 * at least PG_CONNECT_MIN_MS, the session's setup, the check table's
 * statements), or PG_SLOW_FACTOR times that (slow: every other
 * statement).  A deadline that passes: the
 * connection is lost (its socket shut down), the failure not retryable,
 * SQL_IOERR with the message recorded.  Idle connections are probed by
 * TCP keepalives (after PG_KEEPALIVE_IDLE s, every PG_KEEPALIVE_INTERVAL
 * s, PG_KEEPALIVE_COUNT times) unless the URI says otherwise. */
#define PG_GRACE_MS 500
#define PG_CONNECT_MIN_MS 2000
#define PG_SLOW_FACTOR 10
#define PG_KEEPALIVE_IDLE "10"
#define PG_KEEPALIVE_INTERVAL "5"
#define PG_KEEPALIVE_COUNT "3"
enum { PG_QUICK = 0, PG_SLOW = 1 };
int64_t rls__pg_mono_ms(void);
int64_t rls__pg_budget_ms(const rls_db *db, int slow);
/* The deadline (monotonic ms) of a round trip that starts now. */
int64_t rls__pg_deadline(rls_db *db, int slow);
/* Waits until fd is ready for poll()'s events: 1, 0 when the deadline
 * passed, -1 on a poll error. */
int rls__pg_poll(int fd, int events, int64_t deadline);
/* The next result (NULL: the end of a query's results) without ever
 * blocking past the deadline; SQL_OK, or SQL_IOERR (lost). */
int rls__pg_next(rls_db *db, int64_t deadline, PGresult **res);
/* After one command was sent (sent: its PQsend* returned 1): its
 * results until the end; *out the first failed one, else the last. */
int rls__pg_collect(rls_db *db, int sent, int64_t deadline, PGresult **out);
/* Connects to pc->conninfo; SQL_OK, SQL_CANTOPEN or SQL_NOMEM with the
 * message recorded.  *out is non-blocking. */
int rls__pg_dial_until(rls_db *db, int64_t deadline, PGconn **out);
static inline int rls__pg_ok(const PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

/* storage/pg/pg_open.c: a write that found another transaction's row:
 * EBUSY, retryable (backend.h, conflict). */
int rls__pg_conflict(rls_db *db, const char *what);

#endif
