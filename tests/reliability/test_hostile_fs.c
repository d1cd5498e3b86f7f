/*
 * test_hostile_fs.c - hostile files, where they are (issue #5, suite 6;
 * what can be in a file is test_hostile_open.c).
 *
 * Each case opens a database somewhere it cannot be used as usual and
 * asserts a named error, or that it works, and that the file is left as it
 * was.  Cases: a read-only file and a read-only directory (as an
 * unprivileged user: root ignores modes), a read-only file made writable
 * again (finding R3), a directory, symlinks (to a database, dangling, to a
 * directory; the checkpoint lock through a link: finding R4), and a full
 * filesystem (a tiny tmpfs in a private mount namespace when permitted,
 * else RLIMIT_FSIZE).
 *
 * Behaviour decided from the library and documented in docs/RELIABILITY.md:
 * a symlink to a database works like the database itself.
 *
 * RLS_HOSTILE_NO_TMPFS=1 takes the RLIMIT_FSIZE path of the full-filesystem
 * case even where a tmpfs could be mounted.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include "hostile.h"

#define NOBODY 65534

/* ---- permissions (as an unprivileged user) ----------------------------- */

typedef struct child_report {
    int failed;
    int no_mount;     /* the tmpfs could not be mounted here */
    char msg[1024];
    char log[2048];
} child_report;

static child_report *REPORT;

#define CHILD_CHECK(cond, ...)                                                        \
    do {                                                                              \
        if (!(cond) && !REPORT->failed) {                                             \
            REPORT->failed = 1;                                                       \
            snprintf(REPORT->msg, sizeof REPORT->msg, __VA_ARGS__);                   \
        }                                                                             \
    } while (0)

static void child_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void child_log(const char *fmt, ...)
{
    size_t used = strlen(REPORT->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(REPORT->log + used, sizeof REPORT->log - used, fmt, ap);
    va_end(ap);
}

/* Runs fn in a child as an unprivileged user (uid/gid 65534 when we are
 * root), and fails the test with what the child reported. */
static void as_unprivileged(void (*fn)(const char *), const char *dir)
{
    memset(REPORT, 0, sizeof *REPORT);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 &&
            (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)) {
            CHILD_CHECK(0, "cannot drop privileges: %s", strerror(errno));
            _exit(1);
        }
        fn(dir);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (REPORT->log[0])
        print_message("%s", REPORT->log);
    if (REPORT->failed)
        fail_msg("%s", REPORT->msg);
    /* the report says how it went; the exit status only whether it crashed
     * (under valgrind a child's status also counts the parent's leaks) */
    assert_false(WIFSIGNALED(status));
}

/* Gives dir (and everything in it) to the unprivileged user. */
static void give_away(const char *dir)
{
    char cmd[4400];
    if (geteuid() != 0)
        return;
    snprintf(cmd, sizeof cmd, "chown -R %d:%d '%s'", NOBODY, NOBODY, dir);
    assert_int_equal(system(cmd), 0);
}

static int same_bytes(const char *path, const unsigned char *bytes, size_t len)
{
    size_t n;
    unsigned char *now = rel_slurp(path, &n);
    int same = now && n == len && memcmp(now, bytes, len) == 0;
    free(now);
    return same;
}

static void ro_file_child(const char *dir)
{
    char path[4200];
    size_t len;
    rls_db *db = NULL;
    rls_result r;
    tu_path(path, sizeof path, dir, "ro.db");
    unsigned char *bytes = rel_slurp(path, &len);
    CHILD_CHECK(bytes != NULL, "cannot read ro.db");
    CHILD_CHECK(access(path, W_OK) != 0, "ro.db is writable: the test runs privileged");

    /* a read-write open: refused, or every charging call is EREADONLY */
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK) {
        int crc = rls_check_at(db, "api", "k", 1, T0, &r);
        child_log("read-only file, read-write open: OK, then check: %s (%s), allowed %d\n",
                  rls_errname(crc), rls_errmsg(db), r.allowed);
        CHILD_CHECK(crc == RLS_EREADONLY, "check on a read-only file: %s", rls_errname(crc));
        CHILD_CHECK(!r.allowed && r.reason == RLS_REASON_DEGRADED,
                    "check on a read-only file was not denied as degraded");
        crc = rls_block_set_at(db, "api", "k", 0, "x", T0);
        CHILD_CHECK(crc == RLS_EREADONLY, "block on a read-only file: %s", rls_errname(crc));
        rls_close(db);
    } else {
        child_log("read-only file, read-write open: %s (%s)\n", rls_errname(rc),
                  rls_errmsg(NULL));
        CHILD_CHECK(rc == RLS_EREADONLY, "read-write open of a read-only file: %s",
                    rls_errname(rc));
    }
    CHILD_CHECK(same_bytes(path, bytes, len), "the read-only file changed");

    /* a read-only open reads it */
    rls_options o;
    rls_options_init(&o);
    o.read_only = 1;
    rc = rls_open(&db, path, &o);
    CHILD_CHECK(rc == RLS_OK, "read-only open of a read-only file: %s (%s)", rls_errname(rc),
                rls_errmsg(NULL));
    if (rc == RLS_OK) {
        rc = rls_peek_at(db, "many", "key:1", 1, T0, &r);
        CHILD_CHECK(rc == RLS_OK && r.remaining == 2, "peek on a read-only file: %s",
                    rls_errname(rc));
        rls_close(db);
    }
    CHILD_CHECK(same_bytes(path, bytes, len), "the read-only file changed");
    free(bytes);
}

