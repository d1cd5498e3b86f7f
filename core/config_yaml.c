/*
 * config_yaml.c - first pass of the loader: libyaml events to a node tree.
 *
 * libyaml's event API is used rather than its document loader because the
 * events still show what must be refused: aliases and anchors (the "billion
 * laughs" bomb), explicit tags, and nesting deeper than CONFIG_MAX_DEPTH
 * (checked before the node is created, so a 100000-deep document costs
 * nothing).  Duplicate keys are found when a mapping closes.
 *
 * The tree is two growing arrays: nodes (children linked by index) and one
 * string arena holding every scalar, NUL-terminated.  A fatal error (syntax,
 * encoding, depth, too many nodes, a second document) replaces every error
 * found so far: it is then the only one reported.
 */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "config_int.h"

typedef struct frame {
    int node;   /* the open collection */
    int last;   /* its last child so far, -1 if none */
} frame;

typedef struct builder {
    cfg *c;
    frame stack[CONFIG_MAX_DEPTH];
    int depth;
    int docs;
} builder;

/* Forgets every error so far and records the fatal one. */
static void fatal(cfg *c, int line, int col, const char *msg)
{
    if (c->errs) {
        c->errs->n = 0;
        c->errs->total = 0;
    }
    rls__config_err_at(c, line, col, "%s", msg);
}

/* Appends a node of type at mark m under the open collection.  Returns its
 * index, -1 after a fatal error, -2 on out of memory. */
