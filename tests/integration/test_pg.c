/*
 * test_pg.c - what only the PostgreSQL backend does (storage/pg*.c): it
 * survives a lost connection, waits for a row another session holds,
 * reports a held-back write's failure at the statement it travelled with
 * and loses nothing, numbers rule sets without gaps as SQLite does, keeps
 * passwords out of messages, refuses schemas it did not make or cannot
 * read, and a read-only handle creates nothing.  Runs when
 * RLSTORE_TEST_PG names a live server (tests/pg/); on SQLite every test is
 * skipped, and reported as skipped.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include "itest.h"

#define RULES "version: 1\n" RULES_BODY
#define RULES_BODY                                                            \
    "actions:\n"                                                              \
    "  api:\n"                                                                \
    "    limits:\n"                                                           \
    "      - { name: r, algorithm: fixed_window, limit: 3, window: 1m }\n"

static void lost_connection_is_reestablished(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    assert_true(it_check(t, "api", "k", 1, T0, NULL));
    /* the server ends every session of this schema's handles but ours */
    PQclear(it_pg_run(it_pg(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                               " WHERE pid <> pg_backend_pid() AND datname = current_database()"
                               " AND backend_type = 'client backend'"));
    /* the next check reconnects and still counts exactly */
    assert_true(it_check(t, "api", "k", 1, T0 + 1, NULL));
    assert_true(it_check(t, "api", "k", 1, T0 + 2, NULL));
    assert_false(it_check(t, "api", "k", 1, T0 + 3, NULL));
    it_free(t);
}

static void held_row_makes_a_check_wait_then_fail_by_name(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "api", "held", 1, T0, NULL));
    /* another session holds the key's counter row */
    PGconn *c = PQconnectdb(t->path);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(PQexec(c, "BEGIN"));
    PGresult *x = PQexec(c, "SELECT a FROM rls_state WHERE key = 'held'::bytea FOR UPDATE");
    assert_int_equal(PQntuples(x), 1);
    PQclear(x);
    rls_options o;
    rls_options_init(&o);
    o.busy_timeout_ms = 100;
    rls_db *db = NULL;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    assert_int_equal(rls_check_at(db, "api", "held", 1, T0, &r), RLS_EBUSY);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    /* another key is not held up */
    assert_int_equal(rls_check_at(db, "api", "free", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    PQclear(PQexec(c, "COMMIT"));
    assert_int_equal(rls_check_at(db, "api", "held", 1, T0, &r), RLS_OK);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 1);
    rls_close(db);
    PQfinish(c);
    it_free(t);
}

static void failed_held_back_write_fails_the_check(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "api", "k", 1, T0, NULL));
    /* the next upsert of the key's state (count 2) is refused by the server,
     * at the COMMIT it was sent with (pg_pipe.c) */
    it_sql_exec(t->path, "ALTER TABLE rls_state ADD CONSTRAINT lt2 CHECK (b < 2)");
    assert_int_not_equal(rls_check_at(t->db, "api", "k", 1, T0 + 1, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_DEGRADED);
    assert_non_null(strstr(rls_errmsg(t->db), "lt2"));
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state"), 1);
    /* the handle goes on: the transaction was rolled back, not left open */
    it_sql_exec(t->path, "ALTER TABLE rls_state DROP CONSTRAINT lt2");
    assert_true(it_check(t, "api", "k", 1, T0 + 2, NULL));
    assert_true(it_check(t, "api", "k", 1, T0 + 3, NULL));
    assert_false(it_check(t, "api", "k", 1, T0 + 4, NULL));
    it_free(t);
}

