/*
 * test_memcap.c - the shared-memory table locks at most RLS__SHM_TXN_MAX
 * (16) memory-class entries in one transaction (storage/shm/shmtable.h):
 * what a caller sees of that bound (issue #19, items 1-3).
 *
 *   - A group commit (thread-safe handle) whose members hold more memory
 *     limits in all than one transaction may lock is committed in as many
 *     transactions as it needs: every member is decided and admitted as
 *     if alone, none fails for its neighbours' limits.
 *   - A batch (rls_check_many) is one transaction: one whose items hold
 *     more than 16 memory limits is refused with RLS_EINVAL naming the
 *     bound, nothing charged; 16 are admitted.
 *
 * SQLite (a group is formed by holding the write lock from another
 * connection while the members queue).
 */
#include <pthread.h>
#include <sqlite3.h>
#include "itest.h"
#include "group.h"

#define NOW (T0 + 3600000)
#define MEMBERS 24

static const char RULES[] =
    "version: 1\n"
    "actions:\n"
    "  mx:\n"
    "    limits:\n"
    "      - { name: m, algorithm: fixed_window, limit: 5, window: 1h, durability: memory }\n"
    "      - { name: d, algorithm: fixed_window, limit: 5, window: 1h }\n"
    "  m: { limits: [ { name: m, algorithm: gcra, limit: 5, window: 1h, durability: memory } ] }\n";

struct one {
    rls_db *db;
    char key[16];
    int rc;
    rls_result res;
};

static void *one_check(void *arg)
{
    struct one *o = arg;
    o->rc = rls_check_at(o->db, "mx", o->key, 1, NOW, &o->res);
    return NULL;
}

static rls_db *open_ts(const itest *t)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.thread_safe = 1;
    o.busy_timeout_ms = 60000;
    o.shm_dir = t->dir;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    return db;
}

static void a_group_over_the_table_bound_commits_in_parts(void **state)
{
    (void)state;
    if (it_pg())
        skip();
    itest *t = it_new(RULES);
    rls_db *db = open_ts(t);
    struct one lead = {db, "lead", 0, {0}}, m[MEMBERS];
    pthread_t lt, th[MEMBERS];
    sqlite3 *lock = NULL;
    assert_int_equal(sqlite3_open(t->path, &lock), SQLITE_OK);
    assert_int_equal(sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(pthread_create(&lt, NULL, one_check, &lead), 0);
    while (rls__group_waiting(db) != 0 || !rls__group_leading(db))
        sched_yield();
    for (int i = 0; i < MEMBERS; i++) {
        m[i] = (struct one){db, "", 0, {0}};
        snprintf(m[i].key, sizeof m[i].key, "k%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, one_check, &m[i]), 0);
    }
    while (rls__group_waiting(db) != MEMBERS)
        sched_yield();
    assert_int_equal(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(lock);
    pthread_join(lt, NULL);
    for (int i = 0; i < MEMBERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(lead.rc, RLS_OK);
    for (int i = 0; i < MEMBERS; i++) {
        if (m[i].rc != RLS_OK || !m[i].res.allowed)
            fail_msg("member %d: %s, allowed %d: %s", i, rls_errname(m[i].rc),
                     m[i].res.allowed, rls_errmsg(db));
        rls_result r;   /* charged once on each limit */
        assert_int_equal(rls_peek_at(db, "mx", m[i].key, 1, NOW, &r), RLS_OK);
        assert_int_equal(r.remaining, 4);
    }
    rls_close(db);
    it_free(t);
}

static int batch_of(itest *t, rls_db *db, int n, const char *prefix)
{
    rls_item it[RLS_BATCH_MAX] = {{0}};
    rls_result r[RLS_BATCH_MAX];
    char keys[RLS_BATCH_MAX][16];
    (void)t;
    for (int i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "%s%d", prefix, i);
        it[i] = (rls_item){"m", keys[i], 1};
    }
    int rc = rls_check_many_at(db, it, (size_t)n, NOW, r);
    for (int i = 0; rc == RLS_OK && i < n; i++)
        assert_int_equal(r[i].allowed, 1);
    return rc;
}

static void a_batch_over_the_table_bound_is_refused(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    assert_int_equal(batch_of(t, db, 16, "a"), RLS_OK);
    assert_int_equal(batch_of(t, db, 17, "b"), RLS_EINVAL);
    assert_non_null(strstr(rls_errmsg(db), "16"));
    rls_result r;   /* nothing of the refused batch charged */
    assert_int_equal(rls_peek_at(db, "m", "b0", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.remaining, 5);
    assert_int_equal(rls_peek_at(db, "m", "a0", 1, NOW, &r), RLS_OK);
    assert_int_equal(r.remaining, 4);
    rls_close(db);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_group_over_the_table_bound_commits_in_parts),
        cmocka_unit_test(a_batch_over_the_table_bound_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
