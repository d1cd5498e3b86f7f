/*
 * view_keys.c - the keys view (one row per action and key with its most
 * pressing limit, a bar, what is left, when it resets and its state) and
 * the detail pane of one key (every limit, tier and its source, block,
 * overrides, recent audit rows).
 *
 * Columns are sized to the terminal: at 80 columns the bar and then the
 * remaining count give way before the key column gets narrower than 18.
 * Countdowns (resets in, blocked for) are computed from the sample time
 * and the clock, so they tick every second between samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

long view_count(const app *a, int view)
{
    const model *m = &a->m;
    switch (view) {
    case VIEW_KEYS:
        if (m->total >= 0)
            return m->total;
        return m->off + m->nrows;
    case VIEW_RULES: return m->nversions;
    case VIEW_BLOCKS: return m->nblocks;
    case VIEW_AUDIT: return m->naudit;
    default: return 0;
    }
}

/* "blocked 4m12s", "blocked" (forever), or the state as reported. */
static const char *state_text(const key_row *r, int64_t now, char *buf, size_t size)
{
    char d[32];
    if (strcmp(r->state, "blocked") == 0 && r->block_until_ms > 0) {
        int64_t left = r->block_until_ms - now;
        snprintf(buf, size, "blocked %s", fmt_left(left > 0 ? left : 1, d, sizeof d));
    } else {
        snprintf(buf, size, "%s", r->state);
    }
    return buf;
}

typedef struct layout {
    int key, action, tier, used, bar, rem, denied, reset, state;
} layout;

static layout plan(const app *a, int cols)
{
    const model *m = &a->m;
    layout l = {0, 6, 4, 10, 10, 6, 6, 6, 14};
    for (int i = 0; i < m->nrows; i++) {
        int aw = (int)strlen(m->rows[i].action), tw = (int)strlen(m->rows[i].tier);
        char u[64];
        int uw = snprintf(u, sizeof u, "%lld/%lld", (long long)m->rows[i].used,
                          (long long)m->rows[i].limit);
        if (aw > l.action)
            l.action = aw > 12 ? 12 : aw;
        if (tw > l.tier)
            l.tier = tw > 10 ? 10 : tw;
        if (uw > l.used)
            l.used = uw > 17 ? 17 : uw;
    }
    int fixed = l.action + l.tier + l.used + l.bar + l.rem + l.denied + l.reset + l.state + 8;
    if (cols - fixed < 18) {
        fixed -= l.bar + 1;
        l.bar = 0;
    }
    if (cols - fixed < 18) {
        fixed -= l.denied + 1;
        l.denied = 0;
    }
    if (cols - fixed < 18) {
        fixed -= l.rem + 1;
        l.rem = 0;
    }
    if (cols - fixed < 18) {
        fixed -= l.tier + 1;
        l.tier = 0;
    }
    l.key = cols - fixed > 4 ? cols - fixed : 4;
    return l;
}

/* Draws the columns in order: key action tier used bar rem denied reset
 * state.  Returns the column where the state starts. */

/* One line per limit whose window follows a calendar: which period of
 * which zone, and how long this one is (a DST day is 23 or 25 hours, a
 * month 28 to 31 days). */
static int draw_calendars(WINDOW *w, int y, int rows, int cols, const detail *d)
{
    static const char *const kinds[][2] = {
        {"1d", "the calendar day from midnight"},
        {"1w", "the ISO week from Monday 00:00"},
        {"1mo", "the calendar month from the 1st"},
    };
    for (int i = 0; i < d->nlimits && y < rows; i++) {
        const limit_row *l = &d->limits[i];
        const char *what = "a calendar period";
        char len[32];
        if (!l->calendar)
            continue;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (strcmp(l->window, kinds[k][0]) == 0)
                what = kinds[k][1];
        fmt_left(l->window_now_ms, len, sizeof len);
        draw_textf(w, y++, 3, cols - 3, "%s: %s is %s in %s; this one lasts %s", l->name,
                   l->window, what, l->timezone, len);
    }
    return y;
}
static int row_cells(app *a, WINDOW *w, int y, const layout *l, const char *const cell[9],
                     int bar_color, int64_t ppm, int title)
{
    static const int right[9] = {0, 0, 0, 1, 0, 1, 1, 1, 0};
    int widths[9] = {l->key, l->action, l->tier, l->used, l->bar, l->rem, l->denied, l->reset,
                     l->state};
    int x = 0, cols = getmaxx(w), state_x = 0;
    for (int c = 0; c < 9; c++) {
        if (!widths[c])
            continue;
        int wd = widths[c];
        if (c == 8) {
            wd = cols - x;   /* the last column takes the rest of the line */
            state_x = x;
        }
        if (c == 4 && !title)
            draw_bar(a, w, y, x, wd, ppm, bar_color);
        else
            draw_text(w, y, x, wd, cell[c], 1, right[c]);
        x += wd;
        if (c < 8 && x < cols)
            draw_text(w, y, x++, 1, " ", 1, 0);
    }
    return state_x;
}

