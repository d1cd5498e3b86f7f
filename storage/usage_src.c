/*
 * usage_src.c - one action of a usage listing (usage.h): its statements,
 * the memo of peeked keys, its head (the keys under pressure) and cursors
 * over its tail (every other key, in key order).
 *
 * Keys come from SQL in key order: the state rows of the action's limits
 * and the blocked keys, merged by SQLite (a UNION of two primary-key range
 * scans), in batches that grow as a cursor goes on; each key comes with
 * whether it is a candidate of the head.  Only candidates and the rows
 * returned are peeked, so stepping over a thousand keys costs a thousand
 * index steps, not a thousand peeks.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keycount.h"
#include "usage.h"

/* ---- statements ------------------------------------------------------------ */

/* Tokens: @R the schema of rls_limits, @B the blocks (both files' in a
 * split deployment), @C whether key k is a candidate of the head.
 * Parameters: ?1 action, ?2 key substring or NULL, ?3 now, ?4 how many,
 * ?5 a key bound (BLOB). */
#define SUBSTR(col) " AND (?2 IS NULL OR instr(" col ", CAST(?2 AS BLOB)) > 0)"
#define ACTIVE(t) " (" t "until_ms = 0 OR " t "until_ms > ?3)"
#define UNIVERSE(range, order)                                                \
    "SELECT CAST(k AS TEXT), @C FROM ("                                       \
    "SELECT key AS k FROM main.rls_state"                                     \
    " WHERE lid IN (SELECT lid FROM @R.rls_limits WHERE action = ?1)"         \
    " AND " range SUBSTR("key")                                               \
    " UNION SELECT key FROM @B WHERE action IN (?1, '') AND" ACTIVE("")       \
    " AND " range SUBSTR("key")                                               \
    " ORDER BY 1 " order " LIMIT ?4) AS u ORDER BY 1 " order

/* ?5 where a walk is, ?6 how far this batch may go (a frontier) */
static const char *const ust_sql[UST__COUNT] = {
    [UST_FWD] = UNIVERSE("key >= ?5 AND key <= ?6", "ASC"),
    [UST_BWD] = UNIVERSE("key < ?5 AND key >= ?6", "DESC"),
    [UST_HOT] = "SELECT CAST(key AS TEXT) FROM main.rls_key_stats"
                " WHERE action = ?1 AND seen_ms >= ?3 - " PRESSURE_RECENT_SQL SUBSTR("key")
                " ORDER BY ppm DESC, key LIMIT ?4",
    [UST_DENIED] = "SELECT CAST(key AS TEXT) FROM main.rls_key_stats"
                   " WHERE action = ?1 AND denied > 0" SUBSTR("key")
                   " ORDER BY denied DESC, key LIMIT ?4",
    [UST_BLOCKED] = "SELECT CAST(key AS TEXT) FROM @B"   /* in primary-key order */
                    " WHERE action IN (?1, '') AND" ACTIVE("") SUBSTR("key")
                    " GROUP BY key ORDER BY key LIMIT ?4",
    [UST_DENIALS] = "SELECT denied FROM main.rls_key_stats WHERE action = ?1 AND key = ?5",
    /* every action's keys containing ?2: one walk of the state for all */
    [UST_COUNT_SUB] = "SELECT l.action, count(DISTINCT s.key) FROM main.rls_state s"
                      " CROSS JOIN @R.rls_limits l ON l.lid = s.lid"
                      " WHERE instr(s.key, CAST(?2 AS BLOB)) > 0 GROUP BY l.action",
    [UST_SUBSTR_KEYS] = "SELECT CAST(s.key AS TEXT), l.action FROM main.rls_state s"
                        " CROSS JOIN @R.rls_limits l ON l.lid = s.lid"
                        " WHERE instr(s.key, CAST(?2 AS BLOB)) > 0"
                        " UNION ALL SELECT CAST(key AS TEXT), action FROM @B"
                        " WHERE" ACTIVE("") " AND instr(key, CAST(?2 AS BLOB)) > 0 LIMIT ?4",
    [UST_COUNT_BLOCKED] = "SELECT count(DISTINCT b.key) FROM @B b"
                          " WHERE b.action IN (?1, '') AND" ACTIVE("b.") SUBSTR("b.key")
                          " AND NOT EXISTS (SELECT 1 FROM main.rls_state s WHERE s.key = b.key"
                          " AND s.lid IN (SELECT lid FROM @R.rls_limits WHERE action = ?1))",
};

