/*
 * db.h - the handle and the internal interface of the storage layer.
 *
 * Storage owns the connection, the prepared statements, the per-handle cache
 * of the active rule set and the stats accumulator.  It does no algorithm
 * arithmetic: core decides, storage reads and writes rows.  The statements
 * below run on SQLite or PostgreSQL through a driver (sql.h); what only a
 * SQLite file has (WAL, checkpoints, the writers' turn, split files) is
 * declared here too and used only when db->lite->sql is set.
 */
#ifndef RLS_DB_H
#define RLS_DB_H

#include <sys/types.h>
#include "rlstore.h"
#include "decide.h"
#include "resolve.h"
#include "rules.h"
#include "sql.h"

#define RLS__STATE_INSERT                                                     \
    "INSERT INTO rls_state(lid, key, alg, a, b, c, last_ms, exp_ms, log)"      \
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"

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
    XX(STATE_PUT, RLS__STATE_INSERT " ON CONFLICT(key, lid) DO UPDATE SET"     \
       " alg = excluded.alg, a = excluded.a, b = excluded.b, c = excluded.c," \
       " last_ms = excluded.last_ms, exp_ms = excluded.exp_ms, log = excluded.log") \
    /* the state of a key that had none (keyctx.c); under SQLite's write lock \
     * the same upsert, on PostgreSQL see RLS_STMT_PG_MAP */                  \
    XX(STATE_NEW, RLS__STATE_INSERT " ON CONFLICT(key, lid) DO UPDATE SET"     \
       " alg = excluded.alg, a = excluded.a, b = excluded.b, c = excluded.c," \
       " last_ms = excluded.last_ms, exp_ms = excluded.exp_ms, log = excluded.log") \
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
    XX(BLOCK_GET_ONE, "SELECT until_ms, kind, reason FROM rls_blocks WHERE key = ?1 AND action = ?2") \
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
    XX(PENALTY_GET_ONE, "SELECT until_ms, kind, reason FROM rls_blocks WHERE key = ?1 AND action = ?2") \
    XX(PENALTY_DEL, "DELETE FROM rls_blocks WHERE key = ?1 AND action = ?2") \
    XX(GC_RULES_BLOCKS, "DELETE FROM rls_blocks WHERE until_ms <> 0 AND until_ms <= ?1")

/*
 * Split deployment (rls_options.counters_path, docs/SECURITY.md): the
 * connection's main database is the counters file and the rules file is
 * attached as schema "rules".  Every statement is prepared from its text
 * above, with the tables that live in the rules file (RLS_RULES_TABLES)
 * qualified "rules." (stmt.c).  Two tables live in both files: rls_blocks
 * (manual blocks in rules, penalties in counters) and rls_meta (rules
 * generation and active version in rules, GC cursor and horizon in
 * counters).  A statement that names either needs an entry here: the file
 * its unqualified names mean (SPLIT_RULES, SPLIT_COUNTERS), or a text of its
 * own (SPLIT_OWN); without one it does not prepare in a split handle.
 */
#define RLS_RULES_TABLES "rls_rulesets", "rls_limits", "rls_assignments", "rls_overrides", \
                         "rls_audit"
#define RLS_BOTH_TABLES "rls_blocks", "rls_meta", "rls_role"

