/*
 * actions.c - key handlers for moving around: selection and scrolling,
 * views, the detail pane, filters, sort order, help, refresh and quit.
 * Each returns RT_* flags for the main loop; none of them draws.  The
 * handlers that change the database are in ops.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

void set_msg(app *a, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
    a->msg_err = err;
    a->msg_ms = now_ms();
}

const key_row *selected_key(app *a)
{
    if (a->view != VIEW_KEYS)
        return NULL;
    return model_row(&a->m, a->sel[VIEW_KEYS]);
}

/* ---- moving ------------------------------------------------------------------ */

static unsigned move_by(app *a, long delta)
{
    if (a->help_open) {
        a->help_top += (int)delta;
        if (a->help_top < 0)
            a->help_top = 0;
        return RT_REDRAW;
    }
    long *sel = &a->sel[a->view];
    *sel += delta;
    if (*sel < 0)
        *sel = 0;
    return RT_REDRAW;
}

static long page(const app *a)
{
    long h = view_height(a, a->view);
    return h > 1 ? h - 1 : 1;
}

unsigned key_up(app *a) { return move_by(a, -1); }
unsigned key_down(app *a) { return move_by(a, 1); }
unsigned key_pgup(app *a) { return move_by(a, -page(a)); }
unsigned key_pgdn(app *a) { return move_by(a, page(a)); }

unsigned key_home(app *a)
{
    if (a->help_open) {
        a->help_top = 0;
        return RT_REDRAW;
    }
    a->sel[a->view] = 0;
    a->top[a->view] = 0;
    return RT_REDRAW;
}

unsigned key_end(app *a)
{
    if (a->help_open) {
        a->help_top = help_count();
        return RT_REDRAW;
    }
    if (a->view == VIEW_KEYS && a->m.total < 0) {
        a->want_end = 1;   /* count first, then go there */
        a->m.total = -1;
        a->m.total_ms = 0;
        return RT_SAMPLE | RT_REDRAW;
    }
    long n = view_count(a, a->view);
    a->sel[a->view] = n > 0 ? n - 1 : 0;
    return RT_REDRAW;
}

/* ---- panes and views ------------------------------------------------------------ */

unsigned key_enter(app *a)
{
    if (a->view != VIEW_KEYS) {
        set_msg(a, 1, "the detail pane shows keys: press 1 for the keys view");
        return RT_REDRAW;
    }
    if (a->detail_open) {
        a->detail_open = 0;
        return RT_LAYOUT | RT_REDRAW;
    }
    const key_row *r = selected_key(a);
    if (!r) {
        set_msg(a, 1, "no key is selected");
        return RT_REDRAW;
    }
    a->detail_open = 1;
    model_detail(a, r->action, r->key);
    return RT_LAYOUT | RT_REDRAW;
}

unsigned key_close(app *a)
{
    if (a->help_open) {
        a->help_open = 0;
        return RT_REDRAW;
    }
    if (a->detail_open) {
        a->detail_open = 0;
        return RT_LAYOUT | RT_REDRAW;
    }
    return 0;
}

static unsigned show_view(app *a, int v)
{
    if (v == a->view)
        return 0;
    a->view = (v + VIEW_COUNT) % VIEW_COUNT;
    a->help_open = 0;
    return RT_LAYOUT | RT_SAMPLE | RT_REDRAW;
}

unsigned key_next_view(app *a) { return show_view(a, (a->view + 1) % VIEW_COUNT); }
unsigned key_prev_view(app *a) { return show_view(a, (a->view + VIEW_COUNT - 1) % VIEW_COUNT); }
unsigned key_view_keys(app *a) { return show_view(a, VIEW_KEYS); }
unsigned key_view_rules(app *a) { return show_view(a, VIEW_RULES); }
unsigned key_view_blocks(app *a) { return show_view(a, VIEW_BLOCKS); }
unsigned key_view_audit(app *a) { return show_view(a, VIEW_AUDIT); }

/* ---- filters and order ------------------------------------------------------------ */

/* The list changed: start from its top and fetch it again. */
static unsigned list_changed(app *a)
{
    a->sel[VIEW_KEYS] = a->top[VIEW_KEYS] = 0;
    a->m.stale = 1;
    a->m.total = -1;
    a->m.total_ms = 0;
    return RT_SAMPLE | RT_REDRAW;
}

/* The filter bar (F4, /) filters as it is typed, as htop's does: Enter
 * keeps the filter, Esc clears it. */
static unsigned filter_set(app *a, const char *text)
{
    if (strcmp(a->m.f_substr, text) == 0)
        return 0;
    snprintf(a->m.f_substr, sizeof a->m.f_substr, "%.*s", (int)sizeof a->m.f_substr - 1, text);
    a->view = VIEW_KEYS;
    return list_changed(a);
}

static unsigned filter_changed(app *a, int next)
{
    (void)next;
    return filter_set(a, a->dlg.buf);
}

static unsigned filter_done(app *a, int ok)
{
    unsigned fl = filter_set(a, ok ? a->dlg.buf : "");
    if (!a->m.f_substr[0])   /* a filter kept shows itself in the status line */
        set_msg(a, 0, "showing every key");
    return fl | RT_REDRAW;
}

unsigned key_filter(app *a)
{
    dlg_bar(a, "Filter keys", a->m.f_substr, filter_done, filter_changed);
    return RT_REDRAW;
}

