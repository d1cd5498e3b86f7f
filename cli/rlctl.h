/*
 * rlctl.h - shared declarations of rlctl, the scripting CLI of rlstore.
 *
 * rlctl uses only the public API (rlstore.h).  rlctl.c holds the one
 * command table: dispatch, option parsing, `rlctl --help` and the man-page
 * check in tests/cli all derive from it.  Each cmd_<name>.c implements
 * commands as `int cmd_x(rlctl_ctx *ctx)` returning the process exit status.
 */
#ifndef RLCTL_H
#define RLCTL_H

#include <stdint.h>
#include <stdio.h>
#include "rlstore.h"
#include "dbname.h"    /* common/ */
#include "textesc.h"   /* common/ */

/* Exit statuses: one table generates the help text and the mapping. */
#define RLCTL_EXIT_MAP(XX)                                                   \
    XX(OK, 0, "success; for check and reserve: the request was admitted")   \
    XX(DENIED, 1, "check or reserve: the request was denied")               \
    XX(USAGE, 2, "usage error: unknown command or option, bad value, "      \
                 "invalid key, cost or time, a FILE that cannot be read")   \
    XX(NOTFOUND, 3, "not found: database or rules file, action, key, "      \
                    "reservation, version or entry")                        \
    XX(CONFIG, 4, "configuration error: invalid rules, or no rules applied")\
    XX(STORAGE, 5, "storage error: any other failure of the database; "     \
                   "doctor: a check failed")

enum rlctl_exit {
#define RLCTL__EXIT_ENUM(name, code, text) RLCTL_EXIT_##name = code,
    RLCTL_EXIT_MAP(RLCTL__EXIT_ENUM)
#undef RLCTL__EXIT_ENUM
};

#define RLCTL_MAX_OPTS 8
#define RLCTL_MAX_ARGS (2 * RLS_BATCH_MAX)   /* check ACTION KEY [ACTION KEY ...] */

/* One option of a command: --name ARG (arg NULL for a flag). */
typedef struct rlctl_opt {
    const char *name;
    const char *arg;
    const char *help;
} rlctl_opt;

typedef struct rlctl_ctx rlctl_ctx;

/* One row of the command table. */
typedef struct rlctl_cmd {
    const char *name;       /* "tier"                                   */
    const char *sub;        /* "set", or NULL for a plain command       */
    const char *args;       /* positional arguments for the synopsis    */
    int min_args, max_args;
    const rlctl_opt *opts;  /* terminated by a {NULL} entry; may be NULL */
    int (*fn)(rlctl_ctx *ctx);
    int reads_only;         /* 1: works on a database it may not write  */
    const char *summary;    /* one line, lower case, no full stop       */
} rlctl_cmd;

struct rlctl_ctx {
    /* global options */
    const char *db_path;
    const char *counters_path; /* --counters / $RLSTORE_COUNTERS: split deployment */
    int counters_env;          /* counters_path came from $RLSTORE_COUNTERS */
    const char *shm_dir;       /* --shm-dir / $RLSTORE_SHM_DIR: the memory table's folder */
    int64_t now_ms;          /* --now, else the real clock at start      */
    int json, quiet, tty;
    /* the command being run and its parsed arguments */
    const rlctl_cmd *cmd;
    int nargs;
    const char *args[RLCTL_MAX_ARGS];
    const char *optv[RLCTL_MAX_OPTS]; /* value per cmd->opts index; "" for a set flag */
    rls_db *db;
    /* for files init creates (--mode, --group) */
    unsigned int file_mode;   /* 0: the library's default */
    const char *file_group;
};

/* ---- rlctl.c -------------------------------------------------------- */
/* The value of the command's option `name`, or NULL if not given. */
const char *opt_get(const rlctl_ctx *ctx, const char *name);
int opt_flag(const rlctl_ctx *ctx, const char *name);
/* Parse the option as an integer in min..max (default if absent).  On a bad
 * value prints a diagnostic naming the option and returns RLCTL_EXIT_USAGE. */
int opt_int(rlctl_ctx *ctx, const char *name, int64_t def, int64_t min, int64_t max,
            int64_t *out);
/* Parse a duration option (*set = 0 if absent). */
int opt_duration(rlctl_ctx *ctx, const char *name, int64_t *ms, int *set);
/* Parse a positional integer argument (named for the message). */
int arg_int(rlctl_ctx *ctx, int idx, const char *what, int64_t min, int64_t max,
            int64_t *out);

/* ---- err.c ---------------------------------------------------------- */
/* Exit status for a library code. */
int exit_for(int rc);
/* Prints "rlctl: <msg>" (one line, stderr) and, with --json, an error
 * object on stdout; returns `code`. */
