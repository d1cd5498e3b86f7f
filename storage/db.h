/*
 * db.h - the handle and the internal interface of the storage layer.
 *
 * Storage owns the connection, the prepared statements, the per-handle cache
 * of the active rule set and the stats accumulator.  It does no algorithm
 * arithmetic: core decides, storage reads and writes rows.  The statements
 * (statements.h) run on the handle's backend (backend.h: SQLite or
 * PostgreSQL, each in its folder), which also does what only its engine
 * needs; this header names neither engine.
 */
#ifndef RLS_DB_H
#define RLS_DB_H

#include <sys/types.h>
#include "rlstore.h"
#include "decide.h"
#include "resolve.h"
#include "rules.h"
#include "sql.h"
#include "backend.h"
#include "statements.h"
#include "group.h"

/* Where an action's in-process counts were (an index), valid while the
 * array it indexes has not been emptied since (gen): the memory-class
 * fast lane counts one action again and again without looking it up. */
typedef struct rls__hint {
    int i;                         /* -1: none */
    uint32_t gen;
} rls__hint;

/* In-process stats of one action for the current second. */
typedef struct stat_acc {
    char action[RLS_NAME_MAX + 1];
    int64_t sec;
    int64_t allowed, denied;
} stat_acc;

/*
 * The handle, in parts each written by the module that owns it (others
 * call its functions, and read what they need): its backend's operations
 * (be: backend.h), what it is (ident: handle.c), the statement layer
 * (conn: stmt.c, and admin.c/keycount.c for their statement slots; rng is
 * the jitter any backend's waits step), the backend's own part (lite:
 * storage/sqlite/, pg: storage/pg/; only the handle's backend allocates
 * its own, and only its folder reads it), the rule cache (rc: cache.c,
 * everykey.c), what the handle may trust between transactions (trust:
 * cache.c; sc: statecache.c), the in-process stats (stats: gc.c,
 * keystats.c) and the denial cache (deny: deny.c).
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
    rls_stmt *stmt[STMT__COUNT];
    rls_stmt *astmt[32];           /* admin statements (admin.h) */
    int in_tx;
    int stmt_code;                 /* rlstore code of the last failed prepare */
    uint32_t rng;                  /* busy-wait jitter */
    int tx_write;                  /* the open transaction is BEGIN IMMEDIATE */
    int check_tx;                  /* ... is a charging check */
    int gave_back;                 /* ... that refunded a reservation, or wrote a row
                                    * a fast path must see: its commit bumps */
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
    uint32_t gen;                  /* bumped when acc is emptied (rls__hint) */
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
    const rls_backend *be;         /* its operations (backend.h), chosen by rls_open */
    struct rls_ident ident;
    char errmsg[512];
    struct rls_conn conn;
    struct rls_lite *lite;         /* be's part: SQLite's (storage/sqlite/lite.h) ... */
    struct pg_conn *pg;            /* ... or PostgreSQL's (storage/pg/pg.h); only its folder reads it */
    struct rls_rulecache rc;
    struct rls_trust trust;
    struct rls_stats stats;
    struct rls_denystate deny;
    struct rls_group *group;       /* a thread-safe handle's lock and queue (group.c), or NULL */
    struct rls_events *ev;         /* events, metrics, audit reason (events.h), or NULL */
    struct rls_memclass *mem;      /* `durability: memory` limits (memclass.c), or NULL */
    char *shm_dir_owned;           /* rls_open's copy of opt.shm_dir */
    struct key_ctx *ctx_spare;     /* a check's key context kept for the next (check.c) */
};

/* Handle-level driver calls (sql.h). */
static inline int sql_prepare(rls_db *db, const char *sql, rls_stmt **out)
{
    return db->be->sql->prepare(db, sql, out);
}
static inline int sql_exec(rls_db *db, const char *sql) { return db->be->sql->exec(db, sql); }
static inline int64_t sql_changes(rls_db *db) { return db->be->sql->changes(db); }
static inline int sql_in_tx(rls_db *db) { return db->be->sql->in_tx(db); }
static inline int sql_durable(rls_db *db, int full) { return db->be->sql->durable(db, full); }
/* Back to the handle's own level after a fully synchronous transaction. */
static inline void rls__durable_restore(rls_db *db)
{
    sql_durable(db, db->ident.opt.durability == RLS_DURABILITY_FULL);
}

/* ---- handle.c: the handle's life (rls_open, rls_close) and errors ------ */
int rls__db_usable(rls_db *db);               /* EINVAL/EMISUSE or OK; reopens after fork */
int rls__connected(const rls_db *db);         /* a connection is open */
/* RLS_OK if the handle may change the rules (admin changes), else
 * EREADONLY with the reason recorded. */
