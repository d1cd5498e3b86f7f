/*
 * ops.c - what an operator can change, each as a chain of dialogs that
 * ends in one call of the admin API (which audits it with the OS user and
 * tool "rltop"): unblock, block, tier, override, reset, edit a limit of a
 * tier, roll back the rule set.  Destructive changes ask for a y/n
 * confirmation that says exactly what will happen.
 *
 * The selected key is copied into a->op when the chain starts, so a
 * refresh that reorders the list meanwhile cannot change its subject.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

void op_clear(op *o)
{
    free(o->key);
    free(o->key_esc);
    free(o->cands);
    free(o->vals);
    rls_free(o->new_yaml);
    memset(o, 0, sizeof *o);
}

/* Copies (action, key) of the selected row of the keys view into a->op. */
static int grab_key(app *a, const char *what)
{
    const key_row *r = selected_key(a);
    op_clear(&a->op);
    if (!r) {
        set_msg(a, 1, "select a key in the keys view (1) to %s it", what);
        return -1;
    }
    snprintf(a->op.action, sizeof a->op.action, "%s", r->action);
    a->op.key = strdup(r->key);
    a->op.key_esc = esc_dup(r->key);
    snprintf(a->op.tier, sizeof a->op.tier, "%s", r->tier);
    if (!a->op.key || !a->op.key_esc) {
        op_clear(&a->op);
        set_msg(a, 1, "out of memory");
        return -1;
    }
    return 0;
}

/* After a change: a message, and fresh data on the next loop. */
static unsigned done_with(app *a, int rc, const char *fmt, const char *what)
{
    if (rc == RLS_OK) {
        set_msg(a, 0, fmt, what);
    } else {
        const char *d = rls_errmsg(a->m.db);
        set_msg(a, 1, "cannot %s: %s", what, d && *d ? d : rls_strerror(rc));
    }
    a->m.stale = 1;
    a->m.total_ms = 0;
    return RT_SAMPLE | RT_REDRAW;
}

/* "" -> 0 (no end); a duration -> now + it; a time -> that time. */
static int parse_until(const char *text, int64_t now, int64_t *until)
{
    int64_t v;
    while (*text == ' ')
        text++;
    if (!*text) {
        *until = 0;
        return 0;
    }
    if (rls_duration_parse(text, &v) == RLS_OK && v > 0) {
        *until = now + v;
        return 0;
    }
    if (rls_time_parse(text, &v) == RLS_OK && v > now) {
        *until = v;
        return 0;
    }
    return -1;
}

static int parse_count(const char *text, int64_t *out)
{
    char *end;
    while (*text == ' ')
        text++;
    if (*text < '0' || *text > '9')
        return -1;
    long long v = strtoll(text, &end, 10);
    while (*end == ' ')
        end++;
    if (*end || v < 1 || v > RLS_LIMIT_MAX)
        return -1;
    *out = v;
    return 0;
}

static const char *until_text(int64_t until, char *buf, size_t size)
{
    char t[40];
    if (!until)
        snprintf(buf, size, "with no end");
    else
        snprintf(buf, size, "until %s", fmt_clock(until, t, sizeof t));
    return buf;
}

/* ---- unblock ------------------------------------------------------------------- */

/* Whether block i of the model is one to lift: for a key of the keys view
 * its action's block and the every-action block; from the blocks view
 * exactly the selected one. */
static int matching_block(const app *a, int i)
{
    const block_row *b = &a->m.blocks[i];
    if (strcmp(b->key, a->op.key) != 0)
        return 0;
    return a->op.exact_block ? strcmp(b->action, a->op.action) == 0
                             : (!b->action[0] || strcmp(b->action, a->op.action) == 0);
}

static unsigned unblock_done(app *a, int ok)
{
    int rc = RLS_ENOTFOUND, any = 0;
    int64_t now = now_ms();
    if (!ok)
        return 0;
    for (int i = 0; i < a->m.nblocks; i++) {
        if (!matching_block(a, i))
            continue;
        const block_row *b = &a->m.blocks[i];
        int r = rls_block_unset_at(a->m.db, b->action[0] ? b->action : NULL, b->key, now);
        if (r == RLS_OK)
            any = 1;
        else if (r != RLS_ENOTFOUND)
            rc = r;
    }
    if (!any && !a->op.exact_block && rc == RLS_ENOTFOUND) {
        /* the list may be older than the block: try both scopes */
        if (rls_block_unset_at(a->m.db, a->op.action, a->op.key, now) == RLS_OK)
            any = 1;
        if (rls_block_unset_at(a->m.db, NULL, a->op.key, now) == RLS_OK)
            any = 1;
    }
    if (any)
        rc = RLS_OK;
    return done_with(a, rc, "unblocked '%s'", a->op.key_esc);
}

