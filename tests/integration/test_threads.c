/*
 * test_threads.c - one handle shared by threads (rls_options.thread_safe,
 * storage/group.c): group commit of checks, and every other call on the
 * handle from other threads meanwhile.
 *
 * Covered: exactness of N threads x M rounds on one thread-safe handle
 * over every algorithm and an action of two limits, with checks, peeks
 * and reservations (committed) mixed, while admin threads list, explain,
 * count usage, set and lift blocks and apply the rules again (each call
 * must succeed); the same with several processes, each with threads on
 * the handle it inherited across fork() (after threads of the parent
 * used it); the error detail per thread (rls_errmsg);
 * a group of which one member is denied and one names an unknown action
 * (the others decided as alone; SQLite: the group is formed by holding
 * the write lock from another connection); thread_safe out of range.
 * With RLSTORE_TEST_PG the same on PostgreSQL.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "itest.h"
#include "db.h"   /* rls__group_waiting: a group has formed */
#include "memclass.h"   /* rls__memlane_served */

#define NOW (T0 + 3600000)
#define NALGO 9
#define NKEYS 3
#define THREADS 8

static const char *ACTIONS[NALGO] = {"fw", "sw", "sl", "tb", "gc", "lb", "mfw", "mix", "two"};

/* Every algorithm with capacity CAP at one instant, a `durability: memory`
 * limit (the shared-memory table, its fast path under the handle lock) and
 * an action mixing one with a durable limit, and an action of two limits
 * whose smaller decides. */
#define CAP 24
static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  fw: { limits: [ { name: fw, algorithm: fixed_window, limit: 24, window: 1h } ] }\n"
    "  sw: { limits: [ { name: sw, algorithm: sliding_window, limit: 24, window: 1h } ] }\n"
    "  sl: { limits: [ { name: sl, algorithm: sliding_log, limit: 24, window: 1h } ] }\n"
    "  tb: { limits: [ { name: tb, algorithm: token_bucket, limit: 24, window: 1h } ] }\n"
    "  gc: { limits: [ { name: gc, algorithm: gcra, limit: 24, window: 1h } ] }\n"
    "  lb: { limits: [ { name: lb, algorithm: leaky_bucket, limit: 24, window: 1h } ] }\n"
    "  mfw: { limits: [ { name: m, algorithm: fixed_window, limit: 24, window: 1h,"
    " durability: memory } ] }\n"
    "  mix:\n"
    "    limits:\n"
    "      - { name: mem, algorithm: token_bucket, limit: 24, window: 1h, durability: memory }\n"
    "      - { name: dur, algorithm: fixed_window, limit: 1000, window: 1d }\n"
    "  two:\n"
    "    limits:\n"
    "      - { name: big, algorithm: fixed_window, limit: 1000, window: 1d }\n"
    "      - { name: small, algorithm: token_bucket, limit: 24, window: 1h }\n"
    "  other: { limits: [ { name: o, algorithm: fixed_window, limit: 5, window: 1h } ] }\n"
    "  lenient:\n"
    "    on_error: allow\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 5, window: 1h } ]\n";

/* A thread-safe handle on t's database; the memory table in t's scratch
 * folder (never /dev/shm: PostgreSQL's URIs name a new table each run),
 * small. */