static void a_rolled_back_apply_leaves_no_gap_in_the_versions(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    int64_t v = 0;
    /* the audit row is refused: the apply is rolled back after its rule set
     * was inserted */
    it_sql_exec(t->path, "ALTER TABLE rls_audit ADD CONSTRAINT noapply CHECK (op <> 'rules.apply') NOT VALID");
    /* (forced: the same rules store nothing otherwise) */
    assert_int_not_equal(rls_rules_apply_v2_at(t->db, RULES, strlen(RULES), "r.yaml", NULL,
                                               RLS_APPLY_FORCE, T0 + 1, &v, NULL), RLS_OK);
    it_sql_exec(t->path, "ALTER TABLE rls_audit DROP CONSTRAINT noapply");
    assert_int_equal(rls_rules_apply_v2_at(t->db, RULES, strlen(RULES), "r.yaml", NULL,
                                           RLS_APPLY_FORCE, T0 + 2, &v, NULL), RLS_OK);
    assert_int_equal(v, 2);   /* versions 1..n, as on SQLite */
    assert_int_equal(it_sql_int(t->path, "SELECT max(version) FROM rls_rulesets"), 2);
    it_free(t);
}

static void password_never_shown(void **state)
{
    IT_PG_ONLY();
    rls_db *db = NULL;
    /* nothing listens on port 1: the message names the server, not the
     * password, in the URI's user info or in a parameter */
    assert_int_equal(rls_open(&db, "postgresql://u:hunter2@127.0.0.1:1/x?password=hunter3&sslpassword=hunter4&"
                                   "connect_timeout=2", NULL), RLS_ECANTOPEN);
    assert_null(db);
    assert_null(strstr(rls_errmsg(NULL), "hunter"));
    assert_non_null(strstr(rls_errmsg(NULL), "cannot connect to PostgreSQL"));
}

static void newer_or_foreign_schemas_are_refused(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    rls_db *db = NULL;
    it_sql_exec(t->path, "UPDATE rls_schema SET version = 99");
    assert_int_equal(rls_open(&db, t->path, NULL), RLS_ENEWER);
    it_sql_exec(t->path, "DROP TABLE rls_schema");
    assert_int_equal(rls_open(&db, t->path, NULL), RLS_EUNSAFE);
    /* nothing was changed by the refusals */
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_rulesets"), 1);
    it_free(t);
}

static void read_only_or_no_create_makes_nothing(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(NULL);
    rls_close(t->db);
    t->db = NULL;
    it_sql_exec(t->path, "DROP TABLE rls_schema, rls_meta, rls_rulesets, rls_limits, rls_state,"
                         " rls_assignments, rls_overrides, rls_blocks, rls_reservations,"
                         " rls_stats, rls_stats_total, rls_key_stats, rls_audit, rls_key_counts,"
                         " rls_horizons, rls_events, rls_counters");
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.read_only = 1;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_EREADONLY);
    rls_options_init(&o);
    o.create = 0;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_ENOTFOUND);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM information_schema.tables"
                                         " WHERE table_schema = current_schema()"), 0);
    /* and a handle that may create does */
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT version FROM rls_schema"), 5);
    it_free(t);
}

/* What schema/pg/005 added, taken away again. */
#define UNDO_V5 " DROP TABLE rls_events; DROP TABLE rls_counters;"

/* What schema/pg/004 added, taken away again. */
#define UNDO_V4 " DROP TABLE rls_horizons;"

/* What schema/pg/003 added, taken away again. */
#define UNDO_V3                                                               \
    " DROP TRIGGER rls_reservations_written ON rls_reservations;"             \
    " DROP FUNCTION rls_reservation_written();"                               \
    " ALTER TABLE rls_meta DROP COLUMN resv_seen;"

/* A database made by a library of schema version 1 (before the policy
 * generation) is brought to version 3 by the next open: the column, and
 * the triggers that move it with every write of a policy row (and not
 * with a deletion); the rules and counters it held are kept. */
