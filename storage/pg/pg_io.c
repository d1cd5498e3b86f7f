/*
 * pg_io.c - every exchange with PostgreSQL under a deadline.
 *
 * libpq's blocking calls (PQconnectdb, PQexec, PQprepare, PQexecPrepared,
 * PQgetResult while a result is awaited) wait as long as the server takes
 * to answer: a server that stopped answering (stopped processes, a network
 * partition, a proxy that stalls) held a check for as long as the stall
 * lasted and a new rls_open forever, and the failure policy never applied.
 * Here the connection is non-blocking (PQsetnonblocking): a round trip
 * sends (PQsend*, then PQflush until everything is out, reading meanwhile
 * so that neither side waits on the other), then reads (PQconsumeInput
 * while PQisBusy), with poll() on PQsocket() until the deadline;
 * PQgetResult is called only when it cannot block.  Connecting is
 * PQconnectStartParams and PQconnectPoll under the same kind of deadline,
 * with TCP keepalives unless the URI sets its own.
 *
 * A deadline that passes marks the connection lost and the failure not
 * retryable: the call fails at once with RLS_EIO and a message naming the
 * deadline (a check answers by its failure policy, reason degraded), and
 * the next transaction connects again.  The socket is shut down at once,
 * so that a server that is only slow sees the client gone and, from
 * PostgreSQL 14 on (client_connection_check_interval, set at connect by
 * pg_open.c), cancels what it was running within a second; one that was
 * stopped sees it when it resumes.
 *
 * Two deadlines, both per round trip (docs/DESIGN-NOTES.md, "Deadlines
 * on PostgreSQL"):
 *   quick  busy_timeout_ms + PG_GRACE_MS: connecting (never under
 *          PG_CONNECT_MIN_MS, as libpq's connect_timeout: it is several
 *          round trips), the session's setup, and every statement of the
 *          check table (stmt.c): the round trips of checks, peeks,
 *          reservations, refunds, commits and cancels, the transactions'
 *          BEGIN and COMMIT, the rules' reload, GC steps.  The server's lock_timeout is
 *          busy_timeout_ms, so a lock wait ends with its own error
 *          (RLS_EBUSY) before this passes; the grace is the server's
 *          work and the network.
 *   slow   PG_SLOW_FACTOR times quick: every other statement (listings,
 *          usage, key counts, copies, the doctor's, schema migrations),
 *          which may scan whole tables and have no request waiting on
 *          them.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "pg.h"

int64_t rls__pg_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rls__pg_budget_ms(const rls_db *db, int slow)
{
    int64_t quick = (int64_t)(db->ident.opt.busy_timeout_ms > 0 ? db->ident.opt.busy_timeout_ms : 0) +
                    PG_GRACE_MS;
    return slow ? quick * PG_SLOW_FACTOR : quick;
}

int64_t rls__pg_deadline(rls_db *db, int slow)
{
    db->pg->started_ms = rls__pg_mono_ms();
    return db->pg->started_ms + rls__pg_budget_ms(db, slow);
}

/* The deadline passed: the connection cannot be trusted to be anywhere
 * in the protocol, so it is lost, and the call fails now. */
static int timed_out(rls_db *db, int64_t deadline)
{
    struct pg_conn *pc = db->pg;
    int fd = pc->c ? PQsocket(pc->c) : -1;
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);   /* the server sees the client gone */
    pc->lost = 1;
    pc->timed_out = 1;
    pc->retryable = 0;             /* the policy answers, now */
    snprintf(pc->errmsg, sizeof pc->errmsg, "PostgreSQL did not answer within %lld ms",
             (long long)(deadline - pc->started_ms));
    return SQL_IOERR;
}

/* The connection failed under libpq (closed, reset, protocol error). */
static int broken(rls_db *db)
{
    struct pg_conn *pc = db->pg;
    const char *m = pc->c ? PQerrorMessage(pc->c) : NULL;
    pc->lost = 1;
    pc->retryable = 1;
    snprintf(pc->errmsg, sizeof pc->errmsg, "%s",
             m && *m ? m : "the connection to PostgreSQL was lost");
    char *nl = strchr(pc->errmsg, '\n');
    if (nl)
        *nl = '\0';
    return SQL_IOERR;
}

