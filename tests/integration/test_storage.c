/*
 * test_storage.c - opening, files and bad input: modes, WAL, migrations,
 * refusal of foreign and newer databases without modifying them, read-only
 * files, argument validation with named errors, the failure policy, and a
 * handle inherited across fork().  With RLSTORE_TEST_PG (itest.h) the tests
 * that are about files are skipped; a missing schema, a newer schema and
 * the failure policy are checked in PostgreSQL's terms.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "itest.h"

extern const int rls__migration_count;

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 3, window: 1h } ]\n"
    "  lenient:\n"
    "    on_error: allow\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 3, window: 1h } ]\n";

/* Bytes of a file, for "left exactly as it was". */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void assert_file_unchanged_by_open(const char *path, int want)
{
    size_t n1, n2;
    char *before = slurp(path, &n1);
    rls_db *db = (rls_db *)1;
    assert_int_equal(rls_open(&db, path, NULL), want);
    assert_null(db);
    assert_true(strlen(rls_errmsg(NULL)) > 0);
    char *after = slurp(path, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(before, after, n1);
    free(before);
    free(after);
}

static void new_database_is_private_and_wal(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    struct stat sb;
    assert_int_equal(stat(t->path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(it_sql_int(t->path, "PRAGMA user_version"), rls__migration_count);
    it_check(t, "api", "k", 1, T0, NULL);
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", t->path);
    assert_int_equal(stat(wal, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    it_free(t);
}

static void file_mode_is_configurable(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp(), path[4200];
    rls_options o;
    rls_db *db;
    struct stat sb;
    tu_path(path, sizeof path, dir, "shared.db");
    rls_options_init(&o);
    o.file_mode = 0660;
    assert_int_equal(rls_open(&db, path, &o), RLS_OK);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0660);
    rls_close(db);
    o.file_mode = 01777;  /* not a permission mode */
    assert_int_equal(rls_open(&db, path, &o), RLS_EINVAL);
    tu_rmdir(dir);
}

static void counters_survive_reopen(void **state)
{
    itest *t = it_new(RULES);
    assert_int_equal(it_admit_n(t, "api", "k", 2, T0), 2);
    rls_close(t->db);
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "k", 5, T0 + 1), 1);
    it_free(t);
}

static void directory_is_refused(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp();
    rls_db *db;
    assert_int_equal(rls_open(&db, dir, NULL), RLS_EISDIR);
    assert_null(db);
    tu_rmdir(dir);
}

/* PostgreSQL: a schema without rlstore's tables, opened with create off,
 * is refused and left empty. */
static void missing_pg_schema_without_create(void)
{
    char uri[4096], schema[64], sql[256];
    rls_options o;
    rls_db *db = (rls_db *)1;
    it_pg_schema(uri, sizeof uri, schema, sizeof schema);
    rls_options_init(&o);
    o.create = 0;
    assert_int_equal(rls_open(&db, uri, &o), RLS_ENOTFOUND);
    assert_null(db);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM information_schema.tables"
             " WHERE table_schema = '%s'", schema);
    assert_int_equal(it_sql_int(it_pg(), sql), 0);
    it_pg_drop_schema(schema);
}

static void missing_file_without_create(void **state)
{
    if (it_pg()) {
        missing_pg_schema_without_create();
        return;
    }
    char *dir = tu_mkdtemp(), path[4200];
    rls_options o;
    rls_db *db;
    struct stat sb;
    tu_path(path, sizeof path, dir, "none.db");
    rls_options_init(&o);
    o.create = 0;
    assert_int_equal(rls_open(&db, path, &o), RLS_ECANTOPEN);
    assert_int_not_equal(stat(path, &sb), 0);
    tu_path(path, sizeof path, dir, "no/such/dir.db");
    assert_int_equal(rls_open(&db, path, NULL), RLS_ECANTOPEN);
    tu_rmdir(dir);
}

static void garbage_file_is_not_a_database(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp(), path[4200];
    tu_path(path, sizeof path, dir, "junk.db");
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 5000; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    assert_file_unchanged_by_open(path, RLS_ENOTDB);
    tu_rmdir(dir);
}

static void foreign_sqlite_database_is_refused(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp(), path[4200];
    tu_path(path, sizeof path, dir, "other.db");
    it_sql_exec(path, "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);"
                      "INSERT INTO customers VALUES (1, 'x');");
    assert_file_unchanged_by_open(path, RLS_ENOTDB);
    tu_rmdir(dir);
}

static void newer_schema_is_refused(void **state)
{
    itest *t = it_new(RULES);
    rls_close(t->db);
    t->db = NULL;
    if (it_pg()) {   /* the version row of rls_schema; refused, left as it was */
        rls_db *db = (rls_db *)1;
        it_sql_exec(t->path, "UPDATE rls_schema SET version = 99");
        assert_int_equal(rls_open(&db, t->path, NULL), RLS_ENEWER);
        assert_null(db);
        assert_non_null(strstr(rls_errmsg(NULL), "99"));
        assert_int_equal(it_sql_int(t->path, "SELECT version FROM rls_schema"), 99);
        it_free(t);
        return;
    }
    it_sql_exec(t->path, "PRAGMA journal_mode = DELETE; PRAGMA user_version = 99;");
    assert_file_unchanged_by_open(t->path, RLS_ENEWER);
    assert_non_null(strstr(rls_errmsg(NULL), "99"));
    it_free(t);
}

static void planted_trigger_is_refused(void **state)
{
    IT_SQLITE_ONLY();
    itest *t = it_new(RULES);
    rls_close(t->db);
    t->db = NULL;
    it_sql_exec(t->path, "CREATE TRIGGER rls_evil AFTER INSERT ON rls_state BEGIN "
                         "DELETE FROM rls_audit; END;");
    rls_db *db;
    assert_int_equal(rls_open(&db, t->path, NULL), RLS_EUNSAFE);
    assert_non_null(strstr(rls_errmsg(NULL), "rls_evil"));
    it_free(t);
}

static void read_only_handle_cannot_charge(void **state)
{
    itest *t = it_new(RULES);
    it_check(t, "api", "k", 1, T0, NULL);
    rls_options o;
    rls_db *ro;
    rls_result r;
    rls_options_init(&o);
    o.read_only = 1;
    assert_int_equal(rls_open(&ro, t->path, &o), RLS_OK);
    assert_int_equal(rls_peek_at(ro, "api", "k", 1, T0, &r), RLS_OK);
    assert_int_equal(r.remaining, 2);
    assert_int_equal(rls_check_at(ro, "api", "k", 1, T0, &r), RLS_EREADONLY);
    assert_false(r.allowed);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    assert_int_equal(rls_block_set_at(ro, "api", "k", 0, "x", T0), RLS_EREADONLY);
    rls_close(ro);
    assert_int_equal(it_admit_n(t, "api", "k", 5, T0), 2);
    it_free(t);
}

static void bad_arguments_get_named_errors(void **state)
{
    itest *t = it_new(RULES);
    rls_result r;
    char longkey[300];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    assert_int_equal(rls_check_at(NULL, "api", "k", 1, T0, &r), RLS_EINVAL);
    assert_int_equal(rls_check_at(t->db, NULL, "k", 1, T0, &r), RLS_EINVAL);
    assert_int_equal(rls_check_at(t->db, "api", NULL, 1, T0, &r), RLS_EINVAL);
    assert_int_equal(rls_check_at(t->db, "api", "k", 1, T0, NULL), RLS_EINVAL);
    assert_int_equal(rls_check_at(t->db, "api", "", 1, T0, &r), RLS_EKEY);
    assert_int_equal(rls_check_at(t->db, "api", longkey, 1, T0, &r), RLS_EKEY);
    assert_int_equal(rls_check_at(t->db, "api", "k", 0, T0, &r), RLS_ECOST);
    assert_int_equal(rls_check_at(t->db, "api", "k", -5, T0, &r), RLS_ECOST);
    assert_int_equal(rls_check_at(t->db, "api", "k", RLS_COST_MAX + 1, T0, &r), RLS_ECOST);
    assert_int_equal(rls_check_at(t->db, "api", "k", 1, -1, &r), RLS_ETIME);
    assert_int_equal(rls_check_at(t->db, "api", "k", 1, RLS_TIME_MAX + 1, &r), RLS_ETIME);
    assert_int_equal(rls_check_at(t->db, "nope", "k", 1, T0, &r), RLS_ENOACTION);
    assert_non_null(strstr(rls_errmsg(t->db), "nope"));
    assert_int_equal(rls_check_at(t->db, "", "k", 1, T0, &r), RLS_ENOACTION);
    assert_false(r.allowed);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    assert_int_equal(rls_commit_at(t->db, 0, T0), RLS_EINVAL);
    assert_int_equal(rls_commit_at(t->db, 12345, T0), RLS_ENOTFOUND);
    int64_t id;
    assert_int_equal(rls_reserve_at(t->db, "api", "k", 1, 0, T0, &id, &r), RLS_EINVAL);
    assert_int_equal(rls_reserve_at(t->db, "api", "k", 1, 10, T0, NULL, &r), RLS_EINVAL);
    assert_int_equal(rls_gc_at(t->db, 0, T0, NULL), RLS_EINVAL);
    /* nothing was charged by any of them */
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 0);
    assert_int_equal(it_admit_n(t, "api", "k", 4, T0), 3);
    it_free(t);
}

