/*
 * pg_fast.c - a check in one round trip to PostgreSQL.
 *
 * The usual check transaction (check.c) reads the control row, reads and
 * locks each state, then writes: three round trips however they are
 * pipelined, because core must see the states before anything can be
 * written.  Here the handle decides from the states it last wrote or read
 * (statecache.c), with the rules it has cached, and sends one implicit
 * transaction (statements and a Sync, one pipeline): for each limit, the
 * new state written only where the stored state still equals the one
 * decided from (a compare-and-set), or for a limit the decision leaves
 * alone, that equality checked under a row lock; each under a guard that
 * holds only while the rules are the generation the handle decided with,
 * the GC horizon is not past the check's time, and the key has nothing of
 * its own the usual path would read (a block, an exact tier assignment, an
 * override, a reservation that has expired).  For a key the handle saw
 * without the first three at the policy tables' current generation
 * (rls_meta.policy_gen, schema/pg/002, moved by every write of them), that
 * generation being unchanged stands for them; else the statement probes
 * the tables, and returns the generation it probed at.  Likewise, while
 * rls_meta.resv_seen (schema/pg/003) says no reservation was ever stored,
 * the N forms ask that it still say so in place of probing for an expired
 * reservation of the key.
 *
 * Exact: a stored state equal to the one decided from yields the same
 * decision, whatever was written in between (core's decision is a function
 * of the states, rules, time and cost alone), and the row locks the writes
 * and holds take make the states the decision used current together at
 * the commit, as the usual path's FOR UPDATE does.  With several limits,
 * a write or hold that does not hold raises an error (division by the
 * count of rows it matched), so the transaction is all or nothing; with
 * one, its row count says it.
 *
 * A state the handle does not know costs a round trip more (the reads
 * alone, then the flight).  A handle that finds its states stale now and
 * then (another host wrote them) sends the reads after the transaction's
 * Sync in the same pipeline, so a stale state too costs one more; one
 * that finds most of them stale (hosts sharing every key) reads first, and
 * runs no compare-and-set in vain (FAST_STALE_*).
 * After FAST_ATTEMPTS flights, and for a new key, a key with policy rows
 * (marked in statecache.c), a rule change, a penalty to impose, the
 * housekeeping of the usual path (stats, a GC step) or a `durability: full`
 * limit, the check takes the usual path: nothing was written.  An error
 * the server reports inside the transaction means it did not commit; a
 * connection lost after the Sync was sent and before it was answered
 * leaves the outcome unknown, answered like a COMMIT lost the same way:
 * never run twice; so does a flight that outlived its deadline (pg_io.c),
 * and the check then fails at once with the failure policy's answer,
 * where the usual path would first wait as long again to connect.  A connection that the server closed while idle is
 * found before the flight (idle_conn_alive), and the usual path connects
 * again.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "pg.h"

#define FAST_ATTEMPTS 3
/* How often the states a handle knew were stale (another host wrote them
 * since), 0..1024, an average over about its last eight known keys: past
 * FAST_STALE_READS the reads travel with every flight (a stale state then
 * costs one flight more, not two), past FAST_STALE_VERIFY the states are
 * read first (two flights, but no compare-and-set run in vain: cheaper for
 * the server when most would fail, as for hosts that share every key). */
#define FAST_STALE_READS 64
#define FAST_STALE_VERIFY 512
#define FAST_MAX_OPS (2 * RESOLVE_MAX_LIMITS)   /* a write and a read per limit */
#define FAST_MAX_PARAMS 19

/* CAS and HOLD fail the transaction when they do not hold; a check of one
 * limit needs no more than the row they return or not (CAS1, HOLD1): no
 * error to raise and roll back.  Each in two forms: the first probes the
 * policy tables for the key and returns their generation (policy_gen,
 * schema/pg/002) as it read them; the G form, for a key the handle saw
 * without policy rows at generation P, only asks that the generation still
 * be P (one column of the row it reads anyway, where the probes start
 * three scans of three tables: about a quarter of the server's CPU per
 * check). */
enum {
    F_CAS, F_HOLD, F_CAS1, F_HOLD1,
    F_GCAS, F_GHOLD, F_GCAS1, F_GHOLD1,
    F_NCAS, F_NHOLD, F_NCAS1, F_NHOLD1,
    F_READ, F__COUNT
};
#define F_ONE (F_CAS1 - F_CAS)    /* from a statement to its one-limit form */
#define F_GEN (F_GCAS - F_CAS)    /* from a statement to its G form */
#define F_NGEN (F_NCAS - F_CAS)   /* from a statement to its N form */

