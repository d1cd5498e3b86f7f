/*
 * model.c - what rltop knows about the database, sampled through rlstore.h.
 *
 * Every rls_* call below is its own short transaction inside the library;
 * the model keeps only plain copies (key_row, block_row, ...), so nothing
 * holds a read transaction open between refreshes and the WAL can be
 * checkpointed while rltop runs.
 *
 * The keys list asks the library for a window around what is on screen
 * (the visible page plus one page either side, so that scrolling a page is
 * instant), never for every key.  A window far down the list is asked for
 * next to a row of the previous window, or next to the end of the list
 * (rls_usage_near_at): it then costs what the window costs, not its
 * offset.  The list's length and the number of tracked keys come from
 * counts the library keeps (rls_usage_count_at), so every refresh has
 * them; only with a key filter does the length need a scan of every key,
 * done seldom.  A refresh is the same work in batch mode as on a terminal
 * (bench/ measures its CPU with rltop -b).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "rltop.h"

#define WINDOW_MAX 10000       /* rows of one window, at most */

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- copying rows --------------------------------------------------------- */

static const char *col_text(const rls_rows *r, int row, const char *col)
{
    const char *s = rls_rows_text(r, row, rls_rows_find(r, col));
    return s ? s : "";
}

static int64_t col_int(const rls_rows *r, int row, const char *col)
{
    return rls_rows_int(r, row, rls_rows_find(r, col));
}

static void copy_name(char *dst, size_t size, const char *s)
{
    snprintf(dst, size, "%s", s ? s : "");
}

static char *xdup(const char *s)
{
    char *d = strdup(s ? s : "");
    return d ? d : esc_dup(NULL);
}

static void free_keys(key_row *r, int n)
{
    for (int i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].key_esc);
    }
    free(r);
}

static void free_blocks(block_row *r, int n)
{
    for (int i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].key_esc);
        free(r[i].reason);
        free(r[i].os_user);
    }
    free(r);
}

static void free_audit(audit_row *r, int n)
{
    for (int i = 0; i < n; i++) {
        free(r[i].key_esc);
        free(r[i].os_user);
        free(r[i].tool);
        free(r[i].op);
        free(r[i].before);
        free(r[i].after);
        free(r[i].reason);
    }
    free(r);
}

static void free_versions(version_row *r, int n)
{
    for (int i = 0; i < n; i++) {
        free(r[i].os_user);
        free(r[i].tool);
        free(r[i].source);
        free(r[i].comment);
    }
    free(r);
}

static void free_detail(detail *d)
{
    free(d->key);
    free(d->key_esc);
    free(d->tier_pattern);
    free(d->block_reason);
    free(d->block_rule);
    free(d->limits);
    free(d->overrides);
    free_audit(d->audit, d->naudit);
    memset(d, 0, sizeof *d);
}

static key_row *copy_keys(const rls_rows *r, int *n)
{
    *n = rls_rows_count(r);
    key_row *k = *n ? calloc((size_t)*n, sizeof *k) : NULL;
    if (!k) {
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < *n; i++) {
        copy_name(k[i].action, sizeof k[i].action, col_text(r, i, "action"));
        k[i].key = xdup(col_text(r, i, "key"));
        k[i].key_esc = esc_dup(col_text(r, i, "key"));
        copy_name(k[i].tier, sizeof k[i].tier, col_text(r, i, "tier"));
        copy_name(k[i].rule, sizeof k[i].rule, col_text(r, i, "rule"));
        copy_name(k[i].state, sizeof k[i].state, col_text(r, i, "state"));
        k[i].used = col_int(r, i, "used");
        k[i].limit = col_int(r, i, "limit");
        k[i].remaining = col_int(r, i, "remaining");
        k[i].ppm = col_int(r, i, "fraction_ppm");
        k[i].reset_ms = col_int(r, i, "reset_ms");
        k[i].blocked = (int)col_int(r, i, "blocked");
        k[i].block_until_ms = col_int(r, i, "block_until_ms");
        k[i].denied = col_int(r, i, "denied");
    }
    return k;
}