#define RLS_STMT_SPLIT_MAP(XX)                                                \
    XX(META_GET, SPLIT_OWN,                                                   \
       "SELECT r.rules_gen, c.gc_horizon, r.active_version"                   \
       " FROM rules.rls_meta r, main.rls_meta c WHERE r.id = 1 AND c.id = 1") \
    /* Manual blocks (rules) before penalties (counters) in each arm: the    \
     * last row of the action's own pair is the penalty that escalates. */   \
    XX(KEY_POLICY, SPLIT_OWN,                                                 \
       RLS__POLICY_BLOCKS("rules.", "key = ?1 AND action = ''") " UNION ALL"   \
       RLS__POLICY_BLOCKS("main.", "key = ?1 AND action = ''") " UNION ALL"    \
       RLS__POLICY_BLOCKS("rules.", "key = ?1 AND action = ?2") " UNION ALL"   \
       RLS__POLICY_BLOCKS("main.", "key = ?1 AND action = ?2") " UNION ALL"    \
       RLS__POLICY_BLOCKS("rules.", RLS__POLICY_CANON) " UNION ALL"            \
       RLS__POLICY_BLOCKS("main.", RLS__POLICY_CANON) " UNION ALL"             \
       RLS__POLICY_BLOCKS("rules.", RLS__POLICY_RAW) " UNION ALL"              \
       RLS__POLICY_BLOCKS("main.", RLS__POLICY_RAW)                            \
       RLS__POLICY_ASSIGN_OV("rules."))                                       \
    XX(EMPTIES, SPLIT_OWN,                                                    \
       "SELECT NOT EXISTS (SELECT 1 FROM rules.rls_blocks)"                   \
       " AND NOT EXISTS (SELECT 1 FROM main.rls_blocks)"                      \
       " AND NOT EXISTS (SELECT 1 FROM rules.rls_assignments WHERE kind = 0)" \
       " AND NOT EXISTS (SELECT 1 FROM rules.rls_overrides),"                 \
       " NOT EXISTS (SELECT 1 FROM main.rls_reservations)")                   \
    XX(PENALTY_PUT, SPLIT_COUNTERS, NULL)                                     \
    XX(GC_CURSOR, SPLIT_COUNTERS, NULL)                                       \
    XX(GC_META_SET, SPLIT_COUNTERS, NULL)                                     \
    XX(GC_BLOCKS, SPLIT_COUNTERS, NULL)                                       \
    XX(META_ACTIVATE, SPLIT_RULES, NULL)                                      \
    XX(META_BUMP, SPLIT_RULES, NULL)                                          \
    XX(BLOCK_GET_ONE, SPLIT_RULES, NULL)                                      \
    XX(BLOCK_SET, SPLIT_RULES, NULL)                                          \
    XX(BLOCK_DEL, SPLIT_RULES, NULL)                                          \
    XX(PENALTY_GET_ONE, SPLIT_COUNTERS, NULL)                                 \
    XX(PENALTY_DEL, SPLIT_COUNTERS, NULL)                                     \
    XX(GC_RULES_BLOCKS, SPLIT_RULES, NULL)

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
    XX(RES_GET, "SELECT action, key, cost, created_ms, expires_ms, lids FROM rls_reservations" \
       " WHERE id = ?1 FOR UPDATE")                                           \
    XX(META_LOCK, "SELECT 1 FROM rls_meta WHERE id = 1 FOR UPDATE")              \
    /* rule-set versions 1..n, as SQLite numbers them: an identity sequence \
     * would skip the number of every apply rolled back or killed (the     \
     * inserts are serialised by META_LOCK, apply.c) */                     \
    XX(RULESET_ADD, "INSERT INTO rls_rulesets(version, created_ms, os_user, tool, source," \
       " comment, yaml) SELECT coalesce(max(version), 0) + 1, ?1, ?2, ?3, ?4, ?5, ?6"     \
       " FROM rls_rulesets RETURNING version")

enum rls_split_side { SPLIT_NONE = 0, SPLIT_RULES, SPLIT_COUNTERS, SPLIT_OWN };

enum rls_stmt_id {
#define RLS__STMT_ENUM(name, sql) STMT_##name,
    RLS_STMT_MAP(RLS__STMT_ENUM)
#undef RLS__STMT_ENUM
    STMT__COUNT
};

/* In-process stats of one action for the current second. */
typedef struct stat_acc {
    char action[RLS_NAME_MAX + 1];
    int64_t sec;
    int64_t allowed, denied;
} stat_acc;

/*
 * The handle, in parts each owned by one module (the others call its
 * functions): what it is (ident), the statement layer (conn: stmt.c), the
 * backend's private connection (lite: storage/sqlite/, pg: storage/pg/,
 * exactly one of them non-NULL while connected), the rule cache (rc:
 * cache.c, everykey.c), what the handle may trust between transactions
 * (trust: cache.c), the in-process stats (stats: gc.c, keystats.c) and the
 * denial cache (deny: deny.c).
 */
struct rls_ident {
    char *path;                    /* the database as shown (a URI without its password) */
    rls_options opt;
    char tool[64];
    char os_user[64];
    pid_t pid;                     /* process that opened the connection */
    unsigned long forks;           /* fork count of that process (open.c) */
    int created;                   /* rls_open created the file */
};

