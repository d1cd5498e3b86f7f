/*
 * shm_int.h - the layout of a shared-memory table file, shared by
 * shmfile.c (making and attaching the file) and shmtable.c (transactions).
 * Nothing outside storage/shm/ includes it.  See shmtable.h for the design.
 *
 *   [0, SHM_HEAD_SIZE)          struct shm_head
 *   [SHM_HEAD_SIZE, slots_off)  nbuckets x struct shm_bucket (SHM_BUCKET_SIZE)
 *   [slots_off, file_size)      nbuckets * RLS__SHM_WAYS slots of slot_size:
 *                               struct shm_slot, the key (key_max bytes),
 *                               then two logs of log_max entries
 */
#ifndef RLS_SHM_INT_H
#define RLS_SHM_INT_H

#include <pthread.h>
#include <stdint.h>
#include "shmtable.h"

#define SHM_MAGIC "rlsshm\0\x01"   /* 8 bytes                                  */
#define SHM_VERSION 1u
#define SHM_HEAD_SIZE 4096u
#define SHM_BUCKET_SIZE 128u       /* two cache lines: no false sharing      */
#define SHM_FILE_MAX ((uint64_t)1 << 40)

struct shm_head {
    char magic[8];
    uint32_t version;
    uint32_t head_size;
    uint32_t mutex_size;     /* sizeof(pthread_mutex_t) of the maker       */
    uint32_t ways;
    uint32_t bucket_size;
    uint32_t slot_size;
    uint32_t nbuckets;
    uint32_t key_max;
    uint32_t log_max;
    uint32_t reserved;
    uint64_t slots_off;
    uint64_t file_size;
    uint64_t recoveries;     /* atomic: EOWNERDEAD locks taken over         */
    uint64_t boot;           /* hash of the boot id it was made in, 0 unknown */
    uint64_t seed;           /* random, per table: the placement hash's key,
                                so keys cannot be chosen to fill one bucket */
};

struct shm_bucket {
    pthread_mutex_t mu;                  /* robust, process-shared          */
    uint32_t tag[RLS__SHM_WAYS];         /* 0 free; stored last on publish  */
};

/* One copy of a state: the fields of algo_state, present implied. */
struct shm_copy {
    int64_t a, b, c;
    int64_t last_ms;
    int64_t expires_ms;
    int32_t kind;            /* the algorithm the state belongs to          */
    uint32_t log_len;        /* bytes of this copy's log                    */
};

struct shm_slot {
    int64_t lid;
    uint32_t key_len;
    uint32_t cur;            /* the current copy, 0 or 1: flipped last      */
    struct shm_copy copy[2];
};

struct rls__shm {
    unsigned char *base;
    size_t size;
    struct shm_head *head;
    uint32_t nbuckets;
    uint32_t slot_size;
    uint32_t key_max;
    uint32_t log_max;
    uint64_t slots_off;
    uint64_t seed;
    uint64_t dev, ino;
};

/* Byte sizes of a geometry; 0 when it is out of range. */
struct shm_sizes {
    uint32_t nbuckets;
    uint32_t slot_size;
    uint64_t slots_off;
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

static inline struct shm_slot *shm_slot_at(const rls__shm *t, uint32_t s)
{
    return (struct shm_slot *)(t->base + t->slots_off + (uint64_t)s * t->slot_size);
}

static inline unsigned char *shm_key_of(const rls__shm *t, struct shm_slot *s)
{
    (void)t;
    return (unsigned char *)(s + 1);
}

static inline unsigned char *shm_log_of(const rls__shm *t, struct shm_slot *s, uint32_t k)
{
    return (unsigned char *)(s + 1) + t->key_max + (size_t)k * t->log_max * ALGO_LOG_ENTRY;
}

#endif
