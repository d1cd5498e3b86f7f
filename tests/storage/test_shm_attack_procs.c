/*
 * test_shm_attack_procs.c - round 8's attack on the shared-memory table's
 * format 3 with processes (storage/shm/shmtable.c: lock_one and
 * rls__shm_lock_read1, entries in the 4 lowest ways first):
 *
 * - a process SIGKILLed at each point of a one-item charge (the memory
 *   lane's rls__shm_lock_read1, then the write) while its entry is made,
 *   or charged again, in a low way (0..3) or a high one (4..15): the
 *   process waiting on its lock gets through, counts exact, the entry in
 *   one slot, every lock taken over once; 200 rounds;
 * - processes charging one absent key at the same moment, round after
 *   round, half the keys going to their second bucket: one entry holding
 *   every charge (a loser looked without a lock before the winner made
 *   it, and must find it under the lock in either bucket).
 *
 * Processes wait for each other through pipes, waitpid and a barrier in
 * shared memory: no sleeps, no clocks.  Knobs: RLS_SHM_KILL_ROUNDS
 * (default 200), RLS_SHM_ATTACK_PROCS (default 4), RLS_SHM_ATTACK_ROUNDS
 * (default 3000).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#define SHMTEST_NAME "shmattackp"
#include "shmtest.h"
#include "shmattack.h"

/* ---- kill -9 inside lock_one / rls__shm_lock_read1 ------------------------------ */

static const rls__shm_geom G_KILL = { 32, 24, 0 };   /* one pair of buckets */
static int stop_op, stop_point, stop_fd, cur_op;
static const rls__shm_txn *cur_tx;

/* The victim's hook: at the chosen point of the chosen op, tell the
 * parent the locks it holds and wait for the SIGKILL. */
static void stop_here(int point, size_t it)
{
    if (cur_op != stop_op || point != stop_point || it != 0)
        return;
    char c[2] = { 'S', (char)cur_tx->nlocked };
    if (write(stop_fd, c, 2) != 2)
        _exit(5);
    for (;;)
        pause();
}

/* One charge of (9, "victim") by one, the lane's way (lock_read1). */
static int bump1(rls__shm *t)
{
    rls__shm_item it = item_k(9, ALGO_FIXED_WINDOW, "victim");
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    cur_tx = &tx;
    int rc = rls__shm_lock_read1(t, &it, 0, 0, &tx, &s);
    if (rc != RLS_OK)
        return rc;
    if (s.present && !shm_count_whole(&s))
        rc = RLS_ECORRUPT;
    algo_state w = shm_count(s.present ? s.a + 1 : 1, FOREVER);
    if (rc == RLS_OK)
        rc = rls__shm_write(&tx, 0, &w);
    rls__shm_unlock(&tx);
    return rc;
}

static void kill_victim(const char *p, int fd)
{
    rls__shm *t = NULL;
    if (rls__shm_open(&t, p, &G_KILL, NULL, 0) != RLS_OK)
        _exit(2);
    stop_fd = fd;
    rls__shm_hook = stop_here;
    for (cur_op = 0;; cur_op++) {
        if (bump1(t) != RLS_OK)
            _exit(3);
        char c = 'A';
        if (write(fd, &c, 1) != 1)
            _exit(4);
    }
}

/* A table of one pair, full of fillers but for the slot of bucket b,
 * way w: where the victim's new entry must go. */
static rls__shm *pair_with_one_hole(const char *p, uint32_t b, uint32_t w)
{
    rls__shm *t = open_geom(p, &G_KILL);
    assert_int_equal(fill(t, 1, far_expiry), 32);
    const struct shm_hot *h = shm_hot_at(t, b * RLS__SHM_WAYS + w);
    char k[32];
    snprintf(k, sizeof k, "%.*s", (int)h->key_len, (const char *)shm_cold_at(t, b * RLS__SHM_WAYS + w));
    rls__shm_item it = item_k(1, ALGO_FIXED_WINDOW, k);
    rls__shm_txn tx;
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_drop(&tx, 0), RLS_OK);
    rls__shm_unlock(&tx);
    assert_int_equal(free_slots(t), 1);
    return t;
}

/* Starts the victim; returns its acknowledged charges once it stopped. */
static int64_t victim_stopped(const char *p, pid_t *pid, size_t *held)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    *pid = fork();
    assert_true(*pid >= 0);
    if (*pid == 0) {
        close(fds[0]);
        kill_victim(p, fds[1]);
    }
    close(fds[1]);
    int64_t acks = 0;
    char c;
    for (;;) {
        if (read(fds[0], &c, 1) != 1)
            fail_msg("the victim ended before its stop");
        if (c == 'S')
            break;
        acks++;
    }
    assert_int_equal(read(fds[0], &c, 1), 1);
    *held = (size_t)c;
    close(fds[0]);
    return acks;
}