unsigned key_unblock(app *a)
{
    char text[1024], left[32];
    size_t n = 0;
    if (a->view == VIEW_BLOCKS) {
        long i = a->sel[VIEW_BLOCKS];
        if (i < 0 || i >= a->m.nblocks) {
            set_msg(a, 1, "no block is selected");
            return RT_REDRAW;
        }
        const block_row *b = &a->m.blocks[i];
        op_clear(&a->op);
        snprintf(a->op.action, sizeof a->op.action, "%s", b->action);
        a->op.key = strdup(b->key);
        a->op.key_esc = esc_dup(b->key);
        a->op.exact_block = 1;
        if (!a->op.key || !a->op.key_esc) {
            op_clear(&a->op);
            return RT_REDRAW;
        }
    } else if (grab_key(a, "unblock") != 0) {
        return RT_REDRAW;
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "Unblock '%s'?", a->op.key_esc);
    int found = 0;
    for (int i = 0; i < a->m.nblocks && n < sizeof text - 200; i++) {
        if (!matching_block(a, i))
            continue;
        const block_row *b = &a->m.blocks[i];
        int64_t l = b->until_ms ? b->until_ms - now_ms() : 0;
        n += (size_t)snprintf(text + n, sizeof text - n, "\n  %s block %s%s%s, %s%s%s%s",
                              b->kind, b->action[0] ? "of '" : "for every action",
                              b->action, b->action[0] ? "'" : "",
                              b->until_ms ? "ends in " : "forever",
                              b->until_ms ? fmt_left(l > 0 ? l : 1, left, sizeof left) : "",
                              b->reason[0] ? ", reason: " : "", b->reason);
        found++;
    }
    if (!found && a->view == VIEW_KEYS) {
        const key_row *r = selected_key(a);
        if (r && !r->blocked) {
            set_msg(a, 1, "'%s' is not blocked", a->op.key_esc);
            op_clear(&a->op);
            return RT_REDRAW;
        }
        if (r && !r->block_until_ms) {
            set_msg(a, 1, "'%s' is blocked by its tier '%s': assign another tier with t",
                    a->op.key_esc, r->tier);
            op_clear(&a->op);
            return RT_REDRAW;
        }
    }
    if (n < sizeof text - 80)
        snprintf(text + n, sizeof text - n, "\nA penalty's escalation level is forgotten too.");
    dlg_confirm(a, "Unblock", text, unblock_done);
    return RT_REDRAW;
}

/* ---- block ----------------------------------------------------------------------- */

static unsigned block_confirm(app *a, int ok)
{
    if (!ok)
        return 0;
    int rc = rls_block_set_at(a->m.db, a->op.all_actions ? NULL : a->op.action, a->op.key,
                              a->op.until_ms, a->op.reason[0] ? a->op.reason : NULL, now_ms());
    return done_with(a, rc, "blocked '%s'", a->op.key_esc);
}

static unsigned block_reason(app *a, int ok)
{
    char text[1024], u[64];
    if (!ok)
        return 0;
    snprintf(a->op.reason, sizeof a->op.reason, "%.*s", (int)sizeof a->op.reason - 1, a->dlg.buf);
    char *r = esc_dup(a->op.reason);
    snprintf(text, sizeof text, "Block '%s' %s%s%s %s?\nReason: %s\nIts checks are denied until "
             "then.", a->op.key_esc, a->op.all_actions ? "for every action" : "for '",
             a->op.all_actions ? "" : a->op.action, a->op.all_actions ? "" : "'",
             a->op.until_ms ? until_text(a->op.until_ms, u, sizeof u) : "until unblocked",
             r && *r ? r : "(none)");
    free(r);
    dlg_confirm(a, "Block", text, block_confirm);
    return RT_REDRAW;
}

static unsigned block_duration(app *a, int ok)
{
    if (!ok)
        return 0;
    if (a->dlg.buf[0] && parse_until(a->dlg.buf, now_ms(), &a->op.until_ms) != 0) {
        char bad[600];
        snprintf(bad, sizeof bad, "'%.100s' is not a duration such as 10m, 1h or 1d.\nFor how "
                 "long? (empty: until unblocked)", a->dlg.buf);
        dlg_input(a, "Block", bad, "1h", block_duration);
        return RT_REDRAW;
    }
    if (!a->dlg.buf[0])
        a->op.until_ms = 0;
    dlg_input(a, "Block", "Reason (recorded in the audit log):", "", block_reason);
    return RT_REDRAW;
}

