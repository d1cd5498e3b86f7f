/*
 * cmd_lint.c - `rlctl lint FILE` (and `apply --check FILE`): validating a
 * rule file without a database, as `nginx -t` tests a configuration; and
 * the one way every command that reads a rule file (init, apply, apply
 * --dry-run, lint) reports it invalid: every error of the file, not only
 * the first, each on a line of its own as a compiler prints them,
 *     rules.yaml:7:9: actions.signup.limits[0]: unknown field 'limt' (did you mean 'limit'?)
 * then one summary line, "rlctl: cannot apply 'rules.yaml': 3 errors".
 * The errors come from the library (rls_rules_validate), so they are the
 * ones an apply would meet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

/* rlctl's own bound on what it reads: the library refuses far smaller
 * files itself (a configuration error naming its limit); this only bounds
 * rlctl's memory. */
#define MAX_RULES_FILE (128u << 20)

const char *source_name(const char *file)
{
    return strcmp(file, "-") == 0 ? "<stdin>" : file;
}

/* Contract in rlctl.h.  A directory or a file without permission is a
 * wrong argument (2), not wrong rules. */
int load_rules(rlctl_ctx *ctx, const char *file, char **yaml, size_t *len)
{
    char *fe = esc_dup(file);
    int rc = 0;
    if (read_file(file, MAX_RULES_FILE, yaml, len) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            rc = fail_code(ctx, RLCTL_EXIT_NOTFOUND, "ENOTFOUND", "cannot read '%s': %s",
                           fe ? fe : "?", strerror(e));
        else if (e == EFBIG)
            rc = fail_code(ctx, RLCTL_EXIT_CONFIG, "ECONFIG",
                           "cannot apply '%s': larger than %u MiB", fe ? fe : "?",
                           MAX_RULES_FILE >> 20);
        else if (e == ENOMEM)
            rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "ENOMEM", "cannot read '%s': %s",
                           fe ? fe : "?", strerror(e));
        else
            rc = fail_code(ctx, RLCTL_EXIT_USAGE, "USAGE", "cannot read '%s': %s",
                           fe ? fe : "?", strerror(e));
    }
    free(fe);
    return rc;
}

/* One error as a line of stderr: the library's parts, escaped (they quote
 * the file, which may hold any bytes). */
static void print_error(const char *fe, const rls_rows *errs, int r)
{
    int64_t line = row_int(errs, r, "line"), col = row_int(errs, r, "column");
    const char *path = row_text(errs, r, "path");
    char *pe = path ? msg_esc_dup(path) : NULL, *me = msg_esc_dup(row_text(errs, r, "message"));
    if (line > 0)
        fprintf(stderr, "%s:%lld:%lld: ", fe, (long long)line, (long long)col);
    else
        fprintf(stderr, "%s: ", fe);
    if (pe && *pe)
        fprintf(stderr, "%s: ", pe);
    fprintf(stderr, "%s\n", me ? me : "?");
    free(pe);
    free(me);
}

/* The errors as a JSON array of {line, column, path, message}; a missing
 * place or path is null. */
static void json_errors(const rls_rows *errs)
{
    json_arr_begin();
    for (int r = 0; r < rls_rows_count(errs); r++) {
        int64_t line = row_int(errs, r, "line");
        json_obj_begin();
        json_key("line");
        line > 0 ? json_int(line) : json_null();
        json_key("column");
        line > 0 ? json_int(row_int(errs, r, "column")) : json_null();
        json_key("path");
        json_str(row_text(errs, r, "path"));
        json_key("message");
        json_str(row_text(errs, r, "message"));
        json_obj_end();
    }
    json_arr_end();
}

/* Contract in rlctl.h. */
int lint_text(rlctl_ctx *ctx, const char *verb, const char *file, const char *yaml, size_t len)
{
    rls_rows *errs = NULL;
    int lrc = rls_rules_validate(yaml, len, source_name(file), &errs);
    if (lrc == RLS_OK) {
        rls_rows_free(errs);
        return 0;
    }
    if (lrc != RLS_ECONFIG)
        return fail_code(ctx, exit_for(lrc), rls_errname(lrc), "cannot %s '%s': %s", verb,
                         source_name(file), rls_strerror(lrc));
    char *fe = esc_dup(source_name(file));
    int n = rls_rows_count(errs);
    for (int r = 0; r < n; r++)
        print_error(fe ? fe : "?", errs, r);
    fprintf(stderr, "rlctl: cannot %s '%s': %d error%s\n", verb, fe ? fe : "?", n,
            n == 1 ? "" : "s");
    if (ctx->json) {
        char msg[600];
        snprintf(msg, sizeof msg, "cannot %s '%s': %d error%s", verb, fe ? fe : "?", n,
                 n == 1 ? "" : "s");
        json_obj_begin();
        json_key("error");
        json_obj_begin();
        json_key("exit");
        json_int(RLCTL_EXIT_CONFIG);
        json_key("code");
        json_str("ECONFIG");
        json_key("message");
        json_str(msg);
        json_key("errors");
        json_errors(errs);
        json_obj_end();
        json_obj_end();
        json_end_line();
    }
    free(fe);
    rls_rows_free(errs);
    return RLCTL_EXIT_CONFIG;
}

/*
 * `lint FILE`: no database is opened.  Valid: "FILE: ok" (nothing with
 * --quiet) and exit 0; invalid: every error and exit 4.  With --json the
 * report is one object either way: {"file", "valid", "errors"}.
 */
int cmd_lint(rlctl_ctx *ctx)
{
    const char *file = ctx->args[0];
    char *yaml = NULL;
    size_t len = 0;
    int rc = load_rules(ctx, file, &yaml, &len);
    if (rc)
        return rc;
    if (!ctx->json) {
        rc = lint_text(ctx, "validate", file, yaml, len);
        free(yaml);
        if (rc == 0 && !ctx->quiet) {
            char *fe = esc_dup(source_name(file));
            printf("%s: ok\n", fe ? fe : "?");
            free(fe);
        }
        return rc;
    }
    rls_rows *errs = NULL;
    int lrc = rls_rules_validate(yaml, len, source_name(file), &errs);
    free(yaml);
    if (lrc != RLS_OK && lrc != RLS_ECONFIG)
        return fail_code(ctx, exit_for(lrc), rls_errname(lrc), "cannot validate '%s': %s",
                         source_name(file), rls_strerror(lrc));
    char *fe = esc_dup(source_name(file));
    for (int r = 0; r < rls_rows_count(errs); r++)
        print_error(fe ? fe : "?", errs, r);
    json_obj_begin();
    json_key("file");
    json_str(fe);
    json_key("valid");
    json_bool(lrc == RLS_OK);
    json_key("errors");
    json_errors(errs);
    json_obj_end();
    json_end_line();
    free(fe);
    rls_rows_free(errs);
    return lrc == RLS_OK ? 0 : RLCTL_EXIT_CONFIG;
}
