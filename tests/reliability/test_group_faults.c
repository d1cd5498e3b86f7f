/*
 * test_group_faults.c - group commit on a thread-safe handle
 * (storage/group.c) under faults of the file (faultvfs.c), SQLite only.
 *
 * A group is formed on purpose: another connection holds the write lock,
 * a first check on the handle waits for it holding the handle, and the
 * checks of other threads queue behind it (rls__group_waiting says when
 * they have); then the lock is released and they run as one transaction.
 *
 * Covered: a COMMIT that fails (the disk full from then on) fails every
 * member with that error, each answered by its own action's failure
 * policy, and charges nothing; the handle works again when the disk does.
 * Under `durability: full`, the group's members share one commit's fsync:
 * the group of six costs what one check costs, not six times it.
 */
#include <pthread.h>
#include "faultfx.h"
#include "faultvfs.c"    /* the suites are built from one source file each */

#define NOW (T0 + 3600000)
#define MEMBERS 6

static const char RULES[] =
    "version: 1\n"
    "actions:\n"
    "  strict: { limits: [ { name: s, algorithm: fixed_window, limit: 5, window: 1h } ] }\n"
    "  lenient:\n"
    "    on_error: allow\n"
    "    limits: [ { name: l, algorithm: token_bucket, limit: 5, window: 1h } ]\n";

struct one {
    rls_db *db;
    const char *action;
    char key[16];
    int rc;
    rls_result res;
};

static void *one_check(void *arg)
{
    struct one *o = arg;
    o->rc = rls_check_at(o->db, o->action, o->key, 1, NOW, &o->res);
    return NULL;
}

struct setup {
    char *dir;
    char path[4096];
    rls_db *db;
    sqlite3 *lock;            /* holds the write lock ("unix": no fault) */
    struct one lead, m[MEMBERS];
    pthread_t lt, th[MEMBERS];
};

static void ts_open(struct setup *s, int durability)
{
    rls_options o;
    s->dir = tu_mkdtemp();
    tu_path(s->path, sizeof s->path, s->dir, "rl.db");
    rls_options_init(&o);
    o.thread_safe = 1;
    o.busy_timeout_ms = 60000;
    o.durability = durability;
    assert_int_equal(rls_open(&s->db, s->path, &o), RLS_OK);
    assert_int_equal(rls_rules_apply_at(s->db, RULES, strlen(RULES), "t.yaml", NULL, T0, NULL),
                     RLS_OK);
}

/* A leader waiting for the lock, MEMBERS checks queued behind it. */
static void form_group(struct setup *s)
{
    s->lock = plain_open(s->path);
    exec_on(s->lock, "BEGIN IMMEDIATE");
    s->lead = (struct one){s->db, "strict", "lead", 0, {0}};
    assert_int_equal(pthread_create(&s->lt, NULL, one_check, &s->lead), 0);
    while (rls__group_waiting(s->db) != 0 || !rls__group_leading(s->db))
        sched_yield();
    for (int i = 0; i < MEMBERS; i++) {
        s->m[i] = (struct one){s->db, i % 2 ? "lenient" : "strict", "", 0, {0}};
        snprintf(s->m[i].key, sizeof s->m[i].key, "m%d", i);
        assert_int_equal(pthread_create(&s->th[i], NULL, one_check, &s->m[i]), 0);
    }
    while (rls__group_waiting(s->db) != MEMBERS)
        sched_yield();
}

static void run_group(struct setup *s)
{
    exec_on(s->lock, "ROLLBACK");
    sqlite3_close(s->lock);
    pthread_join(s->lt, NULL);
    for (int i = 0; i < MEMBERS; i++)
        pthread_join(s->th[i], NULL);
}

static void close_setup(struct setup *s)
{
    rls_close(s->db);
    tu_rmdir(s->dir);
}

static int64_t left(rls_db *db, const char *action, const char *key)
{
    rls_result r;
    assert_int_equal(rls_peek_at(db, action, key, 1, NOW, &r), RLS_OK);
    return r.remaining;
}

static void failed_commit_fails_every_member(void **state)
{
    struct setup s;
    memset(&s, 0, sizeof s);
    ts_open(&s, RLS_DURABILITY_NORMAL);
    /* the disk is full from now on: armed before the threads start (the
     * shim is not for threads to change under), and nothing the handle
     * does writes until the other connection lets go of the lock */
    fv_arm(FV_WRITE, 1, SQLITE_FULL, 1);
    form_group(&s);
    run_group(&s);
    fv_disarm();
    assert_int_equal(s.lead.rc, RLS_EFULL);
    for (int i = 0; i < MEMBERS; i++) {
        if (s.m[i].rc != RLS_EFULL)
            fail_msg("member %d: %s", i, rls_errname(s.m[i].rc));
        assert_int_equal(s.m[i].res.reason, RLS_REASON_DEGRADED);
        assert_int_equal(s.m[i].res.allowed, i % 2);   /* its own action's policy */
    }
    for (int i = 0; i < MEMBERS; i++)   /* nothing charged */
        assert_int_equal(left(s.db, s.m[i].action, s.m[i].key), 5);
    assert_int_equal(left(s.db, "strict", "lead"), 5);
    rls_result r;
    assert_int_equal(rls_check_at(s.db, "strict", "m0", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
    assert_int_equal(left(s.db, "strict", "m0"), 4);
    close_setup(&s);
}

static void group_shares_one_fsync(void **state)
{
    struct setup s;
    rls_result r;
    memset(&s, 0, sizeof s);
    ts_open(&s, RLS_DURABILITY_FULL);
    assert_int_equal(rls_check_at(s.db, "strict", "warm", 1, NOW, &r), RLS_OK);
    fv_arm(FV_SYNC, 1L << 40, SQLITE_IOERR, 0);   /* counts, never fails */
    assert_int_equal(rls_check_at(s.db, "strict", "one", 1, NOW, &r), RLS_OK);
    long one = fv_seen(FV_SYNC);
    assert_true(one >= 1);
    fv_arm(FV_SYNC, 1L << 40, SQLITE_IOERR, 0);   /* before the threads start */
    form_group(&s);
    run_group(&s);
    long group = fv_seen(FV_SYNC);
    fv_disarm();
    assert_int_equal(s.lead.rc, RLS_OK);
    for (int i = 0; i < MEMBERS; i++) {
        assert_int_equal(s.m[i].rc, RLS_OK);
        assert_int_equal(s.m[i].res.allowed, 1);
        assert_int_equal(left(s.db, s.m[i].action, s.m[i].key), 4);
    }
    /* the leader's own commit and the group's: two commits, not seven */
    if (group > 2 * one)
        fail_msg("%ld fsyncs for a leader and a group of %d; one check takes %ld", group,
                 MEMBERS, one);
    close_setup(&s);
}

int main(void)
{
    if (fv_install() != SQLITE_OK) {
        fprintf(stderr, "cannot install the fault VFS\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failed_commit_fails_every_member),
        cmocka_unit_test(group_shares_one_fsync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
