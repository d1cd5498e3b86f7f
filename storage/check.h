/*
 * check.h - one check, peek or reservation as it goes down the pipeline
 * (check.c): the caller's inputs and what each stage found, in one struct,
 * and the backend's check step that receives it.
 */
#ifndef RLS_CHECK_H
#define RLS_CHECK_H

#include "keyctx.h"
#include "penalty.h"

enum check_op { CHECK_OP_CHECK = 0, CHECK_OP_PEEK = 1, CHECK_OP_RESERVE = 2 };

struct check_call {
    /* the caller's */
    const char *action, *key;
    int64_t cost, now;
    int op;                     /* enum check_op */
    int64_t ttl;                /* a reservation's (CHECK_OP_RESERVE) */
    int64_t *id;                /* out: the reservation's id, or NULL */
    rls_result *res;            /* out: the answer */
    int64_t mono_ns;            /* the monotonic clock at entry (metrics.c), 0 unread:
                                 * one read serves the latency and the denial cache */

    /* the denial cache's (deny.c) */
    uint64_t deny_fp, deny_gen;
    int deny_usable;            /* a denial may be noted */
    int deny_nores;             /* the key held no reservation */

    /* the plan: the key, its tier, limits and states (keyctx.h) */
    key_ctx *ctx;
    int full_sync;              /* a limit asks for `durability: full` */

    /* the decision (rls__check_decide) and the writes it asks for */
    int blocked;                /* answered by a block: no limit read */
    decide_out dout;
    int penalty;                /* a penalty block to write: pen */
    penalty_step pen;

    /* the transaction's */
    int states_read;            /* the states were read from the database */
    int counted, noted;         /* counted in the stats and key stats */
    int committed;              /* a charging transaction committed */
};


/* The generic step (check.c): BEGIN, load, read states, decide, write,
 * housekeeping, COMMIT, run again as rls__tx_retry says.  SQLite's, and
 * PostgreSQL's when its one round trip cannot serve. */
int rls__check_tx(rls_db *db, struct check_call *call);

/* PostgreSQL's step (pg/pg_fast.c): one round trip when it can, else the
 * generic step. */
int rls__pg_check_tx(rls_db *db, struct check_call *call);

/* Is the key of call->ctx (loaded) answered by a block, with no limit
 * read? */
static inline int rls__check_is_blocked(const key_ctx *ctx)
{
    return ctx->block.active || ctx->behaviour == TIER_BLOCKED;
}

/*
 * Core decides from ctx's states (read, unless the key is blocked) with
 * floor_ms the clock floor of states not present, and says what to write
 * (check.c): the states it marked changed, a penalty block (call->penalty,
 * call->pen; the result's wait raised to it), for an admitted reservation
 * its row.  Every backend's step runs it; RLS_ECONFIG (recorded) when core
 * refuses a limit.
 */
int rls__check_decide(rls_db *db, struct check_call *call, int64_t floor_ms);

/* Housekeeping of a charging check that committed without the generic
 * transaction (PostgreSQL's one round trip): counted in the stats, one
 * write more towards a GC step (which the next transaction runs). */
void rls__check_counted(rls_db *db, struct check_call *call);

/* ---- the stages, for the batch (batch.c) that runs them over several
 * calls in one transaction ------------------------------------------------ */
/* Validate: the caller's arguments (and a reservation's TTL). */
int rls__check_validate(rls_db *db, struct check_call *call);
/* Plan: call->ctx allocated, the key normalised under the cached rules,
 * call->full_sync. */
int rls__check_plan(rls_db *db, struct check_call *call);
/* In the transaction, after the load: expired reservations given back,
 * the states read (unless a block answers). */
int rls__check_read(rls_db *db, struct check_call *call);
/* In the transaction: what rls__check_decide asks to be written. */
int rls__check_write(rls_db *db, struct check_call *call);
/* In the transaction: the call counted in the stats and key stats (by
 * call->res->allowed); rls__check_uncount takes it back when the
 * transaction fails. */
void rls__check_count(rls_db *db, struct check_call *call);
void rls__check_uncount(rls_db *db, const struct check_call *call);
/* A stats flush and GC step when due, in a savepoint: never fails a
 * check whose transaction is still open. */
int rls__check_housekeeping(rls_db *db, int64_t now);
/* Is rc a storage failure, and does the failure policy of action admit? */
int rls__check_is_storage_failure(int rc);
int rls__check_policy_allows(rls_db *db, const char *action);

/* ---- deny.c: the denial cache --------------------------------------- */
/* 1 with *call->res when a cached denial answers the check; else 0, with
 * what rls__deny_note needs in call. */
int rls__deny_lookup(rls_db *db, struct check_call *call);
/* After a committed check: remembers a denial fixed until its retry
 * time, or forgets the key's when admitted. */
void rls__deny_note(rls_db *db, const struct check_call *call);

/* ---- refund.c: refunds and reservations ------------------------------ */
/* Inside a check's transaction: gives back the key's reservations whose
 * TTL has passed, before its states are read. */
int rls__refund_expired(rls_db *db, const key_ctx *ctx, int64_t now);
/* Does the key hold no reservation of its action?  0 on any doubt. */
int rls__no_reservation_of_key(rls_db *db, const key_ctx *ctx);
/* Does the lids list of a reservation (int64 LE each) hold id? */
int rls__lids_have(const unsigned char *lids, size_t nlids, int64_t id);

#endif
