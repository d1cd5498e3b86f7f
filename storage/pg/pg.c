/*
 * pg.c - the PostgreSQL driver (sql.h), through libpq.
 *
 * A statement is translated once (pg_sql.c) and prepared on the server at
 * its first step, under a name of its own, with parameter types taken from
 * what was bound: integers as int8, blobs as bytea, text left for the
 * server to infer from its context (text or bytea).  Parameters travel in
 * binary form (integers big-endian, bytes as they are), so no key is ever
 * escaped or spliced into SQL; results come back as text and are decoded
 * here (bytea from its hex form, booleans as 0/1).  A result is read whole
 * at the first step; further steps walk its rows.
 *
 * Failures become sql.h codes: serialization failures and deadlocks
 * (SQLSTATE 40001, 40P01) are SQL_BUSY and marked retryable, a lock wait
 * that outlived lock_timeout is SQL_BUSY, a lost connection SQL_IOERR
 * (retryable unless it was lost while committing).  A lost connection is
 * re-established before the next transaction, and every statement is
 * prepared again on the new one.
 *
 * BEGIN and writes whose outcome can wait are held back and sent with the
 * next statement that needs an answer (pg_pipe.c).
 *
 * Nothing here waits for the server without a deadline (pg_io.c): the
 * statements of the check table (rls__pg_stmt_quick) get the quick one,
 * every other statement the slow one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700

enum { P_NULL = 0, P_INT, P_TEXT, P_BLOB };

typedef struct pg_param {
    int kind;
    const char *p;           /* the bytes sent */
    int len;
    char *own;               /* a copy (SQL_TRANSIENT) */
    int owncap;
    unsigned char i8[8];     /* an integer, big-endian */
} pg_param;

typedef struct pg_col {
    int row;                 /* row the decoded bytes belong to, -1 none */
    char *p;
    int len, cap;
} pg_col;

struct pg_stmt {
    rls_stmt base;
    rls_db *db;
    pg_stmt *next;
    char *sql;               /* translated text */
    int nparams;
    uint32_t bytea;          /* parameters that are bytes (pg_sql.c) */
    int begins;              /* BEGIN: may reconnect first, then waits (pg_step) */
    int commits;             /* COMMIT: a lost connection leaves the outcome unknown */
    int rollbacks;           /* ROLLBACK of the whole transaction */
    int defer;               /* this step's outcome can wait (sql_step_deferred) */
    int slow;                /* PG_SLOW: not a statement of the check table */
    unsigned long gen;       /* connection it was prepared on; 0 none */
    char name[24];
    Oid types[PG_MAX_PARAMS];
    pg_param par[PG_MAX_PARAMS];
    PGresult *res;
    int started, row, nrows;
    pg_col *cols;
    int ncols;
};

#define P(st) ((pg_stmt *)(st))

/* ---- errors ------------------------------------------------------------ */

static void set_msg(struct pg_conn *pc, const char *what, const char *detail)
{
    snprintf(pc->errmsg, sizeof pc->errmsg, "%s%s%s", what ? what : "", what ? ": " : "",
             detail && *detail ? detail : "unknown PostgreSQL error");
    /* one line: libpq ends messages with a newline and may add DETAIL lines */
    char *nl = strchr(pc->errmsg, '\n');
    if (nl)
        *nl = '\0';
}

static int sqlstate_code(const char *st, int *retryable)
{
    *retryable = 0;
    if (!st)
        return SQL_IOERR;
    if (!strcmp(st, "40001") || !strcmp(st, "40P01")) {
        *retryable = 1;
        return SQL_BUSY;
    }
    if (!strcmp(st, "55P03") || !strcmp(st, "57014"))
        return SQL_BUSY;
    if (!strncmp(st, "23", 2))
        return SQL_CONSTRAINT;
    if (!strcmp(st, "25006") || !strcmp(st, "42501"))
        return SQL_READONLY;
    if (!strcmp(st, "53200"))
        return SQL_NOMEM;
    if (!strncmp(st, "53", 2))
        return SQL_FULL;
    if (!strncmp(st, "08", 2) || !strcmp(st, "57P01") || !strcmp(st, "57P02") ||
        !strcmp(st, "57P03")) {
        *retryable = 1;
        return SQL_IOERR;
    }
    if (!strcmp(st, "XX001") || !strcmp(st, "XX002"))
        return SQL_CORRUPT;
    return SQL_ERROR;
}

