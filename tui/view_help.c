/*
 * view_help.c - the `?` help screen, generated from the key table in
 * keys.h (the same table dispatches the keys), and the dialogs: line
 * input, menus, confirmations and notices.
 */
#include <stdio.h>
#include <string.h>
#include "rltop.h"
#include "keys.h"

typedef struct help_line {
    const char *label, *help;
} help_line;

static const help_line help_lines[] = {
#define RLTOP__HELP(id, code, alt, label, help) {label, help},
    RLTOP_KEYS(RLTOP__HELP)
#undef RLTOP__HELP
};

#define NHELP ((int)(sizeof help_lines / sizeof help_lines[0]))

int help_count(void)
{
    return NHELP;
}

void view_help(app *a, WINDOW *w)
{
    int rows = getmaxy(w), cols = getmaxx(w);
    box(w, 0, 0);
    draw_attr(w, C_HEADER, 1);
    draw_text(w, 0, 2, cols - 4, " rltop keys ", 0, 0);
    draw_attr(w, C_HEADER, 0);
    int body = rows - 3;
    if (a->help_top > NHELP - body)
        a->help_top = NHELP - body > 0 ? NHELP - body : 0;
    if (a->help_top + body < NHELP) {   /* more below */
        draw_attr(w, C_DIM, 1);
        draw_textf(w, rows - 1, cols - 22, 20, " Down/End: %d more ", NHELP - a->help_top - body);
        draw_attr(w, C_DIM, 0);
    }
    for (int i = 0; i < body && a->help_top + i < NHELP; i++) {
        const help_line *h = &help_lines[a->help_top + i];
        draw_attr(w, C_HEADER, 1);
        draw_text(w, i + 1, 2, 12, h->label, 1, 0);
        draw_attr(w, C_HEADER, 0);
        draw_text(w, i + 1, 15, cols - 17, h->help, 0, 0);
    }
    draw_attr(w, C_DIM, 1);
    draw_text(w, rows - 2, 2, cols - 4,
              "Every change is audited with your user name. Esc or ? closes; see rltop(1).", 0, 0);
    if (a->help_top > 0) {
        draw_attr(w, C_DIM, 1);
        draw_text(w, 0, cols - 14, 12, " Up: more ", 0, 0);
        draw_attr(w, C_DIM, 0);
    }
    draw_attr(w, C_DIM, 0);
}

/* The keys of a dialog, wrapped above its bottom border. */
static void draw_hint(WINDOW *w, int rows, int cols, const char *hint)
{
    char line[256];
    int n = wrap_count(hint, cols - 4), y = rows - 1 - n;
    draw_attr(w, C_DIM, 1);
    for (const char *p = hint; p && *p && y < rows - 1; y++) {
        p = wrap_line(p, cols - 4, line, sizeof line);
        if (y > 0)
            draw_text(w, y, 2, cols - 4, line, 0, 0);
    }
    draw_attr(w, C_DIM, 0);
}

const char *dialog_hint(const app *a)
{
    switch (a->dlg.kind) {
    case DLG_MENU: return "Up/Down choose  Enter select  Esc cancel";
    case DLG_CONFIRM: return "y yes  n no";
    case DLG_INFO: return "any key closes";
    case DLG_INPUT: return "Enter ok  Esc cancel  Ctrl-U clear";
    default: return "";
    }
}

void view_dialog(app *a, WINDOW *w)
{
    const dialog *d = &a->dlg;
    int rows = getmaxy(w), cols = getmaxx(w), y = 1;
    int bottom = rows - 1 - wrap_count(dialog_hint(a), cols - 4);   /* the hint's first row */
    werase(w);
    box(w, 0, 0);
    draw_attr(w, C_HEADER, 1);
    draw_textf(w, 0, 2, cols - 4, " %s ", d->title);
    draw_attr(w, C_HEADER, 0);
    /* explanation, wrapped at the dialog's width (term.c sizes it so) */
    char line[1024];
    for (const char *p = d->text; p && *p && y < bottom; y++) {
        p = wrap_line(p, cols - 4, line, sizeof line);
        draw_text(w, y, 2, cols - 4, line, 0, 0);
    }
    if (d->text[0])
        y++;
    const char *hint = "";
    if (d->kind == DLG_MENU) {
        int room = bottom - y > 0 ? bottom - y : 1;
        int top = d->top;
        if (d->sel < top)
            top = d->sel;
        if (d->sel >= top + room)
            top = d->sel - room + 1;
        a->dlg.top = top;
        for (int i = top; i < d->nitems && y < bottom; i++, y++) {
            if (i == d->sel)
                draw_attr(w, C_SELECT, 1);
            draw_text(w, y, 2, cols - 4, d->items[i], 1, 0);
            if (i == d->sel)
                draw_attr(w, C_SELECT, 0);
        }
        hint = dialog_hint(a);
    } else if (d->kind == DLG_CONFIRM) {
        hint = dialog_hint(a);
    } else if (d->kind == DLG_INFO) {
        hint = dialog_hint(a);
    } else if (d->kind == DLG_INPUT) {
        int width = cols - 6;
        /* show the end of a long input */
        char shown[512];
        snprintf(shown, sizeof shown, "%.*s", (int)d->cur, d->buf);
        int before = text_width(shown);
        const char *start = d->buf;
        while (before > width - 1 && *start) {
            int w1 = 1;
            start++;
            while ((*start & 0xC0) == 0x80)
                start++;
            before -= w1;
        }
        draw_attr(w, C_SELECT, 1);
        draw_text(w, y, 2, width + 2, "", 1, 0);
        draw_text(w, y, 3, width, start, 1, 0);
        draw_attr(w, C_SELECT, 0);
        snprintf(shown, sizeof shown, "%.*s", (int)(d->buf + d->cur - start), start);
        int cx = 3 + text_width(shown);
        hint = dialog_hint(a);
        draw_hint(w, rows, cols, hint);
        wmove(w, y, cx < cols - 2 ? cx : cols - 2);
        return;
    }
    draw_hint(w, rows, cols, hint);
}
