/*
 * term.c - the one owner of the terminal.
 *
 * term_start() sets curses up and registers term_stop() with atexit(), so
 * every way out of the program (return from main, exit() after an error)
 * restores the terminal.  SIGINT, SIGTERM and SIGHUP only set a flag that
 * the main loop reads (installed without SA_RESTART, so a pending key read
 * returns at once); fatal signals restore the terminal and re-raise.
 * SIGWINCH is left to curses, which reports KEY_RESIZE: the main loop then
 * calls term_layout() to rebuild the windows.
 *
 * Drawing happens only in term_draw(): every window is drawn into, marked
 * with wnoutrefresh(), and one doupdate() sends what changed, so the
 * screen never flickers and an idle refresh sends almost nothing.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

#define HEADER_LINES 4
#define MIN_COLS 40
#define MIN_LINES 10

static int active;          /* curses is running */
static int registered;      /* atexit done */
static volatile sig_atomic_t got_signal;
static SCREEN *screen;
static WINDOW *w_header, *w_body, *w_detail, *w_status;

static void on_signal(int sig)
{
    got_signal = sig;
}

static void on_fatal(int sig)
{
    /* Not async-signal-safe, but the process is about to die anyway and a
     * terminal left in raw mode is worse (htop does the same). */
    if (active) {
        active = 0;
        endwin();
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int term_signalled(void)
{
    return (int)got_signal;
}

static void drop_windows(void)
{
    WINDOW **w[] = {&w_header, &w_body, &w_detail, &w_status};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        if (*w[i])
            delwin(*w[i]);
        *w[i] = NULL;
    }
}

void term_stop(void)
{
    if (!active)
        return;
    active = 0;
    drop_windows();
    curs_set(1);
    endwin();
    fflush(stdout);
    if (screen) {
        delscreen(screen);
        screen = NULL;
    }
}

static void setup_colors(app *a)
{
    const char *nc = getenv("NO_COLOR");
    a->color = has_colors() && !(nc && *nc);
    if (!a->color || start_color() == ERR) {
        a->color = 0;
        return;
    }
    use_default_colors();
    init_pair(C_HEADER, COLOR_CYAN, -1);
    init_pair(C_OK, COLOR_GREEN, -1);
    init_pair(C_NEAR, COLOR_YELLOW, -1);
    init_pair(C_LIMITED, COLOR_RED, -1);
    init_pair(C_BLOCKED, COLOR_MAGENTA, -1);
    init_pair(C_SHADOW, COLOR_BLUE, -1);
    init_pair(C_SELECT, COLOR_BLACK, COLOR_CYAN);
    init_pair(C_DIM, COLOR_BLUE, -1);
    init_pair(C_TITLE, COLOR_BLACK, COLOR_GREEN);
    init_pair(C_ERROR, COLOR_RED, -1);
}

int term_start(app *a)
{
    struct sigaction sa;
    a->utf8 = locale_utf8();
    screen = newterm(NULL, stdout, stdin);
    if (!screen) {
        const char *t = getenv("TERM");
        fprintf(stderr, "rltop: cannot use the terminal '%s'; try --batch\n", t ? t : "");
        return -1;
    }
    active = 1;
    if (!registered) {
        atexit(term_stop);
        registered = 1;
    }
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal;   /* no SA_RESTART: a key read returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    setup_colors(a);
    draw_setup(a->color, a->utf8);
    term_layout(a);
    return 0;
}

void term_layout(app *a)
{
    int h = LINES, w = COLS;
    drop_windows();
    if (h < MIN_LINES || w < MIN_COLS) {
        w_status = newwin(h > 0 ? h : 1, w > 0 ? w : 1, 0, 0);
        a->list_rows = 1;
    } else {
        int body = h - HEADER_LINES - 1, det = 0;
        if (a->detail_open && a->view == VIEW_KEYS) {
            det = body / 2;
            if (body - det < 5)
                det = body - 5;
        }
        w_header = newwin(HEADER_LINES, w, 0, 0);
        w_body = newwin(body - det, w, HEADER_LINES, 0);
        if (det > 0)
            w_detail = newwin(det, w, HEADER_LINES + body - det, 0);
        w_status = newwin(1, w, h - 1, 0);
        a->list_rows = body - det - 1;   /* minus the column titles */
    }
    if (w_status) {
        keypad(w_status, TRUE);   /* keys are read here: see term_getkey() */
        leaveok(w_status, TRUE);
    }
    /* the old picture may be anywhere: compose the next one from scratch */
    clearok(curscr, TRUE);
}

