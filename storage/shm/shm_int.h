/*
 * shm_int.h - the layout of a shared-memory table file, shared by
 * shmfile.c (making and attaching the file) and shmtable.c (transactions).
 * Nothing outside storage/shm/ includes it.  See shmtable.h for the design.
 *
 *   [0, SHM_HEAD_SIZE)          struct shm_head
 *   [SHM_HEAD_SIZE, slots_off)  nbuckets x struct shm_bucket (SHM_BUCKET_SIZE)
 *   [slots_off, cold_off)       nbuckets * RLS__SHM_WAYS hot records, struct
 *                               shm_hot (SHM_HOT_SIZE: two cache lines),
 *                               way by way: the records of way 0 of every
 *                               bucket, then those of way 1, ... (shm_hot_at)
 *   [cold_off, file_size)       as many cold records of slot_size bytes: the
 *                               whole key (key_max bytes), then two logs of
 *                               log_max entries (one per state copy)
 *
 * Format version 3.  Version 2 kept the hot records bucket by bucket (the
 * 16 of a bucket side by side) and had an entry take any of the 16 ways
 * first; version 1 kept the key and both logs inline in one slot of ~900
 * bytes in the default geometry.  Both are refused as other versions
 * (RLS_ENOTDB), and their tables have names of their own (rls__shm_path).
 */
#ifndef RLS_SHM_INT_H
#define RLS_SHM_INT_H

#include <pthread.h>
#include <stdint.h>
#include "shmtable.h"

#define SHM_MAGIC "rlsshm\0\x01"   /* 8 bytes                                  */
#define SHM_VERSION 3u
#define SHM_HEAD_SIZE 4096u
#define SHM_BUCKET_SIZE 64u        /* one cache line: lock and tags together */
#define SHM_HOT_SIZE 128u          /* two lines, 128-aligned: the adjacent-
                                      line prefetcher loads them as a pair  */
#define SHM_KEY_INLINE 16u         /* key bytes copied into the hot record   */
#define SHM_FILE_MAX ((uint64_t)1 << 40)

struct shm_head {
    char magic[8];
    uint32_t version;
    uint32_t head_size;
    uint32_t mutex_size;     /* sizeof(pthread_mutex_t) of the maker       */
    uint32_t ways;
    uint32_t bucket_size;
    uint32_t slot_size;      /* bytes of a cold record                      */
    uint32_t nbuckets;
    uint32_t key_max;
    uint32_t log_max;
    uint32_t hot_size;       /* SHM_HOT_SIZE of the maker                   */
    uint64_t slots_off;      /* the hot records                             */
    uint64_t file_size;
    uint64_t recoveries;     /* atomic: EOWNERDEAD locks taken over         */
    uint64_t boot;           /* hash of the boot id it was made in, 0 unknown */
    uint64_t seed;           /* random, per table: the placement hash's key,
                                so keys cannot be chosen to fill one bucket */
    uint64_t cold_off;       /* the cold records                            */
};

struct shm_bucket {
    pthread_mutex_t mu;                  /* robust, process-shared          */
    uint8_t tag[RLS__SHM_WAYS];          /* 0 free, else 1..255 from the
                                            hash; stored last on publish   */
    int64_t hold_ms;                     /* atomic: fast writers keep off
                                            until this CLOCK_MONOTONIC ms
                                            (rls__shm_hold; 0: none; the
                                            spare bytes of the line: a file
                                            made before it reads 0)        */
};

/* One copy of a state's numbers: algo_state's, present implied. */
struct shm_state {
    int64_t a, b, c;
    int64_t last_ms;
    int64_t expires_ms;
};

/* What a (limit, key) needs on every check, in two cache lines: the
 * publish counter, identity, both copies of the state and the key's
 * first bytes.  Copy seq & 1 is current: a write fills the other copy
 * (state, meta, log) and then stores seq + 1, one release store (the
 * publish); a lock-free reader (rls__shm_snap) reads copy s & 1 and
 * knows it whole when seq still reads s afterwards. */
struct shm_hot {
    uint64_t seq;            /* publishes so far; seq & 1: the current copy */
    int64_t lid;
    uint32_t key_len;
    uint32_t meta[2];        /* per copy: kind (low 8 bits) | log bytes << 8 */
    uint32_t pad;
    struct shm_state copy[2];
    unsigned char key[SHM_KEY_INLINE];   /* the key's first bytes          */
};

#define SHM_META(kind, log_len) ((uint32_t)(kind) | (uint32_t)(log_len) << 8)
#define SHM_META_KIND(m) ((int)((m) & 0xffu))
#define SHM_META_LOG(m) ((uint32_t)(m) >> 8)

struct rls__shm {
    unsigned char *base;
    size_t size;
    struct shm_head *head;
    uint32_t nbuckets;
    uint32_t slot_size;      /* a cold record's bytes                        */
    uint32_t key_max;
    uint32_t log_max;
    uint64_t slots_off;
    uint64_t cold_off;
    uint64_t seed;
    uint64_t dev, ino;
};

/* Byte sizes of a geometry; 0 when it is out of range. */
struct shm_sizes {
    uint32_t nbuckets;
    uint32_t slot_size;      /* cold record                                  */
    uint64_t slots_off;      /* hot records                                  */
    uint64_t cold_off;
    uint64_t file_size;
};
/* A hash of this boot of the host (Linux boot_id), 0 when unknown. */
uint64_t rls__shm_boot(void);
int rls__shm_sizes(uint32_t slots, uint32_t key_max, uint32_t log_max,
                   struct shm_sizes *out);

static inline struct shm_bucket *shm_bucket_at(const rls__shm *t, uint32_t b)
{
    return (struct shm_bucket *)(t->base + SHM_HEAD_SIZE + (uint64_t)b * SHM_BUCKET_SIZE);
}

/* The hot record of slot s (bucket s / WAYS, way s % WAYS), way-major:
 * entries take the low ways first (shmtable.c first_way), so a table far
 * from full keeps its live records in the first ways' stretch, a few
 * megabytes fewer of pages and lines than spread over every bucket's 16
 * (measured: see docs/DESIGN-NOTES.md, the memory class's format 3). */
static inline struct shm_hot *shm_hot_at(const rls__shm *t, uint32_t s)
{
    uint64_t i = (uint64_t)(s % RLS__SHM_WAYS) * t->nbuckets + s / RLS__SHM_WAYS;
    return (struct shm_hot *)(t->base + t->slots_off + i * SHM_HOT_SIZE);
}

/* Is a bucket tx holds held at mono_ms (rls__shm_held; shmfair.c
 * sets and lifts the holds)? */
static inline int shm_held(const rls__shm_txn *tx, int64_t mono_ms)
{
    for (size_t k = 0; k < tx->nlocked; k++)
        if (__atomic_load_n(&shm_bucket_at(tx->t, tx->locked[k])->hold_ms, __ATOMIC_RELAXED) >
            mono_ms)
            return 1;
    return 0;
}

/* The cold record of slot s: its whole key, then its two logs. */
static inline unsigned char *shm_cold_at(const rls__shm *t, uint32_t s)
{
    return t->base + t->cold_off + (uint64_t)s * t->slot_size;
}

static inline unsigned char *shm_log_of(const rls__shm *t, uint32_t s, uint32_t k)
{
    return shm_cold_at(t, s) + t->key_max + (size_t)k * t->log_max * ALGO_LOG_ENTRY;
}

#endif
