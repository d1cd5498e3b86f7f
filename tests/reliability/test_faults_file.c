/*
 * test_faults_file.c - fault injection (issue #5, suite 3): the database
 * file under faults.  Disk full via PRAGMA max_page_count; a crash after a
 * commit whose fsync failed (old or new state, never a mixture); faults
 * while opening a new or an existing database, and while closing a handle.
 * Every call that writes under every fault is test_faults_calls.c; the
 * fixture, its model and the calls are in faultfx.h, the VFS shim that
 * injects the faults is faultvfs.c.
 *
 * Leaks are the sanitizer's and valgrind's business (make SAN=1 test,
 * make valgrind).  main() prints how many faults were injected per kind.
 */
#include <sys/stat.h>
#include "faultfx.h"
#include "faultvfs.c"    /* the suites are built from one source file each */

/* ---- disk full via max_page_count --------------------------------------- */

static long keys_until_full;   /* checks admitted until the database was full */

/*
 * max_page_count is a setting of one connection (SQLite keeps it in that
 * connection's pager; another connection is not limited by it), so it is
 * set on the library handle's own connection.  New keys then grow the file
 * until it is full: those checks fail with EFULL (denied or admitted per
 * policy, reason degraded) and store nothing; after the limit is raised
 * they succeed again.
 */
static void disk_full_via_max_page_count_gives_efull_then_recovers(void **state)
{
    for (int allow = 0; allow < 2; allow++) {
        fx *f = fx_new(allow, 0);
        sqlite3 *conn = f->db->lite->sql;
        char sql[96], key[32];
        rls_result r;
        int rc = RLS_OK, i;
        snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld",
                 (long long)plain_int(conn, "PRAGMA page_count") + 8);
        exec_on(conn, sql);
        for (i = 0; i < 200000; i++) {
            snprintf(key, sizeof key, "user:%d", i);
            rc = rls_check_at(f->db, "api", key, 1, T0, &r);
            if (rc != RLS_OK)
                break;
            assert_int_equal(r.allowed, 1);
            f->admitted++;
        }
        assert_int_equal(rc, RLS_EFULL);
        assert_true(i > 10);
        assert_int_equal(r.reason, RLS_REASON_DEGRADED);
        assert_int_equal(r.allowed, allow);
        keys_until_full += i;
        fx_verify(f);
        /* still full: the same key fails again, nothing is stored */
        assert_int_equal(rls_check_at(f->db, "api", key, 1, T0, &r), RLS_EFULL);
        fx_verify(f);
        exec_on(conn, "PRAGMA max_page_count = 1073741823");
        for (int j = 0; j < 100; j++) {
            snprintf(key, sizeof key, "user:%d", i + j);
            assert_int_equal(rls_check_at(f->db, "api", key, 1, T0, &r), RLS_OK);
            assert_int_equal(r.allowed, 1);
            f->admitted++;
        }
        fx_verify(f);
        fx_fresh_handle_works(f);
        fx_free(f);
    }
}

/* ---- a crash after a failed commit ---------------------------------------- */

