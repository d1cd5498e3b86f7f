/*
 * test_hostile_open.c - hostile files, what is in them (issue #5, suite 6;
 * the places a file can be are test_hostile_fs.c).
 *
 * Each case opens something that is not a healthy rlstore database and
 * asserts a named error and that the file is left byte for byte as it was,
 * and that no side file (-wal, -shm, -journal, -ckpt) is left behind in its
 * directory.  Cases: text, garbage and SQLite-magic-plus-garbage files,
 * another application's SQLite file, a database truncated at many sizes
 * (also inside its last page: finding R1), a newer schema, planted
 * triggers / views / tables / indexes (also named like rlstore's own:
 * finding R2).
 *
 * Behaviour decided from the library and documented in docs/RELIABILITY.md:
 * a zero-length file (and, by SQLite's rule, a one-byte file) is a new,
 * empty database and is initialised, keeping its mode.
 */
#define _GNU_SOURCE
#include "hostile.h"

/* ---- not a database -------------------------------------------------- */

static void not_a_database(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    unsigned char junk[8192];

    tu_path(path, sizeof path, dir, "text.db");
    rel_write_file(path, "rate limits go here\n", 20);
    refused(path, RLS_ENOTDB, "text file");

    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)((i * 7919) >> 3);
    tu_path(path, sizeof path, dir, "junk.db");
    rel_write_file(path, junk, sizeof junk);
    refused(path, RLS_ENOTDB, "binary garbage");

    memcpy(junk, "SQLite format 3", 16);
    tu_path(path, sizeof path, dir, "magic.db");
    rel_write_file(path, junk, sizeof junk);
    refused(path, RLS_ENOTDB, "SQLite magic, then garbage");

    memset(junk, 0, sizeof junk);
    tu_path(path, sizeof path, dir, "zeros.db");
    rel_write_file(path, junk, 4096);
    refused(path, RLS_ENOTDB, "4 KiB of zeros");

    tu_path(path, sizeof path, dir, "other.db");
    it_sql_exec(path, "PRAGMA journal_mode = WAL;"
                      "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);"
                      "INSERT INTO customers VALUES (1, 'x');");
    refused(path, RLS_ENOTDB, "another application's SQLite file");
    tu_rmdir(dir);
}

/* ---- not a regular file ---------------------------------------------- */

/* A device, a FIFO or a link to one is refused by name, read-write or
 * read-only, and a FIFO without a writer does not block the open. */
static void not_a_regular_file(void **state)
{
    char *dir = tu_mkdtemp(), fifo[4200], link[4200];
    const char *paths[3] = {"/dev/null", fifo, link};
    rls_options o;
    rls_db *db = NULL;

    tu_path(fifo, sizeof fifo, dir, "fifo.db");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    tu_path(link, sizeof link, dir, "null.db");
    assert_int_equal(symlink("/dev/null", link), 0);
    rls_options_init(&o);
    for (int ro = 0; ro < 2; ro++) {
        o.read_only = ro;
        for (int i = 0; i < 3; i++) {
            assert_int_equal(rls_open(&db, paths[i], &o), RLS_ENOTDB);
            assert_null(db);
            assert_non_null(strstr(rls_errmsg(NULL), "not a regular file"));
        }
    }
    struct stat sb;
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    tu_rmdir(dir);
}

/* ---- truncation ----------------------------------------------------- */

static void truncated_database(void **state)
{
    char *dir = tu_mkdtemp(), full[4200], path[4200];
    make_db(dir, "full.db", full, sizeof full, 3000);
    size_t len;
    unsigned char *bytes = rel_slurp(full, &len);
    assert_non_null(bytes);
    int64_t page = it_sql_int(full, "PRAGMA page_size");
    assert_true(len > (size_t)page * 8 && len % (size_t)page == 0);
    /* every cut that ends at or below a page boundary short of the end */
    size_t cuts[] = {20, 99, 100, 512, (size_t)page - 1, (size_t)page, (size_t)page + 1,
                     (size_t)page * 2, (size_t)page * 4 + 7, len / 3, len / 2,
                     len / 2 + 513, len - (size_t)page * 2, len - (size_t)page - 1,
                     len - (size_t)page};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char name[64], what[80];
        snprintf(name, sizeof name, "cut-%zu.db", cuts[i]);
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cuts[i], len);
        tu_path(path, sizeof path, dir, name);
        rel_write_file(path, bytes, cuts[i]);
        refused_as(path, RLS_ECORRUPT, RLS_ENOTDB, what);
    }
    free(bytes);
    tu_rmdir(dir);
}

/*
 * Finding R1 (fixed): a database cut inside its last page opened (SQLite
 * reads the missing tail as zeros and the page count in the header still
 * matches), checks wrote to it and it failed quick_check.  Expected:
 * ECORRUPT at open, file untouched.
 */
