/*
 * test_pg_stall.c - a PostgreSQL server that stops answering: every call
 * returns, by its deadline, with a named error, a check's result filled by
 * the failure policy; once the server answers again, the same handles work
 * (they connect again).
 *
 * Two ways to stall, one test each:
 *   stopped  a throw-away server of this suite's own (tests/pg/server.sh
 *            start) has its postmaster and every child stopped (SIGSTOP),
 *            as a frozen host or VM would be: connections stay open,
 *            the kernel still accepts new ones, nothing answers;
 *   proxy    the handles reach the suite's server through a proxy (a
 *            forked process here) that stops forwarding while keeping
 *            every socket open, as a network partition would.
 * While stalled, each of these calls is made on a handle that was
 * connected and idle (so its next round trip is the one that stalls): a
 * check of a key the handle knows (one round trip, pg_fast.c) under
 * on_error deny, and under on_error allow; a check of a new key (the usual
 * transaction); a peek; a refund; a reservation; a block (an admin
 * change); a listing of blocks (an admin read); a GC step; rls_doctor;
 * rls_close (which writes the handle's statistics first); then a second
 * check on a handle whose connection was lost (it connects again, and that
 * stalls), and a new rls_open.  Every call must return RLS_EIO (rls_open
 * RLS_ECANTOPEN) with a message; every check, peek and reservation must be
 * answered by the failure policy (reason degraded, allowed as on_error
 * says).  Then the stall ends and a check on every handle must succeed.
 *
 * Nothing here measures time: the calls run in a child process, and a
 * call that does not return is caught by a watchdog (WATCHDOG_S, far
 * above any deadline: busy_timeout_ms is BUSY_MS, or SLOW_BUSY_MS for the
 * handles of the admin calls whose deadline is ten times longer) that
 * kills the child and fails the test, naming the call.  The server is always resumed (and
 * the proxy told to forward) when the child ends, whatever happened.
 *
 * Runs when RLSTORE_TEST_PG names a live server (the PostgreSQL pass of
 * make test); on SQLite both tests are skipped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "itest.h"

#define BUSY_MS 500       /* the handles' busy_timeout_ms ... */
#define SLOW_BUSY_MS 0    /* ... and theirs for the calls of the slow deadline
                           * (ten times busy_timeout_ms + 500 ms) */
#define WATCHDOG_S 180    /* a call still running by then hangs */

#define RULES                                                                 \
    "version: 1\n"                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    on_error: deny\n"                                                    \
    "    limits: [ { name: r, algorithm: fixed_window, limit: 1000, window: 1h } ]\n" \
    "  open:\n"                                                               \
    "    on_error: allow\n"                                                   \
    "    limits: [ { name: r, algorithm: fixed_window, limit: 1000, window: 1h } ]\n"

/* What the child is doing, and why it failed: shared with the parent. */
typedef struct shared {
    char step[128];
    char why[1024];
} shared;

static shared *sh;

#define STEP(...) snprintf(sh->step, sizeof sh->step, __VA_ARGS__)
#define REQUIRE(cond, ...)                                                    \
    do {                                                                      \
        if (!(cond)) {                                                        \
            int n_ = snprintf(sh->why, sizeof sh->why, "%s: ", sh->step);     \
            snprintf(sh->why + n_, sizeof sh->why - (size_t)n_, __VA_ARGS__); \
            _exit(1);                                                         \
        }                                                                     \
    } while (0)

/* A way to stall the server and to end the stall. */
typedef struct staller {
    void (*stop)(void);
    void (*go)(void);
} staller;

/* ---- a server of our own, stopped and continued ---------------------- */

static char srv_dir[4096], srv_uri[1024];
static pid_t srv_pm;   /* its postmaster */

/* The path of tests/pg/server.sh: from the working directory (make test
 * runs the suites from the top of the tree) or next to this binary's
 * build tree. */
static void server_script(char *buf, size_t size)
{
    const char *env = getenv("RLS_PG_SERVER_SH");
    if (env) {
        snprintf(buf, size, "%s", env);
        return;
    }
    snprintf(buf, size, "tests/pg/server.sh");
    if (access(buf, R_OK) == 0)
        return;
    /* BUILD/tests/reliability/test_pg_stall: the tree is three levels up */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
    }
    snprintf(buf, size, "%s/tests/pg/server.sh", exe);
}

