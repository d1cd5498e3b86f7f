/*
 * rltop.h - shared declarations of rltop, the live console of rlstore.
 *
 * Structure (htop ScreenManager/Panel, varnishstat):
 *   model.c      samples the database through rlstore.h into plain structs;
 *                every rls_* call is its own short transaction, nothing is
 *                held between refreshes
 *   term.c       the one owner of the terminal: setup, colours, windows,
 *                restore on every exit path, signals
 *   view_*.c     draw the model (header, keys, detail, rules, blocks,
 *                audit, help and dialogs); they never change state
 *   actions.c    key handlers from keys.h: navigation and views
 *   ops.c        operator actions (unblock, block, tier, override, reset,
 *                edit a limit, rollback) as chains of dialogs
 *   dialog.c     line input, menus and confirmations: key handling only
 *   batch.c      plain-text snapshots (-b, or stdout not a terminal)
 *   rltop.c      options, the main loop and key dispatch
 * Handlers return RT_* flags and never draw; only the main loop draws.
 */
#ifndef RLTOP_H
#define RLTOP_H

#include <stddef.h>
#include <stdint.h>
#include <curses.h>
#include "rlstore.h"
#include "dbname.h"    /* common/: db_is_uri, db_redact, one redaction */
#include "textesc.h"   /* common/: esc_dup, msg_esc_dup */

/* Exit statuses, as rlctl's. */
#define RLTOP_EXIT_MAP(XX)                                                   \
    XX(OK, 0, "success")                                                    \
    XX(USAGE, 2, "usage error: unknown option or bad value")               \
    XX(NOTFOUND, 3, "not found: the database file or the --action")         \
    XX(CONFIG, 4, "configuration error: no rules applied (batch mode)")     \
    XX(STORAGE, 5, "storage error: any other failure of the database or the terminal")

enum rltop_exit {
#define RLTOP__EXIT_ENUM(name, code, text) RLTOP_EXIT_##name = code,
    RLTOP_EXIT_MAP(RLTOP__EXIT_ENUM)
#undef RLTOP__EXIT_ENUM
};

/* Flags returned by handlers. */
#define RT_REDRAW 1u  /* something visible changed */
#define RT_SAMPLE 2u  /* ask the model for fresh data now */
#define RT_QUIT 4u
#define RT_LAYOUT 8u  /* window geometry changed */

enum { VIEW_KEYS, VIEW_RULES, VIEW_BLOCKS, VIEW_AUDIT, VIEW_COUNT };

#define NAME_LEN (RLS_NAME_MAX + 1)
#define SPARK_SECONDS 300   /* the sparkline covers the last 5 minutes */
#define MAX_TIERS 64
/* The capacities a limit or an override may have, as dialogs state them. */
#define CAPACITY_RANGE "1000000000000"
_Static_assert(RLS_LIMIT_MAX == 1000000000000LL, "CAPACITY_RANGE is RLS_LIMIT_MAX");

/* ---- model: plain copies of what the library returned ------------------- */

typedef struct key_row {
    char action[NAME_LEN];
    char *key;        /* raw bytes as stored (for API calls) */
    char *key_esc;    /* escaped for display */
    char tier[NAME_LEN], rule[NAME_LEN], state[16];
    int64_t used, limit, remaining, ppm, reset_ms, block_until_ms, denied;
    int blocked;
} key_row;

typedef struct block_row {
    char *key, *key_esc;
    char action[NAME_LEN], kind[16], rule[NAME_LEN];
    char *reason, *os_user;  /* escaped */
    int64_t until_ms, created_ms, level;
} block_row;

/* A penalty event (view_events.c). */
typedef struct event_row {
    int64_t ts_ms, until_ms, level;
    char event[16], action[NAME_LEN], rule[NAME_LEN];
    char *key_esc;
} event_row;

typedef struct audit_row {
    int64_t id, ts_ms;
    char action[NAME_LEN];
    char *key_esc, *os_user, *tool, *op, *before, *after, *reason;  /* escaped */
} audit_row;

typedef struct version_row {
    int64_t version, created_ms, bytes;
    int active;
    char *os_user, *tool, *source, *comment;  /* escaped */
} version_row;

typedef struct limit_row {
    char name[NAME_LEN], algorithm[32], mode[16];
    char window[24], timezone[64];  /* as written ("1w" is not "7d"), its zone */
    int64_t limit, burst, window_ms, used, remaining, reset_ms, retry_after_ms, last_ms;
    int64_t window_now_ms;          /* this window's length: 23 h on a DST day */
    int overridden, allowed, calendar;
} limit_row;

typedef struct override_row {
    char action[NAME_LEN], limit_name[NAME_LEN];
    int64_t limit, expires_ms;
} override_row;

/* The detail of one (action, key): explain + its audit rows. */
typedef struct detail {
    int valid;
    char action[NAME_LEN];
    char *key, *key_esc;
    char tier[NAME_LEN], tier_source[16], behaviour[16], reason[32];
    char *tier_pattern, *block_reason, *block_rule;  /* escaped */
    int blocked, allowed;
    int64_t block_until_ms, retry_after_ms;
    limit_row *limits;
    int nlimits;
    override_row *overrides;
    int noverrides;
    audit_row *audit;
    int naudit;
    char err[256];
} detail;

