/*
 * gc.c - keeping the file bounded without cron, and the stats accumulator.
 *
 * GC is incremental: each step examines the next GC_SCAN rows of rls_state
 * after a cursor kept in rls_meta (wrapping at the end) and deletes those
 * whose exp_ms has passed; the latest deleted exp_ms of each limit raises
 * that limit's clock floor (rls_horizons), which keeps clock safety for keys
 * whose state is gone, and the latest of all raises gc_horizon (the maximum
 * of the floors: while it is not past a check's time, no floor matters).  A
 * step also refunds expired reservations and, at most once a minute,
 * removes expired blocks, assignments, overrides and stats older than an
 * hour (in a split deployment, those of the rules file only in handles that
 * may write it).
 *
 * Stats are counted in process per action and second and written at most
 * once a second inside a check's own transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "db.h"
#include "keycount.h"
#include "events.h"

#define STATS_KEEP_MS (3600 * 1000LL)
#define KEY_STATS_KEEP_MS (86400 * 1000LL)  /* keys under pressure, unseen for a day */
#define MISC_EVERY_MS (60 * 1000LL)
/* A block, override or assignment is swept an hour after it ended, not at
 * once: a clock that steps back by less than that finds it as it was at
 * that time whether or not a sweep ran meanwhile, so no answer depends on
 * when some handle happened to sweep (test_memlane's long runs). */
#define ENDED_KEEP_MS (3600 * 1000LL)
#define RESERVATIONS_PER_STEP 16

static stat_acc *stat_of(rls_db *db, const char *action, int64_t sec)
{
    for (int i = 0; i < db->stats.nstats; i++)
        if (db->stats.acc[i].sec == sec && strcmp(db->stats.acc[i].action, action) == 0)
            return &db->stats.acc[i];
    return NULL;
}

int rls__stats_count(rls_db *db, const char *action, int64_t now, int allowed)
{
    int64_t sec = now / 1000;
    stat_acc *s = stat_of(db, action, sec);
    if (!s) {
        if (db->stats.nstats == db->stats.capstats) {
            int cap = db->stats.capstats ? db->stats.capstats * 2 : 8;
            stat_acc *n = realloc(db->stats.acc, sizeof *n * (size_t)cap);
            if (!n)
                return 0;  /* stats may be lost, counters never are */
            db->stats.acc = n;
            db->stats.capstats = cap;
        }
        s = &db->stats.acc[db->stats.nstats++];
        snprintf(s->action, sizeof s->action, "%s", action);
        s->sec = sec;
        s->allowed = s->denied = 0;
    }
    if (allowed)
        s->allowed++;
    else
        s->denied++;
    return 1;
}

int rls__stats_count_look(rls_db *db, const char *action, int64_t now, int allowed,
                          rls__hint *hint)
{
    int ok = rls__stats_count(db, action, now, allowed);
    stat_acc *s = ok ? stat_of(db, action, now / 1000) : NULL;
    hint->i = s ? (int)(s - db->stats.acc) : -1;
    hint->gen = db->stats.gen;
    return ok;
}

void rls__stats_uncount(rls_db *db, const char *action, int64_t now, int allowed)
{
    stat_acc *s = stat_of(db, action, now / 1000);
    if (s && allowed && s->allowed > 0)
        s->allowed--;
    else if (s && !allowed && s->denied > 0)
        s->denied--;
}