static void no_rules_yet(void **state)
{
    itest *t = it_new(NULL);
    rls_result r;
    assert_int_equal(rls_check_at(t->db, "api", "k", 1, T0, &r), RLS_ENORULES);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    it_free(t);
}

static void error_tables_are_complete(void **state)
{
    IT_SQLITE_ONLY();
    for (int c = 0; c < RLS__ERR_COUNT; c++) {
        assert_string_not_equal(rls_strerror(c), "unknown error");
        assert_string_not_equal(rls_errname(c), "UNKNOWN");
    }
    assert_string_equal(rls_errname(RLS_EKEY), "EKEY");
    assert_string_equal(rls_strerror(RLS__ERR_COUNT), "unknown error");
    assert_string_equal(rls_reason_name(RLS_REASON_COST_EXCEEDS), "cost_exceeds_limit");
    assert_int_equal(rls_version(), RLS_VERSION_HEX);
    assert_string_equal(rls_version_string(), RLS_VERSION_STRING);
    rls_close(NULL);
}

/* Another session holding the write lock: SQLite's BEGIN IMMEDIATE, or on
 * PostgreSQL a lock on the counters that lets readers through. */
typedef struct locker {
    sqlite3 *lite;
    PGconn *pg;
} locker;

static void lock_writes(locker *l, const char *path)
{
    memset(l, 0, sizeof *l);
    if (it_is_uri(path)) {
        l->pg = PQconnectdb(path);
        assert_int_equal(PQstatus(l->pg), CONNECTION_OK);
        PGresult *r = PQexec(l->pg, "BEGIN; LOCK TABLE rls_state IN EXCLUSIVE MODE");
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        return;
    }
    assert_int_equal(sqlite3_open(path, &l->lite), SQLITE_OK);
    assert_int_equal(sqlite3_exec(l->lite, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
}

static void unlock_writes(locker *l)
{
    if (l->pg) {
        PQclear(PQexec(l->pg, "ROLLBACK"));
        PQfinish(l->pg);
        return;
    }
    sqlite3_exec(l->lite, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(l->lite);
}

/* A writer holds the lock; the failure policy decides the result. */
static void failure_policy_decides_on_busy(void **state)
{
    itest *t = it_new(RULES);
    rls_options o;
    rls_db *db;
    rls_result r;
    rls_options_init(&o);
    o.busy_timeout_ms = 50;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    it_check(t, "api", "warm", 1, T0, NULL);
    assert_int_equal(rls_check_at(db, "api", "warm", 1, T0, &r), RLS_OK);

    locker lk;
    lock_writes(&lk, t->path);
    assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &r), RLS_EBUSY);
    assert_false(r.allowed);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    assert_int_equal(rls_check_at(db, "lenient", "k", 1, T0, &r), RLS_EBUSY);
    assert_true(r.allowed);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    unlock_writes(&lk);
    assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    assert_int_equal(r.reason, RLS_REASON_OK);
    rls_close(db);
    it_free(t);
}

/* The child reports through a pipe, not its exit status: under valgrind a
 * forked child exits non-zero for the parent's connection it must abandon. */
static void handle_survives_fork(void **state)
{
    itest *t = it_new(RULES);
    int fds[2];
    assert_int_equal(it_admit_n(t, "api", "k", 1, T0), 1);
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rls_result r;
        char ok = rls_check_at(t->db, "api", "k", 1, T0, &r) == RLS_OK && r.allowed &&
                  r.remaining == 1 ? 'y' : 'n';
        rls_close(t->db);  /* the child's own connection only */
        if (write(fds[1], &ok, 1) != 1)
            ok = 'n';
        _exit(0);
    }
    close(fds[1]);
    char ok = 0;
    assert_int_equal(read(fds[0], &ok, 1), 1);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    assert_int_equal(ok, 'y');
    /* the parent's connection is intact and sees the child's charge */
    assert_int_equal(it_admit_n(t, "api", "k", 3, T0), 1);
    it_free(t);
}