/* The guard: the rules the handle decided with, the GC horizon not past
 * the check's time `now`, and nothing of the key's own that the usual path
 * reads (keyctx.c): no block, exact tier assignment or override for the
 * key as normalised ($2) or canonical (else as given: ctx->probe, keyctx.h)
 * and the action or all actions
 * (a superset of what applies), no reservation of it that has expired;
 * the four probes in one subquery (one plan node to start, not four: the
 * executor's start-up is most of such a statement's cost). */
#define F_META(gen, now, more)                                                \
    " AND EXISTS (SELECT 1 FROM rls_meta WHERE id = 1 AND rules_gen = $" gen  \
    " AND gc_horizon <= $" now more ")"
#define F_RESERVATIONS(now, act)                                              \
    " SELECT 1 FROM rls_reservations WHERE key = $2 AND action = $" act       \
    " AND expires_ms <= $" now
#define F_GUARD(gen, now, raw, act)                                           \
    F_META(gen, now, "")                                                      \
    " AND NOT EXISTS (SELECT 1 FROM rls_blocks WHERE key IN ($2, $" raw ")"   \
    " AND action IN ('', $" act ")"                                           \
    " UNION ALL SELECT 1 FROM rls_assignments WHERE pattern IN ($2, $" raw ")" \
    " AND action IN ('', $" act ") AND kind = 0"                              \
    " UNION ALL SELECT 1 FROM rls_overrides WHERE key = $2 AND action = $" act \
    " UNION ALL" F_RESERVATIONS(now, act) ")"
/* the G form's: the policy generation ($pgen) in place of the three probes */
#define F_GGUARD(gen, now, pgen, act)                                         \
    F_META(gen, now, " AND policy_gen = $" pgen)                              \
    " AND NOT EXISTS (" F_RESERVATIONS(now, act) ")"
/* the N form's: and no reservation was ever stored, in place of the probe
 * for an expired one (its $act, unused, keeps the G form's parameters) */
#define F_NGUARD(gen, now, pgen, act)                                         \
    F_META(gen, now, " AND policy_gen = $" pgen " AND NOT resv_seen")
#define F_POLICY_GEN "(SELECT policy_gen FROM rls_meta WHERE id = 1)"
#define F_CAS_SQL(guard, ret)                                                 \
    "UPDATE rls_state SET a = $4, b = $5, c = $6, last_ms = $7, exp_ms = $8, log = $9" \
    " WHERE lid = $1 AND key = $2 AND alg = $3 AND a = $10 AND b = $11 AND c = $12" \
    " AND last_ms = $13 AND exp_ms = $14 AND log IS NOT DISTINCT FROM $15"  \
    guard("16", "17", "18", "19") ret
#define F_HOLD_SQL(guard, ret)                                                \
    "SELECT " ret " FROM rls_state WHERE lid = $1 AND key = $2 AND alg = $3 AND a = $4" \
    " AND b = $5 AND c = $6 AND last_ms = $7 AND exp_ms = $8"                 \
    " AND log IS NOT DISTINCT FROM $9" guard("10", "11", "12", "13") " FOR UPDATE"
/* the probing forms' results: 1 (or 1 / count), then the generation */
#define F_PCAS F_CAS_SQL(F_GUARD, " RETURNING " F_POLICY_GEN " AS g")
#define F_PHOLD F_HOLD_SQL(F_GUARD, F_POLICY_GEN " AS g")
#define F_GCAS_SQL F_CAS_SQL(F_GGUARD, " RETURNING 1")
#define F_GCAS1_SQL F_CAS_SQL(F_GGUARD, "")
#define F_GHOLD_SQL F_HOLD_SQL(F_GGUARD, "1")
#define F_NCAS_SQL F_CAS_SQL(F_NGUARD, " RETURNING 1")
#define F_NCAS1_SQL F_CAS_SQL(F_NGUARD, "")
#define F_NHOLD_SQL F_HOLD_SQL(F_NGUARD, "1")
/* parameter types: the raw key (bytes) of the probes is the generation
 * (int8) in the G forms */
#define F_CAS_BYTES (1u << 1 | 1u << 8 | 1u << 14)
#define F_CAS_TEXT (1u << 18)
#define F_HOLD_BYTES (1u << 1 | 1u << 8)
#define F_HOLD_TEXT (1u << 12)

