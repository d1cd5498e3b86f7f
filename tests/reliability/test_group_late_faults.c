/*
 * test_group_late_faults.c - the late members of a group commit
 * (storage/group_tx.c, late_join) when the group's COMMIT fails, SQLite
 * only (the fault VFS, faultvfs.c).
 *
 * Under `durability: full` checks that queue while a group's transaction
 * runs join it before its COMMIT.  A COMMIT that fails must fail them as
 * it fails the members before them: each with the error, answered by its
 * own action's failure policy, nothing charged (a memory-class limit's
 * charge given back: memclass.c, rls__mem_undo), and no member reported
 * admitted.  The group is formed as in test_group_faults.c (another
 * connection holds the write lock while the checks queue); the late
 * members (three checks and a reservation) are started by the leader's
 * hook inside the group's transaction (rls__group_late_hook), which then
 * arms the fault, so the first write after it, the COMMIT's, fails once.
 */
#include <pthread.h>
#include "faultfx.h"
#include "faultvfs.c"    /* the suites are built from one source file each */
#include "group.h"       /* rls__group_late_hook, rls__group_led */

#define NOW (T0 + 3600000)
#define MEMBERS 4
#define LATE 4

static const char RULES[] =
    "version: 1\n"
    "actions:\n"
    "  strict: { limits: [ { name: s, algorithm: fixed_window, limit: 5, window: 1h } ] }\n"
    "  lenient:\n"
    "    on_error: allow\n"
    "    limits: [ { name: l, algorithm: token_bucket, limit: 5, window: 1h } ]\n"
    "  mixed:\n"
    "    on_error: allow\n"
    "    limits:\n"
    "      - { name: mem, algorithm: fixed_window, limit: 5, window: 1h, durability: memory }\n"
    "      - { name: dur, algorithm: fixed_window, limit: 50, window: 1d }\n";

static const char *const ACTION_OF[4] = {"strict", "lenient", "mixed", "strict"};
static const int ALLOWS[4] = {0, 1, 1, 0};   /* each action's failure policy */

struct one {
    rls_db *db;
    const char *action;
    char key[16];
    int rc;
    rls_result res;
    int reserve;     /* a reservation (its id in id), not a check */
    int64_t id;
};

static void *one_check(void *arg)
{
    struct one *o = arg;
    if (o->reserve) {
        o->id = -1;
        o->rc = rls_reserve_at(o->db, o->action, o->key, 1, 60000, NOW, &o->id, &o->res);
    } else {
        o->rc = rls_check_at(o->db, o->action, o->key, 1, NOW, &o->res);
    }
    return NULL;
}

static struct {
    struct one o[LATE];
    pthread_t th[LATE];
    int fired, kind, fault;   /* fault: the fault to arm on kind (0: none) */
} late;

static void wait_queued(rls_db *db, size_t n)
{
    while (rls__group_waiting(db) != n)
        sched_yield();
}

/* In the group's transaction (the leader's thread, which alone does the
 * handle's I/O): LATE checks queue, then the next write fails. */
static void late_hook(rls_db *db)
{
    if (late.fired++)
        return;
    for (int i = 0; i < LATE; i++) {
        assert_int_equal(pthread_create(&late.th[i], NULL, one_check, &late.o[i]), 0);
        wait_queued(db, (size_t)i + 1);
    }
    if (late.fault)
        fv_arm(late.kind, 1, late.fault, 0);
}

static int64_t left(rls_db *db, const char *action, const char *key)
{
    rls_result r;
    assert_int_equal(rls_peek_at(db, action, key, 1, NOW, &r), RLS_OK);
    return r.remaining;
}

/* One round: a leader alone, MEMBERS queued behind it, LATE joining their
 * transaction; fault armed by the hook (0: none).  Returns the groups led. */
static uint64_t round_with(rls_db *db, const char *path, int kind, int fault,
                           struct one *lead, struct one *m)
{
    uint64_t g0 = rls__group_led(db);
    sqlite3 *lk = plain_open(path);
    pthread_t lt, th[MEMBERS];
    exec_on(lk, "BEGIN IMMEDIATE");
    *lead = (struct one){db, "strict", "lead", 0, {0}, 0, 0};
    assert_int_equal(pthread_create(&lt, NULL, one_check, lead), 0);
    while (rls__group_waiting(db) != 0 || !rls__group_leading(db))
        sched_yield();
    for (int i = 0; i < MEMBERS; i++) {
        m[i] = (struct one){db, ACTION_OF[i % 4], "", 0, {0}, 0, 0};
        snprintf(m[i].key, sizeof m[i].key, "m%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, one_check, &m[i]), 0);
        wait_queued(db, (size_t)i + 1);
    }
    memset(&late, 0, sizeof late);
    late.kind = kind;
    late.fault = fault;
    for (int i = 0; i < LATE; i++) {
        /* the last a reservation */
        late.o[i] = (struct one){db, ACTION_OF[i % 4], "", 0, {0}, i == LATE - 1, 0};
        snprintf(late.o[i].key, sizeof late.o[i].key, "late%d", i);
    }
    rls__group_late_hook = late_hook;
    exec_on(lk, "ROLLBACK");
    sqlite3_close(lk);
    pthread_join(lt, NULL);
    for (int i = 0; i < MEMBERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(late.fired >= 1, 1);
    for (int i = 0; i < LATE; i++)
        pthread_join(late.th[i], NULL);
    rls__group_late_hook = NULL;
    fv_disarm();
    return rls__group_led(db) - g0;
}

static rls_db *open_full(const char *dir, const char *path)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.thread_safe = 1;
    o.busy_timeout_ms = 60000;
    o.durability = RLS_DURABILITY_FULL;
    o.shm_dir = dir;
    o.shm_slots = 1024;
    assert_int_equal(rls_open(&db, path, &o), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "t.yaml", NULL, T0, NULL),
                     RLS_OK);
    rls_result r;
    for (int i = 0; i < 4; i++)   /* the rules and the memory table loaded */
        assert_int_equal(rls_check_at(db, ACTION_OF[i], "warm", 1, NOW, &r), RLS_OK);
    return db;
}

