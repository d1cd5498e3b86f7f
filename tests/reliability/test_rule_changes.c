/*
 * test_rule_changes.c - rule changes and rollbacks never give back quota
 * already spent (issue #17, defect 5).
 *
 * A limit's identity is (action, name, algorithm, window): its variant.
 * Random sequences of checks, rule changes (window, algorithm, capacity)
 * and rollbacks of one key run against a simple model that records every
 * admission with the variant in force.  After every admitted check:
 *
 *   own quota    the admissions made under the variant in force that lie in
 *                its current window (aligned fixed window, or the last W
 *                for sliding_log) are at most its limit: quota spent under
 *                a variant is still spent when it comes back;
 *   carry-over   right after a change from a fixed window whose current
 *                window contains the new variant's window, the admissions
 *                made under either in the new window are at most the new
 *                limit: a window change carries usage over, never
 *                generously;
 *   exactness    (liveness) with no other variant's admission in the last
 *                two days, a check the model admits is admitted: the rule
 *                is not simply denying.
 *
 * Plus the exact case (10/1d, 1h, back to 1d) by apply and by
 * rollback.  Knobs: RLS_RULES_STEPS (default 3000), RLS_RULES_SEED (17).
 * Runs on SQLite and (make test-pg, PG_RELIABILITY) PostgreSQL.
 */
#include "reltest.h"

extern const char *const rls__migrations[];
extern const int rls__migration_count;

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define DAY_MS (24 * HOUR_MS)

typedef struct variant {
    const char *yaml_limit;   /* the limit's YAML */
    int ident;                /* same ident = same variant (state kept) */
    int log;                  /* sliding_log, else fixed_window (aligned UTC) */
    int64_t limit, window;
} variant;

static const variant VARIANTS[] = {
    {"{ name: l, algorithm: fixed_window, limit: 10, window: 1d }", 0, 0, 10, DAY_MS},
    {"{ name: l, algorithm: fixed_window, limit: 10, window: 1h }", 1, 0, 10, HOUR_MS},
    {"{ name: l, algorithm: fixed_window, limit: 4, window: 1h }", 1, 0, 4, HOUR_MS},
    {"{ name: l, algorithm: sliding_log, limit: 6, window: 1h }", 2, 1, 6, HOUR_MS},
    {"{ name: l, algorithm: fixed_window, limit: 8, window: 30m }", 3, 0, 8, 30 * MIN_MS},
    {"{ name: l, algorithm: sliding_log, limit: 6, window: 2h }", 4, 1, 6, 2 * HOUR_MS},
};
#define NVAR ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static char *rules_of(int v)
{
    char *y = malloc(512);
    assert_non_null(y);
    snprintf(y, 512, "version: 1\nactions:\n  act: { limits: [ %s ] }\n",
             VARIANTS[v].yaml_limit);
    return y;
}

static int64_t apply_variant(itest *t, int v, int64_t now)
{
    char *y = rules_of(v);
    int64_t version = 0;
    int rc = rls_rules_apply_at(t->db, y, strlen(y), "t.yaml", NULL, now, &version);
    if (rc != RLS_OK)
        fail_msg("apply %d: %s: %s", v, rls_errname(rc), rls_errmsg(t->db));
    free(y);
    return version;
}

/* The current window of variant v at t: [*s, *e) (sliding_log: (t-W, t]
 * as [t-W+1, t+1)). */
static void window_of(int v, int64_t t, int64_t *s, int64_t *e)
{
    const variant *x = &VARIANTS[v];
    if (x->log) {
        *s = t - x->window + 1;
        *e = t + 1;
    } else {
        *s = t / x->window * x->window;
        *e = *s + x->window;
    }
}

typedef struct model {
    int64_t *at;      /* admission times */
    int *ident;       /* the variant in force at each */
    int n, cap;
} model;

static void model_add(model *m, int64_t t, int ident)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->at = realloc(m->at, sizeof *m->at * (size_t)m->cap);
        m->ident = realloc(m->ident, sizeof *m->ident * (size_t)m->cap);
        assert_true(m->at && m->ident);
    }
    m->at[m->n] = t;
    m->ident[m->n++] = ident;
}

