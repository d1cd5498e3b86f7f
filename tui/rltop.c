/*
 * rltop.c - entry point of rltop: options, opening the database, the main
 * loop (ScreenManager style: sample, draw, wait for a key or the next
 * refresh, dispatch) and the key dispatch generated from keys.h.
 *
 * The option table below is the single description of the command line:
 * the parser accepts what it lists and `rltop --help` prints it, together
 * with the key table and the exit statuses; tests/tui/test_batch.sh checks
 * docs/man/rltop.1 against that help.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rltop.h"
#include "keys.h"

typedef struct opt {
    const char *name;   /* long name */
    char short_name;    /* or 0 */
    const char *arg;    /* NULL for a flag */
    const char *help;
} opt;

static const opt opts[] = {
    {"db", 0, "PATH", "database file or postgresql:// URI (default: $RLSTORE_DB, then "
                     "./rlstore.db); never created"},
    {"counters", 0, "PATH", "split deployment: counters database; --db is the rules database"},
    {"shm-dir", 0, "DIR", "folder of the memory-class table, as the applications' shm_dir "
                          "(default: $RLSTORE_SHM_DIR, then /dev/shm)"},
    {"action", 0, "ACTION", "show only the keys and rates of ACTION"},
    {"delay", 'd', "SECONDS", "refresh interval in seconds, decimals allowed (default 1)"},
    {"batch", 'b', NULL, "print snapshots as plain text instead (also when stdout is not a terminal)"},
    {"iterations", 'n', "N", "batch mode: print N snapshots, then exit (default 1)"},
    {"rows", 0, "N", "batch mode: keys per snapshot, most pressing first (default 20)"},
    {"help", 'h', NULL, "show this help and exit"},
    {"version", 0, NULL, "print the version and exit"},
};
#define NOPTS ((int)(sizeof opts / sizeof opts[0]))

typedef struct key_entry {
    int code, alt;
    unsigned (*fn)(app *);
    const char *label, *help;
} key_entry;

static const key_entry key_table[] = {
#define RLTOP__KEY_ROW(id, code, alt, label, help) {code, alt, key_##id, label, help},
    RLTOP_KEYS(RLTOP__KEY_ROW)
#undef RLTOP__KEY_ROW
};
#define NKEYS ((int)(sizeof key_table / sizeof key_table[0]))

