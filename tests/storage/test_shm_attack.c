/*
 * test_shm_attack.c - round 8's attack on the shared-memory table's format
 * 3 (storage/shm/shmtable.c): entries take one of the 4 lowest ways of a
 * bucket first, the one-item lock path (lock_one) and
 * rls__shm_lock_read1.
 *
 * - Tables of 2 and 3 buckets (every key's two buckets the same pair, or
 *   one of three pairs) and a large one, filled until RLS_EFULL: every
 *   slot used, every state its own; entries expired in the low ways, then
 *   in the high ways, are reused in every way, and no (limit, key) is
 *   ever in two slots.
 * - Processes whose clocks differ (some ahead, some behind) racing on a
 *   2-bucket table: keepers charged through rls__shm_lock_read1 and
 *   two-item transactions, dropped and made again, while short-lived
 *   entries of every process churn through the same 32 slots: each
 *   keeper's count is exactly what was added minus what was dropped, no
 *   key is in two slots, no state torn.
 * - rls__shm_lock_read1's refusals (a held bucket, a log the buffer
 *   cannot take: a log at the table's capacity and one entry short of
 *   it) leave no lock held, for an entry found by its tag and for a new
 *   one (both buckets locked).
 *
 * Knobs: RLS_SHM_ATTACK_OPS (per process, default 20000),
 * RLS_SHM_ATTACK_PROCS (default 4).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "rlstore.h"
#include "shm/shmtable.h"
#include "shm/shm_int.h"

#define SHMTEST_NAME "shmattack"
#include "shmtest.h"

#include "shmattack.h"

/* ---- placement and reuse ------------------------------------------------------ */

/* Expires (rewrites with expiry 10, same count) every "f<i>" whose way
 * is in [lo, hi); returns how many. */
static int expire_ways(rls__shm *t, int n, int lo, int hi, unsigned *ways_hit)
{
    int e = 0;
    for (int i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof k, "f%d", i);
        int w = way_of(t, 1, k);
        if (w >= lo && w < hi && get(t, 1, k, 0) == i + 1) {
            assert_int_equal(put(t, 1, k, i + 1, 10, 0), RLS_OK);
            *ways_hit |= 1u << w;
            e++;
        }
    }
    return e;
}

/* Offers new keys "<pfx><j>" (count 7j + 3) at now until 40 per bucket
 * in a row are refused (RLS_EFULL: a key's two buckets may be full while
 * a third has room; a last free slot's bucket is then missed with odds
 * (1 - 2/buckets)^(40 buckets), below e^-80); ok[j]: whether j went in.  Returns how many went in and
 * sets *offered. */
#define OFFER_MAX 40000
static int refill(rls__shm *t, const char *pfx, int64_t now, unsigned char *ok, int *offered)
{
    int in = 0, j = 0;
    int patience = 40 * (int)t->nbuckets;
    for (int refused = 0; refused < patience && j < OFFER_MAX; j++) {
        char k[32];
        snprintf(k, sizeof k, "%s%d", pfx, j);
        int rc = put(t, 1, k, 7 * j + 3, FOREVER, now);
        ok[j] = rc == RLS_OK;
        if (rc != RLS_EFULL)
            assert_int_equal(rc, RLS_OK);
        refused = ok[j] ? 0 : refused + 1;
        in += ok[j];
    }
    assert_true(j < OFFER_MAX);   /* stopped by the refusals */
    *offered = j;
    return in;
}

/* Each key refill offered reads its count, or absent when refused. */
static void refilled_exact(rls__shm *t, const char *pfx, const unsigned char *ok, int offered,
                           int64_t now)
{
    for (int j = 0; j < offered; j++) {
        char k[32];
        snprintf(k, sizeof k, "%s%d", pfx, j);
        assert_int_equal(get(t, 1, k, now), ok[j] ? 7 * j + 3 : -1);
    }
}

/* Two, three and 256 buckets filled until full, then the low ways'
 * entries expired and reused, then the high ways': the table takes
 * exactly as many new keys as entries expired (every expired entry
 * reused, in every way, and no live one), every state stays its own,
 * no key is in two slots, and an expired key written again takes its
 * own entry back rather than a second one. */
