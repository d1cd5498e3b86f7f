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

static unsigned filter_done(app *a, int ok)
{
    if (!ok)
        return 0;
    snprintf(a->m.f_substr, sizeof a->m.f_substr, "%.*s", (int)sizeof a->m.f_substr - 1, a->dlg.buf);
    if (a->m.f_substr[0])
        set_msg(a, 0, "showing keys that contain the text");
    else
        set_msg(a, 0, "showing every key");
    a->view = VIEW_KEYS;
    return list_changed(a);
}

unsigned key_filter(app *a)
{
    dlg_input(a, "Filter keys", "Show only keys that contain this text (empty: every key).",
              a->m.f_substr, filter_done);
    return RT_REDRAW;
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

unsigned key_sort(app *a)
{
    static const int order[] = {RLS_SORT_USED, RLS_SORT_DENIED, RLS_SORT_KEY, RLS_SORT_RESET};
    static const char *const names[] = {"most used first", "most denials first", "key",
                                        "soonest reset"};
    int i = 0;
    while (i < 3 && order[i] != a->m.sort)
        i++;
    i = (i + 1) % 4;
    a->m.sort = order[i];
    set_msg(a, 0, "sorted by %s", names[i]);
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