static unsigned block_scope(app *a, int ok)
{
    if (!ok)
        return 0;
    a->op.all_actions = a->dlg.sel == 1;
    dlg_input(a, "Block", "For how long? A duration such as 10m, 1h, 1d, or a time such as "
              "2026-12-31 (empty: until unblocked).", "1h", block_duration);
    return RT_REDRAW;
}

unsigned key_block(app *a)
{
    if (grab_key(a, "block") != 0)
        return RT_REDRAW;
    char text[400];
    snprintf(text, sizeof text, "Block '%s'", a->op.key_esc);
    dlg_menu(a, "Block", text, block_scope);
    dlg_item(a, "for '%s' only", a->op.action);
    dlg_item(a, "for every action");
    return RT_REDRAW;
}

/* ---- tier ------------------------------------------------------------------------ */

static unsigned tier_until(app *a, int ok)
{
    char what[600], u[64];
    if (!ok)
        return 0;
    if (parse_until(a->dlg.buf, now_ms(), &a->op.until_ms) != 0) {
        dlg_input(a, "Tier", "Not a duration or a future time. Until when? (empty: no end)",
                  a->dlg.buf, tier_until);
        return RT_REDRAW;
    }
    int rc = rls_tier_set_at(a->m.db, a->op.key, a->op.tier, a->op.until_ms, now_ms());
    snprintf(what, sizeof what, "assigned '%s' to tier '%s' %s", a->op.key_esc, a->op.tier,
             until_text(a->op.until_ms, u, sizeof u));
    if (rc != RLS_OK)
        snprintf(what, sizeof what, "assign '%s' to tier '%s'", a->op.key_esc, a->op.tier);
    return done_with(a, rc, "%s", what);
}

static unsigned tier_choice(app *a, int ok)
{
    if (!ok)
        return 0;
    int i = a->dlg.sel;
    if (i == a->m.ntiers) {
        int rc = rls_tier_unset_at(a->m.db, a->op.key, now_ms());
        if (rc == RLS_ENOTFOUND) {
            set_msg(a, 1, "'%s' has no tier assignment of its own", a->op.key_esc);
            return RT_REDRAW;
        }
        return done_with(a, rc, "removed the tier assignment of '%s'", a->op.key_esc);
    }
    if (i < 0 || i > a->m.ntiers)
        return 0;
    snprintf(a->op.tier, sizeof a->op.tier, "%s", a->m.tiers[i]);
    dlg_input(a, "Tier", "Until when? A duration such as 7d or a time such as 2026-12-31 "
              "(empty: no end).", "", tier_until);
    return RT_REDRAW;
}

unsigned key_tier(app *a)
{
    char text[400];
    if (grab_key(a, "assign a tier to") != 0)
        return RT_REDRAW;
    if (a->m.ntiers == 0) {
        set_msg(a, 1, "the active rules list no tiers%s%s", a->m.rules_err[0] ? ": " : "",
                a->m.rules_err);
        op_clear(&a->op);
        return RT_REDRAW;
    }
    snprintf(text, sizeof text, "Assign '%s' (now '%s') to a tier, for every action.",
             a->op.key_esc, a->op.tier);
    dlg_menu(a, "Tier", text, tier_choice);
    for (int i = 0; i < a->m.ntiers; i++) {
        dlg_item(a, "%s%s%s", a->m.tiers[i],
                 strcmp(a->m.tiers[i], a->m.default_tier) == 0 ? "  (default)" : "",
                 strcmp(a->m.tiers[i], a->op.tier) == 0 ? "  (current)" : "");
        if (strcmp(a->m.tiers[i], a->op.tier) == 0)
            a->dlg.sel = i;
    }
    dlg_item(a, "remove the key's own assignment");
    return RT_REDRAW;
}

/* ---- override -------------------------------------------------------------------- */

static unsigned override_until(app *a, int ok)
{
    char what[600], u[64];
    if (!ok)
        return 0;
    if (parse_until(a->dlg.buf, now_ms(), &a->op.until_ms) != 0) {
        dlg_input(a, "Override", "Not a duration or a future time. Until when? (empty: no end)",
                  a->dlg.buf, override_until);
        return RT_REDRAW;
    }
    int rc = rls_override_set_at(a->m.db, a->op.action, a->op.key, a->op.limit_name,
                                 a->op.value, a->op.until_ms, now_ms());
    if (rc == RLS_OK)
        snprintf(what, sizeof what, "limit '%s' of '%s' for '%s' is now %lld %s",
                 a->op.limit_name, a->op.action, a->op.key_esc, (long long)a->op.value,
                 until_text(a->op.until_ms, u, sizeof u));
    else
        snprintf(what, sizeof what, "override limit '%s' for '%s'", a->op.limit_name,
                 a->op.key_esc);
    return done_with(a, rc, "%s", what);
}

