/*
 * yamlite.c - the strict YAML-subset reader of yamlite.h (the edit of a
 * `limit:` value built on it is in yamledit.c).
 *
 * The parser builds a small tree whose nodes remember their byte spans.
 * Block structure follows indentation exactly; anything outside the subset
 * is an error, never a guess, because an edit based on a misread file
 * would silently change the wrong limit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yamlite.h"

#define YL_MAX_DEPTH 64

typedef struct ps {
    const char *s;
    size_t len;
    size_t pos;     /* after a block node: the start of the line after it */
    size_t base;    /* 3 after a UTF-8 byte order mark, else 0 */
    int depth;
    char *err;
    size_t errsize;
    int failed;
} ps;

/* ---- nodes ------------------------------------------------------------- */

static yl_node *node_new(ps *p, int type, size_t start)
{
    yl_node *n = calloc(1, sizeof *n);
    if (!n) {
        if (!p->failed)
            snprintf(p->err, p->errsize, "out of memory");
        p->failed = 1;
        return NULL;
    }
    n->type = type;
    n->start = n->end = start;
    return n;
}

void yl_free(yl_node *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->n; i++) {
        if (n->keys)
            yl_free(n->keys[i]);
        yl_free(n->vals[i]);
    }
    free(n->keys);
    free(n->vals);
    free(n->text);
    free(n);
}

/* Appends (key, val) to a map or val to a sequence; frees both on failure. */
static int node_add(ps *p, yl_node *n, yl_node *key, yl_node *val)
{
    if (n->n == n->cap) {
        int cap = n->cap ? n->cap * 2 : 8;
        yl_node **v = realloc(n->vals, sizeof *v * (size_t)cap);
        if (v)
            n->vals = v;
        yl_node **k = v && n->type == YL_MAP ? realloc(n->keys, sizeof *k * (size_t)cap) : NULL;
        if (k)
            n->keys = k;
        if (!v || (n->type == YL_MAP && !k)) {
            yl_free(key);
            yl_free(val);
            if (!p->failed)
                snprintf(p->err, p->errsize, "out of memory");
            p->failed = 1;
            return -1;
        }
        n->cap = cap;
    }
    if (n->type == YL_MAP)
        n->keys[n->n] = key;
    n->vals[n->n++] = val;
    if (val && val->end > n->end)
        n->end = val->end;
    return 0;
}

int yl_line(const char *text, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && text[i]; i++)
        if (text[i] == '\n')
            line++;
    return line;
}

__attribute__((format(printf, 3, 4))) static void *fail(ps *p, size_t at, const char *fmt, ...)
{
    if (!p->failed) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(p->err, p->errsize, "line %d: %s", yl_line(p->s, at < p->len ? at : p->len),
                 msg);
    }
    p->failed = 1;
    return NULL;
}

/* ---- lines --------------------------------------------------------------- */

static int at_eol(const ps *p, size_t i)
{
    return i >= p->len || p->s[i] == '\n' || (p->s[i] == '\r' && (i + 1 >= p->len || p->s[i + 1] == '\n'));
}

/* The first line starts after a byte order mark: columns ignore it. */
static size_t line_start(const ps *p, size_t i)
{
    while (i > p->base && p->s[i - 1] != '\n')
        i--;
    return i;
}

static int column(const ps *p, size_t i)
{
    return (int)(i - line_start(p, i));
}

/* From the start of a line: the first character of the next line that has
 * content (not blank, not only a comment), or len. */
static size_t next_content(ps *p, size_t i)
{
    while (i < p->len) {
        size_t j = i;
        while (j < p->len && p->s[j] == ' ')
            j++;
        if (j < p->len && p->s[j] == '\t') {
            size_t k = j;
            while (k < p->len && (p->s[k] == ' ' || p->s[k] == '\t'))
                k++;
            if (!at_eol(p, k) && p->s[k] != '#') {
                fail(p, j, "a tab is used for indentation");
                return p->len;
            }
            j = k;
        }
        if (at_eol(p, j) || p->s[j] == '#') {
            while (j < p->len && p->s[j] != '\n')
                j++;
            i = j < p->len ? j + 1 : p->len;
            continue;
        }
        return j;
    }
    return p->len;
}

