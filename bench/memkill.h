/*
 * memkill.h - the memory group's crash scenario (mem_kill): kill -9 inside
 * the shared-memory table's critical section, the others' wait and the
 * counts after it.  See memkill.c.
 */
#ifndef RLBENCH_MEMKILL_H
#define RLBENCH_MEMKILL_H

#include "bench.h"

void memkill_register(const bench_cfg *cfg);
void bench_memkill(const bench_cfg *cfg);

#endif /* RLBENCH_MEMKILL_H */
