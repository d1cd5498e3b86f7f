/*
 * decide.h - the decision of one check over all limits of an action:
 * all-or-nothing admission, shadow limits, soft limits (overage), tier
 * behaviours, clock safety and the choice of the deciding limit.  Pure:
 * storage reads the states, decide computes, storage writes what changed.
 */
#ifndef RLS_DECIDE_H
#define RLS_DECIDE_H

#include <stdint.h>
#include "rlstore.h"
#include "algo.h"
#include "resolve.h"

/* The state of another variant of a limit (rules.h rls__rule_limit_sig): the
 * same action and name under another algorithm, window, zone or anchor. */
typedef struct decide_sib {
    int alg;                   /* the algorithm it was written under */
    algo_state st;             /* st.present 0: the key has none */
} decide_sib;

typedef struct decide_item {
    const resolved_limit *rl;  /* in */
    algo_state *st;            /* in/out: state read by storage */
    algo_meta meta;            /* out */
    int changed;               /* out: *st must be written back */
    int denied;                /* out: this limit would deny */
    int64_t floor_ms;          /* in: the limit's clock floor, used when *st
                                * is not present (0: none) */
    const decide_sib *sib;     /* in: states of the limit's other variants */
    int nsib;                  /*     (a sliding_log *st then needs room for
                                *     two more entries, not one) */
} decide_item;

enum tier_behaviour { TIER_NORMAL = 0, TIER_UNLIMITED = 1, TIER_BLOCKED = 2 };

typedef struct decide_out {
    int64_t now;      /* the clock-safe time the decision used */
    int deciding;     /* index of the deciding item, -1 if none */
    int penalty;      /* index of the item whose block_for applies, or -1 */
} decide_out;

/*
 * Decides a request of `cost` at `now`.  The clock-safe time is the maximum
 * of now, floor_ms, every present state's last_ms and the floor_ms of every
 * item whose state is not present: only the action's own limits count.
 * Usage recorded by a limit's other variants after its own state was last
 * written (a rule change and back, a rollback, a tier with another window)
 * is first charged to its state, capped at its capacity: a change of
 * window or algorithm carries usage over conservatively, never generously.  charge == 0 is a
 * peek: nothing changes.  Fills *res (the caller's clock: times measured
 * from `now`, not from the clock-safe time) and *out.  Returns 0, or -1 if
 * an item's parameters are invalid (a rule the validator should have
 * refused; nothing changed).
 */
int rls__decide_check(decide_item *items, int n, int behaviour, int64_t now,
                 int64_t floor_ms, int64_t cost, int charge,
                 rls_result *res, decide_out *out);

/*
 * One limit's window as rls__decide_check asks it (prev_start, start, end
 * and, for sliding_window, the next window's end), kept by a caller that
 * decides one limit again and again (the memory-class fast lane): valid
 * for every t with start <= t < end, because the windows of one (length,
 * zone) partition time (window.h).  start == end (zeroed): holds nothing.
 * It keeps the limit's parameters too: it belongs to one resolved limit
 * (its rule_limit, limit and burst): zero it when that changes.
 */
typedef struct decide_wcache {
    int64_t prev_start, start, end, next_end;
    algo_params p;               /* the limit's parameters, when have_p */
    int have_p;
} decide_wcache;

/*
 * rls__decide_check(it, 1, TIER_NORMAL, now, 0, cost, 1, res, out) for
 * one item with no other variants (it->nsib == 0), the same result, state,
 * meta and out bit for bit (tests/core/test_decide_one.c compares them):
 * one algorithm call where the general decision makes two (ask, then
 * charge), when one is the same (an enforcing limit without count_denied,
 * a charge with room); the window from *wc when it holds t (wc NULL:
 * computed), refreshed when it does not.  Anything else is the general
 * decision.  Returns 0, or -1 as rls__decide_check.
 */
int rls__decide_one(decide_item *it, int64_t now, int64_t cost, decide_wcache *wc,
                    rls_result *res, decide_out *out);

/* Gives back `cost` charged at charged_at to every item (rls_refund and
 * cancelled reservations).  Sets changed on each. Returns 0 or -1. */
int rls__decide_refund(decide_item *items, int n, int64_t now, int64_t floor_ms,
                  int64_t charged_at, int64_t cost);

/* rls__decide_refund (floor 0), and *given the units it gave back: the
 * most any item got back, as units in use at now before and after (a
 * limit whose window ended, or with less in use, gets back less; 0 when
 * none got any).  -1 when core refuses a limit. */
int rls__decide_refund_given(decide_item *items, int n, int64_t now, int64_t charged_at,
                             int64_t cost, int64_t *given);

/* Fills *res for a key that is blocked until until_ms (0 = forever). */
void rls__decide_blocked(rls_result *res, int64_t now, int64_t until_ms,
                    const char *rule);

/* Turns a peek's decision *res of a blocked key (until until_ms, 0 =
 * forever) into the block's denial, keeping the deciding limit's limit,
 * remaining and window: the counters still tell how much is in use. */
void rls__decide_blocked_keep(rls_result *res, int64_t now, int64_t until_ms,
                         const char *rule);

/* A soft limit's admissible capacity: c * (100 + pct) / 100 (pct <= 0: c),
 * saturating at INT64_MAX. */
int64_t rls__decide_overage(int64_t c, int pct);

/* Fills *res for a storage failure under the policy (allowed 0/1). */
void rls__decide_degraded(rls_result *res, int allow);

/*
 * The window of limit d as callers see it at t (rls_result.window_ms, the
 * RateLimit-Policy header's w, explain): a window aligned to the calendar
 * (1d, 1w, 1mo of fixed_window or sliding_window, anchor aligned) has its
 * true length in the rule's zone, 23 or 25 hours on a DST day and 28 to 31
 * days for a month; any other window its nominal length.
 */
int64_t rls__decide_window_ms(const rule_limit *d, int64_t t);

#endif
