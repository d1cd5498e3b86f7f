/*
 * test_shm_lane_log.c - the memory lane's one-call lock and read
 * (storage/memlane.c charge_one, storage/shm rls__shm_lock_read1) against
 * the general memory pipeline and the durable class (issue #19, round 8's
 * attack): one sequence of checks (clock steps of 0..40 ms, one in 20 of
 * 0..1500 ms, so that logs fill and drain; costs 1, 2,
 * 15, 16, 17 and RLS_COST_MAX, a peek now and then) on a sliding_log
 * limit at the memory table's log capacity (16 entries) and on a
 * fixed_window limit, answered three ways: memory-class with the lane,
 * memory-class with the lane off (memclass.c's transaction), durable.
 * Every answer (allowed, remaining, retry_after_ms) must agree, every
 * call succeed, and after every call no bucket of the (small) table is
 * locked: a refusal of rls__shm_lock_read1 at the log's capacity that
 * left its lock held would otherwise show only as the next check of the
 * key waiting for itself forever.
 *
 * Knobs: RLS_LANE_CHECKS (per key, default 3000), RLS_LANE_SEED.
 */
#include <dirent.h>
#include "reltest.h"
#include "shm/shmtable.h"
#include "shm/shm_int.h"

extern int rls__memlane_enabled;   /* storage/memlane.c: tests turn it off */

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  ml:\n"
    "    limits: [ { name: a, algorithm: sliding_log, limit: 16, window: 1s,"
    " durability: memory } ]\n"
    "  dl:\n"
    "    limits: [ { name: b, algorithm: sliding_log, limit: 16, window: 1s } ]\n"
    "  mf:\n"
    "    limits: [ { name: c, algorithm: fixed_window, limit: 16, window: 1s,"
    " durability: memory } ]\n"
    "  df:\n"
    "    limits: [ { name: d, algorithm: fixed_window, limit: 16, window: 1s } ]\n";

static rls__shm *tbl;   /* the handle's table, opened again to look at its locks */

/* The table file in dir (the handle made it at its first memory check). */
static rls__shm *table_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4600];
    rls__shm *t = NULL;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "rlstore-", 8) == 0 && strstr(e->d_name, ".shm")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            assert_int_equal(rls__shm_open(&t, p, NULL, NULL, 0), RLS_OK);
        }
    closedir(d);
    assert_non_null(t);
    return t;
}

/* No bucket of tbl is locked (tried, never waited for: a lock this
 * thread left held answers EBUSY too). */
static int locks_free(void)
{
    for (uint32_t b = 0; b < tbl->nbuckets; b++) {
        pthread_mutex_t *mu = &shm_bucket_at(tbl, b)->mu;
        if (pthread_mutex_trylock(mu) != 0)
            return 0;
        pthread_mutex_unlock(mu);
    }
    return 1;
}

static int knob(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : dflt;
}

struct answer {
    int rc, allowed;
    int64_t remaining, retry;
};

static struct answer ask(rls_db *db, const char *action, const char *key, int64_t cost,
                         int64_t now, int peek)
{
    rls_result r;
    struct answer a;
    memset(&r, 0, sizeof r);
    a.rc = peek ? rls_peek_at(db, action, key, cost, now, &r)
                : rls_check_at(db, action, key, cost, now, &r);
    a.allowed = r.allowed;
    a.remaining = r.remaining;
    a.retry = r.retry_after_ms;
    return a;
}

/* One sequence on key, memory action mem (lane on and off: keys of their
 * own) against durable action dur. */
static void one_sequence(rls_db *db, const char *dir, const char *mem, const char *dur,
                         unsigned seed, int n, int *admits)
{
    static const int64_t costs[6] = { 1, 2, 15, 16, 17, RLS_COST_MAX };
    uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
    int64_t now = T0 + 7200000;
    for (int i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        now += (x >> 48) % 20 ? (int64_t)(x % 41) : (int64_t)(x % 1501);   /* dense: full logs */
        int r = (int)((x >> 16) % 100);
        int64_t cost = r < 70 ? 1 : costs[(x >> 24) % 6];
        int peek = (x >> 40) % 10 == 0;
        struct answer a[3];
        rls__memlane_enabled = 1;
        a[0] = ask(db, mem, "lane", cost, now, peek);
        if (!tbl)
            tbl = table_in(dir);
        if (!locks_free())
            fail_msg("%s check %d (cost %lld%s): a lock left held by the lane", mem, i,
                     (long long)cost, peek ? ", peek" : "");
        rls__memlane_enabled = 0;
        a[1] = ask(db, mem, "pipe", cost, now, peek);
        if (!locks_free())
            fail_msg("%s check %d: a lock left held by the pipeline", mem, i);
        rls__memlane_enabled = 1;
        a[2] = ask(db, dur, "dur", cost, now, peek);
        for (int k = 0; k < 3; k++)
            if (a[k].rc != RLS_OK)
                fail_msg("%s check %d (cost %lld): way %d: %s: %s", mem, i, (long long)cost, k,
                         rls_errname(a[k].rc), rls_errmsg(db));
        for (int k = 0; k < 2; k++)
            if (a[k].allowed != a[2].allowed || a[k].remaining != a[2].remaining ||
                a[k].retry != a[2].retry)
                fail_msg("%s check %d at +%lld (cost %lld%s): %s says allowed %d remaining %lld "
                         "retry %lld, durable %d %lld %lld",
                         mem, i, (long long)(now - T0), (long long)cost, peek ? ", peek" : "",
                         k ? "the pipeline" : "the lane", a[k].allowed, (long long)a[k].remaining,
                         (long long)a[k].retry, a[2].allowed, (long long)a[2].remaining,
                         (long long)a[2].retry);
        *admits += a[2].allowed && !peek;
    }
}

static void lane_pipeline_and_durable_agree_at_the_log_capacity(void **state)
{
    (void)state;
    itest *t = it_new(RULES);
    rls_close(t->db);
    rls_options o;
    rls_options_init(&o);
    o.shm_dir = t->dir;
    o.shm_slots = 64;   /* 4 buckets: every lock looked at after each call */
    assert_int_equal(rls_open(&t->db, t->path, &o), RLS_OK);
    int n = knob("RLS_LANE_CHECKS", 3000), admits[2] = { 0, 0 };
    unsigned seed = (unsigned)knob("RLS_LANE_SEED", 8);
    one_sequence(t->db, t->dir, "ml", "dl", seed, n, &admits[0]);
    one_sequence(t->db, t->dir, "mf", "df", seed + 1, n, &admits[1]);
    print_message("    %d checks a key, seed %u: sliding_log admitted %d, fixed_window %d\n", n,
                  seed, admits[0], admits[1]);
    assert_true(admits[0] > 0 && admits[1] > 0);
    rls__memlane_enabled = 1;
    rls__shm_close(tbl);
    tbl = NULL;
    it_free(t);
}

int main(int argc, char **argv)
{
    (void)argc;
    rel_init(argv[0]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lane_pipeline_and_durable_agree_at_the_log_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