static void server_start(void)
{
    char script[4200], cmd[4400];
    server_script(script, sizeof script);
    snprintf(cmd, sizeof cmd, "sh '%s' start --owner %d", script, (int)getpid());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int ok = fgets(srv_uri, sizeof srv_uri, p) && fgets(srv_dir, sizeof srv_dir, p);
    int st = pclose(p);
    if (!ok || st != 0)
        fail_msg("%s failed (status %d)", cmd, st);
    srv_uri[strcspn(srv_uri, "\n")] = '\0';
    srv_dir[strcspn(srv_dir, "\n")] = '\0';
    char pidfile[4200];
    snprintf(pidfile, sizeof pidfile, "%s/data/postmaster.pid", srv_dir);
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    long pm = 0;
    assert_int_equal(fscanf(f, "%ld", &pm), 1);
    fclose(f);
    srv_pm = (pid_t)pm;
    assert_true(srv_pm > 1);
}

/* The number at p (decimal), and where it ends in *end. */
static long number(const char *p, const char **end)
{
    long v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    *end = p;
    return v;
}

/* The parent's pid of process pid (from /proc/PID/stat), or 0. */
static long parent_of(long pid)
{
    char path[64] = "/proc/", buf[512], digits[24];
    int nd = 0;
    for (long v = pid; v > 0 && nd < 20; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    size_t o = strlen(path);
    while (nd > 0)
        path[o++] = digits[--nd];
    memcpy(path + o, "/stat", 6);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');   /* after the command's name: " S PPID" */
    if (!rp || strlen(rp) < 5)
        return 0;
    const char *end;
    return number(rp + 4, &end);
}

/* An entry of getdents64 (linux_dirent64 in its man page). */
struct ldirent {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Sends sig to the postmaster, then to each of its children (found in
 * /proc by their parent's pid).  Stopped first, the postmaster forks no
 * child meanwhile.  Async-signal-safe (on_signal uses it): open, read and
 * getdents64 only. */
static void server_signal(int sig)
{
    char buf[8192];
    if (srv_pm <= 1)
        return;
    kill(srv_pm, sig);
    int fd = open("/proc", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            const struct ldirent *e = (const struct ldirent *)(buf + off);
            const char *end;
            long pid = number(e->d_name, &end);
            if (pid > 1 && *end == '\0' && parent_of(pid) == srv_pm)
                kill((pid_t)pid, sig);
            off += e->d_reclen;
        }
    }
    close(fd);
}

static void server_stop_all(void) { server_signal(SIGSTOP); }
static void server_continue_all(void) { server_signal(SIGCONT); }

static void server_end(void)
{
    char script[4200], cmd[8400];
    if (!srv_dir[0])
        return;
    server_continue_all();
    server_script(script, sizeof script);
    snprintf(cmd, sizeof cmd, "sh '%s' stop '%s'", script, srv_dir);
    if (system(cmd) != 0)
        print_message("could not stop the server of %s\n", srv_dir);
    srv_dir[0] = '\0';
    srv_pm = 0;
}

/* ---- a proxy that stops forwarding ------------------------------------ */

static struct {
    pid_t pid;
    int port;
    int ctl, ack;   /* commands to the proxy, its answers */
} px;

#define PX_MAX 64

/* The proxy's loop: accepts, connects each client to up, relays bytes both
 * ways while forwarding; stopped, it reads nothing and keeps every socket
 * open.  Commands on ctl: 's' stop, 'g' go, each answered on ack. */
static void proxy_main(int lfd, struct sockaddr_in up, int ctl, int ack)
{
    int cfd[PX_MAX], sfd[PX_MAX], n = 0, forwarding = 1;
    char buf[65536];
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) {
        struct pollfd p[2 + 2 * PX_MAX];
        int np = 0;
        p[np++] = (struct pollfd){lfd, POLLIN, 0};
        p[np++] = (struct pollfd){ctl, POLLIN, 0};
        int polled = forwarding ? n : 0;   /* the pairs in p */
        for (int i = 0; i < polled; i++) {
            p[np++] = (struct pollfd){cfd[i], POLLIN, 0};
            p[np++] = (struct pollfd){sfd[i], POLLIN, 0};
        }
        if (poll(p, (nfds_t)np, -1) < 0)
            continue;
        if (p[1].revents) {
            char c;
            if (read(ctl, &c, 1) != 1 || c == 'q')
                _exit(0);
            forwarding = c == 'g';
            if (write(ack, &c, 1) != 1)
                _exit(1);
            continue;   /* the set of fds to poll changed */
        }
        if (p[0].revents && n < PX_MAX) {
            int c = accept(lfd, NULL, NULL), s = socket(AF_INET, SOCK_STREAM, 0);
            if (c >= 0 && s >= 0 && connect(s, (struct sockaddr *)&up, sizeof up) == 0) {
                cfd[n] = c;
                sfd[n++] = s;
            } else {
                if (c >= 0)
                    close(c);
                if (s >= 0)
                    close(s);
            }
        }
        for (int i = 0, k = 2; i < polled; i++, k += 2) {
            int end = 0;
            for (int side = 0; side < 2 && !end; side++) {
                if (!p[k + side].revents)
                    continue;
                int from = side ? sfd[i] : cfd[i], to = side ? cfd[i] : sfd[i];
                ssize_t r = read(from, buf, sizeof buf);
                end = r <= 0 || tu_write_all(to, buf, r) != 0;
            }
            if (end) {
                close(cfd[i]);
                close(sfd[i]);
                cfd[i] = cfd[n - 1];
                sfd[i] = sfd[n - 1];
                n--;
                break;   /* the poll set no longer matches: poll again */
            }
        }
    }
}

static void proxy_start(const char *base)
{
    const char *at = strchr(base, '@'), *colon, *slash;
    assert_non_null(at);
    colon = strchr(at, ':');
    slash = strchr(at, '/');
    assert_true(colon && slash && colon < slash);
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - at - 1), at + 1);
    struct sockaddr_in up = {0}, a = {0};
    up.sin_family = AF_INET;
    up.sin_port = htons((uint16_t)atoi(colon + 1));
    assert_int_equal(inet_pton(AF_INET, host, &up.sin_addr), 1);
    socklen_t alen = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), ctl[2], ack[2];
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 64), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    assert_int_equal(pipe(ctl), 0);
    assert_int_equal(pipe(ack), 0);
    px.port = ntohs(a.sin_port);
    px.pid = fork();
    assert_true(px.pid >= 0);
    if (px.pid == 0) {
        close(ctl[1]);
        close(ack[0]);
        proxy_main(lfd, up, ctl[0], ack[1]);
    }
    close(lfd);
    close(ctl[0]);
    close(ack[1]);
    px.ctl = ctl[1];
    px.ack = ack[0];
}

