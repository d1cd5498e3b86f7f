/*
 * yaml_edit.c - the limit values written in a rule file and the in-place
 * edit of one (yaml_edit.h), on the node tree of the loader's libyaml pass
 * (rls__config_load_yaml), whose nodes keep libyaml's marks.
 *
 * libyaml's mark index counts characters, not bytes (a CRLF counts 2), and
 * starts after a byte order mark the loader skips: offsets are turned into
 * bytes by counting UTF-8 lead bytes (libyaml has already checked that the
 * text is UTF-8).  Anything the loader's pass reports (anchors, aliases,
 * tags, duplicate keys, a second document) refuses the file, as do merge
 * keys: an edit based on a misread file would change the wrong limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config_int.h"
#include "yaml_edit.h"

/* A tree of the text, or -1 with err set / -2.  *skip: a byte order mark. */
static int load(cfg *c, config_errors *errs, const char *text, size_t len, size_t *skip,
                char *err, size_t errsize)
{
    memset(c, 0, sizeof *c);
    c->errs = errs;
    errs->n = errs->total = 0;
    c->root = -1;
    *skip = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    int rc = rls__config_load_yaml(c, text, len);
    if (rc == -2 || c->oom) {
        rls__config_tree_free(c);
        return -2;
    }
    if (rc == 0 && errs->total == 0)
        return 0;
    const config_error *e = errs->n > 0 ? &errs->e[0] : NULL;
    const char *msg = e ? e->msg : "the rules do not read as YAML";
    const char *hint = "";
    if (e && e->line > 0) {
        /* libyaml says "cannot start any token" for a tab in indentation */
        const char *p = text + *skip, *end = text + len;
        for (int l = 1; l < e->line && p < end; p++)
            if (*p == '\n')
                l++;
        while (p < end && *p == ' ')
            p++;
        if (p < end && *p == '\t')
            hint = " (a tab is used for indentation)";
    }
    snprintf(err, errsize, "line %d: %s%s", e ? e->line : 0, msg, hint);
    rls__config_tree_free(c);
    return -1;
}

/* The value of key in mapping map, or -1. */
static int get(const cfg *c, int map, const char *key)
{
    if (map < 0 || c->nodes[map].type != CN_MAP)
        return -1;
    for (int k = c->nodes[map].first; k >= 0; k = rls__config_next_pair(c, k))
        if (!c->nodes[k].skip && c->nodes[k].type == CN_SCALAR &&
            strcmp(rls__config_str(c, k), key) == 0)
            return c->nodes[k].next;
    return -1;
}

/* A merge key (<<) anywhere under node: its key node, or -1. */
static int merge_key(const cfg *c, int node)
{
    const cnode *n = &c->nodes[node];
    for (int k = n->first; n->type != CN_SCALAR && k >= 0; k = c->nodes[k].next) {
        if (n->type == CN_MAP && c->nodes[k].type == CN_SCALAR && c->nodes[k].plain &&
            strcmp(rls__config_str(c, k), "<<") == 0)
            return k;
        int m = merge_key(c, k);
        if (m >= 0)
            return m;
    }
    return -1;
}

/* A plain decimal integer without sign or leading zeros (except "0"). */
static int plain_int(const cfg *c, int node, int64_t *out)
{
    int64_t x = 0;
    if (node < 0 || c->nodes[node].type != CN_SCALAR || !c->nodes[node].plain)
        return 0;
    const char *s = rls__config_str(c, node);
    if (!s[0] || (s[0] == '0' && s[1]) || strlen(s) != c->nodes[node].len)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || x > (INT64_MAX - 9) / 10)
            return 0;
        x = x * 10 + (*s - '0');
    }
    *out = x;
    return 1;
}

/* Turns mark indices into byte offsets, moving forward (restarting when
 * asked for an earlier one). */
typedef struct cursor {
    const char *text;
    size_t len, skip, chars, bytes;
} cursor;

static size_t byte_at(cursor *cu, size_t idx)
{
    if (idx < cu->chars) {
        cu->chars = 0;
        cu->bytes = cu->skip;
    }
    while (cu->chars < idx && cu->bytes < cu->len) {
        cu->bytes++;
        while (cu->bytes < cu->len && ((unsigned char)cu->text[cu->bytes] & 0xC0) == 0x80)
            cu->bytes++;
        cu->chars++;
    }
    return cu->bytes;
}

/* ---- the list -------------------------------------------------------------- */

typedef struct lister {
    const cfg *c;
    cursor cu;
    yedit_value *v;
    int n, cap;
} lister;