static unsigned override_value(app *a, int ok)
{
    if (!ok)
        return 0;
    if (parse_count(a->dlg.buf, &a->op.value) != 0) {
        dlg_input(a, "Override", "Not a whole number from 1 to " CAPACITY_RANGE ". New capacity:",
                  a->dlg.buf, override_value);
        return RT_REDRAW;
    }
    dlg_input(a, "Override", "Until when? A duration such as 1d or a time such as 2026-12-31 "
              "(empty: no end).", "", override_until);
    return RT_REDRAW;
}

static unsigned override_limit(app *a, int ok)
{
    char text[300], init[32];
    if (!ok || a->dlg.sel < 0 || a->dlg.sel >= a->op.n)
        return 0;
    const rule_limit *c = &a->op.cands[a->dlg.sel];
    snprintf(a->op.limit_name, sizeof a->op.limit_name, "%s", c->name);
    snprintf(text, sizeof text, "New capacity of limit '%s' for '%s' (now %lld; 1 to "
             CAPACITY_RANGE "):", c->name, a->op.key_esc, (long long)c->value);
    snprintf(init, sizeof init, "%lld", (long long)c->value);
    dlg_input(a, "Override", text, init, override_value);
    return RT_REDRAW;
}

unsigned key_override(app *a)
{
    rls_rows *lim = NULL;
    char text[300];
    if (grab_key(a, "override a limit of") != 0)
        return RT_REDRAW;
    int rc = rls_explain_at(a->m.db, a->op.action, a->op.key, now_ms(), NULL, &lim);
    int n = rls_rows_count(lim);
    if (rc != RLS_OK || n == 0 || !(a->op.cands = calloc((size_t)n, sizeof *a->op.cands))) {
        const char *d = rls_errmsg(a->m.db);
        set_msg(a, 1, "cannot read the limits of '%s': %s", a->op.key_esc,
                rc != RLS_OK ? (d && *d ? d : rls_strerror(rc)) : "none");
        rls_rows_free(lim);
        op_clear(&a->op);
        return RT_REDRAW;
    }
    snprintf(text, sizeof text, "Override one limit of '%s' for '%s' only:", a->op.action,
             a->op.key_esc);
    dlg_menu(a, "Override", text, override_limit);
    int cn = rls_rows_find(lim, "name"), cl = rls_rows_find(lim, "limit"),
        cu = rls_rows_find(lim, "used"), co = rls_rows_find(lim, "overridden");
    for (int i = 0; i < n; i++) {
        rule_limit *c = &a->op.cands[i];
        const char *name = rls_rows_text(lim, i, cn);
        snprintf(c->name, sizeof c->name, "%s", name ? name : "");
        c->value = rls_rows_int(lim, i, cl);
        dlg_item(a, "%-16s capacity %-10lld used %lld%s", c->name, (long long)c->value,
                 (long long)rls_rows_int(lim, i, cu),
                 rls_rows_int(lim, i, co) ? "  (overridden)" : "");
    }
    a->op.n = n;
    rls_rows_free(lim);
    return RT_REDRAW;
}

/* ---- reset ------------------------------------------------------------------------- */

static unsigned reset_done(app *a, int ok)
{
    if (!ok)
        return 0;
    int rc = rls_reset_at(a->m.db, a->op.action, a->op.key, now_ms());
    if (rc == RLS_ENOTFOUND) {
        set_msg(a, 1, "'%s' has no counters for '%s'", a->op.key_esc, a->op.action);
        return RT_REDRAW;
    }
    return done_with(a, rc, "reset the counters of '%s'", a->op.key_esc);
}

unsigned key_reset(app *a)
{
    char text[600];
    if (grab_key(a, "reset") != 0)
        return RT_REDRAW;
    snprintf(text, sizeof text, "Reset the counters of '%s' for '%s'?\nEvery limit of the "
             "action starts from zero for this key; blocks stay.", a->op.key_esc, a->op.action);
    dlg_confirm(a, "Reset counters", text, reset_done);
    return RT_REDRAW;
}
