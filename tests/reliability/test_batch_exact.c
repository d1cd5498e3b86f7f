/*
 * test_batch_exact.c - atomic batch checks under concurrency (issue #19,
 * item 3; storage/batch.c).
 *
 * NPROC processes, one handle each, run rounds of two-item batches
 * (rls_check_many) over nine (action, key) targets of three algorithms,
 * each with capacity CAP, the clock frozen.  Each process picks two
 * distinct targets and a cost of 1 or 2 per item at random (one round in
 * four is a single rls_check_at of one target instead).  The model:
 * a batch is admitted exactly when both items are; the admitted units of
 * each target are added up by the processes in shared memory.
 * Afterwards:
 *
 *   - every batch answered both items alike (all-or-nothing), a denied
 *     batch named a denying item (not both BATCH), no call failed;
 *   - no target admitted more than its capacity;
 *   - the stored usage of every target equals the units its admitted
 *     batches charged: nothing of a denied batch was charged, nothing of
 *     an admitted one lost (a peek's remaining is CAP - admitted);
 *   - single checks afterwards admit exactly the rest of each target.
 *
 * Knobs: RLS_BATCH_ROUNDS (rounds per process, default 500), RLS_BATCH_CAP
 * (capacity of each target, default 60).
 */
#include "reltest.h"

#define NPROC 4
#define NACT 3
#define NKEYS 3
#define NT (NACT * NKEYS)
#define NOW (T0 + 1000)

static const char *const ACTS[NACT] = {"fw", "tb", "sl"};
static const char *const KEYS[NKEYS] = {"hot:1", "hot:2", "hot:3"};

typedef struct shared {
    int64_t admitted[NT];   /* units charged by admitted batches */
    int64_t batches, admitted_batches;
    int bad;                /* a broken promise seen by a process */
    char why[256];
} shared;

static shared *SH;
static long ROUNDS, CAP;

static void yaml(char *buf, size_t size)
{
    snprintf(buf, size,
             "version: 1\n"
             "actions:\n"
             "  fw: { limits: [ { name: f, algorithm: fixed_window, limit: %ld, window: 1h } ] }\n"
             "  tb: { limits: [ { name: t, algorithm: token_bucket, limit: %ld, window: 1d } ] }\n"
             "  sl: { limits: [ { name: s, algorithm: sliding_log, limit: %ld, window: 1h } ] }\n",
             CAP, CAP, CAP);
}

static void broken(const char *fmt, long a, long b)
{
    if (__atomic_exchange_n(&SH->bad, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(SH->why, sizeof SH->why, fmt, a, b);
}

/* One round: two distinct targets, costs 1 or 2; checks the promises of
 * the answer and adds what an admitted batch charged. */
static void round_once(rls_db *db, unsigned *seed)
{
    int t0 = (int)(rand_r(seed) % NT), t1 = (int)(rand_r(seed) % (NT - 1));
    if (t1 >= t0)
        t1++;
    int64_t c0 = 1 + rand_r(seed) % 2, c1 = 1 + rand_r(seed) % 2;
    rls_item it[2] = {{ACTS[t0 / NKEYS], KEYS[t0 % NKEYS], c0},
                      {ACTS[t1 / NKEYS], KEYS[t1 % NKEYS], c1}};
    rls_result r[2];
    int rc = rls_check_many_at(db, it, 2, NOW, r);
    if (rc != RLS_OK) {
        broken("rls_check_many failed: %ld (%ld)", rc, 0);
        return;
    }
    __atomic_add_fetch(&SH->batches, 1, __ATOMIC_SEQ_CST);
    if (r[0].allowed != r[1].allowed)
        broken("a batch admitted one item and denied the other (%ld, %ld)", r[0].allowed,
               r[1].allowed);
    if (!r[0].allowed && r[0].reason == RLS_REASON_BATCH && r[1].reason == RLS_REASON_BATCH)
        broken("a denied batch named no denying item (%ld, %ld)", t0, t1);
    if (r[0].allowed && r[1].allowed) {
        __atomic_add_fetch(&SH->admitted[t0], c0, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&SH->admitted[t1], c1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&SH->admitted_batches, 1, __ATOMIC_SEQ_CST);
    }
}

/* One round in four a single check instead (rls_check_at: on PostgreSQL
 * the one-round-trip step), so that both paths charge the same states. */
static void single_once(rls_db *db, unsigned *seed)
{
    int t0 = (int)(rand_r(seed) % NT);
    int64_t c0 = 1 + rand_r(seed) % 2;
    rls_result r;
    if (rls_check_at(db, ACTS[t0 / NKEYS], KEYS[t0 % NKEYS], c0, NOW, &r) != RLS_OK) {
        broken("rls_check failed (%ld, %ld)", t0, c0);
        return;
    }
    if (r.allowed)
        __atomic_add_fetch(&SH->admitted[t0], c0, __ATOMIC_SEQ_CST);
}

static void worker(const char *path, int p)
{
    rls_db *db = NULL;
    unsigned seed = (unsigned)(time(NULL) ^ (getpid() << 8) ^ p);
    if (rls_open(&db, path, NULL) != RLS_OK) {
        broken("worker %ld cannot open the database (%ld)", p, 0);
        _exit(1);
    }
    for (long i = 0; i < ROUNDS && !SH->bad; i++) {
        if (rand_r(&seed) % 4 == 0)
            single_once(db, &seed);
        else
            round_once(db, &seed);
    }
    rls_close(db);
    _exit(0);
}

static void batches_are_all_or_nothing_and_exact(void **state)
{
    (void)state;
    char rules[1024];
    yaml(rules, sizeof rules);
    memset(SH, 0, sizeof *SH);
    itest *t = it_new(rules);
    pid_t pids[NPROC];
    for (int p = 0; p < NPROC; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0)
            worker(t->path, p);
    }
    for (int p = 0; p < NPROC; p++) {
        int status;
        assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("worker %d ended with status %d", p, status);
    }
    if (SH->bad)
        fail_msg("%s", SH->why);
    assert_true(SH->batches > 0 && SH->batches <= NPROC * ROUNDS);
    for (int i = 0; i < NT; i++) {
        const char *a = ACTS[i / NKEYS], *k = KEYS[i % NKEYS];
        rls_result r;
        if (SH->admitted[i] > CAP)
            fail_msg("%s %s admitted %lld units over its capacity %ld", a, k,
                     (long long)SH->admitted[i], CAP);
        assert_int_equal(rls_peek_at(t->db, a, k, 1, NOW, &r), RLS_OK);
        if (r.remaining != CAP - SH->admitted[i])
            fail_msg("%s %s: stored remaining %lld, admitted calls charged %lld of %ld", a, k,
                     (long long)r.remaining, (long long)SH->admitted[i], CAP);
        /* single checks take exactly the rest */
        assert_int_equal(it_admit_n(t, a, k, (int)CAP + 1, NOW), CAP - SH->admitted[i]);
    }
    /* the test says something: batches were admitted and denied both */
    assert_true(SH->admitted_batches > 0);
    assert_true(SH->admitted_batches < SH->batches);
    it_free(t);
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    ROUNDS = rel_knob("RLS_BATCH_ROUNDS", 500, 20);
    CAP = rel_knob("RLS_BATCH_CAP", 60, 10);
    SH = rel_shared(sizeof *SH);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batches_are_all_or_nothing_and_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
