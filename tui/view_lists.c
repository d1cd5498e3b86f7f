/*
 * view_lists.c - the rules view (rule-set versions, tiers and the limits
 * written in the active rules), the blocks view and the audit view.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

int view_height(const app *a, int view)
{
    int h = a->list_rows > 1 ? a->list_rows : 1;
    if (view == VIEW_RULES) {
        int n = a->m.nversions < 1 ? 1 : a->m.nversions;
        int half = h / 2 > 3 ? h / 2 : 3;
        return n < half ? n : half;
    }
    if (view == VIEW_BLOCKS && a->m.nevents > 0) {   /* events below (view_events.c) */
        int n = a->m.nblocks < 1 ? 1 : a->m.nblocks;
        int half = h / 2 > 3 ? h / 2 : 3;
        return n < half ? n : half;
    }
    return h;
}

/* A title line of fixed columns; widths 0 = skipped, -1 = the rest. */
static void titles(WINDOW *w, const char *const *t, const int *wd, int n)
{
    int x = 0, cols = getmaxx(w);
    draw_attr(w, C_TITLE, 1);
    draw_text(w, 0, 0, cols, "", 1, 0);
    for (int i = 0; i < n && x < cols; i++) {
        if (!wd[i])
            continue;
        int width = wd[i] < 0 ? cols - x : wd[i];
        draw_text(w, 0, x, width, t[i], 1, 0);
        x += width + 1;
    }
    draw_attr(w, C_TITLE, 0);
}

static void cells(WINDOW *w, int y, const char *const *c, const int *wd, int n, const int *right)
{
    int x = 0, cols = getmaxx(w);
    for (int i = 0; i < n && x < cols; i++) {
        if (!wd[i])
            continue;
        int width = wd[i] < 0 ? cols - x : wd[i];
        draw_text(w, y, x, width, c[i], 1, right && right[i]);
        x += width;
        if (x < cols)
            draw_text(w, y, x++, 1, " ", 1, 0);
    }
}

/* ---- rules ------------------------------------------------------------------- */

void view_rules(app *a, WINDOW *w)
{
    const model *m = &a->m;
    int rows = getmaxy(w), cols = getmaxx(w);
    static const char *const t[] = {"VERSION", "ACTIVE", "APPLIED", "BY", "TOOL", "SOURCE", "COMMENT"};
    static const int right[] = {1, 0, 0, 0, 0, 0, 0};
    int wd[] = {7, 6, 20, 10, 6, 16, -1};
    if (cols < 90)
        wd[5] = 0;
    titles(w, t, wd, 7);
    int vh = view_height(a, VIEW_RULES), y = 1;
    if (m->nversions == 0)
        draw_text(w, y, 1, cols - 1, "No rule set has been applied yet.", 0, 0);
    for (long i = a->top[VIEW_RULES]; i < m->nversions && y <= vh; i++, y++) {
        const version_row *v = &m->versions[i];
        char ver[24], when[40];
        snprintf(ver, sizeof ver, "%lld", (long long)v->version);
        const char *c[] = {ver, v->active ? "yes" : "", fmt_clock(v->created_ms, when, sizeof when),
                           v->os_user, v->tool, v->source, v->comment};
        int sel = i == a->sel[VIEW_RULES];
        draw_attr(w, sel ? C_SELECT : v->active ? C_OK : C_NORMAL, 1);
        cells(w, y, c, wd, 7, right);
        draw_attr(w, sel ? C_SELECT : v->active ? C_OK : C_NORMAL, 0);
    }
    y = vh + 2;
    if (y >= rows)
        return;
    /* tiers and limits of the active version */
    char line[512];
    size_t n = (size_t)snprintf(line, sizeof line, "tiers:");
    for (int i = 0; i < m->ntiers && n < sizeof line; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, " %s%s", m->tiers[i],
                              strcmp(m->tiers[i], m->default_tier) == 0 ? " (default)" : "");
    draw_attr(w, C_HEADER, 1);
    draw_text(w, y++, 1, cols - 1, m->ntiers ? line : "tiers: (none listed)", 0, 0);
    draw_attr(w, C_HEADER, 0);
    if (m->rules_err[0] && y < rows) {
        draw_attr(w, C_ERROR, 1);
        draw_textf(w, y++, 1, cols - 1, "the rules cannot be summarised here: %s", m->rules_err);
        draw_attr(w, C_ERROR, 0);
    }
    if (y < rows) {
        draw_attr(w, C_DIM, 1);
        draw_textf(w, y++, 1, cols - 1, "%-12s %-10s %-10s %-14s %10s %-7s %-16s", "ACTION",
                   "TIER", "LIMIT", "ALGORITHM", "CAPACITY", "WINDOW", "ZONE");
        draw_attr(w, C_DIM, 0);
    }
    /* two columns of limits when the terminal is wide */
    int per = cols >= 2 * 96 ? 2 : 1, colw = cols / per, left = rows - y;   /* a row: 93 */
    for (int i = 0; i < m->nrlimits && left > 0; i++) {
        const rule_limit *r = &m->rlimits[i];
        int cx = (i / left) * colw;
        if (i / left >= per) {
            draw_attr(w, C_DIM, 1);
            draw_textf(w, rows - 1, cols - 40 > 0 ? cols - 40 : 0, 40,
                       "... %d more: 'rlctl rules'", m->nrlimits - i);
            draw_attr(w, C_DIM, 0);
            break;
        }
        /* "1w cal": a calendar week of the zone, not the 7 days of "7d" */
        char win[32];
        snprintf(win, sizeof win, "%s%s", r->window, r->calendar ? " cal" : "");
        draw_textf(w, y + i % left, cx + 1, colw - 2, "%-12.12s %-10.10s %-10.10s %-14.14s %10lld "
                   "%-7.7s %-16.16s%s", r->action, r->tier[0] ? r->tier : "(default)", r->name,
                   r->algorithm, (long long)r->value, win, r->timezone,
                   strcmp(r->mode, "shadow") == 0 ? " shadow" : "");
    }
}