static const struct fast_stmt {
    const char *name, *sql;
    int nparams;
    uint32_t bytea, text;   /* bit i: parameter i+1 is bytes, text; else int8 */
} FAST[F__COUNT] = {
    {"rls_fast_cas", "WITH u AS (" F_PCAS ") SELECT 1 / count(*), max(g) FROM u", 19,
     F_CAS_BYTES | 1u << 17, F_CAS_TEXT},
    {"rls_fast_hold", "SELECT 1 / count(*), max(g) FROM (" F_PHOLD ") s", 13,
     F_HOLD_BYTES | 1u << 11, F_HOLD_TEXT},
    {"rls_fast_cas1", F_PCAS, 19, F_CAS_BYTES | 1u << 17, F_CAS_TEXT},
    {"rls_fast_hold1", F_PHOLD, 13, F_HOLD_BYTES | 1u << 11, F_HOLD_TEXT},
    {"rls_fast_gcas", "WITH u AS (" F_GCAS_SQL ") SELECT 1 / count(*) FROM u", 19, F_CAS_BYTES,
     F_CAS_TEXT},
    {"rls_fast_ghold", "SELECT 1 / count(*) FROM (" F_GHOLD_SQL ") s", 13, F_HOLD_BYTES,
     F_HOLD_TEXT},
    {"rls_fast_gcas1", F_GCAS1_SQL, 19, F_CAS_BYTES, F_CAS_TEXT},
    {"rls_fast_ghold1", F_GHOLD_SQL, 13, F_HOLD_BYTES, F_HOLD_TEXT},
    {"rls_fast_ncas", "WITH u AS (" F_NCAS_SQL ") SELECT 1 / count(*) FROM u", 19, F_CAS_BYTES,
     F_CAS_TEXT},
    {"rls_fast_nhold", "SELECT 1 / count(*) FROM (" F_NHOLD_SQL ") s", 13, F_HOLD_BYTES,
     F_HOLD_TEXT},
    {"rls_fast_ncas1", F_NCAS1_SQL, 19, F_CAS_BYTES, F_CAS_TEXT},
    {"rls_fast_nhold1", F_NHOLD_SQL, 13, F_HOLD_BYTES, F_HOLD_TEXT},
    /* one row always: the state's columns (NULL when it has none), then
     * the policy generation and whether a reservation was ever stored */
    {"rls_fast_read",
     "SELECT alg, a, b, c, last_ms, exp_ms, log, policy_gen, resv_seen::int::int8 FROM rls_meta m"
     " LEFT JOIN rls_state s ON s.lid = $1 AND s.key = $2 WHERE m.id = 1",
     2, 1u << 1, 0},
};

#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25

/* One execution: its statement and parameters (binary). */
typedef struct fast_op {
    int stmt;
    int n;
    const char *val[FAST_MAX_PARAMS];
    int len[FAST_MAX_PARAMS];
    unsigned char i8[FAST_MAX_PARAMS][8];
} fast_op;

static void p_int(fast_op *op, int64_t v)
{
    int i = op->n++;
    uint64_t u = (uint64_t)v;
    for (int b = 0; b < 8; b++)
        op->i8[i][b] = (unsigned char)(u >> (56 - 8 * b));
    op->val[i] = (const char *)op->i8[i];
    op->len[i] = 8;
}

static void p_bytes(fast_op *op, const void *p, size_t len)
{
    int i = op->n++;
    op->val[i] = p ? p : NULL;
    op->len[i] = p ? (int)len : 0;
}

/* The stored form of a state's log: NULL when it has no entry (as
 * rls__keyctx_write_states writes it). */
static void p_log(fast_op *op, const algo_state *s)
{
    p_bytes(op, s->log && s->log_len ? s->log : NULL, s->log_len);
}

static void p_state(fast_op *op, int alg, const algo_state *s, int with_alg)
{
    if (with_alg)
        p_int(op, alg);
    p_int(op, s->a);
    p_int(op, s->b);
    p_int(op, s->c);
    p_int(op, s->last_ms);
    p_int(op, s->expires_ms);
    p_log(op, s);
}

static int64_t get_i8(const PGresult *r, int col)
{
    const unsigned char *v = (const unsigned char *)PQgetvalue(r, 0, col);
    uint64_t u = 0;
    if (PQgetlength(r, 0, col) != 8)
        return 0;
    for (int b = 0; b < 8; b++)
        u = u << 8 | v[b];
    return (int64_t)u;
}

/* Prepares the statements on this connection once, all in one pipeline
 * (one round trip, not one each).  A server that refuses one (a
 * PostgreSQL-like engine without some of it) is not asked again on this
 * connection: its checks take the usual path. */
