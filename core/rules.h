/*
 * rules.h - the rule model: tiers, actions, limits and pattern assignments,
 * as parsed from YAML (config.h) and cached per handle.
 *
 * A ruleset is immutable once built and owns all its memory (one free call).
 * Resolution of the limits that apply to one (action, key) is in resolve.h.
 */
#ifndef RLS_RULES_H
#define RLS_RULES_H

#include <stddef.h>
#include <stdint.h>
#include "duration.h"
#include "tz.h"

#define RULES_NAME_MAX 63        /* = RLS_NAME_MAX */
#define RULES_BLOCK_STEPS 16     /* max entries of an escalating block_for */
#define RULES_SIB_MAX 4          /* other variants of a limit whose states a check reads */
#define RULES_SIG_MAX 160        /* rls__rule_limit_sig() with its NUL */

enum rule_mode { MODE_ENFORCE = 0, MODE_SHADOW = 1 };
enum rule_durability { DURA_NORMAL = 0, DURA_FULL = 1, DURA_MEMORY = 2 };
/* The most sliding_log entries a `durability: memory` limit may keep: the
 * slot size of the shared-memory table (storage/shm), fixed in its file. */
#define RULES_MEMORY_LOG_MAX 16
/* The most `durability: memory` limits one check decides (an action's, in
 * any tier): one check locks its memory entries together in the
 * shared-memory table, whose transaction holds at most 16 (storage/shm). */
#define RULES_MEMORY_LIMITS_MAX 16
enum rule_on_error { ONERR_INHERIT = -1, ONERR_DENY = 0, ONERR_ALLOW = 1 };
enum rule_anchor { ANCHOR_ALIGNED = 0, ANCHOR_FIRST_HIT = 1 };

typedef struct rule_limit {
    char name[RULES_NAME_MAX + 1];
    int algorithm;               /* enum algo_kind */
    int64_t limit;               /* >= 1 */
    rls_duration window;
    int64_t burst;               /* 0 = not given (defaults to limit) */
    const rls_tz *tz;            /* owned by the ruleset; never NULL  */
    int anchor;                  /* enum rule_anchor */
    int64_t block_for[RULES_BLOCK_STEPS]; /* ms; escalating penalties */
    int nblock_for;              /* 0 = no penalty */
    int overage_pct;             /* 0..1000: soft limit, admits limit*(100+p)/100 */
    int mode;                    /* enum rule_mode */
    int count_denied;
    int durability;              /* enum rule_durability */
    int line, column;            /* where it was defined (for messages) */
    int64_t id;                  /* storage's counter id of (action, name,
                                    variant: rls__rule_limit_sig); 0 until storage
                                    assigns it after loading */
    int64_t sib[RULES_SIB_MAX];  /* ids of other variants of (action, name)
                                    whose states may still count (storage) */
    int nsib;
} rule_limit;

/* Per-tier replacement list of one action: limits replace the action's
 * default limit of the same name, or are added if the name is new. */
typedef struct rule_tier_limits {
    char tier[RULES_NAME_MAX + 1];
    rule_limit *limits;
    int nlimits;
} rule_tier_limits;

typedef struct rule_action {
    char name[RULES_NAME_MAX + 1];
    int key_kind;                /* enum key_kind */
    int ipv4_prefix;             /* 32 default */
    int ipv6_prefix;             /* 128 default; 64 is typical */
    int on_error;                /* enum rule_on_error */
    rule_limit *limits;          /* default limits, >= 1 */
    int nlimits;
    rule_tier_limits *tiers;
    int ntiers;
} rule_action;

typedef struct rule_tier {
    char name[RULES_NAME_MAX + 1];
    int unlimited;               /* always admitted, still counted */
    int blocked;                 /* always denied (reason blocked) */
} rule_tier;

typedef struct rule_assignment {
    char *key;                   /* exact key, CIDR or "prefix*" */
    char action[RULES_NAME_MAX + 1]; /* "" = every action */
    char tier[RULES_NAME_MAX + 1];
    int64_t expires_ms;          /* 0 = never */
} rule_assignment;

typedef struct ruleset {
    int version;                 /* the file's `version:` (1) */
    char default_tier[RULES_NAME_MAX + 1];  /* "" if none given */
    const rls_tz *default_tz;
    int on_error;                /* ONERR_DENY / ONERR_ALLOW / INHERIT */
    rule_tier *tiers;
    int ntiers;
    rule_action *actions;
    int nactions;
    rule_assignment *assignments;
    int nassignments;
    /* private to rules.c: owned zones and string storage */
    rls_tz **zones_;
    int nzones_;
    uint64_t serial_;            /* rls__ruleset_serial's; 0 until asked */
} ruleset;

void rls__ruleset_free(ruleset *rs);  /* NULL is a no-op */

/* A number naming rs for as long as it lives, never given to another rule
 * set of this process (a rule set freed and another loaded at its address
 * has another): what a cache that keeps pointers into rs checks (the
 * memory-class fast lane: a reload of the same generation at the same
 * address is another rule set).  Not part of its content
 * (rls__ruleset_same ignores it). */
uint64_t rls__ruleset_serial(ruleset *rs);

const rule_action *rls__ruleset_action(const ruleset *rs, const char *name);

/* The failure policy of a call of `action` (NULL or not defined: none of
 * its own): the action's on_error, else the rules' (rs NULL: none), else
 * the handle's, handle_allows.  1 admits, 0 denies. */
int rls__on_error_allows(const ruleset *rs, const char *action, int handle_allows);

/* Does a limit of the action, in any tier, ask for `durability: full`? */
int rls__action_wants_full(const rule_action *a);
const rule_tier *rls__ruleset_tier(const ruleset *rs, const char *name);

/*
 * The variant of a limit: what its stored state means (algorithm, window,
 * time zone, anchor), as text such as "fixed_window/0/86400000/UTC/0".  A
 * change of limit, burst or penalty keeps the variant, and so the state; a
 * change of any of these starts another.  Writes at most RULES_SIG_MAX
 * bytes with the NUL.
 */
void rls__rule_limit_sig(const rule_limit *l, char *buf, size_t size);

/*
 * 1 if a and b are the same rules as parsed: every value a check or a tool
 * acts on is equal (a window of 60s equals 1m, not 1d's calendar day; a
 * time zone by name), whatever the text they came from (comments, key
 * order, quoting, spacing: where each was written is not compared, nor the
 * ids storage assigns).  Tiers and actions compare in name order (the
 * loader sorts them); the limits of a list and the assignments in file
 * order.  0 if they differ or either is NULL.
 */
int rls__ruleset_same(const ruleset *a, const ruleset *b);

#endif
