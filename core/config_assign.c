/*
 * config_assign.c - the assignments section: key patterns mapped to tiers.
 *
 *   assignments:
 *     - { key: "10.0.0.0/8", action: signup, tier: staff }
 *     - { key: "user:*", tier: pro, expires: "2027-01-01T00:00:00Z" }
 *
 * key (required) is an exact key, a CIDR or a "prefix*" glob, checked with
 * rls__key_pattern_parse.  action (optional, default every action) and tier
 * (required) must be defined in the file.  expires is an ISO-8601 UTC time
 * ("2027-01-01T00:00:00Z", optionally with .f to .fff) or epoch ms.
 *
 * Checks against the action, when one is named, so that no assignment is
 * silently dead: a CIDR needs an action with key: ip, and an exact key of an
 * ip or email action must be written the way the action normalises keys
 * (the resolver compares normalised keys).  A (key, action) pair may appear
 * once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config_int.h"
#include "keynorm.h"
#include "rlstore.h"

enum assign_field { SF_KEY, SF_ACTION, SF_TIER, SF_EXPIRES, SF_COUNT };

/* An exact or CIDR pattern must be able to match keys of the action. */
static void check_against_action(cfg *c, int node, const char *path,
                                 const key_pattern *pat, const char *key,
                                 const rule_action *act)
{
    char norm[RLS_KEY_MAX_LIMIT + 64], got[200];
    const char *why = "invalid";
    const char *kind = rls__key_kind_name(act->key_kind);
    int n;

    rls__config_describe(c, node, got, sizeof got);
    if (pat->kind == PAT_CIDR && act->key_kind != KEY_IP) {
        rls__config_err(c, node, path, "the CIDR pattern %s can only match "
                    "actions with key: ip; action '%s' has key: %s", got,
                    act->name, kind ? kind : "?");
        return;
    }
    if (pat->kind != PAT_EXACT || act->key_kind == KEY_STRING)
        return;
    n = rls__key_normalize(act->key_kind, act->ipv4_prefix, act->ipv6_prefix, key,
                      strlen(key), norm, sizeof norm, &why);
    if (n == -1) {
        rls__config_err(c, node, path, "%s is not a valid key for action '%s' "
                    "(key: %s): %s", got, act->name, kind ? kind : "?", why);
    } else if (n >= 0 && ((size_t)n != strlen(key) ||
                          memcmp(norm, key, (size_t)n) != 0)) {
        char want[200];
        snprintf(want, sizeof want, "%.80s", norm);
        rls__config_err(c, node, path, "%s never matches: action '%s' normalises "
                    "keys to '%s'", got, act->name, want);
    }
}

/* Reads one assignment into *a.  Returns 0 if valid. */
static int walk_one(cfg *c, int v, const char *path, rule_assignment *a)
{
    static const char *const fields[] = { "key", "action", "tier", "expires",
                                          NULL };
    char fp[CFG_PATH_MAX], got[200];
    const char *why = "invalid";
    int at[SF_COUNT], bad = 0, idx;
    key_pattern pat;
    const rule_action *act = NULL;

    if (rls__config_want(c, v, path, CN_MAP, "an assignment such as "
                     "{ key: \"user:*\", tier: pro }") < 0)
        return -1;
    for (int i = 0; i < SF_COUNT; i++)
        at[i] = -1;
    for (int k = c->nodes[v].first; k >= 0; k = rls__config_next_pair(c, k)) {
        if (c->nodes[k].skip)
            continue;
        idx = rls__config_field(c, k, path, fields);
        if (idx < 0)
            bad = 1;
        else
            at[idx] = c->nodes[k].next;
    }
    rls__config_path_field(fp, sizeof fp, path, "action");
    if (at[SF_ACTION] >= 0) {
        if (rls__config_name(c, at[SF_ACTION], fp, "an action name",
                         a->action) < 0) {
            bad = 1;
        } else if (!(act = rls__ruleset_action(c->rs, a->action))) {
            if (!c->actions_bad)
                rls__config_err(c, at[SF_ACTION], fp, "unknown action '%s'",
                            a->action);
            bad = 1;
        }
    }
    rls__config_path_field(fp, sizeof fp, path, "tier");
    if (at[SF_TIER] < 0) {
        rls__config_missing(c, v, path, "tier", NULL);
        bad = 1;
    } else if (rls__config_tier_ref(c, at[SF_TIER], fp, a->tier) < 0) {
        bad = 1;
    }
    rls__config_path_field(fp, sizeof fp, path, "expires");
    if (at[SF_EXPIRES] >= 0 &&
        rls__config_expires(c, at[SF_EXPIRES], fp, &a->expires_ms) < 0)
        bad = 1;
    rls__config_path_field(fp, sizeof fp, path, "key");
    if (at[SF_KEY] < 0) {
        rls__config_missing(c, v, path, "key", NULL);
        return -1;
    }
    int kn = at[SF_KEY];
    if (rls__config_want(c, kn, fp, CN_SCALAR, "a key, a CIDR such as "
                     "10.0.0.0/8 or a prefix such as \"user:*\"") < 0)
        return -1;
    const char *key = rls__config_str(c, kn);
    size_t len = c->nodes[kn].len;
    rls__config_describe(c, kn, got, sizeof got);
    if (len < 1 || len > RLS_KEY_MAX_LIMIT || strlen(key) != len) {
        rls__config_err(c, kn, fp, "expected a key of 1 to %d bytes without NUL; "
                    "got %s", RLS_KEY_MAX_LIMIT, got);
        return -1;
    }
    if (rls__key_pattern_parse(key, &pat, &why) != 0) {
        rls__config_err(c, kn, fp, "invalid key pattern %s (%s)", got, why);
        return -1;
    }
    if (act)
        check_against_action(c, kn, fp, &pat, key, act);
    a->key = rls__config_strndup(key, len);
    if (!a->key) {
        c->oom = 1;
        return -1;
    }
    return bad ? -1 : 0;
}

