/*
 * cmd_check.c - requests: check, refund, reserve, commit, cancel.
 *
 * check prints the decision with the state of every limit of the action
 * after it (rls_explain_at at the same instant, charging nothing), and
 * exits 1 when the request is denied.  reserve prints only the id when
 * admitted, so `id=$(rlctl reserve signup "$ip")` works in a script.
 */
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

/* The fields of a check's result in JSON, shared by one check and each
 * item of a batch: allowed, action, key, the figures, rule, reason. */
static void json_result_fields(const char *action, const char *key, const rls_result *res)
{
    json_key("allowed");
    json_bool(res->allowed);
    json_key("action");
    json_str(action);
    json_key("key");
    json_key_str(key);
    json_key("limit");
    json_int(res->limit);
    json_key("remaining");
    json_int(res->remaining);
    json_key("reset_ms");
    json_int(res->reset_ms);
    json_key("retry_after_ms");
    json_int(res->retry_after_ms);
    json_key("delay_ms");
    json_int(res->delay_ms);
    json_key("window_ms");
    json_int(res->window_ms);
    json_key("rule");
    json_opt_str(res->rule);
    json_key("reason");
    json_str(rls_reason_name(res->reason));
}

static const col_spec state_cols[] = {
    {"name", "LIMIT", COL_TEXT},
    {"algorithm", "ALGORITHM", COL_TEXT},
    {"used", ">USED", COL_INT},
    {"limit", ">CAPACITY", COL_INT},
    {"remaining", ">REMAINING", COL_INT},
    {"reset_ms", ">RESET", COL_DUR},
    {"retry_after_ms", ">RETRY", COL_DUR},
    {"allowed", "NEXT", COL_BOOL},
    {"mode", "MODE", COL_TEXT},
};

static void kv(out_table *t, const char *k, const char *v)
{
    tab_row(t);
    tab_set(t, 0, k);
    tab_set_esc(t, 1, v);
}

int print_check_result(rlctl_ctx *ctx, const char *action, const char *key,
                       const rls_result *res, int have_id, int64_t id)
{
    rls_rows *info = NULL, *limits = NULL;
    const char *nkey = key;
    char buf[64];
    int rc = 0;

    if (ctx->quiet && !ctx->json)
        return 0;
    if (rls_explain_at(ctx->db, action, key, ctx->now_ms, &info, &limits) != RLS_OK) {
        info = limits = NULL;    /* the decision stands without the details */
    } else if (row_text(info, 0, "key")) {
        nkey = row_text(info, 0, "key");
    }
    if (ctx->json) {
        json_obj_begin();
        json_result_fields(action, nkey, res);
        if (have_id) {
            json_key("id");
            if (id > 0)
                json_int(id);
            else
                json_null();
        }
        json_key("limits");
        json_rows(limits);
        json_obj_end();
        json_end_line();
    } else {
        static const char *const h[] = {"FIELD", "VALUE"};
        out_table *t = tab_new(2, h);
        kv(t, "result", res->allowed ? "allowed" : "denied");
        kv(t, "action", action);
        tab_row(t);
        tab_set(t, 0, "key");
        tab_set_esc(t, 1, nkey);
        tab_row(t);
        tab_set(t, 0, "rule");
        tab_set_esc(t, 1, res->rule[0] ? res->rule : "-");
        kv(t, "reason", rls_reason_name(res->reason));
        tab_row(t);
        tab_set(t, 0, "limit");
        tab_setf(t, 1, "%lld", (long long)res->limit);
        tab_row(t);
        tab_set(t, 0, "remaining");
        tab_setf(t, 1, "%lld", (long long)res->remaining);
        kv(t, "reset_ms", fmt_dur_cell(ctx, res->reset_ms, buf, sizeof buf));
        kv(t, "retry_after_ms", fmt_dur_cell(ctx, res->retry_after_ms, buf, sizeof buf));
        kv(t, "delay_ms", fmt_dur_cell(ctx, res->delay_ms, buf, sizeof buf));
        if (have_id && id > 0) {
            tab_row(t);
            tab_set(t, 0, "id");
            tab_setf(t, 1, "%lld", (long long)id);
        }
        tab_print(t, ctx->tty);
        rc = tab_failed(t);
        tab_free(t);
        if (ctx->tty && limits && rls_rows_count(limits) > 0) {
            putchar('\n');
            print_rows_table(ctx, limits, state_cols,
                             (int)(sizeof state_cols / sizeof state_cols[0]));
        }
    }
    rls_rows_free(info);
    rls_rows_free(limits);
    return rc ? fail_code(ctx, rc, "ENOMEM", "out of memory") : 0;
}

