/*
 * test_lanecount_mt.c - the lane's counts on a thread-safe handle
 * (rls_options.thread_safe): checker threads of memory-only, mixed and
 * durable actions beside threads that read the metrics and stats, set the
 * admin reason, block and unblock keys on the same handle, and across a
 * fork with counts pending; every call succeeds, every count is exact
 * (lanecount.h).  SQLite only.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "lanecount.h"


/* One thread of thread_safe_mixed: checks of memory-only, mixed and
 * durable actions, its own clock walking ahead (flushes: the threads'
 * clocks go back and forth against one another). */
struct worker {
    rls_db *db;
    int id;
    long rounds;
    struct tally tl;
    int64_t errors;
    char first[256];
    volatile int *stop;
    int64_t reads;
};

static void *checker(void *arg)
{
    struct worker *w = arg;
    uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(w->id + 1);
    int64_t now = T0 + 600000 + w->id * 3;
    for (long i = 0; i < w->rounds; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int a = (int)(x % NACT);
        char key[32];
        rls_result res;
        key_of(a, x >> 8, key, sizeof key);
        now += (int64_t)((x >> 30) % 40);
        int rc = rls_check_at(w->db, ACTS[a], key, 1, now, &res);
        if (rc != RLS_OK) {
            if (w->errors++ == 0)
                snprintf(w->first, sizeof w->first, "check %s: %s: %s", ACTS[a],
                         rls_errname(rc), rls_errmsg(w->db));
            continue;
        }
        count(&w->tl, NULL, a, now, &res);
    }
    return NULL;
}

/* Reads the metrics and stats on the handle the checkers use, until they
 * are done: every read must succeed. */
static void *reader(void *arg)
{
    struct worker *w = arg;
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
        rls_rows *rows = NULL, *tot = NULL;
        int rc = rls_metrics_at(w->db, T0 + 700000, &rows);
        rls_rows_free(rows);
        if (rc == RLS_OK) {
            rc = rls_stats_at(w->db, 60, T0 + 700000, NULL, &tot);
            rls_rows_free(tot);
        }
        if (rc != RLS_OK && w->errors++ == 0)
            snprintf(w->first, sizeof w->first, "read: %s: %s", rls_errname(rc),
                     rls_errmsg(w->db));
        w->reads++;
    }
    return NULL;
}

/* The admin reasons of reason_race: more than 16 bytes, so a freed one
 * read by an audit row would not read as one of them. */
static const char *const REASONS[] = {"the first reason of the race", "a second reason, longer",
                                      "third reason of three"};

struct admin_worker {
    rls_db *db;
    int id;
    volatile int *stop;
    int64_t errors, calls;
    char first[256];
};

static void admin_error(struct admin_worker *w, const char *what, int rc)
{
    if (w->errors++ == 0)
        snprintf(w->first, sizeof w->first, "%s: %s: %s", what, rls_errname(rc),
                 rls_errmsg(w->db));
}

/* Sets the handle's reason again and again until the others are done. */
static void *reasoner(void *arg)
{
    struct admin_worker *w = arg;
    for (long i = 0; !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE); i++, w->calls++) {
        int rc = rls_admin_reason(w->db, REASONS[i % 3]);
        if (rc == RLS_OK)
            rc = rls_set_progress(w->db, NULL, NULL);
        if (rc != RLS_OK)
            admin_error(w, "reason", rc);
    }
    return NULL;
}

/* Blocks and unblocks keys of m0, each change audited with the handle's
 * reason. */
static void *blocker(void *arg)
{
    struct admin_worker *w = arg;
    char key[32];
    for (int i = 0; i < 150; i++, w->calls++) {
        snprintf(key, sizeof key, "b%d-%d", w->id, i % 4);
        int rc = rls_block_set_at(w->db, "m0", key, 0, NULL, T0);
        if (rc == RLS_OK)
            rc = rls_block_unset_at(w->db, "m0", key, T0);
        if (rc != RLS_OK)
            admin_error(w, "block", rc);
    }
    return NULL;
}

/*
 * A thread-safe handle on which one thread sets the admin reason over and over, two block and unblock
 * keys (audited with that reason) and four check memory-only actions
 * through the lane: every call succeeds, every audit row has one of the
 * reasons, whole, and the checks count exactly.
 */