static void expired_entries_are_reused_in_every_way(void **state)
{
    (void)state;
    const rls__shm_geom gs[3] = { { 32, 24, 0 }, { 48, 24, 0 }, { 4096, 24, 0 } };
    for (int g = 0; g < 3; g++) {
        char p[600];
        rls__shm *t = open_geom(new_path(p, sizeof p), &gs[g]);
        uint32_t slots = t->nbuckets * RLS__SHM_WAYS;
        int n = fill(t, 1, far_expiry);
        if (g == 0)   /* one pair of buckets: every slot before it refuses */
            assert_int_equal(n, (int)slots);
        assert_true(n >= (int)slots * 3 / 4);
        for (int i = 0; i < n; i++) {
            char k[32];
            snprintf(k, sizeof k, "f%d", i);
            assert_int_equal(get(t, 1, k, 0), i + 1);
        }
        no_key_twice(t);
        unsigned low = 0, high = 0;
        int e1 = expire_ways(t, n, 0, 4, &low);
        assert_int_equal(low, 0xfu);   /* the low ways all used */
        static unsigned char ok0[OFFER_MAX], ok1[OFFER_MAX], ok2[OFFER_MAX];
        int o0, o1, o2, f1 = free_slots(t);
        int r0 = refill(t, "E", 9, ok0, &o0);   /* 1 ms before their expiry */
        assert_int_equal(r0, f1);               /* the free slots only */
        assert_int_equal(free_slots(t), 0);
        int r1 = refill(t, "L", 10, ok1, &o1);  /* at their expiry: every one */
        assert_int_equal(r1, e1);
        int e2 = expire_ways(t, n, 4, RLS__SHM_WAYS, &high);
        if (g == 0)
            assert_int_equal(high, 0xfff0u);
        int f2 = free_slots(t);
        int r2 = refill(t, "H", 200, ok2, &o2);
        assert_int_equal(r2, e2 + f2);
        /* an expired key written again: its own entry, once */
        for (int i = 0; i < n; i++) {
            char k[32];
            snprintf(k, sizeof k, "f%d", i);
            int64_t v = get(t, 1, k, 300);
            if (v < 0 && way_of(t, 1, k) >= 0) {   /* expired, still there */
                assert_int_equal(put(t, 1, k, 5, FOREVER, 300), RLS_OK);
                assert_int_equal(copies_of(t, 1, k), 1);
            } else if (v >= 0)
                assert_int_equal(v, i + 1);
        }
        refilled_exact(t, "E", ok0, o0, 300);
        refilled_exact(t, "L", ok1, o1, 300);
        refilled_exact(t, "H", ok2, o2, 300);
        no_key_twice(t);
        rls__shm_close(t);
    }
}

/* A key of another limit id, or of another kind of the same limit,
 * never takes or reads an entry of a namesake; dropped entries in a full
 * pair are taken again by exactly as many new keys. */
static void drops_in_a_full_pair_are_reused_once(void **state)
{
    (void)state;
    char p[600];
    const rls__shm_geom g = { 32, 24, 0 };
    rls__shm *t = open_geom(new_path(p, sizeof p), &g);
    int n = fill(t, 1, far_expiry);
    assert_int_equal(n, 32);
    /* drop every third key, in whatever way it is */
    int dropped = 0;
    for (int i = 0; i < n; i += 3) {
        char k[32];
        snprintf(k, sizeof k, "f%d", i);
        rls__shm_item it = item_k(1, ALGO_FIXED_WINDOW, k);
        rls__shm_txn tx;
        assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
        assert_int_equal(rls__shm_drop(&tx, 0), RLS_OK);
        rls__shm_unlock(&tx);
        assert_int_equal(copies_of(t, 1, k), 0);
        dropped++;
    }
    /* the same names under limit 2: as many as were dropped go in */
    int j = 0;
    for (; j < FILL_MAX; j++) {
        char k[32];
        snprintf(k, sizeof k, "f%d", j);
        int rc = put(t, 2, k, 1000 + j, FOREVER, 0);
        if (rc == RLS_EFULL)
            break;
        assert_int_equal(rc, RLS_OK);
    }
    assert_int_equal(j, dropped);
    for (int i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof k, "f%d", i);
        assert_int_equal(get(t, 1, k, 0), i % 3 == 0 ? -1 : i + 1);
        if (i < j)
            assert_int_equal(get(t, 2, k, 0), 1000 + i);
    }
    no_key_twice(t);
    no_lock_held(t);
    rls__shm_close(t);
}

/* ---- processes with their own clocks ------------------------------------------ */

#define KEEPERS 8
#define CHURN 40
#define PROCS_MAX 8

/* What each process added to and dropped from each keeper: in memory
 * shared with the parent (mapped before the fork). */
struct ledger {
    int64_t added[PROCS_MAX][KEEPERS];
    int64_t dropped[PROCS_MAX][KEEPERS];
    int64_t full[PROCS_MAX];     /* refusals: RLS_EFULL */
    int64_t bad[PROCS_MAX];      /* anything else: a torn state, an error */
};
static struct ledger *led;

