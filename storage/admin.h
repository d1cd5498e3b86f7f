/*
 * admin.h - internals of the admin API (listings, rule-set history,
 * explain, usage, doctor): its statement table and shared helpers.
 * Admin statements are prepared on first use and kept like the check
 * path's, in their own table so the hot path's stays small.
 */
#ifndef RLS_ADMIN_H
#define RLS_ADMIN_H

#include "db.h"
#include "rows.h"

#define RLS_ADMIN_STMT_MAP(XX)                                                \
    XX(VERSIONS, "SELECT r.version, r.created_ms, r.os_user, r.tool, r.source, r.comment," \
       " length(CAST(r.yaml AS BLOB)), r.version = m.active_version"           \
       " FROM rls_rulesets r, rls_meta m WHERE m.id = 1 ORDER BY r.version DESC") \
    XX(RULES_ACTIVE, "SELECT active_version FROM rls_meta WHERE id = 1")      \
    XX(TIER_LIST, "SELECT CAST(pattern AS TEXT), kind, action, tier, expires_ms, created_ms" \
       " FROM rls_assignments WHERE expires_ms = 0 OR expires_ms > ?1 ORDER BY pattern, action") \
    XX(OVERRIDE_LIST, "SELECT CAST(key AS TEXT), action, limit_name, lim, expires_ms, created_ms" \
       " FROM rls_overrides WHERE (expires_ms = 0 OR expires_ms > ?1)"        \
       " AND (?2 IS NULL OR action = ?2) AND (?3 IS NULL OR key = CAST(?3 AS BLOB))" \
       " ORDER BY key, action, limit_name")                                   \
    XX(BLOCK_LIST, "SELECT CAST(key AS TEXT), action, until_ms,"              \
       " CASE kind WHEN 0 THEN 'manual' ELSE 'penalty' END, level, rule, reason, os_user, created_ms" \
       " FROM rls_blocks WHERE until_ms = 0 OR until_ms > ?1 ORDER BY key, action") \
    XX(AUDIT_LIST, "SELECT id, ts_ms, os_user, tool, op, action, CAST(key AS TEXT), before, after, reason" \
       " FROM rls_audit WHERE ?1 IS NULL OR key = CAST(?1 AS BLOB) ORDER BY id DESC LIMIT ?2") \
    XX(STATS_RECENT, "SELECT action, sec, allowed, denied FROM rls_stats"     \
       " WHERE sec > ?1 AND sec <= ?2 ORDER BY action, sec")                  \
    XX(STATS_TOTALS, "SELECT action, allowed, denied FROM rls_stats_total ORDER BY action") \
    XX(STATE_DEL_KEY, "DELETE FROM rls_state WHERE lid = ?1 AND key = ?2")    \
    XX(STATE_SCAN_LID, "SELECT key, alg, a, b, c, last_ms, exp_ms, log FROM rls_state WHERE lid = ?1") \
    /* rows of every action, for those whose key is an IP address (everykey.c) */ \
    XX(EVERY_ROWS, "SELECT 1, key, until_ms, '', reason FROM rls_blocks WHERE action = ''" \
       " UNION ALL SELECT 2, pattern, expires_ms, tier, '' FROM rls_assignments"   \
       " WHERE action = '' AND kind = 0")                                     \
    /* a peek's view of the expired reservations the key's next check gives \
     * back (check.c): the rows RES_EXPIRED_KEY finds, without locking them */ \
    XX(RES_EXPIRED_PEEK, "SELECT cost, created_ms, lids FROM rls_reservations" \
       " WHERE key = ?1 AND action = ?2 AND expires_ms <= ?3 LIMIT 16")        \
    /* the actions a key as stored has a block for (unblock of every action) */ \
    XX(BLOCK_KEY_ACTIONS, "SELECT action FROM rls_blocks WHERE key = ?1")      \
    /* ---- events and metrics (events.c, metrics.c; schema/005) ---- */     \
    XX(EV_ADD, "INSERT INTO rls_events(ts_ms, event, action, key, rule, level, until_ms)" \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")                                \
    /* penalty blocks that ended in (?2, ?1] without an 'expire' event      \
     * (?3: NULL, or only this key; ?4: NULL, or only this action) */        \
    XX(EV_ENDED, "SELECT b.action, b.key, b.rule, b.level, b.until_ms FROM rls_blocks b" \
       " WHERE b.kind = 1 AND b.until_ms <> 0 AND b.until_ms <= ?1 AND b.until_ms > ?2" \
       " AND (?3 IS NULL OR b.key = CAST(?3 AS BLOB)) AND (?4 IS NULL OR b.action = ?4)" \
       " AND NOT EXISTS (SELECT 1 FROM rls_events e WHERE e.key = b.key"      \
       " AND e.action = b.action AND e.event = 'expire' AND e.until_ms = b.until_ms)" \
       " ORDER BY b.until_ms LIMIT 256")                                      \
    XX(EV_LIST, "SELECT id, ts_ms, event, action, CAST(key AS TEXT), rule, level, until_ms" \
       " FROM rls_events WHERE (?1 IS NULL OR action = ?1)"                   \
       " AND (?2 IS NULL OR key = CAST(?2 AS BLOB)) AND (?3 IS NULL OR event = ?3)" \
       " AND ts_ms >= ?4 ORDER BY ts_ms DESC, id DESC LIMIT ?5")              \
    XX(EV_PRUNE, "DELETE FROM rls_events WHERE ts_ms < ?1")                   \
    XX(AUDIT_PRUNE, "DELETE FROM rls_audit WHERE ts_ms < ?1")                 \
    XX(CTR_ADD, "INSERT INTO rls_counters(action, name, label, n) VALUES (?1, ?2, ?3, ?4)" \
       " ON CONFLICT(action, name, label) DO UPDATE SET n = rls_counters.n + excluded.n") \
    XX(CTR_LIST, "SELECT action, name, label, n FROM rls_counters ORDER BY action, name, label") \
    XX(BLOCKS_ACTIVE, "SELECT action, CASE kind WHEN 0 THEN 'manual' ELSE 'penalty' END, count(*)" \
       " FROM rls_blocks WHERE until_ms = 0 OR until_ms > ?1 GROUP BY action, kind ORDER BY action, kind") \
    XX(KEYS_TRACKED, "SELECT action, keys FROM rls_key_counts ORDER BY action") \
    /* bulk changes (admin_bulk.c): the manual blocks (split: rules file)   \
     * and the penalties (split: counters file; one file: the same rows) */ \
    XX(BULK_BLOCKS_COUNT, "SELECT count(*) FROM rls_blocks WHERE (?1 IS NULL OR action = ?1)" \
       " AND (until_ms = 0 OR until_ms > ?2)")                                \
    XX(BULK_BLOCKS_DEL, "DELETE FROM rls_blocks WHERE ?1 IS NULL OR action = ?1") \
    XX(BULK_PEN_COUNT, "SELECT count(*) FROM rls_blocks WHERE (?1 IS NULL OR action = ?1)" \
       " AND (until_ms = 0 OR until_ms > ?2)")                                \
    XX(BULK_PEN_DEL, "DELETE FROM rls_blocks WHERE ?1 IS NULL OR action = ?1") \
    XX(STATE_DEL_LID, "DELETE FROM rls_state WHERE lid = ?1")

enum rls_admin_stmt_id {
#define RLS__ASTMT_ENUM(name, sql) ASTMT_##name,
    RLS_ADMIN_STMT_MAP(RLS__ASTMT_ENUM)
#undef RLS__ASTMT_ENUM
    ASTMT__COUNT
};

rls_stmt *rls__astmt(rls_db *db, int id);  /* NULL: error recorded */
void rls__astmt_finalize_all(rls_db *db);

/*
 * Steps st to the end, appending one row per result row to a new rls_rows
 * with the given columns: result column i fills column i (integers from
 * integers, text from text or blobs; SQL NULL stays NULL).  Resets st.
 */
int rls__rows_from_stmt(rls_db *db, rls_stmt *st, const rows_col *cols, int ncols,
                        rls_rows **out);

/* Ends a listing's read transaction: COMMIT when rc is RLS_OK, else a
 * rollback; when either failed, *out is freed and NULL.  Returns rc or
 * COMMIT's failure. */
int rls__listing_end(rls_db *db, int rc, rls_rows **out);

/* Inside a read transaction: loads (action, key) into ctx (key as given,
 * or already normalised) and decides a peek of cost 1 into *res. */
struct key_ctx;
int rls__peek_key(rls_db *db, struct key_ctx *ctx, const char *action, const char *key,
                  int normalised, int64_t now, rls_result *res);

/* Inside a transaction: the YAML of rule-set version (0 = the active
 * one), malloc'd and NUL-terminated, its length in *len (may be NULL).
 * ENORULES (none active), ENOTFOUND (no such version), ECORRUPT (the
 * active version's row is missing). */
int rls__rules_yaml(rls_db *db, int64_t version, char **yaml, size_t *len);
/* Inside a transaction: the active rule-set version into *version, or
 * ENORULES when none is. */
int rls__rules_active(rls_db *db, int64_t *version);

/* rls_doctor's rows (doctor.c), for the backends' doctor (backend.h):
 * add appends one (-1: out of memory); text reads the first column of a
 * one-row statement into buf ("" when there is no row). */
int rls__doctor_add(rls_rows *r, const char *check, const char *status, const char *detail);
int rls__doctor_text(rls_db *db, const char *sql, char *buf, size_t size);
/* The memory class's rows (doctor_mem.c); fix: remove stale tables. */
int rls__doctor_mem(rls_db *db, int fix, rls_rows *r, int *bad);

/* Starts a read transaction for a listing; rls__commit ends it. */
int rls__admin_begin_read(rls_db *db);

/* events.c: records the 'expire' event of every penalty block that has
 * ended at now and has none yet, of one key and action (key != NULL), or
 * of every key of action (NULL: of every action), as GC's sweep does
 * (rls__events_sweep).  Called in the transaction that removes or
 * replaces such rows (policy.c, admin_bulk.c): the end of a block is
 * recorded whether or not a sweep ran before its row went. */
int rls__events_ended_key(rls_db *db, int64_t now, const void *key, size_t keylen,
                          const char *action);
int rls__events_ended_all(rls_db *db, int64_t now, const char *action);

#endif