struct rls_conn {
    const sql_driver *drv;         /* lite.c or pg.c (sql.h) */
    rls_stmt *stmt[STMT__COUNT];
    rls_stmt *astmt[32];           /* admin statements (admin.h) */
    int in_tx;
    int stmt_code;                 /* rlstore code of the last failed prepare */
    uint32_t rng;                  /* busy-wait jitter */
    int tx_write;                  /* the open transaction is BEGIN IMMEDIATE */
    int check_tx;                  /* ... is a charging check */
    int gave_back;                 /* ... that refunded a reservation */
};

/* The active rule set, valid while rules_gen matches the database. */
struct rls_rulecache {
    int64_t rules_gen;             /* -1: nothing loaded */
    int64_t active_version;
    ruleset *rules;
    assign_cand *patterns;         /* CIDR/prefix assignments: YAML + table */
    int npatterns;
    char *pattern_text;            /* storage for the table's pattern strings */
    /* rows of every action whose key is an IP address (everykey.c) */
    struct every_ip *every_ip;
    int nevery_ip;
    int every_ip_loaded;           /* valid for rules_gen every_ip_gen */
    int64_t every_ip_gen;
};

/* What the handle knew right after its last check's commit, trusted while
 * nothing has been committed since (cache.c). */
struct rls_trust {
    int64_t gc_horizon;            /* read with rules_gen at each transaction */
    int tx_refreshed;              /* PostgreSQL: the rules were read in it (cache.c) */
    int in_check;                  /* ... of a charging check */
    int tx_trusted;                /* ... and nothing was committed since */
    unsigned int commit_dv;        /* data version right after the last commit */
    int commit_dv_ok;              /* ... could be read */
    unsigned int meta_dv;          /* data version at which rls_meta was known */
    int meta_dv_ok;                /* meta_dv is valid */
    int empties_known;             /* the two flags below are valid */
    int policy_none;               /* no blocks, exact assignments, overrides */
    int res_none;                  /* no reservations */
    int fast_trust;                /* PostgreSQL: rules as cached, checked later (pg_fast.c) */
    int64_t policy_gen;            /* PostgreSQL: rls_meta.policy_gen as last read */
    int resv_never;                /* PostgreSQL: rls_meta.resv_seen last read false */
    struct state_cache *sc;        /* last known states (statecache.c), or NULL */
};

/* Counts kept in process until the next flush (gc.c, keystats.c). */
struct rls_stats {
    stat_acc *acc;
    int nstats, capstats;
    struct key_acc *kacc;          /* keys under pressure (keystats.c) */
    int nkacc;
    int64_t stats_flushed_ms;
    uint32_t writes_since_gc;
    int64_t gc_misc_ms;            /* last sweep of blocks/assignments/stats */
};

/* Denials that cannot change soon (deny.c, core/denycache.h). */
struct rls_denystate {
    struct deny_cache *cache;
    uint64_t *deny_gen;            /* shared generation in "<db>-ckpt", or NULL */
    void *deny_map;                /* its mapping */
    int deny_state;                /* 0 not tried, 1 mapped, -1 unavailable */
    int64_t deny_tx_mono;          /* monotonic ms of the last check's transaction */
    uint32_t deny_hits;            /* answers from the cache since the last GC step */
};

struct rls_db {
    struct rls_ident ident;
    char errmsg[512];
    struct rls_conn conn;
    struct rls_lite *lite;         /* SQLite (storage/sqlite/lite.h), or NULL */
    struct pg_conn *pg;            /* PostgreSQL (storage/pg/pg.h), or NULL */
    struct rls_rulecache rc;
    struct rls_trust trust;
    struct rls_stats stats;
    struct rls_denystate deny;
};

/* Handle-level driver calls (sql.h). */
static inline int sql_prepare(rls_db *db, const char *sql, rls_stmt **out)
{
    return db->conn.drv->prepare(db, sql, out);
}
static inline int sql_exec(rls_db *db, const char *sql) { return db->conn.drv->exec(db, sql); }
static inline int64_t sql_changes(rls_db *db) { return db->conn.drv->changes(db); }
static inline int sql_in_tx(rls_db *db) { return db->conn.drv->in_tx(db); }
static inline int sql_durable(rls_db *db, int full) { return db->conn.drv->durable(db, full); }
/* Back to the handle's own level after a fully synchronous transaction. */
static inline void rls__durable_restore(rls_db *db)
{
    sql_durable(db, db->ident.opt.durability == RLS_DURABILITY_FULL);
}

