/*
 * test_copy.c - rls_copy_at(): moving a deployment to another database.
 *
 * What is asserted: after a copy, the same checks on the source and on the
 * destination give the same results, field for field, for every algorithm,
 * a key under an escalating penalty (the next penalty escalates on the
 * destination too), an override, tier assignments (exact and CIDR), a
 * manual block with its reason, and an open reservation, which the
 * destination commits by the id the source gave; the keys' counts are
 * equal, and exact (a recount by SQL).  Rows the destination has win and
 * are counted as kept; rows without a place in its rules are dropped and
 * counted; expired rows are not copied; a dry run and a failure in the
 * middle leave the destination unchanged; a split source copies; misuse is
 * refused.
 *
 * The SQLite pass copies SQLite to SQLite; the PostgreSQL pass (itest.h)
 * copies SQLite to PostgreSQL, PostgreSQL to SQLite and PostgreSQL to
 * PostgreSQL (two schemas of the test database).
 */
#include "splittest.h"
#include "reliability/faultvfs.c"   /* a read that fails in the middle of a copy */

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

static rls_db *open_path(const char *path, int read_only)
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
static tdb *tdb_new(int pg, const char *yaml)
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

static void tdb_reopen(tdb *d, int read_only)
{
    rls_close(d->db);
    d->db = open_path(d->path, read_only);
}

static void tdb_free(tdb *d)
{
    if (!d)
        return;
    rls_close(d->db);
    if (d->schema[0]) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", d->schema);
        PQclear(it_pg_run(it_pg(), sql));
    }
    free(d);
}

static int teardown(void **state)
{
    tu_rmdir(tdir);
    tdir = NULL;
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------ */

static rls_result check_at(rls_db *db, const char *action, const char *key, int64_t cost,
                           int64_t now)
{
    rls_result r;
    int rc = rls_check_at(db, action, key, cost, now, &r);
    if (rc != RLS_OK)
        fail_msg("check %s %s: %s: %s", action, key, rls_errname(rc), rls_errmsg(db));
    return r;
}

static void same_result(const rls_result *a, const rls_result *b, const char *what)
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
static rls_result both(rls_db *src, rls_db *dst, const char *action, const char *key,
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

static counts row_of(const rls_rows *rep, const char *what)
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

static rls_rows *copy_ok(tdb *dst, tdb *src, unsigned int what, int64_t now)
{
    rls_rows *rep = NULL;
    int rc = rls_copy_at(dst->db, src->db, what, now, &rep);
    if (rc != RLS_OK)
        fail_msg("copy: %s: %s", rls_errname(rc), rls_errmsg(dst->db));
    assert_non_null(rep);
    return rep;
}

/* The keys with counters of action, counted by SQL. */
static int64_t keys_by_sql(const char *path, const char *action)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(DISTINCT s.key) FROM rls_state s JOIN rls_limits l"
             " ON l.lid = s.lid WHERE l.action = '%s'", action);
    return it_sql_int(path, sql);
}

/* The count the library keeps of them (keycount.c) must be that: what
 * rls_usage_count_at() reads, plus the blocked keys without counters. */
static void count_exact(const char *path, const char *action)
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
static int64_t expired_states(const char *path, int64_t now)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rls_state WHERE exp_ms <= %lld",
             (long long)now);
    return it_sql_int(path, sql);
}

/* Everything a copy may change in a database, as one line. */
static void fingerprint(const char *path, char *buf, size_t size)
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

static traffic make_traffic(rls_db *db)
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
static void compare_after(tdb *src, tdb *dst, const traffic *t)
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

static void compare_counts(tdb *src, tdb *dst, int64_t now)
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

