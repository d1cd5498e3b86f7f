/*
 * test_concurrency.c - exactness under concurrency and crash safety.
 *
 * Several processes, each with its own handle, hammer one key with a frozen
 * clock: the admitted total must equal what the limit allows, exactly.  A
 * writer killed with SIGKILL at random moments must never lose an admission
 * it acknowledged, and the database must stay intact.  With RLSTORE_TEST_PG
 * (itest.h) every process is a host of its own: its own connection to the
 * server, nothing shared on this machine.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  fw:\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 1000, window: 1d } ]\n"
    "  gc:\n"
    "    limits: [ { name: rate, algorithm: gcra, limit: 10, window: 1h, burst: 700 } ]\n"
    "  two:\n"
    "    limits:\n"
    "      - { name: a, algorithm: sliding_window, limit: 300, window: 1h }\n"
    "      - { name: b, algorithm: token_bucket, limit: 1, window: 1h, burst: 450 }\n"
    "  durable:\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 1000000000, window: 1w } ]\n";

#define PROCS 4
#define TRIES 400

/* Runs PROCS children that each try TRIES checks; returns admitted total. */
static int hammer(const char *path, const char *action, const char *key)
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
            int ok = 0, errors = 0;
            if (rls_open(&db, path, NULL) != RLS_OK)
                _exit(2);
            for (int i = 0; i < TRIES; i++) {
                if (rls_check_at(db, action, key, 1, T0 + 1000, &r) != RLS_OK)
                    errors++;
                else
                    ok += r.allowed;
            }
            rls_close(db);
            if (write(fds[p][1], &ok, sizeof ok) != sizeof ok)
                _exit(3);
            _exit(errors ? 1 : 0);
        }
        close(fds[p][1]);
    }
    for (int p = 0; p < PROCS; p++) {
        int ok = 0, status = 0;
        assert_int_equal(read(fds[p][0], &ok, sizeof ok), (ssize_t)sizeof ok);
        close(fds[p][0]);
        waitpid(pids[p], &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);  /* no unexpected error */
        total += ok;
    }
    return total;
}

static void processes_admit_exactly_the_limit_fixed(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(hammer(t->path, "fw", "hot"), 1000);
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state"), 1000);
    it_free(t);
}

static void processes_admit_exactly_the_limit_gcra(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(hammer(t->path, "gc", "hot"), 700);
    it_free(t);
}

static void processes_admit_exactly_the_tighter_of_two(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(hammer(t->path, "two", "hot"), 300);
    /* all or nothing: the bucket was charged exactly as often */
    rls_result r;
    assert_int_equal(rls_peek_at(t->db, "two", "hot", 1, T0 + 1000, &r), RLS_OK);
    assert_false(r.allowed);
    it_free(t);
}

/* The writer: checks forever, acknowledging each admission on fd after the
 * call returned. */
static void writer(const char *path, const char *key, int fd)
{
    rls_db *db;
    rls_result r;
    if (rls_open(&db, path, NULL) != RLS_OK)
        _exit(2);
    for (;;) {
        if (rls_check_at(db, "durable", key, 1, T0, &r) != RLS_OK)
            _exit(3);
        if (r.allowed && write(fd, "+", 1) != 1)
            _exit(4);
    }
}

static void sigkill_loses_no_acknowledged_admission(void **state)
{
    itest *t = it_new(RULES);
    int rounds = getenv("RLS_KILL_ROUNDS") ? atoi(getenv("RLS_KILL_ROUNDS")) : 40;
    int64_t acked_total = 0;
    srand((unsigned)time(NULL));
    for (int round = 0; round < rounds; round++) {
        char key[32];
        int fds[2];
        snprintf(key, sizeof key, "victim-%d", round);
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            writer(t->path, key, fds[1]);
        }
        close(fds[1]);
        int64_t acked = 0;
        char buf[4096];
        ssize_t n;
        /* Every other round kills the writer only once it has admitted
         * something, so that a slow open (PostgreSQL under the sanitizers
         * takes more than 20 ms to connect) still leaves admissions to
         * verify; the other rounds may also kill it while it opens. */
        if (round % 2 == 0 && (n = read(fds[0], buf, 1)) > 0)
            acked += n;
        struct timespec ts = {0, (long)(rand() % 20000) * 1000};  /* 0-20 ms */
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        while ((n = read(fds[0], buf, sizeof buf)) > 0)
            acked += n;
        close(fds[0]);
        acked_total += acked;

        char sql[200];
        snprintf(sql, sizeof sql,
                 "SELECT coalesce(sum(b), 0) FROM rls_state WHERE key = CAST('%s' AS BLOB)", key);
        int64_t stored = it_sql_int(t->path, sql);
        /* everything acknowledged is stored; at most one admission was
         * committed but killed before its acknowledgement */
        if (stored < acked || stored > acked + 1)
            fail_msg("round %d: stored %lld, acknowledged %lld", round, (long long)stored,
                     (long long)acked);
    }
    assert_true(acked_total > 0);
    if (!it_pg())   /* the file (a PostgreSQL server's storage is its own) */
        assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM pragma_integrity_check "
                                             "WHERE integrity_check <> 'ok'"), 0);
    /* and the database still works */
    assert_true(it_check(t, "durable", "after", 1, T0, NULL));
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(processes_admit_exactly_the_limit_fixed),
        cmocka_unit_test(processes_admit_exactly_the_limit_gcra),
        cmocka_unit_test(processes_admit_exactly_the_tighter_of_two),
        cmocka_unit_test(sigkill_loses_no_acknowledged_admission),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