static void copy_file(const char *from, const char *to)
{
    char buf[65536];
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    size_t n;
    assert_non_null(in);
    assert_non_null(out);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

static int crash_kept_failed_apply = -1;   /* for the summary: 1 yes, 0 no */

/*
 * An admin change commits with synchronous=FULL: frames, then fsync.  When
 * the fsync fails the call returns RLS_EIO and SQLite forgets the frames
 * while the process lives, but they are in the WAL file: after a crash,
 * recovery may find them and the change is in force.  An fsync error leaves
 * the outcome unknown (as in every database); what must hold is that the
 * change comes back whole or not at all.  The crash is simulated by copying
 * the database and WAL (without -shm, as a crashed process leaves no one
 * holding it) and opening the copy.
 */
static void crash_after_failed_fsync_gives_old_or_new_state_never_a_mixture(void **state)
{
    fx *f = fx_new(0, 0);
    char crash[4200], from[4300], to[4300];
    int64_t v0 = f->active, audit0 = f->audit;

    fv_arm(FV_SYNC, 1, SQLITE_IOERR_FSYNC, 0);
    int rc = apply_run(f, NULL);
    fv_disarm();
    assert_int_equal(rc, RLS_EIO);
    assert_int_equal(fv_injected_since_arm(), 1);
    fx_verify(f);   /* the live database does not show it */

    tu_path(crash, sizeof crash, f->dir, "crash.db");
    copy_file(f->path, crash);
    snprintf(from, sizeof from, "%s-wal", f->path);
    snprintf(to, sizeof to, "%s-wal", crash);
    copy_file(from, to);

    sqlite3 *s = plain_open(crash);
    plain_intact(s);
    int64_t v = plain_int(s, "SELECT active_version FROM rls_meta");
    int64_t versions = plain_int(s, "SELECT count(*) FROM rls_rulesets");
    int64_t audit = plain_int(s, "SELECT count(*) FROM rls_audit");
    sqlite3_close(s);
    if (v == v0) {
        assert_int_equal(versions, f->versions);
        assert_int_equal(audit, audit0);
        crash_kept_failed_apply = 0;
    } else {
        assert_int_equal(v, v0 + 1);
        assert_int_equal(versions, f->versions + 1);
        assert_int_equal(audit, audit0 + 1);
        crash_kept_failed_apply = 1;
    }
    rls_db *db = open_handle(crash, 0);
    rls_result r;
    assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    rls_close(db);
    fx_free(f);
}

/* ---- open and close under faults ---------------------------------------- */

static int exists(const char *path, const char *suffix)
{
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return stat(p, &sb) == 0;
}

static long open_close_injected[FV__KINDS];

/*
 * Opening a new database under every fault: a failure returns a named
 * error and leaves no file behind, or the whole new database (a failed
 * open never leaves an empty or half-migrated one, and never removes one
 * another process may have opened); a success gives a database that works.
 */
static void open_new_database_under_faults_fails_cleanly(void **state)
{
    char *dir = tu_mkdtemp();
    char path[4096];
    tu_path(path, sizeof path, dir, "new.db");
    for (int kind = 0; kind < FV__KINDS; kind++)
        for (int sticky = 0; sticky < 2; sticky++) {
            long n, got = 0;
            for (n = 1; n <= MAX_N; n++) {
                rls_db *db = NULL;
                fv_arm(kind, n, fv_ioerr(kind), sticky);
                int rc = rls_open(&db, path, NULL);
                fv_disarm();
                long inj = fv_injected_since_arm();
                got += inj;
                if (rc != RLS_OK) {
                    if (rc != RLS_EIO || inj == 0)
                        fail_msg("open: %s fault %ld%s: got %s (%s)", fv_kind_name(kind), n,
                                 sticky ? " sticky" : "", rls_errname(rc), rls_errmsg(NULL));
                    assert_null(db);
                    if (exists(path, "")) {
                        /* failed after the whole file was linked into place,
                         * where another process may use it: it stays
                         * (storage/sqlite/create.c), and it is whole */
                        sqlite3 *s = plain_open(path);
                        plain_intact(s);
                        sqlite3_close(s);
                        char side[4200];
                        snprintf(side, sizeof side, "%s-ckpt", path);
                        unlink(side);
                        snprintf(side, sizeof side, "%s-wal", path);
                        unlink(side);
                        snprintf(side, sizeof side, "%s-shm", path);
                        unlink(side);
                        unlink(path);
                    }
                    assert_false(exists(path, "-wal"));
                    assert_false(exists(path, "-shm"));
                    continue;
                }
                rls_result r;
                assert_int_equal(rls_rules_apply_at(db, RULES_A, strlen(RULES_A), NULL, NULL,
                                                    T0, NULL), RLS_OK);
                assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &r), RLS_OK);
                assert_int_equal(r.allowed, 1);
                rls_close(db);
                sqlite3 *s = plain_open(path);
                plain_intact(s);
                assert_int_equal(plain_int(s, SQL_ADMITTED), 1);
                sqlite3_close(s);
                unlink(path);
                char side[4200];
                snprintf(side, sizeof side, "%s-ckpt", path);
                unlink(side);
                if (inj == 0)
                    break;
            }
            assert_true(n <= MAX_N);
            /* The new file is built in memory and written outside SQLite
             * (storage/sqlite/create.c); the open then reads it under the VFS */
            if (kind == FV_READ && got == 0)
                fail_msg("new open: no %s fault injected%s", fv_kind_name(kind),
                         sticky ? " (sticky)" : "");
            open_close_injected[kind] += got;
        }
    tu_rmdir(dir);
}

/*
 * Opening an existing database under every fault: a named error or a
 * working handle, and the file is unchanged either way.
 */