int rls__rules_writable(rls_db *db);
int rls__error(rls_db *db, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rls__sql_error(rls_db *db, int src, const char *what);  /* any backend's failure */
int rls__sql_code(int src);                   /* an sql.h code as an rlstore code */
int rls__now(int64_t *now_ms);
int64_t rls__now_or_invalid(void);           /* the clock, or -1: ETIME */
/* 1 when the transaction that failed with rc may be run again (the
 * backend's tx_retry: PostgreSQL after a serialization failure, a deadlock
 * or a connection lost before COMMIT; never on SQLite). */
int rls__tx_retry(rls_db *db, int rc, int *attempt);

/* ---- everykey.c ------------------------------------------------------- */
void rls__every_ip_free(rls_db *db);          /* with the rule cache (cache.c) */

/* ---- stmt.c ---------------------------------------------------------- */
rls_stmt *rls__stmt(rls_db *db, int id);  /* NULL: error recorded */
int rls__stmt_failed(rls_db *db);             /* the code of that error */
void rls__stmt_finalize_all(rls_db *db);
/* Prepares statement id of table (enum rls_stmt_table) from its reference
 * text sql in the backend's form of it (backend.h, prepare); the code of
 * a failure is kept for rls__stmt_failed. */
int rls__prepare(rls_db *db, int table, int id, const char *sql, rls_stmt **out);
/* For the backends' prepare: text as it is, the failure recorded. */
int rls__prepare_text(rls_db *db, const char *text, rls_stmt **out);
int rls__exec_simple(rls_db *db, int id);     /* step a no-result statement */
/* The handle's side of a transaction; the backend runs the statements
 * (backend.h: begin, commit, after_commit, rollback). */
int rls__begin(rls_db *db, int write);
void rls__tx_mark_check(rls_db *db, int on);  /* a charging check: no give-back */
void rls__tx_gave_back(rls_db *db);           /* ... that refunded units (or must bump) */
void rls__stmt_forget(rls_db *db);            /* a forked child */
int rls__commit(rls_db *db);
void rls__rollback(rls_db *db);
/* For the backends' rollback: ROLLBACK if a transaction is open, keeping
 * the error that caused it. */
void rls__exec_rollback(rls_db *db);
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
/* Reads whether the policy tables and the reservations are empty (one
 * statement): RLS_OK, or an error recorded. */
int rls__empties_read(rls_db *db, int *policy_none, int *res_none);
int rls__no_policy_rows(const rls_db *db);    /* none for any key: skip reading */
int rls__no_reservations(const rls_db *db);
void rls__cache_free(rls_db *db);
/* What the rest of storage tells the cache; its parts (db->rc, db->trust)
 * are written by cache.c only. */
void rls__cache_tx_begun(rls_db *db);         /* a transaction began (stmt.c) */
void rls__cache_distrust(rls_db *db);         /* one ended: trust nothing yet */
void rls__cache_check_begin(rls_db *db, int charge);  /* 0 again at its end */
void rls__cache_policy_written(rls_db *db);   /* a block, tier or override stored */
void rls__cache_reservation_written(rls_db *db);
int64_t rls__cache_horizon(const rls_db *db); /* the GC horizon as last read */
void rls__cache_horizon_set(rls_db *db, int64_t horizon);
void rls__cache_forget(rls_db *db);           /* reload the rules at the next use */
void rls__cache_fast_trust(rls_db *db, int on);  /* pg_fast.c: rules as cached */
void rls__cache_policy_gen_set(rls_db *db, int64_t gen);  /* PostgreSQL's policy_gen */
void rls__cache_resv_never_set(rls_db *db, int never);

/* ---- gc.c / stats ---------------------------------------------------- */
/* Counts a check in the second of `now`: 1, or 0 when memory is short.
 * rls__stats_uncount takes a count back (a transaction that counted it and
 * is run again), unless a flush took it already. */
int rls__stats_count(rls_db *db, const char *action, int64_t now, int allowed);
/* rls__stats_count, *hint set to where the action's count is now. */
int rls__stats_count_look(rls_db *db, const char *action, int64_t now, int allowed,
                          rls__hint *hint);
/* rls__stats_count trying first where the action's count was (*hint, of
 * this action's counts only); *hint is set to where it is now.  Inline
 * (the memory lane's every check): a count of this generation of the
 * array (it only grows until emptied: the index names the action it was
 * taken for) in the same second is counted here. */
static inline int rls__stats_count_hint(rls_db *db, const char *action, int64_t now,
                                        int allowed, rls__hint *hint)
{
    int i = hint->i;
    stat_acc *s = hint->gen == db->stats.gen && i >= 0 && i < db->stats.nstats
                      ? &db->stats.acc[i]
                      : NULL;
    if (!s || s->sec != now / 1000)
        return rls__stats_count_look(db, action, now, allowed, hint);
    if (allowed)
        s->allowed++;
    else
        s->denied++;
    return 1;
}
void rls__stats_uncount(rls_db *db, const char *action, int64_t now, int allowed);
int rls__stats_flush(rls_db *db, int64_t now, int force);
int rls__gc_step(rls_db *db, int64_t now, int max_rows, int64_t *deleted);
/* The schedule of the housekeeping stage (check.c): a GC step every
 * RLS_GC_EVERY_WRITES write transactions (times the backend's gc_factor),
 * stats flushed once a second.  db->stats is written by gc.c and
 * keystats.c only. */
int rls__gc_due(const rls_db *db);            /* the next write's step is due */
int rls__gc_tick(rls_db *db);                 /* counts a write: 1 when a step is due */
void rls__gc_count_write(rls_db *db);         /* counts a write done elsewhere (pg_fast.c) */
void rls__gc_due_now(rls_db *db);             /* the next transaction runs a step (deny.c) */
int rls__gc_step_scheduled(rls_db *db, int64_t now);  /* a step of the scheduled size */
/* gc.c's accessor, inline: the denied path asks it at every answer */
static inline int rls__stats_pending(const rls_db *db) { return db->stats.nstats > 0; }
int rls__stats_due(const rls_db *db, int64_t now);
void rls__stats_forget(rls_db *db);           /* a forked child: the parent flushes its own */

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


#endif
