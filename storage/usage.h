/*
 * usage.h - internals of the usage listing (admin_usage.c) and its
 * per-action sources (usage_src.c).
 *
 * The list of one action has two parts (rlstore.h, rls_usage_at): the
 * "head", keys under pressure sorted by the order asked for, and the
 * "tail", every other key in key order.  The keys of an action (its
 * universe) are those with a counter of one of its limits and the blocked
 * ones.  A key is in the head when it is a candidate (noted in
 * rls_key_stats, or blocked) and pressing (blocked or at least half used;
 * for the denials order: denied at all).  An action is small when its
 * keys are few and cheap to list: then all are candidates.  That is when
 * the database has at most USAGE_EXACT_MAX keys in all (listing one
 * action's keys walks every key in key order), or when at most that many
 * contain the key filter (one walk lists them for every action).
 * The head is found from the candidates alone (bounded); the tail is
 * walked in key order from a position by a cursor that skips head keys.
 * Several actions merge: heads by the order, tails by (key, action).
 * What "half used" and a row's state mean is core's (core/pressure.h).
 */
#ifndef RLS_USAGE_H
#define RLS_USAGE_H

#include "admin.h"
#include "keyctx.h"
#include "pressure.h"

#define USAGE_EXACT_MAX 500    /* a database this small is examined whole */
#define USAGE_RESET_ALL 5000   /* reset order: candidates taken all up to this */

/* One peeked (action, key). */
typedef struct usage_row {
    char *key;
    const char *action;        /* the source's name */
    char tier[RLS_NAME_MAX + 1];
    char rule[RLS_NAME_MAX + 1];
    int64_t used, limit, remaining, ppm, reset_ms, block_until, denied;
    int blocked;
    int unlimited;             /* its tier is unlimited: never under
                                  pressure, however far past its limit */
    int pressing;              /* under pressure (see above) */
    int skip;                  /* the action refuses the key: no row */
    const char *state;
} usage_row;

/* Statements of one listing, prepared on first use and finalized with it. */
enum {
    UST_FWD, UST_BWD, UST_HOT, UST_DENIED, UST_BLOCKED, UST_DENIALS, UST_COUNT_SUB,
    UST_SUBSTR_KEYS, UST_COUNT_BLOCKED, UST__COUNT
};

/* One action of the listing. */
typedef struct usage_src {
    const char *action;
    usage_row *rows;           /* every key peeked so far (a memo) */
    int nrows, caprows;
    int *slots;                /* hash of rows by key: row index + 1, 0 free */
    int nslots;
    int64_t nkeys;             /* keys with counters (to walk dense ones first) */
    int small;                 /* the whole universe is in `uni` */
    char **uni;                /* small: every key, in key order */
    int nuni;
    int *head;                 /* rows of the head found so far */
    int nhead, caphead;
    int head_done;             /* ... and that is all of it */
    int head_want;             /* how many candidates were asked for */
} usage_src;

typedef struct usage_ctx {
    rls_db *db;
    key_ctx *kc;
    const char *substr;        /* NULL: every key */
    int sort;
    int64_t now;
    rls_stmt *st[UST__COUNT];
    int few_keys;              /* at most USAGE_EXACT_MAX keys in all */
    usage_src *src;
    int nsrc;
    unsigned char inf[RLS_KEY_MAX_LIMIT + 128];   /* 0xff...: above every key */
} usage_ctx;

/*
 * A walk of one action's tail in one direction.  Keys come in batches from
 * a bound; a batch may be limited by a frontier (the key another action's
 * walk has reached), so that the walk of a sparse action in a merge reads
 * only the range the merge covers, not every key up to its next one.
 */
typedef struct tail_cur {
    usage_src *s;
    int dir;                   /* +1 forward, -1 backward */
    char *bound;               /* what is left: keys >= bound (forward) or < bound */
    size_t boundlen;           /* (NULL: from the start, or from the end) */
    int eof;                   /* no keys beyond the batch */
    char **keys;               /* the current batch */
    unsigned char *cand;
    int n, pos, batch;
    int uni_pos;               /* small: next index into uni */
    const char *key;           /* the current tail key; NULL: none (yet) */
    int row;                   /* its row if peeked, else -1 */
} tail_cur;

/* ---- usage_src.c ---------------------------------------------------------- */
/* Binds a universe statement's parameters: action, the filter, now, a
 * limit, the key bound blob (NULL: "") and no frontier. */
void rls__usage_bind(usage_ctx *u, rls_stmt *st, const char *action, int64_t limit,
                     const void *blob, size_t len);
/* Runs st and takes its keys (and, want_cand, whether each is a candidate). */
int rls__usage_read_keys(usage_ctx *u, rls_stmt *st, char ***keys, unsigned char **cand,
                         int *n, int want_cand);
/* Adds key to s's universe (*cap its room); sorts it and removes repeats. */
int rls__usage_uni_add(usage_ctx *u, usage_src *s, const char *key, int *cap);
void rls__usage_uni_sort(usage_src *s);

/* ---- usage_mem.c: durability: memory keys ----------------------------------
 * An action with a memory-class limit (rls__usage_mem_src) is listed whole:
 * rls__usage_mem_universe loads its keys from the database and the table,
 * sorted (s->small 2 once done). */
int rls__usage_mem_src(const usage_ctx *u, const usage_src *s);
int rls__usage_mem_universe(usage_ctx *u, usage_src *s);

int rls__usage_stmt(usage_ctx *u, int id, rls_stmt **out);
void rls__usage_ctx_free(usage_ctx *u);
/* The row of key in s, peeked on first use; *row = -1 if out of memory
 * (error recorded). */
int rls__usage_peek(usage_ctx *u, usage_src *s, const char *key, int *row);
/* Decides which actions are small (their universe loaded): with a key
 * filter, when few keys contain it; else when the database has few keys. */
int rls__usage_small(usage_ctx *u);
/* Finds s's head with at least `want` candidates of each kind (all of
 * them if fewer). */
int rls__usage_head(usage_ctx *u, usage_src *s, int want);
/* Positions c on s's tail, direction dir, at key (forward: keys >= key, or
 * > key if !incl; backward: keys < key, or <= key if incl); key NULL: the
 * start (forward) or the end (backward).  No key is current yet. */
int rls__tail_open(usage_ctx *u, tail_cur *c, usage_src *s, int dir, const char *key, int incl);
/* Moves c to its next tail key, reading no further than frontier (NULL:
 * no limit).  c->key NULL: none up to the frontier, or rls__tail_done(c). */
int rls__tail_next(usage_ctx *u, tail_cur *c, const char *frontier);
/* Nothing is left of c. */
int rls__tail_done(const tail_cur *c);
/* The farthest key c has read (a frontier for the others), or its key. */
const char *rls__tail_reach(const tail_cur *c);
/* Whatever is left of c comes after key in c's direction (or nothing is). */
int rls__tail_beyond(const tail_cur *c, const char *key);
void rls__tail_close(tail_cur *c);
/* Whether (action s, key) belongs to the head. */
int rls__usage_in_head(usage_ctx *u, usage_src *s, const char *key, int *in);
/* The length of the list of every action of u (see rls_usage_count_at). */
int rls__usage_count(usage_ctx *u, int64_t *n);

#endif