/* The core case for one pair of backends. */
static void same_checks_after_copy(int src_pg, int dst_pg)
{
    tdb *src = tdb_new(src_pg, YAML), *dst = tdb_new(dst_pg, NULL);
    traffic t = make_traffic(src->db);
    int64_t states = it_sql_int(src->path, "SELECT count(*) FROM rls_state");
    int64_t gone = expired_states(src->path, t.now);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL, t.now);

    counts n = row_of(rep, "rules");
    assert_int_equal(n.copied, 1);
    assert_string_equal(n.detail, "version 1");
    n = row_of(rep, "states");
    assert_int_equal(n.copied, states - gone);
    assert_int_equal(n.expired, gone);   /* the reservation's burst, 10 s */
    assert_int_equal(n.kept + n.dropped, 0);
    assert_int_equal(row_of(rep, "reservations").copied, 1);
    assert_int_equal(row_of(rep, "assignments").copied, 2);
    assert_int_equal(row_of(rep, "overrides").copied, 1);
    assert_int_equal(row_of(rep, "blocks").copied, 2);   /* manual and penalty */
    assert_int_equal(rls_rows_count(rep), 6);
    rls_rows_free(rep);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_state"), states - gone);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_audit WHERE op = 'copy'"), 1);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_audit"
                                " WHERE op = 'rules.copy' AND tool = 'test'"), 1);
    compare_counts(src, dst, t.now);

    /* new reservations on the destination get larger ids */
    int64_t id = 0, sid = 0;
    rls_result r;
    assert_int_equal(rls_reserve_at(src->db, "fixed", "later", 1, MIN, t.now, &sid, &r), RLS_OK);
    assert_int_equal(rls_reserve_at(dst->db, "fixed", "later", 1, MIN, t.now, &id, &r), RLS_OK);
    assert_true(id > t.res_id);

    compare_after(src, dst, &t);
    /* the counts stay exact on both (GC steps run on each handle's own
     * schedule, so the two may differ by keys whose state expired) */
    count_exact(dst->path, "multi");
    count_exact(dst->path, "pen");
    count_exact(dst->path, "fixed");
    count_exact(src->path, "fixed");
    tdb_free(src);
    tdb_free(dst);
}

/* The pair of backends of a test of same_checks_after_copy(). */
typedef struct backends {
    int src_pg, dst_pg;
} backends;

static void copy_between(void **state)
{
    const backends *b = *state;
    if (b->src_pg || b->dst_pg)
        IT_PG_ONLY();
    else
        IT_SQLITE_ONLY();
    same_checks_after_copy(b->src_pg, b->dst_pg);
}

static backends lite_lite = {0, 0}, lite_pg = {0, 1}, pg_lite = {1, 0}, pg_pg = {1, 1};

/* ---- what the destination has wins; what has no place is dropped ----------- */

/* The destination's rules: no 'sliding', 'bucket' under another algorithm,
 * no tier 'staff', 'multi' with its 'day' limit only. */
static const char *const YAML_DST =
    YAML_HEAD
    "tiers: { free: {}, pro: {} }\n"
    "actions:\n"
    YAML_FIXED
    YAML_LOG
    "  bucket: { limits: [ { name: r, algorithm: gcra, limit: 5, window: 1m } ] }\n"
    YAML_GCRA_LEAKY_PEN
    YAML_MULTI_DAY;