static void truncated_inside_last_page(void **state)
{
    char *dir = tu_mkdtemp(), full[4200], path[4200];
    make_db(dir, "full.db", full, sizeof full, 3000);
    size_t len;
    unsigned char *bytes = rel_slurp(full, &len);
    int64_t page = it_sql_int(full, "PRAGMA page_size");
    int cut_data = 0;
    for (size_t i = len - 100; i < len; i++)
        cut_data |= bytes[i] != 0;
    assert_true(cut_data);  /* the cut removes real content */
    tu_path(path, sizeof path, dir, "cut.db");
    rel_write_file(path, bytes, len - 100);
    (void)page;
    refused(path, RLS_ECORRUPT, "truncated inside the last page");
    free(bytes);
    tu_rmdir(dir);
}

/* ---- empty files ------------------------------------------------------ */

/* Decided from the library: a zero-length file is a new database (that is
 * how SQLite sees it, and `touch rl.db` before `rlctl init` is common).  It
 * is initialised, also with create = 0, and keeps its mode; opened
 * read-only it is refused and stays empty.  SQLite treats a one-byte file
 * as empty too. */
static void zero_length_file_is_initialised(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    struct stat sb;
    rls_options o;
    rls_db *db;
    int64_t version = schema_version();   /* initialised like a new database */

    tu_path(path, sizeof path, dir, "empty.db");
    rel_write_file(path, "", 0);
    assert_int_equal(chmod(path, 0640), 0);
    rls_options_init(&o);
    o.read_only = 1;
    snap s;
    snap_take(&s, path);
    assert_int_equal(rls_open(&db, path, &o), RLS_EREADONLY);
    snap_assert_same(&s, "zero-length file opened read-only");

    o.read_only = 0;
    o.create = 0;
    assert_int_equal(rls_open(&db, path, &o), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    rls_result r;
    assert_int_equal(rls_check_at(db, "api", "k", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    rls_close(db);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    assert_int_equal(it_sql_int(path, "PRAGMA user_version"), version);

    tu_path(path, sizeof path, dir, "one.db");
    rel_write_file(path, "\n", 1);  /* `echo > one.db` */
    assert_int_equal(rls_open(&db, path, NULL), RLS_OK);
    rls_close(db);
    assert_int_equal(it_sql_int(path, "PRAGMA user_version"), version);
    tu_rmdir(dir);
}

/* ---- schema --------------------------------------------------------- */

static void newer_schema(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    char sql[64];
    make_db(dir, "newer.db", path, sizeof path, 10);
    /* one past the newest version this library knows; stays in WAL mode:
     * opening must not leave -wal/-shm behind */
    snprintf(sql, sizeof sql, "PRAGMA user_version = %lld",
             (long long)it_sql_int(path, "PRAGMA user_version") + 1);
    it_sql_exec(path, sql);
    refused(path, RLS_ENEWER, "newer schema (WAL mode)");
    it_sql_exec(path, "PRAGMA journal_mode = DELETE; PRAGMA user_version = 99");
    refused(path, RLS_ENEWER, "newer schema (rollback journal)");
    tu_rmdir(dir);
}

static void planted_objects(void **state)
{
    static const struct {
        const char *what, *sql;
    } plants[] = {
        {"planted trigger", "CREATE TRIGGER rls_t AFTER INSERT ON rls_state BEGIN "
                            "DELETE FROM rls_audit; END"},
        {"planted view", "CREATE VIEW v AS SELECT * FROM rls_state"},
        {"planted view with rls_ name", "CREATE VIEW rls_v AS SELECT * FROM rls_state"},
        {"planted table", "CREATE TABLE customers(x)"},
        {"planted index", "CREATE INDEX evil ON rls_state(exp_ms)"},
    };
    char *dir = tu_mkdtemp(), path[4200];
    for (size_t i = 0; i < sizeof plants / sizeof plants[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "plant-%zu.db", i);
        make_db(dir, name, path, sizeof path, 5);
        it_sql_exec(path, plants[i].sql);
        refused(path, RLS_EUNSAFE, plants[i].what);
    }
    tu_rmdir(dir);
}

/*
 * Finding R2 (fixed): objects named like rlstore's own (rls_ prefix) passed
 * the check, so a planted UNIQUE index made every check of a second key
 * fail.  Expected: EUNSAFE at open.
 */
static void planted_rls_named_objects(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    make_db(dir, "plant.db", path, sizeof path, 1);
    it_sql_exec(path, "CREATE UNIQUE INDEX rls_dos ON rls_state(lid)");
    refused(path, RLS_EUNSAFE, "planted rls_ index");
    make_db(dir, "plant2.db", path, sizeof path, 1);
    it_sql_exec(path, "CREATE TABLE rls_extra(x)");
    refused(path, RLS_EUNSAFE, "planted rls_ table");
    tu_rmdir(dir);
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(not_a_database),
        cmocka_unit_test(not_a_regular_file),
        cmocka_unit_test(truncated_database),
        cmocka_unit_test(truncated_inside_last_page),
        cmocka_unit_test(zero_length_file_is_initialised),
        cmocka_unit_test(newer_schema),
        cmocka_unit_test(planted_objects),
        cmocka_unit_test(planted_rls_named_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
