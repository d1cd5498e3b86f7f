/*
 * test_pg_sql.c - the SQLite-to-PostgreSQL statement translation
 * (storage/pg/pg_sql.c): each rewrite, string literals left alone, parameters
 * counted, and the parameters a statement casts to bytes reported.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

char *rls__pg_translate(const char *sql, int *nparams, uint32_t *bytea);

static void expect_sql(const char *in, const char *want, int want_params, uint32_t want_bytea)
{
    int n = -1;
    uint32_t b = 0xffffffffu;
    char *out = rls__pg_translate(in, &n, &b);
    assert_non_null(out);
    assert_string_equal(out, want);
    assert_int_equal(n, want_params);
    assert_int_equal(b, want_bytea);
    free(out);
}

static void parameters_become_dollars(void **state)
{
    expect_sql("SELECT a FROM t WHERE x = ?1 AND y = ?12",
               "SELECT a FROM t WHERE x = $1 AND y = $12", 12, 0);
    expect_sql("SELECT 1", "SELECT 1", 0, 0);
}

static void literals_are_left_alone(void **state)
{
    expect_sql("SELECT 'a ?1 main.t max(a, b) it''s' FROM t WHERE k = ?2",
               "SELECT 'a ?1 main.t max(a, b) it''s' FROM t WHERE k = $2", 2, 0);
}

static void schema_and_transactions(void **state)
{
    expect_sql("BEGIN IMMEDIATE", "BEGIN", 0, 0);
    expect_sql("BEGIN", "BEGIN", 0, 0);
    expect_sql("SELECT x FROM main.rls_state s CROSS JOIN main.rls_limits l ON l.lid = s.lid",
               "SELECT x FROM rls_state s JOIN rls_limits l ON l.lid = s.lid", 0, 0);
    expect_sql("INSERT OR IGNORE INTO rls_limits(action, name) VALUES (?1, ?2)",
               "INSERT INTO rls_limits(action, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
               2, 0);
}

static void scalar_functions(void **state)
{
    /* scalar max/min become GREATEST/LEAST; the aggregate stays */
    expect_sql("UPDATE m SET h = max(h, ?3), l = min(l, ?1, 0)",
               "UPDATE m SET h = GREATEST(h, $3), l = LEAST(l, $1, 0)", 3, 0);
    expect_sql("SELECT max(a) FROM t", "SELECT max(a) FROM t", 0, 0);
    expect_sql("SELECT total(max(keys, 0)) FROM t",
               "SELECT COALESCE(sum(GREATEST(keys, 0)), 0) FROM t", 0, 0);
    expect_sql("SELECT 1 WHERE instr(key, ?2) > 0",
               "SELECT 1 WHERE position(($2) IN (key)) > 0", 2, 0);
}

static void casts(void **state)
{
    /* a blob cast of a parameter marks it as bytes; a text cast of a key
     * is the key itself (the driver returns bytea as its bytes) */
    expect_sql("SELECT CAST(key AS TEXT) FROM t WHERE key = CAST(?3 AS BLOB)",
               "SELECT (key) FROM t WHERE key = CAST($3 AS bytea)", 3, 1u << 2);
    expect_sql("SELECT length(CAST(yaml AS BLOB)) FROM r",
               "SELECT length(CAST(yaml AS bytea)) FROM r", 0, 0);
    /* casts to PostgreSQL's own types, in statements written for it alone
     * (storage/copy.c), pass as they are, :: included */
    expect_sql("SELECT setval(s, GREATEST(?1, 0)) FROM (SELECT CAST(pg_get_serial_sequence("
               "'rls_reservations', 'id') AS regclass) AS s) q",
               "SELECT setval(s, GREATEST($1, 0)) FROM (SELECT CAST(pg_get_serial_sequence("
               "'rls_reservations', 'id') AS regclass) AS s) q", 1, 0);
    expect_sql("SELECT ('rls_state'::regclass)::oid || '/'",
               "SELECT ('rls_state'::regclass)::oid || '/'", 0, 0);
}

static void row_values_and_upserts(void **state)
{
    /* keyset pages and inserts that keep the existing row (copy.c) */
    expect_sql("SELECT key FROM rls_state WHERE (key, lid) > (?1, ?2) ORDER BY key, lid LIMIT ?3",
               "SELECT key FROM rls_state WHERE (key, lid) > ($1, $2) ORDER BY key, lid LIMIT $3",
               3, 0);
    expect_sql("INSERT INTO t(id, a) VALUES (?1, ?2) ON CONFLICT(id) DO NOTHING",
               "INSERT INTO t(id, a) VALUES ($1, $2) ON CONFLICT(id) DO NOTHING", 2, 0);
    expect_sql("UPDATE rls_meta SET gc_horizon = max(gc_horizon, ?1) WHERE id = 1",
               "UPDATE rls_meta SET gc_horizon = GREATEST(gc_horizon, $1) WHERE id = 1", 1, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parameters_become_dollars),
        cmocka_unit_test(literals_are_left_alone),
        cmocka_unit_test(schema_and_transactions),
        cmocka_unit_test(scalar_functions),
        cmocka_unit_test(casts),
        cmocka_unit_test(row_values_and_upserts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