static void dst_rows_win_and_misfits_drop(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(0, YAML_DST);
    rls_result r;
    int64_t id = 0;
    /* the source: counters of every action, policy rows */
    for (int a = 0; a < NALGOS; a++)
        check_at(src->db, ALGOS[a], "k", 1, T0);
    check_at(src->db, "fixed", "both", 1, T0);
    check_at(src->db, "multi", "192.0.2.1", 1, T0);          /* day and burst */
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", 0, "from src", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(src->db, "sliding", "b2", 0, "", T0), RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "sliding", "o", "r", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "fixed", "o", "r", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(src->db, "10.0.0.0/8", "staff", 0, T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(src->db, "user:1", "pro", 0, T0), RLS_OK);
    assert_int_equal(rls_reserve_at(src->db, "fixed", "r", 1, MIN, T0, &id, &r), RLS_OK);
    /* the destination has rows of the same identity */
    check_at(dst->db, "fixed", "both", 1, T0);
    check_at(dst->db, "fixed", "both", 1, T0 + 1);
    check_at(dst->db, "multi", "192.0.2.1", 1, T0);           /* day only */
    assert_int_equal(rls_block_set_at(dst->db, NULL, "b", 0, "from dst", T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(dst->db, "user:1", "free", 0, T0), RLS_OK);
    int64_t did = 0;
    assert_int_equal(rls_reserve_at(dst->db, "fixed", "mine", 1, MIN, T0, &did, &r), RLS_OK);
    assert_int_equal(did, id);   /* both the first id: the source's is kept out */

    rls_rows *rep = copy_ok(dst, src, RLS_COPY_POLICY | RLS_COPY_COUNTERS, T0 + SEC);
    assert_int_equal(rls_rows_count(rep), 5);   /* no rules row: not asked for */
    counts n = row_of(rep, "states");
    /* fixed/k, log/k, gcra/k, leaky/k copied, fixed/both and multi/day
     * kept; sliding (not in the destination's rules), bucket (another
     * algorithm there) and multi's burst (not there) dropped */
    assert_int_equal(n.copied, 5);   /* and fixed/r, the reservation's */
    assert_int_equal(n.kept, 2);
    assert_int_equal(n.dropped, 3);
    assert_non_null(strstr(n.detail, "limit not in the rules: 2"));
    assert_non_null(strstr(n.detail, "limit under another algorithm: 1"));
    n = row_of(rep, "blocks");
    assert_int_equal(n.kept, 1);
    assert_int_equal(n.dropped, 1);   /* for 'sliding' */
    n = row_of(rep, "overrides");
    assert_int_equal(n.copied, 1);
    assert_int_equal(n.dropped, 1);
    n = row_of(rep, "assignments");
    assert_int_equal(n.kept, 1);      /* user:1 stays free */
    assert_int_equal(n.dropped, 1);   /* no tier staff */
    assert_non_null(strstr(n.detail, "action or tier not in the rules: 1"));
    n = row_of(rep, "reservations");
    assert_int_equal(n.kept, 1);
    assert_int_equal(n.copied, 0);
    rls_rows_free(rep);

    /* the destination's rows are as they were */
    r = check_at(dst->db, "fixed", "both", 1, T0 + 2 * SEC);
    assert_int_equal(r.remaining, 2);   /* its own two, not the source's one */
    rls_rows *b = NULL;
    assert_int_equal(rls_block_list_at(dst->db, T0 + 2 * SEC, &b), RLS_OK);
    assert_int_equal(rls_rows_count(b), 1);
    assert_string_equal(rls_rows_text(b, 0, col(b, "reason")), "from dst");
    rls_rows_free(b);
    /* 'fixed' counts both, mine (the destination's), k and r (copied), and
     * the blocked key b, which has no counters */
    assert_int_equal(keys_by_sql(dst->path, "fixed"), 4);
    assert_int_equal(it_usage_count(dst->db, "fixed", T0 + 2 * SEC), 5);
    count_exact(dst->path, "fixed");
    count_exact(dst->path, "multi");
    tdb_free(src);
    tdb_free(dst);
}

/* The rules step: a key the destination counts for an action under one limit
 * gets a counter of another limit of it: counted once, not twice. */
static void copied_counter_of_a_counted_key(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(0, YAML_DST);
    check_at(src->db, "multi", "192.0.2.1", 1, T0);   /* day and burst */
    check_at(src->db, "multi", "192.0.2.2", 1, T0);
    check_at(dst->db, "multi", "192.0.2.1", 1, T0);   /* day only */
    assert_int_equal(it_usage_count(dst->db, "multi", T0), 1);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL, T0 + SEC);
    assert_int_equal(row_of(rep, "rules").copied, 1);
    counts n = row_of(rep, "states");
    assert_int_equal(n.copied, 3);   /* .1 burst, .2 day and burst */
    assert_int_equal(n.kept, 1);     /* .1 day */
    rls_rows_free(rep);
    assert_int_equal(it_usage_count(dst->db, "multi", T0 + SEC), 2);
    assert_int_equal(keys_by_sql(dst->path, "multi"), 2);
    count_exact(dst->path, "multi");
    /* the same rules again: kept, no new version */
    rep = copy_ok(dst, src, RLS_COPY_RULES, T0 + 2 * SEC);
    n = row_of(rep, "rules");
    assert_int_equal(n.copied, 0);
    assert_int_equal(n.kept, 1);
    assert_string_equal(n.detail, "identical to version 2");
    assert_int_equal(rls_rows_count(rep), 1);
    rls_rows_free(rep);
    assert_int_equal(it_sql_int(dst->path, "SELECT count(*) FROM rls_rulesets"), 2);
    tdb_free(src);
    tdb_free(dst);
}

