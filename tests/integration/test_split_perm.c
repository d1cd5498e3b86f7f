/*
 * test_split_perm.c - a split deployment (docs/SECURITY.md) and the file
 * system: file_group gives new files (and their side files) a group; an
 * application that may not write the rules file or its directory (as root
 * the application runs as nobody) checks, sees the admin's changes, and has
 * its admin writes refused; without the rules' -wal and -shm it gets a
 * named error; a handle inherited across fork() reconnects both files.
 */
#include <grp.h>
#include <pwd.h>
#include "splittest.h"

/* ---- the group of new files ------------------------------------------- */

/* A group the test user may give files to, other than its own if it has
 * one (root: any). */
static gid_t some_group(void)
{
    gid_t groups[64];
    int n = getgroups(64, groups);
    if (geteuid() == 0) {
        struct group *g = getgrnam("nogroup");
        if (!g)
            g = getgrnam("daemon");
        return g ? g->gr_gid : 1;
    }
    for (int i = 0; i < n; i++)
        if (groups[i] != getegid())
            return groups[i];
    return getegid();
}

static void group_of_new_files(void **state)
{
    IT_SQLITE_ONLY();
    char *dir = tu_mkdtemp();
    char rules[4096], counters[4096], name[64], side[4200];
    rls_db *db = NULL;
    rls_options o;
    struct stat sb;
    gid_t g = some_group();
    struct group *gr = getgrgid(g);
    tu_path(rules, sizeof rules, dir, "rules.db");
    tu_path(counters, sizeof counters, dir, "counters.db");
    /* by name when it has one, and the shared mode */
    snprintf(name, sizeof name, "%s", gr ? gr->gr_name : "");
    if (!*name)
        snprintf(name, sizeof name, "%lu", (unsigned long)g);
    rls_options_init(&o);
    o.counters_path = counters;
    o.file_mode = 0660;
    o.file_group = name;
    assert_int_equal(rls_open(&db, rules, &o), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "r", NULL, T0, NULL), RLS_OK);
    assert_true(stat(rules, &sb) == 0 && sb.st_gid == g);
    assert_int_equal(sb.st_mode & 0777, 0640);    /* rules: never group-writable */
    assert_true(stat(counters, &sb) == 0 && sb.st_gid == g);
    assert_int_equal(sb.st_mode & 0777, 0660);
    /* the side files follow their database */
    snprintf(side, sizeof side, "%s-wal", counters);
    assert_true(stat(side, &sb) == 0 && sb.st_gid == g);
    snprintf(side, sizeof side, "%s-shm", rules);
    assert_true(stat(side, &sb) == 0 && sb.st_gid == g);
    rls_close(db);
    /* kept for readers when the last admin handle closes */
    assert_int_equal(stat(side, &sb), 0);
    snprintf(side, sizeof side, "%s-wal", rules);
    assert_int_equal(stat(side, &sb), 0);
    /* a number works too, for a single file */
    char single[4096];
    tu_path(single, sizeof single, dir, "single.db");
    snprintf(name, sizeof name, "%lu", (unsigned long)g);
    rls_options_init(&o);
    o.file_group = name;
    assert_int_equal(rls_open(&db, single, &o), RLS_OK);
    rls_close(db);
    assert_true(stat(single, &sb) == 0 && sb.st_gid == g);
    /* an unknown group: a named error, and no file left behind */
    tu_path(single, sizeof single, dir, "nogroup.db");
    o.file_group = "rlstore-no-such-group";
    assert_int_equal(rls_open(&db, single, &o), RLS_EINVAL);
    assert_null(db);
    assert_non_null(strstr(rls_errmsg(NULL), "rlstore-no-such-group"));
    assert_int_equal(stat(single, &sb), -1);
    o.file_group = "";
    assert_int_equal(rls_open(&db, single, &o), RLS_EINVAL);
    assert_int_equal(stat(single, &sb), -1);
    tu_rmdir(dir);
}

/* ---- an application that may not write the rules ----------------------- */

