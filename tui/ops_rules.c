/*
 * ops_rules.c - the two operator actions that change the rule set: edit
 * one limit of a tier (a new version whose YAML differs from the active
 * one in that one number: rls_rules_set_limit_at) and roll back to an
 * older version.  Both confirm first and go through the admin API.
 *
 * The edit guards against a lost update: the preview is made from the
 * active version, and the change is applied only if that version is still
 * the active one (if another operator applied a version meanwhile,
 * nothing is applied).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

__attribute__((format(printf, 3, 4))) static unsigned fail_info(app *a, const char *title,
                                                                const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    dlg_info(a, title, text);
    return RT_REDRAW;
}

static const char *lib_detail(app *a, int rc)
{
    const char *d = rls_errmsg(a->m.db);
    return d && *d ? d : rls_strerror(rc);
}

/* ---- edit a limit -------------------------------------------------------------------- */

static unsigned edit_apply(app *a, int ok)
{
    char comment[300];
    int64_t v = 0;
    int rc;
    if (!ok)
        return 0;
    snprintf(comment, sizeof comment, "rltop: %s %s limit %s %lld -> %lld", a->op.action,
             a->op.tier[0] ? a->op.tier : "(default)", a->op.limit_name,
             (long long)a->op.version, (long long)a->op.value);
    /* applied only if the version the edit started from is still active */
    rc = rls_rules_set_limit_at(a->m.db, a->op.action, a->op.tier, a->op.limit_name, "limit",
                                a->op.value, "rltop", comment, a->op.yaml_version, now_ms(), &v);
    if (rc == RLS_ECONFLICT)
        return fail_info(a, "Edit a limit", "%s",
                         "The active rules changed while you were editing; nothing was "
                         "applied.\nPress e to start again from the new version.");
    if (rc != RLS_OK)
        return fail_info(a, "Edit a limit", "The new rules were refused: %s", lib_detail(a, rc));
    set_msg(a, 0, "applied rule-set version %lld: %s %s limit %s is now %lld", (long long)v,
            a->op.action, a->op.tier[0] ? a->op.tier : "(default)", a->op.limit_name,
            (long long)a->op.value);
    a->m.stale = 1;
    return RT_SAMPLE | RT_REDRAW;
}

static unsigned edit_value(app *a, int ok)
{
    char text[1024];
    rls_rows *over = NULL;
    int64_t value;
    char *end;
    if (!ok)
        return 0;
    long long pv = strtoll(a->dlg.buf, &end, 10);
    while (*end == ' ')
        end++;
    value = pv;
    if (a->dlg.buf[0] < '0' || a->dlg.buf[0] > '9' || *end || value < 1 ||
        value > RLS_LIMIT_MAX) {
        dlg_input(a, "Edit a limit", "Not a whole number from 1 to " CAPACITY_RANGE
                  ". New capacity:", a->dlg.buf, edit_value);
        return RT_REDRAW;
    }
    /* The active version: the preview is made from it, and the change is
     * applied only if it is still active (rls_rules_set_limit_at). */
    rls_rows *vers = NULL;
    int rc = rls_rules_versions(a->m.db, &vers);
    a->op.yaml_version = 0;
    for (int r = 0; rc == RLS_OK && r < rls_rows_count(vers); r++)
        if (rls_rows_int(vers, r, rls_rows_find(vers, "active")))
            a->op.yaml_version = rls_rows_int(vers, r, rls_rows_find(vers, "version"));
    rls_rows_free(vers);
    if (rc == RLS_OK && a->op.yaml_version == 0)
        rc = RLS_ENORULES;
    if (rc != RLS_OK)
        return fail_info(a, "Edit a limit", "Cannot read the active rules: %s", lib_detail(a, rc));
    rc = rls_rules_limit_edit(a->m.db, a->op.yaml_version, a->op.action, a->op.tier,
                              a->op.limit_name, "limit", value, &a->op.new_yaml, &a->op.new_len,
                              &a->op.line);
    if (rc != RLS_OK)
        return fail_info(a, "Edit a limit", "Nothing was changed: %s", lib_detail(a, rc));
    a->op.value = value;
    rc = rls_rules_dry_run_at(a->m.db, a->op.new_yaml, a->op.new_len, "rltop", now_ms(), &over);
    if (rc != RLS_OK)
        return fail_info(a, "Edit a limit", "The changed rules would be refused: %s",
                         lib_detail(a, rc));
    int nover = rls_rows_count(over);
    rls_rows_free(over);
    snprintf(text, sizeof text,
             "Action '%s', %s%s%s, limit '%s': %lld -> %lld (line %d of version %lld).\n"
             "This applies a new rule-set version, used by every process within a second\n"
             "(R rolls it back). %d key%s would be over a new or changed limit right now.\n"
             "Apply?",
             a->op.action, a->op.tier[0] ? "tier '" : "default limits", a->op.tier,
             a->op.tier[0] ? "'" : "", a->op.limit_name, (long long)a->op.version,
             (long long)value, a->op.line, (long long)a->m.version, nover, nover == 1 ? "" : "s");
    dlg_confirm(a, "Edit a limit", text, edit_apply);
    return RT_REDRAW;
}

