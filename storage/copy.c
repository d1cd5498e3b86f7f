/*
 * copy.c - rls_copy_at(): what decides checks, from one rlstore database to
 * another, any backend to any backend (rlstore.h has the contract).
 *
 * The source is read in one read transaction, table by table, in pages of
 * COPY_PAGE rows in primary-key order (keyset paging: each page starts
 * after the last row of the one before), so neither side holds more than a
 * page: a PostgreSQL result is read whole.  The destination is written in
 * one write transaction: the rules first (the normal apply path, so the
 * new version is registered, activated and audited), then each source row
 * that has a place in the destination's rules, inserted unless a row of
 * the same identity is there ("ON CONFLICT DO NOTHING": the destination's
 * row wins).  Inserts are deferred steps (sql.h): PostgreSQL sends a
 * page's in one pipeline with the page's last statement, and the rows they
 * changed, counted per statement, tell copied from kept.
 *
 * On PostgreSQL the tables written are locked against other writers
 * (SHARE ROW EXCLUSIVE; checks still read) for the transaction, as
 * SQLite's write lock does: the counts of kept rows and of keys are then
 * exact.  The keys of each action copied into are counted again at the end
 * (keycount.c), in one scan: counting them one by one, as checks do, would
 * update the action's row of rls_key_counts once per key in one
 * transaction, which PostgreSQL makes quadratic (each update walks the
 * row's chain of versions, which cannot be pruned before the commit).
 *
 * Storage does no arithmetic of the algorithms here either: states are
 * copied verbatim, under the destination's id of the same (action, name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "admin.h"
#include "algo.h"
#include "keycount.h"

#define COPY_PAGE 512

#define RLS__COPY_BLOCK_COLS \
    "key, action, kind, until_ms, level, forget_ms, rule, reason, os_user, created_ms"
#define RLS__COPY_BLOCK_PAGE \
    " WHERE (key, action, kind) > (?1, ?2, ?3) ORDER BY key, action, kind LIMIT ?4"

/*
 * The statements: XX(name, SQLite text, PostgreSQL's own text or NULL,
 * split side, split text).  SRC_* run on the source, the rest on the
 * destination (never a split deployment).  The first columns of a SRC_*
 * page are its primary key, bound back as ?1.. for the next page.
 */