static int fast_prepare(rls_db *db)
{
    struct pg_conn *pc = db->pg;
    PGconn *c = pc->c;
    if (pc->fast_gen == pc->gen)
        return pc->fast_refused ? SQL_ERROR : SQL_OK;
    pc->fast_gen = pc->gen;
    pc->fast_refused = 1;
    int sent = PQenterPipelineMode(c), synced = 0, rc = SQL_OK;
    for (int s = 0; sent && s < F__COUNT; s++) {
        Oid types[FAST_MAX_PARAMS];
        for (int i = 0; i < FAST[s].nparams; i++)
            types[i] = FAST[s].bytea >> i & 1u  ? OID_BYTEA
                       : FAST[s].text >> i & 1u ? OID_TEXT : OID_INT8;
        sent = PQsendPrepare(c, FAST[s].name, FAST[s].sql, FAST[s].nparams, types);
    }
    sent = sent && PQpipelineSync(c);
    /* each statement's result and a NULL, then the Sync's; after an
     * error, the rest come back aborted */
    int64_t deadline = rls__pg_deadline(db, PG_QUICK);
    for (int nulls = 0; sent;) {
        PGresult *r;
        if (rls__pg_next(db, deadline, &r) != SQL_OK)
            return SQL_ERROR;   /* lost: the usual path connects again */
        if (!r) {
            if (PQstatus(c) != CONNECTION_OK || ++nulls > F__COUNT)
                break;
            continue;
        }
        ExecStatusType st = PQresultStatus(r);
        synced = st == PGRES_PIPELINE_SYNC;
        if (!synced && st != PGRES_COMMAND_OK && rc == SQL_OK)
            rc = rls__pg_fail(db, r, "cannot prepare statement");
        PQclear(r);
        if (synced)
            break;
    }
    if (!synced || !PQexitPipelineMode(c)) {
        pc->lost = 1;   /* the usual path connects again */
        return rc != SQL_OK ? rc : SQL_ERROR;
    }
    if (rc == SQL_OK)
        pc->fast_refused = 0;
    return rc;
}

static int one_limit(int stmt)
{
    return stmt == F_CAS1 || stmt == F_HOLD1 || stmt == F_GCAS1 || stmt == F_GHOLD1 ||
           stmt == F_NCAS1 || stmt == F_NHOLD1;
}

/* What a flight's transaction did. */
enum { TX_COMMITTED, TX_MISMATCH, TX_FAILED, TX_UNKNOWN };

/*
 * Sends ops[0..ntx) as one implicit transaction and a Sync (none when ntx
 * is 0), then ops[ntx..n) and a Sync, and reads every result: out[i] gets
 * op i's (NULL when it did not run), *err the transaction's first error.
 * Returns TX_COMMITTED, TX_MISMATCH (a write or hold did not hold),
 * TX_FAILED (another error the server reported: nothing committed) or
 * TX_UNKNOWN (the connection broke first: the connection is marked lost).
 */
