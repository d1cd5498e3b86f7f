/*
 * test_shm_procs.c - the shared-memory table (storage/shm/) under many
 * processes: N processes racing to make one new table all attach the same
 * whole table; P processes x T threads of read-modify-write transactions
 * (several slots at once, new entries made under contention) leave exact
 * totals; a process SIGKILLed at a chosen point inside the critical
 * section (locks held, half a copy written, a copy written but not
 * published, published) never wedges the others, never leaves a torn
 * state, and every count is the acknowledged updates plus the killed
 * call's published part, 200 rounds.  Processes wait for each other
 * through pipes and waitpid: no sleeps, no clocks.
 *
 * Entries found by their tag are locked by their own bucket alone while
 * other processes reuse expired entries: no state lands in another item's
 * entry.
 *
 * Knobs: RLS_SHM_OPS (transactions per thread, default 20000),
 * RLS_SHM_CHURN_OPS (per process of the reuse test, default 100000),
 * RLS_SHM_KILL_ROUNDS (default 200).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "rlstore.h"
#include "shm/shmtable.h"

#define SHMTEST_NAME "shmprocs"
#include "shmtest.h"
#include "shmcount.h"
static const rls__shm_geom G = { 1024, 32, 0 };

static rls__shm_item item(int64_t lid, const char *key)
{
    rls__shm_item it = { lid, ALGO_GCRA, key, strlen(key) };
    return it;
}

/* The state that holds count n, never expiring (shmcount.h). */
static algo_state state_of(int64_t n)
{
    return shm_count(n, (int64_t)1 << 60);
}

static int whole(const algo_state *s)
{
    return shm_count_whole(s) && s->expires_ms == (int64_t)1 << 60;
}

/* One transaction adding 1 to every item's count; no cmocka (children). */
static const rls__shm_txn *cur_tx;   /* the victim's (stop_here reports its locks) */

static int incr(rls__shm *t, const rls__shm_item *its, size_t n)
{
    rls__shm_txn tx;
    cur_tx = &tx;
    int rc = rls__shm_lock(t, its, n, 0, &tx);
    for (size_t i = 0; rc == RLS_OK && i < n; i++) {
        algo_state s;
        memset(&s, 0, sizeof s);
        rc = rls__shm_read(&tx, i, &s);
        if (rc == RLS_OK && s.present && !whole(&s))
            rc = RLS_ECORRUPT;
        algo_state w = state_of(s.present ? s.a + 1 : 1);
        if (rc == RLS_OK)
            rc = rls__shm_write(&tx, i, &w);
    }
    rls__shm_unlock(&tx);
    return rc;
}

/* The count of each item (0 when absent), checking each state whole. */
static void counts(rls__shm *t, const rls__shm_item *its, size_t n, int64_t *out,
                   size_t *nlocked)
{
    rls__shm_txn tx;
    assert_int_equal(rls__shm_lock_peek(t, its, n, 0, &tx), RLS_OK);
    for (size_t i = 0; i < n; i++) {
        algo_state s;
        memset(&s, 0, sizeof s);
        assert_int_equal(rls__shm_read(&tx, i, &s), RLS_OK);
        if (s.present && !whole(&s))
            fail_msg("item %zu torn: a %lld b %lld c %lld last %lld", i, (long long)s.a,
                     (long long)s.b, (long long)s.c, (long long)s.last_ms);
        out[i] = s.present ? s.a : 0;
    }
    if (nlocked)
        *nlocked = tx.nlocked;
    rls__shm_unlock(&tx);
}

static rls__shm *open_ok(const char *p)
{
    rls__shm *t = NULL;
    char why[200];
    int rc = rls__shm_open(&t, p, &G, why, sizeof why);
    if (rc != RLS_OK)
        fail_msg("open '%s': %s (%s)", p, rls_errname(rc), why);
    return t;
}

static void wait_exit0(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("child %d ended with status 0x%x", (int)pid, st);
}

/* ---- racing creators ---------------------------------------------------------- */

struct race_report {
    int rc;
    uint64_t ino;
};

