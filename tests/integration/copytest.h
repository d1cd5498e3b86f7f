/*
 * copytest.h - helpers of the suites of rls_copy_at() (test_copy.c,
 * test_copy_faults.c): databases of either backend, the rule sets, the
 * source's traffic, and comparisons of source and destination.
 */
#ifndef RLS_COPYTEST_H
#define RLS_COPYTEST_H

#include "splittest.h"

/* Lines both rule sets below have. */
#define YAML_HEAD "version: 1\ndefaults: { tier: free }\n"
#define YAML_FIXED "  fixed: { limits: [ { name: r, algorithm: fixed_window, limit: 5, window: 1m } ] }\n"
#define YAML_LOG "  log: { limits: [ { name: r, algorithm: sliding_log, limit: 5, window: 1m } ] }\n"
#define YAML_GCRA_LEAKY_PEN                                                       \
    "  gcra: { limits: [ { name: r, algorithm: gcra, limit: 5, window: 1m, burst: 3 } ] }\n" \
    "  leaky: { limits: [ { name: r, algorithm: leaky_bucket, limit: 5, window: 1m,"  \
    " burst: 3 } ] }\n"                                                       \
    "  pen:\n"                                                                \
    "    limits: [ { name: r, algorithm: fixed_window, limit: 2, window: 1m,"  \
    " block_for: [1m, 10m] } ]\n"
#define YAML_MULTI_DAY                                                        \
    "  multi:\n"                                                              \
    "    key: ip\n"                                                           \
    "    limits:\n"                                                           \
    "      - { name: day, algorithm: fixed_window, limit: 4, window: 1d }\n"

/* Every algorithm, a penalty that escalates, tiers, several limits. */
static const char *const YAML =
    YAML_HEAD
    "tiers: { free: {}, pro: {}, staff: { unlimited: true } }\n"
    "actions:\n"
    YAML_FIXED
    "  sliding: { limits: [ { name: r, algorithm: sliding_window, limit: 5, window: 1m } ] }\n"
    YAML_LOG
    "  bucket: { limits: [ { name: r, algorithm: token_bucket, limit: 5, window: 1m } ] }\n"
    YAML_GCRA_LEAKY_PEN
    YAML_MULTI_DAY
    "      - { name: burst, algorithm: sliding_log, limit: 3, window: 10s }\n"
    "    tiers:\n"
    "      pro: [ { name: day, limit: 50 } ]\n"
    "  tri:\n"
    "    limits:\n"
    "      - { name: a, algorithm: fixed_window, limit: 9, window: 1d }\n"
    "      - { name: b, algorithm: sliding_window, limit: 9, window: 1h }\n"
    "      - { name: c, algorithm: gcra, limit: 9, window: 1m }\n";

static const char *const ALGOS[] = {"fixed", "sliding", "log", "bucket", "gcra", "leaky"};
#define NALGOS ((int)(sizeof ALGOS / sizeof ALGOS[0]))
#define SEC 1000LL
#define MIN (60 * SEC)

/* ---- databases of either backend ------------------------------------------- */

typedef struct tdb {
    char path[4096];
    char schema[64];
    rls_db *db;
} tdb;

static char *tdir;   /* the test's directory (SQLite files) */
static int tseq;

