/*
 * policy.c - per-key policy changes: blocks, tier assignments and
 * overrides.  Each change runs in its own BEGIN IMMEDIATE transaction with
 * synchronous=FULL, writes one audit row (before, after, reason) in the same
 * transaction, and bumps the rules generation when handles cache it
 * (pattern assignments).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "db.h"
#include "algo.h"
#include "keynorm.h"
#include "timefmt.h"

/* Runs fn inside an audited, fully synchronous write transaction. */
typedef int (*admin_fn)(rls_db *db, void *arg, int64_t now);

struct admin_call {
    admin_fn fn;
    void *arg;
    int64_t now;
};

static int admin_call_run(rls_db *db, void *p)
{
    struct admin_call *c = p;
    return c->fn(db, c->arg, c->now);
}

static int admin_tx(rls_db *db, int64_t now, admin_fn fn, void *arg)
{
    int rc;
    if (now < RLS_TIME_MIN || now > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now);
    if ((rc = rls__rules_writable(db)))
        return rc;   /* the audit row at least goes to the rules */
    struct admin_call call = {fn, arg, now};
    sql_durable(db, 1);
    rc = rls__write_tx(db, admin_call_run, &call);
    rls__durable_restore(db);
    return rc;
}

static int check_name(rls_db *db, const char *what, const char *s, int empty_ok)
{
    if (!s)
        return empty_ok ? RLS_OK : rls__error(db, RLS_EINVAL, "%s is NULL", what);
    if ((!*s && !empty_ok) || strlen(s) > RLS_NAME_MAX)
        return rls__error(db, RLS_EINVAL, "%s is empty or longer than %d bytes", what,
                          RLS_NAME_MAX);
    return RLS_OK;
}

static int check_key(rls_db *db, const char *key)
{
    if (!key)
        return rls__error(db, RLS_EINVAL, "key is NULL");
    size_t n = strlen(key);
    if (n == 0 || n > (size_t)db->ident.opt.max_key_len)
        return rls__error(db, RLS_EKEY, "key is empty or longer than %d bytes",
                          db->ident.opt.max_key_len);
    return RLS_OK;
}

static int step_done(rls_db *db, rls_stmt *st, const char *what)
{
    int rc = sql_step(st);
    sql_reset(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, what);
}

/*
 * Normalises key for action as a check would (an IP action folds IPv6 to its
 * prefix, an email action lower-cases), so the row matches the checks' key.
 */
static int norm_key(rls_db *db, const char *action, const char *key, char *out,
                    size_t size)
{
    const char *why = "";
    int rc = rls__cache_refresh(db);
    if (rc)
        return rc;
    const rule_action *act = db->rc.rules ? rls__ruleset_action(db->rc.rules, action) : NULL;
    if (!act)
        return rls__error(db, RLS_ENOACTION, "action '%s' is not defined", action);
    int n = rls__key_normalize(act->key_kind, act->ipv4_prefix, act->ipv6_prefix, key,
                          strlen(key), out, size, &why);
    if (n < 0)
        return rls__error(db, RLS_EKEY, "key is not valid for action '%s': %s", action,
                          n == -2 ? "too long" : why);
    return RLS_OK;
}

/* ---- blocks ------------------------------------------------------------ */

struct block_arg {
    const char *action, *key, *reason;
    int64_t until;
    int set;
    int penalty;                        /* split: a penalty row to remove */
    int stored;                         /* key is a row's key as stored */
    char nk[RLS_KEY_MAX_LIMIT + 64];    /* the key as stored (block_fn) */
};

/* The key as stored (block_fn fills nk): normalised for the action, or
 * for a block of every action its canonical form (keynorm.h: every
 * spelling of one address or mailbox is one row, which each action's
 * check matches under its own normalisation, keyctx.c and everykey.c).
 * key itself stays as given, since a transaction may run again
 * (rls__write_tx). */
static const char *stored_key(const struct block_arg *a)
{
    return a->nk;
}

