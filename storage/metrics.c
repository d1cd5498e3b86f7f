/*
 * metrics.c - the counters behind `rlctl metrics` (issue #20), kept in
 * rls_counters (schema/005), and rls_metrics_at() that reads them with the
 * other figures an operator graphs.
 *
 * Each handle counts its checks in process, per action: by reason, the
 * denials and shadow would-denials by deciding limit, and the time
 * rls_check() took (monotonic clock, from entry to return, in this
 * process: the library's own latency, including waits for the write
 * lock, not the application's; the memory-class fast lane's checks one in
 * RLS_MET_LANE_SAMPLE, each timed one standing for the untimed ones
 * before it: rls__metrics_lane_timed).  The counts are written with the stats
 * (gc.c: at most once a second, in a check's transaction, and at
 * rls_close), so like the stats they may lose the last second on a
 * crash.  Penalties are counted in the transaction of their block
 * (events.c), exactly.  Counted: rls_check and rls_reserve; not peeks,
 * not calls refused for invalid input, not the items of rls_check_many
 * (which the stats count), not a process that never writes.
 *
 * rls_counters rows (action, name, label):
 *   reason/<ok|limit|blocked|...>   checks by reason (degraded included)
 *   denied/<rule>                   denials by deciding limit
 *   shadow/<rule>                   shadow would-denials by limit
 *   latency/<upper bound in us>     histogram bucket (not cumulative;
 *                                   "inf" the last)
 *   latency_sum_us/, latency_count/ the histogram's sum and count
 *   penalties/                      penalty blocks imposed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "admin.h"
#include "check.h"
#include "events.h"

static const int64_t bucket_us[RLS_MET_BUCKETS - 1] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 1000000,
};

int64_t rls__metrics_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct met_act *act_of(rls_db *db, const char *action)
{
    struct rls_events *ev = db->ev;
    if (!ev && !(ev = db->ev = calloc(1, sizeof *db->ev)))
        return NULL;
    for (int i = 0; i < ev->nacts; i++)
        if (strcmp(ev->acts[i].action, action) == 0)
            return &ev->acts[i];
    if (ev->nacts == ev->capacts) {
        int cap = ev->capacts ? ev->capacts * 2 : 4;
        struct met_act *a = realloc(ev->acts, sizeof *a * (size_t)cap);
        if (!a)
            return NULL;   /* metrics may be lost, counters never are */
        ev->acts = a;
        ev->capacts = cap;
    }
    struct met_act *a = &ev->acts[ev->nacts++];
    memset(a, 0, sizeof *a);
    snprintf(a->action, sizeof a->action, "%s", action);
    a->lane_b = -1;
    return a;
}

/* act_of, by *hint when it holds (events.h), else by name (*hint then
 * set to where the action's counts are now). */
static struct met_act *act_hinted(rls_db *db, const char *action, rls__hint *hint)
{
    struct met_act *a = rls__metrics_hinted(db, hint);
    if (a)
        return a;
    a = act_of(db, action);
    if (a) {
        hint->i = (int)(a - db->ev->acts);
        hint->gen = db->ev->acts_gen;
    }
    return a;
}

static void count_rule(struct met_act *a, const char *rule, int shadow)
{
    for (int i = 0; i < a->nrules; i++)
        if (strcmp(a->rules[i].rule, rule) == 0) {
            if (shadow)
                a->rules[i].shadow++;
            else
                a->rules[i].denied++;
            return;
        }
    if (a->nrules == RLS_MET_RULES) {
        a->rules_other++;   /* written at once: flush() makes room */
        return;
    }
    struct met_rule *r = &a->rules[a->nrules++];
    snprintf(r->rule, sizeof r->rule, "%s", rule);
    r->denied = !shadow;
    r->shadow = shadow;
}

static int bucket_of(int64_t us)
{
    int b = 0;
    while (b < RLS_MET_BUCKETS - 1 && us > bucket_us[b])
        b++;
    return b;
}

/* w checks of us microseconds each in a's histogram. */
static void count_latency(struct met_act *a, int b, int64_t us, int64_t w)
{
    a->lat[b] += w;
    a->lat_sum_us += us * w;
    a->lat_count += w;
}

/* One check counted in a: its reason, its deciding limit's denial, the
 * shadow limits among items (their limits rl, n of them; NULL: none
 * decided) that would have denied. */
