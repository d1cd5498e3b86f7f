/*
 * config_value.c - node helpers of the loader: typed reading of scalars
 * (integers, booleans, enumerations, durations, names, expiry times, time
 * zones) with the error messages that say what was expected and what was
 * found, and the unknown-field check with a "did you mean" suggestion.
 *
 * Typing is deliberately strict, to avoid YAML 1.1 surprises: an integer is
 * an unquoted decimal number (no sign but '-', no leading zeros, no floats,
 * no octal or hex), a boolean is exactly true or false, and a quoted scalar
 * is always a string.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config_int.h"
#include "timefmt.h"
#include "rlstore.h"
#include "tz.h"

const char *rls__config_str(const cfg *c, int node)
{
    return c->strs + c->nodes[node].off;
}

int rls__config_is_null(const cfg *c, int node)
{
    const cnode *n = &c->nodes[node];
    const char *s;
    if (n->type != CN_SCALAR || !n->plain)
        return 0;
    s = rls__config_str(c, node);
    return n->len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

int rls__config_next_pair(const cfg *c, int k)
{
    int v = c->nodes[k].next;
    return v < 0 ? -1 : c->nodes[v].next;
}

/* Copies s[0..len) for a message: control bytes as \xHH, at most ~40 bytes
 * (cut on a UTF-8 boundary, then "..."). */
static void escape_short(const char *s, size_t len, char *buf, size_t size)
{
    size_t o = 0, i;
    const size_t max = 40;
    if (size < 8) {
        if (size)
            buf[0] = '\0';
        return;
    }
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((i >= max || o + 8 >= size) && (ch & 0xC0) != 0x80)
            break;  /* only ever cut before the first byte of a character */
        if (o + 5 >= size)
            break;
        if (ch < 0x20 || ch == 0x7F)
            o += (size_t)snprintf(buf + o, size - o, "\\x%02X", ch);
        else
            buf[o++] = (char)ch;
    }
    if (i < len && o + 4 <= size - 1) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
}

void rls__config_describe(const cfg *c, int node, char *buf, size_t size)
{
    const cnode *n = &c->nodes[node];
    char tmp[200];
    if (n->type == CN_MAP) {
        snprintf(buf, size, "a mapping");
    } else if (n->type == CN_SEQ) {
        snprintf(buf, size, "a list");
    } else if (n->type == CN_BAD) {
        snprintf(buf, size, "an alias");
    } else if (rls__config_is_null(c, node)) {
        snprintf(buf, size, "an empty value");
    } else {
        escape_short(rls__config_str(c, node), n->len, tmp, sizeof tmp);
        snprintf(buf, size, "'%s'", tmp);
    }
}

void rls__config_path_key(char *out, size_t size, const char *path,
                      const cfg *c, int key)
{
    char tmp[200];
    escape_short(rls__config_str(c, key), c->nodes[key].len, tmp, sizeof tmp);
    if (path && *path)
        snprintf(out, size, "%s.%s", path, tmp);
    else
        snprintf(out, size, "%s", tmp);
}

void rls__config_path_field(char *out, size_t size, const char *path,
                        const char *field)
{
    if (path && *path)
        snprintf(out, size, "%s.%s", path, field);
    else
        snprintf(out, size, "%s", field);
}

void rls__config_path_index(char *out, size_t size, const char *path, int i)
{
    snprintf(out, size, "%s[%d]", path ? path : "", i);
}

static const char *type_word(int type)
{
    return type == CN_MAP ? "a mapping" : type == CN_SEQ ? "a list"
                                                         : "a single value";
}

int rls__config_want(cfg *c, int node, const char *path, int type,
                 const char *what)
{
    char got[200];
    if (c->nodes[node].type == type)
        return 0;
    if (c->nodes[node].type == CN_BAD)
        return -1;
    rls__config_describe(c, node, got, sizeof got);
    rls__config_err(c, node, path, "expected %s; got %s",
                what ? what : type_word(type), got);
    return -1;
}

/* A scalar that is not null, else an error "expected <what>; got ...". */
static int want_value(cfg *c, int node, const char *path, const char *what)
{
    char got[200];
    if (c->nodes[node].type == CN_SCALAR && !rls__config_is_null(c, node))
        return 0;
    if (c->nodes[node].type == CN_BAD)
        return -1;
    rls__config_describe(c, node, got, sizeof got);
    rls__config_err(c, node, path, "expected %s; got %s", what, got);
    return -1;
}