/* htop filters with F4 and with a backslash */
unsigned key_filter_bs(app *a)
{
    return key_filter(a);
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* strstr ignoring the case of ASCII letters (htop's search ignores case). */
static int contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               lower((unsigned char)hay[i]) == lower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

#define SEARCH_MAX 200000   /* rows one search looks at, at most */
#define SEARCH_PAGE 1000

/* Moves the selection to the first key from row `from` on, wrapping at the
 * end, whose shown text contains the search text; the list is read a page
 * at a time, as scrolling reads it. */
static int search_from(app *a, long from)
{
    long i = from;
    int wrapped = 0;
    for (long seen = 0; seen < SEARCH_MAX; seen++) {
        const key_row *r = model_row(&a->m, i);
        if (!r) {
            model_want_rows(a, i, SEARCH_PAGE);
            r = model_row(&a->m, i);
        }
        if (!r) {   /* the end of the list */
            if (wrapped || from == 0)
                return 0;
            wrapped = 1;
            i = 0;
            continue;
        }
        if (wrapped && i >= from)
            return 0;
        if (contains(r->key_esc ? r->key_esc : "", a->dlg.buf)) {
            a->sel[VIEW_KEYS] = i;
            return 1;
        }
        i++;
    }
    return 0;
}

static unsigned search_changed(app *a, int next)
{
    if (!a->dlg.buf[0]) {
        a->dlg.failed = 0;
        return RT_REDRAW;
    }
    a->dlg.failed = !search_from(a, a->sel[VIEW_KEYS] + (next ? 1 : 0));
    return RT_REDRAW;
}

static unsigned search_done(app *a, int ok)
{
    (void)a;
    (void)ok;
    return RT_REDRAW;   /* the selection stays where the search left it */
}

unsigned key_search(app *a)
{
    if (a->view != VIEW_KEYS) {
        a->view = VIEW_KEYS;
        a->help_open = 0;
    }
    dlg_bar(a, "Search", "", search_done, search_changed);
    return RT_LAYOUT | RT_REDRAW;
}

static unsigned action_done(app *a, int ok)
{
    if (!ok)
        return 0;
    int i = a->dlg.sel - 1;
    if (i >= 0 && i < a->m.nactions)
        snprintf(a->m.f_action, sizeof a->m.f_action, "%s", a->m.actions[i]);
    else
        a->m.f_action[0] = '\0';
    set_msg(a, 0, "showing %s%s%s", a->m.f_action[0] ? "action '" : "every action",
            a->m.f_action, a->m.f_action[0] ? "'" : "");
    a->view = VIEW_KEYS;
    return list_changed(a);
}

unsigned key_action(app *a)
{
    dlg_menu(a, "Filter by action", "Show the keys (and the rates in the header) of:",
             action_done);
    dlg_item(a, "every action");
    for (int i = 0; i < a->m.nactions; i++) {
        dlg_item(a, "%s", a->m.actions[i]);
        if (strcmp(a->m.actions[i], a->m.f_action) == 0)
            a->dlg.sel = i + 1;
    }
    return RT_REDRAW;
}

/* The sort columns in the order the keys view shows them (< and >). */
static const int sort_cols[] = {RLS_SORT_KEY, RLS_SORT_USED, RLS_SORT_DENIED, RLS_SORT_RESET};
static const char *const sort_col_names[] = {"key", "use", "denials", "reset"};
#define NSORT 4

static int sort_col(int sort)
{
    for (int i = 0; i < NSORT; i++)
        if (sort_cols[i] == sort)
            return i;
    return 1;
}

static unsigned sort_by(app *a, int sort, const char *how)
{
    a->m.sort = sort;
    set_msg(a, 0, "sorted by %s%s", how, a->m.invert ? ", inverted" : "");
    a->view = VIEW_KEYS;
    return list_changed(a);
}

unsigned key_sort(app *a)
{
    static const int order[] = {RLS_SORT_USED, RLS_SORT_DENIED, RLS_SORT_KEY, RLS_SORT_RESET};
    static const char *const names[] = {"most used first", "most denials first", "key",
                                        "soonest reset"};
    int i = 0;
    while (i < 3 && order[i] != a->m.sort)
        i++;
    i = (i + 1) % 4;
    return sort_by(a, order[i], names[i]);
}

static unsigned sort_step(app *a, int step)
{
    int i = (sort_col(a->m.sort) + step + NSORT) % NSORT;
    return sort_by(a, sort_cols[i], sort_col_names[i]);
}

unsigned key_sort_prev(app *a) { return sort_step(a, -1); }
unsigned key_sort_next(app *a) { return sort_step(a, 1); }

static unsigned sort_menu_done(app *a, int ok)
{
    if (!ok || a->dlg.sel < 0 || a->dlg.sel >= NSORT)
        return 0;
    return sort_by(a, sort_cols[a->dlg.sel], sort_col_names[a->dlg.sel]);
}

unsigned key_sort_menu(app *a)
{
    dlg_menu(a, "Sort by", "Sort the keys by (I inverts the order):", sort_menu_done);
    for (int i = 0; i < NSORT; i++)
        dlg_item(a, "%s", sort_col_names[i]);
    a->dlg.sel = sort_col(a->m.sort);
    return RT_REDRAW;
}

unsigned key_invert(app *a)
{
    a->m.invert = !a->m.invert;
    set_msg(a, 0, "sort order %s", a->m.invert ? "inverted" : "as listed");
    a->view = VIEW_KEYS;
    return list_changed(a);
}

/* ---- the rest ------------------------------------------------------------------------ */

unsigned key_refresh(app *a)
{
    a->m.stale = 1;
    a->m.total_ms = 0;
    return RT_SAMPLE | RT_LAYOUT | RT_REDRAW;
}

unsigned key_help(app *a)
{
    a->help_open = !a->help_open;
    a->help_top = 0;
    return RT_REDRAW;
}

unsigned key_quit(app *a)
{
    if (a->help_open) {
        a->help_open = 0;
        return RT_REDRAW;
    }
    return RT_QUIT;
}
