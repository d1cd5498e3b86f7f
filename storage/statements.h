/*
 * statements.h - the check path's statement table: every statement the
 * library runs for a check, a GC step or a rule change, in SQLite's dialect
 * (the reference text).  A backend prepares each in its own form
 * (backend.h, prepare): the SQLite split deployment's in
 * storage/sqlite/split_forms.h, PostgreSQL's in storage/pg/pg_forms.h.
 * Prepared once per connection on first use, reset after every use
 * (stmt.c).
 */
#ifndef RLS_STATEMENTS_H
#define RLS_STATEMENTS_H

#define RLS__STATE_INSERT                                                     \
    "INSERT INTO rls_state(lid, key, alg, a, b, c, last_ms, exp_ms, log)"      \
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
/* The insert of a state, or the update of the one there. */
#define RLS__STATE_UPSERT                                                     \
    RLS__STATE_INSERT " ON CONFLICT(key, lid) DO UPDATE SET"                   \
    " alg = excluded.alg, a = excluded.a, b = excluded.b, c = excluded.c,"     \
    " last_ms = excluded.last_ms, exp_ms = excluded.exp_ms, log = excluded.log"

/* One block arm of KEY_POLICY in the file `schema` ("", "rules." or "main."). */
#define RLS__POLICY_BLOCKS(schema, where)                                     \
    " SELECT 1, action, until_ms, kind, rule, level, forget_ms, reason FROM " schema "rls_blocks" \
    " WHERE " where
/* The arms of every action's rows for the canonical (?3) and the given (?4)
 * key, each only if it is another key than the ones before. */
#define RLS__POLICY_CANON "key = ?3 AND action = '' AND ?3 <> ?1"
#define RLS__POLICY_RAW "key = ?4 AND action = '' AND ?4 <> ?1 AND ?4 <> ?3"
/* The assignment and override arms, from `schema` ("" or "rules.") */
#define RLS__POLICY_ASSIGN_OV(schema)                                         \
    " UNION ALL SELECT 2, action, expires_ms, 0, tier, 0, 0, '' FROM " schema "rls_assignments" \
    " WHERE pattern = ?1 AND action = '' AND kind = 0"                        \
    " UNION ALL SELECT 2, action, expires_ms, 0, tier, 0, 0, '' FROM " schema "rls_assignments" \
    " WHERE pattern = ?1 AND action = ?2 AND kind = 0"                        \
    " UNION ALL SELECT 2, action, expires_ms, 0, tier, 0, 0, '' FROM " schema "rls_assignments" \
    " WHERE pattern = ?3 AND action = '' AND kind = 0 AND ?3 <> ?1"           \
    " UNION ALL SELECT 2, action, expires_ms, 0, tier, 0, 0, '' FROM " schema "rls_assignments" \
    " WHERE pattern = ?4 AND action = '' AND kind = 0 AND ?4 <> ?1 AND ?4 <> ?3" \
    " UNION ALL SELECT 3, action, expires_ms, lim, limit_name, 0, 0, '' FROM " schema "rls_overrides" \
    " WHERE key = ?1 AND action = ?2"

/* Every statement the library runs, prepared once per connection on first
 * use and reset after every use. */