int rls__config_int(cfg *c, int node, const char *path, int64_t lo, int64_t hi,
                int64_t *out)
{
    char what[96], got[200];
    const char *s;
    size_t i = 0, len;
    int neg = 0;
    uint64_t v = 0;

    if (hi == INT64_MAX)
        snprintf(what, sizeof what, "an integer >= %lld", (long long)lo);
    else
        snprintf(what, sizeof what, "an integer from %lld to %lld",
                 (long long)lo, (long long)hi);
    if (want_value(c, node, path, what) < 0)
        return -1;
    s = rls__config_str(c, node);
    len = c->nodes[node].len;
    rls__config_describe(c, node, got, sizeof got);
    if (!c->nodes[node].plain) {
        rls__config_err(c, node, path, "expected %s; got the quoted string %s "
                    "(write numbers without quotes)", what, got);
        return -1;
    }
    if (s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == len || (s[i] == '0' && len - i > 1)) {
        rls__config_err(c, node, path, "expected %s written in decimal; got %s",
                    what, got);
        return -1;
    }
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            rls__config_err(c, node, path, "expected %s written in decimal; "
                        "got %s", what, got);
            return -1;
        }
        if (v > (UINT64_MAX - 9) / 10) {
            v = UINT64_MAX;
            break;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if ((!neg && (v > (uint64_t)hi || (int64_t)v < lo)) ||
        (neg && (v > (uint64_t)INT64_MAX || -(int64_t)v < lo))) {
        rls__config_err(c, node, path, "expected %s; got %s", what, got);
        return -1;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int rls__config_bool(cfg *c, int node, const char *path, int *out)
{
    static const char *const yaml11[] = {
        "yes", "no", "on", "off", "y", "n", "Yes", "No", "On", "Off", "YES",
        "NO", "ON", "OFF", "True", "False", "TRUE", "FALSE", NULL
    };
    char got[200];
    const char *s;
    if (want_value(c, node, path, "true or false") < 0)
        return -1;
    s = rls__config_str(c, node);
    rls__config_describe(c, node, got, sizeof got);
    if (!c->nodes[node].plain) {
        rls__config_err(c, node, path, "expected true or false; got the quoted "
                    "string %s", got);
        return -1;
    }
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        *out = s[0] == 't';
        return 0;
    }
    for (int i = 0; yaml11[i]; i++)
        if (strcmp(s, yaml11[i]) == 0) {
            rls__config_err(c, node, path, "expected true or false; got %s "
                        "(only lower-case true and false are booleans here)",
                        got);
            return -1;
        }
    rls__config_err(c, node, path, "expected true or false; got %s", got);
    return -1;
}

int rls__config_enum(cfg *c, int node, const char *path,
                 const char *const *names, int *out)
{
    char what[160], got[200];
    size_t o = 0;
    o += (size_t)snprintf(what, sizeof what, "one of ");
    for (int i = 0; names[i] && o < sizeof what; i++)
        o += (size_t)snprintf(what + o, sizeof what - o, "%s%s",
                              i ? ", " : "", names[i]);
    if (want_value(c, node, path, what) < 0)
        return -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(rls__config_str(c, node), names[i]) == 0 &&
            strlen(names[i]) == c->nodes[node].len) {
            *out = i;
            return 0;
        }
    rls__config_describe(c, node, got, sizeof got);
    rls__config_err(c, node, path, "expected %s; got %s", what, got);
    return -1;
}

int rls__config_duration(cfg *c, int node, const char *path, rls_duration *out)
{
    static const char what[] = "a duration such as 10s, 1h, 1d";
    const char *why = "invalid";
    char got[200];
    if (want_value(c, node, path, what) < 0)
        return -1;
    if (rls__duration_parse(rls__config_str(c, node), c->nodes[node].len, out,
                       &why) == 0)
        return 0;
    rls__config_describe(c, node, got, sizeof got);
    rls__config_err(c, node, path, "expected %s; got %s (%s)", what, got, why);
    return -1;
}

