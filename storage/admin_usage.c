/*
 * admin_usage.c - rls_usage_at(): keys with their most pressing limit, as a
 * check would see them now, sorted and paged; rls_usage_count_at(): how
 * long that list is.  Neither looks at every key (usage.h explains the
 * list's two parts; usage_src.c does the work of one action).
 *
 * A page at offset o of limit l:
 *  - without an anchor: the heads of the actions with o + l candidates
 *    each, merged in the order asked for; if they hold fewer than o + l
 *    rows (then they are complete), the rest comes from the merged tails,
 *    stepped from their start;
 *  - with an anchor row (in the tail) at offset a: the tails are stepped
 *    from the anchor, forward to o or backward to it; with an end anchor
 *    (the list's length n), backward from the end.  The anchor is used
 *    when it is closer than the start; a walk that reaches the start of
 *    the tails before o falls back to the first way.
 * Everything runs in one read transaction, ended before returning.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keycount.h"
#include "usage.h"

#define OFFSET_MAX 1000000000

/* A row of the page: source and row index (and, to sort heads, the row
 * and the order: qsort has no context argument). */
typedef struct ref {
    int src, row;
    const usage_row *x;
    int sort;
} ref;

typedef struct page {
    ref *r;
    int n, cap;
} page;

static int page_add(usage_ctx *u, page *p, int src, int row)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 64;
        ref *nr = realloc(p->r, sizeof *nr * (size_t)cap);
        if (!nr)
            return rls__error(u->db, RLS_ENOMEM, "out of memory");
        p->r = nr;
        p->cap = cap;
    }
    p->r[p->n].src = src;
    p->r[p->n].row = row;
    p->r[p->n].x = NULL;
    p->r[p->n].sort = u->sort;
    p->n++;
    return RLS_OK;
}

static const usage_row *row_of(const usage_ctx *u, ref r)
{
    return &u->src[r.src].rows[r.row];
}

/* ---- orders -------------------------------------------------------------------- */

static int by_key(const usage_row *x, const usage_row *y)
{
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->action, y->action);
}

/* The head's order; blocked keys by key so that a bounded list of them
 * (the first ones by key) pages consistently. */
static int head_cmp(int sort, const usage_row *x, const usage_row *y)
{
    if (sort == RLS_SORT_DENIED) {
        if (x->denied != y->denied)
            return x->denied > y->denied ? -1 : 1;
    } else if (sort == RLS_SORT_RESET) {
        if (x->reset_ms != y->reset_ms)
            return x->reset_ms < y->reset_ms ? -1 : 1;
    } else {
        if (x->blocked != y->blocked)
            return y->blocked - x->blocked;
        /* an unlimited key is never under pressure: it sorts with the
         * idle ones, however far past its limit it is counted */
        int64_t xp = x->unlimited ? 0 : x->ppm, yp = y->unlimited ? 0 : y->ppm;
        if (!x->blocked && xp != yp)
            return xp > yp ? -1 : 1;
    }
    return by_key(x, y);
}

static int head_qsort(const void *a, const void *b)
{
    const ref *x = a, *y = b;
    return head_cmp(x->sort, x->x, y->x);
}

/* ---- merged tails ----------------------------------------------------------------- */

typedef struct merged {
    tail_cur *c;
    int *order;   /* cursors by keys, most first: they set the frontier */
    int n, dir;
} merged;

static void merged_close(merged *m)
{
    for (int i = 0; m->c && i < m->n; i++)
        rls__tail_close(&m->c[i]);
    free(m->c);
    free(m->order);
    m->c = NULL;
    m->order = NULL;
}

/*
 * Opens every action's tail in direction dir at the position of the row
 * (action, key): forward at it (included), backward before it; key NULL:
 * the start (forward) or the end (backward).  (key, action) order: for an
 * action after `action` the key itself comes after the position.
 */
static int merged_open(usage_ctx *u, merged *m, int dir, const char *key, const char *action)
{
    m->n = 0;
    m->dir = dir;
    m->c = calloc((size_t)u->nsrc + 1, sizeof *m->c);
    m->order = calloc((size_t)u->nsrc + 1, sizeof *m->order);
    if (!m->c || !m->order)
        return rls__error(u->db, RLS_ENOMEM, "out of memory");
    for (int i = 0; i < u->nsrc; i++) {
        int after = key && strcmp(u->src[i].action, action ? action : "") >= 0;
        /* forward: (k, a) >= (key, action); backward: (k, a) < (key, action) */
        int incl = dir > 0 ? after : !after;
        int rc = rls__tail_open(u, &m->c[i], &u->src[i], dir, key, incl);
        m->n = i + 1;
        if (rc)
            return rc;
        int k = i;   /* insertion by keys, descending */
        while (k > 0 && u->src[m->order[k - 1]].nkeys < u->src[i].nkeys) {
            m->order[k] = m->order[k - 1];
            k--;
        }
        m->order[k] = i;
    }
    return RLS_OK;
}