static void read_only_file(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    make_db(dir, "ro.db", path, sizeof path, 5);
    give_away(dir);
    assert_int_equal(chmod(path, 0400), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    as_unprivileged(ro_file_child, dir);
    tu_rmdir(dir);
}

static void ro_file_restored_child(const char *dir)
{
    char path[4200];
    rls_db *db = NULL;
    rls_result r;
    tu_path(path, sizeof path, dir, "ro.db");
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK) {
        rls_check_at(db, "api", "k", 1, T0, &r);
        rls_close(db);
    }
    /* the operator fixes the mode: the database must be writable again */
    CHILD_CHECK(chmod(path, 0600) == 0, "chmod: %s", strerror(errno));
    rc = rls_open(&db, path, NULL);
    CHILD_CHECK(rc == RLS_OK, "open after chmod 0600: %s", rls_errname(rc));
    if (rc == RLS_OK) {
        rc = rls_check_at(db, "api", "k", 1, T0, &r);
        CHILD_CHECK(rc == RLS_OK && r.allowed,
                    "check after the file was made writable again: %s (%s)", rls_errname(rc),
                    rls_errmsg(db));
        rls_close(db);
    }
}

/*
 * Finding R3 (fixed): a read-write open of a read-only file succeeded
 * (SQLite falls back to read-only) and created -wal and -shm with the
 * file's mode 0400, which stayed when it was closed; after `chmod 600`
 * every check still failed with EREADONLY until someone deleted the -shm.
 * Expected: EREADONLY at open before SQLite creates anything, or usable
 * after the chmod.
 */
