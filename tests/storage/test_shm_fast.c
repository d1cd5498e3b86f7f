/*
 * test_shm_fast.c - the shared-memory table's parts for speed (issue #19,
 * round 7; storage/shm/shmtable.c): format 3's way-major hot records
 * (every slot a record of its own) and rls__shm_lock_read1, the memory
 * lane's lock, hold and read in one call.  test_shm_table.c has the rest
 * of the table's units.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "rlstore.h"
#include "shm/shmtable.h"
#include "shm/shm_int.h"

#define SHMUNIT_NAME "shmfast"
#include "shmunit.h"

/* Format 3 keeps the hot records way by way (shm_int.h shm_hot_at): every
 * slot of every geometry (bucket counts odd and even) has a record of its
 * own inside the hot part, and a table filled until it refuses keeps
 * each key's state apart, also after every state is written again. */
static void every_slot_has_a_record_of_its_own(void **state)
{
    const rls__shm_geom gs[4] = { { 32, 40, 0 }, { 48, 40, 0 }, { 80, 40, 0 }, { 4096, 40, 0 } };
    for (int g = 0; g < 4; g++) {
        rls__shm *t = open_ok(new_path(), &gs[g]);
        uint32_t slots = t->nbuckets * RLS__SHM_WAYS;
        unsigned char *seen = calloc(slots, 1);
        assert_non_null(seen);
        for (uint32_t s = 0; s < slots; s++) {
            uint64_t off = (uint64_t)((unsigned char *)shm_hot_at(t, s) - t->base);
            assert_true(off >= t->slots_off && off + SHM_HOT_SIZE <= t->cold_off);
            assert_int_equal((off - t->slots_off) % SHM_HOT_SIZE, 0);
            uint64_t i = (off - t->slots_off) / SHM_HOT_SIZE;
            assert_true(i < slots);
            assert_int_equal(seen[i], 0);   /* no two slots share a record */
            seen[i] = 1;
        }
        free(seen);
        char key[48];
        int n = 0;
        for (;; n++) {   /* short keys (in the hot record) and long ones */
            snprintf(key, sizeof key, n % 2 ? "%d" : "a-key-longer-than-sixteen-%d", n);
            int rc = put(t, 1 + n % 2, key, n + 1, 1000, 0);
            if (rc == RLS_EFULL)
                break;
            assert_int_equal(rc, RLS_OK);
        }
        assert_true(n >= (int)slots / 2);
        for (int round = 0; round < 2; round++)
            for (int i = 0; i < n; i++) {
                snprintf(key, sizeof key, i % 2 ? "%d" : "a-key-longer-than-sixteen-%d", i);
                assert_int_equal(get(t, 1 + i % 2, key), round * 100000 + i + 1);
                assert_int_equal(get(t, 2 - i % 2, key), -1);   /* the other limit */
                if (round == 0)
                    assert_int_equal(put(t, 1 + i % 2, key, 100000 + i + 1, 1000, 0), RLS_OK);
            }
        rls__shm_close(t);
    }
}

/* rls__shm_lock_read1, the memory lane's one call: the lock of one item,
 * the losing writer's hold honoured, the state read; on any refusal no
 * lock is left held. */
static int bucket_free(rls__shm *t, uint32_t b)
{
    pthread_mutex_t *mu = &shm_bucket_at(t, b)->mu;
    int rc = pthread_mutex_trylock(mu);
    if (rc == 0)
        pthread_mutex_unlock(mu);
    return rc == 0;
}

