/*
 * test_race_open.c - processes that open the same new database at once
 * (issue #17, defects 1 and 2).
 *
 * Each round forks RLS_RACE_PROCS processes that wait on one pipe and then
 * all call rls_open() on a path that does not exist yet (or, in the second
 * test, an empty file; in the third, a new split pair).  Every open must
 * succeed; each process applies the rules if none are (apply_if, version
 * 0: exactly one wins), makes RLS_RACE_CHECKS checks of one key against a
 * limit of half the checks of all processes, and looks at the database
 * file it holds open (/proc/self/fd): it must be the file at the path, not
 * a deleted one.  Then the admissions of all processes must add up to the
 * limit exactly (one counter store), and a fresh handle must find the key
 * spent.
 *
 * A fourth hides /proc (a private mount namespace), which makes the library
 * link a named temporary file instead of an unnamed one.
 *
 * The last test runs `rlctl init BAD.yaml` on a new path while this process
 * watches the directory (inotify) and opens the database as soon as a file
 * appears: init must never remove a file another process holds.
 *
 * Knobs: RLS_RACE_PROCS (4), RLS_RACE_ROUNDS (40), RLS_RACE_CHECKS (10),
 * RLS_RACE_INIT_ROUNDS (5).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include "reltest.h"

typedef struct child_out {
    int open_rc;
    int apply_rc;
    int check_fail;     /* a check that did not return RLS_OK */
    int admitted;
    int deleted;        /* the database file it holds was unlinked */
    int held;           /* database files it holds open */
    long long ino;      /* inode of the file it holds */
    char msg[300];
} child_out;

enum race_kind { RACE_NEW, RACE_EMPTY, RACE_SPLIT };

static child_out *OUT;  /* shared with the children, RLS_RACE_PROCS of them */

static char *rules_yaml(int limit)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "version: 1\n"
             "actions:\n"
             "  race:\n"
             "    limits: [ { name: day, algorithm: fixed_window, limit: %d, window: 1d } ]\n",
             limit);
    return buf;
}

/*
 * The database files (main, not -wal or -shm) this process holds open whose
 * name is `real` or `real (deleted)`: how many, whether one was unlinked,
 * and the inode of the last.
 */
static void held_files(const char *real, child_out *o)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t n = strlen(real);
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char link[300], target[4400];
        struct stat sb;
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (strncmp(target, real, n) != 0 ||
            (target[n] != '\0' && strcmp(target + n, " (deleted)") != 0))
            continue;
        if (stat(link, &sb) != 0)
            continue;
        o->held++;
        o->ino = (long long)sb.st_ino;
        if (sb.st_nlink == 0 || target[n] != '\0')
            o->deleted = 1;
    }
    closedir(d);
}

static void race_child(int gate, const char *path, const char *counters, int checks,
                       int limit, child_out *o)
{
    char c, real[4200];
    rls_db *db = NULL;
    rls_options opt;
    rls_options_init(&opt);
    opt.counters_path = counters;
    while (read(gate, &c, 1) < 0 && errno == EINTR) {
    }
    o->open_rc = rls_open(&db, path, &opt);
    if (o->open_rc != RLS_OK) {
        snprintf(o->msg, sizeof o->msg, "%s", rls_errmsg(NULL));
        _exit(0);
    }
    const char *y = rules_yaml(limit);
    o->apply_rc = rls_rules_apply_if_at(db, y, strlen(y), "race.yaml", NULL, 0, T0, NULL);
    if (o->apply_rc != RLS_OK && o->apply_rc != RLS_ECONFLICT)
        snprintf(o->msg, sizeof o->msg, "apply: %s", rls_errmsg(db));
    for (int i = 0; i < checks; i++) {
        rls_result r;
        int rc = rls_check_at(db, "race", "k", 1, T0 + i, &r);
        if (rc != RLS_OK) {
            if (!o->check_fail)
                snprintf(o->msg, sizeof o->msg, "check: %s: %s", rls_errname(rc),
                         rls_errmsg(db));
            o->check_fail++;
        } else if (r.allowed) {
            o->admitted++;
        }
    }
    if (realpath(counters ? counters : path, real))
        held_files(real, o);
    rls_close(db);
    _exit(0);
}