static inline void count_check(struct met_act *a, const rls_result *res, const decide_item *items,
                               const resolved_limit *rl, int n)
{
    int reason = res->reason;
    if (reason >= 0 && reason < 8)
        a->reason[reason]++;
    if (!res->allowed && reason == RLS_REASON_LIMIT && res->rule[0])
        count_rule(a, res->rule, 0);
    /* every shadow limit that would have denied, whatever decided: the
     * result names only the deciding limit */
    for (int i = 0; items && i < n; i++)
        if (items[i].denied && rl[i].def->mode == MODE_SHADOW)
            count_rule(a, rl[i].def->name, 1);
}

void rls__metrics_check(rls_db *db, const struct check_call *call, int rc, int64_t t0)
{
    if (!db || call->op == CHECK_OP_PEEK || !call->res)
        return;
    if (rc != RLS_OK && !rls__check_is_storage_failure(rc))
        return;   /* refused input: not a check */
    struct met_act *a = act_of(db, call->action);
    if (!a)
        return;
    const key_ctx *ctx = call->ctx;
    int decided = rc == RLS_OK && ctx && !call->blocked;
    count_check(a, call->res, decided ? ctx->items : NULL, decided ? ctx->rl : NULL,
                decided ? ctx->n : 0);
    int64_t us = (rls__metrics_clock() - t0) / 1000;
    count_latency(a, bucket_of(us), us, 1);
}

/*
 * The lane's sampling.  Which checks are timed is drawn at random (a
 * periodic choice could keep step with a periodic load); each timed one
 * stands for itself and the untimed ones since the one before it, so
 * latency_count stays the number of checks and the histogram an unbiased
 * sample of their times; the untimed ones after the last timed one go
 * with it at the flush (flush_act).  The pipeline's checks are timed
 * every one and counted alone: a slow database check never stands for a
 * lane check.
 */
int rls__metrics_lane_timed_look(rls_db *db, const char *action, rls__hint *hint)
{
    struct met_act *a = act_hinted(db, action, hint);
    if (!a || a->lane_b < 0)
        return 1;   /* the first since the flush: the others need one */
    return rls__metrics_draw(db);
}

void rls__metrics_lane_count(rls_db *db, const char *action, rls__hint *hint,
                             const rls_result *res, const decide_item *items,
                             const resolved_limit *rl, int n, int64_t t0)
{
    struct met_act *a = act_hinted(db, action, hint);
    if (!a)
        return;
    count_check(a, res, items, rl, n);
    if (t0 == RLS_MET_UNTIMED) {
        a->lane_untimed++;
        return;
    }
    int64_t us = (rls__metrics_clock() - t0) / 1000;
    a->lane_b = bucket_of(us);
    a->lane_us = us;
    count_latency(a, a->lane_b, us, a->lane_untimed + 1);
    a->lane_untimed = 0;
}

int rls__metrics_pending(const rls_db *db)
{
    return db->ev && db->ev->nacts > 0;
}

int rls__counter_add(rls_db *db, const char *action, const char *name, const char *label,
                     int64_t n)
{
    if (n == 0)
        return RLS_OK;
    rls_stmt *st = rls__astmt(db, ASTMT_CTR_ADD);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_text(st, 1, action, -1, SQL_STATIC);
    sql_bind_text(st, 2, name, -1, SQL_STATIC);
    sql_bind_text(st, 3, label, -1, SQL_STATIC);
    sql_bind_int64(st, 4, n);
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot write metrics");
}

static int flush_act(rls_db *db, struct met_act *a)
{
    char label[32];
    int rc = RLS_OK;
    if (a->lane_untimed > 0 && a->lane_b >= 0) {   /* with the lane's last timed one */
        count_latency(a, a->lane_b, a->lane_us, a->lane_untimed);
        a->lane_untimed = 0;
    }
    for (int r = 0; rc == RLS_OK && r < 8; r++)
        if (a->reason[r])
            rc = rls__counter_add(db, a->action, "reason", rls_reason_name(r), a->reason[r]);
    for (int i = 0; rc == RLS_OK && i < a->nrules; i++) {
        rc = rls__counter_add(db, a->action, "denied", a->rules[i].rule, a->rules[i].denied);
        if (rc == RLS_OK)
            rc = rls__counter_add(db, a->action, "shadow", a->rules[i].rule, a->rules[i].shadow);
    }
    if (rc == RLS_OK && a->rules_other)
        rc = rls__counter_add(db, a->action, "denied", "", a->rules_other);
    for (int b = 0; rc == RLS_OK && b < RLS_MET_BUCKETS; b++) {
        if (!a->lat[b])
            continue;
        if (b < RLS_MET_BUCKETS - 1)
            snprintf(label, sizeof label, "%lld", (long long)bucket_us[b]);
        else
            snprintf(label, sizeof label, "inf");
        rc = rls__counter_add(db, a->action, "latency", label, a->lat[b]);
    }
    if (rc == RLS_OK)
        rc = rls__counter_add(db, a->action, "latency_sum_us", "", a->lat_sum_us);
    if (rc == RLS_OK)
        rc = rls__counter_add(db, a->action, "latency_count", "", a->lat_count);
    return rc;
}

