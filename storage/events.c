/*
 * events.c - penalty events (issue #20): every penalty block imposed, its
 * escalation and its end, recorded in rls_events (schema/005) and told to
 * the application's log_fn, one line per event like fail2ban's log; the
 * listing and pruning of events, the pruning of the audit log, and the
 * handle's audit reason (rls_admin_reason).
 *
 * Why in the database and not only in a log: every process of the host
 * (and every host on PostgreSQL) imposes penalties, and the operator asks
 * one place, `rlctl events` or rltop's Blocks view, what happened.
 *
 * A penalty's event is written in the check's own transaction, so it
 * exists exactly when the block does.  A block's end writes nothing at the
 * time (no transaction runs then): GC's sweep (gc.c, at most once a
 * minute) and the key's next penalty record it, timed at the block's end.
 * log_fn lines are queued while the transaction is open and handed to
 * log_fn after its commit, so a transaction run again never logs twice
 * and a rolled-back one never logs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "check.h"
#include "events.h"

#define LOG_WARNING_ 4   /* syslog's LOG_WARNING and LOG_NOTICE: the library */
#define LOG_NOTICE_ 5    /* includes no syslog.h, the values are POSIX's */

static struct rls_events *ev_of(rls_db *db)
{
    if (!db->ev)
        db->ev = calloc(1, sizeof *db->ev);
    return db->ev;
}

/* Queues one line for log_fn (lost when memory is short: the event row
 * is what counts). */
static void queue_line(rls_db *db, int level, const char *line)
{
    struct rls_events *ev;
    if (!db->ident.opt.log_fn || !(ev = ev_of(db)))
        return;
    if (ev->nlines == ev->caplines) {
        int cap = ev->caplines ? ev->caplines * 2 : 4;
        char **l = realloc(ev->lines, sizeof *l * (size_t)cap);
        if (!l)
            return;
        ev->lines = l;
        int *lv = realloc(ev->levels, sizeof *lv * (size_t)cap);
        if (!lv)
            return;
        ev->levels = lv;
        ev->caplines = cap;
    }
    char *copy = strdup(line);
    if (!copy)
        return;
    ev->levels[ev->nlines] = level;
    ev->lines[ev->nlines++] = copy;
}

/* "rlstore: BAN key=203.0.113.7 action=login until=... level=1 rule=per_min" */
static void queue_event_line(rls_db *db, const char *event, const char *action,
                             const char *key, size_t keylen, const char *rule, int64_t level,
                             int64_t until)
{
    char k[1100], kraw[RLS_KEY_MAX_LIMIT + 64], t[40], line[1400];
    if (!db->ident.opt.log_fn)
        return;
    size_t n = keylen < sizeof kraw - 1 ? keylen : sizeof kraw - 1;
    memcpy(kraw, key, n);
    kraw[n] = '\0';
    /* one line whatever the key holds: spaces and controls escaped */
    if (rls_key_escape(kraw, k, sizeof k) < 0)
        snprintf(k, sizeof k, "?");
    for (char *p = k; *p; p++)
        if (*p == ' ')
            *p = '_';
    if (until == 0)
        snprintf(t, sizeof t, "forever");
    else if (rls_time_format(until, t, sizeof t) < 0)
        snprintf(t, sizeof t, "%lld", (long long)until);
    if (strcmp(event, "expire") == 0)
        snprintf(line, sizeof line, "rlstore: UNBAN key=%s action=%s ended=%s level=%lld rule=%s",
                 k, action, t, (long long)level, rule);
    else
        snprintf(line, sizeof line, "rlstore: BAN key=%s action=%s until=%s level=%lld rule=%s%s",
                 k, action, t, (long long)level, rule,
                 strcmp(event, "escalate") == 0 ? " escalated" : "");
    queue_line(db, strcmp(event, "expire") == 0 ? LOG_NOTICE_ : LOG_WARNING_, line);
}

