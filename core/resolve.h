/*
 * resolve.h - from rules to the limits of one check: which tier a key is in,
 * and which limits (with per-key overrides) apply to it.  Pure: storage
 * supplies the per-key rows it read, resolve decides.
 */
#ifndef RLS_RESOLVE_H
#define RLS_RESOLVE_H

#include <stdint.h>
#include "keynorm.h"
#include "rules.h"

#define RESOLVE_MAX_LIMITS 32   /* limits of one action, tier replacements included */

/* A tier assignment candidate: an exact key or a pattern. */
typedef struct assign_cand {
    key_pattern pat;
    const char *text;     /* the pattern as written (NUL-terminated) */
    const char *action;   /* "" = every action */
    const char *tier;
    int64_t expires_ms;   /* 0 = never */
    int dynamic;          /* 1 set by an operator, 0 from the YAML file */
} assign_cand;

enum tier_source { TIER_FROM_DEFAULT = 0, TIER_FROM_PATTERN = 1, TIER_FROM_EXACT = 2 };

typedef struct tier_choice {
    const char *tier;        /* "" = no tier (the action's default limits) */
    const rule_tier *def;    /* NULL when tier is "" */
    int source;              /* enum tier_source */
    const assign_cand *by;   /* the assignment that decided, or NULL */
} tier_choice;

/*
 * Chooses the tier of `key` (normalised) for `action` at `now` among the
 * candidates of all the lists (e.g. the key's exact rows and the cached
 * patterns), in one ranking: an unexpired candidate for this action or for every action,
 * whose tier exists in rs, most specific first (exact > longer CIDR > CIDR >
 * longer prefix > prefix), then action-specific over every-action, then
 * dynamic over YAML.  Without a match, rs->default_tier.
 */
void rls__resolve_tier(const ruleset *rs, const char *action, const char *key,
                  size_t keylen, const assign_cand *const lists[],
                  const int counts[], int nlists, int64_t now, tier_choice *out);

/* One per-key override row. */
typedef struct override_in {
    const char *limit_name;
    int64_t limit;
    int64_t expires_ms;   /* 0 = never */
} override_in;

/* A limit as it applies to this check. */
typedef struct resolved_limit {
    const rule_limit *def;
    int64_t limit;        /* capacity after override */
    int64_t burst;        /* burst after override (bucket algorithms) */
    int overridden;
} resolved_limit;

/*
 * The limits of `act` for `tier` (replacements by name, new names added),
 * then unexpired overrides applied by limit name (an override sets the
 * capacity; a burst that was not given follows it).  Returns the number of
 * limits written to out (<= max), or -1 if more than max would be needed.
 */
int rls__resolve_limits(const rule_action *act, const char *tier,
                   const override_in *ov, int nov, int64_t now,
                   resolved_limit *out, int max);

#endif
