/*
 * yamledit.c - what rltop reads from a rule set with the reader of
 * yamlite.c (tiers, the `limit:` values written in it) and the one edit it
 * makes: a `limit:` value changed in place.  Every edit is verified by
 * parsing the result again and comparing it with the original, node by
 * node: only the one value may differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yamlite.h"

/* A plain decimal integer without sign or leading zeros (except "0"). */
static int plain_int(const yl_node *v, int64_t *out)
{
    int64_t x = 0;
    if (!v || v->type != YL_SCALAR || v->quoted || !v->text[0] ||
        (v->text[0] == '0' && v->text[1]))
        return 0;
    for (const char *c = v->text; *c; c++) {
        if (*c < '0' || *c > '9' || x > (INT64_MAX - 9) / 10)
            return 0;
        x = x * 10 + (*c - '0');
    }
    *out = x;
    return 1;
}

static void add_limits(const char *action, const char *tier, const yl_node *seq,
                       yl_limit **out, int *n, int *cap, int *oom)
{
    for (int i = 0; seq && seq->type == YL_SEQ && i < seq->n && !*oom; i++) {
        const yl_node *item = seq->vals[i];
        const char *name = yl_text(item, "name");
        const yl_node *lim = yl_get(item, "limit");
        int64_t v;
        if (!name || strlen(name) >= 64 || !plain_int(lim, &v))
            continue;
        if (*n == *cap) {
            int nc = *cap ? *cap * 2 : 16;
            yl_limit *nl = realloc(*out, sizeof *nl * (size_t)nc);
            if (!nl) {
                *oom = 1;
                return;
            }
            *out = nl;
            *cap = nc;
        }
        yl_limit *l = &(*out)[(*n)++];
        snprintf(l->action, sizeof l->action, "%s", action);
        snprintf(l->tier, sizeof l->tier, "%s", tier);
        snprintf(l->name, sizeof l->name, "%s", name);
        l->value = v;
        l->start = lim->start;
        l->end = lim->end;
    }
}

int yl_limits(const char *text, size_t len, yl_limit **out, int *n, char *err, size_t errsize)
{
    yl_node *root;
    int cap = 0, oom = 0;
    *out = NULL;
    *n = 0;
    if (yl_parse(text, len, &root, err, errsize) != 0)
        return -1;
    const yl_node *acts = yl_get(root, "actions");
    for (int a = 0; acts && acts->type == YL_MAP && a < acts->n && !oom; a++) {
        const char *an = acts->keys[a]->text;
        const yl_node *act = acts->vals[a];
        if (strlen(an) >= 64)
            continue;
        add_limits(an, "", yl_get(act, "limits"), out, n, &cap, &oom);
        const yl_node *tiers = yl_get(act, "tiers");
        for (int t = 0; tiers && tiers->type == YL_MAP && t < tiers->n && !oom; t++)
            if (strlen(tiers->keys[t]->text) < 64)
                add_limits(an, tiers->keys[t]->text, tiers->vals[t], out, n, &cap, &oom);
    }
    yl_free(root);
    if (oom) {
        free(*out);
        *out = NULL;
        *n = 0;
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    return 0;
}

int yl_tiers(const char *text, size_t len, char (*names)[64], int max, char *def_tier,
             size_t def_size, char *err, size_t errsize)
{
    yl_node *root;
    int n = 0;
    if (yl_parse(text, len, &root, err, errsize) != 0)
        return -1;
    const yl_node *tiers = yl_get(root, "tiers");
    const char *def = yl_text(yl_get(root, "defaults"), "tier");
    snprintf(def_tier, def_size, "%s", def && *def ? def : "");
    for (int i = 0; tiers && tiers->type == YL_MAP && i < tiers->n && n < max; i++)
        if (strlen(tiers->keys[i]->text) < 64)
            snprintf(names[n++], 64, "%s", tiers->keys[i]->text);
    if (def && *def && strlen(def) < 64 && n < max) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found |= strcmp(names[i], def) == 0;
        if (!found)
            snprintf(names[n++], 64, "%s", def);
    }
    yl_free(root);
    return n;
}

/* ---- the edit ------------------------------------------------------------------ */

