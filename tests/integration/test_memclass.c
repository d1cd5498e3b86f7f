/*
 * test_memclass.c - `durability: memory` limits in the shared-memory table
 * (storage/memclass.c) through the public API.
 *
 * Covered: a memory-only action keeps no row in the database; every
 * algorithm exact across processes x threads (the fast path and batches
 * on one entry at once), compared with the same checks made one by one; a
 * mixed action (memory + durable) never over-admits and a denied check
 * charges neither part; a batch with a memory item whose other item
 * denies charges nothing; close and reopen keeps the counts; peek,
 * refund, reservations (commit, cancel, expiry), blocks, tiers, overrides,
 * shadow mode and penalties on memory limits; reset drops the entry; the
 * loader refuses a memory sliding_log over the table's log; a full table
 * and an unusable shm_dir answer by the failure policy; kill -9 inside the
 * table's critical section, 200 rounds, never loses or adds more than the
 * killed call.  With RLSTORE_TEST_PG the same on PostgreSQL.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "itest.h"
#include "shm/shmtable.h"

#define NOW (T0 + 3600000)

static const char *RULES =
    "version: 1\n"
    "tiers: { gold: {} }\n"
    "actions:\n"
    "  m:\n"
    "    limits: [ { name: mm, algorithm: fixed_window, limit: 5, window: 1h,"
    " durability: memory } ]\n"
    "    tiers:\n"
    "      gold: [ { name: mm, algorithm: fixed_window, limit: 50, window: 1h,"
    " durability: memory } ]\n"
    "  mix:\n"
    "    limits:\n"
    "      - { name: fast, algorithm: fixed_window, limit: 10, window: 1h, durability: memory }\n"
    "      - { name: slow, algorithm: fixed_window, limit: 5, window: 1h }\n"
    "  mix2:\n"
    "    limits:\n"
    "      - { name: fast2, algorithm: fixed_window, limit: 3, window: 1h, durability: memory }\n"
    "      - { name: slow2, algorithm: fixed_window, limit: 10, window: 1h }\n"
    "  d:\n"
    "    limits: [ { name: dd, algorithm: fixed_window, limit: 2, window: 1h } ]\n"
    "  pen:\n"
    "    limits: [ { name: p, algorithm: fixed_window, limit: 1, window: 1h,"
    " block_for: [10m], durability: memory } ]\n"
    "  sh:\n"
    "    limits:\n"
    "      - { name: s1, algorithm: fixed_window, limit: 5, window: 1h, durability: memory }\n"
    "      - { name: s2, algorithm: fixed_window, limit: 1, window: 1h, mode: shadow,"
    " durability: memory }\n"
    "  lenient:\n"
    "    on_error: allow\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 5, window: 1d,"
    " durability: memory } ]\n"
    "  fw:\n"
    "    limits: [ { name: a1, algorithm: fixed_window, limit: 40, window: 1h, durability: memory } ]\n"
    "  sw:\n"
    "    limits: [ { name: a2, algorithm: sliding_window, limit: 40, window: 1h, durability: memory } ]\n"
    "  sl:\n"
    "    limits: [ { name: a3, algorithm: sliding_log, limit: 16, window: 1h, durability: memory } ]\n"
    "  tb:\n"
    "    limits: [ { name: a4, algorithm: token_bucket, limit: 40, window: 1h, durability: memory } ]\n"
    "  gc:\n"
    "    limits: [ { name: a5, algorithm: gcra, limit: 40, window: 1h, durability: memory } ]\n"
    "  lb:\n"
    "    limits: [ { name: a6, algorithm: leaky_bucket, limit: 40, window: 1h, durability: memory } ]\n"
    "  mx:\n"
    "    limits:\n"
    "      - { name: a7, algorithm: sliding_window, limit: 30, window: 1h, durability: memory }\n"
    "      - { name: a8, algorithm: fixed_window, limit: 1000, window: 1h }\n";

/* A handle on t's database whose table lives in t's folder. */
static rls_db *mt_open(const itest *t, unsigned slots, const char *dir)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = dir ? dir : t->dir;
    o.shm_slots = slots;
    int rc = rls_open(&db, t->path, &o);
    if (rc != RLS_OK)
        fail_msg("open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* t with its handle replaced by one of mt_open. */
static itest *mt_new(unsigned slots)
{
    itest *t = it_new(RULES);
    rls_close(t->db);
    t->db = mt_open(t, slots, NULL);
    return t;
}

static int64_t mt_left(rls_db *db, const char *action, const char *key, int64_t now)
{
    rls_result r;
    int rc = rls_peek_at(db, action, key, 1, now, &r);
    if (rc != RLS_OK)
        fail_msg("peek: %s: %s", rls_errname(rc), rls_errmsg(db));
    return r.remaining;
}

static int64_t state_rows(const itest *t)
{
    return it_sql_int(t->path, "SELECT count(*) FROM rls_state");
}

static void memory_only_keeps_no_row(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    assert_int_equal(it_admit_n(t, "m", "u1", 8, NOW), 5);
    assert_int_equal(mt_left(t->db, "m", "u1", NOW), 0);
    assert_int_equal(mt_left(t->db, "m", "u2", NOW), 5);
    assert_int_equal(state_rows(t), 0);
    /* a new window starts fresh */
    assert_int_equal(it_admit_n(t, "m", "u1", 8, NOW + 3600000), 5);
    /* a durable action beside it still keeps its rows */
    assert_int_equal(it_admit_n(t, "d", "u1", 3, NOW), 2);
    assert_int_equal(state_rows(t), 1);
    it_free(t);
}

/* With another connection holding SQLite's write lock, a memory-only check
 * still answers (no database transaction), while a durable one waits and
 * fails.  The fast path trusts what it learned for a second of real time:
 * a round that took longer than that is tried again. */
static void memory_only_needs_no_transaction(void **state)
{
    (void)state;
    IT_SQLITE_ONLY();
    itest *t = mt_new(1024);
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.busy_timeout_ms = 30;
    o.shm_dir = t->dir;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    rls_result r;
    int served = 0;
    for (int round = 0; round < 50 && !served; round++) {
        assert_int_equal(rls_check_at(db, "m", "n", 1, NOW + round * 3600000LL, &r), RLS_OK);
        sqlite3 *lock = it_lock_db(t);
        int rc = rls_check_at(db, "m", "n", 1, NOW + round * 3600000LL, &r);
        served = rc == RLS_OK && r.allowed;
        if (served) {
            assert_int_equal(rls_check_at(db, "d", "n", 1, NOW, &r), RLS_EBUSY);
            assert_int_equal(r.allowed, 0);
        }
        it_unlock_db(lock);
    }
    assert_int_equal(served, 1);
    rls_close(db);
    it_free(t);
}

static void reopen_keeps_counts(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    assert_int_equal(it_admit_n(t, "m", "k", 3, NOW), 3);
    rls_close(t->db);
    t->db = mt_open(t, 4096, NULL);   /* another size: the table keeps its own */
    assert_int_equal(mt_left(t->db, "m", "k", NOW), 2);
    assert_int_equal(it_admit_n(t, "m", "k", 5, NOW), 2);
    it_free(t);
}

static void mixed_action_is_all_or_nothing(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    /* the durable limit (5) denies: the memory limit (10) is charged 5 */
    assert_int_equal(it_admit_n(t, "mix", "k", 12, NOW), 5);
    /* the memory limit denies (3): the durable one (10) is charged 3 */
    assert_int_equal(it_admit_n(t, "mix2", "k", 6, NOW), 3);
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state"
                                         " WHERE lid IN (SELECT lid FROM rls_limits"
                                         " WHERE action = 'mix2')"), 3);
    it_free(t);
}