/* Admissions in [s, e) made under ident a or b (-1: none). */
static int64_t model_count(const model *m, int64_t s, int64_t e, int a, int b)
{
    int64_t n = 0;
    for (int i = 0; i < m->n; i++)
        if (m->at[i] >= s && m->at[i] < e && (m->ident[i] == a || m->ident[i] == b))
            n++;
    return n;
}

/* 1 if an admission under another ident lies in [s, e). */
static int model_other(const model *m, int64_t s, int64_t e, int ident)
{
    for (int i = 0; i < m->n; i++)
        if (m->at[i] >= s && m->at[i] < e && m->ident[i] != ident)
            return 1;
    return 0;
}

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33) % n;
}

/* One random run: checks, changes and rollbacks against the model. */
static void run_sequence(int steps, uint64_t seed)
{
    itest *t = it_new(NULL);
    model m = {0};
    int64_t now = T0, versions[4096];
    int vof[4096], nver = 0, cur, prev = -1, just_changed = 0;
    rng = seed;
    cur = (int)rnd(NVAR);
    versions[nver] = apply_variant(t, cur, now);
    vof[nver++] = cur;
    for (int step = 0; step < steps; step++) {
        uint32_t op = rnd(100);
        if (op < 8 && nver < 4096) {             /* a rule change */
            int v = (int)rnd(NVAR);
            versions[nver] = apply_variant(t, v, now);
            vof[nver++] = v;
            prev = cur;
            cur = v;
            just_changed = 1;
            continue;
        }
        if (op < 13 && nver < 4096) {            /* a rollback */
            int k = (int)rnd((uint32_t)nver);
            int64_t nv = 0;
            assert_int_equal(rls_rules_rollback_at(t->db, versions[k], "t", now, &nv), RLS_OK);
            versions[nver] = nv;
            vof[nver++] = vof[k];
            prev = cur;
            cur = vof[k];
            just_changed = 1;
            continue;
        }
        if (op < 15)
            now += HOUR_MS + rnd(3 * HOUR_MS);   /* a quiet stretch */
        else
            now += rnd(6 * MIN_MS);
        if (op == 15)
            assert_int_equal(rls_gc_at(t->db, 1000, now, NULL), RLS_OK);

        const variant *x = &VARIANTS[cur];
        int64_t s, e;
        rls_result r;
        window_of(cur, now, &s, &e);
        int64_t own = model_count(&m, s, e, x->ident, -1);
        int quiet = !model_other(&m, now - 2 * DAY_MS, now + 1, x->ident);
        int allowed = it_check(t, "act", "k", 1, now, &r);
        if (allowed)
            model_add(&m, now, x->ident);
        if (allowed && own + 1 > x->limit)
            fail_msg("step %d: variant %d admitted with %lld of %lld spent in its window",
                     step, cur, (long long)own, (long long)x->limit);
        if (!allowed && quiet && own < x->limit)
            fail_msg("step %d: variant %d denied with %lld of %lld spent and no change near",
                     step, cur, (long long)own, (long long)x->limit);
        if (just_changed && allowed && prev >= 0 && !VARIANTS[prev].log) {
            int64_t ps, pe;
            window_of(prev, now, &ps, &pe);
            int64_t both = model_count(&m, s, e, x->ident, VARIANTS[prev].ident);
            if (ps <= s && e <= pe && both > x->limit)
                fail_msg("step %d: change %d -> %d: %lld admitted in the new window of %lld",
                         step, prev, cur, (long long)both, (long long)x->limit);
        }
        just_changed = 0;
    }
    free(m.at);
    free(m.ident);
    it_free(t);
}

static void test_random_sequences(void **state)
{
    int steps = (int)rel_knob("RLS_RULES_STEPS", 3000, 400);
    uint64_t seed = (uint64_t)rel_knob("RLS_RULES_SEED", 17, 17);
    (void)state;
    for (int run = 0; run < 4; run++)
        run_sequence(steps / 4, seed + (uint64_t)run);
}

