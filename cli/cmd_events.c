/*
 * cmd_events.c - `rlctl events`: the penalty blocks imposed, escalated and
 * ended (issue #20), newest first, filtered by key, action, event and
 * time; `rlctl events prune` and `rlctl audit prune` keep the event and
 * audit logs bounded (GC already drops events after 30 days).
 *
 * JSON is typed as rlctl(1)'s JSON OUTPUT says: integers as numbers,
 * times as NAME_ms and NAME_at (ISO-8601 UTC), a block without end null.
 */
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

static void events_json(const rls_rows *r)
{
    json_arr_begin();
    for (int i = 0; i < rls_rows_count(r); i++) {
        json_obj_begin();
        json_key("id");
        json_int(row_int(r, i, "id"));
        json_time("time", row_int(r, i, "ts_ms"));
        json_key("event");
        json_str(row_text(r, i, "event"));
        json_key("action");
        json_str(row_text(r, i, "action"));
        json_key("key");
        json_key_str(row_text(r, i, "key"));
        json_key("rule");
        json_opt_str(row_text(r, i, "rule"));
        json_key("level");
        json_int(row_int(r, i, "level"));
        json_time("until", row_int(r, i, "until_ms"));
        json_obj_end();
    }
    json_arr_end();
    json_end_line();
}

static const col_spec event_cols[] = {
    {"ts_ms", "TIME", COL_TIME},
    {"event", "EVENT", COL_TEXT},
    {"action", "ACTION", COL_ACTION},
    {"key", "KEY", COL_TEXT},
    {"rule", "RULE", COL_TEXT},
    {"level", ">LEVEL", COL_INT},
    {"until_ms", "UNTIL", COL_UNTIL},
};

/* --since TIME (epoch ms or ISO-8601) or DUR (that long before now). */
static int opt_since(rlctl_ctx *ctx, int64_t *since)
{
    const char *v = opt_get(ctx, "since");
    int64_t ms;
    *since = 0;
    if (!v)
        return 0;
    if (rls_duration_parse(v, &ms) == RLS_OK && ms > 0) {
        *since = ctx->now_ms > ms ? ctx->now_ms - ms : 0;
        return 0;
    }
    if (rls_time_parse(v, since) == RLS_OK)
        return 0;
    return fail_usage(ctx, "invalid value for --since: '%s' (expected a duration such as 1h "
                      "or a time such as 2026-11-21T10:00:00Z)", v);
}

int cmd_events(rlctl_ctx *ctx)
{
    static const char *const kinds[] = {"block", "escalate", "expire"};
    rls_rows *rows = NULL;
    int64_t limit, since;
    const char *ev = opt_get(ctx, "event");
    int handled, rc = prune_args(ctx, 0, &handled);
    if (handled)
        return rc;
    rc = opt_int(ctx, "limit", 100, 1, 100000, &limit);
    if (rc || (rc = opt_since(ctx, &since)))
        return rc;
    if (ev && strcmp(ev, kinds[0]) && strcmp(ev, kinds[1]) && strcmp(ev, kinds[2]))
        return fail_usage(ctx, "invalid value for --event: '%s' (expected block, escalate or "
                          "expire)", ev);
    if ((rc = db_open(ctx, 0)))
        return rc;
    rc = rls_events_list_at(ctx->db, opt_get(ctx, "action"), opt_get(ctx, "key"), ev, since,
                            (int)limit, &rows);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot read the events");
    if (ctx->json)
        events_json(rows);
    else
        print_rows_table(ctx, rows, event_cols, (int)(sizeof event_cols / sizeof event_cols[0]));
    rls_rows_free(rows);
    return 0;
}

/* `events prune` and `audit prune`: rows older than --older-than DUR. */
static int prune(rlctl_ctx *ctx, int audit)
{
    int64_t dur, deleted = 0;
    int set, rc = opt_duration(ctx, "older-than", &dur, &set);
    if (rc)
        return rc;
    if (!set)
        return fail_usage(ctx, "'%s prune' needs --older-than DUR, e.g. --older-than 90d",
                          audit ? "audit" : "events");
    if ((rc = db_open(ctx, 0)))
        return rc;
    int64_t before = ctx->now_ms > dur ? ctx->now_ms - dur : 0;
    rc = audit ? rls_audit_prune_at(ctx->db, before, ctx->now_ms, &deleted)
               : rls_events_prune_at(ctx->db, before, ctx->now_ms, &deleted);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot prune the %s", audit ? "audit log" : "events");
    if (ctx->json) {
        json_obj_begin();
        json_key("deleted");
        json_int(deleted);
        json_time("before", before);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        char buf[64];
        printf("deleted %lld %s older than %s\n", (long long)deleted,
               audit ? "audit row(s)" : "event(s)", fmt_time(before, NULL, buf, sizeof buf));
    }
    return 0;
}

int prune_args(rlctl_ctx *ctx, int audit, int *handled)
{
    const char *cmd = audit ? "audit" : "events";
    *handled = 1;
    if (ctx->nargs == 1 && strcmp(ctx->args[0], "prune") == 0)
        return prune(ctx, audit);
    if (ctx->nargs == 1)
        return fail_usage(ctx, "'%s %s' is not an rlctl command; '%s' takes only 'prune'", cmd,
                          ctx->args[0], cmd);
    if (opt_get(ctx, "older-than") || opt_get(ctx, "reason"))
        return fail_usage(ctx, "--older-than and --reason are for '%s prune'", cmd);
    *handled = 0;
    return 0;
}