static int each_none(void *ctx, int64_t lid, int kind, const void *key, size_t key_len,
                     const algo_state *st)
{
    (void)ctx, (void)lid, (void)kind, (void)key, (void)key_len, (void)st;
    return 0;
}

/* A process killed at each point of a one-item charge (lock_read1, then
 * the write) of an entry made in a low way (0..3) or a high one
 * (4..15), new (the kill inside its making) or made by an earlier
 * charge: a process waiting on its lock gets through, the count is the
 * acknowledged charges plus the killed one's if published, the entry is
 * in one slot (its hole), every filler keeps its count, every lock the
 * victim held is taken over once. */
static void kills_inside_one_item_charges_in_low_and_high_ways(void **state)
{
    (void)state;
    const int rounds = knob("RLS_SHM_KILL_ROUNDS", 200);
    int seen[2][2] = { { 0, 0 }, { 0, 0 } };
    for (int r = 0; r < rounds; r++) {
        int high = r % 2, made = (r / 2) % 2;
        uint32_t b = (uint32_t)(r / 4) % 2;
        uint32_t w = high ? 4 + (uint32_t)(r / 8) % 12 : (uint32_t)(r / 8) % 4;
        stop_point = RLS__SHM_AT_LOCKED + (r / 3) % 4;
        stop_op = made;
        char p[600];
        new_path(p, sizeof p);
        rls__shm *t = pair_with_one_hole(p, b, w);
        rls__shm_info i0, i1;
        rls__shm_info_get(t, &i0);
        pid_t vic, wai;
        size_t held = 0;
        int64_t acks = victim_stopped(p, &vic, &held);
        wai = fork();
        assert_true(wai >= 0);
        if (wai == 0) {   /* waits on the victim's lock */
            rls__shm *u = NULL;
            if (rls__shm_open(&u, p, &G_KILL, NULL, 0) != RLS_OK)
                _exit(2);
            _exit(bump1(u) == RLS_OK ? 0 : 3);
        }
        int st;
        assert_int_equal(kill(vic, SIGKILL), 0);
        assert_int_equal(waitpid(vic, &st, 0), vic);
        assert_int_equal(waitpid(wai, &st, 0), wai);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("round %d: the waiter ended with 0x%x", r, st);
        int64_t want = acks + (stop_point == RLS__SHM_AT_PUBLISHED) + 1;
        assert_int_equal(acks, made);
        if (get(t, 9, "victim", 0) != want)
            fail_msg("round %d (way %u, stop %d, op %d): victim holds %lld, want %lld", r, w,
                     stop_point, stop_op, (long long)get(t, 9, "victim", 0), (long long)want);
        assert_int_equal(copies_of(t, 9, "victim"), 1);
        assert_int_equal(way_of(t, 9, "victim"), (int)w);
        for (int i = 0; i < 32; i++) {
            char k[32];
            snprintf(k, sizeof k, "f%d", i);
            int64_t v = get(t, 1, k, 0);
            assert_true(v == i + 1 || (v == -1 && way_of(t, 1, k) == -1));
        }
        assert_int_equal(rls__shm_each(t, 0, each_none, NULL), RLS_OK);
        rls__shm_info_get(t, &i1);
        assert_int_equal(i1.recoveries - i0.recoveries, held);
        assert_int_equal(held, made ? 1u : 2u);   /* its bucket, or both */
        no_key_twice(t);
        no_lock_held(t);
        seen[high][made]++;
        rls__shm_close(t);
        unlink(p);
    }
    print_message("    %d rounds: low/new %d, low/made %d, high/new %d, high/made %d\n", rounds,
                  seen[0][0], seen[0][1], seen[1][0], seen[1][1]);
}


/* ---- processes making one new entry at once --------------------------------------- */

/* A barrier of the processes (memory shared before the fork). */
struct meet {
    int arrived, gen;
    int procs;
    int bad_rounds;     /* rounds whose key was not one entry of count procs */
    int first_bad;
    int in_b1;          /* rounds whose entry is in bucket 1 (the only room) */
};
static struct meet *mt;

static void meet_all(void)
{
    int g = __atomic_load_n(&mt->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&mt->arrived, 1, __ATOMIC_ACQ_REL) == mt->procs) {
        __atomic_store_n(&mt->arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&mt->gen, g + 1, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&mt->gen, __ATOMIC_ACQUIRE) == g)
        sched_yield();
}

/* One charge of (3, key) at now, expiring 5 ms later (the lane's way). */
static int charge_new(rls__shm *t, const char *key, int64_t now)
{
    rls__shm_item it = item_k(3, ALGO_FIXED_WINDOW, key);
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    int rc = rls__shm_lock_read1(t, &it, now, 0, &tx, &s);
    if (rc != RLS_OK)
        return rc;
    int live = s.present && s.expires_ms > now;
    algo_state w = shm_count(live ? s.a + 1 : 1, now + 5);
    rc = rls__shm_write(&tx, 0, &w);
    rls__shm_unlock(&tx);
    return rc;
}