static void reason_race(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    enum { NCHK = 4, NBLK = 2 };
    itest *t = it_new(RULES);
    rls_db *db = open_h(t, 1);
    assert_int_equal(rls_admin_reason(db, REASONS[2]), RLS_OK);   /* every row has one */
    volatile int stop = 0;
    struct worker w[NCHK];
    struct admin_worker aw[NBLK + 1];
    pthread_t th[NCHK], ath[NBLK + 1];
    memset(w, 0, sizeof w);
    memset(aw, 0, sizeof aw);
    for (int i = 0; i < NBLK + 1; i++) {
        aw[i].db = db;
        aw[i].id = i;
        aw[i].stop = &stop;
        assert_int_equal(pthread_create(&ath[i], NULL, i == NBLK ? reasoner : blocker, &aw[i]),
                         0);
    }
    for (int i = 0; i < NCHK; i++) {
        w[i].db = db;
        w[i].id = i;
        w[i].rounds = 3000;
        w[i].stop = &stop;
        assert_int_equal(pthread_create(&th[i], NULL, checker, &w[i]), 0);
    }
    for (int i = 0; i < NCHK; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < NBLK; i++)
        assert_int_equal(pthread_join(ath[i], NULL), 0);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(ath[NBLK], NULL), 0);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    for (int i = 0; i < NBLK + 1; i++)
        if (aw[i].errors)
            fail_msg("admin thread %d: %lld errors, the first %s", i, (long long)aw[i].errors,
                     aw[i].first);
    for (int i = 0; i < NCHK; i++) {
        if (w[i].errors)
            fail_msg("thread %d: %lld errors, the first %s", i, (long long)w[i].errors,
                     w[i].first);
        tally_add(&tl, &w[i].tl);
    }
    rls_close(db);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op LIKE '%block%'"),
                     2 * 150 * NBLK);
    int64_t bad = it_sql_int(t->path,
                             "SELECT count(*) FROM rls_audit WHERE op LIKE '%block%' AND reason"
                             " NOT IN ('the first reason of the race', 'a second reason, longer',"
                             " 'third reason of three')");
    if (bad)
        fail_msg("%lld audit rows with a reason that was never set", (long long)bad);
    assert_exact(t->db, T0 + 700000, &tl);
    it_free(t);
}

/*
 * A thread-safe handle shared by 8 threads checking memory-only, mixed
 * and durable actions (the lane under the handle lock, the others through
 * group commit) while 2 more read rls_metrics_at and rls_stats_at on it:
 * every call succeeds and every count is exact.
 */
