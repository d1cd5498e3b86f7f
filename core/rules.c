/*
 * rules.c - the ruleset: freeing it, looking actions and tiers up by name,
 * and the builder helpers used by the YAML loader (config*.c).
 *
 * Ownership is flat: the ruleset owns its arrays, each action's limit and
 * tier arrays, each assignment's key and every time zone its limits point
 * to (rls__ruleset_zone loads each distinct zone name once).  One rls__ruleset_free
 * releases all of it, and works on a half-built ruleset as long as every
 * count (nactions, nlimits, ...) only covers initialised entries, which is
 * what lets the loader give up anywhere on out of memory.
 *
 * rls__config_parse sorts tiers and actions by name (byte order), so lookups are
 * binary searches; a ruleset built some other way and left unsorted still
 * works, because a failed search falls back to a linear scan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config_int.h"
#include "algo.h"
#include "rules.h"
#include "tz.h"

void rls__ruleset_free(ruleset *rs)
{
    if (!rs)
        return;
    for (int i = 0; i < rs->nactions; i++) {
        rule_action *a = &rs->actions[i];
        for (int j = 0; j < a->ntiers; j++)
            free(a->tiers[j].limits);
        free(a->tiers);
        free(a->limits);
    }
    free(rs->actions);
    free(rs->tiers);
    for (int i = 0; i < rs->nassignments; i++)
        free(rs->assignments[i].key);
    free(rs->assignments);
    for (int i = 0; i < rs->nzones_; i++)
        rls__tz_free(rs->zones_[i]);
    free(rs->zones_);
    free(rs);
}

static int action_cmp(const void *a, const void *b)
{
    return strcmp(((const rule_action *)a)->name,
                  ((const rule_action *)b)->name);
}

static int tier_cmp(const void *a, const void *b)
{
    return strcmp(((const rule_tier *)a)->name, ((const rule_tier *)b)->name);
}

static int action_key_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const rule_action *)elem)->name);
}

static int tier_key_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const rule_tier *)elem)->name);
}

/* The action called name, or NULL (also for a NULL rs or name).  The
 * pointer lives as long as the ruleset. */
const rule_action *rls__ruleset_action(const ruleset *rs, const char *name)
{
    const rule_action *a;
    if (!rs || !name || rs->nactions <= 0)
        return NULL;
    a = bsearch(name, rs->actions, (size_t)rs->nactions, sizeof *a,
                action_key_cmp);
    if (a)
        return a;
    for (int i = 0; i < rs->nactions; i++)
        if (strcmp(rs->actions[i].name, name) == 0)
            return &rs->actions[i];
    return NULL;
}

/* The tier called name, or NULL (also for a NULL rs or name, and for "").
 * The pointer lives as long as the ruleset. */
const rule_tier *rls__ruleset_tier(const ruleset *rs, const char *name)
{
    const rule_tier *t;
    if (!rs || !name || !*name || rs->ntiers <= 0)
        return NULL;
    t = bsearch(name, rs->tiers, (size_t)rs->ntiers, sizeof *t, tier_key_cmp);
    if (t)
        return t;
    for (int i = 0; i < rs->ntiers; i++)
        if (strcmp(rs->tiers[i].name, name) == 0)
            return &rs->tiers[i];
    return NULL;
}

void rls__ruleset_sort_tiers(ruleset *rs)
{
    if (rs->ntiers > 1)
        qsort(rs->tiers, (size_t)rs->ntiers, sizeof *rs->tiers, tier_cmp);
}

void rls__ruleset_sort(ruleset *rs)
{
    rls__ruleset_sort_tiers(rs);
    if (rs->nactions > 1)
        qsort(rs->actions, (size_t)rs->nactions, sizeof *rs->actions,
              action_cmp);
}

/* Contract: see config_int.h.  rls__tz_load reports out of memory only through
 * its reason text, so that is what tells -2 from -1. */
int rls__ruleset_zone(ruleset *rs, const char *name, const rls_tz **out,
                  const char **why)
{
    rls_tz *tz = NULL;
    rls_tz **grown;
    const char *reason = "invalid time zone";

    for (int i = 0; i < rs->nzones_; i++)
        if (strcmp(rls__tz_name(rs->zones_[i]), name) == 0) {
            *out = rs->zones_[i];
            return 0;
        }
    if (rls__config_fail_now())
        return -2;
    if (rls__tz_load(name, &tz, &reason) != 0) {
        *why = reason ? reason : "invalid time zone";
        return *why && strstr(*why, "memory") ? -2 : -1;
    }
    grown = rls__config_realloc(rs->zones_,
                            (size_t)(rs->nzones_ + 1) * sizeof *grown);
    if (!grown) {
        rls__tz_free(tz);
        return -2;
    }
    rs->zones_ = grown;
    rs->zones_[rs->nzones_++] = tz;
    *out = tz;
    return 0;
}

/* Contract in rules.h. */
void rls__rule_limit_sig(const rule_limit *l, char *buf, size_t size)
{
    const char *alg = rls__algo_name(l->algorithm);
    snprintf(buf, size, "%s/%d/%lld/%s/%d", alg ? alg : "?", l->window.calendar,
             (long long)l->window.ms, l->tz ? rls__tz_name(l->tz) : "UTC", l->anchor);
}