/* A centred overlay of at most h x w. */
static WINDOW *popup(int h, int w)
{
    if (h > LINES - 2)
        h = LINES - 2;
    if (w > COLS - 2)
        w = COLS - 2;
    if (h < 3 || w < 10)
        return NULL;
    return newwin(h, w, (LINES - h) / 2, (COLS - w) / 2);
}

#define DIALOG_WIDTH 76

/* Rows of a dialog drawn width columns wide: its text and its hint
 * wrapped (view_dialog), its menu or input line, the borders. */
static int dialog_height(const app *a, int width)
{
    int inner = width - 4, lines = 0;
    if (a->dlg.text[0])
        lines += wrap_count(a->dlg.text, inner) + 1;
    if (a->dlg.kind == DLG_MENU)
        lines += a->dlg.nitems + 1;
    else if (a->dlg.kind == DLG_INPUT)
        lines += 2;
    return lines + wrap_count(dialog_hint(a), inner) + 2;
}

void term_draw(app *a)
{
    WINDOW *over = NULL;
    if (!w_header) {   /* too small */
        werase(w_status);
        draw_text(w_status, 0, 0, COLS, "rltop: terminal too small", 0, 0);
        draw_textf(w_status, 1, 0, COLS, "%dx%d, need %dx%d", COLS, LINES, MIN_COLS, MIN_LINES);
        wnoutrefresh(w_status);
        doupdate();
        return;
    }
    werase(w_header);
    view_header(a, w_header);
    wnoutrefresh(w_header);
    werase(w_body);
    switch (a->view) {
    case VIEW_RULES: view_rules(a, w_body); break;
    case VIEW_BLOCKS: view_blocks(a, w_body); break;
    case VIEW_AUDIT: view_audit(a, w_body); break;
    default: view_keys(a, w_body); break;
    }
    wnoutrefresh(w_body);
    if (w_detail) {
        werase(w_detail);
        view_detail(a, w_detail);
        wnoutrefresh(w_detail);
    }
    werase(w_status);
    view_status(a, w_status);
    wnoutrefresh(w_status);
    if (a->help_open && (over = popup(LINES - 2, 86))) {
        view_help(a, over);
        wnoutrefresh(over);
        delwin(over);
    }
    curs_set(0);
    int dw = DIALOG_WIDTH < COLS - 2 ? DIALOG_WIDTH : COLS - 2;
    if (a->dlg.kind != DLG_NONE && !a->dlg.bar && (over = popup(dialog_height(a, dw), dw))) {
        view_dialog(a, over);
        wnoutrefresh(over);
        delwin(over);
        if (a->dlg.kind == DLG_INPUT)
            curs_set(1);   /* view_dialog left the cursor in the input line */
    }
    doupdate();
}

int term_getkey(int timeout_ms, int *is_code, unsigned *ch)
{
    wint_t wc;
    WINDOW *in = w_status ? w_status : stdscr;
    wtimeout(in, timeout_ms < 0 ? 0 : timeout_ms);
    int r = wget_wch(in, &wc);
    if (r == ERR)
        return 0;
    *is_code = r == KEY_CODE_YES;
    *ch = (unsigned)wc;
    if (!*is_code && *ch == '\r')
        *ch = '\n';
    return 1;
}