/* Every member of the failed group, late ones included, fails with the
 * COMMIT's error under its own action's policy; nothing is charged: the
 * disk full at the COMMIT's first write, or its fsync failing. */
static void failed_commit_fails_late_members(void **state)
{
    static const struct { int kind, err, want; } faults[] = {
        {FV_WRITE, SQLITE_FULL, RLS_EFULL},
        {FV_SYNC, SQLITE_IOERR_FSYNC, RLS_EIO},
    };
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        char *dir = tu_mkdtemp(), path[4096];
        tu_path(path, sizeof path, dir, "rl.db");
        rls_db *db = open_full(dir, path);
        struct one lead, m[MEMBERS];
        /* the leader alone, then the group with its late members: two */
        assert_int_equal(round_with(db, path, faults[f].kind, faults[f].err, &lead, m), 2);
        assert_int_equal(lead.rc, RLS_OK);
        assert_int_equal(lead.res.allowed, 1);
        for (int i = 0; i < MEMBERS + LATE; i++) {
            struct one *o = i < MEMBERS ? &m[i] : &late.o[i - MEMBERS];
            if (o->rc != faults[f].want)
                fail_msg("%s %s %s: %s, want %s", fv_kind_name(faults[f].kind), o->action,
                         o->key, rls_errname(o->rc), rls_errname(faults[f].want));
            assert_int_equal(o->res.reason, RLS_REASON_DEGRADED);
            assert_int_equal(o->res.allowed, ALLOWS[i % 4]);
            if (o->reserve)
                assert_int_equal(o->id, 0);   /* no reservation */
        }
        for (int i = 0; i < MEMBERS + LATE; i++) {   /* nothing charged, memory too */
            struct one *o = i < MEMBERS ? &m[i] : &late.o[i - MEMBERS];
            if (left(db, o->action, o->key) != 5)
                fail_msg("%s: %s %s charged by a failed commit", fv_kind_name(faults[f].kind),
                         o->action, o->key);
        }
        /* the handle works again: the same checks, each charged once */
        rls_result r;
        for (int i = 0; i < LATE; i++) {
            assert_int_equal(rls_check_at(db, late.o[i].action, late.o[i].key, 1, NOW, &r),
                             RLS_OK);
            assert_int_equal(r.allowed, 1);
            assert_int_equal(r.remaining, 4);
        }
        rls_close(db);
        tu_rmdir(dir);
    }
}

/* The same round without a fault: the late members are charged, after
 * the members before them, durably: a plain connection reads their
 * states once the calls have returned. */
static void late_members_commit_durably(void **state)
{
    char *dir = tu_mkdtemp(), path[4096];
    tu_path(path, sizeof path, dir, "rl.db");
    rls_db *db = open_full(dir, path);
    struct one lead, m[MEMBERS];
    assert_int_equal(round_with(db, path, FV_WRITE, 0, &lead, m), 2);
    for (int i = 0; i < MEMBERS + LATE; i++) {
        struct one *o = i < MEMBERS ? &m[i] : &late.o[i - MEMBERS];
        assert_int_equal(o->rc, RLS_OK);
        assert_int_equal(o->res.allowed, 1);
        assert_int_equal(o->res.remaining, 4);
        if (o->reserve) {
            assert_true(o->id > 0);
            assert_int_equal(rls_commit_at(db, o->id, NOW), RLS_OK);
        }
    }
    sqlite3 *c = plain_open(path);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(c, "SELECT count(DISTINCT key) FROM rls_state WHERE "
                                        "CAST(key AS TEXT) LIKE 'late%' OR CAST(key AS TEXT) "
                                        "LIKE 'm%'", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    /* "mixed" keeps its durable limit in the file, its memory one apart */
    assert_int_equal(sqlite3_column_int(st, 0), MEMBERS + LATE);
    sqlite3_finalize(st);
    sqlite3_close(c);
    rls_close(db);
    tu_rmdir(dir);
}

int main(void)
{
    if (fv_install() != SQLITE_OK) {
        fprintf(stderr, "cannot install the fault VFS\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failed_commit_fails_late_members),
        cmocka_unit_test(late_members_commit_durably),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
