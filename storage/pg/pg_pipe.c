/*
 * pg_pipe.c - fewer round trips to PostgreSQL (pg.c).  Two statements of a
 * check need no answer at the moment they are run: BEGIN, and a write
 * whose outcome storage does not look at (sql_step_deferred: a counter
 * state's upsert, sql.h).  Both are held back and sent with the next
 * statement that needs an answer, in one pipeline (libpq's pipeline mode),
 * so a check on an existing key costs BEGIN + control row, state read,
 * upsert + COMMIT: three round trips instead of five.
 *
 * A held-back write that fails makes the statement it was sent with fail
 * with its error (its own result is then PIPELINE_ABORTED): in a
 * transaction, that statement is at the latest the COMMIT, so the whole
 * transaction fails as it would have, only one statement later.  A
 * ROLLBACK drops what is held back; a transaction that ends before anything
 * was sent never reaches the server.  Every result is awaited under the
 * round trip's deadline (pg_io.c).
 */
#include <stdlib.h>
#include <string.h>
#include "pg.h"

/* One held-back execution: the statement's server name and a copy of its
 * parameters. */
struct pg_held {
    char name[24];
    int64_t *rows;           /* counts the rows it changed, or NULL */
    int n;
    const char *vals[PG_MAX_PARAMS];
    int lens[PG_MAX_PARAMS];
    char bytes[];            /* the parameters' bytes, one after another */
};

void rls__pg_drop_held(struct pg_conn *pc)
{
    for (int i = 0; i < pc->nheld; i++)
        free(pc->held[i]);
    pc->nheld = 0;
}

void rls__pg_pipe_free(struct pg_conn *pc)
{
    rls__pg_drop_held(pc);
    free(pc->held);
    pc->held = NULL;
    pc->capheld = 0;
}

void rls__pg_forget_rows(struct pg_conn *pc, const int64_t *rows)
{
    for (int i = 0; i < pc->nheld; i++)
        if (pc->held[i]->rows == rows)
            pc->held[i]->rows = NULL;
}

int rls__pg_hold(rls_db *db, const char *name, int n, const char *const *vals, const int *lens,
                 int64_t *rows)
{
    struct pg_conn *pc = db->pg;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += vals[i] ? (size_t)lens[i] : 0;
    if (pc->nheld == pc->capheld) {
        int cap = pc->capheld ? pc->capheld * 2 : 8;
        struct pg_held **h = realloc(pc->held, sizeof *h * (size_t)cap);
        if (!h)
            return SQL_NOMEM;
        pc->held = h;
        pc->capheld = cap;
    }
    struct pg_held *e = malloc(sizeof *e + total + 1);
    if (!e)
        return SQL_NOMEM;
    snprintf(e->name, sizeof e->name, "%s", name);
    e->rows = rows;
    e->n = n;
    char *o = e->bytes;
    for (int i = 0; i < n; i++) {
        e->lens[i] = lens[i];
        e->vals[i] = vals[i] ? o : NULL;
        if (vals[i]) {
            memcpy(o, vals[i], (size_t)lens[i]);
            o += lens[i];
        }
    }
    pc->held[pc->nheld++] = e;
    return SQL_OK;
}

/*
 * Sends what is held back (a pending BEGIN, held writes), then the
 * statement `name` (NULL: none), in one pipeline, and returns the
 * statement's result.  NULL with *rc set on failure: the first error of
 * any of them.  With nothing held back, the statement alone (its result
 * returned whatever its status: the caller reads it).  The deadline is
 * the statement's class (PG_QUICK, PG_SLOW); NULL with SQL_IOERR when it
 * passed or the connection was lost.
 */
PGresult *rls__pg_run(rls_db *db, const char *name, int n, const char *const *vals,
                      const int *lens, const int *fmts, int slow, int *rc)
{
    struct pg_conn *pc = db->pg;
    PGconn *c = pc->c;
    static const int binary[PG_MAX_PARAMS] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    *rc = SQL_OK;
    if (!pc->begin_sql && pc->nheld == 0) {
        PGresult *res = NULL;
        if (name) {
            int sent = !pc->lost && PQsendQueryPrepared(c, name, n, vals, lens, fmts, 0);
            *rc = rls__pg_collect(db, sent, rls__pg_deadline(db, slow), &res);
        }
        return res;
    }
    if (pc->lost) {
        rls__pg_drop_held(pc);
        pc->begin_sql = NULL;
        *rc = rls__pg_fail(db, NULL, NULL);
        return NULL;
    }
    const char *begin = pc->begin_sql;
    int queries = (begin != NULL) + pc->nheld + (name != NULL);
    pc->begin_sql = NULL;
    if (!PQenterPipelineMode(c)) {
        rls__pg_drop_held(pc);
        *rc = rls__pg_fail(db, NULL, NULL);
        return NULL;
    }
    int sent = !begin || PQsendQueryParams(c, begin, 0, NULL, NULL, NULL, NULL, 0);
    for (int i = 0; sent && i < pc->nheld; i++) {
        const struct pg_held *h = pc->held[i];
        sent = PQsendQueryPrepared(c, h->name, h->n, h->vals, h->lens, binary, 0);
    }
    if (sent && name)
        sent = PQsendQueryPrepared(c, name, n, vals, lens, fmts, 0);
    sent = sent && PQpipelineSync(c);

    /* each query's results, then a NULL; after the last, the sync's result;
     * more NULLs only from a broken connection.  Query q is BEGIN (when
     * first), a held write, or the statement. */
    PGresult *res = NULL, *fail = NULL;
    int first_held = begin != NULL, io = SQL_OK;
    int64_t deadline = rls__pg_deadline(db, slow);
    for (int done = 0; sent;) {
        PGresult *r;
        if ((io = rls__pg_next(db, deadline, &r)) != SQL_OK)
            break;
        if (!r) {
            if (++done > queries)
                break;
            continue;
        }
        ExecStatusType s = PQresultStatus(r);
        if (s == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        if (s == PGRES_FATAL_ERROR && !fail)
            fail = r;                      /* the first error */
        else if (name && done == queries - 1 && !res &&
                 (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK))
            res = r;                       /* the statement's own */
        else {
            int h = done - first_held;     /* a held write's: count its rows */
            if (s == PGRES_COMMAND_OK && h >= 0 && h < pc->nheld && pc->held[h]->rows)
                *pc->held[h]->rows += atoll(PQcmdTuples(r));
            PQclear(r);                    /* BEGIN's, a write's, or ABORTED */
        }
    }
    rls__pg_drop_held(pc);
    if (!pc->lost && !PQexitPipelineMode(c))
        pc->lost = 1;                      /* results left unread: start afresh */
    if (sent && io == SQL_OK && !fail && (res || !name))
        return res;
    PQclear(res);
    *rc = io != SQL_OK ? io : rls__pg_fail(db, fail, NULL);
    PQclear(fail);
    return NULL;
}

int rls__pg_flush(rls_db *db)
{
    int rc;
    PQclear(rls__pg_run(db, NULL, 0, NULL, NULL, NULL, PG_QUICK, &rc));
    return rc;
}
