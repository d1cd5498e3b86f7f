/*
 * copy_rows.c - the rows of a copy (copy.h): each per-key table of the
 * source walked in pages of COPY_PAGE rows in primary-key order (keyset
 * paging: each page starts after the last row of the one before), each row
 * given its place in the destination's rules or counted as left out, and
 * inserted unless a row of the same identity is there ("ON CONFLICT DO
 * NOTHING": the destination's row wins).  Inserts are deferred steps
 * (sql.h): PostgreSQL sends a page's in one pipeline with the page's last
 * statement, and the rows they changed, counted per statement, tell copied
 * from kept.  States are copied verbatim, under the destination's id of
 * the same (action, limit name): no arithmetic of the algorithms here.
 */
#include <stdlib.h>
#include <string.h>
#include "algo.h"
#include "keycount.h"
#include "copy.h"
#include "events.h"

/* Steps a destination insert (deferred), reset afterwards. */
static int dst_insert(copy *c, int id, int kind)
{
    rls_stmt *st = c->st[id];
    int rc = sql_step_deferred(st);
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__sql_error(c->dst, rc, "cannot copy into the destination");
    c->t[kind].tried++;
    return RLS_OK;
}


/* ---- the destination's rules --------------------------------------------- */

/* Whether action a has a limit called name, in its defaults or any tier;
 * *lid (may be NULL) gets its id, *algs (may be NULL) a bit 1 << algorithm
 * for each definition.  A name registered with its variant (apply.c)
 * matches only a definition of that variant. */
static int limit_place(const rule_action *a, const char *name, int64_t *lid, unsigned int *algs)
{
    int found = 0;
    char reg[RULES_NAME_MAX + RULES_SIG_MAX + 2];
    const char *sep = strchr(name, RLS_VARIANT_SEP);
    size_t base = sep ? (size_t)(sep - name) : strlen(name);
    for (int t = -1; t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int i = 0; i < n; i++) {
            if (strlen(ls[i].name) != base || memcmp(ls[i].name, name, base) != 0)
                continue;
            found = 1;
            if (sep)
                rls__limit_regname(&ls[i], reg, sizeof reg);
            if (lid && (!sep || strcmp(reg, name) == 0))
                *lid = ls[i].id;
            if (algs)
                *algs |= 1u << ls[i].algorithm;
        }
    }
    return found;
}

/* The action of the destination's rules, or NULL ("" is every action). */
static const rule_action *dst_action(copy *c, const char *name)
{
    return name ? rls__ruleset_action(c->dst->rc.rules, name) : NULL;
}

static int cmp_lmap(const void *a, const void *b)
{
    const lmap *x = a, *y = b;
    return x->src_lid < y->src_lid ? -1 : x->src_lid > y->src_lid;
}

/* Every limit id of the source, with its id and algorithms in the
 * destination's rules (which carry the destination's ids, cache.c). */
static int build_map(copy *c)
{
    rls_stmt *st = rls__stmt(c->src, STMT_LIMITS_ALL);
    int rc, cap = 0;
    if (!st)
        return rls__copy_src_failed(c, rls__stmt_failed(c->src));
    while ((rc = sql_step(st)) == SQL_ROW) {
        const char *an = (const char *)sql_column_text(st, 1);
        const char *ln = (const char *)sql_column_text(st, 2);
        if (c->nmap == cap) {
            cap = cap ? cap * 2 : 64;
            lmap *m = realloc(c->map, sizeof *m * (size_t)cap);
            if (!m) {
                sql_reset(st);
                return rls__error(c->dst, RLS_ENOMEM, "out of memory");
            }
            c->map = m;
        }
        lmap *m = &c->map[c->nmap++];
        const rule_action *a = dst_action(c, an);
        *m = (lmap){sql_column_int64(st, 0), 0, 0, a ? a->name : NULL};
        if (a && ln)
            limit_place(a, ln, &m->dst_lid, &m->algs);
    }
    sql_reset(st);
    if (rc != SQL_DONE)
        return rls__copy_src_failed(c, rls__sql_error(c->src, rc, "cannot read limit ids"));
    if (c->nmap > 1)
        qsort(c->map, (size_t)c->nmap, sizeof *c->map, cmp_lmap);
    return RLS_OK;
}