int rls__pg_fail(rls_db *db, PGresult *res, const char *what)
{
    struct pg_conn *pc = db->pg;
    if (!res && pc->lost)
        return SQL_IOERR;   /* pg_io.c said why, and whether to retry */
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    int code = sqlstate_code(state, &pc->retryable);
    if (!res || PQstatus(pc->c) != CONNECTION_OK) {
        pc->lost = 1;
        pc->retryable = 1;
        code = SQL_IOERR;
        msg = PQerrorMessage(pc->c);
    }
    if (!res && !msg)
        code = SQL_NOMEM;
    set_msg(pc, what, msg);
    return code;
}

int rls__pg_exec_by(rls_db *db, const char *sql, int slow)
{
    struct pg_conn *pc = db->pg;
    int frc = rls__pg_flush(db);
    if (frc != SQL_OK)
        return frc;
    if (pc->lost)
        return SQL_IOERR;
    PGresult *res;
    int64_t deadline = rls__pg_deadline(db, slow);
    int rc = rls__pg_collect(db, PQsendQuery(pc->c, sql), deadline, &res);
    if (rc != SQL_OK)
        return rc;
    rc = res && rls__pg_ok(res) ? SQL_OK : rls__pg_fail(db, res, NULL);
    if (rc == SQL_OK)
        db->pg->changes = atoll(PQcmdTuples(res));
    PQclear(res);
    return rc;
}

int rls__pg_exec(rls_db *db, const char *sql)
{
    return rls__pg_exec_by(db, sql, PG_QUICK);
}

/* ---- statements ---------------------------------------------------------- */

static int pg_prepare(rls_db *db, const char *sql, rls_stmt **out)
{
    pg_stmt *st = calloc(1, sizeof *st);
    *out = NULL;
    if (!st)
        return SQL_NOMEM;
    st->base.drv = &rls__pg_driver;
    st->db = db;
    st->sql = rls__pg_translate(sql, &st->nparams, &st->bytea);
    if (!st->sql) {
        free(st);
        return SQL_NOMEM;
    }
    if (st->nparams > PG_MAX_PARAMS) {
        free(st->sql);
        free(st);
        set_msg(db->pg, NULL, "statement has too many parameters");
        return SQL_ERROR;
    }
    st->slow = PG_SLOW;      /* until rls__pg_stmt_quick says otherwise */
    st->begins = strncmp(st->sql, "BEGIN", 5) == 0;
    st->commits = strcmp(st->sql, "COMMIT") == 0;
    st->rollbacks = strcmp(st->sql, "ROLLBACK") == 0;
    st->next = db->pg->stmts;
    db->pg->stmts = st;
    *out = &st->base;
    return SQL_OK;
}

/* The type a parameter is declared with: what was bound, bytes for ?N the
 * statement casts to a blob; a NULL left for the server to infer from the
 * statement, or text where it cannot ("?2 IS NULL" first). */
static Oid param_type(const pg_stmt *st, int i, int null_text)
{
    int k = st->par[i].kind;
    if (k == P_INT)
        return OID_INT8;
    if (k == P_BLOB || (st->bytea >> i & 1u))
        return OID_BYTEA;
    return k == P_TEXT || null_text ? OID_TEXT : 0;
}

/* The statement as prepared cannot take these bindings (an integer where
 * text was, or text where an integer was): prepare it again. */
static int types_changed(const pg_stmt *st)
{
    for (int i = 0; i < st->nparams; i++)
        if (st->par[i].kind != P_NULL && param_type(st, i, 0) != st->types[i])
            return 1;
    return 0;
}