/* Whether cursor i's key comes before cursor j's in the walk's order. */
static int merged_before(const usage_ctx *u, const merged *m, int i, int j)
{
    int c = strcmp(m->c[i].key, m->c[j].key);
    if (c == 0)
        c = strcmp(u->src[i].action, u->src[j].action);
    return m->dir > 0 ? c < 0 : c > 0;
}

/*
 * The cursor whose key comes next, or -1 (*best).  A cursor without a
 * current key reads on only as far as the cursor of the best key so far
 * has read (its frontier): the denser actions go first and set it, and a
 * sparse action then costs a query per batch of the dense one, not a scan
 * up to its own next key.
 */
static int merged_pick(usage_ctx *u, merged *m, int *best)
{
    int b = -1, rc;
    for (int i = 0; i < m->n; i++)
        if (m->c[i].key && (b < 0 || merged_before(u, m, i, b)))
            b = i;
    for (int k = 0; k < m->n; k++) {
        int i = m->order[k];
        tail_cur *c = &m->c[i];
        if (c->key || rls__tail_done(c) || (b >= 0 && rls__tail_beyond(c, m->c[b].key)))
            continue;
        if ((rc = rls__tail_next(u, c, b >= 0 ? rls__tail_reach(&m->c[b]) : NULL)))
            return rc;
        if (c->key && (b < 0 || merged_before(u, m, i, b)))
            b = i;
    }
    *best = b;
    return RLS_OK;
}

/* Steps over `skip` tail rows, then appends up to `take` to p (in walking
 * order); *stepped = rows walked in all. */
static int merged_walk(usage_ctx *u, merged *m, long skip, long take, page *p, long *stepped)
{
    int rc = RLS_OK, i;
    *stepped = 0;
    while (rc == RLS_OK && *stepped < skip + take) {
        if ((rc = merged_pick(u, m, &i)) || i < 0)
            break;
        tail_cur *c = &m->c[i];
        if (*stepped >= skip) {
            int row = c->row;
            if (row < 0)
                rc = rls__usage_peek(u, c->s, c->key, &row);
            if (rc == RLS_OK && !c->s->rows[row].skip)
                rc = page_add(u, p, i, row);
        }
        (*stepped)++;
        c->key = NULL;   /* taken: the next pick moves it on */
    }
    return rc;
}

/* ---- the page ----------------------------------------------------------------------- */

/* Without an anchor: heads, then tails from their start. */
static int page_from_start(usage_ctx *u, long off, long lim, page *out)
{
    page h = {NULL, 0, 0};
    long want = off + lim;
    int done = 1, rc = RLS_OK;
    for (int i = 0; rc == RLS_OK && i < u->nsrc; i++) {
        usage_src *s = &u->src[i];
        rc = rls__usage_head(u, s, want > INT_MAX ? INT_MAX : (int)want);
        done &= s->head_done;
        for (int k = 0; rc == RLS_OK && k < s->nhead; k++)
            rc = page_add(u, &h, i, s->head[k]);
    }
    if (rc == RLS_OK && h.n > 1) {
        for (int k = 0; k < h.n; k++)   /* rows move when more are peeked: now */
            h.r[k].x = row_of(u, h.r[k]);
        qsort(h.r, (size_t)h.n, sizeof *h.r, head_qsort);
    }
    for (long k = off; rc == RLS_OK && k < h.n && k < want; k++)
        rc = page_add(u, out, h.r[k].src, h.r[k].row);
    /* An incomplete head has at least `want` rows: the page is in it. */
    if (rc == RLS_OK && done && h.n < want) {
        merged m = {NULL, NULL, 0, 0};
        long skip = off > h.n ? off - h.n : 0, stepped;
        rc = merged_open(u, &m, 1, NULL, NULL);
        if (rc == RLS_OK)
            rc = merged_walk(u, &m, skip, want - (off > h.n ? off : h.n), out, &stepped);
        merged_close(&m);
    }
    free(h.r);
    return rc;
}

static void reverse(page *p, int from)
{
    for (int i = from, j = p->n - 1; i < j; i++, j--) {
        ref t = p->r[i];
        p->r[i] = p->r[j];
        p->r[j] = t;
    }
}

/*
 * From an anchor: the row (action, key) at offset a, or with key NULL the
 * end of a list of a rows.  *fell: the walk reached the start of the
 * tails before off, so the anchor cannot place the page.
 */
