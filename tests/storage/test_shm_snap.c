/*
 * test_shm_snap.c - the shared-memory table's lock-free read (rls__shm_snap,
 * storage/shm/shmtable.c) of what format 2 keeps apart from the hot
 * record: keys longer than its 16 bytes, told apart only by bytes in the
 * cold record, and sliding logs (cold too), while two other processes
 * rewrite them (yielding halfway through every copy) and reuse their
 * slots for items of other limits.  test_shm_procs.c has the short keys'
 * case.  Processes wait for each other through pipes and waitpid.
 *
 * Knob: RLS_SHM_SNAP_OPS (updates per writer, default 20000).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "rlstore.h"
#include "shm/shmtable.h"

#define SHMTEST_NAME "shmsnap"
#include "shmtest.h"

/* Writers yield halfway through each copy, the reader between reading the
 * publish counter and copying the state. */
static void yield_hook(int point, size_t it)
{
    (void)it;
    if (point == RLS__SHM_AT_HALF || point == RLS__SHM_AT_SNAP)
        sched_yield();
}

static int64_t key_hash(const char *k)
{
    uint64_t h = 7;   /* unsigned: a long key's hash wraps */
    for (; *k; k++)
        h = h * 31 + (unsigned char)*k;
    return (int64_t)(h >> 1);
}

/* Ties a state to its limit and key. */
static int64_t item_id(const rls__shm_item *it)
{
    return key_hash(it->key) ^ (it->lid << 40);
}

/* Keys of 26..28 bytes sharing their first 20: the hot record holds 16,
 * so what tells them apart is only in the cold record, and so is every
 * sliding log; slots reused all the time by items of two limits. */
static const rls__shm_geom G_LONG = { 128, 48, 4 };
#define LONG_PREFIX "a prefix of twenty: "

static rls__shm_item long_item(int64_t lid, const char *key)
{
    rls__shm_item it = { lid, ALGO_SLIDING_LOG, key, strlen(key) };
    return it;
}

/* The state holding n of a long item: every field tied to n and the item, and
 * a log of 1 + n % 4 entries, every byte tied to the item, n and its place. */
static unsigned char log_byte(const rls__shm_item *it, int64_t n, size_t at)
{
    return (unsigned char)((uint64_t)(item_id(it) ^ (int64_t)((uint64_t)n * 131) ^ (int64_t)(at * 7)) % 251);
}

/* Keepers (limit 1) live on; churn items expire at once (their slots go
 * to the next new item). */
static int64_t long_expires(const rls__shm_item *it)
{
    return it->lid == 1 ? (int64_t)1 << 60 : 1;
}

static algo_state long_state(const rls__shm_item *it, int64_t n, unsigned char *log)
{
    algo_state s;
    memset(&s, 0, sizeof s);
    s.present = 1;
    s.a = n;
    s.b = 2 * n;
    s.c = item_id(it) ^ n;
    s.last_ms = n;
    s.expires_ms = long_expires(it);
    s.log = log;
    s.log_len = (size_t)(1 + n % 4) * ALGO_LOG_ENTRY;
    s.log_cap = s.log_len;
    for (size_t i = 0; i < s.log_len; i++)
        log[i] = log_byte(it, n, i);
    return s;
}

static int long_whole(const rls__shm_item *it, const algo_state *s)
{
    if (s->b != 2 * s->a || s->c != (item_id(it) ^ s->a) || s->last_ms != s->a ||
        s->expires_ms != long_expires(it) || s->log_len != (size_t)(1 + s->a % 4) * ALGO_LOG_ENTRY)
        return 0;
    for (size_t i = 0; i < s->log_len; i++)
        if (s->log[i] != log_byte(it, s->a, i))
            return 0;
    return 1;
}

static int long_bump(rls__shm *t, const rls__shm_item *it)
{
    unsigned char rl[4 * ALGO_LOG_ENTRY], wl[4 * ALGO_LOG_ENTRY];
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    s.log = rl;
    s.log_cap = sizeof rl;
    int rc = rls__shm_lock(t, it, 1, 10, &tx);
    if (rc == RLS_OK)
        rc = rls__shm_read(&tx, 0, &s);
    if (rc == RLS_OK && s.present && !long_whole(it, &s))
        rc = RLS_ECORRUPT;   /* under the lock: never torn */
    algo_state w = long_state(it, s.present ? s.a + 1 : 1, wl);
    if (rc == RLS_OK)
        rc = rls__shm_write(&tx, 0, &w);
    rls__shm_unlock(&tx);
    return rc;
}

