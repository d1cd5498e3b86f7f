/*
 * test_admin.c - the admin API: rule-set history (versions, export,
 * rollback, dry run), listings of tiers, overrides and blocks, reset,
 * audit, stats, explain, usage and doctor.
 */
#include "itest.h"

static const char *V1 =
    "version: 1\n"
    "tiers: { free: {}, pro: {} }\n"
    "defaults: { tier: free }\n"
    "actions:\n"
    "  api:\n"
    "    limits:\n"
    "      - { name: rate, algorithm: fixed_window, limit: 5, window: 1h }\n"
    "      - { name: day, algorithm: fixed_window, limit: 50, window: 1d }\n"
    "    tiers:\n"
    "      pro: [ { name: rate, limit: 10 } ]\n"
    "  login:\n"
    "    limits: [ { name: burst, algorithm: gcra, limit: 1, window: 1s, burst: 3 } ]\n"
    "assignments:\n"
    "  - { key: \"user:*\", action: api, tier: pro }\n";

static const char *V2 =
    "version: 1\n"
    "tiers: { free: {}, pro: {} }\n"
    "defaults: { tier: free }\n"
    "actions:\n"
    "  api:\n"
    "    limits:\n"
    "      - { name: rate, algorithm: fixed_window, limit: 3, window: 1h }\n"
    "      - { name: day, algorithm: fixed_window, limit: 50, window: 1d }\n"
    "  login:\n"
    "    limits: [ { name: burst, algorithm: gcra, limit: 1, window: 1s, burst: 3 } ]\n";

static int col(const rls_rows *r, const char *name)
{
    int c = rls_rows_find(r, name);
    if (c < 0)
        fail_msg("no column '%s'", name);
    return c;
}

static void versions_export_and_rollback(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    char *yaml = NULL;
    size_t len = 0;
    int64_t v = 0;
    assert_int_equal(rls_rules_apply_at(t->db, V2, strlen(V2), "v2.yaml", "tighten", T0, &v),
                     RLS_OK);
    assert_int_equal(rls_rules_versions(t->db, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);
    assert_int_equal(rls_rows_int(r, 0, col(r, "version")), 2);       /* newest first */
    assert_int_equal(rls_rows_int(r, 0, col(r, "active")), 1);
    assert_int_equal(rls_rows_int(r, 1, col(r, "active")), 0);
    assert_string_equal(rls_rows_text(r, 0, col(r, "comment")), "tighten");
    assert_string_equal(rls_rows_text(r, 0, col(r, "source")), "v2.yaml");
    rls_rows_free(r);

    assert_int_equal(rls_rules_get(t->db, 0, &yaml, &len), RLS_OK);
    assert_int_equal(len, strlen(V2));
    assert_string_equal(yaml, V2);                 /* verbatim */
    rls_free(yaml);
    assert_int_equal(rls_rules_get(t->db, 9, &yaml, &len), RLS_ENOTFOUND);
    assert_null(yaml);

    assert_int_equal(it_admit_n(t, "api", "u", 9, T0), 3);
    assert_int_equal(rls_rules_rollback_at(t->db, 1, "undo", T0, &v), RLS_OK);
    assert_int_equal(v, 3);
    assert_int_equal(rls_rules_get(t->db, 0, &yaml, NULL), RLS_OK);
    assert_string_equal(yaml, V1);
    rls_free(yaml);
    assert_int_equal(it_admit_n(t, "api", "u", 9, T0), 2);    /* 5 per hour again */
    assert_int_equal(rls_rules_rollback_at(t->db, 7, NULL, T0, NULL), RLS_ENOTFOUND);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op='rules.rollback'"
                                         " AND before='version 2' AND after='version 3'"), 1);
    it_free(t);
}