static int add_node(builder *b, int type, const yaml_mark_t *m)
{
    cfg *c = b->c;
    if (c->nnodes >= CFG_MAX_NODES) {
        char msg[96];
        snprintf(msg, sizeof msg, "the document has more than %d YAML nodes",
                 CFG_MAX_NODES);
        fatal(c, (int)m->line + 1, (int)m->column + 1, msg);
        return -1;
    }
    if (c->nnodes == c->capnodes) {
        int cap = c->capnodes ? c->capnodes * 2 : 64;
        cnode *nn = rls__config_realloc(c->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return -2;
        c->nodes = nn;
        c->capnodes = cap;
    }
    int i = c->nnodes++;
    cnode *n = &c->nodes[i];
    memset(n, 0, sizeof *n);
    n->type = (unsigned char)type;
    n->line = (int)m->line + 1;
    n->col = (int)m->column + 1;
    n->at = m->index;
    n->at_end = m->index;
    n->first = -1;
    n->next = -1;
    if (b->depth > 0) {
        frame *f = &b->stack[b->depth - 1];
        if (f->last < 0)
            c->nodes[f->node].first = i;
        else
            c->nodes[f->last].next = i;
        f->last = i;
        c->nodes[f->node].n++;
    } else {
        c->root = i;
    }
    return i;
}

/* Copies a scalar's text into the arena. */
static int add_text(cfg *c, int node, const unsigned char *s, size_t len)
{
    if (c->capstrs - c->nstrs < len + 1) {
        size_t cap = c->capstrs ? c->capstrs : 4096;
        while (cap - c->nstrs < len + 1)
            cap *= 2;
        char *ns = rls__config_realloc(c->strs, cap);
        if (!ns)
            return -2;
        c->strs = ns;
        c->capstrs = cap;
    }
    if (len)
        memcpy(c->strs + c->nstrs, s, len);
    c->strs[c->nstrs + len] = '\0';
    c->nodes[node].off = c->nstrs;
    c->nodes[node].len = len;
    c->nstrs += len + 1;
    return 0;
}

/* Anchors and tags are refused on any node (not fatal). */
static void check_props(cfg *c, const yaml_mark_t *m, const yaml_char_t *anchor,
                        const yaml_char_t *tag)
{
    if (anchor)
        rls__config_err_at(c, (int)m->line + 1, (int)m->column + 1,
                       "anchors are not allowed (found '&%.40s')",
                       (const char *)anchor);
    if (tag)
        rls__config_err_at(c, (int)m->line + 1, (int)m->column + 1,
                       "explicit tags are not allowed (found '%.60s')",
                       (const char *)tag);
}

typedef struct keyref {
    const char *s;
    size_t len;
    int node;
} keyref;

static int keyref_cmp(const void *pa, const void *pb)
{
    const keyref *a = pa, *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int r = n ? memcmp(a->s, b->s, n) : 0;
    if (r)
        return r;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return (a->node > b->node) - (a->node < b->node);
}

static void report_dup(cfg *c, int dup, int first)
{
    char what[80];
    rls__config_describe(c, dup, what, sizeof what);
    rls__config_err(c, dup, NULL, "duplicate key %s (first defined at %d:%d)",
                what, c->nodes[first].line, c->nodes[first].col);
    c->nodes[dup].skip = 1;
}

/*
 * Marks the keys of a closed mapping that walkers must ignore: non-scalar
 * keys and every repetition of a key (reported at the repetition, naming
 * the first).  Small mappings compare pairwise; large ones (actions,
 * tiers) sort.  Returns 0 or -2 on out of memory.
 */
static int check_keys(cfg *c, int map)
{
    int npairs = c->nodes[map].n / 2;
    keyref small[8];
    keyref *refs = small;
    int nref = 0;
    if (npairs > 8) {
        refs = rls__config_malloc((size_t)npairs * sizeof *refs);
        if (!refs)
            return -2;
    }
    for (int k = c->nodes[map].first; k >= 0; k = rls__config_next_pair(c, k)) {
        cnode *kn = &c->nodes[k];
        if (kn->type == CN_BAD) {
            kn->skip = 1;
        } else if (kn->type != CN_SCALAR) {
            rls__config_err(c, k, NULL, "mapping keys must be plain strings, "
                        "not %s", kn->type == CN_MAP ? "mappings" : "lists");
            kn->skip = 1;
        } else {
            refs[nref].s = c->strs + kn->off;
            refs[nref].len = kn->len;
            refs[nref].node = k;
            nref++;
        }
    }
    if (refs == small) {
        for (int i = 1; i < nref; i++)
            for (int j = 0; j < i; j++)
                if (refs[i].len == refs[j].len &&
                    memcmp(refs[i].s, refs[j].s, refs[i].len) == 0 &&
                    !c->nodes[refs[j].node].skip) {
                    report_dup(c, refs[i].node, refs[j].node);
                    break;
                }
        return 0;
    }
    qsort(refs, (size_t)nref, sizeof *refs, keyref_cmp);
    for (int i = 1, first = 0; i < nref; i++) {
        if (refs[i].len == refs[first].len &&
            memcmp(refs[i].s, refs[first].s, refs[i].len) == 0)
            report_dup(c, refs[i].node, refs[first].node);
        else
            first = i;
    }
    free(refs);
    return 0;
}

/* Line and column (1-based, in bytes) of a byte offset of text. */
static void offset_place(const char *text, size_t len, size_t off, int *line,
                         int *col)
{
    int l = 1;
    size_t start = 0;
    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++)
        if (text[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *col = (int)(off - start) + 1;
}

/* Turns a libyaml failure into the one fatal error.  -1, or -2 for memory.
 * text excludes a byte order mark of skip bytes: byte offsets name the
 * file's bytes, lines and columns the text an editor shows. */
static int parser_error(cfg *c, const yaml_parser_t *p, const char *text,
                        size_t len, size_t skip)
{
    char msg[200];
    int line, col;
    const char *problem = p->problem ? p->problem : "unknown error";
    /* libyaml 0.2.5's tag scanner fails an allocation without setting an
     * error code: a failure with no error is out of memory too */
    if (p->error == YAML_MEMORY_ERROR || p->error == YAML_NO_ERROR)
        return -2;
    if (p->error == YAML_READER_ERROR) {
        offset_place(text, len, p->problem_offset, &line, &col);
        if (p->problem_value != -1)
            snprintf(msg, sizeof msg, "invalid YAML: %s (0x%X at byte %zu); "
                     "the file must be UTF-8 text", problem,
                     (unsigned)p->problem_value, p->problem_offset + skip);
        else
            snprintf(msg, sizeof msg, "invalid YAML: %s at byte %zu", problem,
                     p->problem_offset + skip);
    } else {
        line = (int)p->problem_mark.line + 1;
        col = (int)p->problem_mark.column + 1;
        if (p->context)
            snprintf(msg, sizeof msg, "invalid YAML: %s (%s started at %d:%d)",
                     problem, p->context, (int)p->context_mark.line + 1,
                     (int)p->context_mark.column + 1);
        else
            snprintf(msg, sizeof msg, "invalid YAML: %s", problem);
    }
    fatal(c, line, col, msg);
    return -1;
}

/* Handles one event.  Returns 1 at the end of the stream, 0 to go on, -1
 * after a fatal error, -2 on out of memory. */
static int on_event(builder *b, const yaml_event_t *ev)
{
    cfg *c = b->c;
    const yaml_mark_t *m = &ev->start_mark;
    int line = (int)m->line + 1, col = (int)m->column + 1;
    int i;
    char msg[80];

    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (b->docs++ > 0) {
            fatal(c, line, col, "only one YAML document is allowed");
            return -1;
        }
        return 0;
    case YAML_ALIAS_EVENT:
        rls__config_err_at(c, line, col, "aliases are not allowed (found '*%.40s')",
                       (const char *)ev->data.alias.anchor);
        i = add_node(b, CN_BAD, m);
        return i < 0 ? i : 0;
    case YAML_SCALAR_EVENT:
        check_props(c, m, ev->data.scalar.anchor, ev->data.scalar.tag);
        i = add_node(b, CN_SCALAR, m);
        if (i < 0)
            return i;
        c->nodes[i].plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        c->nodes[i].at_end = ev->end_mark.index;
        return add_text(c, i, ev->data.scalar.value, ev->data.scalar.length);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (ev->type == YAML_SEQUENCE_START_EVENT)
            check_props(c, m, ev->data.sequence_start.anchor,
                        ev->data.sequence_start.tag);
        else
            check_props(c, m, ev->data.mapping_start.anchor,
                        ev->data.mapping_start.tag);
        if (b->depth >= CONFIG_MAX_DEPTH) {
            snprintf(msg, sizeof msg, "nesting deeper than %d levels",
                     CONFIG_MAX_DEPTH);
            fatal(c, line, col, msg);
            return -1;
        }
        i = add_node(b, ev->type == YAML_MAPPING_START_EVENT ? CN_MAP : CN_SEQ,
                     m);
        if (i < 0)
            return i;
        b->stack[b->depth].node = i;
        b->stack[b->depth].last = -1;
        b->depth++;
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth <= 0)
            return 0;  /* libyaml guarantees balance */
        b->depth--;
        if (ev->type == YAML_MAPPING_END_EVENT)
            return check_keys(c, b->stack[b->depth].node);
        return 0;
    default:
        return 0;
    }
}