static int flight(rls_db *db, const fast_op *ops, int ntx, int n, PGresult **out,
                  PGresult **err)
{
    struct pg_conn *pc = db->pg;
    PGconn *c = pc->c;
    static const int binary[FAST_MAX_PARAMS] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                1, 1, 1, 1, 1, 1, 1, 1, 1};
    int outcome = TX_COMMITTED, sent, flushed = 0, synced = 0;

    *err = NULL;
    for (int i = 0; i < n; i++)
        out[i] = NULL;
    sent = PQenterPipelineMode(c);
    for (int i = 0; sent && i < n; i++) {
        sent = PQsendQueryPrepared(c, FAST[ops[i].stmt].name, ops[i].n, ops[i].val,
                                   ops[i].len, binary, 1);
        if (sent && i == ntx - 1)
            flushed = sent = PQpipelineSync(c);
    }
    if (n > ntx)
        sent = sent && PQpipelineSync(c);

    /* each op's result and a NULL; a SYNC after each segment */
    int syncs = 0, want = (ntx > 0) + (n > ntx), nulls = 0;
    int64_t deadline = rls__pg_deadline(db, PG_QUICK);
    for (int i = 0; sent && syncs < want;) {
        PGresult *r;
        if (rls__pg_next(db, deadline, &r) != SQL_OK)
            break;   /* lost (timed out): the outcome is settled below */
        if (!r) {
            /* the end of op i-1's results; more than one per op: the
             * protocol is not where it should be */
            if (PQstatus(c) != CONNECTION_OK || ++nulls > n + want)
                break;
            continue;
        }
        ExecStatusType s = PQresultStatus(r);
        if (s == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            synced |= ++syncs == 1;
            continue;
        }
        if (i >= n) {   /* more than was asked for */
            PQclear(r);
            break;
        }
        if (i < ntx && s == PGRES_FATAL_ERROR && !*err) {
            const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            outcome = !state ? TX_UNKNOWN : strcmp(state, "22012") == 0 ? TX_MISMATCH
                                                                         : TX_FAILED;
            *err = r;
        } else if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
            out[i] = r;
        } else {
            PQclear(r);
        }
        i++;
    }
    /* The server commits at the transaction's Sync.  Not flushed whole:
     * it never got it.  Flushed, and neither its answer nor an error of
     * the server's came back: it may have. */
    if (ntx > 0 && !synced && outcome == TX_COMMITTED)
        outcome = flushed ? TX_UNKNOWN : TX_FAILED;
    /* the one statement of a one-limit check matched no row: it changed
     * nothing, and the transaction committed nothing */
    if (outcome == TX_COMMITTED && ntx == 1 && one_limit(ops[0].stmt) && out[0] &&
        (ops[0].stmt == F_GCAS1 || ops[0].stmt == F_NCAS1 ? strcmp(PQcmdTuples(out[0]), "0") == 0
                                : PQntuples(out[0]) == 0))
        outcome = TX_MISMATCH;
    if (syncs < want || pc->lost || !PQexitPipelineMode(c)) {
        pc->lost = 1;           /* start afresh before the next transaction */
        for (int i = 0; i < n; i++) {
            PQclear(out[i]);
            out[i] = NULL;
        }
    }
    return outcome;
}

/* A connection the server closed while it was idle (a restart, a
 * terminated session) shows as readable: it is marked lost, and the usual
 * path connects again and runs its transaction, where a flight that found
 * it broken could not tell whether it had committed. */
static int idle_conn_alive(struct pg_conn *pc)
{
    struct pollfd p = {PQsocket(pc->c), POLLIN, 0};
    int r = p.fd < 0 ? -1 : poll(&p, 1, 0);
    if (r == 0)
        return 1;
    if (r > 0 && PQconsumeInput(pc->c) && PQstatus(pc->c) == CONNECTION_OK)
        return 1;   /* a message of the server's (a parameter's new value) */
    pc->lost = 1;
    return 0;
}

/* Can this handle try the one-round-trip check at `now` at all? */
static int fast_usable(rls_db *db, int64_t now)
{
    return db->pg && db->pg->c && !db->pg->lost && !db->conn.in_tx && db->rc.rules &&
           db->rc.rules_gen >= 0 && db->trust.gc_horizon <= now && !rls__housekeeping_due(db, now) &&
           idle_conn_alive(db->pg);
}

/* What the reads found: the current state of each limit, learnt; 1 if
 * each equals the state the flight decided from (old; NULL: no flight),
 * so a failed guard, not a stale state, failed it. */
static int learn(rls_db *db, const key_ctx *ctx, PGresult *const *reads,
                 const algo_state *old)
{
    int same = old != NULL;
    for (int i = 0; i < ctx->n; i++) {
        const PGresult *r = reads[i];
        int64_t lid = ctx->rl[i].def->id;
        if (r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 7)) {
            rls__cache_policy_gen_set(db, get_i8(r, 7));
            rls__cache_resv_never_set(db, get_i8(r, 8) == 0);
        }
        if (!r || PQntuples(r) != 1 || PQgetisnull(r, 0, 0)) {
            if (r)
                rls__sc_drop(db, lid, ctx->key, ctx->keylen);
            same = 0;
            continue;
        }
        algo_state s;
        memset(&s, 0, sizeof s);
        s.a = get_i8(r, 1);
        s.b = get_i8(r, 2);
        s.c = get_i8(r, 3);
        s.last_ms = get_i8(r, 4);
        s.expires_ms = get_i8(r, 5);
        if (!PQgetisnull(r, 0, 6)) {
            s.log = (unsigned char *)PQgetvalue(r, 0, 6);
            s.log_len = (size_t)PQgetlength(r, 0, 6);
        }
        int alg = (int)get_i8(r, 0);
        if (same) {
            const algo_state *o = &old[i];
            size_t ol = o->log ? o->log_len : 0, sl = s.log ? s.log_len : 0;
            same = alg == ctx->rl[i].def->algorithm && s.a == o->a && s.b == o->b &&
                   s.c == o->c && s.last_ms == o->last_ms && s.expires_ms == o->expires_ms &&
                   ol == sl && (ol == 0 || memcmp(o->log, s.log, ol) == 0);
        }
        rls__sc_put(db, lid, ctx->key, ctx->keylen, alg, &s);
    }
    return same;
}

