/*
 * memory.h - the "memory" group of rlbench (issue #19, item 4): the
 * physical limits of a memory-class limiter (floor_inproc_hash,
 * floor_shm_hash, floor_shm_hash_4) and storage/shm's table against them
 * (shm_table, shm_table_4).  See memory.c.
 */
#ifndef RLBENCH_MEMORY_H
#define RLBENCH_MEMORY_H

#include "bench.h"

/* Registers the group's scenarios (called from register_all). */
void mem_register(const bench_cfg *cfg);
/* Runs the group. */
void bench_memory(const bench_cfg *cfg);

#endif /* RLBENCH_MEMORY_H */