/* The durable limit denies 7 of 12: the memory limit was charged for the 5
 * admitted only, as a roomier durable limit (an override) then shows. */
static void mixed_denial_charges_no_memory(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    rls_result r;
    assert_int_equal(it_admit_n(t, "mix", "k", 12, NOW), 5);
    assert_int_equal(rls_override_set_at(t->db, "mix", "k", "slow", 1000, 0, NOW), RLS_OK);
    assert_int_equal(it_admit_n(t, "mix", "k", 12, NOW), 5);   /* 10 - 5 */
    assert_int_equal(rls_check_at(t->db, "mix", "k", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_string_equal(r.rule, "fast");
    it_free(t);
}

static void batch_with_memory_items(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    rls_result r[2];
    rls_item ok[2] = {{"m", "b1", 1}, {"d", "b1", 1}};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rls_check_many_at(t->db, ok, 2, NOW, r), RLS_OK);
        assert_int_equal(r[0].allowed && r[1].allowed, 1);
    }
    /* d is spent: the batch is denied and m charged nothing */
    assert_int_equal(rls_check_many_at(t->db, ok, 2, NOW, r), RLS_OK);
    assert_int_equal(r[0].allowed, 0);
    assert_int_equal(r[0].reason, RLS_REASON_BATCH);
    assert_int_equal(r[1].allowed, 0);
    assert_int_equal(mt_left(t->db, "m", "b1", NOW), 3);
    /* the memory item denies: nothing charged on the durable one */
    rls_item two[2] = {{"m", "b2", 5}, {"d", "b2", 1}};
    assert_int_equal(rls_check_many_at(t->db, two, 2, NOW, r), RLS_OK);
    assert_int_equal(it_admit_n(t, "m", "b2", 1, NOW), 0);
    assert_int_equal(rls_check_many_at(t->db, two, 2, NOW, r), RLS_OK);
    assert_int_equal(r[0].allowed, 0);
    assert_int_equal(mt_left(t->db, "d", "b2", NOW), 1);
    it_free(t);
}