static const char *candidate_sql(int sort)
{
    if (sort == RLS_SORT_KEY)
        return "0";
    if (sort == RLS_SORT_DENIED)
        return "EXISTS (SELECT 1 FROM main.rls_key_stats ks WHERE ks.action = ?1"
               " AND ks.key = k AND ks.denied > 0)";
    return "(EXISTS (SELECT 1 FROM main.rls_key_stats ks WHERE ks.action = ?1"
           " AND ks.key = k AND ks.seen_ms >= ?3 - " PRESSURE_RECENT_SQL ")"
           " OR EXISTS (SELECT 1 FROM @B bb WHERE bb.key = k AND bb.action IN (?1, '')"
           " AND" ACTIVE("bb.") "))";
}

/* Appends src to buf at *o with the tokens replaced; -1 if it does not fit. */
static int expand(char *buf, size_t size, size_t *o, const char *src, int sort, int split)
{
    for (; *src; src++) {
        const char *rep = NULL;
        if (src[0] == '@' && src[1] == 'R')
            rep = split ? "rules" : "main";
        else if (src[0] == '@' && src[1] == 'B')
            rep = split ? "(SELECT key, action, until_ms FROM rules.rls_blocks UNION ALL"
                          " SELECT key, action, until_ms FROM main.rls_blocks)"
                        : "main.rls_blocks";
        if (src[0] == '@' && src[1] == 'C') {
            if (expand(buf, size, o, candidate_sql(sort), sort, split) < 0)
                return -1;
            src++;
            continue;
        }
        if (rep) {
            size_t n = strlen(rep);
            if (*o + n >= size)
                return -1;
            memcpy(buf + *o, rep, n);
            *o += n;
            src++;
            continue;
        }
        if (*o + 1 >= size)
            return -1;
        buf[(*o)++] = *src;
    }
    buf[*o] = '\0';
    return 0;
}

int rls__usage_stmt(usage_ctx *u, int id, rls_stmt **out)
{
    char sql[2048];
    size_t o = 0;
    *out = u->st[id];
    if (*out)
        return RLS_OK;
    int split = strcmp(rls__rules_schema(u->db), "rules") == 0;
    if (expand(sql, sizeof sql, &o, ust_sql[id], u->sort, split) < 0)
        return rls__error(u->db, RLS_ESTORAGE, "usage statement too long");
    int rc = sql_prepare(u->db, sql, &u->st[id]);
    if (rc != SQL_OK) {
        u->st[id] = NULL;
        return rls__sql_error(u->db, rc, "cannot prepare usage statement");
    }
    *out = u->st[id];
    return RLS_OK;
}

void rls__usage_bind(usage_ctx *u, rls_stmt *st, const char *action, int64_t limit,
                     const void *blob, size_t len)
{
    sql_bind_text(st, 1, action, -1, SQL_STATIC);
    if (u->substr)
        sql_bind_text(st, 2, u->substr, -1, SQL_STATIC);
    else
        sql_bind_null(st, 2);
    sql_bind_int64(st, 3, u->now);
    sql_bind_int64(st, 4, limit);
    sql_bind_blob(st, 5, blob ? blob : "", blob ? (int)len : 0, SQL_STATIC);
    sql_bind_blob(st, 6, u->inf, (int)sizeof u->inf, SQL_STATIC);   /* no frontier */
}

