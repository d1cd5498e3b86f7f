/*
 * cache.c - the per-handle cache of the active rule set.
 *
 * Each transaction reads one row (rls_meta): when rules_gen differs from the
 * cached one, the active YAML is parsed again, limit ids are attached and the
 * pattern assignments (YAML and table) are reloaded.  Otherwise the cache is
 * used as is, so a rule change reaches every process at its next check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "db.h"

void rls__cache_free(rls_db *db)
{
    rls__ruleset_free(db->rc.rules);
    db->rc.rules = NULL;
    free(db->rc.patterns);
    db->rc.patterns = NULL;
    db->rc.npatterns = 0;
    free(db->rc.pattern_text);
    db->rc.pattern_text = NULL;
    rls__every_ip_free(db);
    db->rc.rules_gen = -1;
}

void rls__limit_regname(const rule_limit *l, char *buf, size_t size)
{
    char sig[RULES_SIG_MAX];
    rls__rule_limit_sig(l, sig, sizeof sig);
    snprintf(buf, size, "%s%c%s", l->name, RLS_VARIANT_SEP, sig);
}

/* Calls fn for every limit of rs (defaults and tiers) of action an. */
static void each_def(ruleset *rs, const char *an, void (*fn)(rule_limit *, void *), void *arg)
{
    rule_action *a = (rule_action *)rls__ruleset_action(rs, an ? an : "");
    for (int t = -1; a && t < a->ntiers; t++) {
        rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int i = 0; i < n; i++)
            fn(&ls[i], arg);
    }
}

/* One rls_limits row: its id, the limit name and the variant ("" for a
 * row registered before variants); plain: which rows this pass takes. */
struct lrow {
    int64_t lid;
    const char *name, *sig;
    size_t namelen;
    int plain;
};

static void add_sib(rule_limit *d, int64_t lid)
{
    if (d->nsib < RULES_SIB_MAX) {
        d->sib[d->nsib++] = lid;
        return;
    }
    int k = 0;   /* full: the most recent variants (largest ids) stay */
    for (int j = 1; j < d->nsib; j++)
        if (d->sib[j] < d->sib[k])
            k = j;
    if (d->sib[k] < lid)
        d->sib[k] = lid;
}

/* A variant row is the limit's own id when the variant is its own, else
 * the state of a sibling; a row from before variants is the limit's own
 * id if no variant row is (a database no rules were applied to since). */
static void match_row(rule_limit *d, void *arg)
{
    const struct lrow *r = arg;
    char sig[RULES_SIG_MAX];
    if (strlen(d->name) != r->namelen || memcmp(d->name, r->name, r->namelen) != 0)
        return;
    if (r->plain) {
        if (d->id == 0)
            d->id = r->lid;
        else
            add_sib(d, r->lid);
        return;
    }
    rls__rule_limit_sig(d, sig, sizeof sig);
    if (strcmp(sig, r->sig) == 0)
        d->id = r->lid;
    else
        add_sib(d, r->lid);
}

static void clear_ids(rule_limit *d, void *arg)
{
    (void)arg;
    d->id = 0;
    d->nsib = 0;
}

/* Attaches rls_limits ids to the limits of rs: variant rows in the first
 * pass, rows from before variants in the second. */
static int attach_pass(rls_db *db, ruleset *rs, int plain)
{
    rls_stmt *st = rls__stmt(db, STMT_LIMITS_ALL);
    int rc;
    if (!st)
        return rls__stmt_failed(db);
    while ((rc = sql_step(st)) == SQL_ROW) {
        const char *an = (const char *)sql_column_text(st, 1);
        const char *ln = (const char *)sql_column_text(st, 2);
        const char *sep = ln ? strchr(ln, RLS_VARIANT_SEP) : NULL;
        struct lrow r = {sql_column_int64(st, 0), ln, sep ? sep + 1 : "",
                         ln ? (sep ? (size_t)(sep - ln) : strlen(ln)) : 0, !sep};
        if (ln && r.plain == plain)
            each_def(rs, an, match_row, &r);
    }
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot read limit ids");
}