static void thread_safe_mixed(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    enum { NCHK = 8, NRD = 2 };
    itest *t = it_new(RULES);
    assert_int_equal(rls_block_set_at(t->db, "m0", "pol", 0, "test", T0), RLS_OK);
    rls_db *db = open_h(t, 1);
    volatile int stop = 0;
    struct worker w[NCHK + NRD];
    pthread_t th[NCHK + NRD];
    memset(w, 0, sizeof w);
    long rounds = knob("RLS_LANECOUNT_OPS", 20000) / 4;
    for (int i = 0; i < NCHK + NRD; i++) {
        w[i].db = db;
        w[i].id = i;
        w[i].rounds = rounds;
        w[i].stop = &stop;
        assert_int_equal(pthread_create(&th[i], NULL, i < NCHK ? checker : reader, &w[i]), 0);
    }
    for (int i = 0; i < NCHK; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = NCHK; i < NCHK + NRD; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    for (int i = 0; i < NCHK + NRD; i++) {
        if (w[i].errors)
            fail_msg("thread %d: %lld errors, the first %s", i, (long long)w[i].errors,
                     w[i].first);
        tally_add(&tl, &w[i].tl);
    }
    for (int i = NCHK; i < NCHK + NRD; i++)
        assert_true(w[i].reads > 0);
    assert_true(rls__memlane_served(db) > 0);
    rls_close(db);
    assert_exact(t->db, T0 + 700000, &tl);
    it_free(t);
}

/* n checker threads (ids id0...) of rounds checks each on db, their
 * tallies added to tl; their errors, or -1 when a thread failed to start. */
static int64_t run_checkers(rls_db *db, int n, long rounds, int id0, struct tally *tl)
{
    struct worker w[8];
    pthread_t th[8];
    int64_t errors = 0;
    memset(w, 0, sizeof w);
    for (int i = 0; i < n && i < 8; i++) {
        w[i].db = db;
        w[i].id = id0 + i;
        w[i].rounds = rounds;
        if (pthread_create(&th[i], NULL, checker, &w[i]) != 0)
            return -1;
    }
    for (int i = 0; i < n && i < 8; i++) {
        pthread_join(th[i], NULL);
        if (w[i].errors && errors == 0)
            fprintf(stderr, "checker %d: %s\n", w[i].id, w[i].first);
        errors += w[i].errors;
        tally_add(tl, &w[i].tl);
    }
    return errors;
}

/*
 * A thread-safe handle whose threads left lane counts pending (untimed,
 * not written), forked: the child's threads check on the handle it
 * inherited and close it, writing only their own counts; the parent's
 * threads go on; every count exact.
 */
static void thread_safe_fork(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    rls_db *db = open_h(t, 1);
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    assert_int_equal(run_checkers(db, 4, 1500, 0, &tl), 0);
    assert_true(rls__memlane_served(db) > 0);
    struct tally *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
    assert_true(c != MAP_FAILED);
    memset(c, 0, sizeof *c);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {   /* no cmocka here: the parent judges */
        int64_t errors = run_checkers(db, 3, 1000, 10, c);
        rls_close(db);
        _exit(errors == 0 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    tally_add(&tl, c);
    munmap(c, sizeof *c);
    assert_int_equal(run_checkers(db, 4, 1000, 20, &tl), 0);
    rls_close(db);
    assert_exact(t->db, T0 + 700000, &tl);
    it_free(t);
}

/* The bulk calls of rls_admin(3) over and over until the checkers are
 * done: the events listed, old audit rows and events pruned, every block
 * of mp lifted, m1's counters reset (none changes what was counted). */
static void *bulker(void *arg)
{
    struct admin_worker *w = arg;
    for (long i = 0; !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE); i++, w->calls++) {
        rls_rows *rows = NULL;
        int64_t n = 0;
        int rc, k = (int)(i % 5);
        if (k == 0)
            rc = rls_events_list_at(w->db, NULL, NULL, NULL, 0, 100, &rows);
        else if (k == 1)
            rc = rls_audit_prune_at(w->db, T0 - 1000, T0 + 600000, &n);
        else if (k == 2)
            rc = rls_events_prune_at(w->db, T0 - 1000, T0 + 600000, &n);
        else if (k == 3)
            rc = rls_block_unset_all_at(w->db, "mp", T0 + 600000, &n);
        else
            rc = rls_reset_action_at(w->db, "m1", T0 + 600000, &n);
        rls_rows_free(rows);
        if (rc != RLS_OK)
            admin_error(w, "bulk", rc);
    }
    return NULL;
}

/* The bulk calls on a thread-safe handle beside 8 threads checking on it
 * (each took the handle without its lock, as rls_metrics_at did: its
 * statements on the connection a group leader was using): every call
 * succeeds and the checks count exactly. */
static void bulk_calls_beside_checks(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    rls_db *db = open_h(t, 1);
    volatile int stop = 0;
    struct admin_worker bw = {db, 0, &stop, 0, 0, ""};
    pthread_t bt;
    struct tally tl;
    memset(&tl, 0, sizeof tl);
    assert_int_equal(pthread_create(&bt, NULL, bulker, &bw), 0);
    int64_t errors = run_checkers(db, 8, knob("RLS_LANECOUNT_OPS", 20000) / 8, 0, &tl);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(bt, NULL), 0);
    assert_int_equal(errors, 0);
    if (bw.errors)
        fail_msg("%lld bulk calls failed, the first %s", (long long)bw.errors, bw.first);
    assert_true(bw.calls > 0);
    rls_close(db);
    assert_exact(t->db, T0 + 700000, &tl);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thread_safe_mixed),
        cmocka_unit_test(reason_race),
        cmocka_unit_test(thread_safe_fork),
        cmocka_unit_test(bulk_calls_beside_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