/* Prepares st on the current connection, typed by its bindings. */
static int server_prepare(pg_stmt *st)
{
    struct pg_conn *pc = st->db->pg;
    PGresult *res = NULL;
    int unknown = 0;
    for (int i = 0; i < st->nparams; i++)
        unknown |= (st->types[i] = param_type(st, i, 0)) == 0;
    /* A failed prepare aborts the transaction it is in: a first attempt that
     * may fail only for want of a type runs under a savepoint. */
    int guard = unknown && PQtransactionStatus(pc->c) == PQTRANS_INTRANS &&
                rls__pg_exec(st->db, "SAVEPOINT rls_prepare") == SQL_OK;
    for (int null_text = 0; null_text < 2; null_text++) {
        for (int i = 0; i < st->nparams; i++)
            st->types[i] = param_type(st, i, null_text);
        snprintf(st->name, sizeof st->name, "rls%lu", ++pc->seq);
        PQclear(res);
        res = NULL;
        int64_t deadline = rls__pg_deadline(st->db, st->slow);
        int rc = rls__pg_collect(st->db, PQsendPrepare(pc->c, st->name, st->sql, st->nparams,
                                                       st->types), deadline, &res);
        if (rc != SQL_OK)
            return rc;   /* lost: no savepoint to release */
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        /* indeterminate type (42P18; 42P08 from PostgreSQL 15 for "?2 IS NULL") */
        if (!unknown || !state || (strcmp(state, "42P18") != 0 && strcmp(state, "42P08") != 0))
            break;
        if (guard)
            rls__pg_exec(st->db, "ROLLBACK TO SAVEPOINT rls_prepare");
    }
    if (guard)
        rls__pg_exec(st->db, "RELEASE SAVEPOINT rls_prepare");
    int rc = res && PQresultStatus(res) == PGRES_COMMAND_OK
                 ? SQL_OK : rls__pg_fail(st->db, res, "cannot prepare statement");
    PQclear(res);
    if (rc == SQL_OK)
        st->gen = pc->gen;
    return rc;
}

static int pg_step(rls_stmt *s)
{
    pg_stmt *st = P(s);
    struct pg_conn *pc = st->db->pg;
    if (!st->started && st->rollbacks)
        rls__pg_drop_held(pc);   /* undone before it was sent */
    if (!st->started && (st->commits || st->rollbacks) && pc->begin_sql && pc->nheld == 0) {
        pc->begin_sql = NULL;    /* nothing was sent: nothing to end */
        st->started = 1;
        st->row = st->nrows = 0;
        pc->changes = 0;
    }
    if (!st->started) {
        const char *vals[PG_MAX_PARAMS];
        int lens[PG_MAX_PARAMS], fmts[PG_MAX_PARAMS];
        int rc;
        if (pc->lost && !st->begins) {
            /* never reconnect inside a transaction: its statements would
             * run outside it */
            snprintf(pc->errmsg, sizeof pc->errmsg, "the connection to PostgreSQL was lost");
            return SQL_IOERR;
        }
        if (pc->lost && (rc = rls__pg_reconnect(st->db)) != SQL_OK)
            return rc;
        if (st->begins) {
            pc->begin_sql = st->sql; /* sent with the next statement */
            st->started = 1;
            st->row = st->nrows = 0;
            return SQL_DONE;
        }
        if ((st->gen != pc->gen || types_changed(st)) && (rc = server_prepare(st)) != SQL_OK)
            return rc;
        for (int i = 0; i < st->nparams; i++) {
            const pg_param *p = &st->par[i];
            vals[i] = p->kind == P_NULL ? NULL : p->kind == P_INT ? (const char *)p->i8 : p->p;
            lens[i] = p->kind == P_INT ? 8 : p->len;
            fmts[i] = 1;
        }
        if (st->defer && (pc->begin_sql || PQtransactionStatus(pc->c) == PQTRANS_INTRANS)) {
            st->defer = 0;       /* held back, sent with the next statement */
            if ((rc = rls__pg_hold(st->db, st->name, st->nparams, vals, lens,
                                   &st->base.deferred_rows)) != SQL_OK)
                return rc;
            st->started = 1;
            st->row = st->nrows = 0;
            pc->changes = 1;     /* not known yet: a deferred step's caller never asks */
            return SQL_DONE;
        }
        int deferred = st->defer;
        st->defer = 0;
        PGresult *res = rls__pg_run(st->db, st->name, st->nparams, vals, lens, fmts, st->slow,
                                    &rc);
        if (!res && rc != SQL_OK) {
            if (rc == SQL_IOERR && st->commits)
                pc->retryable = 0;  /* it may have committed: never run it twice */
            return rc;
        }
        ExecStatusType es = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (es != PGRES_TUPLES_OK && es != PGRES_COMMAND_OK) {
            rc = rls__pg_fail(st->db, res, NULL);
            if (rc == SQL_IOERR && st->commits)
                pc->retryable = 0;  /* it may have committed: never run it twice */
            PQclear(res);
            return rc;
        }
        st->res = res;
        st->started = 1;
        st->row = -1;
        st->nrows = es == PGRES_TUPLES_OK ? PQntuples(res) : 0;
        const char *ct = PQcmdTuples(res);
        pc->changes = ct && *ct ? atoll(ct) : 0;
        if (deferred)
            st->base.deferred_rows += pc->changes;
    }
    if (st->row < st->nrows)
        st->row++;
    return st->row < st->nrows ? SQL_ROW : SQL_DONE;
}