/* One round: nprocs processes open path at once; 0 if all went well. */
static int race_round(const char *dir, int round, enum race_kind kind, int nprocs,
                      int checks, char *why, size_t whysize)
{
    char path[4200], counters[4200], name[64];
    int limit = nprocs * checks / 2, gate[2];
    snprintf(name, sizeof name, "r%d.db", round);
    tu_path(path, sizeof path, dir, name);
    snprintf(name, sizeof name, "c%d.db", round);
    tu_path(counters, sizeof counters, dir, name);
    if (kind == RACE_EMPTY)
        rel_write_file(path, "", 0);
    memset(OUT, 0, sizeof *OUT * (size_t)nprocs);
    assert_int_equal(pipe(gate), 0);
    for (int i = 0; i < nprocs; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(gate[1]);
            race_child(gate[0], path, kind == RACE_SPLIT ? counters : NULL, checks, limit,
                       &OUT[i]);
        }
    }
    close(gate[0]);
    close(gate[1]);  /* every child reads EOF at once: go */
    for (int i = 0; i < nprocs; i++) {
        int status;
        assert_true(wait(&status) > 0);
        assert_false(WIFSIGNALED(status));
    }
    const char *watched = kind == RACE_SPLIT ? counters : path;
    struct stat sb;
    int admitted = 0, applied = 0, proc = access("/proc/self/fd", F_OK) == 0;
    *why = '\0';
    for (int i = 0; i < nprocs && !*why; i++) {
        child_out *o = &OUT[i];
        if (o->open_rc != RLS_OK)
            snprintf(why, whysize, "open failed: %s (%s)", rls_errname(o->open_rc), o->msg);
        else if (o->apply_rc != RLS_OK && o->apply_rc != RLS_ECONFLICT)
            snprintf(why, whysize, "apply failed: %s (%s)", rls_errname(o->apply_rc),
                     o->msg);
        else if (o->check_fail)
            snprintf(why, whysize, "%d checks failed (%s)", o->check_fail, o->msg);
        else if (!proc && stat(watched, &sb) != 0)
            snprintf(why, whysize, "the database is gone");
        else if (!proc)
            ;   /* without /proc: the admissions below tell */
        else if (o->held < 1 || o->deleted)
            snprintf(why, whysize, "a process counted in a deleted database file");
        else if (stat(watched, &sb) != 0 || (long long)sb.st_ino != o->ino)
            snprintf(why, whysize, "a process held another file than the one at the path");
        admitted += o->admitted;
        applied += o->apply_rc == RLS_OK;
    }
    if (!*why && applied != 1)
        snprintf(why, whysize, "the rules were applied %d times, expected once", applied);
    if (!*why && admitted != limit)
        snprintf(why, whysize, "%d admitted against a limit of %d", admitted, limit);
    if (!*why) {
        /* one counter store: a fresh handle finds the key spent */
        rls_db *db;
        rls_options opt;
        rls_result r;
        rls_options_init(&opt);
        opt.counters_path = kind == RACE_SPLIT ? counters : NULL;
        int rc = rls_open(&db, path, &opt);
        if (rc != RLS_OK)
            snprintf(why, whysize, "reopen: %s", rls_errname(rc));
        else if ((rc = rls_check_at(db, "race", "k", 1, T0 + checks, &r)) != RLS_OK ||
                 r.allowed)
            snprintf(why, whysize, "after the round the key is not spent: %s, allowed %d",
                     rls_errname(rc), r.allowed);
        if (rc == RLS_OK || db)
            rls_close(db);
    }
    return *why != '\0';
}

static void race(enum race_kind kind, const char *what)
{
    char *dir = tu_mkdtemp(), why[512], first[600] = "";
    int nprocs = (int)rel_knob("RLS_RACE_PROCS", 4, 3);
    int rounds = (int)rel_knob("RLS_RACE_ROUNDS", 40, 4);
    int checks = (int)rel_knob("RLS_RACE_CHECKS", 10, 4);
    int failed = 0;
    if (nprocs > 64)
        nprocs = 64;
    for (int round = 0; round < rounds; round++) {
        if (race_round(dir, round, kind, nprocs, checks, why, sizeof why)) {
            if (!failed)
                snprintf(first, sizeof first, "round %d: %s", round, why);
            failed++;
        }
    }
    print_message("%s: %d rounds of %d processes opening at once, %d checks each: %d rounds "
                  "failed\n", what, rounds, nprocs, checks, failed);
    tu_rmdir(dir);
    if (failed)
        fail_msg("%s: %d of %d rounds failed; first: %s", what, failed, rounds, first);
}

static void racing_first_opens_of_a_new_path(void **state)
{
    race(RACE_NEW, "new path");
}

static void racing_first_opens_of_an_empty_file(void **state)
{
    race(RACE_EMPTY, "empty file");
}

static void racing_first_opens_of_a_new_split_pair(void **state)
{
    race(RACE_SPLIT, "new split pair");
}

/*
 * Without /proc (a container that does not mount it) the new file cannot be
 * linked from its unnamed descriptor: the library writes a named temporary
 * file and links that.  The same race, in a private mount namespace with
 * /proc hidden; and no temporary file is left.
 */