static audit_row *copy_audit(const rls_rows *r, int *n)
{
    *n = rls_rows_count(r);
    audit_row *a = *n ? calloc((size_t)*n, sizeof *a) : NULL;
    if (!a) {
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < *n; i++) {
        a[i].id = col_int(r, i, "id");
        a[i].ts_ms = col_int(r, i, "ts_ms");
        copy_name(a[i].action, sizeof a[i].action, col_text(r, i, "action"));
        a[i].key_esc = esc_dup(col_text(r, i, "key"));
        a[i].os_user = esc_dup(col_text(r, i, "os_user"));
        a[i].tool = esc_dup(col_text(r, i, "tool"));
        a[i].op = esc_dup(col_text(r, i, "op"));
        a[i].before = esc_dup(col_text(r, i, "before"));
        a[i].after = esc_dup(col_text(r, i, "after"));
        a[i].reason = esc_dup(col_text(r, i, "reason"));
    }
    return a;
}

/* ---- samples ---------------------------------------------------------------- */

static void note_err(model *m, int rc, const char *what)
{
    const char *d = rls_errmsg(m->db);
    snprintf(m->err, sizeof m->err, "%s: %s", what, d && *d ? d : rls_strerror(rc));
}

/* Why the rules could not be read, unless there are none yet. */
static void note_rules_err(model *m, int rc)
{
    const char *d = rls_errmsg(m->db);
    if (rc != RLS_ENORULES && !m->rules_err[0])
        snprintf(m->rules_err, sizeof m->rules_err, "%s", d && *d ? d : rls_strerror(rc));
}

static void add_action(model *m, const char *action)
{
    for (int k = 0; k < m->nactions; k++)
        if (strcmp(m->actions[k], action) == 0)
            return;
    if (m->nactions < MAX_TIERS)
        copy_name(m->actions[m->nactions++], 64, action);
}

/* What the edit can change: the `limit:` values written in the active
 * rules, as the library lists them (rls_rules_limit_list). */
static void load_written(model *m)
{
    rls_rows *w = NULL;
    int rc = rls_rules_limit_list(m->db, 0, &w);
    if (rc != RLS_OK) {
        note_rules_err(m, rc);
        return;
    }
    int n = rls_rows_count(w);
    if (n > 0 && (m->elimits = calloc((size_t)n, sizeof *m->elimits))) {
        for (int i = 0; i < n; i++) {
            if (strcmp(col_text(w, i, "field"), "limit") != 0)
                continue;
            rule_limit *l = &m->elimits[m->nelimits++];
            copy_name(l->action, NAME_LEN, col_text(w, i, "action"));
            copy_name(l->tier, NAME_LEN, col_text(w, i, "tier"));
            copy_name(l->name, NAME_LEN, col_text(w, i, "name"));
            l->value = col_int(w, i, "value");
            l->line = (int)col_int(w, i, "line");
            add_action(m, l->action);
        }
    }
    rls_rows_free(w);
}

/* Tiers, actions and explicit limits of the active rules, when the active
 * version changed. */