#define RLS_COPY_STMT_MAP(XX)                                                 \
    XX(SRC_ASSIGN, "SELECT pattern, action, kind, tier, expires_ms, created_ms" \
       " FROM rls_assignments WHERE (pattern, action) > (?1, ?2)"             \
       " ORDER BY pattern, action LIMIT ?3", NULL, SPLIT_NONE, NULL)          \
    XX(SRC_OVERRIDES, "SELECT key, action, limit_name, lim, expires_ms, created_ms" \
       " FROM rls_overrides WHERE (key, action, limit_name) > (?1, ?2, ?3)"   \
       " ORDER BY key, action, limit_name LIMIT ?4", NULL, SPLIT_NONE, NULL)  \
    /* split: manual blocks (rules file) and penalties (counters file) */    \
    XX(SRC_BLOCKS, "SELECT " RLS__COPY_BLOCK_COLS " FROM rls_blocks" RLS__COPY_BLOCK_PAGE, \
       NULL, SPLIT_OWN,                                                       \
       "SELECT * FROM (SELECT " RLS__COPY_BLOCK_COLS " FROM rules.rls_blocks" \
       " UNION ALL SELECT " RLS__COPY_BLOCK_COLS " FROM main.rls_blocks)"     \
       RLS__COPY_BLOCK_PAGE)                                                  \
    XX(SRC_STATES, "SELECT key, lid, alg, a, b, c, last_ms, exp_ms, log FROM rls_state" \
       " WHERE (key, lid) > (?1, ?2) ORDER BY key, lid LIMIT ?3", NULL, SPLIT_NONE, NULL) \
    XX(SRC_RES, "SELECT id, action, key, cost, created_ms, expires_ms, lids"  \
       " FROM rls_reservations WHERE id > ?1 ORDER BY id LIMIT ?2", NULL, SPLIT_NONE, NULL) \
    /* which database a PostgreSQL handle is: the same text for two handles \
     * on the same database and schema (the schema's own table's oid) */   \
    XX(SRC_WHO, "SELECT ''", "SELECT current_database() || '/' ||"            \
       " ('rls_state'::regclass)::oid || '/' ||"                              \
       " extract(epoch FROM pg_postmaster_start_time())", SPLIT_NONE, NULL)   \
    XX(DST_WHO, "SELECT ''", "SELECT current_database() || '/' ||"            \
       " ('rls_state'::regclass)::oid || '/' ||"                              \
       " extract(epoch FROM pg_postmaster_start_time())", SPLIT_NONE, NULL)   \
    /* SQLite: BEGIN IMMEDIATE holds the write lock already */              \
    XX(DST_LOCK, "SELECT 1", "LOCK TABLE rls_state, rls_key_counts, rls_reservations," \
       " rls_blocks, rls_assignments, rls_overrides IN SHARE ROW EXCLUSIVE MODE", \
       SPLIT_NONE, NULL)                                                      \
    /* needs an answer: sends the deferred inserts before it (PostgreSQL) */ \
    XX(DST_SYNC, "SELECT 1", NULL, SPLIT_NONE, NULL)                          \
    XX(DST_ASSIGN, "INSERT INTO rls_assignments(pattern, action, kind, tier, expires_ms," \
       " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(pattern, action) DO NOTHING", \
       NULL, SPLIT_NONE, NULL)                                                \
    XX(DST_OVERRIDE, "INSERT INTO rls_overrides(key, action, limit_name, lim, expires_ms," \
       " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"                          \
       " ON CONFLICT(key, action, limit_name) DO NOTHING", NULL, SPLIT_NONE, NULL) \
    XX(DST_BLOCK, "INSERT INTO rls_blocks(" RLS__COPY_BLOCK_COLS ")"          \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT(key, action) DO NOTHING", \
       NULL, SPLIT_COUNTERS, NULL)                                            \
    XX(DST_STATE, RLS__STATE_INSERT " ON CONFLICT(key, lid) DO NOTHING", NULL, SPLIT_NONE, \
       NULL)                                                                  \
    XX(DST_RES, "INSERT INTO rls_reservations(id, action, key, cost, created_ms, expires_ms," \
       " lids) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(id) DO NOTHING", NULL, \
       SPLIT_NONE, NULL)                                                      \
    /* SQLite's AUTOINCREMENT follows explicit ids by itself; PostgreSQL's \
     * identity sequence is moved past the largest copied id, never back */ \
    XX(DST_RES_SEQ, "SELECT ?1", "SELECT setval(s, GREATEST(?1,"              \
       " coalesce(pg_sequence_last_value(s), 0))) FROM (SELECT"               \
       " CAST(pg_get_serial_sequence('rls_reservations', 'id') AS regclass) AS s) q", \
       SPLIT_NONE, NULL)                                                      \
    XX(DST_HORIZON, "UPDATE rls_meta SET gc_horizon = max(gc_horizon, ?1) WHERE id = 1", \
       NULL, SPLIT_COUNTERS, NULL)

enum copy_stmt_id {
#define RLS__CST_ENUM(name, sql, pg, side, split) CST_##name,
    RLS_COPY_STMT_MAP(RLS__CST_ENUM)
#undef RLS__CST_ENUM
    CST__COUNT
};

typedef struct copy_form {
    const char *sql, *pg;
    int side;
    const char *split;
} copy_form;

static const copy_form cst_form[CST__COUNT] = {
#define RLS__CST_FORM(name, sql, pg, side, split) {sql, pg, side, split},
    RLS_COPY_STMT_MAP(RLS__CST_FORM)
#undef RLS__CST_FORM
};

/* The kinds, in the order of the report. */
enum { K_RULES, K_ASSIGN, K_OVERRIDES, K_BLOCKS, K_STATES, K_RES, K__COUNT };
static const char *const kind_name[K__COUNT] = {
    "rules", "assignments", "overrides", "blocks", "states", "reservations",
};

/* Why rows were dropped (at most three reasons per kind). */
typedef struct tally {
    int64_t tried;      /* inserts stepped: copied + kept */
    int64_t copied, dropped, expired;
    int64_t why[3];
} tally;

static const char *const why_text[K__COUNT][3] = {
    [K_ASSIGN] = {"action or tier not in the rules"},
    [K_OVERRIDES] = {"action or limit not in the rules"},
    [K_BLOCKS] = {"action not in the rules", "penalty under a manual block (split source)"},
    [K_STATES] = {"limit not in the rules", "limit under another algorithm"},
    [K_RES] = {"action not in the rules", "copied without limits not in the rules",
               "copied past their TTL: refunded at the key's next check"},
};

/* A source limit id and what it is in the destination. */
typedef struct lmap {
    int64_t src_lid, dst_lid;   /* dst_lid 0: not in the destination's rules */
    unsigned int algs;          /* bit 1 << algorithm of each definition there */
    const char *action;         /* the action's name in the destination's rules */
} lmap;

/* One column of a page's keyset. */
enum { KS_BLOB, KS_TEXT, KS_INT };
typedef struct kscol {
    int type;
    char *p;
    size_t len, cap;
    int64_t i;
} kscol;

typedef struct copy {
    rls_db *dst, *src;
    unsigned int what;
    int64_t now;
    rls_stmt *st[CST__COUNT];
    tally t[K__COUNT];
    char rules_detail[96];
    int rules_stored;           /* a version was stored in this transaction */
    lmap *map;
    int nmap;
    kscol ks[3];                /* the last row of the page walked */
    const char **touched;       /* actions with counters stepped (names of */
    int ntouched, captouched;   /* the destination's rules) */
    int64_t horizon;            /* latest expiry of a state not copied */
    int64_t max_res_id;
    int patterns;               /* pattern assignments stepped */
    int block_copied;           /* the previous block row was stepped */
} copy;

/* ---- statements and errors ----------------------------------------------- */

static int is_src_stmt(int id)
{
    return id <= CST_SRC_WHO;
}

/* rls_errmsg(dst) tells a failure of the source too. */
static int src_failed(copy *c, int rc)
{
    char why[sizeof c->src->errmsg];
    snprintf(why, sizeof why, "%s", c->src->errmsg[0] ? c->src->errmsg : rls_strerror(rc));
    return rls__error(c->dst, rc, "cannot read the source '%s': %s", c->src->path, why);
}

static rls_stmt *cst(copy *c, int id)
{
    rls_db *db = is_src_stmt(id) ? c->src : c->dst;
    const copy_form *f = &cst_form[id];
    if (!c->st[id] && rls__prepare_form(db, f->sql, f->pg, f->side, f->split, &c->st[id]) != RLS_OK) {
        if (db == c->src)
            src_failed(c, rls__stmt_failed(db));
        return NULL;
    }
    return c->st[id];
}

static int cst_failed(copy *c, int id)
{
    return rls__stmt_failed(is_src_stmt(id) ? c->src : c->dst);
}

static void cst_finalize_all(copy *c)
{
    for (int i = 0; i < CST__COUNT; i++) {
        sql_finalize(c->st[i]);
        c->st[i] = NULL;
    }
}

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

/* A statement with an answer: on PostgreSQL it takes the held inserts along. */
static int dst_run(copy *c, int id)
{
    rls_stmt *st = cst(c, id);
    if (!st)
        return cst_failed(c, id);
    int rc = sql_step(st);
    sql_reset(st);
    sql_clear_bindings(st);
    if (rc != SQL_ROW && rc != SQL_DONE)
        return rls__sql_error(c->dst, rc, "cannot copy into the destination");
    return RLS_OK;
}

/* The same with one integer parameter. */
static int dst_run_int(copy *c, int id, int64_t v)
{
    rls_stmt *st = cst(c, id);
    if (!st)
        return cst_failed(c, id);
    sql_bind_int64(st, 1, v);
    return dst_run(c, id);
}

/* ---- the destination's rules --------------------------------------------- */

static int has_limit(const rule_action *a, const char *name)
{
    for (int t = -1; t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int i = 0; i < n; i++)
            if (strcmp(ls[i].name, name) == 0)
                return 1;
    }
    return 0;
}