/* A racer: waits for the start (EOF on go), opens, counts itself in. */
static void racer(const char *p, int go, int res)
{
    char c;
    struct race_report r = { RLS_EIO, 0 };
    while (read(go, &c, 1) > 0) {
    }
    rls__shm *t = NULL;
    r.rc = rls__shm_open(&t, p, &G, NULL, 0);
    if (r.rc == RLS_OK) {
        rls__shm_info info;
        rls__shm_info_get(t, &info);
        r.ino = info.ino;
        rls__shm_item it = item(1, "racers");
        r.rc = incr(t, &it, 1);
        rls__shm_close(t);
    }
    _exit(write(res, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
}

/* No temporary file of a maker is left in dir. */
static void no_temporaries_left(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp"))
            fail_msg("left behind: %s", e->d_name);
    closedir(d);
}

static void racing_creators_all_attach_one_whole_table(void **state)
{
    enum { N = 6 };
    const int rounds = 25;
    for (int r = 0; r < rounds; r++) {
        char p[400];
        int go[2], res[2];
        pid_t pid[N];
        snprintf(p, sizeof p, "%s/race%d.shm", dir, r);
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(res), 0);
        for (int i = 0; i < N; i++) {
            pid[i] = fork();
            assert_true(pid[i] >= 0);
            if (pid[i] == 0) {
                close(go[1]);
                close(res[0]);
                racer(p, go[0], res[1]);
            }
        }
        close(go[0]);
        close(res[1]);
        close(go[1]);   /* all start at once */
        struct race_report rep[N];
        for (int i = 0; i < N; i++)
            assert_int_equal(read(res[0], &rep[i], sizeof rep[i]), sizeof rep[i]);
        close(res[0]);
        for (int i = 0; i < N; i++)
            wait_exit0(pid[i]);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        for (int i = 0; i < N; i++) {
            if (rep[i].rc != RLS_OK)
                fail_msg("round %d: racer %d got %s", r, i, rls_errname(rep[i].rc));
            assert_int_equal(rep[i].ino, (uint64_t)st.st_ino);
        }
        rls__shm *t = open_ok(p);
        rls__shm_item it = item(1, "racers");
        int64_t n;
        counts(t, &it, 1, &n, NULL);
        assert_int_equal(n, N);   /* every racer counted in the one table */
        rls__shm_close(t);
    }
    no_temporaries_left();
}

/* ---- exactness -------------------------------------------------------------------- */

#define NITEMS 4
static const char *const keys[NITEMS] = { "x", "y", "x", "y" };
static const int64_t lids[NITEMS] = { 1, 1, 2, 2 };
/* The items of transaction j (as bits), several at once and in any order. */
static const unsigned sets[5] = { 0x1, 0x3, 0xe, 0x9, 0xf };

static size_t set_items(unsigned bits, rls__shm_item *its)
{
    size_t n = 0;
    for (int i = NITEMS - 1; i >= 0; i--)   /* reverse: the table orders */
        if (bits & (1u << i))
            its[n++] = item(lids[i], keys[i]);
    return n;
}

struct worker {
    rls__shm *t;
    int id, ops, rc;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    rls__shm_item its[NITEMS];
    for (int j = 0; j < w->ops && w->rc == RLS_OK; j++) {
        size_t n = set_items(sets[(j + w->id) % 5], its);
        w->rc = incr(w->t, its, n);
    }
    return NULL;
}

/* A process of T threads sharing one handle. */
static void worker_process(const char *p, int threads, int ops)
{
    rls__shm *t = NULL;
    if (rls__shm_open(&t, p, &G, NULL, 0) != RLS_OK)
        _exit(2);
    pthread_t th[8];
    struct worker w[8];
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){ t, i, ops, RLS_OK };
        if (pthread_create(&th[i], NULL, work, &w[i]) != 0)
            _exit(3);
    }
    int bad = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        bad |= w[i].rc != RLS_OK;
    }
    rls__shm_close(t);
    _exit(bad ? 4 : 0);
}