static void note_stale(struct pg_conn *pc, int stale)
{
    pc->fast_stale += stale ? (1024 - pc->fast_stale) >> 3 : -(pc->fast_stale >> 3);
}

/* The states of ctx's limits as the handle knows them: 1 all known (a
 * copy in old too), 0 one is not, -1 out of memory. */
static int known_states(rls_db *db, key_ctx *ctx, algo_state *old)
{
    int k = 1;
    memset(old, 0, sizeof *old * (size_t)ctx->n);
    for (int i = 0; i < ctx->n && k == 1; i++) {
        const rule_limit *def = ctx->rl[i].def;
        ctx->items[i].rl = &ctx->rl[i];
        ctx->items[i].st = &ctx->st[i];
        k = rls__sc_get(db, def->id, ctx->key, ctx->keylen, def->algorithm, &ctx->st[i]);
        if (k == 1)
            k = rls__sc_get(db, def->id, ctx->key, ctx->keylen, def->algorithm, &old[i]);
    }
    return k;
}

static void free_logs(algo_state *st, int n)
{
    for (int i = 0; i < n; i++) {
        free(st[i].log);
        st[i].log = NULL;
    }
}

static void add_reads(const key_ctx *ctx, fast_op *ops, int *n)
{
    for (int i = 0; i < ctx->n; i++) {
        fast_op *op = &ops[(*n)++];
        op->stmt = F_READ;
        op->n = 0;
        p_int(op, ctx->rl[i].def->id);
        p_bytes(op, ctx->key, ctx->keylen);
    }
}

/* The policy generation at which the handle saw ctx's key without policy
 * rows for each of its limits, if that is the generation it last read;
 * else -1: the probes must look. */
static int64_t clean_gen(rls_db *db, const key_ctx *ctx)
{
    for (int i = 0; i < ctx->n; i++)
        if (rls__sc_clean_gen(db, ctx->rl[i].def->id, ctx->key, ctx->keylen) != db->trust.policy_gen)
            return -1;
    return db->trust.policy_gen;
}

/* The transaction: each limit's new state where it changed, its state
 * held where it did not, each under the guard: the probing form's, or
 * with pgen >= 0 the G form's (the N form's while the handle last read
 * that no reservation was ever stored). */
static void add_writes(rls_db *db, const key_ctx *ctx, const algo_state *old, int64_t now,
                       int64_t pgen, fast_op *ops, int *n)
{
    for (int i = 0; i < ctx->n; i++) {
        const rule_limit *def = ctx->rl[i].def;
        fast_op *op = &ops[(*n)++];
        op->n = 0;
        p_int(op, def->id);
        p_bytes(op, ctx->key, ctx->keylen);
        int changed = ctx->items[i].changed;
        op->stmt = (changed ? F_CAS : F_HOLD) + (ctx->n == 1 ? F_ONE : 0) +
                   (pgen < 0 ? 0 : db->trust.resv_never ? F_NGEN : F_GEN);
        p_state(op, def->algorithm, changed ? &ctx->st[i] : &old[i], 1);
        if (changed)
            p_state(op, def->algorithm, &old[i], 0);   /* as it must still be */
        p_int(op, db->rc.rules_gen);
        p_int(op, now);
        if (pgen >= 0)
            p_int(op, pgen);
        else
            p_bytes(op, ctx->probe, ctx->probelen);   /* canonical or given (keyctx.h) */
        p_bytes(op, ctx->act->name, strlen(ctx->act->name));
    }
}

static void clear_results(PGresult **res, int n)
{
    for (int i = 0; i < n; i++) {
        PQclear(res[i]);
        res[i] = NULL;
    }
}

/* After a committed flight of the probing forms: the generation each
 * probe read the policy tables at, which found none of the key's. */
static void learn_clean(rls_db *db, const key_ctx *ctx, const fast_op *ops,
                        PGresult *const *out)
{
    for (int i = 0; i < ctx->n; i++) {
        const PGresult *r = out[i];
        int col = one_limit(ops[i].stmt) ? 0 : 1;
        if (ops[i].stmt >= F_GCAS || !r || PQntuples(r) != 1 || PQgetisnull(r, 0, col))
            continue;
        rls__cache_policy_gen_set(db, get_i8(r, col));
        rls__sc_set_clean_gen(db, ctx->rl[i].def->id, ctx->key, ctx->keylen, db->trust.policy_gen);
    }
}