/* The action of the destination's rules, or NULL ("" is every action). */
static const rule_action *dst_action(copy *c, const char *name)
{
    return name ? ruleset_action(c->dst->rules, name) : NULL;
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
        return src_failed(c, rls__stmt_failed(c->src));
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
        for (int t = -1; a && ln && t < a->ntiers; t++) {
            const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
            int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
            for (int i = 0; i < n; i++)
                if (strcmp(ls[i].name, ln) == 0) {
                    m->dst_lid = ls[i].id;
                    m->algs |= 1u << ls[i].algorithm;
                }
        }
    }
    sql_reset(st);
    if (rc != SQL_DONE)
        return src_failed(c, rls__sql_error(c->src, rc, "cannot read limit ids"));
    if (c->nmap > 1)
        qsort(c->map, (size_t)c->nmap, sizeof *c->map, cmp_lmap);
    return RLS_OK;
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
        rls_stmt *st = cst(c, id);
        int n = 0, src = SQL_DONE;
        if (!st)
            return cst_failed(c, id);
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
            return src_failed(c, rls__sql_error(c->src, src, "cannot read rows"));
        if ((rc = dst_run(c, CST_DST_SYNC)) != RLS_OK)
            return rc;
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
    if ((*action && !dst_action(c, action)) || !ruleset_tier(c->dst->rules, tier))
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
    if (!a || !has_limit(a, col_text(row, 2)))
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
    const lmap *m = map_find(c, sql_column_int64(row, 1));
    if (!m)
        return not_copied(t, 0);
    if (alg < 0 || alg > 31 || !(m->algs >> alg & 1u))
        return not_copied(t, 1);
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
    if (!cst(c, dst_id))
        return cst_failed(c, dst_id);
    int64_t before = c->st[dst_id]->deferred_rows;
    int rc = walk(c, src_id, types, fn);
    c->t[kind].copied = c->st[dst_id]->deferred_rows - before;
    return rc;
}

