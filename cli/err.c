/*
 * err.c - diagnostics and exit statuses of rlctl, and opening the database.
 *
 * Diagnostics are one line on stderr in git style: what failed first, lower
 * case, the subject quoted, no full stop, then the library's detail:
 *     rlctl: cannot open 'x.db': file is not an rlstore database
 * With --json the same failure is also written to stdout as one object,
 *     {"error":{"exit":3,"code":"ENOTFOUND","message":"..."}}
 * so that a --json caller always gets exactly one JSON value.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "rlctl.h"

/* Library code -> exit status.  Input the caller can fix is a usage error;
 * "not there" is 3; rules problems are 4; everything else is storage. */
int exit_for(int rc)
{
    switch (rc) {
    case RLS_OK: return RLCTL_EXIT_OK;
    case RLS_EINVAL:
    case RLS_EKEY:
    case RLS_ECOST:
    case RLS_ETIME: return RLCTL_EXIT_USAGE;
    case RLS_ENOTFOUND:
    case RLS_ENOACTION:
    case RLS_EEXPIRED: return RLCTL_EXIT_NOTFOUND;
    case RLS_ECONFIG:
    case RLS_ENORULES: return RLCTL_EXIT_CONFIG;
    default: return RLCTL_EXIT_STORAGE;
    }
}

/* Every diagnostic passes here: whatever part of it is raw (a library
 * detail that quotes a path or a key) gets its control and format
 * characters escaped; parts escaped already are left as they are. */
static void emit(rlctl_ctx *ctx, int code, const char *errname, const char *raw)
{
    char *safe = msg_esc_dup(raw);
    const char *msg = safe ? safe : raw;
    fprintf(stderr, "rlctl: %s\n", msg);
    if (ctx && ctx->json) {
        json_obj_begin();
        json_key("error");
        json_obj_begin();
        json_key("exit");
        json_int(code);
        json_key("code");
        json_str(errname);
        json_key("message");
        json_str(msg);
        json_obj_end();
        json_obj_end();
        json_end_line();
    }
    free(safe);
}

static int vfail(rlctl_ctx *ctx, int code, const char *errname, const char *detail,
                 const char *fmt, va_list ap)
{
    char msg[1024];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0)
        n = 0;
    if (detail && *detail && (size_t)n < sizeof msg) {
        /* The library's detail may quote raw input: escape it like a key,
         * so the diagnostic stays one line without control bytes, but keep
         * its backslashes (input it escaped itself is not escaped twice). */
        char *e = msg_esc_dup(detail);
        snprintf(msg + n, sizeof msg - (size_t)n, ": %s", e ? e : detail);
        free(e);
    }
    emit(ctx, code, errname, msg);
    return code;
}

int fail_usage(rlctl_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(ctx, RLCTL_EXIT_USAGE, "USAGE", NULL, fmt, ap);
    va_end(ap);
    return rc;
}