static int event_add(rls_db *db, int64_t ts, const char *event, const char *action,
                     const void *key, size_t keylen, const char *rule, int64_t level,
                     int64_t until)
{
    rls_stmt *st = rls__astmt(db, ASTMT_EV_ADD);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, ts);
    sql_bind_text(st, 2, event, -1, SQL_STATIC);
    sql_bind_text(st, 3, action, -1, SQL_STATIC);
    sql_bind_blob(st, 4, key, (int)keylen, SQL_STATIC);
    sql_bind_text(st, 5, rule ? rule : "", -1, SQL_STATIC);
    sql_bind_int64(st, 6, level);
    sql_bind_int64(st, 7, until);
    int rc = sql_step(st);
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot write event");
    queue_event_line(db, event, action, key, keylen, rule ? rule : "", level, until);
    return RLS_OK;
}

/* One ended block read by EV_ENDED. */
struct ended {
    char action[RLS_NAME_MAX + 1], rule[RLS_NAME_MAX + 1];
    unsigned char key[RLS_KEY_MAX_LIMIT + 64];
    size_t keylen;
    int64_t level, until;
};

/* Records the 'expire' events of penalty blocks that ended in
 * (after, now], of one key when key is not NULL, of one action when action
 * is not NULL.  At most 256 per call (*found: how many; the sweep after
 * the next minute takes the rest). */
static int record_ended(rls_db *db, int64_t now, int64_t after, const void *key,
                        size_t keylen, const char *action, int *found)
{
    rls_stmt *st = rls__astmt(db, ASTMT_EV_ENDED);
    struct ended *e = NULL;
    int n = 0, cap = 0, rc, src;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, now);
    sql_bind_int64(st, 2, after);
    if (key)
        sql_bind_blob(st, 3, key, (int)keylen, SQL_STATIC);
    else
        sql_bind_null(st, 3);
    if (action)
        sql_bind_text(st, 4, action, -1, SQL_STATIC);
    else
        sql_bind_null(st, 4);
    /* read them all first: inserting while the SELECT steps would read
     * the table it writes */
    while ((src = sql_step(st)) == SQL_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            struct ended *m = realloc(e, sizeof *e * (size_t)cap);
            if (!m) {
                sql_reset(st);
                free(e);
                return rls__error(db, RLS_ENOMEM, "out of memory");
            }
            e = m;
        }
        const char *a = (const char *)sql_column_text(st, 0);
        const char *r = (const char *)sql_column_text(st, 2);
        int kl = sql_column_bytes(st, 1);
        const void *k = sql_column_blob(st, 1);
        snprintf(e[n].action, sizeof e[n].action, "%s", a ? a : "");
        snprintf(e[n].rule, sizeof e[n].rule, "%s", r ? r : "");
        e[n].keylen = kl > 0 && (size_t)kl <= sizeof e[n].key ? (size_t)kl : 0;
        if (e[n].keylen)
            memcpy(e[n].key, k, e[n].keylen);
        e[n].level = sql_column_int64(st, 3);
        e[n].until = sql_column_int64(st, 4);
        n++;
    }
    sql_reset(st);
    sql_clear_bindings(st);
    rc = src == SQL_DONE ? RLS_OK : rls__sql_error(db, src, "cannot read ended blocks");
    for (int i = 0; rc == RLS_OK && i < n; i++)
        rc = event_add(db, e[i].until, "expire", e[i].action, e[i].key, e[i].keylen, e[i].rule,
                       e[i].level, e[i].until);
    free(e);
    if (found)
        *found = n;
    return rc;
}

int rls__events_ended_key(rls_db *db, int64_t now, const void *key, size_t keylen,
                          const char *action)
{
    return record_ended(db, now, now - RLS_EVENTS_KEEP_MS, key, keylen, action, NULL);
}

int rls__events_ended_all(rls_db *db, int64_t now, const char *action)
{
    int rc, n, rounds = 0;
    /* every one, 256 at a time: the rows go in this transaction (bounded,
     * should a row ever be read back unlike it was written) */
    do
        rc = record_ended(db, now, now - RLS_EVENTS_KEEP_MS, NULL, 0, action, &n);
    while (rc == RLS_OK && n == 256 && ++rounds < 4096);
    return rc;
}