/* The active YAML of db (malloc'd, NUL-terminated). */
static int active_yaml(rls_db *db, char **yaml, size_t *len)
{
    rls_stmt *st = rls__stmt(db, STMT_RULES_GET);
    int rc;
    *yaml = NULL;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, db->active_version);
    rc = sql_step(st);
    if (rc == SQL_ROW) {
        *len = (size_t)sql_column_bytes(st, 0);
        if ((*yaml = malloc(*len + 1)) != NULL) {
            memcpy(*yaml, sql_column_text(st, 0), *len);
            (*yaml)[*len] = '\0';
        }
    }
    sql_reset(st);
    if (rc != SQL_ROW)
        return rc == SQL_DONE ? rls__error(db, RLS_ECORRUPT, "active rule set %lld is missing",
                                           (long long)db->active_version)
                              : rls__sql_error(db, rc, "cannot read rules");
    return *yaml ? RLS_OK : rls__error(db, RLS_ENOMEM, "out of memory");
}

static int copy_rules(copy *c)
{
    tally *t = &c->t[K_RULES];
    char *syaml = NULL, *dyaml = NULL, comment[256];
    size_t slen = 0, dlen = 0;
    ruleset *rs = NULL;
    int64_t v = 0;
    int rc;

    if (c->src->active_version == 0)
        return rls__error(c->dst, RLS_ENORULES, "the source '%s' has no rules to copy",
                          c->src->path);
    if ((rc = active_yaml(c->src, &syaml, &slen)) != RLS_OK)
        return src_failed(c, rc);
    if (c->dst->active_version != 0 && (rc = active_yaml(c->dst, &dyaml, &dlen)) != RLS_OK)
        goto out;
    if (dyaml && dlen == slen && memcmp(dyaml, syaml, slen) == 0) {
        t->tried = 1;
        snprintf(c->rules_detail, sizeof c->rules_detail, "identical to version %lld",
                 (long long)c->dst->active_version);
        goto out;
    }
    snprintf(comment, sizeof comment, "copied from version %lld of '%s'",
             (long long)c->src->active_version, c->src->path);
    if ((rc = rls__rules_parse(c->dst, syaml, slen, c->src->path, c->now, &rs)) != RLS_OK ||
        (rc = rls__rules_store_tx(c->dst, syaml, slen, rs, c->src->path, comment, "rules.copy",
                                  -1, c->now, &v)) != RLS_OK)
        goto out;
    c->rules_stored = 1;
    t->tried = t->copied = 1;
    snprintf(c->rules_detail, sizeof c->rules_detail, "version %lld", (long long)v);
    /* read the new version back, ids and all (cache.c; PostgreSQL reads the
     * rules once per transaction otherwise) */
    c->dst->tx_refreshed = 0;
    rc = rls__cache_refresh(c->dst);
out:
    ruleset_free(rs);
    free(syaml);
    free(dyaml);
    return rc;
}

static int copy_policy(copy *c)
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

static int copy_counters(copy *c)
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
        rc = dst_run_int(c, CST_DST_RES_SEQ, c->max_res_id);
    /* time never runs backwards for a key: not copying an expired state is
     * collecting it, which moves the horizon as GC does (gc.c) */
    if (c->src->gc_horizon > c->horizon)
        c->horizon = c->src->gc_horizon;
    if (rc == RLS_OK && c->horizon > 0)
        rc = dst_run_int(c, CST_DST_HORIZON, c->horizon);
    return rc;
}