/* Tells the proxy c and waits for its answer: from then on it does so. */
static void proxy_say(char c)
{
    char a = 0;
    if (px.pid <= 0)
        return;
    if (write(px.ctl, &c, 1) != 1 || read(px.ack, &a, 1) != 1 || a != c)
        print_message("the proxy did not answer '%c'\n", c);
}

static void proxy_stop_forwarding(void) { proxy_say('s'); }
static void proxy_forward(void) { proxy_say('g'); }

static void proxy_end(void)
{
    if (px.pid <= 0)
        return;
    if (write(px.ctl, "q", 1) != 1)   /* it ends without answering */
        kill(px.pid, SIGKILL);
    waitpid(px.pid, NULL, 0);
    close(px.ctl);
    close(px.ack);
    px.pid = 0;
}

/* uri with the proxy in place of its host and port. */
static void proxied(char *buf, size_t size, const char *uri)
{
    const char *at = strchr(uri, '@'), *slash = at ? strchr(at, '/') : NULL;
    assert_non_null(slash);
    snprintf(buf, size, "%.*s127.0.0.1:%d%s", (int)(at + 1 - uri), uri, px.port, slash);
}

/* ---- the calls, in the child ---------------------------------------------- */

/* A fresh schema of the database of base; its URI in buf, without TLS
 * (fewer round trips to connect: a loaded machine connects within the
 * short deadline). */
static void fresh_schema(char *buf, size_t size, const char *base, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", name, name);
    PQclear(it_pg_run(base, sql));
    snprintf(buf, size, "%s%soptions=-csearch_path%%3D%s&sslmode=disable", base,
             strchr(base, '?') ? "&" : "?", name);
}

enum { H_KNOWN, H_ALLOW, H_NEW, H_PEEK, H_REFUND, H_RESERVE, H_BLOCK, H_LIST, H_GC, H_DOCTOR,
       H_CLOSE, H__COUNT };

/* Outside the stall, a round trip on a loaded machine may outlive the short
 * deadline now and then: what must succeed is tried up to TRIES times
 * (each a new round trip; a failed one leaves the handle to connect
 * again), so that what is tested is that it works, not how fast. */
#define TRIES 5