static void racing_first_opens_without_proc(void **state)
{
    char *dir = tu_mkdtemp();
    int *result = rel_shared(sizeof(int) * 2);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("rlstore-test", "/proc", "tmpfs", 0, "size=64k") != 0) {
            result[1] = 1;   /* not permitted here */
            _exit(0);
        }
        char why[512];
        int rounds = (int)rel_knob("RLS_RACE_ROUNDS", 40, 4);
        for (int round = 0; round < rounds; round++)
            if (race_round(dir, round, RACE_NEW, 4, 10, why, sizeof why)) {
                fprintf(stderr, "without /proc, round %d: %s\n", round, why);
                result[0]++;
            }
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_false(WIFSIGNALED(status));
    if (result[1]) {
        print_message("note: /proc cannot be hidden here (no mount namespace): skipped\n");
    } else {
        assert_int_equal(result[0], 0);
        /* only the databases and their side files: no temporary file */
        DIR *d = opendir(dir);
        struct dirent *e;
        assert_non_null(d);
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' && !strstr(e->d_name, ".db"))
                fail_msg("left behind: %s", e->d_name);
            else if (strstr(e->d_name, ".db.") != NULL)
                fail_msg("a temporary file was left behind: %s", e->d_name);
        closedir(d);
        print_message("without /proc: racing opens of new paths all succeeded\n");
    }
    tu_rmdir(dir);
}

/* ---- rlctl init with bad rules ------------------------------------------- */

/* Starts `rlctl --db path init yaml`; *out reads its output (EOF: it ended). */
static pid_t start_init(const char *rlctl, const char *path, const char *yaml, int *out)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execl(rlctl, rlctl, "--db", path, "init", yaml, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    *out = p[0];
    return pid;
}

/*
 * Defect 2: `rlctl init BAD.yaml` decided "new" with stat(), created the
 * file, failed to apply and removed it, although another process had
 * opened it meanwhile (the application was left on a deleted file).  Here
 * that process opens the database the moment a file appears; when init has
 * ended, the file it holds must still be the one at the path.
 */
static void init_with_bad_rules_never_removes_a_held_file(void **state)
{
    char rlctl[4200], yaml[4200], path[4200], name[64];
    if (!rel_tool("rlctl", rlctl, sizeof rlctl))
        fail_msg("rlctl is not built: %s", rlctl);
    char *dir = tu_mkdtemp();
    tu_path(yaml, sizeof yaml, dir, "bad.yaml");
    rel_write_file(yaml, "version: 1\nactions: [\n", 22);
    int rounds = (int)rel_knob("RLS_RACE_INIT_ROUNDS", 5, 2), opened = 0;
    for (int round = 0; round < rounds; round++) {
        snprintf(name, sizeof name, "init%d.db", round);
        tu_path(path, sizeof path, dir, name);
        int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        assert_true(in >= 0);
        assert_true(inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO) >= 0);
        int out;
        pid_t pid = start_init(rlctl, path, yaml, &out);
        rls_db *db = NULL;
        rls_options opt;
        rls_options_init(&opt);
        opt.create = 0;
        int ended = 0, seen = 0;
        while (!db && !ended) {
            /* once the file is there, open it (again and again while it is
             * being made: that is defect 1's, test above) */
            if (seen && rls_open(&db, path, &opt) == RLS_OK)
                break;
            struct pollfd pf[2] = {{in, POLLIN, 0}, {out, POLLIN, 0}};
            if (poll(pf, 2, seen ? 0 : -1) < 0)
                continue;
            char buf[4096];
            ssize_t n = pf[0].revents ? read(in, buf, sizeof buf) : 0;
            for (ssize_t off = 0; n > 0 && off < n;) {
                const struct inotify_event *ev = (const void *)(buf + off);
                if (ev->len && strcmp(ev->name, name) == 0)
                    seen = 1;
                off += (ssize_t)sizeof *ev + ev->len;
            }
            if (pf[1].revents && read(out, buf, sizeof buf) <= 0)
                ended = 1;
        }
        opened += db != NULL;
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 4);   /* a configuration error */
        close(out);
        close(in);
        if (db) {
            char real[4200];
            child_out o;
            memset(&o, 0, sizeof o);
            struct stat sb;
            /* the file this process holds must still be at the path */
            if (stat(path, &sb) != 0)
                fail_msg("round %d: init removed the database this process holds", round);
            assert_non_null(realpath(path, real));
            held_files(real, &o);
            if (o.deleted || o.ino != (long long)sb.st_ino)
                fail_msg("round %d: this process holds a deleted database file", round);
            rls_close(db);
        } else if (rel_exists(path)) {
            fail_msg("round %d: a refused init left '%s'", round, path);
        }
    }
    print_message("init with bad rules: %d rounds, %d of them with the database opened by "
                  "another process while init ran\n", rounds, opened);
    tu_rmdir(dir);
}

int main(int argc, char **argv)
{
    rel_init(argc > 0 ? argv[0] : NULL);
    OUT = rel_shared(sizeof *OUT * 64);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(racing_first_opens_of_a_new_path),
        cmocka_unit_test(racing_first_opens_of_an_empty_file),
        cmocka_unit_test(racing_first_opens_of_a_new_split_pair),
        cmocka_unit_test(racing_first_opens_without_proc),
        cmocka_unit_test(init_with_bad_rules_never_removes_a_held_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
