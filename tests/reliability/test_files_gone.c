/*
 * test_files_gone.c - files deleted under open handles, and the doctor
 * that must notice what they leave behind (issue #17, defect 13).
 *
 * A careless cleanup removed "<db>-wal" while processes ran: they went on
 * writing into the unlinked log, a process that opened the database then
 * wrote a new one under the same shared index, and the result was 3x
 * over-admission and broken indexes that `rlctl doctor` called ok.
 * Expected: every handle refuses to write (EIO, the result filled by the
 * failure policy) once its files are not the database's any more, nothing
 * is admitted twice, and the doctor checks the indexes by default.
 */
#define _GNU_SOURCE
#include "reltest.h"

#define LIMIT 10

static const char RULES[] =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: day, algorithm: fixed_window, limit: 10, window: 1d } ]\n";

static rls_db *open_db(const char *path)
{
    rls_db *db = NULL;
    int rc = rls_open(&db, path, NULL);
    if (rc != RLS_OK)
        fail_msg("open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* Checks n times; the admitted ones; every call must return want. */
static int checks(rls_db *db, int n, int want, const char *who)
{
    int admitted = 0;
    for (int i = 0; i < n; i++) {
        rls_result r;
        int rc = rls_check_at(db, "api", "k", 1, T0 + i, &r);
        if (rc != want)
            fail_msg("%s: check %d: %s (%s), expected %s", who, i, rls_errname(rc),
                     rls_errmsg(db), rls_errname(want));
        if (rc != RLS_OK && (r.allowed || r.reason != RLS_REASON_DEGRADED))
            fail_msg("%s: a failed check was not denied as degraded (policy deny)", who);
        admitted += rc == RLS_OK && r.allowed;
    }
    return admitted;
}

/*
 * Two handles write; the -wal is removed; both refuse to write, and so does
 * a handle opened afterwards, whose new -wal the shared index does not
 * describe.  Closed in an order that lets the last of the first two copy
 * their log into the database, nothing admitted is lost and nothing is
 * admitted twice: after a restart exactly LIMIT in all.
 */
static void deleted_wal_refuses_writes(void **state)
{
    char *dir = tu_mkdtemp(), path[4200], wal[4300];
    tu_path(path, sizeof path, dir, "rl.db");
    snprintf(wal, sizeof wal, "%s-wal", path);
    rls_db *a = open_db(path), *b = open_db(path);
    assert_int_equal(rls_rules_apply_at(a, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    int admitted = checks(a, 3, RLS_OK, "a") + checks(b, 2, RLS_OK, "b");
    assert_int_equal(admitted, 5);

    assert_int_equal(unlink(wal), 0);   /* the careless cleanup */
    admitted += checks(a, 3, RLS_EIO, "a after the -wal was removed");
    print_message("a after the -wal was removed: %s\n", rls_errmsg(a));
    admitted += checks(b, 3, RLS_EIO, "b after the -wal was removed");

    /* a newcomer: a new, empty -wal under the old index */
    rls_db *c = NULL;
    int rc = rls_open(&c, path, NULL);
    if (rc == RLS_OK) {
        admitted += checks(c, 3, RLS_EIO, "a handle opened after the -wal was removed");
        print_message("opened after the -wal was removed: %s\n", rls_errmsg(c));
        rls_close(c);
    } else {
        print_message("opened after the -wal was removed: %s (%s)\n", rls_errname(rc),
                      rls_errmsg(NULL));
    }
    admitted += checks(a, 1, RLS_EIO, "a, again");
    assert_int_equal(admitted, 5);
    rls_close(a);
    rls_close(b);   /* the last of the log's holders copies it back */

    rls_db *d = open_db(path);
    assert_string_equal(rel_integrity(d), "ok");
    admitted += checks(d, LIMIT, RLS_OK, "after a restart");
    assert_int_equal(admitted, LIMIT);
    rls_close(d);
    tu_rmdir(dir);
}

/* The database file itself removed: its handle refuses to write into the
 * unlinked file. */
static void deleted_database_refuses_writes(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    tu_path(path, sizeof path, dir, "rl.db");
    rls_db *a = open_db(path);
    assert_int_equal(rls_rules_apply_at(a, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    assert_int_equal(checks(a, 2, RLS_OK, "a"), 2);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(checks(a, 2, RLS_EIO, "a after the database was removed"), 0);
    print_message("after the database was removed: %s\n", rls_errmsg(a));
    /* an admin change too */
    assert_int_equal(rls_block_set_at(a, "api", "x", 0, "r", T0), RLS_EIO);
    rls_close(a);
    tu_rmdir(dir);
}

/* The failure policy applies: on_error allow admits, as degraded. */
static void deleted_wal_applies_the_failure_policy(void **state)
{
    char *dir = tu_mkdtemp(), path[4200], wal[4300];
    tu_path(path, sizeof path, dir, "rl.db");
    snprintf(wal, sizeof wal, "%s-wal", path);
    rls_options opt;
    rls_options_init(&opt);
    opt.on_error = RLS_ON_ERROR_ALLOW;
    rls_db *a = NULL;
    assert_int_equal(rls_open(&a, path, &opt), RLS_OK);
    assert_int_equal(rls_rules_apply_at(a, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    rls_result r;
    assert_int_equal(rls_check_at(a, "api", "k", 1, T0, &r), RLS_OK);
    assert_int_equal(unlink(wal), 0);
    assert_int_equal(rls_check_at(a, "api", "k", 1, T0, &r), RLS_EIO);
    assert_int_equal(r.allowed, 1);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    rls_close(a);
    tu_rmdir(dir);
}

/* ---- a quiet directory (filecheck.c) ---------------------------------------- */

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Waits until dir's times are far enough in the past for a handle to let
 * them stand for looking its files up (filecheck.c: 250 ms, 3 s for
 * stamps in whole seconds): the event is the clock passing them. */
static void wait_quiet(const char *dir)
{
    for (;;) {
        struct stat sb;
        struct timespec now, pause = {0, 20 * 1000000};
        assert_int_equal(stat(dir, &sb), 0);
        assert_int_equal(clock_gettime(CLOCK_REALTIME, &now), 0);
        int64_t t = ts_ns(sb.st_mtim) > ts_ns(sb.st_ctim) ? ts_ns(sb.st_mtim) : ts_ns(sb.st_ctim);
        int whole = sb.st_mtim.tv_nsec == 0 && sb.st_ctim.tv_nsec == 0;
        if (ts_ns(now) - t > (whole ? 3500 : 400) * (int64_t)1000000)
            return;
        nanosleep(&pause, NULL);
    }
}

/*
 * While the directory is quiet, a write stands its unchanged times for the
 * two lookups by name; removing the database file, replacing it by a
 * rename, or removing its -wal changes the directory, and the next write
 * refuses (a handle that trusted the directory past such a change would
 * admit here).
 */
static void quiet_directory_still_notices_a_change(void **state)
{
    for (int how = 0; how < 3; how++) {
        char *dir = tu_mkdtemp(), path[4200], other[4200], wal[4300];
        tu_path(path, sizeof path, dir, "rl.db");
        tu_path(other, sizeof other, dir, "other");
        snprintf(wal, sizeof wal, "%s-wal", path);
        rls_db *a = open_db(path);
        assert_int_equal(rls_rules_apply_at(a, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                         RLS_OK);
        FILE *f = fopen(other, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(checks(a, 1, RLS_OK, "a"), 1);
        wait_quiet(dir);
        /* the first write finds the files in place, the next trust the directory */
        assert_int_equal(checks(a, 3, RLS_OK, "a, directory quiet"), 3);
        if (how == 0)
            assert_int_equal(unlink(path), 0);
        else if (how == 1)
            assert_int_equal(rename(other, path), 0);
        else
            assert_int_equal(unlink(wal), 0);
        static const char *const what[] = {"database removed", "database replaced",
                                           "-wal removed"};
        assert_int_equal(checks(a, 2, RLS_EIO, what[how]), 0);
        print_message("quiet directory, %s: %s\n", what[how], rls_errmsg(a));
        rls_close(a);
        tu_rmdir(dir);
    }
}

/* ---- the doctor ----------------------------------------------------------- */

static void sql(sqlite3 *s, const char *q)
{
    char *err = NULL;
    if (sqlite3_exec(s, q, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", q, err ? err : "?");
}

/*
 * An index that no longer matches its table (as the mixed logs left them):
 * a row removed behind the index's back, which quick_check does not see.
 */
static void break_an_index(const char *path)
{
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    char def[1024], q[1400];
    int root;
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(s, "SELECT sql, rootpage FROM sqlite_schema WHERE"
                                        " name = 'rls_audit_key'", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(def, sizeof def, "%s", (const char *)sqlite3_column_text(st, 0));
    root = sqlite3_column_int(st, 1);
    sqlite3_finalize(st);
    sql(s, "PRAGMA writable_schema = ON");
    sql(s, "DELETE FROM sqlite_schema WHERE name = 'rls_audit_key'");
    sqlite3_close(s);
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    sql(s, "DELETE FROM rls_audit WHERE rowid = (SELECT min(rowid) FROM rls_audit)");
    sql(s, "PRAGMA writable_schema = ON");
    snprintf(q, sizeof q, "INSERT INTO sqlite_schema(type, name, tbl_name, rootpage, sql)"
             " VALUES ('index', 'rls_audit_key', 'rls_audit', %d, '%s')", root, def);
    sql(s, q);
    sqlite3_close(s);
}

static const char *status_of(rls_rows *rows, const char *check)
{
    for (int r = 0; r < rls_rows_count(rows); r++)
        if (strcmp(rel_row_text(rows, r, "check"), check) == 0)
            return rel_row_text(rows, r, "status");
    return "(no such check)";
}

static void doctor_checks_the_indexes_by_default(void **state)
{
    char *dir = tu_mkdtemp(), path[4200], rlctl[4200];
    tu_path(path, sizeof path, dir, "rl.db");
    rls_db *a = open_db(path);
    assert_int_equal(rls_rules_apply_at(a, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    assert_int_equal(rls_block_set_at(a, "api", "blocked", 0, "r", T0), RLS_OK);
    rls_close(a);
    break_an_index(path);

    a = open_db(path);
    rls_rows *rows = NULL;
    assert_int_equal(rls_doctor(a, 0, &rows), RLS_OK);
    assert_string_equal(status_of(rows, "quick_check"), "ok");   /* it cannot see it */
    assert_string_equal(status_of(rows, "integrity_check"), "fail");
    rls_rows_free(rows);
    rls_close(a);

    if (rel_tool("rlctl", rlctl, sizeof rlctl)) {
        char *argv[] = {rlctl, "--db", path, "doctor", NULL};
        assert_int_equal(rel_run(argv, NULL), 5);   /* a failed check: storage */
    }
    tu_rmdir(dir);
}

/* The doctor of a process that opened the database after its -wal was
 * removed (as `rlctl doctor` is) says so. */
static void doctor_reports_a_replaced_wal(void **state)
{
    char *dir = tu_mkdtemp(), path[4200], wal[4300];
    tu_path(path, sizeof path, dir, "rl.db");
    snprintf(wal, sizeof wal, "%s-wal", path);
    rls_db *a = open_db(path);
    assert_int_equal(rls_rules_apply_at(a, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    assert_int_equal(checks(a, 2, RLS_OK, "a"), 2);
    assert_int_equal(unlink(wal), 0);
    rls_db *d = NULL;
    int rc = rls_open(&d, path, NULL);
    if (rc == RLS_OK) {
        rls_rows *rows = NULL;
        assert_int_equal(rls_doctor(d, 0, &rows), RLS_OK);
        assert_string_equal(status_of(rows, "files"), "fail");
        rls_rows_free(rows);
        rls_close(d);
    }
    rls_close(a);
    tu_rmdir(dir);
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deleted_wal_refuses_writes),
        cmocka_unit_test(deleted_database_refuses_writes),
        cmocka_unit_test(deleted_wal_applies_the_failure_policy),
        cmocka_unit_test(quiet_directory_still_notices_a_change),
        cmocka_unit_test(doctor_checks_the_indexes_by_default),
        cmocka_unit_test(doctor_reports_a_replaced_wal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