static int canon_key(rls_db *db, const char *key, char *out, size_t size)
{
    if (rls__key_canonical(key, strlen(key), out, size) < 0)
        return rls__error(db, RLS_EKEY, "key is too long");
    return RLS_OK;
}

/* Fills a->nk. */
static int block_key(rls_db *db, struct block_arg *a)
{
    if (a->stored) {
        snprintf(a->nk, sizeof a->nk, "%s", a->key);
        return RLS_OK;
    }
    if (a->action[0])
        return norm_key(db, a->action, a->key, a->nk, sizeof a->nk);
    return canon_key(db, a->key, a->nk, sizeof a->nk);
}

/* "forever" for 0, else the instant as ISO-8601 UTC: audit text. */
static const char *until_text(int64_t ms, char *buf, size_t size)
{
    if (ms <= 0 || rls__timefmt_format(ms, buf, size) < 0)
        snprintf(buf, size, "forever");
    return buf;
}

static void describe_block(char *buf, size_t size, int found, int64_t until,
                           const char *reason)
{
    char t[40];
    if (!found)
        snprintf(buf, size, "none");
    else
        snprintf(buf, size, "blocked until %s (%s)", until_text(until, t, sizeof t), reason);
}

/* A block, assignment or override ending at `until` (0: never) is in
 * force at `now`; one that has ended is as good as swept, which GC does
 * at some later time, and no answer may depend on when (gc.c,
 * ENDED_KEEP_MS). */
static int in_force(int64_t until, int64_t now) { return until == 0 || until > now; }

/*
 * Reads the block row of (key, action) with `id` into before; *found when
 * it is in force at `now` or still remembers a penalty's level; *present
 * when there is a row.
 */
