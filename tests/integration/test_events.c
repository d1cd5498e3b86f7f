/*
 * test_events.c - issue #20 on both backends: penalty events (block,
 * escalate, expire) and log_fn's one line per event, after the commit
 * only; GC records ends and drops events past the retention; metrics
 * counted by real checks; bulk changes audited once with their count;
 * the audit reason; audit pruning audited; no_upgrade refuses an older
 * schema by name and rls_migrate upgrades it once; a newer schema names
 * the version it needs.
 */
#include "itest.h"

extern const int rls__migration_count;
extern const int rls__pg_migration_count;

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  login:\n"
    "    limits:\n"
    "      - { name: per_min, algorithm: fixed_window, limit: 2, window: 1m,"
    " block_for: [1m, 10m] }\n"
    "      - { name: soft, algorithm: fixed_window, limit: 1, window: 1m, mode: shadow }\n"
    "  api:\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 100, window: 1m } ]\n";

#define MIN 60000LL

struct lines {
    int n;
    int level[16];
    char text[16][512];
};

static void collect(void *ctx, int level, const char *line)
{
    struct lines *l = ctx;
    if (l->n < 16) {
        l->level[l->n] = level;
        snprintf(l->text[l->n], sizeof l->text[0], "%s", line);
    }
    l->n++;
}

static rls_db *open_logging(const itest *t, struct lines *l)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.log_fn = collect;
    o.log_ctx = l;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    return db;
}

static rls_rows *events(rls_db *db, const char *event)
{
    rls_rows *r = NULL;
    int rc = rls_events_list_at(db, NULL, NULL, event, 0, 1000, &r);
    if (rc != RLS_OK)
        fail_msg("events: %s: %s", rls_errname(rc), rls_errmsg(db));
    return r;
}