/* ---- open.c ---------------------------------------------------------- */
int rls__db_usable(rls_db *db);               /* EINVAL/EMISUSE or OK; reopens after fork */

/* ---- pg.c ------------------------------------------------------------ */
int rls__pg_uri(const char *path);            /* a libpq URI: postgresql:// or postgres:// */
/* Takes the URI: db->ident.path becomes it without its password. */
int rls__pg_init(rls_db *db, const char *uri);
int rls__pg_connect(rls_db *db);              /* connects, migrates, checks the schema */
void rls__pg_disconnect(rls_db *db);          /* NULL connection: no-op */
void rls__pg_abandon(rls_db *db);             /* after fork: forget, never close */
void rls__pg_tx_start(rls_db *db);            /* a transaction begins */
/* A statement of the check table: its round trips get the quick deadline
 * (busy_timeout_ms + a grace), every other statement the slow one (pg_io.c). */
void rls__pg_stmt_quick(rls_stmt *st);
/* A write that found another transaction's row: EBUSY, retryable. */
int rls__pg_conflict(rls_db *db, const char *what);
/* 1 when the transaction that failed with rc may be run again (a
 * serialization failure, a deadlock, a lost connection before COMMIT):
 * waits a randomised, growing time first; 0 after PG_RETRIES attempts or
 * for any other failure, and always on SQLite. */
int rls__tx_retry(rls_db *db, int rc, int *attempt);
int rls__connected(const rls_db *db);         /* a connection is open (open.c) */

/* ---- errors (split.c) ------------------------------------------------ */
/* RLS_OK if the handle may change the rules (admin changes), else
 * EREADONLY with the reason recorded. */
