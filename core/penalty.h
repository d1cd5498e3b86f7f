/*
 * penalty.h - the arithmetic of a limit's block_for penalty: which step of
 * an escalating list applies, when the block ends, until when its level
 * is remembered, and how the denial it follows reports the wait; and which
 * of a key's blocks applies.  Pure: storage reads the key's block rows and
 * writes the block core chose.
 */
#ifndef RLS_PENALTY_H
#define RLS_PENALTY_H

#include <stdint.h>
#include "rlstore.h"
#include "rules.h"

/* The kinds of an rls_blocks row: an operator's block, or a penalty. */
enum block_kind { BLOCK_MANUAL = 0, BLOCK_PENALTY = 1 };

/* The key's own block row for the action, as storage read it. */
typedef struct penalty_prev {
    int found;            /* a row exists (of this action, not of every one) */
    int kind;             /* enum block_kind */
    int level;            /* the step it imposed (penalties) */
    int64_t forget_ms;    /* until when that step is remembered */
} penalty_prev;

/* The penalty to impose. */
typedef struct penalty_step {
    int level;            /* index into block_for */
    int64_t dur_ms;       /* block_for[level] */
    int64_t until_ms;     /* the block's end */
    int64_t forget_ms;    /* the level is remembered until then */
} penalty_step;

/*
 * start + dur, or RLS_TIME_MAX when that would fall past it: an end past
 * the accepted range is kept at its end, so every stored time stays one
 * the admin surface can show and take back.  dur >= 0, start within range.
 */
int64_t rls__time_end(int64_t start, int64_t dur);

/*
 * The penalty def imposes at now (def->nblock_for > 0): the step after the
 * previous penalty's while its level is remembered (now < its forget_ms),
 * else the first; the last step repeats.  The block ends dur after now;
 * its level is remembered for the list's last duration after that.
 */
void rls__penalty_next(const rule_limit *def, const penalty_prev *prev, int64_t now,
                  penalty_step *out);

/* A denial that imposes a penalty of dur_ms waits at least that long:
 * its retry (unless never, -1) and reset are raised to it. */
void rls__penalty_raise(rls_result *res, int64_t dur_ms);

/* Is a block that ends at until_ms (0: never) active at now? */
int rls__block_active(int64_t until_ms, int64_t now);

/* Does an active block ending at until_ms (0: never) outlast the
 * strongest found so far (have: there is one; it ends at cur_until_ms)?
 * The strongest block is the one a check reports. */
int rls__block_outlasts(int have, int64_t cur_until_ms, int64_t until_ms);

#endif