void view_keys(app *a, WINDOW *w)
{
    model *m = &a->m;
    int rows = getmaxy(w), cols = getmaxx(w);
    int64_t now = now_ms();
    layout l = plan(a, cols);
    static const char *const titles[9] = {"KEY", "ACTION", "TIER", "USED/LIMIT", "USE",
                                          "LEFT", "DENIED", "RESETS", "STATE"};
    draw_attr(w, C_TITLE, 1);
    row_cells(a, w, 0, &l, titles, C_TITLE, 0, 1);
    draw_attr(w, C_TITLE, 0);

    if (m->no_rules) {
        draw_text(w, 2, 1, cols - 2, "No rules have been applied to this database yet.", 0, 0);
        draw_text(w, 3, 1, cols - 2, "Apply some with: rlctl --db PATH apply rules.yaml", 0, 0);
        return;
    }
    if (m->nrows == 0 && m->total == 0) {
        const char *why = m->f_substr[0] || m->f_action[0] ? "No keys match the filter."
                                                           : "No keys are tracked yet.";
        draw_text(w, 2, 1, cols - 2, why, 0, 0);
        return;
    }
    for (int y = 1; y < rows; y++) {
        long i = a->top[VIEW_KEYS] + y - 1;
        if (view_count(a, VIEW_KEYS) <= i && model_row(m, i) == NULL)
            break;
        const key_row *r = model_row(m, i);
        int sel = i == a->sel[VIEW_KEYS];
        if (!r) {
            draw_attr(w, C_DIM, 1);
            draw_text(w, y, 0, cols, "  ...", 1, 0);
            draw_attr(w, C_DIM, 0);
            continue;
        }
        char used[48], rem[32], den[32], reset[32], st[48];
        int64_t left = r->reset_ms > 0 ? r->reset_ms - (now - m->keys_ms) : 0;
        if (r->limit == 0 && r->blocked)
            snprintf(used, sizeof used, "-");   /* a blocked key reports no limit */
        else
            snprintf(used, sizeof used, "%lld/%lld", (long long)r->used, (long long)r->limit);
        snprintf(rem, sizeof rem, "%lld", (long long)r->remaining);
        snprintf(den, sizeof den, "%lld", (long long)r->denied);
        fmt_left(left > 0 ? left : 0, reset, sizeof reset);
        const char *cells[9] = {r->key_esc, r->action, r->tier, used, "", rem, den, reset,
                                state_text(r, now, st, sizeof st)};
        int color = state_color(r->state);
        if (sel) {
            draw_attr(w, C_SELECT, 1);
            row_cells(a, w, y, &l, cells, C_SELECT, r->blocked ? 1000000 : r->ppm, 0);
            draw_attr(w, C_SELECT, 0);
        } else {
            int x = row_cells(a, w, y, &l, cells, color, r->blocked ? 1000000 : r->ppm, 0);
            draw_attr(w, color, 1);   /* the state again, in its colour */
            draw_text(w, y, x, cols - x, cells[8], 1, 0);
            draw_attr(w, color, 0);
        }
    }
}

/* ---- detail pane --------------------------------------------------------- */