/* Expired rows are not copied; a reservation past its TTL is, and refunds. */
static void expired_rows_stay(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(0, NULL);
    rls_result r;
    int64_t id = 0;
    check_at(src->db, "fixed", "old", 1, T0);                 /* expires at T0 + 1m */
    check_at(src->db, "tri", "young", 1, T0 + 50 * MIN);
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", T0 + MIN, "short", T0), RLS_OK);
    assert_int_equal(rls_tier_assign_at(src->db, "multi", "192.0.2.4", "pro", T0 + MIN, T0),
                     RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "fixed", "o", "r", 9, T0 + MIN, T0), RLS_OK);
    assert_int_equal(rls_reserve_at(src->db, "multi", "198.51.100.4", 3, MIN, T0 + 50 * MIN,
                                    &id, &r), RLS_OK);
    int64_t now = T0 + 55 * MIN;   /* the reservation's TTL is over */
    int64_t gone = expired_states(src->path, now);
    assert_true(gone >= 1);   /* fixed/old at least */
    int64_t states = it_sql_int(src->path, "SELECT count(*) FROM rls_state");
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL, now);
    assert_int_equal(row_of(rep, "states").expired, gone);
    assert_int_equal(row_of(rep, "states").copied, states - gone);
    assert_int_equal(row_of(rep, "blocks").expired, 1);
    assert_int_equal(row_of(rep, "assignments").expired, 1);
    assert_int_equal(row_of(rep, "overrides").expired, 1);
    counts n = row_of(rep, "reservations");
    assert_int_equal(n.copied, 1);
    assert_non_null(strstr(n.detail, "past their TTL"));
    rls_rows_free(rep);
    /* the overdue reservation is refunded on both at the key's next check */
    rls_result a = check_at(src->db, "multi", "198.51.100.4", 1, now + 1);
    rls_result b = check_at(dst->db, "multi", "198.51.100.4", 1, now + 1);
    same_result(&a, &b, "after the overdue reservation");
    assert_int_equal(b.remaining, 2);   /* of burst 3: its 3 units came back */
    assert_int_equal(rls_commit_at(dst->db, id, now + 2), RLS_ENOTFOUND);
    /* GC's horizon moved past the state not copied */
    assert_true(it_sql_int(dst->path, "SELECT gc_horizon FROM rls_meta") >= T0 + MIN);
    tdb_free(src);
    tdb_free(dst);
}

/* ---- nothing stored: a dry run, a failure ----------------------------------- */

