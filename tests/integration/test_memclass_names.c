/*
 * test_memclass_names.c - one database, one shared-memory table, however
 * the database is named (issue #19, item 1: "exact under any number of
 * processes"): handles that reach the same database by another spelling
 * share the memory-class counts, so a memory limit of N admits N in all.
 *
 * SQLite: a relative path, a symbolic link, a path through "..".  (A hard
 * link is another database to SQLite, whose write-ahead log is named from
 * the path: while the database is in use under its own name, a check
 * through a hard link is refused, never counted apart.)  PostgreSQL: the URI with other options (application_name,
 * connect_timeout), the scheme spelled postgres://, the host by name.
 * Two databases (another file; another schema) never share one.  A table
 * removed under running processes is let go of within a second: from then
 * on they share the new one with the processes that came after.  A
 * group-shared database (file_mode 0660, file_group) makes its table with
 * the file's mode and group, so every process that may write the file may
 * write the table.
 * The memory table was once named from the URI's text on PostgreSQL: each
 * spelling counted apart and a limit of N admitted N per spelling.
 */
#include <dirent.h>
#include <grp.h>
#include <sys/stat.h>
#include <limits.h>
#include <time.h>
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  m:\n"
    "    limits: [ { name: l, algorithm: fixed_window, limit: 10, window: 1h,"
    " durability: memory } ]\n";

static rls_db *open_as(const itest *t, const char *path)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    int rc = rls_open(&db, path, &o);
    if (rc != RLS_OK)
        fail_msg("open %s: %s: %s", path, rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* Admissions of key on action m out of n checks, through db. */
static int admits(rls_db *db, const char *key, int n)
{
    int yes = 0;
    for (int i = 0; i < n; i++) {
        rls_result r;
        int rc = rls_check_at(db, "m", key, 1, T0, &r);
        if (rc != RLS_OK)
            fail_msg("check: %s: %s", rls_errname(rc), rls_errmsg(db));
        yes += r.allowed;
    }
    return yes;
}

/* The handles of names[0..n) share one count: 10 admissions in all,
 * whichever handle asks. */
static void share_one_count(const itest *t, const char *const *names, int n, const char *key)
{
    rls_db *db[8];
    int total = 0;
    assert_true(n <= 8);
    for (int i = 0; i < n; i++)
        db[i] = open_as(t, names[i]);
    for (int round = 0; round < 4; round++)
        for (int i = 0; i < n; i++)
            total += admits(db[i], key, 2);
    for (int i = 0; i < n; i++)
        rls_close(db[i]);
    if (total != 10)
        fail_msg("%d handles under %d names admitted %d checks of a limit of 10 (first "
                 "name %s)", n, n, total, names[0]);
}

static void sqlite_names_share_one_table(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    char sym[PATH_MAX], dots[PATH_MAX], rel[PATH_MAX], cwd[PATH_MAX];
    snprintf(sym, sizeof sym, "%s/sym.db", t->dir);
    snprintf(dots, sizeof dots, "%s/../%s/rl.db", t->dir, strrchr(t->dir, '/') + 1);
    assert_int_equal(symlink(t->path, sym), 0);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(t->dir), 0);
    snprintf(rel, sizeof rel, "rl.db");
    const char *names[] = {t->path, rel, sym, dots};
    share_one_count(t, names, 4, "k");
    assert_int_equal(chdir(cwd), 0);
    it_free(t);
}

static void pg_uri_spellings_share_one_table(void **state)
{
    (void)state;
    if (!it_pg())
        skip();
    itest *t = it_new(RULES);
    char app[4300], opt[4300], scheme[4300], host[4300];
    snprintf(app, sizeof app, "%s&application_name=rlstore_names", t->path);
    snprintf(opt, sizeof opt, "%s&connect_timeout=17", t->path);
    const char *rest = strstr(t->path, "://");
    assert_non_null(rest);
    snprintf(scheme, sizeof scheme, "postgres%s", rest);
    /* the test server listens on 127.0.0.1; "localhost" names it too */
    const char *ip = strstr(t->path, "127.0.0.1");
    if (ip)
        snprintf(host, sizeof host, "%.*slocalhost%s", (int)(ip - t->path), t->path, ip + 9);
    else
        snprintf(host, sizeof host, "%s", t->path);
    const char *names[] = {t->path, app, opt, scheme, host};
    share_one_count(t, names, 5, "k");
    it_free(t);
}