static int pg_step_deferred(rls_stmt *s)
{
    P(s)->defer = 1;
    return pg_step(s);
}

static void pg_reset(rls_stmt *s)
{
    pg_stmt *st = P(s);
    PQclear(st->res);
    st->res = NULL;
    st->started = 0;
    st->row = st->nrows = 0;
    for (int i = 0; i < st->ncols; i++)
        st->cols[i].row = -1;  /* decoded bytes belong to that result */
}

static void pg_clear(rls_stmt *s)
{
    pg_stmt *st = P(s);
    for (int i = 0; i < PG_MAX_PARAMS; i++)
        st->par[i].kind = P_NULL;
}

static void pg_finalize(rls_stmt *s)
{
    pg_stmt *st = P(s);
    struct pg_conn *pc = st->db->pg;
    pg_reset(s);
    if (pc) {
        rls__pg_forget_rows(pc, &st->base.deferred_rows);
        for (pg_stmt **pp = &pc->stmts; *pp; pp = &(*pp)->next)
            if (*pp == st) {
                *pp = st->next;
                break;
            }
        /* statements made for one listing are dropped on the server too */
        if (st->gen == pc->gen && !pc->lost && !pc->begin_sql && pc->nheld == 0 &&
            PQtransactionStatus(pc->c) == PQTRANS_IDLE) {
            char sql[48];
            snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
            rls__pg_exec(st->db, sql);
        }
    }
    for (int i = 0; i < PG_MAX_PARAMS; i++)
        free(st->par[i].own);
    for (int i = 0; i < st->ncols; i++)
        free(st->cols[i].p);
    free(st->cols);
    free(st->sql);
    free(st);
}

/* Makes *buf hold at least need bytes; 0, or -1 out of memory. */
static int fit(char **buf, int *cap, int need)
{
    if (need <= *cap)
        return 0;
    char *p = realloc(*buf, (size_t)need);
    if (!p)
        return -1;
    *buf = p;
    *cap = need;
    return 0;
}

static pg_param *param(pg_stmt *st, int i)
{
    return i >= 1 && i <= PG_MAX_PARAMS ? &st->par[i - 1] : NULL;
}