int fail_code(rlctl_ctx *ctx, int exit_code, const char *errname, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(ctx, exit_code, errname, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

int fail_lib(rlctl_ctx *ctx, int rc, const char *fmt, ...)
{
    va_list ap;
    const char *detail = rls_errmsg(ctx->db);
    if (!detail || !*detail)
        detail = rls_strerror(rc);
    va_start(ap, fmt);
    int code = vfail(ctx, exit_for(rc), rls_errname(rc), detail, fmt, ap);
    va_end(ap);
    return code;
}

static int missing(const char *path)
{
    struct stat sb;
    return stat(path, &sb) != 0 && errno == ENOENT;
}

char *db_name(const char *path)
{
    char *r = db_redact(path);
    char *e = r ? esc_dup(r) : NULL;
    free(r);
    return e;
}

int db_check_target(rlctl_ctx *ctx)
{
    const char *copt = ctx->counters_env ? "RLSTORE_COUNTERS" : "--counters";
    if (db_is_uri(ctx->counters_path))
        return fail_usage(ctx, "invalid value for %s: the counters database of a split "
                          "deployment is a SQLite file, not a PostgreSQL URI", copt);
    if (db_is_uri(ctx->db_path) && ctx->counters_path)
        return fail_usage(ctx, "%s is for a split deployment of SQLite files, not for a "
                          "PostgreSQL database%s", copt, ctx->counters_env ? " (unset it)" : "");
    return 0;
}

/* A failed open of a PostgreSQL database: the library keeps the URI (which
 * may hold a password) out of its detail, so the detail follows the
 * redacted name as it is. */
static int fail_open_uri(rlctl_ctx *ctx, int rc, const char *name)
{
    const char *detail = rls_errmsg(NULL);
    return fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot open '%s': %s", name,
                     detail && *detail ? detail : rls_strerror(rc));
}

int db_open(rlctl_ctx *ctx, int create)
{
    rls_options opt;
    char quoted[512], *path_esc;
    int rc, uri = db_is_uri(ctx->db_path);

    if (ctx->db)
        return 0;
    if ((rc = db_check_target(ctx)))
        return rc;
    rls_options_init(&opt);
    opt.create = create;
    opt.tool = "rlctl";
    /* An application may open with a larger max_key_len than the default:
     * the operator's tool must reach every key the database can hold. */
    opt.max_key_len = RLS_KEY_MAX_LIMIT;
    opt.counters_path = ctx->counters_path;
    if (ctx->file_mode)
        opt.file_mode = ctx->file_mode;
    opt.file_group = ctx->file_group;
    /* Only init (which creates) and migrate upgrade a schema: a tool run on
     * one host must not upgrade a database that older libraries of other
     * hosts still use (a rolling deploy; rlctl migrate, once). */
    opt.no_upgrade = !create;
    /* where the applications keep the memory-class table: their counts
     * (check, usage, explain, reset) and doctor's rows */
    opt.shm_dir = ctx->shm_dir;
    if (ctx->cmd && opt_flag(ctx, "syslog") && strcmp(ctx->cmd->name, "hold") != 0)
        opt.log_fn = rlctl_syslog_line;   /* penalty events, one line each (syslog.c) */
    path_esc = db_name(ctx->db_path);
    if (!path_esc)
        return fail_code(ctx, RLCTL_EXIT_STORAGE, "ENOMEM", "out of memory");
    /* A URI names no file: whether its database exists is the server's. */
    const char *gone = uri || create ? NULL
                       : missing(ctx->db_path) ? ctx->db_path
                       : ctx->counters_path && missing(ctx->counters_path) ? ctx->counters_path
                       : NULL;
    if (gone) {
        free(path_esc);
        path_esc = esc_dup(gone);
        rc = fail_code(ctx, RLCTL_EXIT_NOTFOUND, "ENOTFOUND",
                       "cannot open '%s': no such database (create it with 'rlctl init')",
                       path_esc ? path_esc : "?");
        free(path_esc);
        return rc;
    }
    rc = rls_open(&ctx->db, ctx->db_path, &opt);
    if (rc == RLS_EREADONLY && ctx->counters_path && !create) {
        /* Split: a user who may not write the rules (an application's)
         * still checks, and changes of the rules then fail by name. */
        opt.rules_read_only = 1;
        rc = rls_open(&ctx->db, ctx->db_path, &opt);
    }
    if (rc == RLS_EREADONLY && !create && ctx->cmd && ctx->cmd->reads_only) {
        /* A database this user may only read still answers queries. */
        opt.read_only = 1;
        opt.rules_read_only = 0;
        rc = rls_open(&ctx->db, ctx->db_path, &opt);
        if (rc != RLS_OK) {
            opt.read_only = 0;
            rc = rls_open(&ctx->db, ctx->db_path, &opt);  /* report the first error */
        }
    }
    if (rc == RLS_OK) {
        free(path_esc);
        /* --reason of a command that takes no reason of its own: the
         * library audits its changes with it */
        const char *why = ctx->cmd ? opt_get(ctx, "reason") : NULL;
        if (why && (rc = rls_admin_reason(ctx->db, why)) != RLS_OK)
            return fail_lib(ctx, rc, "invalid --reason");
        return 0;
    }
    ctx->db = NULL;
    if (uri && !(rc == RLS_ENOTFOUND && !create)) {
        rc = fail_open_uri(ctx, rc, path_esc);
        free(path_esc);
        return rc;
    }
    /* no file, or a PostgreSQL database without the rlstore schema */
    if (!create && ((rc == RLS_ECANTOPEN && missing(ctx->db_path)) || rc == RLS_ENOTFOUND)) {
        rc = fail_code(ctx, RLCTL_EXIT_NOTFOUND, "ENOTFOUND",
                       "cannot open '%s': no such database (create it with 'rlctl init')",
                       path_esc);
        free(path_esc);
        return rc;
    }
    /* The library's detail often names the file itself: say it once. */
    const char *detail = rls_errmsg(NULL), *rest = NULL, *p;
    snprintf(quoted, sizeof quoted, "'%s'", ctx->db_path);
    if (detail && *detail && (p = strstr(detail, quoted)) != NULL) {
        p += strlen(quoted);
        if (strncmp(p, ": ", 2) == 0)
            rest = p + 2;             /* "cannot open 'x': Permission denied" */
        else if (p == detail + strlen(quoted) && *p == ' ')
            rest = p;                 /* "'x' is a directory" -> "it is ..." */
    }
    if (rest && *rest == ' ')
        rc = fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot open '%s': it%s", path_esc,
                       rest);
    else if (rest && *rest)
        rc = fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot open '%s': %s", path_esc,
                       rest);
    else if (detail && *detail && !strstr(detail, quoted))
        rc = fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot open '%s': %s: %s", path_esc,
                       rls_strerror(rc), detail);
    else if (detail && *detail && !rest)   /* names it, but not first */
        rc = fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot open '%s': %s", path_esc,
                       detail);
    else
        rc = fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot open '%s': %s", path_esc,
                       rls_strerror(rc));
    free(path_esc);
    return rc;
}