/* The entry of source limit lid, with a place in the destination or not. */
static const lmap *map_entry(const copy *c, int64_t lid)
{
    lmap key = {lid, 0, 0, NULL};
    return c->nmap ? bsearch(&key, c->map, (size_t)c->nmap, sizeof *c->map, cmp_lmap) : NULL;
}

static const lmap *map_find(const copy *c, int64_t lid)
{
    lmap key = {lid, 0, 0, NULL};
    const lmap *m = c->nmap ? bsearch(&key, c->map, (size_t)c->nmap, sizeof key, cmp_lmap)
                            : NULL;
    return m && m->dst_lid ? m : NULL;
}

/* ---- walking a source table in pages -------------------------------------- */

typedef int (*row_fn)(copy *c, rls_stmt *row);

static int fit(char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = need < 64 ? 64 : need * 2;
    char *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Remembers the first columns of row as the keyset of the next page. */
static int ks_save(copy *c, rls_stmt *row, int nks)
{
    for (int i = 0; i < nks; i++) {
        kscol *k = &c->ks[i];
        if (k->type == KS_INT) {
            k->i = sql_column_int64(row, i);
            continue;
        }
        const void *v = k->type == KS_BLOB ? sql_column_blob(row, i)
                                           : (const void *)sql_column_text(row, i);
        size_t n = (size_t)sql_column_bytes(row, i);
        if (fit(&k->p, &k->cap, n + 1) != 0)
            return rls__error(c->dst, RLS_ENOMEM, "out of memory");
        if (n)
            memcpy(k->p, v, n);
        k->p[n] = '\0';
        k->len = n;
    }
    return RLS_OK;
}

/* Copies: the keyset changes while the page's statement still runs. */
static void ks_bind(copy *c, rls_stmt *st, int nks)
{
    for (int i = 0; i < nks; i++) {
        const kscol *k = &c->ks[i];
        if (k->type == KS_INT)
            sql_bind_int64(st, i + 1, k->i);
        else if (k->type == KS_BLOB)
            sql_bind_blob(st, i + 1, k->p ? k->p : "", (int)k->len, SQL_TRANSIENT);
        else
            sql_bind_text(st, i + 1, k->p ? k->p : "", (int)k->len, SQL_TRANSIENT);
    }
}

/*
 * Every row of the source statement `id`, in pages, through fn; its first
 * columns, of types `types` (nks of them, -1 terminated), are the keyset.
 * The keyset starts below every row (keys are never empty, ids and limit
 * ids are positive).  fn sees the previous row's keyset in c->ks.  After
 * each page the destination's deferred inserts are sent.
 */
static int walk(copy *c, int id, const int *types, row_fn fn)
{
    int nks = 0, rc = RLS_OK;
    for (; types[nks] >= 0; nks++) {
        c->ks[nks].type = types[nks];
        c->ks[nks].len = 0;
        c->ks[nks].i = 0;
    }
    for (;;) {
        rls_stmt *st = rls__copy_stmt(c, id);
        int n = 0, src = SQL_DONE;
        if (!st)
            return rls__copy_stmt_failed(c, id);
        ks_bind(c, st, nks);
        sql_bind_int64(st, nks + 1, COPY_PAGE);
        while (rc == RLS_OK && (src = sql_step(st)) == SQL_ROW) {
            n++;
            if ((rc = fn(c, st)) == RLS_OK)
                rc = ks_save(c, st, nks);
        }
        sql_reset(st);
        sql_clear_bindings(st);
        if (rc != RLS_OK)
            return rc;
        if (src != SQL_DONE)
            return rls__copy_src_failed(c, rls__sql_error(c->src, src, "cannot read rows"));
        if ((rc = rls__copy_dst_run(c, CST_DST_SYNC)) != RLS_OK)
            return rc;
        rls__progress(c->dst, n);   /* rls_set_progress (events.c) */
        if (n < COPY_PAGE)
            return RLS_OK;
    }
}

/* An expiry (0: never) at or before now. */
static int expired(const copy *c, int64_t until)
{
    return until != 0 && until <= c->now;
}

static const char *col_text(rls_stmt *st, int i)
{
    const char *s = (const char *)sql_column_text(st, i);
    return s ? s : "";
}

/* Binds column `col` of row as parameter i of st, bytes as they are. */
static void bind_blob_col(rls_stmt *st, int i, rls_stmt *row, int col)
{
    const void *p = sql_column_blob(row, col);
    sql_bind_blob(st, i, p ? p : "", sql_column_bytes(row, col), SQL_STATIC);
}

static void bind_text_col(rls_stmt *st, int i, rls_stmt *row, int col)
{
    sql_bind_text(st, i, col_text(row, col), sql_column_bytes(row, col), SQL_STATIC);
}

static void bind_ints(rls_stmt *st, int first, rls_stmt *row, int col, int n)
{
    for (int k = 0; k < n; k++)
        sql_bind_int64(st, first + k, sql_column_int64(row, col + k));
}

/* Counts a source row that is not copied: expired (why < 0), or dropped
 * for reason `why` (why_text). */
static int not_copied(tally *t, int why)
{
    if (why < 0) {
        t->expired++;
    } else {
        t->dropped++;
        t->why[why]++;
    }
    return RLS_OK;
}

/* ---- policy ------------------------------------------------------------------ */

/* pattern, action, kind, tier, expires_ms, created_ms */
static int assign_row(copy *c, rls_stmt *row)
{
    tally *t = &c->t[K_ASSIGN];
    const char *action = col_text(row, 1), *tier = col_text(row, 3);
    if (expired(c, sql_column_int64(row, 4)))
        return not_copied(t, -1);
    if ((*action && !dst_action(c, action)) || !rls__ruleset_tier(c->dst->rc.rules, tier))
        return not_copied(t, 0);
    rls_stmt *st = c->st[CST_DST_ASSIGN];
    bind_blob_col(st, 1, row, 0);
    bind_text_col(st, 2, row, 1);
    bind_ints(st, 3, row, 2, 1);
    bind_text_col(st, 4, row, 3);
    bind_ints(st, 5, row, 4, 2);
    c->patterns += sql_column_int64(row, 2) != PAT_EXACT;
    return dst_insert(c, CST_DST_ASSIGN, K_ASSIGN);
}

/* key, action, limit_name, lim, expires_ms, created_ms */
static int override_row(copy *c, rls_stmt *row)
{
    tally *t = &c->t[K_OVERRIDES];
    const rule_action *a = dst_action(c, col_text(row, 1));
    if (expired(c, sql_column_int64(row, 4)))
        return not_copied(t, -1);
    if (!a || !limit_place(a, col_text(row, 2), NULL, NULL))
        return not_copied(t, 0);
    rls_stmt *st = c->st[CST_DST_OVERRIDE];
    bind_blob_col(st, 1, row, 0);
    bind_text_col(st, 2, row, 1);
    bind_text_col(st, 3, row, 2);
    bind_ints(st, 4, row, 3, 3);
    return dst_insert(c, CST_DST_OVERRIDE, K_OVERRIDES);
}

/* key, action, kind, until_ms, level, forget_ms, rule, reason, os_user,
 * created_ms */
static int block_row(copy *c, rls_stmt *row)
{
    tally *t = &c->t[K_BLOCKS];
    const char *action = col_text(row, 1);
    int klen = sql_column_bytes(row, 0);
    const void *key = sql_column_blob(row, 0);
    /* a split source's penalty after the manual block of the same key and
     * action (ordered by kind), copied just before: one database keeps the
     * manual block, as rls_block_set_at() replaces a penalty */
    int after_manual = c->block_copied && c->ks[0].len == (size_t)klen &&
                       memcmp(c->ks[0].p, key, (size_t)klen) == 0 &&
                       c->ks[1].len == strlen(action) &&
                       memcmp(c->ks[1].p, action, c->ks[1].len) == 0;
    c->block_copied = 0;
    if (expired(c, sql_column_int64(row, 3)) && sql_column_int64(row, 5) <= c->now)
        return not_copied(t, -1);
    if (*action && !dst_action(c, action))
        return not_copied(t, 0);
    if (after_manual)
        return not_copied(t, 1);
    c->block_copied = 1;
    rls_stmt *st = c->st[CST_DST_BLOCK];
    bind_blob_col(st, 1, row, 0);
    bind_text_col(st, 2, row, 1);
    bind_ints(st, 3, row, 2, 4);
    bind_text_col(st, 7, row, 6);
    bind_text_col(st, 8, row, 7);
    bind_text_col(st, 9, row, 8);
    bind_ints(st, 10, row, 9, 1);
    return dst_insert(c, CST_DST_BLOCK, K_BLOCKS);
}

/* ---- counters ---------------------------------------------------------------- */

/* Remembers that counters of action are copied: its keys are counted
 * again at the end. */
static int touch(copy *c, const char *action)
{
    for (int i = c->ntouched - 1; i >= 0; i--)
        if (c->touched[i] == action)   /* names of the destination's rules */
            return RLS_OK;
    if (c->ntouched == c->captouched) {
        int cap = c->captouched ? c->captouched * 2 : 8;
        const char **n = realloc(c->touched, sizeof *n * (size_t)cap);
        if (!n)
            return rls__error(c->dst, RLS_ENOMEM, "out of memory");
        c->touched = n;
        c->captouched = cap;
    }
    c->touched[c->ntouched++] = action;
    return RLS_OK;
}

/* key, lid, alg, a, b, c, last_ms, exp_ms, log */
static int state_row(copy *c, rls_stmt *row)
{
    tally *t = &c->t[K_STATES];
    int64_t alg = sql_column_int64(row, 2), exp = sql_column_int64(row, 7);
    if (exp <= c->now) {   /* equal to a fresh state: GC would delete it */
        if (exp > c->horizon)
            c->horizon = exp;
        return not_copied(t, -1);
    }
    const lmap *m = map_entry(c, sql_column_int64(row, 1));
    if (!m || (!m->dst_lid && !m->algs))
        return not_copied(t, 0);
    if (alg < 0 || alg > 31 || !(m->algs >> alg & 1u))
        return not_copied(t, 1);
    if (!m->dst_lid)
        return not_copied(t, 0);   /* the same algorithm, another window */
    int rc = touch(c, m->action);
    if (rc != RLS_OK)
        return rc;
    rls_stmt *st = c->st[CST_DST_STATE];
    sql_bind_int64(st, 1, m->dst_lid);
    bind_blob_col(st, 2, row, 0);
    bind_ints(st, 3, row, 2, 6);
    if (sql_column_type(row, 8) == SQL_NULL)
        sql_bind_null(st, 9);
    else
        bind_blob_col(st, 9, row, 8);
    return dst_insert(c, CST_DST_STATE, K_STATES);
}

/* id, action, key, cost, created_ms, expires_ms, lids (int64 LE each) */
static int res_row(copy *c, rls_stmt *row)
{
    tally *t = &c->t[K_RES];
    const char *action = col_text(row, 1);
    if (!dst_action(c, action))
        return not_copied(t, 0);
    const unsigned char *in = sql_column_blob(row, 6);
    int nin = sql_column_bytes(row, 6), n = 0, left_out = 0;
    unsigned char *lids = malloc((size_t)nin + 1);
    if (!lids)
        return rls__error(c->dst, RLS_ENOMEM, "out of memory");
    for (int j = 0; in && j + 8 <= nin; j += 8) {
        uint64_t v = 0;
        for (int b = 0; b < 8; b++)
            v |= (uint64_t)in[j + b] << (8 * b);
        const lmap *m = map_find(c, (int64_t)v);
        if (!m) {
            left_out = 1;
            continue;
        }
        for (int b = 0; b < 8; b++)
            lids[n++] = (unsigned char)((uint64_t)m->dst_lid >> (8 * b));
    }
    t->why[1] += left_out;
    t->why[2] += sql_column_int64(row, 5) <= c->now;
    int64_t id = sql_column_int64(row, 0);
    if (id > c->max_res_id)
        c->max_res_id = id;
    rls_stmt *st = c->st[CST_DST_RES];
    sql_bind_int64(st, 1, id);
    bind_text_col(st, 2, row, 1);
    bind_blob_col(st, 3, row, 2);
    bind_ints(st, 4, row, 3, 3);
    sql_bind_blob(st, 7, lids, n, SQL_TRANSIENT);
    int rc = dst_insert(c, CST_DST_RES, K_RES);
    free(lids);
    return rc;
}

/* ---- the steps --------------------------------------------------------------- */

/* Prepares the destination's insert of a kind, and walks its table. */
static int copy_kind(copy *c, int kind, int src_id, int dst_id, const int *types, row_fn fn)
{
    if (!rls__copy_stmt(c, dst_id))
        return rls__copy_stmt_failed(c, dst_id);
    int64_t before = c->st[dst_id]->deferred_rows;
    int rc = walk(c, src_id, types, fn);
    c->t[kind].copied = c->st[dst_id]->deferred_rows - before;
    return rc;
}


int rls__copy_policy(copy *c)
{
    static const int assign_ks[] = {KS_BLOB, KS_TEXT, -1};
    static const int override_ks[] = {KS_BLOB, KS_TEXT, KS_TEXT, -1};
    static const int block_ks[] = {KS_BLOB, KS_TEXT, KS_INT, -1};
    int rc = copy_kind(c, K_ASSIGN, CST_SRC_ASSIGN, CST_DST_ASSIGN, assign_ks, assign_row);
    if (rc == RLS_OK)
        rc = copy_kind(c, K_OVERRIDES, CST_SRC_OVERRIDES, CST_DST_OVERRIDE, override_ks,
                       override_row);
    if (rc == RLS_OK)
        rc = copy_kind(c, K_BLOCKS, CST_SRC_BLOCKS, CST_DST_BLOCK, block_ks, block_row);
    /* the handles cache pattern assignments with the rules (cache.c) */
    if (rc == RLS_OK && c->patterns > 0)
        rc = rls__exec_simple(c->dst, STMT_META_BUMP);
    return rc;
}

int rls__copy_counters(copy *c)
{
    static const int state_ks[] = {KS_BLOB, KS_INT, -1};
    static const int res_ks[] = {KS_INT, -1};
    int rc = build_map(c);
    if (rc == RLS_OK)
        rc = copy_kind(c, K_STATES, CST_SRC_STATES, CST_DST_STATE, state_ks, state_row);
    for (int i = 0; rc == RLS_OK && c->t[K_STATES].copied > 0 && i < c->ntouched; i++)
        rc = rls__keycount_recount(c->dst, c->touched[i]);
    if (rc == RLS_OK)
        rc = copy_kind(c, K_RES, CST_SRC_RES, CST_DST_RES, res_ks, res_row);
    if (rc == RLS_OK && c->dst->pg && c->max_res_id > 0)
        rc = rls__copy_dst_run_int(c, CST_DST_RES_SEQ, c->max_res_id);
    /* time never runs backwards for a key: not copying an expired state is
     * collecting it, which moves the horizon as GC does (gc.c) */
    if (c->src->trust.gc_horizon > c->horizon)
        c->horizon = c->src->trust.gc_horizon;
    if (rc == RLS_OK && c->horizon > 0)
        rc = rls__copy_dst_run_int(c, CST_DST_HORIZON, c->horizon);
    if (rc == RLS_OK && c->horizon > 0)
        rc = rls__copy_dst_run_int(c, CST_DST_LID_HORIZONS, c->horizon);
    return rc;
}