int rls__pg_poll(int fd, int events, int64_t deadline)
{
    if (fd < 0)
        return 1;   /* no socket: the next libpq call says why */
    for (;;) {
        int64_t left = deadline - rls__pg_mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, (short)events, 0};
        int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0)
            return 1;   /* ready, or an error the next libpq call reports */
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int rls__pg_next(rls_db *db, int64_t deadline, PGresult **res)
{
    PGconn *c = db->pg->c;
    *res = NULL;
    if (db->pg->lost)
        return SQL_IOERR;
    for (;;) {
        int pending = PQflush(c);
        if (pending < 0)
            return broken(db);
        if (!pending && !PQisBusy(c))
            break;
        /* readable too while sending: the server may wait on us */
        int w = rls__pg_poll(PQsocket(c), POLLIN | (pending ? POLLOUT : 0), deadline);
        if (w == 0)
            return timed_out(db, deadline);
        if (w < 0 || !PQconsumeInput(c))
            return broken(db);
    }
    *res = PQgetResult(c);
    return SQL_OK;
}

int rls__pg_collect(rls_db *db, int sent, int64_t deadline, PGresult **out)
{
    PGresult *keep = NULL, *r;
    int rc;
    *out = NULL;
    if (!sent)
        return db->pg->lost ? SQL_IOERR : broken(db);
    while ((rc = rls__pg_next(db, deadline, &r)) == SQL_OK && r) {
        if (keep && !rls__pg_ok(keep)) {
            PQclear(r);   /* the first failure stays */
            continue;
        }
        PQclear(keep);
        keep = r;
    }
    if (rc != SQL_OK) {
        PQclear(keep);
        return rc;
    }
    *out = keep;
    return SQL_OK;
}

/* Sets *out to the value of the effective connection option `name` of c
 * (its own, the URI's or the environment's), or -1. */
static long conn_option(PGconn *c, const char *name)
{
    long v = -1;
    PQconninfoOption *opts = PQconninfo(c);
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (!strcmp(o->keyword, name) && o->val && *o->val)
            v = strtol(o->val, NULL, 10);
    PQconninfoFree(opts);
    return v;
}

int rls__pg_dial_until(rls_db *db, int64_t deadline, PGconn **out)
{
    struct pg_conn *pc = db->pg;
    /* our defaults first: the URI (dbname, expanded) comes later and
     * overrides them (PQconnectdbParams) */
    static const char *const kw[] = {"keepalives", "keepalives_idle", "keepalives_interval",
                                     "keepalives_count", "dbname", NULL};
    const char *val[] = {"1", PG_KEEPALIVE_IDLE, PG_KEEPALIVE_INTERVAL, PG_KEEPALIVE_COUNT,
                         pc->conninfo, NULL};
    *out = NULL;
    pc->started_ms = rls__pg_mono_ms();
    /* connecting is several round trips (TCP, TLS, authentication, the
     * server starting a process): as libpq's connect_timeout, never under
     * PG_CONNECT_MIN_MS */
    if (deadline < pc->started_ms + PG_CONNECT_MIN_MS)
        deadline = pc->started_ms + PG_CONNECT_MIN_MS;
    PGconn *c = PQconnectStartParams(kw, val, 1);
    if (!c) {
        snprintf(pc->errmsg, sizeof pc->errmsg, "out of memory");
        return SQL_NOMEM;
    }
    /* libpq's own connect_timeout (URI or PGCONNECT_TIMEOUT), when shorter;
     * as PQconnectdb, never under 2 s */
    long ct = conn_option(c, "connect_timeout");
    if (ct > 0 && pc->started_ms + (ct < 2 ? 2 : ct) * 1000 < deadline)
        deadline = pc->started_ms + (ct < 2 ? 2 : ct) * 1000;
    int64_t wait = deadline - pc->started_ms;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (PQstatus(c) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
           st != PGRES_POLLING_FAILED) {
        int w = rls__pg_poll(PQsocket(c), st == PGRES_POLLING_WRITING ? POLLOUT : POLLIN,
                             deadline);
        if (w == 0) {
            snprintf(pc->errmsg, sizeof pc->errmsg, "PostgreSQL did not answer within %lld ms "
                     "while connecting", (long long)wait);
            PQfinish(c);
            return SQL_CANTOPEN;
        }
        st = PQconnectPoll(c);
    }
    if (PQstatus(c) != CONNECTION_OK || PQsetnonblocking(c, 1) != 0) {
        snprintf(pc->errmsg, sizeof pc->errmsg, "%s", PQerrorMessage(c));
        char *nl = strchr(pc->errmsg, '\n');
        if (nl)
            *nl = '\0';
        PQfinish(c);
        return SQL_CANTOPEN;
    }
    *out = c;
    return SQL_OK;
}