static unsigned edit_choice(app *a, int ok)
{
    char text[400], init[32];
    if (!ok || a->dlg.sel < 0 || a->dlg.sel >= a->op.n)
        return 0;
    const rule_limit *c = &a->op.cands[a->dlg.sel];
    snprintf(a->op.action, sizeof a->op.action, "%s", c->action);
    snprintf(a->op.tier, sizeof a->op.tier, "%s", c->tier);
    snprintf(a->op.limit_name, sizeof a->op.limit_name, "%s", c->name);
    a->op.version = c->value;   /* the old value, for the comment */
    snprintf(text, sizeof text, "New capacity of limit '%s' of action '%s' for %s%s%s (now %lld; "
             "1 to " CAPACITY_RANGE "):",
             c->name, c->action, c->tier[0] ? "tier '" : "the default limits", c->tier,
             c->tier[0] ? "'" : "", (long long)c->value);
    snprintf(init, sizeof init, "%lld", (long long)c->value);
    dlg_input(a, "Edit a limit", text, init, edit_value);
    return RT_REDRAW;
}

unsigned key_edit(app *a)
{
    const model *m = &a->m;
    const key_row *r = selected_key(a);
    op_clear(&a->op);
    if (m->nelimits == 0) {
        set_msg(a, 1, "no limit of the active rules can be edited here%s%s",
                m->rules_err[0] ? ": " : "", m->rules_err);
        return RT_REDRAW;
    }
    if (!(a->op.cands = calloc((size_t)m->nelimits, sizeof *a->op.cands))) {
        set_msg(a, 1, "out of memory");
        return RT_REDRAW;
    }
    memcpy(a->op.cands, m->elimits, sizeof *a->op.cands * (size_t)m->nelimits);
    a->op.n = m->nelimits;
    dlg_menu(a, "Edit a limit",
             "Limits written in the active rules. '(default)' are an action's default\n"
             "limits, used by every tier that does not replace them.",
             edit_choice);
    int pre = -1;
    for (int i = 0; i < a->op.n && i < DLG_MAX_ITEMS; i++) {
        const rule_limit *c = &a->op.cands[i];
        dlg_item(a, "%-14s %-12s %-12s %12lld", c->action, c->tier[0] ? c->tier : "(default)",
                 c->name, (long long)c->value);
        if (pre < 0 && r && strcmp(r->action, c->action) == 0 &&
            (strcmp(r->tier, c->tier) == 0 || !c->tier[0]))
            pre = i;
    }
    a->dlg.sel = pre < 0 ? 0 : pre;
    return RT_REDRAW;
}

/* ---- rollback ------------------------------------------------------------------------ */

static unsigned rollback_done(app *a, int ok)
{
    int64_t nv = 0;
    char comment[64];
    if (!ok)
        return 0;
    snprintf(comment, sizeof comment, "rltop: rollback to version %lld", (long long)a->op.version);
    int rc = rls_rules_rollback_at(a->m.db, a->op.version, comment, now_ms(), &nv);
    if (rc != RLS_OK)
        return fail_info(a, "Roll back", "Nothing was changed: %s", lib_detail(a, rc));
    set_msg(a, 0, "rolled back to version %lld as version %lld", (long long)a->op.version,
            (long long)nv);
    a->m.stale = 1;
    return RT_SAMPLE | RT_REDRAW;
}

static unsigned rollback_confirm(app *a, int64_t version)
{
    char text[600], when[40];
    const version_row *v = NULL;
    for (int i = 0; i < a->m.nversions; i++)
        if (a->m.versions[i].version == version)
            v = &a->m.versions[i];
    a->op.version = version;
    snprintf(text, sizeof text,
             "Roll back the rules to version %lld (applied %s by %s%s%s)?\n"
             "Its YAML becomes active again as a new version (now %lld);\n"
             "every process uses it within a second.",
             (long long)version, v ? fmt_clock(v->created_ms, when, sizeof when) : "?",
             v ? v->os_user : "?", v && v->comment[0] ? ", " : "", v ? v->comment : "",
             (long long)a->m.version);
    dlg_confirm(a, "Roll back", text, rollback_done);
    return RT_REDRAW;
}

static unsigned rollback_choice(app *a, int ok)
{
    if (!ok || a->dlg.sel < 0 || a->dlg.sel >= a->op.n)
        return 0;
    return rollback_confirm(a, a->op.vals[a->dlg.sel]);
}

unsigned key_rollback(app *a)
{
    const model *m = &a->m;
    op_clear(&a->op);
    if (m->nversions < 2) {
        set_msg(a, 1, "there is no older rule-set version to roll back to");
        return RT_REDRAW;
    }
    if (a->view == VIEW_RULES && a->sel[VIEW_RULES] < m->nversions) {
        const version_row *v = &m->versions[a->sel[VIEW_RULES]];
        if (v->active) {
            set_msg(a, 1, "version %lld is the active one: select an older version",
                    (long long)v->version);
            return RT_REDRAW;
        }
        return rollback_confirm(a, v->version);
    }
    if (!(a->op.vals = calloc((size_t)m->nversions, sizeof *a->op.vals))) {
        set_msg(a, 1, "out of memory");
        return RT_REDRAW;
    }
    dlg_menu(a, "Roll back", "Make an older rule-set version active again:", rollback_choice);
    for (int i = 0; i < m->nversions && a->op.n < DLG_MAX_ITEMS; i++) {
        const version_row *v = &m->versions[i];
        char when[40];
        if (v->active)
            continue;
        a->op.vals[a->op.n++] = v->version;
        dlg_item(a, "version %-5lld %s  %-10s %s", (long long)v->version,
                 fmt_clock(v->created_ms, when, sizeof when), v->os_user, v->comment);
    }
    return RT_REDRAW;
}