/* The count of (3, key) at now read under the lock, -1 absent. */
static int64_t count_new(rls__shm *t, const char *key, int64_t now)
{
    rls__shm_item it = item_k(3, ALGO_FIXED_WINDOW, key);
    rls__shm_txn tx;
    algo_state s;
    memset(&s, 0, sizeof s);
    if (rls__shm_lock_peek(t, &it, 1, now, &tx) != RLS_OK)
        return -2;
    int rc = rls__shm_read(&tx, 0, &s);
    rls__shm_unlock(&tx);
    return rc != RLS_OK ? -2 : s.present && s.expires_ms > now ? s.a : -1;
}

/* Process id of the race: each round, every process charges the round's
 * new key once, all at once; then process 0 looks at it. */
static void maker(const char *p, int id, int rounds, int go)
{
    char c;
    while (read(go, &c, 1) > 0) {
    }
    rls__shm *t = NULL;
    if (rls__shm_open(&t, p, &G_KILL, NULL, 0) != RLS_OK)
        _exit(2);
    for (int r = 0; r < rounds; r++) {
        char k[32];
        snprintf(k, sizeof k, "new-%d", r);
        int64_t now = 10 * (int64_t)r;
        meet_all();
        if (charge_new(t, k, now) != RLS_OK)
            _exit(3);
        meet_all();
        if (id == 0) {
            int w = way_of(t, 3, k), copies = copies_of(t, 3, k);
            if (count_new(t, k, now) != mt->procs || copies != 1) {
                if (mt->bad_rounds++ == 0)
                    mt->first_bad = r;
            }
            uint32_t s0 = UINT32_MAX;
            for (uint32_t s = 0; s < 32 && w >= 0; s++)
                if (shm_bucket_at(t, s / RLS__SHM_WAYS)->tag[s % RLS__SHM_WAYS] &&
                    shm_hot_at(t, s)->lid == 3 && shm_hot_at(t, s)->key_len == strlen(k) &&
                    memcmp(shm_cold_at(t, s), k, strlen(k)) == 0)
                    s0 = s;
            mt->in_b1 += s0 != UINT32_MAX && s0 / RLS__SHM_WAYS == 1;
        }
        meet_all();
    }
    rls__shm_close(t);
    _exit(0);
}

/* Processes charging one absent key at the same moment, round after
 * round, in a pair whose first bucket is full, so that about half the
 * keys (those whose first bucket it is) go to their second bucket: the
 * losers, who looked without a lock before the winner made the entry,
 * find it under the lock in either bucket: one entry, every charge in
 * it. */
static void processes_making_one_new_entry_make_one(void **state)
{
    (void)state;
    int procs = knob("RLS_SHM_ATTACK_PROCS", 4), rounds = knob("RLS_SHM_ATTACK_ROUNDS", 3000);
    if (procs > 8)
        procs = 8;
    char p[600];
    new_path(p, sizeof p);
    rls__shm *t = pair_with_one_hole(p, 1, 0);
    for (uint32_t w = 1; w < 8; w++) {   /* bucket 1: 8 free ways */
        const struct shm_hot *h = shm_hot_at(t, RLS__SHM_WAYS + w);
        char k[32];
        snprintf(k, sizeof k, "%.*s", (int)h->key_len, (const char *)shm_cold_at(t, RLS__SHM_WAYS + w));
        rls__shm_item it = item_k(1, ALGO_FIXED_WINDOW, k);
        rls__shm_txn tx;
        assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
        assert_int_equal(rls__shm_drop(&tx, 0), RLS_OK);
        rls__shm_unlock(&tx);
    }
    assert_int_equal(free_slots(t), 8);
    mt = mmap(NULL, sizeof *mt, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(mt != MAP_FAILED);
    memset(mt, 0, sizeof *mt);
    mt->procs = procs;
    pid_t pid[8];
    start_writers(pid, procs, maker, p, rounds);
    for (int i = 0; i < procs; i++) {
        int st;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("maker %d ended with status 0x%x", i, st);
    }
    print_message("    %d processes x %d rounds: %d entries in bucket 1, %d bad\n", procs, rounds,
                  mt->in_b1, mt->bad_rounds);
    if (mt->bad_rounds)
        fail_msg("%d rounds left the key not one entry of %d (first: round %d)", mt->bad_rounds,
                 procs, mt->first_bad);
    assert_int_equal(mt->in_b1, rounds);   /* bucket 0 full: b2 of half the keys */
    no_key_twice(t);
    no_lock_held(t);
    munmap(mt, sizeof *mt);
    rls__shm_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kills_inside_one_item_charges_in_low_and_high_ways),
        cmocka_unit_test(processes_making_one_new_entry_make_one),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
