/*
 * resolve.c - tier choice and limit resolution for one check (resolve.h).
 */
#include <string.h>
#include "resolve.h"

/* Larger is preferred: specificity, then action-specific, then dynamic. */
static int64_t cand_score(const assign_cand *c)
{
    int64_t s = (int64_t)rls__key_pattern_rank(&c->pat) * 4;
    if (c->action[0] != '\0')
        s += 2;
    if (c->dynamic)
        s += 1;
    return s;
}

void rls__resolve_tier(const ruleset *rs, const char *action, const char *key,
                  size_t keylen, const assign_cand *const lists[],
                  const int counts[], int nlists, int64_t now, tier_choice *out)
{
    const assign_cand *best = NULL;
    const rule_tier *best_def = NULL;
    int64_t best_score = -1;

    for (int l = 0; l < nlists; l++) {
        for (int i = 0; i < counts[l]; i++) {
            const assign_cand *c = &lists[l][i];
            if (c->expires_ms > 0 && c->expires_ms <= now)
                continue;
            if (c->action[0] != '\0' && strcmp(c->action, action) != 0)
                continue;
            const rule_tier *t = rls__ruleset_tier(rs, c->tier);
            if (!t)
                continue;  /* tier no longer defined: the assignment is inert */
            if (!rls__key_pattern_match(&c->pat, c->text, key, keylen))
                continue;
            int64_t s = cand_score(c);
            if (s > best_score) {
                best = c;
                best_def = t;
                best_score = s;
            }
        }
    }
    if (best) {
        out->tier = best->tier;
        out->def = best_def;
        out->source = best->pat.kind == PAT_EXACT ? TIER_FROM_EXACT
                                                  : TIER_FROM_PATTERN;
        out->by = best;
        return;
    }
    out->tier = rs->default_tier;
    out->def = rs->default_tier[0] ? rls__ruleset_tier(rs, rs->default_tier) : NULL;
    out->source = TIER_FROM_DEFAULT;
    out->by = NULL;
}

static void set_limit(resolved_limit *r, const rule_limit *def)
{
    r->def = def;
    r->limit = def->limit;
    r->burst = def->burst > 0 ? def->burst : def->limit;
    r->overridden = 0;
}

int rls__resolve_limits(const rule_action *act, const char *tier,
                   const override_in *ov, int nov, int64_t now,
                   resolved_limit *out, int max)
{
    int n = 0;
    const rule_tier_limits *tl = NULL;

    if (act->nlimits > max)
        return -1;
    for (int i = 0; i < act->nlimits; i++)
        set_limit(&out[n++], &act->limits[i]);

    for (int i = 0; tier && tier[0] && i < act->ntiers; i++)
        if (strcmp(act->tiers[i].tier, tier) == 0)
            tl = &act->tiers[i];
    for (int i = 0; tl && i < tl->nlimits; i++) {
        const rule_limit *rep = &tl->limits[i];
        int j = 0;
        while (j < n && strcmp(out[j].def->name, rep->name) != 0)
            j++;
        if (j == n) {
            if (n == max)
                return -1;
            n++;
        }
        set_limit(&out[j], rep);
    }

    for (int i = 0; i < nov; i++) {
        if (ov[i].expires_ms > 0 && ov[i].expires_ms <= now)
            continue;
        for (int j = 0; j < n; j++) {
            if (strcmp(out[j].def->name, ov[i].limit_name) != 0)
                continue;
            out[j].limit = ov[i].limit;
            if (out[j].def->burst <= 0)
                out[j].burst = ov[i].limit;
            out[j].overridden = 1;
        }
    }
    return n;
}