static void dry_run_lists_keys_over_new_limits(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    assert_int_equal(it_admit_n(t, "api", "heavy", 4, T0), 4);
    assert_int_equal(it_admit_n(t, "api", "light", 1, T0), 1);
    assert_int_equal(rls_rules_dry_run_at(t->db, V2, strlen(V2), "v2", T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "heavy");
    assert_string_equal(rls_rows_text(r, 0, col(r, "limit")), "rate");
    assert_int_equal(rls_rows_int(r, 0, col(r, "used")), 4);
    assert_int_equal(rls_rows_int(r, 0, col(r, "old_limit")), 5);
    assert_int_equal(rls_rows_int(r, 0, col(r, "new_limit")), 3);
    rls_rows_free(r);
    /* nothing was stored */
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_rulesets"), 1);
    assert_int_equal(rls_rules_dry_run_at(t->db, "version: 2\n", 11, "bad", T0, &r), RLS_ECONFIG);
    assert_null(r);
    /* the same file again changes nothing and lists nobody */
    assert_int_equal(rls_rules_dry_run_at(t->db, V1, strlen(V1), "v1", T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 0);
    rls_rows_free(r);
    it_free(t);
}

static void listings_of_policy(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    assert_int_equal(rls_tier_set_at(t->db, "10.0.0.0/8", "pro", 0, T0), RLS_OK);
    assert_int_equal(rls_tier_set_at(t->db, "gone", "pro", T0 + 10, T0), RLS_OK);
    assert_int_equal(rls_tier_list_at(t->db, T0 + 20, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);   /* the expired one is not listed */
    assert_string_equal(rls_rows_text(r, 0, col(r, "pattern")), "10.0.0.0/8");
    assert_string_equal(rls_rows_text(r, 0, col(r, "kind")), "cidr");
    assert_string_equal(rls_rows_text(r, 0, col(r, "source")), "operator");
    assert_string_equal(rls_rows_text(r, 1, col(r, "pattern")), "user:*");
    assert_string_equal(rls_rows_text(r, 1, col(r, "source")), "file");
    rls_rows_free(r);

    assert_int_equal(rls_override_set_at(t->db, "api", "k1", "rate", 9, 0, T0), RLS_OK);
    assert_int_equal(rls_override_set_at(t->db, "login", "k2", "burst", 7, 0, T0), RLS_OK);
    assert_int_equal(rls_override_list_at(t->db, "api", NULL, T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_int_equal(rls_rows_int(r, 0, col(r, "limit")), 9);
    rls_rows_free(r);
    assert_int_equal(rls_override_list_at(t->db, NULL, "k2", T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_string_equal(rls_rows_text(r, 0, col(r, "action")), "login");
    rls_rows_free(r);

    assert_int_equal(rls_block_set_at(t->db, "api", "bad", 0, "fraud", T0), RLS_OK);
    assert_int_equal(rls_block_set_at(t->db, NULL, "old", T0 + 5, "x", T0), RLS_OK);
    assert_int_equal(rls_block_list_at(t->db, T0 + 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 1);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "bad");
    assert_string_equal(rls_rows_text(r, 0, col(r, "kind")), "manual");
    assert_string_equal(rls_rows_text(r, 0, col(r, "reason")), "fraud");
    assert_int_equal(rls_rows_int(r, 0, col(r, "until_ms")), 0);
    rls_rows_free(r);
    it_free(t);
}

static void reset_forgets_counters(void **state)
{
    itest *t = it_new(V1);
    assert_int_equal(it_admit_n(t, "api", "k", 9, T0), 5);
    assert_int_equal(rls_reset_at(t->db, "api", "k", T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "k", 9, T0), 5);
    assert_int_equal(rls_reset_at(t->db, "api", "never-seen", T0), RLS_ENOTFOUND);
    assert_int_equal(rls_reset_at(t->db, "nope", "k", T0), RLS_ENOACTION);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op='reset'"), 1);
    it_free(t);
}

static void audit_lists_newest_first(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    assert_int_equal(rls_block_set_at(t->db, "api", "k", 0, "why", T0), RLS_OK);
    assert_int_equal(rls_block_unset_at(t->db, "api", "k", T0 + 1), RLS_OK);
    assert_int_equal(rls_audit_list(t->db, NULL, 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 3);  /* apply, block, unblock */
    assert_string_equal(rls_rows_text(r, 0, col(r, "op")), "unblock");
    assert_string_equal(rls_rows_text(r, 1, col(r, "op")), "block");
    assert_string_equal(rls_rows_text(r, 1, col(r, "reason")), "why");
    assert_string_equal(rls_rows_text(r, 2, col(r, "op")), "rules.apply");
    assert_true(strlen(rls_rows_text(r, 0, col(r, "os_user"))) > 0);
    rls_rows_free(r);
    assert_int_equal(rls_audit_list(t->db, "k", 10, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);
    rls_rows_free(r);
    assert_int_equal(rls_audit_list(t->db, NULL, 0, &r), RLS_EINVAL);
    it_free(t);
}

static void stats_recent_and_totals(void **state)
{
    itest *t = it_new(V1);
    rls_rows *recent = NULL, *totals = NULL;
    it_admit_n(t, "api", "k", 7, T0);            /* 5 allowed, 2 denied */
    it_check(t, "api", "k2", 1, T0 + 2000, NULL); /* flushes second T0 */
    assert_int_equal(rls_stats_at(t->db, 60, T0 + 2000, &recent, &totals), RLS_OK);
    assert_int_equal(rls_rows_count(recent), 2);  /* seconds T0 and T0 + 2 */
    assert_int_equal(rls_rows_int(recent, 0, col(recent, "sec")), T0 / 1000);
    assert_int_equal(rls_rows_int(recent, 0, col(recent, "allowed")), 5);
    assert_int_equal(rls_rows_int(recent, 0, col(recent, "denied")), 2);
    assert_int_equal(rls_rows_int(recent, 1, col(recent, "allowed")), 1);
    assert_int_equal(rls_rows_int(totals, 0, col(totals, "allowed")), 6);
    assert_int_equal(rls_rows_int(totals, 0, col(totals, "denied")), 2);
    rls_rows_free(recent);
    rls_rows_free(totals);
    assert_int_equal(rls_stats_at(t->db, 0, T0, &recent, NULL), RLS_EINVAL);
    it_free(t);
}

static void explain_shows_tier_limits_and_blocks(void **state)
{
    itest *t = it_new(V1);
    rls_rows *info = NULL, *lim = NULL;
    assert_int_equal(it_admit_n(t, "api", "user:7", 4, T0), 4);
    assert_int_equal(rls_override_set_at(t->db, "api", "user:7", "day", 40, 0, T0), RLS_OK);
    assert_int_equal(rls_explain_at(t->db, "api", "user:7", T0, &info, &lim), RLS_OK);
    assert_string_equal(rls_rows_text(info, 0, col(info, "tier")), "pro");
    assert_string_equal(rls_rows_text(info, 0, col(info, "tier_source")), "pattern");
    assert_string_equal(rls_rows_text(info, 0, col(info, "tier_pattern")), "user:*");
    assert_int_equal(rls_rows_int(info, 0, col(info, "allowed")), 1);
    assert_int_equal(rls_rows_count(lim), 2);
    assert_string_equal(rls_rows_text(lim, 0, col(lim, "name")), "rate");
    assert_int_equal(rls_rows_int(lim, 0, col(lim, "limit")), 10);
    assert_int_equal(rls_rows_int(lim, 0, col(lim, "used")), 4);
    assert_int_equal(rls_rows_int(lim, 1, col(lim, "limit")), 40);
    assert_int_equal(rls_rows_int(lim, 1, col(lim, "overridden")), 1);
    rls_rows_free(info);
    rls_rows_free(lim);
    /* explain charges nothing */
    assert_int_equal(it_admit_n(t, "api", "user:7", 10, T0), 6);
    assert_int_equal(rls_block_set_at(t->db, "api", "user:7", T0 + 500, "cool down", T0), RLS_OK);
    assert_int_equal(rls_explain_at(t->db, "api", "user:7", T0, &info, NULL), RLS_OK);
    assert_int_equal(rls_rows_int(info, 0, col(info, "blocked")), 1);
    assert_string_equal(rls_rows_text(info, 0, col(info, "block_reason")), "cool down");
    assert_string_equal(rls_rows_text(info, 0, col(info, "reason")), "blocked");
    assert_int_equal(rls_rows_int(info, 0, col(info, "retry_after_ms")), 500);
    rls_rows_free(info);
    it_free(t);
}

static void usage_sorts_filters_and_pages(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    rls_usage_query q = {sizeof q, "api", NULL, RLS_SORT_USED, 0, 10};
    it_admit_n(t, "api", "a", 1, T0);
    it_admit_n(t, "api", "b", 5, T0);   /* limited */
    it_admit_n(t, "api", "c", 4, T0);   /* near: 80 % */
    it_admit_n(t, "login", "c", 1, T0);
    assert_int_equal(rls_block_set_at(t->db, "api", "z", 0, "x", T0), RLS_OK);
    assert_int_equal(rls_usage_at(t->db, &q, T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 4);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "z");     /* blocked first */
    assert_string_equal(rls_rows_text(r, 0, col(r, "state")), "blocked");
    assert_string_equal(rls_rows_text(r, 1, col(r, "key")), "b");
    assert_string_equal(rls_rows_text(r, 1, col(r, "state")), "limited");
    assert_int_equal(rls_rows_int(r, 1, col(r, "fraction_ppm")), 1000000);
    assert_string_equal(rls_rows_text(r, 2, col(r, "state")), "near");
    assert_string_equal(rls_rows_text(r, 3, col(r, "key")), "a");
    assert_int_equal(rls_rows_int(r, 3, col(r, "used")), 1);
    rls_rows_free(r);
    q.offset = 1;
    q.limit = 2;
    q.sort = RLS_SORT_KEY;
    assert_int_equal(rls_usage_at(t->db, &q, T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "b");
    rls_rows_free(r);
    q.action = NULL;
    q.key_substr = "c";
    q.offset = 0;
    assert_int_equal(rls_usage_at(t->db, &q, T0, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 2);   /* c on api and on login */
    rls_rows_free(r);
    q.limit = 0;
    assert_int_equal(rls_usage_at(t->db, &q, T0, &r), RLS_EINVAL);
    it_free(t);
}

static void doctor_reports_checks(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    assert_int_equal(rls_doctor(t->db, 1, &r), RLS_OK);
    int fails = 0, found = 0;
    for (int i = 0; i < rls_rows_count(r); i++) {
        const char *check = rls_rows_text(r, i, col(r, "check"));
        fails += strcmp(rls_rows_text(r, i, col(r, "status")), "fail") == 0;
        if (it_pg())   /* PostgreSQL: the server, the schema, the connection */
            found += strcmp(check, "server_version") == 0 || strcmp(check, "role") == 0 ||
                     strcmp(check, "connection") == 0 || strcmp(check, "rules") == 0;
        else
            found += strcmp(check, "integrity_check") == 0 || strcmp(check, "journal_mode") == 0 ||
                     strcmp(check, "sqlite_version") == 0 || strcmp(check, "file_mode") == 0;
    }
    assert_int_equal(fails, 0);
    assert_int_equal(found, 4);
    rls_rows_free(r);
    it_free(t);
}

static void rows_accessors_are_safe(void **state)
{
    assert_int_equal(rls_rows_count(NULL), 0);
    assert_int_equal(rls_rows_columns(NULL), 0);
    assert_null(rls_rows_name(NULL, 0));
    assert_int_equal(rls_rows_find(NULL, "x"), -1);
    assert_true(rls_rows_is_null(NULL, 0, 0));
    assert_int_equal(rls_rows_int(NULL, 0, 0), 0);
    assert_null(rls_rows_text(NULL, 0, 0));
    rls_rows_free(NULL);
    rls_free(NULL);
}


static void describe_lists_tiers_and_every_limit(void **state)
{
    itest *t = it_new(V1);
    rls_rows *tiers = NULL, *lim = NULL;
    assert_int_equal(rls_rules_describe(t->db, 0, &tiers, &lim), RLS_OK);
    assert_int_equal(rls_rows_count(tiers), 2);
    assert_string_equal(rls_rows_text(tiers, 0, col(tiers, "name")), "free");
    assert_int_equal(rls_rows_int(tiers, 0, col(tiers, "is_default")), 1);
    assert_int_equal(rls_rows_count(lim), 4);   /* api: rate, day, pro rate; login: burst */
    int pro = -1;
    for (int i = 0; i < rls_rows_count(lim); i++)
        if (strcmp(rls_rows_text(lim, i, col(lim, "tier")), "pro") == 0)
            pro = i;
    assert_true(pro >= 0);
    assert_string_equal(rls_rows_text(lim, pro, col(lim, "name")), "rate");
    assert_int_equal(rls_rows_int(lim, pro, col(lim, "limit")), 10);
    assert_string_equal(rls_rows_text(lim, pro, col(lim, "window")), "1h");  /* inherited */
    rls_rows_free(tiers);
    rls_rows_free(lim);
    assert_int_equal(rls_rules_describe(t->db, 5, &tiers, NULL), RLS_ENOTFOUND);
    assert_null(tiers);
    it_free(t);
}


static void usage_by_denials_and_bounded_pages(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    char key[32];
    rls_usage_query q = {sizeof q, "api", NULL, RLS_SORT_DENIED, 0, 3};
    for (int i = 0; i < 300; i++) {   /* 300 quiet keys */
        snprintf(key, sizeof key, "k%03d", i);
        it_check(t, "api", key, 1, T0, NULL);
    }
    it_admit_n(t, "api", "zz-noisy", 9, T0);   /* 5 allowed, 4 denied */
    it_admit_n(t, "api", "zz-quiet", 7, T0);   /* 2 denied */
    it_check(t, "api", "flush", 1, T0 + 2000, NULL);   /* stats written */
    assert_int_equal(rls_usage_at(t->db, &q, T0 + 2000, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 3);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "zz-noisy");
    assert_int_equal(rls_rows_int(r, 0, col(r, "denied")), 4);
    assert_string_equal(rls_rows_text(r, 1, col(r, "key")), "zz-quiet");
    assert_int_equal(rls_rows_int(r, 1, col(r, "denied")), 2);
    assert_string_equal(rls_rows_text(r, 2, col(r, "key")), "flush");   /* then by key */
    rls_rows_free(r);
    /* most used: the two limited keys first although they sort last by key */
    q.sort = RLS_SORT_USED;
    assert_int_equal(rls_usage_at(t->db, &q, T0 + 2000, &r), RLS_OK);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "zz-noisy");
    assert_string_equal(rls_rows_text(r, 1, col(r, "key")), "zz-quiet");
    assert_string_equal(rls_rows_text(r, 2, col(r, "key")), "flush");
    rls_rows_free(r);
    q.sort = RLS_SORT_KEY;
    q.offset = 100;
    assert_int_equal(rls_usage_at(t->db, &q, T0 + 2000, &r), RLS_OK);
    assert_int_equal(rls_rows_count(r), 3);
    assert_string_equal(rls_rows_text(r, 0, col(r, "key")), "k099");   /* 'flush' sorts first */
    rls_rows_free(r);
    it_free(t);
}


static void apply_if_refuses_a_stale_base(void **state)
{
    itest *t = it_new(V1);
    int64_t v = 0;
    assert_int_equal(rls_rules_apply_if_at(t->db, V2, strlen(V2), "v2", NULL, 1, T0, &v), RLS_OK);
    assert_int_equal(v, 2);
    /* an editor that read version 1 must not overwrite version 2 */
    assert_int_equal(rls_rules_apply_if_at(t->db, V1, strlen(V1), "v1", NULL, 1, T0, &v),
                     RLS_ECONFLICT);
    assert_int_equal(it_sql_int(t->path, "SELECT active_version FROM rls_meta"), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_rulesets"), 2);
    assert_string_equal(rls_errname(RLS_ECONFLICT), "ECONFLICT");
    it_free(t);
}

static void tier_assignment_for_one_action(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    assert_int_equal(rls_tier_assign_at(t->db, "api", "k", "pro", 0, T0), RLS_OK);
    assert_int_equal(it_admit_n(t, "api", "k", 12, T0), 10);      /* pro on api */
    assert_int_equal(it_admit_n(t, "login", "k", 5, T0), 3);      /* default elsewhere */
    assert_int_equal(rls_tier_list_at(t->db, T0, &r), RLS_OK);
    int found = 0;
    for (int i = 0; i < rls_rows_count(r); i++)
        found += strcmp(rls_rows_text(r, i, col(r, "pattern")), "k") == 0 &&
                 strcmp(rls_rows_text(r, i, col(r, "action")), "api") == 0;
    assert_int_equal(found, 1);
    rls_rows_free(r);
    assert_int_equal(rls_tier_unassign_at(t->db, "api", "k", T0), RLS_OK);
    assert_int_equal(rls_tier_unassign_at(t->db, "api", "k", T0), RLS_ENOTFOUND);
    assert_int_equal(rls_tier_assign_at(t->db, "nope", "k", "pro", 0, T0), RLS_ENOACTION);
    it_free(t);
}

static void blocked_usage_rows_keep_their_counters(void **state)
{
    itest *t = it_new(V1);
    rls_rows *r = NULL;
    rls_usage_query q = {sizeof q, "api", NULL, RLS_SORT_USED, 0, 10};
    it_admit_n(t, "api", "b", 2, T0);
    assert_int_equal(rls_block_set_at(t->db, "api", "b", 0, "x", T0), RLS_OK);
    assert_int_equal(rls_usage_at(t->db, &q, T0, &r), RLS_OK);
    assert_int_equal(rls_rows_int(r, 0, col(r, "blocked")), 1);
    assert_int_equal(rls_rows_int(r, 0, col(r, "used")), 2);
    assert_int_equal(rls_rows_int(r, 0, col(r, "limit")), 5);
    assert_string_equal(rls_rows_text(r, 0, col(r, "state")), "blocked");
    rls_rows_free(r);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(versions_export_and_rollback),
        cmocka_unit_test(dry_run_lists_keys_over_new_limits),
        cmocka_unit_test(listings_of_policy),
        cmocka_unit_test(reset_forgets_counters),
        cmocka_unit_test(audit_lists_newest_first),
        cmocka_unit_test(stats_recent_and_totals),
        cmocka_unit_test(explain_shows_tier_limits_and_blocks),
        cmocka_unit_test(usage_sorts_filters_and_pages),
        cmocka_unit_test(doctor_reports_checks),
        cmocka_unit_test(rows_accessors_are_safe),
        cmocka_unit_test(describe_lists_tiers_and_every_limit),
        cmocka_unit_test(usage_by_denials_and_bounded_pages),
        cmocka_unit_test(apply_if_refuses_a_stale_base),
        cmocka_unit_test(tier_assignment_for_one_action),
        cmocka_unit_test(blocked_usage_rows_keep_their_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