int rls__config_name_ok(const char *s, size_t len)
{
    if (len < 1 || len > RULES_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
              ch == ':' || ch == '-'))
            return 0;
    }
    return 1;
}

int rls__config_name(cfg *c, int node, const char *path, const char *what,
                 char out[RULES_NAME_MAX + 1])
{
    char got[200];
    if (want_value(c, node, path, what) < 0)
        return -1;
    if (!rls__config_name_ok(rls__config_str(c, node), c->nodes[node].len)) {
        rls__config_describe(c, node, got, sizeof got);
        rls__config_err(c, node, path, "expected %s of 1 to %d characters "
                    "A-Z a-z 0-9 _ . : -; got %s", what, RULES_NAME_MAX, got);
        return -1;
    }
    memcpy(out, rls__config_str(c, node), c->nodes[node].len + 1);
    return 0;
}

/* Edit distance of a and b, capped: returns 3 for anything above 2. */
static int near(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[64];
    if (la >= 63 || lb >= 63 || (la > lb ? la - lb : lb - la) > 2)
        return 3;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb] > 2 ? 3 : row[lb];
}

int rls__config_field(cfg *c, int k, const char *path, const char *const *fields)
{
    const char *s = rls__config_str(c, k);
    char got[200], list[200];
    int best = -1, bestd = 3;
    size_t o = 0;
    for (int i = 0; fields[i]; i++) {
        if (strcmp(s, fields[i]) == 0 && strlen(fields[i]) == c->nodes[k].len)
            return i;
        int d = near(s, fields[i]);
        if (d < bestd && (size_t)d < strlen(fields[i])) {
            bestd = d;
            best = i;
        }
    }
    rls__config_describe(c, k, got, sizeof got);
    if (best >= 0) {
        rls__config_err(c, k, path, "unknown field %s (did you mean '%s'?)", got,
                    fields[best]);
        return -1;
    }
    list[0] = '\0';
    for (int i = 0; fields[i] && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s",
                              i ? ", " : "", fields[i]);
    rls__config_err(c, k, path, "unknown field %s; expected one of %s", got, list);
    return -1;
}

void rls__config_missing(cfg *c, int map, const char *path, const char *field,
                     const char *hint)
{
    rls__config_err(c, map, path, "missing required field '%s'%s%s", field,
                hint ? " " : "", hint ? hint : "");
}

int rls__config_expires(cfg *c, int node, const char *path, int64_t *out_ms)
{
    static const char what[] = "a UTC time such as 2027-01-01T00:00:00Z or "
                               "epoch milliseconds";
    char got[200];
    const char *s;
    if (want_value(c, node, path, what) < 0)
        return -1;
    s = rls__config_str(c, node);
    if (c->nodes[node].plain && s[0] >= '0' && s[0] <= '9' &&
        strchr(s, '-') == NULL)
        return rls__config_int(c, node, path, 1, RLS_TIME_MAX, out_ms);
    if (rls__timefmt_parse_iso(s, c->nodes[node].len, out_ms) == 0 && *out_ms > 0 &&
        *out_ms <= RLS_TIME_MAX)
        return 0;
    rls__config_describe(c, node, got, sizeof got);
    rls__config_err(c, node, path, "expected %s; got %s", what, got);
    return -1;
}

int rls__config_zone(cfg *c, int node, const char *path, const rls_tz **out)
{
    const char *why = "invalid name";
    char got[200];
    int rc;
    if (want_value(c, node, path, "a time zone name such as Europe/Berlin") < 0)
        return -1;
    if (strlen(rls__config_str(c, node)) != c->nodes[node].len)
        rc = -1;  /* an embedded NUL */
    else
        rc = rls__ruleset_zone(c->rs, rls__config_str(c, node), out, &why);
    if (rc == -2) {
        c->oom = 1;
        return -1;
    }
    if (rc < 0) {
        rls__config_describe(c, node, got, sizeof got);
        if (strcmp(why, "unknown time zone") == 0 || strcmp(why, "not found") == 0)
            rls__config_err(c, node, path, "unknown time zone %s", got);
        else
            rls__config_err(c, node, path, "unknown time zone %s (%s)", got, why);
        return -1;
    }
    return 0;
}