static void sqlite_hard_link_is_refused_not_counted_apart(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    char hard[PATH_MAX];
    snprintf(hard, sizeof hard, "%s/hard.db", t->dir);
    assert_int_equal(link(t->path, hard), 0);
    rls_db *a = open_as(t, t->path);
    assert_int_equal(admits(a, "k", 4), 4);
    rls_db *b = open_as(t, hard);
    rls_result r;
    assert_int_equal(rls_check_at(b, "m", "k", 1, T0, &r), RLS_EIO);
    assert_int_equal(admits(a, "k", 10), 6);
    rls_close(b);
    rls_close(a);
    it_free(t);
}

/* The path of the one table in dir into buf; 1 if found. */
static int table_path(const char *dir, char *buf, size_t size)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "rlstore-", 8) == 0 && len > 4 &&
            strcmp(e->d_name + len - 4, ".shm") == 0) {
            snprintf(buf, size, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n == 1;
}

/* Removes the one table in dir; 1 if there was one. */
static int remove_table(const char *dir)
{
    char p[PATH_MAX];
    if (!table_path(dir, p, sizeof p))
        return 0;
    assert_int_equal(unlink(p), 0);
    return 1;
}

static int64_t used_by(rls_db *db, const char *key)
{
    rls_result r;
    assert_int_equal(rls_peek_at(db, "m", key, 1, T0, &r), RLS_OK);
    return r.limit - r.remaining;
}

static void a_removed_table_is_let_go(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_db *a = open_as(t, t->path);
    assert_int_equal(admits(a, "k", 4), 4);
    assert_int_equal(remove_table(t->dir), 1);
    rls_db *b = open_as(t, t->path);   /* makes a new table: its own count */
    assert_int_equal(admits(b, "k", 3), 3);
    /* the event: a looks at the path again (at most a second after its
     * last look) and reads the new table */
    struct timespec ms = {0, 1000000};
    for (int i = 0; used_by(a, "k") != 3; i++) {
        if (i > 30000)
            fail_msg("the old handle still reads the removed table after 30 s");
        nanosleep(&ms, NULL);
    }
    assert_int_equal(admits(a, "k", 10) + admits(b, "k", 10), 7);
    rls_close(b);
    rls_close(a);
    it_free(t);
}

/* A group this process may give files to, other than its own when it can
 * (root: any; else a supplementary group), as a number. */
static gid_t other_group(void)
{
    gid_t list[64];
    if (geteuid() == 0)
        return getegid() == 1 ? 2 : 1;
    int n = getgroups(64, list);
    for (int i = 0; i < n; i++)
        if (list[i] != getegid())
            return list[i];
    return getegid();
}

static void a_group_shared_database_shares_its_table(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    char *dir = tu_mkdtemp(), path[PATH_MAX], group[32], table[PATH_MAX];
    snprintf(path, sizeof path, "%s/shared.db", dir);
    gid_t gid = other_group();
    snprintf(group, sizeof group, "%lu", (unsigned long)gid);
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.file_mode = 0660;
    o.file_group = group;
    o.shm_dir = dir;
    mode_t old = umask(077);   /* the table's mode is the file's, whatever the umask */
    assert_int_equal(rls_open(&db, path, &o), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "t.yaml", NULL, T0, NULL),
                     RLS_OK);
    assert_int_equal(admits(db, "k", 1), 1);
    umask(old);
    struct stat fs, ts;
    assert_int_equal(stat(path, &fs), 0);
    assert_true(table_path(dir, table, sizeof table));
    assert_int_equal(stat(table, &ts), 0);
    assert_int_equal(ts.st_mode & 0777, 0660);
    assert_int_equal(fs.st_gid, gid);
    assert_int_equal(ts.st_gid, fs.st_gid);
    rls_close(db);
    tu_rmdir(dir);
}

/* Two databases: each its own table, each its own 10. */
static void two_databases_never_share(void **state)
{
    (void)state;
    itest *a = it_new(RULES), *b = it_new(RULES);
    rls_db *da = open_as(a, a->path);
    /* b's handle with a's folder: the same shm_dir, another database */
    rls_db *db = open_as(a, b->path);
    assert_int_equal(admits(da, "k", 12), 10);
    assert_int_equal(admits(db, "k", 12), 10);
    rls_close(da);
    rls_close(db);
    it_free(a);
    it_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sqlite_names_share_one_table),
        cmocka_unit_test(sqlite_hard_link_is_refused_not_counted_apart),
        cmocka_unit_test(pg_uri_spellings_share_one_table),
        cmocka_unit_test(two_databases_never_share),
        cmocka_unit_test(a_removed_table_is_let_go),
        cmocka_unit_test(a_group_shared_database_shares_its_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
