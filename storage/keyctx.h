/*
 * keyctx.h - what one (action, key) needs inside a transaction: the action,
 * the normalised key, its per-key policy rows (blocks, exact tier
 * assignment, overrides), the tier, the resolved limits and their states.
 * Shared by checks, refunds and reservations.
 */
#ifndef RLS_KEYCTX_H
#define RLS_KEYCTX_H

#include "db.h"

typedef struct key_block {
    int found;          /* a row exists for this action or for all */
    int active;         /* it blocks now */
    int64_t until_ms;   /* 0 = forever */
    char rule[RLS_NAME_MAX + 1];
    char reason[256];   /* the operator's reason (explain) */
} key_block;

typedef struct key_ctx {
    const rule_action *act;
    char key[RLS_KEY_MAX_LIMIT + 64];   /* normalised */
    size_t keylen;
    const char *raw;                    /* as the caller gave it */
    /* The caller's key in the form rows of every action are stored in
     * (keynorm.h rls__key_canonical), and the key a one-flight check's guard
     * probes beside the normalised one (pg_fast.c): the canonical form
     * when it differs from the normalised key, else the key as given. */
    char canon[RLS_KEY_MAX_LIMIT + 64];
    size_t canonlen;
    int canon_done;                     /* canon and probe are set (a load's) */
    const char *probe;
    size_t probelen;
    int policy_maybe;                   /* rows of every action may apply that
                                         * a one-flight guard does not see */

    key_block block;                    /* the strongest active block */
    int pen_found;                      /* this action's own block row */
    int pen_kind, pen_level;
    int64_t pen_until, pen_forget;

    assign_cand exact[2];               /* exact assignments: action, all */
    char exact_tier[2][RLS_NAME_MAX + 1];
    char exact_action[2][RLS_NAME_MAX + 1];
    int nexact;
    tier_choice tier;
    int behaviour;                      /* enum tier_behaviour */

    override_in ov[RESOLVE_MAX_LIMITS];
    char ov_name[RESOLVE_MAX_LIMITS][RLS_NAME_MAX + 1];
    int nov;

    resolved_limit rl[RESOLVE_MAX_LIMITS];
    algo_state st[RESOLVE_MAX_LIMITS];
    decide_item items[RESOLVE_MAX_LIMITS];
    decide_sib sib[RESOLVE_MAX_LIMITS][RULES_SIB_MAX];  /* other variants' states */
    int n;
    int64_t now;                        /* the caller's time (rls__keyctx_load) */
    int nfound;                         /* rows rls__keyctx_read_states found (keycount.c) */
    int deciding;                       /* a peek's deciding item, or -1 (admin_view.c) */
    unsigned char row[RESOLVE_MAX_LIMITS];  /* limit i has a stored row */

    /* What a load need not do again (rls__keyctx_plan, rls__keyctx_load):
     * the caller's action and key, and how far ctx got under the rules
     * plan_rules of generation plan_gen: KEYCTX_KEY the key is normalised,
     * KEYCTX_RESOLVED and tier and limits resolved without policy rows (a
     * one-flight check's trusted load, pg_fast.c). */
    const char *action_arg;
    int normalised_arg;
    int planned;
    int plan_n;                         /* the limits resolved (KEYCTX_RESOLVED) */
    const ruleset *plan_rules;
    int64_t plan_gen;
} key_ctx;

enum { KEYCTX_NONE = 0, KEYCTX_KEY = 1, KEYCTX_RESOLVED = 2 };

/* Validates the arguments every per-key call shares. */
int rls__keyctx_args(rls_db *db, const char *action, const char *key,
                int64_t cost, int64_t now);

/* Inside a transaction: refreshes the rule cache, then fills ctx up to and
 * including the tier and the resolved limits (not the states).  `key` is
 * the caller's key, normalised here for the action, or with normalised != 0
 * a key that already is (as stored in a reservation). */
int rls__keyctx_load(rls_db *db, key_ctx *ctx, const char *action, const char *key,
                int normalised, int64_t now);

/* Before the transaction, with no statement: takes the caller's (action,
 * key) into ctx and normalises the key under the rules the handle has
 * cached, if it has any and they accept it.  Never fails: whatever it
 * could not do (or the rules change since) a load does. */
void rls__keyctx_plan(rls_db *db, key_ctx *ctx, const char *action, const char *key);

/* rls__keyctx_load of the (action, key) ctx was planned or loaded with
 * before: what was done under the rules the transaction reads is not done
 * again (the key's normalisation; the tier and limits, when the key's
 * policy rows are as the earlier load saw them: none). */
int rls__keyctx_reload(rls_db *db, key_ctx *ctx, int64_t now);

/* Without a transaction (the memory-class fast path, memclass.c): the
 * tier and limits of the key planned under the rules cached, resolved as
 * for a key without policy rows.  1 when done; 0 when the plan is not
 * usable (the database path loads it). */
int rls__keyctx_resolve_trusted(rls_db *db, key_ctx *ctx, int64_t now);

/* Reads the state of every resolved limit into ctx->st/items: durable
 * limits from the database, `durability: memory` ones from the
 * shared-memory table (memclass.h). */
int rls__keyctx_read_states(rls_db *db, key_ctx *ctx);

/* Writes every item marked changed (memory-class ones are staged until
 * the COMMIT: memclass.h). */
int rls__keyctx_write_states(rls_db *db, key_ctx *ctx);

/* Rows of every action whose key is an IP address, for an IP action's
 * check (everykey.c): taken into ctx as its own rows are; with trusted
 * (no transaction: a one-flight check) only ctx->policy_maybe is set when
 * one may apply or the handle does not know yet. */
int rls__every_ip_apply(rls_db *db, key_ctx *ctx, int64_t now, int trusted);

/* A peek's view of the key's expired reservations: given back to the
 * states read, in memory, as the key's next check gives them back
 * (check.c). */
int rls__peek_refunds(rls_db *db, key_ctx *ctx, int64_t now);

/* Frees the log buffers of the states. */
void rls__keyctx_release(key_ctx *ctx);

/* A context a call is done with (allocated by rls__check_plan): released,
 * and kept as the handle's spare for the next call (check.c) unless one
 * is kept already, else freed.  A batch takes the spare for one item and
 * allocates the others: each batch would otherwise allocate all. */
void rls__keyctx_give_back(rls_db *db, key_ctx *ctx);

#endif
