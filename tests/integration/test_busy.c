/*
 * test_busy.c - the writers' turn (storage/sqlite/busy.c): exactness when
 * processes take turns, no lock-out by processes killed while holding or
 * waiting for the turn or holding the writers off for a checkpoint, the
 * busy timeout, fork, two handles in one thread, and SQLite's lock alone
 * when the side file cannot hold the turn.
 *
 * Bounds on waits are functional (a killed holder must not stop the others
 * for the busy timeout), generous, and never a benchmark.
 */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include "itest.h"
#include "sqlite/busy.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  fw:\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 1000, window: 1d } ]\n"
    "  many:\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n";

/* A waiter that must get through waits up to WAIT_MS (its busy timeout):
 * a broken mechanism shows as EBUSY, whatever the machine's speed.  The
 * mechanism takes a few ms; BOUND_MS only catches one that works but
 * drags, and is far above what a loaded machine adds. */
#define WAIT_MS 60000
#define BOUND_MS (WAIT_MS / 4)

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A child process and the two ends of its pipes. */
typedef struct child {
    pid_t pid;
    int to;     /* parent -> child */
    int from;   /* child -> parent */
} child;

static child child_fork(int (*body)(int in, int out, const void *arg), const void *arg)
{
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(body(down[0], up[1], arg));
    }
    close(up[1]);
    close(down[0]);
    return (child){pid, down[1], up[0]};
}

/* Kills (if kill) and reaps the child; its exit status, or -1 if killed. */
static int child_end(child *c, int kill_it)
{
    int status = 0;
    if (kill_it)
        kill(c->pid, SIGKILL);
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    close(c->to);
    close(c->from);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char child_read(const child *c)
{
    char ch = 0;
    assert_int_equal(read(c->from, &ch, 1), 1);
    return ch;
}

/* Holds the turn and SQLite's write lock (an open write transaction) until
 * told to commit.  Says 'h' once it holds both. */
static int holder_body(int in, int out, const void *arg)
{
    rls_db *db;
    int holding, queued;
    char ch;
    if (rls_open(&db, arg, NULL) != RLS_OK || rls__begin(db, 1) != RLS_OK)
        return 2;
    ch = rls__busy_probe(db, &holding, &queued) && holding ? 'h' : 'n';
    if (write(out, &ch, 1) != 1 || read(in, &ch, 1) != 1)
        return 3;
    if (rls__commit(db) != RLS_OK)
        return 4;
    ch = 'c';
    if (write(out, &ch, 1) != 1)
        return 5;
    rls_close(db);
    return 0;
}

static child holder_start(const char *path)
{
    child c = child_fork(holder_body, path);
    assert_int_equal(child_read(&c), 'h');
    return c;
}

/* What a checker reports. */
typedef struct outcome {
    int rc;
    int allowed;
    int64_t ms;        /* how long its check took */
    int shared;        /* it took turns in the shared memory */
} outcome;

typedef struct check_arg {
    const char *path;
    const char *key;
    int busy_ms;
} check_arg;

/* One check of "many" (rules loaded first by a peek, which waits for
 * nothing), reported as an outcome. */
static int checker_body(int in, int out, const void *arg)
{
    const check_arg *a = arg;
    rls_options o;
    rls_options_init(&o);
    o.busy_timeout_ms = a->busy_ms;
    rls_db *db;
    rls_result r;
    outcome oc = {0};
    int holding, queued;
    if (rls_open(&db, a->path, &o) != RLS_OK || rls_peek_at(db, "many", "x", 1, T0, &r) != RLS_OK)
        return 2;
    int64_t t0 = mono_ms();
    oc.rc = rls_check_at(db, "many", a->key, 1, T0, &r);
    oc.ms = mono_ms() - t0;
    oc.allowed = r.allowed;
    oc.shared = rls__busy_probe(db, &holding, &queued);
    if (write(out, &oc, sizeof oc) != (ssize_t)sizeof oc)
        return 3;
    rls_close(db);
    return 0;
}

static child checker_start(const char *path, const char *key, int busy_ms)
{
    static check_arg args[64];
    static int next;
    check_arg *a = &args[next++ % 64];
    *a = (check_arg){path, key, busy_ms};
    return child_fork(checker_body, a);
}

static outcome checker_outcome(child *c)
{
    outcome oc;
    assert_int_equal(read(c->from, &oc, sizeof oc), (ssize_t)sizeof oc);
    assert_int_equal(child_end(c, 0), 0);
    return oc;
}

/* Waits (up to 5 s) until `n` tickets are taken and not done, as seen
 * from db's shared memory. */
static void wait_queued(rls_db *db, int n)
{
    int holding, queued = 0;
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(rls__busy_probe(db, &holding, &queued), 1);
        if (queued >= n)
            return;
        sleep_ms(1);
    }
    fail_msg("%d tickets in line, expected %d", queued, n);
}

