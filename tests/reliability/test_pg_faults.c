/*
 * test_pg_faults.c - network faults under every call that writes, on the
 * PostgreSQL backend: the PostgreSQL counterpart of test_faults_calls.c.
 *
 * The handle under test reaches the server through a proxy in this process
 * (a thread per connection, relaying bytes both ways).  Armed with N, the
 * proxy cuts the connection at the N-th chunk the client sends, in one of
 * two ways:
 *   before  the chunk never reaches the server: the server sees the
 *           connection end and rolls back what was open;
 *   after   the chunk reaches the server, which runs it (a COMMIT in it
 *           commits), and the client never hears the answer.
 * For each call and each way, N goes 1, 2, ... until the call finishes
 * without sending an N-th chunk.  Every call must then have done its work
 * exactly once when it returned RLS_OK (a cut before COMMIT is retried on a
 * new connection), or, when it returned an error, not at all (cut before)
 * or at most once (cut after: the outcome of a COMMIT whose answer was lost
 * is unknown, and the library must not run it again); never twice.  A
 * check that failed must follow the failure policy (denied, reason
 * degraded).  After every call the same handle must work again (it
 * reconnects).  The calls: a check of a new key (the usual transaction), a
 * check of a key the handle knows (the one-round-trip check, pg_fast.c), a
 * check that imposes a penalty, a reservation, its commit and its cancel, a
 * refund, a rules apply, a block, a tier assignment and a reset.
 *
 * Runs when RLSTORE_TEST_PG names a live server (the PostgreSQL pass of
 * make test); on SQLite every test is skipped, and reported as skipped.
 * FAULTS_VERBOSE=1 prints, per call and way, how many cuts there were and
 * how many of them the call survived by running again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include "itest.h"

#define RULES                                                                 \
    "version: 1\n"                                                            \
    "tiers: { gold: {} }\n"                                                   \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits: [ { name: r, algorithm: fixed_window, limit: 1000, window: 1h } ]\n" \
    "  pen:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: r, algorithm: fixed_window, limit: 1, window: 1h, block_for: 1m }\n"

#define MAX_N 200   /* no call here sends that many chunks */

enum { CUT_BEFORE = 1, CUT_AFTER = 2 };

/* ---- the proxy ----------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int lfd, port;             /* the proxy's listening socket and port */
    struct sockaddr_in up;     /* the server */
    long countdown;            /* client chunks until the cut; 0: disarmed */
    int mode;
    int cut;                   /* a cut happened since the last arm */
    int draining;              /* cut connections still waiting on the server */
} px = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, 0, {0}, 0, 0, 0, 0};

/* After a cut "after": waits (at most 3 s) until the server has answered
 * what it was sent, so that it has run it, then ends its connection. */
static void drain(int s)
{
    struct pollfd p = {s, POLLIN, 0};
    char buf[4096];
    if (poll(&p, 1, 3000) > 0)
        (void)!read(s, buf, sizeof buf);
    close(s);
    pthread_mutex_lock(&px.mu);
    px.draining--;
    pthread_cond_broadcast(&px.idle);
    pthread_mutex_unlock(&px.mu);
}

static void *relay(void *arg)
{
    int c = (int)(intptr_t)arg;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    char buf[65536];
    if (s < 0 || connect(s, (struct sockaddr *)&px.up, sizeof px.up) != 0) {
        close(c);
        if (s >= 0)
            close(s);
        return NULL;
    }
    for (;;) {
        struct pollfd p[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents) {
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0)
                break;
            int act = 0;
            pthread_mutex_lock(&px.mu);
            if (px.countdown > 0 && --px.countdown == 0) {
                act = px.mode;
                px.cut = 1;
                px.draining += act == CUT_AFTER;
            }
            pthread_mutex_unlock(&px.mu);
            if (act == CUT_BEFORE)
                break;
            if (tu_write_all(s, buf, n) != 0)
                break;
            if (act == CUT_AFTER) {
                close(c);
                drain(s);
                return NULL;
            }
        }
        if (p[1].revents) {
            ssize_t n = read(s, buf, sizeof buf);
            if (n <= 0 || tu_write_all(c, buf, n) != 0)
                break;
        }
    }
    close(c);
    close(s);
    return NULL;
}

static void *acceptor(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(px.lfd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        pthread_t th;
        if (pthread_create(&th, NULL, relay, (void *)(intptr_t)c) != 0)
            close(c);
        else
            pthread_detach(th);
    }
}