static void penalties_leave_events_and_log_lines(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    struct lines l = {0};
    rls_db *db = open_logging(t, &l);
    rls_result res;
    for (int i = 0; i < 3; i++)
        it_check_on(db, "login", "ann", 1, T0, &res);
    assert_false(res.allowed);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.level[0], 4);   /* LOG_WARNING */
    assert_string_equal(l.text[0], "rlstore: BAN key=ann action=login "
                        "until=2026-01-01T00:01:00.000Z level=0 rule=per_min");
    it_check_on(db, "login", "ann", 1, T0 + 1000, &res);   /* blocked: no new event */
    assert_int_equal(res.reason, RLS_REASON_BLOCKED);
    assert_int_equal(l.n, 1);
    /* after the block, in the next window: two admitted, then the next
     * step; the end of the first block is recorded first */
    for (int i = 0; i < 3; i++)
        it_check_on(db, "login", "ann", 1, T0 + 2 * MIN, &res);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.text[1], "rlstore: UNBAN key=ann action=login "
                        "ended=2026-01-01T00:01:00.000Z level=0 rule=per_min");
    assert_int_equal(l.level[1], 5);   /* LOG_NOTICE */
    assert_string_equal(l.text[2], "rlstore: BAN key=ann action=login "
                        "until=2026-01-01T00:12:00.000Z level=1 rule=per_min escalated");
    rls_rows *r = events(db, NULL);
    assert_int_equal(rls_rows_count(r), 3);
    /* newest first */
    assert_string_equal(rls_rows_text(r, 0, rls_rows_find(r, "event")), "escalate");
    assert_int_equal(rls_rows_int(r, 0, rls_rows_find(r, "level")), 1);
    assert_int_equal(rls_rows_int(r, 0, rls_rows_find(r, "until_ms")), T0 + 12 * MIN);
    assert_string_equal(rls_rows_text(r, 1, rls_rows_find(r, "event")), "expire");
    assert_int_equal(rls_rows_int(r, 1, rls_rows_find(r, "ts_ms")), T0 + MIN);
    assert_string_equal(rls_rows_text(r, 2, rls_rows_find(r, "event")), "block");
    assert_string_equal(rls_rows_text(r, 2, rls_rows_find(r, "key")), "ann");
    rls_rows_free(r);
    /* filters */
    r = NULL;
    assert_int_equal(rls_events_list_at(db, "login", "bob", NULL, 0, 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 0);
    rls_rows_free(r);
    assert_int_equal(rls_events_list_at(db, "login", "ann", "block", 0, 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    rls_rows_free(r);
    assert_int_equal(rls_events_list_at(db, NULL, NULL, NULL, T0 + MIN + 1, 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);   /* only the escalation is that new */
    rls_rows_free(r);
    assert_int_equal(rls_events_list_at(db, NULL, NULL, NULL, 0, 0, &r), RLS_EINVAL);
    rls_close(db);
    it_free(t);
}

/* GC records the end of a block no check saw end, once, and drops events
 * past the 30-day retention. */
static void gc_records_ends_and_keeps_the_retention(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    struct lines l = {0};
    rls_db *db = open_logging(t, &l);
    int64_t deleted;
    for (int i = 0; i < 3; i++)
        it_check_on(db, "login", "bob", 1, T0, NULL);
    assert_int_equal(rls_gc_at(db, 100, T0 + 30000, &deleted), RLS_OK);
    rls_rows *r = events(db, "expire");
    assert_int_equal(rls_rows_count(r), 0);   /* not ended yet */
    rls_rows_free(r);
    assert_int_equal(rls_gc_at(db, 100, T0 + 2 * MIN, &deleted), RLS_OK);
    assert_int_equal(rls_gc_at(db, 100, T0 + 3 * MIN, &deleted), RLS_OK);
    r = events(db, "expire");
    assert_int_equal(rls_rows_count(r), 1);   /* once, though swept twice */
    rls_rows_free(r);
    assert_int_equal(l.n, 2);
    assert_non_null(strstr(l.text[1], "UNBAN key=bob"));
    /* GC's own clock is the earlier of the real one and the caller's: the
     * retention is tested by an explicit prune at a later time */
    assert_int_equal(rls_events_prune_at(db, T0 + MIN + 1, T0 + 40LL * 86400000, &deleted),
                     RLS_OK);
    assert_int_equal(deleted, 2);   /* the block at T0 and its end at T0 + 1m */
    r = events(db, NULL);
    assert_int_equal(rls_rows_count(r), 0);
    rls_rows_free(r);
    assert_int_equal(rls_events_prune_at(db, T0 + 2 * MIN, T0, &deleted), RLS_EINVAL);
    rls_close(db);
    it_free(t);
}

/* rls_gc_at sweeps whatever its time: in the first minute of 1970 too
 * (the sweep of ended blocks, events and stats ran at most once a minute
 * from a start of 0, so rls_gc_at before 00:01 skipped it: an ended
 * penalty's end was not recorded). */
static void gc_at_the_start_of_time(void **state)
{
    (void)state;
    static const char *rules =
        "version: 1\n"
        "actions:\n"
        "  login: { limits: [ { name: n, algorithm: fixed_window, limit: 1, window: 1h,"
        " block_for: 1s } ] }\n";
    itest *t = it_new(rules);
    rls_result res;
    it_check(t, "login", "ann", 1, 1000, NULL);
    it_check(t, "login", "ann", 1, 1000, &res);   /* blocked until 00:00:02 */
    assert_false(res.allowed);
    assert_int_equal(rls_gc_at(t->db, 100, 30000, NULL), RLS_OK);
    rls_rows *r = events(t->db, "expire");
    assert_int_equal(rls_rows_count(r), 1);
    assert_int_equal(rls_rows_int(r, 0, rls_rows_find(r, "ts_ms")), 2000);
    rls_rows_free(r);
    assert_int_equal(rls_gc_at(t->db, 100, RLS_TIME_MIN, NULL), RLS_OK);
    it_free(t);
}

/* A log line only for what committed: a penalty whose transaction rolls
 * back (the database is locked, SQLite) logs nothing and leaves no event. */
static void no_line_without_a_commit(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    struct lines l = {0};
    rls_options o;
    rls_db *db = NULL;
    rls_result res;
    rls_options_init(&o);
    o.log_fn = collect;
    o.log_ctx = &l;
    o.busy_timeout_ms = 30;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    it_check_on(db, "login", "cy", 1, T0, NULL);
    it_check_on(db, "login", "cy", 1, T0, NULL);
    sqlite3 *lock = it_lock_db(t);
    assert_int_equal(rls_check_at(db, "login", "cy", 1, T0, &res), RLS_EBUSY);
    it_unlock_db(lock);
    assert_int_equal(l.n, 0);
    rls_rows *r = events(db, NULL);
    assert_int_equal(rls_rows_count(r), 0);
    rls_rows_free(r);
    it_check_on(db, "login", "cy", 1, T0, &res);
    assert_int_equal(l.n, 1);
    rls_close(db);
    it_free(t);
}

static int64_t metric(const rls_rows *r, const char *m, const char *action, const char *label)
{
    for (int i = 0; i < rls_rows_count(r); i++)
        if (strcmp(rls_rows_text(r, i, 0), m) == 0 && strcmp(rls_rows_text(r, i, 1), action) == 0 &&
            strcmp(rls_rows_text(r, i, 2), label) == 0)
            return rls_rows_int(r, i, 3);
    return -1;
}

static void metrics_count_real_checks(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_db *db = NULL;
    rls_result res;
    rls_rows *r = NULL;
    assert_int_equal(rls_open(&db, t->path, NULL), RLS_OK);
    for (int i = 0; i < 5; i++)   /* ok, shadow (soft full), limit + penalty, blocked x2 */
        rls_check_at(db, "login", "dee", 1, T0, &res);
    for (int i = 0; i < 7; i++)
        rls_check_at(db, "api", "k", 1, T0, &res);
    rls_peek_at(db, "api", "k", 1, T0, &res);   /* a peek is not counted */
    assert_int_equal(rls_check_at(db, "nope", "k", 1, T0, &res), RLS_ENOACTION);
    rls_close(db);   /* writes what it counted */
    assert_int_equal(rls_metrics_at(t->db, T0 + 1000, &r), RLS_OK);
    assert_int_equal(metric(r, "checks_allowed", "login", ""), 2);
    assert_int_equal(metric(r, "checks_denied", "login", ""), 3);
    assert_int_equal(metric(r, "reason", "login", "ok"), 1);
    assert_int_equal(metric(r, "reason", "login", "shadow"), 1);
    assert_int_equal(metric(r, "reason", "login", "limit"), 1);
    assert_int_equal(metric(r, "reason", "login", "blocked"), 2);
    assert_int_equal(metric(r, "denied", "login", "per_min"), 1);
    /* the shadow limit would have denied the 2nd and the 3rd */
    assert_int_equal(metric(r, "shadow", "login", "soft"), 2);
    assert_int_equal(metric(r, "penalties", "login", ""), 1);
    assert_int_equal(metric(r, "reason", "api", "ok"), 7);
    assert_int_equal(metric(r, "latency_count", "api", ""), 7);
    assert_int_equal(metric(r, "latency_count", "login", ""), 5);
    assert_true(metric(r, "latency_sum_us", "api", "") >= 0);
    int64_t buckets = 0;
    for (int i = 0; i < rls_rows_count(r); i++)
        if (strcmp(rls_rows_text(r, i, 0), "latency") == 0 &&
            strcmp(rls_rows_text(r, i, 1), "api") == 0)
            buckets += rls_rows_int(r, i, 3);
    assert_int_equal(buckets, 7);
    assert_int_equal(metric(r, "blocks_active", "login", "penalty"), 1);
    assert_int_equal(metric(r, "keys_tracked", "api", ""), 1);
    assert_int_equal(metric(r, "rules_version", "", ""), 1);
    assert_int_equal(metric(r, "reason", "nope", "ok"), -1);
    rls_rows_free(r);
    it_free(t);
}

/* The end of a penalty block is recorded whenever its row goes, not only
 * by GC's sweep: a penalty that has ended (its level still remembered)
 * lifted by an unblock with or without an action, replaced by a manual
 * block, or removed by unblock --all, leaves the same 'expire' events
 * whether or not a sweep ran first (before, only the swept database had
 * them: the answer depended on when GC ran).  A block lifted while in
 * force never ended: no event. */
static void ended_penalty_removed_keeps_its_end(void **state)
{
    (void)state;
    static const char *keys[] = {"a", "b", "c", "d", "e"};
    const int64_t N = T0 + 2 * MIN;
    for (int sweep = 0; sweep < 2; sweep++) {
        itest *t = it_new(RULES);
        int64_t n = -1;
        rls_result res;
        for (int k = 0; k < 5; k++)
            for (int i = 0; i < 3; i++)
                it_check(t, "login", keys[k], 1, T0, NULL);   /* until T0 + 1m */
        for (int i = 0; i < 3; i++)
            it_check(t, "login", "f", 1, T0 + 90000, &res);  /* until T0 + 2.5m */
        assert_false(res.allowed);
        rls_rows *r = events(t->db, "expire");
        assert_int_equal(rls_rows_count(r), 0);   /* nothing swept yet */
        rls_rows_free(r);
        if (sweep)
            assert_int_equal(rls_gc_at(t->db, 100, N, NULL), RLS_OK);
        assert_int_equal(rls_block_unset_at(t->db, "login", "a", N), RLS_OK);
        assert_int_equal(rls_block_unset_at(t->db, NULL, "b", N), RLS_OK);
        assert_int_equal(rls_block_set_at(t->db, "login", "c", 0, "manual", N), RLS_OK);
        assert_int_equal(rls_block_unset_at(t->db, "login", "f", N), RLS_OK);   /* in force */
        assert_int_equal(rls_block_unset_all_at(t->db, "login", N, &n), RLS_OK);
        assert_int_equal(n, 1);   /* c's manual block; d's and e's had ended */
        assert_int_equal(rls_gc_at(t->db, 100, N + 5 * MIN, NULL), RLS_OK);
        r = events(t->db, "expire");
        if (rls_rows_count(r) != 5)
            fail_msg("%s: %zu expire events, want 5 (a..e)", sweep ? "swept" : "unswept",
                     rls_rows_count(r));
        for (size_t i = 0; i < 5; i++) {
            assert_int_equal(rls_rows_int(r, i, rls_rows_find(r, "ts_ms")), T0 + MIN);
            assert_string_not_equal(rls_rows_text(r, i, rls_rows_find(r, "key")), "f");
        }
        rls_rows_free(r);
        it_free(t);
    }
}

static int64_t audit_count(const itest *t, const char *op)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rls_audit WHERE op = '%s'", op);
    return it_sql_int(t->path, sql);
}

static void bulk_changes_are_audited_once(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    int64_t n = -1;
    for (int k = 0; k < 4; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        for (int i = 0; i < 3; i++)
            it_check(t, "login", key, 1, T0, NULL);
        it_check(t, "api", key, 1, T0, NULL);
    }
    assert_int_equal(rls_block_set_at(t->db, "api", "k0", 0, "manual", T0), RLS_OK);
    assert_int_equal(rls_admin_reason(t->db, "incident 42"), RLS_OK);
    assert_int_equal(rls_block_unset_all_at(t->db, "login", T0 + 1, &n), RLS_OK);
    assert_int_equal(n, 4);
    assert_int_equal(audit_count(t, "unblock.all"), 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op = "
                                "'unblock.all' AND reason = 'incident 42' AND after LIKE '4 %'"), 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_blocks"), 1);   /* api's */
    assert_int_equal(rls_block_unset_all_at(t->db, NULL, T0 + 2, &n), RLS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_blocks"), 0);
    assert_int_equal(rls_reset_action_at(t->db, "login", T0 + 3, &n), RLS_OK);
    assert_int_equal(n, 4);
    assert_int_equal(audit_count(t, "reset.action"), 1);
    assert_int_equal(it_usage_count(t->db, "login", T0 + 3), 0);
    assert_int_equal(it_usage_count(t->db, "api", T0 + 3), 4);
    assert_int_equal(it_check(t, "login", "k1", 1, T0 + 4, NULL), 1);   /* fresh */
    assert_int_equal(rls_reset_action_at(t->db, "nope", T0, &n), RLS_ENOACTION);
    assert_int_equal(rls_reset_action_at(t->db, NULL, T0, &n), RLS_EINVAL);
    /* the reason goes with changes that take none of their own */
    assert_int_equal(rls_admin_reason(t->db, "paid"), RLS_OK);
    assert_int_equal(rls_override_set_at(t->db, "api", "k2", "rate", 500, 0, T0), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE reason = 'paid'"),
                     1);
    assert_int_equal(rls_admin_reason(t->db, NULL), RLS_OK);
    assert_int_equal(rls_override_unset_at(t->db, "api", "k2", "rate", T0), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE reason = 'paid'"),
                     1);
    /* audit pruning: audited itself, and bounded by its time */
    int64_t old = it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE ts_ms < "
                             "1767225600003");   /* T0 + 3 */
    assert_true(old >= 3);
    assert_int_equal(rls_audit_prune_at(t->db, T0 + 3, T0 + 10, &n), RLS_OK);
    assert_int_equal(n, old);
    assert_int_equal(audit_count(t, "audit.prune"), 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE ts_ms < "
                                "1767225600003"), 0);
    assert_int_equal(rls_audit_prune_at(t->db, T0 + 20, T0 + 10, &n), RLS_EINVAL);
    it_free(t);
}

static int want(void) { return it_pg() ? rls__pg_migration_count : rls__migration_count; }

/* The database as a library of the schema before 5 left it. */
static void make_older(const itest *t)
{
    it_sql_exec(t->path, "DROP TABLE rls_events");
    it_sql_exec(t->path, "DROP TABLE rls_counters");
    if (it_pg())
        it_sql_exec(t->path, "UPDATE rls_schema SET version = 4");
    else
        it_sql_exec(t->path, "PRAGMA user_version = 4");
}

static int64_t version(const itest *t)
{
    return it_sql_int(t->path, it_pg() ? "SELECT version FROM rls_schema"
                                       : "PRAGMA user_version");
}

static void no_upgrade_and_migrate(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_options o;
    rls_db *db = NULL;
    int64_t from = -1, to = -1;
    it_check(t, "api", "k", 1, T0, NULL);
    rls_close(t->db);
    t->db = NULL;
    make_older(t);
    rls_options_init(&o);
    o.no_upgrade = 1;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_EOLDSCHEMA);
    assert_null(db);
    char want_text[64];
    snprintf(want_text, sizeof want_text, "needs version %d", want());
    assert_non_null(strstr(rls_errmsg(NULL), "schema version 4"));
    assert_non_null(strstr(rls_errmsg(NULL), want_text));
    assert_non_null(strstr(rls_errmsg(NULL), "rlctl migrate"));
    assert_string_equal(rls_errname(RLS_EOLDSCHEMA), "EOLDSCHEMA");
    assert_int_equal(version(t), 4);   /* untouched */
    assert_int_equal(rls_migrate(t->path, NULL, 1, &from, &to), RLS_OK);
    assert_int_equal(from, 4);
    assert_int_equal(to, want());
    assert_int_equal(version(t), 4);   /* a dry run changes nothing */
    assert_int_equal(rls_migrate(t->path, NULL, 0, &from, &to), RLS_OK);
    assert_int_equal(from, 4);
    assert_int_equal(version(t), want());
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);   /* current: no_upgrade opens */
    rls_result res;
    assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &res), RLS_OK);
    assert_int_equal(res.remaining, 98);   /* counters kept */
    rls_close(db);
    assert_int_equal(rls_migrate(t->path, NULL, 0, &from, &to), RLS_OK);
    assert_int_equal(from, want());
    assert_int_equal(to, want());
    /* a newer schema: the version it needs is named */
    if (it_pg())
        it_sql_exec(t->path, "UPDATE rls_schema SET version = 99");
    else
        it_sql_exec(t->path, "PRAGMA user_version = 99");
    assert_int_equal(rls_open(&db, t->path, NULL), RLS_ENEWER);
    assert_non_null(strstr(rls_errmsg(NULL), "schema version 99"));
    assert_int_equal(rls_migrate(t->path, NULL, 0, &from, &to), RLS_ENEWER);
    assert_int_equal(from, 99);
    assert_int_equal(rls_migrate(NULL, NULL, 0, &from, &to), RLS_EINVAL);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(penalties_leave_events_and_log_lines),
        cmocka_unit_test(gc_records_ends_and_keeps_the_retention),
        cmocka_unit_test(gc_at_the_start_of_time),
        cmocka_unit_test(no_line_without_a_commit),
        cmocka_unit_test(metrics_count_real_checks),
        cmocka_unit_test(bulk_changes_are_audited_once),
        cmocka_unit_test(ended_penalty_removed_keeps_its_end),
        cmocka_unit_test(no_upgrade_and_migrate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