/* Units in use of the action's one limit, as rls_explain_at shows them. */
static int64_t used_of(itest *t, const char *action, const char *key, int64_t now)
{
    rls_rows *lim = NULL;
    assert_int_equal(rls_explain_at(t->db, action, key, now, NULL, &lim), RLS_OK);
    assert_int_equal(rls_rows_count(lim), 1);
    int64_t used = rel_row_int(lim, 0, "used");
    rls_rows_free(lim);
    return used;
}

/* The case: fixed_window 10/1d, use 10; the same limit with 1h,
 * one check; 1d again: nothing more that day. */
static void test_day_hour_day(void **state)
{
    itest *t = it_new(NULL);
    int64_t now = T0 + 9 * HOUR_MS;
    (void)state;
    apply_variant(t, 0, now);
    assert_int_equal(it_admit_n(t, "act", "k", 12, now), 10);
    apply_variant(t, 1, now + 1000);
    /* the 10 of this hour are carried over to the hourly variant */
    assert_int_equal(it_admit_n(t, "act", "k", 1, now + 2000), 0);
    apply_variant(t, 0, now + 3000);
    assert_int_equal(it_admit_n(t, "act", "k", 10, now + 4000), 0);
    assert_int_equal(it_admit_n(t, "act", "k", 10, now + 5 * HOUR_MS), 0);
    /* the 10 carried to the hourly variant and back are the same 10: the
     * daily count shows 10 used, not 20 */
    assert_int_equal(used_of(t, "act", "k", now + 5 * HOUR_MS), 10);
    /* the next day: the quota is back */
    assert_int_equal(it_admit_n(t, "act", "k", 12, T0 + DAY_MS), 10);
    it_free(t);
}

/* The same through a rollback, with the hourly variant used in another
 * hour first. */
static void test_rollback(void **state)
{
    itest *t = it_new(NULL);
    int64_t now = T0 + 9 * HOUR_MS, v1, nv = 0;
    (void)state;
    v1 = apply_variant(t, 0, now);
    assert_int_equal(it_admit_n(t, "act", "k", 12, now), 10);
    apply_variant(t, 1, now + 1000);
    /* two hours on, the hourly limit admits: its own window is new */
    assert_int_equal(it_admit_n(t, "act", "k", 3, now + 2 * HOUR_MS), 3);
    assert_int_equal(rls_rules_rollback_at(t->db, v1, "back", now + 2 * HOUR_MS + 1, &nv),
                     RLS_OK);
    assert_true(nv > v1);
    assert_int_equal(it_admit_n(t, "act", "k", 10, now + 3 * HOUR_MS), 0);
    assert_int_equal(it_admit_n(t, "act", "k", 12, T0 + DAY_MS), 10);
    it_free(t);
}

/* A capacity change keeps the variant and its count. */
static void test_capacity_change_keeps_state(void **state)
{
    itest *t = it_new(NULL);
    int64_t now = T0 + 9 * HOUR_MS;
    (void)state;
    apply_variant(t, 1, now);                    /* 10/1h */
    assert_int_equal(it_admit_n(t, "act", "k", 3, now), 3);
    apply_variant(t, 2, now + 1);                /* 4/1h */
    assert_int_equal(it_admit_n(t, "act", "k", 5, now + 2), 1);
    apply_variant(t, 1, now + 3);                /* 10/1h */
    assert_int_equal(it_admit_n(t, "act", "k", 10, now + 4), 6);
    it_free(t);
}

/* A reset after a change forgets the other variants' usage too: nothing
 * is carried over from them afterwards. */
static void test_reset_forgets_every_variant(void **state)
{
    itest *t = it_new(NULL);
    int64_t now = T0 + 9 * HOUR_MS;
    (void)state;
    apply_variant(t, 0, now);
    assert_int_equal(it_admit_n(t, "act", "k", 10, now), 10);
    apply_variant(t, 1, now + 1);
    assert_int_equal(rls_reset_at(t->db, "act", "k", now + 2), RLS_OK);
    assert_int_equal(it_admit_n(t, "act", "k", 12, now + 3), 10);
    it_free(t);
}