static void a_version_1_schema_is_upgraded(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    assert_true(it_check(t, "api", "k", 1, T0, NULL));
    rls_close(t->db);
    t->db = NULL;
    it_sql_exec(t->path, "DROP TRIGGER rls_blocks_written ON rls_blocks;"
                         " DROP TRIGGER rls_assignments_written ON rls_assignments;"
                         " DROP TRIGGER rls_overrides_written ON rls_overrides;"
                         " DROP FUNCTION rls_policy_written();"
                         " ALTER TABLE rls_meta DROP COLUMN policy_gen;" UNDO_V5 UNDO_V4 UNDO_V3
                         " UPDATE rls_schema SET version = 1");
    assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT version FROM rls_schema"), 5);
    assert_int_equal(it_sql_int(t->path, "SELECT policy_gen FROM rls_meta"), 0);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_rulesets"), 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 1);

    assert_int_equal(rls_block_set_at(t->db, "api", "k", 0, "test", T0 + 1), RLS_OK);
    int64_t after_block = it_sql_int(t->path, "SELECT policy_gen FROM rls_meta");
    assert_true(after_block > 0);
    assert_int_equal(rls_override_set_at(t->db, "api", "k", "r", 9, 0, T0 + 2), RLS_OK);
    int64_t after_override = it_sql_int(t->path, "SELECT policy_gen FROM rls_meta");
    assert_true(after_override > after_block);
    assert_int_equal(rls_block_unset_at(t->db, "api", "k", T0 + 3), RLS_OK);
    assert_int_equal(it_sql_int(t->path, "SELECT policy_gen FROM rls_meta"), after_override);
    it_sql_exec(t->path, "INSERT INTO rls_assignments(pattern, action, kind, tier, created_ms)"
                         " VALUES ('k'::bytea, '', 0, 'gold', 0)");
    assert_true(it_sql_int(t->path, "SELECT policy_gen FROM rls_meta") > after_override);
    it_free(t);
}

/* Version 2 (before the reservations' flag) becomes version 3: the flag
 * says whether the database held a reservation then, and the trigger sets
 * it with the first one stored afterwards. */
static void a_version_2_schema_is_upgraded(void **state)
{
    IT_PG_ONLY();
    for (int held = 0; held < 2; held++) {
        itest *t = it_new(RULES);
        int64_t id = 0;
        rls_result r;
        if (held)
            assert_int_equal(rls_reserve_at(t->db, "api", "k", 1, 60000, T0, &id, &r), RLS_OK);
        else
            assert_true(it_check(t, "api", "k", 1, T0, NULL));
        rls_close(t->db);
        t->db = NULL;
        it_sql_exec(t->path, UNDO_V5 UNDO_V4 UNDO_V3 " UPDATE rls_schema SET version = 2");
        assert_int_equal(rls_open(&t->db, t->path, NULL), RLS_OK);
        assert_int_equal(it_sql_int(t->path, "SELECT version FROM rls_schema"), 5);
        assert_int_equal(it_sql_int(t->path, "SELECT resv_seen::int FROM rls_meta"), held);
        assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), held);
        assert_int_equal(rls_reserve_at(t->db, "api", "k2", 1, 60000, T0 + 1, &id, &r), RLS_OK);
        assert_int_equal(it_sql_int(t->path, "SELECT resv_seen::int FROM rls_meta"), 1);
        it_free(t);
    }
}

/* Makes the next COMMIT of a transaction that wrote `table` fail once with
 * a serialization failure (what CockroachDB's SERIALIZABLE gives at
 * COMMIT), by a deferred trigger; SELECT nextval('fail_once') afterwards
 * says how often it fired plus one. */
static void fail_next_commit_on(itest *t, const char *table)
{
    char sql[700];
    snprintf(sql, sizeof sql,
             "CREATE SEQUENCE fail_once;"
             " CREATE FUNCTION fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$"
             " BEGIN IF nextval('fail_once') = 1 THEN"
             " RAISE EXCEPTION 'test: fails once' USING ERRCODE = '40001'; END IF;"
             " RETURN NULL; END $$;"
             " CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT OR UPDATE OR DELETE ON %s"
             " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_commit()",
             table);
    it_sql_exec(t->path, sql);
}

static int64_t fired(itest *t)
{
    return it_sql_int(t->path, "SELECT nextval('fail_once')") - 1;
}

/* A check whose COMMIT fails with a serialization failure is run again,
 * and counts once: in its counter and in the statistics (the first
 * attempt's count is taken back). */