static rls_db *open_handle(const char *uri, int busy_ms)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.busy_timeout_ms = busy_ms;
    int rc = RLS_EIO;
    for (int i = 0; i < TRIES && rc != RLS_OK; i++)
        rc = rls_open(&db, uri, &o);
    REQUIRE(rc == RLS_OK, "rls_open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* A check that must be admitted. */
static void check_ok(rls_db *db, const char *action, const char *key, int64_t now)
{
    rls_result r;
    int rc = RLS_EIO;
    for (int i = 0; i < TRIES && rc == RLS_EIO; i++)
        rc = rls_check_at(db, action, key, 1, now, &r);
    REQUIRE(rc == RLS_OK && r.allowed && r.reason == RLS_REASON_OK,
            "check %s %s returned %s (%s), allowed %d", action, key, rls_errname(rc),
            rls_errmsg(db), r.allowed);
}

/* A check, peek or reservation that failed for want of an answer. */
static void require_policy(const char *what, int rc, rls_db *db, const rls_result *r,
                           int allowed)
{
    REQUIRE(rc == RLS_EIO, "%s returned %s (%s), not RLS_EIO", what, rls_errname(rc),
            rls_errmsg(db));
    REQUIRE(rls_errmsg(db)[0] != '\0', "%s: no message", what);
    REQUIRE(r->reason == RLS_REASON_DEGRADED, "%s: reason %d, not degraded", what, r->reason);
    REQUIRE(r->allowed == allowed, "%s: allowed %d under on_error %s", what, r->allowed,
            allowed ? "allow" : "deny");
}

static void require_eio(const char *what, int rc, rls_db *db)
{
    REQUIRE(rc == RLS_EIO, "%s returned %s (%s), not RLS_EIO", what, rls_errname(rc),
            rls_errmsg(db));
    REQUIRE(rls_errmsg(db)[0] != '\0', "%s: no message", what);
}

static void stalled_calls(rls_db **h, const char *uri)
{
    rls_result r;
    int64_t id = -1, now = T0 + 1000;
    rls_rows *rows = NULL;
    int rc;

    STEP("a check of a known key (one round trip), on_error deny");
    memset(&r, 0x5a, sizeof r);
    rc = rls_check_at(h[H_KNOWN], "api", "known", 1, now, &r);
    require_policy(sh->step, rc, h[H_KNOWN], &r, 0);
    STEP("a check of a known key, on_error allow");
    memset(&r, 0x5a, sizeof r);
    rc = rls_check_at(h[H_ALLOW], "open", "known", 1, now, &r);
    require_policy(sh->step, rc, h[H_ALLOW], &r, 1);
    STEP("a check of a new key (the usual transaction)");
    memset(&r, 0x5a, sizeof r);
    rc = rls_check_at(h[H_NEW], "api", "new-key", 1, now, &r);
    require_policy(sh->step, rc, h[H_NEW], &r, 0);
    STEP("a peek");
    memset(&r, 0x5a, sizeof r);
    rc = rls_peek_at(h[H_PEEK], "api", "known", 1, now, &r);
    require_policy(sh->step, rc, h[H_PEEK], &r, 0);
    STEP("a refund");
    rc = rls_refund_at(h[H_REFUND], "api", "known", 1, now);
    require_eio(sh->step, rc, h[H_REFUND]);
    STEP("a reservation");
    memset(&r, 0x5a, sizeof r);
    rc = rls_reserve_at(h[H_RESERVE], "api", "known", 1, 60000, now, &id, &r);
    require_policy(sh->step, rc, h[H_RESERVE], &r, 0);
    REQUIRE(id == 0, "a failed reservation has id %lld", (long long)id);
    STEP("a block (an admin change)");
    rc = rls_block_set_at(h[H_BLOCK], "api", "blocked", 0, "stall", now);
    require_eio(sh->step, rc, h[H_BLOCK]);
    STEP("a listing of blocks (an admin read)");
    rc = rls_block_list_at(h[H_LIST], now, &rows);
    require_eio(sh->step, rc, h[H_LIST]);
    REQUIRE(rows == NULL, "a failed listing gave rows");
    STEP("a GC step");
    rc = rls_gc_at(h[H_GC], 100, now, NULL);
    require_eio(sh->step, rc, h[H_GC]);
    STEP("rls_doctor");
    rc = rls_doctor(h[H_DOCTOR], 0, &rows);
    require_eio(sh->step, rc, h[H_DOCTOR]);
    REQUIRE(rows == NULL, "a failed doctor gave rows");
    STEP("rls_close (it writes its statistics first)");
    rls_close(h[H_CLOSE]);
    h[H_CLOSE] = NULL;
    STEP("a check on a handle whose connection was lost (it connects again)");
    memset(&r, 0x5a, sizeof r);
    rc = rls_check_at(h[H_KNOWN], "api", "known", 1, now + 1, &r);
    require_policy(sh->step, rc, h[H_KNOWN], &r, 0);
    STEP("rls_open");
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.busy_timeout_ms = BUSY_MS;
    rc = rls_open(&db, uri, &o);
    REQUIRE(rc == RLS_ECANTOPEN && db == NULL, "rls_open returned %s (%s), not RLS_ECANTOPEN",
            rls_errname(rc), rls_errmsg(NULL));
    REQUIRE(rls_errmsg(NULL)[0] != '\0', "rls_open: no message");
}

/* The child: handles connected and idle, the stall, every call, the end
 * of the stall, every handle working again. */
static void child(const staller *how, const char *uri)
{
    rls_db *h[H__COUNT];
    STEP("setup");
    for (int i = 0; i < H__COUNT; i++)
        h[i] = open_handle(uri, i == H_LIST || i == H_DOCTOR ? SLOW_BUSY_MS : BUSY_MS);
    int rc = RLS_EIO;
    for (int i = 0; i < TRIES && rc == RLS_EIO; i++)
        rc = rls_rules_apply_at(h[0], RULES, strlen(RULES), "stall.yaml", NULL, T0, NULL);
    REQUIRE(rc == RLS_OK, "apply: %s: %s", rls_errname(rc), rls_errmsg(h[0]));
    /* each handle knows the rules and the key: its next check of it is one
     * round trip */
    for (int i = 0; i < H__COUNT; i++)
        check_ok(h[i], i == H_ALLOW ? "open" : "api", "known", T0 + i);
    STEP("stalling");
    how->stop();
    stalled_calls(h, uri);
    STEP("ending the stall");
    how->go();
    for (int i = 0; i < H__COUNT; i++) {
        if (!h[i])
            continue;   /* closed while stalled */
        STEP("a check on handle %d after the stall", i);
        check_ok(h[i], i == H_ALLOW ? "open" : "api", "after", T0 + 5000);
        rls_close(h[i]);
    }
    STEP("rls_open after the stall");
    rls_close(open_handle(uri, BUSY_MS));
}

static pid_t watched;

static void on_alarm(int sig)
{
    (void)sig;
    if (watched > 0)
        kill(watched, SIGKILL);
}

/* Runs child() in a process of its own under the watchdog; ends the stall
 * whatever happened, then fails the test if the child did. */
static void run_watched(const staller *how, const char *uri)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    fflush(NULL);
    watched = fork();
    assert_true(watched >= 0);
    if (watched == 0) {
        child(how, uri);
        _exit(0);
    }
    signal(SIGALRM, on_alarm);
    alarm(WATCHDOG_S);
    int st = 0;
    while (waitpid(watched, &st, 0) < 0 && errno == EINTR)
        continue;
    alarm(0);
    watched = 0;
    how->go();   /* always: the child may have failed while stalled */
    char step[sizeof sh->step], why[sizeof sh->why];
    snprintf(step, sizeof step, "%s", sh->step);
    snprintf(why, sizeof why, "%s", sh->why);
    munmap(sh, sizeof *sh);
    sh = NULL;
    if (WIFSIGNALED(st))
        fail_msg("no answer within the watchdog's %d s (busy_timeout_ms %d): %s", WATCHDOG_S,
                 BUSY_MS, step);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s", why[0] ? why : step);
}