/* 1 if every limit of a got an id. */
static int ids_complete(const rule_action *a, const char **missing)
{
    for (int t = -1; t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits;
        for (int j = 0; j < n; j++) {
            if (ls[j].id == 0) {
                *missing = ls[j].name;
                return 0;
            }
        }
    }
    return 1;
}

/* Attaches rls_limits ids (own and siblings) to every limit of rs. */
static int attach_ids(rls_db *db, ruleset *rs)
{
    const char *missing = "";
    int rc;
    for (int i = 0; i < rs->nactions; i++)
        each_def(rs, rs->actions[i].name, clear_ids, NULL);
    if ((rc = attach_pass(db, rs, 0)) || (rc = attach_pass(db, rs, 1)))
        return rc;
    for (int i = 0; i < rs->nactions; i++)
        if (!ids_complete(&rs->actions[i], &missing))
            return rls__error(db, RLS_ECORRUPT, "limit '%s.%s' has no id",
                              rs->actions[i].name, missing);
    return RLS_OK;
}

/* The YAML assignments (all kinds) as candidates: their count.  Their
 * strings are the rule set's (offset -1). */
static int yaml_patterns(const ruleset *rs, assign_cand *c, size_t *off)
{
    int n = 0;
    for (int i = 0; i < rs->nassignments; i++) {
        const rule_assignment *a = &rs->assignments[i];
        const char *why;
        if (rls__key_pattern_parse(a->key, &c[n].pat, &why) != 0)
            continue;  /* validated at apply time; never happens */
        c[n].text = a->key;
        c[n].action = a->action;
        c[n].tier = a->tier;
        c[n].expires_ms = a->expires_ms;
        c[n].dynamic = 0;
        off[n * 3] = (size_t)-1;
        n++;
    }
    return n;
}

/* Appends s and its NUL to the pattern text *text (of *tlen bytes in
 * *tcap), its offset into *off: 0, or -1 out of memory. */
static int text_put(char **text, size_t *tlen, size_t *tcap, const char *s, size_t *off)
{
    size_t l = strlen(s) + 1, cap = *tcap;
    if (*tlen + l > cap) {
        while (*tlen + l > cap)
            cap *= 2;
        char *nt = realloc(*text, cap);
        if (!nt)
            return -1;
        *text = nt;
        *tcap = cap;
    }
    memcpy(*text + *tlen, s, l);
    *off = *tlen;
    *tlen += l;
    return 0;
}

/* YAML assignments (all kinds) plus the table's non-exact patterns. */
static int load_patterns(rls_db *db, const ruleset *rs)
{
    rls_stmt *st = rls__stmt(db, STMT_PATTERNS_ALL);
    int rc, n = 0, cap = rs->nassignments + 16;
    size_t tlen = 0, tcap = 1024;
    assign_cand *c = malloc(sizeof *c * (size_t)cap);
    char *text = malloc(tcap);
    /* Offsets into text, fixed up to pointers when the text stops moving. */
    size_t *off = malloc(sizeof *off * (size_t)cap * 3);

    if (!st || !c || !text || !off) {
        rc = st ? RLS_ENOMEM : rls__stmt_failed(db);
        goto fail;
    }
    n = yaml_patterns(rs, c, off);
    while ((rc = sql_step(st)) == SQL_ROW) {
        const char *pat = (const char *)sql_column_text(st, 0);
        const char *act = (const char *)sql_column_text(st, 1);
        const char *tier = (const char *)sql_column_text(st, 2);
        const char *strs[3] = {pat ? pat : "", act ? act : "", tier ? tier : ""};
        const char *why;
        if (n == cap) {
            cap *= 2;
            assign_cand *nc = realloc(c, sizeof *c * (size_t)cap);
            size_t *no = nc ? realloc(off, sizeof *off * (size_t)cap * 3) : NULL;
            if (nc)
                c = nc;
            if (!no) { rc = SQL_NOMEM; break; }
            off = no;
        }
        if (rls__key_pattern_parse(strs[0], &c[n].pat, &why) != 0)
            continue;
        for (int k = 0; k < 3; k++) {
            if (text_put(&text, &tlen, &tcap, strs[k], &off[n * 3 + (size_t)k]) != 0) {
                rc = SQL_NOMEM;
                goto out_loop;
            }
        }
        c[n].expires_ms = sql_column_int64(st, 3);
        c[n].dynamic = 1;
        n++;
    }
out_loop:
    sql_reset(st);
    if (rc != SQL_DONE) {
        rc = rc == SQL_NOMEM ? RLS_ENOMEM : rls__sql_error(db, rc, "cannot read assignments");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        if (off[i * 3] == (size_t)-1)
            continue;
        c[i].text = text + off[i * 3];
        c[i].action = text + off[i * 3 + 1];
        c[i].tier = text + off[i * 3 + 2];
    }
    free(off);
    free(db->rc.patterns);
    free(db->rc.pattern_text);
    db->rc.patterns = c;
    db->rc.npatterns = n;
    db->rc.pattern_text = text;
    return RLS_OK;
fail:
    free(c);
    free(text);
    free(off);
    return rc == RLS_ENOMEM ? rls__error(db, RLS_ENOMEM, "out of memory") : rc;
}