static void print_help(void)
{
    printf("usage: rltop [--db PATH] [--counters PATH] [--shm-dir DIR] [--action ACTION]\n"
           "             [-d SECONDS]\n"
           "             [-b [-n N] [--rows N]]\n\n"
           "The live console of rlstore: which keys are limited right now, and the means\n"
           "to act on them (unblock, block, tier, override, reset, edit a limit, roll back).\n"
           "Every change goes through the admin API and is audited with your user name.\n\n"
           "Options:\n");
    for (int i = 0; i < NOPTS; i++) {
        char tag[64];
        if (opts[i].short_name)
            snprintf(tag, sizeof tag, "-%c, --%s%s%s", opts[i].short_name, opts[i].name,
                     opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
        else
            snprintf(tag, sizeof tag, "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
                     opts[i].arg ? opts[i].arg : "");
        printf("  %-26s  %s\n", tag, opts[i].help);
    }
    printf("\nKeys:\n");
    for (int i = 0; i < NKEYS; i++)
        printf("  %-12s  %s\n", key_table[i].label, key_table[i].help);
    printf("\nExit status:\n");
#define RLTOP__EXIT_HELP(name, code, text) printf("  %d  %s\n", code, text);
    RLTOP_EXIT_MAP(RLTOP__EXIT_HELP)
#undef RLTOP__EXIT_HELP
    printf("\nEnvironment:\n"
           "  RLSTORE_DB  database file when --db is not given\n"
           "  RLSTORE_COUNTERS  counters database when --counters is not given\n"
           "  RLSTORE_SHM_DIR  folder of the memory-class table when --shm-dir is not given\n"
           "  NO_COLOR  when set and not empty, no colours are used\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("rltop: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("; see 'rltop --help'\n", stderr);
    return RLTOP_EXIT_USAGE;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

typedef struct args {
    const char *db, *counters, *action, *shm_dir;
    double delay;
    int batch, help, version;
    long n, rows;
} args;

static int set_opt(args *g, const opt *o, const char *val)
{
    long v;
    char *end;
    const char *n = o->name;
    if (strcmp(n, "db") == 0) {
        if (!*val)
            return usage_error("invalid value for --db: the path is empty");
        g->db = val;
    } else if (strcmp(n, "counters") == 0) {
        if (!*val)
            return usage_error("invalid value for --counters: the path is empty");
        g->counters = val;
    } else if (strcmp(n, "shm-dir") == 0) {
        if (!*val)
            return usage_error("invalid value for --shm-dir: the path is empty");
        g->shm_dir = val;
    } else if (strcmp(n, "action") == 0) {
        if (!*val)
            return usage_error("invalid value for --action: the name is empty");
        g->action = val;
    } else if (strcmp(n, "delay") == 0) {
        errno = 0;
        g->delay = strtod(val, &end);
        if (!*val || *end || errno || !isfinite(g->delay) || g->delay < 0.1 || g->delay > 86400)
            return usage_error("invalid value for --delay: '%s' (expected seconds from 0.1 to "
                               "86400, such as 1 or 0.5)", val);
    } else if (strcmp(n, "iterations") == 0) {
        if (parse_int(val, 1, 1000000, &v) != 0)
            return usage_error("invalid value for --iterations: '%s' (expected an integer from 1 "
                               "to 1000000)", val);
        g->n = v;
    } else if (strcmp(n, "rows") == 0) {
        if (parse_int(val, 1, 100000, &v) != 0)
            return usage_error("invalid value for --rows: '%s' (expected an integer from 1 to "
                               "100000)", val);
        g->rows = v;
    } else if (strcmp(n, "batch") == 0) {
        g->batch = 1;
    } else if (strcmp(n, "help") == 0) {
        g->help = 1;
    } else if (strcmp(n, "version") == 0) {
        g->version = 1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, args *g)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            const opt *o = NULL;
            for (int k = 0; k < NOPTS && !o; k++)
                if (strlen(opts[k].name) == len && strncmp(opts[k].name, a + 2, len) == 0)
                    o = &opts[k];
            if (!o)
                return usage_error("unknown option '%.*s'", (int)(len + 2), a);
            const char *val = "";
            if (o->arg) {
                if (eq)
                    val = eq + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else
                    return usage_error("option '--%s' needs a value (%s)", o->name, o->arg);
            } else if (eq) {
                return usage_error("option '--%s' takes no value", o->name);
            }
            int rc = set_opt(g, o, val);
            if (rc)
                return rc;
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            for (const char *c = a + 1; *c; c++) {
                const opt *o = NULL;
                for (int k = 0; k < NOPTS && !o; k++)
                    if (opts[k].short_name == *c)
                        o = &opts[k];
                if (!o)
                    return usage_error("unknown option '-%c'", *c);
                const char *val = "";
                if (o->arg) {
                    if (c[1])
                        val = c + 1;
                    else if (i + 1 < argc)
                        val = argv[++i];
                    else
                        return usage_error("option '-%c' needs a value (%s)", *c, o->arg);
                }
                int rc = set_opt(g, o, val);
                if (rc)
                    return rc;
                if (o->arg)
                    break;
            }
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    return 0;
}

/* Exit status for a library code, as rlctl's. */
static int exit_for(int rc)
{
    switch (rc) {
    case RLS_OK: return RLTOP_EXIT_OK;
    case RLS_EINVAL: case RLS_EKEY: case RLS_ECOST: case RLS_ETIME: return RLTOP_EXIT_USAGE;
    case RLS_ENOTFOUND: case RLS_ENOACTION: return RLTOP_EXIT_NOTFOUND;
    case RLS_ECONFIG: case RLS_ENORULES: return RLTOP_EXIT_CONFIG;
    default: return RLTOP_EXIT_STORAGE;
    }
}

/* --counters names a SQLite file of a split deployment: refused with a
 * PostgreSQL database, and a URI is no counters file. */
static int check_target(const char *path, const char *counters, int counters_env)
{
    const char *copt = counters_env ? "RLSTORE_COUNTERS" : "--counters";
    if (db_is_uri(counters))
        return usage_error("invalid value for %s: the counters database of a split deployment "
                           "is a SQLite file, not a PostgreSQL URI", copt);
    if (db_is_uri(path) && counters)
        return usage_error("%s is for a split deployment of SQLite files, not for a PostgreSQL "
                           "database%s", copt, counters_env ? " (unset it)" : "");
    return 0;
}

static int open_db(app *a, const char *path, const char *counters, const char *shm_dir)
{
    struct stat sb;
    rls_options o;
    char *p = db_name(path);
    int rc;
    /* A URI names no file: whether its database exists is the server's. */
    const char *gone = db_is_uri(path) ? NULL
                       : stat(path, &sb) != 0 && errno == ENOENT ? path
                       : counters && stat(counters, &sb) != 0 && errno == ENOENT ? counters
                       : NULL;
    if (gone) {
        char *ge = esc_dup(gone);
        fprintf(stderr, "rltop: cannot open '%s': no such database (create it with 'rlctl "
                "init')\n", ge ? ge : "?");
        free(ge);
        free(p);
        return RLTOP_EXIT_NOTFOUND;
    }
    rls_options_init(&o);
    o.create = 0;
    o.tool = "rltop";
    /* keys up to the largest max_key_len any application may open with */
    o.max_key_len = RLS_KEY_MAX_LIMIT;
    o.counters_path = counters;
    o.shm_dir = shm_dir;   /* the applications' memory-class counts */
    /* an operator's console never upgrades a schema other hosts share:
     * that is `rlctl migrate`'s, once, on purpose */
    o.no_upgrade = 1;
    rc = rls_open(&a->m.db, path, &o);
    if (rc == RLS_EREADONLY && counters) {
        /* split: rules this user may not change; the actions on keys then
         * fail by name (EREADONLY) */
        o.rules_read_only = 1;
        rc = rls_open(&a->m.db, path, &o);
    }
    if (rc == RLS_EREADONLY) {   /* a database this user may only read: watch it */
        o.read_only = 1;
        o.rules_read_only = 0;
        rc = rls_open(&a->m.db, path, &o);
    }
    if (rc != RLS_OK) {
        const char *d = rls_errmsg(NULL);
        char *de = msg_esc_dup(d && *d ? d : rls_strerror(rc));
        fprintf(stderr, "rltop: cannot open '%s': %s\n", p ? p : "?", de ? de : "?");
        free(de);
        free(p);
        return exit_for(rc);
    }
    free(p);
    return 0;
}

/* --action must name an action of the rules (if there are rules). */
static int check_action(app *a)
{
    rls_usage_query q;
    int64_t n;
    if (!a->m.f_action[0])
        return 0;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.action = a->m.f_action;
    q.limit = 1;
    int rc = rls_usage_count_at(a->m.db, &q, now_ms(), &n);   /* cheap: no key is read */
    if (rc == RLS_OK || rc == RLS_ENORULES)
        return 0;
    char *e = esc_dup(a->m.f_action);
    const char *d = rls_errmsg(a->m.db);
    char *de = msg_esc_dup(d && *d ? d : rls_strerror(rc));
    fprintf(stderr, "rltop: cannot show action '%s': %s\n", e ? e : "?", de ? de : "?");
    free(de);
    free(e);
    return exit_for(rc);
}

/* ---- the interactive loop ------------------------------------------------------- */

static int key_is(int want, int is_code, unsigned ch)
{
    if (!want)
        return 0;
    if (want >= KEY_MIN)
        return is_code && (int)ch == want;
    return !is_code && (int)ch == want;
}

static unsigned dispatch(app *a, int is_code, unsigned ch)
{
    if (a->dlg.kind != DLG_NONE)
        return dlg_key(a, is_code, ch);
    for (int i = 0; i < NKEYS; i++) {
        unsigned (*fn)(app *) = key_table[i].fn;
        if (!key_is(key_table[i].code, is_code, ch) && !key_is(key_table[i].alt, is_code, ch))
            continue;
        if (a->help_open && fn != key_up && fn != key_down && fn != key_pgup && fn != key_pgdn &&
            fn != key_home && fn != key_end && fn != key_help && fn != key_close &&
            fn != key_quit && fn != key_refresh) {
            a->help_open = 0;   /* any other key just closes the help */
            return RT_REDRAW;
        }
        return fn(a);
    }
    return 0;
}

/* Keeps the selection in range and visible; fetches the keys it shows. */
static void fix_scroll(app *a)
{
    int v = a->view;
    long h = view_height(a, v);
    if (v == VIEW_KEYS && a->want_end && a->m.total >= 0) {
        a->sel[v] = a->m.total > 0 ? a->m.total - 1 : 0;
        a->want_end = 0;
    }
    for (int pass = 0; pass < 2; pass++) {
        long n = view_count(a, v);
        if (a->sel[v] >= n)
            a->sel[v] = n > 0 ? n - 1 : 0;
        if (a->sel[v] < 0)
            a->sel[v] = 0;
        if (a->sel[v] < a->top[v])
            a->top[v] = a->sel[v];
        if (a->sel[v] >= a->top[v] + h)
            a->top[v] = a->sel[v] - h + 1;
        if (a->m.total >= 0 || v != VIEW_KEYS) {
            if (a->top[v] > n - h)
                a->top[v] = n - h;
        }
        if (a->top[v] < 0)
            a->top[v] = 0;
        if (v != VIEW_KEYS || pass == 1)
            break;
        model_want_rows(a, a->top[v], (int)h);   /* then clamp to what came */
    }
}

/* The detail pane follows the selection. */
static void sync_detail(app *a)
{
    const key_row *r = selected_key(a);
    const detail *d = &a->m.det;
    if (!a->detail_open || !r)
        return;
    if (!d->valid || strcmp(d->action, r->action) != 0 || strcmp(d->key, r->key) != 0)
        model_detail(a, r->action, r->key);
}

static int interactive(app *a)
{
    unsigned fl = RT_REDRAW;
    int64_t last_second = 0;
    if (term_start(a) != 0)
        return RLTOP_EXIT_STORAGE;
    model_sample(a, 1);
    double next = mono_s() + a->interval_s;
    while (!term_signalled()) {
        if (fl & RT_LAYOUT)
            term_layout(a);
        fix_scroll(a);
        if ((fl & RT_SAMPLE) || mono_s() >= next) {
            model_sample(a, (fl & RT_SAMPLE) != 0);
            next = mono_s() + a->interval_s;
            fix_scroll(a);
        }
        sync_detail(a);
        term_draw(a);
        last_second = now_ms() / 1000;
        fl = 0;
        /* wake for the next sample or the next second (clock, countdowns) */
        double wait = next - mono_s();
        int64_t to_second = 1000 - now_ms() % 1000 + 5;
        int timeout = wait * 1000.0 < (double)to_second ? (int)(wait * 1000.0) : (int)to_second;
        int is_code = 0;
        unsigned ch = 0;
        if (!term_getkey(timeout > 0 ? timeout : 0, &is_code, &ch)) {
            if (now_ms() / 1000 != last_second)
                fl |= RT_REDRAW;
            continue;
        }
        if (is_code && ch == KEY_RESIZE) {
            fl |= RT_LAYOUT | RT_REDRAW;
            continue;
        }
        fl |= dispatch(a, is_code, ch);
        if (fl & RT_QUIT)
            break;
    }
    term_stop();
    return 0;
}

int main(int argc, char **argv)
{
    static app a;
    args g = {NULL, NULL, NULL, NULL, 1.0, 0, 0, 0, 1, 20};
    setlocale(LC_ALL, "");
    int rc = parse_args(argc, argv, &g);
    if (rc)
        return rc;
    if (g.help) {
        print_help();
        return fflush(stdout) == 0 ? 0 : RLTOP_EXIT_STORAGE;
    }
    if (g.version) {
        printf("rltop %s\n", rls_version_string());
        return 0;
    }
    const char *env = getenv("RLSTORE_DB");
    a.db_path = g.db ? g.db : env && *env ? env : "./rlstore.db";
    env = getenv("RLSTORE_COUNTERS");
    const char *counters = g.counters ? g.counters : env && *env ? env : NULL;
    if ((rc = check_target(a.db_path, counters, !g.counters && counters)) != 0)
        return rc;
    a.m.path = a.db_path;
    a.interval_s = g.delay;
    a.batch = g.batch || !isatty(STDOUT_FILENO);
    a.nsnap = (int)g.n;
    a.batch_rows = (int)g.rows;
    a.m.tracked = a.m.total = -1;
    a.m.sort = RLS_SORT_USED;
    a.m.stale = 1;
    if (g.action)
        snprintf(a.m.f_action, sizeof a.m.f_action, "%s", g.action);
    if (!a.batch && !isatty(STDIN_FILENO)) {
        fprintf(stderr, "rltop: standard input is not a terminal; use --batch\n");
        return RLTOP_EXIT_USAGE;
    }
    env = getenv("RLSTORE_SHM_DIR");
    const char *shm_dir = g.shm_dir ? g.shm_dir : env && *env ? env : NULL;
    if ((rc = open_db(&a, a.db_path, counters, shm_dir)) != 0)
        return rc;
    if ((rc = check_action(&a)) != 0) {
        rls_close(a.m.db);
        return rc;
    }
    rc = a.batch ? batch_run(&a) : interactive(&a);
    int sig = term_signalled();
    op_clear(&a.op);
    dlg_close(&a);
    model_free(&a.m);
    rls_close(a.m.db);
    if (sig) {   /* die of the signal, as the caller expects */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return rc;
}