static void dry_run_stores_nothing(void **state)
{
    tdb *src = tdb_new(it_pg() != NULL, YAML), *dst = tdb_new(it_pg() != NULL, NULL);
    char before[256], after[256];
    traffic t = make_traffic(src->db);
    fingerprint(dst->path, before, sizeof before);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL | RLS_COPY_DRY_RUN, t.now);
    assert_int_equal(row_of(rep, "rules").copied, 1);
    assert_true(row_of(rep, "states").copied > 20);
    assert_int_equal(row_of(rep, "reservations").copied, 1);
    rls_rows_free(rep);
    fingerprint(dst->path, after, sizeof after);
    assert_string_equal(before, after);
    /* the handle did not keep the rules it stored and rolled back */
    rls_result r;
    assert_int_equal(rls_check_at(dst->db, "fixed", "k1", 1, t.now, &r), RLS_ENORULES);
    /* and the real copy then works */
    rep = copy_ok(dst, src, RLS_COPY_ALL, t.now);
    rls_rows_free(rep);
    compare_after(src, dst, &t);
    tdb_free(src);
    tdb_free(dst);
}

/* SQLite: a read that fails in the middle of a large copy (the fault VFS). */
static void failure_midway_changes_nothing(void **state)
{
    IT_SQLITE_ONLY();
    tdb *src = tdb_new(0, YAML), *dst = tdb_new(0, NULL);
    char key[32], before[256], after[256];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "user:%05d", i);
        check_at(src->db, "tri", key, 1, T0 + i);
    }
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", 0, "x", T0), RLS_OK);
    fingerprint(dst->path, before, sizeof before);
    /* count the reads of a whole copy from cold handles, then fail one in
     * the middle (and every one after it) */
    tdb_reopen(src, 1);
    tdb_reopen(dst, 0);
    fv_arm(FV_READ, 1000000000L, SQLITE_IOERR_READ, 0);
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_ALL | RLS_COPY_DRY_RUN, T0 + MIN);
    rls_rows_free(rep);
    long reads = fv_seen(FV_READ);
    assert_true(reads > 20);
    tdb_reopen(src, 1);
    tdb_reopen(dst, 0);
    fv_arm(FV_READ, reads / 2, SQLITE_IOERR_READ, 1);
    rep = (rls_rows *)1;
    int rc = rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0 + MIN, &rep);
    long injected = fv_injected_since_arm();
    fv_disarm();
    assert_int_equal(rc, RLS_EIO);
    assert_null(rep);
    assert_true(injected > 0);
    assert_true(strlen(rls_errmsg(dst->db)) > 0);
    fingerprint(dst->path, after, sizeof after);
    assert_string_equal(before, after);
    /* the handle is still sound: the copy runs again, whole */
    rep = copy_ok(dst, src, RLS_COPY_ALL, T0 + MIN);
    assert_int_equal(row_of(rep, "states").copied, 9000 - expired_states(src->path, T0 + MIN));
    rls_rows_free(rep);
    assert_int_equal(it_usage_count(dst->db, "tri", T0 + MIN), 3001);   /* and blocked b */
    assert_int_equal(keys_by_sql(dst->path, "tri"), 3000);
    count_exact(dst->path, "tri");
    tdb_free(src);
    tdb_free(dst);
}

/* PostgreSQL: text PostgreSQL refuses (a block reason that is not UTF-8,
 * which SQLite stores), after the assignments and overrides were copied. */
static void refused_row_changes_nothing(void **state)
{
    IT_PG_ONLY();
    tdb *src = tdb_new(0, YAML), *dst = tdb_new(1, NULL);
    char before[256], after[256];
    check_at(src->db, "fixed", "k", 1, T0);
    assert_int_equal(rls_tier_set_at(src->db, "user:1", "pro", 0, T0), RLS_OK);
    assert_int_equal(rls_override_set_at(src->db, "fixed", "o", "r", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_block_set_at(src->db, NULL, "b", 0, "bad \xff byte", T0), RLS_OK);
    fingerprint(dst->path, before, sizeof before);
    rls_rows *rep = NULL;
    int rc = rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0 + SEC, &rep);
    assert_int_not_equal(rc, RLS_OK);
    assert_null(rep);
    assert_true(strlen(rls_errmsg(dst->db)) > 0);
    fingerprint(dst->path, after, sizeof after);
    assert_string_equal(before, after);
    rls_result r;
    assert_int_equal(rls_check_at(dst->db, "fixed", "k", 1, T0 + SEC, &r), RLS_ENORULES);
    tdb_free(src);
    tdb_free(dst);
}

