/*
 * cmd_init.c - `rlctl init [FILE]` and `rlctl apply FILE [--dry-run]`:
 * creating the database and applying rule files.
 *
 * init is the only command that may create a database (with --mode and
 * --group for a shared deployment; with --counters both files of a split
 * one; in a PostgreSQL schema, the rlstore tables); every other one opens
 * with create = 0.  init reads FILE and validates the rules before creating
 * anything, and never removes a database.  apply reads FILE
 * ('-' = stdin) whole, up to MAX_RULES_FILE bytes (the library refuses far
 * smaller files itself, with a configuration error naming the limit; this
 * cap only bounds rlctl's own memory), and hands it to the library, which
 * validates it completely before storing anything.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rlctl.h"

#define MAX_RULES_FILE (128u << 20)

/* Reads FILE for apply; on failure prints the diagnostic and returns the
 * exit status: 3 if it does not exist, 4 if it is too large to be a rule
 * set, 2 if it cannot be read (a directory, no permission: the argument is
 * wrong, the rules are not), 5 out of memory. */
static int load_rules(rlctl_ctx *ctx, const char *file, char **yaml, size_t *len)
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

static const char *source_name(const char *file)
{
    return strcmp(file, "-") == 0 ? "<stdin>" : file;
}

/* Applies the rules read from file; prints the diagnostic on failure. */
static int apply_text(rlctl_ctx *ctx, const char *file, const char *yaml, size_t len,
                      const char *comment, int64_t *version)
{
    int rc = rls_rules_apply_at(ctx->db, yaml, len, source_name(file), comment, ctx->now_ms,
                                version);
    if (rc != RLS_OK) {
        char *fe = esc_dup(source_name(file));
        rc = fail_lib(ctx, rc, "cannot apply '%s'", fe ? fe : "?");
        free(fe);
        return rc;
    }
    return 0;
}

/*
 * Validates the rules before anything is created: applies them to a
 * database of its own in a private temporary directory (mode 0700, a name
 * nobody else knows), which it then removes.  The database init creates
 * or opens is never removed: another process may open it as soon as it is
 * there.  1 when the rules are valid or cannot be tried here (then the
 * apply itself validates them); 0 after printing the diagnostic, *rc the
 * exit status.
 */
static int rules_valid(rlctl_ctx *ctx, const char *file, const char *yaml, size_t len, int *rc)
{
    static const char *const names[] = {"check.db-wal", "check.db-shm", "check.db-ckpt",
                                        "check.db"};
    const char *base = getenv("TMPDIR");
    char dir[4096], path[4200];
    rls_options opt;
    rls_db *db = NULL;
    snprintf(dir, sizeof dir, "%s/rlctl-init-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/check.db", dir);
    rls_options_init(&opt);
    opt.tool = "rlctl";
    int lrc = rls_open(&db, path, &opt), valid = 1;
    if (lrc == RLS_OK) {
        lrc = rls_rules_apply_at(db, yaml, len, source_name(file), "rlctl init", ctx->now_ms,
                                 NULL);
        if (lrc == RLS_ECONFIG) {
            rls_db *mine = ctx->db;
            char *fe = esc_dup(source_name(file));
            ctx->db = db;   /* its message */
            *rc = fail_lib(ctx, lrc, "cannot apply '%s'", fe ? fe : "?");
            ctx->db = mine;
            free(fe);
            valid = 0;
        }
        rls_close(db);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);   /* private files in a private directory */
    }
    rmdir(dir);
    return valid;
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
    int rc, existed;

    if ((rc = db_check_target(ctx)) || (rc = creation_opts(ctx)))
        return rc;
    if (ctx->nargs == 1 && (rc = load_rules(ctx, ctx->args[0], &yaml, &len)))
        return rc;
    if (yaml && !rules_valid(ctx, ctx->args[0], yaml, len, &rc)) {
        free(yaml);
        return rc;
    }
    if ((rc = init_open(ctx, &existed))) {
        free(yaml);
        return rc;
    }
    if (yaml) {
        rc = apply_text(ctx, ctx->args[0], yaml, len, "rlctl init", &version);
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
        if (ctx->counters_path) {
            json_key("counters");
            json_str(ce);
        }
        json_key("created");
        json_bool(!existed);
        json_key("version");
        if (version)
            json_int(version);
        else
            json_null();
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        if (ctx->counters_path)
            printf("%s rules database '%s' with counters database '%s'",
                   existed ? "opened existing" : "created", pe ? pe : "?", ce ? ce : "?");
        else
            printf("%s rlstore database '%s'", existed ? "opened existing" : "created",
                   pe ? pe : "?");
        if (version)
            printf(", applied rules as version %lld", (long long)version);
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
    rls_rows *over = NULL, *vers = NULL;
    int64_t active_version = 0;
    int rc = load_rules(ctx, file, &yaml, &len);
    if (rc)
        return rc;
    int lrc = rls_rules_dry_run_at(ctx->db, yaml, len, source_name(file), ctx->now_ms, &over);
    if (lrc != RLS_OK) {
        char *fe = esc_dup(source_name(file));
        rc = fail_lib(ctx, lrc, "cannot apply '%s'", fe ? fe : "?");
        free(fe);
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
    if (active && rls_rules_versions(ctx->db, &vers) == RLS_OK)
        for (int r = 0; r < rls_rows_count(vers); r++)
            if (row_int(vers, r, "active"))
                active_version = row_int(vers, r, "version");
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
        json_bool(changes > 0);
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
    rls_rows_free(vers);
    return rc;
}

int cmd_apply(rlctl_ctx *ctx)
{
    char *yaml = NULL;
    size_t len = 0;
    int64_t version = 0;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if (opt_flag(ctx, "dry-run"))
        return dry_run(ctx, ctx->args[0]);
    if ((rc = load_rules(ctx, ctx->args[0], &yaml, &len)))
        return rc;
    rc = apply_text(ctx, ctx->args[0], yaml, len, opt_get(ctx, "comment"), &version);
    free(yaml);
    if (rc)
        return rc;
    char *fe = esc_dup(source_name(ctx->args[0]));
    if (ctx->json) {
        json_obj_begin();
        json_key("applied");
        json_str(fe);
        json_key("version");
        json_int(version);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("applied '%s' as version %lld\n", fe ? fe : "?", (long long)version);
    }
    free(fe);
    return 0;
}