typedef struct aref {
    const char *key;
    const char *action;
    int line, col, i;
} aref;

static int aref_cmp(const void *pa, const void *pb)
{
    const aref *a = pa, *b = pb;
    int r = strcmp(a->key, b->key);
    if (!r)
        r = strcmp(a->action, b->action);
    if (!r)
        r = (a->i > b->i) - (a->i < b->i);
    return r;
}

/* Each (key, action) once: sorts references to the good assignments and
 * reports every repetition at its own place. */
static void check_duplicates(cfg *c, const rule_assignment *list,
                             const int *nodes, int n)
{
    aref *refs = rls__config_malloc((size_t)n * sizeof *refs);
    int m = 0;
    if (!refs) {
        c->oom = 1;
        return;
    }
    for (int i = 0; i < n; i++)
        if (list[i].key && nodes[i] >= 0) {
            refs[m].key = list[i].key;
            refs[m].action = list[i].action;
            refs[m].line = c->nodes[nodes[i]].line;
            refs[m].col = c->nodes[nodes[i]].col;
            refs[m].i = i;
            m++;
        }
    qsort(refs, (size_t)m, sizeof *refs, aref_cmp);
    for (int i = 1, first = 0; i < m; i++) {
        if (strcmp(refs[i].key, refs[first].key) != 0 ||
            strcmp(refs[i].action, refs[first].action) != 0) {
            first = i;
            continue;
        }
        char path[CFG_PATH_MAX];
        rls__config_path_index(path, sizeof path, "assignments", refs[i].i);
        rls__config_err_at(c, refs[i].line, refs[i].col, "%s: duplicate "
                       "assignment of key '%.60s' for %s%s%s (first at "
                       "%d:%d)", path, refs[i].key,
                       refs[i].action[0] ? "action '" : "every action",
                       refs[i].action, refs[i].action[0] ? "'" : "",
                       refs[first].line, refs[first].col);
    }
    free(refs);
}

/* Contract: see config_int.h. */
void rls__config_assignments(cfg *c, int v)
{
    ruleset *rs = c->rs;
    char path[CFG_PATH_MAX];
    int n, i = 0, *nodes;

    if (rls__config_is_null(c, v))
        return;
    if (rls__config_want(c, v, "assignments", CN_SEQ, "a list of assignments "
                     "such as [ { key: \"user:*\", tier: pro } ]") < 0)
        return;
    n = c->nodes[v].n;
    if (n > CFG_MAX_ASSIGNMENTS) {
        rls__config_err(c, v, "assignments", "%d assignments; at most %d are "
                    "accepted", n, CFG_MAX_ASSIGNMENTS);
        return;
    }
    if (n == 0)
        return;
    rs->assignments = rls__config_calloc((size_t)n, sizeof *rs->assignments);
    nodes = rls__config_malloc((size_t)n * sizeof *nodes);
    if (!rs->assignments || !nodes) {
        free(nodes);
        c->oom = 1;
        return;
    }
    for (int e = c->nodes[v].first; e >= 0 && !c->oom;
         e = c->nodes[e].next, i++) {
        rls__config_path_index(path, sizeof path, "assignments", i);
        /* counted even if invalid: its key belongs to the ruleset now */
        rule_assignment *a = &rs->assignments[rs->nassignments++];
        nodes[i] = walk_one(c, e, path, a) == 0 ? e : -1;
    }
    if (!c->oom)
        check_duplicates(c, rs->assignments, nodes, rs->nassignments);
    free(nodes);
}