/* ---- blocks ------------------------------------------------------------------ */

void view_blocks(app *a, WINDOW *w)
{
    const model *m = &a->m;
    int rows = getmaxy(w), cols = getmaxx(w);
    int64_t now = now_ms();
    static const char *const t[] = {"KEY", "ACTION", "KIND", "LEVEL", "LEFT", "RULE", "BY",
                                    "SINCE", "REASON"};
    static const int right[] = {0, 0, 0, 1, 1, 0, 0, 0, 0};
    int wd[] = {24, 10, 7, 5, 9, 10, 8, 20, -1};
    if (cols < 120)
        wd[7] = 0;
    if (cols < 100) {
        wd[5] = 0;
        wd[3] = 0;
        wd[0] = 20;
    }
    titles(w, t, wd, 9);
    int vh = view_height(a, VIEW_BLOCKS);
    if (m->nblocks == 0)
        draw_text(w, 2, 1, cols - 1, "No key is blocked.", 0, 0);
    view_block_events(a, w, (m->nblocks == 0 ? 3 : vh + 1) + 1);
    for (long i = a->top[VIEW_BLOCKS]; i < m->nblocks && i - a->top[VIEW_BLOCKS] < vh &&
         i - a->top[VIEW_BLOCKS] + 1 < rows; i++) {
        const block_row *b = &m->blocks[i];
        char lvl[16], left[32], since[40];
        int64_t l = b->until_ms ? b->until_ms - now : -1;
        snprintf(lvl, sizeof lvl, "%lld", (long long)b->level);
        if (b->until_ms)
            fmt_left(l > 0 ? l : 1, left, sizeof left);
        else
            snprintf(left, sizeof left, "forever");
        const char *c[] = {b->key_esc, b->action[0] ? b->action : "*", b->kind, lvl, left,
                           b->rule[0] ? b->rule : "-", b->os_user,
                           fmt_clock(b->created_ms, since, sizeof since), b->reason};
        int y = (int)(i - a->top[VIEW_BLOCKS]) + 1, sel = i == a->sel[VIEW_BLOCKS];
        draw_attr(w, sel ? C_SELECT : C_BLOCKED, 1);
        cells(w, y, c, wd, 9, right);
        draw_attr(w, sel ? C_SELECT : C_BLOCKED, 0);
    }
}

/* ---- audit ------------------------------------------------------------------- */

void view_audit(app *a, WINDOW *w)
{
    const model *m = &a->m;
    int rows = getmaxy(w), cols = getmaxx(w);
    static const char *const t[] = {"TIME", "BY", "TOOL", "OP", "ACTION", "KEY", "CHANGE"};
    int wd[] = {20, 8, 6, 14, 10, 20, -1};
    if (cols < 100)
        wd[0] = 0;
    titles(w, t, wd, 7);
    if (m->naudit == 0) {
        draw_text(w, 2, 1, cols - 1, "No changes have been recorded.", 0, 0);
        return;
    }
    for (long i = a->top[VIEW_AUDIT]; i < m->naudit && i - a->top[VIEW_AUDIT] + 1 < rows; i++) {
        const audit_row *r = &m->audit[i];
        char when[40], change[600];
        snprintf(change, sizeof change, "%s%s%s%s%s", r->before, r->before[0] || r->after[0] ? " -> " : "",
                 r->after, r->reason[0] ? "  reason: " : "", r->reason);
        const char *c[] = {fmt_clock(r->ts_ms, when, sizeof when), r->os_user, r->tool, r->op,
                           r->action[0] ? r->action : "*", r->key_esc[0] ? r->key_esc : "-", change};
        int y = (int)(i - a->top[VIEW_AUDIT]) + 1, sel = i == a->sel[VIEW_AUDIT];
        if (sel)
            draw_attr(w, C_SELECT, 1);
        cells(w, y, c, wd, 7, NULL);
        if (sel)
            draw_attr(w, C_SELECT, 0);
    }
}