int fail_usage(rlctl_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int fail_code(rlctl_ctx *ctx, int exit_code, const char *errname, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prints "rlctl: <msg>: <detail of rc>" and returns exit_for(rc). */
int fail_lib(rlctl_ctx *ctx, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The name of a database for messages: a PostgreSQL URI with its password
 * masked (dbname.h), escaped like a key.  malloc'd; NULL out of memory. */
char *db_name(const char *path);
/* Refuses, as a usage error, file options that cannot apply to ctx->db_path:
 * a counters database with a PostgreSQL URI, or a URI as the counters
 * database.  Returns 0 or the exit status after the diagnostic. */
int db_check_target(rlctl_ctx *ctx);
/* Opens ctx->db_path (a file or a PostgreSQL URI), with ctx->counters_path
 * as its counters database in a split deployment (create only if `create`);
 * a user who may not write the rules gets them read-only, and a command that
 * only reads gets everything read-only.  On failure prints the diagnostic
 * (naming the database by db_name) and returns the exit status, else 0. */
int db_open(rlctl_ctx *ctx, int create);

/* ---- out.c ---------------------------------------------------------- */
/* esc_dup and msg_esc_dup: common/textesc.h */
/* Formats ms since the epoch ("2026-11-21T10:00:00.250Z"), or `zero` for 0. */
const char *fmt_time(int64_t ms, const char *zero, char *buf, size_t size);
/* Formats a duration in ms: "1d2h", "1.250s", "0s"; -1 as "never". */
const char *fmt_dur(int64_t ms, char *buf, size_t size);
/* Duration for a table: pretty on a tty, raw ms otherwise. */
const char *fmt_dur_cell(const rlctl_ctx *ctx, int64_t ms, char *buf, size_t size);

typedef struct out_table out_table;
/* A table of text cells; `headers` has ncols entries.  A header starting
 * with '>' is right-aligned (the '>' is not printed). */
out_table *tab_new(int ncols, const char *const *headers);
/* Appends a row; returns its index or -1 (out of memory). */
int tab_row(out_table *t);
/* Sets the cell of the last row (copied; NULL = "-"). */
void tab_set(out_table *t, int col, const char *text);
void tab_setf(out_table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets the cell to the escaped form of s. */
void tab_set_esc(out_table *t, int col, const char *s);
int tab_rows(const out_table *t);
/* Aligned with a header on a tty, tab-separated without header otherwise. */
void tab_print(const out_table *t, int tty);
void tab_free(out_table *t);
/* Returns RLCTL_EXIT_STORAGE if a table ran out of memory, else 0. */
int tab_failed(const out_table *t);

/* JSON writer to stdout: comma placement is automatic. */
void json_obj_begin(void);
void json_obj_end(void);
void json_arr_begin(void);
void json_arr_end(void);
void json_key(const char *k);
void json_str(const char *s);      /* NULL -> null; invalid UTF-8 -> U+FFFD */
void json_key_str(const char *s);  /* a key: escaped with rls_key_escape    */
void json_int(int64_t v);
void json_bool(int b);
void json_null(void);
void json_end_line(void);          /* newline after the top-level value     */
/* Typed values (rlctl(1), JSON OUTPUT): text that may be absent (NULL or
 * "" -> null); a time as two members, STEM_ms (epoch ms) and STEM_at
 * (ISO-8601 UTC), both null for 0 (none, never, forever). */
void json_opt_str(const char *s);
void json_time(const char *stem, int64_t ms);
/* Every row as an object, every column by its name, typed: flags as
 * booleans, times as NAME_ms and NAME_at, empty text as null; key-like
 * columns (key, pattern) are escaped with rls_key_escape. */
void json_rows(const rls_rows *rows);
/* The same, but the columns named in counts (NULL-terminated) are counts
 * whatever their name says (stats: "allowed" checks, not a flag). */
void json_rows_counting(const rls_rows *rows, const char *const *counts);
/* One row as an object (the first row, or {} if none). */
void json_row_obj(const rls_rows *rows, int row);

/* Column helpers over rls_rows by name. */
const char *row_text(const rls_rows *r, int row, const char *col);
int64_t row_int(const rls_rows *r, int row, const char *col);
int row_has(const rls_rows *r, const char *col);

/* ---- suggest.c ------------------------------------------------------ */
/* The candidate (of n; NULL entries are skipped) nearest to word if it is
 * near enough to be a typo of it ("chek" -> "check"), else NULL. */
const char *suggest(const char *word, const char *const *cands, int n);

/* ---- cmd_lint.c ----------------------------------------------------- */
/* Validates yaml (read from file) with rls_rules_validate.  0 if valid;
 * otherwise prints every error, each "FILE:LINE:COL: PATH: MESSAGE" on
 * stderr, then "rlctl: cannot VERB 'FILE': N errors" (with --json the
 * error object with an "errors" array), and returns the exit status. */
int lint_text(rlctl_ctx *ctx, const char *verb, const char *file, const char *yaml,
              size_t len);
/* How rule files are named in messages: "-" is "<stdin>". */
const char *source_name(const char *file);
/* Reads FILE ('-' = stdin) for apply, init and lint; on failure prints the
 * diagnostic and returns the exit status (3 missing, 4 too large, 2 not
 * readable, 5 out of memory). */
int load_rules(rlctl_ctx *ctx, const char *file, char **yaml, size_t *len);

/* ---- commands ------------------------------------------------------- */
#define RLCTL_COMMAND_FNS(XX)                                               \
    XX(init) XX(apply) XX(lint) XX(export) XX(rules) XX(versions) XX(rollback)        \
    XX(set_limit)                                                           \
    XX(check) XX(refund) XX(reserve) XX(commit) XX(cancel) XX(usage)         \
    XX(explain) XX(block) XX(unblock) XX(blocks) XX(tier_set)                \
    XX(tier_unset) XX(tier_list) XX(override_set) XX(override_unset)         \
    XX(override_list) XX(reset) XX(audit) XX(gc) XX(stats) XX(doctor)        \
    XX(copy_from) XX(hold) XX(help)                                          \
    XX(events) XX(metrics) XX(migrate)

#define RLCTL__CMD_DECL(name) int cmd_##name(rlctl_ctx *ctx);
RLCTL_COMMAND_FNS(RLCTL__CMD_DECL)
#undef RLCTL__CMD_DECL

/* cmd_bulk.c: unblock --all and reset --action (called by cmd_unblock and
 * cmd_reset when those options are given). */
int cmd_unblock_all(rlctl_ctx *ctx);
int cmd_reset_action(rlctl_ctx *ctx);
/* cmd_events.c: `audit prune` and `events prune` (cmd_audit and cmd_events
 * with the argument prune); 0 from prune_args when ctx has no prune, else
 * the exit status of the prune or of its usage error. */
int prune_args(rlctl_ctx *ctx, int audit, int *handled);
/* syslog.c: rls_options.log_fn of --syslog (one datagram to /dev/log or
 * $RLSTORE_SYSLOG per line). */
void rlctl_syslog_line(void *ctx, int level, const char *line);
/* progress.c: a long call's progress on a terminal (stderr), for
 * rls_set_progress; progress_end ends its line. */
struct progress {
    int64_t rows;
    int shown;
};
void progress_rows(void *ctx, int64_t rows);
void progress_end(struct progress *p);
/* follow.c: hold --syslog's follower of the events table, called in hold's
 * loop with the wall clock (it acts at most once a second). */
struct follow_state {
    int started;
    int64_t last_id, read_ms, gc_ms;
};
void follow_events(rlctl_ctx *ctx, struct follow_state *st, int64_t now);

/* Shared by check and reserve: prints a check result with the action's
 * limit states; returns 0 or an exit status on output failure. */
int print_check_result(rlctl_ctx *ctx, const char *action, const char *key,
                       const rls_result *res, int have_id, int64_t id);
/* Shared by listing commands: prints rows as a table with the given
 * columns (name, header, kind), or as JSON with --json. */
typedef struct col_spec {
    const char *col;       /* column name in the rows */
    const char *header;    /* table header ('>' prefix = right-aligned) */
    int kind;              /* COL_* below */
} col_spec;
/* TIME: timestamp ("-" for 0); UNTIL: "forever" for 0; EXPIRES: "never"
 * for 0; DUR: duration in ms; PPM: millionths shown as a percentage;
 * ACTION: "" (every action) shown as "*"; WINDOW: a window's ms like DUR,
 * but on a terminal a calendar window (the row's "calendar") as written,
 * "1w" rather than "7d".  Empty text is shown as "-". */
enum { COL_TEXT, COL_INT, COL_TIME, COL_UNTIL, COL_EXPIRES, COL_DUR, COL_BOOL, COL_PPM,
       COL_ACTION, COL_WINDOW };
void print_rows(rlctl_ctx *ctx, const rls_rows *rows, const col_spec *cols, int ncols);
/* Prints rows as a table without JSON (for commands composing JSON). */
void print_rows_table(const rlctl_ctx *ctx, const rls_rows *rows, const col_spec *cols,
                      int ncols);

/* Reads a whole file ("-" = stdin) up to max bytes into a malloc'd buffer
 * (NUL-terminated).  Returns 0, or -1 with errno set (EFBIG if too large). */
int read_file(const char *path, size_t max, char **buf, size_t *len);

/* Unified-style line diff (3 lines of context) of a (label_a) to b
 * (label_b): *out gets malloc'd text ("" if equal), *changes the number of
 * removed plus added lines.  Returns 0, or -1 out of memory. */
int diff_text(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
              const char *label_b, char **out, long *changes);

#endif /* RLCTL_H */