static void processes_and_threads_leave_exact_totals(void **state)
{
    enum { P = 3, T = 4 };
    const int ops = knob("RLS_SHM_OPS", 20000);
    char p[400];
    snprintf(p, sizeof p, "%s/exact.shm", dir);
    pid_t pid[P];
    for (int i = 0; i < P; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0)
            worker_process(p, T, ops);
    }
    for (int i = 0; i < P; i++)
        wait_exit0(pid[i]);
    int64_t want[NITEMS] = { 0 }, got[NITEMS];
    for (int th = 0; th < T; th++)
        for (int j = 0; j < ops; j++)
            for (int i = 0; i < NITEMS; i++)
                want[i] += P * ((sets[(j + th) % 5] >> i) & 1);
    rls__shm *t = open_ok(p);
    rls__shm_item its[NITEMS];
    for (int i = 0; i < NITEMS; i++)
        its[i] = item(lids[i], keys[i]);
    counts(t, its, NITEMS, got, NULL);
    for (int i = 0; i < NITEMS; i++) {
        print_message("item %d: %lld transactions\n", i, (long long)got[i]);
        assert_int_equal(got[i], want[i]);
    }
    rls__shm_close(t);
}

/* ---- kill -9 inside the critical section --------------------------------------- */

static int stop_op, stop_point, stop_fd;
static size_t stop_item;
static int cur_op;

/* The victim's hook: at the chosen point, tell the parent and wait for
 * the SIGKILL. */
static void stop_here(int point, size_t it)
{
    if (cur_op != stop_op || point != stop_point || it != stop_item)
        return;
    char c[2] = {'S', (char)cur_tx->nlocked};   /* the locks it holds */
    if (write(stop_fd, c, 2) != 2)
        _exit(5);
    for (;;)
        pause();
}

/* The victim: acknowledged transactions ('A' after each unlock) until the
 * hook stops it. */
static void victim(const char *p, const rls__shm_item *its, size_t n, int fd)
{
    rls__shm *t = NULL;
    if (rls__shm_open(&t, p, &G, NULL, 0) != RLS_OK)
        _exit(2);
    stop_fd = fd;
    rls__shm_hook = stop_here;
    for (cur_op = 0;; cur_op++) {
        if (incr(t, its, n) != RLS_OK)
            _exit(3);
        char c = 'A';
        if (write(fd, &c, 1) != 1)
            _exit(4);
    }
}

/* Another process updating the same items: it must get through. */
static void waiter(const char *p, const rls__shm_item *its, size_t n)
{
    rls__shm *t = NULL;
    if (rls__shm_open(&t, p, &G, NULL, 0) != RLS_OK)
        _exit(2);
    _exit(incr(t, its, n) == RLS_OK ? 0 : 3);
}

/* Forks the victim and returns its acknowledged transactions once it has
 * stopped at the chosen point (its pid in *pid, the locks it holds there
 * in *held). */
static int64_t run_victim(const char *p, const rls__shm_item *its, size_t n, pid_t *pid,
                          size_t *held)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    *pid = fork();
    assert_true(*pid >= 0);
    if (*pid == 0) {
        close(fds[0]);
        victim(p, its, n, fds[1]);
    }
    close(fds[1]);
    int64_t acks = 0;
    char c;
    for (;;) {
        ssize_t k = read(fds[0], &c, 1);
        if (k != 1) {
            int st = 0;
            waitpid(*pid, &st, 0);
            fail_msg("the victim ended before its stop (status 0x%x)", st);
        }
        if (c == 'S') {
            assert_int_equal(read(fds[0], &c, 1), 1);
            *held = (size_t)c;
            break;
        }
        acks++;
    }
    close(fds[0]);
    return acks;
}

static int walk_none(void *ctx, int64_t lid, int kind, const void *key, size_t key_len,
                     const algo_state *st)
{
    (void)ctx, (void)lid, (void)kind, (void)key, (void)key_len, (void)st;
    return 0;
}