static void load_rules(model *m)
{
    rls_rows *tiers = NULL, *limits = NULL;

    m->rules_version = m->version;
    m->ntiers = m->nactions = 0;
    m->default_tier[0] = m->rules_err[0] = '\0';
    free(m->rlimits);
    free(m->elimits);
    m->rlimits = m->elimits = NULL;
    m->nrlimits = m->nelimits = 0;
    /* what the library understood: tiers, actions, every limit */
    int rc = rls_rules_describe(m->db, 0, &tiers, &limits);
    if (rc == RLS_OK) {
        for (int i = 0; i < rls_rows_count(tiers) && m->ntiers < MAX_TIERS; i++) {
            copy_name(m->tiers[m->ntiers++], 64, col_text(tiers, i, "name"));
            if (col_int(tiers, i, "is_default"))
                copy_name(m->default_tier, sizeof m->default_tier, col_text(tiers, i, "name"));
        }
        int n = rls_rows_count(limits);
        if (n > 0 && (m->rlimits = calloc((size_t)n, sizeof *m->rlimits))) {
            for (int i = 0; i < n; i++) {
                rule_limit *l = &m->rlimits[i];
                copy_name(l->action, sizeof l->action, col_text(limits, i, "action"));
                copy_name(l->tier, sizeof l->tier, col_text(limits, i, "tier"));
                copy_name(l->name, sizeof l->name, col_text(limits, i, "name"));
                copy_name(l->algorithm, sizeof l->algorithm, col_text(limits, i, "algorithm"));
                copy_name(l->window, sizeof l->window, col_text(limits, i, "window"));
                copy_name(l->mode, sizeof l->mode, col_text(limits, i, "mode"));
                copy_name(l->timezone, sizeof l->timezone, col_text(limits, i, "timezone"));
                l->calendar = (int)col_int(limits, i, "calendar");
                l->value = col_int(limits, i, "limit");
                l->burst = col_int(limits, i, "burst");
                add_action(m, l->action);
            }
            m->nrlimits = n;
        }
    } else {
        note_rules_err(m, rc);
    }
    rls_rows_free(tiers);
    rls_rows_free(limits);
    load_written(m);
}

static void sample_versions(model *m)
{
    rls_rows *r = NULL;
    int rc = rls_rules_versions(m->db, &r);
    if (rc != RLS_OK) {
        note_err(m, rc, "cannot list rule versions");
        return;
    }
    int n = rls_rows_count(r);
    version_row *v = n ? calloc((size_t)n, sizeof *v) : NULL;
    if (n && !v)
        n = 0;
    m->version = 0;
    for (int i = 0; i < n; i++) {
        v[i].version = col_int(r, i, "version");
        v[i].created_ms = col_int(r, i, "created_ms");
        v[i].bytes = col_int(r, i, "bytes");
        v[i].active = (int)col_int(r, i, "active");
        v[i].os_user = esc_dup(col_text(r, i, "os_user"));
        v[i].tool = esc_dup(col_text(r, i, "tool"));
        v[i].source = esc_dup(col_text(r, i, "source"));
        v[i].comment = esc_dup(col_text(r, i, "comment"));
        if (v[i].active)
            m->version = v[i].version;
    }
    rls_rows_free(r);
    free_versions(m->versions, m->nversions);
    m->versions = v;
    m->nversions = n;
    if (m->version != m->rules_version)
        load_rules(m);
}

static void sample_stats(model *m)
{
    rls_rows *recent = NULL;
    int64_t now_s = m->now_ms / 1000;
    int rc = rls_stats_at(m->db, SPARK_SECONDS + 1, m->now_ms, &recent, NULL);
    if (rc != RLS_OK) {
        note_err(m, rc, "cannot read stats");
        return;
    }
    int64_t allowed = 0, denied = 0;
    memset(m->spark, 0, sizeof m->spark);
    m->spark_end_s = now_s;   /* the current second is still being counted */
    for (int i = 0; i < rls_rows_count(recent); i++) {
        if (m->f_action[0] && strcmp(col_text(recent, i, "action"), m->f_action) != 0)
            continue;
        int64_t sec = col_int(recent, i, "sec"), d = col_int(recent, i, "denied");
        int64_t idx = sec - (now_s - SPARK_SECONDS);
        if (idx >= 0 && idx < SPARK_SECONDS)
            m->spark[idx] += d;
        if (sec >= now_s - 10 && sec < now_s) {
            allowed += col_int(recent, i, "allowed");
            denied += d;
        }
    }
    m->allowed_rate = (double)allowed / 10.0;
    m->denied_rate = (double)denied / 10.0;
    rls_rows_free(recent);
}