/* After a value on its line: spaces, an optional comment, the end of the
 * line.  Returns the start of the next line. */
static size_t end_of_line(ps *p, size_t i)
{
    while (i < p->len && (p->s[i] == ' ' || p->s[i] == '\t'))
        i++;
    if (i < p->len && p->s[i] == '#')
        while (i < p->len && p->s[i] != '\n')
            i++;
    if (!at_eol(p, i)) {
        fail(p, i, "unexpected text after a value");
        return p->len;
    }
    while (i < p->len && p->s[i] != '\n')
        i++;
    return i < p->len ? i + 1 : p->len;
}

static int is_seq_item(const ps *p, size_t i)
{
    return i < p->len && p->s[i] == '-' && (at_eol(p, i + 1) || p->s[i + 1] == ' ');
}

/* ---- scalars ------------------------------------------------------------- */

static char *dup_range(ps *p, size_t a, size_t b)
{
    char *t = malloc(b - a + 1);
    if (!t)
        return fail(p, a, "out of memory");
    memcpy(t, p->s + a, b - a);
    t[b - a] = '\0';
    return t;
}

/* A quoted scalar starting at *i; on one line only. */
static yl_node *quoted(ps *p, size_t *i)
{
    char q = p->s[*i];
    size_t a = *i, j = *i + 1, o = 0;
    char *t = malloc(p->len - a + 1);
    if (!t)
        return fail(p, a, "out of memory");
    for (;;) {
        if (j >= p->len || p->s[j] == '\n' || p->s[j] == '\r') {
            free(t);
            return fail(p, a, "a quoted scalar spans lines or is not closed");
        }
        char c = p->s[j];
        if (q == '\'' && c == '\'') {
            if (j + 1 < p->len && p->s[j + 1] == '\'') {
                t[o++] = '\'';
                j += 2;
                continue;
            }
            break;
        }
        if (q == '"' && c == '"')
            break;
        if (q == '"' && c == '\\') {
            char e = j + 1 < p->len ? p->s[j + 1] : '\0';
            const char *from = "\"\\/ntr0", *to = "\"\\/\n\t\r";
            const char *f = e ? strchr(from, e) : NULL;
            if (!f || e == '0') {
                free(t);
                return fail(p, j, "an escape sequence rltop does not read");
            }
            t[o++] = to[f - from];
            j += 2;
            continue;
        }
        t[o++] = c;
        j++;
    }
    t[o] = '\0';
    yl_node *n = node_new(p, YL_SCALAR, a);
    if (!n) {
        free(t);
        return NULL;
    }
    n->quoted = 1;
    n->text = t;
    n->end = j + 1;
    *i = j + 1;
    return n;
}

static yl_node *scalar_span(ps *p, size_t a, size_t b)
{
    while (b > a && (p->s[b - 1] == ' ' || p->s[b - 1] == '\t'))
        b--;
    yl_node *n = node_new(p, YL_SCALAR, a);
    if (!n)
        return NULL;
    n->end = b;
    if (!(n->text = dup_range(p, a, b))) {
        yl_free(n);
        return NULL;
    }
    return n;
}

/* What may not start a plain scalar here (a feature outside the subset). */
static yl_node *refuse_indicator(ps *p, size_t i)
{
    char c = p->s[i];
    if (c == '&' || c == '*')
        return fail(p, i, "anchors and aliases are not supported");
    if (c == '!')
        return fail(p, i, "tags are not supported");
    if (c == '|' || c == '>')
        return fail(p, i, "block scalars (| and >) are not supported");
    if (c == '?' && (at_eol(p, i + 1) || p->s[i + 1] == ' '))
        return fail(p, i, "complex keys (?) are not supported");
    if (c == '%' || c == '@' || c == '`')
        return fail(p, i, "unexpected '%c'", c);
    return NULL;
}

/* A plain scalar in block context: to the end of the line or a comment. */
static yl_node *plain_block(ps *p, size_t *i)
{
    size_t a = *i, j = *i;
    if (strchr("&*!|>%@`", p->s[a]) || (p->s[a] == '?' && (at_eol(p, a + 1) || p->s[a + 1] == ' ')))
        return refuse_indicator(p, a);
    while (!at_eol(p, j) && !(p->s[j] == '#' && j > a && (p->s[j - 1] == ' ' || p->s[j - 1] == '\t')))
        j++;
    *i = j;
    return scalar_span(p, a, j);
}