static inline rls_db *open_path(const char *path, int read_only)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.read_only = read_only;
    o.tool = "test";
    int rc = rls_open(&db, path, &o);
    if (rc != RLS_OK)
        fail_msg("open %s: %s: %s", path, rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* A new database (a PostgreSQL schema when pg), with yaml applied if not
 * NULL. */
static inline tdb *tdb_new(int pg, const char *yaml)
{
    tdb *d = calloc(1, sizeof *d);
    assert_non_null(d);
    if (!tdir)
        tdir = tu_mkdtemp();
    if (pg) {
        it_pg_schema(d->path, sizeof d->path, d->schema, sizeof d->schema);
    } else {
        char name[32];
        snprintf(name, sizeof name, "db%d.db", ++tseq);
        tu_path(d->path, sizeof d->path, tdir, name);
    }
    d->db = open_path(d->path, 0);
    if (yaml) {
        int rc = rls_rules_apply_at(d->db, yaml, strlen(yaml), "test.yaml", NULL, T0, NULL);
        if (rc != RLS_OK)
            fail_msg("apply: %s: %s", rls_errname(rc), rls_errmsg(d->db));
    }
    return d;
}

static inline void tdb_reopen(tdb *d, int read_only)
{
    rls_close(d->db);
    d->db = open_path(d->path, read_only);
}

static inline void tdb_free(tdb *d)
{
    if (!d)
        return;
    rls_close(d->db);
    if (d->schema[0])
        it_pg_drop_schema(d->schema);
    free(d);
}

static inline int teardown(void **state)
{
    tu_rmdir(tdir);
    tdir = NULL;
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------ */

static inline rls_result check_at(rls_db *db, const char *action, const char *key, int64_t cost,
                           int64_t now)
{
    rls_result r;
    int rc = rls_check_at(db, action, key, cost, now, &r);
    if (rc != RLS_OK)
        fail_msg("check %s %s: %s: %s", action, key, rls_errname(rc), rls_errmsg(db));
    return r;
}

static inline void same_result(const rls_result *a, const rls_result *b, const char *what)
{
    if (a->allowed != b->allowed || a->reason != b->reason || a->limit != b->limit ||
        a->remaining != b->remaining || a->reset_ms != b->reset_ms ||
        a->retry_after_ms != b->retry_after_ms || a->delay_ms != b->delay_ms ||
        a->window_ms != b->window_ms || strcmp(a->rule, b->rule) != 0)
        fail_msg("%s: source {allowed %d reason %d limit %lld remaining %lld reset %lld "
                 "retry %lld delay %lld window %lld rule %s}, destination {allowed %d "
                 "reason %d limit %lld remaining %lld reset %lld retry %lld delay %lld "
                 "window %lld rule %s}", what, a->allowed, a->reason, (long long)a->limit,
                 (long long)a->remaining, (long long)a->reset_ms,
                 (long long)a->retry_after_ms, (long long)a->delay_ms,
                 (long long)a->window_ms, a->rule, b->allowed, b->reason,
                 (long long)b->limit, (long long)b->remaining, (long long)b->reset_ms,
                 (long long)b->retry_after_ms, (long long)b->delay_ms,
                 (long long)b->window_ms, b->rule);
}

/* The same check on both; their results must be equal.  Returns src's. */
static inline rls_result both(rls_db *src, rls_db *dst, const char *action, const char *key,
                       int64_t cost, int64_t now)
{
    char what[160];
    rls_result a = check_at(src, action, key, cost, now);
    rls_result b = check_at(dst, action, key, cost, now);
    snprintf(what, sizeof what, "check %s %s cost %lld at T0%+lld ms", action, key,
             (long long)cost, (long long)(now - T0));
    same_result(&a, &b, what);
    return a;
}

/* The report row of `what`: copied, kept, dropped, expired. */
typedef struct counts {
    int64_t copied, kept, dropped, expired;
    char detail[256];
} counts;

static inline counts row_of(const rls_rows *rep, const char *what)
{
    counts n = {-1, -1, -1, -1, ""};
    for (int r = 0; r < rls_rows_count(rep); r++) {
        if (strcmp(rls_rows_text(rep, r, col(rep, "what")), what) != 0)
            continue;
        n.copied = rls_rows_int(rep, r, col(rep, "copied"));
        n.kept = rls_rows_int(rep, r, col(rep, "kept"));
        n.dropped = rls_rows_int(rep, r, col(rep, "dropped"));
        n.expired = rls_rows_int(rep, r, col(rep, "expired"));
        snprintf(n.detail, sizeof n.detail, "%s", rls_rows_text(rep, r, col(rep, "detail")));
        return n;
    }
    fail_msg("the report has no row '%s'", what);
    return n;
}

static inline rls_rows *copy_ok(tdb *dst, tdb *src, unsigned int what, int64_t now)
{
    rls_rows *rep = NULL;
    int rc = rls_copy_at(dst->db, src->db, what, now, &rep);
    if (rc != RLS_OK)
        fail_msg("copy: %s: %s", rls_errname(rc), rls_errmsg(dst->db));
    assert_non_null(rep);
    return rep;
}

/* The keys with counters of action, counted by SQL. */
static inline int64_t keys_by_sql(const char *path, const char *action)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(DISTINCT s.key) FROM rls_state s JOIN rls_limits l"
             " ON l.lid = s.lid WHERE l.action = '%s'", action);
    return it_sql_int(path, sql);
}