/* "'signup' for '203.0.113.7'" with the key escaped. */
static void subject(const rlctl_ctx *ctx, char *buf, size_t size)
{
    char *a = esc_dup(ctx->args[0]), *k = esc_dup(ctx->args[1]);
    snprintf(buf, size, "'%s' for '%s'", a ? a : "?", k ? k : "?");
    free(a);
    free(k);
}

/* One item of a batch in the JSON object of `check` with several pairs. */
static void json_item(const char *action, const char *key, const rls_result *res)
{
    json_obj_begin();
    json_result_fields(action, key, res);
    json_obj_end();
}

/* The batch's decision: one row (or JSON object) per item. */
static int print_batch(rlctl_ctx *ctx, const rls_item *items, int n, const rls_result *res,
                       int allowed)
{
    static const char *const h[] = {"ACTION", "KEY", "RESULT", "REASON", "RULE", ">REMAINING",
                                    ">RETRY"};
    char buf[64];
    int rc;
    if (ctx->json) {
        json_obj_begin();
        json_key("allowed");
        json_bool(allowed);
        json_key("items");
        json_arr_begin();
        for (int i = 0; i < n; i++)
            json_item(items[i].action, items[i].key, &res[i]);
        json_arr_end();
        json_obj_end();
        json_end_line();
        return 0;
    }
    if (ctx->quiet)
        return 0;
    out_table *t = tab_new(7, h);
    for (int i = 0; i < n; i++) {
        tab_row(t);
        tab_set_esc(t, 0, items[i].action);
        tab_set_esc(t, 1, items[i].key);
        tab_set(t, 2, res[i].allowed ? "allowed" : "denied");
        tab_set(t, 3, rls_reason_name(res[i].reason));
        tab_set_esc(t, 4, res[i].rule[0] ? res[i].rule : "-");
        tab_setf(t, 5, "%lld", (long long)res[i].remaining);
        tab_set(t, 6, fmt_dur_cell(ctx, res[i].retry_after_ms, buf, sizeof buf));
    }
    tab_print(t, ctx->tty);
    rc = tab_failed(t);
    tab_free(t);
    return rc ? fail_code(ctx, rc, "ENOMEM", "out of memory") : 0;
}

/* check ACTION KEY [ACTION KEY ...]: the pairs as one atomic batch
 * (rls_check_many), every item costing --cost. */
static int check_batch(rlctl_ctx *ctx, int64_t cost)
{
    rls_item items[RLS_BATCH_MAX];
    rls_result res[RLS_BATCH_MAX];
    int n = ctx->nargs / 2, allowed = 1, rc;
    for (int i = 0; i < n; i++)
        items[i] = (rls_item){ctx->args[2 * i], ctx->args[2 * i + 1], cost};
    rc = rls_check_many_at(ctx->db, items, (size_t)n, ctx->now_ms, res);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot check the batch of %d requests", n);
    for (int i = 0; i < n; i++)
        allowed &= res[i].allowed != 0;
    if ((rc = print_batch(ctx, items, n, res, allowed)))
        return rc;
    return allowed ? RLCTL_EXIT_OK : RLCTL_EXIT_DENIED;
}

