/*
 * cmd_init.c - `rlctl init [FILE]` and `rlctl apply FILE [--dry-run]
 * [--force] [--check]`: creating the database and applying rule files.
 *
 * init is the only command that may create a database (with --mode and
 * --group for a shared deployment; with --counters both files of a split
 * one; in a PostgreSQL schema, the rlstore tables); every other one opens
 * with create = 0.  init reads FILE and validates the rules (every error,
 * cmd_lint.c) before creating anything, and never removes a database.
 * apply reads FILE ('-' = stdin) whole (load_rules) and validates it the
 * same way before it touches the database; the library validates it again
 * before storing anything, and stores nothing when the rules are the same
 * as the active ones once parsed (rls_rules_apply_v2_at).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rlctl.h"

/* Applies the rules read from file (a new version only when they changed,
 * or with `force`); prints the diagnostic on failure.  *changed: 1 when a
 * version was stored. */
static int apply_text(rlctl_ctx *ctx, const char *file, const char *yaml, size_t len,
                      const char *comment, int force, int64_t *version, int *changed)
{
    int rc = rls_rules_apply_v2_at(ctx->db, yaml, len, source_name(file), comment,
                                   force ? RLS_APPLY_FORCE : 0, ctx->now_ms, version, changed);
    if (rc == RLS_OK)
        return 0;
    if (rc == RLS_ECONFIG) {   /* say every error, not only the library's first */
        int xrc = lint_text(ctx, "apply", file, yaml, len);
        if (xrc)
            return xrc;
    }
    char *fe = esc_dup(source_name(file));
    rc = fail_lib(ctx, rc, "cannot apply '%s'", fe ? fe : "?");
    free(fe);
    return rc;
}

/* --mode (octal, permission bits only) and --group for new files; a
 * PostgreSQL database has no files of ours: its access is the server's
 * roles and grants, so both are refused with a URI. */
static int creation_opts(rlctl_ctx *ctx)
{
    const char *m = opt_get(ctx, "mode"), *g = opt_get(ctx, "group");
    if (db_is_uri(ctx->db_path) && (m || g))
        return fail_usage(ctx, "--%s is for SQLite files, not for a PostgreSQL database (the "
                          "server's roles and grants decide who may use it)", m ? "mode" : "group");
    if (m) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(m, &end, 8);
        if (!*m || *end || errno || v > 0777 || v == 0)
            return fail_usage(ctx, "invalid value for --mode: '%s' (expected octal permission "
                              "bits such as 0600 or 0660)", m);
        ctx->file_mode = (unsigned int)v;
    }
    if (g && !*g)
        return fail_usage(ctx, "invalid value for --group: the group is empty");
    ctx->file_group = g;
    return 0;
}

/*
 * Opens the database for init; *existed tells whether it was there.  A
 * file exists or not; a PostgreSQL database "exists" when its schema holds
 * the rlstore tables, which only opening it without create can tell.
 */
static int init_open(rlctl_ctx *ctx, int *existed)
{
    struct stat sb;
    *existed = 0;
    if (db_is_uri(ctx->db_path)) {
        rls_options opt;
        rls_options_init(&opt);
        opt.create = 0;
        opt.tool = "rlctl";
        /* any failure: create below, which reports the error if it remains */
        *existed = rls_open(&ctx->db, ctx->db_path, &opt) == RLS_OK;
        return *existed ? 0 : db_open(ctx, 1);
    }
    *existed = stat(ctx->db_path, &sb) == 0;
    return db_open(ctx, 1);
}

/*
 * init reads FILE and validates the rules before creating anything: rules
 * that are refused leave the file system (and a PostgreSQL schema) as it
 * was.  It never removes a database, not even one it created: another
 * process may have opened it meanwhile (issue #17).  A database created
 * whose apply then fails for another reason (a full disk) stays, without
 * rules, as after `rlctl init` without FILE.
 */
int cmd_init(rlctl_ctx *ctx)
{
    char *yaml = NULL;
    size_t len = 0;
    int64_t version = 0;
    int rc, existed, changed = 0;

    if ((rc = db_check_target(ctx)) || (rc = creation_opts(ctx)))
        return rc;
    if (ctx->nargs == 1 && (rc = load_rules(ctx, ctx->args[0], &yaml, &len)))
        return rc;
    if (yaml && (rc = lint_text(ctx, "apply", ctx->args[0], yaml, len))) {
        free(yaml);
        return rc;
    }
    if ((rc = init_open(ctx, &existed))) {
        free(yaml);
        return rc;
    }
    if (yaml) {
        rc = apply_text(ctx, ctx->args[0], yaml, len, "rlctl init", 0, &version, &changed);
        free(yaml);
        if (rc)
            return rc;   /* a database it created stays, without rules */
    }
    char *pe = db_name(ctx->db_path);
    char *ce = ctx->counters_path ? esc_dup(ctx->counters_path) : NULL;
    if (ctx->json) {
        json_obj_begin();
        json_key("db");
        json_str(pe);
        json_key("counters");
        json_str(ce);
        json_key("created");
        json_bool(!existed);
        json_key("version");
        if (version)
            json_int(version);
        else
            json_null();
        json_key("changed");
        json_bool(changed);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        if (ctx->counters_path)
            printf("%s rules database '%s' with counters database '%s'",
                   existed ? "opened existing" : "created", pe ? pe : "?", ce ? ce : "?");
        else
            printf("%s rlstore database '%s'", existed ? "opened existing" : "created",
                   pe ? pe : "?");
        if (version && changed)
            printf(", applied rules as version %lld", (long long)version);
        else if (version)
            printf(", rules unchanged (version %lld)", (long long)version);
        putchar('\n');
    }
    free(pe);
    free(ce);
    return 0;
}