static void long_writer(const char *p, int id, int ops, int go)
{
    rls__shm *t = NULL;
    char key[64], c;
    if (rls__shm_open(&t, p, &G_LONG, NULL, 0) != RLS_OK)
        _exit(2);
    if (read(go, &c, 1) != 0)
        _exit(5);
    rls__shm_hook = yield_hook;
    rls__shm_item ka = long_item(1, LONG_PREFIX "keeper-A"), kb = long_item(1, LONG_PREFIX "keeper-B");
    for (int j = 0; j < ops; j++) {
        snprintf(key, sizeof key, LONG_PREFIX "c%d-%d", id, j % 60);
        rls__shm_item ch = long_item(2 + j % 2, key);
        if (long_bump(t, &ka) != RLS_OK || long_bump(t, &ch) != RLS_OK ||
            (j % 7 == 0 && long_bump(t, &kb) != RLS_OK))
            _exit(3);
    }
    rls__shm_close(t);
    _exit(0);
}

/* Lock-free reads of those items while two processes write them (yielding
 * halfway through every copy) and reuse their slots: each read is whole,
 * its log too, and its own item's (not the one with the same first 16 or
 * 20 bytes whose slot it was a moment ago). */
static void lock_free_reads_of_long_keys_and_logs(void **state)
{
    (void)state;
    const int procs = 2, ops = knob("RLS_SHM_SNAP_OPS", 20000);
    char p[400], key[64];
    snprintf(p, sizeof p, "%s/snaplong.shm", dir);
    rls__shm *t = NULL;
    assert_int_equal(rls__shm_open(&t, p, &G_LONG, NULL, 0), RLS_OK);
    pid_t pid[2];
    start_writers(pid, procs, long_writer, p, ops);
    rls__shm_hook = yield_hook;
    long ok = 0, busy = 0, present = 0;
    int running = procs;
    unsigned char log[4 * ALGO_LOG_ENTRY];
    int64_t last[2] = {0, 0};
    for (int r = 0; running > 0; r++) {
        snprintf(key, sizeof key, LONG_PREFIX "c%d-%d", r % 2, r % 60);
        rls__shm_item ch = long_item(2 + r / 60 % 2, key);
        if (r % 3 < 2)   /* the keepers, twins in their first 26 bytes */
            ch = long_item(1, r % 3 ? LONG_PREFIX "keeper-B" : LONG_PREFIX "keeper-A");
        algo_state s;
        memset(&s, 0, sizeof s);
        s.log = log;
        s.log_cap = sizeof log;
        int rc = rls__shm_snap(t, &ch, &s);
        if (rc == RLS_EBUSY) {
            busy++;
        } else {
            assert_int_equal(rc, RLS_OK);
            if (s.present && !long_whole(&ch, &s))
                fail_msg("%s (limit %lld) read torn or another item's: a %lld c %lld log %zu",
                         (const char *)ch.key, (long long)ch.lid, (long long)s.a, (long long)s.c, s.log_len);
            present += s.present;
            ok++;
            if (ch.lid == 1 && s.present) {   /* a keeper never goes back */
                int64_t *l = &last[r % 3 ? 1 : 0];
                if (s.a < *l)
                    fail_msg("%s went back from %lld to %lld", (const char *)ch.key, (long long)*l, (long long)s.a);
                *l = s.a;
            }
        }
        for (int i = 0; i < procs && r % 64 == 0; i++) {
            int st;
            if (pid[i] > 0 && waitpid(pid[i], &st, WNOHANG) == pid[i]) {
                assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
                pid[i] = -1;
                running--;
            }
        }
    }
    rls__shm_hook = NULL;
    print_message("%ld lock-free reads whole (%ld present), %ld busy\n", ok, present, busy);
    assert_true(ok >= 100);
    assert_true(present > 0);
    rls__shm_item ka = long_item(1, LONG_PREFIX "keeper-A"), kb = long_item(1, LONG_PREFIX "keeper-B");
    algo_state s;
    memset(&s, 0, sizeof s);
    s.log = log;
    s.log_cap = sizeof log;
    assert_int_equal(rls__shm_snap(t, &ka, &s), RLS_OK);
    assert_true(long_whole(&ka, &s));
    assert_int_equal(s.a, (int64_t)procs * ops);
    assert_int_equal(rls__shm_snap(t, &kb, &s), RLS_OK);
    assert_true(long_whole(&kb, &s));
    assert_int_equal(s.a, (int64_t)procs * ((ops + 6) / 7));
    rls__shm_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lock_free_reads_of_long_keys_and_logs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
