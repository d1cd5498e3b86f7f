/*
 * test_growth.c - growth (issue #5, suite 8): many distinct keys pass
 * through with short windows and expire; the database returns to a small
 * size with no manual step, and the WAL stays bounded while a reader runs.
 *
 *  1. Steady flow: keys/2 distinct keys, one check each, the clock moving
 *     1 ms per check through 10 s windows (about 10,000 keys live at any
 *     time).  The library's own GC (a bounded step every 64 writes) keeps
 *     up: rls_state never holds more than a few windows' worth of keys and
 *     the file stays small throughout.
 *  2. A burst: keys/4 distinct keys inside one window, then ordinary
 *     traffic on a few hot keys.  The GC of that traffic alone (no rlctl
 *     gc, no VACUUM) brings rls_state back to almost nothing; the file
 *     keeps its size but its pages are on the freelist (reported).
 *  3. A second burst of the same size reuses those free pages: the file
 *     does not grow.
 *
 * Throughout, a reader in another process takes snapshots: `rltop -b` in
 * a loop when it is built, else rls_usage_at and rls_explain_at every
 * 100 ms.  The WAL never exceeds 64 MiB (the library's TRUNCATE
 * checkpoint size) plus 16 MiB: the retries of a TRUNCATE checkpoint that
 * found the reader in the way, one per further 4 MiB.  Sizes are printed for docs/RELIABILITY.md.
 *
 * Knob: RLS_GROWTH_KEYS (distinct keys in all, default 200000; `make
 * stress` uses 1000000).
 */
#include "reltest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  visit:\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 5, window: 10s } ]\n"
    "  hot:\n"
    "    limits: [ { name: l, algorithm: gcra, limit: 100000, window: 1s, burst: 1000 } ]\n";

#define WAL_BOUND (64LL << 20)
/* A checkpoint that finds readers in the way is tried again after each
 * further 4 MiB: a reader that snapshots back to back can make a few fail. */
#define WAL_MARGIN (16LL << 20)

typedef struct reader_stats {
    volatile int stop;
    int64_t runs, failures;
    int mode;  /* 1 rltop, 2 library calls */
    char msg[256];
} reader_stats;

static reader_stats *RS;
static pid_t READER = -1;

/* Ends the reader even when the test failed half-way. */
static int stop_reader(void **state)
{
    if (READER > 0) {
        RS->stop = 1;
        kill(READER, SIGKILL);
        waitpid(READER, NULL, 0);
    }
    READER = -1;
    return 0;
}

static void reader_process(const char *path)
{
    char rltop[4200];
    if (rel_tool("rltop", rltop, sizeof rltop)) {
        RS->mode = 1;
        char *argv[] = {rltop, "-b", "-n", "1", "--db", (char *)path, NULL};
        while (!RS->stop) {
            int rc = rel_run(argv, NULL);
            RS->runs++;
            if (rc != 0 && !RS->failures++)
                snprintf(RS->msg, sizeof RS->msg, "rltop -b exited %d", rc);
        }
        _exit(0);
    }
    RS->mode = 2;
    rls_options o;
    rls_options_init(&o);
    o.read_only = 1;
    rls_db *db;
    if (rls_open(&db, path, &o) != RLS_OK) {
        RS->failures++;
        snprintf(RS->msg, sizeof RS->msg, "reader open: %s", rls_errmsg(NULL));
        _exit(0);
    }
    while (!RS->stop) {
        rls_rows *rows = NULL, *lim = NULL;
        rls_usage_query q = {sizeof q, NULL, NULL, RLS_SORT_USED, 0, 20};
        int rc = rls_usage_at(db, &q, T0, &rows);
        if (rc == RLS_OK)
            rc = rls_explain_at(db, "hot", "hot:1", T0, NULL, &lim);
        rls_rows_free(rows);
        rls_rows_free(lim);
        RS->runs++;
        if (rc != RLS_OK && !RS->failures++)
            snprintf(RS->msg, sizeof RS->msg, "reader: %s: %s", rls_errname(rc),
                     rls_errmsg(db));
        rel_sleep_us(100000);
    }
    rls_close(db);
    _exit(0);
}

typedef struct sizes {
    int64_t rows, file, pages, freelist, page_size;
} sizes;

static sizes measure(const char *path)
{
    sizes s;
    s.rows = it_sql_int(path, "SELECT count(*) FROM rls_state");
    s.pages = it_sql_int(path, "PRAGMA page_count");
    s.freelist = it_sql_int(path, "PRAGMA freelist_count");
    s.page_size = it_sql_int(path, "PRAGMA page_size");
    s.file = rel_size(path, "");
    return s;
}

typedef struct run {
    itest *t;
    int64_t now, checks, wal_max, rows_max, file_max;
    int64_t hot_seq;
} run;

static void sample(run *g, int rows_too)
{
    int64_t wal = rel_size(g->t->path, "-wal");
    if (wal > g->wal_max)
        g->wal_max = wal;
    if (wal > WAL_BOUND + WAL_MARGIN)
        fail_msg("the WAL reached %lld bytes after %lld checks", (long long)wal,
                 (long long)g->checks);
    int64_t file = rel_size(g->t->path, "");
    if (file > g->file_max)
        g->file_max = file;
    if (rows_too) {
        int64_t rows = it_sql_int(g->t->path, "SELECT count(*) FROM rls_state");
        if (rows > g->rows_max)
            g->rows_max = rows;
    }
}

static void check_one(run *g, const char *action, const char *key, int64_t now)
{
    rls_result r;
    int rc = rls_check_at(g->t->db, action, key, 1, now, &r);
    if (rc != RLS_OK)
        fail_msg("check %s %s: %s: %s", action, key, rls_errname(rc), rls_errmsg(g->t->db));
    if (++g->checks % 2000 == 0)
        sample(g, g->checks % 50000 == 0);
}