static void a_check_run_again_after_its_commit_failed_counts_once(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    rls_result r;
    assert_true(it_check(t, "api", "a", 1, T0, &r));   /* flushes the stats */
    fail_next_commit_on(t, "rls_state");
    assert_true(it_check(t, "api", "b", 1, T0 + 1, &r));   /* a new key: the usual path */
    assert_int_equal(r.remaining, 2);
    assert_int_equal(fired(t), 2);   /* it ran twice */
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state WHERE key = 'b'::bytea"), 1);
    rls_close(t->db);   /* the stats still in the handle are written */
    t->db = NULL;
    assert_int_equal(it_sql_int(t->path, "SELECT allowed FROM rls_stats_total"
                                         " WHERE action = 'api'"), 2);
    it_free(t);
}

/* The other writers are run again as well, and take effect once: an
 * admin change (one audit row), a rule set (the next version), a refund,
 * a reservation's commit and cancel, a reset and a GC step. */
static void every_write_is_run_again_after_its_commit_failed(void **state)
{
    IT_PG_ONLY();
    itest *t;
    rls_result r;
    int64_t id = 0, v = 0, deleted = -1;

    t = it_new(RULES);
    fail_next_commit_on(t, "rls_blocks");
    assert_int_equal(rls_block_set_at(t->db, "api", "k", 0, "abuse", T0), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op = 'block'"), 1);
    assert_false(it_check(t, "api", "k", 1, T0 + 1, NULL));
    it_free(t);

    t = it_new(RULES);
    fail_next_commit_on(t, "rls_overrides");
    assert_int_equal(rls_override_set_at(t->db, "api", "k", "r", 1, 0, T0), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit"
                                         " WHERE op = 'override.set'"), 1);
    assert_true(it_check(t, "api", "k", 1, T0 + 1, NULL));
    assert_false(it_check(t, "api", "k", 1, T0 + 2, NULL));   /* limit 1 now */
    it_free(t);

    t = it_new("version: 1\ntiers: { gold: {} }\n" RULES_BODY);
    fail_next_commit_on(t, "rls_assignments");
    assert_int_equal(rls_tier_assign_at(t->db, "api", "k", "gold", 0, T0), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_assignments"), 1);
    it_free(t);

    t = it_new(RULES);
    fail_next_commit_on(t, "rls_rulesets");
    assert_int_equal(rls_rules_apply_v2_at(t->db, RULES, strlen(RULES), "r.yaml", NULL,
                                           RLS_APPLY_FORCE, T0, &v, NULL), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(v, 2);
    assert_int_equal(it_sql_int(t->path, "SELECT max(version) FROM rls_rulesets"), 2);
    it_free(t);

    t = it_new(RULES);
    assert_true(it_check(t, "api", "k", 2, T0, NULL));
    fail_next_commit_on(t, "rls_state");
    assert_int_equal(rls_refund_at(t->db, "api", "k", 1, T0 + 1), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state WHERE key = 'k'::bytea"), 1);
    it_free(t);

    for (int cancel = 0; cancel <= 1; cancel++) {
        t = it_new(RULES);
        assert_int_equal(rls_reserve_at(t->db, "api", "k", 2, 60000, T0, &id, &r), RLS_OK);
        assert_true(id > 0);
        fail_next_commit_on(t, "rls_reservations");
        assert_int_equal(cancel ? rls_cancel_at(t->db, id, T0 + 1)
                                : rls_commit_at(t->db, id, T0 + 1), RLS_OK);
        assert_int_equal(fired(t), 2);
        assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_reservations"), 0);
        assert_int_equal(it_sql_int(t->path, "SELECT b FROM rls_state WHERE key = 'k'::bytea"),
                         cancel ? 0 : 2);
        it_free(t);
    }

    t = it_new(RULES);
    assert_true(it_check(t, "api", "k", 1, T0, NULL));
    fail_next_commit_on(t, "rls_state");
    assert_int_equal(rls_reset_at(t->db, "api", "k", T0 + 1), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_audit WHERE op = 'reset'"), 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 0);
    it_free(t);

    t = it_new(RULES);
    assert_true(it_check(t, "api", "k", 1, T0, NULL));
    fail_next_commit_on(t, "rls_state");
    assert_int_equal(rls_gc_at(t->db, 100, T0 + 3600000, &deleted), RLS_OK);
    assert_int_equal(fired(t), 2);
    assert_int_equal(deleted, 1);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM rls_state"), 0);
    it_free(t);
}

/* A child process: one check of (pen, e) at `now` on its own handle; exits
 * 0 when denied, 1 when admitted, 2 on an error. */
static void check_in_child(const char *path, int64_t now)
{
    rls_db *db = NULL;
    rls_result r;
    if (rls_open(&db, path, NULL) != RLS_OK)
        _exit(2);
    int rc = rls_check_at(db, "pen", "e", 1, now, &r);
    rls_close(db);
    _exit(rc != RLS_OK ? 2 : r.allowed);
}

/* Two hosts denying the same key at the same instant read its penalty
 * history before the one that locks its counter first has written the
 * next penalty.  Both then impose that same next step, as one host's
 * checks would have in turn (the second one would have found the key
 * blocked): the escalation level is the one SQLite gives, not one more
 * or one less. */
static void concurrent_denials_escalate_a_penalty_once(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new("version: 1\n"
                      "actions:\n"
                      "  pen:\n"
                      "    limits:\n"
                      "      - { name: r, algorithm: fixed_window, limit: 1, window: 1m,\n"
                      "          block_for: [1s, 1h] }\n");
    const int64_t at = T0 + 2000;   /* the first penalty is over, not forgotten */
    assert_true(it_check(t, "pen", "e", 1, T0, NULL));
    assert_false(it_check(t, "pen", "e", 1, T0 + 1, NULL));   /* penalty step 0 */
    assert_int_equal(it_sql_int(t->path, "SELECT level FROM rls_blocks"), 0);

    PGconn *c = PQconnectdb(t->path);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(PQexec(c, "BEGIN"));
    PQclear(PQexec(c, "SELECT a FROM rls_state WHERE key = 'e'::bytea FOR UPDATE"));
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0)
            check_in_child(t->path, at);
    }
    /* both have read the key's policy and wait for its counter */
    int64_t waiting = 0;
    for (int i = 0; i < 1000 && waiting < 2; i++) {
        waiting = it_sql_int(t->path, "SELECT count(*) FROM pg_stat_activity"
                                      " WHERE datname = current_database()"
                                      " AND wait_event_type = 'Lock'");
        usleep(10000);
    }
    assert_int_equal(waiting, 2);
    PQclear(PQexec(c, "COMMIT"));
    PQfinish(c);
    for (int i = 0; i < 2; i++) {
        int st = -1;
        assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);   /* denied */
    }
    assert_int_equal(it_sql_int(t->path, "SELECT level FROM rls_blocks"), 1);
    assert_int_equal(it_sql_int(t->path, "SELECT until_ms FROM rls_blocks"), at + 3600000);
    rls_result r;
    assert_int_equal(rls_check_at(t->db, "pen", "e", 1, at + 1, &r), RLS_OK);
    assert_int_equal(r.reason, RLS_REASON_BLOCKED);
    it_free(t);
}

/* t's URI for another role of the test server (tests/pg/server.sh): the
 * "rlstore@" of the base URI becomes "<user>@". */
static void uri_as(char *buf, size_t size, const itest *t, const char *user)
{
    const char *at = strstr(t->path, "rlstore@");
    assert_non_null(at);
    snprintf(buf, size, "%.*s%s%s", (int)(at - t->path), t->path, user, at + 7);
}

/* Opens uri with the environment variable name set to value (NULL: unset),
 * then restores it; the code of rls_open.  *db is closed unless keep. */
static int open_with_env(const char *uri, const char *name, const char *value, rls_db **db)
{
    const char *was = getenv(name);
    char *saved = was ? strdup(was) : NULL;
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    int rc = rls_open(db, uri, NULL);
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
    return rc;
}

/* Passwords and TLS come from libpq's own settings and never show: a role
 * that must give a password (scram-sha-256) logs in with PGPASSWORD or a
 * password file (PGPASSFILE), is refused without one, and no message
 * quotes it; a role that must use TLS is refused with PGSSLMODE=disable
 * and checks over TLS with PGSSLMODE=require. */
static void passwords_and_tls_come_from_libpq_settings(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new(RULES);
    char uri[4200], bad[4300], pass[4096], line[256];
    rls_db *db = NULL;
    const char *secret = "pw-s3cret-test";   /* tests/pg/server.sh */
    uri_as(uri, sizeof uri, t, "rlstore_pw");
    setenv("PGCONNECT_TIMEOUT", "5", 1);

    /* no password anywhere: refused */
    assert_int_equal(open_with_env(uri, "PGPASSFILE", "/nonexistent/pgpass", &db),
                     RLS_ECANTOPEN);
    assert_null(db);
    assert_non_null(strstr(rls_errmsg(NULL), "password"));
    /* PGPASSWORD */
    assert_int_equal(open_with_env(uri, "PGPASSWORD", secret, &db), RLS_OK);
    assert_true(it_check_on(db, "api", "pw", 1, T0, NULL));
    rls_close(db);
    /* a password file */
    tu_path(pass, sizeof pass, t->dir, "pgpass");
    const char *port = strchr(strstr(uri, "@"), ':') + 1;
    const char *dbname = strchr(port, '/') + 1;   /* up to the '?' */
    snprintf(line, sizeof line, "127.0.0.1:%d:%.*s:rlstore_pw:%s\n", atoi(port),
             (int)strcspn(dbname, "?"), dbname, secret);
    FILE *f = fopen(pass, "w");
    assert_non_null(f);
    fputs(line, f);
    fclose(f);
    assert_int_equal(chmod(pass, 0600), 0);
    assert_int_equal(open_with_env(uri, "PGPASSFILE", pass, &db), RLS_OK);
    assert_true(it_check_on(db, "api", "pw", 1, T0 + 1, NULL));
    rls_close(db);
    /* a wrong password in the URI: refused, and neither it nor the right
     * one (from the file) is quoted */
    snprintf(bad, sizeof bad, "%.*s:wr0ng-one%s", (int)(strchr(uri, '@') - uri), uri,
             strchr(uri, '@'));
    assert_int_equal(open_with_env(bad, "PGPASSFILE", pass, &db), RLS_ECANTOPEN);
    assert_null(strstr(rls_errmsg(NULL), "wr0ng"));
    assert_null(strstr(rls_errmsg(NULL), secret));
    assert_non_null(strstr(rls_errmsg(NULL), "password authentication failed"));

    /* TLS */
    if (it_sql_int(t->path, "SELECT setting = 'on' FROM pg_settings WHERE name = 'ssl'") != 1) {
        it_free(t);
        unsetenv("PGCONNECT_TIMEOUT");
        skip();   /* the server has no certificate (no openssl): said as skipped */
    }
    uri_as(uri, sizeof uri, t, "rlstore_tls");
    assert_int_equal(open_with_env(uri, "PGSSLMODE", "disable", &db), RLS_ECANTOPEN);
    assert_int_equal(open_with_env(uri, "PGSSLMODE", "require", &db), RLS_OK);
    assert_true(it_check_on(db, "api", "tls", 1, T0, NULL));
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM pg_stat_ssl s"
                                         " JOIN pg_stat_activity a USING (pid)"
                                         " WHERE a.usename = 'rlstore_tls' AND s.ssl"), 1);
    rls_close(db);
    unsetenv("PGCONNECT_TIMEOUT");
    it_free(t);
}