/* Starts the proxy in front of the server of the test database's URI. */
static void proxy_start(void)
{
    const char *u = it_pg(), *at = strchr(u, '@'), *colon, *slash;
    assert_non_null(at);
    colon = strchr(at, ':');
    slash = strchr(at, '/');
    assert_true(colon && slash && colon < slash);
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - at - 1), at + 1);
    px.up.sin_family = AF_INET;
    px.up.sin_port = htons((uint16_t)atoi(colon + 1));
    assert_int_equal(inet_pton(AF_INET, host, &px.up.sin_addr), 1);

    struct sockaddr_in a = {0};
    socklen_t alen = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    px.lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(px.lfd >= 0);
    assert_int_equal(bind(px.lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(px.lfd, 16), 0);
    assert_int_equal(getsockname(px.lfd, (struct sockaddr *)&a, &alen), 0);
    px.port = ntohs(a.sin_port);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, acceptor, NULL), 0);
    pthread_detach(th);
}

/* The URI of `path` (a per-test URI) with the proxy as its server. */
static void proxied(char *buf, size_t size, const char *path)
{
    const char *at = strchr(path, '@'), *slash = at ? strchr(at, '/') : NULL;
    assert_non_null(slash);
    snprintf(buf, size, "%.*s127.0.0.1:%d%s", (int)(at + 1 - path), path, px.port, slash);
}

static void arm(long n, int mode)
{
    pthread_mutex_lock(&px.mu);
    px.countdown = n;
    px.mode = mode;
    px.cut = 0;
    pthread_mutex_unlock(&px.mu);
}

/* Disarms; 1 if the connection was cut.  Returns once every cut
 * connection's server side has run what it was sent. */
static int disarm(void)
{
    pthread_mutex_lock(&px.mu);
    int cut = px.cut;
    px.countdown = 0;
    while (px.draining > 0)
        pthread_cond_wait(&px.idle, &px.mu);
    pthread_mutex_unlock(&px.mu);
    return cut;
}

/* ---- the calls ----------------------------------------------------------- */

typedef struct fx {
    itest *t;          /* direct: the test's own handle and reads */
    rls_db *h;         /* through the proxy */
    char key[64];      /* this round's key */
    int64_t id;        /* a reservation of this round */
    int64_t before;    /* what the effect is measured from */
    int64_t now;
} fx;

/* A scalar from the test database about this round's key: `sql` has one
 * %s for it. */
static int64_t q_key(fx *f, const char *sql)
{
    char q[512];
    snprintf(q, sizeof q, sql, f->key);
    return it_sql_int(f->t->path, q);
}

static int64_t used(fx *f)
{
    return q_key(f, "SELECT coalesce(sum(b), 0) FROM rls_state WHERE key = '%s'::bytea");
}

static void must(fx *f, int rc)
{
    if (rc != RLS_OK)
        fail_msg("setup: %s: %s", rls_errname(rc), rls_errmsg(f->h));
}

static void no_setup(fx *f)
{
    (void)f;
}

static int check_call(fx *f, rls_result *r)
{
    return rls_check_at(f->h, strncmp(f->key, "pen", 3) ? "api" : "pen", f->key, 1, f->now, r);
}

static int64_t check_effect(fx *f)
{
    return used(f) - f->before;
}

/* The handle has checked the key: it knows its state (one round trip). */
static void known_setup(fx *f)
{
    snprintf(f->key, sizeof f->key, "known");
    rls_result r;
    must(f, rls_check_at(f->h, "api", f->key, 1, f->now - 1, &r));
    f->before = used(f);
}

static void penalty_setup(fx *f)
{
    rls_result r;
    must(f, rls_check_at(f->h, "pen", f->key, 1, f->now - 1, &r));   /* the one unit */
}

static int64_t penalty_effect(fx *f)
{
    return q_key(f, "SELECT count(*) FROM rls_blocks WHERE key = '%s'::bytea");
}

static int reserve_call(fx *f, rls_result *r)
{
    int64_t id = 0;
    return rls_reserve_at(f->h, "api", f->key, 1, 60000, f->now, &id, r);
}

static int64_t reserve_effect(fx *f)
{
    int64_t n = q_key(f, "SELECT count(*) FROM rls_reservations WHERE key = '%s'::bytea");
    assert_int_equal(used(f), n);   /* charged with it, or not at all */
    return n;
}