/* "states 5 copied, 1 kept, 0 dropped, 2 expired; ..." for the audit row. */
static void summary(const copy *c, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int k = K_ASSIGN; k < K__COUNT && o < size; k++) {
        const tally *t = &c->t[k];
        if (!(c->what & (k >= K_STATES ? RLS_COPY_COUNTERS : RLS_COPY_POLICY)))
            continue;
        o += (size_t)snprintf(buf + o, size - o, "%s%s %lld copied, %lld kept, %lld dropped, "
                              "%lld expired", o ? "; " : "", kind_name[k], (long long)t->copied,
                              (long long)(t->tried - t->copied), (long long)t->dropped,
                              (long long)t->expired);
    }
}

/* Inside both transactions. */
static int run(copy *c)
{
    char after[1024], from[600];
    int rc;
    /* PostgreSQL: the other writers of these tables wait, as on SQLite */
    if ((rc = dst_run(c, CST_DST_LOCK)) != RLS_OK)
        return rc;
    if ((rc = rls__begin(c->src, 0)) != RLS_OK || (rc = rls__cache_refresh(c->src)) != RLS_OK)
        return src_failed(c, rc);
    if ((rc = rls__cache_refresh(c->dst)) != RLS_OK)
        return rc;
    if ((c->what & RLS_COPY_RULES) && (rc = copy_rules(c)) != RLS_OK)
        return rc;
    if (!(c->what & (RLS_COPY_POLICY | RLS_COPY_COUNTERS)))
        return RLS_OK;
    if (!c->dst->rules)
        return rls__error(c->dst, RLS_ENORULES, "the destination '%s' has no rules: apply "
                          "them first, or copy them too", c->dst->path);
    if ((c->what & RLS_COPY_POLICY) && (rc = copy_policy(c)) != RLS_OK)
        return rc;
    if ((c->what & RLS_COPY_COUNTERS) && (rc = copy_counters(c)) != RLS_OK)
        return rc;
    summary(c, after, sizeof after);
    snprintf(from, sizeof from, "from '%s'", c->src->path);
    return rls__audit(c->dst, c->now, "copy", "", NULL, "", after, from);
}

/* ---- the same database? -------------------------------------------------------- */

static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* What a PostgreSQL handle's statement id says it is (malloc'd). */
static int who(copy *c, int id, char **out)
{
    rls_db *db = is_src_stmt(id) ? c->src : c->dst;
    rls_stmt *st = cst(c, id);
    *out = NULL;
    if (!st)
        return cst_failed(c, id);
    int rc = sql_step(st);
    if (rc == SQL_ROW) {
        const char *s = (const char *)sql_column_text(st, 0);
        *out = strdup(s ? s : "");
    }
    sql_reset(st);
    if (rc != SQL_ROW) {
        rc = rls__sql_error(db, rc, "cannot tell which database this is");
        return db == c->src ? src_failed(c, rc) : rc;
    }
    return *out ? RLS_OK : rls__error(c->dst, RLS_ENOMEM, "out of memory");
}

static int refuse_same(copy *c)
{
    rls_db *d = c->dst, *s = c->src;
    int same = 0, rc = RLS_OK;
    if (d->sql && s->sql)
        same = same_file(d->path, s->path) || same_file(d->path, s->counters_path);
    if (d->pg && s->pg) {
        char *a = NULL, *b = NULL;
        if ((rc = who(c, CST_DST_WHO, &a)) == RLS_OK && (rc = who(c, CST_SRC_WHO, &b)) == RLS_OK)
            same = strcmp(a, b) == 0;
        free(a);
        free(b);
    }
    if (rc == RLS_OK && same)
        rc = rls__error(d, RLS_EINVAL, "the source '%s' is the destination '%s'", s->path,
                        d->path);
    return rc;
}

/* ---- the report ------------------------------------------------------------------ */

static int kind_asked(unsigned int what, int k)
{
    return what & (k == K_RULES ? RLS_COPY_RULES : k >= K_STATES ? RLS_COPY_COUNTERS
                                                                 : RLS_COPY_POLICY);
}