static void one_item_is_locked_and_read_in_one_call(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);   /* log_max 4 */
    rls__shm_item a = item(1, "hot");
    rls__shm_txn tx;
    algo_state st;
    memset(&st, 0, sizeof st);
    /* absent: both buckets locked, read absent, made by the write */
    assert_int_equal(rls__shm_lock_read1(t, &a, 0, 0, &tx, &st), RLS_OK);
    assert_int_equal(st.present, 0);
    assert_int_equal(tx.nlocked, 2);
    assert_false(bucket_free(t, tx.locked[0]));
    algo_state w = shm_count(5, 1000);
    assert_int_equal(rls__shm_write(&tx, 0, &w), RLS_OK);
    rls__shm_unlock(&tx);
    /* present: its bucket alone, its state */
    assert_int_equal(rls__shm_lock_read1(t, &a, 0, 0, &tx, &st), RLS_OK);
    assert_int_equal(tx.nlocked, 1);
    assert_false(bucket_free(t, tx.locked[0]));
    assert_int_equal(st.present, 1);
    assert_int_equal(st.a, 5);
    assert_int_equal(st.b, 10);
    assert_int_equal(st.c, -5);
    assert_int_equal(st.expires_ms, 1000);
    st.a = 6;
    st.b = 12;
    st.c = -6;
    assert_int_equal(rls__shm_write(&tx, 0, &st), RLS_OK);
    uint32_t home = tx.locked[0];
    rls__shm_unlock(&tx);
    assert_true(bucket_free(t, home));
    assert_int_equal(get(t, 1, "hot"), 6);
    /* a losing writer's hold: refused until it ends, nothing left locked */
    const int64_t now = 5000000;
    rls__shm_fair f = {RLS__SHM_HOLD_AFTER, 0};
    assert_int_equal(rls__shm_lock(t, &a, 1, 0, &tx), RLS_OK);
    rls__shm_fair_note(&tx, &f, 1, now);
    rls__shm_unlock(&tx);
    assert_int_equal(rls__shm_lock_read1(t, &a, 0, now, &tx, &st), RLS_EBUSY);
    assert_int_equal(tx.nlocked, 0);
    assert_true(bucket_free(t, home));
    assert_int_equal(rls__shm_lock_read1(t, &a, 0, now + RLS__SHM_HOLD_MS, &tx, &st), RLS_OK);
    assert_int_equal(st.a, 6);
    rls__shm_unlock(&tx);
    /* a log the caller's buffer cannot take: refused, nothing locked */
    unsigned char log[4 * ALGO_LOG_ENTRY] = {1, 2, 3};
    rls__shm_item sl = item(2, "hot");
    sl.kind = ALGO_SLIDING_LOG;
    w.log = log;
    w.log_len = 3 * ALGO_LOG_ENTRY;
    assert_int_equal(rls__shm_lock(t, &sl, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_write(&tx, 0, &w), RLS_OK);
    rls__shm_unlock(&tx);
    memset(&st, 0, sizeof st);
    st.log = log;
    st.log_cap = 2 * ALGO_LOG_ENTRY;
    assert_int_equal(rls__shm_lock_read1(t, &sl, 0, 0, &tx, &st), RLS_EINVAL);
    assert_int_equal(tx.nlocked, 0);
    assert_true(bucket_free(t, home));
    st.log_cap = sizeof log;
    assert_int_equal(rls__shm_lock_read1(t, &sl, 0, 0, &tx, &st), RLS_OK);
    assert_int_equal(st.log_len, 3 * ALGO_LOG_ENTRY);
    rls__shm_unlock(&tx);
    /* arguments, as rls__shm_lock's */
    rls__shm_item bad = item(1, "");
    assert_int_equal(rls__shm_lock_read1(t, &bad, 0, 0, &tx, &st), RLS_EKEY);
    bad = item(1, "k");
    bad.kind = 0;
    assert_int_equal(rls__shm_lock_read1(t, &bad, 0, 0, &tx, &st), RLS_EINVAL);
    assert_int_equal(rls__shm_lock_read1(t, &a, 0, 0, NULL, &st), RLS_EINVAL);
    assert_int_equal(rls__shm_lock_read1(t, &a, 0, 0, &tx, NULL), RLS_EINVAL);
    assert_int_equal(rls__shm_lock_read1(NULL, &a, 0, 0, &tx, &st), RLS_EINVAL);
    assert_int_equal(tx.nlocked, 0);
    rls__shm_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_slot_has_a_record_of_its_own),
        cmocka_unit_test(one_item_is_locked_and_read_in_one_call),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
