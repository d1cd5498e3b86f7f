/*
 * copy.h - internals of rls_copy_at() (copy.c, copy_rows.c): its
 * statements, the state of one copy, and what the two files share.
 * copy.c runs a copy (arguments, the source's snapshot and the
 * destination's transaction, the rules, the report); copy_rows.c moves the
 * rows of the per-key tables, page by page.
 */
#ifndef RLS_COPY_H
#define RLS_COPY_H

#include "db.h"
#include "rules.h"

#define COPY_PAGE 512

#define RLS__COPY_BLOCK_COLS \
    "key, action, kind, until_ms, level, forget_ms, rule, reason, os_user, created_ms"
#define RLS__COPY_BLOCK_PAGE \
    " WHERE (key, action, kind) > (?1, ?2, ?3) ORDER BY key, action, kind LIMIT ?4"

/*
 * The statements: XX(name, reference text).  SRC_* run on the source, the
 * rest on the destination (never a split deployment).  The first columns
 * of a SRC_* page are its primary key, bound back as ?1.. for the next
 * page.  The split deployment's forms (a source may be one) are in
 * storage/sqlite/split_forms.h, PostgreSQL's own texts in
 * storage/pg/pg_forms.h.
 */
#define RLS_COPY_STMT_MAP(XX)                                                 \
    XX(SRC_ASSIGN, "SELECT pattern, action, kind, tier, expires_ms, created_ms" \
       " FROM rls_assignments WHERE (pattern, action) > (?1, ?2)"             \
       " ORDER BY pattern, action LIMIT ?3")                                  \
    XX(SRC_OVERRIDES, "SELECT key, action, limit_name, lim, expires_ms, created_ms" \
       " FROM rls_overrides WHERE (key, action, limit_name) > (?1, ?2, ?3)"   \
       " ORDER BY key, action, limit_name LIMIT ?4")                          \
    XX(SRC_BLOCKS, "SELECT " RLS__COPY_BLOCK_COLS " FROM rls_blocks" RLS__COPY_BLOCK_PAGE) \
    XX(SRC_STATES, "SELECT key, lid, alg, a, b, c, last_ms, exp_ms, log FROM rls_state" \
       " WHERE (key, lid) > (?1, ?2) ORDER BY key, lid LIMIT ?3")             \
    XX(SRC_RES, "SELECT id, action, key, cost, created_ms, expires_ms, lids"  \
       " FROM rls_reservations WHERE id > ?1 ORDER BY id LIMIT ?2")           \
    /* SQLite: BEGIN IMMEDIATE holds the write lock already */              \
    XX(DST_LOCK, "SELECT 1")                                                  \
    /* needs an answer: sends the deferred inserts before it (PostgreSQL) */ \
    XX(DST_SYNC, "SELECT 1")                                                  \
    XX(DST_ASSIGN, "INSERT INTO rls_assignments(pattern, action, kind, tier, expires_ms," \
       " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(pattern, action) DO NOTHING") \
    XX(DST_OVERRIDE, "INSERT INTO rls_overrides(key, action, limit_name, lim, expires_ms," \
       " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"                          \
       " ON CONFLICT(key, action, limit_name) DO NOTHING")                    \
    XX(DST_BLOCK, "INSERT INTO rls_blocks(" RLS__COPY_BLOCK_COLS ")"          \
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT(key, action) DO NOTHING") \
    XX(DST_STATE, RLS__STATE_INSERT " ON CONFLICT(key, lid) DO NOTHING")     \
    XX(DST_RES, "INSERT INTO rls_reservations(id, action, key, cost, created_ms, expires_ms," \
       " lids) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(id) DO NOTHING") \
    /* SQLite's AUTOINCREMENT follows explicit ids by itself; PostgreSQL's \
     * identity sequence is moved past the largest copied id, never back */ \
    XX(DST_RES_SEQ, "SELECT ?1")                                              \
    XX(DST_HORIZON, "UPDATE rls_meta SET gc_horizon = max(gc_horizon, ?1) WHERE id = 1") \
    /* and every limit's clock floor (schema/004) */                        \
    XX(DST_LID_HORIZONS, "INSERT INTO rls_horizons(lid, horizon) SELECT lid, ?1"  \
       " FROM rls_limits WHERE true ON CONFLICT(lid) DO UPDATE SET"           \
       " horizon = max(rls_horizons.horizon, excluded.horizon)")

enum copy_stmt_id {
#define RLS__CST_ENUM(name, sql) CST_##name,
    RLS_COPY_STMT_MAP(RLS__CST_ENUM)
#undef RLS__CST_ENUM
    CST__COUNT
};

/* The kinds, in the order of the report. */
enum { K_RULES, K_ASSIGN, K_OVERRIDES, K_BLOCKS, K_STATES, K_RES, K__COUNT };

/* Why rows were dropped (at most three reasons per kind). */
typedef struct tally {
    int64_t tried;      /* inserts stepped: copied + kept */
    int64_t copied, dropped, expired;
    int64_t why[3];
} tally;

/* A source limit id and what it is in the destination. */
typedef struct lmap {
    int64_t src_lid, dst_lid;   /* dst_lid 0: not in the destination's rules */
    unsigned int algs;          /* bit 1 << algorithm of each definition there */
    const char *action;         /* the action's name in the destination's rules */
} lmap;

/* One column of a page's keyset. */
enum { KS_BLOB, KS_TEXT, KS_INT };
typedef struct kscol {
    int type;
    char *p;
    size_t len, cap;
    int64_t i;
} kscol;

typedef struct copy {
    rls_db *dst, *src;
    unsigned int what;
    int64_t now;
    rls_stmt *st[CST__COUNT];
    tally t[K__COUNT];
    char rules_detail[96];
    int rules_stored;           /* a version was stored in this transaction */
    lmap *map;
    int nmap;
    kscol ks[3];                /* the last row of the page walked */
    const char **touched;       /* actions with counters stepped (names of */
    int ntouched, captouched;   /* the destination's rules) */
    int64_t horizon;            /* latest expiry of a state not copied */
    int64_t max_res_id;
    int patterns;               /* pattern assignments stepped */
    int block_copied;           /* the previous block row was stepped */
} copy;

/* ---- copy.c ----------------------------------------------------------- */
/* Statement id of the copy (prepared on its handle at first use; NULL:
 * the error is recorded in the destination). */
rls_stmt *rls__copy_stmt(copy *c, int id);
int rls__copy_stmt_failed(copy *c, int id);   /* the code of that error */
/* A failure of the source, told in the destination's message. */
int rls__copy_src_failed(copy *c, int rc);
/* Steps destination statement id (it answers: on PostgreSQL the held
 * inserts go with it); with one integer parameter. */
int rls__copy_dst_run(copy *c, int id);
int rls__copy_dst_run_int(copy *c, int id, int64_t v);

/* ---- copy_rows.c ------------------------------------------------------ */
/* Inside both transactions: the policy tables, then the counters and
 * reservations, each source row that has a place in the destination's
 * rules, counted in c->t. */
int rls__copy_policy(copy *c);
int rls__copy_counters(copy *c);

#endif
