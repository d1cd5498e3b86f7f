/*
 * faultfx.h - the fixture of the fault-injection suites (issue #5, suite 3):
 * test_faults_calls (every call under every fault, lock contention) and
 * test_faults_file (the database file: full, after a crash, opened and
 * closed under faults).
 *
 * A fixture (fx) is a database with rules and a handle under test, plus a
 * model that counts only what calls that returned RLS_OK did: admitted
 * units, rule-set versions and the active one, audit rows, blocks and open
 * reservations.  fx_verify() reads the file through a plain sqlite3
 * connection on the real "unix" VFS (never the shim) and asserts that it is
 * intact and equal to the model.  OPS are the calls under test, each with a
 * prepare (faults off), a run (faults on) and a done that asserts what the
 * call returned and records an RLS_OK in the model.
 *
 * Include faultvfs.c once in the program too (its functions are not static).
 */
#ifndef RLS_FAULTFX_H
#define RLS_FAULTFX_H

#include "itest.h"
#include "db.h"          /* test hooks: the handle's connection, ckpt_soft */
#include "sqlite/lite.h"

#define MAX_N 400        /* no call here does that many operations of a kind */
#define BUSY_MS 200      /* a lock left behind by a fault shows up at once */

static const char RULES_A[] =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 1000000, window: 1d } ]\n"
    "  login:\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 1, window: 1d, block_for: 1h } ]\n";
static const char RULES_B[] =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 2000000, window: 1d } ]\n"
    "  login:\n"
    "    limits: [ { name: n, algorithm: fixed_window, limit: 1, window: 1d, block_for: 1h } ]\n";

/* ---- plain SQLite reads (the real VFS, never the shim) ------------------ */

static inline sqlite3 *plain_open(const char *path)
{
    sqlite3 *s = NULL;
    if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READWRITE, "unix") != SQLITE_OK)
        fail_msg("plain open of %s: %s", path, s ? sqlite3_errmsg(s) : "?");
    return s;
}

static inline int64_t plain_int(sqlite3 *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(s, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(s));
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fail_msg("%s: %s", sql, sqlite3_errmsg(s));
    sqlite3_finalize(st);
    return v;
}

static inline void plain_intact(sqlite3 *s)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(s, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const char *v = (const char *)sqlite3_column_text(st, 0);
    if (!v || strcmp(v, "ok") != 0)
        fail_msg("integrity_check: %s", v ? v : "(null)");
    sqlite3_finalize(st);
}

/* Runs sql on a plain connection, failing the test if it fails. */
static inline void exec_on(sqlite3 *s, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(s, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err ? err : "?");
}

/* ---- the fixture and its model ------------------------------------------ */

typedef struct fx {
    char *dir;
    char path[4096];
    rls_db *db;          /* the handle under test */
    int allow;           /* its failure policy is on_error: allow */
    /* The model: what the calls that returned RLS_OK did. */
    int64_t admitted;    /* units charged on action api */
    int64_t versions;    /* rule sets stored */
    int64_t active;      /* active rule-set version */
    int64_t audit;       /* audit rows */
    int64_t blocked;     /* block rows */
    int64_t pending;     /* open reservations */
    int64_t res_id;      /* the reservation prepared for commit or cancel */
    int npenalty;        /* keys used by the penalty check */
} fx;

static const char SQL_ADMITTED[] =
    "SELECT coalesce(sum(b), 0) FROM rls_state"
    " WHERE lid IN (SELECT lid FROM rls_limits WHERE action = 'api')";

static inline rls_db *open_handle(const char *path, int allow)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.busy_timeout_ms = BUSY_MS;
    o.on_error = allow ? RLS_ON_ERROR_ALLOW : RLS_ON_ERROR_DENY;
    int rc = rls_open(&db, path, &o);
    if (rc != RLS_OK)
        fail_msg("open %s: %s: %s", path, rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* The file must be intact and hold exactly what the model says. */
static inline void fx_verify(const fx *f)
{
    sqlite3 *s = plain_open(f->path);
    plain_intact(s);
    assert_int_equal(plain_int(s, SQL_ADMITTED), f->admitted);
    assert_int_equal(plain_int(s, "SELECT count(*) FROM rls_rulesets"), f->versions);
    assert_int_equal(plain_int(s, "SELECT active_version FROM rls_meta"), f->active);
    assert_int_equal(plain_int(s, "SELECT count(*) FROM rls_audit"), f->audit);
    assert_int_equal(plain_int(s, "SELECT count(*) FROM rls_blocks"), f->blocked);
    assert_int_equal(plain_int(s, "SELECT count(*) FROM rls_reservations"), f->pending);
    sqlite3_close(s);
}

/* A new database with RULES_A; ckpt: the handle checkpoints at every commit. */
static inline fx *fx_new(int allow, int ckpt)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tu_mkdtemp();
    tu_path(f->path, sizeof f->path, f->dir, "rl.db");
    f->allow = allow;
    f->db = open_handle(f->path, allow);
    assert_int_equal(rls_rules_apply_at(f->db, RULES_A, strlen(RULES_A), "a.yaml", NULL, T0,
                                        NULL), RLS_OK);
    if (ckpt)
        f->db->lite->ckpt_soft = 1;
    sqlite3 *s = plain_open(f->path);
    f->versions = plain_int(s, "SELECT count(*) FROM rls_rulesets");
    f->active = plain_int(s, "SELECT active_version FROM rls_meta");
    f->audit = plain_int(s, "SELECT count(*) FROM rls_audit");
    sqlite3_close(s);
    fx_verify(f);
    return f;
}

/* Closes the handle (faults off), verifies the file once more, removes it. */
static inline void fx_free(fx *f)
{
    rls_close(f->db);
    f->db = NULL;
    fx_verify(f);
    tu_rmdir(f->dir);
    free(f);
}

