/*
 * reltest.h - helpers of the reliability suites (test_exact, test_crash,
 * test_hostile_open, test_hostile_fs, test_clock, test_growth): size knobs,
 * the tools next to the test binary, running a tool with its exit status,
 * memory shared across fork(), whole-file snapshots and a monotonic clock.
 *
 * Knobs: every suite reads its sizes from RLS_* environment variables (see
 * docs/RELIABILITY.md); `make stress` sets the long values.  Under
 * `make valgrind` (VALGRIND=1) the sizes shrink so the suites stay short.
 */
#ifndef RLS_RELTEST_H
#define RLS_RELTEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include "itest.h"

/* The build directory holding rlctl and rltop: three levels above the test
 * binary (build/tests/reliability/test_x -> build). */
static char rel_build_dir[4096] = "build";

static inline void rel_init(const char *argv0)
{
    char buf[4096];
    const char *env = getenv("BUILD");
    if (argv0 && realpath(argv0, buf)) {
        for (int i = 0; i < 3; i++) {
            char *slash = strrchr(buf, '/');
            if (slash)
                *slash = '\0';
        }
        snprintf(rel_build_dir, sizeof rel_build_dir, "%s", buf);
    } else if (env && *env) {
        snprintf(rel_build_dir, sizeof rel_build_dir, "%s", env);
    }
}

/* Path of a tool of the build (rlctl, rltop); 1 if it is executable.
 * $RLCTL / $RLTOP name another binary. */
static inline int rel_tool(const char *name, char *buf, size_t size)
{
    const char *env = getenv(strcmp(name, "rlctl") == 0 ? "RLCTL" : "RLTOP");
    if (env && *env)
        snprintf(buf, size, "%s", env);
    else
        snprintf(buf, size, "%s/%s", rel_build_dir, name);
    return access(buf, X_OK) == 0;
}

/* 1 under `make valgrind`. */
static inline int rel_valgrind(void)
{
    const char *v = getenv("VALGRIND");
    return v && strcmp(v, "1") == 0;
}

/* An integer knob from the environment, else def (else small under
 * valgrind). */
static inline long rel_knob(const char *name, long def, long valgrind_def)
{
    const char *v = getenv(name);
    if (v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end == '\0' && n > 0)
            return n;
    }
    return rel_valgrind() ? valgrind_def : def;
}

/* Milliseconds of a monotonic clock. */
static inline int64_t rel_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void rel_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* path for a client named app: on PostgreSQL the URI with that
 * application_name (rel_pg_session_gone finds its session), else path. */
static inline void rel_named_path(const char *path, const char *app, char *buf, size_t size)
{
    if (it_is_uri(path))
        snprintf(buf, size, "%s&application_name=%s", path, app);
    else
        snprintf(buf, size, "%s", path);
}

/*
 * PostgreSQL: waits until no session named app (its application_name)
 * is left on the server of path: a killed client's last COMMIT may still
 * be carried out by its session, which then notices the end of the
 * connection and ends.  A judge that reads several things one after the
 * other waits for it first.  Fails the test after 60 s.  SQLite: returns.
 */
static inline void rel_pg_session_gone(const char *path, const char *app)
{
    char sql[200];
    if (!it_is_uri(path))
        return;
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s'", app);
    for (int64_t end = rel_mono_ms() + 60000;;) {
        PGresult *r = it_pg_run(path, sql);
        int left = atoi(PQgetvalue(r, 0, 0));
        PQclear(r);
        if (left == 0)
            return;
        if (rel_mono_ms() > end)
            fail_msg("the session '%s' of a killed client is still there after 60 s", app);
        rel_sleep_us(1000);
    }
}

/* Zeroed memory shared with every child forked afterwards. */
static inline void *rel_shared(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 0, size);
    return p;
}

/*
 * Runs argv[0] (a path) with stdin from /dev/null and stdout/stderr to
 * out (or /dev/null); returns the exit status, or 128 + signal, or -1 if
 * it could not be started.  Usable in forked children (no cmocka calls).
 */
static inline int rel_run(char *const argv[], const char *out)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || fd < 0)
            _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The whole content of a file (NULL if it cannot be read); *len its size. */
static inline unsigned char *rel_slurp(const char *path, size_t *len)
{
    struct stat sb;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)sb.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (buf)
        buf[got] = '\0';
    *len = got;
    return buf;
}

/* Writes text to path (created 0600), failing the test if it cannot. */
static inline void rel_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* 1 if path exists (without following a final symlink). */
static inline int rel_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Size of path + suffix, -1 if it does not exist. */
static inline int64_t rel_size(const char *path, const char *suffix)
{
    char p[8400];
    struct stat sb;
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return stat(p, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* An integer column of row r by name (fails the test if missing). */
static inline int64_t rel_row_int(const rls_rows *rows, int r, const char *col)
{
    int c = rls_rows_find(rows, col);
    if (c < 0)
        fail_msg("no column '%s'", col);
    return rls_rows_int(rows, r, c);
}

static inline const char *rel_row_text(const rls_rows *rows, int r, const char *col)
{
    int c = rls_rows_find(rows, col);
    if (c < 0)
        fail_msg("no column '%s'", col);
    const char *s = rls_rows_text(rows, r, c);
    return s ? s : "";
}

/* "ok" unless rls_doctor(full) reports a failed integrity or quick check;
 * else the failing detail (static buffer). */
static inline const char *rel_integrity(rls_db *db)
{
    static char buf[512];
    rls_rows *rows = NULL;
    int rc = rls_doctor(db, 1, &rows);
    if (rc != RLS_OK) {
        snprintf(buf, sizeof buf, "doctor: %s: %s", rls_errname(rc), rls_errmsg(db));
        return buf;
    }
    snprintf(buf, sizeof buf, "doctor did not run integrity_check");
    for (int r = 0; r < rls_rows_count(rows); r++) {
        const char *check = rel_row_text(rows, r, "check");
        /* PostgreSQL keeps its own files sound: a doctor that reaches the
         * server and reads the rules is the check there */
        if (strcmp(check, "integrity_check") == 0 || strcmp(check, "server_version") == 0)
            snprintf(buf, sizeof buf, "ok");
        if (strcmp(rel_row_text(rows, r, "status"), "fail") == 0) {
            snprintf(buf, sizeof buf, "%s: %s", check, rel_row_text(rows, r, "detail"));
            rls_rows_free(rows);
            return buf;
        }
    }
    for (int r = 0; r < rls_rows_count(rows); r++) {
        const char *check = rel_row_text(rows, r, "check");
        if ((strcmp(check, "integrity_check") == 0 || strcmp(check, "quick_check") == 0) &&
            strcmp(rel_row_text(rows, r, "status"), "ok") != 0) {
            snprintf(buf, sizeof buf, "%s: %s", check, rel_row_text(rows, r, "detail"));
            break;
        }
    }
    rls_rows_free(rows);
    return buf;
}

#endif
