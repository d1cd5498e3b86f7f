/*
 * cmd_copy.c - `rlctl --db DST copy-from SRC`: copies the rules, the
 * operator entries and the counters of the database SRC (a file or a
 * postgresql:// URI) into the database of --db, through rls_copy_at(), and
 * prints what it did per kind: a table on a terminal, TSV otherwise, a
 * JSON array of the report rows with --json.
 *
 * SRC is opened read-only and never created or upgraded: an older source
 * file stays usable by the applications that still run on it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rlctl.h"

static const col_spec report_cols[] = {
    {"what", "WHAT", COL_TEXT},      {"copied", ">COPIED", COL_INT},
    {"kept", ">KEPT", COL_INT},      {"dropped", ">DROPPED", COL_INT},
    {"expired", ">EXPIRED", COL_INT}, {"detail", "DETAIL", COL_TEXT},
};

/* The kinds the flags select; all of them when none is given. */
static unsigned int copy_what(const rlctl_ctx *ctx)
{
    unsigned int what = 0;
    if (opt_flag(ctx, "rules"))
        what |= RLS_COPY_RULES;
    if (opt_flag(ctx, "policy"))
        what |= RLS_COPY_POLICY;
    if (opt_flag(ctx, "counters"))
        what |= RLS_COPY_COUNTERS;
    if (!what)
        what = RLS_COPY_ALL;
    if (opt_flag(ctx, "dry-run"))
        what |= RLS_COPY_DRY_RUN;
    return what;
}

/* Opens the source read-only; on failure prints the diagnostic and returns
 * the exit status. */
static int open_source(rlctl_ctx *ctx, const char *path, const char *counters,
                       const char *name, rls_db **src)
{
    rls_options opt;
    struct stat sb;
    rls_options_init(&opt);
    opt.read_only = 1;
    opt.create = 0;
    opt.tool = "rlctl";
    opt.max_key_len = RLS_KEY_MAX_LIMIT;   /* every key the source holds */
    opt.counters_path = counters;
    if (!db_is_uri(path) && ((stat(path, &sb) != 0 && errno == ENOENT) ||
                             (counters && stat(counters, &sb) != 0 && errno == ENOENT)))
        return fail_code(ctx, RLCTL_EXIT_NOTFOUND, "ENOTFOUND",
                         "cannot open the source '%s': no such database", name);
    int rc = rls_open(src, path, &opt);
    if (rc == RLS_OK)
        return 0;
    const char *detail = rls_errmsg(NULL);
    return fail_code(ctx, rc == RLS_ENOTFOUND ? RLCTL_EXIT_NOTFOUND : exit_for(rc),
                     rls_errname(rc), "cannot open the source '%s': %s", name,
                     detail && *detail ? detail : rls_strerror(rc));
}

int cmd_copy_from(rlctl_ctx *ctx)
{
    const char *path = ctx->args[0], *counters = opt_get(ctx, "from-counters");
    unsigned int what = copy_what(ctx);
    rls_db *src = NULL;
    rls_rows *rep = NULL;
    char *name, *dst_name;
    int rc;

    if (!*path)
        return fail_usage(ctx, "invalid source: the path is empty");
    if (counters && (db_is_uri(path) || db_is_uri(counters) || !*counters))
        return fail_usage(ctx, "invalid value for --from-counters: a split source is two "
                          "SQLite files, not a PostgreSQL database");
    if ((rc = db_open(ctx, 0)))
        return rc;
    name = db_name(path);
    dst_name = db_name(ctx->db_path);
    if (!name || !dst_name) {
        rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "ENOMEM", "out of memory");
    } else if ((rc = open_source(ctx, path, counters, name, &src)) == 0) {
        struct progress pr = {0, 0};
        if (!ctx->quiet && isatty(STDERR_FILENO))   /* a terminal: progress (progress.c) */
            rls_set_progress(ctx->db, progress_rows, &pr);
        int lrc = rls_copy_at(ctx->db, src, what, ctx->now_ms, &rep);
        progress_end(&pr);
        if (lrc != RLS_OK) {
            rc = fail_lib(ctx, lrc, "cannot copy from '%s'", name);
        } else if (ctx->json) {
            print_rows(ctx, rep, report_cols, 6);
        } else if (!ctx->quiet) {
            if (ctx->tty)
                printf("%s '%s' into '%s':\n", what & RLS_COPY_DRY_RUN
                       ? "dry run, nothing stored: would copy from" : "copied from",
                       name, dst_name);
            print_rows(ctx, rep, report_cols, 6);
        }
    }
    rls_rows_free(rep);
    rls_close(src);
    free(name);
    free(dst_name);
    return rc;
}
