/*
 * shmcount.h - the state the table suites write and read back: every
 * field follows from a count n (b = 2n, c = -n, last_ms = n), so a state
 * mixed from two writes (a torn copy, a lost update) shows.
 */
#ifndef RLS_SHMCOUNT_H
#define RLS_SHMCOUNT_H

#include <string.h>
#include "shm/shmtable.h"

static inline algo_state shm_count(int64_t n, int64_t expires)
{
    algo_state s;
    memset(&s, 0, sizeof s);
    s.present = 1;
    s.a = n;
    s.b = 2 * n;
    s.c = -n;
    s.last_ms = n;
    s.expires_ms = expires;
    return s;
}

/* Every field follows from s->a (the expiry aside). */
static inline int shm_count_whole(const algo_state *s)
{
    return s->b == 2 * s->a && s->c == -s->a && s->last_ms == s->a;
}

#endif