/* The `limit:` node of (action, tier, name), or NULL with err set. */
static const yl_node *find_limit(const yl_node *root, const char *action, const char *tier,
                                 const char *name, char *err, size_t errsize)
{
    const yl_node *act = yl_get(yl_get(root, "actions"), action);
    const yl_node *seq, *item = NULL;
    if (!act || act->type != YL_MAP) {
        snprintf(err, errsize, "action '%s' is not in the active rules", action);
        return NULL;
    }
    if (*tier) {
        const yl_node *tiers = yl_get(act, "tiers");
        seq = yl_get(tiers, tier);
        if (!seq) {
            snprintf(err, errsize, "action '%s' has no limits of its own for tier '%s': the tier "
                     "uses the default limits", action, tier);
            return NULL;
        }
    } else {
        seq = yl_get(act, "limits");
    }
    for (int i = 0; seq && seq->type == YL_SEQ && i < seq->n && !item; i++) {
        const char *n = yl_text(seq->vals[i], "name");
        if (n && strcmp(n, name) == 0)
            item = seq->vals[i];
    }
    if (!item) {
        if (*tier)
            snprintf(err, errsize, "tier '%s' of action '%s' does not replace limit '%s': it uses "
                     "the default limit", tier, action, name);
        else
            snprintf(err, errsize, "action '%s' has no default limit '%s'", action, name);
        return NULL;
    }
    const yl_node *lim = yl_get(item, "limit");
    int64_t v;
    if (!lim) {
        snprintf(err, errsize, "limit '%s' of %s%s%s of action '%s' has no 'limit:' of its own "
                 "(it inherits the default's)", name, *tier ? "tier '" : "the default limits",
                 tier, *tier ? "'" : "", action);
        return NULL;
    }
    if (!plain_int(lim, &v)) {
        snprintf(err, errsize, "limit '%s' of action '%s' is not written as a plain integer",
                 name, action);
        return NULL;
    }
    return lim;
}

/* Same structure and scalars, except node `edited` of a whose counterpart
 * in b must read `value`. */
static int same_shape(const yl_node *a, const yl_node *b, const yl_node *edited, const char *value)
{
    if (!a || !b || a->type != b->type || a->flow != b->flow || a->n != b->n)
        return 0;
    if (a->type == YL_SCALAR)
        return a->quoted == b->quoted &&
               strcmp(b->text, a == edited ? value : a->text) == 0;
    for (int i = 0; i < a->n; i++) {
        if (a->type == YL_MAP && !same_shape(a->keys[i], b->keys[i], NULL, NULL))
            return 0;
        if (!same_shape(a->vals[i], b->vals[i], edited, value))
            return 0;
    }
    return 1;
}

int yl_set_limit(const char *text, size_t len, const char *action, const char *tier,
                 const char *name, int64_t value, char **out, size_t *outlen, int *line,
                 char *err, size_t errsize)
{
    yl_node *root = NULL, *again = NULL;
    char digits[32];
    int rc = -1;
    *out = NULL;
    *outlen = 0;
    if (value < 1) {
        snprintf(err, errsize, "a limit must be at least 1");
        return -1;
    }
    snprintf(digits, sizeof digits, "%lld", (long long)value);
    if (yl_parse(text, len, &root, err, errsize) != 0)
        return -1;
    const yl_node *lim = find_limit(root, action, tier, name, err, errsize);
    if (!lim)
        goto out;
    size_t dl = strlen(digits), nlen = len - (lim->end - lim->start) + dl;
    char *buf = malloc(nlen + 1);
    if (!buf) {
        snprintf(err, errsize, "out of memory");
        goto out;
    }
    memcpy(buf, text, lim->start);
    memcpy(buf + lim->start, digits, dl);
    memcpy(buf + lim->start + dl, text + lim->end, len - lim->end);
    buf[nlen] = '\0';
    char err2[200];
    const yl_node *lim2;
    if (yl_parse(buf, nlen, &again, err2, sizeof err2) != 0 ||
        !(lim2 = find_limit(again, action, tier, name, err2, sizeof err2)) ||
        lim2->start != lim->start || !same_shape(root, again, lim, digits)) {
        snprintf(err, errsize, "the edited rules do not read back as expected; nothing changed");
        free(buf);
        goto out;
    }
    *out = buf;
    *outlen = nlen;
    *line = yl_line(text, lim->start);
    rc = 0;
out:
    yl_free(root);
    yl_free(again);
    return rc;
}
