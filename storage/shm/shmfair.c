/*
 * shmfair.c - fairness for a writer that keeps losing (shmtable.h
 * rls__shm_fair_note): its holds on the buckets of its transaction, which
 * the fast writers honour (rls__shm_held, and rls__shm_lock_read1 in
 * shmtable.c).
 */
#include "rlstore.h"
#include "shm_int.h"

/* Sets (hold > 0: a later one stays) or lifts (hold < 0: only if it is
 * still -hold) the hold of every bucket tx holds. */
static void hold_set(rls__shm_txn *tx, int64_t hold)
{
    for (size_t k = 0; k < tx->nlocked; k++) {
        int64_t *h = &shm_bucket_at(tx->t, tx->locked[k])->hold_ms;
        int64_t was = __atomic_load_n(h, __ATOMIC_RELAXED);
        if (hold > 0 ? was < hold : was == -hold)
            __atomic_store_n(h, hold > 0 ? hold : 0, __ATOMIC_RELAXED);
    }
}

void rls__shm_fair_note(rls__shm_txn *tx, rls__shm_fair *f, int lost, int64_t mono_ms)
{
    if (!tx || !f || mono_ms < 0)
        return;
    if (lost && ++f->conflicts >= RLS__SHM_HOLD_AFTER)
        hold_set(tx, f->hold = mono_ms + RLS__SHM_HOLD_MS);
    if (lost)
        return;
    if (f->hold)   /* through: let them back */
        hold_set(tx, -f->hold);
    f->conflicts = 0;
    f->hold = 0;
}

int rls__shm_held(const rls__shm_txn *tx, int64_t mono_ms)
{
    return tx && shm_held(tx, mono_ms);
}

int rls__shm_held_by_other(const rls__shm_txn *tx, const rls__shm_fair *f, int64_t mono_ms)
{
    for (size_t k = 0; tx && f && k < tx->nlocked; k++) {
        int64_t h = __atomic_load_n(&shm_bucket_at(tx->t, tx->locked[k])->hold_ms,
                                    __ATOMIC_RELAXED);
        if (h > mono_ms && h != f->hold)
            return 1;
    }
    return 0;
}