/* A database of schema version 3 (limit ids per action and name, before
 * variants), with 10 of 10 spent today under 10/1d: the next library keeps
 * them spent as it is, after the same rules are applied again (the old
 * row is adopted as the variant it counted under), and after a change to
 * 1h and back. */
static void test_counts_from_before_variants(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp(), path[4096], sql[1024];
    int64_t now = T0 + 9 * HOUR_MS;
    sqlite3 *s = NULL;
    rls_db *db = NULL;
    char *y = rules_of(0);
    (void)state;
    tu_path(path, sizeof path, dir, "old.db");
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    assert_int_equal(sqlite3_exec(s, "PRAGMA page_size = 1024; PRAGMA journal_mode = WAL",
                                  NULL, NULL, NULL), SQLITE_OK);
    for (int v = 0; v < 3; v++)
        assert_int_equal(sqlite3_exec(s, rls__migrations[v], NULL, NULL, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql,
             "INSERT INTO rls_rulesets(version, created_ms, os_user, tool, yaml)"
             " VALUES (1, %lld, 'op', 'rlctl', '%s');"
             "INSERT INTO rls_limits(lid, action, name) VALUES (1, 'act', 'l');"
             "INSERT INTO rls_state(lid, key, alg, a, b, c, last_ms, exp_ms)"
             " VALUES (1, CAST('k' AS BLOB), 1, %lld, 10, 0, %lld, %lld);"
             "UPDATE rls_meta SET active_version = 1, rules_gen = 1;"
             "PRAGMA user_version = 3; PRAGMA application_id = %d;",
             (long long)T0, y, (long long)T0, (long long)now, (long long)(T0 + DAY_MS),
             0x524c5354);
    assert_int_equal(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
    assert_int_equal(rls_open(&db, path, NULL), RLS_OK);
    assert_int_equal(rls_check_at(db, "act", "k", 1, now + 1, &(rls_result){0}), RLS_OK);
    rls_result r;
    assert_int_equal(rls_check_at(db, "act", "k", 1, now + 2, &r), RLS_OK);
    assert_false(r.allowed);
    /* forced: the same rules store nothing (and adopt nothing) otherwise */
    assert_int_equal(rls_rules_apply_v2_at(db, y, strlen(y), "same", NULL, RLS_APPLY_FORCE,
                                           now + 3, NULL, NULL), RLS_OK);
    /* adopted: the same id, named for its variant; no second id */
    assert_int_equal(it_sql_int(path, "SELECT count(*) FROM rls_limits"), 1);
    assert_int_equal(it_sql_int(path, "SELECT count(*) FROM rls_limits WHERE lid = 1"
                                      " AND substr(name, 1, 2) = 'l' || char(31)"), 1);
    assert_int_equal(rls_check_at(db, "act", "k", 1, now + 4, &r), RLS_OK);
    assert_false(r.allowed);
    char *h = rules_of(1);
    assert_int_equal(rls_rules_apply_at(db, h, strlen(h), "1h", NULL, now + HOUR_MS, NULL),
                     RLS_OK);
    assert_int_equal(rls_check_at(db, "act", "k", 1, now + HOUR_MS + 1, &r), RLS_OK);
    assert_true(r.allowed);   /* another hour: the day's usage is not in it */
    assert_int_equal(rls_rules_apply_at(db, y, strlen(y), "1d", NULL, now + HOUR_MS + 2, NULL),
                     RLS_OK);
    assert_int_equal(rls_check_at(db, "act", "k", 1, now + HOUR_MS + 3, &r), RLS_OK);
    assert_false(r.allowed);
    rls_close(db);
    free(h);
    free(y);
    tu_rmdir(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_day_hour_day),
        cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_capacity_change_keeps_state),
        cmocka_unit_test(test_reset_forgets_every_variant),
        cmocka_unit_test(test_counts_from_before_variants),
        cmocka_unit_test(test_random_sequences),
    };
    rel_init(argc > 0 ? argv[0] : NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
