/*
 * events.h - what an operator should see happen (issue #20): penalty
 * events (events.c), the counters behind `rlctl metrics` (metrics.c), the
 * handle's audit reason, and the schema's explicit upgrade (schema.c).
 *
 * The handle's part (db->ev) is allocated at first use and owned by these
 * files; everything here costs nothing to a handle that never imposes a
 * penalty and never sets log_fn.
 */
#ifndef RLS_EVENTS_H
#define RLS_EVENTS_H

#include "db.h"

struct check_call;

/* Latency buckets of the check histogram, upper bounds in microseconds
 * (the last is +Inf). */
#define RLS_MET_BUCKETS 14
#define RLS_MET_RULES 8          /* rules counted per action and flush */

/* One action's counts since the last flush (metrics.c). */
struct met_rule {
    char rule[RLS_NAME_MAX + 1];
    int64_t denied, shadow;
};
struct met_act {
    char action[RLS_NAME_MAX + 1];
    int64_t reason[8];           /* by enum rls_reason */
    int64_t lat[RLS_MET_BUCKETS];
    int64_t lat_sum_us, lat_count;
    /* the fast lane's checks, timed one in RLS_MET_LANE_SAMPLE (metrics.c):
     * those not timed since its last timed one, that one's bucket and
     * time (lane_b -1: none yet since the last flush) */
    int64_t lane_untimed;
    int lane_b;
    int64_t lane_us;
    struct met_rule rules[RLS_MET_RULES];
    int nrules;
    int64_t rules_other;         /* denials past RLS_MET_RULES rules */
};

/* The handle's part (db->ev). */
struct rls_events {
    char **lines;                /* log_fn lines of the open transaction */
    int nlines, caplines;
    int *levels;                 /* their syslog levels */
    struct met_act *acts;        /* metrics.c */
    int nacts, capacts;
    uint32_t acts_gen;           /* bumped when acts is emptied (rls__hint) */
    uint32_t rng;                /* the lane's latency sampling (metrics.c) */
    char *reason;                /* rls_admin_reason() */
    void (*progress)(void *ctx, int64_t rows);   /* rls_set_progress() */
    void *progress_ctx;
};

/* Events older than this are collected by GC (the documented retention). */
#define RLS_EVENTS_KEEP_MS (30LL * 86400 * 1000)

/* ---- events.c -------------------------------------------------------- */
/* Inside the check's transaction, right before its penalty block is
 * written: the previous block's expiry if it was not recorded yet, then a
 * 'block' or 'escalate' event and the action's penalty count; the log
 * line of log_fn is queued for the commit. */
int rls__event_penalty(rls_db *db, const struct check_call *call);
/* GC's sweep (gc.c, before expired blocks are deleted): 'expire' events
 * of the penalty blocks that ended, events past the retention removed. */
int rls__events_sweep(rls_db *db, int64_t now);
/* The transaction committed (stmt.c): queued lines go to log_fn. */
void rls__events_committed(rls_db *db);
/* It rolled back: queued lines are dropped. */
void rls__events_rolled_back(rls_db *db);
/* A long call read `rows` more rows (copy_rows.c): rls_set_progress's fn. */
void rls__progress(rls_db *db, int64_t rows);
/* The audit reason set with rls_admin_reason(), or NULL. */
const char *rls__admin_reason(const rls_db *db);
/* Frees db->ev (rls_close); a forked child drops what the parent queued. */
void rls__events_free(rls_db *db);
void rls__events_forget(rls_db *db);

/* ---- metrics.c ------------------------------------------------------- */
/* The monotonic clock in ns, read at a check's start. */
int64_t rls__metrics_clock(void);
/* At a check's end (check.c): its reason, deciding rule and duration,
 * counted in process (peeks and invalid calls are not counted). */
void rls__metrics_check(rls_db *db, const struct check_call *call, int rc, int64_t t0);
/* Timing a check of the memory-class fast lane (memlane.c) costs two
 * clock reads, a seventh of the check: the lane times one check in
 * RLS_MET_LANE_SAMPLE (at random, and always the first of an action since
 * the last flush), and each timed one is counted for itself and for the
 * untimed ones before it (metrics.c).  1: time this check of action. */