/* Becomes an unprivileged user when running as root; 0 if the process
 * already is one, -1 if it cannot become one. */
static int drop_privileges(void)
{
    if (geteuid() != 0)
        return 0;
    struct passwd *pw = getpwnam("nobody");
    if (!pw || setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
        return -1;
    return geteuid() != 0 ? 0 : -1;
}

static int wait_child(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Child: the application.  Exit status 0 if all went as expected, else
 * the number of the step that did not. */
static int app_child(const char *rules, const char *counters, int go_fd, int done_fd)
{
    rls_db *db = NULL;
    rls_options o;
    rls_result r;
    char b = 0;
    if (drop_privileges() != 0)
        return 90;
    if (access(rules, W_OK) == 0)
        return 91;   /* the setup is not what the test means */
    rls_options_init(&o);
    o.counters_path = counters;
    /* as an admin: refused, the rules file is not writable */
    if (rls_open(&db, rules, &o) != RLS_EREADONLY)
        return 1;
    o.rules_read_only = 1;
    if (rls_open(&db, rules, &o) != RLS_OK) {
        fprintf(stderr, "open: %s\n", rls_errmsg(NULL));
        return 2;
    }
    int ok = 0;
    for (int i = 0; i < 5; i++)
        if (rls_check_at(db, "api", "192.0.2.9", 1, T0, &r) == RLS_OK && r.allowed)
            ok++;
    if (ok != 3)
        return 3;
    if (rls_block_set_at(db, "api", "192.0.2.8", 0, "x", T0) != RLS_EREADONLY)
        return 4;
    if (rls_check_at(db, "api", "192.0.2.8", 1, T0, &r) != RLS_OK || !r.allowed)
        return 5;
    /* the parent blocks 192.0.2.8 meanwhile */
    if (write(done_fd, "x", 1) != 1 || read(go_fd, &b, 1) != 1)
        return 6;
    if (rls_check_at(db, "api", "192.0.2.8", 1, T0, &r) != RLS_OK ||
        r.reason != RLS_REASON_BLOCKED)
        return 7;
    rls_close(db);
    return 0;
}

/*
 * The layout of a deployment, for an application that is not the admin:
 * the rules file and its directory are readable, not writable (as root the
 * application runs as nobody; as another user the modes drop the owner's
 * write permission); the counters live in a directory the application may
 * write.  No handle is left open: the rules file's -wal and -shm are what
 * the admin handles left.
 */
static void perm_setup(pair *p, char *counters, size_t size)
{
    char cdir[2048];
    struct stat sb;
    struct passwd *pw = geteuid() == 0 ? getpwnam("nobody") : NULL;
    tu_path(cdir, sizeof cdir, p->dir, "app");
    assert_int_equal(mkdir(cdir, 0777), 0);
    assert_int_equal(chmod(cdir, 0777), 0);
    tu_path(counters, size, cdir, "counters.db");
    rls_close(p->app);
    rls_close(p->admin);
    p->app = p->admin = NULL;
    rls_options o = opts(p, 0);
    o.counters_path = counters;
    o.file_mode = 0666;
    assert_int_equal(rls_open(&p->admin, p->rules, &o), RLS_OK);
    assert_int_equal(stat(counters, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0666);
    if (pw)
        assert_int_equal(chown(counters, pw->pw_uid, pw->pw_gid), 0);
    rls_close(p->admin);
    p->admin = NULL;
    /* -wal and -shm were created with the rules file's first mode */
    static const char *const files[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char f[4200];
        snprintf(f, sizeof f, "%s%s", p->rules, files[i]);
        assert_int_equal(chmod(f, geteuid() == 0 ? 0644 : 0444), 0);
    }
    assert_int_equal(chmod(p->dir, geteuid() == 0 ? 0755 : 0555), 0);
}

static void perm_restore(pair *p)
{
    static const char *const files[] = {"", "-wal", "-shm"};
    assert_int_equal(chmod(p->dir, 0700), 0);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char f[4200];
        snprintf(f, sizeof f, "%s%s", p->rules, files[i]);
        if (chmod(f, 0600) != 0)
            assert_int_equal(errno, ENOENT);
    }
}

static int can_drop(void)
{
    return geteuid() != 0 || getpwnam("nobody") != NULL;
}

static void app_without_write_permission(void **state)
{
    IT_SQLITE_ONLY();
    if (!can_drop())
        skip();   /* root without a user 'nobody': reported as skipped */
    pair *p = pair_new();
    char counters[4096];
    int go[2], done[2];
    perm_setup(p, counters, sizeof counters);
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(done), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        close(done[0]);
        _exit(app_child(p->rules, counters, go[0], done[1]));
    }
    close(go[0]);
    close(done[1]);
    char b;
    if (read(done[0], &b, 1) != 1) {
        int st = wait_child(pid);
        perm_restore(p);
        fail_msg("the application child failed at step %d", st);
    }
    perm_restore(p);   /* the admin's own permission */
    rls_options o = opts(p, 0);
    o.counters_path = counters;
    assert_int_equal(rls_open(&p->admin, p->rules, &o), RLS_OK);
    assert_int_equal(rls_block_set_at(p->admin, "api", "192.0.2.8", 0, "abuse", T0), RLS_OK);
    assert_int_equal(write(go[1], "x", 1), 1);
    int st = wait_child(pid);
    if (st == 90)
        fail_msg("cannot become an unprivileged user");
    if (st != 0)
        fail_msg("the application child failed at step %d", st);
    assert_int_equal(count(counters, "rls_state", NULL), 2);
    close(go[1]);
    close(done[0]);
    pair_free(p);
}

/* A handle inherited across fork() reconnects to both files in the child. */
static void fork_reconnects_pair(void **state)
{
    IT_SQLITE_ONLY();
    pair *p = pair_new();
    assert_int_equal(admit_n(p->app, "api", "192.0.2.20", 1, T0), 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rls_result r;
        _exit(rls_check_at(p->app, "api", "192.0.2.20", 1, T0, &r) == RLS_OK && r.allowed &&
              rls_block_set_at(p->app, "api", "x", 0, "", T0) == RLS_EREADONLY ? 0 : 1);
    }
    assert_int_equal(wait_child(pid), 0);
    assert_int_equal(admit_n(p->app, "api", "192.0.2.20", 2, T0), 1);   /* 3 in all */
    pair_free(p);
}

/* Without its -wal and -shm, a reader that may not write the directory
 * cannot open the rules: a named error that says why. */
static void missing_side_files_named(void **state)
{
    IT_SQLITE_ONLY();
    if (!can_drop())
        skip();
    pair *p = pair_new();
    char side[4200], counters[4096];
    rls_db *db = NULL;
    perm_setup(p, counters, sizeof counters);
    assert_int_equal(chmod(p->dir, 0700), 0);
    snprintf(side, sizeof side, "%s-wal", p->rules);
    assert_int_equal(unlink(side), 0);
    snprintf(side, sizeof side, "%s-shm", p->rules);
    assert_int_equal(unlink(side), 0);
    assert_int_equal(chmod(p->dir, geteuid() == 0 ? 0755 : 0555), 0);
    rls_options o = opts(p, 1);
    o.counters_path = counters;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (drop_privileges() != 0)
            _exit(90);
        int rc = rls_open(&db, p->rules, &o);
        if (rc == RLS_OK)
            _exit(1);
        if (rc != RLS_ECANTOPEN || !strstr(rls_errmsg(NULL), "-wal and -shm")) {
            fprintf(stderr, "open: %s: %s\n", rls_errname(rc), rls_errmsg(NULL));
            _exit(2);
        }
        _exit(0);
    }
    int st = wait_child(pid);
    perm_restore(p);
    if (st != 0)
        fail_msg("child step %d", st);
    pair_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(group_of_new_files),
        cmocka_unit_test(app_without_write_permission),
        cmocka_unit_test(missing_side_files_named),
        cmocka_unit_test(fork_reconnects_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