int rls__on_error_allows(const ruleset *rs, const char *action, int handle_allows)
{
    const rule_action *a = rs && action ? rls__ruleset_action(rs, action) : NULL;
    if (a && a->on_error != ONERR_INHERIT)
        return a->on_error == ONERR_ALLOW;
    if (rs && rs->on_error != ONERR_INHERIT)
        return rs->on_error == ONERR_ALLOW;
    return handle_allows;
}

int rls__action_wants_full(const rule_action *a)
{
    for (int t = -1; a && t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int i = 0; i < n; i++)
            if (ls[i].durability == DURA_FULL)
                return 1;
    }
    return 0;
}

/* ---- the same rules? ---------------------------------------------------- */

/*
 * What is compared is what a check and the tools act on; what is not is
 * where it was written (line, column) and what storage fills in (ids).  A
 * field added to these structs must be added here, or two rule sets that
 * differ only in it compare the same and an apply of the change stores
 * nothing: the sizes below stop the build until it is (LP64 only).
 */
#if UINTPTR_MAX == 0xffffffffffffffffu
_Static_assert(sizeof(rule_limit) == 328, "rule_limit changed: update limit_same()");
_Static_assert(sizeof(rule_action) == 112, "rule_action changed: update action_same()");
_Static_assert(sizeof(rule_tier) == 72, "rule_tier changed: update rls__ruleset_same()");
_Static_assert(sizeof(rule_assignment) == 144, "rule_assignment changed: update assign_same()");
_Static_assert(sizeof(ruleset) == 160, "ruleset changed: update rls__ruleset_same()");
#endif

uint64_t rls__ruleset_serial(ruleset *rs)
{
    static uint64_t last;   /* shared by every handle: atomic */
    if (!rs->serial_)
        rs->serial_ = __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
    return rs->serial_;
}

static int zone_same(const rls_tz *a, const rls_tz *b)
{
    return strcmp(a ? rls__tz_name(a) : "UTC", b ? rls__tz_name(b) : "UTC") == 0;
}

static int limit_same(const rule_limit *a, const rule_limit *b)
{
    return strcmp(a->name, b->name) == 0 && a->algorithm == b->algorithm &&
           a->limit == b->limit && a->window.ms == b->window.ms &&
           a->window.calendar == b->window.calendar && a->burst == b->burst &&
           zone_same(a->tz, b->tz) && a->anchor == b->anchor && a->nblock_for == b->nblock_for &&
           memcmp(a->block_for, b->block_for, (size_t)a->nblock_for * sizeof a->block_for[0]) == 0 &&
           a->overage_pct == b->overage_pct && a->mode == b->mode &&
           a->count_denied == b->count_denied && a->durability == b->durability;
}

static int limits_same(const rule_limit *a, int na, const rule_limit *b, int nb)
{
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++)
        if (!limit_same(&a[i], &b[i]))
            return 0;
    return 1;
}

static int action_same(const rule_action *a, const rule_action *b)
{
    if (strcmp(a->name, b->name) != 0 || a->key_kind != b->key_kind ||
        a->ipv4_prefix != b->ipv4_prefix || a->ipv6_prefix != b->ipv6_prefix ||
        a->on_error != b->on_error || a->ntiers != b->ntiers ||
        !limits_same(a->limits, a->nlimits, b->limits, b->nlimits))
        return 0;
    for (int t = 0; t < a->ntiers; t++)
        if (strcmp(a->tiers[t].tier, b->tiers[t].tier) != 0 ||
            !limits_same(a->tiers[t].limits, a->tiers[t].nlimits, b->tiers[t].limits,
                         b->tiers[t].nlimits))
            return 0;
    return 1;
}

static int assign_same(const rule_assignment *a, const rule_assignment *b)
{
    return strcmp(a->key, b->key) == 0 && strcmp(a->action, b->action) == 0 &&
           strcmp(a->tier, b->tier) == 0 && a->expires_ms == b->expires_ms;
}

/* Contract in rules.h. */
int rls__ruleset_same(const ruleset *a, const ruleset *b)
{
    if (!a || !b)
        return 0;
    if (a->version != b->version || strcmp(a->default_tier, b->default_tier) != 0 ||
        !zone_same(a->default_tz, b->default_tz) || a->on_error != b->on_error ||
        a->ntiers != b->ntiers || a->nactions != b->nactions ||
        a->nassignments != b->nassignments)
        return 0;
    for (int i = 0; i < a->ntiers; i++)
        if (strcmp(a->tiers[i].name, b->tiers[i].name) != 0 ||
            a->tiers[i].unlimited != b->tiers[i].unlimited ||
            a->tiers[i].blocked != b->tiers[i].blocked)
            return 0;
    for (int i = 0; i < a->nactions; i++)
        if (!action_same(&a->actions[i], &b->actions[i]))
            return 0;
    for (int i = 0; i < a->nassignments; i++)
        if (!assign_same(&a->assignments[i], &b->assignments[i]))
            return 0;
    return 1;
}
