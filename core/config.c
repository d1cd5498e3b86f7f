/*
 * config.c - the YAML rule loader: rls__config_parse() and the walk of the
 * document's top level (version, defaults, tiers, actions, assignments).
 *
 * Pipeline: config_yaml.c builds a node tree from libyaml's events; this
 * file walks it section by section (tiers first, so that every reference to
 * a tier can be checked wherever it appears in the file), config_limit.c
 * reads each limit and config_value.c each scalar.  Every problem is
 * recorded as "path: message" at a line and column and the walk goes on, so
 * one run reports every error of the file; a ruleset is returned only if
 * there were none.
 *
 * Format decisions beyond DESIGN.md section 6 (see also config_limit.c):
 *   - version is required and must be 1; actions is required and must
 *     define at least one action; defaults, tiers, assignments are optional
 *     and may be empty (null).
 *   - A tier may be written "name: {}" or just "name:".
 *   - An action's tiers entry may be an empty list (no change).
 *   - At most RESOLVE_MAX_LIMITS distinct limits per action and tier (the
 *     resolver's bound), 16 nesting levels, 1000 tiers, 10000 actions,
 *     100000 assignments, 1000000 YAML nodes.
 *   - ipv4_prefix/ipv6_prefix are refused unless key: ip.
 *   - An exact assignment key for an action with key: ip or email must be
 *     written normalised (as the action normalises keys), or it would never
 *     match; a CIDR pattern is refused for an action whose key is not ip.
 *   - The same (key, action) may be assigned only once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config_int.h"
#include "keynorm.h"
#include "resolve.h"
#include "rlstore.h"

/* ---- allocation with fault injection ---------------------------------- */

static _Thread_local long fail_countdown = -1;

void rls__config_fail_after(long n)
{
    fail_countdown = n;
}

int rls__config_fail_now(void)
{
    if (fail_countdown < 0)
        return 0;
    if (fail_countdown == 0)
        return 1;
    fail_countdown--;
    return 0;
}

void *rls__config_malloc(size_t size)
{
    return rls__config_fail_now() ? NULL : malloc(size ? size : 1);
}

