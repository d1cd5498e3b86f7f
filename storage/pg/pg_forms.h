/*
 * pg_forms.h - the statements PostgreSQL runs in a text of its own; every
 * other statement of the check (statements.h) and copy (copy.h) tables is
 * the reference text, translated (pg_sql.c).
 */
#ifndef RLS_PG_FORMS_H
#define RLS_PG_FORMS_H

#include "statements.h"

/*
 * PostgreSQL (pg.c): a check's transaction is READ COMMITTED, where nothing
 * stops two hosts from reading the same counter and both writing it back.
 * So the states a check reads are locked (FOR UPDATE: a second check of
 * the key waits for the first to commit, then reads its result), and a
 * state created by a check is inserted only if no other check created it
 * meanwhile: when one did, the insert changes nothing, and the check runs
 * again (keyctx.c).  A reservation is locked before it is refunded or
 * confirmed, and a rule-set change locks rls_meta before it compares the
 * active version.  Everything else is the text above, translated.
 */
#define RLS_STMT_PG_MAP(XX)                                                   \
    /* a read transaction sees one snapshot, as on SQLite: a listing is     \
     * consistent, and the rules cannot change under it */                  \
    XX(BEGIN_READ, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")         \
    /* no data version to trust between transactions: the emptiness of the  \
     * policy and reservation tables comes with the control row, so a check \
     * of a key without any skips those reads (cache.c), and so do the      \
     * policy tables' generation (schema/pg/002, pg_fast.c) and whether a   \
     * reservation was ever stored (schema/pg/003, pg_fast.c) */            \
    XX(META_GET, "SELECT rules_gen, gc_horizon, active_version,"              \
       " NOT EXISTS (SELECT 1 FROM rls_blocks)"                               \
       " AND NOT EXISTS (SELECT 1 FROM rls_assignments WHERE kind = 0)"       \
       " AND NOT EXISTS (SELECT 1 FROM rls_overrides),"                       \
       " NOT EXISTS (SELECT 1 FROM rls_reservations), policy_gen, NOT resv_seen" \
       " FROM rls_meta WHERE id = 1")                                         \
    XX(STATE_GET, "SELECT alg, a, b, c, last_ms, exp_ms, log FROM rls_state"  \
       " WHERE lid = ?1 AND key = ?2 FOR UPDATE")                             \
    XX(STATE_NEW, RLS__STATE_INSERT " ON CONFLICT(key, lid) DO NOTHING")     \
    /* the state read FOR UPDATE, written back (keyctx.c): the upsert,     \
     * whose outcome need not be looked at (it travels with the next        \
     * statement, pg_pipe.c) */                                             \
    XX(STATE_PUT, RLS__STATE_UPSERT)                                          \
    XX(RES_GET, "SELECT action, key, cost, created_ms, expires_ms, lids FROM rls_reservations" \
       " WHERE id = ?1 FOR UPDATE")                                           \
    XX(META_LOCK, "SELECT 1 FROM rls_meta WHERE id = 1 FOR UPDATE")              \
    XX(KEYS_LOCK, "LOCK TABLE rls_state, rls_key_counts IN SHARE ROW EXCLUSIVE MODE") \
    /* rule-set versions 1..n, as SQLite numbers them: an identity sequence \
     * would skip the number of every apply rolled back or killed (the     \
     * inserts are serialised by META_LOCK, apply.c) */                     \
    XX(RULESET_ADD, "INSERT INTO rls_rulesets(version, created_ms, os_user, tool, source," \
       " comment, yaml) SELECT coalesce(max(version), 0) + 1, ?1, ?2, ?3, ?4, ?5, ?6"     \
       " FROM rls_rulesets RETURNING version")

/* The copy's. */
#define RLS_COPY_PG_MAP(XX)                                                   \
    XX(DST_LOCK, "LOCK TABLE rls_state, rls_key_counts, rls_reservations,"    \
       " rls_blocks, rls_assignments, rls_overrides IN SHARE ROW EXCLUSIVE MODE") \
    XX(DST_RES_SEQ, "SELECT setval(s, GREATEST(?1,"                           \
       " coalesce(pg_sequence_last_value(s), 0))) FROM (SELECT"               \
       " CAST(pg_get_serial_sequence('rls_reservations', 'id') AS regclass) AS s) q")

#endif
