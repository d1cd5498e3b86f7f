/*
 * cmd_migrate.c - `rlctl migrate [--dry-run]`: the explicit schema upgrade
 * (issue #20).  Applications opened with rls_options.no_upgrade never
 * migrate; an operator runs this once when every host's library knows the
 * new schema, so that a rolling deploy across PostgreSQL hosts upgrades
 * once, on purpose.  --dry-run says from which version to which and what
 * the upgrade does, and changes nothing.
 *
 * On a terminal (stderr a tty) the upgrade shows what it is doing and how
 * long it took; in scripts it prints only its result.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rlctl.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void result_json(const char *db, int64_t from, int64_t to, int dry, int done)
{
    json_obj_begin();
    json_key("database");
    json_str(db);
    json_key("from");
    json_int(from);
    json_key("to");
    json_int(to);
    json_key("upgrade_needed");
    json_bool(from < to);
    json_key("dry_run");
    json_bool(dry);
    json_key("upgraded");
    json_bool(done);
    json_obj_end();
    json_end_line();
}

int cmd_migrate(rlctl_ctx *ctx)
{
    rls_options opt;
    int64_t from = -1, to = -1;
    int dry = opt_flag(ctx, "dry-run"), rc;
    if ((rc = db_check_target(ctx)))
        return rc;
    rls_options_init(&opt);
    opt.tool = "rlctl";
    opt.max_key_len = RLS_KEY_MAX_LIMIT;
    opt.counters_path = ctx->counters_path;
    char *name = db_name(ctx->db_path);
    /* first only ask: the versions, for the dry run and for the terminal */
    rc = rls_migrate(ctx->db_path, &opt, 1, &from, &to);
    if (rc != RLS_OK) {
        const char *d = rls_errmsg(NULL);
        rc = fail_code(ctx, rc == RLS_ECANTOPEN || rc == RLS_ENOTFOUND ? RLCTL_EXIT_NOTFOUND
                                                                        : exit_for(rc),
                       rls_errname(rc), "cannot read the schema of '%s': %s", name ? name : "?",
                       d && *d ? d : rls_strerror(rc));
        free(name);
        return rc;
    }
    int tty = isatty(STDERR_FILENO);
    if (dry || from >= to) {
        if (ctx->json)
            result_json(name, from, to, dry, 0);
        else if (from >= to)
            printf("'%s' is at schema version %lld, the version this library needs: nothing "
                   "to do\n", name ? name : "?", (long long)from);
        else
            printf("'%s' has schema version %lld; this library needs %lld.\n'rlctl migrate' "
                   "would apply the migrations %lld to %lld in one transaction (new tables "
                   "and indexes, existing rows kept), during which checks wait, and after "
                   "which libraries older than schema %lld refuse the database (ENEWER)\n",
                   name ? name : "?", (long long)from, (long long)to, (long long)from + 1,
                   (long long)to, (long long)to);
        free(name);
        return 0;
    }
    double t0 = mono_s();
    if (tty && !ctx->quiet)
        fprintf(stderr, "migrating '%s' from schema %lld to %lld ...\n", name ? name : "?",
                (long long)from, (long long)to);
    rc = rls_migrate(ctx->db_path, &opt, 0, &from, &to);
    if (rc != RLS_OK) {
        const char *d = rls_errmsg(NULL);
        rc = fail_code(ctx, exit_for(rc), rls_errname(rc), "cannot migrate '%s': %s",
                       name ? name : "?", d && *d ? d : rls_strerror(rc));
        free(name);
        return rc;
    }
    if (tty && !ctx->quiet)
        fprintf(stderr, "migrated in %.1f s\n", mono_s() - t0);
    if (ctx->json)
        result_json(name, from, to, 0, 1);
    else if (!ctx->quiet)
        printf("migrated '%s' from schema version %lld to %lld\n", name ? name : "?",
               (long long)from, (long long)to);
    free(name);
    return 0;
}