static int add_value(lister *ls, const char *action, const char *tier, const char *name,
                     const char *field, int node)
{
    int64_t x;
    if (!plain_int(ls->c, node, &x))
        return 0;
    if (ls->n == ls->cap) {
        int cap = ls->cap ? ls->cap * 2 : 16;
        yedit_value *nv = rls__config_realloc(ls->v, sizeof *nv * (size_t)cap);
        if (!nv)
            return -2;
        ls->v = nv;
        ls->cap = cap;
    }
    yedit_value *v = &ls->v[ls->n++];
    snprintf(v->action, sizeof v->action, "%s", action);
    snprintf(v->tier, sizeof v->tier, "%s", tier);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->field = field;
    v->value = x;
    v->start = byte_at(&ls->cu, ls->c->nodes[node].at);
    v->end = byte_at(&ls->cu, ls->c->nodes[node].at_end);
    v->line = ls->c->nodes[node].line;
    return 0;
}

static int add_seq(lister *ls, const char *action, const char *tier, int seq)
{
    const cfg *c = ls->c;
    if (seq < 0 || c->nodes[seq].type != CN_SEQ)
        return 0;
    for (int i = c->nodes[seq].first; i >= 0; i = c->nodes[i].next) {
        int nm = get(c, i, "name");
        if (nm < 0 || c->nodes[nm].type != CN_SCALAR ||
            !rls__config_name_ok(rls__config_str(c, nm), c->nodes[nm].len))
            continue;
        /* in file order: limit and burst as they come in the mapping */
        for (int k = c->nodes[i].first; k >= 0; k = rls__config_next_pair(c, k)) {
            const char *kt = c->nodes[k].type == CN_SCALAR ? rls__config_str(c, k) : "";
            const char *f = strcmp(kt, "limit") == 0 ? "limit"
                            : strcmp(kt, "burst") == 0 ? "burst" : NULL;
            if (f && !c->nodes[k].skip &&
                add_value(ls, action, tier, rls__config_str(c, nm), f, c->nodes[k].next) != 0)
                return -2;
        }
    }
    return 0;
}

int rls__yedit_list(const char *text, size_t len, yedit_value **out, int *n, char *err,
                    size_t errsize)
{
    config_errors errs;
    cfg c;
    size_t skip;
    *out = NULL;
    *n = 0;
    int rc = load(&c, &errs, text, len, &skip, err, errsize);
    if (rc != 0)
        return rc;
    int mk = c.root >= 0 ? merge_key(&c, c.root) : -1;
    if (mk >= 0) {
        snprintf(err, errsize, "line %d: merge keys (<<) are not supported", c.nodes[mk].line);
        rls__config_tree_free(&c);
        return -1;
    }
    lister ls = {&c, {text, len, skip, 0, skip}, NULL, 0, 0};
    int acts = get(&c, c.root, "actions");
    for (int k = acts >= 0 && c.nodes[acts].type == CN_MAP ? c.nodes[acts].first : -1;
         k >= 0 && rc == 0; k = rls__config_next_pair(&c, k)) {
        const char *an = rls__config_str(&c, k);
        int act = c.nodes[k].next, tiers = get(&c, act, "tiers");
        if (c.nodes[k].type != CN_SCALAR || !rls__config_name_ok(an, c.nodes[k].len))
            continue;
        rc = add_seq(&ls, an, "", get(&c, act, "limits"));
        for (int t = tiers >= 0 && c.nodes[tiers].type == CN_MAP ? c.nodes[tiers].first : -1;
             t >= 0 && rc == 0; t = rls__config_next_pair(&c, t))
            if (c.nodes[t].type == CN_SCALAR &&
                rls__config_name_ok(rls__config_str(&c, t), c.nodes[t].len))
                rc = add_seq(&ls, an, rls__config_str(&c, t), c.nodes[t].next);
    }
    rls__config_tree_free(&c);
    if (rc != 0) {
        free(ls.v);
        return -2;
    }
    *out = ls.v;
    *n = ls.n;
    return 0;
}

/* ---- the edit ------------------------------------------------------------------ */

/* The node of the value to change, or with err set -1 (not written
 * there) or -3 (not a plain integer). */
static int find_value(const cfg *c, const char *action, const char *tier, const char *name,
                      const char *field, char *err, size_t errsize)
{
    int act = get(c, get(c, c->root, "actions"), action), seq, item = -1;
    int64_t v;
    if (act < 0 || c->nodes[act].type != CN_MAP) {
        snprintf(err, errsize, "action '%s' is not in the active rules", action);
        return -1;
    }
    if (*tier) {
        seq = get(c, get(c, act, "tiers"), tier);
        if (seq < 0) {
            snprintf(err, errsize, "action '%s' has no limits of its own for tier '%s': the tier "
                     "uses the default limits", action, tier);
            return -1;
        }
    } else {
        seq = get(c, act, "limits");
    }
    for (int i = seq >= 0 && c->nodes[seq].type == CN_SEQ ? c->nodes[seq].first : -1;
         i >= 0 && item < 0; i = c->nodes[i].next) {
        int nm = get(c, i, "name");
        if (nm >= 0 && c->nodes[nm].type == CN_SCALAR && strcmp(rls__config_str(c, nm), name) == 0)
            item = i;
    }
    if (item < 0) {
        if (*tier)
            snprintf(err, errsize, "tier '%s' of action '%s' does not replace limit '%s': it uses "
                     "the default limit", tier, action, name);
        else
            snprintf(err, errsize, "action '%s' has no default limit '%s'", action, name);
        return -1;
    }
    int node = get(c, item, field);
    if (node < 0) {
        snprintf(err, errsize, "limit '%s' of %s%s%s of action '%s' has no '%s:' of its own "
                 "(it inherits the default's)", name, *tier ? "tier '" : "the default limits",
                 tier, *tier ? "'" : "", action, field);
        return -1;
    }
    if (!plain_int(c, node, &v)) {
        snprintf(err, errsize, "%s '%s' of action '%s' is not written as a plain integer", field,
                 name, action);
        return -3;
    }
    return node;
}