/*
 * The length of a UTF-8 byte order mark at the start of text (3 or 0), or
 * -1 after the fatal error for a UTF-16 or UTF-32 one.  Editors on Windows
 * write the UTF-8 mark; libyaml skips it only when it detects the encoding
 * itself, which the loader does not let it do (below).
 */
static int byte_order_mark(cfg *c, const char *text, size_t len)
{
    const unsigned char *u = (const unsigned char *)text;
    if (len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF)
        return 3;
    if (len >= 4 && ((u[0] == 0 && u[1] == 0 && u[2] == 0xFE && u[3] == 0xFF) ||
                     (u[0] == 0xFF && u[1] == 0xFE && u[2] == 0 && u[3] == 0))) {
        fatal(c, 1, 1, "the file is UTF-32 text (it starts with a byte order "
              "mark); save it as UTF-8");
        return -1;
    }
    if (len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE))) {
        fatal(c, 1, 1, "the file is UTF-16 text (it starts with a byte order "
              "mark); save it as UTF-8");
        return -1;
    }
    return 0;
}

/* Contract: see config_int.h. */
int rls__config_load_yaml(cfg *c, const char *text, size_t len)
{
    yaml_parser_t parser;
    builder b;
    int rc = 0;

    memset(&b, 0, sizeof b);
    b.c = c;
    c->root = -1;
    int skip = byte_order_mark(c, text, len);
    if (skip < 0)
        return -1;
    text += skip;
    len -= (size_t)skip;
    if (!yaml_parser_initialize(&parser))
        return -2;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    /* Never guess UTF-16 from a byte order mark: binary garbage must be
     * reported as invalid UTF-8, not decoded as something else (a UTF-8
     * mark is skipped above, a UTF-16 one refused by name). */
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(c, &parser, text, len, (size_t)skip);
            break;
        }
        int r = on_event(&b, &ev);
        yaml_event_delete(&ev);
        if (r != 0) {
            rc = r > 0 ? 0 : r;
            break;
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

void rls__config_tree_free(cfg *c)
{
    free(c->nodes);
    free(c->strs);
    c->nodes = NULL;
    c->strs = NULL;
    c->nnodes = c->capnodes = 0;
    c->nstrs = c->capstrs = 0;
}