static int load_rules(rls_db *db, int64_t version, ruleset **out)
{
    rls_stmt *st = rls__stmt(db, STMT_RULES_GET);
    config_errors *errs;
    int rc;
    *out = NULL;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, version);
    rc = sql_step(st);
    if (rc != SQL_ROW) {
        sql_reset(st);
        if (rc == SQL_DONE)
            return rls__error(db, RLS_ECORRUPT, "active rule set %lld is missing",
                              (long long)version);
        return rls__sql_error(db, rc, "cannot read rules");
    }
    errs = malloc(sizeof *errs);
    if (!errs) {
        sql_reset(st);
        return rls__error(db, RLS_ENOMEM, "out of memory");
    }
    const char *yaml = (const char *)sql_column_text(st, 0);
    size_t len = (size_t)sql_column_bytes(st, 0);
    int prc = yaml ? rls__config_parse(yaml, len, out, errs) : -1;
    sql_reset(st);
    if (prc == -2)
        rc = rls__error(db, RLS_ENOMEM, "out of memory");
    else if (prc != 0)
        rc = rls__error(db, RLS_ECONFIG, "stored rule set %lld no longer loads: %s",
                        (long long)version, errs->n > 0 ? errs->e[0].msg : "?");
    else
        rc = RLS_OK;
    free(errs);
    return rc;
}

/*
 * Trusting what the handle knew.  A check marks what its commit left
 * (rls__cache_validate; backend.h, mark); its own changes to rls_meta (the
 * GC cursor and horizon) the handle mirrors in memory.  If a later write
 * transaction finds that nothing at all was committed since, by this
 * handle (an admin change, a GC run) or any other (backend.h, unchanged:
 * SQLite's data version), rls_meta, the rule cache and the emptiness of the
 * policy and reservation tables are as they were: the check skips reading
 * them.  Only a check can rely on it (only the check path tracks the rows
 * it adds), and only in its write transaction: BEGIN IMMEDIATE takes its
 * snapshot at once, a deferred BEGIN only at its first read.  Any other
 * write transaction, a rollback, or a version that moved for any reason
 * ends the trust.
 */
static int same_version(rls_db *db)
{
    return db->rc.rules_gen >= 0 && db->be->unchanged(db);
}

void rls__cache_validate(rls_db *db)
{
    db->be->mark(db);
}

/* Inside a trusted transaction: learns once per trust which tables are
 * empty; the check path clears a flag when it adds a row (a penalty block,
 * a reservation).  Without trust it learns nothing: a statement per check
 * for a probe that the next check could not use. */
int rls__cache_empties(rls_db *db)
{
    if (!db->trust.tx_trusted || db->trust.empties_known)
        return RLS_OK;
    int rc = rls__empties_read(db, &db->trust.policy_none, &db->trust.res_none);
    db->trust.empties_known = rc == RLS_OK;
    return rc;
}

int rls__empties_read(rls_db *db, int *policy_none, int *res_none)
{
    rls_stmt *st = rls__stmt(db, STMT_EMPTIES);
    if (!st)
        return rls__stmt_failed(db);
    int rc = sql_step(st);
    if (rc == SQL_ROW) {
        *policy_none = sql_column_int(st, 0);
        *res_none = sql_column_int(st, 1);
    }
    sql_reset(st);
    return rc == SQL_ROW ? RLS_OK : rls__sql_error(db, rc, "cannot read tables");
}

