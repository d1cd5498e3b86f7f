/*
 * pg.h - internals of the PostgreSQL driver (pg.c, pg_sql.c, pg_open.c).
 */
#ifndef RLS_PG_H
#define RLS_PG_H

#include <libpq-fe.h>
#include <stdio.h>
#include "db.h"

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
};

/* SQLite's statement text in PostgreSQL's dialect (malloc'd; NULL: out of
 * memory); *nparams the highest ?N it names, bit N-1 of *bytea set when ?N
 * is cast to a blob (its bytes are a bytea, whatever was bound). */
char *rls__pg_translate(const char *sql, int *nparams, uint32_t *bytea);

/* Runs sql (several statements allowed) outside the statement table;
 * SQL_OK or a code with the message in the connection. */
int rls__pg_exec(rls_db *db, const char *sql);
/* ---- pg_pipe.c: what is held back, and the pipeline that sends it ---- */
/* Holds back an execution of `name`; the rows it changes are added to
 * *rows (may be NULL) when its result arrives. */
int rls__pg_hold(rls_db *db, const char *name, int n, const char *const *vals, const int *lens,
                 int64_t *rows);
/* A statement goes away: held executions no longer count into *rows. */
void rls__pg_forget_rows(struct pg_conn *pc, const int64_t *rows);
PGresult *rls__pg_run(rls_db *db, const char *name, int n, const char *const *vals,
                      const int *lens, const int *fmts, int *rc);
int rls__pg_flush(rls_db *db);               /* sends what is held back */
void rls__pg_drop_held(struct pg_conn *pc);   /* a ROLLBACK: forget it */
void rls__pg_pipe_free(struct pg_conn *pc);
/* Records a libpq result's failure in the connection: its sql.h code. */
int rls__pg_fail(rls_db *db, PGresult *res, const char *what);
/* Connects again after a lost connection (SQL_OK or SQL_IOERR). */
int rls__pg_reconnect(rls_db *db);
/* After a new connection: every statement prepares again at its next step. */
void rls__pg_forget_prepared(struct pg_conn *pc);

#endif