/* After the faults: a fresh handle checks correctly and its admission is
 * stored. */
static inline void fx_fresh_handle_works(fx *f)
{
    rls_result r;
    rls_db *db = open_handle(f->path, 0);
    int rc = rls_check_at(db, "api", "k", 1, T0, &r);
    if (rc != RLS_OK)
        fail_msg("fresh handle: %s: %s", rls_errname(rc), rls_errmsg(db));
    assert_int_equal(r.allowed, 1);
    assert_int_equal(r.reason, RLS_REASON_OK);
    f->admitted++;
    rls_close(db);
    fx_verify(f);
}

/* ---- the operations under test ------------------------------------------ */

typedef struct fault_op {
    const char *name;
    int admin;                          /* commits with synchronous=FULL */
    void (*prepare)(fx *f);             /* faults off; may be NULL */
    int (*run)(fx *f, rls_result *res); /* faults on */
    /* Asserts what the call returned and records an RLS_OK in the model. */
    void (*done)(fx *f, int rc, const rls_result *res);
} fault_op;

static inline int check_run(fx *f, rls_result *res)
{
    return rls_check_at(f->db, "api", "k", 1, T0, res);
}

static inline void check_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK) {
        assert_int_equal(res->allowed, 1);
        assert_int_equal(res->reason, RLS_REASON_OK);
        f->admitted++;
        return;
    }
    /* the failure policy decides, and says so */
    assert_int_equal(res->reason, RLS_REASON_DEGRADED);
    assert_int_equal(res->allowed, f->allow);
    assert_int_equal(res->retry_after_ms, f->allow ? 0 : -1);
}

/* A check that exceeds login's limit of 1 and so must store a penalty
 * block: a denial that returns RLS_OK must have written it. */
static inline void penalty_key(const fx *f, char *buf, size_t size)
{
    snprintf(buf, size, "p%d", f->npenalty);
}

static inline void penalty_prepare(fx *f)
{
    char key[32];
    rls_result r;
    f->npenalty++;
    penalty_key(f, key, sizeof key);
    assert_int_equal(rls_check_at(f->db, "login", key, 1, T0, &r), RLS_OK);
    assert_int_equal(r.allowed, 1);
}

static inline int penalty_run(fx *f, rls_result *res)
{
    char key[32];
    penalty_key(f, key, sizeof key);
    return rls_check_at(f->db, "login", key, 1, T0, res);
}

static inline void penalty_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK) {
        assert_int_equal(res->allowed, 0);
        assert_int_equal(res->reason, RLS_REASON_LIMIT);
        assert_true(res->retry_after_ms >= 3600000);  /* the block, or the window */
        f->blocked++;
        return;
    }
    assert_int_equal(res->reason, RLS_REASON_DEGRADED);
    assert_int_equal(res->allowed, f->allow);
}

static inline int apply_run(fx *f, rls_result *res)
{
    const char *y = f->versions % 2 ? RULES_B : RULES_A;
    int64_t v = -1;
    int rc = rls_rules_apply_at(f->db, y, strlen(y), "fault.yaml", "fault", T0, &v);
    if (rc == RLS_OK) {
        assert_true(v > f->active);
        f->active = v;
    }
    return rc;
}

static inline void apply_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK) {
        f->versions++;
        f->audit++;
    }
}

static inline int block_run(fx *f, rls_result *res)
{
    return rls_block_set_at(f->db, "api", "b", 0, "fault test", T0);
}

static inline void block_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK) {
        f->blocked = 1;
        f->audit++;
    }
}

static inline void unblock_prepare(fx *f)
{
    if (f->blocked)   /* only this key is ever blocked in its loops */
        return;
    assert_int_equal(block_run(f, NULL), RLS_OK);
    block_done(f, RLS_OK, NULL);
}

static inline int unblock_run(fx *f, rls_result *res)
{
    return rls_block_unset_at(f->db, "api", "b", T0);
}

static inline void unblock_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK) {
        f->blocked = 0;
        f->audit++;
    }
}

static inline void reserve_prepare(fx *f)
{
    rls_result r;
    int rc = rls_reserve_at(f->db, "api", "k", 1, 60000, T0, &f->res_id, &r);
    if (rc != RLS_OK)
        fail_msg("reserve: %s: %s", rls_errname(rc), rls_errmsg(f->db));
    assert_int_equal(r.allowed, 1);
    assert_true(f->res_id > 0);
    f->admitted++;
    f->pending++;
}

static inline int commit_run(fx *f, rls_result *res)
{
    return rls_commit_at(f->db, f->res_id, T0);
}

static inline void commit_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK)
        f->pending--;     /* the charge stays */
}

static inline int cancel_run(fx *f, rls_result *res)
{
    return rls_cancel_at(f->db, f->res_id, T0);
}

static inline void cancel_done(fx *f, int rc, const rls_result *res)
{
    if (rc == RLS_OK) {
        f->pending--;
        f->admitted--;    /* refunded */
    }
}

enum { OP_CHECK, OP_PENALTY, OP_APPLY, OP_BLOCK, OP_UNBLOCK, OP_COMMIT, OP_CANCEL, OP__COUNT };

static const fault_op OPS[OP__COUNT] = {
    {"check", 0, NULL, check_run, check_done},
    {"penalty_check", 0, penalty_prepare, penalty_run, penalty_done},
    {"apply", 1, NULL, apply_run, apply_done},
    {"block", 1, NULL, block_run, block_done},
    {"unblock", 1, unblock_prepare, unblock_run, unblock_done},
    {"commit", 0, reserve_prepare, commit_run, commit_done},
    {"cancel", 0, reserve_prepare, cancel_run, cancel_done},
};

#endif