/* ---- flow collections ---------------------------------------------------- */

/* Skips spaces, newlines and comments inside a flow collection. */
static void flow_ws(ps *p, size_t *i)
{
    while (*i < p->len) {
        char c = p->s[*i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            (*i)++;
        } else if (c == '#' && (*i == 0 || strchr(" \t\n", p->s[*i - 1]))) {
            while (*i < p->len && p->s[*i] != '\n')
                (*i)++;
        } else {
            break;
        }
    }
}

static yl_node *flow_node(ps *p, size_t *i);

/* A plain scalar inside a flow collection; as a key it also stops at ':'. */
static yl_node *plain_flow(ps *p, size_t *i, int key)
{
    size_t a = *i, j = *i;
    if (strchr("&*!|>%@`", p->s[a]))
        return refuse_indicator(p, a);
    while (j < p->len) {
        char c = p->s[j];
        if (c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '\n' || c == '\r')
            break;
        if (c == '#' && j > a && (p->s[j - 1] == ' ' || p->s[j - 1] == '\t'))
            break;
        if (c == ':' && (key || j + 1 >= p->len || strchr(" \t\n,]}", p->s[j + 1])))
            break;
        j++;
    }
    if (j < p->len && (p->s[j] == '\n' || p->s[j] == '\r')) {
        size_t k = j;
        flow_ws(p, &k);
        if (k < p->len && !strchr(",]}:", p->s[k]))
            return fail(p, j, "a plain scalar spans lines");
    }
    if (j == a)
        return fail(p, a, "a value is missing");
    *i = j;
    return scalar_span(p, a, j);
}

static yl_node *flow_collection(ps *p, size_t *i)
{
    int map = p->s[*i] == '{';
    char close = map ? '}' : ']';
    yl_node *n = node_new(p, map ? YL_MAP : YL_SEQ, *i);
    if (!n)
        return NULL;
    n->flow = 1;
    (*i)++;
    for (;;) {
        flow_ws(p, i);
        if (*i >= p->len) {
            yl_free(n);
            return fail(p, *i, "'%c' is not closed", map ? '{' : '[');
        }
        if (p->s[*i] == close) {
            (*i)++;
            break;
        }
        yl_node *key = NULL, *val = NULL;
        if (map) {
            key = p->s[*i] == '"' || p->s[*i] == '\'' ? quoted(p, i) : plain_flow(p, i, 1);
            if (key && key->type == YL_SCALAR && !key->quoted && strcmp(key->text, "<<") == 0) {
                yl_free(key);
                yl_free(n);
                return fail(p, *i, "merge keys (<<) are not supported");
            }
            flow_ws(p, i);
            if (!key || *i >= p->len || p->s[*i] != ':') {
                yl_free(key);
                yl_free(n);
                return fail(p, *i, "expected ':' in a flow mapping");
            }
            (*i)++;
            flow_ws(p, i);
            if (*i < p->len && (p->s[*i] == ',' || p->s[*i] == close)) {
                val = node_new(p, YL_SCALAR, *i);
                if (val && !(val->text = calloc(1, 1))) {
                    yl_free(val);
                    val = NULL;
                }
            } else {
                val = flow_node(p, i);
            }
        } else {
            val = flow_node(p, i);
        }
        if (!val || (map && !key) || node_add(p, n, key, val) != 0) {
            if (!val)
                yl_free(key);
            yl_free(n);
            return NULL;
        }
        flow_ws(p, i);
        if (*i < p->len && p->s[*i] == ',') {
            (*i)++;
        } else if (*i >= p->len || p->s[*i] != close) {
            yl_free(n);
            return fail(p, *i, "expected ',' or '%c'", close);
        }
    }
    n->end = *i;
    return n;
}

static yl_node *flow_node(ps *p, size_t *i)
{
    if (++p->depth > YL_MAX_DEPTH)
        return fail(p, *i, "nested too deeply");
    yl_node *n;
    char c = p->s[*i];
    if (c == '{' || c == '[')
        n = flow_collection(p, i);
    else if (c == '"' || c == '\'')
        n = quoted(p, i);
    else
        n = plain_flow(p, i, 0);
    p->depth--;
    return n;
}