void rls__usage_ctx_free(usage_ctx *u)
{
    for (int i = 0; i < UST__COUNT; i++) {
        sql_finalize(u->st[i]);
        u->st[i] = NULL;
    }
    for (int i = 0; i < u->nsrc; i++) {
        usage_src *s = &u->src[i];
        for (int r = 0; r < s->nrows; r++)
            free(s->rows[r].key);
        for (int k = 0; k < s->nuni; k++)
            free(s->uni[k]);
        free(s->rows);
        free(s->slots);
        free(s->uni);
        free(s->head);
    }
    free(u->src);
    u->src = NULL;
    u->nsrc = 0;
}

/* Steps st (bound by the caller) to the end: column 0 as strings, column 1
 * (if want_cand) as flags.  Resets st. */
int rls__usage_read_keys(usage_ctx *u, rls_stmt *st, char ***keys, unsigned char **cand,
                     int *n, int want_cand)
{
    int cap = 0, rc;
    *keys = NULL;
    *n = 0;
    if (cand)
        *cand = NULL;
    while ((rc = sql_step(st)) == SQL_ROW) {
        const char *k = (const char *)sql_column_text(st, 0);
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nk = realloc(*keys, sizeof *nk * (size_t)cap);
            unsigned char *nc = cand ? realloc(*cand, (size_t)cap) : NULL;
            if (nk)
                *keys = nk;
            if (nc)
                *cand = nc;
            if (!nk || (cand && !nc)) {
                rc = SQL_NOMEM;
                break;
            }
        }
        if (!((*keys)[*n] = strdup(k ? k : ""))) {
            rc = SQL_NOMEM;
            break;
        }
        if (cand)
            (*cand)[*n] = want_cand && sql_column_int(st, 1) != 0;
        (*n)++;
    }
    sql_reset(st);
    if (rc == SQL_DONE)
        return RLS_OK;
    for (int i = 0; i < *n; i++)
        free((*keys)[i]);
    free(*keys);
    *keys = NULL;
    *n = 0;
    if (cand) {
        free(*cand);
        *cand = NULL;
    }
    if (rc == SQL_NOMEM)
        return rls__error(u->db, RLS_ENOMEM, "out of memory");
    return rls__sql_error(u->db, rc, "cannot list keys");
}

/* ---- the memo of peeked keys ------------------------------------------------- */

static uint32_t hash_key(const char *k)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 16777619u;
    return h;
}

static int memo_find(const usage_src *s, const char *key)
{
    if (!s->nslots)
        return -1;
    for (uint32_t i = hash_key(key) & (uint32_t)(s->nslots - 1);; i = (i + 1) & (uint32_t)(s->nslots - 1)) {
        int r = s->slots[i] - 1;
        if (r < 0)
            return -1;
        if (strcmp(s->rows[r].key, key) == 0)
            return r;
    }
}