static void reserved_setup(fx *f)
{
    rls_result r;
    must(f, rls_reserve_at(f->h, "api", f->key, 1, 60000, f->now - 1, &f->id, &r));
    assert_true(r.allowed);
}

static int commit_call(fx *f, rls_result *r)
{
    (void)r;
    return rls_commit_at(f->h, f->id, f->now);
}

static int64_t resolved(fx *f)
{
    char q[128];
    snprintf(q, sizeof q, "SELECT count(*) FROM rls_reservations WHERE id = %lld",
             (long long)f->id);
    return 1 - it_sql_int(f->t->path, q);
}

static int64_t commit_effect(fx *f)
{
    assert_int_equal(used(f), 1);   /* a commit keeps the charge either way */
    return resolved(f);
}

static int cancel_call(fx *f, rls_result *r)
{
    (void)r;
    return rls_cancel_at(f->h, f->id, f->now);
}

static int64_t cancel_effect(fx *f)
{
    int64_t done = resolved(f);
    assert_int_equal(used(f), 1 - done);   /* refunded with it, or not at all */
    return done;
}

static void charged_setup(fx *f)
{
    rls_result r;
    must(f, rls_check_at(f->h, "api", f->key, 2, f->now - 1, &r));
}

static int refund_call(fx *f, rls_result *r)
{
    (void)r;
    return rls_refund_at(f->h, "api", f->key, 1, f->now);
}

static int64_t refund_effect(fx *f)
{
    return 2 - used(f);
}

static void versions_setup(fx *f)
{
    f->before = it_sql_int(f->t->path, "SELECT count(*) FROM rls_rulesets");
}

static int apply_call(fx *f, rls_result *r)
{
    (void)r;
    /* forced: the same rules store nothing otherwise (idempotent apply) */
    return rls_rules_apply_v2_at(f->h, RULES, strlen(RULES), "faults.yaml", NULL, RLS_APPLY_FORCE,
                                 f->now, NULL, NULL);
}

static int64_t apply_effect(fx *f)
{
    int64_t n = it_sql_int(f->t->path, "SELECT count(*) FROM rls_rulesets") - f->before;
    assert_int_equal(it_sql_int(f->t->path, "SELECT count(*) FROM rls_audit"
                                            " WHERE op = 'rules.apply'"), f->before + n);
    return n;
}

/* An audited change of this round's key: its row and its audit row, or
 * neither. */
static int64_t audited(fx *f, const char *rows_sql)
{
    int64_t n = q_key(f, rows_sql);
    assert_int_equal(q_key(f, "SELECT count(*) FROM rls_audit WHERE key = '%s'::bytea"), n);
    return n;
}

static int block_call(fx *f, rls_result *r)
{
    (void)r;
    return rls_block_set_at(f->h, "api", f->key, 0, "faults", f->now);
}

static int64_t block_effect(fx *f)
{
    return audited(f, "SELECT count(*) FROM rls_blocks WHERE key = '%s'::bytea");
}

static int tier_call(fx *f, rls_result *r)
{
    (void)r;
    return rls_tier_assign_at(f->h, "api", f->key, "gold", 0, f->now);
}

static int64_t tier_effect(fx *f)
{
    return audited(f, "SELECT count(*) FROM rls_assignments WHERE pattern = '%s'::bytea");
}

static void counted_setup(fx *f)
{
    rls_result r;
    must(f, rls_check_at(f->h, "api", f->key, 1, f->now - 1, &r));
}

static int reset_call(fx *f, rls_result *r)
{
    (void)r;
    return rls_reset_at(f->h, "api", f->key, f->now);
}

static int64_t reset_effect(fx *f)
{
    int64_t n = 1 - q_key(f, "SELECT count(*) FROM rls_state WHERE key = '%s'::bytea");
    assert_int_equal(q_key(f, "SELECT count(*) FROM rls_audit WHERE key = '%s'::bytea"), n);
    return n;
}

typedef struct fcase {
    const char *title;         /* the test's name */
    const char *name;          /* the prefix of its keys */
    void (*setup)(fx *f);      /* unarmed, before the call */
    int (*call)(fx *f, rls_result *r);
    int64_t (*effect)(fx *f);  /* times the call took effect */
    int is_check;
} fcase;