static int detail(const copy *c, int k, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    if (k == K_RULES)
        return snprintf(buf, size, "%s", c->rules_detail) < 0 ? -1 : 0;
    for (int i = 0; i < 3 && o < size; i++)
        if (c->t[k].why[i] && why_text[k][i])
            o += (size_t)snprintf(buf + o, size - o, "%s%s: %lld", o ? "; " : "",
                                  why_text[k][i], (long long)c->t[k].why[i]);
    return 0;
}

static int report_rows(copy *c, rls_rows **out)
{
    static const rows_col cols[] = {
        {"what", RLS_COL_TEXT},    {"copied", RLS_COL_INT},  {"kept", RLS_COL_INT},
        {"dropped", RLS_COL_INT},  {"expired", RLS_COL_INT}, {"detail", RLS_COL_TEXT},
    };
    char buf[512];
    rls_rows *r = rows_new(cols, 6);
    for (int k = 0; r && k < K__COUNT; k++) {
        const tally *t = &c->t[k];
        int row;
        if (!kind_asked(c->what, k))
            continue;
        detail(c, k, buf, sizeof buf);
        if ((row = rows_add(r)) < 0 || rows_put_str(r, row, "what", kind_name[k]) ||
            rows_put_int(r, row, "copied", t->copied) ||
            rows_put_int(r, row, "kept", t->tried - t->copied) ||
            rows_put_int(r, row, "dropped", t->dropped) ||
            rows_put_int(r, row, "expired", t->expired) || rows_put_str(r, row, "detail", buf)) {
            rls_rows_free(r);
            r = NULL;
        }
    }
    *out = r;
    return r ? RLS_OK : rls__error(c->dst, RLS_ENOMEM, "out of memory");
}

/* ---- the entry point ---------------------------------------------------------------- */

static int copy_args(rls_db *dst, rls_db *src, unsigned int what, int64_t now)
{
    int rc;
    if (!src)
        return rls__error(dst, RLS_EINVAL, "the source handle is NULL");
    if (src == dst)
        return rls__error(dst, RLS_EINVAL, "the source and the destination are the same handle");
    if ((what & ~(unsigned int)(RLS_COPY_ALL | RLS_COPY_DRY_RUN)) || !(what & RLS_COPY_ALL))
        return rls__error(dst, RLS_EINVAL, "what 0x%x: no kind to copy, or an unknown bit", what);
    if (now < RLS_TIME_MIN || now > RLS_TIME_MAX)
        return rls__error(dst, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now);
    if ((rc = rls__db_usable(src)) != RLS_OK)
        return rls__error(dst, rc, "the source handle is not usable: %s", src->errmsg);
    if (dst->split)
        return rls__error(dst, RLS_EINVAL, "the destination '%s' is a split deployment: copy "
                          "into a single database", dst->path);
    return rls__rules_writable(dst);
}

static void copy_free(copy *c)
{
    cst_finalize_all(c);
    for (int i = 0; i < 3; i++)
        free(c->ks[i].p);
    free(c->touched);
    free(c->map);
    free(c);
}

int rls_copy_at(rls_db *dst, rls_db *src, unsigned int what, int64_t now_ms, rls_rows **report)
{
    int rc = rls__db_usable(dst);
    copy *c;
    if (report)
        *report = NULL;
    if (rc)
        return rc;
    dst->errmsg[0] = '\0';
    if ((rc = copy_args(dst, src, what, now_ms)) != RLS_OK)
        return rc;
    if (!(c = calloc(1, sizeof *c)))
        return rls__error(dst, RLS_ENOMEM, "out of memory");
    c->dst = dst;
    c->src = src;
    c->what = what;
    c->now = now_ms;
    if ((rc = refuse_same(c)) != RLS_OK) {
        copy_free(c);
        return rc;
    }
    sql_durable(dst, 1);
    if ((rc = rls__begin(dst, 1)) == RLS_OK) {
        rc = run(c);
        if (rc == RLS_OK && !(what & RLS_COPY_DRY_RUN))
            rc = rls__commit(dst);
        else
            rls__rollback(dst);
    }
    /* a version stored and rolled back must not stay in the rule cache */
    if (c->rules_stored && (rc != RLS_OK || (what & RLS_COPY_DRY_RUN)))
        rls__cache_free(dst);
    rls__durable_restore(dst);
    if (src->in_tx)
        rls__rollback(src);   /* a read transaction: nothing to keep */
    if (rc == RLS_OK && report)
        rc = report_rows(c, report);
    copy_free(c);
    return rc;
}