static int pg_bind_int64(rls_stmt *s, int i, int64_t v)
{
    pg_param *p = param(P(s), i);
    if (!p)
        return SQL_ERROR;
    uint64_t u = (uint64_t)v;
    for (int b = 0; b < 8; b++)
        p->i8[b] = (unsigned char)(u >> (56 - 8 * b));
    p->kind = P_INT;
    return SQL_OK;
}

static int pg_bind_bytes(rls_stmt *s, int i, const void *ptr, int n, int life, int text)
{
    pg_param *p = param(P(s), i);
    if (!p)
        return SQL_ERROR;
    if (n < 0)
        n = ptr ? (int)strlen(ptr) : 0;
    if (!ptr)
        ptr = "";
    if (life == SQL_TRANSIENT) {
        if (fit(&p->own, &p->owncap, n + 1) != 0)
            return SQL_NOMEM;
        memcpy(p->own, ptr, (size_t)n);
        ptr = p->own;
    }
    p->p = ptr;
    p->len = n;
    p->kind = text ? P_TEXT : P_BLOB;
    return SQL_OK;
}

static int pg_bind_null(rls_stmt *s, int i)
{
    pg_param *p = param(P(s), i);
    if (!p)
        return SQL_ERROR;
    p->kind = P_NULL;
    return SQL_OK;
}

static int valid_col(pg_stmt *st, int i)
{
    return st->res && st->row >= 0 && st->row < st->nrows && i >= 0 && i < PQnfields(st->res);
}

static int pg_column_type(rls_stmt *s, int i)
{
    pg_stmt *st = P(s);
    if (!valid_col(st, i) || PQgetisnull(st->res, st->row, i))
        return SQL_NULL;
    switch (PQftype(st->res, i)) {
    case OID_BOOL: case OID_INT2: case OID_INT4: case OID_INT8: return SQL_INTEGER;
    case OID_FLOAT4: case OID_FLOAT8: case OID_NUMERIC: return SQL_FLOAT;
    case OID_BYTEA: return SQL_BLOB;
    default: return SQL_TEXT;
    }
}

static int64_t pg_column_int64(rls_stmt *s, int i)
{
    pg_stmt *st = P(s);
    if (!valid_col(st, i) || PQgetisnull(st->res, st->row, i))
        return 0;
    const char *v = PQgetvalue(st->res, st->row, i);
    Oid t = PQftype(st->res, i);
    if (t == OID_BOOL)
        return v[0] == 't';
    if (t == OID_FLOAT4 || t == OID_FLOAT8)
        return (int64_t)strtod(v, NULL);
    return strtoll(v, NULL, 10);
}

