/*
 * errors.c - the error message of a handle, or of the last failed rls_open
 * of this thread (rls_errmsg(NULL)), the mapping of the backends' codes
 * (sql.h) to rlstore codes, and the clock.  A leaf: it calls nothing of
 * storage but the handle's backend's own error operation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include "db.h"

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
    char own[sizeof open_errmsg];
    /* a thread-safe handle whose lock this thread does not hold (a call
     * refused before it took it): the detail is this thread's alone */
    int apart = db && rls__group_routes(db);
    char *buf = apart ? own : db ? db->errmsg : open_errmsg;
    size_t size = apart ? sizeof own : db ? sizeof db->errmsg : sizeof open_errmsg;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (apart)
        rls__group_errmsg_keep(db, own);
    return code;
}

/* An sql.h code (SQLite's numbering, any backend) -> rlstore code. */
int rls__sql_code(int src)
{
    switch (src & 0xff) {
    case SQL_OK: return RLS_OK;
    case SQL_NOMEM: return RLS_ENOMEM;
    case SQL_BUSY:
    case SQL_LOCKED: return RLS_EBUSY;
    case SQL_READONLY: return RLS_EREADONLY;
    case SQL_IOERR: return RLS_EIO;
    case SQL_CORRUPT: return RLS_ECORRUPT;
    case SQL_FULL: return RLS_EFULL;
    case SQL_CANTOPEN: return RLS_ECANTOPEN;
    case SQL_NOTADB: return RLS_ENOTDB;
    case SQL_PERM:
    case SQL_AUTH: return RLS_EREADONLY;
    default: return RLS_ESTORAGE;
    }
}


int rls__sql_error(rls_db *db, int src, const char *what)
{
    if (db && db->be)
        return db->be->error(db, src, what);
    return rls__error(db, rls__sql_code(src), "%s: error %d", what, src);
}

const char *rls_errmsg(rls_db *db)
{
    if (db && db->group)
        return rls__group_errmsg(db);   /* per thread (group.c) */
    return db ? db->errmsg : open_errmsg;
}

/* The real clock for a call without _at: -1 when it cannot be read, which
 * the call then refuses as a time out of range (ETIME). */
int64_t rls__now_or_invalid(void)
{
    int64_t now;
    return rls__now(&now) == RLS_OK ? now : -1;
}