/* Ordinary traffic: a few hot keys, the clock moving 1 ms per check, until
 * rls_state has at most `target` rows or `max` checks were made; returns
 * the checks made. */
static int64_t ordinary_traffic(run *g, int64_t target, int64_t max)
{
    char key[32];
    int64_t n = 0;
    while (n < max) {
        for (int i = 0; i < 10000 && n < max; i++, n++) {
            snprintf(key, sizeof key, "hot:%d", (int)(g->hot_seq++ % 8));
            check_one(g, "hot", key, g->now++);
        }
        if (it_sql_int(g->t->path, "SELECT count(*) FROM rls_state") <= target)
            break;
    }
    return n;
}

static void print_sizes(const char *when, const sizes *s)
{
    print_message("%-28s rls_state %8lld rows, file %6.1f MiB, %7lld pages, %7lld free "
                  "(%.1f MiB in use)\n", when, (long long)s->rows, s->file / 1048576.0,
                  (long long)s->pages, (long long)s->freelist,
                  (double)(s->pages - s->freelist) * (double)s->page_size / 1048576.0);
}

static void many_keys_expire_without_a_manual_step(void **state)
{
    long keys = rel_knob("RLS_GROWTH_KEYS", 200000, 6000);
    long steady = keys / 2, burst = keys / 4;
    run g = {0};
    g.t = it_new(RULES);
    g.now = T0;
    int64_t started = rel_mono_ms();
    char key[48];

    memset(RS, 0, sizeof *RS);
    READER = fork();
    assert_true(READER >= 0);
    if (READER == 0)
        reader_process(g.t->path);

    /* 1. steady flow */
    for (long i = 0; i < steady; i++) {
        snprintf(key, sizeof key, "visitor:%08ld", (i * 7919) % steady);
        check_one(&g, "visit", key, g.now++);
    }
    sizes s1 = measure(g.t->path);
    int64_t steady_rows_max = g.rows_max, steady_file_max = g.file_max;
    print_sizes("after the steady flow", &s1);
    print_message("  (%ld keys; at most %lld rows and a %.1f MiB file along the way)\n", steady,
                  (long long)steady_rows_max, steady_file_max / 1048576.0);
    /* about 10,000 keys live per 10 s window: GC (one row examined per
     * write) keeps the table within a few windows' worth, however many keys
     * pass: the test fails long before 100,000 rows if it does not keep up */
    if (steady_rows_max > 100000 || steady_file_max > 8LL << 20)
        fail_msg("rls_state reached %lld rows and the file %lld bytes during a steady flow "
                 "of 10,000 live keys", (long long)steady_rows_max,
                 (long long)steady_file_max);

    /* 2. a burst inside one window, then ordinary traffic only */
    int64_t burst_at = g.now;
    for (long i = 0; i < burst; i++) {
        snprintf(key, sizeof key, "burst1:%08ld", (i * 7919) % burst);
        check_one(&g, "visit", key, burst_at + i / 100);
    }
    sample(&g, 1);
    sizes peak = measure(g.t->path);
    print_sizes("right after burst 1", &peak);
    g.now = burst_at + 60000;  /* the burst's windows have ended */
    int64_t drain = ordinary_traffic(&g, 100, (int64_t)burst * 4);
    sizes s2 = measure(g.t->path);
    print_sizes("after ordinary traffic", &s2);
    print_message("  (%lld ordinary checks on 8 hot keys brought it back)\n", (long long)drain);
    if (s2.rows > 100)
        fail_msg("%lld rows left in rls_state after %lld ordinary checks", (long long)s2.rows,
                 (long long)drain);
    /* what is in use is small again; the rest of the file is free pages */
    if ((s2.pages - s2.freelist) * s2.page_size > 4LL << 20)
        fail_msg("%lld pages still in use", (long long)(s2.pages - s2.freelist));

    /* 3. the same again reuses the free pages: no growth */
    burst_at = g.now;
    for (long i = 0; i < burst; i++) {
        snprintf(key, sizeof key, "burst2:%08ld", (i * 7919) % burst);
        check_one(&g, "visit", key, burst_at + i / 100);
    }
    sizes s3 = measure(g.t->path);
    print_sizes("right after burst 2", &s3);
    if (s3.file > peak.file + peak.file / 10 + (1 << 20))
        fail_msg("the second burst grew the file from %lld to %lld bytes", (long long)peak.file,
                 (long long)s3.file);
    g.now = burst_at + 60000;
    drain = ordinary_traffic(&g, 100, (int64_t)burst * 4);
    sizes s4 = measure(g.t->path);
    print_sizes("after ordinary traffic", &s4);
    assert_true(s4.rows <= 100);

    RS->stop = 1;
    waitpid(READER, NULL, 0);
    READER = -1;
    const char *ok = rel_integrity(g.t->db);
    if (strcmp(ok, "ok") != 0)
        fail_msg("%s", ok);
    print_message("%ld distinct keys, %lld checks in %lld ms; WAL at most %.1f MiB; reader "
                  "(%s) took %lld snapshots\n", steady + 2 * burst, (long long)g.checks,
                  (long long)(rel_mono_ms() - started), g.wal_max / 1048576.0,
                  RS->mode == 1 ? "rltop -b" : "rls_usage_at + rls_explain_at",
                  (long long)RS->runs);
    if (RS->failures)
        fail_msg("%lld reader failures; first: %s", (long long)RS->failures, RS->msg);
    assert_true(RS->runs > 0);
    assert_true(g.wal_max <= WAL_BOUND + WAL_MARGIN);
    it_free(g.t);
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    RS = rel_shared(sizeof *RS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(many_keys_expire_without_a_manual_step, stop_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