static void analyzed_database_still_opens(void **state)
{
    itest *t = it_new(RULES);
    it_check(t, "api", "k", 1, T0, NULL);
    rls_close(t->db);
    it_sql_exec(t->path, "ANALYZE");
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "k", 5, T0), 2);
    it_free(t);
}

static void invalid_options_create_no_file(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp(), path[4200];
    rls_options o;
    rls_db *db;
    struct stat sb;
    tu_path(path, sizeof path, dir, "new.db");
    rls_options_init(&o);
    o.max_key_len = 0;  /* invalid options: nothing may be created */
    assert_int_equal(rls_open(&db, path, &o), RLS_EINVAL);
    assert_int_not_equal(stat(path, &sb), 0);
    tu_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_database_is_private_and_wal),
        cmocka_unit_test(file_mode_is_configurable),
        cmocka_unit_test(counters_survive_reopen),
        cmocka_unit_test(directory_is_refused),
        cmocka_unit_test(missing_file_without_create),
        cmocka_unit_test(garbage_file_is_not_a_database),
        cmocka_unit_test(foreign_sqlite_database_is_refused),
        cmocka_unit_test(newer_schema_is_refused),
        cmocka_unit_test(planted_trigger_is_refused),
        cmocka_unit_test(read_only_handle_cannot_charge),
        cmocka_unit_test(bad_arguments_get_named_errors),
        cmocka_unit_test(no_rules_yet),
        cmocka_unit_test(error_tables_are_complete),
        cmocka_unit_test(failure_policy_decides_on_busy),
        cmocka_unit_test(handle_survives_fork),
        cmocka_unit_test(analyzed_database_still_opens),
        cmocka_unit_test(invalid_options_create_no_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