static int page_from_anchor(usage_ctx *u, const char *key, const char *action, long a,
                            long off, long lim, page *out, int *fell)
{
    merged m = {NULL, NULL, 0, 0};
    long stepped;
    int rc = RLS_OK;
    *fell = 0;
    if (!key && off >= a)
        return RLS_OK;   /* past the end */
    if (off < a) {
        /* backward from the anchor: rows a-1, a-2, ... down to off */
        long end = off + lim < a ? off + lim : a;
        rc = merged_open(u, &m, -1, key, action);
        if (rc == RLS_OK)
            rc = merged_walk(u, &m, a - end, end - off, out, &stepped);
        merged_close(&m);
        if (rc == RLS_OK && stepped < a - off) {
            *fell = 1;
            return RLS_OK;
        }
        reverse(out, 0);
    }
    if (rc == RLS_OK && key && off + lim > a) {
        long skip = off > a ? off - a : 0;
        long take = off + lim - (off > a ? off : a);
        rc = merged_open(u, &m, 1, key, action);
        if (rc == RLS_OK)
            rc = merged_walk(u, &m, skip, take, out, &stepped);
        merged_close(&m);
    }
    return rc;
}

/* ---- the result ----------------------------------------------------------------------- */

static rls_rows *page_rows(const usage_ctx *u, const page *p)
{
    static const rows_col cols[] = {
        {"action", RLS_COL_TEXT},    {"key", RLS_COL_TEXT},         {"tier", RLS_COL_TEXT},
        {"rule", RLS_COL_TEXT},      {"used", RLS_COL_INT},         {"limit", RLS_COL_INT},
        {"remaining", RLS_COL_INT},  {"fraction_ppm", RLS_COL_INT}, {"reset_ms", RLS_COL_INT},
        {"blocked", RLS_COL_INT},    {"block_until_ms", RLS_COL_INT},
        {"state", RLS_COL_TEXT},     {"denied", RLS_COL_INT},
    };
    rls_rows *r = rls__rows_new(cols, (int)(sizeof cols / sizeof cols[0]));
    for (int i = 0; r && i < p->n; i++) {
        const usage_row *x = row_of(u, p->r[i]);
        int row = rls__rows_add(r);
        if (row < 0 || rls__rows_put_str(r, row, "action", x->action) ||
            rls__rows_put_str(r, row, "key", x->key) || rls__rows_put_str(r, row, "tier", x->tier) ||
            rls__rows_put_str(r, row, "rule", x->rule) || rls__rows_put_int(r, row, "used", x->used) ||
            rls__rows_put_int(r, row, "limit", x->limit) ||
            rls__rows_put_int(r, row, "remaining", x->remaining) ||
            rls__rows_put_int(r, row, "fraction_ppm", x->ppm) ||
            rls__rows_put_int(r, row, "reset_ms", x->reset_ms) ||
            rls__rows_put_int(r, row, "blocked", x->blocked) ||
            rls__rows_put_int(r, row, "block_until_ms", x->block_until) ||
            rls__rows_put_str(r, row, "state", x->state) ||
            rls__rows_put_int(r, row, "denied", x->denied)) {
            rls_rows_free(r);
            return NULL;
        }
    }
    return r;
}

