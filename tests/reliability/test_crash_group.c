/*
 * test_crash_group.c - crash safety of group commit and atomic batches
 * (issue #19): SIGKILL at random points of a process whose threads share
 * one thread-safe handle, and of a process doing batch checks.
 *
 *  1. Group writers killed mid-traffic.  Each round forks a process with
 *     one thread-safe handle (rls_options.thread_safe) and GROUP_THREADS
 *     threads on it, each on a key of its own of one action: the six
 *     algorithms durable, a memory-class limit, and an action mixing a
 *     memory and a durable limit.  The threads' checks queue behind each
 *     other and are committed in groups.  A thread announces each check's
 *     cost on its own pipe before the call and acknowledges it after the
 *     call returned; the process is SIGKILLed at a random moment.  After
 *     every round, for each thread and each limit of its action:
 *     acknowledged <= stored <= acknowledged + the check in flight (a group
 *     member's call returns only after the commit that holds its charge,
 *     and a killed group leaves each member charged or not, never twice),
 *     the file is intact and a surviving handle can check.
 *  2. Batch writers killed mid-traffic.  A process does rls_check_many of
 *     three durable items (three algorithms, three keys) and of a pair
 *     mixing a memory-class item and a durable item, all of the same
 *     cost.  After the kill: the three durable items are charged exactly
 *     alike (one transaction: all or nothing, even when killed inside it);
 *     the memory item is charged at least as much as its durable partner
 *     and at most one in-flight batch more (the memory write precedes the
 *     COMMIT: DESIGN-NOTES, the memory class's crash window); every count
 *     is within [acknowledged, acknowledged + in flight].
 *
 * Knobs: RLS_GROUP_CRASH_ROUNDS (default 150), RLS_CRASH_MAX_US (longest
 * life of a writer after its first acknowledgement, 12000 us).
 */
#include <pthread.h>
#include "reltest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  fw:\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 1000000000, window: 1w } ]\n"
    "  sw:\n"
    "    limits: [ { name: l, algorithm: sliding_window, limit: 1000000000, window: 1w } ]\n"
    "  sl:\n"
    "    limits: [ { name: l, algorithm: sliding_log, limit: 10000, window: 1w } ]\n"
    "  tb:\n"
    "    limits: [ { name: l, algorithm: token_bucket, limit: 1, window: 1w, burst: 1000000000 } ]\n"
    "  gc:\n"
    "    limits: [ { name: l, algorithm: gcra, limit: 1000000000, window: 1w, burst: 1000000000 } ]\n"
    "  lb:\n"
    "    limits: [ { name: l, algorithm: leaky_bucket, limit: 1000000000, window: 1w, burst: 1000000000 } ]\n"
    "  mem:\n"
    "    limits: [ { name: l, algorithm: gcra, limit: 1000000000, window: 1w, burst: 1000000000,"
    " durability: memory } ]\n"
    "  mix:\n"
    "    limits:\n"
    "      - { name: m, algorithm: fixed_window, limit: 1000000000, window: 1w,"
    " durability: memory }\n"
    "      - { name: d, algorithm: token_bucket, limit: 1, window: 1w, burst: 1000000000 }\n";

static const char *ACTS[] = {"fw", "sw", "sl", "tb", "gc", "lb", "mem", "mix"};
#define NACTS ((int)(sizeof ACTS / sizeof ACTS[0]))
#define GROUP_THREADS 4
#define ROUND_MS 10000   /* each round's frozen clock is 10 s after the last */

/* Pipe protocol (as test_crash.c): cost c (1..15) announced before the
 * call; 0x80|c after it: c units charged for good; 0x40|c: nothing. */
#define ACK_KEPT 0x80
#define ACK_NONE 0x40

static void say(int fd, unsigned char b)
{
    if (write(fd, &b, 1) != 1)
        _exit(4);
}

static rls_db *writer_open(const char *path, const char *shm_dir, int thread_safe,
                          int durability)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.thread_safe = thread_safe;
    o.durability = durability;
    o.shm_dir = shm_dir;
    if (rls_open(&db, path, &o) != RLS_OK)
        _exit(2);
    return db;
}

/* ---- 1. group writers ----------------------------------------------------- */

struct gthread {
    rls_db *db;
    const char *action;
    char key[48];
    int fd;
    int64_t now;
    unsigned seed;
};