static const rls__shm_geom G_PAIR = { 32, 24, 4 };

static void keeper_name(char *k, size_t cap, int i)
{
    snprintf(k, cap, "keeper-%d", i);
}

/* A keeper charged by one through rls__shm_lock_read1 (the lane's call). */
static int charge1(rls__shm *t, int id, int i, int64_t now)
{
    char k[32];
    keeper_name(k, sizeof k, i);
    rls__shm_item it = item_k(1, ALGO_FIXED_WINDOW, k);
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    int rc = rls__shm_lock_read1(t, &it, now, 0, &tx, &s);
    if (rc != RLS_OK)
        return rc;
    if (s.present && (!shm_count_whole(&s) || s.expires_ms != FOREVER))
        rc = RLS_ECORRUPT;
    algo_state w = shm_count(s.present ? s.a + 1 : 1, FOREVER);
    if (rc == RLS_OK && (rc = rls__shm_write(&tx, 0, &w)) == RLS_OK)
        led->added[id][i]++;
    rls__shm_unlock(&tx);
    return rc;
}

/* Two keepers charged by 2 in one transaction. */
static int charge2(rls__shm *t, int id, int i, int j, int64_t now)
{
    char k[2][32];
    keeper_name(k[0], sizeof k[0], i);
    keeper_name(k[1], sizeof k[1], j);
    rls__shm_item it[2] = { item_k(1, ALGO_FIXED_WINDOW, k[0]),
                            item_k(1, ALGO_FIXED_WINDOW, k[1]) };
    rls__shm_txn tx;
    int rc = rls__shm_lock(t, it, 2, now, &tx);
    algo_state s[2];
    for (int x = 0; rc == RLS_OK && x < 2; x++) {
        memset(&s[x], 0, sizeof s[x]);
        rc = rls__shm_read(&tx, (size_t)x, &s[x]);
        if (rc == RLS_OK && s[x].present && !shm_count_whole(&s[x]))
            rc = RLS_ECORRUPT;
    }
    for (int x = 0; rc == RLS_OK && x < 2; x++) {
        algo_state w = shm_count(s[x].present ? s[x].a + 2 : 2, FOREVER);
        rc = rls__shm_write(&tx, (size_t)x, &w);
        if (rc == RLS_OK)
            led->added[id][x ? j : i] += 2;
    }
    rls__shm_unlock(&tx);
    return rc;
}

/* A keeper dropped (rls_reset_at's way: peek, read, drop). */
static int drop1(rls__shm *t, int id, int i, int64_t now)
{
    char k[32];
    keeper_name(k, sizeof k, i);
    rls__shm_item it = item_k(1, ALGO_FIXED_WINDOW, k);
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    int rc = rls__shm_lock_peek(t, &it, 1, now, &tx);
    if (rc != RLS_OK)
        return rc;
    rc = rls__shm_read(&tx, 0, &s);
    if (rc == RLS_OK && s.present && s.expires_ms > now) {
        if (!shm_count_whole(&s))
            rc = RLS_ECORRUPT;
        else if ((rc = rls__shm_drop(&tx, 0)) == RLS_OK)
            led->dropped[id][i] += s.a;
    }
    rls__shm_unlock(&tx);
    return rc;
}

/* A short-lived entry of this process: expires 50 ms after its now. */
static int churn(rls__shm *t, int id, int c, int64_t now)
{
    char k[32];
    snprintf(k, sizeof k, "churn-%d", c);
    rls__shm_item it = item_k(2, ALGO_FIXED_WINDOW, k);
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    int rc = rls__shm_lock_read1(t, &it, now, 0, &tx, &s);
    if (rc != RLS_OK)
        return rc;
    if (s.present && !shm_count_whole(&s))
        rc = RLS_ECORRUPT;
    algo_state w = shm_count(s.present && s.expires_ms > now ? s.a + 1 : 1, now + 50);
    if (rc == RLS_OK)
        rc = rls__shm_write(&tx, 0, &w);
    rls__shm_unlock(&tx);
    (void)id;
    return rc;
}

/* Inside the critical section now and then: let the other processes
 * run (2 CPUs, 4 processes: their transactions interleave there). */
static unsigned yield_n;
static void yield_inside(int point, size_t it)
{
    (void)it;
    if ((point == RLS__SHM_AT_LOCKED || point == RLS__SHM_AT_WRITTEN) && ++yield_n % 7 == 0)
        sched_yield();
}