#define RLS_MET_LANE_SAMPLE 16
#define RLS_MET_UNTIMED (-1)   /* t0 of a check not timed */

/* The lane's common cases below are inline (a check is a few hundred
 * instructions, a call and its set-up a tenth of them); metrics.c owns
 * what they touch and does everything else. */

/* The counts of the action *hint was taken for, when this generation of
 * the array holds them (it only grows until emptied: no name to
 * compare); else NULL. */
static inline struct met_act *rls__metrics_hinted(const rls_db *db, const rls__hint *hint)
{
    const struct rls_events *ev = db->ev;
    if (ev && hint->gen == ev->acts_gen && hint->i >= 0 && hint->i < ev->nacts)
        return &ev->acts[hint->i];
    return NULL;
}

/* 1 one time in RLS_MET_LANE_SAMPLE, at random (a per-handle xorshift32). */
static inline int rls__metrics_draw(rls_db *db)
{
    uint32_t x = db->ev->rng ? db->ev->rng : 0x9e3779b9u ^ (uint32_t)(uintptr_t)db;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    db->ev->rng = x;
    return x % RLS_MET_LANE_SAMPLE == 0;
}

/* The whole of the two below: looked up by name when the hint does not
 * hold. */
int rls__metrics_lane_timed_look(rls_db *db, const char *action, rls__hint *hint);
void rls__metrics_lane_count(rls_db *db, const char *action, rls__hint *hint,
                             const rls_result *res, const decide_item *items,
                             const resolved_limit *rl, int n, int64_t t0);

/* 1: time this check of action (*hint: where its counts were, of this
 * action's counts only). */
static inline int rls__metrics_lane_timed(rls_db *db, const char *action, rls__hint *hint)
{
    const struct met_act *a = rls__metrics_hinted(db, hint);
    if (!a || a->lane_b < 0)   /* not found by the hint, or the first since the flush */
        return rls__metrics_lane_timed_look(db, action, hint);
    return rls__metrics_draw(db);
}

/* rls__metrics_check of a check the lane decided: items (limits rl, n)
 * as decided, *hint where the action's counts were (of this action's
 * counts only), t0 RLS_MET_UNTIMED for a check not timed.  Inline: an
 * untimed check that no limit denied (its reason counted, and one more
 * untimed check). */
static inline void rls__metrics_lane(rls_db *db, const char *action, rls__hint *hint,
                                     const rls_result *res, const decide_item *items,
                                     const resolved_limit *rl, int n, int64_t t0)
{
    struct met_act *a = rls__metrics_hinted(db, hint);
    int plain = a && t0 == RLS_MET_UNTIMED && res->allowed && res->reason >= 0 && res->reason < 8;
    for (int i = 0; plain && items && i < n; i++)
        plain = !items[i].denied;
    if (!plain) {
        rls__metrics_lane_count(db, action, hint, res, items, rl, n, t0);
        return;
    }
    a->reason[res->reason]++;
    a->lane_untimed++;
}
/* Anything counted and not yet written? */
int rls__metrics_pending(const rls_db *db);
/* Inside a write transaction, with the stats (gc.c): writes the counts. */
int rls__metrics_flush(rls_db *db);
/* Adds n to a counter of rls_counters now (in the caller's transaction). */
int rls__counter_add(rls_db *db, const char *action, const char *name, const char *label,
                     int64_t n);

/* ---- schema.c -------------------------------------------------------- */
/* A backend found schema version ver below the library's (want) in the
 * file or database `what`, which is not new (a new one is created, not
 * upgraded): RLS_OK to upgrade it; RLS_EOLDSCHEMA (recorded, naming both
 * versions and `rlctl migrate`) when the handle was opened with
 * no_upgrade.  Either way the versions are noted for rls_migrate(). */
int rls__schema_upgrade_ok(rls_db *db, const char *what, int64_t ver, int want);
/* The version an open found, for rls_migrate() (per thread). */
void rls__schema_found(int64_t ver, int want);

#endif