static const fcase CASES[] = {
    {"a_check_of_a_new_key", "new", no_setup, check_call, check_effect, 1},
    {"a_check_in_one_round_trip", "known", known_setup, check_call, check_effect, 1},
    {"a_check_imposing_a_penalty", "pen", penalty_setup, check_call, penalty_effect, 1},
    {"a_reservation", "reserve", no_setup, reserve_call, reserve_effect, 1},
    {"a_commit", "commit", reserved_setup, commit_call, commit_effect, 0},
    {"a_cancel", "cancel", reserved_setup, cancel_call, cancel_effect, 0},
    {"a_refund", "refund", charged_setup, refund_call, refund_effect, 0},
    {"a_rules_apply", "apply", versions_setup, apply_call, apply_effect, 0},
    {"a_block", "block", no_setup, block_call, block_effect, 0},
    {"a_tier_assignment", "tier", no_setup, tier_call, tier_effect, 0},
    {"a_reset", "reset", counted_setup, reset_call, reset_effect, 0},
};
#define NCASES (sizeof CASES / sizeof CASES[0])

/* Every N for one call and one way of cutting. */
static void fault_loop(const fcase *c, int mode)
{
    itest *t = it_new(RULES);
    char uri[4200];
    fx f = {t, NULL, "", 0, 0, T0 + 60000};
    int cuts = 0, survived = 0, unknown = 0, n;
    proxied(uri, sizeof uri, t->path);
    assert_int_equal(rls_open(&f.h, uri, NULL), RLS_OK);
    for (n = 1; n <= MAX_N; n++) {
        rls_result r;
        memset(&r, 0x5a, sizeof r);
        f.now += 10;
        snprintf(f.key, sizeof f.key, "%s-%d-%d", c->name, mode, n);
        f.before = 0;
        c->setup(&f);
        arm(n, mode);
        int rc = c->call(&f, &r);
        int cut = disarm();
        int64_t done = c->effect(&f);
        if (rc == RLS_OK && done != 1)
            fail_msg("%s, cut %s chunk %d: returned OK, took effect %lld times", c->name,
                     mode == CUT_BEFORE ? "before" : "after", n, (long long)done);
        if (rc != RLS_OK && (done < 0 || done > (mode == CUT_AFTER)))
            fail_msg("%s, cut %s chunk %d: failed (%s: %s), took effect %lld times", c->name,
                     mode == CUT_BEFORE ? "before" : "after", n, rls_errname(rc),
                     rls_errmsg(f.h), (long long)done);
        if (rc != RLS_OK) {
            assert_true(cut);   /* nothing else fails here */
            assert_true(rls_errmsg(f.h)[0] != '\0');
            if (c->is_check) {
                assert_int_equal(r.reason, RLS_REASON_DEGRADED);
                assert_false(r.allowed);   /* on_error: deny */
            }
            unknown += done;
        }
        cuts += cut;
        survived += cut && rc == RLS_OK;
        /* the same handle works again */
        rls_result p;
        if (rls_check_at(f.h, "api", "probe", 1, f.now, &p) != RLS_OK)
            fail_msg("%s, cut at chunk %d: the handle does not recover: %s", c->name, n,
                     rls_errmsg(f.h));
        if (!cut)
            break;   /* the call sent fewer than n chunks: every cut was tried */
    }
    assert_true(n <= MAX_N);
    assert_true(cuts >= 1);
    if (getenv("FAULTS_VERBOSE"))
        print_message("%-8s cut %-6s: %2d cuts, %2d survived by running again, "
                      "%d failed after taking effect\n", c->name,
                      mode == CUT_BEFORE ? "before" : "after", cuts, survived, unknown);
    rls_close(f.h);
    it_free(t);
}

static void every_call_survives_a_cut_connection(void **state)
{
    IT_PG_ONLY();
    if (px.lfd < 0)
        proxy_start();
    const fcase *c = *state;
    fault_loop(c, CUT_BEFORE);
    fault_loop(c, CUT_AFTER);
}

int main(void)
{
    struct CMUnitTest tests[NCASES];
    char names[NCASES][96];
    signal(SIGPIPE, SIG_IGN);   /* a write to a cut connection fails instead */
    for (size_t i = 0; i < NCASES; i++) {
        snprintf(names[i], sizeof names[i], "%s_survives_a_cut_connection", CASES[i].title);
        tests[i] = (struct CMUnitTest){names[i], every_call_survives_a_cut_connection, NULL,
                                       NULL, (void *)&CASES[i]};
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