/* A thread of the group writer: never returns; the process is killed. */
static void *gthread_main(void *arg)
{
    struct gthread *g = arg;
    rls_result r;
    for (;;) {
        unsigned char cost = (unsigned char)(1 + rand_r(&g->seed) % 4);
        say(g->fd, cost);
        if (rls_check_at(g->db, g->action, g->key, cost, g->now, &r) != RLS_OK)
            _exit(3);
        say(g->fd, (unsigned char)((r.allowed ? ACK_KEPT : ACK_NONE) | cost));
    }
    return NULL;
}

/* Every other round under `durability: full`: its groups' COMMITs are
 * fsynced, and checks that queue meanwhile join them late (group_tx.c). */
static void group_writer(const char *path, const char *shm_dir, struct gthread *g, int n,
                         int durability)
{
    rls_db *db = writer_open(path, shm_dir, 1, durability);
    pthread_t th[GROUP_THREADS];
    for (int i = 0; i < n; i++) {
        g[i].db = db;
        if (pthread_create(&th[i], NULL, gthread_main, &g[i]) != 0)
            _exit(5);
    }
    for (;;)
        pause();
}

/* The judge's handle: the writers' shared-memory table (in t->dir). */
static rls_db *judge_db;

static void judge_open(itest *t)
{
    rls_options o;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    assert_int_equal(rls_open(&judge_db, t->path, &o), RLS_OK);
}

/* Units stored on each limit of (action, key) at now, in *used[0..n). */
static int stored_units(rls_db *db, const char *action, const char *key, int64_t now,
                        int64_t *used, int cap)
{
    rls_rows *lim = NULL;
    int rc = rls_explain_at(db, action, key, now, NULL, &lim);
    if (rc != RLS_OK)
        fail_msg("explain %s %s: %s: %s", action, key, rls_errname(rc), rls_errmsg(db));
    int n = (int)rls_rows_count(lim);
    assert_true(n >= 1 && n <= cap);
    for (int i = 0; i < n; i++)
        used[i] = rel_row_int(lim, i, "used");
    rls_rows_free(lim);
    return n;
}

/* Reads a writer's pipe to its end: units acknowledged as charged, and the
 * cost of the call in flight when it died (0: none). */
static void drain(int fd, int64_t *acked, int64_t *pending)
{
    unsigned char buf[4096];
    ssize_t n;
    *acked = *pending = 0;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t j = 0; j < n; j++) {
            if (buf[j] & ACK_KEPT)
                *acked += buf[j] & 0x0f;
            *pending = buf[j] & (ACK_KEPT | ACK_NONE) ? 0 : buf[j];
        }
    close(fd);
}

/* The name of round's writer: on PostgreSQL the judge waits for the
 * killed writer's session, which may still carry out its last COMMIT
 * (reltest.h), else it could see one key before that commit and the next
 * after it. */
static void writer_app(long round, char *app, size_t size)
{
    snprintf(app, size, "rlcg_%ld_%ld", (long)getpid(), round);
}

static void writer_path(const itest *t, long round, char *buf, size_t size)
{
    char app[64];
    writer_app(round, app, sizeof app);
    rel_named_path(t->path, app, buf, size);
}

static void writer_gone(const itest *t, long round)
{
    char app[64];
    writer_app(round, app, sizeof app);
    rel_pg_session_gone(t->path, app);
}

static void reap_killed(const itest *t, pid_t pid, long round)
{
    int status;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("round %ld: the writer ended by itself (status %d): it saw an error", round,
                 status);
    writer_gone(t, round);
}

/* After a round: the file is intact and a survivor can still charge. */
static void round_after(itest *t, long round, int64_t now)
{
    const char *ok = rel_integrity(t->db);
    if (strcmp(ok, "ok") != 0)
        fail_msg("round %ld: %s", round, ok);
    rls_result r;
    int rc = rls_check_at(t->db, "fw", "survivor", 1, now, &r);
    if (rc != RLS_OK || !r.allowed)
        fail_msg("round %ld: a survivor's check: %s: %s", round, rls_errname(rc),
                 rls_errmsg(t->db));
}

/* A writer's life: a third die while starting (open, first checks), the
 * rest up to max_us after that. */
static long life_us(unsigned *seed, long startup, long max_us)
{
    return rand_r(seed) % 3 == 0 ? (long)(rand_r(seed) % (unsigned long)(startup + 1))
                                 : startup + (long)(rand_r(seed) % (unsigned long)max_us);
}

/* Microseconds from fork() until a child of kind `batch` (0: group)
 * acknowledged its first operation, the median of three. */
static long startup_us(itest *t, int batch);