static void sample_blocks(model *m)
{
    rls_rows *r = NULL;
    int rc = rls_block_list_at(m->db, m->now_ms, &r);
    if (rc != RLS_OK) {
        note_err(m, rc, "cannot list blocks");
        return;
    }
    int n = rls_rows_count(r);
    block_row *b = n ? calloc((size_t)n, sizeof *b) : NULL;
    if (n && !b)
        n = 0;
    for (int i = 0; i < n; i++) {
        const char *k = col_text(r, i, "key");
        b[i].key = xdup(k);
        b[i].key_esc = esc_dup(k);
        copy_name(b[i].action, sizeof b[i].action, col_text(r, i, "action"));
        copy_name(b[i].kind, sizeof b[i].kind, col_text(r, i, "kind"));
        copy_name(b[i].rule, sizeof b[i].rule, col_text(r, i, "rule"));
        b[i].reason = esc_dup(col_text(r, i, "reason"));
        b[i].os_user = esc_dup(col_text(r, i, "os_user"));
        b[i].until_ms = col_int(r, i, "until_ms");
        b[i].created_ms = col_int(r, i, "created_ms");
        b[i].level = col_int(r, i, "level");
    }
    rls_rows_free(r);
    free_blocks(m->blocks, m->nblocks);
    m->blocks = b;
    m->nblocks = n;
}

static void sample_audit(model *m)
{
    rls_rows *r = NULL;
    int rc = rls_audit_list(m->db, NULL, 500, &r);
    if (rc != RLS_OK) {
        note_err(m, rc, "cannot read the audit log");
        return;
    }
    free_audit(m->audit, m->naudit);
    m->audit = copy_audit(r, &m->naudit);
    rls_rows_free(r);
}