static void read_only_file_then_writable(void **state)
{
    char *dir = tu_mkdtemp(), path[4200];
    make_db(dir, "ro.db", path, sizeof path, 5);
    give_away(dir);
    assert_int_equal(chmod(path, 0400), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    as_unprivileged(ro_file_restored_child, dir);
    tu_rmdir(dir);
}

static void ro_dir_child(const char *dir)
{
    char path[4200], sub[2048];
    size_t len;
    rls_db *db = NULL;
    tu_path(sub, sizeof sub, dir, "ro");
    tu_path(path, sizeof path, sub, "rl.db");
    unsigned char *bytes = rel_slurp(path, &len);
    char *before = dir_listing(sub);
    CHILD_CHECK(bytes != NULL, "cannot read ro/rl.db");
    CHILD_CHECK(access(sub, W_OK) != 0, "the directory is writable: the test runs privileged");

    int rc = rls_open(&db, path, NULL);
    child_log("read-only directory, existing database: %s (%s)\n", rls_errname(rc),
              rls_errmsg(NULL));
    CHILD_CHECK(rc == RLS_EREADONLY, "existing database in a read-only directory: %s",
                rls_errname(rc));
    if (rc == RLS_OK)
        rls_close(db);
    CHILD_CHECK(same_bytes(path, bytes, len), "the database changed");

    tu_path(path, sizeof path, sub, "new.db");
    rc = rls_open(&db, path, NULL);
    child_log("read-only directory, new database: %s (%s)\n", rls_errname(rc),
              rls_errmsg(NULL));
    CHILD_CHECK(rc == RLS_EREADONLY, "new database in a read-only directory: %s",
                rls_errname(rc));
    if (rc == RLS_OK)
        rls_close(db);
    char *after = dir_listing(sub);
    CHILD_CHECK(strcmp(before, after) == 0, "the directory changed: %s -> %s", before, after);
    free(before);
    free(after);
    free(bytes);
}

static void read_only_directory(void **state)
{
    char *dir = tu_mkdtemp(), sub[2048], path[4200];
    tu_path(sub, sizeof sub, dir, "ro");
    assert_int_equal(mkdir(sub, 0700), 0);
    make_db(sub, "rl.db", path, sizeof path, 5);
    give_away(dir);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(chmod(sub, 0555), 0);
    as_unprivileged(ro_dir_child, dir);
    assert_int_equal(chmod(sub, 0700), 0);
    tu_rmdir(dir);
}

/* ---- directories and symlinks ----------------------------------------- */

static void directory(void **state)
{
    char *dir = tu_mkdtemp(), sub[2048], probe[4300];
    tu_path(sub, sizeof sub, dir, "adir.db");
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(probe, sizeof probe, "%s/.keep", sub);
    rel_write_file(probe, "", 0);
    refused(sub, RLS_EISDIR, "a directory");
    char *inside = dir_listing(sub);
    assert_string_equal(inside, ".keep:0:100600 ");
    free(inside);
    tu_rmdir(dir);
}

/* Decided from the library: a symlink to a database is followed and works
 * like the database (SQLite puts -wal and -shm next to the target); a
 * dangling one is refused without creating anything anywhere. */
static void symlinks(void **state)
{
    char *dir = tu_mkdtemp(), real[4200], link_path[4200], target_dir[2048], p[4300];
    tu_path(target_dir, sizeof target_dir, dir, "real");
    assert_int_equal(mkdir(target_dir, 0700), 0);
    make_db(target_dir, "rl.db", real, sizeof real, 5);
    tu_path(link_path, sizeof link_path, dir, "link.db");
    assert_int_equal(symlink("real/rl.db", link_path), 0);

    rls_db *via_link, *via_real;
    rls_result r;
    assert_int_equal(rls_open(&via_link, link_path, NULL), RLS_OK);
    assert_int_equal(rls_open(&via_real, real, NULL), RLS_OK);
    assert_int_equal(rls_check_at(via_link, "api", "shared", 1, T0, &r), RLS_OK);
    assert_int_equal(rls_check_at(via_real, "api", "shared", 1, T0, &r), RLS_OK);
    assert_int_equal(rls_check_at(via_link, "api", "shared", 1, T0, &r), RLS_OK);
    assert_int_equal(r.remaining, 0);  /* one counter, seen through both paths */
    snprintf(p, sizeof p, "%s-wal", real);
    assert_true(rel_exists(p));         /* SQLite's side files follow the target */
    snprintf(p, sizeof p, "%s-wal", link_path);
    assert_false(rel_exists(p));
    rls_close(via_link);
    rls_close(via_real);
    struct stat sb;
    assert_int_equal(lstat(link_path, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));   /* still a link */
    print_message("%-34s %-9s works like the target\n", "symlink to a database", "OK");

    /* dangling: nothing is created at the target or beside the link */
    tu_path(link_path, sizeof link_path, dir, "dangling.db");
    assert_int_equal(symlink("real/missing.db", link_path), 0);
    refused(link_path, RLS_ECANTOPEN, "dangling symlink");
    snprintf(p, sizeof p, "%s/missing.db", target_dir);
    assert_false(rel_exists(p));
    char *listing = dir_listing(target_dir);
    assert_null(strstr(listing, "missing"));
    free(listing);

    /* to a directory */
    tu_path(link_path, sizeof link_path, dir, "dirlink.db");
    assert_int_equal(symlink("real", link_path), 0);
    refused(link_path, RLS_EISDIR, "symlink to a directory");
    tu_rmdir(dir);
}

/*
 * Finding R4 (fixed): the checkpoint lock "<db>-ckpt" was named after the
 * path as given, not the file SQLite opened, so through a symlink a handle
 * locked "<link>-ckpt" while handles using the real path locked
 * "<target>-ckpt": checkpoints were no longer serialised (the SQLite <
 * 3.51.3 WAL-reset race the lock exists for).  Expected: holding the
 * target's lock stops a checkpoint through the link.
 */
static void symlink_shares_the_checkpoint_lock(void **state)
{
    char *dir = tu_mkdtemp(), real[4200], link_path[4200], lock[4300];
    make_db(dir, "rl.db", real, sizeof real, 1);
    tu_path(link_path, sizeof link_path, dir, "link.db");
    assert_int_equal(symlink("rl.db", link_path), 0);
    snprintf(lock, sizeof lock, "%s-ckpt", real);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);  /* "someone is checkpointing" */

    rls_db *db;
    rls_result r;
    char key[32];
    assert_int_equal(rls_open(&db, link_path, NULL), RLS_OK);
    int64_t before = rel_size(real, "");
    for (int i = 0; i < 6000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(rls_check_at(db, "many", key, 1, T0, &r), RLS_OK);
    }
    /* no checkpoint may have run: the database file did not grow */
    assert_int_equal(rel_size(real, ""), before);
    rls_close(db);
    close(fd);
    tu_rmdir(dir);
}