/* Nothing to read from the child yet: it still waits. */
static void still_waiting(const child *c)
{
    fd_set set;
    struct timeval tv = {0, 0};
    FD_ZERO(&set);
    FD_SET(c->from, &set);
    assert_int_equal(select(c->from + 1, &set, NULL, NULL, &tv), 0);
}

/* ---- exactness ---------------------------------------------------------- */

#define PROCS 4
#define TRIES 400

/* PROCS children each try TRIES checks of action/key; returns the admitted
 * total.  Each child fails unless its handle took turns in the shared
 * memory exactly when `shared` says so. */
static int hammer(const char *path, const char *action, const char *key, int shared)
{
    int fds[PROCS][2];
    pid_t pids[PROCS];
    int total = 0;
    for (int p = 0; p < PROCS; p++) {
        assert_int_equal(pipe(fds[p]), 0);
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            rls_db *db;
            rls_result r;
            int ok = 0, errors = 0, holding, queued;
            if (rls_open(&db, path, NULL) != RLS_OK)
                _exit(2);
            for (int i = 0; i < TRIES; i++) {
                if (rls_check_at(db, action, key, 1, T0 + 1000, &r) != RLS_OK)
                    errors++;
                else
                    ok += r.allowed;
            }
            int took_turns = rls__busy_probe(db, &holding, &queued);
            rls_close(db);
            if (write(fds[p][1], &ok, sizeof ok) != sizeof ok)
                _exit(3);
            _exit(errors ? 1 : took_turns != shared ? 4 : 0);
        }
        close(fds[p][1]);
    }
    for (int p = 0; p < PROCS; p++) {
        int ok = 0, status = 0;
        assert_int_equal(read(fds[p][0], &ok, sizeof ok), (ssize_t)sizeof ok);
        close(fds[p][0]);
        waitpid(pids[p], &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        total += ok;
    }
    return total;
}

static void processes_taking_turns_admit_exactly_the_limit(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    int holding, queued;
    assert_int_equal(rls__busy_probe(t->db, &holding, &queued), 1);
    assert_int_equal(hammer(t->path, "fw", "hot", 1), 1000);
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state"), 1000);
    it_free(t);
}

/* A directory where the side file "<db>-ckpt" should be: no shared turn,
 * the handles meet SQLite's lock alone, still exactly. */
