/*
 * split_forms.h - the statements of a split deployment (SQLite only,
 * rls_options.counters_path, docs/SECURITY.md): how each statement of the
 * check (statements.h), admin (admin.h) and copy (copy.h) tables reads
 * when the connection's main database is the counters file and the rules
 * file is attached as schema "rules".  splitform.c rewrites them once, at
 * prepare time, so a one-file handle runs exactly the reference text.
 */
#ifndef RLS_SPLIT_FORMS_H
#define RLS_SPLIT_FORMS_H

#include "admin.h"
#include "copy.h"

/*
 * Every statement is prepared from its reference text with the tables that
 * live in the rules file (RLS_RULES_TABLES) qualified "rules."
 * (splitform.c).  Two tables live in both files: rls_blocks
 * (manual blocks in rules, penalties in counters) and rls_meta (rules
 * generation and active version in rules, GC cursor and horizon in
 * counters).  A statement that names either needs an entry here: the file
 * its unqualified names mean (SPLIT_RULES, SPLIT_COUNTERS), or a text of its
 * own (SPLIT_OWN); without one it does not prepare in a split handle.
 */
#define RLS_RULES_TABLES "rls_rulesets", "rls_limits", "rls_assignments", "rls_overrides", \
                         "rls_audit"
#define RLS_BOTH_TABLES "rls_blocks", "rls_meta", "rls_role"

/* The check table's (statements.h). */
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

/* The admin table's.  A key may have a manual block (rules) and a penalty
 * (counters) for the same action. */
#define RLS__ALL_BLOCKS(cols)                                                 \
    "(SELECT " cols " FROM rules.rls_blocks UNION ALL SELECT " cols " FROM main.rls_blocks)"

#define RLS_ADMIN_SPLIT_MAP(XX)                                               \
    XX(VERSIONS, SPLIT_RULES, NULL)                                           \
    XX(RULES_ACTIVE, SPLIT_RULES, NULL)                                       \
    XX(BLOCK_LIST, SPLIT_OWN, "SELECT CAST(key AS TEXT), action, until_ms,"   \
       " CASE kind WHEN 0 THEN 'manual' ELSE 'penalty' END, level, rule, reason, os_user, created_ms" \
       " FROM " RLS__ALL_BLOCKS("*") " WHERE until_ms = 0 OR until_ms > ?1"    \
       " ORDER BY key, action, kind")                                          \
    XX(EVERY_ROWS, SPLIT_RULES, NULL)                                         \
    XX(BLOCK_KEY_ACTIONS, SPLIT_OWN, "SELECT action FROM "                    \
       RLS__ALL_BLOCKS("key, action") " WHERE key = ?1")                       \
    /* events and metrics (issue #20): penalties are the counters file's */  \
    XX(EV_ENDED, SPLIT_COUNTERS, NULL)                                        \
    XX(BULK_BLOCKS_COUNT, SPLIT_RULES, NULL)                                  \
    XX(BULK_BLOCKS_DEL, SPLIT_RULES, NULL)                                    \
    XX(BULK_PEN_COUNT, SPLIT_COUNTERS, NULL)                                  \
    XX(BULK_PEN_DEL, SPLIT_COUNTERS, NULL)                                    \
    XX(BLOCKS_ACTIVE, SPLIT_OWN, "SELECT action, CASE kind WHEN 0 THEN 'manual' ELSE 'penalty' END," \
       " count(*) FROM " RLS__ALL_BLOCKS("*") " WHERE until_ms = 0 OR until_ms > ?1" \
       " GROUP BY action, kind ORDER BY action, kind")

/* The copy's (only its source may be a split deployment). */
#define RLS_COPY_SPLIT_MAP(XX)                                                \
    /* manual blocks (rules file) and penalties (counters file) */           \
    XX(SRC_BLOCKS, SPLIT_OWN,                                                 \
       "SELECT * FROM (SELECT " RLS__COPY_BLOCK_COLS " FROM rules.rls_blocks" \
       " UNION ALL SELECT " RLS__COPY_BLOCK_COLS " FROM main.rls_blocks)"     \
       RLS__COPY_BLOCK_PAGE)                                                  \
    XX(DST_BLOCK, SPLIT_COUNTERS, NULL)                                       \
    XX(DST_HORIZON, SPLIT_COUNTERS, NULL)

/* The file a statement's unqualified rls_blocks and rls_meta mean, or a
 * text of its own; SPLIT_NONE: it names rules tables only. */
enum rls_split_side { SPLIT_NONE = 0, SPLIT_RULES, SPLIT_COUNTERS, SPLIT_OWN };

#endif