/* The count the library keeps of them (keycount.c) must be that: what
 * rls_usage_count_at() reads, plus the blocked keys without counters. */
static inline void count_exact(const char *path, const char *action)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT coalesce(max(keys), 0) FROM rls_key_counts"
             " WHERE action = '%s'", action);
    int64_t kept = it_sql_int(path, sql), real = keys_by_sql(path, action);
    if (kept != real)
        fail_msg("%s: %lld keys of '%s' counted, %lld have counters", path, (long long)kept,
                 action, (long long)real);
}

/* The states of the database at path that equal a fresh one at now. */
static inline int64_t expired_states(const char *path, int64_t now)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rls_state WHERE exp_ms <= %lld",
             (long long)now);
    return it_sql_int(path, sql);
}

/* Everything a copy may change in a database, as one line. */
static inline void fingerprint(const char *path, char *buf, size_t size)
{
    static const char *const q[] = {
        "SELECT count(*) FROM rls_state", "SELECT count(*) FROM rls_blocks",
        "SELECT count(*) FROM rls_assignments", "SELECT count(*) FROM rls_overrides",
        "SELECT count(*) FROM rls_reservations", "SELECT count(*) FROM rls_rulesets",
        "SELECT count(*) FROM rls_audit", "SELECT count(*) FROM rls_limits",
        "SELECT coalesce(sum(keys), 0) FROM rls_key_counts",
        "SELECT rules_gen FROM rls_meta", "SELECT gc_horizon FROM rls_meta",
        "SELECT active_version FROM rls_meta",
    };
    size_t o = 0;
    for (size_t i = 0; i < sizeof q / sizeof q[0] && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%lld ", (long long)it_sql_int(path, q[i]));
}

/* ---- the source's traffic --------------------------------------------------- */

typedef struct traffic {
    int64_t res_id;      /* an open reservation */
    int64_t now;         /* when the traffic ended */
} traffic;

static inline traffic make_traffic(rls_db *db)
{
    traffic t = {0, 0};
    rls_result r;
    for (int a = 0; a < NALGOS; a++) {
        for (int i = 0; i < 3; i++)
            check_at(db, ALGOS[a], "k1", 1, T0 + i * SEC);
        for (int i = 0; i < 6; i++)
            check_at(db, ALGOS[a], "k2", 1, T0 + 100 * i);
    }
    /* a penalty: the third request of a minute blocks for 1m, level 1 */
    for (int i = 0; i < 3; i++)
        r = check_at(db, "pen", "p", 1, T0 + 10 * i);
    assert_int_equal(r.allowed, 0);
    r = check_at(db, "pen", "p", 1, T0 + SEC);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* an override, tier assignments, a manual block with its reason */
    assert_int_equal(rls_override_set_at(db, "fixed", "ovr", "r", 8, 0, T0), RLS_OK);
    for (int i = 0; i < 6; i++)
        check_at(db, "fixed", "ovr", 1, T0 + i);
    assert_int_equal(rls_tier_set_at(db, "192.0.2.7", "pro", 0, T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(db, "10.0.0.0/8", "staff", 0, T0), RLS_OK);
    for (int i = 0; i < 5; i++) {
        check_at(db, "multi", "192.0.2.7", 1, T0 + i * 4 * SEC);
        check_at(db, "multi", "198.51.100.1", 1, T0 + i * 4 * SEC);
        check_at(db, "multi", "10.1.2.3", 1, T0 + i * 4 * SEC);
    }
    assert_int_equal(rls_block_set_at(db, NULL, "bad", T0 + 3600 * SEC, "card testing", T0),
                     RLS_OK);
    /* an open reservation of 2 units */
    assert_int_equal(rls_reserve_at(db, "multi", "203.0.113.9", 2, 10 * MIN, T0 + 2 * SEC,
                                    &t.res_id, &r), RLS_OK);
    assert_true(r.allowed);
    assert_true(t.res_id > 0);
    t.now = T0 + 20 * SEC;
    return t;
}

/* The same checks on both after the copy at t.now. */
static inline void compare_after(tdb *src, tdb *dst, const traffic *t)
{
    int64_t now = t->now;
    rls_result r;
    /* right after the copy: the counters carry over (k2 used its burst and
     * more: it is not where a fresh key is, on any algorithm) */
    for (int a = 0; a < NALGOS; a++) {
        both(src->db, dst->db, ALGOS[a], "k1", 1, now);
        r = both(src->db, dst->db, ALGOS[a], "k2", 1, now + 1);
        rls_result fresh = both(src->db, dst->db, ALGOS[a], "new", 1, now + 2);
        assert_true(r.allowed != fresh.allowed || r.remaining != fresh.remaining);
    }
    r = both(src->db, dst->db, "fixed", "ovr", 1, now + 3);   /* 7th of 8 */
    assert_int_equal(r.limit, 8);
    assert_true(r.allowed);
    r = both(src->db, dst->db, "fixed", "bad", 1, now + 4);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    r = both(src->db, dst->db, "multi", "192.0.2.7", 1, now + 5);   /* pro: 50 a day */
    assert_true(r.allowed);
    r = both(src->db, dst->db, "multi", "198.51.100.1", 1, now + 6);  /* free: 4 a day */
    assert_int_equal(r.allowed, 0);
    for (int i = 0; i < 8; i++)                                      /* staff */
        assert_true(both(src->db, dst->db, "multi", "10.1.2.3", 1, now + 7 + i).allowed);
    /* the reservation is committed on both by the same id */
    assert_int_equal(rls_commit_at(src->db, t->res_id, now + 20), RLS_OK);
    assert_int_equal(rls_commit_at(dst->db, t->res_id, now + 20), RLS_OK);
    assert_int_equal(rls_commit_at(dst->db, t->res_id, now + 21), RLS_ENOTFOUND);
    both(src->db, dst->db, "multi", "203.0.113.9", 1, now + 22);
    /* the penalty: blocked until T0 + 1m, then the next offence blocks for
     * the second step, 10m, on both */
    r = both(src->db, dst->db, "pen", "p", 1, now + 23);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    int64_t later = T0 + MIN + SEC;
    for (int i = 0; i < 3; i++)
        r = both(src->db, dst->db, "pen", "p", 1, later + i);
    assert_int_equal(r.allowed, 0);
    r = both(src->db, dst->db, "pen", "p", 1, later + 5 * MIN);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_true(r.retry_after_ms > 4 * MIN);   /* escalated: 10m, not 1m */
    /* much later: windows roll on both alike */
    for (int a = 0; a < NALGOS; a++)
        for (int i = 0; i < 4; i++)
            both(src->db, dst->db, ALGOS[a], "k2", 2, later + 30 * SEC + i * 7 * SEC);
    /* the block's reason came along */
    rls_rows *b = NULL;
    assert_int_equal(rls_block_list_at(dst->db, later, &b), RLS_OK);
    int found = 0;
    for (int i = 0; i < rls_rows_count(b); i++)
        if (strcmp(rls_rows_text(b, i, col(b, "key")), "bad") == 0) {
            found = 1;
            assert_string_equal(rls_rows_text(b, i, col(b, "reason")), "card testing");
            assert_string_equal(rls_rows_text(b, i, col(b, "kind")), "manual");
        }
    rls_rows_free(b);
    assert_true(found);
}

static inline void compare_counts(tdb *src, tdb *dst, int64_t now)
{
    static const char *const acts[] = {"fixed", "sliding", "log", "bucket", "gcra", "leaky",
                                       "pen", "multi"};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        int64_t n = it_usage_count(src->db, acts[i], now);
        assert_int_equal(it_usage_count(dst->db, acts[i], now), n);
        count_exact(dst->path, acts[i]);
    }
    assert_int_equal(it_usage_count(dst->db, NULL, now), it_usage_count(src->db, NULL, now));
}


#endif