/* ---- a full filesystem --------------------------------------------------- */

/* Fills the filesystem of dir with a file of ballast until write fails,
 * then gives back `leave` bytes. */
static void fill_up(const char *dir, off_t leave)
{
    char p[4200];
    static char block[4096];
    struct stat sb;
    tu_path(p, sizeof p, dir, "ballast");
    int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0)
        return;
    while (write(fd, block, sizeof block) > 0) {
    }
    while (write(fd, block, 1) > 0) {
    }
    if (leave > 0 && fstat(fd, &sb) == 0)
        CHILD_CHECK(ftruncate(fd, sb.st_size > leave ? sb.st_size - leave : 0) == 0,
                    "ftruncate: %s", strerror(errno));
    close(fd);
}

static void free_ballast(const char *dir)
{
    char p[4200];
    tu_path(p, sizeof p, dir, "ballast");
    unlink(p);
}

/*
 * In the child: a new database on a full filesystem, then an existing one
 * that fills it up.  Every failure is EFULL (or EIO for RLIMIT_FSIZE),
 * the failing call leaves the file as it was, and after space is freed
 * everything that was admitted is there and the database works.
 */
static void full_fs_child(const char *dir, int method)
{
    char path[4200];
    rls_db *db = NULL;
    rls_result r;
    int rc;
    /* RLIMIT_FSIZE: a short write is SQLITE_FULL, a refused one EFBIG (EIO) */
    int want = RLS_EFULL, also = method == 0 ? RLS_EFULL : RLS_EIO;

    if (method == 0) {
        /* a new database where nothing fits */
        tu_path(path, sizeof path, dir, "new.db");
        fill_up(dir, 0);
        char *before = dir_listing(dir);
        rc = rls_open(&db, path, NULL);
        child_log("full filesystem, new database: %s (%s)\n", rls_errname(rc),
                  rls_errmsg(NULL));
        CHILD_CHECK(rc == RLS_EFULL, "creating a database on a full filesystem: %s",
                    rls_errname(rc));
        if (rc == RLS_OK)
            rls_close(db);
        char *after = dir_listing(dir);
        CHILD_CHECK(strcmp(before, after) == 0, "a failed create left files: %s", after);
        free(before);
        free(after);
        free_ballast(dir);
    }

    tu_path(path, sizeof path, dir, "rl.db");
    rc = rls_open(&db, path, NULL);
    CHILD_CHECK(rc == RLS_OK, "open: %s", rls_errname(rc));
    if (rc != RLS_OK)
        return;
    rc = rls_rules_apply_at(db, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL);
    CHILD_CHECK(rc == RLS_OK, "apply: %s", rls_errname(rc));
    if (method == 0)
        fill_up(dir, 48 * 1024);  /* room for a few dozen checks */
    else {
        struct rlimit rl = {(rlim_t)(rel_size(path, "-wal") + 64 * 1024),
                            (rlim_t)(rel_size(path, "-wal") + 64 * 1024)};
        signal(SIGXFSZ, SIG_IGN);
        CHILD_CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s", strerror(errno));
    }
    int admitted = 0, failures = 0, first_fail = -1;
    char key[32];
    for (int i = 0; i < 200000 && failures < 5; i++) {
        size_t len_before;
        unsigned char *before = rel_slurp(path, &len_before);
        snprintf(key, sizeof key, "key:%d", i);
        rc = rls_check_at(db, "many", key, 1, T0, &r);
        if (rc == RLS_OK) {
            CHILD_CHECK(r.allowed, "a fresh key was denied");
            admitted++;
        } else {
            if (first_fail < 0)
                first_fail = i;
            failures++;
            CHILD_CHECK(rc == want || rc == also, "check on a full filesystem: %s (%s)",
                        rls_errname(rc), rls_errmsg(db));
            CHILD_CHECK(!r.allowed && r.reason == RLS_REASON_DEGRADED,
                        "a failed check was not denied as degraded");
            CHILD_CHECK(same_bytes(path, before, len_before),
                        "a failed check changed the database file");
            if (failures == 1)
                child_log("full filesystem, existing database: %d checks admitted, then %s "
                          "(%s)\n", admitted, rls_errname(rc), rls_errmsg(db));
        }
        free(before);
    }
    CHILD_CHECK(failures > 0, "the filesystem never filled up");
    rls_close(db);
    if (method == 0) {
        /* issue #17: an existing database on a full filesystem (its -shm
         * cannot be made) is EFULL, not EIO "cannot read database header" */
        fill_up(dir, 0);
        rc = rls_open(&db, path, NULL);
        child_log("full filesystem, opening the existing database: %s (%s)\n",
                  rls_errname(rc), rls_errmsg(NULL));
        CHILD_CHECK(rc == RLS_EFULL || rc == RLS_OK,
                    "opening an existing database on a full filesystem: %s (%s)",
                    rls_errname(rc), rls_errmsg(NULL));
        if (rc == RLS_OK)
            rls_close(db);
        free_ballast(dir);
    }
    else {
        struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    /* after space is back: intact, everything admitted is stored, works */
    rc = rls_open(&db, path, NULL);
    CHILD_CHECK(rc == RLS_OK, "reopen after freeing space: %s (%s)", rls_errname(rc),
                rls_errmsg(NULL));
    if (rc != RLS_OK)
        return;
    const char *ok = rel_integrity(db);
    CHILD_CHECK(strcmp(ok, "ok") == 0, "after freeing space: %s", ok);
    rls_rows *rows = NULL;
    rls_usage_query q = {sizeof q, "many", NULL, RLS_SORT_KEY, 0, 100000};
    rc = rls_usage_at(db, &q, T0, &rows);
    CHILD_CHECK(rc == RLS_OK && rls_rows_count(rows) == admitted,
                "after freeing space %d keys are stored, %d were admitted",
                rls_rows_count(rows), admitted);
    rls_rows_free(rows);
    rc = rls_check_at(db, "many", "after", 1, T0, &r);
    CHILD_CHECK(rc == RLS_OK && r.allowed, "check after freeing space: %s", rls_errname(rc));
    rls_close(db);
}

static void full_fs_tmpfs_child(const char *dir)
{
    char mnt[2048];
    tu_path(mnt, sizeof mnt, dir, "mnt");
    if (getenv("RLS_HOSTILE_NO_TMPFS") || unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("rlstore-test", mnt, "tmpfs", 0, "size=384k,mode=0700") != 0) {
        REPORT->no_mount = 1;  /* not permitted: the caller falls back */
        _exit(0);
    }
    full_fs_child(mnt, 0);
}

static void full_fs_fsize_child(const char *dir)
{
    full_fs_child(dir, 1);
}

static void full_filesystem(void **state)
{
    char *dir = tu_mkdtemp(), mnt[2048];
    tu_path(mnt, sizeof mnt, dir, "mnt");
    assert_int_equal(mkdir(mnt, 0700), 0);
    memset(REPORT, 0, sizeof *REPORT);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        full_fs_tmpfs_child(dir);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (REPORT->no_mount) {
        print_message("note: no tmpfs could be mounted here: using RLIMIT_FSIZE instead "
                      "(a write past the limit fails with EFBIG: EIO, not EFULL)\n");
        memset(REPORT, 0, sizeof *REPORT);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            full_fs_fsize_child(mnt);
            _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
    } else {
        print_message("full filesystem: a 384 KiB tmpfs in a private mount namespace\n");
    }
    if (REPORT->log[0])
        print_message("%s", REPORT->log);
    if (REPORT->failed)
        fail_msg("%s", REPORT->msg);
    assert_false(WIFSIGNALED(status));
    tu_rmdir(dir);
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    REPORT = rel_shared(sizeof *REPORT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_only_file),
        cmocka_unit_test(read_only_file_then_writable),
        cmocka_unit_test(read_only_directory),
        cmocka_unit_test(directory),
        cmocka_unit_test(symlinks),
        cmocka_unit_test(symlink_shares_the_checkpoint_lock),
        cmocka_unit_test(full_filesystem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