/* Same nodes and scalars in a and b, except node `edited` of a, whose
 * counterpart in b must read `value`. */
static int same_tree(const cfg *a, int na, const cfg *b, int nb, int edited, const char *value)
{
    for (; na >= 0 || nb >= 0; na = a->nodes[na].next, nb = b->nodes[nb].next) {
        if (na < 0 || nb < 0)
            return 0;
        const cnode *x = &a->nodes[na], *y = &b->nodes[nb];
        if (x->type != y->type || x->plain != y->plain || x->n != y->n)
            return 0;
        if (x->type == CN_SCALAR &&
            strcmp(rls__config_str(b, nb), na == edited ? value : rls__config_str(a, na)) != 0)
            return 0;
        if (x->type != CN_SCALAR && !same_tree(a, x->first, b, y->first, edited, value))
            return 0;
    }
    return 1;
}

/* Replaces text[start, end) by digits into a new buffer, or NULL. */
static char *splice(const char *text, size_t len, size_t start, size_t end,
                    const char *digits, size_t *outlen)
{
    size_t dl = strlen(digits), n = len - (end - start) + dl;
    char *buf = rls__config_malloc(n + 1);
    if (!buf)
        return NULL;
    memcpy(buf, text, start);
    memcpy(buf + start, digits, dl);
    memcpy(buf + start + dl, text + end, len - end);
    buf[n] = '\0';
    *outlen = n;
    return buf;
}

int rls__yedit_set(const char *text, size_t len, const char *action, const char *tier,
                   const char *name, const char *field, int64_t value, char **out,
                   size_t *outlen, int *line, char *err, size_t errsize)
{
    config_errors errs;
    cfg a, b;
    size_t skip, skip2;
    char digits[32], err2[200];
    *out = NULL;
    *outlen = 0;
    tier = tier ? tier : "";
    if (strcmp(field, "limit") != 0 && strcmp(field, "burst") != 0) {
        snprintf(err, errsize, "field '%s' cannot be edited: 'limit' or 'burst'", field);
        return -3;
    }
    if (value < 1) {
        snprintf(err, errsize, "a %s must be at least 1", field);
        return -3;
    }
    snprintf(digits, sizeof digits, "%lld", (long long)value);
    int rc = load(&a, &errs, text, len, &skip, err, errsize);
    if (rc != 0)
        return rc == -1 ? -3 : rc;
    int mk = a.root >= 0 ? merge_key(&a, a.root) : -1, node = -3;
    if (mk >= 0)
        snprintf(err, errsize, "line %d: merge keys (<<) are not supported", a.nodes[mk].line);
    else
        node = find_value(&a, action, tier, name, field, err, errsize);
    if (node < 0) {
        rls__config_tree_free(&a);
        return node;
    }
    cursor cu = {text, len, skip, 0, skip};
    size_t start = byte_at(&cu, a.nodes[node].at), end = byte_at(&cu, a.nodes[node].at_end);
    char *buf = splice(text, len, start, end, digits, outlen);
    if (!buf) {
        rls__config_tree_free(&a);
        return -2;
    }
    /* read back: one value changed, at the same place, nothing else */
    rc = load(&b, &errs, buf, *outlen, &skip2, err2, sizeof err2);
    int again = rc == 0 ? find_value(&b, action, tier, name, field, err2, sizeof err2) : -3;
    int ok = again >= 0 && b.nodes[again].at == a.nodes[node].at &&
             same_tree(&a, a.root, &b, b.root, node, digits);
    if (rc != -2) {
        if (rc == 0)
            rls__config_tree_free(&b);
        rc = ok ? 0 : -3;
    }
    if (rc == -3)
        snprintf(err, errsize, "the edited rules do not read back as expected; nothing changed");
    if (rc == 0)
        *line = a.nodes[node].line;
    rls__config_tree_free(&a);
    if (rc != 0) {
        free(buf);
        *outlen = 0;
        return rc;
    }
    *out = buf;
    return 0;
}