static void peek_refund_reservations(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    rls_result r;
    int64_t id = 0, got = 0;
    assert_int_equal(it_admit_n(t, "m", "r", 4, NOW), 4);
    assert_int_equal(mt_left(t->db, "m", "r", NOW), 1);
    assert_int_equal(rls_refund_units_at(t->db, "m", "r", 2, NOW, &got), RLS_OK);
    assert_int_equal(got, 2);
    assert_int_equal(mt_left(t->db, "m", "r", NOW), 3);
    /* a reservation holds 3, its cancel gives them back */
    assert_int_equal(rls_reserve_at(t->db, "m", "r", 3, 60000, NOW, &id, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    assert_int_equal(mt_left(t->db, "m", "r", NOW), 0);
    assert_int_equal(rls_cancel_at(t->db, id, NOW + 1), RLS_OK);
    assert_int_equal(mt_left(t->db, "m", "r", NOW + 1), 3);
    /* one that expires is given back at the key's next check (and peek) */
    assert_int_equal(rls_reserve_at(t->db, "m", "r", 2, 1000, NOW + 2, &id, &r), RLS_OK);
    assert_int_equal(mt_left(t->db, "m", "r", NOW + 3), 1);
    assert_int_equal(mt_left(t->db, "m", "r", NOW + 2000), 3);
    assert_int_equal(it_admit_n(t, "m", "r", 5, NOW + 2000), 3);
    /* a committed one keeps its charge */
    assert_int_equal(rls_refund_units_at(t->db, "m", "r", 3, NOW + 2001, &got), RLS_OK);
    assert_int_equal(rls_reserve_at(t->db, "m", "r", 2, 60000, NOW + 2002, &id, &r), RLS_OK);
    assert_int_equal(rls_commit_at(t->db, id, NOW + 2003), RLS_OK);
    assert_int_equal(mt_left(t->db, "m", "r", NOW + 2004), 1);
    assert_int_equal(state_rows(t), 0);
    it_free(t);
}

static void policy_on_memory_limits(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    rls_result r;
    assert_int_equal(it_admit_n(t, "m", "x", 5, NOW), 5);   /* fast path trusted */
    /* a block set by another handle is seen at once */
    rls_db *admin = mt_open(t, 1024, NULL);
    assert_int_equal(rls_block_set_at(admin, "m", "y", 0, "test", NOW), RLS_OK);
    assert_int_equal(rls_check_at(t->db, "m", "y", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(rls_block_unset_at(admin, "m", "y", NOW), RLS_OK);
    assert_int_equal(it_admit_n(t, "m", "y", 6, NOW), 5);
    /* a tier: another limit of its own */
    assert_int_equal(rls_tier_assign_at(admin, "m", "g", "gold", 0, NOW), RLS_OK);
    assert_int_equal(it_admit_n(t, "m", "g", 60, NOW), 50);
    /* an override of the memory limit */
    assert_int_equal(rls_override_set_at(admin, "m", "o", "mm", 2, 0, NOW), RLS_OK);
    assert_int_equal(it_admit_n(t, "m", "o", 6, NOW), 2);
    rls_close(admin);
    /* shadow: the shadow limit (1) does not deny, the enforced one (5) does */
    assert_int_equal(it_admit_n(t, "sh", "s", 7, NOW), 5);
    /* penalty: the denial writes a block that outlasts the window's room */
    assert_int_equal(it_admit_n(t, "pen", "p", 2, NOW), 1);
    assert_int_equal(rls_check_at(t->db, "pen", "p", 1, NOW + 60000, &r), RLS_OK);
    assert_int_equal(r.allowed, 0);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(rls_check_at(t->db, "pen", "p", 1, NOW + 3600000, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    /* reset drops the memory entry */
    assert_int_equal(rls_reset_at(t->db, "m", "x", NOW), RLS_OK);
    assert_int_equal(it_admit_n(t, "m", "x", 6, NOW), 5);
    /* an expired one is as good as reused: nothing to reset, whether or
     * not a new key took its slot (test_policy, the durable twin) */
    assert_int_equal(rls_reset_at(t->db, "m", "x", NOW + 2 * 3600000), RLS_ENOTFOUND);
    it_free(t);
}

/* The keys of a row set's "key" column, joined by spaces. */
static void usage_keys(rls_db *db, const char *action, const char *substr, char *out,
                       size_t cap, int64_t *count)
{
    rls_usage_query q;
    rls_rows *rows = NULL;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.action = action;
    q.key_substr = substr;
    q.sort = RLS_SORT_KEY;
    q.limit = 100;
    int rc = rls_usage_at(db, &q, NOW, &rows);
    if (rc != RLS_OK)
        fail_msg("usage: %s: %s", rls_errname(rc), rls_errmsg(db));
    out[0] = '\0';
    int kc = rls_rows_find(rows, "key"), uc = rls_rows_find(rows, "used");
    for (int i = 0; i < rls_rows_count(rows); i++) {
        size_t o = strlen(out);
        snprintf(out + o, cap - o, "%s%s=%lld", o ? " " : "", rls_rows_text(rows, i, kc),
                 (long long)rls_rows_int(rows, i, uc));
    }
    rls_rows_free(rows);
    assert_int_equal(rls_usage_count_at(db, &q, NOW, count), RLS_OK);
}

static void usage_lists_memory_keys(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    char got[1024];
    int64_t n = 0;
    assert_int_equal(it_admit_n(t, "m", "bob", 2, NOW), 2);
    assert_int_equal(it_admit_n(t, "m", "alice", 3, NOW), 3);
    assert_int_equal(it_admit_n(t, "mix", "carol", 1, NOW), 1);
    assert_int_equal(it_admit_n(t, "d", "dave", 1, NOW), 1);
    usage_keys(t->db, "m", NULL, got, sizeof got, &n);
    assert_string_equal(got, "alice=3 bob=2");
    assert_int_equal(n, 2);
    usage_keys(t->db, "mix", NULL, got, sizeof got, &n);
    assert_string_equal(got, "carol=1");
    usage_keys(t->db, "m", "li", got, sizeof got, &n);
    assert_string_equal(got, "alice=3");
    assert_int_equal(n, 1);
    /* a reset key is gone from the list */
    assert_int_equal(rls_reset_at(t->db, "m", "bob", NOW), RLS_OK);
    usage_keys(t->db, "m", NULL, got, sizeof got, &n);
    assert_string_equal(got, "alice=3");
    it_free(t);
}

static void loader_refuses_long_memory_log(void **state)
{
    (void)state;
    itest *t = it_new(NULL);
    const char *bad = "version: 1\nactions:\n  a:\n    limits: [ { name: l,"
                      " algorithm: sliding_log, limit: 17, window: 1h, durability: memory } ]\n";
    assert_int_equal(rls_rules_apply_at(t->db, bad, strlen(bad), "bad.yaml", NULL, T0, NULL),
                     RLS_ECONFIG);
    assert_non_null(strstr(rls_errmsg(t->db), "durability: memory"));
    assert_non_null(strstr(rls_errmsg(t->db), "at most 16"));
    it_free(t);
}

static void full_table_answers_by_policy(void **state)
{
    (void)state;
    itest *t = mt_new(32);
    rls_result r;
    char key[32];
    int full = 0;
    for (int i = 0; i < 200 && !full; i++) {
        snprintf(key, sizeof key, "k%d", i);
        int rc = rls_check_at(t->db, "m", key, 1, NOW, &r);
        if (rc == RLS_EFULL) {
            full = 1;
            assert_int_equal(r.allowed, 0);   /* on_error: deny */
            assert_int_equal(r.reason, RLS_REASON_DEGRADED);
            assert_non_null(strstr(rls_errmsg(t->db), "full"));
        } else {
            assert_int_equal(rc, RLS_OK);
        }
    }
    assert_int_equal(full, 1);
    assert_int_equal(rls_check_at(t->db, "lenient", "new-key", 1, NOW, &r), RLS_EFULL);
    assert_int_equal(r.allowed, 1);   /* on_error: allow */
    /* keys already in the table still count */
    assert_int_equal(it_admit_n(t, "m", "k0", 9, NOW), 4);
    /* their windows over, entries are reused */
    assert_int_equal(it_admit_n(t, "m", "fresh", 1, NOW + 7200000), 1);
    it_free(t);
}

static void unusable_shm_dir_answers_by_policy(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    char file[4200], dir[4300];
    tu_path(file, sizeof file, t->dir, "plain-file");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/sub", file);   /* a folder inside a file */
    rls_result r;
    for (int round = 0; round < 2; round++) {
        rls_db *db = mt_open(t, 1024, round ? file : dir);
        int rc = rls_check_at(db, "m", "k", 1, NOW, &r);
        assert_true(rc == RLS_ECANTOPEN || rc == RLS_ENOTDB || rc == RLS_EISDIR);
        assert_int_equal(r.allowed, 0);
        assert_non_null(strstr(rls_errmsg(db), "shared-memory table"));
        assert_int_equal(rls_check_at(db, "lenient", "k", 1, NOW, &r), rc);
        assert_int_equal(r.allowed, 1);
        /* durable actions are not affected */
        assert_int_equal(rls_check_at(db, "d", "k", 1, NOW, &r), RLS_OK);
        assert_int_equal(r.allowed, 1);
        rls_close(db);
    }
    rls_options o;
    rls_options_init(&o);
    o.shm_dir = "";
    rls_db *db = NULL;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_EINVAL);
    o.shm_dir = NULL;
    o.shm_slots = 3;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_EINVAL);
    it_free(t);
}

/* ---- processes x threads --------------------------------------------------- */

#define PROCS 3
#define THREADS 3
#define PER_THREAD 40

static const char *const ALGOS[] = {"fw", "sw", "sl", "tb", "gc", "lb", "mx"};
#define NALGOS (sizeof ALGOS / sizeof ALGOS[0])

struct worker {
    const itest *t;
    int64_t *admitted;   /* shared: one per algorithm */
    int id;
};

static void *worker_run(void *p)
{
    struct worker *w = p;
    rls_db *db = mt_open(w->t, 1024, NULL);
    for (size_t a = 0; a < NALGOS; a++) {
        int n = 0;
        for (int i = 0; i < PER_THREAD; i++) {
            rls_result r[2];
            int rc;
            if ((i + w->id) % 4 == 0) {   /* a batch beside a roomy durable item */
                char key[32];
                snprintf(key, sizeof key, "other-%d-%d", w->id, i);
                rls_item it[2] = {{ALGOS[a], "hot", 1}, {"mx", key, 1}};
                rc = rls_check_many_at(db, it, strcmp(ALGOS[a], "mx") ? 2 : 1, NOW, r);
            } else {
                rc = rls_check_at(db, ALGOS[a], "hot", 1, NOW, &r[0]);
            }
            if (rc != RLS_OK)
                fail_msg("worker check: %s: %s", rls_errname(rc), rls_errmsg(db));
            n += r[0].allowed;
        }
        __atomic_add_fetch(&w->admitted[a], n, __ATOMIC_RELAXED);
    }
    rls_close(db);
    return NULL;
}

static void exact_across_processes_and_threads(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    int64_t *adm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(adm != MAP_FAILED);
    memset(adm, 0, 4096);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            pthread_t th[THREADS];
            struct worker w[THREADS];
            for (int i = 0; i < THREADS; i++) {
                w[i] = (struct worker){t, adm, p * THREADS + i};
                pthread_create(&th[i], NULL, worker_run, &w[i]);
            }
            for (int i = 0; i < THREADS; i++)
                pthread_join(th[i], NULL);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int st;
        assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    /* the same checks one by one on another key */
    for (size_t a = 0; a < NALGOS; a++) {
        int64_t want = it_admit_n(t, ALGOS[a], "cold", PROCS * THREADS * PER_THREAD, NOW);
        assert_true(want > 0 && want < PROCS * THREADS * PER_THREAD);
        if (adm[a] != want)
            fail_msg("%s: %lld admitted at once, %lld one by one", ALGOS[a],
                     (long long)adm[a], (long long)want);
    }
    munmap(adm, 4096);
    it_free(t);
}

/* ---- kill -9 inside the critical section ------------------------------------ */

static int stop_fd = -1;
static int stop_at;

static void stop_here(int point, size_t item)
{
    (void)item;
    if (point != stop_at)
        return;
    char c = 1;
    if (write(stop_fd, &c, 1) != 1)
        _exit(3);
    for (;;)
        pause();
}

static void kill9_inside_the_table(void **state)
{
    (void)state;
    itest *t = mt_new(1024);
    const char *env = getenv("RLS_MEM_KILL_ROUNDS");
    int rounds = env ? atoi(env) : 200;
    int64_t used = 0;
    for (int round = 0; round < rounds; round++) {
        const char *action = round % 3 == 2 ? "mx" : "lenient";
        const char *key = round % 3 == 2 ? "kk" : "kl";
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            rls_db *db = mt_open(t, 1024, NULL);
            rls_result r;
            /* two acknowledged checks (the second on the fast path for a
             * memory-only action), then the third stops inside the table */
            for (int i = 0; i < 2; i++)
                if (rls_check_at(db, action, key, 1, NOW, &r) != RLS_OK || !r.allowed)
                    _exit(2);
            stop_fd = pfd[1];
            stop_at = 1 + round % 4;
            rls__shm_hook = stop_here;
            rls_check_at(db, action, key, 1, NOW, &r);
            _exit(4);   /* the point was not reached */
        }
        close(pfd[1]);
        char c;
        ssize_t got = read(pfd[0], &c, 1);
        kill(pid, SIGKILL);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        close(pfd[0]);
        assert_int_equal(got, 1);
        /* the others go on: what is used is the acknowledged calls, plus
         * the killed one's charge if it was published */
        rls_result r;
        assert_int_equal(rls_peek_at(t->db, action, key, 1, NOW + round, &r), RLS_OK);
        int64_t now_used = r.limit - r.remaining;
        if (round % 3 != 2) {
            assert_true(now_used == 2 || now_used == 3);
            used += now_used == 3;   /* the killed call's charge was published */
            assert_int_equal(rls_reset_at(t->db, action, key, NOW), RLS_OK);
        } else {
            /* mixed: the memory part within [acks, acks + 1] of the
             * durable part, which holds the acknowledged calls exactly */
            int64_t durable = it_sql_int(t->path, "SELECT coalesce(sum(b), 0) FROM rls_state"
                                                  " WHERE key = CAST('kk' AS BLOB)");
            if (now_used != durable && now_used != durable + 1)
                fail_msg("round %d (point %d): memory %lld, durable %lld", round, 1 + round % 4,
                         (long long)now_used, (long long)durable);
            assert_int_equal(rls_reset_at(t->db, action, key, NOW), RLS_OK);
        }
    }
    assert_true(used >= 0);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memory_only_keeps_no_row),
        cmocka_unit_test(memory_only_needs_no_transaction),
        cmocka_unit_test(reopen_keeps_counts),
        cmocka_unit_test(mixed_action_is_all_or_nothing),
        cmocka_unit_test(mixed_denial_charges_no_memory),
        cmocka_unit_test(batch_with_memory_items),
        cmocka_unit_test(peek_refund_reservations),
        cmocka_unit_test(policy_on_memory_limits),
        cmocka_unit_test(usage_lists_memory_keys),
        cmocka_unit_test(loader_refuses_long_memory_log),
        cmocka_unit_test(full_table_answers_by_policy),
        cmocka_unit_test(unusable_shm_dir_answers_by_policy),
        cmocka_unit_test(exact_across_processes_and_threads),
        cmocka_unit_test(kill9_inside_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