/* SQLite: while the transaction is trusted; PostgreSQL: as read with the
 * control row at the start of this transaction (rls__cache_refresh). */
int rls__no_policy_rows(const rls_db *db)
{
    return (db->trust.tx_trusted || db->be->meta_per_tx) && db->trust.empties_known &&
           db->trust.policy_none;
}

int rls__no_reservations(const rls_db *db)
{
    return (db->trust.tx_trusted || db->be->meta_per_tx) && db->trust.empties_known &&
           db->trust.res_none;
}

int rls__cache_refresh(rls_db *db)
{
    rls_stmt *st;
    int64_t gen, version;
    ruleset *rs = NULL;
    int rc;

    /* PostgreSQL's write transactions see each commit as it happens: the
     * rules are read once per transaction, so that what a transaction
     * resolved (and the pointers into it) stays valid to its end, as
     * SQLite's snapshot gives.  A one-flight check (pg_fast.c) decides
     * with the rules as cached, and its guard fails if they changed. */
    if (db->be->meta_per_tx && ((db->conn.in_tx && db->trust.tx_refreshed) || db->trust.fast_trust))
        return RLS_OK;
    int same = same_version(db);
    if (!same)
        db->trust.empties_known = 0;
    db->trust.tx_trusted = same && db->conn.tx_write && db->trust.in_check;
    if (db->trust.tx_trusted)
        return RLS_OK;
    st = rls__stmt(db, STMT_META_GET);
    if (!st)
        return rls__stmt_failed(db);
    rc = sql_step(st);
    if (rc != SQL_ROW) {
        sql_reset(st);
        return rc == SQL_DONE ? rls__error(db, RLS_ECORRUPT, "control row missing")
                              : rls__sql_error(db, rc, "cannot read control row");
    }
    gen = sql_column_int64(st, 0);
    db->trust.gc_horizon = sql_column_int64(st, 1);
    version = sql_column_int64(st, 2);
    if (db->be->meta_per_tx) {   /* PostgreSQL: known for this transaction (pg_forms.h) */
        db->trust.policy_none = sql_column_int(st, 3);
        db->trust.res_none = sql_column_int(st, 4);
        db->trust.policy_gen = sql_column_int64(st, 5);
        db->trust.resv_never = sql_column_int(st, 6);
        db->trust.empties_known = 1;
        db->trust.tx_refreshed = 1;
    }
    sql_reset(st);
    if (gen == db->rc.rules_gen)
        return RLS_OK;

    if (version == 0) {
        rls__cache_free(db);
        db->rc.active_version = 0;
        db->rc.rules_gen = gen;
        return RLS_OK;
    }
    if ((rc = load_rules(db, version, &rs)) || (rc = attach_ids(db, rs)) ||
        (rc = load_patterns(db, rs))) {
        rls__ruleset_free(rs);
        return rc;
    }
    rls__ruleset_free(db->rc.rules);
    db->rc.rules = rs;
    db->rc.active_version = version;
    db->rc.rules_gen = gen;
    return RLS_OK;
}

/* ---- what the rest of storage tells the cache (its fields are ours) ---- */

void rls__cache_tx_begun(rls_db *db) { db->trust.tx_refreshed = 0; }
void rls__cache_distrust(rls_db *db) { db->trust.tx_trusted = 0; }
void rls__cache_check_begin(rls_db *db, int charge) { db->trust.in_check = charge; }
void rls__cache_policy_written(rls_db *db) { db->trust.policy_none = 0; }
void rls__cache_reservation_written(rls_db *db) { db->trust.res_none = 0; }
int64_t rls__cache_horizon(const rls_db *db) { return db->trust.gc_horizon; }
void rls__cache_horizon_set(rls_db *db, int64_t horizon) { db->trust.gc_horizon = horizon; }
void rls__cache_forget(rls_db *db) { db->rc.rules_gen = -1; }
void rls__cache_fast_trust(rls_db *db, int on) { db->trust.fast_trust = on; }
void rls__cache_policy_gen_set(rls_db *db, int64_t gen) { db->trust.policy_gen = gen; }
void rls__cache_resv_never_set(rls_db *db, int never) { db->trust.resv_never = never; }