/* After a committed flight: the states written are known, and the
 * check's housekeeping (check.c). */
static void committed(rls_db *db, struct check_call *call)
{
    const key_ctx *ctx = call->ctx;
    for (int i = 0; i < ctx->n; i++)
        if (ctx->items[i].changed)
            rls__sc_put(db, ctx->rl[i].def->id, ctx->key, ctx->keylen,
                        ctx->rl[i].def->algorithm, &ctx->st[i]);
    rls__check_counted(db, call);
}

/* A deadline passed (pg_io.c): the check fails now, where the usual path
 * would first wait as long again to connect. */
static int timed_out_error(rls_db *db)
{
    return rls__sql_error(db, SQL_IOERR, "cannot check");
}

/* One attempt: RLS_OK (done), FAST_PASS (take the usual path), a
 * positive code to try again, or an error. */
#define FAST_PASS (-1)
#define FAST_AGAIN 1000

/* Decides as the generic step does (rls__check_decide, with the GC
 * horizon as every absent state's floor: its guard holds only while it is
 * not past now); 0 when the flight cannot carry what the decision asks for
 * (a penalty block), or core refused a limit (the usual path says so). */
static int fast_decide(rls_db *db, struct check_call *call)
{
    if (rls__check_decide(db, call, db->trust.gc_horizon) != RLS_OK) {
        db->errmsg[0] = '\0';
        return 0;
    }
    return !call->blocked && !call->penalty;
}

static int attempt(rls_db *db, struct check_call *call, int *read_done)
{
    struct pg_conn *pc = db->pg;
    key_ctx *ctx = call->ctx;
    int64_t now = call->now;
    fast_op ops[FAST_MAX_OPS];
    PGresult *out[FAST_MAX_OPS], *err = NULL;
    algo_state old[RESOLVE_MAX_LIMITS];
    int n = 0, rc = FAST_PASS, k = known_states(db, ctx, old);

    if (k == 2 || k < 0 || (k == 0 && *read_done))
        goto done;   /* policy rows, or still unknown (a new key): the usual path */
    if (k == 0 || (!*read_done && pc->fast_stale >= FAST_STALE_VERIFY)) {
        /* states the handle does not know, or likely stale: read them all,
         * then decide */
        add_reads(ctx, ops, &n);
        flight(db, ops, 0, n, out, &err);
        if (!pc->lost) {
            int same = learn(db, ctx, out, k == 1 ? old : NULL);
            if (k == 1)
                note_stale(pc, !same);   /* would they have held? */
        }
        *read_done = 1;
        rc = pc->timed_out ? timed_out_error(db)
                           : pc->lost ? FAST_PASS : FAST_AGAIN;
        goto done;
    }
    if (!fast_decide(db, call))
        goto done;
    int64_t pgen = clean_gen(db, ctx);
    int resv_never = db->trust.resv_never;
    add_writes(db, ctx, old, now, pgen, ops, &n);
    int ntx = n;
    if (pc->fast_stale >= FAST_STALE_READS)
        add_reads(ctx, ops, &n);   /* a stale state then needs no read flight */
    int tx = flight(db, ops, ntx, n, out, &err), read_now = 0, guard_failed = 0;
    if (tx == TX_COMMITTED) {
        committed(db, call);
        learn_clean(db, ctx, ops, out);
    }
    if (!pc->lost && n > ntx) {
        guard_failed = learn(db, ctx, out + ntx, old) && tx == TX_MISMATCH;
        if (guard_failed && pgen >= 0 && (db->trust.policy_gen != pgen || resv_never != db->trust.resv_never))
            guard_failed = 0;   /* the policy tables changed, or a reservation
                                 * was stored: the probes look */
        read_now = 1;   /* what a retry decides from was just read */
    } else if (tx == TX_MISMATCH) {
        for (int i = 0; i < ctx->n; i++)   /* stale: read afresh next */
            rls__sc_drop(db, ctx->rl[i].def->id, ctx->key, ctx->keylen);
    }
    /* states just read say nothing of what the handle knew */
    if (!*read_done && (tx == TX_COMMITTED || (tx == TX_MISMATCH && !guard_failed)))
        note_stale(pc, tx == TX_MISMATCH);
    *read_done |= read_now;

    const char *state = err ? PQresultErrorField(err, PG_DIAG_SQLSTATE) : NULL;
    if (tx == TX_COMMITTED) {
        rc = RLS_OK;
    } else if (tx == TX_UNKNOWN) {
        rc = rls__sql_error(db, rls__pg_fail(db, err, NULL), "cannot commit check");
        pc->retryable = 0;   /* it may have committed: never run it twice */
    } else if (state && (!strcmp(state, "55P03") || !strcmp(state, "57014"))) {
        /* a lock wait that outlived lock_timeout: the usual path would
         * wait as long again */
        rc = rls__sql_error(db, rls__pg_fail(db, err, NULL), "cannot write counter state");
    } else if ((tx == TX_MISMATCH && !guard_failed && !pc->lost) ||
               (tx == TX_FAILED && state && (!strcmp(state, "40001") || !strcmp(state, "40P01")))) {
        rc = FAST_AGAIN;
    }   /* else the rules or tables changed, or anything else: the usual path */
done:
    clear_results(out, n);
    PQclear(err);
    rls__keyctx_release(ctx);
    free_logs(old, ctx->n);
    return rc;
}