/* Process id: its clock starts at 10^6 + skew (ahead or behind the
 * others by up to 7 s) and moves 1 ms an operation. */
static void clock_writer(const char *p, int id, int ops, int go)
{
    static const int64_t skew[PROCS_MAX] = { 0, 7000, -5000, 3000, -1000, 6000, -7000, 500 };
    char c;
    while (read(go, &c, 1) > 0) {
    }
    rls__shm *t = NULL;
    if (rls__shm_open(&t, p, &G_PAIR, NULL, 0) != RLS_OK)
        _exit(2);
    rls__shm_hook = yield_inside;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    for (int op = 0; op < ops; op++) {
        int64_t now = 1000000 + skew[id] + op;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int r = (int)(x % 100), i = (int)((x >> 8) % KEEPERS), j = (int)((x >> 16) % KEEPERS);
        int rc;
        if (r < 40)
            rc = charge1(t, id, i, now);
        else if (r < 55)
            rc = i != j ? charge2(t, id, i, j, now) : charge1(t, id, i, now);
        else if (r < 60)
            rc = drop1(t, id, i, now);
        else
            rc = churn(t, id, (int)((x >> 24) % CHURN), now);
        if (rc == RLS_EFULL)
            led->full[id]++;
        else if (rc != RLS_OK)
            led->bad[id]++;
    }
    rls__shm_close(t);
    _exit(0);
}

/* N processes x M operations on one pair of buckets, clocks apart:
 * every keeper holds exactly what was added minus what was dropped. */