/* Prints the keys a dry run found over a new or changed limit. */
static const col_spec over_cols[] = {
    {"action", "ACTION", COL_TEXT},
    {"key", "KEY", COL_TEXT},
    {"limit", "LIMIT", COL_TEXT},
    {"used", ">USED", COL_INT},
    {"old_limit", ">OLD", COL_INT},
    {"new_limit", ">NEW", COL_INT},
};

static int dry_run(rlctl_ctx *ctx, const char *file)
{
    char *yaml = NULL, *active = NULL, *diff = NULL, label[64];
    size_t len = 0, alen = 0;
    long changes = 0;
    rls_rows *over = NULL;
    int64_t active_version = 0;
    int would = 0;
    int rc = load_rules(ctx, file, &yaml, &len);
    if (rc)
        return rc;
    if ((rc = lint_text(ctx, "apply", file, yaml, len))) {
        free(yaml);
        return rc;
    }
    int lrc = rls_rules_dry_run_at(ctx->db, yaml, len, source_name(file), ctx->now_ms, &over);
    if (lrc != RLS_OK) {
        char *fe = esc_dup(source_name(file));
        rc = fail_lib(ctx, lrc, "cannot apply '%s'", fe ? fe : "?");
        free(fe);
        goto out;
    }
    /* would an apply store a version (the rules differ once parsed)? */
    lrc = rls_rules_apply_v2_at(ctx->db, yaml, len, source_name(file), NULL, RLS_APPLY_DRY_RUN,
                                ctx->now_ms, &active_version, &would);
    if (lrc != RLS_OK) {
        rc = fail_lib(ctx, lrc, "cannot compare with the active rules");
        goto out;
    }
    lrc = rls_rules_get(ctx->db, 0, &active, &alen);
    if (lrc == RLS_ENORULES) {
        active = NULL;
        alen = 0;
    } else if (lrc != RLS_OK) {
        rc = fail_lib(ctx, lrc, "cannot read the active rules");
        goto out;
    }
    if (active_version)
        snprintf(label, sizeof label, "active (version %lld)", (long long)active_version);
    else
        snprintf(label, sizeof label, active ? "active" : "active (none)");
    char *fe = esc_dup(source_name(file));
    if (diff_text(active ? active : "", alen, yaml, len, label, fe ? fe : "?", &diff,
                  &changes) != 0) {
        free(fe);
        rc = fail_code(ctx, RLCTL_EXIT_STORAGE, "ENOMEM", "out of memory");
        goto out;
    }
    free(fe);
    if (ctx->json) {
        json_obj_begin();
        json_key("dry_run");
        json_bool(1);
        json_key("changed");
        json_bool(would);
        json_key("active_version");
        if (active_version)
            json_int(active_version);
        else
            json_null();
        json_key("diff");
        json_str(diff);
        json_key("over");
        json_rows(over);
        json_obj_end();
        json_end_line();
    } else {
        if (changes)
            fputs(diff, stdout);
        else if (!ctx->quiet)
            puts("no changes to the rules");
        if (changes && !would && !ctx->quiet)
            puts("\nthe rules are the same once parsed: applying stores nothing (--force "
                 "stores it)");
        if (rls_rows_count(over) > 0) {
            if (!ctx->quiet)
                printf("%s%d key(s) over a new or changed limit now:\n", changes ? "\n" : "",
                       rls_rows_count(over));
            print_rows_table(ctx, over, over_cols, 6);
        } else if (!ctx->quiet) {
            printf("%sno key is over a new or changed limit\n", changes ? "\n" : "");
        }
    }
out:
    free(yaml);
    rls_free(active);
    free(diff);
    rls_rows_free(over);
    return rc;
}

/*
 * `apply FILE`: rules the same as the active ones once parsed (comments,
 * key order, spacing aside) store nothing and say "unchanged" (exit 0),
 * so a deploy may apply at every run; --force stores a version anyway.
 * --check only validates, without opening a database (as `lint`).
 */
int cmd_apply(rlctl_ctx *ctx)
{
    char *yaml = NULL;
    size_t len = 0;
    int64_t version = 0;
    int changed = 0, rc;
    if (opt_flag(ctx, "check"))
        return opt_flag(ctx, "dry-run") || opt_flag(ctx, "force")
                   ? fail_usage(ctx, "--check validates only: it takes no --dry-run or --force")
                   : cmd_lint(ctx);
    if ((rc = db_open(ctx, 0)))
        return rc;
    if (opt_flag(ctx, "dry-run"))
        return opt_flag(ctx, "force") ? fail_usage(ctx, "--dry-run stores nothing: it takes no "
                                                   "--force")
                                      : dry_run(ctx, ctx->args[0]);
    if ((rc = load_rules(ctx, ctx->args[0], &yaml, &len)))
        return rc;
    if ((rc = lint_text(ctx, "apply", ctx->args[0], yaml, len)) == 0)
        rc = apply_text(ctx, ctx->args[0], yaml, len, opt_get(ctx, "comment"),
                        opt_flag(ctx, "force"), &version, &changed);
    free(yaml);
    if (rc)
        return rc;
    char *fe = esc_dup(source_name(ctx->args[0]));
    if (ctx->json) {
        json_obj_begin();
        json_key("file");
        json_str(fe);
        json_key("version");
        json_int(version);
        json_key("changed");
        json_bool(changed);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet && changed) {
        printf("applied '%s' as version %lld\n", fe ? fe : "?", (long long)version);
    } else if (!ctx->quiet) {
        printf("unchanged: '%s' is the same as the active version %lld (nothing stored; "
               "--force stores it)\n", fe ? fe : "?", (long long)version);
    }
    free(fe);
    return 0;
}
