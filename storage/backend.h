/*
 * backend.h - what storage asks of a database engine: one table of
 * operations, filled in by each backend, as SQLite's VFS I/O methods are
 * filled in by each operating system.
 *
 * Storage keeps every statement's text (statements.h, admin.h, copy.h, in
 * SQLite's dialect) and every decision: which rows a check reads and
 * writes, in which transaction, what the handle may trust.  A backend runs
 * those statements on its engine and does what only that engine needs
 * around them.  Two exist:
 *
 *   storage/sqlite/  rls__sqlite_backend: a file on this host (WAL,
 *                    checkpoints, the writers' turn, the files under the
 *                    connection, the split deployment of rules and
 *                    counters in two files)
 *   storage/pg/      rls__pg_backend: a PostgreSQL server through libpq
 *                    (deadlines on every round trip, retried transactions,
 *                    the one-round-trip check)
 *
 * rls_open (handle.c) picks one from the path and puts it in db->be; its
 * part of the handle (the handle's lite or pg member) only its folder
 * reads.  Nothing outside the two folders includes SQLite's or libpq's
 * header or calls them (tests/lint.sh).  A new backend fills this table
 * and nothing else.
 *
 * Every operation that can fail returns an rlstore code with the error
 * recorded in the handle (rls_errmsg), unless it says otherwise.
 */
#ifndef RLS_BACKEND_H
#define RLS_BACKEND_H

#include "rlstore.h"
#include "sql.h"

struct check_call;   /* a check's arguments and result (check.c) */

#define RLS_SIDE_BYTES 4096   /* the size of a shared page (shared_page) */