void view_detail(app *a, WINDOW *w)
{
    const detail *d = &a->m.det;
    int rows = getmaxy(w), cols = getmaxx(w), y = 0, x;
    char b1[32], b2[32], b3[32], line[512];
    int64_t now = now_ms();

    draw_attr(w, C_TITLE, 1);
    snprintf(line, sizeof line, " %s  %s", d->valid ? d->action : "", d->valid ? d->key_esc : "");
    draw_text(w, y++, 0, cols, line, 1, 0);
    draw_attr(w, C_TITLE, 0);
    if (!d->valid) {
        draw_text(w, y, 1, cols - 1, "Select a key and press Enter.", 0, 0);
        return;
    }
    if (d->err[0]) {
        draw_attr(w, C_ERROR, 1);
        draw_text(w, y, 1, cols - 1, d->err, 0, 0);
        draw_attr(w, C_ERROR, 0);
        return;
    }
    /* tier, its source and the next decision */
    x = draw_textf(w, y, 1, cols - 1, "tier %s (%s%s%s)", d->tier, d->tier_source,
                   d->tier_pattern[0] ? " " : "", d->tier_pattern) + 1;
    if (strcmp(d->behaviour, "normal") != 0)
        x += draw_textf(w, y, x, cols - x, "  %s", d->behaviour);
    draw_attr(w, d->allowed ? C_OK : C_LIMITED, 1);
    if (d->allowed)
        draw_textf(w, y, x, cols - x, "  next check: admitted (%s)", d->reason);
    else
        draw_textf(w, y, x, cols - x, "  next check: denied (%s), retry in %s", d->reason,
                   fmt_left(d->retry_after_ms, b1, sizeof b1));
    draw_attr(w, d->allowed ? C_OK : C_LIMITED, 0);
    y++;
    if (d->blocked && y < rows) {
        int64_t left = d->block_until_ms ? d->block_until_ms - now : -1;
        draw_attr(w, C_BLOCKED, 1);
        draw_textf(w, y++, 1, cols - 1, "blocked %s%s%s%s", d->block_until_ms ? "for " : "forever",
                   d->block_until_ms ? fmt_left(left > 0 ? left : 1, b1, sizeof b1) : "",
                   d->block_rule[0] ? "  (penalty of limit " : "", d->block_rule);
        if (d->block_rule[0])
            wprintw(w, ")");
        draw_attr(w, C_BLOCKED, 0);
    }
    if (d->blocked && d->block_reason[0] && y < rows)
        draw_textf(w, y++, 3, cols - 3, "reason: %s", d->block_reason);
    /* limits */
    if (y < rows) {
        draw_attr(w, C_DIM, 1);
        snprintf(line, sizeof line, " %-12s %-14s %8s %6s %-7s %8s %8s %7s %7s %s", "LIMIT",
                 "ALGORITHM", "CAPACITY", "BURST", "WINDOW", "USED", "LEFT", "RESET", "RETRY",
                 "MODE");
        draw_text(w, y++, 0, cols, line, 0, 0);
        draw_attr(w, C_DIM, 0);
    }
    for (int i = 0; i < d->nlimits && y < rows; i++) {
        const limit_row *l = &d->limits[i];
        char win[32];
        if (l->calendar)   /* "1w cal": the zone's calendar week, not "7d" */
            snprintf(win, sizeof win, "%s cal", l->window);
        else
            fmt_left(l->window_ms, win, sizeof win);
        snprintf(line, sizeof line, " %-12.12s %-14.14s %8lld %6lld %-7.7s %8lld %8lld %7s %7s %s%s",
                 l->name, l->algorithm, (long long)l->limit, (long long)l->burst, win,
                 (long long)l->used, (long long)l->remaining, fmt_left(l->reset_ms, b2, sizeof b2),
                 l->allowed ? "-" : fmt_left(l->retry_after_ms, b3, sizeof b3), l->mode,
                 l->overridden ? " overridden" : "");
        int c = !l->allowed ? C_LIMITED : l->limit && l->used * 5 >= l->limit * 4 ? C_NEAR : C_NORMAL;
        draw_attr(w, c, 1);
        draw_text(w, y++, 0, cols, line, 0, 0);
        draw_attr(w, c, 0);
    }
    y = draw_calendars(w, y, rows, cols, d);
    for (int i = 0; i < d->noverrides && y < rows; i++) {
        const override_row *o = &d->overrides[i];
        char until[40];
        draw_textf(w, y++, 1, cols - 1, "override %s = %lld %s%s", o->limit_name,
                   (long long)o->limit, o->expires_ms ? "until " : "(no expiry)",
                   o->expires_ms ? fmt_clock(o->expires_ms, until, sizeof until) : "");
    }
    /* recent changes */
    if (y < rows) {
        draw_attr(w, C_DIM, 1);
        draw_text(w, y++, 1, cols - 1,
                  d->naudit ? "recent changes of this key:" : "no changes of this key by operators",
                  0, 0);
        draw_attr(w, C_DIM, 0);
    }
    for (int i = 0; i < d->naudit && y < rows; i++) {
        const audit_row *r = &d->audit[i];
        char t[40];
        snprintf(line, sizeof line, " %s  %-8.8s %-6.6s %-10.10s %s %s%s%s%s%s", fmt_clock(r->ts_ms, t, sizeof t),
                 r->os_user, r->tool, r->op, r->action[0] ? r->action : "*", r->before,
                 r->before[0] || r->after[0] ? " -> " : "", r->after, r->reason[0] ? "  reason: " : "",
                 r->reason);
        draw_text(w, y++, 0, cols, line, 0, 0);
    }
}