/* Validates q and opens the listing: a read transaction, the actions. */
static int usage_begin(rls_db *db, const rls_usage_query *q, int64_t now_ms, usage_ctx *u)
{
    int rc;
    memset(u, 0, sizeof *u);
    if (!q)
        return db ? rls__error(db, RLS_EINVAL, "query is NULL") : RLS_EINVAL;
    if ((rc = rls__db_usable(db)))
        return rc;
    db->errmsg[0] = '\0';
    if (q->size < sizeof *q || q->sort < RLS_SORT_USED ||
        q->sort > RLS_SORT_DENIED)
        return rls__error(db, RLS_EINVAL, "usage query: size or sort is invalid");
    if (now_ms < RLS_TIME_MIN || now_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now_ms);
    u->db = db;
    u->now = now_ms;
    memset(u->inf, 0xff, sizeof u->inf);
    u->sort = q->sort;
    u->substr = q->key_substr && *q->key_substr ? q->key_substr : NULL;
    if (!(u->kc = malloc(sizeof *u->kc)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    u->kc->n = 0;
    if ((rc = rls__begin(db, 0)) || (rc = rls__cache_refresh(db)))
        return rc;
    if (!db->rc.rules)
        return rls__error(db, RLS_ENORULES, "no rules applied to '%s' yet", db->ident.path);
    if (q->action && *q->action && !rls__ruleset_action(db->rc.rules, q->action))
        return rls__error(db, RLS_ENOACTION, "action '%s' is not defined", q->action);
    if (!(u->src = calloc((size_t)db->rc.rules->nactions + 1, sizeof *u->src)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    int64_t all = 0;
    if ((rc = rls__keycount_total(db, &all)))
        return rc;
    u->few_keys = all <= USAGE_EXACT_MAX;
    for (int i = 0; rc == RLS_OK && i < db->rc.rules->nactions; i++) {
        const char *a = db->rc.rules->actions[i].name;
        if (q->action && *q->action && strcmp(a, q->action) != 0)
            continue;
        u->src[u->nsrc].action = a;
        rc = rls__keycount_get(db, a, &u->src[u->nsrc].nkeys);
        u->nsrc++;
    }
    return rc;
}

/* Ends the transaction (rc decides how) and frees the listing. */
static int usage_end(usage_ctx *u, rls_db *db, int rc)
{
    rls__usage_ctx_free(u);
    free(u->kc);
    u->kc = NULL;
    if (db && db->conn.in_tx) {
        if (rc == RLS_OK)
            rc = rls__commit(db);
        else
            rls__rollback(db);
    }
    return rc;
}

/* A page of q, from the anchor when it helps (anchor may be NULL). */
static int usage_page(rls_db *db, const rls_usage_query *q, const rls_usage_anchor *anchor,
                      int64_t now_ms, rls_rows **out)
{
    usage_ctx u;
    page p = {NULL, 0, 0};
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    int rc = usage_begin(db, q, now_ms, &u);
    if (rc == RLS_OK && (q->limit < 1 || q->limit > 100000 || q->offset < 0 ||
                         q->offset > OFFSET_MAX))
        rc = rls__error(db, RLS_EINVAL, "usage query: limit (1..100000) or offset "
                        "(0..%d) is invalid", OFFSET_MAX);
    if (rc == RLS_OK && anchor &&
        (anchor->size < sizeof *anchor || anchor->offset < 0 || anchor->offset > OFFSET_MAX))
        rc = rls__error(db, RLS_EINVAL, "usage anchor: size or offset (0..%d) is invalid",
                        OFFSET_MAX);
    if (rc == RLS_OK)
        rc = rls__usage_small(&u);
    long off = rc == RLS_OK ? q->offset : 0, lim = rc == RLS_OK ? q->limit : 0;
    const char *akey = anchor ? anchor->key : NULL;
    const char *aaction = anchor && anchor->action ? anchor->action : "";
    long aoff = anchor ? anchor->offset : 0;
    /* an anchor helps when it is closer than the start */
    int anchored = rc == RLS_OK && anchor && (akey || aoff > 0) &&
                   (akey ? labs(off - aoff) : aoff - off) < off;
    if (anchored && akey) {
        int in = 0;
        for (int i = 0; rc == RLS_OK && i < u.nsrc; i++)
            if (strcmp(u.src[i].action, aaction) == 0)
                rc = rls__usage_in_head(&u, &u.src[i], akey, &in);
        anchored = !in;
    }
    if (rc == RLS_OK && anchored) {
        int fell = 0;
        rc = page_from_anchor(&u, akey, aaction, aoff, off, lim, &p, &fell);
        if (rc == RLS_OK && fell) {
            p.n = 0;
            anchored = 0;
        }
    }
    if (rc == RLS_OK && !anchored)
        rc = page_from_start(&u, off, lim, &p);
    if (rc == RLS_OK && !(*out = page_rows(&u, &p)))
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    free(p.r);
    rc = usage_end(&u, db, rc);
    if (rc != RLS_OK) {
        rls_rows_free(*out);
        *out = NULL;
    }
    return rc;
}

int rls_usage_at(rls_db *db, const rls_usage_query *q, int64_t now_ms, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return usage_page(db, q, NULL, now_ms, out);
}

int rls_usage_near_at(rls_db *db, const rls_usage_query *q, const rls_usage_anchor *anchor,
                      int64_t now_ms, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return usage_page(db, q, anchor, now_ms, out);
}

int rls_usage_count_at(rls_db *db, const rls_usage_query *q, int64_t now_ms, int64_t *count)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    usage_ctx u;
    if (!count)
        return db ? rls__error(db, RLS_EINVAL, "count is NULL") : RLS_EINVAL;
    *count = 0;
    int rc = usage_begin(db, q, now_ms, &u);
    if (rc == RLS_OK)
        rc = rls__usage_count(&u, count);
    rc = usage_end(&u, db, rc);
    if (rc != RLS_OK)
        *count = 0;
    return rc;
}