static void sample_sizes(model *m)
{
    struct stat sb;
    char wal[4096];
    if (db_is_uri(m->path)) {
        m->db_bytes = m->wal_bytes = -1;
        return;
    }
    m->db_bytes = stat(m->path, &sb) == 0 ? (int64_t)sb.st_size : -1;
    snprintf(wal, sizeof wal, "%s-wal", m->path);
    m->wal_bytes = stat(wal, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

static void usage_query(const model *m, rls_usage_query *q, int substr)
{
    memset(q, 0, sizeof *q);
    q->size = sizeof *q;
    q->action = m->f_action[0] ? m->f_action : NULL;
    q->key_substr = substr && m->f_substr[0] ? m->f_substr : NULL;
    q->sort = m->sort;
}

/* The list's length (substr = 1) or the keys of the action filter. */
static int count_rows(model *m, int substr, long *out)
{
    rls_usage_query q;
    int64_t n = 0;
    usage_query(m, &q, substr);
    int rc = rls_usage_count_at(m->db, &q, m->now_ms, &n);
    if (rc == RLS_OK)
        *out = n > 2000000000 ? 2000000000L : (long)n;
    else if (rc == RLS_ENORULES)
        *out = 0;
    else
        note_err(m, rc, "cannot count keys");
    return rc;
}

/* The header's "N blocked": the rows of the keys list (of the action
 * filter) that show as blocked, whether by a block or by a blocked tier,
 * so that the header agrees with the rows.  Most used first, the library
 * lists the blocked rows first: read pages until a row is not blocked. */
static void count_blocked(model *m)
{
    rls_usage_query q;
    int n = 0, done = 0;
    usage_query(m, &q, 0);
    q.sort = RLS_SORT_USED;
    q.limit = m->nblocked + 16;
    while (!done && q.offset < 1000000) {
        rls_rows *r = NULL;
        int rc = rls_usage_at(m->db, &q, m->now_ms, &r);
        if (rc != RLS_OK) {
            rls_rows_free(r);
            if (rc != RLS_ENORULES)
                note_err(m, rc, "cannot count blocked keys");
            return;
        }
        int rows = rls_rows_count(r), bcol = rls_rows_find(r, "blocked");
        for (int i = 0; i < rows && !done; i++) {
            if (rls_rows_int(r, i, bcol))
                n++;
            else
                done = 1;
        }
        done = done || rows < q.limit;
        rls_rows_free(r);
        q.offset += q.limit;
        q.limit = q.limit * 2 > 10000 ? 10000 : q.limit * 2;
    }
    m->nblocked = n;
}

/* An anchor for the window at off: the row of the current window nearest
 * to it, or the end of the list, whichever is closer; NULL if neither is
 * known (the library takes the start when that is closer still). */
static const rls_usage_anchor *window_anchor(const model *m, long off, rls_usage_anchor *an)
{
    long dist = -1;
    memset(an, 0, sizeof *an);
    an->size = sizeof *an;
    if (m->nrows > 0 && m->rows_sort == m->sort && strcmp(m->rows_action, m->f_action) == 0 &&
        strcmp(m->rows_substr, m->f_substr) == 0) {
        long j = off - m->off;
        j = j < 0 ? 0 : j >= m->nrows ? m->nrows - 1 : j;
        an->key = m->rows[j].key;
        an->action = m->rows[j].action;
        an->offset = (int)(m->off + j);
        dist = labs(off - an->offset);
    }
    if (m->total > 0 && m->total >= off && (dist < 0 || m->total - off < dist)) {
        an->key = an->action = NULL;
        an->offset = m->total > 2000000000 ? 2000000000 : (int)m->total;
        dist = m->total - off;
    }
    return dist < 0 ? NULL : an;
}

/* Fetches the window [off, off + n) of the list. */
static int fetch_window(app *a, long off, int n)
{
    model *m = &a->m;
    rls_usage_query q;
    rls_usage_anchor an;
    rls_rows *r = NULL;
    usage_query(m, &q, 1);
    q.offset = off > 0 ? (off < 1000000000L ? (int)off : 1000000000) : 0;
    q.limit = n < 1 ? 1 : n > WINDOW_MAX ? WINDOW_MAX : n;
    double t0 = mono_s();
    int rc = rls_usage_near_at(m->db, &q, window_anchor(m, q.offset, &an), m->now_ms, &r);
    m->keys_cost_ms = (mono_s() - t0) * 1000.0;
    m->no_rules = rc == RLS_ENORULES;
    if (rc != RLS_OK) {
        rls_rows_free(r);
        free_keys(m->rows, m->nrows);
        m->rows = NULL;
        m->nrows = 0;
        m->total = rc == RLS_ENORULES ? 0 : -1;
        if (rc != RLS_ENORULES)
            note_err(m, rc, "cannot read usage");
        return rc;
    }
    free_keys(m->rows, m->nrows);
    m->rows = copy_keys(r, &m->nrows);
    m->off = q.offset;
    m->rows_sort = m->sort;
    copy_name(m->rows_action, sizeof m->rows_action, m->f_action);
    copy_name(m->rows_substr, sizeof m->rows_substr, m->f_substr);
    m->keys_ms = m->now_ms;
    m->stale = 0;
    if (m->nrows < q.limit && (m->nrows > 0 || q.offset == 0)) {
        m->total = q.offset + m->nrows;   /* the end is in the window */
        m->total_ms = m->now_ms;
    } else if (m->nrows == 0 && q.offset > 0) {
        m->total = -1;   /* past the end: count again */
        m->total_ms = 0;
    }
    rls_rows_free(r);
    return RLS_OK;
}

/* Rows [first, first + count) of the list as shown: inverted (I), row i
 * shown is row total - 1 - i of the library's list, so inverting needs
 * the list's length (0 when it is not known yet). */
static int list_range(const model *m, long *first, int *count)
{
    if (!m->invert)
        return 1;
    if (m->total < 0)
        return 0;
    long hi = m->total - *first, lo = hi - *count;
    if (lo < 0)
        lo = 0;
    if (hi <= lo)
        return 0;
    *first = lo;
    *count = (int)(hi - lo);
    return 1;
}

void model_want_rows(app *a, long first, int count)
{
    model *m = &a->m;
    if (first < 0)
        first = 0;
    if (!list_range(m, &first, &count))
        return;
    if (!m->stale && first >= m->off && first + count <= m->off + m->nrows)
        return;
    if (!m->stale && m->total >= 0 && first >= m->off && first + count > m->total &&
        m->off + m->nrows >= m->total)
        return;   /* the window already reaches the end */
    long off = first - count;
    m->now_ms = now_ms();
    fetch_window(a, off < 0 ? 0 : off, count * 3);
}

const key_row *model_row(const model *m, long i)
{
    if (m->invert)
        i = m->total >= 0 ? m->total - 1 - i : -1;
    if (i < m->off || i >= (long)m->off + m->nrows)
        return NULL;
    return &m->rows[i - m->off];
}

void model_detail(app *a, const char *action, const char *key)
{
    model *m = &a->m;
    detail *d = &m->det;
    rls_rows *info = NULL, *lim = NULL, *aud = NULL, *ov = NULL;
    free_detail(d);
    if (!action || !key)
        return;
    copy_name(d->action, sizeof d->action, action);
    d->key = xdup(key);
    d->key_esc = esc_dup(key);
    d->valid = 1;
    int rc = rls_explain_at(m->db, action, key, m->now_ms, &info, &lim);
    if (rc != RLS_OK) {
        const char *e = rls_errmsg(m->db);
        snprintf(d->err, sizeof d->err, "%s", e && *e ? e : rls_strerror(rc));
        return;
    }
    copy_name(d->tier, sizeof d->tier, col_text(info, 0, "tier"));
    copy_name(d->tier_source, sizeof d->tier_source, col_text(info, 0, "tier_source"));
    copy_name(d->behaviour, sizeof d->behaviour, col_text(info, 0, "behaviour"));
    copy_name(d->reason, sizeof d->reason, col_text(info, 0, "reason"));
    d->tier_pattern = esc_dup(col_text(info, 0, "tier_pattern"));
    d->block_reason = esc_dup(col_text(info, 0, "block_reason"));
    d->block_rule = esc_dup(col_text(info, 0, "block_rule"));
    d->blocked = (int)col_int(info, 0, "blocked");
    d->allowed = (int)col_int(info, 0, "allowed");
    d->block_until_ms = col_int(info, 0, "block_until_ms");
    d->retry_after_ms = col_int(info, 0, "retry_after_ms");
    int n = rls_rows_count(lim);
    if (n && (d->limits = calloc((size_t)n, sizeof *d->limits))) {
        for (int i = 0; i < n; i++) {
            limit_row *l = &d->limits[i];
            copy_name(l->name, sizeof l->name, col_text(lim, i, "name"));
            copy_name(l->algorithm, sizeof l->algorithm, col_text(lim, i, "algorithm"));
            copy_name(l->mode, sizeof l->mode, col_text(lim, i, "mode"));
            l->limit = col_int(lim, i, "limit");
            l->burst = col_int(lim, i, "burst");
            l->window_ms = col_int(lim, i, "window_ms");
            copy_name(l->window, sizeof l->window, col_text(lim, i, "window"));
            copy_name(l->timezone, sizeof l->timezone, col_text(lim, i, "timezone"));
            l->calendar = (int)col_int(lim, i, "calendar");
            l->window_now_ms = col_int(lim, i, "window_now_ms");
            l->used = col_int(lim, i, "used");
            l->remaining = col_int(lim, i, "remaining");
            l->reset_ms = col_int(lim, i, "reset_ms");
            l->retry_after_ms = col_int(lim, i, "retry_after_ms");
            l->last_ms = col_int(lim, i, "last_ms");
            l->overridden = (int)col_int(lim, i, "overridden");
            l->allowed = (int)col_int(lim, i, "allowed");
        }
        d->nlimits = n;
    }
    const char *nkey = col_text(info, 0, "key");
    if (rls_override_list_at(m->db, action, *nkey ? nkey : key, m->now_ms, &ov) == RLS_OK &&
        (n = rls_rows_count(ov)) > 0 && (d->overrides = calloc((size_t)n, sizeof *d->overrides))) {
        for (int i = 0; i < n; i++) {
            copy_name(d->overrides[i].action, NAME_LEN, col_text(ov, i, "action"));
            copy_name(d->overrides[i].limit_name, NAME_LEN, col_text(ov, i, "limit_name"));
            d->overrides[i].limit = col_int(ov, i, "limit");
            d->overrides[i].expires_ms = col_int(ov, i, "expires_ms");
        }
        d->noverrides = n;
    }
    if (rls_audit_list(m->db, *nkey ? nkey : key, 20, &aud) == RLS_OK)
        d->audit = copy_audit(aud, &d->naudit);
    rls_rows_free(info);
    rls_rows_free(lim);
    rls_rows_free(ov);
    rls_rows_free(aud);
}

unsigned model_sample(app *a, int force)
{
    model *m = &a->m;
    double iv_ms = a->interval_s * 1000.0;
    m->now_ms = now_ms();
    m->err[0] = '\0';
    sample_versions(m);
    sample_stats(m);
    sample_blocks(m);
    if (a->view == VIEW_BLOCKS)
        events_sample(m);   /* view_events.c */
    sample_sizes(m);
    if (a->view == VIEW_AUDIT)
        sample_audit(m);

    /* the counts: kept by the library, so every time; with a key filter
     * the list's length is a scan of every key: seldom (and slower if slow) */
    if (count_rows(m, 0, &m->tracked) == RLS_OK)
        m->tracked_ms = m->now_ms;
    count_blocked(m);
    double count_every = 5.0 * iv_ms > 20.0 * m->count_cost_ms ? 5.0 * iv_ms : 20.0 * m->count_cost_ms;
    if (!m->f_substr[0]) {
        m->total = m->tracked;
        m->total_ms = m->tracked_ms;
    } else if (!m->err[0] && (force || m->total < 0 ||
                              (double)(m->now_ms - m->total_ms) >= count_every)) {
        double t0 = mono_s();
        if (count_rows(m, 1, &m->total) == RLS_OK)
            m->total_ms = m->now_ms;
        m->count_cost_ms = (mono_s() - t0) * 1000.0;
    }
    /* the keys window: when asked, or when due (slower if the library is slow);
     * batch mode fetches what a terminal's first screen does: three pages */
    double keys_every = iv_ms > 5.0 * m->keys_cost_ms ? iv_ms : 5.0 * m->keys_cost_ms;
    if (force || m->stale || (double)(m->now_ms - m->keys_ms) >= keys_every - 50.0) {
        long rows = a->batch ? a->batch_rows : a->list_rows > 0 ? a->list_rows : 20;
        long first = a->batch ? 0 : a->top[VIEW_KEYS];
        int count = (int)rows;
        if (list_range(m, &first, &count)) {
            long off = a->batch ? 0 : first - rows;
            fetch_window(a, off < 0 ? 0 : off, (int)(rows * 3));
        }
    }
    if (a->detail_open && m->det.valid) {
        char action[NAME_LEN], *key = xdup(m->det.key);
        copy_name(action, sizeof action, m->det.action);
        model_detail(a, action, key);
        free(key);
    }
    return RT_REDRAW;
}

void model_free(model *m)
{
    events_free(m);
    free_keys(m->rows, m->nrows);
    free_blocks(m->blocks, m->nblocks);
    free_audit(m->audit, m->naudit);
    free_versions(m->versions, m->nversions);
    free_detail(&m->det);
    free(m->rlimits);
    free(m->elimits);
    m->elimits = NULL;
    m->nelimits = 0;
    m->rows = NULL;
    m->blocks = NULL;
    m->audit = NULL;
    m->versions = NULL;
    m->rlimits = NULL;
    m->nrows = m->nblocks = m->naudit = m->nversions = m->nrlimits = 0;
}
