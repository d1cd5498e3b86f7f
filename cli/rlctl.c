/*
 * rlctl.c - entry point of rlctl: the command table, global options,
 * argument parsing, dispatch and the generated help.
 *
 * The table below is the single description of the command line: the
 * parser accepts exactly what it lists, `rlctl --help` prints it, and
 * tests/cli/test_man.sh checks docs/man/rlctl.1 against that help, so the
 * three cannot drift apart.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rlctl.h"

/* ---- the command table ------------------------------------------------ */

static const rlctl_opt global_opts[] = {
    {"db", "PATH", "database file or postgresql:// URI (default: $RLSTORE_DB, then ./rlstore.db)"},
    {"counters", "PATH", "split deployment: counters database; --db is the rules database"},
    {"shm-dir", "DIR", "folder of the memory-class table, as the applications' shm_dir (default: $RLSTORE_SHM_DIR, then /dev/shm)"},
    {"now", "TIME", "clock for every operation: epoch ms or ISO-8601 UTC"},
    {"json", NULL, "machine output: exactly one JSON object or array on stdout"},
    {"quiet", NULL, "print no confirmations and no check results"},
    {"help", NULL, "show this help; COMMAND --help shows a command's options"},
    {"version", NULL, "print the version of the library and exit"},
    {NULL, NULL, NULL},
};

