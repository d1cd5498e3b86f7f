/*
 * copy.c - rls_copy_at(): what decides checks, from one rlstore database to
 * another, any backend to any backend (rlstore.h has the contract).
 *
 * The source is read in one read transaction (one snapshot); the
 * destination is written in one write transaction: the rules first (the
 * normal apply path, so the new version is registered, activated and
 * audited), then the rows of the policy tables, the counters and the
 * reservations (copy_rows.c), then one audit row with what was copied.
 * This file holds the statements, the transactions, the rules, the check
 * that source and destination are not the same database, and the report.
 *
 * On PostgreSQL the tables written are locked against other writers
 * (SHARE ROW EXCLUSIVE; checks still read) for the transaction, as
 * SQLite's write lock does: the counts of kept rows and of keys are then
 * exact.  The keys of each action copied into are counted again at the end
 * (keycount.c), in one scan: counting them one by one, as checks do, would
 * update the action's row of rls_key_counts once per key in one
 * transaction, which PostgreSQL makes quadratic (each update walks the
 * row's chain of versions, which cannot be pruned before the commit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "copy.h"

static const char *const cst_sql[CST__COUNT] = {
#define RLS__CST_SQL(name, sql) sql,
    RLS_COPY_STMT_MAP(RLS__CST_SQL)
#undef RLS__CST_SQL
};

static const char *const kind_name[K__COUNT] = {
    "rules", "assignments", "overrides", "blocks", "states", "reservations",
};


static const char *const why_text[K__COUNT][3] = {
    [K_ASSIGN] = {"action or tier not in the rules"},
    [K_OVERRIDES] = {"action or limit not in the rules"},
    [K_BLOCKS] = {"action not in the rules", "penalty under a manual block (split source)"},
    [K_STATES] = {"limit not in the rules", "limit under another algorithm"},
    [K_RES] = {"action not in the rules", "copied without limits not in the rules",
               "copied past their TTL: refunded at the key's next check"},
};

/* ---- statements and errors ----------------------------------------------- */

static int is_src_stmt(int id)
{
    return id <= CST_SRC_RES;
}

/* rls_errmsg(dst) tells a failure of the source too. */
int rls__copy_src_failed(copy *c, int rc)
{
    char why[sizeof c->src->errmsg];
    snprintf(why, sizeof why, "%s", c->src->errmsg[0] ? c->src->errmsg : rls_strerror(rc));
    return rls__error(c->dst, rc, "cannot read the source '%s': %s", c->src->ident.path, why);
}

rls_stmt *rls__copy_stmt(copy *c, int id)
{
    rls_db *db = is_src_stmt(id) ? c->src : c->dst;
    if (!c->st[id] && rls__prepare(db, RLS_TABLE_COPY, id, cst_sql[id], &c->st[id]) != RLS_OK) {
        if (db == c->src)
            rls__copy_src_failed(c, rls__stmt_failed(db));
        return NULL;
    }
    return c->st[id];
}

int rls__copy_stmt_failed(copy *c, int id)
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

/* A statement with an answer: on PostgreSQL it takes the held inserts along. */
int rls__copy_dst_run(copy *c, int id)
{
    rls_stmt *st = rls__copy_stmt(c, id);
    if (!st)
        return rls__copy_stmt_failed(c, id);
    int rc = sql_step(st);
    sql_reset(st);
    sql_clear_bindings(st);
    if (rc != SQL_ROW && rc != SQL_DONE)
        return rls__sql_error(c->dst, rc, "cannot copy into the destination");
    return RLS_OK;
}

/* The same with one integer parameter. */
int rls__copy_dst_run_int(copy *c, int id, int64_t v)
{
    rls_stmt *st = rls__copy_stmt(c, id);
    if (!st)
        return rls__copy_stmt_failed(c, id);
    sql_bind_int64(st, 1, v);
    return rls__copy_dst_run(c, id);
}