typedef struct rls_backend {
    const char *name;                  /* "sqlite", "postgresql" */
    const sql_driver *sql;             /* statements: prepare, bind, step (sql.h) */

    /* ---- the handle's life ---------------------------------------------- */
    /* 1 when path names one of this backend's databases (rls_open asks
     * PostgreSQL first: a URI; anything else is a SQLite file). */
    int (*claims)(const char *path);
    /* Sets up the backend's part of the handle from path and the options
     * (db->ident.opt) and sets db->ident.path (as shown: a URI without its
     * password); no connection yet.  Refuses the options it cannot honour
     * (counters_path and file_group are SQLite's). */
    int (*init)(rls_db *db, const char *path);
    /* Opens the connection and brings the database into service: creates
     * the file(s) if allowed, migrates the schema, checks it, and prepares
     * the transaction statements, so that no later BEGIN, COMMIT or
     * ROLLBACK needs memory. */
    int (*connect)(rls_db *db);
    /* Closes the connection, finalizing every statement (db->conn); safe
     * on a handle connected halfway.  The backend's part stays. */
    void (*disconnect)(rls_db *db);
    /* In a forked child: forgets the parent's connection without closing
     * it (closing could disturb the parent's locks, WAL or session); the
     * caller forgets the statements and connects anew. */
    void (*after_fork)(rls_db *db);
    /* Frees the backend's part of the handle (after disconnect or
     * after_fork); NULL part: no-op. */
    void (*release)(rls_db *db);
    int (*connected)(const rls_db *db);  /* a connection is open */
    /* Records the failure src (an sql.h code) of the handle's last
     * statement: "what: detail"; returns its rlstore code. */
    int (*error)(rls_db *db, int src, const char *what);

    /* ---- statements --------------------------------------------------------
     * Prepares statement id of table (enum rls_stmt_table, statements.h)
     * from its reference text sql in this backend's form: SQLite's split
     * deployment qualifies the tables by file (storage/sqlite/split_forms.h),
     * PostgreSQL prepares its own text where it has one
     * (storage/pg/pg_forms.h), else sql translated, and gives the check
     * table's statements the check's quick deadline. */
    int (*prepare)(rls_db *db, int table, int id, const char *sql, rls_stmt **out);
    /* A statement of no table (keycount.c, usage_src.c, doctor.c): the
     * schema under which the rules tables are reached, "main", or "rules"
     * in a split deployment (the rules file is attached under that name). */
    const char *(*rules_schema)(const rls_db *db);

    /* ---- transactions ------------------------------------------------------
     * begin: BEGIN (write: the write transaction of a check or a change,
     * SQLite's BEGIN IMMEDIATE) and what the backend makes sure of before
     * writing (SQLite: the files are still the database's, else EIO).
     * commit: COMMIT and what the backend records for the trust operations
     * below; on failure the transaction is rolled back.  after_commit: runs
     * after the handle's own bookkeeping (SQLite: a checkpoint when the WAL
     * is long, passing the writers' turn on).  rollback: never fails; the
     * first error stays recorded. */
    int (*begin)(rls_db *db, int write);
    int (*commit)(rls_db *db);
    void (*after_commit)(rls_db *db);
    void (*rollback)(rls_db *db);
    /* 1 when the transaction that failed with rc may be run again whole
     * (PostgreSQL: a serialization failure, a deadlock, a connection lost
     * before COMMIT, after a randomised growing wait); SQLite never: its
     * busy handling happens inside a statement. */
    int (*tx_retry)(rls_db *db, int rc, int *attempt);
    /* A write that met another transaction's row: EBUSY, retryable
     * (keyctx.c). */
    int (*conflict)(rls_db *db, const char *what);

    /* ---- what the handle may trust between transactions (cache.c) --------
     * mark: what the handle's last commit left is what it knows (called
     * right after a check's commit).  unchanged: 1 when nothing at all was
     * committed to the database since the mark, by this handle or another
     * (SQLite's data version, of both files when split); then the control
     * row, the rule cache and the emptiness of the policy tables are as they
     * were.  Any write transaction but a check's, a rollback or a fork
     * forgets the mark.  PostgreSQL never knows: unchanged is always 0. */
    void (*mark)(rls_db *db);
    int (*unchanged)(rls_db *db);
    /* 1: a write transaction sees other commits as they happen (PostgreSQL,
     * READ COMMITTED): the rules are read once per transaction, and the
     * control row (STMT_META_GET) also says which tables are empty. */
    int meta_per_tx;
    /* The first page of a file every process of this database maps
     * (RLS_SIDE_BYTES, SQLite's "<db>-ckpt"), or NULL when there is none:
     * other hosts change a PostgreSQL database where no page can say so. */
    void *(*shared_page)(rls_db *db);

    /* ---- deployment: where rules and counters live ------------------------
     * rules_apart: the rules and the counters commit separately (SQLite's
     * split deployment: two files, which one transaction cannot order): a
     * change of both commits the rules' audited part first, then the
     * counters in a transaction of its own (policy.c, admin_list.c).
     * rules_writable: 0 when the deployment keeps this handle from changing
     * the rules tables (a split handle opened rules_read_only). */
    int (*rules_apart)(const rls_db *db);
    int (*rules_writable)(const rls_db *db);

    /* ---- admin -------------------------------------------------------------
     * doctor: appends the backend's rows (check, status, detail) to r,
     * setting *bad when a row could not be added; RLS_OK with a "fail" row
     * when the database is unhealthy, an error only when it cannot look;
     * *done when nothing more should be read (the files under the handle
     * are not the database's).
     * same_db: *same = 1 when handles a and b (both of this backend) are on
     * the same database, which copy refuses; on failure *failed is the
     * handle whose error is recorded. */
    int (*doctor)(rls_db *db, int full, rls_rows *r, int *bad, int *done);
    int (*same_db)(rls_db *a, rls_db *b, int *same, rls_db **failed);
    /* identity: what every handle of this database calls it however it is
     * reached (any path to the file, any spelling of the URI: options,
     * host name or address), into buf; the shared-memory table of its
     * memory-class limits is named from it (memclass.c), and is made with
     * *mode and group *gid (-1: the creator's): a SQLite database's file's
     * (the processes that share the file, by its group, share the table),
     * 0600 on PostgreSQL.  RLS_OK, or an error recorded (called once, at
     * open, outside any transaction). */
    int (*identity)(rls_db *db, char *buf, size_t cap, unsigned *mode, long *gid);
    /* A GC step's cost is its round trips more than its rows on a server:
     * it runs this many times as seldom over as many times the rows. */
    int gc_factor;

    /* ---- the check transaction ---------------------------------------------
     * The pipeline's backend step (check.c, check.h): read the key's
     * policy and states, decide (rls__check_decide, core), write, the
     * housekeeping stage, commit, each run again after a retryable
     * failure.  SQLite: rls__check_tx, the generic transaction.
     * PostgreSQL: rls__pg_check_tx (pg_fast.c), the same step in one round
     * trip from the states it last saw, falling back to rls__check_tx. */
    int (*check_tx)(rls_db *db, struct check_call *call);
} rls_backend;

extern const rls_backend rls__sqlite_backend;
extern const rls_backend rls__pg_backend;
/* What rls_open asks for a postgresql:// URI: loads the PostgreSQL driver
 * module on first use (driver.h). */
extern const rls_backend rls__pg_loader;

#endif