static void a_process_killed_inside_the_critical_section_wedges_nothing(void **state)
{
    const int rounds = knob("RLS_SHM_KILL_ROUNDS", 200);
    static const char *const names[] = { "", "locked", "half", "written", "published" };
    char p[400];
    snprintf(p, sizeof p, "%s/kill.shm", dir);
    rls__shm *t = open_ok(p);
    int seen[5] = { 0 };
    for (int r = 0; r < rounds; r++) {
        int combo = r % 24, fresh = combo % 2, with_waiter = r % 3 == 0;
        stop_point = RLS__SHM_AT_LOCKED + (combo / 2) % 4;
        stop_item = stop_point == RLS__SHM_AT_LOCKED ? 0 : (size_t)(combo / 8);
        stop_op = fresh ? 0 : r % 3;   /* a fresh round makes its entries */
        int64_t lid = fresh ? 1000 + r : 1;
        rls__shm_item its[3] = { item(lid, "p"), item(lid, "q"), item(lid + 1, "p") };
        int64_t before[3], after[3];
        rls__shm_info i0, i1;
        size_t held = 0;
        counts(t, its, 3, before, NULL);
        rls__shm_info_get(t, &i0);

        pid_t vic, wai = 0;
        int64_t acks = run_victim(p, its, 3, &vic, &held);
        if (with_waiter) {
            wai = fork();
            assert_true(wai >= 0);
            if (wai == 0)
                waiter(p, its, 3);
        }
        int st;
        assert_int_equal(kill(vic, SIGKILL), 0);
        assert_int_equal(waitpid(vic, &st, 0), vic);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        if (wai)
            wait_exit0(wai);   /* the others proceed */

        counts(t, its, 3, after, NULL);
        for (size_t i = 0; i < 3; i++) {
            int published = stop_point != RLS__SHM_AT_LOCKED &&
                            (i < stop_item || (i == stop_item &&
                                               stop_point == RLS__SHM_AT_PUBLISHED));
            int64_t want = before[i] + acks + published + with_waiter;
            if (after[i] != want)
                fail_msg("round %d (stop %s at item %zu of op %d): item %zu holds %lld, "
                         "want %lld", r, names[stop_point], stop_item, stop_op, i,
                         (long long)after[i], (long long)want);
        }
        /* every lock the victim held was taken over exactly once; with its
         * entries made (a later op), only their own buckets: 3 items, at
         * most 3 locks (a new entry takes both of its buckets: up to 6) */
        assert_int_equal(rls__shm_each(t, 0, walk_none, NULL), RLS_OK);   /* every lock */
        rls__shm_info_get(t, &i1);
        assert_int_equal(i1.recoveries - i0.recoveries, held);
        assert_true(held >= 1 && held <= (stop_op > 0 ? 3u : 6u));
        seen[stop_point]++;
        if (fresh) {   /* its entries go: any number of rounds fits the table */
            rls__shm_txn tx;
            assert_int_equal(rls__shm_lock(t, its, 3, 0, &tx), RLS_OK);
            for (size_t i = 0; i < 3; i++)
                assert_int_equal(rls__shm_drop(&tx, i), RLS_OK);
            rls__shm_unlock(&tx);
        }
    }
    print_message("%d rounds: stopped %d locked, %d half, %d written, %d published\n", rounds,
                  seen[1], seen[2], seen[3], seen[4]);
    rls__shm_close(t);
}

/* ---- reuse of expired entries against one-bucket locking ---------------- */

static const rls__shm_geom G_SMALL = { 128, 32, 0 };   /* 8 buckets, 4 keepers, 180 churn keys */

static int64_t key_hash(const char *k)
{
    int64_t h = 7;
    for (; *k; k++)
        h = h * 31 + (unsigned char)*k;
    return h;
}

/* One transaction on a keeper (counted, never expires) and a churn item
 * (expired as soon as written, so any new entry may take its slot): every
 * state read must be its own item's (b its limit id, c its key's hash). */
static int churn_step(rls__shm *t, const char *keeper, const char *churn)
{
    rls__shm_item its[2] = { item(1, keeper), item(2, churn) };
    rls__shm_txn tx;
    int rc = rls__shm_lock(t, its, 2, 10, &tx);
    for (size_t i = 0; rc == RLS_OK && i < 2; i++) {
        algo_state s, w;
        memset(&s, 0, sizeof s);
        rc = rls__shm_read(&tx, i, &s);
        if (rc == RLS_OK && s.present &&
            (s.b != its[i].lid || s.c != key_hash(its[i].key)))
            rc = RLS_ECORRUPT;   /* another item's state in this entry */
        memset(&w, 0, sizeof w);
        w.present = 1;
        w.a = s.present ? s.a + 1 : 1;
        w.b = its[i].lid;
        w.c = key_hash(its[i].key);
        w.last_ms = 10;
        w.expires_ms = i == 0 ? (int64_t)1 << 60 : 1;
        if (rc == RLS_OK)
            rc = rls__shm_write(&tx, i, &w);
    }
    rls__shm_unlock(&tx);
    return rc;
}

