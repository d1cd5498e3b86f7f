/*
 * progress.c - progress of long operations on a terminal (issue #20):
 * `copy-from` of a large database says how many rows it has read so far,
 * on one line of stderr rewritten in place (at most ten times a second),
 * only when stderr is a terminal: scripts see nothing of it.
 */
#include <stdio.h>
#include <time.h>
#include "rlctl.h"

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void progress_rows(void *ctx, int64_t rows)
{
    static int64_t last;
    struct progress *p = ctx;
    int64_t now = mono_ms();
    p->rows += rows;
    if (p->shown && now - last < 100)
        return;
    last = now;
    fprintf(stderr, "\r%lld rows read ...", (long long)p->rows);
    fflush(stderr);
    p->shown = 1;
}

void progress_end(struct progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r%lld rows read.   \n", (long long)p->rows);
    p->shown = 0;
}