static void judge_group_thread(itest *t, long round, const struct gthread *g, int fd,
                               int64_t *acked_total)
{
    int64_t acked, pending, used[4];
    drain(fd, &acked, &pending);
    int n = stored_units(judge_db, g->action, g->key, g->now, used, 4);
    for (int l = 0; l < n; l++)
        if (used[l] < acked || used[l] > acked + pending)
            fail_msg("round %ld, %s %s, limit %d: stored %lld units, acknowledged %lld, "
                     "in flight %lld", round, g->action, g->key, l, (long long)used[l],
                     (long long)acked, (long long)pending);
    *acked_total += acked;
}

static void sigkill_group_writers_lose_no_acknowledged_admission(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    long rounds = rel_knob("RLS_GROUP_CRASH_ROUNDS", 150, 8);
    long max_us = rel_knob("RLS_CRASH_MAX_US", 12000, 300000);
    unsigned seed = (unsigned)time(NULL);
    long startup = startup_us(t, 0);
    judge_open(t);
    int64_t acked_total = 0;
    print_message("seed %u; first acknowledgement %ld us after fork\n", seed, startup);
    for (long round = 0; round < rounds; round++) {
        struct gthread g[GROUP_THREADS];
        int rfd[GROUP_THREADS];
        for (int i = 0; i < GROUP_THREADS; i++) {
            int fds[2];
            assert_int_equal(pipe(fds), 0);
            g[i].action = ACTS[(round * GROUP_THREADS + i) % NACTS];
            snprintf(g[i].key, sizeof g[i].key, "g:%ld:%d", round, i);
            g[i].fd = fds[1];
            g[i].now = T0 + round * ROUND_MS;
            g[i].seed = seed + (unsigned)(round * GROUP_THREADS + i);
            rfd[i] = fds[0];
        }
        char wpath[4200];
        writer_path(t, round, wpath, sizeof wpath);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            for (int i = 0; i < GROUP_THREADS; i++)
                close(rfd[i]);
            group_writer(wpath, t->dir, g, GROUP_THREADS,
                         round % 2 ? RLS_DURABILITY_FULL : RLS_DURABILITY_NORMAL);
        }
        for (int i = 0; i < GROUP_THREADS; i++)
            close(g[i].fd);
        rel_sleep_us(life_us(&seed, startup, max_us));
        kill(pid, SIGKILL);
        reap_killed(t, pid, round);
        for (int i = 0; i < GROUP_THREADS; i++)
            judge_group_thread(t, round, &g[i], rfd[i], &acked_total);
        round_after(t, round, T0 + round * ROUND_MS);
    }
    print_message("%ld rounds, %lld units acknowledged\n", rounds, (long long)acked_total);
    assert_true(acked_total > 0);
    rls_close(judge_db);
    it_free(t);
}

/* ---- 2. batch writers -------------------------------------------------------- */

/* The durable triple, then the memory + durable pair, of round r. */
static void batch_items(long r, rls_item tri[3], rls_item pair[2], char keys[5][48])
{
    static const char *tri_act[3] = {"fw", "sl", "gc"};
    for (int i = 0; i < 5; i++)
        snprintf(keys[i], sizeof keys[i], "b:%ld:%d", r, i);
    for (int i = 0; i < 3; i++)
        tri[i] = (rls_item){tri_act[i], keys[i], 0};
    pair[0] = (rls_item){"mem", keys[3], 0};
    pair[1] = (rls_item){"lb", keys[4], 0};
}

/* The batch writer: the triple on fd_tri, the pair on fd_pair; never
 * returns. */
static void batch_writer(const char *path, const char *shm_dir, long round, int64_t now,
                         int fd_tri, int fd_pair, unsigned seed)
{
    rls_db *db = writer_open(path, shm_dir, 0, RLS_DURABILITY_NORMAL);
    rls_item tri[3], pair[2];
    rls_result r[3];
    char keys[5][48];
    batch_items(round, tri, pair, keys);
    for (;;) {
        int use_pair = (int)(rand_r(&seed) % 2);
        rls_item *it = use_pair ? pair : tri;
        size_t n = use_pair ? 2 : 3;
        int fd = use_pair ? fd_pair : fd_tri;
        unsigned char cost = (unsigned char)(1 + rand_r(&seed) % 4);
        for (size_t i = 0; i < n; i++)
            it[i].cost = cost;
        say(fd, cost);
        if (rls_check_many_at(db, it, n, now, r) != RLS_OK)
            _exit(3);
        say(fd, (unsigned char)((r[0].allowed ? ACK_KEPT : ACK_NONE) | cost));
    }
}