/* What synchronous_commit each kind of commit ran with, as SQLite's
 * NORMAL/FULL split: off for checks (the one-round-trip check too), on
 * for checks of a `durability: full` limit, for every check of a handle
 * opened with RLS_DURABILITY_FULL, and for admin changes.  A trigger
 * records the setting of every write. */
static void commits_wait_for_the_wal_as_sqlite_syncs(void **state)
{
    IT_PG_ONLY();
    itest *t = it_new("version: 1\n"
                      "actions:\n"
                      "  api:\n"
                      "    limits: [ { name: r, algorithm: fixed_window, limit: 9, window: 1m } ]\n"
                      "  pay:\n"
                      "    limits: [ { name: d, algorithm: fixed_window, limit: 9, window: 1d,"
                      " durability: full } ]\n");
    it_sql_exec(t->path,
                "CREATE TABLE sync_log(id serial, tab text, sync text);"
                " CREATE FUNCTION log_sync() RETURNS trigger LANGUAGE plpgsql AS $$"
                " BEGIN INSERT INTO sync_log(tab, sync)"
                " VALUES (TG_TABLE_NAME, current_setting('synchronous_commit')); RETURN NULL; END $$;"
                " CREATE TRIGGER log_state AFTER INSERT OR UPDATE ON rls_state"
                " FOR EACH ROW EXECUTE FUNCTION log_sync();"
                " CREATE TRIGGER log_audit AFTER INSERT ON rls_audit"
                " FOR EACH ROW EXECUTE FUNCTION log_sync()");
#define LAST_SYNC(tab)                                                        \
    it_sql_int(t->path, "SELECT sync = 'on' FROM sync_log WHERE tab = '" tab   \
                        "' ORDER BY id DESC LIMIT 1")
    assert_true(it_check(t, "api", "k", 1, T0, NULL));          /* a new key */
    assert_int_equal(LAST_SYNC("rls_state"), 0);
    assert_true(it_check(t, "api", "k", 1, T0 + 1, NULL));      /* one round trip */
    assert_int_equal(LAST_SYNC("rls_state"), 0);
    assert_true(it_check(t, "pay", "k", 1, T0 + 2, NULL));
    assert_int_equal(LAST_SYNC("rls_state"), 1);
    assert_true(it_check(t, "api", "k", 1, T0 + 3, NULL));      /* back to off */
    assert_int_equal(LAST_SYNC("rls_state"), 0);
    assert_int_equal(rls_block_set_at(t->db, "api", "b", 0, "x", T0 + 4), RLS_OK);
    assert_int_equal(LAST_SYNC("rls_audit"), 1);
    assert_true(it_check(t, "api", "k", 1, T0 + 5, NULL));
    assert_int_equal(LAST_SYNC("rls_state"), 0);
    assert_int_equal(it_sql_int(t->path, "SELECT count(*) FROM sync_log WHERE tab = 'rls_state'"),
                     5);   /* every check wrote through the trigger */

    rls_options o;
    rls_options_init(&o);
    o.durability = RLS_DURABILITY_FULL;
    rls_db *db = NULL;
    assert_int_equal(rls_open(&db, t->path, &o), RLS_OK);
    assert_true(it_check_on(db, "api", "f", 1, T0 + 6, NULL));
    assert_int_equal(LAST_SYNC("rls_state"), 1);
    assert_true(it_check_on(db, "api", "f", 1, T0 + 7, NULL));
    assert_int_equal(LAST_SYNC("rls_state"), 1);
#undef LAST_SYNC
    rls_close(db);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lost_connection_is_reestablished),
        cmocka_unit_test(held_row_makes_a_check_wait_then_fail_by_name),
        cmocka_unit_test(failed_held_back_write_fails_the_check),
        cmocka_unit_test(a_rolled_back_apply_leaves_no_gap_in_the_versions),
        cmocka_unit_test(password_never_shown),
        cmocka_unit_test(newer_or_foreign_schemas_are_refused),
        cmocka_unit_test(read_only_or_no_create_makes_nothing),
        cmocka_unit_test(a_version_1_schema_is_upgraded),
        cmocka_unit_test(a_version_2_schema_is_upgraded),
        cmocka_unit_test(a_check_run_again_after_its_commit_failed_counts_once),
        cmocka_unit_test(every_write_is_run_again_after_its_commit_failed),
        cmocka_unit_test(concurrent_denials_escalate_a_penalty_once),
        cmocka_unit_test(passwords_and_tls_come_from_libpq_settings),
        cmocka_unit_test(commits_wait_for_the_wal_as_sqlite_syncs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