static int copy_rules(copy *c)
{
    tally *t = &c->t[K_RULES];
    char *syaml = NULL, *dyaml = NULL, comment[256];
    size_t slen = 0, dlen = 0;
    ruleset *rs = NULL;
    int64_t v = 0;
    int rc;

    if (c->src->rc.active_version == 0)
        return rls__error(c->dst, RLS_ENORULES, "the source '%s' has no rules to copy",
                          c->src->ident.path);
    if ((rc = rls__rules_yaml(c->src, 0, &syaml, &slen)) != RLS_OK)
        return rls__copy_src_failed(c, rc);
    if (c->dst->rc.active_version != 0 &&
        (rc = rls__rules_yaml(c->dst, 0, &dyaml, &dlen)) != RLS_OK)
        goto out;
    if (dyaml && dlen == slen && memcmp(dyaml, syaml, slen) == 0) {
        t->tried = 1;
        snprintf(c->rules_detail, sizeof c->rules_detail, "identical to version %lld",
                 (long long)c->dst->rc.active_version);
        goto out;
    }
    snprintf(comment, sizeof comment, "copied from version %lld of '%s'",
             (long long)c->src->rc.active_version, c->src->ident.path);
    if ((rc = rls__rules_parse(c->dst, syaml, slen, c->src->ident.path, c->now, &rs)) != RLS_OK ||
        (rc = rls__rules_store_tx(c->dst, syaml, slen, rs, c->src->ident.path, comment, "rules.copy",
                                  -1, c->now, &v)) != RLS_OK)
        goto out;
    c->rules_stored = 1;
    t->tried = t->copied = 1;
    snprintf(c->rules_detail, sizeof c->rules_detail, "version %lld", (long long)v);
    /* read the new version back, ids and all (cache.c; PostgreSQL reads the
     * rules once per transaction otherwise) */
    rls__cache_tx_begun(c->dst);
    rc = rls__cache_refresh(c->dst);
out:
    rls__ruleset_free(rs);
    free(syaml);
    free(dyaml);
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
    if ((rc = rls__copy_dst_run(c, CST_DST_LOCK)) != RLS_OK)
        return rc;
    if ((rc = rls__begin(c->src, 0)) != RLS_OK || (rc = rls__cache_refresh(c->src)) != RLS_OK)
        return rls__copy_src_failed(c, rc);
    if ((rc = rls__cache_refresh(c->dst)) != RLS_OK)
        return rc;
    if ((c->what & RLS_COPY_RULES) && (rc = copy_rules(c)) != RLS_OK)
        return rc;
    if (!(c->what & (RLS_COPY_POLICY | RLS_COPY_COUNTERS)))
        return RLS_OK;
    if (!c->dst->rc.rules)
        return rls__error(c->dst, RLS_ENORULES, "the destination '%s' has no rules: apply "
                          "them first, or copy them too", c->dst->ident.path);
    if ((c->what & RLS_COPY_POLICY) && (rc = rls__copy_policy(c)) != RLS_OK)
        return rc;
    if ((c->what & RLS_COPY_COUNTERS) && (rc = rls__copy_counters(c)) != RLS_OK)
        return rc;
    summary(c, after, sizeof after);
    snprintf(from, sizeof from, "from '%s'", c->src->ident.path);
    return rls__audit(c->dst, c->now, "copy", "", NULL, "", after, from);
}

/* ---- the same database? -------------------------------------------------------- */

/* Two handles of one backend may be on the same database (backend.h,
 * same_db); of two backends never. */
static int refuse_same(copy *c)
{
    rls_db *d = c->dst, *s = c->src, *failed = NULL;
    int same = 0, rc = RLS_OK;
    if (d->be == s->be && (rc = d->be->same_db(d, s, &same, &failed)) != RLS_OK)
        return failed == s ? rls__copy_src_failed(c, rc) : rc;
    if (same)
        rc = rls__error(d, RLS_EINVAL, "the source '%s' is the destination '%s'", s->ident.path,
                        d->ident.path);
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
    rls_rows *r = rls__rows_new(cols, 6);
    for (int k = 0; r && k < K__COUNT; k++) {
        const tally *t = &c->t[k];
        int row;
        if (!kind_asked(c->what, k))
            continue;
        detail(c, k, buf, sizeof buf);
        if ((row = rls__rows_add(r)) < 0 || rls__rows_put_str(r, row, "what", kind_name[k]) ||
            rls__rows_put_int(r, row, "copied", t->copied) ||
            rls__rows_put_int(r, row, "kept", t->tried - t->copied) ||
            rls__rows_put_int(r, row, "dropped", t->dropped) ||
            rls__rows_put_int(r, row, "expired", t->expired) || rls__rows_put_str(r, row, "detail", buf)) {
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
    if (dst->be->rules_apart(dst))
        return rls__error(dst, RLS_EINVAL, "the destination '%s' is a split deployment: copy "
                          "into a single database", dst->ident.path);
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
    RLS_SERIAL_PAIR(dst, src);   /* thread-safe handles: one call at a time (group.h) */
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
    if (src->conn.in_tx)
        rls__rollback(src);   /* a read transaction: nothing to keep */
    if (rc == RLS_OK && report)
        rc = report_rows(c, report);
    copy_free(c);
    return rc;
}