/* ---- large: pages, keys across page boundaries ---------------------------------- */

static void many_keys_in_pages(void **state)
{
    tdb *src = tdb_new(0, YAML), *dst = tdb_new(it_pg() != NULL, YAML);
    char key[32];
    /* three limits per key: a key's rows straddle pages of 512 */
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "k%05d", i);
        check_at(src->db, "tri", key, 1 + i % 3, T0 + i);
    }
    /* the destination counts some of the keys already */
    for (int i = 0; i < 2000; i += 7) {
        snprintf(key, sizeof key, "k%05d", i);
        check_at(dst->db, "tri", key, 1, T0);
    }
    rls_rows *rep = copy_ok(dst, src, RLS_COPY_COUNTERS, T0 + 3 * SEC);
    counts n = row_of(rep, "states");
    assert_int_equal(n.copied + n.kept, 6000);
    assert_int_equal(n.kept, 3 * 286);
    rls_rows_free(rep);
    assert_int_equal(it_usage_count(dst->db, "tri", T0 + 3 * SEC), 2000);
    assert_int_equal(keys_by_sql(dst->path, "tri"), 2000);
    count_exact(dst->path, "tri");
    /* a copied key decides as on the source */
    for (int i = 1; i < 2000; i += 333) {
        if (i % 7 == 0)
            continue;   /* the destination's own */
        snprintf(key, sizeof key, "k%05d", i);
        both(src->db, dst->db, "tri", key, 1, T0 + 4 * SEC);
    }
    tdb_free(src);
    tdb_free(dst);
}

/* ---- split deployments ------------------------------------------------------------ */

static void split_source_copies(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();   /* RULES of splittest.h */
    tdb *dst = tdb_new(0, NULL);
    rls_result r;
    /* a penalty (counters file), then a manual block of the same key and
     * action (rules file), which lifts the penalty in a second transaction
     * (policy.c); a crash between the two leaves both */
    assert_int_equal(admit_n(p->app, "login", "alice", 3, T0), 2);
    assert_int_equal(rls_block_set_at(p->admin, "login", "alice", 0, "manual", T0 + 1), RLS_OK);
    char sql[300];
    snprintf(sql, sizeof sql, "INSERT INTO rls_blocks(key, action, until_ms, kind, level,"
             " forget_ms, rule, reason, created_ms) VALUES (CAST('alice' AS BLOB), 'login',"
             " %lld, 1, 1, %lld, 'burst', 'penalty', %lld)", (long long)(T0 + 3600 * SEC),
             (long long)(T0 + 7 * 3600 * SEC), (long long)T0);
    it_sql_exec(p->counters, sql);
    /* a split handle lists both rows when both files hold one */
    assert_int_equal(admit_n(p->app, "api", "192.0.2.1", 2, T0), 2);
    assert_int_equal(rls_tier_set_at(p->admin, "192.0.2.9", "pro", 0, T0), RLS_OK);
    rls_rows *rep = copy_ok(dst, &(tdb){.db = p->app}, RLS_COPY_ALL, T0 + 2);
    counts n = row_of(rep, "blocks");
    assert_int_equal(n.copied, 1);
    assert_int_equal(n.dropped, 1);
    assert_non_null(strstr(n.detail, "penalty under a manual block"));
    assert_int_equal(row_of(rep, "states").copied, 2);
    assert_int_equal(row_of(rep, "assignments").copied, 1);
    rls_rows_free(rep);
    rls_rows *b = NULL;
    assert_int_equal(rls_block_list_at(dst->db, T0 + 3, &b), RLS_OK);
    assert_int_equal(rls_rows_count(b), 1);
    assert_string_equal(rls_rows_text(b, 0, col(b, "reason")), "manual");
    rls_rows_free(b);
    r = check_at(dst->db, "api", "192.0.2.1", 1, T0 + 3);
    assert_int_equal(r.remaining, 0);   /* 3 a day: the two copied count */
    /* into a split deployment: refused */
    rls_rows *none = (rls_rows *)1;
    assert_int_equal(rls_copy_at(p->admin, dst->db, RLS_COPY_ALL, T0 + 4, &none), RLS_EINVAL);
    assert_null(none);
    assert_non_null(strstr(rls_errmsg(p->admin), "split deployment"));
    tdb_free(dst);
    pair_free(p);
}

