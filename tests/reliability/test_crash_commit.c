/*
 * test_crash_commit.c - crash safety (issue #5, suite 2, part 5; the
 * test_crash.c:551 flake): a rule change killed right after its COMMIT.
 *
 * A fresh process (this binary re-run with --apply-then-die, so that no
 * connection is inherited through fork) applies new rules, and its SQLite
 * dies as it releases the WAL write lock: the commit is durable and seen
 * by every connection, and the library never regains control.  A handle
 * opened before answers by the new rules at once, neither from its cache
 * of denials nor from the memory class's fast path, both of which trust a
 * shared generation that the dead writer never bumped after its commit.
 * SQLite only (PostgreSQL has no shared page, hence neither cache).
 *
 * Knob: RLS_KILL_COMMIT_ROUNDS (default 20).
 */
#include "reltest.h"
#include "faultvfs.c"    /* the suites are built from one source file each */

/* ---- a rule change killed right after its commit ---------------------- */

/*
 * The child of the next test, a fresh process (this program run with
 * --apply-then-die DB FILE: no connection inherited through fork).  Every
 * connection goes through faultvfs.c; once armed, the first release of
 * SQLite's WAL write lock (lock 0 of the -shm) kills the process.  For the
 * apply's transaction that release ends its COMMIT: the WAL is synced and
 * the index header that makes the commit visible is written, so the rules
 * are in force and nothing of the library after sqlite3_step(COMMIT) ran.
 * Exit 2 if it could not start, 3 if the apply returned.
 */
static volatile sig_atomic_t die_armed;

static int die_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    if (die_armed && offset == 0 && flags == (SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE))
        raise(SIGKILL);
    return fv_shm_lock(f, offset, n, flags);
}

static int apply_then_die(const char *path, const char *file)
{
    size_t len;
    rls_db *db = NULL;
    unsigned char *yaml = rel_slurp(file, &len);
    if (!yaml || fv_install() != SQLITE_OK)
        return 2;
    fv_methods[1].xShmLock = die_shm_lock;   /* io methods version 2 and 3 */
    fv_methods[2].xShmLock = die_shm_lock;
    if (rls_open(&db, path, NULL) != RLS_OK)
        return 2;
    die_armed = 1;
    rls_rules_apply_at(db, (const char *)yaml, len, file, NULL, T0, NULL);
    return 3;
}

static const char *KILL_OLD =
    "version: 1\n"
    "actions:\n"
    "  m_old:\n"
    "    limits: [ { name: m, algorithm: fixed_window, limit: 1, window: 1h } ]\n"
    "  mem:\n"
    "    limits: [ { name: x, algorithm: fixed_window, limit: 1000, window: 1h,"
    " durability: memory } ]\n";

static const char *KILL_NEW =
    "version: 1\n"
    "actions:\n"
    "  m_new:\n"
    "    limits: [ { name: m, algorithm: fixed_window, limit: 1, window: 1h } ]\n";

/* DENYCACHE_TTL_MS (core/denycache.h) and MEM_TRUST_MS (storage/memclass.c):
 * how long a handle trusts a denial or its fast path without a bump */
#define TRUST_BOUND_MS 1000

/* One round on a new database: 1 if the handle's answers came within the
 * bound of its trust (the round could tell a stale answer), else 0. */
static int kill_after_commit_round(long round)
{
    itest *t = it_new(KILL_OLD);
    char file[4200], self[64];
    rls_options o;
    rls_db *app = NULL;
    rls_result r;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    assert_int_equal(rls_open(&app, t->path, &o), RLS_OK);
    tu_path(file, sizeof file, t->dir, "new.yaml");
    rel_write_file(file, KILL_NEW, strlen(KILL_NEW));

    /* the handle caches a denial and trusts its memory-class fast path */
    int64_t t0 = rel_mono_ms();
    assert_int_equal(rls_check_at(app, "m_old", "k", 1, T0, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rls_check_at(app, "m_old", "k", 1, T0, &r), RLS_OK);
        assert_int_equal(r.allowed, 0);
        assert_int_equal(rls_check_at(app, "mem", "k", 1, T0, &r), RLS_OK);
        assert_int_equal(r.allowed, 1);
    }

    snprintf(self, sizeof self, "/proc/%d/exe", (int)getpid());
    char *argv[] = {self, "--apply-then-die", t->path, file, NULL};
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execv(self, argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);

    /* the old handle first, while its trust may still stand */
    int rc_mem = rls_check_at(app, "mem", "k", 1, T0, &r);
    int rc_old = rls_check_at(app, "m_old", "k", 1, T0, &r);
    int rc_new = rls_check_at(app, "m_new", "k", 1, T0, &r);
    int live = rel_mono_ms() - t0 < TRUST_BOUND_MS;

    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("round %ld: the applying child was not killed (status %d)", round, status);
    rls_rows *v = NULL;
    assert_int_equal(rls_rules_versions(t->db, &v), RLS_OK);
    int64_t n = rls_rows_count(v);
    rls_rows_free(v);
    if (n != 2)
        fail_msg("round %ld: the child died before its commit (%lld versions)", round,
                 (long long)n);
    if (rc_mem != RLS_ENOACTION || rc_old != RLS_ENOACTION || rc_new != RLS_OK)
        fail_msg("round %ld (%s): after the commit, a handle opened before answers "
                 "mem %s, m_old %s, m_new %s; the rules in force have m_new only", round,
                 live ? "within its trust" : "after its trust ran out", rls_errname(rc_mem),
                 rls_errname(rc_old), rls_errname(rc_new));
    rls_close(app);
    it_free(t);
    return live;
}

static void sigkill_right_after_the_rules_commit_leaves_no_stale_handle(void **state)
{
    IT_SQLITE_ONLY();   /* a SQLite writer's lock; PostgreSQL has neither cache */
    /* A round tells a stale answer only if the handle asked within its
     * trust: on a slow machine (valgrind) some rounds may not, and more
     * run, each asserting the same. */
    long rounds = rel_knob("RLS_KILL_COMMIT_ROUNDS", 20, 5), live = 0, round;
    for (round = 0; round < rounds && live < 3; round++)
        live += kill_after_commit_round(round);
    print_message("%ld rounds of a rule change killed right after its commit, %ld of them "
                  "within the handle's trust (%d ms)\n", round, live, TRUST_BOUND_MS);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--apply-then-die") == 0)
        return apply_then_die(argv[2], argv[3]);
    rel_init(argc > 0 ? argv[0] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sigkill_right_after_the_rules_commit_leaves_no_stale_handle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