/* ---- block collections ----------------------------------------------------- */

/* If a mapping key starts at i: its end (exclusive) and the colon. */
static int key_at(ps *p, size_t i, size_t *kend, size_t *colon)
{
    size_t j = i;
    char c = p->s[i];
    if (c == '"' || c == '\'') {
        j++;
        while (j < p->len && p->s[j] != c && p->s[j] != '\n')
            j += (c == '"' && p->s[j] == '\\') ? 2 : 1;
        if (j >= p->len || p->s[j] != c)
            return 0;
        *kend = ++j;
        while (j < p->len && p->s[j] == ' ')
            j++;
        if (j < p->len && p->s[j] == ':' && (at_eol(p, j + 1) || p->s[j + 1] == ' ')) {
            *colon = j;
            return 1;
        }
        return 0;
    }
    if (strchr("[]{},#&*!|>%@`'\"", c) || is_seq_item(p, i))
        return 0;
    while (!at_eol(p, j)) {
        if (p->s[j] == '#' && j > i && p->s[j - 1] == ' ')
            return 0;
        if (p->s[j] == ':' && (at_eol(p, j + 1) || p->s[j + 1] == ' ')) {
            *kend = j;
            *colon = j;
            return 1;
        }
        j++;
    }
    return 0;
}

static yl_node *block_node(ps *p, size_t c, int col);

/* An inline value after "key: " or "- ": flow, quoted or plain; its line
 * must end after it.  Sets p->pos to the next line. */
static yl_node *inline_value(ps *p, size_t i)
{
    yl_node *n;
    if (p->s[i] == '{' || p->s[i] == '[')
        n = flow_node(p, &i);
    else if (p->s[i] == '"' || p->s[i] == '\'')
        n = quoted(p, &i);
    else
        n = plain_block(p, &i);
    if (!n)
        return NULL;
    p->pos = end_of_line(p, i);
    if (p->failed) {
        yl_free(n);
        return NULL;
    }
    return n;
}

static yl_node *empty_scalar(ps *p, size_t at)
{
    yl_node *n = node_new(p, YL_SCALAR, at);
    if (n && !(n->text = calloc(1, 1))) {
        yl_free(n);
        return fail(p, at, "out of memory");
    }
    return n;
}

/* The value of a block entry whose line ends after the indicator at i
 * ("key:" or "-"): the following more indented block, a sequence at the
 * same column (for a mapping value), or empty. */
static yl_node *value_below(ps *p, size_t i, int col, int seq_ok)
{
    size_t nl = end_of_line(p, i);
    if (p->failed)
        return NULL;
    size_t c = next_content(p, nl);
    if (p->failed)
        return NULL;
    if (c < p->len) {
        int ccol = column(p, c);
        if (ccol > col || (seq_ok && ccol == col && is_seq_item(p, c)))
            return block_node(p, c, ccol);
    }
    p->pos = nl;
    return empty_scalar(p, i);
}

static yl_node *block_map(ps *p, size_t c, int col)
{
    yl_node *m = node_new(p, YL_MAP, c);
    if (!m)
        return NULL;
    for (;;) {
        size_t kend, colon, i = c;
        if (!key_at(p, c, &kend, &colon)) {
            yl_free(m);
            return fail(p, c, is_seq_item(p, c) ? "unexpected sequence item"
                                                 : "expected 'key:' or a less indented line");
        }
        yl_node *key = p->s[c] == '"' || p->s[c] == '\'' ? quoted(p, &i) : scalar_span(p, c, kend);
        if (!key) {
            yl_free(m);
            return NULL;
        }
        if (!key->quoted && strcmp(key->text, "<<") == 0) {
            yl_free(key);
            yl_free(m);
            return fail(p, c, "merge keys (<<) are not supported");
        }
        i = colon + 1;
        while (i < p->len && p->s[i] == ' ')
            i++;
        yl_node *val;
        if (at_eol(p, i) || p->s[i] == '#')
            val = value_below(p, i, col, 1);
        else
            val = inline_value(p, i);
        if (!val || node_add(p, m, key, val) != 0) {
            if (!val)
                yl_free(key);
            yl_free(m);
            return NULL;
        }
        c = next_content(p, p->pos);
        if (p->failed) {
            yl_free(m);
            return NULL;
        }
        if (c >= p->len || column(p, c) < col)
            break;
        if (column(p, c) > col) {
            yl_free(m);
            return fail(p, c, "unexpected indentation (a multi-line value?)");
        }
        if (col == 0 && (strncmp(p->s + c, "---", 3) == 0 || strncmp(p->s + c, "...", 3) == 0))
            break;
    }
    return m;
}