int rls__event_penalty(rls_db *db, const struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    const char *action = ctx->act->name;
    int64_t now = call->dout.now;
    int rc = RLS_OK;
    /* the block this one replaces may have ended unrecorded */
    if (ctx->pen_found && ctx->pen_kind == BLOCK_PENALTY)
        rc = rls__events_ended_key(db, now, ctx->key, ctx->keylen, action);
    if (rc == RLS_OK)
        rc = event_add(db, now, call->pen.level > 0 ? "escalate" : "block", action, ctx->key,
                       ctx->keylen, ctx->rl[call->dout.penalty].def->name, call->pen.level,
                       call->pen.until_ms);
    if (rc == RLS_OK)
        rc = rls__counter_add(db, action, "penalties", "", 1);
    return rc;
}

static int exec_before(rls_db *db, int id, int64_t before, int64_t *deleted)
{
    rls_stmt *st = rls__astmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, before);
    int rc = sql_step(st);
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot prune");
    if (deleted)
        *deleted = sql_changes(db);
    return RLS_OK;
}

int rls__events_sweep(rls_db *db, int64_t now)
{
    int rc = record_ended(db, now, now - RLS_EVENTS_KEEP_MS, NULL, 0, NULL, NULL);
    if (rc == RLS_OK)
        rc = exec_before(db, ASTMT_EV_PRUNE, now - RLS_EVENTS_KEEP_MS, NULL);
    return rc;
}

static void drop_lines(struct rls_events *ev)
{
    for (int i = 0; i < ev->nlines; i++)
        free(ev->lines[i]);
    ev->nlines = 0;
}

void rls__events_committed(rls_db *db)
{
    struct rls_events *ev = db->ev;
    if (!ev || ev->nlines == 0)
        return;
    for (int i = 0; i < ev->nlines; i++)
        if (db->ident.opt.log_fn)
            db->ident.opt.log_fn(db->ident.opt.log_ctx, ev->levels[i], ev->lines[i]);
    drop_lines(ev);
}

void rls__events_rolled_back(rls_db *db)
{
    if (db->ev)
        drop_lines(db->ev);
}

void rls__events_forget(rls_db *db)
{
    if (!db->ev)
        return;
    drop_lines(db->ev);
    db->ev->nacts = 0;   /* the parent writes its own counts */
    db->ev->acts_gen++;
}

void rls__events_free(rls_db *db)
{
    if (!db->ev)
        return;
    drop_lines(db->ev);
    free(db->ev->lines);
    free(db->ev->levels);
    free(db->ev->acts);
    free(db->ev->reason);
    free(db->ev);
    db->ev = NULL;
}

/* ---- progress of long calls ------------------------------------------------ */

void rls__progress(rls_db *db, int64_t rows)
{
    if (db && db->ev && db->ev->progress)
        db->ev->progress(db->ev->progress_ctx, rows);
}

int rls_set_progress(rls_db *db, void (*fn)(void *ctx, int64_t rows), void *ctx)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    struct rls_events *ev;
    if (!db)
        return RLS_EINVAL;
    if (!fn && !db->ev)
        return RLS_OK;
    if (!(ev = ev_of(db)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    ev->progress = fn;
    ev->progress_ctx = ctx;
    return RLS_OK;
}

/* ---- the audit reason -------------------------------------------------- */

const char *rls__admin_reason(const rls_db *db)
{
    return db->ev && db->ev->reason ? db->ev->reason : NULL;
}

#define REASON_MAX 1024

int rls_admin_reason(rls_db *db, const char *reason)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int rc = rls__db_usable(db);
    struct rls_events *ev;
    if (rc)
        return rc;
    if (reason && strlen(reason) > REASON_MAX)
        return rls__error(db, RLS_EINVAL, "reason is longer than %d bytes", REASON_MAX);
    if (!(ev = ev_of(db)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    free(ev->reason);
    ev->reason = NULL;
    if (reason && *reason && !(ev->reason = strdup(reason)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    return RLS_OK;
}
