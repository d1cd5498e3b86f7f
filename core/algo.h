/*
 * algo.h - the six rate-limiting algorithms as pure functions.
 *
 * Each algorithm maps (parameters, stored state, now, cost) to a decision, a
 * new state and the metadata of a result.  Nothing here reads a clock, does
 * I/O or allocates: the caller owns every buffer.  Arithmetic is integer and
 * saturating at the int64 limits, so `remaining` never drifts or goes
 * negative.  Semantics are those of shared/DESIGN.md section 2.
 */
#ifndef RLS_ALGO_H
#define RLS_ALGO_H

#include <stddef.h>
#include <stdint.h>

enum algo_kind {
    ALGO_FIXED_WINDOW = 1,
    ALGO_SLIDING_WINDOW = 2,
    ALGO_SLIDING_LOG = 3,
    ALGO_TOKEN_BUCKET = 4,
    ALGO_GCRA = 5,
    ALGO_LEAKY_BUCKET = 6
};
#define ALGO_SLIDING_LOG_MAX 10000  /* largest limit sliding_log accepts */

/* "fixed_window" etc. for a kind; NULL for an unknown kind. */
const char *rls__algo_name(int kind);
/* The kind for a name; 0 if unknown. */
int rls__algo_from_name(const char *name);
/* 1 for token_bucket, gcra, leaky_bucket (capacity reported is burst).
 * Inline: every decision asks it. */
static inline int rls__algo_is_bucket(int kind)
{
    return kind == ALGO_TOKEN_BUCKET || kind == ALGO_GCRA || kind == ALGO_LEAKY_BUCKET;
}

/*
 * Parameters of one limit, resolved for one check.
 *   limit      units per period (>= 1)
 *   burst      units admissible at one instant, bucket algorithms (>= 1);
 *              the caller sets it to limit when the rule gives none
 *   period_ms  the nominal window length in ms (>= 1): the rate period of the
 *              bucket algorithms and sliding_log, and the window length used
 *              with anchor_first_hit
 *   anchor_first_hit  fixed_window/sliding_window: a key's window starts at
 *              its first request (window length period_ms) instead of the
 *              aligned window the caller passes
 *   count_denied  a denied request is charged anyway (fixed_window,
 *              sliding_window, sliding_log count it; buckets drain)
 */
typedef struct algo_params {
    int kind;
    int64_t limit;
    int64_t burst;
    int64_t period_ms;
    int anchor_first_hit;
    int count_denied;
} algo_params;

/*
 * The aligned window containing now (computed by the caller from the
 * calendar, see window.h), used by fixed_window and sliding_window unless
 * anchor_first_hit.  prev_start is the start of the window before it and
 * next_end the end of the one after it (calendar windows vary in length:
 * sliding_window's state counts until next_end).
 * Ignored by the other algorithms.
 */
typedef struct algo_window {
    int64_t prev_start;
    int64_t start;
    int64_t end;
    int64_t next_end;   /* end of the window after it; 0 = same length */
} algo_window;

/*
 * Stored state of one (limit, key).  present == 0 means "no row yet": the
 * algorithm starts fresh (full quota) and ignores the other fields.
 *
 *   fixed_window    a = window start ms, b = count in that window
 *   sliding_window  a = current window start ms, b = current count,
 *                   c = previous window's count
 *   sliding_log     log = packed entries (see below); a = number of entries
 *   token_bucket    a = tokens scaled by period_ms (tokens * period_ms),
 *                   b = time of last refill ms
 *   gcra, leaky     a = theoretical arrival time (TAT) in nanoseconds
 *
 * last_ms is the latest time recorded for the key: the caller has already
 * replaced now by max(now, last_ms) before calling (clock safety) and the
 * algorithm writes the new value.  expires_ms is written by the algorithm:
 * the instant from which the state is equivalent to a fresh one, so storage
 * may delete the row after it.
 *
 * sliding_log entries are 16 bytes each: int64 time ms, int64 units, both
 * little-endian, oldest first.  log_cap is the capacity of log in bytes; the
 * caller guarantees log_cap >= log_len + 16 before a charge.
 */
typedef struct algo_state {
    int present;
    int64_t a, b, c;
    int64_t last_ms;
    int64_t expires_ms;
    unsigned char *log;
    size_t log_len;
    size_t log_cap;
} algo_state;
#define ALGO_LOG_ENTRY 16

/* Metadata of one limit's decision (see rls_result in rlstore.h). */
typedef struct algo_meta {
    int allowed;
    int64_t capacity;       /* limit, or burst for the bucket algorithms */
    int64_t remaining;      /* after this request, never negative        */
    int64_t reset_ms;       /* until fully replenished if idle           */
    int64_t retry_after_ms; /* 0 admitted, >0 wait, -1 never             */
    int64_t delay_ms;       /* leaky_bucket shaping delay, else 0        */
    int64_t used;           /* units in use: capacity - remaining before
                               clamping, so past capacity (an unlimited
                               tier, count_denied) it stays visible      */
} algo_meta;

/*
 * Decides a request of `cost` (>= 1) at `now` (already clock-safe).
 * If admitted and charge != 0, *st is updated to the charged state.  If denied,
 * *st is updated only when count_denied (and charge != 0).  With charge == 0
 * (peek) *st is never modified.  Metadata always describes the state after
 * the decision: after the charge when charged, and the current state when
 * nothing was charged (a peek reports what is admissible now).  cost > capacity is denied with retry_after_ms = -1.
 * Returns 0, or -1 if params are invalid (nothing modified).
 */
int rls__algo_decide(const algo_params *p, const algo_window *w, algo_state *st,
                int64_t now, int64_t cost, int charge, algo_meta *out);

/*
 * Gives back `cost` units charged at `charged_at` (<= now) to *st, as far as
 * they still count at `now`: a unit charged in a window that has ended, or
 * that has already leaked out, is not given back.  Never exceeds full
 * capacity.  Returns 0, or -1 if params are invalid.
 */
int rls__algo_refund(const algo_params *p, const algo_window *w, algo_state *st,
                int64_t now, int64_t charged_at, int64_t cost);

#endif
