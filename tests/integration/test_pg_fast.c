/*
 * test_pg_fast.c - the one-round-trip check on PostgreSQL
 * (storage/pg/pg_fast.c): a handle that knows a key's states decides at once
 * and writes only where the stored states still equal what it decided
 * from.  Every test has two handles on one schema, as two hosts: one whose
 * knowledge goes stale, one that changes what it knows behind its back
 * (checks, rule changes, blocks, overrides, reservations, resets), and
 * asserts the stale one still counts exactly.  Each handle's session is
 * named (application_name), so a test can see from pg_stat_activity which
 * statement a check ended with: the one-flight write, or the usual
 * transaction's COMMIT.  PostgreSQL only; skipped (and reported so) on
 * SQLite.
 */
#include "itest.h"

#define ONE_LIMIT                                                             \
    "version: 1\n"                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: r, algorithm: fixed_window, limit: 5, window: 1m }\n"

/* A handle on t's schema whose session is named `name`. */
static rls_db *host(const itest *t, const char *name)
{
    char uri[4200];
    rls_db *db = NULL;
    snprintf(uri, sizeof uri, "%s&application_name=%s", t->path, name);
    assert_int_equal(rls_open(&db, uri, NULL), RLS_OK);
    return db;
}

static int check(rls_db *db, const char *action, const char *key, int64_t now,
                 rls_result *res)
{
    return it_check_on(db, action, key, 1, now, res);
}

/* Did the last check of the session `name` end with the one-flight
 * write (1) or the usual transaction (0)? */
static int last_was_one_flight(const itest *t, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT query FROM pg_stat_activity WHERE application_name = '%s'",
             name);
    PGresult *r = it_pg_run(it_pg(), sql);
    assert_int_equal(PQntuples(r), 1);
    const char *q = PQgetvalue(r, 0, 0);
    int one = strncmp(q, "UPDATE rls_state SET", 20) == 0 || strncmp(q, "WITH u AS", 9) == 0 ||
              strncmp(q, "SELECT 1 FROM rls_state", 23) == 0 ||
              strncmp(q, "SELECT 1 / count(*)", 19) == 0 || strncmp(q, "SELECT alg,", 11) == 0 ||
              strncmp(q, "SELECT (SELECT policy_gen", 25) == 0;
    int usual = strcmp(q, "COMMIT") == 0 || strncmp(q, "RELEASE", 7) == 0;
    if (one == usual)
        fail_msg("session %s ended with an unexpected statement: %s", name, q);
    PQclear(r);
    return one;
}

/* Does the last statement of the session `name` contain `part`?  The
 * one-flight write has two forms: with the policy tables' probes
 * ("rls_blocks"), or for a key seen without policy rows at the current
 * generation, with that generation alone ("policy_gen = $"). */
static int last_statement_has(const char *name, const char *part)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT query FROM pg_stat_activity WHERE application_name = '%s'",
             name);
    PGresult *r = it_pg_run(it_pg(), sql);
    assert_int_equal(PQntuples(r), 1);
    int has = strstr(PQgetvalue(r, 0, 0), part) != NULL;
    PQclear(r);
    return has;
}

static int64_t policy_gen(const itest *t)
{
    return it_sql_int(t->path, "SELECT policy_gen FROM rls_meta");
}

/* The count stored for the limit named `limit` of key (fixed windows). */
static int64_t stored_count(const itest *t, const char *limit, const char *key)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT s.b FROM rls_state s JOIN rls_limits l ON l.lid = s.lid"
             " WHERE l.name LIKE '%s_%%' AND s.key = CAST('%s' AS BLOB)", limit, key);
    return it_sql_int(t->path, sql);
}