/* One limit of the active rules: for the rules view (rls_rules_describe)
 * or one the edit menu offers (a `limit:` written in the YAML). */
typedef struct rule_limit {
    char action[NAME_LEN], tier[NAME_LEN], name[NAME_LEN];
    char algorithm[24], window[24], mode[16], timezone[64];
    int64_t value, burst;
    int calendar;               /* the window follows the zone's calendar */
    int line;                   /* written limits: the line of the value */
} rule_limit;

typedef struct model {
    rls_db *db;
    const char *path;
    int64_t now_ms;             /* clock of the last sample */
    char err[256];              /* last sampling error, "" if none */
    int no_rules;

    /* header */
    int64_t version;            /* active rule-set version, 0 if none */
    double allowed_rate, denied_rate;   /* per second, last 10 complete seconds */
    int64_t spark[SPARK_SECONDS];       /* denials per second, oldest first */
    int64_t spark_end_s;                /* second after the last spark entry */
    long tracked;               /* (action, key) pairs, -1 unknown */
    int64_t tracked_ms;         /* when it was counted */
    double count_cost_ms;       /* how long counting the filtered list took */
    int nblocked;               /* rows of the list shown as blocked */
    int64_t db_bytes, wal_bytes;    /* -1: unknown; both -1 for PostgreSQL */

    /* keys list: a window [off, off + nrows) of the filtered, sorted list */
    char f_action[NAME_LEN];    /* "" = every action */
    char f_substr[256];         /* "" = every key */
    int sort;                   /* enum rls_usage_sort */
    int invert;                 /* shown last row first (needs the length) */
    key_row *rows;
    int nrows, off;
    int rows_sort;              /* the list the rows are of: sort, filters */
    char rows_action[NAME_LEN], rows_substr[256];
    long total;                 /* rows of the list, -1 unknown */
    int64_t keys_ms;            /* when the window was sampled */
    double keys_cost_ms;        /* how long that took */
    int64_t total_ms;
    int stale;                  /* the window must be fetched again */

    /* views */
    block_row *blocks;
    int nblocks;
    event_row *events;          /* penalty events, newest first (view_events.c) */
    int nevents;
    audit_row *audit;
    int naudit;
    version_row *versions;
    int nversions;
    detail det;

    /* the active rules (parsed when the version changes) */
    int64_t rules_version;
    char tiers[MAX_TIERS][64];
    int ntiers;
    char default_tier[64];
    char actions[MAX_TIERS][64];
    int nactions;
    rule_limit *rlimits;        /* every limit, as the library describes them */
    int nrlimits;
    rule_limit *elimits;        /* the `limit:` values written in the YAML */
    int nelimits;
    char rules_err[200];
} model;

/* ---- dialogs --------------------------------------------------------------- */

struct app;
typedef unsigned (*dlg_done_fn)(struct app *a, int ok);

enum { DLG_NONE, DLG_INPUT, DLG_MENU, DLG_CONFIRM, DLG_INFO };

#define DLG_MAX_ITEMS 512

typedef struct dialog {
    int kind;
    char title[128];
    char text[1024];            /* explanation lines ('\n' separated) */
    char buf[512];              /* input line (UTF-8) */
    size_t len, cur;            /* bytes, cursor byte offset */
    char *items[DLG_MAX_ITEMS]; /* menu entries (malloc'd) */
    int nitems, sel, top;
    dlg_done_fn done;           /* called when answered (ok) or cancelled */
    /* An input drawn in the status line (htop's search and filter bars),
     * told of every change (next = 0) and of F3 (next = 1). */
    int bar;
    unsigned (*changed)(struct app *a, int next);
    int failed;                 /* the bar's text matches nothing */
} dialog;

/* What a chain of dialogs collects for one operator action. */
typedef struct op {
    char action[NAME_LEN];
    char *key, *key_esc;          /* raw and escaped (malloc'd) */
    int all_actions;              /* block: every action */
    int exact_block;              /* unblock: only the block of op.action */
    int64_t until_ms, value, version;
    char tier[64], limit_name[NAME_LEN], reason[256];
    rule_limit *cands;            /* menu entries (malloc'd): limits to choose from */
    int64_t *vals;                /* menu entries (malloc'd): versions to choose from */
    int n;
    char *new_yaml;               /* edit: the YAML as changed (rls_free) */
    size_t new_len;
    int64_t yaml_version;         /* edit: the version it was made from */
    int line;
} op;

/* ---- the application -------------------------------------------------------- */

typedef struct app {
    model m;
    int batch, nsnap, batch_rows;
    double interval_s;
    int view;
    long sel[VIEW_COUNT], top[VIEW_COUNT];
    int detail_open, help_open, help_top;
    dialog dlg;
    op op;
    char msg[300];
    int msg_err;
    int64_t msg_ms;
    int list_rows;              /* rows of the current list on screen */
    int want_end;               /* End pressed before the list's length was known */
    int color, utf8;
    const char *db_path;
} app;