static void skewed_clocks_racing_on_one_pair_stay_exact(void **state)
{
    (void)state;
    int procs = knob("RLS_SHM_ATTACK_PROCS", 4), ops = knob("RLS_SHM_ATTACK_OPS", 20000);
    if (procs > PROCS_MAX)
        procs = PROCS_MAX;
    char p[600];
    new_path(p, sizeof p);
    rls__shm *t = open_geom(p, &G_PAIR);
    led = mmap(NULL, sizeof *led, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(led != MAP_FAILED);
    memset(led, 0, sizeof *led);
    pid_t pid[PROCS_MAX];
    start_writers(pid, procs, clock_writer, p, ops);
    for (int i = 0; i < procs; i++) {
        int st;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("writer %d ended with status 0x%x", i, st);
    }
    int64_t full = 0, added_all = 0, dropped_all = 0;
    for (int i = 0; i < procs; i++) {
        if (led->bad[i] != 0)
            fail_msg("writer %d: %lld failures other than RLS_EFULL", i, (long long)led->bad[i]);
        full += led->full[i];
    }
    for (int k = 0; k < KEEPERS; k++) {
        int64_t want = 0;
        for (int i = 0; i < procs; i++) {
            want += led->added[i][k] - led->dropped[i][k];
            dropped_all += led->dropped[i][k];
        }
        added_all += want;
        char name[32];
        keeper_name(name, sizeof name, k);
        int64_t have = get(t, 1, name, 0);
        if ((have < 0 ? 0 : have) != want)
            fail_msg("%s holds %lld, added minus dropped %lld", name, (long long)have,
                     (long long)want);
        assert_true(copies_of(t, 1, name) <= 1);
    }
    no_key_twice(t);
    no_lock_held(t);
    print_message("    %d processes x %d ops: keepers hold %lld (%lld dropped), %lld refusals "
                  "(full)\n", procs, ops, (long long)added_all, (long long)dropped_all,
                  (long long)full);
    munmap(led, sizeof *led);
    rls__shm_close(t);
}

/* ---- rls__shm_lock_read1's refusals ----------------------------------------------- */

/* A sliding_log state of log entries (the log's bytes follow from n). */
static algo_state log_state(int64_t n, uint32_t entries, unsigned char *buf)
{
    algo_state s = shm_count(n, FOREVER);
    s.log_len = (size_t)entries * ALGO_LOG_ENTRY;
    for (size_t b = 0; b < s.log_len; b++)
        buf[b] = (unsigned char)(n + (int64_t)b);
    s.log = buf;
    s.log_cap = s.log_len;
    return s;
}

/* read1 of it with a buffer of cap bytes: rc, and no lock held after a
 * refusal; the log's bytes checked when read. */
static int read1_cap(rls__shm *t, const rls__shm_item *it, size_t cap, int64_t mono,
                     int64_t n_expect)
{
    unsigned char buf[ALGO_LOG_ENTRY * 64];
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    memset(buf, 0xee, sizeof buf);
    s.log = cap ? buf : NULL;
    s.log_cap = cap;
    int rc = rls__shm_lock_read1(t, it, 0, mono, &tx, &s);
    if (rc != RLS_OK) {
        no_lock_held(t);
        assert_int_equal(s.log_cap, cap);
        return rc;
    }
    if (n_expect >= 0) {
        assert_true(s.present);
        assert_int_equal(s.a, n_expect);
        for (size_t b = 0; b < s.log_len; b++)
            assert_int_equal(buf[b], (unsigned char)(n_expect + (int64_t)b));
    }
    rls__shm_unlock(&tx);
    no_lock_held(t);
    return rc;
}

/* Logs at the table's capacity and one entry short of the buffer: the
 * refusal (RLS_EINVAL) leaves no lock, also when the entry is in its
 * second bucket and when the table is full around it; a hold on either
 * bucket of a new entry (two locked) is refused with none left held. */
static void read1_refusals_leave_no_lock(void **state)
{
    (void)state;
    char p[600];
    const rls__shm_geom g = { 32, 24, 8 };   /* one pair, logs of 8 entries */
    rls__shm *t = open_geom(new_path(p, sizeof p), &g);
    unsigned char lb[ALGO_LOG_ENTRY * 8];
    char keys[32][16];
    for (int i = 0; i < 32; i++) {   /* a full pair: ways 0..15 of both */
        snprintf(keys[i], sizeof keys[i], "log%d", i);
        rls__shm_item it = item_k(1, ALGO_SLIDING_LOG, keys[i]);
        rls__shm_txn tx;
        assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
        algo_state s = log_state(i + 1, (uint32_t)(i % 9), lb);
        assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_OK);
        rls__shm_unlock(&tx);
    }
    for (int i = 0; i < 32; i++) {
        rls__shm_item it = item_k(1, ALGO_SLIDING_LOG, keys[i]);
        size_t need = (size_t)(i % 9) * ALGO_LOG_ENTRY;
        assert_int_equal(read1_cap(t, &it, need, 0, i + 1), RLS_OK);   /* exactly */
        if (need)
            assert_int_equal(read1_cap(t, &it, need - ALGO_LOG_ENTRY, 0, -1), RLS_EINVAL);
        assert_int_equal(read1_cap(t, &it, need + 1, 0, i + 1), RLS_OK);
    }
    /* an absent key in a full table: RLS_EFULL, nothing held */
    rls__shm_item nx = item_k(1, ALGO_SLIDING_LOG, "nowhere");
    assert_int_equal(read1_cap(t, &nx, sizeof lb, 0, -1), RLS_EFULL);
    /* holds: on bucket 0 alone, then bucket 1 alone, for present keys */
    for (uint32_t hb = 0; hb < 2; hb++) {
        __atomic_store_n(&shm_bucket_at(t, hb)->hold_ms, 1000, __ATOMIC_RELAXED);
        int busy = 0;
        for (int i = 0; i < 32; i++) {
            rls__shm_item it = item_k(1, ALGO_SLIDING_LOG, keys[i]);
            int rc = read1_cap(t, &it, sizeof lb, 999, i + 1);
            assert_true(rc == RLS_OK || rc == RLS_EBUSY);
            busy += rc == RLS_EBUSY;
            assert_int_equal(read1_cap(t, &it, sizeof lb, 1000, i + 1), RLS_OK);   /* ended */
        }
        assert_int_equal(busy, 16);   /* the 16 entries of the held bucket */
        __atomic_store_n(&shm_bucket_at(t, hb)->hold_ms, 0, __ATOMIC_RELAXED);
    }
    /* a new entry (both buckets locked), one of them held */
    rls__shm_item it = item_k(1, ALGO_SLIDING_LOG, keys[5]);
    rls__shm_txn tx;
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_drop(&tx, 0), RLS_OK);
    rls__shm_unlock(&tx);
    for (uint32_t hb = 0; hb < 2; hb++) {
        __atomic_store_n(&shm_bucket_at(t, hb)->hold_ms, 1000, __ATOMIC_RELAXED);
        rls__shm_item nw = item_k(1, ALGO_SLIDING_LOG, "newcomer");
        assert_int_equal(read1_cap(t, &nw, sizeof lb, 999, -1), RLS_EBUSY);
        __atomic_store_n(&shm_bucket_at(t, hb)->hold_ms, 0, __ATOMIC_RELAXED);
    }
    no_key_twice(t);
    rls__shm_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expired_entries_are_reused_in_every_way),
        cmocka_unit_test(drops_in_a_full_pair_are_reused_once),
        cmocka_unit_test(skewed_clocks_racing_on_one_pair_stay_exact),
        cmocka_unit_test(read1_refusals_leave_no_lock),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