int rls__stats_flush(rls_db *db, int64_t now, int force)
{
    if ((db->stats.nstats == 0 && !rls__keystat_pending(db) && !rls__metrics_pending(db)) ||
        (!force && now - db->stats.stats_flushed_ms < 1000 && now >= db->stats.stats_flushed_ms))
        return RLS_OK;
    int krc = rls__keystat_flush(db);
    if (krc || (krc = rls__metrics_flush(db)))   /* metrics.c */
        return krc;
    rls_stmt *add = rls__stmt(db, STMT_STATS_ADD);
    rls_stmt *tot = rls__stmt(db, STMT_STATS_TOTAL_ADD);
    if (!add || !tot)
        return rls__stmt_failed(db);
    for (int i = 0; i < db->stats.nstats; i++) {
        const stat_acc *s = &db->stats.acc[i];
        sql_bind_text(add, 1, s->action, -1, SQL_STATIC);
        sql_bind_int64(add, 2, s->sec);
        sql_bind_int64(add, 3, s->allowed);
        sql_bind_int64(add, 4, s->denied);
        int rc = sql_step(add);
        sql_reset(add);
        if (rc != SQL_DONE)
            return rls__sql_error(db, rc, "cannot write stats");
        sql_bind_text(tot, 1, s->action, -1, SQL_STATIC);
        sql_bind_int64(tot, 2, s->allowed);
        sql_bind_int64(tot, 3, s->denied);
        rc = sql_step(tot);
        sql_reset(tot);
        if (rc != SQL_DONE)
            return rls__sql_error(db, rc, "cannot write stats");
    }
    /* Cleared only at commit time in spirit: a rolled-back transaction loses
     * these stats, which the contract allows (stats may lose a second). */
    db->stats.nstats = 0;
    db->stats.gen++;
    db->stats.stats_flushed_ms = now;
    return RLS_OK;
}

static int exec_time(rls_db *db, int id, int64_t now)
{
    rls_stmt *st = rls__stmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, now);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "garbage collection failed");
}

static int gc_reservations(rls_db *db, int64_t now)
{
    rls_stmt *st = rls__stmt(db, STMT_RES_EXPIRED);
    int64_t ids[RESERVATIONS_PER_STEP];
    int n = 0, rc;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, now);
    sql_bind_int64(st, 2, RESERVATIONS_PER_STEP);
    while ((rc = sql_step(st)) == SQL_ROW && n < RESERVATIONS_PER_STEP)
        ids[n++] = sql_column_int64(st, 0);
    sql_reset(st);
    if (rc != SQL_DONE && rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot read reservations");
    for (int i = 0; i < n; i++) {
        int found;
        if ((rc = rls__refund_reservation(db, ids[i], now, &found)))
            return rc;
    }
    return RLS_OK;
}

/* One sweep of rls_state: where it stands (the cursor: the last (lid, key)
 * seen) and the expired rows it found. */
struct victim {
    int64_t lid;
    unsigned char *key;
    int len;
    int64_t exp;
};
typedef struct gc_sweep {
    unsigned char *key;            /* the cursor's key (malloc'd) */
    size_t keycap, keylen;
    int64_t lid, horizon, seen;
    struct victim *v;              /* max_rows of them */
    int nv;
} gc_sweep;

/* The cursor as the last step left it. */
static int sweep_start(rls_db *db, rls_stmt *cur, gc_sweep *w)
{
    int rc = sql_step(cur);
    if (rc == SQL_ROW) {
        w->lid = sql_column_int64(cur, 0);
        w->keylen = (size_t)sql_column_bytes(cur, 1);
        w->key = malloc(w->keylen + 1);
        if (w->key && w->keylen)
            memcpy(w->key, sql_column_blob(cur, 1), w->keylen);
        w->keycap = w->keylen + 1;
    }
    sql_reset(cur);
    if (rc != SQL_ROW)
        return rls__sql_error(db, rc, "cannot read GC cursor");
    return w->key ? RLS_OK : rls__error(db, RLS_ENOMEM, "out of memory");
}

/* Moves the cursor to a scanned row, and notes the row if it expired:
 * SQL_OK or SQL_NOMEM. */
static int sweep_row(gc_sweep *w, int64_t l, const void *k, int len, int64_t exp, int64_t now)
{
    w->seen++;
    w->lid = l;
    if ((size_t)len + 1 > w->keycap) {
        unsigned char *nk = realloc(w->key, (size_t)len + 1);
        if (!nk)
            return SQL_NOMEM;
        w->key = nk;
        w->keycap = (size_t)len + 1;
    }
    if (len)
        memcpy(w->key, k, (size_t)len);
    w->keylen = (size_t)len;
    if (exp >= now)
        return SQL_OK;
    struct victim *v = &w->v[w->nv];
    if (!(v->key = malloc((size_t)len + 1)))
        return SQL_NOMEM;
    if (len)
        memcpy(v->key, k, (size_t)len);
    v->len = len;
    v->lid = l;
    v->exp = exp;
    w->nv++;
    return SQL_OK;
}

/* Collects the expired rows of up to max_rows from the cursor first:
 * deleting while scanning the same b-tree is allowed in SQLite but harder
 * to reason about. */