/* 1 if a limit of the check has other variants: their states are read
 * (keyctx.c), which the one-round-trip check does not do. */
static int has_variants(const key_ctx *ctx)
{
    for (int i = 0; i < ctx->n; i++)
        if (ctx->rl[i].def->nsib > 0)
            return 1;
    return 0;
}

static int fast_check(rls_db *db, struct check_call *call)
{
    key_ctx *ctx = call->ctx;
    int rc = FAST_PASS, read_done = 0;
    if (!fast_usable(db, call->now))
        return FAST_PASS;
    rls__cache_fast_trust(db, 1);   /* the rules as cached: the guard checks them (cache.c) */
    int lrc = rls__keyctx_reload(db, ctx, call->now);
    rls__cache_fast_trust(db, 0);
    if (lrc != RLS_OK || ctx->n == 0 || ctx->behaviour == TIER_BLOCKED || ctx->policy_maybe ||
        has_variants(ctx) ||
        fast_prepare(db) != SQL_OK) {
        db->errmsg[0] = '\0';   /* the usual path says it again, if it is so */
        rls__keyctx_release(ctx);
        return db->pg->timed_out ? timed_out_error(db) : FAST_PASS;
    }
    for (int i = 0; i < FAST_ATTEMPTS; i++) {
        if (i > 0 && !fast_usable(db, call->now))
            return FAST_PASS;   /* what the last flight learnt rules it out */
        rc = attempt(db, call, &read_done);
        if (rc != FAST_AGAIN)
            return rc;
    }
    return FAST_PASS;
}

/* After the usual path's commit: what the handle now knows of the key
 * (its states, if states_read, or that it has policy rows). */
static void fast_learn(rls_db *db, const key_ctx *ctx, int states_read)
{
    int policy = ctx->block.found || ctx->pen_found || ctx->nexact > 0 || ctx->nov > 0;
    for (int i = 0; i < ctx->n; i++) {
        const rule_limit *def = ctx->rl[i].def;
        if (policy) {
            rls__sc_mark_policy(db, def->id, ctx->key, ctx->keylen);
        } else if (states_read &&
                   (ctx->items[i].changed || (ctx->row[i] && ctx->st[i].present))) {
            rls__sc_put(db, def->id, ctx->key, ctx->keylen, def->algorithm, &ctx->st[i]);
            /* the transaction read the generation before the key's policy
             * rows (cache.c): none were there at it */
            rls__sc_set_clean_gen(db, def->id, ctx->key, ctx->keylen, db->trust.policy_gen);
        } else {
            rls__sc_drop(db, def->id, ctx->key, ctx->keylen);
        }
    }
}

/*
 * PostgreSQL's check step (check.h): a check in one round trip when it
 * can; else, and for peeks, reservations and `durability: full`, the
 * generic transaction, after which the handle learns the key's states for
 * the next check's flight.  The key is loaded once either way: the
 * transaction's load keeps what the flight's did (keyctx.h).
 */
int rls__pg_check_tx(rls_db *db, struct check_call *call)
{
    int rc;
    if (call->op == CHECK_OP_CHECK && !call->full_sync &&
        (rc = fast_check(db, call)) != FAST_PASS)
        return rc;
    rc = rls__check_tx(db, call);
    if (rc == RLS_OK && call->committed)
        fast_learn(db, call->ctx, call->states_read);
    return rc;
}