static void churn_process(const char *p, int id, int ops, int go)
{
    rls__shm *t = NULL;
    char churn[32], keeper[16], c;
    if (rls__shm_open(&t, p, &G_SMALL, NULL, 0) != RLS_OK)
        _exit(2);
    if (read(go, &c, 1) != 0)   /* all start together: EOF when the parent closes */
        _exit(5);
    for (int j = 0; j < ops; j++) {
        snprintf(keeper, sizeof keeper, "k%d", j % 4);
        snprintf(churn, sizeof churn, "c%d-%d", id, j % 60);   /* 180 in all: more than the table holds */
        if (churn_step(t, keeper, churn) != RLS_OK)
            _exit(3);
    }
    rls__shm_close(t);
    _exit(0);
}

/* Entries found by their tag are locked by their own bucket only, while
 * other processes reuse expired entries (which takes both buckets of the
 * new item): no state ever lands in another item's entry, and the
 * keepers' counts stay exact. */
static void reused_entries_never_cross_items(void **state)
{
    const int procs = 3, ops = knob("RLS_SHM_CHURN_OPS", 100000);
    char p[400];
    snprintf(p, sizeof p, "%s/churn.shm", dir);
    rls__shm *t = NULL;
    assert_int_equal(rls__shm_open(&t, p, &G_SMALL, NULL, 0), RLS_OK);
    pid_t pid[3];
    start_writers(pid, procs, churn_process, p, ops);
    for (int i = 0; i < procs; i++)
        wait_exit0(pid[i]);
    rls__shm_item ks[4] = { item(1, "k0"), item(1, "k1"), item(1, "k2"), item(1, "k3") };
    rls__shm_txn tx;
    int64_t total = 0;
    assert_int_equal(rls__shm_lock_peek(t, ks, 4, 10, &tx), RLS_OK);
    for (size_t i = 0; i < 4; i++) {
        algo_state s;
        memset(&s, 0, sizeof s);
        assert_int_equal(rls__shm_read(&tx, i, &s), RLS_OK);
        assert_true(s.present && s.b == 1 && s.c == key_hash(ks[i].key));
        total += s.a;
    }
    rls__shm_unlock(&tx);
    assert_int_equal(total, (int64_t)procs * ops);
    rls__shm_close(t);
}

/* ---- lock-free reads (rls__shm_snap) -------------------------------------- */

/* Writers yield halfway through each copy, the reader between reading the
 * publish counter and copying the state: copies are rewritten under
 * readers all the time. */
static void yield_hook(int point, size_t it)
{
    (void)it;
    if (point == RLS__SHM_AT_HALF || point == RLS__SHM_AT_SNAP)
        sched_yield();
}

/* A churn item's state holding n: c ties it to its limit and key, every
 * field to n. */
static int64_t churn_id(const rls__shm_item *it)
{
    return key_hash(it->key) ^ (it->lid << 40);
}

static algo_state churn_state(const rls__shm_item *it, int64_t n)
{
    algo_state s;
    memset(&s, 0, sizeof s);
    s.present = 1;
    s.a = n;
    s.b = 2 * n;
    s.c = churn_id(it) ^ n;
    s.last_ms = n;
    s.expires_ms = 1;   /* expired at once: its slot goes to the next new item */
    return s;
}

static int churn_whole(const rls__shm_item *it, const algo_state *s)
{
    return s->b == 2 * s->a && s->c == (churn_id(it) ^ s->a) && s->last_ms == s->a &&
           s->expires_ms == 1;
}

/* n := n + 1 on one item, under its lock. */
static int bump(rls__shm *t, const rls__shm_item *it, int churn)
{
    rls__shm_txn tx;
    int rc = rls__shm_lock(t, it, 1, 10, &tx);
    algo_state s;
    memset(&s, 0, sizeof s);
    if (rc == RLS_OK)
        rc = rls__shm_read(&tx, 0, &s);
    int64_t n = s.present ? s.a + 1 : 1;
    algo_state w = churn ? churn_state(it, n) : state_of(n);
    if (rc == RLS_OK)
        rc = rls__shm_write(&tx, 0, &w);
    rls__shm_unlock(&tx);
    return rc;
}