static int sweep_scan(rls_db *db, rls_stmt *scan, gc_sweep *w, int64_t now, int max_rows)
{
    int rc;
    sql_bind_int64(scan, 1, w->lid);
    sql_bind_blob(scan, 2, w->key, (int)w->keylen, SQL_TRANSIENT);
    sql_bind_int64(scan, 3, max_rows);
    if (!(w->v = calloc((size_t)max_rows, sizeof *w->v))) {
        sql_reset(scan);
        return rls__error(db, RLS_ENOMEM, "out of memory");
    }
    while ((rc = sql_step(scan)) == SQL_ROW) {
        rc = sweep_row(w, sql_column_int64(scan, 0), sql_column_blob(scan, 1),
                       sql_column_bytes(scan, 1), sql_column_int64(scan, 2), now);
        if (rc != SQL_OK)
            break;
    }
    sql_reset(scan);
    if (rc == SQL_DONE)
        return RLS_OK;
    return rc == SQL_NOMEM ? rls__error(db, RLS_ENOMEM, "out of memory")
                           : rls__sql_error(db, rc, "cannot scan states");
}

/* Deletes the expired rows, uncounting keys left without counters and
 * raising each limit's clock floor to what it deleted. */
static int sweep_delete(rls_db *db, rls_stmt *del, rls_stmt *raise, gc_sweep *w)
{
    int rc;
    for (int i = 0; i < w->nv; i++) {
        const struct victim *v = &w->v[i];
        sql_bind_int64(del, 1, v->lid);
        sql_bind_blob(del, 2, v->key, v->len, SQL_STATIC);
        int src = sql_step(del);
        sql_reset(del);
        if (src != SQL_DONE)
            return rls__sql_error(db, src, "cannot delete state");
        if ((rc = rls__keycount_deleted(db, NULL, v->lid, v->key, (size_t)v->len)))
            return rc;
        /* the floor of this limit only: another action's clock stays */
        sql_bind_int64(raise, 1, v->lid);
        sql_bind_int64(raise, 2, v->exp);
        src = sql_step(raise);
        sql_reset(raise);
        if (src != SQL_DONE)
            return rls__sql_error(db, src, "cannot raise clock floor");
        if (v->exp > w->horizon)
            w->horizon = v->exp;
    }
    return RLS_OK;
}

/* Saves the cursor (back to the start after the last row) and the GC
 * horizon. */
static int sweep_save(rls_db *db, rls_stmt *set, gc_sweep *w, int max_rows, int64_t *deleted)
{
    if (w->seen < max_rows) {  /* reached the end: wrap around */
        w->lid = 0;
        w->keylen = 0;
    }
    sql_bind_int64(set, 1, w->lid);
    sql_bind_blob(set, 2, w->key, (int)w->keylen, SQL_STATIC);
    sql_bind_int64(set, 3, w->horizon);
    int src = sql_step(set);
    sql_reset(set);
    if (src != SQL_DONE)
        return rls__sql_error(db, src, "cannot save GC cursor");
    if (w->horizon > rls__cache_horizon(db))
        rls__cache_horizon_set(db, w->horizon);
    if (deleted)
        *deleted += w->nv;
    return RLS_OK;
}

/* One bounded sweep of rls_state from the cursor. */
static int gc_states(rls_db *db, int64_t now, int max_rows, int64_t *deleted)
{
    rls_stmt *cur = rls__stmt(db, STMT_GC_CURSOR);
    rls_stmt *scan = rls__stmt(db, STMT_GC_SCAN);
    rls_stmt *del = rls__stmt(db, STMT_STATE_DEL);
    rls_stmt *set = rls__stmt(db, STMT_GC_META_SET);
    rls_stmt *raise = rls__stmt(db, STMT_HORIZON_RAISE);
    gc_sweep w = {0};
    int rc;

    if (!cur || !scan || !del || !set || !raise)
        return rls__stmt_failed(db);
    if ((rc = sweep_start(db, cur, &w)) == RLS_OK &&
        (rc = sweep_scan(db, scan, &w, now, max_rows)) == RLS_OK &&
        (rc = sweep_delete(db, del, raise, &w)) == RLS_OK)
        rc = sweep_save(db, set, &w, max_rows, deleted);
    for (int i = 0; i < w.nv; i++)
        free(w.v[i].key);
    free(w.v);
    free(w.key);
    return rc;
}