static rls_db *open_ts_as(const itest *t, int busy_ms, int durability)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.thread_safe = 1;
    o.durability = durability;
    o.busy_timeout_ms = busy_ms;
    o.shm_dir = t->dir;
    o.shm_slots = 1024;
    int rc = rls_open(&db, t->path, &o);
    if (rc != RLS_OK)
        fail_msg("open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

static rls_db *open_ts(const itest *t, int busy_ms)
{
    return open_ts_as(t, busy_ms, RLS_DURABILITY_NORMAL);
}

/* What the workers did, in memory every process maps (MAP_SHARED). */
struct tally {
    long admitted[NALGO][NKEYS];
    long attempts[NALGO][NKEYS];
    long errors;           /* a call that should have succeeded failed */
    long bad_peek;         /* a peek that charged or answered wrongly */
    long admin_calls;
    char first_error[256];
};

struct worker {
    rls_db *db;
    struct tally *t;
    int id, rounds;
    volatile int *stop;    /* admin workers: until the checkers finish */
};

static void note_error(struct tally *t, const char *what, int rc, rls_db *db)
{
    if (__atomic_fetch_add(&t->errors, 1, __ATOMIC_RELAXED) == 0)
        snprintf(t->first_error, sizeof t->first_error, "%s: %s: %s", what, rls_errname(rc),
                 rls_errmsg(db));
}

/* One round: a check, a peek or a reservation committed, on a target
 * chosen by the worker and the round. */
static void one_round(struct worker *w, int r)
{
    int a = (w->id * 7 + r) % NALGO, k = (w->id + r / NALGO) % NKEYS, op = (w->id + r) % 8;
    char key[32];
    rls_result res;
    int rc;
    snprintf(key, sizeof key, "k%d", k);
    if (op == 0) {   /* a peek: charges nothing */
        rc = rls_peek_at(w->db, ACTIONS[a], key, 1, NOW, &res);
        if (rc != RLS_OK)
            note_error(w->t, "peek", rc, w->db);
        else if (res.remaining > (a == NALGO - 1 ? 1000 : CAP))
            __atomic_fetch_add(&w->t->bad_peek, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&w->t->attempts[a][k], 1, __ATOMIC_RELAXED);
    if (op == 1) {   /* a reservation, committed */
        int64_t id = 0;
        rc = rls_reserve_at(w->db, ACTIONS[a], key, 1, 60000, NOW, &id, &res);
        if (rc == RLS_OK && res.allowed && (rc = rls_commit_at(w->db, id, NOW)) != RLS_OK)
            note_error(w->t, "commit", rc, w->db);
    } else {
        rc = rls_check_at(w->db, ACTIONS[a], key, 1, NOW, &res);
    }
    if (rc != RLS_OK)
        note_error(w->t, "check", rc, w->db);
    else if (res.allowed)
        __atomic_fetch_add(&w->t->admitted[a][k], 1, __ATOMIC_RELAXED);
}

static void *checker(void *arg)
{
    struct worker *w = arg;
    for (int r = 0; r < w->rounds; r++)
        one_round(w, r);
    return NULL;
}

/* Admin calls on the same handle while the checkers run. */
static void admin_round(struct worker *w, int r)
{
    rls_rows *rows = NULL, *rows2 = NULL;
    int64_t n = 0;
    int rc;
    char key[32];
    snprintf(key, sizeof key, "adm%d", r % 4);
    switch (r % 6) {
    case 0: rc = rls_block_set_at(w->db, "other", key, 0, "test", NOW); break;
    case 1: rc = rls_block_unset_at(w->db, "other", key, NOW); break;
    case 2: rc = rls_block_list_at(w->db, NOW, &rows); break;
    case 3: rc = rls_explain_at(w->db, "fw", "k0", NOW, &rows, &rows2); break;
    case 4: rc = rls_stats_at(w->db, 60, NOW, &rows, &rows2); break;
    default:
        if (r % 12 == 5) {
            rc = rls_rules_apply_at(w->db, RULES, strlen(RULES), "again.yaml", NULL, NOW, NULL);
        } else {
            rls_usage_query q;
            memset(&q, 0, sizeof q);
            q.size = sizeof q;
            rc = rls_usage_count_at(w->db, &q, NOW, &n);
        }
    }
    rls_rows_free(rows);
    rls_rows_free(rows2);
    if (rc != RLS_OK && rc != RLS_ENOTFOUND)
        note_error(w->t, "admin", rc, w->db);
    __atomic_fetch_add(&w->t->admin_calls, 1, __ATOMIC_RELAXED);
}

static void *admin(void *arg)
{
    struct worker *w = arg;
    for (int r = 0; !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) || r < 6; r++)
        admin_round(w, r);
    return NULL;
}

/* THREADS checkers and two admin threads on db; returns when done. */
static void run_threads(rls_db *db, struct tally *t, int rounds, int seed)
{
    pthread_t th[THREADS + 2];
    struct worker w[THREADS + 2];
    volatile int stop = 0;
    for (int i = 0; i < THREADS + 2; i++) {
        w[i] = (struct worker){db, t, seed * 100 + i, rounds, &stop};
        assert_int_equal(pthread_create(&th[i], NULL, i < THREADS ? checker : admin, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(th[THREADS], NULL);
    pthread_join(th[THREADS + 1], NULL);
}

/* Every target admitted exactly min(CAP, attempts), and a peek finds
 * exactly that much used. */
static void assert_exact(rls_db *db, const struct tally *t)
{
    if (t->errors)
        fail_msg("%ld calls failed, the first: %s", t->errors, t->first_error);
    assert_int_equal(t->bad_peek, 0);
    for (int a = 0; a < NALGO; a++)
        for (int k = 0; k < NKEYS; k++) {
            char key[32];
            rls_result r;
            long want = t->attempts[a][k] < CAP ? t->attempts[a][k] : CAP;
            snprintf(key, sizeof key, "k%d", k);
            if (t->admitted[a][k] != want)
                fail_msg("%s %s: %ld admitted of %ld attempts, want %ld", ACTIONS[a], key,
                         t->admitted[a][k], t->attempts[a][k], want);
            assert_int_equal(rls_peek_at(db, ACTIONS[a], key, 1, NOW, &r), RLS_OK);
            assert_int_equal(r.remaining, CAP - want);
        }
}

static int rounds_for_backend(void)
{
    return it_pg() ? 40 : 120;
}

static void threads_are_exact(void **state)
{
    itest *t = it_new(RULES);
    rls_db *db = open_ts(t, 60000);
    struct tally *tl = calloc(1, sizeof *tl);
    assert_non_null(tl);
    run_threads(db, tl, rounds_for_backend(), 0);
    assert_exact(db, tl);
    assert_true(tl->admin_calls >= 12);
    free(tl);
    rls_close(db);
    it_free(t);
}

static void processes_with_threads_are_exact(void **state)
{
    enum { PROCS = 3 };
    itest *t = it_new(RULES);
    rls_db *db = open_ts(t, 60000);
    struct tally *tl = mmap(NULL, sizeof *tl, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(tl != MAP_FAILED);
    memset(tl, 0, sizeof *tl);
    /* the parent's threads have run on the handle (and ended: a child of a
     * process forked while another thread is inside SQLite or libpq may
     * find their locks held, POSIX fork(2)) */
    run_threads(db, tl, 12, 9);
    pid_t pid[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pid[p] = fork();
        assert_true(pid[p] >= 0);
        if (pid[p] == 0) {   /* the inherited handle, reopened in the child */
            run_threads(db, tl, rounds_for_backend() / 2, p + 1);
            rls_close(db);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int st = 0;
        assert_int_equal(waitpid(pid[p], &st, 0), pid[p]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_exact(db, tl);
    munmap(tl, sizeof *tl);
    rls_close(db);
    it_free(t);
}

/* ---- the error detail is the calling thread's ------------------------- */

struct errw {
    rls_db *db;
    int bad;           /* this thread names an unknown action */
    long wrong;        /* rls_errmsg not this thread's own */
};

static void *err_worker(void *arg)
{
    struct errw *e = arg;
    rls_result r;
    for (int i = 0; i < 300; i++) {
        int rc = rls_check_at(e->db, e->bad ? "nosuch" : "fw", "e", 1, NOW, &r);
        const char *m = rls_errmsg(e->db);
        if (e->bad ? (rc != RLS_ENOACTION || !strstr(m, "nosuch")) : (rc != RLS_OK || *m))
            e->wrong++;
    }
    return NULL;
}

static void errmsg_is_per_thread(void **state)
{
    itest *t = it_new(RULES);
    rls_db *db = open_ts(t, 60000);
    pthread_t th[4];
    struct errw e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = (struct errw){db, i % 2, 0};
        assert_int_equal(pthread_create(&th[i], NULL, err_worker, &e[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(e[i].wrong, 0);
    }
    /* the main thread's own last call on db: none yet */
    assert_string_equal(rls_errmsg(db), "");
    assert_int_equal(rls_check_at(db, "nosuch", "e", 1, NOW, NULL), RLS_EINVAL);
    assert_string_equal(rls_errmsg(db), "result is NULL");
    rls_result r;
    assert_int_equal(rls_reserve_at(db, "fw", "e", 1, 1000, NOW, NULL, &r), RLS_EINVAL);
    assert_string_equal(rls_errmsg(db), "id is NULL");
    assert_int_equal(rls_check_at(db, "fw", "e2", 1, NOW, &r), RLS_OK);
    assert_string_equal(rls_errmsg(db), "");
    rls_close(db);
    it_free(t);
}

/* ---- a group formed on purpose (SQLite) -------------------------------- */

struct one {
    rls_db *db;
    const char *action, *key;
    int rc;
    rls_result res;
    char msg[256];
};

static void *one_check(void *arg)
{
    struct one *o = arg;
    o->rc = rls_check_at(o->db, o->action, o->key, 1, NOW, &o->res);
    snprintf(o->msg, sizeof o->msg, "%s", rls_errmsg(o->db));
    return NULL;
}

/* Waits until n checks are queued behind the leader that holds db. */
static void wait_queued(rls_db *db, size_t n)
{
    while (rls__group_waiting(db) != n)
        sched_yield();
}

static void group_decides_each_member_alone(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *db = open_ts(t, 60000);
    for (int i = 0; i < 5; i++)   /* "other" "full" is used up */
        it_check_on(db, "other", "full", 1, NOW, NULL);
    sqlite3 *lk = it_lock_db(t);
    /* a leader waits for the write lock, holding the handle */
    struct one lead = {db, "fw", "lead", 0, {0}, ""};
    pthread_t lt, th[4];
    assert_int_equal(pthread_create(&lt, NULL, one_check, &lead), 0);
    while (rls__group_waiting(db) != 0 || !rls__group_leading(db))
        sched_yield();
    struct one m[4] = {{db, "fw", "g1", 0, {0}, ""}, {db, "other", "full", 0, {0}, ""},
                       {db, "nosuch", "g3", 0, {0}, ""}, {db, "fw", "g1", 0, {0}, ""}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, one_check, &m[i]), 0);
        wait_queued(db, (size_t)i + 1);   /* in this order: arrival order */
    }
    it_unlock_db(lk);
    pthread_join(lt, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(lead.rc, RLS_OK);
    assert_int_equal(m[0].rc, RLS_OK);
    assert_int_equal(m[0].res.allowed, 1);
    assert_int_equal(m[0].res.remaining, CAP - 1);
    assert_int_equal(m[1].rc, RLS_OK);          /* denied, the others unaffected */
    assert_int_equal(m[1].res.allowed, 0);
    assert_int_equal(m[1].res.reason, RLS_REASON_LIMIT);
    assert_int_equal(m[2].rc, RLS_ENOACTION);   /* its own error, its own detail */
    assert_non_null(strstr(m[2].msg, "nosuch"));
    assert_int_equal(m[2].res.allowed, 0);
    assert_int_equal(m[3].rc, RLS_OK);          /* sees m[0]'s charge: arrival order */
    assert_int_equal(m[3].res.remaining, CAP - 2);
    assert_string_equal(m[0].msg, "");
    rls_result r;
    assert_int_equal(rls_peek_at(db, "fw", "g1", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.remaining, CAP - 2);
    rls_close(db);   /* writes its metrics */
    /* every check counted in the metrics, members of a group as the
     * checks run alone (rls_metrics(3)): the leader's and the group's two
     * of fw; other's five alone and its denied member; nosuch refused */
    assert_int_equal(it_metric(t->db, NOW, "latency_count", "fw", ""), 3);
    assert_int_equal(it_metric(t->db, NOW, "reason", "fw", "ok"), 3);
    assert_int_equal(it_metric(t->db, NOW, "latency_count", "other", ""), 6);
    assert_int_equal(it_metric(t->db, NOW, "reason", "other", "limit"), 1);
    assert_int_equal(it_metric(t->db, NOW, "denied", "other", "o"), 1);
    it_free(t);
}

/* A check that queues while a group's transaction runs: started by the
 * leader's hook (group_tx.c), once, before it looks for late members. */
static struct {
    struct one o;
    pthread_t th;
    int fired;
} late;

static void late_hook(rls_db *db)
{
    if (late.fired++)
        return;
    assert_int_equal(pthread_create(&late.th, NULL, one_check, &late.o), 0);
    wait_queued(db, 1);
}

/* Under `durability: full` a check that queued while a group ran joins
 * that group's fsynced COMMIT, decided after the members before it (one
 * group, one fsync); under `normal` it waits for a group of its own. */
static void late_member_joins_an_fsynced_commit(void **state)
{
    IT_SQLITE_ONLY();
    for (int full = 1; full >= 0; full--) {
        itest *t = it_new(RULES);
        rls_db *db =
            open_ts_as(t, 60000, full ? RLS_DURABILITY_FULL : RLS_DURABILITY_NORMAL);
        it_check_on(db, "fw", "warm", 1, NOW, NULL);   /* the rules loaded */
        uint64_t g0 = rls__group_led(db);
        sqlite3 *lk = it_lock_db(t);   /* the leader waits, holding the handle */
        struct one lead = {db, "fw", "lead", 0, {0}, ""};
        pthread_t lt, th[2];
        assert_int_equal(pthread_create(&lt, NULL, one_check, &lead), 0);
        while (rls__group_waiting(db) != 0 || !rls__group_leading(db))
            sched_yield();
        struct one m[2] = {{db, "fw", "k", 0, {0}, ""}, {db, "fw", "k", 0, {0}, ""}};
        for (int i = 0; i < 2; i++) {
            assert_int_equal(pthread_create(&th[i], NULL, one_check, &m[i]), 0);
            wait_queued(db, (size_t)i + 1);
        }
        memset(&late, 0, sizeof late);
        late.o = (struct one){db, "fw", "k", 0, {0}, ""};
        rls__group_late_hook = late_hook;
        it_unlock_db(lk);
        pthread_join(lt, NULL);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        assert_int_equal(late.fired, 1);   /* normal: its own group is of one */
        pthread_join(late.th, NULL);
        rls__group_late_hook = NULL;
        assert_int_equal(lead.rc, RLS_OK);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(m[i].rc, RLS_OK);
            assert_int_equal(m[i].res.remaining, CAP - 1 - i);
        }
        assert_int_equal(late.o.rc, RLS_OK);   /* after both: arrival order */
        assert_int_equal(late.o.res.remaining, CAP - 3);
        /* the leader's check alone, then the group: with the late member
         * under full, without it (which then leads one more) under normal */
        assert_int_equal(rls__group_led(db) - g0, full ? 2 : 3);
        rls_result r;
        assert_int_equal(rls_peek_at(db, "fw", "k", 1, NOW, &r), RLS_OK);
        assert_int_equal(r.remaining, CAP - 3);
        rls_close(db);
        it_free(t);
    }
}

/* rules with the first cut removed (malloc'ed) */
static char *rules_without(const char *rules, const char *cut)
{
    const char *p = strstr(rules, cut);
    assert_non_null(p);
    char *out = malloc(strlen(rules) + 1);
    assert_non_null(out);
    memcpy(out, rules, (size_t)(p - rules));
    strcpy(out + (p - rules), p + strlen(cut));
    return out;
}

static void apply_rules(itest *t, const char *yaml)
{
    int rc = rls_rules_apply_at(t->db, yaml, strlen(yaml), "test.yaml", NULL, T0, NULL);
    if (rc != RLS_OK)
        fail_msg("apply: %s: %s", rls_errname(rc), rls_errmsg(t->db));
}

/* n checks of action on key at NOW from a fresh limit of CAP: admitted
 * exactly while it lasts. */
static void checks_admit_cap(rls_db *db, const char *action, const char *key, int n)
{
    rls_result r;
    for (int i = 0; i < n; i++) {
        assert_int_equal(rls_check_at(db, action, key, 1, NOW, &r), RLS_OK);
        assert_int_equal(r.allowed, i < CAP);
    }
}

/* A memory-only action's checks on a thread-safe handle run the lane
 * under the handle lock, not through a group (a hand-off to a leader
 * costs more than the check: memlane.c); a durable action's keep going
 * through groups; a rule change either way is followed, the lane taken
 * again within LANE_PROBE (64) checks of the action being memory-only
 * again.  SQLite: PostgreSQL has no memory fast path. */
static void memory_checks_skip_the_group(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *db = open_ts(t, 60000);
    uint64_t g = rls__group_led(db);
    uint64_t served = rls__memlane_served(db);
    /* the first check opens the table and learns the trust (a group of
     * one: the pipeline); then the lane alone */
    checks_admit_cap(db, "mfw", "k1", 30);
    assert_true(rls__group_led(db) - g <= 1);
    assert_true(rls__memlane_served(db) - served >= 29);
    g = rls__group_led(db);
    checks_admit_cap(db, "fw", "k1", 30);
    assert_int_equal(rls__group_led(db), g + 30);

    char *durable = rules_without(RULES, ", durability: memory");
    apply_rules(t, durable);
    g = rls__group_led(db);
    served = rls__memlane_served(db);
    checks_admit_cap(db, "mfw", "k2", 30);
    assert_int_equal(rls__group_led(db), g + 30);
    assert_int_equal(rls__memlane_served(db), served);

    apply_rules(t, RULES);
    g = rls__group_led(db);
    checks_admit_cap(db, "mfw", "k3", 70);
    uint64_t through = rls__group_led(db) - g;
    assert_true(through >= 1 && through <= 65);
    rls_result r;
    for (int i = 0; i < 30; i++) {   /* k3 used up: denials, by the lane */
        assert_int_equal(rls_check_at(db, "mfw", "k3", 1, NOW, &r), RLS_OK);
        assert_int_equal(r.allowed, 0);
    }
    assert_int_equal(rls__group_led(db) - g, through);
    free(durable);
    rls_close(db);
    it_free(t);
}

static void thread_safe_out_of_range(void **state)
{
    itest *t = it_new(NULL);
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    assert_int_equal(o.thread_safe, 0);
    o.thread_safe = 2;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_EINVAL);
    assert_null(db);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_are_exact),
        cmocka_unit_test(processes_with_threads_are_exact),
        cmocka_unit_test(errmsg_is_per_thread),
        cmocka_unit_test(group_decides_each_member_alone),
        cmocka_unit_test(late_member_joins_an_fsynced_commit),
        cmocka_unit_test(memory_checks_skip_the_group),
        cmocka_unit_test(thread_safe_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