static void a_known_key_takes_one_flight_and_counts_exactly(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *a = host(t, "fast_a");
    rls_result r;
    assert_true(check(a, "api", "k", T0, &r));   /* new key: the usual path */
    assert_false(last_was_one_flight(t, "fast_a"));
    for (int i = 1; i < 5; i++) {
        assert_true(check(a, "api", "k", T0 + i, &r));
        assert_true(last_was_one_flight(t, "fast_a"));
        assert_int_equal(r.remaining, 4 - i);
    }
    assert_false(check(a, "api", "k", T0 + 5, &r));   /* a denial: one flight too */
    assert_true(last_was_one_flight(t, "fast_a"));
    assert_int_equal(r.reason, RLS_REASON_LIMIT);
    assert_int_equal(stored_count(t, "r", "k"), 5);
    /* the next window starts afresh */
    assert_true(check(a, "api", "k", T0 + 60000, &r));
    assert_int_equal(r.remaining, 4);
    rls_close(a);
    it_free(t);
}

static void two_hosts_alternating_admit_exactly_the_limit(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *h[2] = {host(t, "alt_a"), host(t, "alt_b")};
    rls_result r;
    int admitted = 0;
    int64_t last_remaining = 5;
    /* each check of one host makes the other's knowledge stale */
    for (int i = 0; i < 14; i++) {
        if (check(h[i % 2], "api", "shared", T0 + i, &r)) {
            admitted++;
            assert_true(r.remaining < last_remaining);   /* one counter, in order */
            last_remaining = r.remaining;
        }
    }
    assert_int_equal(admitted, 5);
    assert_int_equal(stored_count(t, "r", "shared"), 5);
    rls_close(h[0]);
    rls_close(h[1]);
    it_free(t);
}

#define TWO_LIMITS                                                            \
    "version: 1\n"                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: burst, algorithm: fixed_window, limit: 2, window: 1m }\n" \
    "      - { name: day, algorithm: fixed_window, limit: 100, window: 1d }\n"

static void a_stale_limit_leaves_no_limit_half_charged(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(TWO_LIMITS);
    rls_db *h[2] = {host(t, "two_a"), host(t, "two_b")};
    int admitted = 0;
    for (int i = 0; i < 10; i++)
        admitted += check(h[i % 2], "api", "k", T0 + i, NULL);
    assert_int_equal(admitted, 2);
    /* a check whose write to one limit failed wrote the other one neither */
    assert_int_equal(stored_count(t, "burst", "k"), 2);
    assert_int_equal(stored_count(t, "day", "k"), 2);
    /* a new minute: both limits charged together again */
    admitted = 0;
    for (int i = 0; i < 6; i++)
        admitted += check(h[i % 2], "api", "k", T0 + 60000 + i, NULL);
    assert_int_equal(admitted, 2);
    assert_int_equal(stored_count(t, "day", "k"), 4);
    rls_close(h[0]);
    rls_close(h[1]);
    it_free(t);
}

static void a_rule_change_reaches_a_handle_that_knew_the_key(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *a = host(t, "rule_a");
    rls_result r;
    assert_true(check(a, "api", "k", T0, NULL));
    assert_true(check(a, "api", "k", T0 + 1, NULL));
    assert_true(last_was_one_flight(t, "rule_a"));
    static const char lower[] = "version: 1\n"
                                "actions:\n"
                                "  api:\n"
                                "    limits:\n"
                                "      - { name: r, algorithm: fixed_window, limit: 2, window: 1m }\n";
    assert_int_equal(rls_rules_apply_at(t->db, lower, strlen(lower), "lower.yaml", NULL,
                                        T0 + 2, NULL), RLS_OK);
    /* the flight's guard refuses the old rules: the new limit applies */
    assert_false(check(a, "api", "k", T0 + 3, &r));
    assert_int_equal(r.limit, 2);
    rls_close(a);
    it_free(t);
}