static int64_t one_limit(itest *t, const char *action, const char *key, int64_t now)
{
    int64_t used[4];
    assert_int_equal(stored_units(judge_db, action, key, now, used, 4), 1);
    return used[0];
}

static void judge_batch(itest *t, long round, int64_t now, int fd_tri, int fd_pair,
                        int64_t *acked_total)
{
    rls_item tri[3], pair[2];
    char keys[5][48];
    int64_t acked, pending, u[3];
    batch_items(round, tri, pair, keys);
    drain(fd_tri, &acked, &pending);
    for (int i = 0; i < 3; i++)
        u[i] = one_limit(t, tri[i].action, tri[i].key, now);
    if (u[0] != u[1] || u[1] != u[2] || u[0] < acked || u[0] > acked + pending)
        fail_msg("round %ld: durable batch items stored %lld, %lld, %lld; acknowledged "
                 "%lld, in flight %lld", round, (long long)u[0], (long long)u[1],
                 (long long)u[2], (long long)acked, (long long)pending);
    *acked_total += acked;
    drain(fd_pair, &acked, &pending);
    int64_t mem = one_limit(t, pair[0].action, pair[0].key, now);
    int64_t dur = one_limit(t, pair[1].action, pair[1].key, now);
    if (dur < acked || dur > mem || mem > acked + pending)
        fail_msg("round %ld: memory + durable batch stored %lld (memory) and %lld "
                 "(durable); acknowledged %lld, in flight %lld", round, (long long)mem,
                 (long long)dur, (long long)acked, (long long)pending);
    *acked_total += acked;
}

static void sigkill_batch_writers_are_all_or_nothing(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    long rounds = rel_knob("RLS_GROUP_CRASH_ROUNDS", 150, 8);
    long max_us = rel_knob("RLS_CRASH_MAX_US", 12000, 300000);
    unsigned seed = (unsigned)time(NULL) ^ 0x5bd1e995u;
    long startup = startup_us(t, 1);
    judge_open(t);
    int64_t acked_total = 0;
    print_message("seed %u; first acknowledgement %ld us after fork\n", seed, startup);
    for (long round = 0; round < rounds; round++) {
        int64_t now = T0 + round * ROUND_MS;
        int a[2], b[2];
        assert_int_equal(pipe(a), 0);
        assert_int_equal(pipe(b), 0);
        char wpath[4200];
        writer_path(t, round, wpath, sizeof wpath);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(a[0]);
            close(b[0]);
            batch_writer(wpath, t->dir, round, now, a[1], b[1], seed + (unsigned)round);
        }
        close(a[1]);
        close(b[1]);
        rel_sleep_us(life_us(&seed, startup, max_us));
        kill(pid, SIGKILL);
        reap_killed(t, pid, round);
        judge_batch(t, round, now, a[0], b[0], &acked_total);
        round_after(t, round, now);
    }
    print_message("%ld rounds, %lld units acknowledged\n", rounds, (long long)acked_total);
    assert_true(acked_total > 0);
    rls_close(judge_db);
    it_free(t);
}

/* ---- calibration ---------------------------------------------------------------- */

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One calibration writer (its own keys, n), killed at its first
 * acknowledgement. */
static long startup_once(itest *t, int batch, long n)
{
    int fds[2];
    unsigned char c = 0;
    assert_int_equal(pipe(fds), 0);
    int64_t t0 = mono_us();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (batch)   /* the triple's and the pair's acknowledgements on one pipe */
            batch_writer(t->path, t->dir, -1 - n, T0, fds[1], fds[1], 7);
        struct gthread g = {.action = "fw", .fd = fds[1], .now = T0, .seed = 7};
        snprintf(g.key, sizeof g.key, "calibration:%ld", n);
        group_writer(t->path, t->dir, &g, 1, RLS_DURABILITY_NORMAL);
    }
    close(fds[1]);
    while (read(fds[0], &c, 1) == 1 && !(c & (ACK_KEPT | ACK_NONE))) {
    }
    long us = (long)(mono_us() - t0);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fds[0]);
    return us;
}

static long startup_us(itest *t, int batch)
{
    long a = startup_once(t, batch, 1), b = startup_once(t, batch, 2),
         c = startup_once(t, batch, 3);
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

int main(int argc, char **argv)
{
    (void)argc;
    rel_init(argv[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sigkill_group_writers_lose_no_acknowledged_admission),
        cmocka_unit_test(sigkill_batch_writers_are_all_or_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