static int block_get(rls_db *db, int id, const struct block_arg *a, int64_t now,
                     char *before, size_t size, int *found, int *present)
{
    rls_stmt *get = rls__stmt(db, id);
    if (!get)
        return rls__stmt_failed(db);
    const char *key = stored_key(a);
    sql_bind_blob(get, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(get, 2, a->action, -1, SQL_STATIC);
    int rc = sql_step(get);
    *present = rc == SQL_ROW;
    int live = rc == SQL_ROW && in_force(sql_column_int64(get, 0), now);
    *found = live || (rc == SQL_ROW && now < sql_column_int64(get, 3));
    if (live) {
        describe_block(before, size, 1, sql_column_int64(get, 0),
                       (const char *)sql_column_text(get, 2));
    } else if (*found) {   /* the audit says what was: no block, a level */
        char t[40], f[40];
        snprintf(before, size, "none (a penalty ended %s, its level remembered until %s)",
                 until_text(sql_column_int64(get, 0), t, sizeof t),
                 until_text(sql_column_int64(get, 3), f, sizeof f));
    }
    sql_reset(get);
    if (rc != SQL_ROW && rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot read block");
    return RLS_OK;
}

/*
 * One file: the block row of (key, action) is the manual block or the
 * penalty, which a manual block replaces.  Split: the manual block is in
 * the rules file, the penalty in the counters file; this transaction
 * changes the manual block and writes the audit row, and removes nothing
 * from the counters file: block_change does that afterwards.
 */
static int block_fn(rls_db *db, void *p, int64_t now)
{
    struct block_arg *a = p;
    rls_stmt *put = rls__stmt(db, a->set ? STMT_BLOCK_SET : STMT_BLOCK_DEL);
    char before[256], after[256];
    int found = 0, present, penalty = 0, rc;
    if (!put)
        return rls__stmt_failed(db);
    if ((rc = block_key(db, a)))
        return rc;
    const char *key = stored_key(a);
    describe_block(before, sizeof before, 0, 0, "");
    if ((rc = block_get(db, STMT_BLOCK_GET_ONE, a, now, before, sizeof before, &found, &present)))
        return rc;
    a->penalty = 0;   /* split: any penalty row goes, ended or not */
    if (db->be->rules_apart(db) &&
        (rc = block_get(db, STMT_PENALTY_GET_ONE, a, now, found ? after : before, sizeof before,
                        &penalty, &a->penalty)))
        return rc;
    found |= penalty;
    if (!a->set && !found)
        return rls__error(db, RLS_ENOTFOUND, "key is not blocked%s%s",
                          a->action[0] ? " for action " : "", a->action);
    /* one file: the row goes or is replaced; a penalty that has ended
     * leaves its end recorded, as a sweep would have (events.c) */
    if (present && !db->be->rules_apart(db) &&
        (rc = rls__events_ended_key(db, now, key, strlen(key), a->action)))
        return rc;
    sql_bind_blob(put, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(put, 2, a->action, -1, SQL_STATIC);
    if (a->set) {
        sql_bind_int64(put, 3, a->until);
        sql_bind_text(put, 4, a->reason, -1, SQL_STATIC);
        sql_bind_text(put, 5, db->ident.os_user, -1, SQL_STATIC);
        sql_bind_int64(put, 6, now);
        describe_block(after, sizeof after, 1, a->until, a->reason);
    } else {
        describe_block(after, sizeof after, 0, 0, "");
    }
    if ((rc = step_done(db, put, "cannot change block")))
        return rc;
    /* rows of every action are also matched from each handle's memory
     * (everykey.c), which the rules generation renews */
    if (!a->action[0] && (rc = rls__exec_simple(db, STMT_META_BUMP)))
        return rc;
    return rls__audit(db, now, a->set ? "block" : "unblock", a->action, key, before,
                      after, a->reason);
}

static int penalty_fn(rls_db *db, void *p, int64_t now)
{
    struct block_arg *a = p;
    rls_stmt *del = rls__stmt(db, STMT_PENALTY_DEL);
    if (!del)
        return rls__stmt_failed(db);
    const char *key = stored_key(a);
    int rc = rls__events_ended_key(db, now, key, strlen(key), a->action);   /* as block_fn */
    if (rc)
        return rc;
    sql_bind_blob(del, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(del, 2, a->action, -1, SQL_STATIC);
    return step_done(db, del, "cannot remove penalty block");
}

/*
 * Sets or removes a block.  Split: the audited change of the rules file
 * commits first, then the penalty row of the counters file goes in a
 * transaction of its own (SQLite commits attached files one by one, so
 * one transaction could not order them).  A crash in between leaves the
 * key blocked by its penalty with the change audited: never a change
 * without its audit row.  Running the command again finishes it.
 */
static int block_change(rls_db *db, struct block_arg *a, int64_t now)
{
    int rc = admin_tx(db, now, block_fn, a);
    if (rc != RLS_OK || !db->be->rules_apart(db) || !a->penalty)
        return rc;
    if ((rc = admin_tx(db, now, penalty_fn, a)) != RLS_OK) {
        char why[sizeof db->errmsg];
        snprintf(why, sizeof why, "%s", db->errmsg);
        rls__error(db, rc, "the block change is audited, but the penalty block in the "
                   "counters database stays: %s (run it again)", why);
    }
    return rc;
}

/* ---- unblock of every action ------------------------------------------ */

/* The rows an unblock without an action removes: (key as stored, action). */
typedef struct unblock_list {
    char **key;
    char (*action)[RLS_NAME_MAX + 1];
    int n, cap;
} unblock_list;

static void unblock_list_free(unblock_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->key[i]);
    free(l->key);
    free(l->action);
    memset(l, 0, sizeof *l);
}

static int unblock_add(rls_db *db, unblock_list *l, const char *key, const char *action)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->key[i], key) == 0 && strcmp(l->action[i], action) == 0)
            return RLS_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        char **k = realloc(l->key, sizeof *k * (size_t)cap);
        if (k)
            l->key = k;
        char (*a)[RLS_NAME_MAX + 1] = k ? realloc(l->action, sizeof *a * (size_t)cap) : NULL;
        if (!a)
            return rls__error(db, RLS_ENOMEM, "out of memory");
        l->action = a;
        l->cap = cap;
    }
    if (!(l->key[l->n] = strdup(key)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    snprintf(l->action[l->n++], RLS_NAME_MAX + 1, "%s", action);
    return RLS_OK;
}

/* Every block row of `key` as stored, whatever its action. */
static int unblock_rows_of(rls_db *db, unblock_list *l, const char *key)
{
    rls_stmt *st = rls__astmt(db, ASTMT_BLOCK_KEY_ACTIONS);
    int rc, arc = RLS_OK;
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_blob(st, 1, key, (int)strlen(key), SQL_STATIC);
    while ((rc = sql_step(st)) == SQL_ROW && arc == RLS_OK) {
        const unsigned char *act = sql_column_text(st, 0);
        arc = unblock_add(db, l, key, act ? (const char *)act : "");
    }
    sql_reset(st);
    if (arc)
        return arc;
    return rc == SQL_DONE || rc == SQL_ROW ? RLS_OK : rls__sql_error(db, rc, "cannot read blocks");
}

/*
 * Inside a read transaction: the rows of the key as written and in its
 * canonical form (every action's, and any action's as `rlctl blocks`
 * lists them), and each action's own row of the key as that action
 * normalises it.
 */
static int unblock_targets(rls_db *db, const char *key, unblock_list *l)
{
    char nk[RLS_KEY_MAX_LIMIT + 64];
    int rc = rls__cache_refresh(db);
    if (rc || (rc = unblock_rows_of(db, l, key)) || (rc = canon_key(db, key, nk, sizeof nk)) ||
        (rc = unblock_rows_of(db, l, nk)))
        return rc;
    for (int i = 0; db->rc.rules && i < db->rc.rules->nactions; i++) {
        const rule_action *act = &db->rc.rules->actions[i];
        const char *why = "";
        if (rls__key_normalize(act->key_kind, act->ipv4_prefix, act->ipv6_prefix, key, strlen(key),
                          nk, sizeof nk, &why) >= 0 &&
            (rc = unblock_add(db, l, nk, act->name)))
            return rc;
    }
    return RLS_OK;
}

/*
 * Unblock without an action: every block of the key, each removed and
 * audited as `unblock --action` removes one.  ENOTFOUND only when the key
 * has none.
 */
static int unblock_every(rls_db *db, const char *key, int64_t now)
{
    unblock_list l = {0};
    int rc, removed = 0;
    if (now < RLS_TIME_MIN || now > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "time %lld ms is outside 1970..9999", (long long)now);
    if ((rc = rls__begin(db, 0)) != RLS_OK)
        return rc;
    rc = unblock_targets(db, key, &l);
    if (rc == RLS_OK)
        rc = rls__commit(db);
    else
        rls__rollback(db);
    for (int i = 0; rc == RLS_OK && i < l.n; i++) {
        struct block_arg a = {l.action[i], l.key[i], "", 0, 0, 0, 1, ""};
        int brc = block_change(db, &a, now);
        if (brc == RLS_ENOTFOUND) {
            db->errmsg[0] = '\0';   /* this action has none: the next */
            continue;
        }
        rc = brc;
        removed += brc == RLS_OK;
    }
    unblock_list_free(&l);
    if (rc == RLS_OK && removed == 0)
        rc = rls__error(db, RLS_ENOTFOUND, "key is not blocked");
    return rc;
}

int rls_block_set_at(rls_db *db, const char *action, const char *key, int64_t until_ms,
                     const char *reason, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if ((rc = check_name(db, "action", action, 1)) || (rc = check_key(db, key)))
        return rc;
    if (until_ms < 0 || until_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "block end %lld is out of range", (long long)until_ms);
    struct block_arg a = {action ? action : "", key, reason ? reason : "", until_ms, 1, 0, 0, ""};
    return block_change(db, &a, now_ms);
}

int rls_block_unset_at(rls_db *db, const char *action, const char *key, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if ((rc = check_name(db, "action", action, 1)) || (rc = check_key(db, key)))
        return rc;
    if (action && *action) {
        struct block_arg a = {action, key, "", 0, 0, 0, 0, ""};
        return block_change(db, &a, now_ms);
    }
    return unblock_every(db, key, now_ms);
}

/* ---- tier assignments -------------------------------------------------- */

struct tier_arg {
    const char *action, *key, *tier;   /* action "" = every action */
    int64_t until;
    int kind;
    int written;                       /* the key as written, not canonical */
};

static int tier_fn(rls_db *db, void *p, int64_t now)
{
    struct tier_arg *a = p;
    rls_stmt *get = rls__stmt(db, STMT_ASSIGN_GET_ONE);
    rls_stmt *put = rls__stmt(db, a->tier ? STMT_ASSIGN_SET : STMT_ASSIGN_DEL);
    char before[128] = "none", after[128] = "none", nk[RLS_KEY_MAX_LIMIT + 64];
    const char *key = a->key;   /* a->key stays as given: fn may run again */
    int rc = RLS_OK, found = 0;
    if (!get || !put)
        return rls__stmt_failed(db);
    if (a->kind == PAT_EXACT && !a->action[0] && !a->written) {
        /* for every action: canonical, as blocks are (block_key) */
        if ((rc = canon_key(db, key, nk, sizeof nk)))
            return rc;
        key = nk;
    }
    if (a->action[0] && a->kind == PAT_EXACT) {
        /* an exact key for one action is stored as that action's checks see it */
        if ((rc = norm_key(db, a->action, key, nk, sizeof nk)))
            return rc;
        key = nk;
    } else if (a->action[0] && (rc = rls__cache_refresh(db)) == RLS_OK &&
               (!db->rc.rules || !rls__ruleset_action(db->rc.rules, a->action))) {
        return rls__error(db, RLS_ENOACTION, "action '%s' is not defined", a->action);
    } else if (rc) {
        return rc;
    }
    sql_bind_blob(get, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(get, 2, a->action, -1, SQL_STATIC);
    rc = sql_step(get);
    if (rc == SQL_ROW && in_force(sql_column_int64(get, 1), now)) {
        found = 1;
        char t[40];
        snprintf(before, sizeof before, "tier %s until %s", sql_column_text(get, 0),
                 until_text(sql_column_int64(get, 1), t, sizeof t));
    }
    sql_reset(get);
    if (rc != SQL_ROW && rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot read assignment");
    if (!a->tier && !found)
        return rls__error(db, RLS_ENOTFOUND, "key has no tier assignment");
    if (a->tier) {
        if ((rc = rls__cache_refresh(db)))
            return rc;
        if (!db->rc.rules || !rls__ruleset_tier(db->rc.rules, a->tier))
            return rls__error(db, RLS_ENOTFOUND, "tier '%s' is not defined in the active rules",
                              a->tier);
    }
    sql_bind_blob(put, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(put, 6, a->action, -1, SQL_STATIC);
    if (a->tier) {
        sql_bind_int64(put, 2, a->kind);
        sql_bind_text(put, 3, a->tier, -1, SQL_STATIC);
        sql_bind_int64(put, 4, a->until);
        sql_bind_int64(put, 5, now);
        char t[40];
        snprintf(after, sizeof after, "tier %s until %s", a->tier,
                 until_text(a->until, t, sizeof t));
    }
    if ((rc = step_done(db, put, "cannot change assignment")))
        return rc;
    /* patterns and rows of every action are kept in each handle's memory
     * (cache.c, everykey.c), which the rules generation renews */
    if ((a->kind != PAT_EXACT || !a->action[0]) && (rc = rls__exec_simple(db, STMT_META_BUMP)))
        return rc;
    return rls__audit(db, now, a->tier ? "tier.set" : "tier.unset", a->action, key, before,
                      after, "");
}

static int tier_common(rls_db *db, const char *action, const char *key, const char *tier,
                       int64_t until, int64_t now)
{
    key_pattern pat;
    const char *why = "";
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if ((rc = check_name(db, "action", action, 1)) || (rc = check_key(db, key)) ||
        (tier && (rc = check_name(db, "tier", tier, 0))))
        return rc;
    if (rls__key_pattern_parse(key, &pat, &why) != 0)
        return rls__error(db, RLS_EKEY, "'%s' is not a valid key or pattern: %s", key, why);
    if (until < 0 || until > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "expiry %lld is out of range", (long long)until);
    struct tier_arg a = {action ? action : "", key, tier, until, pat.kind, 0};
    rc = admin_tx(db, now, tier_fn, &a);
    if (rc == RLS_ENOTFOUND && !tier && !a.action[0] && pat.kind == PAT_EXACT) {
        /* a row of every action stored as written, before such keys were
         * stored canonical */
        char first[sizeof db->errmsg];
        snprintf(first, sizeof first, "%s", db->errmsg);
        a.written = 1;
        if ((rc = admin_tx(db, now, tier_fn, &a)) == RLS_ENOTFOUND)
            rls__error(db, rc, "%s", first);
    }
    return rc;
}

int rls_tier_assign_at(rls_db *db, const char *action, const char *key, const char *tier,
                       int64_t until_ms, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    if (db && !tier)
        return rls__error(db, RLS_EINVAL, "tier is NULL");
    return tier_common(db, action, key, tier, until_ms, now_ms);
}

int rls_tier_unassign_at(rls_db *db, const char *action, const char *key, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return tier_common(db, action, key, NULL, 0, now_ms);
}

int rls_tier_set_at(rls_db *db, const char *key, const char *tier, int64_t until_ms,
                    int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    if (db && !tier)
        return rls__error(db, RLS_EINVAL, "tier is NULL");
    return tier_common(db, NULL, key, tier, until_ms, now_ms);
}

int rls_tier_unset_at(rls_db *db, const char *key, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    return tier_common(db, NULL, key, NULL, 0, now_ms);
}

/* ---- overrides --------------------------------------------------------- */

struct override_arg {
    const char *action, *key, *name;
    int64_t limit, until;
    int set;
};

/* An override must be a capacity the limit's algorithm can hold (in every
 * tier that defines a limit of that name): sliding_log keeps one entry per
 * unit and takes at most ALGO_SLIDING_LOG_MAX, overage included; a
 * token_bucket whose burst follows the limit must fit its scaled level. */
static int check_override_fits(rls_db *db, const struct override_arg *a)
{
    const rule_action *act = rls__ruleset_action(db->rc.rules, a->action);
    int known = 0;
    for (int t = -1; act && t < act->ntiers; t++) {
        const rule_limit *ls = t < 0 ? act->limits : act->tiers[t].limits;
        int n = t < 0 ? act->nlimits : act->tiers[t].nlimits;
        for (int i = 0; i < n; i++) {
            const rule_limit *l = &ls[i];
            if (strcmp(l->name, a->name) != 0)
                continue;
            known = 1;
            if (l->algorithm == ALGO_SLIDING_LOG &&
                rls__decide_overage(a->limit, l->overage_pct) > ALGO_SLIDING_LOG_MAX)
                return rls__error(db, RLS_EINVAL, "limit '%s' of action '%s' is a sliding_log "
                                  "and takes at most %d units (overage included)",
                                  a->name, a->action, ALGO_SLIDING_LOG_MAX);
            /* token_bucket keeps tokens scaled by the window in an int64 */
            if (l->algorithm == ALGO_TOKEN_BUCKET && l->burst <= 0 &&
                a->limit > INT64_MAX / 2 / l->window.ms)
                return rls__error(db, RLS_EINVAL, "limit '%s' of action '%s': %lld units per "
                                  "%lld ms is too large for token_bucket", a->name, a->action,
                                  (long long)a->limit, (long long)l->window.ms);
        }
    }
    if (!known)
        return rls__error(db, RLS_ENOTFOUND, "action '%s' has no limit named '%s'", a->action,
                          a->name);
    return RLS_OK;
}

static int override_fn(rls_db *db, void *p, int64_t now)
{
    struct override_arg *a = p;
    rls_stmt *get = rls__stmt(db, STMT_OVERRIDE_GET_ONE);
    rls_stmt *put = rls__stmt(db, a->set ? STMT_OVERRIDE_SET : STMT_OVERRIDE_DEL);
    char before[128] = "none", after[128] = "none", nk[RLS_KEY_MAX_LIMIT + 64];
    int rc, found = 0;
    if (!get || !put)
        return rls__stmt_failed(db);
    if ((rc = norm_key(db, a->action, a->key, nk, sizeof nk)))
        return rc;
    const char *key = nk;
    if (a->set && (rc = check_override_fits(db, a)))
        return rc;
    sql_bind_blob(get, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(get, 2, a->action, -1, SQL_STATIC);
    sql_bind_text(get, 3, a->name, -1, SQL_STATIC);
    rc = sql_step(get);
    if (rc == SQL_ROW && in_force(sql_column_int64(get, 1), now)) {
        found = 1;
        char t[40];
        snprintf(before, sizeof before, "%s=%lld until %s", a->name,
                 (long long)sql_column_int64(get, 0),
                 until_text(sql_column_int64(get, 1), t, sizeof t));
    }
    sql_reset(get);
    if (rc != SQL_ROW && rc != SQL_DONE)
        return rls__sql_error(db, rc, "cannot read override");
    if (!a->set && !found)
        return rls__error(db, RLS_ENOTFOUND, "no override of '%s' for this key", a->name);
    sql_bind_blob(put, 1, key, (int)strlen(key), SQL_STATIC);
    sql_bind_text(put, 2, a->action, -1, SQL_STATIC);
    sql_bind_text(put, 3, a->name, -1, SQL_STATIC);
    if (a->set) {
        sql_bind_int64(put, 4, a->limit);
        sql_bind_int64(put, 5, a->until);
        sql_bind_int64(put, 6, now);
        char t[40];
        snprintf(after, sizeof after, "%s=%lld until %s", a->name, (long long)a->limit,
                 until_text(a->until, t, sizeof t));
    }
    if ((rc = step_done(db, put, "cannot change override")))
        return rc;
    return rls__audit(db, now, a->set ? "override.set" : "override.unset", a->action,
                      key, before, after, "");
}

int rls_override_set_at(rls_db *db, const char *action, const char *key,
                        const char *limit_name, int64_t limit, int64_t until_ms,
                        int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if ((rc = check_name(db, "action", action, 0)) || (rc = check_key(db, key)) ||
        (rc = check_name(db, "limit name", limit_name, 0)))
        return rc;
    if (limit < 1 || limit > 1000000000000LL)
        return rls__error(db, RLS_EINVAL, "override limit %lld is outside 1..10^12",
                          (long long)limit);
    if (until_ms < 0 || until_ms > RLS_TIME_MAX)
        return rls__error(db, RLS_ETIME, "expiry %lld is out of range", (long long)until_ms);
    struct override_arg a = {action, key, limit_name, limit, until_ms, 1};
    return admin_tx(db, now_ms, override_fn, &a);
}

int rls_override_unset_at(rls_db *db, const char *action, const char *key,
                          const char *limit_name, int64_t now_ms)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    int rc = rls__db_usable(db);
    if (rc)
        return rc;
    db->errmsg[0] = '\0';
    if ((rc = check_name(db, "action", action, 0)) || (rc = check_key(db, key)) ||
        (rc = check_name(db, "limit name", limit_name, 0)))
        return rc;
    struct override_arg a = {action, key, limit_name, 0, 0, 0};
    return admin_tx(db, now_ms, override_fn, &a);
}