static int memo_grow(usage_src *s)
{
    int n = s->nslots ? s->nslots * 2 : 256;
    int *slots = calloc((size_t)n, sizeof *slots);
    if (!slots)
        return -1;
    for (int r = 0; r < s->nrows; r++) {
        uint32_t i = hash_key(s->rows[r].key) & (uint32_t)(n - 1);
        while (slots[i])
            i = (i + 1) & (uint32_t)(n - 1);
        slots[i] = r + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return 0;
}

static int denials(usage_ctx *u, usage_src *s, const char *key, int64_t *d)
{
    rls_stmt *st;
    int rc = rls__usage_stmt(u, UST_DENIALS, &st);
    *d = 0;
    if (rc)
        return rc;
    rls__usage_bind(u, st, s->action, 0, key, strlen(key));
    rc = sql_step(st);
    if (rc == SQL_ROW)
        *d = sql_column_int64(st, 0);
    sql_reset(st);
    return rc == SQL_ROW || rc == SQL_DONE
               ? RLS_OK : rls__sql_error(u->db, rc, "cannot read key stats");
}

/* Peeks key as a check of s's action would see it (nothing charged). */
static int fill_row(usage_ctx *u, usage_src *s, usage_row *r)
{
    rls_result res;
    key_ctx *ctx = u->kc;
    int rc = rls__peek_key(u->db, ctx, s->action, r->key, 1, u->now, &res);
    rls__keyctx_release(ctx);
    if (rc == RLS_EKEY) {   /* e.g. a block of every action on a key this one refuses */
        r->skip = 1;
        u->db->errmsg[0] = '\0';
        return RLS_OK;
    }
    if (rc)
        return rc;
    snprintf(r->tier, sizeof r->tier, "%s", ctx->tier.tier);
    snprintf(r->rule, sizeof r->rule, "%s", res.rule);
    r->limit = res.limit;
    r->remaining = res.remaining;
    /* units in use, past the capacity too (core/pressure.c) */
    int has = ctx->deciding >= 0 && ctx->deciding < ctx->n;
    r->used = rls__pressure_used(&res, has ? &ctx->items[ctx->deciding].meta : NULL);
    r->ppm = rls__pressure_ppm(r->used, res.limit);
    r->unlimited = ctx->behaviour == TIER_UNLIMITED;
    r->reset_ms = res.reset_ms;
    r->blocked = ctx->block.active || ctx->behaviour == TIER_BLOCKED;
    r->block_until = ctx->block.active ? ctx->block.until_ms : 0;
    r->state = rls__pressure_state(r->blocked, ctx->behaviour == TIER_UNLIMITED, &res, r->ppm);
    if ((rc = denials(u, s, r->key, &r->denied)))
        return rc;
    if (u->sort == RLS_SORT_DENIED)
        r->pressing = r->denied > 0;
    else if (u->sort != RLS_SORT_KEY)
        r->pressing = r->blocked || (!r->unlimited && rls__pressure_hot(r->ppm));
    return RLS_OK;
}

int rls__usage_peek(usage_ctx *u, usage_src *s, const char *key, int *row)
{
    int r = memo_find(s, key);
    *row = r;
    if (r >= 0)
        return RLS_OK;
    if ((s->nrows + 1) * 2 > s->nslots && memo_grow(s) != 0)
        return rls__error(u->db, RLS_ENOMEM, "out of memory");
    if (s->nrows == s->caprows) {
        int cap = s->caprows ? s->caprows * 2 : 64;
        usage_row *nr = realloc(s->rows, sizeof *nr * (size_t)cap);
        if (!nr)
            return rls__error(u->db, RLS_ENOMEM, "out of memory");
        s->rows = nr;
        s->caprows = cap;
    }
    usage_row *n = &s->rows[s->nrows];
    memset(n, 0, sizeof *n);
    n->action = s->action;
    n->state = "ok";
    if (!(n->key = strdup(key)))
        return rls__error(u->db, RLS_ENOMEM, "out of memory");
    int rc = fill_row(u, s, n);
    if (rc) {
        free(n->key);
        return rc;
    }
    uint32_t i = hash_key(key) & (uint32_t)(s->nslots - 1);
    while (s->slots[i])
        i = (i + 1) & (uint32_t)(s->nslots - 1);
    s->slots[i] = s->nrows + 1;
    *row = s->nrows++;
    return RLS_OK;
}

/* ---- the head ---------------------------------------------------------------- */

/* Peeks each key and adds the pressing ones to the head (once). */
static int add_candidates(usage_ctx *u, usage_src *s, char **keys, int n)
{
    for (int i = 0; i < n; i++) {
        int row, rc = rls__usage_peek(u, s, keys[i], &row);
        if (rc)
            return rc;
        const usage_row *r = &s->rows[row];
        if (r->skip || !r->pressing)
            continue;
        int seen = 0;
        for (int h = 0; h < s->nhead && !seen; h++)
            seen = s->head[h] == row;
        if (seen)
            continue;
        if (s->nhead == s->caphead) {
            int cap = s->caphead ? s->caphead * 2 : 64;
            int *nh = realloc(s->head, sizeof *nh * (size_t)cap);
            if (!nh)
                return rls__error(u->db, RLS_ENOMEM, "out of memory");
            s->head = nh;
            s->caphead = cap;
        }
        s->head[s->nhead++] = row;
    }
    return RLS_OK;
}

/* Runs candidate statement id for `want` keys and adds them; *all: fewer came. */
static int candidates(usage_ctx *u, usage_src *s, int id, int want, int *all)
{
    rls_stmt *st;
    char **keys;
    int n, rc = rls__usage_stmt(u, id, &st);
    if (rc)
        return rc;
    rls__usage_bind(u, st, s->action, want, NULL, 0);
    if ((rc = rls__usage_read_keys(u, st, &keys, NULL, &n, 0)))
        return rc;
    *all = n < want;
    rc = add_candidates(u, s, keys, n);
    for (int i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void rls__usage_uni_sort(usage_src *s)
{
    int n = 0;
    if (s->nuni > 1)
        qsort(s->uni, (size_t)s->nuni, sizeof *s->uni, cmp_str);
    for (int k = 0; k < s->nuni; k++) {
        if (n > 0 && strcmp(s->uni[k], s->uni[n - 1]) == 0)
            free(s->uni[k]);
        else
            s->uni[n++] = s->uni[k];
    }
    s->nuni = n;
}

/* Takes key into s's universe (sorted and made unique later). */
int rls__usage_uni_add(usage_ctx *u, usage_src *s, const char *key, int *cap)
{
    if (s->nuni == *cap) {
        int ncap = *cap ? *cap * 2 : 16;
        char **nu = realloc(s->uni, sizeof *nu * (size_t)ncap);
        if (!nu)
            return rls__error(u->db, RLS_ENOMEM, "out of memory");
        s->uni = nu;
        *cap = ncap;
    }
    if (!(s->uni[s->nuni] = strdup(key)))
        return rls__error(u->db, RLS_ENOMEM, "out of memory");
    s->nuni++;
    return RLS_OK;
}

/* The keys containing the filter, all actions in one walk of the state:
 * few (the filter names a key or two), every action is small. */
static int small_by_substr(usage_ctx *u)
{
    rls_stmt *st;
    int rc = rls__usage_stmt(u, UST_SUBSTR_KEYS, &st), rows = 0, step;
    int *cap = calloc((size_t)u->nsrc + 1, sizeof *cap);
    const int max_rows = USAGE_EXACT_MAX * 8;   /* a key has a row per limit */
    if (!rc && !cap)
        rc = rls__error(u->db, RLS_ENOMEM, "out of memory");
    if (rc) {
        free(cap);
        return rc;
    }
    rls__usage_bind(u, st, "", max_rows, NULL, 0);
    while (rc == RLS_OK && (step = sql_step(st)) == SQL_ROW) {
        const char *k = (const char *)sql_column_text(st, 0);
        const char *a = (const char *)sql_column_text(st, 1);
        rows++;
        for (int i = 0; rc == RLS_OK && k && a && i < u->nsrc; i++)
            if (!*a || strcmp(a, u->src[i].action) == 0)
                rc = rls__usage_uni_add(u, &u->src[i], k, &cap[i]);
    }
    if (rc == RLS_OK && step != SQL_DONE && step != SQL_ROW)
        rc = rls__sql_error(u->db, step, "cannot list keys");
    sql_reset(st);
    free(cap);
    int small = rc == RLS_OK && rows < max_rows;
    for (int i = 0; rc == RLS_OK && i < u->nsrc; i++) {
        rls__usage_uni_sort(&u->src[i]);
        small &= u->src[i].nuni <= USAGE_EXACT_MAX;
    }
    for (int i = 0; i < u->nsrc; i++)
        u->src[i].small = small;
    return rc;
}

/* Every action of a database with few keys, each in one short walk. */
static int small_by_action(usage_ctx *u, usage_src *s)
{
    rls_stmt *st;
    char **keys;
    int n, rc;
    if ((rc = rls__usage_stmt(u, UST_FWD, &st)))
        return rc;
    rls__usage_bind(u, st, s->action, USAGE_EXACT_MAX + 1, NULL, 0);
    if ((rc = rls__usage_read_keys(u, st, &keys, NULL, &n, 0)))
        return rc;
    s->small = n <= USAGE_EXACT_MAX;
    s->uni = keys;
    s->nuni = n;
    return RLS_OK;
}

int rls__usage_small(usage_ctx *u)
{
    int rc = RLS_OK;
    if (u->substr)
        rc = small_by_substr(u);
    for (int i = 0; rc == RLS_OK && !u->substr && u->few_keys && i < u->nsrc; i++)
        rc = small_by_action(u, &u->src[i]);
    for (int i = 0; rc == RLS_OK && i < u->nsrc; i++)
        if (rls__usage_mem_src(u, &u->src[i]))
            rc = rls__usage_mem_universe(u, &u->src[i]);
    return rc;
}

int rls__usage_head(usage_ctx *u, usage_src *s, int want)
{
    int rc = RLS_OK;
    if (s->head_want == 0 && s->small && (rc = add_candidates(u, s, s->uni, s->nuni)))
        return rc;
    if (want < 1)
        want = 1;
    /* Candidates come best first; some may no longer be pressing, so ask
     * for more until `want` are or there are no more. */
    while (s->head_want == 0 ||
           !(s->head_done || (s->head_want >= want && s->nhead >= want))) {
        int w = s->head_want < want ? want
                : s->head_want > INT_MAX / 4 ? INT_MAX : s->head_want * 4;
        /* Candidates come best first by fraction used: for the reset order
         * that is no order at all, so take them all while they are few. */
        if (u->sort == RLS_SORT_RESET && w < USAGE_RESET_ALL)
            w = USAGE_RESET_ALL;
        int all1 = 1, all2 = 1;
        if (u->sort == RLS_SORT_USED || u->sort == RLS_SORT_RESET) {
            if ((rc = candidates(u, s, UST_HOT, w, &all1)) ||
                (rc = candidates(u, s, UST_BLOCKED, w, &all2)))
                return rc;
        } else if (u->sort == RLS_SORT_DENIED) {
            if ((rc = candidates(u, s, UST_DENIED, w, &all1)))
                return rc;
        }
        s->head_want = w;
        s->head_done = all1 && all2;
    }
    return RLS_OK;
}

/* ---- tail cursors -------------------------------------------------------------- */

static void free_batch(tail_cur *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->keys[i]);
    free(c->keys);
    free(c->cand);
    c->keys = NULL;
    c->cand = NULL;
    c->n = c->pos = 0;
}

/* c->bound = key, or key || 0x00 (the next blob up) when plus_nul. */
static int set_bound(usage_ctx *u, tail_cur *c, const char *key, size_t len, int plus_nul)
{
    char *b = malloc(len + 1);
    if (!b)
        return rls__error(u->db, RLS_ENOMEM, "out of memory");
    memcpy(b, key, len);
    b[len] = '\0';
    free(c->bound);
    c->bound = b;
    c->boundlen = len + (plus_nul ? 1 : 0);
    return RLS_OK;
}

/* Blob order of c's bound against key: <0, 0, >0. */
static int bound_cmp(const tail_cur *c, const char *key)
{
    size_t kl = strlen(key), n = c->boundlen < kl ? c->boundlen : kl;
    int r = memcmp(c->bound, key, n);
    return r ? r : c->boundlen < kl ? -1 : c->boundlen > kl;
}

int rls__tail_done(const tail_cur *c)
{
    return c->eof && c->pos == c->n;
}

const char *rls__tail_reach(const tail_cur *c)
{
    if (c->s->small && c->s->nuni > 0)
        return c->s->uni[c->dir > 0 ? c->s->nuni - 1 : 0];
    return c->n > 0 ? c->keys[c->n - 1] : c->key;
}

int rls__tail_beyond(const tail_cur *c, const char *key)
{
    if (rls__tail_done(c) || c->s->small || !c->bound || c->pos < c->n)
        return rls__tail_done(c);   /* (what is left of a batch comes first) */
    /* forward: what is left is >= bound; backward: < bound */
    return c->dir > 0 ? bound_cmp(c, key) > 0 : bound_cmp(c, key) <= 0;
}

/* The next batch of keys from the bound, not beyond frontier (NULL: as far
 * as there are keys). */
static int fetch_batch(usage_ctx *u, tail_cur *c, const char *frontier)
{
    rls_stmt *st;
    int rc = rls__usage_stmt(u, c->dir > 0 ? UST_FWD : UST_BWD, &st);
    if (rc)
        return rc;
    free_batch(c);
    if (!c->bound) {   /* the start (forward) or the end (backward) */
        if (c->dir > 0)
            rc = set_bound(u, c, "", 0, 0);
        else {
            c->bound = malloc(sizeof u->inf);
            if (c->bound)
                memcpy(c->bound, u->inf, sizeof u->inf);
            c->boundlen = sizeof u->inf;
            rc = c->bound ? RLS_OK : rls__error(u->db, RLS_ENOMEM, "out of memory");
        }
        if (rc)
            return rc;
    }
    int asked = c->batch;
    rls__usage_bind(u, st, c->s->action, asked, c->bound, c->boundlen);
    if (frontier)   /* a blob, as the keys are stored */
        sql_bind_blob(st, 6, frontier, (int)strlen(frontier), SQL_STATIC);
    else if (c->dir > 0)
        sql_bind_blob(st, 6, u->inf, (int)sizeof u->inf, SQL_STATIC);
    else
        sql_bind_blob(st, 6, "", 0, SQL_STATIC);
    if ((rc = rls__usage_read_keys(u, st, &c->keys, &c->cand, &c->n, 1)))
        return rc;
    if (c->batch < 1024)
        c->batch *= 2;
    if (c->n == asked)   /* full: go on after the last key */
        return set_bound(u, c, c->keys[c->n - 1], strlen(c->keys[c->n - 1]), c->dir > 0);
    if (!frontier) {
        c->eof = 1;   /* nothing beyond */
        return RLS_OK;
    }
    /* everything up to the frontier is read: go on from there */
    return set_bound(u, c, frontier, strlen(frontier), c->dir > 0);
}

int rls__tail_open(usage_ctx *u, tail_cur *c, usage_src *s, int dir, const char *key, int incl)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    c->dir = dir;
    c->batch = 32;
    c->row = -1;
    if (s->small) {
        /* first index >= key (or > key when forward and exclusive) */
        int lo = 0, hi = s->nuni;
        while (key && lo < hi) {
            int mid = (lo + hi) / 2, cmp = strcmp(s->uni[mid], key);
            if (cmp < 0 || (cmp == 0 && ((dir > 0 && !incl) || (dir < 0 && incl))))
                lo = mid + 1;
            else
                hi = mid;
        }
        c->uni_pos = !key ? (dir > 0 ? 0 : s->nuni - 1) : dir > 0 ? lo : lo - 1;
        return RLS_OK;
    }
    if (key)
        return set_bound(u, c, key, strlen(key), (dir > 0 && !incl) || (dir < 0 && incl));
    return RLS_OK;
}

int rls__tail_next(usage_ctx *u, tail_cur *c, const char *frontier)
{
    for (;;) {
        const char *k;
        int cand, rc;
        c->key = NULL;
        c->row = -1;
        if (c->s->small) {
            if (c->uni_pos < 0 || c->uni_pos >= c->s->nuni) {
                c->eof = 1;
                return RLS_OK;
            }
            k = c->s->uni[c->uni_pos];
            c->uni_pos += c->dir;
            cand = 1;
        } else {
            if (c->pos == c->n) {
                if (c->eof)
                    return RLS_OK;
                if ((rc = fetch_batch(u, c, frontier)))
                    return rc;
                if (c->n == 0)
                    return RLS_OK;   /* none up to the frontier (or at all) */
            }
            cand = c->cand[c->pos];
            k = c->keys[c->pos++];
        }
        c->key = k;
        if (!cand)
            return RLS_OK;
        if ((rc = rls__usage_peek(u, c->s, k, &c->row)))
            return rc;
        const usage_row *r = &c->s->rows[c->row];
        if (!r->skip && !r->pressing)
            return RLS_OK;
    }
}

void rls__tail_close(tail_cur *c)
{
    free_batch(c);
    free(c->bound);
    c->bound = NULL;
}

int rls__usage_in_head(usage_ctx *u, usage_src *s, const char *key, int *in)
{
    tail_cur c;
    int row, rc;
    *in = 0;
    if (u->sort == RLS_SORT_KEY)
        return RLS_OK;
    if (s->small) {
        rc = rls__usage_peek(u, s, key, &row);
        if (rc == RLS_OK)
            *in = !s->rows[row].skip && s->rows[row].pressing;
        return rc;
    }
    /* a candidate that is pressing: the tail's walk skips exactly those */
    if ((rc = rls__tail_open(u, &c, s, 1, key, 1)) == RLS_OK && (rc = rls__tail_next(u, &c, key)) == RLS_OK &&
        (!c.key || strcmp(c.key, key) != 0)) {
        rc = rls__usage_peek(u, s, key, &row);
        /* not in the tail: in the head if it is a key of the action at all */
        if (rc == RLS_OK)
            *in = !s->rows[row].skip && s->rows[row].pressing;
    }
    rls__tail_close(&c);
    return rc;
}

int rls__usage_count(usage_ctx *u, int64_t *n)
{
    rls_stmt *st;
    int rc = RLS_OK, step;
    *n = 0;
    for (int i = 0; rc == RLS_OK && i < u->nsrc; i++) {
        int64_t k = 0;
        if (rls__usage_mem_src(u, &u->src[i])) {   /* listed whole: its universe */
            if ((rc = rls__usage_mem_universe(u, &u->src[i])) == RLS_OK)
                *n += u->src[i].nuni;
        } else if (!u->substr) {
            rc = rls__keycount_get(u->db, u->src[i].action, &k);
            *n += k;
        }
    }
    if (rc == RLS_OK && u->substr && (rc = rls__usage_stmt(u, UST_COUNT_SUB, &st)) == RLS_OK) {
        rls__usage_bind(u, st, "", 0, NULL, 0);
        while ((step = sql_step(st)) == SQL_ROW) {
            const char *a = (const char *)sql_column_text(st, 0);
            for (int i = 0; a && i < u->nsrc; i++)
                if (strcmp(a, u->src[i].action) == 0 && !rls__usage_mem_src(u, &u->src[i]))
                    *n += sql_column_int64(st, 1);
        }
        sql_reset(st);
        if (step != SQL_DONE)
            rc = rls__sql_error(u->db, step, "cannot count keys");
    }
    /* and the blocked keys without counters */
    for (int i = 0; rc == RLS_OK && i < u->nsrc; i++) {
        if (rls__usage_mem_src(u, &u->src[i]))
            continue;
        if ((rc = rls__usage_stmt(u, UST_COUNT_BLOCKED, &st)))
            break;
        rls__usage_bind(u, st, u->src[i].action, 0, NULL, 0);
        step = sql_step(st);
        if (step == SQL_ROW)
            *n += sql_column_int64(st, 0);
        sql_reset(st);
        if (step != SQL_ROW)
            rc = rls__sql_error(u->db, step, "cannot count keys");
    }
    return rc;
}
