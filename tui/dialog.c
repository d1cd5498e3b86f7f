/*
 * dialog.c - the state and key handling of dialogs (drawn by
 * view_help.c).  A dialog is answered or cancelled by a key; its `done`
 * continuation then runs with the answer still readable in a->dlg (buf,
 * sel) and may open the next dialog of a chain.  Nothing here draws.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include "rltop.h"

static void free_items(char **items, int n)
{
    for (int i = 0; i < n; i++)
        free(items[i]);
}

static void open_kind(app *a, int kind, const char *title, const char *text, dlg_done_fn done)
{
    free_items(a->dlg.items, a->dlg.nitems);
    memset(&a->dlg, 0, sizeof a->dlg);
    a->dlg.kind = kind;
    snprintf(a->dlg.title, sizeof a->dlg.title, "%s", title);
    snprintf(a->dlg.text, sizeof a->dlg.text, "%s", text ? text : "");
    a->dlg.done = done;
}

void dlg_input(app *a, const char *title, const char *text, const char *init, dlg_done_fn done)
{
    open_kind(a, DLG_INPUT, title, text, done);
    snprintf(a->dlg.buf, sizeof a->dlg.buf, "%s", init ? init : "");
    a->dlg.len = a->dlg.cur = strlen(a->dlg.buf);
}

void dlg_bar(app *a, const char *title, const char *init, dlg_done_fn done,
             unsigned (*changed)(app *a, int next))
{
    dlg_input(a, title, NULL, init, done);
    a->dlg.bar = 1;
    a->dlg.changed = changed;
}

void dlg_menu(app *a, const char *title, const char *text, dlg_done_fn done)
{
    open_kind(a, DLG_MENU, title, text, done);
}

int dlg_item(app *a, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    if (a->dlg.nitems >= DLG_MAX_ITEMS)
        return -1;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = strdup(buf);
    if (!s)
        return -1;
    a->dlg.items[a->dlg.nitems] = s;
    return a->dlg.nitems++;
}

void dlg_confirm(app *a, const char *title, const char *text, dlg_done_fn done)
{
    open_kind(a, DLG_CONFIRM, title, text, done);
}

void dlg_info(app *a, const char *title, const char *text)
{
    open_kind(a, DLG_INFO, title, text, NULL);
}

void dlg_close(app *a)
{
    free_items(a->dlg.items, a->dlg.nitems);
    memset(&a->dlg, 0, sizeof a->dlg);
}

/* Ends the dialog and runs its continuation with the answer. */
static unsigned finish(app *a, int ok)
{
    char *items[DLG_MAX_ITEMS];
    int n = a->dlg.nitems;
    dlg_done_fn done = a->dlg.done;
    memcpy(items, a->dlg.items, sizeof(char *) * (size_t)n);
    a->dlg.nitems = 0;   /* the continuation may open a new menu */
    a->dlg.kind = DLG_NONE;
    a->dlg.done = NULL;
    unsigned fl = done ? done(a, ok) : 0;
    free_items(items, n);
    if (a->dlg.kind == DLG_NONE)
        op_clear(&a->op);   /* the chain has ended */
    return fl | RT_REDRAW;
}

/* Byte length of the UTF-8 character ending at buf[end). */
static size_t prev_len(const char *buf, size_t end)
{
    size_t i = end;
    if (i == 0)
        return 0;
    i--;
    while (i > 0 && ((unsigned char)buf[i] & 0xC0) == 0x80)
        i--;
    return end - i;
}

static size_t next_len(const char *buf, size_t at, size_t len)
{
    size_t i = at + 1;
    if (at >= len)
        return 0;
    while (i < len && ((unsigned char)buf[i] & 0xC0) == 0x80)
        i++;
    return i - at;
}

static unsigned input_key(app *a, int is_code, unsigned ch)
{
    dialog *d = &a->dlg;
    if (!is_code && ch == '\n')
        return finish(a, 1);
    if (!is_code && ch == 27)
        return finish(a, 0);
    if (is_code && ch == KEY_F(3) && d->changed)
        return d->changed(a, 1) | RT_REDRAW;
    if ((is_code && ch == KEY_BACKSPACE) || (!is_code && (ch == 127 || ch == 8))) {
        size_t n = prev_len(d->buf, d->cur);
        memmove(d->buf + d->cur - n, d->buf + d->cur, d->len - d->cur + 1);
        d->cur -= n;
        d->len -= n;
    } else if (is_code && ch == KEY_DC) {
        size_t n = next_len(d->buf, d->cur, d->len);
        memmove(d->buf + d->cur, d->buf + d->cur + n, d->len - d->cur - n + 1);
        d->len -= n;
    } else if (is_code && ch == KEY_LEFT) {
        d->cur -= prev_len(d->buf, d->cur);
    } else if (is_code && ch == KEY_RIGHT) {
        d->cur += next_len(d->buf, d->cur, d->len);
    } else if ((is_code && ch == KEY_HOME) || (!is_code && ch == RLTOP_CTRL('a'))) {
        d->cur = 0;
    } else if ((is_code && ch == KEY_END) || (!is_code && ch == RLTOP_CTRL('e'))) {
        d->cur = d->len;
    } else if (!is_code && ch == RLTOP_CTRL('u')) {
        d->cur = d->len = 0;
        d->buf[0] = '\0';
    } else if (!is_code && ch >= 0x20 && ch != 0x7f) {
        char mb[MB_LEN_MAX];
        mbstate_t st;
        memset(&st, 0, sizeof st);
        size_t n = wcrtomb(mb, (wchar_t)ch, &st);
        if (n == (size_t)-1 || d->len + n >= sizeof d->buf)
            return 0;
        memmove(d->buf + d->cur + n, d->buf + d->cur, d->len - d->cur + 1);
        memcpy(d->buf + d->cur, mb, n);
        d->cur += n;
        d->len += n;
    } else {
        return 0;
    }
    return (d->changed ? d->changed(a, 0) : 0) | RT_REDRAW;
}

static unsigned menu_key(app *a, int is_code, unsigned ch)
{
    dialog *d = &a->dlg;
    int page = 10;
    if (!is_code && ch == '\n')
        return d->nitems > 0 ? finish(a, 1) : finish(a, 0);
    if (!is_code && (ch == 27 || ch == 'q'))
        return finish(a, 0);
    if (is_code && ch == KEY_UP)
        d->sel--;
    else if ((is_code && ch == KEY_DOWN) || (!is_code && ch == 'j'))
        d->sel++;
    else if (is_code && ch == KEY_PPAGE)
        d->sel -= page;
    else if (is_code && ch == KEY_NPAGE)
        d->sel += page;
    else if (is_code && ch == KEY_HOME)
        d->sel = 0;
    else if (is_code && ch == KEY_END)
        d->sel = d->nitems - 1;
    else
        return 0;
    if (d->sel >= d->nitems)
        d->sel = d->nitems - 1;
    if (d->sel < 0)
        d->sel = 0;
    return RT_REDRAW;
}

unsigned dlg_key(app *a, int is_code, unsigned ch)
{
    switch (a->dlg.kind) {
    case DLG_INPUT:
        return input_key(a, is_code, ch);
    case DLG_MENU:
        return menu_key(a, is_code, ch);
    case DLG_CONFIRM:
        if (!is_code && (ch == 'y' || ch == 'Y'))
            return finish(a, 1);
        if (!is_code && (ch == 'n' || ch == 'N' || ch == 27 || ch == 'q'))
            return finish(a, 0);
        return 0;
    case DLG_INFO:
        return finish(a, 1);
    default:
        return 0;
    }
}