static double pg_column_double(rls_stmt *s, int i)
{
    pg_stmt *st = P(s);
    if (!valid_col(st, i) || PQgetisnull(st->res, st->row, i))
        return 0;
    return strtod(PQgetvalue(st->res, st->row, i), NULL);
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The bytes of a bytea column of the current row, decoded from "\x..". */
static pg_col *bytea_col(pg_stmt *st, int i)
{
    if (st->ncols < PQnfields(st->res)) {
        int n = PQnfields(st->res);
        pg_col *c = realloc(st->cols, sizeof *c * (size_t)n);
        if (!c)
            return NULL;
        for (int k = st->ncols; k < n; k++)
            c[k] = (pg_col){-1, NULL, 0, 0};
        st->cols = c;
        st->ncols = n;
    }
    pg_col *c = &st->cols[i];
    if (c->row == st->row && c->p)
        return c;
    const char *v = PQgetvalue(st->res, st->row, i);
    int len = PQgetlength(st->res, st->row, i);
    if (len < 2 || v[0] != '\\' || v[1] != 'x')
        return NULL;  /* bytea_output = escape is never set by this library */
    int n = (len - 2) / 2;
    if (fit(&c->p, &c->cap, n + 1) != 0)
        return NULL;
    for (int k = 0; k < n; k++) {
        int hi = hexval(v[2 + 2 * k]), lo = hexval(v[3 + 2 * k]);
        if (hi < 0 || lo < 0)
            return NULL;
        c->p[k] = (char)(hi << 4 | lo);
    }
    c->p[n] = '\0';
    c->len = n;
    c->row = st->row;
    return c;
}

static const void *pg_column_ptr(rls_stmt *s, int i, int text)
{
    pg_stmt *st = P(s);
    if (!valid_col(st, i) || PQgetisnull(st->res, st->row, i))
        return NULL;
    if (PQftype(st->res, i) == OID_BYTEA) {
        pg_col *c = bytea_col(st, i);
        return c ? c->p : NULL;
    }
    const char *v = PQgetvalue(st->res, st->row, i);
    if (PQftype(st->res, i) == OID_BOOL)
        return v[0] == 't' ? "1" : "0";
    return v;
}

static int pg_column_bytes(rls_stmt *s, int i)
{
    pg_stmt *st = P(s);
    if (!valid_col(st, i) || PQgetisnull(st->res, st->row, i))
        return 0;
    if (PQftype(st->res, i) == OID_BYTEA) {
        pg_col *c = bytea_col(st, i);
        return c ? c->len : 0;
    }
    if (PQftype(st->res, i) == OID_BOOL)
        return 1;
    return PQgetlength(st->res, st->row, i);
}

/* ---- the handle ---------------------------------------------------------- */

static int pg_exec_drv(rls_db *db, const char *sql)
{
    int n;
    uint32_t bytea;
    char *text = rls__pg_translate(sql, &n, &bytea);
    if (!text)
        return SQL_NOMEM;
    int rc = rls__pg_exec_by(db, text, PG_SLOW);
    free(text);
    return rc;
}

static int64_t pg_changes(rls_db *db) { return db->pg ? db->pg->changes : 0; }

static int pg_in_tx(rls_db *db)
{
    if (!db->pg || !db->pg->c)
        return 0;
    PGTransactionStatusType t = PQtransactionStatus(db->pg->c);
    return db->pg->begin_sql || db->pg->nheld > 0 || t == PQTRANS_INTRANS ||
           t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

static const char *pg_errmsg(rls_db *db) { return db->pg ? db->pg->errmsg : "not connected"; }

/* synchronous_commit for the session: changed only when it must change. */
static int pg_durable(rls_db *db, int full)
{
    struct pg_conn *pc = db->pg;
    if (!pc || pc->durable == full)
        return SQL_OK;
    if (pc->lost) {
        int rc = rls__pg_reconnect(db);
        if (rc != SQL_OK)
            return rc;
    }
    int rc = rls__pg_exec(db, full ? "SET synchronous_commit = on" : "SET synchronous_commit = off");
    if (rc == SQL_OK)
        pc->durable = full;
    return rc;
}

const sql_driver rls__pg_driver = {
    .name = "postgresql",
    .prepare = pg_prepare,
    .step = pg_step,
    .step_deferred = pg_step_deferred,
    .reset = pg_reset,
    .clear_bindings = pg_clear,
    .finalize = pg_finalize,
    .bind_int64 = pg_bind_int64,
    .bind_bytes = pg_bind_bytes,
    .bind_null = pg_bind_null,
    .column_type = pg_column_type,
    .column_int64 = pg_column_int64,
    .column_double = pg_column_double,
    .column_ptr = pg_column_ptr,
    .column_bytes = pg_column_bytes,
    .exec = pg_exec_drv,
    .changes = pg_changes,
    .in_tx = pg_in_tx,
    .errmsg = pg_errmsg,
    .durable = pg_durable,
};

void rls__pg_stmt_quick(rls_stmt *s)
{
    if (s && s->drv == &rls__pg_driver)
        P(s)->slow = PG_QUICK;
}

/* Every statement of the connection is prepared again on the next one. */
void rls__pg_forget_prepared(struct pg_conn *pc)
{
    for (pg_stmt *st = pc->stmts; st; st = st->next) {
        pg_reset(&st->base);
        st->gen = 0;
    }
}
