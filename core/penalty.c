/*
 * penalty.c - block_for escalation and the wait it imposes (penalty.h).
 */
#include "penalty.h"

int64_t rls__time_end(int64_t start, int64_t dur)
{
    return dur < RLS_TIME_MAX - start ? start + dur : RLS_TIME_MAX;
}

void rls__penalty_next(const rule_limit *def, const penalty_prev *prev, int64_t now,
                  penalty_step *out)
{
    int level = 0, last = def->nblock_for - 1;
    /* a stored level outside the list (a row written by hand) is read as
     * its nearest end, never used as an index */
    if (prev && prev->found && prev->kind == BLOCK_PENALTY && now < prev->forget_ms)
        level = prev->level < 0 ? 0 : prev->level >= last ? last : prev->level + 1;
    out->level = level;
    out->dur_ms = def->block_for[level];
    out->until_ms = rls__time_end(now, out->dur_ms);
    out->forget_ms = rls__time_end(out->until_ms, def->block_for[last]);
}

void rls__penalty_raise(rls_result *res, int64_t dur_ms)
{
    if (res->retry_after_ms >= 0 && res->retry_after_ms < dur_ms)
        res->retry_after_ms = dur_ms;
    if (res->reset_ms < dur_ms)
        res->reset_ms = dur_ms;
}

int rls__block_active(int64_t until_ms, int64_t now)
{
    return until_ms == 0 || until_ms > now;
}

int rls__block_outlasts(int have, int64_t cur_until_ms, int64_t until_ms)
{
    return !have || until_ms == 0 || (cur_until_ms != 0 && until_ms > cur_until_ms);
}