#define RLS_STMT_MAP(XX)                                                      \
    XX(BEGIN_IMM, "BEGIN IMMEDIATE")                                          \
    XX(BEGIN_READ, "BEGIN")                                                   \
    XX(COMMIT, "COMMIT")                                                      \
    XX(ROLLBACK, "ROLLBACK")                                                  \
    XX(META_GET, "SELECT rules_gen, gc_horizon, active_version FROM rls_meta WHERE id = 1") \
    XX(RULES_GET, "SELECT yaml FROM rls_rulesets WHERE version = ?1")        \
    XX(LIMITS_ALL, "SELECT lid, action, name FROM rls_limits")               \
    XX(LIMIT_ADD, "INSERT OR IGNORE INTO rls_limits(action, name) VALUES (?1, ?2)") \
    /* a limit registered before variants (apply.c): named for the variant \
     * of the rules it was counted under, unless that name is taken */      \
    XX(LIMIT_ADOPT, "UPDATE rls_limits SET name = ?3 WHERE action = ?1 AND name = ?2" \
       " AND NOT EXISTS (SELECT 1 FROM rls_limits WHERE action = ?1 AND name = ?3)") \
    XX(PATTERNS_ALL, "SELECT pattern, action, tier, expires_ms FROM rls_assignments WHERE kind <> 0") \
    /* Rows for this action match the normalised key (?1); rows for every   \
     * action ('') match it, the key's canonical form (?3, keynorm.h: how    \
     * such rows are stored) or the key as given (?4: rows stored before     \
     * keys of every action were canonical).  One primary-key seek per arm;  \
     * an arm whose key equals an earlier one's is skipped.  Not IN/OR: with \
     * bound parameters SQLite builds an ephemeral b-tree for them on every  \
     * execution.  Column 7 is a block's reason (explain). */               \
    XX(KEY_POLICY,                                                            \
       RLS__POLICY_BLOCKS("", "key = ?1 AND action = ''") " UNION ALL"    \
       RLS__POLICY_BLOCKS("", "key = ?1 AND action = ?2") " UNION ALL"    \
       RLS__POLICY_BLOCKS("", RLS__POLICY_CANON) " UNION ALL"             \
       RLS__POLICY_BLOCKS("", RLS__POLICY_RAW)                            \
       RLS__POLICY_ASSIGN_OV(""))                                             \
    XX(EMPTIES,                                                               \
       "SELECT NOT EXISTS (SELECT 1 FROM rls_blocks)"                         \
       " AND NOT EXISTS (SELECT 1 FROM rls_assignments WHERE kind = 0)"       \
       " AND NOT EXISTS (SELECT 1 FROM rls_overrides),"                       \
       " NOT EXISTS (SELECT 1 FROM rls_reservations)")                        \
    XX(STATE_GET, "SELECT alg, a, b, c, last_ms, exp_ms, log FROM rls_state WHERE lid = ?1 AND key = ?2") \
    /* the same in a read transaction (a peek): locks nothing on PostgreSQL */ \
    XX(STATE_READ, "SELECT alg, a, b, c, last_ms, exp_ms, log FROM rls_state WHERE lid = ?1 AND key = ?2") \
    /* the state this write transaction read (keyctx.c): under SQLite's    \
     * write lock it is there, and an UPDATE costs SQLite a sixth less than \
     * the upsert (no insert attempted first); PostgreSQL's form is the     \
     * upsert (pg_forms.h) */                                                \
    XX(STATE_PUT, "UPDATE rls_state SET alg = ?3, a = ?4, b = ?5, c = ?6,"   \
       " last_ms = ?7, exp_ms = ?8, log = ?9 WHERE key = ?2 AND lid = ?1")    \
    /* the state of a key that had none (keyctx.c); under SQLite's write lock \
     * the same upsert, on PostgreSQL see RLS_STMT_PG_MAP */                  \
    XX(STATE_NEW, RLS__STATE_UPSERT)                                          \
    /* serialises rule-set changes (apply.c): a no-op under SQLite's lock */ \
    XX(META_LOCK, "SELECT 1")                                                 \
    XX(STATE_DEL, "DELETE FROM rls_state WHERE lid = ?1 AND key = ?2")       \
    XX(PENALTY_PUT,                                                           \
       "INSERT INTO rls_blocks(key, action, until_ms, kind, level, forget_ms, rule, reason, created_ms)" \
       " VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, 'penalty', ?7) ON CONFLICT(key, action) DO UPDATE SET" \
       " until_ms = excluded.until_ms, kind = 1, level = excluded.level," \
       " forget_ms = excluded.forget_ms, rule = excluded.rule, reason = excluded.reason," \
       " created_ms = excluded.created_ms")                                   \
    XX(STATS_ADD,                                                             \
       "INSERT INTO rls_stats(action, sec, allowed, denied) VALUES (?1, ?2, ?3, ?4)" \
       " ON CONFLICT(action, sec) DO UPDATE SET allowed = rls_stats.allowed + excluded.allowed," \
       " denied = rls_stats.denied + excluded.denied")                                  \
    XX(STATS_TOTAL_ADD,                                                       \
       "INSERT INTO rls_stats_total(action, allowed, denied) VALUES (?1, ?2, ?3)" \
       " ON CONFLICT(action) DO UPDATE SET allowed = rls_stats_total.allowed + excluded.allowed," \
       " denied = rls_stats_total.denied + excluded.denied")                                  \
    XX(GC_SCAN, "SELECT lid, key, exp_ms FROM rls_state WHERE (key, lid) > (?2, ?1) ORDER BY key, lid LIMIT ?3") \
    XX(GC_CURSOR, "SELECT gc_lid, gc_key FROM rls_meta WHERE id = 1")        \
    /* the clock floor of one limit (gc.c, keyctx.c; schema/004) */         \
    XX(HORIZON_GET, "SELECT horizon FROM rls_horizons WHERE lid = ?1")       \
    XX(HORIZON_RAISE, "INSERT INTO rls_horizons(lid, horizon) VALUES (?1, ?2)" \
       " ON CONFLICT(lid) DO UPDATE SET"                                      \
       " horizon = max(rls_horizons.horizon, excluded.horizon)")             \
    XX(GC_META_SET, "UPDATE rls_meta SET gc_lid = ?1, gc_key = ?2, gc_horizon = max(gc_horizon, ?3) WHERE id = 1") \
    XX(GC_STATS, "DELETE FROM rls_stats WHERE sec < ?1")                     \
    XX(GC_KEY_STATS, "DELETE FROM rls_key_stats WHERE seen_ms < ?1")          \
    XX(KEY_STATS_ADD,                                                         \
       "INSERT INTO rls_key_stats(action, key, denied, last_denied_ms, ppm, seen_ms)" \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(action, key) DO UPDATE SET" \
       " denied = rls_key_stats.denied + excluded.denied,"                    \
       " last_denied_ms = max(rls_key_stats.last_denied_ms, excluded.last_denied_ms)," \
       " ppm = excluded.ppm, seen_ms = max(rls_key_stats.seen_ms, excluded.seen_ms)")      \
    XX(GC_BLOCKS, "DELETE FROM rls_blocks WHERE until_ms <> 0 AND until_ms <= ?1 AND forget_ms <= ?1") \
    XX(GC_ASSIGN, "DELETE FROM rls_assignments WHERE kind = 0 AND expires_ms <> 0 AND expires_ms <= ?1") \
    XX(GC_OVERRIDES, "DELETE FROM rls_overrides WHERE expires_ms <> 0 AND expires_ms <= ?1") \
    XX(RES_EXPIRED, "SELECT id FROM rls_reservations WHERE expires_ms <= ?1 ORDER BY expires_ms LIMIT ?2") \
    XX(RES_EXPIRED_KEY, "SELECT id FROM rls_reservations WHERE key = ?1 AND action = ?2 AND expires_ms <= ?3 LIMIT 16") \
    XX(HK_SAVE, "SAVEPOINT rls_housekeeping")                                 \
    XX(HK_RELEASE, "RELEASE rls_housekeeping")                                \
    XX(HK_UNDO, "ROLLBACK TO rls_housekeeping")                               \
    XX(RES_ADD, "INSERT INTO rls_reservations(action, key, cost, created_ms, expires_ms, lids)" \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id") \
    XX(RES_GET, "SELECT action, key, cost, created_ms, expires_ms, lids FROM rls_reservations WHERE id = ?1") \
    XX(RES_DEL, "DELETE FROM rls_reservations WHERE id = ?1")                \
    XX(RULESET_ADD, "INSERT INTO rls_rulesets(created_ms, os_user, tool, source, comment, yaml)" \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING version") \
    XX(META_ACTIVATE, "UPDATE rls_meta SET active_version = ?1, rules_gen = rules_gen + 1 WHERE id = 1") \
    XX(META_BUMP, "UPDATE rls_meta SET rules_gen = rules_gen + 1 WHERE id = 1") \
    XX(AUDIT_ADD, "INSERT INTO rls_audit(ts_ms, os_user, tool, op, action, key, before, after, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)") \
    XX(BLOCK_GET_ONE, "SELECT until_ms, kind, reason, forget_ms FROM rls_blocks WHERE key = ?1 AND action = ?2") \
    XX(BLOCK_SET,                                                             \
       "INSERT INTO rls_blocks(key, action, until_ms, kind, level, forget_ms, rule, reason, os_user, created_ms)" \
       " VALUES (?1, ?2, ?3, 0, 0, 0, '', ?4, ?5, ?6) ON CONFLICT(key, action) DO UPDATE SET" \
       " until_ms = excluded.until_ms, kind = 0, level = 0, forget_ms = 0, rule = ''," \
       " reason = excluded.reason, os_user = excluded.os_user, created_ms = excluded.created_ms") \
    XX(BLOCK_DEL, "DELETE FROM rls_blocks WHERE key = ?1 AND action = ?2")   \
    XX(ASSIGN_GET_ONE, "SELECT tier, expires_ms FROM rls_assignments WHERE pattern = ?1 AND action = ?2") \
    XX(ASSIGN_SET,                                                            \
       "INSERT INTO rls_assignments(pattern, action, kind, tier, expires_ms, created_ms)" \
       " VALUES (?1, ?6, ?2, ?3, ?4, ?5) ON CONFLICT(pattern, action) DO UPDATE SET" \
       " kind = excluded.kind, tier = excluded.tier, expires_ms = excluded.expires_ms," \
       " created_ms = excluded.created_ms")                                   \
    XX(ASSIGN_DEL, "DELETE FROM rls_assignments WHERE pattern = ?1 AND action = ?6") \
    XX(OVERRIDE_GET_ONE, "SELECT lim, expires_ms FROM rls_overrides WHERE key = ?1 AND action = ?2 AND limit_name = ?3") \
    XX(OVERRIDE_SET,                                                          \
       "INSERT INTO rls_overrides(key, action, limit_name, lim, expires_ms, created_ms)" \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(key, action, limit_name) DO UPDATE SET" \
       " lim = excluded.lim, expires_ms = excluded.expires_ms, created_ms = excluded.created_ms") \
    XX(OVERRIDE_DEL, "DELETE FROM rls_overrides WHERE key = ?1 AND action = ?2 AND limit_name = ?3") \
    /* split deployments only (policy.c, gc.c): the penalty of a key in the \
     * counters file, and expired manual blocks in the rules file */       \
    XX(PENALTY_GET_ONE, "SELECT until_ms, kind, reason, forget_ms FROM rls_blocks WHERE key = ?1 AND action = ?2") \
    XX(PENALTY_DEL, "DELETE FROM rls_blocks WHERE key = ?1 AND action = ?2") \
    XX(GC_RULES_BLOCKS, "DELETE FROM rls_blocks WHERE until_ms <> 0 AND until_ms <= ?1") \
    /* holds off checks that add or remove counters while a bulk reset     \
     * recounts an action's keys (admin_bulk.c): SQLite's write lock does */ \
    XX(KEYS_LOCK, "SELECT 1")

enum rls_stmt_id {
#define RLS__STMT_ENUM(name, sql) STMT_##name,
    RLS_STMT_MAP(RLS__STMT_ENUM)
#undef RLS__STMT_ENUM
    STMT__COUNT
};

/* The statement tables a backend is asked to prepare from (backend.h):
 * this one, admin.h's, copy.h's. */
enum rls_stmt_table { RLS_TABLE_CHECK = 0, RLS_TABLE_ADMIN, RLS_TABLE_COPY };

#endif