/* ---- model.c ---------------------------------------------------------------- */
/* Samples everything the current view needs; cheap parts always, the keys
 * window when stale or due (slowed down when the library is slow).
 * Returns RT_* flags. */
unsigned model_sample(app *a, int force);
/* Re-fetches the keys window so that rows [first, first + count) are in it. */
void model_want_rows(app *a, long first, int count);
/* The row at absolute index i of the keys list, or NULL if not fetched. */
const key_row *model_row(const model *m, long i);
/* Loads the detail of (action, key). */
void model_detail(app *a, const char *action, const char *key);
void model_free(model *m);
int64_t now_ms(void);
double mono_s(void);

/* ---- term.c ------------------------------------------------------------------ */
int term_start(app *a);          /* 0 or -1 with a message on stderr */
void term_stop(void);            /* idempotent; registered with atexit */
void term_layout(app *a);        /* (re)creates the windows */
int term_signalled(void);        /* a terminating signal arrived: its number */
void term_draw(app *a);          /* every window, then one doupdate() */
int term_getkey(int timeout_ms, int *is_key_code, unsigned *wch);

/* ---- views ------------------------------------------------------------------------ */
void view_header(app *a, WINDOW *win);
void view_keys(app *a, WINDOW *win);
void view_detail(app *a, WINDOW *win);
void view_rules(app *a, WINDOW *win);
void view_blocks(app *a, WINDOW *win);
void view_audit(app *a, WINDOW *win);
void view_help(app *a, WINDOW *win);
void view_dialog(app *a, WINDOW *win);
const char *dialog_hint(const app *a);   /* the keys a dialog tells of */
void view_status(app *a, WINDOW *win);
long view_count(const app *a, int view);  /* rows of a list view */
int view_height(const app *a, int view);  /* visible rows of a list view */
/* view_events.c: the penalty events under the blocks view */
void events_sample(model *m);
void events_free(model *m);
void view_block_events(app *a, WINDOW *win, int y0);
int help_count(void);                     /* lines of the help screen */

/* ---- draw helpers (draw.c) --------------------------------------------------- */
enum { C_NORMAL, C_HEADER, C_OK, C_NEAR, C_LIMITED, C_BLOCKED, C_SHADOW, C_SELECT, C_DIM,
       C_TITLE, C_ERROR, C_COUNT };
int locale_utf8(void);
void draw_setup(int color, int utf8);
void draw_attr(WINDOW *win, int color, int on);
/* Writes UTF-8 s at (y, x) in at most width columns, padded with spaces
 * if pad; right-aligned if right.  Returns the columns written. */
int draw_text(WINDOW *win, int y, int x, int width, const char *s, int pad, int right);
int draw_textf(WINDOW *win, int y, int x, int width, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void draw_bar(app *a, WINDOW *win, int y, int x, int width, int64_t ppm, int color);
void draw_spark(app *a, WINDOW *win, int y, int x, int width);
int state_color(const char *state);
/* Formats a duration (ms) compactly: "59s", "4m12s", "3h05m", "2d04h". */
const char *fmt_left(int64_t ms, char *buf, size_t size);
const char *fmt_bytes(int64_t n, char *buf, size_t size);
const char *fmt_clock(int64_t ms, char *buf, size_t size);  /* "2026-11-21 10:00:00Z" */
int text_width(const char *s);
/* Dialogs wrap their text: the next line of text at most width columns
 * wide (broken at a '\n', else at the last space that fits, else where the
 * width ends) copied into line; returns where the line after it starts,
 * NULL when there is no text left.  wrap_count: how many lines. */
const char *wrap_line(const char *text, int width, char *line, size_t size);
int wrap_count(const char *text, int width);
/* esc_dup and msg_esc_dup: common/textesc.h */
/* The name of a database for display: a PostgreSQL URI with its password
 * masked, escaped (malloc'd; NULL only if out of memory). */
char *db_name(const char *path);

/* ---- actions.c / ops.c ------------------------------------------------------ */
#define RLTOP__KEY_DECL(id, code, alt, label, help) unsigned key_##id(app *a);
#include "keys.h"
RLTOP_KEYS(RLTOP__KEY_DECL)
#undef RLTOP__KEY_DECL
void set_msg(app *a, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void op_clear(op *o);
/* The selected row of the keys view, or NULL. */
const key_row *selected_key(app *a);

/* ---- dialog.c ------------------------------------------------------------------ */
void dlg_input(app *a, const char *title, const char *text, const char *init, dlg_done_fn done);
/* An input in the status line: changed runs after each edit and on F3. */
void dlg_bar(app *a, const char *title, const char *init, dlg_done_fn done,
             unsigned (*changed)(app *a, int next));
void dlg_menu(app *a, const char *title, const char *text, dlg_done_fn done);
int dlg_item(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dlg_confirm(app *a, const char *title, const char *text, dlg_done_fn done);
void dlg_info(app *a, const char *title, const char *text);
void dlg_close(app *a);
unsigned dlg_key(app *a, int is_code, unsigned ch);

/* ---- batch.c ------------------------------------------------------------------- */
int batch_run(app *a);

#endif /* RLTOP_H */