/* ---- the tests ------------------------------------------------------------- */

static const staller STOPPED = {server_stop_all, server_continue_all};
static const staller PROXY = {proxy_stop_forwarding, proxy_forward};

static void every_call_returns_while_the_server_is_stopped(void **state)
{
    (void)state;
    IT_PG_ONLY();
    char uri[4096];
    server_start();
    fresh_schema(uri, sizeof uri, srv_uri, "stall");
    run_watched(&STOPPED, uri);
}

static void every_call_returns_while_the_network_drops_everything(void **state)
{
    (void)state;
    IT_PG_ONLY();
    char direct[4096], uri[4200], name[64];
    snprintf(name, sizeof name, "stall_%d", (int)getpid());
    fresh_schema(direct, sizeof direct, it_pg(), name);
    proxy_start(it_pg());
    proxied(uri, sizeof uri, direct);
    run_watched(&PROXY, uri);
    char sql[128];
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", name);
    PQclear(it_pg_run(it_pg(), sql));
}

/* Whatever a test did, the server continues and the proxy ends. */
static int teardown(void **state)
{
    (void)state;
    server_end();
    proxy_end();
    return 0;
}

/* Killed (the suite runner's end): the server continues first, so that
 * its watchdog (server.sh --owner) can stop it. */
static void on_signal(int sig)
{
    server_continue_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(every_call_returns_while_the_server_is_stopped, teardown),
        cmocka_unit_test_teardown(every_call_returns_while_the_network_drops_everything,
                                  teardown),
    };
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