int rls__metrics_flush(rls_db *db)
{
    if (!rls__metrics_pending(db))
        return RLS_OK;
    for (int i = 0; i < db->ev->nacts; i++) {
        int rc = flush_act(db, &db->ev->acts[i]);
        if (rc)
            return rc;
    }
    /* like the stats: a transaction that rolls back loses them */
    db->ev->nacts = 0;
    db->ev->acts_gen++;
    return RLS_OK;
}

/* ---- rls_metrics_at ------------------------------------------------------ */

/* Appends the rows of statement id (bound to now when bind) as
 * (metric, action, label, value): columns c_action, c_label (-1: none),
 * c_value of the statement. */
static int add_rows(rls_db *db, rls_rows *out, int id, int64_t now, int bind, const char *metric,
                    int c_action, int c_label, int c_value)
{
    rls_stmt *st = rls__astmt(db, id);
    int src;
    if (!st)
        return rls__stmt_failed(db);
    if (bind)
        sql_bind_int64(st, 1, now);
    while ((src = sql_step(st)) == SQL_ROW) {
        int row = rls__rows_add(out);
        const char *m = metric ? metric : (const char *)sql_column_text(st, 1);
        const char *a = c_action >= 0 ? (const char *)sql_column_text(st, c_action) : "";
        const char *l = c_label >= 0 ? (const char *)sql_column_text(st, c_label) : "";
        if (row < 0 || rls__rows_set_text(out, row, 0, m ? m : "", strlen(m ? m : "")) ||
            rls__rows_set_text(out, row, 1, a ? a : "", strlen(a ? a : "")) ||
            rls__rows_set_text(out, row, 2, l ? l : "", strlen(l ? l : ""))) {
            sql_reset(st);
            return rls__error(db, RLS_ENOMEM, "out of memory");
        }
        rls__rows_set_int(out, row, 3, sql_column_int64(st, c_value));
    }
    sql_reset(st);
    return src == SQL_DONE ? RLS_OK : rls__sql_error(db, src, "cannot read metrics");
}

static int metrics_read(rls_db *db, rls_rows *out, int64_t now)
{
    int64_t version = 0;
    int rc = rls__cache_refresh(db);
    if (rc == RLS_OK && (rc = rls__rules_active(db, &version)) == RLS_ENORULES)
        rc = RLS_OK;   /* version 0: no rules yet */
    if (rc)
        return rc;
    int row = rls__rows_add(out);
    if (row < 0 || rls__rows_set_text(out, row, 0, "rules_version", 13) ||
        rls__rows_set_text(out, row, 1, "", 0) || rls__rows_set_text(out, row, 2, "", 0))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    rls__rows_set_int(out, row, 3, version);
    /* stats totals: (action, allowed, denied) as two rows each */
    if ((rc = add_rows(db, out, ASTMT_STATS_TOTALS, 0, 0, "checks_allowed", 0, -1, 1)) ||
        (rc = add_rows(db, out, ASTMT_STATS_TOTALS, 0, 0, "checks_denied", 0, -1, 2)) ||
        (rc = add_rows(db, out, ASTMT_CTR_LIST, 0, 0, NULL, 0, 2, 3)) ||
        (rc = add_rows(db, out, ASTMT_BLOCKS_ACTIVE, now, 1, "blocks_active", 0, 1, 2)) ||
        (rc = add_rows(db, out, ASTMT_KEYS_TRACKED, 0, 0, "keys_tracked", 0, -1, 1)))
        return rc;
    return RLS_OK;
}

int rls_metrics_at(rls_db *db, int64_t now_ms, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"metric", RLS_COL_TEXT}, {"action", RLS_COL_TEXT}, {"label", RLS_COL_TEXT},
        {"value", RLS_COL_INT},
    };
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    if (db && (now_ms < RLS_TIME_MIN || now_ms > RLS_TIME_MAX))
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now_ms);
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    rls_rows *r = rls__rows_new(cols, 4);
    rc = r ? metrics_read(db, r, now_ms) : rls__error(db, RLS_ENOMEM, "out of memory");
    if (rc == RLS_OK)
        rc = rls__commit(db);
    else
        rls__rollback(db);
    if (rc) {
        rls_rows_free(r);
        return rc;
    }
    *out = r;
    return RLS_OK;
}