static const rlctl_opt init_opts[] = {
    {"mode", "MODE", "octal mode of a new file, e.g. 0660 (default 0600; rules: never group-writable)"},
    {"group", "GROUP", "group (name or number) of new files, for a shared deployment"},
    {NULL, NULL, NULL},
};
static const rlctl_opt apply_opts[] = {
    {"dry-run", NULL, "store nothing: print the diff and the keys over a new limit"},
    {"check", NULL, "only validate FILE, without a database (as 'rlctl lint FILE')"},
    {"force", NULL, "store a new version even if the rules are the same as the active ones"},
    {"comment", "TEXT", "comment recorded with the new version"},
    {NULL, NULL, NULL},
};
static const rlctl_opt rollback_opts[] = {
    {"comment", "TEXT", "comment recorded with the new version"},
    {NULL, NULL, NULL},
};
static const rlctl_opt set_limit_opts[] = {
    {"tier", "TIER", "the limit of TIER (its replacement entry), not the action's default"},
    {"burst", NULL, "set the limit's burst: instead of its limit:"},
    {"if-version", "N", "only if version N is still the active one"},
    {"comment", "TEXT", "comment recorded with the new version"},
    {NULL, NULL, NULL},
};
static const rlctl_opt check_opts[] = {
    {"cost", "N", "units the request consumes (default 1)"},
    {"peek", NULL, "only tell whether it would pass: charge nothing"},
    {"syslog", NULL, "log each penalty block it imposes to syslog, one line per ban"},
    {NULL, NULL, NULL},
};
static const rlctl_opt refund_opts[] = {
    {"cost", "N", "units to give back (default 1)"},
    {NULL, NULL, NULL},
};
static const rlctl_opt reserve_opts[] = {
    {"cost", "N", "units to reserve (default 1)"},
    {"ttl", "DUR", "refund automatically unless committed within DUR (default 1m)"},
    {"syslog", NULL, "log each penalty block it imposes to syslog, one line per ban"},
    {NULL, NULL, NULL},
};
static const rlctl_opt usage_opts[] = {
    {"action", "ACTION", "only this action"},
    {"key", "SUBSTR", "only keys containing SUBSTR"},
    {"top", "N", "at most N rows (default 100)"},
    {"sort", "used|key|reset|denied", "order: most used first (default), by key, soonest reset, most denials"},
    {NULL, NULL, NULL},
};
static const rlctl_opt explain_opts[] = {
    {"audit", "N", "recent audit rows of the key to show (default 10, 0 for none)"},
    {NULL, NULL, NULL},
};
static const rlctl_opt block_opts[] = {
    {"action", "ACTION", "block only this action (default: every action)"},
    {"for", "DUR", "block for DUR (default: forever)"},
    {"reason", "TEXT", "reason recorded with the block"},
    {NULL, NULL, NULL},
};
static const rlctl_opt unblock_opts[] = {
    {"action", "ACTION", "the action of the block (default: the all-actions block)"},
    {"all", NULL, "remove every block (of --action only, if given): one audited change"},
    {"reason", "TEXT", "reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt tier_set_opts[] = {
    {"action", "ACTION", "only for this action (default: every action)"},
    {"for", "DUR", "expire after DUR (default: never)"},
    {"reason", "TEXT", "reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt tier_unset_opts[] = {
    {"action", "ACTION", "the action of the assignment (default: the every-action one)"},
    {"reason", "TEXT", "reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt for_opts[] = {
    {"for", "DUR", "expire after DUR (default: never)"},
    {"reason", "TEXT", "reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt reason_opts[] = {
    {"reason", "TEXT", "reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt reset_opts[] = {
    {"action", "ACTION", "without ACTION KEY: reset every key of ACTION (one audited change)"},
    {"reason", "TEXT", "reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt events_opts[] = {
    {"key", "KEY", "only events of this key (as stored: see 'rlctl blocks')"},
    {"action", "ACTION", "only events of this action"},
    {"event", "block|escalate|expire", "only events of this kind"},
    {"since", "TIME|DUR", "only events from TIME, or from DUR ago (e.g. 1h)"},
    {"limit", "N", "at most N rows, newest first (default 100)"},
    {"older-than", "DUR", "prune: delete the events older than DUR, e.g. 7d (required)"},
    {"reason", "TEXT", "prune: reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt metrics_opts[] = {
    {"output", "FILE", "write FILE atomically (temporary file, fsync, rename), not stdout"},
    {NULL, NULL, NULL},
};
static const rlctl_opt migrate_opts[] = {
    {"dry-run", NULL, "only say from which schema version to which, and what it would do"},
    {NULL, NULL, NULL},
};
static const rlctl_opt override_list_opts[] = {
    {"action", "ACTION", "only this action"},
    {"key", "KEY", "only this key"},
    {NULL, NULL, NULL},
};
static const rlctl_opt audit_opts[] = {
    {"limit", "N", "at most N rows, newest first (default 50)"},
    {"key", "KEY", "only changes of this key"},
    {"older-than", "DUR", "prune: delete the rows older than DUR, e.g. 400d (required)"},
    {"reason", "TEXT", "prune: reason recorded in the audit log"},
    {NULL, NULL, NULL},
};
static const rlctl_opt gc_opts[] = {
    {"rows", "N", "delete at most N expired rows (default 10000)"},
    {NULL, NULL, NULL},
};
static const rlctl_opt stats_opts[] = {
    {"seconds", "N", "recent window in seconds, 1..3600 (default 60)"},
    {"prometheus", NULL, "print totals in the Prometheus text exposition format"},
    {NULL, NULL, NULL},
};
static const rlctl_opt doctor_opts[] = {
    {"full", NULL, "also run the slow full integrity check"},
    {"fix", NULL, "remove the shared-memory tables of this database left by an earlier boot"},
    {NULL, NULL, NULL},
};

static const rlctl_opt copy_opts[] = {
    {"rules", NULL, "copy the active rule set (a new version unless the same)"},
    {"policy", NULL, "copy tier assignments, overrides and blocks made by operators"},
    {"counters", NULL, "copy the counters and the open reservations (same ids)"},
    {"from-counters", "PATH", "SRC is a split deployment: its counters database"},
    {"dry-run", NULL, "do and report everything, then store nothing"},
    {NULL, NULL, NULL},
};

static const rlctl_opt hold_opts[] = {
    {"for", "DUR", "stop after DUR (default: at SIGINT or SIGTERM)"},
    {"syslog", NULL, "log every penalty event of every process to syslog, one line each"},
    {NULL, NULL, NULL},
};

static const rlctl_cmd commands[] = {
    {"init", NULL, "[FILE]", 0, 1, init_opts, cmd_init, 0,
     "create the database (only init creates one), then apply FILE if given"},
    {"apply", NULL, "FILE", 1, 1, apply_opts, cmd_apply, 0,
     "apply the YAML rules in FILE ('-' for standard input) as a new version, unless unchanged"},
    {"lint", NULL, "FILE", 1, 1, NULL, cmd_lint, 1,
     "validate the YAML rules in FILE without a database; print every error"},
    {"export", NULL, "[VERSION]", 0, 1, NULL, cmd_export, 1,
     "print the YAML of the active rule set (or of VERSION) verbatim"},
    {"rules", NULL, "", 0, 0, NULL, cmd_rules, 1,
     "summarise the active rules: version, tiers, actions and their limits"},
    {"versions", NULL, "", 0, 0, NULL, cmd_versions, 1,
     "list every stored rule-set version, newest first"},
    {"rollback", NULL, "VERSION", 1, 1, rollback_opts, cmd_rollback, 0,
     "make an older version active again (stored as a new version)"},
    {"set-limit", NULL, "ACTION LIMITNAME VALUE", 3, 3, set_limit_opts, cmd_set_limit, 0,
     "change one limit written in the active rules in place (a new version)"},
    {"check", NULL, "ACTION KEY [ACTION KEY ...]", 2, 2 * RLS_BATCH_MAX, check_opts, cmd_check, 0,
     "check a request (or several, all or none) and charge it if every limit admits it"},
    {"refund", NULL, "ACTION KEY", 2, 2, refund_opts, cmd_refund, 0,
     "give units back to every limit of ACTION for KEY"},
    {"reserve", NULL, "ACTION KEY", 2, 2, reserve_opts, cmd_reserve, 0,
     "check and charge like check, pending commit or cancel; prints the id"},
    {"commit", NULL, "ID", 1, 1, NULL, cmd_commit, 0, "make a reservation's charge final"},
    {"cancel", NULL, "ID", 1, 1, NULL, cmd_cancel, 0, "cancel a reservation and refund it"},
    {"usage", NULL, "", 0, 0, usage_opts, cmd_usage, 1,
     "show the keys with counters and their most pressing limit"},
    {"explain", NULL, "ACTION KEY", 2, 2, explain_opts, cmd_explain, 1,
     "show everything that decides checks of ACTION for KEY, and its recent audit"},
    {"block", NULL, "KEY", 1, 1, block_opts, cmd_block, 0,
     "deny every request of KEY until the block ends"},
    {"unblock", NULL, "[KEY]", 0, 1, unblock_opts, cmd_unblock, 0,
     "remove a block (manual or penalty), or with --all every block"},
    {"blocks", NULL, "", 0, 0, NULL, cmd_blocks, 1, "list the active blocks"},
    {"tier", "set", "KEY TIER", 2, 2, tier_set_opts, cmd_tier_set, 0,
     "assign KEY (exact, CIDR or prefix glob such as user:*) to TIER"},
    {"tier", "unset", "KEY", 1, 1, tier_unset_opts, cmd_tier_unset, 0,
     "remove the tier assignment of KEY"},
    {"tier", "list", "", 0, 0, NULL, cmd_tier_list, 1, "list the tier assignments in force"},
    {"override", "set", "ACTION KEY LIMITNAME LIMIT", 4, 4, for_opts, cmd_override_set, 0,
     "replace the capacity of one limit of ACTION for KEY"},
    {"override", "unset", "ACTION KEY LIMITNAME", 3, 3, reason_opts, cmd_override_unset, 0,
     "remove an override"},
    {"override", "list", "", 0, 0, override_list_opts, cmd_override_list, 1,
     "list the overrides in force"},
    {"reset", NULL, "[ACTION KEY]", 0, 2, reset_opts, cmd_reset, 0,
     "forget the counters of ACTION for KEY (or of every key: --action): it starts fresh"},
    {"audit", NULL, "[prune]", 0, 1, audit_opts, cmd_audit, 1,
     "show the audit log of admin changes; prune: delete rows older than --older-than (audited)"},
    {"events", NULL, "[prune]", 0, 1, events_opts, cmd_events, 1,
     "list penalty blocks imposed, escalated and ended, newest first; prune: delete old ones"},
    {"gc", NULL, "", 0, 0, gc_opts, cmd_gc, 0,
     "run one step of garbage collection of expired state"},
    {"stats", NULL, "", 0, 0, stats_opts, cmd_stats, 1,
     "show admitted and denied checks per action"},
    {"doctor", NULL, "", 0, 0, doctor_opts, cmd_doctor, 1,
     "check the health of the database"},
    {"copy-from", NULL, "SRC", 1, 1, copy_opts, cmd_copy_from, 0,
     "copy rules, operator entries and counters of the database SRC (without a selector: all)"},
    {"metrics", NULL, "", 0, 0, metrics_opts, cmd_metrics, 1,
     "print (or write atomically) the node_exporter textfile of the database's metrics"},
    {"migrate", NULL, "", 0, 0, migrate_opts, cmd_migrate, 0,
     "upgrade the database's schema to this library's, once, on purpose"},
    {"hold", NULL, "", 0, 0, hold_opts, cmd_hold, 0,
     "keep the database open until interrupted: split deployments check faster"},
    {"help", NULL, "[COMMAND]", 0, 2, NULL, cmd_help, 1, "show the help of rlctl or of a command"},
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const char *const env_help[][2] = {
    {"RLSTORE_DB", "database file when --db is not given"},
    {"RLSTORE_COUNTERS", "counters database when --counters is not given"},
    {"RLSTORE_SHM_DIR", "folder of the memory-class table when --shm-dir is not given"},
    {"RLSTORE_SYSLOG", "syslog socket of --syslog (default /dev/log)"},
};

/* ---- help ------------------------------------------------------------- */

static int nopts(const rlctl_opt *o)
{
    int n = 0;
    while (o && o[n].name)
        n++;
    return n;
}

/* "tier set KEY TIER [--for DUR]" */
static void synopsis(FILE *f, const rlctl_cmd *c)
{
    fputs(c->name, f);
    if (c->sub)
        fprintf(f, " %s", c->sub);
    if (c->args[0])
        fprintf(f, " %s", c->args);
    for (int i = 0; i < nopts(c->opts); i++) {
        if (c->opts[i].arg)
            fprintf(f, " [--%s %s]", c->opts[i].name, c->opts[i].arg);
        else
            fprintf(f, " [--%s]", c->opts[i].name);
    }
}

static void print_opts(FILE *f, const rlctl_opt *o)
{
    for (int i = 0; i < nopts(o); i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o[i].name, o[i].arg ? " " : "",
                 o[i].arg ? o[i].arg : "");
        fprintf(f, "  %-22s %s\n", left, o[i].help);
    }
}

static void print_help(FILE *f)
{
    fputs("usage: rlctl [GLOBAL OPTIONS] COMMAND [ARGS] [OPTIONS]\n\n"
          "rlctl administers an rlstore rate-limit database: rules, checks,\n"
          "reservations, per-key policy, usage, audit log and health.\n\n"
          "Global options (before or after the command):\n", f);
    print_opts(f, global_opts);
    fputs("\nCommands:\n", f);
    for (int i = 0; i < NCOMMANDS; i++) {
        fputs("  ", f);
        synopsis(f, &commands[i]);
        fprintf(f, "\n      %s\n", commands[i].summary);
    }
    fputs("\nDurations are like 250ms, 10s, 1h30m, 1d, 1w, 1mo; times are epoch\n"
          "milliseconds or ISO-8601 UTC such as 2026-11-21T10:00:00.250Z.\n"
          "Tables are aligned on a terminal and tab-separated without a header\n"
          "otherwise.\n\nExit status:\n", f);
#define RLCTL__EXIT_HELP(name, code, text) fprintf(f, "  %d  %s\n", code, text);
    RLCTL_EXIT_MAP(RLCTL__EXIT_HELP)
#undef RLCTL__EXIT_HELP
    fputs("\nEnvironment:\n", f);
    for (size_t i = 0; i < sizeof env_help / sizeof env_help[0]; i++)
        fprintf(f, "  %-18s %s\n", env_help[i][0], env_help[i][1]);
    fputs("\nSee rlctl(1) for details.\n", f);
}

static void print_cmd_help(FILE *f, const rlctl_cmd *c)
{
    fputs("usage: rlctl ", f);
    synopsis(f, c);
    fprintf(f, "\n\n%s\n", c->summary);
    if (nopts(c->opts)) {
        fputs("\nOptions:\n", f);
        print_opts(f, c->opts);
    }
    fputs("\nGlobal options: --db PATH, --counters PATH, --now TIME, --json, --quiet, --help,\n"
          "--version\n", f);
}

static const rlctl_cmd *find_cmd(const char *name, const char *sub, int *has_subs)
{
    *has_subs = 0;
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, name) != 0)
            continue;
        if (!commands[i].sub)
            return &commands[i];
        *has_subs = 1;
        if (sub && strcmp(commands[i].sub, sub) == 0)
            return &commands[i];
    }
    return NULL;
}

/* "set, unset, list" for a command with subcommands. */
static void sub_list(const char *name, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < NCOMMANDS && n < size; i++)
        if (commands[i].sub && strcmp(commands[i].name, name) == 0)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", commands[i].sub);
}

/* "'chek' is not an rlctl command; did you mean 'check'?" (exit 2). */
static int unknown_cmd(rlctl_ctx *ctx, const char *name)
{
    const char *names[NCOMMANDS];
    for (int i = 0; i < NCOMMANDS; i++)
        names[i] = i && strcmp(commands[i].name, commands[i - 1].name) == 0 ? NULL
                                                                          : commands[i].name;
    const char *near = suggest(name, names, NCOMMANDS);
    if (near)
        return fail_usage(ctx, "'%s' is not an rlctl command; did you mean '%s'? see "
                          "'rlctl --help'", name, near);
    return fail_usage(ctx, "'%s' is not an rlctl command; see 'rlctl --help'", name);
}

static int unknown_sub(rlctl_ctx *ctx, const char *name, const char *sub, const char *subs)
{
    const char *names[NCOMMANDS];
    int n = 0;
    for (int i = 0; i < NCOMMANDS; i++)
        if (commands[i].sub && strcmp(commands[i].name, name) == 0)
            names[n++] = commands[i].sub;
    const char *near = suggest(sub, names, n);
    if (near)
        return fail_usage(ctx, "'%s %s' is not an rlctl command; did you mean '%s %s'?", name,
                          sub, name, near);
    return fail_usage(ctx, "'%s %s' is not an rlctl command; '%s' takes %s", name, sub, name,
                      subs);
}

/* help --json: the command table itself, for completions and wrappers. */
static void json_opts(const rlctl_opt *o)
{
    json_arr_begin();
    for (int i = 0; i < nopts(o); i++) {
        json_obj_begin();
        json_key("name");
        json_str(o[i].name);
        json_key("arg");
        json_str(o[i].arg);
        json_key("help");
        json_str(o[i].help);
        json_obj_end();
    }
    json_arr_end();
}

static void json_cmd(const rlctl_cmd *c)
{
    json_obj_begin();
    json_key("name");
    json_str(c->name);
    json_key("sub");
    json_str(c->sub);
    json_key("args");
    json_opt_str(c->args);
    json_key("summary");
    json_str(c->summary);
    json_key("options");
    json_opts(c->opts);
    json_obj_end();
}

static int help_json(const char *name, const char *sub)
{
    json_obj_begin();
    json_key("commands");
    json_arr_begin();
    for (int i = 0; i < NCOMMANDS; i++)
        if (!name || (strcmp(commands[i].name, name) == 0 &&
                      (!sub || (commands[i].sub && strcmp(commands[i].sub, sub) == 0))))
            json_cmd(&commands[i]);
    json_arr_end();
    json_key("global_options");
    json_opts(global_opts);
    json_key("exit_codes");
    json_arr_begin();
#define RLCTL__EXIT_JSON(name, code, text) \
    json_obj_begin(), json_key("code"), json_int(code), json_key("name"), json_str(#name), \
        json_key("meaning"), json_str(text), json_obj_end();
    RLCTL_EXIT_MAP(RLCTL__EXIT_JSON)
#undef RLCTL__EXIT_JSON
    json_arr_end();
    json_obj_end();
    json_end_line();
    return 0;
}

int cmd_help(rlctl_ctx *ctx)
{
    int has_subs;
    if (ctx->nargs == 0) {
        if (ctx->json)
            return help_json(NULL, NULL);
        print_help(stdout);
        return 0;
    }
    const rlctl_cmd *c = find_cmd(ctx->args[0], ctx->nargs > 1 ? ctx->args[1] : NULL, &has_subs);
    if (c && ctx->json)
        return help_json(c->name, c->sub);
    if (!c && has_subs && ctx->nargs == 1 && ctx->json)
        return help_json(ctx->args[0], NULL);
    if (!c && has_subs && ctx->nargs == 1) {
        for (int i = 0; i < NCOMMANDS; i++)
            if (strcmp(commands[i].name, ctx->args[0]) == 0)
                print_cmd_help(stdout, &commands[i]), fputc('\n', stdout);
        return 0;
    }
    if (!c)
        return unknown_cmd(ctx, ctx->args[0]);
    print_cmd_help(stdout, c);
    return 0;
}

/* ---- option access ------------------------------------------------------ */

static int opt_index(const rlctl_cmd *c, const char *name)
{
    for (int i = 0; i < nopts(c->opts); i++)
        if (strcmp(c->opts[i].name, name) == 0)
            return i;
    return -1;
}

const char *opt_get(const rlctl_ctx *ctx, const char *name)
{
    int i = opt_index(ctx->cmd, name);
    return i < 0 ? NULL : ctx->optv[i];
}

int opt_flag(const rlctl_ctx *ctx, const char *name)
{
    return opt_get(ctx, name) != NULL;
}

/* Strict decimal int64: optional '-', digits only, no overflow. */
static int parse_int64(const char *s, int64_t *out)
{
    char *end;
    if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int opt_int(rlctl_ctx *ctx, const char *name, int64_t def, int64_t min, int64_t max,
            int64_t *out)
{
    const char *v = opt_get(ctx, name);
    int64_t n;
    *out = def;
    if (!v)
        return 0;
    if (parse_int64(v, &n) != 0 || n < min || n > max)
        return fail_usage(ctx, "invalid value for --%s: '%s' (expected an integer from %lld to %lld)",
                          name, v, (long long)min, (long long)max);
    *out = n;
    return 0;
}

int opt_duration(rlctl_ctx *ctx, const char *name, int64_t *ms, int *set)
{
    const char *v = opt_get(ctx, name);
    *set = 0;
    *ms = 0;
    if (!v)
        return 0;
    if (rls_duration_parse(v, ms) != RLS_OK || *ms <= 0)
        return fail_usage(ctx, "invalid duration for --%s: '%s' (expected e.g. 90s, 10m, 1h30m, 1d)",
                          name, v);
    *set = 1;
    return 0;
}

int arg_int(rlctl_ctx *ctx, int idx, const char *what, int64_t min, int64_t max, int64_t *out)
{
    const char *v = ctx->args[idx];
    if (parse_int64(v, out) != 0 || *out < min || *out > max)
        return fail_usage(ctx, "invalid %s: '%s' (expected an integer from %lld to %lld)", what, v,
                          (long long)min, (long long)max);
    return 0;
}

/* ---- parsing -------------------------------------------------------------- */

typedef struct flags {
    int help, version;
} flags;

static const rlctl_opt *find_opt(const rlctl_opt *o, const char *name, size_t len)
{
    for (int i = 0; i < nopts(o); i++)
        if (strlen(o[i].name) == len && strncmp(o[i].name, name, len) == 0)
            return &o[i];
    return NULL;
}

static int set_global(rlctl_ctx *ctx, flags *fl, const char *name, const char *val)
{
    if (strcmp(name, "db") == 0) {
        if (!*val)
            return fail_usage(ctx, "invalid value for --db: the path is empty");
        ctx->db_path = val;
    } else if (strcmp(name, "counters") == 0) {
        if (!*val)
            return fail_usage(ctx, "invalid value for --counters: the path is empty");
        ctx->counters_path = val;
        ctx->counters_env = 0;
    } else if (strcmp(name, "shm-dir") == 0) {
        if (!*val)
            return fail_usage(ctx, "invalid value for --shm-dir: the path is empty");
        ctx->shm_dir = val;
    } else if (strcmp(name, "now") == 0) {
        if (rls_time_parse(val, &ctx->now_ms) != RLS_OK)
            return fail_usage(ctx, "invalid time for --now: '%s' (expected epoch ms or "
                              "ISO-8601 UTC such as 2026-11-21T10:00:00.250Z)", val);
    } else if (strcmp(name, "json") == 0) {
        ctx->json = 1;
    } else if (strcmp(name, "quiet") == 0) {
        ctx->quiet = 1;
    } else if (strcmp(name, "help") == 0) {
        fl->help = 1;
    } else if (strcmp(name, "version") == 0) {
        fl->version = 1;
    }
    return 0;
}

/* "unknown option '--dry-rn' for 'apply'; did you mean '--dry-run'?" */
static int unknown_opt(rlctl_ctx *ctx, const rlctl_cmd *c, const char *a, size_t len)
{
    const char *names[RLCTL_MAX_OPTS + 8];
    char word[64];
    int n = 0;
    for (int i = 0; c && i < nopts(c->opts) && n < RLCTL_MAX_OPTS; i++)
        names[n++] = c->opts[i].name;
    for (int i = 0; i < nopts(global_opts) && n < RLCTL_MAX_OPTS + 8; i++)
        names[n++] = global_opts[i].name;
    snprintf(word, sizeof word, "%.*s", len > 2 ? (int)(len - 2) : 0, len > 2 ? a + 2 : "");
    const char *near = a[1] == '-' ? suggest(word, names, n) : NULL;
    char hint[96] = "";
    if (near)
        snprintf(hint, sizeof hint, "did you mean '--%s'? ", near);
    if (c)
        return fail_usage(ctx, "unknown option '%.*s' for '%s%s%s'; %ssee 'rlctl %s%s%s --help'",
                          (int)len, a, c->name, c->sub ? " " : "", c->sub ? c->sub : "", hint,
                          c->name, c->sub ? " " : "", c->sub ? c->sub : "");
    return fail_usage(ctx, "unknown option '%.*s'; %ssee 'rlctl --help'", (int)len, a, hint);
}

/*
 * Parses argv[*i] if it is an option of `c` (NULL: globals only) or a global
 * one, consuming its value.  Returns 0 and advances *i, or an exit status.
 * A command's own option would win over a global of the same name.
 */
static int parse_opt(rlctl_ctx *ctx, flags *fl, const rlctl_cmd *c, int argc, char **argv,
                     int *i)
{
    const char *a = argv[*i];
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const rlctl_opt *o = NULL;
    int global = 0;

    if (strcmp(a, "-h") == 0) {
        fl->help = 1;
        (*i)++;
        return 0;
    }
    if (a[1] == '-' && c)
        o = find_opt(c->opts, name, len);
    if (!o && a[1] == '-') {
        o = find_opt(global_opts, name, len);
        global = o != NULL;
    }
    if (!o)
        return unknown_opt(ctx, c, a, eq ? (size_t)(eq - a) : strlen(a));
    const char *val = "";
    if (o->arg) {
        if (eq) {
            val = eq + 1;
        } else if (*i + 1 < argc) {
            val = argv[++*i];
        } else {
            return fail_usage(ctx, "option '--%s' needs a value (%s)", o->name, o->arg);
        }
    } else if (eq) {
        return fail_usage(ctx, "option '--%s' takes no value", o->name);
    }
    (*i)++;
    if (global)
        return set_global(ctx, fl, o->name, val);
    ctx->optv[o - c->opts] = val;
    return 0;
}

static int is_option(const char *a)
{
    return (a[0] == '-' && a[1] == '-' && a[2]) || strcmp(a, "-h") == 0;
}

static int64_t real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int run(rlctl_ctx *ctx, int argc, char **argv)
{
    flags fl = {0, 0};
    int i = 1, rc, has_subs;
    const char *env = getenv("RLSTORE_DB");

    ctx->db_path = env && *env ? env : "./rlstore.db";
    env = getenv("RLSTORE_COUNTERS");
    ctx->counters_path = env && *env ? env : NULL;
    ctx->counters_env = ctx->counters_path != NULL;
    env = getenv("RLSTORE_SHM_DIR");
    ctx->shm_dir = env && *env ? env : NULL;
    ctx->now_ms = real_now();
    ctx->tty = isatty(STDOUT_FILENO);
    for (int k = 1; k < argc && strcmp(argv[k], "--") != 0; k++)
        if (strcmp(argv[k], "--json") == 0)
            ctx->json = 1;  /* known early, so even usage errors are JSON */

    while (i < argc && is_option(argv[i]))
        if ((rc = parse_opt(ctx, &fl, NULL, argc, argv, &i)))
            return rc;
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    if (i >= argc) {
        if (fl.version) {
            printf("rlctl %s\n", rls_version_string());
            return 0;
        }
        if (fl.help) {
            print_help(stdout);
            return 0;
        }
        return fail_usage(ctx, "no command given; see 'rlctl --help'");
    }
    const char *name = argv[i++];
    const rlctl_cmd *c = find_cmd(name, i < argc ? argv[i] : NULL, &has_subs);
    if (!c && has_subs) {
        char subs[128];
        sub_list(name, subs, sizeof subs);
        if (fl.help || (i < argc && is_option(argv[i]) && strcmp(argv[i], "--help") == 0)) {
            ctx->args[0] = name;
            ctx->nargs = 1;
            return cmd_help(ctx);
        }
        if (i < argc)
            return unknown_sub(ctx, name, argv[i], subs);
        return fail_usage(ctx, "'%s' needs a subcommand: %s", name, subs);
    }
    if (!c)
        return unknown_cmd(ctx, name);
    if (c->sub)
        i++;
    ctx->cmd = c;

    int dashdash = 0;
    while (i < argc) {
        if (!dashdash && strcmp(argv[i], "--") == 0) {
            dashdash = 1;
            i++;
        } else if (!dashdash && is_option(argv[i])) {
            if ((rc = parse_opt(ctx, &fl, c, argc, argv, &i)))
                return rc;
        } else {
            if (ctx->nargs >= RLCTL_MAX_ARGS || ctx->nargs >= c->max_args) {
                if (fl.help)
                    break;
                return fail_usage(ctx, "unexpected argument '%s'; usage: rlctl %s%s%s %s", argv[i],
                                  c->name, c->sub ? " " : "", c->sub ? c->sub : "", c->args);
            }
            ctx->args[ctx->nargs++] = argv[i++];
        }
    }
    if (fl.help) {
        print_cmd_help(stdout, c);
        return 0;
    }
    if (fl.version) {
        printf("rlctl %s\n", rls_version_string());
        return 0;
    }
    if (ctx->nargs < c->min_args)
        return fail_usage(ctx, "'%s%s%s' needs %s; see 'rlctl %s%s%s --help'", c->name,
                          c->sub ? " " : "", c->sub ? c->sub : "", c->args, c->name,
                          c->sub ? " " : "", c->sub ? c->sub : "");
    return c->fn(ctx);
}

int main(int argc, char **argv)
{
    rlctl_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    int rc = run(&ctx, argc, argv);
    rls_close(ctx.db);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "rlctl: cannot write output: %s\n", strerror(errno));
        if (rc == 0 || rc == RLCTL_EXIT_DENIED)
            rc = RLCTL_EXIT_STORAGE;
    }
    return rc;
}