/* ---- misuse ---------------------------------------------------------------------------- */

static void misuse_is_refused(void **state)
{
    int pg = it_pg() != NULL;
    tdb *src = tdb_new(pg, YAML), *dst = tdb_new(pg, NULL);
    rls_rows *rep = (rls_rows *)1;
    assert_int_equal(rls_copy_at(NULL, src->db, RLS_COPY_ALL, T0, &rep), RLS_EINVAL);
    assert_null(rep);
    assert_int_equal(rls_copy_at(dst->db, NULL, RLS_COPY_ALL, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, 0, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_DRY_RUN, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, 8, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_ALL, -1, NULL), RLS_ETIME);
    assert_int_equal(rls_copy_at(dst->db, dst->db, RLS_COPY_ALL, T0, NULL), RLS_EINVAL);
    /* the same database through another handle */
    rls_db *again = open_path(src->path, 1);
    assert_int_equal(rls_copy_at(src->db, again, RLS_COPY_ALL, T0, NULL), RLS_EINVAL);
    assert_non_null(strstr(rls_errmsg(src->db), "is the destination"));
    rls_close(again);
    /* no rules anywhere to map onto */
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_COUNTERS, T0, NULL), RLS_ENORULES);
    assert_int_equal(rls_copy_at(src->db, dst->db, RLS_COPY_RULES, T0, NULL), RLS_ENORULES);
    /* a read-only destination; a read-only source is fine */
    check_at(src->db, "fixed", "k", 1, T0);
    tdb_reopen(dst, 1);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0, NULL), RLS_EREADONLY);
    tdb_reopen(dst, 0);
    tdb_reopen(src, 1);
    assert_int_equal(rls_copy_at(dst->db, src->db, RLS_COPY_ALL, T0, NULL), RLS_OK);
    assert_int_equal(it_usage_count(dst->db, "fixed", T0), 1);
    tdb_free(src);
    tdb_free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"sqlite_to_sqlite", copy_between, NULL, teardown, &lite_lite},
        {"sqlite_to_pg", copy_between, NULL, teardown, &lite_pg},
        {"pg_to_sqlite", copy_between, NULL, teardown, &pg_lite},
        {"pg_to_pg", copy_between, NULL, teardown, &pg_pg},
        cmocka_unit_test_teardown(dst_rows_win_and_misfits_drop, teardown),
        cmocka_unit_test_teardown(copied_counter_of_a_counted_key, teardown),
        cmocka_unit_test_teardown(expired_rows_stay, teardown),
        cmocka_unit_test_teardown(dry_run_stores_nothing, teardown),
        cmocka_unit_test_teardown(failure_midway_changes_nothing, teardown),
        cmocka_unit_test_teardown(refused_row_changes_nothing, teardown),
        cmocka_unit_test_teardown(many_keys_in_pages, teardown),
        cmocka_unit_test_teardown(split_source_copies, teardown),
        cmocka_unit_test_teardown(misuse_is_refused, teardown),
    };
    if (fv_install() != SQLITE_OK) {
        fprintf(stderr, "cannot install the fault VFS\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