int rls__rules_writable(rls_db *db);
int rls__error(rls_db *db, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rls__sql_error(rls_db *db, int src, const char *what);  /* any driver's failure */
int rls__now(int64_t *now_ms);

/* ---- everykey.c ------------------------------------------------------- */
void rls__every_ip_free(rls_db *db);          /* with the rule cache (cache.c) */

/* ---- stmt.c ---------------------------------------------------------- */
rls_stmt *rls__stmt(rls_db *db, int id);  /* NULL: error recorded */
int rls__stmt_failed(rls_db *db);             /* the code of that error */
void rls__stmt_finalize_all(rls_db *db);
/* Prepares statement `id` of the check table (admin 0) or of the admin
 * table (admin 1, admin.h) from `sql`, in its split form in a split handle. */
int rls__prepare(rls_db *db, int admin, int id, const char *sql, rls_stmt **out);
/* The same for a statement of another table: sql, or pg_sql (NULL: none)
 * on PostgreSQL; in a split handle sql rewritten for `side` (enum
 * rls_split_side), or split_sql when side is SPLIT_OWN. */
int rls__prepare_form(rls_db *db, const char *sql, const char *pg_sql, int side,
                      const char *split_sql, rls_stmt **out);
int rls__exec_simple(rls_db *db, int id);     /* step a no-result statement */
int rls__begin(rls_db *db, int write);
int rls__commit(rls_db *db);
void rls__rollback(rls_db *db);
/*
 * Runs fn(db, arg) in one write transaction: begins it, commits it when fn
 * returns RLS_OK, rolls it back otherwise, and on PostgreSQL runs the whole
 * of it again after a serialization failure, a deadlock or a connection
 * lost before COMMIT (rls__tx_retry).  fn must leave nothing behind in the
 * handle that a rolled-back attempt would make wrong.  fn's code, or the
 * code of BEGIN or COMMIT.
 */
typedef int (*rls_tx_fn)(rls_db *db, void *arg);
int rls__write_tx(rls_db *db, rls_tx_fn fn, void *arg);
int rls__audit(rls_db *db, int64_t now, const char *op, const char *action,
               const char *key, const char *before, const char *after,
               const char *reason);

/* ---- apply.c --------------------------------------------------------- */
/* Validates a rule file (ECONFIG naming file:line:col). */
int rls__rules_parse(rls_db *db, const char *yaml, size_t len, const char *name,
                     int64_t now_ms, ruleset **out);
/* Stores it as the new active version, audited as `op`; with expect >= 0
 * only if that version is still active (else ECONFLICT). */
int rls__rules_store(rls_db *db, const char *yaml, size_t len, const ruleset *rs,
                     const char *name, const char *comment, const char *op, int64_t expect,
                     int64_t now_ms, int64_t *version);
/* The same inside the caller's write transaction (copy.c). */
int rls__rules_store_tx(rls_db *db, const char *yaml, size_t len, const ruleset *rs,
                        const char *name, const char *comment, const char *op, int64_t expect,
                        int64_t now_ms, int64_t *version);

/* ---- cache.c --------------------------------------------------------- */
int rls__cache_refresh(rls_db *db);           /* inside a transaction */
/* The name a limit's variant is registered under in rls_limits:
 * name US rls__rule_limit_sig (apply.c, cache.c, copy_rows.c). */
void rls__limit_regname(const rule_limit *l, char *buf, size_t size);
#define RLS_VARIANT_SEP '\x1f'

void rls__cache_validate(rls_db *db);         /* right after a check's commit */
int rls__cache_empties(rls_db *db);           /* learn policy_none, res_none */
int rls__no_policy_rows(const rls_db *db);    /* none for any key: skip reading */
int rls__no_reservations(const rls_db *db);
void rls__cache_free(rls_db *db);

/* ---- gc.c / stats ---------------------------------------------------- */
/* Counts a check in the second of `now`: 1, or 0 when memory is short.
 * rls__stats_uncount takes a count back (a transaction that counted it and
 * is run again), unless a flush took it already. */
int rls__stats_count(rls_db *db, const char *action, int64_t now, int allowed);
void rls__stats_uncount(rls_db *db, const char *action, int64_t now, int allowed);
int rls__stats_flush(rls_db *db, int64_t now, int force);
int rls__gc_step(rls_db *db, int64_t now, int max_rows, int64_t *deleted);

/* ---- keystats.c ------------------------------------------------------ */
/* Notes a check of (action, key) with its result: denials and a deciding
 * limit at 50 % or more are remembered until the next flush.  1 when it
 * noted it; rls__keystat_unnote takes a noted denial back, as
 * rls__stats_uncount does. */
int rls__keystat_note(rls_db *db, const char *action, const char *key, size_t keylen,
                      const rls_result *res, int64_t now);
void rls__keystat_unnote(rls_db *db, const char *action, const char *key, size_t keylen,
                         const rls_result *res);
int rls__keystat_pending(const rls_db *db);
int rls__keystat_flush(rls_db *db);
void rls__keystat_free(rls_db *db);

/* ---- deny.c ----------------------------------------------------------- */
/* Write transactions between GC steps (check.c), and denials answered from
 * the cache between GC steps (deny.c): traffic of any kind keeps collecting
 * expired state. */
#define RLS_GC_EVERY_WRITES 64
#define RLS_GC_EVERY_DENIALS 256

/* rls__deny_lookup, rls__deny_note: check.h */
/* After a committed change that can admit a denied request sooner. */
void rls__deny_bump(rls_db *db);
void rls__deny_close(rls_db *db);

/* ---- check.c --------------------------------------------------------- */
int rls__refund_reservation(rls_db *db, int64_t id, int64_t now, int *found);
/* Are stats to flush or a GC step to take with the next charging check? */
int rls__housekeeping_due(const rls_db *db, int64_t now);

/* ---- statecache.c: last known states (PostgreSQL's one-flight check) --- */
/* 1 and *st filled (a sliding log in a new buffer with room for one more
 * entry) when (lid, key) is known under algorithm alg; 2 when the key is
 * marked as having policy rows; 0 if neither; -1 out of memory. */
int rls__sc_get(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                algo_state *st);
void rls__sc_put(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                 const algo_state *st);
void rls__sc_mark_policy(rls_db *db, int64_t lid, const char *key, size_t klen);
/* The policy generation at which (lid, key)'s key was seen without policy
 * rows, or -1 (not known, or not kept); setting it needs a kept state. */
int64_t rls__sc_clean_gen(rls_db *db, int64_t lid, const char *key, size_t klen);
void rls__sc_set_clean_gen(rls_db *db, int64_t lid, const char *key, size_t klen, int64_t gen);
void rls__sc_drop(rls_db *db, int64_t lid, const char *key, size_t klen);
void rls__sc_free(rls_db *db);

/* pg_fast.c: PostgreSQL's check step, rls__pg_check_tx (check.h) */

#endif