int cmd_check(rlctl_ctx *ctx)
{
    rls_result res;
    int64_t cost;
    char subj[1200];
    int rc = opt_int(ctx, "cost", 1, 1, RLS_COST_MAX, &cost);
    if (rc)
        return rc;
    if (ctx->nargs % 2)   /* before the database: a usage error is one */
        return fail_usage(ctx, "unexpected argument '%s': check takes ACTION KEY pairs",
                          ctx->args[ctx->nargs - 1]);
    if (ctx->nargs > 2 && opt_flag(ctx, "peek"))
        return fail_usage(ctx, "--peek takes one ACTION KEY");
    if ((rc = db_open(ctx, 0)))
        return rc;
    if (ctx->nargs > 2)
        return check_batch(ctx, cost);
    if (opt_flag(ctx, "peek"))
        rc = rls_peek_at(ctx->db, ctx->args[0], ctx->args[1], cost, ctx->now_ms, &res);
    else
        rc = rls_check_at(ctx->db, ctx->args[0], ctx->args[1], cost, ctx->now_ms, &res);
    subject(ctx, subj, sizeof subj);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot check %s", subj);
    if ((rc = print_check_result(ctx, ctx->args[0], ctx->args[1], &res, 0, 0)))
        return rc;
    return res.allowed ? RLCTL_EXIT_OK : RLCTL_EXIT_DENIED;
}

int cmd_refund(rlctl_ctx *ctx)
{
    int64_t cost;
    char subj[1200];
    int rc = opt_int(ctx, "cost", 1, 1, RLS_COST_MAX, &cost);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    subject(ctx, subj, sizeof subj);
    int64_t given = 0;
    rc = rls_refund_units_at(ctx->db, ctx->args[0], ctx->args[1], cost, ctx->now_ms, &given);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot refund %s", subj);
    if (ctx->json) {
        json_obj_begin();
        json_key("refunded");
        json_int(given);
        json_key("asked");
        json_int(cost);
        json_key("action");
        json_str(ctx->args[0]);
        json_key("key");
        json_key_str(ctx->args[1]);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        if (given == cost)
            printf("refunded %lld unit(s) of %s\n", (long long)given, subj);
        else   /* fewer were in use, or charged in a window that has ended */
            printf("refunded %lld unit(s) of %s (asked for %lld)\n", (long long)given, subj,
                   (long long)cost);
    }
    return 0;
}

int cmd_reserve(rlctl_ctx *ctx)
{
    rls_result res;
    int64_t cost, ttl, id = 0;
    int ttl_set;
    char subj[1200], buf[64];
    int rc = opt_int(ctx, "cost", 1, 1, RLS_COST_MAX, &cost);
    if (rc || (rc = opt_duration(ctx, "ttl", &ttl, &ttl_set)) || (rc = db_open(ctx, 0)))
        return rc;
    if (!ttl_set)
        ttl = RLS_RESERVE_TTL_DEFAULT;
    subject(ctx, subj, sizeof subj);
    rc = rls_reserve_at(ctx->db, ctx->args[0], ctx->args[1], cost, ttl, ctx->now_ms, &id, &res);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot reserve %s", subj);
    if (ctx->json) {
        if ((rc = print_check_result(ctx, ctx->args[0], ctx->args[1], &res, 1,
                                     res.allowed ? id : 0)))
            return rc;
    } else if (res.allowed) {
        printf("%lld\n", (long long)id);
    } else if (!ctx->quiet) {
        fprintf(stderr, "rlctl: reservation of %s denied: %s '%s', retry after %s\n", subj,
                rls_reason_name(res.reason), res.rule,
                fmt_dur(res.retry_after_ms, buf, sizeof buf));
    }
    return res.allowed ? RLCTL_EXIT_OK : RLCTL_EXIT_DENIED;
}

static int resolve(rlctl_ctx *ctx, int commit)
{
    int64_t id;
    int rc = arg_int(ctx, 0, "reservation id", 1, INT64_MAX, &id);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    rc = commit ? rls_commit_at(ctx->db, id, ctx->now_ms) : rls_cancel_at(ctx->db, id, ctx->now_ms);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot %s reservation %lld", commit ? "commit" : "cancel",
                        (long long)id);
    if (ctx->json) {
        json_obj_begin();
        json_key(commit ? "committed" : "cancelled");
        json_int(id);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("%s reservation %lld\n", commit ? "committed" : "cancelled", (long long)id);
    }
    return 0;
}

int cmd_commit(rlctl_ctx *ctx)
{
    return resolve(ctx, 1);
}

int cmd_cancel(rlctl_ctx *ctx)
{
    return resolve(ctx, 0);
}