static void snap_writer(const char *p, int id, int ops, int go)
{
    rls__shm *t = NULL;
    char churn[32], c;
    if (rls__shm_open(&t, p, &G_SMALL, NULL, 0) != RLS_OK)
        _exit(2);
    if (read(go, &c, 1) != 0)
        _exit(5);
    rls__shm_hook = yield_hook;
    rls__shm_item keeper = item(1, "k0");
    for (int j = 0; j < ops; j++) {
        snprintf(churn, sizeof churn, "c%d-%d", id, j % 60);
        rls__shm_item ch = item(2 + j % 2, churn);   /* two limits, one key */
        if (bump(t, &keeper, 0) != RLS_OK || bump(t, &ch, 1) != RLS_OK)
            _exit(3);
    }
    rls__shm_close(t);
    _exit(0);
}

/* The reader's side: a keeper read lock-free is whole and never goes
 * back; a churn item read lock-free is whole and its own (its slot is
 * reused by other items all the time). */
static void snap_read_round(rls__shm *t, int r, int64_t *last, long *ok, long *busy)
{
    char churn[32];
    rls__shm_item keeper = item(1, "k0");
    algo_state s;
    memset(&s, 0, sizeof s);
    int rc = rls__shm_snap(t, &keeper, &s);
    if (rc == RLS_EBUSY) {
        (*busy)++;
    } else {
        assert_int_equal(rc, RLS_OK);
        if (s.present && !whole(&s))
            fail_msg("keeper torn: a %lld b %lld c %lld", (long long)s.a, (long long)s.b,
                     (long long)s.c);
        int64_t n = s.present ? s.a : 0;
        if (n < *last)
            fail_msg("keeper went back from %lld to %lld", (long long)*last, (long long)n);
        *last = n;
        (*ok)++;
    }
    snprintf(churn, sizeof churn, "c%d-%d", r % 2, r % 60);
    rls__shm_item ch = item(2 + r / 60 % 2, churn);
    memset(&s, 0, sizeof s);
    rc = rls__shm_snap(t, &ch, &s);
    if (rc == RLS_EBUSY) {
        (*busy)++;
        return;
    }
    assert_int_equal(rc, RLS_OK);
    if (s.present && !churn_whole(&ch, &s))
        fail_msg("%s read torn or another item's: a %lld b %lld c %lld", churn,
                 (long long)s.a, (long long)s.b, (long long)s.c);
    (*ok)++;
}

/* Lock-free reads while two processes write (yielding halfway through
 * every copy) and reuse slots: never a torn state, never another item's,
 * never an older state after a newer one; the final read is exact. */
static void lock_free_reads_are_whole_and_their_own(void **state)
{
    const int procs = 2, ops = knob("RLS_SHM_SNAP_OPS", 20000);
    char p[400];
    snprintf(p, sizeof p, "%s/snap.shm", dir);
    rls__shm *t = NULL;
    assert_int_equal(rls__shm_open(&t, p, &G_SMALL, NULL, 0), RLS_OK);
    pid_t pid[2];
    start_writers(pid, procs, snap_writer, p, ops);
    rls__shm_hook = yield_hook;
    int64_t last = 0;
    long ok = 0, busy = 0;
    int running = procs;
    for (int r = 0; running > 0; r++) {
        snap_read_round(t, r, &last, &ok, &busy);
        for (int i = 0; i < procs && r % 64 == 0; i++) {
            int st;
            if (pid[i] > 0 && waitpid(pid[i], &st, WNOHANG) == pid[i]) {
                assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
                pid[i] = -1;
                running--;
            }
        }
    }
    rls__shm_hook = NULL;
    print_message("%ld lock-free reads whole, %ld busy (retried under the lock)\n", ok, busy);
    assert_true(ok >= 100);
    rls__shm_item keeper = item(1, "k0");
    algo_state s;
    memset(&s, 0, sizeof s);
    assert_int_equal(rls__shm_snap(t, &keeper, &s), RLS_OK);
    assert_int_equal(s.a, (int64_t)procs * ops);
    rls__shm_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(racing_creators_all_attach_one_whole_table),
        cmocka_unit_test(processes_and_threads_leave_exact_totals),
        cmocka_unit_test(reused_entries_never_cross_items),
        cmocka_unit_test(lock_free_reads_are_whole_and_their_own),
        cmocka_unit_test(a_process_killed_inside_the_critical_section_wedges_nothing),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