int rls__gc_step(rls_db *db, int64_t now, int max_rows, int64_t *deleted)
{
    int rc;
    if (deleted)
        *deleted = 0;
    if ((rc = gc_states(db, now, max_rows, deleted)) || (rc = gc_reservations(db, now)))
        return rc;
    if (now - db->stats.gc_misc_ms >= MISC_EVERY_MS || now < db->stats.gc_misc_ms) {
        /* split: rows of the rules file only where the handle may write
         * it (admin handles, rlctl gc); expired ones decide nothing */
        int rules = db->be->rules_writable(db);
        int64_t ended = now - ENDED_KEEP_MS;
        if ((rc = rls__events_sweep(db, now)) ||   /* events.c: before blocks go */
            (rc = exec_time(db, STMT_GC_BLOCKS, ended)) ||
            (db->be->rules_apart(db) && rules && (rc = exec_time(db, STMT_GC_RULES_BLOCKS, ended))) ||
            (rules && (rc = exec_time(db, STMT_GC_OVERRIDES, ended))) ||
            (rules && (rc = exec_time(db, STMT_GC_ASSIGN, ended))) ||
            (rc = exec_time(db, STMT_GC_STATS, now / 1000 - STATS_KEEP_MS / 1000)) ||
            (rc = exec_time(db, STMT_GC_KEY_STATS, now - KEY_STATS_KEEP_MS)))
            return rc;
        db->stats.gc_misc_ms = now;
    }
    return RLS_OK;
}

struct gc_arg {
    int max_rows;
    int64_t now;
    int64_t *deleted;
};

static int gc_fn(rls_db *db, void *p)
{
    const struct gc_arg *a = p;
    int rc = rls__cache_refresh(db);
    if (rc)
        return rc;
    /* the once-a-minute sweep is due now, as after a clock that went back
     * (a start of 0 was not due in the first minute of 1970) */
    db->stats.gc_misc_ms = a->now + 1;
    return rls__gc_step(db, a->now, a->max_rows, a->deleted);
}

int rls_gc_at(rls_db *db, int max_rows, int64_t now_ms, int64_t *deleted)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if (max_rows < 1 || max_rows > 1000000)
        return rls__error(db, RLS_EINVAL, "max_rows %d is outside 1..1000000", max_rows);
    if (now_ms < RLS_TIME_MIN || now_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now_ms);
    struct gc_arg a = {max_rows, now_ms, deleted};
    return rls__write_tx(db, gc_fn, &a);
}

/* ---- the schedule (check.c's housekeeping stage, deny.c) ---------------- */

#define GC_STEP_ROWS 64       /* state rows examined per step */

/* A backend whose step costs round trips more than rows (backend.h,
 * gc_factor) runs it that many times as seldom over as many more rows. */
static uint32_t gc_every(const rls_db *db)
{
    return RLS_GC_EVERY_WRITES * (uint32_t)db->be->gc_factor;
}

int rls__gc_due(const rls_db *db) { return db->stats.writes_since_gc + 1 >= gc_every(db); }
int rls__gc_tick(rls_db *db) { return ++db->stats.writes_since_gc >= gc_every(db); }
void rls__gc_count_write(rls_db *db) { db->stats.writes_since_gc++; }
void rls__gc_due_now(rls_db *db) { db->stats.writes_since_gc = RLS_GC_EVERY_WRITES; }

int rls__gc_step_scheduled(rls_db *db, int64_t now)
{
    db->stats.writes_since_gc = 0;
    return rls__gc_step(db, now, GC_STEP_ROWS * db->be->gc_factor, NULL);
}

/* Stats counted in process and not flushed yet; a flush due at `now`
 * (once a second, or when the clock went back). */
int rls__stats_due(const rls_db *db, int64_t now)
{
    return (db->stats.nstats > 0 || rls__keystat_pending(db)) &&
           (now - db->stats.stats_flushed_ms >= 1000 || now < db->stats.stats_flushed_ms);
}
void rls__stats_forget(rls_db *db)   /* a forked child */
{
    db->stats.nstats = 0;
    db->stats.gen++;
}