static void policy_rows_of_a_key_reach_a_handle_that_knew_it(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *a = host(t, "pol_a");
    rls_result r;
    assert_true(check(a, "api", "k", T0, NULL));
    assert_true(check(a, "api", "other", T0, NULL));
    assert_true(check(a, "api", "k", T0 + 1, NULL));
    assert_true(last_was_one_flight(t, "pol_a"));

    /* a block by another host */
    assert_int_equal(rls_block_set_at(t->db, "api", "k", 0, "test", T0 + 2), RLS_OK);
    assert_false(check(a, "api", "k", T0 + 3, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_false(check(a, "api", "k", T0 + 4, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    /* ... stops only that key's one-flight checks */
    assert_true(check(a, "api", "other", T0 + 5, NULL));
    assert_true(last_was_one_flight(t, "pol_a"));
    /* a block for every action, on the key as written */
    assert_int_equal(rls_block_unset_at(t->db, "api", "k", T0 + 6), RLS_OK);
    assert_true(check(a, "api", "other", T0 + 7, NULL));
    assert_int_equal(rls_block_set_at(t->db, NULL, "other", 0, "test", T0 + 8), RLS_OK);
    assert_false(check(a, "api", "other", T0 + 9, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);

    /* unblocked: the count went on where it was (k: 2 of 5 used) */
    assert_true(check(a, "api", "k", T0 + 10, &r));
    assert_int_equal(r.remaining, 2);
    /* an override of the key's limit */
    assert_int_equal(rls_override_set_at(t->db, "api", "k", "r", 100, 0, T0 + 11), RLS_OK);
    assert_true(check(a, "api", "k", T0 + 12, &r));
    assert_int_equal(r.limit, 100);
    assert_int_equal(r.remaining, 96);
    rls_close(a);
    it_free(t);
}

#define WIDE_LIMIT                                                            \
    "version: 1\n"                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: r, algorithm: fixed_window, limit: 100, window: 1m }\n"

/* Checks key through the session `name` (each admitted, each one flight)
 * until one takes the G form: how many it took, or -1 after `max`.  A
 * session that has found states stale sends reads after its flights for a
 * while (pg_fast.c FAST_STALE_READS), and the last statement is then a
 * read: its staleness fades by an eighth with each check. */
static int checks_until_g_form(const itest *t, rls_db *db, const char *name, const char *key,
                               int64_t *now, int max)
{
    rls_result r;
    for (int i = 1; i <= max; i++) {
        assert_true(check(db, "api", key, (*now)++, &r));
        assert_true(last_was_one_flight(t, name));
        if (last_statement_has(name, "policy_gen = $"))
            return i;
    }
    return -1;
}

static void a_clean_key_skips_the_probes_while_the_policy_tables_stay(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(WIDE_LIMIT);
    rls_db *a = host(t, "gen_a");
    rls_result r;
    int64_t now = T0;
    assert_true(check(a, "api", "k", now++, &r));   /* the usual path: none for k */
    assert_int_equal(checks_until_g_form(t, a, "gen_a", "k", &now, 1), 1);
    assert_false(last_statement_has("gen_a", "rls_blocks"));

    /* another key's block moves the generation: k's next checks are one
     * flight each still, and the G form comes back once k was probed */
    int64_t gen = policy_gen(t);
    assert_int_equal(rls_block_set_at(t->db, "api", "x", 0, "test", now++), RLS_OK);
    assert_true(policy_gen(t) > gen);
    assert_true(check(a, "api", "k", now++, &r));
    assert_int_not_equal(checks_until_g_form(t, a, "gen_a", "k", &now, 12), -1);
    assert_int_equal(stored_count(t, "r", "k"), now - T0 - 1);   /* one per check */

    /* deleting policy rows does not move it, nor do checks */
    gen = policy_gen(t);
    assert_int_equal(rls_block_unset_at(t->db, "api", "x", now++), RLS_OK);
    assert_int_equal(checks_until_g_form(t, a, "gen_a", "k", &now, 1), 1);
    assert_int_equal(policy_gen(t), gen);
    rls_close(a);
    it_free(t);
}

/* Rows written by hand, from a session whose search_path is another
 * schema, move the generation of the schema they are written in
 * (schema/pg/002's trigger), so a handle that knew the key sees them. */
static void policy_rows_written_by_hand_reach_a_handle_that_knew_the_key(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(WIDE_LIMIT);
    rls_db *a = host(t, "hand_a");
    rls_result r;
    char sql[512];
    int64_t now = T0;
    assert_true(check(a, "api", "k", now++, &r));
    assert_int_equal(checks_until_g_form(t, a, "hand_a", "k", &now, 1), 1);

    snprintf(sql, sizeof sql,
             "INSERT INTO %s.rls_blocks(key, action, until_ms, kind, created_ms)"
             " VALUES ('k'::bytea, 'api', 0, 0, 0)", t->schema);
    PQclear(it_pg_run(it_pg(), sql));   /* it_pg(): the server's default schema */
    assert_false(check(a, "api", "k", now++, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);

    snprintf(sql, sizeof sql, "DELETE FROM %s.rls_blocks", t->schema);
    PQclear(it_pg_run(it_pg(), sql));
    assert_true(check(a, "api", "k", now++, &r));
    assert_int_not_equal(checks_until_g_form(t, a, "hand_a", "k", &now, 12), -1);
    /* an override, then changed by an UPDATE */
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.rls_overrides(key, action, limit_name, lim, created_ms)"
             " VALUES ('k'::bytea, 'api', 'r', 1000, 0)", t->schema);
    PQclear(it_pg_run(it_pg(), sql));
    int64_t used = stored_count(t, "r", "k");
    assert_true(check(a, "api", "k", now++, &r));
    assert_int_equal(r.limit, 1000);
    assert_int_equal(r.remaining, 1000 - used - 1);
    snprintf(sql, sizeof sql, "UPDATE %s.rls_overrides SET lim = 3", t->schema);
    PQclear(it_pg_run(it_pg(), sql));
    assert_false(check(a, "api", "k", now++, &r));
    assert_int_equal(r.limit, 3);
    rls_close(a);
    it_free(t);
}

static void an_expired_reservation_is_given_back_before_a_known_key_is_checked(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *a = host(t, "res_a");
    rls_result r;
    int64_t id = 0;
    assert_true(check(a, "api", "k", T0, NULL));
    assert_true(check(a, "api", "k", T0 + 1, NULL));
    /* another host reserves the rest for one second, and never commits */
    assert_int_equal(rls_reserve_at(t->db, "api", "k", 3, 1000, T0 + 2, &id, &r), RLS_OK);
    assert_true(r.allowed);
    assert_false(check(a, "api", "k", T0 + 3, &r));   /* all 5 taken */
    /* expired: the units come back at the key's next check */
    assert_true(check(a, "api", "k", T0 + 2000, &r));
    assert_int_equal(r.remaining, 2);
    assert_true(check(a, "api", "k", T0 + 2001, &r));
    assert_true(last_was_one_flight(t, "res_a"));
    rls_close(a);
    it_free(t);
}

/* While no reservation was ever stored, the one-flight write asks that of
 * rls_meta (schema/pg/003) instead of probing rls_reservations.  The first
 * reservation, of any key and by any host, stops that: the next check of a
 * handle that knew none takes one flight more and counts once, and its
 * checks probe again. */
static void the_reservation_probe_waits_for_a_first_reservation(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(WIDE_LIMIT);
    rls_db *a = host(t, "resv_a");
    rls_result r;
    int64_t now = T0, id = 0;
    assert_true(check(a, "api", "k", now++, &r));
    assert_int_equal(checks_until_g_form(t, a, "resv_a", "k", &now, 1), 1);
    assert_true(last_statement_has("resv_a", "NOT resv_seen"));
    assert_false(last_statement_has("resv_a", "rls_reservations"));
    assert_int_equal(it_sql_int(t->path, "SELECT resv_seen::int FROM rls_meta"), 0);

    /* another host reserves another key, and never commits */
    assert_int_equal(rls_reserve_at(t->db, "api", "x", 1, 1000, now++, &id, &r), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT resv_seen::int FROM rls_meta"), 1);
    int64_t before = stored_count(t, "r", "k");
    assert_true(check(a, "api", "k", now++, &r));
    assert_int_equal(stored_count(t, "r", "k"), before + 1);
    assert_int_equal(checks_until_g_form(t, a, "resv_a", "k", &now, 12) > 0, 1);
    assert_true(last_statement_has("resv_a", "rls_reservations"));
    assert_false(last_statement_has("resv_a", "NOT resv_seen"));
    assert_int_equal(stored_count(t, "r", "k"), now - T0 - 1);   /* one per check of a */

    /* it stays set when the reservation is gone */
    assert_int_equal(rls_cancel_at(t->db, id, now++), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), 0);
    assert_int_equal(it_sql_int(t->path, "SELECT resv_seen::int FROM rls_meta"), 1);
    rls_close(a);
    it_free(t);
}

/* A handle in the N form (no reservation ever stored) whose key another
 * host then reserves: the reservation expires, and its units come back
 * before the handle counts the key again. */
static void an_expired_reservation_is_given_back_to_a_handle_that_knew_none(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *a = host(t, "resv_b");
    rls_result r;
    int64_t id = 0;
    assert_true(check(a, "api", "k", T0, NULL));
    assert_true(check(a, "api", "k", T0 + 1, NULL));
    assert_true(last_statement_has("resv_b", "NOT resv_seen"));
    assert_int_equal(rls_reserve_at(t->db, "api", "k", 3, 1000, T0 + 2, &id, &r), RLS_OK);
    assert_false(check(a, "api", "k", T0 + 3, &r));   /* all 5 taken */
    assert_true(check(a, "api", "k", T0 + 2000, &r));   /* expired: the 3 came back */
    assert_int_equal(r.remaining, 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), 0);
    assert_true(check(a, "api", "k", T0 + 2001, &r));
    assert_int_equal(r.remaining, 1);
    assert_true(last_was_one_flight(t, "resv_b"));
    assert_false(last_statement_has("resv_b", "NOT resv_seen"));
    rls_close(a);
    it_free(t);
}

static void a_reset_by_another_host_starts_the_key_afresh(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(ONE_LIMIT);
    rls_db *a = host(t, "reset_a");
    rls_result r;
    for (int i = 0; i < 5; i++)
        assert_true(check(a, "api", "k", T0 + i, NULL));
    assert_false(check(a, "api", "k", T0 + 5, NULL));
    assert_int_equal(rls_reset_at(t->db, "api", "k", T0 + 6), RLS_OK);
    assert_true(check(a, "api", "k", T0 + 7, &r));
    assert_int_equal(r.remaining, 4);
    assert_int_equal(stored_count(t, "r", "k"), 1);
    rls_close(a);
    it_free(t);
}

#define SLIDING_LOG                                                           \
    "version: 1\n"                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: log, algorithm: sliding_log, limit: 3, window: 1m }\n"

static void a_sliding_log_is_compared_whole(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(SLIDING_LOG);
    rls_db *h[2] = {host(t, "log_a"), host(t, "log_b")};
    int admitted = 0;
    for (int i = 0; i < 8; i++) {
        admitted += check(h[i % 2], "api", "k", T0 + i, NULL);
        if (i == 2)   /* a log of two entries, written over by the other host */
            assert_true(last_was_one_flight(t, "log_a"));
    }
    assert_int_equal(admitted, 3);
    /* a minute later every entry has left the window */
    admitted = 0;
    for (int i = 0; i < 8; i++)
        admitted += check(h[i % 2], "api", "k", T0 + 120000 + i, NULL);
    assert_int_equal(admitted, 3);
    rls_close(h[0]);
    rls_close(h[1]);
    it_free(t);
}

#define PENALTY                                                               \
    "version: 1\n"                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: r, algorithm: fixed_window, limit: 2, window: 1m, block_for: [10m] }\n"

static void a_denial_with_a_penalty_imposes_it(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(PENALTY);
    rls_db *a = host(t, "pen_a");
    rls_result r;
    assert_true(check(a, "api", "k", T0, NULL));
    assert_true(check(a, "api", "k", T0 + 1, NULL));
    assert_false(check(a, "api", "k", T0 + 2, &r));
    assert_int_equal(r.retry_after_ms, 600000);
    /* blocked for ten minutes, past the window's end */
    assert_false(check(a, "api", "k", T0 + 120000, &r));
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_blocks"), 1);
    rls_close(a);
    it_free(t);
}

/* The minor page faults of the server process serving the session
 * `name`, from /proc; -1 when that process is not readable here (a server
 * on another machine). */
static long server_faults(const char *name)
{
    char sql[256], path[64], buf[1024];
    snprintf(sql, sizeof sql,
             "SELECT pid FROM pg_stat_activity WHERE application_name = '%s'", name);
    PGresult *r = it_pg_run(it_pg(), sql);
    assert_int_equal(PQntuples(r), 1);
    snprintf(path, sizeof path, "/proc/%s/stat", PQgetvalue(r, 0, 0));
    PQclear(r);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    /* pid (comm) state ppid pgrp session tty tpgid flags minflt: the
     * command may hold spaces, what follows its ')' does not */
    const char *p = strrchr(buf, ')');
    long minflt = -1;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %ld", &minflt) != 1)
        return -1;
    return minflt;
}

/* A server process on glibc trims its heap when more than 128 KiB of it
 * is free, and a check statement allocates and frees about that much:
 * without the session's setup (pg_open.c keep_heap) the checks grew the
 * heap again and faulted its pages in, once the heap's layout let them
 * (measured: 13,431 faults over these 3,000 checks without it, ~150 with
 * it; the first few hundred checks may not show it). */
static void a_check_does_not_make_the_server_fault_its_heap_in_anew(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new("version: 1\n"
                      "actions:\n"
                      "  api:\n"
                      "    limits:\n"
                      "      - { name: r, algorithm: fixed_window, limit: 1000000, window: 1h }\n");
    rls_db *a = host(t, "fast_heap");
    rls_result r;
    /* the key made by another handle: a's session runs no usual check,
     * whose larger allocations could raise glibc's thresholds by chance */
    assert_true(it_check(t, "api", "k", 1, T0, &r));
    for (int i = 1; i < 50; i++)
        assert_true(check(a, "api", "k", T0 + i, &r));
    assert_true(last_was_one_flight(t, "fast_heap"));
    long before = server_faults("fast_heap");
    if (before < 0) {
        rls_close(a);
        it_free(t);
        skip();   /* the server's process is not on this machine */
    }
    for (int i = 0; i < 3000; i++)
        assert_true(check(a, "api", "k", T0 + 50 + i, &r));
    assert_true(last_was_one_flight(t, "fast_heap"));
    long faults = server_faults("fast_heap") - before;
    if (faults >= 3000)
        fail_msg("the server faulted %ld pages in over 3000 checks", faults);
    rls_close(a);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_known_key_takes_one_flight_and_counts_exactly),
        cmocka_unit_test(two_hosts_alternating_admit_exactly_the_limit),
        cmocka_unit_test(a_stale_limit_leaves_no_limit_half_charged),
        cmocka_unit_test(a_rule_change_reaches_a_handle_that_knew_the_key),
        cmocka_unit_test(policy_rows_of_a_key_reach_a_handle_that_knew_it),
        cmocka_unit_test(a_clean_key_skips_the_probes_while_the_policy_tables_stay),
        cmocka_unit_test(policy_rows_written_by_hand_reach_a_handle_that_knew_the_key),
        cmocka_unit_test(an_expired_reservation_is_given_back_before_a_known_key_is_checked),
        cmocka_unit_test(the_reservation_probe_waits_for_a_first_reservation),
        cmocka_unit_test(an_expired_reservation_is_given_back_to_a_handle_that_knew_none),
        cmocka_unit_test(a_reset_by_another_host_starts_the_key_afresh),
        cmocka_unit_test(a_sliding_log_is_compared_whole),
        cmocka_unit_test(a_denial_with_a_penalty_imposes_it),
        cmocka_unit_test(a_check_does_not_make_the_server_fault_its_heap_in_anew),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