static void without_the_side_file_sqlite_lock_alone(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp();
    char path[4096], side[4200];
    rls_db *db;
    int holding, queued;
    tu_path(path, sizeof path, dir, "rl.db");
    snprintf(side, sizeof side, "%s-ckpt", path);
    assert_int_equal(mkdir(side, 0700), 0);
    assert_int_equal(rls_open(&db, path, NULL), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    assert_int_equal(rls__busy_probe(db, &holding, &queued), 0);
    assert_int_equal(hammer(path, "fw", "hot", 0), 1000);
    rls_close(db);
    tu_rmdir(dir);
}

/* A read-only handle does not line up, and reads while a writer holds the
 * turn and the lock. */
static void a_reader_does_not_take_turns(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    child h = holder_start(t->path);
    rls_options o;
    rls_options_init(&o);
    o.read_only = 1;
    rls_db *ro;
    rls_result r;
    int holding, queued;
    assert_int_equal(rls_open(&ro, t->path, &o), RLS_OK);
    assert_int_equal(rls_peek_at(ro, "fw", "k", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    assert_int_equal(rls__busy_probe(ro, &holding, &queued), 0);
    rls_close(ro);
    assert_int_equal(write(h.to, "c", 1), 1);
    assert_int_equal(child_read(&h), 'c');
    assert_int_equal(child_end(&h, 0), 0);
    it_free(t);
}

/* ---- processes killed --------------------------------------------------- */

/* The holder is killed inside its transaction while another process waits
 * for the turn: that one goes on at once, not after its busy timeout. */
static void holder_killed_in_its_transaction_does_not_block(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    child h = holder_start(t->path);
    child c = checker_start(t->path, "after-kill", WAIT_MS);
    wait_queued(t->db, 2);
    sleep_ms(20);
    still_waiting(&c);
    int64_t t0 = mono_ms();
    child_end(&h, 1);
    outcome oc = checker_outcome(&c);
    int64_t took = mono_ms() - t0;
    assert_int_equal(oc.rc, RLS_OK);
    assert_true(oc.allowed);
    assert_true(oc.shared);
    if (took > BOUND_MS)
        fail_msg("the waiter went on %lld ms after the holder was killed", (long long)took);
    it_free(t);
}

/* Eight processes killed while in line, then the holder: a process that
 * lined up behind them all goes on at once. */
static void processes_killed_in_line_do_not_block(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    child h = holder_start(t->path);
    child w[8];
    for (int i = 0; i < 8; i++) {
        char key[16];
        snprintf(key, sizeof key, "w%d", i);
        w[i] = checker_start(t->path, key, WAIT_MS);
    }
    wait_queued(t->db, 9);
    for (int i = 0; i < 8; i++)
        child_end(&w[i], 1);
    child s = checker_start(t->path, "survivor", WAIT_MS);
    wait_queued(t->db, 10);
    sleep_ms(10);
    still_waiting(&s);
    int64_t t0 = mono_ms();
    child_end(&h, 1);
    outcome oc = checker_outcome(&s);
    int64_t took = mono_ms() - t0;
    assert_int_equal(oc.rc, RLS_OK);
    assert_true(oc.allowed);
    if (took > BOUND_MS)
        fail_msg("the survivor went on %lld ms after the holder was killed", (long long)took);
    /* the line is empty again: this handle's check goes through */
    assert_true(it_check(t, "many", "parent", 1, T0, NULL));
    it_free(t);
}

/* Holds the writers off as a checkpoint's last step does, then waits to be
 * killed.  Says 'o' once they are held off. */
static int hold_off_body(int in, int out, const void *arg)
{
    rls_db *db;
    rls_result r;
    char ch = 'o';
    if (rls_open(&db, arg, NULL) != RLS_OK || rls_check_at(db, "many", "h", 1, T0, &r) != RLS_OK)
        return 2;
    rls__busy_hold_off(db);
    if (write(out, &ch, 1) != 1)
        return 3;
    for (;;)
        pause();
}

/* A process killed while it holds the writers off (the last step of a
 * checkpoint) does not stop them. */
static void killed_while_holding_writers_off_does_not_block(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    child h = child_fork(hold_off_body, t->path);
    assert_int_equal(child_read(&h), 'o');
    child c = checker_start(t->path, "held", WAIT_MS);
    /* No "still waiting" probe here: a hold-off ends by itself after
     * HOLD_MAX_NS (50 ms), so whether the checker still waits at any moment
     * depends on the machine's speed (under ASan and load it often has
     * gone on).  What must hold is that it goes on, admitted. */
    sleep_ms(20);
    int64_t t0 = mono_ms();
    child_end(&h, 1);
    outcome oc = checker_outcome(&c);
    int64_t took = mono_ms() - t0;
    assert_int_equal(oc.rc, RLS_OK);
    assert_true(oc.allowed);
    if (took > BOUND_MS)
        fail_msg("a writer went on %lld ms after the one holding it off was killed",
                 (long long)took);
    assert_true(it_check(t, "many", "parent", 1, T0, NULL));
    it_free(t);
}

/* Writers killed at random moments, many times: a check afterwards is not
 * held up by what they left in the shared memory. */
static void random_kills_leave_no_stale_turn(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    unsigned seed = 7;
    for (int round = 0; round < 30; round++) {
        pid_t pid[3];
        for (int i = 0; i < 3; i++) {
            pid[i] = fork();
            assert_true(pid[i] >= 0);
            if (pid[i] == 0) {
                rls_db *db;
                rls_result r;
                if (rls_open(&db, t->path, NULL) != RLS_OK)
                    _exit(2);
                for (;;)
                    rls_check_at(db, "many", "busy", 1, T0, &r);
            }
        }
        sleep_ms(1 + (long)(rand_r(&seed) % 15));
        for (int i = 0; i < 3; i++) {
            kill(pid[i], SIGKILL);
            waitpid(pid[i], NULL, 0);
        }
        int64_t t0 = mono_ms();
        rls_result r;
        int rc = rls_check_at(t->db, "many", "survivor", 1, T0, &r);
        int64_t took = mono_ms() - t0;
        if (rc != RLS_OK || took > BOUND_MS)
            fail_msg("round %d: a check after the kills took %lld ms: %s", round,
                     (long long)took, rls_errname(rc));
    }
    it_free(t);
}

/* ---- timeout, fork, threads ------------------------------------------- */

/* A waiter gives up at its busy timeout with EBUSY, and its abandoned
 * ticket does not hold up the next one. */
static void the_busy_timeout_is_kept(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    child h = holder_start(t->path);
    child c = checker_start(t->path, "patient", 200);
    outcome oc = checker_outcome(&c);
    assert_int_equal(oc.rc, RLS_EBUSY);
    assert_true(oc.ms >= 150 && oc.ms < BOUND_MS);
    c = checker_start(t->path, "impatient", 0);
    oc = checker_outcome(&c);
    assert_int_equal(oc.rc, RLS_EBUSY);
    assert_true(oc.ms < BOUND_MS);
    assert_int_equal(write(h.to, "c", 1), 1);
    assert_int_equal(child_read(&h), 'c');
    assert_int_equal(child_end(&h, 0), 0);
    c = checker_start(t->path, "next", WAIT_MS);
    oc = checker_outcome(&c);
    assert_int_equal(oc.rc, RLS_OK);
    assert_true(oc.allowed);
    assert_true(oc.ms < BOUND_MS);
    it_free(t);
}

/* A forked child closing or using the inherited handle leaves the parent's
 * turn alone; both then take turns, exactly. */
static void fork_leaves_the_parents_turn_alone(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    int holding, queued, status;
    assert_int_equal(rls__begin(t->db, 1), RLS_OK);
    assert_int_equal(rls__busy_probe(t->db, &holding, &queued), 1);
    assert_true(holding);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rls_close(t->db);  /* inherited, never used here */
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(rls__busy_probe(t->db, &holding, &queued), 1);
    assert_true(holding);
    assert_int_equal(rls__commit(t->db), RLS_OK);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rls_result r;
        int ok = 0;
        for (int i = 0; i < 300; i++) {
            if (rls_check_at(t->db, "fw", "shared", 1, T0, &r) != RLS_OK)
                _exit(2);
            ok += r.allowed;
        }
        if (!rls__busy_probe(t->db, &holding, &queued))
            _exit(3);
        if (write(fds[1], &ok, sizeof ok) != sizeof ok)
            _exit(4);
        _exit(0);
    }
    close(fds[1]);
    int mine = 0, theirs = 0;
    for (int i = 0; i < 800; i++)
        mine += it_check(t, "fw", "shared", 1, T0, NULL);
    assert_int_equal(read(fds[0], &theirs, sizeof theirs), (ssize_t)sizeof theirs);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(mine + theirs, 1000);
    it_free(t);
}

/* Two handles on one file used in turn by one thread: each passes the
 * other's turn over, no EBUSY. */
static void two_handles_in_one_thread(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_db *other;
    rls_result r;
    int ok = 0;
    assert_int_equal(rls_open(&other, t->path, NULL), RLS_OK);
    for (int i = 0; i < 1200; i++) {
        rls_db *db = i % 2 ? other : t->db;
        assert_int_equal(rls_check_at(db, "fw", "k", 1, T0, &r), RLS_OK);
        ok += r.allowed;
    }
    assert_int_equal(ok, 1000);
    /* one handle inside a transaction, the other still writes: it passes
     * the turn over and meets SQLite's lock (EBUSY after its timeout) */
    rls_options o;
    rls_options_init(&o);
    o.busy_timeout_ms = 50;
    rls_db *quick;
    assert_int_equal(rls_open(&quick, t->path, &o), RLS_OK);
    assert_int_equal(rls_peek_at(quick, "many", "x", 1, T0, &r), RLS_OK);
    assert_int_equal(rls__begin(t->db, 1), RLS_OK);
    assert_int_equal(rls_check_at(quick, "many", "k", 1, T0, &r), RLS_EBUSY);
    rls__rollback(t->db);
    assert_int_equal(rls_check_at(quick, "many", "k", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    rls_close(quick);
    rls_close(other);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(processes_taking_turns_admit_exactly_the_limit),
        cmocka_unit_test(without_the_side_file_sqlite_lock_alone),
        cmocka_unit_test(a_reader_does_not_take_turns),
        cmocka_unit_test(holder_killed_in_its_transaction_does_not_block),
        cmocka_unit_test(processes_killed_in_line_do_not_block),
        cmocka_unit_test(killed_while_holding_writers_off_does_not_block),
        cmocka_unit_test(random_kills_leave_no_stale_turn),
        cmocka_unit_test(the_busy_timeout_is_kept),
        cmocka_unit_test(fork_leaves_the_parents_turn_alone),
        cmocka_unit_test(two_handles_in_one_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