static void open_existing_database_under_faults_changes_nothing(void **state)
{
    fx *f = fx_new(0, 0);
    assert_int_equal(check_run(f, &(rls_result){0}), RLS_OK);
    f->admitted++;
    rls_close(f->db);
    f->db = NULL;
    for (int kind = 0; kind < FV__KINDS; kind++)
        for (int sticky = 0; sticky < 2; sticky++) {
            long n, got = 0;
            for (n = 1; n <= MAX_N; n++) {
                rls_db *db = NULL;
                fv_arm(kind, n, fv_ioerr(kind), sticky);
                int rc = rls_open(&db, f->path, NULL);
                fv_disarm();
                long inj = fv_injected_since_arm();
                got += inj;
                if (rc != RLS_OK) {
                    if (rc != RLS_EIO || inj == 0)
                        fail_msg("open: %s fault %ld%s: got %s (%s)", fv_kind_name(kind), n,
                                 sticky ? " sticky" : "", rls_errname(rc), rls_errmsg(NULL));
                    assert_null(db);
                } else {
                    rls_close(db);
                }
                fx_verify(f);
                if (inj == 0)
                    break;
            }
            assert_true(n <= MAX_N);
            if (kind == FV_SHM)
                assert_true(got > 0);
            open_close_injected[kind] += got;
        }
    f->db = open_handle(f->path, 0);
    fx_fresh_handle_works(f);
    fx_free(f);
}

/*
 * Closing the last handle checkpoints the WAL into the database and removes
 * it; under faults that may fail (rls_close returns nothing), but what was
 * committed before stays: a fresh handle and a plain connection see every
 * admission.
 */
static void close_under_faults_keeps_every_admission(void **state)
{
    fx *f = fx_new(0, 0);
    rls_close(f->db);
    f->db = NULL;
    for (int kind = 0; kind < FV__KINDS; kind++)
        for (int sticky = 0; sticky < 2; sticky++) {
            long n, got = 0;
            for (n = 1; n <= MAX_N; n++) {
                rls_db *db = open_handle(f->path, 0);
                rls_result r;
                assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &r), RLS_OK);
                f->admitted++;
                fv_arm(kind, n, fv_ioerr(kind), sticky);
                rls_close(db);
                fv_disarm();
                long inj = fv_injected_since_arm();
                got += inj;
                fx_verify(f);
                if (inj == 0)
                    break;
            }
            assert_true(n <= MAX_N);
            /* the last connection's checkpoint runs in exclusive mode: no
             * shm locks */
            if (kind != FV_SHM && got == 0)
                fail_msg("close: no %s fault injected%s", fv_kind_name(kind),
                         sticky ? " (sticky)" : "");
            open_close_injected[kind] += got;
        }
    f->db = open_handle(f->path, 0);
    fx_fresh_handle_works(f);
    fx_free(f);
}

/* ---- the suite ------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(disk_full_via_max_page_count_gives_efull_then_recovers),
        cmocka_unit_test(crash_after_failed_fsync_gives_old_or_new_state_never_a_mixture),
        cmocka_unit_test(open_new_database_under_faults_fails_cleanly),
        cmocka_unit_test(open_existing_database_under_faults_changes_nothing),
        cmocka_unit_test(close_under_faults_keeps_every_admission),
    };

    /* The faults are injected above the file system, so a RAM file system
     * loses nothing here and spares real fsyncs. */
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK | X_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
    if (fv_install() != SQLITE_OK) {
        fprintf(stderr, "cannot install the fault VFS\n");
        return 1;
    }
    int failed = cmocka_run_group_tests(tests, NULL, NULL);

    printf("faults per operation (write/sync/truncate/shm/read): open+close "
           "%ld/%ld/%ld/%ld/%ld\n", open_close_injected[FV_WRITE],
           open_close_injected[FV_SYNC], open_close_injected[FV_TRUNCATE],
           open_close_injected[FV_SHM], open_close_injected[FV_READ]);
    printf("faults injected: write %ld, sync %ld, truncate %ld, shm %ld, read %ld; "
           "max_page_count: full after %ld new keys\n",
           fv_injected_total(FV_WRITE, 0), fv_injected_total(FV_SYNC, 0),
           fv_injected_total(FV_TRUNCATE, 0), fv_injected_total(FV_SHM, 0),
           fv_injected_total(FV_READ, 0), keys_until_full);
    if (crash_kept_failed_apply >= 0)
        printf("an apply that failed with RLS_EIO (fsync) was %s after a simulated crash\n",
               crash_kept_failed_apply ? "in force" : "not in force");
    return failed;
}