void *rls__config_calloc(size_t n, size_t size)
{
    return rls__config_fail_now() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *rls__config_realloc(void *p, size_t size)
{
    return rls__config_fail_now() ? NULL : realloc(p, size ? size : 1);
}

char *rls__config_strndup(const char *s, size_t len)
{
    char *d = rls__config_malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

/* ---- errors ------------------------------------------------------------ */

/* Drops an incomplete UTF-8 sequence that truncation left at the end. */
/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/*
 * Messages quote the input (keys, names), which may hold any bytes: every
 * control byte, DEL and byte that is not part of valid UTF-8 becomes '?',
 * so a message is safe to print and valid UTF-8 (a sequence cut by the
 * message's size limit included).
 */
static void msg_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

/* The extent of the input as libyaml counts lines (LF, CR, CRLF, NEL, LS,
 * PS break a line). */
static void measure(cfg *c, const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t start = 0;
    int breaks = 0, maxc = 1;
    for (size_t i = 0; i < len; i++) {
        size_t w = s[i] == '\r' && i + 1 < len && s[i + 1] == '\n' ? 2
                   : s[i] == '\n' || s[i] == '\r' ? 1
                   : s[i] == 0xc2 && i + 1 < len && s[i + 1] == 0x85 ? 2
                   : s[i] == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
                             (s[i + 2] == 0xa8 || s[i + 2] == 0xa9) ? 3 : 0;
        if (!w)
            continue;
        if ((int)(i - start) + 1 > maxc)
            maxc = (int)(i - start) + 1;
        breaks++;
        i += w - 1;
        start = i + 1;
    }
    if ((int)(len - start) + 1 > maxc)
        maxc = (int)(len - start) + 1;
    c->max_line = breaks + 1;
    c->max_col = maxc;
}

static void add_err(cfg *c, int line, int col, const char *path,
                    const char *fmt, va_list ap)
{
    config_errors *e = c->errs;
    config_error *x;
    size_t o = 0;

    e->total++;
    if (e->n >= CONFIG_MAX_ERRORS)
        return;
    x = &e->e[e->n++];
    if (line > 0 && c->max_line > 0) {
        if (line > c->max_line)
            line = c->max_line;
        if (col > c->max_col)
            col = c->max_col;
        if (col < 1)
            col = 1;
    }
    x->line = line;
    x->column = line > 0 ? col : 0;
    x->msg[0] = '\0';
    x->msg_at = 0;
    if (path && *path) {
        int k = snprintf(x->msg, sizeof x->msg, "%s: ", path);
        o = k < 0 ? 0 : (size_t)k < sizeof x->msg ? (size_t)k
                                                   : sizeof x->msg - 1;
        x->msg_at = (int)o;
    }
    vsnprintf(x->msg + o, sizeof x->msg - o, fmt, ap);
    msg_clean(x->msg);
}

void rls__config_err(cfg *c, int node, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (node >= 0)
        add_err(c, c->nodes[node].line, c->nodes[node].col, path, fmt, ap);
    else
        add_err(c, 0, 0, path, fmt, ap);
    va_end(ap);
}

void rls__config_err_at(cfg *c, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_err(c, line, col, NULL, fmt, ap);
    va_end(ap);
}

/* Stable sort of the stored errors by place (errors without one first). */
static void sort_errors(config_errors *e)
{
    for (int i = 1; i < e->n; i++) {
        config_error x = e->e[i];
        int j = i;
        while (j > 0 && (e->e[j - 1].line > x.line ||
                         (e->e[j - 1].line == x.line &&
                          e->e[j - 1].column > x.column))) {
            e->e[j] = e->e[j - 1];
            j--;
        }
        e->e[j] = x;
    }
}

int rls__config_error_format(const config_error *e, const char *file, char *buf,
                        size_t size)
{
    if (!e || (!buf && size)) {
        if (buf && size)
            buf[0] = '\0';
        return -1;
    }
    if (e->line > 0 && file)
        return snprintf(buf, size, "%s:%d:%d: %s", file, e->line, e->column,
                        e->msg);
    if (e->line > 0)
        return snprintf(buf, size, "%d:%d: %s", e->line, e->column, e->msg);
    if (file)
        return snprintf(buf, size, "%s: %s", file, e->msg);
    return snprintf(buf, size, "%s", e->msg);
}

/* ---- tiers ------------------------------------------------------------- */

/* Contract: see config_int.h. */
int rls__config_tier_ref(cfg *c, int node, const char *path,
                     char out[RULES_NAME_MAX + 1])
{
    char list[120], got[200];
    size_t o = 0;
    if (rls__config_name(c, node, path, "a tier name", out) < 0)
        return -1;
    if (rls__ruleset_tier(c->rs, out))
        return 0;
    if (c->tiers_bad)
        return -1;
    rls__config_describe(c, node, got, sizeof got);
    if (c->rs->ntiers == 0) {
        rls__config_err(c, node, path, "unknown tier %s (no tiers are defined; "
                    "define it under 'tiers')", got);
        return -1;
    }
    list[0] = '\0';
    for (int i = 0; i < c->rs->ntiers && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s",
                              i ? ", " : "", c->rs->tiers[i].name);
    rls__config_err(c, node, path, "unknown tier %s; defined tiers: %s", got,
                list);
    return -1;
}

static void walk_tier(cfg *c, int v, const char *path, rule_tier *t)
{
    static const char *const fields[] = { "unlimited", "blocked", NULL };
    char fp[CFG_PATH_MAX];
    int *dst;

    if (rls__config_is_null(c, v))
        return;  /* "free:" = "free: {}" */
    if (rls__config_want(c, v, path, CN_MAP, "a tier: a mapping such as {} or "
                     "{ unlimited: true }") < 0)
        return;
    for (int k = c->nodes[v].first; k >= 0; k = rls__config_next_pair(c, k)) {
        if (c->nodes[k].skip)
            continue;
        int f = rls__config_field(c, k, path, fields);
        if (f < 0)
            continue;
        dst = f == 0 ? &t->unlimited : &t->blocked;
        rls__config_path_key(fp, sizeof fp, path, c, k);
        rls__config_bool(c, c->nodes[k].next, fp, dst);
    }
    if (t->unlimited && t->blocked)
        rls__config_err(c, v, path, "a tier cannot be both unlimited and blocked");
}

static void walk_tiers(cfg *c, int v)
{
    ruleset *rs = c->rs;
    char path[CFG_PATH_MAX];
    int npairs;

    if (rls__config_is_null(c, v))
        return;
    if (rls__config_want(c, v, "tiers", CN_MAP, "a mapping of tier names to "
                     "tiers such as { free: {}, pro: {} }") < 0) {
        c->tiers_bad = 1;
        return;
    }
    npairs = c->nodes[v].n / 2;
    if (npairs > CFG_MAX_TIERS) {
        rls__config_err(c, v, "tiers", "%d tiers defined; at most %d are "
                    "accepted", npairs, CFG_MAX_TIERS);
        c->tiers_bad = 1;
        return;
    }
    if (npairs == 0)
        return;
    rs->tiers = rls__config_calloc((size_t)npairs, sizeof *rs->tiers);
    if (!rs->tiers) {
        c->oom = 1;
        return;
    }
    for (int k = c->nodes[v].first; k >= 0; k = rls__config_next_pair(c, k)) {
        rule_tier *t = &rs->tiers[rs->ntiers];
        if (c->nodes[k].skip)
            continue;
        rls__config_path_key(path, sizeof path, "tiers", c, k);
        memset(t, 0, sizeof *t);
        int ok = rls__config_name(c, k, "tiers", "a tier name", t->name) == 0;
        walk_tier(c, c->nodes[k].next, path, t);
        if (ok)
            rs->ntiers++;
    }
    rls__ruleset_sort_tiers(rs);
}

/* ---- defaults ---------------------------------------------------------- */

static const char *const on_error_names[] = { "deny", "allow", NULL };

static void walk_defaults(cfg *c, int v)
{
    static const char *const fields[] = { "tier", "timezone", "on_error",
                                          NULL };
    char fp[CFG_PATH_MAX];
    int idx;

    if (rls__config_is_null(c, v))
        return;
    if (rls__config_want(c, v, "defaults", CN_MAP, "a mapping such as "
                     "{ tier: free, timezone: UTC, on_error: deny }") < 0)
        return;
    for (int k = c->nodes[v].first; k >= 0; k = rls__config_next_pair(c, k)) {
        int val = c->nodes[k].next;
        if (c->nodes[k].skip)
            continue;
        int f = rls__config_field(c, k, "defaults", fields);
        rls__config_path_key(fp, sizeof fp, "defaults", c, k);
        if (f == 0)
            rls__config_tier_ref(c, val, fp, c->rs->default_tier);
        else if (f == 1)
            rls__config_zone(c, val, fp, &c->rs->default_tz);
        else if (f == 2 && rls__config_enum(c, val, fp, on_error_names, &idx) == 0)
            c->rs->on_error = idx == 0 ? ONERR_DENY : ONERR_ALLOW;
    }
}

/* ---- actions ----------------------------------------------------------- */

/* Reports a repeated limit name in list[0..n) (the last one is new). */
static int dup_limit(cfg *c, int node, const char *path,
                     const rule_limit *list, int n)
{
    const rule_limit *l = &list[n - 1];
    for (int i = 0; i < n - 1 && l->name[0]; i++)
        if (strcmp(list[i].name, l->name) == 0) {
            rls__config_err(c, node, path, "duplicate limit name '%s' (first "
                        "defined at %d:%d)", l->name, list[i].line,
                        list[i].column);
            return 1;
        }
    return 0;
}

/* At most RULES_MEMORY_LIMITS_MAX memory-class limits in what one check
 * decides: ls (the action's, or a tier's) and the action's defaults that
 * a tier's list does not replace by name (defs NULL: ls alone). */
static void memory_bound(cfg *c, int v, const char *path, const rule_limit *ls, int n,
                         const rule_limit *defs, int ndefs)
{
    int mem = 0;
    for (int i = 0; i < n; i++)
        mem += ls[i].durability == DURA_MEMORY;
    for (int j = 0; j < ndefs; j++) {
        int replaced = 0;
        for (int i = 0; i < n; i++)
            replaced |= strcmp(ls[i].name, defs[j].name) == 0;
        mem += !replaced && defs[j].durability == DURA_MEMORY;
    }
    if (mem > RULES_MEMORY_LIMITS_MAX)
        rls__config_err(c, v, path, "%d limits of `durability: memory` in one check; at most "
                        "%d are accepted (a check locks them together in the shared-memory "
                        "table)", mem, RULES_MEMORY_LIMITS_MAX);
}

/* The default limits: returns 0, or -1 if the list itself is unusable
 * (tier replacement lists are then not checked against it). */
static int walk_limits(cfg *c, int v, const char *path, rule_action *act,
                       unsigned char *ok)
{
    char lp[CFG_PATH_MAX];
    int i = 0;

    if (rls__config_want(c, v, path, CN_SEQ, "a list of limits such as "
                     "[ { name: daily, limit: 20, window: 1d } ]") < 0)
        return -1;
    if (c->nodes[v].n < 1 || c->nodes[v].n > RESOLVE_MAX_LIMITS) {
        rls__config_err(c, v, path, "expected 1 to %d limits; got %d",
                    RESOLVE_MAX_LIMITS, c->nodes[v].n);
        return -1;
    }
    act->limits = rls__config_calloc((size_t)c->nodes[v].n, sizeof *act->limits);
    if (!act->limits) {
        c->oom = 1;
        return -1;
    }
    for (int e = c->nodes[v].first; e >= 0; e = c->nodes[e].next, i++) {
        rls__config_path_index(lp, sizeof lp, path, i);
        ok[i] = rls__config_limit(c, e, lp, NULL, NULL, -1,
                              &act->limits[act->nlimits]) == 0;
        act->nlimits++;
        if (dup_limit(c, e, lp, act->limits, act->nlimits))
            ok[i] = 0;
    }
    memory_bound(c, v, path, act->limits, act->nlimits, NULL, 0);
    return 0;
}

/* One list of actions.<a>.tiers: limits replacing or adding to defaults. */
static void walk_tier_list(cfg *c, int k, const char *path, rule_action *act,
                           const unsigned char *ok)
{
    rule_tier_limits *tl = &act->tiers[act->ntiers];
    int v = c->nodes[k].next, i = 0, added = 0;
    char lp[CFG_PATH_MAX];

    memset(tl, 0, sizeof *tl);
    if (rls__config_tier_ref(c, k, path, tl->tier) < 0)
        tl->tier[0] = '\0';
    rls__config_path_key(lp, sizeof lp, path, c, k);
    if (rls__config_is_null(c, v))
        return;
    if (rls__config_want(c, v, lp, CN_SEQ, "a list of limits replacing or "
                     "adding to the action's limits") < 0)
        return;
    if (c->nodes[v].n > RESOLVE_MAX_LIMITS) {
        rls__config_err(c, v, lp, "expected at most %d limits; got %d",
                    RESOLVE_MAX_LIMITS, c->nodes[v].n);
        return;
    }
    if (c->nodes[v].n == 0) {
        act->ntiers++;
        return;
    }
    tl->limits = rls__config_calloc((size_t)c->nodes[v].n, sizeof *tl->limits);
    if (!tl->limits) {
        c->oom = 1;
        return;
    }
    act->ntiers++;
    for (int e = c->nodes[v].first; e >= 0; e = c->nodes[e].next, i++) {
        char ep[CFG_PATH_MAX];
        rule_limit *l = &tl->limits[tl->nlimits];
        rls__config_path_index(ep, sizeof ep, lp, i);
        rls__config_limit(c, e, ep, act->limits, ok, act->nlimits, l);
        tl->nlimits++;
        if (dup_limit(c, e, ep, tl->limits, tl->nlimits))
            continue;
        int known = 0;
        for (int j = 0; j < act->nlimits; j++)
            known |= strcmp(act->limits[j].name, l->name) == 0;
        added += !known;
    }
    if (act->nlimits + added > RESOLVE_MAX_LIMITS)
        rls__config_err(c, v, lp, "with this tier the action would have %d "
                    "limits; at most %d are accepted", act->nlimits + added,
                    RESOLVE_MAX_LIMITS);
    else
        memory_bound(c, v, lp, tl->limits, tl->nlimits, act->limits, act->nlimits);
}

static void walk_action_tiers(cfg *c, int v, const char *path,
                              rule_action *act, const unsigned char *ok)
{
    int npairs;
    if (rls__config_is_null(c, v))
        return;
    if (rls__config_want(c, v, path, CN_MAP, "a mapping of tier names to lists "
                     "of limits") < 0)
        return;
    npairs = c->nodes[v].n / 2;
    if (npairs == 0)
        return;
    if (npairs > CFG_MAX_TIERS) {
        rls__config_err(c, v, path, "expected at most %d tiers; got %d",
                    CFG_MAX_TIERS, npairs);
        return;
    }
    act->tiers = rls__config_calloc((size_t)npairs, sizeof *act->tiers);
    if (!act->tiers) {
        c->oom = 1;
        return;
    }
    for (int k = c->nodes[v].first; k >= 0 && !c->oom;
         k = rls__config_next_pair(c, k))
        if (!c->nodes[k].skip)
            walk_tier_list(c, k, path, act, ok);
}

enum action_field { AF_KEY, AF_IPV4, AF_IPV6, AF_ON_ERROR, AF_LIMITS,
                    AF_TIERS, AF_COUNT };

static void walk_action(cfg *c, int v, const char *path, rule_action *act)
{
    static const char *const fields[] = { "key", "ipv4_prefix", "ipv6_prefix",
                                          "on_error", "limits", "tiers", NULL };
    static const char *const kinds[] = { "string", "ip", "email", NULL };
    unsigned char ok[RESOLVE_MAX_LIMITS];
    char fp[CFG_PATH_MAX];
    int at[AF_COUNT], idx;
    int64_t n;

    act->key_kind = KEY_STRING;
    act->ipv4_prefix = 32;
    act->ipv6_prefix = 128;
    act->on_error = ONERR_INHERIT;
    if (rls__config_want(c, v, path, CN_MAP, "an action: a mapping with key and "
                     "limits") < 0)
        return;
    for (int i = 0; i < AF_COUNT; i++)
        at[i] = -1;
    for (int k = c->nodes[v].first; k >= 0; k = rls__config_next_pair(c, k)) {
        if (c->nodes[k].skip)
            continue;
        idx = rls__config_field(c, k, path, fields);
        if (idx >= 0)
            at[idx] = c->nodes[k].next;
    }
    rls__config_path_field(fp, sizeof fp, path, "key");
    if (at[AF_KEY] >= 0 && rls__config_enum(c, at[AF_KEY], fp, kinds, &idx) == 0)
        act->key_kind = rls__key_kind_from_name(kinds[idx]);
    for (int f = AF_IPV4; f <= AF_IPV6; f++) {
        const char *name = fields[f];
        if (at[f] < 0)
            continue;
        rls__config_path_field(fp, sizeof fp, path, name);
        if (act->key_kind != KEY_IP) {
            rls__config_err(c, at[f], fp, "%s applies only to actions with "
                        "key: ip", name);
        } else if (rls__config_int(c, at[f], fp, 0, f == AF_IPV4 ? 32 : 128,
                               &n) == 0) {
            if (f == AF_IPV4)
                act->ipv4_prefix = (int)n;
            else
                act->ipv6_prefix = (int)n;
        }
    }
    rls__config_path_field(fp, sizeof fp, path, "on_error");
    if (at[AF_ON_ERROR] >= 0 &&
        rls__config_enum(c, at[AF_ON_ERROR], fp, on_error_names, &idx) == 0)
        act->on_error = idx == 0 ? ONERR_DENY : ONERR_ALLOW;
    rls__config_path_field(fp, sizeof fp, path, "limits");
    if (at[AF_LIMITS] < 0) {
        rls__config_missing(c, v, path, "limits", NULL);
        return;
    }
    if (walk_limits(c, at[AF_LIMITS], fp, act, ok) < 0 || c->oom)
        return;
    rls__config_path_field(fp, sizeof fp, path, "tiers");
    if (at[AF_TIERS] >= 0)
        walk_action_tiers(c, at[AF_TIERS], fp, act, ok);
}

static void walk_actions(cfg *c, int v)
{
    ruleset *rs = c->rs;
    char path[CFG_PATH_MAX];
    int npairs;

    c->actions_bad = 1;
    if (rls__config_want(c, v, "actions", CN_MAP, "a mapping of action names to "
                     "actions") < 0)
        return;
    npairs = c->nodes[v].n / 2;
    if (npairs < 1 || npairs > CFG_MAX_ACTIONS) {
        rls__config_err(c, v, "actions", "expected 1 to %d actions; got %d",
                    CFG_MAX_ACTIONS, npairs);
        return;
    }
    rs->actions = rls__config_calloc((size_t)npairs, sizeof *rs->actions);
    if (!rs->actions) {
        c->oom = 1;
        return;
    }
    c->actions_bad = 0;
    for (int k = c->nodes[v].first; k >= 0 && !c->oom;
         k = rls__config_next_pair(c, k)) {
        rule_action *act = &rs->actions[rs->nactions];
        if (c->nodes[k].skip)
            continue;
        rls__config_path_key(path, sizeof path, "actions", c, k);
        /* counted even if invalid: its arrays belong to the ruleset now */
        rs->nactions++;
        rls__config_name(c, k, "actions", "an action name", act->name);
        walk_action(c, c->nodes[k].next, path, act);
    }
}

/* ---- the top level (assignments: config_assign.c) ---------------------- */

enum root_field { RF_VERSION, RF_DEFAULTS, RF_TIERS, RF_ACTIONS,
                  RF_ASSIGNMENTS, RF_COUNT };

static void walk_root(cfg *c)
{
    static const char *const fields[] = { "version", "defaults", "tiers",
                                          "actions", "assignments", NULL };
    int at[RF_COUNT], root = c->root, idx;
    int64_t version;
    const char *why = "";

    if (root < 0 || rls__config_is_null(c, root)) {
        rls__config_err_at(c, 0, 0, "empty configuration");
        return;
    }
    if (rls__config_want(c, root, NULL, CN_MAP, "a mapping with version, tiers, "
                     "actions and assignments at the top level") < 0)
        return;
    for (int i = 0; i < RF_COUNT; i++)
        at[i] = -1;
    for (int k = c->nodes[root].first; k >= 0; k = rls__config_next_pair(c, k)) {
        if (c->nodes[k].skip)
            continue;
        idx = rls__config_field(c, k, NULL, fields);
        if (idx >= 0)
            at[idx] = c->nodes[k].next;
    }
    if (at[RF_VERSION] < 0)
        rls__config_missing(c, root, NULL, "version", "(write version: 1)");
    else if (rls__config_int(c, at[RF_VERSION], "version", 0, INT64_MAX,
                         &version) == 0 && version != 1)
        rls__config_err(c, at[RF_VERSION], "version", "unsupported version %lld; "
                    "this library reads version 1", (long long)version);
    if (rls__ruleset_zone(c->rs, "UTC", &c->rs->default_tz, &why) != 0) {
        c->oom = 1;  /* UTC never needs the file system */
        return;
    }
    if (at[RF_TIERS] >= 0)
        walk_tiers(c, at[RF_TIERS]);
    if (at[RF_DEFAULTS] >= 0 && !c->oom)
        walk_defaults(c, at[RF_DEFAULTS]);
    if (at[RF_ACTIONS] < 0) {
        rls__config_missing(c, root, NULL, "actions", NULL);
        c->actions_bad = 1;
    } else if (!c->oom) {
        walk_actions(c, at[RF_ACTIONS]);
        rls__ruleset_sort(c->rs);  /* assignments look actions up */
    }
    if (at[RF_ASSIGNMENTS] >= 0 && !c->oom)
        rls__config_assignments(c, at[RF_ASSIGNMENTS]);
}

/* Contract: see config.h. */
int rls__config_parse(const char *text, size_t len, ruleset **out,
                 config_errors *errs)
{
    config_errors local;
    cfg c;
    int rc;

    if (out)
        *out = NULL;
    memset(&c, 0, sizeof c);
    c.errs = errs ? errs : &local;
    c.errs->n = 0;
    c.errs->total = 0;
    c.root = -1;
    if (!out || (!text && len)) {
        rls__config_err_at(&c, 0, 0, "invalid arguments");
        return -1;
    }
    if (len > CONFIG_MAX_BYTES) {
        rls__config_err_at(&c, 0, 0, "the configuration is %zu bytes; at most %u "
                       "are accepted", len, CONFIG_MAX_BYTES);
        return -1;
    }
    measure(&c, text, len);
    c.rs = rls__config_calloc(1, sizeof *c.rs);
    if (!c.rs) {
        rc = -2;
        goto out;
    }
    c.rs->version = 1;
    c.rs->on_error = ONERR_INHERIT;
    rc = rls__config_load_yaml(&c, text ? text : "", len);
    if (rc == 0)
        walk_root(&c);
    if (rc == 0 && (c.oom || c.errs->total > 0))
        rc = c.oom ? -2 : -1;
out:
    rls__config_tree_free(&c);
    if (rc == -2) {
        c.errs->n = 0;
        c.errs->total = 0;
        rls__config_err_at(&c, 0, 0, "out of memory");
    }
    if (rc != 0) {
        rls__ruleset_free(c.rs);
        sort_errors(c.errs);
        return rc;
    }
    rls__ruleset_sort(c.rs);
    *out = c.rs;
    return 0;
}