static yl_node *block_seq(ps *p, size_t c, int col)
{
    yl_node *s = node_new(p, YL_SEQ, c);
    if (!s)
        return NULL;
    for (;;) {
        size_t i = c + 1;
        while (i < p->len && p->s[i] == ' ')
            i++;
        yl_node *item;
        if (at_eol(p, i) || p->s[i] == '#') {
            item = value_below(p, i, col, 0);
        } else {
            size_t kend, colon;
            if (is_seq_item(p, i) || key_at(p, i, &kend, &colon))
                item = block_node(p, i, column(p, i));
            else
                item = inline_value(p, i);
        }
        if (!item || node_add(p, s, NULL, item) != 0) {
            yl_free(s);
            return NULL;
        }
        c = next_content(p, p->pos);
        if (p->failed) {
            yl_free(s);
            return NULL;
        }
        if (c >= p->len || column(p, c) < col)
            break;
        if (column(p, c) > col) {
            yl_free(s);
            return fail(p, c, "unexpected indentation (a multi-line value?)");
        }
        if (!is_seq_item(p, c))
            break;  /* the mapping that holds this sequence continues */
    }
    return s;
}

static yl_node *block_node(ps *p, size_t c, int col)
{
    size_t kend, colon;
    yl_node *n;
    if (++p->depth > YL_MAX_DEPTH)
        return fail(p, c, "nested too deeply");
    if (is_seq_item(p, c))
        n = block_seq(p, c, col);
    else if (key_at(p, c, &kend, &colon))
        n = block_map(p, c, col);
    else
        n = inline_value(p, c);
    p->depth--;
    return n;
}

int yl_parse(const char *text, size_t len, yl_node **root, char *err, size_t errsize)
{
    ps p = {text, len, 0, 0, 0, err, errsize, 0};
    *root = NULL;
    err[0] = '\0';
    /* the library accepts (and stores) a rule file with a UTF-8 mark */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p.base = 3;
    size_t c = next_content(&p, p.base);
    if (!p.failed && c < len && column(&p, c) == 0 && p.s[c] == '%') {
        fail(&p, c, "directives (%%) are not supported");
    } else if (!p.failed && c < len && column(&p, c) == 0 && strncmp(text + c, "---", 3) == 0 &&
               at_eol(&p, c + 3)) {
        c = next_content(&p, end_of_line(&p, c + 3));
    }
    yl_node *n = NULL;
    if (!p.failed) {
        if (c >= len) {
            n = node_new(&p, YL_MAP, c);
        } else if (column(&p, c) != 0) {
            fail(&p, c, "the document does not start in column 1");
        } else {
            n = block_node(&p, c, 0);
            if (n && !p.failed) {
                size_t rest = next_content(&p, p.pos);
                if (rest < len && strncmp(text + rest, "...", 3) == 0 && at_eol(&p, rest + 3))
                    rest = next_content(&p, end_of_line(&p, rest + 3));
                if (!p.failed && rest < len)
                    fail(&p, rest, "more than one document, or text after the document");
            }
        }
    }
    if (p.failed) {
        yl_free(n);
        return -1;
    }
    *root = n;
    return 0;
}

/* ---- lookups ---------------------------------------------------------------- */

const yl_node *yl_get(const yl_node *map, const char *key)
{
    if (!map || map->type != YL_MAP)
        return NULL;
    for (int i = 0; i < map->n; i++)
        if (map->keys[i] && map->keys[i]->text && strcmp(map->keys[i]->text, key) == 0)
            return map->vals[i];
    return NULL;
}

const char *yl_text(const yl_node *map, const char *key)
{
    const yl_node *v = yl_get(map, key);
    return v && v->type == YL_SCALAR ? v->text : NULL;
}
